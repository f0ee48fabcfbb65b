// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-device counters, shown by `rdma statistic show link srxN/1` and in
 * /sys/class/infiniband/srxN/ports/1/hw_counters. They are per-CPU so the
 * completion path never bounces a shared cache line; a read sums them.
 */
#include <rdma/ib_verbs.h>

#include "device.h"

static const struct rdma_stat_desc srx_counter_descs[SRX_CNT_COUNT] = {
	[SRX_CNT_CQES_POSTED].name = "cqes_posted",
	[SRX_CNT_CQE_OVERRUNS].name = "cqe_overruns",
	[SRX_CNT_CQ_ERRORS].name = "cq_errors",
	[SRX_CNT_CQ_EVENTS].name = "cq_arm_events",
	[SRX_CNT_WQES_FLUSHED].name = "wqes_flushed",
	[SRX_CNT_DOORBELLS].name = "doorbells",
	[SRX_CNT_BAD_USER_INDEX].name = "bad_user_index",
	[SRX_CNT_INVALID_WQES].name = "invalid_wqes",
	/*
	 * Named as rdma_rxe names the same counts (rxe_hw_counters.c:
	 * sent_pkts, rcvd_pkts, send_err), so one script reads both; the
	 * others rxe does not count (it drops bad packets silently).
	 */
	[SRX_CNT_SENT_PKTS].name = "sent_pkts",
	[SRX_CNT_SENT_BYTES].name = "sent_bytes",
	[SRX_CNT_SEND_ERR].name = "send_err",
	[SRX_CNT_RCVD_PKTS].name = "rcvd_pkts",
	[SRX_CNT_RCVD_BYTES].name = "rcvd_bytes",
	[SRX_CNT_RCVD_ICRC_ERR].name = "rcvd_icrc_err",
	[SRX_CNT_RCVD_MALFORMED].name = "rcvd_malformed",
	[SRX_CNT_RCVD_DROPPED].name = "rcvd_dropped",
	/*
	 * The transport: rxe's names where the count is the same
	 * (duplicate_request, out_of_seq_request, rcvd_seq_err,
	 * send_rnr_err, rcvd_rnr_err, completer_retry_err,
	 * retry_exceeded_err, retry_rnr_exceeded_err).
	 */
	[SRX_CNT_DUP_REQ].name = "duplicate_request",
	[SRX_CNT_OUT_OF_SEQ].name = "out_of_seq_request",
	[SRX_CNT_SEND_SEQ_NAK].name = "send_seq_err",
	[SRX_CNT_RCVD_SEQ_NAK].name = "rcvd_seq_err",
	[SRX_CNT_SEND_RNR_NAK].name = "send_rnr_err",
	[SRX_CNT_RCVD_RNR_NAK].name = "rcvd_rnr_err",
	[SRX_CNT_SEND_NAK].name = "send_nak",
	[SRX_CNT_RCVD_NAK].name = "rcvd_nak",
	[SRX_CNT_RETRANSMITS].name = "completer_retry_err",
	[SRX_CNT_RETRY_EXC].name = "retry_exceeded_err",
	[SRX_CNT_RNR_RETRY_EXC].name = "retry_rnr_exceeded_err",
	[SRX_CNT_RCVD_QKEY_ERR].name = "rcvd_qkey_err",
	[SRX_CNT_RCVD_PKEY_ERR].name = "rcvd_pkey_err",
	[SRX_CNT_UD_RCVD_NO_WQE].name = "ud_rcvd_no_wqe",
	[SRX_CNT_UD_RCVD_TOO_LONG].name = "ud_rcvd_too_long",
	[SRX_CNT_UD_SEND_TOO_LONG].name = "ud_send_too_long",
	[SRX_CNT_MAD_SENT].name = "mad_sent",
	[SRX_CNT_MAD_RCVD].name = "mad_rcvd",
	[SRX_CNT_MAD_DROPPED].name = "mad_dropped",
	[SRX_CNT_CM_SENT].name = "cm_sent",
	[SRX_CNT_CM_RCVD].name = "cm_rcvd",
	[SRX_CNT_UC_RCVD_DROPPED].name = "uc_rcvd_dropped",
	[SRX_CNT_UC_MSG_ABANDONED].name = "uc_msg_abandoned",
	[SRX_CNT_MCAST_RCVD].name = "mcast_rcvd",
	[SRX_CNT_MCAST_DROPPED].name = "mcast_dropped",
	[SRX_CNT_SRQ_LIMIT_EVENTS].name = "srq_limit_events",
	[SRX_CNT_LAST_WQE_EVENTS].name = "last_wqe_events",
};

struct rdma_hw_stats *srx_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port_num)
{
	return rdma_alloc_hw_stats_struct(srx_counter_descs, SRX_CNT_COUNT,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

int srx_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port_num, int index)
{
	struct srx_device *sdev = to_srx_dev(ibdev);
	int cpu, c;

	for (c = 0; c < SRX_CNT_COUNT; c++)
		stats->value[c] = 0;
	for_each_possible_cpu(cpu) {
		const struct srx_counters *pc = per_cpu_ptr(sdev->counters, cpu);

		for (c = 0; c < SRX_CNT_COUNT; c++)
			stats->value[c] += pc->cnt[c];
	}
	return SRX_CNT_COUNT;
}
