// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs: create/modify/query/destroy through the kernel, and posting
 * work requests straight into the mapped send and receive rings.
 *
 * Posting is not on the lock-free list: each queue has a spinlock for its
 * posters, as in every rdma-core provider. A receive makes no system call;
 * a send on an RC or UD QP rings the doorbell (a write() POST_SEND without
 * work requests), in which the kernel's requester runs, only when the
 * kernel's send engine is idle (U6); other sends make none.
 * Any post rings when the kernel has put the QP in the error state: then
 * the kernel must see the new WQEs to complete them as flushed. A doorbell
 * that fails fails the post.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "srx.h"
#include "wq_ring.h"

/* Map a work queue ring from its layout; QPs' queues and SRQs (srq.c). */
int srx_wq_map(struct srx_wq *wq, struct ibv_context *ctx,
	       const struct srx_wq_layout *l, size_t hdr)
{
	char *base;

	if (!srx_wq_layout_ok(l, hdr))
		return EPROTO;
	base = mmap(NULL, l->mmap_length, PROT_READ | PROT_WRITE, MAP_SHARED,
		    ctx->cmd_fd, l->mmap_offset);
	if (base == MAP_FAILED)
		return errno;

	pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE);
	wq->base = base;
	wq->len = l->mmap_length;
	wq->prod = (uint32_t *)(base + l->prod_offset);
	wq->cons = (uint32_t *)(base + l->cons_offset);
	wq->state = (uint32_t *)(base + l->state_offset);
	wq->done = (uint32_t *)(base + l->done_offset);
	wq->engine = (uint32_t *)(base + l->engine_offset);
	wq->cqe_idx = (uint32_t *)(base + l->cqe_idx_offset);
	wq->wqes = base + l->wqe_offset;
	wq->entries = l->entries;
	wq->wqe_size = l->wqe_size;
	wq->max_sge = l->max_sge;
	wq->max_inline = l->max_inline;
	wq->head = srx_load_relaxed(wq->prod);
	wq->free = srx_load_wq_cons(wq->done);
	return 0;
}

void srx_wq_unmap(struct srx_wq *wq)
{
	if (!wq->base)
		return;
	munmap(wq->base, wq->len);
	pthread_spin_destroy(&wq->lock);
	wq->base = NULL;
}

/*
 * The consumer and producer indices of @cq's current ring, for U5 (cons
 * first); false when they tell nothing: the ring is sealed by a resize (a
 * clean's seal keeps the index, which is then only conservative), or
 * a SINGLE_THREADED CQ is being resized. Such a CQ unmaps its old ring as
 * soon as the resize has switched (cq.c, srx_cq_retire_ring()), and a post
 * on another thread may look at it all the same, so it looks only while
 * it holds resize_mutex, and never waits for it. A thread-safe CQ keeps
 * every ring it had mapped, and its srx_cq_ring, until it is destroyed,
 * which verbs forbids while a QP uses it.
 */
static bool srx_cq_indices(struct srx_cq *cq, uint32_t *cons, uint32_t *prod)
{
	struct srx_cq_ring *ring;
	uint64_t word;

	if (cq->single_threaded && pthread_mutex_trylock(&cq->resize_mutex))
		return false;
	ring = atomic_load_explicit(&cq->ring, memory_order_acquire);
	word = srx_load_cons(ring->view.cons);
	*prod = srx_load_prod(ring->view.prod);
	if (cq->single_threaded)
		pthread_mutex_unlock(&cq->resize_mutex);
	*cons = SRX_CONS_INDEX(word);
	/* a clean's seal keeps the index (cq_ring.h) */
	return !(SRX_CONS_SEAL(word) & ~SRX_CQ_CONS_CLEANING);
}

/*
 * No free slot (U5): head is a ring ahead of free. Only then does a post
 * look at what was completed and polled since, so a post that finds room
 * reads nothing the kernel or a poller writes.
 */
bool srx_wq_full(struct srx_wq *wq)
{
	uint32_t cons, prod;

	if (wq->head - wq->free < wq->entries)
		return false;
	if (srx_cq_indices(wq->cq, &cons, &prod))
		wq->free = srx_wq_reclaim(wq->free,
					  srx_load_wq_cons(wq->done), /* U5 */
					  wq->cqe_idx, wq->entries, cons, prod);
	return wq->head - wq->free >= wq->entries;
}

/*
 * RESET dropped every WQE of @wq (the kernel set done = cons = prod): all
 * slots are free, whatever completions are still to be polled. A QP on an
 * SRQ has no receive queue.
 */
static void srx_wq_reset(struct srx_wq *wq)
{
	if (!wq->base)
		return;
	pthread_spin_lock(&wq->lock);
	wq->free = srx_load_wq_cons(wq->done);
	pthread_spin_unlock(&wq->lock);
}

/*
 * Map the rings of a QP the kernel has just created, and tell the caller
 * what it granted, as ibv_create_qp(3) promises. A QP on an SRQ has no
 * receive queue (its layout is zeros): receives go to the SRQ (srq.c).
 */
static int srx_qp_map(struct srx_qp *qp, struct ibv_context *ctx,
		      const struct srx_create_qp_resp *drv,
		      struct ibv_cq *send_cq, struct ibv_cq *recv_cq,
		      struct ibv_srq *srq, struct ibv_qp_cap *cap)
{
	int ret;

	ret = srx_wq_map(&qp->sq, ctx, &drv->sq, sizeof(struct srx_send_wqe));
	if (ret)
		return ret;
	if (!srq) {
		ret = srx_wq_map(&qp->rq, ctx, &drv->rq,
				 sizeof(struct srx_recv_wqe));
		if (ret) {
			srx_wq_unmap(&qp->sq);
			return ret;
		}
	}
	qp->sq.cq = to_scq(send_cq);
	qp->rq.cq = to_scq(recv_cq);

	cap->max_send_wr = qp->sq.entries;
	cap->max_recv_wr = qp->rq.entries;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_recv_sge = qp->rq.max_sge;
	cap->max_inline_data = qp->sq.max_inline;
	return 0;
}

struct ibv_qp *srx_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct usrx_create_qp_resp resp = {};
	struct ibv_create_qp cmd = {};
	struct srx_qp *qp;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	ret = ibv_cmd_create_qp(pd, &qp->vqp.qp, attr, &cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = srx_qp_map(qp, pd->context, &resp.drv, attr->send_cq,
			 attr->recv_cq, attr->srq, &attr->cap);
	if (ret)
		goto err_destroy;
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

/*
 * ibv_create_qp_ex(3). libibverbs sends a comp_mask of the PD alone to
 * srx_create_qp(); this takes the rest that srx has: create_flags, none
 * set, and send_ops_flags, which turn on the ibv_wr_* API (wr.c). Any
 * create flag, any other comp_mask bit and an operation srx cannot post
 * on the QP's type are refused with EOPNOTSUPP before the kernel is asked
 * (where uverbs would answer some flags with EINVAL by itself), as
 * ibv_wr_post(3) asks for operations ("If the QP does not support all the
 * requested work request types then QP creation will fail").
 */
struct ibv_qp *srx_create_qp_ex(struct ibv_context *ctx,
				struct ibv_qp_init_attr_ex *attr)
{
	const uint64_t known = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	bool wr_api = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	struct usrx_create_qp_ex_resp resp = {};
	struct ibv_create_qp_ex cmd = {};
	struct srx_qp *qp;
	int ret;

	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags) ||
	    (wr_api && !srx_wr_ops_ok(to_sctx(ctx), attr->qp_type,
				      attr->send_ops_flags))) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return NULL;

	ret = ibv_cmd_create_qp_ex2(ctx, &qp->vqp, attr, &cmd, sizeof(cmd),
				    &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = srx_qp_map(qp, ctx, &resp.drv, attr->send_cq, attr->recv_cq,
			 attr->srq, &attr->cap);
	if (ret)
		goto err_destroy;
	if (wr_api) {
		srx_wr_init(qp, attr->send_ops_flags);
		/* ibv_qp_to_qp_ex() looks for this; the command cleared it. */
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;

err_destroy:
	ibv_cmd_destroy_qp(&qp->vqp.qp);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

int srx_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
				sizeof(cmd));
}

int srx_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct srx_qp *qp = to_sqp(ibqp);
	struct ibv_modify_qp cmd = {};
	int ret;

	ret = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (!ret && (attr_mask & IBV_QP_STATE) &&
	    attr->qp_state == IBV_QPS_RESET) {
		srx_wq_reset(&qp->sq);
		srx_wq_reset(&qp->rq);
		srx_cq_clean_qp(qp->sq.cq, ibqp->qp_num);
		if (qp->rq.cq != qp->sq.cq)
			srx_cq_clean_qp(qp->rq.cq, ibqp->qp_num);
	}
	return ret;
}

int srx_destroy_qp(struct ibv_qp *ibqp)
{
	struct srx_qp *qp = to_sqp(ibqp);
	int ret;

	ret = ibv_cmd_destroy_qp(ibqp);
	if (ret)
		return ret;
	srx_wq_unmap(&qp->rq);
	srx_wq_unmap(&qp->sq);
	free(qp);
	return 0;
}

/*
 * Publish what was posted since @start and return whether the doorbell must
 * ring: if the kernel has the QP in the error state, it completes the new
 * WQEs as flushed only when told. The fence is the poster's half of the
 * doorbell contract (srx-abi.h). Nothing posted, nothing to publish.
 */
static bool srx_wq_publish(struct srx_wq *wq, uint32_t start)
{
	if (wq->head == start)
		return false;
	srx_publish_prod(wq->prod, wq->head);
	srx_arm_fence();
	return srx_load_relaxed(wq->state) == SRX_QP_STATE_ERR;
}

/*
 * The same for an RC or UD send queue, whose requester runs in the kernel
 * (U6 of srx-abi.h): ring only if the kernel's send engine is idle. While it
 * is active (a stream in flight) it reads prod again by itself, so a post
 * costs no system call; a QP in error keeps the engine idle, so a post to
 * it rings and is flushed.
 */
static bool srx_sq_publish_engine(struct srx_wq *wq, uint32_t start)
{
	if (wq->head == start)
		return false;
	srx_publish_prod(wq->prod, wq->head);
	srx_arm_fence();
	return !(srx_load_relaxed(wq->engine) & SRX_WQ_ENGINE_ACTIVE);
}

/* Publish a send queue's new WQEs: every QP type has a send engine. */
bool srx_sq_publish(struct srx_qp *qp, uint32_t start)
{
	return srx_sq_publish_engine(&qp->sq, start);
}

/*
 * Ring the doorbell for the WQEs [start, end) this call published. Returns
 * 0, or the doorbell's errno with *@taken the number of those WQEs the
 * kernel is nonetheless known to have taken (below its consumer index: it
 * completed them), which is less than end - start; a failure that lost
 * nothing returns 0. The WQEs from *@taken on stay in the ring without a
 * completion: the device is gone (EIO) or the kernel could not run the
 * command, and only a later doorbell that succeeds flushes them. The post
 * reports the first of them as bad_wr, as rxe does.
 */
int srx_ring_doorbell(struct srx_qp *qp, struct srx_wq *wq, uint32_t start,
		      uint32_t end, uint32_t *taken)
{
	struct ibv_send_wr *unused;
	int32_t past;
	int ret;

	ret = ibv_cmd_post_send(&qp->vqp.qp, NULL, &unused);
	if (!ret)
		return 0;
	/* U5: what the kernel published before the command failed. */
	past = (int32_t)(srx_load_wq_cons(wq->cons) - start);
	*taken = past > 0 ? (uint32_t)past : 0;
	return *taken < end - start ? ret : 0;
}

void srx_copy_sges(struct srx_sge *dst, const struct ibv_sge *src, int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		dst[i].addr = src[i].addr;
		dst[i].length = src[i].length;
		dst[i].lkey = src[i].lkey;
	}
}

/* What the device reports it takes (srx.c, srx_init_send_ops()). */
static bool srx_send_opcode_ok(struct srx_qp *qp, enum ibv_wr_opcode op)
{
	const struct srx_context *ctx = to_sctx(qp->vqp.qp.context);
	enum ibv_qp_type type = qp->vqp.qp.qp_type;

	return (unsigned int)type <= IBV_QPT_UD && (unsigned int)op < 64 &&
	       (ctx->send_ops[type] & (1ull << op));
}

/*
 * Inline data is the payload of an outgoing message: SEND and RDMA WRITE
 * carry one; an RDMA READ or an atomic has none to give (ibv_post_send(3):
 * "valid only for Send and RDMA Write").
 */
bool srx_inline_ok(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_SEND_WITH_INV:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return true;
	default:
		return false;
	}
}

static int srx_write_send_wqe(struct srx_qp *qp, struct ibv_send_wr *wr)
{
	struct srx_wq *wq = &qp->sq;
	struct srx_send_wqe *wqe;
	uint64_t len = 0;
	int i;

	/*
	 * ATOMIC WRITE posts through ibv_wr_atomic_write(), which gives the
	 * 8 bytes; ibv_post_send(3) of rdma-core 44 does not say where an
	 * ibv_send_wr would carry them.
	 */
	if (!srx_send_opcode_ok(qp, wr->opcode) ||
	    wr->opcode == IBV_WR_ATOMIC_WRITE ||
	    wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge)
		return EINVAL;
	if ((wr->send_flags & IBV_SEND_INLINE) && !srx_inline_ok(wr->opcode))
		return EINVAL;
	if (qp->vqp.qp.qp_type == IBV_QPT_UD && !wr->wr.ud.ah)
		return EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW && !wr->bind_mw.mw)
		return EINVAL;
	if (srx_wq_full(wq))
		return ENOMEM;

	wqe = srx_wq_slot(wq, wq->head);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr->wr_id;
	wqe->opcode = wr->opcode;
	wqe->send_flags = wr->send_flags;
	if (wr->opcode == IBV_WR_SEND_WITH_INV ||
	    wr->opcode == IBV_WR_LOCAL_INV)
		wqe->ex = wr->invalidate_rkey;
	else
		wqe->ex = wr->imm_data;

	if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
		wqe->wr.ud.ah = to_sah(wr->wr.ud.ah)->ah_num;
		wqe->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
	}
	switch (wr->opcode) {
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->wr.atomic.swap = wr->wr.atomic.swap;
		wqe->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wqe->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_BIND_MW:
		/* A bind has no data: its SGEs are ignored. */
		srx_set_bind(wqe, wr->bind_mw.mw, wr->bind_mw.rkey,
			     &wr->bind_mw.bind_info);
		wq->head++;
		return 0;
	default:
		break;
	}

	if (wr->send_flags & IBV_SEND_INLINE) {
		char *dst = (char *)(wqe + 1);

		for (i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > wq->max_inline)
			return EINVAL;
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
	wq->head++;
	return 0;
}

int srx_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *first,
		  struct ibv_send_wr **bad_wr)
{
	struct srx_qp *qp = to_sqp(ibqp);
	struct srx_wq *wq = &qp->sq;
	uint32_t state = srx_load_relaxed(wq->state), start, end;
	struct ibv_send_wr *wr;
	bool doorbell;
	int ret = 0;

	/* Sends need RTS (or a state that flushes or drains them). */
	if (state < SRX_QP_STATE_RTS) {
		*bad_wr = first;
		return EINVAL;
	}

	pthread_spin_lock(&wq->lock);
	start = wq->head;
	for (wr = first; wr; wr = wr->next) {
		ret = srx_write_send_wqe(qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	end = wq->head;
	doorbell = srx_sq_publish(qp, start);
	pthread_spin_unlock(&wq->lock);

	if (doorbell) {
		uint32_t taken;
		int err = srx_ring_doorbell(qp, wq, start, end, &taken);

		if (err) {
			for (wr = first; taken--; wr = wr->next)
				;
			*bad_wr = wr;
			return err;
		}
	}
	return ret;
}

/* Write @wr at @wq's head and move the head; the caller holds wq->lock. */
void srx_write_recv(struct srx_wq *wq, const struct ibv_recv_wr *wr)
{
	struct srx_recv_wqe *wqe = srx_wq_slot(wq, wq->head);

	wqe->wr_id = wr->wr_id;
	wqe->num_sge = wr->num_sge;
	wqe->reserved = 0;
	srx_copy_sges((struct srx_sge *)(wqe + 1), wr->sg_list, wr->num_sge);
	wq->head++;
}

int srx_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *first,
		  struct ibv_recv_wr **bad_wr)
{
	struct srx_qp *qp = to_sqp(ibqp);
	struct srx_wq *wq = &qp->rq;
	struct ibv_recv_wr *wr;
	uint32_t start, end;
	bool doorbell;
	int ret = 0;

	/* A QP on an SRQ receives what is posted to the SRQ. */
	if (!wq->base || srx_load_relaxed(wq->state) == SRX_QP_STATE_RESET) {
		*bad_wr = first;
		return EINVAL;
	}

	pthread_spin_lock(&wq->lock);
	start = wq->head;
	for (wr = first; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge)
			ret = EINVAL;
		else if (srx_wq_full(wq))
			ret = ENOMEM;
		if (ret) {
			*bad_wr = wr;
			break;
		}
		srx_write_recv(wq, wr);
	}
	end = wq->head;
	doorbell = srx_wq_publish(wq, start);
	pthread_spin_unlock(&wq->lock);

	if (doorbell) {
		uint32_t taken;
		int err = srx_ring_doorbell(qp, wq, start, end, &taken);

		if (err) {
			for (wr = first; taken--; wr = wr->next)
				;
			*bad_wr = wr;
			return err;
		}
	}
	return ret;
}
