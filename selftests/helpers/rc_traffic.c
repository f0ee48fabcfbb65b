// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rc_traffic - data integrity of the RC transport: many QPs at once, every
 * RC opcode, random lengths and offsets, for selftests/rc_traffic_test.sh.
 *
 *   rc_traffic -d DEV -g GID [-D DEV2 -G GID2] [-q QPS] [-n OPS] [-s SEED]
 *              [-c] [-w SECONDS] [-A] [-u EXP]
 *
 * Side a's QPs are requesters, side b's responders (one device for both
 * when -D is not given: loopback). Each of QPS pairs runs OPS work
 * requests, at most WINDOW in flight, each chosen at random among SEND,
 * SEND with immediate, RDMA WRITE, WRITE with immediate, RDMA READ,
 * FETCH_AND_ADD and CMP_AND_SWP (hit and miss), and with -A ATOMIC WRITE
 * (through ibv_wr_atomic_write()), with a random length (0 to SLOT
 * bytes; 8 for the atomics) at a random offset. Every one is signaled, and:
 *  - a's completions of a QP come once each, in posting order, successful,
 *    with the opcode posted;
 *  - a WRITE's (or ATOMIC WRITE's) bytes are in b's memory and a READ's in
 *    a's when a's completion arrives; the rest of the slot and the guard
 *    bytes around it are untouched;
 *  - b's receive completions come once each, in order, with the length,
 *    opcode and immediate of the SEND or WRITE with immediate that took
 *    them, and a SEND's bytes;
 *  - an atomic returns the value the ones before it on that QP left, and
 *    each QP's counter ends at the value they add up to;
 *  - after the last one, nothing more completes.
 * -u EXP sets the QPs' ACK timeout to 4.096 us x 2^EXP (default 14, 67 ms):
 * inject_test.sh runs beside a packet injector that loads the guest, and
 * one spurious retransmission would count a duplicate at the responder.
 * -c (the link cut): every QP posts WINDOW requests that cannot be
 * answered (the caller drops all traffic first): each QP's first must
 * complete with RETRY_EXC_ERR and the others with WR_FLUSH_ERR, within
 * -w seconds.
 *
 * Prints "ok"/"not ok" with a summary; exit status 0 if every check
 * passed, 1 if one failed, 2 on a usage or setup error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_qp.h"

#define MAX_QPS		16
#define WINDOW		8		/* requests in flight per QP */
#define RECVS		(2 * WINDOW)	/* receives posted per QP */
#define SLOT		(32 * 1024)	/* bytes per request's buffer */
#define GUARD		64		/* untouched bytes checked around */

enum op_kind {
	OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_FADD,
	OP_CSWAP, OP_AWRITE, OP_KINDS	/* OP_AWRITE last: -A only */
};

static const struct {
	const char *name;
	enum ibv_wr_opcode wr;
	enum ibv_wc_opcode wc;
	bool takes_recv;
} kinds[OP_KINDS] = {
	[OP_SEND] = { "SEND", IBV_WR_SEND, IBV_WC_SEND, true },
	[OP_SEND_IMM] = { "SEND_IMM", IBV_WR_SEND_WITH_IMM, IBV_WC_SEND, true },
	[OP_WRITE] = { "WRITE", IBV_WR_RDMA_WRITE, IBV_WC_RDMA_WRITE, false },
	[OP_WRITE_IMM] = { "WRITE_IMM", IBV_WR_RDMA_WRITE_WITH_IMM,
			   IBV_WC_RDMA_WRITE, true },
	[OP_READ] = { "READ", IBV_WR_RDMA_READ, IBV_WC_RDMA_READ, false },
	[OP_FADD] = { "FETCH_ADD", IBV_WR_ATOMIC_FETCH_AND_ADD,
		      IBV_WC_FETCH_ADD, false },
	[OP_CSWAP] = { "CMP_SWAP", IBV_WR_ATOMIC_CMP_AND_SWP,
		       IBV_WC_COMP_SWAP, false },
	[OP_AWRITE] = { "ATOMIC_WRITE", IBV_WR_ATOMIC_WRITE,
			IBV_WC_ATOMIC_WRITE, false },
};

/* One request in flight: what its completion must show. */
struct op {
	enum op_kind kind;
	uint32_t seq;		/* the QP's request number: wr_id's low half */
	uint32_t off, len;
	uint8_t seed;		/* the byte pattern */
	uint32_t imm;
	uint64_t expect_orig;	/* atomics: the value returned */
};

/* What b's next receive completion of a QP must show. */
struct recv_expect {
	enum op_kind kind;
	uint32_t len, imm;
	uint8_t seed;
	uint32_t off;		/* SEND: where a's bytes came from */
	uint32_t slot;		/* SEND: a's slot */
};

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t size;
	int gid_index;
	union ibv_gid gid;
};

struct qpair {
	struct ibv_qp *a, *b;
	uint32_t posted, done;		/* a's requests */
	struct op ops[WINDOW];		/* by seq % WINDOW */
	struct recv_expect rx[WINDOW + RECVS];	/* FIFO */
	uint32_t rx_head, rx_tail;
	uint32_t recv_next;		/* b's next receive to complete */
	uint32_t recvs_done;
	uint64_t counter;		/* b's atomic counter, as it must be */
	bool failed;
};

static struct side sa, sb;
static struct qpair qps[MAX_QPS];
static int nqp = 4, nops = 300;
static bool atomic_write;	/* -A: ATOMIC WRITE too, through ibv_wr_* */
static uint8_t ack_timeout = 14;	/* -u: 4.096 us x 2^14 = 67 ms */
static unsigned int rng;

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)(rand_r(&rng) % n) : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Per QP i: a's slots (WINDOW x SLOT, sources and READ targets), a's atomic
 * results (WINDOW x 8); b's slots (WRITE targets, READ sources), b's
 * receive buffers (RECVS x SLOT), b's counter. Every slot and buffer has
 * GUARD bytes on each side that no other slot or buffer uses: a request's
 * post resets them and its completion reads them.
 */
#define STRIDE		(SLOT + 2 * GUARD)
#define A_SLOTS		0
#define A_RES		(A_SLOTS + WINDOW * STRIDE)
#define A_PER_QP	(A_RES + WINDOW * 8 + GUARD)
#define B_SLOTS		0
#define B_RECV		(B_SLOTS + WINDOW * STRIDE)
#define B_COUNTER	(B_RECV + RECVS * STRIDE)
#define B_PER_QP	(B_COUNTER + 8 + GUARD)

static uint8_t *a_slot(int i, uint32_t k)
{
	return sa.buf + (size_t)i * A_PER_QP + A_SLOTS + GUARD +
	       (size_t)k * STRIDE;
}

static uint64_t *a_res(int i, uint32_t k)
{
	return (uint64_t *)(sa.buf + (size_t)i * A_PER_QP + A_RES + k * 8);
}

static uint8_t *b_slot(int i, uint32_t k)
{
	return sb.buf + (size_t)i * B_PER_QP + B_SLOTS + GUARD +
	       (size_t)k * STRIDE;
}

static uint8_t *b_recv(int i, uint32_t r)
{
	return sb.buf + (size_t)i * B_PER_QP + B_RECV + GUARD +
	       (size_t)r * STRIDE;
}

static uint64_t *b_counter(int i)
{
	return (uint64_t *)(sb.buf + (size_t)i * B_PER_QP + B_COUNTER);
}

static uint8_t pat(uint8_t seed, uint32_t j)
{
	return (uint8_t)(seed + j * 31 + (j >> 8));
}

static void fill(uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		p[j] = pat(seed, j);
}

/* -1 if @p holds the pattern, else the first byte that differs. */
static long differs(const uint8_t *p, uint32_t len, uint8_t seed)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		if (p[j] != pat(seed, j))
			return j;
	return -1;
}

static int fail(struct qpair *q, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct qpair *q, const char *fmt, ...)
{
	va_list ap;

	printf("# QP %u: ", q->a ? q->a->qp_num : 0);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	q->failed = true;
	return -1;
}

/*
 * Open side @s on device @name, or on @share's device, PD and CQ when
 * @share is given (both sides on one device); its buffer is its own.
 */
static int side_open(struct side *s, const char *name, int gid_index,
		     size_t size, const struct side *share)
{
	s->gid_index = gid_index;
	if (share) {
		s->ctx = share->ctx;
		s->pd = share->pd;
		s->cq = share->cq;
		s->gid = share->gid;
	} else {
		s->ctx = rc_open_device(name);
		if (!s->ctx)
			return -1;
		if (ibv_query_gid(s->ctx, 1, gid_index, &s->gid))
			return -1;
		s->pd = ibv_alloc_pd(s->ctx);
		s->cq = ibv_create_cq(s->ctx, MAX_QPS * (WINDOW + RECVS) * 2,
				      NULL, NULL, 0);
	}
	s->size = size;
	s->buf = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	if (!s->pd || !s->cq || !s->buf)
		return -1;
	memset(s->buf, 0xee, size);
	s->mr = ibv_reg_mr(s->pd, s->buf, size, RC_ACCESS_ALL);
	return s->mr ? 0 : -1;
}

/* With @wr_ops, through ibv_create_qp_ex() for the ibv_wr_* API. */
static struct ibv_qp *qp_new(struct side *s, uint64_t wr_ops)
{
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = s->cq, .recv_cq = s->cq, .pd = s->pd,
		.cap = { .max_send_wr = WINDOW, .max_recv_wr = RECVS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.send_ops_flags = wr_ops,
	};

	return rc_qp_init(s->ctx, &ia);
}

/* Just before the 24-bit wrap, so that every run crosses it. */
static uint32_t start_psn(uint32_t qpn)
{
	return 0xffffff - 64 - (qpn & 0xff);
}

/* @qp of @s to RTS, connected to @dqpn at @peer's GID. */
static int qp_connect(struct ibv_qp *qp, struct side *s, struct side *peer,
		      uint32_t dqpn, uint8_t retry_cnt)
{
	struct rc_path path = {
		.sgid_index = s->gid_index, .dgid = peer->gid, .dqpn = dqpn,
		.mtu = IBV_MTU_1024, .sq_psn = start_psn(qp->qp_num),
		.rq_psn = start_psn(dqpn), .rd_atomic = WINDOW,
		.timeout = ack_timeout,
		.retry_cnt = retry_cnt, .rnr_retry = 7, .min_rnr_timer = 1,
	};

	return rc_qp_rts(qp, &path);
}

static int post_recv(int i, uint32_t r)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)b_recv(i, r), .length = SLOT,
		.lkey = sb.mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = ((uint64_t)i << 32) | r, .sg_list = &sge, .num_sge = 1,
	}, *bad;

	memset(b_recv(i, r), 0xee, SLOT);
	return ibv_post_recv(qps[i].b, &wr, &bad);
}

/* @o, an ATOMIC WRITE of 8 pattern bytes to b's @raddr, by ibv_wr_*. */
static int post_atomic_write(struct qpair *q, const struct op *o,
			     uint64_t wr_id, uint64_t raddr)
{
	struct ibv_qp_ex *ex = ibv_qp_to_qp_ex(q->a);
	uint8_t val[8];

	fill(val, 8, o->seed);
	ibv_wr_start(ex);
	ex->wr_id = wr_id;
	ex->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(ex, sb.mr->rkey, raddr, val);
	return ibv_wr_complete(ex);
}

/* Choose, prepare and post QP @i's next request. */
static int post_next(int i)
{
	struct qpair *q = &qps[i];
	uint32_t seq = q->posted, k = seq % WINDOW;
	struct op *o = &q->ops[k];
	struct ibv_sge sge = { .lkey = sa.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = ((uint64_t)i << 32) | seq, .sg_list = &sge,
		.num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int ret;

	memset(o, 0, sizeof(*o));
	o->kind = (enum op_kind)rnd(atomic_write ? OP_KINDS : OP_AWRITE);
	o->seq = seq;
	o->seed = (uint8_t)rnd(256);
	o->imm = (uint32_t)rand_r(&rng);
	switch (rnd(4)) {
	case 0:
		o->len = rnd(65);
		break;
	case 1:
	case 2:
		o->len = rnd(4097);
		break;
	default:
		o->len = rnd(SLOT + 1);
		break;
	}
	o->off = rnd(SLOT - o->len + 1);
	wr.opcode = kinds[o->kind].wr;

	switch (o->kind) {
	case OP_SEND:
	case OP_SEND_IMM:
	case OP_WRITE:
	case OP_WRITE_IMM:
		fill(a_slot(i, k) + o->off, o->len, o->seed);
		sge.addr = (uintptr_t)a_slot(i, k) + o->off;
		sge.length = o->len;
		wr.imm_data = htonl(o->imm);
		wr.wr.rdma.remote_addr = (uintptr_t)b_slot(i, k) + o->off;
		wr.wr.rdma.rkey = sb.mr->rkey;
		/* b's slot around the target: not to be touched. */
		memset(b_slot(i, k) - GUARD, 0xee, SLOT + 2 * GUARD);
		break;
	case OP_READ:
		fill(b_slot(i, k) + o->off, o->len, o->seed);
		memset(a_slot(i, k) - GUARD, 0xee, SLOT + 2 * GUARD);
		sge.addr = (uintptr_t)a_slot(i, k) + o->off;
		sge.length = o->len;
		wr.wr.rdma.remote_addr = (uintptr_t)b_slot(i, k) + o->off;
		wr.wr.rdma.rkey = sb.mr->rkey;
		break;
	case OP_AWRITE:
		o->len = 8;
		o->off = rnd(SLOT / 8) * 8;	/* 8-byte aligned, in the slot */
		memset(b_slot(i, k) - GUARD, 0xee, SLOT + 2 * GUARD);
		break;
	case OP_FADD:
	case OP_CSWAP:
		o->len = 8;
		*a_res(i, k) = 0xeeeeeeeeeeeeeeeeull;
		sge.addr = (uintptr_t)a_res(i, k);
		sge.length = 8;
		wr.wr.atomic.remote_addr = (uintptr_t)b_counter(i);
		wr.wr.atomic.rkey = sb.mr->rkey;
		o->expect_orig = q->counter;
		if (o->kind == OP_FADD) {
			wr.wr.atomic.compare_add = rnd(1000) + 1;
			q->counter += wr.wr.atomic.compare_add;
		} else {
			bool hit = rnd(2);

			wr.wr.atomic.compare_add = q->counter + !hit;
			wr.wr.atomic.swap = (uint64_t)rand_r(&rng) << 16 | i;
			if (hit)
				q->counter = wr.wr.atomic.swap;
		}
		break;
	default:
		break;
	}
	if (kinds[o->kind].takes_recv) {
		struct recv_expect *x = &q->rx[q->rx_tail++ % (WINDOW + RECVS)];

		x->kind = o->kind;
		x->len = o->len;
		x->imm = o->imm;
		x->seed = o->seed;
		x->off = o->off;
		x->slot = k;
	}
	if (o->kind == OP_AWRITE)
		ret = post_atomic_write(q, o, wr.wr_id,
					(uintptr_t)b_slot(i, k) + o->off);
	else
		ret = ibv_post_send(q->a, &wr, &bad);
	if (ret)
		return fail(q, "post %s #%u: %s", kinds[o->kind].name, seq,
			    strerror(ret));
	q->posted++;
	return 0;
}

/*
 * @o's bytes are at @slot + off, and the rest of the slot and its guards
 * still hold the 0xee its post left there.
 */
static void check_placed(struct qpair *q, const struct op *o,
			 const uint8_t *slot)
{
	long d = differs(slot + o->off, o->len, o->seed);
	int j;

	if (d >= 0)
		fail(q, "#%u %s len %u off %u: byte %ld wrong", o->seq,
		     kinds[o->kind].name, o->len, o->off, d);
	for (j = -GUARD; j < (int)o->off; j++)
		if (slot[j] != 0xee) {
			fail(q, "#%u %s: byte %d before it written", o->seq,
			     kinds[o->kind].name, j);
			break;
		}
	for (j = (int)(o->off + o->len); j < SLOT + GUARD; j++)
		if (slot[j] != 0xee) {
			fail(q, "#%u %s: byte %d after it written", o->seq,
			     kinds[o->kind].name, j);
			break;
		}
}

/* a's completion of QP @i's request @seq. */
static void check_send(int i, const struct ibv_wc *wc, uint32_t seq)
{
	struct qpair *q = &qps[i];
	uint32_t k = seq % WINDOW;
	struct op *o = &q->ops[k];

	if (seq != q->done) {
		fail(q, "completion of #%u, wanted #%u (%s)", seq, q->done,
		     ibv_wc_status_str(wc->status));
		return;
	}
	q->done++;
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != kinds[o->kind].wc) {
		fail(q, "#%u %s len %u: %s, opcode %d", seq,
		     kinds[o->kind].name, o->len,
		     ibv_wc_status_str(wc->status), wc->opcode);
		return;
	}
	switch (o->kind) {
	case OP_WRITE:
	case OP_WRITE_IMM:
	case OP_AWRITE:
		check_placed(q, o, b_slot(i, k));
		break;
	case OP_READ:
		check_placed(q, o, a_slot(i, k));
		break;
	case OP_FADD:
	case OP_CSWAP:
		if (*a_res(i, k) != o->expect_orig)
			fail(q, "#%u %s returned %#llx, wanted %#llx", seq,
			     kinds[o->kind].name,
			     (unsigned long long)*a_res(i, k),
			     (unsigned long long)o->expect_orig);
		break;
	default:
		break;
	}
}

/* b's receive completion @r of QP @i. */
static void check_recv(int i, const struct ibv_wc *wc, uint32_t r)
{
	struct qpair *q = &qps[i];
	struct recv_expect *x;
	enum ibv_wc_opcode want_op;
	long d;

	if (r != q->recv_next) {
		fail(q, "receive %u completed, wanted %u (%s)", r,
		     q->recv_next, ibv_wc_status_str(wc->status));
		return;
	}
	q->recv_next = (q->recv_next + 1) % RECVS;
	if (q->rx_head == q->rx_tail) {
		fail(q, "a receive completed that no request took");
		return;
	}
	x = &q->rx[q->rx_head++ % (WINDOW + RECVS)];
	want_op = x->kind == OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM :
					    IBV_WC_RECV;
	if (wc->status != IBV_WC_SUCCESS || wc->opcode != want_op ||
	    wc->byte_len != x->len) {
		fail(q, "receive %u for %s len %u: %s, opcode %d, byte_len %u",
		     r, kinds[x->kind].name, x->len,
		     ibv_wc_status_str(wc->status), wc->opcode, wc->byte_len);
		return;
	}
	if ((x->kind == OP_SEND) != !(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    (x->kind != OP_SEND && ntohl(wc->imm_data) != x->imm)) {
		fail(q, "receive %u for %s: immediate %s %#x, wanted %#x", r,
		     kinds[x->kind].name,
		     wc->wc_flags & IBV_WC_WITH_IMM ? "" : "absent",
		     ntohl(wc->imm_data), x->imm);
		return;
	}
	if (x->kind != OP_WRITE_IMM) {
		d = differs(b_recv(i, r), x->len, x->seed);
		if (d >= 0)
			fail(q, "receive %u for %s len %u: byte %ld wrong", r,
			     kinds[x->kind].name, x->len, d);
		else if (x->len < SLOT && b_recv(i, r)[x->len] != 0xee)
			fail(q, "receive %u: written past byte_len", r);
	}
	q->recvs_done++;
	if (post_recv(i, r))
		fail(q, "repost receive %u: %s", r, strerror(errno));
}

static bool all_done(void)
{
	int i;

	for (i = 0; i < nqp; i++)
		if (qps[i].done < (uint32_t)nops ||
		    qps[i].rx_head != qps[i].rx_tail)
			return false;
	return true;
}

/*
 * Poll @cq and check what it gives: a's completions or b's, by the CQ when
 * the sides have one each (their QP numbers can be equal, each device
 * numbering its own), by the QP number when they share one device.
 */
static int poll_cq(struct ibv_cq *cq)
{
	struct ibv_wc wc[32];
	int n, j;

	n = ibv_poll_cq(cq, 32, wc);
	if (n < 0) {
		printf("# poll_cq failed\n");
		return -1;
	}
	for (j = 0; j < n; j++) {
		int i = (int)(wc[j].wr_id >> 32);
		uint32_t lo = (uint32_t)wc[j].wr_id;

		if (i < 0 || i >= nqp) {
			printf("# completion with wr_id %#llx\n",
			       (unsigned long long)wc[j].wr_id);
			return -1;
		}
		if (sa.cq != sb.cq ? cq == sa.cq :
				     wc[j].qp_num == qps[i].a->qp_num)
			check_send(i, &wc[j], lo);
		else if (sa.cq != sb.cq || wc[j].qp_num == qps[i].b->qp_num)
			check_recv(i, &wc[j], lo);
		else
			return fail(&qps[i], "completion of QP %u",
				    wc[j].qp_num);
	}
	return n;
}

static int run_traffic(double limit)
{
	double end = now_s() + limit;
	int i, failed = 0;
	uint32_t total = 0, recvs = 0;

	for (;;) {
		bool progress = false;
		int na, nb;

		for (i = 0; i < nqp; i++) {
			struct qpair *q = &qps[i];

			while (!q->failed && q->posted < (uint32_t)nops &&
			       q->posted - q->done < WINDOW &&
			       q->rx_tail - q->rx_head < RECVS) {
				if (post_next(i))
					break;
				progress = true;
			}
		}
		na = poll_cq(sa.cq);
		nb = sa.cq == sb.cq ? 0 : poll_cq(sb.cq);
		if (na < 0 || nb < 0)
			return 1;
		if (na || nb)
			progress = true;
		for (i = 0; i < nqp; i++)
			if (qps[i].failed)
				return 1;
		if (all_done())
			break;
		if (!progress) {
			if (now_s() > end) {
				for (i = 0; i < nqp; i++)
					printf("# QP %u: posted %u, done %u, "
					       "receives %u of %u\n",
					       qps[i].a->qp_num, qps[i].posted,
					       qps[i].done, qps[i].rx_head,
					       qps[i].rx_tail);
				printf("# no progress for %.0f s\n", limit);
				return 1;
			}
			usleep(50);
		} else {
			end = now_s() + limit;
		}
	}
	/* Nothing more may complete. */
	usleep(200 * 1000);
	if (poll_cq(sa.cq) || (sb.cq != sa.cq && poll_cq(sb.cq))) {
		printf("# completions after the last one\n");
		return 1;
	}
	for (i = 0; i < nqp; i++) {
		if (*b_counter(i) != qps[i].counter) {
			fail(&qps[i], "counter %#llx, wanted %#llx",
			     (unsigned long long)*b_counter(i),
			     (unsigned long long)qps[i].counter);
			failed = 1;
		}
		total += qps[i].done;
		recvs += qps[i].recvs_done;
	}
	printf("# %u requests on %d QPs, %u of them received\n", total, nqp,
	       recvs);
	return failed;
}

/*
 * The link is cut: each QP's first request ends in RETRY_EXC_ERR, the
 * rest flush, all within @limit seconds.
 */
static int run_cut(double limit)
{
	double t0 = now_s(), end = t0 + limit;
	struct ibv_wc wc;
	int i, got = 0, want = nqp * WINDOW;
	uint32_t k;

	for (i = 0; i < nqp; i++)
		for (k = 0; k < WINDOW; k++)
			if (post_next(i))
				return 1;
	while (got < want && now_s() < end) {
		int n = ibv_poll_cq(sa.cq, 1, &wc);

		if (n <= 0) {
			usleep(100);
			continue;
		}
		i = (int)(wc.wr_id >> 32);
		if (i < 0 || i >= nqp) {
			printf("# completion with wr_id %#llx\n",
			       (unsigned long long)wc.wr_id);
			return 1;
		}
		k = (uint32_t)wc.wr_id;
		if (k != qps[i].done) {
			fail(&qps[i], "#%u completed, wanted #%u", k,
			     qps[i].done);
			return 1;
		}
		if (wc.status != (k ? IBV_WC_WR_FLUSH_ERR :
				      IBV_WC_RETRY_EXC_ERR)) {
			fail(&qps[i], "#%u: %s", k,
			     ibv_wc_status_str(wc.status));
			return 1;
		}
		qps[i].done++;
		got++;
	}
	printf("# %d of %d completions in %.1f s\n", got, want, now_s() - t0);
	return got == want ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *dev2 = NULL;
	int gid = -1, gid2 = -1, opt, i, ret;
	unsigned int seed = (unsigned int)time(NULL);
	double limit = 30;
	bool cut = false;
	size_t asize, bsize;

	while ((opt = getopt(argc, argv, "d:g:D:G:q:n:s:cw:ANu:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid = atoi(optarg); break;
		case 'D': dev2 = optarg; break;
		case 'G': gid2 = atoi(optarg); break;
		case 'q': nqp = atoi(optarg); break;
		case 'n': nops = atoi(optarg); break;
		case 's': seed = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'c': cut = true; break;
		case 'w': limit = atof(optarg); break;
		case 'A': atomic_write = true; break;
		case 'u': ack_timeout = (uint8_t)atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!dev || gid < 0 || nqp < 1 || nqp > MAX_QPS || nops < 1)
		goto usage;
	if (!dev2) {
		dev2 = dev;
		gid2 = gid;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	rng = seed;
	printf("# seed %u\n", seed);
	asize = (size_t)MAX_QPS * A_PER_QP + 4096;
	bsize = (size_t)MAX_QPS * B_PER_QP + 4096;
	if (side_open(&sa, dev, gid, asize, NULL) ||
	    side_open(&sb, dev2, gid2, bsize, strcmp(dev, dev2) ? NULL : &sa)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 2;
	}
	for (i = 0; i < nqp; i++) {
		uint32_t r;

		qps[i].a = qp_new(&sa, atomic_write ?
				  IBV_QP_EX_WITH_ATOMIC_WRITE : 0);
		qps[i].b = qp_new(&sb, 0);
		if (!qps[i].a || !qps[i].b ||
		    qp_connect(qps[i].a, &sa, &sb, qps[i].b->qp_num,
			       cut ? 2 : 7) ||
		    qp_connect(qps[i].b, &sb, &sa, qps[i].a->qp_num, 7)) {
			fprintf(stderr, "QP %d: %s\n", i, strerror(errno));
			return 2;
		}
		*b_counter(i) = 0;
		for (r = 0; r < RECVS; r++)
			if (post_recv(i, r)) {
				fprintf(stderr, "recv: %s\n", strerror(errno));
				return 2;
			}
	}
	ret = cut ? run_cut(limit) : run_traffic(limit);
	printf("%s %s\n", ret ? "not ok" : "ok",
	       cut ? "the link cut: RETRY_EXC_ERR, then flushed" :
		     "every request once, in order, its bytes intact");
	return ret;

usage:
	fprintf(stderr, "usage: rc_traffic -d DEV -g GID -D DEV2 -G GID2 "
		"[-q QPS] [-n OPS] [-s SEED] [-c] [-w SECONDS] [-A] [-u EXP]\n");
	return 2;
}
