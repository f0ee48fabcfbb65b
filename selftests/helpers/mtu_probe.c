// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mtu_probe - what a device makes of its netdev's MTU and of each path
 * MTU, for selftests/gid_mtu_test.sh.
 *
 *   mtu_probe -d DEVICE -n NETDEV MTU...
 *   mtu_probe -d DEVICE -g SGID_INDEX [-t rc|uc]
 *
 * With -n, sets NETDEV's MTU (SIOCSIFMTU, in the caller's network
 * namespace) to each MTU in turn and prints port 1's active MTU after
 * each: "netdev_mtu 1500 active_mtu 1024", "invalid" for a value that is
 * no IB MTU. One process for the whole list: under TCG a process start
 * costs more than the rest. The netdev keeps the last MTU.
 *
 * With -g, prints port 1's active MTU ("active_mtu 1024"), then, for each IB MTU
 * from 256 to 4096, takes a new QP of the type (RC by default) from RESET
 * through INIT to RTR with that path_mtu, aimed at the device's own GID
 * SGID_INDEX and at a second QP left in RESET (nothing is sent), and prints
 * what ibv_modify_qp() returned: "path_mtu 2048 EINVAL", or "path_mtu 1024
 * ok" followed by the path_mtu ibv_query_qp() then reports ("query 1024").
 * The port is queried once before and once after the sweep ("active_mtu
 * ... after"), so that a caller can tell the MTU did not change under it.
 *
 * Exit status: 0 when every step ran (whatever the modify returned or the
 * port reported), 1 when the netdev refused an MTU, 2 on a usage or setup
 * error.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static int mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

static const char *errno_name(int err)
{
	switch (err) {
	case 0: return "ok";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EPERM: return "EPERM";
	case ENOMEM: return "ENOMEM";
	case ENODATA: return "ENODATA";
	default: return strerror(err);
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: mtu_probe -d DEVICE -n NETDEV MTU...\n"
			"       mtu_probe -d DEVICE -g SGID_INDEX [-t rc|uc]\n");
	return 2;
}

static int print_active_mtu(struct ibv_context *ctx, const char *when)
{
	struct ibv_port_attr port;

	if (ibv_query_port(ctx, 1, &port)) {
		perror("ibv_query_port");
		return -1;
	}
	if (mtu_bytes(port.active_mtu))
		printf("active_mtu %d%s\n", mtu_bytes(port.active_mtu), when);
	else
		printf("active_mtu invalid%s\n", when);
	fflush(stdout);
	return 0;
}

/* -n: set each MTU of argv[] on @netdev, and say what the port makes of it. */
static int netdev_sweep(struct ibv_context *ctx, const char *netdev,
			char **mtus, int n)
{
	struct ifreq ifr;
	int fd, i;

	if (strlen(netdev) >= sizeof(ifr.ifr_name)) {
		fprintf(stderr, "mtu_probe: %s: name too long\n", netdev);
		return 2;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("socket");
		return 2;
	}
	for (i = 0; i < n; i++) {
		memset(&ifr, 0, sizeof(ifr));
		strcpy(ifr.ifr_name, netdev);
		ifr.ifr_mtu = atoi(mtus[i]);
		if (ioctl(fd, SIOCSIFMTU, &ifr)) {
			printf("netdev_mtu %d refused: %s\n", ifr.ifr_mtu,
			       strerror(errno));
			close(fd);
			return 1;
		}
		printf("netdev_mtu %d ", ifr.ifr_mtu);
		if (print_active_mtu(ctx, "")) {
			close(fd);
			return 2;
		}
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	enum ibv_qp_type type = IBV_QPT_RC;
	struct ibv_device **list, **d;
	struct ibv_context *ctx = NULL;
	const char *name = NULL, *netdev = NULL;
	struct ibv_qp *peer;
	union ibv_gid gid;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	int sgid = -1, opt;
	enum ibv_mtu mtu;

	while ((opt = getopt(argc, argv, "d:g:n:t:")) != -1) {
		switch (opt) {
		case 'd':
			name = optarg;
			break;
		case 'n':
			netdev = optarg;
			break;
		case 'g':
			sgid = atoi(optarg);
			break;
		case 't':
			if (!strcmp(optarg, "rc"))
				type = IBV_QPT_RC;
			else if (!strcmp(optarg, "uc"))
				type = IBV_QPT_UC;
			else
				return usage();
			break;
		default:
			return usage();
		}
	}
	if (!name || (netdev ? sgid >= 0 || optind == argc :
			   sgid < 0 || sgid > 255 || optind != argc))
		return usage();

	list = ibv_get_device_list(NULL);
	for (d = list; d && *d; d++)
		if (!strcmp(ibv_get_device_name(*d), name))
			ctx = ibv_open_device(*d);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "mtu_probe: cannot open %s\n", name);
		return 2;
	}
	if (netdev) {
		int ret = netdev_sweep(ctx, netdev, argv + optind, argc - optind);

		ibv_close_device(ctx);
		return ret;
	}
	if (ibv_query_gid(ctx, 1, sgid, &gid)) {
		perror("ibv_query_gid");
		return 2;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (!cq) {
		perror("ibv_alloc_pd/ibv_create_cq");
		return 2;
	}
	init.send_cq = cq;
	init.recv_cq = cq;
	init.qp_type = type;
	peer = ibv_create_qp(pd, &init);
	if (!peer) {
		perror("ibv_create_qp");
		return 2;
	}
	if (print_active_mtu(ctx, ""))
		return 2;

	for (mtu = IBV_MTU_256; mtu <= IBV_MTU_4096; mtu++) {
		struct ibv_qp_attr attr = {
			.qp_state = IBV_QPS_INIT,
			.port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
		};
		struct ibv_qp_init_attr qinit;
		struct ibv_qp *qp;
		int mask, ret;

		qp = ibv_create_qp(pd, &init);
		if (!qp) {
			perror("ibv_create_qp");
			return 2;
		}
		ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
		if (ret) {
			fprintf(stderr, "mtu_probe: RESET -> INIT: %s\n", strerror(ret));
			return 2;
		}
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RTR;
		attr.ah_attr.is_global = 1;
		attr.ah_attr.port_num = 1;
		attr.ah_attr.grh.dgid = gid;
		attr.ah_attr.grh.sgid_index = sgid;
		attr.ah_attr.grh.hop_limit = 64;
		attr.path_mtu = mtu;
		attr.dest_qp_num = peer->qp_num;
		attr.rq_psn = 1;
		mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC) {
			attr.max_dest_rd_atomic = 1;
			attr.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		ret = ibv_modify_qp(qp, &attr, mask);
		printf("path_mtu %d %s", mtu_bytes(mtu), errno_name(ret));
		if (!ret) {
			memset(&attr, 0, sizeof(attr));
			if (ibv_query_qp(qp, &attr, IBV_QP_PATH_MTU, &qinit))
				printf(" query failed");
			else
				printf(" query %d", mtu_bytes(attr.path_mtu));
		}
		printf("\n");
		if (ibv_destroy_qp(qp)) {
			perror("ibv_destroy_qp");
			return 2;
		}
	}
	if (print_active_mtu(ctx, " after"))
		return 2;
	ibv_destroy_qp(peer);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
