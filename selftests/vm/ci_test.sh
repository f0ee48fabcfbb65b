#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ci_test.sh - host-side test of `tools/srx-ci vm`, the CI command for
# machines that cannot load modules (Documentation/ci.md), as another
# project runs it: from a copy of Documentation/ci-example under /tmp,
# outside this checkout. One boot runs the example's tests and then exits
# 7, so that the status seen here is the command's own and not a default;
# what the tests wrote in the project's directory must be there afterwards.
# Prints TAP; exits 0 iff every test passed.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
project=$(mktemp -d /tmp/srx-ci-example.XXXXXX) || exit 1
trap 'rm -rf "$project"' EXIT
. "$top/selftests/lib/tap.sh"
n=0
fails=0

cp -r "$top/Documentation/ci-example/." "$project/"
cd "$project" || exit 1
# The command the guest runs (expanded there); CI_TEST_MARK crosses by --env.
# shellcheck disable=SC2016
cmd='./run-tests.sh >tests.out 2>&1; echo $? >tests.status; echo "$CI_TEST_MARK" >mark; env >env.out; exit 7'
export CI_TEST_MARK=passed-through-$$
"$top/tools/srx-ci" vm --timeout 600 --env CI_TEST_MARK -- sh -c "$cmd" >vm.out 2>&1
status=$?
sed 's/^/# /' vm.out
[ -f tests.out ] && sed 's/^/# tests: /' tests.out

status_back() { [ "$status" = 7 ]; }
tests_passed() { [ "$(cat tests.status 2>/dev/null)" = 0 ]; }
write_check_ran() {
	grep -q '^write_check: 65536 bytes written and a message sent on srx0' tests.out 2>/dev/null
}
writes_back() { [ -x write_check ] && [ -s server.out ]; }
environment() {
	grep -qx 'SRX_DEV=srx0' env.out 2>/dev/null && grep -q '^SRX_GID_INDEX=[0-9]' env.out &&
		grep -qx 'SRX_IP=192.0.2.1' env.out
}
env_crosses() { [ "$(cat mark 2>/dev/null)" = "$CI_TEST_MARK" ]; }

case_ "tools/srx-ci vm exits with the command's status (7; got $status)" status_back
case_ "the example's run-tests.sh passed in the guest, in the shared directory" tests_passed
case_ "write_check, built there against libibverbs, ran on srx0" write_check_ran
case_ "what the guest wrote in the project's directory is on the host" writes_back
case_ "the command's environment has SRX_DEV, SRX_GID_INDEX and SRX_IP" environment
case_ "the caller's variable crosses with --env" env_crosses

echo "1..$n"
[ "$fails" = 0 ]
