/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_SRQ_H
#define SRX_SRQ_H

#include <linux/list.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "qp.h"
#include "wqe.h"

struct srx_device;

/*
 * A receive WQE taken from an SRQ and not completed: the one a QP holds
 * (struct srx_resp, srq_wqe), or one given back to the SRQ by a QP that
 * was reset or destroyed while holding it (srx_srq.requeue). The entry is
 * srx_rwqe_stride() of the SRQ's max_sge bytes.
 */
struct srx_srq_wqe {
	struct list_head node;		/* in srx_srq.requeue */
	struct srx_rwqe e;		/* must be last: sge[] follows */
};

/*
 * A shared receive queue: a ring like a receive queue's (srx-abi.h, K7/U7)
 * that every QP attached to it takes from, one WQE at a time and only when
 * a message needs one (srx_srq_take()).
 *
 * wq.lock (irqsave: a kernel post_srq_recv may run with interrupts off) is
 * the consumer lock of every attached QP, and also serializes kernel
 * posters (kprod), the limit and the requeue list. It nests inside a QP's
 * resp_lock and is never held while a WQE completes (a CQ's lock).
 * wq.kdone always equals wq.kcons: a slot is free once taken.
 */
struct srx_srq {
	struct ib_srq base_srq;
	struct srx_device *sdev;
	bool is_user;
	struct srx_wq wq;		/* ring only: priv is NULL */
	u32 limit;			/* armed srq_limit, 0: disarmed; wq.lock */
	struct list_head requeue;	/* struct srx_srq_wqe; wq.lock */
	u32 nrequeue;			/* entries on requeue; wq.lock */
	/*
	 * SRQ_LIMIT_REACHED events due: counted under wq.lock by the take
	 * that crossed the limit, raised by event_work in process context,
	 * never under a QP's resp_lock. Destroy cancels it: no QP is
	 * attached by then (the core refuses with EBUSY), so none is queued
	 * afterwards.
	 */
	u32 events_due;			/* wq.lock */
	struct work_struct event_work;
};

static inline struct srx_srq *to_srx_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct srx_srq, base_srq);
}

/* Bytes of a struct srx_srq_wqe holding one of @srq's WQEs. */
static inline size_t srx_srq_wqe_size(const struct srx_srq *srq)
{
	return offsetof(struct srx_srq_wqe, e) +
	       srx_rwqe_stride(srq->wq.max_sge);
}

/* srq.c */
int srx_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		   struct ib_udata *udata);
int srx_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		   enum ib_srq_attr_mask mask, struct ib_udata *udata);
int srx_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int srx_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int srx_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		      const struct ib_recv_wr **bad_wr);
bool srx_srq_take(struct srx_srq *srq, struct srx_rwqe *dst);
void srx_srq_requeue(struct srx_srq *srq, struct srx_srq_wqe *w);

#endif /* SRX_SRQ_H */
