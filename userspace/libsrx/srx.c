// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libsrx: the rdma-core provider of srx devices.
 *
 * This file: registration with libibverbs, device and context, queries,
 * protection domains and memory regions. CQs are in cq.c (the lock-free
 * fast path), QPs in qp.c, their ibv_wr_* API in wr.c, SRQs in srq.c. Everything that
 * creates or destroys a kernel object goes through libibverbs' ibv_cmd_*
 * helpers, which use the uverbs ioctl interface on the kernels srx
 * supports.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cqe_wc.h"
#include "srx.h"

static int srx_query_device_ex(struct ibv_context *ctx,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	return ibv_cmd_query_device_any(ctx, input, attr, attr_size, NULL, NULL);
}

static int srx_query_port(struct ibv_context *ctx, uint8_t port,
			  struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(ctx, port, attr, &cmd, sizeof(cmd));
}

static struct ibv_pd *srx_alloc_pd(struct ibv_context *ctx)
{
	struct ib_uverbs_alloc_pd_resp resp;
	struct ibv_alloc_pd cmd;
	struct ibv_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;

	ret = ibv_cmd_alloc_pd(ctx, pd, &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return pd;
}

static int srx_dealloc_pd(struct ibv_pd *pd)
{
	int ret = ibv_cmd_dealloc_pd(pd);

	if (!ret)
		free(pd);
	return ret;
}

static struct ibv_mr *srx_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp;
	struct ibv_reg_mr cmd;
	struct verbs_mr *vmr;
	int ret;

	vmr = calloc(1, sizeof(*vmr));
	if (!vmr)
		return NULL;

	ret = ibv_cmd_reg_mr(pd, addr, length, hca_va, access, vmr, &cmd,
			     sizeof(cmd), &resp, sizeof(resp));
	if (ret) {
		free(vmr);
		errno = ret;
		return NULL;
	}
	return &vmr->ibv_mr;
}

/*
 * The key stays (srx.ko swaps the MR under it, kernel/mr.c); the command
 * returns it anyway, as it may change on other devices. The IOVA follows
 * the address, as ibv_reg_mr()'s does.
 */
static int srx_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct ibv_rereg_mr cmd;

	return ibv_cmd_rereg_mr(vmr, flags, addr, length, (uintptr_t)addr,
				access, pd, &cmd, sizeof(cmd), &resp,
				sizeof(resp));
}

static int srx_dereg_mr(struct verbs_mr *vmr)
{
	int ret = ibv_cmd_dereg_mr(vmr);

	if (!ret)
		free(vmr);
	return ret;
}

/* Memory windows live in srx.ko (kernel/mw.c); libsrx holds the handle. */
static struct ibv_mw *srx_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp;
	struct ibv_alloc_mw cmd;
	struct ibv_mw *mw;
	int ret;

	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return NULL;
	ret = ibv_cmd_alloc_mw(pd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	return mw;
}

static int srx_dealloc_mw(struct ibv_mw *mw)
{
	int ret = ibv_cmd_dealloc_mw(mw);

	if (!ret)
		free(mw);
	return ret;
}

/*
 * ibv_bind_mw(3) of a type 1 window is a BIND_MW work request, as rdma-core
 * says of its verb and as rxe's provider does it; the window's key moves
 * on by one key byte (ibv_inc_rkey()) once it is posted, as the verb
 * promises (mw->rkey is the key the bind will give it).
 */
static int srx_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = {
			.mw = mw,
			.rkey = ibv_inc_rkey(mw->rkey),
			.bind_info = mw_bind->bind_info,
		},
	};
	struct ibv_send_wr *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	ret = srx_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

/*
 * What ibv_post_send() takes, from what the device reports: the rule of
 * srx.ko's srx_init_accepts() (kernel/device.c), so that a work request
 * the device does not announce is refused here (EINVAL, ibv_post_send(3))
 * and not left in the ring for the kernel to find. A feature turns on in
 * both by setting its attribute in srx.ko.
 */
static void srx_init_send_ops(struct srx_context *ctx,
			      const struct ibv_device_attr_ex *a)
{
	const uint64_t conn = 1u << IBV_QPT_RC | 1u << IBV_QPT_UC;
	const uint64_t all = conn | 1u << IBV_QPT_UD;
	bool atomic = a->orig_attr.atomic_cap != IBV_ATOMIC_NONE;
	bool mw = a->orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW;
	bool mem_mgt = a->orig_attr.device_cap_flags &
		       IBV_DEVICE_MEM_MGT_EXTENSIONS;
	bool atomic_write = a->device_cap_flags_ex & SRX_DEVICE_ATOMIC_WRITE;
	const struct {
		enum ibv_wr_opcode op;
		uint64_t qp_types;
		bool on;
	} ops[] = {
		{ IBV_WR_SEND, all, true },
		{ IBV_WR_SEND_WITH_IMM, all, true },
		{ IBV_WR_RDMA_WRITE, conn, true },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, conn, true },
		{ IBV_WR_RDMA_READ, 1u << IBV_QPT_RC, true },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 1u << IBV_QPT_RC, atomic },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 1u << IBV_QPT_RC, atomic },
		{ IBV_WR_SEND_WITH_INV, 1u << IBV_QPT_RC, mem_mgt },
		{ IBV_WR_LOCAL_INV, conn, mem_mgt },
		{ IBV_WR_BIND_MW, conn, mw },
		/* wr_atomic_write() only: srx_write_send_wqe() refuses it */
		{ IBV_WR_ATOMIC_WRITE, 1u << IBV_QPT_RC, atomic_write },
	};
	unsigned int i, t;

	memset(ctx->send_ops, 0, sizeof(ctx->send_ops));
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!ops[i].on)
			continue;
		for (t = 0; t <= IBV_QPT_UD; t++)
			if (ops[i].qp_types & (1u << t))
				ctx->send_ops[t] |= 1ull << ops[i].op;
	}
}

static void srx_free_context(struct ibv_context *ibctx)
{
	struct srx_context *ctx = to_sctx(ibctx);

	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
}

static const struct verbs_context_ops srx_ctx_ops = {
	.alloc_mw = srx_alloc_mw,
	.alloc_pd = srx_alloc_pd,
	.bind_mw = srx_bind_mw,
	/* The kernel does the work (mcast.c); no ring is involved. */
	.attach_mcast = ibv_cmd_attach_mcast,
	.create_ah = srx_create_ah,
	.create_cq = srx_create_cq,
	.create_cq_ex = srx_create_cq_ex,
	.create_qp = srx_create_qp,
	.create_qp_ex = srx_create_qp_ex,
	.create_srq = srx_create_srq,
	.dealloc_mw = srx_dealloc_mw,
	.dealloc_pd = srx_dealloc_pd,
	.destroy_ah = srx_destroy_ah,
	.dereg_mr = srx_dereg_mr,
	.destroy_cq = srx_destroy_cq,
	.destroy_qp = srx_destroy_qp,
	.destroy_srq = srx_destroy_srq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = srx_free_context,
	.modify_qp = srx_modify_qp,
	.modify_srq = srx_modify_srq,
	.poll_cq = srx_poll_cq,
	.post_recv = srx_post_recv,
	.post_send = srx_post_send,
	.post_srq_recv = srx_post_srq_recv,
	.query_device_ex = srx_query_device_ex,
	.query_port = srx_query_port,
	.query_qp = srx_query_qp,
	.query_srq = srx_query_srq,
	.reg_mr = srx_reg_mr,
	.rereg_mr = srx_rereg_mr,
	.req_notify_cq = srx_req_notify_cq,
	.resize_cq = srx_resize_cq,
};

static struct verbs_context *srx_alloc_context(struct ibv_device *ibdev,
					       int cmd_fd, void *private_data)
{
	struct usrx_get_context_resp resp = {};
	struct ibv_device_attr_ex attr = {};
	struct ibv_get_context cmd = {};
	struct srx_context *ctx;
	int ret;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, ibv_ctx,
					   SRX_DRIVER_ID);
	if (!ctx)
		return NULL;

	ret = ibv_cmd_get_context(&ctx->ibv_ctx, &cmd, sizeof(cmd),
				  &resp.ibv_resp, sizeof(resp));
	if (ret) {
		errno = ret;
		goto err_uninit;
	}

	/* A kernel whose rings this provider cannot read is refused here. */
	if (resp.drv.ring_format != SRX_RING_FORMAT ||
	    resp.drv.cqe_size != sizeof(struct srx_cqe)) {
		verbs_priv_log(&ctx->ibv_ctx, VERBS_LOG_ERR,
			       "srx.ko ring format %u (CQE %u bytes), libsrx wants %u (%zu): update both together\n",
			       resp.drv.ring_format, resp.drv.cqe_size,
			       SRX_RING_FORMAT, sizeof(struct srx_cqe));
		errno = EPROTONOSUPPORT;
		goto err_uninit;
	}
	ctx->max_cqe = resp.drv.max_cqe;

	ret = ibv_cmd_query_device_any(&ctx->ibv_ctx.context, NULL, &attr,
				       sizeof(attr), NULL, NULL);
	if (ret) {
		errno = ret;
		goto err_uninit;
	}
	srx_init_send_ops(ctx, &attr);

	/*
	 * Revoking a CQ's bias needs srx_membarrier(), which works only once
	 * the process registered for it. Where that is refused, thread-safe
	 * CQs are simply never biased.
	 */
	ctx->membarrier_ok = srx_membarrier_register();
	ctx->wc_conv = srx_wc_conv_pick();

	verbs_set_ops(&ctx->ibv_ctx, &srx_ctx_ops);
	return &ctx->ibv_ctx;

err_uninit:
	/*
	 * verbs_uninit_context() closes the context's file descriptors (in
	 * rdma-core 44 two close() calls and a free()), any of which may set
	 * errno: ibv_open_device() must still report the reason.
	 */
	ret = errno;
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

static struct verbs_device *srx_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct srx_device *dev = calloc(1, sizeof(*dev));

	return dev ? &dev->ibv_dev : NULL;
}

static void srx_uninit_device(struct verbs_device *vdev)
{
	free(VERBS_PRIV_CONTAINER(vdev, struct srx_device, ibv_dev));
}

/*
 * srx devices only, recognised by the private driver id srx.ko reports
 * (srx-abi.h), so no other provider binds them and libsrx binds nothing
 * else. The uverbs ABI version must match exactly.
 */
static const struct verbs_match_ent srx_match_table[] = {
	VERBS_PRIV_MATCH_DRIVER_ID(SRX_DRIVER_ID),
	VERBS_PRIV_MATCH_END,
};

static const struct verbs_device_ops srx_device_ops = {
	.name = "srx",
	.match_min_abi_version = SRX_UVERBS_ABI_VERSION,
	.match_max_abi_version = SRX_UVERBS_ABI_VERSION,
	.match_table = srx_match_table,
	.alloc_device = srx_alloc_device,
	.uninit_device = srx_uninit_device,
	.alloc_context = srx_alloc_context,
};

VERBS_PRIV_PROVIDER_REGISTER(srx_device_ops)
