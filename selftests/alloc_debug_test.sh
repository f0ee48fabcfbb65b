#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# make check boots its guest with slub_debug=FZP and init_on_free=1
# (tools/check): check that the kernel under test really runs with them, so
# that the suite's "no kernel warning" also means "no red zone or poison
# overwritten". Skips when SRX_CHECK_APPEND asked for another command line.
set -u

echo "TAP version 13"
append=" ${SRX_CHECK_APPEND-slub_debug=FZP init_on_free=1} "
# FZP, or FZPU for the call sites as well.
if [[ $append != *" slub_debug=FZP"[\ U]* || $append != *" init_on_free=1 "* ]]; then
	echo "1..0 # SKIP SRX_CHECK_APPEND='${SRX_CHECK_APPEND-}' turns the allocator debugging off"
	exit 4
fi

n=0 failed=0
check() {	# check DESCRIPTION COMMAND...
	local desc=$1
	shift
	if "$@"; then
		echo "ok $((++n)) $desc"
	else
		echo "not ok $((++n)) $desc"
		failed=1
	fi
}

# Every slab cache carries the flags; kmalloc-64 exists on every kernel.
# Merged caches show up as links to the one they share, with its flags.
slab=/sys/kernel/slab/kmalloc-64
for f in sanity_checks red_zone poison; do
	check "slub_debug: $f is on for kmalloc-64" \
		test "$(cat "$slab/$f" 2>/dev/null)" = 1
done

# init_on_free has no file of its own; the kernel states it once at boot
# ("mem auto-init: stack:..., heap alloc:..., heap free:on"). With
# slub_debug's P, slab objects are poisoned instead of zeroed (the kernel
# also says "SLAB_POISON will take precedence"); pages, such as srx's
# vmalloc'ed rings, are still zeroed when freed.
line=$(dmesg | grep -m1 'mem auto-init:.*heap free:')
echo "# $line"
check "init_on_free: the kernel says heap free:on" \
	grep -q 'heap free:on' <<<"$line"

echo "1..$n"
[ "$failed" = 0 ]
