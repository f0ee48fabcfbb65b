// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cq_layout_test.c - the words of struct srx_cq (userspace/libsrx/srx.h)
 * that some thread writes on every poll or arm sit on cache lines of their
 * own, apart from the words every poll reads. Otherwise each arm, each
 * cq_ex poll and each biased poll would pull the line that every other
 * poller needs out of their caches (false sharing). No device needed.
 *
 * Each test names two words that must share no line.
 *
 * Output is TAP 13; exit status 0 iff every test passed.
 */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>

#include "srx.h"

/* The line size of x86-64 and of the arm64 cores libsrx targets. */
#define LINE 64

struct span {
	const char *name;
	size_t off, len;
};

#define SPAN(m) { #m, offsetof(struct srx_cq, m), \
		  sizeof(((struct srx_cq *)0)->m) }

/* Read by every ibv_poll_cq(), cq_ex poll or ibv_req_notify_cq(). */
static const struct span read_words[] = {
	{ "vcq.cq.context", offsetof(struct srx_cq, vcq.cq.context),
	  sizeof(void *) },
	SPAN(ring), SPAN(single_threaded), SPAN(own_view), SPAN(bias_owner),
	SPAN(bias_revoked), SPAN(bias_off), SPAN(resizing),
};

/* Written by some thread on every poll or arm. */
static const struct span hot_words[] = {
	SPAN(owner_busy),	/* the owner, around each biased poll */
	SPAN(arm_seq),		/* every ibv_req_notify_cq() */
	SPAN(poll_owner),	/* every cq_ex start_poll/end_poll */
};

static int n, failed;

static void ok(int cond, const char *a, const char *b)
{
	printf("%sok %d - %s%s%s\n", cond ? "" : "not ", ++n, a,
	       b ? " and " : "", b ? b : "");
	failed += !cond;
}

static int lines_meet(const struct span *a, const struct span *b)
{
	return a->off / LINE <= (b->off + b->len - 1) / LINE &&
	       b->off / LINE <= (a->off + a->len - 1) / LINE;
}

int main(void)
{
	size_t nr = sizeof(read_words) / sizeof(read_words[0]);
	size_t nh = sizeof(hot_words) / sizeof(hot_words[0]);
	size_t i, j;

	printf("TAP version 13\n1..%zu\n", 1 + nh * nr + nh * (nh - 1) / 2);
	ok(alignof(struct srx_cq) >= LINE,
	   "struct srx_cq is aligned to a cache line", NULL);
	for (i = 0; i < nh; i++)
		for (j = 0; j < nr; j++)
			ok(!lines_meet(&hot_words[i], &read_words[j]),
			   hot_words[i].name, read_words[j].name);
	for (i = 0; i < nh; i++)
		for (j = i + 1; j < nh; j++)
			ok(!lines_meet(&hot_words[i], &hot_words[j]),
			   hot_words[i].name, hot_words[j].name);
	printf("# %d of %d failed\n", failed, n);
	return failed != 0;
}
