// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ud_check - UD datagrams and address handles, case by case, between two
 * UD QPs of this process: one on device -d (GID index -g), the other on
 * device -D (-G), which may be the same device.
 *
 *   grh        a datagram arrives with IBV_WC_GRH, byte_len = 40 + its
 *              length, src_qp the sender's, and a GRH area that is the
 *              packet's IP header: IPv4 as 20 zero bytes and a header with
 *              a valid checksum (how libibverbs tells v4 from v6), IPv6 as
 *              its header; ibv_create_ah_from_wc() then makes an AH back,
 *              and a reply through it arrives
 *   imm        SEND_WITH_IMM: the immediate data and IBV_WC_WITH_IMM
 *   qkey       a datagram with the wrong Q_Key is not delivered: the next
 *              good one is the first completion (and the receiver counts
 *              rcvd_qkey_err, which the calling test checks)
 *   privqkey   a Q_Key with the high bit set in the work request sends the
 *              QP's own: it arrives at a QP whose Q_Key is the sender's
 *   toolong    a SEND longer than the port MTU completes with success and
 *              is not sent: the next one is the first to arrive
 *   otherpd    an AH of another PD: the WQE completes with
 *              IBV_WC_LOC_QP_OP_ERR
 *   nogrh      an AH without a GRH on RoCE: EINVAL
 *   noroute    an AH to -u ADDR (an IPv6 address without a route):
 *              ENETUNREACH or EHOSTUNREACH; to -n ADDR (an IPv4 address
 *              nobody answers): ETIMEDOUT. IPv4 has no "no route" here:
 *              the core routes with the GID's netdev as the output
 *              device, and then IPv4 takes any address as on-link
 *              (net/ipv4/route.c, ip_route_output_key_hash_rcu())
 *
 * Prints TAP lines, one per case; exits 0 if every case passed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_qp.h"

#define GRH	40
#define BUF	4096
#define NRECV	16
#define QKEY_A	0x11111111u
#define QKEY_B	0x22222222u

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;		/* NRECV receive slots, then a send area */
	int gid_index;
	union ibv_gid gid;
	uint32_t qkey;
	unsigned int posted;	/* receive slots posted, in order */
};

static int n, fails;

static void tap(bool ok, const char *what)
{
	n++;
	printf("%sok %d %s\n", ok ? "" : "not ", n, what);
	if (!ok)
		fails++;
}

static uint8_t *slot(struct end *e, unsigned int i)
{
	return e->buf + (size_t)(i % NRECV) * BUF;
}

static uint8_t *send_area(struct end *e)
{
	return e->buf + (size_t)NRECV * BUF;
}

static int post_recv(struct end *e)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)slot(e, e->posted), .length = BUF,
		.lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = e->posted, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	e->posted++;
	return ibv_post_recv(e->qp, &wr, &bad);
}

static int end_init(struct end *e, const char *dev, int gid_index,
		    uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 16, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i;

	e->ctx = rc_open_device(dev);
	if (!e->ctx)
		return -1;
	e->gid_index = gid_index;
	e->qkey = qkey;
	if (ibv_query_gid(e->ctx, 1, gid_index, &e->gid))
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	e->buf = calloc(NRECV + 1, BUF);
	if (!e->pd || !e->cq || !e->buf)
		return -1;
	e->mr = ibv_reg_mr(e->pd, e->buf, (NRECV + 1) * BUF,
			   IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	e->qp = e->mr ? ibv_create_qp(e->pd, &ia) : NULL;
	if (!e->qp || rc_ud_qp_rts(e->qp, qkey))
		return -1;
	for (i = 0; i < NRECV; i++)
		if (post_recv(e))
			return -1;
	return 0;
}

static struct ibv_ah *ah_to(struct ibv_pd *pd, const struct end *dst,
			    int sgid_index)
{
	struct ibv_ah_attr a = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = dst->gid, .sgid_index = sgid_index,
			 .hop_limit = 64 },
	};

	return ibv_create_ah(pd, &a);
}

/* One completion of @e's CQ within 10 s (a hang is a failure, not a wait). */
static int poll_one(struct end *e, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		r = ibv_poll_cq(e->cq, 1, wc);
		if (r)
			return r < 0 ? -1 : 0;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 10) {
			fprintf(stderr, "# no completion in 10 s\n");
			return -1;
		}
	}
}

/* Post a SEND of @len bytes with @tag in its first byte; 0 if posted. */
static int send_to(struct end *src, struct ibv_ah *ah, const struct end *dst,
		   uint32_t qkey, size_t len, uint8_t tag, bool imm)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)send_area(src), .length = len,
		.lkey = src->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = tag, .sg_list = &sge, .num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(0xc0ffee00u | tag),
		.wr.ud = { .ah = ah, .remote_qpn = dst->qp->qp_num,
			   .remote_qkey = qkey },
	}, *bad;

	memset(send_area(src), tag, len > 64 ? 64 : len);
	return ibv_post_send(src->qp, &wr, &bad);
}

/* The send completion of @src, with @status. */
static bool sent(struct end *src, enum ibv_wc_status status)
{
	struct ibv_wc wc;

	if (poll_one(src, &wc))
		return false;
	if (wc.opcode != IBV_WC_SEND && wc.status == IBV_WC_SUCCESS) {
		fprintf(stderr, "# a receive where the send was expected\n");
		return false;
	}
	if (wc.status != status)
		fprintf(stderr, "# send status %s, expected %s\n",
			ibv_wc_status_str(wc.status), ibv_wc_status_str(status));
	return wc.status == status;
}

/* The next receive completion of @dst (same CQ as its sends: none left). */
static bool received(struct end *dst, struct ibv_wc *wc, size_t len,
		     uint8_t tag)
{
	uint8_t *b;

	if (poll_one(dst, wc) || wc->status != IBV_WC_SUCCESS ||
	    wc->opcode != IBV_WC_RECV) {
		fprintf(stderr, "# receive: status %s opcode %d\n",
			ibv_wc_status_str(wc->status), wc->opcode);
		return false;
	}
	b = slot(dst, wc->wr_id);
	if (wc->byte_len != GRH + len || !(wc->wc_flags & IBV_WC_GRH) ||
	    b[GRH] != tag) {
		fprintf(stderr, "# receive: byte_len %u flags %#x tag %u, expected %zu, GRH, %u\n",
			wc->byte_len, wc->wc_flags, b[GRH], GRH + len, tag);
		return false;
	}
	return post_recv(dst) == 0;
}

/* The IPv4 header checksum of @h, 0 when it is valid. */
static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t s = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		s += (uint32_t)h[i] << 8 | h[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static bool grh_ok(const uint8_t *g, const struct end *src, bool v4)
{
	static const uint8_t zero[20];

	if (v4)
		return !memcmp(g, zero, 20) && g[20] == 0x45 &&
		       !ip_csum(g + 20) && g[29] == 17 &&
		       !memcmp(g + 32, src->gid.raw + 12, 4);
	return (g[0] >> 4) == 6 && g[6] == 17 &&
	       !memcmp(g + 8, src->gid.raw, 16);
}

static bool case_grh(struct end *a, struct end *b, struct ibv_ah *ab)
{
	bool v4 = !memcmp(a->gid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12);
	struct ibv_ah_attr back;
	struct ibv_ah *ba;
	struct ibv_wc wc;
	bool ok;

	if (send_to(a, ab, b, QKEY_B, 100, 1, false) || !sent(a, IBV_WC_SUCCESS) ||
	    !received(b, &wc, 100, 1))
		return false;
	ok = wc.src_qp == a->qp->qp_num && grh_ok(slot(b, wc.wr_id), a, v4);
	if (!ok)
		fprintf(stderr, "# src_qp %u (want %u), GRH area %s\n", wc.src_qp,
			a->qp->qp_num, ok ? "" : "wrong");
	/* ibv_create_ah_from_wc() reads the GRH area: v4 or v6, and where. */
	memset(&back, 0, sizeof(back));
	if (ibv_init_ah_from_wc(b->ctx, 1, &wc, (struct ibv_grh *)slot(b, wc.wr_id),
				&back)) {
		fprintf(stderr, "# ibv_init_ah_from_wc: %s\n", strerror(errno));
		return false;
	}
	if (back.grh.sgid_index != b->gid_index ||
	    memcmp(back.grh.dgid.raw, a->gid.raw, 16)) {
		fprintf(stderr, "# AH from the WC: sgid_index %u (want %d), dgid wrong\n",
			back.grh.sgid_index, b->gid_index);
		ok = false;
	}
	ba = ibv_create_ah_from_wc(b->pd, &wc, (struct ibv_grh *)slot(b, wc.wr_id), 1);
	if (!ba) {
		fprintf(stderr, "# ibv_create_ah_from_wc: %s\n", strerror(errno));
		return false;
	}
	ok &= !send_to(b, ba, a, QKEY_A, 200, 2, false) &&
	      sent(b, IBV_WC_SUCCESS) && received(a, &wc, 200, 2) &&
	      wc.src_qp == b->qp->qp_num;
	ibv_destroy_ah(ba);
	return ok;
}

static bool case_imm(struct end *a, struct end *b, struct ibv_ah *ab)
{
	struct ibv_wc wc;

	return !send_to(a, ab, b, QKEY_B, 8, 3, true) &&
	       sent(a, IBV_WC_SUCCESS) && received(b, &wc, 8, 3) &&
	       (wc.wc_flags & IBV_WC_WITH_IMM) &&
	       ntohl(wc.imm_data) == (0xc0ffee00u | 3);
}

/* A datagram that must not arrive, then one that must, first. */
static bool case_qkey(struct end *a, struct end *b, struct ibv_ah *ab)
{
	struct ibv_wc wc;

	return !send_to(a, ab, b, QKEY_A, 16, 4, false) &&
	       sent(a, IBV_WC_SUCCESS) &&
	       !send_to(a, ab, b, QKEY_B, 16, 5, false) &&
	       sent(a, IBV_WC_SUCCESS) && received(b, &wc, 16, 5);
}

/* a's own Q_Key goes out for 0x80010000: b must have a's Q_Key meanwhile. */
static bool case_privqkey(struct end *a, struct end *b, struct ibv_ah *ab)
{
	struct ibv_qp_attr attr = { .qkey = QKEY_A };
	struct ibv_wc wc;
	bool ok;

	if (ibv_modify_qp(b->qp, &attr, IBV_QP_QKEY))
		return false;
	ok = !send_to(a, ab, b, 0x80010000u, 16, 6, false) &&
	     sent(a, IBV_WC_SUCCESS) && received(b, &wc, 16, 6);
	attr.qkey = QKEY_B;
	return !ibv_modify_qp(b->qp, &attr, IBV_QP_QKEY) && ok;
}

static bool case_toolong(struct end *a, struct end *b, struct ibv_ah *ab)
{
	struct ibv_port_attr pa;
	struct ibv_wc wc;
	size_t mtu;

	if (ibv_query_port(a->ctx, 1, &pa))
		return false;
	mtu = 128u << pa.active_mtu;
	if (mtu + 1 > BUF)
		return false;
	return !send_to(a, ab, b, QKEY_B, mtu + 1, 7, false) &&
	       sent(a, IBV_WC_SUCCESS) &&
	       !send_to(a, ab, b, QKEY_B, mtu, 8, false) &&
	       sent(a, IBV_WC_SUCCESS) && received(b, &wc, mtu, 8);
}

/* Last: the error moves a's QP to the error state. */
static bool case_otherpd(struct end *a, struct end *b)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(a->ctx);
	struct ibv_ah *ah2 = pd2 ? ah_to(pd2, b, a->gid_index) : NULL;
	bool ok;

	if (!ah2)
		return false;
	ok = !send_to(a, ah2, b, QKEY_B, 16, 9, false) &&
	     sent(a, IBV_WC_LOC_QP_OP_ERR);
	ibv_destroy_ah(ah2);
	ibv_dealloc_pd(pd2);
	return ok;
}

static bool case_nogrh(struct end *a)
{
	struct ibv_ah_attr attr = { .port_num = 1, .dlid = 1 };
	struct ibv_ah *ah = ibv_create_ah(a->pd, &attr);

	if (ah) {
		ibv_destroy_ah(ah);
		return false;
	}
	return errno == EINVAL;
}

/* An AH to IPv4 or IPv6 address @addr; the errno (0 if it was created). */
static int ah_errno(struct end *a, const char *addr)
{
	struct ibv_ah_attr attr = {
		.is_global = 1, .port_num = 1,
		.grh = { .sgid_index = a->gid_index, .hop_limit = 64 },
	};
	struct ibv_ah *ah;

	if (strchr(addr, ':')) {
		if (inet_pton(AF_INET6, addr, attr.grh.dgid.raw) != 1)
			return -1;
	} else {
		attr.grh.dgid.raw[10] = 0xff;
		attr.grh.dgid.raw[11] = 0xff;
		if (inet_pton(AF_INET, addr, attr.grh.dgid.raw + 12) != 1)
			return -1;
	}
	ah = ibv_create_ah(a->pd, &attr);
	if (!ah)
		return errno;
	ibv_destroy_ah(ah);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev_a = NULL, *dev_b = NULL, *noroute = NULL, *silent = NULL;
	int gid_a = -1, gid_b = -1, opt, e;
	struct end a = {}, b = {};
	struct ibv_ah *ab;

	while ((opt = getopt(argc, argv, "d:g:D:G:u:n:")) != -1) {
		switch (opt) {
		case 'd': dev_a = optarg; break;
		case 'g': gid_a = atoi(optarg); break;
		case 'D': dev_b = optarg; break;
		case 'G': gid_b = atoi(optarg); break;
		case 'u': noroute = optarg; break;
		case 'n': silent = optarg; break;
		default: return 2;
		}
	}
	if (!dev_a || gid_a < 0)
		return 2;
	if (!dev_b) {
		dev_b = dev_a;
		gid_b = gid_a;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (end_init(&a, dev_a, gid_a, QKEY_A) ||
	    end_init(&b, dev_b, gid_b, QKEY_B)) {
		perror("# setup");
		return 1;
	}
	ab = ah_to(a.pd, &b, a.gid_index);
	if (!ab) {
		perror("# ibv_create_ah");
		return 1;
	}
	tap(case_grh(&a, &b, ab), "grh: GRH area, src_qp, an AH from the WC and a reply through it");
	tap(case_imm(&a, &b, ab), "imm: SEND_WITH_IMM carries its immediate data");
	tap(case_qkey(&a, &b, ab), "qkey: a wrong Q_Key is not delivered");
	tap(case_privqkey(&a, &b, ab), "privqkey: a privileged Q_Key in the WR sends the QP's own");
	tap(case_toolong(&a, &b, ab), "toolong: longer than the MTU completes, is not sent");
	tap(case_nogrh(&a), "nogrh: an AH without a GRH is EINVAL");
	if (noroute) {
		e = ah_errno(&a, noroute);
		tap(e == ENETUNREACH || e == EHOSTUNREACH,
		    "noroute: an AH to an address without a route is ENETUNREACH or EHOSTUNREACH");
		if (e != ENETUNREACH && e != EHOSTUNREACH)
			printf("# got %s\n", strerror(e));
	}
	if (silent) {
		e = ah_errno(&a, silent);
		tap(e == ETIMEDOUT, "silent: an AH to an on-link address nobody answers is ETIMEDOUT");
		if (e != ETIMEDOUT)
			printf("# got %s\n", strerror(e));
	}
	tap(case_otherpd(&a, &b), "otherpd: an AH of another PD fails the WQE with LOC_QP_OP_ERR");
	ibv_destroy_ah(ab);
	printf("# %d cases, %d failed\n", n, fails);
	return fails ? 1 : 0;
}
