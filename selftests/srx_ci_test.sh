#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# tools/srx-ci up and down, on a machine that loads modules (the guest),
# as another project's CI runs them (Documentation/ci.md): the printed
# device, GID index and address are checked against sysfs, and
# Documentation/ci-example's tests run on them from a copy outside the
# checkout. install_test.sh left srx installed and srx0 on eth0; this test
# takes srx0 away for its cases and puts it back as it was.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/selftests/lib/tap.sh"
ci=$top/tools/srx-ci
n=0
fails=0
work=$(mktemp -d /tmp/srx_ci_test.XXXXXX)
out=$work/up.out

# up_ok ARGS...: up succeeds and what it prints holds; its lines are set
# as variables here.
up_ok() {
	local want_ip=$1 gid
	shift
	"$ci" up "$@" >"$out" 2>"$work/up.err" || { sed 's/^/# /' "$work/up.err"; return 1; }
	sed 's/^/# up: /' "$out"
	unset SRX_DEV SRX_GID_INDEX SRX_IP
	# As Documentation/ci.md has a project take them.
	# shellcheck disable=SC2046 # NAME=value words
	export $(cat "$out")
	[ "${SRX_DEV:-}" = srx0 ] && [ "${SRX_IP:-}" = "$want_ip" ] || return 1
	# The GID the index names is the address's IPv4-mapped RoCE v2 GID.
	gid=$(cat "/sys/class/infiniband/srx0/ports/1/gids/$SRX_GID_INDEX") || return 1
	say "gid $SRX_GID_INDEX: $gid ($(cat "/sys/class/infiniband/srx0/ports/1/gid_attrs/types/$SRX_GID_INDEX"))"
	[ "$(cat "/sys/class/infiniband/srx0/ports/1/gid_attrs/types/$SRX_GID_INDEX")" = "RoCE v2" ] &&
		[ "$(python3 -c 'import ipaddress,sys; print(ipaddress.IPv6Address(sys.argv[1]).ipv4_mapped)' "$gid")" = "$want_ip" ]
}

# example: Documentation/ci-example's tests, from a copy outside the checkout.
example() {
	rm -rf "$work/project"
	cp -r "$top/Documentation/ci-example" "$work/project" &&
		(cd "$work/project" && env -u RDMAV_DRIVERS ./run-tests.sh) >"$work/example.out" 2>&1
	local st=$?
	sed 's/^/# /' "$work/example.out"
	[ $st = 0 ] && grep -q "^write_check: 65536 bytes written" "$work/example.out"
}

veth_up() {
	up_ok 192.0.2.1 && rdma link show srx0/1 | grep -q 'netdev srxci0'
}

twice() {
	# A second up must refuse, saying why, and change nothing.
	! "$ci" up >"$work/again.out" 2>&1 &&
		grep -q 'srx0 exists already' "$work/again.out" &&
		rdma link show srx0/1 | grep -q 'netdev srxci0'
}

down_clean() {
	"$ci" down &&
		[ ! -e /sys/class/infiniband/srx0 ] && [ ! -e /sys/class/net/srxci0 ] &&
		[ ! -e /sys/class/net/srxci1 ]
}

# --netdev: a NIC of the guest's with a TEST-NET-2 address (RFC 5737).
netdev_up() {
	ip link set eth1 up && ip addr add 198.51.100.1/24 dev eth1 &&
		up_ok 198.51.100.1 --netdev eth1 &&
		rdma link show srx0/1 | grep -q 'netdev eth1'
}

netdev_down() {
	# down deletes the device; the NIC and its address were not up's.
	"$ci" down && [ ! -e /sys/class/infiniband/srx0 ] &&
		ip -4 addr show dev eth1 | grep -q 198.51.100.1 &&
		ip addr del 198.51.100.1/24 dev eth1
}

no_address() {
	# A netdev without an IPv4 address: refused before any device exists.
	! "$ci" up --netdev eth1 >"$work/noaddr.out" 2>&1 &&
		grep -q 'eth1 has no IPv4 address' "$work/noaddr.out" &&
		[ ! -e /sys/class/infiniband/srx0 ]
}

eth1_was_up=
grep -q UP <<<"$(ip -br link show dev eth1)" && eth1_was_up=1
had_srx0=
if [ -e /sys/class/infiniband/srx0 ]; then
	had_srx0=$(rdma link show srx0/1 | sed -n 's/.* netdev \([^ ]*\).*/\1/p')
	rdma link delete srx0
fi
# Whatever a failed case left, the tests after this one get srx0 back as
# install_test.sh left it.
restore() {
	"$ci" down 2>/dev/null
	ip addr del 198.51.100.1/24 dev eth1 2>/dev/null
	[ -n "$eth1_was_up" ] || ip link set eth1 down
	if [ -n "$had_srx0" ]; then
		[ ! -e /sys/class/infiniband/srx0 ] || rdma link delete srx0
		rdma link add srx0 type srx netdev "$had_srx0" || echo "# could not put srx0 back on $had_srx0"
	fi
	rm -rf "$work"
}
trap restore EXIT

case_ "up makes a veth pair and srx0, and prints its device, GID index and address" veth_up
case_ "Documentation/ci-example's tests pass on what up printed" example
case_ "a second up refuses: srx0 exists" twice
case_ "down deletes srx0 and the veth pair" down_clean
case_ "up --netdev eth1 puts srx0 on eth1 and prints its address" netdev_up
case_ "Documentation/ci-example's tests pass on eth1" example
case_ "down deletes srx0 and leaves eth1 as it was" netdev_down
case_ "up --netdev on a netdev without IPv4 refuses, and makes nothing" no_address

echo "1..$n"
[ "$fails" = 0 ]
