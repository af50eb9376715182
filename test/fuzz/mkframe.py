#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Hand-made fuzz_rx inputs (regression inputs of test/fuzz/corpus/rx).

usage: test/fuzz/mkframe.py OUT SIDE OPCODE PSN [qpn=N] [deth=QKEY,SQPN] [reth=VA,RKEY,LEN]
                            [imm=V] [pay=N]

One record (fuzz_frame.h) with a well-formed RoCEv2 frame for SIDE (0: A,
1: B) of fuzz_rx's pair, to its RC QP (QPN 0x11 on both sides; qpn=0x12 its
UD QP, 0x13 its UC QP), ICRC right. Extension headers in wire order: DETH,
RETH, ImmDt.
fuzz_rx prints the QPNs, keys, VAs and PSNs it sets up.
"""
import struct
import sys
import zlib

IP = {0: bytes([127, 0, 0, 1]), 1: bytes([127, 0, 0, 2])}
QPN = 0x11


def ipv4_csum(h):
    s = sum(struct.unpack('>10H', h))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def frame(side, opcode, psn, ext, payload, qpn=QPN):
    pad = (-len(payload)) % 4
    bth = struct.pack('>BBHI', opcode, pad << 4, 0xFFFF, qpn) + struct.pack('>I', 0x80000000 | psn)
    roce = bth + ext + payload + b'\0' * pad
    udp = struct.pack('>HHHH', 0xC000, 4791, 8 + len(roce) + 4, 0)
    ip = bytearray(struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(udp) + len(roce) + 4, 1,
                               0x4000, 64, 17, 0, IP[1 - side], IP[side]))
    ip[10:12] = struct.pack('>H', ipv4_csum(bytes(ip)))
    # ICRC: variant fields as ones (TOS, TTL, IP checksum, UDP checksum, BTH byte 4)
    m = bytearray(ip + udp + roce)
    m[1] = 0xFF
    m[8] = 0xFF
    m[10:12] = b'\xff\xff'
    m[26:28] = b'\xff\xff'
    m[28 + 4] = 0xFF
    icrc = zlib.crc32(b'\xff' * 8 + bytes(m)) & 0xFFFFFFFF
    eth = b'\x02\0\0\0\0\x01' + b'\x02\0\0\0\0\x02' + b'\x08\x00'
    return eth + bytes(ip) + udp + roce + struct.pack('<I', icrc)


def main():
    out, side, opcode, psn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3], 0), int(sys.argv[4], 0)
    deth, reth, imm, payload, qpn = b'', b'', b'', b'', QPN
    for a in sys.argv[5:]:
        k, v = a.split('=')
        if k == 'reth':
            va, rkey, ln = (int(x, 0) for x in v.split(','))
            reth = struct.pack('>QII', va, rkey, ln)
        elif k == 'deth':
            qkey, sqpn = (int(x, 0) for x in v.split(','))
            deth = struct.pack('>II', qkey, sqpn & 0xFFFFFF)
        elif k == 'imm':
            imm = struct.pack('>I', int(v, 0))
        elif k == 'qpn':
            qpn = int(v, 0)
        elif k == 'pay':
            payload = bytes(i & 0xFF for i in range(int(v, 0)))
    fr = frame(side, opcode, psn, deth + reth + imm, payload, qpn)
    with open(out, 'wb') as f:
        f.write(struct.pack('>BH', side, len(fr)) + fr)


if __name__ == '__main__':
    main()
