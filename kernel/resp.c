// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The responder of the RC transport: the receive side of a QP's peer's
 * requests. Not yet: a request is counted and dropped.
 */
#include <linux/skbuff.h>

#include "device.h"
#include "engine.h"
#include "qp.h"

/**
 * srx_resp_rcv - a request for @qp arrived
 * @qp: the QP, referenced by the caller
 * @pkt: the parsed request
 * @skb: the packet, linear, BTH at data; consumed
 *
 * Context: the receive softirq.
 */
void srx_resp_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		  struct sk_buff *skb)
{
	spin_lock_bh(&qp->resp_lock);
	srx_count(qp->sdev, SRX_CNT_RCVD_DROPPED, 1);
	spin_unlock_bh(&qp->resp_lock);
	consume_skb(skb);
}

void srx_resp_work(struct work_struct *w)
{
}
