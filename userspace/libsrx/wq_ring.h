/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The producer side of a work queue ring, without libibverbs: the checks
 * libsrx makes of the layout the kernel returns at QP creation.
 * selftests/host/layout_test.c feeds them hostile layouts under ASan and
 * UBSan.
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
 * aligned, every control word outside the WQE array, and a stride that
 * keeps each WQE's 64-bit fields aligned; @hdr is the fixed part of one
 * WQE of this queue.
 */
static inline bool srx_wq_layout_ok(const struct srx_wq_layout *l, size_t hdr)
{
	uint64_t first = l->wqe_offset, len = l->mmap_length;
	uint64_t end = first + (uint64_t)l->entries * l->wqe_size;

	return l->entries && !(l->entries & (l->entries - 1)) &&
	       l->wqe_size >= hdr && l->wqe_size % 8 == 0 &&
	       srx_layout_map_ok(l->mmap_offset, len) &&
	       srx_layout_word_ok(l->prod_offset, 4, len, first, end) &&
	       srx_layout_word_ok(l->cons_offset, 4, len, first, end) &&
	       srx_layout_word_ok(l->state_offset, 4, len, first, end) &&
	       first % 8 == 0 && end <= len &&
	       hdr + (uint64_t)l->max_sge * sizeof(struct srx_sge) <= l->wqe_size &&
	       hdr + (uint64_t)l->max_inline <= l->wqe_size;
}

#endif /* SRX_WQ_RING_H */
