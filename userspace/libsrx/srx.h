/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_PROVIDER_H
#define SRX_PROVIDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cq_ring.h"
#include "srx-abi.h"
#include "verbs-private.h"

struct srx_device {
	struct verbs_device ibv_dev;
};

struct srx_context {
	struct verbs_context ibv_ctx;
	uint32_t max_cqe;
	/*
	 * Send opcodes each QP type takes: bit IBV_WR_* of [enum ibv_qp_type],
	 * derived from the attributes the device reports (srx.c).
	 */
	uint64_t send_ops[IBV_QPT_UD + 1];
	/* membarrier(2) registered: thread-safe CQs may be biased (cq.c) */
	bool membarrier_ok;
	/* how CQEs become ibv_wc on this CPU: enum srx_wc_conv (cqe_wc.h) */
	uint32_t wc_conv;
};

static inline struct srx_context *to_sctx(struct ibv_context *ibctx)
{
	return VERBS_PRIV_CONTAINER(ibctx, struct srx_context, ibv_ctx.context);
}

/* One mapping of a CQ ring. */
struct srx_cq_ring {
	void *base;
	size_t len;
	struct srx_cq_view view;
	struct srx_cq_ring *retired_next;	/* see srx_cq.retired */
};

/*
 * A CQ. Pollers never lock it: they read ring (an atomic pointer), consume
 * with srx_cq_take() (or, single-threaded or biased, with plain loads and
 * one release store), and arm by writing the ring's arm word.
 *
 * A resize replaces ring while other threads may still be inside a poll on
 * the old one. The kernel seals the old ring first, so nothing more is
 * taken from it; afterwards its mapping is swapped for anonymous memory
 * that still reads as a sealed ring, instead of being unmapped, so a late
 * poller neither faults nor takes anything. Those placeholders and their
 * srx_cq_ring structures stay on the retired list until no thread holds
 * them (cq.c, "Retired rings"), at the latest until the CQ is destroyed,
 * when no poller may be running (verbs forbids it).
 *
 * Layout: the words every poll or arm reads come first and are written
 * rarely (at creation, once by the bias's owner or its revoker, by a
 * resize). Each word some thread writes on every poll or arm (owner_busy,
 * arm_seq, poll_owner) starts a cache line of its own, so that writing it
 * does not take the first group's lines from the other pollers' caches.
 * selftests/host/cq_layout_test.c checks it.
 */
#define SRX_CACHE_LINE 64

/*
 * RDMA ATOMIC WRITE: bit 40 of device_cap_flags_ex where the device has it
 * (IB_UVERBS_DEVICE_ATOMIC_WRITE of the kernel's uAPI since 6.2; rdma-core
 * 44 names no flag for it), and the 8 bytes it writes.
 */
#define SRX_DEVICE_ATOMIC_WRITE (1ull << 40)
#define SRX_ATOMIC_WRITE_BYTES 8

struct srx_cq {
	struct verbs_cq vcq;
	_Atomic(struct srx_cq_ring *) ring;
	bool single_threaded;
	/*
	 * Set at creation where membarrier() is refused: pollers then fence
	 * when they hold a ring for the resizer (cq.c, "Retired rings").
	 */
	bool hazard_fence;

	/* Single-threaded consumers only: the consumer index. */
	uint32_t cons;

	/*
	 * A copy of the current ring's view, for the polls that only one
	 * thread can be making (SINGLE_THREADED, the bias owner): one load
	 * fewer than through ring. Written at creation and by resize, which
	 * a SINGLE_THREADED CQ's one thread or the owner runs itself, or
	 * which another thread runs only after revoking the bias, when no
	 * poll reads this any more.
	 */
	struct srx_cq_view own_view;

	/*
	 * Biased polling of a thread-safe CQ (cq.c, "Biased polling").
	 * bias_owner: the thread pointer of the thread that owns the CQ, set
	 * once by the first poller, or NULL. owner_busy, owner_acked: written
	 * by the owner only, around and after its polls (and owner_acked by
	 * its thread-exit hook). bias_revoked: set by the first other
	 * consumer or the owner's exit; bias_off: set once no biased poll can
	 * be running any more. Both are set from the start on a
	 * SINGLE_THREADED CQ and where membarrier() is refused. Never cleared:
	 * a revoked CQ stays revoked. owner_tid: the owner's thread id, stored
	 * by the owner right after it became one (0 until then), so that a
	 * revoker can tell an owner blocked in a system call.
	 */
	_Atomic(void *) bias_owner;
	_Atomic pid_t owner_tid;
	_Atomic bool bias_revoked;
	_Atomic bool bias_off;
	_Alignas(SRX_CACHE_LINE) _Atomic bool owner_busy;
	_Atomic bool owner_acked;

	/* Last arm sequence handed out (fetch-add when multi-threaded). */
	_Alignas(SRX_CACHE_LINE) _Atomic uint32_t arm_seq;

	/*
	 * cq_ex polling. ibv_cq_ex returns each completion in fields of the
	 * CQ object itself (wr_id, status, the read_* functions), so one
	 * start_poll..end_poll sequence at a time owns them: poll_owner is
	 * taken with one atomic exchange and released by end_poll. CQEs are
	 * still claimed one by one with srx_cq_take(), so ibv_poll_cq() on
	 * other threads runs concurrently and lock-free. Single-threaded CQs
	 * skip poll_owner and read the CQE in place.
	 */
	_Alignas(SRX_CACHE_LINE) _Atomic uint32_t poll_owner;
	struct srx_cqe cur_copy;
	const struct srx_cqe *cur;
	uint32_t ex_cons;		/* single-threaded: index during a poll */
	bool ex_open;			/* single-threaded: start_poll..end_poll */

	/* Resizes: control path, may sleep. */
	_Alignas(SRX_CACHE_LINE) pthread_mutex_t resize_mutex;
	/*
	 * Resizes and cleans begun, each counted after resizing is set and
	 * before the word is sealed, so that a waiter can tell their seals
	 * from one the process wrote itself (srx_cq_wait_resize()). Read
	 * once per wait, not spun on: it can share the mutex's line.
	 */
	_Atomic uint32_t seal_gen;
	/*
	 * A line of its own: pollers that found their ring sealed spin on it
	 * (srx_cq_wait_resize()) while the resizer writes the mutex above.
	 * selftests/host/cq_resize_test.c also puts it at the start of a page.
	 */
	_Alignas(SRX_CACHE_LINE) _Atomic bool resizing;
	struct srx_cq_ring *retired;	/* under resize_mutex */

	/*
	 * This CQ in its owner's list of owned CQs, for the owner's
	 * thread-exit hook; under srx_threads_lock (cq.c).
	 */
	struct srx_cq *owned_next;
	struct srx_cq **owned_pprev;
};

static inline struct srx_cq *to_scq(struct ibv_cq *ibcq)
{
	return VERBS_PRIV_CONTAINER(ibcq, struct srx_cq, vcq.cq);
}

/*
 * One mapped work queue ring. A slot is the work request's from post until
 * its completion has been polled from cq (srx-abi.h, U5): free, under lock,
 * moves forward only when the queue looks full, over the slots below done
 * whose cqe_idx the CQ's consumers have passed.
 */
struct srx_wq {
	pthread_spinlock_t lock;	/* posters of this queue */
	void *base;
	size_t len;
	uint32_t *prod;			/* ours to write */
	uint32_t *cons;			/* kernel-written */
	uint32_t *state;		/* kernel-written */
	uint32_t *done;			/* kernel-written */
	uint32_t *engine;		/* kernel-written (K6) */
	uint32_t *cqe_idx;		/* kernel-written, [entries] */
	char *wqes;
	uint32_t entries;
	uint32_t wqe_size;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t head;			/* our producer index, under lock */
	uint32_t free;			/* slots below are free, under lock */
	struct srx_cq *cq;		/* where this queue completes */
};

struct srx_qp {
	struct verbs_qp vqp;
	struct srx_wq sq;
	struct srx_wq rq;		/* not mapped (base NULL) on an SRQ */
	/*
	 * The ibv_wr_* batch (wr.c), from ibv_wr_start() to its complete or
	 * abort, which hold sq.lock: the head it started at, the WQE the
	 * last builder started (NULL if none or it failed), its first errno.
	 */
	uint32_t wr_start;
	struct srx_send_wqe *wr_cur;
	int wr_err;
};

static inline struct srx_qp *to_sqp(struct ibv_qp *ibqp)
{
	return VERBS_PRIV_CONTAINER(ibqp, struct srx_qp, vqp.qp);
}

/*
 * A shared receive queue (srq.c): a work queue ring without a CQ. Its
 * slots are free once the kernel's cons has passed them (srx-abi.h, U7):
 * head is the producer index, under wq.lock; free, done, cqe_idx, state
 * and engine are not used.
 */
struct srx_srq {
	struct verbs_srq vsrq;
	struct srx_wq wq;
};

static inline struct srx_srq *to_ssrq(struct ibv_srq *ibsrq)
{
	return VERBS_PRIV_CONTAINER(ibsrq, struct srx_srq, vsrq.srq);
}

/* An address handle: its number in the kernel's table (ah.c). */
struct srx_ah {
	struct ibv_ah ibv_ah;
	uint32_t ah_num;
};

static inline struct srx_ah *to_sah(struct ibv_ah *ibah)
{
	return VERBS_PRIV_CONTAINER(ibah, struct srx_ah, ibv_ah);
}

static inline void *srx_wq_slot(struct srx_wq *wq, uint32_t idx)
{
	return wq->wqes + (size_t)(idx & (wq->entries - 1)) * wq->wqe_size;
}

/* ah.c */
struct ibv_ah *srx_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int srx_destroy_ah(struct ibv_ah *ibah);

/* cq.c */
struct ibv_cq *srx_create_cq(struct ibv_context *ctx, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *srx_create_cq_ex(struct ibv_context *ctx,
				   struct ibv_cq_init_attr_ex *attr);
int srx_destroy_cq(struct ibv_cq *ibcq);
int srx_resize_cq(struct ibv_cq *ibcq, int cqe);
int srx_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc);
int srx_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
void srx_cq_clean_qp(struct srx_cq *cq, uint32_t qpn);

/* qp.c */
struct ibv_qp *srx_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int srx_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr);
int srx_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask);
int srx_destroy_qp(struct ibv_qp *ibqp);
int srx_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
int srx_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
struct ibv_qp *srx_create_qp_ex(struct ibv_context *ctx,
				struct ibv_qp_init_attr_ex *attr);
bool srx_wq_full(struct srx_wq *wq);
int srx_wq_map(struct srx_wq *wq, struct ibv_context *ctx,
	       const struct srx_wq_layout *l, size_t hdr);
void srx_wq_unmap(struct srx_wq *wq);
bool srx_sq_publish(struct srx_qp *qp, uint32_t start);
int srx_ring_doorbell(struct srx_qp *qp, struct srx_wq *wq, uint32_t start,
		      uint32_t end, uint32_t *taken);
void srx_copy_sges(struct srx_sge *dst, const struct ibv_sge *src, int num_sge);
void srx_write_recv(struct srx_wq *wq, const struct ibv_recv_wr *wr);
bool srx_inline_ok(enum ibv_wr_opcode op);

/*
 * A BIND_MW WQE's body, for srx.ko's srx_mw_bind() (kernel/mw.c): the
 * window by its key, its new key, the MR by its lkey (none for a type 1
 * unbind, whose length is 0). IBV_ACCESS_* are the kernel's IB_ACCESS_*.
 */
static inline void srx_set_bind(struct srx_send_wqe *wqe,
				const struct ibv_mw *mw, uint32_t rkey,
				const struct ibv_mw_bind_info *bi)
{
	wqe->wr.bind.mw_rkey = mw->rkey;
	wqe->wr.bind.rkey = rkey;
	wqe->wr.bind.mr_lkey = bi->mr ? bi->mr->lkey : 0;
	wqe->wr.bind.addr = bi->addr;
	wqe->wr.bind.length = bi->length;
	wqe->wr.bind.access = bi->mw_access_flags;
}

/* srq.c */
struct ibv_srq *srx_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr);
int srx_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int attr_mask);
int srx_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int srx_destroy_srq(struct ibv_srq *ibsrq);
int srx_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);

/* wr.c */
bool srx_wr_ops_ok(const struct srx_context *ctx, enum ibv_qp_type type,
		   uint64_t flags);
void srx_wr_init(struct srx_qp *qp, uint64_t flags);

#endif /* SRX_PROVIDER_H */
