// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Where a received RoCE v2 packet leaves the network layer (net.c) for the
 * transport engine: parse it once with the wire layer's pure parser, find
 * its QP with a reference, and hand a request to the QP's responder
 * (resp.c) and a response or an ACK to its completer (comp.c). Every
 * packet that goes no further is counted, never logged: a peer (or anyone
 * who can reach UDP 4791) decides how many there are.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>

#include "device.h"
#include "engine.h"
#include "mcast.h"
#include "net.h"
#include "qp.h"

/*
 * Whether @skb comes from the address @qp is connected to: an RC QP takes
 * packets from its peer only ([IBTA] 9.6.1.5, the source of a connected
 * QP's packets; rxe_recv.c's check_addr() compares the GIDs likewise).
 *
 * Context: the receive softirq; send_lock or resp_lock held (av).
 */
bool srx_pkt_from_peer(const struct srx_qp *qp, const struct sk_buff *skb)
{
	const struct srx_av *av = &qp->av;

	if (ip_hdr(skb)->version == 4)
		return av->ipv4 &&
		       !memcmp(&ip_hdr(skb)->saddr, av->dgid.raw + 12, 4);
	return !av->ipv4 &&
	       !memcmp(&ipv6_hdr(skb)->saddr, av->dgid.raw, 16);
}

/* The transport of @qp's packets, as the opcode table names it. */
static int srx_qp_roce_qpt(const struct srx_qp *qp)
{
	switch (qp->base_qp.qp_type) {
	case IB_QPT_RC:
		return SRX_ROCE_QPT_RC;
	case IB_QPT_UC:
		return SRX_ROCE_QPT_UC;
	default:	/* UD and GSI */
		return SRX_ROCE_QPT_UD;
	}
}

/*
 * Take a received packet. skb->data is at the BTH; skb->len runs from the
 * BTH through the ICRC (its last SRX_ROCE_ICRC_BYTES bytes), which net.c
 * has verified, as it has the UDP length; the skb may be nonlinear. The
 * network and transport headers are set (the IP header says v4 or v6 and
 * gives the addresses a GID lookup needs), skb->dev is the netdev it came
 * in on (a VLAN of @sdev's netdev, or loopback for a packet srx sent to
 * itself). The BTH and everything after it are unchecked.
 *
 * The packet is made linear (one copy at most, as rxe does) so that the
 * parser and the engine read one buffer: the parser checks the headers
 * against its length before anything reads a field.
 *
 * @sdev is held by the caller for the duration of the call only: whatever
 * outlives it (a queued skb, deferred work) must take its own references.
 * The skb is this function's: it frees or keeps it.
 *
 * Context: softirq (the UDP socket's encap_rcv), rcu_read_lock() held.
 */
void srx_rcv(struct srx_device *sdev, struct sk_buff *skb)
{
	struct srx_roce_pkt pkt;
	struct srx_qp *qp;

	srx_count(sdev, SRX_CNT_RCVD_PKTS, 1);
	srx_count(sdev, SRX_CNT_RCVD_BYTES, skb->len);

	if (skb_linearize(skb))
		goto drop;
	if (srx_roce_parse(skb->data, skb->len, &pkt)) {
		srx_count(sdev, SRX_CNT_RCVD_MALFORMED, 1);
		kfree_skb(skb);
		return;
	}
	if (pkt.qpn == SRX_BTH_QPN_MULTICAST) {
		srx_mcast_rcv(sdev, &pkt, skb);
		return;
	}
	/* QPN 1 is the GSI QP's (qp.c); no QP has 0 or the multicast QPN. */
	qp = srx_qp_get(sdev, pkt.qpn);
	if (!qp)
		goto drop;
	if (srx_qp_roce_qpt(qp) != pkt.op->qpt) {
		srx_qp_put(qp);
		goto drop;
	}
	/* The handlers check the state and the source under their lock. */
	if (pkt.op->qpt == SRX_ROCE_QPT_UD)
		srx_ud_rcv(qp, &pkt, skb);
	else if (pkt.op->flags & SRX_ROCE_F_REQ)
		srx_resp_rcv(qp, &pkt, skb);
	else
		srx_comp_rcv(qp, &pkt, skb);
	srx_qp_put(qp);
	return;

drop:
	srx_count(sdev, SRX_CNT_RCVD_DROPPED, 1);
	kfree_skb(skb);
}
