// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Revoking a thread-safe CQ's bias when membarrier() fails (libsrx/cq.c,
 * "Biased polling"): the first thread to poll a CQ owns it, and the first
 * other consumer revokes that, with membarrier() or, where a seccomp
 * filter installed after the context was opened refuses it, by waiting
 * for the owner's acknowledgement. That wait must end even if the owner
 * never polls with ibv_poll_cq() again: because it exited (also when a
 * newer thread took its thread id), because it polls only through cq_ex,
 * or because it is blocked in a system call: in ibv_get_cq_event() waiting
 * for work the revoker would post, or on the resize mutex the revoker
 * holds. Every test runs under the harness timeout, so a revoker that
 * waits forever is a failure, not a hang.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "srx_test.h"

#define COMPLETIONS 4

enum owner_does {
	OWNER_EXITS,		/* exits after becoming the owner */
	OWNER_POLLS_CQ_EX,	/* stays, polling only through cq_ex */
	OWNER_SLEEPS,		/* blocks in ibv_get_cq_event() */
	OWNER_RESIZES,		/* calls ibv_resize_cq() during the revocation */
};

struct owner {
	struct ibv_cq *cq;
	struct ibv_cq_ex *ex;
	struct ibv_comp_channel *channel;
	enum owner_does does;
	pid_t tid;
	atomic_int taken;
	atomic_bool owned;
	atomic_bool go;			/* OWNER_RESIZES: the revoker starts */
	atomic_bool stop;
	int ret;			/* of the owner's last verb */
};

/* Become the CQ's owner by polling it, then do what o->does says. */
static void *owner_fn(void *arg)
{
	struct ibv_poll_cq_attr pattr = {};
	struct owner *o = arg;
	struct ibv_cq *ev_cq;
	struct ibv_wc wc;
	void *ev_ctx;

	o->tid = (pid_t)syscall(SYS_gettid);
	while (ibv_poll_cq(o->cq, 1, &wc) == 0 && !atomic_load(&o->stop))
		;
	atomic_fetch_add(&o->taken, 1);
	switch (o->does) {
	case OWNER_EXITS:
		break;
	case OWNER_POLLS_CQ_EX:
		atomic_store(&o->owned, true);
		while (!atomic_load(&o->stop)) {
			if (!ibv_start_poll(o->ex, &pattr)) {
				atomic_fetch_add(&o->taken, 1);
				ibv_end_poll(o->ex);
			}
			usleep(1000);
		}
		break;
	case OWNER_SLEEPS:
		/* CQEs are still pending: only a new one raises the event. */
		o->ret = ibv_req_notify_cq(o->cq, 0);
		atomic_store(&o->owned, true);
		if (o->ret)
			break;
		o->ret = ibv_get_cq_event(o->channel, &ev_cq, &ev_ctx) ? errno : 0;
		if (!o->ret)
			ibv_ack_cq_events(ev_cq, 1);
		break;
	case OWNER_RESIZES:
		atomic_store(&o->owned, true);
		while (!atomic_load(&o->go))
			usleep(1000);
		/* Let the revoker take the resize mutex first. */
		usleep(200 * 1000);
		o->ret = ibv_resize_cq(o->cq, 256);
		break;
	}
	return NULL;
}

/* Spins (never entering the kernel for long) until told to stop. */
struct spinner {
	pid_t tid;
	atomic_bool stop;
};

static void *spinner_fn(void *arg)
{
	struct spinner *s = arg;

	__atomic_store_n(&s->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!atomic_load(&s->stop))
		;
	return NULL;
}

/*
 * Start a spinner whose thread id is @tid, free again since its thread
 * exited: ns_last_pid (checkpoint/restore, needs CAP_SYS_ADMIN) hands out
 * the id after the one written, if no other task takes it first.
 * Returns 0 or an errno value.
 */
static int spin_on_tid(pid_t tid, struct spinner *s, pthread_t *t)
{
	int tries, fd, ret = EAGAIN;
	char buf[32];

	fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (flock(fd, LOCK_EX)) {
		ret = errno;
		goto out;
	}
	for (tries = 0; tries < 100 && ret == EAGAIN; tries++) {
		int len = snprintf(buf, sizeof(buf), "%d", (int)tid - 1);

		if (pwrite(fd, buf, len, 0) != len) {
			ret = errno;
			break;
		}
		atomic_store(&s->stop, false);
		s->tid = 0;
		ret = pthread_create(t, NULL, spinner_fn, s);
		if (ret)
			break;
		while (!__atomic_load_n(&s->tid, __ATOMIC_ACQUIRE))
			;
		if (s->tid == tid)
			ret = 0;
		else {
			atomic_store(&s->stop, true);
			pthread_join(*t, NULL);
			ret = EAGAIN;
		}
	}
out:
	close(fd);
	return ret;
}

FIXTURE(revoke) {
	struct ibv_context *ctx;
	struct ibv_comp_channel *channel;
	struct ibv_pd *pd;
	struct ibv_cq_ex *ex;
	struct ibv_cq *cq;
	struct srx_flusher f;
};

FIXTURE_VARIANT(revoke) {
	enum owner_does does;
	bool tid_reused;	/* OWNER_EXITS: a newer thread takes its id */
	bool revoke_by_resize;	/* else by ibv_poll_cq() */
};

FIXTURE_VARIANT_ADD(revoke, owner_exited) { .does = OWNER_EXITS };
FIXTURE_VARIANT_ADD(revoke, owner_exited_tid_reused) {
	.does = OWNER_EXITS, .tid_reused = true,
};
FIXTURE_VARIANT_ADD(revoke, owner_polls_cq_ex) { .does = OWNER_POLLS_CQ_EX };
FIXTURE_VARIANT_ADD(revoke, owner_in_get_cq_event) { .does = OWNER_SLEEPS };
FIXTURE_VARIANT_ADD(revoke, owner_in_get_cq_event_resize) {
	.does = OWNER_SLEEPS, .revoke_by_resize = true,
};
FIXTURE_VARIANT_ADD(revoke, owner_waits_for_resize_mutex) {
	.does = OWNER_RESIZES, .revoke_by_resize = true,
};

FIXTURE_SETUP(revoke)
{
	struct ibv_cq_init_attr_ex attr = { .cqe = 64 };

	if (!srx_test_is_srx())
		SKIP(return, "biased polling is libsrx's");
	self->ctx = srx_test_open();
	ASSERT_NE(NULL, self->ctx);
	self->channel = ibv_create_comp_channel(self->ctx);
	ASSERT_NE(NULL, self->channel);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	attr.channel = self->channel;
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
	if (self->channel)
		ibv_destroy_comp_channel(self->channel);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

/*
 * The second consumer's first ibv_poll_cq() or ibv_resize_cq() revokes the
 * bias and must return; then the two together take every completion
 * exactly once.
 */
TEST_F_TIMEOUT(revoke, second_consumer_returns_without_membarrier, 60)
{
	struct owner o = {
		.cq = self->cq, .ex = self->ex, .channel = self->channel,
		.does = variant->does,
	};
	struct spinner s = {};
	pthread_t t, st;
	int ret, total = COMPLETIONS, n = 0;
	struct ibv_wc wc;

	ret = srx_refuse_membarrier();
	ASSERT_EQ(0, ret) TH_LOG("seccomp: %s", strerror(ret));
	ASSERT_EQ(0, srx_flush_recvs(&self->f, 1, COMPLETIONS));

	ASSERT_EQ(0, pthread_create(&t, NULL, owner_fn, &o));
	if (variant->does == OWNER_EXITS) {
		ASSERT_EQ(0, pthread_join(t, NULL));
		if (variant->tid_reused) {
			ret = spin_on_tid(o.tid, &s, &st);
			ASSERT_EQ(0, ret)
				TH_LOG("reusing tid %d: %s", o.tid, strerror(ret));
		}
	} else {
		while (!atomic_load(&o.owned))
			usleep(1000);
	}

	if (variant->revoke_by_resize) {
		atomic_store(&o.go, true);
		EXPECT_EQ(0, ibv_resize_cq(self->cq, 128));
	}
	while (n + atomic_load(&o.taken) < COMPLETIONS)
		n += ibv_poll_cq(self->cq, 1, &wc) > 0;
	atomic_store(&o.stop, true);
	if (variant->does == OWNER_SLEEPS) {
		/* the event that wakes the owner */
		ASSERT_EQ(0, srx_flush_recvs(&self->f, COMPLETIONS + 1, 1));
		total++;
	}
	if (variant->does != OWNER_EXITS)
		ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, o.ret) TH_LOG("owner: %s", strerror(o.ret));
	if (variant->tid_reused) {
		atomic_store(&s.stop, true);
		ASSERT_EQ(0, pthread_join(st, NULL));
	}
	n += srx_wait_cqes(self->cq, NULL, total - n - atomic_load(&o.taken),
			   5000);
	EXPECT_EQ(total, n + atomic_load(&o.taken));
	EXPECT_EQ(0, ibv_poll_cq(self->cq, 1, &wc));
}

TEST_HARNESS_MAIN
