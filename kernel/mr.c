// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains and memory regions.
 *
 * Registration pins user memory with ib_umem_get() and files the region in
 * the device's mr_xa under the index its keys carry, so the transport can
 * check a key, its PD, its access rights and its bounds on every access.
 */
#include <linux/random.h>
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
 * srx_init_accepts()); a right it does not report, such as remote atomic
 * without atomic_cap or memory window binding without memory windows, is
 * EINVAL, what ibv_reg_mr(3) promises for an invalid access value (EFA
 * answers EOPNOTSUPP instead; the man page is what programs are written
 * against). Remote write and remote atomic need local write (ibv_reg_mr(3));
 * the core checks that for user MRs only, so srx checks again for every
 * caller. Zero-based and on-demand regions are not supported and fall in
 * the rejected bits.
 */
static int srx_mr_check_access(struct srx_device *sdev, int access)
{
	if (access & ~sdev->accepts.mr_access)
		return -EINVAL;
	if ((access & (IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IB_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

static struct srx_mr *srx_mr_alloc(struct srx_device *sdev, int access)
{
	struct srx_mr *mr;
	u32 key;
	int ret;

	if (atomic_inc_return(&sdev->num_mr) > srx_device_max_mr()) {
		ret = -ENOMEM;
		goto err_count;
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr) {
		ret = -ENOMEM;
		goto err_count;
	}

	ret = xa_alloc_cyclic(&sdev->mr_xa, &mr->index, mr,
			      XA_LIMIT(1, SRX_MAX_MR), &sdev->mr_next,
			      GFP_KERNEL);
	if (ret < 0)
		goto err_free;

	key = (mr->index << 8) | get_random_u8();
	mr->sdev = sdev;
	mr->access = access;
	mr->base_mr.lkey = key;
	mr->base_mr.rkey = key;
	return mr;

err_free:
	kfree(mr);
err_count:
	atomic_dec(&sdev->num_mr);
	return ERR_PTR(ret);
}

static void srx_mr_free(struct srx_mr *mr)
{
	struct srx_device *sdev = mr->sdev;

	xa_erase(&sdev->mr_xa, mr->index);
	kfree(mr);
	atomic_dec(&sdev->num_mr);
}

/* The region kernel consumers get through ib_alloc_pd(): all of memory. */
struct ib_mr *srx_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct srx_mr *mr;
	int ret;

	ret = srx_mr_check_access(to_srx_dev(ibpd->device), access);
	if (ret)
		return ERR_PTR(ret);

	mr = srx_mr_alloc(to_srx_dev(ibpd->device), access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	mr->iova = 0;
	mr->length = U64_MAX;
	return &mr->base_mr;
}

struct ib_mr *srx_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			      u64 iova, int access, struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibpd->device);
	struct ib_umem *umem;
	struct srx_mr *mr;
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ERR_PTR(ret);
	ret = srx_mr_check_access(sdev, access);
	if (ret)
		return ERR_PTR(ret);
	if (!length || length > sdev->attrs.max_mr_size ||
	    iova + length < iova)
		return ERR_PTR(-EINVAL);

	umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(umem))
		return ERR_CAST(umem);

	mr = srx_mr_alloc(sdev, access);
	if (IS_ERR(mr)) {
		ret = PTR_ERR(mr);
		goto err_release;
	}
	mr->umem = umem;
	mr->iova = iova;
	mr->length = length;
	return &mr->base_mr;

err_release:
	ib_umem_release(umem);
	return ERR_PTR(ret);
}

int srx_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct srx_mr *mr = to_srx_mr(ibmr);

	if (mr->umem)
		ib_umem_release(mr->umem);
	srx_mr_free(mr);
	return 0;
}
