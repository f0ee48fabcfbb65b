#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# inject_test.sh - malformed and forged RoCE v2 packets at a live srx
# device while honest traffic runs through it.
#
#   namespace tp-a                              namespace tp-b
#   tpsrxa (srx) ── tpa0 ══════ veth ══════ tpb0 ── tpsrxb (srx)
#   rc_traffic's requesters   ───────────▶  its responders
#   helpers/roce_send.py (raw socket,         helpers/inject_victim: 4 RC
#     source 192.0.2.1)       ───────────▶    QPs whose peer is 192.0.2.1,
#                                             one buffer of known bytes
#
# helpers/rc_traffic runs rounds of 4 QPs x 4000 work requests of every RC
# opcode from a to b, bytes compared, while helpers/roce_send.py, from a's
# namespace and a's address, sends b batches of lies. Each batch must move
# b's counters of refused packets (rcvd_icrc_err, rcvd_malformed,
# rcvd_dropped, duplicate_request, out_of_seq_request, send_seq_err,
# send_nak) by exactly what it holds, no more, no less: honest traffic
# moves none of them (its packets are in order on a veth, both ends of
# which receive on one CPU, and its ACK timeout is 1.07 s, so nothing is
# resent). What the batches check:
#
#   psn        at victim QP 0: 3 WRITEs behind its expected PSN are
#              duplicates (acknowledged again, not executed), 5 ahead of it
#              are out of sequence and get one sequence NAK, the WRITE at
#              the expected PSN lands, 4 more ahead get one more NAK
#   icrc       5 WRITEs to QP 0 at its expected PSN with a wrong ICRC
#   truncated  packets cut inside the BTH, inside a RETH, inside an
#              AtomicETH, and a 10-byte UDP payload; ICRCs right for what
#              is there, so only the header checks refuse them
#   lengths    a UDP length 2 bytes short of the datagram (the UDP layer
#              trims, srx sees an unaligned packet), a payload that leaves
#              the packet unaligned, a READ request with a payload; and a
#              UDP length longer than the datagram, which the UDP layer
#              drops before srx (Udp InErrors, no srx counter)
#   pad        PadCnt 3 on an empty payload, a pad on a WRITE_FIRST, a pad
#              on a READ request (no payload)
#   header     TVer 1, P_Key 0x1234, the reserved opcode 0x15, a CNP,
#              DestQP 0
#   qp type    a SEND to a QPN no QP has; a UC SEND, a UC WRITE and a UD
#              SEND at an RC QP: dropped (rcvd_dropped)
#   memory     a WRITE with a wrong rkey (the MR's index, another key byte:
#              kernel/mr.c) (QP 1), one that ends past the MR
#              (QP 2), one whose payload is longer than its RETH's DMA
#              length (QP 3): each a NAK (send_nak) and its QP in ERR; one
#              more WRITE to QP 1, now in ERR, is dropped
#
# All of these but the memory batch and the payload of psn's one good
# WRITE aim at QP 0's expected PSN and the buffer's bytes 64-95 with the
# right rkey, so a lie that got through would show in the buffer; at the
# end inject_victim reports QP 0 in RTS, QPs 1-3 in ERR and its buffer
# untouched but for the good WRITE's 32 bytes. rc_traffic must have been
# running when the last batch went, and every round of it must pass, every
# byte compared; no kernel warning may have been logged.
set -u -o pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=selftests/lib/topo.sh
. "$top/selftests/lib/topo.sh"
RC_PORT_BASE=21000
# shellcheck source=selftests/lib/rc.sh
. "$top/selftests/lib/rc.sh"

topo_trap
trap 's=$?; trap - EXIT; touch "$tmp/stop"; [ -n "${vpid:-}" ] && kill "$vpid" 2>/dev/null;
	[ -n "${injpid:-}" ] && kill "$injpid" 2>/dev/null;
	wait;
	topo_down || s=1; rm -rf "$tmp"; exit $s' EXIT

send=$top/selftests/helpers/roce_send.py
victim=$top/build/helpers/inject_victim
rc_traffic=$top/build/helpers/rc_traffic
scale=${SRX_TEST_TIMEOUT_SCALE:-1}
# The counters each batch is checked on, all of them every time.
counters="rcvd_icrc_err rcvd_malformed rcvd_dropped duplicate_request out_of_seq_request send_seq_err send_nak"

# b's counters, read with the shell's own read (no process per counter:
# under TCG each costs tens of milliseconds, and a batch polls them).
bcnt() {	# bcnt NAME: one counter into $v
	read -r v <"/sys/class/infiniband/$TOPO_B_DEV/ports/1/hw_counters/$1"
}

snapshot() {
	local c v out=
	for c in $counters; do
		bcnt "$c"
		out+="$v "
	done
	echo "$out"
}

# deltas BEFORE: "name=delta ..." of every counter since snapshot BEFORE.
deltas() {
	local -a before
	local c v i=0 out=
	read -ra before <<<"$1"
	for c in $counters; do
		bcnt "$c"
		out+="$c=$((v - before[i])) "
		i=$((i + 1))
	done
	echo "${out% }"
}

# expect "NAME=N ...": the deltas every counter must show, 0 if not named.
expect() {
	local c out=
	for c in $counters; do
		if [[ " $1 " =~ \ $c=([0-9]+)\  ]]; then
			out+="$c=${BASH_REMATCH[1]} "
		else
			out+="$c=0 "
		fi
	done
	echo "${out% }"
}

settled() {	# settled BEFORE WANT
	[ "$(deltas "$1")" = "$2" ]
}

# inject "NAME=N ..." SPEC...: the SPECs sent from a to b as one batch of
# the roce_send.py started below, then b's counters must have moved by
# exactly NAME=N (and the others not at all) within 10 s, and stay so for
# 1 s more.
inject() {
	local want before got line=
	want=$(expect "$1")
	shift
	before=$(snapshot)
	echo "# + [a] at ${SECONDS} s, to roce_send.py: $*"
	if ! { echo "$*" >&"${INJ[1]}" &&
		read -r -t $((60 * scale)) line <&"${INJ[0]}" &&
		[ "$line" = sent ]; }; then
		echo "#   roce_send.py: ${line:-no answer}"
		return 1
	fi
	topo_wait $((10 * scale)) settled "$before" "$want"
	sleep 1
	got=$(deltas "$before")
	echo "#   b: $got"
	[ "$got" = "$want" ] && return 0
	echo "#   expected: $want"
	return 1
}

# Udp InErrors of b's namespace (the fourth field of /proc/net/snmp's Udp:).
udp_in_errors() {
	# shellcheck disable=SC2016
	topo_exec b awk '/^Udp:/ { if (h) { print $4; exit } h = 1 }' /proc/net/snmp
}

# What the victim printed: "qp I qpn=N psn=N", "mr addr=N rkey=N".
vfield() {	# vfield LINE_PREFIX NAME
	sed -n "s/^$1 .*\b$2=\([0-9]*\).*/\1/p" "$tmp/victim" | head -n 1
}

echo "TAP version 13"
command -v python3 >/dev/null || { echo "1..0 # SKIP python3 is not installed"; exit 4; }

if ! topo_up srx-srx || ! gids; then
	ok "srx-srx topology" false
	echo "1..$n"
	exit 1
fi
ok "receive steering of both veth ends to one CPU" topo_rx_on_one_cpu 1

echo "# + [b] $victim -d $TOPO_B_DEV -g $gid_b -a $TOPO_A_IP4 -f $tmp/go -w 32"
topo_exec b timeout $((200 * scale)) "$victim" -d "$TOPO_B_DEV" -g "$gid_b" \
	-a "$TOPO_A_IP4" -f "$tmp/go" -w 32 -t $((150 * scale)) \
	>"$tmp/victim" 2>&1 &
vpid=$!
ready() { grep -q '^ready' "$tmp/victim"; }
if ! topo_wait $((30 * scale)) ready; then
	sed 's/^/#   victim: /' "$tmp/victim"
	ok "inject_victim ready" false
	echo "1..$n"
	exit 1
fi
sed 's/^/#   victim: /' "$tmp/victim"
q0=$(vfield "qp 0" qpn) p0=$(vfield "qp 0" psn)
q1=$(vfield "qp 1" qpn) p1=$(vfield "qp 1" psn)
q2=$(vfield "qp 2" qpn) p2=$(vfield "qp 2" psn)
q3=$(vfield "qp 3" qpn) p3=$(vfield "qp 3" psn)
addr=$(vfield mr addr) rkey=$(vfield mr rkey)
# QP 0's expected PSN once psn's good WRITE has landed, and a WRITE there
# to bytes 64-95 of the buffer with the right rkey: what every lie wears.
e0=$((p0 + 1))
w0="op=0x0a:qpn=$q0:psn=$e0:va=$((addr + 64)):rkey=$rkey"

# One Python for every batch (under TCG each start costs seconds), started
# before the honest traffic so that the traffic outlasts the batches.
echo "# + [a] roce_send.py $TOPO_A_IP4 $TOPO_B_IP4 - (a batch a line)"
coproc INJ { topo_exec a timeout $((300 * scale)) python3 "$send" \
	"$TOPO_A_IP4" "$TOPO_B_IP4" - 2>&1; }
injpid=$INJ_PID
line=
read -r -t $((60 * scale)) line <&"${INJ[0]}"
if [ "$line" != ready ]; then
	echo "#   roce_send.py: ${line:-no answer}"
	ok "roce_send.py ready" false
	echo "1..$n"
	exit 1
fi

# The honest traffic: rounds of rc_traffic, 4 QPs x 4000 requests each,
# one after the other until the batches are sent (one round lasted 10 s
# on a quiet host, and the batches 10 s; how long each takes depends on
# the host's load), each of which must pass.
echo "# + [a] at ${SECONDS} s, in rounds: $rc_traffic -d $TOPO_A_DEV -g $gid_a -D $TOPO_B_DEV -G $gid_b -q 4 -n 4000 -u 18"
(
	r=0
	while [ ! -e "$tmp/stop" ]; do
		r=$((r + 1))
		echo "# round $r at ${SECONDS} s"
		topo_exec a timeout $((300 * scale)) "$rc_traffic" \
			-d "$TOPO_A_DEV" -g "$gid_a" -D "$TOPO_B_DEV" \
			-G "$gid_b" -q 4 -n 4000 -u 18 ||
			{ echo "# round $r failed at ${SECONDS} s"; exit 1; }
	done
	echo "# $r rounds, every one passed; the last ended at ${SECONDS} s"
) >"$tmp/traffic" 2>&1 &
tpid=$!
# The first round's QPs connected and its traffic under way.
topo_wait $((30 * scale)) grep -q seed "$tmp/traffic"
sleep 1

w="op=0x0a:qpn=$q0:va=$addr:rkey=$rkey"
ok "psn: 3 duplicates acknowledged, 9 out of sequence, one sequence NAK per gap" \
	inject "duplicate_request=3 out_of_seq_request=9 send_seq_err=2" \
	"good:1:32:$w:psn=$((p0 - 1))" "good:1:32:$w:psn=$((p0 - 2))" \
	"good:1:32:$w:psn=$((p0 - 3))" "good:5:32:$w:psn=$((p0 + 5))" \
	"good:1:32:$w:psn=$p0" "good:4:32:$w:psn=$((p0 + 9))"

ok "icrc: 5 wrong ICRCs counted in rcvd_icrc_err" \
	inject "rcvd_icrc_err=5" "bad-icrc:5:32:$w0"

# cut=6: the BTH's first 6 bytes (UDP payload 10 < BTH + ICRC, net.c);
# cut=20: a WRITE_ONLY cut 8 bytes into its RETH; cut=32: a CMP_SWAP cut
# 20 bytes into its AtomicETH (roce_pkt.c: short_hdr).
ok "truncated: headers cut in the BTH, RETH and AtomicETH: rcvd_malformed" \
	inject "rcvd_malformed=8" "good:2:32:$w0:cut=6" \
	"good:2:32:$w0:cut=20" "good:2:0:op=0x13:qpn=$q0:psn=$e0:va=$((addr + 64)):rkey=$rkey:cut=32" \
	"short:2"

lengths() {
	local u0 u1
	u0=$(udp_in_errors)
	# ulen=-2: 2 bytes the UDP length leaves out; pad=0:cut=58: a
	# WRITE_ONLY of 30 bytes that says no pad and has none (12 + 16 + 30).
	inject "rcvd_malformed=6" "good:2:32:$w0:ulen=-2" "good:2:30:$w0:pad=0:cut=58" \
		"good:2:32:op=0x0c:qpn=$q0:psn=$e0:va=$((addr + 64)):rkey=$rkey:len=32" \
		"good:3:32:$w0:ulen=8" || return 1
	u1=$(udp_in_errors)
	echo "#   Udp InErrors at b: $u0 -> $u1"
	[ $((u1 - u0)) -eq 3 ]
}
ok "lengths: UDP length short, unaligned, payload on READ: rcvd_malformed; UDP length long: UDP drops" \
	lengths

ok "pad: PadCnt over the payload, on a FIRST, on a READ: rcvd_malformed" \
	inject "rcvd_malformed=6" "good:2:0:$w0:pad=3" \
	"good:2:1024:op=0x06:qpn=$q0:psn=$e0:va=$((addr + 64)):rkey=$rkey:len=2048:pad=2" \
	"good:2:0:op=0x0c:qpn=$q0:psn=$e0:va=$((addr + 64)):rkey=$rkey:len=32:pad=1"

ok "header: TVer, P_Key, reserved opcode, CNP, DestQP 0: rcvd_malformed" \
	inject "rcvd_malformed=10" "good:2:32:$w0:tver=1" \
	"good:2:32:$w0:pkey=0x1234" "good:2:0:op=0x15:qpn=$q0:psn=$e0" \
	"good:2:0:op=0x81:qpn=$q0:psn=$e0" "good:2:32:$w0:qpn=0"

ok "qp type: unknown QPN, UC SEND, UC WRITE, UD SEND at an RC QP: rcvd_dropped" \
	inject "rcvd_dropped=8" "good:2:32:qpn=$((0xfedcb)):psn=$e0" \
	"good:2:32:op=0x24:qpn=$q0:psn=$e0" \
	"good:2:32:op=0x2a:qpn=$q0:psn=$e0:va=$((addr + 64)):rkey=$rkey" \
	"good:2:32:op=0x64:qpn=$q0:psn=$e0:qkey=0x11111111"

ok "memory: bad rkey, past the MR, payload over the DMA length: 3 NAKs; ERR drops" \
	inject "send_nak=3 rcvd_dropped=1" \
	"good:1:32:op=0x0a:qpn=$q1:psn=$p1:va=$((addr + 64)):rkey=$((rkey ^ 1))" \
	"good:1:32:op=0x0a:qpn=$q2:psn=$p2:va=$((addr + 4096 - 16)):rkey=$rkey" \
	"good:1:32:op=0x0a:qpn=$q3:psn=$p3:va=$((addr + 64)):rkey=$rkey:len=16" \
	"good:1:32:op=0x0a:qpn=$q1:psn=$((p1 + 1)):va=$((addr + 64)):rkey=$rkey"

running=0
kill -0 "$tpid" 2>/dev/null && running=1
echo "# at ${SECONDS} s, honest traffic still running after the last batch: $running"
touch "$tmp/stop"
# Its standard input closed, roce_send.py ends.
inj_in=${INJ[1]}
exec {inj_in}>&-
wait "$injpid"
injpid=

touch "$tmp/go"
wait "$vpid"
vrc=$?
vpid=
sed -n '/^ready/,$p' "$tmp/victim" | sed 's/^/#   victim: /'
victim_ok() {
	[ $vrc = 0 ] &&
		grep -q '^qp 0 state=RTS' "$tmp/victim" &&
		grep -q '^qp 1 state=ERR' "$tmp/victim" &&
		grep -q '^qp 2 state=ERR' "$tmp/victim" &&
		grep -q '^qp 3 state=ERR' "$tmp/victim" &&
		grep -q '^buffer ok' "$tmp/victim"
}
ok "victim: QP 0 in RTS, QPs 1-3 in ERR, buffer untouched but the good WRITE" \
	victim_ok

wait "$tpid"
trc=$?
tpid=
sed 's/^/#   rc_traffic: /' "$tmp/traffic"
ok "honest traffic: rounds of 4 QPs x 4000 requests, every opcode, bytes compared" \
	[ $trc = 0 ]
ok "honest traffic ran throughout the injection" [ $running = 1 ]

topo_rx_on_one_cpu 0 || true
ok "topology removed" topo_down
ok "no kernel warning" kmsg_clean
echo "1..$n"
[ $fails -eq 0 ]
