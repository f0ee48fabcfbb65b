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
# Tests: the arguments, else the default list below: the API tests and the
# RC traffic tests that pass on srx (Documentation/pyverbs-skips.md says
# which of rdma-core's traffic tests are left out, and why).
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
# The API tests, then the RC and UD traffic tests that pass or skip with a
# known reason below; Documentation/pyverbs-skips.md lists what is left out
# and why.
default_tests=(test_device test_pd test_cq.CQAPITest test_cqex.CQEXAPITest
	test_addr test_cq.CQTest test_cqex.CqExTestCase.test_ud_traffic_cq_ex
	test_qp test_atomic test_cq_events
	test_relaxed_ordering.RoTestCase.test_ro_ud_traffic test_rdmacm
	test_mr.MRTest.test_mr_rereg_{access,access_bad_flow,pd,addr}
	test_mr.MRTest.test_reg_mr_bad_flags test_mr.MWTest
	test_mr.DeviceMemoryAPITest test_mr.DeviceMemoryTest
	test_mr.DmaBufMRTest test_mr.DmaBufTestCase
	test_qpex.QpExTestCase.test_qp_ex_{ud_send,ud_send_imm,ud_zero_size}
	test_qpex.QpExTestCase.test_qp_ex_rc_{send,send_imm,atomic_write}
	test_qpex.QpExTestCase.test_qp_ex_rc_rdma_{write,write_imm,read}
	test_qpex.QpExTestCase.test_qp_ex_rc_{rdma_write_zero_length,rdma_read_zero_size}
	test_qpex.QpExTestCase.test_qp_ex_rc_atomic_{cmp_swp,fetch_add}
	test_qpex.QpExTestCase.test_qp_ex_rc_bind_mw
	test_qpex.QpExTestCase.test_qp_ex_xrc_{send,send_imm}
	test_qpex.QpExTestCase.test_{post_receive,post_send}_qp_state_bad_flow
	test_qpex.QpExTestCase.test_{full_rq,rq_with_larger_sgl}_bad_flow)

# Known skips on srx: "test id (regex)" -> "probe|reason (regex)". A skip
# matches when the id matches, the whole of the test's reason matches the
# reason here and the probe says srx reports the feature as absent. The
# first row whose id matches decides, in no set order: keep the ids apart.
declare -A known_skips=(
	# Device memory (ibv_alloc_dm): srx is a software device with no
	# on-device memory. It reports max_dm_size = 0 in query_device_ex
	# (checked by probe_dm), and ibv_alloc_dm fails with EOPNOTSUPP:
	# libsrx sets no alloc_dm op, so libibverbs' default answers; srx.ko
	# has no alloc_dm op either, so uverbs does not offer the DM object.
	# DMTest.setUp, SharedDMTest and test_mr's DeviceMemory classes skip
	# on max_dm_size == 0.
	['^test_device\.(DMTest|SharedDMTest)\.']='dm|Device memory is not supported'
	['^test_mr\.(DeviceMemoryAPITest|DeviceMemoryTest)\.']='dm|Device memory is not supported'
	# Raw packet QPs: srx.ko creates RC, UC and UD QPs only and answers
	# any other type with EOPNOTSUPP (probe_raw asks it as root, the way
	# the tests do).
	['^test_qp\.QPTest\.test_(create|query)_raw_qp']='raw|Create Raw Packet QP (with|without)( extended)? attrs is not supported'
	# XRC: srx reports no IBV_DEVICE_XRC and ibv_open_xrcd() fails with
	# EOPNOTSUPP (libsrx sets no open_xrcd op; probe_xrc).
	['^test_(atomic\.AtomicTest\.test_xrc_|qpex\.QpExTestCase\.test_qp_ex_xrc_)']='xrc|Create XRCD is not supported'
	# dma-buf MRs: libsrx sets no reg_dmabuf_mr op and srx.ko has no
	# reg_user_mr_dmabuf, so ibv_reg_dmabuf_mr() fails with EOPNOTSUPP
	# (probe_dmabuf). The tests first allocate a dma-buf from a GPU's
	# render node, which the guest does not have; they skip there, and
	# with one they would skip on srx's answer.
	['^test_mr\.(DmaBufMRTest|DmaBufTestCase)\.']='dmabuf|Allocating dmabuf is not supported by /dev/dri/renderD128|Device /dev/dri/renderD128 is not present|Reg dma-buf MR is not supported by the RDMA driver'
)

n=0
fails=0
tmp=

addr_added=
cleanup() {
	[ -n "$tmp" ] && rm -rf "$tmp"
	[ -n "$addr_added" ] && ip addr del 198.18.0.1/24 dev "$addr_added" 2>/dev/null
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

# test_rdmacm finds the device's netdev through its sysfs link
# (/sys/class/infiniband/DEV/device/net, tests/base.py) and connects to
# the first address `ip addr` lists there, which must be IPv4 for the
# multicast cases; the guest's eth0 has only its link-local IPv6 address.
# 198.18.0.0/15 is the benchmarking range (RFC 2544), which no topology of
# the suite uses; the address goes again on exit. Devices without the link
# (rdma_rxe has none) skip these tests.
ndev=$(ls "/sys/class/infiniband/$dev/device/net" 2>/dev/null | head -n 1)
if [ -n "$ndev" ] && ! ip -4 addr show dev "$ndev" | grep -q inet; then
	run ip addr add 198.18.0.1/24 dev "$ndev" && addr_added=$ndev
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


def eopnotsupp(what, fn):
    """(True, ...) when fn() fails with EOPNOTSUPP: the verb says absent."""
    import errno
    from pyverbs.pyverbs_error import PyverbsRDMAError
    try:
        fn()
    except PyverbsRDMAError as ex:
        return ex.error_code == errno.EOPNOTSUPP, f'{what}: {ex}'
    return False, f'{what}: succeeded'


def with_pd_cq(fn):
    """Run fn(ctx, pd, cq) on a fresh context of the device."""
    import pyverbs.device as d
    from pyverbs.cq import CQ
    from pyverbs.pd import PD
    with d.Context(name=dev) as ctx:
        with PD(ctx) as pd:
            with CQ(ctx, 16, None, None, 0) as cq:
                return fn(ctx, pd, cq)


def probe_raw():
    """Raw packet QPs are absent when creating one fails with EOPNOTSUPP.

    Asked as the tests ask it: as root, through ibv_create_qp().
    """
    import pyverbs.enums as e
    from pyverbs.qp import QP, QPCap, QPInitAttr

    def create(ctx, pd, cq):
        init = QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=cq, rcq=cq,
                          cap=QPCap(max_send_wr=1, max_recv_wr=1))
        return eopnotsupp('ibv_create_qp(RAW_PACKET)',
                          lambda: QP(pd, init).close())
    return with_pd_cq(create)


def probe_xrc():
    """XRC is absent when the device does not report IBV_DEVICE_XRC and
    ibv_open_xrcd() fails with EOPNOTSUPP."""
    import os
    import pyverbs.device as d
    import pyverbs.enums as e
    from pyverbs.xrcd import XRCD, XRCDInitAttr
    with d.Context(name=dev) as ctx:
        flags = ctx.query_device().device_cap_flags
        init = XRCDInitAttr(e.IBV_XRCD_INIT_ATTR_FD |
                            e.IBV_XRCD_INIT_ATTR_OFLAGS, os.O_CREAT, -1)
        absent, what = eopnotsupp('ibv_open_xrcd',
                                  lambda: XRCD(ctx, init).close())
    has_xrc = bool(flags & e.IBV_DEVICE_XRC)
    return absent and not has_xrc, f'IBV_DEVICE_XRC={int(has_xrc)}; {what}'


def probe_dmabuf():
    """dma-buf MRs are absent when ibv_reg_dmabuf_mr() fails with
    EOPNOTSUPP. pyverbs only calls it with a dma-buf it allocated from a
    GPU, so ask libibverbs directly, with no buffer (fd -1): a device
    that has the verb answers EBADF or EINVAL."""
    import ctypes
    import errno
    vp = ctypes.c_void_p
    ib = ctypes.CDLL('libibverbs.so.1', use_errno=True)
    ib.ibv_get_device_list.restype = ctypes.POINTER(vp)
    ib.ibv_get_device_list.argtypes = [ctypes.POINTER(ctypes.c_int)]
    ib.ibv_free_device_list.argtypes = [ctypes.POINTER(vp)]
    ib.ibv_get_device_name.restype = ctypes.c_char_p
    ib.ibv_get_device_name.argtypes = [vp]
    ib.ibv_open_device.restype = vp
    ib.ibv_open_device.argtypes = [vp]
    ib.ibv_close_device.argtypes = [vp]
    ib.ibv_alloc_pd.restype = vp
    ib.ibv_alloc_pd.argtypes = [vp]
    ib.ibv_dealloc_pd.argtypes = [vp]
    ib.ibv_reg_dmabuf_mr.restype = vp
    ib.ibv_reg_dmabuf_mr.argtypes = [vp, ctypes.c_uint64, ctypes.c_size_t,
                                     ctypes.c_uint64, ctypes.c_int,
                                     ctypes.c_int]
    ib.ibv_dereg_mr.argtypes = [vp]
    n = ctypes.c_int()
    devs = ib.ibv_get_device_list(ctypes.byref(n))
    ctx = pd = None
    try:
        for i in range(n.value):
            if ib.ibv_get_device_name(devs[i]).decode() == dev:
                ctx = ib.ibv_open_device(devs[i])
        if not ctx:
            return False, f'cannot open {dev}'
        pd = ib.ibv_alloc_pd(ctx)
        if not pd:
            return False, 'ibv_alloc_pd failed'
        ctypes.set_errno(0)
        mr = ib.ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, 1)
        err = ctypes.get_errno()
        if mr:
            ib.ibv_dereg_mr(mr)
            return False, 'ibv_reg_dmabuf_mr(fd -1): succeeded'
        return (err == errno.EOPNOTSUPP,
                f'ibv_reg_dmabuf_mr(fd -1): {os.strerror(err)}')
    finally:
        if pd:
            ib.ibv_dealloc_pd(pd)
        if ctx:
            ib.ibv_close_device(ctx)
        ib.ibv_free_device_list(devs)


for name, probe in (('dm', probe_dm), ('raw', probe_raw),
                    ('xrc', probe_xrc), ('dmabuf', probe_dmabuf)):
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
		if ! [[ $2 =~ ^($reason)$ ]]; then
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
