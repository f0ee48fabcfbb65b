// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rules of srx-abi.h for growing the ABI, checked against srx.ko with
 * raw write() commands on the uverbs device: a provider newer than the
 * kernel that asks for something the kernel lacks (a non-zero reserved
 * word, an unknown flag, non-zero bytes after the payload the kernel
 * knows, a payload for a command that has none) gets EOPNOTSUPP, never a
 * silent "no"; zeros where the kernel expects nothing are accepted; a
 * response buffer shorter than the first version of the response is
 * EINVAL. libibverbs would never send these, hence write() by hand (the
 * legacy command format: header, core structure, driver payload).
 */
#include <dirent.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

/* /dev/infiniband/uverbsN of the device under test, or -1. */
static int open_uverbs(void)
{
	const char *name = srx_test_dev_name();
	struct dirent *d;
	int fd = -1;
	DIR *dir;

	dir = opendir("/sys/class/infiniband_verbs");
	if (!dir)
		return -1;
	while (fd < 0 && (d = readdir(dir))) {
		char path[300], ibdev[64] = "";
		FILE *f;

		if (strncmp(d->d_name, "uverbs", 6))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband_verbs/%s/ibdev", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(ibdev, sizeof(ibdev), f))
			ibdev[strcspn(ibdev, "\n")] = 0;
		fclose(f);
		if (strcmp(ibdev, name))
			continue;
		snprintf(path, sizeof(path), "/dev/infiniband/%s", d->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
	}
	closedir(dir);
	return fd;
}

/*
 * One legacy write() command: @core starts with the response pointer,
 * which this fills in; @drv follows it. Return: 0 or the errno.
 */
static int cmd(int fd, uint32_t command, void *core, size_t core_len,
	       const void *drv, size_t drv_len, void *resp, size_t resp_len)
{
	struct ib_uverbs_cmd_hdr hdr = {
		.command = command,
		.in_words = (sizeof(hdr) + core_len + drv_len) / 4,
		.out_words = resp_len / 4,
	};
	char buf[512];
	size_t len = sizeof(hdr) + core_len + drv_len;
	uint64_t response = (uintptr_t)resp;

	if (len > sizeof(buf) || len % 4 || resp_len % 4)
		return E2BIG;
	memcpy(core, &response, sizeof(response));
	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), core, core_len);
	if (drv_len)
		memcpy(buf + sizeof(hdr) + core_len, drv, drv_len);
	memset(resp, 0, resp_len);
	return write(fd, buf, len) == (ssize_t)len ? 0 : errno;
}

struct get_context_resp {
	struct ib_uverbs_get_context_resp core;
	struct srx_alloc_ucontext_resp drv;
};

static int get_context(int fd, const void *drv, size_t drv_len,
		       size_t resp_len, struct get_context_resp *resp)
{
	struct ib_uverbs_get_context c = {};

	return cmd(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &c, sizeof(c), drv,
		   drv_len, resp, resp_len);
}

FIXTURE(abi) {
	int fd;			/* with a context */
	uint32_t pd;
	uint32_t cq;
	char buf[4096];
};

static int alloc_pd(int fd, const void *drv, size_t drv_len, uint32_t *pd)
{
	struct ib_uverbs_alloc_pd c = {};
	struct ib_uverbs_alloc_pd_resp r;
	int ret = cmd(fd, IB_USER_VERBS_CMD_ALLOC_PD, &c, sizeof(c), drv,
		      drv_len, &r, sizeof(r));

	*pd = r.pd_handle;
	return ret;
}

struct create_cq_resp {
	struct ib_uverbs_create_cq_resp core;
	struct srx_create_cq_resp drv;
};

static int create_cq(int fd, const void *drv, size_t drv_len, uint32_t *cq)
{
	struct ib_uverbs_create_cq c = { .cqe = 16, .comp_channel = -1 };
	struct create_cq_resp r;
	int ret = cmd(fd, IB_USER_VERBS_CMD_CREATE_CQ, &c, sizeof(c), drv,
		      drv_len, &r, sizeof(r));

	*cq = r.core.cq_handle;
	return ret;
}

FIXTURE_SETUP(abi)
{
	uint64_t zero = 0;
	struct get_context_resp r;

	if (!srx_test_is_srx())
		SKIP(return, "the rules of srx-abi.h are srx's");
	self->fd = open_uverbs();
	ASSERT_LE(0, self->fd) TH_LOG("no uverbs device for %s",
				      srx_test_dev_name());
	ASSERT_EQ(0, get_context(self->fd, &zero, 0, sizeof(r), &r));
	ASSERT_EQ(0, alloc_pd(self->fd, NULL, 0, &self->pd));
	ASSERT_EQ(0, create_cq(self->fd, NULL, 0, &self->cq));
}

FIXTURE_TEARDOWN(abi)
{
	if (self->fd >= 0)
		close(self->fd);
}

/* GET_CONTEXT has no payload: non-zero bytes are EOPNOTSUPP, zeros fine. */
TEST_F(abi, get_context_unknown_input_eopnotsupp)
{
	uint64_t junk[2] = { 0, 1 }, zero[2] = { 0, 0 };
	struct get_context_resp r;
	int fd, ret;

	fd = open_uverbs();
	ASSERT_LE(0, fd);
	ret = get_context(fd, junk, sizeof(junk), sizeof(r), &r);
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("non-zero payload: %s",
					  strerror(ret));
	close(fd);

	fd = open_uverbs();
	ASSERT_LE(0, fd);
	ret = get_context(fd, zero, sizeof(zero), sizeof(r), &r);
	EXPECT_EQ(0, ret) TH_LOG("zero payload: %s", strerror(ret));
	EXPECT_EQ((uint32_t)SRX_RING_FORMAT, r.drv.ring_format);
	EXPECT_EQ(0u, r.drv.comp_mask);
	close(fd);
}

/* A response buffer shorter than version 2's response is EINVAL. */
TEST_F(abi, get_context_short_response_einval)
{
	struct get_context_resp r;
	int fd, ret;

	fd = open_uverbs();
	ASSERT_LE(0, fd);
	ret = get_context(fd, NULL, 0, sizeof(r.core) + 8, &r);
	EXPECT_EQ(EINVAL, ret) TH_LOG("%s", strerror(ret));
	close(fd);
}

TEST_F(abi, alloc_pd_unknown_input_eopnotsupp)
{
	uint64_t junk = 1, zero = 0;
	uint32_t pd;
	int ret;

	ret = alloc_pd(self->fd, &junk, sizeof(junk), &pd);
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("%s", strerror(ret));
	ret = alloc_pd(self->fd, &zero, sizeof(zero), &pd);
	EXPECT_EQ(0, ret) TH_LOG("zeros: %s", strerror(ret));
}

TEST_F(abi, reg_mr_unknown_input_eopnotsupp)
{
	struct ib_uverbs_reg_mr c = {
		.start = (uintptr_t)self->buf, .length = sizeof(self->buf),
		.hca_va = (uintptr_t)self->buf, .pd_handle = self->pd,
		.access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	struct ib_uverbs_reg_mr_resp r;
	uint64_t junk = 1 << 20, zero = 0;
	int ret;

	ret = cmd(self->fd, IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), &junk,
		  sizeof(junk), &r, sizeof(r));
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("%s", strerror(ret));
	ret = cmd(self->fd, IB_USER_VERBS_CMD_REG_MR, &c, sizeof(c), &zero,
		  sizeof(zero), &r, sizeof(r));
	EXPECT_EQ(0, ret) TH_LOG("zeros: %s", strerror(ret));
}

/* Unknown flags, a reserved word, or bytes after the payload. */
TEST_F(abi, create_cq_unknown_input_eopnotsupp)
{
	struct srx_create_cq_cmd flags = { .flags = 1 };
	struct srx_create_cq_cmd reserved = { .reserved = 1 };
	struct {
		struct srx_create_cq_cmd cmd;
		uint64_t more;
	} longer = { .more = 1 }, longer_zero = {};
	uint32_t cq;
	int ret;

	ret = create_cq(self->fd, &flags, sizeof(flags), &cq);
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("flags: %s", strerror(ret));
	ret = create_cq(self->fd, &reserved, sizeof(reserved), &cq);
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("reserved: %s", strerror(ret));
	ret = create_cq(self->fd, &longer, sizeof(longer), &cq);
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("longer: %s", strerror(ret));
	ret = create_cq(self->fd, &longer_zero, sizeof(longer_zero), &cq);
	EXPECT_EQ(0, ret) TH_LOG("longer, zeros: %s", strerror(ret));
}

TEST_F(abi, resize_cq_reserved_eopnotsupp)
{
	struct ib_uverbs_resize_cq c = { .cq_handle = self->cq, .cqe = 32 };
	struct srx_resize_cq_cmd d = { .op = SRX_RESIZE_PREPARE, .reserved = 1 };
	struct {
		struct ib_uverbs_resize_cq_resp core;
		struct srx_resize_cq_resp drv;
	} r;
	int ret;

	ret = cmd(self->fd, IB_USER_VERBS_CMD_RESIZE_CQ, &c, sizeof(c), &d,
		  sizeof(d), &r, sizeof(r));
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("%s", strerror(ret));
}

struct create_qp_resp {
	struct ib_uverbs_create_qp_resp core;
	struct srx_create_qp_resp drv;
};

/* CREATE_QP has no payload; its layouts have room (comp_mask 0 today). */
TEST_F(abi, create_qp_unknown_input_eopnotsupp)
{
	struct ib_uverbs_create_qp c = {
		.pd_handle = self->pd, .send_cq_handle = self->cq,
		.recv_cq_handle = self->cq, .max_send_wr = 4,
		.max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1,
		.qp_type = IBV_QPT_RC,
	};
	uint64_t junk[2] = { 0, 1 }, zero[2] = { 0, 0 };
	struct create_qp_resp r;
	int ret;

	ret = cmd(self->fd, IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), junk,
		  sizeof(junk), &r, sizeof(r));
	EXPECT_EQ(EOPNOTSUPP, ret) TH_LOG("%s", strerror(ret));
	ret = cmd(self->fd, IB_USER_VERBS_CMD_CREATE_QP, &c, sizeof(c), zero,
		  sizeof(zero), &r, sizeof(r));
	EXPECT_EQ(0, ret) TH_LOG("zeros: %s", strerror(ret));
	EXPECT_EQ(0u, r.drv.sq.comp_mask);
	EXPECT_EQ(0u, r.drv.rq.comp_mask);
	EXPECT_NE(0u, r.drv.rq.entries);
}

TEST_HARNESS_MAIN
