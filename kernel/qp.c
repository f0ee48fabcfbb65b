// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs: objects, the IB state machine, work queue rings, and the
 * flush that completes every outstanding work request when a QP enters the
 * error state.
 *
 * The wire protocol is not here yet: a WQE posted to a QP that is not in
 * the error state stays in its ring. Flushing is what produces completions
 * today, and it is the path every later error will take. A flush takes
 * WQEs (take.c: each copied once into its private entry and validated;
 * cons published, K4 of srx-abi.h) and completes them from those entries in
 * the same hold of the lock, then writes each slot's cqe_idx and publishes
 * done (K5): a user QP's slot is free once that completion has been polled,
 * not when the kernel took the WQE. WQEs taken earlier by someone else (the
 * engine, next) and not completed are flushed first, from their entries.
 *
 * Contexts: create/modify/query/destroy run in process context and are
 * serialized by state_mutex (the core also serializes destroy against the
 * rest for user QPs). Kernel post_send/post_recv may run in any context.
 * A user QP's doorbell (a write() POST_SEND with no work requests) runs in
 * process context. Lock order: state_mutex, then a work queue's lock, then
 * a CQ's lock; state_lock nests inside state_mutex and is never held while
 * taking another lock.
 *
 * A flush holds a work queue's lock (interrupts off) for at most
 * SRX_FLUSH_BATCH WQEs at a time, whatever the ring size, and lets the
 * scheduler in between batches when its caller may sleep: a process can
 * ring the doorbell in a loop with a producer index a whole ring ahead.
 */
#include <linux/log2.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "ah.h"
#include "cq.h"
#include "device.h"
#include "mr.h"
#include "qp.h"
#include "ring.h"
#include "srq.h"
#include "take.h"
#include "ucontext.h"

/*
 * WQEs a flush completes per hold of the work queue's lock, and per call of
 * srx_cq_post(): the bound on how long a flush keeps interrupts off.
 */
#define SRX_FLUSH_BATCH 16

/**
 * srx_wq_ring_alloc - allocate a work queue's ring, without private entries
 * @wq: the work queue, zeroed
 * @uctx: the user context to map it in, or NULL for a kernel queue
 * @want_wr: WQEs asked for (rounded up to a power of two, at least 1)
 * @want_sge: SGEs per WQE asked for
 * @want_inline: inline bytes per WQE asked for (send queues)
 * @send: a send queue (struct srx_send_wqe slots), else receive WQEs
 *
 * QPs add the take's private entries (srx_wq_take_init()); an SRQ's ring
 * has none, its WQEs are taken into the taking QP's entry (srq.c).
 *
 * Context: process; sleeps. Return: 0 or a negative errno.
 */
int srx_wq_ring_alloc(struct srx_wq *wq, struct ib_ucontext *uctx,
		      u32 want_wr, u32 want_sge, u32 want_inline, bool send)
{
	size_t hdr = send ? sizeof(struct srx_send_wqe) :
			    sizeof(struct srx_recv_wqe);
	size_t body = max_t(size_t, max_t(u32, want_sge, 1) *
					sizeof(struct srx_sge), want_inline);

	spin_lock_init(&wq->lock);
	wq->entries = srx_ring_entries(max_t(u32, want_wr, 1));
	wq->wqe_size = roundup_pow_of_two(hdr + body);
	wq->max_sge = min_t(u32, (wq->wqe_size - hdr) / sizeof(struct srx_sge),
			    SRX_MAX_SGE);
	wq->max_inline = send ? min_t(u32, wq->wqe_size - hdr,
				      SRX_MAX_INLINE) : 0;
	wq->size = PAGE_ALIGN(sizeof(struct srx_wq_ctrl) +
			      (size_t)wq->entries * wq->wqe_size +
			      (size_t)wq->entries * sizeof(u32));

	wq->mem = srx_ring_mem_alloc(uctx, wq->size, &wq->mmap,
				     &wq->mmap_offset);
	if (IS_ERR(wq->mem)) {
		int ret = PTR_ERR(wq->mem);

		wq->mem = NULL;
		return ret;
	}
	wq->ctrl = wq->mem;
	wq->wqes = wq->mem + sizeof(struct srx_wq_ctrl);
	wq->cqe_idx = wq->wqes + (size_t)wq->entries * wq->wqe_size;
	return 0;
}

void srx_wq_ring_free(struct srx_wq *wq)
{
	if (wq->mem)
		srx_ring_mem_free(wq->mem, wq->mmap);
	wq->mem = NULL;
}

static int srx_wq_alloc(struct srx_wq *wq, struct srx_qp *qp,
			struct ib_ucontext *uctx, enum ib_qp_type type,
			u32 want_wr, u32 want_sge, u32 want_inline, bool send)
{
	int ret;

	ret = srx_wq_ring_alloc(wq, uctx, want_wr, want_sge, want_inline,
				send);
	if (ret)
		return ret;
	ret = srx_wq_take_init(wq, qp->sdev, type, send);
	if (ret)
		goto err_free_ring;
	/*
	 * A process has no fast-registration MRs to register (they are the
	 * kernel's, mr.c), and its ring could name any index: REG_MR is
	 * the kernel's own QPs' alone.
	 */
	if (uctx)
		wq->lim.send_ops &= ~BIT_ULL(SRX_WR_REG_MR);
	/* Windows are for processes: the kernel has no ib_alloc_mw(). */
	else
		wq->lim.send_ops &= ~BIT_ULL(SRX_WR_BIND_MW);
	return 0;

err_free_ring:
	srx_wq_ring_free(wq);
	return ret;
}

/* A QP on an SRQ has no receive queue: nothing to free there. */
static void srx_wq_free(struct srx_wq *wq)
{
	srx_wq_take_fini(wq);
	srx_wq_ring_free(wq);
}

void srx_wq_layout(const struct srx_wq *wq, struct srx_wq_layout *l)
{
	l->mmap_offset = wq->mmap_offset;
	l->mmap_length = wq->size;
	l->entries = wq->entries;
	l->wqe_size = wq->wqe_size;
	l->prod_offset = offsetof(struct srx_wq_ctrl, prod);
	l->cons_offset = offsetof(struct srx_wq_ctrl, cons);
	l->state_offset = offsetof(struct srx_wq_ctrl, state);
	l->wqe_offset = sizeof(struct srx_wq_ctrl);
	l->max_sge = wq->max_sge;
	l->max_inline = wq->max_inline;
	l->comp_mask = 0;
	l->done_offset = offsetof(struct srx_wq_ctrl, done);
	l->cqe_idx_offset = (void *)wq->cqe_idx - wq->mem;
	l->engine_offset = offsetof(struct srx_wq_ctrl, engine);
}

u8 srx_wr_to_wc_opcode(u8 wr_opcode)
{
	switch (wr_opcode) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return IB_WC_RDMA_WRITE;
	case IB_WR_RDMA_READ:
	case IB_WR_RDMA_READ_WITH_INV:
		return IB_WC_RDMA_READ;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return IB_WC_COMP_SWAP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return IB_WC_FETCH_ADD;
	case IB_WR_LOCAL_INV:
		return IB_WC_LOCAL_INV;
	case IB_WR_REG_MR:
		return IB_WC_REG_MR;
	case IB_WR_BIND_MW:
		return IB_WC_BIND_MW;
	case SRX_WR_ATOMIC_WRITE:
		return SRX_WC_ATOMIC_WRITE;
	default:
		return IB_WC_SEND;
	}
}

/*
 * One batch of a flush: under the work queue's lock, re-read the QP state,
 * take what was published (srx_sq_take()/srx_rq_take(), which read the
 * producer index), and complete up to @budget WQEs from the kernel's
 * completion index on with IB_WC_WR_FLUSH_ERR: first those already taken
 * and not completed, then those this batch took. Returns how many it
 * completed; fewer than @budget (0 included) means the queue is done for
 * this flush.
 *
 * The state is read under the lock because the caller's own look at it is
 * stale by now: a doorbell that saw ERR may get here after the QP went
 * ERR -> RESET -> INIT and new WQEs were posted, which must stay queued.
 * Reading it here is enough. RESET stores the state and then takes this
 * lock to discard (srx_modify_qp()), so a batch that takes the lock after
 * that discard sees RESET or a later state; a batch that took it before
 * cannot see WQEs published after the modify returned. Every WQE a batch
 * completes was therefore posted while the QP was in (or entering) the
 * error state, and kcons and kdone, which only move under this lock, make
 * each be taken once and complete exactly once.
 *
 * Every flushed WQE completes, signaled or not: selective signaling only
 * suppresses successful completions (IBTA 1.4 section 10.8.6); an invalid
 * one (its entry's result) completes as flushed too, as the QP is already
 * in error and executes nothing. The completion is built from the private
 * entry only (wr_id and opcode as the take copied them); a producer index
 * that cannot be honest takes, and so flushes, nothing new.
 */
static u32 srx_wq_flush_batch(struct srx_qp *qp, struct srx_wq *wq, bool send,
			      struct srx_cq *cq, u32 budget)
{
	struct srx_cqe cqes[SRX_FLUSH_BATCH];
	struct srx_cq_wq_done wd;
	unsigned long flags;
	u32 pending, n, i;

	lockdep_assert_held(send ? &qp->send_lock : &qp->resp_lock);

	spin_lock_irqsave(&wq->lock, flags);
	if (READ_ONCE(qp->state) != IB_QPS_ERR) {
		n = 0;
		goto out;
	}
	budget = min_t(u32, budget, SRX_FLUSH_BATCH);
	pending = wq->kcons - wq->kdone;
	if (pending < budget)
		pending += send ? srx_sq_take(qp, budget - pending) :
				  srx_rq_take(qp, budget - pending);
	n = min(pending, budget);

	memset(cqes, 0, n * sizeof(cqes[0]));
	for (i = 0; i < n; i++) {
		cqes[i].status = IB_WC_WR_FLUSH_ERR;
		cqes[i].qp_num = qp->base_qp.qp_num;
		if (send) {
			const struct srx_swqe *e =
				srx_sq_entry(wq, wq->kdone + i);

			cqes[i].wr_id = e->wr_id;
			cqes[i].opcode = srx_wr_to_wc_opcode(e->opcode);
		} else {
			cqes[i].wr_id = srx_rq_entry(wq, wq->kdone + i)->wr_id;
			cqes[i].opcode = IB_WC_RECV;
		}
	}
	if (n) {
		/*
		 * An overrun here changes nothing: the QP is already in error.
		 * K5: each slot says which CQE frees it, then done moves, in
		 * srx_cq_post() before the CQEs are published.
		 */
		wd.cqe_idx = wq->cqe_idx;
		wd.mask = wq->entries - 1;
		wd.first = wq->kdone;
		wd.done = &wq->ctrl->done;
		srx_cq_post(cq, cqes, n, &qp->base_qp, &wd);
		wq->kdone += n;
	}
	/* Again each batch: a process may have scribbled over both words. */
	smp_store_release(&wq->ctrl->cons, wq->kcons);
	smp_store_release(&wq->ctrl->done, wq->kdone);
out:
	spin_unlock_irqrestore(&wq->lock, flags);
	return n;
}

/*
 * Complete, as flushed, the WQEs of @wq that were published when this call
 * began (and any published meanwhile, within the budget), in batches.
 *
 * The budget of one ring's worth bounds the call even if a producer keeps
 * publishing, and still reaches every WQE published before the call: an
 * honest producer is never more than a ring ahead of kcons. Between
 * batches, a caller that may sleep (@may_sleep: modify_qp, the doorbell)
 * lets the scheduler in; a kernel poster, which may be in atomic context,
 * only reopens interrupts, and flushes no more than a ring it filled itself.
 *
 * Each batch holds the queue's owner in the engine (send_lock or
 * resp_lock), so a flush never completes a WQE the engine is working on.
 *
 * Context: process or send_work, bottom halves on; may sleep if
 * @may_sleep. Kernel posters, which may run with interrupts off, queue
 * send_work instead (srx_qp_kick()).
 */
static void srx_wq_flush(struct srx_qp *qp, struct srx_wq *wq, bool send,
			 bool may_sleep)
{
	struct srx_cq *cq = to_srx_cq(send ? qp->base_qp.send_cq :
					     qp->base_qp.recv_cq);
	spinlock_t *owner = send ? &qp->send_lock : &qp->resp_lock;
	u32 budget = wq->entries, flushed = 0, n;

	if (may_sleep)
		might_sleep();

	while (budget) {
		spin_lock_bh(owner);
		n = srx_wq_flush_batch(qp, wq, send, cq,
				       min_t(u32, budget, SRX_FLUSH_BATCH));
		spin_unlock_bh(owner);
		flushed += n;
		budget -= n;
		if (n < SRX_FLUSH_BATCH)
			break;
		if (may_sleep)
			cond_resched();
	}

	if (flushed)
		srx_count(qp->sdev, SRX_CNT_WQES_FLUSHED, flushed);
}

/*
 * Drop every WQE without a completion, as the transition to RESET does.
 * Context: the owner of @wq in the engine held (send_lock or resp_lock).
 */
static void srx_wq_discard(struct srx_qp *qp, struct srx_wq *wq)
{
	unsigned long flags;
	u32 prod;

	spin_lock_irqsave(&wq->lock, flags);
	prod = srx_wq_prod(qp, wq);
	if (srx_ring_take_ok(prod, wq->kcons, wq->kdone, wq->entries))
		wq->kcons = prod;
	/*
	 * Nothing dropped completes: libsrx frees every slot on RESET, and
	 * the private entries of WQEs taken but not completed are free too.
	 */
	wq->kdone = wq->kcons;
	smp_store_release(&wq->ctrl->cons, wq->kcons);
	smp_store_release(&wq->ctrl->done, wq->kdone);
	spin_unlock_irqrestore(&wq->lock, flags);
}

/*
 * Publish the state to both rings. The barrier orders the state store
 * before the producer-index loads of a following flush: the doorbell
 * contract of srx-abi.h.
 */
static void srx_qp_publish_state(struct srx_qp *qp, enum ib_qp_state state)
{
	lockdep_assert_held(&qp->state_lock);

	WRITE_ONCE(qp->state, state);	/* posters read it locklessly */
	WRITE_ONCE(qp->sq.ctrl->state, state);
	if (qp->rq.ctrl)		/* none on an SRQ */
		WRITE_ONCE(qp->rq.ctrl->state, state);
	/*
	 * K6: out of RTS the engine is not running for the poster: a post to
	 * a QP in error rings and flushes. The requester sets ACTIVE under
	 * state_lock and only in RTS (req.c), so it cannot undo this.
	 */
	if (state != IB_QPS_RTS)
		WRITE_ONCE(qp->sq.ctrl->engine, 0);
	smp_mb();
}

/*
 * The receive side of a QP on an SRQ in the error state: only the WQE it
 * holds (taken, not completed) completes, as flushed. The SRQ's other
 * WQEs are not this QP's: they stay for the QPs still working (rxe's
 * flush_recv_queue() returns early for an SRQ too). Nothing is taken
 * after this: every take runs under resp_lock after a state check
 * (resp.c, ud.c), and ERR was published before the flush.
 */
static void srx_srq_qp_flush(struct srx_qp *qp)
{
	struct srx_cqe cqe = {
		.status = IB_WC_WR_FLUSH_ERR,
		.opcode = IB_WC_RECV,
		.qp_num = qp->base_qp.qp_num,
	};

	spin_lock_bh(&qp->resp_lock);
	if (READ_ONCE(qp->state) == IB_QPS_ERR && qp->resp.srq_held) {
		cqe.wr_id = qp->resp.srq_wqe->e.wr_id;
		srx_recv_complete(qp, &cqe);
		srx_count(qp->sdev, SRX_CNT_WQES_FLUSHED, 1);
	}
	spin_unlock_bh(&qp->resp_lock);
}

void srx_qp_flush(struct srx_qp *qp, bool may_sleep)
{
	srx_wq_flush(qp, &qp->sq, true, may_sleep);
	if (qp->base_qp.srq)
		srx_srq_qp_flush(qp);
	else
		srx_wq_flush(qp, &qp->rq, false, may_sleep);
}

/**
 * srx_qp_last_wqe - raise QP_LAST_WQE_REACHED for a QP on an SRQ
 * @qp: the QP
 *
 * IBTA 1.4 section 10.3.1 (quoted in the core's ib_drain_qp() comment of
 * 6.12): once a QP on an SRQ is in the error state and its last WQE taken
 * from the SRQ has completed, the consumer is told, and may then drain the
 * CQ and destroy the QP. 6.12's ib_drain_qp() waits up to 60 s for it.
 * Raised once per entry to the error state (6.1's rxe never raises it),
 * after the flush of the held WQE, outside every srx lock, from
 * send_work, which calls this after its flush; every entry to ERR queues
 * send_work (srx_qp_set_error(), and srx_modify_qp() for a QP on an SRQ).
 *
 * Context: send_work (process); no srx lock held.
 */
void srx_qp_last_wqe(struct srx_qp *qp)
{
	struct ib_qp *ibqp = &qp->base_qp;
	struct ib_event ev = {
		.device = ibqp->device,
		.element.qp = ibqp,
		.event = IB_EVENT_QP_LAST_WQE_REACHED,
	};
	bool raise = false;

	if (!ibqp->srq)
		return;
	spin_lock_bh(&qp->resp_lock);
	if (READ_ONCE(qp->state) == IB_QPS_ERR && !qp->dead &&
	    !qp->resp.srq_held && !qp->resp.last_wqe_done) {
		qp->resp.last_wqe_done = true;
		raise = true;
	}
	spin_unlock_bh(&qp->resp_lock);

	if (!raise)
		return;
	srx_count(qp->sdev, SRX_CNT_LAST_WQE_EVENTS, 1);
	if (ibqp->event_handler)
		ibqp->event_handler(&ev, ibqp->qp_context);
}

/* A QP on an SRQ has no RQ: its receive sizes are ignored, as mlx5 does. */
static int srx_qp_check_cap(const struct ib_qp_cap *cap, bool has_rq)
{
	if (cap->max_send_wr > SRX_MAX_QP_WR ||
	    cap->max_send_sge > SRX_MAX_SGE ||
	    cap->max_inline_data > SRX_MAX_INLINE)
		return -EINVAL;
	if (has_rq && (cap->max_recv_wr > SRX_MAX_QP_WR ||
		       cap->max_recv_sge > SRX_MAX_SGE))
		return -EINVAL;
	return 0;
}

static int srx_qp_alloc_qpn(struct srx_device *sdev, struct srx_qp *qp,
			    enum ib_qp_type type)
{
	u32 qpn;
	int ret;

	if (type == IB_QPT_GSI) {
		ret = xa_insert_irq(&sdev->qp_xa, 1, qp, GFP_KERNEL);
		qpn = 1;
	} else {
		ret = xa_alloc_cyclic_irq(&sdev->qp_xa, &qpn, qp,
					  XA_LIMIT(SRX_MIN_QPN, SRX_MAX_QPN),
					  &sdev->qp_next, GFP_KERNEL);
	}
	if (ret < 0)
		return ret;
	qp->base_qp.qp_num = qpn;
	return 0;
}


/*
 * Look a QP up by number for the receive path, with a reference. The
 * lookup and the reference are taken under the xarray's lock, as destroy
 * erases the QP under it: a QP found is one whose initial reference
 * destroy has not dropped yet, so refcount_inc_not_zero() cannot meet a
 * QP already freed, and no RCU grace period is needed before the core
 * frees it once srx_destroy_qp() returns.
 *
 * Context: any. Return: the QP, or NULL.
 */
struct srx_qp *srx_qp_get(struct srx_device *sdev, u32 qpn)
{
	struct srx_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&sdev->qp_xa, flags);
	qp = xa_load(&sdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->ref))
		qp = NULL;
	xa_unlock_irqrestore(&sdev->qp_xa, flags);
	return qp;
}

/*
 * Context: any, an skb destructor included. The put that drops the last
 * reference wakes destroy, which then frees the QP: nothing here touches
 * @qp after complete().
 */
void srx_qp_put(struct srx_qp *qp)
{
	if (refcount_dec_and_test(&qp->ref))
		complete(&qp->released);
}

/*
 * Queue send_work: run the requester (a kernel poster, a reopened window,
 * a timer's decision), or flush a QP in error. Callers inside the engine
 * hold send_lock or resp_lock, under which dead is read: destroy sets it
 * under both before it cancels the work, so nothing queues it after.
 * Kernel posters call it without either: a kernel consumer that posts to
 * a QP while destroying it uses the QP after it is freed anyway.
 *
 * Context: any, hard interrupts off included.
 */
void srx_qp_kick(struct srx_qp *qp)
{
	if (!READ_ONCE(qp->dead))
		queue_work(srx_wq, &qp->send_work);
}

/*
 * The engine found an error that ends the QP (IBTA 1.4 section 10.3.1:
 * a completion in error moves it to the error state): publish ERR, and
 * let send_work flush both queues in batches, each under its owner lock.
 * The WQE in error has already been completed with its status.
 *
 * Context: any, with send_lock or resp_lock held.
 */
void srx_qp_set_error(struct srx_qp *qp)
{
	unsigned long flags;
	bool changed = false;

	spin_lock_irqsave(&qp->state_lock, flags);
	if (qp->state != IB_QPS_ERR && qp->state != IB_QPS_RESET) {
		srx_qp_publish_state(qp, IB_QPS_ERR);
		changed = true;
	}
	spin_unlock_irqrestore(&qp->state_lock, flags);
	if (changed)
		srx_qp_kick(qp);
}

/*
 * Complete the oldest taken WQE of the send (@send) or receive queue with
 * @cqe, or silently (@cqe NULL: an unsignaled send): K5, its slot's
 * cqe_idx then done. A silent completion's slot names the last CQE
 * written before it, so it is free once everything completed before it
 * has been polled. A CQ overrun puts the QP in error, as srx_cq_post()
 * asks.
 *
 * Context: any; the queue's owner lock held (send_lock or resp_lock).
 */
void srx_wq_complete(struct srx_qp *qp, bool send, const struct srx_cqe *cqe)
{
	struct srx_wq *wq = send ? &qp->sq : &qp->rq;
	struct srx_cq *cq = to_srx_cq(send ? qp->base_qp.send_cq :
					     qp->base_qp.recv_cq);
	struct srx_cq_wq_done wd = {
		.cqe_idx = wq->cqe_idx,
		.mask = wq->entries - 1,
		.done = &wq->ctrl->done,
	};
	unsigned long flags;
	bool overrun = false;

	lockdep_assert_held(send ? &qp->send_lock : &qp->resp_lock);

	spin_lock_irqsave(&wq->lock, flags);
	wd.first = wq->kdone;
	if (cqe) {
		/* K5 in srx_cq_post(), before the CQE is published. */
		overrun = srx_cq_post(cq, cqe, 1, &qp->base_qp, &wd) != 0;
	} else {
		WRITE_ONCE(wq->cqe_idx[wq->kdone & (wq->entries - 1)],
			   srx_cq_last_idx(cq));
		smp_store_release(&wq->ctrl->done, wq->kdone + 1);	/* K5 */
	}
	wq->kdone++;
	spin_unlock_irqrestore(&wq->lock, flags);

	if (overrun)
		srx_qp_set_error(qp);
}

/**
 * srx_recv_complete - complete the receive WQE the responder works on
 * @qp: the QP
 * @cqe: its completion
 *
 * With an RQ, the oldest taken (srx_wq_complete(), K5). On an SRQ, the one
 * the QP holds: its slot was freed when it was taken (K7), so nothing but
 * the CQE is written, and the QP holds none afterwards. A CQ overrun puts
 * the QP in error, as srx_cq_post() asks.
 *
 * Context: any; resp_lock held.
 */
void srx_recv_complete(struct srx_qp *qp, const struct srx_cqe *cqe)
{
	lockdep_assert_held(&qp->resp_lock);

	if (!qp->base_qp.srq) {
		srx_wq_complete(qp, false, cqe);
		return;
	}
	qp->resp.srq_held = false;
	if (srx_cq_post(to_srx_cq(qp->base_qp.recv_cq), cqe, 1, &qp->base_qp,
			NULL))
		srx_qp_set_error(qp);
}

int srx_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibqp->device);
	struct srx_qp *qp = to_srx_qp(ibqp);
	struct srx_ucontext *uctx = rdma_udata_to_drv_context(udata,
			struct srx_ucontext, base_ucontext);
	struct ib_ucontext *ibuctx = uctx ? &uctx->base_ucontext : NULL;
	struct srx_create_qp_resp resp = {};
	int ret;

	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	case IB_QPT_GSI:
		if (udata)
			return -EOPNOTSUPP;
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags || init->rwq_ind_tbl)
		return -EOPNOTSUPP;
	/* QP1 receives into its own RQ (the MAD layer posts there). */
	if (init->srq && init->qp_type == IB_QPT_GSI)
		return -EOPNOTSUPP;
	if (!init->send_cq || !init->recv_cq)
		return -EINVAL;
	ret = srx_qp_check_cap(&init->cap, !init->srq);
	if (ret)
		return ret;
	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	if (atomic_inc_return(&sdev->num_qp) > srx_device_max_qp()) {
		ret = -ENOMEM;
		goto err_count;
	}

	qp->sdev = sdev;
	qp->is_user = !!udata;
	qp->sq_sig_type = init->sq_sig_type;
	mutex_init(&qp->state_mutex);
	spin_lock_init(&qp->state_lock);
	refcount_set(&qp->ref, 1);
	init_completion(&qp->released);
	spin_lock_init(&qp->send_lock);
	spin_lock_init(&qp->resp_lock);
	INIT_WORK(&qp->send_work, srx_send_work);
	INIT_WORK(&qp->resp_work, srx_resp_work);
	__skb_queue_head_init(&qp->resp.held);
	timer_setup(&qp->retrans_timer, srx_retrans_timer, 0);
	timer_setup(&qp->rnr_timer, srx_rnr_timer, 0);

	ret = srx_wq_alloc(&qp->sq, qp, ibuctx, init->qp_type,
			   init->cap.max_send_wr, init->cap.max_send_sge,
			   init->cap.max_inline_data, true);
	if (ret)
		goto err_count;
	if (init->srq) {
		/* The entry of the one SRQ WQE the QP may hold (srq.c). */
		struct srx_srq *srq = to_srx_srq(init->srq);

		qp->resp.srq_wqe = kzalloc(srx_srq_wqe_size(srq),
					   GFP_KERNEL_ACCOUNT);
		if (!qp->resp.srq_wqe) {
			ret = -ENOMEM;
			goto err_free_sq;
		}
	} else {
		ret = srx_wq_alloc(&qp->rq, qp, ibuctx, init->qp_type,
				   init->cap.max_recv_wr,
				   init->cap.max_recv_sge, 0, false);
		if (ret)
			goto err_free_sq;
	}

	ret = srx_qp_alloc_qpn(sdev, qp, init->qp_type);
	if (ret)
		goto err_free_rq;

	spin_lock_irq(&qp->state_lock);
	srx_qp_publish_state(qp, IB_QPS_RESET);
	spin_unlock_irq(&qp->state_lock);

	if (udata) {
		srx_wq_layout(&qp->sq, &resp.sq);
		if (!init->srq)		/* else all zeros: no RQ to map */
			srx_wq_layout(&qp->rq, &resp.rq);
		ret = srx_udata_resp(udata, &resp, sizeof(resp), sizeof(resp));
		if (ret)
			goto err_free_qpn;
	}

	init->cap.max_send_wr = qp->sq.entries;
	init->cap.max_recv_wr = qp->rq.entries;
	init->cap.max_send_sge = qp->sq.max_sge;
	init->cap.max_recv_sge = qp->rq.max_sge;
	init->cap.max_inline_data = qp->sq.max_inline;
	return 0;

err_free_qpn:
	/* A packet may have found it meanwhile: wait for its reference. */
	xa_erase_irq(&sdev->qp_xa, ibqp->qp_num);
	srx_qp_put(qp);
	wait_for_completion(&qp->released);
err_free_rq:
	kfree(qp->resp.srq_wqe);
	srx_wq_free(&qp->rq);
err_free_sq:
	srx_wq_free(&qp->sq);
err_count:
	atomic_dec(&sdev->num_qp);
	return ret;
}

/*
 * A kernel QP's completions still in its CQs go at RESET and destroy
 * (cq.c, srx_cq_clean_qp()); libsrx does the same for user CQs at RESET.
 */
static void srx_qp_clean_cqs(struct srx_qp *qp)
{
	struct ib_qp *ibqp = &qp->base_qp;

	if (qp->is_user)
		return;
	if (ibqp->send_cq)
		srx_cq_clean_qp(to_srx_cq(ibqp->send_cq), ibqp);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		srx_cq_clean_qp(to_srx_cq(ibqp->recv_cq), ibqp);
}

/*
 * Destroy: stop, drain, free (../shared/ROCE.md, rxe's record). After the
 * erase no packet finds the QP; dead, set under both engine locks, keeps
 * every path inside the engine from queueing work or arming a timer, so
 * the synchronous shutdowns leave nothing running or pending. Then the
 * initial reference goes and destroy waits for the others: packets still
 * being processed in softirq (recv.c) and skbs in flight, whose
 * destructors drop theirs. Only then are the rings, the responder
 * resources and the requests held for resp_work freed, and a kernel QP's
 * completions left in its CQs forgotten, which would otherwise hand the
 * freed QP to ib_poll_cq(). rmmod cannot overtake an skb destructor: the
 * device's dealloc follows every QP's destroy.
 *
 * Context: process; sleeps.
 */
int srx_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct srx_qp *qp = to_srx_qp(ibqp);
	struct srx_device *sdev = qp->sdev;

	xa_erase_irq(&sdev->qp_xa, ibqp->qp_num);

	spin_lock_bh(&qp->send_lock);
	spin_lock(&qp->resp_lock);
	WRITE_ONCE(qp->dead, true);
	spin_unlock(&qp->resp_lock);
	spin_unlock_bh(&qp->send_lock);
	timer_shutdown_sync(&qp->retrans_timer);
	timer_shutdown_sync(&qp->rnr_timer);
	cancel_work_sync(&qp->send_work);
	cancel_work_sync(&qp->resp_work);

	srx_qp_put(qp);
	wait_for_completion(&qp->released);
	/* Requests held for resp_work (resp.c): none is added once dead. */
	__skb_queue_purge(&qp->resp.held);
	srx_qp_clean_cqs(qp);

	/*
	 * A WQE taken from the SRQ and never completed (the QP was destroyed
	 * mid-message, not through ERR) goes back for the other QPs.
	 */
	if (qp->resp.srq_held)
		srx_srq_requeue(to_srx_srq(ibqp->srq), qp->resp.srq_wqe);
	else
		kfree(qp->resp.srq_wqe);
	kfree(qp->resp.res);
	srx_wq_free(&qp->rq);
	srx_wq_free(&qp->sq);
	mutex_destroy(&qp->state_mutex);
	atomic_dec(&sdev->num_qp);
	return 0;
}

/*
 * Access flags a QP takes: the rights it can grant (device.c,
 * srx_init_accepts()) and remote atomic whether or not it can grant it. The
 * IB CM asks for remote atomic with remote read whenever the connection has
 * responder resources (cm.c, cm_init_qp_init_attr()), for kernel ULPs and
 * librdmacm alike, so refusing it would fail every such rdma_cm connection;
 * a device without atomics takes the flag and does not grant it (query_qp
 * reports what is granted), as siw does. Memory regions, which the CM does
 * not set up, refuse it (mr.c).
 */
static int srx_qp_access_accepted(const struct srx_device *sdev)
{
	return sdev->accepts.qp_access | IB_ACCESS_REMOTE_ATOMIC;
}

/* Range checks of everything ib_modify_qp_is_ok() does not look at. */
static int srx_qp_check_attr(struct srx_qp *qp, const struct ib_qp_attr *attr,
			     int mask)
{
	if (mask & (IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE | IB_QP_RATE_LIMIT))
		return -EOPNOTSUPP;	/* no path migration, no rate limits */
	if (mask & IB_QP_CAP)
		return -EINVAL;
	if ((mask & IB_QP_PORT) && attr->port_num != SRX_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index != 0)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~srx_qp_access_accepted(qp->sdev)))
		return -EINVAL;
	/*
	 * No path MTU above the port's active MTU (srx_active_mtu(), the
	 * netdev MTU at this moment): its packets would not fit the netdev.
	 * rdma_rxe 6.1 checks only against max_mtu 4096 (rxe_qp.c,
	 * rxe_qp_chk_attr()). A netdev MTU lowered later leaves the QP's
	 * path MTU as it is, as on any RoCE device.
	 */
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 ||
	     attr->path_mtu > srx_active_mtu(qp->sdev)))
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > SRX_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > SRX_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > SRX_MAX_QPN)
		return -EINVAL;
	if (mask & IB_QP_AV) {
		const struct rdma_ah_attr *ah = &attr->ah_attr;

		/* RoCE addresses by GID: the GRH is not optional. */
		if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
		    rdma_ah_get_port_num(ah) != SRX_PORT ||
		    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
			return -EINVAL;
	}
	return 0;
}

static void srx_qp_store_attr(struct srx_qp *qp, const struct ib_qp_attr *attr,
			      int mask)
{
	struct ib_qp_attr *a = &qp->attr;

	lockdep_assert_held(&qp->state_mutex);

	if (mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags &
				     qp->sdev->accepts.qp_access;
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_SQ_PSN)
		a->sq_psn = attr->sq_psn & 0xffffff;	/* PSNs are 24 bits */
	if (mask & IB_QP_RQ_PSN)
		a->rq_psn = attr->rq_psn & 0xffffff;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
	if (mask & IB_QP_AV) {
		a->ah_attr = attr->ah_attr;
		/* The core holds the GID attribute and fills it in on query. */
		a->ah_attr.grh.sgid_attr = NULL;
	}
}

/* The local ACK timeout, 4.096 us * 2^timeout ([IBTA] 9.7.6.1.3); 0: none. */
static u32 srx_timeout_jiffies(u8 timeout)
{
	if (!timeout)
		return 0;
	return max_t(unsigned long, 1, nsecs_to_jiffies(4096ULL << timeout));
}

/*
 * Hand the engine what it reads of the attributes, under both of its
 * locks: the address, the path MTU, the retry limits, and the sequence
 * numbers when the QP enters RTR (the responder's) or RTS (the
 * requester's). @res, if not NULL, replaces the responder resources.
 */
static void srx_qp_engine_attr(struct srx_qp *qp, const struct srx_av *av,
			       struct srx_res *res, u32 res_n,
			       enum ib_qp_state cur, enum ib_qp_state next)
{
	const struct ib_qp_attr *a = &qp->attr;
	struct srx_req *req = &qp->req;
	struct srx_resp *resp = &qp->resp;

	lockdep_assert_held(&qp->state_mutex);

	spin_lock_bh(&qp->send_lock);
	spin_lock(&qp->resp_lock);
	if (av)
		qp->av = *av;
	qp->dqpn = a->dest_qp_num;
	/* QP1's is fixed (ib_mad.h); the MAD layer sets the same. */
	qp->qkey = qp->base_qp.qp_type == IB_QPT_GSI ? IB_QP1_QKEY : a->qkey;
	req->retry_cnt = a->retry_cnt;
	req->rnr_retry = a->rnr_retry;
	req->max_rd_atomic = max_t(u8, a->max_rd_atomic, 1);
	resp->access = a->qp_access_flags;
	req->mtu = a->path_mtu ? ib_mtu_enum_to_int(a->path_mtu) : 256;
	resp->mtu = req->mtu;
	req->timeout_jiffies = srx_timeout_jiffies(a->timeout);
	resp->min_rnr_timer = a->min_rnr_timer;
	if (res) {
		swap(resp->res, res);
		resp->res_n = res_n;
		resp->res_head = 0;
		resp->rd_next = 0;
	}
	if (next == IB_QPS_RTR && cur != IB_QPS_RTR) {
		resp->started = true;
		resp->epsn = a->rq_psn;
		resp->msn = 0;
		resp->nak_sent = false;
		resp->cur_op = 0;
		resp->have_rwqe = false;
		resp->drop_msg = false;
		resp->offset = 0;
	}
	/*
	 * Only the first RTS starts the requester at sq_psn: back from SQD
	 * it goes on where it stopped. Starting again there would reuse
	 * PSNs the responder has executed, and it would ACK the new WQEs
	 * as duplicates without executing them.
	 */
	if (next == IB_QPS_RTS && cur == IB_QPS_RTR) {
		memset(req, 0, offsetof(struct srx_req, mtu));
		req->started = true;
		req->psn = a->sq_psn;
		req->psn_max = a->sq_psn;
		req->una = a->sq_psn;
		req->cur = qp->sq.kdone;
		req->retry_left = a->retry_cnt;
		req->rnr_left = a->rnr_retry;
	}
	spin_unlock(&qp->resp_lock);
	spin_unlock_bh(&qp->send_lock);
	kfree(res);	/* the old array, if replaced */
}

/*
 * RESET: both queues dropped, the engine's state with them. A WQE held
 * from an SRQ is not dropped but given back (srx_srq_requeue()), with its
 * entry; @spare, allocated by the caller where it may sleep, becomes the
 * QP's entry then, else it is freed.
 */
static void srx_qp_engine_reset(struct srx_qp *qp, struct srx_srq_wqe *spare)
{
	struct srx_srq_wqe *give = NULL;

	spin_lock_bh(&qp->send_lock);
	del_timer(&qp->retrans_timer);
	del_timer(&qp->rnr_timer);
	srx_wq_discard(qp, &qp->sq);
	memset(&qp->req, 0, offsetof(struct srx_req, mtu));
	spin_unlock_bh(&qp->send_lock);

	spin_lock_bh(&qp->resp_lock);
	if (!qp->base_qp.srq)
		srx_wq_discard(qp, &qp->rq);
	if (qp->resp.srq_held) {
		give = qp->resp.srq_wqe;
		qp->resp.srq_wqe = spare;
		spare = NULL;
		qp->resp.srq_held = false;
	}
	qp->resp.last_wqe_done = false;
	qp->resp.started = false;
	qp->resp.cur_op = 0;
	qp->resp.have_rwqe = false;
	qp->resp.drop_msg = false;
	qp->resp.offset = 0;
	qp->resp.res_head = 0;
	qp->resp.rd_next = 0;
	srx_resp_drop_held(qp);
	if (qp->resp.res)
		memset(qp->resp.res, 0, qp->resp.res_n * sizeof(*qp->resp.res));
	spin_unlock_bh(&qp->resp_lock);

	if (give)
		srx_srq_requeue(to_srx_srq(qp->base_qp.srq), give);
	kfree(spare);
}

int srx_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata)
{
	struct srx_qp *qp = to_srx_qp(ibqp);
	struct srx_srq_wqe *spare = NULL;
	enum ib_qp_state cur, next;
	struct srx_res *res = NULL;
	struct srx_av av, *avp = NULL;
	u32 res_n = 0;
	unsigned long flags;
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;

	mutex_lock(&qp->state_mutex);
	/*
	 * The transition is checked from the state the QP is really in.
	 * IB_QP_CUR_STATE is the caller's belief about it (IBTA 1.4 section
	 * 11.2.5.2): a wrong belief fails, and is never used in place of the
	 * real state. Linux 6.1's core passes it on unchecked, so a QP in
	 * RESET told {RTS, CUR_STATE=RTS} would otherwise pass as RTS -> RTS
	 * and reach RTS without an address, a destination QPN or PSNs.
	 * ib_modify_qp_is_ok() then checks the required and optional masks of
	 * that transition, CUR_STATE included (optional only from RTR, RTS,
	 * SQD and SQE).
	 */
	cur = READ_ONCE(qp->state);
	if ((mask & IB_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		ret = -EINVAL;
		goto out;
	}
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;

	if (next > IB_QPS_ERR ||
	    !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		ret = -EINVAL;
		goto out;
	}
	ret = srx_qp_check_attr(qp, attr, mask);
	if (ret)
		goto out;
	/*
	 * The engine's copy of the address, made while the core's GID
	 * attribute is at hand (srx_qp_store_attr() keeps no pointer to it).
	 */
	if ((mask & IB_QP_AV) && (ibqp->qp_type == IB_QPT_RC ||
				  ibqp->qp_type == IB_QPT_UC)) {
		ret = srx_av_init(&av, &attr->ah_attr, ibqp->qp_num,
				  (mask & IB_QP_DEST_QPN) ? attr->dest_qp_num :
							    qp->attr.dest_qp_num);
		if (ret) {
			ret = -EINVAL;
			goto out;
		}
		avp = &av;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		/*
		 * A power of two: res_head and rd_next are free-running u32s
		 * and index the ring modulo res_n, which only stays continuous
		 * across their wrap when res_n divides 2^32.
		 */
		res_n = roundup_pow_of_two(max_t(u32,
						 attr->max_dest_rd_atomic, 1));
		res = kcalloc(res_n, sizeof(*res), GFP_KERNEL);
		if (!res) {
			ret = -ENOMEM;
			goto out;
		}
	}

	/*
	 * The engine may have moved the QP to the error state since cur
	 * was read; a transition checked from the old state is refused
	 * rather than let it leave the error state unflushed.
	 */
	if (mask & IB_QP_STATE) {
		spin_lock_irqsave(&qp->state_lock, flags);
		if (qp->state != cur)
			ret = -EINVAL;
		spin_unlock_irqrestore(&qp->state_lock, flags);
		if (ret) {
			kfree(res);
			goto out;
		}
	}
	/*
	 * RESET gives a WQE held from the SRQ back with its entry, so the
	 * QP needs another: allocated here, where failing changes nothing.
	 */
	if (next == IB_QPS_RESET && ibqp->srq) {
		spare = kzalloc(srx_srq_wqe_size(to_srx_srq(ibqp->srq)),
				GFP_KERNEL_ACCOUNT);
		if (!spare) {
			kfree(res);
			ret = -ENOMEM;
			goto out;
		}
	}

	srx_qp_store_attr(qp, attr, mask);
	srx_qp_engine_attr(qp, avp, res, res_n, cur, next);

	if (mask & IB_QP_STATE) {
		spin_lock_irq(&qp->state_lock);
		/* The engine's error won; RESET, valid from ERR, still goes. */
		if (next != IB_QPS_ERR && next != IB_QPS_RESET &&
		    qp->state == IB_QPS_ERR && cur != IB_QPS_ERR)
			next = IB_QPS_ERR;
		srx_qp_publish_state(qp, next);
		spin_unlock_irq(&qp->state_lock);

		if (next == IB_QPS_RESET) {
			srx_qp_engine_reset(qp, spare);
			spare = NULL;
			srx_qp_clean_cqs(qp);
		} else if (next == IB_QPS_ERR) {
			srx_qp_flush(qp, true);
			/*
			 * LAST_WQE_REACHED, from send_work: not under
			 * state_mutex, which a handler's modify would take.
			 */
			if (ibqp->srq)
				srx_qp_kick(qp);
		} else if (next == IB_QPS_RTS && cur == IB_QPS_SQD) {
			/* Posts made in SQD wait for this: nobody rang. */
			srx_qp_kick(qp);
		}
	}
out:
	mutex_unlock(&qp->state_mutex);
	kfree(spare);		/* not needed: no transition to RESET */
	return ret;
}

int srx_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init)
{
	struct srx_qp *qp = to_srx_qp(ibqp);

	mutex_lock(&qp->state_mutex);
	*attr = qp->attr;
	attr->qp_state = READ_ONCE(qp->state);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->sq_draining = 0;
	attr->cap.max_send_wr = qp->sq.entries;
	attr->cap.max_recv_wr = qp->rq.entries;
	attr->cap.max_send_sge = qp->sq.max_sge;
	attr->cap.max_recv_sge = qp->rq.max_sge;
	attr->cap.max_inline_data = qp->sq.max_inline;
	/*
	 * A connected QP's PSNs move with its traffic: report where the engine
	 * is, the next PSN to send and the next expected, as rxe does
	 * (rxe_qp_to_attr()), so that `rdma resource show qp` and
	 * ibv_query_qp() tell a stalled connection from a moving one; in
	 * ERR too, where they say how far it got, until RESET. An engine
	 * that never started (ERR from INIT, say) has only the values
	 * modify_qp set. state_mutex keeps modify_qp, which sets them, out.
	 */
	if (ibqp->qp_type == IB_QPT_RC || ibqp->qp_type == IB_QPT_UC) {
		spin_lock_bh(&qp->send_lock);
		if (qp->req.started)
			attr->sq_psn = qp->req.psn;
		spin_unlock_bh(&qp->send_lock);
		spin_lock_bh(&qp->resp_lock);
		if (qp->resp.started)
			attr->rq_psn = qp->resp.epsn;
		spin_unlock_bh(&qp->resp_lock);
	}
	mutex_unlock(&qp->state_mutex);

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->sq_sig_type = qp->sq_sig_type;
	init->cap = attr->cap;
	return 0;
}

/*
 * After a producer published new WQEs: if the QP is in the error state,
 * they must complete as flushed. The barrier is the poster's half of the
 * doorbell contract (srx-abi.h): producer index before the state load.
 */
static void srx_qp_flush_if_error(struct srx_qp *qp, bool may_sleep)
{
	smp_mb();
	if (READ_ONCE(qp->state) == IB_QPS_ERR)
		srx_qp_flush(qp, may_sleep);
}

/*
 * The doorbell of a user QP: its WQEs are already in the ring. It is a
 * write() POST_SEND without work requests (the core passes a NULL list);
 * one that carries work requests is not srx's interface, and dropping them
 * with success would lose them silently.
 *
 * Context: process (the write() system call); may sleep.
 */
static int srx_qp_doorbell(struct srx_qp *qp, const void *wr)
{
	bool more;

	if (wr)
		return -EINVAL;
	srx_count(qp->sdev, SRX_CNT_DOORBELLS, 1);
	srx_qp_flush_if_error(qp, true);
	/*
	 * Run the requester here for a few packets: a ping-pong's message
	 * leaves within the system call that posted it. The rest is
	 * send_work's, so a long message does not hold the caller.
	 */
	spin_lock_bh(&qp->send_lock);
	more = srx_req_run(qp, SRX_DOORBELL_BUDGET);
	if (more)
		srx_qp_kick(qp);
	spin_unlock_bh(&qp->send_lock);
	return 0;
}

static void srx_copy_sges(struct srx_sge *dst, const struct ib_sge *src,
			  int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
}

/*
 * Write @wr into @wq's slot @idx as a process writes a receive, for the
 * take to copy and check like any other. Context: the queue's lock held.
 */
void srx_wq_write_recv(struct srx_wq *wq, u32 idx,
		       const struct ib_recv_wr *wr)
{
	struct srx_recv_wqe *wqe = srx_wq_slot(wq, idx);

	lockdep_assert_held(&wq->lock);
	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	srx_copy_sges((struct srx_sge *)(wqe + 1), wr->sg_list, wr->num_sge);
}

static int srx_post_one_send(struct srx_qp *qp, const struct ib_send_wr *wr)
{
	struct srx_wq *wq = &qp->sq;
	struct srx_send_wqe *wqe;
	struct srx_mr *mr;
	u64 len = 0;
	u32 i;

	lockdep_assert_held(&wq->lock);

	/*
	 * An opcode the device does not report: EINVAL (ibv_post_send(3)).
	 * ATOMIC WRITE is reported for libsrx's wr_atomic_write(), which
	 * gives the value; 6.12's ib_send_wr has no field of its own for it,
	 * and no kernel user posts it. BIND_MW is for processes' windows.
	 */
	if (wr->num_sge > wq->max_sge ||
	    !srx_send_opcode_ok(qp->sdev, qp->base_qp.qp_type, wr->opcode) ||
	    wr->opcode == SRX_WR_ATOMIC_WRITE || wr->opcode == IB_WR_BIND_MW)
		return -EINVAL;
	/*
	 * Inline data is the payload of an outgoing message: SEND and RDMA
	 * WRITE carry one; an RDMA READ or an atomic has none to give, so
	 * IB_SEND_INLINE on them is EINVAL (ibv_post_send(3): "valid only for
	 * Send and RDMA Write"), for kernel posters as for libsrx; the take
	 * refuses it by the same rule (wqe.h).
	 */
	if ((wr->send_flags & IB_SEND_INLINE) &&
	    !srx_wqe_opcode_has_payload(wr->opcode))
		return -EINVAL;
	/* A slot is free once its WQE completed (its entry is then free). */
	if (!srx_ring_room(wq->kprod, wq->kdone, wq->entries))
		return -ENOMEM;

	wqe = srx_wq_slot(wq, wq->kprod);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	if (wr->opcode == IB_WR_SEND_WITH_INV ||
	    wr->opcode == IB_WR_LOCAL_INV)
		wqe->ex = wr->ex.invalidate_rkey;
	else
		wqe->ex = (__force u32)wr->ex.imm_data;

	switch (qp->base_qp.qp_type) {
	case IB_QPT_UD:
	case IB_QPT_GSI:
		/* The AH by value, as the take copies a user AH's (take.c). */
		if (!ud_wr(wr)->ah)
			return -EINVAL;
		wq->avs[wq->kprod & (wq->entries - 1)] =
			to_srx_ah(ud_wr(wr)->ah)->av;
		wqe->wr.ud.remote_qpn = ud_wr(wr)->remote_qpn;
		wqe->wr.ud.remote_qkey = ud_wr(wr)->remote_qkey;
		break;
	default:
		if (wr->opcode == IB_WR_REG_MR) {
			/*
			 * The MR by its key's index (srx_mr_reg_fast()
			 * looks it up when the WQE executes): the key must
			 * be the MR's own, with a new key byte at most.
			 */
			mr = to_srx_mr(reg_wr(wr)->mr);
			if (!mr->fr || wr->num_sge ||
			    srx_mr_key_index(reg_wr(wr)->key) != mr->index)
				return -EINVAL;
			wqe->wr.reg.key = reg_wr(wr)->key;
			wqe->wr.reg.access = reg_wr(wr)->access;
		} else if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
			   wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
			wqe->wr.atomic.remote_addr = atomic_wr(wr)->remote_addr;
			wqe->wr.atomic.compare_add = atomic_wr(wr)->compare_add;
			wqe->wr.atomic.swap = atomic_wr(wr)->swap;
			wqe->wr.atomic.rkey = atomic_wr(wr)->rkey;
		} else if (wr->opcode != IB_WR_SEND &&
			   wr->opcode != IB_WR_SEND_WITH_IMM &&
			   wr->opcode != IB_WR_SEND_WITH_INV &&
			   wr->opcode != IB_WR_LOCAL_INV) {
			wqe->wr.rdma.remote_addr = rdma_wr(wr)->remote_addr;
			wqe->wr.rdma.rkey = rdma_wr(wr)->rkey;
		}
	}

	if (wr->send_flags & IB_SEND_INLINE) {
		u8 *dst = (u8 *)(wqe + 1);

		/* 64 bits: 32 lengths of up to 4 GiB cannot wrap past the check. */
		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > wq->max_inline)
			return -EINVAL;
		/* Kernel SGEs carry kernel virtual addresses (virt DMA). */
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		wqe->inline_len = len;
	} else {
		srx_copy_sges((struct srx_sge *)(wqe + 1), wr->sg_list,
			      wr->num_sge);
		wqe->num_sge = wr->num_sge;
	}

	wq->kprod++;
	return 0;
}

/*
 * After a kernel poster published WQEs: a QP in error completes them as
 * flushed, before the post returns where the context allows the engine's
 * locks (bottom halves may be disabled, interrupts must not be: a kernel
 * consumer may post from its completion handler, with interrupts off, or
 * from a CQ event handler inside the engine); otherwise send_work does it
 * soon after. The barrier is the poster's half of the doorbell contract
 * (srx-abi.h): producer index before the state load.
 * Return: true if the QP is in error (flushed or queued to be).
 */
static bool srx_kernel_post_flush(struct srx_qp *qp)
{
	smp_mb();
	if (READ_ONCE(qp->state) != IB_QPS_ERR)
		return false;
	if (!irqs_disabled() && !in_hardirq())
		srx_qp_flush(qp, false);
	else
		srx_qp_kick(qp);
	return true;
}

int srx_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr)
{
	struct srx_qp *qp = to_srx_qp(ibqp);
	unsigned long flags;
	int ret = 0;

	if (qp->is_user) {
		ret = srx_qp_doorbell(qp, wr);
		if (ret)
			*bad_wr = wr;
		return ret;
	}

	if (READ_ONCE(qp->state) < IB_QPS_RTS &&
	    READ_ONCE(qp->state) != IB_QPS_ERR) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&qp->sq.lock, flags);
	for (; wr; wr = wr->next) {
		ret = srx_post_one_send(qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	smp_store_release(&qp->sq.ctrl->prod, qp->sq.kprod);
	spin_unlock_irqrestore(&qp->sq.lock, flags);

	/* The requester runs in send_work; an error flush here if it can. */
	if (!srx_kernel_post_flush(qp))
		srx_qp_kick(qp);
	return ret;
}

int srx_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr)
{
	struct srx_qp *qp = to_srx_qp(ibqp);
	struct srx_wq *wq = &qp->rq;
	unsigned long flags;
	int ret = 0;

	/* Receives of a QP on an SRQ are posted to the SRQ (ib_post_srq_recv). */
	if (ibqp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}

	/* Unreachable today (write() POST_RECV is not in uverbs_cmd_mask). */
	if (qp->is_user) {
		ret = srx_qp_doorbell(qp, wr);
		if (ret)
			*bad_wr = wr;
		return ret;
	}

	if (READ_ONCE(qp->state) == IB_QPS_RESET) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&wq->lock, flags);
	for (; wr; wr = wr->next) {
		if (wr->num_sge > wq->max_sge)
			ret = -EINVAL;
		else if (!srx_ring_room(wq->kprod, wq->kdone, wq->entries))
			ret = -ENOMEM;
		if (ret) {
			*bad_wr = wr;
			break;
		}
		srx_wq_write_recv(wq, wq->kprod++, wr);
	}
	smp_store_release(&wq->ctrl->prod, wq->kprod);
	spin_unlock_irqrestore(&wq->lock, flags);

	/* The responder takes receive WQEs when it needs one. */
	srx_kernel_post_flush(qp);
	return ret;
}
