// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The requester of the RC and UC transports: request packets built from the
 * private copy of a send WQE (take.c) and a PSN, and nothing else.
 *
 * A packet is a pure function of (swqe, PSN, QP attributes): its opcode
 * comes from its place in the message, its payload offset is (PSN - the
 * WQE's first PSN) * path MTU, and the payload is gathered with the
 * memory-key layer's stateless SGE copy (mr.c, srx_sge_copy()). So a
 * retransmission rebuilds the packet and gets the same bytes; nothing
 * keeps a data cursor that a rollback could lose (rxe, CVE-2023-53539).
 *
 * Who runs it: srx_req_run(), always under qp->send_lock, from the
 * doorbell system call of a user QP (a small budget), from send_work (a
 * kernel poster's kick, a reopened window, a timer's decision), and
 * never from a timer or for more than its budget of packets.
 *
 * Every skb sent holds a QP reference, dropped by its destructor, so
 * destroy waits for the skbs still in the stack (qp.c).
 */
#include <linux/skbuff.h>

#include "device.h"
#include "engine.h"
#include "mr.h"
#include "net.h"
#include "qp.h"
#include "ring.h"
#include "take.h"

/*
 * An skb's hold on its QP. The QP rides in destructor_arg, which the
 * stack uses only for zero-copy skbs (SKBFL_ZEROCOPY_ENABLE, never set on
 * the engine's): skb->cb is the IP layer's, and a socket per QP (rxe's way
 * to find its QP from the destructor) is far heavier.
 */
static void srx_skb_destructor(struct sk_buff *skb)
{
	srx_qp_put(skb_shinfo(skb)->destructor_arg);
}

/**
 * srx_pkt_alloc_to - a packet of @qp to @av and QP @dqpn, headers written
 * @qp: the QP
 * @av: where it goes: the QP's own (srx_pkt_alloc()) or a UD WQE's
 * @dqpn: the destination QPN
 * @a: the header values; pad, P_Key and the destination QPN are set here
 * @payload: payload bytes, which the caller writes at *@data
 * @data: where the payload goes
 *
 * The pad bytes are zeroed; the ICRC is srx_net_xmit()'s.
 * Context: any; @av stable under the caller's lock.
 * Return: the skb, or NULL (no route, no memory: counted as send_err;
 * the packet is as good as lost, which the protocol recovers from).
 */
struct sk_buff *srx_pkt_alloc_to(struct srx_qp *qp, const struct srx_av *av,
				 u32 dqpn, struct srx_roce_hdr_args *a,
				 u32 payload, u8 **data)
{
	const struct srx_roce_opcode *op = srx_roce_opcode(a->opcode);
	struct sk_buff *skb;
	u8 pad = srx_roce_pad(payload);

	skb = srx_net_alloc_skb(qp->sdev, av, op->hdr_len + payload + pad,
				GFP_ATOMIC);
	if (IS_ERR(skb)) {
		srx_count(qp->sdev, SRX_CNT_SEND_ERR, 1);
		return NULL;
	}
	a->pad = pad;
	a->pkey = SRX_PKEY_DEFAULT;
	a->qpn = dqpn;
	/* Cannot fail: a known opcode, 24-bit fields, room for the headers. */
	srx_roce_build_hdr(skb->data, op->hdr_len, a);
	memset(skb->data + op->hdr_len + payload, 0, pad);
	*data = skb->data + op->hdr_len;
	return skb;
}

/*
 * A packet of @qp's connection (RC): to its address vector and peer QP.
 * Context: any, send_lock or resp_lock held (av, dqpn).
 */
struct sk_buff *srx_pkt_alloc(struct srx_qp *qp, struct srx_roce_hdr_args *a,
			      u32 payload, u8 **data)
{
	return srx_pkt_alloc_to(qp, &qp->av, qp->dqpn, a, payload, data);
}

/*
 * Send a packet from srx_pkt_alloc_to() for the same @av: it takes a QP reference that its
 * destructor drops, wherever and whenever the stack frees it. The skb is
 * the stack's from here on (CVE-2024-38544: never touched after).
 * Context: any; the caller holds a reference on @qp.
 */
int srx_pkt_xmit_to(struct srx_qp *qp, const struct srx_av *av,
		    struct sk_buff *skb)
{
	refcount_inc(&qp->ref);
	skb_shinfo(skb)->destructor_arg = qp;
	skb->destructor = srx_skb_destructor;
	return srx_net_xmit(qp->sdev, av, skb);
}

int srx_pkt_xmit(struct srx_qp *qp, struct sk_buff *skb)
{
	return srx_pkt_xmit_to(qp, &qp->av, skb);
}

/* PSNs a message takes: one per path MTU of payload, one at least. */
static u32 srx_swqe_npkts(const struct srx_swqe *e, u32 mtu)
{
	if (srx_wqe_opcode_is_atomic(e->opcode) || !e->length)
		return 1;
	return DIV_ROUND_UP_ULL(e->length, mtu);
}

/* The BTH opcode of a packet of @e, by its place in the message. */
static u8 srx_req_opcode(const struct srx_swqe *e, bool first, bool last)
{
	switch (e->opcode) {
	case IB_WR_SEND:
		if (first)
			return last ? SRX_ROCE_RC_SEND_ONLY : SRX_ROCE_RC_SEND_FIRST;
		return last ? SRX_ROCE_RC_SEND_LAST : SRX_ROCE_RC_SEND_MIDDLE;
	case IB_WR_SEND_WITH_IMM:
		if (first)
			return last ? SRX_ROCE_RC_SEND_ONLY_IMM :
				      SRX_ROCE_RC_SEND_FIRST;
		return last ? SRX_ROCE_RC_SEND_LAST_IMM :
			      SRX_ROCE_RC_SEND_MIDDLE;
	case IB_WR_SEND_WITH_INV:
		if (first)
			return last ? SRX_ROCE_RC_SEND_ONLY_INV :
				      SRX_ROCE_RC_SEND_FIRST;
		return last ? SRX_ROCE_RC_SEND_LAST_INV :
			      SRX_ROCE_RC_SEND_MIDDLE;
	case IB_WR_RDMA_WRITE:
		if (first)
			return last ? SRX_ROCE_RC_WRITE_ONLY :
				      SRX_ROCE_RC_WRITE_FIRST;
		return last ? SRX_ROCE_RC_WRITE_LAST : SRX_ROCE_RC_WRITE_MIDDLE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		if (first)
			return last ? SRX_ROCE_RC_WRITE_ONLY_IMM :
				      SRX_ROCE_RC_WRITE_FIRST;
		return last ? SRX_ROCE_RC_WRITE_LAST_IMM :
			      SRX_ROCE_RC_WRITE_MIDDLE;
	case IB_WR_RDMA_READ:
		return SRX_ROCE_RC_READ_REQ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return SRX_ROCE_RC_CMP_SWAP;
	case SRX_WR_ATOMIC_WRITE:
		return SRX_ROCE_RC_ATOMIC_WRITE;
	default:
		return SRX_ROCE_RC_FETCH_ADD;
	}
}

/*
 * Build and send the packet of @e at @psn, which lies in its
 * [first_psn, last_psn]. A READ request asks for the rest of the message
 * from @psn on (a re-request after a lost response starts mid-message).
 * Return: SRX_ACC_OK (sent, or lost on the way out, which a retry
 * repairs), or the fault of a local SGE: the WQE fails.
 */
static enum srx_acc srx_req_send_pkt(struct srx_qp *qp, struct srx_swqe *e,
				     u32 psn)
{
	struct srx_req *req = &qp->req;
	struct srx_roce_hdr_args a = {};
	u32 idx = srx_psn_diff(psn, e->eng.first_psn);
	bool first = idx == 0, last = psn == e->eng.last_psn;
	u64 off = (u64)idx * req->mtu;
	struct sk_buff *skb;
	enum srx_acc acc;
	u32 payload = 0;
	u8 *data;

	a.opcode = srx_req_opcode(e, first, last);
	a.psn = psn;
	/*
	 * UC sends the SENDs and WRITEs of RC under its own transport bits
	 * (the opcode's top three bits, [IBTA] 9.2.3): the same message
	 * shapes, never acknowledged.
	 */
	BUILD_BUG_ON(SRX_ROCE_UC_SEND_FIRST !=
		     (SRX_ROCE_RC_SEND_FIRST | SRX_ROCE_TRANSPORT_UC));
	BUILD_BUG_ON(SRX_ROCE_UC_WRITE_ONLY_IMM !=
		     (SRX_ROCE_RC_WRITE_ONLY_IMM | SRX_ROCE_TRANSPORT_UC));
	if (qp->base_qp.qp_type == IB_QPT_UC)
		a.opcode |= SRX_ROCE_TRANSPORT_UC;
	switch (e->opcode) {
	case IB_WR_RDMA_READ:
		a.va = e->wr.rdma.remote_addr + off;
		a.rkey = e->wr.rdma.rkey;
		a.dma_len = e->length - off;
		a.ackreq = true;
		break;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		a.va = e->wr.atomic.remote_addr;
		a.rkey = e->wr.atomic.rkey;
		a.swap_add = e->wr.atomic.swap;
		a.cmp = e->wr.atomic.compare_add;
		a.ackreq = true;
		break;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		a.va = e->wr.atomic.remote_addr;
		a.rkey = e->wr.atomic.rkey;
		a.swap_add = e->wr.atomic.compare_add;
		a.ackreq = true;
		break;
	case SRX_WR_ATOMIC_WRITE:
		/* RETH, then the 8 bytes the take copied ([rxe_op] of 6.12). */
		payload = SRX_ROCE_ATOMIC_WRITE_BYTES;
		a.va = e->wr.rdma.remote_addr;
		a.rkey = e->wr.rdma.rkey;
		a.dma_len = payload;
		a.ackreq = true;
		break;
	default:	/* SEND, RDMA WRITE, with or without immediate */
		payload = min_t(u64, req->mtu, e->length - off);
		a.va = e->wr.rdma.remote_addr;	/* RETH: FIRST and ONLY */
		a.rkey = e->wr.rdma.rkey;
		a.dma_len = e->length;
		a.imm = (__force __be32)e->ex;
		a.inv_rkey = e->ex;	/* IETH: SEND with Invalidate's last */
		/* SE on a message's last packet: SEND, WRITE with immediate. */
		a.se = last && (e->send_flags & SRX_SEND_SOLICITED) &&
		       e->opcode != IB_WR_RDMA_WRITE;
		a.ackreq = qp->base_qp.qp_type == IB_QPT_RC &&
			   (last || req->probe ||
			    req->since_ackreq + 1 >= SRX_ACKREQ_EVERY);
		break;
	}

	skb = srx_pkt_alloc(qp, &a, payload, &data);
	if (!skb)
		return SRX_ACC_OK;
	if (payload) {
		if (e->send_flags & SRX_SEND_INLINE) {
			memcpy(data, (const u8 *)e->sge + off, payload);
		} else {
			acc = srx_sge_copy(qp->sdev, qp->base_qp.pd, 0, e->sge,
					   e->num_sge, off, data, payload,
					   SRX_FROM_MR);
			if (acc != SRX_ACC_OK) {
				kfree_skb(skb);
				return acc;
			}
		}
	}
	req->since_ackreq = a.ackreq ? 0 : req->since_ackreq + 1;
	srx_pkt_xmit(qp, skb);
	return SRX_ACC_OK;
}

/* A local fault completes the WQE with a local error (ibv_poll_cq(3)). */
void srx_req_fail(struct srx_qp *qp, struct srx_swqe *e, u8 status)
{
	e->eng.state = SRX_SWQE_ERROR;
	e->eng.flags = status;
	srx_comp_retire(qp);
}

u8 srx_acc_wc_status(enum srx_acc acc)
{
	return acc == SRX_ACC_LENGTH ? IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR;
}

/*
 * K6 of srx-abi.h: tell a user QP's posters that the send engine will
 * read prod again without a doorbell. Only in RTS, under state_lock:
 * srx_qp_publish_state() clears the word out of RTS under the same lock,
 * so a QP in error always has it clear and a post to it rings. The kernel
 * keeps its own copy (req.active) and never reads the shared word, which
 * the process can write: a process that scribbles on it only keeps its
 * own posts from ringing.
 */
static void srx_req_set_active(struct srx_qp *qp)
{
	unsigned long flags;

	if (!qp->is_user || qp->req.active)
		return;
	spin_lock_irqsave(&qp->state_lock, flags);
	if (qp->state == IB_QPS_RTS) {
		WRITE_ONCE(qp->sq.ctrl->engine, SRX_WQ_ENGINE_ACTIVE);
		qp->req.active = true;
	}
	spin_unlock_irqrestore(&qp->state_lock, flags);
}

/* WQEs posted and not yet taken, as far as an honest producer goes. */
static u32 srx_req_takeable(struct srx_qp *qp)
{
	struct srx_wq *sq = &qp->sq;
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&sq->lock, flags);
	n = srx_ring_takeable(srx_wq_prod(qp, sq), sq->kcons, sq->kdone,
			      sq->entries);
	spin_unlock_irqrestore(&sq->lock, flags);
	return n;
}

/*
 * Whether the requester has something to send once the window allows:
 * WQEs taken and not all sent, or WQEs posted and not taken.
 * Context: send_lock held.
 */
bool srx_req_pending(struct srx_qp *qp)
{
	lockdep_assert_held(&qp->send_lock);

	return qp->req.cur != qp->sq.kcons || srx_req_takeable(qp);
}

/**
 * srx_req_try_idle - let the send engine of a user QP go idle (K6)
 * @qp: the QP
 *
 * Only with nothing outstanding (no PSN unacknowledged, unless the QP has
 * no ACK timeout; no RNR wait, no retry pending) and nothing taken
 * unsent: then the engine stores
 * engine = 0, issues smp_mb(), and reads prod again; if a poster
 * published meanwhile (and so may have seen ACTIVE and not rung), the
 * engine is active again and the caller goes on. The pair of libsrx's
 * store of prod, full barrier and load of engine (U6): either this reload
 * sees the new prod or the poster sees ACTIVE clear and rings.
 *
 * Context: send_lock held.
 * Return: true if there is more to take: the engine stays active.
 */
bool srx_req_try_idle(struct srx_qp *qp)
{
	struct srx_req *req = &qp->req;

	lockdep_assert_held(&qp->send_lock);

	if (!qp->is_user || !req->active)
		return false;
	/*
	 * Outstanding PSNs keep the engine active only while a timer stands
	 * behind them: their ACK, or else the retransmit timer, runs the
	 * requester again, and it takes what was posted meanwhile. With no
	 * timeout (0: wait for ever) a lost last ACK runs nothing, and the
	 * next post has to ring; its packets' ACK then covers the lost one.
	 */
	if ((req->una != req->psn_max && req->timeout_jiffies) ||
	    req->rnr_wait || req->go_back || req->timed_out ||
	    req->cur != qp->sq.kcons)
		return false;
	req->active = false;
	WRITE_ONCE(qp->sq.ctrl->engine, 0);
	smp_mb();	/* K6: engine store before the prod reload */
	if (!srx_req_takeable(qp))
		return false;
	srx_req_set_active(qp);
	return true;
}

/* The next WQE taken and not all sent, taking more if need be, or NULL. */
static struct srx_swqe *srx_req_take_next(struct srx_qp *qp)
{
	struct srx_wq *sq = &qp->sq;
	unsigned long flags;
	u32 n;

	if (qp->req.cur == sq->kcons) {
		spin_lock_irqsave(&sq->lock, flags);
		n = srx_sq_take(qp, SRX_WORK_BUDGET);
		spin_unlock_irqrestore(&sq->lock, flags);
		if (!n)
			return NULL;
	}
	return srx_sq_entry(sq, qp->req.cur);
}

/*
 * The next WQE to send from, taking more from the ring when the taken
 * ones are all sent; NULL when there is none, and then a user QP's engine
 * has gone idle unless something outstanding keeps it active (K6: a post
 * that came while it went idle is taken here).
 * Context: send_lock held.
 */
struct srx_swqe *srx_req_next_wqe(struct srx_qp *qp)
{
	struct srx_swqe *e;

	while (!(e = srx_req_take_next(qp)))
		if (!srx_req_try_idle(qp))
			return NULL;
	return e;
}

/*
 * Start a WQE: check its local SGEs once (a bad lkey fails it before a
 * byte is sent) and give it its PSNs.
 * Return: true if it may be sent now.
 */
static bool srx_req_start(struct srx_qp *qp, struct srx_swqe *e)
{
	struct srx_req *req = &qp->req;
	enum srx_acc acc;
	u64 total;

	if (e->result != SRX_WQE_OK) {
		srx_req_fail(qp, e, srx_wqe_wc_status(e->result));
		return false;
	}
	if (!(e->send_flags & SRX_SEND_INLINE)) {
		acc = srx_sge_check(qp->sdev, qp->base_qp.pd,
				    srx_wqe_opcode_is_rd_atomic(e->opcode) ?
				    IB_ACCESS_LOCAL_WRITE : 0,
				    e->sge, e->num_sge, &total);
		if (acc != SRX_ACC_OK) {
			srx_req_fail(qp, e, srx_acc_wc_status(acc));
			return false;
		}
	}
	/* A fence waits for every READ and ATOMIC before it (IBTA 10.8.3.3). */
	if ((e->send_flags & SRX_SEND_FENCE) && req->rd_atomic) {
		req->blocked = true;
		return false;
	}
	/*
	 * A new WQE takes PSNs never sent. req.psn is psn_max here unless
	 * an ACK moved una past a go-back's resend point, and then a WQE
	 * starting at req.psn would reuse PSNs the responder has executed:
	 * it would answer them as duplicates, never executing them, and
	 * find the rest of the message out of sequence.
	 */
	req->psn = req->psn_max;
	e->eng.first_psn = req->psn;
	e->eng.last_psn = srx_psn_add(req->psn,
				      srx_swqe_npkts(e, req->mtu) - 1);
	e->eng.state = SRX_SWQE_SENT;
	return true;
}

/*
 * Execute a local operation (REG_MR, LOCAL_INV, BIND_MW) the requester
 * reached, once every WQE before it has completed. A LOCAL_INV must
 * wait: a READ response may still have to land in the MR, and a retransmission
 * gathers again through the lkey (packets are rebuilt from the WQE). A
 * REG_MR could go at once (it acts on an invalid MR only), but executed
 * ahead of WQEs still outstanding it would sit between them in the
 * completer's walks, which step over nothing that is not SENT: it waits
 * too, for one round trip at most (Documentation/design.md says what
 * that costs). The WQEs after it are sent only once it executed.
 * Sending nothing, it completes at once, in order (srx_comp_retire()).
 * rxe executes them in the requester too, waiting only for a fence
 * (rxe_req.c, rxe_do_local_ops()), with IB_WC_LOC_QP_OP_ERR for one
 * that fails (IB_WC_MW_BIND_ERR for a bind). UC never waits here: its
 * WQEs complete as they are sent.
 * Return: true if it executed and the requester may go on.
 * Context: send_lock held.
 */
static bool srx_req_local(struct srx_qp *qp, struct srx_swqe *e)
{
	int ret;

	lockdep_assert_held(&qp->send_lock);

	if (qp->sq.kdone != qp->req.cur) {
		qp->req.blocked = true;
		return false;
	}
	if (e->result != SRX_WQE_OK) {
		srx_req_fail(qp, e, srx_wqe_wc_status(e->result));
		return false;
	}
	if (e->opcode == SRX_WR_BIND_MW) {
		if (srx_mw_bind(qp->sdev, &qp->base_qp, &e->wr.bind)) {
			srx_req_fail(qp, e, IB_WC_MW_BIND_ERR);
			return false;
		}
	} else {
		if (e->opcode == SRX_WR_REG_MR)
			ret = srx_mr_reg_fast(qp->sdev, qp->base_qp.pd,
					      e->wr.reg.key, e->wr.reg.access);
		else
			ret = srx_mr_invalidate(qp->sdev, &qp->base_qp, e->ex,
						false);
		if (ret) {
			srx_req_fail(qp, e, IB_WC_LOC_QP_OP_ERR);
			return false;
		}
	}
	e->eng.state = SRX_SWQE_DONE;
	qp->req.cur++;
	srx_comp_retire(qp);
	return true;
}

/*
 * The UC requester: the RC one without a window, ACKs or a timer
 * ([IBTA] 9.8: UC is unacknowledged). A WQE completes when its last
 * packet is handed to IP, as a UD send does (ud.c) and as rxe completes
 * UC; a packet lost on the way is the responder's to notice (it drops
 * the message, resp.c), never the requester's. una follows psn_max, so
 * the engine may go idle between messages (srx_req_try_idle()).
 * Context: send_lock held; the QP in RTS.
 */
static bool srx_uc_req_run(struct srx_qp *qp, u32 budget)
{
	struct srx_req *req = &qp->req;
	struct srx_swqe *e;
	enum srx_acc acc;

	lockdep_assert_held(&qp->send_lock);

	while (budget && READ_ONCE(qp->state) == IB_QPS_RTS) {
		e = srx_req_next_wqe(qp);
		if (!e)
			break;
		if (e->eng.state == SRX_SWQE_ERROR)
			break;
		if (srx_wqe_opcode_is_local(e->opcode)) {
			if (!srx_req_local(qp, e))
				break;
			budget--;
			continue;
		}
		if (e->eng.state == SRX_SWQE_NEW && !srx_req_start(qp, e))
			break;
		acc = srx_req_send_pkt(qp, e, req->psn);
		if (acc != SRX_ACC_OK) {
			srx_req_fail(qp, e, srx_acc_wc_status(acc));
			break;
		}
		budget--;
		req->psn = srx_psn_add(req->psn, 1);
		req->psn_max = req->psn;
		if (srx_psn_diff(req->psn, e->eng.last_psn) == 1) {
			e->eng.state = SRX_SWQE_DONE;
			req->cur++;
			req->una = req->psn;
			srx_comp_retire(qp);
		}
	}
	return !budget;
}

/**
 * srx_req_run - send what the send queue holds, within limits
 * @qp: the QP; a UD or GSI one goes to srx_ud_req_run(), a UC one to
 *	srx_uc_req_run()
 * @budget: packets at most
 *
 * Acts first on what the completer and the timers decided (a timeout, a
 * go-back-N restart), then sends from req.psn on: new WQEs are taken from
 * the ring as needed. It stops at the window (SRX_WINDOW unacknowledged
 * PSNs; one after a timeout, until an ACK moves una), at the initiator depth (max_rd_atomic READ/ATOMIC outstanding),
 * at a fence, during an RNR wait, and when the QP leaves RTS; the
 * completer kicks send_work when an ACK lifts a stop.
 *
 * Context: send_lock held (bottom halves off).
 * Return: true if the budget ran out with more to send.
 */
bool srx_req_run(struct srx_qp *qp, u32 budget)
{
	struct srx_req *req = &qp->req;
	struct srx_swqe *e;
	enum srx_acc acc;
	bool rd;

	lockdep_assert_held(&qp->send_lock);

	if (READ_ONCE(qp->state) != IB_QPS_RTS)
		return false;
	srx_req_set_active(qp);
	switch (qp->base_qp.qp_type) {
	case IB_QPT_UD:
	case IB_QPT_GSI:
		return srx_ud_req_run(qp, budget);
	case IB_QPT_UC:
		return srx_uc_req_run(qp, budget);
	default:
		break;
	}
	if (req->timed_out)
		srx_comp_timeout(qp);
	if (req->go_back)
		srx_comp_go_back(qp);
	if (req->resume && !req->probe)
		srx_comp_resume(qp);
	if (req->rnr_wait)
		return false;
	req->blocked = false;

	while (budget && READ_ONCE(qp->state) == IB_QPS_RTS) {
		e = srx_req_next_wqe(qp);
		if (!e)
			break;
		if (e->eng.state == SRX_SWQE_ERROR)
			break;
		if (srx_wqe_opcode_is_local(e->opcode)) {
			if (!srx_req_local(qp, e))
				break;
			budget--;
			continue;
		}
		rd = srx_wqe_opcode_is_rd_atomic(e->opcode);
		if (srx_psn_diff(req->psn, req->una) >=
		    (req->probe ? 1 : SRX_WINDOW) ||
		    (rd && req->rd_atomic >= req->max_rd_atomic)) {
			req->blocked = true;
			break;
		}
		if (e->eng.state == SRX_SWQE_NEW && !srx_req_start(qp, e))
			break;
		/* A resend starts inside the WQE; anything else is a bug. */
		if (!srx_psn_in_window(req->psn, e->eng.first_psn,
				       srx_psn_diff(e->eng.last_psn,
						    e->eng.first_psn) + 1))
			req->psn = e->eng.first_psn;

		acc = srx_req_send_pkt(qp, e, req->psn);
		if (acc != SRX_ACC_OK) {
			srx_req_fail(qp, e, srx_acc_wc_status(acc));
			break;
		}
		budget--;
		if (rd) {
			/* One request; its responses fill its PSNs. */
			req->rd_atomic++;
			req->psn = srx_psn_add(e->eng.last_psn, 1);
			req->cur++;
		} else {
			if (req->psn == e->eng.last_psn)
				req->cur++;
			req->psn = srx_psn_add(req->psn, 1);
		}
		if (srx_psn_after(req->psn, req->psn_max))
			req->psn_max = req->psn;
		srx_comp_arm_retrans(qp, false);
	}
	return !budget;
}

/*
 * send_work: the requester for kernel posters and after the completer or
 * a timer asked for it; the flush of a QP in error, and its
 * LAST_WQE_REACHED on an SRQ.
 * Context: srx_wq (process); sleeps between flush batches.
 */
void srx_send_work(struct work_struct *w)
{
	struct srx_qp *qp = container_of(w, struct srx_qp, send_work);

	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		srx_qp_flush(qp, true);
		/* After the flush of the WQE it held, outside srx's locks. */
		srx_qp_last_wqe(qp);
		return;
	}
	spin_lock_bh(&qp->send_lock);
	if (srx_req_run(qp, SRX_WORK_BUDGET))
		srx_qp_kick(qp);
	spin_unlock_bh(&qp->send_lock);
}
