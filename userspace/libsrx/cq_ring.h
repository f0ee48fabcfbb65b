/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The consumer side of a CQ ring, without libibverbs: what libsrx's poll
 * and arm paths do to the shared memory, as inline functions over a view of
 * one mapped ring. selftests/host/ runs these against a producer thread that
 * plays the kernel (kernel/ring.h), under ASan and UBSan.
 *
 * Two ways to consume:
 *  - concurrent (the default): copy the CQEs at the consumer index, then
 *    compare-and-swap the 64-bit consumer word forward. The kernel never
 *    overwrites a slot at or above the consumer index, so a copy is intact
 *    exactly when the swap succeeds; a failed swap means another thread
 *    took them, and the copy is dropped. No lock, and each CQE is taken by
 *    exactly one thread.
 *    The copy is the reader's half of a seqlock: once another consumer has
 *    moved the index past a slot, the kernel may rewrite the slot while
 *    this thread still copies it, and plain reads racing with writes are
 *    a data race, undefined behaviour under C11's model. The copy is never
 *    looked at before the swap decides, a torn copy is dropped, and the
 *    slot reads are ordered before the swap (release) and after the load
 *    of prod (acquire), so what is kept is exactly what the kernel wrote;
 *    the writer is another address space's kernel, outside the C
 *    program. Reading each slot through relaxed atomic loads would make
 *    it conforming (H.-J. Boehm, "Can seqlocks get along with programming
 *    language memory models?", MSPC 2012) and emit the same instructions
 *    on x86-64; memcpy() is kept, as seqlock readers (the Linux kernel's
 *    among them) do.
 *  - single-threaded: a private consumer index, CQEs read in place, one
 *    release store per batch; no atomic read-modify-write at all.
 * Indices are free-running u32 (srx-abi.h); a consumer word whose high half
 * is set is sealed by a resize in the kernel, and nothing may be taken from
 * that ring any more.
 */
#ifndef SRX_CQ_RING_H
#define SRX_CQ_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/srx-abi.h>

#include "barrier.h"

/* One mapped CQ ring; every pointer comes from struct srx_cq_layout. */
struct srx_cq_view {
	uint32_t *prod;
	uint32_t *fired;
	uint32_t *status;
	uint32_t *dropped;
	uint64_t *cons;
	uint32_t *arm;
	struct srx_cqe *cqes;
	uint32_t entries;		/* power of two */
	uint32_t wc_conv;		/* enum srx_wc_conv (cqe_wc.h) */
};

/*
 * The seal libsrx itself puts in the high half while it removes a reset
 * QP's CQEs (cq.c, srx_cq_clean_qp()): to consumers a seal like the
 * kernel's SRX_CQ_CONS_SEALED, but the low half stays the consumer index,
 * which the kernel reads for its room outside a resize, and posters for
 * the slots they may free (U5).
 */
#define SRX_CQ_CONS_CLEANING 0x40000000u

/* srx_cq_take() result when the ring was sealed by a concurrent resize. */
#define SRX_CQ_SEALED (-1)

#define SRX_CONS_INDEX(word) ((uint32_t)(word))
#define SRX_CONS_SEAL(word) ((uint32_t)((word) >> 32))

/* Initialise @v from a ring mapped at @base and the kernel's @layout. */
static inline void srx_cq_view_init(struct srx_cq_view *v, void *base,
				    const struct srx_cq_layout *layout)
{
	char *b = base;

	v->prod = (uint32_t *)(b + layout->prod_offset);
	v->fired = (uint32_t *)(b + layout->fired_offset);
	v->status = (uint32_t *)(b + layout->status_offset);
	v->dropped = (uint32_t *)(b + layout->dropped_offset);
	v->cons = (uint64_t *)(b + layout->cons_offset);
	v->arm = (uint32_t *)(b + layout->arm_offset);
	v->cqes = (struct srx_cqe *)(b + layout->cqe_offset);
	v->entries = layout->entries;
	v->wc_conv = 0;		/* the scalar conversion until a caller picks */
}

/*
 * A field of @size bytes at @off lies inside a mapping of @len bytes and is
 * aligned to its size. In 64 bits: an offset near 4 GiB must not wrap.
 */
static inline bool srx_layout_field_ok(uint64_t off, uint32_t size,
				       uint64_t len)
{
	return off % size == 0 && off + size <= len;
}

/*
 * A control word: a field (above) that overlaps no entry of the array at
 * [@first, @end), so that no entry written there can change it.
 */
static inline bool srx_layout_word_ok(uint64_t off, uint32_t size,
				      uint64_t len, uint64_t first,
				      uint64_t end)
{
	return srx_layout_field_ok(off, size, len) &&
	       (off + size <= first || off >= end);
}

/*
 * The largest length and offset mmap() takes: a size_t and an off_t. On a
 * 32-bit build, a 64-bit length or offset beyond them would be truncated
 * into a mapping shorter than, or elsewhere than, the one every offset was
 * checked against. The host tests set them to a 32-bit build's limits.
 */
#ifndef SRX_SIZE_MAX
#define SRX_SIZE_MAX SIZE_MAX
#endif
#ifndef SRX_OFF_MAX
#define SRX_OFF_MAX (((uint64_t)1 << (sizeof(off_t) * 8 - 1)) - 1)
#endif

static inline bool srx_layout_map_ok(uint64_t off, uint64_t len)
{
	return len <= SRX_SIZE_MAX && off <= SRX_OFF_MAX;
}

/*
 * A layout a mapping of @len bytes can hold, with every field inside it and
 * aligned, and every control word outside the CQE array: the kernel is
 * trusted, but not blindly.
 */
static inline bool srx_cq_layout_ok(const struct srx_cq_layout *l)
{
	uint64_t first = l->cqe_offset;
	uint64_t end = first + (uint64_t)l->entries * l->cqe_size;
	uint64_t len = l->mmap_length;

	return l->entries && !(l->entries & (l->entries - 1)) &&
	       l->cqe_size == sizeof(struct srx_cqe) &&
	       srx_layout_map_ok(l->mmap_offset, len) &&
	       srx_layout_word_ok(l->prod_offset, 4, len, first, end) &&
	       srx_layout_word_ok(l->fired_offset, 4, len, first, end) &&
	       srx_layout_word_ok(l->status_offset, 4, len, first, end) &&
	       srx_layout_word_ok(l->dropped_offset, 4, len, first, end) &&
	       srx_layout_word_ok(l->cons_offset, 8, len, first, end) &&
	       srx_layout_word_ok(l->arm_offset, 4, len, first, end) &&
	       first % 8 == 0 && end <= len;
}

static inline struct srx_cqe *srx_cq_slot(const struct srx_cq_view *v,
					  uint32_t idx)
{
	return &v->cqes[idx & (v->entries - 1)];
}

/*
 * CQEs ready at consumer index @cons. A fill level larger than the ring can
 * only come from a scribbled index: nothing is ready then.
 */
static inline uint32_t srx_cq_ready(const struct srx_cq_view *v, uint32_t cons)
{
	uint32_t fill = srx_load_prod(v->prod) - cons;

	return fill > v->entries ? 0 : fill;
}

/*
 * srx_cq_ready(v, cons) != 0 in one comparison, for the one-completion
 * polls: a fill level of 1..entries is ready, 0 or a scribbled index is not.
 */
static inline bool srx_cq_one_ready(const struct srx_cq_view *v, uint32_t cons)
{
	return srx_load_prod(v->prod) - cons - 1 < v->entries;
}

/*
 * Concurrent consumers, in two halves so the caller can read the CQEs in
 * place between them:
 *
 *	uint64_t word = srx_load_cons(v->cons);
 *	for (;;) {
 *		n = srx_cq_claim_begin(v, word, max);	// n CQEs from index word
 *		... read srx_cq_slot(v, SRX_CONS_INDEX(word) + i), i < n ...
 *		if (n <= 0 || srx_cq_claim_commit(v, &word, n))
 *			break;				// else word was reloaded
 *	}
 *
 * begin returns how many CQEs are ready (at most @max), 0, or SRX_CQ_SEALED.
 * What was read is valid only if commit returns true.
 */
static inline int srx_cq_claim_begin(const struct srx_cq_view *v,
				     uint64_t word, uint32_t max)
{
	uint32_t n;

	if (SRX_CONS_SEAL(word))
		return SRX_CQ_SEALED;
	n = srx_cq_ready(v, SRX_CONS_INDEX(word));
	return (int)(n < max ? n : max);
}

static inline bool srx_cq_claim_commit(const struct srx_cq_view *v,
				       uint64_t *word, uint32_t n)
{
	uint64_t next = (*word & ~(uint64_t)UINT32_MAX) |
			(uint32_t)(SRX_CONS_INDEX(*word) + n);

	return srx_claim_cons(v->cons, word, next);
}

/*
 * Concurrent consumers: take up to @max CQEs into @out. Returns how many,
 * 0 when none are ready, or SRX_CQ_SEALED.
 */
static inline int srx_cq_take(const struct srx_cq_view *v,
			      struct srx_cqe *out, uint32_t max)
{
	uint64_t word = srx_load_cons(v->cons);

	for (;;) {
		int n = srx_cq_claim_begin(v, word, max), i;

		for (i = 0; i < n; i++)
			memcpy(&out[i], srx_cq_slot(v, SRX_CONS_INDEX(word) + i),
			       sizeof(out[i]));
		if (n <= 0 || srx_cq_claim_commit(v, &word, n))
			return n;
	}
}

/* Single-threaded consumer: hand the kernel everything below @cons. */
static inline void srx_cq_release(const struct srx_cq_view *v, uint32_t cons)
{
	srx_publish_cons(v->cons, cons);
}

static inline bool srx_cq_sealed(const struct srx_cq_view *v)
{
	return SRX_CONS_SEAL(srx_load_cons(v->cons)) != 0;
}

/*
 * Cleaning a QP's CQEs out of the ring when it moves to RESET (cq.c,
 * srx_cq_clean_qp()). First a look, which changes nothing and may race
 * with anyone: does a CQE of QP @qpn sit at or above @cons? A CQE at or
 * above the consumer index is never rewritten by the kernel, so an
 * unpolled one is seen; what another consumer took meanwhile may be seen
 * too, or torn, and then the caller merely takes the slow path for
 * nothing.
 */
static inline bool srx_cq_holds_qp(const struct srx_cq_view *v, uint32_t cons,
				   uint32_t qpn)
{
	uint32_t n = srx_cq_ready(v, cons), i;

	for (i = 0; i < n; i++)
		if (srx_load_relaxed(&srx_cq_slot(v, cons + i)->qp_num) == qpn)
			return true;
	return false;
}

/*
 * Then, with every other consumer kept out of [@cons, @cons + @n), which
 * the kernel does not write either: drop the CQEs of @qpn, moving each of
 * the others up by the number dropped below it, top-down as rdma-core's
 * mlx5 provider does (mlx5_cq_clean(), providers/mlx5/cq.c). The order of
 * what stays is kept, and the consumer index must then move up by the
 * count returned, past the slots left behind at the bottom.
 */
static inline uint32_t srx_cq_compact(const struct srx_cq_view *v,
				      uint32_t cons, uint32_t n, uint32_t qpn)
{
	uint32_t removed = 0, i;

	for (i = n; i-- > 0;) {
		struct srx_cqe *cqe = srx_cq_slot(v, cons + i);

		if (cqe->qp_num == qpn)
			removed++;
		else if (removed)
			memcpy(srx_cq_slot(v, cons + i + removed), cqe,
			       sizeof(*cqe));
	}
	return removed;
}

/*
 * Put, in one step, a placeholder over a retired ring's mapping at @base:
 * anonymous memory (which releases the kernel's pages) whose consumer word,
 * at @cons_off, reads sealed. A poller that loaded the old word before the
 * kernel sealed it may still compare-and-swap against it; a zeroed word
 * would match a stale word of index 0, so the placeholder must never read
 * as an unsealed ring, not even for a moment: hence mremap() over the old
 * mapping rather than mmap(MAP_FIXED) followed by a store. On failure the
 * sealed old mapping stays, which is just as correct. Returns true if the
 * placeholder is in place.
 */
static inline bool srx_cq_put_placeholder(void *base, size_t len,
					  size_t cons_off)
{
	uint64_t sealed = (uint64_t)SRX_CQ_CONS_SEALED << 32;
	void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (tmp == MAP_FAILED)
		return false;
	memcpy((char *)tmp + cons_off, &sealed, sizeof(sealed));
	if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, base) ==
	    MAP_FAILED) {
		munmap(tmp, len);
		return false;
	}
	return true;
}

/* The next arm sequence after @prev: 31 bits, never the one last fired. */
static inline uint32_t srx_arm_next(uint32_t prev, uint32_t fired)
{
	uint32_t mask = UINT32_MAX >> SRX_CQ_ARM_SEQ_SHIFT;
	uint32_t seq = (prev + 1) & mask;

	if (seq == (fired & mask))
		seq = (seq + 1) & mask;
	return seq;
}

/*
 * Arm for the next completion (or the next solicited/unsuccessful one). The
 * fence is U3 of srx-abi.h: a poll after this call either finds a CQE that
 * raced with arming, or the kernel saw the arm and raises the event.
 */
static inline void srx_cq_arm(const struct srx_cq_view *v, uint32_t seq,
			      bool solicited_only)
{
	uint32_t word = seq << SRX_CQ_ARM_SEQ_SHIFT;

	if (solicited_only)
		word |= SRX_CQ_ARM_SOLICITED;
	srx_store_relaxed(v->arm, word);
	srx_arm_fence();
}

#endif /* SRX_CQ_RING_H */
