// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues: the objects, the kernel poster, and the take
 * through which every attached QP's responder gets a receive WQE.
 *
 * An SRQ's WQEs complete out of order, on the recv CQs of several QPs, so
 * the RQ's rule for a free slot (U5: its CQE polled) cannot apply. A slot
 * is free once the kernel has taken its WQE instead (srx-abi.h, K7/U7):
 * the take copies it, once and validated (wqe.h, srx_rwqe_copy()), into
 * the taking QP's own entry (struct srx_resp, srq_wqe), which holds it
 * until it completes on that QP's recv CQ (qp.c, srx_recv_complete()). A
 * QP takes only when a message needs a WQE, so it holds at most one.
 *
 * A QP that is reset or destroyed while holding one gives it back
 * (srx_srq_requeue()): the next take hands it out before the ring's. A QP
 * entering the error state completes only its own held WQE as flushed; the
 * SRQ's other WQEs stay for the other QPs (qp.c, srx_qp_flush()).
 *
 * Contexts: create/modify/query/destroy in process context; the take in
 * the receive softirq or resp_work, under the taking QP's resp_lock;
 * kernel post_srq_recv in any context, interrupts off included. The
 * SRQ_LIMIT_REACHED event is raised from event_work, never inside the
 * take: its handler must not run under a QP's resp_lock.
 */
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "device.h"
#include "qp.h"
#include "ring.h"
#include "srq.h"
#include "ucontext.h"

/*
 * The SRQ's lock is initialized where every work queue's is
 * (srx_wq_ring_alloc()); a class of its own lets lockdep tell it from the
 * QPs' queue locks, which it never nests with but which share that site.
 */
static struct lock_class_key srx_srq_lock_key;

/* Raise the SRQ_LIMIT_REACHED events the take counted. Context: srx_wq. */
static void srx_srq_event_work(struct work_struct *w)
{
	struct srx_srq *srq = container_of(w, struct srx_srq, event_work);
	struct ib_srq *ibsrq = &srq->base_srq;
	struct ib_event ev = {
		.device = ibsrq->device,
		.element.srq = ibsrq,
		.event = IB_EVENT_SRQ_LIMIT_REACHED,
	};
	unsigned long flags;
	u32 n;

	spin_lock_irqsave(&srq->wq.lock, flags);
	n = srq->events_due;
	srq->events_due = 0;
	spin_unlock_irqrestore(&srq->wq.lock, flags);

	srx_count(srq->sdev, SRX_CNT_SRQ_LIMIT_EVENTS, n);
	while (n-- && ibsrq->event_handler)
		ibsrq->event_handler(&ev, ibsrq->srq_context);
}

int srx_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibsrq->device);
	struct srx_srq *srq = to_srx_srq(ibsrq);
	struct srx_ucontext *uctx = rdma_udata_to_drv_context(udata,
			struct srx_ucontext, base_ucontext);
	struct ib_ucontext *ibuctx = uctx ? &uctx->base_ucontext : NULL;
	struct srx_create_srq_resp resp = {};
	int ret;

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;	/* no XRC, no tag matching */
	if (!init->attr.max_wr || init->attr.max_wr > SRX_MAX_SRQ_WR ||
	    init->attr.max_sge > SRX_MAX_SGE)
		return -EINVAL;
	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	if (atomic_inc_return(&sdev->num_srq) > srx_device_max_srq()) {
		ret = -ENOMEM;
		goto err_count;
	}

	srq->sdev = sdev;
	srq->is_user = !!udata;
	INIT_LIST_HEAD(&srq->requeue);
	INIT_WORK(&srq->event_work, srx_srq_event_work);

	ret = srx_wq_ring_alloc(&srq->wq, ibuctx, init->attr.max_wr,
				init->attr.max_sge, 0, false);
	if (ret)
		goto err_count;
	lockdep_set_class(&srq->wq.lock, &srx_srq_lock_key);
	/* What srx_rwqe_copy() checks a WQE against (wqe.h). */
	srq->wq.lim.max_sge = srq->wq.max_sge;
	srq->wq.lim.max_msg = SRX_MAX_MSG_SIZE;

	if (udata) {
		srx_wq_layout(&srq->wq, &resp.ring);
		ret = srx_udata_resp(udata, &resp, sizeof(resp), sizeof(resp));
		if (ret)
			goto err_free_ring;
	}

	/* ibv_create_srq(3): srq_limit is ignored; the granted sizes back. */
	init->attr.max_wr = srq->wq.entries;
	init->attr.max_sge = srq->wq.max_sge;
	return 0;

err_free_ring:
	srx_wq_ring_free(&srq->wq);
err_count:
	atomic_dec(&sdev->num_srq);
	return ret;
}

/*
 * LIMIT arms SRQ_LIMIT_REACHED for when fewer WQEs than the limit are left
 * (ibv_modify_srq(3)); 0 disarms. MAX_WR would resize, which srx does not
 * announce (no IB_DEVICE_SRQ_RESIZE): EOPNOTSUPP, as for unknown bits.
 */
int srx_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct srx_srq *srq = to_srx_srq(ibsrq);
	unsigned long flags;
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;
	if (mask & ~IB_SRQ_LIMIT)
		return -EOPNOTSUPP;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	/* rxe refuses a limit above the queue's size too (rxe_srq.c). */
	if (attr->srq_limit > srq->wq.entries)
		return -EINVAL;

	spin_lock_irqsave(&srq->wq.lock, flags);
	srq->limit = attr->srq_limit;
	spin_unlock_irqrestore(&srq->wq.lock, flags);
	return 0;
}

/* srq_limit reads 0 once the event has fired (rxe_verbs.c does the same). */
int srx_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct srx_srq *srq = to_srx_srq(ibsrq);
	unsigned long flags;

	attr->max_wr = srq->wq.entries;
	attr->max_sge = srq->wq.max_sge;
	spin_lock_irqsave(&srq->wq.lock, flags);
	attr->srq_limit = srq->limit;
	spin_unlock_irqrestore(&srq->wq.lock, flags);
	return 0;
}

/*
 * The core refuses to destroy an SRQ while a QP is attached (usecnt,
 * ib_destroy_srq_user(): EBUSY), and a QP's destroy returns only once no
 * packet of it is being processed: nothing takes from the SRQ any more,
 * and nothing queues event_work.
 *
 * Context: process; sleeps.
 */
int srx_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct srx_srq *srq = to_srx_srq(ibsrq);
	struct srx_srq_wqe *w, *tmp;

	cancel_work_sync(&srq->event_work);
	list_for_each_entry_safe(w, tmp, &srq->requeue, node) {
		list_del(&w->node);
		kfree(w);
	}
	srx_wq_ring_free(&srq->wq);
	atomic_dec(&srq->sdev->num_srq);
	return 0;
}

/*
 * A kernel consumer's receives, written into the ring as a process's
 * would be. A slot is free once the take has passed it (K7), so the room
 * is counted from kcons. A user SRQ has no system call on its post path
 * (write() POST_SRQ_RECV is not in uverbs_cmd_mask), so this never runs
 * for one.
 *
 * Context: any, interrupts off included.
 */
int srx_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr)
{
	struct srx_srq *srq = to_srx_srq(ibsrq);
	struct srx_wq *wq = &srq->wq;
	unsigned long flags;
	int ret = 0;

	if (srq->is_user) {
		*bad_wr = wr;
		return -EINVAL;
	}

	spin_lock_irqsave(&wq->lock, flags);
	for (; wr; wr = wr->next) {
		if (wr->num_sge > wq->max_sge)
			ret = -EINVAL;
		else if (!srx_ring_room(wq->kprod, wq->kcons, wq->entries))
			ret = -ENOMEM;
		if (ret) {
			*bad_wr = wr;
			break;
		}
		srx_wq_write_recv(wq, wq->kprod++, wr);
	}
	smp_store_release(&wq->ctrl->prod, wq->kprod);
	spin_unlock_irqrestore(&wq->lock, flags);
	return ret;
}

/**
 * srx_srq_take - take one receive WQE from an SRQ into a QP's entry
 * @srq: the SRQ
 * @dst: the taking QP's entry, srx_rwqe_stride(@srq->wq.max_sge) bytes
 *
 * A WQE given back by a reset or destroyed QP goes first. Otherwise the
 * producer index is read once (K4: acquire, or kprod for a kernel SRQ) and
 * bounded: a process that claims more than the ring holds, or less than
 * was taken, takes nothing and is counted. The slot is copied and
 * validated once (srx_rwqe_copy()); cons and done are published (K7).
 *
 * The limit: once fewer WQEs than an armed limit are left, the limit is
 * disarmed and one SRQ_LIMIT_REACHED event is queued, for event_work to
 * raise outside the caller's locks. Once per arm: modify_srq arms again.
 *
 * This lives here rather than in take.c: what it owns (the requeue list,
 * the limit) is the SRQ's; the copy is wqe.h's, as for every take.
 *
 * Context: any; the taking QP's resp_lock held. Takes @srq->wq.lock.
 * Return: true if @dst now holds a WQE (possibly an invalid one).
 */
bool srx_srq_take(struct srx_srq *srq, struct srx_rwqe *dst)
{
	struct srx_wq *wq = &srq->wq;
	struct srx_srq_wqe *w;
	bool taken = false, fire = false;
	unsigned long flags;
	u32 prod;
	u8 result = SRX_WQE_OK;

	spin_lock_irqsave(&wq->lock, flags);
	w = list_first_entry_or_null(&srq->requeue, struct srx_srq_wqe, node);
	if (w) {
		list_del(&w->node);
		srq->nrequeue--;
		memcpy(dst, &w->e, srx_rwqe_stride(wq->max_sge));
		kfree(w);
		taken = true;
		prod = srq->is_user ? smp_load_acquire(&wq->ctrl->prod) :
				      wq->kprod;	/* K4 */
		if (!srx_ring_index_ok(prod, wq->kcons, wq->entries))
			prod = wq->kcons;	/* counted by the next take */
	} else {
		prod = srq->is_user ? smp_load_acquire(&wq->ctrl->prod) :
				      wq->kprod;	/* K4 */
		if (!srx_ring_index_ok(prod, wq->kcons, wq->entries)) {
			srx_count(srq->sdev, SRX_CNT_BAD_USER_INDEX, 1);
			goto out;
		}
		if (prod == wq->kcons)
			goto out;
		result = srx_rwqe_copy(dst, srx_wq_slot(wq, wq->kcons),
				       &wq->lim);
		wq->kcons++;
		wq->kdone = wq->kcons;
		smp_store_release(&wq->ctrl->cons, wq->kcons);	/* K7 */
		smp_store_release(&wq->ctrl->done, wq->kdone);
		taken = true;
	}
	if (srq->limit && (prod - wq->kcons) + srq->nrequeue < srq->limit) {
		srq->limit = 0;
		srq->events_due++;
		fire = true;
	}
out:
	spin_unlock_irqrestore(&wq->lock, flags);

	if (result != SRX_WQE_OK)
		srx_count(srq->sdev, SRX_CNT_INVALID_WQES, 1);
	if (fire)
		queue_work(srx_wq, &srq->event_work);
	return taken;
}

/**
 * srx_srq_requeue - give back a WQE a QP took and will never complete
 * @srq: the SRQ it came from
 * @w: the QP's entry holding it; the SRQ's from now on
 *
 * A QP reset or destroyed in the middle of a message (never through the
 * error state, whose flush completes the WQE) would otherwise lose it:
 * its completion would never exist. The next take hands it out first.
 *
 * Context: any; takes @srq->wq.lock.
 */
void srx_srq_requeue(struct srx_srq *srq, struct srx_srq_wqe *w)
{
	unsigned long flags;

	spin_lock_irqsave(&srq->wq.lock, flags);
	list_add(&w->node, &srq->requeue);
	srq->nrequeue++;
	spin_unlock_irqrestore(&srq->wq.lock, flags);
}
