// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains and memory regions, and access to an MR's memory by
 * key on the data path.
 *
 * Registration pins user memory with ib_umem_get(), records its pages in
 * an array once, and then publishes the region in the device's mr_xa under
 * the index its keys carry. The transport engine looks a key up from any
 * context, the receive softirq included (srx_mr_get()), checks its PD,
 * rights and bounds (mr_check.h), and copies with the pages mapped one at a
 * time (srx_mr_copy(), srx_sge_copy()): nothing on that path sleeps, and
 * the only locks it takes are a fast-registration MR's and a memory
 * window's, which work requests change (struct srx_frmr and struct
 * srx_win, mr.h; windows are mw.c's).
 *
 * Lifetime. Lookups run under RCU and take a reference with
 * refcount_inc_not_zero(), as rxe's pool lookup does with its kref
 * (rxe_pool.c, rxe_pool_get_index()): mr_xa's lock is not shared with
 * the softirq, so it stays a plain (process-context) one, and a packet
 * costs no write to a shared line but the count (and a fast-registration
 * MR's lock, which work requests share with the data path). An MR
 * found after its count reached zero is refused; its memory stays valid
 * for such a reader because it is freed with kfree_rcu(). Deregistration
 * unpublishes the key, drops the registration's reference and waits for
 * the others (srx_dereg_mr() says how long that can be) before it unpins
 * the pages: once ibv_dereg_mr() has returned, no write from the network
 * can land in that memory, which the process may reuse for anything.
 */
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>

#include "device.h"
#include "mr.h"

int srx_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibpd->device);
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;
	if (atomic_inc_return(&sdev->num_pd) > srx_device_max_pd()) {
		atomic_dec(&sdev->num_pd);
		return -ENOMEM;
	}
	return 0;
}

int srx_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	atomic_dec(&to_srx_dev(ibpd->device)->num_pd);
	return 0;
}

/*
 * Access rights: those of the device's features (device.c,
 * srx_init_accepts()). A right of a feature it does not report, such as
 * memory window binding without memory windows, remote atomic without
 * atomic_cap, zero-based or on-demand regions, is EOPNOTSUPP, as 6.12's
 * core answers for on-demand paging on a device without it
 * (ib_check_mr_access(), include/rdma/ib_verbs.h; 6.1's says EINVAL) and
 * EFA for what it lacks; rdma-core's tests skip on that errno. A bit the
 * kernel does not define is EINVAL. Remote write and remote
 * atomic need local write (ibv_reg_mr(3): EINVAL); the core checks that
 * for user MRs only, so srx checks again for every caller.
 */
static int srx_mr_check_access(struct srx_device *sdev, int access)
{
	if (access & ~IB_ACCESS_SUPPORTED)
		return -EINVAL;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (access & ~sdev->accepts.mr_access)
		return -EOPNOTSUPP;
	return 0;
}

/*
 * Take an index for a new MR and its key. The index is reserved (a NULL
 * entry, which lookups do not see) until srx_mr_publish() stores the MR,
 * fully built, with the release that xa_store() implies: a lookup that
 * finds it sees every field written before.
 *
 * A rereg's MR takes the index and key of the one it @replaces instead,
 * and is counted whatever the limit: the old one goes with the rereg.
 */
struct srx_mr *srx_mr_alloc(struct srx_device *sdev, struct ib_pd *pd,
			    int access, const struct srx_mr *replaces)
{
	struct srx_mr *mr;
	int count, ret;

	count = atomic_inc_return(&sdev->num_mr);
	if (count > srx_device_max_mr() && !replaces) {
		ret = -ENOMEM;
		goto err_count;
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		ret = -ENOMEM;
		goto err_count;
	}

	if (replaces) {
		mr->index = replaces->index;
		mr->key = replaces->key;
	} else {
		ret = xa_alloc_cyclic(&sdev->mr_xa, &mr->index, NULL,
				      XA_LIMIT(1, SRX_MAX_MR), &sdev->mr_next,
				      GFP_KERNEL);
		if (ret < 0)
			goto err_free;
		mr->key = (mr->index << SRX_MR_KEY_SHIFT) | get_random_u8();
	}
	mr->sdev = sdev;
	mr->grant.pd = pd;
	mr->grant.access = access;
	refcount_set(&mr->refs, 1);
	init_completion(&mr->released);
	mr->base_mr.lkey = mr->key;
	mr->base_mr.rkey = mr->key;
	return mr;

err_free:
	kfree(mr);
err_count:
	atomic_dec(&sdev->num_mr);
	return ERR_PTR(ret);
}

/* Free an MR no lookup can take any more, whose pages nobody maps. */
static void srx_mr_free(struct srx_mr *mr)
{
	struct srx_device *sdev = mr->sdev;

	ib_umem_release(mr->umem);
	kvfree(mr->pages);
	kvfree(mr->fr);
	kfree(mr->win);
	atomic_dec(&sdev->num_mr);
	kfree_rcu(mr, rcu);
}

/* Undo srx_mr_alloc() for an MR never published. */
void srx_mr_unreserve(struct srx_mr *mr)
{
	xa_erase(&mr->sdev->mr_xa, mr->index);
	srx_mr_free(mr);
}

int srx_mr_publish(struct srx_mr *mr)
{
	return xa_err(xa_store(&mr->sdev->mr_xa, mr->index, mr, GFP_KERNEL));
}

/* The region kernel consumers get through ib_alloc_pd(): all of memory. */
struct ib_mr *srx_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct srx_mr *mr;
	int ret;

	ret = srx_mr_check_access(to_srx_dev(ibpd->device), access);
	if (ret)
		return ERR_PTR(ret);

	mr = srx_mr_alloc(to_srx_dev(ibpd->device), ibpd, access, NULL);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	/*
	 * srx uses virt DMA (ib_register_device() without a DMA device), so
	 * the addresses of a kernel consumer's SGEs are kernel virtual
	 * addresses (ib_dma_map_single() and friends return them unchanged)
	 * and srx_mr_copy() uses them as such. U64_MAX, not 2^64: the range
	 * must not wrap (mr_check.h), and no buffer ends at the last byte.
	 */
	mr->grant.iova = 0;
	mr->grant.length = U64_MAX;
	ret = srx_mr_publish(mr);
	if (ret)
		goto err_unreserve;
	return &mr->base_mr;

err_unreserve:
	srx_mr_unreserve(mr);
	return ERR_PTR(ret);
}

/*
 * Record the pinned pages in order, once, so a copy finds a page by
 * arithmetic (srx_mr_locate()). ib_umem_get() pins from the page holding
 * @start (so the MR begins ib_umem_offset() bytes into page 0) and merges
 * physically contiguous pages into scatterlist segments of any length up
 * to the device's max segment size; walking the table page by page
 * (for_each_sgtable_page(), as rxe 6.1's rxe_mr_init_user() does) yields
 * them whatever the segments, one PAGE_SIZE page each. rxe's later
 * translation broke on exactly those two variables (segments of several
 * pages, page sizes other than PAGE_SIZE: ROCE.md); here nothing depends
 * on the segment layout, and the count must come out as the umem's.
 */
static int srx_mr_map_pages(struct srx_mr *mr, struct ib_umem *umem)
{
	struct sg_page_iter iter;
	u64 want, n = 0;

	mr->first_off = ib_umem_offset(umem);
	want = srx_mr_npages(mr->first_off, umem->length, PAGE_SHIFT);
	if (want != ib_umem_num_pages(umem))
		return -EINVAL;

	/*
	 * Charged to the registering process's cgroup, like its rings: 8
	 * bytes per pinned page. Beyond INT_MAX bytes (a 1 TiB MR) kvmalloc
	 * refuses, which is ENOMEM, silently.
	 */
	mr->pages = kvcalloc(want, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages)
		return -ENOMEM;

	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (n == want)
			break;
		mr->pages[n++] = sg_page_iter_page(&iter);
		if (!(n % 4096))
			cond_resched();
	}
	/* The caller's unwind (srx_mr_free()) frees the array. */
	if (n != want)
		return -EINVAL;
	mr->npages = n;
	return 0;
}

/* The range a user MR grants: checked by the data path, and reported. */
static void srx_mr_set_range(struct srx_mr *mr, u64 iova, u64 length)
{
	mr->grant.iova = iova;
	mr->grant.length = length;
	mr->base_mr.iova = iova;
	mr->base_mr.length = length;
}

/*
 * Pin [@start, @start + @length) of the calling process and build a user
 * MR over it at @iova, not yet published: a new one, or the replacement
 * of @replaces, which keeps its index and key.
 */
static struct srx_mr *srx_mr_build_user(struct ib_pd *ibpd, u64 start,
					u64 length, u64 iova, int access,
					const struct srx_mr *replaces)
{
	struct srx_device *sdev = to_srx_dev(ibpd->device);
	struct ib_umem *umem;
	struct srx_mr *mr;
	int ret;

	ret = srx_mr_check_access(sdev, access);
	if (ret)
		return ERR_PTR(ret);
	if (!length || length > sdev->attrs.max_mr_size ||
	    iova + length < iova)
		return ERR_PTR(-EINVAL);

	umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);

	mr = srx_mr_alloc(sdev, ibpd, access, replaces);
	if (IS_ERR(mr)) {
		ret = PTR_ERR(mr);
		goto err_release;
	}
	/* From here srx_mr_free() releases the umem with the MR. */
	mr->umem = umem;
	srx_mr_set_range(mr, iova, length);
	ret = srx_mr_map_pages(mr, umem);
	if (ret)
		goto err_free;
	return mr;

err_free:
	/* A replacement's index is the old MR's, not its own to free. */
	if (replaces)
		srx_mr_free(mr);
	else
		srx_mr_unreserve(mr);
	return ERR_PTR(ret);
err_release:
	ib_umem_release(umem);
	return ERR_PTR(ret);
}

/*
 * The replacement of @old over the same pinned pages, for a rereg that
 * changes only the PD or the rights: pinning again would count the pages
 * twice against RLIMIT_MEMLOCK and take whatever is mapped there now. It
 * gets its own copy of the page array, since packets that found @old
 * read @old's until its deregistration has waited for them; the umem
 * passes to it once it is published (srx_rereg_user_mr()).
 */
static struct srx_mr *srx_mr_build_same(struct ib_pd *ibpd, int access,
					const struct srx_mr *old)
{
	struct srx_mr *mr;
	int ret;

	ret = srx_mr_check_access(old->sdev, access);
	if (ret)
		return ERR_PTR(ret);
	mr = srx_mr_alloc(old->sdev, ibpd, access, old);
	if (IS_ERR(mr))
		return mr;
	mr->pages = kvcalloc(old->npages, sizeof(*mr->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!mr->pages) {
		srx_mr_free(mr);
		return ERR_PTR(-ENOMEM);
	}
	memcpy(mr->pages, old->pages, old->npages * sizeof(*mr->pages));
	mr->npages = old->npages;
	mr->first_off = old->first_off;
	srx_mr_set_range(mr, old->grant.iova, old->grant.length);
	return mr;
}

struct ib_mr *srx_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata)
{
	struct srx_mr *mr;
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ERR_PTR(ret);
	mr = srx_mr_build_user(ibpd, start, length, iova, access, NULL);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	ret = srx_mr_publish(mr);
	if (ret)
		goto err_unreserve;
	return &mr->base_mr;

err_unreserve:
	srx_mr_unreserve(mr);
	return ERR_PTR(ret);
}

/*
 * Fast registration (IB_MR_TYPE_MEM_REG), for kernel consumers: storage
 * (nvme-rdma, iSER, SRP) and rpcrdma register I/O buffers this way. The
 * MR is published invalid, with no access: it grants nothing until an
 * IB_WR_REG_MR executes (srx_mr_reg_fast()), after srx_map_mr_sg() gave it
 * pages. As rdma_rxe (rxe_mr.c, rxe_mr_init_fast(), 6.1 and 6.12), srx
 * allocates the page list up front, max_num_sg entries of at most
 * max_fast_reg_page_list_len, and supports no other type: SG_GAPS and
 * INTEGRITY need device attributes srx does not report.
 *
 * Context: process; sleeps.
 */
struct ib_mr *srx_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			   u32 max_num_sg)
{
	struct srx_device *sdev = to_srx_dev(ibpd->device);
	struct srx_frmr *fr;
	struct srx_mr *mr;
	int ret;

	if (type != IB_MR_TYPE_MEM_REG)
		return ERR_PTR(-EINVAL);
	if (!max_num_sg || max_num_sg > SRX_MAX_FAST_REG_PAGES)
		return ERR_PTR(-EINVAL);

	fr = kvzalloc(struct_size(fr, pages, max_num_sg), GFP_KERNEL);
	if (!fr)
		return ERR_PTR(-ENOMEM);
	rwlock_init(&fr->lock);
	fr->max_pages = max_num_sg;

	mr = srx_mr_alloc(sdev, ibpd, 0, NULL);
	if (IS_ERR(mr)) {
		kvfree(fr);
		return ERR_CAST(mr);
	}
	mr->fr = fr;
	ret = srx_mr_publish(mr);
	if (ret)
		goto err_unreserve;
	return &mr->base_mr;

err_unreserve:
	srx_mr_unreserve(mr);
	return ERR_PTR(ret);
}

/* ib_sg_to_pages()'s callback: one more page of the mapping. */
static int srx_frmr_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct srx_frmr *fr = to_srx_mr(ibmr)->fr;

	lockdep_assert_held_write(&fr->lock);
	if (fr->npages >= fr->max_pages)
		return -ENOMEM;
	fr->pages[fr->npages++] = addr;
	return 0;
}

/*
 * Map a DMA-mapped scatterlist into the MR's page list, in pages of the
 * ibmr->page_size ib_map_mr_sg() set: ib_sg_to_pages() splits it and sets
 * ibmr->iova and ibmr->length. srx's DMA is virtual, so the addresses are
 * kernel virtual ones (as rxe_map_mr_sg() of 6.1 records them). Where the
 * mapping's first byte lies in page 0 is kept apart from ibmr->iova,
 * which a consumer may set to anything before it registers
 * (ib_map_mr_sg_zbva() sets 0).
 *
 * A consumer may map an MR that is still registered: iSER maps before it
 * posts the LOCAL_INV of the old key (iser_fast_reg_mr()), and SRP maps
 * an MR whose LOCAL_INV is still queued (srp_map_finish_fr()). The old
 * registration then ends here, under the lock: its key would otherwise
 * reach the new pages under the old grant. The queued LOCAL_INV still
 * succeeds (srx_mr_invalidate() takes an invalid MR under its key).
 *
 * Context: process. Return: the scatterlist entries mapped, or -errno.
 */
int srx_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		  unsigned int *sg_offset)
{
	struct srx_frmr *fr = to_srx_mr(ibmr)->fr;
	unsigned int shift;
	int n;

	if (!fr)
		return -EINVAL;
	/*
	 * Pages of 4 KiB (nvme-rdma's and iSER's SZ_4K, whatever PAGE_SIZE
	 * is) to 1 GiB: virt DMA makes each a range of the direct map.
	 */
	if (!is_power_of_2(ibmr->page_size) || ibmr->page_size < SZ_4K ||
	    ibmr->page_size > SZ_1G)
		return -EINVAL;
	shift = ilog2(ibmr->page_size);

	write_lock_bh(&fr->lock);
	fr->valid = false;
	fr->npages = 0;
	fr->shift = shift;
	n = ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, srx_frmr_set_page);
	fr->first_off = fr->npages ? (u32)(ibmr->iova - fr->pages[0]) : 0;
	write_unlock_bh(&fr->lock);
	return n;
}

/*
 * ibv_rereg_mr(3): change what a user MR grants (its PD, its rights)
 * and, with IB_MR_REREG_TRANS, the memory it covers, keeping its key, as
 * callers expect (rdma-core's test_mr.py goes on using the old rkey).
 *
 * The data path reads an MR without a lock because nothing in it
 * changes once published (mr.h), so the change is a new srx_mr under the
 * same index and key, swapped for the old one in mr_xa by one
 * compare-and-exchange: a lookup finds either, whole (srx_mr_get() looks
 * again if the old one was released under it). The core then gives the
 * new MR the old one's handle and destroys the old (ib_uverbs_rereg_mr(),
 * drivers/infiniband/core/uverbs_cmd.c, 6.1 and 6.12), whose
 * srx_dereg_mr() waits for the packets still using it and leaves the
 * index alone. A rereg that fails leaves the old MR as it was.
 *
 * The pages stay pinned when the memory does not change, unless the MR
 * becomes writable and its pin was not (6.2 on pins such memory without
 * FOLL_WRITE, ib_umem_get()): then, and for new memory, it pins again.
 *
 * Context: process; sleeps. The core holds the MR's uobject for write,
 * so no other rereg or dereg of it runs meanwhile.
 */
struct ib_mr *srx_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				u64 length, u64 iova, int access,
				struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct srx_mr *old = to_srx_mr(ibmr);
	struct srx_mr *mr, *curr;
	bool same;
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ERR_PTR(ret);
	/* Only user MRs have a uverbs handle to be re-registered through. */
	if (WARN_ON_ONCE(!old->umem))
		return ERR_PTR(-EINVAL);
	if (!(flags & IB_MR_REREG_PD))
		ibpd = old->base_mr.pd;
	if (!(flags & IB_MR_REREG_ACCESS))
		access = old->grant.access;
	same = !(flags & IB_MR_REREG_TRANS) &&
	       (old->umem->writable || !ib_access_writable(access));

	if (same) {
		mr = srx_mr_build_same(ibpd, access, old);
	} else {
		/* pinned again: new memory, or writable where it was not */
		if (!(flags & IB_MR_REREG_TRANS)) {
			start = old->umem->address;
			length = old->grant.length;
			iova = old->grant.iova;
		}
		mr = srx_mr_build_user(ibpd, start, length, iova, access, old);
	}
	if (IS_ERR(mr))
		return ERR_CAST(mr);

	/* The windows bound to it would not follow it to the new MR. */
	ret = srx_mr_forbid_binds(old);
	if (ret)
		goto err_free;
	curr = xa_cmpxchg(&old->sdev->mr_xa, old->index, old, mr, GFP_KERNEL);
	if (curr != old) {
		ret = xa_is_err(curr) ? xa_err(curr) : -EINVAL;
		WARN_ON_ONCE(!xa_is_err(curr));
		srx_mr_allow_binds(old);
		goto err_free;
	}
	/* Not read by the data path: registration's alone (mr.h). */
	if (same) {
		mr->umem = old->umem;
		old->umem = NULL;
	}
	return &mr->base_mr;

err_free:
	srx_mr_free(mr);
	return ERR_PTR(ret);
}

/*
 * Withdraw @mr's key from lookups, unless a rereg has stored its
 * replacement under the same index: the key is the new MR's then.
 */
static void srx_mr_unpublish(struct srx_mr *mr)
{
	struct xarray *xa = &mr->sdev->mr_xa;

	xa_lock(xa);
	if (xa_load(xa, mr->index) == mr)
		__xa_erase(xa, mr->index);
	xa_unlock(xa);
}

/*
 * Deregistration: unpublish, wait for every user, then unpin and free.
 *
 * After srx_mr_unpublish() no lookup finds the MR (the key is gone, or is
 * a rereg's replacement's), so no new reference can be taken except by a
 * lookup that loaded the entry just before and then wins
 * refcount_inc_not_zero() against our put; that reference is waited for
 * like the others. Who can hold one, and for how long: only srx's data
 * path, each for one bounded, non-sleeping step (the contract in mr.h):
 * the responder while it checks and copies one packet's payload or
 * performs one atomic in the receive softirq, the requester while it
 * gathers one packet's payload or scatters one READ response, and
 * srx_sge_copy() around each SGE it copies. None holds a reference
 * across a sleep, a timer, an skb in flight or a second packet. So the
 * wait lasts as long as the copy of at most one packet (or one caller's
 * buffer) that is running when the key goes away, and wait_for_completion() without a
 * timeout is right: rxe's 50 s timeout (rxe_pool.c, __rxe_cleanup()) frees
 * memory still in use when it expires, which is the bug this wait exists
 * to prevent, and a reference leaked by a bug shows up as a hung task
 * rather than as a write into freed memory.
 *
 * The DMA MR (kernel consumers, deregistered by ib_dealloc_pd()) has no
 * pages to unpin but follows the same steps: a kernel consumer's buffer
 * must not be written after ib_dereg_mr() either.
 *
 * Context: process; sleeps.
 */
void srx_mr_retire(struct srx_mr *mr)
{
	might_sleep();
	srx_mr_unpublish(mr);
	srx_mr_put(mr);
	wait_for_completion(&mr->released);
	srx_mr_free(mr);
}

/*
 * An MR with memory windows bound stays: EBUSY (rxe_dereg_mr() refuses
 * it too, citing IBA 10.6.7.2.6, with EINVAL). When a process exits,
 * uverbs retries the MR after it has deallocated the windows.
 */
int srx_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct srx_mr *mr = to_srx_mr(ibmr);
	int ret;

	ret = srx_mr_forbid_binds(mr);
	if (ret)
		return ret;
	srx_mr_retire(mr);
	return 0;
}

/*
 * The MR at @index, referenced, if its key is @key or if @any_key.
 * Context: any, softirq and hard irq included; takes no lock.
 */
struct srx_mr *srx_mr_lookup(struct srx_device *sdev, u32 index, u32 key,
			     bool any_key)
{
	struct srx_mr *mr;
	int tries;

	rcu_read_lock();
	/*
	 * An MR released between the load and the increment was either
	 * deregistered (its key is gone: the next load finds nothing) or
	 * replaced by a rereg under the same key: look again. Each turn
	 * needs a whole rereg meanwhile, so a few are plenty. A fast
	 * registration's key changes under its lock: read once here, it
	 * only filters, and srx_mr_acquire() checks it again under the lock.
	 */
	for (tries = 0; tries < 4; tries++) {
		mr = xa_load(&sdev->mr_xa, index);
		if (!mr || (!any_key && READ_ONCE(mr->key) != key))
			break;
		if (refcount_inc_not_zero(&mr->refs))
			goto out;
	}
	mr = NULL;
out:
	rcu_read_unlock();
	return mr;
}

/**
 * srx_mr_get - find the MR a key names and take a reference on it
 * @sdev: the device whose key it is
 * @key: an lkey or rkey, as it came: from a private WQE copy or a packet
 *
 * The whole key must match, the key byte as well as the index, so a stale
 * key (its MR deregistered, the index not reused) or a guessed one finds
 * nothing.
 *
 * Context: any, softirq and hard irq included; takes no lock.
 * Return: the MR with a reference the caller drops with srx_mr_put(), or
 * NULL.
 */
struct srx_mr *srx_mr_get(struct srx_device *sdev, u32 key)
{
	return srx_mr_lookup(sdev, srx_mr_key_index(key), key, false);
}

/*
 * Context: any. The put that drops the last reference wakes the
 * deregistration waiting for it, which then frees the MR: nothing here
 * touches @mr after complete().
 */
void srx_mr_put(struct srx_mr *mr)
{
	if (refcount_dec_and_test(&mr->refs))
		complete(&mr->released);
}

/*
 * End an access srx_mr_acquire() allowed: the fast-registration lock it
 * took, then the reference. Context: as the acquire's.
 */
void srx_mr_release(struct srx_mr *mr)
{
	if (mr->fr)
		read_unlock(&mr->fr->lock);
	else if (mr->win)
		read_unlock(&mr->win->lock);
	srx_mr_put(mr);
}

/* May a request in @pd, asking for @need, touch [@iova, @iova + @len)? */
static enum srx_acc srx_mr_check(const struct srx_mr *mr, const struct ib_pd *pd,
			  int need, u64 iova, u64 len)
{
	return srx_mr_grant_check(&mr->grant, pd, need, iova, len);
}

/*
 * Look a key up and check one access through it. A fast-registration MR
 * must be registered (valid) under @key, a window bound under it (and
 * only an rkey, @qpn set, names one), and either stays so until
 * srx_mr_release(), which ends every allowed access.
 */
static enum srx_acc srx_key_acquire(struct srx_device *sdev, u32 key,
				    const struct ib_pd *pd, const u32 *qpn,
				    int need, u64 iova, u64 len,
				    struct srx_mr **mrp)
{
	struct srx_win *win;
	struct srx_mr *mr;
	enum srx_acc ret;

	mr = srx_mr_get(sdev, key);
	if (!mr)
		return SRX_ACC_KEY;
	/* Bottom halves are off in every caller (mr.h, srx_frmr). */
	if (mr->fr) {
		read_lock(&mr->fr->lock);
		if (!mr->fr->valid || mr->key != key) {
			read_unlock(&mr->fr->lock);
			srx_mr_put(mr);
			return SRX_ACC_KEY;
		}
	} else if (mr->win) {
		/*
		 * A window answers rkeys only, and a type 2 one only the QP
		 * it is bound to (rxe_lookup_mw() checks the same).
		 */
		win = mr->win;
		if (!qpn) {
			srx_mr_put(mr);
			return SRX_ACC_KEY;
		}
		read_lock(&win->lock);
		if (!win->valid || mr->key != key ||
		    (win->type == IB_MW_TYPE_2 && win->qpn != *qpn)) {
			read_unlock(&win->lock);
			srx_mr_put(mr);
			return SRX_ACC_KEY;
		}
	}
	ret = srx_mr_check(mr, pd, need, iova, len);
	if (ret != SRX_ACC_OK) {
		srx_mr_release(mr);
		return ret;
	}
	*mrp = mr;
	return SRX_ACC_OK;
}

/**
 * srx_mr_acquire - look an lkey up and check one access through it
 * @sdev: the device
 * @key: the lkey, from the kernel's private WQE copy
 * @pd: the PD of the QP the access is for
 * @need: the IB_ACCESS_* rights the access needs (0 for a local read)
 * @iova: first byte
 * @len: bytes; 0 is checked for PD and rights only (mr_check.h)
 * @mrp: the MR, referenced, when the access is allowed
 *
 * A window's key is never an lkey (rxe looks lkeys up among MRs
 * only, rxe_mr.c, lookup_mr()): SRX_ACC_KEY.
 *
 * Context: bottom halves off (the engine's locks, the receive softirq).
 * Return: SRX_ACC_OK with *@mrp set, or the fault (nothing held).
 */
enum srx_acc srx_mr_acquire(struct srx_device *sdev, u32 key,
			    const struct ib_pd *pd, int need, u64 iova, u64 len,
			    struct srx_mr **mrp)
{
	return srx_key_acquire(sdev, key, pd, NULL, need, iova, len, mrp);
}

/**
 * srx_rkey_acquire - srx_mr_acquire() for an rkey from a packet
 * @sdev: the device
 * @key: the rkey: an MR's or a memory window's
 * @qp: the QP the packet came to, whose PD (and, for a type 2 window,
 *	whose number) the key must answer
 * @need: the IB_ACCESS_REMOTE_* rights the access needs
 * @iova: first byte
 * @len: bytes
 * @mrp: the key's entry, for srx_mr_copy() and srx_mr_release()
 *
 * Context and return: as srx_mr_acquire().
 */
enum srx_acc srx_rkey_acquire(struct srx_device *sdev, u32 key,
			      const struct ib_qp *qp, int need, u64 iova,
			      u64 len, struct srx_mr **mrp)
{
	return srx_key_acquire(sdev, key, qp->pd, &qp->qp_num, need, iova, len,
			       mrp);
}

/*
 * srx_mr_copy() of a fast-registration MR, whose pages are kernel virtual
 * addresses of 1 << fr->shift bytes each. Registration made sure the
 * granted range lies inside the mapped pages (srx_mr_reg_fast()); the
 * loop bound says so again.
 */
static void srx_frmr_copy(struct srx_mr *mr, u64 iova, void *buf, u64 len,
			  enum srx_copy_dir dir)
{
	const struct srx_frmr *fr = mr->fr;
	struct srx_page_walk w;
	u8 *p = buf;
	u32 off, n;
	u64 pg;
	u8 *va;

	srx_page_walk_start(&w, mr->grant.iova, fr->first_off, fr->shift,
			    iova, len);
	while ((n = srx_page_walk_next(&w, &pg, &off)) && pg < fr->npages) {
		va = (u8 *)(uintptr_t)fr->pages[pg] + off;
		if (dir == SRX_TO_MR)
			memcpy(va, p, n);
		else
			memcpy(p, va, n);
		p += n;
	}
}

/**
 * srx_mr_copy - copy between an MR's memory and a kernel buffer
 * @mr: a referenced MR through which [@iova, @iova + @len) was checked
 * @iova: first byte in the MR
 * @buf: the kernel buffer
 * @len: bytes
 * @dir: SRX_TO_MR writes the MR's memory, SRX_FROM_MR reads it
 *
 * A user MR's pages are pinned for as long as the reference is held and
 * are mapped one at a time with kmap_local_page(), which neither sleeps
 * nor needs a lock; the DMA MR's addresses are kernel virtual addresses.
 * The pages are marked dirty when they are unpinned (ib_umem_release()
 * of a writable umem). The time taken is that of @len bytes of memcpy:
 * the engine copies at most one packet's payload per call (mr.h).
 *
 * Context: any; @mr allowed by srx_mr_acquire() and not yet released.
 */
void srx_mr_copy(struct srx_mr *mr, u64 iova, void *buf, u64 len,
		 enum srx_copy_dir dir)
{
	struct srx_page_walk w;
	u8 *p = buf;
	u32 off, n;
	u64 pg;
	u8 *va;

	/* A window's bytes are its MR's, at the same addresses (mw.c). */
	if (mr->win)
		mr = mr->win->target;
	if (mr->fr) {
		srx_frmr_copy(mr, iova, buf, len, dir);
		return;
	}
	if (!mr->pages) {
		va = (u8 *)(uintptr_t)iova;
		if (dir == SRX_TO_MR)
			memcpy(va, p, len);
		else
			memcpy(p, va, len);
		return;
	}

	srx_page_walk_start(&w, mr->grant.iova, mr->first_off, PAGE_SHIFT,
			    iova, len);
	/* The bounds check keeps pg below npages; the loop says so too. */
	while ((n = srx_page_walk_next(&w, &pg, &off)) && pg < mr->npages) {
		va = kmap_local_page(mr->pages[pg]);
		if (dir == SRX_TO_MR)
			memcpy(va + off, p, n);
		else
			memcpy(p, va + off, n);
		kunmap_local(va);
		p += n;
	}
}

/**
 * srx_mr_store_u64 - place an ATOMIC WRITE's 8 bytes with one store
 * @mr: a region the caller holds a reference on and checked the range of
 * @iova: the target, 8-byte aligned in the MR's address space
 * @val: the bytes, in the order they are to land
 *
 * A release store (as 6.12's rxe_mr_do_atomic_write()): a reader that sees
 * the new value also sees everything placed before it. The kernel address
 * must be 8-byte aligned as well; an iova given at registration that is
 * not congruent to the buffer's address can make it not so.
 *
 * Context: as srx_mr_copy(). Return: false if the memory is not 8-byte
 * aligned.
 */
bool srx_mr_store_u64(struct srx_mr *mr, u64 iova, u64 val)
{
	u32 off;
	u64 pg;
	u8 *va;

	if (mr->win)
		mr = mr->win->target;
	if (mr->fr) {
		srx_mr_locate(mr->grant.iova, mr->fr->first_off, mr->fr->shift,
			      iova, &pg, &off);
		if (pg >= mr->fr->npages)
			return false;
		va = (u8 *)(uintptr_t)mr->fr->pages[pg] + off;
		if ((uintptr_t)va & 7)
			return false;
		smp_store_release((u64 *)va, val);
		return true;
	}
	if (!mr->pages) {
		va = (u8 *)(uintptr_t)iova;
		if ((uintptr_t)va & 7)
			return false;
		smp_store_release((u64 *)va, val);
		return true;
	}
	srx_mr_locate(mr->grant.iova, mr->first_off, PAGE_SHIFT, iova, &pg,
		      &off);
	if ((off & 7) || pg >= mr->npages)
		return false;
	va = kmap_local_page(mr->pages[pg]);
	smp_store_release((u64 *)(va + off), val);
	kunmap_local(va);
	return true;
}

/**
 * srx_sge_check - check every SGE of a list and sum its length
 * @sdev: the device
 * @pd: the QP's PD
 * @need: IB_ACCESS_LOCAL_WRITE for a list that receives (a receive WQE, an
 *	RDMA READ's local buffers), 0 for one that is sent (gather)
 * @sge: the kernel's private copy of the list, never shared memory
 * @num_sge: its length, at most SRX_MAX_SGE (validated by the copy)
 * @total: the message length the list holds, in 64 bits
 *
 * For the engine to refuse a WQE before it sends a byte of it (a bad lkey
 * is then LOC_PROT_ERR with nothing on the wire). Zero-length SGEs are
 * not looked up. srx_sge_copy() checks again what it copies, since an MR
 * can be deregistered between.
 *
 * Context: bottom halves off (srx_mr_acquire()).
 * Return: SRX_ACC_OK, or the fault of the first bad SGE.
 */
enum srx_acc srx_sge_check(struct srx_device *sdev, const struct ib_pd *pd,
			   int need, const struct srx_sge *sge, u32 num_sge,
			   u64 *total)
{
	struct srx_mr *mr;
	enum srx_acc ret;
	u32 i;

	for (i = 0; i < num_sge; i++) {
		if (!sge[i].length)
			continue;
		ret = srx_mr_acquire(sdev, sge[i].lkey, pd, need, sge[i].addr,
				     sge[i].length, &mr);
		if (ret != SRX_ACC_OK)
			return ret;
		srx_mr_release(mr);
	}
	*total = srx_sge_total(sge, num_sge);
	return SRX_ACC_OK;
}

/**
 * srx_sge_copy - copy a slice of the message an SGE list holds
 * @sdev: the device
 * @pd: the QP's PD
 * @need: as for srx_sge_check()
 * @sge: the kernel's private copy of the list
 * @num_sge: its length; the walk never goes past it
 * @offset: where the slice starts in the message
 * @buf: the kernel buffer on the other side of the copy
 * @len: bytes in the slice
 * @dir: SRX_TO_MR scatters @buf into the list's memory, SRX_FROM_MR
 *	gathers it into @buf
 *
 * Stateless: the result depends on (list, @offset, @len) and the memory
 * only, never on an earlier call, so the engine builds any packet of a
 * message, a retransmission included, from the WQE copy and the packet's
 * offset (PSN - first PSN times the path MTU) and gets the same bytes; a
 * cursor that a rollback can lose (rxe, CVE-2023-53539) does not exist.
 *
 * Each SGE's lkey is looked up and checked for the bytes copied through it
 * and the reference dropped at once, so a deregistration waits for at most
 * one SGE's part of one slice. A slice past the list's end is refused
 * before anything is copied; a bad key found on the way may leave the
 * bytes before it copied, which an error completion makes moot.
 *
 * Context: bottom halves off (srx_mr_acquire()); copies @len bytes
 * without sleeping.
 * Return: SRX_ACC_OK; SRX_ACC_LENGTH if the slice ends beyond the list
 * (LOC_LEN_ERR); another fault for a bad key, PD, right or bound
 * (LOC_PROT_ERR).
 */
enum srx_acc srx_sge_copy(struct srx_device *sdev, const struct ib_pd *pd,
			  int need, const struct srx_sge *sge, u32 num_sge,
			  u64 offset, void *buf, u64 len,
			  enum srx_copy_dir dir)
{
	struct srx_sge_walk w;
	struct srx_mr *mr;
	enum srx_acc ret;
	u8 *p = buf;
	u32 i, n;
	u64 iova;

	ret = srx_sge_walk_start(&w, sge, num_sge, offset, len);
	while (ret == SRX_ACC_OK) {
		ret = srx_sge_walk_next(&w, &i, &iova, &n);
		if (ret != SRX_ACC_OK || !n)
			break;
		ret = srx_mr_acquire(sdev, sge[i].lkey, pd, need, iova, n, &mr);
		if (ret != SRX_ACC_OK)
			break;
		srx_mr_copy(mr, iova, p, n, dir);
		srx_mr_release(mr);
		p += n;
	}
	return ret;
}

/**
 * srx_mr_reg_fast - execute an IB_WR_REG_MR
 * @sdev: the device
 * @pd: the PD of the QP that posted it
 * @key: the key to register under: the MR's index and the consumer's new
 *	key byte (ib_update_fast_reg_key())
 * @access: the IB_ACCESS_* rights to grant
 *
 * The MR takes @key, the range ibmr->iova and ibmr->length describe now,
 * and @access, and becomes valid. As rdma_rxe (rxe_mr.c, rxe_reg_fast_mr()):
 * the MR must be a fast-registration one of @pd and invalid (a consumer
 * invalidates before it registers again). Beyond rxe: the rights are
 * checked as at any registration (srx_mr_check_access()), and the range
 * must lie within the pages mapped, which keeps every copy through the
 * MR inside them whatever the consumer set ibmr->iova and ->length to.
 *
 * Context: the QP's send_lock held (bottom halves off).
 * Return: 0, or -EINVAL (the WQE completes IB_WC_LOC_QP_OP_ERR, as rxe's).
 */
int srx_mr_reg_fast(struct srx_device *sdev, const struct ib_pd *pd, u32 key,
		    int access)
{
	struct srx_frmr *fr;
	struct srx_mr *mr;
	u64 iova, length;
	int ret = -EINVAL;

	mr = srx_mr_lookup(sdev, srx_mr_key_index(key), 0, true);
	if (!mr)
		return -EINVAL;
	fr = mr->fr;
	if (!fr || mr->grant.pd != pd || srx_mr_check_access(sdev, access))
		goto out_put;

	write_lock(&fr->lock);
	if (fr->valid || !fr->npages)
		goto out_unlock;
	iova = mr->base_mr.iova;
	length = mr->base_mr.length;
	if (length > ((u64)fr->npages << fr->shift) - fr->first_off ||
	    iova > U64_MAX - length)
		goto out_unlock;
	mr->grant.iova = iova;
	mr->grant.length = length;
	mr->grant.access = access;
	WRITE_ONCE(mr->key, key);
	fr->valid = true;
	ret = 0;
out_unlock:
	write_unlock(&fr->lock);
out_put:
	srx_mr_put(mr);
	return ret;
}

/**
 * srx_mr_invalidate - execute an IB_WR_LOCAL_INV, or a peer's SEND with
 *	Invalidate
 * @sdev: the device
 * @qp: the QP it came through, whose PD must be the MR's
 * @key: the key to invalidate: the MR's whole current key
 * @remote: a SEND with Invalidate (else a LOCAL_INV)
 *
 * Only a fast-registration MR or a type 2 window (mw.c) can be
 * invalidated (rxe_invalidate_mr(): another type is EINVAL). An invalid one whose key matches stays
 * invalid, as rxe's. When this returns, no access through the key is
 * under way (the lock, mr.h): the consumer may reuse the pages.
 *
 * Context: send_lock or resp_lock held (bottom halves off).
 * Return: 0 or -EINVAL.
 */
int srx_mr_invalidate(struct srx_device *sdev, const struct ib_qp *qp,
		      u32 key, bool remote)
{
	struct srx_frmr *fr;
	struct srx_mr *mr;
	int ret = -EINVAL;

	mr = srx_mr_lookup(sdev, srx_mr_key_index(key), 0, true);
	if (!mr)
		return -EINVAL;
	if (mr->win) {
		ret = srx_mw_invalidate(sdev, mr, qp, key, remote);
		srx_mr_put(mr);
		return ret;
	}
	fr = mr->fr;
	if (fr && mr->grant.pd == qp->pd) {
		write_lock(&fr->lock);
		if (mr->key == key) {
			fr->valid = false;
			ret = 0;
		}
		write_unlock(&fr->lock);
	}
	srx_mr_put(mr);
	return ret;
}
