#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# net_test.sh - srx's network layer (kernel/net.c, icrc.c): the UDP 4791
# tunnel sockets per network namespace and their lifetime, the receive path
# with its ICRC check and counters, and rdma_rxe's packets as ground truth.
# Runs in the VM after install_test.sh and leaves srx0 on eth0 as it was.
#
#   init namespace                   namespace srxn-a
#   ──────────────                   ────────────────
#   nvP 192.0.2.2/24  ══ veth ══     nvA 192.0.2.1/24 ── srxna
#       2001:db8:1::2/64                 2001:db8:1::1/64
#       rxe0 (rdma_rxe)              nvA2 ══ veth ══ nvA3   srxna2 on nvA2
#       roce_send.py (raw sockets)
#                                    namespace srxn-b
#   nvQ 198.51.100.2/24 ══ veth ══   nvB 198.51.100.1/24 ── srxnb
#       (MTU 576)
#   nvT 203.0.113.2/24  ══ veth ══   nvS 203.0.113.1/24   namespace srxn-s
#   (init_net forwards nvT -> nvQ, fragmenting; srxn-b reassembles)
#
#                                    namespace srxn-c (deleted under them)
#   eth1 (virtio) ────────────────►  eth1 ── srxnc
#   nvD ══ veth ═════════════════    nvC ── srxnd
#
# srx0 (on eth0, init_net) is deleted for the run: it would hold 4791 in
# init_net, where rdma_rxe must bind it. Addresses are documentation ones.
# Every command that could hang runs under timeout(1). TAP output; the
# commands run are echoed as "# + cmd".
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
send=$top/selftests/helpers/roce_send.py
py=/usr/bin/python3
nsA=srxn-a
nsB=srxn-b
nsC=srxn-c
nsS=srxn-s
T=30
tmp=$(mktemp -d)
n=0
fails=0
skip_reason=
srx0_was_there=0

# ---------------------------------------------------------------------------
# TAP and command helpers

# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"

# run CMD...: echo it, run it under the timeout, show its output as TAP
# comments, return its status; the output is left in $out.
run() {
	local rc
	echo "# + $*"
	out=$(timeout --kill-after=5 "$T" "$@" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/#   /'
	[ $rc -eq 124 ] && echo "#   (timed out after ${T}s)"
	return $rc
}

run_fails() {
	if run "$@"; then
		say "unexpectedly succeeded"
		return 1
	fi
	return 0
}

wait_until() {	# wait_until SECONDS CMD...
	local end=$((SECONDS + $1 + 1))
	shift
	while [ $SECONDS -lt $end ]; do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

# in_ns NS CMD...: CMD in namespace NS, or in init_net for NS "-".
in_ns() {
	local ns=$1
	shift
	if [ "$ns" = - ]; then
		"$@"
	else
		ip netns exec "$ns" "$@"
	fi
}

# ---------------------------------------------------------------------------
# What to look at

# sockets NS: "<IPv4 sockets> <IPv6 sockets>" bound to UDP 4791 in NS.
sockets() {
	in_ns "$1" ss -Hnlu 2>/dev/null | awk '
		$4 == "0.0.0.0:4791" { v4++ }
		$4 == "[::]:4791" || $4 == "*:4791" { v6++ }
		END { print v4 + 0, v6 + 0 }'
}

# expect_sockets NS "V4 V6": say what is bound, and whether it is that.
expect_sockets() {
	local got
	got=$(sockets "$1")
	say "UDP 4791 in ${1/#-/init_net}: $got (IPv4 IPv6), expected $2"
	[ "$got" = "$2" ]
}

# counter DEV NAME: a counter as `rdma statistic` shows it.
counter() {
	timeout "$T" rdma statistic show link "$1/1" 2>/dev/null |
		awk -v c="$2" '{ for (i = 1; i < NF; i++) if ($i == c) { print $(i + 1); exit } }'
}

# snapshot DEV: the receive counters of DEV into $snap (an array).
rx_counters=(rcvd_pkts rcvd_bytes rcvd_icrc_err rcvd_malformed rcvd_dropped)
declare -A snap
snapshot() {
	local c
	for c in "${rx_counters[@]}"; do
		snap[$c]=$(counter "$1" "$c")
	done
}

# expect_delta DEV NAME N: NAME grew by exactly N since snapshot.
expect_delta() {
	local now
	now=$(counter "$1" "$2")
	if [ -z "$now" ] || [ -z "${snap[$2]}" ]; then
		say "$1: no counter $2 in rdma statistic"
		return 1
	fi
	say "$1 $2: +$((now - snap[$2])) (expected +$3)"
	[ $((now - snap[$2])) -eq "$3" ]
}

# udp_drops NS: drops of the IPv4 socket on 4791 in NS (/proc/net/udp).
udp_drops() {
	in_ns "$1" cat /proc/net/udp | awk '$2 ~ /:12B7$/ { d += $NF } END { print d + 0 }'
}

drops_reach() {	# drops_reach NS N
	[ "$(udp_drops "$1")" -ge "$2" ]
}

# gid_index DEV IPV4: the RoCE v2 GID index of IPV4's mapped GID.
gid_index() {
	local a b c d f idx type want
	IFS=. read -r a b c d <<<"$2"
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d")
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		[ "$(cat "$f" 2>/dev/null)" = "$want" ] || continue
		idx=${f##*/}
		read -r type <"/sys/class/infiniband/$1/ports/1/gid_attrs/types/$idx" 2>/dev/null
		[ "$type" = "RoCE v2" ] && { echo "$idx"; return 0; }
	done
	return 1
}

have_dev() {
	[ -e "/sys/class/infiniband/$1" ]
}

# ---------------------------------------------------------------------------
# Setup and cleanup

cleanup() {
	local i
	for i in srxna srxna2 srxnb srxnc srxnd srxbad; do
		timeout "$T" rdma link delete "$i" 2>/dev/null
	done
	ip netns del "$nsA" 2>/dev/null
	ip netns del "$nsB" 2>/dev/null
	ip netns del "$nsC" 2>/dev/null
	ip netns del "$nsS" 2>/dev/null
	[ -n "${fwd_was:-}" ] && sysctl -qw net.ipv4.ip_forward="$fwd_was"
	ip link del nvD 2>/dev/null
	if grep -q '^rdma_rxe ' /proc/modules; then
		timeout "$T" rdma link delete rxe0 2>/dev/null
		timeout "$T" modprobe -r rdma_rxe
	fi
	timeout "$T" modprobe srx
	# eth1 comes back from srxn-c asynchronously.
	wait_until 10 ip link show eth1 >/dev/null 2>&1
	if [ "$srx0_was_there" = 1 ] && ! have_dev srx0; then
		wait_until 10 ip link show eth0 >/dev/null 2>&1
		ip link set eth0 up
		timeout "$T" rdma link add srx0 type srx netdev eth0
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "TAP version 13"
if ! modinfo -F filename srx >/dev/null 2>&1; then
	echo "1..0 # SKIP srx is not installed (selftests/install_test.sh runs first)"
	exit 4
fi

t_setup() {
	run modprobe srx || return 1
	if have_dev srx0; then
		srx0_was_there=1
		run rdma link delete srx0 || return 1
	fi
	if grep -q '^rdma_rxe ' /proc/modules; then
		run rdma link delete rxe0
		run modprobe -r rdma_rxe || return 1
	fi
	expect_sockets - "0 0" || return 1
	run ip netns add "$nsA" || return 1
	run ip netns add "$nsB" || return 1
	run ip link add nvP type veth peer name nvA netns "$nsA" || return 1
	run ip link add nvQ type veth peer name nvB netns "$nsB" || return 1
	run ip -n "$nsA" link add nvA2 type veth peer name nvA3 || return 1
	run ip addr add 192.0.2.2/24 dev nvP || return 1
	run ip addr add 2001:db8:1::2/64 dev nvP nodad || return 1
	run ip addr add 198.51.100.2/24 dev nvQ || return 1
	run ip -n "$nsA" addr add 192.0.2.1/24 dev nvA || return 1
	run ip -n "$nsA" addr add 2001:db8:1::1/64 dev nvA nodad || return 1
	run ip -n "$nsB" addr add 198.51.100.1/24 dev nvB || return 1
	local l
	for l in nvP nvQ; do
		run ip link set "$l" up || return 1
	done
	for l in lo nvA nvA2 nvA3; do
		run ip -n "$nsA" link set "$l" up || return 1
	done
	for l in lo nvB; do
		run ip -n "$nsB" link set "$l" up || return 1
	done
}

t_no_device_no_socket() {
	expect_sockets "$nsA" "0 0"
}

t_socket_with_device() {
	run ip netns exec "$nsA" rdma link add srxna type srx netdev nvA || return 1
	expect_sockets "$nsA" "1 1" || return 1
	# Only there: not in init_net, not in another namespace.
	expect_sockets - "0 0" || return 1
	expect_sockets "$nsB" "0 0"
}

t_two_devices_share() {
	run ip netns exec "$nsA" rdma link add srxna2 type srx netdev nvA2 || return 1
	expect_sockets "$nsA" "1 1" || return 1
	run rdma link delete srxna2 || return 1
	say "srxna still lives in $nsA"
	expect_sockets "$nsA" "1 1" || return 1
	# The last device of a namespace closes its sockets, and the next
	# one opens them again.
	run rdma link delete srxna || return 1
	expect_sockets "$nsA" "0 0" || return 1
	run ip netns exec "$nsA" rdma link add srxna type srx netdev nvA || return 1
	expect_sockets "$nsA" "1 1"
}

t_rxe_and_two_namespaces() {
	if ! modinfo rdma_rxe >/dev/null 2>&1; then
		skip "rdma_rxe is not built for this kernel"
		return 0
	fi
	run modprobe rdma_rxe || return 1
	run rdma link add rxe0 type rxe netdev nvP || return 1
	say "rdma_rxe binds 4791 in init_net"
	expect_sockets - "1 1" || return 1
	run ip netns exec "$nsB" rdma link add srxnb type srx netdev nvB || return 1
	expect_sockets "$nsA" "1 1" || return 1
	expect_sockets "$nsB" "1 1"
}

t_init_net_refused() {
	if ! grep -q '^rdma_rxe ' /proc/modules; then
		skip "rdma_rxe is not loaded"
		return 0
	fi
	run_fails rdma link add srxbad type srx netdev nvQ || return 1
	[[ $out == *"Address already in use"* ]] || {
		say "not EADDRINUSE"
		return 1
	}
	! have_dev srxbad || { say "srxbad exists"; return 1; }
	run sh -c "dmesg | tail -n 20 | grep 'srx: UDP port 4791 is taken'" || return 1
	expect_sockets "$nsA" "1 1"
}

# rx_case NS SRC DST DEV: good, bad-ICRC and short packets from NS to DST.
rx_case() {
	local ns=$1 src=$2 dst=$3 dev=$4 size bytes=0 pad pre=()
	[ "$ns" = - ] || pre=(ip netns exec "$ns")
	local specs=()
	snapshot "$dev"
	for size in 0 1 32 1000; do
		specs+=("good:2:$size")
		pad=$(((4 - size % 4) % 4))
		bytes=$((bytes + 2 * (12 + size + pad + 4)))
	done
	specs+=(bad-icrc:3:64 short:5)
	run "${pre[@]}" "$py" "$send" "$src" "$dst" "${specs[@]}" || return 1
	# Softirq has run by the time sendto() returns on veth and lo, but
	# give a loaded TCG guest a moment.
	wait_until 5 expect_delta "$dev" rcvd_pkts 8 >/dev/null
	expect_delta "$dev" rcvd_pkts 8 &&
		expect_delta "$dev" rcvd_bytes "$bytes" &&
		expect_delta "$dev" rcvd_icrc_err 3 &&
		expect_delta "$dev" rcvd_malformed 5 &&
		expect_delta "$dev" rcvd_dropped 8	# the good ones: no QP 0x11
}

t_rx_ipv4() {
	rx_case - 192.0.2.2 192.0.2.1 srxna
}

t_rx_ipv6() {
	rx_case - 2001:db8:1::2 2001:db8:1::1 srxna
}

t_rx_loopback() {
	say "packets to an address of the device's own netdev come in on lo"
	rx_case "$nsA" 192.0.2.1 192.0.2.1 srxna &&
		rx_case "$nsA" 2001:db8:1::1 2001:db8:1::1 srxna
}

t_rx_no_device() {
	local d0 d1
	snapshot srxna
	d0=$(udp_drops "$nsA")
	say "127.0.0.1 is on lo, which has no srx device"
	run ip netns exec "$nsA" "$py" "$send" 127.0.0.1 127.0.0.1 good:4 || return 1
	wait_until 5 drops_reach "$nsA" $((d0 + 4))
	d1=$(udp_drops "$nsA")
	say "drops of the 4791 socket in $nsA: +$((d1 - d0)) (expected +4)"
	[ $((d1 - d0)) -eq 4 ] || return 1
	expect_delta srxna rcvd_pkts 0
}

# rdma_rxe sends real RC SENDs (ibv_rc_pingpong's client) to srx: every
# packet rxe sent must arrive intact (rc_engine_test.sh tests the exchange).
t_rxe_ground_truth() {
	local sidx ridx sent0 sent1 spid rc
	if ! have_dev rxe0; then
		skip "rdma_rxe is not loaded"
		return 0
	fi
	if ! command -v ibv_rc_pingpong >/dev/null; then
		skip "ibv_rc_pingpong is not installed (ibverbs-utils)"
		return 0
	fi
	wait_until 10 gid_index srxna 192.0.2.1 >/dev/null
	wait_until 10 gid_index rxe0 192.0.2.2 >/dev/null
	sidx=$(gid_index srxna 192.0.2.1) || { say "srxna has no GID for 192.0.2.1"; return 1; }
	ridx=$(gid_index rxe0 192.0.2.2) || { say "rxe0 has no GID for 192.0.2.2"; return 1; }
	say "GID index: srxna $sidx, rxe0 $ridx"
	snapshot srxna
	read -r sent0 </sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts
	echo "# + ip netns exec $nsA ibv_rc_pingpong -d srxna -g $sidx -n 1 &"
	ip netns exec "$nsA" timeout 60 ibv_rc_pingpong -d srxna -g "$sidx" -n 1 \
		>"$tmp/server" 2>&1 &
	spid=$!
	wait_until 20 sh -c "ip netns exec $nsA ss -Hntl | grep -q ':18515 '" || {
		sed 's/^/#   server: /' "$tmp/server"
		kill "$spid" 2>/dev/null
		return 1
	}
	say "rxe's client against srx's server"
	echo "# + timeout 10 ibv_rc_pingpong -d rxe0 -g $ridx -n 1 192.0.2.1"
	timeout 10 ibv_rc_pingpong -d rxe0 -g "$ridx" -n 1 192.0.2.1 \
		>"$tmp/client" 2>&1
	rc=$?
	head -n 5 "$tmp/client" | sed 's/^/#   /'
	# rxe drops a packet whose ICRC is wrong: srx's replies got through.
	[ $rc -eq 0 ] || { say "rxe's client failed ($rc)"; rc=1; }
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	sed 's/^/#   server: /' "$tmp/server"
	read -r sent1 </sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts
	say "rxe0 sent_pkts: +$((sent1 - sent0))"
	[ $((sent1 - sent0)) -gt 0 ] || return 1
	wait_until 5 expect_delta srxna rcvd_pkts $((sent1 - sent0)) >/dev/null
	expect_delta srxna rcvd_pkts $((sent1 - sent0)) || rc=1
	expect_delta srxna rcvd_icrc_err 0 || rc=1
	expect_delta srxna rcvd_malformed 0 || rc=1
	return $rc
}

# A packet fragmented on the way and reassembled by srxn-b's IP layer is an
# skb with a frag_list: the ICRC is verified across it without linearizing.
t_rx_reassembled() {
	if ! have_dev srxnb; then
		skip "srxnb was not created (rdma_rxe case skipped)"
		return 0
	fi
	run ip netns add "$nsS" || return 1
	run ip link add nvT type veth peer name nvS netns "$nsS" || return 1
	run ip addr add 203.0.113.2/24 dev nvT || return 1
	run ip link set nvT up || return 1
	run ip -n "$nsS" addr add 203.0.113.1/24 dev nvS || return 1
	run ip -n "$nsS" link set nvS up || return 1
	run ip -n "$nsS" route add 198.51.100.0/24 via 203.0.113.2 || return 1
	run ip -n "$nsB" route add 203.0.113.0/24 via 198.51.100.2 || return 1
	run ip link set nvQ mtu 576 || return 1
	fwd_was=$(sysctl -n net.ipv4.ip_forward)
	run sysctl -qw net.ipv4.ip_forward=1 || return 1
	rx_reassembled_send
}

# Fragmented packets to srxnb, once t_rx_reassembled has set the path up.
rx_reassembled_send() {
	snapshot srxnb
	run ip netns exec "$nsS" "$py" "$send" 203.0.113.1 198.51.100.1 \
		good:3:1400:nodf bad-icrc:2:1400:nodf || return 1
	run ip netns exec "$nsB" nstat -az IpReasmOKs
	wait_until 5 expect_delta srxnb rcvd_pkts 3 >/dev/null
	expect_delta srxnb rcvd_pkts 3 &&
		expect_delta srxnb rcvd_bytes $((3 * (12 + 1400 + 4))) &&
		expect_delta srxnb rcvd_icrc_err 2 &&
		expect_delta srxnb rcvd_malformed 0
}

# srxna and srxnb deleted, and srx unloaded.
icrc_unload() {
	local dev
	for dev in srxna srxnb; do
		have_dev "$dev" && { run rdma link delete "$dev" || return 1; }
	done
	run rmmod srx
}

# srx loaded with icrc=MODE (empty: the default), and srxna and srxnb
# back as they were.
icrc_load() {
	local mode=$1
	run modprobe srx ${mode:+icrc=$mode} || return 1
	run cat /sys/module/srx/parameters/icrc || return 1
	icrc_in_use=$out
	run sh -c "dmesg | grep 'srx: CRC-32 of 4 KiB' | tail -n 1"
	run ip netns exec "$nsA" rdma link add srxna type srx netdev nvA || return 1
	if grep -q '^rdma_rxe ' /proc/modules; then
		run ip netns exec "$nsB" rdma link add srxnb type srx netdev nvB || return 1
	fi
}

# Both CRC-32s the icrc parameter chooses from, each verifying python's
# packets (zlib.crc32: good and wrong ICRCs), rxe's RC packets and a
# reassembled frag_list skb, and generating the ICRCs rxe accepts.
t_icrc_each() {
	local mode rc=0
	icrc_unload || return 1
	run_fails modprobe srx icrc=bogus || rc=1
	for mode in table crypto; do
		say "---- icrc=$mode"
		icrc_load "$mode" || return 1
		case $mode in
		table) [ "$icrc_in_use" = crc32_le ] ;;
		crypto) [ -n "$icrc_in_use" ] && [ "$icrc_in_use" != crc32_le ] ;;
		esac || { say "icrc=$mode, yet the ICRC is by $icrc_in_use"; rc=1; }
		t_rx_ipv4 || rc=1
		if have_dev rxe0; then
			t_rxe_ground_truth || rc=1
		fi
		if have_dev srxnb && ip netns list | grep -qw "$nsS"; then
			rx_reassembled_send || rc=1
		fi
		icrc_unload || return 1
	done
	say "---- back to the default"
	icrc_load "" || return 1
	return $rc
}

t_rmmod_several_namespaces() {
	have_dev srxna && have_dev srxnb || say "(srxnb is missing: one namespace only)"
	run rmmod srx || return 1
	! grep -q '^srx ' /proc/modules || { say "srx is still loaded"; return 1; }
	expect_sockets "$nsA" "0 0" || return 1
	expect_sockets "$nsB" "0 0" || return 1
	run modprobe srx
}

# A namespace dismantled with live srx devices in it, then rmmod: eth1
# (virtio) goes back to init_net, which only queues its device's
# unregistration, so srx's pernet exit may run before that device goes;
# the veth is unregistered with the namespace.
t_netns_del_then_rmmod() {
	if ! ip link show eth1 >/dev/null 2>&1; then
		skip "no eth1 in this VM"
		return 0
	fi
	have_dev srx1 && run rdma link delete srx1
	run ip netns add "$nsC" || return 1
	run ip link set eth1 netns "$nsC" || return 1
	run ip link add nvD type veth peer name nvC netns "$nsC" || return 1
	run ip -n "$nsC" link set eth1 up || return 1
	run ip -n "$nsC" link set nvC up || return 1
	run ip netns exec "$nsC" rdma link add srxnc type srx netdev eth1 || return 1
	run ip netns exec "$nsC" rdma link add srxnd type srx netdev nvC || return 1
	expect_sockets "$nsC" "1 1" || return 1
	run ip netns del "$nsC" || return 1
	wait_until 20 ip link show eth1 >/dev/null 2>&1 || {
		say "eth1 did not come back to init_net"
		return 1
	}
	run rmmod srx || return 1
	! have_dev srxnc && ! have_dev srxnd || { say "a device survived"; return 1; }
	run modprobe srx
}

case_ "setup: srx0 out of init_net, namespaces and veths" t_setup
case_ "no srx device in a namespace: nothing bound to 4791 there" t_no_device_no_socket
case_ "an srx device binds 4791 (IPv4 and IPv6) in its namespace only" t_socket_with_device
case_ "two devices share one socket pair; the last one closes it" t_two_devices_share
case_ "devices in two namespaces while rdma_rxe holds 4791 in init_net" t_rxe_and_two_namespaces
case_ "srx on an init_net netdev while rdma_rxe is loaded: EADDRINUSE" t_init_net_refused
case_ "IPv4: good, bad ICRC and short packets are counted exactly" t_rx_ipv4
case_ "IPv6: good, bad ICRC and short packets are counted exactly" t_rx_ipv6
case_ "loopback: packets to the device's own addresses reach it" t_rx_loopback
case_ "a netdev without srx device: dropped, counted on the socket" t_rx_no_device
case_ "rdma_rxe's RC packets reach srx intact (ibv_rc_pingpong)" t_rxe_ground_truth
case_ "IPv4 fragments reassembled into a frag_list skb: ICRC checked across it" t_rx_reassembled
case_ "icrc=table and icrc=crypto: rxe's, python's and fragmented packets verified, rxe accepts srx's" t_icrc_each
case_ "rmmod with devices in several namespaces frees their ports" t_rmmod_several_namespaces
case_ "namespace deleted under live devices, then rmmod: clean" t_netns_del_then_rmmod

echo "1..$n"
[ $fails -eq 0 ]
