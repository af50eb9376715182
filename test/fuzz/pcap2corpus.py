#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Seed the fuzz corpora from pcap files of real RoCEv2 traffic.

usage: test/fuzz/pcap2corpus.py OUT_DIR PCAP...

Writes OUT_DIR/parse/seed-<name>-<n> (one frame each, as captured) and
OUT_DIR/rx/seed-<name>-<n> (fuzz_rx records, fuzz_frame.h: a single frame,
and windows of consecutive frames; requests to side B, responses to side A,
where that side's QP has the matching work outstanding). The frames keep
their captured addresses, QPNs and PSNs: fuzz_rx's mutator aims them at its
live QPs. Run once from the rdma_rxe captures (../shared/golden); the corpus
is committed, CI never reads the captures.
"""
import hashlib
import os
import struct
import sys

ROCE_PORT = 4791
PER_PCAP = 12          # distinct frames kept per capture
WINDOW = 4             # frames per multi-frame rx seed
RESP_OPS = range(0x0D, 0x13)   # READ responses, ACK, ATOMIC ACK


def frames(path):
    with open(path, 'rb') as f:
        data = f.read()
    magic = struct.unpack('<I', data[:4])[0]
    end = '<' if magic in (0xA1B2C3D4, 0xA1B23C4D) else '>'
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + 'IIII', data[off:off + 16])
        off += 16
        yield data[off:off + incl]
        off += incl


def roce_opcode(fr):
    """BTH opcode of an untagged IPv4/IPv6 RoCEv2 frame, or None."""
    if len(fr) < 14:
        return None
    etype = struct.unpack('>H', fr[12:14])[0]
    if etype == 0x0800:
        l4 = 14 + (fr[14] & 0x0F) * 4
        proto = fr[23]
    elif etype == 0x86DD:
        l4, proto = 14 + 40, fr[20]
    else:
        return None
    if proto != 17 or len(fr) < l4 + 8 + 12:
        return None
    if struct.unpack('>H', fr[l4 + 2:l4 + 4])[0] != ROCE_PORT:
        return None
    return fr[l4 + 8]


def record(fr):
    side = 0 if roce_opcode(fr) in RESP_OPS else 1
    return struct.pack('>BH', side, len(fr)) + fr


def write(path, data):
    with open(path, 'wb') as f:
        f.write(data)


def main():
    out, pcaps = sys.argv[1], sys.argv[2:]
    os.makedirs(os.path.join(out, 'parse'), exist_ok=True)
    os.makedirs(os.path.join(out, 'rx'), exist_ok=True)
    seen = set()
    for p in pcaps:
        name = os.path.splitext(os.path.basename(p))[0]
        roce = [fr for fr in frames(p) if roce_opcode(fr) is not None]
        # distinct frames, one of each opcode first, then the others in order
        by_op, rest = {}, []
        for fr in roce:
            h = hashlib.sha1(fr).digest()
            if h in seen:
                continue
            seen.add(h)
            if roce_opcode(fr) not in by_op:
                by_op[roce_opcode(fr)] = fr
            else:
                rest.append(fr)
        keep = (list(by_op.values()) + rest)[:PER_PCAP]
        for n, fr in enumerate(keep):
            write(os.path.join(out, 'parse', 'seed-%s-%d' % (name, n)), fr)
            write(os.path.join(out, 'rx', 'seed-%s-%d' % (name, n)), record(fr))
        for n in range(0, min(len(roce), 3 * WINDOW), WINDOW):
            win = b''.join(record(fr) for fr in roce[n:n + WINDOW])
            write(os.path.join(out, 'rx', 'seed-%s-w%d' % (name, n // WINDOW)), win)


if __name__ == '__main__':
    main()
