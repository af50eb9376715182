#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnic-perf end to end: each check runs the real binary over real DPDK
ports (net_ring pair in one process, net_memif between two) and reads what
it prints. Prints 'N passed, N failed' and exits non-zero on any failure."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def _port_block(n=64):
    """A base whose next n TCP ports on 127.0.0.1 are free now, drawn at
    random below the ephemeral range: two runs of this test at once (two
    suites on one host) do not meet on fixed ports (EADDRINUSE)."""
    import random
    import socket as _sock
    for _ in range(200):
        base = random.randrange(10000, 32000 - n)
        for p in range(base, base + n):
            s = _sock.socket()
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                break
            finally:
                s.close()
        else:
            return base
    sys.exit("test_perf_app: no block of %d free TCP ports on 127.0.0.1" % n)


PORT0 = _port_block()

PERF = sys.argv[1]
EAL = ["--no-pci", "--no-huge", "-m", "512", "--log-level=lib.eal:error"]
RESULT_KEYS = {"op", "size", "qps", "depth", "mtu", "msgs", "bytes", "seconds", "gbps",
               "mops", "lat_us", "errors"}
LAT_KEYS = {"min", "p50", "p99", "p999", "max"}
passed, failed = 0, 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


# The ACK timeout of a run that does not choose one (-u): the engine gives up
# after 8 timeouts without progress, and on a loaded 2-core host under ASan
# a starved lcore can miss 8 x 67 ms (srnic-perf's clean-link default,
# perftest's 14) or 8 x 16.8 ms (its lossy-link 12). These tests check what
# srnic-perf prints and does, not how fast a link recovers: 2^18 x 4.096 us
# = 1.07 s on a clean link, 2^15 = 134 ms with injected faults (a tail drop
# is recovered by a timeout, so the runs stay short).
CLEAN_U, LOSSY_U = "18", "15"
NO_U = {"-u", "--qp-timeout", "--help", "-V", "--version", "--server", "--persist"}
LOSSY = {"--drop", "--dup", "--reorder", "--corrupt", "--delay"}


def with_timeout(args):
    if NO_U & set(args) or not args:
        return args
    return args + ["-u", LOSSY_U if LOSSY & set(args) else CLEAN_U]


def ack_timeout(args):
    """-u for a two-process side whose arguments choose none."""
    return [] if {"-u", "--qp-timeout"} & set(args) else ["-u", CLEAN_U]


def run(args, prefix, lcores="0,1", timeout=180, vdev=None):
    cmd = [PERF, "-l", lcores, "--file-prefix", f"{prefix}_{os.getpid()}"] + EAL + \
          ([vdev] if vdev else []) + ["--"] + with_timeout(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def json_lines(out):
    """The result lines (each has "op"); not the live or counters lines."""
    return [j for j in (json.loads(l) for l in out.splitlines() if l.startswith("{"))
            if "live" not in j and "counters" not in j]


def json_kind(out, key):
    """The JSON lines with key (e.g. "live", "counters")."""
    return [j for j in (json.loads(l) for l in out.splitlines() if l.startswith("{")) if key in j]


# How long a server may take to come up (ASan, --no-huge, a loaded host).
SERVER_UP_S = 120


def tcp_listening(port):
    """Is something listening on TCP port (IPv4 or IPv6)? From /proc/net."""
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(f) as fh:
                next(fh)
                for line in fh:
                    w = line.split()
                    if w[3] == "0A" and int(w[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def wait_listening(proc, port):
    """Wait until proc listens on port (True), or exits or SERVER_UP_S pass (False)."""
    deadline = time.monotonic() + SERVER_UP_S
    while proc.poll() is None and time.monotonic() < deadline:
        if tcp_listening(port):
            return True
        time.sleep(0.05)  # poll interval, not a wait for the outcome
    return False


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
rc, out, err = run(["--qps", "128", "--depth", "1024", "--iters", "10"], "perf_cq")
check("more completions per lcore than a CQ holds: refused up front",
      rc != 0 and "exceed a CQ" in err, out[-300:] + err[-300:])


# 6. two processes over net_memif: server + client, TCP exchange on loopback
def two_process(op, sizes, port, extra=(), srv_extra=()):
    sock = f"/tmp/srnic-perf-test-{os.getpid()}-{port}.sock"
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass
    srv = subprocess.Popen([PERF, "-l", "1", "--file-prefix", f"ps_{os.getpid()}_{port}"] + EAL +
                           [f"--vdev=net_memif0,role=server,socket={sock},bsize=10240", "--",
                            "--server", "--tcp-port", str(port)] + list(extra) + list(srv_extra) +
                           ack_timeout(list(extra) + list(srv_extra)),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(srv, port)
        cl = subprocess.run([PERF, "-l", "0", "--file-prefix", f"pc_{os.getpid()}_{port}"] + EAL +
                            [f"--vdev=net_memif0,role=client,socket={sock},bsize=10240", "--",
                             "--client", "127.0.0.1", "--tcp-port", str(port), "--op", op,
                             "--sizes", sizes, "--iters", "5000", "--json"] +
                            (list(extra) if extra else ["--verify"]) + ack_timeout(list(extra)),
                            capture_output=True, text=True, timeout=180)
        sout, serr = srv.communicate(timeout=30)
    finally:
        if srv.poll() is None:
            srv.kill()
    return cl, srv.returncode, sout + serr


for op, sizes, port in (("read", "64,8192", PORT0 + 10), ("send", "100,6000", PORT0 + 11),
                        ("write", "4096", PORT0 + 12)):
    cl, src, sout = two_process(op, sizes, port)
    r = json_lines(cl.stdout)
    check(f"memif {op}: client exit 0, server exit 0", cl.returncode == 0 and src == 0,
          cl.stdout[-400:] + cl.stderr[-400:] + sout[-400:])
    check(f"memif {op}: all sizes, all messages, data verified",
          len(r) == len(sizes.split(",")) and all(x["msgs"] == 5000 and x["verify_errors"] == 0
                                                  for x in r), cl.stdout[-600:])

# 6b. perftest's own exchange (--perftest) on both ends, over memif
for op, port in (("read", PORT0 + 13), ("write", PORT0 + 14), ("send", PORT0 + 21)):
    cl, src, sout = two_process(op, "8192", port, ("--perftest", "--size", "8192", "--op", op))
    r = json_lines(cl.stdout)
    check(f"perftest exchange {op}: both exit 0, every message",
          cl.returncode == 0 and src == 0 and len(r) == 1 and r[0]["msgs"] == 5000,
          cl.stdout[-400:] + cl.stderr[-400:] + sout[-400:])
    # ib_send_bw trades no report: the server only learns the client is done
    check(f"perftest exchange {op}: the server prints the client's end",
          ("perftest client done" if op == "send" else
           "perftest client reports 5000 x 8192 bytes") in sout, sout[-400:])
    if op != "send":
        # perftest's MB/s (2^20 bytes) and beside it srnic-perf's Gb/s
        m = re.search(r"([\d.]+) MB/s \(([\d.]+) Gb/s\)", sout)
        check(f"perftest exchange {op}: the server's MB/s and the same in Gb/s beside it",
              m is not None and abs(float(m.group(1)) * 2**20 * 8 / 1e9 - float(m.group(2))) <=
              0.001 + float(m.group(2)) * 0.001, sout[-400:])

# 6b'. ib_write_lat / ib_send_lat's ping-pong (--perftest --lat, write or send):
# both ends send, the same turns on each (--iters as perftest's -n)
def first_roce_src(pcap):
    """IPv4 source of a pcap's first RoCEv2 frame (tshark), or None."""
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "udp.dstport==4791", "-T", "fields",
                          "-e", "ip.src"], capture_output=True, text=True, timeout=60).stdout
    return out.split()[0] if out.split() else None


for op, port in (("write", PORT0 + 22), ("send", PORT0 + 23)):
    pcap = os.path.join(tempfile.gettempdir(), f"srnic-pp-{os.getpid()}-{op}.pcap")
    cl, src, sout = two_process(op, "64", port, ("--perftest", "--lat", "--size", "64", "--op", op,
                                                 "--iters", "2000"), ("--pcap", pcap))
    r = json_lines(cl.stdout)
    # perftest's roles: ib_write_lat's server opens, ib_send_lat's client
    opener = first_roce_src(pcap) if os.path.exists(pcap) else None
    check(f"perftest ping-pong {op}: the {'server' if op == 'write' else 'client'} sends first",
          opener == ("127.0.1.1" if op == "write" else "127.0.1.2"), str(opener))
    if os.path.exists(pcap):
        os.unlink(pcap)
    check(f"perftest ping-pong {op}: both exit 0, 2000 turns, a latency",
          cl.returncode == 0 and src == 0 and len(r) == 1 and r[0]["msgs"] == 2000 and
          r[0]["errors"] == 0 and r[0]["verify_errors"] == 0 and 0 < r[0]["lat_us"]["p50"],
          cl.stdout[-400:] + cl.stderr[-400:] + sout[-400:])
    check(f"perftest ping-pong {op}: the server measured its 2000 turns too",
          re.search(r"^ +64 +2000 ", sout, re.M) is not None, sout[-600:])


# 6c. an unmodified ib_read_bw / ib_read_lat / ib_atomic_bw / ib_atomic_lat
# client's bytes (rdma_rxe, golden captures) replayed against srnic-perf --server --perftest: every reply in
# perftest's format, the report (bandwidth) or the end (latency) understood
def golden_client_msgs(pcap):
    out = subprocess.run(["tshark", "-r", pcap, "-Y", "tcp.len>0 && ip.src==10.77.0.2",
                          "-T", "fields", "-e", "tcp.payload"],
                         capture_output=True, text=True, timeout=60).stdout
    return [bytes.fromhex(x.replace(":", "")) for x in out.split()]


def recv_n(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            break
        b += c
    return b


GOLDEN = os.environ.get("SRNIC_GOLDEN_DIR", "")


def pt_server(port, args):
    """srnic-perf --server --perftest on net_null (no RoCE traffic needed)
    and a TCP connection to it: (process, socket or None)."""
    import socket
    srv = subprocess.Popen([PERF, "-l", "0", "--file-prefix", f"pt_{os.getpid()}_{port}"] + EAL +
                           ["--vdev=net_null0", "--", "--server", "--perftest", "--tcp-port",
                            str(port)] + args,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if wait_listening(srv, port):
        try:
            return srv, socket.create_connection(("127.0.0.1", port), timeout=10)
        except OSError:
            pass
    return srv, None


def golden_replay(name, extra, nb_msgs, done_line, port):
    """Replay the perftest client's bytes of a golden capture against
    srnic-perf --server --perftest (on net_null: no RoCE traffic needed)."""
    pcap = os.path.join(GOLDEN, name)
    if not (shutil.which("tshark") and os.path.exists(pcap)):
        check(f"perftest golden {name}: capture and tshark present", False, pcap)
        return
    msgs = golden_client_msgs(pcap)
    srv, s = pt_server(port, ["--size", "8192", "--ip", "10.77.0.10"] + extra)
    replies = []
    try:
        for m in msgs[:-1]:         # all but the final "done"
            s.sendall(m)
            replies.append(recv_n(s, len(m)))
        s.sendall(msgs[-1])
        replies.append(recv_n(s, 5))
        s.close()
        sout, serr = srv.communicate(timeout=30)
    except Exception as e:  # reported by the checks below
        sout, serr = "", str(e)
        srv.kill()
    check(f"perftest golden {name}: {nb_msgs} client messages (version .. done)",
          len(msgs) == nb_msgs, str([len(m) for m in msgs]))
    ok = len(replies) == nb_msgs
    check(f"perftest golden {name}: version, page size, cache line, MTU answered",
          ok and replies[0].rstrip(b"\0") == b"6.06" and len(replies[0]) == 16 and
          int.from_bytes(replies[1], "big") == 4096 and int.from_bytes(replies[2], "big") == 64
          and replies[3][:1].isdigit() and replies[3][1:] == b"\0", str(replies[:4]))
    dests = [r for r in replies if len(r) == 108]
    good = len(dests) == 5
    for d in dests:
        f = d.rstrip(b"\0").decode(errors="replace").split(":")
        good = good and len(f) == 24 and f[-1] == "" and int(f[1], 16) > 0 and \
            int(f[3], 16) == 7000 and [int(x, 16) for x in f[6:22]] == \
            [0] * 10 + [0xff, 0xff, 10, 77, 0, 10]
    check(f"perftest golden {name}: every dest in perftest's format (OUT_READS, PSN, GID)",
          good, str(dests[:1]))
    check(f"perftest golden {name}: done, server exit 0, the client's end read",
          ok and replies[-1] == b"done\0" and srv.returncode == 0 and done_line in sout,
          sout[-300:] + serr[-300:])


golden_replay("read_bw_8k_mtu1024.pcap", [], 15,
              "perftest client reports 5 x 8192 bytes, 7.05 MB/s", PORT0 + 15)
golden_replay("read_8k_mtu1024.pcap", ["--lat"], 10, "perftest client done", PORT0 + 16)
golden_replay("atomic_fadd_bw.pcap", ["--op", "atomic"], 15, "perftest client reports 5 x 8 bytes",
              PORT0 + 17)
golden_replay("atomic_cas_lat.pcap", ["--op", "atomic", "--lat"], 10, "perftest client done", PORT0 + 18)


# 6d. a peer that is not perftest: garbage dests and an absurd cycle buffer
# are refused (non-zero exit, a message), never trusted
def bad_peer(port, msgs):
    srv, s = pt_server(port, ["--size", "64"])
    try:
        for m in msgs:
            s.sendall(m)
            recv_n(s, len(m))
        sout, serr = srv.communicate(timeout=30)
        s.close()
    except Exception as e:  # reported by the check below
        sout, serr = "", str(e)
        srv.kill()
    return srv.returncode, serr


hello = [b"6.06".ljust(16, b"\0")]
rc, err = bad_peer(PORT0 + 19, hello + [(1 << 30).to_bytes(4, "big"), (64).to_bytes(4, "big")])
check("perftest peer: a 1 GiB cycle buffer refused", rc != 0 and "cycle buffer" in err, err[-300:])
rc, err = bad_peer(PORT0 + 20, hello + [(4096).to_bytes(4, "big"), (64).to_bytes(4, "big"), b"3\0",
                                   b"x" * 107 + b"\0"])
check("perftest peer: a garbage dest refused", rc != 0 and "bad perftest dest" in err, err[-300:])

# 7. a server whose peer is on the command line prints its parameters as JSON
rc, out, err = run(["--server", "--peer-qpn", "0x25", "--peer-psn", "100", "--peer-ip",
                    "127.0.1.9", "--peer-mac", "02:00:00:00:00:09", "--duration", "0.3",
                    "--port-id", "0"], "perf_peer", lcores="0")
# no port given to the EAL: it must say so and fail cleanly
check("peer-on-cmdline without a port: clean failure", rc != 0 and "no port" in err, out + err)
with tempfile.TemporaryDirectory() as d:
    sock = os.path.join(d, "m.sock")
    p = subprocess.run([PERF, "-l", "0", "--file-prefix", f"pp_{os.getpid()}"] + EAL +
                       [f"--vdev=net_memif0,role=server,socket={sock}", "--", "--server",
                        "--peer-qpn", "0x25", "--peer-psn", "100", "--peer-ip", "127.0.1.9",
                        "--peer-mac", "02:00:00:00:00:09", "--duration", "0.3"],
                       capture_output=True, text=True, timeout=60)
    j = json_lines(p.stdout)
    check("peer-on-cmdline: one JSON line with qpn, psn, rkey, va, gid",
          p.returncode == 0 and len(j) == 1 and {"qpn", "psn", "rkey", "va", "gid"} <= set(j[0])
          and j[0]["gid"].startswith("00000000000000000000ffff"), p.stdout + p.stderr)

# 8. counters through DPDK telemetry while a run is going. Waits for the
# conditions themselves (both devices listed, the run counted), bounded,
# never for a time: under ASan on a loaded host the second device appeared
# 4.3 s after the socket. The run is long and stopped once they hold.
import socket
TEL_WAIT_S = 120
prefix = f"perf_tel_{os.getpid()}"
p = subprocess.Popen([PERF, "-l", "0,1", "--file-prefix", prefix] + EAL +
                     ["--", "--op", "read", "--size", "64", "--duration", str(TEL_WAIT_S), "--quiet",
                      "--json"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
stats, devs = None, None
path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"


def ask(cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(path)
        s.recv(1024)  # greeting
        s.send(cmd.encode())
        return json.loads(s.recv(65536).decode())
    finally:
        s.close()


def tel_ready():
    global devs, stats
    try:
        devs = ask("/srnic/devs")
        if not set(devs.get("/srnic/devs", [])) >= {"perfa", "perfb"}:
            return False
        stats = ask("/srnic/stats,perfa")
        return stats["/srnic/stats"].get("req_pkts", 0) > 0
    except (OSError, ValueError, KeyError, TypeError):
        return False


try:
    deadline = time.monotonic() + TEL_WAIT_S
    while p.poll() is None and time.monotonic() < deadline and not tel_ready():
        time.sleep(0.05)  # poll interval, not a wait for the outcome
finally:
    p.kill()
    p.communicate(timeout=60)
    shutil.rmtree(f"/var/run/dpdk/{prefix}", ignore_errors=True)
check("telemetry: /srnic/devs lists both devices",
      devs is not None and set(devs.get("/srnic/devs", [])) >= {"perfa", "perfb"}, str(devs))
check("telemetry: /srnic/stats counts the run",
      stats is not None and stats["/srnic/stats"].get("req_pkts", 0) > 0 and
      "rx_icrc_err" in stats["/srnic/stats"], str(stats)[:300])

# 9. stopping and failing like testpmd: the first SIGINT/SIGTERM ends the run
# cleanly (partial row, counters, exit 0), in one process and as a
# two-process client; a server waiting for a client stops too; a second
# server on the port, and a client with no server, say what is wrong.
import signal as _signal


def popen_perf(args, prefix, lcores="0,1", vdev=None):
    cmd = [PERF, "-l", lcores, "--file-prefix", f"{prefix}_{os.getpid()}"] + EAL + \
          ([vdev] if vdev else []) + ["--"] + args
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def read_until(proc, pattern, lines):
    """Read proc's output into lines until a line matches (True) or it ends."""
    for line in proc.stdout:
        lines.append(line)
        if re.search(pattern, line):
            return True
    return False


def finish(proc, lines, timeout=120):
    try:
        out, _ = proc.communicate(timeout=timeout)
        lines.append(out)
        return proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None


LIVE = r"^  \.\.\. "
for sig in (_signal.SIGINT, _signal.SIGTERM):
    p = popen_perf(["--op", "write", "--size", "64", "--duration", "600"], f"perf_sig{int(sig)}")
    lines = []
    started = read_until(p, LIVE, lines)
    p.send_signal(sig)
    rc = finish(p, lines)
    out = "".join(lines)
    check(f"one process, {sig.name} mid-run: exit 0, the partial row, the counters",
          started and rc == 0 and re.search(r"^\s+64\s+\d+\s", out, re.M) and
          "engine counters" in out and f"stopped by signal {int(sig)}" in out, out[-800:])

sock = f"/tmp/srnic-perf-test-{os.getpid()}-sig.sock"
port = PORT0 + 30
srv = popen_perf(["--server", "--tcp-port", str(port)], "perf_sig_srv", lcores="1",
                 vdev=f"--vdev=net_memif0,role=server,socket={sock},bsize=10240")
up = wait_listening(srv, port)
cl = popen_perf(["--client", "127.0.0.1", "--tcp-port", str(port), "--op", "read", "--size", "64",
                 "--duration", "600"], "perf_sig_cl", lcores="0",
                vdev=f"--vdev=net_memif0,role=client,socket={sock},bsize=10240")
lines = []
started = read_until(cl, LIVE, lines)
cl.send_signal(_signal.SIGINT)
crc = finish(cl, lines)
srv_lines = []
src = finish(srv, srv_lines)
out = "".join(lines)
check("two-process client, SIGINT mid-run: both exit 0, the client's partial row and counters",
      up and started and crc == 0 and src == 0 and re.search(r"^\s+64\s+\d+\s", out, re.M) and
      "engine counters" in out, out[-800:] + "".join(srv_lines)[-400:])

# 9b. the server's first SIGINT mid-run ends the run as testpmd's would: it
# says it was stopped by a signal, with what it saw of the run, and tells
# the client (STOP), which ends its run at once with its partial row and
# exits 3 (PERF_EXIT_SERVER_STOPPED); a second SIGINT exits at once, 130.
srv = popen_perf(["--server", "--tcp-port", str(port + 3)], "perf_ssig_srv", lcores="1",
                 vdev=f"--vdev=net_memif0,role=server,socket={sock}.s,bsize=10240")
up = wait_listening(srv, port + 3)
cl = popen_perf(["--client", "127.0.0.1", "--tcp-port", str(port + 3), "--op", "write", "--size",
                 "64", "--duration", "600"], "perf_ssig_cl", lcores="0",
                vdev=f"--vdev=net_memif0,role=client,socket={sock}.s,bsize=10240")
lines = []
started = read_until(cl, LIVE, lines)
srv.send_signal(_signal.SIGINT)
srv_lines = []
src = finish(srv, srv_lines)
crc = finish(cl, lines)
out, sout = "".join(lines), "".join(srv_lines)
check("two processes, the server's SIGINT mid-run: the server says so with its partial figures "
      "and counters, exit 0",
      up and started and src == 0 and re.search(r"stopped by signal 2 [\d.]+ s into its run of "
                                                 r"64-byte write: partial, this side received "
                                                 r"[1-9]\d* packets", sout) is not None and
      "telling the client (STOP)" in sout and "engine counters" in sout, sout[-800:])
check("two processes, the server's SIGINT mid-run: the client ends its run at once, its partial "
      "row, 'the server stopped the run', its counters, exit 3",
      started and crc == 3 and re.search(r"^\s+64\s+[1-9]\d*\s", out, re.M) is not None and
      "the server stopped the run (it was stopped by a signal)" in out and
      "engine counters" in out and "no completion" not in out, out[-800:])


def fake_client(port):
    """srnic-perf's exchange spoken by hand (one READ QP, nothing on the wire)
    up to the first RUN's OK: the server is mid-run. (socket, its reader,
    the lines read)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=SERVER_UP_S)
    f = s.makefile("r")
    got = []
    s.sendall(b"SRNIC-PERF 1\nHELLO 0 1 16 5 64 1 0\n")
    for line in f:
        got.append(line)
        if line == "END\n":
            break
    s.sendall(b"QP 17 2000 0 0 00000000000000000000ffff7f000102 02:00:00:00:00:02\nEND\n")
    got.append(f.readline())
    s.sendall(b"RUN 64\n")
    got.append(f.readline())
    return s, f, got


srv = popen_perf(["--server", "--tcp-port", str(port + 4)], "perf_ssig2_srv", lcores="1",
                 vdev=f"--vdev=net_memif0,role=server,socket={sock}.d")
up = wait_listening(srv, port + 4)
stop, got = "", []
try:
    fs, ff, got = fake_client(port + 4)
    srv.send_signal(_signal.SIGINT)
    stop = ff.readline()  # the first signal handled: the client told
    srv.send_signal(_signal.SIGINT)
except OSError as e:
    got.append(str(e))
srv_lines = []
src = finish(srv, srv_lines)
check("a server mid-run, SIGINT: STOP on the control connection; a second SIGINT: exit 130 at "
      "once, not after waiting for the client's BYE",
      up and got[-2:] == ["READY\n", "OK\n"] and stop == "STOP\n" and src == 130 and
      "second signal: exiting now" in "".join(srv_lines),
      f"{got} {stop!r} {src} " + "".join(srv_lines)[-400:])

# 9c. a client whose TCP peer accepts the connection and never speaks: a
# line saying what it waits for, then after PERF_HANDSHAKE_WAIT_S (20 s) a
# clear error and exit 1, not a wait without end
silent = socket.socket()
silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
silent.bind(("127.0.0.1", port + 5))
silent.listen(1)  # the kernel completes the connection: accepted, nothing said
try:
    rc, out, err = run(["--client", "127.0.0.1", "--tcp-port", str(port + 5)], "perf_silent",
                       lcores="0", vdev="--vdev=net_null0", timeout=120)
except subprocess.TimeoutExpired as e:
    rc, out, err = None, str(e.stdout), str(e.stderr)
silent.close()
check("a client whose server accepts and says nothing: says what it waits for, then an error "
      "naming the wait, exit 1",
      rc == 1 and f"waiting for the server's reply on 127.0.0.1:{port + 5}" in out and
      f"no reply from the server on 127.0.0.1:{port + 5} in 20 s" in err, out[-300:] + err[-400:])

# 9d. a memif client whose socket is not there: its port does not start
# (net_memif returns a bare -1): srnic names the port, its driver and the
# call, and the errno the app prints is a true one (EIO), not -1 read as
# EPERM ("Operation not permitted")
tcp = socket.socket()
tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("127.0.0.1", port + 6))
tcp.listen(1)  # the client's TCP connect comes first: then its port's start fails
rc, out, err = run(["--client", "127.0.0.1", "--tcp-port", str(port + 6)], "perf_nosock",
                   lcores="0", vdev=f"--vdev=net_memif0,role=client,socket={sock}.none")
tcp.close()
check("a memif client with no socket: the failed call named with the port and driver, a true "
      "errno (EIO), exit 1",
      rc == 1 and "port 0 (net_memif): rte_eth_dev_start() failed: -1" in err and
      "cannot create the srnic device on port 0: Input/output error" in err and
      "Operation not permitted" not in err, err[-500:])

# 9e. a client whose setup fails after its QPs are made (the peer hangs up
# after HELLO, or answers in another tongue): one line saying what the
# server did, exit 1, and what was allocated freed (no LeakSanitizer
# report: perf_setup_qps()'s QP array and post-time rings were left)
import threading


def one_shot_peer(lport, reply):
    """A TCP peer on lport: reads the client's greeting and HELLO, sends reply, closes."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", lport))
    ls.listen(1)
    ls.settimeout(SERVER_UP_S)

    def serve():
        try:
            c, _ = ls.accept()
            c.settimeout(SERVER_UP_S)
            f = c.makefile("r")
            while not f.readline().startswith("HELLO"):
                pass
            c.sendall(reply)
            c.close()
        except OSError:
            pass
        ls.close()
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


for reply, want in ((b"", "closed the connection during the handshake"),
                    (b"HELLO?\n", "does not speak srnic-perf's exchange")):
    t = one_shot_peer(port + 7, reply)
    rc, out, err = run(["--client", "127.0.0.1", "--tcp-port", str(port + 7), "--qps", "3"],
                       "perf_setup_fail", lcores="0", vdev="--vdev=net_null0")
    t.join(timeout=SERVER_UP_S)
    check(f"a client's setup failing after its QPs ({want}): said, exit 1, nothing leaked",
          rc == 1 and f"the server at 127.0.0.1:{port + 7} {want}" in err and
          "LeakSanitizer" not in err, err[-600:])

srv = popen_perf(["--server", "--tcp-port", str(port + 1)], "perf_sig_wait", lcores="1",
                 vdev=f"--vdev=net_memif0,role=server,socket={sock}.w")
up = wait_listening(srv, port + 1)
rc, out, err = run(["--server", "--tcp-port", str(port + 1)], "perf_sig_dup", lcores="0",
                   vdev="--vdev=net_null0")
check("a second server on the same TCP port: exit 1, 'address in use' and what to do",
      up and rc == 1 and "Address already in use" in err and "--tcp-port" in err, err[-400:])
srv.send_signal(_signal.SIGTERM)
lines = []
rc = finish(srv, lines)
check("a server waiting for a client, SIGTERM: exit 0 at once, says so",
      up and rc == 0 and "stopped while waiting for a client" in "".join(lines), "".join(lines)[-400:])

rc, out, err = run(["--client", "127.0.0.1", "--tcp-port", str(port + 2)], "perf_noserver",
                   lcores="0")
check("a client with no server: says what it waits for, then a clear error, exit 1",
      rc == 1 and "waiting up to" in out and "cannot reach the server at 127.0.0.1" in err and
      "Connection refused" in err, out[-300:] + err[-300:])

# 10. bad options: one line naming the option and what it takes, exit 1, no
# usage dump; --help without the EAL; srnic-perf's options without "--".
for args, want in ((["--mtu", "5000"], "--mtu 5000: one of 256, 512, 1024, 2048, 4096"),
                   (["--qps", "20000"], "--qps 20000: a whole number from 1 to 16384"),
                   (["--qps", "2x"], "--qps 2x: a whole number from 1 to 16384"),
                   (["--qps", "5000"], "5000 QPs x depth 16 on an lcore exceed a CQ (65536 CQEs)"),
                   (["--op", "foo"], "--op foo: one of read, write, send, atomic"),
                   (["--sizes", "64,,4K"], "--sizes 64,,4K: a comma-separated list of sizes, none empty"),
                   (["--sizes", "64,"], "--sizes 64,: a comma-separated list of sizes, none empty"),
                   (["--duration", "x"], "--duration x: seconds"),
                   (["--duration", "inf"], "--duration inf: seconds, more than 0 and at most 86400"),
                   (["--duration", "1e9"], "--duration 1e9: seconds, more than 0 and at most 86400"),
                   (["--stats-period", "inf"], "--stats-period inf: seconds, 0 (off) to 86400"),
                   (["--drop", "x"], "--drop x: a probability from 0 to 1"),
                   (["--reorder", "0.1x"], "--reorder 0.1x: a probability from 0 to 1"),
                   (["--corrupt", "1.5"], "--corrupt 1.5: a probability from 0 to 1"),
                   (["--lcores", "2"], "srnic-perf's is --req-lcores"),
                   (["--qps", "2", "--req-lcores", "3"], "--req-lcores 3 with --qps 2"),
                   (["--server", "--peer-qpn", "17"], "--peer-qpn needs --peer-psn and --peer-ip"),
                   (["--server", "--peer-qpn", "17", "--peer-psn", "1"],
                    "--peer-qpn needs --peer-psn and --peer-ip")):
    try:  # an accepted value would run: bounded (--duration 1e9)
        rc, out, err = run(args, "perf_badopt", timeout=120)
    except subprocess.TimeoutExpired:
        rc, out, err = None, "", "(still running after 120 s: the value was taken)"
    lines = [l for l in err.splitlines() if l.startswith("srnic-perf:")]
    check(f"bad option {' '.join(args)}: exit 1, one line naming it",
          rc == 1 and len(lines) == 1 and want in lines[0] and "usage:" not in out + err,
          out[-300:] + err[-300:])
# the lcores -l gives against --req-lcores: refused before any device is
# set up, naming srnic-perf's option; the responder sharing the main lcore
# is said, not silent
rc, out, err = run(["--req-lcores", "2", "--qps", "2"], "perf_lc_few", lcores="0")
lines = [l for l in err.splitlines() if l.startswith("srnic-perf:")]
check("-l 0 -- --req-lcores 2: exit 1, one line naming --req-lcores, before any setup",
      rc == 1 and len(lines) == 1 and "--req-lcores 2 needs at least 2 lcores (-l gives 1)" in
      lines[0] and "srnic:" not in err and "engine counters" not in out, out[-300:] + err[-300:])
rc, out, err = run(["--req-lcores", "2", "--qps", "2", "--iters", "1000", "--json"], "perf_lc_share",
                   lcores="0,1")
check("-l 0,1 -- --req-lcores 2: runs, and says the responder shares the main lcore",
      rc == 0 and len(json_lines(out)) == 1 and
      "the responder's engines share the main lcore with requester 0" in err, err[-400:])
for argv in ([PERF, "--", "--help"], [PERF, "--help"]):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    check(f"{' '.join(argv[1:])}: srnic-perf's options, exit 0, no EAL brought up",
          p.returncode == 0 and "--req-lcores" in p.stdout and "--perftest" in p.stdout and
          "EAL:" not in p.stdout + p.stderr and "TELEMETRY" not in p.stdout + p.stderr,
          p.stdout[-300:] + p.stderr[-300:])
p = subprocess.run([PERF, "-l", "0,1", "--op", "read"], capture_output=True, text=True, timeout=60)
check("srnic-perf's options without '--': one line saying where they go, exit 1",
      p.returncode == 1 and "put srnic-perf's options after \"--\"" in p.stderr and
      len(p.stderr.splitlines()) <= 2, p.stderr[-400:])

p = subprocess.run([PERF, "-l", "0,1", "--file-prefix", f"perf_nomem_{os.getpid()}", "--no-pci",
                    "--no-huge", "--log-level=lib.eal:error", "--", "--iters", "10"],
                   capture_output=True, text=True, timeout=120)
check("--no-huge without -m: says what ran short and what to pass, no bare errno, exit 1",
      p.returncode == 1 and "out of DPDK memory" in p.stderr and "-m 512" in p.stderr and
      not re.search(r": -\d+$", p.stderr, re.M), p.stderr[-400:])

rc, out, err = run(["--iters", "10", "--size", "64", "--quiet"], "perf_quietlog")
check("no 'TELEMETRY: No legacy callbacks' line on a plain run",
      rc == 0 and "TELEMETRY" not in out + err, (out + err)[-300:])
# the README's lines, with no --log-level: none of the EAL's start-up INFO
# lines ("EAL: Detected CPU lcores", ...)
p = subprocess.run([PERF, "-l", "0,1", "--file-prefix", f"perf_ealquiet_{os.getpid()}", "--no-pci",
                    "--no-huge", "-m", "512", "--", "--iters", "10", "--size", "64", "--quiet"],
                   capture_output=True, text=True, timeout=180)
check("no EAL start-up lines unless a --log-level asks for them",
      p.returncode == 0 and "EAL:" not in p.stdout + p.stderr, (p.stdout + p.stderr)[-300:])
# a --vdev its driver refused: not "give one with --vdev"
p = subprocess.run([PERF, "-l", "0", "--file-prefix", f"perf_badvdev_{os.getpid()}"] + EAL +
                   ["--vdev=net_memif0,role=bogus", "--", "--server"],
                   capture_output=True, text=True, timeout=120)
check("a --vdev its driver refused: says so, exit 1",
      p.returncode == 1 and "if you gave one, its driver refused it" in p.stderr, p.stderr[-400:])
# not root, hugepages by default: the failure says what to add
if os.geteuid() == 0 and shutil.which("setpriv"):
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o755)
        perf = shutil.copy(PERF, d)
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", perf,
                            "-l", "0,1", "--no-pci", "--", "--iters", "10", "--size", "64"],
                           capture_output=True, text=True, timeout=120, cwd=d)
    check("not root, no --no-huge: EAL's failure says to add --no-huge -m 1024, exit 1",
          p.returncode == 1 and "not root" in p.stderr and
          "add --no-huge -m 1024 to the EAL arguments" in p.stderr, p.stderr[-400:])
else:
    print("skip: the not-root case needs root and setpriv")

# 11. a new user's first hour: what srnic-perf
# prints and what its defaults cost.
import struct as _struct


def pcap_records(path):
    """(snaplen of the file header, [(incl_len, orig_len), ...]) of a classic pcap."""
    with open(path, "rb") as f:
        b = f.read()
    snap = _struct.unpack("<I", b[16:20])[0]
    recs, off = [], 24
    while off + 16 <= len(b):
        incl, orig = _struct.unpack("<II", b[off + 8:off + 16])
        recs.append((incl, orig))
        off += 16 + incl
    return snap, recs, off == len(b)


# --trace: CQE opcodes by name, every WR its own wr_id (QP index, WR
# number), and how many WRs a CQE of an unsignaled run covers
rc, out, err = run(["--op", "read", "--size", "64", "--iters", "6", "--depth", "2", "--trace",
                    "--quiet"], "fh_trace")
cqes = [l for l in out.splitlines() if l.lstrip().startswith("CQE")]
ids = [re.search(r"wr_id (0x[0-9a-f]+|0)", l).group(1) for l in cqes]
check("--trace CQE: the opcode's name (RDMA_READ), not a number",
      rc == 0 and len(cqes) == 6 and all("opcode RDMA_READ " in l for l in cqes), out[-800:])
check("--trace CQE: six WRs, six wr_ids (QP 0's WRs 0..5)",
      sorted(int(i, 16) for i in ids) == list(range(6)) and "QP 0's WR 5, 1 WR(s) done" in out,
      str(ids))
rc, out, err = run(["--op", "write", "--size", "64", "--iters", "8", "--depth", "4", "--unsignaled",
                    "4", "--trace", "--quiet"], "fh_trace_unsig")
cqes = [l for l in out.splitlines() if l.lstrip().startswith("CQE")]
check("--trace CQE, --unsignaled 4: two CQEs, WRs 3 and 7, each covering 4, opcode RDMA_WRITE",
      rc == 0 and len(cqes) == 2 and "WR 3, 4 WR(s) done" in cqes[0] and
      "WR 7, 4 WR(s) done" in cqes[1] and all("opcode RDMA_WRITE " in l for l in cqes),
      out[-800:])

# live statistics every --stats-period seconds (0: off), as JSON lines
# with --json; and in --json mode a last line with the engine counters
rc, out, err = run(["--op", "read", "--size", "4096", "--duration", "1.5", "--stats-period",
                    "0.25"], "fh_period")
live = [l for l in out.splitlines() if re.match(LIVE, l)]
check("--stats-period 0.25 over 1.5 s: a live line every 0.25 s (at least 3, at most 7)",
      rc == 0 and 3 <= len(live) <= 7, out[-600:])
rc, out, err = run(["--op", "read", "--size", "4096", "--duration", "1.2", "--stats-period", "0"],
                   "fh_period0")
check("--stats-period 0: no live line, the result row still there",
      rc == 0 and not [l for l in out.splitlines() if re.match(LIVE, l)] and
      re.search(r"^\s+4096\s+\d+\s", out, re.M), out[-600:])
rc, out, err = run(["--op", "write", "--sizes", "64,4096", "--iters", "3000", "--json"], "fh_cnt")
res, cnt = json_lines(out), json_kind(out, "counters")
c = cnt[0]["counters"] if len(cnt) == 1 else {}
check("--json: one result line per size, then one counters line (both devices, by side)",
      rc == 0 and len(res) == 2 and out.strip().splitlines()[-1].startswith('{"counters"') and
      c.get("req", {}).get("dev") == "perfa" and c.get("resp", {}).get("dev") == "perfb",
      out[-800:])
check("--json counters: the requester sent every WRITE, the responder took them",
      c.get("req", {}).get("req_msgs", 0) >= 6000 and c.get("resp", {}).get("resp_pkts", 0) >= 6000
      and "rx_icrc_err" not in c.get("req", {}), str(c)[:600])
rc, out, err = run(["--op", "read", "--size", "4096", "--duration", "1", "--json",
                    "--stats-period", "0.25"], "fh_live_json")
lj = json_kind(out, "live")
check("--json --stats-period 0.25: JSON live lines ({\"live\":...}), the result line apart",
      rc == 0 and len(lj) >= 2 and all(x["live"]["size"] == 4096 and x["live"]["msgs"] > 0
                                      for x in lj) and len(json_lines(out)) == 1, out[-600:])

# default iterations per size: about 256 MiB a size (at least 1000, at
# most 100000 messages), not 100000 at every size
rc, out, err = run(["--op", "write", "--size", "64K", "--json"], "fh_iters")
r = json_lines(out)
check("no --iters, 64 KiB: 4096 messages (256 MiB)", rc == 0 and len(r) == 1 and
      r[0]["msgs"] == 4096, out[-400:] + err[-300:])
rc, out, err = run(["--help"], "fh_help")
check("--help says what the default iterations are and what perftest does",
      "4096 at 64 KiB" in out and "perftest" in out and "--stats-period" in out and
      "--pcap-snaplen" in out and "--pcap-max" in out and "--remote-access" in out, out[-800:])

# --pcap keeps the headers and a little payload (snap length 128),
# --pcap-snaplen 0 whole frames, --pcap-max stops the file at a size
with tempfile.TemporaryDirectory() as d:
    f = os.path.join(d, "snap.pcap")
    rc, out, err = run(["--op", "read", "--size", "8192", "--iters", "3", "--depth", "1", "--pcap",
                        f, "--quiet"], "fh_snap")
    snap, recs, whole = pcap_records(f) if os.path.exists(f) else (0, [], False)
    check("--pcap default: snap length 128 in the file header, 9 records, each cut to 128 bytes "
          "with its frame's length", rc == 0 and snap == 128 and whole and len(recs) == 9 and
          all(i == min(o, 128) for i, o in recs) and max(o for _, o in recs) > 4096,
          f"{snap} {recs}")
    rc, out, err = run(["--op", "read", "--size", "8192", "--iters", "3", "--depth", "1", "--pcap",
                        f, "--pcap-snaplen", "0", "--quiet"], "fh_snap0")
    snap, recs, whole = pcap_records(f) if os.path.exists(f) else (0, [], False)
    check("--pcap-snaplen 0: whole frames", rc == 0 and snap == 65535 and whole and
          len(recs) == 9 and all(i == o for i, o in recs), f"{snap} {recs}")
    rc, out, err = run(["--op", "read", "--size", "64K", "--iters", "200", "--pcap", f,
                        "--pcap-snaplen", "0", "--pcap-max", "1", "--quiet"], "fh_pcapmax")
    size = os.path.getsize(f) if os.path.exists(f) else -1
    snap, recs, whole = pcap_records(f) if os.path.exists(f) else (0, [], False)
    # 200 READs of 64 KiB are 3400 frames, 13 MiB: the file stops at 1 MiB
    # (one record past it at most), whole records only
    check("--pcap-max 1: the file stops at 1 MiB (plus a frame), says so once, the run goes on",
          rc == 0 and (1 << 20) <= size <= (1 << 20) + 9000 + 16 and whole and
          err.count("reached --pcap-max 1 MiB") == 1 and re.search(r"^\s+65536\s+200\s", out, re.M),
          f"{size} " + err[-400:])
rc, out, err = run(["--pcap-snaplen", "70000"], "fh_snap_bad")
check("--pcap-snaplen over 65535: refused naming the range",
      rc == 1 and "--pcap-snaplen 70000: a whole number from 0 to 65535" in err, err[-300:])
rc, out, err = run(["--remote-access", "read,exec"], "fh_acc_bad")
check("--remote-access with an unknown right: refused naming the words",
      rc == 1 and "--remote-access read,exec: read, write, atomic" in err, err[-300:])


# 9, 10. Over net_af_packet on a veth pair in a netns made here: the path
# MTU the port allows (1518-byte frames: 1024, not the 4096 asked) in the
# header, the JSON and the warning, and on the wire; a server with its peer
# on the command line honours --trace and --pcap, prints its MAC, path MTU
# and rights, and grants the op's right only (perftest's), more with
# --remote-access. The peer of the command-line server is roce_peer.py.
NS = f"srnic-fh-{os.getpid()}"
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "roce_peer.py")
SRV_MAC, PEER_MAC = "02:00:00:00:0a:01", "02:00:00:00:0a:02"


def netns_up():
    cmds = [["ip", "netns", "add", NS],
            ["ip", "-n", NS, "link", "add", "fhs", "type", "veth", "peer", "name", "fhp"],
            ["ip", "-n", NS, "link", "set", "fhs", "address", SRV_MAC],
            ["ip", "-n", NS, "link", "set", "fhp", "address", PEER_MAC],
            ["ip", "-n", NS, "link", "set", "lo", "up"],
            ["ip", "-n", NS, "link", "set", "fhs", "up"],
            ["ip", "-n", NS, "link", "set", "fhp", "up"]]
    for c in cmds:
        if subprocess.run(c, capture_output=True).returncode != 0:
            return False
    return True


def in_ns(args, prefix, vdev, lcores="0"):
    return ["ip", "netns", "exec", NS, PERF, "-l", lcores, "--file-prefix",
            f"{prefix}_{os.getpid()}"] + EAL + [vdev, "--"] + args


def cmdline_server(extra, pcap):
    """srnic-perf --server --peer-* on fhs, its JSON line, the peer's ops, the server's output."""
    srv = subprocess.Popen(in_ns(["--server", "--peer-qpn", "0x11", "--peer-psn", "100",
                                  "--peer-ip", "10.9.0.2", "--peer-mac", PEER_MAC, "--ip",
                                  "10.9.0.1", "--size", "4096", "--depth", "2", "--mtu", "4096",
                                  "--trace", "--pcap", pcap] + extra, "fh_srv",
                                 "--vdev=net_af_packet0,iface=fhs"),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, j, peer = [], None, None
    try:
        if read_until(srv, r"^\{", lines):
            j = json.loads(lines[-1])
            ops = "read:4096,write:8"
            p = subprocess.run(["ip", "netns", "exec", NS, sys.executable, PEER, "fhp",
                                lines[-1], "10.9.0.2", "0x11", "100", ops],
                               capture_output=True, text=True, timeout=180)
            peer = json.loads(p.stdout) if p.returncode == 0 else {"err": p.stderr[-400:]}
    finally:
        srv.send_signal(_signal.SIGTERM)
        try:
            o, e = srv.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            srv.kill()
            o, e = srv.communicate()
    return j, peer, "".join(lines) + o, e, srv.returncode


if os.geteuid() != 0 or shutil.which("ip") is None or not netns_up():
    print("note: no netns/veth here (root and iproute2 needed): af_packet checks not run")
else:
    try:
        with tempfile.TemporaryDirectory() as d:
            pc = os.path.join(d, "srv.pcap")
            j, peer, out, err, src = cmdline_server(["--op", "read"], pc)
            check("af_packet cmdline server: JSON with mac, pmtu, len (depth x max(size, 8)), "
                  "slot, access", j is not None and j.get("mac", "").lower() == SRV_MAC and
                  j.get("len") == 2 * 4096 and j.get("slot") == 4096 and j.get("depth") == 2 and
                  j.get("access") == "read", str(j))
            check("af_packet: path MTU 1024 in the JSON (the port's 1518-byte frames), not 4096",
                  j is not None and j.get("pmtu") == 1024, str(j))
            check("af_packet: the clamp warned about, naming the port's limit and net_pcap",
                  "WARNING: path MTU 1024, not the 4096 asked" in err and "net_af_packet" in err
                  and "net_pcap" in err, err[-600:])
            ops = peer.get("ops", []) if peer else []
            rd = ops[0]["answers"] if len(ops) > 0 else []
            check("af_packet: a 4096-byte READ answered FIRST, MIDDLE, MIDDLE, LAST on PSN 100..103, "
                  "each carrying the printed path MTU (1024)",
                  [(a[0], a[1], a[2]) for a in rd] == [(0x0D, 100, 1024), (0x0E, 101, 1024),
                                                       (0x0E, 102, 1024), (0x0F, 103, 1024)],
                  str(peer))
            wr = ops[1]["answers"] if len(ops) > 1 else []
            # --op read: the region and the QP grant remote read only (perftest's);
            # a WRITE to a QP without remote write gets NAK Invalid Request
            # (AETH syndrome 0x61; rxe's check_op_valid answers the same)
            check("af_packet: --op read grants no remote write: a WRITE gets NAK invalid request",
                  len(wr) == 1 and wr[0][0] == 0x11 and wr[0][3] == 0x61, str(peer))
            check("af_packet cmdline server: --trace prints the packets in and out",
                  re.search(r"in +.*RC_RDMA_READ_REQUEST", out) is not None and
                  re.search(r"out +.*READ_RESPONSE_LAST", out) is not None, out[-800:])
            snap, recs, whole = pcap_records(pc) if os.path.exists(pc) else (0, [], False)
            check("af_packet cmdline server: --pcap written (the READ and its 4 answers at least)",
                  src == 0 and whole and len(recs) >= 5, f"{src} {len(recs)} " + err[-300:])
            j, peer, out, err, src = cmdline_server(["--op", "read", "--remote-access", "write"], pc)
            ops = peer.get("ops", []) if peer else []
            wr = ops[1]["answers"] if len(ops) > 1 else []
            check("af_packet: --remote-access write: granted (access read,write), the WRITE ACKed",
                  j is not None and j.get("access") == "read,write" and len(wr) == 1 and
                  wr[0][0] == 0x11 and wr[0][3] >> 5 == 0, str(j) + str(peer))

            # two processes over the veth pair: the client's header and JSON
            # say the path MTU the packets carry
            srv = subprocess.Popen(in_ns(["--server", "--tcp-port", str(PORT0 + 50)], "fh_tps",
                                         "--vdev=net_af_packet0,iface=fhs", "1"),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            srv_lines = []
            read_until(srv, "waiting for a client", srv_lines)
            cp = os.path.join(d, "cl.pcap")
            cl = subprocess.run(in_ns(["--client", "127.0.0.1", "--tcp-port", str(PORT0 + 50), "--op",
                                       "read", "--size", "8192", "--iters", "20", "--mtu", "4096",
                                       "--pcap", cp, "--quiet"], "fh_tpc",
                                      "--vdev=net_af_packet0,iface=fhp"),
                                capture_output=True, text=True, timeout=240)
            try:
                so, se = srv.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                srv.kill()
                so, se = srv.communicate()
            so = "".join(srv_lines) + so
            check("af_packet two processes: the client's header says path MTU 1024 and why",
                  cl.returncode == 0 and "path MTU 1024, 1 requester" in cl.stdout and
                  "not the 4096 asked" in cl.stdout and "net_pcap" in cl.stderr,
                  cl.stdout[-800:] + cl.stderr[-400:] + se[-300:])
            t = subprocess.run(["tshark", "-r", cp, "-d", "udp.port==4791,infiniband", "-Y",
                                "infiniband.bth.opcode==13 || infiniband.bth.opcode==14 || "
                                "infiniband.bth.opcode==15", "-T", "fields", "-e", "udp.length"],
                               capture_output=True, text=True) if shutil.which("tshark") else None
            lens = [int(x) for x in t.stdout.split()] if t else []
            # UDP length = 8 + BTH 12 + AETH 4 (FIRST, LAST) + 1024 + ICRC 4
            check("af_packet two processes: every READ response carries 1024 bytes (8 per READ)",
                  len(lens) == 20 * 8 and max(lens) <= 8 + 12 + 4 + 1024 + 4 and
                  min(lens) >= 8 + 12 + 1024 + 4, str(lens[:12]))
            check("af_packet two processes: the server's counter table has one column, its own",
                  srv.returncode == 0 and "responder side B (this server)" in so and
                  not [l for l in so.splitlines() if " | " in l and "rx_pkts" in l],
                  so[-600:] + se[-300:])
    finally:
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


# The lossy link holds bytes, not references. SENDs
# rewrite their source slot on every post; a held (reordered, duplicated,
# burst-full) retransmission over the old slot failed its ICRC (233
# rx_icrc_err in 5000 4 KiB SENDs before) though nothing was corrupted.
def counters(out):
    """Engine counters (name -> (side A, side B)) and the lossy-link lines."""
    cnt, loss = {}, []
    for l in out.splitlines():
        w = l.split()
        if len(w) == 4 and w[2] == "|":
            cnt[w[0]] = (int(w[1]), int(w[3]))
        if l.strip().startswith("lossy link"):
            loss.append(l)
    return cnt, loss


for op in ("send", "write"):
    rc, out, err = run(["--op", op, "--size", "4096", "--iters", "3000", "--reorder", "0.05",
                        "--dup", "0.05", "--verify", "--quiet"], f"perf_hold_{op}")
    cnt, loss = counters(out)
    held = [int(re.search(r"held-copies (\d+)", l).group(1)) for l in loss
            if re.search(r"held-copies (\d+)", l)]
    check(f"--verify --reorder --dup, no --corrupt ({op}): no rx_icrc_err, data right, "
          "held packets copied", rc == 0 and "rx_icrc_err" not in cnt and len(held) == 2 and
          sum(held) > 0 and "ERRORS" not in out, out[-1500:] + err[-300:])

# perftest's options: -u / --retry_count reach the QP:
# on a link that loses everything the WR fails after retry_count + 1 ACK
# timeouts of 4.096 us x 2^u each.
for u, retry in ((16, 1), (8, 1), (8, 4), (8, 7)):
    rc, out, err = run(["--op", "write", "--size", "64", "--iters", "1", "--drop", "1",
                        "-u", str(u), "--retry_count", str(retry)], f"perf_u{u}_{retry}")
    cnt, _ = counters(out)
    check(f"-u {u} --retry_count {retry}: fails after {retry + 1} timeouts, {retry} resends",
          rc != 0 and cnt.get("retry_timeout", (0, 0))[0] == retry + 1 and
          cnt.get("retransmit_pkts", (0, 0))[0] == retry, out[-1200:] + err[-300:])
rc, out, err = run(["--op", "write", "--size", "64", "--iters", "1", "--drop", "1", "--json",
                    "--qp-timeout", "16", "--retry_count", "1"], "perf_u_time")
r = json_lines(out)
# two timeouts of 268 ms: at least 0.5 s (the default lossy timeout, 16.8 ms x 8, is 0.13 s)
check("--qp-timeout 16: the failing WR took two 268 ms timeouts",
      rc != 0 and len(r) == 1 and r[0]["errors"] == 1 and r[0]["seconds"] >= 0.5, out[-600:])
for bad, want in ((["-u", "0"], "--qp-timeout 0: a whole number from 1 to 31"),
                  (["--retry_count", "8"], "--retry_count 8: a whole number from 0 to 7"),
                  (["-o", "17"], "--outs 17: a whole number from 1 to 16"),
                  (["-I", "300", "--op", "write"], "--inline_size 300: bytes from 0 to 256"),
                  (["-I", "64", "--op", "read"], "--inline_size goes with --op write or send"),
                  (["--persist"], "--persist goes with --server"),
                  (["--total-num-mbufs", "10"], "--total-num-mbufs 10: a whole number from 1024")):
    rc, out, err = run(bad, "perf_habit_bad")
    check(f"{' '.join(bad)}: refused, naming the option", rc == 1 and want in err, err[-300:])

# -o / --outs: max_rd_atomic; at depth 8, one READ in flight stalls the others
for extra, stalls in (([], False), (["-o", "1"], True), (["--outs", "2"], True)):
    rc, out, err = run(["--op", "read", "--size", "64", "--depth", "8", "--iters", "2000",
                        "--verify", "--quiet"] + extra, "perf_outs")
    cnt, _ = counters(out)
    check(f"--op read --depth 8 {' '.join(extra)}: verified, "
          f"{'stalls at' if stalls else 'never waits for'} max_rd_atomic",
          rc == 0 and (cnt.get("req_wait_rd_atomic", (0, 0))[0] > 0) == stalls,
          out[-900:] + err[-300:])

# -I / --inline_size: payloads up to it posted inline (copied at post, no
# zero-copy segment on the requester), larger ones zero-copy as before
for op in ("write", "send"):
    for extra, zc in (([], 2000), (["-I", "256"], 0), (["--inline_size", "199"], 2000)):
        rc, out, err = run(["--op", op, "--size", "200", "--iters", "2000", "--verify",
                            "--quiet"] + extra, "perf_inline")
        cnt, _ = counters(out)
        check(f"--op {op} --size 200 {' '.join(extra)}: verified, requester zero-copy "
              f"segments {zc}", rc == 0 and cnt.get("resp_zc_segs", (0, 0))[0] == zc and
              "ERRORS" not in out, out[-900:] + err[-300:])

# -H, stdev, --cpu_util: the latency histogram counts every sample, in
# order; stdev as the samples' (perftest's t_stdev); CPU time of the run
rc, out, err = run(["--op", "read", "--size", "64", "--lat", "--iters", "3000", "-H",
                    "--cpu_util"], "perf_hist")
hist = []
for l in out.splitlines():
    w = l.split()
    if len(w) == 4 and w[3].endswith("%") and all(x.isdigit() for x in w[:3]):
        hist.append((int(w[0]), int(w[1]), int(w[2]), float(w[3][:-1])))
check("-H: histogram buckets cover 3000 samples, ascending, cumulative to 100%",
      rc == 0 and hist and sum(h[2] for h in hist) == 3000 and
      all(a[1] <= b[0] for a, b in zip(hist, hist[1:])) and abs(hist[-1][3] - 100) < 1e-6 and
      "latency histogram" in out, out[-1500:])
m = re.search(r"t_stdev ([\d.]+) us over (\d+) samples", out)
check("--lat: t_stdev line over every sample", m is not None and m.group(2) == "3000", out[-800:])
m = re.search(r"CPU: ([\d.]+)% of one core over the run \(user ([\d.]+) s, sys ([\d.]+) s", out)
check("--cpu_util: CPU time of the run, the main lcore polling at least part of it",
      m is not None and float(m.group(1)) > 0 and float(m.group(2)) + float(m.group(3)) > 0,
      out[-800:])
rc, out, err = run(["--op", "write", "--size", "64", "--lat", "--iters", "2000", "-H",
                    "--cpu_util", "--json"], "perf_hist_json")
r = json_lines(out)
ok = rc == 0 and len(r) == 1
if ok:
    r = r[0]
    h = r.get("lat_hist_ns", [])
    lat = r["lat_us"]
    ok = (sum(b[2] for b in h) == 2000 and all(b[0] < b[1] for b in h) and
          # the min and max samples fall in the first and last buckets
          h[0][0] <= lat["min"] * 1000 + 1 and lat["max"] * 1000 - 1 < h[-1][1] and
          0 <= r.get("lat_stdev_us", -1) <= lat["max"] - lat["min"] and
          r.get("cpu_util", {}).get("pct", -1) > 0)
check("--json -H --cpu_util: lat_hist_ns over every sample, lat_stdev_us, cpu_util",
      ok, out[-800:])

# xstats: the PMD's extended counters of both ports at the end, nonzero
rc, out, err = run(["--op", "read", "--size", "64", "--iters", "1000", "--quiet"], "perf_xstats")
xs = re.findall(r"port \d+ \((net_ring_perf_[ab])\) xstats, nonzero:", out)
good = re.findall(r"^\s+rx_good_packets\s+(\d+)$", out, re.M)
check("xstats: both ports' (net_ring's own), rx_good_packets as the engines' rx_pkts",
      rc == 0 and xs == ["net_ring_perf_a", "net_ring_perf_b"] and len(good) == 2 and
      [int(g) for g in good] == list(counters(out)[0].get("rx_pkts", (-1, -1))), out[-1200:])

# --total-num-mbufs (testpmd's): the devices' pool size; too many for -m 512
rc, out, err = run(["--op", "read", "--size", "64", "--iters", "1000", "--json",
                    "--total-num-mbufs", "2048"], "perf_mbufs")
r = json_lines(out)
check("--total-num-mbufs 2048: runs", rc == 0 and r and r[0]["msgs"] == 1000, err[-300:])
rc, out, err = run(["--iters", "10", "--total-num-mbufs", "4000000"], "perf_mbufs_big")
check("--total-num-mbufs 4000000: the pool does not fit -m 512, said so",
      rc == 1 and "out of DPDK memory" in err, err[-400:])

# -V / --version, before or after "--", no EAL brought up
for argv in ([PERF, "-V"], [PERF, "--", "--version"]):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    check(f"{' '.join(argv[1:])}: the version, exit 0, no EAL",
          p.returncode == 0 and re.match(r"srnic-perf \d+\.\d+\.\d+ .*DPDK 22\.11.*perftest 6\.06",
                                         p.stdout) is not None and "EAL:" not in p.stdout + p.stderr,
          p.stdout + p.stderr[-300:])


# --persist serves client after client; a client killed
# mid-run is one line with its partial figures (the server goes on, or,
# without --persist, exits 1 saying so)
def memif_server(port, extra):
    sock = f"/tmp/srnic-perf-test-{os.getpid()}-{port}.sock"
    try:
        os.unlink(sock)
    except FileNotFoundError:
        pass
    srv = subprocess.Popen([PERF, "-l", "1", "--file-prefix", f"ps_{os.getpid()}_{port}"] + EAL +
                           [f"--vdev=net_memif0,role=server,socket={sock},bsize=10240", "--",
                            "--server", "--tcp-port", str(port)] + extra,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return srv, sock


def memif_client(sock, port, n, args):
    return [PERF, "-l", "0", "--file-prefix", f"pc_{os.getpid()}_{port}_{n}"] + EAL + \
           [f"--vdev=net_memif0,role=client,socket={sock},bsize=10240", "--", "--client",
            "127.0.0.1", "--tcp-port", str(port)] + args


def kill_mid_run(cmd):
    """Start a client, SIGKILL it once its live statistics show traffic."""
    cl = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in cl.stdout:
        seen.append(line)
        if re.match(r"\s+\.\.\.\s+[\d.]+ s\s+[1-9]\d* msgs", line):
            break
    cl.kill()
    cl.wait()
    return "".join(seen)


port = PORT0 + 40
srv, sock = memif_server(port, ["--persist"])
try:
    up = wait_listening(srv, port)
    c1 = subprocess.run(memif_client(sock, port, 1, ["--op", "read", "--sizes", "64,4096",
                                                      "--iters", "2000", "--verify", "--json"]),
                        capture_output=True, text=True, timeout=180)
    r1 = json_lines(c1.stdout)
    check("--persist: first client (read) served, verified", up and c1.returncode == 0 and
          len(r1) == 2 and all(x["msgs"] == 2000 and x["verify_errors"] == 0 for x in r1),
          c1.stdout[-400:] + c1.stderr[-400:])
    seen = kill_mid_run(memif_client(sock, port, 2, ["--op", "write", "--size", "4096",
                                                     "--duration", "60", "--verify"]))
    # Connections that are not srnic-perf clients must not hold a persistent
    # server: one that never speaks is dropped after PERF_HANDSHAKE_WAIT_S
    # (20 s), one that speaks another tongue at once; neither counts as a
    # client, and the next real client is served.
    pre = []
    silent = socket.create_connection(("127.0.0.1", port), timeout=SERVER_UP_S)
    dropped_silent = read_until(srv, r"sent nothing more in 20 s \(waiting for its greeting",
                                pre)
    silent.close()
    chatty = socket.create_connection(("127.0.0.1", port), timeout=SERVER_UP_S)
    chatty.sendall(b"GET / HTTP/1.0\n")
    dropped_chatty = read_until(srv, r"is not a srnic-perf client of this version \(its first "
                                     r"line: 'GET / HTTP/1.0'", pre)
    chatty.close()
    check("--persist: a connection that says nothing is dropped after 20 s, one that is not "
          "srnic-perf at once, each with a line naming it",
          dropped_silent and dropped_chatty, "".join(pre)[-800:])
    c3 = subprocess.run(memif_client(sock, port, 3, ["--op", "send", "--size", "100", "--qps", "2",
                                                      "--iters", "2000", "--verify", "--json"]),
                        capture_output=True, text=True, timeout=180)
    r3 = json_lines(c3.stdout)
    check("--persist: after a client killed mid-run, the next (send, 2 QPs) is served",
          c3.returncode == 0 and len(r3) == 1 and r3[0]["msgs"] == 2000 and
          r3[0]["verify_errors"] == 0 and srv.poll() is None,
          seen[-300:] + c3.stdout[-400:] + c3.stderr[-400:])
    srv.send_signal(_signal.SIGINT)
    # the rest through the same reader: read_until()'s iteration may hold
    # lines it read ahead, which communicate() (the raw pipe) would miss
    sout = "".join(pre) + srv.stdout.read()
    serr = srv.stderr.read()
    srv.wait(timeout=60)
    gone = [l for l in sout.splitlines() if "the client went away" in l]
    check("--persist: one line for the killed client, with its partial figures",
          len(gone) == 1 and "into its run of 4096-byte write: partial" in gone[0] and
          re.search(r"received [1-9]\d* packets", gone[0]) is not None and
          "waiting for the next one" in gone[0], sout[-1500:] + serr[-500:])
    check("--persist: three clients, then a signal: exit 0",
          srv.returncode == 0 and "3 client(s) served" in sout and
          sout.count("server waiting for a client") == 6, sout[-1500:] + serr[-500:])
finally:
    if srv.poll() is None:
        srv.kill()
        srv.wait()

port = PORT0 + 41
srv, sock = memif_server(port, [])
try:
    up = wait_listening(srv, port)
    seen = kill_mid_run(memif_client(sock, port, 1, ["--op", "read", "--size", "4096",
                                                     "--duration", "60"]))
    sout, serr = srv.communicate(timeout=60)
    gone = [l for l in serr.splitlines() if "the client went away" in l]
    check("without --persist: a client killed mid-run: the server exits 1 with one line saying so",
          up and srv.returncode == 1 and len(gone) == 1 and
          "into its run of 4096-byte read: partial" in gone[0] and
          "waiting for the next" not in gone[0], seen[-300:] + sout[-600:] + serr[-600:])
finally:
    if srv.poll() is None:
        srv.kill()
        srv.wait()

# The demo's table (usertools/demo-table.py, what `usertools/srnic demo`
# prints) from srnic-perf's own --json output, bandwidth and latency runs
# of two sizes: one row per size with figures, exit 0. (It once broke on the
# closing {"counters":...} line, unseen: the demo is not run in CI.)
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "usertools",
                     "demo-table.py")
outs = []
for extra in (["--depth", "16"], ["--lat"]):
    rc, out, err = run(["--op", "read", "--sizes", "64,64K", "--iters", "2000", "--json"] + extra,
                       "demo_table")
    outs.append((rc, out))
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    f.write("".join(o for _, o in outs))
t = subprocess.run([sys.executable, TABLE, f.name], capture_output=True, text=True, timeout=60)
os.unlink(f.name)
rows = [l for l in t.stdout.splitlines() if re.match(r"\s+READ\s+(64 B|64 KiB)\s+\d+\.\d+ Gb/s", l)]
check("demo table: both runs' JSON make a READ row per size with bandwidth and latency, exit 0",
      all(rc == 0 for rc, _ in outs) and t.returncode == 0 and len(rows) == 2 and
      all(re.search(r"\d+\.\d+ us\s+\d+\.\d+ us$", l) for l in rows),
      t.stdout[-600:] + t.stderr[-600:])

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
