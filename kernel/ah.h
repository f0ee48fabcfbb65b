/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Address handles: where a UD work request sends. Documentation/design.md
 * ("Address handles and UD") has the lifetimes.
 */
#ifndef SRX_AH_H
#define SRX_AH_H

#include <rdma/ib_verbs.h>

#include "net.h"

struct srx_device;

#define SRX_MAX_AH	(1u << 20)

/*
 * An AH: the engine's copy of its address vector, fixed at create, and
 * the number a user WQE names it by (0 for a kernel AH, which a kernel
 * post passes by pointer). The send path never keeps a pointer to an AH:
 * it copies av when it takes a WQE (take.c), so an AH destroyed while a
 * WQE naming it is queued changes nothing that is already taken.
 */
struct srx_ah {
	struct ib_ah base_ah;
	struct srx_av av;
	u32 ah_num;
};

static inline struct srx_ah *to_srx_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct srx_ah, base_ah);
}

int srx_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata);
int srx_destroy_ah(struct ib_ah *ibah, u32 flags);
bool srx_ah_lookup(struct srx_device *sdev, u32 ah_num,
		   const struct ib_pd *pd, struct srx_av *av);

#endif /* SRX_AH_H */
