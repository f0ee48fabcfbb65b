/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_QP_H
#define SRX_QP_H

#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include <rdma/srx-abi.h>

#include "engine.h"
#include "net.h"
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
	/*
	 * Datagram send queues: the address vector of each slot's WQE
	 * [entries]. Written with the WQE, by the take (a user AH looked up,
	 * srx_ah_lookup()) or by a kernel post (from its ib_ah), under lock;
	 * read by the requester until the WQE completes, as the entry.
	 */
	struct srx_av *avs;
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
	struct srx_wq rq;	/* none (no ring, entries 0) on an SRQ */

	/*
	 * Lifetime. One reference for the QP's existence, dropped by
	 * destroy; one per lookup from the receive path (recv.c) for the
	 * length of a packet's processing; one per skb the engine sent, held
	 * until its destructor runs. The put that drops the last completes
	 * released, which destroy waits for before it frees anything.
	 */
	refcount_t ref;
	struct completion released;

	/*
	 * The send direction: send_lock (bottom halves off) protects req,
	 * the engine's part of the send entries, the SQ's kdone (with
	 * sq.lock), av and dead; the timers and send_work run under it.
	 * The receive direction: resp_lock protects resp, the RQ's kdone
	 * (with rq.lock), and dead too. dead is set under both, so a holder
	 * of either sees it: nothing queues work or arms a timer after.
	 */
	spinlock_t send_lock;
	spinlock_t resp_lock;
	bool dead;
	struct srx_av av;		/* both locks to write, either to read */
	u32 dqpn;			/* the peer's QPN, as av */
	u32 qkey;			/* UD/GSI: the QP's Q_Key, as av */
	struct srx_req req;
	struct srx_resp resp;
	struct work_struct send_work;
	struct work_struct resp_work;
	struct timer_list retrans_timer;
	struct timer_list rnr_timer;
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
extern struct workqueue_struct *srx_wq;
struct srx_qp *srx_qp_get(struct srx_device *sdev, u32 qpn);
void srx_qp_put(struct srx_qp *qp);
void srx_qp_kick(struct srx_qp *qp);
void srx_qp_set_error(struct srx_qp *qp);
void srx_wq_complete(struct srx_qp *qp, bool send,
		     const struct srx_cqe *cqe);
u8 srx_wr_to_wc_opcode(u8 wr_opcode);
void srx_qp_flush(struct srx_qp *qp, bool may_sleep);
void srx_recv_complete(struct srx_qp *qp, const struct srx_cqe *cqe);
void srx_qp_last_wqe(struct srx_qp *qp);
void srx_wq_write_recv(struct srx_wq *wq, u32 idx,
		       const struct ib_recv_wr *wr);
int srx_wq_ring_alloc(struct srx_wq *wq, struct ib_ucontext *uctx,
		      u32 want_wr, u32 want_sge, u32 want_inline, bool send);
void srx_wq_ring_free(struct srx_wq *wq);
void srx_wq_layout(const struct srx_wq *wq, struct srx_wq_layout *l);

/* req.c */
void srx_send_work(struct work_struct *w);
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
