// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * harness_timeout_test - SRX_TEST_TIMEOUT_SCALE stretches the time limits
 * of kselftest's harness (selftests/harness_timeout.h, forced in front of
 * every harness program by the Makefile, this one included).
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "kselftest_harness.h"

/* The seconds left on an alarm that srx_test_alarm() armed for @seconds. */
static unsigned int armed_for(const char *scale, unsigned int seconds)
{
	unsigned int left;

	if (scale)
		setenv("SRX_TEST_TIMEOUT_SCALE", scale, 1);
	else
		unsetenv("SRX_TEST_TIMEOUT_SCALE");
	(alarm)(0);
	alarm(seconds);
	left = (alarm)(0);
	unsetenv("SRX_TEST_TIMEOUT_SCALE");
	return left;
}

TEST(alarm_is_scaled)
{
	unsigned int left = armed_for("3", 5);

	EXPECT_GE(left, 14U);
	EXPECT_LE(left, 15U);
}

TEST(unset_or_bad_scale_is_one)
{
	const char *bad[] = { NULL, "", "0", "101", "2x", "-3" };
	unsigned int i, left;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		left = armed_for(bad[i], 5);
		EXPECT_GE(left, 4U) TH_LOG("scale '%s'", bad[i] ? bad[i] : "(unset)");
		EXPECT_LE(left, 5U) TH_LOG("scale '%s'", bad[i] ? bad[i] : "(unset)");
	}
}

/*
 * The harness's own limit: 1 s, for a test that takes 2 s. It passes only
 * because main() below set a scale of 4 before the harness armed it.
 */
FIXTURE(slow) {};
FIXTURE_SETUP(slow) {}
FIXTURE_TEARDOWN(slow) {}

TEST_F_TIMEOUT(slow, outlives_unscaled_limit, 1)
{
	sleep(2);
	EXPECT_EQ(0, 0);
}

int main(int argc, char **argv)
{
	setenv("SRX_TEST_TIMEOUT_SCALE", "4", 1);
	return test_harness_run(argc, argv);
}
