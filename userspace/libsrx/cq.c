// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: creation and destruction (uverbs ioctls), the poll and
 * arm fast path (shared memory only, no system call, no lock), the cq_ex
 * polling interface, and resize.
 *
 * The ring protocol is in cq_ring.h, its memory ordering in barrier.h and
 * include/uapi/rdma/srx-abi.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cqe_wc.h"
#include "srx.h"

/* What srx can fill in of a cq_ex completion (ibv_create_cq_ex(3)). */
#define SRX_WC_EX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			 IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			 IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			 IBV_WC_EX_WITH_DLID_PATH_BITS)
#define SRX_CQ_CREATE_FLAGS (IBV_CREATE_CQ_ATTR_SINGLE_THREADED | \
			     IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

/*
 * A point where selftests/host/cq_resize_test.c, which compiles this file
 * into itself, stops a thread to hold a race window open. Nothing here.
 */
#ifndef SRX_CQ_TEST_POINT
#define SRX_CQ_TEST_POINT(where) do { } while (0)
#endif

static inline struct srx_cq *to_scq_ex(struct ibv_cq_ex *ex)
{
	return VERBS_PRIV_CONTAINER(ex, struct srx_cq, vcq.cq_ex);
}

/*
 * One round of waiting for another thread that is about to finish (a
 * resize publishing its ring, an end_poll): spin briefly, then yield, in
 * case that thread was preempted on this CPU.
 */
static inline void srx_backoff(unsigned int *spins)
{
	if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#elif defined(__aarch64__)
		/*
		 * yield is a hint most arm64 cores execute as a no-op; isb
		 * waits for the pipeline to drain, a pause of the order of
		 * x86's.
		 */
		__asm__ volatile("isb" ::: "memory");
#endif
	} else {
		sched_yield();
	}
}

/* ------------------------------------------------------------------ */
/* Rings                                                              */
/* ------------------------------------------------------------------ */

static int srx_cq_map_ring(struct ibv_context *ctx,
			   const struct srx_cq_layout *layout,
			   struct srx_cq_ring **out)
{
	struct srx_cq_ring *ring;
	void *base;

	if (!srx_cq_layout_ok(layout))
		return EPROTO;

	ring = calloc(1, sizeof(*ring));
	if (!ring)
		return ENOMEM;

	base = mmap(NULL, layout->mmap_length, PROT_READ | PROT_WRITE,
		    MAP_SHARED, ctx->cmd_fd, layout->mmap_offset);
	if (base == MAP_FAILED) {
		int err = errno;

		free(ring);
		return err;
	}
	ring->base = base;
	ring->len = layout->mmap_length;
	srx_cq_view_init(&ring->view, base, layout);
	ring->view.wc_conv = to_sctx(ctx)->wc_conv;
	*out = ring;
	return 0;
}

static void srx_cq_unmap_ring(struct srx_cq_ring *ring)
{
	munmap(ring->base, ring->len);
	free(ring);
}

/* ------------------------------------------------------------------ */
/* Per-thread state                                                   */
/* ------------------------------------------------------------------ */

/*
 * What libsrx keeps per thread: its hazard slot (Retired rings) and the
 * CQs it owns (Biased polling). It is thread-local, and listed
 * process-wide so that a resizer can read the slots. A thread enlists on
 * its first hold of a ring or ownership of a CQ, and leaves when it exits:
 * a pthread key's destructor, which runs in the exiting thread while its
 * thread-local storage is still there and before its descriptor can be
 * reused. A thread that leaves without running destructors (the raw exit
 * system call) is outside what pthreads supports. Providers are never
 * unloaded, so the destructor outlives every thread.
 *
 * On its way out, an owner acknowledges, in its place, a revocation of
 * every CQ it still owns, and revokes those not yet revoked: a revoker then
 * need not wait for it, and a newer thread that inherits its thread pointer
 * (glibc reuses a joined thread's stack and descriptor) or its tid does not
 * inherit the bias.
 *
 * srx_threads_lock protects the list, every thread's owned list and the
 * owned_* links of every CQ. All rare: a thread's first hold, the poll that
 * makes it an owner, its exit, a CQ's destroy, a resize that frees rings.
 */
struct srx_thread {
	_Atomic(struct srx_cq_ring *) ring;	/* hazard slot; its thread writes */
	struct srx_cq *owned;			/* under srx_threads_lock */
	struct srx_thread *next;		/* under srx_threads_lock */
	bool tried;				/* its thread only: enlisting */
	bool listed;				/* its thread only: and it worked */
};

/* initial-exec: one %fs-relative store per poll, not a __tls_get_addr call */
static __thread struct srx_thread srx_self
	__attribute__((tls_model("initial-exec")));

static pthread_mutex_t srx_threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srx_thread *srx_threads;		/* under srx_threads_lock */
static pthread_once_t srx_thread_once = PTHREAD_ONCE_INIT;
static pthread_key_t srx_thread_key;
/* Some thread could not be listed: never free a ring early. */
static atomic_bool srx_threads_broken;

static void srx_thread_exit(void *arg)
{
	struct srx_thread *t = arg, **p;
	struct srx_cq *cq, *next;

	pthread_mutex_lock(&srx_threads_lock);
	for (p = &srx_threads; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	for (cq = t->owned; cq; cq = next) {
		next = cq->owned_next;
		atomic_store_explicit(&cq->bias_revoked, true,
				      memory_order_seq_cst);
		/* after its last store of the consumer word */
		atomic_store_explicit(&cq->owner_acked, true,
				      memory_order_release);
		cq->owned_next = NULL;
		cq->owned_pprev = NULL;
	}
	t->owned = NULL;
	pthread_mutex_unlock(&srx_threads_lock);
}

static void srx_thread_make_key(void)
{
	if (pthread_key_create(&srx_thread_key, srx_thread_exit))
		atomic_store(&srx_threads_broken, true);
}

static __attribute__((noinline)) void srx_thread_enlist(void)
{
	struct srx_thread *t = &srx_self;

	t->tried = true;	/* even if it fails: do not try again */
	pthread_once(&srx_thread_once, srx_thread_make_key);
	if (atomic_load(&srx_threads_broken))
		return;
	pthread_mutex_lock(&srx_threads_lock);
	t->next = srx_threads;
	srx_threads = t;
	pthread_mutex_unlock(&srx_threads_lock);
	if (pthread_setspecific(srx_thread_key, t)) {
		/* would leave the list only when the process exits */
		atomic_store(&srx_threads_broken, true);
		srx_thread_exit(t);
		return;
	}
	t->listed = true;
}

/* The calling thread's state if it is listed (enlisting it), else NULL. */
static inline struct srx_thread *srx_thread_self(void)
{
	if (__builtin_expect(!srx_self.tried, 0))
		srx_thread_enlist();
	return srx_self.listed ? &srx_self : NULL;
}

/* @cq's new owner @t lists it, for its exit. */
static void srx_thread_own(struct srx_thread *t, struct srx_cq *cq)
{
	pthread_mutex_lock(&srx_threads_lock);
	cq->owned_next = t->owned;
	if (t->owned)
		t->owned->owned_pprev = &cq->owned_next;
	cq->owned_pprev = &t->owned;
	t->owned = cq;
	pthread_mutex_unlock(&srx_threads_lock);
}

/* A destroyed CQ leaves its owner's list (if its owner still lives). */
static void srx_thread_disown(struct srx_cq *cq)
{
	pthread_mutex_lock(&srx_threads_lock);
	if (cq->owned_pprev) {
		*cq->owned_pprev = cq->owned_next;
		if (cq->owned_next)
			cq->owned_next->owned_pprev = cq->owned_pprev;
		cq->owned_next = NULL;
		cq->owned_pprev = NULL;
	}
	pthread_mutex_unlock(&srx_threads_lock);
}

/* ------------------------------------------------------------------ */
/* Retired rings                                                      */
/* ------------------------------------------------------------------ */

/*
 * After a resize of a thread-safe CQ, other threads may still be reading
 * the old ring: its srx_cq_ring and its mapping. Each thread that reads a
 * thread-safe CQ's ring through cq->ring first announces it in a hazard
 * slot of its own (srx_cq_hold_ring()), and clears the slot when its call
 * returns; a thread reads one ring at a time. The resizer, after
 * publishing the new ring, frees every retired ring no slot names.
 *
 * The announcement and the check are Dekker's handshake again, with the
 * same asymmetric halves as biased polling (barrier.h): the poller stores
 * its slot and reloads cq->ring with only a compiler barrier between; the
 * resizer stores cq->ring and calls membarrier() before it reads the
 * slots. So either the poller's reload finds the new ring (and it moves
 * its slot there), or the resizer finds the slot naming the old ring and
 * keeps it, until a later resize (or destroy) finds it free. Where
 * membarrier() was refused when the context opened, the poller pays a
 * full fence instead (hazard_fence); where it fails later, the resize
 * frees nothing and a later one tries again.
 *
 * A thread's slot is its srx_thread's (below). If the thread cannot be
 * listed, no ring is ever freed before destroy, which is what srx did
 * before hazard slots.
 */

/* The current ring of a thread-safe @cq, held until srx_cq_drop_ring(). */
static inline struct srx_cq_ring *srx_cq_hold_ring(struct srx_cq *cq)
{
	struct srx_cq_ring *ring, *now;

	if (__builtin_expect(!srx_self.tried, 0))
		srx_thread_enlist();
	now = atomic_load_explicit(&cq->ring, memory_order_acquire);
	do {
		ring = now;
		atomic_store_explicit(&srx_self.ring, ring,
				      memory_order_relaxed);
		if (cq->hazard_fence)
			atomic_thread_fence(memory_order_seq_cst);
		else
			srx_owner_fence();
		now = atomic_load_explicit(&cq->ring, memory_order_acquire);
	} while (now != ring);
	return ring;
}

/* Every read of the held ring is done before a resizer sees it free. */
static inline void srx_cq_drop_ring(void)
{
	atomic_store_explicit(&srx_self.ring, NULL, memory_order_release);
}

static bool srx_ring_held(const struct srx_cq_ring *ring)
{
	const struct srx_thread *t;

	for (t = srx_threads; t; t = t->next)
		if (atomic_load_explicit(&t->ring, memory_order_acquire) ==
		    ring)
			return true;
	return false;
}

/* Free the retired rings of @cq that no thread holds. Under resize_mutex. */
static void srx_cq_reclaim(struct srx_cq *cq)
{
	struct srx_cq_ring **p = &cq->retired, *ring;

	if (!cq->retired || atomic_load(&srx_threads_broken))
		return;
	/* the other half of srx_cq_hold_ring()'s handshake */
	if (cq->hazard_fence)
		atomic_thread_fence(memory_order_seq_cst);
	else if (!srx_membarrier())
		return;
	pthread_mutex_lock(&srx_threads_lock);
	while ((ring = *p)) {
		if (srx_ring_held(ring)) {
			p = &ring->retired_next;
			continue;
		}
		*p = ring->retired_next;
		srx_cq_unmap_ring(ring);
	}
	pthread_mutex_unlock(&srx_threads_lock);
}

/*
 * Take @old out of service after a resize switched to a new ring. With a
 * single thread nobody else can be looking at it. Otherwise another poller
 * may still hold the pointer: put a placeholder that reads as a sealed ring
 * over the mapping (srx_cq_put_placeholder()), which gives the kernel's
 * pages back at once, and keep the address range until no thread holds
 * the ring (srx_cq_reclaim(), now or at a later resize) or the CQ is
 * destroyed.
 */
static void srx_cq_retire_ring(struct srx_cq *cq, struct srx_cq_ring *old)
{
	if (cq->single_threaded) {
		srx_cq_unmap_ring(old);
		return;
	}
	srx_cq_put_placeholder(old->base, old->len,
			       (char *)old->view.cons - (char *)old->base);
	old->retired_next = cq->retired;
	cq->retired = old;
	srx_cq_reclaim(cq);
}

/*
 * @ring was sealed under a poller or an arming thread. If a resize of this
 * process is under way, wait (briefly: the resizing thread publishes the new
 * ring right after its system call returns) until the seal is gone or the
 * ring was replaced, and return true to retry. A clean of a reset QP's
 * CQEs seals the same ring and sets resizing too. A seal with neither in
 * progress was written by the process itself: return false.
 *
 * "No resize in progress" is not enough on its own: between the check that
 * @ring is still current and the load of resizing, the whole resize can
 * finish (publish the new ring, clear resizing), and the seal is then the
 * kernel's after all. The resizer publishes ring before it clears resizing,
 * both with release, so once resizing reads false (acquire) a replaced
 * ring is visible: look again.
 */
static bool srx_cq_wait_resize(struct srx_cq *cq, struct srx_cq_ring *ring)
{
	uint32_t gen = atomic_load_explicit(&cq->seal_gen,
					    memory_order_acquire), now;
	unsigned int spins = 0;

	while (atomic_load_explicit(&cq->ring, memory_order_acquire) == ring &&
	       srx_cq_sealed(&ring->view)) {
		SRX_CQ_TEST_POINT(WAIT_SEALED);
		if (atomic_load_explicit(&cq->resizing, memory_order_acquire)) {
			srx_backoff(&spins);
			continue;
		}
		SRX_CQ_TEST_POINT(WAIT_IDLE);
		/*
		 * A clean (srx_cq_clean_qp()) keeps the ring and unseals it
		 * before it clears resizing: unsealed now, look again. Still
		 * sealed, the seal is the process's own unless a clean or a
		 * resize began meanwhile: each counts itself in seal_gen
		 * before it seals, so a seal seen here that was put after
		 * the first load of seal_gen shows as a new count.
		 */
		if (atomic_load_explicit(&cq->ring, memory_order_relaxed) !=
		    ring || !srx_cq_sealed(&ring->view))
			return true;
		now = atomic_load_explicit(&cq->seal_gen, memory_order_acquire);
		if (now == gen)
			return false;
		gen = now;
	}
	return true;
}

/* ------------------------------------------------------------------ */
/* Biased polling                                                     */
/* ------------------------------------------------------------------ */

/*
 * Taking CQEs from a thread-safe CQ costs one atomic read-modify-write per
 * ibv_poll_cq() (the compare-and-swap of srx_cq_poll_wc()), paid in case
 * another thread polls at the same moment. Most CQs are only ever polled
 * by one thread. So the first thread to poll a CQ becomes its owner and
 * polls it as a SINGLE_THREADED CQ is polled: plain loads and one release
 * store of the consumer word. The first time any other thread consumes
 * from the CQ (ibv_poll_cq(), a cq_ex start_poll, a resize), it revokes
 * the bias, once and for the CQ's lifetime, and from then on every poll
 * compare-and-swaps.
 *
 * Revoking is Dekker's handshake with the owner's half made free. The
 * owner stores owner_busy, then, with only a compiler barrier between,
 * loads bias_revoked. The revoker stores bias_revoked, then calls
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which runs a full memory
 * barrier on every CPU that is running a thread of this process
 * (membarrier(2)): after it, either the owner's next poll sees
 * bias_revoked, or the revoker sees owner_busy and waits until it clears,
 * when the owner's last store of the consumer word is visible. One system
 * call per CQ, in the thread that revokes; the owner never pays one.
 *
 * If membarrier() fails although the context registered for it (a seccomp
 * filter installed since), the revoker waits instead until the owner
 * acknowledges the revocation: in its next ibv_poll_cq(), or its next
 * cq_ex start_poll or resize (srx_cq_exclude_owner()), none of which it can
 * be inside while it acknowledges. An owner that never comes back must not
 * hang the revoker, which may hold the resize mutex:
 *  - one that exits acknowledges on its way out (srx_thread_exit(), a
 *    thread-exit hook), so neither its absence nor a newer thread that
 *    inherits its tid or thread pointer keeps anyone waiting;
 *  - one blocked in a system call (ibv_get_cq_event() waiting for work the
 *    revoker would post, the resize mutex, any sleep) is outside every
 *    biased poll, and the kernel's probe of that state orders it against
 *    the revoker: srx_cq_owner_blocked();
 *  - one that revokes its own bias (its poll found its word sealed by the
 *    process itself) is not inside a poll either and waits for nobody.
 * Still waited for: a live owner that keeps running in user space without
 * ever polling or blocking again, whose store buffer no system call of the
 * revoker's can drain without membarrier(); the revoker waits for it as it
 * would for a lock held by a busy thread.
 *
 * The owner is identified by its thread pointer, unique among live
 * threads, and gives up its bias when it exits (above), so a new thread
 * that inherits the pointer does not inherit the bias. A child process of
 * fork() shares the rings but not this state; as with other providers, it
 * must not poll its parent's CQs (mlx5 does not even map them into the
 * child).
 */

/*
 * Whether the owner of @cq is blocked in a system call outside any biased
 * poll, so that a revoker without membarrier() need not wait for it.
 *
 * /proc/PID/task/TID/syscall (fs/proc/base.c, proc_pid_syscall()) prints a
 * system call's number only if task_current_syscall() (lib/syscall.c) found
 * the thread blocked, not running, through wait_task_inactive()
 * (kernel/sched/core.c), twice with no context switch between; otherwise
 * "running", or "-1 ..." for a thread blocked in a fault or exception,
 * which a poll can take (its first touch of a CQE page): both answer "not
 * known". wait_task_inactive() takes the owner's task_rq_lock(), its
 * pi_lock and its runqueue lock, and that gives the two orderings the
 * handshake needs (citations from Linux 6.1):
 *  - the owner went to sleep in __schedule() under its runqueue lock and
 *    released it after finish_task()'s smp_store_release() of on_cpu, so
 *    everything it stored before the system call, its consumer word and
 *    owner_busy included, is visible to loads after this probe;
 *  - the owner runs again only after a try_to_wake_up(), which takes its
 *    pi_lock after this probe released it and orders the wake-up before
 *    what the owner does next ("Notes on Program-Order guarantees on SMP
 *    systems" in core.c), so its next poll sees bias_revoked, stored
 *    before this probe.
 * A biased poll makes no system call, so a thread blocked in one is not
 * inside a poll, unless a signal handler that interrupted a poll made the
 * call: owner_busy, loaded after the probe, says so, and the wait goes on.
 *
 * The tid is the owner's own while it lives; once it exits, its
 * srx_thread_exit() acknowledged first, so the revoker no longer probes it
 * and a newer thread with the same tid is never mistaken for it. errno is
 * kept: ibv_poll_cq() does not set it. Where /proc cannot be read (not
 * mounted, a seccomp filter) the answer is "not known" and the revoker
 * waits as before.
 */
static bool srx_cq_owner_blocked(struct srx_cq *cq)
{
	pid_t tid = atomic_load_explicit(&cq->owner_tid, memory_order_acquire);
	int saved = errno, fd;
	bool blocked = false;
	char path[64], buf[32];
	ssize_t len;

	if (!tid)
		return false;	/* between its exchange and storing its tid */
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		len = read(fd, buf, sizeof(buf) - 1);
		blocked = len > 0 && buf[0] >= '0' && buf[0] <= '9';
		close(fd);
	}
	errno = saved;
	return blocked &&
	       !atomic_load_explicit(&cq->owner_busy, memory_order_acquire);
}

static void srx_cq_revoke_bias(struct srx_cq *cq)
{
	void *self = __builtin_thread_pointer();
	unsigned int spins = 0;

	atomic_store_explicit(&cq->bias_revoked, true, memory_order_seq_cst);
	if (atomic_load_explicit(&cq->bias_owner, memory_order_relaxed) ==
	    self) {
		/* The owner itself, outside its polls: nobody to wait for. */
	} else if (srx_membarrier()) {
		while (atomic_load_explicit(&cq->owner_busy,
					    memory_order_acquire))
			srx_backoff(&spins);
	} else {
		/*
		 * A thread that becomes the owner after this load found none
		 * made its exchange after the store of bias_revoked above.
		 * That alone does not make it see the store: exchange then
		 * load against store then load is store buffering, which
		 * C11 allows to miss both ways, and an arm64 LL/SC loop
		 * without LSE can. So the new owner reloads bias_revoked
		 * with seq_cst after its exchange (srx_cq_own_or_revoke()),
		 * and one of the two sides sees the other (barrier.h).
		 * Whether the owner is blocked in a system call is probed at
		 * once and then every 64 rounds: a few system calls, and
		 * rarely needed.
		 */
		while (atomic_load_explicit(&cq->bias_owner,
					    memory_order_seq_cst) &&
		       !atomic_load_explicit(&cq->owner_acked,
					     memory_order_acquire) &&
		       (spins % 64 || !srx_cq_owner_blocked(cq)))
			srx_backoff(&spins);
	}
	atomic_store_explicit(&cq->bias_off, true, memory_order_release);
}

/*
 * @self is about to consume from @cq and is not its owner: become the owner
 * if there is none yet (return true), or revoke the bias (return false).
 *
 * Winning the exchange is not enough: a revoker without membarrier() may
 * have stored bias_revoked and then found no owner. Its store and load and
 * our exchange and the load of bias_revoked after it are a store-buffering
 * pair (barrier.h, "Biased polling"), so that load must be sequentially
 * consistent too; found set, the new owner acknowledges at once, as it has
 * not polled, and revokes with the rest.
 */
static __attribute__((noinline)) bool srx_cq_own_or_revoke(struct srx_cq *cq,
							   void *self)
{
	struct srx_thread *t;
	void *none = NULL;

	/* No owner that could not acknowledge its exit (srx_thread_exit()). */
	if (!atomic_load_explicit(&cq->bias_revoked, memory_order_relaxed) &&
	    (t = srx_thread_self()) &&
	    atomic_compare_exchange_strong_explicit(&cq->bias_owner, &none,
						    self, memory_order_seq_cst,
						    memory_order_relaxed)) {
		srx_thread_own(t, cq);
		atomic_store_explicit(&cq->owner_tid,
				      (pid_t)syscall(SYS_gettid),
				      memory_order_release);
		if (!atomic_load_explicit(&cq->bias_revoked,
					  memory_order_seq_cst))
			return true;
		atomic_store_explicit(&cq->owner_acked, true,
				      memory_order_release);
	}
	srx_cq_revoke_bias(cq);
	return false;
}

/*
 * Before a consumer other than ibv_poll_cq() touches the consumer word.
 * The owner itself is outside its biased polls here: if a revocation is
 * under way, it acknowledges it, so that an owner that polls only through
 * cq_ex does not keep a revoker without membarrier() waiting.
 */
static void srx_cq_exclude_owner(struct srx_cq *cq)
{
	if (atomic_load_explicit(&cq->bias_off, memory_order_acquire))
		return;
	if (atomic_load_explicit(&cq->bias_owner, memory_order_relaxed) !=
	    __builtin_thread_pointer())
		srx_cq_revoke_bias(cq);
	else if (atomic_load_explicit(&cq->bias_revoked, memory_order_relaxed))
		atomic_store_explicit(&cq->owner_acked, true,
				      memory_order_release);
}

/*
 * The owner's poll. Nobody else writes the consumer word while the bias
 * holds, and the kernel seals it only in a resize, which another thread
 * does only after revoking, so the word is the owner's own index. A seal
 * found all the same was written by the process itself: the owner then
 * leaves the ring to the shared path as well. Returns -1 if the bias was
 * revoked or the word sealed.
 */
static inline int srx_cq_poll_owned(struct srx_cq *cq, int ne,
				    struct ibv_wc *wc)
{
	uint64_t word;
	uint32_t cons;
	int n = -1;

	atomic_store_explicit(&cq->owner_busy, true, memory_order_relaxed);
	srx_owner_fence();
	if (!atomic_load_explicit(&cq->bias_revoked, memory_order_relaxed)) {
		word = *cq->own_view.cons;
		cons = SRX_CONS_INDEX(word);
		if (!SRX_CONS_SEAL(word))
			n = ne == 1 ?
			    srx_cq_poll_one_wc_st(&cq->own_view, &cons, wc) :
			    srx_cq_poll_wc_st(&cq->own_view, &cons, ne, wc);
	} else {
		atomic_store_explicit(&cq->owner_acked, true,
				      memory_order_release);
	}
	atomic_store_explicit(&cq->owner_busy, false, memory_order_release);
	return n;
}

/* ------------------------------------------------------------------ */
/* ibv_poll_cq() and ibv_req_notify_cq()                              */
/* ------------------------------------------------------------------ */

/*
 * The two paths are separate functions so that each saves only the
 * registers it needs: under emulation every spill is a memory access.
 */
static __attribute__((noinline)) int srx_poll_cq_st(struct srx_cq *cq, int ne,
						    struct ibv_wc *wc)
{
	if (ne == 1)
		return srx_cq_poll_one_wc_st(&cq->own_view, &cq->cons, wc);
	return srx_cq_poll_wc_st(&cq->own_view, &cq->cons, ne, wc);
}

/* A ring sealed under us by a resize: wait for the new one, poll it. */
static __attribute__((noinline)) int srx_poll_cq_mt(struct srx_cq *cq, int ne,
						    struct ibv_wc *wc)
{
	for (;;) {
		struct srx_cq_ring *ring = srx_cq_hold_ring(cq);
		int n = ne == 1 ? srx_cq_poll_one_wc(&ring->view, wc) :
				  srx_cq_poll_wc(&ring->view, ne, wc);

		if (n == SRX_CQ_SEALED && srx_cq_wait_resize(cq, ring))
			continue;
		srx_cq_drop_ring();
		return n == SRX_CQ_SEALED ? 0 : n;
	}
}

/* Everything but the two one-completion paths of srx_poll_cq(). */
static __attribute__((noinline)) int srx_poll_cq_any(struct srx_cq *cq, int ne,
						     struct ibv_wc *wc)
{
	void *self = __builtin_thread_pointer();

	if (ne <= 0)
		return 0;
	if (cq->single_threaded)
		return srx_poll_cq_st(cq, ne, wc);
	for (;;) {
		if (atomic_load_explicit(&cq->bias_owner,
					 memory_order_relaxed) == self) {
			int n = srx_cq_poll_owned(cq, ne, wc);

			if (n >= 0)
				return n;
		}
		if (atomic_load_explicit(&cq->bias_off, memory_order_acquire) ||
		    !srx_cq_own_or_revoke(cq, self))
			return srx_poll_cq_mt(cq, ne, wc);
	}
}

/*
 * One completion at a time is what a latency-bound poller asks for, and
 * what costs the most per completion: those two paths are inline here, so
 * that they need no call and save no register on the stack (under
 * emulation every saved register is a memory access).
 */
int srx_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct srx_cq *cq = to_scq(ibcq);

	if (ne == 1) {
		/* a SINGLE_THREADED CQ never has an owner */
		if (atomic_load_explicit(&cq->bias_owner,
					 memory_order_relaxed) ==
		    __builtin_thread_pointer()) {
			int n = srx_cq_poll_owned(cq, 1, wc);

			if (n >= 0)
				return n;
		} else if (cq->single_threaded) {
			return srx_cq_poll_one_wc_st(&cq->own_view, &cq->cons,
						     wc);
		} else if (atomic_load_explicit(&cq->bias_off,
						memory_order_acquire)) {
			struct srx_cq_ring *ring = srx_cq_hold_ring(cq);
			int n = srx_cq_poll_one_wc(&ring->view, wc);

			srx_cq_drop_ring();
			if (n != SRX_CQ_SEALED)
				return n;
		}
	}
	return srx_poll_cq_any(cq, ne, wc);
}

int srx_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct srx_cq *cq = to_scq(ibcq);

	for (;;) {
		struct srx_cq_ring *ring = srx_cq_hold_ring(cq);
		uint32_t fired = srx_load_relaxed(ring->view.fired), prev, seq;

		if (cq->single_threaded) {
			prev = atomic_load_explicit(&cq->arm_seq,
						    memory_order_relaxed);
			seq = srx_arm_next(prev, fired);
			atomic_store_explicit(&cq->arm_seq, seq,
					      memory_order_relaxed);
		} else {
			prev = atomic_fetch_add_explicit(&cq->arm_seq, 1,
							 memory_order_relaxed);
			seq = srx_arm_next(prev, fired);
		}
		srx_cq_arm(&ring->view, seq, solicited_only);

		/*
		 * A resize may have sealed this ring before the kernel read
		 * the arm word, or replaced it altogether: then arm the ring
		 * that is current now. The fence in srx_cq_arm() orders these
		 * loads after the arm store.
		 */
		if (srx_cq_sealed(&ring->view) ?
		    !srx_cq_wait_resize(cq, ring) :
		    atomic_load_explicit(&cq->ring, memory_order_acquire) ==
		    ring)
			break;
	}
	srx_cq_drop_ring();
	return 0;
}

/* ------------------------------------------------------------------ */
/* cq_ex: start_poll / next_poll / end_poll / read_*                  */
/* ------------------------------------------------------------------ */

static inline void srx_ex_set_current(struct srx_cq *cq,
				      const struct srx_cqe *cqe)
{
	cq->cur = cqe;
	cq->vcq.cq_ex.wr_id = cqe->wr_id;
	cq->vcq.cq_ex.status = cqe->status;
}

/*
 * Single-threaded: the current CQE is read in place; the consumer index
 * advances privately and is published once, in end_poll.
 */
static int srx_start_poll_st(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct srx_cq *cq = to_scq_ex(ex);
	struct srx_cq_ring *ring =
		atomic_load_explicit(&cq->ring, memory_order_relaxed);

	if (attr->comp_mask)
		return EINVAL;
	if (!srx_cq_ready(&ring->view, cq->cons))
		return ENOENT;	/* the caller must not call end_poll */
	cq->ex_cons = cq->cons;
	cq->ex_open = true;
	srx_ex_set_current(cq, srx_cq_slot(&ring->view, cq->ex_cons));
	return 0;
}

static int srx_next_poll_st(struct ibv_cq_ex *ex)
{
	struct srx_cq *cq = to_scq_ex(ex);
	struct srx_cq_ring *ring =
		atomic_load_explicit(&cq->ring, memory_order_relaxed);

	if (!cq->cur)
		return ENOENT;
	cq->ex_cons++;		/* the current CQE is consumed */
	if (!srx_cq_ready(&ring->view, cq->ex_cons)) {
		cq->cur = NULL;	/* end_poll is still due */
		return ENOENT;
	}
	srx_ex_set_current(cq, srx_cq_slot(&ring->view, cq->ex_cons));
	return 0;
}

static void srx_end_poll_st(struct ibv_cq_ex *ex)
{
	struct srx_cq *cq = to_scq_ex(ex);
	struct srx_cq_ring *ring =
		atomic_load_explicit(&cq->ring, memory_order_relaxed);

	if (cq->cur)
		cq->ex_cons++;
	cq->cur = NULL;
	cq->ex_open = false;
	if (cq->ex_cons != cq->cons) {
		cq->cons = cq->ex_cons;
		srx_cq_release(&ring->view, cq->cons);
	}
}

/* Take one CQE into cur_copy: 1, 0 (none ready) */
static int srx_ex_take_one(struct srx_cq *cq)
{
	for (;;) {
		struct srx_cq_ring *ring = srx_cq_hold_ring(cq);
		int n = srx_cq_take(&ring->view, &cq->cur_copy, 1);

		if (n == SRX_CQ_SEALED && srx_cq_wait_resize(cq, ring))
			continue;
		srx_cq_drop_ring();
		return n == SRX_CQ_SEALED ? 0 : n;
	}
}

static void srx_ex_release_owner(struct srx_cq *cq)
{
	atomic_store_explicit(&cq->poll_owner, 0, memory_order_release);
}

/*
 * Multi-threaded: one start_poll..end_poll sequence owns the cq_ex fields
 * at a time (see struct srx_cq); each CQE is claimed with srx_cq_take(), so
 * ibv_poll_cq() callers proceed concurrently and lock-free.
 */
static int srx_start_poll_mt(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct srx_cq *cq = to_scq_ex(ex);
	unsigned int spins = 0;

	if (attr->comp_mask)
		return EINVAL;

	srx_cq_exclude_owner(cq);
	while (atomic_exchange_explicit(&cq->poll_owner, 1,
					memory_order_acquire))
		srx_backoff(&spins);

	if (!srx_ex_take_one(cq)) {
		srx_ex_release_owner(cq);	/* no end_poll will follow */
		return ENOENT;
	}
	srx_ex_set_current(cq, &cq->cur_copy);
	return 0;
}

static int srx_next_poll_mt(struct ibv_cq_ex *ex)
{
	struct srx_cq *cq = to_scq_ex(ex);

	if (!srx_ex_take_one(cq)) {
		cq->cur = NULL;
		return ENOENT;
	}
	srx_ex_set_current(cq, &cq->cur_copy);
	return 0;
}

static void srx_end_poll_mt(struct ibv_cq_ex *ex)
{
	struct srx_cq *cq = to_scq_ex(ex);

	cq->cur = NULL;
	srx_ex_release_owner(cq);
}

static enum ibv_wc_opcode srx_read_opcode(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->opcode;
}

static uint32_t srx_read_vendor_err(struct ibv_cq_ex *ex)
{
	return 0;
}

static uint32_t srx_read_byte_len(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->byte_len;
}

static __be32 srx_read_imm_data(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->ex;
}

static uint32_t srx_read_qp_num(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->qp_num;
}

static uint32_t srx_read_src_qp(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->src_qp;
}

static unsigned int srx_read_wc_flags(struct ibv_cq_ex *ex)
{
	return srx_cqe_wc_flags(to_scq_ex(ex)->cur);
}

static uint32_t srx_read_slid(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->slid;
}

static uint8_t srx_read_sl(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->sl;
}

static uint8_t srx_read_dlid_path_bits(struct ibv_cq_ex *ex)
{
	return to_scq_ex(ex)->cur->dlid_path_bits;
}

static void srx_cq_ex_init(struct srx_cq *cq)
{
	struct ibv_cq_ex *ex = &cq->vcq.cq_ex;

	if (cq->single_threaded) {
		ex->start_poll = srx_start_poll_st;
		ex->next_poll = srx_next_poll_st;
		ex->end_poll = srx_end_poll_st;
	} else {
		ex->start_poll = srx_start_poll_mt;
		ex->next_poll = srx_next_poll_mt;
		ex->end_poll = srx_end_poll_mt;
	}
	ex->read_opcode = srx_read_opcode;
	ex->read_vendor_err = srx_read_vendor_err;
	ex->read_wc_flags = srx_read_wc_flags;
	ex->read_byte_len = srx_read_byte_len;
	ex->read_imm_data = srx_read_imm_data;
	ex->read_qp_num = srx_read_qp_num;
	ex->read_src_qp = srx_read_src_qp;
	ex->read_slid = srx_read_slid;
	ex->read_sl = srx_read_sl;
	ex->read_dlid_path_bits = srx_read_dlid_path_bits;
}

/* ------------------------------------------------------------------ */
/* Create, destroy, resize                                            */
/* ------------------------------------------------------------------ */

/* Aligned to its cache lines (struct srx_cq); NULL with errno set. */
static struct srx_cq *srx_cq_alloc(void)
{
	struct srx_cq *cq = aligned_alloc(_Alignof(struct srx_cq), sizeof(*cq));
	int ret;

	if (!cq)
		return NULL;
	memset(cq, 0, sizeof(*cq));
	ret = pthread_mutex_init(&cq->resize_mutex, NULL);
	if (ret) {
		free(cq);
		errno = ret;	/* ibv_create_cq(3) reports errno */
		return NULL;
	}
	return cq;
}

static void srx_cq_free(struct srx_cq *cq)
{
	pthread_mutex_destroy(&cq->resize_mutex);
	free(cq);
}

/* Map the ring the kernel just created; on failure destroy the CQ again. */
static int srx_cq_attach_ring(struct srx_cq *cq, struct ibv_context *ctx,
			      const struct srx_cq_layout *layout)
{
	struct srx_cq_ring *ring;
	int ret;

	ret = srx_cq_map_ring(ctx, layout, &ring);
	if (ret) {
		ibv_cmd_destroy_cq(&cq->vcq.cq);
		return ret;
	}
	atomic_init(&cq->ring, ring);
	cq->own_view = ring->view;
	cq->cons = SRX_CONS_INDEX(srx_load_cons(ring->view.cons));
	/* Nothing to bias, or no way to revoke it. */
	if (cq->single_threaded || !to_sctx(ctx)->membarrier_ok) {
		atomic_init(&cq->bias_revoked, true);
		atomic_init(&cq->bias_off, true);
	}
	cq->hazard_fence = !to_sctx(ctx)->membarrier_ok;
	return 0;
}

struct ibv_cq *srx_create_cq(struct ibv_context *ctx, int cqe,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	struct usrx_create_cq_resp resp = {};
	struct usrx_create_cq cmd = {};
	struct srx_cq *cq;
	int ret;

	cq = srx_cq_alloc();
	if (!cq)
		return NULL;

	ret = ibv_cmd_create_cq(ctx, cqe, channel, comp_vector, &cq->vcq.cq,
				&cmd.ibv_cmd, sizeof(cmd), &resp.ibv_resp,
				sizeof(resp));
	if (ret)
		goto err_free;

	ret = srx_cq_attach_ring(cq, ctx, &resp.drv.ring);
	if (ret)
		goto err_free;
	return &cq->vcq.cq;

err_free:
	srx_cq_free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq_ex *srx_create_cq_ex(struct ibv_context *ctx,
				   struct ibv_cq_init_attr_ex *attr)
{
	struct usrx_create_cq_ex_resp resp = {};
	struct usrx_create_cq_ex cmd = {};
	struct srx_cq *cq;
	uint32_t flags = 0;
	int ret;

	if (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) {
		errno = EOPNOTSUPP;	/* parent domains: not supported */
		return NULL;
	}
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS)
		flags = attr->flags;
	if ((flags & ~SRX_CQ_CREATE_FLAGS) ||
	    (attr->wc_flags & ~(uint64_t)SRX_WC_EX_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}

	cq = srx_cq_alloc();
	if (!cq)
		return NULL;
	cq->single_threaded = flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED;

	ret = ibv_cmd_create_cq_ex(ctx, attr, &cq->vcq, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp), 0);
	if (ret)
		goto err_free;

	ret = srx_cq_attach_ring(cq, ctx, &resp.drv.ring);
	if (ret)
		goto err_free;
	srx_cq_ex_init(cq);
	return &cq->vcq.cq_ex;

err_free:
	srx_cq_free(cq);
	errno = ret;
	return NULL;
}

/*
 * On failure (EBUSY while a QP uses the CQ) nothing is touched: the CQ stays
 * mapped and fully usable.
 */
int srx_destroy_cq(struct ibv_cq *ibcq)
{
	struct srx_cq *cq = to_scq(ibcq);
	struct srx_cq_ring *ring, *next;
	int ret;

	ret = ibv_cmd_destroy_cq(ibcq);
	if (ret)
		return ret;

	srx_thread_disown(cq);
	srx_cq_unmap_ring(atomic_load_explicit(&cq->ring, memory_order_relaxed));
	for (ring = cq->retired; ring; ring = next) {
		next = ring->retired_next;
		srx_cq_unmap_ring(ring);
	}
	srx_cq_free(cq);
	return 0;
}

static int srx_resize_step(struct ibv_cq *ibcq, int cqe, enum srx_resize_op op,
			   struct srx_cq_layout *layout)
{
	struct usrx_resize_cq_resp resp = {};
	struct usrx_resize_cq cmd = {};
	int ret;

	cmd.drv.op = op;
	ret = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (!ret && layout)
		*layout = resp.drv.ring;
	return ret;
}

/*
 * A QP of @cq moved to RESET: drop its CQEs that are still to be polled, as
 * rdma-core's mlx5 provider does (mlx5_modify_qp() calls mlx5_cq_clean()),
 * so that what the QP does after RESET is not mistaken for what came
 * before. rdma-core's tests restate a failed QP this way and then expect
 * only new completions (tests/test_mr.py, restate_qps()). The kernel writes
 * nothing more of the QP once the modify has returned (design.md,
 * "Completions of a reset QP"). Only the consumers here can edit the ring,
 * and only between the consumer index and prod, where the kernel does not
 * write.
 *
 * Usually nothing of the QP is left: a look finds that without a lock or
 * a store. Otherwise, as resize does, other consumers are kept out: the
 * resize mutex, the bias revoked (for good; with no owner yet, so that no
 * thread becomes one meanwhile), resizing set, and the consumer word
 * sealed with SRX_CQ_CONS_CLEANING, the index kept in its low half, which
 * the kernel reads for its room and posters for their slots (U5). Pollers
 * that meet the seal wait for it to go (srx_cq_wait_resize()), and a poll
 * that copied CQEs before the seal fails its compare-and-swap. The
 * compacted range is published with the new index by a store-release.
 *
 * A work request of another QP whose CQE moved up by k slots is counted
 * free (U5) when the consumer index passes the CQE's old index, up to k
 * completions before its own is polled. k is at most the number dropped,
 * whose QP's slots RESET had all freed already, so the CQ can hold no
 * more unpolled CQEs than before the clean.
 *
 * A SINGLE_THREADED CQ has one thread touching it; a poll sequence of its
 * cq_ex interface open across the modify (start_poll to end_poll) leaves
 * the CQ as it is.
 */
void srx_cq_clean_qp(struct srx_cq *cq, uint32_t qpn)
{
	struct srx_cq_ring *ring;
	uint64_t word, sealed;
	uint32_t cons, removed;
	bool found;

	if (cq->single_threaded) {
		if (cq->ex_open)
			return;
		ring = atomic_load_explicit(&cq->ring, memory_order_relaxed);
		removed = srx_cq_compact(&ring->view, cq->cons,
					 srx_cq_ready(&ring->view, cq->cons),
					 qpn);
		if (removed) {
			cq->cons += removed;
			srx_cq_release(&ring->view, cq->cons);
		}
		return;
	}

	ring = srx_cq_hold_ring(cq);
	word = srx_load_cons(ring->view.cons);
	found = SRX_CONS_SEAL(word) ||
		srx_cq_holds_qp(&ring->view, SRX_CONS_INDEX(word), qpn);
	srx_cq_drop_ring();
	if (!found)
		return;

	pthread_mutex_lock(&cq->resize_mutex);
	srx_cq_exclude_owner(cq);
	atomic_store_explicit(&cq->resizing, true, memory_order_release);
	atomic_fetch_add_explicit(&cq->seal_gen, 1, memory_order_release);
	ring = atomic_load_explicit(&cq->ring, memory_order_relaxed);
	word = srx_load_cons(ring->view.cons);
	do {
		/* only resize seals, and it waits for the mutex */
		if (SRX_CONS_SEAL(word))
			goto out;
		cons = SRX_CONS_INDEX(word);
		sealed = (uint64_t)SRX_CQ_CONS_CLEANING << 32 | cons;
	} while (!srx_seal_cons(ring->view.cons, &word, sealed));
	SRX_CQ_TEST_POINT(CLEAN_SEALED);

	removed = srx_cq_compact(&ring->view, cons,
				 srx_cq_ready(&ring->view, cons), qpn);
	srx_publish_cons(ring->view.cons, (uint32_t)(cons + removed));
out:
	atomic_store_explicit(&cq->resizing, false, memory_order_release);
	pthread_mutex_unlock(&cq->resize_mutex);
}

/*
 * Two steps (srx-abi.h): the kernel prepares a ring, we map it, and only
 * then does the kernel move the pending CQEs over and switch. If the new
 * ring cannot be mapped the CQ keeps working on the old one. A failed
 * COMMIT is read from the old ring's consumer word: the kernel seals it
 * only in a COMMIT, and unseals it before returning if it does not switch,
 * so a seal after a failure means the switch happened. Pollers on
 * other threads meet the sealed old ring during the switch and wait for the
 * new one (srx_cq_wait_resize()); nothing is lost or reordered because the
 * kernel copies the CQEs in index order and indices carry over.
 */
int srx_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct srx_cq *cq = to_scq(ibcq);
	struct srx_cq_ring *old, *new;
	struct srx_cq_layout layout;
	int ret;

	pthread_mutex_lock(&cq->resize_mutex);
	srx_cq_exclude_owner(cq);	/* the kernel seals the word */
	atomic_store_explicit(&cq->resizing, true, memory_order_release);
	atomic_fetch_add_explicit(&cq->seal_gen, 1, memory_order_release);

	ret = srx_resize_step(ibcq, cqe, SRX_RESIZE_PREPARE, &layout);
	if (ret)
		goto out;

	ret = srx_cq_map_ring(ibcq->context, &layout, &new);
	if (ret) {
		srx_resize_step(ibcq, cqe, SRX_RESIZE_ABORT, NULL);
		goto out;
	}

	old = atomic_load_explicit(&cq->ring, memory_order_relaxed);
	ret = srx_resize_step(ibcq, cqe, SRX_RESIZE_COMMIT, NULL);
	if (ret && !srx_cq_sealed(&old->view)) {
		srx_cq_unmap_ring(new);
		goto out;
	}
	if (ret) {
		/*
		 * The kernel switched rings and the command failed all the
		 * same: the uverbs core copies its response out after the
		 * driver returned (EFAULT). The resize happened; what was
		 * lost is the new size, which is the new ring's.
		 */
		ibcq->cqe = (int)layout.entries;
		ret = 0;
	}
	cq->own_view = new->view;	/* see struct srx_cq */
	atomic_store_explicit(&cq->ring, new, memory_order_release);
	srx_cq_retire_ring(cq, old);
out:
	atomic_store_explicit(&cq->resizing, false, memory_order_release);
	pthread_mutex_unlock(&cq->resize_mutex);
	return ret;
}
