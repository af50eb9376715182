#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""rdma_cm in the daemon (doc/srnicd.md section 7): unmodified rdma_cm
programs attached to one srnicd (no --port: the daemon's device, its CM
and its ARP), server and client on the device's own address, so every
packet loops back through the daemon:

  - perftest's ib_write_bw -R (rdma_cm connects it: REQ, REP, RTU through
    the daemon's CM, the events through each library's event socket, a
    DREQ/DREP at the end): both exit 0, the daemon's CM counted each MAD,
    and its rdma_cm ids and objects go back to none;
  - a second `rping -s` on the port a first one listens on gets
    EADDRINUSE (rping prints it and exits non-zero): listeners are the
    device's, across processes; once the first is killed its listener goes
    with its session and the port is free again;
  - the listener's library CM thread sleeps in poll() with no timeout
    (nothing to resolve); an rping -c to an address no one answers ends
    with ADDR_ERROR at its timeout (the thread, woken, asks ARP again);
  - cmtime -c 16: sixteen connections at once, made and ended through the
    daemon's CM;
  - a session's death: ib_write_bw -R's server SIGKILLed mid-run, the
    daemon disconnects its id (a DREQ to the client's), the client ends
    with an error in bounded time, everything is freed;
  - a hostile session (the test's own, speaking the protocol itself) names
    a victim's QP in its REQ, REP and SIDR_REP, the daemon's QP1, a QP of
    the wrong type or in ERR, a source GID not the device's, a listen on a range of
    service IDs: each refused EINVAL and counted (status' cm_refused_*),
    a REQ (SIDR_REQ) sent on the id a REQ (SIDR_REQ) made: EINVAL, the
    daemon still serving,
    none sent (lib/cm's tx_rep, tx_sidr_rep); its own REQ still goes
    through (its QP, or one of another session of its process), the REQ
    event it gets shows no address of the daemon's, and
    the victim's ibv_rc_pingpong -c pair runs to its end (every byte
    checked) beside it.

  srnicd_cm_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs

Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import glob
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, SRNIC, attached_env, check, daemon_ready, daemon_start,
                          failures, finish, free_port, objects, run, session_of, status,
                          status_num, svc_types, tcp_listening, wait_for)
from srnicd_test import HDR, hello_body, msg

SKIP = 77
DAEMON_IP = "10.83.0.1"
NO_NEIGHBOUR = "10.83.0.77"     # on the daemon's subnet, answered by no one


def cm_counts(text):
    """status' cm line: ids and lib/cm's counters, as a dict."""
    m = re.search(r"^cm (.*)$", text, re.M)
    if not m:
        return None
    f = m.group(1).split()
    return {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2)}


def cm_thread_syscall(pid):
    """/proc's syscall line of pid's srnic-cm thread (its library's CM
    thread), or None"""
    for t in glob.glob("/proc/%d/task/*" % pid):
        try:
            if open(os.path.join(t, "comm")).read().strip() == "srnic-cm":
                return open(os.path.join(t, "syscall")).read().split()
        except OSError:
            pass
    return None


def cm_thread_sigblk(pid):
    """/proc's SigBlk of pid's srnic-cm thread as an int, or None"""
    for t in glob.glob("/proc/%d/task/*" % pid):
        try:
            if open(os.path.join(t, "comm")).read().strip() != "srnic-cm":
                continue
            for ln in open(os.path.join(t, "status")):
                if ln.startswith("SigBlk:"):
                    return int(ln.split()[1], 16)
        except OSError:
            pass
    return None


def cm_thread_blocked(pid):
    """Whether the CM thread sits in poll() (x86-64 syscall 7) with no
    timeout (-1 as the int it is)"""
    s = cm_thread_syscall(pid)
    return s is not None and s[0] == "7" and int(s[3], 16) & 0xffffffff == 0xffffffff


# lib/cm/srnic_cm.h and lib/svc/srnic_svc.h, restated (x86-64 layouts)
CM_S_REQ, CM_S_REP, CM_S_SIDR_REQ, CM_S_SIDR_REP = 1, 2, 8, 9   # enum svc_cm_send
CM_EV_REQ_RECEIVED, CM_EV_SIDR_REQ_RECEIVED = 1, 13             # enum srnic_cm_event_type
SEND_PARAM = 32         # svc_cm_send_req.param, svc_cm_event.param
SEND_LEN = 488          # sizeof(struct svc_cm_send_req), of struct svc_cm_event
IBV_QPT_RC, IBV_QPT_UD = 2, 4
IBV_QP_STATE, IBV_QPS_ERR = 1, 6
QP_ATTR_LEN = 144       # sizeof(struct ibv_qp_attr)
IBV_MTU_1024 = 3
HOSTILE_SID = 0x5352444854455354


def cm_path(sgid, dgid):
    """struct srnic_cm_path (48 bytes): sgid, dgid, flow label, traffic
    class, hop limit, sl, mtu, packet life time"""
    return struct.pack("<16s16sIBBBxIB3x", sgid, dgid, 0, 0, 64, 0, IBV_MTU_1024, 14)


def req_param(sgid, dgid, qpn, qp_type, sid=HOSTILE_SID):
    """struct srnic_cm_req_param (96 bytes)"""
    return cm_path(sgid, dgid) + struct.pack(
        "<QIII4xQBBBBBBBBBB6x", sid, qpn, qp_type, 100, 0, 0, 1, 1, 20, 20, 0, 7, 7, 3, 0)


def rep_param(qpn):
    """struct srnic_cm_rep_param (24 bytes)"""
    return struct.pack("<II QBBBBBBB1x", qpn, 200, 0, 0, 1, 1, 0, 0, 7, 0)


def sidr_req_param(sgid, dgid, sid=HOSTILE_SID):
    """struct srnic_cm_sidr_req_param (80 bytes)"""
    return cm_path(sgid, dgid) + struct.pack("<QQB3xIB7x", sid, 0, 0, 1000, 3)


def sidr_rep_param(qpn):
    """struct srnic_cm_sidr_rep_param (48 bytes), status SUCCESS"""
    return struct.pack("<IIi4xQB7xQB7x", qpn, 0x01234567, 0, 0, 0, 0, 0)


class RawSession:
    """A control session of the test's own, speaking the protocol itself:
    what a hostile program can send, with no library between."""

    def __init__(self, sock):
        self.t = svc_types()
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(GUARD_S)
        self.s.connect(sock)
        self.seq = 0
        self.ev = None

    def call(self, name, body, fds=()):
        """(status, reply body, the descriptors that came with it)"""
        self.seq += 1
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("%di" % len(fds), *fds))]
        self.s.sendmsg([msg(self.t[name], self.seq, body)], anc if fds else [])
        r, rfds, _, _ = socket.recv_fds(self.s, 65536, 1)
        return HDR.unpack_from(r)[4], r[HDR.size:], rfds

    def handle(self, name, body, fds=()):
        st, r, _ = self.call(name, body, fds)
        check(st == 0, "the hostile session's own %s: %d" % (name, st))
        return struct.unpack_from("<I", r)[0]

    def open(self):
        """HELLO, the device opened, its ring memory (and its async
        pipe), a PD and a CQ: what creating QPs needs"""
        self.call("SVC_HELLO", hello_body())
        self.dev = self.handle("SVC_OPEN_DEVICE", struct.pack("<I", 0))
        _, _, fds = self.call("SVC_MAP_SHM", struct.pack("<I", self.dev))
        for fd in fds:
            os.close(fd)
        self.pd = self.handle("SVC_ALLOC_PD", struct.pack("<I", self.dev))
        self.cq = self.handle("SVC_CREATE_CQ", struct.pack("<III", self.dev, 16, 0))

    def create_qp(self, qp_type):
        """a QP of the session's: (handle, QPN)"""
        st, r, _ = self.call("SVC_CREATE_QP", struct.pack(
            "<IIIII5II", self.pd, self.cq, self.cq, qp_type, 0, 4, 4, 1, 1, 0, 0))
        check(st == 0, "the hostile session's own QP of type %d: %d" % (qp_type, st))
        h, _, qpn = struct.unpack_from("<III", r)
        return h, qpn

    def close(self):
        if self.ev is not None:
            self.ev.close()
        self.s.close()

    def cm_send(self, cid, what, param):
        body = struct.pack("<IIIBB2x", cid, what, 0, 0, 0) + param
        body += bytes(SEND_LEN - HDR.size - len(body))
        return self.call("SVC_CM_SEND", body)[0]

    def cm_event(self, want):
        """the next CM event on the event socket of type want: (id, new_id, param)"""
        while True:
            m = self.ev.recv(65536)
            cid, new_id, etype = struct.unpack_from("<III", m, HDR.size)
            if etype == want:
                return cid, new_id, m[SEND_PARAM:SEND_PARAM + 160]


def hostile_cm(env, sock):
    """A session that names what is not its own in its CM messages, beside
    a victim pair whose QP it names; see the module's docstring."""
    port = free_port()
    outf = tempfile.TemporaryFile(mode="w+")
    cmd = [SRNIC, "run", "--", "stdbuf", "-oL", "ibv_rc_pingpong", "-g", "1", "-c", "-n",
           "500", "-s", "4096", "-p", str(port)]
    srv = subprocess.Popen(cmd, env=env, stdout=outf, stderr=subprocess.STDOUT, text=True)

    def victim_qpn():
        outf.seek(0)
        m = re.search(r"local address: .*QPN (0x[0-9a-f]+)", outf.read())
        return int(m.group(1), 16) if m else None
    vqpn = wait_for(lambda: srv.poll() is not None or (tcp_listening(port) and victim_qpn()),
                    "the victim server's QP")
    if not check(vqpn is not None and vqpn > 1, "the victim's QP: %s" % vqpn):
        srv.kill()
        return
    text0 = status(env)
    r0 = {k: status_num(text0, "cm_refused_" + k)
          for k in ("qp_other", "qp_type", "qp_state", "sgid", "listen_mask")}
    tx_rep0, tx_srep0 = status_num(text0, "tx_rep"), status_num(text0, "tx_sidr_rep")

    h = RawSession(sock)
    h.open()
    dev = h.dev
    st, r, _ = h.call("SVC_QUERY_GID", struct.pack("<III", dev, 1, 1))
    gid = r[:16]
    st, _, fds = h.call("SVC_CM_OPEN", struct.pack("<I", dev))
    check(st == 0 and len(fds) == 1, "CM_OPEN: %d, %d fd" % (st, len(fds)))
    h.ev = socket.socket(fileno=fds[0])
    h.ev.settimeout(GUARD_S)
    _, rc_qpn = h.create_qp(IBV_QPT_RC)
    _, ud_qpn = h.create_qp(IBV_QPT_UD)
    lid = h.handle("SVC_CM_CREATE_ID", struct.pack("<I", dev))

    # a listen on a range of service IDs would take other sessions' REQs
    st = h.call("SVC_CM_LISTEN", struct.pack("<IIQQ", lid, 0, HOSTILE_SID & ~0xffff,
                                             0xffffffffffff0000))[0]
    check(st == -22, "LISTEN on 2^16 service IDs at once: %d (EINVAL)" % st)
    st = h.call("SVC_CM_LISTEN", struct.pack("<IIQQ", lid, 0, HOSTILE_SID, 0))[0]
    check(st == 0, "LISTEN on its one service ID: %d" % st)
    foreign = bytes(10) + b"\xff\xff" + bytes([10, 99, 0, 1])
    cases = (("a source GID not the device's", req_param(foreign, gid, rc_qpn, IBV_QPT_RC)),
             ("the victim's QP", req_param(gid, gid, vqpn, IBV_QPT_RC)),
             ("the daemon's QP1", req_param(gid, gid, 1, IBV_QPT_RC)),
             ("its UD QP as RC", req_param(gid, gid, ud_qpn, IBV_QPT_RC)))
    for what, p in cases:
        # each from a fresh id: a REQ sent would leave it REQ_SENT
        st = h.cm_send(h.handle("SVC_CM_CREATE_ID", struct.pack("<I", dev)), CM_S_REQ, p)
        check(st == -22, "REQ naming %s: %d (EINVAL)" % (what, st))
    # its own RC QP, to its own listener: served, and the REQ event
    # carries none of the daemon's addresses (the listener's pointer)
    aid = h.handle("SVC_CM_CREATE_ID", struct.pack("<I", dev))
    st = h.cm_send(aid, CM_S_REQ, req_param(gid, gid, rc_qpn, IBV_QPT_RC))
    check(st == 0, "REQ naming its own RC QP (RESET): %d" % st)
    cid, nid, param = h.cm_event(CM_EV_REQ_RECEIVED)
    remote_qpn = struct.unpack_from("<I", param, 76)[0]
    check(cid == lid and nid != 0 and remote_qpn == rc_qpn and param[:8] == bytes(8),
          "its listener gets the REQ (remote QPN %#x), no daemon address in it (%s)" %
          (remote_qpn, param[:8].hex()))
    for what, qpn in (("the victim's QP", vqpn), ("its UD QP", ud_qpn)):
        st = h.cm_send(nid, CM_S_REP, rep_param(qpn))
        check(st == -22, "REP naming %s: %d (EINVAL)" % (what, st))
    # a REQ sent on the REQ's own new id (REQ_RCVD, not IDLE): refused by
    # the CM, the daemon still there (its new id once had no device: SEGV)
    st = h.cm_send(nid, CM_S_REQ, req_param(gid, gid, rc_qpn, IBV_QPT_RC))
    check(st == -22, "REQ on the id a REQ made: %d (EINVAL)" % st)
    sid = h.handle("SVC_CM_CREATE_ID", struct.pack("<I", dev))
    st = h.cm_send(sid, CM_S_SIDR_REQ, sidr_req_param(gid, gid))
    check(st == 0, "SIDR_REQ to its own listener: %d" % st)
    cid, snid, param = h.cm_event(CM_EV_SIDR_REQ_RECEIVED)
    check(cid == lid and snid != 0 and param[:8] == bytes(8),
          "its listener gets the SIDR_REQ, no daemon address in it (%s)" % param[:8].hex())
    for what, qpn in (("the victim's QP", vqpn), ("its RC QP", rc_qpn)):
        st = h.cm_send(snid, CM_S_SIDR_REP, sidr_rep_param(qpn))
        check(st == -22, "SIDR_REP naming %s: %d (EINVAL)" % (what, st))
    st = h.cm_send(snid, CM_S_SIDR_REQ, sidr_req_param(gid, gid))
    check(st == -22, "SIDR_REQ on the id a SIDR_REQ made: %d (EINVAL)" % st)
    # its own QP, but one in ERR: no connection starts from there
    eqp, err_qpn = h.create_qp(IBV_QPT_RC)
    st = h.call("SVC_MODIFY_QP", struct.pack("<Ii", eqp, IBV_QP_STATE) +
                struct.pack("<I", IBV_QPS_ERR) + bytes(QP_ATTR_LEN - 4))[0]
    check(st == 0, "its second RC QP to ERR: %d" % st)
    st = h.cm_send(h.handle("SVC_CM_CREATE_ID", struct.pack("<I", dev)), CM_S_REQ,
                   req_param(gid, gid, err_qpn, IBV_QPT_RC))
    check(st == -22, "REQ naming its QP in ERR: %d (EINVAL)" % st)
    # a QP of another session of the same process (a program's rdma_cm
    # has a context of its own beside the program's): the process's to name
    h2 = RawSession(sock)
    h2.open()
    _, qpn2 = h2.create_qp(IBV_QPT_RC)
    st = h.cm_send(h.handle("SVC_CM_CREATE_ID", struct.pack("<I", dev)), CM_S_REQ,
                   req_param(gid, gid, qpn2, IBV_QPT_RC))
    check(st == 0, "REQ naming a QP of another session of its own process: %d" % st)
    h2.close()
    st, _, _ = h.call("SVC_CM_STATE", struct.pack("<I", lid))
    check(st == 0, "the hostile session is still served: %d" % st)

    text = status(env)
    got = {k: status_num(text, "cm_refused_" + k) - r0[k] for k in r0}
    check(got == {"qp_other": 4, "qp_type": 3, "qp_state": 1, "sgid": 1, "listen_mask": 1},
          "each refusal counted in status: %r" % got)
    check(status_num(text, "tx_rep") == tx_rep0 and
          status_num(text, "tx_sidr_rep") == tx_srep0,
          "no REP or SIDR_REP went out (tx_rep %d -> %d, tx_sidr_rep %d -> %d)" %
          (tx_rep0, status_num(text, "tx_rep"), tx_srep0, status_num(text, "tx_sidr_rep")))
    h.close()

    # the victim's pair, untouched: 500 x 4 KiB each way, every byte checked
    cli = subprocess.Popen(cmd + ["127.0.0.1"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    out = finish(cli)
    srv.wait(timeout=GUARD_S)
    outf.seek(0)
    sout = outf.read()
    for name, p, o in (("server", srv, sout), ("client", cli, out)):
        check(p.returncode == 0 and re.search(r"^4096000 bytes in .* seconds", o, re.M),
              "the victim's ibv_rc_pingpong -c -n 500 -s 4096, %s: exit %s, %r" %
              (name, p.returncode, o[-300:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("rping") is None or shutil.which("ib_write_bw") is None:
        print("skip: needs root, rdmacm-utils (rping) and perftest (ib_write_bw)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-cm-test-")
    sock = os.path.join(tmp, "run", "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    procs = []
    # a net_ring0 port: the device's own address never leaves the daemon anyway
    daemon = daemon_start(env, log, DAEMON_IP, sock)
    try:
        if not daemon_ready(daemon, log):
            return 1
        base = objects(status(env))
        cm0 = cm_counts(status(env))
        check(base is not None and cm0 is not None and cm0["ids"] == 0,
              "status shows the daemon's objects and its CM, no id held: %r %r" % (base, cm0))

        # ---- a hostile session's CM messages (first: before any other
        # connection, so lib/cm's counters move only for it)
        hostile_cm(env, sock)
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids") == 0 and
                       objects(status(env)) == base, "the hostile session reclaimed"),
              "the hostile session's ids and objects freed: %r" % objects(status(env)))
        cm0 = cm_counts(status(env))

        # ---- ib_write_bw -R: connected by rdma_cm through the daemon
        port = "18515"
        cmd = ["ib_write_bw", "-R", "-s", "65536", "-n", "200", "-p", port]
        srv = run(env, cmd)
        procs.append(srv)
        # listening, not only an id: a REQ before rdma_listen is REJected
        # (no listener), as the kernel's is
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("listening", 0) >= 1 or
                       srv.poll() is not None, "ib_write_bw -R's listener"),
              "the server's rdma_listen is a listener of the daemon's CM")
        cli = run(env, cmd + [DAEMON_IP])
        procs.append(cli)
        outs = [finish(srv), finish(cli)]
        for name, p, out in (("server", srv, outs[0]), ("client", cli, outs[1])):
            check(p.returncode == 0 and re.search(r"^\s*65536\s+200\s", out, re.M),
                  "ib_write_bw -R -s 65536 -n 200 attached, %s: exit %s, %r" %
                  (name, p.returncode, out[-600:]))
        cm1 = wait_for(lambda: (lambda c: c if c and c["ids"] == 0 else None)(
            cm_counts(status(env))), "the rdma_cm ids of both gone")
        cm1 = cm1 or cm_counts(status(env))
        d = {k: cm1[k] - cm0[k] for k in cm0}
        check(d["tx_req"] >= 1 and d["rx_req"] >= 1 and d["tx_rep"] >= 1 and
              d["rx_rep"] >= 1 and d["tx_rtu"] >= 1 and d["rx_rtu"] >= 1,
              "the daemon's CM carried the connection: REQ %d/%d, REP %d/%d, RTU %d/%d" %
              (d["tx_req"], d["rx_req"], d["tx_rep"], d["rx_rep"], d["tx_rtu"], d["rx_rtu"]))
        check(d["tx_dreq"] >= 1 and d["rx_dreq"] >= 1,
              "and its end: DREQ sent %d, received %d" % (d["tx_dreq"], d["rx_dreq"]))
        check(cm1["ids"] == 0, "no rdma_cm id left in the daemon: %d" % cm1["ids"])
        check(wait_for(lambda: objects(status(env)) == base, "ib_write_bw's objects freed"),
              "the daemon holds what it held before: %r" % objects(status(env)))

        # ---- one listener per port on the device, across processes
        port = "7471"
        first = run(env, ["rping", "-s", "-a", DAEMON_IP, "-p", port, "-v"])
        procs.append(first)
        check(wait_for(lambda: (lambda s: s is not None and "cm_ids 1" in s)(
            session_of(status(env), first.pid)) and
            (cm_counts(status(env)) or {}).get("listening", 0) == 1 or first.poll() is not None,
            "the first rping -s listening"),
              "the first rping -s listens (its session holds one rdma_cm id): %r" %
              session_of(status(env), first.pid))
        # its library's CM thread, nothing to resolve, sleeps in poll() on
        # its fds with no timeout: no wake but an event (it woke every 5 ms)
        check(wait_for(lambda: cm_thread_blocked(first.pid), "the CM thread's block"),
              "the idle listener's srnic-cm thread waits in poll() with no timeout: %r" %
              cm_thread_syscall(first.pid))
        # a thread of srnic's: the program's SIGINT and SIGTERM are not its
        # own (doc/verbs.md), a Ctrl-C reaches rping's main thread
        blk = cm_thread_sigblk(first.pid)
        stop = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
        check(blk is not None and blk & stop == stop,
              "the srnic-cm thread has SIGINT and SIGTERM blocked (SigBlk %s)" %
              (None if blk is None else "%016x" % blk))
        second = run(env, ["rping", "-s", "-a", DAEMON_IP, "-p", port, "-v"])
        procs.append(second)
        out = finish(second)
        check(second.returncode not in (0, None) and "Address already in use" in out,
              "a second rping -s on port %s: exit %s, %r" % (port, second.returncode,
                                                             out[-300:]))
        check(first.poll() is None, "the first still listens")
        first.kill()
        first.wait()
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids") == 0,
                       "the killed listener's id reclaimed"),
              "SIGKILL: the first's listener goes with its session")
        third = run(env, ["rping", "-s", "-a", DAEMON_IP, "-p", port, "-v"])
        procs.append(third)
        check(wait_for(lambda: (lambda s: s is not None and "cm_ids 1" in s)(
            session_of(status(env), third.pid)) and
            (cm_counts(status(env)) or {}).get("listening", 0) == 1 or third.poll() is not None,
            "a new rping -s listening"),
              "then a new rping -s listens on the port: %r" % session_of(status(env),
                                                                          third.pid))
        third.kill()
        third.wait()
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids") == 0 and
                       objects(status(env)) == base, "everything freed"),
              "the daemon holds what it held before: %r" % status(env)[-400:])

        # ---- an address no neighbour answers: the CM thread, woken by
        # rdma_resolve_addr, asks the daemon's ARP again every 5 ms until
        # rping's 2 s timeout, then ADDR_ERROR (not a wait for ever)
        lost = run(env, ["rping", "-c", "-a", NO_NEIGHBOUR, "-p", port, "-v", "-C", "1"])
        procs.append(lost)
        out = finish(lost)
        check(lost.returncode not in (0, None) and "ADDR_ERROR" in out and "(hung" not in out,
              "rping -c to %s, which nobody answers: ADDR_ERROR, exit %s, %r" %
              (NO_NEIGHBOUR, lost.returncode, out[-300:]))

        # ---- cmtime: 16 connections at once through the daemon's CM (its
        # server accepts on one thread, disconnects and destroys on
        # another); the client times its 7 steps and exits 0
        n = 16
        cm0 = cm_counts(status(env))
        srv = run(env, ["cmtime", "-b", DAEMON_IP, "-c", str(n)])
        procs.append(srv)
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("listening", 0) >= 1 or
                       srv.poll() is not None, "cmtime's listener") and srv.poll() is None,
              "cmtime's server listens")
        cli = run(env, ["cmtime", "-s", DAEMON_IP, "-c", str(n)])
        procs.append(cli)
        out = finish(cli)
        steps = re.findall(r"^(create id|resolve addr|resolve route|create qp|connect|"
                           r"disconnect|destroy)\s*:", out, re.M)
        check(cli.returncode == 0 and len(steps) == 7,
              "cmtime -c %d attached: exit %s, a time for each of its 7 steps %s" %
              (n, cli.returncode, steps))
        cm1 = wait_for(lambda: (lambda c: c if c and c["rx_drep"] - cm0["rx_drep"] >= n
                                else None)(cm_counts(status(env))), "cmtime's DREPs")
        cm1 = cm1 or cm_counts(status(env))
        d = {k: cm1[k] - cm0[k] for k in ("tx_req", "rx_req", "tx_rep", "tx_rtu", "tx_dreq",
                                          "rx_drep", "tx_rej", "req_resent", "dup_req",
                                          "rep_resent", "dup_rep", "dreq_resent")}
        # a loaded host may time a REQ, REP or DREQ out: its resend is
        # counted sent (and received, a duplicate, answered again) again
        extra = sum(d.pop(k) for k in ("req_resent", "dup_req", "rep_resent", "dup_rep",
                                       "dreq_resent"))
        for k in ("tx_req", "rx_req", "tx_rep", "tx_rtu", "tx_dreq", "rx_drep"):
            if n <= d[k] <= n + extra:
                d[k] = n
        check(all(d[k] == n for k in d if k != "tx_rej") and d["tx_rej"] == 0,
              "the daemon's CM: %d connections made and ended, none rejected: %r" % (n, d))
        check(srv.poll() is None, "cmtime's server still serves")
        srv.kill()
        srv.wait()
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids") == 0 and
                       objects(status(env)) == base, "cmtime's ids and objects freed"),
              "cmtime's ids and objects freed: %r" % objects(status(env)))

        # ---- a session's death disconnects its ids (doc/srnicd.md 8,
        # step 2): ib_write_bw -R's server SIGKILLed mid-run. The daemon
        # destroys its connected id as the kernel's ucma_close() does, so a
        # DREQ goes to the client's id (here the same CM: sent and received
        # once each); the client, whose WRITEs no QP answers, ends with an
        # error in bounded time (the test waits on its exit), never a hang
        cm0 = cm_counts(status(env))
        port = "18516"
        cmd = ["ib_write_bw", "-R", "-s", "65536", "-n", "100000000", "-p", port]
        srv = run(env, cmd)
        procs.append(srv)
        wait_for(lambda: (cm_counts(status(env)) or {}).get("listening", 0) >= 1 or
                 srv.poll() is not None, "the server's listener")
        cli = run(env, cmd + [DAEMON_IP])
        procs.append(cli)

        def wqes_of(pid):
            # (every session of the pid: rdma_cm's context and the program's own)
            return sum(int(w) for w in re.findall(r"session \d+ pid %d .* wqes (\d+)" % pid,
                                                  status(env)))
        running = wait_for(lambda: wqes_of(cli.pid) > 1000 or cli.poll() is not None,
                           "the client's WRITEs under way", every=0.2)
        check(running and cli.poll() is None and srv.poll() is None,
              "ib_write_bw -R attached under way: %d WQEs posted" % wqes_of(cli.pid))
        srv.kill()
        srv.wait()
        check(wait_for(lambda: session_of(status(env), srv.pid) is None,
                       "the killed server's session reclaimed"),
              "SIGKILL: the server's session is gone")
        # the control thread that answers status reclaimed it first: the
        # DREQs are the daemon's, sent while the client still runs (its
        # WRITEs' retries take seconds to give up)
        cmk = cm_counts(status(env))
        alive = cli.poll() is None
        check(alive and cmk["tx_dreq"] - cm0["tx_dreq"] >= 1,
              "the daemon sent the killed server's DREQ at once (%d), the client still "
              "running: %s" % (cmk["tx_dreq"] - cm0["tx_dreq"], alive))
        out = finish(cli)
        check(cli.returncode not in (0, None) and "(hung" not in out,
              "the client ends with an error, not a hang: exit %s, %r" %
              (cli.returncode, out[-300:]))
        cm1 = wait_for(lambda: (lambda c: c if c and c["ids"] == 0 else None)(
            cm_counts(status(env))), "both sides' ids gone") or cm_counts(status(env))
        check(cm1["ids"] == 0, "no rdma_cm id left in the daemon: %d" % cm1["ids"])
        check(cm1["tx_dreq"] - cm0["tx_dreq"] >= 1 and cm1["rx_dreq"] - cm0["rx_dreq"] >= 1,
              "the killed server's connection got its DREQ from the daemon: sent %d, "
              "received %d" % (cm1["tx_dreq"] - cm0["tx_dreq"], cm1["rx_dreq"] - cm0["rx_dreq"]))
        check(wait_for(lambda: objects(status(env)) == base, "both sessions' objects freed"),
              "the daemon holds what it held before: %r" % objects(status(env)))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if daemon.poll() is None:
            daemon.terminate()
            try:
                daemon.wait(timeout=GUARD_S)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
