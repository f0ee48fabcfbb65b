#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# selftests/config lists, as kselftest directories do, the kernel options
# the tests need: the RDMA core and its user access (srx itself), rdma_rxe
# (the bench smoke run and tools/compare), the netdevs device_test.sh builds
# or refuses (veth, bonding, VLAN, tun, WireGuard), network namespaces, and
# what tools/vm/run boots on (virtio-net, 9p, overlayfs) or fails a run for
# (hung-task and soft-lockup detectors), and what libsrx and its tests lean
# on: membarrier() (biased polling), seccomp filters (bias_revoke_test.c),
# memory cgroups (memcg_test.c), high-resolution timers (latency bounds of
# a few milliseconds, less than a 250 Hz tick), the preemption model
# switched through debugfs (doorbell_test.c), and ns_last_pid, which only
# checkpoint/restore provides (bias_revoke_test.c reuses a tid). This
# checks the kernel under test against it, so that a kernel without one of
# them fails here, by name,
# instead of somewhere inside another test. "=m" is also met by "=y".
# Debian's kernels keep their configuration in /boot; a kernel booted with
# tools/vm/run --kernel (the debug kernel) has it in /proc/config.gz.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
kconfig=/boot/config-$(uname -r)

echo "TAP version 13"
if [ ! -r "$kconfig" ] && [ -r /proc/config.gz ]; then
	kconfig=$(mktemp)
	trap 'rm -f "$kconfig"' EXIT
	zcat /proc/config.gz >"$kconfig"
fi
if [ ! -r "$kconfig" ]; then
	echo "1..0 # SKIP no /boot/config-$(uname -r) or /proc/config.gz to check against"
	exit 4
fi

n=0 failed=0
while IFS='=' read -r opt want; do
	case $opt in CONFIG_*) ;; *) continue ;; esac
	have=$(grep -m1 "^$opt=" "$kconfig" | cut -d= -f2)
	if [ "$have" = "$want" ] || { [ "$want" = m ] && [ "$have" = y ]; }; then
		echo "ok $((++n)) $opt=${have} (needs $want)"
	else
		echo "not ok $((++n)) $opt=${have:-unset} (needs $want)"
		failed=1
	fi
done <"$top/selftests/config"
echo "1..$n"
exit "$failed"
