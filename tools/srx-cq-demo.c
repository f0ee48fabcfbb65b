// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srx-cq-demo: the smallest complete tour of a completion queue.
 *
 * Creates a completion channel and a CQ on an RDMA device, arms the CQ,
 * makes one completion happen, waits for the event, polls the completion
 * and destroys everything, saying what it does at each step. Without a
 * peer, the completion comes from the one thing that needs none: a receive
 * posted to a queue pair that is then moved to the error state completes as
 * "flushed".
 *
 * Usage: srx-cq-demo [-d DEVICE]   (default: the first device)
 * Exit status: 0 when every step worked.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define DEMO_WR_ID 0x5358cafeULL

/* Handed to ibv_create_cq() and expected back with the event. */
static char demo_cq_context[] = "srx-cq-demo";

static int step(const char *what, int err)
{
	if (err) {
		printf("  FAILED: %s: %s\n", what, strerror(err));
		return 1;
	}
	return 0;
}

static struct ibv_device *pick_device(struct ibv_device **list, const char *name)
{
	for (; *list; list++)
		if (!name || !strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

static int move_qp(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask = IBV_QP_STATE;

	if (state == IBV_QPS_INIT) {
		attr.pkey_index = 0;
		attr.port_num = 1;
		attr.qp_access_flags = 0;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &attr, mask);
}

int main(int argc, char **argv)
{
	struct ibv_recv_wr wr = { .wr_id = DEMO_WR_ID }, *bad_wr;
	struct ibv_qp_init_attr qp_attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_comp_channel *channel;
	struct ibv_device **list, *dev;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_qp *qp;
	const char *name = NULL;
	void *ev_ctx;
	struct pollfd pfd;
	int opt, n, ret = 1;

	while ((opt = getopt(argc, argv, "d:h")) != -1) {
		if (opt == 'd') {
			name = optarg;
		} else {
			fprintf(stderr, "usage: %s [-d DEVICE]\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}

	list = ibv_get_device_list(NULL);
	if (!list) {
		perror("ibv_get_device_list");
		return 1;
	}
	dev = pick_device(list, name);
	if (!dev) {
		printf("no RDMA device%s%s found (is `rdma link add` done?)\n",
		       name ? " named " : "", name ? name : "");
		goto out_list;
	}

	printf("1. open device %s\n", ibv_get_device_name(dev));
	ctx = ibv_open_device(dev);
	if (!ctx) {
		step("ibv_open_device", errno);
		goto out_list;
	}

	printf("2. create a completion channel and a CQ for 16 completions\n");
	channel = ibv_create_comp_channel(ctx);
	if (!channel) {
		step("ibv_create_comp_channel", errno);
		goto out_ctx;
	}
	cq = ibv_create_cq(ctx, 16, demo_cq_context, channel, 0);
	if (!cq) {
		step("ibv_create_cq", errno);
		goto out_channel;
	}
	printf("   got a CQ with room for %d completions, on vector 0 of %d\n",
	       cq->cqe, ctx->num_comp_vectors);

	printf("3. create a protection domain and a queue pair using the CQ\n");
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		step("ibv_alloc_pd", errno);
		goto out_cq;
	}
	qp_attr.send_cq = cq;
	qp_attr.recv_cq = cq;
	qp = ibv_create_qp(pd, &qp_attr);
	if (!qp) {
		step("ibv_create_qp", errno);
		goto out_pd;
	}
	printf("   QP number %u\n", qp->qp_num);

	printf("4. post one receive, arm the CQ, move the QP to the error state\n");
	if (step("modify QP to INIT", move_qp(qp, IBV_QPS_INIT)) ||
	    step("ibv_post_recv", ibv_post_recv(qp, &wr, &bad_wr)) ||
	    step("ibv_req_notify_cq", ibv_req_notify_cq(cq, 0)) ||
	    step("modify QP to ERR", move_qp(qp, IBV_QPS_ERR)))
		goto out_qp;

	printf("5. wait for the completion event\n");
	pfd.fd = channel->fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) != 1) {
		printf("  FAILED: no event within 10 s\n");
		goto out_qp;
	}
	if (step("ibv_get_cq_event", ibv_get_cq_event(channel, &ev_cq, &ev_ctx) ? errno : 0))
		goto out_qp;
	printf("   event arrived for %s CQ with the context we gave it\n",
	       ev_cq == cq && ev_ctx == (void *)demo_cq_context ? "our" : "ANOTHER");
	ibv_ack_cq_events(cq, 1);

	printf("6. poll the completion\n");
	n = ibv_poll_cq(cq, 1, &wc);
	if (n != 1) {
		printf("  FAILED: ibv_poll_cq returned %d\n", n);
		goto out_qp;
	}
	printf("   wr_id 0x%llx, status \"%s\", QP %u\n",
	       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	       wc.qp_num);
	if (wc.wr_id == DEMO_WR_ID && wc.status == IBV_WC_WR_FLUSH_ERR &&
	    ev_cq == cq)
		ret = 0;

out_qp:
	printf("7. destroy the QP, PD, CQ and channel\n");
	if (step("ibv_destroy_qp", ibv_destroy_qp(qp)))
		ret = 1;
out_pd:
	if (step("ibv_dealloc_pd", ibv_dealloc_pd(pd)))
		ret = 1;
out_cq:
	if (step("ibv_destroy_cq", ibv_destroy_cq(cq)))
		ret = 1;
out_channel:
	if (step("ibv_destroy_comp_channel", ibv_destroy_comp_channel(channel)))
		ret = 1;
out_ctx:
	ibv_close_device(ctx);
out_list:
	ibv_free_device_list(list);
	printf("%s\n", ret ? "demo FAILED" : "demo done: the CQ delivered its event and completion");
	return ret;
}
