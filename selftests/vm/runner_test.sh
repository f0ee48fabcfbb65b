#!/bin/bash
# runner_test.sh - host-side test of tools/vm/run. Prints TAP; exits 0 iff
# every test passed.
#
# Each VM boot costs 5-20 s, so boots are few and shared: checks that need
# only a clean exit ride along in one probe boot, and boots overlap (which
# also shows that concurrent runs keep apart). The timeout boot sleeps
# through its whole life, so it runs alongside all the others.
#
#   boot  command                        checks                when
#   F     --timeout 150 sleep 1000       exit 124              1-3
#   A     true                           exit 0                1
#   B     false                          exit 1                1
#   C     sh -c PROBE sh ARGS...; exit 7 exit 7, argv intact,  2
#                                        stdout/stderr relayed, cwd, env
#                                        passthrough, checkout writable,
#                                        /etc private, >= 2 NICs,
#                                        tools/vm/in-guest
#   D     insmod srx_warn_test.ko        exit 120 (WARNING),   2
#                                        its RIP named
#   E     echo c >/proc/sysrq-trigger    exit 121 (panic), no  3
#                                        second boot
#   P     true, with an rdinit that does exit 121 after three  3
#         not exist: the kernel panics   boots, each named
#         before guest-init starts
#   T     true, from a copy of the       exit 0 (the checkout  3
#         runner under /tmp              is not hidden by the
#                                        guest's /tmp)
#   M     --kernel/--modules with a      exit 120 (no kmemleak 3
#         module tree in build/,         to scan), KVER, the
#         --kmemleak, writes into it     tree writable in the
#                                        guest only
#   K     writes a bad line that sets    exit 120 (the scan    3
#         no taint bit to /dev/kmsg      alone fails it)
#   L     leaves a process that writes   exit 120 (the guest   3
#         a bad line after the command   waits, then scans)
#         has exited
#   -     bad option, missing kernel,    exit 125 (no boot)    4
#         a runner without its pattern
#         list or with an empty one
#
# Everything it writes goes to build/vm/selftest/ in the checkout.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
run=$top/tools/vm/run
work=$top/build/vm/selftest
kver=${KVER:-$("$top/tools/kver")}

rm -rf "$work"
mkdir -p "$work"

tests=0
failed=0
result() { # OK DESCRIPTION
	tests=$((tests + 1))
	if [ "$1" = 0 ]; then
		echo "ok $tests $2"
	else
		echo "not ok $tests $2"
		failed=$((failed + 1))
	fi
}
diag() { sed 's/^/# /' "$@"; }

# vm NAME EXPECTED_EXIT DESCRIPTION -- RUNNER ARGS: one boot, output kept in
# $work/NAME.{out,err}; the exit status check is reported at once.
vm_start() {
	local name=$1
	shift
	"$run" "$@" >"$work/$name.out" 2>"$work/$name.err" &
	eval "pid_$name=\$!"
}
vm_finish() { # NAME EXPECTED DESCRIPTION
	local pid_var=pid_$1 rc
	wait "${!pid_var}"
	rc=$?
	echo "$rc" >"$work/$1.rc"
	[ "$rc" = "$2" ]
	result $? "$3 (got $rc)"
	[ "$rc" = "$2" ] || diag "$work/$1.err"
}
log_of() { sed -n 's/^srx-vm: log: //p' "$work/$1.err" | head -n 1; }

echo "TAP version 13"
echo "1..33"
echo "# kernel $kver, logs in $work"

# The module for D, built first so that it cannot hold up the boots.
mkdir -p "$work/warn_module"
cp "$top/selftests/warn_module/Kbuild" "$top/selftests/warn_module/srx_warn_test.c" "$work/warn_module/"
make -C "/lib/modules/$kver/build" M="$work/warn_module" W=1 modules >"$work/warn_build.log" 2>&1
warn_built=$?

# F: a hang. The limit covers boot as well; it leaves room for a boot slowed
# down by the boots running next to it, and costs nothing as they take
# about as long.
# 150 s, not less: F boots beside A and B, and a TCG boot starved by them
# and the host once stalled for 49 s (a soft lockup in cryptomgr_test)
# and met a 60 s timeout before the command ran (CI, 2026-12-04).
vm_start F --timeout 150 -- sleep 1000

# A and B together.
vm_start A --timeout 300 -- true
vm_start B --timeout 300 -- false
vm_finish A 0 "run -- true exits 0"
vm_finish B 1 "run -- false exits 1"
log_a=$(log_of A)
log_b=$(log_of B)
[ -n "$log_a" ] && [ -n "$log_b" ] && [ "$log_a" != "$log_b" ] && [ -s "$log_a" ] && [ -s "$log_b" ]
result $? "concurrent runs print distinct, non-empty log paths"

# C: the probe. Arguments a shell would mangle in many ways.
# shellcheck disable=SC2016 # unexpanded on purpose
args=("two words" "it's \"quoted\"" '$HOME `id` \n' '' $'line1\nline2' '*' ' -x ')
# shellcheck disable=SC2016 # expanded in the guest
probe='
out=$SRX_PROBE_DIR
printf "%s\0" "$@" >"$out/argv.guest"
pwd >"$out/cwd.guest"
printf "%s|%s|%s\n" "${SRX_PROBE_VAR-unset}" "${NOT_PASSED-unset}" "$HOME" >"$out/env.guest"
touch /etc/srx-vm-probe && [ -f /etc/srx-vm-probe ] && echo ok >"$out/etc.guest"
n=0
for d in /sys/class/net/*; do
	[ "$(cat "$d/type")" = 1 ] && [ -e "$d/device" ] && n=$((n + 1))
done
echo "$n" >"$out/nics.guest"
"$SRX_PROBE_TOP/tools/vm/in-guest" && echo yes >"$out/in-guest.guest"
printf "[%s]\n" "$@"
echo "to stderr" >&2
exit 7
'
if [ -e /etc/srx-vm-probe ]; then
	echo "# /etc/srx-vm-probe exists on the host already; the /etc check is meaningless"
fi
# From a subdirectory, with variables to pass and one not to.
(
	cd "$top/selftests/vm" || exit 125
	export SRX_PROBE_DIR=$work SRX_PROBE_TOP=$top SRX_PROBE_VAR="a b" NOT_PASSED=1
	exec "$run" --timeout 300 -- sh -c "$probe" sh "${args[@]}"
) >"$work/C.out" 2>"$work/C.err" &
# shellcheck disable=SC2034 # read by vm_finish
pid_C=$!

# D: a kernel WARNING fails the run although insmod succeeds.
if [ "$warn_built" = 0 ]; then
	vm_start D --kver "$kver" --timeout 300 -- insmod "$work/warn_module/srx_warn_test.ko"
fi

vm_finish C 7 "run -- sh -c 'exit 7' exits 7"

printf '%s\0' "${args[@]}" >"$work/argv.expected"
cmp -s "$work/argv.expected" "$work/argv.guest"
result $? "arguments with spaces, quotes, newlines and globs arrive intact"

printf '[%s]\n' "${args[@]}" >"$work/C.expected"
cmp -s "$work/C.expected" "$work/C.out"
result $? "the command's stdout comes back byte for byte"

grep -qx 'to stderr' "$work/C.err"
result $? "the command's stderr comes back on stderr"

[ "$(cat "$work/cwd.guest" 2>/dev/null)" = "$top/selftests/vm" ]
result $? "the command starts in the caller's directory"

[ "$(cat "$work/env.guest" 2>/dev/null)" = "a b|unset|/root" ]
result $? "SRX_* passes through, other variables do not, HOME=/root"

[ -s "$work/argv.guest" ]
result $? "the checkout is writable from the guest"

[ "$(cat "$work/etc.guest" 2>/dev/null)" = ok ] && [ ! -e /etc/srx-vm-probe ]
result $? "writes to /etc stay in the guest"

nics=$(cat "$work/nics.guest" 2>/dev/null || echo 0)
[ "$nics" -ge 2 ]
result $? "the guest has >= 2 ethernet NICs (got $nics)"

[ "$(cat "$work/in-guest.guest" 2>/dev/null)" = yes ] && ! "$top/tools/vm/in-guest"
result $? "tools/vm/in-guest is true in the guest and false on the host"

if [ "$warn_built" = 0 ]; then
	vm_finish D 120 "a module that warns makes the run exit 120"
	grep -q 'srx-vm:   .*RIP: 0010:srx_warn_test_init' "$work/D.err"
	result $? "the warning's RIP, with its function, is named on stderr"
else
	result 1 "a module that warns makes the run exit 120 (module build failed)"
	result 1 "the warning's RIP, with its function, is named on stderr (no module)"
	diag "$work/warn_build.log"
fi

# E: a panic ends QEMU (panic=-1, -no-reboot) and is named as such.
vm_start E --timeout 300 -- sh -c 'echo c >/proc/sysrq-trigger; sleep 100'

# P: a kernel that dies before guest-init starts is booted again (as 6.12
# did before tsc=unstable, Documentation/vm.md), here one that always does:
# no /init.
vm_start P --timeout 300 --append rdinit=/srx-vm-no-such-init -- true

# T: a checkout under /tmp, where the guest mounts a fresh tmpfs (a CI that
# clones into /tmp). The runner alone is the checkout here.
tmp_top=$(mktemp -d /tmp/srx-runner-test.XXXXXX)
mkdir -p "$tmp_top/tools" "$tmp_top/build/vm"
cp -a "$top/tools/vm" "$top/tools/kver" "$tmp_top/tools/"
# The runner's caches, with their times, so that T boots as fast as the rest.
cp -a "$top/build/vm/initramfs" "$top/build/vm/kernel" "$tmp_top/build/vm/" 2>/dev/null
"$tmp_top/tools/vm/run" --timeout 300 -- true >"$work/T.out" 2>"$work/T.err" &
# shellcheck disable=SC2034 # read by vm_finish
pid_T=$!

# M: the way make check-debug boots its own kernel, here Debian's kernel
# with a module tree of the boot modules only, copied into the checkout
# (read-write for the guest) as tools/debug-kernel's is.
mods=$work/mods/lib/modules/$kver
mkdir -p "$mods"
cp /lib/modules/"$kver"/modules.* "$mods/"
# shellcheck disable=SC2013 # words, not lines
for m in $(sed -n '/^BOOT_MODULES=(/,/^)/s/^\t//p' "$top/tools/vm/mkinitramfs"); do
	f=$(modinfo -k "$kver" -F filename "$m" 2>/dev/null) || continue
	case "$f" in /lib/modules/"$kver"/*) ;; *) continue ;; esac
	mkdir -p "$mods/$(dirname "${f#/lib/modules/"$kver"/}")"
	cp "$f" "$mods/${f#/lib/modules/"$kver"/}"
done
# shellcheck disable=SC2016 # expanded in the guest
vm_start M --timeout 300 --kernel "/boot/vmlinuz-$kver" --modules "$mods" --kmemleak -- \
	sh -c 'echo "$KVER"; touch "/lib/modules/$KVER/guest-write" && echo written'

# K and L: lines that fail a run although they set no taint bit (the
# kernel prints "page allocation failure" and "unregister_netdevice:
# waiting for" without tainting), so only the log scan can catch them. L's
# comes from a process the command leaves behind, after the command exits.
kmsg_k='<4>srx-runner-test: page allocation failure: order:9, mode:0xcc0(GFP_KERNEL)'
kmsg_l='<4>srx-runner-test: unregister_netdevice: waiting for srxtest0 to become free. Usage count = 2'
vm_start K --timeout 300 -- sh -c 'echo "$1" >/dev/kmsg' sh "$kmsg_k"
# shellcheck disable=SC2016 # expanded in the guest
vm_start L --timeout 300 -- sh -c '(sleep 0.5; echo "$1" >/dev/kmsg) >/dev/null 2>&1 & exit 0' sh "$kmsg_l"

vm_finish E 121 "a kernel panic makes the run exit 121"
! grep -q 'booting again' "$work/E.err"
result $? "a panic after the command started is not booted again"
vm_finish P 121 "a kernel that always dies while booting makes the run exit 121"
log_P=$(log_of P)
[ "$(grep -c 'died while booting, before the command started.*booting again' "$work/P.err")" = 2 ] &&
	[ -s "${log_P%/*}/boot-1.log" ] && [ -s "${log_P%/*}/boot-2.log" ] &&
	grep -q 'Kernel panic' "$log_P"
result $? "it was booted three times, and each boot's log kept"
vm_finish T 0 "a checkout under /tmp boots and runs"
rm -rf "$tmp_top"

vm_finish M 120 "--kmemleak on a kernel without kmemleak makes the run exit 120"
grep -q 'srx-vm: kmemleak: no /sys/kernel/debug/kmemleak' "$work/M.err"
result $? "the missing kmemleak is named on stderr"
[ "$(cat "$work/M.out")" = "$kver"$'\n'written ] && [ ! -e "$mods/guest-write" ]
result $? "--modules: KVER names its release; its tree is writable in the guest, not on the host"

vm_finish K 120 "a bad kernel line that sets no taint makes the run exit 120"
grep -q 'srx-vm: kernel unclean (tainted=0, command exit 0)' "$work/K.err" &&
	grep -q 'srx-vm:   .*srx-runner-test: page allocation failure' "$work/K.err"
result $? "the unclean kernel and its line are named on stderr"
vm_finish L 120 "a bad kernel line after the command exited makes the run exit 120"

vm_finish F 124 "a command past --timeout makes the run exit 124"
grep -q 'srx-vm: timeout' "$work/F.err"
result $? "a timeout says so on stderr"
grep -q 'srx-vm: running the command' "$(log_of F)"
result $? "the timeout hit the running command, not the boot"

# No boot needed for runner errors.
"$run" --no-such-option -- true >"$work/G.out" 2>"$work/G.err"
rc=$?
[ "$rc" = 125 ]
result $? "a bad option exits 125 (got $rc)"

"$run" --kver 0.0-no-such-kernel -- true >"$work/H.out" 2>"$work/H.err"
rc=$?
[ "$rc" = 125 ]
result $? "a missing kernel exits 125 (got $rc)"

# A runner that cannot scan the log must not boot (a run it could not
# judge would pass): without its pattern list, and with an empty one.
nolist=$(mktemp -d /tmp/srx-runner-test.XXXXXX)
mkdir -p "$nolist/tools"
cp -a "$top/tools/vm" "$top/tools/kver" "$nolist/tools/"
rm "$nolist/tools/vm/bad-kmsg"
"$nolist/tools/vm/run" --timeout 300 -- true >"$work/N.out" 2>"$work/N.err"
rc=$?
[ "$rc" = 125 ] && grep -q 'cannot read the pattern list' "$work/N.err"
result $? "a runner without tools/vm/bad-kmsg exits 125 before booting (got $rc)"
: >"$nolist/tools/vm/bad-kmsg"
"$nolist/tools/vm/run" --timeout 300 -- true >"$work/O.out" 2>"$work/O.err"
rc=$?
[ "$rc" = 125 ] && grep -q 'is empty' "$work/O.err"
result $? "a runner with an empty tools/vm/bad-kmsg exits 125 before booting (got $rc)"
rm -rf "$nolist"

echo "$((tests - failed)) passed, $failed failed"
[ "$failed" = 0 ]
