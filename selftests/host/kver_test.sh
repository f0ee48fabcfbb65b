#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kver_test.sh - which kernel tools/kver picks (the default of make check,
# make demo and tools/vm/run), on fake machines (SRX_KVER_ROOT) with several
# kernels and a dpkg database that says which one Debian's metapackage
# linux-image-ARCH depends on. Prints TAP.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
arch=$(dpkg --print-architecture 2>/dev/null) || arch=amd64

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

# machine NAME: an empty root; kernel NAME V [nobuild]: install V's image and,
# unless nobuild, its Kbuild tree; meta NAME STATUS V: the metapackage in
# dpkg's database with status STATUS ("install ok installed", ...) depending
# on V's image.
machine() { mkdir -p "$tmp/$1/boot" "$tmp/$1/lib/modules" "$tmp/$1/var/lib/dpkg"; }
kernel() {
	: >"$tmp/$1/boot/vmlinuz-$2"
	mkdir -p "$tmp/$1/lib/modules/$2"
	[ "${3:-}" = nobuild ] || mkdir -p "$tmp/$1/lib/modules/$2/build"
}
meta() {
	cat >>"$tmp/$1/var/lib/dpkg/status" <<EOF
Package: linux-image-$arch
Status: $2
Priority: optional
Section: kernel
Maintainer: srx test <srx@localhost>
Architecture: $arch
Version: 1
Depends: linux-image-$3 (= 1)
Description: fake metapackage

EOF
}

# expect NAME WANT DESCRIPTION: tools/kver on NAME prints WANT (or, for an
# empty WANT, prints nothing and fails).
expect() {
	local got status
	got=$(SRX_KVER_ROOT=$tmp/$1 "$top/tools/kver" 2>"$tmp/$1.err")
	status=$?
	if [ -z "$2" ]; then
		[ $status != 0 ] && [ -z "$got" ] && [ -s "$tmp/$1.err" ]
	else
		[ $status = 0 ] && [ "$got" = "$2" ]
	fi
	result $? "$3 (got '${got}', status $status)"
}

old=0.0.9-srxtest
new=0.0.10-srxtest	# newer than $old only in version order

machine default
kernel default $old
kernel default $new
meta default "install ok installed" $old
expect default $old "Debian's default kernel wins over a newer one"

machine newest
kernel newest $old
kernel newest $new
expect newest $new "without the metapackage, the newest kernel (version order)"

machine noheaders
kernel noheaders $old nobuild
kernel noheaders $new
meta noheaders "install ok installed" $old
expect noheaders $new "the default kernel without headers does not qualify"

machine removed
kernel removed $old
kernel removed $new
meta removed "deinstall ok config-files" $old
expect removed $new "a removed metapackage names no default"

machine gone
kernel gone $new
meta gone "install ok installed" $old
expect gone $new "a default kernel that is not installed falls back"

machine none
kernel none $old nobuild
meta none "install ok installed" $old
expect none "" "no kernel with image and headers: fails, says why"

tap_end
