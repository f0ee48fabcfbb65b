#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# debug_config_test.sh - the debug kernel's fragment (tools/debug-kernel.config)
# asks for every option selftests/config says the tests need. The debug kernel
# starts from allnoconfig, so an option the fragment forgets is simply off,
# and the test that needs it fails or skips only hours into `make
# check-debug` (seccomp filters were found missing that way). "=m" is met by
# "=y"; the fragment may build an option in where the tests accept a module.
# Prints TAP.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
fragment=${SRX_DEBUG_FRAGMENT:-$top/tools/debug-kernel.config}
needs=${SRX_SELFTEST_CONFIG:-$top/selftests/config}

echo "TAP version 13"
if [ ! -r "$fragment" ] || [ ! -r "$needs" ]; then
	echo "not ok 1 cannot read $fragment or $needs"
	echo "1..1"
	exit 1
fi

n=0 failed=0
while IFS='=' read -r opt want; do
	case $opt in CONFIG_*) ;; *) continue ;; esac
	have=$(grep -m1 "^$opt=" "$fragment" | cut -d= -f2)
	if [ "$have" = "$want" ] || { [ "$want" = m ] && [ "$have" = y ]; }; then
		echo "ok $((++n)) debug kernel sets $opt=$have (tests need $want)"
	else
		echo "not ok $((++n)) debug kernel sets $opt=${have:-nothing} (tests need $want)"
		failed=1
	fi
done <"$needs"
if [ "$n" = 0 ]; then
	echo "not ok 1 $needs lists no option"
	n=1 failed=1
fi
echo "1..$n"
exit "$failed"
