// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ring_bench: the consumer side of a CQ ring alone, on the real CPU (times
 * inside the TCG guest are only meaningful as ratios). No kernel, no
 * libibverbs calls: a ring in ordinary memory is filled as the kernel would
 * fill it, then drained by the code libsrx runs, and the drain is timed.
 *
 * Six consumers, so that the numbers also say why the CQE looks the way it
 * does:
 *   srx32-mt   libsrx's path for a CQ several threads poll: 32-byte CQE,
 *              claimed with one compare-and-swap per batch, converted
 *              into struct ibv_wc with the scalar code
 *   srx32-st   libsrx's SINGLE_THREADED path, which the one thread a
 *              thread-safe CQ is biased to also runs: same CQE, one
 *              release store
 *   srx32-mt-avx2, srx32-st-avx2
 *              the same two converting with AVX2 (x86-64 CPUs that have
 *              it); which of the two conversions libsrx uses on this CPU
 *              is printed first (srx_wc_conv_pick(), cqe_wc.h)
 *   wc48-mt    the alternative format: CQEs stored as struct ibv_wc (48
 *              bytes, the layout of struct ib_uverbs_wc), claimed the same
 *              way and copied with memcpy()
 *   rxe-like   what librxe 44 does (providers/rxe/rxe.c, rxe_poll_cq): a
 *              spinlock per call, and per CQE an acquire load of the
 *              producer index, a memcpy() of 48 bytes and a release store
 *              of the consumer index
 *
 *   ring_bench [-e ENTRIES] [-r REPEATS]
 * prints "RESULT <consumer> batch=<b> <ns> ns/cqe" lines (median of the
 * repeats) and a table.
 *
 *   ring_bench -s [-e ENTRIES] [-n CQES]
 * streams instead: a producer thread on another CPU writes CQEs as the
 * kernel does while the consumer drains them, so every CQE crosses between
 * two caches, which is where the size of a CQE costs on real machines.
 * Prints "RESULT stream-<format> <ns> ns/cqe" for the 32- and 48-byte
 * formats; the 32-byte one converts as libsrx would on this CPU.
 */
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cq_ring.h"
#include "cqe_wc.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A ring in ordinary memory, laid out as the kernel lays out a CQ ring. */
struct bench_ring {
	struct srx_cq_ctrl ctrl;
	union {
		struct srx_cqe cqe32[0];
		struct ibv_wc cqe48[0];
	};
};

static struct bench_ring *ring;
static struct srx_cq_view view;
static uint32_t entries;

/* One flushed receive completion at @slot, in either format. */
static void write_cqe(int wide, uint32_t slot, uint32_t wr_id)
{
	if (wide) {
		struct ibv_wc *w = &ring->cqe48[slot];

		w->wr_id = wr_id;
		w->status = IBV_WC_WR_FLUSH_ERR;
		w->opcode = IBV_WC_RECV;
		w->qp_num = 16;
	} else {
		struct srx_cqe *c = &ring->cqe32[slot];

		c->wr_id = wr_id;
		c->status = IBV_WC_WR_FLUSH_ERR;
		c->opcode = IBV_WC_RECV;
		c->qp_num = 16;
	}
}

static void fill(int wide)
{
	uint32_t prod = ring->ctrl.prod, i;

	memset(ring->cqe48, 0, (size_t)entries * sizeof(struct ibv_wc));
	for (i = 0; i < entries; i++)
		write_cqe(wide, (prod + i) & (entries - 1), prod + i);
	__atomic_store_n(&ring->ctrl.prod, prod + entries, __ATOMIC_RELEASE);
}

/*
 * libsrx's own poll loops (cqe_wc.h), as srx_poll_cq() runs them: a path
 * of its own for one completion, the batch loop otherwise. srx32-st is
 * also what the bias owner of a thread-safe CQ runs (cq.c), less the
 * owner's flag store, load and store around it.
 */
static int drain_srx32_mt(struct ibv_wc *wc, int batch)
{
	if (batch == 1)
		return srx_cq_poll_one_wc(&view, wc);
	return srx_cq_poll_wc(&view, batch, wc);
}

static uint32_t st_cons;

static int drain_srx32_st(struct ibv_wc *wc, int batch)
{
	if (batch == 1)
		return srx_cq_poll_one_wc_st(&view, &st_cons, wc);
	return srx_cq_poll_wc_st(&view, &st_cons, batch, wc);
}

static int drain_wc48_mt(struct ibv_wc *wc, int batch)
{
	uint64_t word = srx_load_cons(view.cons);
	int n, i;

	for (;;) {
		n = srx_cq_claim_begin(&view, word, batch);
		for (i = 0; i < n; i++)
			memcpy(&wc[i], &ring->cqe48[(SRX_CONS_INDEX(word) + i) &
						    (entries - 1)],
			       sizeof(wc[i]));
		if (n <= 0 || srx_cq_claim_commit(&view, &word, n))
			return n;
	}
}

static pthread_spinlock_t rxe_lock;

static int drain_rxe_like(struct ibv_wc *wc, int batch)
{
	uint32_t *prodp = &ring->ctrl.prod;
	uint32_t *consp = (uint32_t *)&ring->ctrl.cons;
	int n;

	pthread_spin_lock(&rxe_lock);
	for (n = 0; n < batch; n++) {
		uint32_t prod = __atomic_load_n(prodp, __ATOMIC_ACQUIRE);
		uint32_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED);

		if (prod == cons)
			break;
		memcpy(&wc[n], &ring->cqe48[cons & (entries - 1)], sizeof(*wc));
		__atomic_store_n(consp, cons + 1, __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&rxe_lock);
	return n;
}

struct consumer {
	const char *name;
	int wide;
	int (*drain)(struct ibv_wc *wc, int batch);
	enum srx_wc_conv conv;
};

static const struct consumer consumers[] = {
	{ "srx32-mt", 0, drain_srx32_mt, SRX_WC_CONV_SCALAR },
	{ "srx32-st", 0, drain_srx32_st, SRX_WC_CONV_SCALAR },
	{ "srx32-mt-avx2", 0, drain_srx32_mt, SRX_WC_CONV_AVX2 },
	{ "srx32-st-avx2", 0, drain_srx32_st, SRX_WC_CONV_AVX2 },
	{ "wc48-mt", 1, drain_wc48_mt, SRX_WC_CONV_SCALAR },
	{ "rxe-like", 1, drain_rxe_like, SRX_WC_CONV_SCALAR },
};
#define NR_CONSUMERS (sizeof(consumers) / sizeof(consumers[0]))

static const char *conv_name(enum srx_wc_conv conv)
{
	return conv == SRX_WC_CONV_AVX2 ? "avx2" : "scalar";
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Streaming: a producer thread plays the kernel (K1, K2 of srx-abi.h). */
struct stream_arg {
	uint64_t total;
	int wide;
};

static void *stream_producer(void *p)
{
	const struct stream_arg *a = p;
	uint32_t prod = 0;
	uint64_t done = 0;

	while (done < a->total) {
		uint32_t cons = SRX_CONS_INDEX(srx_load_cons(view.cons));
		uint32_t room = entries - (prod - cons), i;

		if (room > a->total - done)
			room = a->total - done;
		if (room > 16)
			room = 16;
		for (i = 0; i < room; i++)
			write_cqe(a->wide, (prod + i) & (entries - 1), prod + i);
		prod += room;
		done += room;
		__atomic_store_n(&ring->ctrl.prod, prod, __ATOMIC_RELEASE);
	}
	return NULL;
}

static double stream(int wide, uint64_t total)
{
	struct stream_arg a = { total, wide };
	struct ibv_wc wc[16];
	uint64_t got = 0, t0;
	pthread_t tid;

	memset(ring, 0, sizeof(*ring));
	st_cons = 0;
	t0 = now_ns();
	pthread_create(&tid, NULL, stream_producer, &a);
	while (got < total) {
		int k = wide ? drain_wc48_mt(wc, 16) : drain_srx32_mt(wc, 16);

		if (k > 0)
			got += k;
	}
	pthread_join(tid, NULL);
	return (double)(now_ns() - t0) / (double)total;
}

int main(int argc, char **argv)
{
	static const int batches[] = { 1, 16, 64 };
	double results[NR_CONSUMERS][3];
	struct srx_cq_layout layout = {};
	struct ibv_wc wc[64];
	int repeats = 51, streaming = 0, opt;
	uint64_t stream_total = 20000000;
	size_t c, b;

	entries = 4096;
	while ((opt = getopt(argc, argv, "e:r:sn:")) != -1) {
		if (opt == 'e')
			entries = atoi(optarg);
		else if (opt == 'r')
			repeats = atoi(optarg);
		else if (opt == 's')
			streaming = 1;
		else if (opt == 'n')
			stream_total = strtoull(optarg, NULL, 0);
		else
			return 2;
	}
	if (!entries || (entries & (entries - 1)) || repeats < 1) {
		fprintf(stderr, "ring_bench: entries must be a power of two\n");
		return 2;
	}

	ring = aligned_alloc(4096, sizeof(*ring) + (size_t)entries * sizeof(struct ibv_wc));
	if (!ring)
		return 1;
	memset(ring, 0, sizeof(*ring));
	layout.mmap_length = sizeof(*ring) + (size_t)entries * sizeof(struct ibv_wc);
	layout.entries = entries;
	layout.cqe_size = sizeof(struct srx_cqe);
	layout.prod_offset = offsetof(struct srx_cq_ctrl, prod);
	layout.fired_offset = offsetof(struct srx_cq_ctrl, fired);
	layout.status_offset = offsetof(struct srx_cq_ctrl, status);
	layout.dropped_offset = offsetof(struct srx_cq_ctrl, dropped);
	layout.cons_offset = offsetof(struct srx_cq_ctrl, cons);
	layout.arm_offset = offsetof(struct srx_cq_ctrl, arm);
	layout.cqe_offset = sizeof(struct srx_cq_ctrl);
	srx_cq_view_init(&view, ring, &layout);
	pthread_spin_init(&rxe_lock, PTHREAD_PROCESS_PRIVATE);
	printf("libsrx converts CQEs with: %s\n", conv_name(srx_wc_conv_pick()));

	if (streaming) {
		view.wc_conv = srx_wc_conv_pick();
		printf("RESULT stream-srx32 %.2f ns/cqe\n", stream(0, stream_total));
		printf("RESULT stream-wc48 %.2f ns/cqe\n", stream(1, stream_total));
		free(ring);
		return 0;
	}

	for (c = 0; c < NR_CONSUMERS; c++) {
		view.wc_conv = consumers[c].conv;
		for (b = 0; b < 3; b++) {
			double *t = calloc(repeats, sizeof(*t));
			int r;

			results[c][b] = -1;
			if (!srx_wc_conv_runs(consumers[c].conv)) {
				free(t);
				continue;
			}

			for (r = 0; r < repeats; r++) {
				uint32_t got = 0;
				uint64_t t0;

				/* Each consumer starts on an empty, synced ring. */
				ring->ctrl.prod = ring->ctrl.cons = 0;
				st_cons = 0;
				fill(consumers[c].wide);
				t0 = now_ns();
				while (got < entries) {
					int k = consumers[c].drain(wc, batches[b]);

					if (k <= 0)
						break;
					got += k;
				}
				t[r] = (double)(now_ns() - t0) / entries;
				if (got != entries || wc[0].qp_num != 16) {
					fprintf(stderr, "ring_bench: %s lost completions\n",
						consumers[c].name);
					return 1;
				}
			}
			qsort(t, repeats, sizeof(*t), cmp_double);
			results[c][b] = t[repeats / 2];
			printf("RESULT %s batch=%d %.2f ns/cqe\n", consumers[c].name,
			       batches[b], results[c][b]);
			free(t);
		}
	}

	printf("\n| consumer | batch 1 | batch 16 | batch 64 | (ns per completion, median of %d) |\n", repeats);
	printf("| --- | ---: | ---: | ---: | --- |\n");
	for (c = 0; c < NR_CONSUMERS; c++) {
		printf("| %s |", consumers[c].name);
		for (b = 0; b < 3; b++) {
			if (results[c][b] < 0)
				printf(" n/a |");
			else
				printf(" %.2f |", results[c][b]);
		}
		printf(" |\n");
	}
	free(ring);
	return 0;
}
