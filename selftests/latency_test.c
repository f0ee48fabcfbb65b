// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * How long srx keeps a CPU from a task that wants it.
 *
 * Debian's kernel has no irqsoff tracer, so this measures what such a
 * section costs others: a SCHED_FIFO thread, pinned to the same CPU as a
 * hostile thread, sleeps 1 ms at a time (an hrtimer, an interrupt) and
 * records how late it wakes. Interrupts off, or a kernel loop without a
 * resched point (the kernel is PREEMPT_VOLUNTARY), delay it by the length
 * of the section.
 *
 * The hostile thread makes resize as costly as it gets: a CQ of max_cqe
 * entries (128 MiB of ring) whose consumer index it sets one ring behind
 * the producer, so that every commit moves max_cqe CQEs, and then
 * PREPAREs and COMMITs resizes to max_cqe with raw write() commands (the
 * kernel carries the consumer index over, so each commit moves them all
 * again). A commit's duration is what moving 128 MiB costs here; the
 * wake-up latency during a commit must stay a small part of it. (The
 * latency during a PREPARE, which allocates 128 MiB, is logged too.)
 * Comparing the two, not an absolute bound, keeps the test meaningful on
 * a loaded TCG guest, where everything is slow and host scheduling adds
 * its own milliseconds of noise: the median over several rounds is used
 * for both.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

#define LAT_ROUNDS 7
#define LAT_PERIOD_NS 1000000ll
/* The median wake-up latency must stay below this part of a commit's time. */
#define LAT_FRACTION 4

struct lat_waker {
	int cpu;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool started;
	_Atomic int64_t max_ns;	/* worst lateness since the last reset */
	int err;
};

static int64_t ts_ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000ll + ts->tv_nsec;
}

static void ns_ts(int64_t ns, struct timespec *ts)
{
	ts->tv_sec = ns / 1000000000ll;
	ts->tv_nsec = ns % 1000000000ll;
}

static int pin(pthread_t thread, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(thread, sizeof(set), &set);
}

static void *lat_waker_fn(void *arg)
{
	struct sched_param sp = { .sched_priority = 50 };
	struct lat_waker *w = arg;
	struct timespec ts;
	int64_t next, now, late;

	w->err = pin(pthread_self(), w->cpu);
	if (!w->err)
		w->err = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	atomic_store(&w->started, true);
	if (w->err)
		return NULL;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	next = ts_ns(&ts);
	while (!atomic_load(&w->stop)) {
		next += LAT_PERIOD_NS;
		ns_ts(next, &ts);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = ts_ns(&ts);
		late = now - next;
		if (late > atomic_load(&w->max_ns))
			atomic_store(&w->max_ns, late);
		if (late > LAT_PERIOD_NS)
			next = now;	/* count a stall once, not its backlog */
	}
	return NULL;
}

/* One resize step through write(), as libsrx sends it; 0 or an errno. */
static int raw_resize(struct ibv_cq *cq, uint32_t cqe, uint32_t op)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_resize_cq cmd;
		struct srx_resize_cq_cmd drv;
	} req;
	struct {
		struct ib_uverbs_resize_cq_resp resp;
		struct srx_resize_cq_resp drv;
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_RESIZE_CQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.cq_handle = cq->handle;
	req.cmd.cqe = cqe;
	req.drv.op = op;
	if (write(cq->context->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

FIXTURE(latency) {
	struct ibv_context *ctx;
	struct ibv_cq *cq;
	struct lat_waker w;
	bool waker;
};

FIXTURE_SETUP(latency)
{
	memset(&self->w, 0, sizeof(self->w));
}

FIXTURE_TEARDOWN(latency)
{
	if (self->waker) {
		atomic_store(&self->w.stop, true);
		pthread_join(self->w.thread, NULL);
	}
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F_TIMEOUT(latency, max_size_resize_keeps_the_cpu, 280)
{
	struct srx_test_map before[16], after[16], added[1] = { { 0 } };
	int64_t lat[LAT_ROUNDS], commit[LAT_ROUNDS], prep_lat, t0, t1, t2;
	struct ibv_device_attr dev;
	struct srx_cq_ctrl *ctrl;
	uint32_t entries;
	int nb, na, cpu, i, ret;

	if (!srx_test_is_srx())
		SKIP(return, "srx-specific (device %s)", srx_test_dev_name());
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &dev));

	nb = srx_test_maps(before, 16);
	self->cq = ibv_create_cq(self->ctx, dev.max_cqe, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq) TH_LOG("CQ of %d: %s", dev.max_cqe,
					 strerror(errno));
	na = srx_test_maps(after, 16);
	ASSERT_EQ(1, srx_test_map_new(before, nb, after, na, added, 1));
	ctrl = (struct srx_cq_ctrl *)added[0].start;
	entries = self->cq->cqe;
	ASSERT_EQ(0u, entries & (entries - 1));
	/* Every CQE "pending": an index no honest consumer writes, but valid. */
	ctrl->cons = (uint32_t)(ctrl->prod - entries);

	/* The hostile thread (this one) and the waker share the last CPU. */
	cpu = sysconf(_SC_NPROCESSORS_ONLN) - 1;
	ASSERT_EQ(0, pin(pthread_self(), cpu));
	self->w.cpu = cpu;
	ASSERT_EQ(0, pthread_create(&self->w.thread, NULL, lat_waker_fn,
				    &self->w));
	self->waker = true;
	while (!atomic_load(&self->w.started))
		usleep(1000);
	ASSERT_EQ(0, self->w.err) TH_LOG("SCHED_FIFO on CPU %d: %s", cpu,
					 strerror(self->w.err));
	usleep(20000);

	for (i = 0; i < LAT_ROUNDS; i++) {
		atomic_store(&self->w.max_ns, 0);
		t0 = srx_test_now_ns();
		ret = raw_resize(self->cq, entries, SRX_RESIZE_PREPARE);
		ASSERT_EQ(0, ret) TH_LOG("PREPARE: %s", strerror(ret));
		/*
		 * A wake-up the PREPARE delayed has been recorded by now: this
		 * thread, on the same CPU, returned to user space after it.
		 */
		prep_lat = atomic_exchange(&self->w.max_ns, 0);
		t1 = srx_test_now_ns();
		ret = raw_resize(self->cq, entries, SRX_RESIZE_COMMIT);
		ASSERT_EQ(0, ret) TH_LOG("COMMIT: %s", strerror(ret));
		t2 = srx_test_now_ns();
		usleep(5000);	/* let the waker see the end of the commit */
		lat[i] = atomic_load(&self->w.max_ns);
		commit[i] = t2 - t1;
		TH_LOG("round %d: prepare %.1f ms (worst wake-up latency %.2f ms), commit %.1f ms (%.2f ms)",
		       i, (t1 - t0) / 1e6, prep_lat / 1e6, (t2 - t1) / 1e6,
		       lat[i] / 1e6);
	}
	qsort(lat, LAT_ROUNDS, sizeof(lat[0]), cmp_i64);
	qsort(commit, LAT_ROUNDS, sizeof(commit[0]), cmp_i64);
	TH_LOG("median: commit %.1f ms, worst wake-up latency during it %.2f ms (bound: %.1f ms)",
	       commit[LAT_ROUNDS / 2] / 1e6, lat[LAT_ROUNDS / 2] / 1e6,
	       commit[LAT_ROUNDS / 2] / LAT_FRACTION / 1e6);
	EXPECT_LT(lat[LAT_ROUNDS / 2], commit[LAT_ROUNDS / 2] / LAT_FRACTION);
}

TEST_HARNESS_MAIN
