#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# mraccess_test.sh - memory-key access (kernel/mr.c) on a real kernel:
# inserts selftests/mraccess_module's module, whose init registers MRs over
# user memory of insmod's own process and kernel memory, then checks
# lookups, faults, copies (also from softirq) and that deregistration waits
# for a held reference (the module's comment lists the checks). Its
# "ok N - ..." lines in the kernel log become this test's results; insmod's
# status and the kernel log (an Oops, a warning) are checked too. Needs no
# srx device: the module runs mr.c on a device of its own.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
mod=$top/selftests/mraccess_module/srx_mraccess_test.ko
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
# ib_umem_get() is ib_uverbs'; insmod loads no dependency.
echo "# + modprobe ib_uverbs"
modprobe ib_uverbs || { echo "1..0 # SKIP ib_uverbs does not load"; exit 4; }

marker="srx-selftest: mraccess_test $$"
echo "$marker" >/dev/kmsg
echo "# + insmod $mod"
# A subshell: if the module's init oopses, only it dies.
( exec insmod "$mod" ) >/tmp/mraccess.out 2>&1
status=$?
sed 's/^/# /' /tmp/mraccess.out
log=$(dmesg | sed -n "/$marker/,\$p")

while IFS= read -r line; do
	if [[ $line =~ srx_mraccess_test:\ (not\ )?ok\ [0-9]+\ -\ (.*)$ ]]; then
		if [ -n "${BASH_REMATCH[1]}" ]; then
			result not-ok "${BASH_REMATCH[2]}"
		else
			result ok "${BASH_REMATCH[2]}"
		fi
	elif [[ $line == *srx_mraccess_test:* ]]; then
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
grep -q '^srx_mraccess_test ' /proc/modules && rmmod srx_mraccess_test

echo "1..$n"
[ $fails -eq 0 ]
