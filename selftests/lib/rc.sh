# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# selftests/lib/rc.sh - what the RC data-path tests share (rc_engine_test.sh,
# rc_traffic_test.sh): TAP results, the kernel log check, server/client
# pairs of the real tools between the two sides of a selftests/lib/topo.sh
# topology, and the sides' counters. Source it after topo.sh; it sets n,
# fails, port and tmp (removed by the caller's EXIT trap), and gid_a/gid_b
# once gids() has run.

n=0 fails=0 port=${RC_PORT_BASE:-18600}
tmp=$(mktemp -d)

# ok DESCRIPTION COMMAND...: one TAP line for COMMAND, then the time it
# took (as tap.sh's case_ says it), which shows where a test spends it.
ok() {
	local desc=$1 t0=$SECONDS
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $desc"
	else
		echo "not ok $n $desc"
		fails=$((fails + 1))
	fi
	echo "# ($((SECONDS - t0)) s)"
}

# The kernel log since the test began holds no warning, BUG or refcount
# complaint (a QP reference dropped twice would say refcount_t), or
# nothing that matches the extended regular expression given instead.
kmsg_start=$(dmesg | wc -l)
kmsg_clean() {
	local new
	new=$(dmesg | tail -n +"$((kmsg_start + 1))" |
		grep -E "${1:-WARNING|BUG|refcount_t|Oops|general protection}" || true)
	[ -z "$new" ] && return 0
	printf '%s\n' "$new" | sed 's/^/#   kmsg: /'
	return 1
}

# need_modules MODULE...: the test is skipped (exit 4, before its first
# case) when the running kernel lacks one of them; make check-debug's
# kernel builds only the RDMA users it names (tools/debug-kernel.config).
need_modules() {
	local m
	for m in "$@"; do
		modinfo -F filename "$m" >/dev/null 2>&1 && continue
		echo "1..0 # SKIP the kernel has no $m module"
		rm -rf "$tmp"
		exit 4
	done
}

# need_tools PROGRAM...: the same for programs that make deps installs.
need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null && continue
		echo "1..0 # SKIP $t is not installed (make deps)"
		rm -rf "$tmp"
		exit 4
	done
}

# dd_back DISK SKIP: 4 MiB of random bytes written to DISK at SKIP 64 KiB
# blocks with O_DIRECT, read back the same way and equal (kept in
# $tmp/data for the caller to look for elsewhere).
dd_back() {
	head -c 4M /dev/urandom >"$tmp/data" &&
		long 60 dd if="$tmp/data" of="$1" bs=64k seek="$2" oflag=direct &&
		long 60 dd if="$1" of="$tmp/back" bs=64k skip="$2" count=64 iflag=direct &&
		cmp "$tmp/data" "$tmp/back" && return 0
	echo "# dd: the data read back differs from the data written"
	return 1
}

# fio_verify DISK: fio writes 16 MiB on DISK with a crc32c in every block
# and reads it back to verify, two jobs at once on its two halves, blocks
# of 4 KiB to 128 KiB. allow_file_create=0: a disk gone early is an error,
# never a regular file made in /dev.
fio_verify() {
	local j args=()
	for j in 0 1; do
		args+=(--name="j$j" --filename="$1" --allow_file_create=0
			--direct=1 --ioengine=libaio --iodepth=8 --rw=randwrite
			--bsrange=4k-128k --size=8M --offset=$((j * 8))M
			--verify=crc32c --verify_fatal=1 --do_verify=1
			--verify_state_save=0)
	done
	long 300 fio "${args[@]}" && return 0
	echo "# fio failed or found bad data"
	return 1
}

# ulp_end: the last cases of a test of the kernel's RDMA users, then its
# plan and status: every topology gone, no task hung or netdev waited
# for, no kernel warning.
ulp_end() {
	ok "every topology removed, the machine as it was" topo_down
	ok "no task hung, no netdev waited for" \
		kmsg_clean 'blocked for more than|hung_task|unregister_netdevice: waiting'
	ok "no kernel warning" kmsg_clean
	echo "1..$n"
	[ $fails -eq 0 ]
}

# up TOPOLOGY: topo_up, or a failed case that says which topology failed.
up() {
	topo_up "$1" && return 0
	ok "the $1 topology" false
	return 1
}

# long SECONDS CMD...: as topo_run, for commands that may take longer than
# its TOPO_T under TCG (SECONDS times the slowdown, SRX_TEST_TIMEOUT_SCALE);
# the output goes to the log only on failure.
long() {
	local t=$(($1 * ${SRX_TEST_TIMEOUT_SCALE:-1})) rc
	shift
	echo "# + $*"
	timeout --kill-after=10 "$t" "$@" >"$tmp/long.out" 2>&1
	rc=$?
	[ $rc = 0 ] && return 0
	tail -n 25 "$tmp/long.out" | sed 's/^/#   /'
	echo "#   exit $rc"
	return $rc
}

# wait_listen SIDE PORT: a TCP listener on PORT in SIDE's namespace,
# within 20 s times the slowdown (a server opens its device first, which
# took longer than 20 s under make check-debug's KASAN kernel).
listening() {
	topo_exec "$1" ss -Hntl | grep -q ":$2 "
}
wait_listen() {
	topo_wait $((20 * ${SRX_TEST_TIMEOUT_SCALE:-1})) listening "$1" "$2"
}

# A hang is the tools' own to show; pair's limit only ends a run that
# cannot finish, and grows with the slowdown selftests/run is told of
# (SRX_TEST_TIMEOUT_SCALE: make check-debug's KASAN kernel, where a 1 MiB
# ibv_rc_pingpong and perftest's -q 8 runs took longer than 120 s).
pair_limit=$((120 * ${SRX_TEST_TIMEOUT_SCALE:-1}))

# pair SRV CLI -- SERVER_CMD... -- CLIENT_CMD...: run a server on side
# SRV and, once it listens on $port, a client on side CLI that connects
# to SRV's address; both must succeed. The commands get "-p $port".
pair() {
	local srv=$1 cli=$2 sargs=() cargs=() spid rc=0
	shift 2
	[ "$1" = -- ] && shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	port=$((port + 1))
	echo "# + [$srv] ${sargs[*]} -p $port"
	topo_exec "$srv" timeout "$pair_limit" "${sargs[@]}" -p "$port" >"$tmp/srv" 2>&1 &
	spid=$!
	if ! wait_listen "$srv" "$port"; then
		echo "#   the server did not listen"
		kill "$spid" 2>/dev/null
		rc=1
	else
		echo "# + [$cli] ${cargs[*]} -p $port $(topo_var "$srv" IP4)"
		topo_exec "$cli" timeout "$pair_limit" "${cargs[@]}" -p "$port" \
			"$(topo_var "$srv" IP4)" >"$tmp/cli" 2>&1 || rc=1
		[ $rc = 0 ] || sed 's/^/#   client: /' "$tmp/cli"
	fi
	wait "$spid" || { rc=1; sed 's/^/#   server: /' "$tmp/srv"; }
	grep -h -E 'bytes in|iters in|^ *[0-9]+ +[0-9]+ ' "$tmp/srv" "$tmp/cli" 2>/dev/null |
		head -n 2 | sed 's/^/#   /'
	return $rc
}

# An rdma_cm server listens on no TCP port that wait_listen could see, but
# its listening rdma_cm ID is in the RDMA core's resource table (`rdma
# resource show cm_id`, state LISTEN, one per device for a wildcard bind):
# the client starts once the server's side lists more of them than before
# the server started, or after 5 s times the slowdown. Then it is started
# again (at most 20 times the slowdown, a second apart) until it reaches
# the listener; a client turned away before the server listens is rejected
# by the passive side's CM and leaves no trace there.
cm_tries=$((20 * ${SRX_TEST_TIMEOUT_SCALE:-1}))
cm_listen_polls=$((50 * ${SRX_TEST_TIMEOUT_SCALE:-1}))

# cm_listeners SIDE: how many listening rdma_cm IDs SIDE's namespace sees.
cm_listeners() {
	topo_exec "$1" rdma resource show cm_id 2>/dev/null | grep -c 'state LISTEN'
}

# cmpair SRV CLI -- SERVER_CMD... -- CLIENT_CMD...: the server on side SRV
# and then the client on side CLI; both must succeed. With cm_lingers=1 the
# server serves until it is stopped (cmtime): it is stopped once the client
# succeeded, and only the client's status counts. It is stopped by name:
# killing the background job would leave the program itself running in the
# side's namespace until its timeout, and a process there keeps the
# namespace alive after topo_down (the RDMA core then refuses to change
# its netns mode with EBUSY: device_test on 6.12, 2026-12-04).
cm_lingers=0
cmpair() {
	local srv=$1 cli=$2 sargs=() cargs=() spid i rc=1 l0
	shift 2
	[ "$1" = -- ] && shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	l0=$(cm_listeners "$srv")
	echo "# + [$srv] ${sargs[*]}"
	topo_exec "$srv" timeout "$pair_limit" "${sargs[@]}" >"$tmp/srv" 2>&1 &
	spid=$!
	for ((i = 0; i < cm_listen_polls; i++)); do
		[ "$(cm_listeners "$srv")" -gt "$l0" ] && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	echo "# + [$cli] ${cargs[*]}"
	for ((i = 0; i < cm_tries; i++)); do
		[ "$i" = 0 ] || sleep 1
		if topo_exec "$cli" timeout "$pair_limit" "${cargs[@]}" \
			>"$tmp/cli" 2>&1; then
			rc=0
			break
		fi
		kill -0 "$spid" 2>/dev/null || break
	done
	[ $rc = 0 ] || sed 's/^/#   client: /' "$tmp/cli" | tail -n 20
	if [ "$cm_lingers" = 1 ]; then
		pkill -x "$(basename "${sargs[0]}")"
		wait "$spid"
	else
		wait "$spid" ||
			{ rc=1; sed 's/^/#   server: /' "$tmp/srv" | tail -n 20; }
	fi
	return $rc
}

gid_a='' gid_b=''
gids() {
	gid_a=$(topo_wait_gid a "$TOPO_A_DEV" "$TOPO_A_IP4") || return 1
	gid_b=$(topo_wait_gid b "$TOPO_B_DEV" "$TOPO_B_IP4") || return 1
}

# The IPv6 GIDs (gids() sets the IPv4 ones).
gid6_a='' gid6_b=''
gids6() {
	gid6_a=$(topo_wait_gid a "$TOPO_A_DEV" "$TOPO_A_IP6") || return 1
	gid6_b=$(topo_wait_gid b "$TOPO_B_DEV" "$TOPO_B_IP6") || return 1
}

# pp46 TOOL SRV CLI 4|6 SIZE [ARGS]: one of libibverbs' pingpong examples
# (ibv_ud_pingpong, ibv_uc_pingpong) between the two sides, 50 iterations
# over their IPv4 or IPv6 GIDs.
pp46() {
	local tool=$1 srv=$2 cli=$3 v=$4 size=$5 gs gc
	shift 5
	if [ "$v" = 4 ]; then
		[ "$srv" = a ] && gs=$gid_a || gs=$gid_b
		[ "$cli" = a ] && gc=$gid_a || gc=$gid_b
	else
		[ "$srv" = a ] && gs=$gid6_a || gs=$gid6_b
		[ "$cli" = a ] && gc=$gid6_a || gc=$gid6_b
	fi
	pair "$srv" "$cli" -- "$tool" -d "$(topo_var "$srv" DEV)" -g "$gs" \
		-s "$size" -n 50 "$@" -- \
		"$tool" -d "$(topo_var "$cli" DEV)" -g "$gc" -s "$size" -n 50 "$@"
}

# pp SRV CLI SIZE MTU [ARG]: ibv_rc_pingpong between the two sides.
pp() {
	local srv=$1 cli=$2 size=$3 mtu=$4 extra=${5:-}
	local gs gc
	gs=$(topo_var "$srv" DEV) gc=$(topo_var "$cli" DEV)
	local is ic
	[ "$srv" = a ] && is=$gid_a || is=$gid_b
	[ "$cli" = a ] && ic=$gid_a || ic=$gid_b
	# shellcheck disable=SC2086
	pair "$srv" "$cli" -- ibv_rc_pingpong -d "$gs" -g "$is" -s "$size" \
		-m "$mtu" -n 20 $extra -- ibv_rc_pingpong -d "$gc" -g "$ic" \
		-s "$size" -m "$mtu" -n 20 $extra
}

# cnt SIDE NAME: a counter of SIDE's device, from the initial namespace's
# sysfs, where the devices are in the RDMA core's shared netns mode (ip
# netns exec mounts a sysfs of the namespace's own).
cnt() {
	cat "/sys/class/infiniband/$(topo_var "$1" DEV)/ports/1/hw_counters/$2"
}

# impaired NETEM_ARGS -- COMMAND...: COMMAND with netem NETEM_ARGS on the
# egress of both ends of the veth, removed again whatever COMMAND did.
impaired() {
	local spec=() rc=0
	while [ "$1" != -- ]; do spec+=("$1"); shift; done
	shift
	echo "# + netem ${spec[*]} on $TOPO_A_NETDEV and $TOPO_B_NETDEV"
	topo_exec a tc qdisc replace dev "$TOPO_A_NETDEV" root netem "${spec[@]}" &&
		topo_exec b tc qdisc replace dev "$TOPO_B_NETDEV" root netem "${spec[@]}" ||
		rc=1
	[ $rc = 0 ] && { "$@" || rc=1; }
	topo_exec a tc qdisc del dev "$TOPO_A_NETDEV" root 2>/dev/null
	topo_exec b tc qdisc del dev "$TOPO_B_NETDEV" root 2>/dev/null
	return $rc
}

# counts DEV: device DEV's qp, cq, pd, mr and srq counts from rdma
# resource show, e.g. "qp 1 cq 2 pd 1 mr 0 srq 0"; what a test compares
# before and after it ran something that must leave nothing behind.
counts() {
	timeout 30 rdma resource show |
		awk -v dev="$1" '$2 == dev ":" {
			for (i = 3; i < NF; i += 2) c[$i] = $(i + 1)
			printf "qp %s cq %s pd %s mr %s srq %s\n",
				c["qp"], c["cq"], c["pd"], c["mr"], c["srq"]
		}'
}

# perf TOOL SRV CLI ARGS...: a perftest between the two sides, posting
# the way perftest does by default, through ibv_qp_ex (ibv_wr_*); add
# --use_old_post_send to ARGS for ibv_post_send().
perf() {
	local tool=$1 srv=$2 cli=$3 is ic
	shift 3
	[ "$srv" = a ] && is=$gid_a || is=$gid_b
	[ "$cli" = a ] && ic=$gid_a || ic=$gid_b
	pair "$srv" "$cli" -- "$tool" -d "$(topo_var "$srv" DEV)" -x "$is" \
		-F "$@" -- "$tool" -d "$(topo_var "$cli" DEV)" -x "$ic" -F "$@"
}
