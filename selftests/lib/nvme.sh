# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash disable=SC2154
# (SC2154: $tmp is rc.sh's.)
#
# selftests/lib/nvme.sh - an nvmet-rdma target and an nvme-rdma host on
# one RDMA device, for nvme_test.sh and soak_test.sh: the target serves a
# 48 MiB file through configfs, the host connects with nvme-cli, and
# nvme_down removes whatever of them exists. Source it after topo.sh,
# rc.sh and tap.sh (long, say, topo_wait, topo_run, $tmp).

NQN=nqn.2026-12.org.srx:selftest
CFS=/sys/kernel/config/nvmet
NVME_PORT=4420
scale=${SRX_TEST_TIMEOUT_SCALE:-1}

# short_timeouts: 2 s for the commands of our controller from now on: its
# block I/O (the path device's queue, which took nvme_core's io_timeout
# when the controller was created) and every admin command (they read
# nvme_core's admin_timeout when they are issued: drivers/nvme/host/core.c,
# nvme_init_request(), 6.1 and 6.12). restore_timeouts undoes the latter.
# The netdev's unregistration still waits those seconds for the device's,
# a few more under TCG: the kernel's report of it waits 60 s (times the
# slowdown) instead of 10 (net.core.netdev_unregister_timeout_secs), and
# the case itself bounds the removal at 30 s.
P=/sys/module/nvme_core/parameters
W=/proc/sys/net/core/netdev_unregister_timeout_secs
saved_admin='' saved_wait=''
short_timeouts() {
	local q w=$((60 * scale))
	for q in /sys/class/nvme/"$(ctrl)"/nvme*/queue/io_timeout; do
		[ -e "$q" ] || continue
		echo 2000 >"$q" || return 1
	done
	[ -n "$saved_admin" ] || read -r saved_admin <$P/admin_timeout
	[ -n "$saved_wait" ] || read -r saved_wait <$W
	echo 2 >$P/admin_timeout && echo $((w > 3600 ? 3600 : w)) >$W
}

restore_timeouts() {
	[ -n "$saved_admin" ] && echo "$saved_admin" >$P/admin_timeout
	[ -n "$saved_wait" ] && echo "$saved_wait" >$W
	saved_admin='' saved_wait=''
}

# Whatever this test built, gone in reverse order; safe at any point.
nvme_down() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -r "$c/subsysnqn" ] && [ "$(cat "$c/subsysnqn")" = "$NQN" ] || continue
		echo 1 >"$c/delete_controller" 2>/dev/null
	done
	# A controller still connecting goes once its attempt ends.
	topo_wait $((30 * scale)) gone || say "$(ctrl) could not be deleted"
	rm -f "$CFS/ports/1/subsystems/$NQN" 2>/dev/null
	[ -d "$CFS/ports/1" ] && rmdir "$CFS/ports/1"
	if [ -d "$CFS/subsystems/$NQN" ]; then
		echo 0 >"$CFS/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
		rmdir "$CFS/subsystems/$NQN/namespaces/1" 2>/dev/null
		# The target's controllers hold the subsystem until they are freed.
		topo_wait $((30 * scale)) rmdir "$CFS/subsystems/$NQN" 2>/dev/null ||
			say "$CFS/subsystems/$NQN could not be removed"
	fi
	rm -f "$tmp/ns.img"
	restore_timeouts
}

# target IP: nvmet-rdma listens on IP:4420 and serves a 48 MiB file.
# buffered_io: the file is on the guest's tmpfs, which has no O_DIRECT
# before Linux 6.6, and nvmet opens the file O_DIRECT otherwise
# (drivers/nvme/target/io-cmd-file.c, nvmet_file_ns_enable()).
target() {
	local ns=$CFS/subsystems/$NQN/namespaces/1 p=$CFS/ports/1
	topo_run modprobe nvmet-rdma || return 1
	if [ ! -d "$CFS" ]; then
		topo_run mount -t configfs none /sys/kernel/config || return 1
	fi
	truncate -s 48M "$tmp/ns.img" || return 1
	mkdir "$CFS/subsystems/$NQN" &&
		echo 1 >"$CFS/subsystems/$NQN/attr_allow_any_host" &&
		mkdir "$ns" &&
		echo 1 >"$ns/buffered_io" &&
		printf %s "$tmp/ns.img" >"$ns/device_path" &&
		echo 1 >"$ns/enable" &&
		mkdir "$p" &&
		echo rdma >"$p/addr_trtype" &&
		echo ipv4 >"$p/addr_adrfam" &&
		echo "$1" >"$p/addr_traddr" &&
		echo $NVME_PORT >"$p/addr_trsvcid" &&
		ln -s "$CFS/subsystems/$NQN" "$p/subsystems/$NQN" || {
		say "configfs: the target could not be set up"
		return 1
	}
}

# ctrl: the controller of our subsystem (nvmeN), if connected.
ctrl() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -r "$c/subsysnqn" ] && [ "$(cat "$c/subsysnqn")" = "$NQN" ] || continue
		echo "${c##*/}"
		return 0
	done
	return 1
}

# disk: our namespace's block device: nvmeXnY, the multipath head when
# the kernel has native multipath (Debian's has), whose path devices
# (nvmeXcYnZ) are hidden and have no node in /dev.
disk() {
	local b name
	for b in /sys/block/nvme*n*; do
		name=${b##*/}
		[[ $name =~ ^nvme[0-9]+n[0-9]+$ ]] && [ -b "/dev/$name" ] || continue
		[ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$NQN" ] || continue
		echo "/dev/$name"
		return 0
	done
	return 1
}

# writes: the writes our controller's namespaces have completed, counted
# on the request queues under it (nvmeXcYnZ with native multipath, whose
# head is bio-based, nvmeXnY without).
writes() {
	local f w sum=0
	for f in /sys/class/nvme/"$(ctrl)"/nvme*/stat; do
		[ -r "$f" ] || continue
		read -r _ _ _ _ w _ <"$f" && sum=$((sum + w))
	done
	echo $sum
}

writes_since() {
	[ "$(writes)" -gt "$1" ]
}

gone() {
	! ctrl >/dev/null
}

# connect IP [ARGS]: nvme-rdma to IP:4420 with two default queues and a
# poll queue, then the namespace's block device present.
connect() {
	local ip=$1
	shift
	topo_run modprobe nvme-rdma || return 1
	long 60 nvme connect -t rdma -a "$ip" -s $NVME_PORT -n "$NQN" \
		--nr-io-queues=2 --nr-poll-queues=1 "$@" || return 1
	topo_wait $((20 * scale)) disk >/dev/null || {
		say "no block device for $NQN; block devices:" /sys/block/*
		say "in $(ctrl):" "/sys/class/nvme/$(ctrl)"/*
		return 1
	}
	say "$(ctrl) connected, disk $(disk)"
}

disconnect() {
	long 60 nvme disconnect -n "$NQN" || return 1
	topo_wait $((20 * scale)) gone || {
		say "$(ctrl) still there after nvme disconnect"
		return 1
	}
}
