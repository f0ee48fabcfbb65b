// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srx_kcq_test - resize a kernel CQ while it is produced into and polled.
 *
 * A kernel CQ is one no process can reach: the RDMA core's ULPs create it
 * and poll it with ib_poll_cq(). Its resize (ib_resize_cq()) moves the
 * pending CQEs in batches while producers keep posting to the new ring and
 * ib_poll_cq() takes the CQEs not yet moved from the old one (kernel/cq.c,
 * srx_cq_switch_ring()). This module checks that from inside the kernel:
 *  - a producer thread posts receives with increasing wr_ids to one RC QP,
 *    the first chunk in INIT before the move to ERR flushes it, the rest
 *    into the QP in ERR, where each post flushes them into the CQ
 *    (a RESET would also take away what the poller has not taken yet:
 *    kernel/cq.c, srx_cq_clean_qp()); it keeps at most WINDOW of them
 *    outstanding;
 *  - a poller thread takes them with ib_poll_cq() and checks that each is
 *    a flush of the next wr_id: none lost, none twice, none out of order;
 *  - the loading thread resizes the CQ between two sizes above WINDOW the
 *    whole time, so that most resizes move more than one batch.
 * Loading succeeds when all TOTAL completions arrived in order with at
 * least MIN_RESIZES resizes meanwhile, and fails with EIO otherwise. The
 * producer keeps pace with the resizer (a chunk waits for its share of the
 * resizes), so the count is reached by work, not by how the host schedules
 * three threads on two vCPUs: a CI run on a loaded host once got 6;
 * selftests/kcq_test.sh loads it. The device is the srx_kcq_test.dev
 * parameter (default srx0).
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <rdma/ib_verbs.h>

#define KCQ_TOTAL 60000u	/* completions the test produces */
#define KCQ_CHUNK 1000u		/* receives per round, the RQ's size */
#define KCQ_WINDOW 3000u	/* completions outstanding at most */
#define KCQ_MIN_RESIZES 10
#define KCQ_TIMEOUT_S 120

static char *dev = "srx0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test (default srx0)");

static const int kcq_sizes[] = { 4096, 16384, 3500, 8192 };

struct kcq {
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	atomic_t produced;
	atomic_t consumed;
	atomic_t resizes;	/* written by the loading thread */
	atomic_t failed;	/* first failure's line, 0 while none */
	struct completion producer_done;
	struct completion poller_done;
};

#define KCQ_FAIL(k, fmt, ...) do { \
	pr_err("srx_kcq_test: " fmt "\n", ##__VA_ARGS__); \
	atomic_cmpxchg(&(k)->failed, 0, __LINE__); \
} while (0)

static bool kcq_stop(struct kcq *k)
{
	return atomic_read(&k->failed) ||
	       atomic_read(&k->consumed) >= KCQ_TOTAL;
}

static int kcq_move(struct ib_qp *qp, enum ib_qp_state state)
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

/* Resizes that must have happened before completions up to @upto exist. */
static int kcq_resizes_due(u32 upto)
{
	return DIV_ROUND_UP(upto * KCQ_MIN_RESIZES, KCQ_TOTAL);
}

/*
 * Post receive @wr_id into the QP in ERR, which flushes it. Should the
 * receive queue be full all the same (a flush deferred to srx's send
 * work), wait for that, up to ten seconds.
 */
static int kcq_post_in_err(struct kcq *k, u64 wr_id)
{
	unsigned long deadline = jiffies + 10 * HZ;
	struct ib_recv_wr wr = { .wr_id = wr_id };
	const struct ib_recv_wr *bad;
	int ret;

	for (;;) {
		ret = ib_post_recv(k->qp, &wr, &bad);
		if (ret != -ENOMEM || time_after(jiffies, deadline) ||
		    atomic_read(&k->failed))
			return ret;
		usleep_range(50, 100);
	}
}

static int kcq_producer(void *arg)
{
	struct kcq *k = arg;
	u32 next = 0, i, n;
	int ret;

	while (next < KCQ_TOTAL && !atomic_read(&k->failed)) {
		n = min(KCQ_CHUNK, KCQ_TOTAL - next);
		if (next + n - atomic_read(&k->consumed) > KCQ_WINDOW ||
		    atomic_read(&k->resizes) < kcq_resizes_due(next + n)) {
			usleep_range(200, 400);
			continue;
		}
		ret = next ? 0 : kcq_move(k->qp, IB_QPS_INIT);
		for (i = 0; !ret && i < n; i++) {
			struct ib_recv_wr wr = { .wr_id = next + i };
			const struct ib_recv_wr *bad;

			ret = next ? kcq_post_in_err(k, next + i) :
				     ib_post_recv(k->qp, &wr, &bad);
		}
		if (!ret && !next)
			ret = kcq_move(k->qp, IB_QPS_ERR);
		if (ret) {
			KCQ_FAIL(k, "producing %u..%u: %d", next, next + n, ret);
			break;
		}
		next += n;
		atomic_set(&k->produced, next);
		cond_resched();
	}
	/* The module may go as soon as this completes: exit in one step. */
	kthread_complete_and_exit(&k->producer_done, 0);
}

static int kcq_poller(void *arg)
{
	struct kcq *k = arg;
	struct ib_wc wc[8];	/* 72 bytes each: 16 passed 1 KiB of stack */
	u32 expect = 0;
	int n, i;

	while (!kcq_stop(k)) {
		n = ib_poll_cq(k->cq, ARRAY_SIZE(wc), wc);
		if (n < 0) {
			KCQ_FAIL(k, "ib_poll_cq: %d", n);
			break;
		}
		for (i = 0; i < n; i++, expect++) {
			if (wc[i].wr_id != expect ||
			    wc[i].status != IB_WC_WR_FLUSH_ERR ||
			    wc[i].qp != k->qp) {
				KCQ_FAIL(k, "completion %u: wr_id %llu status %d",
					 expect, wc[i].wr_id, wc[i].status);
				break;
			}
		}
		atomic_set(&k->consumed, expect);
		if (!n)
			usleep_range(50, 100);
	}
	kthread_complete_and_exit(&k->poller_done, 0);
}

/* Only an overrun raises a CQ event: the window should prevent one. */
static void kcq_cq_event(struct ib_event *ev, void *ctx)
{
	KCQ_FAIL((struct kcq *)ctx, "CQ event %d", ev->event);
}

static void kcq_comp(struct ib_cq *cq, void *ctx)
{
}

static void kcq_qp_event(struct ib_event *ev, void *ctx)
{
}

static int kcq_run(struct kcq *k)
{
	struct ib_cq_init_attr cq_attr = { .cqe = kcq_sizes[0] };
	struct ib_qp_init_attr qp_attr = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_ALL_WR,
		.cap = { .max_send_wr = 1, .max_recv_wr = KCQ_CHUNK,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct task_struct *producer, *poller;
	unsigned long deadline;
	int resizes = 0, ret;

	k->pd = ib_alloc_pd(k->ibdev, 0);
	if (IS_ERR(k->pd))
		return PTR_ERR(k->pd);
	k->cq = ib_create_cq(k->ibdev, kcq_comp, kcq_cq_event, k, &cq_attr);
	if (IS_ERR(k->cq)) {
		ret = PTR_ERR(k->cq);
		goto err_dealloc_pd;
	}
	qp_attr.send_cq = k->cq;
	qp_attr.recv_cq = k->cq;
	qp_attr.event_handler = kcq_qp_event;
	qp_attr.qp_context = k;
	k->qp = ib_create_qp(k->pd, &qp_attr);
	if (IS_ERR(k->qp)) {
		ret = PTR_ERR(k->qp);
		goto err_destroy_cq;
	}

	init_completion(&k->producer_done);
	init_completion(&k->poller_done);
	producer = kthread_run(kcq_producer, k, "srx_kcq_prod");
	if (IS_ERR(producer)) {
		ret = PTR_ERR(producer);
		goto err_destroy_qp;
	}
	poller = kthread_run(kcq_poller, k, "srx_kcq_poll");
	if (IS_ERR(poller)) {
		atomic_cmpxchg(&k->failed, 0, __LINE__);
		wait_for_completion(&k->producer_done);
		ret = PTR_ERR(poller);
		goto err_destroy_qp;
	}

	deadline = jiffies + KCQ_TIMEOUT_S * HZ;
	while (!kcq_stop(k)) {
		if (time_after(jiffies, deadline)) {
			KCQ_FAIL(k, "timed out: %d produced, %d consumed",
				 atomic_read(&k->produced),
				 atomic_read(&k->consumed));
			break;
		}
		ret = ib_resize_cq(k->cq, kcq_sizes[++resizes %
						   ARRAY_SIZE(kcq_sizes)]);
		if (ret) {
			KCQ_FAIL(k, "resize %d to %d: %d", resizes,
				 kcq_sizes[resizes % ARRAY_SIZE(kcq_sizes)],
				 ret);
			break;
		}
		atomic_set(&k->resizes, resizes);
		cond_resched();
	}
	wait_for_completion(&k->producer_done);
	wait_for_completion(&k->poller_done);

	pr_info("srx_kcq_test: %s: %d completions in order across %d resizes\n",
		dev, atomic_read(&k->consumed), resizes);
	if (!atomic_read(&k->failed) && resizes < KCQ_MIN_RESIZES)
		KCQ_FAIL(k, "only %d resizes", resizes);
	ret = atomic_read(&k->failed) ? -EIO : 0;

err_destroy_qp:
	ib_destroy_qp(k->qp);
err_destroy_cq:
	ib_destroy_cq(k->cq);
err_dealloc_pd:
	ib_dealloc_pd(k->pd);
	return ret;
}

static int __init srx_kcq_test_init(void)
{
	struct kcq *k;
	int ret;

	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	k->ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!k->ibdev) {
		pr_err("srx_kcq_test: no device %s\n", dev);
		kfree(k);
		return -ENODEV;
	}
	ret = kcq_run(k);
	ib_device_put(k->ibdev);
	kfree(k);
	return ret;
}

static void __exit srx_kcq_test_exit(void)
{
}

module_init(srx_kcq_test_init);
module_exit(srx_kcq_test_exit);

MODULE_DESCRIPTION("srx selftest: resize a kernel CQ under a producer and ib_poll_cq()");
MODULE_LICENSE("Dual BSD/GPL");
