#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# One round of bench/pkt_bench, so that `make bench`'s packet pieces cannot
# rot: its CRC-32 implementations must agree with zlib's at every length
# up to 4 KiB (it checks that itself before timing, and exits 1 if not), and
# every piece must print a time. The times are not judged here.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"
bench=${SRX_BUILD:-$top/build}/pkt_bench

echo "TAP version 13"
if ! grep -qw pclmulqdq /proc/cpuinfo; then
	echo "1..0 # SKIP this CPU has no PCLMULQDQ"
	exit 4
fi
out=$("$bench" 1)
status=$?
printf '%s\n' "$out" | sed 's/^/# /'
result "$status" "pkt_bench: every CRC-32 agrees with zlib's, exit $status"
rows=$(printf '%s\n' "$out" | grep -cE '^\| [A-Za-z].* \| [0-9.]+ \| [0-9.]+ \| ')
[ "$rows" = 6 ]
result $? "pkt_bench: a time for each of its 6 pieces ($rows)"
tap_end
