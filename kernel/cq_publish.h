/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The producer's half of the CQ ring protocol (K1 and K3 of srx-abi.h):
 * publish the new producer index, then decide whether the arm word asks
 * for an event.
 *
 * srx_cq_post() calls it under cq->lock. The same file is compiled into
 * the host tests (selftests/host/ring_test.c), which define the four
 * kernel primitives it uses (smp_store_release, smp_mb, READ_ONCE,
 * WRITE_ONCE) as C11 atomics that also record each call: so the host
 * tests race the kernel's own sequence against libsrx's consumer, and
 * check that it orders the prod store before the arm load. Deleting the
 * fence here fails them.
 */
#ifndef SRX_CQ_PUBLISH_H
#define SRX_CQ_PUBLISH_H

#ifdef __KERNEL__
#include <asm/barrier.h>
#include <linux/compiler.h>
#endif

#include "ring.h"

/**
 * srx_cq_publish - publish CQEs already written, then read the arm word
 * @ctrl: the ring's control words
 * @prod: the new producer index
 * @publish: false while a resize moves CQEs: the new ring's prod is then
 *	published once they are all there, and no consumer looks at it
 * @fired: the kernel's own copy of the last fired sequence (never read
 *	back from @ctrl); updated when an event is due
 * @solicited: some CQE of this post asked for a solicited event
 * @failed: some CQE of this post is unsuccessful
 *
 * K3: the full fence orders the prod store before the arm load. It pairs
 * with the fence libsrx puts between its arm store and its poll (U3):
 * either that poll sees the new CQEs, or this load sees the arm, never
 * neither (store buffering, which release/acquire alone allows).
 *
 * Context: the caller serializes producers (cq->lock in the kernel).
 * Return: true when a completion event is due.
 */
static inline bool srx_cq_publish(struct srx_cq_ctrl *ctrl, u32 prod,
				  bool publish, u32 *fired, bool solicited,
				  bool failed)
{
	u32 arm;

	if (publish)
		smp_store_release(&ctrl->prod, prod);	/* K1 */
	smp_mb();					/* K3 */
	arm = READ_ONCE(ctrl->arm);
	if (!srx_arm_fires(arm, *fired, solicited, failed))
		return false;
	*fired = srx_arm_seq(arm);
	WRITE_ONCE(ctrl->fired, *fired);
	return true;
}

#endif /* SRX_CQ_PUBLISH_H */
