#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kverbs_test.sh - the kernel verbs path agrees with what srx reports:
# inserts selftests/kverbs_module/srx_kverbs_test.ko, whose init runs the
# checks on every srx device (ib_post_send() opcodes, QP remote atomic
# access, RC and UD traffic between kernel QPs, a kernel SRQ with its
# limit event and ib_drain_qp()) and fails if one fails. Runs in the VM
# after install_test.sh.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
ko=$top/selftests/kverbs_module/srx_kverbs_test.ko

echo "TAP version 13"
if [ ! -f "$ko" ]; then
	echo "1..0 # SKIP $ko is not built"
	exit 4
fi
marker="srx-selftest: kverbs_test $$"
echo "$marker" >/dev/kmsg
echo "# + insmod $ko"
insmod "$ko"
st=$?
dmesg | awk -v m="$marker" 'index($0, m) { f = 1; next } f' |
	grep srx_kverbs_test | sed 's/^/# /'
rmmod srx_kverbs_test 2>/dev/null
if [ $st = 0 ]; then
	echo "ok 1 kernel ib_post_send() and QP access agree with the srx device's attributes"
else
	echo "not ok 1 kernel ib_post_send() and QP access agree with the srx device's attributes (insmod: $st)"
fi
echo "1..1"
exit $st
