#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# selftests_run_test.sh - selftests/run holds each test to its TAP plan.
# Prints TAP.
#
# Fake tests (shell scripts printing TAP) go through selftests/run, and its
# last line and exit status are checked: a test that stops before its plan
# is done, reports more than it planned, prints no plan or two, fails even
# though every result it printed is "ok". Honest tests (plan first or last,
# a skip of the whole test) still pass.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

# fake NAME EXIT LINE...: a test printing LINE... then exiting EXIT.
fake() {
	local name=$1 status=$2
	shift 2
	{
		echo '#!/bin/sh'
		printf "echo '%s'\n" "$@"
		echo "exit $status"
	} >"$tmp/$name"
	chmod +x "$tmp/$name"
}

# expect NAME SUMMARY STATUS: selftests/run's last line and exit status.
expect() {
	local name=$1 want=$2 want_status=$3 got status
	"$top/selftests/run" "$tmp/$name" >"$tmp/$name.tap" 2>&1
	status=$?
	got=$(tail -n 1 "$tmp/$name.tap")
	[ "$got" = "$want" ] && [ "$status" = "$want_status" ]
	if ! result $? "$name: '$want', exit $want_status (got '$got', exit $status)"; then
		sed 's/^/# /' "$tmp/$name.tap"
	fi
}

fake plan_first 0 '1..2' 'ok 1 a' 'ok 2 b'
expect plan_first "2 passed, 0 failed" 0

fake plan_last 0 'ok 1 a' 'ok 2 b' '1..2'
expect plan_last "2 passed, 0 failed" 0

fake whole_skip 4 '1..0 # SKIP nothing to test'
expect whole_skip "0 passed, 0 failed, 1 skipped" 0

fake stops_early 0 '1..3' 'ok 1 a'
expect stops_early "1 passed, 1 failed" 1

fake reports_more 0 '1..1' 'ok 1 a' 'ok 2 b'
expect reports_more "2 passed, 1 failed" 1

fake no_plan 0 'ok 1 a'
expect no_plan "1 passed, 1 failed" 1

fake two_plans 0 '1..1' 'ok 1 a' '1..1'
expect two_plans "1 passed, 1 failed" 1

# The 6.1 kselftest harness's way to say a whole program skipped.
fake harness_skip 4 'TAP version 13' '1..1' '# Starting 1 tests from 1 test cases.' \
	'#  RUN           global.t ...' '#      SKIP      no device' \
	'ok 1 # SKIP no device'
expect harness_skip "0 passed, 0 failed, 1 skipped" 0

tap_end
