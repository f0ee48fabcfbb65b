#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# gid_mtu_test.sh - what a RoCE v2 device makes of its netdev's addresses
# and MTU, on srx and, in the same run and measured the same way, on
# rdma_rxe (the README's support table states both):
#
#   - the netdev's IPv4 address is an IPv4-mapped GID of type "RoCE v2",
#     its IPv6 addresses (link-local ones too) are RoCE v2 GIDs, a VLAN's
#     addresses are GIDs whose netdev (gid_attrs/ndevs) is the VLAN, and a
#     removed address's GID goes away, each within a bounded wait;
#   - active_mtu follows the netdev MTU by the device's rule, at every
#     boundary of it, and is a valid IB MTU even below the smallest one
#     that fits;
#   - ibv_modify_qp() to RTR with a path_mtu above the port's active MTU
#     fails with EINVAL; one at or below it is taken.
#
# srx-rxe topology of selftests/lib/topo.sh, with VLAN 12, then srx-srx in
# the RDMA core's exclusive netns mode and srx-self, which show that each
# topology comes up with the GIDs its tests will address:
#
#   namespace tp-a                         initial namespace
#   tpsrxa (srx) ── tpa0 ═══ veth ═══ tpb0 ── tprxe (rdma_rxe)
#                   └ tpa0.12               └ tpb0.12
#
# A check rxe 6.1 does not make (the path_mtu refusal) is reported for rxe
# as a skip that says what rxe did, and passes if rxe makes it. Runs in the
# VM after install_test.sh; leaves srx0 and rdma_rxe as it found them. TAP;
# commands are echoed as "# + cmd".
set -u

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$top/build}
probe=$build/helpers/mtu_probe
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"

n=0
fails=0
skip_reason=
start_time=$SECONDS

# shellcheck source=selftests/lib/tap.sh
. "$top/selftests/lib/tap.sh"

# ---------------------------------------------------------------------------
# The rules

# The largest IB MTU (256..4096) that is at most PAYLOAD, or 0.
ib_mtu_fitting() {
	local m
	for m in 4096 2048 1024 512 256; do
		if [ "$1" -ge $m ]; then
			echo $m
			return
		fi
	done
	echo 0
}

# srx: iboe_get_mtu() of include/rdma/ib_addr.h, the rule rdma_cm uses for
# the path MTU of a RoCE route (cma.c, cma_resolve_iboe_route()): the
# netdev MTU less the largest RoCE v2 headers it counts (GRH 40, UDP 8,
# BTH 12, XRC ETH 4, AtomicETH 28, ICRC 4: 96 bytes); and 256 where that
# leaves less than 256, as rdma_rxe does, since 0 is no IB MTU.
srx_rule() {
	local m
	m=$(ib_mtu_fitting $(($1 - 96)))
	[ "$m" = 0 ] && m=256
	echo "$m"
}

# rdma_rxe 6.1 (and 6.12): rxe_set_mtu() in rxe.c, eth_mtu_int_to_enum() in
# rxe_param.h: the netdev MTU less RXE_MAX_HDR_LENGTH (80, rxe_hdr.h),
# capped at 4096, and 256 where that leaves less than 256.
rxe_rule() {
	local m
	m=$(ib_mtu_fitting $(($1 - 80)))
	[ "$m" = 0 ] && m=256
	echo "$m"
}

rule() {	# rule SIDE NETDEV_MTU
	"$(topo_var "$1" DRIVER)_rule" "$2"
}

# Every boundary of both rules (the smallest netdev MTU giving each IB MTU,
# and one less), the issue's 1500 and 9000, and MTUs too small for any.
MTUS="9000 4200 4192 4191 4176 4175 2144 2143 2128 2127 1500 1120 1119
      1104 1103 1100 608 607 592 591 576 352 351 336 335 300"

# ---------------------------------------------------------------------------
# Cases, run for side a (srx) and side b (rxe)

dev_of() { topo_var "$1" DEV; }

t_up() {
	TOPO_NETNS_MODE=shared topo_up srx-rxe --vlan 12
}

t_gid_ip4() {
	local s=$1 i
	i=$(topo_wait_gid "$s" "$(dev_of "$s")" "$(topo_var "$s" IP4)" \
		"$(topo_var "$s" NETDEV)") || return 1
	say "$(topo_var "$s" IP4) is GID $i: $(topo_gids "$s" "$(dev_of "$s")" | awk -v i="$i" '$1 == i')"
}

t_gid_ip6() {
	local s=$1 i
	i=$(topo_wait_gid "$s" "$(dev_of "$s")" "$(topo_var "$s" IP6)" \
		"$(topo_var "$s" NETDEV)") || return 1
	say "$(topo_var "$s" IP6) is GID $i"
}

# The netdev's own link-local address (the kernel's, from the MAC: also
# the device's default GID), and one added by hand, which nothing else
# would put in the table.
t_gid_ll6() {
	local s=$1 nd dev i ll
	nd=$(topo_var "$s" NETDEV) dev=$(dev_of "$s")
	ll=fe80::db8:$s
	i=$(topo_wait_gid "$s" "$dev" "$(topo_var "$s" LL6)" "$nd") || return 1
	say "$(topo_var "$s" LL6) is GID $i"
	topo_run topo_exec "$s" ip addr add "$ll/64" dev "$nd" nodad || return 1
	i=$(topo_wait_gid "$s" "$dev" "$ll" "$nd") || return 1
	say "$ll is GID $i"
}

t_gid_vlan() {
	local s=$1 vnd dev i a
	vnd=$(topo_var "$s" VLAN_NETDEV) dev=$(dev_of "$s")
	for a in "$(topo_var "$s" VLAN_IP4)" "$(topo_var "$s" VLAN_IP6)"; do
		i=$(topo_wait_gid "$s" "$dev" "$a" "$vnd") || return 1
		say "$a is GID $i on $vnd"
	done
}

# Removing each address removes its GID (and only its own), deleting the
# VLAN removes the VLAN's; an address added back is a GID again.
t_gid_removed() {
	local s=$1 nd vnd dev
	nd=$(topo_var "$s" NETDEV) vnd=$(topo_var "$s" VLAN_NETDEV) dev=$(dev_of "$s")
	topo_run topo_exec "$s" ip addr del "$(topo_var "$s" IP4)/24" dev "$nd" || return 1
	topo_wait_no_gid "$s" "$dev" "$(topo_var "$s" IP4)" || return 1
	topo_gid_index "$s" "$dev" "$(topo_var "$s" IP6)" "$nd" >/dev/null || {
		say "the IPv6 GID went with the IPv4 address"
		return 1
	}
	topo_run topo_exec "$s" ip addr del "$(topo_var "$s" IP6)/64" dev "$nd" || return 1
	topo_wait_no_gid "$s" "$dev" "$(topo_var "$s" IP6)" || return 1
	topo_run topo_exec "$s" ip addr del "fe80::db8:$s/64" dev "$nd" || return 1
	topo_wait_no_gid "$s" "$dev" "fe80::db8:$s" || return 1
	topo_run topo_exec "$s" ip addr del "$(topo_var "$s" VLAN_IP4)/24" dev "$vnd" ||
		return 1
	topo_wait_no_gid "$s" "$dev" "$(topo_var "$s" VLAN_IP4)" || return 1
	topo_run topo_exec "$s" ip link del "$vnd" || return 1
	topo_wait_no_gid "$s" "$dev" "$(topo_var "$s" VLAN_IP6)" || return 1
	# Back for the cases below, which address the IPv4 GID.
	topo_run topo_exec "$s" ip addr add "$(topo_var "$s" IP4)/24" dev "$nd" || return 1
	topo_wait_gid "$s" "$dev" "$(topo_var "$s" IP4)" "$nd" >/dev/null
}

# active_mtu at every MTU of $MTUS, against the device's rule; one
# mtu_probe sets them all and queries the port after each.
t_active_mtu() {
	local s=$1 dev nd out w1 mtu w3 got want bad=0 line='' seen=0
	dev=$(dev_of "$s") nd=$(topo_var "$s" NETDEV)
	have_probe || return 1
	# shellcheck disable=SC2086
	echo "# + $probe -d $dev -n $nd "$MTUS
	# shellcheck disable=SC2086
	out=$(topo_exec "$s" timeout "$TOPO_T" "$probe" -d "$dev" -n "$nd" $MTUS 2>&1) ||
		bad=1
	while read -r w1 mtu w3 got; do
		if [ "$w1 $w3" != "netdev_mtu active_mtu" ]; then
			say "mtu_probe: $w1 $mtu $w3 $got"
			bad=1
			continue
		fi
		seen=$((seen + 1))
		want=$(rule "$s" "$mtu")
		line+=" $mtu:$got"
		if [ "$got" != "$want" ]; then
			say "netdev MTU $mtu: active_mtu $got, want $want"
			bad=1
		fi
	done <<<"$out"
	say "netdev MTU:active_mtu$line"
	# shellcheck disable=SC2086
	set -- $MTUS
	[ "$seen" = $# ] || { say "$seen results for $# MTUs"; bad=1; }
	topo_set_mtu "$s" 1500 || return 1
	return $bad
}

have_probe() {
	[ -x "$probe" ] && return 0
	say "$probe is missing: build it (make selftests)"
	return 1
}

# At netdev MTUs giving each of 4096, 1024, 512 and 256 (the last one the
# fallback), every path_mtu from 256 to 4096 on a new RC QP going to RTR.
# srx refuses exactly those above the active MTU with EINVAL; for a device
# that takes them, the case is a skip that says which it took.
t_path_mtu() {
	local s=$1 dev idx mtu active want out line p r q rest bad=0 taken=
	dev=$(dev_of "$s")
	have_probe || return 1
	for mtu in 9000 1500 1100 300; do
		topo_set_mtu "$s" "$mtu" || return 1
		# The IPv4 GID: IPv6 goes from a netdev below 1280 bytes.
		idx=$(topo_wait_gid "$s" "$dev" "$(topo_var "$s" IP4)") || return 1
		echo "# + $probe -d $dev -g $idx"
		out=$(topo_exec "$s" timeout "$TOPO_T" "$probe" -d "$dev" -g "$idx" 2>&1) || {
			printf '%s\n' "$out" | sed 's/^/#   /'
			return 1
		}
		active=
		while read -r p r q rest; do
			case $p in
			active_mtu)
				if [ -z "$active" ]; then
					active=$r
				elif [ "$r" != "$active" ]; then
					say "active_mtu changed during the sweep: $active, then $r"
					bad=1
				fi
				;;
			path_mtu)
				if ! [[ $active =~ ^[0-9]+$ ]]; then
					say "netdev MTU $mtu: active_mtu $active: path_mtu $r $q"
					bad=1
					continue
				fi
				want=EINVAL
				[ "$r" -le "$active" ] && want=ok
				line="netdev MTU $mtu, active_mtu $active: path_mtu $r $q${rest:+ $rest}"
				if [ "$q" = "$want" ]; then
					if [ "$q" = ok ] && [ "$rest" != "query $r" ]; then
						say "$line: ibv_query_qp does not say $r"
						bad=1
					fi
				elif [ "$q" = ok ] && [ "$(topo_var "$s" DRIVER)" != srx ]; then
					say "$line (taken above the active MTU)"
					taken+="${taken:+, }$r at active_mtu $active"
				else
					say "$line, want $want"
					bad=1
				fi
				;;
			esac
		done <<<"$out"
		[ "$active" = "$(rule "$s" "$mtu")" ] || {
			say "netdev MTU $mtu: active_mtu $active, want $(rule "$s" "$mtu")"
			bad=1
		}
	done
	topo_set_mtu "$s" 1500 || return 1
	[ $bad = 0 ] || return 1
	[ -z "$taken" ] || skip_reason="$(topo_var "$s" DRIVER) takes path_mtu above the active MTU (measured: $taken)"
	return 0
}

# srx-srx in exclusive mode: each device in its netdev's namespace, seen
# there only, with that namespace's addresses as GIDs.
t_srx_srx_exclusive() {
	local s other
	TOPO_NETNS_MODE=exclusive topo_up srx-srx || return 1
	[ "$(topo_netns_mode)" = exclusive ] || return 1
	for s in a b; do
		[ $s = a ] && other=b || other=a
		topo_wait_gid $s "$(dev_of $s)" "$(topo_var $s IP4)" "$(topo_var $s NETDEV)" \
			>/dev/null || return 1
		topo_wait_gid $s "$(dev_of $s)" "$(topo_var $s IP6)" "$(topo_var $s NETDEV)" \
			>/dev/null || return 1
		if topo_exec $s test -e "/sys/class/infiniband/$(dev_of $other)"; then
			say "$(dev_of $other) is seen in $(topo_var $s NS)"
			return 1
		fi
	done
	topo_down || return 1
	[ "$(topo_netns_mode)" = shared ]
}

t_srx_self() {
	topo_up srx-self || return 1
	[ "$TOPO_B_DEV" = "$TOPO_A_DEV" ] && [ "$TOPO_B_NS" = "$TOPO_A_NS" ] || return 1
	topo_wait_gid a "$TOPO_A_DEV" "$TOPO_A_IP4" "$TOPO_A_NETDEV" >/dev/null &&
		topo_wait_gid a "$TOPO_A_DEV" "$TOPO_A_IP6" "$TOPO_A_NETDEV" >/dev/null &&
		topo_wait_gid a "$TOPO_A_DEV" "$TOPO_A_LL6" "$TOPO_A_NETDEV" >/dev/null
}

# After topo_down: nothing of the topologies left, and the machine as this
# test found it.
t_down_clean() {
	local left
	topo_down || return 1
	left=$(topo_leftovers)
	if [ -n "$left" ]; then
		say "left behind: $left"
		return 1
	fi
	[ "$(topo_netns_mode)" = "$mode_before" ] || { say "netns mode not restored"; return 1; }
	if [ "$rxe_before" = 0 ] && grep -q '^rdma_rxe ' /proc/modules; then
		say "rdma_rxe left loaded"
		return 1
	fi
	if [ "$srx0_before" = 1 ] && [ ! -e /sys/class/infiniband/srx0 ]; then
		say "srx0 not restored"
		return 1
	fi
	return 0
}

# ---------------------------------------------------------------------------

echo "TAP version 13"
if ! modinfo -F filename srx >/dev/null 2>&1; then
	echo "not ok 1 srx is installed (selftests/install_test.sh runs first)"
	echo "1..1"
	exit 1
fi
mode_before=$(topo_netns_mode)
rxe_before=0
grep -q '^rdma_rxe ' /proc/modules && rxe_before=1
srx0_before=0
[ -e /sys/class/infiniband/srx0 ] && srx0_before=1
topo_trap

if ! case_ "srx-rxe topology with VLAN 12: srx in tp-a, rdma_rxe in the initial namespace, both ACTIVE" t_up; then
	echo "1..$n"
	exit 1
fi
for side in a b; do
	d=$(topo_var $side DRIVER)
	case_ "$d: the IPv4 address is an IPv4-mapped RoCE v2 GID on its netdev" t_gid_ip4 $side
	case_ "$d: the IPv6 address is a RoCE v2 GID on its netdev" t_gid_ip6 $side
	case_ "$d: IPv6 link-local addresses are RoCE v2 GIDs on the netdev" t_gid_ll6 $side
	case_ "$d: a VLAN's IPv4 and IPv6 addresses are RoCE v2 GIDs on the VLAN netdev" t_gid_vlan $side
	case_ "$d: a removed address's GID goes away, and only its own" t_gid_removed $side
	case_ "$d: ibv_modify_qp to RTR refuses a path_mtu above active_mtu (EINVAL), takes the others" t_path_mtu $side
	case_ "$d: active_mtu follows the netdev MTU by its rule at every boundary, and is always an IB MTU" t_active_mtu $side
done
case_ "srx-srx topology in exclusive netns mode: each device seen only in its namespace, with its GIDs" t_srx_srx_exclusive
case_ "srx-self topology: one device with its IPv4, IPv6 and link-local GIDs" t_srx_self
case_ "topo_down leaves no device, netdev or namespace, and restores srx0, rdma_rxe and the netns mode" t_down_clean

echo "# gid_mtu_test.sh took $((SECONDS - start_time)) s"
echo "1..$n"
[ $fails -eq 0 ]
