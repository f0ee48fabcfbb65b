// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The limits README.md and srx(7) state, each asserted twice: the value
 * ibv_query_device() reports, and what happens at the limit and one past
 * it. A regression in any of them fails here; on another device (make
 * compare) these tests skip, since the numbers are srx's.
 *
 *  - max_cqe 4,194,304: a CQ of that size is created and reports at least
 *    that many entries; one more is EINVAL. (cq_test's cq_size.cqe_max
 *    fills such a CQ completely.)
 *  - a QP of 32,768 work requests each way, 32 scatter/gather entries each
 *    way and 512 bytes of inline data is created and reports at least
 *    that; one more of any of them is EINVAL.
 *  - max_qp, max_pd and max_mr: creating the object past the limit fails
 *    with ENOMEM, and a destroy gives the slot back. The fixed limits are
 *    millions of objects, more than the VM's memory and time allow, so the
 *    test lowers each through its module parameter (srx(7)) to a few past
 *    what exists; it also asserts the parameters' default (0, the fixed
 *    limit) and that the fixed limit is what the device reports then.
 *  - RLIMIT_MEMLOCK: an ibv_rereg_mr() that keeps the memory (new rights,
 *    a new PD) does not pin it again, so it is not counted twice against
 *    the limit (kernel/mr.c, srx_mr_build_same()).
 */
#include <linux/capability.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "srx_test.h"

/* README.md's support table and srx(7) LIMITS. */
#define SRX_DOC_MAX_CQE 4194304
#define SRX_DOC_MAX_QP_WR 32768
#define SRX_DOC_MAX_SGE 32
#define SRX_DOC_MAX_INLINE 512
/* kernel/device.h: SRX_MAX_QP, SRX_MAX_PD, SRX_MAX_MR (srx(7)). */
#define SRX_FIXED_MAX_QP ((1 << 24) - 17)
#define SRX_FIXED_MAX_PD (1 << 20)
#define SRX_FIXED_MAX_MR ((1 << 24) - 1)

#define LIMIT_ROOM 4		/* objects created under a lowered limit */

static void __attribute__((constructor)) limits_test_preload(void)
{
	srx_test_preload();
}

FIXTURE(limits) {
	struct ibv_context *ctx;
	struct ibv_device_attr dattr;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	char *buf;
	char saved[32];
	const char *param;	/* a parameter to restore in teardown */
};

FIXTURE_SETUP(limits)
{
	if (!srx_test_is_srx())
		SKIP(return, "srx's limits (device %s)", srx_test_dev_name());
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx) TH_LOG("open: %s", strerror(errno));
	ASSERT_EQ(0, ibv_query_device(self->ctx, &self->dattr));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	self->buf = calloc(1, 4096);
	ASSERT_NE(NULL, self->buf);
}

FIXTURE_TEARDOWN(limits)
{
	if (self->param)
		srx_set_param(self->param, self->saved);
	free(self->buf);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F_TIMEOUT(limits, max_cqe, 120)
{
	struct ibv_cq *cq;

	EXPECT_EQ(SRX_DOC_MAX_CQE, self->dattr.max_cqe);

	cq = ibv_create_cq(self->ctx, SRX_DOC_MAX_CQE, NULL, NULL, 0);
	ASSERT_NE(NULL, cq) TH_LOG("cqe %d: %s", SRX_DOC_MAX_CQE,
				   strerror(errno));
	EXPECT_LE(SRX_DOC_MAX_CQE, cq->cqe);
	EXPECT_EQ(0, ibv_destroy_cq(cq));

	errno = 0;
	cq = ibv_create_cq(self->ctx, SRX_DOC_MAX_CQE + 1, NULL, NULL, 0);
	EXPECT_EQ(NULL, cq);
	EXPECT_EQ(EINVAL, errno);
	if (cq)
		ibv_destroy_cq(cq);
}

static struct ibv_qp *create_qp(FIXTURE_DATA(limits) *self,
				const struct ibv_qp_cap *cap,
				struct ibv_qp_cap *got)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = self->cq, .recv_cq = self->cq,
		.qp_type = IBV_QPT_RC, .cap = *cap,
	};
	struct ibv_qp *qp = ibv_create_qp(self->pd, &attr);

	if (got)
		*got = attr.cap;
	return qp;
}

/*
 * The QP limits together: the largest QP srx(7) promises (about 40 MiB of
 * rings), then each limit one past.
 */
TEST_F_TIMEOUT(limits, qp_caps, 120)
{
	const struct ibv_qp_cap max = {
		.max_send_wr = SRX_DOC_MAX_QP_WR,
		.max_recv_wr = SRX_DOC_MAX_QP_WR,
		.max_send_sge = SRX_DOC_MAX_SGE,
		.max_recv_sge = SRX_DOC_MAX_SGE,
		.max_inline_data = SRX_DOC_MAX_INLINE,
	};
	const struct ibv_qp_cap small = {
		.max_send_wr = 1, .max_recv_wr = 1,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct ibv_qp_cap got, over[5];
	struct ibv_qp *qp;
	unsigned int i;

	EXPECT_EQ(SRX_DOC_MAX_QP_WR, self->dattr.max_qp_wr);
	EXPECT_EQ(SRX_DOC_MAX_SGE, self->dattr.max_sge);

	qp = create_qp(self, &max, &got);
	ASSERT_NE(NULL, qp) TH_LOG("the largest QP: %s", strerror(errno));
	EXPECT_LE(max.max_send_wr, got.max_send_wr);
	EXPECT_LE(max.max_recv_wr, got.max_recv_wr);
	EXPECT_LE(max.max_send_sge, got.max_send_sge);
	EXPECT_LE(max.max_recv_sge, got.max_recv_sge);
	EXPECT_LE(max.max_inline_data, got.max_inline_data);
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	for (i = 0; i < 5; i++)
		over[i] = small;
	over[0].max_send_wr = SRX_DOC_MAX_QP_WR + 1;
	over[1].max_recv_wr = SRX_DOC_MAX_QP_WR + 1;
	over[2].max_send_sge = SRX_DOC_MAX_SGE + 1;
	over[3].max_recv_sge = SRX_DOC_MAX_SGE + 1;
	over[4].max_inline_data = SRX_DOC_MAX_INLINE + 1;
	for (i = 0; i < 5; i++) {
		errno = 0;
		qp = create_qp(self, &over[i], NULL);
		EXPECT_EQ(NULL, qp) TH_LOG("case %u accepted", i);
		EXPECT_EQ(EINVAL, errno) TH_LOG("case %u: %s", i,
						strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}
}

/* Object kinds whose count a module parameter lowers. */
enum kind { KIND_QP, KIND_PD, KIND_MR };

/*
 * rdma resource show counts every QP and PD of the device, the RDMA core's
 * own included, but not the DMA MR ib_alloc_pd() makes for a kernel PD
 * when the device has no local DMA lkey (core/verbs.c, __ib_alloc_pd():
 * pd->__internal_mr is not a tracked resource); srx counts that MR under
 * max_mr all the same, one per kernel PD (the MAD layer's, in the VM). So
 * the MR count from rdma is a lower bound, by one or two.
 */
static const struct {
	const char *param;	/* /sys/module/srx/parameters/ */
	const char *res;	/* rdma resource show */
	int fixed;
	bool exact;		/* rdma's count is the one srx limits */
} kinds[] = {
	[KIND_QP] = { "max_qp", "qp", SRX_FIXED_MAX_QP, true },
	[KIND_PD] = { "max_pd", "pd", SRX_FIXED_MAX_PD, true },
	[KIND_MR] = { "max_mr", "mr", SRX_FIXED_MAX_MR, false },
};

static int reported(const struct ibv_device_attr *a, enum kind k)
{
	return k == KIND_QP ? a->max_qp : k == KIND_PD ? a->max_pd : a->max_mr;
}

static void *create_obj(FIXTURE_DATA(limits) *self, enum kind k)
{
	static const struct ibv_qp_cap cap = {
		.max_send_wr = 1, .max_recv_wr = 1,
		.max_send_sge = 1, .max_recv_sge = 1,
	};

	switch (k) {
	case KIND_QP:
		return create_qp(self, &cap, NULL);
	case KIND_PD:
		return ibv_alloc_pd(self->ctx);
	default:
		return ibv_reg_mr(self->pd, self->buf, 4096,
				  IBV_ACCESS_LOCAL_WRITE);
	}
}

static int destroy_obj(enum kind k, void *obj)
{
	switch (k) {
	case KIND_QP:
		return ibv_destroy_qp(obj);
	case KIND_PD:
		return ibv_dealloc_pd(obj);
	default:
		return ibv_dereg_mr(obj);
	}
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
 * Past the limit: ENOMEM, and the device's count stays at the limit; a
 * destroy gives a slot back. The limit counts every object of the device,
 * the RDMA core's own included: creates succeed until exactly the limit
 * (for MRs, up to it: see kinds[]).
 */
static void over_limit(struct __test_metadata *_metadata,
		       FIXTURE_DATA(limits) *self, enum kind k)
{
	const char *dev = srx_test_dev_name();
	void *objs[LIMIT_ROOM + 1] = { 0 };
	struct ibv_device_attr_ex attr;
	long existing, limit;
	int i, created;
	char buf[32];

	ASSERT_EQ(0, read_param(kinds[k].param, self->saved,
				sizeof(self->saved)))
		TH_LOG("no %s parameter", kinds[k].param);
	/* The default is the fixed limit, and that is what is reported. */
	EXPECT_STREQ("0", self->saved);
	EXPECT_EQ(kinds[k].fixed, reported(&self->dattr, k));

	existing = srx_res_count(dev, kinds[k].res);
	ASSERT_LE(0, existing) TH_LOG("rdma resource show: no %s count",
				      kinds[k].res);
	limit = existing + LIMIT_ROOM;
	snprintf(buf, sizeof(buf), "%ld", limit);
	self->param = kinds[k].param;
	ASSERT_EQ(0, srx_set_param(kinds[k].param, buf));
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &attr));
	EXPECT_EQ(limit, reported(&attr.orig_attr, k));

	/* Create until refused: at most one past the room there is. */
	for (i = 0; i <= LIMIT_ROOM; i++) {
		errno = 0;
		objs[i] = create_obj(self, k);
		if (!objs[i])
			break;
	}
	created = i;
	TH_LOG("%s: %ld existing, limit %ld: %d created, then %s",
	       kinds[k].res, existing, limit, created, strerror(errno));
	ASSERT_GE(LIMIT_ROOM, created) TH_LOG("%s past the limit created",
					      kinds[k].res);
	EXPECT_EQ(ENOMEM, errno) TH_LOG("%s past the limit: %s", kinds[k].res,
					strerror(errno));
	ASSERT_LT(0, created) TH_LOG("no %s created under the limit",
				     kinds[k].res);
	if (kinds[k].exact) {
		EXPECT_EQ(LIMIT_ROOM, created);
		EXPECT_EQ(limit, srx_res_count(dev, kinds[k].res));
	} else {
		EXPECT_LE(LIMIT_ROOM - 2, created);
	}

	/* A destroy gives the slot back, once. */
	EXPECT_EQ(0, destroy_obj(k, objs[0]));
	objs[0] = create_obj(self, k);
	EXPECT_NE(NULL, objs[0]) TH_LOG("after a destroy: %s",
					strerror(errno));
	errno = 0;
	objs[created] = create_obj(self, k);
	EXPECT_EQ(NULL, objs[created]);
	EXPECT_EQ(ENOMEM, errno);

	for (i = 0; i <= LIMIT_ROOM; i++)
		if (objs[i])
			EXPECT_EQ(0, destroy_obj(k, objs[i]));
	EXPECT_EQ(existing, srx_res_count(dev, kinds[k].res));

	ASSERT_EQ(0, srx_set_param(kinds[k].param, self->saved));
	self->param = NULL;
	ASSERT_EQ(0, ibv_query_device_ex(self->ctx, NULL, &attr));
	EXPECT_EQ(kinds[k].fixed, reported(&attr.orig_attr, k));
}

TEST_F(limits, max_qp_enomem)
{
	over_limit(_metadata, self, KIND_QP);
}

TEST_F(limits, max_pd_enomem)
{
	over_limit(_metadata, self, KIND_PD);
}

TEST_F(limits, max_mr_enomem)
{
	over_limit(_metadata, self, KIND_MR);
}

/* The pages this process has pinned (mm->pinned_vm), from VmPin. */
static long pinned_pages(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024 / sysconf(_SC_PAGESIZE);
}

/*
 * ib_umem_get() lets a process with CAP_IPC_LOCK pin past its limit; the
 * harness runs each test in a child of its own, so only this test loses it.
 */
static int drop_cap_ipc_lock(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -1;
	data[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
	return syscall(SYS_capset, &hdr, data);
}

#define MEMLOCK_PAGES 64

TEST_F(limits, memlock_counts_a_rereg_once)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	size_t page = sysconf(_SC_PAGESIZE), len = MEMLOCK_PAGES * page;
	struct ibv_mr *mr, *second;
	struct ibv_pd *pd2;
	struct rlimit lim;
	void *a, *b;
	long base;

	ASSERT_EQ(0, drop_cap_ipc_lock()) TH_LOG("capset: %s", strerror(errno));
	base = pinned_pages();
	ASSERT_LE(0, base);
	a = aligned_alloc(page, len);
	b = aligned_alloc(page, len);
	ASSERT_TRUE(a && b);
	pd2 = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd2);
	/*
	 * Room for the MR once and a half: a second pin of it cannot fit.
	 * ib_umem_get() reads the soft limit only.
	 */
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &lim));
	if (lim.rlim_max != RLIM_INFINITY &&
	    lim.rlim_max < (base + MEMLOCK_PAGES * 3 / 2) * page)
		SKIP(goto out, "RLIMIT_MEMLOCK's hard limit is below %ld pages",
		     base + MEMLOCK_PAGES * 3 / 2);
	lim.rlim_cur = (base + MEMLOCK_PAGES * 3 / 2) * page;
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &lim));

	mr = ibv_reg_mr(self->pd, a, len, rw);
	ASSERT_NE(NULL, mr) TH_LOG("reg_mr under the limit: %s",
				   strerror(errno));
	EXPECT_EQ(base + MEMLOCK_PAGES, pinned_pages());
	/* The limit holds: another MR of the same size does not fit. */
	errno = 0;
	second = ibv_reg_mr(self->pd, b, len, rw);
	EXPECT_EQ(NULL, second);
	EXPECT_EQ(ENOMEM, errno);
	if (second)
		ibv_dereg_mr(second);

	EXPECT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
				  0, rw | IBV_ACCESS_REMOTE_READ))
		TH_LOG("rereg, new rights: %s", strerror(errno));
	EXPECT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0))
		TH_LOG("rereg, new PD: %s", strerror(errno));
	EXPECT_EQ(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD |
				  IBV_REREG_MR_CHANGE_ACCESS, self->pd, NULL,
				  0, rw))
		TH_LOG("rereg, both: %s", strerror(errno));
	EXPECT_EQ(base + MEMLOCK_PAGES, pinned_pages());

	ASSERT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(base, pinned_pages());
out:
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
	free(a);
	free(b);
}

TEST_HARNESS_MAIN
