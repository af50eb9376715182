#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A minimal RoCEv2 RC requester on a raw AF_PACKET socket, for
test_perf_app_cli.py: it talks to an srnic-perf --server --peer-* on the other
end of a veth pair (both in a netns the test made) and prints what came
back as one JSON line.

usage: roce_peer.py IFACE SERVER_JSON MY_IP MY_QPN MY_PSN OPS

SERVER_JSON is the server's line (qpn, rkey, va, len, ip, mac). OPS is a
comma-separated list of "read:LEN" (RDMA READ of LEN bytes at the region's
start) and "write:LEN" (RDMA WRITE ONLY of LEN bytes), sent in that order,
one at a time, each PSN after the last. For each op the answer packets are
listed: opcode, PSN, payload length, AETH syndrome (or null).

The frames are built here, by hand, from the wire format (IBTA vol. 1
9.2-9.3, Annex A17): Ethernet, IPv4 (checksum), UDP 4791, BTH, RETH, the
ICRC (CRC-32 over the invariant fields with the variant ones as ones)."""
import json
import socket
import struct
import sys
import time
import zlib

ROCE_PORT = 4791
ETH_P_IP = 0x0800
ANSWER_WAIT_S = 60      # the server is an ASan build on a loaded host
OP_WRITE_ONLY = 0x0A
OP_READ_REQ = 0x0C
OP_READ_FIRST, OP_READ_MIDDLE, OP_READ_LAST, OP_READ_ONLY, OP_ACK = 0x0D, 0x0E, 0x0F, 0x10, 0x11
AETH_OPS = (OP_READ_FIRST, OP_READ_LAST, OP_READ_ONLY, OP_ACK)


def ipv4_csum(h):
    s = sum(struct.unpack('>10H', h))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def frame(src_mac, dst_mac, src_ip, dst_ip, opcode, dqpn, psn, ext, payload):
    pad = (-len(payload)) % 4
    # BTH: opcode, SE/M/pad/tver, P_Key, reserved + dest QP, AckReq + PSN
    bth = struct.pack('>BBHI', opcode, pad << 4, 0xFFFF, dqpn & 0xFFFFFF) + \
        struct.pack('>I', 0x80000000 | (psn & 0xFFFFFF))
    roce = bth + ext + payload + b'\0' * pad
    udp = struct.pack('>HHHH', 0xC000, ROCE_PORT, 8 + len(roce) + 4, 0)
    ip = bytearray(struct.pack('>BBHHHBBH4s4s', 0x45, 0, 20 + len(udp) + len(roce) + 4, 1,
                               0x4000, 64, 17, 0, src_ip, dst_ip))
    ip[10:12] = struct.pack('>H', ipv4_csum(bytes(ip)))
    m = bytearray(ip + udp + roce)
    m[1] = 0xFF                   # TOS
    m[8] = 0xFF                   # TTL
    m[10:12] = b'\xff\xff'        # IP checksum
    m[26:28] = b'\xff\xff'        # UDP checksum
    m[28 + 4] = 0xFF              # BTH FECN/BECN/reserved
    icrc = zlib.crc32(b'\xff' * 8 + bytes(m)) & 0xFFFFFFFF
    return dst_mac + src_mac + struct.pack('>H', ETH_P_IP) + bytes(ip) + udp + roce + \
        struct.pack('<I', icrc)


def parse(fr, my_ip):
    """(opcode, psn, payload length, syndrome) of a RoCEv2 frame to my_ip, else None."""
    if len(fr) < 14 + 20 + 8 + 12 or struct.unpack('>H', fr[12:14])[0] != ETH_P_IP:
        return None
    ip = fr[14:34]
    if ip[9] != 17 or ip[16:20] != my_ip:
        return None
    udp = fr[34:42]
    dport, ulen = struct.unpack('>H', udp[2:4])[0], struct.unpack('>H', udp[4:6])[0]
    if dport != ROCE_PORT:
        return None
    bth = fr[42:54]
    opcode, pad = bth[0], (bth[1] >> 4) & 3
    psn = struct.unpack('>I', bth[8:12])[0] & 0xFFFFFF
    ext = 4 if opcode in AETH_OPS else 0
    syn = fr[54] if ext else None
    return opcode, psn, ulen - 8 - 12 - ext - pad - 4, syn


def main():
    iface, srv = sys.argv[1], json.loads(sys.argv[2])
    my_ip = socket.inet_aton(sys.argv[3])
    my_qpn, psn = int(sys.argv[4], 0), int(sys.argv[5], 0)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    s.bind((iface, 0))
    my_mac = s.getsockname()[4]
    srv_mac = bytes.fromhex(srv["mac"].replace(":", ""))
    srv_ip = socket.inet_aton(srv["ip"])
    out = []
    for op in sys.argv[6].split(","):
        kind, n = op.split(":")
        n = int(n)
        reth = struct.pack('>QII', srv["va"], srv["rkey"], n)
        if kind == "read":
            fr = frame(my_mac, srv_mac, my_ip, srv_ip, OP_READ_REQ, srv["qpn"], psn, reth, b'')
            last = (OP_READ_LAST, OP_READ_ONLY)
        else:
            fr = frame(my_mac, srv_mac, my_ip, srv_ip, OP_WRITE_ONLY, srv["qpn"], psn, reth,
                       bytes(i & 0xFF for i in range(n)))
            last = (OP_ACK,)
        s.send(fr)
        got = []
        deadline = time.monotonic() + ANSWER_WAIT_S
        while time.monotonic() < deadline and not (got and got[-1][0] in last):
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                p = parse(s.recv(65536), my_ip)
            except socket.timeout:
                break
            if p is not None:
                got.append(p)
        out.append({"op": kind, "len": n, "answers": got})
        # a READ takes a PSN per response packet, a WRITE ONLY one
        psn += max(1, sum(1 for g in got if g[0] in (OP_READ_FIRST, OP_READ_MIDDLE,
                                                     OP_READ_LAST, OP_READ_ONLY))) \
            if kind == "read" else 1
    print(json.dumps({"mac": ":".join("%02x" % b for b in my_mac), "qpn": my_qpn, "ops": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
