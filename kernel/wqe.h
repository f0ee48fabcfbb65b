/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Kernel-private work queue entries, and the copy-and-validate step that
 * fills them from a shared ring slot.
 *
 * A process writes its WQEs into ring memory it keeps mapped, and may keep
 * writing there after it published them. So the kernel reads a slot exactly
 * once: srx_swqe_copy()/srx_rwqe_copy() copy the fixed header, validate the
 * copy, then copy exactly the number of SGEs (or inline bytes) that copy
 * allows, and sum the lengths from the copied SGEs. Everything after reads
 * the private entry only: the engine builds every packet (first send and
 * retransmissions alike) from the entry and a PSN, so nothing the process
 * writes after the take changes what goes on the wire.
 *
 * An invalid WQE is not refused here: its entry records why
 * (enum srx_wqe_result) and carries nothing to send (no SGEs, no inline
 * data, length 0). The engine completes it with srx_wqe_wc_status() and
 * moves the QP to the error state; a flush completes it as flushed.
 *
 * Pure code over memory the caller owns: no locking, no kernel headers
 * beyond types and memcpy(). The same file is compiled into the host unit
 * tests (selftests/host/wqe_test.c), which define u8..u64 and barrier().
 */
#ifndef SRX_WQE_H
#define SRX_WQE_H

#ifdef __KERNEL__
#include <linux/compiler.h>
#include <linux/string.h>
#endif

#include <rdma/ib_user_verbs.h>	/* IB_UVERBS_WR_*, == IB_WR_*, IBV_WR_* */
#include <rdma/srx-abi.h>

#include "mr_check.h"	/* srx_sge_total() */

/*
 * Send flags a WQE may carry: IB_SEND_FENCE, _SIGNALED, _SOLICITED and
 * _INLINE (== IBV_SEND_*; take.c and the host test check the values). Any
 * other bit asks for something srx does not do (IP_CSUM needs a device that
 * reports checksum offload, srx reports none) and makes the WQE invalid.
 */
#define SRX_SEND_FENCE		0x1
#define SRX_SEND_SIGNALED	0x2
#define SRX_SEND_SOLICITED	0x4
#define SRX_SEND_INLINE		0x8
#define SRX_SEND_KNOWN		(SRX_SEND_FENCE | SRX_SEND_SIGNALED | \
				 SRX_SEND_SOLICITED | SRX_SEND_INLINE)

/* Work completion statuses an invalid WQE completes with (enum ib_wc_status). */
#define SRX_WC_SUCCESS		0
#define SRX_WC_LOC_LEN_ERR	1
#define SRX_WC_LOC_QP_OP_ERR	2

/*
 * RDMA ATOMIC WRITE (IBTA 1.5, Memory Placement Extensions): 15 in
 * libibverbs 44 (IBV_WR_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE 9) and in 6.12's
 * uAPI (IB_UVERBS_WR_ATOMIC_WRITE, IB_UVERBS_WC_ATOMIC_WRITE); 6.1's uAPI
 * has neither, hence numbers of our own. Its 8 bytes travel inline in the
 * WQE (libsrx's wr_atomic_write), so the value is the one taken at post
 * time, whatever the process writes afterwards.
 */
#define SRX_WR_ATOMIC_WRITE	15
#define SRX_WC_ATOMIC_WRITE	9

/*
 * IB_WR_REG_MR of the kernel (enum ib_wr_opcode, 0x20; device.c checks):
 * fast registration, posted by kernel consumers only, never by libsrx.
 */
#define SRX_WR_REG_MR		0x20
#define SRX_WR_BIND_MW		IB_UVERBS_WR_BIND_MW

/* Why a WQE is invalid; SRX_WQE_OK (0) when it is not. */
enum srx_wqe_result {
	SRX_WQE_OK = 0,
	SRX_WQE_BAD_OPCODE,	/* not accepted on this QP type by this device */
	SRX_WQE_BAD_FLAGS,	/* a send_flags bit outside SRX_SEND_KNOWN */
	SRX_WQE_RESERVED,	/* a reserved word is not zero */
	SRX_WQE_BAD_NUM_SGE,	/* num_sge > max_sge, or SGEs on an inline WQE */
	SRX_WQE_BAD_INLINE,	/* inline on an opcode without payload, too long,
				 * or inline_len on a WQE that is not inline */
	SRX_WQE_TOO_LONG,	/* length > the QP's maximum message size */
	SRX_WQE_ATOMIC_LEN,	/* an atomic's local buffer, or an ATOMIC
				 * WRITE's value, is not 8 bytes */
	SRX_WQE_BAD_AH,		/* UD: wr.ud.ah names no AH of the QP's PD
				 * (take.c; rxe: IB_WC_LOC_QP_OP_ERR) */
	SRX_WQE_RESULT_COUNT
};

/*
 * The completion status of an invalid WQE (ibv_poll_cq(3), IBTA 1.4
 * section 10.8.3, local errors): a message longer than the port takes, or
 * an atomic whose buffer is not 8 bytes, is a local length error; every
 * other defect of the WQE itself (an opcode the QP's transport does not
 * have, a malformed entry) is a local QP operation error.
 */
static inline u8 srx_wqe_wc_status(u8 result)
{
	switch (result) {
	case SRX_WQE_OK:
		return SRX_WC_SUCCESS;
	case SRX_WQE_TOO_LONG:
	case SRX_WQE_ATOMIC_LEN:
		return SRX_WC_LOC_LEN_ERR;
	default:
		return SRX_WC_LOC_QP_OP_ERR;
	}
}

/* What a work queue accepts; fixed when the QP is created. */
struct srx_wqe_limits {
	u64 send_ops;		/* BIT_ULL(opcode) accepted on this QP type */
	u64 max_msg;		/* longest message, bytes (SRX_MAX_MSG_SIZE) */
	u32 max_sge;		/* the ring's, as create_qp reported it */
	u32 max_inline;		/* the ring's; 0 for a receive queue */
	u32 datagram;		/* UD/GSI: the remote part is wr.ud */
	u32 reserved;
};

/*
 * The send engine's part of a send entry (first/last PSN, progress). The
 * take zeroes it when it fills the entry; from then on only the send engine
 * writes it, under the QP's send lock, until the WQE completes. Nothing
 * before the engine uses it.
 */
struct srx_swqe_engine {
	u32 first_psn;
	u32 last_psn;
	u32 state;
	u32 flags;
};

/*
 * A send WQE as the kernel took it. Written by the take, under the work
 * queue's lock, when it takes the WQE; read-only from then until the WQE
 * completes (done passes it), when the slot's next take may rewrite it.
 * Fixed stride: srx_swqe_stride().
 */
struct srx_swqe {
	u64 wr_id;
	u64 length;		/* message bytes: SGE lengths summed in 64 bits,
				 * or inline_len; 0 when invalid */
	u8 opcode;		/* enum ib_wr_opcode, as posted */
	u8 result;		/* enum srx_wqe_result */
	u16 send_flags;		/* SRX_SEND_* (IB_SEND_*) */
	u32 ex;			/* immediate data (network order) or the rkey
				 * to invalidate; meaningless for other opcodes */
	u32 num_sge;		/* entries of sge[]; 0 if inline or invalid */
	u32 inline_len;		/* bytes at sge[]; 0 unless inline and valid */
	union {			/* as the opcode and QP type say */
		struct {
			u64 remote_addr;
			u32 rkey;
		} rdma;
		struct {
			u64 remote_addr;
			u64 compare_add;
			u64 swap;
			u32 rkey;
		} atomic;
		struct {
			u32 ah;
			u32 remote_qpn;
			u32 remote_qkey;
		} ud;
		struct {
			u32 key;
			u32 access;
		} reg;
		struct srx_bind_wr bind;
	} wr;
	struct srx_swqe_engine eng;
	/* num_sge SGEs, or inline_len bytes of inline data */
	struct srx_sge sge[];
};

/*
 * A receive WQE as the kernel took it; written by the take, then read-only
 * until the WQE completes (as struct srx_swqe). Fixed stride:
 * srx_rwqe_stride().
 */
struct srx_rwqe {
	u64 wr_id;
	u64 length;		/* buffer bytes, summed in 64 bits; 0 if invalid */
	u32 num_sge;		/* entries of sge[]; 0 if invalid */
	u8 result;		/* enum srx_wqe_result */
	u8 reserved[3];
	struct srx_sge sge[];
};

/* Bytes between two private entries; a multiple of 8. */
static inline u32 srx_swqe_stride(u32 max_sge, u32 max_inline)
{
	u32 sges = max_sge * (u32)sizeof(struct srx_sge);
	u32 body = sges > max_inline ? sges : max_inline;

	return ((u32)sizeof(struct srx_swqe) + body + 7) & ~7u;
}

static inline u32 srx_rwqe_stride(u32 max_sge)
{
	return (u32)sizeof(struct srx_rwqe) +
	       max_sge * (u32)sizeof(struct srx_sge);
}

/* Opcodes with a payload of their own: the ones inline data is for. */
static inline int srx_wqe_opcode_has_payload(u32 opcode)
{
	switch (opcode) {
	case IB_UVERBS_WR_SEND:
	case IB_UVERBS_WR_SEND_WITH_IMM:
	case IB_UVERBS_WR_SEND_WITH_INV:
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
	case SRX_WR_ATOMIC_WRITE:
		return 1;
	default:
		return 0;
	}
}

static inline int srx_wqe_opcode_is_atomic(u32 opcode)
{
	switch (opcode) {
	case IB_UVERBS_WR_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD:
	case IB_UVERBS_WR_MASKED_ATOMIC_CMP_AND_SWP:
	case IB_UVERBS_WR_MASKED_ATOMIC_FETCH_AND_ADD:
		return 1;
	default:
		return 0;
	}
}

/*
 * READ, ATOMIC and ATOMIC WRITE: each takes a responder resource and ends
 * with its response (an ATOMIC WRITE's is an empty READ response, as 6.12's
 * rxe sends; ../shared/ROCE.md), so each counts against the initiator depth.
 */
static inline int srx_wqe_opcode_is_rd_atomic(u32 opcode)
{
	return opcode == IB_UVERBS_WR_RDMA_READ ||
	       opcode == SRX_WR_ATOMIC_WRITE ||
	       srx_wqe_opcode_is_atomic(opcode);
}

/*
 * Local operations: executed by the requester in their place in the send
 * queue, sending nothing (req.c). Their SGEs, if any, are never read.
 */
static inline int srx_wqe_opcode_is_local(u32 opcode)
{
	return opcode == IB_UVERBS_WR_LOCAL_INV || opcode == SRX_WR_REG_MR ||
	       opcode == SRX_WR_BIND_MW;
}

static inline int srx_wqe_opcode_is_rdma(u32 opcode)
{
	switch (opcode) {
	case IB_UVERBS_WR_RDMA_WRITE:
	case IB_UVERBS_WR_RDMA_WRITE_WITH_IMM:
	case IB_UVERBS_WR_RDMA_READ:
	case SRX_WR_ATOMIC_WRITE:	/* a RETH's address and rkey */
		return 1;
	default:
		return 0;
	}
}

/*
 * Validate the fixed part of a send WQE (a private copy of it): everything
 * that decides how much of the slot's body may be read. Checked in this
 * order, and the first failure is the result:
 *  - the opcode is accepted on this QP type by this device;
 *  - send_flags has only known bits;
 *  - reserved words are zero: reserved0, reserved1 and the reserved word of
 *    the remote part the opcode uses (wr.ud on a datagram QP, wr.atomic for
 *    an atomic, wr.rdma for RDMA WRITE/READ). The ABI's rule for input
 *    (srx-abi.h): a field the kernel does not know must not carry bits, so
 *    a newer provider that puts meaning there gets an error from this
 *    kernel, not a silent "ignored". Fields an opcode does not use (ex
 *    without immediate data or invalidation, the remote part of a SEND on a
 *    connected QP) are ignored: libsrx writes ex for every opcode;
 *  - an inline WQE has an opcode with a payload, no SGEs, and inline_len
 *    <= max_inline; any other WQE has inline_len 0 and num_sge <= max_sge;
 *  - an ATOMIC WRITE is inline (its 8 bytes are checked with the length).
 */
static inline u8 srx_send_hdr_check(const struct srx_send_wqe *h,
				    const struct srx_wqe_limits *lim)
{
	u32 opcode = h->opcode;
	u32 rsv;

	if (opcode >= 64 || !(lim->send_ops & (1ull << opcode)))
		return SRX_WQE_BAD_OPCODE;
	if (h->send_flags & ~SRX_SEND_KNOWN)
		return SRX_WQE_BAD_FLAGS;

	if (lim->datagram)
		rsv = h->wr.ud.reserved;
	else if (srx_wqe_opcode_is_atomic(opcode))
		rsv = h->wr.atomic.reserved;
	else if (srx_wqe_opcode_is_rdma(opcode))
		rsv = h->wr.rdma.reserved;
	else
		rsv = 0;
	if (h->reserved0 || h->reserved1 || rsv)
		return SRX_WQE_RESERVED;

	if (h->send_flags & SRX_SEND_INLINE) {
		if (!srx_wqe_opcode_has_payload(opcode) ||
		    h->inline_len > lim->max_inline)
			return SRX_WQE_BAD_INLINE;
		if (h->num_sge)
			return SRX_WQE_BAD_NUM_SGE;
	} else {
		if (h->inline_len || opcode == SRX_WR_ATOMIC_WRITE)
			return SRX_WQE_BAD_INLINE;
		if (h->num_sge > lim->max_sge)
			return SRX_WQE_BAD_NUM_SGE;
	}
	return SRX_WQE_OK;
}

/*
 * Validate the length of a send WQE whose header passed: @length is summed
 * in 64 bits from the copied SGEs, so 32 SGEs of 4 GiB - 1 cannot wrap
 * past the limit. An atomic reads or returns exactly 8 bytes, and an
 * ATOMIC WRITE writes exactly 8.
 */
static inline u8 srx_send_len_check(u32 opcode, u64 length,
				    const struct srx_wqe_limits *lim)
{
	if (length > lim->max_msg)
		return SRX_WQE_TOO_LONG;
	if ((srx_wqe_opcode_is_atomic(opcode) ||
	     opcode == SRX_WR_ATOMIC_WRITE) && length != 8)
		return SRX_WQE_ATOMIC_LEN;
	return SRX_WQE_OK;
}

/**
 * srx_swqe_copy - take one send WQE from a ring slot into a private entry
 * @e: the entry, srx_swqe_stride(@lim->max_sge, @lim->max_inline) bytes
 * @slot: the ring slot, which its writer may change at any time
 * @lim: what the work queue accepts
 *
 * Reads the slot's header once (one memcpy), validates that copy, then
 * reads exactly the SGEs or inline bytes the copy declares and @e has room
 * for. The barrier keeps the compiler from reading a header field from the
 * slot again instead of from the copy.
 * Return: @e->result.
 */
static inline u8 srx_swqe_copy(struct srx_swqe *e, const void *slot,
			       const struct srx_wqe_limits *lim)
{
	const u8 *body = (const u8 *)slot + sizeof(struct srx_send_wqe);
	struct srx_send_wqe h;
	u8 result;

	memcpy(&h, slot, sizeof(h));
	barrier();

	e->wr_id = h.wr_id;
	e->opcode = h.opcode;
	e->send_flags = h.send_flags;
	e->ex = h.ex;
	e->num_sge = 0;
	e->inline_len = 0;
	e->length = 0;
	memset(&e->wr, 0, sizeof(e->wr));
	memset(&e->eng, 0, sizeof(e->eng));

	result = srx_send_hdr_check(&h, lim);
	if (result != SRX_WQE_OK)
		goto out;

	if (lim->datagram) {
		e->wr.ud.ah = h.wr.ud.ah;
		e->wr.ud.remote_qpn = h.wr.ud.remote_qpn;
		e->wr.ud.remote_qkey = h.wr.ud.remote_qkey;
	} else if (srx_wqe_opcode_is_atomic(h.opcode)) {
		e->wr.atomic.remote_addr = h.wr.atomic.remote_addr;
		e->wr.atomic.compare_add = h.wr.atomic.compare_add;
		e->wr.atomic.swap = h.wr.atomic.swap;
		e->wr.atomic.rkey = h.wr.atomic.rkey;
	} else if (srx_wqe_opcode_is_rdma(h.opcode)) {
		e->wr.rdma.remote_addr = h.wr.rdma.remote_addr;
		e->wr.rdma.rkey = h.wr.rdma.rkey;
	} else if (h.opcode == SRX_WR_REG_MR) {
		e->wr.reg.key = h.wr.reg.key;
		e->wr.reg.access = h.wr.reg.access;
	} else if (h.opcode == SRX_WR_BIND_MW) {
		e->wr.bind.addr = h.wr.bind.addr;
		e->wr.bind.length = h.wr.bind.length;
		e->wr.bind.mw_rkey = h.wr.bind.mw_rkey;
		e->wr.bind.rkey = h.wr.bind.rkey;
		e->wr.bind.mr_lkey = h.wr.bind.mr_lkey;
		e->wr.bind.access = h.wr.bind.access;
	}

	if (h.send_flags & SRX_SEND_INLINE) {
		memcpy(e->sge, body, h.inline_len);
		e->inline_len = h.inline_len;
		e->length = h.inline_len;
	} else {
		memcpy(e->sge, body, (size_t)h.num_sge * sizeof(e->sge[0]));
		e->num_sge = h.num_sge;
		e->length = srx_sge_total(e->sge, e->num_sge);
	}

	result = srx_send_len_check(h.opcode, e->length, lim);
	if (result != SRX_WQE_OK) {
		e->num_sge = 0;
		e->inline_len = 0;
		e->length = 0;
	}
out:
	e->result = result;
	return result;
}

/*
 * Validate the fixed part of a receive WQE's copy: num_sge <= max_sge and
 * the reserved word zero (as for sends). A receive buffer's total length
 * is not limited: it is where a message of up to max_msg bytes lands, and
 * a message longer than the buffer is the responder's local length error
 * when it arrives (IBTA 1.4 section 9.9.3.1.2), not a malformed WQE; the
 * sum is kept in 64 bits so that comparison cannot wrap.
 */
static inline u8 srx_recv_hdr_check(const struct srx_recv_wqe *h,
				    const struct srx_wqe_limits *lim)
{
	if (h->reserved)
		return SRX_WQE_RESERVED;
	if (h->num_sge > lim->max_sge)
		return SRX_WQE_BAD_NUM_SGE;
	return SRX_WQE_OK;
}

/**
 * srx_rwqe_copy - take one receive WQE from a ring slot into a private entry
 * @e: the entry, srx_rwqe_stride(@lim->max_sge) bytes
 * @slot: the ring slot, which its writer may change at any time
 * @lim: what the work queue accepts
 *
 * As srx_swqe_copy(). Return: @e->result.
 */
static inline u8 srx_rwqe_copy(struct srx_rwqe *e, const void *slot,
			       const struct srx_wqe_limits *lim)
{
	const u8 *body = (const u8 *)slot + sizeof(struct srx_recv_wqe);
	struct srx_recv_wqe h;
	u8 result;

	memcpy(&h, slot, sizeof(h));
	barrier();

	e->wr_id = h.wr_id;
	e->num_sge = 0;
	e->length = 0;
	result = srx_recv_hdr_check(&h, lim);
	if (result == SRX_WQE_OK) {
		memcpy(e->sge, body, (size_t)h.num_sge * sizeof(e->sge[0]));
		e->num_sge = h.num_sge;
		e->length = srx_sge_total(e->sge, e->num_sge);
	}
	e->result = result;
	return result;
}

#endif /* SRX_WQE_H */
