// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues.
 *
 * A CQ is one ring (ring.h, srx-abi.h): the kernel produces CQEs into it and
 * a consumer takes them. For a user CQ the consumer is libsrx, polling the
 * mapped ring without system calls; for a kernel CQ it is ib_poll_cq().
 *
 * Who touches a CQ, and how:
 *  - producers (QP flush today, the transport later) call srx_cq_post() in
 *    process or softirq context; it takes cq->lock;
 *  - kernel consumers call srx_poll_cq()/srx_req_notify_cq(), under cq->lock;
 *  - userspace writes the consumer word and the arm word of the mapped ring
 *    at any time; the kernel reads each once per use and trusts neither;
 *  - resize runs in process context under resize_mutex. Its commit switches
 *    producers to the new ring at once, under cq->lock, then moves the
 *    pending CQEs over a batch at a time (srx_cq_switch_ring()), so no
 *    resize keeps interrupts off or the CPU busy for long, whatever the
 *    ring size;
 *  - completion events of a kernel CQ run on comp_cpu from a csd, or from
 *    an irq_work when that is the current CPU; those of a user CQ run from
 *    the irq_work on the CPU that made the completion (srx_cq_kick()).
 *
 * Why a post never races destroy, and what destroy waits for:
 *  - srx_cq_post() is called by a QP, for that QP's send or receive CQ:
 *    its flush (qp.c) and its transport engine (comp.c, resp.c, through
 *    srx_wq_complete()). The RDMA core holds the CQ's
 *    usecnt for every QP that uses it, from the QP's creation until its
 *    destroy_qp has returned, and refuses to destroy a CQ whose usecnt is
 *    raised (EBUSY, before srx is called).
 *  - A flush runs inside a verb on its QP (modify_qp, a doorbell, a kernel
 *    post_send/post_recv), so it has returned before that QP's destroy_qp
 *    begins: uverbs holds a user QP's object for the length of a command
 *    and destroys it only when no command holds it; a kernel consumer that
 *    called a verb on a QP while destroying it would use the QP itself
 *    after it is freed, whatever the CQ did.
 *  So every srx_cq_post() on a CQ has returned before destroy_cq begins,
 *  and what it uses after dropping cq->lock (the CQ, and cq->sdev, which
 *  outlives its CQs) is there. What outlives the post is the event it
 *  queued (srx_cq_kick() runs comp_handler, or the CQ_ERR event handler,
 *  later, from an interrupt): each holds
 *  cq->kicks until it is delivered, and destroy waits for the last of them
 *  and for irq_work to let go of local_work before freeing anything.
 *  The transport engine posts from softirq and from its work items; a
 *  QP's destroy stops its timers and works and waits for its softirq users
 *  (its reference count, qp.c) before it returns, which keeps this so.
 */
#include <linux/cpumask.h>
#include <linux/irq_work.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait_bit.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "cq.h"
#include "cq_publish.h"
#include "device.h"
#include "ring.h"
#include "ucontext.h"

static struct srx_cq_ring *srx_cq_ring_alloc(struct ib_ucontext *uctx,
					     u32 entries)
{
	struct srx_cq_ring *ring;
	size_t size;

	size = PAGE_ALIGN(sizeof(struct srx_cq_ctrl) +
			  (size_t)entries * sizeof(struct srx_cqe));

	ring = kzalloc(sizeof(*ring), GFP_KERNEL_ACCOUNT);
	if (!ring)
		goto err;

	ring->mem = srx_ring_mem_alloc(uctx, size, &ring->mmap,
				       &ring->mmap_offset);
	if (IS_ERR(ring->mem))
		goto err_free_ring;
	ring->size = size;
	ring->entries = entries;
	ring->ctrl = ring->mem;
	ring->cqes = ring->mem + sizeof(struct srx_cq_ctrl);

	if (!uctx) {
		ring->kqp = kvcalloc(entries, sizeof(*ring->kqp), GFP_KERNEL);
		if (!ring->kqp)
			goto err_free_mem;
	}
	return ring;

err_free_mem:
	srx_ring_mem_free(ring->mem, ring->mmap);
err_free_ring:
	kfree(ring);
err:
	return NULL;
}

static void srx_cq_ring_free(struct srx_cq_ring *ring)
{
	kvfree(ring->kqp);	/* NULL for a user CQ */
	srx_ring_mem_free(ring->mem, ring->mmap);
	kfree(ring);
}

/*
 * CQEs a resize moves per hold of cq->lock (32 KiB): a bounded time with
 * interrupts off, then a resched point.
 */
#define SRX_CQ_MOVE_BATCH 1024

static void srx_cq_layout(const struct srx_cq_ring *ring,
			  struct srx_cq_layout *l)
{
	l->mmap_offset = ring->mmap_offset;
	l->mmap_length = ring->size;
	l->entries = ring->entries;
	l->cqe_size = sizeof(struct srx_cqe);
	l->prod_offset = offsetof(struct srx_cq_ctrl, prod);
	l->fired_offset = offsetof(struct srx_cq_ctrl, fired);
	l->status_offset = offsetof(struct srx_cq_ctrl, status);
	l->dropped_offset = offsetof(struct srx_cq_ctrl, dropped);
	l->cons_offset = offsetof(struct srx_cq_ctrl, cons);
	l->arm_offset = offsetof(struct srx_cq_ctrl, arm);
	l->cqe_offset = sizeof(struct srx_cq_ctrl);
	l->comp_mask = 0;
	memset(l->reserved, 0, sizeof(l->reserved));
}

/* The consumer index; K2 of srx-abi.h. The seal half is ignored. */
static u32 srx_cq_read_cons(const struct srx_cq_ring *ring)
{
	return lower_32_bits(smp_load_acquire(&ring->ctrl->cons));
}

/*
 * The consumer index a producer respects. A kernel CQ's is the kernel's
 * own. A user CQ's is the ring's consumer word, except while a resize
 * moves CQEs: the old ring is sealed then and the new one not yet handed
 * to the process, so no consumer can move, and the index is the one the
 * seal caught.
 */
static u32 srx_cq_cons(const struct srx_cq *cq)
{
	lockdep_assert_held(&cq->lock);

	if (!cq->is_user)
		return cq->kcons;
	if (cq->old)
		return cq->seal_cons;
	return srx_cq_read_cons(cq->ring);
}

/* The status word, from the kernel's own state (never read back). */
static u32 srx_cq_status(const struct srx_cq *cq)
{
	return cq->error ? SRX_CQ_STATUS_ERROR : 0;
}

/*
 * True while index @idx is one a resize has still to move: its CQE is
 * then in the old ring, not yet in the current one.
 */
static bool srx_cq_unmoved(const struct srx_cq *cq, u32 idx)
{
	lockdep_assert_held(&cq->lock);

	return cq->old && idx - cq->move_next < cq->move_end - cq->move_next;
}

/* Release one hold on the CQ taken by srx_cq_post() for an event. */
static void srx_cq_kick_done(struct srx_cq *cq)
{
	if (atomic_dec_and_test(&cq->kicks))
		wake_up_var(&cq->kicks);
}

static void srx_cq_raise_error(struct srx_cq *cq)
{
	struct ib_cq *ibcq = &cq->base_cq;
	struct ib_event ev = {
		.device = ibcq->device,
		.element.cq = ibcq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (ibcq->event_handler)
		ibcq->event_handler(&ev, ibcq->cq_context);
}

/*
 * Runs in hard interrupt context, from csd or local_work (srx_cq_kick()
 * says on which CPU). Both are free for reuse when this runs, so clearing
 * SRX_CQ_KICK_QUEUED first lets the next fire queue again; the barrier
 * pairs with srx_cq_kick(): either that kick sees the bit clear and queues
 * another delivery, or this one sees its events_pending increment.
 */
static void srx_cq_deliver(struct srx_cq *cq)
{
	clear_bit(SRX_CQ_KICK_QUEUED, &cq->kick_flags);
	smp_mb__after_atomic();

	if (test_and_clear_bit(SRX_CQ_ERROR_DUE, &cq->kick_flags))
		srx_cq_raise_error(cq);

	while (atomic_add_unless(&cq->events_pending, -1, 0))
		cq->base_cq.comp_handler(&cq->base_cq, cq->base_cq.cq_context);

	srx_cq_kick_done(cq);
}

static void srx_cq_csd_fn(void *info)
{
	srx_cq_deliver(info);
}

static void srx_cq_local_work_fn(struct irq_work *work)
{
	srx_cq_deliver(container_of(work, struct srx_cq, local_work));
}

/*
 * Hand one completion event (@comp_event) to comp_handler, or the CQ_ERR
 * event marked SRX_CQ_ERROR_DUE to event_handler, always later, from an
 * interrupt: the caller may hold a work queue's lock (a flush) or
 * state_mutex, which a handler that posts would otherwise meet.
 *
 * A kernel CQ's handler runs on comp_cpu, as the interrupt of a hardware
 * CQ's vector would: its consumer (ib_cq's softirq or work item) processes
 * the completions on the CPU the handler runs on, and comp_vector is how a
 * ULP spreads that work. smp_call_function_single_async() would run the
 * handler in place on comp_cpu itself (6.1's generic_exec_single()), so
 * that case raises a self-interrupt with irq_work instead, which runs once
 * the caller enables interrupts again (irq_work_queue_on() is not
 * exported).
 *
 * A user CQ's handler is uverbs' ib_uverbs_comp_handler(): it queues an
 * event on the completion channel and wakes the reader, wherever that
 * sleeps. Sending it to comp_cpu first would add an inter-processor
 * interrupt whenever the producer runs elsewhere and move no work at all,
 * so it runs on this CPU, from the same self-interrupt.
 *
 * SRX_CQ_KICK_QUEUED lets one caller at a time queue a delivery, as the
 * csd requires; a kick that finds it queued leaves its event to the
 * delivery on its way. Consumes the hold srx_cq_post() took.
 */
static void srx_cq_kick(struct srx_cq *cq, bool comp_event)
{
	int cpu;

	if (comp_event)
		atomic_inc(&cq->events_pending);
	smp_mb__before_atomic();
	if (test_and_set_bit(SRX_CQ_KICK_QUEUED, &cq->kick_flags)) {
		srx_cq_kick_done(cq);
		return;
	}
	/*
	 * With preemption off this CPU stays, and comp_cpu cannot go offline
	 * between the check and the call (CPU removal stops every CPU). An
	 * offline comp_cpu hands its events to this one.
	 */
	preempt_disable();
	cpu = cq->comp_cpu;
	if (cq->is_user || cpu == smp_processor_id() || !cpu_online(cpu) ||
	    smp_call_function_single_async(cpu, &cq->csd)) {
		/* Not pending: the bit kept every other kick out. */
		if (!irq_work_queue(&cq->local_work))
			srx_cq_kick_done(cq);
	}
	preempt_enable();
}

/**
 * srx_cq_post - publish completions
 * @cq: the CQ
 * @cqes: @n completions, already in ring format
 * @n: how many
 * @qp: the QP they belong to (kept for ib_poll_cq of kernel CQs)
 * @wd: if not NULL, the work queue of the @n completions: each one's CQ
 *	index goes to its cqe_idx word (one that was dropped gets the index
 *	of the last completion written before it), then done moves past them
 *	(K5), all before the CQEs are published: a consumer that polled a
 *	completion finds its slot completed, and frees it (U5) once the
 *	consumer index has passed that index. Publishing done after the CQEs
 *	left a window in which an application that had polled a completion
 *	got ENOMEM from its next post (perftest's ib_write_bw at tx depth =
 *	max_send_wr, once posting made no system call).
 *
 * Context: any; takes cq->lock with interrupts off.
 * Return: 0, or -EOVERFLOW when some were dropped because the ring was full
 * or the CQ is in error; the caller then moves its QP to the error state.
 */
int srx_cq_post(struct srx_cq *cq, const struct srx_cqe *cqes,
		unsigned int n, struct ib_qp *qp,
		const struct srx_cq_wq_done *wd)
{
	struct srx_cq_ring *ring;
	bool raise_error = false, fire = false;
	bool solicited = false, failed = false;
	unsigned long flags;
	u32 room, posted, lost, i;

	spin_lock_irqsave(&cq->lock, flags);
	ring = cq->ring;

	if (cq->error) {
		posted = 0;
	} else {
		room = srx_ring_room(cq->prod, srx_cq_cons(cq), ring->entries);
		posted = min_t(u32, n, room);
	}
	lost = n - posted;

	for (i = 0; i < posted; i++) {
		u32 slot = (cq->prod + i) & (ring->entries - 1);

		ring->cqes[slot] = cqes[i];
		if (ring->kqp)
			ring->kqp[slot] = qp;
		solicited |= cqes[i].flags & SRX_CQE_SOLICITED;
		failed |= cqes[i].status != IB_WC_SUCCESS;
	}

	if (wd) {
		for (i = 0; i < n; i++)
			WRITE_ONCE(wd->cqe_idx[(wd->first + i) & wd->mask],
				   cq->prod + min(i, posted) - (i >= posted));
		smp_store_release(wd->done, wd->first + n);	/* K5 */
	}

	if (posted) {
		cq->prod += posted;
		/*
		 * While a resize moves CQEs the new ring's prod is published
		 * once they are all there (srx_cq_move_batch()); until then no
		 * consumer looks at that ring.
		 */
		fire = srx_cq_publish(ring->ctrl, cq->prod, !cq->old,
				      &cq->fired, solicited, failed);
	}

	if (lost) {
		cq->dropped = cq->dropped + lost < cq->dropped ?
			      U32_MAX : cq->dropped + lost;
		WRITE_ONCE(ring->ctrl->dropped, cq->dropped);
		if (!cq->ignore_overrun && !cq->error) {
			cq->error = true;
			WRITE_ONCE(ring->ctrl->status, srx_cq_status(cq));
			raise_error = true;
		}
	}
	/*
	 * The events are delivered after this post has returned: hold the
	 * CQ until then (srx_cq_kick() hands each hold on). Destroy waits
	 * for every hold; see the top of this file. The CQ_ERR event goes
	 * the same way: the caller holds its queue's locks with interrupts
	 * off, and a consumer's event handler must not run under them.
	 */
	if (fire)
		atomic_inc(&cq->kicks);
	if (raise_error) {
		atomic_inc(&cq->kicks);
		set_bit(SRX_CQ_ERROR_DUE, &cq->kick_flags);
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	srx_count(cq->sdev, SRX_CNT_CQES_POSTED, posted);
	if (lost)
		srx_count(cq->sdev, SRX_CNT_CQE_OVERRUNS, lost);
	if (raise_error) {
		srx_count(cq->sdev, SRX_CNT_CQ_ERRORS, 1);
		srx_cq_kick(cq, false);
	}
	if (fire) {
		srx_count(cq->sdev, SRX_CNT_CQ_EVENTS, 1);
		srx_cq_kick(cq, true);
	}
	return lost ? -EOVERFLOW : 0;
}

/*
 * The CQ index of the last completion written (its producer index minus
 * one), for a work request that completes without a CQE of its own: an
 * unsignaled send's slot is free once that one has been polled (U5).
 *
 * Context: any; takes cq->lock with interrupts off.
 */
u32 srx_cq_last_idx(struct srx_cq *cq)
{
	unsigned long flags;
	u32 idx;

	spin_lock_irqsave(&cq->lock, flags);
	idx = cq->prod - 1;
	spin_unlock_irqrestore(&cq->lock, flags);
	return idx;
}

static int srx_cq_check_size(int cqe)
{
	if (cqe < 1 || cqe > SRX_MAX_CQE)
		return -EINVAL;
	return 0;
}

int srx_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibcq->device);
	struct srx_cq *cq = to_srx_cq(ibcq);
	struct srx_ucontext *uctx = rdma_udata_to_drv_context(udata,
			struct srx_ucontext, base_ucontext);
	struct srx_create_cq_resp resp = {};
	struct srx_create_cq_cmd cmd = {};
	int ret;

	ret = srx_cq_check_size(attr->cqe);
	if (ret)
		return ret;
	if (attr->flags & ~IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN)
		return -EOPNOTSUPP;
	if (attr->comp_vector >= ibcq->device->num_comp_vectors)
		return -EINVAL;

	/* No flag is defined yet: any is one this kernel does not know. */
	ret = srx_udata_cmd(udata, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.flags || cmd.reserved)
		return -EOPNOTSUPP;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;

	if (atomic_inc_return(&sdev->num_cq) > srx_device_max_cq()) {
		ret = -ENOMEM;
		goto err_count;
	}

	cq->sdev = sdev;
	cq->is_user = !!udata;
	cq->ignore_overrun = attr->flags & IB_UVERBS_CQ_FLAGS_IGNORE_OVERRUN;
	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_mutex);
	atomic_set(&cq->events_pending, 0);
	atomic_set(&cq->kicks, 0);
	INIT_CSD(&cq->csd, srx_cq_csd_fn, cq);
	init_irq_work(&cq->local_work, srx_cq_local_work_fn);
	cq->comp_cpu = cpumask_local_spread(attr->comp_vector, NUMA_NO_NODE);

	cq->ring = srx_cq_ring_alloc(uctx ? &uctx->base_ucontext : NULL,
				     srx_ring_entries(attr->cqe));
	if (!cq->ring) {
		ret = -ENOMEM;
		goto err_count;
	}

	if (udata) {
		srx_cq_layout(cq->ring, &resp.ring);
		ret = srx_udata_resp(udata, &resp, sizeof(resp), sizeof(resp));
		if (ret)
			goto err_free_ring;
	}

	ibcq->cqe = cq->ring->entries;
	return 0;

err_free_ring:
	srx_cq_ring_free(cq->ring);
err_count:
	atomic_dec(&sdev->num_cq);
	return ret;
}

int srx_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct srx_cq *cq = to_srx_cq(ibcq);

	/*
	 * ib_free_cq() of a softirq-polled CQ frees it once
	 * irq_poll_disable() has the iop, but ib_poll_handler() lets go of
	 * the iop (irq_poll_complete()) before it re-arms the CQ through
	 * ib_req_notify_cq(), which reads it (drivers/infiniband/core/cq.c,
	 * 6.1 and 6.12). A vCPU the host stopped in between found the CQ
	 * freed (6.12, srp_test, ib_srp's reconnect, 2026-12-06). The handler
	 * runs in softirq, a read-side section of RCU: a grace period lets it
	 * finish before ib_free_cq() goes on to free the CQ, and none can
	 * start again while the iop is held.
	 */
	if (!cq->is_user && ibcq->poll_ctx == IB_POLL_SOFTIRQ)
		synchronize_rcu();

	/*
	 * No post is running or can start (the top of this file says why),
	 * so no new hold comes: wait for the last one to go, then for
	 * irq_work to let go of local_work (it clears its busy bit after the
	 * run that released the last hold has returned; a csd is not touched
	 * after its function returns). A resize never runs either: uverbs
	 * holds the CQ's object for it, and a kernel consumer does not resize
	 * a CQ it is destroying.
	 */
	wait_var_event(&cq->kicks, !atomic_read(&cq->kicks));
	irq_work_sync(&cq->local_work);

	if (cq->prepared)
		srx_cq_ring_free(cq->prepared);
	srx_cq_ring_free(cq->ring);
	mutex_destroy(&cq->resize_mutex);
	atomic_dec(&cq->sdev->num_cq);
	return 0;
}

/*
 * Move one batch of the CQEs a resize has still to move from the old ring
 * into the current one, at the same indices; when none are left, publish
 * the new ring's producer index and let go of the old ring.
 * Return: true when the move is complete.
 */
static bool srx_cq_move_batch(struct srx_cq *cq)
{
	struct srx_cq_ring *old = cq->old, *new = cq->ring;
	u32 next = cq->move_next, n, i;

	lockdep_assert_held(&cq->lock);

	n = min_t(u32, cq->move_end - next, SRX_CQ_MOVE_BATCH);

	for (i = 0; i < n; i++) {
		u32 from = (next + i) & (old->entries - 1);
		u32 to = (next + i) & (new->entries - 1);

		new->cqes[to] = old->cqes[from];
		if (new->kqp)
			new->kqp[to] = old->kqp[from];
	}
	cq->move_next = next + n;
	if (cq->move_next != cq->move_end)
		return false;

	cq->old = NULL;
	smp_store_release(&new->ctrl->prod, cq->prod);	/* K1 */
	return true;
}

/*
 * Commit a resize: make @new the current ring and move every pending CQE
 * of the old one into it. Indices carry over unchanged, so a consumer that
 * keeps its own index need not reset it.
 *
 * A ring can hold 4 Mi CQEs (128 MiB), too many to move with interrupts
 * off, or even without a resched point. So, under cq->lock:
 *  1. the old ring is sealed (SRX_CQ_CONS_SEALED in the consumer word):
 *     consumers compare-and-swap that word to take CQEs, so from the
 *     exchange on none can take a CQE the kernel has counted, and the
 *     pending CQEs [cons, prod) stay where they are;
 *  2. if they do not fit in @new, the old ring is unsealed and stays;
 *  3. otherwise @new gets the control words and becomes current: producers
 *     write to it from now on, at indices from prod up, which are slots the
 *     pending CQEs will not need (at most new->entries from cons);
 * then the pending CQEs move a batch per hold of the lock, with a resched
 * point between batches, and the last batch publishes the new ring's
 * producer index. Until then cq->old says where the unmoved ones are: a
 * kernel CQ's ib_poll_cq() takes them from there (srx_poll_cq()), and a
 * user CQ's consumers cannot reach either ring (the old one is sealed, the
 * new one is not handed to them before the commit returns).
 *
 * The time with interrupts off is one batch; the whole move is bounded by
 * new->entries, since producers do not add to the old ring.
 *
 * Context: process, under resize_mutex; sleeps.
 * Return: 0, or -EINVAL if more CQEs are pending than @new holds; the old
 * ring is then unsealed and stays current.
 */
static int srx_cq_switch_ring(struct srx_cq *cq, struct srx_cq_ring *new)
{
	struct srx_cq_ring *old;
	unsigned long flags;
	u32 cons, pending;
	u64 word;
	bool done;

	lockdep_assert_held(&cq->resize_mutex);

	spin_lock_irqsave(&cq->lock, flags);
	old = cq->ring;

	if (cq->is_user) {
		word = xchg(&old->ctrl->cons, (u64)SRX_CQ_CONS_SEALED << 32);
		cons = lower_32_bits(word);
	} else {
		word = cq->kcons;
		cons = cq->kcons;
	}
	if (!srx_ring_index_ok(cq->prod, cons, old->entries)) {
		/* A consumer index no honest consumer writes: start empty. */
		srx_count(cq->sdev, SRX_CNT_BAD_USER_INDEX, 1);
		cons = cq->prod;
	}
	pending = cq->prod - cons;

	if (pending > new->entries) {
		if (cq->is_user)
			smp_store_release(&old->ctrl->cons, word);
		spin_unlock_irqrestore(&cq->lock, flags);
		return -EINVAL;
	}

	/*
	 * The process may have @new mapped already (PREPARE returned it), so
	 * these are stores to shared memory: each word once. prod follows
	 * with release once the CQEs below it are in place.
	 */
	WRITE_ONCE(new->ctrl->cons, (u64)cons);
	WRITE_ONCE(new->ctrl->fired, cq->fired);
	WRITE_ONCE(new->ctrl->dropped, cq->dropped);
	WRITE_ONCE(new->ctrl->status, srx_cq_status(cq));
	WRITE_ONCE(new->ctrl->arm, READ_ONCE(old->ctrl->arm));
	cq->seal_cons = cons;
	cq->old = old;
	cq->move_next = cons;
	cq->move_end = cq->prod;
	cq->ring = new;

	for (;;) {
		done = srx_cq_move_batch(cq);
		spin_unlock_irqrestore(&cq->lock, flags);
		if (done)
			break;
		cond_resched();
		spin_lock_irqsave(&cq->lock, flags);
	}

	srx_cq_ring_free(old);
	return 0;
}

/* Resize of a kernel CQ (ib_resize_cq()): prepare and commit in one go. */
static int srx_resize_kernel_cq(struct srx_cq *cq, u32 entries)
{
	struct srx_cq_ring *new;
	int ret;

	new = srx_cq_ring_alloc(NULL, entries);
	if (!new)
		return -ENOMEM;

	mutex_lock(&cq->resize_mutex);
	ret = srx_cq_switch_ring(cq, new);
	mutex_unlock(&cq->resize_mutex);
	if (ret)
		srx_cq_ring_free(new);
	else
		cq->base_cq.cqe = entries;
	return ret;
}

int srx_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct srx_cq *cq = to_srx_cq(ibcq);
	struct srx_ucontext *uctx = rdma_udata_to_drv_context(udata,
			struct srx_ucontext, base_ucontext);
	struct srx_resize_cq_resp resp = {};
	struct srx_resize_cq_cmd cmd;
	struct srx_cq_ring *new;
	u32 entries;
	int ret;

	ret = srx_cq_check_size(cqe);
	if (ret)
		return ret;
	entries = srx_ring_entries(cqe);

	if (!udata)
		return srx_resize_kernel_cq(cq, entries);

	if (udata->inlen < sizeof(cmd))
		return -EOPNOTSUPP;	/* a provider without the two steps */
	ret = srx_udata_cmd(udata, &cmd, sizeof(cmd));
	if (ret)
		return ret;
	if (cmd.reserved)
		return -EOPNOTSUPP;

	mutex_lock(&cq->resize_mutex);
	switch (cmd.op) {
	case SRX_RESIZE_PREPARE:
		if (udata->outlen < sizeof(resp)) {
			ret = -EINVAL;
			break;
		}
		new = srx_cq_ring_alloc(&uctx->base_ucontext, entries);
		if (!new) {
			ret = -ENOMEM;
			break;
		}
		srx_cq_layout(new, &resp.ring);
		ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (ret) {
			srx_cq_ring_free(new);
			break;
		}
		if (cq->prepared)
			srx_cq_ring_free(cq->prepared);
		cq->prepared = new;
		break;

	case SRX_RESIZE_COMMIT:
		new = cq->prepared;
		if (!new || new->entries != entries) {
			ret = -EINVAL;
			break;
		}
		cq->prepared = NULL;
		ret = srx_cq_switch_ring(cq, new);
		if (ret) {
			srx_cq_ring_free(new);
			break;
		}
		ibcq->cqe = entries;
		break;

	case SRX_RESIZE_ABORT:
		if (cq->prepared) {
			srx_cq_ring_free(cq->prepared);
			cq->prepared = NULL;
		}
		break;

	default:
		ret = -EINVAL;
	}
	mutex_unlock(&cq->resize_mutex);
	return ret;
}

static void srx_cqe_to_wc(const struct srx_cqe *cqe, struct ib_qp *qp,
			  struct ib_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqe->wr_id;
	wc->status = cqe->status;
	wc->opcode = cqe->opcode;
	wc->byte_len = cqe->byte_len;
	wc->qp = qp;
	wc->src_qp = cqe->src_qp;
	wc->slid = cqe->slid;
	wc->sl = cqe->sl;
	wc->dlid_path_bits = cqe->dlid_path_bits;
	wc->port_num = SRX_PORT;
	if (cqe->flags & SRX_CQE_WITH_IMM) {
		wc->ex.imm_data = (__force __be32)cqe->ex;
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (cqe->flags & SRX_CQE_WITH_INV) {
		wc->ex.invalidate_rkey = cqe->ex;
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	if (cqe->flags & SRX_CQE_GRH)
		wc->wc_flags |= IB_WC_GRH;
	if (cqe->flags & SRX_CQE_IP_CSUM_OK)
		wc->wc_flags |= IB_WC_IP_CSUM_OK;
	if (cqe->flags & SRX_CQE_WITH_VLAN) {
		wc->wc_flags |= IB_WC_WITH_VLAN;
		wc->vlan_id = cqe->slid;
		wc->slid = 0;
	}
}

/*
 * Kernel CQs: forget the CQEs of @qp still waiting to be polled, when it is
 * reset or destroyed, so that ib_poll_cq() never returns a QP that is gone
 * (mlx5_ib cleans a destroyed QP's CQEs too, destroy_qp_common()) nor one
 * that came before a reset. Each stays in its slot with no QP, and the poll
 * steps over it. libsrx cleans user CQs itself (userspace/libsrx/cq.c).
 *
 * The CQEs to look at are those below prod as the call starts: @qp posts
 * no more. A batch at a time, as a resize moves CQEs, so that a ring of
 * millions never keeps interrupts off for long; between batches pollers
 * may take some (the next batch starts at kcons if it moved past) and a
 * resize may move some (srx_cq_unmoved() is asked under the lock).
 *
 * Context: process; sleeps. The caller has stopped @qp's engine, so nothing
 * of it is posted after this. Takes cq->lock, as srx_cq_post() does.
 */
void srx_cq_clean_qp(struct srx_cq *cq, struct ib_qp *qp)
{
	struct srx_cq_ring *ring;
	u32 start, idx, end, taken, n, slot;
	unsigned long flags;

	might_sleep();
	if (cq->is_user)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	start = cq->kcons;
	idx = start;
	end = cq->prod;
	for (;;) {
		/* polled since the start: kcons only moves forward */
		taken = cq->kcons - start;
		if (taken >= end - start)
			break;
		if (taken > idx - start)
			idx = cq->kcons;
		for (n = 0; idx != end && n < SRX_CQ_MOVE_BATCH; idx++, n++) {
			ring = srx_cq_unmoved(cq, idx) ? cq->old : cq->ring;
			slot = idx & (ring->entries - 1);
			if (ring->kqp[slot] == qp)
				ring->kqp[slot] = NULL;
		}
		if (idx == end)
			break;
		spin_unlock_irqrestore(&cq->lock, flags);
		cond_resched();
		spin_lock_irqsave(&cq->lock, flags);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}

/* Kernel CQs only: user CQs are polled by libsrx from the mapped ring. */
int srx_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct srx_cq *cq = to_srx_cq(ibcq);
	struct srx_cq_ring *ring;
	unsigned long flags;
	struct ib_qp *qp;
	u32 slot, start;
	int n = 0;

	if (cq->is_user)
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	start = cq->kcons;
	while (n < num_entries && cq->kcons != cq->prod) {
		/*
		 * A resize in progress may not have moved this one yet: take
		 * it from the old ring, and count it as moved, so that the
		 * move never copies a CQE already taken (its slot in the new
		 * ring may hold a newer one). kcons never passes move_next.
		 */
		ring = cq->ring;
		if (srx_cq_unmoved(cq, cq->kcons)) {
			ring = cq->old;
			cq->move_next++;
		}
		slot = cq->kcons & (ring->entries - 1);
		cq->kcons++;
		/* Cleaned: its QP was reset or destroyed (srx_cq_clean_qp()). */
		qp = ring->kqp[slot];
		if (!qp)
			continue;
		srx_cqe_to_wc(&ring->cqes[slot], qp, &wc[n]);
		n++;
	}
	if (cq->kcons != start)
		smp_store_release(&cq->ring->ctrl->cons, (u64)cq->kcons);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/* Kernel CQs only: libsrx arms a user CQ by writing the arm word itself. */
int srx_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct srx_cq *cq = to_srx_cq(ibcq);
	unsigned long irqflags;
	u32 arm;
	int missed;

	if (cq->is_user)
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, irqflags);
	/* A fresh sequence, never the one last fired on (31 bits wrap). */
	do {
		cq->arm_seq = (cq->arm_seq + 1) & (U32_MAX >> SRX_CQ_ARM_SEQ_SHIFT);
	} while (cq->arm_seq == cq->fired);
	arm = cq->arm_seq << SRX_CQ_ARM_SEQ_SHIFT;
	if ((flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED)
		arm |= SRX_CQ_ARM_SOLICITED;
	WRITE_ONCE(cq->ring->ctrl->arm, arm);
	missed = (flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->kcons != cq->prod;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return missed;
}
