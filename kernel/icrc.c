// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ICRC of packets in skbs: icrc.h's CRC over an skb's bytes, linear or
 * not. Received packets are verified where they lie, page fragments and
 * frag lists included, without linearizing them (rxe_udp_encap_recv()
 * linearizes every packet first); sent ones get theirs written in place.
 */
#include <linux/skbuff.h>

#include "net.h"

/*
 * The ICRC over @skb from its network header up to @end (an offset from
 * skb->data, where the ICRC starts). The IP header must be linear and
 * directly followed by the UDP header at the transport header, as the IP
 * and UDP layers leave a received packet and srx_net_xmit() builds one;
 * the UDP header and BTH may lie anywhere.
 *
 * Context: any.
 */
static u32 srx_icrc_skb(const struct sk_buff *skb, unsigned int end,
			bool ipv6)
{
	unsigned int iplen = ipv6 ? SRX_IPV6_HDR_SIZE : SRX_IPV4_HDR_SIZE;
	unsigned char hdr[SRX_ICRC_MASKED_MAX];
	unsigned int off = skb_transport_offset(skb);
	unsigned int consumed = 0, n;
	struct skb_seq_state st;
	const u8 *p;
	u32 crc;

	memcpy(hdr, skb_network_header(skb), iplen);
	/* Inside the skb: the callers have checked its length. */
	skb_copy_bits(skb, off, hdr + iplen,
		      SRX_UDP_HDR_SIZE + SRX_ROCE_BTH_BYTES);
	crc = srx_icrc_begin_copy(hdr, ipv6);

	/*
	 * Extension headers, payload and pad: block by block. A block may
	 * run past @end (skb_seq_read() stops at the end of the linear part
	 * or fragment, not at the upper bound given to it), so clamp it.
	 */
	off += SRX_UDP_HDR_SIZE + SRX_ROCE_BTH_BYTES;
	skb_prepare_seq_read((struct sk_buff *)skb, off, end, &st);
	while (consumed < end - off &&
	       (n = skb_seq_read(consumed, &p, &st)) != 0) {
		n = min(n, end - off - consumed);
		crc = crc32_le(crc, p, n);
		consumed += n;
	}
	skb_abort_seq_read(&st);
	return srx_icrc_final(crc);
}

/*
 * Whether the ICRC in the last SRX_ROCE_ICRC_BYTES bytes of @skb is right.
 * The caller has checked that the skb holds UDP, BTH and ICRC after the
 * transport header (net.c, srx_rcv_well_formed()).
 *
 * Context: any; softirq on receive.
 */
bool srx_icrc_verify(const struct sk_buff *skb, bool ipv6)
{
	unsigned int end = skb->len - SRX_ROCE_ICRC_BYTES;
	unsigned char buf[SRX_ROCE_ICRC_BYTES];
	const unsigned char *p;

	p = skb_header_pointer(skb, end, SRX_ROCE_ICRC_BYTES, buf);
	return p && srx_icrc_get(p) == srx_icrc_skb(skb, end, ipv6);
}

/*
 * Write the ICRC into the last SRX_ROCE_ICRC_BYTES bytes of @skb, which
 * the packet's headers and payload do not use (srx_net_alloc_skb()
 * reserves them), wherever those bytes lie.
 *
 * Context: any.
 */
void srx_icrc_generate(struct sk_buff *skb, bool ipv6)
{
	unsigned int end = skb->len - SRX_ROCE_ICRC_BYTES;
	unsigned char buf[SRX_ROCE_ICRC_BYTES];

	srx_icrc_put(buf, srx_icrc_skb(skb, end, ipv6));
	/* Cannot fail: the range lies inside the skb. */
	WARN_ON_ONCE(skb_store_bits(skb, end, buf, SRX_ROCE_ICRC_BYTES));
}
