// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Address handles.
 *
 * The RDMA core has done the address work before srx is called: it
 * requires a GRH on a RoCE port, takes the reference on the source GID's
 * attribute (ah_attr->grh.sgid_attr) and, for a user AH, resolves the
 * destination MAC through the neighbour table, failing with
 * ENETUNREACH/EHOSTUNREACH or, for a neighbour that never answers,
 * ETIMEDOUT (core/verbs.c rdma_create_user_ah(), core/addr.c). srx sends
 * through the IP stack (net.c), whose neighbour layer resolves the MAC
 * again per packet, so it keeps only the address vector.
 *
 * A user AH gets a number in the device's ah_xa, which libsrx writes into
 * UD send WQEs (srx-abi.h, struct srx_create_ah_resp); the take looks it
 * up and copies the vector (srx_ah_lookup()). A kernel AH has no number.
 *
 * create_ah and destroy_ah may be called in atomic context: ib_cm creates
 * and destroys AHs under its spinlocks without RDMA_CREATE_AH_SLEEPABLE
 * (core/cm.c, cm_alloc_msg()). A kernel AH touches no table and allocates
 * nothing; only user AHs, created and destroyed by system calls, use the
 * xarray, under its lock with interrupts saved, so either path is safe
 * anywhere.
 */
#include "ah.h"
#include "device.h"

int srx_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		  struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibah->device);
	struct srx_create_ah_resp resp = {};
	struct srx_ah *ah = to_srx_ah(ibah);
	unsigned long flags;
	u32 num;
	int ret;

	if (udata) {
		ret = srx_udata_cmd(udata, NULL, 0);
		if (ret)
			return ret;
	}
	/* The UDP source port is the sending QP's (ud.c). */
	ret = srx_av_init(&ah->av, init->ah_attr, 0, 0);
	if (ret)
		return ret;
	if (atomic_inc_return(&sdev->num_ah) > SRX_MAX_AH) {
		ret = -ENOMEM;
		goto err_count;
	}
	ah->ah_num = 0;
	if (!udata)
		return 0;

	/*
	 * Only uverbs passes udata, from a system call: process context
	 * with interrupts on, so the xarray may sleep to grow.
	 */
	might_sleep();
	ret = xa_alloc_cyclic_irq(&sdev->ah_xa, &num, ah,
				  XA_LIMIT(1, SRX_MAX_AH), &sdev->ah_next,
				  GFP_KERNEL);
	if (ret < 0)
		goto err_count;
	ah->ah_num = num;

	resp.ah_num = num;
	ret = srx_udata_resp(udata, &resp, sizeof(resp), sizeof(resp));
	if (ret)
		goto err_erase;
	return 0;

err_erase:
	xa_lock_irqsave(&sdev->ah_xa, flags);
	__xa_erase(&sdev->ah_xa, num);
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
err_count:
	atomic_dec(&sdev->num_ah);
	return ret;
}

/*
 * After this returns the core frees the AH; a take that found it under
 * the xarray's lock has finished copying by then.
 */
int srx_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct srx_device *sdev = to_srx_dev(ibah->device);
	struct srx_ah *ah = to_srx_ah(ibah);
	unsigned long irqflags;

	if (ah->ah_num) {
		xa_lock_irqsave(&sdev->ah_xa, irqflags);
		__xa_erase(&sdev->ah_xa, ah->ah_num);
		xa_unlock_irqrestore(&sdev->ah_xa, irqflags);
	}
	atomic_dec(&sdev->num_ah);
	return 0;
}

/**
 * srx_ah_lookup - the address vector of a user AH, for a WQE being taken
 * @sdev: the device
 * @ah_num: the number the WQE gives, written by the process: any value
 * @pd: the QP's PD, which the AH must share (rxe_av.c, rxe_get_av())
 * @av: where the vector is copied
 *
 * Context: any.
 * Return: false if @ah_num names no AH of @pd.
 */
bool srx_ah_lookup(struct srx_device *sdev, u32 ah_num,
		   const struct ib_pd *pd, struct srx_av *av)
{
	struct srx_ah *ah;
	unsigned long flags;
	bool ok;

	xa_lock_irqsave(&sdev->ah_xa, flags);
	ah = xa_load(&sdev->ah_xa, ah_num);
	ok = ah && ah->base_ah.pd == pd;
	if (ok)
		*av = ah->av;
	xa_unlock_irqrestore(&sdev->ah_xa, flags);
	return ok;
}
