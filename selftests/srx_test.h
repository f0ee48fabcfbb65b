/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Helpers shared by the selftests: finding or creating the test device,
 * and producing completions without a wire protocol.
 *
 * Tests run as root inside the VM (tools/vm/run) after
 * selftests/install_test.sh has installed srx. They use whatever RDMA device
 * $SRX_TEST_DEV names (default srx0), creating srx0 on eth0 when it is
 * missing, so the same binary also runs against rdma_rxe (tools/compare).
 *
 * Completions come from the flush path: receives posted to a QP that then
 * moves to the error state complete with IBV_WC_WR_FLUSH_ERR. That works on
 * every verbs device, rxe included.
 */
#ifndef SRX_TEST_H
#define SRX_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static inline const char *srx_test_dev_name(void)
{
	const char *name = getenv("SRX_TEST_DEV");

	return name && *name ? name : "srx0";
}

/* True when the device under test is an srx device (not rxe/siw). */
static inline bool srx_test_is_srx(void)
{
	return !strncmp(srx_test_dev_name(), "srx", 3);
}

static inline struct ibv_device *srx_test_find(struct ibv_device **list,
					       const char *name)
{
	for (; list && *list; list++)
		if (!strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

/*
 * Open the device under test, creating srx0 on eth0 first if it does not
 * exist (the module loads by its alias). NULL with errno on failure.
 */
static inline struct ibv_context *srx_test_open(void)
{
	const char *name = srx_test_dev_name();
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device *dev;

	list = ibv_get_device_list(NULL);
	dev = srx_test_find(list, name);
	if (!dev && !strcmp(name, "srx0")) {
		ibv_free_device_list(list);
		/* It may exist already (a race): look again either way. */
		(void)!system("ip link set eth0 up && "
			      "rdma link add srx0 type srx netdev eth0 2>/dev/null");
		list = ibv_get_device_list(NULL);
		dev = srx_test_find(list, name);
	}
	if (dev)
		ctx = ibv_open_device(dev);
	else
		errno = ENODEV;
	ibv_free_device_list(list);
	return ctx;
}

/*
 * Load libibverbs' providers now. The harness forks every test, and each
 * child would otherwise pay for loading them again (most of a second
 * under TCG); call this from a constructor of the test program.
 */
static inline void srx_test_preload(void)
{
	ibv_free_device_list(ibv_get_device_list(NULL));
}

static inline uint64_t srx_test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* A QP used only to produce flush completions                        */
/* ------------------------------------------------------------------ */

struct srx_flusher {
	struct ibv_qp *qp;
	uint32_t rq_size;
	/* what the QP was created with, to create another */
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
};

static inline int srx_qp_move(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask = IBV_QP_STATE;

	if (state == IBV_QPS_INIT) {
		attr.pkey_index = 0;
		attr.port_num = 1;
		attr.qp_access_flags = 0;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &attr, mask);
}

/*
 * An RC QP whose receive completions go to @rcq (and send completions to
 * @scq), with room for @rq_size receives and as many sends: a work request
 * keeps its slot until its completion is polled, so that is how many of
 * either may be produced between two polls. Returns 0 or an errno value.
 */
static inline int srx_flusher_create(struct srx_flusher *f, struct ibv_pd *pd,
				     struct ibv_cq *scq, struct ibv_cq *rcq,
				     uint32_t rq_size)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = scq,
		.recv_cq = rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = rq_size, .max_recv_wr = rq_size,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	f->qp = ibv_create_qp(pd, &attr);
	if (!f->qp)
		return errno;
	f->rq_size = rq_size;
	f->pd = pd;
	f->scq = scq;
	f->rcq = rcq;
	return 0;
}

static inline int srx_flusher_destroy(struct srx_flusher *f)
{
	int ret = f->qp ? ibv_destroy_qp(f->qp) : 0;

	f->qp = NULL;	/* a teardown after a test's own destroy does nothing */
	return ret;
}

/*
 * Produce @n receive completions (flushed) on the QP's receive CQ, with
 * wr_id = @first, @first + 1, ... in order. Returns 0 or an errno value.
 * The completions may arrive asynchronously on other devices: use
 * srx_wait_cqes() to wait for them.
 *
 * On srx the QP is kept in the error state, where a list of receives is
 * flushed by the doorbell of its ibv_post_recv(). Each receive keeps its
 * slot until its completion is polled, so once the QP holds rq_size
 * unpolled completions a new QP takes over: the old one is destroyed,
 * which leaves its completions in the CQ, where a RESET would remove them
 * (libsrx, as mlx5). Other devices (rxe) keep a reset QP's completions and
 * do not complete receives posted in ERR: there the QP is cycled through
 * RESET, INIT and ERR, in chunks of its receive queue size.
 */
static inline int srx_flush_chunk(struct srx_flusher *f, uint64_t first,
				  uint32_t n, struct ibv_recv_wr *wrs,
				  uint32_t *posted)
{
	struct ibv_qp_init_attr init;
	struct ibv_recv_wr *bad = NULL;
	struct ibv_qp_attr attr;
	bool in_err;
	uint32_t i;
	int ret;

	*posted = 0;
	ret = ibv_query_qp(f->qp, &attr, IBV_QP_STATE, &init);
	if (ret)
		return ret;
	in_err = srx_test_is_srx() && attr.qp_state == IBV_QPS_ERR;
	if (!in_err) {
		ret = srx_qp_move(f->qp, IBV_QPS_RESET);
		if (!ret)
			ret = srx_qp_move(f->qp, IBV_QPS_INIT);
		if (ret)
			return ret;
	}
	for (i = 0; i < n; i++) {
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].wr_id = first + i;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
	ret = ibv_post_recv(f->qp, wrs, &bad);
	if (!ret)
		*posted = n;
	else if (bad)
		*posted = (uint32_t)(bad - wrs);
	if (!in_err) {
		int err = srx_qp_move(f->qp, IBV_QPS_ERR);

		if (!ret)
			ret = err;
	}
	return ret;
}

/* srx: a new QP in place of one whose slots wait for polls. */
static inline int srx_flusher_renew(struct srx_flusher *f)
{
	struct ibv_pd *pd = f->pd;
	struct ibv_cq *scq = f->scq, *rcq = f->rcq;
	int ret = srx_flusher_destroy(f);

	return ret ? ret : srx_flusher_create(f, pd, scq, rcq, f->rq_size);
}

static inline int srx_flush_recvs(struct srx_flusher *f, uint64_t first,
				  uint64_t n)
{
	uint32_t max = f->rq_size, posted;
	struct ibv_recv_wr *wrs;
	int ret = 0;

	wrs = calloc(max, sizeof(*wrs));
	if (!wrs)
		return ENOMEM;
	while (n && !ret) {
		ret = srx_flush_chunk(f, first, n < max ? n : max, wrs,
				      &posted);
		first += posted;
		n -= posted;
		if (ret == ENOMEM && srx_test_is_srx())
			ret = posted ? 0 : srx_flusher_renew(f);
	}
	free(wrs);
	return ret;
}

/*
 * Poll @cq until @n completions were taken into @wc (or counted, if @wc is
 * NULL) or @timeout_ms passed. Returns how many were taken.
 */
static inline int srx_wait_cqes(struct ibv_cq *cq, struct ibv_wc *wc, int n,
				int timeout_ms)
{
	uint64_t deadline = srx_test_now_ns() + (uint64_t)timeout_ms * 1000000;
	struct ibv_wc scratch[64];
	int got = 0;

	while (got < n) {
		int want = n - got, r;

		if (!wc && want > 64)
			want = 64;
		r = ibv_poll_cq(cq, want, wc ? wc + got : scratch);
		if (r < 0)
			return got;
		got += r;
		if (!r) {
			if (srx_test_now_ns() > deadline)
				break;
			usleep(100);
		}
	}
	return got;
}

/* Wait up to @timeout_ms for a completion event on @channel. */
static inline int srx_wait_event(struct ibv_comp_channel *channel,
				 struct ibv_cq **cq, void **cq_ctx,
				 int timeout_ms)
{
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };

	if (poll(&pfd, 1, timeout_ms) != 1)
		return ETIMEDOUT;
	return ibv_get_cq_event(channel, cq, cq_ctx) ? errno : 0;
}

/*
 * From here on membarrier() fails with EPERM in this process, as under a
 * seccomp filter: installed before the context is opened, libsrx never
 * biases; installed after, a revoker must do without it. Returns 0 or an
 * errno.
 */
static inline int srx_refuse_membarrier(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = sizeof(f) / sizeof(f[0]), .filter = f,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return errno;
	if (!syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) ||
	    errno != EPERM)
		return EPROTO;
	return 0;
}

/* True if an event is already waiting on @channel. */
static inline bool srx_event_pending(struct ibv_comp_channel *channel,
				     int timeout_ms)
{
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };

	return poll(&pfd, 1, timeout_ms) == 1;
}

/* ------------------------------------------------------------------ */
/* Kernel log and memory accounting                                   */
/* ------------------------------------------------------------------ */

/* Mark the kernel log, as io_uring's tests do before each test. */
static inline void srx_kmsg_mark(const char *what)
{
	FILE *f = fopen("/dev/kmsg", "w");

	if (f) {
		fprintf(f, "srx-selftest: %s\n", what);
		fclose(f);
	}
}

/*
 * Whether the guest runs a KASAN kernel (make check-debug sets
 * SRX_TEST_KASAN). There a freed object waits in KASAN's quarantine, up to
 * 1/32 of RAM, before its slab page can go, so slab bytes grow while objects
 * are freed: in the first such run 20,000 refused CQ creates freed 62,615
 * objects and SUnreclaim still grew by 6,580 kB. Leak checks then rely on
 * object counts and kmemleak, and churn tests run fewer cycles, since each
 * one costs about 14 times as much.
 */
static inline bool srx_test_kasan(void)
{
	const char *kasan = getenv("SRX_TEST_KASAN");

	return kasan && *kasan && strcmp(kasan, "0");
}

/* A field of /proc/meminfo in kB ("Slab", "VmallocUsed", ...), or -1. */
static inline long srx_meminfo_kb(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long value = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':') {
			value = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return value;
}

/*
 * kB held by the active objects of slab cache @cache (/proc/slabinfo,
 * root only), or -1. vmap_area is the one to ask about: vfree() leaves a
 * vmalloc area's vmap_area on a lazy list until enough of them add up
 * (mm/vmalloc.c, purge_vmap_area_lazy()), so unreclaimable slab grows by
 * one per freed ring for a while without any leak; 6.12 purges later
 * than 6.1.
 */
static inline long srx_slab_cache_kb(const char *cache)
{
	char line[512], name[64];
	unsigned long active, total, size;
	long kb = -1;
	FILE *f = fopen("/proc/slabinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lu %lu %lu", name, &active, &total,
			   &size) == 4 && !strcmp(name, cache)) {
			kb = (long)(active * size / 1024);
			break;
		}
	fclose(f);
	return kb;
}

/* Write @value to /sys/module/srx/parameters/@param; 0 or an errno value. */
static inline int srx_set_param(const char *param, const char *value)
{
	char path[128];
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/sys/module/srx/parameters/%s", param);
	f = fopen(path, "w");
	if (!f)
		return errno;
	if (fputs(value, f) < 0)
		ret = errno;
	if (fclose(f) && !ret)
		ret = errno;
	return ret;
}

/* ------------------------------------------------------------------ */
/* Object counts, device counters, kernel log                         */
/* ------------------------------------------------------------------ */

/*
 * How many objects of each of the @n kinds in @kinds ("pd", "cq", "qp",
 * "mr", "ctx", ...) the RDMA core's restrack holds on device @dev, as
 * `rdma resource show` prints them, into @counts (-1 for a kind it does
 * not print). Kernel objects count too: the MAD layer's QP1, its CQ and
 * its PD stay while the device lives. Returns 0, or -1 if the tool or the
 * device is missing. One run of the tool for all kinds: it is slow under
 * TCG.
 */
static inline int srx_res_counts(const char *dev, const char *const *kinds,
				 int n, long *counts)
{
	char line[512], key[64];
	size_t len = strlen(dev);
	int i, found = -1;
	FILE *p;

	for (i = 0; i < n; i++)
		counts[i] = -1;
	p = popen("rdma resource show 2>/dev/null", "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *name = strchr(line, ' ');

		/* "0: srx0: pd 1 cq 2 qp 1 cm_id 0 mr 0 ctx 0 srq 0" */
		if (!name || strncmp(name + 1, dev, len) || name[1 + len] != ':')
			continue;
		found = 0;
		for (i = 0; i < n; i++) {
			char *at;

			snprintf(key, sizeof(key), " %s ", kinds[i]);
			at = strstr(name + 1 + len, key);
			if (at)
				counts[i] = strtol(at + strlen(key), NULL, 10);
		}
	}
	pclose(p);
	return found;
}

/* One kind of srx_res_counts(); -1 if unknown. */
static inline long srx_res_count(const char *dev, const char *kind)
{
	long count;

	srx_res_counts(dev, &kind, 1, &count);
	return count;
}

/*
 * Counter @name of port 1 of device @dev (hw_counters in sysfs), or -1.
 * The core caches the values for 10 ms (RDMA_HW_STATS_DEFAULT_LIFESPAN):
 * a read right after another may miss what happened in between, so this
 * waits that long first.
 */
static inline long long srx_hw_counter(const char *dev, const char *name)
{
	char path[256];
	long long value = -1;
	FILE *f;

	usleep(20000);

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/%s", dev, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &value) != 1)
		value = -1;
	fclose(f);
	return value;
}

/*
 * Read /dev/kmsg from now on: returns a descriptor positioned after the
 * last record, or -1. srx_kmsg_bad() then counts what was logged since.
 */
static inline int srx_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * Records logged since srx_kmsg_open() at error level or above, or with a
 * text the VM runner fails on; each is copied to stderr as "# kmsg: ...".
 * Not every warning: the core warns "eth0 speed is unknown" for virtio
 * NICs whenever a port is queried, which is no fault of the test.
 */
static inline int srx_kmsg_bad(int fd)
{
	static const char *const bad[] = {
		"WARNING:", "BUG:", "Oops", "general protection", "refcount_t:",
		"UBSAN:", "list_add corruption", "list_del corruption",
	};
	char rec[2048];
	int count = 0;
	ssize_t n;

	if (fd < 0)
		return 0;
	for (;;) {
		unsigned int i, level;
		const char *msg;
		bool is_bad;

		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		level = (unsigned int)strtoul(rec, NULL, 10) & 7;
		is_bad = level <= 3;
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			is_bad |= strstr(msg, bad[i]) != NULL;
		if (is_bad) {
			fprintf(stderr, "# kmsg: %s", msg);
			count++;
		}
	}
	return count;
}

/* ------------------------------------------------------------------ */
/* Mappings of the uverbs device file                                 */
/* ------------------------------------------------------------------ */

/* One line of /proc/self/maps that maps /dev/infiniband/uverbsN. */
struct srx_test_map {
	uintptr_t start;
	uintptr_t end;
	uint64_t offset;	/* the mmap() offset, in bytes */
};

/*
 * Fill @maps with up to @max uverbs mappings of this process, in address
 * order; returns how many there are (possibly more than @max), or -1.
 * Rings are found this way, from outside the provider: the mapping a
 * create added is the one that was not there before (srx_test_map_new()).
 */
static inline int srx_test_maps(struct srx_test_map *maps, int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff;
		char path[256] = "";

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*u %255s", &start,
			   &end, &pgoff, path) != 4 ||
		    strncmp(path, "/dev/infiniband/uverbs", 22))
			continue;
		if (n < max) {
			maps[n].start = start;
			maps[n].end = end;
			maps[n].offset = pgoff;
		}
		n++;
	}
	fclose(f);
	return n;
}

/*
 * The mappings in @now (@n_now of them) that are not in @before: what an
 * object's creation mapped. Returns how many were copied to @out.
 */
static inline int srx_test_map_new(const struct srx_test_map *before,
				   int n_before, const struct srx_test_map *now,
				   int n_now, struct srx_test_map *out, int max)
{
	int i, j, n = 0;

	for (i = 0; i < n_now; i++) {
		for (j = 0; j < n_before; j++)
			if (now[i].start == before[j].start &&
			    now[i].end == before[j].end &&
			    now[i].offset == before[j].offset)
				break;
		if (j == n_before && n < max)
			out[n++] = now[i];
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* Connecting a QP (RoCE: the address is a GID)                       */
/* ------------------------------------------------------------------ */

/*
 * The attributes the IB state machine requires for RESET->INIT, INIT->RTR
 * and RTR->RTS of an RC, UC or UD QP on port 1 of a RoCE device, aimed at
 * @dest_qpn on GID @dgid (GID index 0 is the source). A test changes
 * fields or masks to make a transition wrong.
 */
static inline int srx_qp_attr_for(enum ibv_qp_type type, enum ibv_qp_state to,
				  const union ibv_gid *dgid, uint32_t dest_qpn,
				  struct ibv_qp_attr *attr)
{
	int mask = IBV_QP_STATE;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = to;
	switch (to) {
	case IBV_QPS_INIT:
		attr->pkey_index = 0;
		attr->port_num = 1;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (type == IBV_QPT_UD) {
			attr->qkey = 0x11111111;
			mask |= IBV_QP_QKEY;
		} else {
			attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		if (type == IBV_QPT_UD)
			break;
		attr->ah_attr.is_global = 1;
		attr->ah_attr.port_num = 1;
		attr->ah_attr.grh.dgid = *dgid;
		attr->ah_attr.grh.sgid_index = 0;
		attr->ah_attr.grh.hop_limit = 64;
		attr->path_mtu = IBV_MTU_1024;
		attr->dest_qp_num = dest_qpn;
		attr->rq_psn = 0x123;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (type == IBV_QPT_RC) {
			attr->max_dest_rd_atomic = 1;
			attr->min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		attr->sq_psn = 0x456;
		mask |= IBV_QP_SQ_PSN;
		if (type == IBV_QPT_RC) {
			attr->timeout = 14;
			attr->retry_cnt = 7;
			attr->rnr_retry = 7;
			attr->max_rd_atomic = 1;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		break;
	}
	return mask;
}

/*
 * Move @qp from RESET through INIT and RTR to RTS, aimed at @dest_qpn on
 * this device's own GID 0. Returns 0 or an errno value.
 */
static inline int srx_qp_to_rts(struct ibv_qp *qp, uint32_t dest_qpn)
{
	static const enum ibv_qp_state path[] = {
		IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
	};
	struct ibv_qp_attr attr;
	union ibv_gid gid;
	unsigned int i;
	int ret;

	if (ibv_query_gid(qp->context, 1, 0, &gid))
		return errno ? errno : EIO;
	for (i = 0; i < sizeof(path) / sizeof(path[0]); i++) {
		int mask = srx_qp_attr_for(qp->qp_type, path[i], &gid,
					   dest_qpn, &attr);

		ret = ibv_modify_qp(qp, &attr, mask);
		if (ret)
			return ret;
	}
	return 0;
}

#endif /* SRX_TEST_H */
