// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The work request API of ibv_qp_ex (ibv_wr_post(3)): a QP created with
 * send_ops_flags posts with ibv_wr_start(), a builder per work request
 * (ibv_wr_send(), ibv_wr_rdma_write(), ...) followed by its setters, and
 * ibv_wr_complete() or ibv_wr_abort().
 *
 * The batch is written into the send ring past the producer index the
 * kernel reads, so nothing of it is visible before ibv_wr_complete()
 * publishes it, exactly as ibv_post_send() would have (qp.c). Between
 * start and complete or abort the poster holds the send queue's lock,
 * which is what makes the critical region of ibv_wr_post(3) one.
 *
 * The builders and setters return nothing, so the first fault of a batch
 * is kept in wr_err and every later call does nothing; ibv_wr_complete()
 * then drops the whole batch and returns that errno, with the errnos
 * ibv_post_send() gives for the same fault: ENOMEM for a full queue,
 * EINVAL for a bad request or a QP not in RTS.
 */
#include <errno.h>
#include <string.h>

#include "srx.h"

/* ibv_wr_post(3)'s operations and the opcode each posts. */
static const struct {
	uint64_t flag;
	enum ibv_wr_opcode op;
} srx_wr_ops[] = {
	{ IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE },
	{ IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
	{ IBV_QP_EX_WITH_SEND, IBV_WR_SEND },
	{ IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM },
	{ IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ },
	{ IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP },
	{ IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD },
	{ IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV },
	{ IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV },
	{ IBV_QP_EX_WITH_ATOMIC_WRITE, IBV_WR_ATOMIC_WRITE },
	{ IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW },
};

/*
 * Whether a QP of @type can post every operation of @flags: each one
 * ibv_post_send() takes on that type (srx.c, srx_init_send_ops()), and
 * ATOMIC_WRITE where the device reports it. TSO and bits libsrx does not
 * know are not. Nor is
 * anything on a UD QP, whose builders need ibv_wr_set_ud_addr() and so an
 * address handle, which srx does not have yet.
 */
bool srx_wr_ops_ok(const struct srx_context *ctx, enum ibv_qp_type type,
		   uint64_t flags)
{
	unsigned int i;

	if (type != IBV_QPT_RC && type != IBV_QPT_UC && type != IBV_QPT_UD)
		return false;
	for (i = 0; i < sizeof(srx_wr_ops) / sizeof(srx_wr_ops[0]); i++) {
		if (!(flags & srx_wr_ops[i].flag))
			continue;
		if (!(ctx->send_ops[type] & (1ull << srx_wr_ops[i].op)))
			return false;
		flags &= ~srx_wr_ops[i].flag;
	}
	return !flags;
}

static struct srx_qp *to_sqp_ex(struct ibv_qp_ex *ex)
{
	return to_sqp(&ex->qp_base);
}

/* Keep the batch's first fault; it is what ibv_wr_complete() returns. */
static void srx_wr_fail(struct srx_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

/*
 * Start the next work request of the batch in the next free slot, from
 * wr_id and wr_flags as ibv_wr_post(3) says. IBV_SEND_INLINE is not taken
 * from wr_flags: the data setter chosen says whether the data is inline.
 * NULL if the batch has failed already or the queue is full.
 */
static struct srx_send_wqe *srx_wr_build(struct srx_qp *qp,
					 enum ibv_wr_opcode op)
{
	struct srx_wq *wq = &qp->sq;
	struct srx_send_wqe *wqe;

	qp->wr_cur = NULL;
	if (qp->wr_err)
		return NULL;
	if (srx_wq_full(wq)) {
		srx_wr_fail(qp, ENOMEM);
		return NULL;
	}
	wqe = srx_wq_slot(wq, wq->head++);
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = qp->vqp.qp_ex.wr_id;
	wqe->opcode = op;
	wqe->send_flags = qp->vqp.qp_ex.wr_flags & ~IBV_SEND_INLINE;
	qp->wr_cur = wqe;
	return wqe;
}

static void srx_wr_rdma(struct ibv_qp_ex *ex, enum ibv_wr_opcode op,
			uint32_t rkey, uint64_t remote_addr, __be32 imm)
{
	struct srx_send_wqe *wqe = srx_wr_build(to_sqp_ex(ex), op);

	if (!wqe)
		return;
	wqe->ex = imm;
	wqe->wr.rdma.remote_addr = remote_addr;
	wqe->wr.rdma.rkey = rkey;
}

static void srx_wr_rdma_write(struct ibv_qp_ex *ex, uint32_t rkey,
			      uint64_t remote_addr)
{
	srx_wr_rdma(ex, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void srx_wr_rdma_write_imm(struct ibv_qp_ex *ex, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	srx_wr_rdma(ex, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		    imm_data);
}

static void srx_wr_rdma_read(struct ibv_qp_ex *ex, uint32_t rkey,
			     uint64_t remote_addr)
{
	srx_wr_rdma(ex, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void srx_wr_atomic(struct ibv_qp_ex *ex, enum ibv_wr_opcode op,
			  uint32_t rkey, uint64_t remote_addr,
			  uint64_t compare_add, uint64_t swap)
{
	struct srx_send_wqe *wqe = srx_wr_build(to_sqp_ex(ex), op);

	if (!wqe)
		return;
	wqe->wr.atomic.remote_addr = remote_addr;
	wqe->wr.atomic.compare_add = compare_add;
	wqe->wr.atomic.swap = swap;
	wqe->wr.atomic.rkey = rkey;
}

static void srx_wr_atomic_cmp_swp(struct ibv_qp_ex *ex, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	srx_wr_atomic(ex, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
		      compare, swap);
}

static void srx_wr_atomic_fetch_add(struct ibv_qp_ex *ex, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	srx_wr_atomic(ex, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
		      add, 0);
}

/*
 * The 8 bytes go inline into the WQE, so what lands is what they held at
 * this call (the kernel copies the slot once); the send queue's slots hold
 * at least one SGE's 16 bytes, so 8 inline always fit. No data setter
 * follows: srx_wr_data_target() refuses one.
 */
static void srx_wr_atomic_write(struct ibv_qp_ex *ex, uint32_t rkey,
				uint64_t remote_addr, const void *atomic_wr)
{
	struct srx_send_wqe *wqe = srx_wr_build(to_sqp_ex(ex),
						IBV_WR_ATOMIC_WRITE);

	if (!wqe)
		return;
	wqe->wr.rdma.remote_addr = remote_addr;
	wqe->wr.rdma.rkey = rkey;
	memcpy(wqe + 1, atomic_wr, SRX_ATOMIC_WRITE_BYTES);
	wqe->inline_len = SRX_ATOMIC_WRITE_BYTES;
	wqe->send_flags |= IBV_SEND_INLINE;
}

/* No data setter follows a bind (srx_wr_data_target() refuses one). */
static void srx_wr_bind_mw(struct ibv_qp_ex *ex, struct ibv_mw *mw,
			   uint32_t rkey,
			   const struct ibv_mw_bind_info *bind_info)
{
	struct srx_qp *qp = to_sqp_ex(ex);
	struct srx_send_wqe *wqe;

	if (!mw) {
		srx_wr_fail(qp, EINVAL);
		return;
	}
	wqe = srx_wr_build(qp, IBV_WR_BIND_MW);
	if (wqe)
		srx_set_bind(wqe, mw, rkey, bind_info);
}

static void srx_wr_send_op(struct ibv_qp_ex *ex, enum ibv_wr_opcode op,
			   uint32_t ex_word)
{
	struct srx_send_wqe *wqe = srx_wr_build(to_sqp_ex(ex), op);

	if (wqe)
		wqe->ex = ex_word;
}

static void srx_wr_send(struct ibv_qp_ex *ex)
{
	srx_wr_send_op(ex, IBV_WR_SEND, 0);
}

static void srx_wr_send_imm(struct ibv_qp_ex *ex, __be32 imm_data)
{
	srx_wr_send_op(ex, IBV_WR_SEND_WITH_IMM, imm_data);
}

static void srx_wr_send_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	srx_wr_send_op(ex, IBV_WR_SEND_WITH_INV, invalidate_rkey);
}

static void srx_wr_local_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	srx_wr_send_op(ex, IBV_WR_LOCAL_INV, invalidate_rkey);
}

/*
 * The work request a data setter applies to: the one the last builder
 * started. A setter with none (no builder yet, or the builder failed) or
 * on an operation that moves no data fails the batch with EINVAL rather
 * than write into a slot nobody owns.
 */
static struct srx_send_wqe *srx_wr_data_target(struct srx_qp *qp,
					       bool is_inline)
{
	struct srx_send_wqe *wqe = qp->wr_cur;

	if (qp->wr_err)
		return NULL;
	if (!wqe) {
		srx_wr_fail(qp, EINVAL);
		return NULL;
	}
	switch (wqe->opcode) {
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (!is_inline)
			return wqe;
		break;
	default:
		if (srx_inline_ok(wqe->opcode))
			return wqe;
		break;
	}
	srx_wr_fail(qp, EINVAL);
	return NULL;
}

static void srx_wr_set_sge_list(struct ibv_qp_ex *ex, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct srx_qp *qp = to_sqp_ex(ex);
	struct srx_send_wqe *wqe = srx_wr_data_target(qp, false);

	if (!wqe)
		return;
	if (num_sge > qp->sq.max_sge) {
		srx_wr_fail(qp, EINVAL);
		return;
	}
	srx_copy_sges((struct srx_sge *)(wqe + 1), sg_list, (int)num_sge);
	wqe->num_sge = num_sge;
	wqe->inline_len = 0;
	wqe->send_flags &= ~IBV_SEND_INLINE;
}

static void srx_wr_set_sge(struct ibv_qp_ex *ex, uint32_t lkey, uint64_t addr,
			   uint32_t length)
{
	const struct ibv_sge sge = { .addr = addr, .length = length,
				     .lkey = lkey };

	srx_wr_set_sge_list(ex, 1, &sge);
}

static void srx_wr_set_inline_data_list(struct ibv_qp_ex *ex, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct srx_qp *qp = to_sqp_ex(ex);
	struct srx_send_wqe *wqe = srx_wr_data_target(qp, true);
	size_t len = 0, i;
	char *dst;

	if (!wqe)
		return;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->sq.max_inline - len) {
			srx_wr_fail(qp, EINVAL);
			return;
		}
		len += buf_list[i].length;
	}
	dst = (char *)(wqe + 1);
	for (i = 0; i < num_buf; i++) {
		memcpy(dst, buf_list[i].addr, buf_list[i].length);
		dst += buf_list[i].length;
	}
	wqe->inline_len = len;
	wqe->num_sge = 0;
	wqe->send_flags |= IBV_SEND_INLINE;
}

static void srx_wr_set_inline_data(struct ibv_qp_ex *ex, void *addr,
				   size_t length)
{
	const struct ibv_data_buf buf = { .addr = addr, .length = length };

	srx_wr_set_inline_data_list(ex, 1, &buf);
}

/*
 * The destination of the current work request of a UD QP. Without it the
 * WQE names AH 0, which is none: the kernel completes it with
 * IBV_WC_LOC_QP_OP_ERR.
 */
static void srx_wr_set_ud_addr(struct ibv_qp_ex *ex, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct srx_qp *qp = to_sqp_ex(ex);
	struct srx_send_wqe *wqe = qp->wr_cur;

	if (qp->wr_err)
		return;
	if (!wqe || !ah || qp->vqp.qp.qp_type != IBV_QPT_UD) {
		srx_wr_fail(qp, EINVAL);
		return;
	}
	wqe->wr.ud.ah = to_sah(ah)->ah_num;
	wqe->wr.ud.remote_qpn = remote_qpn;
	wqe->wr.ud.remote_qkey = remote_qkey;
}

/*
 * A setter of a QP type srx cannot create (XRC): present so that a call
 * fails its batch instead of jumping through NULL.
 */

static void srx_wr_set_xrc_srqn(struct ibv_qp_ex *ex, uint32_t remote_srqn)
{
	srx_wr_fail(to_sqp_ex(ex), EINVAL);
}

static void srx_wr_start(struct ibv_qp_ex *ex)
{
	struct srx_qp *qp = to_sqp_ex(ex);

	pthread_spin_lock(&qp->sq.lock);
	qp->wr_start = qp->sq.head;
	qp->wr_cur = NULL;
	qp->wr_err = 0;
}

/* Forget the batch: its slots were never published. Under sq.lock. */
static void srx_wr_drop(struct srx_qp *qp)
{
	qp->sq.head = qp->wr_start;
	qp->wr_cur = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/*
 * Publish the batch as one ibv_post_send() of the same work requests
 * would, and ring the doorbell when that says to. A doorbell that fails
 * returns its errno; as for ibv_post_send(), the work requests the kernel
 * did not take stay in the ring without a completion until a later
 * doorbell succeeds (qp.c, srx_ring_doorbell()).
 */
static int srx_wr_complete(struct ibv_qp_ex *ex)
{
	struct srx_qp *qp = to_sqp_ex(ex);
	uint32_t start = qp->wr_start, end, taken;
	int err = qp->wr_err;
	bool doorbell;

	/* Sends need RTS (or a state that flushes or drains them). */
	if (!err && srx_load_relaxed(qp->sq.state) < SRX_QP_STATE_RTS)
		err = EINVAL;
	if (err) {
		srx_wr_drop(qp);
		return err;
	}
	end = qp->sq.head;
	qp->wr_cur = NULL;
	doorbell = srx_sq_publish(qp, start);
	pthread_spin_unlock(&qp->sq.lock);

	if (doorbell)
		return srx_ring_doorbell(qp, &qp->sq, start, end, &taken);
	return 0;
}

static void srx_wr_abort(struct ibv_qp_ex *ex)
{
	srx_wr_drop(to_sqp_ex(ex));
}

/*
 * Fill in @qp's ibv_qp_ex: the builders of the operations in @flags
 * (checked by srx_wr_ops_ok()), every setter, start, complete and abort.
 * Builders not asked for stay NULL, as ibv_wr_post(3) allows.
 */
void srx_wr_init(struct srx_qp *qp, uint64_t flags)
{
	struct ibv_qp_ex *ex = &qp->vqp.qp_ex;

	if (flags & IBV_QP_EX_WITH_RDMA_WRITE)
		ex->wr_rdma_write = srx_wr_rdma_write;
	if (flags & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ex->wr_rdma_write_imm = srx_wr_rdma_write_imm;
	if (flags & IBV_QP_EX_WITH_SEND)
		ex->wr_send = srx_wr_send;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ex->wr_send_imm = srx_wr_send_imm;
	if (flags & IBV_QP_EX_WITH_RDMA_READ)
		ex->wr_rdma_read = srx_wr_rdma_read;
	if (flags & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ex->wr_atomic_cmp_swp = srx_wr_atomic_cmp_swp;
	if (flags & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ex->wr_atomic_fetch_add = srx_wr_atomic_fetch_add;
	if (flags & IBV_QP_EX_WITH_LOCAL_INV)
		ex->wr_local_inv = srx_wr_local_inv;
	if (flags & IBV_QP_EX_WITH_SEND_WITH_INV)
		ex->wr_send_inv = srx_wr_send_inv;
	if (flags & IBV_QP_EX_WITH_ATOMIC_WRITE)
		ex->wr_atomic_write = srx_wr_atomic_write;
	if (flags & IBV_QP_EX_WITH_BIND_MW)
		ex->wr_bind_mw = srx_wr_bind_mw;

	ex->wr_set_sge = srx_wr_set_sge;
	ex->wr_set_sge_list = srx_wr_set_sge_list;
	ex->wr_set_inline_data = srx_wr_set_inline_data;
	ex->wr_set_inline_data_list = srx_wr_set_inline_data_list;
	ex->wr_set_ud_addr = srx_wr_set_ud_addr;
	ex->wr_set_xrc_srqn = srx_wr_set_xrc_srqn;
	ex->wr_start = srx_wr_start;
	ex->wr_complete = srx_wr_complete;
	ex->wr_abort = srx_wr_abort;
}
