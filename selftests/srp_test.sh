#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# srp_test.sh - SRP on srx, and the same case on rdma_rxe for the README's
# column: LIO's ib_srpt serves a RAM disk, set up through configfs and
# listening through rdma_cm; the ib_srp initiator logs in through rdma_cm,
# fio writes and verifies on the SCSI disk, O_DIRECT dd reads back what it
# wrote, and the initiator logs out. Then the same under target port flaps
# (flap(), an srp/002-like stress).
#
# Both ends on one device in the initial namespace (selftests/lib/topo.sh,
# srx-init and rxe-init): ib_srpt and ib_srp create their rdma_cm IDs in
# init_net (drivers/infiniband/ulp/srpt/ib_srpt.c, srpt_rdma_cm_port_store();
# drivers/infiniband/ulp/srp/ib_srp.c, srp_new_rdma_cm_id()). RoCE has no
# IB/CM service for SRP (srpt listens there only on InfiniBand ports), so
# the login names the target by address (dest=) as blktests' srp tests do
# on rdma_rxe.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"
# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"

CT=/sys/kernel/config/target
SRP_PORT=5555
LUN=$CT/core/rd_mcp_0/srxlun
scale=${SRX_TEST_TIMEOUT_SCALE:-1}
tpg=

echo "TAP version 13"
need_modules ib_srpt ib_srp sd_mod
need_tools fio

# rport: the SRP remote port of our login (port-H:N), if any.
rport() {
	local r
	for r in /sys/class/srp_remote_ports/port-*; do
		[ -e "$r" ] && { echo "${r##*/}"; return 0; }
	done
	return 1
}

logged_out() {
	! rport >/dev/null
}

# Whatever this test built, gone in reverse order; safe at any point.
srp_down() {
	local r
	r=$(rport) && echo 1 >"/sys/class/srp_remote_ports/$r/delete"
	topo_wait $((30 * scale)) logged_out || say "$(rport) still logged in"
	if [ -n "$tpg" ] && [ -d "$tpg" ]; then
		echo 0 >"$tpg/enable"
		rm -f "$tpg/acls"/*/lun_0/lun_0
		rmdir "$tpg/acls"/*/lun_0 "$tpg/acls"/* 2>/dev/null
		rm -f "$tpg/lun/lun_0/srxlun"
		rmdir "$tpg/lun/lun_0" "$tpg" "${tpg%/*}" ||
			say "$tpg could not be removed"
	fi
	tpg=
	[ -e $CT/srpt/discovery_auth/rdma_cm_port ] &&
		echo 0 >$CT/srpt/discovery_auth/rdma_cm_port
	[ -d $CT/srpt ] && rmdir $CT/srpt
	[ -d "$LUN" ] && rmdir "$LUN" "${LUN%/*}"
	return 0
}

topo_trap
# As topo_trap's, after the initiator and target are gone.
trap 's=$?; trap - EXIT; srp_down; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

# target DEV IP: ib_srpt's port for DEV (named by the interface ID of its
# GID 0, srpt_refresh_port()) with a 32 MiB RAM disk as LUN 0, an ACL for
# the initiator's address (srpt looks an rdma_cm login up by it:
# srpt_rdma_cm_req_recv()), listening on port 5555 through rdma_cm.
target() {
	local dev=$1 ip=$2 gid port
	topo_run modprobe ib_srpt || return 1
	if [ ! -d $CT ]; then
		mountpoint -q /sys/kernel/config ||
			topo_run mount -t configfs none /sys/kernel/config || return 1
	fi
	read -r gid <"/sys/class/infiniband/$dev/ports/1/gids/0"
	port=${gid#fe80:0000:0000:0000:}
	tpg=$CT/srpt/$port/$port
	mkdir -p "$LUN" &&
		echo rd_pages=8192 >"$LUN/control" &&
		echo 1 >"$LUN/enable" &&
		mkdir -p $CT/srpt &&
		echo $SRP_PORT >$CT/srpt/discovery_auth/rdma_cm_port &&
		mkdir -p "$tpg/lun/lun_0" &&
		ln -s "$LUN" "$tpg/lun/lun_0/srxlun" &&
		mkdir -p "$tpg/acls/$ip/lun_0" &&
		ln -s "$tpg/lun/lun_0" "$tpg/acls/$ip/lun_0/lun_0" &&
		echo 1 >"$tpg/enable" || {
		say "configfs: the target could not be set up"
		return 1
	}
}

# disk: the SCSI disk of our login, /dev/sdX.
disk() {
	local r h b
	r=$(rport) || return 1
	h=${r#port-}
	h=${h%%:*}
	for b in /sys/class/scsi_device/"$h":*/device/block/*; do
		[ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# login DEV IP: ib_srp to IP:5555 through DEV, then its disk present.
# srpt_service_guid names the target port (srpt_cm_req_recv() checks
# id_ext and ioc_guid against it).
login() {
	local dev=$1 ip=$2 guid
	topo_run modprobe sd_mod && topo_run modprobe ib_srp || return 1
	read -r guid </sys/module/ib_srpt/parameters/srpt_service_guid
	echo "# + add_target id_ext=$guid,ioc_guid=$guid,dest=$ip:$SRP_PORT,src=$ip"
	echo "id_ext=$guid,ioc_guid=$guid,dest=$ip:$SRP_PORT,src=$ip" \
		>"/sys/class/infiniband_srp/srp-$dev-1/add_target" || {
		dmesg | tail -n 10 | sed 's/^/#   kmsg: /'
		return 1
	}
	topo_wait $((30 * scale)) disk >/dev/null || {
		say "no SCSI disk after the login"
		return 1
	}
	say "$(rport) logged in, disk $(disk)"
}

# logout RPORT: delete it, and it is gone in 30 s.
logout() {
	echo 1 >"/sys/class/srp_remote_ports/$1/delete" || return 1
	topo_wait $((30 * scale)) logged_out || {
		say "$1 still logged in 30 s after its delete"
		return 1
	}
}

# io DEV IP: log in, fio writes 16 MiB with crc32c in every block and
# reads it back to verify (two jobs at once, blocks of 4 KiB to 128 KiB),
# 4 MiB of random bytes by O_DIRECT dd come back the same; log out.
io() {
	local dev=$1 ip=$2 d rc=0
	target "$dev" "$ip" && login "$dev" "$ip" || return 1
	d=$(disk)
	fio_verify "$d" || rc=1
	dd_back "$d" 320 || rc=1
	logout "$(rport)" || rc=1
	return $rc
}

rport_running() {
	[ "$(cat "/sys/class/srp_remote_ports/$1/state")" = running ]
}

# flap DEV IP: blktests' srp/002 in small: fio writes and verifies as it
# goes while the target port is disabled and enabled again, FLAPS times.
# Disabling ib_srpt's TPG closes every channel (srpt_set_enabled()); the
# initiator's rport is blocked, I/O waits queued, and ib_srp reconnects
# every reconnect_delay s (scsi_transport_srp.c) until the port is back.
# fast_io_fail_tmo is set far above an outage, so no I/O may fail: fio
# must end clean, every block it read back intact, with no hang.
FLAPS=3
flap() {
	local dev=$1 ip=$2 d r i pid rc=0
	target "$dev" "$ip" && login "$dev" "$ip" || return 1
	d=$(disk)
	r=$(rport)
	echo 1 >"/sys/class/srp_remote_ports/$r/reconnect_delay" &&
		echo 600 >"/sys/class/srp_remote_ports/$r/dev_loss_tmo" &&
		echo $((60 * scale)) \
			>"/sys/class/srp_remote_ports/$r/fast_io_fail_tmo" || {
		say "$r: the timeouts could not be set"
		return 1
	}
	# verify_backlog: verify while writing, since the run is time-based.
	long 600 fio --name=flap --filename="$d" --allow_file_create=0 \
		--direct=1 --ioengine=libaio --iodepth=8 --rw=randwrite \
		--bsrange=4k-64k --size=16M --time_based \
		--runtime=$(((FLAPS * 8 + 4) * scale)) --verify=crc32c --verify_fatal=1 \
		--verify_backlog=32 --verify_state_save=0 --output=/dev/null &
	pid=$!
	for i in $(seq "$FLAPS"); do
		sleep 3
		echo 0 >"$tpg/enable" || rc=1
		say "round $i: target port disabled ($(cat \
			"/sys/class/srp_remote_ports/$r/state"))"
		sleep 2
		echo 1 >"$tpg/enable" || rc=1
		topo_wait $((60 * scale)) rport_running "$r" || {
			say "round $i: $r not running 60 s after the port came back"
			rc=1
			break
		}
	done
	wait "$pid" || {
		say "fio failed or found bad data across the flaps"
		rc=1
	}
	say "$r: $(cat "/sys/class/srp_remote_ports/$r/failed_reconnects") failed reconnects"
	dd_back "$d" 320 || rc=1
	logout "$r" || rc=1
	return $rc
}

# suite TOPOLOGY: the cases on one device.
suite() {
	local topo=$1 drv=${1%%-*}
	up "$topo" || return
	ok "$drv: ib_srpt target, ib_srp login through rdma_cm: fio verify, O_DIRECT dd, logout" \
		io "$TOPO_B_DEV" "$TOPO_B_IP4"
	srp_down
	ok "$drv: target port disabled and enabled $FLAPS times under fio: the I/O goes on, verified" \
		flap "$TOPO_B_DEV" "$TOPO_B_IP4"
	srp_down
	topo_down || ok "$drv: $topo removed" false
}

suite srx-init
suite rxe-init
topo_run modprobe -r ib_srp ib_srpt || true
ulp_end
