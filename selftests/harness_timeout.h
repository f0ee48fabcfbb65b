/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Forced in front of every kselftest-harness program (the Makefile passes
 * -include): scales each TEST_F's time limit by SRX_TEST_TIMEOUT_SCALE.
 *
 * Linux 6.1's kselftest_harness.h arms a fixed alarm() per test (30 s, or
 * TEST_F_TIMEOUT's value) and offers no way to stretch it. `make
 * check-debug` boots a KASAN and lockdep kernel under TCG, where the same
 * test runs several times slower: without scaling, tests that pass on
 * Debian's kernel were killed there for time alone, and a real hang could
 * not be told from slowness. tools/check-debug sets the scale; make check
 * leaves it unset, which is a scale of 1.
 *
 * The harness calls alarm() by name; the macro below turns that call (and
 * a test's own) into srx_test_alarm(), which calls the real function
 * through a parenthesised name that the macro does not expand. <unistd.h>
 * is included first so that its prototype is declared before the macro
 * exists.
 */
#ifndef SRX_HARNESS_TIMEOUT_H
#define SRX_HARNESS_TIMEOUT_H

#include <stdlib.h>
#include <unistd.h>

/* Scales outside 1..100 are ignored: a typo must not disable the limits. */
static inline unsigned int srx_test_timeout_scale(void)
{
	const char *s = getenv("SRX_TEST_TIMEOUT_SCALE");
	char *end;
	unsigned long scale;

	if (!s || !*s)
		return 1;
	scale = strtoul(s, &end, 10);
	if (*end || scale < 1 || scale > 100)
		return 1;
	return (unsigned int)scale;
}

static inline unsigned int srx_test_alarm(unsigned int seconds)
{
	return (alarm)(seconds * srx_test_timeout_scale());
}

#define alarm(seconds) srx_test_alarm(seconds)

#endif /* SRX_HARNESS_TIMEOUT_H */
