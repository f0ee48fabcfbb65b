// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * async_events - an application's view of a device's asynchronous events,
 * for selftests/device_test.sh.
 *
 *   async_events -d DEVICE [-t MS] [-n COUNT] [-r]
 *
 * Opens DEVICE, prints "ready" once it listens, then one line per event as
 * it arrives ("IBV_EVENT_PORT_ERR port 1"), flushed at once so a script can
 * follow along. Stops after COUNT events (default: never), after MS
 * milliseconds without reaching COUNT (default 10000), or after
 * IBV_EVENT_DEVICE_FATAL, which is what a process gets when its device is
 * removed under it. With -r it first creates a PD, a CQ and a QP, so that
 * mapped rings are live when that happens; it then destroys them and
 * closes the device, which must work even after the device is gone.
 *
 * Exit status: 0 when COUNT events arrived (or, without -n, when the time
 * ran out or the device was removed), 1 when fewer than COUNT arrived, 2
 * on a usage or setup error.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static const char *const event_names[] = {
	[IBV_EVENT_CQ_ERR] = "IBV_EVENT_CQ_ERR",
	[IBV_EVENT_QP_FATAL] = "IBV_EVENT_QP_FATAL",
	[IBV_EVENT_QP_REQ_ERR] = "IBV_EVENT_QP_REQ_ERR",
	[IBV_EVENT_QP_ACCESS_ERR] = "IBV_EVENT_QP_ACCESS_ERR",
	[IBV_EVENT_COMM_EST] = "IBV_EVENT_COMM_EST",
	[IBV_EVENT_SQ_DRAINED] = "IBV_EVENT_SQ_DRAINED",
	[IBV_EVENT_PATH_MIG] = "IBV_EVENT_PATH_MIG",
	[IBV_EVENT_PATH_MIG_ERR] = "IBV_EVENT_PATH_MIG_ERR",
	[IBV_EVENT_DEVICE_FATAL] = "IBV_EVENT_DEVICE_FATAL",
	[IBV_EVENT_PORT_ACTIVE] = "IBV_EVENT_PORT_ACTIVE",
	[IBV_EVENT_PORT_ERR] = "IBV_EVENT_PORT_ERR",
	[IBV_EVENT_LID_CHANGE] = "IBV_EVENT_LID_CHANGE",
	[IBV_EVENT_PKEY_CHANGE] = "IBV_EVENT_PKEY_CHANGE",
	[IBV_EVENT_SM_CHANGE] = "IBV_EVENT_SM_CHANGE",
	[IBV_EVENT_SRQ_ERR] = "IBV_EVENT_SRQ_ERR",
	[IBV_EVENT_SRQ_LIMIT_REACHED] = "IBV_EVENT_SRQ_LIMIT_REACHED",
	[IBV_EVENT_QP_LAST_WQE_REACHED] = "IBV_EVENT_QP_LAST_WQE_REACHED",
	[IBV_EVENT_CLIENT_REREGISTER] = "IBV_EVENT_CLIENT_REREGISTER",
	[IBV_EVENT_GID_CHANGE] = "IBV_EVENT_GID_CHANGE",
	[IBV_EVENT_WQ_FATAL] = "IBV_EVENT_WQ_FATAL",
};

/* Objects created with -r, so the device goes away with rings mapped. */
struct resources {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static int resources_create(struct resources *r, struct ibv_context *ctx)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	r->pd = ibv_alloc_pd(ctx);
	if (!r->pd)
		return errno;
	r->cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	if (!r->cq)
		return errno;
	attr.send_cq = r->cq;
	attr.recv_cq = r->cq;
	r->qp = ibv_create_qp(r->pd, &attr);
	if (!r->qp)
		return errno;
	return 0;
}

/* After a device removal these may fail; they must not crash or hang. */
static void resources_destroy(struct resources *r)
{
	if (r->qp && ibv_destroy_qp(r->qp))
		printf("destroy QP: %s\n", strerror(errno));
	if (r->cq && ibv_destroy_cq(r->cq))
		printf("destroy CQ: %s\n", strerror(errno));
	if (r->pd && ibv_dealloc_pd(r->pd))
		printf("dealloc PD: %s\n", strerror(errno));
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static struct ibv_context *open_by_name(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL), **d;
	struct ibv_context *ctx = NULL;

	if (!list)
		return NULL;
	for (d = list; *d; d++)
		if (!strcmp(ibv_get_device_name(*d), name)) {
			ctx = ibv_open_device(*d);
			break;
		}
	if (!*d)
		errno = ENODEV;
	ibv_free_device_list(list);
	return ctx;
}

int main(int argc, char **argv)
{
	struct resources res = { 0 };
	struct ibv_context *ctx;
	const char *name = NULL;
	long long deadline;
	int timeout_ms = 10000, want = -1, got = 0, fatal = 0, opt, ret;
	bool with_res = false;

	while ((opt = getopt(argc, argv, "d:t:n:r")) != -1) {
		if (opt == 'd')
			name = optarg;
		else if (opt == 't')
			timeout_ms = atoi(optarg);
		else if (opt == 'n')
			want = atoi(optarg);
		else if (opt == 'r')
			with_res = true;
		else
			break;
	}
	if (!name || opt != -1 || optind != argc) {
		fprintf(stderr,
			"usage: %s -d DEVICE [-t MS] [-n COUNT] [-r]\n", argv[0]);
		return 2;
	}

	ctx = open_by_name(name);
	if (!ctx) {
		fprintf(stderr, "open %s: %s\n", name, strerror(errno));
		return 2;
	}
	if (with_res) {
		ret = resources_create(&res, ctx);
		if (ret) {
			fprintf(stderr, "create PD/CQ/QP: %s\n", strerror(ret));
			resources_destroy(&res);
			ibv_close_device(ctx);
			return 2;
		}
	}
	printf("ready\n");
	fflush(stdout);

	deadline = now_ms() + timeout_ms;
	while (got != want && !fatal) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		long long left = deadline - now_ms();
		struct ibv_async_event ev;
		const char *what;

		if (left <= 0)
			break;
		ret = poll(&pfd, 1, (int)left);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret <= 0)
			break;
		if (ibv_get_async_event(ctx, &ev)) {
			printf("ibv_get_async_event: %s\n", strerror(errno));
			break;
		}
		what = (unsigned int)ev.event_type <
				       sizeof(event_names) / sizeof(event_names[0]) &&
		       event_names[ev.event_type] ?
			       event_names[ev.event_type] : "IBV_EVENT_UNKNOWN";
		if (ev.event_type == IBV_EVENT_PORT_ACTIVE ||
		    ev.event_type == IBV_EVENT_PORT_ERR ||
		    ev.event_type == IBV_EVENT_GID_CHANGE ||
		    ev.event_type == IBV_EVENT_LID_CHANGE ||
		    ev.event_type == IBV_EVENT_PKEY_CHANGE ||
		    ev.event_type == IBV_EVENT_SM_CHANGE ||
		    ev.event_type == IBV_EVENT_CLIENT_REREGISTER)
			printf("%s port %d\n", what, ev.element.port_num);
		else
			printf("%s\n", what);
		fflush(stdout);
		fatal = ev.event_type == IBV_EVENT_DEVICE_FATAL;
		ibv_ack_async_event(&ev);
		got++;
	}

	resources_destroy(&res);
	ibv_close_device(ctx);
	printf("done: %d event%s\n", got, got == 1 ? "" : "s");
	return want < 0 || got >= want ? 0 : 1;
}
