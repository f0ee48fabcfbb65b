// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Taking WQEs from a work queue's ring into kernel-private entries.
 *
 * Every WQE the kernel acts on is copied once, from its ring slot into the
 * slot's private entry (struct srx_swqe or srx_rwqe, wqe.h), and the copy
 * is validated; from then on nothing reads the slot again. The copy and
 * validation are pure code in wqe.h, tested on the host; this file owns
 * the entries' memory and the indices.
 *
 * Who writes an entry: the take, under the work queue's lock, when it takes
 * the slot's WQE; then nobody (but the send engine's own part, struct
 * srx_swqe_engine, under the QP's send lock) until the WQE completes, when
 * kdone passes it. The take never fills a slot whose WQE has not completed
 * (srx_ring_takeable() bounds it by kdone), whatever the process publishes
 * as its producer index, so an entry in use is never rewritten under its
 * reader.
 *
 * Callers: the flush (qp.c), which takes what it completes; next, the send
 * engine (requester) and the responder. The take does not look at the QP
 * state: its caller decides whether WQEs may be taken now.
 */
#include <linux/build_bug.h>
#include <linux/overflow.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>

#include "ah.h"
#include "device.h"
#include "qp.h"
#include "ring.h"
#include "take.h"

/* wqe.h's constants are the kernel's (and libibverbs') own values. */
static_assert(SRX_SEND_FENCE == IB_SEND_FENCE);
static_assert(SRX_SEND_SIGNALED == IB_SEND_SIGNALED);
static_assert(SRX_SEND_SOLICITED == IB_SEND_SOLICITED);
static_assert(SRX_SEND_INLINE == IB_SEND_INLINE);
static_assert(SRX_WC_SUCCESS == IB_WC_SUCCESS);
static_assert(SRX_WC_LOC_LEN_ERR == IB_WC_LOC_LEN_ERR);
static_assert(SRX_WC_LOC_QP_OP_ERR == IB_WC_LOC_QP_OP_ERR);

/*
 * The private entries are charged like the rings (ucontext.c,
 * SRX_RING_GFP): to the creating process's memory cgroup, failing with
 * ENOMEM rather than invoking the OOM killer, and without a log line. They
 * are zeroed so that nothing of the kernel's earlier contents is ever read
 * through an entry, though the take writes every field it hands on. They
 * come from vmalloc, page by page, as the rings do: kvmalloc() would first
 * try kmalloc(), which rounds a large array up to a power of two of pages
 * (a QP of 4096 x 32 SGEs each way was charged 8 MiB for 4.4 MiB of
 * entries).
 */
#define SRX_TAKE_GFP (GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | \
		      __GFP_NOWARN | __GFP_ZERO)

/**
 * srx_wq_take_init - set up what the take needs for one work queue
 * @wq: a work queue whose ring is allocated (entries, max_sge, max_inline)
 * @sdev: the device, whose features decide the accepted opcodes
 * @type: the QP's type
 * @send: send queue (else receive queue)
 *
 * Context: process; sleeps.
 * Return: 0 or -ENOMEM.
 */
int srx_wq_take_init(struct srx_wq *wq, const struct srx_device *sdev,
		     enum ib_qp_type type, bool send)
{
	struct srx_wqe_limits *lim = &wq->lim;

	memset(lim, 0, sizeof(*lim));
	lim->max_sge = wq->max_sge;
	lim->max_inline = wq->max_inline;
	lim->max_msg = SRX_MAX_MSG_SIZE;
	if (send) {
		lim->datagram = type == IB_QPT_UD || type == IB_QPT_GSI;
		/* The mask srx_send_opcode_ok() tests, as the device has it. */
		if (type < ARRAY_SIZE(sdev->accepts.send_ops))
			lim->send_ops = sdev->accepts.send_ops[type];
		wq->priv_stride = srx_swqe_stride(wq->max_sge, wq->max_inline);
	} else {
		wq->priv_stride = srx_rwqe_stride(wq->max_sge);
	}

	wq->priv = __vmalloc(array_size(wq->entries, wq->priv_stride),
			     SRX_TAKE_GFP);
	if (!wq->priv)
		return -ENOMEM;
	if (send && lim->datagram) {
		wq->avs = __vmalloc(array_size(wq->entries, sizeof(*wq->avs)),
				    SRX_TAKE_GFP);
		if (!wq->avs)
			goto err_free_priv;
	}
	return 0;

err_free_priv:
	vfree(wq->priv);
	wq->priv = NULL;
	return -ENOMEM;
}

void srx_wq_take_fini(struct srx_wq *wq)
{
	vfree(wq->avs);
	wq->avs = NULL;
	vfree(wq->priv);
	wq->priv = NULL;
}

/*
 * A user UD WQE names its AH by number: copy the vector now, as the rest
 * of the WQE is copied (the AH may be destroyed while the WQE waits). A
 * kernel post has written the slot's vector already.
 */
static u8 srx_sq_take_av(struct srx_qp *qp, struct srx_wq *wq, u32 idx)
{
	struct srx_swqe *e = srx_sq_entry(wq, idx);

	if (e->result != SRX_WQE_OK || !qp->is_user)
		return e->result;
	if (srx_ah_lookup(qp->sdev, e->wr.ud.ah, qp->base_qp.pd,
			  &wq->avs[idx & (wq->entries - 1)]))
		return SRX_WQE_OK;
	e->result = SRX_WQE_BAD_AH;
	e->num_sge = 0;
	e->inline_len = 0;
	e->length = 0;
	return e->result;
}

/*
 * Take up to @budget WQEs: read the producer index once (K4), bound it by
 * what the ring can honestly hold (a dishonest index takes nothing and is
 * counted), copy and validate each WQE into its slot's private entry, and
 * publish cons (K4: taken, not free). Invalid WQEs are taken like the
 * others (their entries say why) and counted.
 */
static u32 srx_wq_take(struct srx_qp *qp, struct srx_wq *wq, bool send,
		       u32 budget)
{
	u32 prod, n, i, invalid = 0;

	lockdep_assert_held(&wq->lock);

	prod = srx_wq_prod(qp, wq);
	if (!srx_ring_take_ok(prod, wq->kcons, wq->kdone, wq->entries)) {
		srx_count(qp->sdev, SRX_CNT_BAD_USER_INDEX, 1);
		return 0;
	}
	n = min(prod - wq->kcons, budget);	/* srx_ring_takeable() */
	if (!n)
		return 0;

	for (i = 0; i < n; i++) {
		u32 idx = wq->kcons + i;
		u8 result;

		if (send) {
			result = srx_swqe_copy(srx_sq_entry(wq, idx),
					       srx_wq_slot(wq, idx), &wq->lim);
			if (wq->avs)
				result = srx_sq_take_av(qp, wq, idx);
		} else
			result = srx_rwqe_copy(srx_rq_entry(wq, idx),
					       srx_wq_slot(wq, idx), &wq->lim);
		invalid += result != SRX_WQE_OK;
	}
	wq->kcons += n;
	smp_store_release(&wq->ctrl->cons, wq->kcons);	/* K4 */

	if (invalid)
		srx_count(qp->sdev, SRX_CNT_INVALID_WQES, invalid);
	return n;
}

/**
 * srx_sq_take - take send WQEs into their private entries
 * @qp: the QP
 * @budget: at most this many
 *
 * Context: any; qp->sq.lock held.
 * Return: WQEs taken; srx_sq_entry() from the old kcons on holds them.
 */
u32 srx_sq_take(struct srx_qp *qp, u32 budget)
{
	return srx_wq_take(qp, &qp->sq, true, budget);
}

/**
 * srx_rq_take - take receive WQEs into their private entries
 * @qp: the QP
 * @budget: at most this many
 *
 * Context: any; qp->rq.lock held.
 * Return: WQEs taken; srx_rq_entry() from the old kcons on holds them.
 */
u32 srx_rq_take(struct srx_qp *qp, u32 budget)
{
	return srx_wq_take(qp, &qp->rq, false, budget);
}
