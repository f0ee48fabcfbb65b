#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# claims_test.sh - what README.md and srx(7) say about devices and
# namespaces that device_test.sh does not check:
#
#   - "Too many open files in system" (ENFILE) when the device name is
#     taken (README, troubleshooting);
#   - moving the netdev of a device created inside a namespace out of that
#     namespace removes the device (srx(7), DEVICE).
#
#   init namespace                        namespace srxclaims-ns
#   clmC ══ veth ══ clmD                  (srx0 asked for again on clmC)
#   clmM ══════════ veth ══════════════ clmN ── srxclns
#                                        then clmN moves to init: gone
#
# Runs in the VM after install_test.sh (srx installed, srx0 on eth0) and
# leaves srx0 as it found it. TAP output; commands are echoed as "# + cmd".
set -u

ns=srxclaims-ns
T=30
n=0
fails=0

case_() {	# case_ DESCRIPTION FUNCTION
	local desc=$1
	echo "# ---- $desc"
	if "$2"; then
		echo "ok $((++n)) $desc"
	else
		echo "not ok $((++n)) $desc"
		fails=$((fails + 1))
	fi
}

say() {
	echo "# $*"
}

# run CMD...: echo it, run it under a timeout, keep its output in $out.
run() {
	local rc
	echo "# + $*"
	out=$(timeout "$T" "$@" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/#   /'
	return $rc
}

# wait_until SECONDS CMD...: CMD succeeds within SECONDS.
wait_until() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

# no_dev NAME: no RDMA device NAME, in this namespace or in $ns.
no_dev() {
	[ ! -e "/sys/class/infiniband/$1" ] &&
		! ip netns exec "$ns" test -e "/sys/class/infiniband/$1" 2>/dev/null
}

cleanup() {
	ip netns del "$ns" 2>/dev/null
	ip link del clmC 2>/dev/null
	ip link del clmM 2>/dev/null
	ip link del clmN 2>/dev/null
}
trap cleanup EXIT

echo "TAP version 13"
if ! rdma link show srx0/1 >/dev/null 2>&1; then
	run ip link set eth0 up
	run rdma link add srx0 type srx netdev eth0
fi

t_name_taken_enfile() {
	local rc
	run ip link add clmC type veth peer name clmD || return 1
	run ip link set clmC up || return 1
	run rdma link show srx0/1 || { say "srx0 is missing"; return 1; }
	run rdma link add srx0 type srx netdev clmC
	rc=$?
	[ $rc -ne 0 ] || { say "a second srx0 was accepted"; return 1; }
	[[ $out == *"Too many open files in system"* ]] ||
		{ say "not ENFILE's message"; return 1; }
	# Nothing was left behind on clmC, and srx0 is still on eth0.
	run rdma link show || return 1
	[[ $out != *"netdev clmC"* ]] || return 1
	run rdma link show srx0/1 || return 1
	[[ $out == *"netdev eth0"* ]]
}

t_netns_move_out_removes() {
	local t0
	run ip netns add "$ns" || return 1
	run ip link add clmM type veth peer name clmN netns "$ns" || return 1
	run ip link set clmM up || return 1
	run ip -n "$ns" link set clmN up || return 1
	run ip netns exec "$ns" rdma link add srxclns type srx netdev clmN ||
		return 1
	run ip netns exec "$ns" rdma link show srxclns/1 || return 1
	[[ $out == *"netdev clmN"* ]] || return 1
	t0=$SECONDS
	run ip -n "$ns" link set clmN netns 1 || return 1
	run ip link show clmN || { say "clmN did not arrive here"; return 1; }
	wait_until 20 no_dev srxclns || {
		run rdma link show
		run ip netns exec "$ns" rdma link show
		return 1
	}
	say "device gone $((SECONDS - t0)) s after the move"
	# And the netdev is free for a new device here.
	run rdma link add srxclns type srx netdev clmN || return 1
	run rdma link delete srxclns
}

case_ "a device name that is taken: ENFILE (Too many open files in system)" \
	t_name_taken_enfile
case_ "netns: moving the netdev out of the namespace removes its device" \
	t_netns_move_out_removes

echo "1..$n"
[ $fails -eq 0 ]
