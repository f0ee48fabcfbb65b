#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# check_test.sh - tools/check, the test half of make check, fails closed
# on every stage. Prints TAP.
#
# tools/check runs from a copy of the checkout's few files it needs, in a
# temporary tree, with fake stages: selftests/run there is a wrapper that
# runs the real one unless FAKE_RUN=STAGE:MODE asks it to misbehave for one
# stage (STAGE: 1-host, 2-runner or 3-vm, its counts file), tools/vm/run
# runs the command on the host and may exit FAKE_VM_EXIT, and every test is
# a one-result fake. Modes:
#   nocounts  exit 1, no counts file (selftests/run died)
#   garbled   counts that are no three numbers, exit 0
#   none      counts "0 0 0", exit 0 (no test ran)
#   status    counts "1 0 0", exit 3 (status and counts disagree)
# Each must make tools/check count a failure and exit non-zero; an honest
# run must pass.
set -u

top=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd -P)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# shellcheck source=selftests/host/tap.sh
. "$top/selftests/host/tap.sh"

tree=$tmp/tree
mkdir -p "$tree/tools/vm" "$tree/selftests/vm"
cp "$top/tools/check" "$tree/tools/check"
cp "$top/selftests/run" "$tree/selftests/run.real"
cp "$top/selftests/settings" "$tree/selftests/settings"
cat >"$tree/selftests/run" <<'EOF_RUN'
#!/bin/bash
here=$(dirname "$0")
results=
args=("$@")
while [ $# -gt 0 ]; do
	case $1 in
	--results) results=$2; shift 2 ;;
	*) shift ;;
	esac
done
stage=$(basename "$results" .counts)
case ${FAKE_RUN:-} in
"$stage:nocounts") echo "fake selftests/run: dying"; exit 1 ;;
"$stage:garbled") echo "1 0" >"$results"; exit 0 ;;
"$stage:none") echo "0 0 0" >"$results"; exit 0 ;;
"$stage:status") echo "ok 1 fake"; echo "1 0 0" >"$results"; exit 3 ;;
esac
exec "$here/run.real" "${args[@]}"
EOF_RUN
cat >"$tree/tools/vm/run" <<'EOF_VM'
#!/bin/bash
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
"$@"
status=$?
exit "${FAKE_VM_EXIT:-$status}"
EOF_VM
printf '#!/bin/sh\necho "1..1"\necho "ok 1 fake runner test"\n' >"$tree/selftests/vm/runner_test.sh"
printf '#!/bin/sh\necho "1..1"\necho "ok 1 fake CI command test"\n' >"$tree/selftests/vm/ci_test.sh"
printf '#!/bin/sh\necho "1..1"\necho "ok 1 fake test"\n' >"$tmp/pass_test.sh"
chmod +x "$tree/tools/check" "$tree/selftests/run" "$tree/selftests/run.real" \
	"$tree/tools/vm/run" "$tree/selftests/vm/runner_test.sh" "$tree/selftests/vm/ci_test.sh" \
	"$tmp/pass_test.sh"

# check WANT DESCRIPTION [VAR=VALUE...]: tools/check with the fakes; WANT
# is "pass" (exit 0, "4 passed, 0 failed": the runner stage has two tests; "pass1": "1 passed, 0 failed",
# the VM stage alone) or "fail" (exit 1 and at least one failure counted
# in its total).
check() {
	local want=$1 what=$2 out status last ok
	shift 2
	out=$tmp/check.out
	env -u FAKE_RUN -u FAKE_VM_EXIT KVER=fake-kver "$@" \
		"$tree/tools/check" "$tmp/build" "$tmp/pass_test.sh" "$tmp/pass_test.sh" \
		>"$out" 2>&1
	status=$?
	last=$(tail -n 1 "$out")
	ok=1
	case $want in
	pass) [ "$status" = 0 ] && [ "$last" = "4 passed, 0 failed" ] && ok=0 ;;
	pass1) [ "$status" = 0 ] && [ "$last" = "1 passed, 0 failed" ] && ok=0 ;;
	fail) [ "$status" = 1 ] && [[ $last =~ ^[0-9]+\ passed,\ [1-9][0-9]*\ failed ]] && ok=0 ;;
	esac
	if ! result $ok "$what: $want (exit $status, '$last')"; then
		sed 's/^/# /' "$out"
	fi
}

check pass "every stage passes"
for stage in 1-host 2-runner 3-vm; do
	check fail "$stage: selftests/run dies without counts" "FAKE_RUN=$stage:nocounts"
	check fail "$stage: garbled counts" "FAKE_RUN=$stage:garbled"
	check fail "$stage: no test ran" "FAKE_RUN=$stage:none"
	check fail "$stage: non-zero exit with no failure counted" "FAKE_RUN=$stage:status"
done
check fail "the guest ends badly (tools/vm/run exits 120)" FAKE_VM_EXIT=120
# .ci/run's second kernel: the VM stage only. A host stage that would die
# shows that it did not run; the VM stage still fails closed.
check pass1 "SRX_CHECK_STAGES=vm runs the VM stage alone" SRX_CHECK_STAGES=vm \
	FAKE_RUN=1-host:nocounts
check fail "SRX_CHECK_STAGES=vm: the VM stage dies without counts" \
	SRX_CHECK_STAGES=vm FAKE_RUN=3-vm:nocounts
check fail "SRX_CHECK_STAGES=vm: the guest ends badly" SRX_CHECK_STAGES=vm \
	FAKE_VM_EXIT=120
check fail "SRX_CHECK_STAGES names no stage set" SRX_CHECK_STAGES=host

tap_end
