#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Kernel CQs, which no process can reach: load selftests/kcq_module, whose
# init resizes a kernel CQ of srx0 over and over while a kernel thread
# flushes receives into it and another polls it with ib_poll_cq(), and
# fails (EIO) unless every completion arrived once and in order; then
# srx_cq_free_test, which frees a softirq-polled CQ while the core's poll
# handler is held in its re-arm. Needs srx0 (install_test.sh creates it)
# and the modules built by `make`.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
ko=$top/selftests/kcq_module/srx_kcq_test.ko
dev=${SRX_TEST_DEV:-srx0}

echo "TAP version 13"
case $dev in srx*) ;; *) echo "1..0 # SKIP srx-specific (device $dev)"; exit 4 ;; esac
if [ ! -e "/sys/class/infiniband/$dev" ]; then
	echo "1..0 # SKIP no device $dev"
	exit 4
fi
if [ ! -f "$ko" ]; then
	echo "1..0 # SKIP $ko is not built"
	exit 4
fi

# load KO DESCRIPTION: case N passes if KO loads (and is unloaded again).
n=0 status=0
load() {
	local ko=$1 name
	name=$(basename "$ko" .ko)
	n=$((n + 1))
	echo "# + insmod $ko dev=$dev"
	if insmod "$ko" dev="$dev" 2>"/tmp/$name.err"; then
		dmesg | grep "$name:" | tail -n 2 | sed 's/^/# /'
		echo "ok $n $2"
		rmmod "$name"
	elif grep -q "Operation not supported" "/tmp/$name.err"; then
		# srx_cq_free_test without kprobes (make check-debug's kernel)
		dmesg | grep "$name:" | tail -n 1 | sed 's/^/# /'
		echo "ok $n $2 # SKIP this kernel has no kprobes"
	else
		sed 's/^/# /' "/tmp/$name.err"
		dmesg | grep "$name:" | tail -n 5 | sed 's/^/# /'
		echo "not ok $n $2"
		status=1
	fi
}

load "$ko" "a kernel CQ resized under a producer and ib_poll_cq() loses, repeats and reorders nothing"
# kcq_module/srx_cq_free_test.c: kernel/cq.c's wait in srx_destroy_cq().
free_case="ib_free_cq() of a softirq-polled CQ waits for the poll handler's re-arm"
if [ "$(nproc)" -ge 2 ]; then
	load "$top/selftests/kcq_module/srx_cq_free_test.ko" "$free_case"
else
	n=$((n + 1))
	echo "ok $n $free_case # SKIP needs two CPUs"
fi
echo "1..$n"
exit $status
