// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Objects and memory over their whole life: what a killed process leaves
 * behind (nothing), what 100,000 CQs leave behind (nothing), how long a
 * mapped ring stays readable (until the process unmaps it), and module
 * unload with and without a process using the device.
 *
 * Counts come from the RDMA core's restrack (`rdma resource show`), which
 * counts every object the core knows of, the MAD layer's QP1, CQ and PD
 * included; a test compares against the counts before it started.
 *
 * The last two tests unload srx and create srx0 again with `rdma link
 * add` (which loads the installed module by its alias), so the tests after
 * this program find the device as install_test.sh left it.
 */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

static void __attribute__((constructor)) lifecycle_preload(void)
{
	srx_test_preload();
}

static const char *const lifecycle_kinds[] = { "pd", "cq", "qp", "mr" };
#define LIFECYCLE_KINDS (sizeof(lifecycle_kinds) / sizeof(lifecycle_kinds[0]))

static void res_counts(long *counts)
{
	srx_res_counts(srx_test_dev_name(), lifecycle_kinds, LIFECYCLE_KINDS,
		       counts);
}

/* Wait up to @ms for the counts to equal @want; true if they do. */
static bool res_counts_settle(const long *want, int ms)
{
	long now[LIFECYCLE_KINDS];
	int waited;

	for (waited = 0;; waited += 50) {
		res_counts(now);
		if (!memcmp(now, want, sizeof(now)))
			return true;
		if (waited >= ms)
			return false;
		usleep(50000);
	}
}

/* Read one byte from @fd within @ms; -1 on timeout or EOF. */
static int read_byte(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&pfd, 1, ms) != 1 || read(fd, &c, 1) != 1)
		return -1;
	return c;
}

FIXTURE(lifecycle) {
	int kmsg;
};

FIXTURE_SETUP(lifecycle)
{
	self->kmsg = srx_kmsg_open();
}

FIXTURE_TEARDOWN(lifecycle)
{
	EXPECT_EQ(0, srx_kmsg_bad(self->kmsg));
	close(self->kmsg);
}

/* ------------------------------------------------------------------ */
/* A process killed with everything outstanding                       */
/* ------------------------------------------------------------------ */

/* Every child step that fails exits with its own status. */
#define CHILD_CHECK(cond, code) do { if (!(cond)) _exit(code); } while (0)

/*
 * The child: two PDs and MRs, three CQs (one armed with events read but
 * not acknowledged and one more event queued), an RC QP in RTS with sends
 * and receives posted, a UD QP in RTS with receives posted, a QP in ERR
 * whose flushed completions nobody polled. Then it waits to be killed.
 */
static void killed_child(int ready_fd)
{
	struct ibv_qp_init_attr qattr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_recv_wr rwr = {}, *rbad;
	struct ibv_send_wr swr = {}, *sbad;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq_ev, *cq2, *cq3, *ev_cq;
	struct ibv_qp *rc, *ud, *peer;
	struct ibv_context *ctx;
	struct ibv_pd *pd1, *pd2;
	struct ibv_mr *mr1, *mr2;
	struct srx_flusher f;
	struct ibv_sge sge;
	void *buf1, *buf2, *ev_ctx;
	int i;

	ctx = srx_test_open();
	CHILD_CHECK(ctx, 10);
	pd1 = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	CHILD_CHECK(pd1 && pd2, 11);
	buf1 = calloc(1, 1 << 20);
	buf2 = calloc(1, 1 << 16);
	CHILD_CHECK(buf1 && buf2, 12);
	mr1 = ibv_reg_mr(pd1, buf1, 1 << 20,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	mr2 = ibv_reg_mr(pd2, buf2, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	CHILD_CHECK(mr1 && mr2, 13);

	channel = ibv_create_comp_channel(ctx);
	CHILD_CHECK(channel, 14);
	cq_ev = ibv_create_cq(ctx, 256, NULL, channel, 0);
	cq2 = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	cq3 = ibv_create_cq(ctx, 4096, NULL, NULL, 0);
	CHILD_CHECK(cq_ev && cq2 && cq3, 15);

	/* RC in RTS with WQEs posted both ways, aimed at a QP left in INIT. */
	qattr.send_cq = cq2;
	qattr.recv_cq = cq3;
	peer = ibv_create_qp(pd1, &qattr);
	rc = ibv_create_qp(pd1, &qattr);
	CHILD_CHECK(peer && rc, 16);
	CHILD_CHECK(!srx_qp_move(peer, IBV_QPS_INIT), 17);
	CHILD_CHECK(!srx_qp_to_rts(rc, peer->qp_num), 18);
	sge.addr = (uintptr_t)buf1;
	sge.length = 64;
	sge.lkey = mr1->lkey;
	for (i = 0; i < 8; i++) {
		rwr.wr_id = i;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		CHILD_CHECK(!ibv_post_recv(rc, &rwr, &rbad), 19);
	}
	for (i = 0; i < 4; i++) {
		swr.wr_id = 100 + i;
		swr.opcode = IBV_WR_SEND;
		swr.sg_list = &sge;
		swr.num_sge = 1;
		swr.send_flags = i % 2 ? IBV_SEND_SIGNALED : 0;
		CHILD_CHECK(!ibv_post_send(rc, &swr, &sbad), 20);
	}

	/* UD in RTS with receives posted. */
	qattr.qp_type = IBV_QPT_UD;
	qattr.send_cq = cq3;
	qattr.recv_cq = cq3;
	ud = ibv_create_qp(pd2, &qattr);
	CHILD_CHECK(ud, 21);
	CHILD_CHECK(!srx_qp_to_rts(ud, 0), 22);
	for (i = 0; i < 4; i++) {
		rwr.wr_id = 200 + i;
		CHILD_CHECK(!ibv_post_recv(ud, &rwr, &rbad), 23);
	}

	/*
	 * Flushed completions on the armed CQ: an event that is read and
	 * never acknowledged, then one that stays queued in the channel.
	 */
	CHILD_CHECK(!srx_flusher_create(&f, pd2, cq_ev, cq_ev, 64), 24);
	CHILD_CHECK(!ibv_req_notify_cq(cq_ev, 0), 25);
	CHILD_CHECK(!srx_flush_recvs(&f, 300, 10), 26);
	CHILD_CHECK(!srx_wait_event(channel, &ev_cq, &ev_ctx, 5000), 27);
	CHILD_CHECK(!ibv_req_notify_cq(cq_ev, 0), 28);
	CHILD_CHECK(!srx_flush_recvs(&f, 400, 10), 29);
	CHILD_CHECK(srx_event_pending(channel, 5000), 30);
	CHILD_CHECK(!ibv_req_notify_cq(cq_ev, 0), 31);

	CHILD_CHECK(write(ready_fd, "R", 1) == 1, 32);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(lifecycle, killed_process_frees_everything, 120)
{
	long base[LIFECYCLE_KINDS], busy[LIFECYCLE_KINDS], after[LIFECYCLE_KINDS];
	int fds[2], status;
	unsigned int i;
	pid_t pid;

	res_counts(base);
	/* The harness's EXPECT/ASSERT are two statements: braces in loops. */
	for (i = 0; i < LIFECYCLE_KINDS; i++) {
		ASSERT_LE(0, base[i]) TH_LOG("no %s count: rdma tool?",
					     lifecycle_kinds[i]);
	}

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(fds[0]);
		killed_child(fds[1]);
	}
	close(fds[1]);
	if (read_byte(fds[0], 60000) != 'R') {
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(0) TH_LOG("child failed at step %d",
				      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	close(fds[0]);

	res_counts(busy);
	EXPECT_LE(base[0] + 2, busy[0]);	/* pd */
	EXPECT_LE(base[1] + 3, busy[1]);	/* cq */
	EXPECT_LE(base[2] + 4, busy[2]);	/* qp */
	EXPECT_LE(base[3] + 2, busy[3]);	/* mr */

	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));

	/* The uverbs file is released as the process exits. */
	EXPECT_TRUE(res_counts_settle(base, 10000));
	res_counts(after);
	for (i = 0; i < LIFECYCLE_KINDS; i++) {
		EXPECT_EQ(base[i], after[i]) TH_LOG("%s: %ld before, %ld after",
						    lifecycle_kinds[i], base[i],
						    after[i]);
	}
}

/* ------------------------------------------------------------------ */
/* 100,000 CQs                                                        */
/* ------------------------------------------------------------------ */

#define CHURN_CYCLES 100000
#define CHURN_CYCLES_KASAN 20000
#define CHURN_PROCS 2

/*
 * Kernel memory that a leak per CQ would grow: /proc/meminfo's Slab and
 * VmallocUsed, and the objects /proc/slabinfo counts as in use, in all
 * caches and in the kmalloc caches alone.
 */
struct churn_mem {
	long slab_kb;
	long vmalloc_kb;
	long long objs;
	long long kmalloc_objs;
};

static int churn_measure(struct churn_mem *m)
{
	char line[512];
	FILE *f;

	m->slab_kb = srx_meminfo_kb("Slab");
	m->vmalloc_kb = srx_meminfo_kb("VmallocUsed");
	m->objs = 0;
	m->kmalloc_objs = 0;
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char name[128];
		long long active;

		if (sscanf(line, "%127s %lld", name, &active) != 2)
			continue;	/* the two header lines */
		m->objs += active;
		if (!strncmp(name, "kmalloc-", 8))
			m->kmalloc_objs += active;
	}
	fclose(f);
	return m->slab_kb < 0 || m->vmalloc_kb < 0 ? -1 : 0;
}

/*
 * Freed memory can lag: the core frees uobjects after an RCU grace period
 * and xarray nodes go the same way. Take the smallest of a few samples a
 * moment apart, field by field.
 */
static int churn_measure_settled(struct churn_mem *m)
{
	struct churn_mem s;
	int i;

	if (churn_measure(m))
		return -1;
	for (i = 0; i < 10; i++) {
		usleep(200000);
		if (churn_measure(&s))
			return -1;
		if (s.slab_kb < m->slab_kb)
			m->slab_kb = s.slab_kb;
		if (s.vmalloc_kb < m->vmalloc_kb)
			m->vmalloc_kb = s.vmalloc_kb;
		if (s.objs < m->objs)
			m->objs = s.objs;
		if (s.kmalloc_objs < m->kmalloc_objs)
			m->kmalloc_objs = s.kmalloc_objs;
	}
	return 0;
}

/* Ring sizes: one page, several pages, and a larger ring, in turn. */
static const int churn_sizes[] = { 1, 100, 1000 };

/*
 * One churning process: exits 0, or 1 after printing what failed. Each
 * cycle also has a create refused (a size over max_cqe, EINVAL): the RDMA
 * core allocates the CQ's objects and the driver refuses it, so the
 * unwinding of a failed create is churned as often as a destroy.
 */
static void churn_child(int cycles)
{
	struct ibv_context *ctx = srx_test_open();
	struct ibv_device_attr attr;
	int i;

	if (!ctx || ibv_query_device(ctx, &attr) || attr.max_cqe == INT_MAX) {
		fprintf(stderr, "# churn: open: %s\n", strerror(errno));
		_exit(1);
	}
	for (i = 0; i < cycles; i++) {
		struct ibv_cq *cq = ibv_create_cq(ctx, churn_sizes[i % 3], NULL,
						  NULL, 0);

		if (!cq || ibv_destroy_cq(cq)) {
			fprintf(stderr, "# churn: cycle %d: %s\n", i,
				strerror(errno));
			_exit(1);
		}
		errno = 0;
		cq = ibv_create_cq(ctx, attr.max_cqe + 1, NULL, NULL, 0);
		if (cq || errno != EINVAL) {
			fprintf(stderr, "# churn: cycle %d: cqe over max_cqe: %s\n",
				i, cq ? "created" : strerror(errno));
			_exit(1);
		}
	}
	_exit(ibv_close_device(ctx) ? 1 : 0);
}

/*
 * @cycles create/destroy cycles split over @procs processes. Processes,
 * not threads: each destroy unmaps a ring, and with two threads of one
 * process on the two vCPUs every munmap() is a TLB-shootdown IPI, which
 * under TCG makes two threads ten times slower than one.
 */
static int churn(int cycles, int procs, double *secs)
{
	uint64_t t0 = srx_test_now_ns();
	int i, status, failed = 0;

	for (i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (!pid)
			churn_child(cycles / procs + (i < cycles % procs));
	}
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	*secs = (srx_test_now_ns() - t0) / 1e9;
	return failed ? -1 : 0;
}

/*
 * 100,000 CQ create/destroy cycles, each with a refused create, leave
 * kernel memory where it was.
 *
 * Tolerances, against a leak of one object (or one ring) per cycle, which
 * would grow the counters by 100,000 objects or 100,000 pages:
 *  - VmallocUsed: 1 MiB. Every ring is at least one vmalloc page, so a
 *    ring leaked every 400 cycles would show. Nothing else in the quiet
 *    VM allocates vmalloc memory meanwhile (measured: within 48 kB).
 *  - slab objects in use, kmalloc caches and all caches: 5,000, one
 *    object per 20 cycles. SLUB counts the free objects of per-CPU slabs
 *    as in use, so a few slabs' worth per cache and CPU is noise
 *    (measured over five runs on srx and rxe: within 700).
 *  - Slab: 2 MiB, the same per-CPU slabs in bytes (measured: within
 *    120 kB). It is the coarsest check; the object counts catch small
 *    objects, which 2 MiB over 100,000 cycles (20 bytes each) would not.
 * Under KASAN (srx_test_kasan()) the churn is 20,000 cycles, still four
 * times the object bound, and Slab is not checked: freed objects sit in
 * KASAN's quarantine, and kmemleak checks that run instead.
 * A warm-up first lets caches, xarrays and per-CPU lists reach their
 * working size, so the baseline is not taken from a cold kernel.
 */
TEST_F_TIMEOUT(lifecycle, cq_churn_leaves_no_memory, 900)
{
	long base[LIFECYCLE_KINDS], after[LIFECYCLE_KINDS];
	struct churn_mem before, now;
	int cycles = srx_test_kasan() ? CHURN_CYCLES_KASAN : CHURN_CYCLES;
	double secs;

	ASSERT_EQ(0, churn(2000, CHURN_PROCS, &secs));
	res_counts(base);
	ASSERT_EQ(0, churn_measure_settled(&before));

	ASSERT_EQ(0, churn(cycles, CHURN_PROCS, &secs));
	TH_LOG("%d CQ create/destroy/refused-create cycles in %.1f s (%.0f/s, %d processes)",
	       cycles, secs, cycles / secs, CHURN_PROCS);

	ASSERT_EQ(0, churn_measure_settled(&now));
	TH_LOG("Slab %+ld kB, VmallocUsed %+ld kB, slab objects %+lld, kmalloc objects %+lld",
	       now.slab_kb - before.slab_kb, now.vmalloc_kb - before.vmalloc_kb,
	       now.objs - before.objs, now.kmalloc_objs - before.kmalloc_objs);
	EXPECT_GE(1024, now.vmalloc_kb - before.vmalloc_kb);
	EXPECT_GE(5000, now.kmalloc_objs - before.kmalloc_objs);
	EXPECT_GE(5000, now.objs - before.objs);
	if (!srx_test_kasan())
		EXPECT_GE(2048, now.slab_kb - before.slab_kb);

	res_counts(after);
	EXPECT_EQ(0, memcmp(base, after, sizeof(base)));
}

/* ------------------------------------------------------------------ */
/* A mapping outlives its CQ                                          */
/* ------------------------------------------------------------------ */

/*
 * srx's rings belong to their mmap entry, and mapped pages hold their own
 * references (kernel/ucontext.c): a second mapping of a CQ ring, made by
 * the test from the offset /proc/self/maps shows on the context's command
 * file, keeps its contents after the CQ is destroyed and stays writable,
 * while the offset itself stops being mappable.
 */
TEST_F(lifecycle, mapping_outlives_destroy)
{
	struct srx_test_map before[16], after[16], added[4];
	struct ibv_context *ctx;
	struct srx_flusher f;
	struct srx_cq_ctrl *ctrl;
	struct srx_cqe *cqes;
	struct ibv_wc wc[8];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	size_t len;
	void *copy, *again;
	int nb, na, i;

	if (!srx_test_is_srx())
		SKIP(return, "mapping offsets are srx's (rxe maps each once)");

	ctx = srx_test_open();
	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	nb = srx_test_maps(before, 16);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	na = srx_test_maps(after, 16);
	ASSERT_EQ(1, srx_test_map_new(before, nb, after, na, added, 4));

	len = added[0].end - added[0].start;
	copy = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->cmd_fd,
		    added[0].offset);
	ASSERT_NE(MAP_FAILED, copy) TH_LOG("mmap: %s", strerror(errno));
	ctrl = copy;
	cqes = (struct srx_cqe *)(ctrl + 1);

	ASSERT_EQ(0, srx_flusher_create(&f, pd, cq, cq, 8));
	ASSERT_EQ(0, srx_flush_recvs(&f, 7000, 5));
	ASSERT_EQ(5, srx_wait_cqes(cq, wc, 5, 1000));
	/* Both mappings show the same ring. */
	EXPECT_EQ(5u, ctrl->prod);
	EXPECT_EQ(5u, (uint32_t)ctrl->cons);
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(7000u + i, cqes[i].wr_id);
	}

	ASSERT_EQ(0, srx_flusher_destroy(&f));
	ASSERT_EQ(0, ibv_destroy_cq(cq));

	/* The ring is gone from the device but not from this mapping. */
	EXPECT_EQ(5u, ctrl->prod);
	for (i = 0; i < 5; i++) {
		EXPECT_EQ(7000u + i, cqes[i].wr_id);
	}
	ctrl->arm = 0x1234;
	cqes[0].wr_id = 42;
	EXPECT_EQ(0x1234u, ctrl->arm);
	EXPECT_EQ(42u, cqes[0].wr_id);

	/* The offset was revoked with the CQ. */
	again = mmap(NULL, len, PROT_READ, MAP_SHARED, ctx->cmd_fd,
		     added[0].offset);
	EXPECT_EQ(MAP_FAILED, again);
	if (again != MAP_FAILED)
		munmap(again, len);

	EXPECT_EQ(0, munmap(copy, len));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx));
}

/* ------------------------------------------------------------------ */
/* Module unload                                                      */
/* ------------------------------------------------------------------ */

static bool srx_loaded(void)
{
	return !system("grep -q '^srx ' /proc/modules");
}

static bool dev_present(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
	return !access(path, F_OK);
}

/*
 * rmmod srx, bounded in time; returns the exit status of rmmod and its
 * duration in @secs.
 */
static int rmmod_srx(double *secs)
{
	uint64_t t0 = srx_test_now_ns();
	int status = system("timeout 120 rmmod srx");

	*secs = (srx_test_now_ns() - t0) / 1e9;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Load srx again the way install_test.sh left it: srx0 on eth0. */
static int srx0_again(void)
{
	return system("ip link set eth0 up && rdma link add srx0 type srx netdev eth0");
}

/* srx-specific, and only where the module can be loaded again by name. */
static const char *rmmod_skip_reason(void)
{
	if (!srx_test_is_srx())
		return "unloads srx";
	if (strcmp(srx_test_dev_name(), "srx0"))
		return "recreates srx0 only";
	if (!srx_loaded())
		return "srx is not loaded";
	if (system("modprobe -n -q srx"))
		return "modprobe cannot load srx: rdma link add could not load it again";
	return NULL;
}

TEST_F_TIMEOUT(lifecycle, rmmod_idle, 180)
{
	const char *skip = rmmod_skip_reason();
	struct ibv_context *ctx;
	double secs;

	if (skip)
		SKIP(return, "%s", skip);

	ASSERT_EQ(0, rmmod_srx(&secs));
	TH_LOG("rmmod took %.2f s", secs);
	EXPECT_FALSE(srx_loaded());
	EXPECT_FALSE(dev_present("srx0"));

	ASSERT_EQ(0, srx0_again());
	EXPECT_TRUE(srx_loaded());
	ctx = srx_test_open();
	ASSERT_NE(NULL, ctx);
	EXPECT_EQ(0, ibv_close_device(ctx));
}

/* What the child of rmmod_with_open_context reports. */
struct rmmod_report {
	int async_event;	/* the type, or -1 */
	bool cq_event_returned;	/* the blocked reader came back */
	int cq_event_ret;	/* then: what ibv_get_cq_event() returned */
	int cq_event_errno;
	uint32_t prod_before, prod_after;
	uint64_t wr_id_after;
	int arm_written;
};

struct rmmod_child {
	struct ibv_comp_channel *channel;
	_Atomic bool cq_event_returned;
	int ret, err;
};

static void *rmmod_child_wait_cq(void *arg)
{
	struct rmmod_child *c = arg;
	struct ibv_cq *cq;
	void *cq_ctx;

	c->ret = ibv_get_cq_event(c->channel, &cq, &cq_ctx);
	c->err = errno;
	c->cq_event_returned = true;
	return NULL;
}

/*
 * The child: a CQ with three completions, mapped, armed, one thread
 * blocked in ibv_get_cq_event() and the main thread in
 * ibv_get_async_event() while the parent unloads srx.
 */
static void rmmod_child(int report_fd)
{
	struct srx_test_map before[16], after[16], added[4];
	struct rmmod_report r = { .async_event = -1 };
	struct rmmod_child c = {};
	struct ibv_async_event ev;
	struct ibv_context *ctx;
	volatile struct srx_cq_ctrl *ctrl;
	volatile struct srx_cqe *cqes;
	struct srx_flusher f;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	pthread_t tid;
	int nb, na, i;

	ctx = srx_test_open();
	CHILD_CHECK(ctx, 10);
	pd = ibv_alloc_pd(ctx);
	c.channel = ibv_create_comp_channel(ctx);
	CHILD_CHECK(pd && c.channel, 11);
	nb = srx_test_maps(before, 16);
	cq = ibv_create_cq(ctx, 64, NULL, c.channel, 0);
	CHILD_CHECK(cq, 12);
	na = srx_test_maps(after, 16);
	CHILD_CHECK(srx_test_map_new(before, nb, after, na, added, 4) == 1, 13);
	ctrl = (struct srx_cq_ctrl *)added[0].start;
	cqes = (struct srx_cqe *)(added[0].start + sizeof(struct srx_cq_ctrl));

	CHILD_CHECK(!srx_flusher_create(&f, pd, cq, cq, 8), 14);
	CHILD_CHECK(!srx_flush_recvs(&f, 9000, 3), 15);
	r.prod_before = ctrl->prod;
	CHILD_CHECK(!ibv_req_notify_cq(cq, 0), 16);
	CHILD_CHECK(!pthread_create(&tid, NULL, rmmod_child_wait_cq, &c), 17);

	CHILD_CHECK(write(report_fd, "R", 1) == 1, 18);

	if (!ibv_get_async_event(ctx, &ev)) {
		r.async_event = ev.event_type;
		ibv_ack_async_event(&ev);
	}
	/* The blocked reader must come back too (it is woken, not left). */
	for (i = 0; i < 200 && !c.cq_event_returned; i++)
		usleep(50000);
	r.cq_event_returned = c.cq_event_returned;
	if (r.cq_event_returned) {
		r.cq_event_ret = c.ret;
		r.cq_event_errno = c.err;
	}

	/* The mapping is still there: read it, write it. */
	r.prod_after = ctrl->prod;
	r.wr_id_after = cqes[0].wr_id;
	ctrl->arm = 0x5678;
	r.arm_written = ctrl->arm == 0x5678;

	CHILD_CHECK(write(report_fd, &r, sizeof(r)) == sizeof(r), 19);
	_exit(0);
}

/*
 * Unload srx while a process has the device open, a CQ mapped and armed
 * and a thread blocked waiting for its event: rmmod must return promptly,
 * the process must learn of it (IBV_EVENT_DEVICE_FATAL, the blocked wait
 * fails) and may still read its mapping, then exit normally.
 */
TEST_F_TIMEOUT(lifecycle, rmmod_with_open_context, 240)
{
	const char *skip = rmmod_skip_reason();
	struct rmmod_report r;
	int fds[2], status, ret;
	struct ibv_context *ctx;
	struct pollfd pfd;
	double secs;
	pid_t pid;

	if (skip)
		SKIP(return, "%s", skip);

	ASSERT_EQ(0, pipe(fds));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(fds[0]);
		rmmod_child(fds[1]);
	}
	close(fds[1]);
	ret = read_byte(fds[0], 60000);
	if (ret != 'R') {
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(0) TH_LOG("child failed at step %d",
				      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	usleep(200000);		/* let it block in both waits */

	ret = rmmod_srx(&secs);
	TH_LOG("rmmod with a user took %.2f s", secs);
	EXPECT_EQ(0, ret);
	EXPECT_FALSE(srx_loaded());

	pfd.fd = fds[0];
	pfd.events = POLLIN;
	EXPECT_EQ(1, poll(&pfd, 1, 30000));
	memset(&r, 0, sizeof(r));
	ret = read(fds[0], &r, sizeof(r));
	close(fds[0]);
	if (ret != sizeof(r))
		kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("child status %#x", status);
	ASSERT_EQ((int)sizeof(r), ret);

	EXPECT_EQ(IBV_EVENT_DEVICE_FATAL, r.async_event);
	/*
	 * Disassociation closes the completion channel's event queue and
	 * wakes its readers; with no event queued, read() then fails with
	 * EIO (ib_uverbs_event_read() in uverbs_main.c), which
	 * ibv_get_cq_event() returns as -1.
	 */
	EXPECT_TRUE(r.cq_event_returned)
		TH_LOG("the reader is still blocked in ibv_get_cq_event() 10 s after the device went");
	if (r.cq_event_returned) {
		EXPECT_EQ(-1, r.cq_event_ret);
		EXPECT_EQ(EIO, r.cq_event_errno)
			TH_LOG("ibv_get_cq_event: %s", strerror(r.cq_event_errno));
	}
	EXPECT_EQ(3u, r.prod_before);
	EXPECT_EQ(3u, r.prod_after);
	EXPECT_EQ(9000u, r.wr_id_after);
	EXPECT_TRUE(r.arm_written);

	/* Leave srx0 for the tests that follow. */
	ASSERT_EQ(0, srx0_again());
	ctx = srx_test_open();
	ASSERT_NE(NULL, ctx);
	EXPECT_EQ(0, ibv_close_device(ctx));
}

/* ------------------------------------------------------------------ */
/* A doorbell that fails                                              */
/* ------------------------------------------------------------------ */

/*
 * A QP in ERR after `rdma link delete`: its rings are still mapped and
 * still say ERR, so a post writes the ring and rings the doorbell, which
 * the disassociated uverbs file refuses (EIO). The post must report that
 * error with bad_wr at the first work request, not succeed with work
 * requests that will never complete.
 */
TEST_F_TIMEOUT(lifecycle, failed_doorbell_fails_the_post, 120)
{
	const char *skip = rmmod_skip_reason();
	struct ibv_send_wr swr[2] = {}, *sbad = NULL;
	struct ibv_recv_wr rwr[2] = {}, *rbad = NULL;
	struct ibv_context *ctx;
	struct srx_flusher f = {};
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	int ret;

	if (skip)
		SKIP(return, "%s", skip);
	ctx = srx_test_open();
	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	ASSERT_EQ(0, srx_flusher_create(&f, pd, cq, cq, 4));
	ASSERT_EQ(0, srx_qp_move(f.qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(f.qp, IBV_QPS_ERR));

	ASSERT_EQ(0, system("rdma link delete srx0"));
	EXPECT_FALSE(dev_present("srx0"));

	rwr[0].wr_id = 1;
	rwr[0].next = &rwr[1];
	rwr[1].wr_id = 2;
	ret = ibv_post_recv(f.qp, rwr, &rbad);
	EXPECT_EQ(EIO, ret) TH_LOG("post_recv after link delete: %s",
				   strerror(ret));
	EXPECT_EQ(&rwr[0], rbad);

	swr[0].wr_id = 3;
	swr[0].opcode = IBV_WR_SEND;
	swr[0].next = &swr[1];
	swr[1].wr_id = 4;
	swr[1].opcode = IBV_WR_SEND;
	ret = ibv_post_send(f.qp, swr, &sbad);
	EXPECT_EQ(EIO, ret) TH_LOG("post_send after link delete: %s",
				   strerror(ret));
	EXPECT_EQ(&swr[0], sbad);

	/* The objects are gone with the device: only the process's side. */
	srx_flusher_destroy(&f);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ASSERT_EQ(0, srx0_again());
}

TEST_HARNESS_MAIN
