#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# The fast path's promise, counted with strace on srx0 (install_test.sh
# made it): ibv_poll_cq() and ibv_req_notify_cq() make no system call, and
# ibv_create_cq()/ibv_destroy_cq() go through the uverbs ioctl interface,
# not the legacy write() commands. Each count compares two runs of a loop
# that differ only in length, so that start-up and teardown cancel out.
# Those loops poll an empty CQ and re-arm one that never fires; so polls
# that take completions, and arms right after an event, are counted too,
# each round between two getppid() markers (cq_bench syscalls-take).
# Also: a thread-safe CQ polled by one thread stays biased to it, and a
# second poller revokes that with one membarrier() call.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bench=$top/build/cq_bench
dev=${SRX_TEST_DEV:-srx0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=0 failed=0
result() {	# result OK DESCRIPTION
	if [ "$1" = 0 ]; then
		echo "ok $((++n)) $2"
	else
		echo "not ok $((++n)) $2"
		failed=1
	fi
}

# trace_count FILTER WORKLOAD LOOPS -> the lines of the trace (one per call)
trace_count() {
	strace -f -qq -e "trace=$1" -o "$tmp/trace" "$bench" -d "$dev" $2 -n "$3" \
		>/dev/null || { echo -1; return; }
	grep -cv 'resumed>' "$tmp/trace"
}

echo "TAP version 13"
if ! command -v strace >/dev/null || [ ! -x "$bench" ]; then
	echo "1..0 # SKIP needs strace and build/cq_bench"
	exit 4
fi

for w in syscalls-poll syscalls-arm; do
	a=$(trace_count all "$w" 1000)
	b=$(trace_count all "$w" 11000)
	echo "# $w: $a system calls for 1000 loops, $b for 11000"
	[ "$a" -ge 0 ] && [ "$b" -ge 0 ] && [ "$a" = "$b" ]
	result $? "$w: 10000 more loops make no more system calls"
done

# Polls that take completions, and arms after an event: nothing between
# the markers of any round but the first. The first poll of a thread-safe
# CQ makes its thread the CQ's bias owner, which records its thread id
# once (gettid(), libsrx's cq.c); that round is the warm-up. The markers
# themselves are counted, so a workload that skipped them cannot pass.
rounds=100
c=$(trace_count all syscalls-take $rounds)
read -r markers first inside < <(awk '
	/^([0-9]+ +)?getppid\(/ { m++; next }
	/resumed>/ { next }
	m == 1 { f++; print "# first round: " $0 > "/dev/stderr"; next }
	m % 2 == 1 { n++; if (n <= 5) print "# inside markers: " $0 > "/dev/stderr" }
	END { print m + 0, f + 0, n + 0 }' "$tmp/trace")
echo "# syscalls-take: $rounds rounds of 8 completions polled and a re-arm after each event: $markers markers; $first system call(s) in the first round, $inside in the $((rounds - 1)) after it"
[ "$c" -ge 0 ] && [ "$markers" = $((2 * rounds)) ] && [ "$inside" = 0 ]
result $? "polls taking completions and arms after an event make no system call"

# 10 more create+destroy pairs: at least 20 more uverbs ioctls, no write().
a_ioctl=$(trace_count ioctl "create -c 256" 10)
a_ioctl_verbs=$(grep -c 'RDMA_VERBS_IOCTL' "$tmp/trace")
a_write=$(trace_count write "create -c 256" 10)
b_ioctl=$(trace_count ioctl "create -c 256" 20)
b_ioctl_verbs=$(grep -c 'RDMA_VERBS_IOCTL' "$tmp/trace")
b_write=$(trace_count write "create -c 256" 20)
echo "# create+destroy: RDMA_VERBS_IOCTL $a_ioctl_verbs -> $b_ioctl_verbs, write() $a_write -> $b_write"
[ "$a_ioctl" -ge 0 ] && [ "$b_ioctl" -ge 0 ] &&
	[ $((b_ioctl_verbs - a_ioctl_verbs)) -ge 20 ]
result $? "create+destroy: two RDMA_VERBS_IOCTL calls per pair"
[ "$a_write" -ge 0 ] && [ "$b_write" -ge 0 ] && [ "$a_write" = "$b_write" ]
result $? "create+destroy: no write() command"

# Biased polling (libsrx's cq.c): one thread polling a thread-safe CQ never
# revokes its bias; a second poller revokes it with exactly one
# MEMBARRIER_CMD_PRIVATE_EXPEDITED, however many polls follow. (The
# registration at context open is MEMBARRIER_CMD_REGISTER_..., not counted.)
for w in "poll -b 1" "poll -b 16"; do
	for shared in "" "-S"; do
		want=0
		[ -n "$shared" ] && want=1
		c=$(trace_count membarrier "$w $shared -r 2" 256)
		got=$(grep -c '(MEMBARRIER_CMD_PRIVATE_EXPEDITED' "$tmp/trace")
		reg=$(grep -c '(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED' "$tmp/trace")
		echo "# $w ${shared:-(one thread)}: $got revoking membarrier() calls, $reg registrations"
		[ "$c" -ge 0 ] && [ "$got" = "$want" ] && [ "$reg" = 1 ]
		result $? "$w ${shared:+with a second poller }makes $want revoking membarrier() call(s)"
	done
done

echo "1..$n"
exit "$failed"
