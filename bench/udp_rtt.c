// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * udp_rtt - the latency floor of a path for any RoCE v2 driver: a UDP
 * ping-pong between two sockets over the same addresses, both ends
 * busy-polling as perftest's latency tests do, no RDMA at all. Every RoCE
 * v2 packet of srx and rdma_rxe takes this path through the IP stack and
 * the netdev, so half this round trip is what a driver's one-way latency
 * cannot go under (Documentation/performance.md, "Against the targets").
 *
 *   udp_rtt -s PORT [ADDR]                     serve until a 0-byte datagram
 *   udp_rtt ADDR PORT SIZE ITERATIONS [SRC]    print the median half round trip
 *
 * Both ends bind their own address where given: rdma_rxe's two-device
 * topology has both in one namespace, where only routing rules by source
 * address send the datagrams through the veth pair (selftests/lib/topo.sh,
 * topo_cross_local()); unbound, they would go through lo.
 *
 * The client prints "SIZE ITERATIONS HALF_RTT_US" (the median, as
 * perftest's t_typical is) and tells the server to stop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZE 65507		/* the largest IPv4 UDP payload */

static char buf[MAX_SIZE];

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int serve(int s, int port, const char *addr)
{
	struct sockaddr_in a = { .sin_family = AF_INET }, peer;
	socklen_t len;
	ssize_t n;

	a.sin_port = htons(port);
	if (addr && inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		fprintf(stderr, "udp_rtt: bad address %s\n", addr);
		return 2;
	}
	if (bind(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("udp_rtt: bind");
		return 1;
	}
	for (;;) {
		len = sizeof(peer);
		n = recvfrom(s, buf, sizeof(buf), MSG_DONTWAIT,
			     (struct sockaddr *)&peer, &len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("udp_rtt: recvfrom");
			return 1;
		}
		if (n == 0)
			return 0;
		if (sendto(s, buf, n, 0, (struct sockaddr *)&peer, len) != n) {
			perror("udp_rtt: sendto");
			return 1;
		}
	}
}

/*
 * One round trip. The payload's first two bytes carry @seq, so that a late
 * reply to an earlier try is never taken for this one's. A datagram may be
 * lost, and the server may not be bound yet when the first one leaves:
 * the ICMP port unreachable comes back as ECONNREFUSED, or not at all,
 * because the kernel rate-limits it. So the datagram goes again 10 ms
 * after ECONNREFUSED or 1 s after it left, for up to 10 s in all. The
 * clock is read only every 1024 polls: in the guest clock_gettime() is a
 * system call (no TSC, no vDSO fast path), which would double each poll.
 */
static int round_trip(int s, int size, uint16_t seq, double *us)
{
	double t0, start = now_us();
	unsigned int polls;
	ssize_t n;

	while (now_us() - start < 10e6) {
		memcpy(buf, &seq, sizeof(seq));
		t0 = now_us();
		if (send(s, buf, size, 0) != size) {
			if (errno != ECONNREFUSED) {
				perror("udp_rtt: send");
				return -1;
			}
			usleep(10000);
			continue;
		}
		for (polls = 1;; polls++) {
			n = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
			if (n == size && !memcmp(buf, &seq, sizeof(seq))) {
				*us = now_us() - t0;
				return 0;
			}
			if (n < 0 && errno == ECONNREFUSED) {
				usleep(10000);
				break;
			}
			if (n < 0 && errno != EAGAIN && errno != EINTR) {
				perror("udp_rtt: recv");
				return -1;
			}
			/* else nothing yet, or a late reply to an earlier try */
			if (!(polls % 1024) && now_us() - t0 > 1e6)
				break;
		}
	}
	fprintf(stderr, "udp_rtt: no reply in 10 s\n");
	return -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_in src = { .sin_family = AF_INET };
	int s, size, iters, i, ret = 1;
	double *t;

	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0) {
		perror("udp_rtt: socket");
		return 1;
	}
	if ((argc == 3 || argc == 4) && !strcmp(argv[1], "-s"))
		return serve(s, atoi(argv[2]), argc == 4 ? argv[3] : NULL);
	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: udp_rtt -s PORT [ADDR] | udp_rtt ADDR PORT SIZE ITERATIONS [SRC]\n");
		return 2;
	}
	if (argc == 6 && (inet_pton(AF_INET, argv[5], &src.sin_addr) != 1 ||
			  bind(s, (struct sockaddr *)&src, sizeof(src)))) {
		fprintf(stderr, "udp_rtt: cannot bind to %s\n", argv[5]);
		return 1;
	}
	size = atoi(argv[3]);
	iters = atoi(argv[4]);
	if (size < 2 || size > MAX_SIZE || iters < 1 ||
	    inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
		fprintf(stderr, "udp_rtt: bad address, size or iterations\n");
		return 2;
	}
	a.sin_port = htons(atoi(argv[2]));
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("udp_rtt: connect");
		return 1;
	}
	t = calloc(iters, sizeof(*t));
	if (!t)
		return 1;
	for (i = 0; i < iters; i++)
		if (round_trip(s, size, (uint16_t)i, &t[i]))
			goto out;
	qsort(t, iters, sizeof(*t), cmp_double);
	printf("%d %d %.2f\n", size, iters, t[iters / 2] / 2);
	ret = 0;
out:
	send(s, buf, 0, 0);	/* the server stops */
	free(t);
	return ret;
}
