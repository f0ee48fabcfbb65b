// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RoCE v2 header parser and header builder.
 *
 * srx_roce_parse() is the one place a received packet's transport headers
 * are validated, before anything is looked up: the net layer calls it from
 * the receive softirq on the bytes after the UDP header, once it has
 * checked the ICRC, and drops what it refuses, counting each reason. What
 * it accepts is a packet whose headers and payload lie inside the buffer
 * and agree with the opcode table; what needs a QP (QPN lookup, transport
 * type against the QP's, PSN, Q_Key, MTU, RETH bounds) is the engine's.
 *
 * srx_roce_build_hdr() writes the BTH and extension headers of an opcode
 * from plain values; the engine builds every packet, the first time and
 * every retransmission, from the same values, so the bytes are identical.
 *
 * Both are pure functions of their arguments: they run in any context,
 * take no lock, and build unchanged into the host tests and the fuzzer
 * (selftests/host/wire_test.c, wire_fuzz.c).
 */
#include "roce_hdr.h"

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#endif

/*
 * P_Keys srx accepts: exactly those rxe accepts. [rxe_recv] check_keys()
 * takes a packet whose P_Key pkey_match()es IB_DEFAULT_PKEY_FULL
 * (rxe_verbs.h: equal low 15 bits, not zero, one side a full member), so
 * 0xFFFF and the default partition's limited-member key 0x7FFF. srx's one
 * P_Key table entry is 0xFFFF, a full member, which may talk to both.
 */
static bool srx_roce_pkey_ok(u16 pkey)
{
	return (pkey & 0x7fff) == (SRX_PKEY_DEFAULT & 0x7fff);
}

/**
 * srx_roce_parse - validate the transport headers of a received packet
 * @buf: the packet from the first byte of its BTH
 * @len: bytes from the BTH to the end of the UDP payload, ICRC included
 * @pkt: filled in when the packet is accepted; untouched otherwise
 *
 * Reads only the 12 bytes of the BTH, and only when @len covers them: the
 * caller needs just that much (SRX_ROCE_HDR_MAX to read the extension
 * headers after) in linear memory. Checks, in this order, each failure
 * with its own code: BTH length; the opcode (CNP apart); TVer 0, as rxe's
 * hdr_check(); the P_Key (srx_roce_pkey_ok()); DestQP not 0, as rxe's
 * hdr_check(); room for the extension headers, then for the ICRC; a
 * length that is a multiple of 4 (PadCnt exists to make it one, [IBTA]
 * 9.2, and every sender pads so); then the payload rules of the opcode.
 * Does not check the ICRC, nor reserved bits, nor M (rxe sends 0 and
 * ConnectX 1, ../shared/ROCE.md).
 *
 * Context: any. Return: 0, or a negated enum srx_roce_err.
 */
int srx_roce_parse(const void *buf, u32 len, struct srx_roce_pkt *pkt)
{
	const struct srx_bth *bth = buf;
	const struct srx_roce_opcode *op;
	u32 qpn, rest, paylen;
	u8 opcode, pad;
	u16 pkey;

	if (len < SRX_ROCE_BTH_BYTES)
		return -SRX_ROCE_E_SHORT_BTH;

	opcode = srx_bth_opcode(bth);
	op = srx_roce_opcode(opcode);
	if (!op)
		return opcode == SRX_ROCE_CNP ? -SRX_ROCE_E_CNP :
						-SRX_ROCE_E_OPCODE;
	if (srx_bth_tver(bth) != SRX_BTH_TVER)
		return -SRX_ROCE_E_TVER;
	pkey = srx_bth_pkey(bth);
	if (!srx_roce_pkey_ok(pkey))
		return -SRX_ROCE_E_PKEY;
	qpn = srx_bth_qpn(bth);
	if (qpn == 0)
		return -SRX_ROCE_E_QPN;

	if (len < op->hdr_len)
		return -SRX_ROCE_E_SHORT_HDR;
	if (len - op->hdr_len < SRX_ROCE_ICRC_BYTES)
		return -SRX_ROCE_E_SHORT_ICRC;
	if (len % 4)
		return -SRX_ROCE_E_ALIGN;

	rest = len - op->hdr_len - SRX_ROCE_ICRC_BYTES;
	pad = srx_bth_pad(bth);
	if (!(op->flags & SRX_ROCE_F_PAYLOAD)) {
		if (pad)
			return -SRX_ROCE_E_PAD_NO_PAYLOAD;
		if (rest)
			return -SRX_ROCE_E_PAYLOAD;
	} else {
		if (pad > rest)
			return -SRX_ROCE_E_PAD_OVER;
		/*
		 * A FIRST or MIDDLE packet carries exactly the path MTU, a
		 * multiple of 4: only a message's last packet has a pad.
		 */
		if (pad && !(op->flags & SRX_ROCE_F_LAST))
			return -SRX_ROCE_E_PAD_NOT_LAST;
	}
	paylen = rest - pad;
	if (paylen > SRX_ROCE_MAX_PAYLOAD)
		return -SRX_ROCE_E_TOO_LONG;
	if ((op->flags & SRX_ROCE_F_ATOMIC_WRITE) &&
	    paylen != SRX_ROCE_ATOMIC_WRITE_BYTES)
		return -SRX_ROCE_E_ATOMIC_WRITE_LEN;

	pkt->op = op;
	pkt->qpn = qpn;
	pkt->psn = srx_bth_psn(bth);
	pkt->payload_off = op->hdr_len;
	pkt->payload_len = paylen;
	pkt->pkey = pkey;
	pkt->opcode = opcode;
	pkt->pad = pad;
	pkt->se = srx_bth_se(bth);
	pkt->mig = srx_bth_mig(bth);
	pkt->ackreq = srx_bth_ackreq(bth);
	pkt->fecn = srx_bth_fecn(bth);
	pkt->becn = srx_bth_becn(bth);
	return 0;
}

static const char *const srx_roce_err_names[SRX_ROCE_E_COUNT] = {
	[0]				= "ok",
	[SRX_ROCE_E_SHORT_BTH]		= "short_bth",
	[SRX_ROCE_E_OPCODE]		= "bad_opcode",
	[SRX_ROCE_E_CNP]		= "cnp",
	[SRX_ROCE_E_TVER]		= "bad_tver",
	[SRX_ROCE_E_PKEY]		= "bad_pkey",
	[SRX_ROCE_E_QPN]		= "qpn_zero",
	[SRX_ROCE_E_SHORT_HDR]		= "short_hdr",
	[SRX_ROCE_E_SHORT_ICRC]		= "short_icrc",
	[SRX_ROCE_E_ALIGN]		= "unaligned",
	[SRX_ROCE_E_PAD_NO_PAYLOAD]	= "pad_no_payload",
	[SRX_ROCE_E_PAYLOAD]		= "unexpected_payload",
	[SRX_ROCE_E_PAD_OVER]		= "pad_over_payload",
	[SRX_ROCE_E_PAD_NOT_LAST]	= "pad_not_last",
	[SRX_ROCE_E_TOO_LONG]		= "payload_too_long",
	[SRX_ROCE_E_ATOMIC_WRITE_LEN]	= "atomic_write_len",
};

/* A short name for what srx_roce_parse() returned, for counters and logs. */
const char *srx_roce_err_name(int err)
{
	unsigned int e = err < 0 ? -(unsigned int)err : (unsigned int)err;

	return e < SRX_ROCE_E_COUNT ? srx_roce_err_names[e] : "unknown";
}

/* Writes extension header @h of @a at @p (within the checked room). */
static void srx_roce_build_ext(u8 *p, enum srx_roce_hdr h,
			       const struct srx_roce_hdr_args *a)
{
	switch (h) {
	case SRX_ROCE_RETH: {
		struct srx_reth *reth = (struct srx_reth *)p;

		srx_reth_set_va(reth, a->va);
		srx_reth_set_rkey(reth, a->rkey);
		srx_reth_set_len(reth, a->dma_len);
		break;
	}
	case SRX_ROCE_AETH:
		srx_aeth_set((struct srx_aeth *)p, a->syndrome, a->msn);
		break;
	case SRX_ROCE_ATMETH: {
		struct srx_atmeth *atm = (struct srx_atmeth *)p;

		srx_atmeth_set_va(atm, a->va);
		srx_atmeth_set_rkey(atm, a->rkey);
		srx_atmeth_set_swap_add(atm, a->swap_add);
		srx_atmeth_set_cmp(atm, a->cmp);
		break;
	}
	case SRX_ROCE_ATMACK:
		srx_atmack_set_orig((struct srx_atmack *)p, a->orig);
		break;
	case SRX_ROCE_IMMDT:
		srx_immdt_set_imm((struct srx_immdt *)p, a->imm);
		break;
	case SRX_ROCE_IETH:
		srx_ieth_set_rkey((struct srx_ieth *)p, a->inv_rkey);
		break;
	case SRX_ROCE_DETH: {
		struct srx_deth *deth = (struct srx_deth *)p;

		srx_deth_set_qkey(deth, a->qkey);
		srx_deth_set_sqp(deth, a->src_qpn);
		break;
	}
	case SRX_ROCE_FETH:
		srx_feth_set((struct srx_feth *)p, a->flush_type,
			     a->flush_level);
		break;
	default:
		break;
	}
}

/**
 * srx_roce_build_hdr - write the BTH and extension headers of a packet
 * @buf: where the BTH goes
 * @room: bytes available at @buf
 * @a: the header values
 *
 * Writes every byte of the opcode's headers, reserved ones as zero, from
 * @a alone: what @buf held before never shows through, so the same @a
 * gives the same bytes. TVer is 0, FECN and BECN 0 (RoCE v2 marks
 * congestion in the IP header). A value wider than its field (QPN, PSN,
 * MSN, SrcQP over 24 bits, pad over 3, FLUSH type or level) is refused
 * rather than truncated: it would be an engine bug, not a packet to send.
 *
 * Context: any. Return: the header length (the payload's offset), or
 * -EINVAL for an unknown opcode or a value out of range, -EMSGSIZE if
 * @room is shorter than the headers; nothing is written on error.
 */
int srx_roce_build_hdr(void *buf, u32 room, const struct srx_roce_hdr_args *a)
{
	const struct srx_roce_opcode *op = srx_roce_opcode(a->opcode);
	struct srx_bth *bth = buf;
	unsigned int i;

	if (!op)
		return -EINVAL;
	if (a->pad > 3 || a->qpn > SRX_BTH_QPN_MASK ||
	    a->psn > SRX_BTH_PSN_MASK || a->msn > SRX_AETH_MSN_MASK ||
	    a->src_qpn > SRX_DETH_SQP_MASK ||
	    a->flush_type > SRX_FETH_PLT_MASK ||
	    a->flush_level > (SRX_FETH_SEL_MASK >> SRX_FETH_SEL_SHIFT))
		return -EINVAL;
	if (room < op->hdr_len)
		return -EMSGSIZE;

	memset(buf, 0, op->hdr_len);
	srx_bth_set_opcode(bth, a->opcode);
	srx_bth_set_se(bth, a->se);
	srx_bth_set_mig(bth, a->mig);
	srx_bth_set_pad(bth, a->pad);
	srx_bth_set_tver(bth, SRX_BTH_TVER);
	srx_bth_set_pkey(bth, a->pkey);
	srx_bth_set_qpn(bth, a->qpn);
	srx_bth_set_ackreq(bth, a->ackreq);
	srx_bth_set_psn(bth, a->psn);

	for (i = 0; i < SRX_ROCE_EXT_MAX && op->ext[i]; i++)
		srx_roce_build_ext((u8 *)buf + op->off[op->ext[i]],
				   op->ext[i], a);
	return op->hdr_len;
}
