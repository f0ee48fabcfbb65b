/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#ifndef SRX_DEVICE_H
#define SRX_DEVICE_H

#include <linux/netdevice.h>
#include <linux/percpu.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include <rdma/srx-abi.h>

#include "mcast.h"

/*
 * Limits of one srx device. They are what the object layer enforces, and
 * query_device reports exactly these.
 */
#define SRX_MAX_CQE		(1u << 22)	/* entries of the largest CQ ring */
#define SRX_MAX_QP_WR		(1u << 15)
#define SRX_MAX_SGE		32
#define SRX_MAX_INLINE		512
#define SRX_MAX_QP		(SRX_MAX_QPN - SRX_MIN_QPN + 1)	/* 16777199 */
#define SRX_MIN_QPN		16		/* below: reserved (QP1 is GSI) */
/* 0xFFFFFF is the multicast QPN ([IBTA] 9.2.4): no QP's, sent or received. */
#define SRX_MAX_QPN		((1u << 24) - 2)
#define SRX_MAX_MR		((1u << 24) - 1)	/* key index is 24 bits */
#define SRX_MAX_FAST_REG_PAGES	512	/* page list of a fast-registration MR: rxe's */
#define SRX_MAX_PD		(1u << 20)
#define SRX_MAX_SRQ		(1u << 20)
#define SRX_MAX_SRQ_WR		SRX_MAX_QP_WR
#define SRX_MAX_QP_RD_ATOM	16
#define SRX_GID_TABLE_LEN	256
/*
 * 1 GiB, as mlx5 reports (log_max_msg 30): at the smallest path MTU (256)
 * a message then spans 2^22 PSNs, half of what PSN order can tell apart
 * (2^23, IBTA 9.7.1). 2 GiB would span exactly 2^23, and a READ's last
 * PSN could no longer be ordered against its first.
 */
#define SRX_MAX_MSG_SIZE	0x40000000u
#define SRX_PORT		1

/*
 * vendor_id is an IEEE OUI and srx has none: FF-FF-FF can never be assigned,
 * so no tool mistakes srx for some vendor's hardware (rxe does the same);
 * libibverbs matches srx by driver id, not by vendor.
 */
#define SRX_VENDOR_ID		0xffffff

/* Counters of one device, read by `rdma statistic` (stats.c). */
enum srx_counter {
	SRX_CNT_CQES_POSTED,
	SRX_CNT_CQE_OVERRUNS,
	SRX_CNT_CQ_ERRORS,
	SRX_CNT_CQ_EVENTS,
	SRX_CNT_WQES_FLUSHED,
	SRX_CNT_DOORBELLS,
	SRX_CNT_BAD_USER_INDEX,
	SRX_CNT_INVALID_WQES,
	/* RoCE v2 packets (net.c, recv.c): the BTH through the ICRC in bytes */
	SRX_CNT_SENT_PKTS,
	SRX_CNT_SENT_BYTES,
	SRX_CNT_SEND_ERR,
	SRX_CNT_RCVD_PKTS,
	SRX_CNT_RCVD_BYTES,
	SRX_CNT_RCVD_ICRC_ERR,
	SRX_CNT_RCVD_MALFORMED,
	SRX_CNT_RCVD_DROPPED,
	/* the RC transport engine (req.c, comp.c, resp.c) */
	SRX_CNT_DUP_REQ,		/* duplicate requests answered */
	SRX_CNT_OUT_OF_SEQ,		/* requests ahead of the expected PSN */
	SRX_CNT_SEND_SEQ_NAK,		/* sequence error NAKs sent */
	SRX_CNT_RCVD_SEQ_NAK,		/* sequence error NAKs received */
	SRX_CNT_SEND_RNR_NAK,		/* RNR NAKs sent */
	SRX_CNT_RCVD_RNR_NAK,		/* RNR NAKs received */
	SRX_CNT_SEND_NAK,		/* other NAKs sent */
	SRX_CNT_RCVD_NAK,		/* other NAKs received */
	SRX_CNT_RETRANSMITS,		/* go-back-N restarts (retry_cnt used) */
	SRX_CNT_RETRY_EXC,		/* retry_cnt exceeded */
	SRX_CNT_RNR_RETRY_EXC,		/* rnr_retry exceeded */
	/* datagrams (ud.c): each dropped, never delivered */
	SRX_CNT_RCVD_QKEY_ERR,		/* Q_Key not the QP's */
	SRX_CNT_RCVD_PKEY_ERR,		/* P_Key not the port's */
	SRX_CNT_UD_RCVD_NO_WQE,		/* no receive WQE posted */
	SRX_CNT_UD_RCVD_TOO_LONG,	/* GRH area + payload > the buffer */
	SRX_CNT_UD_SEND_TOO_LONG,	/* > port MTU: completed, not sent */
	/* QP1 (ud.c): MADs, and those of the CM (management class 0x07) */
	SRX_CNT_MAD_SENT,
	SRX_CNT_MAD_RCVD,
	SRX_CNT_MAD_DROPPED,		/* for QP1, not delivered */
	SRX_CNT_CM_SENT,
	SRX_CNT_CM_RCVD,
	/* UC (resp.c): never answered, so a drop is seen only here */
	SRX_CNT_UC_RCVD_DROPPED,	/* packets of a message not placed */
	SRX_CNT_UC_MSG_ABANDONED,	/* cut short by the next FIRST/ONLY */
	/* UD multicast (mcast.c) */
	SRX_CNT_MCAST_RCVD,		/* deliveries to attached QPs */
	SRX_CNT_MCAST_DROPPED,		/* no group, not UD, a QP missed it */
	/* shared receive queues (srq.c, qp.c) */
	SRX_CNT_SRQ_LIMIT_EVENTS,	/* SRQ_LIMIT_REACHED raised */
	SRX_CNT_LAST_WQE_EVENTS,	/* QP_LAST_WQE_REACHED raised */
	SRX_CNT_COUNT
};

struct srx_counters {
	u64 cnt[SRX_CNT_COUNT];
};

/*
 * What a device accepts, derived once from what it reports (device.c,
 * srx_init_accepts()). A work request opcode or an access right is accepted
 * exactly when the attribute that announces its feature is set, so the two
 * cannot disagree, and turning a feature on is setting its attribute in
 * srx_init_attrs() once the code behind it exists.
 */
struct srx_accepts {
	u64 send_ops[IB_QPT_UD + 1];	/* BIT_ULL(IB_WR_*) per enum ib_qp_type */
	int mr_access;			/* IB_ACCESS_* a registration may ask */
	int qp_access;			/* IB_ACCESS_* a QP grants */
};

struct srx_device {
	struct ib_device base_dev;
	struct list_head list;		/* in srx_devices, device.c */

	/*
	 * The netdev this device sits on, held from creation to
	 * srx_dealloc_driver(). Its NETDEV_UNREGISTER queues our
	 * unregistration, and the netdev's own unregistration waits for that
	 * reference, so the pointer is valid for every op.
	 */
	struct net_device *netdev;

	/*
	 * The UDP sockets of the netdev's namespace (net.c), taken before
	 * registration and given back in srx_dealloc_driver(); the device's
	 * namespace is fixed, as moving the netdev unregisters the device.
	 */
	struct srx_tunnel *tun;

	struct ib_device_attr attrs;	/* fixed at creation, but max_cq */
	struct srx_accepts accepts;	/* from attrs, fixed at creation */

	spinlock_t port_lock;		/* protects port_state */
	enum ib_port_state port_state;

	/* Objects alive on this device, checked against attrs limits. */
	atomic_t num_cq;
	atomic_t num_qp;
	atomic_t num_pd;
	atomic_t num_mr;
	atomic_t num_ah;
	atomic_t num_srq;

	struct xarray qp_xa;		/* qpn -> struct srx_qp, own lock */
	u32 qp_next;			/* cyclic allocation hint, under qp_xa lock */
	struct xarray mr_xa;		/* key index -> struct srx_mr, own lock */
	u32 mr_next;			/* cyclic allocation hint, under mr_xa lock */
	/*
	 * Memory windows' bindings (mw.c): every window's target and
	 * valid, and every MR's mw_binds and unbindable, change under it.
	 * Taken with bottom halves off (binds run in the engine); outside
	 * a window's lock, and never around mr_xa's.
	 */
	spinlock_t mw_lock;
	/*
	 * User AHs: ah_num -> struct srx_ah (ah.c). Lookups copy under the
	 * lock, so an AH is never read after its destroy returned.
	 */
	struct xarray ah_xa;
	u32 ah_next;			/* cyclic allocation hint, under ah_xa lock */

	struct srx_mcast mcast;		/* UD multicast groups (mcast.c) */

	struct srx_counters __percpu *counters;
};

static inline struct srx_device *to_srx_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct srx_device, base_dev);
}

static inline void srx_count(struct srx_device *sdev, enum srx_counter c,
			     u64 n)
{
	this_cpu_add(sdev->counters->cnt[c], n);
}

/*
 * Command payloads, by the rules of srx-abi.h (SRX_UVERBS_ABI_VERSION):
 * copy at most @len bytes of input into @cmd, zero-extending a shorter
 * one; any non-zero byte beyond @len is input this kernel does not know.
 * @len 0 is a command without a payload. @udata may be NULL (a kernel
 * caller). Return: 0, -EOPNOTSUPP, or -EFAULT.
 */
static inline int srx_udata_cmd(struct ib_udata *udata, void *cmd, size_t len)
{
	size_t n;
	int ret;

	if (len)
		memset(cmd, 0, len);
	if (!udata || !udata->inlen)
		return 0;
	n = min(udata->inlen, len);
	if (n) {
		ret = ib_copy_from_udata(cmd, udata, n);
		if (ret)
			return ret;
	}
	if (udata->inlen > len &&
	    !ib_is_udata_cleared(udata, len, udata->inlen - len))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * Write a response of @len bytes to a buffer of udata->outlen: the part an
 * older provider knows, if it is at least the @min_len bytes of the
 * response's first version (ABI 2); else -EINVAL. Return: 0, -EINVAL or
 * -EFAULT.
 */
static inline int srx_udata_resp(struct ib_udata *udata, void *resp,
				 size_t len, size_t min_len)
{
	if (udata->outlen < min_len)
		return -EINVAL;
	return ib_copy_to_udata(udata, resp, min(udata->outlen, len));
}

/* device.c */
int srx_device_add(const char *name, struct net_device *netdev);
void srx_device_netdev_event(struct srx_device *sdev, unsigned long event);
u32 srx_device_max_cq(void);
u32 srx_device_max_qp(void);
u32 srx_device_max_pd(void);
u32 srx_device_max_mr(void);
u32 srx_device_max_srq(void);
bool srx_send_opcode_ok(const struct srx_device *sdev, enum ib_qp_type type,
			u32 opcode);
enum ib_mtu srx_active_mtu(const struct srx_device *sdev);

/* stats.c */
struct rdma_hw_stats *srx_alloc_hw_port_stats(struct ib_device *ibdev,
					      u32 port_num);
int srx_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
		     u32 port_num, int index);

#define srx_dbg(sdev, fmt, ...) \
	ibdev_dbg(&(sdev)->base_dev, "%s: " fmt, __func__, ##__VA_ARGS__)

#endif /* SRX_DEVICE_H */

