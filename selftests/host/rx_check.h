/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * srx's receive checks in the kernel's order, on any bytes, and what must
 * hold for each input: shared by rx_test.c (the corpus, the refusals, a
 * fixed mutation loop) and the libFuzzer target rx_fuzz.c.
 *
 * An input is a frame from its IP header on, as net.c's encap_rcv sees it
 * once the IP and UDP layers are done: IPv6 if the version nibble says 6,
 * else IPv4, the UDP header where the IPv4 header length puts it (always
 * 40 bytes on for IPv6: the stack would have walked extension headers, and
 * srx refuses them). The stages, as srx_udp_encap_rcv() and srx_rcv() run
 * them:
 *   1. srx_roce_frame_check() (kernel/roce_frame.h);
 *   2. the ICRC (kernel/icrc.h) against the frame's last four bytes;
 *   3. srx_roce_parse() (kernel/roce_pkt.c) from the BTH on.
 * Everything after the parser needs a QP, and is the VM tests'.
 *
 * Properties, for any bytes and any length:
 *  - no stage reads outside a buffer allocated at the exact length (ASan);
 *    the frame check answers the same when only the IP and UDP headers are
 *    readable (the linear part the UDP layer guarantees);
 *  - a refusal is one of its stage's codes;
 *  - an accepted frame's lengths agree: IP length = frame length, UDP
 *    length = the rest, room for a BTH and an ICRC, no IP options or
 *    extension headers;
 *  - the parser holds wire_check.h's properties on the UDP payload.
 *
 * Include after wire_host.h, kernel/roce_opcode.c, kernel/roce_pkt.c and
 * wire_check.h; links with zlib.
 */
#ifndef SRX_RX_CHECK_H
#define SRX_RX_CHECK_H

#include <stdlib.h>
#include <zlib.h>

/* icrc.h's crc32_le, from zlib's pre- and post-inverted crc32(). */
static u32 srx_crc32_le(u32 crc, const unsigned char *p, size_t len)
{
	return ~(u32)crc32(~crc, p, len);
}

#include "icrc.h"		/* kernel/icrc.h */
#include "roce_frame.h"		/* kernel/roce_frame.h */

enum rx_stage {
	RX_STAGE_FRAME,		/* refused by srx_roce_frame_check() */
	RX_STAGE_ICRC,		/* the ICRC did not match */
	RX_STAGE_PARSE,		/* refused by srx_roce_parse() */
	RX_STAGE_ACCEPTED,	/* on to the QP lookup */
	RX_STAGE_COUNT
};

struct rx_verdict {
	int stage;		/* enum rx_stage */
	int err;		/* the refusing stage's negated code, or 0 */
	bool ipv6;
	u32 udp_off;
};

/* The frame's family, as the socket it came to would tell. */
static bool rx_is_ipv6(const u8 *data, size_t len)
{
	return len && data[0] >> 4 == 6;
}

/* Where the stack would put the UDP header: see the top of this file. */
static u32 rx_udp_off(const u8 *data, size_t len)
{
	if (rx_is_ipv6(data, len))
		return SRX_IPV6_HDR_SIZE;
	return len ? (data[0] & 0x0f) * 4u : 0;
}

/* Bit 0 of rx_fix()'s @how: IP and UDP lengths made the frame's. */
#define RX_FIX_LENGTHS	1u
/* Bit 1: the ICRC recomputed over what is there. */
#define RX_FIX_ICRC	2u

/*
 * Make @buf's lengths or ICRC right, so that mutations of the rest get
 * past the first stages; touches only what lies inside @len.
 */
static void rx_fix(u8 *buf, size_t len, unsigned int how)
{
	bool ipv6 = rx_is_ipv6(buf, len);
	u32 udp_off = rx_udp_off(buf, len);
	u32 iplen = ipv6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE;

	if (len > 0xffff || len < iplen || len < (size_t)udp_off + 8)
		return;
	if (how & RX_FIX_LENGTHS) {
		u32 ipfield = ipv6 ? len - SRX_IPV6_HDR_SIZE : len;
		u32 ulen = len - udp_off;

		buf[ipv6 ? 4 : 2] = ipfield >> 8;
		buf[ipv6 ? 5 : 3] = ipfield & 0xff;
		buf[udp_off + 4] = ulen >> 8;
		buf[udp_off + 5] = ulen & 0xff;
	}
	if ((how & RX_FIX_ICRC) && udp_off == iplen &&
	    len >= srx_icrc_masked_len(ipv6) + SRX_ROCE_ICRC_BYTES)
		srx_icrc_put(buf + len - SRX_ROCE_ICRC_BYTES,
			     srx_icrc_compute(buf, len - SRX_ROCE_ICRC_BYTES,
					      ipv6));
}

/* Stage 1 on @exact, with its properties. */
static const char *rx_check_frame(const u8 *exact, u32 len,
				  struct rx_verdict *v)
{
	u32 iphlen = v->ipv6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE;
	u32 head = v->udp_off + SRX_UDP_HDR_SIZE;
	u8 *linear;
	int r, r_head;

	r = srx_roce_frame_check(exact, len, v->udp_off, len, v->ipv6);
	if (r > 0 || -r >= SRX_FRAME_E_COUNT)
		return "frame check answered outside enum srx_frame_err";
	if (head <= len && head >= iphlen) {
		/* Only the IP and UDP headers readable, as in an skb. */
		linear = malloc(head);
		if (!linear)
			return "out of memory";
		memcpy(linear, exact, head);
		r_head = srx_roce_frame_check(linear, head, v->udp_off, len,
					      v->ipv6);
		free(linear);
		if (r_head != r)
			return "frame check depends on bytes past the headers";
	}
	v->err = r;
	if (r)
		return NULL;
	if (v->udp_off != iphlen || exact[0] >> 4 != (v->ipv6 ? 6 : 4))
		return "accepted IP options, extension headers or a version";
	if ((v->ipv6 ? exact[6] : exact[9]) != SRX_IPPROTO_UDP)
		return "accepted a protocol other than UDP";
	if ((v->ipv6 ? SRX_IPV6_HDR_SIZE +
		       srx_frame_be16(exact + 4) : srx_frame_be16(exact + 2))
	    != len)
		return "accepted an IP length not the frame's";
	if (srx_frame_be16(exact + v->udp_off + 4) != len - v->udp_off)
		return "accepted a UDP length not the rest of the frame";
	if (len < head + SRX_ROCE_BTH_BYTES + SRX_ROCE_ICRC_BYTES)
		return "accepted a frame without room for a BTH and an ICRC";
	return NULL;
}

/*
 * Runs the stages on @data, each on a copy of its exact length; returns
 * NULL if every property held, else what broke. @v gets the verdict.
 */
static const char *rx_check_one(const u8 *data, size_t size,
				struct rx_verdict *v)
{
	const char *why;
	u32 len = size;
	u8 *exact;
	u32 head;
	int res;

	memset(v, 0, sizeof(*v));
	if (size > 0xffff)
		return NULL;	/* longer than any IP packet: never seen */
	v->ipv6 = rx_is_ipv6(data, len);
	v->udp_off = rx_udp_off(data, len);
	exact = malloc(len ? len : 1);
	if (!exact)
		return "out of memory";
	memcpy(exact, data, len);

	v->stage = RX_STAGE_FRAME;
	why = rx_check_frame(exact, len, v);
	if (why || v->err)
		goto out;

	v->stage = RX_STAGE_ICRC;
	if (srx_icrc_get(exact + len - SRX_ROCE_ICRC_BYTES) !=
	    srx_icrc_compute(exact, len - SRX_ROCE_ICRC_BYTES, v->ipv6)) {
		v->err = -1;
		goto out;
	}

	v->stage = RX_STAGE_PARSE;
	head = v->udp_off + SRX_UDP_HDR_SIZE;
	why = wire_check_one(exact + head, len - head, &res);
	v->err = res;
	if (!why && !res)
		v->stage = RX_STAGE_ACCEPTED;
out:
	free(exact);
	return why;
}

#endif /* SRX_RX_CHECK_H */
