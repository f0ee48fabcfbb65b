// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wq_reclaim_test.c - when a work queue slot is free again (U5 of
 * srx-abi.h, srx_wq_reclaim() in userspace/libsrx/wq_ring.h), without a
 * kernel: the test writes what the kernel writes (the cqe_idx of each
 * completed slot, then done) and moves a CQ's consumer and producer
 * indices the way pollers and the kernel do.
 *
 * What is checked: a slot is free only once it is below done and its
 * completion has been polled; slots free in order; completions the kernel
 * dropped (cqe_idx of an earlier completion) free once that one is polled;
 * everything holds across the 2^32 wrap of both the queue's and the CQ's
 * indices; an index written 2^31 or more completions ago never looks
 * pending once the CQ is drained; a done more than a ring ahead frees
 * nothing.
 */
#include <stdint.h>

#include "wq_ring.h"		/* userspace/libsrx/wq_ring.h */

#include "kselftest_harness.h"

#define ENTRIES 8u

/* The kernel's side: complete WQEs [done, done + n), their CQEs at @cq. */
static void complete(uint32_t *cqe_idx, uint32_t *done, uint32_t n,
		     uint32_t *cq_prod)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		cqe_idx[(*done + i) & (ENTRIES - 1)] = (*cq_prod)++;
	*done += n;
}

static const uint32_t bases[] = { 0, 5, 0x7ffffffcu, 0xfffffffau };

TEST(free_only_after_poll)
{
	unsigned int b, c;

	for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		for (c = 0; c < sizeof(bases) / sizeof(bases[0]); c++) {
			uint32_t cqe_idx[ENTRIES] = { 0 };
			uint32_t free = bases[b], done = bases[b];
			uint32_t cq_prod = bases[c], cq_cons = bases[c];

			/* Completed, nothing polled: nothing free. */
			complete(cqe_idx, &done, ENTRIES, &cq_prod);
			EXPECT_EQ(free, srx_wq_reclaim(free, done, cqe_idx,
						       ENTRIES, cq_cons,
						       cq_prod));
			/* Three polled: three free, in order. */
			cq_cons += 3;
			free = srx_wq_reclaim(free, done, cqe_idx, ENTRIES,
					      cq_cons, cq_prod);
			EXPECT_EQ(bases[b] + 3, free);
			/* Polled, not completed: the queue's own done bounds. */
			cq_cons = cq_prod;
			EXPECT_EQ(done, srx_wq_reclaim(free, done, cqe_idx,
						       ENTRIES, cq_cons,
						       cq_prod));
		}
	}
}

/* Completions of another QP between ours keep their order. */
TEST(shared_cq_in_order)
{
	uint32_t cqe_idx[ENTRIES] = { 0 }, free = 0, done = 0;
	uint32_t cq_prod = 100, cq_cons = 100;

	complete(cqe_idx, &done, 2, &cq_prod);	/* ours at 100, 101 */
	cq_prod += 5;				/* another QP: 102..106 */
	complete(cqe_idx, &done, 1, &cq_prod);	/* ours at 107 */
	cq_cons = 107;				/* polled up to 106 */
	EXPECT_EQ(2u, srx_wq_reclaim(free, done, cqe_idx, ENTRIES, cq_cons,
				     cq_prod));
	cq_cons = 108;
	EXPECT_EQ(3u, srx_wq_reclaim(free, done, cqe_idx, ENTRIES, cq_cons,
				     cq_prod));
}

/* A completion the CQ dropped names the last one written before it. */
TEST(dropped_completion_frees_with_the_one_before)
{
	uint32_t cqe_idx[ENTRIES] = { 0 }, free = 0, done = 0;
	uint32_t cq_prod = 40, cq_cons = 37;

	complete(cqe_idx, &done, 1, &cq_prod);	/* at 40 */
	cqe_idx[1] = 40;			/* dropped */
	cqe_idx[2] = 40;			/* dropped */
	done = 3;
	EXPECT_EQ(0u, srx_wq_reclaim(free, done, cqe_idx, ENTRIES, cq_cons,
				     cq_prod));
	cq_cons = 41;
	EXPECT_EQ(3u, srx_wq_reclaim(free, done, cqe_idx, ENTRIES, cq_cons,
				     cq_prod));
}

/*
 * A slot completed long ago, then 2^31 and 2^32 - 1 more completions of
 * other QPs: once the CQ is drained, it is free.
 */
TEST(index_written_long_ago)
{
	const uint32_t later[] = { 1u << 31, (1u << 31) + 1, UINT32_MAX };
	unsigned int i;

	for (i = 0; i < sizeof(later) / sizeof(later[0]); i++) {
		uint32_t cqe_idx[ENTRIES] = { 0 }, free = 0, done = 0;
		uint32_t cq_prod = 10;

		complete(cqe_idx, &done, 1, &cq_prod);
		cq_prod += later[i];
		EXPECT_EQ(1u, srx_wq_reclaim(free, done, cqe_idx, ENTRIES,
					     cq_prod, cq_prod))
			TH_LOG("%u completions later", later[i]);
	}
}

/* A done more than a ring ahead is not the kernel's: nothing is freed. */
TEST(done_too_far_ahead)
{
	uint32_t cqe_idx[ENTRIES] = { 0 };

	EXPECT_EQ(4u, srx_wq_reclaim(4, 4 + ENTRIES + 1, cqe_idx, ENTRIES,
				     0, 0));
	EXPECT_EQ(4u, srx_wq_reclaim(4, 3, cqe_idx, ENTRIES, 0, 0));
	EXPECT_EQ(4u + ENTRIES, srx_wq_reclaim(4, 4 + ENTRIES, cqe_idx,
					       ENTRIES, 0, 0));
}

TEST_HARNESS_MAIN
