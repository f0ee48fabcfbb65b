// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hostile_traffic - a process that scribbles on its own rings while its
 * connected QPs move real packets, for selftests/hostile_test.sh.
 *
 *   hostile_traffic -d DEV -g GID -t SECONDS [-s SEED] [-q PAIRS]
 *
 * On one srx device it connects PAIRS (3) pairs of RC QPs to each other
 * over the device's own GID (loopback); the responder of pair 0 takes its
 * receives from an SRQ. Every QP sends on a CQ with a completion channel
 * and receives on a second CQ; one registered MR is every buffer.
 *
 * For SECONDS, the main thread picks at random among: post a SEND (with or
 * without immediate, inline or not, signaled or not), an RDMA WRITE, an
 * RDMA READ, receives, SRQ receives; poll either CQ; arm the first and
 * take its events; and, now and then, resize a CQ or take a pair through
 * RESET, INIT, RTR and RTS again (or to ERR), so that traffic flows again
 * after the rings were made to lie. What comes back is counted, never
 * checked. Meanwhile a second thread writes random 32-bit words into every
 * writable uverbs mapping of the process (found in /proc/self/maps, as
 * selftests/srx_test.h's srx_test_maps() finds them): mostly the control
 * blocks at the start of each mapping (srx-abi.h: producer and consumer
 * indexes, state, done, engine, seal and arm words), the WQE and CQE slots
 * too. A resize maps a new CQ ring and unmaps the old one: the scribbler
 * holds maps_lock for reading while it writes, a resize holds it for
 * writing.
 *
 * Then the scribbler stops and every object is destroyed; each destroy must
 * succeed. Wrong completions, errors and QPs in ERR are allowed; a crash,
 * a hang (SIGALRM SECONDS + 120 s after the start, and each wait is
 * bounded) or a failed destroy are not.
 *
 * Prints one summary line: operations, scribbled words, completions by
 * status. Exit status 0 if every destroy succeeded, 1 if one failed or the
 * run hung, 2 on a usage or setup error.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "rc_qp.h"

#define MAX_PAIRS	8
#define QP_WR		32		/* send and receive WRs per QP */
#define SRQ_WR		64
#define CQE		256		/* each CQ, at creation */
#define SLOT		8192		/* largest message */
#define BUF_SIZE	(1 << 20)
#define MAX_MAPS	64
#define CTRL_WORDS	48		/* three cache lines: every control block */
#define WC_STATUSES	(IBV_WC_TM_RNDV_INCOMPLETE + 1)

struct pair {
	struct ibv_qp *qp[2];		/* [0] requester, [1] responder */
	bool srq;			/* [1] receives from the SRQ */
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *channel;
static struct ibv_cq *cq[2];		/* [0] send CQ, with the channel */
static struct ibv_srq *srq;
static struct ibv_mr *mr;
static uint8_t *buf;
static struct pair pairs[MAX_PAIRS];
static int npairs = 3, gid_index;
static union ibv_gid gid;
static unsigned int events;		/* CQ events taken, to acknowledge */

static pthread_rwlock_t maps_lock = PTHREAD_RWLOCK_INITIALIZER;
static atomic_bool stop;
static uint64_t scribbled;		/* words, the scribbler's own */

static struct {
	uint64_t ops, posts, post_fails, polls, arms, resizes, resize_fails;
	uint64_t reconnects, reconnect_fails;
	uint64_t wc[WC_STATUSES + 1];	/* the last: an unknown status */
} st;

/* xorshift64, reproducible from the seed printed at the start */
static uint64_t rnd64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	return n ? (uint32_t)(rnd64(&rng) % n) : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* The scribbler                                                      */
/* ------------------------------------------------------------------ */

struct map {
	uintptr_t start, end;
};

/* The writable uverbs mappings of the process; how many (at most @max). */
static int uverbs_maps(struct map *maps, int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;
		char perms[8] = "", path[256] = "";

		if (sscanf(line, "%llx-%llx %7s %*s %*s %*u %255s", &start,
			   &end, perms, path) != 4 ||
		    strncmp(path, "/dev/infiniband/uverbs", 22) ||
		    perms[1] != 'w')
			continue;
		if (n < max) {
			maps[n].start = start;
			maps[n].end = end;
			n++;
		}
	}
	fclose(f);
	return n;
}

static void *scribbler_main(void *arg)
{
	uint64_t s = *(uint64_t *)arg;
	struct map maps[MAX_MAPS];

	while (!atomic_load(&stop)) {
		int n, i, k, burst;

		pthread_rwlock_rdlock(&maps_lock);
		n = uverbs_maps(maps, MAX_MAPS);
		burst = 1 + rnd64(&s) % 16;
		for (i = 0; i < n; i++) {
			volatile uint32_t *w = (uint32_t *)maps[i].start;
			size_t words = (maps[i].end - maps[i].start) / 4;

			if (rnd64(&s) % 4)	/* not every ring every round */
				continue;
			for (k = 0; k < burst; k++) {
				uint64_t r = rnd64(&s);
				uint32_t v;

				/* Indexes near the truth, or anything. */
				switch (r >> 60) {
				case 0: case 1: case 2:
					v = w[r % CTRL_WORDS] + (r >> 40) % 16 - 8;
					break;
				case 3:
					v = 0;
					break;
				case 4:
					v = UINT32_MAX;
					break;
				case 5:
					v = w[r % CTRL_WORDS] + 0x80000000u;
					break;
				default:
					v = r >> 32;
					break;
				}
				/* The control blocks mostly, the slots too. */
				w[r % (k % 4 ? CTRL_WORDS : words)] = v;
				scribbled++;
			}
		}
		pthread_rwlock_unlock(&maps_lock);
		/* Let some traffic through between bursts. */
		usleep(rnd64(&s) % 2000);
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The poster and poller                                              */
/* ------------------------------------------------------------------ */

static struct rc_path path_to(struct ibv_qp *peer)
{
	struct rc_path p = {
		.sgid_index = gid_index, .dgid = gid, .dqpn = peer->qp_num,
		.mtu = IBV_MTU_1024, .sq_psn = 0, .rq_psn = 0, .rd_atomic = 4,
		/* 16 ms, 3 retries: a lost answer ends the QP soon enough */
		.timeout = 12, .retry_cnt = 3, .rnr_retry = 3,
		.min_rnr_timer = 1,
	};

	return p;
}

static int qp_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr attr = { .qp_state = s };

	return ibv_modify_qp(qp, &attr, IBV_QP_STATE);
}

/* Pair @p through RESET, INIT, RTR and RTS again; 0 if every step took. */
static int reconnect(struct pair *p)
{
	struct rc_path pa = path_to(p->qp[1]), pb = path_to(p->qp[0]);
	int ret = 0;

	ret |= qp_state(p->qp[0], IBV_QPS_RESET);
	ret |= qp_state(p->qp[1], IBV_QPS_RESET);
	ret |= rc_qp_to_init(p->qp[0]);
	ret |= rc_qp_to_init(p->qp[1]);
	ret |= rc_qp_rts(p->qp[1], &pb);
	ret |= rc_qp_rts(p->qp[0], &pa);
	return ret;
}

static struct ibv_sge sge_at(uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf + rnd(BUF_SIZE - SLOT),
		.length = len, .lkey = mr->lkey,
	};

	return sge;
}

static void post_send_one(void)
{
	struct pair *p = &pairs[rnd(npairs)];
	struct ibv_qp *qp = p->qp[rnd(2)];
	struct ibv_sge sge = sge_at(rnd(SLOT + 1));
	struct ibv_send_wr wr = {
		.wr_id = rnd64(&rng), .sg_list = &sge, .num_sge = 1,
	}, *bad;

	switch (rnd(5)) {
	case 0:
		wr.opcode = IBV_WR_SEND;
		break;
	case 1:
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = rnd64(&rng);
		break;
	case 2:
		wr.opcode = IBV_WR_RDMA_WRITE;
		break;
	case 3:
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = rnd64(&rng);
		break;
	default:
		wr.opcode = IBV_WR_RDMA_READ;
		break;
	}
	if (wr.opcode != IBV_WR_RDMA_READ) {
		if (!rnd(4)) {
			sge.length = rnd(64);
			wr.send_flags |= IBV_SEND_INLINE;
		}
	}
	if (rnd(4))
		wr.send_flags |= IBV_SEND_SIGNALED;
	if (wr.opcode == IBV_WR_RDMA_WRITE || wr.opcode == IBV_WR_RDMA_READ ||
	    wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
		wr.wr.rdma.remote_addr = (uintptr_t)buf + rnd(BUF_SIZE - SLOT);
		wr.wr.rdma.rkey = mr->rkey;
	}
	st.posts++;
	if (ibv_post_send(qp, &wr, &bad))
		st.post_fails++;
}

static void post_recvs(bool to_srq)
{
	struct ibv_recv_wr wr[8], *bad;
	struct ibv_sge sge[8];
	struct pair *p = &pairs[rnd(npairs)];
	unsigned int i, n = 1 + rnd(8);
	int ret;

	for (i = 0; i < n; i++) {
		sge[i] = sge_at(SLOT);
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = rnd64(&rng);
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	st.posts++;
	if (to_srq)
		ret = ibv_post_srq_recv(srq, wr, &bad);
	else if (p->srq)	/* its responder has no RQ of its own */
		ret = ibv_post_recv(p->qp[0], wr, &bad);
	else
		ret = ibv_post_recv(p->qp[rnd(2)], wr, &bad);
	if (ret)
		st.post_fails++;
}

static void poll_one(void)
{
	struct ibv_wc wc[16];
	int i, n;

	st.polls++;
	n = ibv_poll_cq(cq[rnd(2)], 1 + rnd(16), wc);
	for (i = 0; i < n && i < 16; i++)
		st.wc[wc[i].status < WC_STATUSES ? wc[i].status :
						   WC_STATUSES]++;
}

/* Arm the first CQ, and take the events it raised, without waiting. */
static void arm_and_take(void)
{
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	st.arms++;
	ibv_req_notify_cq(cq[0], rnd(2));
	while (poll(&pfd, 1, 0) == 1 &&
	       !ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
		events++;
}

static void resize_one(void)
{
	int ret;

	st.resizes++;
	pthread_rwlock_wrlock(&maps_lock);
	ret = ibv_resize_cq(cq[rnd(2)], 64 + rnd(1024));
	pthread_rwlock_unlock(&maps_lock);
	if (ret)
		st.resize_fails++;
}

static void reconnect_one(void)
{
	struct pair *p = &pairs[rnd(npairs)];

	st.reconnects++;
	if (!rnd(4)) {	/* or just end it, until the next reconnect */
		qp_state(p->qp[rnd(2)], IBV_QPS_ERR);
		return;
	}
	if (reconnect(p))
		st.reconnect_fails++;
}

static void run(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end) {
		uint32_t r = rnd(1000);

		st.ops++;
		if (r < 300)
			post_send_one();
		else if (r < 420)
			post_recvs(false);
		else if (r < 500)
			post_recvs(true);
		else if (r < 900)
			poll_one();
		else if (r < 980)
			arm_and_take();
		else if (r < 985)
			resize_one();
		else
			reconnect_one();
	}
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                 */
/* ------------------------------------------------------------------ */

static int setup(const char *dev)
{
	struct ibv_srq_init_attr sa = {
		.attr = { .max_wr = SRQ_WR, .max_sge = 1 },
	};
	int i, j;

	ctx = rc_open_device(dev);
	if (!ctx)
		return -1;
	if (ibv_query_gid(ctx, 1, gid_index, &gid)) {
		fprintf(stderr, "no GID %d on %s\n", gid_index, dev);
		return -1;
	}
	pd = ibv_alloc_pd(ctx);
	channel = ibv_create_comp_channel(ctx);
	cq[0] = channel ? ibv_create_cq(ctx, CQE, NULL, channel, 0) : NULL;
	cq[1] = ibv_create_cq(ctx, CQE, NULL, NULL, 0);
	srq = pd ? ibv_create_srq(pd, &sa) : NULL;
	buf = aligned_alloc(4096, BUF_SIZE);
	mr = pd && buf ? ibv_reg_mr(pd, buf, BUF_SIZE, RC_ACCESS_ALL) : NULL;
	if (!pd || !cq[0] || !cq[1] || !srq || !mr) {
		fprintf(stderr, "setup: %s\n", strerror(errno));
		return -1;
	}
	memset(buf, 0x5a, BUF_SIZE);
	for (i = 0; i < npairs; i++) {
		pairs[i].srq = i == 0;
		for (j = 0; j < 2; j++) {
			struct ibv_qp_init_attr_ex ia = {
				.pd = pd, .send_cq = cq[0], .recv_cq = cq[1],
				.cap = { .max_send_wr = QP_WR,
					 .max_recv_wr = QP_WR,
					 .max_send_sge = 1, .max_recv_sge = 1,
					 .max_inline_data = 64 },
			};

			if (j == 1 && pairs[i].srq) {
				ia.srq = srq;
				ia.cap.max_recv_wr = 0;
			}
			pairs[i].qp[j] = rc_qp_init(ctx, &ia);
			if (!pairs[i].qp[j]) {
				fprintf(stderr, "QP %d.%d: %s\n", i, j,
					strerror(errno));
				return -1;
			}
		}
		if (reconnect(&pairs[i])) {
			fprintf(stderr, "pair %d: cannot connect: %s\n", i,
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Every object destroyed; the number of destroys that failed, each said. */
static int teardown(void)
{
	int i, j, bad = 0;

#define DESTROY(call, what, ...)					\
	do {								\
		int _r = call;						\
		if (_r) {						\
			fprintf(stderr, "destroy " what ": %s\n",	\
				##__VA_ARGS__, strerror(_r));		\
			bad++;						\
		}							\
	} while (0)

	if (events)
		ibv_ack_cq_events(cq[0], events);
	for (i = 0; i < npairs; i++)
		for (j = 0; j < 2; j++)
			if (pairs[i].qp[j])
				DESTROY(ibv_destroy_qp(pairs[i].qp[j]),
					"QP %d.%d", i, j);
	if (srq)
		DESTROY(ibv_destroy_srq(srq), "SRQ");
	for (i = 0; i < 2; i++)
		if (cq[i])
			DESTROY(ibv_destroy_cq(cq[i]), "CQ %d", i);
	if (channel)
		DESTROY(ibv_destroy_comp_channel(channel), "channel");
	if (mr)
		DESTROY(ibv_dereg_mr(mr), "MR");
	if (pd)
		DESTROY(ibv_dealloc_pd(pd), "PD");
	if (ctx)
		DESTROY(ibv_close_device(ctx), "context");
#undef DESTROY
	free(buf);
	return bad;
}

static void on_alarm(int sig)
{
	static const char msg[] = "hostile_traffic: hung (SIGALRM)\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(1);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	double seconds = 10;
	uint64_t seed = 0, sseed;
	pthread_t tid;
	int opt, i, bad;

	while ((opt = getopt(argc, argv, "d:g:t:s:q:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid_index = atoi(optarg); break;
		case 't': seconds = atof(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'q': npairs = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!dev || seconds <= 0 || npairs < 1 || npairs > MAX_PAIRS)
		goto usage;
	if (!seed)
		seed = (uint64_t)now_s() * 1000003u ^ (uint64_t)getpid();
	rng = seed | 1;
	sseed = seed * 3 + 1;
	printf("hostile_traffic: %s GID %d, %d pairs, %.0f s, seed %" PRIu64
	       "\n", dev, gid_index, npairs, seconds, seed);
	fflush(stdout);

	signal(SIGALRM, on_alarm);
	alarm((unsigned int)seconds + 120);
	if (setup(dev)) {
		teardown();
		return 2;
	}
	if (pthread_create(&tid, NULL, scribbler_main, &sseed)) {
		fprintf(stderr, "cannot start the scribbler\n");
		teardown();
		return 2;
	}
	run(seconds);
	atomic_store(&stop, true);
	pthread_join(tid, NULL);
	/* Whatever is left on the CQs, taken before the destroys. */
	for (i = 0; i < 64; i++)
		poll_one();

	bad = teardown();
	alarm(0);
	printf("hostile_traffic: %" PRIu64 " operations (%" PRIu64
	       " posts, %" PRIu64 " refused; %" PRIu64 " polls; %" PRIu64
	       " arms, %u events; %" PRIu64 " resizes, %" PRIu64
	       " refused; %" PRIu64 " reconnects, %" PRIu64
	       " refused), %" PRIu64 " scribbled words; completions:",
	       st.ops, st.posts, st.post_fails, st.polls, st.arms, events,
	       st.resizes, st.resize_fails, st.reconnects,
	       st.reconnect_fails, scribbled);
	for (i = 0; i < WC_STATUSES; i++)
		if (st.wc[i])
			printf(" %s %" PRIu64, ibv_wc_status_str(i), st.wc[i]);
	if (st.wc[WC_STATUSES])
		printf(" unknown %" PRIu64, st.wc[WC_STATUSES]);
	printf("; %s\n", bad ? "a destroy FAILED" : "every destroy succeeded");
	return bad ? 1 : 0;

usage:
	fprintf(stderr, "usage: hostile_traffic -d DEV -g GID -t SECONDS "
		"[-s SEED] [-q PAIRS]\n");
	return 2;
}
