/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * From a ring CQE to what libibverbs hands the application, and the two
 * ibv_poll_cq() loops over one ring built on it. Shared by libsrx's poll
 * paths and bench/ring_bench.c, so that the benchmark times the code
 * libsrx runs.
 */
#ifndef SRX_CQE_WC_H
#define SRX_CQE_WC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/srx-abi.h>

#include "cq_ring.h"

static inline unsigned int srx_cqe_wc_flags(const struct srx_cqe *cqe)
{
	return cqe->flags & SRX_CQE_WC_FLAGS;	/* the same bits (srx-abi.h) */
}

/*
 * The hot conversion: four 8-byte loads, six 8-byte stores, and shifts to
 * move each field to where struct ibv_wc has it (little-endian; x86-64 and
 * arm64 are). Under emulation a memory access costs several times a shift,
 * so the stores are whole words: ibv_wc's 48 bytes as six, each assembled
 * from the CQE's words:
 *
 *	ibv_wc	 0 wr_id                      srx_cqe  0 wr_id
 *		 8 status, opcode                       8 byte_len, ex
 *		16 vendor_err (0), byte_len            16 qp_num, src_qp
 *		24 imm_data, qp_num                    24 status, opcode, flags,
 *		32 src_qp, wc_flags                       reserved, slid, sl,
 *		40 pkey_index (0), slid, sl,              dlid_path_bits
 *		   dlid_path_bits, padding (0)
 *
 * The CQE's last four bytes are ibv_wc's slid, sl and dlid_path_bits as
 * they stand in its last word: that word is one shift of them.
 */
typedef uint64_t __attribute__((may_alias)) srx_u64_alias;

static inline void srx_cqe_to_wc(const struct srx_cqe *cqe, struct ibv_wc *wc)
{
	uint64_t len_ex, qpn_src, tail;
	srx_u64_alias *w;

	_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
		       "srx_cqe_to_wc packs fields for little-endian CPUs");
	_Static_assert(offsetof(struct srx_cqe, byte_len) == 8 &&
		       offsetof(struct srx_cqe, ex) == 12 &&
		       offsetof(struct srx_cqe, qp_num) == 16 &&
		       offsetof(struct srx_cqe, src_qp) == 20 &&
		       offsetof(struct srx_cqe, status) == 24 &&
		       offsetof(struct srx_cqe, opcode) == 25 &&
		       offsetof(struct srx_cqe, flags) == 26 &&
		       offsetof(struct srx_cqe, slid) == 28 &&
		       offsetof(struct srx_cqe, sl) == 30 &&
		       offsetof(struct srx_cqe, dlid_path_bits) == 31,
		       "srx_cqe layout");
	_Static_assert(offsetof(struct ibv_wc, status) == 8 &&
		       offsetof(struct ibv_wc, opcode) == 12 &&
		       offsetof(struct ibv_wc, vendor_err) == 16 &&
		       offsetof(struct ibv_wc, byte_len) == 20 &&
		       offsetof(struct ibv_wc, imm_data) == 24 &&
		       offsetof(struct ibv_wc, qp_num) == 28 &&
		       offsetof(struct ibv_wc, src_qp) == 32 &&
		       offsetof(struct ibv_wc, wc_flags) == 36 &&
		       offsetof(struct ibv_wc, pkey_index) == 40 &&
		       offsetof(struct ibv_wc, slid) == 42 &&
		       offsetof(struct ibv_wc, sl) == 44 &&
		       offsetof(struct ibv_wc, dlid_path_bits) == 45 &&
		       sizeof(struct ibv_wc) == 48, "ibv_wc layout");
	_Static_assert(sizeof(enum ibv_wc_status) == 4 &&
		       sizeof(enum ibv_wc_opcode) == 4, "ibv_wc enums");
	_Static_assert(IBV_WC_GRH == SRX_CQE_GRH &&
		       IBV_WC_WITH_IMM == SRX_CQE_WITH_IMM &&
		       IBV_WC_IP_CSUM_OK == SRX_CQE_IP_CSUM_OK &&
		       IBV_WC_WITH_INV == SRX_CQE_WITH_INV, "wc_flags bits");

	w = (srx_u64_alias *)wc;
	w[0] = cqe->wr_id;
	memcpy(&len_ex, &cqe->byte_len, 8);
	memcpy(&qpn_src, &cqe->qp_num, 8);
	w[2] = len_ex << 32;
	w[3] = len_ex >> 32 | qpn_src << 32;
	memcpy(&tail, &cqe->status, 8);
	w[4] = qpn_src >> 32 | (tail >> 16 & SRX_CQE_WC_FLAGS) << 32;
	w[1] = (tail & 0xff) | (tail >> 8 & 0xff) << 32;
	w[5] = tail >> 32 << 16;
}

/*
 * Two ways to do that conversion; a context picks one for its CQs when it
 * is created (srx_wc_conv_pick()), because which is faster depends on the
 * CPU: performance.md, "Why the CQE is 32 bytes".
 */
enum srx_wc_conv {
	SRX_WC_CONV_SCALAR = 0,	/* srx_cqe_to_wc(): any CPU */
	SRX_WC_CONV_AVX2 = 1,	/* srx_cqe_to_wc_avx2(): x86-64 with AVX2 */
};

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/*
 * The conversion in three vector instructions and one mask. ibv_wc's first
 * 32 bytes are the CQE's dwords in the order wr_id (0, 1), the word holding
 * status and opcode (6) twice, anything (0), byte_len, ex, qp_num (2, 3, 4),
 * after which a byte shuffle within each 16-byte half keeps status and
 * opcode as the low bytes of their words and zeroes vendor_err. The last
 * 16 bytes come from the CQE's upper half (qp_num at byte 0): src_qp, the
 * flags byte under SRX_CQE_WC_FLAGS, then pkey_index 0 ahead of slid, sl
 * and dlid_path_bits. Natively this costs what copying a 48-byte ibv_wc
 * costs; under binary translation each shuffle is a call into the
 * emulator, and the scalar code is faster (ring_bench).
 */
static inline __attribute__((target("avx2")))
void srx_cqe_to_wc_avx2(const struct srx_cqe *cqe, struct ibv_wc *wc)
{
	const __m256i dwords = _mm256_setr_epi32(0, 1, 6, 6, 0, 2, 3, 4);
	const __m256i bytes = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7,
					       8, -1, -1, -1, 13, -1, -1, -1,
					       -1, -1, -1, -1, 4, 5, 6, 7,
					       8, 9, 10, 11, 12, 13, 14, 15);
	const __m128i tail = _mm_setr_epi8(4, 5, 6, 7, 10, -1, -1, -1,
					   -1, -1, 12, 13, 14, 15, -1, -1);
	const __m128i tail_mask = _mm_setr_epi8(-1, -1, -1, -1,
						SRX_CQE_WC_FLAGS, 0, 0, 0,
						-1, -1, -1, -1, -1, -1, -1, -1);
	__m256i c = _mm256_loadu_si256((const __m256i *)cqe);
	__m128i hi = _mm256_extracti128_si256(c, 1);
	char *w = (char *)wc;

	_mm256_storeu_si256((__m256i *)w,
			    _mm256_shuffle_epi8(_mm256_permutevar8x32_epi32(c, dwords),
						bytes));
	_mm_storeu_si128((__m128i *)(w + 32),
			 _mm_and_si128(_mm_shuffle_epi8(hi, tail), tail_mask));
}

/* Out of line: a caller without AVX2 enabled calls it, never inlines it. */
static __attribute__((target("avx2"), noinline, unused))
void srx_cqes_to_wc_avx2(const struct srx_cqe *cqes, uint32_t mask,
			 uint32_t idx, uint32_t n, struct ibv_wc *wc)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		srx_cqe_to_wc_avx2(&cqes[(idx + i) & mask], &wc[i]);
}

/*
 * QEMU's TCG names itself in the hypervisor leaf (target/i386/cpu.c,
 * "TCGTCGTCGTCG"); a hypervisor that runs guest code natively (KVM,
 * Hyper-V, Xen) does not translate vector instructions into calls.
 */
static inline bool srx_cpu_is_tcg(void)
{
	unsigned int a, b, c, d;
	char sig[12];

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 31)))
		return false;
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	return memcmp(sig, "TCGTCGTCGTCG", 12) == 0;
}

/* Whether this CPU can execute @conv at all (tests and ring_bench ask). */
static inline bool srx_wc_conv_runs(enum srx_wc_conv conv)
{
	__builtin_cpu_init();
	return conv == SRX_WC_CONV_SCALAR ||
	       (conv == SRX_WC_CONV_AVX2 && __builtin_cpu_supports("avx2"));
}

/* Which one a context uses: AVX2 only where it runs natively. */
static inline enum srx_wc_conv srx_wc_conv_pick(void)
{
	if (srx_wc_conv_runs(SRX_WC_CONV_AVX2) && !srx_cpu_is_tcg())
		return SRX_WC_CONV_AVX2;
	return SRX_WC_CONV_SCALAR;
}
#else
static inline bool srx_wc_conv_runs(enum srx_wc_conv conv)
{
	return conv == SRX_WC_CONV_SCALAR;
}

static inline enum srx_wc_conv srx_wc_conv_pick(void)
{
	return SRX_WC_CONV_SCALAR;
}
#endif

/*
 * @n completions from consecutive ring slots starting at @idx. The ring's
 * geometry is copied into locals first: stores to @wc could otherwise alias
 * it and make the compiler reload it for every completion.
 */
static inline void srx_cqes_to_wc(const struct srx_cqe *cqes, uint32_t mask,
				  uint32_t idx, uint32_t n, struct ibv_wc *wc,
				  uint32_t conv)
{
	uint32_t i;

#if defined(__x86_64__)
	if (conv == SRX_WC_CONV_AVX2) {
		srx_cqes_to_wc_avx2(cqes, mask, idx, n, wc);
		return;
	}
#endif
	for (i = 0; i < n; i++)
		srx_cqe_to_wc(&cqes[(idx + i) & mask], &wc[i]);
}

/* One completion, converted as @conv says. */
static inline void srx_cqe_to_wc_as(const struct srx_cqe *cqe,
				    struct ibv_wc *wc, uint32_t conv)
{
#if defined(__x86_64__)
	if (conv == SRX_WC_CONV_AVX2) {
		srx_cqe_to_wc_avx2(cqe, wc);
		return;
	}
#endif
	srx_cqe_to_wc(cqe, wc);
}

/*
 * Any number of threads: up to @ne CQEs converted into @wc and claimed with
 * one compare-and-swap, converted again from where another thread left off
 * if it claimed first. Returns how many, 0, or SRX_CQ_SEALED.
 */
static inline int srx_cq_poll_wc(const struct srx_cq_view *v, int ne,
				 struct ibv_wc *wc)
{
	uint64_t word = srx_load_cons(v->cons);
	int n;

	for (;;) {
		n = srx_cq_claim_begin(v, word, ne);
		if (n > 0)
			srx_cqes_to_wc(v->cqes, v->entries - 1,
				       SRX_CONS_INDEX(word), n, wc, v->wc_conv);
		if (n <= 0 || srx_cq_claim_commit(v, &word, n))
			return n;
	}
}

/*
 * srx_cq_poll_wc() for @ne == 1, the call of a poller that wants each
 * completion as soon as it exists. The batch loop needs more registers
 * than the caller-saved ones, and under emulation every register saved on
 * the stack is a memory access; this needs none. Built once per
 * conversion (@conv a constant), so that the AVX2 one is inlined too.
 */
static inline __attribute__((always_inline))
int srx_cq_poll_one_wc_as(const struct srx_cq_view *v, struct ibv_wc *wc,
			  uint32_t conv)
{
	uint64_t *cons = v->cons;	/* wc's stores may alias *v */
	uint64_t word = srx_load_cons(cons);

	for (;;) {
		uint32_t idx = SRX_CONS_INDEX(word);

		if (SRX_CONS_SEAL(word))
			return SRX_CQ_SEALED;
		if (!srx_cq_one_ready(v, idx))
			return 0;
		srx_cqe_to_wc_as(&v->cqes[idx & (v->entries - 1)], wc, conv);
		/* not sealed: the new word's high half is 0 */
		if (srx_claim_cons(cons, &word, (uint32_t)(idx + 1)))
			return 1;
	}
}

#if defined(__x86_64__)
static __attribute__((target("avx2"), noinline, unused))
int srx_cq_poll_one_wc_avx2(const struct srx_cq_view *v, struct ibv_wc *wc)
{
	return srx_cq_poll_one_wc_as(v, wc, SRX_WC_CONV_AVX2);
}
#endif

static inline int srx_cq_poll_one_wc(const struct srx_cq_view *v,
				     struct ibv_wc *wc)
{
#if defined(__x86_64__)
	if (v->wc_conv == SRX_WC_CONV_AVX2)
		return srx_cq_poll_one_wc_avx2(v, wc);
#endif
	return srx_cq_poll_one_wc_as(v, wc, SRX_WC_CONV_SCALAR);
}

/*
 * One thread, whose consumer index is *@cons: CQEs read in place, one
 * release store, no read-modify-write.
 */
static inline int srx_cq_poll_wc_st(const struct srx_cq_view *v,
				    uint32_t *cons, int ne, struct ibv_wc *wc)
{
	uint32_t c = *cons, n = srx_cq_ready(v, c);

	if (n > (uint32_t)ne)
		n = ne;
	srx_cqes_to_wc(v->cqes, v->entries - 1, c, n, wc, v->wc_conv);
	if (n) {
		*cons = c + n;
		srx_cq_release(v, c + n);
	}
	return n;
}

/* srx_cq_poll_wc_st() for @ne == 1, as srx_cq_poll_one_wc() is. */
static inline __attribute__((always_inline))
int srx_cq_poll_one_wc_st_as(const struct srx_cq_view *v, uint32_t *cons,
			     struct ibv_wc *wc, uint32_t conv)
{
	uint64_t *word = v->cons;	/* wc's stores may alias *v */
	uint32_t c = *cons;

	if (!srx_cq_one_ready(v, c))
		return 0;
	srx_cqe_to_wc_as(&v->cqes[c & (v->entries - 1)], wc, conv);
	*cons = c + 1;
	srx_publish_cons(word, c + 1);
	return 1;
}

#if defined(__x86_64__)
static __attribute__((target("avx2"), noinline, unused))
int srx_cq_poll_one_wc_st_avx2(const struct srx_cq_view *v, uint32_t *cons,
			       struct ibv_wc *wc)
{
	return srx_cq_poll_one_wc_st_as(v, cons, wc, SRX_WC_CONV_AVX2);
}
#endif

static inline int srx_cq_poll_one_wc_st(const struct srx_cq_view *v,
					uint32_t *cons, struct ibv_wc *wc)
{
#if defined(__x86_64__)
	if (v->wc_conv == SRX_WC_CONV_AVX2)
		return srx_cq_poll_one_wc_st_avx2(v, cons, wc);
#endif
	return srx_cq_poll_one_wc_st_as(v, cons, wc, SRX_WC_CONV_SCALAR);
}

#endif /* SRX_CQE_WC_H */
