#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bad_kmsg_test.sh - tools/vm/scan-kmsg and its list, tools/vm/bad-kmsg,
# without a VM. Prints TAP.
#
# Each line below has the shape of a kernel report that must fail a run
# (the format strings are in linux-source-6.1: mm/page_alloc.c warn_alloc(),
# mm/vmalloc.c, net/core/dev.c netdev_wait_allrefs_any(), kernel/rcu/
# tree_exp.h, kernel/sched/core.c, kernel/locking/lockdep.c,
# mm/kasan/report.c, mm/kmemleak.c, lib/ubsan.c, kernel/panic.c); most set
# no taint bit, so the scan is all that catches them. Then lines of a clean
# boot that must not match, and the cases where the scan cannot run, which
# must say so (exit 2) instead of reading as clean.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
scan=$top/tools/vm/scan-kmsg
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

bad=(
	'[   12.345678] unregister_netdevice: waiting for srx_t0 to become free. Usage count = 2'
	'[   30.000001] rcu: INFO: rcu_sched detected expedited stalls on CPUs/tasks: { 1-... } 21003 jiffies s: 85 root: 0x2/.'
	'[   30.000001] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:'
	'[    9.876543] kworker/0:1: page allocation failure: order:10, mode:0x40dc0(GFP_KERNEL|__GFP_COMP|__GFP_ZERO), nodemask=(null),cpuset=/,mems_allowed=0'
	'[    9.876543] cq_test: vmalloc error: size 1073741824, failed to allocate pages, mode:0xdc0(GFP_KERNEL|__GFP_ZERO), nodemask=(null)'
	'[   50.100000] Kernel panic - not syncing: Fatal exception'
	'[    3.000000] BUG: KASAN: slab-use-after-free in srx_cq_kick+0x1a/0x80 [srx]'
	'[    3.000000] ================================================================================'$'\n''[    3.000001] UBSAN: shift-out-of-bounds in kernel/ring.h:42:17'
	'[    4.000000] WARNING: possible circular locking dependency detected'
	'[    4.000000] WARNING: suspicious RCU usage'
	'[    4.000000] WARNING: possible recursive locking detected'
	'[    4.000000] WARNING: inconsistent lock state'
	'[    4.000000] [ BUG: Invalid wait context ]'
	'[    4.000000] BUG: scheduling while atomic: cq_test/123/0x00000002'
	'[    4.000000] BUG: sleeping function called from invalid context at mm/slab.h:723'
	'[    5.000000] kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)'
	'unreferenced object 0xffff888004a1b000 (size 64):'
	'[    6.000000] BUG: kernel NULL pointer dereference, address: 0000000000000008'
	'[    6.000000] kernel BUG at drivers/infiniband/core/device.c:1234!'
	'[    6.000000] Oops: 0000 [#1] PREEMPT SMP NOPTI'
	'[    6.000000] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] SMP NOPTI'
	'[    6.000000] refcount_t: underflow; use-after-free.'
	'[    6.000000] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [cq_test:321]'
	'[  250.000000] INFO: task rmmod:456 blocked for more than 120 seconds.'
	'[    6.000000] list_add corruption. prev->next should be next (ffff888003c0a010), but was 0000000000000000.'
	'[    6.000000] list_del corruption, ffff888003c0a010->next is LIST_POISON1 (dead000000000100)'
	'[    6.000000] BUG kmalloc-64 (Tainted: G    B      OE     ): Redzone overwritten'
	'[    6.000000] BUG kmalloc-64 (Tainted: G    B      OE     ): Poison overwritten'
	'[    6.000000] ODEBUG: free active (active state 0) object type: timer_list hint: srx_timer+0x0/0x10 [srx]'
	'[    6.000000] INFO: trying to register non-static key.'
	'[    6.000000] kmemleak: Kernel memory leak detector disabled'
	'[    6.000000] =====================================
[    6.000000] WARNING: bad unlock balance detected!'
)
clean=(
	'[    0.000000] Kernel command line: console=ttyS0 quiet panic=-1 panic_on_warn=0 no_timer_check mitigations=off slub_debug=FZPU init_on_free=1'
	'[    3.123456] srx-vm: command exited with status 0'
	'[    3.223456] srx: loading out-of-tree module taints kernel.'
	'[    4.000000] infiniband srx0: set active'
	'[    4.100000] rcu: Hierarchical RCU implementation.'
	'[    4.100000] kmemleak: Automatic memory scanning thread started'
	'[    4.200000] virtio_net virtio1 eth0: renamed from eth0'
)

# Every report matches, each alone (so one line cannot cover for another).
for line in "${bad[@]}"; do
	printf '%s\n' "$line" >"$tmp/log"
	out=$("$scan" "$tmp/log")
	status=$?
	[ "$status" = 0 ] && [ -n "$out" ]
	result $? "matched (status $status): ${line##*$'\n'}"
done

printf '%s\n' "${clean[@]}" >"$tmp/clean"
out=$("$scan" "$tmp/clean")
status=$?
[ "$status" = 1 ] && [ -z "$out" ]
result $? "a clean boot's lines match nothing (status $status${out:+: $out})"

# The console and the saved dmesg repeat each other: each line once, and
# from every log given.
printf '%s\n' "${clean[0]}" "${bad[0]}" "${bad[0]}" >"$tmp/twice"
printf '%s\n' "${bad[3]}" >"$tmp/other"
out=$("$scan" "$tmp/twice" "$tmp/other")
[ "$out" = "${bad[0]}"$'\n'"${bad[3]}" ]
result $? "each bad line is printed once, from every log"

# Fail closed: a scan that cannot run is an error, never "no bad lines".
"$scan" --patterns "$tmp/no-such-list" "$tmp/twice" 2>"$tmp/err"
status=$?
[ "$status" = 2 ] && grep -q 'cannot read the pattern list' "$tmp/err"
result $? "a missing pattern list is an error (status $status)"

: >"$tmp/empty"
"$scan" --patterns "$tmp/empty" "$tmp/twice" 2>"$tmp/err"
status=$?
[ "$status" = 2 ] && grep -q 'is empty' "$tmp/err"
result $? "an empty pattern list is an error (status $status)"

printf 'WARNING:\n\nBUG:\n' >"$tmp/blank"
"$scan" --patterns "$tmp/blank" "$tmp/clean" 2>"$tmp/err"
status=$?
[ "$status" = 2 ] && grep -q 'blank line' "$tmp/err"
result $? "a blank line in the pattern list is an error (status $status)"

mkdir "$tmp/dir"
"$scan" --patterns "$tmp/dir" "$tmp/twice" 2>"$tmp/err"
status=$?
[ "$status" = 2 ]
result $? "a pattern list that is no file is an error (status $status)"

"$scan" "$tmp/no-such-log" 2>"$tmp/err"
status=$?
[ "$status" = 2 ] && grep -q 'cannot read the log' "$tmp/err"
result $? "a missing log is an error (status $status)"

"$scan" --check
status=$?
[ "$status" = 0 ]
result $? "the project's list passes --check (status $status)"

tap_end
