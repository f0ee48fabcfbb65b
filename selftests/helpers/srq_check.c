// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srq_check - shared receive queues, case by case: two RC QPs on device -D
 * (GID index -G) share one SRQ and are connected to two RC QPs on device
 * -d (-g), which may be the same device.
 *
 *   create     the limits the device reports are the ones it takes: an
 *              SRQ of max_srq_wr + 1 WQEs, of max_srq_sge + 1 SGEs or of
 *              no WQE at all is EINVAL; one of 10 WQEs and 3 SGEs is
 *              granted at least that, and query_srq says the same with
 *              no limit armed (with -r, rdma_rxe's differing answer is
 *              printed and tolerated: see the case)
 *   modify     a limit above max_wr is EINVAL; without
 *              IBV_DEVICE_SRQ_RESIZE, MAX_WR is EOPNOTSUPP
 *   limit      8 receives posted and a limit of 4 armed: 4 SENDs raise
 *              nothing, the 5th raises IBV_EVENT_SRQ_LIMIT_REACHED (3
 *              left), query_srq then reads 0, a 6th raises nothing; armed
 *              again, the next SEND raises it once more
 *   shared     both senders' SENDs land in the one SRQ, each completing on
 *              the recv CQ with its own receiving QP's number and bytes
 *   lastwqe    the first receiving QP moved to ERR: exactly one
 *              IBV_EVENT_QP_LAST_WQE_REACHED; the SRQ's WQEs still serve
 *              the other QP; RESET, INIT, then ERR again: exactly one
 *              more.
 *              Skipped with -r (the receiver is rdma_rxe): 6.1's rxe
 *              never raises the event
 *   uc_toolong a UC SEND longer than the SRQ WQE it lands in completes
 *              that WQE with REM_INV_REQ_ERR and leaves the QP in RTS
 *              (rxe's class E), so a too-long SEND leaves the QP no WQE
 *              of the SRQ; a SEND that fits lands next. Skipped with -r:
 *              not measured on rxe's SRQs, whose copy_data() error ends
 *              the QP on an RQ (compare.md)
 *   ud_toolong the same for a UD datagram (with the 40-byte GRH area
 *              counted), then one that fits. Skipped with -r
 *   busy       ibv_destroy_srq while a QP is attached: EBUSY, and the SRQ
 *              still works; with the QPs gone it is destroyed
 *   held       with -S helpers/roce_send.py: a UC QP on the SRQ holds a
 *              receive for a message begun by a hand-built FIRST; reset,
 *              it gives the receive back and the next SEND of pair 1
 *              lands in it; in ERR, the receive completes as flushed and
 *              LAST_WQE_REACHED follows; destroyed, it gives it back.
 *              Skipped with -r or without -S
 *   hostile    the process writes the SRQ's ring as a hostile one could
 *              (found through /proc/self/maps, srx-abi.h's layout): a
 *              producer index a ring ahead, half the index space away or
 *              behind what the kernel took makes it take nothing (the
 *              SEND waits out RNR NAKs and lands once the index is
 *              honest again); a WQE whose num_sge is rewritten after the
 *              post completes in error on the receiving QP, which ends,
 *              raising LAST_WQE_REACHED. Skipped with -r
 *   pd         an SRQ on a PD of its own under a QP on the end's PD: a
 *              receive whose lkey is of the SRQ's PD takes a SEND; one
 *              whose lkey is of the QP's PD completes LOC_PROT_ERR, the
 *              SEND REM_OP_ERR, and the QP, in ERR, raises
 *              LAST_WQE_REACHED (the SRQ's PD is what the lkeys are
 *              checked against). Skipped with -r: rxe checks them against
 *              the QP's PD (6.1's rxe_resp.c, copy_data(qp->pd, ...))
 *
 * Prints TAP lines, one per case; exits 0 if every case passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/srx-abi.h>

#include "../srx_test.h"
#include "rc_qp.h"

#define BUF	4096
#define NSLOT	64
#define MSG	256
#define SRQ_WR	64
#define UD_QKEY	0x11111111

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;	/* send and recv CQ of every QP of this end */
	struct ibv_mr *mr;
	uint8_t *buf;		/* NSLOT slots */
	int gid_index;
	union ibv_gid gid;
};

static struct end snd, rcv;
static struct ibv_srq *srq;
static struct ibv_qp *sqp[2], *rqp[2];	/* sqp[i] is connected to rqp[i] */
static int n, fails;
static bool rxe_receiver;	/* -r */
static struct srx_test_map srq_map;	/* the SRQ's ring, on srx */
static const char *script;	/* -S: helpers/roce_send.py */

static void tap(bool ok, const char *what)
{
	n++;
	printf("%sok %d %s\n", ok ? "" : "not ", n, what);
	if (!ok)
		fails++;
}

static uint8_t *slot(struct end *e, unsigned int i)
{
	return e->buf + (size_t)(i % NSLOT) * BUF;
}

static int end_init(struct end *e, const char *dev, int gid_index)
{
	e->ctx = rc_open_device(dev);
	if (!e->ctx)
		return -1;
	e->gid_index = gid_index;
	if (ibv_query_gid(e->ctx, 1, gid_index, &e->gid))
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 4 * NSLOT, NULL, NULL, 0);
	e->buf = calloc(NSLOT, BUF);
	if (!e->pd || !e->cq || !e->buf)
		return -1;
	e->mr = ibv_reg_mr(e->pd, e->buf, (size_t)NSLOT * BUF, RC_ACCESS_ALL);
	return e->mr ? 0 : -1;
}

/* Post receive @wr_id (slot @wr_id, @len bytes) to the SRQ. */
static int srq_post_len(uint64_t wr_id, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot(&rcv, wr_id), .length = len,
		.lkey = rcv.mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	memset(slot(&rcv, wr_id), 0, len);
	return ibv_post_srq_recv(srq, &wr, &bad);
}

static int srq_post(uint64_t wr_id)
{
	return srq_post_len(wr_id, MSG);
}

static struct ibv_qp *qp_create(struct end *e, struct ibv_srq *s)
{
	struct ibv_qp_init_attr_ex ia = {
		.pd = e->pd, .send_cq = e->cq, .recv_cq = e->cq, .srq = s,
		.cap = { .max_send_wr = NSLOT, .max_send_sge = 1,
			 .max_recv_wr = s ? 0 : 1, .max_recv_sge = 1 },
	};

	return rc_qp_init(e->ctx, &ia);
}

/* @qp of @a to RTS, connected to @dqpn of @b. */
static int qp_connect(struct ibv_qp *qp, struct end *a, struct end *b,
		      uint32_t dqpn)
{
	struct rc_path p = {
		.sgid_index = a->gid_index, .dgid = b->gid, .dqpn = dqpn,
		.mtu = IBV_MTU_1024, .sq_psn = 0x100, .rq_psn = 0x100,
		.rd_atomic = 1, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 12,
	};

	return rc_qp_rts(qp, &p);
}

/*
 * Post a signaled SEND of @len bytes of @tag on @qp: to @dqpn through @ah
 * on UD, else on the QP's connection. Its completion is not awaited.
 */
static bool post_send(struct ibv_qp *qp, uint8_t tag, uint32_t len,
		      struct ibv_ah *ah, uint32_t dqpn)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot(&snd, tag), .length = len,
		.lkey = snd.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = tag, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = dqpn,
			   .remote_qkey = UD_QKEY },
	}, *bad;

	memset(slot(&snd, tag), tag, len);
	return !ibv_post_send(qp, &wr, &bad);
}

/* The next send completion, which must be a success. */
static bool send_done(uint8_t tag)
{
	struct ibv_wc wc;

	if (rc_poll_ms(snd.cq, &wc, 5000) != 1 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "send %#x: %s\n", tag,
			ibv_wc_status_str(wc.status));
		return false;
	}
	return true;
}

/* SEND @tag (MSG bytes of it) from sender QP @i and see it complete. */
static bool send_one(int i, uint8_t tag)
{
	return post_send(sqp[i], tag, MSG, NULL, 0) && send_done(tag);
}


/*
 * One receive completion on the receiver's CQ: from receiving QP @i, a
 * success of MSG bytes that filled slot wr_id with @tag. Return: wr_id,
 * or -1.
 */
static int recv_one(int i, uint8_t tag)
{
	struct ibv_wc wc;
	unsigned int k;

	if (rc_poll_ms(rcv.cq, &wc, 5000) != 1) {
		fprintf(stderr, "no receive completion for %u\n", tag);
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    wc.qp_num != rqp[i]->qp_num || wc.byte_len != MSG) {
		fprintf(stderr,
			"receive %" PRIu64 ": %s, qp %u (want %u), %u bytes\n",
			wc.wr_id, ibv_wc_status_str(wc.status), wc.qp_num,
			rqp[i]->qp_num, wc.byte_len);
		return -1;
	}
	for (k = 0; k < MSG; k++)
		if (slot(&rcv, wc.wr_id)[k] != tag)
			return -1;
	return (int)wc.wr_id;
}

/* Send @tag on pair @i and receive it. */
static bool exchange(int i, uint8_t tag)
{
	return send_one(i, tag) && recv_one(i, tag) >= 0;
}

/*
 * Asynchronous events of @ctx of @type for @obj (an SRQ or a QP) within
 * @ms milliseconds; any other event is acknowledged and logged.
 */
static int events(struct ibv_context *ctx, enum ibv_event_type type,
		  const void *obj, int ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int count = 0;

	while (poll(&pfd, 1, ms) == 1) {
		if (ibv_get_async_event(ctx, &ev))
			break;
		if (ev.event_type == type &&
		    (ev.element.srq == obj || ev.element.qp == obj))
			count++;
		else
			fprintf(stderr, "event %s\n",
				ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
		ms = 200;	/* after one, only what follows at once */
	}
	return count;
}

static void case_create(void)
{
	struct ibv_device_attr da;
	struct ibv_srq_init_attr a = {};
	struct ibv_srq_attr q = {};
	struct ibv_srq *s;
	bool ok = !ibv_query_device(rcv.ctx, &da) && da.max_srq > 0;

	a.attr.max_wr = da.max_srq_wr + 1;
	a.attr.max_sge = 1;
	s = ibv_create_srq(rcv.pd, &a);
	ok = ok && !s && errno == EINVAL;
	a.attr.max_wr = 1;
	a.attr.max_sge = da.max_srq_sge + 1;
	s = s ? s : ibv_create_srq(rcv.pd, &a);
	ok = ok && !s && errno == EINVAL;
	a.attr.max_wr = 0;
	a.attr.max_sge = 1;
	s = s ? s : ibv_create_srq(rcv.pd, &a);
	ok = ok && !s && errno == EINVAL;
	if (s)
		ibv_destroy_srq(s);

	a.attr.max_wr = 10;
	a.attr.max_sge = 3;
	a.attr.srq_limit = 5;	/* ignored by create */
	s = ibv_create_srq(rcv.pd, &a);
	ok = ok && s && a.attr.max_wr >= 10 && a.attr.max_sge >= 3 &&
	     !ibv_query_srq(s, &q);
	if (ok && q.max_sge != a.attr.max_sge) {
		fprintf(stderr, "create granted %u SGEs, query says %u\n",
			a.attr.max_sge, q.max_sge);
		ok = false;
	}
	if (ok && (q.max_wr != a.attr.max_wr || q.srq_limit != 0)) {
		/*
		 * 6.1's rxe answers create with the max_wr asked for but query
		 * with its ring's index mask (rxe_query_srq()), and arms
		 * create's srq_limit (rxe_srq_from_init()), which
		 * ibv_create_srq(3) says is ignored.
		 */
		fprintf(stderr, "create granted %u WQEs, %u SGEs; query says "
			"%u, %u, limit %u%s\n", a.attr.max_wr, a.attr.max_sge,
			q.max_wr, q.max_sge, q.srq_limit,
			rxe_receiver ? " (rdma_rxe, tolerated)" : "");
		ok = rxe_receiver;
	}
	if (s)
		ok = !ibv_destroy_srq(s) && ok;
	tap(ok, "create: limits refused, sizes granted, no limit armed");
}

static void case_modify(void)
{
	struct ibv_device_attr da;
	struct ibv_srq_attr q = {};
	bool ok = !ibv_query_device(rcv.ctx, &da) && !ibv_query_srq(srq, &q);

	q.srq_limit = q.max_wr + 1;
	ok = ok && ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT) == EINVAL;
	if (!(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) {
		q.max_wr = 2 * q.max_wr;
		ok = ok && ibv_modify_srq(srq, &q, IBV_SRQ_MAX_WR) == EOPNOTSUPP;
	}
	tap(ok, "modify: a limit above max_wr EINVAL, MAX_WR EOPNOTSUPP");
}

static void case_limit(void)
{
	struct ibv_srq_attr q = { .srq_limit = 4 };
	bool ok = true;
	int i;

	for (i = 0; i < 8; i++)
		ok = ok && !srq_post(i);
	ok = ok && !ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT);
	for (i = 0; ok && i < 4; i++)
		ok = exchange(0, 0x10 + i);
	ok = ok && events(rcv.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 300) == 0;
	ok = ok && exchange(0, 0x14);	/* 3 left: below the limit */
	ok = ok && events(rcv.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 2000) == 1;
	ok = ok && !ibv_query_srq(srq, &q) && q.srq_limit == 0;
	ok = ok && exchange(0, 0x15);	/* disarmed: nothing */
	ok = ok && events(rcv.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 300) == 0;
	q.srq_limit = 4;
	ok = ok && !ibv_modify_srq(srq, &q, IBV_SRQ_LIMIT);
	ok = ok && exchange(0, 0x16);	/* 1 left */
	ok = ok && events(rcv.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, srq, 2000) == 1;
	ok = ok && exchange(0, 0x17);	/* the SRQ is empty now */
	tap(ok, "limit: SRQ_LIMIT_REACHED once per arm, then limit 0");
}

static void case_shared(void)
{
	bool ok = true;
	int i;

	for (i = 0; i < 32; i++)
		ok = ok && !srq_post(i);
	/* Interleaved: each WQE goes to whichever QP's SEND comes first. */
	for (i = 0; ok && i < 16; i++)
		ok = exchange(0, 0x20 + i) && exchange(1, 0x40 + i);
	tap(ok, "shared: two senders' SENDs land in one SRQ");
}

static bool to_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr a = { .qp_state = state };

	return !ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static void case_lastwqe(void)
{
	struct ibv_wc wc;
	bool ok = true;
	int i, got;

	if (rxe_receiver) {
		n++;
		printf("ok %d lastwqe # SKIP rdma_rxe raises no LAST_WQE_REACHED\n",
		       n);
		return;
	}
	for (i = 0; i < 4; i++)
		ok = ok && !srq_post(i);
	ok = ok && to_state(rqp[0], IBV_QPS_ERR);
	got = ok ? events(rcv.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, rqp[0],
			  2000) : -1;
	if (got != 1) {
		fprintf(stderr, "first ERR: %d LAST_WQE_REACHED\n", got);
		ok = false;
	}
	/* It held no WQE: nothing of the SRQ's is flushed for it. */
	if (ok && rc_poll_ms(rcv.cq, &wc, 300) != 0) {
		fprintf(stderr, "a completion for wr_id %" PRIu64 ": %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	for (i = 0; ok && i < 4; i++)
		ok = exchange(1, 0x60 + i);
	/* RESET -> ERR is not a transition (the core's qp_state_table). */
	if (ok && !(to_state(rqp[0], IBV_QPS_RESET) &&
		    !rc_qp_to_init(rqp[0]) && to_state(rqp[0], IBV_QPS_ERR))) {
		fprintf(stderr, "ERR -> RESET -> INIT -> ERR: %s\n",
			strerror(errno));
		ok = false;
	}
	got = ok ? events(rcv.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, rqp[0],
			  2000) : -1;
	if (ok && got != 1) {
		fprintf(stderr, "second ERR: %d LAST_WQE_REACHED\n", got);
		ok = false;
	}
	tap(ok, "lastwqe: LAST_WQE_REACHED once per entry to ERR; SRQ intact");
}

/* A UC QP of @e in INIT, on SRQ @s if not NULL. */
static struct ibv_qp *uc_qp_create(struct end *e, struct ibv_srq *s)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .srq = s,
		.qp_type = IBV_QPT_UC,
		.cap = { .max_send_wr = NSLOT, .max_send_sge = 1,
			 .max_recv_wr = s ? 0 : 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	if (qp && ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
		ibv_destroy_qp(qp);
		qp = NULL;
	}
	return qp;
}

/* UC @qp of @a to RTS, connected to @dqpn of @b (no timers, no RNR). */
static int uc_connect(struct ibv_qp *qp, struct end *a, struct end *b,
		      uint32_t dqpn)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn, .rq_psn = 0x200,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = b->gid, .sgid_index = a->gid_index,
				 .hop_limit = 64 },
		},
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN))
		return -1;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0x200;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}


static void case_uc_toolong(void)
{
	struct ibv_qp *us, *ur;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_wc wc;
	bool ok;

	if (rxe_receiver) {
		/* 6.1's rxe ends the QP instead (compare.md, UC). */
		n++;
		printf("ok %d uc_toolong # SKIP the receiver is rdma_rxe\n", n);
		return;
	}
	us = uc_qp_create(&snd, NULL);
	ur = uc_qp_create(&rcv, srq);
	ok = us && ur && !uc_connect(us, &snd, &rcv, ur->qp_num) &&
	     !uc_connect(ur, &rcv, &snd, us->qp_num);
	ok = ok && !srq_post(0xc0) && post_send(us, 0xc0, 2 * MSG, NULL, 0) &&
	     send_done(0xc0);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != 0xc0 ||
		   wc.status != IBV_WC_REM_INV_REQ_ERR ||
		   wc.qp_num != ur->qp_num)) {
		fprintf(stderr, "UC SEND too long: wr_id %" PRIu64 ", %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	ok = ok && !ibv_query_qp(ur, &qa, IBV_QP_STATE, &qia) &&
	     qa.qp_state == IBV_QPS_RTS;
	ok = ok && !srq_post(0xc1) && post_send(us, 0xc1, MSG, NULL, 0) &&
	     send_done(0xc1);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != 0xc1 ||
		   wc.status != IBV_WC_SUCCESS || wc.byte_len != MSG ||
		   slot(&rcv, 0xc1)[MSG - 1] != 0xc1)) {
		fprintf(stderr, "UC SEND after: wr_id %" PRIu64 ", %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	if (ur)
		ibv_destroy_qp(ur);
	if (us)
		ibv_destroy_qp(us);
	tap(ok, "uc_toolong: a UC SEND longer than the SRQ's WQE completes it "
	    "REM_INV_REQ_ERR; the QP goes on");
}


static void case_ud_toolong(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = snd.cq, .recv_cq = snd.cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = NSLOT, .max_send_sge = 1,
			 .max_recv_wr = 1, .max_recv_sge = 1 },
	};
	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = rcv.gid, .sgid_index = snd.gid_index,
			 .hop_limit = 64 },
	};
	struct ibv_qp *us, *ur;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	bool ok;

	if (rxe_receiver) {
		n++;
		printf("ok %d ud_toolong # SKIP the receiver is rdma_rxe\n", n);
		return;
	}
	us = ibv_create_qp(snd.pd, &ia);
	ia.send_cq = rcv.cq;
	ia.recv_cq = rcv.cq;
	ia.srq = srq;
	ia.cap.max_recv_wr = 0;
	ur = ibv_create_qp(rcv.pd, &ia);
	ah = ibv_create_ah(snd.pd, &aa);
	ok = us && ur && ah && !rc_ud_qp_rts(us, UD_QKEY) &&
	     !rc_ud_qp_rts(ur, UD_QKEY);
	/* MSG bytes and the 40-byte GRH area: too long for MSG. */
	ok = ok && !srq_post(0xd0) && post_send(us, 0xd0, MSG, ah, ur->qp_num) &&
	     send_done(0xd0);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != 0xd0 ||
		   wc.status != IBV_WC_REM_INV_REQ_ERR ||
		   wc.qp_num != ur->qp_num)) {
		fprintf(stderr, "UD datagram too long: wr_id %" PRIu64 ", %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	ok = ok && !ibv_query_qp(ur, &qa, IBV_QP_STATE, &qia) &&
	     qa.qp_state == IBV_QPS_RTS;
	ok = ok && !srq_post(0xd1) &&
	     post_send(us, 0xd1, MSG - 40, ah, ur->qp_num) &&
	     send_done(0xd1);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != 0xd1 ||
		   wc.status != IBV_WC_SUCCESS || wc.byte_len != MSG ||
		   slot(&rcv, 0xd1)[MSG - 1] != 0xd1)) {
		fprintf(stderr, "UD datagram after: wr_id %" PRIu64 ", %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	if (ah)
		ibv_destroy_ah(ah);
	if (ur)
		ibv_destroy_qp(ur);
	if (us)
		ibv_destroy_qp(us);
	tap(ok, "ud_toolong: a datagram longer than the SRQ's WQE completes it "
	    "REM_INV_REQ_ERR; the QP goes on");
}

static void case_busy(void)
{
	int ret = ibv_destroy_srq(srq);
	bool ok = ret == EBUSY;

	if (!ret) {
		srq = NULL;
		tap(false, "busy: ibv_destroy_srq with QPs attached succeeded");
		return;
	}
	ok = ok && !srq_post(0) && exchange(1, 0x70);
	tap(ok, "busy: ibv_destroy_srq with QPs attached is EBUSY");
}

/* The SRQ's ring: its control block, and the slot holding @wr_id. */
static struct srx_wq_ctrl *srq_ctrl(void)
{
	return (struct srx_wq_ctrl *)srq_map.start;
}

/* A wr_id found nowhere else in the ring; slot() takes it modulo NSLOT. */
#define SCRIBBLED	0x5eb00000000000b0ull

static struct srx_recv_wqe *srq_find(uint64_t wr_id)
{
	uintptr_t p;

	for (p = srq_map.start + sizeof(struct srx_wq_ctrl);
	     p + sizeof(struct srx_recv_wqe) <= srq_map.end; p += 8)
		if (((struct srx_recv_wqe *)p)->wr_id == wr_id)
			return (struct srx_recv_wqe *)p;
	return NULL;
}


/*
 * helpers/roce_send.py from the sender's address to the receiver's: one
 * UC SEND_FIRST of 1024 bytes (the path MTU) to @qpn at @psn, which makes
 * the QP take a receive from the SRQ and hold it for the rest.
 */
static bool send_first(uint32_t qpn, uint32_t psn)
{
	char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN], cmd[512];

	inet_ntop(AF_INET, snd.gid.raw + 12, s, sizeof(s));
	inet_ntop(AF_INET, rcv.gid.raw + 12, d, sizeof(d));
	snprintf(cmd, sizeof(cmd),
		 "python3 %s %s %s good:1:1024:op=0x20:qpn=%u:psn=%u",
		 script, s, d, qpn, psn);
	return !system(cmd);
}

/* @qp (RESET) back to RTS on the UC connection case_held uses. */
static bool held_connect(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	return !ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) &&
	       !uc_connect(qp, &rcv, &snd, 0x123);
}

/*
 * A QP holding a WQE of the SRQ (a UC message begun by a hand-built
 * FIRST): reset, it gives the WQE back, and the next SEND on pair 1 lands
 * in it; in ERR, it completes it as flushed, then raises LAST_WQE_REACHED;
 * destroyed, it gives it back. Needs -S and an srx receiver.
 */
static void case_held(void)
{
	struct ibv_qp *ur;
	struct ibv_wc wc;
	bool ok;

	if (rxe_receiver || !script) {
		n++;
		printf("ok %d held # SKIP %s\n", n, rxe_receiver ?
		       "the receiver is rdma_rxe" : "no -S roce_send.py");
		return;
	}
	ur = uc_qp_create(&rcv, srq);
	ok = ur && !uc_connect(ur, &rcv, &snd, 0x123);

	/* RESET gives it back: the next take, by pair 1, hands it out. */
	ok = ok && !srq_post_len(0xe0, BUF) && send_first(ur->qp_num, 1000);
	ok = ok && rc_poll_ms(rcv.cq, &wc, 300) == 0;
	ok = ok && to_state(ur, IBV_QPS_RESET);
	ok = ok && send_one(1, 0xe1) && recv_one(1, 0xe1) == 0xe0;
	tap(ok, "held: a QP reset in the middle of a message gives its "
	    "receive back to the SRQ");

	/* ERR flushes the one it holds, then LAST_WQE_REACHED. */
	ok = ok && held_connect(ur);
	ok = ok && !srq_post_len(0xe2, BUF) && send_first(ur->qp_num, 2000);
	ok = ok && rc_poll_ms(rcv.cq, &wc, 300) == 0 && to_state(ur, IBV_QPS_ERR);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != 0xe2 ||
		   wc.status != IBV_WC_WR_FLUSH_ERR ||
		   wc.qp_num != ur->qp_num)) {
		fprintf(stderr, "held, ERR: wr_id %" PRIu64 ", %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	ok = ok && events(rcv.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, ur,
			  2000) == 1;
	tap(ok, "held: in ERR the held receive is flushed, then "
	    "LAST_WQE_REACHED");

	/* Destroyed, it gives it back too. */
	ok = ok && to_state(ur, IBV_QPS_RESET) && held_connect(ur);
	ok = ok && !srq_post_len(0xe3, BUF) && send_first(ur->qp_num, 3000);
	ok = ok && rc_poll_ms(rcv.cq, &wc, 300) == 0;
	ok = ok && !ibv_destroy_qp(ur);
	ur = NULL;
	ok = ok && send_one(1, 0xe4) && recv_one(1, 0xe4) == 0xe3;
	tap(ok, "held: a QP destroyed in the middle of a message gives its "
	    "receive back");
	if (ur)
		ibv_destroy_qp(ur);
}

static void case_hostile(void)
{
	volatile uint32_t *prod;
	struct srx_recv_wqe *wqe;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_srq_attr sq;
	struct ibv_wc wc;
	uint32_t honest, cons, lie;
	bool ok = !ibv_query_srq(srq, &sq);
	unsigned int k;

	if (rxe_receiver) {
		n++;
		printf("ok %d hostile # SKIP the receiver is rdma_rxe\n", n);
		return;
	}
	prod = (volatile uint32_t *)&srq_ctrl()->prod;
	for (k = 0; ok && k < 3; k++) {
		ok = !srq_post(0xa0 + k);
		honest = *prod;
		cons = __atomic_load_n(&srq_ctrl()->cons, __ATOMIC_ACQUIRE);
		/* A ring ahead of what was taken, half the space, behind. */
		lie = k == 0 ? cons + sq.max_wr + 1 :
		      k == 1 ? cons + 0x80000000u : cons - 1;
		*prod = lie;
		ok = ok && post_send(sqp[1], 0xa0 + k, MSG, NULL, 0);
		if (ok && rc_poll_ms(rcv.cq, &wc, 300) != 0) {
			fprintf(stderr, "prod %#x (honest %#x): a receive "
				"completed\n", lie, honest);
			ok = false;
		}
		*prod = honest;
		ok = ok && recv_one(1, 0xa0 + k) >= 0 && send_done(0xa0 + k);
	}
	tap(ok, "hostile: a dishonest SRQ producer index takes nothing; "
	    "honest again, the SEND lands");

	ok = !srq_post(SCRIBBLED);
	wqe = ok ? srq_find(SCRIBBLED) : NULL;
	if (!wqe) {
		fprintf(stderr, "the posted WQE is not in the ring\n");
		ok = false;
	} else {
		wqe->num_sge = 0xffffffffu;
	}
	ok = ok && post_send(sqp[1], 0xb0, MSG, NULL, 0);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != SCRIBBLED ||
		   wc.status == IBV_WC_SUCCESS)) {
		fprintf(stderr, "the scribbled WQE: wr_id %" PRIu64 ", %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	ok = ok && rc_poll_ms(snd.cq, &wc, 5000) == 1 &&
	     wc.status != IBV_WC_SUCCESS;
	ok = ok && !ibv_query_qp(rqp[1], &qa, IBV_QP_STATE, &qia) &&
	     qa.qp_state == IBV_QPS_ERR;
	ok = ok && events(rcv.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, rqp[1],
			  2000) == 1;
	tap(ok, "hostile: a WQE rewritten after its post completes in error; its QP ends");
}

static void case_pd(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *s2 = NULL;
	struct ibv_qp *qs = NULL, *qr = NULL;
	struct ibv_pd *pd2 = NULL;
	struct ibv_mr *mr2 = NULL;
	uint8_t *buf2 = calloc(2, BUF);
	struct ibv_recv_wr wr = { .num_sge = 1 }, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	bool ok = buf2;
	unsigned int k;

	if (rxe_receiver) {
		n++;
		printf("ok %d pd # SKIP rdma_rxe checks an SRQ receive's lkeys "
		       "against the QP's PD\n", n);
		free(buf2);
		return;
	}
	pd2 = ok ? ibv_alloc_pd(rcv.ctx) : NULL;
	mr2 = pd2 ? ibv_reg_mr(pd2, buf2, 2 * BUF, IBV_ACCESS_LOCAL_WRITE) :
		    NULL;
	s2 = pd2 ? ibv_create_srq(pd2, &sa) : NULL;
	qs = qp_create(&snd, NULL);
	qr = s2 ? qp_create(&rcv, s2) : NULL;
	ok = mr2 && qs && qr && !qp_connect(qs, &snd, &rcv, qr->qp_num) &&
	     !qp_connect(qr, &rcv, &snd, qs->qp_num);
	if (!ok)
		fprintf(stderr, "pd: setup: %s\n", strerror(errno));

	/* The SRQ's PD: taken. */
	wr.wr_id = 1;
	wr.sg_list = &sge;
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf2, .length = BUF,
				.lkey = mr2 ? mr2->lkey : 0 };
	ok = ok && !ibv_post_srq_recv(s2, &wr, &bad) &&
	     post_send(qs, 0xc0, MSG, NULL, 0) && send_done(0xc0);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != 1 ||
		   wc.status != IBV_WC_SUCCESS || wc.byte_len != MSG)) {
		fprintf(stderr, "pd: the SRQ's PD: %s\n",
			ibv_wc_status_str(wc.status));
		ok = false;
	}
	for (k = 0; ok && k < MSG; k++)
		ok = buf2[k] == 0xc0;

	/* The QP's PD, not the SRQ's: refused. */
	wr.wr_id = 2;
	sge = (struct ibv_sge){ .addr = (uintptr_t)slot(&rcv, 2),
				.length = MSG, .lkey = rcv.mr->lkey };
	ok = ok && !ibv_post_srq_recv(s2, &wr, &bad) &&
	     post_send(qs, 0xc1, MSG, NULL, 0);
	if (ok && (rc_poll_ms(rcv.cq, &wc, 5000) != 1 || wc.wr_id != 2 ||
		   wc.status != IBV_WC_LOC_PROT_ERR)) {
		fprintf(stderr, "pd: the QP's PD: wr_id %" PRIu64 ", %s\n",
			wc.wr_id, ibv_wc_status_str(wc.status));
		ok = false;
	}
	if (ok && (rc_poll_ms(snd.cq, &wc, 5000) != 1 ||
		   wc.status != IBV_WC_REM_OP_ERR)) {
		fprintf(stderr, "pd: the SEND to the QP's PD: %s\n",
			ibv_wc_status_str(wc.status));
		ok = false;
	}
	/* Before the QP goes: the event comes from the kernel's send_work. */
	ok = ok && events(rcv.ctx, IBV_EVENT_QP_LAST_WQE_REACHED, qr, 2000) == 1;
	tap(ok, "pd: an SRQ's receives are checked against the SRQ's PD, "
	    "not the QP's");
	if (qs)
		ibv_destroy_qp(qs);
	if (qr)
		ibv_destroy_qp(qr);
	if (s2)
		ibv_destroy_srq(s2);
	if (mr2)
		ibv_dereg_mr(mr2);
	if (pd2)
		ibv_dealloc_pd(pd2);
	free(buf2);
}

static void usage(void)
{
	fprintf(stderr, "usage: srq_check -d SEND_DEV -g GID_INDEX "
		"-D RECV_DEV -G GID_INDEX [-r] [-S ROCE_SEND_PY]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *sdev = NULL, *rdev = NULL;
	int sgid = -1, rgid = -1, opt, i;
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = SRQ_WR, .max_sge = 1 },
	};

	while ((opt = getopt(argc, argv, "d:g:D:G:rS:")) != -1) {
		switch (opt) {
		case 'd': sdev = optarg; break;
		case 'g': sgid = atoi(optarg); break;
		case 'D': rdev = optarg; break;
		case 'G': rgid = atoi(optarg); break;
		case 'r': rxe_receiver = true; break;
		case 'S': script = optarg; break;
		default: usage();
		}
	}
	if (!sdev || !rdev || sgid < 0 || rgid < 0)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);

	if (end_init(&snd, sdev, sgid) || end_init(&rcv, rdev, rgid)) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return 2;
	}
	printf("TAP version 13\n");
	case_create();

	{
		struct srx_test_map before[32], after[32];
		int nb = srx_test_maps(before, 32), na;

		srq = ibv_create_srq(rcv.pd, &sa);
		na = srx_test_maps(after, 32);
		if (!rxe_receiver && srq &&
		    srx_test_map_new(before, nb, after, na, &srq_map, 1) != 1) {
			fprintf(stderr, "setup: the SRQ's ring is not mapped\n");
			return 2;
		}
	}
	for (i = 0; srq && i < 2; i++) {
		sqp[i] = qp_create(&snd, NULL);
		rqp[i] = qp_create(&rcv, srq);
		if (!sqp[i] || !rqp[i] ||
		    qp_connect(sqp[i], &snd, &rcv, rqp[i]->qp_num) ||
		    qp_connect(rqp[i], &rcv, &snd, sqp[i]->qp_num))
			break;
	}
	if (!srq || i < 2) {
		fprintf(stderr, "setup of the SRQ and its QPs: %s\n",
			strerror(errno));
		return 2;
	}

	case_modify();
	case_limit();
	case_shared();
	case_lastwqe();
	case_uc_toolong();
	case_ud_toolong();
	case_busy();
	case_held();
	case_hostile();
	case_pd();

	for (i = 0; i < 2; i++) {
		ibv_destroy_qp(sqp[i]);
		ibv_destroy_qp(rqp[i]);
	}
	tap(!srq || !ibv_destroy_srq(srq), "busy: destroyed once detached");
	printf("1..%d\n", n);
	return fails ? 1 : 0;
}
