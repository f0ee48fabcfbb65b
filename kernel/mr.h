/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_MR_H
#define SRX_MR_H

#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <linux/rwlock.h>
#include <linux/refcount.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "mr_check.h"

struct srx_device;

struct srx_pd {
	struct ib_pd base_pd;
};

/*
 * What a fast-registration MR (IB_MR_TYPE_MEM_REG, srx_alloc_mr()) has on
 * top of an MR: a kernel consumer maps pages into it (srx_map_mr_sg())
 * and registers and invalidates it with work requests (IB_WR_REG_MR,
 * IB_WR_LOCAL_INV, a SEND with Invalidate from the peer), so its key
 * byte, what it grants and its pages change while it is published.
 *
 * @lock guards them, with the MR's key and grant, against the data path:
 * an access holds it for reading from its key check to the end of its
 * copy (srx_mr_acquire() to srx_mr_release()), and registration,
 * invalidation and mapping hold it for writing. So no copy sees half a
 * registration, and once an invalidation has executed no copy through
 * the old key is under way or can start: the consumer may reuse the pages
 * when it completes. While @valid, the pages, @shift and @first_off do
 * not change (a mapping invalidates first), so every granted byte lies in
 * a mapped page (srx_mr_reg_fast() checks the range against them). Every holder runs with bottom halves off (the
 * engine's locks, the receive softirq; srx_map_mr_sg() disables them), a
 * reader only for one copy of at most one packet (or one atomic, inside
 * which it takes resp.c's srx_atomic_lock, which no writer takes).
 */
struct srx_frmr {
	rwlock_t lock;
	bool valid;		/* registered, not invalidated since */
	unsigned int shift;	/* log2 of the mapped page size */
	u32 first_off;		/* where byte 0 of the mapping lies in page 0 */
	u32 npages;		/* pages the last srx_map_mr_sg() mapped */
	u32 max_pages;		/* alloc_mr's max_num_sg */
	u64 pages[];		/* page addresses: kernel virtual (virt DMA) */
};

/*
 * What a memory window's key entry has on top of an MR's (mw.c). A window
 * is published in mr_xa like an MR, as a struct srx_mr of its own (whose
 * grant is the window's: its PD, range and rights), so MRs and windows
 * share one key space and one lookup; the struct ib_mw the core frees
 * right after dealloc_mw only points at it (struct srx_mw).
 *
 * @lock guards @valid, @qpn, @target and the entry's key and grant
 * against the data path exactly as a fast-registration MR's (struct
 * srx_frmr): an access through the window holds it for reading from its
 * key check to the end of its copy; bind, invalidation and dealloc hold
 * it for writing, inside sdev->mw_lock. While @valid, @target is a user
 * MR of the window's PD that cannot go: its deregistration is refused
 * while it counts bound windows (mw_binds), so the window needs no
 * reference on it.
 */
struct srx_win {
	rwlock_t lock;
	bool valid;		/* bound, not invalidated or unbound since */
	u8 type;		/* IB_MW_TYPE_1 or IB_MW_TYPE_2 */
	u32 qpn;		/* type 2: the only QP the window answers */
	struct srx_mr *target;	/* the MR bound to, while valid */
};

struct srx_mw {
	struct ib_mw base_mw;
	struct srx_mr *entry;	/* the window's key entry in mr_xa */
};

static inline struct srx_mw *to_srx_mw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct srx_mw, base_mw);
}

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
 * (ib_update_fast_reg_key()), which arrives with IB_WR_REG_MR. A rereg
 * keeps the key: the new srx_mr it builds takes the old one's index.
 */
struct srx_mr {
	struct ib_mr base_mr;
	struct srx_device *sdev;

	/*
	 * Fixed before the MR is published in mr_xa and never written again,
	 * so the data path reads them without a lock: the key (lkey == rkey),
	 * what the MR grants, and for a user MR its pinned pages in order,
	 * page 0 holding the first byte at first_off. A fast-registration
	 * MR is the exception: its key and grant change under fr->lock, and
	 * a lookup compares the key without it only as a first filter.
	 */
	u32 key;
	u32 index;
	struct srx_mr_grant grant;
	/*
	 * The pin, which the data path never reads: NULL for the DMA MR,
	 * and once a rereg's replacement over the same pages has taken it
	 * (mr.c, srx_rereg_user_mr(); registration's calls only).
	 */
	struct ib_umem *umem;
	struct page **pages;		/* NULL for the DMA MR */
	u64 npages;
	u32 first_off;
	struct srx_frmr *fr;		/* fast registration; else NULL */
	struct srx_win *win;		/* a window's key entry; else NULL */
	/*
	 * Windows bound to this MR, and whether its deregistration (or a
	 * rereg replacing it) has begun, after which none may bind: both
	 * under sdev->mw_lock (mw.c).
	 */
	u32 mw_binds;
	bool unbindable;

	/*
	 * One reference for the registration, dropped by deregistration,
	 * and one per srx_mr_get(). The put that drops the last completes
	 * @released, which deregistration waits for (mr.c).
	 */
	refcount_t refs;
	struct completion released;
	struct rcu_head rcu;		/* freed after lookups that may see it */
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
struct ib_mr *srx_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 iova, int access,
				struct ib_pd *ibpd, struct ib_udata *udata);
int srx_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *srx_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg);
int srx_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset);

/* mr.c, for mw.c: a key entry's life */
struct srx_mr *srx_mr_alloc(struct srx_device *sdev, struct ib_pd *pd,
			    int access, const struct srx_mr *replaces);
void srx_mr_unreserve(struct srx_mr *mr);
int srx_mr_publish(struct srx_mr *mr);
void srx_mr_retire(struct srx_mr *mr);
struct srx_mr *srx_mr_lookup(struct srx_device *sdev, u32 index, u32 key,
			     bool any_key);

/* mw.c */
int srx_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int srx_dealloc_mw(struct ib_mw *ibmw);
int srx_mr_forbid_binds(struct srx_mr *mr);
void srx_mr_allow_binds(struct srx_mr *mr);

/* Local operations of the send queue (req.c), and remote invalidation. */
int srx_mr_reg_fast(struct srx_device *sdev, const struct ib_pd *pd, u32 key,
		    int access);
int srx_mr_invalidate(struct srx_device *sdev, const struct ib_qp *qp,
		      u32 key, bool remote);
int srx_mw_bind(struct srx_device *sdev, const struct ib_qp *qp,
		const struct srx_bind_wr *b);
int srx_mw_invalidate(struct srx_device *sdev, struct srx_mr *entry,
		      const struct ib_qp *qp, u32 key, bool remote);

/*
 * Memory-key access on the data path (mr.c). The contract for callers, on
 * which deregistration's wait depends:
 *  - Look a key up for each packet (srx_mr_acquire()) and end the
 *    access (srx_mr_release()) before that packet's processing ends:
 *    never keep one across a sleep, a timer, an skb in flight or a later
 *    packet of the same message. A READ response or a WRITE of many
 *    packets looks its rkey up again for each; an MR deregistered or
 *    invalidated in between fails the rest of the message.
 *  - Copy at most one packet's payload (or one caller's buffer) per call:
 *    the time a reference is held is the time of that memcpy.
 *  - SGE lists are the kernel's private copy (never shared memory), with
 *    num_sge already validated; srx_sge_copy() looks each lkey up itself.
 *  - A zero-length RDMA READ or WRITE is not looked up at all (mr_check.h).
 * All of it runs with bottom halves off, the receive softirq included: no
 * sleep, no allocation, and no lock but a fast-registration MR's or a
 * window's, held for reading (struct srx_frmr, struct srx_win).
 */

/* Which way a copy goes: into the MR's memory, or out of it. */
enum srx_copy_dir {
	SRX_TO_MR,
	SRX_FROM_MR,
};

/* A lookup alone, without a fast-registration MR's lock: for tests. */
struct srx_mr *srx_mr_get(struct srx_device *sdev, u32 key);
void srx_mr_put(struct srx_mr *mr);
void srx_mr_release(struct srx_mr *mr);
enum srx_acc srx_mr_acquire(struct srx_device *sdev, u32 key,
			    const struct ib_pd *pd, int need, u64 iova, u64 len,
			    struct srx_mr **mrp);
enum srx_acc srx_rkey_acquire(struct srx_device *sdev, u32 key,
			      const struct ib_qp *qp, int need, u64 iova,
			      u64 len, struct srx_mr **mrp);
void srx_mr_copy(struct srx_mr *mr, u64 iova, void *buf, u64 len,
		 enum srx_copy_dir dir);
bool srx_mr_store_u64(struct srx_mr *mr, u64 iova, u64 val);
enum srx_acc srx_sge_check(struct srx_device *sdev, const struct ib_pd *pd,
			   int need, const struct srx_sge *sge, u32 num_sge,
			   u64 *total);
enum srx_acc srx_sge_copy(struct srx_device *sdev, const struct ib_pd *pd,
			  int need, const struct srx_sge *sge, u32 num_sge,
			  u64 offset, void *buf, u64 len,
			  enum srx_copy_dir dir);

#endif /* SRX_MR_H */
