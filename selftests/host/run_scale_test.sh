#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# run_scale_test.sh - selftests/run multiplies each program's time limit by
# SRX_TEST_TIMEOUT_SCALE (make check-debug sets it), ignores a bad scale,
# and still fails a program that outlasts the scaled limit. Prints TAP.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A "test" that takes 2 s and then reports one passing case.
cat >"$tmp/slow" <<'T'
#!/bin/sh
sleep 2
echo "TAP version 13"
echo "1..1"
echo "ok 1 slow case"
T
chmod +x "$tmp/slow"

tests=0 failed=0
check() {	# check SCALE EXPECTED-COUNTS DESCRIPTION
	local counts got
	counts=$tmp/counts.$tests
	SRX_TEST_TIMEOUT_SCALE=$1 "$top/selftests/run" --results "$counts" --timeout 1 \
		"$tmp/slow" >"$tmp/out" 2>&1
	got=$(cat "$counts" 2>/dev/null)
	tests=$((tests + 1))
	if [ "$got" = "$2" ]; then
		echo "ok $tests $3"
	else
		failed=$((failed + 1))
		echo "not ok $tests $3 (counts '$got', want '$2')"
		sed 's/^/# /' "$tmp/out"
	fi
}

echo "TAP version 13"
check 4 "1 0 0" "a 1 s limit scaled by 4 lets a 2 s test pass"
check "" "0 1 0" "no scale: the 2 s test outlasts its 1 s limit"
check 0 "0 1 0" "a scale of 0 is ignored, not an unlimited run"
check x "0 1 0" "a scale that is not a number is ignored"
echo "1..$tests"
[ "$failed" = 0 ]
