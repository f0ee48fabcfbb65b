// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rc_errors - the RC transport's error paths and one-sided operations,
 * checked end to end with two RC QPs of one process, for
 * selftests/rc_engine_test.sh.
 *
 *   rc_errors -d DEVICE -g GID_INDEX [-D DEVICE2 -G GID_INDEX2] [CASE...]
 *
 * QP a is on DEVICE, QP b on DEVICE2 (default: the same device, so the
 * packets go through loopback). Each case connects a fresh pair and
 * checks the work completions the verbs man pages promise:
 *
 *   rnr_exceeded   a SEND to b, which has no receive posted, rnr_retry 1:
 *                  RNR_RETRY_EXC_ERR, then the next WQE is flushed
 *   rnr_recover    the same with rnr_retry 7 (infinite): the receive
 *                  posted 200 ms later gets the message
 *   rem_access     RDMA WRITE with a wrong rkey, then past the end of the
 *                  MR: REM_ACCESS_ERR; the target buffer is untouched
 *   rem_inv_req    a SEND longer than b's receive buffer: a gets
 *                  REM_INV_REQ_ERR, b's receive LOC_LEN_ERR
 *   local_inv_user a LOCAL_INV of a's own (user) MR: LOC_QP_OP_ERR, then
 *                  the next WQE is flushed
 *   send_inv_user  a SEND with Invalidate of b's user MR: b's receive
 *                  and a's SEND complete REM_INV_REQ_ERR (srx b only)
 *   retry_exceeded a QP connected to a QPN nobody has: RETRY_EXC_ERR
 *                  within the time timeout and retry_cnt allow
 *   read_write     100 KiB WRITE and READ back at path MTU 256, with a
 *                  WRITE with immediate: bytes compared
 *   zero_length    a SEND and a WRITE with immediate without SGEs: the
 *                  receives complete with byte_len 0 (and the immediate)
 *   atomics        FETCH_AND_ADD and CMP_AND_SWP (hit and miss): the
 *                  original values returned and the memory after
 *   sqd_resume     WRITEs, RTS -> SQD (one WRITE posted there) -> RTS,
 *                  more WRITEs: every one completes and its bytes land
 *                  (back from SQD the requester goes on at its PSN)
 *   too_long       the port's max_msg_sz is 1 GiB, and a SEND one byte
 *                  longer (two SGEs, no memory behind the second GiB: the
 *                  length is checked first) completes with LOC_LEN_ERR,
 *                  then the next WQE is flushed
 *   lost_ack_no_timeout
 *                  a QP with timeout 0 (no retransmission) whose last
 *                  ACK is lost: the next post still goes out, and its
 *                  ACK completes both WRITEs. Needs RC_ERRORS_DROP and
 *                  RC_ERRORS_PASS, shell commands that make b's packets
 *                  drop and pass (two devices only: b's ACKs alone)
 *   wr_batch       one ibv_wr_* batch of every RC operation and every
 *                  data setter (inline and SGE lists): bytes, immediates
 *                  and atomics' results compared, completions in order
 *   query_psn      ibv_query_qp()'s sq_psn and rq_psn follow the
 *                  traffic (WRITEs of 1 and 3 packets, a 3-packet READ),
 *                  and stay there when the QP moves to ERR
 *   atomic_write   ibv_wr_atomic_write() after a WRITE: the 8 bytes
 *                  posted land, and complete as IBV_WC_ATOMIC_WRITE;
 *                  misaligned: REM_INV_REQ_ERR; wrong rkey:
 *                  REM_ACCESS_ERR; the target untouched by both
 *   atomic_write_dup
 *                  b's answer to an ATOMIC WRITE is lost and b's CPU
 *                  changes the target: a's retry completes without
 *                  writing again (RC_ERRORS_DROP/_PASS, two devices)
 *   dup_ack_psn    b, the requester here, posts WRITE, READ, WRITE,
 *                  FETCH_AND_ADD; a's answers are lost until all four
 *                  executed, so b's retries reach a as duplicates: b
 *                  gets the READ's bytes and the value the FETCH_AND_ADD
 *                  found, a's target is added to once (RC_ERRORS_DROP
 *                  and _PASS drop a's packets; two devices)
 *   read_then_nak  a 64-packet READ at path MTU 256, then at once a
 *                  WRITE with a wrong rkey: the READ completes with its
 *                  bytes, then the WRITE with REM_ACCESS_ERR (the NAK
 *                  must not overtake the READ's last responses)
 *   read_then_nak_mid
 *                  the same with a 16-packet SEND into a 1 KiB receive:
 *                  the READ's bytes, then REM_INV_REQ_ERR (the NAK names
 *                  the SEND's fifth packet), b's receive LOC_LEN_ERR
 *   rereg          a thread of b re-registers an MR (ibv_rereg_mr) over
 *                  and over while a's 128 WRITEs of 8 KiB land in it:
 *                  all complete, the bytes land, the key stays; a rereg
 *                  refused (PROT_NONE memory: EFAULT; ZERO_BASED:
 *                  EOPNOTSUPP) leaves the MR working; CHANGE_TRANSLATION
 *                  moves the key's WRITEs to the new buffer, the old one
 *                  untouched; a read-only MR made writable takes WRITEs;
 *                  after CHANGE_PD the key is refused (REM_ACCESS_ERR),
 *                  and the new PD is busy until the MR goes
 *   reset_reuse    a's WRITE fails (wrong rkey); both QPs go through
 *                  RESET and connect again on the same PSNs, as
 *                  rdma-core's test_mr.py restates its QPs: 10 SENDs
 *                  then complete on both sides
 *   mw_type1       a type 1 window on b (ibv_bind_mw()): its key moves
 *                  on, a's WRITE and READ through it reach its page of
 *                  the MR alone; dereg_mr of the MR is refused (srx
 *                  EBUSY, rxe EINVAL); outside the window REM_ACCESS_ERR
 *                  (srx b only: rxe checks the MR's range); unbound
 *                  (length 0), its key REM_ACCESS_ERR
 *   mw_type2       a type 2 window bound by b's BIND_MW: a's WRITE lands;
 *                  after b's LOCAL_INV REM_ACCESS_ERR; bound again, it
 *                  answers its QP alone (another of b's PD:
 *                  REM_ACCESS_ERR); a's SEND_WITH_INV: b's receive has
 *                  WITH_INV and the key, which is refused after; once
 *                  more with ibv_wr_bind_mw() and ibv_wr_local_inv()
 *   mw_errors      MW_BIND_ERR for a bound type 2 window, length 0, an
 *                  MR without MW_BIND, REMOTE_WRITE over an MR without
 *                  LOCAL_WRITE, past the MR's end; alloc_mw type 3:
 *                  EINVAL; LOCAL_INV of a type 1 window: LOC_QP_OP_ERR,
 *                  the window still works
 *   post_stress    4 threads post 20000 RDMA WRITEs to one QP while a
 *                  fifth polls: every one completes, none is left unsent
 *                  however the send engine goes idle and wakes (the
 *                  doorbell handshake of srx-abi.h, K6/U6)
 *
 * Prints TAP ("ok N case"); exit status 0 if every case passed, 1 if one
 * failed, 2 on a usage or setup error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_qp.h"

#define BUF_SIZE	(256 * 1024)	/* read_write uses 200 KiB */

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	int gid_index;
	union ibv_gid gid;
};

struct pair {
	struct ibv_qp *a, *b;
};

static struct side sa, sb;
static int failures;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		printf("# %s:%d: ", __func__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		return false;						\
	}								\
} while (0)

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int side_open(struct side *s, const char *name, int gid_index)
{
	s->ctx = rc_open_device(name);
	if (!s->ctx)
		return -1;
	s->gid_index = gid_index;
	if (ibv_query_gid(s->ctx, 1, gid_index, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	s->cq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, BUF_SIZE);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_SIZE, RC_ACCESS_ALL);
	return s->mr ? 0 : -1;
}

/*
 * An RC QP of @s in INIT; with @wr_ops, through ibv_create_qp_ex() with
 * those send_ops_flags, for the ibv_wr_* API.
 */
static struct ibv_qp *qp_new_ops(struct side *s, uint64_t wr_ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .pd = s->pd,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = wr_ops ? 2 : 1, .max_recv_sge = 1,
			 .max_inline_data = wr_ops ? 64 : 0 },
		.send_ops_flags = wr_ops,
	};

	return rc_qp_init(s->ctx, &ia);
}

static struct ibv_qp *qp_new(struct side *s)
{
	return qp_new_ops(s, 0);
}

struct conn {
	enum ibv_mtu mtu;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
};

/* @qp of @s to RTS, connected to @dqpn at @peer's GID; PSNs 0x123. */
static int qp_connect(struct ibv_qp *qp, struct side *s, struct side *peer,
		      uint32_t dqpn, const struct conn *c)
{
	struct rc_path path = {
		.sgid_index = s->gid_index, .dgid = peer->gid, .dqpn = dqpn,
		.mtu = c->mtu, .sq_psn = 0x123, .rq_psn = 0x123,
		.rd_atomic = 4, .timeout = c->timeout,
		.retry_cnt = c->retry_cnt, .rnr_retry = c->rnr_retry,
		.min_rnr_timer = c->min_rnr_timer,
	};

	return rc_qp_rts(qp, &path);
}

static const struct conn conn_default = {
	.mtu = IBV_MTU_1024, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
	.min_rnr_timer = 1,
};

static bool pair_up(struct pair *p, const struct conn *ca,
		    const struct conn *cb)
{
	p->a = qp_new(&sa);
	p->b = qp_new(&sb);
	CHECK(p->a && p->b, "create: %s", strerror(errno));
	CHECK(!qp_connect(p->a, &sa, &sb, p->b->qp_num, ca), "connect a");
	CHECK(!qp_connect(p->b, &sb, &sa, p->a->qp_num, cb), "connect b");
	return true;
}

static void pair_down(struct pair *p)
{
	struct ibv_wc wc[16];

	if (p->a)
		ibv_destroy_qp(p->a);
	if (p->b)
		ibv_destroy_qp(p->b);
	p->a = p->b = NULL;
	/* Leftover completions of the destroyed QPs. */
	while (ibv_poll_cq(sa.cq, 16, wc) > 0)
		;
	while (ibv_poll_cq(sb.cq, 16, wc) > 0)
		;
}

/* The next completion of @qp on @s's CQ within @ms. */
static bool wait_wc(struct side *s, struct ibv_qp *qp, struct ibv_wc *wc,
		    int ms)
{
	double end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(s->cq, 1, wc);

		if (n < 0)
			return false;
		if (n == 1 && wc->qp_num == qp->qp_num)
			return true;
		if (n == 0)
			usleep(100);
	} while (now_ms() < end);
	return false;
}

static int post_send(struct ibv_qp *qp, enum ibv_wr_opcode op, void *addr,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		     uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.imm_data = htonl(0x5a5a0000u | (uint32_t)wr_id);
	return ibv_post_send(qp, &wr, &bad);
}

static int post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode op, void *local,
		       uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
		       uint64_t swap, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 8,
			       .lkey = sa.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return ibv_post_send(qp, &wr, &bad);
}

static int post_recv(struct ibv_qp *qp, void *addr, uint32_t len,
		     uint32_t lkey, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* @status on a's send of @wr_id, then the next WQE flushed. */
static bool expect_error_then_flush(struct pair *p, enum ibv_wc_status st,
				    int ms)
{
	struct ibv_wc wc;

	CHECK(wait_wc(&sa, p->a, &wc, ms), "no completion in %d ms", ms);
	CHECK(wc.wr_id == 1 && wc.status == st, "wr_id %llu: %s, wanted %s",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	      ibv_wc_status_str(st));
	CHECK(wait_wc(&sa, p->a, &wc, 2000), "the second WQE: no completion");
	CHECK(wc.wr_id == 2 && wc.status == IBV_WC_WR_FLUSH_ERR,
	      "the second WQE: %s", ibv_wc_status_str(wc.status));
	return true;
}

static bool t_rnr_exceeded(struct pair *p)
{
	struct conn ca = conn_default;

	ca.rnr_retry = 1;
	CHECK(pair_up(p, &ca, &conn_default), "pair");
	CHECK(!post_send(p->a, IBV_WR_SEND, sa.buf, 64, sa.mr->lkey, 0, 0, 1) &&
	      !post_send(p->a, IBV_WR_SEND, sa.buf, 64, sa.mr->lkey, 0, 0, 2),
	      "post");
	return expect_error_then_flush(p, IBV_WC_RNR_RETRY_EXC_ERR, 5000);
}

static bool t_rnr_recover(struct pair *p)
{
	struct ibv_wc wc;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	memset(sa.buf, 0xa5, 4096);
	memset(sb.buf, 0, 4096);
	CHECK(!post_send(p->a, IBV_WR_SEND, sa.buf, 3000, sa.mr->lkey, 0, 0, 1),
	      "post");
	usleep(200 * 1000);
	CHECK(!post_recv(p->b, sb.buf, 4096, sb.mr->lkey, 7), "recv");
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.status == IBV_WC_SUCCESS,
	      "send: %s", ibv_wc_status_str(wc.status));
	CHECK(wait_wc(&sb, p->b, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 7 && wc.byte_len == 3000 && wc.opcode == IBV_WC_RECV,
	      "recv: %s len %u", ibv_wc_status_str(wc.status), wc.byte_len);
	CHECK(sb.buf[0] == 0xa5 && sb.buf[2999] == 0xa5 && sb.buf[3000] == 0,
	      "data");
	return true;
}

static bool t_rem_access(struct pair *p)
{
	uint8_t *dst = sb.buf + 8192;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	memset(dst, 0x11, 4096);
	memset(sa.buf, 0x22, 4096);
	CHECK(!post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 4096, sa.mr->lkey,
			 (uintptr_t)dst, sb.mr->rkey ^ 0x80, 1) &&
	      !post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 16, sa.mr->lkey,
			 (uintptr_t)dst, sb.mr->rkey, 2), "post");
	if (!expect_error_then_flush(p, IBV_WC_REM_ACCESS_ERR, 5000))
		return false;
	CHECK(dst[0] == 0x11 && dst[4095] == 0x11, "wrong rkey wrote memory");
	pair_down(p);

	/* Past the end of the MR, with the right key. */
	CHECK(pair_up(p, &conn_default, &conn_default), "pair 2");
	CHECK(!post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 4096, sa.mr->lkey,
			 (uintptr_t)sb.buf + BUF_SIZE - 100, sb.mr->rkey, 1) &&
	      !post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 16, sa.mr->lkey,
			 (uintptr_t)dst, sb.mr->rkey, 2), "post 2");
	if (!expect_error_then_flush(p, IBV_WC_REM_ACCESS_ERR, 5000))
		return false;
	CHECK(sb.buf[BUF_SIZE - 100] != 0x22, "out of bounds wrote memory");
	return true;
}

static bool t_rem_inv_req(struct pair *p)
{
	struct ibv_wc wc;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	CHECK(!post_recv(p->b, sb.buf, 100, sb.mr->lkey, 9), "recv");
	CHECK(!post_send(p->a, IBV_WR_SEND, sa.buf, 2000, sa.mr->lkey, 0, 0, 1) &&
	      !post_send(p->a, IBV_WR_SEND, sa.buf, 10, sa.mr->lkey, 0, 0, 2),
	      "post");
	if (!expect_error_then_flush(p, IBV_WC_REM_INV_REQ_ERR, 5000))
		return false;
	CHECK(wait_wc(&sb, p->b, &wc, 2000), "b: no completion");
	CHECK(wc.wr_id == 9 && wc.status == IBV_WC_LOC_LEN_ERR, "b: %s",
	      ibv_wc_status_str(wc.status));
	return true;
}

/* A LOCAL_INV or SEND_WITH_INV of @rkey; the latter sends @len bytes. */
static int post_inv(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t rkey,
		    void *addr, uint32_t len, uint32_t lkey, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = len ? 1 : 0,
		.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = rkey,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

/*
 * A process has no fast-registration MR: a LOCAL_INV of its own MR's
 * key completes LOC_QP_OP_ERR (as rxe's rxe_invalidate_mr() refuses a
 * user MR), and the next WQE is flushed.
 */
static bool t_local_inv_user(struct pair *p)
{
	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	CHECK(!post_inv(p->a, IBV_WR_LOCAL_INV, sa.mr->rkey, NULL, 0, 0, 1) &&
	      !post_send(p->a, IBV_WR_SEND, sa.buf, 10, sa.mr->lkey, 0, 0, 2),
	      "post");
	return expect_error_then_flush(p, IBV_WC_LOC_QP_OP_ERR, 5000);
}

/*
 * A SEND with Invalidate of b's (user) MR key: b's receive completes
 * REM_INV_REQ_ERR and b NAKs, so a's SEND completes REM_INV_REQ_ERR and
 * the next WQE is flushed. srx receivers only (rxe's class J sends no
 * NAK: the sender would retry until RETRY_EXC_ERR).
 */
static bool t_send_inv_user(struct pair *p)
{
	struct ibv_wc wc;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	CHECK(!post_recv(p->b, sb.buf, 100, sb.mr->lkey, 9), "recv");
	CHECK(!post_inv(p->a, IBV_WR_SEND_WITH_INV, sb.mr->rkey, sa.buf, 10,
			sa.mr->lkey, 1) &&
	      !post_send(p->a, IBV_WR_SEND, sa.buf, 10, sa.mr->lkey, 0, 0, 2),
	      "post");
	if (!expect_error_then_flush(p, IBV_WC_REM_INV_REQ_ERR, 5000))
		return false;
	CHECK(wait_wc(&sb, p->b, &wc, 2000), "b: no completion");
	CHECK(wc.wr_id == 9 && wc.status == IBV_WC_REM_INV_REQ_ERR, "b: %s",
	      ibv_wc_status_str(wc.status));
	return true;
}

static bool t_retry_exceeded(struct pair *p)
{
	struct conn ca = conn_default;
	double t0, dt;

	/* 4.096 us * 2^10 = 4.2 ms per try, 3 tries. */
	ca.timeout = 10;
	ca.retry_cnt = 2;
	p->a = qp_new(&sa);
	CHECK(p->a, "create");
	CHECK(!qp_connect(p->a, &sa, &sb, 0xfffff0, &ca), "connect");
	t0 = now_ms();
	CHECK(!post_send(p->a, IBV_WR_SEND, sa.buf, 64, sa.mr->lkey, 0, 0, 1) &&
	      !post_send(p->a, IBV_WR_SEND, sa.buf, 64, sa.mr->lkey, 0, 0, 2),
	      "post");
	if (!expect_error_then_flush(p, IBV_WC_RETRY_EXC_ERR, 10000))
		return false;
	dt = now_ms() - t0;
	printf("# RETRY_EXC_ERR after %.0f ms\n", dt);
	/* 3 x 4.2 ms, with a jiffy or two each and a slow guest: < 5 s. */
	CHECK(dt < 5000, "took %.0f ms", dt);
	return true;
}

static bool t_read_write(struct pair *p)
{
	const uint32_t len = 100 * 1024;
	struct conn c = conn_default;
	struct ibv_wc wc;
	uint32_t i;

	c.mtu = IBV_MTU_256;
	CHECK(pair_up(p, &c, &c), "pair");
	for (i = 0; i < len; i++)
		sa.buf[i] = (uint8_t)(i * 7 + 3);
	memset(sb.buf, 0, BUF_SIZE);
	CHECK(!post_recv(p->b, sb.buf + BUF_SIZE - 16, 16, sb.mr->lkey, 5),
	      "recv");
	CHECK(!post_send(p->a, IBV_WR_RDMA_WRITE_WITH_IMM, sa.buf, len,
			 sa.mr->lkey, (uintptr_t)sb.buf + 8, sb.mr->rkey, 3),
	      "write");
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_WRITE, "write: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(wait_wc(&sb, p->b, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      ntohl(wc.imm_data) == 0x5a5a0003u && wc.byte_len == len,
	      "write imm: %s op %d len %u", ibv_wc_status_str(wc.status),
	      wc.opcode, wc.byte_len);
	CHECK(!memcmp(sb.buf + 8, sa.buf, len) && sb.buf[7] == 0 &&
	      sb.buf[8 + len] == 0, "written bytes differ");

	memset(sa.buf + len, 0, len);
	CHECK(!post_send(p->a, IBV_WR_RDMA_READ, sa.buf + len, len, sa.mr->lkey,
			 (uintptr_t)sb.buf + 8, sb.mr->rkey, 4), "read");
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RDMA_READ, "read: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(!memcmp(sa.buf + len, sa.buf, len), "read bytes differ");
	return true;
}

static bool t_zero_length(struct pair *p)
{
	struct ibv_send_wr wr = { .num_sge = 0,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	CHECK(!post_recv(p->b, sb.buf, 64, sb.mr->lkey, 1) &&
	      !post_recv(p->b, sb.buf, 64, sb.mr->lkey, 2), "recv");
	wr.wr_id = 11;
	wr.opcode = IBV_WR_SEND;
	CHECK(!ibv_post_send(p->a, &wr, &bad), "send");
	wr.wr_id = 12;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htonl(0xfeed);
	wr.wr.rdma.remote_addr = (uintptr_t)sb.buf;
	wr.wr.rdma.rkey = sb.mr->rkey;
	CHECK(!ibv_post_send(p->a, &wr, &bad), "write");
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.wr_id == 11 &&
	      wc.status == IBV_WC_SUCCESS, "send: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.wr_id == 12 &&
	      wc.status == IBV_WC_SUCCESS, "write: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(wait_wc(&sb, p->b, &wc, 5000) && wc.wr_id == 1 &&
	      wc.status == IBV_WC_SUCCESS && wc.byte_len == 0 &&
	      wc.opcode == IBV_WC_RECV, "recv 1: %s len %u",
	      ibv_wc_status_str(wc.status), wc.byte_len);
	CHECK(wait_wc(&sb, p->b, &wc, 5000) && wc.wr_id == 2 &&
	      wc.status == IBV_WC_SUCCESS && wc.byte_len == 0 &&
	      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      ntohl(wc.imm_data) == 0xfeed, "recv 2: %s len %u op %d",
	      ibv_wc_status_str(wc.status), wc.byte_len, wc.opcode);
	return true;
}

static bool t_atomics(struct pair *p)
{
	uint64_t *target = (uint64_t *)(sb.buf + 64);
	uint64_t *orig = (uint64_t *)(sa.buf + 128);
	struct ibv_wc wc;
	int i;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	*target = 1000;
	for (i = 0; i < 10; i++) {
		*orig = 0;
		CHECK(!post_atomic(p->a, IBV_WR_ATOMIC_FETCH_AND_ADD, orig,
				   (uintptr_t)target, sb.mr->rkey, 5, 0, 10 + i),
		      "fadd");
		CHECK(wait_wc(&sa, p->a, &wc, 5000) &&
		      wc.status == IBV_WC_SUCCESS &&
		      wc.opcode == IBV_WC_FETCH_ADD, "fadd: %s",
		      ibv_wc_status_str(wc.status));
		CHECK(*orig == 1000 + 5u * i, "fadd %d returned %llu", i,
		      (unsigned long long)*orig);
	}
	CHECK(*target == 1050, "after fadd: %llu", (unsigned long long)*target);
	CHECK(!post_atomic(p->a, IBV_WR_ATOMIC_CMP_AND_SWP, orig,
			   (uintptr_t)target, sb.mr->rkey, 1050, 77, 30), "cas");
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_COMP_SWAP, "cas: %s",
	      ibv_wc_status_str(wc.status));
	CHECK(*orig == 1050 && *target == 77, "cas hit: %llu %llu",
	      (unsigned long long)*orig, (unsigned long long)*target);
	CHECK(!post_atomic(p->a, IBV_WR_ATOMIC_CMP_AND_SWP, orig,
			   (uintptr_t)target, sb.mr->rkey, 1, 99, 31), "cas 2");
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.status == IBV_WC_SUCCESS,
	      "cas 2: %s", ibv_wc_status_str(wc.status));
	CHECK(*orig == 77 && *target == 77, "cas miss: %llu %llu",
	      (unsigned long long)*orig, (unsigned long long)*target);
	/* Misaligned: invalid request. */
	CHECK(!post_atomic(p->a, IBV_WR_ATOMIC_FETCH_AND_ADD, orig,
			   (uintptr_t)target + 4, sb.mr->rkey, 1, 0, 1) &&
	      !post_atomic(p->a, IBV_WR_ATOMIC_FETCH_AND_ADD, orig,
			   (uintptr_t)target, sb.mr->rkey, 1, 0, 2), "misaligned");
	return expect_error_then_flush(p, IBV_WC_REM_INV_REQ_ERR, 5000);
}

/* WRITE @n bytes of pattern @seed from a's buffer at @off to b's. */
static bool sqd_write(struct pair *p, uint32_t off, uint32_t n, int seed,
		      uint64_t wr_id)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		sa.buf[off + i] = (uint8_t)(i * 13 + seed);
	return !post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf + off, n,
			  sa.mr->lkey, (uintptr_t)sb.buf + off, sb.mr->rkey,
			  wr_id);
}

static bool t_sqd_resume(struct pair *p)
{
	const uint32_t n = 4096, rounds = 8;
	struct ibv_qp_attr attr = {};
	struct ibv_wc wc;
	uint32_t k;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	memset(sb.buf, 0, BUF_SIZE);
	for (k = 0; k < rounds; k++)
		CHECK(sqd_write(p, k * n, n, 1, k), "write %u", k);
	for (k = 0; k < rounds; k++)
		CHECK(wait_wc(&sa, p->a, &wc, 5000) &&
		      wc.status == IBV_WC_SUCCESS && wc.wr_id == k,
		      "write %u before SQD: %s", k,
		      ibv_wc_status_str(wc.status));

	attr.qp_state = IBV_QPS_SQD;
	CHECK(!ibv_modify_qp(p->a, &attr, IBV_QP_STATE), "to SQD: %s",
	      strerror(errno));
	/* Posted in SQD: it waits for RTS (IBTA 10.3.1.1, SQD). */
	CHECK(sqd_write(p, rounds * n, n, 2, rounds), "write in SQD");
	attr.qp_state = IBV_QPS_RTS;
	CHECK(!ibv_modify_qp(p->a, &attr, IBV_QP_STATE), "back to RTS: %s",
	      strerror(errno));
	for (k = rounds + 1; k < 2 * rounds; k++)
		CHECK(sqd_write(p, k * n, n, 2, k), "write %u", k);
	for (k = rounds; k < 2 * rounds; k++)
		CHECK(wait_wc(&sa, p->a, &wc, 5000) &&
		      wc.status == IBV_WC_SUCCESS && wc.wr_id == k,
		      "write %u after SQD: %s (wr_id %llu)", k,
		      ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id);
	/* Each must have been executed, not answered as a duplicate. */
	CHECK(!memcmp(sb.buf, sa.buf, 2 * rounds * n),
	      "the bytes written after SQD did not land");
	return true;
}

#define STRESS_THREADS	4
#define STRESS_EACH	5000

struct stress {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint8_t *remote;
	int failed;
};

static void *stress_post(void *arg)
{
	struct stress *st = arg;
	int i, ret;

	for (i = 0; i < STRESS_EACH; i++) {
		do {
			ret = post_send(st->qp, IBV_WR_RDMA_WRITE, sa.buf, 8,
					sa.mr->lkey, (uintptr_t)st->remote,
					sb.mr->rkey, i);
			if (ret == ENOMEM)
				sched_yield();
		} while (ret == ENOMEM);
		if (ret) {
			st->failed = ret;
			break;
		}
	}
	return NULL;
}

static bool t_post_stress(struct pair *p)
{
	const long total = (long)STRESS_THREADS * STRESS_EACH;
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 256, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct stress st = { .remote = sb.buf + 4096 };
	pthread_t th[STRESS_THREADS];
	struct ibv_wc wc[32];
	long done = 0, last = 0;
	double stall = now_ms();
	int i, n;

	st.cq = ibv_create_cq(sa.ctx, 1024, NULL, NULL, 0);
	CHECK(st.cq, "cq");
	ia.send_cq = ia.recv_cq = st.cq;
	p->a = ibv_create_qp(sa.pd, &ia);
	p->b = qp_new(&sb);
	CHECK(p->a && p->b, "create");
	CHECK(!ibv_modify_qp(p->a, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), "init");
	CHECK(!qp_connect(p->a, &sa, &sb, p->b->qp_num, &conn_default) &&
	      !qp_connect(p->b, &sb, &sa, p->a->qp_num, &conn_default),
	      "connect");
	st.qp = p->a;
	for (i = 0; i < STRESS_THREADS; i++)
		CHECK(!pthread_create(&th[i], NULL, stress_post, &st), "thread");
	while (done < total) {
		n = ibv_poll_cq(st.cq, 32, wc);
		if (n < 0)
			break;
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				printf("# completion %ld: %s\n", done + i,
				       ibv_wc_status_str(wc[i].status));
				st.failed = -1;
			}
		done += n;
		if (done != last) {
			last = done;
			stall = now_ms();
		} else if (now_ms() - stall > 10000) {
			break;	/* 10 s without a completion: lost */
		}
		if (st.failed)
			break;
	}
	for (i = 0; i < STRESS_THREADS; i++)
		pthread_join(th[i], NULL);
	printf("# %ld of %ld WRITEs completed\n", done, total);
	ibv_destroy_qp(p->a);
	p->a = NULL;
	ibv_destroy_cq(st.cq);
	CHECK(!st.failed, "failed: %d", st.failed);
	CHECK(done == total, "stalled at %ld of %ld", done, total);
	return true;
}

static bool t_too_long(struct pair *p)
{
	const uint32_t max = 1u << 30;	/* srx(7), design.md: 1 GiB */
	struct ibv_sge sge[2] = {
		{ .addr = (uintptr_t)sa.buf, .length = max, .lkey = sa.mr->lkey },
		{ .addr = (uintptr_t)sa.buf, .length = 1, .lkey = sa.mr->lkey },
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = sge, .num_sge = 2,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_port_attr pa;

	CHECK(!ibv_query_port(sa.ctx, 1, &pa), "query_port: %s",
	      strerror(errno));
	CHECK(pa.max_msg_sz == max, "max_msg_sz %u, wanted %u",
	      pa.max_msg_sz, max);
	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	CHECK(!ibv_post_send(p->a, &wr, &bad), "post: %s", strerror(errno));
	CHECK(!post_send(p->a, IBV_WR_SEND, sa.buf, 64, sa.mr->lkey, 0, 0, 2),
	      "post 2");
	return expect_error_then_flush(p, IBV_WC_LOC_LEN_ERR, 5000);
}

/* Whether b's buffer holds @n bytes of pattern @seed at @off, within @ms. */
static bool landed(uint32_t off, uint32_t n, int seed, int ms)
{
	double end = now_ms() + ms;
	uint32_t i;

	do {
		for (i = 0; i < n; i++)
			if (sb.buf[off + i] != (uint8_t)(i * 13 + seed))
				break;
		if (i == n)
			return true;
		usleep(1000);
	} while (now_ms() < end);
	return false;
}

static bool t_lost_ack_no_timeout(struct pair *p)
{
	const char *drop = getenv("RC_ERRORS_DROP");
	const char *pass = getenv("RC_ERRORS_PASS");
	struct conn ca = conn_default;
	struct ibv_wc wc;
	bool ok;

	CHECK(drop && pass && sa.ctx != sb.ctx,
	      "needs two devices, RC_ERRORS_DROP and RC_ERRORS_PASS");
	ca.timeout = 0;		/* no retransmit timer at all */
	if (!pair_up(p, &ca, &conn_default))
		return false;
	/* Neighbours resolved both ways before anything is dropped. */
	CHECK(sqd_write(p, 0, 4096, 1, 1), "post 1");
	CHECK(wait_wc(&sa, p->a, &wc, 10000) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 1, "WRITE 1 did not complete");

	CHECK(system(drop) == 0, "%s failed", drop);
	ok = sqd_write(p, 4096, 4096, 2, 2) && landed(4096, 4096, 2, 5000) &&
	     !wait_wc(&sa, p->a, &wc, 300);
	if (system(pass) != 0) {
		printf("# %s failed\n", pass);
		return false;
	}
	CHECK(ok, "WRITE 2 did not land, or completed although b's ACK was dropped");

	/* Engine idle or not, this post must go out and be acknowledged. */
	CHECK(sqd_write(p, 8192, 4096, 3, 3), "post 3");
	CHECK(wait_wc(&sa, p->a, &wc, 10000) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 2, "WRITE 2 never completed: the next post was not sent");
	CHECK(wait_wc(&sa, p->a, &wc, 10000) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 3, "WRITE 3 never completed");
	CHECK(landed(8192, 4096, 3, 0), "WRITE 3's bytes");
	return true;
}

/* @qp's next completion on @s's CQ, within @ms: @wr_id, successful, @op. */
static bool qp_done(struct side *s, struct ibv_qp *qp, int ms, uint64_t wr_id,
		    enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	CHECK(wait_wc(s, qp, &wc, ms), "wr_id %llu: no completion",
	      (unsigned long long)wr_id);
	CHECK(wc.wr_id == wr_id && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == op, "wr_id %llu: %s, opcode %d; wanted %llu, %d",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	      wc.opcode, (unsigned long long)wr_id, op);
	return true;
}

/* The next completion of a's QP: @wr_id, successful, @op. */
static bool wr_done(struct pair *p, uint64_t wr_id, enum ibv_wc_opcode op)
{
	return qp_done(&sa, p->a, 5000, wr_id, op);
}

/*
 * One ibv_wr_* batch of every RC operation, each data setter used: SEND
 * of an inline list, SEND with immediate of an SGE list, a 3000-byte
 * WRITE, WRITE with immediate inline, a READ of what the WRITE wrote,
 * FETCH_AND_ADD, CMP_AND_SWP. Everything lands, in order. Two of them
 * get a second data setter, which replaces the first (the inline flag
 * and the SGE count follow the last one).
 */
static bool t_wr_batch(struct pair *p)
{
	const uint64_t ops = IBV_QP_EX_WITH_SEND |
			     IBV_QP_EX_WITH_SEND_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_WRITE |
			     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			     IBV_QP_EX_WITH_RDMA_READ |
			     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	char hello[] = "hello, ", world[] = "world";
	struct ibv_data_buf inl[2] = {
		{ .addr = hello, .length = 7 }, { .addr = world, .length = 5 },
	};
	struct ibv_sge sgl[2] = {
		{ .addr = (uintptr_t)sa.buf + 100, .length = 10,
		  .lkey = sa.mr->lkey },
		{ .addr = (uintptr_t)sa.buf + 300, .length = 20,
		  .lkey = sa.mr->lkey },
	};
	char imm_inline[16] = "written inline!";
	uint64_t *target = (uint64_t *)(sb.buf + 12288);
	uint64_t *fadd_old = (uint64_t *)(sa.buf + 20480);
	uint64_t *cas_old = (uint64_t *)(sa.buf + 20488);
	uint64_t rbase = (uintptr_t)sb.buf;
	struct conn c = conn_default;
	struct ibv_qp_ex *ex;
	struct ibv_wc wc;
	uint32_t i;
	int ret;

	memset(sa.buf, 0, 32768);
	memset(sb.buf, 0, 32768);
	for (i = 0; i < 4096; i++)
		sa.buf[i] = (uint8_t)(i * 13 + 1);
	*target = 40;
	p->a = qp_new_ops(&sa, ops);
	p->b = qp_new(&sb);
	CHECK(p->a && p->b, "create: %s", strerror(errno));
	CHECK(!qp_connect(p->a, &sa, &sb, p->b->qp_num, &c), "connect a");
	CHECK(!qp_connect(p->b, &sb, &sa, p->a->qp_num, &c), "connect b");
	ex = ibv_qp_to_qp_ex(p->a);
	CHECK(ex, "ibv_qp_to_qp_ex: NULL");
	for (i = 0; i < 3; i++)
		CHECK(!post_recv(p->b, sb.buf + 64 * i, 64, sb.mr->lkey,
				 101 + i), "recv %u", i);

	ibv_wr_start(ex);
	ex->wr_flags = IBV_SEND_SIGNALED;
	ex->wr_id = 1;
	ibv_wr_send(ex);
	/* A second data setter replaces the first: inline after an SGE. */
	ibv_wr_set_sge(ex, sa.mr->lkey, (uintptr_t)sa.buf + 2000, 40);
	ibv_wr_set_inline_data_list(ex, 2, inl);
	ex->wr_id = 2;
	ibv_wr_send_imm(ex, htonl(0x1234));
	ibv_wr_set_sge_list(ex, 2, sgl);
	ex->wr_id = 3;
	ibv_wr_rdma_write(ex, sb.mr->rkey, rbase + 4096);
	/* ... and an SGE after inline data. */
	ibv_wr_set_inline_data(ex, imm_inline, sizeof(imm_inline));
	ibv_wr_set_sge(ex, sa.mr->lkey, (uintptr_t)sa.buf + 1000, 3000);
	ex->wr_id = 4;
	ibv_wr_rdma_write_imm(ex, sb.mr->rkey, rbase + 8192, htonl(0x5678));
	ibv_wr_set_inline_data(ex, imm_inline, sizeof(imm_inline));
	ex->wr_id = 5;
	ibv_wr_rdma_read(ex, sb.mr->rkey, rbase + 4096);
	ibv_wr_set_sge(ex, sa.mr->lkey, (uintptr_t)sa.buf + 16384, 3000);
	ex->wr_id = 6;
	ibv_wr_atomic_fetch_add(ex, sb.mr->rkey, (uintptr_t)target, 2);
	ibv_wr_set_sge(ex, sa.mr->lkey, (uintptr_t)fadd_old, 8);
	ex->wr_id = 7;
	ibv_wr_atomic_cmp_swp(ex, sb.mr->rkey, (uintptr_t)target, 42, 99);
	ibv_wr_set_sge(ex, sa.mr->lkey, (uintptr_t)cas_old, 8);
	ret = ibv_wr_complete(ex);
	CHECK(!ret, "ibv_wr_complete: %s", strerror(ret));

	if (!wr_done(p, 1, IBV_WC_SEND) || !wr_done(p, 2, IBV_WC_SEND) ||
	    !wr_done(p, 3, IBV_WC_RDMA_WRITE) ||
	    !wr_done(p, 4, IBV_WC_RDMA_WRITE) ||
	    !wr_done(p, 5, IBV_WC_RDMA_READ) ||
	    !wr_done(p, 6, IBV_WC_FETCH_ADD) ||
	    !wr_done(p, 7, IBV_WC_COMP_SWAP))
		return false;

	CHECK(wait_wc(&sb, p->b, &wc, 5000) && wc.wr_id == 101 &&
	      wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	      wc.byte_len == 12 && !(wc.wc_flags & IBV_WC_WITH_IMM),
	      "recv 1: %s len %u", ibv_wc_status_str(wc.status), wc.byte_len);
	CHECK(!memcmp(sb.buf, "hello, world", 12), "inline SEND's bytes");
	CHECK(wait_wc(&sb, p->b, &wc, 5000) && wc.wr_id == 102 &&
	      wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
	      wc.byte_len == 30 && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	      ntohl(wc.imm_data) == 0x1234, "recv 2: %s len %u",
	      ibv_wc_status_str(wc.status), wc.byte_len);
	CHECK(!memcmp(sb.buf + 64, sa.buf + 100, 10) &&
	      !memcmp(sb.buf + 74, sa.buf + 300, 20), "SGE list SEND's bytes");
	CHECK(wait_wc(&sb, p->b, &wc, 5000) && wc.wr_id == 103 &&
	      wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
	      ntohl(wc.imm_data) == 0x5678 && wc.byte_len == 16,
	      "recv 3: %s op %d len %u", ibv_wc_status_str(wc.status),
	      wc.opcode, wc.byte_len);
	CHECK(!memcmp(sb.buf + 8192, imm_inline, 16), "inline WRITE's bytes");
	CHECK(!memcmp(sb.buf + 4096, sa.buf + 1000, 3000) &&
	      sb.buf[4096 + 3000] == 0, "WRITE's bytes");
	CHECK(!memcmp(sa.buf + 16384, sa.buf + 1000, 3000), "READ's bytes");
	CHECK(*fadd_old == 40 && *cas_old == 42 && *target == 99,
	      "atomics: fadd %llu, cas %llu, target %llu",
	      (unsigned long long)*fadd_old, (unsigned long long)*cas_old,
	      (unsigned long long)*target);
	return true;
}

/*
 * One ATOMIC WRITE of @val to b's @raddr (rkey @rkey) after a WRITE of
 * 3000 bytes to b+4096, as one ibv_wr_* batch on @qp (wr_id 1 and 2).
 * The source of the 8 bytes is overwritten before ibv_wr_complete():
 * what lands must be what it held at ibv_wr_atomic_write().
 */
static bool atomic_write_batch(struct ibv_qp *qp, uint64_t raddr,
			       uint32_t rkey, uint64_t val)
{
	struct ibv_qp_ex *ex = ibv_qp_to_qp_ex(qp);
	uint64_t src = val;
	int ret;

	CHECK(ex, "ibv_qp_to_qp_ex: NULL");
	ibv_wr_start(ex);
	ex->wr_flags = IBV_SEND_SIGNALED;
	ex->wr_id = 1;
	ibv_wr_rdma_write(ex, sb.mr->rkey, (uintptr_t)sb.buf + 4096);
	ibv_wr_set_sge(ex, sa.mr->lkey, (uintptr_t)sa.buf, 3000);
	ex->wr_id = 2;
	ibv_wr_atomic_write(ex, rkey, raddr, &src);
	src = ~val;
	ret = ibv_wr_complete(ex);
	CHECK(!ret, "ibv_wr_complete: %s", strerror(ret));
	return true;
}

/* a with the operations the ATOMIC WRITE cases post; b plain. */
static bool atomic_write_pair(struct pair *p, const struct conn *ca)
{
	p->a = qp_new_ops(&sa, IBV_QP_EX_WITH_RDMA_WRITE |
			  IBV_QP_EX_WITH_ATOMIC_WRITE);
	p->b = qp_new(&sb);
	CHECK(p->a && p->b, "create: %s", strerror(errno));
	CHECK(!qp_connect(p->a, &sa, &sb, p->b->qp_num, ca), "connect a");
	CHECK(!qp_connect(p->b, &sb, &sa, p->a->qp_num, &conn_default),
	      "connect b");
	return true;
}

/*
 * An ATOMIC WRITE to b's @raddr with @rkey that b refuses: a's WQE ends
 * with @st, and the 16 bytes at b+12288 stay 0x5a.
 */
static bool atomic_write_refused(struct pair *p, uint64_t raddr,
				 uint32_t rkey, enum ibv_wc_status st,
				 const char *what)
{
	uint8_t *target = sb.buf + 12288;
	struct ibv_wc wc;
	uint32_t i;

	pair_down(p);
	memset(target, 0x5a, 16);
	if (!atomic_write_pair(p, &conn_default) ||
	    !atomic_write_batch(p->a, raddr, rkey, 0x0123456789abcdefull) ||
	    !wr_done(p, 1, IBV_WC_RDMA_WRITE))
		return false;
	CHECK(wait_wc(&sa, p->a, &wc, 5000), "%s: no completion", what);
	CHECK(wc.wr_id == 2 && wc.status == st, "%s: %s, wanted %s", what,
	      ibv_wc_status_str(wc.status), ibv_wc_status_str(st));
	for (i = 0; i < 16; i++)
		CHECK(target[i] == 0x5a, "%s: byte %u written", what, i);
	return true;
}

/*
 * RDMA ATOMIC WRITE (ibv_wr_atomic_write()): its 8 bytes land after the
 * WRITE before it, nothing around them changes, and it completes as
 * IBV_WC_ATOMIC_WRITE with byte_len 8. A target that is not 8-byte
 * aligned is an invalid request (REM_INV_REQ_ERR, IBTA A19.4.2), a wrong
 * rkey a remote access error (REM_ACCESS_ERR); in both the target keeps
 * its bytes.
 */
static bool t_atomic_write(struct pair *p)
{
	const uint64_t val = 0x0123456789abcdefull;
	uint8_t *target = sb.buf + 12288;
	struct ibv_wc wc;
	uint32_t i;

	memset(sb.buf, 0x5a, 16384);
	for (i = 0; i < 3000; i++)
		sa.buf[i] = (uint8_t)(i * 13 + 1);
	if (!atomic_write_pair(p, &conn_default) ||
	    !atomic_write_batch(p->a, (uintptr_t)target, sb.mr->rkey, val))
		return false;
	if (!wr_done(p, 1, IBV_WC_RDMA_WRITE))
		return false;
	CHECK(wait_wc(&sa, p->a, &wc, 5000), "ATOMIC WRITE: no completion");
	CHECK(wc.wr_id == 2 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_ATOMIC_WRITE && wc.byte_len == 8,
	      "ATOMIC WRITE: wr_id %llu, %s, opcode %d, byte_len %u",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	      wc.opcode, wc.byte_len);
	CHECK(!memcmp(target, &val, 8), "the target does not hold the value "
	      "posted (%#llx)", (unsigned long long)*(uint64_t *)target);
	CHECK(target[-1] == 0x5a && target[8] == 0x5a, "bytes around it");
	CHECK(!memcmp(sb.buf + 4096, sa.buf, 3000), "the WRITE's bytes");

	/* Misaligned: an invalid request; a wrong rkey: an access error. */
	return atomic_write_refused(p, (uintptr_t)target + 4, sb.mr->rkey,
				    IBV_WC_REM_INV_REQ_ERR, "misaligned") &&
	       atomic_write_refused(p, (uintptr_t)target, sb.mr->rkey ^ 0x80,
				    IBV_WC_REM_ACCESS_ERR, "wrong rkey");
}

/*
 * A duplicate ATOMIC WRITE is answered, never executed again, as READ
 * and ATOMIC duplicates are (IBTA 9.7.5.1.4). b's answers are
 * dropped after the value landed; b's CPU then writes the target; a's
 * retry (1 s timeout) reaches b as a duplicate, and must complete without
 * writing over that change. Needs RC_ERRORS_DROP/_PASS (two devices).
 */
static bool t_atomic_write_dup(struct pair *p)
{
	const char *drop = getenv("RC_ERRORS_DROP");
	const char *pass = getenv("RC_ERRORS_PASS");
	const uint64_t val = 0x1111222233334444ull, later = 0x5555ull;
	volatile uint64_t *target = (volatile uint64_t *)(sb.buf + 12288);
	struct conn ca = conn_default;
	struct ibv_wc wc;
	double end;
	bool ok;

	CHECK(drop && pass && sa.ctx != sb.ctx,
	      "needs two devices, RC_ERRORS_DROP and RC_ERRORS_PASS");
	ca.timeout = 18;	/* 4.096 us * 2^18: about 1 s per try */
	*target = 0;
	if (!atomic_write_pair(p, &ca))
		return false;
	/* Neighbours resolved both ways before anything is dropped. */
	CHECK(sqd_write(p, 0, 64, 1, 9), "warm-up WRITE");
	CHECK(wait_wc(&sa, p->a, &wc, 10000) && wc.status == IBV_WC_SUCCESS &&
	      wc.wr_id == 9, "the warm-up WRITE did not complete");

	CHECK(system(drop) == 0, "%s failed", drop);
	ok = atomic_write_batch(p->a, (uintptr_t)target, sb.mr->rkey, val);
	for (end = now_ms() + 5000; ok && *target != val && now_ms() < end;)
		usleep(1000);
	ok = ok && *target == val;
	if (ok)
		*target = later;
	if (system(pass) != 0) {
		printf("# %s failed\n", pass);
		return false;
	}
	CHECK(ok, "the value never landed while b's answers were dropped");
	if (!wr_done(p, 1, IBV_WC_RDMA_WRITE) ||
	    !wr_done(p, 2, IBV_WC_ATOMIC_WRITE))
		return false;
	CHECK(*target == later, "the retry wrote again: %#llx",
	      (unsigned long long)*target);
	return true;
}

/* One work request of b's, to a's memory at @raddr. */
static void b_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		 enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		 uint64_t raddr, uint64_t wr_id)
{
	*sge = (struct ibv_sge){ .addr = (uintptr_t)sb.buf + off,
				 .length = len, .lkey = sb.mr->lkey };
	*wr = (struct ibv_send_wr){ .wr_id = wr_id, .sg_list = sge,
				    .num_sge = 1, .opcode = op,
				    .send_flags = IBV_SEND_SIGNALED };
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = sa.mr->rkey;
	} else {
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = sa.mr->rkey;
	}
}

/* b's next completion (a retry takes a second): @wr_id, successful, @op. */
static bool b_done(struct pair *p, uint64_t wr_id, enum ibv_wc_opcode op)
{
	return qp_done(&sb, p->b, 10000, wr_id, op);
}

/*
 * Duplicates of a WRITE are acknowledged up to the PSN before the READ
 * or ATOMIC that follows it, never at or past it: 6.1's rxe, as the
 * requester, completes a READ or ATOMIC on a plain ACK at its PSN, with
 * its data never written (rxe_comp.c, check_ack()). Here b is the
 * requester: WRITE, READ, WRITE, FETCH_AND_ADD to a, one PSN each. a's
 * answers are dropped until all four executed there, so b's retry (1 s
 * timeout) reaches a as four duplicates. b must then see the READ's
 * bytes and the value FETCH_AND_ADD found, and a's target must have been
 * added to once. RC_ERRORS_DROP/_PASS drop a's egress (two devices).
 */
static bool t_dup_ack_psn(struct pair *p)
{
	const char *drop = getenv("RC_ERRORS_DROP");
	const char *pass = getenv("RC_ERRORS_PASS");
	volatile uint64_t *target = (volatile uint64_t *)(sa.buf + 16384);
	volatile uint64_t *found = (volatile uint64_t *)(sb.buf + 16384);
	const uint64_t sentinel = 0xdeadbeefcafef00dull;
	struct conn cb = conn_default;
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4];
	double end;
	bool ok;
	int i;

	CHECK(drop && pass && sa.ctx != sb.ctx,
	      "needs two devices, RC_ERRORS_DROP and RC_ERRORS_PASS");
	cb.timeout = 18;	/* 4.096 us * 2^18: about 1 s per try */
	CHECK(pair_up(p, &conn_default, &cb), "pair");
	for (i = 0; i < 256; i++) {
		sb.buf[i] = (uint8_t)(i * 7 + 1);	/* the WRITEs' bytes */
		sa.buf[8192 + i] = (uint8_t)(i * 11 + 3); /* the READ's */
	}
	memset(sa.buf, 0, 256);
	memset(sa.buf + 4096, 0, 256);
	memset(sb.buf + 8192, 0, 256);
	*target = 1000;
	*found = sentinel;

	/* Neighbours resolved both ways before anything is dropped. */
	b_wr(&wr[0], &sge[0], IBV_WR_RDMA_WRITE, 0, 8, (uintptr_t)sa.buf, 9);
	CHECK(!ibv_post_send(p->b, &wr[0], &bad), "warm-up WRITE");
	if (!b_done(p, 9, IBV_WC_RDMA_WRITE))
		return false;

	b_wr(&wr[0], &sge[0], IBV_WR_RDMA_WRITE, 0, 64, (uintptr_t)sa.buf, 1);
	b_wr(&wr[1], &sge[1], IBV_WR_RDMA_READ, 8192, 64,
	     (uintptr_t)sa.buf + 8192, 2);
	b_wr(&wr[2], &sge[2], IBV_WR_RDMA_WRITE, 64, 64,
	     (uintptr_t)sa.buf + 4096, 3);
	b_wr(&wr[3], &sge[3], IBV_WR_ATOMIC_FETCH_AND_ADD, 16384, 8,
	     (uintptr_t)target, 4);
	wr[3].wr.atomic.compare_add = 5;
	for (i = 0; i < 3; i++)
		wr[i].next = &wr[i + 1];

	CHECK(system(drop) == 0, "%s failed", drop);
	ok = !ibv_post_send(p->b, &wr[0], &bad);
	for (end = now_ms() + 5000; ok && *target != 1005 && now_ms() < end;)
		usleep(1000);
	ok = ok && *target == 1005;
	if (system(pass) != 0) {
		printf("# %s failed\n", pass);
		return false;
	}
	CHECK(ok, "the FETCH_AND_ADD never executed while a's answers were "
	      "dropped");
	CHECK(!memcmp(sa.buf + 4096, sb.buf + 64, 64), "the second WRITE "
	      "executed before the FETCH_AND_ADD did not land");
	if (!b_done(p, 1, IBV_WC_RDMA_WRITE) ||
	    !b_done(p, 2, IBV_WC_RDMA_READ) ||
	    !b_done(p, 3, IBV_WC_RDMA_WRITE) ||
	    !b_done(p, 4, IBV_WC_FETCH_ADD))
		return false;
	CHECK(!memcmp(sb.buf + 8192, sa.buf + 8192, 64),
	      "the READ completed without its bytes");
	CHECK(*found == 1000, "FETCH_AND_ADD completed with %#llx, not the "
	      "1000 it found", (unsigned long long)*found);
	CHECK(*target == 1005, "the target is %llu: added to again",
	      (unsigned long long)*target);
	CHECK(!memcmp(sa.buf, sb.buf, 64), "the first WRITE's bytes");
	return true;
}

/* a posts a READ of 64 response packets (16 KiB at MTU 256) from b. */
static bool read_then_post(struct pair *p)
{
	struct conn c = conn_default;
	uint32_t i;

	c.mtu = IBV_MTU_256;
	CHECK(pair_up(p, &c, &c), "pair");
	for (i = 0; i < 16384; i++) {
		sb.buf[65536 + i] = (uint8_t)(i * 29 + 5);
		sa.buf[65536 + i] = 0;
	}
	CHECK(!post_send(p->a, IBV_WR_RDMA_READ, sa.buf + 65536, 16384,
			 sa.mr->lkey, (uintptr_t)sb.buf + 65536, sb.mr->rkey,
			 1), "post READ");
	return true;
}

static bool read_then_check(struct pair *p, enum ibv_wc_status second)
{
	struct ibv_wc wc;

	CHECK(wait_wc(&sa, p->a, &wc, 10000), "READ: no completion");
	CHECK(wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS,
	      "READ: wr_id %llu %s", (unsigned long long)wc.wr_id,
	      ibv_wc_status_str(wc.status));
	CHECK(!memcmp(sa.buf + 65536, sb.buf + 65536, 16384), "READ bytes");
	CHECK(wait_wc(&sa, p->a, &wc, 10000), "#2: no completion");
	CHECK(wc.wr_id == 2 && wc.status == second,
	      "#2: wr_id %llu %s, not %s", (unsigned long long)wc.wr_id,
	      ibv_wc_status_str(wc.status), ibv_wc_status_str(second));
	return true;
}

/*
 * A READ of 64 response packets, then at once a WRITE with a wrong rkey.
 * The responder sends the READ's last responses from resp_work; if it
 * answered the WRITE from the softirq at once, the NAK would overtake
 * them, and the responder would go to ERR with them unsent.
 */
static bool t_read_then_nak(struct pair *p)
{
	CHECK(read_then_post(p), "READ");
	CHECK(!post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 8, sa.mr->lkey,
			 (uintptr_t)sb.buf, sb.mr->rkey ^ 0x80, 2), "post");
	return read_then_check(p, IBV_WC_REM_ACCESS_ERR);
}

/*
 * The same with the NAK inside a message: a SEND of 16 packets into a
 * 1 KiB receive is refused at its fifth packet. The requester may take
 * the NAK only after the READ's responses, and then it acknowledges the
 * SEND's first four packets before it fails the SEND.
 */
static bool t_read_then_nak_mid(struct pair *p)
{
	struct ibv_wc wc;

	CHECK(read_then_post(p), "READ");
	CHECK(!post_recv(p->b, sb.buf, 1024, sb.mr->lkey, 9), "recv");
	CHECK(!post_send(p->a, IBV_WR_SEND, sa.buf, 4096, sa.mr->lkey, 0, 0,
			 2), "post");
	if (!read_then_check(p, IBV_WC_REM_INV_REQ_ERR))
		return false;
	CHECK(wait_wc(&sb, p->b, &wc, 2000), "b: no completion");
	CHECK(wc.wr_id == 9 && wc.status == IBV_WC_LOC_LEN_ERR, "b: %s",
	      ibv_wc_status_str(wc.status));
	return true;
}

/* @qp back through RESET to INIT, as it was after qp_new(). */
static int qp_reinit(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		return -1;
	return rc_qp_to_init(qp);
}

static bool t_reset_reuse(struct pair *p)
{
	struct ibv_wc wc;
	uint32_t i;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	CHECK(!post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 64, sa.mr->lkey,
			 (uintptr_t)sb.buf, sb.mr->rkey ^ 0x80, 1) &&
	      !post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 64, sa.mr->lkey,
			 (uintptr_t)sb.buf, sb.mr->rkey, 2), "post");
	if (!expect_error_then_flush(p, IBV_WC_REM_ACCESS_ERR, 5000))
		return false;
	/* As rdma-core's test_mr.py restates its QPs: the same PSNs again. */
	CHECK(!qp_reinit(p->a) && !qp_reinit(p->b), "reset: %s",
	      strerror(errno));
	CHECK(!qp_connect(p->a, &sa, &sb, p->b->qp_num, &conn_default) &&
	      !qp_connect(p->b, &sb, &sa, p->a->qp_num, &conn_default),
	      "reconnect: %s", strerror(errno));
	for (i = 0; i < 10; i++) {
		CHECK(!post_recv(p->b, sb.buf + i * 64, 64, sb.mr->lkey, 10 + i),
		      "recv %u", i);
		CHECK(!post_send(p->a, IBV_WR_SEND, sa.buf + i * 64, 64,
				 sa.mr->lkey, 0, 0, 20 + i), "send %u", i);
		CHECK(wait_wc(&sa, p->a, &wc, 5000), "send %u: no completion", i);
		CHECK(wc.wr_id == 20 + i && wc.status == IBV_WC_SUCCESS,
		      "send %u: wr_id %llu %s", i, (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
		CHECK(wait_wc(&sb, p->b, &wc, 5000), "recv %u: no completion", i);
		CHECK(wc.wr_id == 10 + i && wc.status == IBV_WC_SUCCESS,
		      "recv %u: wr_id %llu %s", i, (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status));
	}
	return true;
}

#define REREG_LEN	(128 * 1024)

/*
 * a WRITEs (or READs, @op) @n bytes of sa.buf from @off to (from) b's
 * @raddr with @rkey: @st.
 */
static bool a_rdma(struct pair *p, enum ibv_wr_opcode op, uint32_t off,
		   uint32_t n, uint64_t raddr, uint32_t rkey, uint64_t wr_id,
		   enum ibv_wc_status st)
{
	const char *what = op == IBV_WR_RDMA_READ ? "READ" : "WRITE";
	struct ibv_wc wc;

	CHECK(!post_send(p->a, op, sa.buf + off, n, sa.mr->lkey, raddr, rkey,
			 wr_id), "post %s %llu", what, (unsigned long long)wr_id);
	CHECK(wait_wc(&sa, p->a, &wc, 5000), "%s %llu: no completion", what,
	      (unsigned long long)wr_id);
	CHECK(wc.wr_id == wr_id && wc.status == st, "%s %llu: %s, wanted %s",
	      what, (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	      ibv_wc_status_str(st));
	return true;
}

static bool rereg_write(struct pair *p, uint32_t off, uint32_t n,
			uint64_t raddr, uint32_t rkey, uint64_t wr_id,
			enum ibv_wc_status st)
{
	return a_rdma(p, IBV_WR_RDMA_WRITE, off, n, raddr, rkey, wr_id, st);
}

struct rereg_thread {
	struct ibv_mr *mr;
	int access;
	int stop, count, err;
};

static void *rereg_loop(void *arg)
{
	struct rereg_thread *t = arg;

	while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
		if (ibv_rereg_mr(t->mr, IBV_REREG_MR_CHANGE_ACCESS |
				 IBV_REREG_MR_CHANGE_PD, t->mr->pd, NULL, 0,
				 t->access)) {
			t->err = errno ? errno : EIO;
			break;
		}
		__atomic_fetch_add(&t->count, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static bool rereg_run(struct pair *p, uint8_t *old_buf, uint8_t *new_buf,
		      void *none, struct ibv_mr **mrp, struct ibv_pd **pd2p)
{
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_pd *pd2 = *pd2p;
	struct rereg_thread rr;
	struct ibv_mr *mr, *ro;
	struct ibv_wc wc;
	uint32_t key, i, round;
	int r, during;
	bool ok = true;
	pthread_t th;

	mr = ibv_reg_mr(sb.pd, old_buf, REREG_LEN, access);
	CHECK(mr, "reg_mr: %s", strerror(errno));
	*mrp = mr;
	key = mr->rkey;
	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	for (i = 0; i < REREG_LEN; i++)
		sa.buf[i] = (uint8_t)(i * 13 + 5);
	memset(old_buf, 0, REREG_LEN);
	memset(new_buf, 0, REREG_LEN);

	/*
	 * The data path meets the swap: a thread re-registers (the rights,
	 * unchanged, and the PD, the same) for as long as 8 rounds of 16
	 * WRITEs (the send queue's depth, qp_new()) take to land.
	 */
	rr.mr = mr;
	rr.access = access;
	rr.stop = 0;
	rr.count = 0;
	rr.err = 0;
	CHECK(!pthread_create(&th, NULL, rereg_loop, &rr), "thread");
	for (round = 0; round < 8 && ok; round++) {
		for (i = 0; i < 16 && ok; i++)
			ok = !post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf + i * 8192,
					8192, sa.mr->lkey,
					(uintptr_t)old_buf + i * 8192, key,
					100 + i);
		for (i = 0; i < 16 && ok; i++) {
			ok = wait_wc(&sa, p->a, &wc, 5000) &&
			     wc.status == IBV_WC_SUCCESS && wc.wr_id == 100 + i;
			if (!ok)
				printf("# round %u, WRITE %u: %s\n", round, i,
				       ibv_wc_status_str(wc.status));
		}
	}
	during = __atomic_load_n(&rr.count, __ATOMIC_RELAXED);
	__atomic_store_n(&rr.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	CHECK(ok, "WRITEs during reregs");
	CHECK(!rr.err, "rereg under traffic: %d (%s)", rr.err,
	      strerror(rr.err));
	CHECK(during > 0, "no rereg ran while the WRITEs did");
	printf("# %d reregs during 128 WRITEs\n", during);
	CHECK(mr->rkey == key && mr->lkey == key, "key %#x/%#x, was %#x",
	      mr->lkey, mr->rkey, key);
	CHECK(!memcmp(old_buf, sa.buf, REREG_LEN), "bytes differ");

	/*
	 * Refused, for memory that cannot be pinned and for a right the
	 * device lacks: the MR stays as it was.
	 */
	errno = 0;
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, none,
			 4096, 0);
	CHECK(r == IBV_REREG_MR_ERR_CMD && errno == EFAULT,
	      "rereg onto PROT_NONE: %d (%s)", r, strerror(errno));
	errno = 0;
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			 access | IBV_ACCESS_ZERO_BASED);
	CHECK(r == IBV_REREG_MR_ERR_CMD && errno == EOPNOTSUPP,
	      "rereg with ZERO_BASED: %d (%s)", r, strerror(errno));
	memset(old_buf, 0, 64);
	if (!rereg_write(p, 0, 64, (uintptr_t)old_buf, key, 200,
			 IBV_WC_SUCCESS))
		return false;
	CHECK(!memcmp(old_buf, sa.buf, 64), "refused rereg: bytes differ");

	/* New memory under the same key. */
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, new_buf,
			 REREG_LEN, 0);
	CHECK(!r && mr->rkey == key, "rereg translation: %d (%s), key %#x",
	      r, strerror(errno), mr->rkey);
	memset(old_buf, 0, REREG_LEN);
	if (!rereg_write(p, 4096, 8192, (uintptr_t)new_buf + 100, key, 201,
			 IBV_WC_SUCCESS))
		return false;
	CHECK(!memcmp(new_buf + 100, sa.buf + 4096, 8192), "new: bytes differ");
	for (i = 0; i < REREG_LEN; i++)
		CHECK(!old_buf[i], "old buffer written at %u", i);

	/* Read-only to writable: pinned again, for writing. */
	ro = ibv_reg_mr(sb.pd, old_buf, 4096, IBV_ACCESS_REMOTE_READ);
	CHECK(ro, "reg_mr read-only: %s", strerror(errno));
	r = ibv_rereg_mr(ro, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, access);
	ok = !r && rereg_write(p, 0, 64, (uintptr_t)old_buf + 8, ro->rkey, 203,
			       IBV_WC_SUCCESS) &&
	     !memcmp(old_buf + 8, sa.buf, 64);
	if (ibv_dereg_mr(ro))
		ok = false;
	CHECK(ok, "read-only MR made writable: rereg %d, bytes %s", r,
	      memcmp(old_buf + 8, sa.buf, 64) ? "differ" : "landed");

	/* Another PD: the QP's PD no longer matches the key's MR. */
	r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	CHECK(!r && mr->rkey == key && mr->pd == pd2, "rereg pd: %d (%s)", r,
	      strerror(errno));
	memset(new_buf, 0, 64);
	if (!rereg_write(p, 0, 64, (uintptr_t)new_buf, key, 202,
			 IBV_WC_REM_ACCESS_ERR))
		return false;
	for (i = 0; i < 64; i++)
		CHECK(!new_buf[i], "another PD's MR written at %u", i);
	r = ibv_dealloc_pd(pd2);
	if (!r)
		*pd2p = NULL;
	CHECK(r == EBUSY, "dealloc of the MR's PD: %d, not EBUSY", r);
	return true;
}

static bool t_rereg(struct pair *p)
{
	uint8_t *old_buf = NULL, *new_buf = NULL;
	void *none = MAP_FAILED;
	struct ibv_mr *mr = NULL;
	struct ibv_pd *pd2;
	bool ok = false;

	pd2 = ibv_alloc_pd(sb.ctx);
	CHECK(pd2, "alloc_pd: %s", strerror(errno));
	old_buf = aligned_alloc(4096, REREG_LEN);
	new_buf = aligned_alloc(4096, REREG_LEN);
	none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (old_buf && new_buf && none != MAP_FAILED)
		ok = rereg_run(p, old_buf, new_buf, none, &mr, &pd2);
	else
		printf("# buffers: %s\n", strerror(errno));
	pair_down(p);
	if (mr && ibv_dereg_mr(mr)) {
		printf("# dereg_mr: %s\n", strerror(errno));
		ok = false;
	}
	if (pd2 && ibv_dealloc_pd(pd2)) {
		printf("# dealloc_pd after dereg: %s\n", strerror(errno));
		ok = false;
	}
	free(old_buf);
	free(new_buf);
	if (none != MAP_FAILED)
		munmap(none, 4096);
	return ok;
}

/* @qp's sq_psn and rq_psn as ibv_query_qp() reports them. */
static bool query_psns(struct ibv_qp *qp, uint32_t *sq, uint32_t *rq)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	CHECK(!ibv_query_qp(qp, &attr, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &init),
	      "query_qp: %s", strerror(errno));
	*sq = attr.sq_psn;
	*rq = attr.rq_psn;
	return true;
}

/*
 * ibv_query_qp() (and so `rdma resource show qp`) reports the live PSNs
 * of a connection: 5 one-packet WRITEs, a 3-packet WRITE and a READ of
 * 3 response packets move a's sq_psn and b's rq_psn by 11 (a READ takes
 * a PSN per response, IBTA 9.7.1.1), and the other direction stays.
 */
static bool t_query_psn(struct pair *p)
{
	const uint32_t start = 0x123;	/* qp_connect()'s PSNs */
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	uint32_t a_sq, a_rq, b_sq, b_rq, i;
	struct ibv_wc wc;

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	if (!query_psns(p->a, &a_sq, &a_rq) || !query_psns(p->b, &b_sq, &b_rq))
		return false;
	CHECK(a_sq == start && a_rq == start && b_sq == start &&
	      b_rq == start, "before: a %#x/%#x, b %#x/%#x", a_sq, a_rq,
	      b_sq, b_rq);
	for (i = 0; i < 6; i++) {
		CHECK(!post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf,
				 i < 5 ? 1 : 3000, sa.mr->lkey,
				 (uintptr_t)sb.buf, sb.mr->rkey, 10 + i),
		      "write %u", i);
		CHECK(wait_wc(&sa, p->a, &wc, 5000) &&
		      wc.status == IBV_WC_SUCCESS, "write %u: %s", i,
		      ibv_wc_status_str(wc.status));
	}
	CHECK(!post_send(p->a, IBV_WR_RDMA_READ, sa.buf + 8192, 3000,
			 sa.mr->lkey, (uintptr_t)sb.buf, sb.mr->rkey, 20),
	      "read");
	CHECK(wait_wc(&sa, p->a, &wc, 5000) && wc.status == IBV_WC_SUCCESS,
	      "read: %s", ibv_wc_status_str(wc.status));
	if (!query_psns(p->a, &a_sq, &a_rq) || !query_psns(p->b, &b_sq, &b_rq))
		return false;
	CHECK(a_sq == start + 11 && b_rq == start + 11,
	      "after: a's sq_psn %#x, b's rq_psn %#x, wanted %#x", a_sq, b_rq,
	      start + 11);
	CHECK(a_rq == start && b_sq == start,
	      "the other way moved: a's rq_psn %#x, b's sq_psn %#x", a_rq,
	      b_sq);

	/* In ERR they stay where the traffic left them, until RESET. */
	CHECK(!ibv_modify_qp(p->a, &err, IBV_QP_STATE), "to ERR: %s",
	      strerror(errno));
	if (!query_psns(p->a, &a_sq, &a_rq))
		return false;
	CHECK(a_sq == start + 11 && a_rq == start,
	      "in ERR: a's sq_psn %#x, rq_psn %#x; wanted %#x, %#x", a_sq, a_rq,
	      start + 11, start);
	return true;
}

/*
 * Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3)) live on b, the
 * responder, over an MR of their own in the upper half of b's buffer (b's
 * main MR grants no MW_BIND); a accesses them. The window is the MR's
 * second page, at its address in the MR (windows are not zero-based).
 */
#define MW_MR_OFF	(128 * 1024)	/* the window MR, in sb.buf */
#define MW_MR_LEN	(64 * 1024)
#define MW_OFF		4096		/* the window, in that MR */
#define MW_LEN		4096
#define MW_MR_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND)
#define MW_ACCESS	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* What a window case made on b; mw_cleanup() undoes it, windows first. */
struct mw_objs {
	struct ibv_mr *mr, *mr2;
	struct ibv_mw *mw[3];
};

static bool mw_cleanup(struct mw_objs *o)
{
	struct ibv_mr *mr;
	bool ok = true;
	int i, ret;

	for (i = 0; i < 3; i++) {
		ret = o->mw[i] ? ibv_dealloc_mw(o->mw[i]) : 0;
		if (ret) {
			printf("# dealloc_mw %d: %s\n", i, strerror(ret));
			ok = false;
		}
	}
	for (i = 0; i < 2; i++) {
		mr = i ? o->mr2 : o->mr;
		ret = mr ? ibv_dereg_mr(mr) : 0;
		if (ret) {
			printf("# dereg_mr %d after the windows: %s\n", i,
			       strerror(ret));
			ok = false;
		}
	}
	return ok;
}

/* Whether b is srx (node_desc "srx"; rdma_rxe's is "rxe"). */
static bool b_is_srx(void)
{
	char path[IBV_SYSFS_PATH_MAX + 16], desc[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/node_desc",
		 sb.ctx->device->ibdev_path);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(desc, sizeof(desc), f))
			desc[0] = '\0';
		fclose(f);
	}
	return !strncmp(desc, "srx", 3);
}

static uint64_t mw_addr(uint32_t off)
{
	return (uintptr_t)sb.buf + MW_MR_OFF + off;
}

static struct ibv_mw_bind_info mw_info(struct ibv_mr *mr, uint32_t off,
				       uint64_t len, unsigned int access)
{
	return (struct ibv_mw_bind_info){ .mr = mr, .addr = mw_addr(off),
					  .length = len,
					  .mw_access_flags = access };
}

/* The window MR's bytes 0x11 again; a's first page a pattern. */
static void mw_fill(void)
{
	uint32_t i;

	memset(sb.buf + MW_MR_OFF, 0x11, MW_MR_LEN);
	for (i = 0; i < MW_LEN; i++)
		sa.buf[i] = (uint8_t)(i * 13 + 7);
}

/* The window MR holds a's pattern in [@off, @off + @n), 0x11 elsewhere. */
static bool mw_bytes(uint32_t off, uint32_t n)
{
	const uint8_t *m = sb.buf + MW_MR_OFF;
	uint32_t i;
	uint8_t want;

	for (i = 0; i < MW_MR_LEN; i++) {
		want = i >= off && i - off < n ? sa.buf[i - off] : 0x11;
		CHECK(m[i] == want, "b's MR at %u: %#x, wanted %#x", i, m[i],
		      want);
	}
	return true;
}

/* b's window MR with @access, filled (mw_fill()). */
static bool mw_setup(struct mw_objs *o, int access)
{
	mw_fill();
	o->mr = ibv_reg_mr(sb.pd, sb.buf + MW_MR_OFF, MW_MR_LEN, access);
	CHECK(o->mr, "reg_mr(%#x): %s", access, strerror(errno));
	return true;
}

static bool pair_again(struct pair *p)
{
	pair_down(p);
	return pair_up(p, &conn_default, &conn_default);
}

/* @qp's next completion on @s's CQ: @wr_id with @st (and @op, if success). */
static bool qp_status(struct side *s, struct ibv_qp *qp, uint64_t wr_id,
		      enum ibv_wc_status st, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	if (st == IBV_WC_SUCCESS)
		return qp_done(s, qp, 5000, wr_id, op);
	CHECK(wait_wc(s, qp, &wc, 5000), "wr_id %llu: no completion",
	      (unsigned long long)wr_id);
	CHECK(wc.wr_id == wr_id && wc.status == st, "wr_id %llu: %s, wanted %s",
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	      ibv_wc_status_str(st));
	return true;
}

/* ibv_bind_mw() of type 1 window @mw on b's QP: b's completion is @st. */
static bool bind1(struct pair *p, struct ibv_mw *mw,
		  struct ibv_mw_bind_info info, uint64_t wr_id,
		  enum ibv_wc_status st)
{
	struct ibv_mw_bind bind = { .wr_id = wr_id, .bind_info = info,
				    .send_flags = IBV_SEND_SIGNALED };
	int ret;

	ret = ibv_bind_mw(p->b, mw, &bind);
	CHECK(!ret, "ibv_bind_mw: %s", strerror(ret));
	return qp_status(&sb, p->b, wr_id, st, IBV_WC_BIND_MW);
}

/*
 * A bind of type 2 window @mw to key @rkey, posted on b's @qp with
 * ibv_post_send() or, if @ex, ibv_wr_bind_mw(): b's completion is @st.
 * No verb writes a type 2 window's new key back (the consumer chose it),
 * but librxe sends mw->rkey as the window's current key and rdma_rxe
 * refuses a bind that names another: keep it there, as rdma-core's tests
 * do with their own copy.
 */
static bool bind2(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		  struct ibv_mw_bind_info info, uint64_t wr_id,
		  enum ibv_wc_status st, bool ex)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp_ex *x;
	int ret;

	if (ex) {
		x = ibv_qp_to_qp_ex(qp);
		CHECK(x, "ibv_qp_to_qp_ex: NULL");
		ibv_wr_start(x);
		x->wr_id = wr_id;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_bind_mw(x, mw, rkey, &info);
		ret = ibv_wr_complete(x);
	} else {
		wr.bind_mw.mw = mw;
		wr.bind_mw.rkey = rkey;
		wr.bind_mw.bind_info = info;
		ret = ibv_post_send(qp, &wr, &bad);
	}
	CHECK(!ret, "post BIND_MW%s: %s", ex ? " (ibv_wr_bind_mw)" : "",
	      strerror(ret));
	if (!qp_status(&sb, qp, wr_id, st, IBV_WC_BIND_MW))
		return false;
	if (st == IBV_WC_SUCCESS)
		mw->rkey = rkey;
	return true;
}

/*
 * rdma_rxe checks an access through a window against the window's MR, not
 * the window (rxe_resp.c, check_rkey(): mr_check_range() of mw->mr), so
 * a's WRITE outside a window but inside its MR lands there. Said on such
 * a b, not checked: 200 bytes at @off of the MR through @key.
 */
static void mw_outside_report(struct pair *p, uint32_t off, uint32_t key,
			      uint64_t wr_id)
{
	struct ibv_wc wc = { .status = IBV_WC_GENERAL_ERR };
	bool done;

	done = !post_send(p->a, IBV_WR_RDMA_WRITE, sa.buf, 200, sa.mr->lkey,
			  mw_addr(off), key, wr_id) &&
	       wait_wc(&sa, p->a, &wc, 5000);
	printf("# not checked, b is not srx: 200 bytes at %u of the MR, "
	       "outside the window: %s, %s\n", off,
	       done ? ibv_wc_status_str(wc.status) : "no completion",
	       memcmp(sb.buf + MW_MR_OFF + off, sa.buf, 200) ?
	       "not written" : "written");
}

/*
 * A type 1 window bound with ibv_bind_mw() to the second page of b's MR:
 * its key changes (ibv_inc_rkey()), a's WRITE and READ through it reach
 * that page and nothing else; the MR cannot be deregistered while it is
 * bound, and the refusal changes nothing; a's WRITEs before the window
 * and across its end are refused (srx; mw_outside_report() for rxe). A
 * bind of length 0 unbinds: the key is refused then, and window and MR go.
 */
static bool mw_type1_run(struct pair *p, struct mw_objs *o)
{
	const bool srx = b_is_srx();
	/* rdma_rxe answers EINVAL (rxe_dereg_mr(), IBA 10.6.7.2.6) */
	const int busy = srx ? EBUSY : EINVAL;
	struct ibv_device_attr da;
	struct ibv_mw *mw;
	uint32_t old, key, off;
	int i, ret;

	CHECK(!ibv_query_device(sb.ctx, &da), "query_device: %s",
	      strerror(errno));
	CHECK((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) && da.max_mw > 0,
	      "b reports no memory windows: flags %#x, max_mw %d",
	      da.device_cap_flags, da.max_mw);
	if (!mw_setup(o, MW_MR_ACCESS))
		return false;
	mw = o->mw[0] = ibv_alloc_mw(sb.pd, IBV_MW_TYPE_1);
	CHECK(mw, "alloc_mw(TYPE_1): %s", strerror(errno));
	CHECK(mw->type == IBV_MW_TYPE_1 && mw->pd == sb.pd, "type %d",
	      mw->type);
	CHECK(pair_up(p, &conn_default, &conn_default), "pair");

	old = mw->rkey;
	if (!bind1(p, mw, mw_info(o->mr, MW_OFF, MW_LEN, MW_ACCESS), 1,
		   IBV_WC_SUCCESS))
		return false;
	key = mw->rkey;
	CHECK(key == ibv_inc_rkey(old), "rkey %#x after the bind, was %#x",
	      key, old);
	if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, MW_LEN, mw_addr(MW_OFF), key, 2,
		    IBV_WC_SUCCESS) || !mw_bytes(MW_OFF, MW_LEN))
		return false;
	memset(sa.buf + 8192, 0, MW_LEN);
	if (!a_rdma(p, IBV_WR_RDMA_READ, 8192, MW_LEN, mw_addr(MW_OFF), key, 3,
		    IBV_WC_SUCCESS))
		return false;
	CHECK(!memcmp(sa.buf + 8192, sa.buf, MW_LEN), "READ: bytes differ");

	ret = ibv_dereg_mr(o->mr);
	if (!ret)
		o->mr = NULL;
	CHECK(ret == busy, "dereg_mr with a window bound: %d (%s), wanted %s",
	      ret, strerror(ret), strerror(busy));
	mw_fill();
	if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, MW_LEN, mw_addr(MW_OFF), key, 4,
		    IBV_WC_SUCCESS) || !mw_bytes(MW_OFF, MW_LEN)) {
		printf("# ^ after the refused dereg_mr\n");
		return false;
	}

	/* In the MR, outside the window: before it, across its end. */
	for (i = 0; i < 2; i++) {
		off = i ? MW_OFF + MW_LEN - 100 : 0;
		mw_fill();
		CHECK(!i || pair_again(p), "pair %d", i);
		if (!srx) {
			mw_outside_report(p, off, key, 5 + i);
			continue;
		}
		if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, 200, mw_addr(off), key,
			    5 + i, IBV_WC_REM_ACCESS_ERR) || !mw_bytes(0, 0)) {
			printf("# ^ 200 bytes at %u of the MR\n", off);
			return false;
		}
	}

	/* Unbound: a's NAK left both QPs in ERR, so from a fresh pair. */
	CHECK(pair_again(p), "pair 3");
	mw_fill();
	if (!bind1(p, mw, mw_info(o->mr, MW_OFF, 0, 0), 7, IBV_WC_SUCCESS))
		return false;
	if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, 64, mw_addr(MW_OFF), key, 8,
		    IBV_WC_REM_ACCESS_ERR) || !mw_bytes(0, 0)) {
		printf("# ^ the key the window had before the unbind\n");
		return false;
	}
	ret = ibv_dealloc_mw(mw);
	if (!ret)
		o->mw[0] = NULL;
	CHECK(!ret, "dealloc_mw: %s", strerror(ret));
	ret = ibv_dereg_mr(o->mr);
	if (!ret)
		o->mr = NULL;
	CHECK(!ret, "dereg_mr without windows: %s", strerror(ret));
	return true;
}

static bool t_mw_type1(struct pair *p)
{
	struct mw_objs o = {};
	bool ok = mw_type1_run(p, &o);

	return mw_cleanup(&o) && ok;
}

/*
 * A type 2 window, bound by b's work requests: through ibv_post_send(),
 * a's WRITE lands, b's LOCAL_INV takes the key away. Bound again, to a
 * fresh QP: the window answers that QP alone (IBTA o10-37.2.43), another
 * QP of b's PD is refused; a's SEND with Invalidate of the key completes
 * b's receive with IBV_WC_WITH_INV and takes the key away. Bound once
 * more with ibv_wr_bind_mw() and invalidated with ibv_wr_local_inv().
 * Each refusal leaves b's MR untouched.
 */
static bool mw_type2_run(struct pair *p, struct mw_objs *o)
{
	/*
	 * rdma_rxe flags a receive that invalidated with the kernel's
	 * IB_WC_WITH_INVALIDATE (1 << 2), which is IBV_WC_IP_CSUM_OK to
	 * libibverbs (IBV_WC_WITH_INV is 1 << 3): taken as such there.
	 */
	const unsigned int with_inv = b_is_srx() ? IBV_WC_WITH_INV :
				      IBV_WC_WITH_INV | IBV_WC_IP_CSUM_OK;
	struct ibv_mw_bind_info info;
	struct ibv_device_attr da;
	struct pair q = {};
	struct ibv_qp_ex *ex;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	uint32_t key;
	bool ok;
	int ret;

	CHECK(!ibv_query_device(sb.ctx, &da), "query_device: %s",
	      strerror(errno));
	CHECK(da.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
				     IBV_DEVICE_MEM_WINDOW_TYPE_2B),
	      "b reports no type 2 windows: flags %#x", da.device_cap_flags);
	if (!mw_setup(o, MW_MR_ACCESS))
		return false;
	info = mw_info(o->mr, MW_OFF, MW_LEN, MW_ACCESS);
	mw = o->mw[0] = ibv_alloc_mw(sb.pd, IBV_MW_TYPE_2);
	CHECK(mw, "alloc_mw(TYPE_2): %s", strerror(errno));
	CHECK(mw->type == IBV_MW_TYPE_2, "type %d", mw->type);

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	key = ibv_inc_rkey(mw->rkey);
	if (!bind2(p->b, mw, key, info, 1, IBV_WC_SUCCESS, false) ||
	    !a_rdma(p, IBV_WR_RDMA_WRITE, 0, MW_LEN, mw_addr(MW_OFF), key, 2,
		    IBV_WC_SUCCESS) || !mw_bytes(MW_OFF, MW_LEN))
		return false;
	CHECK(!post_inv(p->b, IBV_WR_LOCAL_INV, key, NULL, 0, 0, 3),
	      "post LOCAL_INV");
	if (!qp_done(&sb, p->b, 5000, 3, IBV_WC_LOCAL_INV))
		return false;
	mw_fill();
	if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, 64, mw_addr(MW_OFF), key, 4,
		    IBV_WC_REM_ACCESS_ERR) || !mw_bytes(0, 0)) {
		printf("# ^ after LOCAL_INV\n");
		return false;
	}

	CHECK(pair_again(p), "pair 2");
	key = ibv_inc_rkey(key);
	if (!bind2(p->b, mw, key, info, 5, IBV_WC_SUCCESS, false) ||
	    !a_rdma(p, IBV_WR_RDMA_WRITE, 0, 64, mw_addr(MW_OFF), key, 6,
		    IBV_WC_SUCCESS) || !mw_bytes(MW_OFF, 64))
		return false;
	mw_fill();
	ok = pair_up(&q, &conn_default, &conn_default) &&
	     a_rdma(&q, IBV_WR_RDMA_WRITE, 0, 64, mw_addr(MW_OFF), key, 7,
		    IBV_WC_REM_ACCESS_ERR) && mw_bytes(0, 0);
	pair_down(&q);
	if (!ok) {
		printf("# ^ a QP of b's PD that the window is not bound to\n");
		return false;
	}
	CHECK(!post_recv(p->b, sb.buf, 64, sb.mr->lkey, 8), "recv");
	CHECK(!post_inv(p->a, IBV_WR_SEND_WITH_INV, key, sa.buf, 10,
			sa.mr->lkey, 9), "post SEND_WITH_INV");
	if (!qp_done(&sa, p->a, 5000, 9, IBV_WC_SEND))
		return false;
	CHECK(wait_wc(&sb, p->b, &wc, 5000), "b's receive: no completion");
	CHECK(wc.wr_id == 8 && wc.status == IBV_WC_SUCCESS &&
	      wc.opcode == IBV_WC_RECV && wc.byte_len == 10 &&
	      (wc.wc_flags & with_inv) && wc.invalidated_rkey == key,
	      "b's receive: %s, opcode %d, byte_len %u, wc_flags %#x, "
	      "invalidated_rkey %#x (the key %#x)",
	      ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len,
	      wc.wc_flags, wc.invalidated_rkey, key);
	if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, 64, mw_addr(MW_OFF), key, 10,
		    IBV_WC_REM_ACCESS_ERR) || !mw_bytes(0, 0)) {
		printf("# ^ after SEND_WITH_INV\n");
		return false;
	}

	/* The ibv_wr_* API: b's QP made with those operations. */
	pair_down(p);
	p->a = qp_new(&sa);
	p->b = qp_new_ops(&sb, IBV_QP_EX_WITH_BIND_MW |
			  IBV_QP_EX_WITH_LOCAL_INV);
	CHECK(p->a && p->b, "create (b's with BIND_MW, LOCAL_INV): %s",
	      strerror(errno));
	CHECK(!qp_connect(p->a, &sa, &sb, p->b->qp_num, &conn_default) &&
	      !qp_connect(p->b, &sb, &sa, p->a->qp_num, &conn_default),
	      "connect");
	key = ibv_inc_rkey(key);
	if (!bind2(p->b, mw, key, info, 11, IBV_WC_SUCCESS, true) ||
	    !a_rdma(p, IBV_WR_RDMA_WRITE, 0, MW_LEN, mw_addr(MW_OFF), key, 12,
		    IBV_WC_SUCCESS) || !mw_bytes(MW_OFF, MW_LEN))
		return false;
	ex = ibv_qp_to_qp_ex(p->b);
	ibv_wr_start(ex);
	ex->wr_id = 13;
	ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_local_inv(ex, key);
	ret = ibv_wr_complete(ex);
	CHECK(!ret, "ibv_wr_local_inv: %s", strerror(ret));
	if (!qp_done(&sb, p->b, 5000, 13, IBV_WC_LOCAL_INV))
		return false;
	mw_fill();
	if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, 64, mw_addr(MW_OFF), key, 14,
		    IBV_WC_REM_ACCESS_ERR) || !mw_bytes(0, 0)) {
		printf("# ^ after ibv_wr_local_inv\n");
		return false;
	}
	return true;
}

static bool t_mw_type2(struct pair *p)
{
	struct mw_objs o = {};
	bool ok = mw_type2_run(p, &o);

	return mw_cleanup(&o) && ok;
}

/* A bind of type 2 window @mw that b refuses (from a fresh pair). */
static bool bind_refused(struct pair *p, struct ibv_mw *mw,
			 struct ibv_mw_bind_info info, const char *what)
{
	CHECK(pair_again(p), "pair");
	if (bind2(p->b, mw, ibv_inc_rkey(mw->rkey), info, 1,
		  IBV_WC_MW_BIND_ERR, false))
		return true;
	printf("# ^ %s\n", what);
	return false;
}

/*
 * What a bind may not do completes IBV_WC_MW_BIND_ERR on b (and takes b's
 * QP to ERR, so each from a fresh pair): bind a type 2 window that is
 * bound; bind a type 2 window with length 0; bind to an MR without
 * MW_BIND; give REMOTE_WRITE over an MR without LOCAL_WRITE (C10-74;
 * REMOTE_READ alone binds and reads); reach past the MR's end. A
 * window of type 3 does not exist (EINVAL). A type 1 window cannot be
 * invalidated: LOCAL_INV of its key is LOC_QP_OP_ERR, and it stays bound.
 */
static bool mw_errors_run(struct pair *p, struct mw_objs *o)
{
	struct ibv_mw_bind_info info;
	struct ibv_mw *w;
	uint32_t key;

	errno = 0;
	w = ibv_alloc_mw(sb.pd, (enum ibv_mw_type)3);
	if (w)
		ibv_dealloc_mw(w);
	CHECK(!w && errno == EINVAL, "alloc_mw(3): %s",
	      w ? "allocated" : strerror(errno));

	if (!mw_setup(o, MW_MR_ACCESS))
		return false;
	info = mw_info(o->mr, MW_OFF, MW_LEN, MW_ACCESS);
	o->mw[0] = ibv_alloc_mw(sb.pd, IBV_MW_TYPE_2);
	o->mw[1] = ibv_alloc_mw(sb.pd, IBV_MW_TYPE_2);
	o->mw[2] = ibv_alloc_mw(sb.pd, IBV_MW_TYPE_1);
	CHECK(o->mw[0] && o->mw[1] && o->mw[2], "alloc_mw: %s",
	      strerror(errno));

	CHECK(pair_up(p, &conn_default, &conn_default), "pair");
	if (!bind2(p->b, o->mw[0], ibv_inc_rkey(o->mw[0]->rkey), info, 1,
		   IBV_WC_SUCCESS, false))
		return false;
	if (!bind2(p->b, o->mw[0], ibv_inc_rkey(o->mw[0]->rkey), info, 2,
		   IBV_WC_MW_BIND_ERR, false)) {
		printf("# ^ a type 2 window bound already\n");
		return false;
	}

	w = o->mw[1];
	if (!bind_refused(p, w, mw_info(o->mr, MW_OFF, 0, MW_ACCESS),
			  "length 0") ||
	    !bind_refused(p, w, mw_info(sb.mr, MW_OFF, MW_LEN, MW_ACCESS),
			  "an MR without MW_BIND") ||
	    !bind_refused(p, w, mw_info(o->mr, MW_MR_LEN - 2048, 4096,
					MW_ACCESS), "past the MR's end"))
		return false;
	o->mr2 = ibv_reg_mr(sb.pd, sb.buf + MW_MR_OFF, MW_MR_LEN,
			    IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_READ);
	CHECK(o->mr2, "reg_mr(MW_BIND | REMOTE_READ): %s", strerror(errno));
	if (!bind_refused(p, w, mw_info(o->mr2, MW_OFF, MW_LEN, MW_ACCESS),
			  "REMOTE_WRITE over an MR without LOCAL_WRITE"))
		return false;
	CHECK(pair_again(p), "pair");
	key = ibv_inc_rkey(w->rkey);
	memset(sa.buf + 8192, 0, MW_LEN);
	if (!bind2(p->b, w, key, mw_info(o->mr2, MW_OFF, MW_LEN,
					 IBV_ACCESS_REMOTE_READ),
		   2, IBV_WC_SUCCESS, false) ||
	    !a_rdma(p, IBV_WR_RDMA_READ, 8192, MW_LEN, mw_addr(MW_OFF), key, 3,
		    IBV_WC_SUCCESS)) {
		printf("# ^ REMOTE_READ alone over that MR\n");
		return false;
	}
	CHECK(!memcmp(sa.buf + 8192, sb.buf + MW_MR_OFF + MW_OFF, MW_LEN),
	      "READ through the read-only window: bytes differ");

	w = o->mw[2];
	CHECK(pair_again(p), "pair");
	if (!bind1(p, w, info, 1, IBV_WC_SUCCESS))
		return false;
	key = w->rkey;
	CHECK(!post_inv(p->b, IBV_WR_LOCAL_INV, key, NULL, 0, 0, 2),
	      "post LOCAL_INV");
	if (!qp_status(&sb, p->b, 2, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOCAL_INV)) {
		printf("# ^ LOCAL_INV of a type 1 window\n");
		return false;
	}
	CHECK(pair_again(p), "pair");
	mw_fill();
	if (!a_rdma(p, IBV_WR_RDMA_WRITE, 0, MW_LEN, mw_addr(MW_OFF), key, 3,
		    IBV_WC_SUCCESS) || !mw_bytes(MW_OFF, MW_LEN)) {
		printf("# ^ the type 1 window after the refused LOCAL_INV\n");
		return false;
	}
	return true;
}

static bool t_mw_errors(struct pair *p)
{
	struct mw_objs o = {};
	bool ok = mw_errors_run(p, &o);

	return mw_cleanup(&o) && ok;
}

static const struct {
	const char *name;
	bool (*fn)(struct pair *p);
} cases[] = {
	{ "read_write", t_read_write },
	{ "zero_length", t_zero_length },
	{ "atomics", t_atomics },
	{ "rnr_exceeded", t_rnr_exceeded },
	{ "rnr_recover", t_rnr_recover },
	{ "rem_access", t_rem_access },
	{ "rem_inv_req", t_rem_inv_req },
	{ "local_inv_user", t_local_inv_user },
	{ "send_inv_user", t_send_inv_user },
	{ "retry_exceeded", t_retry_exceeded },
	{ "sqd_resume", t_sqd_resume },
	{ "post_stress", t_post_stress },
	{ "too_long", t_too_long },
	{ "lost_ack_no_timeout", t_lost_ack_no_timeout },
	{ "wr_batch", t_wr_batch },
	{ "query_psn", t_query_psn },
	{ "atomic_write", t_atomic_write },
	{ "atomic_write_dup", t_atomic_write_dup },
	{ "read_then_nak", t_read_then_nak },
	{ "read_then_nak_mid", t_read_then_nak_mid },
	{ "dup_ack_psn", t_dup_ack_psn },
	{ "rereg", t_rereg },
	{ "reset_reuse", t_reset_reuse },
	{ "mw_type1", t_mw_type1 },
	{ "mw_type2", t_mw_type2 },
	{ "mw_errors", t_mw_errors },
};

int main(int argc, char **argv)
{
	const char *dev = NULL, *dev2 = NULL;
	int gid = -1, gid2 = -1, opt, n = 0, i, j;
	bool run_all;

	while ((opt = getopt(argc, argv, "d:g:D:G:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid = atoi(optarg); break;
		case 'D': dev2 = optarg; break;
		case 'G': gid2 = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!dev || gid < 0)
		goto usage;
	if (!dev2) {
		dev2 = dev;
		gid2 = gid;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (side_open(&sa, dev, gid) || side_open(&sb, dev2, gid2)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 2;
	}
	run_all = optind == argc;
	printf("TAP version 13\n");
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		struct pair p = {};
		bool ok;

		if (!run_all) {
			for (j = optind; j < argc; j++)
				if (!strcmp(argv[j], cases[i].name))
					break;
			if (j == argc)
				continue;
		}
		ok = cases[i].fn(&p);
		pair_down(&p);
		printf("%s %d %s\n", ok ? "ok" : "not ok", ++n, cases[i].name);
		failures += !ok;
	}
	printf("1..%d\n", n);
	return failures ? 1 : 0;

usage:
	fprintf(stderr, "usage: rc_errors -d DEV -g GID [-D DEV2 -G GID2] [CASE...]\n");
	return 2;
}
