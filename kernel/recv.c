// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where a received RoCE v2 packet leaves the network layer (net.c) for the
 * transport engine.
 */
#include <linux/skbuff.h>

#include "device.h"
#include "net.h"

/*
 * Take a received packet. skb->data is at the BTH; skb->len runs from the
 * BTH through the ICRC (its last SRX_ROCE_ICRC_BYTES bytes), which net.c
 * has verified, as it has the UDP length; the skb may be nonlinear. The
 * network and transport headers are set (the IP header says v4 or v6 and
 * gives the addresses a GID lookup needs), skb->dev is the netdev it came
 * in on (a VLAN of @sdev's netdev, or loopback for a packet srx sent to
 * itself). The BTH and everything after it are unchecked.
 *
 * @sdev is held by the caller for the duration of the call only: whatever
 * outlives it (a queued skb, deferred work) must take its own references.
 * The skb is this function's: it frees or keeps it.
 *
 * Context: softirq (the UDP socket's encap_rcv), rcu_read_lock() held.
 */
void srx_rcv(struct srx_device *sdev, struct sk_buff *skb)
{
	srx_count(sdev, SRX_CNT_RCVD_PKTS, 1);
	srx_count(sdev, SRX_CNT_RCVD_BYTES, skb->len);
	/*
	 * The transport dispatch goes here: parse the BTH (roce_hdr.h), look
	 * up the destination QP with a reference, and run the responder or
	 * the completer. Until then every packet ends here.
	 */
	consume_skb(skb);
}
