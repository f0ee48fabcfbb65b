// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows, types 1 and 2B, for processes (ibv_alloc_mw(3),
 * ibv_bind_mw(3), IBV_WR_BIND_MW, LOCAL_INV, SEND with Invalidate).
 *
 * A window is a key entry in mr_xa beside the MRs (struct srx_win, mr.h):
 * a packet's rkey finds it with the same lookup, the same reference and
 * the same per-packet access contract as an MR, and a copy through it
 * lands in the MR it is bound to, at the same addresses (srx_mr_copy()).
 * Binding and invalidation run as local operations in the requester, in
 * their place in the send queue (req.c), and a SEND with Invalidate in the
 * responder, all with bottom halves off. They change a window under
 * sdev->mw_lock, which also counts on each MR the windows bound to it, and
 * under the window's lock, which the data path holds for reading across
 * one packet's copy: once a bind, invalidation or dealloc has returned, no
 * copy through the old binding is running or can start.
 *
 * An MR with windows bound cannot be deregistered or replaced by a rereg
 * (EBUSY), so a valid window's MR is always there without a reference of
 * its own. A type 2 window answers only the QP it was bound through, by
 * number: a QP destroyed leaves its windows bound to a number that the
 * cyclic QPN allocation hands out again only after 2^24 others.
 */
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "device.h"
#include "mr.h"

/* Context: process; sleeps. */
int srx_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibmw->device);
	struct srx_mw *mw = to_srx_mw(ibmw);
	struct srx_mr *entry;
	struct srx_win *win;
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;
	/* uverbs passes the type through unchecked (ib_uverbs_alloc_mw()). */
	if (ibmw->type != IB_MW_TYPE_1 && ibmw->type != IB_MW_TYPE_2)
		return -EINVAL;

	win = kzalloc(sizeof(*win), GFP_KERNEL);
	if (!win)
		return -ENOMEM;
	rwlock_init(&win->lock);
	win->type = ibmw->type;

	entry = srx_mr_alloc(sdev, ibmw->pd, 0, NULL);
	if (IS_ERR(entry)) {
		kfree(win);
		return PTR_ERR(entry);
	}
	entry->win = win;	/* srx_mr_free() frees it */
	ret = srx_mr_publish(entry);
	if (ret)
		goto err_unreserve;
	mw->entry = entry;
	ibmw->rkey = entry->key;
	return 0;

err_unreserve:
	srx_mr_unreserve(entry);
	return ret;
}

/* A window stops granting: the bind, the invalidation or the dealloc. */
static void srx_win_unbind(struct srx_device *sdev, struct srx_win *win)
{
	lockdep_assert_held(&sdev->mw_lock);
	lockdep_assert_held_write(&win->lock);

	if (!win->valid)
		return;
	win->target->mw_binds--;
	win->target = NULL;
	win->valid = false;
}

/*
 * Deallocation unbinds, then retires the key entry as deregistration
 * retires an MR's: unpublished, then freed once the last packet holding
 * it has released it. Context: process; sleeps.
 */
int srx_dealloc_mw(struct ib_mw *ibmw)
{
	struct srx_mr *entry = to_srx_mw(ibmw)->entry;
	struct srx_device *sdev = entry->sdev;
	struct srx_win *win = entry->win;

	spin_lock_bh(&sdev->mw_lock);
	write_lock(&win->lock);
	srx_win_unbind(sdev, win);
	write_unlock(&win->lock);
	spin_unlock_bh(&sdev->mw_lock);
	srx_mr_retire(entry);
	return 0;
}

/*
 * Before @mr's key goes (deregistration) or moves to a new MR (rereg):
 * -EBUSY while windows are bound to it, else no window binds to it from
 * now on. Context: process.
 */
int srx_mr_forbid_binds(struct srx_mr *mr)
{
	struct srx_device *sdev = mr->sdev;
	int ret = 0;

	spin_lock_bh(&sdev->mw_lock);
	if (mr->mw_binds)
		ret = -EBUSY;
	else
		mr->unbindable = true;
	spin_unlock_bh(&sdev->mw_lock);
	return ret;
}

/* A rereg that failed after srx_mr_forbid_binds(): @mr stays. */
void srx_mr_allow_binds(struct srx_mr *mr)
{
	struct srx_device *sdev = mr->sdev;

	spin_lock_bh(&sdev->mw_lock);
	mr->unbindable = false;
	spin_unlock_bh(&sdev->mw_lock);
}

/**
 * srx_mw_bind - execute an IB_WR_BIND_MW
 * @sdev: the device
 * @qp: the QP that posted it
 * @b: the bind, from the private WQE copy
 *
 * As rdma_rxe (rxe_mw.c, rxe_check_bind_mw()): the window is in the QP's
 * PD (C10-72); a type 2 window must be free and the bind not empty
 * (o10-37.2.30, o10-37.2.40); the MR is a registered user MR that allows
 * it (srx_mw_bind_ok()). The window is named by its key's index (a type
 * 2 window's ibv_mw keeps the key it was allocated with, so its key byte
 * may be stale), its new key is the index with the bind's key byte, and
 * the MR by its whole lkey. A type 1 bind of length 0 unbinds.
 *
 * Context: the QP's send_lock held (bottom halves off).
 * Return: 0, or -EINVAL (the WQE completes IB_WC_MW_BIND_ERR, as rxe's).
 */
int srx_mw_bind(struct srx_device *sdev, const struct ib_qp *qp,
		const struct srx_bind_wr *b)
{
	struct srx_mr *entry, *target = NULL;
	struct srx_win *win;
	int ret = -EINVAL;

	if (srx_mr_key_index(b->rkey) != srx_mr_key_index(b->mw_rkey) ||
	    (b->access & ~(SRX_MW_ACCESS & sdev->accepts.mr_access)))
		return -EINVAL;
	entry = srx_mr_lookup(sdev, srx_mr_key_index(b->mw_rkey), 0, true);
	if (!entry)
		return -EINVAL;
	win = entry->win;
	if (!win || entry->grant.pd != qp->pd)
		goto out_put_entry;
	if (b->length) {
		target = srx_mr_get(sdev, b->mr_lkey);
		if (!target)
			goto out_put_entry;
		/* user MRs only: their grant never changes once published */
		if (!target->pages || target->fr || target->win ||
		    !srx_mw_bind_ok(&target->grant, qp->pd, b))
			goto out_put_target;
	} else if (win->type == IB_MW_TYPE_2) {
		goto out_put_entry;
	}

	spin_lock(&sdev->mw_lock);
	write_lock(&win->lock);
	if ((win->type == IB_MW_TYPE_2 && win->valid) ||
	    (target && target->unbindable))
		goto out_unlock;
	srx_win_unbind(sdev, win);
	if (target) {
		target->mw_binds++;
		win->target = target;
		win->valid = true;
	}
	entry->grant.iova = b->addr;
	entry->grant.length = b->length;
	entry->grant.access = b->access;
	WRITE_ONCE(entry->key, b->rkey);
	win->qpn = qp->qp_num;
	ret = 0;
out_unlock:
	write_unlock(&win->lock);
	spin_unlock(&sdev->mw_lock);
out_put_target:
	if (target)
		srx_mr_put(target);
out_put_entry:
	srx_mr_put(entry);
	return ret;
}

/**
 * srx_mw_invalidate - srx_mr_invalidate() of a window's key
 * @sdev: the device
 * @entry: the window's key entry, referenced by the caller
 * @qp: the QP the invalidation came through
 * @key: the key to invalidate: the window's whole current key
 * @remote: a SEND with Invalidate, which must come through the QP a
 *	type 2B window is bound to, as its accesses must
 *
 * Only a bound type 2 window in the QP's PD (o10-37.2.26: a type 1 window
 * is not invalidated, it is rebound).
 *
 * Context: send_lock or resp_lock held (bottom halves off).
 * Return: 0 or -EINVAL.
 */
int srx_mw_invalidate(struct srx_device *sdev, struct srx_mr *entry,
		      const struct ib_qp *qp, u32 key, bool remote)
{
	struct srx_win *win = entry->win;
	int ret = -EINVAL;

	if (win->type != IB_MW_TYPE_2 || entry->grant.pd != qp->pd)
		return -EINVAL;
	spin_lock(&sdev->mw_lock);
	write_lock(&win->lock);
	if (win->valid && entry->key == key &&
	    (!remote || win->qpn == qp->qp_num)) {
		srx_win_unbind(sdev, win);
		ret = 0;
	}
	write_unlock(&win->lock);
	spin_unlock(&sdev->mw_lock);
	return ret;
}
