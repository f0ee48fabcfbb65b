#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# harness_test.sh - the kselftest harness the selftests build with (linux
# 6.1's, as selftests/kselftest-fixes leaves it in the build directory) and
# selftests/run together must fail closed. Prints TAP.
#
# Each case is a small kselftest program built here and run through
# selftests/run; what selftests/run reports is checked:
#   exit255       a test child that exits 255 without SKIP()   failure
#   skip_teardown SKIP(), then an EXPECT fails in the teardown  failure
#   expect_skip   an EXPECT fails, then SKIP()                  failure
#   setup_skip    the setup skips; the body (whose ASSERT       skip
#                 fails) must not run
#   skip, pass    an honest skip and a pass                     skip, pass
#
# The header is found in $SRX_BUILD/kselftest (tools/check sets SRX_BUILD),
# else build/kselftest.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
inc=${SRX_BUILD:-$top/build}/kselftest
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

if [ ! -r "$inc/kselftest_harness.h" ]; then
	result 1 "$inc/kselftest_harness.h exists (make builds it)"
	echo "1..$tests"
	exit 1
fi

# build NAME: $tmp/NAME from the C body on stdin.
build() {
	{
		echo '#include <stdlib.h>'
		echo '#include "kselftest_harness.h"'
		cat
		echo 'TEST_HARNESS_MAIN'
	} >"$tmp/$1.c"
	cc -std=gnu11 -I"$inc" -o "$tmp/$1" "$tmp/$1.c" 2>"$tmp/$1.cc"
}

# expect NAME VERDICT: selftests/run on $tmp/NAME reports one result,
# VERDICT (pass, skip or fail), and exits accordingly.
expect() {
	local name=$1 want=$2 got status
	"$top/selftests/run" "$tmp/$name" >"$tmp/$name.tap" 2>&1
	status=$?
	got=$(tail -n 1 "$tmp/$name.tap")
	case $want in
	pass) [ "$got" = "1 passed, 0 failed" ] && [ $status = 0 ] ;;
	skip) [ "$got" = "0 passed, 0 failed, 1 skipped" ] && [ $status = 0 ] ;;
	fail) [ "$got" = "0 passed, 1 failed" ] && [ $status != 0 ] ;;
	esac
	if ! result $? "$name: $want (selftests/run said '$got', exit $status)"; then
		sed 's/^/# /' "$tmp/$name.tap"
	fi
}

build exit255 <<'EOF_C' || result 1 "exit255 builds"
TEST(exits_255) { exit(255); }
EOF_C
expect exit255 fail

build skip_teardown <<'EOF_C' || result 1 "skip_teardown builds"
FIXTURE(f) { int x; };
FIXTURE_SETUP(f) { self->x = 1; }
FIXTURE_TEARDOWN(f) { EXPECT_EQ(0, self->x); }
TEST_F(f, skips) { SKIP(return, "skipped"); }
EOF_C
expect skip_teardown fail

build expect_skip <<'EOF_C' || result 1 "expect_skip builds"
TEST(fails_then_skips)
{
	EXPECT_EQ(0, 1);
	SKIP(return, "skipped after a failure");
}
EOF_C
expect expect_skip fail

build setup_skip <<'EOF_C' || result 1 "setup_skip builds"
FIXTURE(f) { int x; };
FIXTURE_SETUP(f) { SKIP(return, "setup skips"); }
FIXTURE_TEARDOWN(f) { }
TEST_F(f, body) { ASSERT_EQ(0, 1) TH_LOG("the body ran after its setup skipped"); }
EOF_C
expect setup_skip skip

build skip <<'EOF_C' || result 1 "skip builds"
TEST(skips) { SKIP(return, "nothing to test here"); }
EOF_C
expect skip skip

build pass <<'EOF_C' || result 1 "pass builds"
TEST(passes) { EXPECT_EQ(1, 1); }
EOF_C
expect pass pass

tap_end
