// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The UD transport, and QP1 (the GSI QP, UD on the wire): one packet per
 * message, no acknowledgement, no retry.
 *
 * Send: srx_ud_req_run(), the requester of a UD or GSI QP, which
 * srx_req_run() (req.c) hands such a QP to, under send_lock, from the
 * same callers. Each WQE becomes one SEND_ONLY packet to the address
 * vector the take copied for it (take.c) and completes once it is handed
 * to the IP stack; what the network then loses, UD does not report.
 *
 * Receive: srx_ud_rcv(), under resp_lock in the receive softirq. A
 * datagram lands in the oldest receive WQE behind a 40-byte GRH area
 * (ib_verbs.h, union rdma_network_hdr: the IPv6 header, or 20 zero bytes
 * and the IPv4 header as received, whose checksum is how libibverbs and
 * the kernel tell v4 from v6, ib_get_rdma_header_version()). A datagram
 * nobody may take (wrong Q_Key or P_Key, no receive WQE, a buffer too
 * small) is dropped and counted, never delivered and never answered.
 */
#include <linux/hash.h>
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include <rdma/ib_mad.h>

#include "device.h"
#include "engine.h"
#include "mr.h"
#include "net.h"
#include "psn.h"
#include "qp.h"
#include "take.h"

/* The GRH area at the start of every UD receive buffer (struct ib_grh). */
#define SRX_UD_GRH_BYTES	40
static_assert(SRX_UD_GRH_BYTES == sizeof(struct ib_grh));
static_assert(SRX_UD_GRH_BYTES == sizeof(union rdma_network_hdr));

/*
 * One UDP source port per UD QP, whatever it sends to (rxe's rule at QP
 * creation, ../shared/ROCE.md): 0xC000 plus 14 bits of the QPN.
 */
static u16 srx_ud_sport(const struct srx_qp *qp)
{
	return 0xC000 | hash_32(qp->base_qp.qp_num, 14);
}

/*
 * The Q_Key a datagram carries. QP1 always sends its own, 0x80010000
 * (IB_QP1_QKEY), which the MAD layer asks for with IB_QP_SET_QKEY. For
 * every other QP, a Q_Key with the high bit set in the work request means
 * the QP's own ([IBTA] 10.2.5, controlled Q_Keys; mlx4 does the same in
 * software): so a process without the right to set a privileged Q_Key on
 * its QP (the core checks CAP_NET_RAW) cannot send one either, where
 * rdma_rxe sends the work request's Q_Key as it is.
 */
static u32 srx_ud_send_qkey(const struct srx_qp *qp, u32 wr_qkey)
{
	if (qp->base_qp.qp_type == IB_QPT_GSI || (wr_qkey & 0x80000000u))
		return qp->qkey;
	return wr_qkey;
}

/*
 * A MAD QP1 sent or delivered, and whether it is the CM's: the management
 * class is the second byte of the MAD header (ib_mad.h, struct
 * ib_mad_hdr).
 */
static void srx_ud_count_mad(struct srx_device *sdev, const u8 *mad, u64 len,
			     bool sent)
{
	srx_count(sdev, sent ? SRX_CNT_MAD_SENT : SRX_CNT_MAD_RCVD, 1);
	if (len > offsetof(struct ib_mad_hdr, mgmt_class) &&
	    mad[offsetof(struct ib_mad_hdr, mgmt_class)] == IB_MGMT_CLASS_CM)
		srx_count(sdev, sent ? SRX_CNT_CM_SENT : SRX_CNT_CM_RCVD, 1);
}

/*
 * Send WQE @e, number @idx, as one packet.
 * Return: the WQE's completion status; IB_WC_SUCCESS when it was handed to
 * the IP stack, when it could not be (no route, no memory: a datagram
 * lost), and when it is longer than the port MTU: IBTA C10-93.1.1 has such
 * a message complete without error and not sent (rxe_req.c does so).
 */
static u8 srx_ud_send(struct srx_qp *qp, struct srx_swqe *e, u32 idx)
{
	struct srx_device *sdev = qp->sdev;
	struct srx_roce_hdr_args a = {};
	struct srx_av av;
	struct sk_buff *skb;
	enum srx_acc acc;
	u64 total;
	u8 *data;

	if (e->result != SRX_WQE_OK)
		return srx_wqe_wc_status(e->result);
	if (!(e->send_flags & SRX_SEND_INLINE)) {
		acc = srx_sge_check(sdev, qp->base_qp.pd, 0, e->sge,
				    e->num_sge, &total);
		if (acc != SRX_ACC_OK)
			return srx_acc_wc_status(acc);
	}
	if (e->length > ib_mtu_enum_to_int(srx_active_mtu(sdev))) {
		srx_count(sdev, SRX_CNT_UD_SEND_TOO_LONG, 1);
		return IB_WC_SUCCESS;
	}

	av = qp->sq.avs[idx & (qp->sq.entries - 1)];
	av.sport = srx_ud_sport(qp);
	a.opcode = e->opcode == IB_WR_SEND_WITH_IMM ?
		   SRX_ROCE_UD_SEND_ONLY_IMM : SRX_ROCE_UD_SEND_ONLY;
	a.psn = qp->req.psn;
	a.se = e->send_flags & SRX_SEND_SOLICITED;
	a.imm = (__force __be32)e->ex;
	a.qkey = srx_ud_send_qkey(qp, e->wr.ud.remote_qkey);
	a.src_qpn = qp->base_qp.qp_num;
	qp->req.psn = srx_psn_add(qp->req.psn, 1);

	skb = srx_pkt_alloc_to(qp, &av, e->wr.ud.remote_qpn & SRX_BTH_QPN_MASK,
			       &a, e->length, &data);
	if (!skb)
		return IB_WC_SUCCESS;
	if (e->send_flags & SRX_SEND_INLINE) {
		memcpy(data, e->sge, e->length);
	} else if (e->length) {
		acc = srx_sge_copy(sdev, qp->base_qp.pd, 0, e->sge, e->num_sge,
				   0, data, e->length, SRX_FROM_MR);
		if (acc != SRX_ACC_OK) {
			kfree_skb(skb);
			return srx_acc_wc_status(acc);
		}
	}
	if (qp->base_qp.qp_type == IB_QPT_GSI)
		srx_ud_count_mad(sdev, data, e->length, true);
	srx_pkt_xmit_to(qp, &av, skb);
	return IB_WC_SUCCESS;
}

/**
 * srx_ud_req_run - send what a UD or GSI QP's send queue holds
 * @qp: the QP, in RTS
 * @budget: packets at most
 *
 * Context: send_lock held (bottom halves off).
 * Return: true if the budget ran out with more to send.
 */
bool srx_ud_req_run(struct srx_qp *qp, u32 budget)
{
	struct srx_swqe *e;
	u8 status;

	lockdep_assert_held(&qp->send_lock);

	while (budget && READ_ONCE(qp->state) == IB_QPS_RTS) {
		e = srx_req_next_wqe(qp);
		if (!e)
			break;
		budget--;
		status = srx_ud_send(qp, e, qp->req.cur);
		if (status != IB_WC_SUCCESS) {
			srx_req_fail(qp, e, status);
			break;
		}
		e->eng.state = SRX_SWQE_DONE;
		qp->req.cur++;
		srx_comp_retire(qp);
	}
	return !budget;
}

/*
 * Whether a packet's P_Key matches the port's one entry, the default
 * 0xFFFF (device.c): the same 15-bit key, and one side a full member
 * ([IBTA] 10.9.3; rxe_recv.c, pkey_match()), which ours is.
 */
static bool srx_ud_pkey_ok(u16 pkey)
{
	return (pkey & 0x7fff) == (SRX_PKEY_DEFAULT & 0x7fff);
}

/* The GRH area of a datagram received in @skb. */
static void srx_ud_grh(const struct sk_buff *skb, u8 *grh)
{
	if (ip_hdr(skb)->version == 4) {
		memset(grh, 0, SRX_UD_GRH_BYTES - sizeof(struct iphdr));
		memcpy(grh + SRX_UD_GRH_BYTES - sizeof(struct iphdr),
		       ip_hdr(skb), sizeof(struct iphdr));
	} else {
		memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
	}
}

/*
 * Place a datagram that passed the checks in the oldest receive WQE.
 * Return: true if it was delivered (completed successfully).
 */
static bool srx_ud_deliver(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
			   const struct sk_buff *skb, u32 src_qpn)
{
	u32 len = SRX_UD_GRH_BYTES + pkt->payload_len;
	struct srx_device *sdev = qp->sdev;
	u8 grh[SRX_UD_GRH_BYTES];
	struct net_device *ndev;
	struct srx_cqe cqe = {};
	struct srx_rwqe *e;
	enum srx_acc acc;

	e = srx_resp_rwqe(qp);
	if (!e) {
		/* No RNR on UD: the datagram is lost ([IBTA] 9.9.3). */
		srx_count(sdev, SRX_CNT_UD_RCVD_NO_WQE, 1);
		return false;
	}
	cqe.wr_id = e->wr_id;
	cqe.opcode = IB_WC_RECV;
	cqe.qp_num = qp->base_qp.qp_num;
	if (e->result != SRX_WQE_OK) {
		cqe.status = srx_wqe_wc_status(e->result);
		goto err_complete;
	}
	/*
	 * Too long for the buffer: dropped, the WQE kept (rxe, class D); a
	 * WQE of an SRQ completes in error, the QP left as it is (rxe's
	 * class E, RESPST_ERR_LENGTH in rxe_resp.c), so that no QP keeps
	 * one of the SRQ's WQEs for itself.
	 */
	if (len > e->length) {
		srx_count(sdev, SRX_CNT_UD_RCVD_TOO_LONG, 1);
		if (qp->base_qp.srq) {
			cqe.status = IB_WC_REM_INV_REQ_ERR;
			srx_recv_complete(qp, &cqe);
		}
		return false;
	}

	srx_ud_grh(skb, grh);
	acc = srx_sge_copy(sdev, srx_resp_rwqe_pd(qp), IB_ACCESS_LOCAL_WRITE,
			   e->sge, e->num_sge, 0, grh, SRX_UD_GRH_BYTES,
			   SRX_TO_MR);
	if (acc == SRX_ACC_OK && pkt->payload_len)
		acc = srx_sge_copy(sdev, srx_resp_rwqe_pd(qp),
				   IB_ACCESS_LOCAL_WRITE,
				   e->sge, e->num_sge, SRX_UD_GRH_BYTES,
				   (void *)(skb->data + pkt->payload_off),
				   pkt->payload_len, SRX_TO_MR);
	if (acc != SRX_ACC_OK) {
		cqe.status = IB_WC_LOC_PROT_ERR;
		goto err_complete;
	}

	cqe.status = IB_WC_SUCCESS;
	cqe.byte_len = len;
	cqe.src_qp = src_qpn;
	cqe.flags = SRX_CQE_GRH;
	if (pkt->op->flags & SRX_ROCE_F_IMM) {
		cqe.flags |= SRX_CQE_WITH_IMM;
		cqe.ex = (__force u32)srx_immdt_imm(srx_roce_pkt_hdr(pkt,
						skb->data, SRX_ROCE_IMMDT));
	}
	if (pkt->se)
		cqe.flags |= SRX_CQE_SOLICITED;
	/*
	 * A kernel consumer learns the VLAN: ib_cm and rdma_cm answer from
	 * the GID that the WC's VLAN names, and without it find none for a
	 * VLAN's address (get_sgid_attr_from_eth() of the core's verbs.c).
	 */
	ndev = qp->is_user ? NULL : srx_rcv_in_netdev(skb);
	if (ndev && is_vlan_dev(ndev)) {
		cqe.flags |= SRX_CQE_WITH_VLAN;
		cqe.slid = vlan_dev_vlan_id(ndev);
	}
	srx_recv_complete(qp, &cqe);
	return true;

err_complete:
	/* A local error of the receive side: the QP ends ([IBTA] 10.8.3). */
	srx_recv_complete(qp, &cqe);
	srx_qp_set_error(qp);
	return false;
}

/**
 * srx_ud_rcv - take a datagram for a UD or GSI QP
 * @qp: the QP, held by the caller
 * @pkt: its parse (a UD opcode, so with a DETH)
 * @skb: the packet, linear, data at the BTH; this function's to free
 *
 * Context: the receive softirq.
 */
void srx_ud_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		struct sk_buff *skb)
{
	const struct srx_deth *deth = srx_roce_pkt_hdr(pkt, skb->data,
						       SRX_ROCE_DETH);
	bool gsi = qp->base_qp.qp_type == IB_QPT_GSI, delivered = false;
	struct srx_device *sdev = qp->sdev;
	enum ib_qp_state state;

	spin_lock_bh(&qp->resp_lock);
	state = READ_ONCE(qp->state);
	if (state < IB_QPS_RTR || state == IB_QPS_ERR || qp->dead)
		srx_count(sdev, SRX_CNT_RCVD_DROPPED, 1);
	else if (!srx_ud_pkey_ok(pkt->pkey))
		srx_count(sdev, SRX_CNT_RCVD_PKEY_ERR, 1);
	else if (srx_deth_qkey(deth) != qp->qkey)
		srx_count(sdev, SRX_CNT_RCVD_QKEY_ERR, 1);
	else
		delivered = srx_ud_deliver(qp, pkt, skb, srx_deth_sqp(deth));
	spin_unlock_bh(&qp->resp_lock);
	if (gsi && delivered)
		srx_ud_count_mad(sdev, skb->data + pkt->payload_off,
				 pkt->payload_len, false);
	else if (gsi)
		srx_count(sdev, SRX_CNT_MAD_DROPPED, 1);
	consume_skb(skb);
}
