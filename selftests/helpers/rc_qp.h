/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rc_qp.h - what the RC helpers (rc_errors, rc_traffic) share: a device
 * opened by name, and an RC QP brought to INIT and then to RTS with the
 * transitions' attributes the verbs need (ibv_modify_qp(3)). Header-only,
 * as each helper is one program of one source file.
 */
#ifndef SRX_SELFTESTS_RC_QP_H
#define SRX_SELFTESTS_RC_QP_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

/* The rights every helper QP and buffer grants: the peer may do anything. */
#define RC_ACCESS_ALL	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* Device @name opened; NULL, said on stderr, if there is none. */
static inline struct ibv_context *rc_open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++) {
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		fprintf(stderr, "cannot open device %s\n", name);
	return ctx;
}

/* @qp (in RESET) to INIT on port 1, granting RC_ACCESS_ALL. */
static inline int rc_qp_to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = RC_ACCESS_ALL,
	};

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/*
 * An RC QP of @ctx in INIT on port 1 granting RC_ACCESS_ALL. @ia gives the
 * PD, CQs and caps; a nonzero send_ops_flags asks for the ibv_wr_* API.
 */
static inline struct ibv_qp *rc_qp_init(struct ibv_context *ctx,
					struct ibv_qp_init_attr_ex *ia)
{
	struct ibv_qp *qp;

	ia->qp_type = IBV_QPT_RC;
	ia->comp_mask |= IBV_QP_INIT_ATTR_PD;
	if (ia->send_ops_flags)
		ia->comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qp = ibv_create_qp_ex(ctx, ia);
	if (!qp)
		return NULL;
	if (rc_qp_to_init(qp)) {
		ibv_destroy_qp(qp);
		return NULL;
	}
	return qp;
}

/* Both ends of a connection as one side's QP sees them. */
struct rc_path {
	int sgid_index;
	union ibv_gid dgid;
	uint32_t dqpn;
	enum ibv_mtu mtu;
	uint32_t sq_psn, rq_psn;
	uint8_t rd_atomic;	/* max_rd_atomic and max_dest_rd_atomic */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
};

/* @qp from INIT through RTR to RTS on @p. Return: ibv_modify_qp()'s. */
static inline int rc_qp_rts(struct ibv_qp *qp, const struct rc_path *p)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = p->mtu,
		.dest_qp_num = p->dqpn, .rq_psn = p->rq_psn,
		.max_dest_rd_atomic = p->rd_atomic,
		.min_rnr_timer = p->min_rnr_timer,
		.ah_attr = {
			.is_global = 1, .port_num = 1,
			.grh = { .dgid = p->dgid, .sgid_index = p->sgid_index,
				 .hop_limit = 64 },
		},
	};
	int ret;

	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		return ret;
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.timeout = p->timeout;
	attr.retry_cnt = p->retry_cnt;
	attr.rnr_retry = p->rnr_retry;
	attr.sq_psn = p->sq_psn;
	attr.max_rd_atomic = p->rd_atomic;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			     IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* A UD QP from RESET to RTS with Q_Key @qkey on port 1. */
static inline int rc_ud_qp_rts(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = qkey,
	};

	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		return -1;
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
		return -1;
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = 0;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* One completion of @cq within @ms milliseconds: 1, 0 (none) or -1. */
static inline int rc_poll_ms(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	struct timespec t0, t;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		r = ibv_poll_cq(cq, 1, wc);
		if (r)
			return r;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return 0;
		usleep(100);
	}
}

#endif /* SRX_SELFTESTS_RC_QP_H */
