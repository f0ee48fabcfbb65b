/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * From a ring CQE to what libibverbs hands the application, and the two
 * ibv_poll_cq() loops over one ring built on it. Shared by libsrx's poll
 * paths and bench/ring_bench.c, so that the benchmark times the code
 * libsrx runs.
 */
#ifndef SRX_CQE_WC_H
#define SRX_CQE_WC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/srx-abi.h>

#include "cq_ring.h"

static inline unsigned int srx_cqe_wc_flags(const struct srx_cqe *cqe)
{
	return cqe->flags & SRX_CQE_WC_FLAGS;	/* the same bits (srx-abi.h) */
}

/*
 * The hot conversion. struct srx_cqe keeps byte_len+ex and qp_num+src_qp
 * adjacent as struct ibv_wc does, and its last eight bytes hold every small
 * field, so a completion is four 8-byte loads and a few stores; the shifts
 * below place status, opcode, wc_flags and slid/sl/dlid_path_bits where
 * ibv_wc has them (little-endian; x86-64 and arm64 are).
 */
static inline void srx_cqe_to_wc(const struct srx_cqe *cqe, struct ibv_wc *wc)
{
	uint32_t lo, hi, pkey_slid, sl_dlid;
	uint64_t tail;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
		       "srx_cqe_to_wc packs fields for little-endian CPUs");
	_Static_assert(offsetof(struct srx_cqe, status) == 24 &&
		       offsetof(struct srx_cqe, opcode) == 25 &&
		       offsetof(struct srx_cqe, flags) == 26 &&
		       offsetof(struct srx_cqe, sl) == 27 &&
		       offsetof(struct srx_cqe, slid) == 28 &&
		       offsetof(struct srx_cqe, dlid_path_bits) == 30,
		       "srx_cqe tail layout");
	_Static_assert(offsetof(struct ibv_wc, opcode) ==
		       offsetof(struct ibv_wc, status) + 4 &&
		       offsetof(struct ibv_wc, imm_data) ==
		       offsetof(struct ibv_wc, byte_len) + 4 &&
		       offsetof(struct ibv_wc, src_qp) ==
		       offsetof(struct ibv_wc, qp_num) + 4 &&
		       offsetof(struct ibv_wc, pkey_index) == 40 &&
		       offsetof(struct ibv_wc, slid) == 42 &&
		       offsetof(struct ibv_wc, sl) == 44 &&
		       offsetof(struct ibv_wc, dlid_path_bits) == 45 &&
		       sizeof(struct ibv_wc) == 48, "ibv_wc layout");
	_Static_assert(IBV_WC_GRH == SRX_CQE_GRH &&
		       IBV_WC_WITH_IMM == SRX_CQE_WITH_IMM &&
		       IBV_WC_IP_CSUM_OK == SRX_CQE_IP_CSUM_OK &&
		       IBV_WC_WITH_INV == SRX_CQE_WITH_INV, "wc_flags bits");

	memcpy(&tail, &cqe->status, 8);
	lo = (uint32_t)tail;		/* status, opcode, flags, sl */
	hi = (uint32_t)(tail >> 32);	/* slid, dlid_path_bits, reserved */
	pkey_slid = hi << 16;		/* pkey_index 0 */
	sl_dlid = (lo >> 24) | (hi >> 8 & 0xff00);	/* pad 0 */

	wc->wr_id = cqe->wr_id;
	wc->status = lo & 0xff;
	wc->opcode = lo >> 8 & 0xff;
	wc->vendor_err = 0;
	memcpy(&wc->byte_len, &cqe->byte_len, 8);	/* byte_len, imm_data */
	memcpy(&wc->qp_num, &cqe->qp_num, 8);		/* qp_num, src_qp */
	wc->wc_flags = lo >> 16 & SRX_CQE_WC_FLAGS;
	memcpy(&wc->pkey_index, &pkey_slid, 4);		/* pkey_index, slid */
	memcpy(&wc->sl, &sl_dlid, 4);		/* sl, dlid_path_bits, pad */
}

/*
 * @n completions from consecutive ring slots starting at @idx. The ring's
 * geometry is copied into locals first: stores to @wc could otherwise alias
 * it and make the compiler reload it for every completion.
 */
static inline void srx_cqes_to_wc(const struct srx_cqe *cqes, uint32_t mask,
				  uint32_t idx, uint32_t n, struct ibv_wc *wc)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		srx_cqe_to_wc(&cqes[(idx + i) & mask], &wc[i]);
}

/*
 * Any number of threads: up to @ne CQEs converted into @wc and claimed with
 * one compare-and-swap, converted again from where another thread left off
 * if it claimed first. Returns how many, 0, or SRX_CQ_SEALED.
 */
static inline int srx_cq_poll_wc(const struct srx_cq_view *v, int ne,
				 struct ibv_wc *wc)
{
	uint64_t word = srx_load_cons(v->cons);
	int n;

	for (;;) {
		n = srx_cq_claim_begin(v, word, ne);
		if (n > 0)
			srx_cqes_to_wc(v->cqes, v->entries - 1,
				       SRX_CONS_INDEX(word), n, wc);
		if (n <= 0 || srx_cq_claim_commit(v, &word, n))
			return n;
	}
}

/*
 * One thread, whose consumer index is *@cons: CQEs read in place, one
 * release store, no read-modify-write.
 */
static inline int srx_cq_poll_wc_st(const struct srx_cq_view *v,
				    uint32_t *cons, int ne, struct ibv_wc *wc)
{
	uint32_t c = *cons, n = srx_cq_ready(v, c);

	if (n > (uint32_t)ne)
		n = ne;
	srx_cqes_to_wc(v->cqes, v->entries - 1, c, n, wc);
	if (n) {
		*cons = c + n;
		srx_cq_release(v, c + n);
	}
	return n;
}

#endif /* SRX_CQE_WC_H */
