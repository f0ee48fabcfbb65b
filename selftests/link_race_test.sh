#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# link_race_test.sh - concurrent `rdma link add` on one netdev makes exactly
# one srx device. The RDMA core calls srx_newlink() under a read lock only,
# so srx itself must make "does this netdev have a device yet" and the
# registration one step (kernel/main.c). Each round starts $racers adds at
# once, each with its own device name, on a fresh veth; exactly one must
# succeed (the others say "File exists") and exactly one device must sit on
# the netdev. Runs in the VM after install_test.sh.
#
#   dvL ══ veth ══ dvK      srxrace0..srxraceN all aimed at dvL
#
# TAP output; commands that could hang run under timeout(1).
set -u

rounds=${LINK_RACE_ROUNDS:-15}
racers=${LINK_RACE_RACERS:-8}
T=60
tmp=$(mktemp -d)
n=0
fails=0

cleanup() {
	local i
	for i in $(seq 0 $((racers - 1))); do
		timeout "$T" rdma link delete "srxrace$i" 2>/dev/null
	done
	ip link del dvL 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

result() {	# result STATUS DESCRIPTION
	if [ "$1" = 0 ]; then
		echo "ok $((++n)) $2"
	else
		echo "not ok $((++n)) $2"
		fails=$((fails + 1))
	fi
}

# Devices whose netdev is dvL, one name per line.
devs_on_dvL() {
	timeout "$T" rdma link show 2>/dev/null |
		awk '/ netdev dvL( |$)/ { sub("/.*", "", $2); print $2 }'
}

echo "TAP version 13"
if ! modinfo -F filename srx >/dev/null 2>&1; then
	echo "1..0 # SKIP srx is not installed (selftests/install_test.sh runs first)"
	exit 4
fi
modprobe srx

# One round: $racers adds at once. Echoes "<successes> <devices>".
race_round() {
	local i pids=() ok=0 devs
	for i in $(seq 0 $((racers - 1))); do
		timeout "$T" rdma link add "srxrace$i" type srx netdev dvL \
			>"$tmp/out$i" 2>&1 &
		pids+=($!)
	done
	for i in $(seq 0 $((racers - 1))); do
		wait "${pids[$i]}" && ok=$((ok + 1))
	done
	devs=$(devs_on_dvL | wc -l)
	echo "$ok $devs"
}

ip link add dvL type veth peer name dvK && ip link set dvL up && ip link set dvK up
result $? "veth pair dvL/dvK"

bad=0
for r in $(seq 1 "$rounds"); do
	read -r ok devs < <(race_round)
	names=$(devs_on_dvL | tr '\n' ' ')
	echo "# round $r: $ok of $racers adds succeeded, devices on dvL: ${names:-none}"
	if [ "$ok" != 1 ] || [ "$devs" != 1 ]; then
		bad=$((bad + 1))
		cat "$tmp"/out* | sort | uniq -c | sed 's/^/#   /'
	fi
	for d in $names; do
		timeout "$T" rdma link delete "$d" || bad=$((bad + 1))
	done
	if [ -n "$(devs_on_dvL)" ]; then
		echo "# devices left on dvL after delete"
		bad=$((bad + 1))
	fi
done
[ "$bad" = 0 ]
result $? "$rounds rounds of $racers concurrent rdma link add on dvL: exactly one device each"

grep -q "File exists" "$tmp"/out* 2>/dev/null || [ "$racers" -lt 2 ]
result $? "the losers were told EEXIST (\"File exists\")"

echo "1..$n"
[ $fails -eq 0 ]
