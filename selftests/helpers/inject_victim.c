// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * inject_victim - the target of selftests/inject_test.sh's forged packets:
 * RC QPs on one device that take requests from a peer address where no
 * real QP sends them, and a buffer whose every byte is known.
 *
 *   inject_victim -d DEV -g GID_INDEX -a PEER_IPV4 -f GO_FILE
 *                 [-q QPS] [-w BYTES] [-t SECONDS]
 *
 * Creates QPS (default 4) RC QPs on DEV, each brought to RTS with the
 * IPv4-mapped GID of PEER_IPV4 as its destination (an RC responder takes
 * packets from that address only: kernel/recv.c, srx_pkt_from_peer()) and
 * a destination QPN no QP has, so that what they answer (ACKs, NAKs) is
 * dropped by the peer's device. QP i expects PSN 0x1000 * (i + 1). One
 * 4096-byte buffer, registered with every remote right, holds byte j =
 * (j * 13 + 1) & 0xff. Prints, and flushes:
 *
 *   qp I qpn=N psn=N
 *   mr addr=N rkey=N len=4096
 *   ready
 *
 * then waits (at most SECONDS, default 120) for GO_FILE to exist, the
 * test's sign that its packets are sent, and reports:
 *
 *   qp I state=RESET|INIT|RTR|RTS|SQD|SQE|ERR
 *   buffer ok                  the first BYTES (-w, default 0) bytes hold
 *                              roce_send.py's payload ((i * 7 + 3) &
 *                              0xff), every other byte is as registered
 *   buffer changed at J: X     otherwise, the first byte that differs
 *
 * Exit status 0 once the report is printed, 2 on a usage or setup error or
 * if GO_FILE never came.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_qp.h"

#define MAX_QPS		8
#define BUF_BYTES	4096
/* A QPN no QP of the peer has (srx allocates them from the bottom up). */
#define NO_QPN		0xabc00

static const char *const state_names[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
	[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD",
	[IBV_QPS_SQE] = "SQE", [IBV_QPS_ERR] = "ERR",
};

static uint8_t pattern(size_t j)
{
	return (uint8_t)(j * 13 + 1);
}

static uint8_t injected(size_t j)
{
	return (uint8_t)(j * 7 + 3);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *peer = NULL, *go = NULL;
	int gid = -1, nqp = 4, wbytes = 0, opt, i;
	double limit = 120;
	struct ibv_qp *qps[MAX_QPS];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	union ibv_gid dgid;
	struct in_addr a4;
	uint8_t *buf;
	size_t j;

	while ((opt = getopt(argc, argv, "d:g:a:f:q:w:t:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid = atoi(optarg); break;
		case 'a': peer = optarg; break;
		case 'f': go = optarg; break;
		case 'q': nqp = atoi(optarg); break;
		case 'w': wbytes = atoi(optarg); break;
		case 't': limit = atof(optarg); break;
		default: goto usage;
		}
	}
	if (!dev || gid < 0 || !peer || !go || nqp < 1 || nqp > MAX_QPS ||
	    wbytes < 0 || wbytes > BUF_BYTES || inet_pton(AF_INET, peer, &a4) != 1)
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* ::ffff:a.b.c.d, the GID of an IPv4 address (RoCE v2). */
	memset(&dgid, 0, sizeof(dgid));
	dgid.raw[10] = 0xff;
	dgid.raw[11] = 0xff;
	memcpy(&dgid.raw[12], &a4, 4);

	ctx = rc_open_device(dev);
	if (!ctx)
		return 2;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	buf = aligned_alloc(4096, BUF_BYTES);
	if (!cq || !buf) {
		fprintf(stderr, "cannot allocate a PD, CQ or buffer\n");
		return 2;
	}
	for (j = 0; j < BUF_BYTES; j++)
		buf[j] = pattern(j);
	mr = ibv_reg_mr(pd, buf, BUF_BYTES, RC_ACCESS_ALL);
	if (!mr) {
		perror("ibv_reg_mr");
		return 2;
	}
	for (i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr_ex ia = {
			.pd = pd, .send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct rc_path path = {
			.sgid_index = gid, .dgid = dgid, .dqpn = NO_QPN + i,
			.mtu = IBV_MTU_1024, .sq_psn = 1,
			.rq_psn = 0x1000 * (i + 1), .rd_atomic = 1,
			.timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			.min_rnr_timer = 1,
		};

		qps[i] = rc_qp_init(ctx, &ia);
		if (!qps[i] || rc_qp_rts(qps[i], &path)) {
			fprintf(stderr, "cannot bring QP %d to RTS\n", i);
			return 2;
		}
		printf("qp %d qpn=%u psn=%u\n", i, qps[i]->qp_num, path.rq_psn);
	}
	printf("mr addr=%llu rkey=%u len=%d\nready\n",
	       (unsigned long long)(uintptr_t)buf, mr->rkey, BUF_BYTES);

	for (j = 0; access(go, F_OK); j++) {
		if (j * 0.05 > limit) {
			fprintf(stderr, "%s never came\n", go);
			return 2;
		}
		usleep(50000);
	}

	for (i = 0; i < nqp; i++) {
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr attr;

		if (ibv_query_qp(qps[i], &attr, IBV_QP_STATE, &init)) {
			perror("ibv_query_qp");
			return 2;
		}
		printf("qp %d state=%s\n", i,
		       attr.qp_state <= IBV_QPS_ERR ?
		       state_names[attr.qp_state] : "?");
	}
	for (j = 0; j < BUF_BYTES; j++) {
		uint8_t want = (int)j < wbytes ? injected(j) : pattern(j);

		if (buf[j] != want) {
			printf("buffer changed at %zu: %u, not %u\n", j, buf[j],
			       want);
			break;
		}
	}
	if (j == BUF_BYTES)
		printf("buffer ok\n");

	for (i = 0; i < nqp; i++)
		ibv_destroy_qp(qps[i]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	return 0;

usage:
	fprintf(stderr, "usage: inject_victim -d DEV -g GID_INDEX -a PEER_IPV4 "
		"-f GO_FILE [-q QPS] [-w BYTES] [-t SECONDS]\n");
	return 2;
}
