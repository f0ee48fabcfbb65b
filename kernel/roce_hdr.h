/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RoCE v2 packet format: what follows the UDP header to port 4791.
 *
 *   BTH | extension headers | payload | pad (0-3 bytes) | ICRC (4 bytes)
 *
 * This file is the wire format and nothing else: the headers as packed
 * structs of big-endian fields with explicit sizes, accessors for every
 * field, the opcode values and the AETH syndromes. What each opcode carries
 * is data, in roce_opcode.c (srx_roce_opcodes[]); the parser and the header
 * builder are in roce_pkt.c. All of it is pure: no skb, no QP, no locking,
 * so the same files build into srx.ko and into the host tests
 * (selftests/host/wire_test.c, which supplies the few kernel types and byte
 * order helpers below through selftests/host/wire_host.h).
 *
 * Sources, cited where each fact is used:
 *   [IBTA]     InfiniBand Architecture Specification vol. 1, release 1.4,
 *              chapter 9 (transport) and Annex A17 (RoCE v2);
 *   [ib_pack]  Linux 6.1/6.12 include/rdma/ib_pack.h (opcode values);
 *   [rxe_hdr]  Linux 6.1/6.12 drivers/infiniband/sw/rxe/rxe_hdr.h (layouts);
 *   [rxe_op]   Linux 6.1/6.12 drivers/infiniband/sw/rxe/rxe_opcode.c;
 *   [rxe_recv] Linux 6.1 drivers/infiniband/sw/rxe/rxe_recv.c.
 *
 * Every header struct is __packed: a RoCE v2 BTH sits 42 bytes into an
 * Ethernet frame over IPv4 (62 over IPv6), so no field is naturally
 * aligned, and packed structs make the compiler load them bytewise where
 * the machine needs it.
 */
#ifndef SRX_ROCE_HDR_H
#define SRX_ROCE_HDR_H

#ifdef __KERNEL__
#include <linux/build_bug.h>
#include <linux/types.h>
#include <asm/byteorder.h>
#endif

#include "psn.h"	/* arithmetic on the BTH's PSN and the AETH's MSN */

/* [IBTA] Annex A17: the IANA-assigned UDP destination port of RoCE v2. */
#define SRX_ROCE_UDP_PORT	4791

/* The invariant CRC that ends every packet; [rxe_hdr] RXE_ICRC_SIZE. */
#define SRX_ROCE_ICRC_BYTES	4

/*
 * The largest payload of one packet: the largest IB path MTU, 4096
 * (ib_verbs.h's enum ib_mtu ends at IB_MTU_4096). A UD packet is bounded
 * by the port MTU, itself at most 4096.
 */
#define SRX_ROCE_MAX_PAYLOAD	4096

/* ------------------------------------------------------------------------
 * Opcodes. [IBTA] 9.2, BTH OpCode; [ib_pack] enum: the top three bits are
 * the transport, the low five the operation. RD (0x40) is offered by
 * neither srx nor rxe; CNP is RoCE v2's congestion notification ([IBTA]
 * Annex A17; ../shared/ROCE.md), which rxe drops and srx does too.
 */
enum srx_roce_transport {
	SRX_ROCE_TRANSPORT_RC	= 0x00,
	SRX_ROCE_TRANSPORT_UC	= 0x20,
	SRX_ROCE_TRANSPORT_RD	= 0x40,
	SRX_ROCE_TRANSPORT_UD	= 0x60,
	SRX_ROCE_TRANSPORT_CNP	= 0x80,
	SRX_ROCE_TRANSPORT_MASK	= 0xe0,
};

/* The low five bits; 0x15 and 0x18-0x1b are reserved for RC. */
enum srx_roce_op {
	SRX_ROCE_OP_SEND_FIRST		= 0x00,
	SRX_ROCE_OP_SEND_MIDDLE		= 0x01,
	SRX_ROCE_OP_SEND_LAST		= 0x02,
	SRX_ROCE_OP_SEND_LAST_IMM	= 0x03,
	SRX_ROCE_OP_SEND_ONLY		= 0x04,
	SRX_ROCE_OP_SEND_ONLY_IMM	= 0x05,
	SRX_ROCE_OP_WRITE_FIRST		= 0x06,
	SRX_ROCE_OP_WRITE_MIDDLE	= 0x07,
	SRX_ROCE_OP_WRITE_LAST		= 0x08,
	SRX_ROCE_OP_WRITE_LAST_IMM	= 0x09,
	SRX_ROCE_OP_WRITE_ONLY		= 0x0a,
	SRX_ROCE_OP_WRITE_ONLY_IMM	= 0x0b,
	SRX_ROCE_OP_READ_REQ		= 0x0c,
	SRX_ROCE_OP_READ_RESP_FIRST	= 0x0d,
	SRX_ROCE_OP_READ_RESP_MIDDLE	= 0x0e,
	SRX_ROCE_OP_READ_RESP_LAST	= 0x0f,
	SRX_ROCE_OP_READ_RESP_ONLY	= 0x10,
	SRX_ROCE_OP_ACK			= 0x11,
	SRX_ROCE_OP_ATOMIC_ACK		= 0x12,
	SRX_ROCE_OP_CMP_SWAP		= 0x13,
	SRX_ROCE_OP_FETCH_ADD		= 0x14,
	SRX_ROCE_OP_SEND_LAST_INV	= 0x16,
	SRX_ROCE_OP_SEND_ONLY_INV	= 0x17,
	/* IBTA 1.5 memory placement extensions; [ib_pack] of 6.12, not 6.1. */
	SRX_ROCE_OP_FLUSH		= 0x1c,
	SRX_ROCE_OP_ATOMIC_WRITE	= 0x1d,
	SRX_ROCE_OP_MASK		= 0x1f,
};

#define SRX_ROCE_RC(op)	(SRX_ROCE_TRANSPORT_RC | SRX_ROCE_OP_##op)
#define SRX_ROCE_UC(op)	(SRX_ROCE_TRANSPORT_UC | SRX_ROCE_OP_##op)
#define SRX_ROCE_UD(op)	(SRX_ROCE_TRANSPORT_UD | SRX_ROCE_OP_##op)

/* The full opcodes srx knows, by the values [ib_pack] gives them. */
enum srx_roce_opcode_value {
	SRX_ROCE_RC_SEND_FIRST		= SRX_ROCE_RC(SEND_FIRST),	/* 0x00 */
	SRX_ROCE_RC_SEND_MIDDLE		= SRX_ROCE_RC(SEND_MIDDLE),
	SRX_ROCE_RC_SEND_LAST		= SRX_ROCE_RC(SEND_LAST),
	SRX_ROCE_RC_SEND_LAST_IMM	= SRX_ROCE_RC(SEND_LAST_IMM),
	SRX_ROCE_RC_SEND_ONLY		= SRX_ROCE_RC(SEND_ONLY),
	SRX_ROCE_RC_SEND_ONLY_IMM	= SRX_ROCE_RC(SEND_ONLY_IMM),
	SRX_ROCE_RC_WRITE_FIRST		= SRX_ROCE_RC(WRITE_FIRST),
	SRX_ROCE_RC_WRITE_MIDDLE	= SRX_ROCE_RC(WRITE_MIDDLE),
	SRX_ROCE_RC_WRITE_LAST		= SRX_ROCE_RC(WRITE_LAST),
	SRX_ROCE_RC_WRITE_LAST_IMM	= SRX_ROCE_RC(WRITE_LAST_IMM),
	SRX_ROCE_RC_WRITE_ONLY		= SRX_ROCE_RC(WRITE_ONLY),
	SRX_ROCE_RC_WRITE_ONLY_IMM	= SRX_ROCE_RC(WRITE_ONLY_IMM),
	SRX_ROCE_RC_READ_REQ		= SRX_ROCE_RC(READ_REQ),
	SRX_ROCE_RC_READ_RESP_FIRST	= SRX_ROCE_RC(READ_RESP_FIRST),
	SRX_ROCE_RC_READ_RESP_MIDDLE	= SRX_ROCE_RC(READ_RESP_MIDDLE),
	SRX_ROCE_RC_READ_RESP_LAST	= SRX_ROCE_RC(READ_RESP_LAST),
	SRX_ROCE_RC_READ_RESP_ONLY	= SRX_ROCE_RC(READ_RESP_ONLY),
	SRX_ROCE_RC_ACK			= SRX_ROCE_RC(ACK),
	SRX_ROCE_RC_ATOMIC_ACK		= SRX_ROCE_RC(ATOMIC_ACK),
	SRX_ROCE_RC_CMP_SWAP		= SRX_ROCE_RC(CMP_SWAP),
	SRX_ROCE_RC_FETCH_ADD		= SRX_ROCE_RC(FETCH_ADD),
	SRX_ROCE_RC_SEND_LAST_INV	= SRX_ROCE_RC(SEND_LAST_INV),
	SRX_ROCE_RC_SEND_ONLY_INV	= SRX_ROCE_RC(SEND_ONLY_INV),
	SRX_ROCE_RC_FLUSH		= SRX_ROCE_RC(FLUSH),
	SRX_ROCE_RC_ATOMIC_WRITE	= SRX_ROCE_RC(ATOMIC_WRITE),	/* 0x1d */

	SRX_ROCE_UC_SEND_FIRST		= SRX_ROCE_UC(SEND_FIRST),	/* 0x20 */
	SRX_ROCE_UC_SEND_MIDDLE		= SRX_ROCE_UC(SEND_MIDDLE),
	SRX_ROCE_UC_SEND_LAST		= SRX_ROCE_UC(SEND_LAST),
	SRX_ROCE_UC_SEND_LAST_IMM	= SRX_ROCE_UC(SEND_LAST_IMM),
	SRX_ROCE_UC_SEND_ONLY		= SRX_ROCE_UC(SEND_ONLY),
	SRX_ROCE_UC_SEND_ONLY_IMM	= SRX_ROCE_UC(SEND_ONLY_IMM),
	SRX_ROCE_UC_WRITE_FIRST		= SRX_ROCE_UC(WRITE_FIRST),
	SRX_ROCE_UC_WRITE_MIDDLE	= SRX_ROCE_UC(WRITE_MIDDLE),
	SRX_ROCE_UC_WRITE_LAST		= SRX_ROCE_UC(WRITE_LAST),
	SRX_ROCE_UC_WRITE_LAST_IMM	= SRX_ROCE_UC(WRITE_LAST_IMM),
	SRX_ROCE_UC_WRITE_ONLY		= SRX_ROCE_UC(WRITE_ONLY),
	SRX_ROCE_UC_WRITE_ONLY_IMM	= SRX_ROCE_UC(WRITE_ONLY_IMM),	/* 0x2b */

	SRX_ROCE_UD_SEND_ONLY		= SRX_ROCE_UD(SEND_ONLY),	/* 0x64 */
	SRX_ROCE_UD_SEND_ONLY_IMM	= SRX_ROCE_UD(SEND_ONLY_IMM),	/* 0x65 */

	/* [IBTA] Annex A17, congestion notification packet. */
	SRX_ROCE_CNP			= 0x81,
};

/* ------------------------------------------------------------------------
 * Header sizes. [IBTA] 9.2 (BTH) and 9.3 (extension headers); [rxe_hdr]
 * RXE_*_BYTES. Checked against the structs below.
 */
enum srx_roce_hdr_bytes {
	SRX_ROCE_BTH_BYTES	= 12,
	SRX_ROCE_RETH_BYTES	= 16,
	SRX_ROCE_AETH_BYTES	= 4,
	SRX_ROCE_ATMETH_BYTES	= 28,
	SRX_ROCE_ATMACK_BYTES	= 8,
	SRX_ROCE_IMMDT_BYTES	= 4,
	SRX_ROCE_IETH_BYTES	= 4,
	SRX_ROCE_DETH_BYTES	= 8,
	SRX_ROCE_FETH_BYTES	= 4,
	/* BTH + the longest extension list (AtomicETH, 28): 40 bytes. */
	SRX_ROCE_HDR_MAX	= SRX_ROCE_BTH_BYTES + SRX_ROCE_ATMETH_BYTES,
};

/* An 8-byte payload is all an ATOMIC_WRITE carries ([rxe_op] of 6.12). */
#define SRX_ROCE_ATOMIC_WRITE_BYTES	8

/* ------------------------------------------------------------------------
 * Base Transport Header, [IBTA] 9.2; [rxe_hdr] struct rxe_bth and BTH_*.
 *
 *   byte 0   opcode
 *   byte 1   SE(7) | M(6) | PadCnt(5:4) | TVer(3:0)
 *   2-3      P_Key
 *   byte 4   FECN(7) | BECN(6) | reserved(5:0)    (RoCE v2: F/B unused, 0)
 *   5-7      DestQP, 24 bits
 *   byte 8   AckReq(7) | reserved(6:0)
 *   9-11     PSN, 24 bits
 */
struct srx_bth {
	u8	opcode;
	u8	flags;
	__be16	pkey;
	__be32	qpn;	/* F, B, reserved 6, DestQP 24 */
	__be32	apsn;	/* AckReq, reserved 7, PSN 24 */
} __packed;

#define SRX_BTH_SE		0x80
#define SRX_BTH_MIG		0x40
#define SRX_BTH_PAD_MASK	0x30
#define SRX_BTH_PAD_SHIFT	4
#define SRX_BTH_TVER_MASK	0x0f
#define SRX_BTH_FECN		0x80000000u
#define SRX_BTH_BECN		0x40000000u
#define SRX_BTH_ACKREQ		0x80000000u
#define SRX_BTH_QPN_MASK	0x00ffffffu
#define SRX_BTH_PSN_MASK	0x00ffffffu

/* The only transport header version; [rxe_hdr] BTH_TVER. */
#define SRX_BTH_TVER		0
/* The default partition, full member: ib_mad.h IB_DEFAULT_PKEY_FULL. */
#define SRX_PKEY_DEFAULT	0xffff
/* DestQP of multicast (UD only): ib_verbs.h IB_MULTICAST_QPN. */
#define SRX_QPN_MULTICAST	0xffffff

static inline u8 srx_bth_opcode(const struct srx_bth *bth)
{
	return bth->opcode;
}

static inline void srx_bth_set_opcode(struct srx_bth *bth, u8 opcode)
{
	bth->opcode = opcode;
}

static inline bool srx_bth_se(const struct srx_bth *bth)
{
	return bth->flags & SRX_BTH_SE;
}

static inline void srx_bth_set_se(struct srx_bth *bth, bool se)
{
	bth->flags = (bth->flags & ~SRX_BTH_SE) | (se ? SRX_BTH_SE : 0);
}

static inline bool srx_bth_mig(const struct srx_bth *bth)
{
	return bth->flags & SRX_BTH_MIG;
}

static inline void srx_bth_set_mig(struct srx_bth *bth, bool mig)
{
	bth->flags = (bth->flags & ~SRX_BTH_MIG) | (mig ? SRX_BTH_MIG : 0);
}

static inline u8 srx_bth_pad(const struct srx_bth *bth)
{
	return (bth->flags & SRX_BTH_PAD_MASK) >> SRX_BTH_PAD_SHIFT;
}

static inline void srx_bth_set_pad(struct srx_bth *bth, u8 pad)
{
	bth->flags = (bth->flags & ~SRX_BTH_PAD_MASK) |
		     ((pad << SRX_BTH_PAD_SHIFT) & SRX_BTH_PAD_MASK);
}

static inline u8 srx_bth_tver(const struct srx_bth *bth)
{
	return bth->flags & SRX_BTH_TVER_MASK;
}

static inline void srx_bth_set_tver(struct srx_bth *bth, u8 tver)
{
	bth->flags = (bth->flags & ~SRX_BTH_TVER_MASK) |
		     (tver & SRX_BTH_TVER_MASK);
}

static inline u16 srx_bth_pkey(const struct srx_bth *bth)
{
	return be16_to_cpu(bth->pkey);
}

static inline void srx_bth_set_pkey(struct srx_bth *bth, u16 pkey)
{
	bth->pkey = cpu_to_be16(pkey);
}

static inline bool srx_bth_fecn(const struct srx_bth *bth)
{
	return be32_to_cpu(bth->qpn) & SRX_BTH_FECN;
}

static inline void srx_bth_set_fecn(struct srx_bth *bth, bool fecn)
{
	u32 v = be32_to_cpu(bth->qpn) & ~SRX_BTH_FECN;

	bth->qpn = cpu_to_be32(v | (fecn ? SRX_BTH_FECN : 0));
}

static inline bool srx_bth_becn(const struct srx_bth *bth)
{
	return be32_to_cpu(bth->qpn) & SRX_BTH_BECN;
}

static inline void srx_bth_set_becn(struct srx_bth *bth, bool becn)
{
	u32 v = be32_to_cpu(bth->qpn) & ~SRX_BTH_BECN;

	bth->qpn = cpu_to_be32(v | (becn ? SRX_BTH_BECN : 0));
}

static inline u32 srx_bth_qpn(const struct srx_bth *bth)
{
	return be32_to_cpu(bth->qpn) & SRX_BTH_QPN_MASK;
}

/* Bits above the 24 of a QPN are dropped; the reserved ones are kept. */
static inline void srx_bth_set_qpn(struct srx_bth *bth, u32 qpn)
{
	u32 v = be32_to_cpu(bth->qpn) & ~SRX_BTH_QPN_MASK;

	bth->qpn = cpu_to_be32(v | (qpn & SRX_BTH_QPN_MASK));
}

static inline bool srx_bth_ackreq(const struct srx_bth *bth)
{
	return be32_to_cpu(bth->apsn) & SRX_BTH_ACKREQ;
}

static inline void srx_bth_set_ackreq(struct srx_bth *bth, bool ackreq)
{
	u32 v = be32_to_cpu(bth->apsn) & ~SRX_BTH_ACKREQ;

	bth->apsn = cpu_to_be32(v | (ackreq ? SRX_BTH_ACKREQ : 0));
}

static inline u32 srx_bth_psn(const struct srx_bth *bth)
{
	return be32_to_cpu(bth->apsn) & SRX_BTH_PSN_MASK;
}

static inline void srx_bth_set_psn(struct srx_bth *bth, u32 psn)
{
	u32 v = be32_to_cpu(bth->apsn) & ~SRX_BTH_PSN_MASK;

	bth->apsn = cpu_to_be32(v | (psn & SRX_BTH_PSN_MASK));
}

/* ------------------------------------------------------------------------
 * RDMA Extended Transport Header, [IBTA] 9.3; [rxe_hdr] struct rxe_reth.
 * On WRITE FIRST/ONLY(_IMM), READ_REQ, FLUSH and ATOMIC_WRITE.
 */
struct srx_reth {
	__be64	va;
	__be32	rkey;
	__be32	len;	/* DMA length: of the whole message */
} __packed;

static inline u64 srx_reth_va(const struct srx_reth *reth)
{
	return be64_to_cpu(reth->va);
}

static inline void srx_reth_set_va(struct srx_reth *reth, u64 va)
{
	reth->va = cpu_to_be64(va);
}

static inline u32 srx_reth_rkey(const struct srx_reth *reth)
{
	return be32_to_cpu(reth->rkey);
}

static inline void srx_reth_set_rkey(struct srx_reth *reth, u32 rkey)
{
	reth->rkey = cpu_to_be32(rkey);
}

static inline u32 srx_reth_len(const struct srx_reth *reth)
{
	return be32_to_cpu(reth->len);
}

static inline void srx_reth_set_len(struct srx_reth *reth, u32 len)
{
	reth->len = cpu_to_be32(len);
}

/* ------------------------------------------------------------------------
 * ACK Extended Transport Header, [IBTA] 9.3 and 9.7.5; [rxe_hdr]
 * struct rxe_aeth and enum aeth_syndrome. One byte of syndrome, then the
 * 24-bit MSN. Syndrome bits 7:5 are the type, bits 4:0 its value: the
 * credit count of an ACK, the timer code of an RNR NAK, the code of a NAK.
 */
struct srx_aeth {
	__be32	smsn;
} __packed;

#define SRX_AETH_MSN_MASK	0x00ffffffu
#define SRX_AETH_SYN_SHIFT	24

enum srx_aeth_type {
	SRX_AETH_TYPE_ACK	= 0x00,
	SRX_AETH_TYPE_RNR_NAK	= 0x20,
	SRX_AETH_TYPE_RESERVED	= 0x40,
	SRX_AETH_TYPE_NAK	= 0x60,
	SRX_AETH_TYPE_MASK	= 0xe0,
	SRX_AETH_VALUE_MASK	= 0x1f,
};

/*
 * The credit field's "no limit" value ([rxe_hdr] AETH_ACK_UNLIMITED): rxe
 * always sends it and ignores the peer's credits (../shared/ROCE.md).
 */
#define SRX_AETH_CREDITS_UNLIMITED	0x1f

/* NAK codes, [IBTA] 9.7.5; [rxe_hdr] AETH_NAK_* (0x60 | code). */
enum srx_aeth_nak {
	SRX_AETH_NAK_PSN_SEQ	= 0,	/* PSN sequence error */
	SRX_AETH_NAK_INV_REQ	= 1,	/* invalid request */
	SRX_AETH_NAK_REM_ACCESS	= 2,	/* remote access error */
	SRX_AETH_NAK_REM_OP	= 3,	/* remote operational error */
	SRX_AETH_NAK_INV_RD_REQ	= 4,	/* invalid RD request (RD only) */
};

static inline u8 srx_aeth_syndrome(const struct srx_aeth *aeth)
{
	return be32_to_cpu(aeth->smsn) >> SRX_AETH_SYN_SHIFT;
}

static inline u8 srx_aeth_type(const struct srx_aeth *aeth)
{
	return srx_aeth_syndrome(aeth) & SRX_AETH_TYPE_MASK;
}

/* The 5-bit value: credits, RNR timer code or NAK code, by the type. */
static inline u8 srx_aeth_value(const struct srx_aeth *aeth)
{
	return srx_aeth_syndrome(aeth) & SRX_AETH_VALUE_MASK;
}

/* The credit count of an ACK (SRX_AETH_TYPE_ACK). */
static inline u8 srx_aeth_credits(const struct srx_aeth *aeth)
{
	return srx_aeth_value(aeth);
}

/* The timer code of an RNR NAK: srx_rnr_timer_usec[] gives its time. */
static inline u8 srx_aeth_rnr_timer(const struct srx_aeth *aeth)
{
	return srx_aeth_value(aeth);
}

/* The code of a NAK (SRX_AETH_TYPE_NAK): enum srx_aeth_nak. */
static inline u8 srx_aeth_nak_code(const struct srx_aeth *aeth)
{
	return srx_aeth_value(aeth);
}

static inline u32 srx_aeth_msn(const struct srx_aeth *aeth)
{
	return be32_to_cpu(aeth->smsn) & SRX_AETH_MSN_MASK;
}

static inline void srx_aeth_set(struct srx_aeth *aeth, u8 syndrome, u32 msn)
{
	aeth->smsn = cpu_to_be32((u32)syndrome << SRX_AETH_SYN_SHIFT |
				 (msn & SRX_AETH_MSN_MASK));
}

static inline void srx_aeth_set_syndrome(struct srx_aeth *aeth, u8 syndrome)
{
	srx_aeth_set(aeth, syndrome, srx_aeth_msn(aeth));
}

static inline void srx_aeth_set_msn(struct srx_aeth *aeth, u32 msn)
{
	srx_aeth_set(aeth, srx_aeth_syndrome(aeth), msn);
}

/* Syndromes of each type, for the builders. */
static inline u8 srx_aeth_syn_ack(u8 credits)
{
	return SRX_AETH_TYPE_ACK | (credits & SRX_AETH_VALUE_MASK);
}

static inline u8 srx_aeth_syn_rnr_nak(u8 timer)
{
	return SRX_AETH_TYPE_RNR_NAK | (timer & SRX_AETH_VALUE_MASK);
}

static inline u8 srx_aeth_syn_nak(enum srx_aeth_nak code)
{
	return SRX_AETH_TYPE_NAK | (code & SRX_AETH_VALUE_MASK);
}

/*
 * The RNR NAK timer: the minimum time a requester waits before retrying,
 * in microseconds, by the 5-bit code ([IBTA] 9.7.5, RNR NAK timer field
 * values; the names of ib_verbs.h's enum ib_rnr_timeout give each). In
 * roce_opcode.c. rxe_comp.c's rnrnak_usec[] has 61410 for code 25, a typo
 * for IB_RNR_TIMER_061_44's 61.44 ms: srx waits 61440.
 */
#define SRX_RNR_TIMER_CODES	32
extern const u32 srx_rnr_timer_usec[SRX_RNR_TIMER_CODES];

/* ------------------------------------------------------------------------
 * Atomic Extended Transport Header, [IBTA] 9.3; [rxe_hdr] struct
 * rxe_atmeth. On CMP_SWAP and FETCH_ADD: 28 bytes, so swap_add and cmp
 * are 4-byte aligned relative to BTH at best.
 */
struct srx_atmeth {
	__be64	va;
	__be32	rkey;
	__be64	swap_add;	/* swap data, or the add data of FETCH_ADD */
	__be64	cmp;		/* compare data; 0 on FETCH_ADD */
} __packed;

static inline u64 srx_atmeth_va(const struct srx_atmeth *a)
{
	return be64_to_cpu(a->va);
}

static inline void srx_atmeth_set_va(struct srx_atmeth *a, u64 va)
{
	a->va = cpu_to_be64(va);
}

static inline u32 srx_atmeth_rkey(const struct srx_atmeth *a)
{
	return be32_to_cpu(a->rkey);
}

static inline void srx_atmeth_set_rkey(struct srx_atmeth *a, u32 rkey)
{
	a->rkey = cpu_to_be32(rkey);
}

static inline u64 srx_atmeth_swap_add(const struct srx_atmeth *a)
{
	return be64_to_cpu(a->swap_add);
}

static inline void srx_atmeth_set_swap_add(struct srx_atmeth *a, u64 v)
{
	a->swap_add = cpu_to_be64(v);
}

static inline u64 srx_atmeth_cmp(const struct srx_atmeth *a)
{
	return be64_to_cpu(a->cmp);
}

static inline void srx_atmeth_set_cmp(struct srx_atmeth *a, u64 v)
{
	a->cmp = cpu_to_be64(v);
}

/* ------------------------------------------------------------------------
 * Atomic Acknowledge Extended Transport Header, [IBTA] 9.3; [rxe_hdr]
 * struct rxe_atmack. After the AETH of an ATOMIC_ACK: the original value.
 */
struct srx_atmack {
	__be64	orig;
} __packed;

static inline u64 srx_atmack_orig(const struct srx_atmack *a)
{
	return be64_to_cpu(a->orig);
}

static inline void srx_atmack_set_orig(struct srx_atmack *a, u64 orig)
{
	a->orig = cpu_to_be64(orig);
}

/* ------------------------------------------------------------------------
 * Immediate Data Extended Transport Header, [IBTA] 9.3; [rxe_hdr] struct
 * rxe_immdt. Kept big-endian: the verbs carry imm_data as __be32 already.
 */
struct srx_immdt {
	__be32	imm;
} __packed;

static inline __be32 srx_immdt_imm(const struct srx_immdt *i)
{
	return i->imm;
}

static inline void srx_immdt_set_imm(struct srx_immdt *i, __be32 imm)
{
	i->imm = imm;
}

/* ------------------------------------------------------------------------
 * Invalidate Extended Transport Header, [IBTA] 9.3; [rxe_hdr] struct
 * rxe_ieth. On SEND_LAST_INV and SEND_ONLY_INV: the R_Key to invalidate.
 */
struct srx_ieth {
	__be32	rkey;
} __packed;

static inline u32 srx_ieth_rkey(const struct srx_ieth *i)
{
	return be32_to_cpu(i->rkey);
}

static inline void srx_ieth_set_rkey(struct srx_ieth *i, u32 rkey)
{
	i->rkey = cpu_to_be32(rkey);
}

/* ------------------------------------------------------------------------
 * Datagram Extended Transport Header, [IBTA] 9.3; [rxe_hdr] struct
 * rxe_deth. First after BTH on UD: Q_Key, then reserved 8 | SrcQP 24.
 */
struct srx_deth {
	__be32	qkey;
	__be32	sqp;
} __packed;

#define SRX_DETH_SQP_MASK	0x00ffffffu
/* The Q_Key of QP1: [rxe_hdr] GSI_QKEY; ../shared/ROCE.md. */
#define SRX_GSI_QKEY		0x80010000u

static inline u32 srx_deth_qkey(const struct srx_deth *d)
{
	return be32_to_cpu(d->qkey);
}

static inline void srx_deth_set_qkey(struct srx_deth *d, u32 qkey)
{
	d->qkey = cpu_to_be32(qkey);
}

static inline u32 srx_deth_sqp(const struct srx_deth *d)
{
	return be32_to_cpu(d->sqp) & SRX_DETH_SQP_MASK;
}

/* Writes the reserved byte as zero. */
static inline void srx_deth_set_sqp(struct srx_deth *d, u32 sqp)
{
	d->sqp = cpu_to_be32(sqp & SRX_DETH_SQP_MASK);
}

/* ------------------------------------------------------------------------
 * Flush Extended Transport Header, IBTA 1.5 memory placement extensions;
 * [rxe_hdr] of 6.12, struct rxe_feth and FETH_*: reserved 26 bits, the
 * selectivity level in bits 5:4, the placement type in bits 3:0. Before
 * the RETH of a FLUSH ([rxe_op] of 6.12).
 */
struct srx_feth {
	__be32	bits;
} __packed;

#define SRX_FETH_PLT_MASK	0x0000000fu
#define SRX_FETH_SEL_MASK	0x00000030u
#define SRX_FETH_SEL_SHIFT	4

static inline u8 srx_feth_plt(const struct srx_feth *f)
{
	return be32_to_cpu(f->bits) & SRX_FETH_PLT_MASK;
}

static inline u8 srx_feth_sel(const struct srx_feth *f)
{
	return (be32_to_cpu(f->bits) & SRX_FETH_SEL_MASK) >> SRX_FETH_SEL_SHIFT;
}

/* Writes the reserved bits as zero. */
static inline void srx_feth_set(struct srx_feth *f, u8 plt, u8 sel)
{
	f->bits = cpu_to_be32(((u32)sel << SRX_FETH_SEL_SHIFT &
			       SRX_FETH_SEL_MASK) |
			      (plt & SRX_FETH_PLT_MASK));
}

static_assert(sizeof(struct srx_bth) == SRX_ROCE_BTH_BYTES);
static_assert(sizeof(struct srx_reth) == SRX_ROCE_RETH_BYTES);
static_assert(sizeof(struct srx_aeth) == SRX_ROCE_AETH_BYTES);
static_assert(sizeof(struct srx_atmeth) == SRX_ROCE_ATMETH_BYTES);
static_assert(sizeof(struct srx_atmack) == SRX_ROCE_ATMACK_BYTES);
static_assert(sizeof(struct srx_immdt) == SRX_ROCE_IMMDT_BYTES);
static_assert(sizeof(struct srx_ieth) == SRX_ROCE_IETH_BYTES);
static_assert(sizeof(struct srx_deth) == SRX_ROCE_DETH_BYTES);
static_assert(sizeof(struct srx_feth) == SRX_ROCE_FETH_BYTES);

/* ------------------------------------------------------------------------
 * The opcode table (roce_opcode.c): what each opcode carries.
 */

/* Extension headers, by id. 0 ends a list. */
enum srx_roce_hdr {
	SRX_ROCE_HDR_NONE = 0,
	SRX_ROCE_RETH,
	SRX_ROCE_AETH,
	SRX_ROCE_ATMETH,
	SRX_ROCE_ATMACK,
	SRX_ROCE_IMMDT,
	SRX_ROCE_IETH,
	SRX_ROCE_DETH,
	SRX_ROCE_FETH,
	SRX_ROCE_HDR_COUNT
};

/* The longest list of extension headers an opcode carries. */
#define SRX_ROCE_EXT_MAX	2

enum srx_roce_qpt {
	SRX_ROCE_QPT_RC = 1,
	SRX_ROCE_QPT_UC,
	SRX_ROCE_QPT_UD,
};

/*
 * Flags of an opcode. Exactly one of REQ, RESP and ACK: a request goes to
 * the responder; a READ response and an ACK/ATOMIC_ACK to the requester.
 * Position: FIRST, MIDDLE or LAST, ONLY being FIRST | LAST (ACKs count as
 * ONLY, like rxe's START|END). The operation bits (SEND ... ATOMIC_WRITE)
 * are set on requests only, as rxe sets its RXE_*_MASK.
 */
enum srx_roce_flags {
	SRX_ROCE_F_REQ		= 1u << 0,
	SRX_ROCE_F_RESP		= 1u << 1,	/* RDMA READ response */
	SRX_ROCE_F_ACK		= 1u << 2,	/* ACK or ATOMIC_ACK */
	SRX_ROCE_F_FIRST	= 1u << 3,
	SRX_ROCE_F_MIDDLE	= 1u << 4,
	SRX_ROCE_F_LAST		= 1u << 5,
	SRX_ROCE_F_ONLY		= SRX_ROCE_F_FIRST | SRX_ROCE_F_LAST,
	/* Payload may follow the headers (zero bytes included). */
	SRX_ROCE_F_PAYLOAD	= 1u << 6,
	SRX_ROCE_F_IMM		= 1u << 7,
	SRX_ROCE_F_INV		= 1u << 8,
	/*
	 * The responder answers every such request with a response packet
	 * (READ response or ATOMIC_ACK; a zero-length READ_RESP_ONLY for
	 * FLUSH and ATOMIC_WRITE as rxe does, ../shared/ROCE.md) whatever
	 * its AckReq bit ([IBTA] 9.7.5). AckReq only matters on the other
	 * RC requests, and not at all on UC and UD.
	 */
	SRX_ROCE_F_ANSWERED	= 1u << 9,
	SRX_ROCE_F_SEND		= 1u << 10,
	SRX_ROCE_F_WRITE	= 1u << 11,
	SRX_ROCE_F_READ		= 1u << 12,
	SRX_ROCE_F_ATOMIC	= 1u << 13,	/* CMP_SWAP, FETCH_ADD */
	SRX_ROCE_F_FLUSH	= 1u << 14,
	SRX_ROCE_F_ATOMIC_WRITE	= 1u << 15,
};

/*
 * One opcode. A zero hdr_len marks an opcode srx does not know. ext[] lists
 * the extension headers in wire order; off[] gives each one's offset from
 * the start of the BTH (0: absent, since BTH is at 0); the payload starts
 * at hdr_len. roce_opcode.c computes off[] and hdr_len from ext[].
 */
struct srx_roce_opcode {
	const char	*name;
	u32		flags;
	u8		qpt;
	u8		hdr_len;
	u8		ext[SRX_ROCE_EXT_MAX];
	u8		off[SRX_ROCE_HDR_COUNT];
};

/* roce_opcode.c */
extern const struct srx_roce_opcode srx_roce_opcodes[256];

/* The table entry of @opcode, or NULL if srx does not know it. */
static inline const struct srx_roce_opcode *srx_roce_opcode(u8 opcode)
{
	const struct srx_roce_opcode *op = &srx_roce_opcodes[opcode];

	return op->hdr_len ? op : NULL;
}

/* The size of extension header @h on the wire (0 for NONE or unknown). */
static inline unsigned int srx_roce_hdr_bytes(enum srx_roce_hdr h)
{
	switch (h) {
	case SRX_ROCE_RETH:	return SRX_ROCE_RETH_BYTES;
	case SRX_ROCE_AETH:	return SRX_ROCE_AETH_BYTES;
	case SRX_ROCE_ATMETH:	return SRX_ROCE_ATMETH_BYTES;
	case SRX_ROCE_ATMACK:	return SRX_ROCE_ATMACK_BYTES;
	case SRX_ROCE_IMMDT:	return SRX_ROCE_IMMDT_BYTES;
	case SRX_ROCE_IETH:	return SRX_ROCE_IETH_BYTES;
	case SRX_ROCE_DETH:	return SRX_ROCE_DETH_BYTES;
	case SRX_ROCE_FETH:	return SRX_ROCE_FETH_BYTES;
	default:		return 0;
	}
}

/*
 * The pad that brings @payload_len to a multiple of 4 ([IBTA] 9.2, PadCnt;
 * rxe_req.c's init_req_packet() computes it the same way).
 */
static inline u8 srx_roce_pad(u32 payload_len)
{
	return -payload_len & 3;
}

/* ------------------------------------------------------------------------
 * The parser (roce_pkt.c).
 */

/*
 * Why a packet is refused, one reason per kind of bad packet so the net
 * layer can count each. srx_roce_parse() returns the negated value.
 */
enum srx_roce_err {
	SRX_ROCE_E_SHORT_BTH = 1,	/* shorter than a BTH */
	SRX_ROCE_E_OPCODE,		/* reserved, RD or unknown opcode */
	SRX_ROCE_E_CNP,			/* a CNP: srx has no congestion control */
	SRX_ROCE_E_TVER,		/* TVer other than 0 */
	SRX_ROCE_E_PKEY,		/* a P_Key rxe would not accept */
	SRX_ROCE_E_QPN,			/* DestQP 0: no SMI on RoCE */
	SRX_ROCE_E_SHORT_HDR,		/* ends inside the extension headers */
	SRX_ROCE_E_SHORT_ICRC,		/* no room for the ICRC after them */
	SRX_ROCE_E_ALIGN,		/* length not a multiple of 4 */
	SRX_ROCE_E_PAD_NO_PAYLOAD,	/* pad on an opcode without payload */
	SRX_ROCE_E_PAYLOAD,		/* bytes on an opcode without payload */
	SRX_ROCE_E_PAD_OVER,		/* pad longer than the payload */
	SRX_ROCE_E_PAD_NOT_LAST,	/* pad on a FIRST or MIDDLE packet */
	SRX_ROCE_E_TOO_LONG,		/* payload over SRX_ROCE_MAX_PAYLOAD */
	SRX_ROCE_E_ATOMIC_WRITE_LEN,	/* ATOMIC_WRITE payload other than 8 */
	SRX_ROCE_E_COUNT
};

/*
 * A parsed packet. Offsets count from the start of the BTH. The offset of
 * each present extension header is op->off[] (srx_roce_pkt_hdr()).
 */
struct srx_roce_pkt {
	const struct srx_roce_opcode	*op;
	u32	qpn;
	u32	psn;
	u32	payload_off;	/* == op->hdr_len */
	u32	payload_len;	/* without pad and ICRC */
	u16	pkey;
	u8	opcode;
	u8	pad;
	bool	se;
	bool	mig;
	bool	ackreq;
	bool	fecn;
	bool	becn;
};

int srx_roce_parse(const void *buf, u32 len, struct srx_roce_pkt *pkt);
const char *srx_roce_err_name(int err);

/*
 * Extension header @h of a packet srx_roce_parse() accepted from @buf, or
 * NULL if its opcode carries none.
 */
static inline const void *srx_roce_pkt_hdr(const struct srx_roce_pkt *pkt,
					    const void *buf,
					    enum srx_roce_hdr h)
{
	u8 off = h > SRX_ROCE_HDR_NONE && h < SRX_ROCE_HDR_COUNT ?
		 pkt->op->off[h] : 0;

	return off ? (const u8 *)buf + off : NULL;
}

/* ------------------------------------------------------------------------
 * The header builder (roce_pkt.c).
 *
 * Everything a packet's headers hold, as plain values. The engine fills
 * one from its private copy of the WQE and the packet's PSN, and
 * srx_roce_build_hdr() writes every byte of the headers from it alone, so
 * building again from the same values (a retransmission) gives the same
 * bytes. Fields of headers the opcode does not carry are ignored.
 */
struct srx_roce_hdr_args {
	/* BTH */
	u8	opcode;
	u8	pad;		/* 0-3: srx_roce_pad() of the payload */
	bool	se;
	bool	mig;
	bool	ackreq;
	u16	pkey;
	u32	qpn;		/* DestQP, 24 bits */
	u32	psn;		/* 24 bits */
	/* RETH, and va/rkey of AtomicETH */
	u64	va;
	u32	rkey;
	u32	dma_len;
	/* AtomicETH */
	u64	swap_add;
	u64	cmp;
	/* AETH */
	u8	syndrome;
	u32	msn;		/* 24 bits */
	/* AtomicAckETH */
	u64	orig;
	/* ImmDt: network order, as the verbs give it */
	__be32	imm;
	/* IETH */
	u32	inv_rkey;
	/* DETH */
	u32	qkey;
	u32	src_qpn;	/* 24 bits */
	/* FETH */
	u8	flush_type;	/* placement type, 4 bits */
	u8	flush_level;	/* selectivity level, 2 bits */
};

int srx_roce_build_hdr(void *buf, u32 room, const struct srx_roce_hdr_args *a);

#endif /* SRX_ROCE_HDR_H */
