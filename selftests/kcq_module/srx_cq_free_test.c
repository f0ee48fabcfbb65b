// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srx_cq_free_test - ib_free_cq() of a softirq-polled CQ while the core's
 * poll handler is still re-arming it: the regression test of kernel/cq.c's
 * synchronize_rcu() in srx_destroy_cq().
 *
 * ib_poll_handler() (drivers/infiniband/core/cq.c, 6.1 and 6.12) releases
 * the CQ's irq_poll (irq_poll_complete()) and only then re-arms the CQ
 * with ib_req_notify_cq(), which calls srx_req_notify_cq(). ib_free_cq()
 * waits for the irq_poll only, so without srx's wait it freed the CQ
 * under the handler: a 6.12 CI run panicked so (srp_test, ib_srp's
 * reconnects), after a vCPU was stopped in between.
 *
 * This module opens that window on demand: a kprobe on srx_req_notify_cq()
 * holds the handler there, in softirq, for DELAY_MS. A kthread on one CPU
 * runs the handler (the CQ's completion handler, called as srx calls it
 * when a completion event is due, with bottom halves off so the softirq
 * runs as they come back on); a kthread on another CPU calls ib_free_cq()
 * as soon as the handler is held. The handler, once let go, must find
 * that ib_free_cq() has not returned. Loading fails with EIO if it has
 * (the CQ was freed under it; a debug kernel also reports the use after
 * free) or the handler was never held, with ENODEV without two online
 * CPUs, with EOPNOTSUPP in a kernel without kprobes (make check-debug's
 * allnoconfig-based one), and succeeds otherwise, leaving nothing behind
 * but the module.
 * selftests/kcq_test.sh loads and unloads it. The device is the dev
 * parameter.
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <rdma/ib_verbs.h>

#define CQF_DELAY_MS 500
#define CQF_TIMEOUT_S 30

static char *dev = "srx0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "RDMA device to test (default srx0)");

enum { CQF_IDLE, CQF_HELD, CQF_LET_GO };

static struct {
	struct ib_cq *cq;	/* the CQ under test, until ib_free_cq() */
	atomic_t phase;		/* CQF_*: the handler's, set by the kprobe */
	atomic_t freed;		/* ib_free_cq() has returned */
	bool freed_under;	/* the kprobe found the CQ freed under it */
	struct completion run_done, free_done;
} cqf;

/* Holds the poll handler's re-arm of the CQ under test (softirq only). */
static int cqf_pre(struct kprobe *p, struct pt_regs *regs)
{
	void *cq = (void *)regs_get_kernel_argument(regs, 0);

	if (cq != READ_ONCE(cqf.cq) || !in_serving_softirq() ||
	    atomic_cmpxchg(&cqf.phase, CQF_IDLE, CQF_HELD) != CQF_IDLE)
		return 0;
	mdelay(CQF_DELAY_MS);
	if (atomic_read(&cqf.freed))
		cqf.freed_under = true;
	atomic_set(&cqf.phase, CQF_LET_GO);
	return 0;
}

static struct kprobe cqf_kp = {
	.symbol_name = "srx_req_notify_cq",
	.pre_handler = cqf_pre,
};

/* Runs the CQ's poll handler here, as a completion event would. */
static int cqf_run(void *arg)
{
	struct ib_cq *cq = arg;

	local_bh_disable();
	cq->comp_handler(cq, cq->cq_context);
	local_bh_enable();	/* the softirq, with the handler, runs here */
	complete(&cqf.run_done);
	return 0;
}

/* ib_free_cq() as soon as the handler is held in its re-arm. */
static int cqf_free(void *arg)
{
	struct ib_cq *cq = arg;
	unsigned long deadline = jiffies + CQF_TIMEOUT_S * HZ;

	while (atomic_read(&cqf.phase) == CQF_IDLE &&
	       time_before(jiffies, deadline))
		usleep_range(100, 200);
	if (atomic_read(&cqf.phase) == CQF_HELD)
		pr_info("srx_cq_free_test: ib_free_cq() while the handler re-arms\n");
	ib_free_cq(cq);
	atomic_set(&cqf.freed, 1);
	complete(&cqf.free_done);
	return 0;
}

static int __init srx_cq_free_test_init(void)
{
	struct task_struct *runner, *freer;
	struct ib_device *ibdev;
	struct ib_cq *cq;
	int cpu_run, cpu_free, ret;

	cpu_run = cpumask_first(cpu_online_mask);
	cpu_free = cpumask_next(cpu_run, cpu_online_mask);
	if (cpu_free >= nr_cpu_ids) {
		pr_err("srx_cq_free_test: needs two online CPUs\n");
		return -ENODEV;
	}

	ibdev = ib_device_get_by_name(dev, RDMA_DRIVER_UNKNOWN);
	if (!ibdev) {
		pr_err("srx_cq_free_test: no device %s\n", dev);
		return -ENODEV;
	}
	cq = ib_alloc_cq(ibdev, NULL, 16, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		pr_err("srx_cq_free_test: ib_alloc_cq: %d\n", ret);
		goto err_dev;
	}

	atomic_set(&cqf.phase, CQF_IDLE);
	atomic_set(&cqf.freed, 0);
	cqf.freed_under = false;
	init_completion(&cqf.run_done);
	init_completion(&cqf.free_done);
	WRITE_ONCE(cqf.cq, cq);
	ret = register_kprobe(&cqf_kp);
	if (ret) {
		pr_err("srx_cq_free_test: kprobe on srx_req_notify_cq: %d\n",
		       ret);
		goto err_cq;
	}

	freer = kthread_create(cqf_free, cq, "srx_cqf_free");
	if (IS_ERR(freer)) {
		ret = PTR_ERR(freer);
		goto err_kprobe;
	}
	runner = kthread_create(cqf_run, cq, "srx_cqf_run");
	if (IS_ERR(runner)) {
		/* The freer frees the CQ once it runs: let it, and wait. */
		ret = PTR_ERR(runner);
		atomic_set(&cqf.phase, CQF_LET_GO);
		wake_up_process(freer);
		wait_for_completion(&cqf.free_done);
		goto err_freed;
	}
	kthread_bind(freer, cpu_free);
	kthread_bind(runner, cpu_run);
	wake_up_process(freer);
	wake_up_process(runner);
	/* Both end on their own: the freer within CQF_TIMEOUT_S. */
	wait_for_completion(&cqf.run_done);
	wait_for_completion(&cqf.free_done);

	if (atomic_read(&cqf.phase) != CQF_LET_GO) {
		pr_err("srx_cq_free_test: the handler never reached srx_req_notify_cq\n");
		ret = -EIO;
	} else if (cqf.freed_under) {
		pr_err("srx_cq_free_test: ib_free_cq() returned while the poll handler was still re-arming the CQ\n");
		ret = -EIO;
	} else {
		pr_info("srx_cq_free_test: ib_free_cq() waited for the poll handler\n");
		ret = 0;
	}
err_freed:
	unregister_kprobe(&cqf_kp);
	WRITE_ONCE(cqf.cq, NULL);
	ib_device_put(ibdev);
	return ret;

err_kprobe:
	unregister_kprobe(&cqf_kp);
err_cq:
	WRITE_ONCE(cqf.cq, NULL);
	ib_free_cq(cq);
err_dev:
	ib_device_put(ibdev);
	return ret;
}

/* Everything went in init. */
static void __exit srx_cq_free_test_exit(void)
{
}

module_init(srx_cq_free_test_init);
module_exit(srx_cq_free_test_exit);

MODULE_DESCRIPTION("srx selftest: ib_free_cq() under the core's softirq poll handler");
MODULE_LICENSE("Dual BSD/GPL");
