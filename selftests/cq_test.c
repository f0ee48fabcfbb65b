// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The completion-queue contract, one test per statement of the man pages:
 * ibv_create_cq(3) and ibv_destroy_cq(3), ibv_create_cq_ex(3) with its
 * start_poll/next_poll/end_poll iterator, ibv_req_notify_cq(3) with
 * ibv_get_cq_event(3)/ibv_ack_cq_events(3), ibv_resize_cq(3), and what
 * ibv_poll_cq(3) says about overrun (IBV_EVENT_CQ_ERR).
 *
 * Completions come from flushing: receives (or sends) posted to a QP that
 * then enters the error state complete with IBV_WC_WR_FLUSH_ERR, in order,
 * with the wr_ids the test chose (srx_test.h). That works on every verbs
 * device, so everything here also runs against rdma_rxe (SRX_TEST_DEV=rxe0),
 * where flushes complete asynchronously: every poll waits with a timeout.
 *
 * srx-only, and skipped elsewhere: the max_cq module parameter, the rdma
 * statistic counters, and exact values of fields the verbs leave undefined
 * for an error completion. On srx a receive posted to a QP already in the
 * error state is flushed by the doorbell at once, which makes one
 * completion cost one ibv_post_recv(); other devices cycle the QP through
 * RESET/INIT/ERR instead.
 *
 * Fixtures, one per object under test:
 *   cq_size    CQ sizes (variants 1 .. max_cqe): "at least cqe entries"
 *   cq_create  creation arguments: cq_context, channel, comp_vector, cqe
 *   cq_limit   the device's CQ limit (srx: max_cq parameter)
 *   cq_busy    destroy while a QP uses the CQ (send/recv/both variants)
 *   notify     arming, events, acks, lost wake-ups
 *   resize     ibv_resize_cq (plain CQ / cq_ex / single-threaded cq_ex)
 *   overrun    overfilling, with and without IGNORE_OVERRUN
 *   cq_ex      the cq_ex iterator (multi- and single-threaded variants)
 *   cq_mt      concurrent pollers
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

/* How long a completion or an event may take to show up (rxe is slow). */
#define WAIT_MS 10000
/* How long to watch for something that must NOT happen. */
#define QUIET_MS 300

/* Marks "the device's max_cqe" in a size variant. */
#define CQE_MAX 0

#define REQUIRE_SRX() do { \
	if (!srx_test_is_srx()) \
		SKIP(return, "srx-specific (device %s)", srx_test_dev_name()); \
} while (0)

/* ------------------------------------------------------------------ */
/* Shared by every fixture: device, PD, completion channel            */
/* ------------------------------------------------------------------ */

struct env {
	struct ibv_context *ctx;
	struct ibv_device_attr dev;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	bool srx;
};

static int env_open(struct env *e)
{
	e->srx = srx_test_is_srx();
	e->ctx = srx_test_open();
	if (!e->ctx)
		return errno ? errno : ENODEV;
	if (ibv_query_device(e->ctx, &e->dev))
		return errno ? errno : EIO;
	e->pd = ibv_alloc_pd(e->ctx);
	if (!e->pd)
		return errno ? errno : ENOMEM;
	e->ch = ibv_create_comp_channel(e->ctx);
	if (!e->ch)
		return errno ? errno : ENOMEM;
	return 0;
}

static void env_close(struct env *e)
{
	if (e->ch)
		ibv_destroy_comp_channel(e->ch);
	if (e->pd)
		ibv_dealloc_pd(e->pd);
	if (e->ctx)
		ibv_close_device(e->ctx);
}

#define ENV_OPEN(e) do { \
	int __ret = env_open(e); \
	ASSERT_EQ(0, __ret) TH_LOG("opening %s: %s", srx_test_dev_name(), \
				   strerror(__ret)); \
} while (0)

static void destroy_cq(struct ibv_cq **cq)
{
	if (*cq)
		ibv_destroy_cq(*cq);
	*cq = NULL;
}

/* A cq_ex with the given create flags (0: none) on channel @ch. */
static struct ibv_cq_ex *create_cq_ex(struct env *e, int cqe, void *cq_ctx,
				      struct ibv_comp_channel *ch, int vector,
				      uint32_t flags, uint64_t wc_flags)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.cq_context = cq_ctx,
		.channel = ch,
		.comp_vector = vector,
		.wc_flags = wc_flags,
	};

	if (flags) {
		attr.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
		attr.flags = flags;
	}
	return ibv_create_cq_ex(e->ctx, &attr);
}

/* ------------------------------------------------------------------ */
/* Producing and taking completions                                   */
/* ------------------------------------------------------------------ */

/* Move @qp to the error state through RESET and INIT (an empty flush). */
static int qp_to_err(struct ibv_qp *qp)
{
	int ret = srx_qp_move(qp, IBV_QPS_RESET);

	if (!ret)
		ret = srx_qp_move(qp, IBV_QPS_INIT);
	if (!ret)
		ret = srx_qp_move(qp, IBV_QPS_ERR);
	return ret;
}

/*
 * @n send completions (flushed) with wr_ids @first.. on @qp's send CQ:
 * signaled sends posted to the QP once it is in the error state.
 */
static int flush_sends(struct ibv_qp *qp, uint64_t first, int n)
{
	struct ibv_send_wr wr, *bad;
	int i, ret;

	ret = qp_to_err(qp);
	for (i = 0; !ret && i < n; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = first + i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		ret = ibv_post_send(qp, &wr, &bad);
	}
	return ret;
}

/*
 * One receive completion with wr_id @id as cheaply as the device allows. On
 * srx the flusher's QP is kept in the error state (prepare_cheap_flusher()) and
 * the doorbell of ibv_post_recv() flushes the receive at once; elsewhere
 * the QP goes through RESET, INIT and ERR.
 */
static int produce_one(struct srx_flusher *f, bool cheap, uint64_t id)
{
	struct ibv_recv_wr wr = { .wr_id = id }, *bad;

	if (!cheap)
		return srx_flush_recvs(f, id, 1);
	return ibv_post_recv(f->qp, &wr, &bad);
}

static int prepare_cheap_flusher(struct srx_flusher *f, bool cheap)
{
	return cheap ? qp_to_err(f->qp) : 0;
}

/*
 * Let a device that flushes asynchronously (rxe) finish, so that what was
 * just produced is pending in the CQ before the next step; srx flushes
 * before ibv_modify_qp() returns.
 */
static void settle(struct env *e)
{
	if (!e->srx)
		usleep(300000);
}

/*
 * Take @n completions from @cq within @timeout_ms, expecting wr_ids
 * @first, @first + 1, ... in that order and status WR_FLUSH_ERR. Returns
 * how many matched before the first that did not (which is logged).
 */
static int take_in_order(struct ibv_cq *cq, uint64_t first, int n,
			 int timeout_ms)
{
	uint64_t deadline = srx_test_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct ibv_wc wc[256];
	int got = 0;

	while (got < n) {
		int want = n - got < 256 ? n - got : 256, r, i;

		r = ibv_poll_cq(cq, want, wc);
		if (r < 0) {
			fprintf(stderr, "# ibv_poll_cq: %d\n", r);
			return got;
		}
		for (i = 0; i < r; i++, got++) {
			if (wc[i].wr_id == first + got &&
			    wc[i].status == IBV_WC_WR_FLUSH_ERR)
				continue;
			fprintf(stderr, "# completion %d: wr_id %llu status %s, "
				"expected wr_id %llu WR_FLUSH_ERR\n", got,
				(unsigned long long)wc[i].wr_id,
				ibv_wc_status_str(wc[i].status),
				(unsigned long long)(first + got));
			return got;
		}
		if (!r) {
			if (srx_test_now_ns() > deadline)
				break;
			usleep(100);
		}
	}
	return got;
}

/* The same through the cq_ex iterator, ending every batch properly. */
static int ex_take_in_order(struct ibv_cq_ex *ex, uint64_t first, int n,
			    int timeout_ms)
{
	uint64_t deadline = srx_test_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct ibv_poll_cq_attr attr = {};
	int got = 0, ret;

	while (got < n) {
		ret = ibv_start_poll(ex, &attr);
		if (ret == ENOENT) {
			if (srx_test_now_ns() > deadline)
				break;
			usleep(100);
			continue;
		}
		if (ret) {
			fprintf(stderr, "# ibv_start_poll: %s\n", strerror(ret));
			return got;
		}
		do {
			if (ex->wr_id != first + got ||
			    ex->status != IBV_WC_WR_FLUSH_ERR) {
				fprintf(stderr, "# completion %d: wr_id %llu "
					"status %s, expected wr_id %llu\n", got,
					(unsigned long long)ex->wr_id,
					ibv_wc_status_str(ex->status),
					(unsigned long long)(first + got));
				ibv_end_poll(ex);
				return got;
			}
			if (++got == n)
				break;	/* end_poll consumes the current one */
			ret = ibv_next_poll(ex);
		} while (!ret);
		ibv_end_poll(ex);
		if (ret && ret != ENOENT) {
			fprintf(stderr, "# ibv_next_poll: %s\n", strerror(ret));
			return got;
		}
	}
	return got;
}

/* Completions that show up on @cq within @ms (all are taken). */
static int count_arrivals(struct ibv_cq *cq, int ms)
{
	uint64_t deadline = srx_test_now_ns() + (uint64_t)ms * 1000000;
	struct ibv_wc wc[16];
	int n = 0, r;

	do {
		r = ibv_poll_cq(cq, 16, wc);
		if (r > 0)
			n += r;
		else
			usleep(1000);
	} while (srx_test_now_ns() < deadline);
	return n;
}

/*
 * Read the context's async events for up to @ms, acknowledging each (a CQ
 * cannot be destroyed before its CQ_ERR events are acked), and count those
 * of @type on @cq. With @first_only, return as soon as one is found.
 */
static int async_events(struct ibv_context *ctx, enum ibv_event_type type,
			struct ibv_cq *cq, int ms, bool first_only)
{
	uint64_t deadline = srx_test_now_ns() + (uint64_t)ms * 1000000;
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int n = 0;

	for (;;) {
		int64_t left = (int64_t)(deadline - srx_test_now_ns()) / 1000000;

		if (left < 0)
			left = 0;
		if (poll(&pfd, 1, (int)left) != 1)
			break;
		if (ibv_get_async_event(ctx, &ev))
			break;
		if (ev.event_type == type && ev.element.cq == cq)
			n++;
		else
			fprintf(stderr, "# async event %s\n",
				ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
		if (first_only && n)
			break;
	}
	return n;
}

/* An srx counter of the device under test; srx_hw_counter() waits out the cache. */
static long long counter(const char *name)
{
	return srx_hw_counter(srx_test_dev_name(), name);
}

/* ------------------------------------------------------------------ */
/* cq_size: "with at least cqe entries"                               */
/* ------------------------------------------------------------------ */

FIXTURE(cq_size) {
	struct env env;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_VARIANT(cq_size) {
	int cqe;		/* CQE_MAX: the device's max_cqe */
};

FIXTURE_VARIANT_ADD(cq_size, cqe_1) { .cqe = 1 };
FIXTURE_VARIANT_ADD(cq_size, cqe_2) { .cqe = 2 };
FIXTURE_VARIANT_ADD(cq_size, cqe_3) { .cqe = 3 };
FIXTURE_VARIANT_ADD(cq_size, cqe_100) { .cqe = 100 };
FIXTURE_VARIANT_ADD(cq_size, cqe_4096) { .cqe = 4096 };
FIXTURE_VARIANT_ADD(cq_size, cqe_65535) { .cqe = 65535 };
FIXTURE_VARIANT_ADD(cq_size, cqe_max) { .cqe = CQE_MAX };

FIXTURE_SETUP(cq_size)
{
	ENV_OPEN(&self->env);
}

FIXTURE_TEARDOWN(cq_size)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	env_close(&self->env);
}

/*
 * The CQ reports cq->cqe >= the request, and cq->cqe completions fit: all
 * of them come back, in order, with no overrun and no CQ_ERR event. For
 * max_cqe on srx that is 4 Mi completions, produced in chunks of max_qp_wr.
 */
TEST_F_TIMEOUT(cq_size, holds_cqe_completions, 280)
{
	struct env *e = &self->env;
	int want = variant->cqe == CQE_MAX ? e->dev.max_cqe : variant->cqe;
	long long overruns = 0, errors = 0;
	uint64_t t0, t1, t2;
	int n, rq, ret;

	if (want > e->dev.max_cqe)
		SKIP(return, "device max_cqe %d < %d", e->dev.max_cqe, want);

	self->cq = ibv_create_cq(e->ctx, want, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq) TH_LOG("ibv_create_cq(%d): %s", want,
					  strerror(errno));
	ASSERT_GE(self->cq->cqe, want);
	n = self->cq->cqe;

	rq = n < e->dev.max_qp_wr ? n : e->dev.max_qp_wr;
	ret = srx_flusher_create(&self->f, e->pd, self->cq, self->cq, rq);
	ASSERT_EQ(0, ret) TH_LOG("QP with %d receives: %s", rq, strerror(ret));

	if (e->srx) {
		overruns = counter("cqe_overruns");
		errors = counter("cq_errors");
	}
	t0 = srx_test_now_ns();
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, n));
	t1 = srx_test_now_ns();
	EXPECT_EQ(n, take_in_order(self->cq, 0, n, WAIT_MS + n / 100));
	t2 = srx_test_now_ns();
	EXPECT_EQ(0, count_arrivals(self->cq, 20));
	EXPECT_EQ(0, async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq, 100,
				  false));
	if (e->srx) {
		EXPECT_EQ(overruns, counter("cqe_overruns"));
		EXPECT_EQ(errors, counter("cq_errors"));
	}
	if (n >= 65536)
		TH_LOG("cqe %d: produced in %.1f s, polled in %.1f s", n,
		       (t1 - t0) / 1e9, (t2 - t1) / 1e9);
}

/* ------------------------------------------------------------------ */
/* cq_create: the arguments of ibv_create_cq and ibv_create_cq_ex     */
/* ------------------------------------------------------------------ */

FIXTURE(cq_create) {
	struct env env;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_SETUP(cq_create)
{
	ENV_OPEN(&self->env);
}

FIXTURE_TEARDOWN(cq_create)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	env_close(&self->env);
}

/*
 * Arm @cq (on channel @ch), produce one completion (wr_id @id) on it and
 * wait for the event: 0, or an errno value. The event's CQ and context are
 * returned, the event is acked and the completion taken.
 */
static int one_event(struct env *e, struct ibv_cq *cq, uint64_t id,
		     struct ibv_cq **ev_cq, void **ev_ctx)
{
	struct srx_flusher f = {};
	int ret;

	ret = srx_flusher_create(&f, e->pd, cq, cq, 1);
	if (ret)
		return ret;
	ret = ibv_req_notify_cq(cq, 0);
	if (!ret)
		ret = srx_flush_recvs(&f, id, 1);
	if (!ret)
		ret = srx_wait_event(e->ch, ev_cq, ev_ctx, WAIT_MS);
	if (!ret) {
		ibv_ack_cq_events(*ev_cq, 1);
		if (take_in_order(cq, id, 1, WAIT_MS) != 1)
			ret = EIO;
	}
	srx_flusher_destroy(&f);
	return ret;
}

/* cq_context and the channel are the caller's; the event hands them back. */
TEST_F(cq_create, cq_context_comes_back_with_the_event)
{
	struct env *e = &self->env;
	struct ibv_cq_ex *ex;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int tag_a, tag_b;

	self->cq = ibv_create_cq(e->ctx, 8, &tag_a, e->ch, 0);
	ASSERT_NE(NULL, self->cq);
	EXPECT_EQ(&tag_a, self->cq->cq_context);
	EXPECT_EQ(e->ch, self->cq->channel);
	EXPECT_EQ(e->ctx, self->cq->context);
	ASSERT_EQ(0, one_event(e, self->cq, 7, &ev_cq, &ev_ctx));
	EXPECT_EQ(self->cq, ev_cq);
	EXPECT_EQ(&tag_a, ev_ctx);
	destroy_cq(&self->cq);

	ex = create_cq_ex(e, 8, &tag_b, e->ch, 0, 0, 0);
	ASSERT_NE(NULL, ex) TH_LOG("ibv_create_cq_ex: %s", strerror(errno));
	self->cq = ibv_cq_ex_to_cq(ex);
	EXPECT_GE(self->cq->cqe, 8);
	EXPECT_EQ(&tag_b, self->cq->cq_context);
	EXPECT_EQ(e->ch, self->cq->channel);
	ASSERT_EQ(0, one_event(e, self->cq, 9, &ev_cq, &ev_ctx));
	EXPECT_EQ(self->cq, ev_cq);
	EXPECT_EQ(&tag_b, ev_ctx);
}

/* A CQ without a channel is valid and completes like any other. */
TEST_F(cq_create, channel_is_optional)
{
	struct env *e = &self->env;

	self->cq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	EXPECT_EQ(NULL, self->cq->channel);
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq, 4));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 4));
	EXPECT_EQ(4, take_in_order(self->cq, 0, 4, WAIT_MS));
}

/*
 * CQs may share a channel: each event names its own CQ and cq_context,
 * and arming one CQ does not arm the other.
 */
TEST_F(cq_create, shared_channel_events_name_their_cq)
{
	struct env *e = &self->env;
	struct srx_flusher fb = {};
	struct ibv_cq *b, *ev_cq, *seen[2];
	int tag_a, tag_b, i;
	void *ev_ctx;

	self->cq = ibv_create_cq(e->ctx, 4, &tag_a, e->ch, 0);
	ASSERT_NE(NULL, self->cq);
	b = ibv_create_cq(e->ctx, 4, &tag_b, e->ch, 0);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq, 4));
	ASSERT_EQ(0, srx_flusher_create(&fb, e->pd, b, b, 4));

	/* Only b is armed: completions on both, one event, b's. */
	EXPECT_EQ(0, ibv_req_notify_cq(b, 0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 1));
	EXPECT_EQ(1, take_in_order(self->cq, 0, 1, WAIT_MS));
	ASSERT_EQ(0, srx_flush_recvs(&fb, 10, 1));
	ASSERT_EQ(0, srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS));
	EXPECT_EQ(b, ev_cq);
	EXPECT_EQ(&tag_b, ev_ctx);
	ibv_ack_cq_events(ev_cq, 1);
	EXPECT_EQ(1, take_in_order(b, 10, 1, WAIT_MS));
	EXPECT_FALSE(srx_event_pending(e->ch, QUIET_MS));

	/* Both armed: two events, one for each. */
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	EXPECT_EQ(0, ibv_req_notify_cq(b, 0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 1, 1));
	ASSERT_EQ(0, srx_flush_recvs(&fb, 11, 1));
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS));
		ibv_ack_cq_events(ev_cq, 1);
		EXPECT_TRUE(ev_cq == self->cq || ev_cq == b);
		EXPECT_EQ(ev_cq == b ? (void *)&tag_b : (void *)&tag_a, ev_ctx);
		seen[i] = ev_cq;
	}
	EXPECT_NE(seen[0], seen[1]);
	EXPECT_FALSE(srx_event_pending(e->ch, QUIET_MS));
	EXPECT_EQ(1, take_in_order(self->cq, 1, 1, WAIT_MS));
	EXPECT_EQ(1, take_in_order(b, 11, 1, WAIT_MS));

	EXPECT_EQ(0, srx_flusher_destroy(&fb));
	EXPECT_EQ(0, ibv_destroy_cq(b));
}

/* Every vector in 0 .. num_comp_vectors-1 works and delivers events. */
TEST_F(cq_create, every_comp_vector_delivers)
{
	struct env *e = &self->env;
	int v, nvec = e->ctx->num_comp_vectors;

	ASSERT_GE(nvec, 1);
	for (v = 0; v < nvec; v++) {
		struct ibv_cq_ex *ex;
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		self->cq = ibv_create_cq(e->ctx, 2, &v, e->ch, v);
		ASSERT_NE(NULL, self->cq) TH_LOG("vector %d: %s", v,
						  strerror(errno));
		EXPECT_EQ(0, one_event(e, self->cq, v, &ev_cq, &ev_ctx))
			TH_LOG("vector %d", v);
		EXPECT_EQ(self->cq, ev_cq);
		EXPECT_EQ(0, ibv_destroy_cq(self->cq));
		self->cq = NULL;

		ex = create_cq_ex(e, 2, &v, e->ch, v, 0, 0);
		ASSERT_NE(NULL, ex) TH_LOG("cq_ex vector %d: %s", v,
					   strerror(errno));
		self->cq = ibv_cq_ex_to_cq(ex);
		EXPECT_EQ(0, one_event(e, self->cq, v, &ev_cq, &ev_ctx))
			TH_LOG("cq_ex vector %d", v);
		EXPECT_EQ(0, ibv_destroy_cq(self->cq));
		self->cq = NULL;
	}
}

/* comp_vector outside 0 .. num_comp_vectors-1: NULL with EINVAL. */
TEST_F(cq_create, bad_comp_vector_einval)
{
	struct env *e = &self->env;
	int nvec = e->ctx->num_comp_vectors;
	const int bad[] = { nvec, nvec + 1, 1000, INT_MAX, -1, INT_MIN };
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ibv_comp_channel *chans[] = { e->ch, NULL };
		unsigned int c;

		for (c = 0; c < 2; c++) {
			struct ibv_cq_ex *ex;
			struct ibv_cq *cq;

			errno = 0;
			cq = ibv_create_cq(e->ctx, 4, NULL, chans[c], bad[i]);
			EXPECT_EQ(NULL, cq) TH_LOG("comp_vector %d", bad[i]);
			if (cq)
				ibv_destroy_cq(cq);
			else
				EXPECT_EQ(EINVAL, errno) TH_LOG("comp_vector %d: %s",
								bad[i], strerror(errno));

			errno = 0;
			ex = create_cq_ex(e, 4, NULL, chans[c], bad[i], 0, 0);
			EXPECT_EQ(NULL, ex) TH_LOG("cq_ex comp_vector %d", bad[i]);
			if (ex)
				ibv_destroy_cq(ibv_cq_ex_to_cq(ex));
			else
				EXPECT_EQ(EINVAL, errno) TH_LOG("cq_ex comp_vector %d: %s",
								bad[i], strerror(errno));
		}
	}
}

/* cqe of 0, negative or above max_cqe: NULL with EINVAL. */
TEST_F(cq_create, bad_cqe_einval)
{
	struct env *e = &self->env;
	const int bad[] = { 0, -1, INT_MIN, e->dev.max_cqe + 1, INT_MAX };
	unsigned int i;

	ASSERT_LT(e->dev.max_cqe, INT_MAX);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ibv_cq_ex *ex;
		struct ibv_cq *cq;

		errno = 0;
		cq = ibv_create_cq(e->ctx, bad[i], NULL, NULL, 0);
		EXPECT_EQ(NULL, cq) TH_LOG("cqe %d", bad[i]);
		if (cq)
			ibv_destroy_cq(cq);
		else
			EXPECT_EQ(EINVAL, errno) TH_LOG("cqe %d: %s", bad[i],
							strerror(errno));

		errno = 0;
		ex = create_cq_ex(e, bad[i], NULL, NULL, 0, 0, 0);
		EXPECT_EQ(NULL, ex) TH_LOG("cq_ex cqe %d", bad[i]);
		if (ex)
			ibv_destroy_cq(ibv_cq_ex_to_cq(ex));
		else
			EXPECT_EQ(EINVAL, errno) TH_LOG("cq_ex cqe %d: %s", bad[i],
							strerror(errno));
	}
}

/*
 * ibv_create_comp_channel(3): a channel in use by a CQ cannot be destroyed
 * (EBUSY); a CQ destroy that failed keeps it in use.
 */
TEST_F(cq_create, channel_busy_while_a_cq_uses_it)
{
	struct env *e = &self->env;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(e->ctx);
	struct srx_flusher f = {};

	ASSERT_NE(NULL, ch);
	self->cq = ibv_create_cq(e->ctx, 4, NULL, ch, 0);
	ASSERT_NE(NULL, self->cq);
	EXPECT_EQ(EBUSY, ibv_destroy_comp_channel(ch));

	ASSERT_EQ(0, srx_flusher_create(&f, e->pd, self->cq, self->cq, 1));
	EXPECT_EQ(EBUSY, ibv_destroy_cq(self->cq));
	EXPECT_EQ(EBUSY, ibv_destroy_comp_channel(ch));
	EXPECT_EQ(0, srx_flusher_destroy(&f));

	EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	self->cq = NULL;
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
}

/*
 * Destroying a CQ that still holds completions succeeds, and the CQ is gone
 * from the RDMA core's resource tracking.
 */
TEST_F(cq_create, destroy_with_completions_pending)
{
	struct env *e = &self->env;
	long before = srx_res_count(srx_test_dev_name(), "cq");

	self->cq = ibv_create_cq(e->ctx, 8, NULL, e->ch, 0);
	ASSERT_NE(NULL, self->cq);
	EXPECT_EQ(before + 1, srx_res_count(srx_test_dev_name(), "cq"));
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq, 8));
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 5));
	EXPECT_EQ(1, take_in_order(self->cq, 0, 1, WAIT_MS));
	EXPECT_EQ(0, srx_flusher_destroy(&self->f));

	/* An event nobody read does not hold the destroy up either. */
	EXPECT_TRUE(srx_event_pending(e->ch, WAIT_MS));
	EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	self->cq = NULL;
	/* And it went with the CQ: reading it would hand out a freed CQ. */
	EXPECT_FALSE(srx_event_pending(e->ch, 0));
	EXPECT_EQ(before, srx_res_count(srx_test_dev_name(), "cq"));
}

/*
 * ibv_poll_cq(3): it returns the first num_entries completions, or all of
 * them if fewer are there, and each one polled is gone.
 */
TEST_F(cq_create, poll_returns_at_most_num_entries)
{
	struct env *e = &self->env;
	struct ibv_wc wc[16];
	int i;

	self->cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq, 16));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 100, 10));
	/* Wait for all ten without taking any: the first one is 100. */
	ASSERT_EQ(1, take_in_order(self->cq, 100, 1, WAIT_MS));
	settle(e);

	EXPECT_EQ(0, ibv_poll_cq(self->cq, 0, wc));
	EXPECT_EQ(3, ibv_poll_cq(self->cq, 3, wc));
	for (i = 0; i < 3; i++)
		EXPECT_EQ((uint64_t)(101 + i), wc[i].wr_id);
	EXPECT_EQ(6, ibv_poll_cq(self->cq, 16, wc));
	for (i = 0; i < 6; i++) {
		EXPECT_EQ((uint64_t)(104 + i), wc[i].wr_id);
		EXPECT_EQ((int)IBV_WC_WR_FLUSH_ERR, (int)wc[i].status);
		EXPECT_EQ(self->f.qp->qp_num, wc[i].qp_num);
	}
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 16, wc));
}

/* ------------------------------------------------------------------ */
/* cq_limit: the device's CQ limit (srx: the max_cq module parameter) */
/* ------------------------------------------------------------------ */

#define LIMIT_EXTRA 4		/* CQs the test may create under the limit */
#define LIMIT_CYCLES 3000	/* create/destroy and refused creates, for leaks */
#define LIMIT_REFUSALS 20000	/* refused creates alone, for leaks */
#define LIMIT_ROUNDS 3		/* of LIMIT_REFUSALS, until one is quiet */

FIXTURE(cq_limit) {
	struct env env;
	struct ibv_cq *cqs[LIMIT_EXTRA + 1];
	char saved[32];
	bool set;
};

FIXTURE_SETUP(cq_limit)
{
	ENV_OPEN(&self->env);
}

FIXTURE_TEARDOWN(cq_limit)
{
	unsigned int i;

	for (i = 0; i < sizeof(self->cqs) / sizeof(self->cqs[0]); i++)
		destroy_cq(&self->cqs[i]);
	if (self->set)
		srx_set_param("max_cq", self->saved);
	env_close(&self->env);
}

static int read_param(const char *param, char *buf, size_t len)
{
	char path[128];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/sys/module/srx/parameters/%s", param);
	f = fopen(path, "r");
	if (!f)
		return errno;
	if (!fgets(buf, len, f))
		ret = EIO;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ret;
}

/*
 * Slab objects in use (/proc/slabinfo, root only), all caches together:
 * the smallest of a few samples a moment apart, since the RDMA core frees
 * uobjects after an RCU grace period. -1 if unreadable.
 */
static long long slab_objects_settled(void)
{
	long long best = -1;
	int i;

	for (i = 0; i < 5; i++) {
		FILE *f = fopen("/proc/slabinfo", "r");
		long long sum = 0, active;
		char line[512], name[128];

		if (!f)
			return -1;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%127s %lld", name, &active) == 2)
				sum += active;
		fclose(f);
		if (best < 0 || sum < best)
			best = sum;
		usleep(100000);
	}
	return best;
}

static struct ibv_cq *create_one(struct env *e, bool ex)
{
	struct ibv_cq_ex *cq_ex;

	if (!ex)
		return ibv_create_cq(e->ctx, 1, NULL, NULL, 0);
	cq_ex = create_cq_ex(e, 1, NULL, NULL, 0, 0, 0);
	return cq_ex ? ibv_cq_ex_to_cq(cq_ex) : NULL;
}

/*
 * The first CQ over the device's limit fails with ENOMEM (through both
 * create verbs), the limit counts every CQ of the device (the MAD layer's
 * own included), and refusing one neither warns nor leaks: the RDMA core's
 * resource count, unreclaimable slab and vmalloc come back.
 */
TEST_F_TIMEOUT(cq_limit, over_max_cq_enomem_no_leak, 180)
{
	struct env *e = &self->env;
	long slab0, vmalloc0, slab1, vmalloc1, lazy0, lazy1;
	long long objs0, objs1, min_objs = 0;
	long min_slab = 0;
	int round;
	struct ibv_device_attr_ex attr;
	int existing, limit, i, kmsg, ret;
	char buf[32];

	REQUIRE_SRX();
	ret = read_param("max_cq", self->saved, sizeof(self->saved));
	ASSERT_EQ(0, ret) TH_LOG("max_cq parameter: %s", strerror(ret));

	existing = srx_res_count(srx_test_dev_name(), "cq");
	ASSERT_GE(existing, 1) TH_LOG("the MAD layer's CQ is missing");
	limit = existing + LIMIT_EXTRA;
	kmsg = srx_kmsg_open();

	snprintf(buf, sizeof(buf), "%d", limit);
	ASSERT_EQ(0, srx_set_param("max_cq", buf));
	self->set = true;
	/*
	 * The extended query asks the driver each time. ibv_query_device()
	 * returns the RDMA core's copy of the attributes, taken when the
	 * device registered, which a later change of max_cq does not reach.
	 */
	ASSERT_EQ(0, ibv_query_device_ex(e->ctx, NULL, &attr));
	EXPECT_EQ(limit, attr.orig_attr.max_cq);

	for (i = 0; i < LIMIT_EXTRA; i++) {
		self->cqs[i] = create_one(e, i & 1);
		ASSERT_NE(NULL, self->cqs[i]) TH_LOG("CQ %d of %d: %s",
			existing + i + 1, limit, strerror(errno));
	}
	EXPECT_EQ(limit, srx_res_count(srx_test_dev_name(), "cq"));

	errno = 0;
	self->cqs[i] = create_one(e, false);
	EXPECT_EQ(NULL, self->cqs[i]);
	EXPECT_EQ(ENOMEM, errno);
	errno = 0;
	self->cqs[i] = create_one(e, true);
	EXPECT_EQ(NULL, self->cqs[i]);
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(limit, srx_res_count(srx_test_dev_name(), "cq"));

	/* A refused create costs nothing; a destroy gives the slot back. */
	slab0 = srx_meminfo_kb("SUnreclaim");
	vmalloc0 = srx_meminfo_kb("VmallocUsed");
	lazy0 = srx_slab_cache_kb("vmap_area");
	for (i = 0; i < LIMIT_CYCLES; i++) {
		struct ibv_cq *cq = create_one(e, i & 1);

		if (cq) {
			ibv_destroy_cq(cq);
			break;
		}
		EXPECT_EQ(0, ibv_destroy_cq(self->cqs[0]));
		self->cqs[0] = create_one(e, i & 1);
		if (!self->cqs[0])
			break;
	}
	EXPECT_EQ(LIMIT_CYCLES, i) TH_LOG("cycle %d: %s", i, strerror(errno));
	slab1 = srx_meminfo_kb("SUnreclaim");
	vmalloc1 = srx_meminfo_kb("VmallocUsed");
	lazy1 = srx_slab_cache_kb("vmap_area");
	if (lazy0 < 0 || lazy1 < 0)	/* merged into another cache */
		lazy0 = lazy1 = 0;
	TH_LOG("%d cycles: SUnreclaim %+ld kB, of which vmap_area %+ld kB; VmallocUsed %+ld kB",
	       LIMIT_CYCLES, slab1 - slab0, lazy1 - lazy0, vmalloc1 - vmalloc0);
	/* Freed rings whose vmap_area the kernel has not purged yet. */
	slab1 -= lazy1 - lazy0;
	/*
	 * Each cycle allocates and frees a ring page (vmalloc) and at least
	 * 256 bytes of kernel objects twice. Unreclaimable slab wanders by a
	 * few hundred kB on its own; a leak would grow it by 750 kB or more.
	 * Not under KASAN: see srx_test_kasan().
	 */
	if (!srx_test_kasan())
		EXPECT_LT(slab1 - slab0, 512);
	EXPECT_LT(vmalloc1 - vmalloc0, LIMIT_CYCLES * 4 / 8);

	/*
	 * Refusals alone, at the limit: each one allocates the core's uobject
	 * and the ib_cq with srx's CQ around it, and must free both. A leak of
	 * one object per refusal adds 20,000 objects in use in every round.
	 * SLUB counts the free objects of per-CPU slabs as in use, so the count
	 * wanders by itself (measured over CI runs: -396 to +461), and a round
	 * may land on a high point. So up to three rounds, and the smallest
	 * growth must stay under 1,000, a leak every 20 refusals. SUnreclaim
	 * gets 12 bytes a refusal (the cycles above allow 170: their rings make
	 * slab wander).
	 */
	ASSERT_EQ(NULL, self->cqs[LIMIT_EXTRA]);
	for (round = 0; round < LIMIT_ROUNDS; round++) {
		objs0 = slab_objects_settled();
		slab0 = srx_meminfo_kb("SUnreclaim");
		ASSERT_LE(0, objs0) TH_LOG("/proc/slabinfo unreadable");
		for (i = 0; i < LIMIT_REFUSALS; i++) {
			struct ibv_cq *cq = create_one(e, i & 1);

			if (cq) {
				ibv_destroy_cq(cq);
				break;
			}
			if (errno != ENOMEM)
				break;
		}
		ASSERT_EQ(LIMIT_REFUSALS, i) TH_LOG("refusal %d: %s", i,
						    strerror(errno));
		objs1 = slab_objects_settled();
		slab1 = srx_meminfo_kb("SUnreclaim");
		TH_LOG("round %d, %d refused creates: slab objects %+lld, SUnreclaim %+ld kB",
		       round + 1, LIMIT_REFUSALS, objs1 - objs0, slab1 - slab0);
		if (round == 0 || objs1 - objs0 < min_objs)
			min_objs = objs1 - objs0;
		if (round == 0 || slab1 - slab0 < min_slab)
			min_slab = slab1 - slab0;
		if (min_objs < 1000 &&
		    (srx_test_kasan() || min_slab < LIMIT_REFUSALS * 12 / 1024))
			break;
	}
	EXPECT_GT(1000, min_objs);
	if (!srx_test_kasan())
		EXPECT_GT(LIMIT_REFUSALS * 12 / 1024, min_slab);

	for (i = 0; i < LIMIT_EXTRA; i++)
		EXPECT_EQ(0, ibv_destroy_cq(self->cqs[i]));
	memset(self->cqs, 0, sizeof(self->cqs));
	EXPECT_EQ(existing, srx_res_count(srx_test_dev_name(), "cq"));

	ASSERT_EQ(0, srx_set_param("max_cq", self->saved));
	self->set = false;
	ASSERT_EQ(0, ibv_query_device_ex(e->ctx, NULL, &attr));
	EXPECT_GT(attr.orig_attr.max_cq, limit);
	EXPECT_EQ(0, srx_kmsg_bad(kmsg));
	if (kmsg >= 0)
		close(kmsg);
}

/* ------------------------------------------------------------------ */
/* cq_busy: ibv_destroy_cq while a QP still uses the CQ               */
/* ------------------------------------------------------------------ */

FIXTURE(cq_busy) {
	struct env env;
	struct ibv_cq *cq;	/* under test */
	struct ibv_cq *other;
	struct srx_flusher f;
};

FIXTURE_VARIANT(cq_busy) {
	bool send;		/* the QP's send CQ */
	bool recv;		/* the QP's receive CQ */
};

FIXTURE_VARIANT_ADD(cq_busy, send_cq) { .send = true };
FIXTURE_VARIANT_ADD(cq_busy, recv_cq) { .recv = true };
FIXTURE_VARIANT_ADD(cq_busy, both) { .send = true, .recv = true };

FIXTURE_SETUP(cq_busy)
{
	struct env *e = &self->env;
	int ret;

	ENV_OPEN(e);
	self->cq = ibv_create_cq(e->ctx, 16, NULL, e->ch, 0);
	ASSERT_NE(NULL, self->cq);
	self->other = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, self->other);
	ret = srx_flusher_create(&self->f, e->pd,
				 variant->send ? self->cq : self->other,
				 variant->recv ? self->cq : self->other, 4);
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(cq_busy)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	destroy_cq(&self->other);
	env_close(&self->env);
}

/*
 * ibv_destroy_cq() returns EBUSY (the errno value) while a QP uses the CQ,
 * and the CQ goes on working: polling, arming, new completions and their
 * event. Once the QP is gone the destroy succeeds and returns 0.
 */
TEST_F(cq_busy, destroy_ebusy_and_cq_keeps_working)
{
	struct env *e = &self->env;
	struct ibv_wc wc[8];
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n = 0, i;

	EXPECT_EQ(EBUSY, ibv_destroy_cq(self->cq));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 8, wc));
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));

	if (variant->recv) {
		ASSERT_EQ(0, srx_flush_recvs(&self->f, 100, 3));
		EXPECT_EQ(3, take_in_order(self->cq, 100, 3, WAIT_MS));
		n++;
	}
	if (variant->send) {
		ASSERT_EQ(0, flush_sends(self->f.qp, 200, 3));
		EXPECT_EQ(3, take_in_order(self->cq, 200, 3, WAIT_MS));
		n++;
	}
	/* One arm, so one event, however many completions followed it. */
	ASSERT_EQ(0, srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS));
	EXPECT_EQ(self->cq, ev_cq);
	ibv_ack_cq_events(ev_cq, 1);
	EXPECT_FALSE(srx_event_pending(e->ch, QUIET_MS));

	EXPECT_EQ(EBUSY, ibv_destroy_cq(self->cq));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
		if (variant->recv && i == 0) {
			ASSERT_EQ(0, srx_flush_recvs(&self->f, 300, 2));
		} else {
			ASSERT_EQ(0, flush_sends(self->f.qp, 400, 2));
		}
		ASSERT_EQ(0, srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS));
		ibv_ack_cq_events(ev_cq, 1);
		EXPECT_EQ(2, take_in_order(self->cq, variant->recv && i == 0 ?
					   300 : 400, 2, WAIT_MS));
	}

	EXPECT_EQ(0, srx_flusher_destroy(&self->f));
	EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	self->cq = NULL;
}

/* ------------------------------------------------------------------ */
/* notify: arming, events, acknowledgements                           */
/* ------------------------------------------------------------------ */

#define LOST_WAKEUP_CYCLES 100000
#define RACING_COMPLETIONS 20000

FIXTURE(notify) {
	struct env env;
	struct ibv_cq *cq;
	struct srx_flusher f;
	int tag;
};

FIXTURE_SETUP(notify)
{
	struct env *e = &self->env;

	ENV_OPEN(e);
	self->cq = ibv_create_cq(e->ctx, 256, &self->tag, e->ch, 0);
	ASSERT_NE(NULL, self->cq);
	/*
	 * As many receives as the CQ holds: a receive keeps its slot until
	 * its completion is polled, and the racing producer keeps up to half
	 * the CQ outstanding.
	 */
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq,
					256));
}

FIXTURE_TEARDOWN(notify)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	env_close(&self->env);
}

static void expect_event(struct __test_metadata *_metadata, struct env *e,
			 struct ibv_cq *cq, void *tag)
{
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;

	ASSERT_EQ(0, srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS));
	EXPECT_EQ(cq, ev_cq);
	EXPECT_EQ(tag, ev_ctx);
	ibv_ack_cq_events(ev_cq, 1);
}

/*
 * "One shot": an armed CQ raises exactly one event however many
 * completions follow, and none without a new arm.
 */
TEST_F(notify, one_event_per_arm)
{
	struct env *e = &self->env;

	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 5));
	expect_event(_metadata, e, self->cq, &self->tag);
	EXPECT_EQ(5, take_in_order(self->cq, 0, 5, WAIT_MS));
	EXPECT_FALSE(srx_event_pending(e->ch, QUIET_MS));

	/* Not armed: completions, but no event. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 5, 5));
	EXPECT_EQ(5, take_in_order(self->cq, 5, 5, WAIT_MS));
	EXPECT_FALSE(srx_event_pending(e->ch, QUIET_MS));

	/* Armed again: one event again. */
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 10, 3));
	expect_event(_metadata, e, self->cq, &self->tag);
	EXPECT_EQ(3, take_in_order(self->cq, 10, 3, WAIT_MS));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 13, 3));
	EXPECT_EQ(3, take_in_order(self->cq, 13, 3, WAIT_MS));
	EXPECT_FALSE(srx_event_pending(e->ch, QUIET_MS));
}

/*
 * solicited_only: "a CQE is solicited if ... the status is not
 * successful". A flush completion is an error completion, so it satisfies
 * a solicited-only arm, once.
 */
TEST_F(notify, solicited_only_fires_on_error_completion)
{
	struct env *e = &self->env;

	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 1));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 1));
	expect_event(_metadata, e, self->cq, &self->tag);
	EXPECT_EQ(1, take_in_order(self->cq, 0, 1, WAIT_MS));

	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 1));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 1, 4));
	expect_event(_metadata, e, self->cq, &self->tag);
	EXPECT_EQ(4, take_in_order(self->cq, 1, 4, WAIT_MS));
	EXPECT_FALSE(srx_event_pending(e->ch, QUIET_MS));
}

/* With a non-blocking channel and no event, ibv_get_cq_event fails EAGAIN. */
TEST_F(notify, nonblocking_channel_without_event_eagain)
{
	struct env *e = &self->env;
	int flags = fcntl(e->ch->fd, F_GETFL);
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	ASSERT_EQ(0, fcntl(e->ch->fd, F_SETFL, flags | O_NONBLOCK));
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	errno = 0;
	EXPECT_EQ(-1, ibv_get_cq_event(e->ch, &ev_cq, &ev_ctx));
	EXPECT_EQ(EAGAIN, errno);

	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 1));
	expect_event(_metadata, e, self->cq, &self->tag);
	EXPECT_EQ(1, take_in_order(self->cq, 0, 1, WAIT_MS));
	errno = 0;
	EXPECT_EQ(-1, ibv_get_cq_event(e->ch, &ev_cq, &ev_ctx));
	EXPECT_EQ(EAGAIN, errno);
}

/*
 * No lost wake-up: 100,000 times arm, produce one completion, wait for the
 * event (with a timeout), ack it and poll the completion.
 */
TEST_F_TIMEOUT(notify, no_lost_wakeup_100k_cycles, 900)
{
	struct env *e = &self->env;
	bool cheap = e->srx;
	uint64_t t0 = srx_test_now_ns(), dt;
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *ev_ctx;
	int i, ret;

	ASSERT_EQ(0, prepare_cheap_flusher(&self->f, cheap));
	for (i = 0; i < LOST_WAKEUP_CYCLES; i++) {
		ret = ibv_req_notify_cq(self->cq, 0);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: arm: %s", i, strerror(ret));
		ret = produce_one(&self->f, cheap, i);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: produce: %s", i,
					 strerror(ret));
		ret = srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS);
		ASSERT_EQ(0, ret) TH_LOG("cycle %d: no event: %s", i,
					 strerror(ret));
		ASSERT_EQ(self->cq, ev_cq);
		ibv_ack_cq_events(ev_cq, 1);
		ret = srx_wait_cqes(self->cq, &wc, 1, WAIT_MS);
		ASSERT_EQ(1, ret) TH_LOG("cycle %d: no completion", i);
		ASSERT_EQ((uint64_t)i, wc.wr_id);
	}
	EXPECT_EQ(0, count_arrivals(self->cq, 10));
	dt = srx_test_now_ns() - t0;
	TH_LOG("%d cycles in %.1f s: %.0f cycles/s (%s)", i, dt / 1e9,
	       i / (dt / 1e9), cheap ? "doorbell flush" : "modify-QP flush");
}

struct racer {
	struct srx_flusher *f;
	bool cheap;
	int n, window;
	atomic_int consumed;
	atomic_bool stop;
	int ret;
};

/*
 * Produce completions one by one while the main thread arms and drains:
 * on srx free-running (bounded by the CQ), elsewhere only once the last one
 * was taken, since a RESET of the QP could discard an unflushed receive.
 */
static void *racer_fn(void *arg)
{
	struct racer *r = arg;
	int i;

	for (i = 0; i < r->n && !atomic_load(&r->stop); i++) {
		int limit = r->cheap ? r->window : 0;

		while (i - atomic_load(&r->consumed) > limit &&
		       !atomic_load(&r->stop))
			sched_yield();
		if (atomic_load(&r->stop))
			break;
		if (i % 7 == 0)
			usleep(i % 3 * 50);
		r->ret = produce_one(r->f, r->cheap, i);
		if (r->ret)
			break;
	}
	return NULL;
}

/*
 * The canonical event loop (wait, ack, arm, drain) against a producer
 * thread that races with it: every completion is seen, and no wait times
 * out while completions are outstanding after an arm.
 */
TEST_F_TIMEOUT(notify, no_lost_wakeup_racing_producer, 600)
{
	struct env *e = &self->env;
	struct racer r = {
		.f = &self->f, .cheap = e->srx, .n = RACING_COMPLETIONS,
		.window = self->cq->cqe / 2,
	};
	struct ibv_cq *ev_cq;
	struct ibv_wc wc[32];
	uint64_t next = 0;
	unsigned int events = 0;
	pthread_t thread;
	void *ev_ctx;
	int ret, k;

	ASSERT_EQ(0, prepare_cheap_flusher(&self->f, r.cheap));
	ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, pthread_create(&thread, NULL, racer_fn, &r));
	while (next < (uint64_t)r.n) {
		ret = srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS);
		if (ret) {
			EXPECT_EQ(0, ret) TH_LOG("no event after %llu of %d "
				"completions", (unsigned long long)next, r.n);
			break;
		}
		events++;
		ibv_ack_cq_events(ev_cq, 1);
		ret = ibv_req_notify_cq(self->cq, 0);
		EXPECT_EQ(0, ret);
		while (!ret && (ret = ibv_poll_cq(self->cq, 32, wc)) > 0) {
			for (k = 0; k < ret && next == wc[k].wr_id; k++)
				next++;
			EXPECT_EQ(k, ret) TH_LOG("wr_id %llu instead of %llu",
				(unsigned long long)wc[k].wr_id,
				(unsigned long long)next);
			ret = k == ret ? 0 : -1;
			atomic_store(&r.consumed, (int)next);
		}
		if (ret)
			break;
	}
	/* Stop the racer before teardown takes its QP away. */
	atomic_store(&r.stop, true);
	pthread_join(thread, NULL);
	EXPECT_EQ(0, r.ret);
	EXPECT_EQ((uint64_t)r.n, next);
	TH_LOG("%llu completions, %u events", (unsigned long long)next, events);
}

struct late_acker {
	struct ibv_cq *cq;
	unsigned int n;
	int delay_ms;
	atomic_ullong acked_ns;
};

static void *late_ack_fn(void *arg)
{
	struct late_acker *a = arg;

	usleep(a->delay_ms * 1000);
	atomic_store(&a->acked_ns, srx_test_now_ns());
	ibv_ack_cq_events(a->cq, a->n);
	return NULL;
}

/*
 * "destroying a CQ will wait for all completion events to be
 * acknowledged": ibv_destroy_cq blocks while an event is unacked and
 * returns 0 once another thread acks it.
 */
TEST_F(notify, destroy_waits_for_ack)
{
	struct env *e = &self->env;
	struct late_acker a = { .cq = self->cq, .n = 1, .delay_ms = 500 };
	struct ibv_cq *ev_cq;
	pthread_t thread;
	uint64_t done;
	void *ev_ctx;

	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 1));
	ASSERT_EQ(0, srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS));
	ASSERT_EQ(self->cq, ev_cq);
	EXPECT_EQ(1, take_in_order(self->cq, 0, 1, WAIT_MS));
	ASSERT_EQ(0, srx_flusher_destroy(&self->f));

	ASSERT_EQ(0, pthread_create(&thread, NULL, late_ack_fn, &a));
	EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	done = srx_test_now_ns();
	self->cq = NULL;
	pthread_join(thread, NULL);
	EXPECT_NE(0ull, atomic_load(&a.acked_ns));
	EXPECT_GE(done, atomic_load(&a.acked_ns))
		TH_LOG("ibv_destroy_cq returned before the ack");
}

/*
 * Acks may be batched ("amortize this cost"): three events, one
 * ibv_ack_cq_events(cq, 3), and the destroy returns.
 */
TEST_F(notify, batched_ack_lets_destroy_return)
{
	struct env *e = &self->env;
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int i;

	for (i = 0; i < 3; i++) {
		EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
		ASSERT_EQ(0, srx_flush_recvs(&self->f, i, 1));
		ASSERT_EQ(0, srx_wait_event(e->ch, &ev_cq, &ev_ctx, WAIT_MS));
		ASSERT_EQ(self->cq, ev_cq);
		EXPECT_EQ(1, take_in_order(self->cq, i, 1, WAIT_MS));
	}
	ASSERT_EQ(0, srx_flusher_destroy(&self->f));
	ibv_ack_cq_events(self->cq, 3);
	EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	self->cq = NULL;
}

/* ------------------------------------------------------------------ */
/* resize                                                             */
/* ------------------------------------------------------------------ */

FIXTURE(resize) {
	struct env env;
	struct ibv_cq *cq;
	struct ibv_cq_ex *ex;	/* the same CQ, for cq_ex variants */
	struct srx_flusher f;
};

FIXTURE_VARIANT(resize) {
	bool ex;
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(resize, cq) { .ex = false };
FIXTURE_VARIANT_ADD(resize, cq_ex) { .ex = true };
FIXTURE_VARIANT_ADD(resize, cq_ex_single_threaded) {
	.ex = true, .flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
};

static void resize_create(struct __test_metadata *_metadata,
			  FIXTURE_DATA(resize) *self,
			  const FIXTURE_VARIANT(resize) *variant, int cqe)
{
	struct env *e = &self->env;

	if (variant->ex) {
		self->ex = create_cq_ex(e, cqe, NULL, e->ch, 0, variant->flags,
					IBV_WC_STANDARD_FLAGS);
		ASSERT_NE(NULL, self->ex) TH_LOG("ibv_create_cq_ex: %s",
						 strerror(errno));
		self->cq = ibv_cq_ex_to_cq(self->ex);
	} else {
		self->cq = ibv_create_cq(e->ctx, cqe, NULL, e->ch, 0);
		ASSERT_NE(NULL, self->cq);
	}
	ASSERT_GE(self->cq->cqe, cqe);
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq,
					1024));
}

/* Take in order the way the variant polls. */
static int resize_take(FIXTURE_DATA(resize) *self, uint64_t first, int n)
{
	if (self->ex)
		return ex_take_in_order(self->ex, first, n, WAIT_MS);
	return take_in_order(self->cq, first, n, WAIT_MS);
}

FIXTURE_SETUP(resize)
{
	ENV_OPEN(&self->env);
}

FIXTURE_TEARDOWN(resize)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	env_close(&self->env);
}

/* Growing with CQEs pending keeps them, in order, and the new size fits. */
TEST_F(resize, grow_keeps_pending)
{
	int cqe;

	resize_create(_metadata, self, variant, 16);
	cqe = self->cq->cqe;
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, cqe));
	settle(&self->env);

	ASSERT_EQ(0, ibv_resize_cq(self->cq, 1000));
	ASSERT_GE(self->cq->cqe, 1000);
	/* Fill it to the new size: what was pending, then the rest. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, cqe, self->cq->cqe - cqe));
	EXPECT_EQ(self->cq->cqe, resize_take(self, 0, self->cq->cqe));
	EXPECT_EQ(0, count_arrivals(self->cq, 20));
	EXPECT_EQ(0, async_events(self->env.ctx, IBV_EVENT_CQ_ERR, self->cq,
				  50, false));
}

/* Shrinking with CQEs pending keeps them, in order, and the CQ works on. */
TEST_F(resize, shrink_keeps_pending)
{
	resize_create(_metadata, self, variant, 1000);
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 10));
	settle(&self->env);

	ASSERT_EQ(0, ibv_resize_cq(self->cq, 16));
	EXPECT_GE(self->cq->cqe, 16);
	/* The man page allows a no-op here; srx does shrink. */
	if (self->env.srx)
		EXPECT_LT(self->cq->cqe, 1000);
	EXPECT_EQ(10, resize_take(self, 0, 10));

	/* The shrunk CQ holds exactly its new cqe. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 10, self->cq->cqe));
	EXPECT_EQ(self->cq->cqe, resize_take(self, 10, self->cq->cqe));
	EXPECT_EQ(0, async_events(self->env.ctx, IBV_EVENT_CQ_ERR, self->cq,
				  50, false));
}

/* "cqe must be at least the number of unpolled entries": equal is fine. */
TEST_F(resize, shrink_to_exactly_pending)
{
	resize_create(_metadata, self, variant, 256);
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 100));
	settle(&self->env);

	ASSERT_EQ(0, ibv_resize_cq(self->cq, 100));
	EXPECT_GE(self->cq->cqe, 100);
	EXPECT_EQ(100, resize_take(self, 0, 100));
}

/*
 * Below the number pending: EINVAL, and the CQ keeps its size, all its
 * CQEs in order, and takes new ones.
 */
TEST_F(resize, shrink_below_pending_einval)
{
	int cqe;

	resize_create(_metadata, self, variant, 256);
	cqe = self->cq->cqe;
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 100));
	settle(&self->env);

	EXPECT_EQ(EINVAL, ibv_resize_cq(self->cq, 10));
	EXPECT_EQ(cqe, self->cq->cqe);
	EXPECT_EQ(50, resize_take(self, 0, 50));
	/* Fill it up again: 50 left, then cqe - 50 new ones. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 100, cqe - 50));
	EXPECT_EQ(cqe, resize_take(self, 50, cqe));
	EXPECT_EQ(0, count_arrivals(self->cq, 20));
}

/*
 * libsrx's resize COMMIT, sent instead with a response buffer the kernel
 * cannot write: srx.ko switches rings and returns 0, then the uverbs core
 * fails to copy its response (the new cqe) out, and the command reports
 * EFAULT although the resize happened. ibv_cmd_resize_cq() is defined here
 * and exported (the Makefile's --export-dynamic-symbol), so libsrx's call
 * lands here; everything else goes on to libibverbs.
 */
static bool lose_commit_response;
static int lost_commit_errno;

static int commit_to_read_only(struct ibv_cq *cq, int cqe, size_t resp_size)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_resize_cq core;
		struct srx_resize_cq_cmd drv;
	} c = {
		.hdr = { .command = IB_USER_VERBS_CMD_RESIZE_CQ,
			 .in_words = sizeof(c) / 4,
			 .out_words = resp_size / 4 },
		.core = { .cq_handle = cq->handle, .cqe = cqe },
		.drv = { .op = SRX_RESIZE_COMMIT },
	};
	void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	int err;

	if (ro == MAP_FAILED)
		return errno;
	c.core.response = (uintptr_t)ro;
	err = write(cq->context->cmd_fd, &c, sizeof(c)) == sizeof(c) ? 0 : errno;
	munmap(ro, 4096);
	return err;
}

int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, void *cmd, size_t cmd_size,
		      void *resp, size_t resp_size);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, void *cmd, size_t cmd_size,
		      void *resp, size_t resp_size)
{
	static int (*next)(struct ibv_cq *, int, void *, size_t, void *,
			   size_t);
	const struct srx_resize_cq_cmd *drv =
		(const void *)((char *)cmd + cmd_size - sizeof(*drv));

	if (lose_commit_response && drv->op == SRX_RESIZE_COMMIT) {
		lost_commit_errno = commit_to_read_only(cq, cqe, resp_size);
		return lost_commit_errno;
	}
	if (!next)
		next = dlsym(RTLD_NEXT, "ibv_cmd_resize_cq");
	if (!next)
		return ENOSYS;
	return next(cq, cqe, cmd, cmd_size, resp, resp_size);
}

/*
 * A COMMIT that switched but reported failure is a resize all the same:
 * the CQ keeps its pending CQEs, takes new ones, and has the new size.
 */
TEST_F(resize, commit_response_lost)
{
	int cqe;

	REQUIRE_SRX();
	resize_create(_metadata, self, variant, 16);
	cqe = self->cq->cqe;
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, cqe));
	settle(&self->env);

	lose_commit_response = true;
	EXPECT_EQ(0, ibv_resize_cq(self->cq, 1000));
	lose_commit_response = false;
	/* The kernel really did fail the command, after switching. */
	ASSERT_EQ(EFAULT, lost_commit_errno)
		TH_LOG("COMMIT: %s", strerror(lost_commit_errno));
	ASSERT_GE(self->cq->cqe, 1000);
	ASSERT_EQ(0, srx_flush_recvs(&self->f, cqe, self->cq->cqe - cqe));
	EXPECT_EQ(self->cq->cqe, resize_take(self, 0, self->cq->cqe));
	EXPECT_EQ(0, count_arrivals(self->cq, 20));
	EXPECT_EQ(0, async_events(self->env.ctx, IBV_EVENT_CQ_ERR, self->cq,
				  50, false));
}

/* 0, negative, above max_cqe: EINVAL, and nothing changes. */
TEST_F(resize, bad_sizes_einval)
{
	const int bad[] = { 0, -1, INT_MIN, self->env.dev.max_cqe + 1 };
	unsigned int i;
	int cqe;

	resize_create(_metadata, self, variant, 64);
	cqe = self->cq->cqe;
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 5));
	settle(&self->env);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(EINVAL, ibv_resize_cq(self->cq, bad[i]))
			TH_LOG("cqe %d", bad[i]);
		EXPECT_EQ(cqe, self->cq->cqe);
	}
	EXPECT_EQ(5, resize_take(self, 0, 5));

	/* The boundary itself is valid, both ways. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 5, 3));
	settle(&self->env);
	EXPECT_EQ(0, ibv_resize_cq(self->cq, self->env.dev.max_cqe));
	EXPECT_GE(self->cq->cqe, self->env.dev.max_cqe);
	EXPECT_EQ(0, ibv_resize_cq(self->cq, 64));
	EXPECT_GE(self->cq->cqe, 64);
	EXPECT_EQ(3, resize_take(self, 5, 3));
}

/* An arm made before a resize still fires after it. */
TEST_F(resize, arm_survives_resize)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	resize_create(_metadata, self, variant, 16);
	ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, ibv_resize_cq(self->cq, 500));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 1));
	ASSERT_EQ(0, srx_wait_event(self->env.ch, &ev_cq, &ev_ctx, WAIT_MS));
	EXPECT_EQ(self->cq, ev_cq);
	ibv_ack_cq_events(ev_cq, 1);
	EXPECT_EQ(1, resize_take(self, 0, 1));
}

static int count_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0, c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static long read_max_map_count(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static bool write_max_map_count(long v)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "we");
	bool ok;

	if (!f)
		return false;
	ok = fprintf(f, "%ld\n", v) > 0;
	return !fclose(f) && ok;
}

/*
 * Resizes do not use up the process's mappings: each one used to leave
 * the old ring's address range mapped until destroy, and after about
 * vm.max_map_count of them (65,530) every mmap() of the process failed.
 * The limit is lowered to RESIZE_MAP_ROOM above what the process maps now,
 * and the test resizes RESIZE_MANY times, polling now and then; the limit
 * is put back before any assertion.
 */
#define RESIZE_MAP_ROOM 100
#define RESIZE_MANY 1000

TEST_F(resize, many_resizes_keep_mmap_working)
{
	long limit = read_max_map_count();
	int i, ret = 0, fails_at = -1, maps;
	struct ibv_wc wc;
	void *p;

	REQUIRE_SRX();
	ASSERT_LT(0, limit);
	resize_create(_metadata, self, variant, 16);
	ASSERT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
	maps = count_mappings();
	ASSERT_LT(0, maps);
	ASSERT_TRUE(write_max_map_count(maps + RESIZE_MAP_ROOM))
		TH_LOG("vm.max_map_count: %s", strerror(errno));
	for (i = 0; i < RESIZE_MANY && !ret; i++) {
		ret = ibv_resize_cq(self->cq, i % 2 ? 16 : 32);
		if (ret)
			fails_at = i;
		else if (!(i % 50) && !self->ex)
			ret = ibv_poll_cq(self->cq, 1, &wc);
	}
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	maps = count_mappings() - maps;
	ASSERT_TRUE(write_max_map_count(limit));

	EXPECT_EQ(0, ret) TH_LOG("resize %d: %s", fails_at, strerror(ret));
	EXPECT_NE(MAP_FAILED, p) TH_LOG("mmap after the resizes failed");
	if (p != MAP_FAILED)
		munmap(p, 4096);
	EXPECT_GE(2, maps) TH_LOG("%d more mappings", maps);
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 5));
	EXPECT_EQ(5, resize_take(self, 0, 5));
}

/* ------------------------------------------------------------------ */
/* overrun                                                            */
/* ------------------------------------------------------------------ */

#define OVERRUN_EXTRA 5

FIXTURE(overrun) {
	struct env env;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_VARIANT(overrun) {
	bool ex;
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(overrun, cq) { .ex = false };
FIXTURE_VARIANT_ADD(overrun, cq_ex) { .ex = true };
FIXTURE_VARIANT_ADD(overrun, ignore_overrun) {
	.ex = true, .flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
};

FIXTURE_SETUP(overrun)
{
	ENV_OPEN(&self->env);
}

FIXTURE_TEARDOWN(overrun)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	env_close(&self->env);
}

/*
 * The CQ of the variant (32 entries) and a flusher that can overfill it.
 * False if the device does not support IGNORE_OVERRUN: only another
 * device may say so (rxe does); srx claims it (README), so there its
 * EOPNOTSUPP fails the test instead of skipping it.
 */
static bool overrun_create(struct __test_metadata *_metadata,
			   FIXTURE_DATA(overrun) *self,
			   const FIXTURE_VARIANT(overrun) *variant)
{
	struct env *e = &self->env;
	struct ibv_cq_ex *ex;

	if (variant->ex) {
		ex = create_cq_ex(e, 32, NULL, NULL, 0, variant->flags, 0);
		if (!ex && variant->flags && errno == EOPNOTSUPP && !e->srx)
			return false;
		ASSERT_NE(NULL, ex) TH_LOG("ibv_create_cq_ex: %s",
					   strerror(errno));
		self->cq = ibv_cq_ex_to_cq(ex);
	} else {
		self->cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
		ASSERT_NE(NULL, self->cq);
	}
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq,
					self->cq->cqe + OVERRUN_EXTRA));
	return true;
}

/*
 * Overfill by k: without IGNORE_OVERRUN, IBV_EVENT_CQ_ERR arrives exactly
 * once and the CQ takes nothing more (the counters show the k dropped and
 * one CQ error); with it, no event, exactly k dropped, and after draining
 * new completions arrive.
 */
TEST_F(overrun, overfill)
{
	struct env *e = &self->env;
	bool ignore = variant->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	long long overruns = 0, errors = 0;
	struct ibv_wc wc[64];
	uint64_t last = 0;
	int n, got, r, i;

	if (!overrun_create(_metadata, self, variant))
		SKIP(return, "IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN unsupported");
	n = self->cq->cqe;
	if (e->srx) {
		overruns = counter("cqe_overruns");
		errors = counter("cq_errors");
	}

	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, n + OVERRUN_EXTRA));
	if (ignore) {
		EXPECT_EQ(0, async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
					  QUIET_MS, false));
	} else {
		/* The first one, then nothing more for a while. */
		EXPECT_EQ(1, async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
					  WAIT_MS, true) +
			     async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
					  QUIET_MS, false));
	}
	if (e->srx) {
		EXPECT_EQ(overruns + OVERRUN_EXTRA,
			  counter("cqe_overruns"));
		EXPECT_EQ(errors + !ignore, counter("cq_errors"));
	}

	/* The ring held n of them: a strictly increasing run of wr_ids. */
	got = 0;
	while ((r = srx_wait_cqes(self->cq, wc, 1, got < n ? WAIT_MS : 50)) == 1) {
		EXPECT_EQ((int)IBV_WC_WR_FLUSH_ERR, (int)wc[0].status);
		if (got)
			EXPECT_GT(wc[0].wr_id, last);
		if (e->srx)	/* srx drops the newest */
			EXPECT_EQ((uint64_t)got, wc[0].wr_id);
		last = wc[0].wr_id;
		got++;
	}
	EXPECT_EQ(n, got);

	/* More completions: the CQ in error takes none, the other carries on. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 1000, 3));
	if (ignore) {
		EXPECT_EQ(3, take_in_order(self->cq, 1000, 3, WAIT_MS));
		EXPECT_EQ(0, async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
					  QUIET_MS, false));
	} else {
		EXPECT_EQ(0, count_arrivals(self->cq, QUIET_MS));
		EXPECT_EQ(0, async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
					  QUIET_MS, false))
			TH_LOG("a second CQ_ERR event");
		if (e->srx)
			EXPECT_EQ(overruns + OVERRUN_EXTRA + 3,
				  counter("cqe_overruns"));
	}
	if (e->srx)
		EXPECT_EQ(errors + !ignore, counter("cq_errors"));
	for (i = 0; i < 64 && ibv_poll_cq(self->cq, 64, wc) > 0; i++)
		;
}

struct late_async_ack {
	struct ibv_async_event ev;
	int delay_ms;
	atomic_ullong acked_ns;
};

static void *late_async_ack_fn(void *arg)
{
	struct late_async_ack *a = arg;

	usleep(a->delay_ms * 1000);
	atomic_store(&a->acked_ns, srx_test_now_ns());
	ibv_ack_async_event(&a->ev);
	return NULL;
}

/* The next async event of @type on @cq within @ms, left unacked; 0 or ETIMEDOUT. */
static int hold_async_event(struct ibv_context *ctx, enum ibv_event_type type,
			    struct ibv_cq *cq, int ms, struct ibv_async_event *ev)
{
	uint64_t deadline = srx_test_now_ns() + (uint64_t)ms * 1000000;
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };

	for (;;) {
		int64_t left = (int64_t)(deadline - srx_test_now_ns()) / 1000000;

		if (poll(&pfd, 1, left < 0 ? 0 : (int)left) != 1)
			return ETIMEDOUT;
		if (ibv_get_async_event(ctx, ev))
			return errno;
		if (ev->event_type == type && ev->element.cq == cq)
			return 0;
		ibv_ack_async_event(ev);
	}
}

/*
 * ibv_get_async_event(3): destroying a CQ waits until its affiliated
 * events (CQ_ERR) are acknowledged. Held by another thread, the destroy
 * returns once that thread acks; with IGNORE_OVERRUN there is nothing to
 * wait for.
 */
TEST_F(overrun, destroy_waits_for_cq_err_ack)
{
	struct late_async_ack a = { .delay_ms = 500 };
	struct env *e = &self->env;
	pthread_t thread;
	uint64_t done;

	if (!overrun_create(_metadata, self, variant))
		SKIP(return, "IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN unsupported");
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0,
				     self->cq->cqe + OVERRUN_EXTRA));

	if (variant->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN) {
		EXPECT_EQ(0, async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
					  QUIET_MS, false));
		EXPECT_EQ(0, srx_flusher_destroy(&self->f));
		EXPECT_EQ(0, ibv_destroy_cq(self->cq));
		self->cq = NULL;
		return;
	}

	ASSERT_EQ(0, hold_async_event(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
				      WAIT_MS, &a.ev));
	EXPECT_EQ(self->cq, a.ev.element.cq);
	/* Ack whatever else comes (rxe raises one per lost completion). */
	async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq, QUIET_MS, false);
	ASSERT_EQ(0, srx_flusher_destroy(&self->f));

	ASSERT_EQ(0, pthread_create(&thread, NULL, late_async_ack_fn, &a));
	EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	done = srx_test_now_ns();
	self->cq = NULL;
	pthread_join(thread, NULL);
	EXPECT_NE(0ull, atomic_load(&a.acked_ns));
	EXPECT_GE(done, atomic_load(&a.acked_ns))
		TH_LOG("ibv_destroy_cq returned before the ack");
}

/*
 * The status word belongs to the kernel: whatever the process writes
 * there, an overrun leaves exactly SRX_CQ_STATUS_ERROR in it (srx-abi.h:
 * the kernel keeps its own copy of what it owns and never reads such a
 * word back). The ring is found through /proc/self/maps, not libsrx.
 */
TEST_F(overrun, status_word_is_the_kernels)
{
	struct srx_test_map before[16], after[16], added[1] = { { 0 } };
	struct env *e = &self->env;
	volatile struct srx_cq_ctrl *ctrl;
	int nb, na;

	REQUIRE_SRX();
	if (variant->ex)
		SKIP(return, "one variant is enough");

	nb = srx_test_maps(before, 16);
	self->cq = ibv_create_cq(e->ctx, 32, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	na = srx_test_maps(after, 16);
	ASSERT_EQ(1, srx_test_map_new(before, nb, after, na, added, 1));
	ctrl = (volatile struct srx_cq_ctrl *)added[0].start;
	ASSERT_EQ(0u, ctrl->status);

	ctrl->status = 0x80000000u | 0x40u;	/* no bit the kernel defines */
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq,
					self->cq->cqe + OVERRUN_EXTRA));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0,
				     self->cq->cqe + OVERRUN_EXTRA));
	EXPECT_EQ(1, async_events(e->ctx, IBV_EVENT_CQ_ERR, self->cq,
				  WAIT_MS, true));
	EXPECT_EQ(SRX_CQ_STATUS_ERROR, ctrl->status)
		TH_LOG("status %#x", ctrl->status);
}

/* ------------------------------------------------------------------ */
/* cq_ex: the start_poll / next_poll / end_poll iterator              */
/* ------------------------------------------------------------------ */

FIXTURE(cq_ex) {
	struct env env;
	struct ibv_cq_ex *ex;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_VARIANT(cq_ex) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(cq_ex, multi_threaded) { .flags = 0 };
FIXTURE_VARIANT_ADD(cq_ex, single_threaded) {
	.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
};

FIXTURE_SETUP(cq_ex)
{
	struct env *e = &self->env;

	ENV_OPEN(e);
	self->ex = create_cq_ex(e, 64, NULL, e->ch, 0, variant->flags,
				IBV_WC_STANDARD_FLAGS);
	ASSERT_NE(NULL, self->ex) TH_LOG("ibv_create_cq_ex: %s",
					 strerror(errno));
	self->cq = ibv_cq_ex_to_cq(self->ex);
	ASSERT_GE(self->cq->cqe, 64);
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq, 64));
}

FIXTURE_TEARDOWN(cq_ex)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	env_close(&self->env);
}

/* Wait until start_poll finds something; 0 or its last error. */
static int start_poll_wait(struct ibv_cq_ex *ex)
{
	uint64_t deadline = srx_test_now_ns() + (uint64_t)WAIT_MS * 1000000;
	struct ibv_poll_cq_attr attr = {};
	int ret;

	while ((ret = ibv_start_poll(ex, &attr)) == ENOENT &&
	       srx_test_now_ns() < deadline)
		usleep(100);
	return ret;
}

/*
 * start_poll on an empty CQ returns ENOENT and the CQ stays valid: no
 * end_poll follows (calling it would be a bug), and the next start_poll
 * works normally.
 */
TEST_F(cq_ex, start_poll_on_empty_enoent)
{
	struct ibv_poll_cq_attr attr = {};
	int i;

	for (i = 0; i < 3; i++)
		EXPECT_EQ(ENOENT, ibv_start_poll(self->ex, &attr));

	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 2));
	ASSERT_EQ(0, start_poll_wait(self->ex));
	EXPECT_EQ(0ull, self->ex->wr_id);
	EXPECT_EQ((int)IBV_WC_WR_FLUSH_ERR, (int)self->ex->status);
	ibv_end_poll(self->ex);
	EXPECT_EQ(1, ex_take_in_order(self->ex, 1, 1, WAIT_MS));
	EXPECT_EQ(ENOENT, ibv_start_poll(self->ex, &attr));
}

/*
 * After next_poll returns ENOENT, end_poll is still required, and polling
 * goes on correctly: new completions are seen, none lost, none duplicated,
 * whether taken by the iterator or by ibv_poll_cq.
 */
TEST_F(cq_ex, next_poll_enoent_then_end_poll)
{
	struct ibv_poll_cq_attr attr = {};
	uint64_t next = 0;
	struct ibv_wc wc;
	int round, k;

	for (round = 1; round <= 20; round++) {
		int batch = round % 5 + 1;

		ASSERT_EQ(0, srx_flush_recvs(&self->f, next, batch));
		settle(&self->env);
		ASSERT_EQ(0, start_poll_wait(self->ex)) TH_LOG("round %d", round);
		for (k = 0;; k++) {
			EXPECT_EQ(next + k, self->ex->wr_id)
				TH_LOG("round %d, completion %d", round, k);
			if (ibv_next_poll(self->ex))
				break;
		}
		ibv_end_poll(self->ex);
		EXPECT_EQ(batch - 1, k) TH_LOG("round %d", round);
		next += k + 1;

		/* Going on after a wrong answer would poll garbage. */
		ASSERT_EQ(ENOENT, ibv_start_poll(self->ex, &attr))
			TH_LOG("round %d: a completion after the last", round);
		EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));

		/* Every other round, one through the plain verb. */
		if (round % 2) {
			ASSERT_EQ(0, srx_flush_recvs(&self->f, next, 1));
			EXPECT_EQ(1, take_in_order(self->cq, next, 1, WAIT_MS));
			next++;
		}
	}
}

/* end_poll consumes the current completion and nothing after it. */
TEST_F(cq_ex, end_poll_consumes_up_to_current)
{
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 5));
	settle(&self->env);
	ASSERT_EQ(0, start_poll_wait(self->ex));
	EXPECT_EQ(0ull, self->ex->wr_id);
	ASSERT_EQ(0, ibv_next_poll(self->ex));
	EXPECT_EQ(1ull, self->ex->wr_id);
	ibv_end_poll(self->ex);

	EXPECT_EQ(1, take_in_order(self->cq, 2, 1, WAIT_MS));
	EXPECT_EQ(2, ex_take_in_order(self->ex, 3, 2, WAIT_MS));
}

/*
 * The read_* functions describe the current completion: for a flushed
 * receive the QP number and status are defined everywhere, and they agree
 * with what ibv_poll_cq returns for the same kind of completion. srx
 * defines the rest too (a zeroed receive CQE).
 */
TEST_F(cq_ex, read_fields_of_flush_completion)
{
	struct ibv_wc wc, ex_wc = {};

	ASSERT_EQ(0, srx_flush_recvs(&self->f, 41, 2));
	ASSERT_EQ(0, start_poll_wait(self->ex));
	EXPECT_EQ(41ull, self->ex->wr_id);
	EXPECT_EQ((int)IBV_WC_WR_FLUSH_ERR, (int)self->ex->status);
	EXPECT_EQ(self->f.qp->qp_num, ibv_wc_read_qp_num(self->ex));
	ASSERT_EQ(0, ibv_next_poll(self->ex));
	EXPECT_EQ(42ull, self->ex->wr_id);
	ex_wc.status = self->ex->status;
	ex_wc.qp_num = ibv_wc_read_qp_num(self->ex);
	ex_wc.opcode = ibv_wc_read_opcode(self->ex);
	ex_wc.vendor_err = ibv_wc_read_vendor_err(self->ex);
	ex_wc.byte_len = ibv_wc_read_byte_len(self->ex);
	ex_wc.wc_flags = ibv_wc_read_wc_flags(self->ex);
	ex_wc.imm_data = ibv_wc_read_imm_data(self->ex);
	ex_wc.src_qp = ibv_wc_read_src_qp(self->ex);
	ex_wc.slid = ibv_wc_read_slid(self->ex);
	ex_wc.sl = ibv_wc_read_sl(self->ex);
	ex_wc.dlid_path_bits = ibv_wc_read_dlid_path_bits(self->ex);
	ibv_end_poll(self->ex);

	/* The same kind of completion through ibv_poll_cq. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 43, 1));
	ASSERT_EQ(1, srx_wait_cqes(self->cq, &wc, 1, WAIT_MS));
	EXPECT_EQ(43ull, wc.wr_id);
	EXPECT_EQ(wc.status, ex_wc.status);
	EXPECT_EQ(wc.qp_num, ex_wc.qp_num);
	EXPECT_EQ(wc.opcode, ex_wc.opcode);
	EXPECT_EQ(wc.vendor_err, ex_wc.vendor_err);
	EXPECT_EQ(wc.byte_len, ex_wc.byte_len);
	EXPECT_EQ(wc.wc_flags, ex_wc.wc_flags);
	EXPECT_EQ(wc.src_qp, ex_wc.src_qp);
	EXPECT_EQ(wc.slid, ex_wc.slid);
	EXPECT_EQ(wc.sl, ex_wc.sl);
	EXPECT_EQ(wc.dlid_path_bits, ex_wc.dlid_path_bits);
	if (self->env.srx) {
		EXPECT_EQ((int)IBV_WC_RECV, (int)ex_wc.opcode);
		EXPECT_EQ(0u, ex_wc.byte_len);
		EXPECT_EQ(0u, ex_wc.wc_flags);
		EXPECT_EQ(0u, ex_wc.vendor_err);
		EXPECT_EQ(0u, ex_wc.imm_data);
		EXPECT_EQ(0u, ex_wc.src_qp);
		EXPECT_EQ(0, ex_wc.slid);
		EXPECT_EQ(0, ex_wc.sl);
		EXPECT_EQ(0, ex_wc.dlid_path_bits);
	}
	EXPECT_EQ(0, count_arrivals(self->cq, 20));
}

/*
 * wc_flags the device cannot fill in: NULL with EOPNOTSUPP. libibverbs
 * answers so itself for bits it does not know, and rdma-core's providers
 * (rxe, mlx5) for known ones they lack; so do unknown create flags and
 * comp_mask bits (ibv_cmd_create_cq_ex()).
 */
TEST_F(cq_ex, unsupported_wc_flags_eopnotsupp)
{
	const uint64_t bad[] = {
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
		IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
		IBV_WC_EX_WITH_CVLAN,
		IBV_WC_EX_WITH_FLOW_TAG,
		IBV_WC_EX_WITH_TM_INFO,
		1ull << 40,
	};
	struct env *e = &self->env;
	struct ibv_cq_init_attr_ex attr;
	struct ibv_cq_ex *ex;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ex = create_cq_ex(e, 4, NULL, NULL, 0, variant->flags,
				  IBV_WC_STANDARD_FLAGS | bad[i]);
		EXPECT_EQ(NULL, ex) TH_LOG("wc_flags %#llx",
					   (unsigned long long)bad[i]);
		if (ex)
			ibv_destroy_cq(ibv_cq_ex_to_cq(ex));
		else
			EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("wc_flags %#llx: %s",
				(unsigned long long)bad[i], strerror(errno));
	}

	errno = 0;
	ex = create_cq_ex(e, 4, NULL, NULL, 0, variant->flags | 1u << 15, 0);
	EXPECT_EQ(NULL, ex) TH_LOG("unknown create flag accepted");
	if (ex)
		ibv_destroy_cq(ibv_cq_ex_to_cq(ex));
	else
		EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("%s", strerror(errno));

	memset(&attr, 0, sizeof(attr));
	attr.cqe = 4;
	attr.comp_mask = 1u << 7;
	errno = 0;
	ex = ibv_create_cq_ex(e->ctx, &attr);
	EXPECT_EQ(NULL, ex) TH_LOG("unknown comp_mask accepted");
	if (ex)
		ibv_destroy_cq(ibv_cq_ex_to_cq(ex));
	else
		EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("%s", strerror(errno));
}

/* A cq_ex is a CQ: ibv_req_notify_cq and its events work on it too. */
TEST_F(cq_ex, notify_through_ibv_cq)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 3));
	ASSERT_EQ(0, srx_wait_event(self->env.ch, &ev_cq, &ev_ctx, WAIT_MS));
	EXPECT_EQ(self->cq, ev_cq);
	ibv_ack_cq_events(ev_cq, 1);
	EXPECT_EQ(3, ex_take_in_order(self->ex, 0, 3, WAIT_MS));
	EXPECT_FALSE(srx_event_pending(self->env.ch, QUIET_MS));
}

/* ------------------------------------------------------------------ */
/* cq_mt: several threads polling one CQ                              */
/* ------------------------------------------------------------------ */

#define MT_COMPLETIONS 100000
#define MT_CHUNK 1024
#define MT_POLLERS 2
#define MT_QUOTA (MT_COMPLETIONS * 3 / 4)

FIXTURE(cq_mt) {
	struct env env;
	struct ibv_cq_ex *ex;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_VARIANT(cq_mt) {
	bool iterator;		/* the second poller uses start/next/end_poll */
	/*
	 * The second poller starts when half the completions are made: until
	 * then the first one owns the CQ's bias (libsrx's cq.c, "Biased
	 * polling") and polls without atomics; the second one, and with
	 * resize the main thread, must revoke it without losing or doubling
	 * a completion.
	 */
	bool late;
};

FIXTURE_VARIANT_ADD(cq_mt, poll_cq) { .iterator = false };
FIXTURE_VARIANT_ADD(cq_mt, poll_cq_and_iterator) { .iterator = true };
FIXTURE_VARIANT_ADD(cq_mt, poll_cq_joins_late) { .late = true };
FIXTURE_VARIANT_ADD(cq_mt, iterator_joins_late) {
	.iterator = true, .late = true,
};

FIXTURE_SETUP(cq_mt)
{
	struct env *e = &self->env;

	ENV_OPEN(e);
	self->ex = create_cq_ex(e, 8192, NULL, NULL, 0, 0,
				IBV_WC_STANDARD_FLAGS);
	ASSERT_NE(NULL, self->ex);
	self->cq = ibv_cq_ex_to_cq(self->ex);
	ASSERT_EQ(0, srx_flusher_create(&self->f, e->pd, self->cq, self->cq,
					MT_CHUNK));
}

FIXTURE_TEARDOWN(cq_mt)
{
	srx_flusher_destroy(&self->f);
	destroy_cq(&self->cq);
	env_close(&self->env);
}

struct poller {
	struct ibv_cq_ex *ex;
	struct ibv_cq *cq;
	bool iterator;		/* start/next/end_poll, else ibv_poll_cq */
	atomic_uchar *seen;
	atomic_int *taken;
	atomic_bool *stop;
	int quota;		/* stops taking after this many */
	int count, out_of_order, bad;
};

static void poller_take(struct poller *p, uint64_t id, int status,
			uint64_t *last)
{
	if (id >= MT_COMPLETIONS || status != IBV_WC_WR_FLUSH_ERR) {
		p->bad++;
		return;
	}
	if (p->count && id <= *last)
		p->out_of_order++;
	*last = id;
	atomic_fetch_add(&p->seen[id], 1);
	atomic_fetch_add(p->taken, 1);
	p->count++;
}

static void *poller_fn(void *arg)
{
	struct ibv_poll_cq_attr attr = {};
	struct poller *p = arg;
	struct ibv_wc wc[8];
	uint64_t last = 0;
	int r, i;

	while (!atomic_load(p->stop)) {
		if (p->count >= p->quota) {
			usleep(1000);
			continue;
		}
		if (p->iterator) {
			if (ibv_start_poll(p->ex, &attr))
				continue;
			/*
			 * A sequence would otherwise take all that is ready:
			 * stop at the quota (end_poll consumes the current).
			 */
			do
				poller_take(p, p->ex->wr_id, p->ex->status, &last);
			while (p->count < p->quota && !ibv_next_poll(p->ex));
			ibv_end_poll(p->ex);
		} else {
			r = ibv_poll_cq(p->cq, 8, wc);
			for (i = 0; i < r; i++)
				poller_take(p, wc[i].wr_id, wc[i].status, &last);
		}
	}
	return NULL;
}

/*
 * Produce MT_COMPLETIONS in chunks while MT_POLLERS threads take them; with
 * @resize, resize the CQ between chunks through a cycle of sizes. Every
 * completion must be taken exactly once, and each thread must see its share
 * in order. A poller stops taking at MT_QUOTA, so the others must take the
 * rest: more than one thread takes completions, whatever the scheduling.
 */
static void run_pollers(struct __test_metadata *_metadata,
			FIXTURE_DATA(cq_mt) *self,
			const FIXTURE_VARIANT(cq_mt) *variant, bool resize)
{
	static const int sizes[] = { 2048, 16384, 1024, 4096 };
	atomic_uchar *seen = calloc(MT_COMPLETIONS, sizeof(*seen));
	int produced = 0, resized = 0, once = 0, started = 0, i;
	struct poller p[MT_POLLERS];
	pthread_t threads[MT_POLLERS];
	atomic_bool stop = false;
	atomic_int taken = 0;
	uint64_t deadline;

	ASSERT_NE(NULL, seen);
	for (i = 0; i < MT_POLLERS; i++) {
		p[i] = (struct poller){
			.ex = self->ex, .cq = self->cq,
			.iterator = variant->iterator && i == 1,
			.seen = seen, .taken = &taken, .stop = &stop,
			.quota = MT_QUOTA,
		};
	}

	deadline = srx_test_now_ns() + 200ull * 1000000000;
	while (produced < MT_COMPLETIONS && srx_test_now_ns() < deadline) {
		int chunk = MT_COMPLETIONS - produced < MT_CHUNK ?
			    MT_COMPLETIONS - produced : MT_CHUNK;
		/*
		 * srx flushes synchronously: keep the CQ from overflowing, and
		 * keep what is pending within the size resized to next.
		 * Elsewhere the flusher's RESET could drop a receive not yet
		 * flushed: wait for all of them.
		 */
		int next = sizes[(produced / MT_CHUNK + 1) % 4];
		int cap = resize && next < self->cq->cqe ? next : self->cq->cqe;
		int room = self->env.srx ? cap - chunk : 0;

		while (started < MT_POLLERS &&
		       (!variant->late || !started ||
			produced >= MT_COMPLETIONS / 2)) {
			ASSERT_EQ(0, pthread_create(&threads[started], NULL,
						    poller_fn, &p[started]));
			started++;
		}
		while (produced - atomic_load(&taken) > room &&
		       srx_test_now_ns() < deadline)
			sched_yield();
		if (srx_flush_recvs(&self->f, produced, chunk))
			break;
		produced += chunk;

		if (resize) {
			int ret = ibv_resize_cq(self->cq, next);

			EXPECT_EQ(0, ret) TH_LOG("resize to %d: %s", next,
						 strerror(ret));
			resized += !ret;
		}
	}
	while (atomic_load(&taken) < produced && srx_test_now_ns() < deadline)
		usleep(1000);
	atomic_store(&stop, true);
	for (i = 0; i < started; i++)
		pthread_join(threads[i], NULL);

	EXPECT_EQ(MT_COMPLETIONS, produced);
	EXPECT_EQ(produced, atomic_load(&taken));
	for (i = 0; i < produced; i++)
		once += atomic_load(&seen[i]) == 1;
	EXPECT_EQ(produced, once);
	for (i = 0; i < MT_POLLERS; i++) {
		EXPECT_EQ(0, p[i].out_of_order) TH_LOG("poller %d", i);
		EXPECT_EQ(0, p[i].bad) TH_LOG("poller %d", i);
		/* A batch may overshoot the quota by 7 at most. */
		EXPECT_GE(MT_QUOTA + 7, p[i].count) TH_LOG("poller %d", i);
		EXPECT_LT(0, p[i].count) TH_LOG("poller %d took nothing", i);
	}
	TH_LOG("taken by poller 0: %d, poller 1 (%s): %d; %d resizes",
	       p[0].count, variant->iterator ? "iterator" : "ibv_poll_cq",
	       p[1].count, resized);
	free(seen);
}

/*
 * Without SINGLE_THREADED, threads may poll one CQ at once while
 * completions keep coming: each completion is taken exactly once.
 */
TEST_F_TIMEOUT(cq_mt, concurrent_pollers_take_each_once, 240)
{
	run_pollers(_metadata, self, variant, false);
}

/* The same while the CQ is resized under the pollers, again and again. */
TEST_F_TIMEOUT(cq_mt, resize_under_concurrent_pollers, 240)
{
	run_pollers(_metadata, self, variant, true);
}

TEST_HARNESS_MAIN
