#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# fault_test.sh - faults in the middle of RC traffic (issue 15): the two
# ends of a stream learn of each within the retry time, nothing hangs, no
# object is left behind, and the kernel log stays clean.
#
#   namespace tp-a                         namespace tp-b
#   tpsrxa (srx) ── tpa0 ═══ veth ═══ tpb0 ── tpsrxb (srx)
#
# helpers/fault_peer runs one end on each device, both in the initial
# namespace (the devices are seen there in the RDMA core's shared netns
# mode), so that deleting a namespace is not held off by a process in it.
# Both ends stream RDMA WRITEs and READs at each other, 64 KiB each. Faults,
# spread over the two sides:
#
#   kill -9 of b's end          a: RETRY_EXC_ERR
#   rdma link delete a's device a: DEVICE_FATAL, b: RETRY_EXC_ERR
#   b's link down for 2 s       both carry on (ACK timeout 1.07 s x 8)
#   a's link down and kept down both: RETRY_EXC_ERR; once it is up again a
#                               new stream runs
#   b's MTU 1500, 1200, 9000, 1500
#                               both carry on (the QPs' path MTU is 1024)
#   ip link del of b's veth     both: DEVICE_FATAL (both ends go)
#   ip netns del of a's namespace
#                               both: DEVICE_FATAL (its veth takes the
#                               other end with it)
#   rmmod srx                   both: DEVICE_FATAL, rmmod ends in 10 s
#
# RETRY_EXC_ERR must come within the retry time: the ACK timeout 67 ms
# (-u 14) times 8 tries is 0.54 s, and the limit here is 3 s (times the
# slowdown selftests/run is told of), as TCG's timers run late on a busy
# host. On make check-debug's kernel (SRX_TEST_KASAN) the ACK timeout is
# 1.07 s (-u 18), as in rc_traffic_test.sh: there, beside another guest,
# answers came later than 0.54 s and the streams ended in RETRY_EXC_ERR
# before the fault of four cases. After each case the ends have exited, their objects are gone
# (rdma resource show: the devices' counts as before the case), and after
# all of them the kernel log holds no warning. Runs in the VM after
# install_test.sh. TAP output.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"
# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"

topo_trap
# As topo_trap's: a teardown that fails fails the run. srx0 on eth0
# (install_test.sh's) comes back if the rmmod case took it.
srx0_netdev=$(rdma link show 2>/dev/null | awk '$2 ~ /^srx0\// { for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')
restore_srx0() {
	[ -n "$srx0_netdev" ] || return 0
	[ -e /sys/class/infiniband/srx0 ] && return 0
	timeout 30 rdma link add srx0 type srx netdev "$srx0_netdev"
}
trap 's=$?; trap - EXIT; topo_down || s=1; restore_srx0 || s=1; rm -rf "$tmp"; exit $s' EXIT

peer_bin=$top/build/helpers/fault_peer
scale=${SRX_TEST_TIMEOUT_SCALE:-1}
# Seconds for both ends to start streaming, and to end after a fault.
start_s=$((60 * scale))
end_s=$((30 * scale))
retry_ms=$((3000 * scale))

echo "TAP version 13"
if [ ! -x "$peer_bin" ]; then
	echo "1..0 # SKIP $peer_bin is not built"
	exit 4
fi

base_a='' base_b=''
# setup: the srx-srx topology, its GIDs, and the devices' counts with no
# end running.
setup() {
	up srx-srx || return 1
	gids || return 1
	base_a=$(counts "$TOPO_A_DEV") base_b=$(counts "$TOPO_B_DEV")
	[ -n "$base_a" ] && [ -n "$base_b" ]
}

# start [EXP]: both ends, ACK timeout exponent EXP (default_exp); returns
# once both say "streaming". Each end's output is in $tmp/END.out, its
# exit status in $tmp/END.rc when it ends.
meet=$tmp/meet
default_exp=14
[ "${SRX_TEST_KASAN:-0}" = 1 ] && default_exp=18
start() {
	local exp=${1:-$default_exp} side dev gid peer end
	rm -rf "$meet" "$tmp"/[ab].out "$tmp"/[ab].rc
	mkdir -p "$meet"
	for side in a b; do
		dev=$(topo_var $side DEV)
		[ $side = a ] && gid=$gid_a peer=b || gid=$gid_b peer=a
		echo "# + [init] fault_peer -d $dev -g $gid -n $side -p $peer -u $exp"
		{
			timeout --kill-after=5 $((start_s + 120 * scale)) "$peer_bin" \
				-d "$dev" -g "$gid" -x "$meet" -n $side -p $peer -u "$exp" \
				>"$tmp/$side.out" 2>&1
			echo $? >"$tmp/$side.rc"
		} &
	done
	end=$((SECONDS + start_s))
	until grep -q '^streaming' "$tmp/a.out" 2>/dev/null &&
		grep -q '^streaming' "$tmp/b.out" 2>/dev/null; do
		if [ $SECONDS -ge $end ] || [ -e "$tmp/a.rc" ] || [ -e "$tmp/b.rc" ]; then
			say "the ends did not both start streaming"
			show
			stop_all
			return 1
		fi
		sleep 0.1
	done
}

# The pid of END's fault_peer.
pid_of() {
	pgrep -f "^$peer_bin .* -n $1 "
}

show() {
	local side
	for side in a b; do
		[ -e "$tmp/$side.out" ] && sed "s/^/#   $side: /" "$tmp/$side.out"
	done
	return 0
}

# stop_all: what is left of both ends, killed.
stop_all() {
	local side
	for side in a b; do
		pkill -9 -f "^$peer_bin .* -n $side " 2>/dev/null
	done
	wait 2>/dev/null
}

# ended: both ends have exited, within end_s; otherwise they are killed.
ended() {
	local end=$((SECONDS + end_s))
	until [ -e "$tmp/a.rc" ] && [ -e "$tmp/b.rc" ]; do
		if [ $SECONDS -ge $end ]; then
			say "an end still runs ${end_s} s after the fault"
			show
			stop_all
			return 1
		fi
		sleep 0.1
	done
	wait 2>/dev/null
	show
}

# expect END STATUS WHAT: END exited with STATUS and said "result WHAT...".
# For "error", the failed completion must be RETRY_EXC_ERR's, within
# retry_ms of the last good one.
expect() {
	local side=$1 want=$2 what=$3 rc line ms
	rc=$(cat "$tmp/$side.rc")
	line=$(grep '^result ' "$tmp/$side.out" | tail -n 1)
	if [ "$rc" != "$want" ] || [[ $line != "result $what"* ]]; then
		say "$side: exit $rc, '$line'; expected exit $want, 'result $what'"
		return 1
	fi
	if [ "$what" = error ]; then
		[[ $line =~ ^result\ error\ transport\ retry\ counter\ exceeded\ ([0-9]+)\  ]] ||
			{ say "$side: not RETRY_EXC_ERR: $line"; return 1; }
		ms=${BASH_REMATCH[1]}
		say "$side: RETRY_EXC_ERR $ms ms after its last good completion"
		[ "$ms" -le "$retry_ms" ] || { say "$side: later than $retry_ms ms"; return 1; }
	fi
	if [ "$what" != stalled ] && ! grep -q '^teardown ok' "$tmp/$side.out"; then
		say "$side: its teardown failed"
		return 1
	fi
}

# counts_back SIDE...: the devices of these sides hold what they held before
# the case.
counts_back() {
	local side now base
	for side in "$@"; do
		now=$(counts "$(topo_var "$side" DEV)")
		[ "$side" = a ] && base=$base_a || base=$base_b
		[ "$now" = "$base" ] && continue
		say "$(topo_var "$side" DEV): '$now', before the case '$base'"
		return 1
	done
}

# finish: both ends stop posting, drain, and end with "result done".
finish() {
	touch "$meet/stop"
	ended || return 1
	expect a 0 "done" && expect b 0 "done" && counts_back a b
}

t_kill() {
	start || return 1
	say "kill -9 b's end, pid $(pid_of b)"
	kill -9 "$(pid_of b)" || return 1
	ended || return 1
	expect a 3 error && [ "$(cat "$tmp/b.rc")" = 137 ] && counts_back a b
}

t_link_delete() {
	start || return 1
	topo_run topo_exec a rdma link delete "$TOPO_A_DEV" || return 1
	ended || return 1
	expect a 4 fatal && expect b 3 error && counts_back b || return 1
	# The device comes back on the same netdev.
	topo_run topo_exec a rdma link add "$TOPO_A_DEV" type srx netdev "$TOPO_A_NETDEV" ||
		return 1
	gids && counts_back a
}

t_flap() {
	start 18 || return 1
	topo_run topo_exec b ip link set "$TOPO_B_NETDEV" down || return 1
	sleep 2
	topo_run topo_exec b ip link set "$TOPO_B_NETDEV" up || return 1
	topo_wait "$TOPO_WAIT" topo_port_active b "$TOPO_B_DEV" || return 1
	# Traffic flows again, then both ends drain without an error.
	sleep 2
	finish || return 1
	grep -q '^event port error' "$tmp/b.out" ||
		{ say "b's end was not told its port went down"; return 1; }
}

t_down() {
	start || return 1
	topo_run topo_exec a ip link set "$TOPO_A_NETDEV" down || return 1
	ended
	local rc=$?
	topo_run topo_exec a ip link set "$TOPO_A_NETDEV" up || return 1
	[ $rc = 0 ] && expect a 3 error && expect b 3 error && counts_back a b ||
		return 1
	topo_wait "$TOPO_WAIT" topo_port_active a "$TOPO_A_DEV" || return 1
	gids || return 1
	start && sleep 1 && finish
}

t_mtu() {
	local m
	start || return 1
	for m in 1200 9000 1500; do
		topo_set_mtu b "$m" || return 1
		sleep 1
	done
	finish
}

t_netdev_del() {
	start || return 1
	topo_run topo_exec b ip link del "$TOPO_B_NETDEV" || return 1
	ended || return 1
	expect a 4 fatal && expect b 4 fatal || return 1
	topo_wait "$TOPO_T" sh -c '! [ -e /sys/class/infiniband/tpsrxa ] &&
		! [ -e /sys/class/infiniband/tpsrxb ]'
}

t_netns_del() {
	start || return 1
	topo_run ip netns del "$TOPO_NS_A" || return 1
	ended || return 1
	expect a 4 fatal && expect b 4 fatal || return 1
	topo_wait "$TOPO_T" sh -c '! [ -e /sys/class/infiniband/tpsrxa ] &&
		! [ -e /sys/class/infiniband/tpsrxb ]'
}

t_rmmod() {
	local t0
	start || return 1
	t0=$SECONDS
	topo_run rmmod srx || return 1
	say "rmmod took $((SECONDS - t0)) s"
	[ $((SECONDS - t0)) -le $((10 * scale)) ] || return 1
	! grep -q '^srx ' /proc/modules || { say "srx is still loaded"; return 1; }
	ended || return 1
	expect a 4 fatal && expect b 4 fatal
}

# case_ DESCRIPTION FUNCTION, on a topology built for it when the one
# before did not survive.
fault() {
	if [ -z "$TOPO_NAME" ] || [ ! -e "/sys/class/infiniband/$TOPO_A_DEV" ] ||
		[ ! -e "/sys/class/infiniband/$TOPO_B_DEV" ]; then
		topo_down >/dev/null 2>&1
		modprobe srx
		if ! setup; then
			ok "$1: the srx-srx topology" false
			return
		fi
	fi
	ok "$1" "$2"
	stop_all
}

setup || { ok "the srx-srx topology" false; echo "1..$n"; exit 1; }
fault "kill -9 of one end: the other gets RETRY_EXC_ERR in time" t_kill
fault "rdma link delete: DEVICE_FATAL there, RETRY_EXC_ERR at the peer" t_link_delete
fault "link down for 2 s: both ends carry on, PORT_ERR told" t_flap
fault "link kept down: both ends get RETRY_EXC_ERR in time, then a new stream runs" t_down
fault "MTU changes above the path MTU: both ends carry on" t_mtu
fault "ip link del: DEVICE_FATAL at both ends" t_netdev_del
fault "ip netns del: DEVICE_FATAL at both ends" t_netns_del
fault "rmmod srx mid-stream: quick, DEVICE_FATAL at both ends" t_rmmod
modprobe srx
ok "srx0 is back where install_test.sh left it" restore_srx0
ok "every topology removed" topo_down
ok "no task hung, no netdev waited for" \
	kmsg_clean 'blocked for more than|hung_task|unregister_netdevice: waiting'
ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails -eq 0 ]
