/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The producer side of a work queue ring, without libibverbs: the checks
 * libsrx makes of the layout the kernel returns at QP creation, and when a
 * slot is free again (U5 of srx-abi.h). selftests/host/layout_test.c feeds
 * the checks hostile layouts, and wq_reclaim_test.c plays the kernel and a
 * CQ consumer against the reclaim, under ASan and UBSan.
 */
#ifndef SRX_WQ_RING_H
#define SRX_WQ_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/srx-abi.h>

#include "cq_ring.h"		/* srx_layout_field_ok() */

/*
 * A work queue layout a mapping can hold, with every field inside it and
 * aligned, every control word outside the WQE and cqe_idx arrays, the two
 * arrays apart, and a stride that keeps each WQE's 64-bit fields aligned;
 * @hdr is the fixed part of one WQE of this queue.
 */
static inline bool srx_wq_layout_ok(const struct srx_wq_layout *l, size_t hdr)
{
	uint64_t first = l->wqe_offset, len = l->mmap_length;
	uint64_t end = first + (uint64_t)l->entries * l->wqe_size;
	uint64_t idx = l->cqe_idx_offset;
	uint64_t idx_end = idx + (uint64_t)l->entries * sizeof(uint32_t);
	const uint32_t words[] = {
		l->prod_offset, l->cons_offset, l->state_offset, l->done_offset,
		l->engine_offset,
	};
	unsigned int i;

	if (!l->entries || (l->entries & (l->entries - 1)) ||
	    l->wqe_size < hdr || l->wqe_size % 8 ||
	    !srx_layout_map_ok(l->mmap_offset, len) ||
	    first % 8 || end > len || idx % 4 || idx_end > len ||
	    (idx < end && first < idx_end) ||
	    hdr + (uint64_t)l->max_sge * sizeof(struct srx_sge) > l->wqe_size ||
	    hdr + (uint64_t)l->max_inline > l->wqe_size)
		return false;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!srx_layout_word_ok(words[i], 4, len, first, end) ||
		    !srx_layout_word_ok(words[i], 4, len, idx, idx_end))
			return false;
	}
	return true;
}

/*
 * U5: the completion written at CQ index @idx waits to be polled while it
 * lies in [@cons, @prod) of its CQ, @cons read before @prod. Past that
 * window it has been polled. A window, rather than "cons has passed idx",
 * so that an index written long ago, 2^31 completions or more behind, is
 * never taken for one ahead: at worst it waits until the CQ is drained.
 */
static inline bool srx_cqe_pending(uint32_t idx, uint32_t cons, uint32_t prod)
{
	return idx - cons < prod - cons;
}

/*
 * The new free index of a work queue: from @free, slots are freed in order
 * while they lie below @done (completed by the kernel) and the completion
 * their @cqe_idx word names has been polled, as @cons and @prod of the CQ
 * say. Bounded by @entries; a @done more than a ring ahead cannot come
 * from the kernel and frees nothing.
 */
static inline uint32_t srx_wq_reclaim(uint32_t free, uint32_t done,
				      const uint32_t *cqe_idx,
				      uint32_t entries, uint32_t cons,
				      uint32_t prod)
{
	uint32_t n = done - free, i;

	if (n > entries)
		return free;
	for (i = 0; i < n; i++) {
		uint32_t idx = srx_load_relaxed(&cqe_idx[(free + i) &
							 (entries - 1)]);

		if (srx_cqe_pending(idx, cons, prod))
			break;
	}
	return free + i;
}

#endif /* SRX_WQ_RING_H */
