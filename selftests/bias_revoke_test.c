// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Revoking a thread-safe CQ's bias when membarrier() fails (libsrx/cq.c,
 * "Biased polling"): the first thread to poll a CQ owns it, and the first
 * other consumer revokes that, with membarrier() or, where a seccomp
 * filter installed after the context was opened refuses it, by waiting
 * for the owner's acknowledgement. That wait must end even if the owner
 * never polls with ibv_poll_cq() again: because it exited, or because it
 * polls only through cq_ex. Every test runs under the harness timeout, so
 * a revoker that waits forever is a failure, not a hang.
 */
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "srx_test.h"

#define COMPLETIONS 4

/*
 * From here on, membarrier() fails with EPERM in this process, as under a
 * seccomp filter installed after the context was opened (which registered
 * for membarrier()).
 */
static int refuse_membarrier(void)
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

struct owner {
	struct ibv_cq *cq;
	struct ibv_cq_ex *ex;		/* set: poll only through it once owner */
	atomic_int taken;
	atomic_bool owned;
	atomic_bool stop;
};

/* Become the CQ's owner by polling it, then (ex set) poll through cq_ex. */
static void *owner_fn(void *arg)
{
	struct ibv_poll_cq_attr pattr = {};
	struct owner *o = arg;
	struct ibv_wc wc;

	while (ibv_poll_cq(o->cq, 1, &wc) == 0 && !atomic_load(&o->stop))
		;
	atomic_fetch_add(&o->taken, 1);
	atomic_store(&o->owned, true);
	while (o->ex && !atomic_load(&o->stop)) {
		if (!ibv_start_poll(o->ex, &pattr)) {
			atomic_fetch_add(&o->taken, 1);
			ibv_end_poll(o->ex);
		}
		usleep(1000);
	}
	return NULL;
}

FIXTURE(revoke) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *ex;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_VARIANT(revoke) {
	bool owner_exits;	/* else it stays, polling through cq_ex */
};

FIXTURE_VARIANT_ADD(revoke, owner_exited) { .owner_exits = true };
FIXTURE_VARIANT_ADD(revoke, owner_polls_cq_ex) { .owner_exits = false };

FIXTURE_SETUP(revoke)
{
	struct ibv_cq_init_attr_ex attr = { .cqe = 64 };

	if (!srx_test_is_srx())
		SKIP(return, "biased polling is libsrx's");
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->ex = ibv_create_cq_ex(self->ctx, &attr);
	ASSERT_NE(NULL, self->ex);
	self->cq = ibv_cq_ex_to_cq(self->ex);
	ASSERT_EQ(0, srx_flusher_create(&self->f, self->pd, self->cq,
					self->cq, 16));
}

FIXTURE_TEARDOWN(revoke)
{
	srx_flusher_destroy(&self->f);
	if (self->cq)
		ibv_destroy_cq(self->cq);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/*
 * The second consumer's first ibv_poll_cq() revokes the bias and must
 * return; then the two together take every completion exactly once.
 */
TEST_F_TIMEOUT(revoke, second_poller_returns_without_membarrier, 60)
{
	struct owner o = { .cq = self->cq };
	struct ibv_wc wc;
	pthread_t t;
	int ret, n = 0;

	ret = refuse_membarrier();
	ASSERT_EQ(0, ret) TH_LOG("seccomp: %s", strerror(ret));
	if (!variant->owner_exits)
		o.ex = self->ex;
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 1, COMPLETIONS));

	ASSERT_EQ(0, pthread_create(&t, NULL, owner_fn, &o));
	if (variant->owner_exits) {
		ASSERT_EQ(0, pthread_join(t, NULL));
	} else {
		while (!atomic_load(&o.owned))
			usleep(1000);
	}

	while (n + atomic_load(&o.taken) < COMPLETIONS)
		n += ibv_poll_cq(self->cq, 1, &wc) > 0;
	atomic_store(&o.stop, true);
	if (!variant->owner_exits)
		ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(COMPLETIONS, n + atomic_load(&o.taken));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

TEST_HARNESS_MAIN
