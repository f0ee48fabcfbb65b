// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Concurrency and hostility: many threads on one CQ, and a process that
 * scribbles over its own rings.
 *
 * The CQ tests share one shape. A producer thread makes completions with
 * unique, increasing wr_ids; poller threads take them; every poller marks
 * each wr_id in a shared bitmap with an atomic OR. A bit found set already
 * is a completion taken twice; a bit never set at the end is one lost; a
 * poller that sees a wr_id not above the last it took from the same QP saw
 * them out of order (a CQ is a FIFO per QP and each poller claims a range
 * after the previous one). Around that: a thread resizing the CQ, threads
 * arming it and waiting for events, cq_ex pollers.
 *
 * Producers (no wire protocol needed):
 *  - on srx, a QP that stays in ERR: the doorbell that libsrx rings after
 *    each ibv_post_recv() makes the kernel flush the new receives at once;
 *  - elsewhere (rxe), srx_flush_recvs() cycles QPs RESET->INIT->post->ERR;
 *    flushes complete asynchronously there, so a QP is only cycled again
 *    once every completion of its previous chunk was taken (a RESET would
 *    drop the rest), and several QPs keep the CQ busy meanwhile.
 * Either way the producer keeps at most `window` completions outstanding,
 * below the CQ's capacity, so the CQ never overruns.
 *
 * Threads never ASSERT (the harness longjmps on the test's own thread):
 * they record the first failure and stop everyone; the test asserts after
 * joining them.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

static void __attribute__((constructor)) stress_preload(void)
{
	srx_test_preload();
}

#define STRESS_COMPLETIONS 1000000ull	/* pollers tests */
#define STRESS_COMPLETIONS_BUSY 300000ull	/* resize, notify, cq_ex */
#define STRESS_MAX_THREADS 16
#define STRESS_MAX_QPS 4
#define STRESS_STALL_S 30	/* no progress for this long: fail */
/*
 * A run taking longer fails (harness: 120 s). Both scale with
 * SRX_TEST_TIMEOUT_SCALE (harness_timeout.h): make check-debug's KASAN guest
 * took 78,336 of 1,000,000 completions in 60 s. A stall is not scaled: no
 * progress at all for 30 s is a hang on any kernel.
 */
#define STRESS_BUDGET_S (60 * srx_test_timeout_scale())

struct stress_qp {
	struct srx_flusher f;
	uint64_t posted;		/* producer only */
	_Atomic uint64_t done;		/* completions taken, by pollers */
};

struct stress {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;		/* what ibv_poll_cq() polls */
	struct ibv_cq_ex *cq_ex;	/* the same CQ, if created as cq_ex */

	struct stress_qp qps[STRESS_MAX_QPS];
	int nqps;
	bool err_mode;			/* srx: one QP in ERR, doorbells */
	uint32_t chain;			/* receives per ibv_post_recv (err_mode) */

	uint64_t total;			/* wr_ids 0..total-1 at most */
	_Atomic uint64_t goal;		/* what the run produces: total, or less */
	uint64_t min_total;		/* with min_resizes: stop early after */
	uint64_t min_resizes;		/* this many resizes and min_total */
	uint32_t window;
	_Atomic uint64_t produced;
	_Atomic uint64_t consumed;
	_Atomic uint64_t *seen;		/* bitmap, total bits */

	_Atomic bool stop;
	_Atomic bool failed;
	char why[256];
	pthread_mutex_t why_lock;

	/* Counters the tests report. */
	_Atomic uint64_t resizes;
	_Atomic uint64_t arms;
	_Atomic uint64_t events;
	_Atomic uint64_t waits;
};

static void stress_fail(struct stress *s, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&s->why_lock);
	if (!s->failed) {
		va_start(ap, fmt);
		vsnprintf(s->why, sizeof(s->why), fmt, ap);
		va_end(ap);
		s->failed = true;
	}
	pthread_mutex_unlock(&s->why_lock);
	s->stop = true;
}

static bool stress_running(struct stress *s)
{
	return !atomic_load_explicit(&s->stop, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                 */
/* ------------------------------------------------------------------ */

/*
 * Open the device and a PD; the CQ is the caller's. Returns 0 or errno.
 */
static int stress_open(struct stress *s, uint64_t total)
{
	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->why_lock, NULL);
	s->total = total;
	s->goal = total;
	s->seen = calloc((total + 63) / 64, sizeof(*s->seen));
	if (!s->seen)
		return ENOMEM;
	s->ctx = srx_test_open();
	if (!s->ctx)
		return errno;
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		return errno;
	return 0;
}

/* The largest CQ to ask for: rxe stops at 32767 entries. */
static int stress_cq_size(struct stress *s, int want)
{
	struct ibv_device_attr attr;

	if (!ibv_query_device(s->ctx, &attr) && attr.max_cqe < want)
		return attr.max_cqe;
	return want;
}

/*
 * The producer's QPs, once s->cq exists. @window: completions the producer
 * may have outstanding; it must stay below the CQ's smallest capacity.
 */
static int stress_make_qps(struct stress *s, uint32_t window)
{
	struct ibv_device_attr dattr;
	uint32_t rq;
	int i, ret;

	s->window = window;
	s->err_mode = srx_test_is_srx();
	s->nqps = s->err_mode ? 1 : STRESS_MAX_QPS;
	s->chain = 64;
	ret = ibv_query_device(s->ctx, &dattr) ? errno : 0;
	if (ret)
		return ret;
	rq = window / s->nqps;
	if (rq > (uint32_t)dattr.max_qp_wr)
		rq = dattr.max_qp_wr;
	/*
	 * In ERR one QP produces everything, and a receive keeps its slot
	 * until its completion is polled: its queue holds the whole window.
	 */
	if (s->err_mode) {
		if (s->window > (uint32_t)dattr.max_qp_wr)
			s->window = dattr.max_qp_wr;
		rq = s->window;
	}

	for (i = 0; i < s->nqps; i++) {
		ret = srx_flusher_create(&s->qps[i].f, s->pd, s->cq, s->cq, rq);
		if (ret)
			return ret;
	}
	if (!s->err_mode)
		return 0;
	/* The state table has no RESET -> ERR: through INIT. */
	ret = srx_qp_move(s->qps[0].f.qp, IBV_QPS_INIT);
	return ret ? ret : srx_qp_move(s->qps[0].f.qp, IBV_QPS_ERR);
}

static void stress_close(struct stress *s)
{
	int i;

	for (i = 0; i < s->nqps; i++)
		srx_flusher_destroy(&s->qps[i].f);
	if (s->cq)
		ibv_destroy_cq(s->cq);
	if (s->channel)
		ibv_destroy_comp_channel(s->channel);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->seen);
	pthread_mutex_destroy(&s->why_lock);
}

/* ------------------------------------------------------------------ */
/* Producer                                                           */
/* ------------------------------------------------------------------ */

/*
 * A run with min_resizes stops producing once the resizer did that many
 * and min_total were produced: how long that takes depends on the machine
 * far more than the number of completions does. The pollers then wait for
 * exactly what was produced.
 */
static bool stress_enough(struct stress *s, uint64_t produced)
{
	if (!s->min_resizes || produced < s->min_total ||
	    atomic_load(&s->resizes) < s->min_resizes)
		return false;
	atomic_store(&s->goal, produced);
	return true;
}

/*
 * With min_resizes, keep within four times the completions per resize the
 * run asks for, so the resizes spread over the whole run rather than the
 * producer racing to the end of the bitmap while the resizer sleeps.
 */
static bool stress_ahead_of_resizer(struct stress *s, uint64_t produced)
{
	uint64_t per_resize;

	if (!s->min_resizes)
		return false;
	per_resize = s->min_total / s->min_resizes;
	return produced > 4 * per_resize * (atomic_load(&s->resizes) + 1);
}

/* Wait until @n more completions fit in the window; false if stopped. */
static bool stress_room_for(struct stress *s, uint64_t produced, uint64_t n)
{
	while (stress_running(s)) {
		uint64_t consumed = atomic_load(&s->consumed);

		if (produced + n - consumed <= s->window)
			return true;
		sched_yield();
	}
	return false;
}

static void stress_produce_err_mode(struct stress *s)
{
	struct ibv_recv_wr wrs[64], *bad;
	struct ibv_qp *qp = s->qps[0].f.qp;
	uint64_t produced = 0;

	while (produced < s->total && stress_running(s)) {
		uint64_t n = s->total - produced, i;
		int ret;

		if (stress_enough(s, produced))
			return;
		if (stress_ahead_of_resizer(s, produced)) {
			usleep(100);
			continue;
		}
		if (n > s->chain)
			n = s->chain;
		if (!stress_room_for(s, produced, n))
			return;
		for (i = 0; i < n; i++) {
			memset(&wrs[i], 0, sizeof(wrs[i]));
			wrs[i].wr_id = produced + i;
			wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
		}
		ret = ibv_post_recv(qp, wrs, &bad);
		/*
		 * The window keeps the queue from filling, but a queue that
		 * looks full while a resize has the CQ sealed cannot tell
		 * which completions were polled (srx.7): ENOMEM, try again.
		 */
		if (ret == ENOMEM) {
			n = bad - wrs;
			sched_yield();
		} else if (ret) {
			stress_fail(s, "ibv_post_recv at wr_id %llu: %s",
				    (unsigned long long)produced, strerror(ret));
			return;
		}
		produced += n;
		s->qps[0].posted = produced;
		atomic_store(&s->produced, produced);
	}
}

static void stress_produce_cycle_mode(struct stress *s)
{
	uint64_t produced = 0;
	int next = 0;

	while (produced < s->total && stress_running(s)) {
		struct stress_qp *q = &s->qps[next];
		uint64_t consumed = atomic_load(&s->consumed);
		uint64_t n = s->total - produced, room;
		int ret;

		if (stress_enough(s, produced))
			return;
		if (stress_ahead_of_resizer(s, produced)) {
			usleep(100);
			continue;
		}
		next = (next + 1) % s->nqps;
		/* Cycling a QP with flushes in flight would drop them. */
		if (atomic_load(&q->done) != q->posted) {
			sched_yield();
			continue;
		}
		room = s->window - (produced - consumed);
		if (n > q->f.rq_size)
			n = q->f.rq_size;
		if (n > room) {
			if (room < q->f.rq_size / 4) {
				sched_yield();
				continue;
			}
			n = room;
		}
		ret = srx_flush_recvs(&q->f, produced, n);
		if (ret) {
			stress_fail(s, "srx_flush_recvs at wr_id %llu: %s",
				    (unsigned long long)produced, strerror(ret));
			return;
		}
		q->posted += n;
		produced += n;
		atomic_store(&s->produced, produced);
	}
}

static void *stress_producer(void *arg)
{
	struct stress *s = arg;

	if (s->err_mode)
		stress_produce_err_mode(s);
	else
		stress_produce_cycle_mode(s);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Consumers                                                          */
/* ------------------------------------------------------------------ */

struct stress_poller {
	struct stress *s;
	int batch;
	uint64_t next[STRESS_MAX_QPS];	/* lowest wr_id still allowed, per QP */
	uint64_t taken;
};

/* Account for one completion; false (and the test fails) if it is wrong. */
static bool stress_take(struct stress_poller *p, uint64_t wr_id,
			uint32_t qp_num, enum ibv_wc_status status)
{
	struct stress *s = p->s;
	uint64_t bit, old;
	int q;

	for (q = 0; q < s->nqps; q++)
		if (s->qps[q].f.qp->qp_num == qp_num)
			break;
	if (q == s->nqps) {
		stress_fail(s, "wr_id %llu from unknown QP %u",
			    (unsigned long long)wr_id, qp_num);
		return false;
	}
	if (status != IBV_WC_WR_FLUSH_ERR) {
		stress_fail(s, "wr_id %llu: status %s, expected WR_FLUSH_ERR",
			    (unsigned long long)wr_id, ibv_wc_status_str(status));
		return false;
	}
	if (wr_id >= s->total) {
		stress_fail(s, "wr_id %llu was never posted",
			    (unsigned long long)wr_id);
		return false;
	}
	if (wr_id < p->next[q]) {
		stress_fail(s, "out of order: wr_id %llu after %llu (QP %u)",
			    (unsigned long long)wr_id,
			    (unsigned long long)p->next[q] - 1, qp_num);
		return false;
	}
	p->next[q] = wr_id + 1;

	bit = 1ull << (wr_id % 64);
	old = atomic_fetch_or(&s->seen[wr_id / 64], bit);
	if (old & bit) {
		stress_fail(s, "wr_id %llu taken twice",
			    (unsigned long long)wr_id);
		return false;
	}
	atomic_fetch_add_explicit(&s->qps[q].done, 1, memory_order_relaxed);
	p->taken++;
	return true;
}

static bool stress_all_taken(struct stress *s)
{
	return atomic_load(&s->consumed) >= atomic_load(&s->goal);
}

/* Poll up to p->batch with ibv_poll_cq(); returns how many, -1 on error. */
static int stress_poll_once(struct stress_poller *p)
{
	struct ibv_wc wc[64];
	struct stress *s = p->s;
	int n, i;

	n = ibv_poll_cq(s->cq, p->batch, wc);
	if (n < 0) {
		stress_fail(s, "ibv_poll_cq returned %d", n);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!stress_take(p, wc[i].wr_id, wc[i].qp_num, wc[i].status))
			return -1;
	if (n)
		atomic_fetch_add(&s->consumed, n);
	return n;
}

static void *stress_poller_main(void *arg)
{
	struct stress_poller *p = arg;

	while (stress_running(p->s) && !stress_all_taken(p->s)) {
		int n = stress_poll_once(p);

		if (n < 0)
			break;
		if (!n)
			sched_yield();
	}
	return NULL;
}

/* cq_ex: start_poll..end_poll sequences of up to p->batch completions. */
static void *stress_ex_poller_main(void *arg)
{
	struct stress_poller *p = arg;
	struct stress *s = p->s;
	struct ibv_cq_ex *ex = s->cq_ex;

	while (stress_running(s) && !stress_all_taken(s)) {
		struct ibv_poll_cq_attr attr = {};
		int ret, n = 0;

		ret = ibv_start_poll(ex, &attr);
		if (ret == ENOENT) {
			sched_yield();
			continue;	/* no end_poll after a failed start */
		}
		if (ret) {
			stress_fail(s, "ibv_start_poll: %s", strerror(ret));
			break;
		}
		do {
			if (!stress_take(p, ex->wr_id, ibv_wc_read_qp_num(ex),
					 ex->status)) {
				ret = -1;
				break;
			}
			/* Half the sequences end before next_poll says ENOENT. */
			if (++n >= p->batch)
				break;
			ret = ibv_next_poll(ex);
		} while (!ret);
		ibv_end_poll(ex);
		if (n)
			atomic_fetch_add(&s->consumed, n);
		if (ret && ret != ENOENT) {
			if (ret != -1)
				stress_fail(s, "ibv_next_poll: %s", strerror(ret));
			break;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Disturbers: resize, arm, wait for events                           */
/* ------------------------------------------------------------------ */

/* Sizes a resize cycles through; all at least 2 * window (see below). */
static const int stress_resize_sizes[] = {
	4096, 1024, 32767, 2048, 1500, 16384, 1024, 8000,
};

static void *stress_resizer_main(void *arg)
{
	struct stress *s = arg;
	unsigned int i = 0;

	while (stress_running(s) && !stress_all_taken(s)) {
		int cqe = stress_resize_sizes[i++ % (sizeof(stress_resize_sizes) /
					      sizeof(stress_resize_sizes[0]))];
		int ret;

		ret = ibv_resize_cq(s->cq, cqe);
		if (ret) {
			stress_fail(s, "ibv_resize_cq(%d): %s", cqe,
				    strerror(ret));
			break;
		}
		if (s->cq->cqe < cqe) {
			stress_fail(s, "resize to %d gave %d entries", cqe,
				    s->cq->cqe);
			break;
		}
		atomic_fetch_add(&s->resizes, 1);
		/*
		 * A moment on each ring. Providers that lock the CQ around a
		 * resize (rxe) would otherwise starve every poller.
		 */
		usleep(200);
	}
	return NULL;
}

static void *stress_armer_main(void *arg)
{
	struct stress *s = arg;

	while (stress_running(s) && !stress_all_taken(s)) {
		int ret = ibv_req_notify_cq(s->cq, 0);

		if (ret) {
			stress_fail(s, "ibv_req_notify_cq: %s", strerror(ret));
			break;
		}
		atomic_fetch_add(&s->arms, 1);
		/*
		 * Every fire queues one event in the kernel: arming flat out
		 * would pile up more than the waiter reads.
		 */
		usleep(200);
	}
	return NULL;
}

#define STRESS_LOST_WAKEUP_MS 5000

/*
 * The event-driven consumer: arm, poll, and only if the CQ is empty wait
 * for the completion channel. If completions were produced after the CQ
 * was armed and found empty, an event must come; one that does not within
 * STRESS_LOST_WAKEUP_MS is a lost wake-up.
 *
 * Before each arm the waiter reads every event already queued: an arm
 * whose poll found completions fires too, and its event, left queued,
 * would end the next wait even if the arm before that wait was lost (a
 * libsrx dropping one arm in 16 passed this test that way).
 */
static void *stress_waiter_main(void *arg)
{
	struct stress_poller *p = arg;
	struct stress *s = p->s;
	unsigned int unacked = 0;

	while (stress_running(s) && !stress_all_taken(s)) {
		uint64_t produced, start;
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int n, ret;

		while (srx_event_pending(s->channel, 0)) {
			ret = ibv_get_cq_event(s->channel, &ev_cq, &ev_ctx);
			if (ret) {
				stress_fail(s, "ibv_get_cq_event: %s",
					    strerror(errno));
				break;
			}
			atomic_fetch_add(&s->events, 1);
			if (++unacked == 256) {
				ibv_ack_cq_events(s->cq, unacked);
				unacked = 0;
			}
		}
		if (s->failed)
			break;
		ret = ibv_req_notify_cq(s->cq, 0);
		if (ret) {
			stress_fail(s, "ibv_req_notify_cq: %s", strerror(ret));
			break;
		}
		n = stress_poll_once(p);
		if (n < 0)
			break;
		if (n)
			continue;

		produced = atomic_load(&s->produced);
		start = srx_test_now_ns();
		atomic_fetch_add(&s->waits, 1);
		for (;;) {
			bool owed;

			ret = srx_wait_event(s->channel, &ev_cq, &ev_ctx, 100);
			if (!ret)
				break;
			if (ret != ETIMEDOUT) {
				stress_fail(s, "ibv_get_cq_event: %s",
					    strerror(ret));
				break;
			}
			/*
			 * A completion produced since the arm owes this wait
			 * an event, also when the pollers have taken it and
			 * the run is over: the waiter is the only armer, so
			 * a lost arm shows as an event that never comes.
			 */
			owed = atomic_load(&s->produced) > produced;
			if (s->failed || (!owed && (!stress_running(s) ||
						    stress_all_taken(s))))
				break;
			if (owed && srx_test_now_ns() - start >
			    STRESS_LOST_WAKEUP_MS * 1000000ull) {
				stress_fail(s, "lost wake-up: armed, CQ empty, %llu completions produced since, no event for %d ms",
					    (unsigned long long)(atomic_load(&s->produced) - produced),
					    STRESS_LOST_WAKEUP_MS);
				break;
			}
		}
		if (ret)
			continue;
		if (ev_cq != s->cq) {
			stress_fail(s, "event for CQ %p, expected %p",
				    (void *)ev_cq, (void *)s->cq);
			break;
		}
		atomic_fetch_add(&s->events, 1);
		if (++unacked == 256) {
			ibv_ack_cq_events(s->cq, unacked);
			unacked = 0;
		}
	}
	if (unacked)
		ibv_ack_cq_events(s->cq, unacked);
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Running one scenario                                               */
/* ------------------------------------------------------------------ */

struct stress_thread {
	pthread_t tid;
	void *(*fn)(void *);
	void *arg;
	struct stress_poller poller;
};

struct stress_plan {
	int pollers;		/* ibv_poll_cq() threads */
	int ex_pollers;		/* start_poll/next_poll/end_poll threads */
	int batch;
	bool resizer;
	int armers;
	bool waiter;
};

/*
 * Start the threads of @plan and the producer, wait until every completion
 * was taken (or something failed or stalled), join everyone. Returns the
 * seconds it took.
 */
static double stress_run(struct stress *s, const struct stress_plan *plan)
{
	struct stress_thread th[STRESS_MAX_THREADS];
	uint64_t t0, last_progress, last_consumed = 0;
	int n = 0, i;

	memset(th, 0, sizeof(th));
	for (i = 0; i < plan->pollers; i++, n++) {
		th[n].fn = stress_poller_main;
		th[n].poller.batch = plan->batch;
	}
	for (i = 0; i < plan->ex_pollers; i++, n++) {
		th[n].fn = stress_ex_poller_main;
		th[n].poller.batch = plan->batch;
	}
	if (plan->waiter) {
		th[n].fn = stress_waiter_main;
		th[n++].poller.batch = plan->batch;
	}
	for (i = 0; i < n; i++) {
		th[i].poller.s = s;
		th[i].arg = &th[i].poller;
	}
	for (i = 0; i < plan->armers; i++, n++) {
		th[n].fn = stress_armer_main;
		th[n].arg = s;
	}
	if (plan->resizer) {
		th[n].fn = stress_resizer_main;
		th[n++].arg = s;
	}
	th[n].fn = stress_producer;
	th[n++].arg = s;

	t0 = last_progress = srx_test_now_ns();
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i].tid, NULL, th[i].fn, th[i].arg)) {
			stress_fail(s, "pthread_create failed");
			n = i;
			break;
		}

	while (stress_running(s) && !stress_all_taken(s)) {
		uint64_t now = srx_test_now_ns(), c = atomic_load(&s->consumed);

		if (c != last_consumed) {
			last_consumed = c;
			last_progress = now;
		} else if (now - last_progress > STRESS_STALL_S * 1000000000ull) {
			stress_fail(s, "stalled: %llu of %llu completions taken, %llu produced",
				    (unsigned long long)c,
				    (unsigned long long)atomic_load(&s->goal),
				    (unsigned long long)atomic_load(&s->produced));
		}
		if (now - t0 > STRESS_BUDGET_S * 1000000000ull)
			stress_fail(s, "too slow: %llu of %llu completions taken in %u s",
				    (unsigned long long)c,
				    (unsigned long long)atomic_load(&s->goal),
				    STRESS_BUDGET_S);
		usleep(20000);
	}
	s->stop = true;
	for (i = 0; i < n; i++)
		pthread_join(th[i].tid, NULL);
	return (srx_test_now_ns() - t0) / 1e9;
}

/* After a run: nothing failed, every wr_id was seen, nothing is left. */
static void stress_check(struct __test_metadata *_metadata, struct stress *s,
			 double secs)
{
	struct ibv_wc wc;
	uint64_t i, missing = 0, first_missing = 0;

	ASSERT_FALSE(s->failed) TH_LOG("%s", s->why);
	ASSERT_EQ(s->goal, atomic_load(&s->consumed));
	for (i = 0; i < s->goal; i++)
		if (!(atomic_load(&s->seen[i / 64]) & (1ull << (i % 64))))
			if (!missing++)
				first_missing = i;
	EXPECT_EQ((uint64_t)0, missing) TH_LOG("first missing wr_id %llu",
				     (unsigned long long)first_missing);
	/* Nothing beyond the total shows up late (rxe flushes async). */
	EXPECT_EQ(0, srx_wait_cqes(s->cq, &wc, 1, 100));
	TH_LOG("%llu completions in %.2f s (%.0f/s)",
	       (unsigned long long)s->goal, secs, s->goal / secs);
}

/* ------------------------------------------------------------------ */
/* Tests: many pollers on one CQ                                      */
/* ------------------------------------------------------------------ */

FIXTURE(pollers) {
	struct stress s;
};

FIXTURE_VARIANT(pollers) {
	int batch;
};

/* 64 takes more than libsrx's 32 CQEs per compare-and-swap per call. */
FIXTURE_VARIANT_ADD(pollers, batch64) { .batch = 64 };
FIXTURE_VARIANT_ADD(pollers, batch16) { .batch = 16 };
FIXTURE_VARIANT_ADD(pollers, batch1) { .batch = 1 };

FIXTURE_SETUP(pollers)
{
	int size;

	ASSERT_EQ(0, stress_open(&self->s, STRESS_COMPLETIONS));
	size = stress_cq_size(&self->s, 65536);
	self->s.cq = ibv_create_cq(self->s.ctx, size, NULL, NULL, 0);
	ASSERT_NE(NULL, self->s.cq);
	ASSERT_EQ(0, stress_make_qps(&self->s, size / 2));
}

FIXTURE_TEARDOWN(pollers)
{
	stress_close(&self->s);
}

/* 8 threads in ibv_poll_cq() on one CQ, 1M completions, each once. */
TEST_F_TIMEOUT(pollers, eight_threads, 120)
{
	struct stress_plan plan = { .pollers = 8, .batch = variant->batch };
	double secs = stress_run(&self->s, &plan);

	stress_check(_metadata, &self->s, secs);
}

/* ------------------------------------------------------------------ */
/* Resize, notify and cq_ex under concurrency                         */
/* ------------------------------------------------------------------ */

FIXTURE(busy_cq) {
	struct stress s;
};

FIXTURE_SETUP(busy_cq)
{
	/* Bits for the resize test to go on until it resized enough. */
	ASSERT_EQ(0, stress_open(&self->s, 4 * STRESS_COMPLETIONS));
	self->s.total = STRESS_COMPLETIONS_BUSY;
	self->s.goal = STRESS_COMPLETIONS_BUSY;
}

FIXTURE_TEARDOWN(busy_cq)
{
	stress_close(&self->s);
}

/*
 * 6 pollers and a producer while another thread resizes the CQ up and down
 * between 1024 and 32767 entries, at least 200 times and over at least
 * 300,000 completions. The window (512) stays below the smallest size, so
 * a shrink never meets more pending CQEs than fit: every resize must
 * succeed, and still every completion is seen once, in order.
 *
 * rxe holds the CQ's spinlock across the whole resize, system call and
 * remapping included, and its pollers spin on it: under TCG that costs it
 * a hundred times srx's time, so it gets a tenth of the run.
 */
TEST_F_TIMEOUT(busy_cq, resize_under_pollers, 120)
{
	struct stress_plan plan = {
		.pollers = 6, .batch = 16, .resizer = true,
	};
	double secs;

	self->s.total = 4 * STRESS_COMPLETIONS;		/* the bitmap's size */
	self->s.goal = self->s.total;
	self->s.min_total = STRESS_COMPLETIONS_BUSY;
	self->s.min_resizes = 200;
	if (!srx_test_is_srx()) {
		self->s.min_total /= 10;
		self->s.min_resizes /= 10;
	}
	self->s.cq = ibv_create_cq(self->s.ctx, 4096, NULL, NULL, 0);
	ASSERT_NE(NULL, self->s.cq);
	ASSERT_EQ(0, stress_make_qps(&self->s, 512));

	secs = stress_run(&self->s, &plan);
	stress_check(_metadata, &self->s, secs);
	TH_LOG("%llu resizes", (unsigned long long)self->s.resizes);
	EXPECT_LE(self->s.min_resizes, self->s.resizes);
}

/*
 * Threads polling the CQ while a producer produces, and one thread that
 * consumes by events: arm, poll, wait if empty. It must never wait in vain
 * while completions keep coming. The waiter is the only thread that arms:
 * another arming thread would re-arm the CQ for it within microseconds,
 * and an arm that libsrx or the kernel lost would go unseen. So a lost
 * arm here is a wait with no event, which fails the run.
 */
TEST_F_TIMEOUT(busy_cq, notify_under_pollers, 120)
{
	struct stress_plan plan = {
		.pollers = 3, .batch = 16, .waiter = true,
	};
	double secs;
	int size;

	self->s.channel = ibv_create_comp_channel(self->s.ctx);
	ASSERT_NE(NULL, self->s.channel);
	size = stress_cq_size(&self->s, 16384);
	self->s.cq = ibv_create_cq(self->s.ctx, size, NULL, self->s.channel,
				   0);
	ASSERT_NE(NULL, self->s.cq);
	ASSERT_EQ(0, stress_make_qps(&self->s, size / 2));

	secs = stress_run(&self->s, &plan);
	stress_check(_metadata, &self->s, secs);
	TH_LOG("%llu arms, %llu waits, %llu events",
	       (unsigned long long)self->s.arms,
	       (unsigned long long)self->s.waits,
	       (unsigned long long)self->s.events);
	EXPECT_LT((uint64_t)0, self->s.waits);
	EXPECT_LT((uint64_t)0, self->s.events);
}

/*
 * A cq_ex without IBV_CREATE_CQ_ATTR_SINGLE_THREADED: 4 threads in
 * start_poll/next_poll/end_poll and 2 in ibv_poll_cq() on the same CQ.
 */
TEST_F_TIMEOUT(busy_cq, cq_ex_threads, 120)
{
	struct ibv_cq_init_attr_ex attr = {
		.wc_flags = IBV_WC_EX_WITH_QP_NUM,
	};
	struct stress_plan plan = {
		.pollers = 2, .ex_pollers = 4, .batch = 16,
	};
	double secs;

	attr.cqe = stress_cq_size(&self->s, 65536);
	self->s.cq_ex = ibv_create_cq_ex(self->s.ctx, &attr);
	ASSERT_NE(NULL, self->s.cq_ex);
	self->s.cq = ibv_cq_ex_to_cq(self->s.cq_ex);
	ASSERT_EQ(0, stress_make_qps(&self->s, attr.cqe / 2));

	secs = stress_run(&self->s, &plan);
	stress_check(_metadata, &self->s, secs);
}

/* ------------------------------------------------------------------ */
/* Hostile process                                                    */
/* ------------------------------------------------------------------ */

/* Tests that open what they need themselves (a fixture for the timeout). */
FIXTURE(alone) {
	int unused;
};

FIXTURE_SETUP(alone)
{
}

FIXTURE_TEARDOWN(alone)
{
}

/* The objects whose counts must come back after a test. */
static const char *const stress_kinds[3] = { "cq", "qp", "pd" };

/*
 * The rings of one CQ and one QP, found through /proc/self/maps and the
 * layout srx-abi.h documents (a control block at offset 0 of each
 * mapping), never through libsrx's private structures.
 */
struct hostile {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct srx_test_map cq_map, sq_map, rq_map;
	unsigned int unacked;
	uint64_t rng;
	int kmsg;
	pthread_rwlock_t *maps_lock;	/* held for writing while maps change */
	long base[3];			/* stress_kinds before the test */
};

static uint64_t hostile_rand(struct hostile *h)
{
	/* xorshift64: reproducible from the seed in the log */
	h->rng ^= h->rng << 13;
	h->rng ^= h->rng >> 7;
	h->rng ^= h->rng << 17;
	return h->rng;
}

static struct srx_cq_ctrl *hostile_cq(struct hostile *h)
{
	return (struct srx_cq_ctrl *)h->cq_map.start;
}

static struct srx_wq_ctrl *hostile_wq(const struct srx_test_map *m)
{
	return (struct srx_wq_ctrl *)m->start;
}

/* The CQ's current mapping: the uverbs mapping that is not the QP's. */
static int hostile_find_cq(struct hostile *h)
{
	struct srx_test_map maps[16];
	int n = srx_test_maps(maps, 16), i, found = 0;

	for (i = 0; i < n && i < 16; i++) {
		if (maps[i].start == h->sq_map.start ||
		    maps[i].start == h->rq_map.start)
			continue;
		h->cq_map = maps[i];
		found++;
	}
	return found == 1 ? 0 : -1;
}

static int hostile_setup(struct hostile *h, uint64_t seed)
{
	struct ibv_qp_init_attr qattr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 512,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct srx_test_map before[16], after[16], added[4];
	int nb, na, n;

	memset(h, 0, sizeof(*h));
	h->rng = seed;
	h->kmsg = srx_kmsg_open();
	srx_res_counts(srx_test_dev_name(), stress_kinds, 3, h->base);

	h->ctx = srx_test_open();
	if (!h->ctx)
		return -1;
	h->pd = ibv_alloc_pd(h->ctx);
	h->channel = ibv_create_comp_channel(h->ctx);
	if (!h->pd || !h->channel)
		return -1;

	nb = srx_test_maps(before, 16);
	h->cq = ibv_create_cq(h->ctx, 64, NULL, h->channel, 0);
	if (!h->cq)
		return -1;
	na = srx_test_maps(after, 16);
	n = srx_test_map_new(before, nb, after, na, added, 4);
	if (n != 1)
		return -1;
	h->cq_map = added[0];

	qattr.send_cq = h->cq;
	qattr.recv_cq = h->cq;
	nb = srx_test_maps(before, 16);
	h->qp = ibv_create_qp(h->pd, &qattr);
	if (!h->qp)
		return -1;
	na = srx_test_maps(after, 16);
	n = srx_test_map_new(before, nb, after, na, added, 4);
	if (n != 2)
		return -1;
	/* 512 receives need more room than 8 sends: the RQ is the larger. */
	if (added[0].end - added[0].start > added[1].end - added[1].start) {
		h->rq_map = added[0];
		h->sq_map = added[1];
	} else {
		h->rq_map = added[1];
		h->sq_map = added[0];
	}
	return 0;
}

/* Pick a value an index word might be scribbled with. */
static uint64_t hostile_index(struct hostile *h, uint32_t near)
{
	switch (hostile_rand(h) % 6) {
	case 0:
		return hostile_rand(h);
	case 1:
		return near + (hostile_rand(h) % 8);
	case 2:
		return near - (hostile_rand(h) % 8);
	case 3:
		return near + 0x80000000u;
	case 4:
		return 0;
	default:
		return UINT32_MAX;
	}
}

static void hostile_scribble(struct hostile *h)
{
	struct srx_cq_ctrl *cq = hostile_cq(h);
	struct srx_wq_ctrl *sq = hostile_wq(&h->sq_map);
	struct srx_wq_ctrl *rq = hostile_wq(&h->rq_map);
	volatile uint8_t *p;
	size_t len, i;

	switch (hostile_rand(h) % 10) {
	case 0:		/* the consumer index, seal half left alone */
		*(volatile uint32_t *)((char *)cq +
				       offsetof(struct srx_cq_ctrl, cons)) =
			hostile_index(h, cq->prod);
		break;
	case 1:		/* the whole consumer word, seal half included */
		cq->cons = hostile_rand(h) % 2 ?
			   ((uint64_t)SRX_CQ_CONS_SEALED << 32) | cq->prod :
			   hostile_rand(h);
		break;
	case 2:
		cq->arm = hostile_rand(h);
		break;
	case 3:		/* kernel-written words */
		cq->prod = hostile_index(h, cq->prod);
		cq->fired = hostile_rand(h);
		cq->status = hostile_rand(h);
		cq->dropped = hostile_rand(h);
		break;
	case 4:		/* CQEs */
		p = (uint8_t *)cq + sizeof(*cq);
		len = h->cq_map.end - h->cq_map.start - sizeof(*cq);
		for (i = 0; i < 64; i++)
			p[hostile_rand(h) % len] = hostile_rand(h);
		break;
	case 5:
		rq->prod = hostile_index(h, rq->cons);
		break;
	case 6:
		sq->prod = hostile_index(h, sq->cons);
		break;
	case 7:		/* kernel-written words of the work queues */
		rq->cons = hostile_rand(h);
		sq->state = hostile_rand(h) % 8;
		rq->state = hostile_rand(h) % 8;
		break;
	case 8:		/* WQEs */
		p = (uint8_t *)sq + sizeof(*sq);
		len = h->sq_map.end - h->sq_map.start - sizeof(*sq);
		for (i = 0; i < 64; i++)
			p[hostile_rand(h) % len] = hostile_rand(h);
		p = (uint8_t *)rq + sizeof(*rq);
		len = h->rq_map.end - h->rq_map.start - sizeof(*rq);
		for (i = 0; i < 64; i++)
			p[hostile_rand(h) % len] = hostile_rand(h);
		break;
	default:	/* everything in the control blocks at once */
		for (i = 0; i < sizeof(*cq) / 4; i++)
			((volatile uint32_t *)cq)[i] = hostile_rand(h);
		for (i = 0; i < sizeof(*sq) / 4; i++)
			((volatile uint32_t *)sq)[i] = hostile_rand(h);
		for (i = 0; i < sizeof(*rq) / 4; i++)
			((volatile uint32_t *)rq)[i] = hostile_rand(h);
		break;
	}
}

static void hostile_drain_events(struct hostile *h)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	while (srx_event_pending(h->channel, 0) &&
	       !ibv_get_cq_event(h->channel, &ev_cq, &ev_ctx))
		h->unacked++;
}

/*
 * Use the CQ and QP as an honest process would, ignoring what comes back:
 * after scribbling, wrong answers are allowed, hangs and crashes are not.
 */
static int hostile_use(struct hostile *h)
{
	struct ibv_recv_wr rwr[8], *rbad;
	struct ibv_send_wr swr = {}, *sbad;
	struct ibv_qp_attr attr;
	struct ibv_wc wc[64];
	unsigned int i, n;
	int lost;

	switch (hostile_rand(h) % 8) {
	case 0:
		ibv_poll_cq(h->cq, 1 + hostile_rand(h) % 64, wc);
		break;
	case 1:
		ibv_req_notify_cq(h->cq, hostile_rand(h) % 2);
		break;
	case 2:
		n = 1 + hostile_rand(h) % 8;
		for (i = 0; i < n; i++) {
			memset(&rwr[i], 0, sizeof(rwr[i]));
			rwr[i].wr_id = hostile_rand(h);
			rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
		}
		ibv_post_recv(h->qp, rwr, &rbad);
		break;
	case 3:
		swr.wr_id = hostile_rand(h);
		swr.opcode = hostile_rand(h) % 2 ? IBV_WR_SEND :
						   IBV_WR_RDMA_WRITE;
		swr.send_flags = IBV_SEND_SIGNALED;
		ibv_post_send(h->qp, &swr, &sbad);
		break;
	case 4:		/* through RESET and INIT back to ERR */
		srx_qp_move(h->qp, IBV_QPS_RESET);
		srx_qp_move(h->qp, IBV_QPS_INIT);
		n = 1 + hostile_rand(h) % 8;
		for (i = 0; i < n; i++) {
			memset(&rwr[i], 0, sizeof(rwr[i]));
			rwr[i].wr_id = hostile_rand(h);
			rwr[i].next = i + 1 < n ? &rwr[i + 1] : NULL;
		}
		ibv_post_recv(h->qp, rwr, &rbad);
		srx_qp_move(h->qp, IBV_QPS_ERR);
		break;
	case 5:
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_ERR;
		ibv_modify_qp(h->qp, &attr, IBV_QP_STATE);
		break;
	case 6:		/* up or down; failures allowed, the map moves */
		if (h->maps_lock)
			pthread_rwlock_wrlock(h->maps_lock);
		ibv_resize_cq(h->cq, 1 + hostile_rand(h) % 1024);
		lost = hostile_find_cq(h);
		if (h->maps_lock)
			pthread_rwlock_unlock(h->maps_lock);
		if (lost)
			return -1;
		break;
	default:
		hostile_drain_events(h);
		break;
	}
	return 0;
}

/* Destroy everything; 0 if every destroy succeeded. */
static int hostile_teardown(struct hostile *h)
{
	int ret = 0;

	hostile_drain_events(h);
	if (h->unacked)
		ibv_ack_cq_events(h->cq, h->unacked);
	if (h->qp && ibv_destroy_qp(h->qp))
		ret = -1;
	if (h->cq && ibv_destroy_cq(h->cq))
		ret = -1;
	if (h->channel && ibv_destroy_comp_channel(h->channel))
		ret = -1;
	if (h->pd && ibv_dealloc_pd(h->pd))
		ret = -1;
	if (h->ctx && ibv_close_device(h->ctx))
		ret = -1;
	return ret;
}

/* Counts come back to the baseline once the objects are gone. */
static void hostile_check_counts(struct __test_metadata *_metadata,
				 struct hostile *h)
{
	long now[3];

	srx_res_counts(srx_test_dev_name(), stress_kinds, 3, now);
	EXPECT_EQ(0, memcmp(h->base, now, sizeof(now)))
		TH_LOG("cq %ld -> %ld, qp %ld -> %ld, pd %ld -> %ld",
		       h->base[0], now[0], h->base[1], now[1], h->base[2],
		       now[2]);
}

/*
 * Scribble over every word of the rings in turn, deterministically first
 * (the cases the kernel counts in bad_user_index), then at random, using
 * the objects between scribbles; then destroy them. Wrong completions are
 * allowed; a kernel message, a failed destroy or a leaked object is not.
 */
TEST_F_TIMEOUT(alone, hostile_scribbler, 120)
{
	const char *dev = srx_test_dev_name();
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND }, *sbad;
	struct ibv_wc wc[8];
	struct hostile h;
	long long bad0, bad1;
	uint64_t seed = srx_test_now_ns() | 1;
	int round;

	if (!srx_test_is_srx())
		SKIP(return, "the ring layout is srx's");
	TH_LOG("seed %llu", (unsigned long long)seed);

	bad0 = srx_hw_counter(dev, "bad_user_index");
	ASSERT_LE(0, bad0);
	ASSERT_EQ(0, hostile_setup(&h, seed));
	ASSERT_EQ(0u, hostile_cq(&h)->prod);
	ASSERT_EQ((uint32_t)SRX_QP_STATE_RESET, hostile_wq(&h.sq_map)->state);
	ASSERT_EQ((uint32_t)SRX_QP_STATE_RESET, hostile_wq(&h.rq_map)->state);
	ASSERT_EQ(0, srx_qp_move(h.qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(h.qp, IBV_QPS_ERR));
	ASSERT_EQ((uint32_t)SRX_QP_STATE_ERR, hostile_wq(&h.rq_map)->state);

	/*
	 * A receive-queue producer index more than the ring holds ahead of
	 * the kernel's consumer index; the send doorbell flushes both queues,
	 * so the kernel reads it, must not believe it, and counts it.
	 */
	hostile_wq(&h.rq_map)->prod = hostile_wq(&h.rq_map)->cons + 0x40000000u;
	ASSERT_EQ(0, ibv_post_send(h.qp, &swr, &sbad));
	ASSERT_EQ(1, srx_wait_cqes(h.cq, wc, 8, 1000));
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, (int)wc[0].status);
	bad1 = srx_hw_counter(dev, "bad_user_index");
	EXPECT_LT(bad0, bad1);

	/* A consumer index ahead of the producer, met by a resize. */
	hostile_cq(&h)->cons = hostile_cq(&h)->prod + 1000;
	ASSERT_EQ(0, ibv_resize_cq(h.cq, 256));
	ASSERT_EQ(0, hostile_find_cq(&h));
	EXPECT_LT(bad1, srx_hw_counter(dev, "bad_user_index"));

	/* A sealed consumer word nobody unseals: polls find nothing. */
	hostile_cq(&h)->cons |= (uint64_t)SRX_CQ_CONS_SEALED << 32;
	ASSERT_EQ(0, ibv_post_send(h.qp, &swr, &sbad));
	EXPECT_EQ(0, ibv_poll_cq(h.cq, 8, wc));
	EXPECT_EQ(0, ibv_req_notify_cq(h.cq, 0));
	/* A resize seals and unseals on its own terms: the CQ works again. */
	ASSERT_EQ(0, ibv_resize_cq(h.cq, 512));
	ASSERT_EQ(0, hostile_find_cq(&h));

	for (round = 0; round < 3000; round++) {
		hostile_scribble(&h);
		ASSERT_EQ(0, hostile_use(&h)) TH_LOG("CQ mapping lost");
		ASSERT_EQ(0, hostile_use(&h)) TH_LOG("CQ mapping lost");
	}

	EXPECT_EQ(0, hostile_teardown(&h));
	hostile_check_counts(_metadata, &h);
	EXPECT_EQ(0, srx_kmsg_bad(h.kmsg));
	close(h.kmsg);
}

/* The scribbler thread of the concurrent variant. */
struct hostile_race {
	struct hostile *h;
	pthread_rwlock_t maps_lock;	/* write-held while mappings change */
	_Atomic bool stop;
	uint64_t rng;
	uint64_t writes;
};

static void *hostile_race_main(void *arg)
{
	struct hostile_race *r = arg;
	struct srx_test_map maps[16];

	while (!r->stop) {
		int n, i, k;

		pthread_rwlock_rdlock(&r->maps_lock);
		n = srx_test_maps(maps, 16);
		for (i = 0; i < n && i < 16; i++) {
			volatile uint32_t *w = (uint32_t *)maps[i].start;
			size_t words = (maps[i].end - maps[i].start) / 4;

			for (k = 0; k < 32; k++) {
				r->rng ^= r->rng << 13;
				r->rng ^= r->rng >> 7;
				r->rng ^= r->rng << 17;
				/* The control blocks mostly, the entries too. */
				w[r->rng % (k < 24 ? 48 : words)] = r->rng >> 32;
				r->writes++;
			}
		}
		pthread_rwlock_unlock(&r->maps_lock);
		sched_yield();
	}
	return NULL;
}

/*
 * The same, with a thread writing random words into the live rings while
 * the main thread produces, polls, arms and resizes: the kernel reads user
 * memory that changes under it.
 */
TEST_F_TIMEOUT(alone, hostile_racing_scribbler, 120)
{
	struct hostile_race race = {};
	struct hostile h;
	pthread_t tid;
	uint64_t seed = srx_test_now_ns() | 1, end;
	unsigned long uses = 0;

	if (!srx_test_is_srx())
		SKIP(return, "the ring layout is srx's");
	TH_LOG("seed %llu", (unsigned long long)seed);

	ASSERT_EQ(0, hostile_setup(&h, seed));
	ASSERT_EQ(0, srx_qp_move(h.qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(h.qp, IBV_QPS_ERR));
	race.h = &h;
	race.rng = seed * 3 + 1;
	pthread_rwlock_init(&race.maps_lock, NULL);
	ASSERT_EQ(0, pthread_create(&tid, NULL, hostile_race_main, &race));

	/* A resize maps a new ring and may unmap a failed one. */
	h.maps_lock = &race.maps_lock;
	end = srx_test_now_ns() + 10 * 1000000000ull;
	while (srx_test_now_ns() < end) {
		ASSERT_EQ(0, hostile_use(&h)) TH_LOG("CQ mapping lost");
		uses++;
	}
	race.stop = true;
	pthread_join(tid, NULL);
	TH_LOG("%lu operations against %llu scribbled words", uses,
	       (unsigned long long)race.writes);

	EXPECT_EQ(0, hostile_teardown(&h));
	hostile_check_counts(_metadata, &h);
	EXPECT_EQ(0, srx_kmsg_bad(h.kmsg));
	close(h.kmsg);
	pthread_rwlock_destroy(&race.maps_lock);
}

/* ------------------------------------------------------------------ */
/* A child killed while polling and arming                            */
/* ------------------------------------------------------------------ */

/* The child: every kind of activity at once, until it is killed. */
static void killed_child(int ready_fd)
{
	struct stress s;
	struct stress_thread th[6];
	int i;

	/* More than it can produce before the kill. */
	if (stress_open(&s, 1ull << 24))
		_exit(2);
	s.channel = ibv_create_comp_channel(s.ctx);
	s.cq = s.channel ? ibv_create_cq(s.ctx, 4096, NULL, s.channel, 0) :
			   NULL;
	if (!s.cq || stress_make_qps(&s, 512))
		_exit(3);

	memset(th, 0, sizeof(th));
	th[0].fn = stress_poller_main;
	th[1].fn = stress_poller_main;
	th[2].fn = stress_waiter_main;
	for (i = 0; i < 3; i++) {
		th[i].poller.s = &s;
		th[i].poller.batch = 16;
		th[i].arg = &th[i].poller;
	}
	th[3].fn = stress_armer_main;
	th[4].fn = stress_resizer_main;
	th[5].fn = stress_producer;
	for (i = 3; i < 6; i++)
		th[i].arg = &s;
	for (i = 0; i < 6; i++)
		if (pthread_create(&th[i].tid, NULL, th[i].fn, th[i].arg))
			_exit(4);
	/* Tell the parent once completions flow. */
	while (atomic_load(&s.consumed) < 1000 && !s.failed)
		usleep(1000);
	if (write(ready_fd, s.failed ? "F" : "R", 1) != 1)
		_exit(5);
	for (;;)
		pause();
}

/*
 * Kill children at random points of polling, arming, resizing and
 * producing; the kernel must clean up each one and stay usable.
 */
TEST_F_TIMEOUT(alone, killed_while_busy, 120)
{
	struct stress_plan plan = { .pollers = 2, .batch = 16 };
	int kmsg = srx_kmsg_open(), round;
	long base[3], now[3];
	struct stress s;

	ASSERT_EQ(0, srx_res_counts(srx_test_dev_name(), stress_kinds, 3, base));
	for (round = 0; round < 6; round++) {
		int fds[2], status, tries;
		char c = 0;
		pid_t pid;

		ASSERT_EQ(0, pipe(fds));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(fds[0]);
			killed_child(fds[1]);
		}
		close(fds[1]);
		ASSERT_EQ(1, read(fds[0], &c, 1));
		close(fds[0]);
		EXPECT_EQ('R', c) TH_LOG("child %d failed before the kill", pid);
		usleep((round * 37 % 100) * 1000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));

		/* The file is released on exit; allow the kernel a moment. */
		for (tries = 0; tries < 100; tries++) {
			srx_res_counts(srx_test_dev_name(), stress_kinds, 3, now);
			if (!memcmp(base, now, sizeof(now)))
				break;
			usleep(50000);
		}
		EXPECT_EQ(0, memcmp(base, now, sizeof(now)))
			TH_LOG("round %d: cq %ld -> %ld, qp %ld -> %ld, pd %ld -> %ld",
			       round, base[0], now[0], base[1], now[1], base[2],
			       now[2]);
	}

	/* The device still works for the next process. */
	ASSERT_EQ(0, stress_open(&s, 10000));
	s.cq = ibv_create_cq(s.ctx, 2048, NULL, NULL, 0);
	ASSERT_NE(NULL, s.cq);
	ASSERT_EQ(0, stress_make_qps(&s, 1000));
	stress_check(_metadata, &s, stress_run(&s, &plan));
	stress_close(&s);
	EXPECT_EQ(0, srx_kmsg_bad(kmsg));
	close(kmsg);
}

TEST_HARNESS_MAIN
