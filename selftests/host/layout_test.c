// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * layout_test.c - libsrx's checks of the ring layouts the kernel returns
 * (srx_cq_layout_ok() in cq_ring.h, srx_wq_layout_ok() in wq_ring.h), fed
 * hostile layouts: the kernel is trusted, but not blindly, and a layout
 * that passes is what libsrx maps and addresses.
 *
 * Built as if for a 32-bit target. The build machine has no 32-bit
 * toolchain (no gcc-multilib), so this file sets SRX_SIZE_MAX and
 * SRX_OFF_MAX, the limits of mmap()'s size_t length and off_t offset that
 * the checks use, to a 32-bit build's values before including them: a
 * 64-bit mmap_length above 4 GiB must be refused there, not truncated to a
 * shorter mapping than the one the offsets were checked against. The
 * 64-bit values are the defaults, which ring_test.c exercises.
 *
 * What is checked, for both kinds of ring: a layout shaped like the
 * kernel's passes; a length or offset that mmap() cannot take is refused;
 * a control word inside an entry array is refused; for work queues, a
 * WQE stride that is not a multiple of a WQE's alignment, and a cqe_idx
 * array outside the mapping, misaligned or over the WQEs, are refused.
 */
#include <stdint.h>
#include <stddef.h>

/* A 32-bit build's mmap() limits (see above). */
#define SRX_SIZE_MAX UINT32_MAX
#define SRX_OFF_MAX INT32_MAX

#include "cq_ring.h"		/* userspace/libsrx/cq_ring.h */
#include "wq_ring.h"		/* userspace/libsrx/wq_ring.h */

#include "kselftest_harness.h"

#define PAGE 4096u

static uint64_t page_align(uint64_t n)
{
	return (n + PAGE - 1) & ~(uint64_t)(PAGE - 1);
}

/* A CQ layout as srx.ko builds it (kernel/cq.c, srx_cq_layout()). */
static struct srx_cq_layout cq_layout(uint32_t entries)
{
	struct srx_cq_layout l = {
		.mmap_offset = 3 * PAGE,
		.entries = entries,
		.cqe_size = sizeof(struct srx_cqe),
		.prod_offset = offsetof(struct srx_cq_ctrl, prod),
		.fired_offset = offsetof(struct srx_cq_ctrl, fired),
		.status_offset = offsetof(struct srx_cq_ctrl, status),
		.dropped_offset = offsetof(struct srx_cq_ctrl, dropped),
		.cons_offset = offsetof(struct srx_cq_ctrl, cons),
		.arm_offset = offsetof(struct srx_cq_ctrl, arm),
		.cqe_offset = sizeof(struct srx_cq_ctrl),
	};

	l.mmap_length = page_align(sizeof(struct srx_cq_ctrl) +
				   (uint64_t)entries * sizeof(struct srx_cqe));
	return l;
}

/* A work queue layout as srx.ko builds it (kernel/qp.c, srx_wq_layout()). */
static struct srx_wq_layout wq_layout(uint32_t entries, uint32_t wqe_size,
				      size_t hdr)
{
	struct srx_wq_layout l = {
		.mmap_offset = 7 * PAGE,
		.entries = entries,
		.wqe_size = wqe_size,
		.prod_offset = offsetof(struct srx_wq_ctrl, prod),
		.cons_offset = offsetof(struct srx_wq_ctrl, cons),
		.state_offset = offsetof(struct srx_wq_ctrl, state),
		.done_offset = offsetof(struct srx_wq_ctrl, done),
		.engine_offset = offsetof(struct srx_wq_ctrl, engine),
		.wqe_offset = sizeof(struct srx_wq_ctrl),
		.max_sge = (wqe_size - hdr) / sizeof(struct srx_sge),
		.max_inline = wqe_size - hdr,
	};

	l.cqe_idx_offset = l.wqe_offset + entries * wqe_size;
	l.mmap_length = page_align(l.cqe_idx_offset +
				   (uint64_t)entries * sizeof(uint32_t));
	return l;
}

TEST(cq_layout_of_the_kernel_passes)
{
	struct srx_cq_layout l = cq_layout(64);

	EXPECT_TRUE(srx_cq_layout_ok(&l));
	l = cq_layout(1u << 22);	/* the largest CQ: 128 MiB */
	EXPECT_TRUE(srx_cq_layout_ok(&l));
}

/*
 * 4 GiB and a page: on a 32-bit build mmap() would get one page, while
 * every offset was checked against the 64-bit length.
 */
TEST(cq_length_beyond_size_t)
{
	struct srx_cq_layout l = cq_layout(64);

	l.mmap_length = ((uint64_t)1 << 32) + PAGE;
	EXPECT_FALSE(srx_cq_layout_ok(&l));
	l.mmap_length = (uint64_t)1 << 32;
	EXPECT_FALSE(srx_cq_layout_ok(&l));
	l.mmap_length = UINT32_MAX & ~(uint64_t)(PAGE - 1);
	EXPECT_TRUE(srx_cq_layout_ok(&l));
}

TEST(cq_offset_beyond_off_t)
{
	struct srx_cq_layout l = cq_layout(64);

	l.mmap_offset = (uint64_t)1 << 32;
	EXPECT_FALSE(srx_cq_layout_ok(&l));
	l.mmap_offset = (uint64_t)1 << 31;
	EXPECT_FALSE(srx_cq_layout_ok(&l));
	l.mmap_offset = ((uint64_t)1 << 31) - PAGE;
	EXPECT_TRUE(srx_cq_layout_ok(&l));
}

/* Each control word, moved into the CQE array, is refused. */
TEST(cq_control_word_inside_the_cqes)
{
	const struct srx_cq_layout good = cq_layout(64);
	uint32_t inside[] = {
		good.cqe_offset,
		good.cqe_offset + 8,
		good.cqe_offset + 64 * sizeof(struct srx_cqe) - 8,
	};
	unsigned int w, i;

	for (w = 0; w < 6; w++) {
		for (i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
			struct srx_cq_layout l = good;
			uint32_t *field[] = {
				&l.prod_offset, &l.fired_offset,
				&l.status_offset, &l.dropped_offset,
				&l.cons_offset, &l.arm_offset,
			};

			*field[w] = inside[i];
			EXPECT_FALSE(srx_cq_layout_ok(&l))
				TH_LOG("word %u at %u, CQEs at %u..%llu", w,
				       inside[i], good.cqe_offset,
				       (unsigned long long)good.cqe_offset +
				       64 * sizeof(struct srx_cqe));
		}
	}
	/* The CQE array moved over the consumer word. */
	{
		struct srx_cq_layout l = good;

		l.cqe_offset = l.cons_offset;
		l.mmap_length += PAGE;
		EXPECT_FALSE(srx_cq_layout_ok(&l));
	}
}

TEST(wq_layout_of_the_kernel_passes)
{
	struct srx_wq_layout l = wq_layout(16, 128, sizeof(struct srx_send_wqe));

	EXPECT_TRUE(srx_wq_layout_ok(&l, sizeof(struct srx_send_wqe)));
	l = wq_layout(32768, 1024, sizeof(struct srx_send_wqe));
	EXPECT_TRUE(srx_wq_layout_ok(&l, sizeof(struct srx_send_wqe)));
	l = wq_layout(16, 32, sizeof(struct srx_recv_wqe));
	EXPECT_TRUE(srx_wq_layout_ok(&l, sizeof(struct srx_recv_wqe)));
}

TEST(wq_length_and_offset_beyond_mmap)
{
	const size_t hdr = sizeof(struct srx_send_wqe);
	struct srx_wq_layout l = wq_layout(16, 128, hdr);

	l.mmap_length = ((uint64_t)1 << 32) + PAGE;
	EXPECT_FALSE(srx_wq_layout_ok(&l, hdr));
	l = wq_layout(16, 128, hdr);
	l.mmap_offset = (uint64_t)1 << 32;
	EXPECT_FALSE(srx_wq_layout_ok(&l, hdr));
}

/*
 * A stride that is not a multiple of 8 puts the 64-bit fields of every
 * other WQE (wr_id, remote addresses, SGE addresses) out of alignment.
 */
TEST(wq_stride_misaligned)
{
	const size_t hdr = sizeof(struct srx_send_wqe);
	uint32_t strides[] = { hdr + 4, hdr + 12, hdr + 17, 2 * hdr + 2 };
	unsigned int i;

	for (i = 0; i < sizeof(strides) / sizeof(strides[0]); i++) {
		struct srx_wq_layout l = wq_layout(16, strides[i], hdr);

		EXPECT_FALSE(srx_wq_layout_ok(&l, hdr))
			TH_LOG("stride %u", strides[i]);
	}
}

/* Each control word, moved into the WQE array, is refused. */
TEST(wq_control_word_inside_the_wqes)
{
	const size_t hdr = sizeof(struct srx_recv_wqe);
	const struct srx_wq_layout good = wq_layout(16, 64, hdr);
	uint32_t inside[] = {
		good.wqe_offset,
		good.wqe_offset + 5 * 64 + 4,
		good.wqe_offset + 16 * 64 - 4,
	};
	unsigned int w, i;

	for (w = 0; w < 5; w++) {
		for (i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
			struct srx_wq_layout l = good;
			uint32_t *field[] = {
				&l.prod_offset, &l.cons_offset,
				&l.state_offset, &l.done_offset,
				&l.engine_offset,
			};

			*field[w] = inside[i];
			EXPECT_FALSE(srx_wq_layout_ok(&l, hdr))
				TH_LOG("word %u at %u", w, inside[i]);
			/* ... and inside the cqe_idx array. */
			*field[w] = good.cqe_idx_offset + 4 * i;
			EXPECT_FALSE(srx_wq_layout_ok(&l, hdr))
				TH_LOG("word %u at cqe_idx[%u]", w, i);
		}
	}
}

/* The cqe_idx array must lie inside the mapping, aligned, apart from WQEs. */
TEST(wq_cqe_idx_array_misplaced)
{
	const size_t hdr = sizeof(struct srx_recv_wqe);
	const struct srx_wq_layout good = wq_layout(16, 64, hdr);
	struct srx_wq_layout l;

	l = good;
	l.cqe_idx_offset = good.wqe_offset + 15 * 64;	/* over the last WQE */
	EXPECT_FALSE(srx_wq_layout_ok(&l, hdr));
	l = good;
	l.cqe_idx_offset += 2;				/* misaligned */
	EXPECT_FALSE(srx_wq_layout_ok(&l, hdr));
	l = good;
	l.cqe_idx_offset = good.mmap_length - 4 * 15;	/* runs past the end */
	EXPECT_FALSE(srx_wq_layout_ok(&l, hdr));
	l = good;
	l.cqe_idx_offset = UINT32_MAX - 3;		/* wraps in 32 bits */
	EXPECT_FALSE(srx_wq_layout_ok(&l, hdr));
}

TEST_HARNESS_MAIN
