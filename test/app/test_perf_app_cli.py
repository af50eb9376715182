#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnic-perf end to end, DPDK telemetry during a run, stopping and failing
like testpmd (signals, a dead or silent peer), bad options.
Usage: test_perf_app_cli.py SRNIC_PERF (perf_app_common.py: the shared part)."""
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
stats, devs, info = None, None, None
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
    global devs, stats, info
    try:
        devs = ask("/srnic/devs")
        if not set(devs.get("/srnic/devs", [])) >= {"perfa", "perfb"}:
            return False
        stats = ask("/srnic/stats,perfa")
        info = ask("/srnic/info,perfa")
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
# the ICRC path start-up chose, and why; srnic's own packets all have the
# headroom the fold needs: none left to ISA-L
check("telemetry: /srnic/info names the ICRC fold and why",
      info is not None and info.get("/srnic/info", {}).get("icrc_fold") in ("ISA-L", "SSE", "VEX")
      and info["/srnic/info"].get("icrc_fold_why", "") != "", str(info))
check("telemetry: /srnic/stats has icrc_fold_short, 0 for srnic's packets",
      stats is not None and stats["/srnic/stats"].get("icrc_fold_short") == 0, str(stats)[:300])

# 9. stopping and failing like testpmd: the first SIGINT/SIGTERM ends the run
# cleanly (partial row, counters, exit 0), in one process and as a
# two-process client; a server waiting for a client stops too; a second
# server on the port, and a client with no server, say what is wrong.
import signal as _signal

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

# 9b2. a --persist server's QPs start each session at a PSN of their own,
# drawn at random (perftest's lrand48() & 0xffffff): the next client has the
# same QPNs, addresses and (before) the same first PSN as the last, so a
# killed client's ACKs still on their way fell in the new connection's
# window and could complete requests it never received; now they fall
# outside it and are dropped as any stale PSN is. Two fake clients in turn
# (2 QPs each) read the server's QP lines and leave: four distinct PSNs.
# Before, every session's every QP began at 7000.
def server_qp_lines(port, qps):
    """The server's QP lines for a fake client of qps READ QPs, then away."""
    with socket.create_connection(("127.0.0.1", port), timeout=SERVER_UP_S) as s:
        f = s.makefile("r")
        s.sendall(b"SRNIC-PERF 1\nHELLO 0 %d 16 5 64 1 0\n" % qps)
        got = []
        for line in f:
            if line == "END\n":
                break
            got.append(line.split())
        return got


srv = popen_perf(["--server", "--persist", "--tcp-port", str(port + 8)], "perf_psn_srv",
                 lcores="1", vdev=f"--vdev=net_memif0,role=server,socket={sock}.p")
up = wait_listening(srv, port + 8)
sessions = []
try:
    for _ in range(2):
        sessions.append(server_qp_lines(port + 8, 2))
except OSError as e:
    sessions.append(str(e))
srv.send_signal(_signal.SIGINT)
srv_lines = []
src = finish(srv, srv_lines)
psns = [int(q[2]) for ses in sessions if isinstance(ses, list) for q in ses
        if len(q) == 7 and q[0] == "QP"]
check("--persist: two sessions' QPs each begin at a PSN of their own, at random",
      up and len(psns) == 4 and len(set(psns)) == 4 and all(0 <= p <= 0xFFFFFF for p in psns)
      and src == 0,
      f"{sessions} {src} " + "".join(srv_lines)[-400:])

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
                   (["--qps", "5000", "--depth", "64"],
                    "5000 QPs x depth 64 on an lcore exceed a CQ (262144 CQEs)"),
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

done()
