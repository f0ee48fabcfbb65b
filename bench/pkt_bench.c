// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pkt_bench - the per-packet pieces of srx's data path on this machine's
 * real CPU, no guest (issue 16): the ICRC of a 4 KiB RoCE v2 packet with
 * each CRC-32 the supported kernels offer, building and parsing its
 * headers (kernel/roce_pkt.c, compiled in), and copying its payload.
 *
 *   pkt_bench [ROUNDS]        default 7; prints a Markdown table
 *
 * Each figure is the median of ROUNDS timed loops, in ns per 4 KiB packet
 * and in GB/s of payload.
 *
 * The ICRC is CRC-32 (icrc.h). What the kernels have for it, both Debian's
 * 6.1 and 6.12 (their /boot/config-*):
 *  - crc32_le() from lib/crc32.c, built with CONFIG_CRC32_SLICEBY8=y: eight
 *    256-entry tables, eight bytes a step.
 *  - the crypto API's "crc32", whose fastest driver on x86 is crc32-pclmul
 *    (CONFIG_CRYPTO_CRC32_PCLMUL=m, arch/x86/crypto/crc32-pclmul_asm.S):
 *    it folds 64 bytes at a time with carry-less multiplies (PCLMULQDQ).
 *    rdma_rxe takes its ICRC from there (rxe_icrc.c, crypto_alloc_shash()).
 * srx.ko times both at load and uses the faster (icrc.c, srx_icrc_init()).
 * This file has its own implementation of each algorithm, and of the
 * byte-at-a-time table (CONFIG_CRC32_SARWATE) for scale. All are checked
 * against zlib's crc32() on every length up to 4 KiB before anything is
 * timed.
 */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zlib.h>

#include "wire_host.h"
#include "roce_opcode.c"	/* kernel/roce_opcode.c */
#include "roce_pkt.c"		/* kernel/roce_pkt.c */

#define PAYLOAD		4096
#define PKT_MAX		(SRX_ROCE_HDR_MAX + PAYLOAD + SRX_ROCE_ICRC_BYTES)
/* Each timed loop runs about this long; the loop count is calibrated. */
#define LOOP_NS		50e6

/* The IEEE 802.3 polynomial without its x^32 term, normal bit order. */
#define CRC32_POLY	0x04c11db7u

typedef u32 (*crc_fn)(u32 crc, const u8 *p, size_t len);

static u32 tab[8][256];

static void tab_init(void)
{
	u32 c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
		tab[0][i] = c;
	}
	/* tab[k][i]: byte i followed by k zero bytes. */
	for (k = 1; k < 8; k++)
		for (i = 0; i < 256; i++)
			tab[k][i] = (tab[k - 1][i] >> 8) ^
				    tab[0][tab[k - 1][i] & 0xff];
}

/* As crc32_le(): reflected, no inversion on the way in or out. */
static u32 crc_sarwate(u32 crc, const u8 *p, size_t len)
{
	while (len--)
		crc = tab[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

static u32 crc_slice8(u32 crc, const u8 *p, size_t len)
{
	u32 lo, hi;

	while (len >= 8) {
		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
		lo = le32toh(lo) ^ crc;
		hi = le32toh(hi);
		crc = tab[7][lo & 0xff] ^ tab[6][(lo >> 8) & 0xff] ^
		      tab[5][(lo >> 16) & 0xff] ^ tab[4][lo >> 24] ^
		      tab[3][hi & 0xff] ^ tab[2][(hi >> 8) & 0xff] ^
		      tab[1][(hi >> 16) & 0xff] ^ tab[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	return crc_sarwate(crc, p, len);
}

/*
 * Folding with carry-less multiplies. A 16-byte block loaded little-endian
 * is the block's polynomial bit-reflected: its first byte's bit 0 is the
 * coefficient of x^127 (counted from the block's end), so the low quadword
 * holds the upper half H and the high quadword the lower half L. Moving the
 * block n bytes further on multiplies it by x^(8n):
 *
 *   (H x^64 + L) x^(8n) = H x^(8n+64) + L x^(8n)   (mod P)
 *
 * and each x^e may be replaced by x^e mod P, of degree below 32, which
 * keeps the products below degree 96. Multiplying two reflected quadwords
 * yields the product reflected in 127 bits, one short of 128, which is one
 * factor of x: the constants are x^(e-1) mod P, reflected into the upper
 * half of a quadword.
 */
struct fold_k {
	u64 hi;		/* for H: x^(8n+63) mod P */
	u64 lo;		/* for L: x^(8n-1) mod P */
};
static struct fold_k k64, k16;	/* n = 64 (four lanes), n = 16 (one) */

static u32 xpow_mod(unsigned int e)
{
	u32 r = 1;

	while (e--)
		r = (r << 1) ^ ((r & 0x80000000u) ? CRC32_POLY : 0);
	return r;
}

static u64 reflect64(u32 k)
{
	u32 r = 0;
	int i;

	for (i = 0; i < 32; i++)
		if (k & (1u << i))
			r |= 1u << (31 - i);
	return (u64)r << 32;
}

static struct fold_k fold_k(unsigned int n)
{
	return (struct fold_k){ reflect64(xpow_mod(8 * n + 63)),
				reflect64(xpow_mod(8 * n - 1)) };
}

__attribute__((target("pclmul,sse2")))
static __m128i fold(__m128i a, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00),
			     _mm_clmulepi64_si128(a, k, 0x11));
}

__attribute__((target("pclmul,sse2")))
static u32 crc_pclmul(u32 crc, const u8 *p, size_t len)
{
	__m128i a0, a1, a2, a3, K;
	u8 last[16];

	if (len < 64)
		return crc_slice8(crc, p, len);
	/* A register of crc is the same as crc XORed into the first bytes. */
	a0 = _mm_xor_si128(_mm_loadu_si128((const void *)p),
			   _mm_cvtsi32_si128((int)crc));
	a1 = _mm_loadu_si128((const void *)(p + 16));
	a2 = _mm_loadu_si128((const void *)(p + 32));
	a3 = _mm_loadu_si128((const void *)(p + 48));
	p += 64;
	len -= 64;
	K = _mm_set_epi64x((long long)k64.lo, (long long)k64.hi);
	while (len >= 64) {
		a0 = _mm_xor_si128(fold(a0, K), _mm_loadu_si128((const void *)p));
		a1 = _mm_xor_si128(fold(a1, K), _mm_loadu_si128((const void *)(p + 16)));
		a2 = _mm_xor_si128(fold(a2, K), _mm_loadu_si128((const void *)(p + 32)));
		a3 = _mm_xor_si128(fold(a3, K), _mm_loadu_si128((const void *)(p + 48)));
		p += 64;
		len -= 64;
	}
	K = _mm_set_epi64x((long long)k16.lo, (long long)k16.hi);
	a1 = _mm_xor_si128(fold(a0, K), a1);
	a2 = _mm_xor_si128(fold(a1, K), a2);
	a3 = _mm_xor_si128(fold(a2, K), a3);
	while (len >= 16) {
		a3 = _mm_xor_si128(fold(a3, K), _mm_loadu_si128((const void *)p));
		p += 16;
		len -= 16;
	}
	/* The folded 16 bytes stand for everything before them. */
	_mm_storeu_si128((void *)last, a3);
	return crc_slice8(crc_slice8(0, last, 16), p, len);
}

static u32 crc_zlib(u32 crc, const u8 *p, size_t len)
{
	return ~(u32)crc32(~crc, p, len);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static volatile u32 sink;
static u8 pkt[PKT_MAX], dst[PKT_MAX];
static unsigned int hdr_len;

enum piece { ICRC_SARWATE, ICRC_SLICE8, ICRC_PCLMUL, ICRC_ZLIB, BUILD_PARSE,
	     COPY, NPIECES };

static const char *const piece_name[NPIECES] = {
	[ICRC_SARWATE] = "ICRC, byte-at-a-time table (CRC32_SARWATE)",
	[ICRC_SLICE8] = "ICRC, slice-by-8 (crc32_le(), CRC32_SLICEBY8)",
	[ICRC_PCLMUL] = "ICRC, PCLMULQDQ folding (crypto \"crc32\", crc32-pclmul)",
	[ICRC_ZLIB] = "ICRC, zlib's crc32() (reference)",
	[BUILD_PARSE] = "build BTH+RETH, then srx_roce_parse()",
	[COPY] = "payload copy, memcpy() of 4 KiB",
};

static const crc_fn piece_crc[NPIECES] = {
	[ICRC_SARWATE] = crc_sarwate, [ICRC_SLICE8] = crc_slice8,
	[ICRC_PCLMUL] = crc_pclmul, [ICRC_ZLIB] = crc_zlib,
};

static void build_parse(u32 i)
{
	struct srx_roce_hdr_args a = {
		.opcode = 0x06,		/* RC RDMA WRITE First */
		.pkey = 0xffff, .qpn = 0x11 + (i & 0xff), .psn = i & 0xffffff,
		.va = 0x10000 + i, .rkey = 0x1234, .dma_len = 1 << 20,
	};
	struct srx_roce_pkt p;
	int n;

	n = srx_roce_build_hdr(pkt, PKT_MAX, &a);
	if (n < 0 || srx_roce_parse(pkt, n + PAYLOAD + SRX_ROCE_ICRC_BYTES,
				    &p) < 0) {
		fprintf(stderr, "pkt_bench: build or parse failed (%d)\n", n);
		exit(1);
	}
	sink += p.psn;
}

/* One timed loop of @loops packets' @what: ns per packet. */
static double run(enum piece what, u32 loops)
{
	u32 len = hdr_len + PAYLOAD;
	double t0 = now_ns();
	u32 i, c = 0;

	for (i = 0; i < loops; i++) {
		switch (what) {
		case BUILD_PARSE:
			build_parse(i);
			break;
		case COPY:
			memcpy(dst + hdr_len, pkt + hdr_len, PAYLOAD);
			c += dst[hdr_len + (i & (PAYLOAD - 1))];
			break;
		default:
			/* The ICRC's span: masked headers + payload + pad. */
			c += piece_crc[what](c, pkt, len);
			break;
		}
	}
	sink += c;
	return (now_ns() - t0) / loops;
}

/* Every implementation gives zlib's CRC at every length and start value. */
static int self_check(void)
{
	u32 len, seed, want;
	int f;

	for (len = 0; len <= PAYLOAD; len++) {
		seed = 0xdebb20e3u ^ len;
		want = crc_zlib(seed, pkt, len);
		for (f = ICRC_SARWATE; f <= ICRC_PCLMUL; f++)
			if (piece_crc[f](seed, pkt, len) != want) {
				fprintf(stderr, "pkt_bench: %s wrong at %u bytes\n",
					piece_name[f], len);
				return -1;
			}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 7;
	double t[64], med;
	u32 i, loops;
	int r, w;

	if (rounds < 1 || rounds > 64) {
		fprintf(stderr, "usage: pkt_bench [ROUNDS 1-64]\n");
		return 2;
	}
	if (!__builtin_cpu_supports("pclmul")) {
		fprintf(stderr, "pkt_bench: this CPU has no PCLMULQDQ\n");
		return 4;
	}
	tab_init();
	k64 = fold_k(64);
	k16 = fold_k(16);
	srand(1);
	for (i = 0; i < PKT_MAX; i++)
		pkt[i] = rand();
	if (self_check())
		return 1;
	build_parse(0);
	hdr_len = SRX_ROCE_BTH_BYTES + 16;	/* BTH + RETH */

	printf("| piece | ns per 4 KiB packet | GB/s | min-max ns |\n");
	printf("|---|---|---|---|\n");
	for (w = 0; w < NPIECES; w++) {
		/* Warms the caches and branch predictors, and sizes the loop. */
		loops = LOOP_NS / run(w, 64) + 1;
		for (r = 0; r < rounds; r++)
			t[r] = run(w, loops);
		qsort(t, rounds, sizeof(t[0]), cmp_double);
		med = t[rounds / 2];
		printf("| %s | %.1f | %.2f | %.1f-%.1f |\n", piece_name[w], med,
		       PAYLOAD / med, t[0], t[rounds - 1]);
	}
	return 0;
}
