/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The whole memory model of libsrx, in named primitives.
 *
 * libsrx shares rings with srx.ko; the pairing is specified at the top of
 * include/uapi/rdma/srx-abi.h (K1..K4, U1..U5). Each primitive here says
 * which of those steps it implements; nothing else in libsrx orders memory.
 *
 *  srx_load_prod()      U1: acquire; pairs with the kernel's release of prod
 *                       (K1), so the CQEs below prod are complete.
 *  srx_publish_cons()   U2: release; the CQE reads before it are finished
 *                       before the kernel, reading cons with acquire (K2),
 *                       may overwrite those slots.
 *  srx_claim_cons()     U2 for concurrent consumers: a compare-and-swap with
 *                       release on success.
 *  srx_seal_cons()      the same with acquire too, for a consumer that seals
 *                       the ring to edit it (cleaning a reset QP's CQEs):
 *                       its reads of the slots follow the seal. Its edit
 *                       may be seen early; a poller that copied the edit
 *                       then fails its compare-and-swap, which comes after
 *                       the seal in the word's order.
 *  srx_arm_fence()      U3: the arm-word store is ordered before the next
 *                       load of prod (and of the consumer word); pairs with
 *                       the kernel's smp_mb() between publishing prod and
 *                       reading the arm word (K3). Also the poster's half of
 *                       the doorbell contract: prod store before state load,
 *                       and before the engine-word load of an RC send (U6).
 *  srx_publish_prod()   U4: release; the WQE is complete before the kernel
 *                       reads prod with acquire.
 *  srx_load_wq_cons()   U5: acquire; pairs with the kernel's release of a
 *                       work queue's cons (K4) before a slot is reused.
 *                       U7: an SRQ's slot is free once cons (read so)
 *                       has passed it (K7).
 *
 * Plain words userspace only reads for information (status, dropped,
 * fired, state) use srx_load_relaxed().
 *
 * Biased polling (cq.c) is not part of the contract with the kernel; it
 * orders the owner of a CQ against the thread revoking its bias, an
 * asymmetric Dekker handshake:
 *
 *  srx_owner_fence()    the owner's half: a compiler barrier only,
 *                       between storing its busy flag and loading the
 *                       revocation flag.
 *  srx_membarrier()     the revoker's half, between storing the
 *                       revocation flag and loading the busy flag:
 *                       membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) runs
 *                       a full barrier on every CPU running a thread of
 *                       this process. Works once the process has called
 *                       srx_membarrier_register(). Both return true on
 *                       success.
 *
 * Where membarrier() fails, the revoker falls back to plain C11 atomics, and
 * one more pair must hold: the revoker stores bias_revoked, then loads
 * bias_owner; a new owner compare-and-swaps bias_owner, then loads
 * bias_revoked. That is store-buffering: only if all four accesses are
 * memory_order_seq_cst does C11 forbid both loads from reading the old
 * values (a total order S over them puts one store before the other
 * side's load). An acquire or relaxed load after the seq_cst exchange
 * gives no such promise, and arm64 without LSE atomics really breaks it:
 * the exchange is an LDAXR/STLXR loop, and a later plain or LDAPR load may
 * be satisfied before the STLXR is visible to the revoker, which would then
 * see no owner while the owner sees no revocation. A seq_cst load compiles
 * to LDAR there, which the ARMv8 model orders after an earlier STLR/STLXR;
 * on x86-64 the exchange is a locked instruction, a full barrier, so the
 * two compile alike. cq.c's srx_cq_own_or_revoke() therefore reloads
 * bias_revoked seq_cst after winning the exchange.
 */
#ifndef SRX_BARRIER_H
#define SRX_BARRIER_H

#include <linux/membarrier.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline uint32_t srx_load_prod(const uint32_t *prod)
{
	return __atomic_load_n(prod, __ATOMIC_ACQUIRE);
}

static inline void srx_publish_cons(uint64_t *cons, uint64_t value)
{
	__atomic_store_n(cons, value, __ATOMIC_RELEASE);
}

/* On failure *expected holds the word now there. */
static inline bool srx_claim_cons(uint64_t *cons, uint64_t *expected,
				  uint64_t desired)
{
	return __atomic_compare_exchange_n(cons, expected, desired, false,
					   __ATOMIC_RELEASE, __ATOMIC_ACQUIRE);
}

static inline bool srx_seal_cons(uint64_t *cons, uint64_t *expected,
				 uint64_t desired)
{
	return __atomic_compare_exchange_n(cons, expected, desired, false,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static inline uint64_t srx_load_cons(const uint64_t *cons)
{
	return __atomic_load_n(cons, __ATOMIC_ACQUIRE);
}

static inline void srx_arm_fence(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static inline void srx_publish_prod(uint32_t *prod, uint32_t value)
{
	__atomic_store_n(prod, value, __ATOMIC_RELEASE);
}

static inline uint32_t srx_load_wq_cons(const uint32_t *cons)
{
	return __atomic_load_n(cons, __ATOMIC_ACQUIRE);
}

static inline uint32_t srx_load_relaxed(const uint32_t *word)
{
	return __atomic_load_n(word, __ATOMIC_RELAXED);
}

static inline void srx_store_relaxed(uint32_t *word, uint32_t value)
{
	__atomic_store_n(word, value, __ATOMIC_RELAXED);
}

static inline void srx_owner_fence(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline bool srx_membarrier(void)
{
	return !syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

/* Idempotent; lasts until exec(); a fork()ed child inherits it. */
static inline bool srx_membarrier_register(void)
{
	return !syscall(__NR_membarrier,
			MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
}

#endif /* SRX_BARRIER_H */
