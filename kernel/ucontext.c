// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * User contexts and the mapping of rings into processes.
 *
 * Every ring a process may map is one rdma_user_mmap_entry of its context:
 * the RDMA core hands out the offsets and finds the entry again in mmap(),
 * so srx keeps no list of its own. The ring memory belongs to the entry, not
 * to the CQ or QP: destroy removes the entry, and the memory is freed when
 * the entry's last reference goes. Pages already mapped hold their own
 * references (srx_mmap() inserts them with vm_insert_pages()), so
 * a mapping stays valid until the process unmaps it, even after the object
 * or the whole device is gone.
 *
 * Ring memory is charged to the memory cgroup of the process that creates
 * the ring (as io_uring charges its rings), so a process in a container
 * cannot pin more of the host's memory through srx than its cgroup allows,
 * and an allocation that does not fit fails with ENOMEM without a word in
 * the kernel log. A ring can be 128 MiB: allocating, mapping and freeing it
 * go a bounded number of pages at a time with a resched point in between
 * (vmalloc's own page loop and vfree() have one; srx_mmap() its own).
 */
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "compat.h"
#include "device.h"
#include "ucontext.h"

int srx_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct srx_alloc_ucontext_resp resp = {
		.ring_format = SRX_RING_FORMAT,
		.cqe_size = sizeof(struct srx_cqe),
		.max_cqe = SRX_MAX_CQE,
	};
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;
	return srx_udata_resp(udata, &resp, sizeof(resp), sizeof(resp));
}

/* Nothing of a context outlives it: its objects are destroyed first. */
void srx_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

/*
 * The device is going away while the process still has it open. Nothing to
 * revoke: the core destroys every object through the usual destroy paths,
 * and the pages the process mapped stay valid (see the top of this file).
 * Having this op is what lets the core unregister without waiting for every
 * process to close its file, so `rmmod srx` never blocks on a user.
 */
void srx_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

/* Pages srx_mmap() inserts between two resched points (256 KiB). */
#define SRX_MMAP_BATCH 64

/*
 * Map a whole ring. Ring memory comes from __vmalloc() without VM_USERMAP
 * (vmalloc_user() cannot be charged to a cgroup in 6.1), so
 * remap_vmalloc_range() refuses it; the pages are inserted one batch at a
 * time instead, each taking its own reference as remap_vmalloc_range()'s
 * would. The memory is zeroed and page-aligned (srx_ring_mem_alloc()), so
 * nothing else of the kernel's shows through.
 */
int srx_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct page *pages[SRX_MMAP_BATCH];
	struct rdma_user_mmap_entry *rdma_entry;
	struct srx_mmap_entry *entry;
	unsigned long npages, done, n, i, left;
	int ret = 0;

	/* Checks VM_SHARED and that the length is the entry's whole length. */
	rdma_entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = container_of(rdma_entry, struct srx_mmap_entry, rdma_entry);

	/*
	 * The flags remap_vmalloc_range() would set: the mapping cannot grow
	 * with mremap() and stays out of core dumps.
	 */
	srx_compat_vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	npages = rdma_entry->npages;
	for (done = 0; done < npages; done += n) {
		n = min_t(unsigned long, npages - done, SRX_MMAP_BATCH);
		for (i = 0; i < n; i++)
			pages[i] = vmalloc_to_page(entry->mem +
						   (done + i) * PAGE_SIZE);
		left = n;
		ret = vm_insert_pages(vma, vma->vm_start + done * PAGE_SIZE,
				      pages, &left);
		if (ret)
			break;	/* mmap_region() unmaps what was inserted */
		cond_resched();
	}

	rdma_user_mmap_entry_put(rdma_entry);
	return ret;
}

void srx_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct srx_mmap_entry *entry =
		container_of(rdma_entry, struct srx_mmap_entry, rdma_entry);

	vfree(entry->mem);
	kfree(entry);
}

/*
 * Make @mem (from srx_ring_mem_alloc(), @size a multiple of PAGE_SIZE)
 * mappable by the process. On success the entry owns @mem; on failure the caller
 * still does.
 */
static struct srx_mmap_entry *srx_mmap_insert(struct ib_ucontext *uctx,
					      void *mem, size_t size,
					      u64 *offset)
{
	struct srx_mmap_entry *entry;
	int ret;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL_ACCOUNT);
	if (!entry)
		return ERR_PTR(-ENOMEM);

	entry->mem = mem;
	ret = rdma_user_mmap_entry_insert(uctx, &entry->rdma_entry, size);
	if (ret) {
		kfree(entry);
		return ERR_PTR(ret);
	}

	*offset = rdma_user_mmap_get_offset(&entry->rdma_entry);
	return entry;
}

/*
 * How ring memory is allocated:
 *  - GFP_KERNEL_ACCOUNT charges every page to the memory cgroup of the
 *    calling process, which is the one creating the object (the pages stay
 *    charged to it until they are freed, also while mapped);
 *  - __GFP_RETRY_MAYFAIL makes a charge over the cgroup's limit, or a
 *    machine out of memory, fail the allocation after reclaim instead of
 *    invoking the OOM killer on someone: a ring is optional memory that
 *    the caller can do without, and the verb returns ENOMEM;
 *  - __GFP_NOWARN keeps that failure, which a process can cause at will,
 *    out of the kernel log ("vmalloc error: ...");
 *  - __GFP_ZERO because the pages are mapped into the process.
 */
#define SRX_RING_GFP (GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | \
		      __GFP_NOWARN | __GFP_ZERO)

/*
 * The memory of one ring (CQ or work queue): @size bytes, a multiple of
 * PAGE_SIZE, zeroed, charged to the calling process's memory cgroup (see
 * SRX_RING_GFP). For a user object (@uctx set) it is also made mappable
 * at *@offset, and *@mmap, the entry, owns it from then on; for a kernel
 * object *@mmap is NULL and the memory is the caller's. Either way
 * srx_ring_mem_free() is the one way to let go of it.
 * Context: process; sleeps.
 * Return: the memory, or an ERR_PTR (-ENOMEM when it does not fit).
 */
void *srx_ring_mem_alloc(struct ib_ucontext *uctx, size_t size,
			 struct srx_mmap_entry **mmap, u64 *offset)
{
	struct srx_mmap_entry *entry;
	void *mem;

	*mmap = NULL;
	mem = __vmalloc(size, SRX_RING_GFP);
	if (!mem)
		return ERR_PTR(-ENOMEM);
	if (!uctx)
		return mem;

	entry = srx_mmap_insert(uctx, mem, size, offset);
	if (IS_ERR(entry)) {
		vfree(mem);
		return ERR_CAST(entry);
	}
	*mmap = entry;
	return mem;
}

/*
 * A user ring: drop the object's hold on the entry, whose memory goes with
 * the last reference (after the process unmapped it). A kernel ring: free.
 */
void srx_ring_mem_free(void *mem, struct srx_mmap_entry *mmap)
{
	if (mmap)
		rdma_user_mmap_entry_remove(&mmap->rdma_entry);
	else
		vfree(mem);
}
