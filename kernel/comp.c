// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The completer of the RC transport: what comes back for a QP's requests
 * (ACKs, NAKs, READ responses, ATOMIC ACKs), the retransmit and RNR
 * timers, and completing send WQEs, strictly in order, into the send CQ.
 *
 * It runs under qp->send_lock, as the requester does: in the receive
 * softirq for a response (it does not transmit bulk data there: when an
 * ACK lifts a stop of the requester it queues send_work), in the
 * requester's run for the decisions the timers left (a timeout, a
 * go-back-N restart), and in the timers themselves, which only record
 * what happened and queue send_work: a timer never transmits.
 *
 * PSN bookkeeping (struct srx_req): everything before una is
 * acknowledged; [una, psn_max) is outstanding; each WQE taken and sent
 * has its [first_psn, last_psn]. An ACK for PSN p acknowledges every PSN
 * up to p (coalesced ACKs, [IBTA] 9.7.5.1.1); a READ response or an
 * ATOMIC ACK for p acknowledges every PSN before p.
 */
#include <linux/skbuff.h>

#include "cq.h"
#include "device.h"
#include "engine.h"
#include "mr.h"
#include "qp.h"
#include "take.h"

/*
 * Complete, in order, the WQEs at the head of the send queue that are
 * done or failed. A success completes silently unless it is signaled
 * (IBTA 1.4 section 10.8.6); a failure always completes, then the QP goes
 * to the error state and the WQEs after it are flushed (send_work).
 *
 * Context: send_lock held.
 */
void srx_comp_retire(struct srx_qp *qp)
{
	struct srx_wq *sq = &qp->sq;
	struct srx_cqe cqe;
	struct srx_swqe *e;
	u32 n;

	lockdep_assert_held(&qp->send_lock);

	for (n = 0; n < sq->entries && sq->kdone != sq->kcons; n++) {
		e = srx_sq_entry(sq, sq->kdone);
		if (e->eng.state != SRX_SWQE_DONE &&
		    e->eng.state != SRX_SWQE_ERROR)
			break;
		memset(&cqe, 0, sizeof(cqe));
		cqe.wr_id = e->wr_id;
		cqe.opcode = srx_wr_to_wc_opcode(e->opcode);
		cqe.qp_num = qp->base_qp.qp_num;
		cqe.byte_len = e->length;
		if (e->eng.state == SRX_SWQE_ERROR) {
			cqe.status = e->eng.flags;
			srx_wq_complete(qp, true, &cqe);
			del_timer(&qp->retrans_timer);
			del_timer(&qp->rnr_timer);
			srx_qp_set_error(qp);
			break;
		}
		if ((e->send_flags & SRX_SEND_SIGNALED) ||
		    qp->sq_sig_type == IB_SIGNAL_ALL_WR)
			srx_wq_complete(qp, true, &cqe);
		else
			srx_wq_complete(qp, true, NULL);
	}
	/* The requester never points below the oldest WQE left. */
	if ((s32)(qp->req.cur - sq->kdone) < 0)
		qp->req.cur = sq->kdone;
}

/*
 * Fail the oldest outstanding WQE with @status (a NAK, retries or RNR
 * retries exhausted): it completes with it and the QP goes to error.
 * Context: send_lock held.
 */
void srx_comp_error(struct srx_qp *qp, u8 status)
{
	struct srx_wq *sq = &qp->sq;
	struct srx_swqe *e;

	lockdep_assert_held(&qp->send_lock);

	if (sq->kdone == sq->kcons)
		return;
	e = srx_sq_entry(sq, sq->kdone);
	e->eng.state = SRX_SWQE_ERROR;
	e->eng.flags = status;
	srx_comp_retire(qp);
}

/*
 * Restart sending from the oldest unacknowledged PSN (go-back-N): the
 * packets are rebuilt from the WQEs, which keep their PSNs, so a resent
 * packet is the same as the first (a READ is re-requested from una, for
 * the part of it not yet received).
 * Context: send_lock held.
 */
void srx_comp_go_back(struct srx_qp *qp)
{
	struct srx_req *req = &qp->req;

	lockdep_assert_held(&qp->send_lock);

	req->go_back = false;
	/* Whatever sent it back (a NAK, a gap, an RNR wait) was a loss. */
	req->resume = false;
	req->resumed = false;
	req->psn = req->una;
	req->cur = qp->sq.kdone;
	req->rd_atomic = 0;
	req->since_ackreq = 0;
}

/*
 * An answer to a timeout's probe moved una: if it passed resume_past, go
 * on sending from the point the timeout found (srx_comp_timeout()), with
 * the READs and ATOMICs outstanding before it counted again, unless an
 * ACK has since moved past that point or the WQEs it named are gone.
 * Otherwise the go-back stands: the requester resends from una.
 * Context: send_lock held; the requester's run.
 */
void srx_comp_resume(struct srx_qp *qp)
{
	struct srx_req *req = &qp->req;
	struct srx_wq *sq = &qp->sq;
	u32 ahead = req->resume_cur - sq->kdone, i, n = 0;
	struct srx_swqe *e;

	lockdep_assert_held(&qp->send_lock);

	req->resume = false;
	if (!srx_psn_after(req->una, req->resume_past) ||
	    !srx_psn_before(req->psn, req->resume_psn) ||
	    srx_psn_after(req->resume_psn, req->psn_max) ||
	    ahead > sq->kcons - sq->kdone || req->cur - sq->kdone > ahead)
		return;
	for (i = sq->kdone; i != req->resume_cur; i++) {
		e = srx_sq_entry(sq, i);
		if (e->eng.state == SRX_SWQE_SENT &&
		    srx_wqe_opcode_is_rd_atomic(e->opcode))
			n++;
	}
	req->psn = req->resume_psn;
	req->cur = req->resume_cur;
	req->rd_atomic = n;
	req->resumed = true;
}

/*
 * (Re)arm the retransmit timer while PSNs are outstanding, stop it when
 * none is: on @restart (progress) from now, else only if not running.
 * Context: send_lock held.
 */
void srx_comp_arm_retrans(struct srx_qp *qp, bool restart)
{
	struct srx_req *req = &qp->req;

	lockdep_assert_held(&qp->send_lock);

	if (req->una == req->psn_max || !req->timeout_jiffies || qp->dead) {
		del_timer(&qp->retrans_timer);
		return;
	}
	if (restart || !timer_pending(&qp->retrans_timer))
		mod_timer(&qp->retrans_timer, jiffies + req->timeout_jiffies);
}

/*
 * A retry the protocol asks for (a timeout, a sequence NAK): one of
 * retry_cnt, then go back; none left, RETRY_EXC_ERR.
 */
static bool srx_comp_retry(struct srx_qp *qp)
{
	struct srx_req *req = &qp->req;

	if (!req->retry_left) {
		srx_count(qp->sdev, SRX_CNT_RETRY_EXC, 1);
		srx_comp_error(qp, IB_WC_RETRY_EXC_ERR);
		return false;
	}
	req->retry_left--;
	srx_count(qp->sdev, SRX_CNT_RETRANSMITS, 1);
	req->go_back = true;
	return true;
}

/*
 * The retransmit timer fired (recorded by srx_retrans_timer()): retry, or
 * fail, if PSNs are still outstanding.
 * Context: send_lock held; the requester's run.
 */
void srx_comp_timeout(struct srx_qp *qp)
{
	struct srx_req *req = &qp->req;
	struct srx_wq *sq = &qp->sq;
	bool resume;
	u32 psn, cur;

	req->timed_out = false;
	/*
	 * No resume after a loss: one a NAK or a gap found and the requester
	 * has not yet gone back for, or one a resume skipped (the timeout is
	 * for a PSN before the point it jumped to). So a lost tail costs one
	 * timeout more than a go-back would, not one per request.
	 */
	resume = !req->go_back &&
		 !(req->resumed && srx_psn_before(req->una, req->resume_psn));
	if (req->una == req->psn_max || req->rnr_wait || !srx_comp_retry(qp))
		return;
	/* A second timeout before the first probe's answer keeps its point. */
	psn = req->resume ? req->resume_psn : req->psn;
	cur = req->resume ? req->resume_cur : req->cur;
	srx_comp_go_back(qp);
	req->probe = true;
	req->resume = resume;
	req->resume_psn = psn;
	req->resume_cur = cur;
	/*
	 * Resend only the packet at una, asking for its ACK, until an ACK
	 * moves una: the timeout may only mean that the answers are late
	 * (a host too busy to run the receive softirq), and a window of
	 * duplicates, each ACKed, would then bury them deeper, timeout
	 * after timeout, until retry_cnt runs out. TCP restarts from one
	 * segment after a timeout for the same reason (RFC 5681, 3.1).
	 *
	 * Once the probe is answered, the answers to what went before it
	 * may only be late, and resending it all would have the responder
	 * execute each READ again while its first answer is on the way: so
	 * sending resumes at the timeout's point (srx_comp_resume()) if the
	 * answer shows that the requests after the probe got through, as
	 * F-RTO does for TCP (RFC 5682). An ACK past the probe packet shows
	 * it for a SEND or WRITE; an ACK that ends at it may be the answer
	 * to the probe alone, and then the rest was lost: go back. A READ
	 * or ATOMIC's answer shows nothing of the requests after it, and
	 * any answer resumes: if one of those was really lost, a later
	 * packet's sequence NAK, an answer past a gap or the next timeout
	 * finds it, and that timeout goes back.
	 */
	req->resume_past = req->una;
	if (sq->kdone != sq->kcons &&
	    !srx_wqe_opcode_is_rd_atomic(srx_sq_entry(sq, sq->kdone)->opcode))
		req->resume_past = srx_psn_add(req->una, 1);
	srx_comp_arm_retrans(qp, true);
}

/*
 * Everything up to and including @psn reached the responder: mark the
 * SEND and WRITE WQEs it covers done. A READ or ATOMIC is done only by
 * its response; an ACK past all of it means that response was lost, and
 * the requester goes back for it. Return: true if una moved.
 */
static bool srx_comp_ack(struct srx_qp *qp, u32 psn)
{
	struct srx_req *req = &qp->req;
	struct srx_wq *sq = &qp->sq;
	bool progress = false;
	struct srx_swqe *e;
	u32 i, n;

	if (srx_psn_before(psn, req->una) || !srx_psn_before(psn, req->psn_max))
		return false;
	for (i = sq->kdone, n = 0; i != sq->kcons && n < sq->entries;
	     i++, n++) {
		e = srx_sq_entry(sq, i);
		if (e->eng.state != SRX_SWQE_SENT ||
		    srx_psn_after(e->eng.first_psn, psn))
			break;
		if (srx_wqe_opcode_is_rd_atomic(e->opcode)) {
			if (!srx_psn_before(psn, e->eng.last_psn))
				req->go_back = true;
			break;
		}
		if (srx_psn_before(psn, e->eng.last_psn)) {
			req->una = srx_psn_add(psn, 1);
			progress = true;
			break;
		}
		e->eng.state = SRX_SWQE_DONE;
		req->una = srx_psn_add(e->eng.last_psn, 1);
		progress = true;
	}
	return progress;
}

/* Whether a READ or ATOMIC sent before @psn still waits for its answer. */
static bool srx_comp_rd_before(struct srx_qp *qp, u32 psn)
{
	struct srx_wq *sq = &qp->sq;
	struct srx_swqe *e;
	u32 i, n;

	for (i = sq->kdone, n = 0; i != sq->kcons && n < sq->entries;
	     i++, n++) {
		e = srx_sq_entry(sq, i);
		if (e->eng.state != SRX_SWQE_SENT ||
		    !srx_psn_before(e->eng.first_psn, psn))
			break;
		if (srx_wqe_opcode_is_rd_atomic(e->opcode))
			return true;
	}
	return false;
}

/* The WQE a response at @psn answers: the oldest, if it is waiting for it. */
static struct srx_swqe *srx_comp_rd_wqe(struct srx_qp *qp, u32 psn)
{
	struct srx_wq *sq = &qp->sq;
	struct srx_swqe *e;

	if (sq->kdone == sq->kcons || psn != qp->req.una)
		return NULL;
	e = srx_sq_entry(sq, sq->kdone);
	if (e->eng.state != SRX_SWQE_SENT || !srx_wqe_opcode_is_rd_atomic(e->opcode) ||
	    !srx_psn_in_window(psn, e->eng.first_psn,
			       srx_psn_diff(e->eng.last_psn,
					    e->eng.first_psn) + 1))
		return NULL;
	return e;
}

/*
 * A READ response at una: scatter it into the WQE's buffers. Or the empty
 * one that answers an ATOMIC WRITE.
 */
static bool srx_comp_read_resp(struct srx_qp *qp,
			       const struct srx_roce_pkt *pkt,
			       const u8 *payload)
{
	struct srx_req *req = &qp->req;
	struct srx_swqe *e = srx_comp_rd_wqe(qp, pkt->psn);
	u32 idx, want;
	enum srx_acc acc;
	u64 off;

	if (!e || srx_wqe_opcode_is_atomic(e->opcode)) {
		/*
		 * Ahead of una: one before it was lost; ask again, once per
		 * una: the rest of the old stream is still arriving, and
		 * asking at each of its packets would restart it each time.
		 */
		if (srx_psn_after(pkt->psn, req->una) &&
		    !(req->asked_again && req->asked_psn == req->una)) {
			req->asked_again = true;
			req->asked_psn = req->una;
			req->go_back = true;
		}
		return false;
	}
	idx = srx_psn_diff(pkt->psn, e->eng.first_psn);
	off = (u64)idx * req->mtu;
	/* An ATOMIC WRITE's answer is an empty READ_RESP_ONLY. */
	want = e->opcode == SRX_WR_ATOMIC_WRITE ? 0 :
	       min_t(u64, req->mtu, e->length - off);
	/* Its place and length must be the ones the request asked for. */
	if (!!(pkt->op->flags & SRX_ROCE_F_FIRST) != (idx == 0) ||
	    !!(pkt->op->flags & SRX_ROCE_F_LAST) !=
	    (pkt->psn == e->eng.last_psn) || pkt->payload_len != want) {
		srx_count(qp->sdev, SRX_CNT_RCVD_DROPPED, 1);
		return false;
	}
	if (want) {
		acc = srx_sge_copy(qp->sdev, qp->base_qp.pd,
				   IB_ACCESS_LOCAL_WRITE, e->sge, e->num_sge,
				   off, (void *)payload, want, SRX_TO_MR);
		if (acc != SRX_ACC_OK) {
			srx_comp_error(qp, acc == SRX_ACC_LENGTH ?
				       IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR);
			return false;
		}
	}
	req->una = srx_psn_add(pkt->psn, 1);
	if (pkt->psn == e->eng.last_psn) {
		e->eng.state = SRX_SWQE_DONE;
		/* 0 if a go-back recounts it and its resend is not out yet */
		if (req->rd_atomic)
			req->rd_atomic--;
	}
	return true;
}

/* An ATOMIC ACK at una: the original value goes to the WQE's buffer. */
static bool srx_comp_atomic_ack(struct srx_qp *qp,
				const struct srx_roce_pkt *pkt,
				const u8 *buf)
{
	struct srx_req *req = &qp->req;
	struct srx_swqe *e = srx_comp_rd_wqe(qp, pkt->psn);
	const struct srx_atmack *ack;
	enum srx_acc acc;
	u64 orig;

	if (!e || !srx_wqe_opcode_is_atomic(e->opcode))
		return false;
	ack = srx_roce_pkt_hdr(pkt, buf, SRX_ROCE_ATMACK);
	orig = srx_atmack_orig(ack);
	acc = srx_sge_copy(qp->sdev, qp->base_qp.pd, IB_ACCESS_LOCAL_WRITE,
			   e->sge, e->num_sge, 0, &orig, sizeof(orig),
			   SRX_TO_MR);
	if (acc != SRX_ACC_OK) {
		srx_comp_error(qp, acc == SRX_ACC_LENGTH ?
			       IB_WC_LOC_LEN_ERR : IB_WC_LOC_PROT_ERR);
		return false;
	}
	req->una = srx_psn_add(pkt->psn, 1);
	e->eng.state = SRX_SWQE_DONE;
	if (req->rd_atomic)
		req->rd_atomic--;
	return true;
}

/*
 * An ACK moved una: the retry counts start again (IBTA 9.7.5.2.8 counts
 * retries of one PSN).
 * Context: send_lock held.
 */
static void srx_comp_progressed(struct srx_req *req)
{
	req->retry_left = req->retry_cnt;
	req->rnr_left = req->rnr_retry;
	/*
	 * A timeout the timer recorded and the requester has not yet acted
	 * on is stale now: the peer answered, and the timer is armed again.
	 * Acting on it would cost a retry and a probe for nothing.
	 */
	req->timed_out = false;
	req->probe = false;
	/* Past the resume's point, a timeout may resume again. */
	if (req->resumed && !srx_psn_before(req->una, req->resume_psn))
		req->resumed = false;
	/* Resending what the peer has acknowledged would be waste. */
	if (srx_psn_before(req->psn, req->una))
		req->psn = req->una;
}

/* An RNR NAK for una: wait the time it names, then resend from una. */
static void srx_comp_rnr(struct srx_qp *qp, u8 code)
{
	struct srx_req *req = &qp->req;
	unsigned long usec = srx_rnr_timer_usec[code & 0x1f];

	srx_count(qp->sdev, SRX_CNT_RCVD_RNR_NAK, 1);
	if (req->rnr_retry != 7) {	/* 7: retry for ever (IBTA 9.7.5.2.8) */
		if (!req->rnr_left) {
			srx_count(qp->sdev, SRX_CNT_RNR_RETRY_EXC, 1);
			srx_comp_error(qp, IB_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		req->rnr_left--;
	}
	req->rnr_wait = true;
	del_timer(&qp->retrans_timer);
	if (!qp->dead)
		mod_timer(&qp->rnr_timer,
			  jiffies + max_t(unsigned long, 1,
					  usecs_to_jiffies(usec)));
}

static void srx_comp_nak(struct srx_qp *qp, u8 code)
{
	switch (code) {
	case SRX_AETH_NAK_PSN_SEQ:
		srx_count(qp->sdev, SRX_CNT_RCVD_SEQ_NAK, 1);
		srx_comp_retry(qp);
		break;
	case SRX_AETH_NAK_INV_REQ:
		srx_count(qp->sdev, SRX_CNT_RCVD_NAK, 1);
		srx_comp_error(qp, IB_WC_REM_INV_REQ_ERR);
		break;
	case SRX_AETH_NAK_REM_ACCESS:
		srx_count(qp->sdev, SRX_CNT_RCVD_NAK, 1);
		srx_comp_error(qp, IB_WC_REM_ACCESS_ERR);
		break;
	default:
		srx_count(qp->sdev, SRX_CNT_RCVD_NAK, 1);
		srx_comp_error(qp, IB_WC_REM_OP_ERR);
		break;
	}
}

/**
 * srx_comp_rcv - a response to one of @qp's requests arrived
 * @qp: the QP, referenced by the caller
 * @pkt: the parsed packet: an ACK, ATOMIC ACK or READ response
 * @skb: the packet, linear, BTH at data; consumed
 *
 * Context: the receive softirq.
 */
void srx_comp_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		  struct sk_buff *skb)
{
	struct srx_req *req = &qp->req;
	const struct srx_aeth *aeth;
	enum ib_qp_state state;
	bool progress, more = false;
	u8 type;

	spin_lock_bh(&qp->send_lock);
	state = READ_ONCE(qp->state);
	/* SQD drains: what is outstanding still completes there. */
	if ((state != IB_QPS_RTS && state != IB_QPS_SQD) ||
	    !srx_pkt_from_peer(qp, skb)) {
		srx_count(qp->sdev, SRX_CNT_RCVD_DROPPED, 1);
		goto out;
	}
	aeth = srx_roce_pkt_hdr(pkt, skb->data, SRX_ROCE_AETH);

	/*
	 * Whatever else it is, it acknowledges every PSN before it. What
	 * that completed is retired at once: the ACK, NAK or response
	 * itself is about the WQE at kdone after it, and a done WQE left
	 * there would stop srx_comp_ack(), take a NAK's blame, or turn a
	 * READ response away.
	 */
	progress = srx_comp_ack(qp, srx_psn_add(pkt->psn, SRX_SEQ24_MASK));
	if (progress) {
		srx_comp_retire(qp);
		/*
		 * Before the NAK below takes its retry: the counts restart
		 * with the progress, and the NAK's retry is the first of the
		 * new count, not forgotten by it.
		 */
		srx_comp_progressed(req);
	}

	switch (pkt->opcode) {
	case SRX_ROCE_RC_ACK:
		type = srx_aeth_type(aeth);
		if (type == SRX_AETH_TYPE_ACK) {
			more = srx_comp_ack(qp, pkt->psn);
		} else if (pkt->psn == req->una) {
			/* A NAK names the PSN it refuses, una if current. */
			if (type == SRX_AETH_TYPE_RNR_NAK)
				srx_comp_rnr(qp, srx_aeth_rnr_timer(aeth));
			else if (type == SRX_AETH_TYPE_NAK &&
				 !(req->rnr_wait &&
				   srx_aeth_nak_code(aeth) ==
				   SRX_AETH_NAK_PSN_SEQ))
				srx_comp_nak(qp, srx_aeth_nak_code(aeth));
		} else if (type == SRX_AETH_TYPE_NAK && !req->nak_held &&
			   srx_aeth_nak_code(aeth) != SRX_AETH_NAK_PSN_SEQ &&
			   srx_psn_after(pkt->psn, req->una) &&
			   srx_psn_before(pkt->psn, req->psn_max)) {
			/*
			 * An error NAK ahead of una overtook the responses to
			 * a READ or ATOMIC before it (they left the responder
			 * first, from another CPU's queue): it applies when
			 * they are in and una reaches it. If they were lost,
			 * the retry finds the responder in error and ends in
			 * RETRY_EXC_ERR, as it would have without the NAK.
			 */
			req->nak_held = true;
			req->nak_code = srx_aeth_nak_code(aeth);
			req->nak_psn = pkt->psn;
		}
		break;
	case SRX_ROCE_RC_ATOMIC_ACK:
		more = srx_comp_atomic_ack(qp, pkt, skb->data);
		break;
	default:	/* READ responses */
		more = srx_comp_read_resp(qp, pkt,
					  skb->data + pkt->payload_off);
		break;
	}

	if (more)
		srx_comp_progressed(req);
	progress |= more;
	srx_comp_retire(qp);
	if (req->nak_held) {
		/*
		 * Once the READs and ATOMICs before it are answered, the
		 * held NAK acknowledges every PSN before it, as it would
		 * have on arrival; then it fails the WQE at una, which may
		 * be a later packet of a message.
		 */
		if (req->una != req->nak_psn &&
		    !srx_comp_rd_before(qp, req->nak_psn) &&
		    srx_comp_ack(qp, srx_psn_add(req->nak_psn,
						 SRX_SEQ24_MASK))) {
			srx_comp_retire(qp);
			srx_comp_progressed(req);
			progress = true;
		}
		if (!srx_psn_before(req->una, req->nak_psn)) {
			req->nak_held = false;
			if (req->una == req->nak_psn)
				srx_comp_nak(qp, req->nak_code);
		}
	}
	if (READ_ONCE(qp->state) == IB_QPS_RTS) {
		if (progress)
			srx_comp_arm_retrans(qp, true);
		/*
		 * Bulk sending is send_work's, not this softirq's: a reopened
		 * window, or WQEs posted while the engine was active (their
		 * posters did not ring, K6). With nothing left, the engine
		 * goes idle here, unless a post just came.
		 */
		if (req->go_back ||
		    (progress && (req->blocked || srx_req_pending(qp))) ||
		    srx_req_try_idle(qp))
			srx_qp_kick(qp);
	}
out:
	spin_unlock_bh(&qp->send_lock);
	consume_skb(skb);
}

/*
 * The timers record and hand over: they run in softirq after destroy has
 * marked the QP dead at the latest (destroy shuts them down before it
 * waits for the last reference), and only queue send_work.
 */
void srx_retrans_timer(struct timer_list *t)
{
	struct srx_qp *qp = from_timer(qp, t, retrans_timer);

	spin_lock_bh(&qp->send_lock);
	if (qp->req.una != qp->req.psn_max && !qp->req.rnr_wait) {
		qp->req.timed_out = true;
		srx_qp_kick(qp);
	}
	spin_unlock_bh(&qp->send_lock);
}

void srx_rnr_timer(struct timer_list *t)
{
	struct srx_qp *qp = from_timer(qp, t, rnr_timer);

	spin_lock_bh(&qp->send_lock);
	if (qp->req.rnr_wait) {
		qp->req.rnr_wait = false;
		qp->req.go_back = true;
		srx_qp_kick(qp);
	}
	spin_unlock_bh(&qp->send_lock);
}
