#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# cm_test.sh - issue 13's rdma_cm: the kernel's ib_cm and rdma_cm over
# srx's QP1 (UD MADs to QP 1, Q_Key 0x80010000), with librdmacm's own
# programs, in the topologies of selftests/lib/topo.sh: srx to srx across
# two namespaces (two devices in two namespaces of one host), one srx
# device to itself, and srx to rdma_rxe both ways.
#
#   rping                 RC connection, SEND and RDMA READ/WRITE, 10 pings
#   ucmatose              RC connections, SENDs both ways
#   udaddy                UD through rdma_cm (SIDR, RDMA_PS_UDP's Q_Key)
#   rdma_server/_client   the rdma_* convenience API
#   rdma_xserver/_xclient the same with -c r (RC; srx has no XRC)
#   rstream, riostream    rsockets: a stream over RDMA
#   cmtime                20 connections set up and torn down at once
#   ib_*_bw/_lat -R       every RC perftest (SEND, WRITE, READ, atomics),
#                         connecting through rdma_cm
#   librspreload          an ordinary TCP program (python's socket) moved
#                         onto rsockets by LD_PRELOAD: the bytes arrive
#
# srx to srx and srx with rdma_rxe (both ways) run every one; srx to
# itself runs the connection kinds (RC, UD through SIDR, rsockets,
# perftest); srx to srx over a VLAN runs rping, ucmatose and udaddy
# between the VLAN's addresses (the CM answers a MAD from the GID of the
# VLAN it came on).
#
# udpong (rsockets' datagrams) is not here: rdma-core 44's rsockets gives
# each datagram QP an AH with no GRH (ds_add_qp_dest() in rsocket.c),
# which the core refuses on every RoCE device (rdma_check_ah_attr(),
# EINVAL), so its client fails in rconnect(), with ENOENT (the errno of
# its cleanup's epoll_ctl()), on rdma_rxe exactly as on srx (measured
# 2026-12-04).
#
# Each case must pass; then no kernel warning may have been logged.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=20100
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"

topo_trap
trap 's=$?; trap - EXIT; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

# The address the programs use: IP4, or VLAN_IP4 over a VLAN.
cm_ip=IP4
ip_of() {
	topo_var "$1" "$cm_ip"
}

rping_() {
	local a
	a=$(ip_of "$1")
	port=$((port + 1))
	cmpair "$1" "$2" -- rping -s -a "$a" -p "$port" -C 10 -- \
		rping -c -a "$a" -p "$port" -C 10 -v
}

ucmatose_() {
	local a
	a=$(ip_of "$1")
	cmpair "$1" "$2" -- ucmatose -b "$a" -c 4 -C 10 -- \
		ucmatose -s "$a" -c 4 -C 10
}

udaddy_() {
	local a
	a=$(ip_of "$1")
	cmpair "$1" "$2" -- udaddy -b "$a" -c 4 -C 10 -- \
		udaddy -s "$a" -c 4 -C 10
}

rdma_server_() {
	port=$((port + 1))
	cmpair "$1" "$2" -- rdma_server -p "$port" -- \
		rdma_client -s "$(ip_of "$1")" -p "$port"
}

rdma_xserver_() {
	port=$((port + 1))
	cmpair "$1" "$2" -- rdma_xserver -p "$port" -c r -- \
		rdma_xclient -s "$(ip_of "$1")" -p "$port" -c r
}

rstream_() {
	port=$((port + 1))
	cmpair "$1" "$2" -- rstream -b "$(ip_of "$1")" -p "$port" -S 65536 \
		-C 200 -- rstream -s "$(ip_of "$1")" -p "$port" -S 65536 -C 200
}

riostream_() {
	port=$((port + 1))
	cmpair "$1" "$2" -- riostream -b "$(ip_of "$1")" -p "$port" -S 65536 \
		-C 200 -- riostream -s "$(ip_of "$1")" -p "$port" -S 65536 \
		-C 200
}

cmtime_() {
	local rc
	port=$((port + 1))
	cm_lingers=1
	cmpair "$1" "$2" -- cmtime -b "$(ip_of "$1")" -p "$port" -c 20 -- \
		cmtime -s "$(ip_of "$1")" -p "$port" -c 20
	rc=$?
	cm_lingers=0
	return $rc
}

# perf_cm SRV CLI: every RC perftest, connecting through rdma_cm (-R).
# READ and ATOMIC with -o 16, as rc_engine_test.sh runs them with rdma_rxe:
# perftest's server accepts with its own device's max_qp_rd_atom as the
# initiator depth (rdma_rxe's 128) whatever the client asked, and the
# client's librdmacm puts that in its QP, which srx refuses above the 16
# it reports, as mlx5 does. Without -o, an srx client of an rdma_rxe
# server was REJECTED and the server's perftest died in librdmacm (a
# general protection fault; 6.12, 2026-12-04).
perf_cm_tests=(ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat
	ib_write_lat ib_read_lat ib_atomic_lat)
perf_cm() {
	local srv=$1 cli=$2 t o rc=0
	for t in "${perf_cm_tests[@]}"; do
		port=$((port + 1))
		o=()
		case $t in ib_read_* | ib_atomic_*) o=(-o 16) ;; esac
		cmpair "$srv" "$cli" -- "$t" -d "$(topo_var "$srv" DEV)" -R -F \
			-n 100 "${o[@]}" -p "$port" -- "$t" \
			-d "$(topo_var "$cli" DEV)" -R -F -n 100 "${o[@]}" \
			-p "$port" "$(ip_of "$srv")" ||
			{ echo "#   $t -R failed"; rc=1; }
	done
	return $rc
}

# A TCP echo of 1 MiB through librspreload: the client checks the bytes.
rspreload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
preload_() {
	local a
	a=$(ip_of "$1")
	port=$((port + 1))
	cmpair "$1" "$2" -- env LD_PRELOAD="$rspreload" /usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1)
c, _ = s.accept(); n = 0
while n < 1 << 20:
    b = c.recv(65536)
    if not b: break
    c.sendall(b); n += len(b)
c.close()' "$a" "$port" -- env LD_PRELOAD="$rspreload" /usr/bin/python3 -c '
import hashlib, os, socket, sys
d = os.urandom(1 << 20)
s = socket.create_connection((sys.argv[1], int(sys.argv[2])))
s.sendall(d); got = b""
while len(got) < len(d):
    b = s.recv(65536)
    if not b: break
    got += b
sys.exit(0 if got == d else 1)' "$a" "$port"
}

# some LIST SRV CLI: the cases of array LIST, server on SRV. Not rstream
# with rdma_rxe under make check-debug's KASAN kernel (SRX_TEST_KASAN):
# Linux 6.1's rdma_rxe reads one pointer past its MR's page map when a
# copy ends in the last page of a 256-page map (rxe_mr.c, rxe_mr_copy();
# 6.2 rewrote it; rc_traffic_test.sh has the same note), which rsockets'
# buffers hit: 414 KASAN reports from rxe, in tasks rstream, both ways
# (2026-12-04).
self_list=(rping_ ucmatose_ udaddy_ rstream_ perf_cm)
rxe_list=(rping_ ucmatose_ udaddy_ rdma_server_ rdma_xserver_ rstream_
	riostream_ cmtime_ perf_cm preload_)
some() {
	local -n list=$1
	local rc=0 t
	shift
	for t in "${list[@]}"; do
		[ "$t" = rstream_ ] && [ "${SRX_TEST_KASAN:-0}" = 1 ] &&
			[ "$(topo_var b DRIVER)" = rxe ] && continue
		echo "# -- ${t%_}"
		"$t" "$1" "$2" || { echo "#   ${t%_} failed"; rc=1; }
	done
	return $rc
}

echo "TAP version 13"
for t in rping ucmatose udaddy rdma_server rstream cmtime "${perf_cm_tests[@]}"; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 4; }
done

# mads_grew BEFORE: the QP1 counters of both sides (as "a b" pairs of
# mad_sent mad_rcvd cm_sent cm_rcvd) are all above BEFORE's.
mad_counters() {
	local s c
	for s in a b; do
		for c in mad_sent mad_rcvd cm_sent cm_rcvd; do
			printf '%s ' "$(cnt $s $c)"
		done
	done
}
mads_grew() {
	local before=($1) after i rc=0
	read -ra after <<<"$(mad_counters)"
	echo "#   mad_sent mad_rcvd cm_sent cm_rcvd, a then b: ${before[*]} -> ${after[*]}"
	for i in "${!before[@]}"; do
		[ "${after[$i]}" -gt "${before[$i]}" ] || rc=1
	done
	return $rc
}

if topo_up srx-srx && gids; then
	mads0=$(mad_counters)
	for t in rping_ ucmatose_ udaddy_ rdma_server_ rdma_xserver_ rstream_ \
		riostream_ cmtime_ perf_cm preload_; do
		ok "srx-srx (two namespaces): ${t%_}" "$t" a b
	done
	ok "srx-srx: QP1 counted the CM's MADs both ways" mads_grew "$mads0"
else
	ok "srx-srx topology" false
fi

if topo_up srx-srx --vlan 20 && gids &&
	topo_wait_gid a "$TOPO_A_DEV" "$TOPO_A_VLAN_IP4" >/dev/null &&
	topo_wait_gid b "$TOPO_B_DEV" "$TOPO_B_VLAN_IP4" >/dev/null; then
	cm_ip=VLAN_IP4
	for t in rping_ ucmatose_ udaddy_; do
		ok "srx-srx over VLAN 20: ${t%_}" "$t" a b
	done
	cm_ip=IP4
else
	ok "srx-srx over VLAN 20 topology" false
fi

if topo_up srx-self && gids; then
	ok "srx-self: rping, ucmatose, udaddy, rstream, perftest -R" \
		some self_list a b
else
	ok "srx-self topology" false
fi

if topo_up srx-rxe && gids; then
	what="every case of srx-srx"
	[ "${SRX_TEST_KASAN:-0}" = 1 ] &&
		what="every case of srx-srx but rstream (not on the KASAN kernel)"
	ok "srx server, rxe client: $what" some rxe_list a b
	ok "rxe server, srx client: $what" some rxe_list b a
else
	ok "srx-rxe topology" false
fi

ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails = 0 ]
