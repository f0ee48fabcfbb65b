// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * cq_bench: completion-queue workloads through the public verbs API only,
 * so that the same binary measures srx and rdma_rxe.
 *
 *   cq_bench -d DEV poll    -b BATCH [-n CQES] [-s|-S]  ns per completion
 *                           polled (-s: a CQ created SINGLE_THREADED; -S:
 *                           a CQ another thread has polled before)
 *   cq_bench -d DEV mtpoll  -t THREADS [-n CQES] completions per second
 *   cq_bench -d DEV create  -c CQE [-n PAIRS]    ns per create+destroy
 *   cq_bench -d DEV notify  [-n ROUNDS] [-P CPU [-I]] ns per notification
 *                           round (-I: also count the rounds in which CPU
 *                           took an irq_work interrupt)
 *   cq_bench -d DEV syscalls-poll [-n POLLS]     loops only, for strace -c
 *   cq_bench -d DEV syscalls-arm  [-n ARMS]      loops only, for strace -c
 *   cq_bench -d DEV syscalls-take [-n ROUNDS]    polls that take completions
 *                           and arms after an event, between getppid()
 *                           markers, for strace
 *
 * Each prints one line "RESULT <workload> <param> <value> <unit>". No wire
 * protocol is needed: completions come from receives flushed when their QP
 * enters the error state, which every verbs device does. bench/run drives
 * it; Documentation/performance.md explains the numbers.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define DIE(...) do { fprintf(stderr, "cq_bench: " __VA_ARGS__); \
		      fputc('\n', stderr); exit(1); } while (0)

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_device_attr dev_attr;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	if (!ctx)
		DIE("cannot open device %s", name);
	if (ibv_query_device(ctx, &dev_attr))
		DIE("ibv_query_device");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		DIE("ibv_alloc_pd");
}

static int qp_move(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state, .port_num = 1 };
	int mask = IBV_QP_STATE;

	if (state == IBV_QPS_INIT)
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &attr, mask);
}

static struct ibv_qp *make_qp(struct ibv_cq *cq, uint32_t rq_size)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = rq_size,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &attr);

	if (!qp)
		DIE("ibv_create_qp (%u receives): %s", rq_size, strerror(errno));
	return qp;
}

/* RESET, INIT, @n receives posted, ERR: the device flushes them. */
static void post_and_flush(struct ibv_qp *qp, uint32_t n)
{
	struct ibv_recv_wr wr = {}, *bad;
	uint32_t i;

	if (qp_move(qp, IBV_QPS_RESET) || qp_move(qp, IBV_QPS_INIT))
		DIE("modify QP: %s", strerror(errno));
	for (i = 0; i < n; i++) {
		wr.wr_id = i;
		if (ibv_post_recv(qp, &wr, &bad))
			DIE("ibv_post_recv %u", i);
	}
	if (qp_move(qp, IBV_QPS_ERR))
		DIE("modify QP to ERR");
}

/*
 * How long posting and flushing @n receives takes until the last completion
 * is in a CQ, learnt once per process. Flushing is asynchronous on some
 * devices (rxe flushes from a kernel task; srx flushes before modify_qp()
 * returns). A CQ and QP of their own: polling the measured CQ here would
 * make this thread the owner of libsrx's thread bias on it, which mtpoll's
 * threads must find unowned.
 */
static uint64_t flush_ns;

static void learn_flush(uint32_t n)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, n, NULL, NULL, 0);
	uint64_t t0, deadline;
	struct ibv_wc wc[64];
	struct ibv_qp *qp;
	uint32_t got = 0;
	int k;

	if (!cq)
		DIE("ibv_create_cq(%u): %s", n, strerror(errno));
	qp = make_qp(cq, n);
	t0 = now_ns();
	deadline = t0 + 10000000000ull;
	post_and_flush(qp, n);
	while (got < n) {
		k = ibv_poll_cq(cq, 64, wc);
		if (k < 0)
			DIE("ibv_poll_cq: %d", k);
		got += k;
		if (now_ns() > deadline)
			DIE("%u of %u flushed receives in 10 s", got, n);
	}
	flush_ns = now_ns() - t0;
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/*
 * Put @n flushed receive completions into @qp's CQ and wait until the CQ
 * has them, twice the time learnt and 20 ms for the emulator's hiccups:
 * the measured loops then only poll.
 */
static void fill(struct ibv_qp *qp, uint32_t n)
{
	if (!flush_ns)
		learn_flush(n);
	post_and_flush(qp, n);
	usleep(2 * flush_ns / 1000 + 20000);
}

/*
 * A CQ for @cqe completions; with @single_threaded, created through
 * ibv_create_cq_ex() with IBV_CREATE_CQ_ATTR_SINGLE_THREADED, the verbs way
 * for an application to say only one thread polls it. librxe accepts the
 * flag (and ignores it), so both devices run the same workload.
 */
static struct ibv_cq *make_cq(uint32_t cqe, bool single_threaded)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
		.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED,
	};
	struct ibv_cq_ex *cq_ex;

	if (!single_threaded)
		return ibv_create_cq(ctx, cqe, NULL, NULL, 0);
	cq_ex = ibv_create_cq_ex(ctx, &attr);
	return cq_ex ? ibv_cq_ex_to_cq(cq_ex) : NULL;
}

static void *poll_once(void *cq)
{
	struct ibv_wc wc;

	ibv_poll_cq(cq, 1, &wc);	/* the CQ is empty: nothing is taken */
	return NULL;
}

/*
 * Workload 1: the cost of ibv_poll_cq per completion, one thread. With
 * @shared, another thread has polled the CQ once before: libsrx biases a
 * thread-safe CQ to the first thread that polls it and a second one
 * revokes that for good (cq.c, "Biased polling"), so this measures the
 * path every poll takes on a CQ that several threads poll. librxe takes
 * its spinlock either way.
 */
static void bench_poll(int batch, uint32_t n, int rounds, bool single_threaded,
		       bool shared)
{
	struct ibv_wc *wc = calloc(batch, sizeof(*wc));
	struct ibv_cq *cq = make_cq(n, single_threaded);
	double best = 0;
	struct ibv_qp *qp;
	pthread_t other;
	int r;

	if (!cq || !wc)
		DIE("ibv_create_cq(%u): %s", n, strerror(errno));
	qp = make_qp(cq, n);
	if (shared) {
		if (pthread_create(&other, NULL, poll_once, cq))
			DIE("pthread_create");
		pthread_join(other, NULL);
		poll_once(cq);
	}

	for (r = 0; r < rounds; r++) {
		uint32_t got = 0;
		uint64_t t0;

		fill(qp, n);
		t0 = now_ns();
		while (got < n) {
			int k = ibv_poll_cq(cq, batch, wc);

			if (k < 0)
				DIE("ibv_poll_cq: %d", k);
			if (!k)
				break;	/* the flush was slower than the wait */
			got += k;
		}
		if (got < n)
			fprintf(stderr, "cq_bench: %u of %u completions in time: the flush outran the wait\n",
				got, n);
		if (got) {
			double ns = (double)(now_ns() - t0) / got;

			if (!best || ns < best)
				best = ns;
		}
		/* Drain what a slow flush delivered late. */
		while (ibv_poll_cq(cq, batch, wc) > 0)
			;
	}
	/*
	 * The best round: noise (the host scheduling the emulator's threads
	 * elsewhere) only ever adds time, so the minimum is the cost.
	 */
	printf("RESULT %s batch=%d %.1f ns/cqe\n",
	       single_threaded ? "poll-single-threaded" :
	       shared ? "poll-shared" : "poll", batch, best);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	free(wc);
}

/* Workload 2: several threads polling one CQ. */
struct mt_arg {
	struct ibv_cq *cq;
	uint32_t target;
	atomic_uint *taken;
	atomic_int *ready;
	atomic_int *go;
	uint64_t done_ns;	/* written once, by the thread taking the last */
};

static void *mt_poller(void *p)
{
	struct mt_arg *a = p;
	struct ibv_wc wc[16];

	atomic_fetch_add(a->ready, 1);
	while (!atomic_load(a->go))
		;
	while (atomic_load_explicit(a->taken, memory_order_relaxed) < a->target) {
		int k = ibv_poll_cq(a->cq, 16, wc);

		/*
		 * The clock stops when the CQ is drained, not when the
		 * threads have exited and been joined: thread teardown
		 * is no part of polling, and under emulation it costs as
		 * much as the drain.
		 */
		if (k > 0 &&
		    atomic_fetch_add_explicit(a->taken, k,
					      memory_order_relaxed) + k >=
			    a->target)
			a->done_ns = now_ns();
	}
	return NULL;
}

static void bench_mtpoll(int threads, uint32_t n, int rounds)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, n, NULL, NULL, 0);
	pthread_t tid[64];
	double best_rate = 0;
	struct ibv_qp *qp;
	int r, i;

	if (!cq || threads > 64)
		DIE("ibv_create_cq(%u)", n);
	qp = make_qp(cq, n);

	for (r = 0; r < rounds; r++) {
		atomic_uint taken = 0;
		atomic_int ready = 0, go = 0;
		struct mt_arg a = { cq, n, &taken, &ready, &go, 0 };
		uint64_t t0, t;

		fill(qp, n);
		for (i = 0; i < threads; i++)
			pthread_create(&tid[i], NULL, mt_poller, &a);
		/*
		 * The clock starts once every thread runs: starting a thread
		 * (under emulation, waking a halted vCPU) is no part of
		 * polling either.
		 */
		while (atomic_load(&ready) < threads)
			sched_yield();
		t0 = now_ns();
		atomic_store(&go, 1);
		for (i = 0; i < threads; i++)
			pthread_join(tid[i], NULL);
		t = a.done_ns - t0;
		if ((double)n * 1e9 / (double)t > best_rate)
			best_rate = (double)n * 1e9 / (double)t;
	}
	/* The best round, as for poll. */
	printf("RESULT mtpoll threads=%d %.0f cqe/s\n", threads, best_rate);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
}

/*
 * Workload 3: create + destroy. A device whose max_cqe is smaller than the
 * request (rxe: 32767) gets its maximum; the result keeps the requested
 * size as its label so that both devices' lines pair up.
 */
static void bench_create(int requested, uint32_t pairs)
{
	int cqe = requested < dev_attr.max_cqe ? requested : dev_attr.max_cqe;
	uint64_t t0 = now_ns();
	uint32_t i;

	if (cqe != requested)
		fprintf(stderr, "cq_bench: %d entries requested, max_cqe is %d\n",
			requested, cqe);
	for (i = 0; i < pairs; i++) {
		struct ibv_cq *cq = ibv_create_cq(ctx, cqe, NULL, NULL, 0);

		if (!cq)
			DIE("ibv_create_cq(%d): %s", cqe, strerror(errno));
		if (ibv_destroy_cq(cq))
			DIE("ibv_destroy_cq");
	}
	printf("RESULT create cqe=%d %.0f ns/pair\n", requested,
	       (double)(now_ns() - t0) / pairs);
}

/*
 * CPU @cpu's count of irq_work interrupts (the IWI row of
 * /proc/interrupts), or -1.
 */
static long long iwi_count(int cpu)
{
	FILE *f = fopen("/proc/interrupts", "r");
	long long v = -1;
	char line[4096];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		int c;

		while (*p == ' ')
			p++;
		if (strncmp(p, "IWI:", 4))
			continue;
		p += 4;
		for (c = 0; c <= cpu; c++) {
			v = strtoll(p, &end, 10);
			if (end == p) {
				v = -1;
				break;
			}
			p = end;
		}
		break;
	}
	fclose(f);
	return v;
}

/*
 * Workload 4: arm, make one completion, wait for the event, ack, poll.
 * With -P the thread runs on that CPU only (bench/run pins it to CPU 0,
 * the CPU of comp_vector 0). srx raises a user CQ's event on the CPU that
 * made the completion, here the one that moved the QP to error, and rxe
 * does too; a kernel CQ's event would go to comp_vector's CPU.
 */
static void bench_notify(uint32_t rounds, int cpu, bool count_iwi)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_recv_wr wr = {}, *bad;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_wc wc;
	struct ibv_qp *qp;
	uint64_t spent = 0;
	uint32_t i, iwi_rounds = 0;
	void *ev_ctx;

	if (count_iwi && cpu < 0)
		DIE("-I needs -P");
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			DIE("sched_setaffinity(%d): %s", cpu, strerror(errno));
	}
	if (!ch)
		DIE("ibv_create_comp_channel");
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	if (!cq)
		DIE("ibv_create_cq");
	qp = make_qp(cq, 4);

	for (i = 0; i < rounds; i++) {
		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		long long iwi0 = 0, iwi1;
		uint64_t t0;

		if (qp_move(qp, IBV_QPS_RESET) || qp_move(qp, IBV_QPS_INIT) ||
		    ibv_post_recv(qp, &wr, &bad))
			DIE("notify setup");
		if (count_iwi && (iwi0 = iwi_count(cpu)) < 0)
			DIE("no IWI count for CPU %d in /proc/interrupts", cpu);
		t0 = now_ns();
		if (ibv_req_notify_cq(cq, 0) || qp_move(qp, IBV_QPS_ERR))
			DIE("arm/flush");
		if (poll(&pfd, 1, 10000) != 1)
			DIE("no completion event in 10 s");
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			DIE("ibv_get_cq_event");
		ibv_ack_cq_events(ev_cq, 1);
		while (ibv_poll_cq(cq, 1, &wc) != 1)
			;
		spent += now_ns() - t0;
		if (count_iwi) {
			iwi1 = iwi_count(cpu);
			iwi_rounds += iwi1 > iwi0;
		}
	}
	if (count_iwi)
		printf("IWI rounds %u of %u\n", iwi_rounds, rounds);
	if (cpu >= 0)
		printf("RESULT notify pinned-cpu%d %.0f ns/round\n", cpu,
		       (double)spent / rounds);
	else
		printf("RESULT notify unpinned %.0f ns/round\n",
		       (double)spent / rounds);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
}

/*
 * Workload 5: loops with nothing else in them, for `strace -c -f`. bench/run
 * runs each with two loop counts; the difference in system calls divided by
 * the difference in loops is the number per operation in steady state.
 */
static void syscalls_poll(uint32_t n)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_wc wc;
	uint32_t i;

	if (!cq)
		DIE("ibv_create_cq");
	for (i = 0; i < n; i++)
		if (ibv_poll_cq(cq, 1, &wc) < 0)
			DIE("ibv_poll_cq");
	ibv_destroy_cq(cq);
	printf("RESULT syscalls-poll loops=%u done\n", n);
}

static void syscalls_arm(uint32_t n)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, ch, 0);
	uint32_t i;

	if (!cq)
		DIE("ibv_create_cq");
	for (i = 0; i < n; i++)
		if (ibv_req_notify_cq(cq, 0))
			DIE("ibv_req_notify_cq");
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
	printf("RESULT syscalls-arm loops=%u done\n", n);
}

/*
 * Polls that take completions and arms after an event, each round
 * between two getppid() calls, a system call nothing else here makes:
 * tools count what strace shows between the markers. Each round flushes
 * TAKE_N receives with one armed CQ (the producer's system calls and the
 * event's read() stay outside the markers), then, inside them, polls
 * them one at a time and in a batch, and re-arms the CQ that has just
 * fired.
 */
#define TAKE_N 8

static void syscalls_take(uint32_t rounds)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_recv_wr wr = {}, *bad;
	struct ibv_wc wc[TAKE_N];
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp *qp;
	uint32_t i, j, got;
	void *ev_ctx;

	if (!ch)
		DIE("ibv_create_comp_channel");
	cq = ibv_create_cq(ctx, 2 * TAKE_N, NULL, ch, 0);
	if (!cq)
		DIE("ibv_create_cq");
	qp = make_qp(cq, TAKE_N);
	if (ibv_req_notify_cq(cq, 0))
		DIE("ibv_req_notify_cq");
	for (i = 0; i < rounds; i++) {
		if (qp_move(qp, IBV_QPS_RESET) || qp_move(qp, IBV_QPS_INIT))
			DIE("modify QP: %s", strerror(errno));
		for (j = 0; j < TAKE_N; j++)
			if (ibv_post_recv(qp, &wr, &bad))
				DIE("ibv_post_recv");
		if (qp_move(qp, IBV_QPS_ERR))
			DIE("modify QP to ERR");
		/* The flush completed them; the armed CQ fired. */
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			DIE("ibv_get_cq_event");
		ibv_ack_cq_events(ev_cq, 1);

		getppid();
		got = 0;
		for (j = 0; j < TAKE_N / 2; j++)
			got += ibv_poll_cq(cq, 1, wc) == 1;
		got += ibv_poll_cq(cq, TAKE_N, wc);
		if (ibv_req_notify_cq(cq, 0))
			DIE("ibv_req_notify_cq");
		getppid();

		if (got != TAKE_N)
			DIE("round %u: took %u of %u completions", i, got, TAKE_N);
	}
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_destroy_comp_channel(ch);
	printf("RESULT syscalls-take rounds=%u completions=%u done\n", rounds,
	       rounds * TAKE_N);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *what;
	int batch = 1, threads = 1, cqe = 256, rounds = 3, cpu = -1, opt;
	bool single_threaded = false, shared = false, count_iwi = false;
	long n = -1;

	while ((opt = getopt(argc, argv, "d:b:t:c:n:r:P:IsS")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'b': batch = atoi(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'c': cqe = atoi(optarg); break;
		case 'n': n = atol(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 'P': cpu = atoi(optarg); break;
		case 'I': count_iwi = true; break;
		case 's': single_threaded = true; break;
		case 'S': shared = true; break;
		default: DIE("bad option");
		}
	}
	if (!dev || optind >= argc)
		DIE("usage: cq_bench -d DEV poll|mtpoll|create|notify|syscalls-poll|syscalls-arm|syscalls-take ...");
	what = argv[optind];
	open_device(dev);

	if (!strcmp(what, "poll"))
		bench_poll(batch, n > 0 ? n : 8192, rounds, single_threaded,
			   shared);
	else if (!strcmp(what, "mtpoll"))
		bench_mtpoll(threads, n > 0 ? n : 16384, rounds);
	else if (!strcmp(what, "create"))
		bench_create(cqe, n > 0 ? n : 200);
	else if (!strcmp(what, "notify"))
		bench_notify(n > 0 ? n : 200, cpu, count_iwi);
	else if (!strcmp(what, "syscalls-poll"))
		syscalls_poll(n > 0 ? n : 1000);
	else if (!strcmp(what, "syscalls-arm"))
		syscalls_arm(n > 0 ? n : 1000);
	else if (!strcmp(what, "syscalls-take"))
		syscalls_take(n > 0 ? n : 100);
	else
		DIE("unknown workload %s", what);

	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
