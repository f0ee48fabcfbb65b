// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * srx: a RoCE v2 verbs device over any Ethernet netdev.
 *
 * Module init and exit, the `rdma link` type, and the netdev notifier.
 */
#include <linux/if_arp.h>
#include <linux/if_vlan.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>

#include "device.h"
#include "net.h"
#include "qp.h"

#if BITS_PER_LONG != 64
#error "srx shares 64-bit words with userspace and needs a 64-bit kernel"
#endif

/*
 * Makes srx_newlink()'s "this netdev has no srx device yet" and the
 * registration that gives it one a single step. The core calls newlink with
 * link_ops_rwsem held for read only, so two `rdma link add` on one netdev
 * would otherwise both pass the check and register two devices: a device is
 * found by ib_device_get_by_netdev() only once ib_register_device() has
 * finished. Taken only here, outermost: registration takes the core's
 * locks and may take RTNL under it, and nothing that holds RTNL (the netdev
 * notifier, queued unregistration) or a core lock ever takes it.
 */
static DEFINE_MUTEX(srx_newlink_lock);

/*
 * Context: process, under the core's link_ops_rwsem (read); @netdev is held
 * by the caller for the duration. Takes srx_newlink_lock.
 */
static int srx_newlink(const char *name, struct net_device *netdev)
{
	struct ib_device *exists;
	int ret;

	/* RoCE needs Ethernet framing: virtio, veth, VLAN, bond, tap... */
	if (netdev->type != ARPHRD_ETHER) {
		pr_info("srx: %s is not an Ethernet device (ARP type %u)\n",
			netdev->name, netdev->type);
		return -EINVAL;
	}

	/*
	 * RoCE puts the RDMA device on the real netdev and gives it its VLANs'
	 * addresses as GIDs tagged with the VLAN id. The RDMA core credits an
	 * address only to a device on the real netdev of the address's netdev
	 * (roce_gid_mgmt.c, is_eth_port_of_netdev_filter()), so a device on a
	 * VLAN netdev would never have an IP GID: say what works instead.
	 */
	if (is_vlan_dev(netdev)) {
		pr_info("srx: %s is a VLAN device: add srx on %s, and the addresses of %s become its GIDs with VLAN id %u\n",
			netdev->name, vlan_dev_real_dev(netdev)->name,
			netdev->name, vlan_dev_vlan_id(netdev));
		return -EOPNOTSUPP;
	}

	mutex_lock(&srx_newlink_lock);
	exists = ib_device_get_by_netdev(netdev, SRX_DRIVER_ID);
	if (exists) {
		pr_info("srx: %s already has device %s\n", netdev->name,
			dev_name(&exists->dev));
		ib_device_put(exists);
		ret = -EEXIST;
	} else {
		ret = srx_device_add(name, netdev);
	}
	mutex_unlock(&srx_newlink_lock);
	return ret;
}

static struct rdma_link_ops srx_link_ops = {
	.type = "srx",
	.newlink = srx_newlink,
};

static int srx_netdev_event(struct notifier_block *nb, unsigned long event,
			    void *ptr)
{
	struct net_device *netdev = netdev_notifier_info_to_dev(ptr);
	struct ib_device *ibdev;

	ibdev = ib_device_get_by_netdev(netdev, SRX_DRIVER_ID);
	if (!ibdev)
		return NOTIFY_DONE;

	srx_device_netdev_event(to_srx_dev(ibdev), event);
	ib_device_put(ibdev);
	return NOTIFY_OK;
}

static struct notifier_block srx_netdev_notifier = {
	.notifier_call = srx_netdev_event,
};

/*
 * The transport engine's work items (qp.h: send_work, resp_work). A work
 * item never runs concurrently with itself, which with send_lock and
 * resp_lock keeps one owner per direction of a QP. Unbound: the work is
 * a QP's, not a CPU's.
 */
struct workqueue_struct *srx_wq;

static int __init srx_init(void)
{
	int ret;

	srx_wq = alloc_workqueue("srx", WQ_UNBOUND, 0);
	if (!srx_wq)
		return -ENOMEM;

	ret = srx_icrc_init();
	if (ret)
		goto err_wq;

	ret = srx_net_init();
	if (ret)
		goto err_icrc;

	ret = register_netdevice_notifier(&srx_netdev_notifier);
	if (ret)
		goto err_net;

	rdma_link_register(&srx_link_ops);
	return 0;

err_net:
	srx_net_exit();
err_icrc:
	srx_icrc_exit();
err_wq:
	destroy_workqueue(srx_wq);
	return ret;
}

static void __exit srx_exit(void)
{
	rdma_link_unregister(&srx_link_ops);
	/* Waits for queued unregistrations; detaches open user contexts. */
	ib_unregister_driver(SRX_DRIVER_ID);
	unregister_netdevice_notifier(&srx_netdev_notifier);
	/* Every device has given its tunnel back: see srx_net_init(). */
	srx_net_exit();
	/* No device is left to compute an ICRC. */
	srx_icrc_exit();
	/* Every QP is destroyed: its works were cancelled then. */
	destroy_workqueue(srx_wq);
}

module_init(srx_init);
module_exit(srx_exit);

MODULE_DESCRIPTION("srx: software RoCE v2 verbs device");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK("srx");
