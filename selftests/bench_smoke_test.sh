#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# One quick round of the benchmark (bench/guest with BENCH_QUICK=1), so that
# `make bench` cannot rot unnoticed: every workload must produce a number on
# both srx0 and rxe0. The numbers themselves mean nothing at this size and
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

# ring_bench in the guest: 4 consumers x 3 batch sizes.
rows=$(grep -c '^RESULT .* ns/cqe$' "$out/ring_bench_guest.txt" 2>/dev/null)
if [ "${rows:-0}" -eq 12 ]; then
	echo "ok 3 ring_bench ran its 12 cases in the guest"
else
	echo "not ok 3 ring_bench ran its 12 cases in the guest (got ${rows:-0})"
fi
echo "1..3"
