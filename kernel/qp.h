/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_QP_H
#define SRX_QP_H

#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include <rdma/srx-abi.h>

#include "wqe.h"

struct srx_device;
struct srx_mmap_entry;

/*
 * A work queue: one ring of fixed-stride WQEs, and one kernel-private entry
 * per slot (take.c). For a user QP, userspace produces into the mapped ring
 * and the kernel consumes; for a kernel QP both ends are in
 * srx_post_send()/srx_post_recv() and the kernel.
 *
 * kdone <= kcons <= kdone + entries: the WQEs in [kdone, kcons) are taken
 * and not completed, and their slots' private entries are theirs; the take
 * never fills a slot whose WQE is still there (srx_ring_takeable()).
 */
struct srx_wq {
	/*
	 * lock protects kcons, kdone, kprod, the private entries' take-owned
	 * fields and the kernel-written ring words. A flush holds it for one
	 * batch (SRX_FLUSH_BATCH WQEs) at a time and reads the QP state under
	 * it (qp.c, srx_wq_flush_batch()).
	 */
	spinlock_t lock;
	u32 kcons;			/* WQEs the kernel has taken */
	u32 kdone;			/* WQEs the kernel has completed */
	u32 kprod;			/* kernel QPs: WQEs posted */

	void *mem;			/* srx_ring_mem_alloc(); see srx_cq_ring */
	size_t size;
	struct srx_wq_ctrl *ctrl;
	void *wqes;
	u32 *cqe_idx;			/* [entries], after the WQEs (K5) */
	u32 entries;			/* power of two */
	u32 wqe_size;			/* stride, power of two */
	u32 max_sge;
	u32 max_inline;
	struct srx_mmap_entry *mmap;	/* user QPs: owner of mem */
	u64 mmap_offset;

	/* take.c: struct srx_swqe or srx_rwqe [entries], fixed at create */
	void *priv;
	u32 priv_stride;
	struct srx_wqe_limits lim;
};

struct srx_qp {
	struct ib_qp base_qp;
	struct srx_device *sdev;
	bool is_user;

	/*
	 * state_mutex serializes modify, query and destroy and protects attr.
	 * state_lock protects state, which the post paths also read (without
	 * the lock, READ_ONCE) and an overrun may change from any context.
	 */
	struct mutex state_mutex;
	spinlock_t state_lock;
	enum ib_qp_state state;
	struct ib_qp_attr attr;		/* attributes as last set */
	enum ib_sig_type sq_sig_type;

	struct srx_wq sq;
	struct srx_wq rq;
};

static inline struct srx_qp *to_srx_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct srx_qp, base_qp);
}

/* The ring slot of WQE number @idx (a free-running index). */
static inline void *srx_wq_slot(struct srx_wq *wq, u32 idx)
{
	return wq->wqes + (size_t)(idx & (wq->entries - 1)) * wq->wqe_size;
}

/*
 * The producer index: the kernel's own, or the one userspace published,
 * read with acquire ordering (K4) so that the WQEs below it are complete.
 */
static inline u32 srx_wq_prod(struct srx_qp *qp, struct srx_wq *wq)
{
	lockdep_assert_held(&wq->lock);

	if (!qp->is_user)
		return wq->kprod;
	return smp_load_acquire(&wq->ctrl->prod);	/* K4 */
}

/* qp.c */
int srx_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		  struct ib_udata *udata);
int srx_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		  struct ib_udata *udata);
int srx_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		 struct ib_qp_init_attr *init);
int srx_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int srx_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		  const struct ib_send_wr **bad_wr);
int srx_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		  const struct ib_recv_wr **bad_wr);

#endif /* SRX_QP_H */
