#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""What the srnic-perf end-to-end tests share (test_perf_app_*.py): the
binary (argv[1]), its EAL options, a block of free TCP ports, check() and
its count, run() and the JSON readers. Each test runs the real binary over
real DPDK ports (net_ring pair in one process, net_memif between two) and
reads what it prints; each prints 'N passed, N failed' and exits non-zero on
any failure (done())."""
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


# a line of srnic-perf's live figures (a run is under way)
LIVE = r"^  \.\.\. "


def done():
    """Print the count and exit: non-zero when any check failed."""
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
