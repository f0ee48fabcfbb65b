#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# uc_test.sh - issue 13's UC transport with the real tools, in the
# topologies of selftests/lib/topo.sh: one srx device to itself, srx to
# srx across two namespaces, and srx to rdma_rxe both ways.
#
#   pingpong   ibv_uc_pingpong at 1 B, at 4 KiB over a 1024-byte path MTU
#              (four packets a message), with -e, over IPv4 and IPv6 GIDs
#   perftest   ib_send_lat, ib_write_lat and ib_write_bw with -c UC
#   uc_check   helpers/uc_check: UC's receive rules, from real QPs (PSN
#              resync, multi-packet SEND and WRITE with immediates, a SEND
#              too long for its buffer, a WRITE without the right or with
#              an unknown rkey, a WRITE_WITH_IMM with no receive), and on
#              an srx receiver from packets built by helpers/roce_send.py
#              (a message with a PSN gap, MIDDLE and LAST without FIRST,
#              an abandoned FIRST); an srx receiver counts them in
#              uc_rcvd_dropped and uc_msg_abandoned
#   loss       ib_write_bw -c UC under 2% netem loss between two srx
#              devices: it finishes, and the receiver counts the messages
#              it dropped (uc_rcvd_dropped). Not ib_send_bw: its server
#              waits for every message, so under loss it waits for ever
#              by design, on any device.
#
# Each case must pass; then no kernel warning may have been logged.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=20000
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"

topo_trap
trap 's=$?; trap - EXIT; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

# ucpp SRV CLI 4|6 SIZE [ARGS]: ibv_uc_pingpong over a 1024-byte path MTU.
ucpp() {
	pp46 ibv_uc_pingpong "$@" -m 1024
}

pingpongs() {
	local srv=$1 cli=$2 rc=0
	ucpp "$srv" "$cli" 4 1 || rc=1
	ucpp "$srv" "$cli" 4 4096 || rc=1
	ucpp "$srv" "$cli" 4 4096 -e || rc=1
	ucpp "$srv" "$cli" 6 4096 || rc=1
	return $rc
}

perfs() {
	local srv=$1 cli=$2 rc=0
	perf ib_send_lat "$srv" "$cli" -c UC -s 64 -n 200 || rc=1
	perf ib_write_lat "$srv" "$cli" -c UC -s 4096 -n 200 || rc=1
	perf ib_write_bw "$srv" "$cli" -c UC -s 65536 -n 200 -q 2 || rc=1
	return $rc
}

uc_check=$top/build/helpers/uc_check

# check FROM TO [4|6]: uc_check from side FROM's device to side TO's. An
# srx receiver also gets the hand-built packets, and its counters of what
# the cases provoke must grow; rdma_rxe counts none of them, and as the
# receiver skips one case (uc_check -r: it ends its QP there).
check() {
	local from=$1 to=$2 v=${3:-4} gf gt extra=() d0=0 d1=0 a0=0 a1=0 rc=0
	if [ "$v" = 4 ]; then
		[ "$from" = a ] && gf=$gid_a || gf=$gid_b
		[ "$to" = a ] && gt=$gid_a || gt=$gid_b
	else
		[ "$from" = a ] && gf=$gid6_a || gf=$gid6_b
		[ "$to" = a ] && gt=$gid6_a || gt=$gid6_b
	fi
	if [ "$(topo_var "$to" DRIVER)" != srx ]; then
		extra=(-r)
	else
		[ "$v" = 4 ] && extra=(-S "$top/selftests/helpers/roce_send.py")
		d0=$(cnt "$to" uc_rcvd_dropped) a0=$(cnt "$to" uc_msg_abandoned)
	fi
	echo "# + [$from] $uc_check -d $(topo_var "$from" DEV) -g $gf -D $(topo_var "$to" DEV) -G $gt ${extra[*]}"
	topo_exec "$from" timeout "$pair_limit" "$uc_check" \
		-d "$(topo_var "$from" DEV)" -g "$gf" \
		-D "$(topo_var "$to" DEV)" -G "$gt" "${extra[@]}" 2>&1 |
		sed 's/^/#   /' || rc=1
	if [ "$(topo_var "$to" DRIVER)" = srx ]; then
		d1=$(cnt "$to" uc_rcvd_dropped) a1=$(cnt "$to" uc_msg_abandoned)
		echo "#   uc_rcvd_dropped at $to: $d0 -> $d1; uc_msg_abandoned: $a0 -> $a1"
		[ "$d1" -gt "$d0" ] || rc=1
		if [ ${#extra[@]} -gt 0 ]; then
			[ "$a1" -gt "$a0" ] || rc=1
		fi
	fi
	return $rc
}

# lossy: ib_write_bw -c UC from a to b with 2% loss on both veth ends;
# the receiver b must count dropped packets.
lossy() {
	local d0 d1 rc=0
	d0=$(cnt b uc_rcvd_dropped)
	echo "# + netem loss 2% on $TOPO_A_NETDEV and $TOPO_B_NETDEV"
	topo_exec a tc qdisc replace dev "$TOPO_A_NETDEV" root netem loss 2% &&
		topo_exec b tc qdisc replace dev "$TOPO_B_NETDEV" root netem loss 2% ||
		rc=1
	[ $rc = 0 ] && { perf ib_write_bw b a -c UC -s 65536 -n 300 || rc=1; }
	topo_exec a tc qdisc del dev "$TOPO_A_NETDEV" root 2>/dev/null
	topo_exec b tc qdisc del dev "$TOPO_B_NETDEV" root 2>/dev/null
	d1=$(cnt b uc_rcvd_dropped)
	echo "#   uc_rcvd_dropped at b: $d0 -> $d1"
	[ $rc = 0 ] && [ "$d1" -gt "$d0" ]
}

echo "TAP version 13"
for t in ibv_uc_pingpong ib_write_bw python3; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 4; }
done

# -------------------------------------------------------------- srx-self
if topo_up srx-self && gids && gids6; then
	ok "srx-self: ibv_uc_pingpong, IPv4 and IPv6, 1 B and 4 KiB, -e" \
		pingpongs a b
	ok "srx-self: ib_send_lat, ib_write_lat, ib_write_bw -c UC" perfs a b
	ok "srx-self: uc_check, hand-built packets included" check a b
else
	ok "srx-self topology" false
fi

# -------------------------------------------------------------- srx-srx
if topo_up srx-srx && gids && gids6; then
	ok "srx-srx: ibv_uc_pingpong, IPv4 and IPv6, 1 B and 4 KiB, -e" \
		pingpongs a b
	ok "srx-srx: ib_send_lat, ib_write_lat, ib_write_bw -c UC" perfs a b
	ok "srx-srx: uc_check over IPv4, hand-built packets included" check a b
	ok "srx-srx: uc_check over IPv6" check a b 6
	ok "srx-srx: ib_write_bw -c UC under 2% loss finishes; drops counted" \
		lossy
else
	ok "srx-srx topology" false
fi

# -------------------------------------------------------------- srx-rxe
if topo_up srx-rxe && gids && gids6; then
	ok "srx server, rxe client: ibv_uc_pingpong, IPv4 and IPv6, -e" \
		pingpongs a b
	ok "rxe server, srx client: ibv_uc_pingpong, IPv4 and IPv6, -e" \
		pingpongs b a
	ok "srx to rxe: ib_send_lat, ib_write_lat, ib_write_bw -c UC" perfs b a
	ok "rxe to srx: ib_send_lat, ib_write_lat, ib_write_bw -c UC" perfs a b
	ok "srx to rxe: uc_check" check a b
	ok "rxe to srx: uc_check, hand-built packets included" check b a
else
	ok "srx-rxe topology" false
fi

ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails = 0 ]
