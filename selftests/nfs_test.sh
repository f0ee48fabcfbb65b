#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nfs_test.sh - NFS over RDMA on srx, and the same case on rdma_rxe for the
# README's column: nfsd serves a tmpfs export (NFSv4 only) with an RDMA
# listener on port 20049, a client mounts it with proto=rdma, writes files
# buffered and with O_DIRECT, reads them back with O_DIRECT (every byte by
# an RPC over the RDMA transport) and finds them in the export, then
# unmounts.
#
# Both ends on one device in the initial namespace (selftests/lib/topo.sh,
# srx-init and rxe-init): svcrdma and the client's xprtrdma create their
# rdma_cm IDs in init_net (net/sunrpc/xprtrdma/svc_rdma_transport.c and
# verbs.c), as nvme_test.sh's users do. No rpcbind, statd or idmapd: NFSv4
# needs none of them; rpc.mountd answers nfsd's export upcalls.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"
# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"

NFS_RDMA_PORT=20049
export_dir=$tmp/export
mnt=$tmp/mnt
mountd=

echo "TAP version 13"
need_modules nfsd rpcrdma nfsv4
need_tools rpc.nfsd rpc.mountd exportfs mount.nfs

# Whatever this test started, stopped in reverse order; safe at any point.
# A hard mount whose server is gone would hang umount: -f, then -l.
nfs_down() {
	if mountpoint -q "$mnt" 2>/dev/null; then
		timeout 30 umount "$mnt" || timeout 30 umount -f "$mnt" ||
			umount -l "$mnt"
	fi
	[ -d /proc/fs/nfsd ] && [ -e /proc/fs/nfsd/threads ] &&
		timeout 60 rpc.nfsd 0 >/dev/null 2>&1
	timeout 30 exportfs -ua >/dev/null 2>&1
	if [ -n "$mountd" ]; then
		kill "$mountd" 2>/dev/null
		wait "$mountd" 2>/dev/null
		mountd=
	fi
	mountpoint -q "$export_dir" 2>/dev/null && umount "$export_dir"
	mountpoint -q /proc/fs/nfsd && umount /proc/fs/nfsd
	return 0
}

topo_trap
# As topo_trap's, after the server and client are gone.
trap 's=$?; trap - EXIT; nfs_down; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

# server: nfsd with NFSv4 only on TCP 2049 (rpc.nfsd will not start v4
# without it) and RDMA 20049, grace and lease times at their 10 s minimum
# (set before the listeners exist, or EBUSY: fs/nfsd/nfsctl.c), the grace
# period then ended so that the first OPEN does not wait for it. tmpfs
# has no UUID: fsid=0 makes it exportable and the NFSv4 root.
server() {
	topo_run modprobe nfsd && topo_run modprobe rpcrdma || return 1
	mountpoint -q /proc/fs/nfsd || topo_run mount -t nfsd nfsd /proc/fs/nfsd ||
		return 1
	mkdir -p "$export_dir" "$mnt"
	topo_run mount -t tmpfs -o size=64m tmpfs "$export_dir" || return 1
	topo_run exportfs -o rw,sync,fsid=0,insecure,no_root_squash,no_subtree_check \
		"192.0.2.0/24:$export_dir" || return 1
	rpc.mountd -F -N 2 -N 3 >"$tmp/mountd.log" 2>&1 &
	mountd=$!
	long 60 rpc.nfsd -N 3 -G 10 -L 10 --rdma=$NFS_RDMA_PORT 4 || return 1
	grep -q "rdma $NFS_RDMA_PORT" /proc/fs/nfsd/portlist || {
		say "nfsd has no RDMA listener: $(tr '\n' ' ' </proc/fs/nfsd/portlist)"
		return 1
	}
	echo Y >/proc/fs/nfsd/v4_end_grace 2>/dev/null ||
		say "the grace period could not be ended (it ends in 10 s)"
	return 0
}

# files: the mount is over RDMA; a 1 MiB file copied (buffered, written at
# close), 8 MiB by O_DIRECT dd, both read back by O_DIRECT dd and equal,
# and both in the export with the same bytes.
files() {
	local ip=$1 rc=0 f
	long 90 mount -t nfs -o vers=4.2,proto=rdma,port=$NFS_RDMA_PORT,soft,timeo=300,retrans=2 \
		"$ip:/" "$mnt" || return 1
	grep " $mnt nfs4 .*proto=rdma" /proc/mounts | sed 's/^/# /'
	grep -q " $mnt nfs4 .*proto=rdma" /proc/mounts || {
		say "the mount is not over RDMA"
		rc=1
	}
	head -c 1M /dev/urandom >"$tmp/small" && head -c 8M /dev/urandom >"$tmp/big" ||
		return 1
	long 60 cp "$tmp/small" "$mnt/small" || rc=1
	long 120 dd if="$tmp/big" of="$mnt/big" bs=256k oflag=direct || rc=1
	for f in small big; do
		long 120 dd if="$mnt/$f" of="$tmp/$f.back" bs=256k iflag=direct || rc=1
		cmp "$tmp/$f" "$tmp/$f.back" || {
			say "$f read back over NFS differs from what was written"
			rc=1
		}
		cmp "$tmp/$f" "$export_dir/$f" || {
			say "$f in the export differs from what was written"
			rc=1
		}
	done
	long 60 umount "$mnt" || rc=1
	return $rc
}

suite() {
	local topo=$1 drv=${1%%-*}
	up "$topo" || return
	ok "$drv: nfsd listens on RDMA port $NFS_RDMA_PORT" server
	ok "$drv: mount proto=rdma, files written and read back with O_DIRECT, umount" \
		files "$TOPO_B_IP4"
	nfs_down
	topo_down || ok "$drv: $topo removed" false
}

suite srx-init
suite rxe-init
topo_run modprobe -r nfsv4 nfs nfsd rpcrdma || true
ulp_end
