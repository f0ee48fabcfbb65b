/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * srx's network layer: RoCE v2 (IBTA Annex A17) over UDP port 4791.
 *
 *  - net.c: one UDP tunnel socket pair (IPv4, IPv6 v6-only) per network
 *    namespace, held by the srx devices whose netdev lives there; the
 *    receive path up to srx_rcv(); the transmit path below.
 *  - icrc.c / icrc.h: the ICRC, generated into and verified from skbs.
 *  - recv.c: srx_rcv(), where the transport engine takes a packet.
 *
 * Documentation/design.md ("The network layer") has the lifetimes and the
 * orders of teardown this file's functions rely on.
 */
#ifndef SRX_NET_H
#define SRX_NET_H

#include <linux/skbuff.h>
#include <rdma/ib_verbs.h>

#include "icrc.h"

struct srx_device;
struct srx_tunnel;

/*
 * Where a packet goes: the engine's private copy of a QP's or an AH's
 * address vector, made by srx_av_init() when the address is set, read by
 * the transmit path only. Nothing in it points anywhere, so a packet built
 * from it is the same whenever it is (re)built.
 */
struct srx_av {
	union ib_gid sgid;	/* IPv4-mapped for RoCE v2 over IPv4 */
	union ib_gid dgid;
	int ifindex;		/* netdev of sgid: the device's, or a VLAN on it */
	u32 flow_label;		/* 20 bits */
	u16 sport;		/* UDP source port, host order */
	u8 traffic_class;	/* IPv4 TOS / IPv6 traffic class */
	u8 hop_limit;		/* IPv4 TTL / IPv6 hop limit */
	bool ipv4;		/* RDMA_NETWORK_IPV4: sgid and dgid are mapped */
};

/* net.c */
int srx_net_init(void);
void srx_net_exit(void);
int srx_tunnel_get(struct srx_device *sdev);
void srx_tunnel_put(struct srx_device *sdev);

int srx_av_init(struct srx_av *av, const struct rdma_ah_attr *ah,
		u32 lqpn, u32 rqpn);
struct sk_buff *srx_net_alloc_skb(struct srx_device *sdev,
				  const struct srx_av *av, unsigned int len,
				  gfp_t gfp);
int srx_net_xmit(struct srx_device *sdev, const struct srx_av *av,
		 struct sk_buff *skb);

/* icrc.c */
int srx_icrc_init(void);
void srx_icrc_exit(void);
bool srx_icrc_verify(const struct sk_buff *skb, bool ipv6);
void srx_icrc_generate(struct sk_buff *skb, bool ipv6);

/* recv.c */
void srx_rcv(struct srx_device *sdev, struct sk_buff *skb);
struct net_device *srx_rcv_in_netdev(const struct sk_buff *skb);

#endif /* SRX_NET_H */
