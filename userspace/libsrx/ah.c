// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles: created and destroyed by the kernel, which resolves
 * the address (core/verbs.c rdma_create_user_ah()) and answers with the
 * number a UD send WQE names the AH by (srx-abi.h, srx_create_ah_resp).
 * Nothing else of the AH lives here: the kernel copies the address when
 * it takes a WQE, so a UD post costs no lookup in the provider.
 */
#include <errno.h>
#include <stdlib.h>

#include "srx.h"
#include "srx-abi.h"

struct ibv_ah *srx_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct usrx_create_ah_resp resp = {};
	struct srx_ah *ah;
	int ret;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	ah->ah_num = resp.drv.ah_num;
	return &ah->ibv_ah;
}

int srx_destroy_ah(struct ibv_ah *ibah)
{
	int ret;

	ret = ibv_cmd_destroy_ah(ibah);
	if (ret)
		return ret;
	free(to_sah(ibah));
	return 0;
}
