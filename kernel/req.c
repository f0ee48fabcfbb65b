// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The requester of the RC transport: request packets built from the
 * private copy of a send WQE (take.c) and a PSN, and nothing else.
 * Not yet: this is where the engine's packets are made and sent.
 *
 * A packet is a pure function of (swqe, PSN, QP attributes): its opcode
 * comes from its place in the message, its payload offset is (PSN - the
 * WQE's first PSN) * path MTU, and the payload is gathered with the
 * memory-key layer's stateless SGE copy (mr.c, srx_sge_copy()). So a
 * retransmission rebuilds the packet and gets the same bytes; nothing
 * keeps a data cursor that a rollback could lose (rxe, CVE-2023-53539).
 *
 * Who runs it: srx_req_run(), always under qp->send_lock, from the
 * doorbell system call of a user QP (a small budget), from send_work (a
 * kernel poster's kick, a reopened window, a timer's decision), and
 * never from a timer or for more than its budget of packets.
 *
 * Every skb sent holds a QP reference, dropped by its destructor, so
 * destroy waits for the skbs still in the stack (qp.c).
 */
#include <linux/skbuff.h>

#include "device.h"
#include "engine.h"
#include "mr.h"
#include "net.h"
#include "qp.h"
#include "take.h"

/*
 * An skb's hold on its QP. The QP rides in destructor_arg, which the
 * stack uses only for zero-copy skbs (SKBFL_ZEROCOPY_ENABLE, never set on
 * the engine's): skb->cb is the IP layer's, and a socket per QP (rxe's way
 * to find its QP from the destructor) is far heavier.
 */
static void srx_skb_destructor(struct sk_buff *skb)
{
	srx_qp_put(skb_shinfo(skb)->destructor_arg);
}

/**
 * srx_pkt_alloc - a packet of @qp's connection, headers written
 * @qp: the QP
 * @a: the header values; pad, P_Key and the destination QPN are set here
 * @payload: payload bytes, which the caller writes at *@data
 * @data: where the payload goes
 *
 * The pad bytes are zeroed; the ICRC is srx_net_xmit()'s.
 * Context: any, send_lock or resp_lock held (av, dqpn).
 * Return: the skb, or NULL (no route, no memory: counted as send_err;
 * the packet is as good as lost, which the protocol recovers from).
 */
struct sk_buff *srx_pkt_alloc(struct srx_qp *qp, struct srx_roce_hdr_args *a,
			      u32 payload, u8 **data)
{
	const struct srx_roce_opcode *op = srx_roce_opcode(a->opcode);
	struct sk_buff *skb;
	u8 pad = srx_roce_pad(payload);

	skb = srx_net_alloc_skb(qp->sdev, &qp->av, op->hdr_len + payload + pad,
				GFP_ATOMIC);
	if (IS_ERR(skb)) {
		srx_count(qp->sdev, SRX_CNT_SEND_ERR, 1);
		return NULL;
	}
	a->pad = pad;
	a->pkey = SRX_PKEY_DEFAULT;
	a->qpn = qp->dqpn;
	/* Cannot fail: a known opcode, 24-bit fields, room for the headers. */
	srx_roce_build_hdr(skb->data, op->hdr_len, a);
	memset(skb->data + op->hdr_len + payload, 0, pad);
	*data = skb->data + op->hdr_len;
	return skb;
}

/*
 * Send a packet from srx_pkt_alloc(): it takes a QP reference that its
 * destructor drops, wherever and whenever the stack frees it. The skb is
 * the stack's from here on (CVE-2024-38544: never touched after).
 * Context: any; the caller holds a reference on @qp.
 */
int srx_pkt_xmit(struct srx_qp *qp, struct sk_buff *skb)
{
	refcount_inc(&qp->ref);
	skb_shinfo(skb)->destructor_arg = qp;
	skb->destructor = srx_skb_destructor;
	return srx_net_xmit(qp->sdev, &qp->av, skb);
}

/*
 * srx_req_run - send what the send queue holds, within limits (the engine
 * comes next: nothing is sent yet).
 * Context: send_lock held (bottom halves off).
 * Return: true if the budget ran out with more to send.
 */
bool srx_req_run(struct srx_qp *qp, u32 budget)
{
	lockdep_assert_held(&qp->send_lock);
	return false;
}

/*
 * send_work: the requester for kernel posters and after the completer or
 * a timer asked for it; the flush of a QP in error.
 * Context: srx_wq (process); sleeps between flush batches.
 */
void srx_send_work(struct work_struct *w)
{
	struct srx_qp *qp = container_of(w, struct srx_qp, send_work);

	if (READ_ONCE(qp->state) == IB_QPS_ERR) {
		srx_qp_flush(qp, true);
		return;
	}
	spin_lock_bh(&qp->send_lock);
	if (srx_req_run(qp, SRX_WORK_BUDGET))
		srx_qp_kick(qp);
	spin_unlock_bh(&qp->send_lock);
}
