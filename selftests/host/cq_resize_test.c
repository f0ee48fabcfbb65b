// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cq_resize_test.c - libsrx's resize of a CQ against its pollers, on the
 * host, with the provider's own cq.c compiled in unchanged.
 *
 * The races of a resize live in windows a few instructions wide: a poller
 * that loaded the old ring and is about to read cq->resizing, say. A
 * stress test hits them once in millions of runs, so this one opens the
 * window on purpose. The struct srx_cq under test is placed so that the
 * word `resizing` starts a page of its own, and the test revokes access to
 * that page while the resizer is half done. The poller's read of the word
 * faults; the SIGSEGV handler, which stands in for a preemption of the
 * poller at that very instruction, lets the resizer run to its end, gives
 * the page back and returns, and the poller's read is retried. Any other
 * access to the page fails the test, so a change to struct srx_cq that
 * moves words the poller touches onto that page cannot make the test
 * vacuous. A window between two of libsrx's own steps (a second clean's
 * seal, see second_seal) is held open instead at cq.c's test points
 * (SRX_CQ_TEST_POINT), which this file defines before including it.
 *
 * The kernel is played by this file: ibv_cmd_resize_cq() is defined
 * here, so that cq.c's calls land here rather than in libibverbs. Rings
 * live in a memfd that stands for the uverbs file: libsrx maps them with
 * its own mmap() at the offsets the fake kernel returns, and the fake
 * kernel writes them through mappings of its own, as srx.ko writes its vmalloc'ed rings. Its COMMIT does to the
 * shared memory what srx_cq_switch_ring() does (seal by exchange, copy the
 * pending CQEs at the same indices, carry fired and the arm word over,
 * publish prod), and can then report a failure, as the uverbs core does
 * when it cannot copy the response out after the driver switched rings.
 *
 * `make host-tests` builds it with ASan and UBSan; output is TAP.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* kernel/ring.h expects the kernel's fixed-width types. */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

/* cq.c's race windows, held open by the seal_gen test below */
enum test_point { TP_WAIT_SEALED, TP_WAIT_IDLE, TP_CLEAN_SEALED };
static void test_point(enum test_point where);
#define SRX_CQ_TEST_POINT(where) test_point(TP_##where)

#include "../../userspace/libsrx/cq.c"	/* the provider's CQ code, as is */
#include "ring.h"			/* kernel/ring.h */

#include "kselftest_harness.h"

#define PAGE 4096ul
#define WAIT_S 10			/* a step that takes longer is lost */
#define WR_ID(i) (0x5352580000000000ull + (i))

/* ------------------------------------------------------------------ */
/* The fake kernel                                                    */
/* ------------------------------------------------------------------ */

struct kring {
	uint64_t off;			/* in the memfd */
	size_t len;
	uint32_t entries;
	struct srx_cq_ctrl *ctrl;	/* the kernel's own mapping */
	struct srx_cqe *cqes;
};

enum commit_fault {
	COMMIT_OK,
	COMMIT_FAILS_AFTER_SWITCH,	/* switched, then EFAULT */
	COMMIT_FAILS_BEFORE_SWITCH,	/* EINVAL, nothing changed */
};

static struct {
	int fd;				/* the "uverbs file" */
	uint64_t next_off;
	struct kring ring, prepared;
	bool has_prepared;
	uint32_t prod;			/* the kernel's own copy */
	uint32_t fired;
	uint64_t old_off;		/* the ring the last COMMIT replaced */
	size_t old_len;
	enum commit_fault commit_fault;
	/* called by COMMIT after the switch, before it returns */
	void (*after_switch)(void);
	unsigned int commits, switches;
} kern;

static int kring_alloc(struct kring *r, uint32_t entries)
{
	size_t len = sizeof(struct srx_cq_ctrl) +
		     (size_t)entries * sizeof(struct srx_cqe);
	void *mem;

	len = (len + PAGE - 1) & ~(PAGE - 1);
	if (ftruncate(kern.fd, (off_t)(kern.next_off + len)))
		return -1;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, kern.fd,
		   (off_t)kern.next_off);
	if (mem == MAP_FAILED)
		return -1;
	r->off = kern.next_off;
	r->len = len;
	r->entries = entries;
	r->ctrl = mem;
	r->cqes = (struct srx_cqe *)(r->ctrl + 1);
	kern.next_off += len;
	return 0;
}

static void kring_free(struct kring *r)
{
	munmap(r->ctrl, r->len);
	r->ctrl = NULL;
}

/*
 * The pages of a ring the kernel let go of stay while the process maps
 * them (rdma_user_mmap_entry); libsrx puts a placeholder over a retired
 * ring before its resize returns, so by the next PREPARE they are gone.
 * The memfd keeps its size.
 */
static void kern_release_old(void)
{
	if (kern.old_len)
		fallocate(kern.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)kern.old_off, (off_t)kern.old_len);
	kern.old_len = 0;
}

/* What srx_cq_layout() in kernel/cq.c returns for @r. */
static void kring_layout(const struct kring *r, struct srx_cq_layout *l)
{
	*l = (struct srx_cq_layout){
		.mmap_offset = r->off,
		.mmap_length = r->len,
		.entries = r->entries,
		.cqe_size = sizeof(struct srx_cqe),
		.prod_offset = offsetof(struct srx_cq_ctrl, prod),
		.fired_offset = offsetof(struct srx_cq_ctrl, fired),
		.status_offset = offsetof(struct srx_cq_ctrl, status),
		.dropped_offset = offsetof(struct srx_cq_ctrl, dropped),
		.cons_offset = offsetof(struct srx_cq_ctrl, cons),
		.arm_offset = offsetof(struct srx_cq_ctrl, arm),
		.cqe_offset = sizeof(struct srx_cq_ctrl),
	};
}

/*
 * Post one CQE to the current ring as srx_cq_post() does: K1, K3, then the
 * arm decision. Returns whether it raised a completion event.
 */
static bool kern_post_qp(uint64_t wr_id, uint32_t qpn)
{
	struct kring *r = &kern.ring;
	struct srx_cqe *c = &r->cqes[kern.prod & (r->entries - 1)];
	uint32_t arm;

	memset(c, 0, sizeof(*c));
	c->wr_id = wr_id;
	c->opcode = IBV_WC_RECV;
	c->qp_num = qpn;
	kern.prod++;
	__atomic_store_n(&r->ctrl->prod, kern.prod, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	arm = __atomic_load_n(&r->ctrl->arm, __ATOMIC_RELAXED);
	if (!srx_arm_fires(arm, kern.fired, 0, 0))
		return false;
	kern.fired = srx_arm_seq(arm);
	__atomic_store_n(&r->ctrl->fired, kern.fired, __ATOMIC_RELAXED);
	return true;
}

static bool kern_post(uint64_t wr_id)
{
	return kern_post_qp(wr_id, 0);
}

/* srx_cq_switch_ring() on the shared memory; no failure path needed. */
static void kern_switch(void)
{
	struct kring *old = &kern.ring, *new = &kern.prepared;
	uint64_t word;
	uint32_t cons, i;

	word = __atomic_exchange_n(&old->ctrl->cons,
				   (uint64_t)SRX_CQ_CONS_SEALED << 32,
				   __ATOMIC_SEQ_CST);
	cons = (uint32_t)word;
	new->ctrl->cons = cons;
	new->ctrl->fired = kern.fired;
	new->ctrl->arm = __atomic_load_n(&old->ctrl->arm, __ATOMIC_RELAXED);
	for (i = cons; i != kern.prod; i++)
		new->cqes[i & (new->entries - 1)] =
			old->cqes[i & (old->entries - 1)];
	__atomic_store_n(&new->ctrl->prod, kern.prod, __ATOMIC_RELEASE);
	/* the process keeps its own mapping of the old ring */
	kern.old_off = old->off;
	kern.old_len = old->len;
	kring_free(old);
	kern.ring = *new;
	kern.has_prepared = false;
	kern.switches++;
}

/* cq.c calls these instead of libibverbs' (see the top of the file). */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size)
{
	struct usrx_resize_cq *c = (struct usrx_resize_cq *)cmd;
	struct usrx_resize_cq_resp *r = (struct usrx_resize_cq_resp *)resp;
	uint32_t entries = srx_ring_entries((uint32_t)cqe);

	if (cmd_size != sizeof(*c) || resp_size != sizeof(*r))
		return EINVAL;
	switch (c->drv.op) {
	case SRX_RESIZE_PREPARE:
		kern_release_old();
		if (kern.has_prepared)
			kring_free(&kern.prepared);
		kern.has_prepared = false;
		if (kring_alloc(&kern.prepared, entries))
			return ENOMEM;
		kern.has_prepared = true;
		kring_layout(&kern.prepared, &r->drv.ring);
		return 0;
	case SRX_RESIZE_COMMIT:
		kern.commits++;
		if (!kern.has_prepared || kern.prepared.entries != entries)
			return EINVAL;
		if (kern.commit_fault == COMMIT_FAILS_BEFORE_SWITCH)
			return EINVAL;
		kern_switch();
		if (kern.after_switch)
			kern.after_switch();
		if (kern.commit_fault == COMMIT_FAILS_AFTER_SWITCH)
			return EFAULT;	/* the core's copy of resp.cqe */
		r->ibv_resp.cqe = entries;
		cq->cqe = (int)entries;	/* as libibverbs does */
		return 0;
	case SRX_RESIZE_ABORT:
		if (kern.has_prepared)
			kring_free(&kern.prepared);
		kern.has_prepared = false;
		return 0;
	}
	return EINVAL;
}

/* ------------------------------------------------------------------ */
/* The CQ under test, with `resizing` at the start of its own page    */
/* ------------------------------------------------------------------ */

static struct srx_context sctx;
static void *cq_mem;
static size_t cq_mem_len;
static char *trap_page;		/* the page holding cq->resizing */

static struct srx_cq *cq_create(struct __test_metadata *_metadata,
				uint32_t entries, bool ex, bool st,
				bool membarrier)
{
	size_t before = offsetof(struct srx_cq, resizing);
	struct srx_cq_layout layout;
	struct srx_cq *cq;

	kern.fd = memfd_create("srx-uverbs", MFD_CLOEXEC);
	ASSERT_LE(0, kern.fd);
	ASSERT_EQ(0, kring_alloc(&kern.ring, entries));

	/* whole pages before `resizing`, and the struct's tail after it */
	cq_mem_len = ((before + PAGE - 1) & ~(PAGE - 1)) + 2 * PAGE;
	cq_mem = mmap(NULL, cq_mem_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, cq_mem);
	trap_page = (char *)cq_mem + ((before + PAGE - 1) & ~(PAGE - 1));
	cq = (struct srx_cq *)(trap_page - before);
	/* `resizing` is a bool: any address is aligned for the struct */
	ASSERT_EQ(0u, (uintptr_t)cq % _Alignof(struct srx_cq))
		TH_LOG("offsetof(resizing) = %zu", before);
	ASSERT_EQ(0, pthread_mutex_init(&cq->resize_mutex, NULL));

	cq->single_threaded = st;
	sctx.ibv_ctx.context.cmd_fd = kern.fd;
	/* without: no bias, the shared paths, and fences for hazards */
	sctx.membarrier_ok = membarrier;
	cq->vcq.cq.context = &sctx.ibv_ctx.context;
	cq->vcq.cq.cqe = (int)entries;
	kring_layout(&kern.ring, &layout);
	ASSERT_EQ(0, srx_cq_attach_ring(cq, &sctx.ibv_ctx.context, &layout));
	if (ex)
		srx_cq_ex_init(cq);
	EXPECT_EQ((void *)&cq->resizing, (void *)trap_page);
	return cq;
}

/*
 * What srx_destroy_cq() does after the command, but for free(): this CQ is
 * not from malloc().
 */
static void cq_destroy(struct srx_cq *cq)
{
	struct srx_cq_ring *ring, *next;

	if (!cq)
		return;
	mprotect(trap_page, PAGE, PROT_READ | PROT_WRITE);
	srx_cq_unmap_ring(atomic_load(&cq->ring));
	for (ring = cq->retired; ring; ring = next) {
		next = ring->retired_next;
		srx_cq_unmap_ring(ring);
	}
	pthread_mutex_destroy(&cq->resize_mutex);
	munmap(cq_mem, cq_mem_len);
	kring_free(&kern.ring);
	if (kern.has_prepared)
		kring_free(&kern.prepared);
	close(kern.fd);
	memset(&kern, 0, sizeof(kern));
}

/* ------------------------------------------------------------------ */
/* The preemption: a fault on the page of `resizing`                  */
/* ------------------------------------------------------------------ */

static struct {
	struct srx_cq *cq;
	pthread_t poller;
	sem_t page_closed;	/* resizer: COMMIT switched, page closed */
	sem_t poller_stopped;	/* handler: the poller is at the read */
	sem_t resize_done;	/* resizer: srx_resize_cq() returned */
	atomic_uint faults;	/* on `resizing`, in the poller */
	atomic_uint bad_faults;	/* anywhere else, or in another thread */
	int resize_ret;
	int resize_cqe;
} trap;

static bool sem_wait_s(sem_t *s)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += WAIT_S;
	while (sem_timedwait(s, &t))
		if (errno != EINTR)
			return false;
	return true;
}

static void trap_handler(int sig, siginfo_t *si, void *uc)
{
	bool ours = si->si_addr == (void *)&trap.cq->resizing &&
		    pthread_equal(pthread_self(), trap.poller);

	/* The page opens again in every case: the access is retried. */
	mprotect(trap_page, PAGE, PROT_READ | PROT_WRITE);
	if (!ours) {
		atomic_fetch_add(&trap.bad_faults, 1);
		return;
	}
	atomic_fetch_add(&trap.faults, 1);
	/* stay "preempted" until the resizer is done */
	sem_post(&trap.poller_stopped);
	sem_wait_s(&trap.resize_done);
}

/* COMMIT's hook, in the resizer: the new ring is live in the "kernel". */
static void close_page_and_wait(void)
{
	mprotect(trap_page, PAGE, PROT_NONE);
	sem_post(&trap.page_closed);
	/* the poller runs into the window and is stopped there */
	sem_wait_s(&trap.poller_stopped);
}

static void *resizer(void *arg)
{
	trap.resize_ret = srx_resize_cq(&trap.cq->vcq.cq, trap.resize_cqe);
	sem_post(&trap.resize_done);
	return NULL;
}

static void trap_setup(struct __test_metadata *_metadata, struct srx_cq *cq)
{
	struct sigaction sa = { .sa_sigaction = trap_handler,
				.sa_flags = SA_SIGINFO };

	memset(&trap, 0, sizeof(trap));
	trap.cq = cq;
	trap.poller = pthread_self();
	ASSERT_EQ(0, sem_init(&trap.page_closed, 0, 0));
	ASSERT_EQ(0, sem_init(&trap.poller_stopped, 0, 0));
	ASSERT_EQ(0, sem_init(&trap.resize_done, 0, 0));
	ASSERT_EQ(0, sigaction(SIGSEGV, &sa, NULL));
	kern.after_switch = close_page_and_wait;
}

/* ------------------------------------------------------------------ */
/* A poller caught between loading the old ring and reading resizing  */
/* ------------------------------------------------------------------ */

enum op { OP_POLL, OP_NOTIFY, OP_START_POLL };

FIXTURE(window) {
	struct srx_cq *cq;
	pthread_t thread;
};

FIXTURE_VARIANT(window) {
	enum op op;
};

/* ibv_poll_cq(): must return the CQE the resize moved, not 0 */
FIXTURE_VARIANT_ADD(window, poll) { .op = OP_POLL };
/* ibv_req_notify_cq(): must arm the ring the next CQE goes to */
FIXTURE_VARIANT_ADD(window, notify) { .op = OP_NOTIFY };
/* cq_ex start_poll: must find the CQE, not ENOENT */
FIXTURE_VARIANT_ADD(window, start_poll) { .op = OP_START_POLL };

FIXTURE_SETUP(window)
{
	self->cq = cq_create(_metadata, 8, variant->op == OP_START_POLL,
			     false, false);
	trap_setup(_metadata, self->cq);
}

FIXTURE_TEARDOWN(window)
{
	cq_destroy(self->cq);
}

TEST_F_TIMEOUT(window, resize_finishes_in_the_window, 60)
{
	struct srx_cq *cq = self->cq;
	struct ibv_poll_cq_attr attr = {};
	struct ibv_wc wc = {};
	int ret;

	if (variant->op != OP_NOTIFY)
		kern_post(WR_ID(0));	/* pending: COMMIT moves it */
	trap.resize_cqe = 64;
	ASSERT_EQ(0, pthread_create(&self->thread, NULL, resizer, NULL));
	ASSERT_TRUE(sem_wait_s(&trap.page_closed));

	/* The old ring is sealed now and the resizer stopped inside. */
	switch (variant->op) {
	case OP_POLL:
		ret = srx_poll_cq(&cq->vcq.cq, 1, &wc);
		EXPECT_EQ(1, ret);
		EXPECT_EQ(WR_ID(0), wc.wr_id);
		break;
	case OP_NOTIFY:
		EXPECT_EQ(0, srx_req_notify_cq(&cq->vcq.cq, 0));
		/* the next CQE lands in the new ring: is it armed? */
		EXPECT_TRUE(kern_post(WR_ID(0)))
			TH_LOG("armed only the old ring: no event");
		break;
	case OP_START_POLL:
		ret = cq->vcq.cq_ex.start_poll(&cq->vcq.cq_ex, &attr);
		EXPECT_EQ(0, ret);
		if (!ret) {
			EXPECT_EQ(WR_ID(0), cq->vcq.cq_ex.wr_id);
			cq->vcq.cq_ex.end_poll(&cq->vcq.cq_ex);
		}
		break;
	}
	ASSERT_EQ(0, pthread_join(self->thread, NULL));
	EXPECT_EQ(0, trap.resize_ret);
	/* The window was really hit, once, and nothing else faulted. */
	EXPECT_EQ(1u, atomic_load(&trap.faults));
	EXPECT_EQ(0u, atomic_load(&trap.bad_faults));
	EXPECT_EQ((int)srx_ring_entries(64), cq->vcq.cq.cqe);

	/*
	 * The poller held the old ring while the resize retired it, so it
	 * was kept, and nothing faulted or was used after free above. Now
	 * that nobody holds it, the next resize frees it.
	 */
	EXPECT_EQ(0, srx_resize_cq(&cq->vcq.cq, 8));
	EXPECT_EQ(NULL, cq->retired);
}

/* ------------------------------------------------------------------ */
/* A poller that finds resizing clear and then a second clean's seal  */
/* ------------------------------------------------------------------ */

/*
 * The window of srx_cq_wait_resize() that seal_gen closes: a poller waits
 * on the seal of a first clean; that clean ends, the poller reads
 * resizing clear, and before it looks at the ring again a second clean
 * (the next QP of restate_qps()) seals it. Without seal_gen the poller
 * took that seal for the process's own and returned 0 with a CQE in the
 * ring. The threads are stopped at cq.c's test points to hold each step.
 */
static struct {
	bool armed;
	atomic_uint cleans, sealed_seen, idle_seen;
	sem_t c1_sealed, c1_go, c2_sealed, c2_go;
	sem_t p_at_seal, p_go1, p_idle, p_go2, p_moved;
} tp;

static void test_point(enum test_point where)
{
	unsigned int n;

	if (!tp.armed)
		return;
	switch (where) {
	case TP_CLEAN_SEALED:
		n = atomic_fetch_add(&tp.cleans, 1);
		sem_post(n ? &tp.c2_sealed : &tp.c1_sealed);
		sem_wait_s(n ? &tp.c2_go : &tp.c1_go);
		break;
	case TP_WAIT_SEALED:
		n = atomic_fetch_add(&tp.sealed_seen, 1);
		if (n == 0) {
			sem_post(&tp.p_at_seal);
			sem_wait_s(&tp.p_go1);
		} else if (n == 1) {
			sem_post(&tp.p_moved);	/* waiting again */
		}
		break;
	case TP_WAIT_IDLE:
		if (atomic_fetch_add(&tp.idle_seen, 1) == 0) {
			sem_post(&tp.p_idle);
			sem_wait_s(&tp.p_go2);
		}
		break;
	}
}

#define QPN_A 0x11u
#define QPN_B 0x12u
#define QPN_C 0x13u

struct cleaner {
	struct srx_cq *cq;
	uint32_t qpn;
};

static void *cleaner(void *arg)
{
	struct cleaner *c = arg;

	srx_cq_clean_qp(c->cq, c->qpn);
	return NULL;
}

struct poller {
	struct srx_cq *cq;
	struct ibv_wc wc;
	int ret;
};

static void *poller(void *arg)
{
	struct poller *p = arg;

	p->ret = srx_poll_cq(&p->cq->vcq.cq, 1, &p->wc);
	sem_post(&tp.p_moved);
	return NULL;
}

FIXTURE(second_seal) {
	struct srx_cq *cq;
};

FIXTURE_SETUP(second_seal)
{
	sem_t *sems[] = { &tp.c1_sealed, &tp.c1_go, &tp.c2_sealed, &tp.c2_go,
			  &tp.p_at_seal, &tp.p_go1, &tp.p_idle, &tp.p_go2,
			  &tp.p_moved };
	size_t i;

	memset(&tp, 0, sizeof(tp));
	for (i = 0; i < sizeof(sems) / sizeof(sems[0]); i++)
		ASSERT_EQ(0, sem_init(sems[i], 0, 0));
	/* thread-safe, without bias: every poll goes through the word */
	self->cq = cq_create(_metadata, 8, false, false, false);
}

FIXTURE_TEARDOWN(second_seal)
{
	tp.armed = false;
	cq_destroy(self->cq);
}

TEST_F_TIMEOUT(second_seal, poller_waits_for_the_second_clean, 60)
{
	struct cleaner c1 = { self->cq, QPN_A }, c2 = { self->cq, QPN_B };
	struct poller p = { .cq = self->cq, .ret = -1 };
	pthread_t t1, t2, tpoll;

	kern_post_qp(WR_ID(0), QPN_A);
	kern_post_qp(WR_ID(1), QPN_B);
	kern_post_qp(WR_ID(2), QPN_C);
	tp.armed = true;

	/* the first clean seals and stops; the poller meets its seal */
	ASSERT_EQ(0, pthread_create(&t1, NULL, cleaner, &c1));
	ASSERT_TRUE(sem_wait_s(&tp.c1_sealed));
	ASSERT_EQ(0, pthread_create(&tpoll, NULL, poller, &p));
	ASSERT_TRUE(sem_wait_s(&tp.p_at_seal));
	/* it ends while the poller is between the seal and resizing */
	sem_post(&tp.c1_go);
	ASSERT_EQ(0, pthread_join(t1, NULL));
	sem_post(&tp.p_go1);
	/* the poller read resizing clear; the second clean seals now */
	ASSERT_TRUE(sem_wait_s(&tp.p_idle));
	ASSERT_EQ(0, pthread_create(&t2, NULL, cleaner, &c2));
	ASSERT_TRUE(sem_wait_s(&tp.c2_sealed));
	sem_post(&tp.p_go2);
	/* the poller waits for it again, or (the bug) gives up */
	ASSERT_TRUE(sem_wait_s(&tp.p_moved));
	sem_post(&tp.c2_go);
	ASSERT_EQ(0, pthread_join(t2, NULL));
	ASSERT_EQ(0, pthread_join(tpoll, NULL));

	EXPECT_EQ(2u, atomic_load(&tp.cleans));
	EXPECT_EQ(1, p.ret)
		TH_LOG("the second seal was taken for the process's own");
	EXPECT_EQ(WR_ID(2), p.wc.wr_id);
	EXPECT_EQ(QPN_C, p.wc.qp_num);
}

/* ------------------------------------------------------------------ */
/* A COMMIT that fails                                                */
/* ------------------------------------------------------------------ */

FIXTURE(commit_fails) {
	struct srx_cq *cq;
};

FIXTURE_VARIANT(commit_fails) {
	enum commit_fault fault;
	bool single_threaded;
};

/* the kernel switched, then the core could not copy its response out */
FIXTURE_VARIANT_ADD(commit_fails, after_switch) {
	.fault = COMMIT_FAILS_AFTER_SWITCH,
};
FIXTURE_VARIANT_ADD(commit_fails, after_switch_single_threaded) {
	.fault = COMMIT_FAILS_AFTER_SWITCH, .single_threaded = true,
};
/* the kernel refused before switching (too many CQEs pending, say) */
FIXTURE_VARIANT_ADD(commit_fails, before_switch) {
	.fault = COMMIT_FAILS_BEFORE_SWITCH,
};
FIXTURE_VARIANT_ADD(commit_fails, before_switch_single_threaded) {
	.fault = COMMIT_FAILS_BEFORE_SWITCH, .single_threaded = true,
};

FIXTURE_SETUP(commit_fails)
{
	self->cq = cq_create(_metadata, 8, false, variant->single_threaded,
			     false);
}

FIXTURE_TEARDOWN(commit_fails)
{
	cq_destroy(self->cq);
}

/*
 * Whatever the kernel did, the CQ goes on: the pending CQEs come out in
 * order, new ones follow, and arming arms the ring the kernel writes.
 */
TEST_F(commit_fails, cq_keeps_working)
{
	bool switched = variant->fault == COMMIT_FAILS_AFTER_SWITCH;
	struct ibv_cq *ibcq = &self->cq->vcq.cq;
	struct ibv_wc wc[8] = {};
	int i, n;

	for (i = 0; i < 3; i++)
		kern_post(WR_ID(i));
	kern.commit_fault = variant->fault;
	if (switched) {
		/* it did resize: success, and the size the kernel chose */
		EXPECT_EQ(0, srx_resize_cq(ibcq, 64));
		EXPECT_EQ((int)srx_ring_entries(64), ibcq->cqe);
	} else {
		EXPECT_EQ(EINVAL, srx_resize_cq(ibcq, 64));
		EXPECT_EQ(8, ibcq->cqe);
	}
	ASSERT_EQ(1u, kern.commits);
	ASSERT_EQ(switched ? 1u : 0u, kern.switches);

	n = srx_poll_cq(ibcq, 8, wc);
	ASSERT_EQ(3, n) TH_LOG("the pending CQEs are lost");
	for (i = 0; i < n; i++)
		EXPECT_EQ(WR_ID(i), wc[i].wr_id);

	kern_post(WR_ID(3));
	ASSERT_EQ(1, srx_poll_cq(ibcq, 8, wc));
	EXPECT_EQ(WR_ID(3), wc[0].wr_id);
	EXPECT_EQ(0, srx_poll_cq(ibcq, 8, wc));

	EXPECT_EQ(0, srx_req_notify_cq(ibcq, 0));
	EXPECT_TRUE(kern_post(WR_ID(4))) TH_LOG("armed the wrong ring");
	ASSERT_EQ(1, srx_poll_cq(ibcq, 8, wc));
	EXPECT_EQ(WR_ID(4), wc[0].wr_id);
}

/* ------------------------------------------------------------------ */
/* Retired rings do not pile up                                       */
/* ------------------------------------------------------------------ */

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

FIXTURE(retired) {
	struct srx_cq *cq;
};

FIXTURE_VARIANT(retired) {
	bool membarrier;
};

/* the resizer calls membarrier() before it frees */
FIXTURE_VARIANT_ADD(retired, membarrier) { .membarrier = true };
/* membarrier() refused: pollers fence instead */
FIXTURE_VARIANT_ADD(retired, fences) { .membarrier = false };

FIXTURE_SETUP(retired)
{
	if (variant->membarrier && !srx_membarrier_register())
		SKIP(return, "membarrier() refused on this host");
	self->cq = cq_create(_metadata, 8, false, false, variant->membarrier);
}

FIXTURE_TEARDOWN(retired)
{
	cq_destroy(self->cq);
}

/*
 * Each resize used to leave a mapping behind until destroy, so after about
 * 65,000 (vm.max_map_count) every mmap() of the process failed. The count
 * of mappings must stay flat over many resizes, with polls in between, and
 * the CQ must work at the end. (10,000 resizes show the growth as well as
 * 70,000 would, in a seventh of the time.)
 */
TEST_F_TIMEOUT(retired, resizes_leave_no_mappings, 300)
{
	struct ibv_cq *ibcq = &self->cq->vcq.cq;
	int before, after, i, ret = 0;
	struct ibv_wc wc;
	void *p;

	before = count_mappings();
	ASSERT_LT(0, before);
	for (i = 0; i < 10000 && !ret; i++) {
		ret = srx_resize_cq(ibcq, i % 2 ? 8 : 16);
		if (!(i % 1000))
			EXPECT_EQ(0, srx_poll_cq(ibcq, 1, &wc));
	}
	EXPECT_EQ(0, ret) TH_LOG("resize %d: %s", i, strerror(ret));
	after = count_mappings();
	EXPECT_GE(before + 2, after) TH_LOG("%d mappings, %d before",
					    after, before);
	EXPECT_EQ(NULL, self->cq->retired);

	p = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	EXPECT_NE(MAP_FAILED, p) TH_LOG("mmap: %s", strerror(errno));
	if (p != MAP_FAILED)
		munmap(p, PAGE);
	kern_post(WR_ID(0));
	ASSERT_EQ(1, srx_poll_cq(ibcq, 1, &wc));
	EXPECT_EQ(WR_ID(0), wc.wr_id);
}

TEST_HARNESS_MAIN
