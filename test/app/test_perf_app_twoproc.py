#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnic-perf end to end, two processes over net_memif (srnic-perf's own and
perftest's exchange, golden rxe captures replayed, a bad peer), a server
whose peer is on the command line.
Usage: test_perf_app_twoproc.py SRNIC_PERF (perf_app_common.py: the shared part)."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from perf_app_common import *  # noqa: E402,F403 (check, run, PERF, EAL, PORT0, ...)

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

# 6d. a client whose memif link comes up late: memif's handshake runs on
# the two processes' interrupt threads, and on a loaded host (load 30-40) it
# ended after the TCP exchange and after the first WRs' ACK timeouts (8 x
# 67 ms, the default -u): the --persist server's third client in
# perf_app_firsthour failed 'transport retry counter exceeded' having
# received nothing. Here a relay between the client's and the server's
# memif sockets holds the server's last handshake message (CONNECTED) for
# MEMIF_HOLD_S: the client waits for its link (says so) and then runs.
MEMIF_MSG_LEN = 128         # memif_msg_t: a 16-bit type, then the message
MEMIF_MSG_CONNECTED = 7
MEMIF_HOLD_S = 4            # the fault injected: 4 s, the default -u's 8 timeouts 0.54 s
PERF_LINK_WAIT_S = 60       # app/srnic-perf/perf.h: the client's wait for its link


def memif_relay(listen_name, server_name, hold_s, stop):
    """Relay one memif control connection (each message and its fd), the
    server's CONNECTED held hold_s. Abstract socket names (memif's default)."""
    import select
    import socket as so
    ls = so.socket(so.AF_UNIX, so.SOCK_SEQPACKET)
    ls.bind("\0" + listen_name)
    ls.listen(1)
    ls.settimeout(SERVER_UP_S)
    held = []
    try:
        c, _ = ls.accept()
        s = so.socket(so.AF_UNIX, so.SOCK_SEQPACKET)
        s.connect("\0" + server_name)
        while not stop.is_set():
            now = time.monotonic()
            for m, fds, at in [h for h in held if h[2] <= now]:
                so.send_fds(c, [m], fds) if fds else c.sendall(m)
                for fd in fds:  # the message carried copies: the relay's own closed
                    os.close(fd)
                held.remove((m, fds, at))
            r, _, _ = select.select([c, s], [], [], 0.05)  # poll interval, not the fault's
            for a, b in ((c, s), (s, c)):
                if a not in r:
                    continue
                m, fds, _, _ = so.recv_fds(a, MEMIF_MSG_LEN, 4)
                if not m:
                    return
                if a is s and int.from_bytes(m[:2], "little") == MEMIF_MSG_CONNECTED:
                    held.append((m, fds, time.monotonic() + hold_s))
                    continue
                so.send_fds(b, [m], fds) if fds else b.sendall(m)
                for fd in fds:
                    os.close(fd)
    except OSError:
        pass
    finally:
        ls.close()


def late_link(port, hold_s=MEMIF_HOLD_S, kill_server=None):
    import threading
    ssock = f"/tmp/srnic-perf-test-{os.getpid()}-{port}.sock"
    rsock = f"/tmp/srnic-perf-test-{os.getpid()}-{port}-relay.sock"
    stop = threading.Event()
    relay = threading.Thread(target=memif_relay, args=(rsock, ssock, hold_s, stop),
                             daemon=True)
    relay.start()
    cl = None
    srv = subprocess.Popen([PERF, "-l", "1", "--file-prefix", f"ps_{os.getpid()}_{port}"] + EAL +
                           [f"--vdev=net_memif0,role=server,socket={ssock},bsize=10240", "--",
                            "--server", "--tcp-port", str(port)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(srv, port)
        # no -u: the default ACK timeout, the --persist clients' (as a user's)
        cl = subprocess.Popen([PERF, "-l", "0", "--file-prefix", f"pc_{os.getpid()}_{port}"] +
                              EAL + [f"--vdev=net_memif0,role=client,socket={rsock},bsize=10240",
                                     "--", "--client", "127.0.0.1", "--tcp-port", str(port),
                                     "--op", "send", "--size", "100", "--qps", "2", "--iters",
                                     "2000", "--verify", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if kill_server is not None:
            # the link never comes (held for ever): once the client waits,
            # its server gets kill_server (SIGKILL: it dies; SIGINT: it says
            # STOP); the client must end on that, not on its 60 s
            out = ""
            for ln in cl.stdout:
                out += ln
                if "waiting for port 0's link" in ln:
                    break
            srv.send_signal(kill_server)
            try:  # a guard below the client's own 60 s
                rest, err = cl.communicate(timeout=PERF_LINK_WAIT_S - 20)
            except subprocess.TimeoutExpired:
                cl.kill()
                rest, err = cl.communicate()
                err += " (still waiting after %d s: killed)" % (PERF_LINK_WAIT_S - 20)
            cl.stdout, cl.stderr = out + rest, err
        else:
            cl.stdout, cl.stderr = cl.communicate(timeout=180)
        sout, serr = srv.communicate(timeout=60)
    finally:
        stop.set()
        if cl is not None and cl.poll() is None:
            cl.kill()
            cl.wait()
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    return cl, srv.returncode, sout + serr


cl, src, sout = late_link(PORT0 + 24)
r = json_lines(cl.stdout)
m = re.search(r"port 0's link is up after ([\d.]+) s", cl.stdout)
check(f"memif link up {MEMIF_HOLD_S} s after the handshake: the client waits for it, says so, "
      "then runs (send, 2 QPs, default ACK timeout): every message verified, both exit 0",
      cl.returncode == 0 and src == 0 and "waiting for port 0's link to come up" in cl.stdout and
      m is not None and float(m.group(1)) >= 1 and len(r) == 1 and r[0]["msgs"] == 2000 and
      r[0]["verify_errors"] == 0, cl.stdout[-700:] + cl.stderr[-500:] + sout[-400:])

# 6e. the same link held for ever and the server killed while the client
# waits for it: the client ends at once (the control connection's end), not
# after PERF_LINK_WAIT_S, and says why
cl, src, sout = late_link(PORT0 + 26, hold_s=3600, kill_server=signal.SIGKILL)
check("memif link never up, the server killed while the client waits: the client fails at "
      "once and says the server closed the connection",
      cl.returncode not in (0, None) and "closed the connection" in cl.stderr,
      cl.stdout[-500:] + cl.stderr[-500:])
# and the server stopped by a signal (its STOP line, then its wait for our
# BYE): the client says so and exits 3 (PERF_EXIT_SERVER_STOPPED), the
# server exits at once (no 'did not answer STOP')
cl, src, sout = late_link(PORT0 + 27, hold_s=3600, kill_server=signal.SIGINT)
check("memif link never up, the server stopped (SIGINT) while the client waits: the client "
      "says the server stopped the run and exits 3, the server exits 0",
      cl.returncode == 3 and "it was stopped by a signal" in cl.stdout and src == 0 and
      "did not answer" not in sout, cl.stdout[-500:] + cl.stderr[-500:] + sout[-400:])

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


# 7b. two servers with their peers on the command line (no control
# connection between them: nothing but the port tells one that the other
# is gone), joined by memif. Once both links are up (the memif server says
# so: IBV_EVENT_PORT_ACTIVE), the memif client's process is killed: the
# server says at once that port 0's link went down and waits; it stays
# down past PERF_PORT_DOWN_GRACE_S (10 s): it says what to do and exits 1,
# not at the end of its 600 s. Before, srnic-perf took no asynchronous
# event: it served a dead link until its --duration ended.
PEER_DOWN_WAIT_S = 60       # a guard far below the server's --duration
with tempfile.TemporaryDirectory() as d:
    sock = os.path.join(d, "m.sock")
    peer = ["--server", "--peer-qpn", "0x25", "--peer-psn", "100", "--peer-mac",
            "02:00:00:00:00:09", "--duration", "600"]
    sa = popen_perf(peer + ["--peer-ip", "127.0.1.9"], "pd_a", lcores="0",
                    vdev=f"--vdev=net_memif0,role=server,socket={sock}")
    sb, a_lines, b_gone, dt = None, [], False, None
    import threading
    guard = threading.Timer(SERVER_UP_S, sa.kill)  # a reader below never ends otherwise
    guard.start()
    try:
        # the memif client once its server's socket is there (its JSON line)
        up = read_until(sa, r'^\{"qpn"', a_lines)
        if up:
            sb = popen_perf(peer + ["--peer-ip", "127.0.1.8"], "pd_b", lcores="1",
                            vdev=f"--vdev=net_memif0,role=client,socket={sock}")
            up = read_until(sa, r"port 0's link is up", a_lines)
        if up:
            sb.kill()
            sb.wait()
            b_gone = True
            t0 = time.monotonic()
        arc = finish(sa, a_lines, timeout=PEER_DOWN_WAIT_S)
        dt = time.monotonic() - t0 if b_gone else None
    finally:
        guard.cancel()
        for pr in (sa, sb):
            if pr is not None and pr.poll() is None:
                pr.kill()
                pr.wait()
    aout = "".join(a_lines)
    check("peer-on-cmdline servers over memif, the peer process killed: the other says at once "
          "that port 0's link went down and what to do, exit 1",
          up and arc == 1 and dt is not None and dt < PEER_DOWN_WAIT_S and
          re.search(r"port 0's link went down \(IBV_EVENT_PORT_ERR\).*start the peer again",
                    aout) is not None, f"{dt} {arc} " + aout[-800:])

    # 7c. the same, the memif client's process started again at once: the
    # link is back within PERF_PORT_DOWN_GRACE_S, the server says so and
    # serves on (a SIGINT ends it, exit 0). Before, the first PORT_ERR
    # ended the run whatever came after it: exit 1 at the kill.
    sock = os.path.join(d, "m2.sock")
    sa = popen_perf(peer + ["--peer-ip", "127.0.1.9"], "pf_a", lcores="0",
                    vdev=f"--vdev=net_memif0,role=server,socket={sock}")
    sb, sb2, a_lines, waited, back = None, None, [], False, False
    guard = threading.Timer(SERVER_UP_S, sa.kill)
    guard.start()
    try:
        up = read_until(sa, r'^\{"qpn"', a_lines)
        if up:
            sb = popen_perf(peer + ["--peer-ip", "127.0.1.8"], "pf_b", lcores="1",
                            vdev=f"--vdev=net_memif0,role=client,socket={sock}")
            up = read_until(sa, r"port 0's link is up", a_lines)
        if up:
            sb.kill()
            sb.wait()
            sb2 = popen_perf(peer + ["--peer-ip", "127.0.1.8"], "pf_b2", lcores="1",
                             vdev=f"--vdev=net_memif0,role=client,socket={sock}")
            waited = read_until(sa, r"port 0's link is down \(IBV_EVENT_PORT_ERR\): waiting",
                                a_lines)
            back = waited and read_until(sa, r"port 0's link is up again after", a_lines)
        alive = sa.poll() is None
        sa.send_signal(signal.SIGINT)
        arc = finish(sa, a_lines, timeout=PEER_DOWN_WAIT_S)
    finally:
        guard.cancel()
        for pr in (sa, sb, sb2):
            if pr is not None and pr.poll() is None:
                pr.kill()
                pr.wait()
    aout = "".join(a_lines)
    check("peer-on-cmdline server, its memif peer killed and started again within the grace: "
          "the link down is said, then up again, the server serves on (exit 0 at SIGINT)",
          up and waited and back and alive and arc == 0 and "stayed down" not in aout,
          f"{waited} {back} {alive} {arc} " + aout[-800:])

done()
