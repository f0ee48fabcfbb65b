// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * icrc_test.c - kernel/icrc.h, the RoCE v2 ICRC, on the host.
 *
 * icrc.h needs a crc32_le (reflected IEEE 802.3 polynomial, no inversion
 * inside): this file supplies a table-driven one, as the kernel's lib/crc32
 * is. The reference it is judged against is independent of both: zlib's
 * crc32() (pre- and post-inverted, so crc32(0, 8 x 0xff ++ data) is the
 * ICRC of data whose variant fields are ones: the 8 bytes of 0xff are the
 * masked LRH that SRX_ICRC_SEED stands for), fed a copy that this file
 * masks by its own field map, bit by bit.
 *
 * Packets are built here byte by byte, IPv4 and IPv6, with payloads of
 * several lengths. Checked: the supplied CRC agrees with zlib; the seed is
 * the CRC of 8 x 0xff; the ICRC equals the reference; changing any masked
 * bit (IPv4 TOS, TTL, header checksum; IPv6 traffic class, flow label, hop
 * limit; UDP checksum; BTH byte 4) leaves it alone and changing any other
 * bit of the covered bytes changes it; the ICRC goes on the wire
 * little-endian, as rxe on x86 sends it.
 */
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#include "wire_host.h"		/* for icrc.h's roce_hdr.h */

static u32 crc_table[256];

static void crc_table_init(void)
{
	u32 i, c;
	int k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
		crc_table[i] = c;
	}
}

static u32 srx_crc32_le(u32 crc, const unsigned char *p, size_t len)
{
	while (len--)
		crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#include "icrc.h"		/* kernel/icrc.h */

#include "kselftest_harness.h"

#define MAXPKT 2048

struct pkt {
	unsigned char b[MAXPKT];
	size_t len;		/* IP header through pad, without ICRC */
	size_t udp;		/* offset of the UDP header */
	unsigned char masked[MAXPKT];	/* bits the ICRC does not cover */
};

static void put16(unsigned char *p, unsigned int v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

/* UDP, BTH (RC SEND_ONLY), payload and pad after the IP header. */
static void build_rest(struct pkt *k, size_t udp, size_t payload)
{
	unsigned char *u = k->b + udp, *bth = u + 8;
	size_t pad = (4 - payload % 4) % 4, i;
	size_t ulen = 8 + 12 + payload + pad + 4;

	put16(u, 0xc123);		/* source port */
	put16(u + 2, 4791);
	put16(u + 4, ulen);
	put16(u + 6, 0x5a5a);		/* checksum: any value */
	k->masked[udp + 6] = 0xff;
	k->masked[udp + 7] = 0xff;

	bth[0] = 0x04;			/* RC SEND_ONLY */
	bth[1] = 0x40 | pad << 4;	/* M, PadCnt, TVer 0 */
	put16(bth + 2, 0xffff);		/* P_Key */
	bth[4] = 0xc0;			/* FECN/BECN/reserved: masked */
	k->masked[udp + 8 + 4] = 0xff;
	bth[5] = 0x00;			/* DestQP 0x0011ab */
	bth[6] = 0x11;
	bth[7] = 0xab;
	bth[8] = 0x80;			/* AckReq */
	bth[9] = 0x12;			/* PSN */
	bth[10] = 0x34;
	bth[11] = 0x56;
	for (i = 0; i < payload + pad; i++)
		bth[12 + i] = i < payload ? (unsigned char)(i * 7 + 3) : 0;
	k->udp = udp;
	k->len = udp + ulen - 4;
}

static void build_ipv4(struct pkt *k, size_t payload)
{
	unsigned char *ip = k->b;

	memset(k, 0, sizeof(*k));
	build_rest(k, 20, payload);
	ip[0] = 0x45;
	ip[1] = 0x8a;			/* TOS */
	put16(ip + 2, k->len + 4);
	put16(ip + 4, 0x1234);		/* ID */
	put16(ip + 6, 0x4000);		/* DF */
	ip[8] = 64;			/* TTL */
	ip[9] = 17;			/* UDP */
	put16(ip + 10, 0xbeef);		/* header checksum: any value */
	ip[12] = 192; ip[13] = 0; ip[14] = 2; ip[15] = 1;
	ip[16] = 192; ip[17] = 0; ip[18] = 2; ip[19] = 2;
	k->masked[1] = 0xff;
	k->masked[8] = 0xff;
	k->masked[10] = 0xff;
	k->masked[11] = 0xff;
}

static void build_ipv6(struct pkt *k, size_t payload)
{
	static const unsigned char src[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	static const unsigned char dst[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	unsigned char *ip = k->b;

	memset(k, 0, sizeof(*k));
	build_rest(k, 40, payload);
	/* version 6, traffic class 0xa5, flow label 0x9abcd */
	ip[0] = 0x6a;
	ip[1] = 0x59;
	ip[2] = 0xab;
	ip[3] = 0xcd;
	put16(ip + 4, k->len + 4 - 40);
	ip[6] = 17;
	ip[7] = 3;			/* hop limit */
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	k->masked[0] = 0x0f;		/* the traffic class's high nibble */
	k->masked[1] = 0xff;
	k->masked[2] = 0xff;
	k->masked[3] = 0xff;
	k->masked[7] = 0xff;
}

/* zlib over 8 x 0xff and a copy with the masked bits set. */
static u32 reference(const struct pkt *k)
{
	unsigned char buf[8 + MAXPKT];
	size_t i;

	memset(buf, 0xff, 8);
	for (i = 0; i < k->len; i++)
		buf[8 + i] = k->b[i] | k->masked[i];
	return (u32)crc32(0, buf, 8 + k->len);
}

FIXTURE(icrc) {
	struct pkt k;
};

FIXTURE_VARIANT(icrc) {
	bool ipv6;
};

FIXTURE_VARIANT_ADD(icrc, ipv4) { .ipv6 = false };
FIXTURE_VARIANT_ADD(icrc, ipv6) { .ipv6 = true };

FIXTURE_SETUP(icrc)
{
	crc_table_init();
}

FIXTURE_TEARDOWN(icrc)
{
}

static const size_t payloads[] = { 0, 1, 3, 4, 37, 256, 1024 };

static void build(struct pkt *k, bool ipv6, size_t payload)
{
	if (ipv6)
		build_ipv6(k, payload);
	else
		build_ipv4(k, payload);
}

TEST_F(icrc, supplied_crc_is_zlibs)
{
	unsigned char ff[8];
	const char *s = "123456789";

	/* The check value of CRC-32/ISO-HDLC. */
	ASSERT_EQ(0xcbf43926u, ~srx_crc32_le(~0u, (const void *)s, 9));
	ASSERT_EQ((u32)crc32(0, (const void *)s, 9),
		  ~srx_crc32_le(~0u, (const void *)s, 9));
	memset(ff, 0xff, sizeof(ff));
	/* The seed stands for a masked LRH: CRC register after 8 x 0xff. */
	ASSERT_EQ(SRX_ICRC_SEED, ~(u32)crc32(0, ff, sizeof(ff)));
}

TEST_F(icrc, matches_reference)
{
	size_t i;

	for (i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++) {
		build(&self->k, variant->ipv6, payloads[i]);
		ASSERT_EQ(srx_icrc_masked_len(variant->ipv6),
			  self->k.udp + 8 + 12);
		EXPECT_EQ(reference(&self->k),
			  srx_icrc_compute(self->k.b, self->k.len,
					   variant->ipv6))
			TH_LOG("payload %zu", payloads[i]);
	}
}

/* Every bit of every covered byte, flipped alone. */
TEST_F(icrc, masked_bits_only_are_ignored)
{
	struct pkt *k = &self->k;
	size_t i, p, changed = 0, kept = 0;
	u32 base, now;
	int bit;

	for (p = 0; p < sizeof(payloads) / sizeof(payloads[0]); p++) {
		build(k, variant->ipv6, payloads[p]);
		base = srx_icrc_compute(k->b, k->len, variant->ipv6);
		for (i = 0; i < k->len; i++) {
			for (bit = 0; bit < 8; bit++) {
				bool masked = k->masked[i] & (1u << bit);

				k->b[i] ^= 1u << bit;
				now = srx_icrc_compute(k->b, k->len,
						       variant->ipv6);
				k->b[i] ^= 1u << bit;
				if (masked) {
					EXPECT_EQ(base, now)
						TH_LOG("masked byte %zu bit %d", i, bit);
					kept++;
				} else {
					EXPECT_NE(base, now)
						TH_LOG("byte %zu bit %d", i, bit);
					changed++;
				}
			}
		}
	}
	/*
	 * The masks really were exercised, all of them: per packet IPv4 has
	 * TOS 8 + TTL 8 + checksum 16, IPv6 traffic class 8 + flow label 20
	 * + hop limit 8; both UDP checksum 16 + BTH byte 4 8.
	 */
	EXPECT_EQ(kept, (variant->ipv6 ? 60 : 56) *
			sizeof(payloads) / sizeof(payloads[0]));
	EXPECT_GT(changed, (size_t)0);
}

/* Whole masked fields set to other values, several at once. */
TEST_F(icrc, masked_fields_rewritten)
{
	struct pkt *k = &self->k;
	unsigned char *ip = k->b, *u;
	u32 base;

	build(k, variant->ipv6, 37);
	base = srx_icrc_compute(k->b, k->len, variant->ipv6);
	u = k->b + k->udp;
	if (variant->ipv6) {
		ip[0] = 0x60;		/* traffic class 0 */
		ip[1] = 0x00;
		ip[2] = 0x00;
		ip[3] = 0x00;		/* flow label 0 */
		ip[7] = 255;
	} else {
		ip[1] = 0x00;
		ip[8] = 1;
		put16(ip + 10, 0);
	}
	put16(u + 6, 0);
	u[8 + 4] = 0x00;
	EXPECT_EQ(base, srx_icrc_compute(k->b, k->len, variant->ipv6));
	/* ...and one unmasked field: the IPv4 ID or the IPv6 payload length. */
	if (variant->ipv6)
		put16(ip + 4, 0x0101);
	else
		put16(ip + 4, 0x4321);
	EXPECT_NE(base, srx_icrc_compute(k->b, k->len, variant->ipv6));
}

TEST_F(icrc, wire_order_is_little_endian)
{
	unsigned char w[4];

	srx_icrc_put(w, 0x11223344u);
	EXPECT_EQ(0x44, w[0]);
	EXPECT_EQ(0x33, w[1]);
	EXPECT_EQ(0x22, w[2]);
	EXPECT_EQ(0x11, w[3]);
	EXPECT_EQ(0x11223344u, srx_icrc_get(w));
}

TEST_HARNESS_MAIN
