/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_TAKE_H
#define SRX_TAKE_H

#include "qp.h"
#include "wqe.h"

/* The private entry of WQE number @idx (a free-running index). */
static inline struct srx_swqe *srx_sq_entry(struct srx_wq *wq, u32 idx)
{
	return wq->priv + (size_t)(idx & (wq->entries - 1)) * wq->priv_stride;
}

static inline struct srx_rwqe *srx_rq_entry(struct srx_wq *wq, u32 idx)
{
	return wq->priv + (size_t)(idx & (wq->entries - 1)) * wq->priv_stride;
}

/* take.c */
int srx_wq_take_init(struct srx_wq *wq, const struct srx_device *sdev,
		     enum ib_qp_type type, bool send);
void srx_wq_take_fini(struct srx_wq *wq);
u32 srx_sq_take(struct srx_qp *qp, u32 budget);
u32 srx_rq_take(struct srx_qp *qp, u32 budget);

#endif /* SRX_TAKE_H */
