// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The doorbell of a user QP and the flush behind it, driven the way a
 * hostile process can: raw write() commands on the uverbs file, and the
 * QP's own mapped rings written directly.
 *
 *  - A write() POST_SEND carrying work requests is refused (EINVAL, bad_wr
 *    names the first one): srx never takes work requests that way, and
 *    dropping them with success would lose them. The empty one, the
 *    doorbell, works.
 *  - A doorbell whose queues claim a whole ring of WQEs (prod = cons +
 *    entries, the most an index check lets through) must not keep the CPU
 *    it runs on: a SCHED_FIFO thread on that CPU measures how late its
 *    timer wake-ups are while another thread rings such doorbells in a loop,
 *    against phases where the same doorbells find nothing to flush.
 *    Interrupts off or no scheduling point for the whole flush delays every
 *    wake-up by the length of a flush.
 *  - A doorbell that saw the QP in ERR must not flush receives posted after
 *    the QP went on to RESET and INIT.
 *  - WQEs no provider would write (bad opcode, num_sge, inline length,
 *    flags, reserved words, a length that wraps in 32 bits) are taken,
 *    counted as invalid, and flushed like any other, with the wr_id and
 *    opcode they were taken with.
 *
 * The rings are found through /proc/self/maps and srx-abi.h's layout (a
 * control block at offset 0 of each mapping), never through libsrx's
 * private structures. Threads never ASSERT: they record and the test
 * checks after joining them.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mount.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

static void __attribute__((constructor)) doorbell_preload(void)
{
	srx_test_preload();
}

/* The CPU the doorbell thread shares with the thread it may delay. */
#define DB_CPU 1

/* ------------------------------------------------------------------ */
/* Raw write() commands                                               */
/* ------------------------------------------------------------------ */

/*
 * write() POST_SEND with @nwr SEND work requests of no SGE (0: the
 * doorbell). Returns 0 or an errno value; *@bad_wr gets the response's
 * bad_wr (1-based index of the failing request, 0 for none).
 */
static int raw_post_send(struct ibv_qp *qp, unsigned int nwr, uint32_t *bad_wr)
{
	struct ib_uverbs_post_send_resp resp = { .bad_wr = UINT32_MAX };
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_post_send cmd;
	struct ib_uverbs_send_wr wr;
	char buf[sizeof(hdr) + sizeof(cmd) + 4 * sizeof(wr)];
	size_t len = sizeof(hdr) + sizeof(cmd) + nwr * sizeof(wr);
	unsigned int i;
	ssize_t n;

	if (nwr > 4)
		return E2BIG;
	memset(&hdr, 0, sizeof(hdr));
	hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	hdr.in_words = len / 4;
	hdr.out_words = sizeof(resp) / 4;
	memset(&cmd, 0, sizeof(cmd));
	cmd.response = (uintptr_t)&resp;
	cmd.qp_handle = qp->handle;
	cmd.wr_count = nwr;
	cmd.wqe_size = sizeof(wr);
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), &cmd, sizeof(cmd));
	for (i = 0; i < nwr; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x5e4d0000 + i;
		wr.opcode = IB_UVERBS_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		memcpy(buf + sizeof(hdr) + sizeof(cmd) + i * sizeof(wr), &wr,
		       sizeof(wr));
	}

	n = write(qp->context->cmd_fd, buf, len);
	if (bad_wr)
		*bad_wr = resp.bad_wr;
	if (n < 0)
		return errno;
	return n == (ssize_t)len ? 0 : EIO;
}

/* write() POST_RECV with one work request of no SGE; 0 or an errno value. */
static int raw_post_recv(struct ibv_qp *qp)
{
	struct ib_uverbs_post_recv_resp resp = { .bad_wr = UINT32_MAX };
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_post_recv cmd;
	struct ib_uverbs_recv_wr wr;
	char buf[sizeof(hdr) + sizeof(cmd) + sizeof(wr)];
	ssize_t n;

	memset(&hdr, 0, sizeof(hdr));
	hdr.command = IB_USER_VERBS_CMD_POST_RECV;
	hdr.in_words = sizeof(buf) / 4;
	hdr.out_words = sizeof(resp) / 4;
	memset(&cmd, 0, sizeof(cmd));
	cmd.response = (uintptr_t)&resp;
	cmd.qp_handle = qp->handle;
	cmd.wr_count = 1;
	cmd.wqe_size = sizeof(wr);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x7ec0;
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), &cmd, sizeof(cmd));
	memcpy(buf + sizeof(hdr) + sizeof(cmd), &wr, sizeof(wr));

	n = write(qp->context->cmd_fd, buf, sizeof(buf));
	if (n < 0)
		return errno;
	return n == (ssize_t)sizeof(buf) ? 0 : EIO;
}

/* ------------------------------------------------------------------ */
/* Fixture: a QP and its two rings                                    */
/* ------------------------------------------------------------------ */

FIXTURE(db) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	volatile struct srx_wq_ctrl *sq, *rq;
	size_t sq_len, rq_len;		/* bytes of each mapping */
	uint32_t sq_entries, rq_entries;
	int kmsg;
	char preempt[32];	/* the preemption model to restore, or "" */
};

FIXTURE_SETUP(db)
{
	if (!srx_test_is_srx())
		SKIP(return, "the doorbell and the ring layout are srx's");
	self->kmsg = srx_kmsg_open();
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(db)
{
	if (self->preempt[0]) {
		FILE *f = fopen("/sys/kernel/debug/sched/preempt", "w");

		if (f) {
			fputs(self->preempt, f);
			fclose(f);
		}
	}
	if (self->qp)
		ibv_destroy_qp(self->qp);
	if (self->scq)
		ibv_destroy_cq(self->scq);
	if (self->rcq)
		ibv_destroy_cq(self->rcq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	if (self->kmsg >= 0)
		close(self->kmsg);
}

/*
 * An RC QP with @swr sends and @rwr receives of one SGE, send completions
 * to a CQ of @scqe entries, receive completions to one of @rcqe; its rings
 * are found as the two uverbs mappings its creation added (the SQ's is the
 * larger: a send WQE is at least four times a receive WQE here).
 */
static int db_make_qp(FIXTURE_DATA(db) *self, uint32_t swr, uint32_t rwr,
		      int scqe, int rcqe)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = swr, .max_recv_wr = rwr,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct srx_test_map before[32], after[32], added[4];
	int nb, na;

	self->scq = ibv_create_cq(self->ctx, scqe, NULL, NULL, 0);
	self->rcq = ibv_create_cq(self->ctx, rcqe, NULL, NULL, 0);
	if (!self->scq || !self->rcq)
		return -1;
	attr.send_cq = self->scq;
	attr.recv_cq = self->rcq;
	nb = srx_test_maps(before, 32);
	self->qp = ibv_create_qp(self->pd, &attr);
	if (!self->qp)
		return -1;
	na = srx_test_maps(after, 32);
	if (nb < 0 || na > 32 ||
	    srx_test_map_new(before, nb, after, na, added, 4) != 2)
		return -1;
	if (attr.cap.max_send_wr * 4 < attr.cap.max_recv_wr)
		return -1;	/* the size rule above would not hold */
	if (added[0].end - added[0].start < added[1].end - added[1].start) {
		struct srx_test_map t = added[0];

		added[0] = added[1];
		added[1] = t;
	}
	self->sq = (volatile struct srx_wq_ctrl *)added[0].start;
	self->rq = (volatile struct srx_wq_ctrl *)added[1].start;
	self->sq_len = added[0].end - added[0].start;
	self->rq_len = added[1].end - added[1].start;
	self->sq_entries = attr.cap.max_send_wr;
	self->rq_entries = attr.cap.max_recv_wr;
	return 0;
}

/*
 * Switch the kernel's preemption model (PREEMPT_DYNAMIC, through debugfs)
 * to @model, remembering the current one for the teardown. 0, or -1 when
 * the kernel cannot switch.
 */
static int db_set_preempt(FIXTURE_DATA(db) *self, const char *model)
{
	const char *path = "/sys/kernel/debug/sched/preempt";
	char line[128], *open_p, *close_p;
	FILE *f;

	if (access(path, F_OK))
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
	f = fopen(path, "r");
	if (!f)
		return -1;
	/* "none (voluntary) full": the current one is in parentheses. */
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	open_p = strchr(line, '(');
	close_p = open_p ? strchr(open_p, ')') : NULL;
	if (!close_p || close_p - open_p - 1 >= (int)sizeof(self->preempt))
		return -1;
	if (!self->preempt[0]) {
		memcpy(self->preempt, open_p + 1, close_p - open_p - 1);
		self->preempt[close_p - open_p - 1] = '\0';
	}
	f = fopen(path, "w");
	if (!f)
		return -1;
	if (fputs(model, f) < 0) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static int db_pin(int cpu, int fifo_prio)
{
	struct sched_param sp = { .sched_priority = fifo_prio };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		return -1;
	if (fifo_prio && pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		return -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* write() POST_SEND and POST_RECV with work requests                 */
/* ------------------------------------------------------------------ */

/*
 * In every state the doorbell is allowed in, a write() POST_SEND with work
 * requests fails with EINVAL and bad_wr = 1, and completes nothing; the
 * doorbell itself succeeds, and in ERR flushes what the ring holds.
 */
TEST_F(db, post_send_with_work_requests_fails)
{
	static const enum ibv_qp_state states[] = {
		IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_ERR,
	};
	struct ibv_recv_wr rwr = { .wr_id = 77 }, *rbad;
	struct ibv_wc wc[4];
	uint32_t bad;
	unsigned int i;

	ASSERT_EQ(0, db_make_qp(self, 8, 8, 16, 16));
	for (i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		if (states[i] != IBV_QPS_RESET)
			ASSERT_EQ(0, srx_qp_move(self->qp, states[i]));
		bad = 0;
		EXPECT_EQ(EINVAL, raw_post_send(self->qp, 1, &bad))
			TH_LOG("state %d: one work request", states[i]);
		EXPECT_EQ(1u, bad);
		EXPECT_EQ(EINVAL, raw_post_send(self->qp, 3, &bad))
			TH_LOG("state %d: three work requests", states[i]);
		EXPECT_EQ(1u, bad);
		EXPECT_EQ(0, raw_post_send(self->qp, 0, NULL))
			TH_LOG("state %d: the doorbell", states[i]);
	}
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 4, wc));

	/* The doorbell still flushes: a receive posted in ERR completes. */
	ASSERT_EQ(0, ibv_post_recv(self->qp, &rwr, &rbad));
	ASSERT_EQ(1, srx_wait_cqes(self->rcq, wc, 1, 2000));
	EXPECT_EQ(77u, wc[0].wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, (int)wc[0].status);
	EXPECT_EQ(0, srx_kmsg_bad(self->kmsg));
}

/* write() POST_RECV is not a command srx takes: it fails, flushing nothing. */
TEST_F(db, post_recv_by_write_fails)
{
	struct ibv_wc wc[4];
	int ret;

	ASSERT_EQ(0, db_make_qp(self, 8, 8, 16, 16));
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_ERR));
	ret = raw_post_recv(self->qp);
	TH_LOG("write() POST_RECV: %s", strerror(ret));
	EXPECT_NE(0, ret);
	EXPECT_EQ(0, srx_wait_cqes(self->rcq, wc, 4, 200));
}

/* ------------------------------------------------------------------ */
/* A flush of a whole ring keeps no CPU to itself                     */
/* ------------------------------------------------------------------ */

/*
 * The run alternates phases of LAT_PHASE_NS: in "whole ring" phases the
 * doorbell thread re-claims a whole ring on both queues before each
 * doorbell, in "empty" phases it rings the same doorbell with nothing to
 * flush. Both threads derive the phase from the clock; samples from the
 * first LAT_SETTLE_NS of a phase are dropped (a flush started in the
 * previous phase may still run). The empty phases measure what the host
 * does to a vCPU meanwhile, so the comparison holds on a loaded TCG host.
 */
#define LAT_RUN_NS (4ull * 1000000000ull)
#define LAT_PHASE_NS (400ull * 1000000)
#define LAT_SETTLE_NS (150ull * 1000000)
#define LAT_PERIOD_NS 1000000ull
#define LAT_MAX_SAMPLES 8192

struct lat {
	volatile struct srx_wq_ctrl *sq, *rq;
	uint32_t sq_entries, rq_entries;
	struct ibv_qp *qp;
	uint64_t start;
	_Atomic bool stop;
	const char *fail;
	uint64_t doorbells[2];		/* per phase kind */
	uint64_t late[2][LAT_MAX_SAMPLES];	/* ns past each deadline */
	unsigned int samples[2];
};

/* 0: empty phase, 1: whole-ring phase, -1: settling. */
static int lat_phase(const struct lat *l, uint64_t now)
{
	uint64_t t = now - l->start;

	if (t % LAT_PHASE_NS < LAT_SETTLE_NS)
		return -1;
	return (t / LAT_PHASE_NS) % 2;
}

static void *lat_doorbell_main(void *arg)
{
	struct lat *l = arg;

	if (db_pin(DB_CPU, 0)) {
		l->fail = "pinning the doorbell thread";
		return NULL;
	}
	while (!l->stop) {
		bool whole = (srx_test_now_ns() - l->start) / LAT_PHASE_NS % 2;

		if (whole) {
			l->sq->prod = l->sq->cons + l->sq_entries;
			l->rq->prod = l->rq->cons + l->rq_entries;
		}
		if (raw_post_send(l->qp, 0, NULL)) {
			l->fail = "doorbell failed";
			break;
		}
		l->doorbells[whole]++;
	}
	return NULL;
}

/* A SCHED_FIFO thread on the same CPU: how late is each 1 ms timer? */
static void *lat_measure_main(void *arg)
{
	struct lat *l = arg;
	struct timespec ts;
	uint64_t next, end;

	if (db_pin(DB_CPU, 50)) {
		l->fail = "SCHED_FIFO on the doorbell's CPU";
		return NULL;
	}
	next = srx_test_now_ns() + LAT_PERIOD_NS;
	end = l->start + LAT_RUN_NS;
	while (next < end) {
		uint64_t now;
		int phase;

		ts.tv_sec = next / 1000000000ull;
		ts.tv_nsec = next % 1000000000ull;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		now = srx_test_now_ns();
		phase = lat_phase(l, next);
		if (phase >= 0 && l->samples[phase] < LAT_MAX_SAMPLES)
			l->late[phase][l->samples[phase]++] = now - next;
		next = now + LAT_PERIOD_NS;
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * With both queues at 32768 entries, each whole-ring doorbell flushes
 * 65536 WQEs. The check: the median wake-up lateness in whole-ring phases
 * exceeds the median in empty phases by at most LAT_EXTRA_LIMIT_NS.
 * Measured on a loaded TCG host (2 vCPUs on 2 shared host cores, load
 * 11-15): a flush that keeps interrupts off for a whole queue (about 5 ms
 * per 32768 WQEs there) adds 6.5-7 ms to the median; flushing 16 WQEs per
 * hold of the lock and yielding between batches adds 0 to 2 ms, the upper
 * end only under the heaviest host load. The tails are the host's (a vCPU
 * thread that loses its host CPU makes one wake-up tens or hundreds of ms
 * late, whatever srx does) and are only logged.
 */
#define LAT_EXTRA_LIMIT_NS (4ull * 1000000)

TEST_F_TIMEOUT(db, whole_ring_flush_keeps_no_cpu, 120)
{
	const char *dev = srx_test_dev_name();
	pthread_t measure, ring;
	long long flushed0, flushed1;
	uint64_t p50[2];
	struct lat *l;
	int k;

	l = calloc(1, sizeof(*l));
	ASSERT_NE(NULL, l);
	/* The default model of Debian's kernel: preemption only at resched points. */
	if (db_set_preempt(self, "voluntary"))
		TH_LOG("cannot set the preemption model: measuring as it is");
	ASSERT_EQ(0, db_make_qp(self, 32768, 32768, 1, 1));
	ASSERT_EQ(32768u, self->sq_entries);
	ASSERT_EQ(32768u, self->rq_entries);
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_ERR));
	l->sq = self->sq;
	l->rq = self->rq;
	l->sq_entries = self->sq_entries;
	l->rq_entries = self->rq_entries;
	l->qp = self->qp;
	l->start = srx_test_now_ns();

	flushed0 = srx_hw_counter(dev, "wqes_flushed");
	ASSERT_EQ(0, pthread_create(&ring, NULL, lat_doorbell_main, l));
	ASSERT_EQ(0, pthread_create(&measure, NULL, lat_measure_main, l));
	pthread_join(measure, NULL);
	l->stop = true;
	pthread_join(ring, NULL);
	flushed1 = srx_hw_counter(dev, "wqes_flushed");
	ASSERT_EQ(NULL, l->fail) TH_LOG("%s", l->fail);

	for (k = 0; k < 2; k++) {
		unsigned int n = l->samples[k];

		ASSERT_LT(20u, n) TH_LOG("%s phases: too few samples",
					 k ? "whole-ring" : "empty");
		qsort(l->late[k], n, sizeof(l->late[k][0]), cmp_u64);
		p50[k] = l->late[k][n / 2];
		TH_LOG("%s phases: %llu doorbells; lateness over %u samples: p50 %llu us, p90 %llu us, max %llu us",
		       k ? "whole-ring" : "empty",
		       (unsigned long long)l->doorbells[k], n,
		       (unsigned long long)p50[k] / 1000,
		       (unsigned long long)l->late[k][n * 9 / 10] / 1000,
		       (unsigned long long)l->late[k][n - 1] / 1000);
	}
	TH_LOG("%lld WQEs flushed", flushed1 - flushed0);
	/* The load was there: whole rings were flushed, over and over. */
	EXPECT_LE(2u, l->doorbells[1]);
	EXPECT_LE((long long)l->doorbells[1] * (l->sq_entries + l->rq_entries) / 2,
		  flushed1 - flushed0);
	EXPECT_GE(p50[0] + LAT_EXTRA_LIMIT_NS, p50[1]);
	EXPECT_EQ(0, srx_kmsg_bad(self->kmsg));
	free(l);
}

/* ------------------------------------------------------------------ */
/* A doorbell that saw ERR, after RESET and INIT                      */
/* ------------------------------------------------------------------ */

#define RACE_ITERATIONS 150
#define RACE_BUDGET_NS (40ull * 1000000000ull)
#define RACE_RECVS 8

struct race {
	volatile struct srx_wq_ctrl *sq;
	uint32_t sq_entries;
	struct ibv_qp *qp;
	_Atomic bool stop;
	_Atomic bool hold;		/* main asks the holder to take the CPU */
	_Atomic bool holding;		/* the holder has it */
	_Atomic uint64_t doorbells;
	const char *fail;
};

/*
 * Ring doorbells, each with the send queue claiming a whole ring: the flush
 * of the send queue comes first, so each doorbell spends most of its time
 * there, after it looked at the state and before the receive queue.
 */
static void *race_doorbell_main(void *arg)
{
	struct race *r = arg;

	if (db_pin(DB_CPU, 0)) {
		r->fail = "pinning the doorbell thread";
		return NULL;
	}
	while (!r->stop) {
		r->sq->prod = r->sq->cons + r->sq_entries;
		if (raw_post_send(r->qp, 0, NULL)) {
			r->fail = "doorbell failed";
			break;
		}
		atomic_fetch_add(&r->doorbells, 1);
	}
	return NULL;
}

/*
 * A SCHED_FIFO thread on the doorbell's CPU that, when asked, takes the CPU
 * at its next timer tick and keeps it until released. Under full
 * preemption its wake-up preempts the doorbell thread at the first point
 * the kernel allows, typically right where a flush drops a work queue's
 * lock: the doorbell then sits between its look at the state and its next
 * batch for as long as the main thread needs.
 */
static void *race_holder_main(void *arg)
{
	struct race *r = arg;
	struct timespec ts = { .tv_nsec = 200000 };

	if (db_pin(DB_CPU, 10)) {
		r->fail = "SCHED_FIFO on the doorbell's CPU";
		return NULL;
	}
	while (!r->stop) {
		nanosleep(&ts, NULL);
		if (!atomic_load(&r->hold))
			continue;
		atomic_store(&r->holding, true);
		while (atomic_load(&r->hold) && !r->stop)
			;
		atomic_store(&r->holding, false);
	}
	return NULL;
}

static bool race_wait(_Atomic bool *flag, bool want, uint64_t ms)
{
	uint64_t end = srx_test_now_ns() + ms * 1000000;

	while (atomic_load(flag) != want)
		if (srx_test_now_ns() > end)
			return false;
	return true;
}

/*
 * Each iteration: with the QP in ERR and doorbells ringing, take the
 * doorbell's CPU, move the QP to RESET and INIT, post receives, let the
 * doorbell go on, and check that none of those receives completed while
 * the QP is in INIT; then move to ERR, where each must complete exactly
 * once.
 */
TEST_F_TIMEOUT(db, no_flush_after_reset, 120)
{
	struct ibv_recv_wr wr[RACE_RECVS], *bad;
	pthread_t ring, holder;
	uint64_t end, it, early = 0, held = 0;
	struct ibv_wc wc[RACE_RECVS * 2];
	struct race r = {};
	cpu_set_t set;
	unsigned int i;

	if (db_set_preempt(self, "full"))
		SKIP(return, "needs PREEMPT_DYNAMIC and debugfs");
	ASSERT_EQ(0, db_make_qp(self, 32768, 64, 1, 256));
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_ERR));
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	ASSERT_EQ(0, pthread_setaffinity_np(pthread_self(), sizeof(set), &set));
	r.sq = self->sq;
	r.sq_entries = self->sq_entries;
	r.qp = self->qp;
	ASSERT_EQ(0, pthread_create(&ring, NULL, race_doorbell_main, &r));
	ASSERT_EQ(0, pthread_create(&holder, NULL, race_holder_main, &r));

	end = srx_test_now_ns() + RACE_BUDGET_NS;
	for (it = 0; it < RACE_ITERATIONS && srx_test_now_ns() < end; it++) {
		uint64_t db0;
		int got, n = 0, seen = 0;

		atomic_store(&r.hold, true);
		if (race_wait(&r.holding, true, 1000))
			held++;
		if (srx_qp_move(self->qp, IBV_QPS_RESET) ||
		    srx_qp_move(self->qp, IBV_QPS_INIT))
			break;
		for (i = 0; i < RACE_RECVS; i++) {
			memset(&wr[i], 0, sizeof(wr[i]));
			wr[i].wr_id = it << 16 | i;
			wr[i].next = i + 1 < RACE_RECVS ? &wr[i + 1] : NULL;
		}
		if (ibv_post_recv(self->qp, wr, &bad))
			break;
		db0 = atomic_load(&r.doorbells);
		atomic_store(&r.hold, false);
		race_wait(&r.holding, false, 1000);
		/* Two more doorbells: the one that was held has finished. */
		while (atomic_load(&r.doorbells) < db0 + 2 && !r.fail &&
		       srx_test_now_ns() < end)
			;
		got = ibv_poll_cq(self->rcq, RACE_RECVS * 2, wc);
		if (got > 0) {
			early += got;
			TH_LOG("iteration %llu: %d receives completed in INIT, first wr_id %#llx status %d",
			       (unsigned long long)it, got,
			       (unsigned long long)wc[0].wr_id, wc[0].status);
			break;
		}

		if (srx_qp_move(self->qp, IBV_QPS_ERR))
			break;
		while (n < RACE_RECVS && seen++ < 1000) {
			got = srx_wait_cqes(self->rcq, wc + n, RACE_RECVS - n, 10);
			for (i = 0; i < (unsigned int)got; i++)
				if (wc[n + i].wr_id != (it << 16 | (n + i)))
					break;
			if (i < (unsigned int)got) {
				TH_LOG("iteration %llu: wr_id %#llx, expected %#llx",
				       (unsigned long long)it,
				       (unsigned long long)wc[n + i].wr_id,
				       (unsigned long long)(it << 16 | (n + i)));
				early++;
				break;
			}
			n += got;
		}
		if (early || n != RACE_RECVS)
			break;
		if (ibv_poll_cq(self->rcq, 1, wc) != 0) {
			TH_LOG("iteration %llu: a receive completed twice",
			       (unsigned long long)it);
			early++;
			break;
		}
	}
	r.stop = true;
	atomic_store(&r.hold, false);
	pthread_join(ring, NULL);
	pthread_join(holder, NULL);

	TH_LOG("%llu iterations (%llu with the doorbell's CPU held), %llu doorbells",
	       (unsigned long long)it, (unsigned long long)held,
	       (unsigned long long)atomic_load(&r.doorbells));
	ASSERT_EQ(NULL, r.fail) TH_LOG("%s", r.fail);
	EXPECT_EQ(0u, early);
	EXPECT_LE(20u, it) TH_LOG("too few iterations to mean anything");
	EXPECT_LE(it / 2, held);
	EXPECT_EQ(0, srx_kmsg_bad(self->kmsg));
}

/* ------------------------------------------------------------------ */
/* Invalid WQEs written straight into the rings                       */
/* ------------------------------------------------------------------ */

/*
 * Where libsrx put the WQEs of wr_id @a and @b (consecutive slots): the
 * first 8-byte word after the control block equal to each. Sets the
 * stride and returns the offset of @a's slot, or 0 if not found.
 */
static size_t find_slots(volatile void *map, size_t len, uint64_t a,
			 uint64_t b, size_t *stride)
{
	volatile uint64_t *w = map;
	size_t i, oa = 0, ob = 0;

	for (i = sizeof(struct srx_wq_ctrl) / 8; i < len / 8; i++) {
		if (!oa && w[i] == a)
			oa = i * 8;
		else if (!ob && w[i] == b)
			ob = i * 8;
	}
	if (!oa || ob <= oa)
		return 0;
	*stride = ob - oa;
	return oa;
}

#define MARK_SA 0x5a5a00000000005aull	/* sends */
#define MARK_SB 0x5a5a00000000005bull
#define MARK_RA 0x5a5a00000000007aull	/* receives */
#define MARK_RB 0x5a5a00000000007bull

/*
 * With the QP in INIT (nothing is taken), write WQEs into both rings the
 * way a hostile process can, publish them, and move the QP to ERR: the
 * flush takes each once, the invalid ones are counted in invalid_wqes,
 * and every one completes as flushed with its own wr_id, in order.
 */
TEST_F(db, invalid_wqes_taken_and_flushed)
{
	const char *dev = srx_test_dev_name();
	struct ibv_send_wr swr[2] = {}, *sbad;
	struct ibv_recv_wr rwr[2] = {}, *rbad;
	struct ibv_qp_attr qattr;
	struct ibv_qp_init_attr qinit;
	struct ibv_wc wc[16];
	size_t sbase, rbase, sstride = 0, rstride = 0;
	uint32_t sprod, rprod, max_sge, i;
	long long inv0, inv1;
	unsigned int nsend = 0, nrecv = 0, invalid = 0;
	struct {
		uint64_t wr_id;
		int wc_opcode;
	} want[16];

	/* 64 sends make the send ring the larger mapping (db_make_qp()). */
	ASSERT_EQ(0, db_make_qp(self, 64, 16, 64, 64));
	ASSERT_EQ(0, ibv_query_qp(self->qp, &qattr, IBV_QP_CAP, &qinit));
	max_sge = qattr.cap.max_send_sge;
	ASSERT_LE(2u, max_sge);

	/* Find the slots: two WQEs of each kind posted (and flushed) in ERR. */
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_ERR));
	for (i = 0; i < 2; i++) {
		swr[i].wr_id = i ? MARK_SB : MARK_SA;
		swr[i].opcode = IBV_WR_SEND;
		swr[i].send_flags = IBV_SEND_SIGNALED;
		swr[i].next = i ? NULL : &swr[1];
		rwr[i].wr_id = i ? MARK_RB : MARK_RA;
		rwr[i].next = i ? NULL : &rwr[1];
	}
	ASSERT_EQ(0, ibv_post_send(self->qp, swr, &sbad));
	ASSERT_EQ(0, ibv_post_recv(self->qp, rwr, &rbad));
	ASSERT_EQ(2, srx_wait_cqes(self->scq, wc, 2, 2000));
	ASSERT_EQ(2, srx_wait_cqes(self->rcq, wc, 2, 2000));
	sbase = find_slots(self->sq, self->sq_len, MARK_SA, MARK_SB, &sstride);
	rbase = find_slots(self->rq, self->rq_len, MARK_RA, MARK_RB, &rstride);
	ASSERT_NE(0u, sbase);
	ASSERT_NE(0u, rbase);
	TH_LOG("send slots at %zu, stride %zu; receive slots at %zu, stride %zu",
	       sbase, sstride, rbase, rstride);

	/* RESET frees every slot; INIT takes nothing. */
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_RESET));
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_INIT));
	sprod = self->sq->prod;
	rprod = self->rq->prod;
	ASSERT_EQ(sprod, self->sq->cons);
	ASSERT_EQ(rprod, self->rq->cons);

	/* The marks were WQEs sprod - 2 and sprod - 1: where WQE n goes. */
	sbase -= (size_t)((sprod - 2) & (self->sq_entries - 1)) * sstride;
	rbase -= (size_t)((rprod - 2) & (self->rq_entries - 1)) * rstride;
#define SSLOT(k) ((volatile struct srx_send_wqe *)((volatile char *)self->sq + \
	sbase + (size_t)((sprod + (k)) & (self->sq_entries - 1)) * sstride))
#define SSGE(k) ((volatile struct srx_sge *)(SSLOT(k) + 1))
#define RSLOT(k) ((volatile struct srx_recv_wqe *)((volatile char *)self->rq + \
	rbase + (size_t)((rprod + (k)) & (self->rq_entries - 1)) * rstride))
	/* Each case: a send WQE, whether it is invalid, its completion opcode. */
	for (i = 0; i < 9; i++) {
		volatile struct srx_send_wqe *w = SSLOT(nsend);
		bool bad = true;
		int op = IBV_WC_SEND;

		memset((void *)w, 0, sizeof(*w));
		w->wr_id = 0x1000 + i;
		w->opcode = IBV_WR_SEND;
		w->num_sge = 1;
		SSGE(nsend)[0].length = 64;
		switch (i) {
		case 0:				/* valid */
			bad = false;
			break;
		case 1:				/* no such opcode */
			w->opcode = 200;
			break;
		case 2:				/* far more SGEs than the slot holds */
			w->num_sge = 255;
			break;
		case 3:				/* inline longer than the slot */
			w->num_sge = 0;
			w->send_flags = IBV_SEND_INLINE;
			w->inline_len = 0x7fffffff;
			break;
		case 4:				/* an unknown flag */
			w->send_flags = IBV_SEND_SIGNALED | 0x4000;
			break;
		case 5:				/* a reserved word */
			w->reserved0 = 1;
			break;
		case 6:				/* 2 x (4 GiB - 1): 4 GiB - 2 bytes */
			w->opcode = IBV_WR_RDMA_WRITE;
			w->num_sge = 2;
			SSGE(nsend)[0].length = 0xffffffffu;
			SSGE(nsend)[1].length = 0xffffffffu;
			op = IBV_WC_RDMA_WRITE;
			break;
		case 7:				/* RDMA READ, inline */
			w->opcode = IBV_WR_RDMA_READ;
			w->num_sge = 0;
			w->send_flags = IBV_SEND_INLINE;
			w->inline_len = 8;
			op = IBV_WC_RDMA_READ;
			break;
		case 8:				/* valid */
			w->opcode = IBV_WR_RDMA_WRITE;
			op = IBV_WC_RDMA_WRITE;
			bad = false;
			break;
		}
		want[nsend].wr_id = w->wr_id;
		want[nsend].wc_opcode = op;
		invalid += bad;
		nsend++;
	}
	/* Receives: a valid one, one with too many SGEs, one with a reserved word. */
	for (i = 0; i < 3; i++) {
		volatile struct srx_recv_wqe *w = RSLOT(nrecv);

		w->wr_id = 0x2000 + i;
		w->num_sge = i == 1 ? 0x10000 : 1;
		w->reserved = i == 2;
		invalid += i != 0;
		nrecv++;
	}

	inv0 = srx_hw_counter(dev, "invalid_wqes");
	ASSERT_LE(0, inv0) TH_LOG("no invalid_wqes counter");
	__atomic_store_n(&self->sq->prod, sprod + nsend, __ATOMIC_RELEASE);
	__atomic_store_n(&self->rq->prod, rprod + nrecv, __ATOMIC_RELEASE);
	ASSERT_EQ(0, srx_qp_move(self->qp, IBV_QPS_ERR));

	ASSERT_EQ((int)nsend, srx_wait_cqes(self->scq, wc, nsend, 2000));
	for (i = 0; i < nsend; i++) {
		EXPECT_EQ(want[i].wr_id, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, (int)wc[i].status);
		EXPECT_EQ(want[i].wc_opcode, (int)wc[i].opcode)
			TH_LOG("send %u", i);
	}
	ASSERT_EQ((int)nrecv, srx_wait_cqes(self->rcq, wc, nrecv, 2000));
	for (i = 0; i < nrecv; i++) {
		EXPECT_EQ(0x2000u + i, wc[i].wr_id);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, (int)wc[i].status);
	}
	EXPECT_EQ(0, ibv_poll_cq(self->scq, 16, wc));
	EXPECT_EQ(sprod + nsend, self->sq->cons);
	EXPECT_EQ(sprod + nsend, self->sq->done);
	inv1 = srx_hw_counter(dev, "invalid_wqes");
	EXPECT_EQ(inv0 + invalid, inv1);
	EXPECT_EQ(0, srx_kmsg_bad(self->kmsg));
#undef SSLOT
#undef SSGE
#undef RSLOT
}

TEST_HARNESS_MAIN
