#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# srx as a kernel ULP sees it: insert selftests/kernel_consumer's module,
# whose init creates a PD, CQ and QP on the test device through the RDMA
# core's kernel API, posts to it and checks the answers (the module's
# comment lists them). Its "ok"/"not ok" lines in the kernel log become
# this test's results; insmod's status and the kernel log (an Oops, a
# warning) are checked too, so a check that crashes the module's init
# still reports, as a failure. Runs after install_test.sh (srx0 exists).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
mod=$top/selftests/kernel_consumer/srx_kconsumer_test.ko
dev=${SRX_TEST_DEV:-srx0}
n=0
fails=0

result() {	# result ok|not-ok DESCRIPTION
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		fails=$((fails + 1))
	fi
}

echo "TAP version 13"
if [ ! -f "$mod" ]; then
	echo "# $mod is missing: make selftests"
	exit 4
fi
if [[ $dev != srx* ]]; then
	echo "# $dev is not an srx device"
	exit 4
fi
rdma link show "$dev/1" >/dev/null 2>&1 || {
	ip link set eth0 up
	rdma link add "$dev" type srx netdev eth0
}

marker="srx-selftest: kernel_consumer_test $$"
echo "$marker" >/dev/kmsg
echo "# + insmod $mod dev=$dev"
# A subshell: if the module's init oopses, only it dies.
( exec insmod "$mod" dev="$dev" ) >/tmp/kconsumer.out 2>&1
status=$?
sed 's/^/# /' /tmp/kconsumer.out
log=$(dmesg | sed -n "/$marker/,\$p")

while IFS= read -r line; do
	if [[ $line =~ srx_kconsumer_test:\ (not\ )?ok\ [0-9]+\ -\ (.*)$ ]]; then
		if [ -n "${BASH_REMATCH[1]}" ]; then
			result not-ok "${BASH_REMATCH[2]}"
		else
			result ok "${BASH_REMATCH[2]}"
		fi
	elif [[ $line == *srx_kconsumer_test:* ]]; then
		echo "# ${line#*] }"
	fi
done <<<"$log"

if grep -qE 'BUG:|Oops|WARNING:|general protection' <<<"$log"; then
	grep -E -A12 'BUG:|Oops|WARNING:|general protection' <<<"$log" | head -30 | sed 's/^/# /'
	result not-ok "the kernel stayed clean (it logged a BUG, Oops or warning)"
else
	result ok "the kernel stayed clean"
fi
if [ $status -eq 0 ]; then
	result ok "insmod succeeded (every check passed)"
else
	result not-ok "insmod succeeded (status $status)"
fi
grep -q '^srx_kconsumer_test ' /proc/modules && rmmod srx_kconsumer_test

echo "1..$n"
[ $fails -eq 0 ]
