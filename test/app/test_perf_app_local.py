#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnic-perf end to end, one process: every op over an embedded net_ring
pair (--json, --verify), latency mode, unsignaled, several requester
lcores, the READ walk (--trace), --pcap read back by tshark, exit status on
a link that loses everything.
Usage: test_perf_app_local.py SRNIC_PERF (perf_app_common.py: the shared part)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_app_common import *  # noqa: E402,F403 (check, run, PERF, EAL, PORT0, ...)

# 1. every op, embedded pair, --json --verify: the figures and keys
for op, sizes in (("read", "0,64,5000"), ("write", "1,4096,70000"), ("send", "64,9000"),
                  ("atomic", "8")):
    rc, out, err = run(["--op", op, "--sizes", sizes, "--iters", "3000", "--verify", "--json",
                        "--qps", "2", "--depth", "8", "--mtu", "1024"], f"perf_{op}")
    res = json_lines(out)
    want = len(sizes.split(","))
    check(f"{op}: exit 0", rc == 0, err[-500:])
    check(f"{op}: one JSON line per size", len(res) == want, out[-500:])
    for r in res:
        check(f"{op} {r.get('size')}: keys", RESULT_KEYS <= set(r) and LAT_KEYS <= set(r["lat_us"]),
              str(r))
        check(f"{op} {r.get('size')}: all messages, no error",
              r["msgs"] == 3000 and r["errors"] == 0 and r.get("verify_errors") == 0, str(r))
        check(f"{op} {r.get('size')}: bytes", r["bytes"] == r["msgs"] * (8 if op == "atomic" else r["size"]),
              str(r))
        check(f"{op} {r.get('size')}: BW peak (best 10 ms window) at least the average",
              r.get("gbps_peak", -1) >= r["gbps"] >= 0 and r.get("mops_peak", -1) >= r["mops"] > 0, str(r))
        check(f"{op} {r.get('size')}: percentiles ordered",
              r["lat_us"]["min"] <= r["lat_us"]["p50"] <= r["lat_us"]["p99"] <= r["lat_us"]["max"],
              str(r))
        b = r.get("busy_pct", {})
        check(f"{op} {r.get('size')}: engine busy shares of the run",
              all(0 < b.get(k, -1) <= 100 for k in ("req", "resp")), str(r))
    # EAL's runtime directory of the run's --file-prefix is gone with it
    rdir = "/var/run/dpdk" if os.geteuid() == 0 else \
        os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
    check(f"{op}: no EAL runtime dir left", not os.path.exists(os.path.join(rdir, f"perf_{op}_{os.getpid()}")),
          os.listdir(rdir) if os.path.isdir(rdir) else "")

# 1a. --atomic cas: CMP_AND_SWAP on the wire, each returning the count so far
# (data checked at depth 8 and unsignaled too), the JSON says which atomic
for extra in ((), ("--unsignaled", "4")):
    rc, out, err = run(["--op", "atomic", "--atomic", "cas", "--iters", "3000", "--verify", "--json",
                        "--qps", "2", "--depth", "8"] + list(extra), "perf_cas")
    r = json_lines(out)
    check(f"atomic cas {' '.join(extra)}: all messages, every original value right",
          rc == 0 and len(r) == 1 and r[0]["msgs"] == 3000 and r[0]["errors"] == 0 and
          r[0]["verify_errors"] == 0 and r[0].get("atomic") == "cas", out[-400:] + err[-300:])
rc, out, err = run(["--op", "atomic", "--atomic", "CMP_AND_SWAP", "--iters", "3", "--trace"],
                   "perf_cas_trace")
cas = [l for l in out.splitlines() if "RC_COMPARE_SWAP" in l]
check("atomic cas --trace: CMP_AND_SWAP requests, compare idx, swap idx + 1",
      rc == 0 and len(cas) == 3 and "swap_add=1 cmp=0" in cas[0] and "swap_add=3 cmp=2" in cas[2]
      and out.count("RC_ATOMIC_ACKNOWLEDGE") == 3, out[-600:])

# 1b. --mr-per-qp (perftest's --mr_per_qp): a buffer and MR per QP instead
# of one per side; data still checked on every completion
for op in ("read", "write", "send"):
    rc, out, err = run(["--op", op, "--size", "1000", "--qps", "4", "--depth", "8", "--iters",
                        "4000", "--verify", "--json", "--mr-per-qp"], f"perf_mrqp_{op}")
    r = json_lines(out)
    check(f"{op} --mr-per-qp: all messages, data verified",
          rc == 0 and len(r) == 1 and r[0]["msgs"] == 4000 and r[0]["verify_errors"] == 0,
          out[-300:] + err[-300:])

# 2. latency mode, unsignaled, several requester lcores, duration
rc, out, err = run(["--op", "read", "--size", "64", "--lat", "--iters", "2000", "--json"], "perf_lat")
r = json_lines(out)
check("lat: depth forced to 1", rc == 0 and r and r[0]["depth"] == 1, out + err)
rc, out, err = run(["--op", "write", "--size", "256", "--unsignaled", "8", "--depth", "16",
                    "--iters", "16000", "--verify", "--json"], "perf_unsig")
r = json_lines(out)
check("unsignaled 8: every WR counted", rc == 0 and r and r[0]["msgs"] == 16000, out + err)
rc, out, err = run(["--op", "read", "--size", "128", "--qps", "4", "--req-lcores", "2",
                    "--duration", "0.5", "--verify", "--json"], "perf_lcores", lcores="0,1")
r = json_lines(out)
check("duration + 2 requester lcores", rc == 0 and r and r[0]["msgs"] > 0 and
      0.4 < r[0]["seconds"] < 5, out + err)

# 2b. floors: measured in the same process, each ratio the figure over its floor
rc, out, err = run(["--op", "read", "--size", "64", "--qps", "2", "--depth", "8", "--iters", "3000",
                    "--floors", "--json"], "perf_floors")
r = json_lines(out)
check("floors: exit 0, one line", rc == 0 and len(r) == 1, out + err)
if r:
    r = r[0]
    check("floors: all three measured",
          all(r.get(k, 0) > 0 for k in ("floor_gbps", "floor_mpps", "floor_xc_mpps")), str(r))
    def half_ulp(x):
        """Half a unit in the last printed decimal of a JSON number."""
        t = repr(float(x))
        return 0.5 * 10 ** -(len(t.split(".")[1]) if "." in t and "e" not in t else 0)

    def ratio_ok(ratio, fig, flo):
        # the figure and the floor are printed rounded: the ratio of the
        # rounded values may differ from the printed ratio by their errors
        q = fig / flo
        tol = q * (half_ulp(fig) / fig + half_ulp(flo) / flo) + half_ulp(ratio) + 1e-9
        return abs(ratio - q) <= tol

    check("floors: ratios are figure / floor",
          all(r.get(f, 0) > 0 and r[fk] > 0 and ratio_ok(r.get(rk, -1), r[fk], r[f])
              for rk, fk, f in (("ratio_gbps", "gbps", "floor_gbps"),
                                ("ratio_mpps", "mops", "floor_mpps"),
                                ("ratio_xc_mpps", "mops", "floor_xc_mpps"))), str(r))

# 3. the READ walk: --trace prints each packet and the CQE
rc, out, err = run(["--op", "read", "--size", "8192", "--iters", "1", "--depth", "1",
                    "--trace", "--quiet"], "perf_trace")
lines = out.splitlines()
req = [l for l in lines if "RC_RDMA_READ_REQUEST" in l and "psn=2000" in l]
first = [l for l in lines if "READ_RESPONSE_FIRST" in l and "psn=2000" in l and "syn=0x1f msn=1" in l]
last = [l for l in lines if "READ_RESPONSE_LAST" in l and "psn=2001" in l and "syn=0x1f msn=1" in l]
cqe = [l for l in lines if "CQE" in l and "byte_len 8192" in l]
acks = [l for l in lines if "RC_ACKNOWLEDGE" in l]
check("trace: READ request on PSN 2000 with RETH len 8192", len(req) == 1 and "len=8192" in req[0], out)
check("trace: FIRST on 2000 and LAST on 2001 with AETH", len(first) == 1 and len(last) == 1, out)
check("trace: one CQE, no ACK packet", len(cqe) == 1 and not acks, out)

# 4. --pcap, read back by tshark
tshark = shutil.which("tshark")
with tempfile.TemporaryDirectory() as d:
    pcap = os.path.join(d, "walk.pcap")
    rc, out, err = run(["--op", "read", "--size", "8192", "--iters", "3", "--depth", "1",
                        "--pcap", pcap, "--quiet"], "perf_pcap")
    check("pcap: written", rc == 0 and os.path.getsize(pcap) > 24, err)
    if tshark:
        t = subprocess.run([tshark, "-r", pcap, "-d", "udp.port==4791,infiniband", "-T", "fields",
                            "-e", "infiniband.bth.opcode", "-e", "infiniband.bth.psn"],
                           capture_output=True, text=True)
        rows = [tuple(map(int, l.split("\t"))) for l in t.stdout.split("\n") if l.strip()]
        check("pcap: tshark reads the walk (READ req + FIRST + LAST, x3)",
              rows == [(12, 2000), (13, 2000), (15, 2001), (12, 2002), (13, 2002), (15, 2003),
                       (12, 2004), (13, 2004), (15, 2005)], str(rows) + t.stderr)
    else:
        print("note: tshark not installed, pcap not decoded")

# 5. exit status: a link that loses everything fails the WRs -> non-zero
# (the default retry_count 7 is 7 retries, as on hardware)
rc, out, err = run(["--op", "write", "--size", "64", "--iters", "10", "--drop", "1", "--quiet"],
                   "perf_fail")
check("all packets dropped: exit status non-zero", rc != 0, out + err)
check("the engine's log line names the QP going to ERR (log type srnic.engine)",
      "to ERR" in err, err[-400:])
rc, out, err = run(["--op", "write", "--size", "64", "--iters", "10", "--drop", "1", "--quiet"],
                   "perf_fail_quiet")
# run() sets --log-level=lib.eal:error; one more, for the engine's type only
cmd_err = err
p = subprocess.run([PERF, "-l", "0,1", "--file-prefix", f"perf_logtype_{os.getpid()}"] + EAL +
                   ["--log-level=srnic.engine:error", "--", "--op", "write", "--size", "64",
                    "--iters", "10", "--drop", "1", "--quiet"],
                   capture_output=True, text=True, timeout=180)
check("--log-level=srnic.engine:error silences the engine's NOTICE lines (one type per layer)",
      p.returncode != 0 and "to ERR" not in p.stderr and "to ERR" in cmd_err, p.stderr[-400:])
rc, out, err = run(["--op", "read", "--size", "4096", "--iters", "4000", "--drop", "0.01",
                    "--dup", "0.005", "--reorder", "0.005", "--corrupt", "0.001", "--verify",
                    "--json"], "perf_lossy")
r = json_lines(out)
check("lossy link: every READ completes with the right data", rc == 0 and r and
      r[0]["msgs"] == 4000 and r[0]["verify_errors"] == 0, out + err)
# -u 15 (134 ms, perftest's -u): 7 retries ride out 1 s of a starved lcore
# (the default 16.8 ms with --drop once ended RETRY_EXC_ERR under heavy load)
rc, out, err = run(["--op", "read", "--size", "4096", "--qps", "4", "--duration", "2.2",
                    "--drop", "0.01", "-u", "15"], "perf_live")
check("live stats: per device and per QP lines", rc == 0 and "perfa" in out and "RX" in out and
      "QPs with retransmits" in out, out[-800:] + err[-300:])
row = [l.split() for l in out.splitlines() if l.split()[:1] == ["4096"]]
check("table: perftest's columns, BW peak >= BW avg over a 2 s run",
      "BW peak" in out and "BW avg" in out and len(row) == 1 and
      float(row[0][2]) >= float(row[0][3]) > 0, out[:1200])
# --read-inline: READ response packets of up to N bytes copied (the device's
# read_inline_max), the rest zero-copy; the data checked, the counters exact
rc, out, err = run(["--op", "read", "--sizes", "64,300,4100", "--mtu", "1024", "--iters", "1000",
                    "--read-inline", "128", "--verify", "--quiet"], "perf_rinl")
cnt = {l.split()[0]: l.split() for l in out.splitlines() if "|" in l and len(l.split()) == 4}
check("--read-inline 128: verified, exit 0", rc == 0 and "copied, not zero-copy" in out,
      out[-800:] + err[-300:])
# 64 B: one packet, copied; 300 B: one, attached; 4100 B at PMTU 1024: four
# full packets attached, the 4-byte LAST copied
def resp_cnt(name):
    return int(cnt.get(name, [0, 0, 0, "0"])[3])


# (exact unless a stalled host made a READ go again: then at least, and
# every response packet one or the other)
retx = resp_cnt("resp_read_pkts") - 7000
check("--read-inline 128: responder copied 2000 packets, attached 5000",
      resp_cnt("resp_read_inline") + resp_cnt("resp_zc_segs") == resp_cnt("resp_read_pkts") and
      (resp_cnt("resp_read_inline"), resp_cnt("resp_zc_segs")) == (2000, 5000) if retx == 0 else
      resp_cnt("resp_read_inline") >= 2000 and resp_cnt("resp_zc_segs") >= 5000, str(cnt))
rc, out, err = run(["--op", "read", "--size", "64", "--iters", "2000", "--read-inline", "64",
                    "--verify", "--json"], "perf_rinl_json")
r = json_lines(out)
check("--read-inline in the JSON line", rc == 0 and r and r[0].get("read_inline") == 64 and
      r[0]["verify_errors"] == 0, out[-500:] + err[-300:])
rc, out, err = run(["--op", "read", "--sizes", "300,5000", "--mtu", "256", "--iters", "2000",
                    "--read-inline", "256", "--drop", "0.01", "--dup", "0.005", "--reorder", "0.005",
                    "--corrupt", "0.001", "--verify", "--json"], "perf_rinl_lossy")
r = json_lines(out)
check("--read-inline on a lossy link: every READ completes with the right data (resent answers "
      "copied again)", rc == 0 and len(r) == 2 and all(x["msgs"] == 2000 and x["verify_errors"] == 0
                                                      for x in r), out[-500:] + err[-300:])
rc, out, err = run(["--read-inline", "257"], "perf_rinl_bad")
check("--read-inline over SRNIC_MAX_READ_INLINE: refused, naming the range",
      rc != 0 and "--read-inline 257: bytes from 0 to 256" in err, err[-300:])
for bad in (["--op", "write", "--read-inline", "64"], ["--client", "127.0.0.1", "--read-inline", "64"]):
    rc, out, err = run(bad, "perf_rinl_side")
    check(f"--read-inline with {bad[:2]}: refused (only the READ responder's device uses it)",
          rc != 0 and "--read-inline goes with" in err, err[-300:])
rc, out, err = run(["--help"], "perf_help")
check("--help documents the options", rc == 0 and "--op" in out and "--peer-qpn" in out, err)
rc, out, err = run(["--op", "nope"], "perf_bad")
check("bad option: non-zero", rc != 0)
rc, out, err = run(["--op", "read", "--atomic", "cas"], "perf_bad_atomic")
check("--atomic without --op atomic: refused", rc != 0 and "--op atomic" in err, err[-300:])
rc, out, err = run(["--client", "127.0.0.1", "--perftest", "--lat", "--op", "write", "--iters", "1"],
                   "perf_bad_pp")
check("a ping-pong of one turn: refused", rc != 0 and "--iters 2" in err, err[-300:])
rc, out, err = run(["--qps", "512", "--depth", "1024", "--iters", "10"], "perf_cq")
check("more completions per lcore than a CQ holds: refused up front",
      rc != 0 and "exceed a CQ" in err, out[-300:] + err[-300:])

done()
