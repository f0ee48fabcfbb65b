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
	self->sq_entries = attr.cap.max_send_wr;
	self->rq_entries = attr.cap.max_recv_wr;
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

TEST_HARNESS_MAIN
