# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash disable=SC2034
# (SC2034: the TOPO_* variables are for the tests that source this.)
#
# selftests/lib/topo.sh - the topologies of the data-path tests (issue 12),
# built and torn down inside the VM guest, and questions about them. A test
# sources it:
#
#	. "$(dirname "$0")/lib/topo.sh"
#	topo_trap			# topo_down on EXIT, INT and TERM
#	topo_up srx-rxe --vlan 12 || exit 1
#	idx=$(topo_wait_gid a "$TOPO_A_DEV" "$TOPO_A_IP4")
#	topo_exec a ibv_rc_pingpong -d "$TOPO_A_DEV" -g "$idx" ...
#
# Every topology has two sides, a and b. Side a is always srx in a network
# namespace of its own; side b is what it talks to. What a side is made of
# is in TOPO_<A|B>_<FIELD> (topo_var SIDE FIELD reads one):
#
#   NS        its network namespace ("" for the initial one)
#   DEV       its RDMA device          DRIVER  srx or rxe
#   NETDEV    the netdev DEV sits on   IP4, IP6, LL6 (link-local) its addresses
#   VLAN_NETDEV, VLAN_IP4, VLAN_IP6    the same for the VLAN (--vlan ID only)
#
# srx-rxe: srx faces rdma_rxe across a veth pair.
#
#   namespace tp-a                         initial namespace
#   ──────────────                         ─────────────────
#   tpsrxa (srx)                           tprxe (rdma_rxe)
#     │                                      │
#   tpa0 ════════════════ veth ════════════ tpb0
#   192.0.2.1/24, 2001:db8:c::1/64         192.0.2.2/24, 2001:db8:c::2/64
#   └ tpa0.ID (--vlan ID)                  └ tpb0.ID
#     198.51.100.1/24, 2001:db8:c:ID::1/64   198.51.100.2/24, 2001:db8:c:ID::2/64
#
#   rxe must be in the initial namespace: rdma_rxe 6.1 opens its UDP tunnel
#   sockets (port 4791) there when the module loads and routes every packet
#   there (drivers/infiniband/sw/rxe/rxe_net.c: rxe_net_init() and
#   rxe_find_route4() use &init_net), without SO_REUSEPORT. srx keeps one
#   socket pair per namespace of its netdevs (issue 12), so an srx device
#   on a netdev of the initial namespace (srx0 on eth0, which
#   install_test.sh leaves for the tests) would take 4791 there and keep
#   rdma_rxe from loading. topo_up therefore parks such devices (deletes
#   them and remembers them) before it loads rdma_rxe, and topo_down unloads
#   rdma_rxe if topo_up loaded it and adds them back.
#
# srx-srx: srx on both ends, each in a namespace of its own.
#
#   namespace tp-a                         namespace tp-b
#   tpsrxa (srx) ── tpa0 ═══ veth ═══ tpb0 ── tpsrxb (srx)
#   addresses (and --vlan) as for srx-rxe
#
# srx-self: one srx device, both ends of a test on it (side b is side a:
# TOPO_B_* = TOPO_A_*). The veth's other end only gives tpa0 its carrier.
#
#   namespace tp-a
#   tpsrxa (srx) ── tpa0 ═══ veth ═══ tpa1 (no address)
#
# rxe-rxe: rdma_rxe on both ends, both in the initial namespace (see
# srx-rxe), for figures of rdma_rxe beside srx's under the same conditions
# (netem_test.sh). IPv4 only. Two addresses of one namespace are local to
# each other, and the local routing table, looked up first (rule 0), would
# deliver between them through lo without touching the veth. topo_up
# therefore moves the local table's rule from priority 0 to
# TOPO_LOCAL_PREF, and sends what each address sends the other out of its
# own veth end, by rules before it that match locally sent packets only
# (iif lo): rdma_rxe's route lookups and the RDMA core's address
# resolution are both output lookups (rxe_net.c: rxe_find_route4(); core
# addr.c: addr4_resolve()). The receiving end takes a packet whose source
# is an address of its own namespace with accept_local=1 and rp_filter=0
# (fib_validate_source()), per veth end. rdma_rxe sends a packet to itself
# only when the destination MAC is its own netdev's (rxe_prepare()), which
# the neighbour entry of the other end never is. topo_down puts the rule
# back.
#
#   initial namespace
#   tprxa (rdma_rxe) ── tpa0 ═══ veth ═══ tpb0 ── tprxe (rdma_rxe)
#   192.0.2.1/24                                  192.0.2.2/24
#
# srx-init, rxe-init: one device (srx or rdma_rxe) in the initial namespace,
# both ends of a test on it, as srx-self is. For the kernel's RDMA users
# (nvme-rdma, nvmet-rdma, rpcrdma, iSER, SRP), which create their rdma_cm
# IDs in init_net (drivers/nvme/host/rdma.c: rdma_create_id(&init_net,
# ...)), so neither end can live in another namespace. Side b is the
# device; side a is side b. rxe-init parks init_net's srx devices, as
# srx-rxe does.
#
#   namespace tp-a                         initial namespace
#   tpa0 (no address) ═══ veth ═══════════ tpb0 ── tpsrxb (srx) or tprxe
#                                          192.0.2.2/24, 2001:db8:c::2/64
#
# RDMA netns mode (`rdma system set netns`), TOPO_NETNS_MODE=shared (the
# default) or exclusive. The RDMA core can change it only while no network
# namespace but the initial one exists (drivers/infiniband/core/device.c,
# rdma_compatdev_set(): EBUSY otherwise), so topo_up sets it before it
# creates the namespaces and topo_down puts the old mode back after they
# are gone. What the mode changes is only where a device is seen: srx puts
# its device in its netdev's namespace in exclusive mode (seen there only)
# and in init_net in shared mode (seen everywhere); its GIDs come from the
# netdev either way (roce_gid_mgmt.c follows netdev and address events of
# every namespace), and its sockets follow the netdev's namespace. The
# tests use shared mode, the mode every other test of the suite runs in,
# so that a device and its sysfs can also be inspected from the initial
# namespace when a test fails; topo_exec and every helper below run in the
# side's namespace, which works in both modes, and gid_mtu_test.sh builds
# srx-srx once in exclusive mode to keep it so.
#
# Nothing here sends a packet: it builds the topology and answers questions
# about it (GIDs, MTUs), so it works before srx has a data path.
#
# Cleanup is trap-safe and idempotent: topo_down removes whatever of these
# objects exists, by name, whether or not this process made it, and topo_up
# begins with it, so a run killed half-way is cleaned up by the next one.
# What must be restored (parked devices, whether rdma_rxe was loaded, the
# netns mode) is kept in $TOPO_STATE for that reason.
#
# Addresses: documentation ranges only (192.0.2.0/24, 198.51.100.0/24,
# 2001:db8::/32) and link-local ones. Commands that could hang run under
# timeout(1); functions return non-zero on failure and say why on stderr
# as "# topo: ..." (TAP comments).

TOPO_NS_A=tp-a
TOPO_NS_B=tp-b
TOPO_STATE=${TOPO_STATE:-/run/srx-topo.state}
# Seconds one command may take; seconds a GID or a port may take to appear.
TOPO_T=${TOPO_T:-30}
TOPO_WAIT=${TOPO_WAIT:-10}
TOPO_NETNS_MODE=${TOPO_NETNS_MODE:-shared}
# rxe-rxe: the local table's rule while it is up, and the tables that send
# 192.0.2.1's and 192.0.2.2's packets to each other out of their own veth end.
TOPO_LOCAL_PREF=1000
TOPO_TABLE_A=47911
TOPO_TABLE_B=47912
TOPO_NAME=

topo_say() {
	echo "# topo: $*" >&2
}

# topo_run CMD...: echo it as a TAP comment, run it under the timeout.
# "topo_run topo_exec SIDE CMD..." runs CMD in SIDE's namespace.
topo_run() {
	local out rc ns cmd=("$@")
	if [ "$1" = topo_exec ]; then
		ns=$(topo_var "$2" NS)
		cmd=("${@:3}")
		[ -n "$ns" ] && cmd=(ip netns exec "$ns" "${cmd[@]}")
	fi
	echo "# + ${cmd[*]}" >&2
	out=$(timeout --kill-after=5 "$TOPO_T" "${cmd[@]}" 2>&1)
	rc=$?
	[ -n "$out" ] && printf '%s\n' "$out" | sed 's/^/#   /' >&2
	return $rc
}

# topo_wait SECONDS CMD...: poll CMD until it succeeds, at most SECONDS.
topo_wait() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

# topo_var SIDE FIELD: the value of TOPO_<SIDE>_<FIELD>.
topo_var() {
	local v="TOPO_${1^^}_$2"
	echo "${!v-}"
}

# topo_exec SIDE CMD...: run CMD in SIDE's network namespace.
topo_exec() {
	local ns
	ns=$(topo_var "$1" NS)
	shift
	if [ -n "$ns" ]; then
		ip netns exec "$ns" "$@"
	else
		"$@"
	fi
}

# ---------------------------------------------------------------------------
# Questions about a side

# topo_gid_of ADDRESS: the GID the RDMA core makes of an IPv4 or IPv6
# address (IPv4-mapped for IPv4), as sysfs prints it.
topo_gid_of() {
	local a=$1 head tail i groups=() h=() t=()
	if [[ $a =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
		printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' \
			"${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" \
			"${BASH_REMATCH[3]}" "${BASH_REMATCH[4]}"
		return
	fi
	a=${a%%/*}
	if [[ $a == *::* ]]; then
		head=${a%%::*} tail=${a##*::}
	else
		head=$a tail=
	fi
	[ -n "$head" ] && IFS=: read -ra h <<<"$head"
	[ -n "$tail" ] && IFS=: read -ra t <<<"$tail"
	groups=("${h[@]}")
	for ((i = ${#h[@]} + ${#t[@]}; i < 8; i++)); do
		groups+=(0)
	done
	groups+=("${t[@]}")
	printf '%04x:%04x:%04x:%04x:%04x:%04x:%04x:%04x\n' \
		$((16#${groups[0]})) $((16#${groups[1]})) $((16#${groups[2]})) \
		$((16#${groups[3]})) $((16#${groups[4]})) $((16#${groups[5]})) \
		$((16#${groups[6]})) $((16#${groups[7]}))
}

# topo_gids SIDE DEV: the GID table of DEV's port 1 as SIDE sees it, one
# "INDEX GID TYPE NDEV" line per entry in use (TYPE "RoCE v2" is two words:
# "INDEX GID RoCE v2 NDEV"). From sysfs: ports/1/gids/N and
# gid_attrs/{types,ndevs}/N (an unused entry reads as zeros, and its
# attributes fail to read).
topo_gids() {
	# shellcheck disable=SC2016
	topo_exec "$1" timeout "$TOPO_T" bash -c '
		p=/sys/class/infiniband/$1/ports/1
		[ -d "$p/gids" ] || exit 1
		grep -H . "$p"/gids/* 2>/dev/null |
		while IFS= read -r line; do
			f=${line%%:*} g=${line#*:}
			[ "$g" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
			i=${f##*/}
			read -r type <"$p/gid_attrs/types/$i" 2>/dev/null || type=?
			read -r ndev <"$p/gid_attrs/ndevs/$i" 2>/dev/null || ndev=-
			echo "$i $g $type $ndev"
		done' topo-gids "$2"
}

# topo_gid_index SIDE DEV ADDRESS [NDEV]: the index of the RoCE v2 GID of
# ADDRESS on DEV (whose netdev is NDEV, when given); non-zero if none. A
# type is two words ("RoCE v2", "IB/RoCE v1").
topo_gid_index() {
	local gid idx g t1 t2 ndev
	gid=$(topo_gid_of "$3")
	while read -r idx g t1 t2 ndev; do
		if [ "$g" != "$gid" ] || [ "$t1 $t2" != "RoCE v2" ]; then
			continue
		fi
		if [ -z "${4:-}" ] || [ "$ndev" = "$4" ]; then
			echo "$idx"
			return 0
		fi
	done < <(topo_gids "$1" "$2")
	return 1
}

# topo_wait_gid SIDE DEV ADDRESS [NDEV]: wait (TOPO_WAIT seconds at most)
# for the RoCE v2 GID of ADDRESS and print its index. GIDs follow address
# events through a work queue of the RDMA core (roce_gid_mgmt.c,
# netdevice_event_work_handler), so they appear a moment after the address.
topo_wait_gid() {
	local end=$((SECONDS + TOPO_WAIT))
	while :; do
		topo_gid_index "$@" && return 0
		[ $SECONDS -ge $end ] && break
		sleep 0.2
	done
	topo_say "no RoCE v2 GID for $3${4:+ on $4} on $2 after ${TOPO_WAIT}s; the table:"
	topo_gids "$1" "$2" | sed 's/^/#   /' >&2
	return 1
}

# topo_wait_no_gid SIDE DEV ADDRESS: wait for the GID of ADDRESS (any type,
# any netdev) to leave DEV's table.
topo_wait_no_gid() {
	local end=$((SECONDS + TOPO_WAIT)) gid
	gid=$(topo_gid_of "$3")
	while :; do
		topo_gids "$1" "$2" | grep -q " $gid " || return 0
		[ $SECONDS -ge $end ] && break
		sleep 0.2
	done
	topo_say "$3 ($gid) is still a GID of $2 after ${TOPO_WAIT}s:"
	topo_gids "$1" "$2" | grep " $gid " | sed 's/^/#   /' >&2
	return 1
}

# topo_active_mtu SIDE DEV: port 1's active MTU in bytes as libibverbs
# reports it (ibv_devinfo: "active_mtu: 1024 (3)"); "invalid" when the
# device reports a value that is no IB MTU ("invalid MTU (0)").
topo_active_mtu() {
	local o
	o=$(topo_exec "$1" timeout "$TOPO_T" ibv_devinfo -d "$2" -i 1 2>/dev/null) ||
		return 1
	[[ $o =~ active_mtu:[[:space:]]+([^[:space:]]+) ]] || return 1
	echo "${BASH_REMATCH[1]}"
}

# topo_port_state SIDE DEV: ACTIVE, DOWN, ... as `rdma link` says.
topo_port_state() {
	local o
	o=$(topo_exec "$1" timeout "$TOPO_T" rdma link show "$2/1" 2>/dev/null) ||
		return 1
	[[ $o =~ \ state\ ([A-Z_]+) ]] && echo "${BASH_REMATCH[1]}"
}

topo_port_active() {
	[ "$(topo_port_state "$1" "$2")" = ACTIVE ]
}

# topo_set_mtu SIDE MTU: the MTU of SIDE's netdev.
topo_set_mtu() {
	topo_run topo_exec "$1" ip link set "$(topo_var "$1" NETDEV)" mtu "$2"
}

# topo_rx_on_one_cpu MASK: receive steering (RPS) of both veth ends, "1" to
# process every received packet on CPU 0, "0" to turn it off again; tries
# both ends either way. veth hands a packet to its peer on the backlog of
# the CPU that sends it, and netem's queue is sent by whichever CPU runs
# it (its timer's, or one enqueueing): two packets of one flow can sit on
# two CPUs' backlogs and be taken out of order. With RPS to one CPU they
# wait on one backlog, in the order netem sent them.
topo_rx_on_one_cpu() {
	local side dev rc=0
	for side in a b; do
		[ $side = a ] && dev=$TOPO_A_NETDEV || dev=$TOPO_B_NETDEV
		topo_exec $side sh -c \
			"echo $1 > /sys/class/net/$dev/queues/rx-0/rps_cpus" ||
			rc=1
	done
	return $rc
}

# ---------------------------------------------------------------------------
# Building

# What topo_down restores, kept in $TOPO_STATE across processes:
# topo_parked ("NAME NETDEV" of each srx device parked), topo_loaded_rxe
# (1 if topo_up loaded rdma_rxe) and topo_old_mode (the netns mode before).
topo_state_save() {
	{
		printf 'topo_parked=%q\n' "$topo_parked"
		printf 'topo_loaded_rxe=%q\n' "$topo_loaded_rxe"
		printf 'topo_old_mode=%q\n' "$topo_old_mode"
	} >"$TOPO_STATE"
}

topo_netns_mode() {
	local o
	o=$(timeout "$TOPO_T" rdma system show 2>/dev/null) || return 1
	[[ $o =~ netns\ ([a-z]+) ]] && echo "${BASH_REMATCH[1]}"
}

# topo_set_netns_mode MODE: the RDMA netns mode, retried for a while: the
# namespaces topo_down deleted go away asynchronously (cleanup_net()), and
# until the last one has, the core answers EBUSY.
topo_set_netns_mode() {
	[ "$(topo_netns_mode)" = "$1" ] && return 0
	topo_wait "$TOPO_T" quiet_ timeout "$TOPO_T" rdma system set netns "$1" ||
		topo_run rdma system set netns "$1"
}

quiet_() {
	"$@" >/dev/null 2>&1
}

# topo_park_init_net_srx: delete every srx device whose netdev is in the
# initial namespace (srx names its node "srx", device.c), remembering each
# in topo_parked for topo_down.
topo_park_init_net_srx() {
	local line name ndev desc
	while IFS= read -r line; do
		[[ $line =~ ^link\ ([^/]+)/1\ .*\ netdev\ ([^ ]+) ]] || continue
		name=${BASH_REMATCH[1]} ndev=${BASH_REMATCH[2]}
		read -r desc <"/sys/class/infiniband/$name/node_desc" 2>/dev/null
		[ "$desc" = srx ] || continue
		topo_parked+="${topo_parked:+ }$name:$ndev"
		topo_state_save
		topo_run rdma link delete "$name" || return 1
	done < <(timeout "$TOPO_T" rdma link show 2>/dev/null)
}

# topo_no_dad SIDE IFNAME: IPv6 addresses on IFNAME usable at once, the
# link-local one included (no duplicate address detection, no tentative
# state). Through /proc: sysctl(8) would read the dot of a VLAN's name as a
# separator.
topo_no_dad() {
	topo_run topo_exec "$1" sh -c "echo 0 >/proc/sys/net/ipv6/conf/$2/accept_dad"
}

# topo_side_net SIDE NS DEV DRIVER NETDEV: record a side, bring its netdev
# up with its addresses (and the VLAN's).
topo_side_net() {
	local side=$1 ns=$2 dev=$3 drv=$4 nd=$5 host U
	U=${side^^}
	[ "$side" = a ] && host=1 || host=2
	printf -v "TOPO_${U}_NS" %s "$ns"
	printf -v "TOPO_${U}_DEV" %s "$dev"
	printf -v "TOPO_${U}_DRIVER" %s "$drv"
	printf -v "TOPO_${U}_NETDEV" %s "$nd"
	printf -v "TOPO_${U}_IP4" %s "192.0.2.$host"
	printf -v "TOPO_${U}_IP6" %s "2001:db8:c::$host"
	printf -v "TOPO_${U}_LL6" %s ""
	printf -v "TOPO_${U}_VLAN_NETDEV" %s ""
	printf -v "TOPO_${U}_VLAN_IP4" %s ""
	printf -v "TOPO_${U}_VLAN_IP6" %s ""

	topo_no_dad "$side" "$nd" || return 1
	topo_run topo_exec "$side" ip link set "$nd" up || return 1
	topo_run topo_exec "$side" ip addr add "192.0.2.$host/24" dev "$nd" || return 1
	topo_run topo_exec "$side" ip addr add "2001:db8:c::$host/64" dev "$nd" nodad ||
		return 1
	[ -n "$topo_vlan" ] || return 0
	printf -v "TOPO_${U}_VLAN_NETDEV" %s "$nd.$topo_vlan"
	printf -v "TOPO_${U}_VLAN_IP4" %s "198.51.100.$host"
	printf -v "TOPO_${U}_VLAN_IP6" %s "2001:db8:c:$topo_vlan::$host"
	topo_run topo_exec "$side" ip link add link "$nd" name "$nd.$topo_vlan" \
		type vlan id "$topo_vlan" || return 1
	topo_no_dad "$side" "$nd.$topo_vlan" || return 1
	topo_run topo_exec "$side" ip link set "$nd.$topo_vlan" up || return 1
	topo_run topo_exec "$side" ip addr add "198.51.100.$host/24" \
		dev "$nd.$topo_vlan" || return 1
	topo_run topo_exec "$side" ip addr add "2001:db8:c:$topo_vlan::$host/64" \
		dev "$nd.$topo_vlan" nodad
}

# topo_side_dev SIDE: the side's RDMA device, added from inside its
# namespace (rdma link add looks the netdev up there), then its port ACTIVE
# and the netdev's link-local address known. Both ends of the veth must be
# up by then: the port follows the carrier.
topo_side_dev() {
	local dev nd
	dev=$(topo_var "$1" DEV) nd=$(topo_var "$1" NETDEV)
	topo_run topo_exec "$1" rdma link add "$dev" type "$(topo_var "$1" DRIVER)" \
		netdev "$nd" || return 1
	if ! topo_wait "$TOPO_WAIT" topo_port_active "$1" "$dev"; then
		topo_say "$dev's port is $(topo_port_state "$1" "$dev"), not ACTIVE"
		return 1
	fi
	topo_wait "$TOPO_WAIT" topo_ll6 "$1" || {
		topo_say "$nd has no link-local IPv6 address"
		return 1
	}
}

# topo_ll6 SIDE: record SIDE's link-local address, if it has one yet.
topo_ll6() {
	local o U=${1^^}
	o=$(topo_exec "$1" ip -6 -o addr show dev "$(topo_var "$1" NETDEV)" scope link)
	[[ $o =~ inet6\ (fe80:[0-9a-f:]+)/ ]] || return 1
	printf -v "TOPO_${U}_LL6" %s "${BASH_REMATCH[1]}"
}

# topo_load_rxe: rdma_rxe loaded (remembered for topo_down if topo_up
# loaded it), init_net's srx devices parked first.
topo_load_rxe() {
	topo_park_init_net_srx || return 1
	grep -q '^rdma_rxe ' /proc/modules && return 0
	topo_loaded_rxe=1
	topo_state_save
	topo_run modprobe rdma_rxe
}

# topo_cross_local: rxe-rxe's routing (see the top of this file): tpa0 and
# tpb0 take packets from each other's address, and each address's packets
# to the other leave through its own end. The per-netdev settings go with
# the veth.
topo_cross_local() {
	local nd
	for nd in tpa0 tpb0; do
		topo_run sh -c "echo 1 >/proc/sys/net/ipv4/conf/$nd/accept_local &&
			echo 0 >/proc/sys/net/ipv4/conf/$nd/rp_filter" || return 1
	done
	topo_run ip route add 192.0.2.2/32 dev tpa0 table "$TOPO_TABLE_A" || return 1
	topo_run ip route add 192.0.2.1/32 dev tpb0 table "$TOPO_TABLE_B" || return 1
	topo_run ip rule add pref 10 iif lo from 192.0.2.1 to 192.0.2.2 \
		lookup "$TOPO_TABLE_A" || return 1
	topo_run ip rule add pref 11 iif lo from 192.0.2.2 to 192.0.2.1 \
		lookup "$TOPO_TABLE_B" || return 1
	topo_run ip rule add pref "$TOPO_LOCAL_PREF" lookup local || return 1
	topo_run ip rule del pref 0 lookup local
}

# topo_policy_routing: the kernel has routing rules (CONFIG_IP_MULTIPLE_TABLES,
# which Debian's kernels have and make check-debug's need not): rxe-rxe
# needs them.
topo_policy_routing() {
	ip rule show >/dev/null 2>&1
}

# topo_uncross_local: the rules as they were, whether or not this process
# changed them (a killed run's); non-zero if the local table's rule is not
# at priority 0 afterwards. Nothing to do on a kernel without rules.
topo_uncross_local() {
	local t
	topo_policy_routing || return 0
	for t in "$TOPO_TABLE_A" "$TOPO_TABLE_B"; do
		while ip rule show table "$t" | grep -q .; do
			ip rule del table "$t" 2>/dev/null || break
		done
	done
	ip rule show pref 0 | grep -q 'lookup local' ||
		topo_run ip rule add pref 0 lookup local || return 1
	while ip rule show pref "$TOPO_LOCAL_PREF" | grep -q 'lookup local'; do
		ip rule del pref "$TOPO_LOCAL_PREF" lookup local 2>/dev/null || break
	done
	ip rule show pref 0 | grep -q 'lookup local'
}

# topo_same_side TO FROM: side TO is side FROM (one device, both ends).
topo_same_side() {
	local f
	for f in NS DEV DRIVER NETDEV IP4 IP6 LL6 VLAN_NETDEV VLAN_IP4 VLAN_IP6; do
		printf -v "TOPO_${1^^}_$f" %s "$(topo_var "$2" "$f")"
	done
}

# topo_up NAME [--vlan ID]: build topology NAME (srx-rxe, srx-srx,
# srx-self, srx-init, rxe-init or rxe-rxe; no VLAN for rxe-rxe) and set TOPO_A_* and TOPO_B_*. Needs srx installed (modprobe
# finds it: install_test.sh) or loaded. Returns non-zero, having said why, if any
# step fails; topo_down then removes what was built.
topo_up() {
	local name=$1
	topo_vlan=
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--vlan) topo_vlan=$2; shift 2 ;;
		*) topo_say "topo_up: unknown argument $1"; return 2 ;;
		esac
	done
	if [ -n "$topo_vlan" ] && ! [[ $topo_vlan =~ ^[1-9][0-9]{0,3}$ && $topo_vlan -le 4094 ]]; then
		topo_say "topo_up: VLAN ID $topo_vlan is not 1..4094"
		return 2
	fi
	case $name in
	srx-rxe | srx-srx | srx-self | srx-init | rxe-init | rxe-rxe) ;;
	*) topo_say "topo_up: no topology $name"; return 2 ;;
	esac
	# Installed, or loaded by hand (make bench's guests skip depmod):
	# either way rdma link add finds the srx link type.
	if ! modinfo -F filename srx >/dev/null 2>&1 && [ ! -d /sys/module/srx ]; then
		topo_say "srx is neither installed (selftests/install_test.sh) nor loaded"
		return 1
	fi

	topo_down
	topo_parked='' topo_loaded_rxe='' topo_old_mode=''
	topo_old_mode=$(topo_netns_mode) || {
		topo_say "rdma system show failed"
		return 1
	}
	topo_state_save
	TOPO_NAME=$name
	topo_set_netns_mode "$TOPO_NETNS_MODE" || return 1

	topo_run ip netns add "$TOPO_NS_A" || return 1
	topo_run ip -n "$TOPO_NS_A" link set lo up || return 1
	case $name in
	srx-rxe)
		topo_run ip link add tpa0 netns "$TOPO_NS_A" type veth peer name tpb0 ||
			return 1
		topo_load_rxe || return 1
		topo_side_net a "$TOPO_NS_A" tpsrxa srx tpa0 || return 1
		topo_side_net b "" tprxe rxe tpb0 || return 1
		topo_side_dev a && topo_side_dev b || return 1
		;;
	srx-srx)
		topo_run ip netns add "$TOPO_NS_B" || return 1
		topo_run ip -n "$TOPO_NS_B" link set lo up || return 1
		topo_run ip link add tpa0 netns "$TOPO_NS_A" type veth \
			peer name tpb0 netns "$TOPO_NS_B" || return 1
		topo_side_net a "$TOPO_NS_A" tpsrxa srx tpa0 || return 1
		topo_side_net b "$TOPO_NS_B" tpsrxb srx tpb0 || return 1
		topo_side_dev a && topo_side_dev b || return 1
		;;
	srx-self)
		topo_run ip link add tpa0 netns "$TOPO_NS_A" type veth \
			peer name tpa1 netns "$TOPO_NS_A" || return 1
		topo_run ip -n "$TOPO_NS_A" link set tpa1 up || return 1
		topo_side_net a "$TOPO_NS_A" tpsrxa srx tpa0 || return 1
		topo_side_dev a || return 1
		topo_same_side b a
		;;
	rxe-rxe)
		if [ -n "$topo_vlan" ]; then
			topo_say "topo_up: rxe-rxe has no VLAN"
			return 2
		fi
		if ! topo_policy_routing; then
			topo_say "topo_up: rxe-rxe needs routing rules (CONFIG_IP_MULTIPLE_TABLES)"
			return 1
		fi
		topo_run ip link add tpa0 type veth peer name tpb0 || return 1
		topo_load_rxe || return 1
		topo_side_net a "" tprxa rxe tpa0 || return 1
		topo_side_net b "" tprxe rxe tpb0 || return 1
		topo_cross_local || return 1
		topo_side_dev a && topo_side_dev b || return 1
		;;
	srx-init | rxe-init)
		topo_run ip link add tpa0 netns "$TOPO_NS_A" type veth peer name tpb0 ||
			return 1
		topo_run ip -n "$TOPO_NS_A" link set tpa0 up || return 1
		if [ "$name" = rxe-init ]; then
			topo_load_rxe || return 1
			topo_side_net b "" tprxe rxe tpb0 || return 1
		else
			topo_side_net b "" tpsrxb srx tpb0 || return 1
		fi
		topo_side_dev b || return 1
		topo_same_side a b
		;;
	esac
	topo_say "$name is up: a = ${TOPO_A_DEV} on ${TOPO_A_NETDEV} in ${TOPO_A_NS:-init}," \
		"b = ${TOPO_B_DEV} on ${TOPO_B_NETDEV} in ${TOPO_B_NS:-init}"
}

# topo_down: remove every object of every topology that exists, then
# restore what topo_up changed (parked srx devices, rdma_rxe, the netns
# mode). Safe to call at any time, any number of times; returns non-zero
# if something could not be removed or restored (said on stderr).
topo_down() {
	local bad=0 d ns p
	# State a killed run left behind, when this process has none.
	if [ -z "${topo_old_mode-}" ] && [ -r "$TOPO_STATE" ]; then
		# shellcheck disable=SC1090
		. "$TOPO_STATE"
	fi
	# Devices first (rdma link delete waits for the unregistration), in
	# whichever namespace sees them, then the netdevs with their VLANs
	# (deleting one end of a veth deletes the other), then the namespaces.
	for d in tpsrxa tpsrxb tprxe tprxa; do
		[ -e "/sys/class/infiniband/$d" ] &&
			quiet_ timeout "$TOPO_T" rdma link delete "$d"
	done
	for ns in "$TOPO_NS_A" "$TOPO_NS_B"; do
		[ -e "/run/netns/$ns" ] || continue
		# shellcheck disable=SC2016
		quiet_ timeout "$TOPO_T" ip netns exec "$ns" sh -c 'for d in tpsrxa tpsrxb; do
			[ -e /sys/class/infiniband/$d ] && rdma link delete $d; done'
	done
	quiet_ ip link del tpb0
	for ns in "$TOPO_NS_A" "$TOPO_NS_B"; do
		[ -e "/run/netns/$ns" ] || continue
		quiet_ ip -n "$ns" link del tpa0
		quiet_ ip -n "$ns" link del tpb0
		quiet_ ip netns del "$ns" || { topo_say "ip netns del $ns failed"; bad=1; }
	done
	topo_uncross_local || { topo_say "the local table's rule is not back at 0"; bad=1; }
	if ! topo_wait "$TOPO_T" topo_gone; then
		topo_say "left behind: $(topo_leftovers)"
		bad=1
	fi
	if [ "${topo_loaded_rxe-}" = 1 ]; then
		# rdma_rxe's devices are gone: nothing holds the module.
		topo_run modprobe -r rdma_rxe || bad=1
	fi
	topo_loaded_rxe=
	for p in ${topo_parked-}; do
		[ -e "/sys/class/infiniband/${p%%:*}" ] && continue
		topo_run ip link set "${p#*:}" up
		topo_run rdma link add "${p%%:*}" type srx netdev "${p#*:}" || bad=1
	done
	topo_parked=
	if [ -n "${topo_old_mode-}" ]; then
		topo_set_netns_mode "$topo_old_mode" || bad=1
	fi
	topo_old_mode=
	rm -f "$TOPO_STATE"
	TOPO_NAME=
	return $bad
}

# Nothing of ours left: no device, no netdev in the initial namespace, and
# no namespace (ip netns del is immediate, the namespace's teardown and
# its netdevs' unregistration are not).
topo_gone() {
	local d
	for d in tpsrxa tpsrxb tprxe tprxa; do
		[ -e "/sys/class/infiniband/$d" ] && return 1
	done
	! ip link show tpb0 >/dev/null 2>&1 &&
		[ ! -e "/run/netns/$TOPO_NS_A" ] && [ ! -e "/run/netns/$TOPO_NS_B" ]
}

# What of ours exists, for the log.
topo_leftovers() {
	local d
	for d in tpsrxa tpsrxb tprxe tprxa; do
		[ -e "/sys/class/infiniband/$d" ] && echo "device $d"
	done
	ip -o link show 2>/dev/null | grep -oE ' tp[ab][0-9.]+' | sed 's/^ /netdev /'
	ip netns list 2>/dev/null | grep -E "^($TOPO_NS_A|$TOPO_NS_B)( |\$)" | sed 's/^/netns /'
}

# topo_trap: topo_down when the test exits, also on INT and TERM (what
# selftests/run's timeout sends). The test's exit status stays, or becomes
# 1 if it was 0 and the cleanup failed: a leak is a failure.
topo_trap() {
	trap topo__on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

topo__on_exit() {
	local s=$?
	trap - EXIT
	topo_down || { [ $s -ne 0 ] || s=1; }
	exit $s
}
