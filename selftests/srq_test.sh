#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# srq_test.sh - issue 13's shared receive queues with the real tools, in
# the topologies of selftests/lib/topo.sh: one srx device to itself, srx
# to srx across two namespaces, and srx to rdma_rxe both ways.
#
#   pingpong   ibv_srq_pingpong: 16 RC QPs on one SRQ, over IPv4 and IPv6
#              GIDs, 1 B and 4 KiB (four packets a message), with -e; and
#              32 QPs on an SRQ of 32 receives (-q 32 -r 32: it wants a
#              receive per QP at least), one refilled per completion.
#              ibv_rc_pingpong has no SRQ option in rdma-core 44 (its
#              --help lists none), so ibv_srq_pingpong is libibverbs' only
#              SRQ example.
#   perftest   ib_send_bw --use-srq with -c RC over 8 QPs, with -c UD, and
#              with -c UC
#   srq_check  helpers/srq_check: create limits and granted sizes, modify
#              (LIMIT above max_wr, MAX_WR), SRQ_LIMIT_REACHED once per arm,
#              two senders into one SRQ, QP_LAST_WQE_REACHED once per entry
#              to ERR (not on an rdma_rxe receiver, which never raises it),
#              ibv_destroy_srq while attached, and (srx receiving) a QP
#              holding a receive (a message begun by a packet from
#              helpers/roce_send.py) reset, moved to ERR and destroyed,
#              a process writing the SRQ's ring as a hostile one
#              would, and an SRQ's receives checked against its own PD,
#              not its QP's; an srx receiver counts the events in
#              srq_limit_events and last_wqe_events, the lies in
#              bad_user_index and invalid_wqes
#
# Each case must pass; then no kernel warning may have been logged.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=21000
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"

topo_trap
trap 's=$?; trap - EXIT; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

# srqpp SRV CLI 4|6 SIZE [ARGS]: ibv_srq_pingpong (50 exchanges per QP).
srqpp() {
	pp46 ibv_srq_pingpong "$@"
}

pingpongs() {
	local srv=$1 cli=$2 rc=0
	srqpp "$srv" "$cli" 4 1 || rc=1
	srqpp "$srv" "$cli" 4 4096 || rc=1
	srqpp "$srv" "$cli" 4 4096 -e || rc=1
	srqpp "$srv" "$cli" 6 4096 || rc=1
	srqpp "$srv" "$cli" 4 64 -q 32 -r 32 || rc=1
	return $rc
}

perfs() {
	local srv=$1 cli=$2 rc=0
	perf ib_send_bw "$srv" "$cli" --use-srq -c RC -q 8 -s 4096 -n 200 || rc=1
	perf ib_send_bw "$srv" "$cli" --use-srq -c UD -s 1024 -n 200 || rc=1
	perf ib_send_bw "$srv" "$cli" --use-srq -c UC -s 4096 -n 200 || rc=1
	return $rc
}

srq_check=$top/build/helpers/srq_check

# check FROM TO: srq_check from side FROM's device to side TO's, whose QPs
# share the SRQ. An srx receiver counts the events it raised; rdma_rxe
# raises no LAST_WQE_REACHED (srq_check -r skips that case).
check() {
	local from=$1 to=$2 gf gt extra=() l0=0 l1=0 w0=0 w1=0 b0=0 b1=0 i0=0 i1=0 rc=0
	[ "$from" = a ] && gf=$gid_a || gf=$gid_b
	[ "$to" = a ] && gt=$gid_a || gt=$gid_b
	if [ "$(topo_var "$to" DRIVER)" != srx ]; then
		extra=(-r)
	else
		extra=(-S "$top/selftests/helpers/roce_send.py")
		l0=$(cnt "$to" srq_limit_events) w0=$(cnt "$to" last_wqe_events)
		b0=$(cnt "$to" bad_user_index) i0=$(cnt "$to" invalid_wqes)
	fi
	echo "# + [$from] $srq_check -d $(topo_var "$from" DEV) -g $gf -D $(topo_var "$to" DEV) -G $gt ${extra[*]}"
	topo_exec "$from" timeout "$pair_limit" "$srq_check" \
		-d "$(topo_var "$from" DEV)" -g "$gf" \
		-D "$(topo_var "$to" DEV)" -G "$gt" "${extra[@]}" 2>&1 |
		sed 's/^/#   /' || rc=1
	if [ "$(topo_var "$to" DRIVER)" = srx ]; then
		l1=$(cnt "$to" srq_limit_events) w1=$(cnt "$to" last_wqe_events)
		b1=$(cnt "$to" bad_user_index) i1=$(cnt "$to" invalid_wqes)
		echo "#   at $to: srq_limit_events $l0 -> $l1, last_wqe_events $w0 -> $w1, bad_user_index $b0 -> $b1, invalid_wqes $i0 -> $i1"
		[ "$l1" -eq $((l0 + 2)) ] || rc=1
		[ "$w1" -eq $((w0 + 5)) ] || rc=1
		[ "$b1" -gt "$b0" ] || rc=1
		[ "$i1" -eq $((i0 + 1)) ] || rc=1
	fi
	return $rc
}

echo "TAP version 13"
for t in ibv_srq_pingpong ib_send_bw; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 4; }
done

# -------------------------------------------------------------- srx-self
if topo_up srx-self && gids && gids6; then
	ok "srx-self: ibv_srq_pingpong, IPv4 and IPv6, 1 B and 4 KiB, -e, -q 32" \
		pingpongs a b
	ok "srx-self: ib_send_bw --use-srq -c RC, UD, UC" perfs a b
	ok "srx-self: srq_check" check a b
else
	ok "srx-self topology" false
fi

# -------------------------------------------------------------- srx-srx
if topo_up srx-srx && gids && gids6; then
	ok "srx-srx: ibv_srq_pingpong, IPv4 and IPv6, 1 B and 4 KiB, -e, -q 32" \
		pingpongs a b
	ok "srx-srx: ib_send_bw --use-srq -c RC, UD, UC" perfs a b
	ok "srx-srx: srq_check" check a b
else
	ok "srx-srx topology" false
fi

# -------------------------------------------------------------- srx-rxe
if topo_up srx-rxe && gids && gids6; then
	ok "srx server, rxe client: ibv_srq_pingpong, IPv4 and IPv6, -e" \
		pingpongs a b
	ok "rxe server, srx client: ibv_srq_pingpong, IPv4 and IPv6, -e" \
		pingpongs b a
	ok "srx to rxe: ib_send_bw --use-srq -c RC, UD, UC" perfs b a
	ok "rxe to srx: ib_send_bw --use-srq -c RC, UD, UC" perfs a b
	ok "srx to rxe: srq_check" check a b
	ok "rxe to srx: srq_check" check b a
else
	ok "srx-rxe topology" false
fi

ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails = 0 ]
