/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Index arithmetic of srx's shared rings, and the arm decision.
 *
 * Pure functions of integers: no memory access, no locking, no kernel
 * headers beyond the fixed-width types. The same file is compiled into the
 * host unit tests (selftests/host/), so every rule about what a hostile
 * index may do is tested without a kernel. The memory-ordering half of the
 * contract is in include/uapi/rdma/srx-abi.h and the code that calls these.
 *
 * All indices are free-running u32 counters; see srx-abi.h.
 */
#ifndef SRX_RING_H
#define SRX_RING_H

#include <rdma/srx-abi.h>

/*
 * Free slots a producer may fill. A consumer index that is ahead of the
 * producer, or further behind than the ring is long, cannot come from an
 * honest consumer: the ring then counts as full, so a lying process stops
 * its own completions and nothing else.
 */
static inline u32 srx_ring_room(u32 prod, u32 cons, u32 entries)
{
	u32 fill = prod - cons;

	return fill > entries ? 0 : entries - fill;
}

/*
 * Entries a consumer may take. A producer index that claims more than the
 * ring holds, or lies behind the consumer, cannot come from an honest
 * producer: the kernel then takes nothing.
 */
static inline u32 srx_ring_avail(u32 prod, u32 cons, u32 entries)
{
	u32 fill = prod - cons;

	return fill > entries ? 0 : fill;
}

/* An honest pair of indices: the consumer at most one ring behind. */
static inline bool srx_ring_index_ok(u32 prod, u32 cons, u32 entries)
{
	return prod - cons <= entries;
}

/*
 * A work queue's consumer has taken the WQEs below @cons and completed
 * those below @done (done <= cons <= done + entries, the kernel's own
 * copies). A slot whose WQE is taken but not completed still holds that
 * WQE's private entry, so an honest producer lies between @cons and one
 * ring past @done: the slots it filled are all free (srx-abi.h, U5).
 */
static inline bool srx_ring_take_ok(u32 prod, u32 cons, u32 done, u32 entries)
{
	u32 fill = prod - done;

	return fill <= entries && fill >= cons - done;
}

/*
 * WQEs a consumer may take from @cons on. A producer index that is not
 * honest by srx_ring_take_ok() gives nothing: taking more would overwrite
 * the private entry of a WQE still in flight.
 */
static inline u32 srx_ring_takeable(u32 prod, u32 cons, u32 done, u32 entries)
{
	if (!srx_ring_take_ok(prod, cons, done, entries))
		return 0;
	return prod - cons;
}

/* Ring length for a request of at least @want entries (1 <= want <= 2^31). */
static inline u32 srx_ring_entries(u32 want)
{
	u32 n = 1;

	while (n < want)
		n <<= 1;
	return n;
}

/*
 * Arm word (srx-abi.h): bits 31..1 an arm sequence number, bit 0 "solicited
 * only". The CQ is armed while that sequence differs from @fired, the last
 * sequence the kernel raised an event for. An armed CQ fires on any
 * completion, or with "solicited only" on a solicited or unsuccessful one
 * (IBTA 1.4 section 11.4.2.2: errors always satisfy a solicited request).
 */
static inline u32 srx_arm_seq(u32 arm)
{
	return arm >> SRX_CQ_ARM_SEQ_SHIFT;
}

static inline int srx_arm_fires(u32 arm, u32 fired, int solicited, int error)
{
	if (srx_arm_seq(arm) == fired)
		return 0;
	if (!(arm & SRX_CQ_ARM_SOLICITED))
		return 1;
	return solicited || error;
}

#endif /* SRX_RING_H */
