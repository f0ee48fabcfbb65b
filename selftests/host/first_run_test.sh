#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# first_run_test.sh - the README's two commands on a machine that has no
# kernel until `make deps` installs one (issue 11, section 1). Prints TAP.
#
# No fresh machine is needed: tools/kver looks in a fake root
# (SRX_KVER_ROOT) that starts without any kernel, and `make deps` runs a fake
# DEPS that "installs" one there (an image and a Kbuild tree whose Makefile
# only prints). The Makefile itself runs for real under make -n: every
# $(MAKE) line and deps still run, the other commands are printed. Then:
#
#   - deps ran once, and nothing asked tools/kver for a kernel before it
#     (tools/kver says so on stderr when it finds none);
#   - every command that names a kernel names the one deps installed, and
#     none names an empty one (/lib/modules//build, KVER= with nothing);
#   - the module is built in that kernel's Kbuild tree, and the command that
#     boots the VM (tools/check, tools/vm/run) is given that KVER;
#   - KVER=V on the command line still selects V over the default.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

# A version no real machine has, so a stray real kernel cannot pass for it.
new=0.0.1-srxfirstrun$$
old=0.0.0-srxfirstrun$$

# fake_machine DIR VERSION...: a root without kernels, and a deps command
# that installs VERSION... into it and logs what it saw.
fake_machine() {
	local dir=$1
	shift
	mkdir -p "$dir/root/boot" "$dir/root/lib/modules"
	{
		echo '#!/bin/sh'
		echo "echo \"deps KVER=\${KVER-unset}\" >>'$dir/trace'"
		for v in "$@"; do
			echo "mkdir -p '$dir/root/lib/modules/$v/build'"
			echo ": >'$dir/root/boot/vmlinuz-$v'"
			printf "printf 'modules:\\\\n\\\\t@echo fake-kbuild $v \$(M)\\\\n' >'%s'\n" \
				"$dir/root/lib/modules/$v/build/Makefile"
		done
	} >"$dir/deps"
	chmod +x "$dir/deps"
}

# run_make DIR TARGET [ARG...]: make -n TARGET against DIR's fake machine,
# with nothing inherited from a make or a KVER around this test.
run_make() {
	local dir=$1
	shift
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u KVER -u KDIR -u DEPS -u BUILD \
		SRX_KVER_ROOT="$dir/root" \
		make -n --no-print-directory -C "$top" DEPS="$dir/deps" \
		BUILD="$dir/build" V=1 "$@" >"$dir/out" 2>"$dir/err"
}

# check_run DIR TARGET BOOTER VERSION: the assertions for one make -n run
# that should have used VERSION throughout; BOOTER is the command that boots
# the VM.
check_run() {
	local dir=$1 target=$2 booter=$3 v=$4 what
	what="make $target"
	[ -n "${5:-}" ] && what="$what $5"

	result "$status" "$what: exits 0 (status $status)"

	[ "$(grep -c '^deps ' "$dir/trace" 2>/dev/null)" = 1 ]
	result $? "$what: make deps ran once"

	! grep -q 'tools/kver: no kernel' "$dir/err"
	result $? "$what: nothing asked tools/kver for a kernel before deps"

	! grep -Eq 'lib/modules//|KVER=( |$|")|vmlinuz-( |$)' "$dir/out" "$dir/err"
	result $? "$what: no command uses an empty KVER"

	# Every /lib/modules/X/ any command names is the selected kernel's.
	local others
	others=$(grep -Eo 'lib/modules/[^/ ]*/' "$dir/out" | sort -u |
		grep -vxF "lib/modules/$v/")
	[ -z "$others" ] && grep -q "lib/modules/$v/" "$dir/out"
	result $? "$what: every kernel path is $v's${others:+ (also: $others)}"

	grep -q "^fake-kbuild $v $top/kernel\$\|echo fake-kbuild $v $top/kernel\$" "$dir/out"
	result $? "$what: srx.ko is built in $v's Kbuild tree"

	grep "$booter" "$dir/out" | grep -q "KVER=$v "
	result $? "$what: $booter boots $v"
}

for target in check demo; do
	booter=tools/check
	[ $target = demo ] && booter=tools/vm/run
	dir=$tmp/$target
	fake_machine "$dir" "$old" "$new"
	run_make "$dir" $target
	status=$?
	check_run "$dir" $target $booter "$new"
done

# The user's choice wins over the default, and still only after deps.
dir=$tmp/check-kver
fake_machine "$dir" "$old" "$new"
run_make "$dir" check KVER="$old"
status=$?
check_run "$dir" check tools/check "$old" "KVER=$old"

if [ "$failed" != 0 ]; then
	for f in "$tmp"/*/err; do
		[ -s "$f" ] && sed "s|^|# ${f#"$tmp"/}: |" "$f" | head -n 5
	done
fi
tap_end
