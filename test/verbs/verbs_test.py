#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Unmodified verbs binaries (Debian's ibverbs-utils and perftest) over
srnic's libibverbs.so.1, started with usertools/srnic run.

Two processes on one host, each its own srnic engine on its own DPDK port:
net_memif (server and client roles on one socket), or af_packet on a veth
pair in a network namespace the test creates. The out-of-band TCP exchange
is the tools' own. A client starts once its server listens (/proc/net/tcp);
timeouts are failure guards only.

  verbs_test.py --lib BUILD/drivers/verbs CASE

CASE: symbols | devinfo | rc_pingpong | progress_app | ud_pingpong | uc_pingpong | perftest_ud |
srq_pingpong | api |
perftest_bw | perftest_lat |
perftest_opts | af_packet | gid0 | fork | signal | memif_hangups | lcore
"""
import argparse
import contextlib
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRNIC = os.path.join(ROOT, "usertools", "srnic")
SYMBOLS = os.path.join(ROOT, "drivers", "verbs", "libibverbs.symbols")
GUARD_S = 240           # a pair that takes longer has hung
LISTEN_GUARD_S = 60
SKIP = 77               # meson's "skipped"
# a line any of the tools (or ASan, or EAL) prints when something went wrong
ERROR_RE = re.compile(r"(?i)\b(error|fail(ed|ure)?|couldn't|can't|cannot|unable|invalid|mismatch)\b")

LIB = None
API = None
FORK = None
SIGNAL = None
LCORE = None
TMP = None
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, flush=True)
    return cond


def free_tcp_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port, netns=None):
    """Whether something listens on TCP port (in netns if given)."""
    cmd = ["cat", "/proc/net/tcp", "/proc/net/tcp6"]
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True).stdout
    for line in out.splitlines()[1:]:
        f = line.split()
        if len(f) > 3 and ":" in f[1] and f[3] == "0A" and int(f[1].split(":")[1], 16) == port:
            return True
    return False


def run_env():
    env = dict(os.environ)
    env["SRNIC_VERBS_LIB"] = LIB
    env["SRNIC_HUGE"] = "0"
    env["SRNIC_MEM_MB"] = "256"
    env.pop("SRNIC_CONFIG", None)
    env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


def srnic_run(port, ip, prog, netns=None):
    cmd = [SRNIC, "run", "--port", port, "--ip", ip, "--"] + prog
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    return cmd


def memif_ports(tag):
    sock = os.path.join(TMP, tag + ".sock")
    return (sock, "net_memif0,role=server,socket=%s" % sock,
            "net_memif0,role=client,socket=%s" % sock)


class Pair:
    """A server and a client run to completion; their rc and output."""

    def __init__(self, name, server, client, tcp_port, netns=None, guard=GUARD_S):
        self.name = name
        outs = os.path.join(TMP, name + ".server.log")
        outc = os.path.join(TMP, name + ".client.log")
        env = run_env()
        with open(outs, "w") as fs:
            ps = subprocess.Popen(server, stdout=fs, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + LISTEN_GUARD_S
        while not listening(tcp_port, netns) and ps.poll() is None:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        with open(outc, "w") as fc:
            pc = subprocess.Popen(client, stdout=fc, stderr=subprocess.STDOUT, env=env)
        self.rc_s = self.rc_c = None
        try:
            self.rc_c = pc.wait(timeout=guard)
            self.rc_s = ps.wait(timeout=guard)
        except subprocess.TimeoutExpired:
            for p in (pc, ps):
                if p.poll() is None:
                    p.kill()
                    p.wait()
        self.out_s = open(outs).read()
        self.out_c = open(outc).read()

    def ok(self):
        good = check(self.rc_s == 0 and self.rc_c == 0,
                     "%s: exit codes server %s client %s" % (self.name, self.rc_s, self.rc_c))
        for side, out in (("server", self.out_s), ("client", self.out_c)):
            bad = [l for l in out.splitlines() if ERROR_RE.search(l)]
            good &= check(not bad, "%s: %s error lines: %s" % (self.name, side, bad[:3]))
        if not good:
            print("---- %s server:\n%s---- %s client:\n%s" % (self.name, self.out_s, self.name,
                                                             self.out_c), flush=True)
        return good


def memif_pair(name, server_prog, client_prog, tcp_port, guard=GUARD_S, macs=None):
    sock, sport, cport = memif_ports(name)
    if macs:
        sport += ",mac=" + macs[0]
        cport += ",mac=" + macs[1]
    p = Pair(name, srnic_run(sport, "10.77.0.1", server_prog),
             srnic_run(cport, "10.77.0.2", client_prog + ["127.0.0.1"]), tcp_port, guard=guard)
    check(not os.path.exists(sock), "%s: memif socket %s left behind" % (name, sock))
    return p


# ---- perftest ----

def perftest_rows(out):
    """The result rows under perftest's '#bytes' header."""
    rows, inside = [], False
    for line in out.splitlines():
        if line.strip().startswith("#bytes"):
            inside = True
            continue
        if inside:
            f = line.split()
            if f and f[0].isdigit():
                rows.append([float(x) for x in f if re.match(r"^[0-9.]+$", x)])
            elif line.startswith("-"):
                inside = False
    return rows


# perftest calibrates its cycle counter by a regression over short sleeps
# and gives up when a loaded host disturbs it ("Correlation coefficient
# r^2: 0.735085 < 0.9", then "Can't produce a report"; its -F does not skip
# it): that pair runs again, at most PERFTEST_CLOCK_RUNS times in all.
PERFTEST_CLOCK_RUNS = 3
PERFTEST_CLOCK_RE = re.compile(r"^Correlation coefficient r\^2: [0-9.e-]+ < 0\.9$", re.M)


def perftest(tool, args, label=None, nrows=1):
    name = label or "%s%s" % (tool, "".join(args).replace("-", "_").replace(" ", ""))
    for run in range(1, PERFTEST_CLOCK_RUNS + 1):
        port = free_tcp_port()
        prog = [tool, "-p", str(port)] + args
        p = memif_pair(name, prog, prog, port)
        if run == PERFTEST_CLOCK_RUNS or p.rc_c == 0 or not (
                PERFTEST_CLOCK_RE.search(p.out_c) or PERFTEST_CLOCK_RE.search(p.out_s)):
            break
        print("%s: perftest's clock calibration failed (load), run %d: again" % (name, run),
              flush=True)
    if not p.ok():
        return
    rows = perftest_rows(p.out_c)
    if not check(len(rows) >= nrows, "%s: %d result rows, want %d" % (name, len(rows), nrows)):
        print(p.out_c)
        return
    # bw: bytes iters peak avg msgrate (the rate: 2 B at a slow host's
    # 2,000 msg/s prints an average of 0.00 MB/s); lat: bytes iters min max
    # typical avg ...
    col = 4
    for r in rows:
        check(len(r) > col and r[col] > 0, "%s: zero figure in row %s" % (name, r))
    print("ok %s: %s" % (name, "; ".join("%d B %g" % (r[0], r[col]) for r in rows)), flush=True)


def case_perftest_bw():
    for tool in ("ib_read_bw", "ib_write_bw", "ib_send_bw"):
        for size, iters in ((2, 200), (4096, 200), (1 << 20, 20)):
            perftest(tool, ["-s", str(size), "-n", str(iters)])
    perftest("ib_atomic_bw", ["-n", "200"])


def case_perftest_lat():
    for tool in ("ib_read_lat", "ib_write_lat", "ib_send_lat"):
        for size, iters in ((2, 200), (4096, 200), (1 << 20, 10)):
            perftest(tool, ["-s", str(size), "-n", str(iters)])
    perftest("ib_atomic_lat", ["-n", "200"])


def case_perftest_opts():
    # every size from 2 B to 8 MiB (23 rows), four QPs, completion events
    perftest("ib_write_bw", ["-a", "-n", "10"], "ib_write_bw_all", nrows=23)
    perftest("ib_read_bw", ["-q", "4", "-s", "65536", "-n", "200"], "ib_read_bw_q4")
    perftest("ib_send_lat", ["-e", "-s", "4096", "-n", "200"], "ib_send_lat_events")
    perftest("ib_send_bw", ["-e", "-s", "8192", "-n", "200"], "ib_send_bw_events")


# ib_write_bw -s 64 posts one WR per ibv_post_send() (a CQE every 100:
# --cq-mod 100) and polls between its runs of posts. The drop-in leaves the
# engine to the next poll for a post right after a poll or such a post, up
# to SV_POST_BATCH (32) posts: the client's WRITEs leave in bursts and few
# of its posts run the engine themselves. When every post ran it (the 10
# us after the last poll only) this client's 20,000 WRITEs went in
# 19,000-20,000 bursts, one engine poll per post, on the ASan build.
BATCH_ITERS = 20000
BATCH_POSTS_RUN_MAX = 0.5   # share of the posts that ran the engine
BATCH_PKTS_PER_BURST_MIN = 2.0


def case_perftest_batch():
    port = free_tcp_port()
    prog = ["env", "SRNIC_STATS=1", "ib_write_bw", "-s", "64", "-n", str(BATCH_ITERS),
            "-p", str(port)]
    p = memif_pair("write_bw_batch", prog, prog, port)
    if not p.ok():
        return
    st = {k: int(v) for k, v in re.findall(r"^srnic:\s+(\w+)\s+(\d+)$", p.out_c, re.M)}
    want = ("tx_pkts", "tx_bursts", "verbs_runs_poll", "verbs_posts_deferred")
    if not check(all(k in st for k in want),
                 "SRNIC_STATS=1: the client's %s at exit: %r" % (", ".join(want), st)):
        print(p.out_c, flush=True)
        return
    posts_run = st.get("verbs_runs_post", 0)
    per_burst = st["tx_pkts"] / st["tx_bursts"]
    if check(st["tx_pkts"] >= BATCH_ITERS and posts_run <= BATCH_POSTS_RUN_MAX * BATCH_ITERS and
             per_burst >= BATCH_PKTS_PER_BURST_MIN,
             "ib_write_bw -s 64 -n %d: %d posts ran the engine (at most %d), %d packets in %d "
             "bursts (%.2f per burst, at least %.1f), %d posts deferred" %
             (BATCH_ITERS, posts_run, BATCH_POSTS_RUN_MAX * BATCH_ITERS, st["tx_pkts"],
              st["tx_bursts"], per_burst, BATCH_PKTS_PER_BURST_MIN, st["verbs_posts_deferred"])):
        print("ok ib_write_bw -s 64 -n %d: %d posts ran the engine, %d deferred; %d packets in %d "
              "bursts (%.2f per burst)" % (BATCH_ITERS, posts_run, st["verbs_posts_deferred"],
                                           st["tx_pkts"], st["tx_bursts"], per_burst), flush=True)


# ---- ibv_rc_pingpong ----

def pingpong(tool, argsets, iters=200):
    """ibv_*_pingpong -g 1 pairs: both sides report all their iterations
    (and, with -c, checked every received buffer)."""
    for args in argsets:
        name = tool.replace("ibv_", "") + "".join(args).replace("-", "_")
        port = free_tcp_port()
        prog = [tool, "-g", "1", "-n", str(iters), "-p", str(port)] + args
        p = memif_pair(name, prog, prog, port)
        if not p.ok():
            continue
        # srq_pingpong too reports -n exchanges in all (spread over its QPs)
        want = iters
        for side, out in (("server", p.out_s), ("client", p.out_c)):
            m = re.search(r"(\d+) iters in ([0-9.]+) seconds = ([0-9.]+) usec/iter", out)
            if check(m is not None and int(m.group(1)) == want,
                     "%s: %s did not report %d iterations" % (name, side, want)):
                print("ok %s %s: %s usec/iter" % (name, side, m.group(3)), flush=True)
    # SRNIC_STATS=1: the engine's nonzero counters at exit; each side sent
    # (req_msgs) and received (resp_pkts) its iters SENDs at least
    port = free_tcp_port()
    prog = ["env", "SRNIC_STATS=1", "ibv_rc_pingpong", "-g", "1", "-n", str(iters), "-p", str(port)]
    p = memif_pair("rc_pingpong_stats", prog, prog, port)
    if p.ok():
        for side, out in (("server", p.out_s), ("client", p.out_c)):
            c = dict(re.findall(r"^srnic:\s+(\w+)\s+(\d+)$", out, re.M))
            check("srnic: engine counters (nonzero)" in out and
                  int(c.get("req_msgs", 0)) >= iters and int(c.get("resp_pkts", 0)) >= iters,
                  "SRNIC_STATS=1: %s's counters at exit, req_msgs and resp_pkts >= %d: %r"
                  % (side, iters, c))


# ---- GID 0 ----

# Two memif ports of one host share memif's default MAC, so their link-local
# GIDs (fe80:: of the MAC) would be one address: each side gets its own.
GID0_MACS = ("02:00:00:00:00:01", "02:00:00:00:00:02")
GID0_LL = ("fe80::ff:fe00:1", "fe80::ff:fe00:2")


def case_gid0():
    """GID index 0 (fe80:: of the MAC, RoCEv2 over IPv6 link-local), as
    rdma-core's tests and libfabric pick it by default: ibv_*_pingpong -g 0
    and ib_send_bw -x 0 between two srnic processes, each side printing its
    own link-local GID and the peer's."""
    iters = 100
    for tool, args in (("ibv_rc_pingpong", ["-s", "4096", "-c"]),
                       ("ibv_uc_pingpong", ["-s", "2048", "-c"]),
                       ("ibv_ud_pingpong", ["-s", "1024", "-c"])):
        name = tool.replace("ibv_", "") + "_gid0"
        port = free_tcp_port()
        prog = [tool, "-g", "0", "-n", str(iters), "-p", str(port)] + args
        p = memif_pair(name, prog, prog, port, macs=GID0_MACS)
        if not p.ok():
            continue
        for i, (side, out) in enumerate((("server", p.out_s), ("client", p.out_c))):
            m = re.search(r"(\d+) iters in ([0-9.]+) seconds", out)
            check(m is not None and int(m.group(1)) == iters,
                  "%s: %s did all %d iterations, data checked" % (name, side, iters))
            check(re.search(r"local address:.*GID %s$" % GID0_LL[i], out, re.M) and
                  re.search(r"remote address:.*GID %s$" % GID0_LL[1 - i], out, re.M),
                  "%s: %s's GIDs are %s (local) and %s (remote)" %
                  (name, side, GID0_LL[i], GID0_LL[1 - i]))
        print("ok %s: %d iterations each way between %s and %s" % (name, iters, *GID0_LL),
              flush=True)
    for run in range(1, PERFTEST_CLOCK_RUNS + 1):
        port = free_tcp_port()
        prog = ["ib_send_bw", "-x", "0", "-s", "4096", "-n", "200", "-p", str(port)]
        p = memif_pair("ib_send_bw_gid0", prog, prog, port, macs=GID0_MACS)
        if run == PERFTEST_CLOCK_RUNS or p.rc_c == 0 or not (
                PERFTEST_CLOCK_RE.search(p.out_c) or PERFTEST_CLOCK_RE.search(p.out_s)):
            break
    if p.ok():
        rows = perftest_rows(p.out_c)
        check(len(rows) == 1 and rows[0][4] > 0, "ib_send_bw -x 0: a nonzero figure: %r" % rows)
        # perftest prints a GID's 16 bytes in decimal
        check("GID: 254:128:00:00:00:00:00:00:00:00:00:255:254:00:00:02" in p.out_c,
              "ib_send_bw -x 0: the client's GID is fe80::ff:fe00:2")
        print("ok ib_send_bw -x 0: %r" % rows, flush=True)


HUGE_PAGES_NEEDED = 128     # free 2 MiB pages to try SRNIC_HUGE=1 (a device took 56 here)
LOSSY_DROP = "0.05"     # SRNIC_DROP of the lossy pingpong: ~15 of each side's first 300 packets
# SRNIC_DROP_FIRST: the loss among each side's first packets only (of ~600
# each receives). ibv_rc_pingpong has no closing exchange: a side whose last
# ACK is lost after its peer has exited resends until its retry_cnt 7 is
# spent and fails (when 7 never ran out, as with rxe, it hung 1 suite run of
# the first soak: the server done and gone, the client resending).
LOSSY_FIRST = "300"


def case_rc_pingpong():
    pingpong("ibv_rc_pingpong", (["-s", "64"], ["-s", "4096", "-c"], ["-s", "10000", "-c"],
                                 ["-s", "3000", "-e"], ["-s", "8192", "-e", "-c"]))
    rc_pingpong_exit_ack()
    # Loss under a program that blocks (-e: ibv_get_cq_event between
    # messages): a lost tail packet or ACK is only resent when the ACK
    # timer fires, which the progress thread must run while the program
    # sleeps. SRNIC_DROP drops that share of each side's received packets.
    port = free_tcp_port()
    iters = 100
    prog = ["env", "SRNIC_STATS=1", "SRNIC_DROP=" + LOSSY_DROP, "SRNIC_DROP_FIRST=" + LOSSY_FIRST,
            "ibv_rc_pingpong", "-g", "1",
            "-e", "-c", "-s", "4096", "-n", str(iters), "-p", str(port)]
    p = memif_pair("rc_pingpong_lossy", prog, prog, port)
    if p.ok():
        tot = {}
        for side, out in (("server", p.out_s), ("client", p.out_c)):
            m = re.search(r"(\d+) iters in ([0-9.]+) seconds", out)
            check(m is not None and int(m.group(1)) == iters,
                  "lossy -e: %s did all %d iterations, data checked" % (side, iters))
            for k, v in re.findall(r"^srnic:\s+(\w+)\s+(\d+)$", out, re.M):
                tot[k] = tot.get(k, 0) + int(v)
        if check(tot.get("lossy_drop", 0) > 0 and tot.get("retry_timeout", 0) > 0 and
                 tot.get("retransmit_pkts", 0) > 0,
                 "lossy -e: packets dropped, ACK timers fired, packets resent: %r" %
                 {k: tot.get(k) for k in ("lossy_drop", "retry_timeout", "retransmit_pkts")}):
            print("ok rc_pingpong -e over SRNIC_DROP=%s of the first %s: %d dropped, %d "
                  "timeouts, %d resent" % (LOSSY_DROP, LOSSY_FIRST, tot["lossy_drop"],
                                           tot["retry_timeout"], tot["retransmit_pkts"]),
                  flush=True)


APP_GUARD_S = 60        # a pair that blocks in SRNIC_PROGRESS=app this long has hung


def case_progress_app():
    # SRNIC_PROGRESS=app (no progress thread): a program that blocks in
    # ibv_get_cq_event() (rc_pingpong -e) or ibv_get_async_event()
    # (ibv_asyncwatch) drives the device from that wait (
    # nothing ran the engine, and the pair hung)
    port = free_tcp_port()
    iters = 100
    prog = ["env", "SRNIC_PROGRESS=app", "ibv_rc_pingpong", "-g", "1", "-e", "-c", "-s", "4096",
            "-n", str(iters), "-p", str(port)]
    p = memif_pair("rc_pingpong_app", prog, prog, port, guard=APP_GUARD_S)
    if p.ok():
        for side, out in (("server", p.out_s), ("client", p.out_c)):
            m = re.search(r"(\d+) iters in ([0-9.]+) seconds", out)
            if check(m is not None and int(m.group(1)) == iters,
                     "SRNIC_PROGRESS=app -e: %s did all %d iterations, data checked" %
                     (side, iters)):
                print("ok rc_pingpong -e -c under SRNIC_PROGRESS=app: %s %s iters" %
                      (side, m.group(1)), flush=True)
    # ibv_asyncwatch as the memif server: its link comes up when the
    # client connects, after its context opened: one PORT_ACTIVE, which
    # reaches it only through its own ibv_get_async_event()
    sock, sport, cport = memif_ports("asyncwatch_app")
    env = run_env()
    outs = os.path.join(TMP, "asyncwatch_app.server.log")
    watch = ["env", "SRNIC_PROGRESS=app", "stdbuf", "-oL", "ibv_asyncwatch"]
    with open(outs, "w") as fs:
        ps = subprocess.Popen(srnic_run(sport, "10.77.0.1", watch), stdout=fs,
                              stderr=subprocess.STDOUT, env=env)
    # the client once the server's memif socket listens (abstract by default)
    deadline = time.monotonic() + LISTEN_GUARD_S
    while sock not in open("/proc/net/unix").read() and ps.poll() is None:
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    pc = subprocess.Popen(srnic_run(cport, "10.77.0.2", ["ibv_asyncwatch"]),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + APP_GUARD_S
    text = ""
    while time.monotonic() < deadline and ps.poll() is None:
        text = open(outs).read()
        if "IBV_EVENT_PORT_ACTIVE" in text:
            break
        time.sleep(0.05)
    for pr in (pc, ps):
        if pr.poll() is None:
            pr.send_signal(signal.SIGINT)
        try:
            pr.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
    if check(re.search(r"event_type IBV_EVENT_PORT_ACTIVE \(\d+\), port 1", text),
             "SRNIC_PROGRESS=app: ibv_asyncwatch got PORT_ACTIVE: %r" % text[-500:]):
        print("ok ibv_asyncwatch under SRNIC_PROGRESS=app: PORT_ACTIVE on port 1", flush=True)


# The server's engine stops polling once its last SEND has left, for
# EXIT_ACK_STALL_MS: the client gets that SEND, ACKs it and exits meanwhile
# (150-300 ms here, ASan build). Without the drop-in's exit linger the
# server's memif dropped the ACK unread at the disconnect and the server
# resent its SEND for good (hung 2 runs of 2 at 300 ms, as the suite's
# rc_pingpong_stats once on a loaded host, when retry_cnt 7 was unlimited;
# now it fails after 8 timeouts); the client lingers
# EXIT_ACK_LINGER_MS after its last packet, so the ACK is read when the
# stall ends. (The default linger, 200 ms, is for a peer that polls every
# millisecond at most when idle; the stall here stands for a very slow one.)
EXIT_ACK_STALL_MS = 500
EXIT_ACK_LINGER_MS = 3000
EXIT_ACK_GUARD_S = 30   # a server still resending by then never ends


def rc_pingpong_exit_ack():
    port = free_tcp_port()
    iters = 20
    prog = ["ibv_rc_pingpong", "-g", "1", "-n", str(iters), "-p", str(port)]
    server = ["env", "SRNIC_STATS=1", "SRNIC_STALL_AFTER=%d" % iters,
              "SRNIC_STALL_MS=%d" % EXIT_ACK_STALL_MS] + prog
    client = ["env", "SRNIC_EXIT_LINGER_MS=%d" % EXIT_ACK_LINGER_MS] + prog
    p = memif_pair("rc_pingpong_exit_ack", server, client, port, guard=EXIT_ACK_GUARD_S)
    if p.ok():
        c = dict(re.findall(r"^srnic:\s+(\w+)\s+(\d+)$", p.out_s, re.M))
        check("SRNIC_STALL_AFTER: stalled for %d ms" % EXIT_ACK_STALL_MS in p.out_s,
              "exit_ack: the server's engine stalled after its last SEND")
        print("ok rc_pingpong_exit_ack: the client's last ACK reached a server stalled %d ms "
              "(timeouts %s, retransmits %s)" % (EXIT_ACK_STALL_MS, c.get("retry_timeout", 0),
                                                c.get("retransmit_pkts", 0)), flush=True)


def case_ud_pingpong():
    # one datagram per message: up to the port's active MTU (1024 at the
    # default 1500-byte MTU); ud_pingpong posts receives of size + 40 (GRH)
    pingpong("ibv_ud_pingpong", (["-s", "64", "-c"], ["-s", "1024", "-c"], ["-s", "512", "-e"],
                                 ["-s", "1024", "-e", "-c"]))
    # a size over the MTU: refused by the tool itself, after its port query
    port = free_tcp_port()
    out = subprocess.run(srnic_run(memif_ports("ud_big")[1], "10.77.0.1",
                                   ["ibv_ud_pingpong", "-g", "1", "-s", "2048", "-p", str(port)]),
                         env=run_env(), capture_output=True, text=True, timeout=GUARD_S)
    check(out.returncode != 0 and "larger than port MTU (1024)" in out.stdout + out.stderr,
          "ud_pingpong -s 2048: refused against active MTU 1024: %r" % (out.stdout + out.stderr))


def case_uc_pingpong():
    # UC splits by the path MTU as RC does (-m 1024, its default and the
    # port's active MTU at 1500): sizes over it, with and without events
    pingpong("ibv_uc_pingpong", (["-s", "64", "-c"], ["-s", "4096", "-c"], ["-s", "10000", "-c"],
                                 ["-s", "3000", "-e"], ["-s", "8192", "-e", "-c"]))


def case_srq_pingpong():
    # 16 QPs on one SRQ (its default), then 4; sizes over the path MTU
    pingpong("ibv_srq_pingpong", (["-s", "64", "-c"], ["-s", "4096", "-c"],
                                  ["-q", "4", "-s", "10000", "-c"], ["-q", "4", "-s", "3000", "-e"]),
             iters=100)


def case_api():
    # test/verbs/verbs_api.c: built against the system's verbs.h and
    # libibverbs only; RC over an SRQ, UD, async events (SRQ limit, SQ
    # drained, QP fatal, last WQE, CQ error, port active), posting on one
    # thread while another polls, resize_cq (also with completions held), bad
    # arguments (post_send's ENOMEM and EINVAL too), the GID table, destroy
    # order, malloc/mmap/stack memory; UD multicast (attach, a send to the
    # group received, the attach errors); the extended verbs (query_device_ex,
    # create_cq_ex polled with start_poll and the readers, create_qp_ex's
    # ibv_wr_* batches: whole, or refused with nothing queued)
    if API is None:
        print("skip: verbs_api not built (no libibverbs pkg-config)")
        sys.exit(SKIP)
    port = free_tcp_port()
    p = memif_pair("api", [API, "server", str(port)], [API, "client", str(port)], port)
    # (memif_pair adds 127.0.0.1 to the client's arguments: verbs_api ignores it)
    if p.ok():
        for side, out in (("server", p.out_s), ("client", p.out_c)):
            n = len([l for l in out.splitlines() if l.startswith("ok ")])
            check("%s: all ok" % side in out, "api: %s reports all ok" % side)
            want = {"server": 220, "client": 230}[side]
            check(n >= want, "api: %s passed %d checks, want %d" % (side, n, want))
            print("ok api %s: %d checks" % (side, n), flush=True)
        # the spaced posts' count (phase_aged_posts), for the log
        for l in p.out_s.splitlines():
            if "apart after one poll" in l:
                print("api server: " + l, flush=True)


def case_fork():
    # test/verbs/verbs_fork.c: one process, two RC QPs over the in-device
    # loopback on a memif server port; fork(): the child's verbs on the
    # parent's device each get EIO (the device list ENODEV), one stderr
    # line, no crash, its exit() leaves the parent's socket file; then the
    # parent's WRITE and SEND land, byte for byte
    if FORK is None:
        print("skip: verbs_fork not built (no libibverbs pkg-config)")
        sys.exit(SKIP)
    sock, sport, _ = memif_ports("fork")
    # a socket file on disk (not abstract): the child's exit must leave it
    cmd = srnic_run(sport + ",socket-abstract=no", "10.77.0.1", [FORK, sock])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=run_env(), timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        check(False, "fork: verbs_fork hung for %d s" % GUARD_S)
        return
    out = r.stdout + r.stderr
    n = len([l for l in r.stdout.splitlines() if l.startswith("ok ")])
    check(r.returncode == 0 and "all ok" in r.stdout, "fork: verbs_fork exit %d" % r.returncode)
    check(n >= 30, "fork: %d checks passed, want 30" % n)
    check("AddressSanitizer" not in out, "fork: no ASan report")
    if failures:
        print(out, flush=True)
    else:
        print("ok fork: %d checks" % n, flush=True)



def thread_lcore_max():
    # drivers/verbs/verbs.h's SV_THREAD_LCORE_MAX: the program's threads
    # that hold an lcore id of the drop-in's at once
    h = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "drivers",
                     "verbs", "verbs.h")
    with open(h) as f:
        m = re.search(r"^#define SV_THREAD_LCORE_MAX (\d+)", f.read(), re.M)
    if m is None:
        raise SystemExit("no '#define SV_THREAD_LCORE_MAX N' in %s" % h)
    return int(m.group(1))


def case_lcore():
    # test/verbs/verbs_lcore.c: the threads that drive the engine (not the
    # opener) each get an lcore id while they drive, 200 one after another
    # (given back at exit), none past the cap or with DPDK's used up (the
    # traffic still flows); SRNIC_STATS=1's counters and the one log line
    if LCORE is None:
        print("skip: verbs_lcore not built (no libibverbs pkg-config)")
        sys.exit(SKIP)
    _, sport, _ = memif_ports("lcore")
    env = run_env()
    env["SRNIC_PROGRESS"] = "app"
    env["SRNIC_STATS"] = "1"
    cap = thread_lcore_max()
    cmd = srnic_run(sport, "10.77.0.1", [LCORE, str(cap)])
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        check(False, "lcore: verbs_lcore hung for %d s" % GUARD_S)
        return
    out = r.stdout + r.stderr
    n = len([l for l in r.stdout.splitlines() if l.startswith("ok ")])
    check(r.returncode == 0 and "all ok" in r.stdout, "lcore: verbs_lcore exit %d" % r.returncode)
    check(n == 11, "lcore: %d checks passed, want 11" % n)
    st = {k: int(v) for k, v in re.findall(r"^srnic:\s+(\w+)\s+(\d+)$", r.stderr, re.M)}
    # the second thread, 200 in a row, the cap's parked ones, the one past
    # it once they were gone, the last
    taken = 1 + 200 + cap + 1 + 1
    check(st.get("verbs_thread_lcores") == taken and
          st.get("verbs_thread_lcores_released") == taken,
          "lcore: SRNIC_STATS=1 verbs_thread_lcores %s, _released %s, want %d each" %
          (st.get("verbs_thread_lcores"), st.get("verbs_thread_lcores_released"), taken))
    # the parked thread past the cap, the WRITE past it, the WRITE with none left
    check(st.get("verbs_thread_lcore_none") == 3,
          "lcore: verbs_thread_lcore_none %s, want 3" % st.get("verbs_thread_lcore_none"))
    said = len(re.findall(r"without an lcore id until", r.stderr))
    check(said == 1, "lcore: the log says 'without an lcore id until' %d times, want once" % said)
    check("AddressSanitizer" not in out, "lcore: no ASan report")
    if failures:
        print(out, flush=True)
    else:
        print("ok lcore: %d checks, %d ids taken and given back, %d threads without" %
              (n, taken, st["verbs_thread_lcore_none"]), flush=True)


def case_perftest_ud():
    # perftest's UD: -s up to the MTU (it posts receives of size + 40)
    for tool in ("ib_send_bw", "ib_send_lat"):
        for size in (2, 1024):
            perftest(tool, ["-c", "UD", "-s", str(size), "-n", "200"])
    perftest("ib_send_bw", ["-c", "UD", "-a", "-n", "100"], "ib_send_bw_ud_all", nrows=10)
    perftest("ib_send_bw", ["-c", "UC", "-s", "65536", "-n", "200"], "ib_send_bw_uc")
    perftest("ib_write_bw", ["-c", "UC", "-s", "65536", "-n", "200"], "ib_write_bw_uc")


# ---- ibv_devices, ibv_devinfo, startup and cleanup ----

def dpdk_run_dirs():
    try:
        return {d for d in os.listdir("/var/run/dpdk") if d.startswith("srnic-")}
    except OSError:
        return set()


def case_devinfo():
    env = run_env()
    sock, sport, _ = memif_ports("devinfo")
    out = subprocess.run(srnic_run(sport, "10.77.0.9", ["ibv_devices"]), env=env,
                         capture_output=True, text=True, timeout=GUARD_S)
    check(out.returncode == 0 and re.search(r"^\s+srnic0\s+[0-9a-f]{16}$", out.stdout, re.M),
          "ibv_devices lists srnic0 with its GUID: %r" % out.stdout)
    out = subprocess.run(srnic_run(sport, "10.77.0.9", ["ibv_devinfo", "-v"]), env=env,
                         capture_output=True, text=True, timeout=GUARD_S)
    text = out.stdout
    check(out.returncode == 0, "ibv_devinfo -v exit %d: %s" % (out.returncode, out.stderr))
    want = [r"hca_id:\s+srnic0", r"transport:\s+InfiniBand \(0\)",
            r"state:\s+PORT_ACTIVE \(4\)", r"link_layer:\s+Ethernet",
            r"active_mtu:\s+1024 \(3\)", r"max_mtu:\s+4096 \(5\)",
            r"max_qp_rd_atom:\s+([1-9]\d*)", r"max_qp_init_rd_atom:\s+([1-9]\d*)",
            r"max_qp_wr:\s+([1-9]\d*)", r"max_ah:\s+65536", r"max_cqe:\s+([1-9]\d*)", r"phys_port_cnt:\s+1",
            r"atomic_cap:\s+ATOMIC_HCA", r"gid_tbl_len:\s+3", r"pkey_tbl_len:\s+1",
            r"GID\[\s*0\]:\s+fe80::[0-9a-f:]+, RoCE v2",
            r"GID\[\s*1\]:\s+::ffff:10\.77\.0\.9, RoCE v2"]
    for w in want:
        check(re.search(w, text), "ibv_devinfo -v shows %s" % w)
    check(not os.path.exists(sock), "memif socket left behind after ibv_devinfo")
    # an IPv6 address (--ip6, SRNIC_IP6): GID 1, the link-local GID 0 beside it
    run6 = lambda a6: [SRNIC, "run", "--port", sport, "--ip6", a6, "--", "ibv_devinfo", "-v"]
    out = subprocess.run(run6("fd00:77::9/64"), env=env, capture_output=True, text=True,
                         timeout=GUARD_S)
    check(out.returncode == 0 and
          re.search(r"GID\[\s*1\]:\s+fd00:77::9, RoCE v2", out.stdout) and
          re.search(r"GID\[\s*0\]:\s+fe80::[0-9a-f:]+, RoCE v2", out.stdout),
          "ibv_devinfo -v of --ip6 fd00:77::9/64 lists GID 1 fd00:77::9 and GID 0 fe80:: (%s)" %
          out.stderr.strip()[-300:])
    for a6, why in (("fe80::9", "is not a unicast IPv6 address"),
                    ("10.77.0.9", "is not a unicast IPv6 address"),
                    ("fd00:77::9/129", "the prefix length after / is 1 to 128")):
        out = subprocess.run(run6(a6), env=env, capture_output=True, text=True, timeout=GUARD_S)
        check("srnic0" not in out.stdout and "SRNIC_IP6=%s" % a6 in out.stderr and
              why in out.stderr, "--ip6 %s: no device, '%s' (%s)" % (a6, why,
                                                                   out.stderr.strip()[-300:]))
    # both (--ip and --ip6): GID 1 the IPv4-mapped address, GID 2 the IPv6
    # one, GID 0 link-local; with one address GID 2 is empty and not listed
    check(not re.search(r"GID\[\s*2\]", text), "ibv_devinfo -v of --ip alone: no GID 2")
    out = subprocess.run([SRNIC, "run", "--port", sport, "--ip", "10.77.0.9", "--ip6",
                          "fd00:77::9/64", "--", "ibv_devinfo", "-v"], env=env,
                         capture_output=True, text=True, timeout=GUARD_S)
    gids = re.findall(r"GID\[\s*(\d+)\]:\s+(\S+), RoCE v2", out.stdout)
    check(out.returncode == 0 and len(gids) == 3 and gids[0][0] == "0" and
          gids[0][1].startswith("fe80::") and gids[1:] == [("1", "::ffff:10.77.0.9"),
                                                             ("2", "fd00:77::9")],
          "ibv_devinfo -v of --ip 10.77.0.9 --ip6 fd00:77::9/64: GID 0 fe80::, 1 "
          "::ffff:10.77.0.9, 2 fd00:77::9: %s (%s)" % (gids, out.stderr.strip()[-300:]))
    e2 = dict(env, SRNIC_IP6="fe80::9")
    out = subprocess.run(srnic_run(sport, "10.77.0.9", ["ibv_devinfo"]), env=e2,
                         capture_output=True, text=True, timeout=GUARD_S)
    check("srnic0" not in out.stdout and "SRNIC_IP6=fe80::9 is not a unicast" in out.stderr,
          "SRNIC_IP with SRNIC_IP6 link-local: no device, the line says why (%s)" %
          out.stderr.strip()[-300:])
    out = subprocess.run(srnic_run(sport + ",socket-abstract=no", "10.77.0.9", ["ibv_devices"]),
                         env=env, capture_output=True, text=True, timeout=GUARD_S)
    check("srnic0" in out.stdout and not os.path.exists(sock),
          "memif socket file (socket-abstract=no) removed at exit")
    # EAL's runtime directory: none left by a program that exits; the one
    # of a program killed with SIGKILL goes at the next srnic program's start
    rdir = "/var/run/dpdk" if os.geteuid() == 0 else \
        os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
    port = free_tcp_port()
    _, ksport, _ = memif_ports("devinfo_kill")
    victim = subprocess.Popen(srnic_run(ksport, "10.77.0.9", ["ibv_rc_pingpong", "-g", "1", "-p",
                                                            str(port)]),
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + LISTEN_GUARD_S
    while not listening(port) and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    vdir = os.path.join(rdir, "srnic-%d" % victim.pid)
    check(os.path.isdir(vdir), "a running drop-in program has its EAL dir %s" % vdir)
    victim.kill()
    victim.wait()
    check(os.path.isdir(vdir), "SIGKILL left %s (nothing ran at its exit)" % vdir)
    nxt = subprocess.Popen(srnic_run(sport, "10.77.0.9", ["ibv_devices"]), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out_n = nxt.communicate(timeout=GUARD_S)[0]
    check(nxt.returncode == 0 and "srnic0" in out_n, "ibv_devices after the kill: %r" % out_n)
    check(not os.path.exists(vdir), "the killed program's %s removed by the next start" % vdir)
    check(not os.path.exists(os.path.join(rdir, "srnic-%d" % nxt.pid)),
          "ibv_devices left no EAL dir behind")
    # a larger MTU gives a larger active_mtu
    out = subprocess.run([SRNIC, "run", "--port", sport, "--ip", "10.77.0.9", "--mtu", "9000",
                          "--", "ibv_devinfo"], env=env, capture_output=True, text=True,
                         timeout=GUARD_S)
    check(re.search(r"active_mtu:\s+4096 \(5\)", out.stdout), "--mtu 9000: active_mtu 4096")
    # unconfigured: no device, one line saying what to set
    env2 = {k: v for k, v in env.items() if not k.startswith("SRNIC_") or k == "SRNIC_VERBS_LIB"}
    out = subprocess.run([SRNIC, "run", "--", "ibv_devices"], env=env2, capture_output=True,
                         text=True, timeout=GUARD_S)
    lines = out.stderr.strip().splitlines()
    check(out.returncode == 0 and "srnic0" not in out.stdout, "unconfigured: no device listed")
    check(len(lines) == 1 and "SRNIC_PORT" in lines[0] and "SRNIC_IP" in lines[0],
          "unconfigured: one line naming SRNIC_PORT and SRNIC_IP: %r" % out.stderr)
    devinfo_errors(env, env2, sport)
    # the same configuration from a file
    conf = os.path.join(TMP, "srnic.conf")
    with open(conf, "w") as f:
        f.write("# test\nSRNIC_PORT=%s\nSRNIC_IP=10.77.0.10\n" % sport)
    out = subprocess.run([SRNIC, "run", "--config", conf, "--", "ibv_devinfo", "-v"], env=env2,
                         capture_output=True, text=True, timeout=GUARD_S)
    check(re.search(r"GID\[\s*1\]:\s+::ffff:10\.77\.0\.10, RoCE v2", out.stdout),
          "--config FILE: the file's SRNIC_IP")
    # killed with SIGINT while it waits for its client: files go with it
    # (a memif socket file: DPDK's default is an abstract socket)
    sport += ",socket-abstract=no"
    p = read_bw_waiting(sport, env)
    check(os.path.exists(sock), "memif server socket exists while ib_read_bw waits")
    p.send_signal(signal.SIGINT)
    rc = p.wait(timeout=GUARD_S)
    check(rc == -signal.SIGINT, "ib_read_bw killed by SIGINT (rc %d)" % rc)
    check(not os.path.exists(sock), "memif socket removed on SIGINT")
    # its own directory (srnic-<pid>: run execs the program), not those of
    # other srnic processes of this host that may come and go meanwhile
    check("srnic-%d" % p.pid not in dpdk_run_dirs(), "no DPDK runtime dir left (srnic-%d)" % p.pid)
    devinfo_hugepages(sport, free_tcp_port())


def read_bw_waiting(sport, env):
    """An ib_read_bw server over srnic on sport, once it waits for its
    client (listening on its TCP port), or gone."""
    port = free_tcp_port()
    p = subprocess.Popen(srnic_run(sport, "10.77.0.9", ["ib_read_bw", "-p", str(port)]), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + LISTEN_GUARD_S
    while not listening(port) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    return p


def devinfo_errors(env, env2, sport):
    """Each configuration error names what is wrong and what to do (they
    all said "made no DPDK port (is its PMD installed?)"
    or "set SRNIC_PORT and SRNIC_IP")."""
    def err(args, base=env):
        out = subprocess.run([SRNIC, "run"] + args + ["--", "ibv_devices"], env=base,
                             capture_output=True, text=True, timeout=GUARD_S)
        return out.stderr
    e = err(["--port", sport])
    check("SRNIC_IP" in e and "--ip A.B.C.D" in e and "SRNIC_PORT (" not in e,
          "no --ip alone: says to set SRNIC_IP only: %r" % e)
    e = err(["--ip", "10.77.0.9"], env2)
    check("SRNIC_PORT" in e and "has no port" in e, "no --port alone: says SRNIC_PORT: %r" % e)
    e = err(["--port", "net_memif0,role=bogus,socket=%s" % os.path.join(TMP, "bogus.sock"),
             "--ip", "10.77.0.9"])
    check("role=bogus: a memif port's role is server or client" in e, "bad memif role: %r" % e)
    e = err(["--port", "net_af_packet0,iface=srnicnone0", "--ip", "10.77.0.9"])
    check("no network interface srnicnone0" in e, "missing af_packet interface: %r" % e)
    e = err(["--port", "net_nosuchpmd0", "--ip", "10.77.0.9"])
    check("no DPDK driver for SRNIC_PORT=net_nosuchpmd0" in e, "no such driver: %r" % e)
    e = err(["--port", "net_memif0,role=client,socket=%s" % os.path.join(TMP, "noserver.sock"),
             "--ip", "10.77.0.9"])
    check("Start the server (role=server, the same socket=) first" in e,
          "memif client with no server: %r" % e)
    # the slow-peer knob's values (it took any text as 0 and said nothing)
    e = err(["--port", sport, "--ip", "10.77.0.9"],
            dict(env, SRNIC_STALL_AFTER="20", SRNIC_STALL_MS="soon"))
    check("SRNIC_STALL_MS=soon is not a time in ms up to 60000" in e,
          "SRNIC_STALL_MS not a number: says so: %r" % e)
    e = err(["--port", sport, "--ip", "10.77.0.9"],
            dict(env, SRNIC_STALL_AFTER="-1", SRNIC_STALL_MS="500"))
    check("SRNIC_STALL_AFTER=-1 is not a count of request messages" in e,
          "SRNIC_STALL_AFTER not a count: says so: %r" % e)
    # a second server on a socket a server holds (ib_read_bw waiting for
    # its client on sport's socket)
    p = read_bw_waiting(sport, env)
    e = err(["--port", sport, "--ip", "10.77.0.8"])
    check("is in use by another memif server" in e, "memif socket in use: %r" % e)
    p.send_signal(signal.SIGINT)
    p.wait(timeout=GUARD_S)


def hugepages_free():
    with open("/proc/meminfo") as f:
        m = re.search(r"^HugePages_Free:\s+(\d+)", f.read(), re.M)
    return int(m.group(1)) if m else 0


def hugetlb_held(pid):
    """The hugepage memory (kB) process pid has mapped and the files
    behind it (hugetlbfs; not memfds), from its own /proc/PID/smaps: the
    host's free count moves whenever another DPDK program starts or stops
    ('-21 pages in use')."""
    kb, files, path = 0, set(), None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split(None, 5)
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                path = head[5].strip() if len(head) > 5 else ""
            elif head[0] in ("Shared_Hugetlb:", "Private_Hugetlb:") and int(head[1]) > 0:
                kb += int(head[1])
                if path.startswith("/") and not path.startswith("/memfd:"):
                    files.add(path.removesuffix(" (deleted)"))
    return kb, files


def devinfo_hugepages(sport, port):
    """SRNIC_HUGE=1: the engine's memory on hugepages (EAL --in-memory: no
    files), all of them gone with the program when it is killed with SIGINT.
    What the program holds is read from its own mappings, not the host's
    free count, which other DPDK programs move meanwhile."""
    free0 = hugepages_free()
    if free0 < HUGE_PAGES_NEEDED:
        print("skip hugepages: %d free, %d needed (usertools/srnic setup reserves them)" %
              (free0, HUGE_PAGES_NEEDED), flush=True)
        return
    env = run_env()
    env["SRNIC_HUGE"] = "1"
    p = subprocess.Popen(srnic_run(sport, "10.77.0.9", ["ib_read_bw", "-p", str(port)]), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + LISTEN_GUARD_S
    while not listening(port) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    # run execs the program: p.pid is ib_read_bw's
    kb, files = hugetlb_held(p.pid) if p.poll() is None else (0, set())
    check(p.poll() is None and kb > 0,
          "SRNIC_HUGE=1: ib_read_bw waits on hugepages (%d kB mapped)" % kb)
    p.send_signal(signal.SIGINT)
    out = p.communicate(timeout=GUARD_S)[0]
    check(p.returncode == -signal.SIGINT, "SRNIC_HUGE=1: killed by SIGINT (rc %d): %s" %
          (p.returncode, out[-400:]))
    # reaped: its mappings went with it; a page outlives it only in a file
    check(not os.path.exists("/proc/%d" % p.pid), "SRNIC_HUGE=1: the process is gone")
    left = [f for f in files if os.path.exists(f)]
    check(not left, "SRNIC_HUGE=1: no hugetlbfs file of it left: %s" % left)
    mine = "srnic-%d" % p.pid
    left = [f for f in os.listdir("/dev/hugepages") if f.startswith(mine)] \
        if os.path.isdir("/dev/hugepages") else []
    check(not left, "SRNIC_HUGE=1: no file of its prefix in /dev/hugepages: %s" % left)
    print("ok hugepages: %d kB mapped (%d files) while it ran, none left after SIGINT" %
          (kb, len(files)), flush=True)


def case_symbols():
    lib = os.path.join(LIB, "libibverbs.so.1")
    out = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
    check("Library soname: [libibverbs.so.1]" in out, "SONAME libibverbs.so.1")
    out = subprocess.run(["nm", "-D", "--with-symbol-versions", "--defined-only", lib],
                         capture_output=True, text=True).stdout
    got = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] != "A" and "@@" in f[2]:
            got.add(tuple(f[2].split("@@")))
    want = {tuple(l.split()) for l in open(SYMBOLS) if l.strip()}
    check(len(want) == 146, "rdma-core 44 list has 146 symbols (%d)" % len(want))
    check(want - got == set(), "missing: %s" % sorted(want - got)[:10])
    # srnic's own node for its librdmacm.so.1 (drivers/verbs/srnic_verbs_private.h)
    private = {g for g in got if g[1] == "SRNIC_VERBS_PRIVATE_1"}
    check({"srnic_verbs_private_get", "srnic_verbs_set_cm_hook", "srnic_verbs_cm_progress",
           "srnic_cm_send_req"} <= {g[0] for g in private} and
          all(g[0].startswith("srnic_") for g in private),
          "SRNIC_VERBS_PRIVATE_1: srnic's own calls for its librdmacm: %s" % sorted(private))
    # EAL's four interrupt calls, under librte_eal.so.23's own nodes, for
    # the memif server guard (lib/core/port.c; case memif_hangups)
    eal = {("rte_intr_callback_register", "DPDK_23"), ("rte_intr_callback_unregister", "DPDK_23"),
           ("rte_intr_callback_unregister_pending", "DPDK_23"),
           ("rte_intr_instance_free", "EXPERIMENTAL")}
    check(eal <= got, "EAL's interrupt calls for memif: missing %s" % sorted(eal - got))
    check(got - want - private - eal == set(),
          "extra exported: %s" % sorted(got - want - private - eal)[:10])
    data = [l for l in out.splitlines() if "verbs_allow_disassociate_destroy" in l]
    check(data and data[0].split()[1] in "BDbd", "verbs_allow_disassociate_destroy is data")
    # perftest's tools load libmlx5/libefa (BIND_NOW): all of them resolve
    env = run_env()
    out = subprocess.run(["ldd", "-r", shutil.which("ib_read_bw")],
                         env={**env, "LD_LIBRARY_PATH": LIB}, capture_output=True, text=True)
    check("undefined symbol" not in out.stdout + out.stderr,
          "ib_read_bw's libraries resolve against ours: %s" % out.stderr[:300])
    check(LIB in out.stdout, "ib_read_bw takes our libibverbs.so.1")


# ---- af_packet on a veth pair in a namespace of our own ----

def netns_or_skip():
    """Skip (meson's 77) where no namespace and veth pair can be made."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("skip: needs root and iproute2 (a netns and a veth pair)")
        sys.exit(SKIP)


@contextlib.contextmanager
def veth_netns(tag, ends, addrs=()):
    """A network namespace of the test's own (srnic-TAG-PID) with lo and a
    veth pair ends[0] <-> ends[1] up, each end given the kernel address
    (A.B.C.D/N) addrs holds for it; deleted on leaving."""
    ns = "srnic-%s-%d" % (tag, os.getpid())
    sh = lambda *a: subprocess.run(["ip", "netns", "exec", ns] + list(a), check=True)
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        sh("ip", "link", "set", "lo", "up")
        sh("ip", "link", "add", ends[0], "type", "veth", "peer", "name", ends[1])
        for end, addr in zip(ends, addrs):
            sh("ip", "addr", "add", addr, "dev", end)
        for end in ends:
            sh("ip", "link", "set", end, "up")
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns])


def case_af_packet():
    netns_or_skip()
    with veth_netns("verbs", ("sva", "svb")) as ns:
        for tool, args in (("ib_read_bw", ["-s", "65536", "-n", "200"]),
                           ("ibv_rc_pingpong", ["-g", "1", "-s", "4096", "-n", "100", "-c"])):
            port = free_tcp_port()
            prog = [tool, "-p", str(port)] + args
            p = Pair("af_packet_" + tool,
                     srnic_run("net_af_packet0,iface=sva", "10.78.0.1", prog, ns),
                     srnic_run("net_af_packet0,iface=svb", "10.78.0.2", prog + ["127.0.0.1"], ns),
                     port, ns)
            if p.ok():
                print("ok af_packet %s" % tool, flush=True)
                if tool == "ib_read_bw":
                    rows = perftest_rows(p.out_c)
                    check(rows and rows[0][4] > 0, "af_packet ib_read_bw: a nonzero figure")


# ---- a memif server and local processes that connect and go at once ----

MEMIF_HANGUPS = 300     # hostile connections before the real client


def memif_hangup(sock):
    """One connection to memif's abstract socket, closed at once: 1 made,
    0 not now (memif's backlog of 1 full), -1 refused (no server)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.setblocking(False)
        try:
            s.connect("\0" + sock)
        except BlockingIOError:
            return 0
        except OSError:
            return -1
    return 1


def memif_hangups(sock, ps):
    """MEMIF_HANGUPS connections to the memif server ps listens with, each
    closed at once (fewer if ps goes): how many were made."""
    made = tries = 0
    deadline = time.monotonic() + LISTEN_GUARD_S
    # the memif socket listens from EAL's init, before the device is made
    while made == 0 and ps.poll() is None and time.monotonic() < deadline:
        made = max(memif_hangup(sock), 0)
        if made == 0:
            time.sleep(0.01)
    while made < MEMIF_HANGUPS and ps.poll() is None:
        rc = memif_hangup(sock)
        if rc < 0:
            break
        made += rc
        tries += 1
        if rc == 0:
            os.sched_yield()
    print("%d hangups made (%d tries)" % (made, tries), flush=True)
    return made


# A verbs program that loads libibverbs.so.1 as a Python extension is
# loaded: dlopen(RTLD_LOCAL), out of the global scope EAL's dlopen()ed
# PMDs look in first. It opens the device and holds it until its stdin
# closes.
CTYPES_SERVER = """
import ctypes, sys
lib = ctypes.CDLL("libibverbs.so.1")
lib.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lib.ibv_open_device.restype = ctypes.c_void_p
lib.ibv_open_device.argtypes = [ctypes.c_void_p]
lib.ibv_close_device.argtypes = [ctypes.c_void_p]
n = ctypes.c_int()
devs = lib.ibv_get_device_list(ctypes.byref(n))
ctx = lib.ibv_open_device(devs[0]) if n.value > 0 else None
print("device open" if ctx else "no device", flush=True)
sys.stdin.read()
sys.exit(0 if ctx and lib.ibv_close_device(ctx) == 0 else 1)
"""


# Two copies of srnic's library in one process: libsrnic.so loaded into the
# global scope first, then the drop-in (its own copy of the stack) makes
# the device. memif's calls bind to libsrnic.so's copy, which guards.
TWO_COPIES_SERVER = """
import ctypes
ctypes.CDLL(%r, mode=ctypes.RTLD_GLOBAL)
""" + CTYPES_SERVER


def memif_hangups_local(two_copies=False):
    """The drop-in loaded with RTLD_LOCAL (CTYPES_SERVER) on a memif server
    port: it survives MEMIF_HANGUPS hangups and counts what it removed.
    two_copies: libsrnic.so loaded first (TWO_COPIES_SERVER): it survives,
    and no false ERR that memif's calls do not reach srnic's (that copy's
    count is not the device's: not checked)."""
    what = "memif_hangups (two copies)" if two_copies else "memif_hangups (RTLD_LOCAL)"
    tag = "hangups_two" if two_copies else "hangups_local"
    sock, sport, _ = memif_ports(tag)
    env = run_env()
    env["SRNIC_STATS"] = "1"
    outs = os.path.join(TMP, tag + ".log")
    prog = CTYPES_SERVER
    if two_copies:
        so = os.path.normpath(os.path.join(LIB, "..", "..", "libsrnic.so"))
        if not check(os.path.exists(so), "%s: %s built" % (what, so)):
            return
        prog = TWO_COPIES_SERVER % so
    with open(outs, "w") as fs:
        ps = subprocess.Popen(srnic_run(sport, "10.77.0.1", ["/usr/bin/python3", "-c", prog]),
                              stdin=subprocess.PIPE, stdout=fs, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + LISTEN_GUARD_S
    while "device open" not in open(outs).read() and ps.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    made = memif_hangups(sock, ps)
    try:
        ps.stdin.close()
    except BrokenPipeError:
        pass
    try:
        rc = ps.wait(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        ps.kill()
        rc = ps.wait()
    out = open(outs).read()
    purged = re.search(r"^srnic:\s+port_memif_cc_purged\s+(\d+)$", out, re.M)
    good = check(made == MEMIF_HANGUPS and rc == 0,
                 "%s: %d of %d hangups, exit %s" % (what, made, MEMIF_HANGUPS, rc))
    good &= check("do not reach srnic's" not in out,
                  "%s: said memif's calls do not reach srnic's" % what)
    good &= check(two_copies or (purged is not None and int(purged.group(1)) >= 1),
                  "%s: no stale channel removed (port_memif_cc_purged %s)" %
                  (what, purged.group(1) if purged else "not printed"))
    if not good:
        print("---- server:\n%s" % out, flush=True)
        return
    print("ok %s: %d hangups%s" % (what, made, "" if two_copies else
                                   ", %s removed" % purged.group(1)), flush=True)


def case_memif_hangups():
    """Debian's ib_write_bw as a memif server (usertools/srnic run): a local
    process connects to its memif socket and closes at once, MEMIF_HANGUPS
    times while it waits for its client. DPDK 22.11's server then fails to
    send HELLO and leaves EAL's interrupt thread a callback on a closed fd,
    whose rebuild panics ("Error adding fd N epoll_ctl"), unless the
    drop-in's definitions of EAL's four interrupt calls (lib/core/port.c,
    exported under DPDK_23/EXPERIMENTAL) take memif's calls and remove it.
    Then the real client runs: both exit 0, and the server's SRNIC_STATS
    line counts the channels removed. Then the same for the drop-in loaded
    with RTLD_LOCAL (memif_hangups_local), and beside libsrnic.so
    (two copies of srnic in one process)."""
    sock, sport, cport = memif_ports("hangups")
    port = free_tcp_port()
    prog = ["ib_write_bw", "-p", str(port), "-s", "65536", "-n", "200"]
    env = run_env()
    env["SRNIC_STATS"] = "1"
    outs = os.path.join(TMP, "hangups.server.log")
    outc = os.path.join(TMP, "hangups.client.log")
    with open(outs, "w") as fs:
        ps = subprocess.Popen(srnic_run(sport, "10.77.0.1", prog), stdout=fs,
                              stderr=subprocess.STDOUT, env=env)
    made = memif_hangups(sock, ps)
    deadline = time.monotonic() + LISTEN_GUARD_S
    while not listening(port) and ps.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    rc_c = None
    with open(outc, "w") as fc:
        pc = subprocess.Popen(srnic_run(cport, "10.77.0.2", prog + ["127.0.0.1"]), stdout=fc,
                              stderr=subprocess.STDOUT, env=run_env())
    try:
        rc_c = pc.wait(timeout=GUARD_S)
        rc_s = ps.wait(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        for p in (pc, ps):
            if p.poll() is None:
                p.kill()
                p.wait()
        rc_s = ps.returncode
    out_s, out_c = open(outs).read(), open(outc).read()
    purged = re.search(r"^srnic:\s+port_memif_cc_purged\s+(\d+)$", out_s, re.M)
    good = check(made == MEMIF_HANGUPS, "memif_hangups: %d of %d hangups made before the "
                 "server went (exit %s)" % (made, MEMIF_HANGUPS, ps.poll()))
    good &= check(rc_s == 0 and rc_c == 0,
                  "memif_hangups: exit codes server %s client %s" % (rc_s, rc_c))
    good &= check("epoll_ctl" not in out_s, "memif_hangups: the server's interrupt thread "
                  "met a closed fd")
    good &= check(purged is not None and int(purged.group(1)) >= 1,
                  "memif_hangups: no stale channel removed (port_memif_cc_purged %s)" %
                  (purged.group(1) if purged else "not printed"))
    rows = perftest_rows(out_c)
    good &= check(bool(rows) and rows[0][0] == 65536 and rows[0][4] > 0,
                  "memif_hangups: ib_write_bw's client row %s" % rows)
    if not good:
        print("---- server:\n%s---- client:\n%s" % (out_s, out_c), flush=True)
        return
    print("ok memif_hangups: %d hangups, %s removed, ib_write_bw %g MB/s" %
          (made, purged.group(1), rows[0][3]), flush=True)
    memif_hangups_local()
    memif_hangups_local(two_copies=True)


def ready_pid(p, guard, lines):
    """The PID of the next "ready PID" line of p's stdout, None when p ends
    or stays silent for guard seconds first; the lines before it (and it)
    appended to lines."""
    deadline = time.monotonic() + guard
    buf = b""
    fd = p.stdout.fileno()
    while time.monotonic() < deadline:
        r, _, _ = select.select([fd], [], [], 1)
        if not r:
            continue
        c = os.read(fd, 1)
        if not c:
            return None
        if c != b"\n":
            buf += c
            continue
        lines.append(buf.decode(errors="replace"))
        if buf.startswith(b"ready "):
            return int(buf.split()[1])
        buf = b""
    return None


READ_SYSCALL = {"x86_64": 0, "aarch64": 63}


def blocked_in_read(pid, guard):
    """True once pid's main thread sleeps in read(2) (/proc/PID/syscall),
    False when it does not within guard seconds: a signal sent before the
    read() starts would find nothing to interrupt."""
    nr = READ_SYSCALL[os.uname().machine]
    deadline = time.monotonic() + guard
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/syscall" % pid) as f:
                fields = f.read().split()
        except OSError:
            return False
        if fields and fields[0] == str(nr):
            return True
        time.sleep(0.05)
    return False


def signal_run(sock, sport, mode, nsig, want_rc):
    """verbs_signal MODE on a memif server port: nsig SIGINTs from this
    process, each once the program says it waits; its exit code is
    want_rc and each delivery's si_pid is this process's pid."""
    cmd = srnic_run(sport, "10.77.0.1", [SIGNAL, mode])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=run_env())
    lines = []
    try:
        for i in range(nsig):
            pid = ready_pid(p, GUARD_S, lines)
            if pid is None:
                break
            check(pid == p.pid, "signal %s: ready pid %d is the program's (%d)" % (mode, pid, p.pid))
            check(blocked_in_read(pid, GUARD_S), "signal %s: the program blocks in read()" % mode)
            os.kill(pid, signal.SIGINT)
        try:
            rest, err = p.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            p.kill()
            rest, err = p.communicate()
            check(False, "signal %s: verbs_signal hung %d s after its SIGINT "
                  "(a read() restarted, no EINTR)" % (mode, GUARD_S))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = "\n".join(lines + [rest.decode(errors="replace"), err.decode(errors="replace")])
    check(p.returncode == want_rc, "signal %s: verbs_signal exit %d, want %d (-%d: killed by signal)"
          % (mode, p.returncode, want_rc, -want_rc if want_rc < 0 else 0))
    check(("si_pid %d" % os.getpid()) in out,
          "signal %s: the handler's info->si_pid is the sender's (%d)" % (mode, os.getpid()))
    check("AddressSanitizer" not in out, "signal %s: no ASan report" % mode)
    return out


def case_signal():
    # test/verbs/verbs_signal.c: the program's SA_SIGINFO SIGINT handler
    # (no SA_RESTART), installed before srnic starts, sees the sender's
    # pid; the program's blocking read() ends with EINTR and it exits
    # cleanly; with SA_RESETHAND the next SIGINT takes the default action
    if SIGNAL is None:
        print("skip: verbs_signal not built (no libibverbs pkg-config)")
        sys.exit(SKIP)
    if os.uname().machine not in READ_SYSCALL:
        print("skip: read(2)'s number on %s unknown to the test" % os.uname().machine)
        sys.exit(SKIP)
    sock, sport, _ = memif_ports("signal")
    out = signal_run(sock, sport, "info", 1, 0)
    check("all ok" in out, "signal info: the program ran to its end")
    if failures:
        print(out, flush=True)
    out = signal_run(sock, sport, "resethand", 2, -signal.SIGINT)
    check("first ok" in out, "signal resethand: the first SIGINT reached the handler")
    check("FAIL" not in out, "signal resethand: the second SIGINT did not return to the program")
    if failures:
        print(out, flush=True)
    else:
        print("ok signal: SA_SIGINFO handler, EINTR, SA_RESETHAND", flush=True)
    signal_ignored(sport)
    signal_bringup()


def signal_bringup():
    """A SIGINT while the device comes up, after EAL (its runtime
    directory and the memif socket made) and before srnic's handler and
    exit hook exist, waits for them: ibv_devices is killed by it with
    nothing left behind. The pause is made by a FIFO where the device's
    first devfs file goes (SRNIC_DEVFS: its temporary NAME.PID, the pid
    known in the child before exec): the program's open() of it waits for
    a reader (wchan wait_for_partner) until the test opens it."""
    root = os.path.join(TMP, "bringup-devfs")
    shutil.rmtree(root, ignore_errors=True)
    vdir = os.path.join(root, "sys", "class", "infiniband_verbs")
    os.makedirs(vdir)
    fifo = os.path.join(vdir, "abi_version.%d")

    def make_fifo():
        os.mkfifo(fifo % os.getpid())

    sock, sport, _ = memif_ports("bringup")
    sport += ",socket-abstract=no"
    rdir = "/var/run/dpdk" if os.geteuid() == 0 else \
        os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
    env = dict(run_env(), SRNIC_DEVFS=root)
    p = subprocess.Popen(srnic_run(sport, "10.77.0.1", ["ibv_devices"]), env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=make_fifo)
    fd = None
    try:
        deadline = time.monotonic() + GUARD_S
        waiting = False
        while not waiting and p.poll() is None and time.monotonic() < deadline:
            try:
                with open("/proc/%d/wchan" % p.pid) as f:
                    waiting = f.read().strip() == "wait_for_partner"
            except OSError:
                break
            if not waiting:
                time.sleep(0.05)
        if not check(waiting, "signal bringup: ibv_devices waits in its devfs FIFO's open()"):
            return
        check(os.path.exists(sock) and os.path.isdir(os.path.join(rdir, "srnic-%d" % p.pid)),
              "signal bringup: EAL is up (memif socket, runtime dir srnic-%d)" % p.pid)
        os.kill(p.pid, signal.SIGINT)
        # a reader: the program's open() returns (it never blocks here)
        fd = os.open(fifo % p.pid, os.O_RDONLY | os.O_NONBLOCK)
        try:
            _, err = p.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            check(False, "signal bringup: ibv_devices hung %d s after its SIGINT" % GUARD_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if fd is not None:
            os.close(fd)
    check(p.returncode == -signal.SIGINT,
          "signal bringup: ibv_devices killed by SIGINT (rc %r)" % p.returncode)
    check(not os.path.exists(sock), "signal bringup: memif socket removed")
    check(not os.path.exists(os.path.join(rdir, "srnic-%d" % p.pid)),
          "signal bringup: no DPDK runtime dir left (srnic-%d)" % p.pid)
    shutil.rmtree(root, ignore_errors=True)
    if failures:
        print(err.decode(errors="replace")[-2000:], flush=True)
    else:
        print("ok signal: a SIGINT during bring-up waits for srnic's handler", flush=True)


def sig_mask(pid, field):
    """/proc/PID/status's FIELD (SigIgn, SigCgt) as an int, None unread."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for ln in f:
                if ln.startswith(field + ":"):
                    return int(ln.split()[1], 16)
    except OSError:
        pass
    return None


def signal_ignored(sport):
    """verbs_signal ignored: SIGINT ignored before srnic starts stays
    ignored once the device is open (no srnic handler in front that would
    remove srnic's files under a program that goes on, and end its read()
    with EINTR); a SIGINT then changes nothing, the byte written to its
    stdin ends it, exit 0."""
    cmd = srnic_run(sport, "10.77.0.1", [SIGNAL, "ignored"])
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=run_env())
    lines = []
    bit = 1 << (signal.SIGINT - 1)
    try:
        pid = ready_pid(p, GUARD_S, lines)
        if check(pid == p.pid, "signal ignored: the program opened the device (%r)" % pid):
            ign, cgt = sig_mask(pid, "SigIgn"), sig_mask(pid, "SigCgt")
            check(ign is not None and cgt is not None and ign & bit != 0 and cgt & bit == 0,
                  "signal ignored: SIGINT still ignored with the device open (SigIgn %r, "
                  "SigCgt %r)" % (ign, cgt))
            check(blocked_in_read(pid, GUARD_S), "signal ignored: the program blocks in read()")
            os.kill(pid, signal.SIGINT)
        try:
            rest, err = p.communicate(input=b"x", timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            p.kill()
            rest, err = p.communicate()
            check(False, "signal ignored: verbs_signal hung %d s after its byte" % GUARD_S)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    out = "\n".join(lines + [rest.decode(errors="replace"), err.decode(errors="replace")])
    check(p.returncode == 0 and "all ok" in out,
          "signal ignored: the program went on to its end, exit 0 (exit %r)" % p.returncode)
    if failures:
        print(out, flush=True)
    else:
        print("ok signal: an ignored SIGINT stays ignored", flush=True)


CASES = {
    "symbols": case_symbols,
    "devinfo": case_devinfo,
    "rc_pingpong": case_rc_pingpong,
    "progress_app": case_progress_app,
    "ud_pingpong": case_ud_pingpong,
    "uc_pingpong": case_uc_pingpong,
    "perftest_ud": case_perftest_ud,
    "srq_pingpong": case_srq_pingpong,
    "api": case_api,
    "perftest_bw": case_perftest_bw,
    "perftest_lat": case_perftest_lat,
    "perftest_opts": case_perftest_opts,
    "perftest_batch": case_perftest_batch,
    "af_packet": case_af_packet,
    "gid0": case_gid0,
    "fork": case_fork,
    "lcore": case_lcore,
    "signal": case_signal,
    "memif_hangups": case_memif_hangups,
}


def run_case(prefix, case):
    """case() in a temporary folder (TMP) of its own, removed after; exit 1
    with the failures counted, else 0."""
    global TMP
    TMP = tempfile.mkdtemp(prefix=prefix)
    try:
        case()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("all ok")


def main():
    global LIB, API, FORK, SIGNAL, LCORE
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, help="the folder with srnic's libibverbs.so.1")
    ap.add_argument("--api", help="test/verbs/verbs_api, built against the system's libibverbs")
    ap.add_argument("--fork", help="test/verbs/verbs_fork, built against the system's libibverbs")
    ap.add_argument("--signal", help="test/verbs/verbs_signal, built against the system's libibverbs")
    ap.add_argument("--lcore", help="test/verbs/verbs_lcore, built against the system's libibverbs")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    LIB = os.path.abspath(a.lib)
    API = a.api
    FORK = a.fork
    SIGNAL = a.signal
    LCORE = a.lcore
    for tool in ("ibv_devinfo", "ibv_rc_pingpong", "ib_read_bw"):
        if shutil.which(tool) is None:
            print("skip: %s not installed (apt-get install ibverbs-utils perftest)" % tool)
            sys.exit(SKIP)
    run_case("srnic-verbs-", CASES[a.case])


if __name__ == "__main__":
    main()
