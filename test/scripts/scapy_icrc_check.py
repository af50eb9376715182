#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check the ICRC of every RoCEv2 packet in pcap files against scapy.

scapy.contrib.roce computes the ICRC on its own (BTH.compute_icrc: 8 bytes of
0xFF, the IPv4 header with TOS, TTL and checksum set to ones, UDP with the
checksum set to ones, BTH with FECN/BECN/reserved set to ones, the rest of
the packet), independently of srnic. For each IPv4 packet with UDP
destination port 4791 it recomputes the ICRC and compares it with the four
bytes stored at the end of the UDP datagram.

Run with Debian's /usr/bin/python3 (python3-scapy). Exit status:
  0  every packet agrees
  1  at least one packet disagrees
  2  no RoCEv2 packet was read, the --expect count is wrong, or a RoCEv2
     packet scapy cannot check (IPv6: scapy has no IPv6 ICRC) was found
  3  usage error, unreadable file, or scapy missing
"""

import argparse
import glob
import os
import sys

ROCE_PORT = 4791


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pcaps", nargs="*", help="pcap files")
    ap.add_argument("--dir", action="append", default=[],
                    help="also check every *.pcap in this directory")
    ap.add_argument("--expect", type=int, default=None,
                    help="exact number of RoCEv2 packets the files must hold")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()

    try:
        import logging
        logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
        from scapy.all import PcapReader, IP, IPv6, UDP, raw
        from scapy.contrib.roce import BTH
    except ImportError as e:
        print("scapy_icrc_check: cannot import scapy (%s); use /usr/bin/python3" % e,
              file=sys.stderr)
        return 3

    files = list(args.pcaps)
    for d in args.dir:
        files += sorted(glob.glob(os.path.join(d, "*.pcap")))
    if not files:
        print("scapy_icrc_check: no pcap file given", file=sys.stderr)
        return 3

    total = mismatches = unchecked = 0
    for fn in files:
        n = bad = 0
        try:
            reader = PcapReader(fn)
        except (OSError, Exception) as e:  # scapy raises Scapy_Exception on bad magic
            print("scapy_icrc_check: %s: %s" % (fn, e), file=sys.stderr)
            return 3
        for idx, pkt in enumerate(reader, 1):
            if UDP not in pkt or pkt[UDP].dport != ROCE_PORT:
                continue
            if IPv6 in pkt and IP not in pkt:
                print("%s frame %d: IPv6 RoCEv2, scapy cannot compute its ICRC" % (fn, idx))
                unchecked += 1
                continue
            if BTH not in pkt:
                print("%s frame %d: UDP 4791 without a BTH layer" % (fn, idx))
                mismatches += 1
                bad += 1
                continue
            n += 1
            ulen = pkt[UDP].len
            udp = raw(pkt[UDP])
            if ulen < 8 + 12 + 4 or ulen > len(udp):
                print("%s frame %d: UDP length %d does not fit" % (fn, idx, ulen))
                mismatches += 1
                bad += 1
                continue
            stored = udp[ulen - 4:ulen]
            want = pkt[BTH].compute_icrc(None)
            if stored != want:
                bad += 1
                print("%s frame %d: opcode 0x%02x psn %d: stored ICRC %s, scapy %s"
                      % (fn, idx, pkt[BTH].opcode, pkt[BTH].psn, stored.hex(), want.hex()))
            elif args.verbose:
                print("%s frame %d: opcode 0x%02x len %d ICRC %s ok"
                      % (fn, idx, pkt[BTH].opcode, len(pkt), want.hex()))
        reader.close()
        print("%s: %d RoCEv2 packets, %d ICRC mismatches" % (fn, n, bad))
        total += n
        mismatches += bad

    print("scapy_icrc_check: %d packets checked, %d mismatches" % (total, mismatches))
    if mismatches:
        return 1
    if total == 0:
        print("scapy_icrc_check: no RoCEv2 packet read", file=sys.stderr)
        return 2
    if unchecked:
        return 2
    if args.expect is not None and total != args.expect:
        print("scapy_icrc_check: %d packets, expected %d" % (total, args.expect),
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
