#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# mcast_test.sh - issue 13's UD multicast, in the topologies of
# selftests/lib/topo.sh: one srx device to itself, srx to srx across two
# namespaces, and srx to rdma_rxe both ways.
#
#   mcast_check  helpers/mcast_check over an IPv4 and an IPv6 group:
#                delivery to every attached QP with the datagram's Q_Key
#                and to no other, the GRH area's destination, the netdev's
#                IP membership (joined once, left with the last QP), detach,
#                a double attach, EBUSY for destroying an attached QP, the
#                EINVALs; then the process exits with a QP still attached,
#                and the membership must be gone
#   mckey        librdmacm's multicast example: a receiver joins, and once
#                its QP is attached and its netdev in the group, a sender
#                on the other side (mckey -s, or helpers/mcast_cm_send for
#                rdma_rxe) sends it ten datagrams
#   teardown     the receiving device removed (rdma link delete) while a
#                mckey receiver is attached: the netdev leaves the group,
#                and nothing is logged; and the netdev deleted under one
#
# The mcast_rcvd counter of an srx receiver must grow. Each case must
# pass; then no kernel warning may have been logged.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=20200
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"

topo_trap
trap 's=$?; trap - EXIT; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

mcast_check=$top/build/helpers/mcast_check
MC4=230.83.88.1
MC6=ff0e::5358:1
MCKEY_GROUP=230.83.88.7

# in_group SIDE GROUP: SIDE's netdev is in the IP group.
in_group() {
	topo_exec "$1" ip maddr show dev "$(topo_var "$1" NETDEV)" |
		grep -qE "inet6? +$2( |\$)"
}

# check FROM TO 4|6: mcast_check from side FROM's device to side TO's;
# afterwards TO's netdev must have left the group its QP was still in.
check() {
	local from=$1 to=$2 v=$3 g grp args=() m0=0 m1=0 rc=0
	[ "$from" = a ] && g=$gid_a || g=$gid_b
	[ "$v" = 6 ] && { [ "$from" = a ] && g=$gid6_a || g=$gid6_b; args=(-6); }
	[ "$v" = 6 ] && grp=$MC6 || grp=$MC4
	[ -n "$(topo_var "$to" NS)" ] && args+=(-n "$(topo_var "$to" NS)")
	[ "$(topo_var "$to" DRIVER)" = srx ] && m0=$(cnt "$to" mcast_rcvd)
	echo "# + [$from] $mcast_check -d $(topo_var "$from" DEV) -g $g -D $(topo_var "$to" DEV) -N $(topo_var "$to" NETDEV) ${args[*]}"
	topo_exec "$from" timeout "$pair_limit" "$mcast_check" \
		-d "$(topo_var "$from" DEV)" \
		-g "$g" -D "$(topo_var "$to" DEV)" \
		-N "$(topo_var "$to" NETDEV)" "${args[@]}" 2>&1 |
		sed 's/^/#   /' || rc=1
	if in_group "$to" "$grp"; then
		echo "#   $(topo_var "$to" NETDEV) is still in $grp after the process exited"
		rc=1
	fi
	if [ "$(topo_var "$to" DRIVER)" = srx ]; then
		m1=$(cnt "$to" mcast_rcvd)
		echo "#   mcast_rcvd at $to: $m0 -> $m1"
		[ "$m1" -gt "$m0" ] || rc=1
	fi
	return $rc
}

# counters SIDE: the receive path's counters of SIDE's device, and its
# netdev's received packets, on one line.
MCKEY_COUNTERS="sent_pkts rcvd_pkts mcast_rcvd mcast_dropped rcvd_qkey_err
	ud_rcvd_no_wqe rcvd_dropped rcvd_malformed rcvd_icrc_err"
counters() {
	local c line=''
	for c in $MCKEY_COUNTERS; do
		[ -r "/sys/class/infiniband/$(topo_var "$1" DEV)/ports/1/hw_counters/$c" ] &&
			line+=" $c=$(cnt "$1" "$c")"
	done
	line+=" rx_packets=$(topo_exec "$1" cat "/sys/class/net/$(topo_var "$1" NETDEV)/statistics/rx_packets")"
	echo "$line"
}

# mckey_pair SENDER RECEIVER: mckey on RECEIVER receives ten datagrams
# from mckey -s on SENDER. The sender starts once the receiver has said
# it joined: librdmacm attaches the receiver's QP before it hands mckey
# the join event (ucma_process_join()), while the netdev is in the group
# earlier, from the kernel's join. An rdma_rxe sender is
# helpers/mcast_cm_send instead, which joins and sends as mckey does but
# waits for its sends: rdma_rxe 6.12 loses the WQEs of a process that
# exits right after posting them, as mckey's sender does (the helper's
# header says why; in a CI run rxe sent 1 of 10 and srx received it).
# Output is line-buffered (stdbuf -oL), so that a receiver killed by
# timeout still shows what it got. A failure shows both sides' counters
# before and after, to tell a datagram never sent from one dropped.
mckey_pair() {
	local snd=$1 rcv=$2 rpid rc=0 t0=$SECONDS c0s c0r ip send
	ip=$(topo_var "$snd" IP4)
	if [ "$(topo_var "$snd" DRIVER)" = rxe ]; then
		send=("$top/build/helpers/mcast_cm_send" -m "$MCKEY_GROUP" -b "$ip")
	else
		send=(mckey -m "$MCKEY_GROUP" -b "$ip" -s)
	fi
	rm -f "$tmp/snd"
	c0s=$(counters "$snd") c0r=$(counters "$rcv")
	echo "# + [$rcv] mckey -m $MCKEY_GROUP -b $(topo_var "$rcv" IP4)"
	topo_exec "$rcv" timeout "$pair_limit" stdbuf -oL mckey \
		-m "$MCKEY_GROUP" -b "$(topo_var "$rcv" IP4)" >"$tmp/rcv" 2>&1 &
	rpid=$!
	if ! topo_wait $((20 * ${SRX_TEST_TIMEOUT_SCALE:-1})) rcv_joined; then
		echo "#   the receiver did not join"
		rc=1
	elif ! in_group "$rcv" "$MCKEY_GROUP"; then
		echo "#   the receiver joined, but its netdev is not in the group"
		rc=1
	else
		echo "# + [$snd] ${send[*]##*/}"
		topo_exec "$snd" timeout "$pair_limit" stdbuf -oL "${send[@]}" \
			>"$tmp/snd" 2>&1 || rc=1
	fi
	wait "$rpid" || rc=1
	[ $rc = 0 ] || {
		[ -f "$tmp/snd" ] && sed 's/^/#   sender: /' "$tmp/snd"
		sed 's/^/#   receiver: /' "$tmp/rcv"
		echo "#   failed after $((SECONDS - t0)) s"
		echo "#   sender $(topo_var "$snd" DEV) before:$c0s"
		echo "#   sender $(topo_var "$snd" DEV) after: $(counters "$snd")"
		echo "#   receiver $(topo_var "$rcv" DEV) before:$c0r"
		echo "#   receiver $(topo_var "$rcv" DEV) after: $(counters "$rcv")"
	}
	grep -h "^sent " "$tmp/snd" 2>/dev/null | sed 's/^/#   sender: /'
	grep -h "complete" "$tmp/rcv" | head -n 1 | sed 's/^/#   receiver: /'
	return $rc
}

rcv_joined() {
	grep -q "mckey: joined dgid" "$tmp/rcv"
}

not_in_group() {
	! in_group "$@"
}

# mckey_listen SIDE: a mckey receiver on SIDE that waits for more than
# anyone sends, in the background (pid in rpid), joined before it returns.
rpid=''
mckey_listen() {
	topo_exec "$1" timeout "$pair_limit" mckey -m "$MCKEY_GROUP" \
		-b "$(topo_var "$1" IP4)" -C 100 >"$tmp/rcv" 2>&1 &
	rpid=$!
	topo_wait $((20 * ${SRX_TEST_TIMEOUT_SCALE:-1})) in_group "$1" "$MCKEY_GROUP" &&
		return 0
	echo "#   the receiver did not join"
	return 1
}

# teardown SIDE: remove SIDE's device under an attached mckey receiver.
# The removal detaches its QP (the uverbs cleanup of a removed device) and
# rdma_cm leaves its own join: the netdev must leave the group while the
# receiver still runs (mckey does not end on a device removal by itself).
teardown() {
	local side=$1 rc=0
	mckey_listen "$side" || rc=1
	echo "# + [$side] rdma link delete $(topo_var "$side" DEV)"
	topo_exec "$side" rdma link delete "$(topo_var "$side" DEV)" || rc=1
	if ! topo_wait $((30 * ${SRX_TEST_TIMEOUT_SCALE:-1})) not_in_group "$side" "$MCKEY_GROUP"; then
		echo "#   still in $MCKEY_GROUP after the device went"
		rc=1
	fi
	kill "$rpid" 2>/dev/null
	wait "$rpid"
	sed 's/^/#   receiver: /' "$tmp/rcv" | head -n 5
	return $rc
}

dev_gone() {
	! topo_exec "$1" rdma link show 2>/dev/null | grep -qw "$2"
}

# teardown_netdev SIDE: delete SIDE's netdev under an attached mckey
# receiver: the device goes (NETDEV_UNREGISTER queues its removal, which
# detaches the QP from outside RTNL), with nothing logged.
teardown_netdev() {
	local side=$1 dev rc=0
	dev=$(topo_var "$side" DEV)
	mckey_listen "$side" || rc=1
	echo "# + [$side] ip link del $(topo_var "$side" NETDEV)"
	topo_exec "$side" ip link del "$(topo_var "$side" NETDEV)" || rc=1
	if ! topo_wait $((30 * ${SRX_TEST_TIMEOUT_SCALE:-1})) dev_gone "$side" "$dev"; then
		echo "#   $dev is still there"
		rc=1
	fi
	kill "$rpid" 2>/dev/null
	wait "$rpid"
	return $rc
}

echo "TAP version 13"
for t in mckey ip; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 4; }
done

# -------------------------------------------------------------- srx-self
if topo_up srx-self && gids && gids6; then
	ok "srx-self: mcast_check over an IPv4 group" check a a 4
	ok "srx-self: mcast_check over an IPv6 group" check a a 6
	ok "srx-self: mckey" mckey_pair a a
	ok "srx-self: ip link del under an attached receiver" teardown_netdev a
else
	ok "srx-self topology" false
fi

# -------------------------------------------------------------- srx-srx
if topo_up srx-srx && gids && gids6; then
	ok "srx-srx: mcast_check over an IPv4 group" check a b 4
	ok "srx-srx: mcast_check over an IPv6 group" check a b 6
	ok "srx-srx: mckey, a to b" mckey_pair a b
	ok "srx-srx: mckey, b to a" mckey_pair b a
	ok "srx-srx: rdma link delete under an attached receiver" teardown b
else
	ok "srx-srx topology" false
fi

# -------------------------------------------------------------- srx-rxe
if topo_up srx-rxe && gids && gids6; then
	ok "rxe to srx: mcast_check over an IPv4 group" check b a 4
	ok "rxe sender (mcast_cm_send), srx receiver: mckey" mckey_pair b a
	ok "srx sender, rxe receiver: mckey" mckey_pair a b
else
	ok "srx-rxe topology" false
fi

ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails = 0 ]
