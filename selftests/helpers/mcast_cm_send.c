// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mcast_cm_send - the sending half of librdmacm's mckey, waiting for its
 * sends: bound to -b ADDR, it joins group -m GROUP through rdma_cm
 * (RDMA_PS_UDP), builds the AH, QPN and Q_Key from the join event as mckey
 * does, posts -n COUNT (default 10) SEND_WITH_IMMs of 100 bytes (mckey's
 * default size, so an mckey receiver's buffers take them), every one
 * signaled, and waits for every completion before it leaves the group.
 *
 * Why not mckey -s: mckey posts unsignaled sends and tears down its AH
 * and QP right after posting. rdma_rxe 6.12 runs a user QP's send queue
 * from a workqueue (rxe_verbs.c, rxe_post_send(): rxe_sched_task()), and
 * a WQE the worker reaches after the AH is destroyed fails instead of
 * being sent (rxe_av.c, rxe_get_av()): mckey's rxe sender put 1 of its 10
 * datagrams on the wire in a VM run, 0 with the sender at RT priority.
 * srx's receiving side is what the test is after, so the sender waits.
 *
 * Every wait is bounded (10 s per CM event, 30 s for the completions).
 * Prints what it did; exits 0 if every send completed successfully.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MSG_SIZE	100
#define EVENT_WAIT_MS	10000
#define CQ_WAIT_S	30

static int get_addr(const char *s, struct sockaddr_storage *ss)
{
	struct addrinfo *res;
	int ret;

	ret = getaddrinfo(s, NULL, NULL, &res);
	if (ret) {
		fprintf(stderr, "%s: %s\n", s, gai_strerror(ret));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* The next CM event, which must be @want; 0 and *evp set, or -1. */
static int next_event(struct rdma_event_channel *ch,
		      enum rdma_cm_event_type want, struct rdma_cm_event **evp)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	int ret;

	ret = poll(&pfd, 1, EVENT_WAIT_MS);
	if (ret <= 0) {
		fprintf(stderr, "no CM event in %d ms (waiting for %s)\n",
			EVENT_WAIT_MS, rdma_event_str(want));
		return -1;
	}
	if (rdma_get_cm_event(ch, evp)) {
		perror("rdma_get_cm_event");
		return -1;
	}
	if ((*evp)->event != want) {
		fprintf(stderr, "CM event %s (status %d), not %s\n",
			rdma_event_str((*evp)->event), (*evp)->status,
			rdma_event_str(want));
		rdma_ack_cm_event(*evp);
		return -1;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage src = {}, dst = {};
	const char *src_s = NULL, *dst_s = NULL;
	struct rdma_event_channel *ch;
	struct ibv_qp_init_attr ia = {};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_ah *ah = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	uint32_t qpn = 0, qkey = 0;
	int count = 10, done = 0, ok = 0, i, op, rc = 1;
	static char buf[MSG_SIZE];
	double deadline;

	while ((op = getopt(argc, argv, "b:m:n:")) != -1) {
		switch (op) {
		case 'b':
			src_s = optarg;
			break;
		case 'm':
			dst_s = optarg;
			break;
		case 'n':
			count = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (!src_s || !dst_s || count < 1 || count > 1024)
		goto usage;
	if (get_addr(src_s, &src) || get_addr(dst_s, &dst))
		return 1;

	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_UDP)) {
		perror("rdma_create_id");
		goto out_channel;
	}
	if (rdma_bind_addr(id, (struct sockaddr *)&src)) {
		perror("rdma_bind_addr");
		goto out_id;
	}
	if (rdma_resolve_addr(id, (struct sockaddr *)&src,
			      (struct sockaddr *)&dst, 2000)) {
		perror("rdma_resolve_addr");
		goto out_id;
	}
	if (next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, &ev))
		goto out_id;
	rdma_ack_cm_event(ev);

	pd = ibv_alloc_pd(id->verbs);
	cq = pd ? ibv_create_cq(id->verbs, count, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) :
		  NULL;
	if (!mr) {
		perror("PD, CQ or MR");
		goto out_verbs;
	}
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.qp_type = IBV_QPT_UD;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = count;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd, &ia)) {
		perror("rdma_create_qp");
		goto out_verbs;
	}

	if (rdma_join_multicast(id, (struct sockaddr *)&dst, NULL)) {
		perror("rdma_join_multicast");
		goto out_qp;
	}
	if (next_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN, &ev))
		goto out_leave;
	qpn = ev->param.ud.qp_num;
	qkey = ev->param.ud.qkey;
	ah = ibv_create_ah(pd, &ev->param.ud.ah_attr);
	rdma_ack_cm_event(ev);
	if (!ah) {
		perror("ibv_create_ah");
		goto out_leave;
	}
	printf("joined %s: QPN 0x%x, Q_Key 0x%x\n", dst_s, qpn, qkey);

	for (i = 0; i < count; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)buf, .length = MSG_SIZE,
			.lkey = mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.imm_data = htonl(id->qp->qp_num),
			.wr.ud = { .ah = ah, .remote_qpn = qpn,
				   .remote_qkey = qkey },
		}, *bad;

		if (ibv_post_send(id->qp, &wr, &bad)) {
			perror("ibv_post_send");
			goto out_ah;
		}
	}

	deadline = now_s() + CQ_WAIT_S;
	while (done < count && now_s() < deadline) {
		struct ibv_wc wc[8];
		int n = ibv_poll_cq(cq, 8, wc);

		if (n < 0) {
			fprintf(stderr, "ibv_poll_cq: %d\n", n);
			break;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS)
				ok++;
			else
				fprintf(stderr, "send %llu: %s\n",
					(unsigned long long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status));
		}
		done += n;
		if (!n)
			usleep(1000);
	}
	printf("sent %d, %d completed, %d successfully\n", count, done, ok);
	if (ok == count)
		rc = 0;

out_ah:
	ibv_destroy_ah(ah);
out_leave:
	if (rdma_leave_multicast(id, (struct sockaddr *)&dst))
		perror("rdma_leave_multicast");
out_qp:
	rdma_destroy_qp(id);
out_verbs:
	if (mr)
		ibv_dereg_mr(mr);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
out_id:
	rdma_destroy_id(id);
out_channel:
	rdma_destroy_event_channel(ch);
	return rc;

usage:
	fprintf(stderr, "usage: %s -b BIND_ADDR -m GROUP [-n COUNT]\n",
		argv[0]);
	return 1;
}
