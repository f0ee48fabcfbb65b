/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RC transport engine: per-QP state of the send direction (requester
 * and completer, req.c and comp.c) and of the receive direction
 * (responder, resp.c), and the calls between them, recv.c and qp.c.
 *
 * One owner per direction (Documentation/design.md, "The transport
 * engine"): qp->send_lock serializes the requester and the completer of a
 * QP wherever they run (the doorbell system call, send_work, the receive
 * softirq for responses, the timers' decisions); qp->resp_lock serializes
 * its responder (the receive softirq for requests, resp_work). rdma_rxe's
 * srp/002 hang came from a requester and a completer running at once
 * (../shared/ROCE.md); here they cannot.
 *
 * Lock order: state_mutex, send_lock, resp_lock, a work queue's lock or an
 * SRQ's lock (never both), a CQ's lock; state_lock is never held while
 * taking another.
 */
#ifndef SRX_ENGINE_H
#define SRX_ENGINE_H

#include <linux/types.h>

#include "mr_check.h"	/* enum srx_acc */
#include "roce_hdr.h"

struct sk_buff;
struct srx_av;
struct srx_qp;
struct srx_rwqe;
struct srx_srq_wqe;
struct srx_swqe;
struct timer_list;
struct work_struct;

/*
 * Unacknowledged PSNs a requester may have outstanding (rxe's 128,
 * ../shared/ROCE.md), and how often it asks for an ACK inside a long
 * message (rxe's 64). A READ request counts once whatever its length.
 */
#define SRX_WINDOW		128
#define SRX_ACKREQ_EVERY	64

/*
 * Packets one run of the requester sends: inline in the doorbell system
 * call, then per run of send_work (which requeues itself), so neither
 * keeps bottom halves off for long. READ responses sent from the receive
 * softirq per request, then per run of resp_work.
 */
#define SRX_DOORBELL_BUDGET	16
#define SRX_WORK_BUDGET		64
#define SRX_READ_BUDGET		8

/* struct srx_swqe_engine.state: where a send WQE is. */
enum srx_swqe_state {
	SRX_SWQE_NEW = 0,	/* taken; no PSN yet */
	SRX_SWQE_SENT,		/* first_psn..last_psn assigned, sent */
	SRX_SWQE_DONE,		/* acknowledged / answered: completes OK */
	SRX_SWQE_ERROR,		/* completes with eng.flags as its status */
};

/* Requester and completer state of a QP; qp->send_lock. */
struct srx_req {
	u32 psn;		/* PSN of the next packet to send */
	u32 psn_max;		/* one past the highest PSN sent */
	u32 una;		/* oldest PSN not acknowledged */
	u32 cur;		/* SQ index of the WQE psn belongs to */
	u32 rd_atomic;		/* READ/ATOMIC requests in [kdone, cur) */
	u32 since_ackreq;	/* packets sent since the last AckReq */
	u8 retry_left;		/* retry_cnt left for this PSN */
	u8 rnr_left;		/* rnr_retry left (7: infinite) */
	bool go_back;		/* resend from una at the next run */
	bool rnr_wait;		/* an RNR NAK's wait: send nothing */
	bool timed_out;		/* the retransmit timer fired */
	bool probe;		/* since a timeout: one packet out, with AckReq */
	bool blocked;		/* stopped on the window, rd_atomic, a fence */
	bool active;		/* the SQ's engine word says ACTIVE (K6) */
	bool asked_again;	/* re-requested from asked_psn after a gap */
	u32 asked_psn;
	/*
	 * After a timeout's probe: once una passes resume_past, sending goes
	 * on from where the timeout found it (psn resume_psn, WQE
	 * resume_cur), not from the packets after the probe (comp.c,
	 * srx_comp_timeout()).
	 */
	bool resume;
	u32 resume_past;
	u32 resume_psn;
	u32 resume_cur;
	/*
	 * The last resume skipped [una, resume_psn) and una is still before
	 * resume_psn (only a timeout sets resume_psn, and a timeout's
	 * go-back clears this first).
	 */
	bool resumed;
	bool started;		/* RTR -> RTS since RESET: psn is live */
	bool nak_held;		/* an error NAK ahead of una, see comp.c */
	u8 nak_code;
	u32 nak_psn;
	/* From the attributes (qp.c, srx_qp_engine_attr()); kept by RESET. */
	u32 mtu;		/* path MTU, bytes */
	u32 timeout_jiffies;	/* local ACK timeout; 0: none */
	u8 retry_cnt;
	u8 rnr_retry;		/* 7: infinite */
	u8 max_rd_atomic;	/* initiator depth, at least 1 */
};

/*
 * A responder resource: one READ or ATOMIC request ([IBTA] 9.7.4.1.6); an
 * ATOMIC WRITE's is a READ of length 0, answered by an empty response.
 */
enum srx_res_type {
	SRX_RES_FREE = 0,
	SRX_RES_READ,
	SRX_RES_ATOMIC,
};

struct srx_res {
	u8 type;
	u32 first_psn;
	u32 last_psn;
	u32 next_psn;		/* READ: next response to send */
	u64 va;
	u32 rkey;
	u32 length;
	u64 orig;		/* ATOMIC: the value returned */
};

/* Responder state of a QP; qp->resp_lock. */
struct srx_resp {
	u32 epsn;		/* expected PSN */
	bool started;		/* RTR reached since RESET: epsn is live */
	u32 msn;		/* messages completed */
	bool nak_sent;		/* a sequence NAK went out for epsn */
	u32 cur_op;		/* SRX_ROCE_F_SEND/_WRITE in progress, or 0 */
	bool have_rwqe;		/* rq.kdone's WQE holds the current SEND */
	bool drop_msg;		/* UC: the rest of this message is dropped */
	/*
	 * A QP on an SRQ: srq_wqe is its entry for the one SRQ WQE it may
	 * hold (srq.c), allocated with the QP; srq_held says it holds one,
	 * taken and not completed. last_wqe_done: LAST_WQE_REACHED was
	 * raised since the QP last entered the error state (qp.c).
	 */
	struct srx_srq_wqe *srq_wqe;
	bool srq_held;
	bool last_wqe_done;
	u64 offset;		/* bytes of the current SEND placed */
	u64 va;			/* current WRITE: next byte */
	u32 rkey;
	u32 resid;		/* current WRITE: bytes still to come */
	u32 wlen;		/* current WRITE: length */
	u32 mtu;
	int access;		/* the QP's IB_ACCESS_REMOTE_* rights */
	u8 min_rnr_timer;
	struct srx_res *res;	/* [res_n] */
	u32 res_n;		/* max_dest_rd_atomic up to a power of two */
	u32 res_head;		/* next entry to fill */
	u32 rd_next;		/* oldest entry that may have responses due */
	/*
	 * Requests that came while READ responses were still due, in
	 * arrival order; resp_work executes them once those are out
	 * (resp.c). At most SRX_RESP_HELD_MAX; skb->cb holds the parse.
	 */
	struct sk_buff_head held;
};

#define SRX_RESP_HELD_MAX	256

/* recv.c */
bool srx_pkt_from_peer(const struct srx_qp *qp, const struct sk_buff *skb);

/* req.c */
bool srx_req_run(struct srx_qp *qp, u32 budget);
bool srx_req_pending(struct srx_qp *qp);
bool srx_req_try_idle(struct srx_qp *qp);
struct sk_buff *srx_pkt_alloc(struct srx_qp *qp,
			      struct srx_roce_hdr_args *a, u32 payload,
			      u8 **data);
struct sk_buff *srx_pkt_alloc_to(struct srx_qp *qp, const struct srx_av *av,
				 u32 dqpn, struct srx_roce_hdr_args *a,
				 u32 payload, u8 **data);
int srx_pkt_xmit(struct srx_qp *qp, struct sk_buff *skb);
int srx_pkt_xmit_to(struct srx_qp *qp, const struct srx_av *av,
		    struct sk_buff *skb);
struct srx_swqe *srx_req_next_wqe(struct srx_qp *qp);
void srx_req_fail(struct srx_qp *qp, struct srx_swqe *e, u8 status);
u8 srx_acc_wc_status(enum srx_acc acc);

/* ud.c */
bool srx_ud_req_run(struct srx_qp *qp, u32 budget);
void srx_ud_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		struct sk_buff *skb);

/* comp.c */
void srx_comp_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		  struct sk_buff *skb);
void srx_comp_retire(struct srx_qp *qp);
void srx_comp_error(struct srx_qp *qp, u8 status);
void srx_comp_go_back(struct srx_qp *qp);
void srx_comp_resume(struct srx_qp *qp);
void srx_comp_timeout(struct srx_qp *qp);
void srx_comp_arm_retrans(struct srx_qp *qp, bool restart);
void srx_retrans_timer(struct timer_list *t);
void srx_rnr_timer(struct timer_list *t);

/* resp.c */
void srx_resp_rcv(struct srx_qp *qp, const struct srx_roce_pkt *pkt,
		  struct sk_buff *skb);
void srx_resp_work(struct work_struct *w);
void srx_resp_drop_held(struct srx_qp *qp);
struct srx_rwqe *srx_resp_rwqe(struct srx_qp *qp);
struct ib_pd *srx_resp_rwqe_pd(struct srx_qp *qp);

#endif /* SRX_ENGINE_H */
