/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * UD multicast: the groups a device's UD QPs are attached to, and the
 * receive fan-out. Documentation/design.md ("UD multicast") has the
 * locking and the lifetimes.
 */
#ifndef SRX_MCAST_H
#define SRX_MCAST_H

#include <linux/hashtable.h>
#include <linux/mutex.h>
#include <rdma/ib_verbs.h>

struct sk_buff;
struct srx_device;
struct srx_roce_pkt;

/* Groups and QPs a group holds; rxe's per-group limit (rxe_param.h). */
#define SRX_MAX_MCAST_GRP	1024
#define SRX_MAX_MCAST_QP_ATTACH	56
#define SRX_MCAST_HASH_BITS	6

/* The DestQP of a multicast packet ([IBTA] 9.2.4). */
#define SRX_BTH_QPN_MULTICAST	0xffffffu

/*
 * A device's groups: writers under mutex (which nests inside RTNL: the IP
 * join needs it), readers (the receive softirq) under RCU. A published
 * group is never changed: an attach or a detach publishes a copy and
 * frees the old one after a grace period.
 */
struct srx_mcast {
	struct mutex mutex;
	DECLARE_HASHTABLE(groups, SRX_MCAST_HASH_BITS);	/* RCU; mutex */
	u32 ngroups;		/* mutex */
};

void srx_mcast_init(struct srx_mcast *mc);
void srx_mcast_destroy(struct srx_mcast *mc);
int srx_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int srx_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void srx_mcast_rcv(struct srx_device *sdev, const struct srx_roce_pkt *pkt,
		   struct sk_buff *skb);

#endif /* SRX_MCAST_H */
