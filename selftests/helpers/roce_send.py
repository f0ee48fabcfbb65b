#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Send crafted RoCE v2 packets (IBTA Annex A17) for net_test.sh, uc_check,
srq_check and inject_test.sh.

Builds IP, UDP, BTH, extension headers, payload, pad and ICRC itself and
sends them through a raw socket with the IP header included (IPPROTO_RAW),
so every byte the ICRC covers is the script's own. The ICRC is computed
here with zlib.crc32, independently of srx's kernel/icrc.h: CRC-32 over 8
bytes of 0xff (the masked LRH) followed by the packet from the IP header to
the end of the pad with the variant fields set to ones (IPv4 TOS, TTL,
header checksum; IPv6 traffic class, flow label, hop limit; UDP checksum;
BTH byte 4), stored little-endian, as Linux 6.1's rxe_icrc.c does on x86.

  roce_send.py SRC DST SPEC...
  roce_send.py SRC DST -
    SPEC is KIND:COUNT[:PAYLOAD[:OPTION...]] (one interpreter start for
    all: under TCG each one costs seconds). With "-", batches of SPECs
    come on standard input, one batch a line: each is sent, then "sent"
    is printed (flushed), so that a test can look at the receiver's
    counters between batches without starting Python again; "ready" is
    printed first, once the socket is open.
    KIND good:      correct ICRC
         bad-icrc:  ICRC with one bit flipped
         short:     UDP payload of 10 bytes, less than BTH + ICRC
    OPTION nodf:    IPv4 without DF, so that a router may fragment it
           op=N:    the BTH opcode (default 0x04, RC SEND_ONLY); the
                    extension headers of the opcode follow the BTH, in the
                    order of kernel/roce_opcode.c (IBTA 9.3; rxe_opcode.c)
           qpn=N:   the destination QP (default 0x11)
           psn=N:   the PSN (default 1)
           va=N rkey=N len=N:  RETH (and AtomicETH) fields; len, the DMA
                    length, defaults to PAYLOAD
           imm=N:   ImmDt          inv=N:   IETH's rkey
           swap=N cmp=N:       AtomicETH's swap (or add) and compare data
           qkey=N sqp=N:       DETH (default Q_Key 0x11111111, SrcQP 2)
           syn=N msn=N:        AETH
           pkey=N tver=N:      BTH P_Key (default 0xffff) and TVer (0)
         The lies, each refused by a check of its own:
           pad=N:   the BTH's PadCnt says N, whatever PAYLOAD's pad is
                    (the pad bytes sent are still PAYLOAD's right ones)
           cut=N:   only the first N bytes from the BTH on (headers,
                    payload, pad) are sent, then an ICRC over them: a
                    packet cut inside a header whose ICRC is right
           ulen=N:  the UDP length is N bytes more (N > 0: the kernel's
                    UDP layer drops it, srx never sees it) or -N bytes
                    fewer than the datagram; then the ICRC is computed
                    over the bytes the UDP length covers and the IP
                    datagram carries N bytes more after it, which the UDP
                    layer trims (udp_rcv(): pskb_trim_rcsum() to the UDP
                    length) before srx sees the packet
    The payload's byte i is (i * 7 + 3) & 0xff.
Addresses with a colon are IPv6.
"""
import socket
import struct
import sys
import zlib

PORT = 4791

# Extension headers of each opcode, in wire order: kernel/roce_opcode.c,
# itself checked against Linux 6.1's rxe_opcode.c. RC and UC share the
# low five bits (UC has only 0x00-0x0b); UD has 0x64 and 0x65.
EXT = {
    0x00: (), 0x01: (), 0x02: (), 0x03: ("imm",), 0x04: (),
    0x05: ("imm",),
    0x06: ("reth",), 0x07: (), 0x08: (), 0x09: ("imm",),
    0x0A: ("reth",), 0x0B: ("reth", "imm"),
    0x0C: ("reth",),                          # READ_REQ
    0x0D: ("aeth",), 0x0E: (), 0x0F: ("aeth",), 0x10: ("aeth",),
    0x11: ("aeth",), 0x12: ("aeth", "atmack"),
    0x13: ("atmeth",), 0x14: ("atmeth",),     # CMP_SWAP, FETCH_ADD
    0x16: ("ieth",), 0x17: ("ieth",),         # SEND_LAST/ONLY_INV
    0x1C: ("feth", "reth"), 0x1D: ("reth",),  # FLUSH, ATOMIC_WRITE
}


def ext_headers(op, f, payload_len):
    """The extension headers of opcode @op from the SPEC's fields @f."""
    if op & 0xE0 == 0x60:       # UD: DETH, then ImmDt on SEND_ONLY_IMM
        names = ("deth", "imm") if op & 0x1F == 0x05 else ("deth",)
    else:
        names = EXT.get(op & 0x1F, ())
    out = b""
    for h in names:
        if h == "reth":         # VA 64, R_Key 32, DMA length 32
            out += struct.pack("!QII", f.get("va", 0), f.get("rkey", 0),
                               f.get("len", payload_len))
        elif h == "imm":
            out += struct.pack("!I", f.get("imm", 0x1234))
        elif h == "ieth":
            out += struct.pack("!I", f.get("inv", 0))
        elif h == "atmeth":     # VA 64, R_Key 32, swap/add 64, compare 64
            out += struct.pack("!QIQQ", f.get("va", 0), f.get("rkey", 0),
                               f.get("swap", 1), f.get("cmp", 0))
        elif h == "deth":       # Q_Key 32, reserved 8, SrcQP 24
            out += struct.pack("!II", f.get("qkey", 0x11111111),
                               f.get("sqp", 2) & 0xFFFFFF)
        elif h == "aeth":       # syndrome 8, MSN 24
            out += struct.pack("!I", f.get("syn", 0x1F) << 24 |
                               f.get("msn", 0) & 0xFFFFFF)
        elif h == "atmack":
            out += struct.pack("!Q", 0)
        elif h == "feth":
            out += struct.pack("!I", 0)
    return out


def bth(pad, op=0x04, qpn=0x11, psn=1, pkey=0xFFFF, tver=0):
    # opcode, SE/M/PadCnt/TVer, P_Key, byte 4 (FECN/BECN: masked) 0x80,
    # DestQP, AckReq, PSN
    return struct.pack("!BBHB3sB3s", op, (pad & 3) << 4 | (tver & 0xF),
                       pkey, 0x80, qpn.to_bytes(3, "big"), 0x80,
                       psn.to_bytes(3, "big"))


def icrc(ip_hdr, udp_hdr, rest, ipv6):
    ip = bytearray(ip_hdr)
    if ipv6:
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
    else:
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
    udp = bytearray(udp_hdr)
    udp[6:8] = b"\xff\xff"
    body = bytearray(rest)
    if len(body) > 4:
        body[4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(body))


def ip_header(src, dst, ipv6, length, df):
    """The IP header of a datagram of @length bytes after it."""
    if ipv6:
        # version 6, traffic class 0x28, flow label 0x12345, hop limit 64
        return struct.pack("!IHBB16s16s", 6 << 28 | 0x28 << 20 | 0x12345,
                           length, 17, 64,
                           socket.inet_pton(socket.AF_INET6, src),
                           socket.inet_pton(socket.AF_INET6, dst))
    # TOS 0x28, ID 0x1234 (non-zero: the kernel keeps it), DF, TTL 64;
    # the kernel fills in the header checksum, which the ICRC masks, and
    # the total length (raw_send_hdrinc() in net/ipv4/raw.c).
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0x28, 20 + length, 0x1234,
                       0x4000 if df else 0, 64, 17, 0,
                       socket.inet_aton(src), socket.inet_aton(dst))


def packet(src, dst, ipv6, kind, payload_len, df=True, fields=None):
    f = dict(fields or {})
    cut = f.pop("cut", None)
    ulen_lie = f.pop("ulen", 0)
    if kind == "short":
        roce = bytes(10)
    else:
        pad = (4 - payload_len % 4) % 4
        b = {k: f[k] for k in ("op", "qpn", "psn", "pkey", "tver") if k in f}
        roce = bth(f.get("pad", pad), **b) + \
            ext_headers(f.get("op", 0x04), f, payload_len) + bytes(
                (i * 7 + 3) & 0xFF for i in range(payload_len)) + bytes(pad)
        if cut is not None:
            roce = roce[:cut]
    # ulen=-N: the UDP length leaves out the datagram's last N bytes. The
    # packet srx sees after the UDP layer's trim is the RoCE packet short
    # of N bytes, with an ICRC right for it, since the ICRC sits in the
    # last 4 bytes the UDP length covers.
    trail = max(-ulen_lie, 0)
    if trail:
        roce = roce[:len(roce) - trail]
    crc_len = 0 if kind == "short" else 4
    udp_len = 8 + len(roce) + crc_len
    udp = struct.pack("!HHHH", 0xC001, PORT, udp_len + max(ulen_lie, 0), 0)
    # The IP header covers the trailing bytes, and the ICRC covers the IP
    # header as received (the trim leaves its length field alone).
    ip = ip_header(src, dst, ipv6, udp_len + trail, df)
    if kind != "short":
        crc = icrc(ip, udp, roce, ipv6)
        if kind == "bad-icrc":
            crc ^= 0x100
        roce += struct.pack("<I", crc)
    return ip + udp + roce + bytes(trail)


# Options whose value is a number; "nodf" is the one flag.
NUMERIC = ("op", "qpn", "psn", "va", "rkey", "len", "imm", "inv", "swap",
           "cmp", "qkey", "sqp", "syn", "msn", "pkey", "tver", "pad", "cut",
           "ulen")


def send(s, src, dst, ipv6, specs):
    """Each SPEC of @specs built and sent COUNT times through @s."""
    for spec in specs:
        f = spec.split(":")
        kind, count = f[0], int(f[1])
        if kind not in ("good", "bad-icrc", "short"):
            sys.exit("unknown kind " + kind)
        payload_len = int(f[2]) if len(f) > 2 else 32
        df, fields = True, {}
        for opt in f[3:]:
            if opt == "nodf":
                df = False
            else:
                key, val = opt.split("=")
                if key not in NUMERIC:
                    sys.exit("unknown option " + opt)
                fields[key] = int(val, 0)
        pkt = packet(src, dst, ipv6, kind, payload_len, df, fields)
        for _ in range(count):
            s.sendto(pkt, (dst, 0, 0, 0) if ipv6 else (dst, 0))


def main():
    src, dst = sys.argv[1:3]
    ipv6 = ":" in dst
    fam = socket.AF_INET6 if ipv6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
    if sys.argv[3:] == ["-"]:
        print("ready", flush=True)
        for line in sys.stdin:
            send(s, src, dst, ipv6, line.split())
            print("sent", flush=True)
    else:
        send(s, src, dst, ipv6, sys.argv[3:])


if __name__ == "__main__":
    main()
