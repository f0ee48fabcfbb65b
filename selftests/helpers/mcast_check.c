// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mcast_check - UD multicast through ibv_attach_mcast(3), case by case: a
 * sending UD QP on device -d (GID index -g), and two receiving UD QPs on
 * device -D, which may be the same device, with Q_Keys of their own.
 * -N NETDEV names the receiving device's netdev, whose IP group
 * memberships `ip maddr show` lists, in namespace -n NS if given.
 *
 *   deliver    both QPs attached to a group, the sender's datagram to the
 *              group (QP 0xFFFFFF) with one QP's Q_Key: only that QP
 *              receives it, with IBV_WC_GRH, the sender's src_qp, and a
 *              GRH area whose destination is the group's address
 *   both       the receivers' Q_Keys made equal: both receive one send
 *   join       the netdev is in the IP group while a QP is attached, once
 *              however many are attached, and leaves it with the last
 *   detach     after both detach, a datagram to the group reaches neither
 *   again      attaching a QP twice succeeds and attaches it once: one
 *              detach ends it, a second is EINVAL
 *   busy       ibv_destroy_qp() of an attached QP is EBUSY
 *   errnos     EINVAL: an RC QP, a GID that is not multicast, a detach of
 *              a group the QP is not in
 *
 * -6 uses an IPv6 group (ff0e::5358:1) and IPv6 GIDs; else 230.83.88.1.
 * Prints TAP lines, one per case; exits 0 if every case passed.
 */
#include <arpa/inet.h>
#include <errno.h>
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
#define BUF	2048
#define NRECV	8
#define QKEY_1	0x11110001u
#define QKEY_2	0x22220002u
#define MC_QPN	0xffffffu

struct end {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	uint8_t *buf;		/* NRECV receive slots */
	struct ibv_mr *mr;
	unsigned int posted;
};

static int n, fails;
static struct ibv_context *ctx_a, *ctx_b;
static struct ibv_pd *pd_a, *pd_b;
static union ibv_gid mgid, gid_a;
static int gidx_a;
static const char *netdev, *group, *ns;

static void tap(bool ok, const char *what)
{
	n++;
	printf("%sok %d %s\n", ok ? "" : "not ", n, what);
	if (!ok)
		fails++;
}

static int post_recv(struct end *e)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(e->buf + (e->posted % NRECV) * BUF),
		.length = BUF, .lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = e->posted, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	e->posted++;
	return ibv_post_recv(e->qp, &wr, &bad);
}

static int ud_qp(struct ibv_context *ctx, struct ibv_pd *pd, struct end *e,
		 uint32_t qkey)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i;

	e->cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	e->buf = calloc(NRECV, BUF);
	if (!e->cq || !e->buf)
		return -1;
	e->mr = ibv_reg_mr(pd, e->buf, NRECV * BUF, IBV_ACCESS_LOCAL_WRITE);
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	e->qp = e->mr ? ibv_create_qp(pd, &ia) : NULL;
	if (!e->qp || rc_ud_qp_rts(e->qp, qkey))
		return -1;
	for (i = 0; i < NRECV; i++)
		if (post_recv(e))
			return -1;
	return 0;
}

static int set_qkey(struct end *e, uint32_t qkey)
{
	struct ibv_qp_attr attr = { .qkey = qkey };

	return ibv_modify_qp(e->qp, &attr, IBV_QP_QKEY);
}

/* Send @len bytes of @tag to the group with @qkey; the send completes. */
static bool send_group(struct end *s, struct ibv_ah *ah, uint32_t qkey,
		       uint8_t tag)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf, .length = 64, .lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = tag, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		.wr.ud = { .ah = ah, .remote_qpn = MC_QPN,
			   .remote_qkey = qkey },
	}, *bad;
	struct ibv_wc wc;

	memset(s->buf, tag, 64);
	if (ibv_post_send(s->qp, &wr, &bad) || rc_poll_ms(s->cq, &wc, 10000) != 1 ||
	    wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "# send to the group failed\n");
		return false;
	}
	return true;
}

/* Whether @e receives @tag's datagram (@want) or nothing (!@want). */
static bool receives(struct end *e, uint8_t tag, bool want, uint32_t src_qp)
{
	struct ibv_wc wc;
	const uint8_t *g;
	int r = rc_poll_ms(e->cq, &wc, want ? 10000 : 1000);
	bool v4 = !memcmp(mgid.raw, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12);

	if (!want) {
		if (r)
			fprintf(stderr, "# a datagram arrived where none should\n");
		return r == 0;
	}
	if (r != 1 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "# no datagram\n");
		return false;
	}
	g = e->buf + (wc.wr_id % NRECV) * BUF;
	if (wc.byte_len != GRH + 64 || !(wc.wc_flags & IBV_WC_GRH) ||
	    wc.src_qp != src_qp || g[GRH] != tag ||
	    (v4 ? memcmp(g + 36, mgid.raw + 12, 4) :
		  memcmp(g + 24, mgid.raw, 16))) {
		fprintf(stderr, "# datagram: byte_len %u flags %#x src_qp %u tag %u, or the GRH area's destination is not the group\n",
			wc.byte_len, wc.wc_flags, wc.src_qp, g[GRH]);
		return false;
	}
	return post_recv(e) == 0;
}

/*
 * How `ip maddr show dev NETDEV` lists the group: -1 not at all, else the
 * number of users it shows (1 when it shows none).
 */
static int ip_users(void)
{
	char cmd[384], line[256];
	FILE *f;
	int k = -1;

	snprintf(cmd, sizeof(cmd),
		 "ip %s %s maddr show dev %s | grep -E 'inet6? +%s( |$)'",
		 ns ? "-n" : "", ns ? ns : "", netdev, group);
	f = popen(cmd, "r");
	if (!f)
		return -2;
	if (fgets(line, sizeof(line), f)) {
		k = 1;
		if (strstr(line, "users"))
			sscanf(strstr(line, "users"), "users %d", &k);
	}
	pclose(f);
	return k;
}

int main(int argc, char **argv)
{
	const char *dev_a = NULL, *dev_b = NULL;
	int opt, e;
	bool v6 = false, ok;
	struct end s = {}, r1 = {}, r2 = {}, rc = {};
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1,
						.max_recv_wr = 1,
						.max_send_sge = 1,
						.max_recv_sge = 1 } };
	union ibv_gid notmc;
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;

	gidx_a = -1;
	while ((opt = getopt(argc, argv, "d:g:D:N:n:6")) != -1) {
		switch (opt) {
		case 'd': dev_a = optarg; break;
		case 'g': gidx_a = atoi(optarg); break;
		case 'D': dev_b = optarg; break;
		case 'N': netdev = optarg; break;
		case 'n': ns = optarg; break;
		case '6': v6 = true; break;
		default: return 2;
		}
	}
	if (!dev_a || gidx_a < 0 || !netdev)
		return 2;
	if (!dev_b)
		dev_b = dev_a;
	setvbuf(stdout, NULL, _IOLBF, 0);
	group = v6 ? "ff0e::5358:1" : "230.83.88.1";
	memset(&mgid, 0, sizeof(mgid));
	if (v6) {
		inet_pton(AF_INET6, group, mgid.raw);
	} else {
		mgid.raw[10] = mgid.raw[11] = 0xff;
		inet_pton(AF_INET, group, mgid.raw + 12);
	}
	ctx_a = rc_open_device(dev_a);
	ctx_b = rc_open_device(dev_b);
	if (!ctx_a || !ctx_b || ibv_query_gid(ctx_a, 1, gidx_a, &gid_a))
		return 1;
	pd_a = ibv_alloc_pd(ctx_a);
	pd_b = ibv_alloc_pd(ctx_b);
	if (!pd_a || !pd_b || ud_qp(ctx_a, pd_a, &s, QKEY_1) ||
	    ud_qp(ctx_b, pd_b, &r1, QKEY_1) || ud_qp(ctx_b, pd_b, &r2, QKEY_2)) {
		perror("# setup");
		return 1;
	}
	aa.grh.dgid = mgid;
	aa.grh.sgid_index = gidx_a;
	aa.grh.hop_limit = 1;
	ah = ibv_create_ah(pd_a, &aa);
	if (!ah) {
		perror("# ibv_create_ah to the group");
		return 1;
	}

	e = ip_users();
	ok = e == -1 && !ibv_attach_mcast(r1.qp, &mgid, 0) &&
	     !ibv_attach_mcast(r2.qp, &mgid, 0);
	if (!ok)
		fprintf(stderr, "# before: %d users; attach: %s\n", e,
			strerror(errno));
	e = ip_users();
	if (e != 1)
		fprintf(stderr, "# after two attaches: %d users\n", e);
	tap(ok && e == 1,
	    "join: the netdev joins the IP group with the first QP, once");
	tap(ok && send_group(&s, ah, QKEY_2, 1) &&
	    receives(&r2, 1, true, s.qp->qp_num) &&
	    receives(&r1, 1, false, 0),
	    "deliver: a datagram to the group reaches the attached QP whose Q_Key it has, only");
	tap(ok && !set_qkey(&r2, QKEY_1) && send_group(&s, ah, QKEY_1, 2) &&
	    receives(&r1, 2, true, s.qp->qp_num) &&
	    receives(&r2, 2, true, s.qp->qp_num),
	    "both: one datagram reaches every attached QP with its Q_Key");
	errno = 0;
	e = ibv_destroy_qp(r1.qp);
	tap(e == EBUSY, "busy: destroying an attached QP is EBUSY");
	if (e && e != EBUSY)
		fprintf(stderr, "# destroy: %s\n", strerror(e));
	tap(!ibv_attach_mcast(r1.qp, &mgid, 0) &&
	    !ibv_detach_mcast(r1.qp, &mgid, 0) &&
	    ibv_detach_mcast(r1.qp, &mgid, 0) == EINVAL && ip_users() == 1,
	    "again: a second attach attaches once; a second detach is EINVAL");
	tap(!ibv_detach_mcast(r2.qp, &mgid, 0) && ip_users() == -1,
	    "join: the netdev leaves the IP group with the last QP");
	tap(send_group(&s, ah, QKEY_1, 3) && receives(&r1, 3, false, 0) &&
	    receives(&r2, 3, false, 0),
	    "detach: nothing reaches a detached QP");

	memset(&notmc, 0, sizeof(notmc));
	notmc.raw[10] = notmc.raw[11] = 0xff;
	notmc.raw[12] = 10;
	notmc.raw[15] = 1;
	rc.cq = r1.cq;
	ia.send_cq = ia.recv_cq = r1.cq;
	rc.qp = ibv_create_qp(pd_b, &ia);
	tap(rc.qp && ibv_attach_mcast(rc.qp, &mgid, 0) == EINVAL &&
	    ibv_attach_mcast(r1.qp, &notmc, 0) == EINVAL &&
	    ibv_detach_mcast(r2.qp, &mgid, 0) == EINVAL,
	    "errnos: EINVAL for an RC QP, a unicast GID, a group not joined");
	if (rc.qp)
		ibv_destroy_qp(rc.qp);

	/* Left attached: closing the process must detach and leave. */
	if (ibv_attach_mcast(r1.qp, &mgid, 0))
		perror("# attach before exit");
	ibv_destroy_ah(ah);
	printf("# %d cases, %d failed\n", n, fails);
	return fails ? 1 : 0;
}
