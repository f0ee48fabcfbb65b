// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Ring memory is charged to the memory cgroup of the process that creates
 * it, so that a process in a container (the uverbs device nodes are mode
 * 0666) cannot pin host memory outside its cgroup.
 *
 * A child process joins a fresh cgroup (cgroup2, mounted here if the guest
 * has not) whose memory.max is MEMCG_LIMIT, and there creates:
 *  - a CQ of max_cqe entries (128 MiB of ring), a QP of max_qp_wr work
 *    requests of max_sge entries each way (64 MiB), a resize PREPARE of a
 *    small CQ to max_cqe: each larger than the limit, each ENOMEM;
 *  - a QP of MEMCG_QP_WR work requests of max_sge entries each way, which
 *    fits: memory.current grows by its two rings (the mappings it added)
 *    and the kernel-private copy of every slot (take.c), at least its SGE
 *    array and less than half as much again, charged like the rings;
 *  - then CQs of MEMCG_RING bytes until one fails: ENOMEM, after at most
 *    as many as the limit holds, and memory.current shows those it holds.
 * The parent checks that the kernel logged nothing (no "vmalloc error",
 * no OOM kill) and that memory.current comes back once the child exits.
 *
 * srx-only: other devices charge their rings their own way (rxe's are
 * vmalloc_user(), uncharged, like srx's were).
 */
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <rdma/srx-abi.h>

#include "kselftest_harness.h"
#include "srx_test.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define MIB (1024 * 1024)
/* memory.max of the test's cgroup: room for the process, not for a big ring. */
#define MEMCG_LIMIT (48 * MIB)
/* CQE entries of one small CQ: a 1 MiB ring plus its control page. */
#define MEMCG_RING_CQE (MIB / 32)
/* Work requests each way of the QP whose charge is measured (8 MiB of rings). */
#define MEMCG_QP_WR 4096
/* memory.current may stay above the baseline by this much after exit. */
#define MEMCG_SLACK MIB

/* What the child found, sent to the parent through a pipe. */
struct memcg_result {
	int big_cq_errno;	/* a CQ of max_cqe: 0 if it was created */
	int big_qp_errno;	/* a QP of max_qp_wr x max_sge */
	int prepare_errno;	/* resize of a small CQ to max_cqe */
	int prepare_cqe;	/* that CQ's cqe after the failed resize */
	int small_cqs;		/* small CQs created before the first failure */
	int small_errno;	/* errno of that failure, 0 if none failed */
	int held;		/* small CQs still held while the parent looks */
	int qp_errno;		/* the MEMCG_QP_WR QP: 0 if it was created */
	long long qp_charged;	/* memory.current's growth when it was */
	long long qp_rings;	/* bytes of the mappings it added */
	long long qp_sges;	/* bytes of its slots' private SGE arrays */
	char what[128];		/* set up failure, "" if none */
};

static int write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return errno;
	if (write(fd, value, strlen(value)) < 0)
		ret = errno;
	close(fd);
	return ret;
}

static long long read_ll(const char *path)
{
	char buf[64] = "";
	long long value = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		value = strtoll(buf, NULL, 10);
	fclose(f);
	return value;
}

/*
 * Records since @fd was opened at error level or worse, or that say the
 * kernel complained about an allocation or killed something: the OOM
 * report and "vmalloc error" are warnings, which srx_kmsg_bad() lets by.
 */
static int memcg_kmsg_bad(int fd)
{
	static const char *const bad[] = {
		"vmalloc error", "page allocation failure", "oom-kill",
		"invoked oom-killer", "Out of memory", "out of memory",
		"WARNING:", "BUG:", "Oops",
	};
	char rec[2048];
	int count = 0;
	ssize_t n;

	for (;;) {
		unsigned int i;
		bool is_bad;

		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		rec[n] = '\0';
		is_bad = (strtoul(rec, NULL, 10) & 7) <= 3;	/* err or worse */
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			is_bad |= strstr(rec, bad[i]) != NULL;
		if (is_bad) {
			fprintf(stderr, "# kmsg: %s", rec);
			count++;
		}
	}
	return count;
}

static void child_sync(int wfd, int rfd, char say)
{
	char c;

	if (write(wfd, &say, 1) != 1 || read(rfd, &c, 1) != 1)
		_exit(2);
}

/* Runs in the cgroup; reports through @wfd, waits on @rfd. */
static void memcg_child(const char *cgroup, int wfd, int rfd)
{
	struct memcg_result r = { .big_cq_errno = -1 };
	struct ibv_cq *cqs[2 * MEMCG_LIMIT / MIB + 8];
	struct ibv_qp_init_attr qattr = { .qp_type = IBV_QPT_RC };
	struct ibv_device_attr dev;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *small;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	char path[256], pid[32];
	int i, n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	snprintf(pid, sizeof(pid), "%d", getpid());
	if (write_file(path, pid)) {
		snprintf(r.what, sizeof(r.what), "joining the cgroup: %s",
			 strerror(errno));
		goto fail;
	}
	ctx = srx_test_open();
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (!pd || ibv_query_device(ctx, &dev)) {
		snprintf(r.what, sizeof(r.what), "open: %s", strerror(errno));
		goto fail;
	}
	child_sync(wfd, rfd, 'R');	/* the parent takes its baseline */

	errno = 0;
	cq = ibv_create_cq(ctx, dev.max_cqe, NULL, NULL, 0);
	r.big_cq_errno = cq ? 0 : errno;
	if (cq)
		ibv_destroy_cq(cq);

	small = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	if (!small) {
		snprintf(r.what, sizeof(r.what), "small CQ: %s",
			 strerror(errno));
		goto report;
	}
	qattr.send_cq = small;
	qattr.recv_cq = small;
	qattr.cap.max_send_wr = dev.max_qp_wr;
	qattr.cap.max_recv_wr = dev.max_qp_wr;
	qattr.cap.max_send_sge = dev.max_sge;
	qattr.cap.max_recv_sge = dev.max_sge;
	errno = 0;
	qp = ibv_create_qp(pd, &qattr);
	r.big_qp_errno = qp ? 0 : errno;
	if (qp)
		ibv_destroy_qp(qp);

	/* A QP that fits: what creating it charges. */
	{
		struct srx_test_map before[32], after[32], added[4];
		char current[256];
		long long c0, c1;
		int nb, na, k;

		snprintf(current, sizeof(current), "%s/memory.current", cgroup);
		qattr.cap.max_send_wr = MEMCG_QP_WR;
		qattr.cap.max_recv_wr = MEMCG_QP_WR;
		nb = srx_test_maps(before, 32);
		c0 = read_ll(current);
		errno = 0;
		qp = ibv_create_qp(pd, &qattr);
		c1 = read_ll(current);
		r.qp_errno = qp ? 0 : errno;
		na = srx_test_maps(after, 32);
		if (qp && nb >= 0 && na <= 32 && c0 >= 0 && c1 >= 0) {
			k = srx_test_map_new(before, nb, after, na, added, 4);
			while (k--)
				r.qp_rings += added[k].end - added[k].start;
			r.qp_charged = c1 - c0;
			r.qp_sges = (long long)(qattr.cap.max_send_wr *
						qattr.cap.max_send_sge +
						qattr.cap.max_recv_wr *
						qattr.cap.max_recv_sge) *
				    (long long)sizeof(struct srx_sge);
		}
		if (qp)
			ibv_destroy_qp(qp);
	}

	r.prepare_errno = ibv_resize_cq(small, dev.max_cqe);
	r.prepare_cqe = small->cqe;
	ibv_destroy_cq(small);

	for (n = 0; n < (int)(sizeof(cqs) / sizeof(cqs[0])); n++) {
		errno = 0;
		cqs[n] = ibv_create_cq(ctx, MEMCG_RING_CQE, NULL, NULL, 0);
		if (!cqs[n]) {
			r.small_errno = errno;
			break;
		}
	}
	r.small_cqs = n;
	/* Leave the process a page or two to run in while the parent looks. */
	if (n)
		ibv_destroy_cq(cqs[--n]);
	r.held = n;
report:
	if (write(wfd, &r, sizeof(r)) != sizeof(r))
		_exit(2);
	if (read(rfd, pid, 1) != 1)
		_exit(2);
	for (i = 0; i < n; i++)
		ibv_destroy_cq(cqs[i]);
	_exit(0);

fail:
	child_sync(wfd, rfd, 'F');
	goto report;
}

FIXTURE(memcg) {
	char cgroup[128];
	bool made;
};

FIXTURE_SETUP(memcg)
{
}

FIXTURE_TEARDOWN(memcg)
{
	int i;

	/* A cgroup goes once its last page is uncharged: try for a while. */
	for (i = 0; self->made && i < 50 && rmdir(self->cgroup); i++)
		usleep(100000);
}

/* cgroup2 with the memory controller at CGROUP_ROOT; 0, or a skip reason. */
static const char *memcg_prepare(void)
{
	char controllers[512] = "";
	FILE *f;

	if (access(CGROUP_ROOT "/cgroup.controllers", F_OK) &&
	    mount("none", CGROUP_ROOT, "cgroup2", 0, NULL))
		return "cannot mount cgroup2";
	f = fopen(CGROUP_ROOT "/cgroup.controllers", "r");
	if (!f)
		return "no cgroup.controllers";
	if (!fgets(controllers, sizeof(controllers), f))
		controllers[0] = '\0';
	fclose(f);
	if (!strstr(controllers, "memory"))
		return "no memory controller";
	if (write_file(CGROUP_ROOT "/cgroup.subtree_control", "+memory"))
		return "cannot enable the memory controller";
	return NULL;
}

TEST_F_TIMEOUT(memcg, rings_are_charged_to_the_creator, 280)
{
	struct memcg_result r;
	char path[256], value[32];
	long long base, loaded, now = -1;
	int to_child[2], from_child[2], status, kmsg, i;
	const char *skip;
	pid_t pid;
	char c;

	if (!srx_test_is_srx())
		SKIP(return, "srx-specific (device %s)", srx_test_dev_name());
	skip = memcg_prepare();
	if (skip)
		SKIP(return, "%s", skip);

	snprintf(self->cgroup, sizeof(self->cgroup), "%s/srx-memcg-%d",
		 CGROUP_ROOT, getpid());
	ASSERT_EQ(0, mkdir(self->cgroup, 0755));
	self->made = true;
	snprintf(path, sizeof(path), "%s/memory.max", self->cgroup);
	snprintf(value, sizeof(value), "%d", MEMCG_LIMIT);
	ASSERT_EQ(0, write_file(path, value));
	snprintf(path, sizeof(path), "%s/memory.swap.max", self->cgroup);
	write_file(path, "0");	/* absent without swap accounting */
	snprintf(path, sizeof(path), "%s/memory.current", self->cgroup);

	kmsg = srx_kmsg_open();
	ASSERT_LE(0, kmsg);
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(from_child));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(to_child[1]);
		close(from_child[0]);
		memcg_child(self->cgroup, from_child[1], to_child[0]);
	}
	close(to_child[0]);
	close(from_child[1]);

	/* 'R': the child opened the device; 'F': it failed to. */
	ASSERT_EQ(1, read(from_child[0], &c, 1));
	base = read_ll(path);
	ASSERT_EQ(1, write(to_child[1], "G", 1));
	ASSERT_EQ((ssize_t)sizeof(r), read(from_child[0], &r, sizeof(r)));
	loaded = read_ll(path);
	ASSERT_EQ(1, write(to_child[1], "D", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ('R', c) TH_LOG("child: %s", r.what);
	ASSERT_STREQ("", r.what);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
		TH_LOG("child status %#x", status);

	/* Uncharging can lag behind the exit (RCU-freed objects). */
	for (i = 0; i < 50; i++) {
		now = read_ll(path);
		if (now <= base + MEMCG_SLACK)
			break;
		usleep(100000);
	}
	TH_LOG("memory.max %d MiB: baseline %lld kB, holding %d CQs of 1 MiB %lld kB, after exit %lld kB",
	       MEMCG_LIMIT / MIB, base / 1024, r.held, loaded / 1024,
	       now / 1024);
	TH_LOG("max_cqe CQ: %s; max QP: %s; resize PREPARE to max_cqe: %s (cqe %d after); small CQs: %d, then %s",
	       strerror(r.big_cq_errno), strerror(r.big_qp_errno),
	       strerror(r.prepare_errno), r.prepare_cqe, r.small_cqs,
	       strerror(r.small_errno));

	TH_LOG("QP of %d WRs of max_sge SGEs each way: %s, charged %lld kB for %lld kB of rings and %lld kB of private SGE arrays",
	       MEMCG_QP_WR, strerror(r.qp_errno),
	       r.qp_charged / 1024, r.qp_rings / 1024, r.qp_sges / 1024);

	EXPECT_EQ(ENOMEM, r.big_cq_errno);
	EXPECT_EQ(ENOMEM, r.big_qp_errno);
	EXPECT_EQ(0, r.qp_errno);
	EXPECT_LT(0, r.qp_rings);
	EXPECT_LE(MEMCG_QP_WR * 2LL * (long long)sizeof(struct srx_sge), r.qp_sges);
	EXPECT_GE(r.qp_charged, r.qp_rings + r.qp_sges);
	/*
	 * And not much more: at max_sge an entry's fixed part is well under
	 * half its SGE array. Memory rounded up to a power of two of pages
	 * (kmalloc) would be charged 8 MiB here for 4.4 MiB of entries.
	 */
	EXPECT_LE(r.qp_charged, r.qp_rings + r.qp_sges * 3 / 2);
	EXPECT_EQ(ENOMEM, r.prepare_errno);
	EXPECT_GE(r.prepare_cqe, 1);
	EXPECT_LT(r.prepare_cqe, MEMCG_RING_CQE);
	EXPECT_EQ(ENOMEM, r.small_errno);
	EXPECT_LE(r.small_cqs, MEMCG_LIMIT / MIB);
	EXPECT_GE(r.small_cqs, 1);
	/*
	 * Each CQ held is charged: a 1 MiB ring and a control page. (Not
	 * compared with the baseline: reclaim may have taken some of that.)
	 */
	EXPECT_GE(loaded, (long long)r.held * MIB);
	EXPECT_LE(now, base + MEMCG_SLACK);
	EXPECT_EQ(0, memcg_kmsg_bad(kmsg));
	close(kmsg);
}

TEST_HARNESS_MAIN
