/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The IP and UDP headers of a received RoCE v2 packet, checked as a pure
 * function of bytes: the first of the receive path's checks (net.c), before
 * the ICRC (icrc.h) and the transport headers (roce_pkt.c). It builds
 * unchanged on the host, where selftests/host/rx_test.c and rx_fuzz.c run
 * the three in the kernel's order on any bytes.
 *
 * What the network stack has done before srx sees a packet (6.1's
 * ip_rcv_core(), ipv6_rcv(), __udp4_lib_rcv(), __udp6_lib_rcv()): the IP
 * version and header length are sane, the packet is trimmed to the IP
 * length, fragments are reassembled, a UDP length longer than the IP
 * payload is dropped and a shorter one trims the packet to it, and a
 * non-zero UDP checksum is verified. What is left for srx:
 *  - the ICRC covers the IP header as a fixed 20 or 40 bytes right before
 *    the UDP header (icrc.h), so IPv4 options and IPv6 extension headers
 *    are refused: no peer computes an ICRC over them that srx could match;
 *  - the UDP layer's trim leaves an IP length that disagrees with the UDP
 *    length: the ICRC covers the IP length as sent, so such a packet is a
 *    lie about its own size, refused rather than believed either way;
 *  - a BTH and an ICRC must fit after the UDP header.
 */
#ifndef SRX_ROCE_FRAME_H
#define SRX_ROCE_FRAME_H

#include "icrc.h"	/* header sizes; roce_hdr.h's BTH and ICRC sizes */

enum srx_frame_err {
	SRX_FRAME_E_AVAIL = 1,	/* the headers are not all readable */
	SRX_FRAME_E_VERSION,	/* IP version not the socket's family */
	SRX_FRAME_E_IP_HDR,	/* IPv4 options, IPv6 extension headers */
	SRX_FRAME_E_IP_LEN,	/* IP length not the frame's */
	SRX_FRAME_E_UDP_LEN,	/* UDP length not the rest of the frame */
	SRX_FRAME_E_SHORT,	/* no room for a BTH and an ICRC */
	SRX_FRAME_E_COUNT
};

#define SRX_IPPROTO_UDP		17

static inline unsigned int srx_frame_be16(const unsigned char *p)
{
	return (unsigned int)p[0] << 8 | p[1];
}

/**
 * srx_roce_frame_check - check a received frame's IP and UDP headers
 * @ip: the IP header's first byte
 * @avail: bytes readable from @ip on (the skb's linear part)
 * @udp_off: where the UDP header starts, counted from @ip
 * @len: bytes from @ip to the end of the frame, ICRC included
 * @ipv6: the family of the socket the frame came to
 *
 * Reads nothing past @avail. Return: 0 for a frame whose ICRC and BTH may
 * be read at @ip + @udp_off + SRX_UDP_HDR_SIZE for @len - @udp_off -
 * SRX_UDP_HDR_SIZE bytes, else a negated enum srx_frame_err.
 */
static inline int srx_roce_frame_check(const unsigned char *ip, u32 avail,
				       u32 udp_off, u32 len, bool ipv6)
{
	unsigned int iphlen = ipv6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE;
	unsigned int iplen, ulen;

	if (udp_off > avail || avail - udp_off < SRX_UDP_HDR_SIZE ||
	    avail > len)
		return -SRX_FRAME_E_AVAIL;
	/*
	 * @avail now covers the UDP header, so ip[0]; the rest of the IP
	 * header is read only once @udp_off is known to follow it.
	 */
	if (ip[0] >> 4 != (ipv6 ? 6 : 4))
		return -SRX_FRAME_E_VERSION;
	if (udp_off != iphlen)
		return -SRX_FRAME_E_IP_HDR;
	if (ipv6) {
		if (ip[6] != SRX_IPPROTO_UDP)
			return -SRX_FRAME_E_IP_HDR;
		iplen = SRX_IPV6_HDR_SIZE + srx_frame_be16(ip + 4);
	} else {
		if ((ip[0] & 0x0f) != SRX_IPV4_HDR_SIZE / 4 ||
		    ip[9] != SRX_IPPROTO_UDP)
			return -SRX_FRAME_E_IP_HDR;
		iplen = srx_frame_be16(ip + 2);
	}
	if (iplen != len)
		return -SRX_FRAME_E_IP_LEN;
	ulen = srx_frame_be16(ip + udp_off + 4);
	if (ulen != len - udp_off)
		return -SRX_FRAME_E_UDP_LEN;
	if (ulen < SRX_UDP_HDR_SIZE + SRX_ROCE_BTH_BYTES + SRX_ROCE_ICRC_BYTES)
		return -SRX_FRAME_E_SHORT;
	return 0;
}

#endif /* SRX_ROCE_FRAME_H */
