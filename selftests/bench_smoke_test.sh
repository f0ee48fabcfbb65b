#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# One quick round of the benchmark (bench/guest and bench/perf_guest with
# BENCH_QUICK=1), so that `make bench` cannot rot unnoticed: every workload
# must produce a number on both srx and rxe. The numbers themselves mean nothing at this size and
# are not judged; `make bench` is the measurement.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)

cleanup() {
	rdma link delete rxe0 2>/dev/null
	modprobe -r rdma_rxe 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

echo "TAP version 13"
echo "# + BENCH_QUICK=1 bench/guest 1 $out"
if BENCH_QUICK=1 "$top/bench/guest" 1 "$out" 2>&1 | sed 's/^/# /'; then
	echo "ok 1 bench/guest ran one round on srx0 and rxe0"
else
	echo "not ok 1 bench/guest ran one round on srx0 and rxe0"
fi

# 15 workloads and 2 system-call counts, each with a value for both devices.
rows=$(awk -F'\t' 'NF == 8 && $3 != "" && $4 != ""' "$out/results.tsv" 2>/dev/null | wc -l)
if [ "$rows" -eq 17 ]; then
	echo "ok 2 all 17 results have a value for srx and for rxe"
else
	echo "not ok 2 all 17 results have a value for srx and for rxe (got $rows)"
fi

# ring_bench in the guest: 6 consumers x 3 batch sizes, 4 where the CPU
# has no AVX2 for the two AVX2 ones.
want=12
grep -qw avx2 /proc/cpuinfo && want=18
rows=$(grep -c '^RESULT .* ns/cqe$' "$out/ring_bench_guest.txt" 2>/dev/null)
if [ "${rows:-0}" -eq "$want" ]; then
	echo "ok 3 ring_bench ran its $want cases in the guest"
else
	echo "not ok 3 ring_bench ran its $want cases in the guest (got ${rows:-0})"
fi
# The data path: every perftest workload once, tiny counts, on the self
# path (the two-device path runs the same programs between two devices,
# which rc_traffic_test.sh's srx-srx perftest matrix covers).
echo "# + BENCH_QUICK=1 PERF_PATHS=self bench/perf_guest 1 $out/perf"
if BENCH_QUICK=1 PERF_PATHS=self "$top/bench/perf_guest" 1 "$out/perf" 2>&1 | sed 's/^/# /'; then
	echo "ok 4 bench/perf_guest ran one round on srx and rxe"
else
	echo "not ok 4 bench/perf_guest ran one round on srx and rxe"
fi

# 19 perftest runs (send, write and read: latency at 2 B and 4 KiB,
# bandwidth at 4 KiB and 64 KiB with 1 and 8 QPs; atomic latency), system
# calls per post, CPU per GB (all, and the kernel's alone) and the UDP
# floor at 2 B and 4 KiB, each with a number for both devices.
rows=$(awk -F'\t' 'NF == 8 && $3 ~ /^-?[0-9.]+$/ && $4 ~ /^-?[0-9.]+$/' \
	"$out/perf/results.tsv" 2>/dev/null | wc -l)
if [ "$rows" -eq 24 ]; then
	echo "ok 5 all 24 data-path results have a number for srx and for rxe"
else
	echo "not ok 5 all 24 data-path results have a number for srx and for rxe (got $rows)"
fi

# Under QEMU's TCG every AVX2 instruction is a call into the emulator, so
# libsrx must keep its scalar CQE conversion here (cqe_wc.h).
if grep -qx 'libsrx converts CQEs with: scalar' "$out/ring_bench_guest.txt"; then
	echo "ok 6 libsrx picks the scalar CQE conversion under TCG"
else
	echo "not ok 6 libsrx picks the scalar CQE conversion under TCG ($(grep -m1 converts "$out/ring_bench_guest.txt"))"
fi
echo "1..6"
