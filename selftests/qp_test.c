// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * QP, PD and MR verbs: creation and capabilities, the IB QP state machine
 * with RoCE addressing, flushing of work requests, posting limits, and
 * memory registration rules.
 *
 * A connected QP is aimed at its own device: the destination GID is GID 0
 * of port 1 (ibv_query_gid), the destination QP number that of a peer QP
 * that stays in RESET, so nothing posted is ever answered (on rxe the
 * packets go out and are dropped) and moving to ERR flushes everything.
 *
 * Not every device agrees on what ibv_poll_cq(3) leaves undefined: the
 * opcode of an unsuccessful completion. srx reports it (IBV_WC_SEND etc.
 * for sends, IBV_WC_RECV for receives) and the tests check it there; on
 * other devices a different opcode is only logged.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "srx_test.h"

#define QP_WAIT_MS 2000		/* rxe flushes asynchronously */

static void __attribute__((constructor)) qp_test_preload(void)
{
	srx_test_preload();
}

FIXTURE(qp) {
	struct ibv_context *ctx;
	struct ibv_device_attr dattr;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	union ibv_gid gid;
	struct ibv_qp *peer;	/* the destination, left in RESET */
	struct ibv_ah *ah;	/* UD: an address handle to the device's GID 0 */
	struct ibv_mr *mr;
	char *buf;
};

FIXTURE_VARIANT(qp) {
	enum ibv_qp_type type;
};

FIXTURE_VARIANT_ADD(qp, rc) { .type = IBV_QPT_RC };
FIXTURE_VARIANT_ADD(qp, uc) { .type = IBV_QPT_UC };
FIXTURE_VARIANT_ADD(qp, ud) { .type = IBV_QPT_UD };

static struct ibv_qp *qp_create_caps(FIXTURE_DATA(qp) *self,
				     enum ibv_qp_type type,
				     struct ibv_qp_cap *cap)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = self->scq,
		.recv_cq = self->rcq,
		.qp_type = type,
		.cap = *cap,
	};
	struct ibv_qp *qp = ibv_create_qp(self->pd, &attr);

	if (qp)
		*cap = attr.cap;
	return qp;
}

static struct ibv_qp *qp_create(FIXTURE_DATA(qp) *self, enum ibv_qp_type type)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 16, .max_recv_wr = 16,
		.max_send_sge = 2, .max_recv_sge = 2,
	};

	return qp_create_caps(self, type, &cap);
}

FIXTURE_SETUP(qp)
{
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx) TH_LOG("open %s: %s", srx_test_dev_name(),
					  strerror(errno));
	ASSERT_EQ(0, ibv_query_device(self->ctx, &self->dattr));
	ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, 0, &self->gid));
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->scq = ibv_create_cq(self->ctx, 256, NULL, NULL, 0);
	self->rcq = ibv_create_cq(self->ctx, 256, NULL, NULL, 0);
	ASSERT_NE(NULL, self->scq);
	ASSERT_NE(NULL, self->rcq);
	self->peer = qp_create(self, variant->type);
	ASSERT_NE(NULL, self->peer);
	if (variant->type == IBV_QPT_UD) {
		struct ibv_ah_attr aa = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = self->gid, .hop_limit = 64 },
		};

		self->ah = ibv_create_ah(self->pd, &aa);
		ASSERT_NE(NULL, self->ah) TH_LOG("create_ah: %s",
						 strerror(errno));
	}
	self->buf = calloc(1, 65536);
	ASSERT_NE(NULL, self->buf);
	self->mr = ibv_reg_mr(self->pd, self->buf, 65536,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ |
			      (self->dattr.atomic_cap != IBV_ATOMIC_NONE ?
			       IBV_ACCESS_REMOTE_ATOMIC : 0));
	ASSERT_NE(NULL, self->mr);
}

FIXTURE_TEARDOWN(qp)
{
	if (self->mr)
		ibv_dereg_mr(self->mr);
	free(self->buf);
	if (self->ah)
		ibv_destroy_ah(self->ah);
	if (self->peer)
		ibv_destroy_qp(self->peer);
	if (self->scq)
		ibv_destroy_cq(self->scq);
	if (self->rcq)
		ibv_destroy_cq(self->rcq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/* Attributes for one step of the legal path, aimed at the peer. */
static int qp_attr(FIXTURE_DATA(qp) *self, enum ibv_qp_type type,
		   enum ibv_qp_state to, struct ibv_qp_attr *attr)
{
	return srx_qp_attr_for(type, to, &self->gid, self->peer->qp_num, attr);
}

/* Walk the legal path from RESET up to @to (INIT, RTR or RTS). */
static int qp_walk(FIXTURE_DATA(qp) *self, struct ibv_qp *qp,
		   enum ibv_qp_state to)
{
	enum ibv_qp_state s;

	for (s = IBV_QPS_INIT; s <= to; s++) {
		struct ibv_qp_attr attr;
		int mask = qp_attr(self, qp->qp_type, s, &attr), ret;

		ret = ibv_modify_qp(qp, &attr, mask);
		if (ret)
			return ret;
	}
	return 0;
}

/* The state the kernel reports, or -1. */
static int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

/* ------------------------------------------------------------------ */
/* Create, query, destroy; capabilities                               */
/* ------------------------------------------------------------------ */

TEST_F(qp, create_query_destroy)
{
	struct ibv_qp_cap want = {
		.max_send_wr = 10, .max_recv_wr = 20,
		.max_send_sge = 2, .max_recv_sge = 3, .max_inline_data = 64,
	};
	struct ibv_qp_cap got = want;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;

	qp = qp_create_caps(self, variant->type, &got);
	ASSERT_NE(NULL, qp) TH_LOG("create: %s", strerror(errno));
	EXPECT_NE(0u, qp->qp_num);
	EXPECT_NE(self->peer->qp_num, qp->qp_num);
	EXPECT_EQ((int)variant->type, (int)qp->qp_type);

	/* ibv_create_qp(3): the caps returned are at least those asked. */
	EXPECT_LE(want.max_send_wr, got.max_send_wr);
	EXPECT_LE(want.max_recv_wr, got.max_recv_wr);
	EXPECT_LE(want.max_send_sge, got.max_send_sge);
	EXPECT_LE(want.max_recv_sge, got.max_recv_sge);
	EXPECT_LE(want.max_inline_data, got.max_inline_data);

	ASSERT_EQ(0, ibv_query_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CAP, &init));
	EXPECT_EQ(IBV_QPS_RESET, (int)attr.qp_state);
	EXPECT_EQ((int)variant->type, (int)init.qp_type);
	EXPECT_EQ(self->scq, init.send_cq);
	EXPECT_EQ(self->rcq, init.recv_cq);
	EXPECT_LE(want.max_send_wr, attr.cap.max_send_wr);
	EXPECT_LE(want.max_recv_wr, attr.cap.max_recv_wr);
	EXPECT_LE(want.max_send_sge, attr.cap.max_send_sge);
	EXPECT_LE(want.max_recv_sge, attr.cap.max_recv_sge);

	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(qp, caps_over_the_maximum)
{
	const struct ibv_device_attr *d = &self->dattr;
	struct {
		const char *what;
		struct ibv_qp_cap cap;
	} over[] = {
		{ "max_send_wr", { .max_send_wr = d->max_qp_wr + 1,
				   .max_recv_wr = 1 } },
		{ "max_recv_wr", { .max_send_wr = 1,
				   .max_recv_wr = d->max_qp_wr + 1 } },
		{ "max_send_sge", { .max_send_wr = 1, .max_recv_wr = 1,
				    .max_send_sge = d->max_sge + 1 } },
		{ "max_recv_sge", { .max_send_wr = 1, .max_recv_wr = 1,
				    .max_recv_sge = d->max_sge + 1 } },
		{ "max_inline_data", { .max_send_wr = 1, .max_recv_wr = 1,
				       .max_inline_data = 1 << 20 } },
	};
	unsigned int i;

	for (i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
		struct ibv_qp *qp = qp_create_caps(self, variant->type,
						   &over[i].cap);

		EXPECT_EQ(NULL, qp) TH_LOG("%s over the maximum accepted",
					   over[i].what);
		if (qp) {
			ibv_destroy_qp(qp);
			continue;
		}
		EXPECT_EQ(EINVAL, errno) TH_LOG("%s: %s", over[i].what,
						strerror(errno));
	}
}

/* ------------------------------------------------------------------ */
/* The state machine                                                  */
/* ------------------------------------------------------------------ */

/* RESET->INIT->RTR->RTS, and the query after each step says what was set. */
TEST_F(qp, legal_path_and_query)
{
	enum ibv_qp_type type = variant->type;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr set, got;
	struct ibv_qp *qp;
	int mask;

	qp = qp_create(self, type);
	ASSERT_NE(NULL, qp);

	mask = qp_attr(self, type, IBV_QPS_INIT, &set);
	ASSERT_EQ(0, ibv_modify_qp(qp, &set, mask));
	ASSERT_EQ(0, ibv_query_qp(qp, &got, mask, &init));
	EXPECT_EQ(IBV_QPS_INIT, (int)got.qp_state);
	EXPECT_EQ(1, got.port_num);
	EXPECT_EQ(0, got.pkey_index);
	if (type == IBV_QPT_UD) {
		EXPECT_EQ(set.qkey, got.qkey);
	} else {
		EXPECT_EQ(set.qp_access_flags, got.qp_access_flags);
	}

	mask = qp_attr(self, type, IBV_QPS_RTR, &set);
	ASSERT_EQ(0, ibv_modify_qp(qp, &set, mask));
	ASSERT_EQ(0, ibv_query_qp(qp, &got, mask, &init));
	EXPECT_EQ(IBV_QPS_RTR, (int)got.qp_state);
	if (type != IBV_QPT_UD) {
		EXPECT_EQ((int)set.path_mtu, (int)got.path_mtu);
		EXPECT_EQ(set.dest_qp_num, got.dest_qp_num);
		EXPECT_EQ(set.rq_psn, got.rq_psn);
		EXPECT_EQ(1, got.ah_attr.is_global);
		EXPECT_EQ(1, got.ah_attr.port_num);
		EXPECT_EQ(0, got.ah_attr.grh.sgid_index);
		EXPECT_EQ(0, memcmp(&self->gid, &got.ah_attr.grh.dgid,
				    sizeof(self->gid)));
	}
	if (type == IBV_QPT_RC) {
		EXPECT_EQ(set.max_dest_rd_atomic, got.max_dest_rd_atomic);
		EXPECT_EQ(set.min_rnr_timer, got.min_rnr_timer);
	}

	mask = qp_attr(self, type, IBV_QPS_RTS, &set);
	ASSERT_EQ(0, ibv_modify_qp(qp, &set, mask));
	ASSERT_EQ(0, ibv_query_qp(qp, &got, mask, &init));
	EXPECT_EQ(IBV_QPS_RTS, (int)got.qp_state);
	EXPECT_EQ(set.sq_psn, got.sq_psn);
	if (type == IBV_QPT_RC) {
		EXPECT_EQ(set.timeout, got.timeout);
		EXPECT_EQ(set.retry_cnt, got.retry_cnt);
		EXPECT_EQ(set.rnr_retry, got.rnr_retry);
		EXPECT_EQ(set.max_rd_atomic, got.max_rd_atomic);
	}

	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* From INIT, RTR and RTS: to ERR, and from ERR (or directly) to RESET. */
TEST_F(qp, any_state_to_err_and_reset)
{
	enum ibv_qp_state s;
	struct ibv_qp *qp;

	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);

	for (s = IBV_QPS_INIT; s <= IBV_QPS_RTS; s++) {
		ASSERT_EQ(0, qp_walk(self, qp, s)) TH_LOG("to %d", s);
		EXPECT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR)) TH_LOG("%d -> ERR", s);
		EXPECT_EQ(IBV_QPS_ERR, qp_state(qp));
		EXPECT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET)) TH_LOG("ERR -> RESET");
		EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));

		ASSERT_EQ(0, qp_walk(self, qp, s));
		EXPECT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET)) TH_LOG("%d -> RESET", s);
		EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));
	}
	/* RESET -> RESET is legal, RESET -> ERR is not (RESET leads to INIT). */
	EXPECT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
	EXPECT_EQ(EINVAL, srx_qp_move(qp, IBV_QPS_ERR));
	EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));

	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(qp, illegal_transitions)
{
	enum ibv_qp_type type = variant->type;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;
	int mask;

	qp = qp_create(self, type);
	ASSERT_NE(NULL, qp);

	/* Skipping states, with every attribute the target would need. */
	mask = qp_attr(self, type, IBV_QPS_RTR, &attr);
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask)) TH_LOG("RESET -> RTR");
	mask = qp_attr(self, type, IBV_QPS_RTS, &attr);
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask)) TH_LOG("RESET -> RTS");
	EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));

	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_INIT));
	mask = qp_attr(self, type, IBV_QPS_RTS, &attr);
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask)) TH_LOG("INIT -> RTS");
	EXPECT_EQ(IBV_QPS_INIT, qp_state(qp));

	/* Backwards. */
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	mask = qp_attr(self, type, IBV_QPS_INIT, &attr);
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask)) TH_LOG("RTS -> INIT");
	mask = qp_attr(self, type, IBV_QPS_RTR, &attr);
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask)) TH_LOG("RTS -> RTR");
	EXPECT_EQ(IBV_QPS_RTS, qp_state(qp));

	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * IBV_QP_CUR_STATE is the caller's belief about the current state: a wrong
 * one fails with EINVAL and leaves the QP where it was, a right one is an
 * optional attribute where the IB state table allows it (from RTR, RTS,
 * SQD, SQE) and nowhere else. A QP in RESET told it is in RTS must not
 * reach RTS without ever getting an address, a destination or PSNs.
 */
TEST_F(qp, cur_state_is_checked)
{
	enum ibv_qp_type type = variant->type;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;
	int mask;

	qp = qp_create(self, type);
	ASSERT_NE(NULL, qp);

	/* RESET, claimed RTS: would pass as RTS -> RTS, which needs nothing. */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.cur_qp_state = IBV_QPS_RTS;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CUR_STATE))
		TH_LOG("RESET claimed RTS -> RTS");
	EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));

	/* RESET and INIT, claimed RTR, with everything RTR -> RTS needs. */
	mask = qp_attr(self, type, IBV_QPS_RTS, &attr);
	attr.cur_qp_state = IBV_QPS_RTR;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask | IBV_QP_CUR_STATE))
		TH_LOG("RESET claimed RTR -> RTS");
	EXPECT_EQ(IBV_QPS_RESET, qp_state(qp));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_INIT));
	mask = qp_attr(self, type, IBV_QPS_RTS, &attr);
	attr.cur_qp_state = IBV_QPS_RTR;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask | IBV_QP_CUR_STATE))
		TH_LOG("INIT claimed RTR -> RTS");
	EXPECT_EQ(IBV_QPS_INIT, qp_state(qp));

	/* The truth, where CUR_STATE is not an attribute of the transition. */
	mask = qp_attr(self, type, IBV_QPS_RTR, &attr);
	attr.cur_qp_state = IBV_QPS_INIT;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask | IBV_QP_CUR_STATE))
		TH_LOG("INIT (true) -> RTR");
	EXPECT_EQ(IBV_QPS_INIT, qp_state(qp));

	/* The truth where it is: RTR -> RTS, RTS -> RTS. */
	mask = qp_attr(self, type, IBV_QPS_RTR, &attr);
	ASSERT_EQ(0, ibv_modify_qp(qp, &attr, mask));
	mask = qp_attr(self, type, IBV_QPS_RTS, &attr);
	attr.cur_qp_state = IBV_QPS_SQD;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask | IBV_QP_CUR_STATE))
		TH_LOG("RTR claimed SQD -> RTS");
	EXPECT_EQ(IBV_QPS_RTR, qp_state(qp));
	attr.cur_qp_state = IBV_QPS_RTR;
	EXPECT_EQ(0, ibv_modify_qp(qp, &attr, mask | IBV_QP_CUR_STATE))
		TH_LOG("RTR (true) -> RTS");
	EXPECT_EQ(IBV_QPS_RTS, qp_state(qp));
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.cur_qp_state = IBV_QPS_RTS;
	EXPECT_EQ(0, ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CUR_STATE))
		TH_LOG("RTS (true) -> RTS");
	attr.cur_qp_state = IBV_QPS_RTR;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_CUR_STATE))
		TH_LOG("RTS claimed RTR -> RTS");
	EXPECT_EQ(IBV_QPS_RTS, qp_state(qp));

	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Each attribute a transition requires, left out in turn: EINVAL. */
TEST_F(qp, missing_required_attributes)
{
	enum ibv_qp_type type = variant->type;
	enum ibv_qp_state to;
	struct ibv_qp *qp;

	qp = qp_create(self, type);
	ASSERT_NE(NULL, qp);

	for (to = IBV_QPS_INIT; to <= IBV_QPS_RTS; to++) {
		struct ibv_qp_attr attr;
		int mask = qp_attr(self, type, to, &attr), bit;

		for (bit = 1; bit < (1 << 30); bit <<= 1) {
			if (!(mask & bit) || bit == IBV_QP_STATE)
				continue;
			EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask & ~bit))
				TH_LOG("to state %d without attribute %#x", to, bit);
			EXPECT_EQ((int)to - 1, qp_state(qp));
		}
		/* An attribute the transition does not allow. */
		attr.sq_psn = 1;
		attr.dest_qp_num = 1;
		EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &attr, mask |
					(to == IBV_QPS_RTS ? IBV_QP_DEST_QPN :
							     IBV_QP_SQ_PSN)))
			TH_LOG("to state %d with an extra attribute", to);
		mask = qp_attr(self, type, to, &attr);
		ASSERT_EQ(0, ibv_modify_qp(qp, &attr, mask));
	}
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}


/*
 * Values out of range for a transition. Every case starts from a fresh QP
 * walked to @from; the modify must fail and leave the state alone. Cases
 * marked srx_only are accepted by some devices (rxe): there the result is
 * only logged.
 */
enum bad_case {
	BAD_PORT_2, BAD_PORT_0, BAD_PKEY_INDEX, BAD_MTU_0, BAD_MTU_8192,
	BAD_NO_GRH, BAD_SGID_INDEX, BAD_AV_PORT, BAD_DEST_RD_ATOMIC,
	BAD_MIN_RNR_TIMER, BAD_RD_ATOMIC, BAD_RETRY_CNT, BAD_RNR_RETRY,
	BAD_TIMEOUT, BAD_COUNT
};

static const struct {
	const char *name;
	enum ibv_qp_state to;
	bool connected_only;	/* RC and UC only */
	bool rc_only;
	bool srx_only;
} bad_cases[BAD_COUNT] = {
	[BAD_PORT_2] = { .name = "port 2", .to = IBV_QPS_INIT },
	[BAD_PORT_0] = { .name = "port 0", .to = IBV_QPS_INIT },
	[BAD_PKEY_INDEX] = { .name = "pkey_index past the table",
			     .to = IBV_QPS_INIT, .srx_only = true },
	[BAD_MTU_0] = { .name = "path_mtu 0", .to = IBV_QPS_RTR,
			.connected_only = true, .srx_only = true },
	[BAD_MTU_8192] = { .name = "path_mtu 6 (8192)", .to = IBV_QPS_RTR,
			   .connected_only = true },
	[BAD_NO_GRH] = { .name = "RoCE AV without GRH", .to = IBV_QPS_RTR,
			 .connected_only = true },
	/*
	 * The RDMA core refuses these before the driver sees them, so every
	 * device gives the same errno: an AV port that does not exist EINVAL
	 * (uverbs_cmd.c, modify_qp()); a sgid_index past the GID table EINVAL
	 * and one of an empty entry ENODATA (cache.c, rdma_get_gid_attr(),
	 * through rdma_fill_sgid_attr() in _ib_modify_qp()). bad_mutate()
	 * picks which (sgid_index is 8 bits; srx's table has 256 entries).
	 */
	[BAD_SGID_INDEX] = { .name = "sgid_index of no GID", .to = IBV_QPS_RTR,
			     .connected_only = true },
	[BAD_AV_PORT] = { .name = "AV port 2", .to = IBV_QPS_RTR,
			  .connected_only = true },
	[BAD_DEST_RD_ATOMIC] = { .name = "max_dest_rd_atomic over the maximum",
				 .to = IBV_QPS_RTR, .rc_only = true,
				 .srx_only = true },
	[BAD_MIN_RNR_TIMER] = { .name = "min_rnr_timer 32", .to = IBV_QPS_RTR,
				.rc_only = true, .srx_only = true },
	[BAD_RD_ATOMIC] = { .name = "max_rd_atomic over the maximum",
			    .to = IBV_QPS_RTS, .rc_only = true },
	[BAD_RETRY_CNT] = { .name = "retry_cnt 8", .to = IBV_QPS_RTS,
			    .rc_only = true, .srx_only = true },
	[BAD_RNR_RETRY] = { .name = "rnr_retry 8", .to = IBV_QPS_RTS,
			    .rc_only = true, .srx_only = true },
	[BAD_TIMEOUT] = { .name = "timeout 32", .to = IBV_QPS_RTS,
			  .rc_only = true, .srx_only = true },
};

static void bad_mutate(FIXTURE_DATA(qp) *self, enum bad_case c,
		       const struct ibv_port_attr *port,
		       struct ibv_qp_attr *attr)
{
	switch (c) {
	case BAD_PORT_2:
		attr->port_num = 2;
		break;
	case BAD_PORT_0:
		attr->port_num = 0;
		break;
	case BAD_PKEY_INDEX:
		attr->pkey_index = port->pkey_tbl_len;
		break;
	case BAD_MTU_0:
		attr->path_mtu = 0;
		break;
	case BAD_MTU_8192:
		attr->path_mtu = IBV_MTU_4096 + 1;
		break;
	case BAD_NO_GRH:
		attr->ah_attr.is_global = 0;
		break;
	case BAD_SGID_INDEX:
		/* sgid_index is 8 bits: past the table, or its last entry. */
		attr->ah_attr.grh.sgid_index = port->gid_tbl_len < 256 ?
					       port->gid_tbl_len : 255;
		break;
	case BAD_AV_PORT:
		attr->ah_attr.port_num = 2;
		break;
	case BAD_DEST_RD_ATOMIC:
		attr->max_dest_rd_atomic = self->dattr.max_qp_rd_atom + 1;
		break;
	case BAD_MIN_RNR_TIMER:
		attr->min_rnr_timer = 32;
		break;
	case BAD_RD_ATOMIC:
		attr->max_rd_atomic = self->dattr.max_qp_init_rd_atom + 1;
		break;
	case BAD_RETRY_CNT:
		attr->retry_cnt = 8;
		break;
	case BAD_RNR_RETRY:
		attr->rnr_retry = 8;
		break;
	case BAD_TIMEOUT:
		attr->timeout = 32;
		break;
	default:
		break;
	}
}

TEST_F(qp, bad_attribute_values)
{
	enum ibv_qp_type type = variant->type;
	struct ibv_port_attr port;
	enum bad_case c;

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &port));
	for (c = 0; c < BAD_COUNT; c++) {
		struct ibv_qp_attr attr;
		struct ibv_qp *qp;
		int mask, ret;

		if ((bad_cases[c].connected_only && type == IBV_QPT_UD) ||
		    (bad_cases[c].rc_only && type != IBV_QPT_RC))
			continue;
		qp = qp_create(self, type);
		ASSERT_NE(NULL, qp);
		ASSERT_EQ(0, qp_walk(self, qp, bad_cases[c].to - 1));
		mask = qp_attr(self, type, bad_cases[c].to, &attr);
		bad_mutate(self, c, &port, &attr);
		ret = ibv_modify_qp(qp, &attr, mask);

		if (bad_cases[c].srx_only && !srx_test_is_srx()) {
			if (ret != EINVAL)
				TH_LOG("%s: %s (srx: EINVAL)", bad_cases[c].name,
				       ret ? strerror(ret) : "accepted");
		} else {
			int want = EINVAL;

			if (c == BAD_SGID_INDEX && port.gid_tbl_len >= 256)
				want = ENODATA;
			EXPECT_EQ(want, ret) TH_LOG("%s: %s (want %s)",
						    bad_cases[c].name,
						    strerror(ret),
						    strerror(want));
		}
		if (ret) {
			EXPECT_EQ((int)bad_cases[c].to - 1, qp_state(qp))
				TH_LOG("%s: state changed", bad_cases[c].name);
		}
		EXPECT_EQ(0, ibv_destroy_qp(qp));
	}
}

/*
 * A path MTU above the port's active MTU is refused (EINVAL) on the way to
 * RTR, and one at or below it is taken: packets of a larger path MTU would
 * not fit the netdev. rdma_rxe 6.1 checks path_mtu only against max_mtu
 * 4096 (rxe_qp.c, rxe_qp_chk_attr()). selftests/gid_mtu_test.sh checks the
 * same at other netdev MTUs, 256 included.
 */
TEST_F(qp, path_mtu_above_active_refused)
{
	enum ibv_qp_type type = variant->type;
	struct ibv_port_attr port;
	enum ibv_mtu mtu;

	if (type == IBV_QPT_UD)
		SKIP(return, "UD has no path MTU (it uses the port's)");
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &port));
	ASSERT_LE((int)IBV_MTU_256, (int)port.active_mtu);
	ASSERT_GE((int)IBV_MTU_4096, (int)port.active_mtu);
	for (mtu = IBV_MTU_256; mtu <= IBV_MTU_4096; mtu++) {
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr attr;
		struct ibv_qp *qp;
		int mask, ret;

		qp = qp_create(self, type);
		ASSERT_NE(NULL, qp);
		ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_INIT));
		mask = qp_attr(self, type, IBV_QPS_RTR, &attr);
		attr.path_mtu = mtu;
		ret = ibv_modify_qp(qp, &attr, mask);
		if (mtu > port.active_mtu) {
			EXPECT_EQ(EINVAL, ret)
				TH_LOG("path_mtu %d above active_mtu %d: %s",
				       128 << mtu, 128 << port.active_mtu,
				       ret ? strerror(ret) : "taken");
			if (ret)
				EXPECT_EQ((int)IBV_QPS_INIT, qp_state(qp));
		} else {
			EXPECT_EQ(0, ret)
				TH_LOG("path_mtu %d, active_mtu %d: %s",
				       128 << mtu, 128 << port.active_mtu,
				       strerror(ret));
			if (!ret) {
				memset(&attr, 0, sizeof(attr));
				ASSERT_EQ(0, ibv_query_qp(qp, &attr,
							  IBV_QP_PATH_MTU,
							  &init));
				EXPECT_EQ((int)mtu, (int)attr.path_mtu);
			}
		}
		EXPECT_EQ(0, ibv_destroy_qp(qp));
	}
}

/* ------------------------------------------------------------------ */
/* Flushing                                                           */
/* ------------------------------------------------------------------ */

struct want_wc {
	uint64_t wr_id;
	enum ibv_wc_opcode opcode;
};

/*
 * Exactly @n completions on @cq, flushed, from @qp_num, in the order of
 * @want, and then none.
 */
static void expect_flushed(struct __test_metadata *_metadata,
			   struct ibv_cq *cq, uint32_t qp_num,
			   const struct want_wc *want, int n, const char *what)
{
	struct ibv_wc wc[256];
	int got, i;

	ASSERT_GE(256, n);
	got = srx_wait_cqes(cq, wc, n, QP_WAIT_MS);
	EXPECT_EQ(n, got) TH_LOG("%s: %d of %d completions", what, got, n);
	for (i = 0; i < got && i < n; i++) {
		EXPECT_EQ(want[i].wr_id, wc[i].wr_id)
			TH_LOG("%s: completion %d", what, i);
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, (int)wc[i].status)
			TH_LOG("%s: wr_id %llu: %s", what,
			       (unsigned long long)wc[i].wr_id,
			       ibv_wc_status_str(wc[i].status));
		EXPECT_EQ(qp_num, wc[i].qp_num);
		if (srx_test_is_srx()) {
			EXPECT_EQ((int)want[i].opcode, (int)wc[i].opcode)
				TH_LOG("%s: wr_id %llu", what,
				       (unsigned long long)wc[i].wr_id);
		} else if (want[i].opcode != wc[i].opcode) {
			TH_LOG("%s: wr_id %llu: opcode %d (srx: %d; undefined for errors)",
			       what, (unsigned long long)wc[i].wr_id,
			       wc[i].opcode, want[i].opcode);
		}
	}
	EXPECT_EQ(0, srx_wait_cqes(cq, wc, 1, 100))
		TH_LOG("%s: more completions than posted", what);
}

/* Post @n receives with wr_ids @first.. in one list; returns ibv_post_recv's. */
static int post_recvs(FIXTURE_DATA(qp) *self, struct ibv_qp *qp,
		      uint64_t first, int n, struct ibv_recv_wr *wrs,
		      struct ibv_sge *sges, struct ibv_recv_wr **bad)
{
	int i;

	for (i = 0; i < n; i++) {
		sges[i].addr = (uintptr_t)self->buf + 64 * (i % 512);
		sges[i].length = 64;
		sges[i].lkey = self->mr->lkey;
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].wr_id = first + i;
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	return ibv_post_recv(qp, wrs, bad);
}

/* The send opcodes a QP type has, and what their completions say. */
static const struct {
	enum ibv_wr_opcode wr;
	enum ibv_wc_opcode wc;
	bool rc_only;
	bool atomic;	/* only where atomic_cap says so */
} send_ops[] = {
	{ IBV_WR_SEND, IBV_WC_SEND, false, false },
	{ IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, false, false },
	{ IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, false, false },
	{ IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WC_RDMA_WRITE, false, false },
	{ IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, true, false },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WC_COMP_SWAP, true, true },
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WC_FETCH_ADD, true, true },
};

/*
 * Post @n sends with wr_ids @first.. in one list, cycling through the
 * opcodes of the QP type and the device, every other one unsignaled; on
 * UD, SENDs to the fixture's peer through its AH. Fills @want.
 */
static int post_sends(FIXTURE_DATA(qp) *self, struct ibv_qp *qp,
		      uint64_t first, int n, struct ibv_send_wr *wrs,
		      struct ibv_sge *sges, struct want_wc *want,
		      struct ibv_send_wr **bad)
{
	unsigned int k = 0;
	int i;

	for (i = 0; i < n; i++) {
		while ((send_ops[k % 7].rc_only && qp->qp_type != IBV_QPT_RC) ||
		       (qp->qp_type == IBV_QPT_UD &&
			send_ops[k % 7].wc != IBV_WC_SEND) ||
		       (send_ops[k % 7].atomic &&
			self->dattr.atomic_cap == IBV_ATOMIC_NONE))
			k++;
		sges[i].addr = (uintptr_t)self->buf + 64 * (i % 512);
		sges[i].length = 8;
		sges[i].lkey = self->mr->lkey;
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].wr_id = first + i;
		wrs[i].opcode = send_ops[k % 7].wr;
		wrs[i].send_flags = i % 2 ? IBV_SEND_SIGNALED : 0;
		wrs[i].sg_list = &sges[i];
		wrs[i].num_sge = 1;
		wrs[i].imm_data = htonl(i);
		wrs[i].wr.rdma.remote_addr = (uintptr_t)self->buf + 4096;
		wrs[i].wr.rdma.rkey = self->mr->rkey;
		if (send_ops[k % 7].wc == IBV_WC_COMP_SWAP ||
		    send_ops[k % 7].wc == IBV_WC_FETCH_ADD) {
			wrs[i].wr.atomic.remote_addr =
				(uintptr_t)self->buf + 8192;
			wrs[i].wr.atomic.rkey = self->mr->rkey;
			wrs[i].wr.atomic.compare_add = 1;
		}
		if (qp->qp_type == IBV_QPT_UD) {
			wrs[i].wr.ud.ah = self->ah;
			wrs[i].wr.ud.remote_qpn = self->peer->qp_num;
			wrs[i].wr.ud.remote_qkey = 0x11111111;
		}
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
		if (want) {
			want[i].wr_id = first + i;
			want[i].opcode = send_ops[k % 7].wc;
		}
		k++;
	}
	return ibv_post_send(qp, wrs, bad);
}

static void want_recvs(struct want_wc *want, uint64_t first, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		want[i].wr_id = first + i;
		want[i].opcode = IBV_WC_RECV;
	}
}

/* Receives posted in INIT, RTR or RTS complete as flushed on ERR. */
TEST_F(qp, flush_receives)
{
	enum ibv_qp_state s;

	for (s = IBV_QPS_INIT; s <= IBV_QPS_RTS; s++) {
		struct ibv_recv_wr wrs[5], *bad;
		struct ibv_sge sges[5];
		struct want_wc want[5];
		struct ibv_qp *qp;
		char what[32];

		snprintf(what, sizeof(what), "posted in state %d", s);
		qp = qp_create(self, variant->type);
		ASSERT_NE(NULL, qp);
		ASSERT_EQ(0, qp_walk(self, qp, s));
		ASSERT_EQ(0, post_recvs(self, qp, 100 * s, 5, wrs, sges, &bad));
		ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
		want_recvs(want, 100 * s, 5);
		expect_flushed(_metadata, self->rcq, qp->qp_num, want, 5, what);
		expect_flushed(_metadata, self->scq, qp->qp_num, NULL, 0,
			       "send CQ");
		EXPECT_EQ(0, ibv_destroy_qp(qp));
	}
}

/*
 * Sends posted in RTS (every opcode, signaled or not) complete as flushed,
 * in order, on the send CQ, receives on the receive CQ. Only RC: UC and UD
 * sends complete once they are sent, so a device with a wire protocol
 * leaves none to flush.
 */
TEST_F(qp, flush_sends)
{
	struct ibv_send_wr swrs[14], *sbad;
	struct ibv_recv_wr rwrs[3], *rbad;
	struct want_wc want[14];
	struct ibv_sge sges[14];
	struct ibv_qp *qp;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "only RC sends wait for an answer");
	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	ASSERT_EQ(0, post_recvs(self, qp, 50, 3, rwrs, sges, &rbad));
	ASSERT_EQ(0, post_sends(self, qp, 1000, 14, swrs, sges, want, &sbad));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	expect_flushed(_metadata, self->scq, qp->qp_num, want, 14, "sends");
	want_recvs(want, 50, 3);
	expect_flushed(_metadata, self->rcq, qp->qp_num, want, 3, "receives");
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* Work requests posted to a QP already in ERR complete as flushed too. */
TEST_F(qp, flush_posted_in_err)
{
	struct ibv_send_wr swrs[4], *sbad;
	struct ibv_recv_wr rwrs[4], *rbad;
	struct want_wc want[4];
	struct ibv_sge sges[4];
	struct ibv_qp *qp;
	int ret;

	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));

	ASSERT_EQ(0, post_recvs(self, qp, 70, 4, rwrs, sges, &rbad));
	want_recvs(want, 70, 4);
	expect_flushed(_metadata, self->rcq, qp->qp_num, want, 4,
		       "receives posted in ERR");

	ret = post_sends(self, qp, 80, 4, swrs, sges, want, &sbad);
	ASSERT_EQ(0, ret) TH_LOG("post_send in ERR: %s", strerror(ret));
	expect_flushed(_metadata, self->scq, qp->qp_num, want, 4,
		       "sends posted in ERR");
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* RESET drops what is queued: no completion, now or after ERR. */
TEST_F(qp, reset_discards)
{
	struct ibv_send_wr swrs[3], *sbad;
	struct ibv_recv_wr rwrs[3], *rbad;
	struct ibv_sge sges[3];
	struct ibv_wc wc;
	struct ibv_qp *qp;

	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_INIT));
	ASSERT_EQ(0, post_recvs(self, qp, 10, 3, rwrs, sges, &rbad));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
	EXPECT_EQ(0, srx_wait_cqes(self->rcq, &wc, 1, 200));

	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	if (variant->type == IBV_QPT_RC) {
		ASSERT_EQ(0, post_sends(self, qp, 20, 3, swrs, sges, NULL,
					&sbad));
	}
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
	EXPECT_EQ(0, srx_wait_cqes(self->scq, &wc, 1, 200));

	/* What RESET dropped does not come back with the next flush. */
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	EXPECT_EQ(0, srx_wait_cqes(self->rcq, &wc, 1, 200));
	EXPECT_EQ(0, srx_wait_cqes(self->scq, &wc, 1, 100));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * RESET also removes the QP's completions still waiting in its CQ, and the
 * other QPs' stay, in order: what rdma-core's mlx5 provider does and
 * rdma-core's tests expect of a QP restated through RESET (test_mr.py,
 * restate_qps()). On each kind of CQ libsrx has a path for: thread-safe
 * with no poller yet, biased to the thread that resets, biased to another
 * (live) thread, and SINGLE_THREADED. rdma_rxe leaves them in the CQ: that
 * is only logged. Two QPs flush into one CQ, interleaved through posts in
 * ERR (srx flushes those; rxe 6.1 never completes them).
 */
enum clean_cq { CLEAN_UNOWNED, CLEAN_OWNED, CLEAN_OWNED_ELSEWHERE,
		CLEAN_SINGLE_THREADED, CLEAN_KINDS };

struct clean_owner {
	struct ibv_cq *cq;
	pthread_barrier_t polled, done;
};

/* Poll once (and so own the CQ), then stay alive until told. */
static void *clean_owner_run(void *arg)
{
	struct clean_owner *o = arg;
	struct ibv_wc wc;

	ibv_poll_cq(o->cq, 1, &wc);
	pthread_barrier_wait(&o->polled);
	pthread_barrier_wait(&o->done);
	return NULL;
}

TEST_F(qp, reset_removes_its_completions)
{
	struct ibv_recv_wr wrs[4], *bad;
	struct ibv_sge sges[4];
	int kind;

	for (kind = 0; kind < CLEAN_KINDS; kind++) {
		struct ibv_cq_init_attr_ex cq_attr = {
			.cqe = 64,
			.wc_flags = IBV_WC_STANDARD_FLAGS,
			.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
			.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
		};
		struct ibv_cq *cq, *fscq = self->scq, *frcq = self->rcq;
		struct ibv_qp *qa, *qb;
		struct clean_owner owner;
		pthread_t thread;
		struct ibv_wc wc[16];
		int got, i;

		if (kind == CLEAN_SINGLE_THREADED) {
			struct ibv_cq_ex *ex = ibv_create_cq_ex(self->ctx,
								&cq_attr);

			ASSERT_NE(NULL, ex) TH_LOG("cq_ex: %s", strerror(errno));
			cq = ibv_cq_ex_to_cq(ex);
		} else {
			cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
			ASSERT_NE(NULL, cq);
		}
		if (kind == CLEAN_OWNED) {
			ASSERT_EQ(0, ibv_poll_cq(cq, 1, wc));
		} else if (kind == CLEAN_OWNED_ELSEWHERE) {
			owner.cq = cq;
			ASSERT_EQ(0, pthread_barrier_init(&owner.polled, NULL, 2));
			ASSERT_EQ(0, pthread_barrier_init(&owner.done, NULL, 2));
			ASSERT_EQ(0, pthread_create(&thread, NULL,
						    clean_owner_run, &owner));
			pthread_barrier_wait(&owner.polled);
		}

		self->scq = self->rcq = cq;
		qa = qp_create(self, variant->type);
		qb = qp_create(self, variant->type);
		self->scq = fscq;
		self->rcq = frcq;
		ASSERT_NE(NULL, qa);
		ASSERT_NE(NULL, qb);
		ASSERT_EQ(0, qp_walk(self, qa, IBV_QPS_INIT));
		ASSERT_EQ(0, qp_walk(self, qb, IBV_QPS_INIT));

		/* a100 a101 b200 a102 b201 */
		ASSERT_EQ(0, post_recvs(self, qa, 100, 2, wrs, sges, &bad));
		ASSERT_EQ(0, srx_qp_move(qa, IBV_QPS_ERR));
		ASSERT_EQ(0, post_recvs(self, qb, 200, 1, wrs, sges, &bad));
		ASSERT_EQ(0, srx_qp_move(qb, IBV_QPS_ERR));
		ASSERT_EQ(0, post_recvs(self, qa, 102, 1, wrs, sges, &bad));
		ASSERT_EQ(0, post_recvs(self, qb, 201, 1, wrs, sges, &bad));
		if (!srx_test_is_srx())
			usleep(QP_WAIT_MS * 1000);	/* rxe flushes later */
		ASSERT_EQ(0, srx_qp_move(qa, IBV_QPS_RESET));

		got = srx_wait_cqes(cq, wc, 16, 200);
		if (srx_test_is_srx()) {
			ASSERT_EQ(2, got) TH_LOG("kind %d", kind);
			for (i = 0; i < 2; i++) {
				EXPECT_EQ(200u + i, wc[i].wr_id)
					TH_LOG("kind %d", kind);
				EXPECT_EQ(qb->qp_num, wc[i].qp_num);
				EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, (int)wc[i].status);
			}
		} else {
			for (i = 0; i < got; i++)
				TH_LOG("kind %d: after the reset: wr_id %llu",
				       kind, (unsigned long long)wc[i].wr_id);
		}

		/* Only what the QP does after the reset comes back. */
		ASSERT_EQ(0, qp_walk(self, qa, IBV_QPS_INIT));
		ASSERT_EQ(0, post_recvs(self, qa, 103, 1, wrs, sges, &bad));
		ASSERT_EQ(0, srx_qp_move(qa, IBV_QPS_ERR));
		got = srx_wait_cqes(cq, wc, 1, QP_WAIT_MS);
		EXPECT_EQ(1, got) TH_LOG("kind %d", kind);
		if (got == 1) {
			EXPECT_EQ(103u, wc[0].wr_id) TH_LOG("kind %d", kind);
			EXPECT_EQ(qa->qp_num, wc[0].qp_num);
		}
		EXPECT_EQ(0, srx_wait_cqes(cq, wc, 1, 100)) TH_LOG("kind %d", kind);

		if (kind == CLEAN_OWNED_ELSEWHERE) {
			pthread_barrier_wait(&owner.done);
			pthread_join(thread, NULL);
			pthread_barrier_destroy(&owner.polled);
			pthread_barrier_destroy(&owner.done);
		}
		EXPECT_EQ(0, ibv_destroy_qp(qa));
		EXPECT_EQ(0, ibv_destroy_qp(qb));
		EXPECT_EQ(0, ibv_destroy_cq(cq));
	}
}

/*
 * A SINGLE_THREADED cq_ex whose poll sequence is still open (next_poll
 * found nothing, end_poll not called yet) when another QP is reset: srx
 * leaves that CQ alone, so the reset QP's completion stays, and nothing
 * taken in the sequence comes back after end_poll.
 */
TEST_F(qp, reset_during_an_open_poll_sequence)
{
	struct ibv_cq_init_attr_ex cq_attr = {
		.cqe = 16,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
	};
	struct ibv_poll_cq_attr pattr = {};
	struct ibv_cq *fscq = self->scq, *frcq = self->rcq;
	struct ibv_recv_wr wrs[2], *bad;
	struct ibv_sge sges[2];
	struct ibv_qp *qa, *qb;
	struct ibv_cq_ex *ex;
	struct ibv_wc wc[4];
	int got;

	if (!srx_test_is_srx())
		SKIP(return, "srx's cq_ex");
	ex = ibv_create_cq_ex(self->ctx, &cq_attr);
	ASSERT_NE(NULL, ex);
	self->scq = self->rcq = ibv_cq_ex_to_cq(ex);
	qa = qp_create(self, variant->type);
	qb = qp_create(self, variant->type);
	self->scq = fscq;
	self->rcq = frcq;
	ASSERT_NE(NULL, qa);
	ASSERT_NE(NULL, qb);
	ASSERT_EQ(0, qp_walk(self, qa, IBV_QPS_INIT));
	ASSERT_EQ(0, qp_walk(self, qb, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(qa, IBV_QPS_ERR));

	ASSERT_EQ(0, post_recvs(self, qb, 200, 2, wrs, sges, &bad));
	ASSERT_EQ(0, srx_qp_move(qb, IBV_QPS_ERR));
	ASSERT_EQ(0, ibv_start_poll(ex, &pattr));
	EXPECT_EQ(200u, ex->wr_id);
	ASSERT_EQ(0, ibv_next_poll(ex));
	EXPECT_EQ(201u, ex->wr_id);
	EXPECT_EQ(ENOENT, ibv_next_poll(ex));
	/* a's completion after the sequence's last, then a's reset */
	ASSERT_EQ(0, post_recvs(self, qa, 100, 1, wrs, sges, &bad));
	ASSERT_EQ(0, srx_qp_move(qa, IBV_QPS_RESET));
	ibv_end_poll(ex);

	got = srx_wait_cqes(ibv_cq_ex_to_cq(ex), wc, 4, 200);
	ASSERT_EQ(1, got);
	EXPECT_EQ(100u, wc[0].wr_id);
	EXPECT_EQ(qa->qp_num, wc[0].qp_num);
	EXPECT_EQ(0, ibv_destroy_qp(qa));
	EXPECT_EQ(0, ibv_destroy_qp(qb));
	EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(ex)));
}

/* ------------------------------------------------------------------ */
/* Posting limits                                                     */
/* ------------------------------------------------------------------ */

/* Sends need RTS (C10-29); receives need at least INIT. */
TEST_F(qp, post_in_wrong_state)
{
	struct ibv_send_wr swr, *sbad = NULL;
	struct ibv_recv_wr rwr, *rbad = NULL;
	struct ibv_sge sge;
	enum ibv_qp_state s;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	int ret;

	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);

	ret = post_recvs(self, qp, 1, 1, &rwr, &sge, &rbad);
	EXPECT_EQ(EINVAL, ret) TH_LOG("post_recv in RESET: %s", strerror(ret));
	EXPECT_EQ(&rwr, rbad);

	for (s = IBV_QPS_RESET; s <= IBV_QPS_RTR; s++) {
		if (s != IBV_QPS_RESET) {
			ASSERT_EQ(0, qp_walk(self, qp, s));
		}
		sbad = NULL;
		ret = post_sends(self, qp, 2, 1, &swr, &sge, NULL, &sbad);
		if (srx_test_is_srx()) {
			EXPECT_EQ(EINVAL, ret) TH_LOG("post_send in state %d", s);
		} else {
			EXPECT_NE(0, ret) TH_LOG("post_send in state %d", s);
			TH_LOG("post_send in state %d: %s", s, strerror(ret));
		}
		EXPECT_EQ(&swr, sbad);
		if (s != IBV_QPS_RESET) {
			ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
		}
	}

	/* Nothing of it was queued. */
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	EXPECT_EQ(0, srx_wait_cqes(self->scq, &wc, 1, 200));
	EXPECT_EQ(0, srx_wait_cqes(self->rcq, &wc, 1, 100));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * A queue holds at least what create returned: a list longer than that
 * fails with ENOMEM at its first WR that does not fit, and the ones before
 * it are posted and flush. srx holds exactly what it returned; rxe holds
 * more than it says (its ring has a power-of-two size less one).
 */
static void expect_overflow(struct __test_metadata *_metadata,
			    FIXTURE_DATA(qp) *self, struct ibv_qp *qp,
			    bool send, uint32_t cap)
{
	uint32_t n = 4 * cap + 64, held = 0;
	struct ibv_send_wr *swrs = calloc(n, sizeof(*swrs)), *sbad = NULL;
	struct ibv_recv_wr *rwrs = calloc(n, sizeof(*rwrs)), *rbad = NULL;
	struct ibv_sge *sges = calloc(n, sizeof(*sges));
	struct want_wc *want = calloc(n, sizeof(*want));
	const char *what = send ? "sends" : "receives";
	int ret;

	ASSERT_TRUE(swrs && rwrs && sges && want);
	if (send) {
		ret = post_sends(self, qp, 500, n, swrs, sges, want, &sbad);
		if (sbad)
			held = sbad - swrs;
	} else {
		ret = post_recvs(self, qp, 0, n, rwrs, sges, &rbad);
		want_recvs(want, 0, n);
		if (rbad)
			held = rbad - rwrs;
	}
	EXPECT_EQ(ENOMEM, ret) TH_LOG("%u %s: %s", n, what, strerror(ret));
	EXPECT_LE(cap, held) TH_LOG("%s: bad_wr at %u, create said %u", what,
				    held, cap);
	EXPECT_GT(n, held);
	if (srx_test_is_srx()) {
		EXPECT_EQ(cap, held) TH_LOG("%s: holds %u, create said %u",
					    what, held, cap);
	} else if (held != cap) {
		TH_LOG("%s: holds %u, create said %u", what, held, cap);
	}

	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	expect_flushed(_metadata, send ? self->scq : self->rcq, qp->qp_num,
		       want, held, what);
	free(swrs);
	free(rwrs);
	free(sges);
	free(want);
}

TEST_F(qp, post_more_than_the_queue_holds)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 8, .max_recv_wr = 8,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct ibv_qp *qp;

	qp = qp_create_caps(self, variant->type, &cap);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	expect_overflow(_metadata, self, qp, false, cap.max_recv_wr);
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	/* Sends: only RC ones stay queued (see flush_sends). */
	if (variant->type != IBV_QPT_RC)
		return;
	qp = qp_create_caps(self, variant->type, &cap);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	expect_overflow(_metadata, self, qp, true, cap.max_send_wr);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * A work request occupies its slot until its completion has been polled,
 * not merely until the device has taken it: at most max_send_wr sends and
 * max_recv_wr receives are outstanding, so a CQ sized for them cannot
 * overrun (IBTA 1.4 section 10.8.3.1; mlx5 frees slots as it polls their
 * completions). Flushed work requests of a QP in ERR are taken and
 * completed at once, so after filling a queue, nothing more fits until
 * completions are polled, and each one polled frees one slot. RESET empties
 * the queues, and the QP's completions left in the CQ go with them.
 */
static void expect_slots_follow_polls(struct __test_metadata *_metadata,
				      FIXTURE_DATA(qp) *self,
				      struct ibv_qp *qp, bool send,
				      uint32_t cap)
{
	struct ibv_cq *cq = send ? self->scq : self->rcq;
	const char *what = send ? "sends" : "receives";
	uint32_t n = cap + 1;
	struct ibv_send_wr *swrs = calloc(n, sizeof(*swrs)), *sbad = NULL;
	struct ibv_recv_wr *rwrs = calloc(n, sizeof(*rwrs)), *rbad = NULL;
	struct ibv_sge *sges = calloc(n, sizeof(*sges));
	struct ibv_wc wc[2];
	int ret, round;

	ASSERT_TRUE(swrs && rwrs && sges);
	/* cap work requests, flushed at once: cap completions wait. */
	if (send)
		ret = post_sends(self, qp, 1, cap, swrs, sges, NULL, &sbad);
	else
		ret = post_recvs(self, qp, 1, cap, rwrs, sges, &rbad);
	ASSERT_EQ(0, ret) TH_LOG("%s: %u in ERR: %s", what, cap, strerror(ret));

	for (round = 0; round < 2; round++) {
		if (send)
			ret = post_sends(self, qp, 100 + round, 1, swrs, sges,
					 NULL, &sbad);
		else
			ret = post_recvs(self, qp, 100 + round, 1, rwrs, sges,
					 &rbad);
		if (srx_test_is_srx()) {
			EXPECT_EQ(ENOMEM, ret)
				TH_LOG("%s: one more than %u with none polled: %s",
				       what, cap, strerror(ret));
			EXPECT_TRUE(send ? sbad == swrs : rbad == rwrs);
		} else if (ret != ENOMEM) {
			TH_LOG("%s: one more than %u with none polled: %s",
			       what, cap, strerror(ret));
			break;
		}
		/* One completion polled: one slot. */
		ASSERT_EQ(1, srx_wait_cqes(cq, wc, 1, QP_WAIT_MS));
		if (send)
			ret = post_sends(self, qp, 200 + round, 1, swrs, sges,
					 NULL, &sbad);
		else
			ret = post_recvs(self, qp, 200 + round, 1, rwrs, sges,
					 &rbad);
		EXPECT_EQ(0, ret) TH_LOG("%s: after one poll: %s", what,
					 strerror(ret));
	}

	/* RESET frees every slot, with completions left to poll. */
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_INIT));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	if (send)
		ret = post_sends(self, qp, 300, cap, swrs, sges, NULL, &sbad);
	else
		ret = post_recvs(self, qp, 300, cap, rwrs, sges, &rbad);
	EXPECT_EQ(0, ret) TH_LOG("%s: %u after RESET: %s", what, cap,
				 strerror(ret));
	/* RESET removed the cap left from before: the cap posted since. */
	if (srx_test_is_srx()) {
		EXPECT_EQ((int)cap, srx_wait_cqes(cq, NULL, cap, QP_WAIT_MS));
		EXPECT_EQ(0, srx_wait_cqes(cq, NULL, 1, 100));
	}
	srx_wait_cqes(cq, NULL, 4 * n, 100);
	free(swrs);
	free(rwrs);
	free(sges);
}

TEST_F(qp, slot_freed_when_completion_polled)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = 8, .max_recv_wr = 8,
		.max_send_sge = 1, .max_recv_sge = 1,
	};
	struct ibv_qp *qp;

	qp = qp_create_caps(self, variant->type, &cap);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	expect_slots_follow_polls(_metadata, self, qp, false, cap.max_recv_wr);
	expect_slots_follow_polls(_metadata, self, qp, true, cap.max_send_wr);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

TEST_F(qp, post_too_many_sges)
{
	struct ibv_qp_init_attr init;
	struct ibv_sge sges[64] = {};
	struct ibv_send_wr swr = {}, *sbad = NULL;
	struct ibv_recv_wr rwr = {}, *rbad = NULL;
	struct ibv_qp_attr attr;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	int ret;

	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, ibv_query_qp(qp, &attr, IBV_QP_CAP, &init));
	ASSERT_GT(64u, attr.cap.max_recv_sge);
	ASSERT_GT(64u, attr.cap.max_send_sge);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));

	rwr.wr_id = 1;
	rwr.sg_list = sges;
	rwr.num_sge = attr.cap.max_recv_sge + 1;
	ret = ibv_post_recv(qp, &rwr, &rbad);
	EXPECT_EQ(EINVAL, ret) TH_LOG("%d SGEs: %s", rwr.num_sge,
				      strerror(ret));
	EXPECT_EQ(&rwr, rbad);

	swr.wr_id = 2;
	swr.opcode = IBV_WR_SEND;
	swr.sg_list = sges;
	swr.num_sge = attr.cap.max_send_sge + 1;
	if (variant->type == IBV_QPT_UD) {
		swr.wr.ud.ah = self->ah;
		swr.wr.ud.remote_qpn = self->peer->qp_num;
	}
	ret = ibv_post_send(qp, &swr, &sbad);
	EXPECT_EQ(EINVAL, ret) TH_LOG("%d SGEs: %s", swr.num_sge,
				      strerror(ret));
	EXPECT_EQ(&swr, sbad);

	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	EXPECT_EQ(0, srx_wait_cqes(self->rcq, &wc, 1, 200));
	EXPECT_EQ(0, srx_wait_cqes(self->scq, &wc, 1, 100));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * ATOMIC_WRITE posts through ibv_wr_atomic_write() only, which gives its
 * 8 bytes: ibv_post_send() refuses the opcode with EINVAL and bad_wr at
 * it, on the RC QP whose ibv_qp_ex takes it, and queues nothing.
 */
TEST_F(qp, post_send_refuses_atomic_write)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)self->buf, .length = 8,
		.lkey = self->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 77, .opcode = IBV_WR_ATOMIC_WRITE,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
		.sg_list = &sge, .num_sge = 1,
	}, *bad = NULL;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc;
	struct ibv_qp *qp;

	if (variant->type != IBV_QPT_RC || !srx_test_is_srx())
		SKIP(return, "srx's RC only");
	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	wr.wr.rdma.remote_addr = (uintptr_t)self->buf + 8192;
	wr.wr.rdma.rkey = self->mr->rkey;
	EXPECT_EQ(EINVAL, ibv_post_send(qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	wr.send_flags = IBV_SEND_SIGNALED;
	bad = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(qp, &wr, &bad));
	EXPECT_EQ(&wr, bad);
	/* Nothing was queued: the move to ERR flushes nothing. */
	ASSERT_EQ(0, ibv_modify_qp(qp, &attr, IBV_QP_STATE));
	EXPECT_EQ(0, srx_wait_cqes(self->scq, &wc, 1, 100));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * What a device reports and what ibv_post_send() takes agree: an opcode
 * whose feature the device does not report (atomic_cap, memory windows,
 * memory management extensions) fails with EINVAL and bad_wr at it
 * (ibv_post_send(3)), and queues nothing. An opcode it reports is posted
 * where that needs nothing more than this fixture has (atomics); the
 * others would need a memory window or a fast-registered MR to aim at.
 */
TEST_F(qp, send_opcodes_agree_with_attributes)
{
	uint64_t flags = self->dattr.device_cap_flags;
	const struct {
		const char *name;
		enum ibv_wr_opcode op;
		bool reported;
		bool postable;
	} ops[] = {
		{ "ATOMIC_CMP_AND_SWP", IBV_WR_ATOMIC_CMP_AND_SWP,
		  self->dattr.atomic_cap != IBV_ATOMIC_NONE, true },
		{ "ATOMIC_FETCH_AND_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD,
		  self->dattr.atomic_cap != IBV_ATOMIC_NONE, true },
		{ "BIND_MW", IBV_WR_BIND_MW,
		  flags & IBV_DEVICE_MEM_WINDOW, false },
		{ "LOCAL_INV", IBV_WR_LOCAL_INV,
		  flags & IBV_DEVICE_MEM_MGT_EXTENSIONS, false },
		{ "SEND_WITH_INV", IBV_WR_SEND_WITH_INV,
		  flags & IBV_DEVICE_MEM_MGT_EXTENSIONS, false },
	};
	unsigned int i, posted = 0;
	struct ibv_wc wc[8];
	struct ibv_qp *qp;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "every one of these is an RC operation");
	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)self->buf, .length = 8,
			.lkey = self->mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 700 + i, .opcode = ops[i].op,
			.send_flags = IBV_SEND_SIGNALED,
			.sg_list = &sge, .num_sge = 1,
		}, *bad = NULL;
		int ret;

		if (ops[i].reported && !ops[i].postable) {
			TH_LOG("%s: reported, not posted here", ops[i].name);
			continue;
		}
		wr.wr.atomic.remote_addr = (uintptr_t)self->buf + 8192;
		wr.wr.atomic.rkey = self->mr->rkey;
		ret = ibv_post_send(qp, &wr, &bad);
		if (ops[i].reported) {
			EXPECT_EQ(0, ret) TH_LOG("%s: reported, refused: %s",
						 ops[i].name, strerror(ret));
			posted += !ret;
		} else {
			EXPECT_EQ(EINVAL, ret)
				TH_LOG("%s: not reported, post said %s",
				       ops[i].name, strerror(ret));
			EXPECT_EQ(&wr, bad) TH_LOG("%s: bad_wr", ops[i].name);
			posted += !ret;
		}
	}

	/* Exactly what was taken completes, as flushed. */
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	EXPECT_EQ((int)posted, srx_wait_cqes(self->scq, wc, 8, QP_WAIT_MS));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * IBV_SEND_INLINE is valid only for SEND and RDMA WRITE (ibv_post_send(3)):
 * an RDMA READ or an atomic that asks for it fails with EINVAL and bad_wr
 * at it, and queues nothing; a SEND and an RDMA WRITE with it are taken.
 */
TEST_F(qp, inline_only_for_send_and_write)
{
	const struct {
		const char *name;
		enum ibv_wr_opcode op;
		bool ok;
	} ops[] = {
		{ "SEND", IBV_WR_SEND, true },
		{ "RDMA_WRITE", IBV_WR_RDMA_WRITE, true },
		{ "RDMA_READ", IBV_WR_RDMA_READ, false },
		{ "ATOMIC_CMP_AND_SWP", IBV_WR_ATOMIC_CMP_AND_SWP, false },
		{ "ATOMIC_FETCH_AND_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD, false },
	};
	unsigned int i, posted = 0;
	struct ibv_wc wc[8];
	struct ibv_qp *qp;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "RDMA READ and atomics are RC operations");
	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)self->buf, .length = 8,
			.lkey = self->mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 800 + i, .opcode = ops[i].op,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
			.sg_list = &sge, .num_sge = 1,
		}, *bad = NULL;
		int ret;

		wr.wr.rdma.remote_addr = (uintptr_t)self->buf + 4096;
		wr.wr.rdma.rkey = self->mr->rkey;
		if (!ops[i].ok && ops[i].op != IBV_WR_RDMA_READ) {
			wr.wr.atomic.remote_addr = (uintptr_t)self->buf + 8192;
			wr.wr.atomic.rkey = self->mr->rkey;
		}
		ret = ibv_post_send(qp, &wr, &bad);
		if (ops[i].ok) {
			EXPECT_EQ(0, ret) TH_LOG("inline %s: %s", ops[i].name,
						 strerror(ret));
		} else {
			EXPECT_EQ(EINVAL, ret) TH_LOG("inline %s: %s",
						      ops[i].name,
						      strerror(ret));
			EXPECT_EQ(&wr, bad) TH_LOG("inline %s: bad_wr",
						   ops[i].name);
		}
		posted += !ret;
	}

	/* Exactly what was taken completes, as flushed. */
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	EXPECT_EQ(2, (int)posted);
	EXPECT_EQ((int)posted, srx_wait_cqes(self->scq, wc, 8, QP_WAIT_MS));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * Remote atomic access on a QP: every device takes the flag (the IB CM
 * sets it whenever a connection has responder resources), and query_qp
 * says it is granted exactly when the device reports atomics.
 */
TEST_F(qp, remote_atomic_access_granted_as_reported)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	}, got;
	struct ibv_qp_init_attr init;
	bool atomic = self->dattr.atomic_cap != IBV_ATOMIC_NONE;
	struct ibv_qp *qp;
	int ret;

	if (variant->type != IBV_QPT_RC)
		SKIP(return, "remote atomics are an RC operation");
	qp = qp_create(self, variant->type);
	ASSERT_NE(NULL, qp);
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	ASSERT_EQ(0, ret) TH_LOG("INIT with remote atomic: %s", strerror(ret));
	ASSERT_EQ(0, ibv_query_qp(qp, &got, IBV_QP_ACCESS_FLAGS, &init));
	EXPECT_EQ((unsigned int)(IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ),
		  got.qp_access_flags & (IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_READ));
	EXPECT_EQ(atomic, !!(got.qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC))
		TH_LOG("atomic_cap %d, query_qp access %#x",
		       self->dattr.atomic_cap, got.qp_access_flags);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* ------------------------------------------------------------------ */
/* The ibv_wr_* API (ibv_wr_post(3))                                  */
/* ------------------------------------------------------------------ */

/* The operations ibv_post_send() takes on @type here, as send_ops_flags. */
/*
 * Bit 40 of device_cap_flags_ex, IB_UVERBS_DEVICE_ATOMIC_WRITE of the
 * kernel's uAPI (rdma-core 44 has no name for it).
 */
static bool has_atomic_write(FIXTURE_DATA(qp) *self)
{
	struct ibv_device_attr_ex ax;

	if (ibv_query_device_ex(self->ctx, NULL, &ax))
		return false;
	return ax.device_cap_flags_ex & (1ull << 40);
}

static uint64_t wr_ops_for(FIXTURE_DATA(qp) *self, enum ibv_qp_type type)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

	if (type == IBV_QPT_UD)
		return ops;
	ops |= IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
	if (type != IBV_QPT_RC)
		return ops;
	ops |= IBV_QP_EX_WITH_RDMA_READ;
	if (self->dattr.atomic_cap != IBV_ATOMIC_NONE)
		ops |= IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	if (has_atomic_write(self))
		ops |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	return ops;
}

/* ibv_create_qp_ex() with @comp_mask beyond the PD; errno on failure. */
static struct ibv_qp *qp_create_ex(FIXTURE_DATA(qp) *self,
				   enum ibv_qp_type type, uint64_t comp_mask,
				   uint32_t create_flags, uint64_t ops,
				   uint32_t max_send_wr)
{
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = self->scq,
		.recv_cq = self->rcq,
		.qp_type = type,
		.cap = { .max_send_wr = max_send_wr, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | comp_mask,
		.pd = self->pd,
		.create_flags = create_flags,
		.send_ops_flags = ops,
	};

	return ibv_create_qp_ex(self->ctx, &attr);
}

/*
 * ibv_create_qp_ex() takes send_ops_flags naming operations the QP type
 * has, and create_flags 0; anything else fails with EOPNOTSUPP on srx, as
 * rdma-core's providers answer (rxe's check_qp_init_attr(), v44). On srx
 * that includes BIND_MW on UD (windows are bound on connected QPs) and
 * every create flag. ATOMIC_WRITE is RC's
 * alone, and there only where device_cap_flags_ex reports it (srx does).
 */
TEST_F(qp, wr_api_create)
{
	const struct {
		const char *name;
		uint64_t mask;
		uint32_t create_flags;
		uint64_t ops;
		bool srx_only;
	} refused[] = {
		{ "TSO", IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
		  IBV_QP_EX_WITH_TSO, false },
		{ "an unknown operation", IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
		  1ull << 40, false },
		{ "READ on UC or UD", IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
		  IBV_QP_EX_WITH_RDMA_READ, false },
		{ "BIND_MW on UD", IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
		  IBV_QP_EX_WITH_BIND_MW, true },
		{ "ATOMIC_WRITE on UC or UD", IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		  0, IBV_QP_EX_WITH_ATOMIC_WRITE, true },
		{ "BLOCK_SELF_MCAST_LB", IBV_QP_INIT_ATTR_CREATE_FLAGS,
		  IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, 0, true },
		{ "an XRC domain mask", IBV_QP_INIT_ATTR_XRCD, 0, 0, true },
	};
	uint64_t ops = wr_ops_for(self, variant->type);
	struct ibv_qp_ex *ex;
	struct ibv_qp *qp;
	unsigned int i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if ((refused[i].ops == IBV_QP_EX_WITH_RDMA_READ ||
		     refused[i].ops == IBV_QP_EX_WITH_ATOMIC_WRITE) &&
		    variant->type == IBV_QPT_RC)
			continue;
		if (refused[i].ops == IBV_QP_EX_WITH_BIND_MW &&
		    variant->type != IBV_QPT_UD)
			continue;
		if (refused[i].srx_only && !srx_test_is_srx())
			continue;
		errno = 0;
		qp = qp_create_ex(self, variant->type, refused[i].mask,
				  refused[i].create_flags, refused[i].ops, 16);
		EXPECT_EQ(NULL, qp) TH_LOG("%s: created", refused[i].name);
		EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("%s: %s", refused[i].name,
						    strerror(errno));
		if (qp)
			ibv_destroy_qp(qp);
	}

	/* create_flags 0 is a plain QP. */
	qp = qp_create_ex(self, variant->type, IBV_QP_INIT_ATTR_CREATE_FLAGS,
			  0, 0, 16);
	ASSERT_NE(NULL, qp) TH_LOG("create_flags 0: %s", strerror(errno));
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	errno = 0;
	qp = qp_create_ex(self, variant->type,
			  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0, ops, 16);
	ASSERT_NE(NULL, qp) TH_LOG("ops %#llx: %s", (unsigned long long)ops,
				   strerror(errno));
	ex = ibv_qp_to_qp_ex(qp);
	ASSERT_NE(NULL, ex);
	EXPECT_NE(NULL, ex->wr_start);
	EXPECT_NE(NULL, ex->wr_complete);
	EXPECT_NE(NULL, ex->wr_abort);
	EXPECT_NE(NULL, ex->wr_set_sge);
	EXPECT_NE(NULL, ex->wr_set_sge_list);
	EXPECT_NE(NULL, ex->wr_set_inline_data);
	EXPECT_NE(NULL, ex->wr_set_inline_data_list);
	EXPECT_NE(NULL, ex->wr_send);
	EXPECT_NE(NULL, ex->wr_send_imm);
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE) {
		EXPECT_NE(NULL, ex->wr_rdma_write);
		EXPECT_NE(NULL, ex->wr_rdma_write_imm);
	}
	if (ops & IBV_QP_EX_WITH_RDMA_READ) {
		EXPECT_NE(NULL, ex->wr_rdma_read);
	}
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) {
		EXPECT_NE(NULL, ex->wr_atomic_cmp_swp);
		EXPECT_NE(NULL, ex->wr_atomic_fetch_add);
	}
	if (variant->type == IBV_QPT_RC && srx_test_is_srx()) {
		EXPECT_TRUE(has_atomic_write(self));
		EXPECT_TRUE(!!(ops & IBV_QP_EX_WITH_ATOMIC_WRITE));
	}
	if (ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		EXPECT_NE(NULL, ex->wr_atomic_write);
	EXPECT_EQ(0, ibv_destroy_qp(qp));

	/* Memory windows: BIND_MW on the connected types (srx(7)). */
	if (variant->type == IBV_QPT_UD || !srx_test_is_srx())
		return;
	qp = qp_create_ex(self, variant->type,
			  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, 0,
			  ops | IBV_QP_EX_WITH_BIND_MW, 16);
	ASSERT_NE(NULL, qp) TH_LOG("BIND_MW: %s", strerror(errno));
	EXPECT_NE(NULL, ibv_qp_to_qp_ex(qp)->wr_bind_mw);
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* On UD, the current work request's address: the fixture's peer. */
static void wr_ud_addr(FIXTURE_DATA(qp) *self, struct ibv_qp_ex *ex)
{
	if (ex->qp_base.qp_type == IBV_QPT_UD)
		ibv_wr_set_ud_addr(ex, self->ah, self->peer->qp_num,
				   0x11111111);
}

/* One SEND of 8 bytes from buf, as a batch of its own; its errno. */
static int wr_send_one(FIXTURE_DATA(qp) *self, struct ibv_qp_ex *ex,
		       uint64_t wr_id)
{
	ibv_wr_start(ex);
	ex->wr_id = wr_id;
	ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(ex);
	wr_ud_addr(self, ex);
	ibv_wr_set_sge(ex, self->mr->lkey, (uintptr_t)self->buf, 8);
	return ibv_wr_complete(ex);
}

/* Sends need RTS (C10-29): a batch before it fails with EINVAL. */
TEST_F(qp, wr_api_needs_rts)
{
	enum ibv_qp_state s;
	struct ibv_qp_ex *ex;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	int ret;

	qp = qp_create_ex(self, variant->type, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			  0, wr_ops_for(self, variant->type), 16);
	ASSERT_NE(NULL, qp) TH_LOG("%s", strerror(errno));
	ex = ibv_qp_to_qp_ex(qp);
	ASSERT_NE(NULL, ex);
	for (s = IBV_QPS_RESET; s <= IBV_QPS_RTR; s++) {
		if (s != IBV_QPS_RESET) {
			ASSERT_EQ(0, qp_walk(self, qp, s));
		}
		ret = wr_send_one(self, ex, 10 + s);
		EXPECT_EQ(EINVAL, ret) TH_LOG("state %d: %s", s, strerror(ret));
		if (s != IBV_QPS_RESET) {
			ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_RESET));
		}
	}

	/* Nothing of it was queued. */
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));
	EXPECT_EQ(0, srx_wait_cqes(self->scq, &wc, 1, 200));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/*
 * A batch is posted whole or not at all (ibv_wr_post(3): "No work is
 * executed to the queue until ibv_wr_complete() returns success"): each
 * fault below makes ibv_wr_complete() fail with the errno ibv_post_send()
 * gives for it, and ibv_wr_abort() drops a batch. The QP is in ERR, where
 * what is posted is flushed at once, so exactly the batches that
 * succeeded complete, in order, and the others leave no trace.
 */
TEST_F(qp, wr_api_batch_all_or_nothing)
{
	const uint32_t cap_wr = 8;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_sge sges[64];
	struct want_wc want[16];
	char inl[256] = "inline";
	struct ibv_data_buf bufs[2] = {
		{ .addr = inl, .length = 3 }, { .addr = inl + 3, .length = 3 },
	};
	struct ibv_qp_ex *ex;
	struct ibv_qp *qp;
	uint32_t i;
	int ret, n = 0;

	qp = qp_create_ex(self, variant->type, IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			  0, wr_ops_for(self, variant->type), cap_wr);
	ASSERT_NE(NULL, qp) TH_LOG("%s", strerror(errno));
	ex = ibv_qp_to_qp_ex(qp);
	ASSERT_NE(NULL, ex);
	ASSERT_EQ(0, ibv_query_qp(qp, &attr, IBV_QP_CAP, &init));
	ASSERT_GT(64u, attr.cap.max_send_sge);
	ASSERT_GE(16u, attr.cap.max_send_wr);	/* want[] */
	ASSERT_LE(6u, attr.cap.max_inline_data);
	ASSERT_GT(sizeof(inl), attr.cap.max_inline_data);
	for (i = 0; i < 64; i++) {
		sges[i].addr = (uintptr_t)self->buf + 8 * i;
		sges[i].length = 8;
		sges[i].lkey = self->mr->lkey;
	}
	ASSERT_EQ(0, qp_walk(self, qp, IBV_QPS_RTS));
	ASSERT_EQ(0, srx_qp_move(qp, IBV_QPS_ERR));

	/* Two work requests in one batch, sge list and inline list. */
	ibv_wr_start(ex);
	ex->wr_flags = IBV_SEND_SIGNALED;
	ex->wr_id = 100;
	ibv_wr_send(ex);
	wr_ud_addr(self, ex);
	ibv_wr_set_sge_list(ex, 2, sges);
	ex->wr_id = 101;
	ibv_wr_send_imm(ex, htonl(7));
	wr_ud_addr(self, ex);
	ibv_wr_set_inline_data_list(ex, 2, bufs);
	EXPECT_EQ(0, ibv_wr_complete(ex));
	want[n].wr_id = 100;
	want[n++].opcode = IBV_WC_SEND;
	want[n].wr_id = 101;
	want[n++].opcode = IBV_WC_SEND;

	/* Aborted: nothing. */
	ibv_wr_start(ex);
	ex->wr_id = 200;
	ibv_wr_send(ex);
	ibv_wr_set_sge(ex, self->mr->lkey, (uintptr_t)self->buf, 8);
	ibv_wr_abort(ex);

	/* One SGE more than the QP has, after a good WR in the batch. */
	ibv_wr_start(ex);
	ex->wr_id = 300;
	ibv_wr_send(ex);
	ibv_wr_set_sge(ex, self->mr->lkey, (uintptr_t)self->buf, 8);
	ex->wr_id = 301;
	ibv_wr_send(ex);
	ibv_wr_set_sge_list(ex, attr.cap.max_send_sge + 1, sges);
	ret = ibv_wr_complete(ex);
	if (srx_test_is_srx()) {
		EXPECT_EQ(EINVAL, ret) TH_LOG("too many SGEs: %s",
					      strerror(ret));
	} else {
		EXPECT_NE(0, ret);
	}

	/* More inline data than the QP takes. */
	ibv_wr_start(ex);
	ex->wr_id = 400;
	ibv_wr_send(ex);
	ibv_wr_set_inline_data(ex, inl, attr.cap.max_inline_data + 1);
	ret = ibv_wr_complete(ex);
	if (srx_test_is_srx()) {
		EXPECT_EQ(EINVAL, ret) TH_LOG("inline too long: %s",
					      strerror(ret));
	} else {
		EXPECT_NE(0, ret);
	}

	/* More work requests than the queue holds. */
	ibv_wr_start(ex);
	for (i = 0; i <= attr.cap.max_send_wr; i++) {
		ex->wr_id = 500 + i;
		ibv_wr_send(ex);
		wr_ud_addr(self, ex);
		ibv_wr_set_sge(ex, self->mr->lkey, (uintptr_t)self->buf, 8);
	}
	ret = ibv_wr_complete(ex);
	if (srx_test_is_srx()) {
		EXPECT_EQ(ENOMEM, ret) TH_LOG("%u WRs: %s",
					      attr.cap.max_send_wr + 1,
					      strerror(ret));
	} else {
		EXPECT_NE(0, ret);
	}

	if (srx_test_is_srx()) {
		/* A setter before any builder. */
		ibv_wr_start(ex);
		ibv_wr_set_sge(ex, self->mr->lkey, (uintptr_t)self->buf, 8);
		ex->wr_id = 600;
		ibv_wr_send(ex);
		ibv_wr_set_sge(ex, self->mr->lkey, (uintptr_t)self->buf, 8);
		ret = ibv_wr_complete(ex);
		EXPECT_EQ(EINVAL, ret) TH_LOG("setter first: %s",
					      strerror(ret));

		/* A UD address without an AH (or on a connected QP). */
		ibv_wr_start(ex);
		ex->wr_id = 700;
		ibv_wr_send(ex);
		ibv_wr_set_ud_addr(ex, NULL, 1, 1);
		ret = ibv_wr_complete(ex);
		EXPECT_EQ(EINVAL, ret) TH_LOG("UD address: %s", strerror(ret));

		/* Inline data for an operation without a payload to give. */
		if (variant->type == IBV_QPT_RC) {
			ibv_wr_start(ex);
			ex->wr_id = 800;
			ibv_wr_rdma_read(ex, self->mr->rkey,
					 (uintptr_t)self->buf + 4096);
			ibv_wr_set_inline_data(ex, inl, 8);
			ret = ibv_wr_complete(ex);
			EXPECT_EQ(EINVAL, ret) TH_LOG("inline READ: %s",
						      strerror(ret));
		}
	}

	/* The queue is whole again: exactly max_send_wr fit in one batch. */
	expect_flushed(_metadata, self->scq, qp->qp_num, want, n,
		       "batches before the faults");
	n = 0;
	ibv_wr_start(ex);
	for (i = 0; i < attr.cap.max_send_wr; i++) {
		ex->wr_id = 900 + i;
		if (variant->type == IBV_QPT_UD) {
			ibv_wr_send(ex);
			wr_ud_addr(self, ex);
		} else {
			ibv_wr_rdma_write(ex, self->mr->rkey,
					  (uintptr_t)self->buf + 4096);
		}
		ibv_wr_set_sge(ex, self->mr->lkey, (uintptr_t)self->buf, 8);
		want[n].wr_id = 900 + i;
		want[n++].opcode = variant->type == IBV_QPT_UD ?
				   IBV_WC_SEND : IBV_WC_RDMA_WRITE;
	}
	EXPECT_EQ(0, ibv_wr_complete(ex));
	expect_flushed(_metadata, self->scq, qp->qp_num, want, n,
		       "a full batch");
	EXPECT_EQ(0, ibv_destroy_qp(qp));
}

/* ------------------------------------------------------------------ */
/* What a device does not support                                     */
/* ------------------------------------------------------------------ */

FIXTURE(dev) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

FIXTURE_SETUP(dev)
{
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->cq = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/*
 * srx has no XRC, raw packet or driver-specific QPs: EOPNOTSUPP. It has
 * basic SRQs, with RC QPs on them, whose receive sizes are ignored
 * (srq_test.sh has the rest). Other
 * devices may have some: their answer is logged.
 */
TEST_F(dev, unsupported_objects)
{
	static const struct {
		const char *name;
		enum ibv_qp_type type;
	} types[] = {
		{ "RAW_PACKET", IBV_QPT_RAW_PACKET },
		{ "XRC_SEND", IBV_QPT_XRC_SEND },
		{ "DRIVER", IBV_QPT_DRIVER },
	};
	struct ibv_srq_init_attr sattr = {
		.attr = { .max_wr = 16, .max_sge = 1 },
	};
	struct ibv_xrcd_init_attr xattr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	unsigned int i;

	srq = ibv_create_srq(self->pd, &sattr);
	if (srx_test_is_srx()) {
		EXPECT_NE(NULL, srq) TH_LOG("SRQ: %s", strerror(errno));
	} else {
		TH_LOG("SRQ: %s", srq ? "supported" : strerror(errno));
	}
	if (srq) {
		struct ibv_qp_init_attr qattr = {
			.send_cq = self->cq, .recv_cq = self->cq, .srq = srq,
			.qp_type = IBV_QPT_RC,
			/* An RQ's sizes, ignored with an SRQ (as mlx5 does). */
			.cap = { .max_send_wr = 1, .max_send_sge = 1,
				 .max_recv_wr = 1u << 30,
				 .max_recv_sge = 1000 },
		};
		struct ibv_qp *qp = ibv_create_qp(self->pd, &qattr);

		if (srx_test_is_srx()) {
			EXPECT_NE(NULL, qp) TH_LOG("RC QP on an SRQ: %s",
						   strerror(errno));
			EXPECT_EQ(0u, qattr.cap.max_recv_wr);
			EXPECT_EQ(0u, qattr.cap.max_recv_sge);
		} else {
			TH_LOG("RC QP on an SRQ: %s",
			       qp ? "supported" : strerror(errno));
		}
		if (qp)
			ibv_destroy_qp(qp);
		EXPECT_EQ(0, ibv_destroy_srq(srq));
	}

	xrcd = ibv_open_xrcd(self->ctx, &xattr);
	if (srx_test_is_srx()) {
		EXPECT_EQ(NULL, xrcd);
		EXPECT_EQ(EOPNOTSUPP, errno) TH_LOG("XRCD: %s", strerror(errno));
	} else {
		TH_LOG("XRC domain: %s", xrcd ? "supported" : strerror(errno));
	}
	if (xrcd) {
		EXPECT_EQ(0, ibv_close_xrcd(xrcd));
	}

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct ibv_qp_init_attr qattr = {
			.send_cq = self->cq, .recv_cq = self->cq,
			.qp_type = types[i].type,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct ibv_qp *qp = ibv_create_qp(self->pd, &qattr);

		if (srx_test_is_srx()) {
			EXPECT_EQ(NULL, qp) TH_LOG("%s QP created", types[i].name);
			EXPECT_EQ(EOPNOTSUPP, errno)
				TH_LOG("%s QP: %s", types[i].name,
				       strerror(errno));
		} else {
			TH_LOG("%s QP: %s", types[i].name,
			       qp ? "supported" : strerror(errno));
		}
		if (qp)
			ibv_destroy_qp(qp);
	}
}

/* ------------------------------------------------------------------ */
/* Protection domains and memory regions                              */
/* ------------------------------------------------------------------ */

TEST_F(dev, pd_alloc_dealloc)
{
	const char *dev = srx_test_dev_name();
	struct ibv_pd *pds[64];
	long base = srx_res_count(dev, "pd");
	int i, j;

	ASSERT_LE(0, base);
	for (i = 0; i < 64; i++) {
		pds[i] = ibv_alloc_pd(self->ctx);
		ASSERT_NE(NULL, pds[i]);
		for (j = 0; j < i; j++) {
			ASSERT_NE(pds[j]->handle, pds[i]->handle);
		}
	}
	EXPECT_EQ(base + 64, srx_res_count(dev, "pd"));
	for (i = 0; i < 64; i++) {
		ASSERT_EQ(0, ibv_dealloc_pd(pds[i]));
	}
	EXPECT_EQ(base, srx_res_count(dev, "pd"));
}

/*
 * ibv_reg_mr(3): remote write and remote atomic need local write
 * (EINVAL). Remote atomic needs atomics and memory window binding needs
 * memory windows, as the device reports them; a device that reports
 * neither refuses them with EOPNOTSUPP, as 6.12's core does for
 * on-demand paging (ib_check_mr_access()). Every other combination
 * registers.
 */
TEST_F(dev, mr_access_flags)
{
	struct ibv_device_attr dattr;
	int no_atomic, no_mw;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &dattr));
	no_atomic = dattr.atomic_cap == IBV_ATOMIC_NONE ? EOPNOTSUPP : 0;
	no_mw = dattr.device_cap_flags & IBV_DEVICE_MEM_WINDOW ? 0 : EOPNOTSUPP;

	const struct {
		int access;
		int err;
	} cases[] = {
		{ 0, 0 },
		{ IBV_ACCESS_LOCAL_WRITE, 0 },
		{ IBV_ACCESS_REMOTE_READ, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ, 0 },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, no_atomic },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC, no_atomic },
		{ IBV_ACCESS_MW_BIND, no_mw },
		{ IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, no_mw },
		{ IBV_ACCESS_REMOTE_WRITE, EINVAL },
		{ IBV_ACCESS_REMOTE_ATOMIC, EINVAL },
		{ IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, EINVAL },
	};
	size_t len = 3 * 4096 + 100;
	char *buf = malloc(len);
	unsigned int i;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibv_mr *mr = ibv_reg_mr(self->pd, buf + 10, len - 10,
					       cases[i].access);

		if (cases[i].err) {
			EXPECT_EQ(NULL, mr) TH_LOG("access %#x registered",
						   cases[i].access);
			EXPECT_EQ(cases[i].err, errno)
				TH_LOG("access %#x: %s", cases[i].access,
				       strerror(errno));
		} else {
			EXPECT_NE(NULL, mr) TH_LOG("access %#x: %s",
						   cases[i].access,
						   strerror(errno));
		}
		if (!mr)
			continue;
		EXPECT_EQ(buf + 10, mr->addr);
		EXPECT_EQ(len - 10, mr->length);
		EXPECT_EQ(self->pd, mr->pd);
		EXPECT_EQ(0, ibv_dereg_mr(mr));
	}
	free(buf);
}

TEST_F(dev, mr_keys_distinct)
{
	struct ibv_mr *mrs[64];
	char *buf = malloc(64 * 4096);
	int i, j;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < 64; i++) {
		mrs[i] = ibv_reg_mr(self->pd, buf + i * 4096, 4096,
				    IBV_ACCESS_LOCAL_WRITE |
				    IBV_ACCESS_REMOTE_WRITE);
		ASSERT_NE(NULL, mrs[i]);
		for (j = 0; j < i; j++) {
			ASSERT_NE(mrs[j]->lkey, mrs[i]->lkey);
			ASSERT_NE(mrs[j]->rkey, mrs[i]->rkey);
		}
	}
	/* The same memory twice is two regions with two keys. */
	mrs[0] = (ibv_dereg_mr(mrs[0]), ibv_reg_mr(self->pd, buf + 4096, 4096,
						   IBV_ACCESS_LOCAL_WRITE));
	ASSERT_NE(NULL, mrs[0]);
	EXPECT_NE(mrs[1]->lkey, mrs[0]->lkey);
	for (i = 0; i < 64; i++) {
		EXPECT_EQ(0, ibv_dereg_mr(mrs[i]));
	}
	free(buf);
}

TEST_F(dev, mr_bad_address)
{
	size_t len = 16 * 4096;
	struct ibv_mr *mr;
	void *ro, *gone;

	mr = ibv_reg_mr(self->pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr) TH_LOG("address 0 registered");
	if (mr)
		ibv_dereg_mr(mr);

	gone = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, gone);
	ASSERT_EQ(0, munmap(gone, len));
	mr = ibv_reg_mr(self->pd, gone, len, 0);
	EXPECT_EQ(NULL, mr) TH_LOG("unmapped memory registered");
	if (mr)
		ibv_dereg_mr(mr);
	else {
		EXPECT_EQ(EFAULT, errno) TH_LOG("unmapped: %s", strerror(errno));
	}

	/* Read-only memory: only without local write. */
	ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	mr = ibv_reg_mr(self->pd, ro, len, IBV_ACCESS_LOCAL_WRITE);
	EXPECT_EQ(NULL, mr) TH_LOG("read-only memory registered writable");
	if (mr)
		ibv_dereg_mr(mr);
	mr = ibv_reg_mr(self->pd, ro, len, 0);
	EXPECT_NE(NULL, mr) TH_LOG("read-only memory: %s", strerror(errno));
	if (mr) {
		EXPECT_EQ(0, ibv_dereg_mr(mr));
	}
	munmap(ro, len);
}

/* A PD in use cannot go; dereg of its MR (and QP destroy) frees it. */
TEST_F(dev, dealloc_pd_in_use)
{
	struct ibv_qp_init_attr qattr = {
		.send_cq = self->cq, .recv_cq = self->cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	char *buf = malloc(4096);
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	struct ibv_qp *qp;

	ASSERT_NE(NULL, buf);
	pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd);
	mr = ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	qp = ibv_create_qp(pd, &qattr);
	ASSERT_NE(NULL, qp);

	EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd));
	ASSERT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd));
	ASSERT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	free(buf);
}

TEST_HARNESS_MAIN
