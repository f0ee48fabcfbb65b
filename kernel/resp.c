// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The responder of the RC transport, and of UC (srx_uc_one()): the receive
 * side of a QP's peer's requests. It places SEND payloads in receive WQEs and WRITE payloads in
 * memory regions (through the memory-key layer's rkey, PD, access and
 * bounds checks, mr.c), executes ATOMICs and ATOMIC WRITEs, answers
 * READs, and sends ACKs and NAKs.
 *
 * It runs under qp->resp_lock in the receive softirq, one packet at a
 * time, and finishes there without sleeping: one small skb per ACK or
 * NAK. A READ's response packets go out from the softirq up to
 * SRX_READ_BUDGET, the rest from resp_work under the same lock; requests
 * that arrive while some are due wait for resp_work, so that every
 * answer leaves in PSN order (srx_resp_hold()).
 *
 * PSN checks ([IBTA] 9.7.5.1): a request at the expected PSN (epsn) is
 * executed; one behind it is a duplicate: a SEND or WRITE is
 * re-acknowledged, a READ executed again from its responder resource, an
 * ATOMIC answered from the saved result and never applied again; one
 * ahead of it gets one sequence NAK, until epsn arrives.
 */
#include <linux/skbuff.h>
#include <linux/spinlock.h>

#include "cq.h"
#include "device.h"
#include "engine.h"
#include "mr.h"
#include "qp.h"
#include "srq.h"
#include "take.h"

/*
 * Atomics of every srx QP, on any address, are serialized by this lock:
 * two QPs' atomics on one address are then atomic with respect to each
 * other, which is what atomic_cap IB_ATOMIC_HCA promises (the process's
 * own CPU atomics on that memory are not ordered with them). A single lock
 * is the simplest correct choice; atomics are rare next to the rest.
 */
static DEFINE_SPINLOCK(srx_atomic_lock);

/* What a request's execution leads to. */
enum srx_resp_result {
	SRX_RESP_ACK,		/* done: ACK it if it asks */
	SRX_RESP_ANSWERED,	/* done and answered (READ, ATOMIC) */
	SRX_RESP_RNR,		/* no receive WQE: RNR NAK, nothing consumed */
	SRX_RESP_NAK_INV,	/* invalid request: NAK, QP to error */
	SRX_RESP_NAK_ACCESS,	/* remote access error: NAK, QP to error */
	SRX_RESP_NAK_OP,	/* remote operational error: NAK, QP to error */
	SRX_RESP_DROP,		/* UC: the message cannot be placed; dropped */
};

static void srx_resp_send_aeth(struct srx_qp *qp, u8 opcode, u8 syndrome,
			       u32 psn, u64 orig)
{
	struct srx_roce_hdr_args a = {
		.opcode = opcode,
		.psn = psn,
		.syndrome = syndrome,
		.msn = qp->resp.msn,
		.orig = orig,
	};
	struct sk_buff *skb;
	u8 *data;

	skb = srx_pkt_alloc(qp, &a, 0, &data);
	if (skb)
		srx_pkt_xmit(qp, skb);
}

static void srx_resp_ack(struct srx_qp *qp, u32 psn)
{
	srx_resp_send_aeth(qp, SRX_ROCE_RC_ACK,
			   srx_aeth_syn_ack(SRX_AETH_CREDITS_UNLIMITED), psn, 0);
}

static void srx_resp_nak(struct srx_qp *qp, enum srx_aeth_nak code, u32 psn)
{
	srx_resp_send_aeth(qp, SRX_ROCE_RC_ACK, srx_aeth_syn_nak(code), psn, 0);
}

/*
 * The receive WQE the current message lands in (the oldest taken, one
 * taken from the ring if there is none); NULL if none is posted. UD's
 * receive (ud.c) takes its WQE the same way. On an SRQ, the one the QP
 * holds, or one taken from the SRQ into the QP's entry (srq.c).
 * Context: resp_lock held.
 */
struct srx_rwqe *srx_resp_rwqe(struct srx_qp *qp)
{
	struct srx_wq *rq = &qp->rq;
	struct srx_resp *resp = &qp->resp;
	unsigned long flags;

	lockdep_assert_held(&qp->resp_lock);

	if (qp->base_qp.srq) {
		if (!resp->srq_held &&
		    !srx_srq_take(to_srx_srq(qp->base_qp.srq),
				  &resp->srq_wqe->e))
			return NULL;
		resp->srq_held = true;
		return &resp->srq_wqe->e;
	}
	if (rq->kcons == rq->kdone) {
		spin_lock_irqsave(&rq->lock, flags);
		srx_rq_take(qp, 1);
		spin_unlock_irqrestore(&rq->lock, flags);
		if (rq->kcons == rq->kdone)
			return NULL;
	}
	return srx_rq_entry(rq, rq->kdone);
}

/*
 * The receive WQE the current message already has (srx_resp_rwqe() gave
 * it out). Context: resp_lock held.
 */
static struct srx_rwqe *srx_resp_cur_rwqe(struct srx_qp *qp)
{
	lockdep_assert_held(&qp->resp_lock);

	if (qp->base_qp.srq)
		return &qp->resp.srq_wqe->e;
	return srx_rq_entry(&qp->rq, qp->rq.kdone);
}

/*
 * The PD a receive WQE's lkeys belong to: the one it was posted under,
 * the SRQ's for a WQE of an SRQ (rxe checks the QP's; the two agree
 * whenever the SRQ and the QP share a PD).
 */
struct ib_pd *srx_resp_rwqe_pd(struct srx_qp *qp)
{
	return qp->base_qp.srq ? qp->base_qp.srq->pd : qp->base_qp.pd;
}

/* Complete the current receive WQE (the oldest taken). */
static void srx_resp_complete(struct srx_qp *qp, u8 status, u8 opcode,
			      u32 byte_len, const struct srx_roce_pkt *pkt,
			      const void *buf)
{
	const struct srx_immdt *imm = srx_roce_pkt_hdr(pkt, buf,
						       SRX_ROCE_IMMDT);
	const struct srx_ieth *ieth = srx_roce_pkt_hdr(pkt, buf,
						       SRX_ROCE_IETH);
	struct srx_cqe cqe = {};

	cqe.wr_id = srx_resp_cur_rwqe(qp)->wr_id;
	cqe.status = status;
	cqe.opcode = opcode;
	cqe.byte_len = byte_len;
	cqe.qp_num = qp->base_qp.qp_num;
	cqe.src_qp = qp->dqpn;
	if (status == IB_WC_SUCCESS && imm) {
		cqe.flags |= SRX_CQE_WITH_IMM;
		cqe.ex = (__force u32)srx_immdt_imm(imm);
	} else if (status == IB_WC_SUCCESS && ieth) {
		cqe.flags |= SRX_CQE_WITH_INV;
		cqe.ex = srx_ieth_rkey(ieth);
	}
	if (pkt->se)
		cqe.flags |= SRX_CQE_SOLICITED;
	srx_recv_complete(qp, &cqe);
	qp->resp.have_rwqe = false;
}

static enum srx_resp_result srx_resp_send(struct srx_qp *qp,
					  const struct srx_roce_pkt *pkt,
					  const u8 *buf)
{
	struct srx_resp *resp = &qp->resp;
	u32 flags = pkt->op->flags;
	struct srx_rwqe *e;
	enum srx_acc acc;

	if (flags & SRX_ROCE_F_FIRST) {
		e = srx_resp_rwqe(qp);
		if (!e)
			return SRX_RESP_RNR;
		resp->have_rwqe = true;
		resp->offset = 0;
		if (e->result != SRX_WQE_OK) {
			srx_resp_complete(qp, srx_wqe_wc_status(e->result),
					  IB_WC_RECV, 0, pkt, buf);
			return SRX_RESP_NAK_OP;
		}
	}
	e = srx_resp_cur_rwqe(qp);
	if (pkt->payload_len) {
		acc = srx_sge_copy(qp->sdev, srx_resp_rwqe_pd(qp),
				   IB_ACCESS_LOCAL_WRITE, e->sge, e->num_sge,
				   resp->offset, (void *)(buf + pkt->payload_off),
				   pkt->payload_len, SRX_TO_MR);
		/*
		 * Longer than the buffer: on UC the message is dropped and
		 * the WQE kept for the next one (rxe's class D1, the
		 * RESPST_ERR_LENGTH case of rxe_responder()). A WQE of an
		 * SRQ is completed in error instead, the QP left as it is
		 * (class E there): kept, it would be the SRQ's no more.
		 */
		if (acc == SRX_ACC_LENGTH && qp->base_qp.qp_type == IB_QPT_UC) {
			if (qp->base_qp.srq)
				srx_resp_complete(qp, IB_WC_REM_INV_REQ_ERR,
						  IB_WC_RECV, 0, pkt, buf);
			return SRX_RESP_DROP;
		}
		if (acc == SRX_ACC_LENGTH) {
			/* Longer than the buffer: IBTA 9.9.3.1.2, class B. */
			srx_resp_complete(qp, IB_WC_LOC_LEN_ERR, IB_WC_RECV,
					  0, pkt, buf);
			return SRX_RESP_NAK_INV;
		}
		if (acc != SRX_ACC_OK) {
			srx_resp_complete(qp, IB_WC_LOC_PROT_ERR, IB_WC_RECV,
					  0, pkt, buf);
			return SRX_RESP_NAK_OP;
		}
	}
	resp->offset += pkt->payload_len;
	if (flags & SRX_ROCE_F_LAST) {
		resp->cur_op = 0;
		/*
		 * SEND with Invalidate: the rkey goes once the message is
		 * placed, before the receive completes with it. One that is
		 * not a fast-registration MR of this QP's PD under that key
		 * fails the receive with REM_INV_REQ_ERR and the QP (rxe's
		 * class J, rxe_resp.c, RESPST_ERR_INVALIDATE_RKEY); srx also
		 * NAKs, so the sender learns it now rather than by retries.
		 */
		if ((flags & SRX_ROCE_F_INV) &&
		    srx_mr_invalidate(qp->sdev, &qp->base_qp,
				      srx_ieth_rkey(srx_roce_pkt_hdr(pkt, buf,
							SRX_ROCE_IETH)),
				      true)) {
			srx_resp_complete(qp, IB_WC_REM_INV_REQ_ERR,
					  IB_WC_RECV, 0, pkt, buf);
			return SRX_RESP_NAK_INV;
		}
		resp->msn = srx_msn_add(resp->msn, 1);
		srx_resp_complete(qp, IB_WC_SUCCESS, IB_WC_RECV, resp->offset,
				  pkt, buf);
	} else {
		resp->cur_op = SRX_ROCE_F_SEND;
	}
	return SRX_RESP_ACK;
}

static enum srx_resp_result srx_resp_write(struct srx_qp *qp,
					   const struct srx_roce_pkt *pkt,
					   const u8 *buf)
{
	struct srx_resp *resp = &qp->resp;
	u32 flags = pkt->op->flags, len = pkt->payload_len;
	const struct srx_reth *reth;
	struct srx_rwqe *e = NULL;
	struct srx_mr *mr;
	enum srx_acc acc;

	if (!(resp->access & IB_ACCESS_REMOTE_WRITE))
		return SRX_RESP_NAK_INV;
	if (flags & SRX_ROCE_F_FIRST) {
		reth = srx_roce_pkt_hdr(pkt, buf, SRX_ROCE_RETH);
		resp->va = srx_reth_va(reth);
		resp->rkey = srx_reth_rkey(reth);
		resp->wlen = srx_reth_len(reth);
		resp->resid = resp->wlen;
		/* The whole range, once; each packet's part again below. */
		if (resp->wlen) {
			acc = srx_rkey_acquire(qp->sdev, resp->rkey,
					       &qp->base_qp,
					       IB_ACCESS_REMOTE_WRITE,
					       resp->va, resp->wlen, &mr);
			if (acc != SRX_ACC_OK)
				return SRX_RESP_NAK_ACCESS;
			srx_mr_release(mr);
		}
	}
	/* The packets must add up to the RETH's length ([IBTA] 9.7.5.1.3). */
	if (len > resp->resid ||
	    ((flags & SRX_ROCE_F_LAST) && len != resp->resid))
		return SRX_RESP_NAK_INV;
	/* An immediate needs a receive WQE before anything is placed. */
	if ((flags & SRX_ROCE_F_IMM) && !(e = srx_resp_rwqe(qp)))
		return SRX_RESP_RNR;
	if (len) {
		acc = srx_rkey_acquire(qp->sdev, resp->rkey, &qp->base_qp,
				       IB_ACCESS_REMOTE_WRITE, resp->va, len,
				       &mr);
		if (acc != SRX_ACC_OK)
			return SRX_RESP_NAK_ACCESS;
		srx_mr_copy(mr, resp->va, (void *)(buf + pkt->payload_off),
			    len, SRX_TO_MR);
		srx_mr_release(mr);
	}
	resp->va += len;
	resp->resid -= len;
	if (!(flags & SRX_ROCE_F_LAST)) {
		resp->cur_op = SRX_ROCE_F_WRITE;
		return SRX_RESP_ACK;
	}
	resp->cur_op = 0;
	resp->msn = srx_msn_add(resp->msn, 1);
	if (e && e->result != SRX_WQE_OK) {
		/* As for a SEND into an invalid receive WQE: the QP ends. */
		srx_resp_complete(qp, srx_wqe_wc_status(e->result),
				  IB_WC_RECV_RDMA_WITH_IMM, 0, pkt, buf);
		return SRX_RESP_NAK_OP;
	}
	if (e)
		srx_resp_complete(qp, IB_WC_SUCCESS, IB_WC_RECV_RDMA_WITH_IMM,
				  resp->wlen, pkt, buf);
	return SRX_RESP_ACK;
}

static u32 srx_res_npkts(const struct srx_res *r, u32 mtu)
{
	return r->length ? DIV_ROUND_UP(r->length, mtu) : 1;
}

/* A new responder resource; the oldest gives way ([IBTA] 9.7.5.1.4). */
static struct srx_res *srx_resp_new_res(struct srx_resp *resp)
{
	struct srx_res *r;

	if (resp->res_head - resp->rd_next >= resp->res_n)
		resp->rd_next++;
	r = &resp->res[resp->res_head % resp->res_n];
	resp->res_head++;
	memset(r, 0, sizeof(*r));
	return r;
}

/*
 * One READ response packet of resource @r at @psn, rebuilt from the
 * resource (the MR looked up again): the same bytes whether it is the
 * first time or a duplicate READ's. Return: false if the MR is gone.
 */
static bool srx_resp_read_pkt(struct srx_qp *qp, const struct srx_res *r,
			      u32 psn)
{
	struct srx_resp *resp = &qp->resp;
	u32 idx = srx_psn_diff(psn, r->first_psn);
	u32 n = srx_res_npkts(r, resp->mtu);
	u64 off = (u64)idx * resp->mtu;
	u32 len = r->length ? min_t(u64, resp->mtu, r->length - off) : 0;
	struct srx_roce_hdr_args a = {
		.psn = psn,
		.syndrome = srx_aeth_syn_ack(SRX_AETH_CREDITS_UNLIMITED),
		.msn = resp->msn,
	};
	struct sk_buff *skb;
	struct srx_mr *mr;
	enum srx_acc acc;
	u8 *data;

	if (n == 1)
		a.opcode = SRX_ROCE_RC_READ_RESP_ONLY;
	else if (idx == 0)
		a.opcode = SRX_ROCE_RC_READ_RESP_FIRST;
	else if (psn == r->last_psn)
		a.opcode = SRX_ROCE_RC_READ_RESP_LAST;
	else
		a.opcode = SRX_ROCE_RC_READ_RESP_MIDDLE;

	skb = srx_pkt_alloc(qp, &a, len, &data);
	if (!skb)
		return true;	/* lost: the requester asks again */
	if (len) {
		acc = srx_rkey_acquire(qp->sdev, r->rkey, &qp->base_qp,
				       IB_ACCESS_REMOTE_READ, r->va + off, len,
				       &mr);
		if (acc != SRX_ACC_OK) {
			kfree_skb(skb);
			return false;
		}
		srx_mr_copy(mr, r->va + off, data, len, SRX_FROM_MR);
		srx_mr_release(mr);
	}
	srx_pkt_xmit(qp, skb);
	return true;
}

/*
 * Send up to @budget READ response packets, oldest resource first.
 * Return: true if some are still due.
 * Context: resp_lock held.
 */
static bool srx_resp_run_reads(struct srx_qp *qp, u32 budget)
{
	struct srx_resp *resp = &qp->resp;
	struct srx_res *r;

	lockdep_assert_held(&qp->resp_lock);

	while (resp->rd_next != resp->res_head) {
		r = &resp->res[resp->rd_next % resp->res_n];
		if (r->type != SRX_RES_READ ||
		    r->next_psn == srx_psn_add(r->last_psn, 1)) {
			resp->rd_next++;
			continue;
		}
		if (!budget)
			break;
		if (!srx_resp_read_pkt(qp, r, r->next_psn)) {
			/*
			 * Deregistered since the request: class C error, at
			 * the first response not sent, where the requester's
			 * oldest unanswered PSN will be.
			 */
			srx_count(qp->sdev, SRX_CNT_SEND_NAK, 1);
			srx_resp_nak(qp, SRX_AETH_NAK_REM_ACCESS, r->next_psn);
			r->next_psn = srx_psn_add(r->last_psn, 1);
			srx_qp_set_error(qp);
			return false;
		}
		r->next_psn = srx_psn_add(r->next_psn, 1);
		budget--;
	}
	return resp->rd_next != resp->res_head;
}

static void srx_resp_queue_reads(struct srx_qp *qp)
{
	if (srx_resp_run_reads(qp, SRX_READ_BUDGET) && !qp->dead)
		queue_work(srx_wq, &qp->resp_work);
}

static enum srx_resp_result srx_resp_read(struct srx_qp *qp,
					  const struct srx_roce_pkt *pkt,
					  const u8 *buf)
{
	const struct srx_reth *reth = srx_roce_pkt_hdr(pkt, buf, SRX_ROCE_RETH);
	struct srx_resp *resp = &qp->resp;
	u64 va = srx_reth_va(reth);
	u32 rkey = srx_reth_rkey(reth), len = srx_reth_len(reth);
	struct srx_res *r;
	struct srx_mr *mr;
	enum srx_acc acc;

	if (!(resp->access & IB_ACCESS_REMOTE_READ) || !resp->res ||
	    len > SRX_MAX_MSG_SIZE)
		return SRX_RESP_NAK_INV;
	if (len) {
		acc = srx_rkey_acquire(qp->sdev, rkey, &qp->base_qp,
				       IB_ACCESS_REMOTE_READ, va, len, &mr);
		if (acc != SRX_ACC_OK)
			return SRX_RESP_NAK_ACCESS;
		srx_mr_release(mr);
	}
	r = srx_resp_new_res(resp);
	r->type = SRX_RES_READ;
	r->va = va;
	r->rkey = rkey;
	r->length = len;
	r->first_psn = pkt->psn;
	r->last_psn = srx_psn_add(pkt->psn, srx_res_npkts(r, resp->mtu) - 1);
	r->next_psn = pkt->psn;
	resp->msn = srx_msn_add(resp->msn, 1);
	/* Its responses take its PSNs: the next request follows them. */
	resp->epsn = r->last_psn;
	srx_resp_queue_reads(qp);
	return SRX_RESP_ANSWERED;
}

static enum srx_resp_result srx_resp_atomic(struct srx_qp *qp,
					    const struct srx_roce_pkt *pkt,
					    const u8 *buf)
{
	const struct srx_atmeth *atm = srx_roce_pkt_hdr(pkt, buf,
							SRX_ROCE_ATMETH);
	struct srx_resp *resp = &qp->resp;
	u64 va = srx_atmeth_va(atm), orig, val;
	struct srx_res *r;
	struct srx_mr *mr;
	enum srx_acc acc;

	if (!(resp->access & IB_ACCESS_REMOTE_ATOMIC) || !resp->res)
		return SRX_RESP_NAK_INV;
	/* An atomic's target is 8-byte aligned ([IBTA] 9.4.5). */
	if (va & 7)
		return SRX_RESP_NAK_INV;
	acc = srx_rkey_acquire(qp->sdev, srx_atmeth_rkey(atm), &qp->base_qp,
			       IB_ACCESS_REMOTE_ATOMIC, va, sizeof(orig), &mr);
	if (acc != SRX_ACC_OK)
		return SRX_RESP_NAK_ACCESS;

	spin_lock(&srx_atomic_lock);
	srx_mr_copy(mr, va, &orig, sizeof(orig), SRX_FROM_MR);
	if (pkt->opcode == SRX_ROCE_RC_CMP_SWAP)
		val = orig == srx_atmeth_cmp(atm) ? srx_atmeth_swap_add(atm) :
						     orig;
	else
		val = orig + srx_atmeth_swap_add(atm);
	if (val != orig)
		srx_mr_copy(mr, va, &val, sizeof(val), SRX_TO_MR);
	spin_unlock(&srx_atomic_lock);
	srx_mr_release(mr);

	r = srx_resp_new_res(resp);
	r->type = SRX_RES_ATOMIC;
	r->first_psn = pkt->psn;
	r->last_psn = pkt->psn;
	r->next_psn = srx_psn_add(pkt->psn, 1);
	r->orig = orig;
	resp->msn = srx_msn_add(resp->msn, 1);
	srx_resp_send_aeth(qp, SRX_ROCE_RC_ATOMIC_ACK,
			   srx_aeth_syn_ack(SRX_AETH_CREDITS_UNLIMITED),
			   pkt->psn, orig);
	return SRX_RESP_ANSWERED;
}

/*
 * RDMA ATOMIC WRITE ([IBTA] 1.5 Annex A19): 8 bytes placed by one store
 * that is ordered after everything this QP placed before it, and answered
 * as 6.12's rxe answers it, with an empty READ response from a responder
 * resource. A duplicate is then answered again from the resource and
 * never written again: a repeated store would undo whatever changed the
 * target since. The target must be 8-byte aligned in the address space
 * and in memory (A19.4.2; rxe_mr_do_atomic_write() of 6.12 checks both).
 */
static enum srx_resp_result srx_resp_atomic_write(struct srx_qp *qp,
						  const struct srx_roce_pkt *pkt,
						  const u8 *buf)
{
	const struct srx_reth *reth = srx_roce_pkt_hdr(pkt, buf, SRX_ROCE_RETH);
	struct srx_resp *resp = &qp->resp;
	u64 va = srx_reth_va(reth), val;
	struct srx_res *r;
	struct srx_mr *mr;
	enum srx_acc acc;
	bool stored;

	if (!(resp->access & IB_ACCESS_REMOTE_WRITE) || !resp->res ||
	    srx_reth_len(reth) != SRX_ROCE_ATOMIC_WRITE_BYTES || (va & 7))
		return SRX_RESP_NAK_INV;
	acc = srx_rkey_acquire(qp->sdev, srx_reth_rkey(reth), &qp->base_qp,
			       IB_ACCESS_REMOTE_WRITE, va, sizeof(val), &mr);
	if (acc != SRX_ACC_OK)
		return SRX_RESP_NAK_ACCESS;
	/* The parser checked the payload is 8 bytes; bytes as they came. */
	memcpy(&val, buf + pkt->payload_off, sizeof(val));
	spin_lock(&srx_atomic_lock);
	stored = srx_mr_store_u64(mr, va, val);
	spin_unlock(&srx_atomic_lock);
	srx_mr_release(mr);
	if (!stored)
		return SRX_RESP_NAK_INV;

	r = srx_resp_new_res(resp);
	r->type = SRX_RES_READ;		/* length 0: an empty response */
	r->first_psn = pkt->psn;
	r->last_psn = pkt->psn;
	r->next_psn = pkt->psn;
	resp->msn = srx_msn_add(resp->msn, 1);
	/* Queued behind any READ response still due: PSN order. */
	srx_resp_queue_reads(qp);
	return SRX_RESP_ANSWERED;
}

/*
 * The PSN to acknowledge a duplicate SEND or WRITE at @psn with: epsn - 1,
 * unless a READ, ATOMIC or ATOMIC WRITE lies between; then the PSN just
 * before the first of them. A plain ACK must not name or pass a request
 * whose answer is data: a requester may complete that request on it with
 * its data never written (6.1's rxe does, check_ack() in rxe_comp.c, for
 * an ACK at its PSN), and one past it only sends the requester back for
 * an answer it may already have had (an ACK past an unanswered READ
 * means its response was lost; comp.c, srx_comp_ack()). Walks the
 * res_n resources: a requester keeps no more READs and ATOMICs
 * outstanding than max_dest_rd_atomic, so none older is still unanswered.
 * Context: resp_lock held.
 */
static u32 srx_resp_dup_ack_psn(const struct srx_qp *qp, u32 psn)
{
	const struct srx_resp *resp = &qp->resp;
	/* PSNs after @psn and before epsn: the ACK may cover them. */
	u32 span = srx_psn_diff(resp->epsn, psn) - 1;
	u32 upto = span, k, d;
	const struct srx_res *r;

	lockdep_assert_held(&qp->resp_lock);

	for (k = 0; resp->res && k < resp->res_n; k++) {
		r = &resp->res[k];
		if (r->type == SRX_RES_FREE)
			continue;
		d = (r->first_psn - psn) & SRX_SEQ24_MASK;
		if (d >= 1 && d <= span && d - 1 < upto)
			upto = d - 1;
	}
	return srx_psn_add(psn, upto);
}

/*
 * A request behind epsn: answered again, never executed again (but a
 * READ, which has no effect to repeat).
 */
static void srx_resp_duplicate(struct srx_qp *qp,
			       const struct srx_roce_pkt *pkt)
{
	struct srx_resp *resp = &qp->resp;
	u32 flags = pkt->op->flags, k, idx;
	struct srx_res *r;

	srx_count(qp->sdev, SRX_CNT_DUP_REQ, 1);
	if (!(flags & (SRX_ROCE_F_READ | SRX_ROCE_F_ATOMIC |
		       SRX_ROCE_F_ATOMIC_WRITE))) {
		/* Coalesced, but short of any READ or ATOMIC after it. */
		srx_resp_ack(qp, srx_resp_dup_ack_psn(qp, pkt->psn));
		return;
	}
	if (!resp->res)
		return;
	for (k = 0; k < resp->res_n; k++) {
		idx = resp->res_head - 1 - k;
		r = &resp->res[idx % resp->res_n];
		if (r->type == SRX_RES_FREE ||
		    !srx_psn_in_window(pkt->psn, r->first_psn,
				       srx_psn_diff(r->last_psn,
						    r->first_psn) + 1))
			continue;
		if (r->type == SRX_RES_ATOMIC) {
			if (flags & SRX_ROCE_F_ATOMIC)
				srx_resp_send_aeth(qp, SRX_ROCE_RC_ATOMIC_ACK,
					srx_aeth_syn_ack(SRX_AETH_CREDITS_UNLIMITED),
					pkt->psn, r->orig);
			return;
		}
		/* An ATOMIC WRITE's resource is an empty READ's. */
		if (!(flags & SRX_ROCE_F_READ) &&
		    !((flags & SRX_ROCE_F_ATOMIC_WRITE) && !r->length))
			return;
		/* Again from the duplicate's PSN, in PSN order. */
		r->next_psn = pkt->psn;
		if ((s32)(idx - resp->rd_next) < 0)
			resp->rd_next = idx;
		srx_resp_queue_reads(qp);
		return;
	}
}

/* Whether @pkt may come next, by opcode: a message's packets in order. */
static bool srx_resp_opcode_ok(const struct srx_resp *resp,
			       const struct srx_roce_pkt *pkt)
{
	u32 flags = pkt->op->flags;
	u32 kind = flags & (SRX_ROCE_F_SEND | SRX_ROCE_F_WRITE);

	if (!kind)
		return !resp->cur_op;
	if (flags & SRX_ROCE_F_FIRST) {
		if (resp->cur_op)
			return false;
	} else if (resp->cur_op != kind) {
		return false;
	}
	/* FIRST and MIDDLE carry exactly the path MTU, LAST at most it. */
	if (pkt->payload_len > resp->mtu ||
	    (!(flags & SRX_ROCE_F_LAST) && pkt->payload_len != resp->mtu))
		return false;
	return true;
}

static enum srx_resp_result srx_resp_execute(struct srx_qp *qp,
					     const struct srx_roce_pkt *pkt,
					     const u8 *buf)
{
	u32 flags = pkt->op->flags;

	if (!srx_resp_opcode_ok(&qp->resp, pkt))
		return SRX_RESP_NAK_INV;
	if (flags & SRX_ROCE_F_SEND)
		return srx_resp_send(qp, pkt, buf);
	if (flags & SRX_ROCE_F_WRITE)
		return srx_resp_write(qp, pkt, buf);
	if (flags & SRX_ROCE_F_READ)
		return srx_resp_read(qp, pkt, buf);
	if (flags & SRX_ROCE_F_ATOMIC)
		return srx_resp_atomic(qp, pkt, buf);
	if (flags & SRX_ROCE_F_ATOMIC_WRITE)
		return srx_resp_atomic_write(qp, pkt, buf);
	return SRX_RESP_NAK_INV;	/* FLUSH: not yet */
}

/*
 * One request, from the softirq or from the held queue: PSN checks,
 * execution, answer. Context: resp_lock held.
 */
static void srx_resp_one(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
			 struct sk_buff *skb)
{
	struct srx_resp *resp = &qp->resp;
	enum srx_resp_result res;
	s32 d;

	lockdep_assert_held(&qp->resp_lock);

	d = srx_psn_diff(pkt->psn, resp->epsn);
	if (d > 0) {
		srx_count(qp->sdev, SRX_CNT_OUT_OF_SEQ, 1);
		if (!resp->nak_sent) {
			resp->nak_sent = true;
			srx_count(qp->sdev, SRX_CNT_SEND_SEQ_NAK, 1);
			srx_resp_nak(qp, SRX_AETH_NAK_PSN_SEQ, resp->epsn);
		}
		return;
	}
	if (d < 0) {
		srx_resp_duplicate(qp, pkt);
		return;
	}

	res = srx_resp_execute(qp, pkt, skb->data);
	switch (res) {
	case SRX_RESP_ACK:
	case SRX_RESP_ANSWERED:
		resp->nak_sent = false;
		resp->epsn = srx_psn_add(resp->epsn, 1);
		if (res == SRX_RESP_ACK && pkt->ackreq)
			srx_resp_ack(qp, pkt->psn);
		break;
	case SRX_RESP_RNR:
		/*
		 * The requester resends from this PSN after its wait: the
		 * packets it already sent behind this one get no sequence
		 * NAK each (nor would they cost it a retry).
		 */
		resp->nak_sent = true;
		srx_count(qp->sdev, SRX_CNT_SEND_RNR_NAK, 1);
		srx_resp_send_aeth(qp, SRX_ROCE_RC_ACK,
				   srx_aeth_syn_rnr_nak(resp->min_rnr_timer),
				   pkt->psn, 0);
		break;
	default:
		srx_count(qp->sdev, SRX_CNT_SEND_NAK, 1);
		srx_resp_nak(qp, res == SRX_RESP_NAK_INV ? SRX_AETH_NAK_INV_REQ :
				 res == SRX_RESP_NAK_ACCESS ?
				 SRX_AETH_NAK_REM_ACCESS : SRX_AETH_NAK_REM_OP,
			     pkt->psn);
		resp->cur_op = 0;
		srx_qp_set_error(qp);
		break;
	}
}

/*
 * A UC request ([IBTA] 9.8.3; rxe_resp.c of 6.1: check_psn(), and
 * drop_msg in rxe_responder()). Nothing is ever answered. A packet out of
 * sequence, or one of a message that cannot be placed (no receive WQE, a
 * bad rkey, no remote write right, too long), drops the rest of its
 * message; the next FIRST or ONLY, at whatever PSN, starts afresh there.
 * A receive WQE a dropped SEND had begun to fill is kept for the next
 * SEND (srx_resp_rwqe() hands out the oldest taken), but an SRQ's WQE a
 * too-long SEND reached completes REM_INV_REQ_ERR (srx_resp_send()). Only
 * a fault of the receive WQE itself, a local error, ends the QP.
 * Context: resp_lock held.
 */
static void srx_uc_one(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		       struct sk_buff *skb)
{
	struct srx_resp *resp = &qp->resp;
	bool start = pkt->op->flags & SRX_ROCE_F_FIRST;
	enum srx_resp_result res;

	lockdep_assert_held(&qp->resp_lock);

	if (resp->drop_msg || pkt->psn != resp->epsn ||
	    (start && resp->cur_op)) {
		if (!start) {
			resp->drop_msg = true;
			srx_count(qp->sdev, SRX_CNT_UC_RCVD_DROPPED, 1);
			return;
		}
		if (resp->cur_op && !resp->drop_msg)
			srx_count(qp->sdev, SRX_CNT_UC_MSG_ABANDONED, 1);
		resp->drop_msg = false;
		resp->cur_op = 0;
		resp->offset = 0;
		resp->epsn = pkt->psn;
	}
	res = srx_resp_execute(qp, pkt, skb->data);
	switch (res) {
	case SRX_RESP_ACK:
	case SRX_RESP_ANSWERED:
		resp->epsn = srx_psn_add(resp->epsn, 1);
		break;
	case SRX_RESP_NAK_OP:
		resp->cur_op = 0;
		srx_qp_set_error(qp);
		break;
	default:
		resp->drop_msg = true;
		srx_count(qp->sdev, SRX_CNT_UC_RCVD_DROPPED, 1);
		break;
	}
}

/* The parse of a held request, in its skb's control block. */
static struct srx_roce_pkt *srx_resp_held_pkt(struct sk_buff *skb)
{
	BUILD_BUG_ON(sizeof(struct srx_roce_pkt) > sizeof(skb->cb));
	return (struct srx_roce_pkt *)skb->cb;
}

/*
 * Hold @skb behind the READ responses still due and the requests held
 * before it, for resp_work to answer in order: answered before them,
 * its ACK, ATOMIC ACK or NAK would reach the requester first (taken for
 * a lost READ response, or a NAK that names a PSN not yet its oldest),
 * and its error would put the QP in ERR with those responses unsent.
 * Return: false if the queue is full (the requester sends it again).
 * Context: resp_lock held.
 */
static bool srx_resp_hold(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
			  struct sk_buff *skb)
{
	struct srx_resp *resp = &qp->resp;

	lockdep_assert_held(&qp->resp_lock);

	if (skb_queue_len(&resp->held) >= SRX_RESP_HELD_MAX)
		return false;
	/*
	 * Only the bytes are read from here on (the IP layer has orphaned
	 * it): a route or a conntrack entry held would keep its netdev or
	 * namespace from going away, and the netdev may go before it.
	 */
	skb_dst_drop(skb);
	nf_reset_ct(skb);
	skb->dev = NULL;
	*srx_resp_held_pkt(skb) = *pkt;
	__skb_queue_tail(&resp->held, skb);
	queue_work(srx_wq, &qp->resp_work);
	return true;
}

/*
 * Drop what is held: the QP left the states that answer, or is reset or
 * destroyed. Context: resp_lock held.
 */
void srx_resp_drop_held(struct srx_qp *qp)
{
	lockdep_assert_held(&qp->resp_lock);
	__skb_queue_purge(&qp->resp.held);
}

/**
 * srx_resp_rcv - a request for @qp arrived
 * @qp: the QP, referenced by the caller
 * @pkt: the parsed request
 * @skb: the packet, linear, BTH at data; consumed
 *
 * Context: the receive softirq.
 */
void srx_resp_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		  struct sk_buff *skb)
{
	enum ib_qp_state state;

	spin_lock_bh(&qp->resp_lock);
	state = READ_ONCE(qp->state);
	if (state < IB_QPS_RTR || state == IB_QPS_ERR || qp->dead ||
	    !srx_pkt_from_peer(qp, skb)) {
		srx_count(qp->sdev, SRX_CNT_RCVD_DROPPED, 1);
		goto out;
	}
	if (qp->base_qp.qp_type == IB_QPT_UC) {
		srx_uc_one(qp, pkt, skb);
		goto out;
	}
	if (!skb_queue_empty(&qp->resp.held) || srx_resp_run_reads(qp, 0)) {
		if (srx_resp_hold(qp, pkt, skb)) {
			skb = NULL;
		} else {
			srx_count(qp->sdev, SRX_CNT_RCVD_DROPPED, 1);
		}
		goto out;
	}
	srx_resp_one(qp, pkt, skb);
out:
	spin_unlock_bh(&qp->resp_lock);
	consume_skb(skb);
}

/*
 * resp_work: READ responses beyond what the softirq sent, a batch at a
 * time, then the requests held behind them. Context: srx_wq (process).
 */
void srx_resp_work(struct work_struct *w)
{
	struct srx_qp *qp = container_of(w, struct srx_qp, resp_work);
	u32 budget = SRX_WORK_BUDGET;
	enum ib_qp_state state;
	struct sk_buff *skb;
	bool more;

	spin_lock_bh(&qp->resp_lock);
	state = READ_ONCE(qp->state);
	if (state < IB_QPS_RTR || state == IB_QPS_ERR || qp->dead) {
		srx_resp_drop_held(qp);
		goto out;
	}
	more = srx_resp_run_reads(qp, budget);
	/*
	 * The held requests, in order, while no READ response is due and
	 * the QP answers: a response that failed, a held request's error,
	 * or the requester's put it in ERR, and then nothing held may run.
	 */
	while (!more && budget-- && READ_ONCE(qp->state) != IB_QPS_ERR) {
		skb = __skb_dequeue(&qp->resp.held);
		if (!skb)
			break;
		srx_resp_one(qp, srx_resp_held_pkt(skb), skb);
		consume_skb(skb);
		more = srx_resp_run_reads(qp, 0);
	}
	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		srx_resp_drop_held(qp);
		goto out;
	}
	if ((more || !skb_queue_empty(&qp->resp.held)) && !qp->dead)
		queue_work(srx_wq, &qp->resp_work);
out:
	spin_unlock_bh(&qp->resp_lock);
}
