/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_MR_H
#define SRX_MR_H

#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

struct srx_device;

struct srx_pd {
	struct ib_pd base_pd;
};

/*
 * A memory region. Its lkey and rkey are the same: the index in the
 * device's mr_xa in bits 31..8 and a random key byte in bits 7..0, drawn at
 * every registration (mr.c). Random rather than rolling: a peer must not
 * predict the keys of other registrations from its own (ReDMArk, USENIX
 * Security 2021, forged keys of RNICs whose keys were predictable). A stale
 * key outlives its region harmlessly: the index is allocated cyclically
 * over 24 bits, so it comes back only after 2^24 registrations, and then
 * matches with probability 1/256. The byte that rolls, one registration
 * after the other, is the consumer's key byte of a fast-registration MR
 * (ib_update_fast_reg_key()), which arrives with IB_WR_REG_MR.
 */
struct srx_mr {
	struct ib_mr base_mr;
	struct srx_device *sdev;
	struct ib_umem *umem;		/* NULL for the DMA MR */
	u64 iova;
	u64 length;
	int access;
	u32 index;
};

static inline struct srx_mr *to_srx_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct srx_mr, base_mr);
}

/* mr.c */
int srx_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int srx_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *srx_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *srx_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata);
int srx_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

#endif /* SRX_MR_H */
