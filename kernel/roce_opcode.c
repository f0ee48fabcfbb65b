// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The opcode table: what each RoCE v2 opcode carries, as data.
 *
 * One entry per opcode srx knows, indexed by the opcode byte; every other
 * entry is zero, and srx_roce_opcode() returns NULL for it. Each entry
 * names its extension headers in wire order and nothing else about the
 * layout: the offsets and the header length are computed from that list by
 * the macros below, at compile time, so they cannot disagree with it.
 *
 * Facts, checked entry by entry against Linux 6.1's rxe_opcode.c (and
 * 6.12's for FLUSH and ATOMIC_WRITE, which 6.1 lacks):
 *  - DETH comes first after BTH on UD, then ImmDt;
 *  - RETH comes before ImmDt on WRITE_ONLY_WITH_IMMEDIATE;
 *  - AETH comes right after BTH on every response, then AtomicAckETH;
 *  - FETH comes before RETH on FLUSH, which carries no payload;
 *  - ATOMIC_WRITE is a RETH then an 8-byte payload;
 *  - READ_REQ, ACK, ATOMIC_ACK, CMP_SWAP and FETCH_ADD carry no payload
 *    (no RXE_PAYLOAD_MASK); READ_RESP_MIDDLE carries no AETH.
 * selftests/host/wire_test.c checks the whole table against a statement of
 * its own, written out byte by byte.
 *
 * Built into srx.ko and, unchanged, into the host tests.
 */
#include "roce_hdr.h"

/* Bytes of extension header @h: a constant expression, unlike the inline. */
#define HDR_BYTES(h)							\
	((h) == SRX_ROCE_RETH ? SRX_ROCE_RETH_BYTES :			\
	 (h) == SRX_ROCE_AETH ? SRX_ROCE_AETH_BYTES :			\
	 (h) == SRX_ROCE_ATMETH ? SRX_ROCE_ATMETH_BYTES :		\
	 (h) == SRX_ROCE_ATMACK ? SRX_ROCE_ATMACK_BYTES :		\
	 (h) == SRX_ROCE_IMMDT ? SRX_ROCE_IMMDT_BYTES :			\
	 (h) == SRX_ROCE_IETH ? SRX_ROCE_IETH_BYTES :			\
	 (h) == SRX_ROCE_DETH ? SRX_ROCE_DETH_BYTES :			\
	 (h) == SRX_ROCE_FETH ? SRX_ROCE_FETH_BYTES : 0)

/* Offset of header @x in the list (@h1, @h2) after BTH, 0 if not in it. */
#define OFF(x, h1, h2)							\
	((x) == (h1) ? SRX_ROCE_BTH_BYTES :				\
	 (x) == (h2) ? SRX_ROCE_BTH_BYTES + HDR_BYTES(h1) : 0)

#define OFFSETS(h1, h2) {						\
	[SRX_ROCE_RETH]		= OFF(SRX_ROCE_RETH, h1, h2),		\
	[SRX_ROCE_AETH]		= OFF(SRX_ROCE_AETH, h1, h2),		\
	[SRX_ROCE_ATMETH]	= OFF(SRX_ROCE_ATMETH, h1, h2),		\
	[SRX_ROCE_ATMACK]	= OFF(SRX_ROCE_ATMACK, h1, h2),		\
	[SRX_ROCE_IMMDT]	= OFF(SRX_ROCE_IMMDT, h1, h2),		\
	[SRX_ROCE_IETH]		= OFF(SRX_ROCE_IETH, h1, h2),		\
	[SRX_ROCE_DETH]		= OFF(SRX_ROCE_DETH, h1, h2),		\
	[SRX_ROCE_FETH]		= OFF(SRX_ROCE_FETH, h1, h2),		\
}

/* OFFSETS() names every header; a new one must be added there too. */
static_assert(SRX_ROCE_FETH + 1 == SRX_ROCE_HDR_COUNT);

/*
 * One entry: transport @t (RC, UC, UD), operation @o (SRX_ROCE_OP_*),
 * extension headers @h1 then @h2 (H_NONE where fewer), flags @f.
 */
#define ENTRY(t, o, h1, h2, f)						\
	[SRX_ROCE_##t##_##o] = {					\
		.name = #t "_" #o,					\
		.qpt = SRX_ROCE_QPT_##t,				\
		.flags = (f),						\
		.ext = { h1, h2 },					\
		.hdr_len = SRX_ROCE_BTH_BYTES + HDR_BYTES(h1) +		\
			   HDR_BYTES(h2),				\
		.off = OFFSETS(h1, h2),					\
	}

#define H_NONE		SRX_ROCE_HDR_NONE
#define H_RETH		SRX_ROCE_RETH
#define H_AETH		SRX_ROCE_AETH
#define H_ATMETH	SRX_ROCE_ATMETH
#define H_ATMACK	SRX_ROCE_ATMACK
#define H_IMMDT		SRX_ROCE_IMMDT
#define H_IETH		SRX_ROCE_IETH
#define H_DETH		SRX_ROCE_DETH
#define H_FETH		SRX_ROCE_FETH

/* A request of operation @op at position @pos; a response; an ACK. */
#define REQ(op, pos)	(SRX_ROCE_F_REQ | SRX_ROCE_F_##op | SRX_ROCE_F_##pos)
#define RESP(pos)	(SRX_ROCE_F_RESP | SRX_ROCE_F_##pos)
#define ACK		(SRX_ROCE_F_ACK | SRX_ROCE_F_ONLY)
#define PAY		SRX_ROCE_F_PAYLOAD
#define IMM		SRX_ROCE_F_IMM
#define INV		SRX_ROCE_F_INV
#define ANS		SRX_ROCE_F_ANSWERED

/* SEND and RDMA WRITE, the same on RC and UC. */
#define SEND_WRITE_ENTRIES(t)						\
	ENTRY(t, SEND_FIRST,	 H_NONE,  H_NONE, REQ(SEND, FIRST) | PAY),	\
	ENTRY(t, SEND_MIDDLE,	 H_NONE,  H_NONE, REQ(SEND, MIDDLE) | PAY),	\
	ENTRY(t, SEND_LAST,	 H_NONE,  H_NONE, REQ(SEND, LAST) | PAY),	\
	ENTRY(t, SEND_LAST_IMM,	 H_IMMDT, H_NONE, REQ(SEND, LAST) | PAY | IMM), \
	ENTRY(t, SEND_ONLY,	 H_NONE,  H_NONE, REQ(SEND, ONLY) | PAY),	\
	ENTRY(t, SEND_ONLY_IMM,	 H_IMMDT, H_NONE, REQ(SEND, ONLY) | PAY | IMM), \
	ENTRY(t, WRITE_FIRST,	 H_RETH,  H_NONE, REQ(WRITE, FIRST) | PAY),	\
	ENTRY(t, WRITE_MIDDLE,	 H_NONE,  H_NONE, REQ(WRITE, MIDDLE) | PAY),	\
	ENTRY(t, WRITE_LAST,	 H_NONE,  H_NONE, REQ(WRITE, LAST) | PAY),	\
	ENTRY(t, WRITE_LAST_IMM, H_IMMDT, H_NONE, REQ(WRITE, LAST) | PAY | IMM), \
	ENTRY(t, WRITE_ONLY,	 H_RETH,  H_NONE, REQ(WRITE, ONLY) | PAY),	\
	ENTRY(t, WRITE_ONLY_IMM, H_RETH,  H_IMMDT, REQ(WRITE, ONLY) | PAY | IMM)

const struct srx_roce_opcode srx_roce_opcodes[256] = {
	SEND_WRITE_ENTRIES(RC),
	ENTRY(RC, READ_REQ,	    H_RETH,   H_NONE,	REQ(READ, ONLY) | ANS),
	ENTRY(RC, READ_RESP_FIRST,  H_AETH,   H_NONE,	RESP(FIRST) | PAY),
	ENTRY(RC, READ_RESP_MIDDLE, H_NONE,   H_NONE,	RESP(MIDDLE) | PAY),
	ENTRY(RC, READ_RESP_LAST,   H_AETH,   H_NONE,	RESP(LAST) | PAY),
	ENTRY(RC, READ_RESP_ONLY,   H_AETH,   H_NONE,	RESP(ONLY) | PAY),
	ENTRY(RC, ACK,		    H_AETH,   H_NONE,	ACK),
	ENTRY(RC, ATOMIC_ACK,	    H_AETH,   H_ATMACK,	ACK),
	ENTRY(RC, CMP_SWAP,	    H_ATMETH, H_NONE,	REQ(ATOMIC, ONLY) | ANS),
	ENTRY(RC, FETCH_ADD,	    H_ATMETH, H_NONE,	REQ(ATOMIC, ONLY) | ANS),
	ENTRY(RC, SEND_LAST_INV,    H_IETH,   H_NONE,	REQ(SEND, LAST) | PAY | INV),
	ENTRY(RC, SEND_ONLY_INV,    H_IETH,   H_NONE,	REQ(SEND, ONLY) | PAY | INV),
	ENTRY(RC, FLUSH,	    H_FETH,   H_RETH,	REQ(FLUSH, ONLY) | ANS),
	ENTRY(RC, ATOMIC_WRITE,	    H_RETH,   H_NONE,
	      REQ(ATOMIC_WRITE, ONLY) | PAY | ANS),

	SEND_WRITE_ENTRIES(UC),

	ENTRY(UD, SEND_ONLY,	    H_DETH,   H_NONE,	REQ(SEND, ONLY) | PAY),
	ENTRY(UD, SEND_ONLY_IMM,    H_DETH,   H_IMMDT,	REQ(SEND, ONLY) | PAY | IMM),
};

/* The host tests include this file: keep the shorthands to it. */
#undef HDR_BYTES
#undef OFF
#undef OFFSETS
#undef ENTRY
#undef H_NONE
#undef H_RETH
#undef H_AETH
#undef H_ATMETH
#undef H_ATMACK
#undef H_IMMDT
#undef H_IETH
#undef H_DETH
#undef H_FETH
#undef REQ
#undef RESP
#undef ACK
#undef PAY
#undef IMM
#undef INV
#undef ANS
#undef SEND_WRITE_ENTRIES

/*
 * [IBTA] 9.7.5, RNR NAK timer field values, in microseconds; the names of
 * ib_verbs.h's enum ib_rnr_timeout (IB_RNR_TIMER_<ms>_<hundredths>) spell
 * each one. Code 0 is the longest, 655.36 ms.
 */
const u32 srx_rnr_timer_usec[SRX_RNR_TIMER_CODES] = {
	655360,     10,     20,     30,     40,     60,     80,    120,
	   160,    240,    320,    480,    640,    960,   1280,   1920,
	  2560,   3840,   5120,   7680,  10240,  15360,  20480,  30720,
	 40960,  61440,  81920, 122880, 163840, 245760, 327680, 491520,
};
