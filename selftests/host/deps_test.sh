#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# deps_test.sh - tools/deps (make deps) against stand-ins for dpkg-query and
# apt-get on PATH, which log what they were asked. Prints TAP.
#
#   - every package installed: no apt-get at all (no lock, no network);
#   - some missing: apt-get update, then an install of exactly those, both
#     told to wait for the dpkg lock (DPkg::Lock::Timeout);
#   - the package lists' lock held by another apt for a while: update is
#     tried again until it gets through, and the install still runs;
#   - an update that fails for another reason fails make deps at once.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP tools/deps needs root or sudo, and sudo would bypass PATH"
	exit 0
fi

# The package list, as tools/deps has it.
mapfile -t packages < <(sed -n '/^PACKAGES="/,/^"/p' "$top/tools/deps" |
	sed -e '1d' -e '$d' -e 's/^[[:space:]]*//' -e '/^$/d')

# stubs DIR MISSING LOCKED_UPDATES UPDATE_ERROR: dpkg-query reports every
# package installed but those in MISSING (a space-separated list); apt-get
# logs its arguments, fails its first LOCKED_UPDATES updates as a held
# lists lock does, and with UPDATE_ERROR fails every update with it.
stubs() {
	local dir=$1
	mkdir -p "$dir/bin"
	: >"$dir/log"
	echo "$3" >"$dir/locked"
	cat >"$dir/bin/dpkg-query" <<S
#!/bin/bash
p=\${!#}
case " $2 " in *" \$p "*) echo "dpkg-query: no packages found matching \$p" >&2; exit 1 ;; esac
printf 'install ok installed'
S
	cat >"$dir/bin/apt-get" <<S
#!/bin/bash
echo "apt-get \$*" >>'$dir/log'
case " \$* " in
*" update "*)
	if [ -n '$4' ]; then echo 'E: $4' >&2; exit 100; fi
	n=\$(cat '$dir/locked')
	if [ "\$n" -gt 0 ]; then
		echo \$((n - 1)) >'$dir/locked'
		echo 'E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)' >&2
		exit 100
	fi ;;
esac
exit 0
S
	cat >"$dir/bin/sleep" <<'S'
#!/bin/sh
exit 0
S
	chmod +x "$dir/bin/"*
}

run_deps() {	# run_deps DIR: tools/deps with the stubs first on PATH
	PATH="$1/bin:$PATH" "$top/tools/deps" >"$1/out" 2>&1
}

echo "TAP version 13"
[ ${#packages[@]} -gt 10 ]
result $? "the package list reads back (${#packages[@]} packages)"

d=$tmp/all
stubs "$d" "" 0 ""
run_deps "$d"
st=$?
[ "$st" = 0 ] && [ ! -s "$d/log" ]
result $? "every package installed: exit 0 and no apt-get (exit $st, $(wc -l <"$d/log") calls)" ||
	sed 's/^/# /' "$d/out" "$d/log"

d=$tmp/missing
stubs "$d" "${packages[2]} ${packages[5]}" 0 ""
run_deps "$d"
st=$?
[ "$st" = 0 ] && [ "$(wc -l <"$d/log")" = 2 ] &&
	sed -n 1p "$d/log" | grep -q -- '-o DPkg::Lock::Timeout=[1-9][0-9]* update' &&
	sed -n 2p "$d/log" | grep -q -- '-o DPkg::Lock::Timeout=[1-9][0-9]* install' &&
	[ "$(sed -n 2p "$d/log" | tr ' ' '\n' | grep -cxF -e "${packages[2]}" -e "${packages[5]}")" = 2 ] &&
	[ "$(sed -n 2p "$d/log" | tr ' ' '\n' | grep -cxF -f <(printf '%s\n' "${packages[@]}"))" = 2 ]
result $? "two missing: update, then an install of those two, both waiting for the lock (exit $st)" ||
	sed 's/^/# /' "$d/out" "$d/log"

d=$tmp/locked
stubs "$d" "${packages[0]}" 3 ""
run_deps "$d"
st=$?
[ "$st" = 0 ] && [ "$(grep -c ' update' "$d/log")" = 4 ] &&
	[ "$(grep -c ' install' "$d/log")" = 1 ]
result $? "lists lock held for three tries: update again, then install (exit $st)" ||
	sed 's/^/# /' "$d/out" "$d/log"

d=$tmp/broken
stubs "$d" "${packages[0]}" 0 "The repository is not signed."
run_deps "$d"
st=$?
[ "$st" != 0 ] && [ "$(grep -c ' update' "$d/log")" = 1 ] &&
	[ "$(grep -c ' install' "$d/log")" = 0 ] && grep -q 'not signed' "$d/out"
result $? "an update that fails otherwise: make deps fails at once, saying why (exit $st)" ||
	sed 's/^/# /' "$d/out" "$d/log"

tap_end
