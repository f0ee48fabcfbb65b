#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rdma-core's own test suite (pyverbs, from Debian's python3-pyverbs) against
# the device under test: one TAP line per pyverbs test case.
#
#   selftests/pyverbs_test.sh [PYVERBS_TEST...]
#
# Device: $SRX_TEST_DEV (default srx0; srx0 is created on eth0 if missing,
# as srx_test_open() does). tools/compare runs this same script on rxe0.
# Tests: the arguments, else the API tests below (they need no traffic).
#
# Every skip on srx must be one of the known skips below, with the reason
# the test gives, and srx must itself report the feature as absent (checked
# by a probe before the tests run); any other skip on srx fails. On other
# devices skips are passed through as they come. The table of skips and
# their justification is also in Documentation/pyverbs-skips.md.
set -u

dev=${SRX_TEST_DEV:-srx0}
suite=/usr/share/doc/rdma-core/tests
# Debian's pyverbs is only visible to Debian's interpreter; a python3 that
# comes first on PATH may be another one.
python=/usr/bin/python3
default_tests=(test_device test_pd test_cq.CQAPITest test_cqex.CQEXAPITest)

# Known skips on srx: "test id (regex)" -> "probe|reason the test gives".
# A skip matches when the id matches, the test's reason is the one given
# here and the probe says srx reports the feature as absent.
declare -A known_skips=(
	# Device memory (ibv_alloc_dm): srx is a software device with no
	# on-device memory. It reports max_dm_size = 0 in query_device_ex
	# (checked by probe_dm), and ibv_alloc_dm fails with EOPNOTSUPP:
	# libsrx sets no alloc_dm op, so libibverbs' default answers; srx.ko
	# has no alloc_dm op either, so uverbs does not offer the DM object.
	# DMTest.setUp and SharedDMTest skip on max_dm_size == 0.
	['^test_device\.(DMTest|SharedDMTest)\.']='dm|Device memory is not supported'
)

n=0
fails=0
tmp=

cleanup() {
	[ -n "$tmp" ] && rm -rf "$tmp"
}
trap cleanup EXIT

tap() {	# tap ok|not-ok|skip DESCRIPTION [REASON]
	n=$((n + 1))
	case $1 in
	ok) echo "ok $n $2" ;;
	skip) echo "ok $n $2 # SKIP $3" ;;
	*) echo "not ok $n $2"; fails=$((fails + 1)) ;;
	esac
}

run() {	# run CMD...: echo it first, as our shell tests do
	echo "# + $*"
	"$@"
}

echo "TAP version 13"

# Not a skip: srx lacks nothing here, the test machine does, and make deps
# installs it.
if [ ! -x $python ] || ! $python -c 'import pyverbs' 2>/dev/null ||
   [ ! -d $suite ]; then
	echo "# $python cannot import pyverbs or $suite is missing: make deps"
	tap not-ok "python3-pyverbs is installed"
	echo "1..$n"
	exit 1
fi

if [ ! -e "/sys/class/infiniband/$dev" ] && [ "$dev" = srx0 ]; then
	run ip link set eth0 up
	run rdma link add srx0 type srx netdev eth0
fi
if [ ! -e "/sys/class/infiniband/$dev" ]; then
	tap not-ok "device $dev exists"
	echo "1..$n"
	exit 1
fi

# About half of the suite ships gzipped, and the run writes .pyc files:
# work on a copy.
tmp=$(mktemp -d)
cp -r "$suite" "$tmp/tests"
gunzip -f "$tmp"/tests/*.gz

# A run_tests.py that reports each case as one machine-readable line
#   RESULT<TAB>ok|fail|error|skip<TAB>test id<TAB>reason
# and everything else (tracebacks) as "# " lines; plus PROBE lines that tell
# whether the device reports a feature as absent, for the known skips.
cat >"$tmp/tests/tap_runner.py" <<'EOF'
import os
import sys
import traceback
import unittest
from importlib.machinery import SourceFileLoader

from args_parser import parser

here = os.path.dirname(os.path.abspath(__file__))
tests = SourceFileLoader('tests', os.path.join(here, '__init__.py')).load_module()
parser.parse_args()
dev = parser.args['dev']


def emit(*fields):
    print('\t'.join(str(f).replace('\t', ' ').replace('\n', ' ')
                    for f in fields), flush=True)


def comment(text):
    for line in text.rstrip('\n').split('\n'):
        print('# ' + line, flush=True)


def probe_dm():
    """Device memory is absent when the device reports max_dm_size 0.

    pyverbs' DM() refuses by itself on max_dm_size 0 without reaching
    ibv_alloc_dm(), so the device's report is the thing to check.
    """
    import pyverbs.device as d
    with d.Context(name=dev) as ctx:
        size = ctx.query_device_ex().max_dm_size
    return size == 0, f'query_device_ex: max_dm_size={size}'


for name, probe in (('dm', probe_dm),):
    try:
        absent, what = probe()
    except Exception as ex:
        absent, what = False, f'probe failed: {ex!r}'
    emit('PROBE', name, 'absent' if absent else 'present', what)


def short_id(test):
    tid = test.id()
    return tid[len('tests.'):] if tid.startswith('tests.') else tid


class TapResult(unittest.TestResult):
    def addSuccess(self, test):
        super().addSuccess(test)
        emit('RESULT', 'ok', short_id(test), '')

    def addFailure(self, test, err):
        super().addFailure(test, err)
        comment(self._exc_info_to_string(err, test))
        emit('RESULT', 'fail', short_id(test), err[1])

    def addError(self, test, err):
        super().addError(test, err)
        comment(self._exc_info_to_string(err, test))
        emit('RESULT', 'error', short_id(test), err[1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        emit('RESULT', 'skip', short_id(test), reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        emit('RESULT', 'ok', short_id(test), 'expected failure')

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        emit('RESULT', 'fail', short_id(test), 'unexpected success')

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            comment(self._exc_info_to_string(err, test))
            emit('RESULT', 'fail', short_id(subtest), err[1])


class TapRunner:
    def run(self, test):
        result = TapResult()
        test(result)
        return result


try:
    main = unittest.main(module=tests, testRunner=TapRunner(), exit=False)
except SystemExit:
    raise
except BaseException:
    comment(traceback.format_exc())
    sys.exit(2)
sys.exit(0 if main.result.wasSuccessful() else 1)
EOF

[ $# -eq 0 ] && set -- "${default_tests[@]}"
declare -A probes=()
status=
echo "# + $python run_tests.py --dev $dev $* (as tap_runner.py)"

known_skip() {	# known_skip TEST REASON: prints the justification if known
	local re probe reason
	for re in "${!known_skips[@]}"; do
		[[ $1 =~ $re ]] || continue
		probe=${known_skips[$re]%%|*}
		reason=${known_skips[$re]#*|}
		if [ "$2" != "$reason" ]; then
			echo "# $1: skipped for \"$2\", expected \"$reason\""
			return 1
		fi
		if [ "${probes[$probe]:-}" != absent ]; then
			echo "# $1: $dev does not report '$probe' as absent (${probes[$probe]:-no probe})"
			return 1
		fi
		return 0
	done
	echo "# $1: no known reason for this skip on $dev"
	return 1
}

nresults=0
while IFS= read -r line; do
	IFS=$'\t' read -r kind a b c <<<"$line"
	case $kind in
	EXIT) status=$a ;;
	PROBE)
		probes[$a]=$b
		echo "# probe $a: $b ($c)"
		;;
	RESULT)
		nresults=$((nresults + 1))
		case $a in
		ok) tap ok "$b" ;;
		skip)
			if [[ $dev != srx* ]] || known_skip "$b" "$c"; then
				tap skip "$b" "$c"
			else
				echo "# $b: unexpected skip: $c"
				tap not-ok "$b"
			fi
			;;
		*)
			# The id alone names the case, so that tools/compare
			# can line the devices up; the reason goes before it.
			echo "# $b: $a: $c"
			tap not-ok "$b"
			;;
		esac
		;;
	*) [[ $line == '# '* ]] && echo "$line" || echo "# $line" ;;
	esac
done < <(
	# Streamed, so that whatever ran is reported even if a timeout kills
	# us; the runner's status comes last, as an EXIT line.
	cd "$tmp/tests" && $python tap_runner.py --dev "$dev" "$@" 2>&1
	printf 'EXIT\t%s\n' $?
)

if [ $nresults -eq 0 ]; then
	tap not-ok "pyverbs ran no test (exit $status)"
elif [ "$status" != 0 ] && [ $fails -eq 0 ]; then
	tap not-ok "pyverbs exited with status $status"
fi
echo "1..$n"
[ $fails -eq 0 ]
