// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wqe_test.c - the kernel's take step on the host: kernel/wqe.h (copy a
 * WQE from its ring slot once into a private entry, validate the copy) and
 * srx_ring_take_ok()/srx_ring_takeable() of kernel/ring.h, the kernel's own
 * code compiled here.
 *
 * What is checked:
 *  - the constants wqe.h spells out are libibverbs' (send flags, the
 *    completion statuses, the opcodes);
 *  - every opcode (the whole u8) on every QP type against the opcodes the
 *    IBTA gives that transport; the remote part copied by opcode and type;
 *  - num_sge and inline bounds, inline only on opcodes with a payload,
 *    every send_flags bit, every reserved word, fields that are ignored;
 *  - lengths summed in 64 bits (SGE lists whose 32-bit sum wraps), the
 *    maximum message size, 8-byte atomics, ATOMIC WRITE's 8 inline
 *    bytes, the statuses results map to;
 *  - receives: num_sge, the reserved word, 64-bit totals;
 *  - the take's index bound: nothing past a slot still in flight, nothing
 *    for a producer behind the consumer, across the 2^32 wrap;
 *  - a hostile writer: a thread rewrites a slot (header, SGEs, inline
 *    bytes) without pause while srx_swqe_copy()/srx_rwqe_copy() take it
 *    over and over. Every entry must agree with its own validation (an
 *    accepted entry passes the checks again from its own fields, its length
 *    is the sum of its own SGEs, a refused one carries nothing), and the
 *    entries are allocated at exactly their stride, so that ASan catches a
 *    copy sized by a second read of the slot.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

/* kernel/ring.h and kernel/wqe.h expect the kernel's types and barrier(). */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
#define barrier() __asm__ __volatile__("" : : : "memory")

#include "ring.h"		/* kernel/ring.h */
#include "wqe.h"		/* kernel/wqe.h */

#include "kselftest_harness.h"

#define MAX_SGE 32u		/* SRX_MAX_SGE */
#define MAX_INLINE 512u		/* SRX_MAX_INLINE */
#define MAX_MSG 0x40000000ull	/* SRX_MAX_MSG_SIZE */
/* A ring slot for MAX_SGE SGEs: the stride srx.ko picks (power of two). */
#define SLOT_SIZE 1024u

#define BIT64(n) (1ull << (n))

/* The transports' send opcodes (IBTA 1.4 table 35; rdma_rxe's split). */
static const u64 rc_ops = BIT64(IBV_WR_SEND) | BIT64(IBV_WR_SEND_WITH_IMM) |
	BIT64(IBV_WR_RDMA_WRITE) | BIT64(IBV_WR_RDMA_WRITE_WITH_IMM) |
	BIT64(IBV_WR_RDMA_READ) | BIT64(IBV_WR_ATOMIC_CMP_AND_SWP) |
	BIT64(IBV_WR_ATOMIC_FETCH_AND_ADD) | BIT64(IBV_WR_SEND_WITH_INV) |
	BIT64(IBV_WR_LOCAL_INV) | BIT64(IBV_WR_BIND_MW);
static const u64 uc_ops = BIT64(IBV_WR_SEND) | BIT64(IBV_WR_SEND_WITH_IMM) |
	BIT64(IBV_WR_RDMA_WRITE) | BIT64(IBV_WR_RDMA_WRITE_WITH_IMM) |
	BIT64(IBV_WR_LOCAL_INV) | BIT64(IBV_WR_BIND_MW);
static const u64 ud_ops = BIT64(IBV_WR_SEND) | BIT64(IBV_WR_SEND_WITH_IMM);

struct qpt {
	const char *name;
	u64 ops;
	u32 datagram;
};

static const struct qpt qpts[] = {
	{ "RC", rc_ops, 0 },
	{ "UC", uc_ops, 0 },
	{ "UD", ud_ops, 1 },
	{ "GSI", ud_ops, 1 },
};

static struct srx_wqe_limits limits(u64 ops, u32 datagram)
{
	struct srx_wqe_limits l = {
		.send_ops = ops, .max_msg = MAX_MSG, .max_sge = MAX_SGE,
		.max_inline = MAX_INLINE, .datagram = datagram,
	};

	return l;
}

static struct srx_wqe_limits recv_limits(void)
{
	return limits(0, 0);
}

/* A slot and an entry each exactly as large as the kernel makes them. */
struct take {
	u8 *slot;
	struct srx_swqe *se;
	struct srx_rwqe *re;
};

static void take_init(struct take *t)
{
	t->slot = calloc(1, SLOT_SIZE);
	t->se = malloc(srx_swqe_stride(MAX_SGE, MAX_INLINE));
	t->re = malloc(srx_rwqe_stride(MAX_SGE));
	memset(t->se, 0xa5, srx_swqe_stride(MAX_SGE, MAX_INLINE));
	memset(t->re, 0xa5, srx_rwqe_stride(MAX_SGE));
}

static void take_fini(struct take *t)
{
	free(t->slot);
	free(t->se);
	free(t->re);
}

static struct srx_send_wqe *swqe(struct take *t)
{
	return (struct srx_send_wqe *)t->slot;
}

static struct srx_sge *ssge(struct take *t)
{
	return (struct srx_sge *)(t->slot + sizeof(struct srx_send_wqe));
}

static struct srx_recv_wqe *rwqe(struct take *t)
{
	return (struct srx_recv_wqe *)t->slot;
}

static struct srx_sge *rsge(struct take *t)
{
	return (struct srx_sge *)(t->slot + sizeof(struct srx_recv_wqe));
}

/* A valid WQE of @opcode: one 8-byte SGE, everything else zero. */
static void send_fill(struct take *t, u8 opcode)
{
	memset(t->slot, 0, SLOT_SIZE);
	swqe(t)->wr_id = 0x1122334455667788ull;
	swqe(t)->opcode = opcode;
	swqe(t)->num_sge = 1;
	ssge(t)[0].addr = 0x1000;
	ssge(t)[0].length = 8;
	ssge(t)[0].lkey = 7;
}

static bool is_atomic(unsigned int op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	       op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static bool is_rdma(unsigned int op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
	       op == IBV_WR_RDMA_READ || op == IBV_WR_ATOMIC_WRITE;
}

/*
 * The remote part as libsrx (or a kernel poster) writes it for @op; a
 * SEND's is left as garbage, which nobody reads.
 */
static void fill_remote(struct take *t, unsigned int op, u32 datagram)
{
	struct srx_send_wqe *w = swqe(t);

	memset(&w->wr, 0, sizeof(w->wr));
	if (datagram) {
		w->wr.ud.ah = 3;
		w->wr.ud.remote_qpn = 0x123456;
		w->wr.ud.remote_qkey = 0x11111111;
	} else if (is_atomic(op)) {
		w->wr.atomic.remote_addr = 0xabcdef0012345678ull;
		w->wr.atomic.compare_add = 0x0102030405060708ull;
		w->wr.atomic.swap = 0x1112131415161718ull;
		w->wr.atomic.rkey = 0x99;
	} else if (is_rdma(op)) {
		w->wr.rdma.remote_addr = 0xabcdef0012345678ull;
		w->wr.rdma.rkey = 0x77;
	} else if (op == SRX_WR_BIND_MW) {
		w->wr.bind.addr = 0x10000;
		w->wr.bind.length = 0x2000;
		w->wr.bind.mw_rkey = 0x4211;
		w->wr.bind.rkey = 0x4212;
		w->wr.bind.mr_lkey = 0x3305;
		w->wr.bind.access = 0x6;
	} else {
		memset(&w->wr, 0x5a, sizeof(w->wr));
	}
}

TEST(constants_are_libibverbs)
{
	EXPECT_EQ(IBV_SEND_FENCE, SRX_SEND_FENCE);
	EXPECT_EQ(IBV_SEND_SIGNALED, SRX_SEND_SIGNALED);
	EXPECT_EQ(IBV_SEND_SOLICITED, SRX_SEND_SOLICITED);
	EXPECT_EQ(IBV_SEND_INLINE, SRX_SEND_INLINE);
	EXPECT_EQ(IBV_WC_SUCCESS, SRX_WC_SUCCESS);
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, SRX_WC_LOC_LEN_ERR);
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, SRX_WC_LOC_QP_OP_ERR);
	EXPECT_EQ(IBV_WR_SEND, IB_UVERBS_WR_SEND);
	EXPECT_EQ(IBV_WR_RDMA_READ, IB_UVERBS_WR_RDMA_READ);
	EXPECT_EQ(IBV_WR_ATOMIC_FETCH_AND_ADD, IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD);
	EXPECT_EQ(IBV_WR_SEND_WITH_INV, IB_UVERBS_WR_SEND_WITH_INV);
	/* The entries keep 8-byte alignment at their stride. */
	EXPECT_EQ(0u, srx_swqe_stride(MAX_SGE, MAX_INLINE) % 8);
	EXPECT_EQ(0u, srx_swqe_stride(1, 13) % 8);
	EXPECT_EQ(0u, srx_rwqe_stride(MAX_SGE) % 8);
}

/*
 * IB_WR_REG_MR is taken where the QP's mask has it (a kernel QP's, qp.c)
 * and copies the key and the rights; a process's mask lacks it, and the
 * same slot is then a bad opcode with nothing copied.
 */
TEST(reg_mr_kernel_only)
{
	struct srx_wqe_limits kern = limits(rc_ops | BIT64(SRX_WR_REG_MR), 0);
	struct srx_wqe_limits user = limits(rc_ops, 0);
	struct take t;

	take_init(&t);
	send_fill(&t, SRX_WR_REG_MR);
	swqe(&t)->num_sge = 0;
	swqe(&t)->wr.reg.key = 0x123457;
	swqe(&t)->wr.reg.access = 0x7;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &kern));
	EXPECT_EQ(0x123457u, t.se->wr.reg.key);
	EXPECT_EQ(0x7u, t.se->wr.reg.access);
	EXPECT_EQ(0u, t.se->length);
	EXPECT_TRUE(srx_wqe_opcode_is_local(t.se->opcode));
	EXPECT_EQ(SRX_WQE_BAD_OPCODE, srx_swqe_copy(t.se, t.slot, &user));
	EXPECT_EQ(0u, t.se->wr.reg.key);
	EXPECT_TRUE(srx_wqe_opcode_is_local(IBV_WR_LOCAL_INV));
	EXPECT_FALSE(srx_wqe_opcode_is_local(IBV_WR_SEND_WITH_INV));
	take_fini(&t);
}

/*
 * Every opcode of the u8 field on every QP type: accepted exactly when the
 * transport has it; then the remote part the opcode uses is copied, from
 * wr.ud on datagram QPs.
 */
TEST(opcode_by_qp_type)
{
	struct srx_wqe_limits all;
	struct take t;
	unsigned int q, op, accepted = 0;

	take_init(&t);
	for (q = 0; q < sizeof(qpts) / sizeof(qpts[0]); q++) {
		struct srx_wqe_limits lim = limits(qpts[q].ops, qpts[q].datagram);

		for (op = 0; op < 256; op++) {
			bool want = op < 64 && (qpts[q].ops & BIT64(op));
			u8 r;

			send_fill(&t, op);
			fill_remote(&t, op, qpts[q].datagram);
			r = srx_send_hdr_check(swqe(&t), &lim);
			EXPECT_EQ(want ? SRX_WQE_OK : SRX_WQE_BAD_OPCODE, r)
				TH_LOG("%s opcode %u", qpts[q].name, op);
			r = srx_swqe_copy(t.se, t.slot, &lim);
			EXPECT_EQ(want ? SRX_WQE_OK : SRX_WQE_BAD_OPCODE, r)
				TH_LOG("%s opcode %u", qpts[q].name, op);
			EXPECT_EQ(r, t.se->result);
			EXPECT_EQ(op, t.se->opcode);
			EXPECT_EQ(0x1122334455667788ull, t.se->wr_id);
			if (!want) {
				EXPECT_EQ(0u, t.se->num_sge);
				EXPECT_EQ(0u, t.se->length);
				continue;
			}
			accepted++;
			EXPECT_EQ(1u, t.se->num_sge);
			EXPECT_EQ(8u, t.se->length);
			EXPECT_EQ(0x1000u, t.se->sge[0].addr);
			EXPECT_EQ(7u, t.se->sge[0].lkey);
			if (qpts[q].datagram) {
				EXPECT_EQ(3u, t.se->wr.ud.ah);
				EXPECT_EQ(0x123456u, t.se->wr.ud.remote_qpn);
				EXPECT_EQ(0x11111111u, t.se->wr.ud.remote_qkey);
			} else if (is_atomic(op)) {
				EXPECT_EQ(0xabcdef0012345678ull,
					  t.se->wr.atomic.remote_addr);
				EXPECT_EQ(0x0102030405060708ull,
					  t.se->wr.atomic.compare_add);
				EXPECT_EQ(0x1112131415161718ull,
					  t.se->wr.atomic.swap);
				EXPECT_EQ(0x99u, t.se->wr.atomic.rkey);
			} else if (is_rdma(op)) {
				EXPECT_EQ(0xabcdef0012345678ull,
					  t.se->wr.rdma.remote_addr);
				EXPECT_EQ(0x77u, t.se->wr.rdma.rkey);
			} else if (op == SRX_WR_BIND_MW) {
				EXPECT_EQ(0x10000u, t.se->wr.bind.addr);
				EXPECT_EQ(0x2000u, t.se->wr.bind.length);
				EXPECT_EQ(0x4211u, t.se->wr.bind.mw_rkey);
				EXPECT_EQ(0x4212u, t.se->wr.bind.rkey);
				EXPECT_EQ(0x3305u, t.se->wr.bind.mr_lkey);
				EXPECT_EQ(0x6u, t.se->wr.bind.access);
			} else {
				EXPECT_EQ(0u, t.se->wr.atomic.remote_addr);
			}
		}
	}
	EXPECT_EQ(10u + 6 + 2 + 2, accepted);

	/* A mask that takes everything still refuses what a u64 cannot name. */
	all = limits(~0ull, 0);
	for (op = 64; op < 256; op++) {
		send_fill(&t, op);
		EXPECT_EQ(SRX_WQE_BAD_OPCODE, srx_send_hdr_check(swqe(&t), &all));
	}
	take_fini(&t);
}

TEST(num_sge_bounds)
{
	struct srx_wqe_limits lim = limits(rc_ops, 0);
	struct take t;
	unsigned int n, i;

	take_init(&t);
	for (n = 0; n < 256; n++) {
		u8 r;

		send_fill(&t, IBV_WR_SEND);
		swqe(&t)->num_sge = n;
		for (i = 0; i < n && i < MAX_SGE; i++) {
			ssge(&t)[i].addr = 0x10000 * (i + 1);
			ssge(&t)[i].length = i + 1;
			ssge(&t)[i].lkey = i;
		}
		r = srx_swqe_copy(t.se, t.slot, &lim);
		if (n <= MAX_SGE) {
			EXPECT_EQ(SRX_WQE_OK, r);
			EXPECT_EQ(n, t.se->num_sge);
			EXPECT_EQ((u64)n * (n + 1) / 2, t.se->length);
			for (i = 0; i < n; i++)
				EXPECT_EQ(0x10000ull * (i + 1), t.se->sge[i].addr);
		} else {
			EXPECT_EQ(SRX_WQE_BAD_NUM_SGE, r) TH_LOG("num_sge %u", n);
			EXPECT_EQ(0u, t.se->num_sge);
			EXPECT_EQ(0u, t.se->length);
		}
	}
	/* A smaller queue's own bound. */
	lim.max_sge = 3;
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->num_sge = 3;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &lim));
	swqe(&t)->num_sge = 4;
	EXPECT_EQ(SRX_WQE_BAD_NUM_SGE, srx_swqe_copy(t.se, t.slot, &lim));
	take_fini(&t);
}

TEST(inline_rules)
{
	struct srx_wqe_limits lim = limits(rc_ops, 0);
	struct take t;
	unsigned int op, len;

	take_init(&t);
	/* Only opcodes with a payload carry inline data. */
	for (op = 0; op < 64; op++) {
		bool payload = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
			       op == IBV_WR_SEND_WITH_INV ||
			       op == IBV_WR_RDMA_WRITE ||
			       op == IBV_WR_RDMA_WRITE_WITH_IMM;

		if (!(rc_ops & BIT64(op)))
			continue;
		send_fill(&t, op);
		swqe(&t)->num_sge = 0;
		swqe(&t)->send_flags = IBV_SEND_INLINE;
		swqe(&t)->inline_len = 4;
		EXPECT_EQ(payload ? SRX_WQE_OK : SRX_WQE_BAD_INLINE,
			  srx_swqe_copy(t.se, t.slot, &lim)) TH_LOG("opcode %u", op);
	}

	/* Lengths up to max_inline, byte for byte; one more is refused. */
	for (len = 0; len <= MAX_INLINE + 1; len += (len < 20 ? 1 : 61)) {
		u8 *data = t.slot + sizeof(struct srx_send_wqe);
		unsigned int i;
		u8 r;

		send_fill(&t, IBV_WR_RDMA_WRITE);
		swqe(&t)->num_sge = 0;
		swqe(&t)->send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
		swqe(&t)->inline_len = len;
		for (i = 0; i < MAX_INLINE && i < SLOT_SIZE - 64; i++)
			data[i] = (u8)(i * 7 + 1);
		r = srx_swqe_copy(t.se, t.slot, &lim);
		if (len <= MAX_INLINE) {
			EXPECT_EQ(SRX_WQE_OK, r) TH_LOG("inline_len %u", len);
			EXPECT_EQ(len, t.se->inline_len);
			EXPECT_EQ(len, t.se->length);
			EXPECT_EQ(0u, t.se->num_sge);
			EXPECT_EQ(0, memcmp(t.se->sge, data, len));
		} else {
			EXPECT_EQ(SRX_WQE_BAD_INLINE, r) TH_LOG("inline_len %u", len);
			EXPECT_EQ(0u, t.se->inline_len);
			EXPECT_EQ(0u, t.se->length);
		}
	}
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->num_sge = 0;
	swqe(&t)->send_flags = IBV_SEND_INLINE;
	swqe(&t)->inline_len = MAX_INLINE;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &lim));
	swqe(&t)->inline_len = 0xffffffffu;
	EXPECT_EQ(SRX_WQE_BAD_INLINE, srx_swqe_copy(t.se, t.slot, &lim));
	lim.max_inline = 0;	/* a queue created without inline room */
	swqe(&t)->inline_len = 1;
	EXPECT_EQ(SRX_WQE_BAD_INLINE, srx_swqe_copy(t.se, t.slot, &lim));
	lim.max_inline = MAX_INLINE;

	/* Inline data and SGEs together: malformed. */
	swqe(&t)->inline_len = 8;
	swqe(&t)->num_sge = 1;
	EXPECT_EQ(SRX_WQE_BAD_NUM_SGE, srx_swqe_copy(t.se, t.slot, &lim));
	/* inline_len without the flag: malformed too. */
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->inline_len = 8;
	EXPECT_EQ(SRX_WQE_BAD_INLINE, srx_swqe_copy(t.se, t.slot, &lim));
	take_fini(&t);
}

/*
 * RDMA ATOMIC WRITE on a QP that takes it: its 8 bytes inline (as
 * libsrx's wr_atomic_write() writes them) are taken with wr.rdma; any
 * other length is a local length error, an SGE instead of inline data is
 * malformed, and wr.rdma's reserved word must be zero.
 */
TEST(atomic_write_take)
{
	struct srx_wqe_limits lim = limits(rc_ops | BIT64(IBV_WR_ATOMIC_WRITE),
					   0);
	const u8 val[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	u8 *data;
	struct take t;
	unsigned int len;

	EXPECT_EQ(IBV_WR_ATOMIC_WRITE, SRX_WR_ATOMIC_WRITE);
	EXPECT_EQ(IBV_WC_ATOMIC_WRITE, SRX_WC_ATOMIC_WRITE);
	take_init(&t);
	data = t.slot + sizeof(struct srx_send_wqe);
	for (len = 0; len <= 16; len++) {
		u8 r;

		send_fill(&t, IBV_WR_ATOMIC_WRITE);
		fill_remote(&t, IBV_WR_ATOMIC_WRITE, 0);
		swqe(&t)->num_sge = 0;
		swqe(&t)->send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
		swqe(&t)->inline_len = len;
		memset(data, 0xee, 16);
		memcpy(data, val, 8);
		r = srx_swqe_copy(t.se, t.slot, &lim);
		if (len != 8) {
			EXPECT_EQ(SRX_WQE_ATOMIC_LEN, r) TH_LOG("len %u", len);
			EXPECT_EQ(0u, t.se->length);
			EXPECT_EQ(0u, t.se->inline_len);
			continue;
		}
		EXPECT_EQ(SRX_WQE_OK, r);
		EXPECT_EQ(8u, t.se->length);
		EXPECT_EQ(8u, t.se->inline_len);
		EXPECT_EQ(0, memcmp(t.se->sge, val, 8));
		EXPECT_EQ(0xabcdef0012345678ull, t.se->wr.rdma.remote_addr);
		EXPECT_EQ(0x77u, t.se->wr.rdma.rkey);
	}
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, srx_wqe_wc_status(SRX_WQE_ATOMIC_LEN));
	/* A UD WQE naming no AH of its PD (take.c), as rxe completes it. */
	EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, srx_wqe_wc_status(SRX_WQE_BAD_AH));

	/* An 8-byte SGE instead of the bytes themselves: malformed. */
	send_fill(&t, IBV_WR_ATOMIC_WRITE);
	fill_remote(&t, IBV_WR_ATOMIC_WRITE, 0);
	EXPECT_EQ(SRX_WQE_BAD_INLINE, srx_swqe_copy(t.se, t.slot, &lim));
	/* wr.rdma's reserved word carries no meaning yet. */
	send_fill(&t, IBV_WR_ATOMIC_WRITE);
	fill_remote(&t, IBV_WR_ATOMIC_WRITE, 0);
	swqe(&t)->num_sge = 0;
	swqe(&t)->send_flags = IBV_SEND_INLINE;
	swqe(&t)->inline_len = 8;
	swqe(&t)->wr.rdma.reserved = 1;
	EXPECT_EQ(SRX_WQE_RESERVED, srx_swqe_copy(t.se, t.slot, &lim));
	/* A READ or atomic resource each: it counts against the depth. */
	EXPECT_TRUE(srx_wqe_opcode_is_rd_atomic(IBV_WR_ATOMIC_WRITE));
	EXPECT_FALSE(srx_wqe_opcode_is_atomic(IBV_WR_ATOMIC_WRITE));
	/* Where the device does not report it, it is refused. */
	lim = limits(rc_ops, 0);
	swqe(&t)->wr.rdma.reserved = 0;
	EXPECT_EQ(SRX_WQE_BAD_OPCODE, srx_swqe_copy(t.se, t.slot, &lim));
	take_fini(&t);
}

TEST(send_flags_bits)
{
	struct srx_wqe_limits lim = limits(rc_ops, 0);
	struct take t;
	unsigned int bit;

	take_init(&t);
	for (bit = 0; bit < 16; bit++) {
		u16 f = 1u << bit;
		bool known = f & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
				  IBV_SEND_SOLICITED | IBV_SEND_INLINE);

		send_fill(&t, IBV_WR_SEND);
		if (f == IBV_SEND_INLINE) {
			swqe(&t)->num_sge = 0;
			swqe(&t)->inline_len = 1;
		}
		swqe(&t)->send_flags = f;
		EXPECT_EQ(known ? SRX_WQE_OK : SRX_WQE_BAD_FLAGS,
			  srx_swqe_copy(t.se, t.slot, &lim)) TH_LOG("bit %u", bit);
		EXPECT_EQ(f, t.se->send_flags);
	}
	/* IBV_SEND_IP_CSUM needs an offload srx does not report. */
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->send_flags = IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM;
	EXPECT_EQ(SRX_WQE_BAD_FLAGS, srx_swqe_copy(t.se, t.slot, &lim));
	take_fini(&t);
}

/* Each reserved word, alone, makes the WQE invalid; ignored fields do not. */
TEST(reserved_words)
{
	struct srx_wqe_limits rc = limits(rc_ops, 0), ud = limits(ud_ops, 1);
	struct take t;

	take_init(&t);
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->reserved0 = 1;
	EXPECT_EQ(SRX_WQE_RESERVED, srx_swqe_copy(t.se, t.slot, &rc));
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->reserved1 = 1ull << 63;
	EXPECT_EQ(SRX_WQE_RESERVED, srx_swqe_copy(t.se, t.slot, &rc));
	send_fill(&t, IBV_WR_RDMA_READ);
	swqe(&t)->wr.rdma.reserved = 1;
	EXPECT_EQ(SRX_WQE_RESERVED, srx_swqe_copy(t.se, t.slot, &rc));
	send_fill(&t, IBV_WR_ATOMIC_CMP_AND_SWP);
	swqe(&t)->wr.atomic.reserved = 0x80000000u;
	EXPECT_EQ(SRX_WQE_RESERVED, srx_swqe_copy(t.se, t.slot, &rc));
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->wr.ud.reserved = 2;
	EXPECT_EQ(SRX_WQE_RESERVED, srx_swqe_copy(t.se, t.slot, &ud));
	EXPECT_EQ(0u, t.se->num_sge);

	/* Not reserved where the opcode uses the word: an atomic's compare_add. */
	send_fill(&t, IBV_WR_ATOMIC_FETCH_AND_ADD);
	swqe(&t)->wr.rdma.reserved = 5;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &rc));
	/* Fields the opcode does not use are ignored: ex, a SEND's remote part. */
	send_fill(&t, IBV_WR_RDMA_WRITE);
	swqe(&t)->ex = 0xdeadbeef;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &rc));
	EXPECT_EQ(0xdeadbeefu, t.se->ex);
	send_fill(&t, IBV_WR_SEND);
	memset(&swqe(&t)->wr, 0xff, sizeof(swqe(&t)->wr));
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &rc));
	EXPECT_EQ(0u, t.se->wr.atomic.remote_addr);

	/* A receive's reserved word. */
	memset(t.slot, 0, SLOT_SIZE);
	rwqe(&t)->reserved = 1;
	EXPECT_EQ(SRX_WQE_RESERVED, srx_rwqe_copy(t.re, t.slot, &(struct srx_wqe_limits){ .max_sge = MAX_SGE }));
	take_fini(&t);
}

/* Lengths are summed in 64 bits: a 32-bit sum would wrap and pass. */
TEST(lengths_in_64_bits)
{
	struct srx_wqe_limits lim = limits(rc_ops, 0), rl = recv_limits();
	struct take t;
	unsigned int i;

	take_init(&t);
	send_fill(&t, IBV_WR_RDMA_WRITE);
	swqe(&t)->num_sge = MAX_SGE;
	for (i = 0; i < MAX_SGE; i++)
		ssge(&t)[i].length = 0xffffffffu;
	EXPECT_EQ(SRX_WQE_TOO_LONG, srx_swqe_copy(t.se, t.slot, &lim));
	EXPECT_EQ(0u, t.se->length);
	EXPECT_EQ(32 * 0xffffffffull, srx_sge_total(ssge(&t), MAX_SGE));
	/* 32 x (4 GiB - 1) plus 32 more bytes is 0 in 32 bits. */
	swqe(&t)->num_sge = MAX_SGE;
	ssge(&t)[0].length = 31;	/* 0xffffffff * 31 + 31 == 31 * 2^32 */
	for (i = 1; i < MAX_SGE; i++)
		ssge(&t)[i].length = 0xffffffffu;
	EXPECT_EQ(0u, (u32)srx_sge_total(ssge(&t), MAX_SGE));
	EXPECT_EQ(SRX_WQE_TOO_LONG, srx_swqe_copy(t.se, t.slot, &lim));

	/* 4 GiB - 1 plus 2 wraps to 1 in 32 bits. */
	send_fill(&t, IBV_WR_SEND);
	swqe(&t)->num_sge = 2;
	ssge(&t)[0].length = 0xffffffffu;
	ssge(&t)[1].length = 2;
	EXPECT_EQ(SRX_WQE_TOO_LONG, srx_swqe_copy(t.se, t.slot, &lim));

	/* Exactly max_msg passes, one byte more does not. */
	ssge(&t)[0].length = 0x3fffffffu;
	ssge(&t)[1].length = 1;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &lim));
	EXPECT_EQ(MAX_MSG, t.se->length);
	ssge(&t)[1].length = 2;
	EXPECT_EQ(SRX_WQE_TOO_LONG, srx_swqe_copy(t.se, t.slot, &lim));
	/* A datagram QP's tighter limit (the engine passes the path MTU's). */
	lim.max_msg = 4096;
	ssge(&t)[0].length = 4096;
	ssge(&t)[1].length = 0;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &lim));
	ssge(&t)[1].length = 1;
	EXPECT_EQ(SRX_WQE_TOO_LONG, srx_swqe_copy(t.se, t.slot, &lim));

	/* Atomics: exactly 8 bytes of local buffer. */
	lim.max_msg = MAX_MSG;
	for (i = 0; i <= 16; i++) {
		send_fill(&t, IBV_WR_ATOMIC_CMP_AND_SWP);
		ssge(&t)[0].length = i;
		EXPECT_EQ(i == 8 ? SRX_WQE_OK : SRX_WQE_ATOMIC_LEN,
			  srx_swqe_copy(t.se, t.slot, &lim)) TH_LOG("length %u", i);
	}
	send_fill(&t, IBV_WR_ATOMIC_FETCH_AND_ADD);
	swqe(&t)->num_sge = 2;
	ssge(&t)[0].length = 4;
	ssge(&t)[1].length = 4;
	EXPECT_EQ(SRX_WQE_OK, srx_swqe_copy(t.se, t.slot, &lim));

	/* A receive buffer may be larger than a message: kept, in 64 bits. */
	memset(t.slot, 0, SLOT_SIZE);
	rwqe(&t)->wr_id = 42;
	rwqe(&t)->num_sge = MAX_SGE;
	for (i = 0; i < MAX_SGE; i++)
		rsge(&t)[i].length = 0xffffffffu;
	EXPECT_EQ(SRX_WQE_OK, srx_rwqe_copy(t.re, t.slot, &rl));
	EXPECT_EQ(32 * 0xffffffffull, t.re->length);
	EXPECT_EQ(MAX_SGE, t.re->num_sge);
	EXPECT_EQ(42u, t.re->wr_id);
	take_fini(&t);
}

TEST(results_map_to_statuses)
{
	u8 r;

	EXPECT_EQ(IBV_WC_SUCCESS, srx_wqe_wc_status(SRX_WQE_OK));
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, srx_wqe_wc_status(SRX_WQE_TOO_LONG));
	EXPECT_EQ(IBV_WC_LOC_LEN_ERR, srx_wqe_wc_status(SRX_WQE_ATOMIC_LEN));
	for (r = SRX_WQE_BAD_OPCODE; r < SRX_WQE_TOO_LONG; r++)
		EXPECT_EQ(IBV_WC_LOC_QP_OP_ERR, srx_wqe_wc_status(r));
}

TEST(recv_num_sge_bounds)
{
	struct srx_wqe_limits rl = recv_limits();
	struct take t;
	unsigned int n, i;

	take_init(&t);
	for (n = 0; n < 300; n++) {
		u8 r;

		memset(t.slot, 0, SLOT_SIZE);
		rwqe(&t)->wr_id = n;
		rwqe(&t)->num_sge = n;
		for (i = 0; i < n && i < MAX_SGE; i++)
			rsge(&t)[i].length = 1000;
		r = srx_rwqe_copy(t.re, t.slot, &rl);
		EXPECT_EQ(n, t.re->wr_id);
		if (n <= MAX_SGE) {
			EXPECT_EQ(SRX_WQE_OK, r);
			EXPECT_EQ(n * 1000ull, t.re->length);
			EXPECT_EQ(n, t.re->num_sge);
		} else {
			EXPECT_EQ(SRX_WQE_BAD_NUM_SGE, r) TH_LOG("num_sge %u", n);
			EXPECT_EQ(0u, t.re->num_sge);
			EXPECT_EQ(0u, t.re->length);
		}
	}
	/* num_sge is 32 bits in a receive WQE: a high bit is no small count. */
	rwqe(&t)->num_sge = 0x80000001u;
	EXPECT_EQ(SRX_WQE_BAD_NUM_SGE, srx_rwqe_copy(t.re, t.slot, &rl));
	take_fini(&t);
}

/* The take's bound: never a slot whose WQE is still taken. */
TEST(take_bound)
{
	static const u32 bases[] = { 0, 5, 0x7ffffffcu, 0xfffffff0u };
	const u32 e = 16;
	unsigned int b;

	for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
		u32 done = bases[b], busy, fill;

		for (busy = 0; busy <= e; busy++) {
			u32 cons = done + busy;

			for (fill = 0; fill <= 2 * e + 1; fill++) {
				u32 prod = done + fill;
				bool honest = fill <= e && fill >= busy;

				EXPECT_EQ(honest, srx_ring_take_ok(prod, cons, done, e));
				EXPECT_EQ(honest ? fill - busy : 0u,
					  srx_ring_takeable(prod, cons, done, e))
					TH_LOG("done %#x busy %u fill %u", done, busy, fill);
			}
			/* A producer behind the consumer, or far behind done. */
			EXPECT_EQ(0u, srx_ring_takeable(done - 1, cons, done, e));
			EXPECT_EQ(0u, srx_ring_takeable(done - 0x40000000u, cons, done, e));
			EXPECT_EQ(0u, srx_ring_takeable(done + 0x80000000u, cons, done, e));
		}
		/* With nothing in flight it is srx_ring_avail(). */
		for (fill = 0; fill <= 2 * e; fill++)
			EXPECT_EQ(srx_ring_avail(done + fill, done, e),
				  srx_ring_takeable(done + fill, done, done, e));
	}
}

/* ------------------------------------------------------------------ */
/* A hostile writer                                                   */
/* ------------------------------------------------------------------ */

#define HOSTILE_NS (1500ull * 1000000)
#define HOSTILE_MIN_TAKES 20000u

struct hostile {
	u8 *slot;
	_Atomic bool stop;
	_Atomic unsigned long writes;
	bool recv;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static u32 xorshift(u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (u32)*s;
}

/*
 * Rewrite the slot without pause, each store alone (volatile). Each round
 * writes one of three WQEs field by field: SGEs, inline, or one whose
 * num_sge or inline_len would overrun the entry; a reader therefore meets
 * every mix of the three, valid and not. SGE lengths change too, among
 * them 4 GiB - 1 (too long in any sum that does not wrap).
 */
static void *hostile_writer(void *arg)
{
	struct hostile *h = arg;
	volatile u8 *slot = h->slot;
	u64 seed = 0x9e3779b97f4a7c15ull;

	while (!atomic_load_explicit(&h->stop, memory_order_relaxed)) {
		u32 r = xorshift(&seed), kind = r % 3;

		if (h->recv) {
			volatile struct srx_recv_wqe *w = (void *)slot;
			volatile struct srx_sge *sge = (void *)(slot + sizeof(*w));

			w->wr_id = r;
			sge[(r >> 16) % MAX_SGE].length =
				r & 4 ? 0xffffffffu : r >> 20;
			sge[0].length = r >> 24;
			sge[1].length = r & 0xfff;
			w->num_sge = kind ? (r >> 8) % (MAX_SGE + 1) :
				     (r & 8 ? 0xffffffffu : MAX_SGE + 1);
			w->reserved = (r & 0x70) == 0x70;
		} else {
			volatile struct srx_send_wqe *w = (void *)slot;
			volatile struct srx_sge *sge = (void *)(slot + sizeof(*w));

			w->wr_id = r;
			w->opcode = r & 8 ? IBV_WR_RDMA_WRITE :
				    (r & 16 ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					      IBV_WR_SEND);
			sge[(r >> 16) % MAX_SGE].length =
				r & 32 ? 0xffffffffu : (r & 64 ? 8 : r >> 22);
			/* The first SGEs, which most WQEs have, every time. */
			sge[0].length = r >> 24;
			sge[1].length = r & 0xfff;
			w->reserved0 = (r & 0x700) == 0x700;
			switch (kind) {
			case 0:		/* SGEs */
				w->send_flags = IBV_SEND_SIGNALED;
				w->inline_len = 0;
				w->num_sge = (r >> 8) % (MAX_SGE + 1);
				break;
			case 1:		/* inline */
				w->send_flags = IBV_SEND_INLINE;
				w->num_sge = 0;
				w->inline_len = (r >> 12) % (MAX_INLINE + 1);
				break;
			default:	/* past the entry's end */
				w->num_sge = 0xff;
				w->inline_len = r & 128 ? 0x7fffffffu :
						MAX_INLINE + 1;
				break;
			}
		}
		atomic_fetch_add_explicit(&h->writes, 1, memory_order_relaxed);
	}
	return NULL;
}

/* An accepted send entry passes the checks again from its own fields. */
static bool swqe_consistent(const struct srx_swqe *e,
			    const struct srx_wqe_limits *lim, const char **why)
{
	struct srx_send_wqe h = {
		.wr_id = e->wr_id, .opcode = e->opcode,
		.num_sge = (u8)e->num_sge, .send_flags = e->send_flags,
		.ex = e->ex, .inline_len = e->inline_len,
	};

	if (e->result != SRX_WQE_OK) {
		*why = "a refused entry carries something";
		return !e->num_sge && !e->inline_len && !e->length;
	}
	*why = "num_sge past max_sge";
	if (e->num_sge > lim->max_sge)
		return false;
	*why = "accepted entry fails its own checks";
	if (srx_send_hdr_check(&h, lim) != SRX_WQE_OK ||
	    srx_send_len_check(e->opcode, e->length, lim) != SRX_WQE_OK)
		return false;
	*why = "length is not its own SGEs' or inline bytes'";
	if (e->send_flags & SRX_SEND_INLINE)
		return e->num_sge == 0 && e->length == e->inline_len;
	return e->inline_len == 0 &&
	       e->length == srx_sge_total(e->sge, e->num_sge);
}

static bool rwqe_consistent(const struct srx_rwqe *e,
			    const struct srx_wqe_limits *lim, const char **why)
{
	if (e->result != SRX_WQE_OK) {
		*why = "a refused entry carries something";
		return !e->num_sge && !e->length;
	}
	*why = "num_sge past max_sge, or length not its own SGEs'";
	return e->num_sge <= lim->max_sge &&
	       e->length == srx_sge_total(e->sge, e->num_sge);
}

static void hostile_run(struct __test_metadata *_metadata, bool recv)
{
	struct srx_wqe_limits lim = recv ? recv_limits() :
					   limits(rc_ops, 0);
	struct hostile h = { .recv = recv };
	unsigned long takes = 0, ok = 0, bad = 0;
	const char *why = NULL;
	struct take t;
	pthread_t w;
	uint64_t end;

	take_init(&t);
	h.slot = t.slot;
	ASSERT_EQ(0, pthread_create(&w, NULL, hostile_writer, &h));
	end = now_ns() + HOSTILE_NS;
	while (now_ns() < end || takes < HOSTILE_MIN_TAKES) {
		bool good;
		u8 r;

		if (recv) {
			r = srx_rwqe_copy(t.re, t.slot, &lim);
			good = r == t.re->result &&
			       rwqe_consistent(t.re, &lim, &why);
		} else {
			r = srx_swqe_copy(t.se, t.slot, &lim);
			good = r == t.se->result &&
			       swqe_consistent(t.se, &lim, &why);
		}
		takes++;
		if (!good) {
			bad++;
			break;
		}
		ok += r == SRX_WQE_OK;
	}
	atomic_store(&h.stop, true);
	pthread_join(w, NULL);
	TH_LOG("%lu takes (%lu accepted) against %lu rewrites", takes, ok,
	       (unsigned long)atomic_load(&h.writes));
	EXPECT_EQ(0u, bad) TH_LOG("take %lu: %s", takes, why);
	/* The race ran both ways: entries accepted and refused, many rewrites. */
	EXPECT_LT(0u, ok);
	EXPECT_LT(ok, takes);
	EXPECT_LT(1000u, (unsigned long)atomic_load(&h.writes));
	take_fini(&t);
}

TEST(hostile_writer_send)
{
	hostile_run(_metadata, false);
}

TEST(hostile_writer_recv)
{
	hostile_run(_metadata, true);
}

TEST_HARNESS_MAIN
