/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The invariant CRC (ICRC) of a RoCE v2 packet, as pure functions of bytes.
 *
 * IBTA Annex A17 (RoCE v2) keeps InfiniBand's ICRC: a CRC-32 over the
 * packet from the IP header to the end of the pad, in which the fields a
 * router may rewrite are replaced by ones. Facts, checked against Linux
 * 6.1's drivers/infiniband/sw/rxe/rxe_icrc.c (rxe_icrc_hdr()):
 *  - the polynomial and bit order are those of crc32_le() (reflected IEEE
 *    802.3, no pre- or post-inversion inside the function);
 *  - the register starts at 0xdebb20e3, which is crc32_le(~0, 8 bytes of
 *    0xff): InfiniBand's LRH, which RoCE has no more, counted as masked;
 *  - masked to ones: IPv4 TOS, TTL and header checksum; IPv6 traffic
 *    class, flow label and hop limit; the UDP checksum; BTH byte 4 (the
 *    reserved byte before DestQP, whose top bits are FECN/BECN in IBA);
 *  - the final register is inverted. rxe stores it with `*icrcp = ~icrc`,
 *    a CPU-order u32 through a __be32 pointer (rxe_icrc_generate()), so
 *    on the x86 hosts rxe interoperates with, the ICRC is little-endian on
 *    the wire: least significant byte first, as Ethernet sends its FCS.
 *    srx writes and reads it little-endian on every host (srx_icrc_put(),
 *    srx_icrc_get()), which is what rxe on x86 and RoCE hardware do.
 *
 * IPv4 headers with options are not covered: rxe's pseudo header is a
 * fixed 20 bytes (rxe_icrc_hdr() copies sizeof(struct iphdr)), so no peer
 * computes an ICRC over options that srx could match; net.c drops such
 * packets as malformed before they get here.
 *
 * No kernel header is needed beyond the fixed-width types, memcpy(), the
 * wire format (roce_hdr.h) and the CRC itself: in the kernel srx_crc32_le
 * is crc32_le(); the host tests (selftests/host/icrc_test.c) include
 * wire_host.h and define srx_crc32_le before including this file, with an
 * implementation of their own.
 */
#ifndef SRX_ICRC_H
#define SRX_ICRC_H

#ifdef __KERNEL__
#include <linux/crc32.h>
#include <linux/string.h>
#include <linux/types.h>
#define srx_crc32_le crc32_le
#else
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#endif

#include "roce_hdr.h"	/* the BTH and ICRC sizes */

/* crc32_le(0xffffffff, 8 x 0xff): the masked LRH (rxe_icrc.c). */
#define SRX_ICRC_SEED		0xdebb20e3u
#define SRX_IPV4_HDR_SIZE	20	/* without options */
#define SRX_IPV6_HDR_SIZE	40
#define SRX_UDP_HDR_SIZE	8
/* The masked part: IP header, UDP header, BTH. */
#define SRX_ICRC_MASKED_MAX	(SRX_IPV6_HDR_SIZE + SRX_UDP_HDR_SIZE + \
				 SRX_ROCE_BTH_BYTES)

/* Bytes of the masked part for an IPv4 or IPv6 packet. */
static inline unsigned int srx_icrc_masked_len(bool ipv6)
{
	return (ipv6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE) +
	       SRX_UDP_HDR_SIZE + SRX_ROCE_BTH_BYTES;
}

/*
 * Set the variant fields of @hdr to ones: @hdr holds the IP header (no
 * IPv4 options), the UDP header and the BTH, srx_icrc_masked_len() bytes.
 */
static inline void srx_icrc_mask(unsigned char *hdr, bool ipv6)
{
	unsigned int udp;

	if (ipv6) {
		/* version(4) tclass(8) flow label(20), then hop limit at 7 */
		hdr[0] |= 0x0f;
		hdr[1] = 0xff;
		hdr[2] = 0xff;
		hdr[3] = 0xff;
		hdr[7] = 0xff;
		udp = SRX_IPV6_HDR_SIZE;
	} else {
		hdr[1] = 0xff;			/* TOS */
		hdr[8] = 0xff;			/* TTL */
		hdr[10] = 0xff;			/* header checksum */
		hdr[11] = 0xff;
		udp = SRX_IPV4_HDR_SIZE;
	}
	hdr[udp + 6] = 0xff;			/* UDP checksum */
	hdr[udp + 7] = 0xff;
	hdr[udp + SRX_UDP_HDR_SIZE + 4] = 0xff;	/* BTH byte 4 */
}

/*
 * The CRC register after the masked part: @hdr is a copy of it, from the
 * IP header on, srx_icrc_masked_len(@ipv6) bytes, which this masks in
 * place. Continue with srx_crc32_le() over the rest of the packet up to
 * the ICRC, then srx_icrc_final().
 */
static inline u32 srx_icrc_begin_copy(unsigned char *hdr, bool ipv6)
{
	srx_icrc_mask(hdr, ipv6);
	return srx_crc32_le(SRX_ICRC_SEED, hdr, srx_icrc_masked_len(ipv6));
}

/* srx_icrc_begin_copy() over the packet's own bytes, left untouched. */
static inline u32 srx_icrc_begin(const unsigned char *hdr, bool ipv6)
{
	unsigned char buf[SRX_ICRC_MASKED_MAX];

	memcpy(buf, hdr, srx_icrc_masked_len(ipv6));
	return srx_icrc_begin_copy(buf, ipv6);
}

static inline u32 srx_icrc_final(u32 crc)
{
	return ~crc;
}

/*
 * The ICRC of a packet held in one buffer: @pkt points at the IP header,
 * and @len bytes run from there to the ICRC (not included). The caller has
 * checked @len >= srx_icrc_masked_len(@ipv6).
 */
static inline u32 srx_icrc_compute(const unsigned char *pkt, size_t len,
				   bool ipv6)
{
	unsigned int hlen = srx_icrc_masked_len(ipv6);
	u32 crc = srx_icrc_begin(pkt, ipv6);

	crc = srx_crc32_le(crc, pkt + hlen, len - hlen);
	return srx_icrc_final(crc);
}

/* The ICRC's wire order: little-endian (see the top of this file). */
static inline void srx_icrc_put(unsigned char *p, u32 icrc)
{
	p[0] = icrc & 0xff;
	p[1] = (icrc >> 8) & 0xff;
	p[2] = (icrc >> 16) & 0xff;
	p[3] = icrc >> 24;
}

static inline u32 srx_icrc_get(const unsigned char *p)
{
	return p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

#endif /* SRX_ICRC_H */
