#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ud_test.sh - issue 13's UD datagrams and address handles, with the real
# tools, in the topologies of selftests/lib/topo.sh: one srx device to
# itself, srx to srx across two namespaces, and srx to rdma_rxe both ways.
#
#   pingpong   ibv_ud_pingpong at the port MTU (1024 B at a netdev MTU of
#              1500; ud_pingpong refuses more) and at 1 B, with and
#              without -e, over IPv4 and IPv6 GIDs
#   perftest   ib_send_bw and ib_send_lat with -c UD
#   ud_check   helpers/ud_check: the GRH area and src_qp of a receive, an
#              AH made from it with ibv_create_ah_from_wc() and a reply
#              through it, immediate data, a wrong Q_Key dropped (and
#              counted: rcvd_qkey_err), a privileged Q_Key in a work
#              request sent as the QP's own, a SEND over the MTU completed
#              and not sent (ud_send_too_long), an AH of another PD
#              failing its WQE, and the errnos of ibv_create_ah(): EINVAL
#              without a GRH, ENETUNREACH/EHOSTUNREACH for an IPv6
#              address without a route, ETIMEDOUT for an IPv4 address
#              nobody answers
#
# Each case must pass; then no kernel warning may have been logged.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=19800
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"

topo_trap
trap 's=$?; trap - EXIT; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

# udpp SRV CLI 4|6 SIZE [ARGS]: ibv_ud_pingpong between the two sides.
udpp() {
	pp46 ibv_ud_pingpong "$@"
}

pingpongs() {
	local srv=$1 cli=$2 rc=0
	udpp "$srv" "$cli" 4 1024 || rc=1
	udpp "$srv" "$cli" 4 1 || rc=1
	udpp "$srv" "$cli" 4 1024 -e || rc=1
	udpp "$srv" "$cli" 6 1024 || rc=1
	return $rc
}

perfs() {
	local srv=$1 cli=$2 rc=0
	perf ib_send_bw "$srv" "$cli" -c UD -s 1024 -n 1000 -q 4 || rc=1
	perf ib_send_lat "$srv" "$cli" -c UD -s 64 -n 200 || rc=1
	return $rc
}

ud_check=$top/build/helpers/ud_check

# check 4|6 [ARGS]: ud_check from side a to side b (the same device for
# srx-self), its TAP lines as comments; the counters of what it provokes
# must grow at the receiver (a wrong Q_Key; rdma_rxe counts none, and
# there the helper's check that it was not delivered is all) and at the
# sender (too long).
check() {
	local v=$1 ga gb q0 l0 q1 l1 rc=0
	shift
	[ "$v" = 4 ] && ga=$gid_a gb=$gid_b || ga=$gid6_a gb=$gid6_b
	l0=$(cnt a ud_send_too_long) q0=0
	[ "$(topo_var b DRIVER)" = srx ] && q0=$(cnt b rcvd_qkey_err)
	echo "# + $ud_check -d $TOPO_A_DEV -g $ga -D $TOPO_B_DEV -G $gb $*"
	topo_exec a timeout "$pair_limit" "$ud_check" -d "$TOPO_A_DEV" -g "$ga" \
		-D "$TOPO_B_DEV" -G "$gb" "$@" 2>&1 | sed 's/^/#   /' || rc=1
	l1=$(cnt a ud_send_too_long) q1=1
	[ "$(topo_var b DRIVER)" = srx ] && q1=$(cnt b rcvd_qkey_err)
	echo "#   rcvd_qkey_err at b: $q0 -> $q1; ud_send_too_long at a: $l0 -> $l1"
	[ "$q1" -gt "$q0" ] || rc=1
	[ "$l1" -gt "$l0" ] || rc=1
	return $rc
}

echo "TAP version 13"
for t in ibv_ud_pingpong ib_send_bw; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 4; }
done

# -------------------------------------------------------------- srx-self
if topo_up srx-self && gids && gids6; then
	ok "srx-self: ibv_ud_pingpong, IPv4 and IPv6, 1 B to the MTU, -e" \
		pingpongs a b
	ok "srx-self: ud_check over IPv4" check 4
	ok "srx-self: ud_check over IPv6" check 6
else
	ok "srx-self topology" false
fi

# -------------------------------------------------------------- srx-srx
# 2001:db8:ffff::1 has no route in tp-a; 192.0.2.99 is on tpa0's link and
# nobody has it: the ARP requests stay on the veth.
if topo_up srx-srx && gids && gids6; then
	ok "srx-srx: ibv_ud_pingpong, IPv4 and IPv6, 1 B to the MTU, -e" \
		pingpongs a b
	ok "srx-srx: ib_send_bw -c UD -q 4, ib_send_lat -c UD" perfs a b
	ok "srx-srx: ud_check over IPv4, and an AH to an address nobody answers" \
		check 4 -n 192.0.2.99
	ok "srx-srx: ud_check over IPv6, and an AH to an address without a route" \
		check 6 -u 2001:db8:ffff::1
else
	ok "srx-srx topology" false
fi

# -------------------------------------------------------------- srx-rxe
if topo_up srx-rxe && gids && gids6; then
	ok "srx server, rxe client: ibv_ud_pingpong, IPv4 and IPv6, -e" \
		pingpongs a b
	ok "rxe server, srx client: ibv_ud_pingpong, IPv4 and IPv6, -e" \
		pingpongs b a
	ok "srx to rxe: ib_send_bw -c UD -q 4, ib_send_lat -c UD" perfs b a
	ok "rxe to srx: ib_send_bw -c UD -q 4, ib_send_lat -c UD" perfs a b
	ok "srx and rxe: ud_check over IPv4 (rxe answers through an AH from the WC)" \
		check 4
	ok "srx and rxe: ud_check over IPv6" check 6
else
	ok "srx-rxe topology" false
fi

ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails = 0 ]
