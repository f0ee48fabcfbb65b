// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * One srx device per netdev: creation, registration with the RDMA core,
 * the device and port queries, and following the netdev's state.
 *
 * A device is created by `rdma link add` (main.c, srx_newlink) and goes
 * away by `rdma link delete`, by the netdev's NETDEV_UNREGISTER (queued,
 * because the notifier runs under RTNL), or by module unload. The core calls
 * srx_dealloc_driver() last in every case, once no op can run any more.
 */
#include <linux/cpumask.h>
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/pci.h>
#include <linux/slab.h>
#include <net/addrconf.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "ah.h"
#include "compat.h"
#include "cq.h"
#include "device.h"
#include "mr.h"
#include "net.h"
#include "qp.h"
#include "srq.h"
#include "ucontext.h"
#include "wqe.h"

static unsigned int max_cq, max_qp, max_pd, max_mr, max_srq;

/*
 * Every registered srx device, so that a change of a limit reaches the
 * copy of the attributes the RDMA core answers ibv_query_device() from.
 * srx_devices_lock protects the list and serializes those updates.
 */
static LIST_HEAD(srx_devices);
static DEFINE_MUTEX(srx_devices_lock);

static void srx_device_set_limits(struct ib_device_attr *a)
{
	WRITE_ONCE(a->max_cq, srx_device_max_cq());
	WRITE_ONCE(a->max_qp, srx_device_max_qp());
	WRITE_ONCE(a->max_pd, srx_device_max_pd());
	WRITE_ONCE(a->max_mr, srx_device_max_mr());
	WRITE_ONCE(a->max_mw, srx_device_max_mr());	/* shared with MRs */
	WRITE_ONCE(a->max_srq, srx_device_max_srq());
}

static int srx_set_limit(const char *val, const struct kernel_param *kp)
{
	struct srx_device *sdev;
	int ret;

	mutex_lock(&srx_devices_lock);
	ret = param_set_uint(val, kp);
	if (!ret)
		list_for_each_entry(sdev, &srx_devices, list)
			srx_device_set_limits(&sdev->base_dev.attrs);
	mutex_unlock(&srx_devices_lock);
	return ret;
}

static const struct kernel_param_ops srx_limit_ops = {
	.set = srx_set_limit,
	.get = param_get_uint,
};
module_param_cb(max_cq, &srx_limit_ops, &max_cq, 0644);
MODULE_PARM_DESC(max_cq,
		 "CQs per device; 0 (default): as many as memory allows");
/*
 * The other objects have a fixed limit each (SRX_MAX_*); these lower it,
 * for a host that wants a smaller share per device and for the tests,
 * which cannot create a million objects to meet the fixed one.
 */
module_param_cb(max_qp, &srx_limit_ops, &max_qp, 0644);
MODULE_PARM_DESC(max_qp, "QPs per device; 0 (default): 16777199");
module_param_cb(max_pd, &srx_limit_ops, &max_pd, 0644);
MODULE_PARM_DESC(max_pd, "PDs per device; 0 (default): 1048576");
module_param_cb(max_mr, &srx_limit_ops, &max_mr, 0644);
MODULE_PARM_DESC(max_mr, "MRs per device; 0 (default): 16777215");
module_param_cb(max_srq, &srx_limit_ops, &max_srq, 0644);
MODULE_PARM_DESC(max_srq, "SRQs per device; 0 (default): 1048576");

/* A lowering parameter's limit: 0 or anything above @hard is @hard. */
static u32 srx_param_limit(const unsigned int *param, u32 hard)
{
	u32 limit = READ_ONCE(*param);

	return limit && limit < hard ? limit : hard;
}

u32 srx_device_max_qp(void)
{
	return srx_param_limit(&max_qp, SRX_MAX_QP);
}

u32 srx_device_max_pd(void)
{
	return srx_param_limit(&max_pd, SRX_MAX_PD);
}

u32 srx_device_max_mr(void)
{
	return srx_param_limit(&max_mr, SRX_MAX_MR);
}

u32 srx_device_max_srq(void)
{
	return srx_param_limit(&max_srq, SRX_MAX_SRQ);
}

/*
 * A CQ's ring, whatever its size, is charged to the memory cgroup of the
 * process that created it (srx_ring_mem_alloc()), so the cgroup bounds
 * that. What no cgroup is charged for is the CQ's kernel side: struct
 * srx_cq and the RDMA core's objects around it, at most
 * SRX_CQ_UNCHARGED bytes. With the max_cq parameter at 0 the limit keeps
 * that memory of all CQs together under 1/SRX_CQ_UNCHARGED_SHARE of RAM:
 * it follows the machine's memory, and a process in a container cannot
 * pin much of the host's outside its cgroup by creating CQs.
 */
#define SRX_CQ_UNCHARGED 2048
#define SRX_CQ_UNCHARGED_SHARE 64

u32 srx_device_max_cq(void)
{
	u64 limit = READ_ONCE(max_cq);

	if (!limit)
		limit = div_u64((u64)totalram_pages() << PAGE_SHIFT,
				SRX_CQ_UNCHARGED * SRX_CQ_UNCHARGED_SHARE);
	return min_t(u64, limit, INT_MAX);
}

static int srx_query_device(struct ib_device *ibdev,
			    struct ib_device_attr *attr, struct ib_udata *udata)
{
	struct srx_device *sdev = to_srx_dev(ibdev);
	int ret;

	ret = srx_udata_cmd(udata, NULL, 0);
	if (ret)
		return ret;

	*attr = sdev->attrs;
	srx_device_set_limits(attr);
	return 0;
}

static enum ib_port_state srx_netdev_port_state(struct net_device *netdev)
{
	return netif_running(netdev) && netif_carrier_ok(netdev) ?
	       IB_PORT_ACTIVE : IB_PORT_DOWN;
}

/**
 * srx_active_mtu() - The port's active MTU: the largest IB MTU a packet of
 * any opcode fits in, with its headers, on the netdev as it is now.
 * @sdev: the device.
 *
 * iboe_get_mtu() (include/rdma/ib_addr.h) takes 96 bytes off the netdev
 * MTU (GRH 40, UDP 8, BTH 12, XRC ETH 4, AtomicETH 28, ICRC 4): more than
 * the largest RoCE v2 header of a packet with a payload (IPv6 40, UDP 8,
 * BTH 12, RETH 16, ImmDt 4, ICRC 4: 84), so every packet of this path MTU
 * fits. rdma_rxe takes off 80 (rxe_param.h, eth_mtu_int_to_enum()), which
 * leaves a 1024-byte WRITE with immediate over IPv6 four bytes too large on
 * a netdev MTU of 1104. rdma_cm uses iboe_get_mtu() for the path MTU of a
 * RoCE route (cma.c, cma_resolve_iboe_route()), so what it asks of a QP
 * never exceeds this.
 *
 * Below a netdev MTU of 352 nothing fits and iboe_get_mtu() returns 0,
 * which is no IB MTU: libibverbs would print "invalid MTU" and a QP could
 * not be given any path_mtu. Report 256 then, as rdma_rxe does (rxe.c,
 * rxe_set_mtu(): "mtu ? min(mtu, IB_MTU_4096) : IB_MTU_256"); such a packet
 * exceeds the netdev MTU, and IP drops it as it would rxe's.
 *
 * Context: any. The netdev MTU may change right after this reads it.
 * Return: IB_MTU_256 .. IB_MTU_4096.
 */
enum ib_mtu srx_active_mtu(const struct srx_device *sdev)
{
	enum ib_mtu mtu = iboe_get_mtu(READ_ONCE(sdev->netdev->mtu));

	return mtu ? mtu : IB_MTU_256;
}

static int srx_query_port(struct ib_device *ibdev, u32 port,
			  struct ib_port_attr *attr)
{
	struct srx_device *sdev = to_srx_dev(ibdev);
	struct net_device *netdev = sdev->netdev;

	/* The caller zeroed *attr. */
	attr->gid_tbl_len = SRX_GID_TABLE_LEN;
	attr->pkey_tbl_len = 1;
	attr->port_cap_flags = IB_PORT_CM_SUP;
	attr->max_msg_sz = SRX_MAX_MSG_SIZE;
	attr->max_mtu = IB_MTU_4096;
	attr->max_vl_num = 1;

	spin_lock_irq(&sdev->port_lock);
	attr->state = sdev->port_state;
	spin_unlock_irq(&sdev->port_lock);

	attr->active_mtu = srx_active_mtu(sdev);
	if (attr->state == IB_PORT_ACTIVE)
		attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	else if (dev_get_flags(netdev) & IFF_UP)
		attr->phys_state = IB_PORT_PHYS_STATE_POLLING;
	else
		attr->phys_state = IB_PORT_PHYS_STATE_DISABLED;

	/*
	 * -ENODEV once the netdev is unregistering: the port is going away,
	 * not failing, so report the slowest speed rather than an error (the
	 * core's cache update would log "ib_query_port failed").
	 */
	if (ib_get_eth_speed(ibdev, port, &attr->active_speed,
			     &attr->active_width)) {
		attr->active_speed = IB_SPEED_SDR;
		attr->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int srx_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			  u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int srx_get_port_immutable(struct ib_device *ibdev, u32 port,
				  struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->pkey_tbl_len = 1;
	immutable->gid_tbl_len = SRX_GID_TABLE_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer srx_get_link_layer(struct ib_device *ibdev,
					       u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

/* Last op the core calls for a device; nothing of it runs afterwards. */
static void srx_dealloc_driver(struct ib_device *ibdev)
{
	struct srx_device *sdev = to_srx_dev(ibdev);

	mutex_lock(&srx_devices_lock);
	if (!list_empty(&sdev->list))
		list_del_init(&sdev->list);
	mutex_unlock(&srx_devices_lock);

	WARN_ON(!xa_empty(&sdev->qp_xa));
	WARN_ON(!xa_empty(&sdev->mr_xa));
	WARN_ON(!xa_empty(&sdev->ah_xa));
	xa_destroy(&sdev->qp_xa);
	xa_destroy(&sdev->mr_xa);
	xa_destroy(&sdev->ah_xa);
	srx_mcast_destroy(&sdev->mcast);
	/* No receive can find the device any more (ib_device_try_get()). */
	srx_tunnel_put(sdev);
	free_percpu(sdev->counters);
	if (sdev->netdev)
		dev_put(sdev->netdev);
}

static const struct ib_device_ops srx_device_ops = {
	.owner = THIS_MODULE,
	.driver_id = SRX_DRIVER_ID,
	.uverbs_abi_ver = SRX_UVERBS_ABI_VERSION,

	.alloc_hw_port_stats = srx_alloc_hw_port_stats,
	.alloc_pd = srx_alloc_pd,
	.alloc_ucontext = srx_alloc_ucontext,
	.attach_mcast = srx_attach_mcast,
	.create_ah = srx_create_ah,
	.create_cq = srx_compat_create_cq,
	.create_qp = srx_create_qp,
	.create_srq = srx_create_srq,
	.create_user_ah = srx_create_ah,
	.dealloc_driver = srx_dealloc_driver,
	.dealloc_pd = srx_dealloc_pd,
	.dealloc_ucontext = srx_dealloc_ucontext,
	.destroy_ah = srx_destroy_ah,
	.dereg_mr = srx_dereg_mr,
	.destroy_cq = srx_destroy_cq,
	.destroy_qp = srx_destroy_qp,
	.destroy_srq = srx_destroy_srq,
	.detach_mcast = srx_detach_mcast,
	.disassociate_ucontext = srx_disassociate_ucontext,
	.alloc_mr = srx_alloc_mr,
	.alloc_mw = srx_alloc_mw,
	.dealloc_mw = srx_dealloc_mw,
	.get_dma_mr = srx_get_dma_mr,
	.get_hw_stats = srx_get_hw_stats,
	.get_link_layer = srx_get_link_layer,
	.get_port_immutable = srx_get_port_immutable,
	.map_mr_sg = srx_map_mr_sg,
	.mmap = srx_mmap,
	.mmap_free = srx_mmap_free,
	.modify_qp = srx_modify_qp,
	.modify_srq = srx_modify_srq,
	.poll_cq = srx_poll_cq,
	.post_recv = srx_post_recv,
	.post_send = srx_post_send,
	.post_srq_recv = srx_post_srq_recv,
	.query_device = srx_query_device,
	.query_pkey = srx_query_pkey,
	.query_port = srx_query_port,
	.query_qp = srx_query_qp,
	.query_srq = srx_query_srq,
	.reg_user_mr = srx_reg_user_mr,
	.rereg_user_mr = srx_rereg_user_mr,
	.req_notify_cq = srx_req_notify_cq,
	.resize_cq = srx_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, srx_ah, base_ah),
	INIT_RDMA_OBJ_SIZE(ib_cq, srx_cq, base_cq),
	INIT_RDMA_OBJ_SIZE(ib_mw, srx_mw, base_mw),
	INIT_RDMA_OBJ_SIZE(ib_pd, srx_pd, base_pd),
	INIT_RDMA_OBJ_SIZE(ib_qp, srx_qp, base_qp),
	INIT_RDMA_OBJ_SIZE(ib_srq, srx_srq, base_srq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, srx_ucontext, base_ucontext),
};

/*
 * IB_DEVICE_ATOMIC_WRITE of 6.12 (== IB_UVERBS_DEVICE_ATOMIC_WRITE, bit 40
 * of query_device_ex's device_cap_flags_ex, which rdma-core's tests read);
 * 6.1 has no name for it and passes the bit through unchanged.
 */
#define SRX_DEVICE_ATOMIC_WRITE BIT_ULL(40)

static_assert(SRX_WR_REG_MR == IB_WR_REG_MR);

#ifdef SRX_HAVE_ATOMIC_WRITE
static_assert(SRX_DEVICE_ATOMIC_WRITE == IB_DEVICE_ATOMIC_WRITE);
static_assert(SRX_WR_ATOMIC_WRITE == IB_WR_ATOMIC_WRITE);
static_assert(SRX_WC_ATOMIC_WRITE == IB_WC_ATOMIC_WRITE);
#endif

static void srx_init_attrs(struct srx_device *sdev)
{
	struct ib_device_attr *a = &sdev->attrs;

	a->sys_image_guid = sdev->base_dev.node_guid;
	a->vendor_id = SRX_VENDOR_ID;
	a->max_mr_size = U64_MAX;
	a->page_size_cap = ~(u64)(PAGE_SIZE - 1);
	a->max_qp = srx_device_max_qp();
	a->max_qp_wr = SRX_MAX_QP_WR;
	a->max_ah = SRX_MAX_AH;
	a->max_mcast_grp = SRX_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = SRX_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = SRX_MAX_MCAST_GRP *
				       SRX_MAX_MCAST_QP_ATTACH;
	/*
	 * Fast registration for kernel consumers (mr.c, srx_alloc_mr()):
	 * nvme-rdma and rpcrdma refuse a device without it. Page lists as
	 * rdma_rxe's (rxe_param.h, RXE_MAX_FMR_PAGE_LIST_LEN).
	 */
	a->device_cap_flags = IB_DEVICE_SYS_IMAGE_GUID |
			      IB_DEVICE_PORT_ACTIVE_EVENT |
			      IB_DEVICE_MEM_MGT_EXTENSIONS;
	/*
	 * Memory windows for processes (mw.c): type 1, and type 2 bound to
	 * a QP number (2B), as rdma_rxe (rxe_param.h). They take their keys
	 * from the MRs' space, so max_mw is max_mr, shared.
	 */
	a->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
			       IB_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_fast_reg_page_list_len = SRX_MAX_FAST_REG_PAGES;
	a->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	a->max_send_sge = SRX_MAX_SGE;
	a->max_recv_sge = SRX_MAX_SGE;
	a->max_sge_rd = SRX_MAX_SGE;
	a->max_cqe = SRX_MAX_CQE;
	a->max_mr = srx_device_max_mr();
	a->max_mw = a->max_mr;
	a->max_pd = srx_device_max_pd();
	/*
	 * SRQs (srq.c): sized as an RQ; no IB_DEVICE_SRQ_RESIZE, so
	 * modify_srq's MAX_WR is EOPNOTSUPP.
	 */
	a->max_srq = srx_device_max_srq();
	a->max_srq_wr = SRX_MAX_SRQ_WR;
	a->max_srq_sge = SRX_MAX_SGE;
	a->max_qp_rd_atom = SRX_MAX_QP_RD_ATOM;
	a->max_qp_init_rd_atom = SRX_MAX_QP_RD_ATOM;
	a->max_res_rd_atom = SRX_MAX_QP_RD_ATOM * 1024;
	/*
	 * The responder serializes every srx QP's atomics with one lock
	 * (resp.c): atomic between srx's own operations, not with the CPU's
	 * atomics on the same memory. Masked atomics are not implemented.
	 */
	a->atomic_cap = IB_ATOMIC_HCA;
	/* ATOMIC WRITE: one 8-byte store under the same lock (resp.c). */
	a->device_cap_flags |= SRX_DEVICE_ATOMIC_WRITE;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
}

/*
 * Features a send opcode or an access right needs, each named by the
 * attribute that announces it.
 */
enum srx_feature {
	SRX_FEAT_BASE,		/* always there */
	SRX_FEAT_ATOMIC,	/* atomic_cap != IB_ATOMIC_NONE */
	SRX_FEAT_MASKED_ATOMIC,	/* masked_atomic_cap != IB_ATOMIC_NONE */
	SRX_FEAT_ATOMIC_WRITE,	/* SRX_DEVICE_ATOMIC_WRITE */
	SRX_FEAT_MW,		/* IB_DEVICE_MEM_WINDOW: memory windows */
	SRX_FEAT_MEM_MGT,	/* IB_DEVICE_MEM_MGT_EXTENSIONS: fast reg, invalidate */
	SRX_FEAT_COUNT
};

#define SRX_QPT_CONN	(BIT(IB_QPT_RC) | BIT(IB_QPT_UC))
#define SRX_QPT_ALL	(SRX_QPT_CONN | BIT(IB_QPT_UD) | BIT(IB_QPT_GSI))

/*
 * Send opcodes of RoCE: the QP types that have each and the feature it
 * needs. Wire operations by service type as the IBTA assigns them (rdma_rxe's
 * rxe_wr_opcode_info in rxe_opcode.c has the same split); the local ones on
 * connected QPs. Absent here, and so never accepted: LSO (needs
 * IB_DEVICE_UD_TSO), RDMA_READ_WITH_INV (iWARP only), REG_MR_INTEGRITY and
 * the drivers' reserved opcodes.
 */
static const struct {
	u8 qp_types;		/* BIT(enum ib_qp_type) */
	u8 feature;		/* enum srx_feature */
} srx_send_opcodes[] = {
	[IB_WR_SEND]			= { SRX_QPT_ALL, SRX_FEAT_BASE },
	[IB_WR_SEND_WITH_IMM]		= { SRX_QPT_ALL, SRX_FEAT_BASE },
	[IB_WR_RDMA_WRITE]		= { SRX_QPT_CONN, SRX_FEAT_BASE },
	[IB_WR_RDMA_WRITE_WITH_IMM]	= { SRX_QPT_CONN, SRX_FEAT_BASE },
	[IB_WR_RDMA_READ]		= { BIT(IB_QPT_RC), SRX_FEAT_BASE },
	[IB_WR_ATOMIC_CMP_AND_SWP]	= { BIT(IB_QPT_RC), SRX_FEAT_ATOMIC },
	[IB_WR_ATOMIC_FETCH_AND_ADD]	= { BIT(IB_QPT_RC), SRX_FEAT_ATOMIC },
	[IB_WR_MASKED_ATOMIC_CMP_AND_SWP] = { BIT(IB_QPT_RC),
					      SRX_FEAT_MASKED_ATOMIC },
	[IB_WR_MASKED_ATOMIC_FETCH_AND_ADD] = { BIT(IB_QPT_RC),
						SRX_FEAT_MASKED_ATOMIC },
	/* user QPs only: srx_post_send() refuses it (qp.c) */
	[SRX_WR_ATOMIC_WRITE]		= { BIT(IB_QPT_RC), SRX_FEAT_ATOMIC_WRITE },
	[IB_WR_SEND_WITH_INV]		= { BIT(IB_QPT_RC), SRX_FEAT_MEM_MGT },
	[IB_WR_LOCAL_INV]		= { SRX_QPT_CONN, SRX_FEAT_MEM_MGT },
	[IB_WR_BIND_MW]			= { SRX_QPT_CONN, SRX_FEAT_MW },
	[IB_WR_REG_MR]			= { SRX_QPT_CONN, SRX_FEAT_MEM_MGT },
};

/* Access rights and the feature each needs beyond the base ones. */
#define SRX_MR_ACCESS_BASE (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			    IB_ACCESS_REMOTE_READ | IB_ACCESS_HUGETLB | \
			    IB_ACCESS_OPTIONAL)
#define SRX_QP_ACCESS_BASE (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			    IB_ACCESS_REMOTE_READ)

static void srx_init_accepts(struct srx_device *sdev)
{
	const struct ib_device_attr *a = &sdev->attrs;
	struct srx_accepts *acc = &sdev->accepts;
	bool has[SRX_FEAT_COUNT] = {
		[SRX_FEAT_BASE] = true,
		[SRX_FEAT_ATOMIC] = a->atomic_cap != IB_ATOMIC_NONE,
		[SRX_FEAT_MASKED_ATOMIC] = a->masked_atomic_cap != IB_ATOMIC_NONE,
		[SRX_FEAT_ATOMIC_WRITE] =
			a->device_cap_flags & SRX_DEVICE_ATOMIC_WRITE,
		[SRX_FEAT_MW] = a->device_cap_flags & IB_DEVICE_MEM_WINDOW,
		[SRX_FEAT_MEM_MGT] =
			a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS,
	};
	u32 op, t;

	memset(acc, 0, sizeof(*acc));
	for (op = 0; op < ARRAY_SIZE(srx_send_opcodes); op++) {
		if (!has[srx_send_opcodes[op].feature])
			continue;
		for (t = 0; t < ARRAY_SIZE(acc->send_ops); t++)
			if (srx_send_opcodes[op].qp_types & BIT(t))
				acc->send_ops[t] |= BIT_ULL(op);
	}

	acc->mr_access = SRX_MR_ACCESS_BASE;
	acc->qp_access = SRX_QP_ACCESS_BASE;
	if (has[SRX_FEAT_ATOMIC]) {
		acc->mr_access |= IB_ACCESS_REMOTE_ATOMIC;
		acc->qp_access |= IB_ACCESS_REMOTE_ATOMIC;
	}
	if (has[SRX_FEAT_MW])
		acc->mr_access |= IB_ACCESS_MW_BIND;
}

/* Whether a QP of @type takes send work requests with @opcode. */
bool srx_send_opcode_ok(const struct srx_device *sdev, enum ib_qp_type type,
			u32 opcode)
{
	return type < ARRAY_SIZE(sdev->accepts.send_ops) && opcode < 64 &&
	       (sdev->accepts.send_ops[type] & BIT_ULL(opcode));
}

/*
 * xa_init_flags() gives every xarray initialized in one file one lockdep
 * class. qp_xa's lock is taken in the receive softirq (srx_qp_get(), with
 * interrupts off) and mr_xa's in process context only, with bottom halves
 * on (mr.c: lookups take no lock): sharing a class, lockdep took them for
 * one lock used both ways ("inconsistent lock state", make check-debug).
 * ah_xa's is taken inside a send queue's lock (the take, ah.c) and on its
 * own by AH create and destroy, always with interrupts saved.
 */
static struct lock_class_key srx_qp_xa_key;
static struct lock_class_key srx_ah_xa_key;

/*
 * Create and register the device for @netdev.
 *
 * Context: process, from srx_newlink() under the core's link_ops_rwsem.
 */
int srx_device_add(const char *name, struct net_device *netdev)
{
	struct srx_device *sdev;
	struct ib_device *ibdev;
	int ret;

	sdev = ib_alloc_device(srx_device, base_dev);
	if (!sdev)
		return -ENOMEM;
	ibdev = &sdev->base_dev;
	INIT_LIST_HEAD(&sdev->list);

	/* From here on ib_dealloc_device() calls srx_dealloc_driver(). */
	sdev->counters = alloc_percpu(struct srx_counters);
	xa_init_flags(&sdev->qp_xa, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	lockdep_set_class(&sdev->qp_xa.xa_lock, &srx_qp_xa_key);
	xa_init_flags(&sdev->mr_xa, XA_FLAGS_ALLOC);
	xa_init_flags(&sdev->ah_xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	lockdep_set_class(&sdev->ah_xa.xa_lock, &srx_ah_xa_key);
	srx_mcast_init(&sdev->mcast);
	if (!sdev->counters) {
		ret = -ENOMEM;
		goto err_dealloc;
	}

	/* Held until srx_dealloc_driver(): see struct srx_device. */
	dev_hold(netdev);
	sdev->netdev = netdev;
	spin_lock_init(&sdev->port_lock);
	spin_lock_init(&sdev->mw_lock);
	sdev->port_state = srx_netdev_port_state(netdev);

	addrconf_addr_eui48((u8 *)&ibdev->node_guid, netdev->dev_addr);
	srx_init_attrs(sdev);
	srx_init_accepts(sdev);
	ibdev->node_type = RDMA_NODE_IB_CA;
	strscpy(ibdev->node_desc, "srx", sizeof(ibdev->node_desc));
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = num_online_cpus();
	/* The doorbell of a user QP is a write() POST_SEND without WRs. */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND);
	ib_set_device_ops(ibdev, &srx_device_ops);

	ret = ib_device_set_netdev(ibdev, netdev, SRX_PORT);
	if (ret)
		goto err_dealloc;

	/*
	 * With the RDMA core in exclusive netns mode, live in the network
	 * namespace of the netdev: the device is then seen there and only
	 * there. In shared mode stay in init_net: the core gives every other
	 * namespace a compat device, but none to init_net, so a device living
	 * elsewhere would have no /sys/class/infiniband entry there. rdma_net
	 * is still init_net here, so the access check below is true for
	 * another namespace exactly in shared mode; and the mode cannot change
	 * while that namespace exists. Nothing holds the namespace: if it goes
	 * first, the core's rdma_dev_exit_net() moves the device back to
	 * init_net (and the netdev's unregistration then removes it).
	 * rdma_dev_change_netns() sets the same field.
	 */
	if (!rdma_dev_access_netns(ibdev, dev_net(netdev)))
		write_pnet(&ibdev->coredev.rdma_net, dev_net(netdev));

	/*
	 * Port 4791 in the netdev's namespace, before registration: from
	 * then on packets find the device. -EADDRINUSE (rdma_rxe in
	 * init_net) fails `rdma link add` rather than leave a device that
	 * cannot receive.
	 */
	ret = srx_tunnel_get(sdev);
	if (ret)
		goto err_dealloc;

	/*
	 * On the list before registration, which copies the attributes: a
	 * max_cq change from now on updates that copy.
	 */
	mutex_lock(&srx_devices_lock);
	list_add(&sdev->list, &srx_devices);
	mutex_unlock(&srx_devices_lock);

	/*
	 * The device's sysfs "device" link is the netdev's parent (a virtio
	 * device, a Hyper-V VMBus channel...), as for a hardware RoCE NIC, so
	 * that /sys/class/infiniband/<name>/device/net names the netdev: tools
	 * find a device's netdev that way (rdma-core's pyverbs rdmacm tests
	 * do). Not a PCI function: udev's rdma_rename (rdma-core's
	 * 60-rdma-persistent-naming.rules, NAME_FALLBACK) renames every RDMA
	 * device whose parent is one after its slot (kernel-boot/rdma_rename.c,
	 * by_onboard() and by_pci()), which would take away the name `rdma
	 * link add` was given. veth, bonds and other virtual netdevs have no
	 * parent, and the device no link. The driver core holds the parent
	 * while the device is registered; the netdev, which goes first,
	 * unregisters us. DMA stays virtual: ib_register_device() gets no
	 * dma_device.
	 */
	if (netdev->dev.parent && !dev_is_pci(netdev->dev.parent))
		ibdev->dev.parent = netdev->dev.parent;
	ret = ib_register_device(ibdev, name, NULL);
	if (ret)
		goto err_dealloc;
	return 0;

err_dealloc:
	ib_dealloc_device(ibdev);
	return ret;
}

static void srx_port_event(struct srx_device *sdev, enum ib_event_type type)
{
	struct ib_event ev = {
		.device = &sdev->base_dev,
		.element.port_num = SRX_PORT,
		.event = type,
	};

	ib_dispatch_event(&ev);
}

/*
 * A netdev event for the device's netdev.
 *
 * Context: process, RTNL held (netdev notifier).
 */
void srx_device_netdev_event(struct srx_device *sdev, unsigned long event)
{
	enum ib_port_state state;
	bool changed;

	ASSERT_RTNL();

	switch (event) {
	case NETDEV_UNREGISTER:
		/* Unregistration takes RTNL itself, hence queued. */
		ib_unregister_device_queued(&sdev->base_dev);
		return;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		break;
	default:
		/* MTU and addresses are read live; GIDs are the core's job. */
		return;
	}

	state = srx_netdev_port_state(sdev->netdev);
	spin_lock_irq(&sdev->port_lock);
	changed = sdev->port_state != state;
	sdev->port_state = state;
	spin_unlock_irq(&sdev->port_lock);

	if (changed)
		srx_port_event(sdev, state == IB_PORT_ACTIVE ?
				     IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
}
