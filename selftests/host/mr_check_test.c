// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mr_check_test.c - the pure half of srx's memory-key access
 * (kernel/mr_check.h) on the host, without a kernel.
 *
 * What is checked:
 *  - srx_mr_grant_check() against a reference computed in 128 bits, for
 *    every (iova, len) around the edges of MRs placed at 0, in the middle
 *    and against 2^64, with lengths from 0 to 2^64 - 1 (2^31, 2^32 and the
 *    wrap included); the fault order PD, access, bounds; each access right
 *    alone; zero-length requests (PD and rights checked, any iova);
 *  - srx_mr_locate()/srx_mr_npages() for every start offset class
 *    (aligned, 1, last byte of a page, arbitrary) and page sizes of 4 KiB
 *    and 64 KiB (rxe broke on page sizes other than PAGE_SIZE);
 *  - the page walk srx_mr_copy() runs, over pages that come from
 *    scatterlist segments of different lengths allocated apart (rxe broke
 *    on multi-segment layouts): every byte of every (iova, len) copy lands
 *    where a flat reference copy puts it, in both directions;
 *  - the SGE walk srx_sge_copy() runs: steps against a byte-by-byte
 *    reference, zero-length SGEs never stepped into, the 64-bit sum of 32
 *    SGEs of 4 GiB - 1, SRX_ACC_LENGTH for every slice past the end (and
 *    for offset + len that wraps) before any step, a wrapping SGE address
 *    refused, and statelessness: a message cut into packets at any MTU
 *    walks to the same bytes as in one piece, in any order of packets;
 *  - srx_mw_bind_ok(), the rules a memory window's bind checks against
 *    its MR: each alone (PD, MW_BIND, local write behind a writable
 *    window, the range at the MR's edges and wrapping, rights a window
 *    cannot grant), and a length 0 that names no byte.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/ib_user_ioctl_verbs.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#include "mr_check.h"		/* kernel/mr_check.h */

#include "kselftest_harness.h"

/*
 * The harness compares through __typeof__ of each side: an enumerator
 * (int) against an enum srx_acc (unsigned), or a u64 against a literal,
 * is a -Wsign-compare warning there and nothing else.
 */
#pragma GCC diagnostic ignored "-Wsign-compare"

#define LW	IB_UVERBS_ACCESS_LOCAL_WRITE
#define RW	IB_UVERBS_ACCESS_REMOTE_WRITE
#define RR	IB_UVERBS_ACCESS_REMOTE_READ
#define RA	IB_UVERBS_ACCESS_REMOTE_ATOMIC

static int pd_a, pd_b;		/* two PD identities */

/* The bounds rule in 128 bits, where nothing wraps. */
static bool ref_in_bounds(u64 mr_iova, u64 mr_len, u64 iova, u64 len)
{
	unsigned __int128 lo = mr_iova, hi = (unsigned __int128)mr_iova + mr_len;
	unsigned __int128 a = iova, b = (unsigned __int128)iova + len;

	if (!len)
		return true;
	return a >= lo && b <= hi;
}

/* Values around @x: x - 3 .. x + 3, clamped to u64 (no wrap). */
static int around(u64 x, u64 *out)
{
	int n = 0, d;

	for (d = -3; d <= 3; d++) {
		if (d < 0 && x < (u64)-d)
			continue;
		if (d > 0 && x > UINT64_MAX - d)
			continue;
		out[n++] = x + d;
	}
	return n;
}

TEST(grant_bounds_match_128_bit_reference)
{
	const u64 lens[] = { 1, 2, 4096, 1ULL << 31, 1ULL << 32,
			     (1ULL << 32) - 1, 1ULL << 63 };
	const u64 far_lens[] = { 0, 1, 2, 3, 4095, 4096, 4097,
				 (1ULL << 31) - 1, 1ULL << 31, (1ULL << 31) + 1,
				 (1ULL << 32) - 1, 1ULL << 32, 1ULL << 63,
				 UINT64_MAX - 1, UINT64_MAX };
	unsigned long checked = 0;
	size_t l, b, li;

	for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		u64 bases[] = { 0, 1, 0x7f0000001234ULL, UINT64_MAX - lens[l] };

		for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
			struct srx_mr_grant g = {
				.pd = &pd_a, .iova = bases[b],
				.length = lens[l], .access = LW | RW | RR,
			};
			u64 pts[4][7], iovas[28];
			int np = 0, k, j;
			int c0 = around(g.iova, pts[0]);
			int c1 = around(g.iova + g.length, pts[1]);
			int c2 = around(g.iova + g.length / 2, pts[2]);
			int c3 = around(UINT64_MAX - 3, pts[3]);

			for (j = 0; j < c0; j++)
				iovas[np++] = pts[0][j];
			for (j = 0; j < c1; j++)
				iovas[np++] = pts[1][j];
			for (j = 0; j < c2; j++)
				iovas[np++] = pts[2][j];
			for (j = 0; j < c3; j++)
				iovas[np++] = pts[3][j];

			for (k = 0; k < np; k++) {
				u64 ls[64];
				int nl = 0, m;

				/* lengths that end exactly at the MR's end and around it */
				if (iovas[k] <= g.iova + g.length)
					nl = around(g.iova + g.length - iovas[k], ls);
				for (li = 0; li < sizeof(far_lens) / sizeof(far_lens[0]); li++)
					ls[nl++] = far_lens[li];
				ls[nl++] = g.length;
				ls[nl++] = UINT64_MAX - iovas[k];	/* ends at 2^64 - 1 */
				if (iovas[k])
					ls[nl++] = -iovas[k];		/* ends at 2^64 */
				ls[nl++] = -iovas[k] + 1;		/* wraps to 1 */

				for (m = 0; m < nl; m++) {
					enum srx_acc want = ref_in_bounds(g.iova, g.length,
									  iovas[k], ls[m]) ?
							    SRX_ACC_OK : SRX_ACC_BOUNDS;
					enum srx_acc got = srx_mr_grant_check(&g, &pd_a, RR,
									      iovas[k], ls[m]);

					if (got != want)
						TH_LOG("mr [%#llx +%#llx) req [%#llx +%#llx): got %d want %d",
						       (unsigned long long)g.iova,
						       (unsigned long long)g.length,
						       (unsigned long long)iovas[k],
						       (unsigned long long)ls[m], got, want);
					ASSERT_EQ(want, got);
					checked++;
				}
			}
		}
	}
	TH_LOG("%lu (mr, request) pairs checked", checked);
	ASSERT_GT(checked, 1000);
}

/* The DMA MR: [0, 2^64 - 1), all of kernel memory but the last byte. */
TEST(grant_dma_mr_covers_all_but_the_last_byte)
{
	struct srx_mr_grant g = { .pd = &pd_a, .iova = 0, .length = UINT64_MAX,
				  .access = LW };

	EXPECT_EQ(SRX_ACC_OK, srx_mr_grant_check(&g, &pd_a, LW, 0xffff888000001000ULL, 4096));
	EXPECT_EQ(SRX_ACC_OK, srx_mr_grant_check(&g, &pd_a, 0, 0, UINT64_MAX));
	EXPECT_EQ(SRX_ACC_OK, srx_mr_grant_check(&g, &pd_a, 0, UINT64_MAX - 1, 1));
	EXPECT_EQ(SRX_ACC_BOUNDS, srx_mr_grant_check(&g, &pd_a, 0, UINT64_MAX, 1));
	EXPECT_EQ(SRX_ACC_BOUNDS, srx_mr_grant_check(&g, &pd_a, 0, 1, UINT64_MAX));
	EXPECT_EQ(SRX_ACC_BOUNDS, srx_mr_grant_check(&g, &pd_a, 0, UINT64_MAX - 4095, 8192));
}

TEST(grant_fault_order_and_each_right)
{
	const int rights[] = { LW, RW, RR, RA };
	struct srx_mr_grant g = { .pd = &pd_a, .iova = 0x1000, .length = 0x1000 };
	size_t i, j;

	/* Everything wrong: the PD is reported first, then the right. */
	g.access = 0;
	EXPECT_EQ(SRX_ACC_PD, srx_mr_grant_check(&g, &pd_b, RW, 0, 1ULL << 40));
	EXPECT_EQ(SRX_ACC_ACCESS, srx_mr_grant_check(&g, &pd_a, RW, 0, 1ULL << 40));
	EXPECT_EQ(SRX_ACC_BOUNDS, srx_mr_grant_check(&g, &pd_a, 0, 0, 1ULL << 40));

	/* A local read (no right) is always granted. */
	EXPECT_EQ(SRX_ACC_OK, srx_mr_grant_check(&g, &pd_a, 0, 0x1000, 0x1000));

	for (i = 0; i < 4; i++) {
		for (j = 0; j < 4; j++) {
			g.access = rights[i];
			EXPECT_EQ(i == j ? SRX_ACC_OK : SRX_ACC_ACCESS,
				  srx_mr_grant_check(&g, &pd_a, rights[j], 0x1800, 8));
		}
		/* Every right asked for must be granted, not just one. */
		g.access = LW | RW | RR | RA;
		g.access &= ~rights[i];
		EXPECT_EQ(SRX_ACC_ACCESS,
			  srx_mr_grant_check(&g, &pd_a, LW | RW | RR | RA, 0x1800, 8));
	}
}

/*
 * Zero length: no byte is touched, so any iova passes bounds; PD and rights
 * are still checked for a caller that has an MR (mr_check.h says why the
 * responder does not even look a zero-length RETH's R_Key up).
 */
TEST(grant_zero_length)
{
	struct srx_mr_grant g = { .pd = &pd_a, .iova = 0x1000, .length = 0x1000,
				  .access = LW | RR };
	const u64 iovas[] = { 0, 0xfff, 0x1000, 0x2000, 0x2001, UINT64_MAX };
	size_t i;

	for (i = 0; i < sizeof(iovas) / sizeof(iovas[0]); i++) {
		EXPECT_EQ(SRX_ACC_OK, srx_mr_grant_check(&g, &pd_a, RR, iovas[i], 0));
		EXPECT_EQ(SRX_ACC_PD, srx_mr_grant_check(&g, &pd_b, RR, iovas[i], 0));
		EXPECT_EQ(SRX_ACC_ACCESS, srx_mr_grant_check(&g, &pd_a, RW, iovas[i], 0));
	}
}

TEST(key_index_is_bits_31_to_8)
{
	EXPECT_EQ(0u, srx_mr_key_index(0xff));
	EXPECT_EQ(1u, srx_mr_key_index(0x1ab));
	EXPECT_EQ(0xffffffu, srx_mr_key_index(0xffffffffu));
}

/* Page sizes: 4 KiB (x86's PAGE_SIZE) and 64 KiB (arm64, ppc64). */
FIXTURE(pages)
{
	u64 size;
};

FIXTURE_VARIANT(pages)
{
	unsigned int shift;
};

FIXTURE_VARIANT_ADD(pages, page_4k) { .shift = 12 };
FIXTURE_VARIANT_ADD(pages, page_64k) { .shift = 16 };

FIXTURE_SETUP(pages)
{
	self->size = 1ULL << variant->shift;
}

FIXTURE_TEARDOWN(pages)
{
}

/*
 * ib_umem_num_pages(): (ALIGN(start + len, pg) - ALIGN_DOWN(start, pg)) / pg
 * (include/rdma/ib_umem.h, 6.1), written here independently.
 */
static u64 ref_npages(u64 start, u64 len, u64 size)
{
	u64 lo = start / size * size;
	u64 hi = (start + len + size - 1) / size * size;

	return (hi - lo) / size;
}

TEST_F(pages, locate_every_byte_for_every_start_class)
{
	const u64 size = self->size;
	const u64 starts[] = { 0x7f0000000000ULL, 0x7f0000000001ULL,
			       0x7f0000000000ULL + size - 1,
			       0x7f0000000000ULL + 1234 };
	const u64 iovas[] = { 0, 0x10000, 0x7f0000000000ULL, UINT64_MAX - 8 * size };
	size_t s, v;

	for (s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		u32 first_off = (u32)(starts[s] & (size - 1));
		const u64 lens[] = { 1, size - first_off, size - first_off + 1,
				     3 * size, 7 * size - 5 };
		size_t l;

		for (l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			ASSERT_EQ(ref_npages(starts[s], lens[l], size),
				  srx_mr_npages(first_off, lens[l], variant->shift));

		for (v = 0; v < sizeof(iovas) / sizeof(iovas[0]); v++) {
			u64 b;

			/* Byte b of the MR is user address start + b. */
			for (b = 0; b < 3 * size; b++) {
				u64 addr = starts[s] + b, pg;
				u32 off;

				srx_mr_locate(iovas[v], first_off, variant->shift,
					      iovas[v] + b, &pg, &off);
				ASSERT_EQ(addr / size - starts[s] / size, pg);
				ASSERT_EQ(addr % size, off);
			}
		}
	}
}

/*
 * An MR as srx builds it: a page array filled in scatterlist order from
 * segments of several lengths (in pages), each allocated on its own, so
 * consecutive pages of the MR are not consecutive in memory except inside
 * a segment. The reference is a flat image of the user bytes.
 */
struct fake_mr {
	u8 **pages;
	u64 npages;
	u8 *segs[16];
	int nsegs;
	u32 first_off;
	u64 iova, length;
	u8 *flat;	/* byte b of the MR is flat[b] */
};

static void fake_mr_build(struct fake_mr *m, unsigned int shift, u64 start,
			  u64 length, const int *seg_pages, int nsegs)
{
	u64 size = 1ULL << shift, p = 0;
	int s, i;

	memset(m, 0, sizeof(*m));
	m->first_off = (u32)(start & (size - 1));
	m->length = length;
	m->iova = 0x40000000ULL + 77;		/* an iova unrelated to start */
	m->npages = srx_mr_npages(m->first_off, length, shift);
	m->pages = calloc(m->npages, sizeof(*m->pages));
	for (s = 0; s < nsegs && p < m->npages; s++) {
		if (!seg_pages[s])
			continue;
		m->segs[m->nsegs] = calloc(seg_pages[s], size);
		for (i = 0; i < seg_pages[s] && p < m->npages; i++)
			m->pages[p++] = m->segs[m->nsegs] + (u64)i * size;
		m->nsegs++;
	}
	m->flat = calloc(1, length);
}

static void fake_mr_free(struct fake_mr *m)
{
	int s;

	for (s = 0; s < m->nsegs; s++)
		free(m->segs[s]);
	free(m->pages);
	free(m->flat);
}

/* srx_mr_copy()'s loop over fake pages: returns the bytes it copied. */
static u64 fake_copy(struct fake_mr *m, unsigned int shift, u64 iova,
		     u8 *buf, u64 len, bool to_mr)
{
	struct srx_page_walk w;
	u64 pg, done = 0;
	u32 off, n;

	srx_page_walk_start(&w, m->iova, m->first_off, shift, iova, len);
	while ((n = srx_page_walk_next(&w, &pg, &off)) && pg < m->npages) {
		if (to_mr)
			memcpy(m->pages[pg] + off, buf + done, n);
		else
			memcpy(buf + done, m->pages[pg] + off, n);
		done += n;
	}
	return done;
}

TEST_F(pages, copy_through_multi_segment_page_arrays)
{
	const int layouts[][11] = {
		/* no page contiguous with the next */
		{ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 },
		{ 3, 1, 2, 4, 1 },	/* segments of several lengths */
		{ 11 },			/* one segment */
	};
	const u64 size = self->size;
	const u64 starts[] = { 0, 1, size - 1, 1234 };
	u8 *buf = malloc(11 * size), *got = malloc(11 * size);
	size_t ly, s;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, got);
	for (ly = 0; ly < 3; ly++) {
		for (s = 0; s < 4; s++) {
			u64 length = 9 * size + 17 - (starts[s] & (size - 1));
			struct fake_mr m;
			u64 b, i, round;

			fake_mr_build(&m, variant->shift, starts[s], length,
				      layouts[ly], 11);
			ASSERT_LE(m.npages, 11);
			/* Fill through the walk, byte pattern by MR offset. */
			for (b = 0; b < length; b++)
				buf[b] = (u8)(b * 7 + b / 251);
			ASSERT_EQ(length, fake_copy(&m, variant->shift, m.iova, buf,
						    length, true));
			memcpy(m.flat, buf, length);
			/*
			 * Where the bytes landed, by the umem's layout rather
			 * than by the walk: byte b of the MR is byte
			 * first_off + b of the pinned pages, in order.
			 */
			for (b = 0; b < length; b++) {
				u64 pos = m.first_off + b;

				ASSERT_EQ(buf[b], m.pages[pos / size][pos % size]);
			}

			/* Read back every (offset, len) of a grid, page edges included. */
			for (round = 0; round < 2; round++) {
				const u64 offs[] = { 0, 1, size - m.first_off - 1,
						     size - m.first_off,
						     size - m.first_off + 1, 2 * size,
						     length - 1 };
				size_t o;

				for (o = 0; o < sizeof(offs) / sizeof(offs[0]); o++) {
					u64 max = length - offs[o], lens[] = { 1, 2, size,
									   size + 1, max };
					size_t li;

					for (li = 0; li < 5; li++) {
						u64 len = lens[li] > max ? max : lens[li];

						if (!round) {
							memset(got, 0xee, len);
							ASSERT_EQ(len, fake_copy(&m, variant->shift,
										 m.iova + offs[o], got,
										 len, false));
							ASSERT_EQ(0, memcmp(got, m.flat + offs[o], len));
						} else {
							/* write a slice, check the whole image */
							for (i = 0; i < len; i++)
								got[i] = (u8)(0x5a ^ i ^ o);
							ASSERT_EQ(len, fake_copy(&m, variant->shift,
										 m.iova + offs[o], got,
										 len, true));
							memcpy(m.flat + offs[o], got, len);
							ASSERT_EQ(length, fake_copy(&m, variant->shift,
										    m.iova, buf,
										    length, false));
							ASSERT_EQ(0, memcmp(buf, m.flat, length));
						}
					}
				}
			}
			fake_mr_free(&m);
		}
	}
	free(buf);
	free(got);
}

/* Walk a slice; record for each message byte its (sge, within). */
static enum srx_acc walk_slice(const struct srx_sge *sge, u32 num, u64 off,
			       u64 len, u32 *byte_sge, u64 *byte_addr,
			       u32 *steps)
{
	struct srx_sge_walk w;
	enum srx_acc ret;
	u64 iova, done = 0, k;
	u32 i, n;

	*steps = 0;
	ret = srx_sge_walk_start(&w, sge, num, off, len);
	while (ret == SRX_ACC_OK) {
		ret = srx_sge_walk_next(&w, &i, &iova, &n);
		if (ret != SRX_ACC_OK || !n)
			break;
		if (!sge[i].length)
			return SRX_ACC_COUNT;	/* stepped into an empty SGE */
		for (k = 0; k < n; k++) {
			byte_sge[done + k] = i;
			byte_addr[done + k] = iova + k;
		}
		done += n;
		(*steps)++;
	}
	if (ret == SRX_ACC_OK && done != len)
		return SRX_ACC_COUNT;
	return ret;
}

TEST(sge_walk_matches_byte_reference)
{
	const struct srx_sge sge[] = {
		{ .addr = 0x1000, .length = 5, .lkey = 0x101 },
		{ .addr = 0x9000, .length = 0, .lkey = 0xdead },	/* empty */
		{ .addr = 0x2000, .length = 1, .lkey = 0x202 },
		{ .addr = 0x3000, .length = 0, .lkey = 0xdead },
		{ .addr = 0x3000, .length = 0, .lkey = 0xdead },
		{ .addr = 0x4000, .length = 9, .lkey = 0x303 },
		{ .addr = 0x5000, .length = 0, .lkey = 0xdead },	/* empty last */
	};
	const u32 num = 7, total = 15;
	u32 ref_sge[15], got_sge[16], steps;
	u64 ref_addr[15], got_addr[16], off, len, k;
	u32 i, b = 0;

	for (i = 0; i < num; i++)
		for (k = 0; k < sge[i].length; k++) {
			ref_sge[b] = i;
			ref_addr[b++] = sge[i].addr + k;
		}
	ASSERT_EQ(total, b);
	ASSERT_EQ(total, srx_sge_total(sge, num));

	for (off = 0; off <= total + 1; off++) {
		for (len = 0; len <= total + 1; len++) {
			enum srx_acc ret = walk_slice(sge, num, off, len, got_sge,
						      got_addr, &steps);

			if (off + len > total) {
				ASSERT_EQ(SRX_ACC_LENGTH, ret);
				ASSERT_EQ(0, steps);	/* refused before any step */
				continue;
			}
			ASSERT_EQ(SRX_ACC_OK, ret);
			for (k = 0; k < len; k++) {
				ASSERT_EQ(ref_sge[off + k], got_sge[k]);
				ASSERT_EQ(ref_addr[off + k], got_addr[k]);
			}
			/* at most one step per SGE, none for an empty slice */
			ASSERT_LE(steps, num);
			if (!len)
				ASSERT_EQ(0, steps);
		}
	}
}

TEST(sge_walk_of_no_sges)
{
	u32 s[1], steps;
	u64 a[1];

	EXPECT_EQ(SRX_ACC_OK, walk_slice(NULL, 0, 0, 0, s, a, &steps));
	EXPECT_EQ(SRX_ACC_LENGTH, walk_slice(NULL, 0, 0, 1, s, a, &steps));
	EXPECT_EQ(SRX_ACC_LENGTH, walk_slice(NULL, 0, 1, 0, s, a, &steps));
}

/* 32 SGEs of 4 GiB - 1: the sum needs 37 bits and must not wrap. */
TEST(sge_total_in_64_bits)
{
	struct srx_sge sge[32];
	u64 total = 32ULL * UINT32_MAX;
	struct srx_sge_walk w;
	u64 iova;
	u32 i, n;
	int k;

	for (k = 0; k < 32; k++)
		sge[k] = (struct srx_sge){ .addr = (u64)k << 40, .length = UINT32_MAX,
					   .lkey = 0x100 + k };
	ASSERT_EQ(total, srx_sge_total(sge, 32));

	/* The last byte of the last SGE. */
	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_start(&w, sge, 32, total - 1, 1));
	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_next(&w, &i, &iova, &n));
	EXPECT_EQ(31u, i);
	EXPECT_EQ((31ULL << 40) + UINT32_MAX - 1, iova);
	EXPECT_EQ(1u, n);
	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_next(&w, &i, &iova, &n));
	EXPECT_EQ(0u, n);

	/* A slice of 2^31 + 1 bytes across an SGE boundary. */
	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_start(&w, sge, 32, 3ULL * UINT32_MAX - 5,
						 (1ULL << 31) + 1));
	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_next(&w, &i, &iova, &n));
	EXPECT_EQ(2u, i);
	EXPECT_EQ(5u, n);
	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_next(&w, &i, &iova, &n));
	EXPECT_EQ(3u, i);
	EXPECT_EQ(3ULL << 40, iova);
	EXPECT_EQ((1u << 31) - 4, n);

	/* Past the end, and offset + len wrapping 2^64: refused. */
	EXPECT_EQ(SRX_ACC_LENGTH, srx_sge_walk_start(&w, sge, 32, total, 1));
	EXPECT_EQ(SRX_ACC_LENGTH, srx_sge_walk_start(&w, sge, 32, 1, total));
	EXPECT_EQ(SRX_ACC_LENGTH, srx_sge_walk_start(&w, sge, 32, UINT64_MAX, 2));
	EXPECT_EQ(SRX_ACC_LENGTH, srx_sge_walk_start(&w, sge, 32, 2, UINT64_MAX));
	EXPECT_EQ(SRX_ACC_OK, srx_sge_walk_start(&w, sge, 32, total, 0));
}

/* An SGE whose range wraps 2^64: the bytes past the wrap are refused. */
TEST(sge_walk_refuses_a_wrapped_address)
{
	const struct srx_sge sge[] = {
		{ .addr = UINT64_MAX - 3, .length = 8, .lkey = 0x101 },
	};
	struct srx_sge_walk w;
	u64 iova;
	u32 i, n;

	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_start(&w, sge, 1, 0, 4));
	EXPECT_EQ(SRX_ACC_OK, srx_sge_walk_next(&w, &i, &iova, &n));
	EXPECT_EQ(UINT64_MAX - 3, iova);
	ASSERT_EQ(SRX_ACC_OK, srx_sge_walk_start(&w, sge, 1, 4, 2));
	EXPECT_EQ(SRX_ACC_BOUNDS, srx_sge_walk_next(&w, &i, &iova, &n));
}

/*
 * Stateless: a message cut into packets of any MTU, walked packet by packet
 * in any order (as retransmissions come), names the same bytes as one walk
 * of the whole message.
 */
TEST(sge_walk_is_stateless)
{
	struct srx_sge sge[32];
	u32 whole_sge[4096], pkt_sge[4096], steps;
	u64 whole_addr[4096], pkt_addr[4096];
	const u64 mtus[] = { 1, 7, 256, 1024, 4096 };
	unsigned int seed = 12;
	u64 total, mtu, off;
	size_t m;
	int k;

	for (k = 0; k < 32; k++) {
		seed = seed * 1103515245 + 12345;
		sge[k] = (struct srx_sge){ .addr = ((u64)k << 32) + (seed >> 8),
					   .length = (seed >> 16) % 300,
					   .lkey = 0x100 + k };
		if (k % 5 == 3)
			sge[k].length = 0;
	}
	total = srx_sge_total(sge, 32);
	ASSERT_LE(total, 4096);
	ASSERT_EQ(SRX_ACC_OK, walk_slice(sge, 32, 0, total, whole_sge, whole_addr,
					 &steps));

	for (m = 0; m < sizeof(mtus) / sizeof(mtus[0]); m++) {
		u64 npkt;
		int pass;

		mtu = mtus[m];
		npkt = (total + mtu - 1) / mtu;
		/* forwards, then backwards, then a walk from the middle */
		for (pass = 0; pass < 3; pass++) {
			u64 p;

			for (p = 0; p < npkt; p++) {
				u64 q = pass == 0 ? p : pass == 1 ? npkt - 1 - p :
					(p + npkt / 2) % npkt;
				u64 len;

				off = q * mtu;
				len = total - off < mtu ? total - off : mtu;
				ASSERT_EQ(SRX_ACC_OK, walk_slice(sge, 32, off, len,
								 pkt_sge, pkt_addr,
								 &steps));
				ASSERT_EQ(0, memcmp(pkt_sge, whole_sge + off,
						    len * sizeof(u32)));
				ASSERT_EQ(0, memcmp(pkt_addr, whole_addr + off,
						    len * sizeof(u64)));
			}
		}
	}
}

/* A window over [0x10000, 0x20000) of an MR of pd_a. */
TEST(mw_bind_rules)
{
	struct srx_mr_grant mr = {
		.pd = &pd_a, .iova = 0x10000, .length = 0x10000,
		.access = LW | RW | RR | IB_UVERBS_ACCESS_MW_BIND,
	};
	struct srx_bind_wr b = {
		.addr = 0x10000, .length = 0x10000, .access = RW | RR,
	};

	EXPECT_TRUE(srx_mw_bind_ok(&mr, &pd_a, &b));
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_b, &b));

	/* the range: at each edge, one byte past, and wrapping */
	b.addr = 0x1ffff;
	b.length = 1;
	EXPECT_TRUE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.length = 2;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.addr = 0xffff;
	b.length = 1;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.addr = 0x10001;
	b.length = UINT64_MAX;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.addr = 0x10000;
	b.length = 0;
	EXPECT_TRUE(srx_mw_bind_ok(&mr, &pd_a, &b));

	/* rights a window cannot grant: MW_BIND itself, zero-based */
	b.length = 0x1000;
	b.access = RR | IB_UVERBS_ACCESS_MW_BIND;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.access = RR | IB_UVERBS_ACCESS_ZERO_BASED;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.access = LW | RW | RR | RA;
	EXPECT_TRUE(srx_mw_bind_ok(&mr, &pd_a, &b));

	/* an MR without MW_BIND */
	mr.access = LW | RW | RR;
	b.access = RR;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));

	/* no local write: read-only windows only */
	mr.access = RR | IB_UVERBS_ACCESS_MW_BIND;
	EXPECT_TRUE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.access = RW;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));
	b.access = RA;
	EXPECT_FALSE(srx_mw_bind_ok(&mr, &pd_a, &b));
}

TEST_HARNESS_MAIN
