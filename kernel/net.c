// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RoCE v2 on UDP port 4791: the tunnel sockets, the receive path up to
 * srx_rcv(), and the transmit path the transport engine calls.
 *
 * Sockets. Each network namespace in which at least one srx device's
 * netdev lives has one struct srx_tunnel: a kernel UDP socket bound to
 * 4791 for IPv4 and one, v6-only, for IPv6. srx_device_add() takes the
 * tunnel of its netdev's namespace (srx_tunnel_get(), opening it for the
 * first device), srx_dealloc_driver() gives it back (srx_tunnel_put(),
 * closing it with the last). rdma_rxe 6.1 instead opens one pair in
 * init_net at module load (rxe_net.c, rxe_net_init()), so it cannot serve
 * a netdev in another namespace; newer rxe opened sockets per namespace
 * lazily and had a time-of-check/time-of-use race deleting them
 * (shared/ROCE.md). Here a tunnel's whole life, from "no tunnel" through
 * its users to closed, is decided under srx_tunnel_lock, and a socket is
 * bound and released only under it: "4791 is bound in this namespace"
 * and "an srx device lives here" change together.
 *
 * Namespace teardown does not wait for srx devices: a device holds no
 * reference on its namespace (it would keep the namespace, and so the
 * netdev whose unregistration removes the device, alive for ever). When
 * the namespace goes, cleanup_net() first unregisters or moves its netdevs
 * (default_device_exit_batch(), a pernet *device* op, so it runs before
 * this pernet *subsys* op's exit); a netdev's NETDEV_UNREGISTER only
 * queues the srx device's unregistration (main.c), so the device may
 * still be registered when srx_net_exit_net() runs. That exit closes the
 * sockets and detaches the tunnel from the namespace (tun->net = NULL);
 * the devices still holding it free it at their srx_tunnel_put(), which
 * then touches neither the namespace nor its net_generic storage. A
 * detached tunnel receives nothing (its sockets are gone) and the transmit
 * path refuses a device whose netdev no longer lives in its tunnel's
 * namespace.
 *
 * Receive runs in the UDP socket's encap_rcv, in softirq under
 * rcu_read_lock(): find the device, check the packet's shape, verify the
 * ICRC, then hand the skb to srx_rcv() with a device reference held for
 * the call. Transmit: srx_net_alloc_skb() routes and allocates,
 * srx_net_xmit() builds UDP and IP, generates the ICRC and sends;
 * net.h and Documentation/design.md ("The network layer") have the
 * contract.
 */
#include <linux/if_vlan.h>
#include <linux/inetdevice.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/udp.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <net/route.h>
#include <net/udp_tunnel.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

#include "device.h"
#include "net.h"
#include "roce_frame.h"

/*
 * One namespace's sockets. Allocated by the namespace's first srx device,
 * freed by its last; the namespace may go first (top of file).
 */
struct srx_tunnel {
	/*
	 * The namespace, or NULL once srx_net_exit_net() has detached the
	 * tunnel. Not a counted reference: compared, never dereferenced,
	 * outside srx_tunnel_lock (READ_ONCE on the data path).
	 */
	struct net *net;
	struct socket *sock4;
	struct socket *sock6;	/* NULL where the kernel has no IPv6 */
	unsigned int users;	/* srx devices holding it (sdev->tun) */
};

/* net_generic() storage of every namespace. */
struct srx_net {
	struct srx_tunnel *tun;	/* NULL while no srx device lives here */
};

static unsigned int srx_net_id __read_mostly;

/*
 * Protects every srx_net's tun pointer and every srx_tunnel's net, sock4,
 * sock6 and users, and serializes binding and releasing the sockets with
 * them. Innermost: taken under srx_newlink_lock (device creation), by the
 * core's unregistration (srx_dealloc_driver()) and by cleanup_net() under
 * pernet_ops_rwsem; nothing is taken under it but what creating and
 * releasing a kernel socket takes, and none of those paths waits for an
 * srx device.
 */
static DEFINE_MUTEX(srx_tunnel_lock);

static int srx_udp_encap_rcv(struct sock *sk, struct sk_buff *skb);

static struct socket *srx_tunnel_sock(struct net *net, bool ipv6)
{
	/* Zeroed: no UDP checksums required, as rxe_setup_udp_tunnel(). */
	struct udp_port_cfg ucfg = {
		.family = ipv6 ? AF_INET6 : AF_INET,
		.local_udp_port = htons(SRX_ROCE_UDP_PORT),
		.ipv6_v6only = ipv6,
	};
	struct udp_tunnel_sock_cfg tcfg = {
		.encap_type = 1,
		.encap_rcv = srx_udp_encap_rcv,
	};
	struct socket *sock;
	int ret;

	ret = udp_sock_create(net, &ucfg, &sock);
	if (ret)
		return ERR_PTR(ret);
	setup_udp_tunnel_sock(net, sock, &tcfg);
	return sock;
}

/*
 * Release the sockets; after it no encap_rcv of theirs runs
 * (udp_tunnel_sock_release() waits for an RCU grace period).
 */
static void srx_tunnel_close(struct srx_tunnel *tun)
{
	lockdep_assert_held(&srx_tunnel_lock);

	if (tun->sock6)
		udp_tunnel_sock_release(tun->sock6);
	if (tun->sock4)
		udp_tunnel_sock_release(tun->sock4);
	tun->sock6 = NULL;
	tun->sock4 = NULL;
}

static struct srx_tunnel *srx_tunnel_open(struct net *net)
{
	struct srx_tunnel *tun;
	struct socket *sock;
	int ret;

	lockdep_assert_held(&srx_tunnel_lock);

	tun = kzalloc(sizeof(*tun), GFP_KERNEL);
	if (!tun)
		return ERR_PTR(-ENOMEM);
	tun->net = net;

	sock = srx_tunnel_sock(net, false);
	if (IS_ERR(sock)) {
		ret = PTR_ERR(sock);
		goto err_free;
	}
	tun->sock4 = sock;

	/* Like rxe_net_ipv6_init(): no IPv6 in this kernel is not an error. */
	sock = srx_tunnel_sock(net, true);
	if (IS_ERR(sock) && PTR_ERR(sock) != -EAFNOSUPPORT) {
		ret = PTR_ERR(sock);
		goto err_close;
	}
	tun->sock6 = IS_ERR(sock) ? NULL : sock;
	return tun;

err_close:
	srx_tunnel_close(tun);
err_free:
	kfree(tun);
	return ERR_PTR(ret);
}

/*
 * Give @sdev the tunnel of its netdev's namespace, opening it if @sdev is
 * the first device there. -EADDRINUSE when another socket has port 4791
 * in that namespace: rdma_rxe binds it in init_net when it loads, without
 * SO_REUSEPORT, so an srx device on an init_net netdev cannot coexist with
 * rxe (put srx's netdev in a namespace of its own); -ENODEV when the
 * namespace is being dismantled.
 *
 * Context: process, from srx_device_add() before registration.
 */
int srx_tunnel_get(struct srx_device *sdev)
{
	struct net *net = dev_net(sdev->netdev);
	struct srx_tunnel *tun;
	struct srx_net *sn;
	int ret = 0;

	/*
	 * A namespace whose count reached zero is in cleanup_net(), whose
	 * srx_net_exit_net() may already have run: a tunnel opened now would
	 * never be closed. One that is still counted cannot start its
	 * cleanup before put_net() below, after the tunnel is in its
	 * srx_net, where the exit will find it.
	 */
	if (!maybe_get_net(net))
		return -ENODEV;

	mutex_lock(&srx_tunnel_lock);
	sn = net_generic(net, srx_net_id);
	tun = sn->tun;
	if (!tun) {
		tun = srx_tunnel_open(net);
		if (IS_ERR(tun)) {
			ret = PTR_ERR(tun);
			goto out_unlock;
		}
		sn->tun = tun;
	}
	tun->users++;
	sdev->tun = tun;
out_unlock:
	mutex_unlock(&srx_tunnel_lock);
	put_net(net);

	if (ret == -EADDRINUSE)
		pr_info("srx: UDP port %u is taken in the network namespace of %s (rdma_rxe binds it in the initial namespace): move %s to a namespace of its own\n",
			SRX_ROCE_UDP_PORT, sdev->netdev->name,
			sdev->netdev->name);
	return ret;
}

/*
 * Give the tunnel back; the last user of a namespace's tunnel closes its
 * sockets, so 4791 is free there when this returns.
 *
 * Context: process, from srx_dealloc_driver(), once no receive can find
 * the device any more.
 */
void srx_tunnel_put(struct srx_device *sdev)
{
	struct srx_tunnel *tun;

	mutex_lock(&srx_tunnel_lock);
	tun = sdev->tun;
	sdev->tun = NULL;
	if (tun && !--tun->users) {
		/* Attached: the namespace's exit has not run, and cannot yet. */
		if (tun->net) {
			struct srx_net *sn = net_generic(tun->net, srx_net_id);

			sn->tun = NULL;
		}
		srx_tunnel_close(tun);
		kfree(tun);
	}
	mutex_unlock(&srx_tunnel_lock);
}

/*
 * The namespace is going: close its tunnel now, even if devices still hold
 * it (top of file), and detach it, so that their srx_tunnel_put() does not
 * touch this namespace's storage after it is freed.
 *
 * Context: process, cleanup_net() or unregister_pernet_subsys().
 */
static void __net_exit srx_net_exit_net(struct net *net)
{
	struct srx_net *sn = net_generic(net, srx_net_id);
	struct srx_tunnel *tun;

	mutex_lock(&srx_tunnel_lock);
	tun = sn->tun;
	if (tun) {
		sn->tun = NULL;
		srx_tunnel_close(tun);
		WRITE_ONCE(tun->net, NULL);
	}
	mutex_unlock(&srx_tunnel_lock);
}

static struct pernet_operations srx_net_ops = {
	.exit = srx_net_exit_net,
	.id = &srx_net_id,
	.size = sizeof(struct srx_net),
};

/*
 * Before the link type is registered (no device can exist yet); after the
 * RDMA core's unregistration of every srx device (main.c), so that each
 * device gives its tunnel back first and the exits find none.
 */
int srx_net_init(void)
{
	return register_pernet_subsys(&srx_net_ops);
}

void srx_net_exit(void)
{
	unregister_pernet_subsys(&srx_net_ops);
}

/* Whether @sdev's netdev still lives in the namespace of its tunnel. */
static bool srx_net_attached(const struct srx_device *sdev,
			     const struct net *net)
{
	return net_eq(net, READ_ONCE(sdev->tun->net));
}

/* ------------------------------------------------------------------------
 * Receive
 */

/**
 * srx_rcv_in_netdev - the netdev a received packet is for, or NULL
 * @skb: the packet, network header set
 *
 * A packet that srx sent to an address of its own namespace comes back
 * through the loopback device (the route of a local address leads there;
 * rxe short-cuts such packets in rxe_loopback() instead): it is for the
 * netdev that holds the destination address. Otherwise it is the netdev
 * it came in on, a VLAN's if it came on one.
 *
 * Context: softirq, rcu_read_lock() held (UDP receive), which keeps the
 * netdev returned alive.
 */
struct net_device *srx_rcv_in_netdev(const struct sk_buff *skb)
{
	struct net_device *ndev = skb->dev;

	if (!ndev || !(ndev->flags & IFF_LOOPBACK))
		return ndev;
	if (ip_hdr(skb)->version == 6)
		ndev = ipv6_stub->ipv6_dev_find(dev_net(ndev),
						&ipv6_hdr(skb)->daddr, NULL);
	else
		ndev = __ip_dev_find(dev_net(ndev), ip_hdr(skb)->daddr, false);
	return IS_ERR(ndev) ? NULL : ndev;
}

/*
 * The netdev whose srx device a received packet is for, or NULL: a packet
 * on a VLAN is for the device on the VLAN's real netdev, which has the
 * VLAN's addresses as GIDs, as rxe_udp_encap_recv() maps it.
 *
 * Context: softirq, rcu_read_lock() held (UDP receive).
 */
static struct net_device *srx_rcv_netdev(struct sk_buff *skb)
{
	struct net_device *ndev = srx_rcv_in_netdev(skb);

	if (ndev && is_vlan_dev(ndev))
		ndev = vlan_dev_real_dev(ndev);
	return ndev;
}

/*
 * Whether @skb's IP and UDP headers are what the ICRC check and the parser
 * rely on (roce_frame.h says what and why). The UDP layer calls encap_rcv
 * with skb->data at the UDP header and the headers before it linear.
 */
static bool srx_rcv_frame_ok(const struct sk_buff *skb, bool ipv6)
{
	int noff = skb_network_offset(skb);
	int toff = skb_transport_offset(skb);

	/* A transport header before the network one: not the UDP layer's. */
	if (toff < 0 || noff > toff)
		return false;
	return !srx_roce_frame_check(skb_network_header(skb),
				     skb_headlen(skb) - noff, toff - noff,
				     skb->len - noff, ipv6);
}

/*
 * encap_rcv of both sockets: always consumes the skb (returns 0).
 *
 * Context: softirq, rcu_read_lock() held; the UDP layer has checked the
 * UDP length against the IP one and a non-zero UDP checksum.
 */
static int srx_udp_encap_rcv(struct sock *sk, struct sk_buff *skb)
{
	bool ipv6 = skb->protocol == htons(ETH_P_IPV6);
	struct net_device *ndev;
	struct ib_device *ibdev = NULL;
	struct srx_device *sdev;

	ndev = srx_rcv_netdev(skb);
	if (ndev)
		ibdev = ib_device_get_by_netdev(ndev, SRX_DRIVER_ID);
	if (!ibdev) {
		/*
		 * No device to count it on: the socket's drop count, which
		 * /proc/net/udp{,6} of the namespace shows.
		 */
		sk_drops_add(sk, skb);
		kfree_skb(skb);
		return 0;
	}
	/* Held until srx_rcv() returns: it may not outlive the call. */
	sdev = to_srx_dev(ibdev);

	if (!srx_net_attached(sdev, sock_net(sk))) {
		/* Its netdev left for another namespace: it is going away. */
		srx_count(sdev, SRX_CNT_RCVD_DROPPED, 1);
		kfree_skb(skb);
	} else if (!srx_rcv_frame_ok(skb, ipv6)) {
		srx_count(sdev, SRX_CNT_RCVD_MALFORMED, 1);
		kfree_skb(skb);
	} else if (!srx_icrc_verify(skb, ipv6)) {
		srx_count(sdev, SRX_CNT_RCVD_ICRC_ERR, 1);
		kfree_skb(skb);
	} else {
		/* The UDP header is linear: the UDP layer pulled it. */
		__skb_pull(skb, skb_transport_offset(skb) + SRX_UDP_HDR_SIZE);
		srx_rcv(sdev, skb);
		/* The skb is srx_rcv()'s now: not touched again. */
	}
	ib_device_put(ibdev);
	return 0;
}

/* ------------------------------------------------------------------------
 * Transmit
 */

/*
 * Fill @av from a QP's or AH's address vector, which must be global (RoCE
 * has no address without a GRH) with an sgid_attr. The UDP source port is
 * rdma_get_udp_sport(flow label, @lqpn, @rqpn) (ib_verbs.h), the rule every
 * RoCE v2 driver shares so that ECMP spreads flows and both ends of a
 * connection agree; the engine overrides av->sport where the port must not
 * change with the peer (UD, shared/ROCE.md).
 *
 * Context: any; takes rcu_read_lock().
 */
int srx_av_init(struct srx_av *av, const struct rdma_ah_attr *ah,
		u32 lqpn, u32 rqpn)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sattr;
	struct net_device *ndev;
	int ret = 0;

	if (!(rdma_ah_get_ah_flags(ah) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(ah);
	sattr = grh->sgid_attr;
	if (!sattr)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	switch (rdma_gid_attr_network_type(sattr)) {
	case RDMA_NETWORK_IPV4:
		av->ipv4 = true;
		if (!ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw))
			return -EINVAL;
		break;
	case RDMA_NETWORK_IPV6:
		if (ipv6_addr_v4mapped((const struct in6_addr *)grh->dgid.raw))
			return -EINVAL;
		break;
	default:
		return -EINVAL;	/* RoCE v1 and IB GIDs: not srx's */
	}
	av->sgid = sattr->gid;
	av->dgid = grh->dgid;
	av->flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
	av->traffic_class = grh->traffic_class;
	av->hop_limit = grh->hop_limit;
	av->sport = rdma_get_udp_sport(grh->flow_label, lqpn, rqpn);

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(sattr);
	if (IS_ERR(ndev))
		ret = PTR_ERR(ndev);
	else
		av->ifindex = ndev->ifindex;
	rcu_read_unlock();
	return ret;
}

static __be32 srx_gid_v4(const union ib_gid *gid)
{
	__be32 a;

	memcpy(&a, gid->raw + 12, sizeof(a));
	return a;
}

static struct dst_entry *srx_route4(struct net *net, const struct srx_av *av)
{
	struct flowi4 fl4 = {
		.flowi4_oif = av->ifindex,
		.flowi4_proto = IPPROTO_UDP,
		.saddr = srx_gid_v4(&av->sgid),
		.daddr = srx_gid_v4(&av->dgid),
		.fl4_sport = htons(av->sport),
		.fl4_dport = htons(SRX_ROCE_UDP_PORT),
	};
	struct rtable *rt;

	rt = ip_route_output_key(net, &fl4);
	if (IS_ERR(rt))
		return ERR_CAST(rt);
	return &rt->dst;
}

static struct dst_entry *srx_route6(struct net *net, const struct srx_av *av)
{
#if IS_ENABLED(CONFIG_IPV6)
	struct flowi6 fl6 = {
		.flowi6_oif = av->ifindex,
		.flowi6_proto = IPPROTO_UDP,
		.flowlabel = ip6_make_flowinfo(av->traffic_class,
					       htonl(av->flow_label)),
		.fl6_sport = htons(av->sport),
		.fl6_dport = htons(SRX_ROCE_UDP_PORT),
	};
	struct dst_entry *dst;
	int err;

	memcpy(&fl6.saddr, av->sgid.raw, sizeof(fl6.saddr));
	memcpy(&fl6.daddr, av->dgid.raw, sizeof(fl6.daddr));
	dst = ipv6_stub->ipv6_dst_lookup_flow(net, NULL, &fl6, NULL);
	if (IS_ERR(dst))
		return dst;
	err = dst->error;
	if (err) {
		dst_release(dst);
		return ERR_PTR(err);
	}
	return dst;
#else
	return ERR_PTR(-EAFNOSUPPORT);
#endif
}

/*
 * A packet for @av with @len bytes for BTH, extension headers, payload and
 * pad at skb->data, followed by SRX_ROCE_ICRC_BYTES bytes that srx_net_xmit()
 * fills in (skb->len is @len + SRX_ROCE_ICRC_BYTES), and headroom for UDP, IP
 * and the link layer of the route's netdev (LL_RESERVED_SPACE). The route
 * (IPv4-mapped GIDs as IPv4, by source and destination address and the
 * source GID's netdev) is attached; the neighbour layer resolves the MAC
 * when the packet goes out. Return: the skb or ERR_PTR(-ENETUNREACH,
 * -EHOSTUNREACH and the routing layer's other errors, -ENOMEM).
 *
 * Context: any; @gfp as the caller's context allows.
 */
struct sk_buff *srx_net_alloc_skb(struct srx_device *sdev,
				  const struct srx_av *av, unsigned int len,
				  gfp_t gfp)
{
	struct net *net = dev_net(sdev->netdev);
	unsigned int hlen;
	struct dst_entry *dst;
	struct sk_buff *skb;

	if (!srx_net_attached(sdev, net))
		return ERR_PTR(-ENETUNREACH);
	dst = av->ipv4 ? srx_route4(net, av) : srx_route6(net, av);
	if (IS_ERR(dst))
		return ERR_CAST(dst);

	hlen = LL_RESERVED_SPACE(dst->dev) + SRX_UDP_HDR_SIZE +
	       (av->ipv4 ? SRX_IPV4_HDR_SIZE : SRX_IPV6_HDR_SIZE);
	skb = alloc_skb(hlen + len + SRX_ROCE_ICRC_BYTES +
			dst->dev->needed_tailroom, gfp);
	if (!skb) {
		dst_release(dst);
		return ERR_PTR(-ENOMEM);
	}
	skb_reserve(skb, hlen);
	skb->protocol = av->ipv4 ? htons(ETH_P_IP) : htons(ETH_P_IPV6);
	skb_dst_set(skb, dst);
	skb_put(skb, len + SRX_ROCE_ICRC_BYTES);
	return skb;
}

static void srx_push_udp(struct sk_buff *skb, const struct srx_av *av)
{
	struct udphdr *uh;

	__skb_push(skb, sizeof(*uh));
	skb_reset_transport_header(skb);
	uh = udp_hdr(skb);
	uh->source = htons(av->sport);
	uh->dest = htons(SRX_ROCE_UDP_PORT);
	uh->len = htons(skb->len);
	/* Zero as rxe's prepare_udp_hdr(): the ICRC protects the packet. */
	uh->check = 0;
}

static void srx_push_ipv4(struct net *net, struct sk_buff *skb,
			  const struct srx_av *av)
{
	struct iphdr *iph;

	__skb_push(skb, sizeof(*iph));
	skb_reset_network_header(skb);
	iph = ip_hdr(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) / 4;
	iph->tos = av->traffic_class;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);	/* as rxe's prepare4() */
	iph->ttl = av->hop_limit;
	iph->protocol = IPPROTO_UDP;
	iph->check = 0;			/* __ip_local_out() computes it */
	iph->saddr = srx_gid_v4(&av->sgid);
	iph->daddr = srx_gid_v4(&av->dgid);
	__ip_select_ident(net, iph, 1);
	memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
}

static void srx_push_ipv6(struct sk_buff *skb, const struct srx_av *av)
{
	struct ipv6hdr *ip6h;

	__skb_push(skb, sizeof(*ip6h));
	skb_reset_network_header(skb);
	ip6h = ipv6_hdr(skb);
	ip6_flow_hdr(ip6h, av->traffic_class, htonl(av->flow_label));
	ip6h->payload_len = htons(skb->len - sizeof(*ip6h));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = av->hop_limit;
	memcpy(&ip6h->saddr, av->sgid.raw, sizeof(ip6h->saddr));
	memcpy(&ip6h->daddr, av->dgid.raw, sizeof(ip6h->daddr));
	memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
}

/*
 * Send a packet made by srx_net_alloc_skb() for the same @av, whose BTH
 * through pad the caller has written: push UDP (destination 4791, source
 * av->sport, checksum 0) and IP (IPv4 with DF, TOS = traffic class, TTL =
 * hop limit; IPv6 with traffic class, flow label and hop limit), fill in
 * the ICRC and hand it to ip_local_out()/ip6_local_out().
 *
 * The skb is consumed in every case, errors included: the caller must not
 * touch it after the call (CVE-2024-38544 was rxe touching an skb it had
 * queued). A destructor the caller set on the skb (with skb->sk, if it
 * wants one) runs when the stack frees it, possibly before this returns,
 * possibly much later on another CPU; it must only touch what the caller
 * pinned for it (the engine holds a QP reference per skb in flight).
 * Return: 0, or a negative errno when the packet was not sent (counted as
 * send_err); a packet dropped later on the way out is not reported.
 *
 * Context: any (softirq included); does not sleep.
 */
int srx_net_xmit(struct srx_device *sdev, const struct srx_av *av,
		 struct sk_buff *skb)
{
	unsigned int len = skb->len;	/* BTH through ICRC */
	struct net *net;
	int err;

	net = dev_net(skb_dst(skb)->dev);
	if (!srx_net_attached(sdev, net)) {
		kfree_skb(skb);
		err = -ENETUNREACH;
		goto err_count;
	}

	srx_push_udp(skb, av);
	if (av->ipv4)
		srx_push_ipv4(net, skb, av);
	else
		srx_push_ipv6(skb, av);
	srx_icrc_generate(skb, !av->ipv4);

	if (av->ipv4)
		err = ip_local_out(net, skb->sk, skb);
	else
		err = ip6_local_out(net, skb->sk, skb);
	/* NET_XMIT_CN: sent, and congested; NET_XMIT_DROP: not sent. */
	err = net_xmit_eval(err);
	if (err > 0)
		err = -ENOBUFS;
	if (err)
		goto err_count;
	srx_count(sdev, SRX_CNT_SENT_PKTS, 1);
	srx_count(sdev, SRX_CNT_SENT_BYTES, len);
	return 0;

err_count:
	srx_count(sdev, SRX_CNT_SEND_ERR, 1);
	return err;
}
