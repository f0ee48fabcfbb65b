// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * User contexts and the mapping of rings into processes.
 *
 * Every ring a process may map is one rdma_user_mmap_entry of its context:
 * the RDMA core hands out the offsets and finds the entry again in mmap(),
 * so srx keeps no list of its own. The ring memory belongs to the entry, not
 * to the CQ or QP: destroy removes the entry, and the memory is freed when
 * the entry's last reference goes. Pages already mapped hold their own
 * references (remap_vmalloc_range() inserts them with vm_insert_page()), so
 * a mapping stays valid until the process unmaps it, even after the object
 * or the whole device is gone.
 */
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "device.h"
#include "ucontext.h"

int srx_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct srx_alloc_ucontext_resp resp = {
		.ring_format = SRX_RING_FORMAT,
		.cqe_size = sizeof(struct srx_cqe),
		.max_cqe = SRX_MAX_CQE,
	};

	if (udata->outlen < sizeof(resp))
		return -EINVAL;

	return ib_copy_to_udata(udata, &resp, sizeof(resp));
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

int srx_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma)
{
	struct rdma_user_mmap_entry *rdma_entry;
	struct srx_mmap_entry *entry;
	int ret;

	/* Checks VM_SHARED and that the length is the entry's whole length. */
	rdma_entry = rdma_user_mmap_entry_get(uctx, vma);
	if (!rdma_entry)
		return -EINVAL;
	entry = container_of(rdma_entry, struct srx_mmap_entry, rdma_entry);

	ret = remap_vmalloc_range(vma, entry->mem, 0);

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
 * Make @mem (from vmalloc_user(), @size a multiple of PAGE_SIZE) mappable
 * by the process. On success the entry owns @mem; on failure the caller
 * still does.
 */
static struct srx_mmap_entry *srx_mmap_insert(struct ib_ucontext *uctx,
					      void *mem, size_t size,
					      u64 *offset)
{
	struct srx_mmap_entry *entry;
	int ret;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
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
 * The memory of one ring (CQ or work queue): @size bytes, a multiple of
 * PAGE_SIZE, zeroed. For a user object (@uctx set) it is also made mappable
 * at *@offset, and *@mmap, the entry, owns it from then on; for a kernel
 * object *@mmap is NULL and the memory is the caller's. Either way
 * srx_ring_mem_free() is the one way to let go of it.
 * Return: the memory, or an ERR_PTR.
 */
void *srx_ring_mem_alloc(struct ib_ucontext *uctx, size_t size,
			 struct srx_mmap_entry **mmap, u64 *offset)
{
	struct srx_mmap_entry *entry;
	void *mem;

	*mmap = NULL;
	mem = vmalloc_user(size);
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
