#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rx_fuzz_test.sh - libFuzzer on srx's receive checks (rx_fuzz.c, with ASan
# and UBSan) for FUZZ_SECONDS (20 in make check; make fuzz: 600), from a
# copy of the committed corpus, then the corpus it leaves replayed by the
# coverage build (rx_cov) for llvm-cov's report of the kernel files the
# checks are made of. Prints TAP:
#   - the run ends with no crash, leak, timeout or sanitizer report, having
#     run inputs; inputs run and per second, and the corpus's growth;
#   - the coverage report: lines and branches of each file; every line of
#     roce_frame.h and icrc.h, the checks before the parser, was run.
# A crashing input is kept in $SRX_BUILD/fuzz/crashes/ to be replayed:
#   build/fuzz/rx_fuzz build/fuzz/crashes/crash-...
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
build=${SRX_BUILD:-$top/build}
secs=${FUZZ_SECONDS:-20}
fuzz=$build/fuzz/rx_fuzz
cov=$build/fuzz/rx_cov
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

for t in "$fuzz" "$cov"; do
	[ -x "$t" ] && continue
	echo "1..0 # SKIP $t not built (make host-tests builds it with clang)"
	exit 0
done

cp -r "$top/selftests/host/rx_corpus" "$tmp/corpus"
seeds=$(find "$tmp/corpus" -type f | wc -l)
echo "# fuzzing for $secs s from $seeds inputs"
# -timeout: one input taking a second is a hang; the outer timeout is for
# a fuzzer that never stops at all.
(cd "$tmp" && timeout --kill-after=10 $((secs * 2 + 120)) "$fuzz" \
	-max_total_time="$secs" -max_len=9100 -timeout=10 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$tmp/" corpus) >"$tmp/log" 2>&1
rc=$?
stat() { sed -n "s/^stat::$1: *//p" "$tmp/log" | tail -n 1; }
runs=$(stat number_of_executed_units)
rate=$(stat average_exec_per_sec)
now=$(find "$tmp/corpus" -type f | wc -l)
crashes=$(find "$tmp" -maxdepth 1 -type f \( -name 'crash-*' -o \
	-name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
if [ "$rc" = 0 ] && [ "$crashes" = 0 ] && [ "${runs:-0}" -gt 0 ]; then
	result 0 "fuzzed $secs s: ${runs} inputs, ${rate} a second, no crash; corpus $seeds -> $now"
else
	result 1 "fuzzing: exit $rc, ${runs:-no} inputs, $crashes crashing inputs"
	tail -n 40 "$tmp/log" | sed 's/^/# /'
	if [ "$crashes" != 0 ]; then
		mkdir -p "$build/fuzz/crashes"
		cp "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-* "$tmp"/oom-* \
			"$build/fuzz/crashes/" 2>/dev/null
		echo "# kept in $build/fuzz/crashes/"
	fi
fi

# Coverage of the kernel files, from the corpus this run left.
files=("$top/kernel/roce_frame.h" "$top/kernel/icrc.h" \
	"$top/kernel/roce_pkt.c" "$top/kernel/roce_hdr.h")
(cd "$tmp" && LLVM_PROFILE_FILE="$tmp/rx.profraw" timeout 300 "$cov" \
	-runs=0 corpus) >"$tmp/cov.log" 2>&1 &&
	llvm-profdata merge -o "$tmp/rx.profdata" "$tmp/rx.profraw" \
		>>"$tmp/cov.log" 2>&1 &&
	llvm-cov report "$cov" -instr-profile="$tmp/rx.profdata" "${files[@]}" \
		>"$tmp/report" 2>>"$tmp/cov.log"
rc=$?
if [ "$rc" != 0 ]; then
	result 1 "coverage: replay or llvm-cov failed ($rc)"
	tail -n 20 "$tmp/cov.log" | sed 's/^/# /'
	tap_end
	exit
fi
sed 's/^/# /' "$tmp/report"
# llvm-cov report: Filename Regions Missed Cover Functions Missed Executed
# Lines Missed Cover Branches Missed Cover
lines_missed() {
	awk -v f="$1" '$1 ~ f"$" { print $9 }' "$tmp/report"
}
total=$(awk '$1 == "TOTAL" { print "lines " $10 ", branches " $13 }' "$tmp/report")
missed=0
for f in roce_frame.h icrc.h; do
	m=$(lines_missed "$f")
	[ "$m" = 0 ] || { echo "# $f: ${m:-?} lines never run"; missed=1; }
done
result "$missed" "coverage of the receive checks: $total; all of roce_frame.h and icrc.h"
tap_end
