// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD multicast ([IBTA] 10.5; RoCE v2 carries a multicast GID as an IP
 * multicast address, Annex A17.4.5.2). ibv_attach_mcast() adds a UD QP to
 * a group of its device, and the first QP of a group makes the device's
 * netdev join the IP group: without that the IP stack drops the group's
 * packets before UDP sees them, and with it the host's own sends to the
 * group loop back to it as any IP multicast does. A packet for QP
 * 0xFFFFFF goes to every QP attached to the group its IP destination
 * names, each checking its Q_Key as for a unicast datagram (ud.c).
 *
 * rdma_cm joins the IPv4 group itself for RoCE v2 (cma_igmp_send() of
 * 6.1); the IP layer counts joins, so its join and ours stack.
 */
#include <linux/igmp.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jhash.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <net/addrconf.h>

#include "device.h"
#include "engine.h"
#include "mcast.h"
#include "qp.h"

/* A group; immutable once in the hash (a change publishes a copy). */
struct srx_mcg {
	struct hlist_node node;
	struct rcu_head rcu;
	union ib_gid mgid;
	u32 nqp;
	u32 qpn[SRX_MAX_MCAST_QP_ATTACH];
};

void srx_mcast_init(struct srx_mcast *mc)
{
	mutex_init(&mc->mutex);
	hash_init(mc->groups);
}

/*
 * Context: srx_dealloc_driver(). The core detached every QP before it
 * destroyed them (a QP with groups cannot be destroyed: usecnt).
 */
void srx_mcast_destroy(struct srx_mcast *mc)
{
	WARN_ON(!hash_empty(mc->groups));
	mutex_destroy(&mc->mutex);
}

static u32 srx_mcg_hash(const union ib_gid *mgid)
{
	return jhash(mgid->raw, sizeof(mgid->raw), 0);
}

/* Context: rcu_read_lock (the receive) or mc->mutex (attach, detach). */
static struct srx_mcg *srx_mcg_find(struct srx_mcast *mc,
				    const union ib_gid *mgid)
{
	struct srx_mcg *g;

	hash_for_each_possible_rcu(mc->groups, g, node, srx_mcg_hash(mgid),
				   lockdep_is_held(&mc->mutex))
		if (!memcmp(g->mgid.raw, mgid->raw, sizeof(mgid->raw)))
			return g;
	return NULL;
}

/*
 * Join or leave the IP group of @mgid on the device's netdev. A netdev
 * being unregistered may have lost its inet or inet6 device already; the
 * group went with it, and there is nothing to leave.
 * Context: RTNL held (ip_mc_inc_group() asserts it).
 */
static int srx_mcast_ip(struct srx_device *sdev, const union ib_gid *mgid,
			bool join)
{
	const struct in6_addr *a = (const struct in6_addr *)mgid->raw;
	struct in_device *in_dev;

	ASSERT_RTNL();

	if (ipv6_addr_v4mapped(a)) {
		in_dev = __in_dev_get_rtnl(sdev->netdev);
		if (!in_dev)
			return join ? -ENODEV : 0;
		if (join)
			ip_mc_inc_group(in_dev, a->s6_addr32[3]);
		else
			ip_mc_dec_group(in_dev, a->s6_addr32[3]);
		return 0;
	}
#if IS_ENABLED(CONFIG_IPV6)
	if (join)
		return ipv6_dev_mc_inc(sdev->netdev, a);
	ipv6_dev_mc_dec(sdev->netdev, a);
	return 0;
#else
	return join ? -EAFNOSUPPORT : 0;
#endif
}

/* A multicast GID that RoCE v2 can carry: an IPv4 or IPv6 group. */
static bool srx_mgid_ok(const union ib_gid *mgid)
{
	const struct in6_addr *a = (const struct in6_addr *)mgid->raw;

	if (ipv6_addr_v4mapped(a))
		return ipv4_is_multicast(a->s6_addr32[3]);
	return ipv6_addr_is_multicast(a);
}

/*
 * ibv_attach_mcast(3): EINVAL for a QP that is not UD or a GID that is not
 * a multicast one; ENOMEM when the device's groups or the group's QPs are
 * at their limit. Attaching again is a success that changes nothing (the
 * core keeps no count of its own for kernel callers).
 * Context: process; takes RTNL, then the device's mcast mutex.
 */
int srx_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct srx_device *sdev = to_srx_dev(ibqp->device);
	struct srx_mcast *mc = &sdev->mcast;
	struct srx_mcg *old, *g;
	u32 k;
	int ret = 0;

	if (ibqp->qp_type != IB_QPT_UD || !srx_mgid_ok(gid))
		return -EINVAL;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		return -ENOMEM;

	rtnl_lock();
	mutex_lock(&mc->mutex);
	old = srx_mcg_find(mc, gid);
	if (old) {
		for (k = 0; k < old->nqp; k++)
			if (old->qpn[k] == ibqp->qp_num)
				goto out_free;
		if (old->nqp == SRX_MAX_MCAST_QP_ATTACH) {
			ret = -ENOMEM;
			goto out_free;
		}
		*g = *old;
	} else {
		if (mc->ngroups == SRX_MAX_MCAST_GRP) {
			ret = -ENOMEM;
			goto out_free;
		}
		ret = srx_mcast_ip(sdev, gid, true);
		if (ret)
			goto out_free;
		g->mgid = *gid;
	}
	g->qpn[g->nqp++] = ibqp->qp_num;
	if (old) {
		hlist_replace_rcu(&old->node, &g->node);
		kfree_rcu(old, rcu);
	} else {
		hash_add_rcu(mc->groups, &g->node, srx_mcg_hash(gid));
		mc->ngroups++;
	}
	g = NULL;
out_free:
	mutex_unlock(&mc->mutex);
	rtnl_unlock();
	kfree(g);
	return ret;
}

/*
 * ibv_detach_mcast(3): EINVAL if the QP is not attached to the group. The
 * last QP to leave a group makes the netdev leave the IP group.
 * Context: process (the uverbs cleanup of a closing process or of a device
 * being unregistered included: never under RTNL); takes RTNL, then the
 * device's mcast mutex.
 */
int srx_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	struct srx_device *sdev = to_srx_dev(ibqp->device);
	struct srx_mcast *mc = &sdev->mcast;
	struct srx_mcg *old, *g = NULL;
	u32 k, j;
	int ret = 0;

	if (ibqp->qp_type != IB_QPT_UD)
		return -EINVAL;
	rtnl_lock();
	mutex_lock(&mc->mutex);
	old = srx_mcg_find(mc, gid);
	for (k = 0; old && k < old->nqp; k++)
		if (old->qpn[k] == ibqp->qp_num)
			break;
	if (!old || k == old->nqp) {
		ret = -EINVAL;
		goto out;
	}
	if (old->nqp == 1) {
		hash_del_rcu(&old->node);
		mc->ngroups--;
		srx_mcast_ip(sdev, gid, false);
		kfree_rcu(old, rcu);
		goto out;
	}
	g = kmalloc(sizeof(*g), GFP_KERNEL);
	if (!g) {
		ret = -ENOMEM;
		goto out;
	}
	*g = *old;
	g->nqp = 0;
	for (j = 0; j < old->nqp; j++)
		if (j != k)
			g->qpn[g->nqp++] = old->qpn[j];
	hlist_replace_rcu(&old->node, &g->node);
	kfree_rcu(old, rcu);
out:
	mutex_unlock(&mc->mutex);
	rtnl_unlock();
	return ret;
}

/* The group a received packet's IP destination names, as a GID. */
static bool srx_mcast_dst(const struct sk_buff *skb, union ib_gid *mgid)
{
	struct in6_addr *a = (struct in6_addr *)mgid->raw;

	if (ip_hdr(skb)->version == 4) {
		if (!ipv4_is_multicast(ip_hdr(skb)->daddr))
			return false;
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr, a);
		return true;
	}
	*a = ipv6_hdr(skb)->daddr;
	return ipv6_addr_is_multicast(a);
}

/**
 * srx_mcast_rcv - a packet for the multicast QPN
 * @sdev: the device, held by the caller for the call
 * @pkt: the parsed packet
 * @skb: the packet, linear, BTH at data; consumed
 *
 * Only a UD SEND to an IP multicast address is taken. Each attached QP
 * gets a clone (the last one the skb itself), so the GRH area each builds
 * reads the same, shared, unchanged headers. A QP gone since it was
 * attached, or a clone that cannot be made, costs that QP the packet only.
 *
 * Context: the receive softirq, rcu_read_lock() held (srx_rcv()), which
 * keeps the group found alive for the whole walk.
 */
void srx_mcast_rcv(struct srx_device *sdev, const struct srx_roce_pkt *pkt,
		   struct sk_buff *skb)
{
	struct srx_mcg *g = NULL;
	union ib_gid mgid;
	struct sk_buff *c;
	struct srx_qp *qp;
	u32 k;

	if (pkt->op->qpt == SRX_ROCE_QPT_UD && srx_mcast_dst(skb, &mgid))
		g = srx_mcg_find(&sdev->mcast, &mgid);
	if (!g) {
		srx_count(sdev, SRX_CNT_MCAST_DROPPED, 1);
		kfree_skb(skb);
		return;
	}
	for (k = 0; k < g->nqp; k++) {
		qp = srx_qp_get(sdev, g->qpn[k]);
		if (!qp || qp->base_qp.qp_type != IB_QPT_UD) {
			if (qp)
				srx_qp_put(qp);
			srx_count(sdev, SRX_CNT_MCAST_DROPPED, 1);
			continue;
		}
		c = k + 1 < g->nqp ? skb_clone(skb, GFP_ATOMIC) : skb;
		if (!c) {
			srx_qp_put(qp);
			srx_count(sdev, SRX_CNT_MCAST_DROPPED, 1);
			continue;
		}
		if (c == skb)
			skb = NULL;
		srx_count(sdev, SRX_CNT_MCAST_RCVD, 1);
		srx_ud_rcv(qp, pkt, c);
		srx_qp_put(qp);
	}
	kfree_skb(skb);
}
