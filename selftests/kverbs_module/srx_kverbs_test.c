// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srx_kverbs_test - what a kernel consumer of an srx device may post and
 * ask for agrees with what the device reports.
 *
 * selftests/kverbs_test.sh inserts it in the guest. As an ib_client it is
 * called for every registered device; on each srx device it creates a PD,
 * a CQ and an RC QP, and checks:
 *  - the QP takes remote atomic access (the IB CM sets it) and query_qp
 *    says it is granted exactly when atomic_cap is not IB_ATOMIC_NONE;
 *  - ib_post_send() takes a send and every opcode whose feature the device
 *    reports, and refuses every other one with -EINVAL and bad_wr at it;
 *  - IB_SEND_INLINE is taken on SEND and RDMA WRITE only.
 * Init fails (-EINVAL) if a check failed and -ENODEV without an srx
 * device, so insmod's status is the result; the log says which check.
 */
#include <linux/module.h>
#include <rdma/ib_verbs.h>
#include <rdma/srx-abi.h>

static int srx_kverbs_checked;
static int srx_kverbs_failed;

#define CHECK(cond, fmt, ...) do {					\
	if (!(cond)) {							\
		pr_err("srx_kverbs_test: %s: FAIL " fmt "\n",		\
		       dev_name(&dev->dev), ##__VA_ARGS__);		\
		srx_kverbs_failed++;					\
	}								\
} while (0)

union srx_kverbs_wr {
	struct ib_send_wr wr;
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
	struct ib_reg_wr reg;
	struct ib_ud_wr ud;
};

static void srx_kverbs_post(struct ib_device *dev, struct ib_qp *qp)
{
	const struct ib_device_attr *a = &dev->attrs;
	bool atomic = a->atomic_cap != IB_ATOMIC_NONE;
	bool masked = a->masked_atomic_cap != IB_ATOMIC_NONE;
	bool mw = a->device_cap_flags & IB_DEVICE_MEM_WINDOW;
	bool mem_mgt = a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS;
	const struct {
		const char *name;
		enum ib_wr_opcode op;
		bool reported;
		bool postable;	/* needs nothing this test lacks */
	} ops[] = {
		{ "SEND", IB_WR_SEND, true, true },
		{ "ATOMIC_CMP_AND_SWP", IB_WR_ATOMIC_CMP_AND_SWP, atomic, true },
		{ "ATOMIC_FETCH_AND_ADD", IB_WR_ATOMIC_FETCH_AND_ADD, atomic, true },
		{ "MASKED_ATOMIC_CMP_AND_SWP", IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		  masked, true },
		{ "MASKED_ATOMIC_FETCH_AND_ADD", IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
		  masked, true },
		{ "BIND_MW", IB_WR_BIND_MW, mw, false },
		{ "LOCAL_INV", IB_WR_LOCAL_INV, mem_mgt, false },
		{ "SEND_WITH_INV", IB_WR_SEND_WITH_INV, mem_mgt, false },
		{ "REG_MR", IB_WR_REG_MR, mem_mgt, false },
		/* iWARP only: never on a RoCE device */
		{ "RDMA_READ_WITH_INV", IB_WR_RDMA_READ_WITH_INV, false, true },
		{ "LSO (RC)", IB_WR_LSO, false, true },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		union srx_kverbs_wr w = {};
		const struct ib_send_wr *bad = NULL;
		int ret;

		if (ops[i].reported && !ops[i].postable)
			continue;
		w.wr.wr_id = i;
		w.wr.opcode = ops[i].op;
		ret = ib_post_send(qp, &w.wr, &bad);
		if (ops[i].reported) {
			CHECK(!ret, "%s: reported, post said %d", ops[i].name,
			      ret);
		} else {
			CHECK(ret == -EINVAL && bad == &w.wr,
			      "%s: not reported, post said %d, bad_wr %s",
			      ops[i].name, ret, bad == &w.wr ? "set" : "not set");
		}
	}
}

/*
 * IB_SEND_INLINE is for SEND and RDMA WRITE only: an RDMA READ or an
 * atomic that asks for it is -EINVAL with bad_wr at it, reported or not;
 * a SEND and an RDMA WRITE with it (and no data) are taken.
 */
static void srx_kverbs_post_inline(struct ib_device *dev, struct ib_qp *qp)
{
	const struct {
		const char *name;
		enum ib_wr_opcode op;
		bool ok;
	} ops[] = {
		{ "SEND", IB_WR_SEND, true },
		{ "RDMA_WRITE", IB_WR_RDMA_WRITE, true },
		{ "RDMA_READ", IB_WR_RDMA_READ, false },
		{ "ATOMIC_CMP_AND_SWP", IB_WR_ATOMIC_CMP_AND_SWP, false },
		{ "ATOMIC_FETCH_AND_ADD", IB_WR_ATOMIC_FETCH_AND_ADD, false },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		union srx_kverbs_wr w = {};
		const struct ib_send_wr *bad = NULL;
		int ret;

		w.wr.wr_id = 100 + i;
		w.wr.opcode = ops[i].op;
		w.wr.send_flags = IB_SEND_INLINE;
		ret = ib_post_send(qp, &w.wr, &bad);
		if (ops[i].ok) {
			CHECK(!ret, "%s with IB_SEND_INLINE: post said %d",
			      ops[i].name, ret);
		} else {
			CHECK(ret == -EINVAL && bad == &w.wr,
			      "%s with IB_SEND_INLINE: post said %d, bad_wr %s",
			      ops[i].name, ret,
			      bad == &w.wr ? "set" : "not set");
		}
	}
}

static int srx_kverbs_add(struct ib_device *dev)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 16, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT, .port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ |
				   IB_ACCESS_REMOTE_ATOMIC,
	};
	bool atomic = dev->attrs.atomic_cap != IB_ATOMIC_NONE;
	struct ib_qp_init_attr qinit;
	struct ib_qp_attr qattr;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	int ret;

	if (dev->ops.driver_id != SRX_DRIVER_ID)
		return -EOPNOTSUPP;	/* not ours to test: no client data */
	srx_kverbs_checked++;

	pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(pd)) {
		CHECK(0, "ib_alloc_pd: %ld", PTR_ERR(pd));
		return 0;
	}
	cq = ib_alloc_cq(dev, NULL, 32, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq)) {
		CHECK(0, "ib_alloc_cq: %ld", PTR_ERR(cq));
		goto err_pd;
	}
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ib_create_qp(pd, &init);
	if (IS_ERR(qp)) {
		CHECK(0, "ib_create_qp: %ld", PTR_ERR(qp));
		goto err_cq;
	}

	ret = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
				      IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	CHECK(!ret, "INIT with remote atomic access: %d", ret);
	ret = ib_query_qp(qp, &qattr, IB_QP_ACCESS_FLAGS, &qinit);
	CHECK(!ret, "query_qp: %d", ret);
	CHECK(!ret && !!(qattr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC) ==
		      atomic,
	      "remote atomic granted %d, atomic_cap %d",
	      !!(qattr.qp_access_flags & IB_ACCESS_REMOTE_ATOMIC),
	      dev->attrs.atomic_cap);

	/* ERR takes posts (they complete as flushed) without an address. */
	attr.qp_state = IB_QPS_ERR;
	ret = ib_modify_qp(qp, &attr, IB_QP_STATE);
	CHECK(!ret, "to ERR: %d", ret);
	if (!ret) {
		srx_kverbs_post(dev, qp);
		srx_kverbs_post_inline(dev, qp);
	}

	ib_destroy_qp(qp);
err_cq:
	ib_free_cq(cq);
err_pd:
	ib_dealloc_pd(pd);
	return 0;
}

static void srx_kverbs_remove(struct ib_device *dev, void *data)
{
}

static struct ib_client srx_kverbs_client = {
	.name = "srx_kverbs_test",
	.add = srx_kverbs_add,
	.remove = srx_kverbs_remove,
};

static int __init srx_kverbs_test_init(void)
{
	int ret;

	/* add() runs for every registered device before this returns. */
	ret = ib_register_client(&srx_kverbs_client);
	if (ret)
		return ret;
	ib_unregister_client(&srx_kverbs_client);

	pr_info("srx_kverbs_test: %d srx device(s) checked, %d check(s) failed\n",
		srx_kverbs_checked, srx_kverbs_failed);
	if (!srx_kverbs_checked)
		return -ENODEV;
	return srx_kverbs_failed ? -EINVAL : 0;
}

static void __exit srx_kverbs_test_exit(void)
{
}

module_init(srx_kverbs_test_init);
module_exit(srx_kverbs_test_exit);

MODULE_DESCRIPTION("srx selftest: kernel verbs agree with the device attributes");
MODULE_LICENSE("Dual BSD/GPL");
