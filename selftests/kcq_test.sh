#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Kernel CQs, which no process can reach: load selftests/kcq_module, whose
# init resizes a kernel CQ of srx0 over and over while a kernel thread
# flushes receives into it and another polls it with ib_poll_cq(), and
# fails (EIO) unless every completion arrived once and in order. Needs srx0
# (install_test.sh creates it) and the module built by `make`.
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

echo "# + insmod $ko dev=$dev"
if insmod "$ko" dev="$dev" 2>/tmp/kcq_test.err; then
	dmesg | grep 'srx_kcq_test:' | tail -n 1 | sed 's/^/# /'
	echo "ok 1 a kernel CQ resized under a producer and ib_poll_cq() loses, repeats and reorders nothing"
	rmmod srx_kcq_test
	status=0
else
	sed 's/^/# /' /tmp/kcq_test.err
	dmesg | grep 'srx_kcq_test:' | tail -n 5 | sed 's/^/# /'
	echo "not ok 1 a kernel CQ resized under a producer and ib_poll_cq() loses, repeats and reorders nothing"
	status=1
fi
echo "1..1"
exit $status
