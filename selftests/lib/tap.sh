# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# selftests/lib/tap.sh - the TAP helpers of the shell tests, sourced.
# The test sets n=0, fails=0 and skip_reason= before its first case; case_
# counts into n and fails, and the test prints its plan from n at the end.

# case_ DESCRIPTION FUNCTION [ARGS...]: one TAP line for what FUNCTION says;
# FUNCTION returns non-zero on failure, or calls skip and returns 0.
case_() {
	local desc=$1 t0=$SECONDS
	shift
	skip_reason=
	echo "# ---- $desc"
	if "$@"; then
		if [ -n "$skip_reason" ]; then
			echo "ok $((++n)) $desc # SKIP $skip_reason"
		else
			echo "ok $((++n)) $desc"
		fi
	else
		echo "not ok $((++n)) $desc"
		fails=$((fails + 1))
	fi
	echo "# ($((SECONDS - t0)) s)"
}

# skip WHY: the running case passes as a skip that says WHY.
skip() {
	skip_reason=$*
}

say() {
	echo "# $*"
}
