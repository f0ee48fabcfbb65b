/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The pure half of memory-key access: may a request touch an MR, where a
 * byte of an MR lies in its page array, and where byte N of a message lies
 * in an SGE list.
 *
 * Functions of integers and of a private SGE copy only: no locking, no
 * kernel headers beyond the fixed-width types and srx-abi.h's struct
 * srx_sge. mr.c calls them on the data path (receive softirq, send path);
 * the same file is compiled into the host tests
 * (selftests/host/mr_check_test.c), which drive every edge without a kernel.
 *
 * Access rights are the IB_ACCESS_* bits (equal to IB_UVERBS_ACCESS_* of
 * <rdma/ib_user_ioctl_verbs.h>, which the host tests use). Local read is
 * always granted and has no bit: a gather asks for no right at all.
 */
#ifndef SRX_MR_CHECK_H
#define SRX_MR_CHECK_H

#include <rdma/ib_user_ioctl_verbs.h>	/* IB_UVERBS_ACCESS_* == IB_ACCESS_* */
#include <rdma/srx-abi.h>

/*
 * Why an access was refused. The check says what is wrong; whether that is
 * a local or a remote error is the caller's to say, because only it knows
 * whose key it was:
 *  - an lkey of the caller's own WQE (gather, receive scatter, READ
 *    response scatter): SRX_ACC_LENGTH is IB_WC_LOC_LEN_ERR, every other
 *    fault IB_WC_LOC_PROT_ERR;
 *  - an rkey from a packet (RDMA WRITE, READ, ATOMIC): every fault is a
 *    NAK "remote access error" (the requester completes REM_ACCESS_ERR).
 * SRX_ACC_LENGTH comes only from an SGE list, never from one MR.
 */
enum srx_acc {
	SRX_ACC_OK = 0,
	SRX_ACC_KEY,		/* no MR has this key (index or key byte) */
	SRX_ACC_PD,		/* the MR is in another PD */
	SRX_ACC_ACCESS,		/* the MR does not grant a right asked for */
	SRX_ACC_BOUNDS,		/* some byte lies outside the MR */
	SRX_ACC_LENGTH,		/* the message is longer than the SGE list */
	SRX_ACC_COUNT
};

/*
 * A key is the MR's index in bits 31..8 and its key byte in bits 7..0
 * (mr.h). Index 0 is never allocated, so a zero key never matches.
 */
#define SRX_MR_KEY_SHIFT	8

static inline u32 srx_mr_key_index(u32 key)
{
	return key >> SRX_MR_KEY_SHIFT;
}

/*
 * What an MR grants, fixed when it is registered (a fast-registration
 * MR's at each IB_WR_REG_MR, under its lock). @pd is an identity only
 * (the kernel's struct ib_pd *), compared, never dereferenced here. The
 * range [iova, iova + length) never wraps: registration refuses that
 * (srx_reg_user_mr(), srx_mr_reg_fast()), and the DMA MR is
 * [0, 2^64 - 1).
 */
struct srx_mr_grant {
	const void *pd;
	u64 iova;
	u64 length;
	int access;
};

/*
 * May a request in @pd, asking for the rights @need, touch the @len bytes at
 * @iova of the MR @g? Checked in the order of the fault enum, so a request
 * wrong in several ways always gets the same answer.
 *
 * Bounds without additions that can wrap: the offset of @iova in the MR is
 * at most its length, and @len at most what is left from there. That holds
 * for every @len up to 2^64 - 1, and an @iova + @len that wraps is always
 * out of bounds because the MR's own range does not wrap.
 *
 * A zero-length access touches no byte, so no byte of it is out of bounds:
 * @iova is not checked, but the PD and the rights are. IBTA goes further
 * for a zero-length RDMA WRITE or READ: its VA and R_Key need not be valid
 * at all, and rxe's responder does not look the R_Key up (rxe_resp.c,
 * check_rkey(): "A zero-byte op is not required to set an addr or rkey").
 * So the responder must not call this for one (nor look the key up), and a
 * zero-length SGE is skipped without looking up its lkey (srx_sge_copy(),
 * like rxe's copy_data()).
 */
static inline enum srx_acc srx_mr_grant_check(const struct srx_mr_grant *g,
					      const void *pd, int need,
					      u64 iova, u64 len)
{
	u64 off;

	if (g->pd != pd)
		return SRX_ACC_PD;
	if (need & ~g->access)
		return SRX_ACC_ACCESS;
	if (!len)
		return SRX_ACC_OK;
	if (iova < g->iova)
		return SRX_ACC_BOUNDS;
	off = iova - g->iova;
	if (off > g->length || len > g->length - off)
		return SRX_ACC_BOUNDS;
	return SRX_ACC_OK;
}

/*
 * A bind of a memory window (IB_WR_BIND_MW), as the requester executes it
 * from its private WQE copy (wqe.h): the window by its key's index, its
 * new key, the MR by its whole lkey, and the window's range and rights.
 */
struct srx_bind_wr {
	u64 addr;
	u64 length;
	u32 mw_rkey;
	u32 rkey;
	u32 mr_lkey;
	u32 access;
};

/*
 * What a window may grant: remote rights, and local write, which
 * ibv_bind_mw(3) callers pass along (rdma-core's tests do) and which
 * means nothing through a window. Zero-based windows are not offered.
 */
#define SRX_MW_ACCESS	(IB_UVERBS_ACCESS_LOCAL_WRITE | \
			 IB_UVERBS_ACCESS_REMOTE_WRITE | \
			 IB_UVERBS_ACCESS_REMOTE_READ | \
			 IB_UVERBS_ACCESS_REMOTE_ATOMIC)

/*
 * May a window of @pd bind to [addr, addr + length) of the MR granting
 * @mr, with the bind's rights? As IBTA 1.4 and rdma_rxe (rxe_mw.c,
 * rxe_check_bind_mw()): the MR is in the window's (and the QP's) PD
 * (C10-72) and grants MW_BIND (C10-73); a window that lets the peer write
 * needs an MR the consumer let be written (local write, C10-74); the
 * range lies inside the MR (C10-75). A zero length names no byte: only a
 * type 1 window's unbind has one, and it does not reach the MR.
 */
static inline int srx_mw_bind_ok(const struct srx_mr_grant *mr,
				 const void *pd, const struct srx_bind_wr *b)
{
	if (b->access & ~SRX_MW_ACCESS)
		return 0;
	if (srx_mr_grant_check(mr, pd, IB_UVERBS_ACCESS_MW_BIND, b->addr,
			       b->length) != SRX_ACC_OK)
		return 0;
	if ((b->access & (IB_UVERBS_ACCESS_REMOTE_WRITE |
			  IB_UVERBS_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IB_UVERBS_ACCESS_LOCAL_WRITE))
		return 0;
	return 1;
}

/*
 * The pages of a user MR are an array built at registration: page 0 is the
 * page holding the registration's first byte, which lies @first_off bytes
 * into it (ib_umem_get() pins from the page of its start address, and the
 * start need not be page-aligned), and every page is (1 << @shift) bytes.
 * Byte @iova of the MR (in bounds, checked first) is then at offset
 * *@pg_off of page *@pg.
 *
 * No wrap: @iova - mr_iova is below the MR's length, which ib_umem_get()
 * limits so that the start address plus it, page-aligned, does not wrap;
 * @first_off is below a page.
 */
static inline void srx_mr_locate(u64 mr_iova, u32 first_off, unsigned int shift,
				 u64 iova, u64 *pg, u32 *pg_off)
{
	u64 pos = iova - mr_iova + first_off;

	*pg = pos >> shift;
	*pg_off = (u32)(pos & ((1ULL << shift) - 1));
}

/* Pages an MR of @length bytes starting @first_off into its first page spans. */
static inline u64 srx_mr_npages(u32 first_off, u64 length, unsigned int shift)
{
	u64 size = 1ULL << shift;

	return (length + first_off + size - 1) >> shift;
}

/*
 * A copy of @len bytes from MR byte @iova, page by page: each step is the
 * part of the copy in one page, (page, offset in it, bytes). srx_mr_copy()
 * maps each step's page; the host tests run the same walk over pages of
 * their own.
 */
struct srx_page_walk {
	u64 pg;
	u32 off;
	unsigned int shift;
	u64 left;
};

static inline void srx_page_walk_start(struct srx_page_walk *w, u64 mr_iova,
				       u32 first_off, unsigned int shift,
				       u64 iova, u64 len)
{
	srx_mr_locate(mr_iova, first_off, shift, iova, &w->pg, &w->off);
	w->shift = shift;
	w->left = len;
}

/* The next step, or 0 bytes when the copy is done. */
static inline u32 srx_page_walk_next(struct srx_page_walk *w, u64 *pg,
				     u32 *off)
{
	u64 room = (1ULL << w->shift) - w->off;
	u32 n = (u32)(w->left < room ? w->left : room);

	*pg = w->pg;
	*off = w->off;
	w->left -= n;
	w->off = 0;
	w->pg++;
	return n;
}

/*
 * The length of a message an SGE list holds, in 64 bits: 32 SGEs of up to
 * 4 GiB each cannot wrap it. The list is the kernel's private copy, so the
 * lengths cannot change under the sum.
 */
static inline u64 srx_sge_total(const struct srx_sge *sge, u32 num_sge)
{
	u64 total = 0;
	u32 i;

	for (i = 0; i < num_sge; i++)
		total += sge[i].length;
	return total;
}

/*
 * Where byte @offset of the message an SGE list holds lies: the index of
 * its SGE is returned, and *@within is its offset in that SGE. An @offset
 * at or beyond the list's total gives @num_sge. Zero-length SGEs hold no
 * byte and are never returned.
 */
static inline u32 srx_sge_seek(const struct srx_sge *sge, u32 num_sge,
			       u64 offset, u32 *within)
{
	u32 i;

	for (i = 0; i < num_sge; i++) {
		if (offset < sge[i].length) {
			*within = (u32)offset;
			return i;
		}
		offset -= sge[i].length;
	}
	*within = 0;
	return num_sge;
}

/*
 * A slice [@offset, @offset + @len) of the message an SGE list holds, SGE
 * by SGE: each step is (SGE index, address, bytes), the part of the slice
 * in one SGE. A pure function of (list, offset, len): the same inputs
 * always give the same steps, whatever was walked before, which is what
 * makes a retransmission rebuilt from (WQE, PSN) byte-identical. No step
 * is in a zero-length SGE, so its lkey is never looked up.
 */
struct srx_sge_walk {
	const struct srx_sge *sge;
	u32 num_sge;
	u32 i;
	u32 within;
	u64 left;
};

/*
 * SRX_ACC_LENGTH if the slice ends beyond the list (in 64 bits, and
 * without the wrap of @offset + @len), before any step is taken.
 */
static inline enum srx_acc srx_sge_walk_start(struct srx_sge_walk *w,
					      const struct srx_sge *sge,
					      u32 num_sge, u64 offset, u64 len)
{
	u64 total = srx_sge_total(sge, num_sge);

	w->sge = sge;
	w->num_sge = num_sge;
	w->left = 0;
	if (len > total || offset > total - len)
		return SRX_ACC_LENGTH;
	w->left = len;
	w->i = srx_sge_seek(sge, num_sge, offset, &w->within);
	return SRX_ACC_OK;
}

/*
 * The next step in *@idx, *@iova, *@n; *@n is 0 when the slice is done.
 * SRX_ACC_BOUNDS for a step whose address wrapped past 2^64: the SGE's
 * range wraps, so no MR holds it, and the wrapped address must not be
 * checked as if it were a low one. Each call moves past at most all SGEs
 * once, so a walk takes at most @num_sge + 1 calls.
 */
static inline enum srx_acc srx_sge_walk_next(struct srx_sge_walk *w, u32 *idx,
					     u64 *iova, u32 *n)
{
	const struct srx_sge *s;
	u32 step;

	*n = 0;
	while (w->left && w->i < w->num_sge) {
		s = &w->sge[w->i];
		if (w->within < s->length) {
			step = s->length - w->within;
			if (step > w->left)
				step = (u32)w->left;
			*idx = w->i;
			*iova = s->addr + w->within;
			*n = step;
			w->within += step;
			w->left -= step;
			return *iova < s->addr ? SRX_ACC_BOUNDS : SRX_ACC_OK;
		}
		w->i++;
		w->within = 0;
	}
	/* Unreachable after srx_sge_walk_start()'s check; kept as a bound. */
	return w->left ? SRX_ACC_LENGTH : SRX_ACC_OK;
}

#endif /* SRX_MR_CHECK_H */
