/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What differs between the kernels srx builds for (Debian 12's Linux 6.1 and
 * 6.12), in one place, the way WireGuard's compat/ does it: the rest of srx is
 * written against one API and calls the helpers here where another kernel
 * differs.
 *
 * Each difference is found by a feature probe in Kbuild that reads the
 * kernel's own headers and defines SRX_HAVE_<feature>; a version check is a
 * last resort and is marked "COMPAT: version" so that it can be found and
 * stripped mechanically once the older kernel is no longer supported. Today
 * there is none.
 */
#ifndef SRX_COMPAT_H
#define SRX_COMPAT_H

#include <linux/mm.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * SRX_HAVE_CREATE_CQ_ATTRS: ib_device_ops.create_cq takes the whole
 * struct uverbs_attr_bundle instead of its struct ib_udata (6.12 does, 6.1
 * does not). The bundle holds the udata srx_create_cq() wants as
 * driver_udata. A kernel caller
 * (ib_alloc_cq(), __ib_create_cq()) passes no bundle, which stays a NULL
 * udata: rxe takes &attrs->driver_udata unconditionally, which is not NULL
 * then, so do not copy that.
 */
int srx_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		  struct ib_udata *udata);
#ifdef SRX_HAVE_CREATE_CQ_ATTRS
static inline int srx_compat_create_cq(struct ib_cq *ibcq,
				       const struct ib_cq_init_attr *attr,
				       struct uverbs_attr_bundle *attrs)
{
	return srx_create_cq(ibcq, attr, attrs ? &attrs->driver_udata : NULL);
}
#else
#define srx_compat_create_cq srx_create_cq
#endif

/*
 * SRX_HAVE_VM_FLAGS_SET: a VMA's vm_flags may only change through
 * vm_flags_set() (6.3 made the field const for everyone else).
 */
static inline void srx_compat_vm_flags_set(struct vm_area_struct *vma,
					   vm_flags_t flags)
{
#ifdef SRX_HAVE_VM_FLAGS_SET
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

#endif /* SRX_COMPAT_H */
