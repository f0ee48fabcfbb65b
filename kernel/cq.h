/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_CQ_H
#define SRX_CQ_H

#include <linux/irq_work.h>
#include <linux/mutex.h>
#include <linux/smp.h>
#include <linux/spinlock.h>
#include <rdma/ib_verbs.h>

#include <rdma/srx-abi.h>

/* Bits of srx_cq.kick_flags. */
#define SRX_CQ_KICK_QUEUED 0
#define SRX_CQ_ERROR_DUE 1	/* the CQ_ERR event waits for a delivery */

struct srx_device;
struct srx_mmap_entry;


/*
 * One CQ ring: a vmalloc region (srx_ring_mem_alloc()) holding struct
 * srx_cq_ctrl and the CQE array. For a user CQ the region belongs to its
 * mmap entry, which frees it once the CQ has dropped the entry and no
 * mmap() is in progress; the pages themselves live on until the process
 * unmaps them.
 */
struct srx_cq_ring {
	void *mem;
	size_t size;
	struct srx_cq_ctrl *ctrl;
	struct srx_cqe *cqes;
	u32 entries;			/* power of two */
	struct srx_mmap_entry *mmap;	/* user CQs: owner of mem */
	u64 mmap_offset;
	struct ib_qp **kqp;		/* kernel CQs: the QP of each slot */
};

struct srx_cq {
	struct ib_cq base_cq;
	struct srx_device *sdev;
	bool is_user;
	bool ignore_overrun;

	/*
	 * lock protects ring (the pointer and every kernel-written word in
	 * it), prod, kcons, fired, arm_seq, dropped, error and the state of
	 * a resize's move. Taken with interrupts off: kernel
	 * consumers poll and post from softirq.
	 */
	spinlock_t lock;
	struct srx_cq_ring *ring;
	u32 prod;		/* the kernel's own producer index */
	u32 kcons;		/* kernel CQs: consumer index of ib_poll_cq */
	u32 fired;		/* arm sequence last fired on */
	u32 arm_seq;		/* kernel CQs: last arm sequence used */
	u32 dropped;		/* completions lost to overrun, saturating */
	bool error;		/* overrun without IGNORE_OVERRUN */
	/*
	 * While a resize commit moves CQEs (srx_cq_switch_ring()): old is
	 * the ring they come from (NULL otherwise), [move_next, move_end)
	 * the indices still to move, and seal_cons the consumer index the
	 * seal caught, which user consumers cannot move meanwhile.
	 */
	struct srx_cq_ring *old;
	u32 move_next;
	u32 move_end;
	u32 seal_cons;

	/* resize_mutex serializes resizes and protects prepared. */
	struct mutex resize_mutex;
	struct srx_cq_ring *prepared;

	/*
	 * Completion events run in interrupt context like a hardware CQ's
	 * (srx_cq_kick()), and never inside the call that produced the
	 * completion. A kernel CQ's run on comp_cpu: from csd when that is
	 * another CPU, from local_work (a self-interrupt) when it is this
	 * one. A user CQ's always run from local_work, on this CPU.
	 * events_pending counts fires not yet handed to comp_handler;
	 * kick_flags holds SRX_CQ_KICK_QUEUED while one of the two is queued,
	 * and SRX_CQ_ERROR_DUE from an overrun until the delivery that
	 * raises its CQ_ERR event;
	 * kicks counts events raised and not yet delivered, each a hold on
	 * the CQ, so that destroy can wait for the last of them.
	 */
	int comp_cpu;
	atomic_t events_pending;
	unsigned long kick_flags;
	atomic_t kicks;
	call_single_data_t csd;
	struct irq_work local_work;
};

static inline struct srx_cq *to_srx_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct srx_cq, base_cq);
}

/* cq.c */
int srx_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata);
int srx_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int srx_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int srx_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
void srx_cq_clean_qp(struct srx_cq *cq, struct ib_qp *qp);
int srx_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
/*
 * Where a work queue records the completions of its WQEs (K5 of
 * srx-abi.h): srx_cq_post() writes each one's CQ index into cqe_idx and
 * then done, before it publishes the CQEs, so a consumer that has polled
 * a completion finds its work request's slot completed (U5).
 */
struct srx_cq_wq_done {
	u32 *cqe_idx;		/* the work queue's array */
	u32 mask;		/* its entries - 1 */
	u32 first;		/* the WQE number of the first completion */
	u32 *done;		/* its done word */
};

int srx_cq_post(struct srx_cq *cq, const struct srx_cqe *cqes,
		unsigned int n, struct ib_qp *qp,
		const struct srx_cq_wq_done *wd);
u32 srx_cq_last_idx(struct srx_cq *cq);

#endif /* SRX_CQ_H */
