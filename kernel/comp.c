// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The completer of the RC transport: what comes back for a QP's requests
 * (ACKs, NAKs, READ responses, ATOMIC ACKs), and the retransmit and RNR
 * timers. Not yet: a response is counted and dropped.
 */
#include <linux/skbuff.h>

#include "device.h"
#include "engine.h"
#include "qp.h"

/**
 * srx_comp_rcv - a response to one of @qp's requests arrived
 * @qp: the QP, referenced by the caller
 * @pkt: the parsed packet: an ACK, ATOMIC ACK or READ response
 * @skb: the packet, linear, BTH at data; consumed
 *
 * Context: the receive softirq.
 */
void srx_comp_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		  struct sk_buff *skb)
{
	spin_lock_bh(&qp->send_lock);
	srx_count(qp->sdev, SRX_CNT_RCVD_DROPPED, 1);
	spin_unlock_bh(&qp->send_lock);
	consume_skb(skb);
}

void srx_retrans_timer(struct timer_list *t)
{
}

void srx_rnr_timer(struct timer_list *t)
{
}
