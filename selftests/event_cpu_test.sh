#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Where srx.ko raises a user CQ's completion event (kernel/cq.c,
# srx_cq_kick()): on the CPU that made the completion, from an irq_work
# self-interrupt, not on comp_vector's CPU through a function-call IPI.
# cq_bench's notify workload, pinned to CPU 1 with comp_vector 0 (CPU 0),
# makes each completion on CPU 1 (its own modify_qp to ERR flushes the
# receive there); /proc/interrupts counts per CPU the irq_work interrupts
# (IWI). Delivery on comp_vector's CPU would have been a csd there instead,
# which leaves CPU 1's IWI count alone (rdma_rxe, which calls comp_handler
# directly, fails this test too). The count is taken round by round
# (cq_bench -I): every round, one event, must see CPU 1 take an irq_work
# interrupt, so other irq_work on CPU 1 cannot make up for events raised
# elsewhere. CPU 0's function-call IPIs (CAL) are printed for information
# only: QP state changes send it some as well.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bench=$top/build/cq_bench
dev=${SRX_TEST_DEV:-srx0}
rounds=200

echo "TAP version 13"
if [ ! -x "$bench" ] || [ "$(nproc)" -lt 2 ]; then
	echo "1..0 # SKIP needs build/cq_bench and two CPUs"
	exit 4
fi

# irqs ROW CPU -> that CPU's count in /proc/interrupts row ROW
irqs() {
	awk -v row="$1:" -v col="$(($2 + 2))" '$1 == row { print $col }' /proc/interrupts
}

iwi1=$(irqs IWI 1) cal0=$(irqs CAL 0)
out=$("$bench" -d "$dev" notify -n "$rounds" -P 1 -I)
st=$?
printf '%s\n' "$out" | sed 's/^/# /'
iwi_rounds=$(printf '%s\n' "$out" | awk '$1 == "IWI" && $2 == "rounds" { print $3 }')
diwi1=$(($(irqs IWI 1) - iwi1)) dcal0=$(($(irqs CAL 0) - cal0))
echo "# $rounds events made on CPU 1: CPU 1 took $diwi1 irq_work interrupts, CPU 0 $dcal0 function-call IPIs"

n=0 failed=0
result() {
	if [ "$1" = 0 ]; then echo "ok $((++n)) $2"; else echo "not ok $((++n)) $2"; failed=1; fi
}
[ "$st" = 0 ]
result $? "notify: $rounds rounds pinned to CPU 1 complete"
[ "$diwi1" -ge "$rounds" ] && [ "${iwi_rounds:--1}" = "$rounds" ]
result $? "each event is raised by an irq_work interrupt on the producing CPU ($iwi_rounds of $rounds rounds took one)"
echo "1..$n"
exit "$failed"
