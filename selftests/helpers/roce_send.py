#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Send crafted RoCE v2 packets (IBTA Annex A17) for net_test.sh and uc_check.

Builds IP, UDP, BTH, payload, pad and ICRC itself and sends them through a
raw socket with the IP header included (IPPROTO_RAW), so every byte the
ICRC covers is the script's own. The ICRC is computed here with zlib.crc32,
independently of srx's kernel/icrc.h: CRC-32 over 8 bytes of 0xff (the
masked LRH) followed by the packet from the IP header to the end of the
pad with the variant fields set to ones (IPv4 TOS, TTL, header checksum;
IPv6 traffic class, flow label, hop limit; UDP checksum; BTH byte 4),
stored little-endian, as Linux 6.1's rxe_icrc.c does on x86.

  roce_send.py SRC DST SPEC...
    SPEC is KIND:COUNT[:PAYLOAD[:OPTION...]] (one interpreter start for
    all: under TCG each one costs seconds)
    KIND good:      correct ICRC
         bad-icrc:  ICRC with one bit flipped
         short:     UDP payload of 10 bytes, less than BTH + ICRC
    OPTION nodf:    IPv4 without DF, so that a router may fragment it
           op=N:    the BTH opcode (default 0x04, RC SEND_ONLY); only
                    opcodes whose headers are the BTH alone (SENDs without
                    immediate data) are built right
           qpn=N:   the destination QP (default 0x11)
           psn=N:   the PSN (default 1)
    The payload's byte i is (i * 7 + 3) & 0xff.
Addresses with a colon are IPv6.
"""
import socket
import struct
import sys
import zlib

PORT = 4791


def bth(pad, op=0x04, qpn=0x11, psn=1):
    # opcode, PadCnt, P_Key 0xffff, byte 4 (FECN/BECN: masked) 0x80,
    # DestQP, AckReq, PSN
    return struct.pack("!BBHB3sB3s", op, pad << 4, 0xFFFF, 0x80,
                       qpn.to_bytes(3, "big"), 0x80,
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
    body[4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(body))


def packet(src, dst, ipv6, kind, payload_len, df=True, fields=None):
    if kind == "short":
        roce = bytes(10)
    else:
        pad = (4 - payload_len % 4) % 4
        roce = bth(pad, **(fields or {})) + bytes(
            (i * 7 + 3) & 0xFF for i in range(payload_len)) + bytes(pad)
    udp_len = 8 + len(roce) + (0 if kind == "short" else 4)
    udp = struct.pack("!HHHH", 0xC001, PORT, udp_len, 0)
    if ipv6:
        # version 6, traffic class 0x28, flow label 0x12345, hop limit 64
        ip = struct.pack("!IHBB16s16s", 6 << 28 | 0x28 << 20 | 0x12345,
                         udp_len, 17, 64,
                         socket.inet_pton(socket.AF_INET6, src),
                         socket.inet_pton(socket.AF_INET6, dst))
    else:
        # TOS 0x28, ID 0x1234 (non-zero: the kernel keeps it), DF, TTL 64;
        # the kernel fills in the header checksum, which the ICRC masks.
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0x28, 20 + udp_len, 0x1234,
                         0x4000 if df else 0, 64, 17, 0,
                         socket.inet_aton(src), socket.inet_aton(dst))
    if kind == "short":
        return ip + udp + roce
    crc = icrc(ip, udp, roce, ipv6)
    if kind == "bad-icrc":
        crc ^= 0x100
    return ip + udp + roce + struct.pack("<I", crc)


def main():
    src, dst = sys.argv[1:3]
    ipv6 = ":" in dst
    fam = socket.AF_INET6 if ipv6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
    for spec in sys.argv[3:]:
        f = spec.split(":")
        kind, count = f[0], int(f[1])
        payload_len = int(f[2]) if len(f) > 2 else 32
        df, fields = True, {}
        for opt in f[3:]:
            if opt == "nodf":
                df = False
            else:
                key, val = opt.split("=")
                if key not in ("op", "qpn", "psn"):
                    sys.exit("unknown option " + opt)
                fields[key] = int(val, 0)
        pkt = packet(src, dst, ipv6, kind, payload_len, df, fields)
        for _ in range(count):
            s.sendto(pkt, (dst, 0, 0, 0) if ipv6 else (dst, 0))


if __name__ == "__main__":
    main()
