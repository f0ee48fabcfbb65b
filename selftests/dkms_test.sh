#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# srx installed the two ways DKMS offers, in the guest:
#  1. the Debian packages from make deb (build/deb): dpkg -i, then dpkg -P;
#  2. make dkms-install, then make dkms-uninstall.
# Each builds srx.ko with DKMS, loads the installed module through
# `rdma link add` (its alias), reaches the device through the installed
# provider, and leaves nothing of srx behind when removed. Runs before
# install_test.sh: DKMS will not replace make install's srx.ko of the same
# version.
#
# DKMS compiles in the guest, under TCG: 4 to 5 minutes per kernel, and
# each install and removal runs depmod (Documentation/packaging.md). Hence
# two scopes:
#   SRX_DKMS_TEST=full (make check-packages): both ways, each building for
#     every kernel with headers (both supported kernels, from the host).
#     The package's postinst builds for the running kernel and the newest
#     one (Debian's dkms common.postinst); any other is then built the way
#     a kernel upgrade builds it, through DKMS's kernel hook
#     (/etc/kernel/postinst.d/dkms), which reads AUTOINSTALL.
#   otherwise (make check): the packages alone, on Debian's default kernel
#     alone (tools/kver), built for it alone (BUILD_EXCLUSIVE_KERNEL in
#     /etc/dkms/srx.conf, which DKMS reads after dkms.conf); elsewhere every
#     case is a skip.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/selftests/lib/tap.sh"
build=${SRX_BUILD:-$top/build}
kver=$(uname -r)
n=0
fails=0
export DEBIAN_FRONTEND=noninteractive
# man-db would rebuild its index over 9p at each dpkg run (man-db.postinst).
rm -f /var/lib/man-db/auto-update

full=
[ "${SRX_DKMS_TEST:-}" = full ] && full=1
# Kernels DKMS is to build for: those with headers, as DKMS's hooks decide,
# or the running one.
kernels=()
if [ -n "$full" ]; then
	for d in /lib/modules/*/build/include; do
		[ -d "$d" ] || continue
		d=${d%/build/include}
		kernels+=("${d##*/}")
	done
else
	kernels=("$kver")
fi

# run CMD...: CMD's output as comments; its status.
run() {
	local st
	echo "# + $*"
	"$@" >/tmp/dkms_test.out 2>&1
	st=$?
	sed 's/^/# /' /tmp/dkms_test.out
	return $st
}

# Everything of srx's that an install leaves on the machine.
leftovers() {
	{
		ls -d /usr/src/srx-* /var/lib/dkms/srx /etc/libibverbs.d/srx.driver \
			/usr/lib/*/libibverbs/libsrx-* /usr/local/bin/srx-cq-demo \
			/usr/local/share/man/man7/srx.7 2>/dev/null
		find /lib/modules -name 'srx.ko*' 2>/dev/null
		dkms status -m srx 2>/dev/null
		dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' srx-dkms libsrx 2>/dev/null |
			grep -v '^un '
	} | sort
}

# installed_for_all: srx.ko in updates/dkms for every kernel, and DKMS says
# installed.
installed_for_all() {
	local k f bad=0
	for k in "${kernels[@]}"; do
		f=$(modinfo -k "$k" -F filename srx 2>/dev/null)
		echo "# $k: ${f:-no srx.ko}"
		case $f in
		/lib/modules/"$k"/updates/dkms/srx.ko*) ;;
		*) bad=1 ;;
		esac
		dkms status -m srx -k "$k" | grep -q ': installed' || {
			echo "# dkms status -k $k: $(dkms status -m srx -k "$k")"
			bad=1
		}
	done
	return $bad
}

# works: the installed module and provider give a usable device; srx0
# and the module are gone afterwards, whatever failed.
works() {
	not_here && return 0
	local st=0
	{ run sh -c 'ip link set eth0 up && rdma link add srx0 type srx netdev eth0' &&
		grep -q '^srx ' /proc/modules &&
		modinfo -F filename srx | grep -q '/updates/dkms/srx.ko' &&
		run env -u RDMAV_DRIVERS ibv_devinfo -d srx0 &&
		grep -q 'PORT_ACTIVE' /tmp/dkms_test.out; } || st=1
	if [ -e /sys/class/infiniband/srx0 ]; then run rdma link delete srx0 || st=1; fi
	if grep -q '^srx ' /proc/modules; then run rmmod srx || st=1; fi
	return $st
}

gone() {
	local left
	left=$(leftovers)
	[ -z "$left" ] && return 0
	while IFS= read -r l; do say "left: $l"; done <<<"$left"
	return 1
}

# not_here: the running case is a skip here (it says why).
default_kernel=$("$top/tools/kver" 2>/dev/null)
# srx installed on the host shows through the guest's overlay, and would
# fail every check that nothing of srx is left.
preexisting=$(leftovers)
not_here() {
	if [ -n "$preexisting" ]; then
		skip "srx is installed on the host: $(echo "$preexisting" | head -n 1)"
	elif [ ! -d "/lib/modules/$kver/build/include" ]; then
		skip "no headers for the running kernel $kver (make check-debug's kernel)"
	elif [ -z "$full" ] && [ "$kver" != "$default_kernel" ]; then
		skip "make check installs the packages on Debian's default kernel ($default_kernel) only; make check-packages: every kernel"
	else
		return 1
	fi
}

# ---- packages
pkg_install() {
	not_here && return 0
	local debs
	debs=$(ls "$build"/deb/srx-dkms_*_all.deb "$build"/deb/libsrx_*_amd64.deb 2>/dev/null)
	[ "$(echo "$debs" | wc -l)" = 2 ] || { say "make deb's packages are not in $build/deb"; return 1; }
	version=$(dpkg-deb -f "$build"/deb/srx-dkms_*_all.deb Version)
	gone || return 1
	if [ -z "$full" ]; then
		# The postinst would also build for the newest kernel.
		echo "BUILD_EXCLUSIVE_KERNEL=\"^${kver//./\\.}\$\"" >/etc/dkms/srx.conf
		say "/etc/dkms/srx.conf: $(cat /etc/dkms/srx.conf)"
	fi
	# shellcheck disable=SC2086 # one path per word
	if ! run dpkg -i $debs; then
		sed 's/^/# make.log: /' /var/lib/dkms/srx/"$version"/build/make.log 2>/dev/null
		return 1
	fi
	run dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' srx-dkms libsrx &&
		[ "$(grep -c " $version ii" /tmp/dkms_test.out)" = 2 ]
}

pkg_kernels() {
	not_here && return 0
	local k
	run dkms status -m srx
	for k in "${kernels[@]}"; do
		dkms status -m srx -k "$k" | grep -q ': installed' && continue
		# What a kernel (or headers) package's postinst runs.
		run /etc/kernel/postinst.d/dkms "$k" || return 1
	done
	installed_for_all
}

pkg_files() {
	not_here && return 0
	test -f "/usr/src/srx-$version/dkms.conf" &&
		test -f "/usr/src/srx-$version/include/uapi/rdma/srx-abi.h" &&
		grep -qx 'driver srx' /etc/libibverbs.d/srx.driver &&
		test -f "$("$top/userspace/check-libibverbs" --provider-dir)/libsrx-rdmav34.so"
}

pkg_purge() {
	not_here && return 0
	run dpkg -P srx-dkms libsrx || return 1
	rm -f /etc/dkms/srx.conf
	gone && ! modinfo srx >/dev/null 2>&1
}

case_ "dpkg -i installs srx-dkms and libsrx, and DKMS builds srx.ko" pkg_install
case_ "srx.ko is installed for every kernel with headers (${kernels[*]})" pkg_kernels
case_ "the source tree, driver file and provider are in place" pkg_files
case_ "rdma link add loads the packaged srx.ko; ibv_devinfo reaches srx0 through libsrx" \
	works
case_ "dpkg -P leaves nothing of srx behind" pkg_purge

# ---- make dkms-install (full only)
mk_install() {
	not_here && return 0
	run make -s -C "$top" dkms-install DKMS_KERNELS="${kernels[*]}" && installed_for_all
}

mk_uninstall() {
	not_here && return 0
	run make -s -C "$top" dkms-uninstall && gone && ! modinfo srx >/dev/null 2>&1
}

if [ -n "$full" ]; then
	case_ "make dkms-install builds and installs srx.ko for ${kernels[*]}" mk_install
	case_ "rdma link add loads the DKMS srx.ko; ibv_devinfo reaches srx0 through the provider" works
	case_ "make dkms-uninstall leaves nothing of srx behind" mk_uninstall
fi

rm -f /tmp/dkms_test.out
echo "1..$n"
[ "$fails" = 0 ]
