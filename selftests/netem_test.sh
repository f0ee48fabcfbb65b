#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# netem_test.sh - issue 15's loss matrix: RC traffic under netem on both
# directions of the veth, srx to srx, and rdma_rxe to rdma_rxe under the
# very same settings for comparison (selftests/lib/topo.sh's srx-srx and
# rxe-rxe; both in one guest, run one after the other).
#
# For each setting (none; loss 0.1%, 1%, 10%; delay with jitter;
# reordering; duplication; corruption):
#   integrity   helpers/rc_traffic: 4 QPs, every RC opcode at random
#               lengths and offsets, each request completed once, in
#               order, its bytes intact at the other end
#   throughput  ib_write_bw, 64 KiB messages for NETEM_SECONDS seconds
#               (perftest's -D), its average MB/s
# srx's cells must pass. rdma_rxe's are measured, not judged (this tests
# srx, and rxe's failures are what srx is for); only its ib_write_bw
# without impairment must run, or there is nothing to compare with. The
# table is printed at the end, and written to NETEM_OUT when set.
#
#   NETEM_SECONDS   perftest's duration per cell (default 2; make netem 10)
#   NETEM_OPS       rc_traffic's requests per QP (default 100; make netem 1000)
#   NETEM_RXE       rdma_rxe's settings: "baseline" (default: none, so that
#                   make check keeps the topology working) or "all" (make netem)
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=21400
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"
# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"

topo_trap
trap 's=$?; trap - EXIT; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

secs=${NETEM_SECONDS:-2}
ops=${NETEM_OPS:-100}
rxe_cells=${NETEM_RXE:-baseline}
rc_traffic=$top/build/helpers/rc_traffic
# rc_traffic reports a stall itself (no progress for 30 s); this ends a
# run that cannot finish, with room for 1000 requests per QP under 10% loss.
traffic_limit=$(((60 + ops / 2) * ${SRX_TEST_TIMEOUT_SCALE:-1}))

# NAME|NETEM ARGUMENTS. A jittered delay reorders (netem 1.3 sends by
# time); netem's default queue of 1000 packets would drop, not delay.
settings=(
	"none|"
	"loss 0.1%|loss 0.1%"
	"loss 1%|loss 1%"
	"loss 10%|loss 10%"
	"delay 5 ms, jitter 2 ms|delay 5ms 2ms limit 100000"
	"reorder 25%, 2 ms|delay 2ms reorder 25% 50% limit 100000"
	"duplicate 1%|duplicate 1%"
	"corrupt 1%|corrupt 1%"
)

# Results by "TOPOLOGY|SETTING": integrity (ok, FAILED) and MB/s (or
# FAILED).
declare -A integ bw
rxe_skip=

# integrity: rc_traffic, side a's QPs requesting from side b's.
integrity() {
	local args=(-d "$TOPO_A_DEV" -g "$gid_a" -D "$TOPO_B_DEV" -G "$gid_b"
		-q 4 -n "$ops")
	# ATOMIC WRITE: 6.1's rdma_rxe has none.
	[ "$TOPO_A_DRIVER" = srx ] && args+=(-A)
	echo "# + $rc_traffic ${args[*]}"
	topo_exec a timeout "$traffic_limit" "$rc_traffic" "${args[@]}" 2>&1 |
		sed 's/^/#   /'
}

# throughput: ib_write_bw from side b (client, requester) to side a; sets
# $mbs to its average MB/s.
throughput() {
	mbs=
	perf ib_write_bw a b -s 65536 -D "$secs" || return 1
	mbs=$(awk '$1 == 65536 && NF >= 5 { print $4; exit }' "$tmp/cli")
	[[ $mbs =~ ^[0-9]+(\.[0-9]+)?$ ]]
}

# cell TOPOLOGY SETTING: both measurements under one setting.
cell() {
	local topo=$1 name=${2%%|*} qdisc=${2#*|} key
	key="$topo|$name"
	echo "# ---- $topo, ${name}: netem ${qdisc:-(none)}"
	integ[$key]=FAILED bw[$key]=FAILED
	if [ -n "$qdisc" ]; then
		# shellcheck disable=SC2086 # the netem arguments are words
		impaired $qdisc -- measure "$key"
	else
		measure "$key"
	fi
	echo "#   integrity ${integ[$key]}, ib_write_bw ${bw[$key]} MB/s"
}

# measure KEY: the cell's two results, whichever fail.
measure() {
	integrity && integ[$1]=ok
	throughput && bw[$1]=$mbs
	return 0
}

# A cell that never ran (its topology failed) has no entries.
cell_ok() {
	[ "${integ[$1]-}" = ok ] && bw_ok "$1"
}

bw_ok() {
	[ "${bw[$1]-FAILED}" != FAILED ]
}

echo "TAP version 13"
for t in ib_write_bw tc; do
	command -v "$t" >/dev/null || { echo "1..0 # SKIP $t is not installed"; exit 4; }
done
say "$secs s of ib_write_bw and $ops requests per QP of rc_traffic per cell;" \
	"rdma_rxe: $rxe_cells"

for topo in srx-srx rxe-rxe; do
	if [ "$topo" = rxe-rxe ] && ! topo_policy_routing; then
		rxe_skip="this kernel has no routing rules (CONFIG_IP_MULTIPLE_TABLES), which rxe-rxe needs"
		continue
	fi
	if ! topo_up "$topo" || ! gids; then
		ok "$topo topology" false
		continue
	fi
	for s in "${settings[@]}"; do
		name=${s%%|*}
		[ "$topo" = rxe-rxe ] && [ "$rxe_cells" != all ] && [ "$name" != none ] &&
			continue
		cell "$topo" "$s"
		if [ "$topo" = srx-srx ]; then
			ok "srx-srx, $name: every request once and intact; ib_write_bw ran" \
				cell_ok "srx-srx|$name"
		fi
	done
	topo_down || ok "$topo removed" false
done
if [ -n "$rxe_skip" ]; then
	n=$((n + 1))
	echo "ok $n rxe-rxe, none: the baseline to compare with ran # SKIP $rxe_skip"
else
	ok "rxe-rxe, none: the baseline to compare with ran" bw_ok "rxe-rxe|none"
fi

# The table: MB/s of each, srx's over rxe's where both have a figure.
table() {
	local s name a b r
	echo "| netem, both directions | srx-srx integrity | srx-srx MB/s | rxe-rxe integrity | rxe-rxe MB/s | srx / rxe |"
	echo "|---|---|---|---|---|---|"
	for s in "${settings[@]}"; do
		name=${s%%|*}
		a=${bw["srx-srx|$name"]-} b=${bw["rxe-rxe|$name"]-}
		r=-
		if [[ $a =~ ^[0-9.]+$ && $b =~ ^[0-9.]+$ ]]; then
			r=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
		fi
		echo "| $name | ${integ["srx-srx|$name"]-} | ${a:--} | ${integ["rxe-rxe|$name"]--} | ${b:--} | $r |"
	done
}
table | sed 's/^/# /'
if [ -n "${NETEM_OUT:-}" ]; then
	{
		echo "<!-- netem_test.sh, $(uname -r), $(date -u +%Y-%m-%d), NETEM_SECONDS=$secs NETEM_OPS=$ops -->"
		table
	} >"$NETEM_OUT"
fi

ok "every topology removed, the machine as it was" topo_down
ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails -eq 0 ]
