// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * write_check: the smallest verbs program Documentation/ci.md's example
 * builds outside the srx tree. Two RC QPs on one device, connected to each
 * other through its RoCE v2 GID; one RDMA WRITEs a buffer into the other's
 * MR, then SENDs a message that says so; the program checks both arrive.
 *
 *   write_check DEVICE GID_INDEX
 *
 * Exit status 0 when both arrived intact, 1 with a message otherwise.
 */
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN 65536

static void die(const char *what)
{
	fprintf(stderr, "write_check: %s\n", what);
	exit(1);
}

/* RESET -> INIT -> RTR -> RTS, the peer being @dest on @gid. */
static void connect_qp(struct ibv_qp *qp, uint32_t dest, union ibv_gid *gid,
		       int gid_index)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	struct ibv_mr *mr;
	union ibv_gid gid;
	char *buf;
	int i, n, gid_index;

	if (argc != 3)
		die("usage: write_check DEVICE GID_INDEX");
	gid_index = atoi(argv[2]);
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("no such device, or it would not open");
	if (ibv_query_gid(ctx, 1, gid_index, &gid))
		die("ibv_query_gid");

	/* [0, LEN): what is written; [LEN, 2 LEN): where; then the message. */
	buf = calloc(1, 2 * LEN + 64);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!buf || !pd || !cq)
		die("allocation");
	mr = ibv_reg_mr(pd, buf, 2 * LEN + 64,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	for (i = 0; i < 2; i++) {
		struct ibv_qp_init_attr init = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp[i] = ibv_create_qp(pd, &init);
		if (!qp[i])
			die("ibv_create_qp");
	}
	connect_qp(qp[0], qp[1]->qp_num, &gid, gid_index);
	connect_qp(qp[1], qp[0]->qp_num, &gid, gid_index);

	for (i = 0; i < LEN; i++)
		buf[i] = (char)(i * 7 + 1);
	strcpy(buf + 2 * LEN + 32, "written");

	struct ibv_sge rsge = { (uintptr_t)(buf + 2 * LEN), 32, mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *bad_r;
	struct ibv_sge wsge = { (uintptr_t)buf, LEN, mr->lkey };
	struct ibv_sge ssge = { (uintptr_t)(buf + 2 * LEN + 32), 8, mr->lkey };
	struct ibv_send_wr send = {
		.sg_list = &ssge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr write = {
		.next = &send, .sg_list = &wsge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.wr.rdma = { (uintptr_t)(buf + LEN), mr->rkey },
	}, *bad_s;

	if (ibv_post_recv(qp[1], &rwr, &bad_r))
		die("ibv_post_recv");
	if (ibv_post_send(qp[0], &write, &bad_s))
		die("ibv_post_send");
	/* The SEND completes after the WRITE before it: RC keeps order. */
	for (i = 0; i < 2; i++) {
		struct ibv_wc wc;
		long spins = 0;

		/* Bounded: a lost completion fails the test, not hangs it. */
		while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
			if (++spins > 1000000000L)
				die("no completion");
		if (n < 0 || wc.status != IBV_WC_SUCCESS) {
			fprintf(stderr, "write_check: %s\n",
				n < 0 ? "ibv_poll_cq" : ibv_wc_status_str(wc.status));
			return 1;
		}
	}
	if (memcmp(buf, buf + LEN, LEN))
		die("the WRITE's bytes differ");
	if (strcmp(buf + 2 * LEN, "written"))
		die("the SEND's message differs");
	printf("write_check: %d bytes written and a message sent on %s\n",
	       LEN, argv[1]);
	ibv_destroy_qp(qp[0]);
	ibv_destroy_qp(qp[1]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
