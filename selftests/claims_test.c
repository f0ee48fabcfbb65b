// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What README.md and srx(7) promise and no other test checked (issue 18):
 *
 *   device      vendor_id 0xffffff, atomics and ODP reported absent, and
 *               atomic work requests and MR rights refused as srx(7) says;
 *               memory windows of types 1 and 2 (max_mw = max_mr; type 3
 *               EINVAL), a UD send without an address handle EINVAL; one
 *               comp_vector per CPU online
 *   counters    wqes_flushed, doorbells, cq_arm_events and cqes_posted
 *               grow by exactly the number of known operations
 *   atomics     "a CQ polled by one thread costs no atomic operation":
 *               the poll is single-stepped with ptrace and every locked
 *               instruction it executes is counted; the same count must
 *               see the compare-and-swap once a second thread polled, and
 *               on every poll where membarrier() is refused
 *   ring format libsrx refuses a kernel whose ring format it cannot read,
 *               with EPROTONOSUPPORT
 *   removal     the memory a process mapped stays readable after
 *               `rdma link delete` and after its netdev is deleted
 *
 * The ring-format test stands in for an older srx.ko by changing the
 * answer of GET_CONTEXT on its way to libsrx: this program defines
 * ibv_cmd_get_context() and exports it (the Makefile links it with
 * -rdynamic), so libsrx's call lands here first; it passes everything
 * through unless a test asks otherwise.
 *
 * The removal tests make a device of their own on a veth pair, so srx0 and
 * the tests after this one are left alone.
 */
#include <dlfcn.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

/* srx(7): "The device reports vendor_id 0xffffff: it has no IEEE OUI." */
#define SRX_DOC_VENDOR_ID 0xffffff

static void __attribute__((constructor)) claims_test_preload(void)
{
	srx_test_preload();
}

/* ------------------------------------------------------------------ */
/* A GET_CONTEXT answer from another ring format                      */
/* ------------------------------------------------------------------ */

/* Non-zero: the ring_format GET_CONTEXT reports to libsrx instead. */
static uint32_t fake_ring_format;

/*
 * libibverbs' private provider function (IBVERBS_PRIVATE_34), which libsrx
 * calls to open a context. Declared with opaque pointers: Debian ships no
 * infiniband/driver.h, and only the response is looked at.
 */
int ibv_cmd_get_context(void *context, void *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);

int ibv_cmd_get_context(void *context, void *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size)
{
	static int (*real)(void *, void *, size_t,
			   struct ib_uverbs_get_context_resp *, size_t);
	struct srx_alloc_ucontext_resp *drv;
	int ret;

	if (!real)
		real = dlsym(RTLD_NEXT, "ibv_cmd_get_context");
	if (!real)
		return ENOSYS;
	ret = real(context, cmd, cmd_size, resp, resp_size);
	/* srx's payload follows the core's (libsrx/srx-abi.h). */
	if (!ret && fake_ring_format &&
	    resp_size >= sizeof(*resp) + sizeof(*drv)) {
		drv = (void *)((char *)resp + sizeof(*resp));
		drv->ring_format = fake_ring_format;
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* Helpers                                                            */
/* ------------------------------------------------------------------ */

static struct ibv_context *open_by_name(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = srx_test_find(list, name);
	struct ibv_context *ctx = NULL;

	if (dev)
		ctx = ibv_open_device(dev);
	else
		errno = ENODEV;
	ibv_free_device_list(list);
	return ctx;
}

static bool dev_exists(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s", name);
	return !access(path, F_OK);
}

/* Wait up to @ms for device @name to be gone. */
static bool dev_gone_within(const char *name, int ms)
{
	for (; ms > 0; ms -= 50) {
		if (!dev_exists(name))
			return true;
		usleep(50000);
	}
	return !dev_exists(name);
}

static int sh(const char *cmd)
{
	int status;

	fprintf(stderr, "# + %s\n", cmd);
	status = system(cmd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ------------------------------------------------------------------ */
/* What the device reports and refuses                                */
/* ------------------------------------------------------------------ */

FIXTURE(claims) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	struct srx_flusher f;
};

FIXTURE_SETUP(claims)
{
	if (!srx_test_is_srx())
		SKIP(return, "these are srx's own claims");
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx) TH_LOG("open %s: %s", srx_test_dev_name(),
					  strerror(errno));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->ch = ibv_create_comp_channel(self->ctx);
	ASSERT_NE(NULL, self->ch);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, self->ch, 0);
	ASSERT_NE(NULL, self->cq);
	ASSERT_EQ(0, srx_flusher_create(&self->f, self->pd, self->cq,
					self->cq, 16));
}

FIXTURE_TEARDOWN(claims)
{
	if (self->f.qp)
		EXPECT_EQ(0, srx_flusher_destroy(&self->f));
	if (self->cq)
		EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	if (self->ch)
		EXPECT_EQ(0, ibv_destroy_comp_channel(self->ch));
	if (self->pd)
		EXPECT_EQ(0, ibv_dealloc_pd(self->pd));
	if (self->ctx)
		EXPECT_EQ(0, ibv_close_device(self->ctx));
}

/*
 * srx(7): vendor_id 0xffffff; atomics IBV_ATOMIC_HCA; SRQs without resize;
 * the memory management extensions (fast registration, invalidation);
 * memory windows of types 1 and 2B, as many as MRs (one key space); ODP
 * absent.
 */
TEST_F(claims, device_reports_what_the_docs_say)
{
	struct ibv_device_attr_ex ax = {};
	struct ibv_mr *mr;
	char buf[64];

	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &ax));
	EXPECT_EQ((uint32_t)SRX_DOC_VENDOR_ID, ax.orig_attr.vendor_id);
	EXPECT_EQ((int)IBV_ATOMIC_HCA, (int)ax.orig_attr.atomic_cap);
	EXPECT_LT(0, ax.orig_attr.max_srq);
	EXPECT_EQ(ax.orig_attr.max_qp_wr, ax.orig_attr.max_srq_wr);
	EXPECT_EQ(ax.orig_attr.max_sge, ax.orig_attr.max_srq_sge);
	EXPECT_EQ(0u, ax.orig_attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	EXPECT_EQ(ax.orig_attr.max_mr, ax.orig_attr.max_mw);
	EXPECT_NE(0u, ax.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	EXPECT_NE(0u, ax.orig_attr.device_cap_flags &
		      IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	EXPECT_NE(0u, ax.orig_attr.device_cap_flags &
		      IBV_DEVICE_MEM_MGT_EXTENSIONS);

	/* ODP: no capability of any kind, and ON_DEMAND MRs refused. */
	EXPECT_EQ(0u, ax.odp_caps.general_caps);
	EXPECT_EQ(0u, ax.odp_caps.per_transport_caps.rc_odp_caps);
	EXPECT_EQ(0u, ax.odp_caps.per_transport_caps.uc_odp_caps);
	EXPECT_EQ(0u, ax.odp_caps.per_transport_caps.ud_odp_caps);
	EXPECT_EQ(0u, ax.xrc_odp_caps);
	errno = 0;
	mr = ibv_reg_mr(self->pd, buf, sizeof(buf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	EXPECT_EQ(NULL, mr) TH_LOG("an ON_DEMAND MR was registered");
	if (mr)
		ibv_dereg_mr(mr);
	else
		TH_LOG("ON_DEMAND MR: %s", strerror(errno));
}

/*
 * srx(7): atomic_cap is IBV_ATOMIC_HCA; atomic work requests are taken and
 * ibv_reg_mr() grants REMOTE_ATOMIC, and MW_BIND (memory windows).
 */
TEST_F(claims, atomics_hca_mw_bind)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct ibv_qp_init_attr ia = {
		.send_cq = self->cq, .recv_cq = self->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_device_attr da;
	struct ibv_send_wr wr, *bad;
	uint64_t target = 0;
	struct ibv_mr *mr;
	struct ibv_wc wc[4];
	struct ibv_qp *qp;
	unsigned int i;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	EXPECT_EQ((int)IBV_ATOMIC_HCA, (int)da.atomic_cap);

	mr = ibv_reg_mr(self->pd, &target, sizeof(target),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_ATOMIC);
	ASSERT_NE(NULL, mr) TH_LOG("REMOTE_ATOMIC: %s", strerror(errno));
	qp = ibv_create_qp(self->pd, &ia);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, srx_qp_to_rts(qp, qp->qp_num));

	/* Taken; the QP is then moved to ERR, so they complete either way. */
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)&target, .length = 8,
			.lkey = mr->lkey,
		};

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 100 + i;
		wr.opcode = ops[i];
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = (uintptr_t)&target;
		wr.wr.atomic.rkey = mr->rkey;
		wr.wr.atomic.compare_add = 1;
		EXPECT_EQ(0, ibv_post_send(qp, &wr, &bad)) TH_LOG("opcode %d",
								 ops[i]);
	}
	EXPECT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	ASSERT_EQ(2, srx_wait_cqes(self->cq, wc, 2, 2000));
	EXPECT_EQ(100u, wc[0].wr_id);
	EXPECT_EQ(101u, wc[1].wr_id);

	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	mr = ibv_reg_mr(self->pd, &target, sizeof(target),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_MW_BIND);
	EXPECT_NE(NULL, mr) TH_LOG("MW_BIND: %s", strerror(errno));
	if (mr)
		EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/*
 * srx(7): memory windows of types 1 and 2 allocate, in the PD asked for;
 * any other type fails with EINVAL. (What they do: rc_errors' mw_* cases.)
 */
TEST_F(claims, mw_types)
{
	static const enum ibv_mw_type types[] = {
		IBV_MW_TYPE_1, IBV_MW_TYPE_2,
	};
	struct ibv_mw *mw;
	unsigned int i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		mw = ibv_alloc_mw(self->pd, types[i]);
		EXPECT_NE(NULL, mw) TH_LOG("MW type %d: %s", types[i],
					   strerror(errno));
		if (!mw)
			continue;
		EXPECT_EQ(types[i], mw->type);
		EXPECT_EQ(self->pd, mw->pd);
		EXPECT_EQ(0, ibv_dealloc_mw(mw));
	}
	errno = 0;
	mw = ibv_alloc_mw(self->pd, (enum ibv_mw_type)3);
	EXPECT_EQ(NULL, mw) TH_LOG("MW type 3 allocated");
	if (mw)
		ibv_dealloc_mw(mw);
	else
		EXPECT_EQ(EINVAL, errno) TH_LOG("MW type 3: %s",
						strerror(errno));
}

/*
 * srx(7): a send on a UD queue pair without an address handle fails with
 * EINVAL, with bad_wr at the send, and nothing is queued; receives still
 * work.
 */
TEST_F(claims, ud_send_einval)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = self->cq, .recv_cq = self->cq,
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_wc wc[4];
	struct ibv_qp *qp;
	char buf[64];
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 8 };

	qp = ibv_create_qp(self->pd, &ia);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, srx_qp_to_rts(qp, 0));

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.ud.remote_qpn = qp->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	EXPECT_EQ(EINVAL, ibv_post_send(qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);

	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 2;
	EXPECT_EQ(0, ibv_post_recv(qp, &rwr, &rbad));
	EXPECT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	ASSERT_EQ(1, srx_wait_cqes(self->cq, wc, 1, 2000));
	EXPECT_EQ(2u, wc[0].wr_id);
	EXPECT_EQ(0, srx_wait_cqes(self->cq, wc, 4, 100));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * srx(7): every comp_vector "from 0 to the number of CPUs online when the
 * device was created, less one" (cq_test checks that each of them works
 * and the next is EINVAL). The guest's CPUs do not come and go.
 */
TEST_F(claims, one_comp_vector_per_online_cpu)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	ASSERT_LT(0, cpus);
	EXPECT_EQ(cpus, self->ctx->num_comp_vectors);
}

/* ------------------------------------------------------------------ */
/* Counters: N known operations, exactly N counted                    */
/* ------------------------------------------------------------------ */

struct counters {
	long long flushed, doorbells, events, posted;
};

static int read_counters(struct counters *c)
{
	const char *dev = srx_test_dev_name();

	c->flushed = srx_hw_counter(dev, "wqes_flushed");
	c->doorbells = srx_hw_counter(dev, "doorbells");
	c->events = srx_hw_counter(dev, "cq_arm_events");
	c->posted = srx_hw_counter(dev, "cqes_posted");
	return c->flushed < 0 || c->doorbells < 0 || c->events < 0 ||
	       c->posted < 0 ? -1 : 0;
}

#define FLUSH_N		5	/* receives flushed by modify_qp */
#define DOORBELL_N	3	/* posts into a QP in ERR, one WR each */
#define EVENT_N		3	/* armed rounds with a completion each */

/*
 * srx(7) COUNTERS: wqes_flushed counts WRs completed as flushed, doorbells
 * the system calls a provider made to wake the kernel (libsrx makes one
 * per post into a QP the kernel has in error, none otherwise),
 * cq_arm_events the completion events raised, cqes_posted completions.
 * Nothing else uses the device while this runs (tests run one at a time).
 */
TEST_F(claims, counters_count_exactly)
{
	struct counters c0, c1;
	struct ibv_recv_wr wr[2], *bad;
	struct ibv_wc wc[16];
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int i;

	/* Flushed by modify_qp(ERR): FLUSH_N flushed, no doorbell. */
	ASSERT_EQ(0, read_counters(&c0));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, FLUSH_N));
	ASSERT_EQ(FLUSH_N, srx_wait_cqes(self->cq, wc, FLUSH_N, 2000));
	ASSERT_EQ(0, read_counters(&c1));
	EXPECT_EQ(FLUSH_N, c1.flushed - c0.flushed);
	EXPECT_EQ(0, c1.doorbells - c0.doorbells);
	EXPECT_EQ(FLUSH_N, c1.posted - c0.posted);
	EXPECT_EQ(0, c1.events - c0.events) TH_LOG("nobody armed the CQ");

	/*
	 * Posted into the QP in ERR: a doorbell per call, whatever the
	 * number of WRs in it, and each WR flushed.
	 */
	c0 = c1;
	for (i = 0; i < DOORBELL_N; i++) {
		memset(wr, 0, sizeof(wr));
		wr[0].wr_id = 100 + i;
		ASSERT_EQ(0, ibv_post_recv(self->f.qp, &wr[0], &bad));
	}
	memset(wr, 0, sizeof(wr));
	wr[0].next = &wr[1];
	ASSERT_EQ(0, ibv_post_recv(self->f.qp, &wr[0], &bad));
	ASSERT_EQ(DOORBELL_N + 2,
		  srx_wait_cqes(self->cq, wc, DOORBELL_N + 2, 2000));
	ASSERT_EQ(0, read_counters(&c1));
	EXPECT_EQ(DOORBELL_N + 1, c1.doorbells - c0.doorbells);
	EXPECT_EQ(DOORBELL_N + 2, c1.flushed - c0.flushed);
	EXPECT_EQ(DOORBELL_N + 2, c1.posted - c0.posted);

	/*
	 * Armed rounds: one event each. A second arm before the completion
	 * adds no event, and a completion on an unarmed CQ raises none.
	 */
	c0 = c1;
	for (i = 0; i < EVENT_N; i++) {
		ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
		ASSERT_EQ(0, ibv_req_notify_cq(self->cq, 0));
		ASSERT_EQ(0, srx_flush_recvs(&self->f, 200 + i, 1));
		ASSERT_EQ(0, srx_wait_event(self->ch, &ev_cq, &ev_ctx, 2000));
		ibv_ack_cq_events(ev_cq, 1);
		ASSERT_EQ(1, srx_wait_cqes(self->cq, wc, 1, 2000));
	}
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 300, 1));
	ASSERT_EQ(1, srx_wait_cqes(self->cq, wc, 1, 2000));
	EXPECT_FALSE(srx_event_pending(self->ch, 100));
	ASSERT_EQ(0, read_counters(&c1));
	EXPECT_EQ(EVENT_N, c1.events - c0.events);
	EXPECT_EQ(EVENT_N + 1, c1.flushed - c0.flushed);
	/* srx_flush_recvs() posts into the QP left in ERR: one doorbell each */
	EXPECT_EQ(EVENT_N + 1, c1.doorbells - c0.doorbells);
}

/* ------------------------------------------------------------------ */
/* libsrx refuses a ring format it cannot read                        */
/* ------------------------------------------------------------------ */

/* srx(7): "libsrx refuses a kernel whose ring format it cannot read
 * (EPROTONOSUPPORT)", and README's troubleshooting says the same. */
TEST(ring_format_mismatch_eprotonosupport)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_device *dev;
	int err;

	if (!srx_test_is_srx())
		SKIP(return, "srx's own ring format");
	/* The device must exist first: srx_test_open() creates it. */
	ctx = srx_test_open();
	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_close_device(ctx));

	list = ibv_get_device_list(NULL);
	dev = srx_test_find(list, srx_test_dev_name());
	ASSERT_NE(NULL, dev);
	fake_ring_format = SRX_RING_FORMAT + 1;
	errno = 0;
	ctx = ibv_open_device(dev);
	err = errno;
	fake_ring_format = 0;
	EXPECT_EQ(NULL, ctx) TH_LOG("a context on ring format %u",
				    SRX_RING_FORMAT + 1);
	if (ctx)
		ibv_close_device(ctx);
	else
		EXPECT_EQ(EPROTONOSUPPORT, err) TH_LOG("%s", strerror(err));

	/* The interception itself changes nothing when not asked to. */
	ctx = ibv_open_device(dev);
	EXPECT_NE(NULL, ctx) TH_LOG("%s", strerror(errno));
	if (ctx)
		EXPECT_EQ(0, ibv_close_device(ctx));
	ibv_free_device_list(list);
}

/* ------------------------------------------------------------------ */
/* "One polling thread pays no atomic operation"                      */
/* ------------------------------------------------------------------ */

/*
 * The child polls between two int3 instructions; the parent traces it and
 * single-steps from the first to the second, decoding each instruction
 * before it runs. On x86-64 an atomic read-modify-write is an instruction
 * with a LOCK prefix, or an XCHG with a memory operand (locked without
 * one): that is what the count counts. A full fence (MFENCE) is counted
 * apart.
 */
#define MARK() __asm__ volatile("int3" ::: "memory")
#define POLL_MAX_STEPS 200000	/* a poll is a few hundred instructions */

enum poll_mode {
	POLL_OWNER,		/* only this thread ever polls */
	POLL_REVOKED,		/* another thread polled once, before */
	POLL_NO_MEMBARRIER,	/* membarrier() refused before the open */
};

enum { POLLS = 3 };

/* What the child polled in each measured region, in order. */
struct poll_report {
	int want[POLLS];
	int got[POLLS];
};

struct trace_count {
	unsigned int locked, fences, steps;
};

static bool insn_is_atomic(const uint8_t *b)
{
	bool lock = false;
	int i;

	for (i = 0; i < 14; i++) {
		switch (b[i]) {
		case 0xf0:
			lock = true;
			continue;
		case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e:
		case 0x26: case 0x64: case 0x65: case 0x66: case 0x67:
			continue;
		}
		break;
	}
	if (lock)
		return true;
	if (b[i] >= 0x40 && b[i] <= 0x4f)	/* REX */
		i++;
	return (b[i] == 0x86 || b[i] == 0x87) && (b[i + 1] >> 6) != 3;
}

static bool insn_is_mfence(const uint8_t *b)
{
	return b[0] == 0x0f && b[1] == 0xae && b[2] == 0xf0;
}

/*
 * @pid is stopped just after a start marker: single-step it up to the
 * next int3 and count. Returns 0, or -1 if tracing went wrong.
 */
static int trace_region(pid_t pid, struct trace_count *tc)
{
	for (;;) {
		struct user_regs_struct regs;
		uint8_t insn[16];
		int k, st;

		if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
			return -1;
		for (k = 0; k < 2; k++) {
			long w;

			errno = 0;
			w = ptrace(PTRACE_PEEKTEXT, pid,
				   (void *)(regs.rip + 8 * k), NULL);
			if (errno)
				return -1;
			memcpy(insn + 8 * k, &w, 8);
		}
		if (insn[0] == 0xcc)
			return 0;
		if (insn_is_atomic(insn))
			tc->locked++;
		if (insn_is_mfence(insn))
			tc->fences++;
		if (++tc->steps > POLL_MAX_STEPS)
			return -1;
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) ||
		    waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st) ||
		    WSTOPSIG(st) != SIGTRAP)
			return -1;
	}
}

static __attribute__((noinline)) int measured_poll(struct ibv_cq *cq, int ne,
						   struct ibv_wc *wc)
{
	int n;

	MARK();
	n = ibv_poll_cq(cq, ne, wc);
	MARK();
	return n;
}

struct other_poller {
	struct ibv_cq *cq;
	int got;
};

static void *other_poll_main(void *arg)
{
	struct other_poller *o = arg;
	struct ibv_wc wc;

	o->got = ibv_poll_cq(o->cq, 1, &wc);
	return NULL;
}

#define CHILD_CHECK(cond, code) do { if (!(cond)) _exit(code); } while (0)

/* The traced child: a thread-safe CQ with completions, polled POLLS times. */
static void poll_child(enum poll_mode mode, int report_fd)
{
	static const int want[POLLS] = { 1, 4, 1 };
	struct poll_report r = {};
	struct ibv_context *ctx;
	struct srx_flusher f;
	struct ibv_wc wc[8];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int i;

	if (mode == POLL_NO_MEMBARRIER)
		CHILD_CHECK(!srx_refuse_membarrier(), 10);
	CHILD_CHECK(!ptrace(PTRACE_TRACEME, 0, NULL, NULL), 11);
	ctx = srx_test_open();
	CHILD_CHECK(ctx, 12);
	pd = ibv_alloc_pd(ctx);
	CHILD_CHECK(pd, 13);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	CHILD_CHECK(cq, 14);
	CHILD_CHECK(!srx_flusher_create(&f, pd, cq, cq, 16), 15);
	/* 3 unmeasured, then 1 and 4 measured: 8; the last poll is empty. */
	CHILD_CHECK(!srx_flush_recvs(&f, 0, 8), 16);

	if (mode != POLL_NO_MEMBARRIER) {
		/* The first poll makes this thread the owner. */
		CHILD_CHECK(ibv_poll_cq(cq, 1, wc) == 1, 17);
	}
	if (mode == POLL_REVOKED) {
		struct other_poller o = { .cq = cq };
		pthread_t t;

		CHILD_CHECK(!pthread_create(&t, NULL, other_poll_main, &o), 18);
		CHILD_CHECK(!pthread_join(t, NULL) && o.got == 1, 19);
		/*
		 * This thread's first poll on the shared path also enlists
		 * it for resizes (cq.c, "Retired rings": a mutex, once per
		 * thread); the claim is about every poll after that.
		 */
		CHILD_CHECK(ibv_poll_cq(cq, 1, wc) == 1, 20);
	} else if (mode == POLL_OWNER) {
		CHILD_CHECK(ibv_poll_cq(cq, 1, wc) == 1, 20);
		CHILD_CHECK(ibv_poll_cq(cq, 1, wc) == 1, 21);
	} else {
		CHILD_CHECK(ibv_poll_cq(cq, 1, wc) == 1, 20);
		CHILD_CHECK(ibv_poll_cq(cq, 1, wc) == 1, 21);
		CHILD_CHECK(ibv_poll_cq(cq, 1, wc) == 1, 27);
	}

	for (i = 0; i < POLLS; i++) {
		r.want[i] = want[i];
		r.got[i] = measured_poll(cq, want[i], wc);
	}
	CHILD_CHECK(write(report_fd, &r, sizeof(r)) == sizeof(r), 22);
	CHILD_CHECK(!srx_flusher_destroy(&f), 23);
	CHILD_CHECK(!ibv_destroy_cq(cq), 24);
	CHILD_CHECK(!ibv_dealloc_pd(pd), 25);
	CHILD_CHECK(!ibv_close_device(ctx), 26);
	_exit(0);
}

/*
 * Run poll_child(@mode) under the tracer; fill @tc for each of its
 * measured polls and @r with what they returned. Returns 0 or a message.
 */
static const char *trace_polls(enum poll_mode mode, struct trace_count *tc,
			       struct poll_report *r)
{
	const char *fail = NULL;
	int fds[2], st, region = 0;
	bool in_end_marker = false;
	pid_t pid;

	if (pipe(fds))
		return "pipe";
	pid = fork();
	if (pid < 0)
		return "fork";
	if (!pid) {
		close(fds[0]);
		poll_child(mode, fds[1]);
	}
	close(fds[1]);

	while (waitpid(pid, &st, 0) == pid) {
		int sig = 0;

		if (WIFEXITED(st) || WIFSIGNALED(st))
			break;
		if (WSTOPSIG(st) != SIGTRAP) {
			sig = WSTOPSIG(st);	/* not ours: deliver it */
		} else if (in_end_marker) {
			in_end_marker = false;
		} else if (region >= POLLS) {
			fail = "more marks than polls";
		} else if (trace_region(pid, &tc[region])) {
			fail = "single-stepping the poll failed";
		} else {
			region++;
			in_end_marker = true;
		}
		if (fail) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig);
	}
	if (!fail && !(WIFEXITED(st) && !WEXITSTATUS(st)))
		fail = WIFEXITED(st) ? "the child failed (see its exit code)" :
				       "the child was killed";
	if (!fail && region != POLLS)
		fail = "not every poll was traced";
	if (!fail && read(fds[0], r, sizeof(*r)) != sizeof(*r))
		fail = "no report from the child";
	if (fail && WIFEXITED(st))
		fprintf(stderr, "# child exit status %d\n", WEXITSTATUS(st));
	close(fds[0]);
	return fail;
}

static void log_polls(struct __test_metadata *_metadata,
		      const struct trace_count *tc,
		      const struct poll_report *r)
{
	int i;

	for (i = 0; i < POLLS; i++)
		TH_LOG("poll(ne=%d) took %d: %u instructions, %u atomic, %u mfence",
		       r->want[i], r->got[i], tc[i].steps, tc[i].locked,
		       tc[i].fences);
}

/*
 * README: "a CQ polled by one thread costs no atomic operation at all".
 * Polls that take one completion, four, and none.
 */
TEST(one_poller_no_atomic)
{
	struct trace_count tc[POLLS] = {};
	struct poll_report r;
	const char *fail;
	int i;

	if (!srx_test_is_srx())
		SKIP(return, "srx's own fast path");
	fail = trace_polls(POLL_OWNER, tc, &r);
	ASSERT_EQ(NULL, fail) TH_LOG("%s", fail);
	log_polls(_metadata, tc, &r);
	EXPECT_EQ(1, r.got[0]);
	EXPECT_EQ(4, r.got[1]);
	EXPECT_EQ(0, r.got[2]);
	for (i = 0; i < POLLS; i++) {
		EXPECT_LT(0u, tc[i].steps);
		EXPECT_EQ(0u, tc[i].locked) TH_LOG("poll %d", i);
	}
}

/*
 * srx(7): once a second thread consumed, "every poll takes its
 * completions with one compare-and-swap". Also what shows that the count
 * above sees an atomic when there is one.
 */
TEST(second_poller_one_cas_per_poll)
{
	struct trace_count tc[POLLS] = {};
	struct poll_report r;
	const char *fail;
	int i;

	if (!srx_test_is_srx())
		SKIP(return, "srx's own fast path");
	fail = trace_polls(POLL_REVOKED, tc, &r);
	ASSERT_EQ(NULL, fail) TH_LOG("%s", fail);
	log_polls(_metadata, tc, &r);
	EXPECT_EQ(1, r.got[0]);
	EXPECT_EQ(4, r.got[1]);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(1u, tc[i].locked) TH_LOG("poll %d", i);
}

/*
 * srx(7): "Where membarrier(2) is refused (a seccomp filter), every poll
 * does" (a compare-and-swap), from the first thread on, and also pays a
 * full fence, which x86-64 compilers emit as a locked instruction: the
 * fence that announces the ring it reads to a resizer (cq.c, "Retired
 * rings"). So two locked instructions where completions are taken, and
 * the fence alone for an empty poll.
 */
TEST(no_membarrier_every_poll_cas)
{
	struct trace_count tc[POLLS] = {};
	struct poll_report r;
	const char *fail;
	int i;

	if (!srx_test_is_srx())
		SKIP(return, "srx's own fast path");
	fail = trace_polls(POLL_NO_MEMBARRIER, tc, &r);
	ASSERT_EQ(NULL, fail) TH_LOG("%s", fail);
	log_polls(_metadata, tc, &r);
	EXPECT_EQ(1, r.got[0]);
	EXPECT_EQ(4, r.got[1]);
	EXPECT_EQ(0, r.got[2]);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(2u, tc[i].locked + tc[i].fences) TH_LOG("poll %d", i);
	EXPECT_EQ(1u, tc[2].locked + tc[2].fences);
}

/* ------------------------------------------------------------------ */
/* Mappings outlive the device                                        */
/* ------------------------------------------------------------------ */

#define RM_DEV	"srxclm"
#define RM_NETA	"clmA"
#define RM_NETB	"clmB"

struct range {
	uintptr_t start, end;
};

/* The process's mappings of a uverbs device file, up to @max. */
static int uverbs_ranges(struct range *r, int max)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		unsigned long s, e;

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx", &s, &e) != 2)
			continue;
		r[n].start = s;
		r[n].end = e;
		n++;
	}
	fclose(f);
	return n;
}

/* Read every page of @r; a mapping that is not readable kills us. */
static unsigned long read_ranges(const struct range *r, int n)
{
	unsigned long sum = 0, page = sysconf(_SC_PAGESIZE);
	int i;

	for (i = 0; i < n; i++) {
		uintptr_t a;

		for (a = r[i].start; a < r[i].end; a += page)
			sum += *(volatile const uint8_t *)a;
	}
	return sum;
}

FIXTURE(removal) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_SETUP(removal)
{
	if (!srx_test_is_srx())
		SKIP(return, "srx devices made on a veth pair");
	sh("ip link del " RM_NETA " 2>/dev/null");
	ASSERT_EQ(0, sh("ip link add " RM_NETA " type veth peer name " RM_NETB
			" && ip link set " RM_NETA " up && ip link set " RM_NETB
			" up"));
	ASSERT_EQ(0, sh("rdma link add " RM_DEV " type srx netdev " RM_NETA));
	self->ctx = open_by_name(RM_DEV);
	ASSERT_NE(NULL, self->ctx) TH_LOG("open: %s", strerror(errno));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	ASSERT_EQ(0, srx_flusher_create(&self->f, self->pd, self->cq,
					self->cq, 16));
	/* Something in the CQ ring to read back. */
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 0, 4));
}

FIXTURE_TEARDOWN(removal)
{
	/* The device is gone: destroying its objects still returns. */
	if (self->f.qp)
		srx_flusher_destroy(&self->f);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		EXPECT_EQ(0, ibv_close_device(self->ctx));
	sh("rdma link delete " RM_DEV " 2>/dev/null");
	sh("ip link del " RM_NETA " 2>/dev/null");
}

static void removal_check(struct __test_metadata *_metadata,
			  FIXTURE_DATA(removal) *self, const char *remove)
{
	struct range before[16], after[16];
	int nb, na, i;
	unsigned long sum;

	nb = uverbs_ranges(before, 16);
	/* The CQ ring and the QP's send and receive rings, at least. */
	ASSERT_LE(2, nb);
	sum = read_ranges(before, nb);

	ASSERT_EQ(0, sh(remove));
	ASSERT_TRUE(dev_gone_within(RM_DEV, 10000));

	/* The mappings are still there, at the same places... */
	na = uverbs_ranges(after, 16);
	ASSERT_EQ(nb, na);
	for (i = 0; i < nb; i++) {
		EXPECT_EQ(before[i].start, after[i].start);
		EXPECT_EQ(before[i].end, after[i].end);
	}
	/* ...and readable, every page (a fault would kill this test). */
	TH_LOG("%d mappings, byte sums %lu before and %lu after", nb, sum,
	       read_ranges(after, na));
}

/* srx(7): "rdma link delete ... the memory they mapped stays readable". */
TEST_F(removal, mapping_readable_after_link_delete)
{
	removal_check(_metadata, self, "rdma link delete " RM_DEV);
}

/* srx(7): "Deleting the interface ... as well", mappings included. */
TEST_F(removal, mapping_readable_after_netdev_delete)
{
	removal_check(_metadata, self, "ip link del " RM_NETA);
}

TEST_HARNESS_MAIN
