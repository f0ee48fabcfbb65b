#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# iser_test.sh - iSER on srx, and the same cases on rdma_rxe for the
# README's column: LIO's iSCSI target serves a RAM disk through an iSER
# portal (ib_isert), set up through configfs; open-iscsi's iscsid and
# iscsiadm discover it and log in with the iSER transport (ib_iser); fio
# writes and verifies on the SCSI disk, O_DIRECT dd writes data that a
# second login reads back, and the initiator logs out and forgets the
# target.
#
# Both ends on one device in the initial namespace (selftests/lib/topo.sh,
# srx-init and rxe-init): ib_isert listens and ib_iser connects with
# rdma_cm IDs in init_net (drivers/infiniband/ulp/isert/ib_isert.c,
# isert_setup_id(); drivers/infiniband/ulp/iser/iser_verbs.c,
# iser_connect()).
#
# No systemd in the guest: the test starts iscsid in the foreground
# itself and waits for its socket before the first iscsiadm, which would
# otherwise run iscsid.conf's iscsid.startup (systemctl) and give up.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"
# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"

IQN=iqn.2026-12.org.srx:iser-selftest
CT=/sys/kernel/config/target
TPG=$CT/iscsi/$IQN/tpgt_1
LUN=$CT/core/rd_mcp_1/iserlun
ISCSI_PORT=3260
INAME=/etc/iscsi/initiatorname.iscsi
LOCKDIR=/run/lock/iscsi
scale=${SRX_TEST_TIMEOUT_SCALE:-1}
portal=
# iscsiadm's arguments for our node record (target, portal, iSER iface),
# once the portal exists.
node=()
iscsid_pid=
made_iname=
made_lockdir=

echo "TAP version 13"
need_modules iscsi_target_mod ib_isert ib_iser sd_mod
need_tools fio iscsiadm iscsid iscsi-iname

# session: the sysfs directory of our iSCSI session, if any.
session() {
	local s t
	for s in /sys/class/iscsi_session/session*; do
		[ -r "$s/targetname" ] && read -r t <"$s/targetname" || continue
		[ "$t" = "$IQN" ] && { echo "$s"; return 0; }
	done
	return 1
}

logged_out() {
	! session >/dev/null
}

# disk: the SCSI disk of our session, /dev/sdX (the session's SCSI
# targets are its children: iscsi_user_scan_session()).
disk() {
	local s b
	s=$(session) || return 1
	for b in "$s"/device/target*/*:*/block/*; do
		[ -b "/dev/${b##*/}" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}

# proc_name: the name of the SCSI host driver under our session
# (iscsi_iser for ib_iser, iscsi_tcp for TCP).
proc_name() {
	local s h
	s=$(session) || return 1
	h=$(readlink -f "$s/device") || return 1
	h=${h%/*}
	cat "/sys/class/scsi_host/${h##*/}/proc_name"
}

iscsid_listening() {
	grep -q '@ISCSIADM_ABSTRACT_NAMESPACE' /proc/net/unix
}

# iscsid_up: iscsid in the foreground (it logs to stderr, kept in
# $tmp/iscsid.log), with the lock directory its database needs (idbm
# makes only the last level; the guest's /run is a fresh tmpfs) and an
# initiator name. In a session of its own: on SIGTERM iscsid signals its
# process group (iscsid_shutdown(): killpg() of its -g option's group ID,
# 0 by default, which names the caller's group), which would be this
# test's.
iscsid_up() {
	[ -d $LOCKDIR ] || { mkdir -p $LOCKDIR && made_lockdir=1; } || return 1
	if ! grep -q '^InitiatorName=iqn' $INAME 2>/dev/null; then
		[ -e $INAME ] && { say "$INAME holds no initiator name"; return 1; }
		mkdir -p "${INAME%/*}" &&
			echo "InitiatorName=$(iscsi-iname)" >$INAME &&
			made_iname=1 || return 1
	fi
	if iscsid_listening; then
		say "an iscsid is already running: using it"
		return 0
	fi
	echo "# + setsid iscsid -f"
	# Not a group leader (no job control), so setsid(1) does not fork.
	setsid iscsid -f >"$tmp/iscsid.log" 2>&1 &
	iscsid_pid=$!
	topo_wait $((10 * scale)) iscsid_listening || {
		say "iscsid does not listen 10 s after its start:"
		sed 's/^/#   iscsid: /' "$tmp/iscsid.log"
		return 1
	}
}

iscsid_down() {
	[ -n "$iscsid_pid" ] || return 0
	kill "$iscsid_pid" 2>/dev/null
	wait "$iscsid_pid" 2>/dev/null
	iscsid_pid=
	! iscsid_listening || say "iscsid still listens after its SIGTERM"
}

# target_down: LIO's side, in reverse order of target(); no session may
# be left (disabling the TPG under one drops it, and the initiator would
# then retry until its replacement timeout).
target_down() {
	local np
	if [ -d "$TPG" ]; then
		echo 0 >"$TPG/enable" 2>/dev/null
		for np in "$TPG"/np/*; do
			[ -d "$np" ] || continue
			echo 0 >"$np/iser" 2>/dev/null
			rmdir "$np"
		done
		rm -f "$TPG/lun/lun_0/iserlun"
		rmdir "$TPG/lun/lun_0" "$TPG" 2>/dev/null
	fi
	[ -d "$CT/iscsi/$IQN" ] && rmdir "$CT/iscsi/$IQN"
	[ -d "$CT/iscsi" ] && rmdir "$CT/iscsi" 2>/dev/null
	[ -d "$LUN" ] && rmdir "$LUN" "${LUN%/*}"
	! [ -d "$CT/iscsi/$IQN" ] && ! [ -d "$LUN" ] || {
		say "the target could not be removed"
		return 1
	}
}

no_connection() {
	! compgen -G '/sys/class/iscsi_connection/*' >/dev/null
}

# Whatever this test built, gone in reverse order; safe at any point.
iser_down() {
	local s
	if s=$(session); then
		long 60 iscsiadm -m session -r "${s##*session}" -u
		topo_wait $((30 * scale)) logged_out || say "$IQN: still logged in"
	fi
	if [ -n "$portal" ]; then
		iscsiadm "${node[@]}" -o delete >/dev/null 2>&1
		iscsiadm -m discoverydb -t st -p "$portal" -o delete >/dev/null 2>&1
	fi
	portal='' node=()
	iscsid_down
	# No iSCSI connection may be left when the portal goes: ib_isert
	# (6.1) reads a freed isert_np if an rdma_cm event of one still
	# arrives (isert_cma_handler() after isert_free_np()).
	topo_wait $((30 * scale)) no_connection ||
		say "an iSCSI connection is still there 30 s after iscsid went"
	target_down
	[ -n "$made_iname" ] && rm -f $INAME
	[ -n "$made_lockdir" ] && rm -rf $LOCKDIR
	made_iname='' made_lockdir=''
	return 0
}

topo_trap
# As topo_trap's, after the initiator and target are gone.
trap 's=$?; trap - EXIT; iser_down; topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

# target IP: an iSCSI target with a 32 MiB RAM disk as LUN 0 and a
# portal on IP:3260 that is also an iSER portal (writing iser=1 adds an
# rdma_cm listener on the same address). Any initiator may log in and
# write (demo mode, no ACL), without authentication: set before the TPG
# is enabled, which otherwise makes CHAP the AuthMethod.
target() {
	local ip=$1 np
	topo_run modprobe iscsi_target_mod && topo_run modprobe ib_isert || return 1
	if [ ! -d $CT ]; then
		mountpoint -q /sys/kernel/config ||
			topo_run mount -t configfs none /sys/kernel/config || return 1
	fi
	np=$TPG/np/$ip:$ISCSI_PORT
	mkdir -p "$LUN" &&
		echo rd_pages=8192 >"$LUN/control" &&
		echo 1 >"$LUN/enable" &&
		mkdir -p "$TPG/lun/lun_0" &&
		ln -s "$LUN" "$TPG/lun/lun_0/iserlun" &&
		mkdir "$np" &&
		echo 1 >"$np/iser" &&
		echo 0 >"$TPG/attrib/authentication" &&
		echo 1 >"$TPG/attrib/generate_node_acls" &&
		echo 1 >"$TPG/attrib/cache_dynamic_acls" &&
		echo 0 >"$TPG/attrib/demo_mode_write_protect" &&
		echo 1 >"$TPG/enable" || {
		say "configfs: the target could not be set up"
		dmesg | tail -n 10 | sed 's/^/#   kmsg: /'
		return 1
	}
	[ "$(cat "$np/iser")" = 1 ] || {
		say "$np is not an iSER portal"
		return 1
	}
	portal=$ip:$ISCSI_PORT
	node=(-m node -T "$IQN" -p "$portal" -I iser)
}

# discover: SendTargets over iSER (iscsid runs the discovery session
# through ib_iser) lists our target on our portal; the node record it makes
# then gets timeouts for a test: one login attempt of at most 15 s
# instead of 8 of 15 s, a lost connection failing I/O after 15 s instead
# of 120 s, and 30 s for a NOP-Out's answer, which the default 5 s could
# miss under TCG with fio running.
discover() {
	local t=$((15 * scale)) kv
	topo_run modprobe sd_mod && topo_run modprobe ib_iser || return 1
	iscsid_up || return 1
	# The discovery session's login waits 15 s by default: scaled, as
	# rxe's under KASAN took longer (iscsiadm then crashed on that path).
	iscsiadm -m discoverydb -t st -p "$portal" -I iser -o new \
		>/dev/null &&
		iscsiadm -m discoverydb -t st -p "$portal" -I iser -o update \
			-n discovery.sendtargets.timeo.login_timeout -v "$t" || {
		say "the discovery record for $portal could not be set up"
		return 1
	}
	long 120 iscsiadm -m discoverydb -t st -p "$portal" -I iser \
		--discover || {
		dmesg | tail -n 10 | sed 's/^/#   kmsg: /'
		return 1
	}
	sed 's/^/#   /' "$tmp/long.out"
	grep -qxF "$portal,1 $IQN" "$tmp/long.out" || {
		say "discovery did not list $IQN on $portal"
		return 1
	}
	for kv in node.session.initial_login_retry_max=1 \
		"node.conn[0].timeo.login_timeout=$t" \
		"node.session.timeo.replacement_timeout=$t" \
		"node.conn[0].timeo.noop_out_timeout=$((30 * scale))"; do
		iscsiadm "${node[@]}" -o update -n "${kv%=*}" -v "${kv##*=}" || {
			say "$IQN on $portal: ${kv%=*} could not be set"
			return 1
		}
	done
}

# login: log in with the node record, then the session is iSER's (as
# iscsiadm reports it and as its SCSI host's driver is) and its disk is
# present (iscsid scans the session after the login, asynchronously).
login() {
	local s p
	long 120 iscsiadm "${node[@]}" --login || {
		dmesg | tail -n 10 | sed 's/^/#   kmsg: /'
		tail -n 10 "$tmp/iscsid.log" 2>/dev/null | sed 's/^/#   iscsid: /'
		return 1
	}
	s=$(session) || {
		say "no iSCSI session of $IQN after the login"
		return 1
	}
	long 30 iscsiadm -m session || return 1
	sed 's/^/#   /' "$tmp/long.out"
	grep -qE "^iser: \[${s##*session}\] $portal,1 $IQN( |\$)" "$tmp/long.out" || {
		say "${s##*/} is not listed with the iser transport"
		return 1
	}
	p=$(proc_name)
	[ "$p" = iscsi_iser ] || {
		say "${s##*/}'s SCSI host is driven by ${p:-nothing}, not iscsi_iser"
		return 1
	}
	topo_wait $((30 * scale)) disk >/dev/null || {
		say "no SCSI disk 30 s after the login"
		return 1
	}
	say "${s##*/} logged in over iser, disk $(disk)"
}

logout() {
	long 60 iscsiadm "${node[@]}" --logout || return 1
	topo_wait $((30 * scale)) logged_out || {
		say "$IQN: still logged in 30 s after the logout"
		return 1
	}
}

# sent DEV: the packets DEV has sent (rdma_rxe and srx both count them
# as sent_pkts).
sent() {
	cat "/sys/class/infiniband/$1/ports/1/hw_counters/sent_pkts"
}

# connect IP: the target, iscsid, discovery and the first login.
connect() {
	target "$1" && discover && login
}

# io DEV: fio writes 16 MiB with crc32c in every block and reads it back
# to verify (two jobs at once, blocks of 4 KiB to 128 KiB, beyond the
# initiator's immediate data, so that the target moves them by RDMA READ
# and WRITE); 4 MiB of random bytes by O_DIRECT dd come back the same.
# The device carried it: 40 MiB crossed it at least once, in packets of
# at most 4 KiB, so it sent at least 8192 of them. Then log out.
io() {
	local dev=$1 d p0 p1 rc=0
	d=$(disk) || {
		say "not logged in"
		return 1
	}
	p0=$(sent "$dev")
	fio_verify "$d" || rc=1
	dd_back "$d" 320 || rc=1
	p1=$(sent "$dev")
	say "$dev sent $((p1 - p0)) packets"
	[ $((p1 - p0)) -ge 8192 ] || {
		say "too few packets for the data moved: not through $dev"
		rc=1
	}
	logout || rc=1
	return $rc
}

# again: a second login to the same target finds the 4 MiB dd wrote
# (in $tmp/data, at 20 MiB), read with O_DIRECT; log out, and the node
# and discovery records deleted leave none of the target's (iscsiadm
# says ISCSI_ERR_NO_OBJS_FOUND, 21).
again() {
	local d rc=0 st
	login || return 1
	d=$(disk)
	long 60 dd if="$d" of="$tmp/back2" bs=64k skip=320 count=64 iflag=direct &&
		cmp "$tmp/data" "$tmp/back2" || {
		say "the second session does not read what the first wrote"
		rc=1
	}
	logout || rc=1
	iscsiadm "${node[@]}" -o delete &&
		iscsiadm -m discoverydb -t st -p "$portal" -o delete || {
		say "the records could not be deleted"
		rc=1
	}
	iscsiadm -m node -T "$IQN" >"$tmp/nodes" 2>&1
	st=$?
	[ $st = 21 ] || {
		say "iscsiadm -m node -T $IQN exits $st after the delete:"
		sed 's/^/#   /' "$tmp/nodes"
		rc=1
	}
	return $rc
}

# suite TOPOLOGY: the cases on one device.
suite() {
	local topo=$1 drv=${1%%-*}
	up "$topo" || return
	ok "$drv: LIO iSCSI target with an iSER portal, SendTargets and login with -I iser: an iser session" \
		connect "$TOPO_B_IP4"
	ok "$drv: iSER: fio verify, O_DIRECT dd, the data through the device, logout" \
		io "$TOPO_B_DEV"
	ok "$drv: iSER: a second login reads what the first wrote; logout, records deleted" \
		again
	iser_down
	topo_down || ok "$drv: $topo removed" false
}

suite srx-init
suite rxe-init
topo_run modprobe -r ib_iser ib_isert iscsi_target_mod || true
ulp_end
