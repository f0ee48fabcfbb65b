// SPDX-License-Identifier: GPL-2.0
/*
 * srx_kconsumer_test - srx as a kernel ULP sees it.
 *
 * Loaded by selftests/kernel_consumer_test.sh. Its init registers an IB
 * client; on the device named by the dev parameter (default srx0) the
 * client's add callback creates a PD, a CQ and an RC QP the way a kernel
 * ULP does, runs the checks below and destroys everything. Each check logs
 * "srx_kconsumer_test: ok|not ok N - what"; init fails with EINVAL if any
 * check failed and ENODEV if the device was not found, so insmod's status
 * is the verdict and the log says why. Unloading does nothing.
 *
 * Checks (the QP is in ERR, where srx completes every post as flushed):
 *  - an inline send of exactly max_inline bytes over two SGEs is accepted
 *    and completes once, flushed;
 *  - one byte more is refused with EINVAL and bad_wr pointing at it;
 *  - SGE lengths whose sum wraps a u32 to a small value (0xffffff00 +
 *    0x200) are refused with EINVAL: summed in 32 bits, the sum would pass
 *    the max_inline check and the copy would run 4 GiB past the WQE. It
 *    runs last because on a kernel with that bug it oopses (the copy hits
 *    the guard page after the ring): the checks before it are logged
 *    first.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

static char *dev = "srx0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test");

static int checks, failures, found;

static void kc_check(bool ok, const char *what)
{
	checks++;
	if (!ok)
		failures++;
	pr_info("srx_kconsumer_test: %s %d - %s\n", ok ? "ok" : "not ok",
		checks, what);
}

static void kc_comp(struct ib_cq *cq, void *ctx)
{
}

static int kc_modify(struct ib_qp *qp, enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };
	int mask = IB_QP_STATE;

	if (state == IB_QPS_INIT) {
		attr.pkey_index = 0;
		attr.port_num = 1;
		attr.qp_access_flags = 0;
		mask |= IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
	}
	return ib_modify_qp(qp, &attr, mask);
}

/* Post one inline SEND of two SGEs; returns post_send's result. */
static int kc_post_inline(struct ib_qp *qp, u64 wr_id, u8 *buf, u32 len0,
			  u32 len1, bool *bad_is_wr)
{
	const struct ib_send_wr *bad = NULL;
	struct ib_sge sge[2] = {
		{ .addr = (uintptr_t)buf, .length = len0 },
		{ .addr = (uintptr_t)buf, .length = len1 },
	};
	struct ib_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = 2,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_INLINE | IB_SEND_SIGNALED,
	};
	int ret = ib_post_send(qp, &wr, &bad);

	*bad_is_wr = bad == &wr;
	return ret;
}

static void kc_run(struct ib_device *ibdev)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 16 };
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 2, .max_recv_sge = 1,
			 .max_inline_data = 256 },
	};
	struct ib_wc wc[4];
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	bool bad_is_wr;
	u32 max_inline;
	u8 *buf;
	int ret;

	/* Larger than any copy can read before it overruns a one-page ring. */
	buf = kzalloc(2 * PAGE_SIZE, GFP_KERNEL);
	if (!buf) {
		kc_check(false, "allocate the source buffer");
		return;
	}
	pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(pd)) {
		kc_check(false, "allocate a PD");
		goto err_free_buf;
	}
	cq = ib_create_cq(ibdev, kc_comp, NULL, NULL, &cq_attr);
	if (IS_ERR(cq)) {
		kc_check(false, "create a CQ");
		goto err_dealloc_pd;
	}
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (IS_ERR(qp)) {
		kc_check(false, "create an RC QP");
		goto err_destroy_cq;
	}
	max_inline = init.cap.max_inline_data;
	kc_check(max_inline >= 256 && max_inline < 0x100000,
		 "the QP holds the inline data asked for");

	ret = kc_modify(qp, IB_QPS_INIT);
	if (!ret)
		ret = kc_modify(qp, IB_QPS_ERR);
	kc_check(!ret, "RESET -> INIT -> ERR");
	if (ret)
		goto err_destroy_qp;

	ret = kc_post_inline(qp, 1, buf, max_inline / 2,
			     max_inline - max_inline / 2, &bad_is_wr);
	kc_check(!ret, "an inline send of exactly max_inline bytes is accepted");
	ret = ib_poll_cq(cq, 4, wc);
	kc_check(ret == 1 && wc[0].wr_id == 1 &&
		 wc[0].status == IB_WC_WR_FLUSH_ERR,
		 "it completes once, flushed");

	ret = kc_post_inline(qp, 2, buf, max_inline / 2,
			     max_inline - max_inline / 2 + 1, &bad_is_wr);
	kc_check(ret == -EINVAL && bad_is_wr,
		 "max_inline + 1 bytes: EINVAL, bad_wr is the request");

	pr_info("srx_kconsumer_test: SGE lengths 0xffffff00 + 0x200 (wrap to 0x100 in 32 bits)\n");
	ret = kc_post_inline(qp, 3, buf, 0xffffff00, 0x200, &bad_is_wr);
	kc_check(ret == -EINVAL && bad_is_wr,
		 "lengths that wrap a u32: EINVAL, bad_wr is the request");

	ret = ib_poll_cq(cq, 4, wc);
	kc_check(ret == 0, "the refused sends completed nothing");

err_destroy_qp:
	ib_destroy_qp(qp);
err_destroy_cq:
	ib_destroy_cq(cq);
err_dealloc_pd:
	ib_dealloc_pd(pd);
err_free_buf:
	kfree(buf);
}

/* Runs the checks on the named device; never keeps client data. */
static int kc_add(struct ib_device *ibdev)
{
	if (strcmp(dev_name(&ibdev->dev), dev))
		return -EOPNOTSUPP;
	found = 1;
	kc_run(ibdev);
	return -EOPNOTSUPP;
}

static void kc_remove(struct ib_device *ibdev, void *client_data)
{
}

static struct ib_client kc_client = {
	.name = "srx_kconsumer_test",
	.add = kc_add,
	.remove = kc_remove,
};

static int __init srx_kconsumer_test_init(void)
{
	int ret;

	ret = ib_register_client(&kc_client);
	if (ret)
		return ret;
	ib_unregister_client(&kc_client);
	if (!found) {
		pr_info("srx_kconsumer_test: no device %s\n", dev);
		return -ENODEV;
	}
	pr_info("srx_kconsumer_test: %d checks, %d failed\n", checks, failures);
	return failures ? -EINVAL : 0;
}

static void __exit srx_kconsumer_test_exit(void)
{
}

module_init(srx_kconsumer_test_init);
module_exit(srx_kconsumer_test_exit);

MODULE_DESCRIPTION("srx selftest: a kernel consumer's posts, checked from inside the kernel");
MODULE_LICENSE("GPL");
