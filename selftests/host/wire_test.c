// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wire_test.c - srx's RoCE v2 packet-format layer on the host.
 *
 * kernel/roce_opcode.c (the opcode table), kernel/roce_pkt.c (parser and
 * header builder), kernel/roce_hdr.h and kernel/psn.h are compiled here
 * unchanged, with wire_host.h standing in for the kernel's types.
 *
 * What is checked, each against a statement of this file's own rather
 * than the code's computation:
 *  - the table, opcode by opcode: name, QP type, flags, extension headers
 *    in order with their byte offsets and the header length, all typed out
 *    below from Linux 6.1's rxe_opcode.c (6.12's for FLUSH and
 *    ATOMIC_WRITE); the opcodes of each QP type; every other opcode absent;
 *  - header sizes and field offsets, the RNR timer table against the names
 *    of ib_verbs.h's enum ib_rnr_timeout;
 *  - every accessor against the bit positions of the IBTA figures;
 *  - parsing a packet of every opcode whose bytes this file writes one by
 *    one, at several payload lengths; the builder producing those same
 *    bytes; building twice over different garbage giving the same bytes;
 *  - every truncation of every such packet, with the error each length
 *    must give; pad and payload rules, TVer, P_Key (all 65536, against
 *    rxe's pkey_match()), QPN 0, unknown opcodes and CNP;
 *  - PSN and MSN arithmetic at the wrap, at half the space, and windows
 *    across the wrap;
 *  - a deterministic fuzz loop (wire_check.h says what holds for every
 *    input), each input in a buffer of its exact length under ASan/UBSan.
 */
#include "wire_host.h"

#include "roce_opcode.c"	/* kernel/roce_opcode.c */
#include "roce_pkt.c"		/* kernel/roce_pkt.c */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "wire_check.h"
#include "rng.h"
#include "kselftest_harness.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------
 * The table, stated independently: from rxe_opcode.c's .offset[] and
 * .length of each entry, written out as numbers.
 */
#define REQ	SRX_ROCE_F_REQ
#define RESP	SRX_ROCE_F_RESP
#define ACKF	SRX_ROCE_F_ACK
#define FIRST	SRX_ROCE_F_FIRST
#define MIDDLE	SRX_ROCE_F_MIDDLE
#define LAST	SRX_ROCE_F_LAST
#define ONLY	(SRX_ROCE_F_FIRST | SRX_ROCE_F_LAST)
#define PAY	SRX_ROCE_F_PAYLOAD
#define IMM	SRX_ROCE_F_IMM
#define INV	SRX_ROCE_F_INV
#define ANS	SRX_ROCE_F_ANSWERED
#define SEND	SRX_ROCE_F_SEND
#define WRITE	SRX_ROCE_F_WRITE
#define READ	SRX_ROCE_F_READ
#define ATOMIC	SRX_ROCE_F_ATOMIC
#define FLUSH	SRX_ROCE_F_FLUSH
#define AWRITE	SRX_ROCE_F_ATOMIC_WRITE

enum { RC = SRX_ROCE_QPT_RC, UC = SRX_ROCE_QPT_UC, UD = SRX_ROCE_QPT_UD };

struct want_ext {
	u8 hdr;
	u8 off;
};

struct want_op {
	u8 opcode;
	const char *name;
	u8 qpt;
	u32 flags;
	struct want_ext ext[2];	/* in wire order; hdr 0 ends */
	u8 hdr_len;
};

#define E(h, o) { SRX_ROCE_##h, o }

static const struct want_op want_ops[] = {
	{ 0x00, "RC_SEND_FIRST", RC, REQ | SEND | FIRST | PAY, {}, 12 },
	{ 0x01, "RC_SEND_MIDDLE", RC, REQ | SEND | MIDDLE | PAY, {}, 12 },
	{ 0x02, "RC_SEND_LAST", RC, REQ | SEND | LAST | PAY, {}, 12 },
	{ 0x03, "RC_SEND_LAST_IMM", RC, REQ | SEND | LAST | PAY | IMM,
	  { E(IMMDT, 12) }, 16 },
	{ 0x04, "RC_SEND_ONLY", RC, REQ | SEND | ONLY | PAY, {}, 12 },
	{ 0x05, "RC_SEND_ONLY_IMM", RC, REQ | SEND | ONLY | PAY | IMM,
	  { E(IMMDT, 12) }, 16 },
	{ 0x06, "RC_WRITE_FIRST", RC, REQ | WRITE | FIRST | PAY,
	  { E(RETH, 12) }, 28 },
	{ 0x07, "RC_WRITE_MIDDLE", RC, REQ | WRITE | MIDDLE | PAY, {}, 12 },
	{ 0x08, "RC_WRITE_LAST", RC, REQ | WRITE | LAST | PAY, {}, 12 },
	{ 0x09, "RC_WRITE_LAST_IMM", RC, REQ | WRITE | LAST | PAY | IMM,
	  { E(IMMDT, 12) }, 16 },
	{ 0x0a, "RC_WRITE_ONLY", RC, REQ | WRITE | ONLY | PAY,
	  { E(RETH, 12) }, 28 },
	{ 0x0b, "RC_WRITE_ONLY_IMM", RC, REQ | WRITE | ONLY | PAY | IMM,
	  { E(RETH, 12), E(IMMDT, 28) }, 32 },
	{ 0x0c, "RC_READ_REQ", RC, REQ | READ | ONLY | ANS,
	  { E(RETH, 12) }, 28 },
	{ 0x0d, "RC_READ_RESP_FIRST", RC, RESP | FIRST | PAY,
	  { E(AETH, 12) }, 16 },
	{ 0x0e, "RC_READ_RESP_MIDDLE", RC, RESP | MIDDLE | PAY, {}, 12 },
	{ 0x0f, "RC_READ_RESP_LAST", RC, RESP | LAST | PAY,
	  { E(AETH, 12) }, 16 },
	{ 0x10, "RC_READ_RESP_ONLY", RC, RESP | ONLY | PAY,
	  { E(AETH, 12) }, 16 },
	{ 0x11, "RC_ACK", RC, ACKF | ONLY, { E(AETH, 12) }, 16 },
	{ 0x12, "RC_ATOMIC_ACK", RC, ACKF | ONLY,
	  { E(AETH, 12), E(ATMACK, 16) }, 24 },
	{ 0x13, "RC_CMP_SWAP", RC, REQ | ATOMIC | ONLY | ANS,
	  { E(ATMETH, 12) }, 40 },
	{ 0x14, "RC_FETCH_ADD", RC, REQ | ATOMIC | ONLY | ANS,
	  { E(ATMETH, 12) }, 40 },
	{ 0x16, "RC_SEND_LAST_INV", RC, REQ | SEND | LAST | PAY | INV,
	  { E(IETH, 12) }, 16 },
	{ 0x17, "RC_SEND_ONLY_INV", RC, REQ | SEND | ONLY | PAY | INV,
	  { E(IETH, 12) }, 16 },
	{ 0x1c, "RC_FLUSH", RC, REQ | FLUSH | ONLY | ANS,
	  { E(FETH, 12), E(RETH, 16) }, 32 },
	{ 0x1d, "RC_ATOMIC_WRITE", RC, REQ | AWRITE | ONLY | PAY | ANS,
	  { E(RETH, 12) }, 28 },

	{ 0x20, "UC_SEND_FIRST", UC, REQ | SEND | FIRST | PAY, {}, 12 },
	{ 0x21, "UC_SEND_MIDDLE", UC, REQ | SEND | MIDDLE | PAY, {}, 12 },
	{ 0x22, "UC_SEND_LAST", UC, REQ | SEND | LAST | PAY, {}, 12 },
	{ 0x23, "UC_SEND_LAST_IMM", UC, REQ | SEND | LAST | PAY | IMM,
	  { E(IMMDT, 12) }, 16 },
	{ 0x24, "UC_SEND_ONLY", UC, REQ | SEND | ONLY | PAY, {}, 12 },
	{ 0x25, "UC_SEND_ONLY_IMM", UC, REQ | SEND | ONLY | PAY | IMM,
	  { E(IMMDT, 12) }, 16 },
	{ 0x26, "UC_WRITE_FIRST", UC, REQ | WRITE | FIRST | PAY,
	  { E(RETH, 12) }, 28 },
	{ 0x27, "UC_WRITE_MIDDLE", UC, REQ | WRITE | MIDDLE | PAY, {}, 12 },
	{ 0x28, "UC_WRITE_LAST", UC, REQ | WRITE | LAST | PAY, {}, 12 },
	{ 0x29, "UC_WRITE_LAST_IMM", UC, REQ | WRITE | LAST | PAY | IMM,
	  { E(IMMDT, 12) }, 16 },
	{ 0x2a, "UC_WRITE_ONLY", UC, REQ | WRITE | ONLY | PAY,
	  { E(RETH, 12) }, 28 },
	{ 0x2b, "UC_WRITE_ONLY_IMM", UC, REQ | WRITE | ONLY | PAY | IMM,
	  { E(RETH, 12), E(IMMDT, 28) }, 32 },

	{ 0x64, "UD_SEND_ONLY", UD, REQ | SEND | ONLY | PAY,
	  { E(DETH, 12) }, 20 },
	{ 0x65, "UD_SEND_ONLY_IMM", UD, REQ | SEND | ONLY | PAY | IMM,
	  { E(DETH, 12), E(IMMDT, 20) }, 24 },
};

static const struct want_op *want_op(unsigned int opcode)
{
	for (size_t i = 0; i < ARRAY_LEN(want_ops); i++)
		if (want_ops[i].opcode == opcode)
			return &want_ops[i];
	return NULL;
}

/* Offset of header @h in @w's statement, 0 if it carries none. */
static u8 want_off(const struct want_op *w, u8 h)
{
	for (int i = 0; i < 2 && w->ext[i].hdr; i++)
		if (w->ext[i].hdr == h)
			return w->ext[i].off;
	return 0;
}

TEST(table_matches_the_statement_opcode_by_opcode)
{
	unsigned int known = 0;

	for (unsigned int c = 0; c < 256; c++) {
		const struct srx_roce_opcode *op = srx_roce_opcode(c);
		const struct want_op *w = want_op(c);

		if (!w) {
			static const struct srx_roce_opcode zero;

			EXPECT_EQ(NULL, op) TH_LOG("opcode 0x%02x", c);
			EXPECT_EQ(0, memcmp(&srx_roce_opcodes[c], &zero,
					    sizeof(zero)))
				TH_LOG("opcode 0x%02x: entry not empty", c);
			continue;
		}
		known++;
		ASSERT_NE(NULL, op) TH_LOG("opcode 0x%02x (%s)", c, w->name);
		EXPECT_STREQ(w->name, op->name);
		EXPECT_EQ(w->qpt, op->qpt) TH_LOG("%s", w->name);
		EXPECT_EQ(w->flags, op->flags) TH_LOG("%s: 0x%x", w->name,
						      op->flags);
		EXPECT_EQ(w->hdr_len, op->hdr_len) TH_LOG("%s", w->name);
		for (int i = 0; i < SRX_ROCE_EXT_MAX; i++) {
			EXPECT_EQ(w->ext[i].hdr, op->ext[i])
				TH_LOG("%s: header %d", w->name, i);
		}
		for (u8 h = 1; h < SRX_ROCE_HDR_COUNT; h++) {
			EXPECT_EQ(want_off(w, h), op->off[h])
				TH_LOG("%s: offset of header %u", w->name, h);
		}
		EXPECT_EQ(0, op->off[SRX_ROCE_HDR_NONE]);
	}
	EXPECT_EQ(ARRAY_LEN(want_ops), known);
}

/* The opcodes of each transport, as ROCE.md and ib_pack.h list them. */
TEST(table_opcodes_of_each_qp_type)
{
	static const u8 rc[] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09,
		0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13,
		0x14, 0x16, 0x17, 0x1c, 0x1d,
	};
	static const u8 uc[] = {
		0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29,
		0x2a, 0x2b,
	};
	static const u8 ud[] = { 0x64, 0x65 };
	unsigned int n[4] = { 0 };

	for (size_t i = 0; i < ARRAY_LEN(rc); i++) {
		EXPECT_EQ(RC, srx_roce_opcode(rc[i])->qpt);
	}
	for (size_t i = 0; i < ARRAY_LEN(uc); i++) {
		EXPECT_EQ(UC, srx_roce_opcode(uc[i])->qpt);
	}
	for (size_t i = 0; i < ARRAY_LEN(ud); i++) {
		EXPECT_EQ(UD, srx_roce_opcode(ud[i])->qpt);
	}
	for (unsigned int c = 0; c < 256; c++) {
		const struct srx_roce_opcode *op = srx_roce_opcode(c);

		if (!op)
			continue;
		ASSERT_LT(op->qpt, 4);
		n[op->qpt]++;
		/* The transport is the opcode's top three bits. */
		EXPECT_EQ(op->qpt == RC ? 0x00u : op->qpt == UC ? 0x20u : 0x60u,
			  c & 0xe0);
	}
	EXPECT_EQ(0u, n[0]);
	EXPECT_EQ(ARRAY_LEN(rc), n[RC]);
	EXPECT_EQ(ARRAY_LEN(uc), n[UC]);
	EXPECT_EQ(ARRAY_LEN(ud), n[UD]);
	/* Reserved RC opcodes, RD, CNP and the manufacturer range: absent. */
	EXPECT_EQ(NULL, srx_roce_opcode(0x15));
	for (unsigned int c = 0x18; c <= 0x1b; c++) {
		EXPECT_EQ(NULL, srx_roce_opcode(c));
	}
	for (unsigned int c = 0x1e; c <= 0x1f; c++) {
		EXPECT_EQ(NULL, srx_roce_opcode(c));
	}
	for (unsigned int c = 0x40; c < 0x60; c++) {
		EXPECT_EQ(NULL, srx_roce_opcode(c));
	}
	EXPECT_EQ(NULL, srx_roce_opcode(0x60));
	EXPECT_EQ(NULL, srx_roce_opcode(SRX_ROCE_CNP));
	EXPECT_EQ(NULL, srx_roce_opcode(0xe0));
	EXPECT_EQ(NULL, srx_roce_opcode(0xff));
}

/* Rules every entry follows, whatever its opcode. */
TEST(table_flags_are_consistent)
{
	for (unsigned int c = 0; c < 256; c++) {
		const struct srx_roce_opcode *op = srx_roce_opcode(c);
		u32 f, kind, pos;

		if (!op)
			continue;
		f = op->flags;
		kind = f & (REQ | RESP | ACKF);
		EXPECT_TRUE(kind == REQ || kind == RESP || kind == ACKF)
			TH_LOG("%s", op->name);
		pos = f & (FIRST | MIDDLE | LAST);
		EXPECT_TRUE(pos == FIRST || pos == MIDDLE || pos == LAST ||
			    pos == ONLY) TH_LOG("%s", op->name);
		/* Requests have one operation, others none. */
		u32 ops = f & (SEND | WRITE | READ | ATOMIC | FLUSH | AWRITE);

		if (kind == REQ) {
			EXPECT_TRUE(ops && !(ops & (ops - 1)))
				TH_LOG("%s", op->name);
		} else {
			EXPECT_EQ(0u, ops) TH_LOG("%s", op->name);
		}
		EXPECT_EQ(!!(f & IMM), !!op->off[SRX_ROCE_IMMDT]);
		EXPECT_EQ(!!(f & INV), !!op->off[SRX_ROCE_IETH]);
		EXPECT_EQ(op->qpt == UD, !!op->off[SRX_ROCE_DETH]);
		EXPECT_EQ(kind != REQ && (pos & FIRST || pos & LAST),
			  !!op->off[SRX_ROCE_AETH]) TH_LOG("%s", op->name);
		/* Answered: exactly READ, the atomics, FLUSH, ATOMIC_WRITE. */
		EXPECT_EQ(!!(f & ANS),
			  !!(ops & (READ | ATOMIC | FLUSH | AWRITE)));
		EXPECT_LE(op->hdr_len, SRX_ROCE_HDR_MAX);
		EXPECT_EQ(0, op->hdr_len % 4);
	}
}

TEST(header_sizes_and_field_offsets)
{
	EXPECT_EQ(12u, sizeof(struct srx_bth));
	EXPECT_EQ(16u, sizeof(struct srx_reth));
	EXPECT_EQ(4u, sizeof(struct srx_aeth));
	EXPECT_EQ(28u, sizeof(struct srx_atmeth));
	EXPECT_EQ(8u, sizeof(struct srx_atmack));
	EXPECT_EQ(4u, sizeof(struct srx_immdt));
	EXPECT_EQ(4u, sizeof(struct srx_ieth));
	EXPECT_EQ(8u, sizeof(struct srx_deth));
	EXPECT_EQ(4u, sizeof(struct srx_feth));
	EXPECT_EQ(16u, srx_roce_hdr_bytes(SRX_ROCE_RETH));
	EXPECT_EQ(4u, srx_roce_hdr_bytes(SRX_ROCE_AETH));
	EXPECT_EQ(28u, srx_roce_hdr_bytes(SRX_ROCE_ATMETH));
	EXPECT_EQ(8u, srx_roce_hdr_bytes(SRX_ROCE_ATMACK));
	EXPECT_EQ(4u, srx_roce_hdr_bytes(SRX_ROCE_IMMDT));
	EXPECT_EQ(4u, srx_roce_hdr_bytes(SRX_ROCE_IETH));
	EXPECT_EQ(8u, srx_roce_hdr_bytes(SRX_ROCE_DETH));
	EXPECT_EQ(4u, srx_roce_hdr_bytes(SRX_ROCE_FETH));
	EXPECT_EQ(0u, srx_roce_hdr_bytes(SRX_ROCE_HDR_NONE));
	EXPECT_EQ(2u, offsetof(struct srx_bth, pkey));
	EXPECT_EQ(4u, offsetof(struct srx_bth, qpn));
	EXPECT_EQ(8u, offsetof(struct srx_bth, apsn));
	EXPECT_EQ(8u, offsetof(struct srx_reth, rkey));
	EXPECT_EQ(12u, offsetof(struct srx_reth, len));
	EXPECT_EQ(8u, offsetof(struct srx_atmeth, rkey));
	EXPECT_EQ(12u, offsetof(struct srx_atmeth, swap_add));
	EXPECT_EQ(20u, offsetof(struct srx_atmeth, cmp));
	EXPECT_EQ(4u, offsetof(struct srx_deth, sqp));
	EXPECT_EQ(40, SRX_ROCE_HDR_MAX);
	EXPECT_EQ(4791, SRX_ROCE_UDP_PORT);
	/* Every opcode value the brief and ib_pack.h name. */
	EXPECT_EQ(0x16, SRX_ROCE_RC_SEND_LAST_INV);
	EXPECT_EQ(0x17, SRX_ROCE_RC_SEND_ONLY_INV);
	EXPECT_EQ(0x1c, SRX_ROCE_RC_FLUSH);
	EXPECT_EQ(0x1d, SRX_ROCE_RC_ATOMIC_WRITE);
	EXPECT_EQ(0x2b, SRX_ROCE_UC_WRITE_ONLY_IMM);
	EXPECT_EQ(0x64, SRX_ROCE_UD_SEND_ONLY);
	EXPECT_EQ(0x65, SRX_ROCE_UD_SEND_ONLY_IMM);
	EXPECT_EQ(0x81, SRX_ROCE_CNP);
}

/*
 * The RNR timer, from the names of ib_verbs.h's enum ib_rnr_timeout,
 * IB_RNR_TIMER_<milliseconds>_<hundredths>, code by code.
 */
TEST(rnr_timer_table_follows_the_ib_verbs_names)
{
	static const char *const names[32] = {
		"655_36", "000_01", "000_02", "000_03", "000_04", "000_06",
		"000_08", "000_12", "000_16", "000_24", "000_32", "000_48",
		"000_64", "000_96", "001_28", "001_92", "002_56", "003_84",
		"005_12", "007_68", "010_24", "015_36", "020_48", "030_72",
		"040_96", "061_44", "081_92", "122_88", "163_84", "245_76",
		"327_68", "491_52",
	};

	for (int i = 0; i < 32; i++) {
		unsigned int ms, hundredths;

		ASSERT_EQ(2, sscanf(names[i], "%u_%u", &ms, &hundredths));
		EXPECT_EQ(ms * 1000 + hundredths * 10, srx_rnr_timer_usec[i])
			TH_LOG("code %d", i);
	}
	/* rxe_comp.c's 61410 for code 25 is a typo. */
	EXPECT_EQ(61440u, srx_rnr_timer_usec[25]);
}

/* ------------------------------------------------------------------------
 * Accessors, against the bit positions of the IBTA figures.
 */
TEST(bth_accessors_place_each_field)
{
	u8 b[12];
	struct srx_bth *bth = (struct srx_bth *)b;

	memset(b, 0, sizeof(b));
	srx_bth_set_opcode(bth, 0xa5);
	srx_bth_set_se(bth, true);
	srx_bth_set_mig(bth, true);
	srx_bth_set_pad(bth, 3);
	srx_bth_set_tver(bth, 0xf);
	srx_bth_set_pkey(bth, 0x1234);
	srx_bth_set_fecn(bth, true);
	srx_bth_set_becn(bth, true);
	srx_bth_set_qpn(bth, 0xabcdef);
	srx_bth_set_ackreq(bth, true);
	srx_bth_set_psn(bth, 0x123456);
	{
		static const u8 want[12] = {
			0xa5, 0xff, 0x12, 0x34, 0xc0, 0xab, 0xcd, 0xef,
			0x80, 0x12, 0x34, 0x56,
		};

		EXPECT_EQ(0, memcmp(b, want, 12));
	}
	EXPECT_EQ(0xa5, srx_bth_opcode(bth));
	EXPECT_TRUE(srx_bth_se(bth));
	EXPECT_TRUE(srx_bth_mig(bth));
	EXPECT_EQ(3, srx_bth_pad(bth));
	EXPECT_EQ(0xf, srx_bth_tver(bth));
	EXPECT_EQ(0x1234, srx_bth_pkey(bth));
	EXPECT_TRUE(srx_bth_fecn(bth));
	EXPECT_TRUE(srx_bth_becn(bth));
	EXPECT_EQ(0xabcdefu, srx_bth_qpn(bth));
	EXPECT_TRUE(srx_bth_ackreq(bth));
	EXPECT_EQ(0x123456u, srx_bth_psn(bth));

	/* Clearing one field leaves every other bit alone. */
	srx_bth_set_se(bth, false);
	EXPECT_EQ(0x7f, b[1]);
	srx_bth_set_pad(bth, 0);
	EXPECT_EQ(0x4f, b[1]);
	srx_bth_set_mig(bth, false);
	EXPECT_EQ(0x0f, b[1]);
	srx_bth_set_tver(bth, 0);
	EXPECT_EQ(0x00, b[1]);
	srx_bth_set_fecn(bth, false);
	EXPECT_EQ(0x40, b[4]);
	srx_bth_set_becn(bth, false);
	EXPECT_EQ(0x00, b[4]);
	EXPECT_EQ(0xabcdefu, srx_bth_qpn(bth));
	srx_bth_set_ackreq(bth, false);
	EXPECT_EQ(0x00, b[8]);
	EXPECT_EQ(0x123456u, srx_bth_psn(bth));
	/* 24-bit fields drop what does not fit, keep the bits above. */
	srx_bth_set_fecn(bth, true);
	srx_bth_set_qpn(bth, 0xff000001);
	EXPECT_EQ(0x80, b[4]);
	EXPECT_EQ(1u, srx_bth_qpn(bth));
	srx_bth_set_ackreq(bth, true);
	srx_bth_set_psn(bth, 0xffffffff);
	EXPECT_EQ(0x80, b[8]);
	EXPECT_EQ(0xffffffu, srx_bth_psn(bth));
	srx_bth_set_psn(bth, 0x1000000);
	EXPECT_EQ(0u, srx_bth_psn(bth));
	EXPECT_TRUE(srx_bth_ackreq(bth));
}

TEST(aeth_syndromes_and_msn)
{
	u8 b[4];
	struct srx_aeth *aeth = (struct srx_aeth *)b;

	srx_aeth_set(aeth, srx_aeth_syn_nak(SRX_AETH_NAK_REM_ACCESS), 0xfedcba);
	EXPECT_EQ(0x62, b[0]);
	EXPECT_EQ(0xfe, b[1]);
	EXPECT_EQ(0xba, b[3]);
	EXPECT_EQ(SRX_AETH_TYPE_NAK, srx_aeth_type(aeth));
	EXPECT_EQ(SRX_AETH_NAK_REM_ACCESS, srx_aeth_value(aeth));
	EXPECT_EQ(SRX_AETH_NAK_REM_ACCESS, srx_aeth_nak_code(aeth));
	EXPECT_EQ(0xfedcbau, srx_aeth_msn(aeth));

	srx_aeth_set_syndrome(aeth, srx_aeth_syn_ack(SRX_AETH_CREDITS_UNLIMITED));
	EXPECT_EQ(0x1f, b[0]);
	EXPECT_EQ(SRX_AETH_TYPE_ACK, srx_aeth_type(aeth));
	EXPECT_EQ(0x1f, srx_aeth_value(aeth));
	EXPECT_EQ(0x1f, srx_aeth_credits(aeth));
	EXPECT_EQ(0xfedcbau, srx_aeth_msn(aeth));

	srx_aeth_set_syndrome(aeth, srx_aeth_syn_rnr_nak(25));
	EXPECT_EQ(0x39, b[0]);
	EXPECT_EQ(SRX_AETH_TYPE_RNR_NAK, srx_aeth_type(aeth));
	EXPECT_EQ(25, srx_aeth_rnr_timer(aeth));
	EXPECT_EQ(61440u, srx_rnr_timer_usec[srx_aeth_rnr_timer(aeth)]);

	srx_aeth_set_msn(aeth, 0x1000001);
	EXPECT_EQ(0x39, b[0]);
	EXPECT_EQ(1u, srx_aeth_msn(aeth));
	/* The NAK codes of IBTA table 43 / rxe's AETH_NAK_*. */
	EXPECT_EQ(0x60, srx_aeth_syn_nak(SRX_AETH_NAK_PSN_SEQ));
	EXPECT_EQ(0x61, srx_aeth_syn_nak(SRX_AETH_NAK_INV_REQ));
	EXPECT_EQ(0x63, srx_aeth_syn_nak(SRX_AETH_NAK_REM_OP));
	EXPECT_EQ(0x64, srx_aeth_syn_nak(SRX_AETH_NAK_INV_RD_REQ));
}

TEST(extension_header_accessors)
{
	u8 b[28];

	memset(b, 0xff, sizeof(b));
	srx_deth_set_qkey((struct srx_deth *)b, 0x80010000);
	srx_deth_set_sqp((struct srx_deth *)b, 0xff123456);
	{
		static const u8 want[8] = { 0x80, 0x01, 0, 0, 0, 0x12, 0x34,
					    0x56 };
		EXPECT_EQ(0, memcmp(b, want, 8));
	}
	EXPECT_EQ(0x123456u, srx_deth_sqp((struct srx_deth *)b));
	b[4] = 0xee;	/* reserved: ignored */
	EXPECT_EQ(0x123456u, srx_deth_sqp((struct srx_deth *)b));

	memset(b, 0xff, sizeof(b));
	srx_feth_set((struct srx_feth *)b, 0x5, 0x2);
	EXPECT_EQ(0, b[0] | b[1] | b[2]);
	EXPECT_EQ(0x25, b[3]);
	b[3] |= 0xc0;
	EXPECT_EQ(5, srx_feth_plt((struct srx_feth *)b));
	EXPECT_EQ(2, srx_feth_sel((struct srx_feth *)b));

	srx_atmeth_set_va((struct srx_atmeth *)b, 0x0102030405060708ull);
	srx_atmeth_set_rkey((struct srx_atmeth *)b, 0x090a0b0c);
	srx_atmeth_set_swap_add((struct srx_atmeth *)b, 0x1112131415161718ull);
	srx_atmeth_set_cmp((struct srx_atmeth *)b, 0x2122232425262728ull);
	EXPECT_EQ(0x01, b[0]);
	EXPECT_EQ(0x0c, b[11]);
	EXPECT_EQ(0x11, b[12]);
	EXPECT_EQ(0x18, b[19]);
	EXPECT_EQ(0x21, b[20]);
	EXPECT_EQ(0x28, b[27]);
}

/* ------------------------------------------------------------------------
 * Packets written byte by byte.
 */

/* The header values every hand-built packet carries. */
static const struct srx_roce_hdr_args V = {
	.se = true, .mig = false, .ackreq = true, .pkey = 0xffff,
	.qpn = 0x0badc1, .psn = 0xfffffe,
	.va = 0x8877665544332211ull, .rkey = 0x1a2b3c4d, .dma_len = 0x10000,
	.swap_add = 0x0102030405060708ull, .cmp = 0xf0e0d0c0b0a09080ull,
	.syndrome = 0x1f, .msn = 0xabcdef,
	.orig = 0x1122334455667788ull,
	.imm = 0,		/* set below: a __be32 needs a function */
	.inv_rkey = 0x55aa55aa,
	.qkey = 0x80010000, .src_qpn = 0x000001,
	.flush_type = 0x1, .flush_level = 0x1,
};
static const u8 V_IMM[4] = { 0xde, 0xc0, 0xad, 0xde };

static void put_be(u8 *p, u64 v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (u8)v;
}

static struct srx_roce_hdr_args args_for(u8 opcode, u8 pad)
{
	struct srx_roce_hdr_args a = V;

	a.opcode = opcode;
	a.pad = pad;
	memcpy(&a.imm, V_IMM, 4);
	return a;
}

/*
 * Writes the packet of @w with @paylen bytes of payload into @b (room for
 * SRX_ROCE_HDR_MAX + 4096 + 8), every byte by hand from the statement of
 * the table; returns its length. @tver, @pkey override the BTH's.
 */
static u32 hand_packet(u8 *b, const struct want_op *w, u32 paylen, u8 tver,
		       u16 pkey)
{
	u8 pad = (4 - paylen % 4) % 4;
	u32 len;

	b[0] = w->opcode;
	b[1] = (V.se << 7) | (V.mig << 6) | (pad << 4) | tver;
	put_be(b + 2, pkey, 2);
	b[4] = 0;
	put_be(b + 5, V.qpn, 3);
	b[8] = V.ackreq << 7;
	put_be(b + 9, V.psn, 3);
	for (int i = 0; i < 2 && w->ext[i].hdr; i++) {
		u8 *p = b + w->ext[i].off;

		switch (w->ext[i].hdr) {
		case SRX_ROCE_RETH:
			put_be(p, V.va, 8);
			put_be(p + 8, V.rkey, 4);
			put_be(p + 12, V.dma_len, 4);
			break;
		case SRX_ROCE_AETH:
			p[0] = V.syndrome;
			put_be(p + 1, V.msn, 3);
			break;
		case SRX_ROCE_ATMETH:
			put_be(p, V.va, 8);
			put_be(p + 8, V.rkey, 4);
			put_be(p + 12, V.swap_add, 8);
			put_be(p + 20, V.cmp, 8);
			break;
		case SRX_ROCE_ATMACK:
			put_be(p, V.orig, 8);
			break;
		case SRX_ROCE_IMMDT:
			memcpy(p, V_IMM, 4);
			break;
		case SRX_ROCE_IETH:
			put_be(p, V.inv_rkey, 4);
			break;
		case SRX_ROCE_DETH:
			put_be(p, V.qkey, 4);
			p[4] = 0;
			put_be(p + 5, V.src_qpn, 3);
			break;
		case SRX_ROCE_FETH:
			p[0] = p[1] = p[2] = 0;
			p[3] = V.flush_level << 4 | V.flush_type;
			break;
		}
	}
	len = w->hdr_len;
	for (u32 i = 0; i < paylen; i++)
		b[len++] = (u8)(i * 7 + 1);
	for (u8 i = 0; i < pad; i++)
		b[len++] = 0;
	put_be(b + len, 0xdeadbeef, 4);	/* ICRC: not the parser's */
	return len + 4;
}

/* Parses @len bytes of @src copied into a buffer of exactly that size. */
static int parse_exact(const u8 *src, u32 len, struct srx_roce_pkt *pkt)
{
	u8 *b = malloc(len);
	int r;

	if (len)
		memcpy(b, src, len);
	r = srx_roce_parse(b, len, pkt);
	free(b);
	return r;
}

/* The payload lengths a well-formed packet of @w may carry, tried here. */
static int payload_lens(const struct want_op *w, u32 *out)
{
	static const u32 all[] = { 0, 1, 2, 3, 4, 5, 8, 13, 256, 1021, 4096 };
	int n = 0;

	if (!(w->flags & PAY)) {
		out[n++] = 0;
		return n;
	}
	if (w->flags & AWRITE) {
		out[n++] = 8;
		return n;
	}
	for (size_t i = 0; i < ARRAY_LEN(all); i++)
		/* FIRST and MIDDLE carry the path MTU: no pad. */
		if ((w->flags & LAST) || all[i] % 4 == 0)
			out[n++] = all[i];
	return n;
}

#define PKT_ROOM (SRX_ROCE_HDR_MAX + SRX_ROCE_MAX_PAYLOAD + 8)

TEST(parse_every_opcode_hand_built)
{
	static u8 b[PKT_ROOM];

	for (size_t i = 0; i < ARRAY_LEN(want_ops); i++) {
		const struct want_op *w = &want_ops[i];
		u32 lens[16];
		int n = payload_lens(w, lens);

		for (int j = 0; j < n; j++) {
			u32 len = hand_packet(b, w, lens[j], 0, 0xffff);
			struct srx_roce_pkt pkt;
			int r = parse_exact(b, len, &pkt);
			const void *h;

			ASSERT_EQ(0, r) TH_LOG("%s, %u bytes: %s", w->name,
					       lens[j], srx_roce_err_name(r));
			EXPECT_EQ(w->opcode, pkt.opcode);
			EXPECT_STREQ(w->name, pkt.op->name);
			EXPECT_EQ(V.qpn, pkt.qpn);
			EXPECT_EQ(V.psn, pkt.psn);
			EXPECT_EQ(0xffff, pkt.pkey);
			EXPECT_EQ((4 - lens[j] % 4) % 4, pkt.pad);
			EXPECT_EQ(w->hdr_len, pkt.payload_off);
			EXPECT_EQ(lens[j], pkt.payload_len);
			EXPECT_TRUE(pkt.se);
			EXPECT_FALSE(pkt.mig);
			EXPECT_TRUE(pkt.ackreq);
			EXPECT_FALSE(pkt.fecn || pkt.becn);
			if (lens[j]) {
				EXPECT_EQ(1, b[pkt.payload_off]);
			}
			if (lens[j] > 1) {
				EXPECT_EQ(8, b[pkt.payload_off + 1]);
			}

			/* Each header where the statement puts it. */
			for (u8 hh = 1; hh < SRX_ROCE_HDR_COUNT; hh++) {
				h = srx_roce_pkt_hdr(&pkt, b, hh);
				EXPECT_EQ(want_off(w, hh),
					  h ? (const u8 *)h - b : 0);
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_RETH))) {
				EXPECT_EQ(V.va, srx_reth_va(h));
				EXPECT_EQ(V.rkey, srx_reth_rkey(h));
				EXPECT_EQ(V.dma_len, srx_reth_len(h));
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_ATMETH))) {
				EXPECT_EQ(V.va, srx_atmeth_va(h));
				EXPECT_EQ(V.swap_add, srx_atmeth_swap_add(h));
				EXPECT_EQ(V.cmp, srx_atmeth_cmp(h));
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_AETH))) {
				EXPECT_EQ(V.syndrome, srx_aeth_syndrome(h));
				EXPECT_EQ(V.msn, srx_aeth_msn(h));
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_ATMACK))) {
				EXPECT_EQ(V.orig, srx_atmack_orig(h));
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_IMMDT))) {
				__be32 imm = srx_immdt_imm(h);

				EXPECT_EQ(0, memcmp(&imm, V_IMM, 4));
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_IETH))) {
				EXPECT_EQ(V.inv_rkey, srx_ieth_rkey(h));
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_DETH))) {
				EXPECT_EQ(V.qkey, srx_deth_qkey(h));
				EXPECT_EQ(V.src_qpn, srx_deth_sqp(h));
			}
			if ((h = srx_roce_pkt_hdr(&pkt, b, SRX_ROCE_FETH))) {
				EXPECT_EQ(V.flush_type, srx_feth_plt(h));
				EXPECT_EQ(V.flush_level, srx_feth_sel(h));
			}
		}
	}
}

/* The builder writes the very bytes this file writes by hand. */
TEST(builder_matches_hand_built_and_round_trips)
{
	static u8 hand[PKT_ROOM];
	u8 built[SRX_ROCE_HDR_MAX];

	for (size_t i = 0; i < ARRAY_LEN(want_ops); i++) {
		const struct want_op *w = &want_ops[i];
		u32 lens[16];
		int n = payload_lens(w, lens);

		for (int j = 0; j < n; j++) {
			u8 pad = (4 - lens[j] % 4) % 4;
			struct srx_roce_hdr_args a = args_for(w->opcode, pad);
			u32 len = hand_packet(hand, w, lens[j], 0, 0xffff);
			struct srx_roce_pkt pkt;
			int r;

			memset(built, 0x5a, sizeof(built));
			r = srx_roce_build_hdr(built, w->hdr_len, &a);
			ASSERT_EQ(w->hdr_len, r) TH_LOG("%s", w->name);
			EXPECT_EQ(0, memcmp(built, hand, w->hdr_len))
				TH_LOG("%s", w->name);
			/* Built headers + the hand packet's rest parse. */
			memcpy(hand, built, w->hdr_len);
			r = parse_exact(hand, len, &pkt);
			ASSERT_EQ(0, r) TH_LOG("%s", srx_roce_err_name(r));
			EXPECT_EQ(lens[j], pkt.payload_len);
			EXPECT_EQ(a.qpn, pkt.qpn);
			EXPECT_EQ(a.psn, pkt.psn);
		}
	}
}

/*
 * A retransmission: the same arguments over a buffer holding anything
 * give the same bytes, and no byte past the headers is written.
 */
TEST(builder_is_a_function_of_its_arguments)
{
	u8 x[SRX_ROCE_HDR_MAX + 8], y[SRX_ROCE_HDR_MAX + 8];

	for (size_t i = 0; i < ARRAY_LEN(want_ops); i++) {
		const struct want_op *w = &want_ops[i];
		struct srx_roce_hdr_args a = args_for(w->opcode, 0);

		a.mig = true;
		memset(x, 0x00, sizeof(x));
		memset(y, 0xff, sizeof(y));
		ASSERT_EQ(w->hdr_len, srx_roce_build_hdr(x, sizeof(x), &a));
		ASSERT_EQ(w->hdr_len, srx_roce_build_hdr(y, sizeof(y), &a));
		EXPECT_EQ(0, memcmp(x, y, w->hdr_len)) TH_LOG("%s", w->name);
		for (size_t k = w->hdr_len; k < sizeof(x); k++) {
			EXPECT_EQ(0x00, x[k]);
			EXPECT_EQ(0xff, y[k]);
		}
		EXPECT_EQ(0x40, x[1] & 0x40);
	}
}

TEST(builder_refuses_bad_arguments_and_writes_nothing)
{
	u8 b[SRX_ROCE_HDR_MAX], before[SRX_ROCE_HDR_MAX];
	struct srx_roce_hdr_args a;

	memset(b, 0x77, sizeof(b));
	memcpy(before, b, sizeof(b));

	a = args_for(0x15, 0);
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_CNP, 0);
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_RC_SEND_ONLY, 4);
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_RC_SEND_ONLY, 0);
	a.qpn = 0x1000000;
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_RC_SEND_ONLY, 0);
	a.psn = 0x1000000;
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_RC_ACK, 0);
	a.msn = 0x1000000;
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_UD_SEND_ONLY, 0);
	a.src_qpn = 0x1000000;
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_RC_FLUSH, 0);
	a.flush_type = 0x10;
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_RC_FLUSH, 0);
	a.flush_level = 4;
	EXPECT_EQ(-EINVAL, srx_roce_build_hdr(b, sizeof(b), &a));
	a = args_for(SRX_ROCE_RC_CMP_SWAP, 0);
	EXPECT_EQ(-EMSGSIZE, srx_roce_build_hdr(b, 39, &a));
	EXPECT_EQ(40, srx_roce_build_hdr(b, 40, &a));
	EXPECT_EQ(0, memcmp(b + 40, before + 40, sizeof(b) - 40));
	memcpy(b, before, sizeof(b));
	a = args_for(SRX_ROCE_RC_SEND_ONLY, 0);
	EXPECT_EQ(-EMSGSIZE, srx_roce_build_hdr(b, 11, &a));
	EXPECT_EQ(0, memcmp(b, before, sizeof(b)));
}

/* ------------------------------------------------------------------------
 * Bad packets.
 */

/*
 * The error a well-formed packet of @w (its pad @pad) cut to @len bytes
 * must give, stated from the rules: the BTH, then the headers, then the
 * ICRC must fit; the length stays a multiple of 4; what remains must
 * cover the pad; ATOMIC_WRITE carries 8 bytes.
 */
static int want_truncated(const struct want_op *w, u8 pad, u32 len)
{
	if (len < 12)
		return -SRX_ROCE_E_SHORT_BTH;
	if (len < w->hdr_len)
		return -SRX_ROCE_E_SHORT_HDR;
	if (len < w->hdr_len + 4u)
		return -SRX_ROCE_E_SHORT_ICRC;
	if (len % 4)
		return -SRX_ROCE_E_ALIGN;
	if (len - w->hdr_len - 4 < pad)
		return -SRX_ROCE_E_PAD_OVER;
	if ((w->flags & AWRITE) && len - w->hdr_len - 4 != 8)
		return -SRX_ROCE_E_ATOMIC_WRITE_LEN;
	return 0;
}

TEST(every_truncation_of_every_packet)
{
	static u8 b[PKT_ROOM];
	unsigned int tried = 0;

	for (size_t i = 0; i < ARRAY_LEN(want_ops); i++) {
		const struct want_op *w = &want_ops[i];
		u32 lens[16];
		int n = payload_lens(w, lens);

		for (int j = 0; j < n; j++) {
			u32 len = hand_packet(b, w, lens[j], 0, 0xffff);
			u8 pad = (4 - lens[j] % 4) % 4;

			for (u32 cut = 0; cut < len; cut++) {
				struct srx_roce_pkt pkt;
				int r = parse_exact(b, cut, &pkt);
				int want = want_truncated(w, pad, cut);

				tried++;
				ASSERT_EQ(want, r)
					TH_LOG("%s, %u-byte payload cut to %u: %s",
					       w->name, lens[j], cut,
					       srx_roce_err_name(r));
				if (!r) {
					EXPECT_EQ(cut - w->hdr_len - 4 - pad,
						  pkt.payload_len);
				}
			}
		}
	}
	EXPECT_GT(tried, 100000u);
}

/* Bytes for @opcode's headers, @extra more bytes, and pad @pad. */
static int parse_shaped(u8 opcode, u32 extra, u8 pad)
{
	static u8 b[2 * PKT_ROOM + 4096];
	const struct want_op *w = want_op(opcode);
	struct srx_roce_pkt pkt;
	u32 len;

	len = hand_packet(b, w, 0, 0, 0xffff) - 4;	/* headers */
	b[1] = (b[1] & ~0x30) | pad << 4;
	memset(b + len, 0x33, extra + 4);
	return parse_exact(b, len + extra + 4, &pkt);
}

TEST(payload_and_pad_rules)
{
	static const u8 no_payload[] = {
		SRX_ROCE_RC_READ_REQ, SRX_ROCE_RC_ACK, SRX_ROCE_RC_ATOMIC_ACK,
		SRX_ROCE_RC_CMP_SWAP, SRX_ROCE_RC_FETCH_ADD, SRX_ROCE_RC_FLUSH,
	};
	static const u8 first_middle[] = {
		SRX_ROCE_RC_SEND_FIRST, SRX_ROCE_RC_SEND_MIDDLE,
		SRX_ROCE_RC_WRITE_FIRST, SRX_ROCE_RC_WRITE_MIDDLE,
		SRX_ROCE_RC_READ_RESP_FIRST, SRX_ROCE_RC_READ_RESP_MIDDLE,
		SRX_ROCE_UC_SEND_FIRST, SRX_ROCE_UC_WRITE_MIDDLE,
	};

	for (size_t i = 0; i < ARRAY_LEN(no_payload); i++) {
		u8 c = no_payload[i];

		EXPECT_EQ(0, parse_shaped(c, 0, 0));
		EXPECT_EQ(-SRX_ROCE_E_PAYLOAD, parse_shaped(c, 4, 0));
		EXPECT_EQ(-SRX_ROCE_E_PAYLOAD, parse_shaped(c, 4096, 0));
		for (u8 pad = 1; pad < 4; pad++) {
			EXPECT_EQ(-SRX_ROCE_E_PAD_NO_PAYLOAD,
				  parse_shaped(c, 0, pad));
			EXPECT_EQ(-SRX_ROCE_E_PAD_NO_PAYLOAD,
				  parse_shaped(c, 4, pad));
		}
		EXPECT_EQ(-SRX_ROCE_E_ALIGN, parse_shaped(c, 1, 0));
	}
	for (size_t i = 0; i < ARRAY_LEN(first_middle); i++) {
		u8 c = first_middle[i];

		EXPECT_EQ(0, parse_shaped(c, 1024, 0));
		for (u8 pad = 1; pad < 4; pad++) {
			EXPECT_EQ(-SRX_ROCE_E_PAD_NOT_LAST,
				  parse_shaped(c, 1024, pad));
		}
	}
	/* Pad larger than the payload: only with nothing before the ICRC. */
	for (u8 pad = 1; pad < 4; pad++) {
		EXPECT_EQ(-SRX_ROCE_E_PAD_OVER,
			  parse_shaped(SRX_ROCE_RC_SEND_ONLY, 0, pad));
		EXPECT_EQ(-SRX_ROCE_E_PAD_OVER,
			  parse_shaped(SRX_ROCE_UD_SEND_ONLY_IMM, 0, pad));
		EXPECT_EQ(0, parse_shaped(SRX_ROCE_RC_SEND_ONLY, 4, pad));
	}
	/* The largest payload, and one more word. */
	EXPECT_EQ(0, parse_shaped(SRX_ROCE_RC_SEND_ONLY, 4096, 0));
	EXPECT_EQ(0, parse_shaped(SRX_ROCE_UD_SEND_ONLY, 4096, 0));
	EXPECT_EQ(0, parse_shaped(SRX_ROCE_RC_READ_RESP_MIDDLE, 4096, 0));
	EXPECT_EQ(0, parse_shaped(SRX_ROCE_RC_SEND_ONLY, 4096, 3));
	EXPECT_EQ(-SRX_ROCE_E_TOO_LONG,
		  parse_shaped(SRX_ROCE_RC_SEND_ONLY, 4100, 3));
	EXPECT_EQ(-SRX_ROCE_E_TOO_LONG,
		  parse_shaped(SRX_ROCE_RC_SEND_ONLY, 4100, 0));
	EXPECT_EQ(-SRX_ROCE_E_TOO_LONG,
		  parse_shaped(SRX_ROCE_RC_WRITE_MIDDLE, 4100, 0));
	EXPECT_EQ(-SRX_ROCE_E_TOO_LONG,
		  parse_shaped(SRX_ROCE_UD_SEND_ONLY_IMM, 8192, 0));
	/* Unaligned lengths. */
	for (u32 extra = 1; extra < 4; extra++) {
		EXPECT_EQ(-SRX_ROCE_E_ALIGN,
			  parse_shaped(SRX_ROCE_RC_SEND_ONLY, 4 + extra, 0));
	}
	/* ATOMIC_WRITE: 8 bytes exactly. */
	EXPECT_EQ(0, parse_shaped(SRX_ROCE_RC_ATOMIC_WRITE, 8, 0));
	EXPECT_EQ(-SRX_ROCE_E_ATOMIC_WRITE_LEN,
		  parse_shaped(SRX_ROCE_RC_ATOMIC_WRITE, 0, 0));
	EXPECT_EQ(-SRX_ROCE_E_ATOMIC_WRITE_LEN,
		  parse_shaped(SRX_ROCE_RC_ATOMIC_WRITE, 4, 0));
	EXPECT_EQ(-SRX_ROCE_E_ATOMIC_WRITE_LEN,
		  parse_shaped(SRX_ROCE_RC_ATOMIC_WRITE, 12, 0));
	EXPECT_EQ(-SRX_ROCE_E_ATOMIC_WRITE_LEN,
		  parse_shaped(SRX_ROCE_RC_ATOMIC_WRITE, 8, 1));
	/* Zero-length messages carry no pad. */
	EXPECT_EQ(0, parse_shaped(SRX_ROCE_RC_READ_RESP_ONLY, 0, 0));
	EXPECT_EQ(0, parse_shaped(SRX_ROCE_RC_WRITE_ONLY_IMM, 0, 0));
}

TEST(tver_other_than_zero)
{
	static u8 b[PKT_ROOM];
	struct srx_roce_pkt pkt;

	for (size_t i = 0; i < ARRAY_LEN(want_ops); i++) {
		for (u8 tver = 1; tver < 16; tver++) {
			u32 len = hand_packet(b, &want_ops[i],
					      want_ops[i].flags & AWRITE ? 8 : 0,
					      tver, 0xffff);

			EXPECT_EQ(-SRX_ROCE_E_TVER, parse_exact(b, len, &pkt))
				TH_LOG("%s", want_ops[i].name);
		}
	}
}

/* rxe_verbs.h's pkey_match(), restated. */
static bool rxe_pkey_match(u16 key1, u16 key2)
{
	return (key1 & 0x7fff) != 0 &&
	       (key1 & 0x7fff) == (key2 & 0x7fff) &&
	       ((key1 & 0x8000) || (key2 & 0x8000));
}

/* srx accepts a P_Key exactly when rxe_recv.c's check_keys() would. */
TEST(pkey_as_rxe_checks_it)
{
	const struct want_op *w = want_op(SRX_ROCE_RC_SEND_ONLY);
	static u8 b[PKT_ROOM];
	unsigned int accepted = 0;

	for (u32 pkey = 0; pkey <= 0xffff; pkey++) {
		u32 len = hand_packet(b, w, 4, 0, pkey);
		struct srx_roce_pkt pkt;
		int r = parse_exact(b, len, &pkt);

		if (rxe_pkey_match(pkey, 0xffff)) {
			EXPECT_EQ(0, r) TH_LOG("P_Key 0x%04x", pkey);
			if (!r) {
				EXPECT_EQ(pkey, pkt.pkey);
			}
			accepted++;
		} else {
			EXPECT_EQ(-SRX_ROCE_E_PKEY, r) TH_LOG("P_Key 0x%04x",
							      pkey);
		}
	}
	EXPECT_EQ(2u, accepted);		/* 0xFFFF and 0x7FFF */
}

TEST(opcodes_qpn_and_ignored_bits)
{
	static u8 b[PKT_ROOM];
	struct srx_roce_pkt pkt;
	u32 len;

	/* Every opcode outside the table, CNP apart. */
	for (unsigned int c = 0; c < 256; c++) {
		if (want_op(c))
			continue;
		len = hand_packet(b, want_op(SRX_ROCE_RC_SEND_ONLY), 32, 0,
				  0xffff);
		b[0] = c;
		EXPECT_EQ(c == 0x81 ? -SRX_ROCE_E_CNP : -SRX_ROCE_E_OPCODE,
			  parse_exact(b, len, &pkt)) TH_LOG("0x%02x", c);
	}
	/* A CNP as RoCE v2 sends it: BTH, 16 reserved bytes, ICRC. */
	b[0] = SRX_ROCE_CNP;
	EXPECT_EQ(-SRX_ROCE_E_CNP, parse_exact(b, 32, &pkt));

	/* DestQP 0 is refused, 0xFFFFFF (multicast) is the engine's. */
	len = hand_packet(b, want_op(SRX_ROCE_RC_ACK), 0, 0, 0xffff);
	b[5] = b[6] = b[7] = 0;
	EXPECT_EQ(-SRX_ROCE_E_QPN, parse_exact(b, len, &pkt));
	b[7] = 1;
	EXPECT_EQ(0, parse_exact(b, len, &pkt));
	EXPECT_EQ(1u, pkt.qpn);
	b[5] = b[6] = b[7] = 0xff;
	EXPECT_EQ(0, parse_exact(b, len, &pkt));
	EXPECT_EQ(0xffffffu, pkt.qpn);

	/* M, FECN, BECN and the reserved bits are not checked. */
	b[1] |= 0x40;
	b[4] = 0xff;
	b[8] = 0x7f;
	ASSERT_EQ(0, parse_exact(b, len, &pkt));
	EXPECT_TRUE(pkt.mig);
	EXPECT_TRUE(pkt.fecn);
	EXPECT_TRUE(pkt.becn);
	EXPECT_FALSE(pkt.ackreq);
	EXPECT_EQ(0xffffffu, pkt.qpn);
	EXPECT_EQ(V.psn, pkt.psn);
}

TEST(error_names_are_distinct)
{
	for (int i = 0; i < SRX_ROCE_E_COUNT; i++) {
		ASSERT_NE(NULL, srx_roce_err_name(-i));
		EXPECT_STRNE("unknown", srx_roce_err_name(-i));
		for (int j = 0; j < i; j++) {
			EXPECT_STRNE(srx_roce_err_name(-i),
				     srx_roce_err_name(-j));
		}
	}
	EXPECT_STREQ("unknown", srx_roce_err_name(-SRX_ROCE_E_COUNT));
	EXPECT_STREQ("unknown", srx_roce_err_name(-2147483647 - 1));
}

/* ------------------------------------------------------------------------
 * PSN and MSN arithmetic.
 */
TEST(psn_add_wraps_at_24_bits)
{
	EXPECT_EQ(0u, srx_psn_add(0xffffff, 1));
	EXPECT_EQ(0xffffffu, srx_psn_add(0, 0xffffff));
	EXPECT_EQ(0x7fu, srx_psn_add(0xffff80, 0xff));
	EXPECT_EQ(5u, srx_psn_add(5, 0x1000000));
	EXPECT_EQ(0xffffffu, srx_psn_add(0, 0xffffffff));	/* -1 */
	EXPECT_EQ(2u, srx_psn_add(0xff000003, 0xffffffff));	/* garbage */
	EXPECT_EQ(0u, srx_msn_add(0xffffff, 1));
	EXPECT_EQ(0x10u, srx_msn_add(0xfffff0, 0x20));
}

TEST(psn_distance_and_order_across_the_wrap)
{
	EXPECT_EQ(0, srx_psn_diff(7, 7));
	EXPECT_EQ(1, srx_psn_diff(0, 0xffffff));
	EXPECT_EQ(-1, srx_psn_diff(0xffffff, 0));
	EXPECT_EQ(16, srx_psn_diff(8, 0xfffff8));
	EXPECT_TRUE(srx_psn_after(0, 0xffffff));
	EXPECT_TRUE(srx_psn_before(0xffffff, 0));
	EXPECT_FALSE(srx_psn_after(0xffffff, 0));
	EXPECT_FALSE(srx_psn_before(5, 5));
	EXPECT_FALSE(srx_psn_after(5, 5));
	/* Garbage above bit 23 does not count. */
	EXPECT_EQ(1, srx_psn_diff(0xab000000, 0xcdffffff));
	EXPECT_EQ(1, srx_msn_diff(0, 0xffffff));
	EXPECT_TRUE(srx_msn_after(0, 0xffffff));
	EXPECT_TRUE(srx_msn_before(0xfffffe, 0xffffff));
}

TEST(psn_half_space_boundary)
{
	const u32 half = 0x800000;

	/* Up to 2^23 ahead is ahead; 2^23 + 1 ahead is behind. */
	EXPECT_EQ((s32)(half - 1), srx_psn_diff(half - 1, 0));
	EXPECT_EQ(half, srx_psn_diff(half, 0));
	EXPECT_EQ(-(s32)(half - 1), srx_psn_diff(half + 1, 0));
	EXPECT_TRUE(srx_psn_after(half, 0));
	EXPECT_TRUE(srx_psn_before(half + 1, 0));
	/* Exactly half the space: ahead from either side. */
	EXPECT_EQ(half, srx_psn_diff(0, half));
	EXPECT_TRUE(srx_psn_after(0, half));
	/* The same across the wrap. */
	EXPECT_EQ(half, srx_psn_diff(0x7fffff, 0xffffff));
	EXPECT_EQ(-(s32)(half - 1), srx_psn_diff(0x800000, 0xffffff));
	/* The range: never -2^23, never above 2^23, for any pair. */
	for (u32 a = 0; a < 0x1000000; a += 0x1357) {
		for (u32 d = 0; d < 0x1000000; d += 0x2468b) {
			s32 r = srx_psn_diff(a + d, a);

			ASSERT_GT(r, -(s32)half);
			ASSERT_LE(r, (s32)half);
			ASSERT_EQ(d & 0xffffff, (u32)r & 0xffffff);
			ASSERT_EQ(srx_psn_add(a, (u32)r), (a + d) & 0xffffff);
		}
	}
}

TEST(psn_window_crossing_the_wrap)
{
	/* [0xfffffe, 0xfffffe + 4) = {0xfffffe, 0xffffff, 0, 1}. */
	EXPECT_TRUE(srx_psn_in_window(0xfffffe, 0xfffffe, 4));
	EXPECT_TRUE(srx_psn_in_window(0xffffff, 0xfffffe, 4));
	EXPECT_TRUE(srx_psn_in_window(0, 0xfffffe, 4));
	EXPECT_TRUE(srx_psn_in_window(1, 0xfffffe, 4));
	EXPECT_FALSE(srx_psn_in_window(2, 0xfffffe, 4));
	EXPECT_FALSE(srx_psn_in_window(0xfffffd, 0xfffffe, 4));
	/* Empty and whole windows. */
	EXPECT_FALSE(srx_psn_in_window(0, 0, 0));
	EXPECT_TRUE(srx_psn_in_window(0x123456, 0x654321, 0x1000000));
	/* Half-space windows on each side of the wrap. */
	EXPECT_TRUE(srx_psn_in_window(0x7ffffe, 0xffffff, 0x800000));
	EXPECT_FALSE(srx_psn_in_window(0x7fffff, 0xffffff, 0x800000));
	/* Garbage above bit 23 of any argument does not count. */
	EXPECT_TRUE(srx_psn_in_window(0xff000000, 0x01fffffe, 4));
	/* MSNs alike. */
	EXPECT_TRUE(srx_msn_in_window(1, 0xffffff, 3));
	EXPECT_FALSE(srx_msn_in_window(2, 0xffffff, 3));
	/* Each member counted once over a window sliding across the wrap. */
	for (u32 start = 0xfffff0; start != 0x10; start = srx_psn_add(start, 1)) {
		unsigned int in = 0;

		for (u32 p = 0xffffe0; p != 0x20; p = srx_psn_add(p, 1))
			in += srx_psn_in_window(p, start, 8);
		ASSERT_EQ(8u, in);
	}
}

/* ------------------------------------------------------------------------
 * The fuzz loop: deterministic, every input at its exact length.
 */
#define FUZZ_MAX	8192
#define FUZZ_ROUNDS	60000

TEST(fuzz_the_parser)
{
	static u8 b[FUZZ_MAX + PKT_ROOM];
	unsigned int seen[SRX_ROCE_E_COUNT] = { 0 };
	struct timespec t0, t1;
	double secs;

	rng_state = 0x5258c0de12345678ull;
	/* CPU time: the machine may be shared, the budget is ours. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	for (int round = 0; round < FUZZ_ROUNDS; round++) {
		u64 r = rng();
		u32 len;
		const char *why;
		int res;

		if (r % 4 == 0) {
			/*
			 * Random bytes, random length. The parser reads
			 * the first 12 at most, so only the first 64 are
			 * drawn and the rest repeat them.
			 */
			len = rng() % (FUZZ_MAX + 1);
			for (u32 k = 0; k < 64; k += 8) {
				u64 v = rng();

				memcpy(b + k, &v, 8);
			}
			for (u32 k = 64; k < len; k++)
				b[k] = b[k % 64];
			/* Often a known opcode and a plausible BTH. */
			if (r & 0x10)
				b[0] = want_ops[rng() % ARRAY_LEN(want_ops)].opcode;
			if (r & 0x20)
				b[1] &= 0xf0;
			if (r & 0x40)
				b[2] = b[3] = 0xff;
			if ((r & 0x380) == 0x380)
				b[5] = b[6] = b[7] = 0;
		} else {
			/* A well-formed packet, mutated. */
			const struct want_op *w =
				&want_ops[rng() % ARRAY_LEN(want_ops)];
			u32 lens[16];
			int n = payload_lens(w, lens);
			int flips = rng() % 4;

			len = hand_packet(b, w, lens[rng() % n], 0, 0xffff);
			if (rng() % 2)
				b[1] = (b[1] & ~0x30) | (rng() % 4) << 4;
			for (int f = 0; f < flips; f++) {
				u32 bit = rng() % (16 * 8);

				b[bit / 8] ^= 1 << (bit % 8);
			}
			switch (rng() % 4) {
			case 0:
				len = rng() % (len + 1);	/* truncate */
				break;
			case 1:
				len += rng() % 9;		/* extend */
				break;
			case 2:
				len = len - len % 4 + 4 * (rng() % 3);
				break;
			default:
				break;
			}
		}
		why = wire_check_one(b, len, &res);
		ASSERT_EQ(NULL, why) TH_LOG("round %d, %u bytes: %s", round,
					    len, why);
		seen[-res]++;
	}
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	TH_LOG("%d inputs in %.2f s of CPU; accepted %u", FUZZ_ROUNDS, secs,
	       seen[0]);
	/* The loop reached every verdict, acceptance included. */
	for (int e = 0; e < SRX_ROCE_E_COUNT; e++) {
		EXPECT_GT(seen[e], 0u) TH_LOG("never saw %s",
					     srx_roce_err_name(-e));
	}
	EXPECT_LT(secs, 10.0);
}

TEST_HARNESS_MAIN
