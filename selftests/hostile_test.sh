#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# hostile_test.sh - a hostile process under live traffic: a process that
# rewrites its own SQ, RQ, SRQ and CQ rings at random while it posts,
# beside processes running honest traffic on the same device. srx to srx
# across two namespaces (selftests/lib/topo.sh's srx-srx):
#
#       namespace tp-a                          namespace tp-b
#   rc_traffic (a <-> b) ------ tpsrxa ===== tpsrxb ------ (its b end)
#   rc_traffic (a <-> a)   /
#   hostile_traffic (a) --/
#
#   honest     two helpers/rc_traffic processes at once, one from device
#              a to device b, one on device a to itself, each started
#              again until the hostile process has ended: every RC
#              opcode (ATOMIC WRITE too), random lengths and offsets,
#              bytes compared, every completion once and in order
#   hostile    meanwhile helpers/hostile_traffic on device a: three pairs
#              of connected RC QPs (one responder on an SRQ) posting
#              SENDs, WRITEs, READs and receives, polling, arming,
#              resizing CQs and reconnecting, while a thread writes random
#              words into every ring mapping of the process; then every
#              object destroyed, each destroy successful
#
# Then: each rc_traffic run passed, hostile_traffic exited 0 (no failed
# destroy, no crash, no hang: every command runs under timeout), device
# a's bad_user_index counter grew (the kernel met the lies and refused
# them), its object counts (rdma resource show: qp, cq, pd, mr, srq) are
# what they were before, an ibv_rc_pingpong between a and b still passes, and
# the kernel logged no warning. Documentation/reliability.md has the last
# result.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=20400
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"

topo_trap
trap 's=$?; trap - EXIT; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

rc_traffic=$top/build/helpers/rc_traffic
hostile=$top/build/helpers/hostile_traffic
# How long the hostile process runs. Each honest process runs rc_traffic
# again and again (a new seed each time) while the hostile one runs, and
# is still at work on its last run when the hostile one ends: 400
# requests per QP took 5 to 15 s a to b (4 QPs) and 3 to 11 s a to a (2
# QPs) beside it under TCG (6.1, one other guest on the host, 2026-12-05),
# and the whole test 57 to 105 s with 35 s and 400.
hostile_s=${HOSTILE_SECONDS:-30}
honest_ops=${HOSTILE_HONEST_OPS:-250}
# Limits that only end a run that cannot finish (a hang): rc_traffic
# reports no progress for 30 s itself, hostile_traffic raises SIGALRM 120 s
# after its time.
scale=${SRX_TEST_TIMEOUT_SCALE:-1}
limit=$(((hostile_s + 150) * scale))

# run_bg NAME CMD...: CMD in namespace a, in the background, under the
# limit, its output in $tmp/NAME; its status in $tmp/NAME.rc, written when
# it ends, and its seconds in $tmp/NAME.s.
run_bg() {
	local name=$1
	shift
	echo "# + [a] $*"
	{
		t0=$SECONDS
		topo_exec a timeout --kill-after=10 "$limit" "$@" \
			>"$tmp/$name" 2>&1
		rc=$?
		echo "$((SECONDS - t0))" >"$tmp/$name.s"
		echo $rc >"$tmp/$name.rc"
	} &
}

# honest_bg NAME ARGS...: rc_traffic ARGS (and a seed) in namespace a, in
# the background, again and again until $tmp/hostile.rc appears, stopping
# at the first failure; the last run's output in $tmp/NAME, the first
# failure's status (or 0) in $tmp/NAME.rc, the runs and seconds in
# $tmp/NAME.s.
honest_bg() {
	local name=$1
	shift
	echo "# + [a] $rc_traffic $* -s SEED, until the hostile process ends"
	{
		t0=$SECONDS runs=0 rc=0
		while [ $runs = 0 ] || [ ! -e "$tmp/hostile.rc" ]; do
			runs=$((runs + 1))
			topo_exec a timeout --kill-after=10 "$limit" \
				"$rc_traffic" "$@" -s "$RANDOM$RANDOM" \
				>"$tmp/$name" 2>&1 || { rc=$?; break; }
			[ $((SECONDS - t0)) -lt "$limit" ] || { rc=124; break; }
		done
		echo "$runs runs in $((SECONDS - t0))" >"$tmp/$name.s"
		echo $rc >"$tmp/$name.rc"
	} &
}

# passed NAME: NAME's run exited 0; its last lines go to the log.
passed() {
	local rc
	rc=$(cat "$tmp/$1.rc" 2>/dev/null || echo none)
	echo "#   $1: exit $rc, $(cat "$tmp/$1.s" 2>/dev/null || echo ?) s"
	tail -n 6 "$tmp/$1" 2>/dev/null | sed 's/^/#   /'
	[ "$rc" = 0 ]
}

# counted BEFORE: device a's bad_user_index (indexes the kernel refused)
# grew from BEFORE: the scribbles reached the kernel's checks.
counted() {
	local now
	now=$(cnt a bad_user_index)
	echo "#   bad_user_index: $1 -> $now"
	[ "$now" -gt "$1" ]
}

same_counts() {
	local now
	now=$(counts "$dev_a")
	echo "#   $dev_a before: $before"
	echo "#   $dev_a after:  $now"
	[ -n "$before" ] && [ "$now" = "$before" ]
}

echo "TAP version 13"
for t in "$rc_traffic" "$hostile"; do
	[ -x "$t" ] || { echo "1..0 # SKIP $t is not built"; exit 4; }
done
need_tools ibv_rc_pingpong rdma

if topo_up srx-srx && gids; then
	dev_a=$(topo_var a DEV) dev_b=$(topo_var b DEV)
	before=$(counts "$dev_a") bad0=$(cnt a bad_user_index)
	run_bg hostile "$hostile" -d "$dev_a" -g "$gid_a" -t "$hostile_s"
	honest_bg honest_ab -d "$dev_a" -g "$gid_a" -D "$dev_b" -G "$gid_b" \
		-q 4 -n "$honest_ops" -A
	honest_bg honest_aa -d "$dev_a" -g "$gid_a" -q 2 -n "$honest_ops" -A
	wait
	ok "honest traffic a to b beside the hostile process: bytes and completions exact" \
		passed honest_ab
	ok "honest traffic a to itself beside the hostile process: bytes and completions exact" \
		passed honest_aa
	ok "the hostile process: no crash, no hang, every destroy succeeded" \
		passed hostile
	ok "$dev_a counted the hostile process's lies (bad_user_index)" \
		counted "$bad0"
	ok "$dev_a's qp, cq, pd, mr and srq counts as before" same_counts
	ok "srx still carries traffic: ibv_rc_pingpong, a client on a, 4 KiB" \
		pp b a 4096 1024
else
	ok "srx-srx topology" false
fi

ok "every topology removed, the machine as it was" topo_down
ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails -eq 0 ]
