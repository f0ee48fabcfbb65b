#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# soak_test.sh - issue 15's soak: rounds of a mixed load on srx for
# SOAK_SECONDS (make check: 60, and at least three rounds; make soak: 3600), each round:
#
#   at once, srx to srx (srx-srx of selftests/lib/topo.sh):
#     rc       helpers/rc_traffic, 4 QPs, every RC opcode, bytes compared
#     uc, ud   ibv_uc_pingpong and ibv_ud_pingpong
#     cm       rping: rdma_cm connects, SENDs and RDMA READ/WRITE,
#              disconnects, three times
#   and beside them, on srx0 in the initial namespace:
#     nvme     nvme-rdma connected to nvmet-rdma on srx0's own address,
#              fio's crc32c verify, disconnect
#   then, alone:
#     pyverbs  rdma-core's suite on srx0 (pyverbs_test.sh): a few modules
#              in a short soak, its whole default list in a long one
#
# Every part of every round must pass. After each round from the second
# on, srx's three devices hold the objects they held after the first
# (rdma resource show: counted as a failed round otherwise), and the
# kernel's unreclaimable slab, vmalloc and per-CPU memory are
# sampled: from the second round on (the first loads modules and fills
# caches) they must stay flat, the last three rounds' median within
# max(4 MiB, 3%) of the second round's. At the end no kernel warning.
#
# Runs in the VM after install_test.sh (srx0 on eth0). TAP output.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=21600
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"
# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"
# shellcheck source=selftests/lib/nvme.sh
. "$top/selftests/lib/nvme.sh"

secs=${SOAK_SECONDS:-60}
# srx0's netdev gets an address of TEST-NET-3 for NVMe to connect to
# itself; nothing is sent to it from outside the guest.
NVME_IP=203.0.113.1
rc_traffic=$top/build/helpers/rc_traffic
# A round's parts end on their own; these only end a part that hangs.
part_limit=$((300 * scale))

soak_down() {
	nvme_down
	ip addr del "$NVME_IP/32" dev eth0 2>/dev/null
	topo_down
}

topo_trap
trap 's=$?; trap - EXIT; soak_down || s=1; rm -rf "$tmp"; exit $s' EXIT

echo "TAP version 13"
need_modules nvme-rdma nvmet-rdma
need_tools nvme fio rping ibv_uc_pingpong ibv_ud_pingpong

if [ "$secs" -ge 600 ]; then
	pyverbs_tests=()	# pyverbs_test.sh's default list
else
	pyverbs_tests=(test_device test_pd test_qp)
fi

# mem: kernel memory a leak of srx's would grow, in KiB: srx allocates
# from kmalloc's caches (SUnreclaim), its rings from vmalloc, and per-CPU
# counters. Objects freed through RCU are gone after a grace period.
mem() {
	awk '$1 ~ /^(SUnreclaim|VmallocUsed|Percpu):$/ { s += $2 } END { print s }' \
		/proc/meminfo
}

# mem_settled: mem after dropping what the kernel can reclaim; the parts
# and every slab cache's objects in use (KiB) go to $tmp/mem.ROUND, for
# grew() to say where memory went.
mem_settled() {
	sync
	echo 2 >/proc/sys/vm/drop_caches
	sleep 2
	{
		awk '$1 ~ /^(SUnreclaim|VmallocUsed|Percpu):$/ { print $1, $2 }' /proc/meminfo
		awk 'NR > 2 { print $1, int($2 * $4 / 1024) }' /proc/slabinfo
	} >"$tmp/mem.$rounds"
	mem
}

# grew FROM TO: the eight entries of $tmp/mem.FROM and mem.TO that grew most.
grew() {
	join <(sort "$tmp/mem.$1") <(sort "$tmp/mem.$2") |
		awk '$3 != $2 { print $3 - $2, $1, $2, $3 }' | sort -k1,1 -rn |
		head -n 8 | awk '{ printf "%s %+d KiB (%d -> %d)\n", $2, $1, $3, $4 }'
}

# part NAME CMD...: CMD in the background, its output in $tmp/NAME.out
# and its status in $tmp/NAME.rc.
part() {
	local name=$1
	shift
	rm -f "$tmp/$name.rc"
	{
		"$@" >"$tmp/$name.out" 2>&1
		echo $? >"$tmp/$name.rc"
	} &
}

rc_part() {
	topo_exec a timeout "$part_limit" "$rc_traffic" -d "$TOPO_A_DEV" \
		-g "$gid_a" -D "$TOPO_B_DEV" -G "$gid_b" -q 4 -n 150 -A
}

# Each pair gets its own files and ports: they run at once. tmp is
# local, so part() still finds its own files after the call.
uc_part() {
	local tmp=$tmp/uc port=21700
	mkdir -p "$tmp"
	pp46 ibv_uc_pingpong b a 4 4096
}

ud_part() {
	local tmp=$tmp/ud port=21800
	mkdir -p "$tmp"
	pp46 ibv_ud_pingpong b a 4 512
}

cm_part() {
	local i ip tmp=$tmp/cm
	mkdir -p "$tmp"
	ip=$(topo_var b IP4)
	for i in 1 2 3; do
		cmpair b a -- rping -s -a "$ip" -p $((21900 + i)) -C 10 -- \
			rping -c -a "$ip" -p $((21900 + i)) -C 10 -v || return 1
	done
}

nvme_part() {
	local d
	connect "$NVME_IP" || return 1
	d=$(disk) || return 1
	long 300 fio --name=soak --filename="$d" --allow_file_create=0 \
		--direct=1 --rw=randwrite --bsrange=4k-128k --size=16M \
		--verify=crc32c --verify_fatal=1 --do_verify=1 \
		--verify_state_save=0 --ioengine=libaio --iodepth=8 || {
		disconnect
		return 1
	}
	disconnect
}

pyverbs_part() {
	SRX_TEST_DEV=srx0 timeout "$part_limit" \
		"$top/selftests/pyverbs_test.sh" "${pyverbs_tests[@]}"
}

# round N: one round; says which part failed.
round() {
	local r=$1 p rc=0 t0=$SECONDS
	part rc rc_part
	part uc uc_part
	part ud ud_part
	part cm cm_part
	part nvme nvme_part
	wait
	part pyverbs pyverbs_part
	wait
	say "round $r: pyverbs $(grep -c '^ok' "$tmp/pyverbs.out") passed," \
		"rc_traffic: $(grep -E '^(not )?ok' "$tmp/rc.out" | tail -n 1)"
	for p in rc uc ud cm nvme pyverbs; do
		if [ "$(cat "$tmp/$p.rc" 2>/dev/null)" != 0 ]; then
			say "round $r: $p failed (status $(cat "$tmp/$p.rc" 2>/dev/null))"
			tail -n 30 "$tmp/$p.out" | sed 's/^/#   /'
			rc=1
		fi
	done
	say "round $r: $((SECONDS - t0)) s"
	return $rc
}

setup() {
	topo_up srx-srx && gids || return 1
	if [ ! -e /sys/class/infiniband/srx0 ]; then
		topo_run ip link set eth0 up &&
			topo_run rdma link add srx0 type srx netdev eth0 || return 1
	fi
	topo_run ip addr add "$NVME_IP/32" dev eth0 || return 1
	# srx0 is in the initial namespace, which no side of srx-srx is: a
	# side without a namespace (topo_var's TOPO_INIT_NS is unset) is there.
	topo_wait_gid init srx0 "$NVME_IP" >/dev/null || return 1
	target "$NVME_IP"
}

case_ "setup: srx-srx, srx0 with $NVME_IP, an nvmet-rdma target on it" setup
if [ $fails -ne 0 ]; then
	echo "1..$n"
	exit 1
fi

holds() {
	[ "$(counts "$1")" = "$2" ]
}

# What each device holds after the first round, which every later round
# must leave. Not before it: the RDMA core's CQ pool (ib_cq_pool_get(),
# which nvmet-rdma takes its CQs from) creates a device's CQs on first use
# and keeps them until the device goes (4 of srx0's, measured 2026-12-06).
# rdma_cm's connections and the target's controller are freed a moment
# after their programs and the host's controller are gone.
devs=("$TOPO_A_DEV" "$TOPO_B_DEV" srx0)
declare -A base=()
settled() {
	local d
	for d in "${devs[@]}"; do
		topo_wait $((10 * scale)) holds "$d" "${base[$d]}" || {
			say "round $rounds: $d holds $(counts "$d"), not ${base[$d]}"
			return 1
		}
	done
}

for d in "${devs[@]}"; do
	say "before: $d holds $(counts "$d")"
done
end=$((SECONDS + secs))
rounds=0 failed=0
samples=()
while [ $SECONDS -lt $end ] || [ $rounds -lt 3 ]; do
	rounds=$((rounds + 1))
	round $rounds || failed=$((failed + 1))
	if [ $rounds = 1 ]; then
		sleep $((2 * scale))
		for d in "${devs[@]}"; do
			base[$d]=$(counts "$d")
			say "after round 1: $d holds ${base[$d]}"
		done
	else
		settled || failed=$((failed + 1))
	fi
	samples+=("$(mem_settled)")
	say "round $rounds: kernel memory ${samples[-1]} KiB"
done

ok_rounds() {
	say "$rounds rounds in $secs s, $failed failed"
	[ "$failed" = 0 ]
}
case_ "every part of every round passed" ok_rounds

# The median of the last three samples against the second round's.
flat() {
	local base last lim
	base=${samples[1]}
	last=$(printf '%s\n' "${samples[@]: -3}" | sort -n | sed -n 2p)
	lim=$((base * 3 / 100))
	[ "$lim" -lt 4096 ] && lim=4096
	say "kernel memory by round (KiB): ${samples[*]}"
	say "second round $base, last three's median $last, allowed growth $lim"
	say "grew most from round 2 to round $rounds (KiB):"
	grew 2 "$rounds" | sed 's/^/#   /'
	[ $((last - base)) -le "$lim" ]
}
case_ "kernel memory flat from the second round on" flat


teardown() {
	soak_down
}
case_ "everything removed, the machine as it was" teardown
case_ "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails -eq 0 ]
