// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fault_peer - one end of the RC stream that selftests/fault_test.sh breaks
 * (kill -9, device or netdev removal, link down, MTU change, rmmod, netns
 * deletion) to see how each end learns of it.
 *
 *   fault_peer -d DEV -g GID_INDEX -x DIR -n NAME -p PEER [-u EXP]
 *              [-t STALL_SECONDS]
 *
 * One RC QP on DEV. The two ends meet through files in DIR, not a socket,
 * so that they can run outside the network namespaces the test deletes:
 * each writes DIR/NAME.info (QPN, GID, rkey, address) and reads
 * DIR/PEER.info, and once at RTS writes DIR/NAME.rts and waits for
 * DIR/PEER.rts. Then both ends stream at once, 8 requests in flight, each
 * 64 KiB and signaled: three RDMA WRITEs into the peer's buffer for every
 * RDMA READ from it, so that each end is requester and responder. The ACK
 * timeout is 4.096 us x 2^EXP (-u, default 14: 67 ms), 7 retries.
 *
 * Prints, flushed:
 *   streaming                 after the first 16 successful completions
 *   event NAME                each asynchronous event (ibv_event_type_str)
 *   result done OPS           DIR/stop appeared: the end stopped posting,
 *                             every request completed successfully, and
 *                             the peer says the same (DIR/NAME.drained,
 *                             DIR/PEER.drained): only then is the QP
 *                             destroyed, which the peer's retransmissions
 *                             may still need
 *   result error STATUS MS OPS
 *                             a completion failed (ibv_wc_status_str);
 *                             MS: ms between the last successful
 *                             completion and it. The end waits for every
 *                             other request to complete (flushed) before
 *                             it says so.
 *   result fatal MS OPS       IBV_EVENT_DEVICE_FATAL: the device is gone,
 *                             nothing more will complete
 *   result stalled N          no completion for STALL_SECONDS (-t,
 *                             default 20) with N requests in flight
 *   teardown ok | teardown failed: WHAT
 *
 * Exit status: 0 after "result done", 3 after "result error", 4 after
 * "result fatal" (each with "teardown ok"), 1 after a stall, a teardown
 * that failed or a completion that makes no sense, 2 on a usage or setup
 * error.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_qp.h"

#define WINDOW		8
#define SLOT		(64 * 1024)
#define BUF_BYTES	(2 * WINDOW * SLOT)	/* target half, READ half */
#define STREAMING_AFTER	16
#define MEET_SECONDS	30

struct peer_info {
	uint32_t qpn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static bool exists(const char *dir, const char *name, const char *ext)
{
	char path[4096];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s%s", dir, name, ext);
	return !stat(path, &st);
}

/* Written whole under a temporary name and renamed: the peer never reads half. */
static int put_file(const char *dir, const char *name, const char *ext,
		    const char *text)
{
	char tmp[4096], path[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/.%s%s.tmp", dir, name, ext);
	snprintf(path, sizeof(path), "%s/%s%s", dir, name, ext);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fputs(text, f);
	if (fclose(f) || rename(tmp, path))
		return -1;
	return 0;
}

static bool wait_file(const char *dir, const char *name, const char *ext)
{
	uint64_t end = now_ms() + MEET_SECONDS * 1000;

	while (!exists(dir, name, ext)) {
		if (now_ms() > end) {
			fprintf(stderr, "no %s/%s%s after %d s\n", dir, name,
				ext, MEET_SECONDS);
			return false;
		}
		usleep(10000);
	}
	return true;
}

static int read_info(const char *dir, const char *name, struct peer_info *pi)
{
	char path[4096], hex[33];
	unsigned int i, byte;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "%s/%s.info", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%" SCNu32 " %" SCNu32 " %" SCNu64 " %32s", &pi->qpn,
		   &pi->rkey, &pi->addr, hex);
	fclose(f);
	if (n != 4 || strlen(hex) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
			return -1;
		pi->gid.raw[i] = byte;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: fault_peer -d DEV -g GID_INDEX -x DIR -n NAME -p PEER [-u EXP] [-t STALL_SECONDS]\n");
	exit(2);
}

struct stream {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	struct peer_info peer;
	uint64_t posted, completed, ok;
};

/* Request number @seq, in slot seq % WINDOW: every fourth one a READ. */
static int post_one(struct stream *s)
{
	uint64_t seq = s->posted;
	unsigned int slot = seq % WINDOW;
	bool read = seq % 4 == 3;
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->buf + (WINDOW + slot) * (size_t)SLOT,
		.length = SLOT, .lkey = s->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = seq, .sg_list = &sge, .num_sge = 1,
		.opcode = read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = s->peer.addr + slot * (uint64_t)SLOT,
			     .rkey = s->peer.rkey },
	}, *bad;
	int ret;

	ret = ibv_post_send(s->qp, &wr, &bad);
	if (ret)
		return ret;
	s->posted++;
	return 0;
}

/* The asynchronous events that came: true once DEVICE_FATAL did. */
static bool drain_events(struct stream *s)
{
	struct ibv_async_event ev;
	bool fatal = false;

	while (!ibv_get_async_event(s->ctx, &ev)) {
		printf("event %s\n", ibv_event_type_str(ev.event_type));
		fflush(stdout);
		if (ev.event_type == IBV_EVENT_DEVICE_FATAL)
			fatal = true;
		ibv_ack_async_event(&ev);
	}
	return fatal;
}

static int teardown(struct stream *s)
{
	const char *what = NULL;

	if (ibv_destroy_qp(s->qp))
		what = "destroy QP";
	else if (ibv_dereg_mr(s->mr))
		what = "deregister MR";
	else if (ibv_destroy_cq(s->cq))
		what = "destroy CQ";
	else if (ibv_dealloc_pd(s->pd))
		what = "deallocate PD";
	else if (ibv_close_device(s->ctx))
		what = "close the device";
	if (what) {
		printf("teardown failed: %s: %s\n", what, strerror(errno));
		return 1;
	}
	printf("teardown ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *dir = NULL, *name = NULL, *peer = NULL;
	int gidx = -1, exp = 14, stall_s = 20, opt, ret, n, i, status;
	struct ibv_qp_init_attr_ex ia = { 0 };
	struct stream s = { 0 };
	struct rc_path path;
	union ibv_gid gid;
	struct ibv_wc wc[16];
	char text[256], hex[33];
	uint64_t last_ok, t_err = 0;
	enum ibv_wc_status err = IBV_WC_SUCCESS;
	bool stopping = false, streaming = false;

	while ((opt = getopt(argc, argv, "d:g:x:n:p:u:t:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'x': dir = optarg; break;
		case 'n': name = optarg; break;
		case 'p': peer = optarg; break;
		case 'u': exp = atoi(optarg); break;
		case 't': stall_s = atoi(optarg); break;
		default: usage();
		}
	}
	if (!dev || gidx < 0 || !dir || !name || !peer || exp < 1 ||
	    exp > 31 || stall_s < 1)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);

	s.ctx = rc_open_device(dev);
	if (!s.ctx)
		return 2;
	if (ibv_query_gid(s.ctx, 1, gidx, &gid)) {
		fprintf(stderr, "no GID %d on %s\n", gidx, dev);
		return 2;
	}
	ret = fcntl(s.ctx->async_fd, F_GETFL);
	if (ret < 0 || fcntl(s.ctx->async_fd, F_SETFL, ret | O_NONBLOCK)) {
		perror("async_fd");
		return 2;
	}
	s.pd = ibv_alloc_pd(s.ctx);
	s.buf = aligned_alloc(4096, BUF_BYTES);
	s.cq = ibv_create_cq(s.ctx, 2 * WINDOW, NULL, NULL, 0);
	if (!s.pd || !s.buf || !s.cq) {
		fprintf(stderr, "setup failed\n");
		return 2;
	}
	memset(s.buf, 0x5a, BUF_BYTES);
	s.mr = ibv_reg_mr(s.pd, s.buf, BUF_BYTES, RC_ACCESS_ALL);
	ia.pd = s.pd;
	ia.send_cq = s.cq;
	ia.recv_cq = s.cq;
	ia.cap.max_send_wr = WINDOW;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	s.qp = s.mr ? rc_qp_init(s.ctx, &ia) : NULL;
	if (!s.qp) {
		perror("MR or QP");
		return 2;
	}

	for (i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", gid.raw[i]);
	snprintf(text, sizeof(text), "%u %u %" PRIu64 " %s\n", s.qp->qp_num,
		 s.mr->rkey, (uint64_t)(uintptr_t)s.buf, hex);
	if (put_file(dir, name, ".info", text) || !wait_file(dir, peer, ".info") ||
	    read_info(dir, peer, &s.peer)) {
		fprintf(stderr, "cannot meet %s in %s\n", peer, dir);
		return 2;
	}
	path = (struct rc_path){
		.sgid_index = gidx, .dgid = s.peer.gid, .dqpn = s.peer.qpn,
		.mtu = IBV_MTU_1024, .rd_atomic = WINDOW,
		.timeout = exp, .retry_cnt = 7, .rnr_retry = 7,
		.min_rnr_timer = 12,
	};
	if (rc_qp_rts(s.qp, &path)) {
		perror("QP to RTS");
		return 2;
	}
	if (put_file(dir, name, ".rts", "") || !wait_file(dir, peer, ".rts"))
		return 2;

	last_ok = now_ms();
	for (;;) {
		if (drain_events(&s)) {
			printf("result fatal %" PRIu64 " %" PRIu64 "\n",
			       now_ms() - last_ok, s.ok);
			/* The core has destroyed the objects: these must not fail. */
			return teardown(&s) ? 1 : 4;
		}
		if (!stopping && exists(dir, "stop", ""))
			stopping = true;
		while (!stopping && s.posted - s.completed < WINDOW) {
			ret = post_one(&s);
			if (ret) {
				/* An SQ in ERR may refuse posts (EINVAL is
				 * the verbs' answer there); stop posting. */
				stopping = true;
				break;
			}
		}
		if (s.posted == s.completed && stopping)
			break;
		n = ibv_poll_cq(s.cq, 16, wc);
		if (n < 0) {
			printf("result error poll_cq %d\n", n);
			return 1;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id != s.completed) {
				printf("completion of request %" PRIu64 ", expected %" PRIu64 "\n",
				       (uint64_t)wc[i].wr_id, s.completed);
				return 1;
			}
			s.completed++;
			if (wc[i].status == IBV_WC_SUCCESS) {
				if (err == IBV_WC_SUCCESS) {
					s.ok++;
					last_ok = now_ms();
				}
				continue;
			}
			if (err == IBV_WC_SUCCESS) {
				err = wc[i].status;
				t_err = now_ms();
				stopping = true;
			}
		}
		if (!streaming && s.ok >= STREAMING_AFTER) {
			printf("streaming\n");
			streaming = true;
		}
		if (n)
			continue;
		if (now_ms() - (err ? t_err : last_ok) > stall_s * 1000ULL) {
			printf("result stalled %" PRIu64 "\n",
			       s.posted - s.completed);
			return 1;
		}
		usleep(200);
	}
	if (err == IBV_WC_SUCCESS) {
		/*
		 * Our requests are done, the peer's may not be: destroying
		 * the QP now would leave its retransmissions unanswered and
		 * end it in RETRY_EXC_ERR. Wait until it has drained too.
		 */
		if (put_file(dir, name, ".drained", "") ||
		    !wait_file(dir, peer, ".drained"))
			return 1;
		printf("result done %" PRIu64 "\n", s.ok);
		status = 0;
	} else {
		printf("result error %s %" PRIu64 " %" PRIu64 "\n",
		       ibv_wc_status_str(err), t_err - last_ok, s.ok);
		status = 3;
	}
	return teardown(&s) ? 1 : status;
}
