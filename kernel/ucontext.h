/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_UCONTEXT_H
#define SRX_UCONTEXT_H

#include <rdma/ib_verbs.h>

struct srx_ucontext {
	struct ib_ucontext base_ucontext;
};

/*
 * A region userspace may map: one ring. The entry owns mem; mmap_free()
 * releases it when the last reference to the entry goes, which is after the
 * owning object removed the entry and after any mmap() that had found it.
 */
struct srx_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	void *mem;
};

/* ucontext.c */
int srx_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata);
void srx_dealloc_ucontext(struct ib_ucontext *uctx);
void srx_disassociate_ucontext(struct ib_ucontext *uctx);
int srx_mmap(struct ib_ucontext *uctx, struct vm_area_struct *vma);
void srx_mmap_free(struct rdma_user_mmap_entry *rdma_entry);
void *srx_ring_mem_alloc(struct ib_ucontext *uctx, size_t size,
			 struct srx_mmap_entry **mmap, u64 *offset);
void srx_ring_mem_free(void *mem, struct srx_mmap_entry *mmap);

#endif /* SRX_UCONTEXT_H */
