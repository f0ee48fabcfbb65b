// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues: create/modify/query/destroy through the kernel,
 * and posting receives straight into the mapped ring.
 *
 * The ring is laid out as a receive queue's, but its WQEs complete out of
 * order, on the recv CQs of every QP attached to it, so a slot is free
 * once the kernel has taken its WQE (srx-abi.h, K7/U7), not once its
 * completion has been polled: a post reads cons (acquire) only when the
 * ring looks full. The kernel takes a WQE only when a message needs one,
 * so a post never rings a doorbell and never reads a state: the SRQ has
 * none, and the attached QPs' errors do not flush it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srx.h"

struct ibv_srq *srx_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct usrx_create_srq_resp resp = {};
	struct ibv_create_srq cmd = {};
	struct srx_srq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return NULL;

	ret = ibv_cmd_create_srq(pd, &srq->vsrq.srq, attr, &cmd, sizeof(cmd),
				 &resp.ibv_resp, sizeof(resp));
	if (ret)
		goto err_free;
	ret = srx_wq_map(&srq->wq, pd->context, &resp.drv.ring,
			 sizeof(struct srx_recv_wqe));
	if (ret)
		goto err_destroy;
	srq->vsrq.srq_type = IBV_SRQT_BASIC;

	/* ibv_create_srq(3): what was granted, at least what was asked. */
	attr->attr.max_wr = srq->wq.entries;
	attr->attr.max_sge = srq->wq.max_sge;
	return &srq->vsrq.srq;

err_destroy:
	ibv_cmd_destroy_srq(&srq->vsrq.srq);
err_free:
	free(srq);
	errno = ret;
	return NULL;
}

int srx_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int srx_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

/*
 * The command first: the kernel refuses (EBUSY) while a QP is attached,
 * and the ring must then stay mapped.
 */
int srx_destroy_srq(struct ibv_srq *ibsrq)
{
	struct srx_srq *srq = to_ssrq(ibsrq);
	int ret;

	ret = ibv_cmd_destroy_srq(ibsrq);
	if (ret)
		return ret;
	srx_wq_unmap(&srq->wq);
	free(srq);
	return 0;
}

/* U7: no free slot while head is a ring ahead of what the kernel took. */
static bool srx_srq_full(struct srx_wq *wq)
{
	return wq->head - srx_load_wq_cons(wq->cons) >= wq->entries;
}

int srx_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *first,
		      struct ibv_recv_wr **bad_wr)
{
	struct srx_wq *wq = &to_ssrq(ibsrq)->wq;
	struct ibv_recv_wr *wr;
	uint32_t start;
	int ret = 0;

	pthread_spin_lock(&wq->lock);
	start = wq->head;
	for (wr = first; wr; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge)
			ret = EINVAL;
		else if (srx_srq_full(wq))
			ret = ENOMEM;
		if (ret) {
			*bad_wr = wr;
			break;
		}
		srx_write_recv(wq, wr);
	}
	if (wq->head != start)
		srx_publish_prod(wq->prod, wq->head);	/* U4 */
	pthread_spin_unlock(&wq->lock);
	return ret;
}
