#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench/ratios, the table every benchmark's figures end in: made-up rounds
# whose ratios are known, checked for the per-round ratio (srx over rxe of
# the same round, not of the medians), its min/median/max, the devices'
# medians, a round that lacks one device, and a zero from rxe.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "TAP version 13"
# Workload "lat 2 B": ratios 2/4 = 0.5, 9/3 = 3, 3/2 = 1.5 (median 1.5);
# srx values 2 9 3 (median 3), rxe 4 3 2 (median 3). Round 4 has srx only
# and must not count. Workload "bw": rxe is 0 in its one round.
printf '%s\t%s\t%s\t%s\t%s\t%s\n' \
	1 srx0 lat "2 B" 2 us   1 rxe0 lat "2 B" 4 us \
	2 rxe0 lat "2 B" 3 us   2 srx0 lat "2 B" 9 us \
	3 srx0 lat "2 B" 3 us   3 rxe0 lat "2 B" 2 us \
	4 srx0 lat "2 B" 100 us \
	1 srx0 bw x 5 MB/s      1 rxe0 bw x 0 MB/s >"$tmp/raw.tsv"
"$top/bench/ratios" "$tmp/raw.tsv" "$tmp"
result $? "bench/ratios runs"
sed 's/^/# /' "$tmp/results.md"

line=$(grep -P '^lat 2 B\t' "$tmp/results.tsv")
want=$(printf 'lat 2 B\tus\t3\t3\t0.5\t1.5\t3\t3')
[ "$line" = "$want" ]
result $? "per-round ratios 0.5, 1.5, 3 over 3 rounds; medians 3 and 3 (got: $line)"
line=$(grep -P '^bw x\t' "$tmp/results.tsv")
[ "$(cut -f 5-8 <<<"$line")" = "$(printf 'inf\tinf\tinf\t1')" ]
result $? "a zero from rxe gives an infinite ratio, not a division error (got: $line)"
[ "$(grep -c '^| ' "$tmp/results.md")" = 4 ]
result $? "the markdown table has a header, a rule and 2 rows"
tap_end
