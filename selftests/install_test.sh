#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# `make install` and `make uninstall`, then loading srx the ways a user
# would: modprobe, and `rdma link add` autoloading it by its alias. Runs
# first in the VM and leaves srx installed with srx0 on eth0 for the tests
# after it.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
kver=$(uname -r)
n=0
fails=0

ok() {	# ok DESCRIPTION COMMAND...
	local desc=$1
	shift
	n=$((n + 1))
	echo "# + $*"
	if "$@" >/tmp/install_test.out 2>&1; then
		echo "ok $n $desc"
	else
		sed 's/^/# /' /tmp/install_test.out
		echo "not ok $n $desc"
		fails=$((fails + 1))
	fi
}

echo "TAP version 13"

staging=$(mktemp -d)
ok "make install DESTDIR= installs the module, provider, driver file, tool and man page" \
	make -s -C "$top" install DESTDIR="$staging"
ok "the staged tree has exactly those five files" \
	test "$(find "$staging" -type f | wc -l)" -eq 5
ok "make uninstall DESTDIR= removes every file it installed" \
	sh -c "make -s -C '$top' uninstall DESTDIR='$staging' && test -z \"\$(find '$staging' -type f)\""
rm -rf "$staging"

ok "make install" make -s -C "$top" install
ok "the module is in /lib/modules/$kver/extra and depmod knows it" \
	sh -c "test -f /lib/modules/$kver/extra/srx.ko && modinfo -F alias srx | grep -qx rdma-link-srx"
ok "the provider is where libibverbs looks" \
	sh -c "test -f \$('$top/userspace/check-libibverbs' --provider-dir)/libsrx-rdmav34.so && grep -qx 'driver srx' /etc/libibverbs.d/srx.driver"
ok "modprobe srx loads it" sh -c "modprobe srx && grep -q '^srx ' /proc/modules"
ok "rmmod srx unloads it" sh -c "rmmod srx && ! grep -q '^srx ' /proc/modules"
ok "rdma link add autoloads srx by its alias" \
	sh -c "ip link set eth0 up && rdma link add srx0 type srx netdev eth0 && grep -q '^srx ' /proc/modules"
ok "rdma link shows srx0 on eth0" sh -c "rdma link show srx0/1 | grep -q 'netdev eth0'"
ok "ibv_devices lists srx0 through the installed provider" \
	sh -c "env -u RDMAV_DRIVERS ibv_devices | grep -q srx0"
ok "ibv_devinfo -d srx0 shows an active Ethernet port" \
	sh -c "env -u RDMAV_DRIVERS ibv_devinfo -d srx0 | grep -q 'PORT_ACTIVE' && env -u RDMAV_DRIVERS ibv_devinfo -d srx0 | grep -q 'link_layer:.*Ethernet'"

echo "1..$n"
[ $fails -eq 0 ]
