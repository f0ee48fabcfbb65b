// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Protection domains and memory regions, and lookup of an MR by key on the
 * data path.
 *
 * Registration pins user memory with ib_umem_get() and then publishes the
 * region in the device's mr_xa under the index its keys carry. The
 * transport engine looks a key up from any context, the receive softirq
 * included (srx_mr_get()), and checks its PD, rights and bounds
 * (mr_check.h): nothing on that path sleeps or takes a lock.
 *
 * Lifetime. Lookups run under RCU and take a reference with
 * refcount_inc_not_zero(), as rxe's pool lookup does with its kref
 * (rxe_pool.c, rxe_pool_get_index()): no lock is shared between the
 * softirq and registration, so mr_xa keeps its plain (process-context)
 * lock, and a packet costs no write to a shared line but the count. An MR
 * found after its count reached zero is refused; its memory stays valid
 * for such a reader because it is freed with kfree_rcu(). Deregistration
 * unpublishes the key, drops the registration's reference and waits for
 * the others (srx_dereg_mr() says how long that can be) before it unpins
 * the pages: once ibv_dereg_mr() has returned, no write from the network
 * can land in that memory, which the process may reuse for anything.
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

/*
 * Take an index for a new MR and its key. The index is reserved (a NULL
 * entry, which lookups do not see) until srx_mr_publish() stores the MR,
 * fully built, with the release that xa_store() implies: a lookup that
 * finds it sees every field written before.
 */
static struct srx_mr *srx_mr_alloc(struct srx_device *sdev, struct ib_pd *pd,
				   int access)
{
	struct srx_mr *mr;
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

	ret = xa_alloc_cyclic(&sdev->mr_xa, &mr->index, NULL,
			      XA_LIMIT(1, SRX_MAX_MR), &sdev->mr_next,
			      GFP_KERNEL);
	if (ret < 0)
		goto err_free;

	mr->key = (mr->index << SRX_MR_KEY_SHIFT) | get_random_u8();
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
	atomic_dec(&sdev->num_mr);
	kfree_rcu(mr, rcu);
}

/* Undo srx_mr_alloc() for an MR never published. */
static void srx_mr_unreserve(struct srx_mr *mr)
{
	xa_erase(&mr->sdev->mr_xa, mr->index);
	srx_mr_free(mr);
}

static int srx_mr_publish(struct srx_mr *mr)
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

	mr = srx_mr_alloc(to_srx_dev(ibpd->device), ibpd, access);
	if (IS_ERR(mr))
		return ERR_CAST(mr);
	/*
	 * srx uses virt DMA (ib_register_device() without a DMA device), so
	 * the addresses of a kernel consumer's SGEs are kernel virtual
	 * addresses (ib_dma_map_single() and friends return them unchanged)
	 * and the data path will use them as such. U64_MAX, not 2^64: the range
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

	mr = srx_mr_alloc(sdev, ibpd, access);
	if (IS_ERR(mr)) {
		ret = PTR_ERR(mr);
		goto err_release;
	}
	/* From here srx_mr_free() releases the umem with the MR. */
	mr->umem = umem;
	mr->grant.iova = iova;
	mr->grant.length = length;
	ret = srx_mr_publish(mr);
	if (ret)
		goto err_unreserve;
	return &mr->base_mr;

err_unreserve:
	srx_mr_unreserve(mr);
	return ERR_PTR(ret);
err_release:
	ib_umem_release(umem);
	return ERR_PTR(ret);
}

/*
 * Deregistration: unpublish, wait for every user, then unpin and free.
 *
 * After xa_erase() no lookup finds the key, so no new reference can be
 * taken except by a lookup that loaded the entry just before and then
 * wins refcount_inc_not_zero() against our put; that reference is waited
 * for like the others. Who can hold one, and for how long: only srx's data
 * path, each for one bounded, non-sleeping step (the contract in mr.h):
 * the responder while it checks and copies one packet's payload or
 * performs one atomic in the receive softirq, the requester while it
 * gathers one packet's payload or scatters one READ response. None holds
 * a reference across a sleep, a timer, an skb in flight or a second
 * packet. So the wait lasts
 * as long as the copy of at most one packet (or one caller's buffer) that
 * is running when the key goes away, and wait_for_completion() without a
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
int srx_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct srx_mr *mr = to_srx_mr(ibmr);

	might_sleep();
	xa_erase(&mr->sdev->mr_xa, mr->index);
	srx_mr_put(mr);
	wait_for_completion(&mr->released);
	srx_mr_free(mr);
	return 0;
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
	struct srx_mr *mr;

	rcu_read_lock();
	mr = xa_load(&sdev->mr_xa, srx_mr_key_index(key));
	if (mr && (mr->key != key || !refcount_inc_not_zero(&mr->refs)))
		mr = NULL;
	rcu_read_unlock();
	return mr;
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

/* May a request in @pd, asking for @need, touch [@iova, @iova + @len)? */
enum srx_acc srx_mr_check(const struct srx_mr *mr, const struct ib_pd *pd,
			  int need, u64 iova, u64 len)
{
	return srx_mr_grant_check(&mr->grant, pd, need, iova, len);
}

/**
 * srx_mr_acquire - look a key up and check one access through it
 * @sdev: the device
 * @key: the lkey or rkey
 * @pd: the PD of the QP the access is for
 * @need: the IB_ACCESS_* rights the access needs (0 for a local read)
 * @iova: first byte
 * @len: bytes; 0 is checked for PD and rights only (mr_check.h)
 * @mrp: the MR, referenced, when the access is allowed
 *
 * Context: any.
 * Return: SRX_ACC_OK with *@mrp set, or the fault (no reference held).
 */
enum srx_acc srx_mr_acquire(struct srx_device *sdev, u32 key,
			    const struct ib_pd *pd, int need, u64 iova, u64 len,
			    struct srx_mr **mrp)
{
	struct srx_mr *mr;
	enum srx_acc ret;

	mr = srx_mr_get(sdev, key);
	if (!mr)
		return SRX_ACC_KEY;
	ret = srx_mr_check(mr, pd, need, iova, len);
	if (ret != SRX_ACC_OK) {
		srx_mr_put(mr);
		return ret;
	}
	*mrp = mr;
	return SRX_ACC_OK;
}
