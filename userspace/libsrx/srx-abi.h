/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * srx-abi.h - libsrx's command and response buffers: libibverbs' core
 * structure followed by srx's payload from the uAPI header.
 *
 * Pass the whole wrapper and its sizeof to the ibv_cmd_* call; libibverbs
 * sends .drv to srx.ko as the driver part (UVERBS_ATTR_UHW_IN/OUT by ioctl,
 * or the words after the core part on the write() fallback). Read results
 * from .drv only: commands with a native ioctl method (GET_CONTEXT,
 * CQ_CREATE, QP_CREATE) never write .ibv_resp, and the ibv_cmd_* functions
 * have already copied what it carries (handle, cqe, qp_num, caps) into the
 * object they set up.
 *
 * The u prefix (for "userspace wrapper") keeps these apart from the payload
 * structures of include/uapi/rdma/srx-abi.h they wrap.
 */
#ifndef SRX_LIBSRX_ABI_H
#define SRX_LIBSRX_ABI_H

#include <rdma/srx-abi.h>

#include "verbs-private.h"

/* GET_CONTEXT: no srx command payload; pass a plain struct ibv_get_context. */
VERBS_PRIV_DRV_RESP(usrx_get_context_resp, ib_uverbs_get_context_resp,
		    srx_alloc_ucontext_resp, 4);

/* ibv_cmd_create_cq() */
VERBS_PRIV_DRV_REQ(usrx_create_cq, ibv_create_cq, srx_create_cq_cmd, 4);
VERBS_PRIV_DRV_RESP(usrx_create_cq_resp, ib_uverbs_create_cq_resp,
		    srx_create_cq_resp, 4);

/* ibv_cmd_create_cq_ex() */
VERBS_PRIV_DRV_REQ(usrx_create_cq_ex, ibv_create_cq_ex, srx_create_cq_cmd, 8);
VERBS_PRIV_DRV_RESP(usrx_create_cq_ex_resp, ib_uverbs_ex_create_cq_resp,
		    srx_create_cq_resp, 8);

/* ibv_cmd_resize_cq(); drv.op selects the step (enum srx_resize_op). */
VERBS_PRIV_DRV_REQ(usrx_resize_cq, ibv_resize_cq, srx_resize_cq_cmd, 4);
VERBS_PRIV_DRV_RESP(usrx_resize_cq_resp, ib_uverbs_resize_cq_resp,
		    srx_resize_cq_resp, 4);

/*
 * ibv_cmd_create_qp() and ibv_cmd_create_qp_ex(): no srx command payload,
 * pass a plain struct ibv_create_qp.
 */
VERBS_PRIV_DRV_RESP(usrx_create_qp_resp, ib_uverbs_create_qp_resp,
		    srx_create_qp_resp, 4);

/* ibv_cmd_create_qp_ex2(): pass a plain struct ibv_create_qp_ex. */
VERBS_PRIV_DRV_RESP(usrx_create_qp_ex_resp, ib_uverbs_ex_create_qp_resp,
		    srx_create_qp_resp, 8);

/* ibv_cmd_create_srq(): no srx command payload, pass a plain ibv_create_srq. */
VERBS_PRIV_DRV_RESP(usrx_create_srq_resp, ib_uverbs_create_srq_resp,
		    srx_create_srq_resp, 4);

/* ibv_cmd_create_ah(): no srx command payload. */
VERBS_PRIV_DRV_RESP(usrx_create_ah_resp, ib_uverbs_create_ah_resp,
		    srx_create_ah_resp, 4);

#endif /* SRX_LIBSRX_ABI_H */
