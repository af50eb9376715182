#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnicd, srnic as a device of the host (doc/srnicd.md): the daemon on an
af_packet port over a veth pair in a network namespace of the test's own,
driven as a user would, through usertools/srnic:

  daemon up (its log's ready line), the kernel on the veth's other end
  resolving the daemon's address (ARP answered by srnicd's engine), the
  daemon's CPU while idle, unmodified ibv_devices and ibv_devinfo -v
  attached (no --port: the daemon's device, its GIDs), a second session
  held open and shown by status with its pid and program, a hostile
  session (garbage, a message before HELLO, a wrong length, a foreign
  handle) closed alone while the other keeps being served, SIGTERM and a
  clean exit (socket removed); then a program with no daemon and no port
  says what to start.

  srnicd_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs

Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import ipaddress
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, SRNIC, attached_env, check, failures, free_port, objects,
                          status, status_num, svc_major, tcp_listening, wait_for)

SKIP = 77
IDLE_NAPS = 300         # the idle window: this many engine naps
IDLE_CPU_MAX = 0.02     # of a core (issue 24: < 2% idle)
DAEMON_IP = "10.79.0.1"
KERNEL_IP = "10.79.0.2"

# lib/svc/srnic_svc.h, restated: the test speaks the protocol itself
HDR = struct.Struct("<HHIIi")           # type, flags, len, seq, status
SVC_HELLO, SVC_LIST, SVC_OPEN, SVC_CLOSE, SVC_QDEV, SVC_QPORT, SVC_QGID, SVC_STATUS = range(1, 9)
SVC_MAP_SHM, SVC_ALLOC_PD, SVC_DEALLOC_PD = range(9, 12)
MAGIC = 0x534e5244


def msg(mtype, seq, body=b""):
    return HDR.pack(mtype, 0, HDR.size + len(body), seq, 0) + body


def hello_body(major=None):
    major = svc_major() if major is None else major
    return struct.pack("<IHHI16s", MAGIC, major, 0, os.getpid(), b"srnicd_test")


class Session:
    """A control session of the test's own (SOCK_SEQPACKET)."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(GUARD_S)
        self.s.connect(path)
        self.seq = 0

    def call(self, mtype, body=b""):
        """The reply's (status, body); None if the daemon closed the session."""
        self.seq += 1
        self.s.send(msg(mtype, self.seq, body))
        r = self.s.recv(65536)
        if not r:
            return None
        t, flags, ln, seq, st = HDR.unpack_from(r)
        check(t == mtype and flags == 1 and ln == len(r) and seq == self.seq,
              "reply to %d: type %d flags %d len %d/%d seq %d" % (mtype, t, flags, ln, len(r), seq))
        return st, r[HDR.size:]

    def call_fds(self, mtype, body=b"", fds=()):
        """call() with descriptors (SCM_RIGHTS) both ways: (status, body,
        the descriptors that came with the reply)"""
        self.seq += 1
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))]
        self.s.sendmsg([msg(mtype, self.seq, body)], anc if fds else [])
        r, rfds, _, _ = socket.recv_fds(self.s, 65536, 2)   # SVC_MSG_FDS_MAX
        return HDR.unpack_from(r)[4], r[HDR.size:], rfds

    def closed_by_daemon(self):
        try:
            return self.s.recv(65536) == b""
        except ConnectionResetError:
            return True

    def close(self):
        self.s.close()


def pingpong_pair(env, args, guard=GUARD_S):
    """Debian's ibv_rc_pingpong, server and client, both attached (no --port):
    the server started, the client once the server listens; both Popen."""
    port = free_port()
    cmd = [SRNIC, "run", "--", "ibv_rc_pingpong", "-g", "1", "-p", str(port)] + args
    srv = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    wait_for(lambda: tcp_listening(port) or srv.poll() is not None, "the pingpong server",
             guard=guard)
    cli = subprocess.Popen(cmd + ["127.0.0.1"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    return srv, cli


def gid_of(line):
    return ipaddress.IPv6Address(line.split()[-1] if ", RoCE" not in line
                                 else line.split()[-3].rstrip(","))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("ibv_devinfo") is None:
        print("skip: needs root, iproute2 (a netns, a veth pair) and ibverbs-utils")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-test-")
    sock = os.path.join(tmp, "run", "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    ns = "srnicd-test-%d" % os.getpid()
    nsx = ["ip", "netns", "exec", ns]
    subprocess.run(["ip", "netns", "add", ns], check=True)
    daemon = None
    try:
        sh = lambda *c: subprocess.run(nsx + list(c), check=True)
        sh("ip", "link", "set", "lo", "up")
        sh("ip", "link", "add", "sva", "type", "veth", "peer", "name", "svb")
        sh("ip", "link", "set", "sva", "up")
        sh("ip", "addr", "add", KERNEL_IP + "/24", "dev", "svb")
        sh("ip", "link", "set", "svb", "up")
        mac = subprocess.run(
            nsx + ["cat", "/sys/class/net/sva/address"], capture_output=True,
            text=True).stdout.strip()

        # ---- the daemon, in the namespace; its socket in the file system
        log = os.path.join(tmp, "srnicd.log")
        with open(log, "w") as lf:
            daemon = subprocess.Popen(nsx + [SRNIC, "daemon", "--port", "net_af_packet0,iface=sva",
                                             "--ip", DAEMON_IP],
                                      env=env, stdout=lf, stderr=subprocess.STDOUT)
        up = wait_for(lambda: "srnicd: ready" in open(log).read() or daemon.poll() is not None,
                      "the daemon's ready line")
        if not check(up and daemon.poll() is None, "daemon up: %s" % open(log).read()[-600:]):
            return 1
        check(os.path.exists(sock) and (os.stat(sock).st_mode & 0o777) in (0o600, 0o660),
              "control socket %s made, mode 0600/0660" % sock)

        # ---- ARP: the kernel on svb resolves the daemon's address
        def arp_answered():
            subprocess.run(nsx + ["python3", "-c",
                                  "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM);"
                                  "s.sendto(b'x', ('%s', 9))" % DAEMON_IP], capture_output=True)
            out = subprocess.run(nsx + ["ip", "neigh", "show", DAEMON_IP, "dev", "svb"],
                                 capture_output=True, text=True).stdout
            return ("lladdr " + mac) in out
        check(wait_for(arp_answered, "an ARP reply from srnicd"),
              "ARP for %s answered by srnicd with sva's MAC %s" % (DAEMON_IP, mac))

        # ---- idle: the daemon's own CPU over IDLE_NAPS naps of its engine
        s0 = status(env)
        n0 = status_num(s0, "naps")
        # (asked every 0.5 s: each look is a session the daemon serves)
        wait_for(lambda: status_num(status(env), "naps") >= n0 + IDLE_NAPS, "%d naps" % IDLE_NAPS,
                 every=0.5)
        s1 = status(env)
        cpu = status_num(s1, "cpu_us") - status_num(s0, "cpu_us")
        wall = status_num(s1, "wall_us") - status_num(s0, "wall_us")
        check(wall > 0 and cpu / wall < IDLE_CPU_MAX,
              "idle CPU %.2f%% of a core over %.1f s (%d us; below %.0f%%)" %
              (100.0 * cpu / max(wall, 1), wall / 1e6, cpu, 100 * IDLE_CPU_MAX))

        # ---- unmodified ibverbs-utils, attached (run with no --port)
        out = subprocess.run([SRNIC, "run", "--", "ibv_devices"], env=env, capture_output=True,
                             text=True, timeout=GUARD_S)
        check(out.returncode == 0 and re.search(r"^\s+srnic0\s+[0-9a-f]{16}$", out.stdout, re.M),
              "ibv_devices lists the daemon's srnic0: %r %r" % (out.stdout, out.stderr[-300:]))
        out = subprocess.run([SRNIC, "run", "--", "ibv_devinfo", "-v"], env=env,
                             capture_output=True, text=True, timeout=GUARD_S)
        text = out.stdout
        check(out.returncode == 0, "ibv_devinfo -v exit %d: %s" % (out.returncode, out.stderr))
        for w in (r"hca_id:\s+srnic0", r"phys_port_cnt:\s+1", r"state:\s+PORT_ACTIVE \(4\)",
                  r"link_layer:\s+Ethernet", r"max_qp_wr:\s+[1-9]\d*", r"gid_tbl_len:\s+3",
                  r"GID\[\s*1\]:\s+::ffff:10\.79\.0\.1, RoCE v2"):
            check(re.search(w, text), "ibv_devinfo -v shows %s" % w)
        st = status(env)
        g0 = re.search(r"gid\[0\] (\S+)", st)
        d0 = re.search(r"GID\[\s*0\]:\s+(\S+), RoCE v2", text)
        check(g0 and d0 and ipaddress.IPv6Address(g0.group(1)) ==
              ipaddress.IPv6Address(d0.group(1)),
              "ibv_devinfo's GID[0] is the daemon's (%s, %s)" %
              (d0 and d0.group(1), g0 and g0.group(1)))
        check(re.search(r"link ACTIVE", st), "status: link ACTIVE")
        check("engine on a thread" in st, "one lcore: the engine on a thread")
        # registered with EAL (rte_thread_register()): an lcore id, so the
        # mbuf pools' per-lcore caches serve it (before: every mbuf through
        # the pool's ring, "no lcore id")
        wait_for(lambda: "engine on a thread (lcore" in status(env) or daemon.poll() is not None,
                 "the engine thread's lcore id")
        st = status(env)
        check(re.search(r"engine on a thread \(lcore \d+\)", st),
              "the engine's thread has an lcore id: %s" %
              (re.search(r"engine on a thread[^p]*", st) or [st[:200]])[0])

        # ---- the data path: ibv_rc_pingpong attached, server and client on
        # the daemon's one device (the device's own GID: its loopback),
        # every message's bytes checked (-c), the daemon's objects back to
        # what they were once both have exited
        base = objects(status(env))
        check(base is not None and base["qps"] == 0 and base["shm_bytes"] == 0,
              "status counts the daemon's objects, none held: %r" % base)
        srv, cli = pingpong_pair(env, ["-c", "-n", "200"])
        outs = []
        for p in (srv, cli):
            try:
                outs.append(p.communicate(timeout=GUARD_S)[0])
            except subprocess.TimeoutExpired:
                p.kill()
                outs.append(p.communicate()[0] + " (hung)")
        for name, p, out in (("server", srv, outs[0]), ("client", cli, outs[1])):
            check(p.returncode == 0 and "200 iters in" in out,
                  "ibv_rc_pingpong -g 1 -c -n 200 attached, %s: exit %s, %r" %
                  (name, p.returncode, out[-600:]))
        check(wait_for(lambda: objects(status(env)) == base, "the pingpongs' objects freed"),
              "after both exit the daemon holds what it held before: %r" % objects(status(env)))

        # ---- completion channels attached: ibv_rc_pingpong -e waits in
        # ibv_get_cq_event (the channel's eventfd, written by the daemon's
        # engine once per armed CQ that got a CQE)
        srv, cli = pingpong_pair(env, ["-c", "-e", "-n", "100"])
        for name, p in (("server", srv), ("client", cli)):
            try:
                out = p.communicate(timeout=GUARD_S)[0]
            except subprocess.TimeoutExpired:
                p.kill()
                out = p.communicate()[0] + " (hung)"
            check(p.returncode == 0 and "100 iters in" in out,
                  "ibv_rc_pingpong -e -c -n 100 attached, %s: exit %s, %r" %
                  (name, p.returncode, out[-400:]))
        check(wait_for(lambda: objects(status(env)) == base, "the -e pingpongs' objects freed"),
              "after the -e pair the daemon holds what it held before")

        # ---- a session's death: ib_write_bw's server killed with SIGKILL
        # mid-run. The daemon reclaims its QP, CQ, MR, PD and rings (status
        # back to the client's alone, then to none), and the client, whose
        # WRITEs no QP answers any more, ends with an error CQE (retry
        # exceeded) in bounded time, never a hang
        port = free_port()
        cmd = [SRNIC, "run", "--", "ib_write_bw", "-x", "1", "-s", "65536", "-n", "100000000",
               "-p", str(port)]
        srv = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        wait_for(lambda: tcp_listening(port) or srv.poll() is not None, "ib_write_bw's server")
        cli = subprocess.Popen(cmd + ["127.0.0.1"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)

        def wqes_of(pid):
            m = re.search(r"session \d+ pid %d .* qps (\d+) mrs \d+ wqes (\d+)" % pid,
                          status(env))
            return (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        running = wait_for(lambda: wqes_of(cli.pid)[1] > 1000 or cli.poll() is not None,
                           "the client's WRITEs under way", every=0.2)
        held = objects(status(env))
        check(running and wqes_of(srv.pid)[0] == 1 and held["qps"] == 2 and held["mrs"] >= 2,
              "ib_write_bw attached under way: %d WQEs posted, objects %r" %
              (wqes_of(cli.pid)[1], held))
        srv.kill()
        srv.wait()
        check(wait_for(lambda: "pid %d " % srv.pid not in status(env) and
                       objects(status(env))["qps"] <= 1, "the killed server's session reclaimed"),
              "SIGKILL: the server's session is gone and its QP reclaimed: %r" %
              objects(status(env)))
        try:
            out = cli.communicate(timeout=GUARD_S)[0]
        except subprocess.TimeoutExpired:
            cli.kill()
            out = cli.communicate()[0] + " (hung)"
        err = re.search(r"Failed status (\d+)[^\n]*", out)
        # 12: IBV_WC_RETRY_EXC_ERR; 5: IBV_WC_WR_FLUSH_ERR (a later WQE of the QP in ERR)
        check(cli.returncode not in (0, None) and err and err.group(1) in ("12", "5"),
              "the client ends with an error CQE (retry exceeded): exit %s, %r" %
              (cli.returncode, err.group(0) if err else out[-500:]))
        check(wait_for(lambda: objects(status(env)) == base, "both sessions' objects freed"),
              "the daemon holds what it held before: %r" % objects(status(env)))

        # ---- a second daemon on the same socket: refused before it takes a port
        # (one that does not exist: a daemon that tried it first would fail on it)
        out = subprocess.run(nsx + [SRNIC, "daemon", "--port", "net_af_packet1,iface=srnicd-none",
                                    "--ip", "10.79.0.3"], env=env, capture_output=True,
                             text=True, timeout=GUARD_S)
        check(out.returncode == 1 and "another srnicd serves " + sock in out.stderr,
              "a second daemon on the socket: exit %d, %r" % (out.returncode, out.stderr[-300:]))
        check(status_num(status(env), "srnicd pid") == daemon.pid, "the first still serves")
        check("sva" in st and DAEMON_IP in st, "status: the port and the address")

        # ---- a second session, held open, in status with pid and program
        good = Session(sock)
        r = good.call(SVC_HELLO, hello_body())
        check(r and r[0] == 0, "HELLO answered")
        r = good.call(SVC_OPEN, struct.pack("<I", 0))
        handle = struct.unpack_from("<I", r[1])[0] if r and r[0] == 0 else 0
        check(handle != 0, "OPEN_DEVICE gives a handle")
        st = status(env)
        check(re.search(r"session \d+ pid %d uid 0 program python3 devices_open 1" % os.getpid(),
                        st), "status lists the session: pid %d, python3, 1 device\n%s" %
              (os.getpid(), st))

        # ---- hostile sessions: each closed alone
        bad_before = status_num(status(env), "closed_bad")
        hostile = [
            ("garbage", [os.urandom(300)]),
            ("short", [b"\x01\x00"]),
            ("before HELLO", [msg(SVC_QDEV, 1, struct.pack("<I", handle))]),
            ("len lies", [HDR.pack(SVC_HELLO, 0, 99, 1, 0) + hello_body()]),
            ("unknown type", [msg(SVC_HELLO, 1, hello_body()), msg(77, 2)]),
            ("second HELLO", [msg(SVC_HELLO, 1, hello_body()), msg(SVC_HELLO, 2, hello_body())]),
            ("wrong size", [msg(SVC_HELLO, 1, hello_body()), msg(SVC_QPORT, 2, b"\0" * 5)]),
            ("old version", [msg(SVC_HELLO, 1, hello_body(major=9))]),
        ]
        for name, msgs in hostile:
            h = Session(sock)
            for m in msgs:
                h.s.send(m)
            # replies to the well-formed ones first, then the close
            closed = wait_for(lambda: h.closed_by_daemon(), "the close of '%s'" % name)
            check(closed, "hostile session '%s' closed by the daemon" % name)
            h.close()
        bad_after = status_num(status(env), "closed_bad")
        check(bad_after == bad_before + len(hostile),
              "status counts %d sessions closed for a bad message (%d -> %d)" %
              (len(hostile), bad_before, bad_after))
        # a handle that is not the session's: answered -EBADF, session kept
        other = Session(sock)
        other.call(SVC_HELLO, hello_body())
        r = other.call(SVC_QPORT, struct.pack("<II", handle, 1))
        check(r is not None and r[0] == -9, "another session's handle: -EBADF (%r)" %
              (r and r[0]))
        r = other.call(SVC_QPORT, struct.pack("<II", 0x10001, 1))
        check(r is not None and r[0] == -9, "a handle never given: -EBADF")
        # objects: another session's PD is -EBADF too, and stays the owner's
        r = good.call(SVC_MAP_SHM, struct.pack("<I", handle))
        check(r is not None and r[0] == 0, "MAP_SHM: the session's rings (%r)" % (r and r[0]))
        r = good.call(SVC_ALLOC_PD, struct.pack("<I", handle))
        pd = struct.unpack_from("<I", r[1])[0] if r and r[0] == 0 else 0
        check(pd != 0, "ALLOC_PD gives a handle")
        r = other.call(SVC_OPEN, struct.pack("<I", 0))
        oh = struct.unpack_from("<I", r[1])[0] if r and r[0] == 0 else 0
        other.call(SVC_MAP_SHM, struct.pack("<I", oh))
        r = other.call(SVC_DEALLOC_PD, struct.pack("<I", pd))
        check(r is not None and r[0] == -9, "DEALLOC_PD of another session's PD: -EBADF (%r)" %
              (r and r[0]))
        r = good.call(SVC_DEALLOC_PD, struct.pack("<I", pd))
        check(r is not None and r[0] == 0, "its owner deallocates it (%r)" % (r and r[0]))
        r = good.call(SVC_DEALLOC_PD, struct.pack("<I", pd))
        check(r is not None and r[0] == -9, "a freed PD's handle: -EBADF (%r)" % (r and r[0]))
        other.close()
        # the good session is still served, the daemon still lists sessions
        r = good.call(SVC_QPORT, struct.pack("<II", handle, 1))
        check(r is not None and r[0] == 0 and len(r[1]) > 0,
              "the first session is still served after the hostile ones")
        r = good.call(SVC_QGID, struct.pack("<III", handle, 1, 1))
        check(r is not None and r[0] == 0 and
              ipaddress.IPv6Address(r[1][:16]) == ipaddress.IPv6Address("::ffff:" + DAEMON_IP),
              "QUERY_GID 1 is ::ffff:%s" % DAEMON_IP)
        out = subprocess.run([SRNIC, "run", "--", "ibv_devices"], env=env, capture_output=True,
                             text=True, timeout=GUARD_S)
        check("srnic0" in out.stdout, "a new program still attaches after the hostile sessions")
        good.close()
        wait_for(lambda: "program python3" not in status(env), "the closed session gone")

        # ---- SIGTERM: a clean exit, the socket removed
        pid = status_num(status(env), "srnicd pid")
        check(pid == daemon.pid, "status names the daemon's pid %d (%d)" % (daemon.pid, pid))
        daemon.send_signal(signal.SIGTERM)
        try:
            rc = daemon.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            rc = None
        text = open(log).read()
        check(rc == 0 and "srnicd: stopped" in text,
              "SIGTERM: exit %s, 'stopped' logged:\n%s" % (rc, text[-800:]))
        check(not os.path.exists(sock), "the socket is removed at exit")
        daemon = None

        # ---- again on two lcores: the engine on the worker, SIGINT stops it
        with open(log, "w") as lf:
            daemon = subprocess.Popen(nsx + [SRNIC, "daemon", "--port", "net_af_packet0,iface=sva",
                                             "--ip", DAEMON_IP, "--lcores", "0,1"],
                                      env=env, stdout=lf, stderr=subprocess.STDOUT)
        up = wait_for(lambda: "srnicd: ready" in open(log).read() or daemon.poll() is not None,
                      "the second start's ready line")
        check(up and daemon.poll() is None and "engine on a worker lcore" in status(env),
              "--lcores 0,1: the engine on a worker lcore")
        out = subprocess.run([SRNIC, "run", "--", "ibv_devices"], env=env, capture_output=True,
                             text=True, timeout=GUARD_S)
        check("srnic0" in out.stdout, "attached again after a restart")
        daemon.send_signal(signal.SIGINT)
        try:
            rc = daemon.wait(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0 and "srnicd: stopped" in open(log).read() and not os.path.exists(sock),
              "SIGINT: exit %s, stopped, socket removed" % rc)
        daemon = None

        # ---- no daemon, no port: the program is told what to start
        out = subprocess.run([SRNIC, "run", "--", "ibv_devices"], env=env, capture_output=True,
                             text=True, timeout=GUARD_S)
        check("srnic0" not in out.stdout and "no srnicd answers" in out.stderr,
              "with no daemon: no device, and what to start: %r" % out.stderr[-400:])
        out = subprocess.run([SRNIC, "status"], env=env, capture_output=True, text=True,
                             timeout=GUARD_S)
        check(out.returncode != 0 and "no daemon answers" in out.stderr,
              "status with no daemon: exit %d, %r" % (out.returncode, out.stderr))
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        subprocess.run(["ip", "netns", "del", ns])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
