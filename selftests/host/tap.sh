# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# TAP for the host's shell tests: source it, call result once per case,
# and end with tap_end, which prints the plan and a summary and returns
# non-zero if any case failed.

tests=0
failed=0

# result STATUS DESCRIPTION: a case that passed if STATUS is 0. Returns
# STATUS's verdict, so a caller may stop or print more on a failure.
result() {
	tests=$((tests + 1))
	if [ "$1" = 0 ]; then
		echo "ok $tests $2"
	else
		failed=$((failed + 1))
		echo "not ok $tests $2"
		return 1
	fi
}

tap_end() {
	echo "1..$tests"
	echo "$((tests - failed)) passed, $failed failed"
	[ "$failed" = 0 ]
}
