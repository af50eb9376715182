#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnicd serving two ports, a device on each, from one engine thread
(doc/srnicd.md, "Several ports"): one daemon, started from a config file of
repeated port/ip keys, owns two net_memif ports joined to each other by one
memif socket in its own process (role=server and role=client), srnic0 and
srnic1, each with its own address; Debian's unmodified tools attached:

  ibv_devices                         lists srnic0 and srnic1
  status, /srnicd/devices             both devices, port, ip, link ACTIVE; a
                                      session's line names the device it opened
  ibv_rc_pingpong -d srnic0 -g 1 -c   server; the client on srnic1: both exit
                                      0, every byte checked (-c)
  ib_write_bw -d srnic0 / -d srnic1   server and client across the devices: exit 0
  a session of the test's own         a QP whose PD is srnic1's and whose CQ is
                                      srnic0's: -EINVAL (dev_mixed +1), the
                                      same QP on srnic1's CQ made after; srnic0's
                                      recv CQ only, or srnic0's SRQ, a srnic1
                                      CQ on a srnic0 channel, or a rereg
                                      (CHANGE_PD) of srnic1's MR to srnic0's PD:
                                      each -EINVAL, dev_mixed +1; a UD WQE of
                                      a srnic0 QP naming the session's srnic1
                                      AH: the QP fails (bad_ring, QP_FATAL) as
                                      with another session's AH; a GID
                                      query names each device's address; a
                                      REQ on a srnic0 CM id naming the srnic1
                                      QP's number -EINVAL (QPNs are a device's),
                                      on a srnic1 id sent; a
                                      listen on one service ID on both devices
                                      is taken on each, twice on one -EBUSY
  afterwards                          every object and CM id back to zero
  a port's link down                  a second daemon on net_ring0 and a memif
                                      client whose server (a third daemon) stops:
                                      IBV_EVENT_PORT_ERR (its async ring's
                                      entry, its pipe's byte) to the session
                                      holding srnic1 open and to one holding
                                      a srnic1 PD with its srnic1 handle
                                      closed, none to the one holding srnic0
                                      (made once the daemon logged both
                                      links up)
  a memif server's stops              a server daemon stopped 8 times, a
                                      client daemon reconnecting to each:
                                      every stop clean (exit 0, "stopped")
  a memif client with no server       exit 1, saying to start the server first
  option errors                       a 9th --port, two devices on one --ip,
                                      a --port without its --ip, one port twice
                                      (net_memif0 as server and as client,
                                      03:00.0 and 0000:03:00.0): exit non-zero
                                      naming the problem

  srnicd_devs_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs
"""
import argparse
import fcntl
import mmap
import os
import re
import select
import stat
import shutil
import socket
import struct
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, SRNIC, attached_env, check, daemon_ready, failures,
                          finish, free_port, objects, status, status_num, stop, svc_major,
                          svc_types, tcp_listening, tel, wait_for)
from srnicd_cm_test import CM_S_REQ, SEND_LEN, req_param

SKIP = 77
IP0, IP1 = "10.84.0.1", "10.84.0.2"
SVC_DEVICES_MAX = 8
OPTION_GUARD_S = 20     # an option error is said before DPDK starts
HDR = struct.Struct("<HHIIi")           # lib/svc/srnic_svc.h's svc_hdr
MAGIC = 0x534e5244
IBV_QPT_RC, IBV_QPT_UD = 2, 4
IBV_ACCESS_LOCAL_WRITE = 1
IBV_REREG_MR_CHANGE_PD = 2
MR_ADDR, MR_LEN = 0x5a0000000000, 4096     # a raw REG_MR's range (the daemon maps it)
SHM_ASYNC = 128         # svc_shm.async: after db and state, a cache line each
SHM_QP, QP_RING, WQE = 768, 262400, 128     # svc_shm.qp[], sizeof svc_qp_ring, svc_wqe
QP_SQ_COMP, QP_SQ = 64, 256                 # svc_qp_ring.sq_comp, .sq
IBV_QP_STATE, IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_QKEY = 1, 16, 32, 64
IBV_QP_SQ_PSN = 1 << 16
IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS = 1, 2, 3
IBV_WR_SEND = 2
IBV_EVENT_QP_FATAL = 1
QKEY = 0x11111111
SVC_ASYNC_RING = 64
IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR = 9, 10
EINVAL, EBUSY, ENODEV = 22, 16, 19
SERVER_STOPS = 8        # server_stops(): one crashed in three under load


def msg(mtype, seq, body=b""):
    return HDR.pack(mtype, 0, HDR.size + len(body), seq, 0) + body


class Raw:
    """A control session of the test's own (what a program may send with
    no library between)."""

    def __init__(self, sock):
        self.t = svc_types()
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.s.settimeout(GUARD_S)
        self.s.connect(sock)
        self.seq = 0
        self.fds = []

    def call(self, name, body=b"", fd=None):
        """(status, reply body); fd goes with the request; the descriptors
        that came with the reply kept to close"""
        self.seq += 1
        anc = [] if fd is None else [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                      struct.pack("i", fd))]
        self.s.sendmsg([msg(self.t[name], self.seq, body)], anc)
        r, fds, _, _ = socket.recv_fds(self.s, 65536, 2)
        self.fds += fds
        return HDR.unpack_from(r)[4], r[HDR.size:]

    def handle(self, name, body, fd=None):
        st, r = self.call(name, body, fd)
        check(st == 0, "%s: %d" % (name, st))
        return struct.unpack_from("<I", r)[0] if st == 0 else 0

    def qp(self, pd, cq, rcq=None, srq=0, qp_type=IBV_QPT_RC):
        """CREATE_QP's status (recv CQ rcq, else cq); the QP's handle, ring
        and number in self.qph, self.qpring, self.qpn"""
        st, r = self.call("SVC_CREATE_QP", struct.pack(
            "<IIIII5II", pd, cq, cq if rcq is None else rcq, qp_type, 0, 4, 4, 1, 1, 0,
            srq))
        self.qph, self.qpring, self.qpn = struct.unpack_from("<III", r) if st == 0 else \
            (None, None, None)
        return st

    def cm_send(self, cid, what, param):
        body = struct.pack("<IIIBB2x", cid, what, 0, 0, 0) + param
        return self.call("SVC_CM_SEND", body + bytes(SEND_LEN - HDR.size - len(body)))[0]

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.s.close()


def option_errors(daemon, tmp):
    """srnicd's option errors: said, exit non-zero, before DPDK starts"""
    ports = []
    for i in range(SVC_DEVICES_MAX + 1):
        ports += ["--port", "net_ring%d" % i, "--ip", "10.85.0.%d" % (i + 1)]
    cases = [
        (ports, "more than %d ports" % SVC_DEVICES_MAX, "a 9th --port"),
        (["--port", "net_ring0", "--ip", IP0, "--port", "net_ring1", "--ip", IP0],
         "both srnic0 (--port net_ring0) and srnic1 (--port net_ring1) have it",
         "two devices on one --ip"),
        (["--port", "net_ring0", "--ip", IP0, "--port", "net_ring1"],
         "device 1 (net_ring1): --port DEVARGS and --ip A.B.C.D are both needed",
         "a second --port without its --ip"),
        # one port twice, its options or its PCI address's form aside
        (["--port", "net_memif0,role=server", "--ip", IP0, "--port", "net_memif0,role=client",
          "--ip", IP1],
         "--port net_memif0,role=server (srnic0) and --port net_memif0,role=client (srnic1) "
         "are one port, net_memif0", "one port with two roles"),
        (["--port", "03:00.0", "--ip", IP0, "--port", "0000:03:00.0", "--ip", IP1],
         "--port 03:00.0 (srnic0) and --port 0000:03:00.0 (srnic1) are one port, 0000:03:00.0",
         "one PCI address in its two forms"),
    ]
    for args, want, what in cases:
        # refused before DPDK starts: at once (a daemon that took the
        # options would start, and serve until killed)
        try:
            r = subprocess.run([daemon] + args + ["--socket", os.path.join(tmp, "opt.sock")],
                               capture_output=True, text=True, timeout=OPTION_GUARD_S)
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = None, "(still running after %d s: killed) %s" % (OPTION_GUARD_S, e.stderr)
        check(rc == 2 and want in err, "%s: exit %s, says \"%s\": %s" % (what, rc, want, err[:300]))


def no_server(daemon, tmp):
    """a memif client port (role=client, or memif's default role) with no
    server at its socket: exit 1, saying to start the server first"""
    for port in ("net_memif0,role=client,id=0,socket=%s" % os.path.join(tmp, "none.sock"),
                 "net_memif0,id=0,socket=%s" % os.path.join(tmp, "none.sock")):
        r = subprocess.run([daemon, "--port", port, "--ip", IP0, "--socket",
                            os.path.join(tmp, "ns.sock")], capture_output=True, text=True,
                           timeout=GUARD_S)
        check(r.returncode == 1 and "is its memif server running? Start the server "
              "(role=server, the same socket=" in r.stderr,
              "--port %s, no server: exit %s, says to start the server first: %s" %
              (port, r.returncode, r.stderr[-300:]))


def pair(env, args, srv_dev, cli_dev, tool):
    """tool's server on srv_dev, its client on cli_dev once it listens: both outputs"""
    port = free_port()
    cmd = [SRNIC, "run", "--", tool, "-p", str(port)] + args
    srv = subprocess.Popen(cmd + ["-d", srv_dev], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: tcp_listening(port) or srv.poll() is not None, "%s's server" % tool)
    text = status(env)
    cli = subprocess.Popen(cmd + ["-d", cli_dev, "127.0.0.1"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out_c = finish(cli)
    out_s = finish(srv)
    return srv.returncode, out_s, cli.returncode, out_c, text


def raw_checks(sock, env):
    """one session, both devices open: objects stay their device's"""
    h = Raw(sock)
    st, _ = h.call("SVC_HELLO", struct.pack("<IHHI16s", MAGIC, svc_major(), 0, os.getpid(),
                                            b"srnicd_devs"))
    d0 = h.handle("SVC_OPEN_DEVICE", struct.pack("<I", 0))
    d1 = h.handle("SVC_OPEN_DEVICE", struct.pack("<I", 1))
    st, _ = h.call("SVC_OPEN_DEVICE", struct.pack("<I", 2))
    check(st == -ENODEV, "OPEN_DEVICE 2 of two devices: -ENODEV (%d)" % st)
    gids = []
    for dev, ip in ((d0, IP0), (d1, IP1)):
        st, r = h.call("SVC_QUERY_GID", struct.pack("<III", dev, 1, 1))
        check(st == 0 and socket.inet_ntoa(r[12:16]) == ip,
              "QUERY_GID 1 through handle %#x: %s (%d)" % (dev, ip, st))
        gids.append(r[:16])
    h.call("SVC_MAP_SHM", struct.pack("<I", d0))
    pd1 = h.handle("SVC_ALLOC_PD", struct.pack("<I", d1))
    cq0 = h.handle("SVC_CREATE_CQ", struct.pack("<III", d0, 16, 0))
    cq1 = h.handle("SVC_CREATE_CQ", struct.pack("<III", d1, 16, 0))
    mixed0 = status_num(status(env), "dev_mixed")
    st = h.qp(pd1, cq0)
    check(st == -EINVAL, "a QP of srnic1's PD on srnic0's CQ: -EINVAL (%d)" % st)
    check(status_num(status(env), "dev_mixed") == mixed0 + 1, "dev_mixed counts it")
    st = h.qp(pd1, cq1)
    check(st == 0, "the session otherwise fine: the QP on srnic1's own CQ (%d)" % st)
    qpn1 = h.qpn
    # each of create_qp's and rereg's device checks (objects.c): refused,
    # counted dev_mixed, the session served after
    pd0 = h.handle("SVC_ALLOC_PD", struct.pack("<I", d0))
    srq0 = h.handle("SVC_CREATE_SRQ", struct.pack("<IIII", pd0, 8, 1, 0))
    memfd = os.memfd_create("srnicd_devs", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    os.ftruncate(memfd, MR_LEN)
    fcntl.fcntl(memfd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    mr1 = h.handle("SVC_REG_MR", struct.pack("<IIQQQ", pd1, IBV_ACCESS_LOCAL_WRITE, MR_ADDR,
                                             MR_LEN, MR_ADDR), fd=memfd)
    os.close(memfd)
    ch0 = h.handle("SVC_CREATE_CHANNEL", struct.pack("<I", d0))
    for what, call in (
            ("a CQ of srnic1 on a channel made through srnic0's handle",
             lambda: h.call("SVC_CREATE_CQ", struct.pack("<III", d1, 16, ch0))[0]),
            ("a QP of srnic1's PD and send CQ, srnic0's recv CQ", lambda: h.qp(pd1, cq1, cq0)),
            ("a QP of srnic1's PD and CQs on srnic0's SRQ", lambda: h.qp(pd1, cq1, srq=srq0)),
            ("a rereg of srnic1's MR to srnic0's PD (CHANGE_PD)",
             lambda: h.call("SVC_REREG_MR", struct.pack(
                 "<IIIIQQQ", mr1, IBV_REREG_MR_CHANGE_PD, pd0, IBV_ACCESS_LOCAL_WRITE, 0, 0,
                 0))[0])):
        mixed0 = status_num(status(env), "dev_mixed")
        st = call()
        check(st == -EINVAL and status_num(status(env), "dev_mixed") == mixed0 + 1,
              "%s: -EINVAL (%d), dev_mixed +1 (%d -> %d)" %
              (what, st, mixed0, status_num(status(env), "dev_mixed")))
    st, _ = h.call("SVC_DEREG_MR", struct.pack("<I", mr1))
    check(st == 0, "srnic1's MR still srnic1's: deregistered (%d)" % st)
    st, _ = h.call("SVC_CREATE_CQ", struct.pack("<III", d0, 16, ch0))
    check(st == 0, "the channel's own device's CQ on it (%d)" % st)
    line = [ln for ln in status(env).splitlines() if " pid %d " % os.getpid() in ln]
    check(len(line) == 1 and re.search(r" devices_open 2 qps 1 .*devices srnic0,srnic1$",
                                       line[0]) is not None,
          "status: the session holds srnic0 and srnic1 open, its QP: %s" % line)
    # listeners are each device's CM's
    st, _ = h.call("SVC_CM_OPEN", struct.pack("<I", d0))
    check(st == 0, "CM_OPEN (%d)" % st)
    # QPNs are each device's (both number from the same first): a REQ on a
    # srnic0 id names a QP of srnic0's, never the session's srnic1 QP
    # of that number (nor another session's srnic0 QP it would then be)
    other0 = status_num(status(env), "cm_refused_qp_other")
    c0 = h.handle("SVC_CM_CREATE_ID", struct.pack("<I", d0))
    st = h.cm_send(c0, CM_S_REQ, req_param(gids[0], gids[1], qpn1, IBV_QPT_RC))
    check(st == -EINVAL, "a REQ on a srnic0 id naming its srnic1 QP %s: -EINVAL (%d)" %
          (qpn1, st))
    check(status_num(status(env), "cm_refused_qp_other") == other0 + 1,
          "counted cm_refused_qp_other")
    c1 = h.handle("SVC_CM_CREATE_ID", struct.pack("<I", d1))
    st = h.cm_send(c1, CM_S_REQ, req_param(gids[1], gids[0], qpn1, IBV_QPT_RC))
    check(st == 0, "the same REQ on a srnic1 id: sent (%d)" % st)
    sid = 0x0106000000000000 | free_port()     # RDMA_PS_TCP's service ID of a port
    lst = [h.call("SVC_CM_CREATE_LISTEN", struct.pack("<IIQQ", d, 0, sid, 0))[0]
           for d in (d0, d1, d0)]
    check(lst == [0, 0, -EBUSY], "one service ID listened on srnic0 and on srnic1, "
          "twice on srnic0 -EBUSY: %s" % lst)
    h.close()


def qp_attr(state, qkey=0, port=0, sq_psn=0):
    """struct ibv_qp_attr (144 bytes): qp_state, qkey, sq_psn, pkey_index 0, port_num"""
    a = bytearray(144)
    struct.pack_into("<I", a, 0, state)
    struct.pack_into("<I", a, 16, qkey)
    struct.pack_into("<I", a, 24, sq_psn)
    a[129] = port
    return bytes(a)


def ah_attr(ip):
    """struct ibv_ah_attr (32 bytes): global, dgid ::ffff:ip, sgid_index 1, port 1"""
    a = bytearray(32)
    a[0:16] = bytes(10) + b"\xff\xff" + socket.inet_aton(ip)
    a[20], a[21] = 1, 64            # sgid_index, hop_limit
    a[29], a[30] = 1, 1             # is_global, port_num
    return bytes(a)


def ud_other_ah(sock, env):
    """a UD QP of srnic0 sending with an AH of srnic1's PD (the session's own
    AH, another device's): the QP fails as with another session's AH
    (srnic refuses an AH of another PD), bad_ring +1, IBV_EVENT_QP_FATAL"""
    h = Raw(sock)
    h.call("SVC_HELLO", struct.pack("<IHHI16s", MAGIC, svc_major(), 0, os.getpid(),
                                    b"srnicd_devs"))
    d0 = h.handle("SVC_OPEN_DEVICE", struct.pack("<I", 0))
    d1 = h.handle("SVC_OPEN_DEVICE", struct.pack("<I", 1))
    st, r = h.call("SVC_MAP_SHM", struct.pack("<I", d0))
    mem = [fd for fd in h.fds if not stat.S_ISFIFO(os.fstat(fd).st_mode)]
    if not check(st == 0 and len(mem) == 1, "MAP_SHM (%d)" % st):
        return h.close()
    shm = mmap.mmap(mem[0], struct.unpack_from("<Q", r)[0])
    pd0 = h.handle("SVC_ALLOC_PD", struct.pack("<I", d0))
    pd1 = h.handle("SVC_ALLOC_PD", struct.pack("<I", d1))
    cq0 = h.handle("SVC_CREATE_CQ", struct.pack("<III", d0, 16, 0))
    ah0 = h.handle("SVC_CREATE_AH", struct.pack("<II", pd0, 0) + ah_attr(IP1))
    ah1 = h.handle("SVC_CREATE_AH", struct.pack("<II", pd1, 0) + ah_attr(IP0))
    st = h.qp(pd0, cq0, qp_type=IBV_QPT_UD)
    qph, ring = h.qph, h.qpring
    for mask, attr in ((IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
                        qp_attr(IBV_QPS_INIT, QKEY, 1)),
                       (IBV_QP_STATE, qp_attr(IBV_QPS_RTR)),
                       (IBV_QP_STATE | IBV_QP_SQ_PSN, qp_attr(IBV_QPS_RTS, sq_psn=1))):
        st = st or h.call("SVC_MODIFY_QP", struct.pack("<Ii", qph, mask) + attr)[0]
    if not check(st == 0, "a UD QP of srnic0's, RTS; AHs of srnic0's and srnic1's PDs (%d)" %
                 st):
        shm.close()
        return h.close()
    base = SHM_QP + ring * QP_RING

    def post(i, ah):
        w = struct.pack("<QIIII8xII", i, IBV_WR_SEND, 0, 0, 0, 0, ah).ljust(56, b"\0")
        w += struct.pack("<II", 1, QKEY)
        shm[base + QP_SQ + i * WQE:base + QP_SQ + i * WQE + len(w)] = w
        struct.pack_into("<I", shm, base, i + 1)                 # sq_head
        struct.pack_into("<I", shm, 0, struct.unpack_from("<I", shm, 0)[0] + 1)   # doorbell
    bad0 = status_num(status(env), "bad_ring")
    post(0, ah0)
    done = wait_for(lambda: struct.unpack_from("<I", shm, base + QP_SQ_COMP)[0] == 1,
                    "the first WQE completed")
    check(done and status_num(status(env), "bad_ring") == bad0,
          "a UD WQE with srnic0's own AH: taken, the QP fine (sq_comp %d, bad_ring %d -> %d)" %
          (struct.unpack_from("<I", shm, base + QP_SQ_COMP)[0], bad0,
           status_num(status(env), "bad_ring")))
    post(1, ah1)
    failed = wait_for(lambda: status_num(status(env), "bad_ring") == bad0 + 1 and
                      [IBV_EVENT_QP_FATAL] == async_events(shm), "the QP failed")
    ev = struct.unpack_from("<II", shm, SHM_ASYNC + 128)
    check(failed and ev == (IBV_EVENT_QP_FATAL, qph),
          "a UD WQE with srnic1's AH: the QP failed, bad_ring +1 (%d -> %d), "
          "IBV_EVENT_QP_FATAL naming it (%s)" % (bad0, status_num(status(env), "bad_ring"),
                                                  async_events(shm)))
    st, _ = h.call("SVC_DESTROY_AH", struct.pack("<I", ah1))
    check(st == 0, "the session still served (DESTROY_AH %d)" % st)
    shm.close()
    h.close()


def async_pipe(h):
    """the read end of h's async pipe (MAP_SHM's reply gives it beside the rings)"""
    pipes = [fd for fd in h.fds if stat.S_ISFIFO(os.fstat(fd).st_mode)]
    return pipes[0] if len(pipes) == 1 else None


def async_events(shm):
    """the event types in a session's async ring (svc_shm.async), oldest first"""
    prod = struct.unpack_from("<I", shm, SHM_ASYNC)[0]
    return [struct.unpack_from("<I", shm, SHM_ASYNC + 128 + 8 * (i % SVC_ASYNC_RING))[0]
            for i in range(max(0, prod - SVC_ASYNC_RING), prod)]


def port_events(env0, tmp):
    """srnic1's link down: its PORT_ERR to the session that holds srnic1,
    not to the one that holds srnic0 only"""
    memif = os.path.join(tmp, "peer.sock")
    sock_a, sock_b = os.path.join(tmp, "a.sock"), os.path.join(tmp, "b.sock")
    env_a = dict(env0, SRNIC_DAEMON_SOCKET=sock_a)
    log_a, log_b = os.path.join(tmp, "a.log"), os.path.join(tmp, "b.log")
    daemons, sessions = [], []
    try:
        with open(log_b, "w") as lf:
            daemons.append(subprocess.Popen(
                [SRNIC, "daemon", "--port", "net_memif0,role=server,id=0,socket=" + memif,
                 "--ip", "10.84.1.9", "--socket", sock_b], env=env0, stdout=lf,
                stderr=subprocess.STDOUT))
        with open(log_a, "w") as lf:
            daemons.append(subprocess.Popen(
                [SRNIC, "daemon", "--port", "net_ring0", "--ip", "10.84.1.1", "--port",
                 "net_memif1,role=client,id=0,socket=" + memif, "--ip", "10.84.1.2",
                 "--socket", sock_a], env=env0, stdout=lf, stderr=subprocess.STDOUT))
        if not daemon_ready(daemons[0], log_b) or not daemon_ready(daemons[1], log_a):
            return
        # the daemon's own word that both links came up (status' link is
        # a live query; srnic queues PORT_ACTIVE at its next look, up to
        # SRNIC_LINK_CHECK_MS later): a session made just before that may
        # still get a PORT_ACTIVE, so the checks below are by event type
        up = wait_for(lambda: all(re.search(r"srnic%d: port .* link up \(PORT_ACTIVE\)" % i,
                                            open(log_a).read()) for i in (0, 1)),
                      "the daemon's log: both links up")
        up = up and wait_for(lambda: len(re.findall(r"^  link ACTIVE", status(env_a),
                                                    re.M)) == 2, "both links ACTIVE")
        if not check(up, "a daemon on net_ring0 (srnic0) and a memif client (srnic1): ACTIVE"):
            return
        shms = []
        # sessions on srnic0, on srnic1, and one whose srnic1 handle is
        # closed while its srnic1 PD lives (its objects still work: their
        # port's events still its)
        for idx in (0, 1, 2):
            h = Raw(sock_a)
            sessions.append(h)
            h.call("SVC_HELLO", struct.pack("<IHHI16s", MAGIC, svc_major(), 0, os.getpid(),
                                            b"srnicd_devs"))
            dev = h.handle("SVC_OPEN_DEVICE", struct.pack("<I", idx % 2))
            st, r = h.call("SVC_MAP_SHM", struct.pack("<I", dev))
            if idx == 2:
                d1 = h.handle("SVC_OPEN_DEVICE", struct.pack("<I", 1))
                h.handle("SVC_ALLOC_PD", struct.pack("<I", d1))
                st1, _ = h.call("SVC_CLOSE_DEVICE", struct.pack("<I", d1))
                check(st1 == 0, "CLOSE_DEVICE of srnic1 with its PD alive (%d)" % st1)
            mem = [fd for fd in h.fds if not stat.S_ISFIFO(os.fstat(fd).st_mode)]
            ok = check(st == 0 and async_pipe(h) is not None and len(mem) == 1,
                       "a session on srnic%d: its rings and async pipe (%d)" % (idx, st))
            if not ok:
                return
            shms.append(mmap.mmap(mem[0], struct.unpack_from("<Q", r)[0]))
        p1 = async_pipe(sessions[1])
        check(all(IBV_EVENT_PORT_ERR not in async_events(m) for m in shms),
              "no PORT_ERR before: %s" % [async_events(m) for m in shms])
        check(stop(daemons[0]) == 0, "the memif's server (the other daemon) stopped")
        down = wait_for(lambda: re.search(r"^device srnic1 .*\n  link DOWN", status(env_a),
                                          re.M) is not None, "srnic1's link DOWN")
        got = wait_for(lambda: IBV_EVENT_PORT_ERR in async_events(shms[1]),
                       "srnic1's session's PORT_ERR")
        check(down and got and select.select([p1], [], [], 0)[0] == [p1],
              "srnic1 DOWN: the session holding it gets IBV_EVENT_PORT_ERR, its pipe woken "
              "(%s)" % async_events(shms[1]))
        check(IBV_EVENT_PORT_ERR not in async_events(shms[0]),
              "the session holding srnic0 only: no PORT_ERR (srnic0's link is up): %s" %
              async_events(shms[0]))
        check(wait_for(lambda: IBV_EVENT_PORT_ERR in async_events(shms[2]), "its PORT_ERR"),
              "the session with a srnic1 PD, its srnic1 handle closed: PORT_ERR too (%s)" %
              async_events(shms[2]))
        for m in shms:
            m.close()
        check(re.search(r"^device srnic0 .*\n  link ACTIVE", status(env_a), re.M) is not None,
              "srnic0 still ACTIVE")
    finally:
        for h in sessions:
            h.close()
        for d in daemons[::-1]:
            if d.poll() is None:
                stop(d)
        if failures:
            for lg in (log_a, log_b):
                if os.path.exists(lg):
                    print(open(lg).read()[-1500:])


def server_stops(env0, tmp):
    """a memif server daemon stopped SERVER_STOPS times while a client
    daemon's srnic1 is joined to it (and connects again each time its link
    is down, every SRNIC_PORT_RESTART_MS): each stop clean, exit 0 (DPDK's
    interrupt thread, running memif's callbacks, once crashed the stopping
    server in rte_eal_cleanup(): SIGSEGV, one stop in three under load)"""
    memif = os.path.join(tmp, "stops.sock")
    log_a = os.path.join(tmp, "stops-a.log")
    bad = []

    def server(i):
        with open(os.path.join(tmp, "stops-b%d.log" % i), "w") as lf:
            return subprocess.Popen([SRNIC, "daemon", "--port",
                                     "net_memif0,role=server,id=0,socket=" + memif, "--ip",
                                     "10.84.2.9", "--socket", os.path.join(tmp, "sb.sock")],
                                    env=env0, stdout=lf, stderr=subprocess.STDOUT)

    # the server first: a memif client's port starts only with its server there
    b = server(0)
    a = None
    try:
        if not daemon_ready(b, os.path.join(tmp, "stops-b0.log")):
            return
        with open(log_a, "w") as lf:
            a = subprocess.Popen([SRNIC, "daemon", "--port", "net_ring0", "--ip", "10.84.2.1",
                                  "--port", "net_memif1,role=client,id=0,socket=" + memif,
                                  "--ip", "10.84.2.2", "--socket", os.path.join(tmp, "sa.sock")],
                                 env=env0, stdout=lf, stderr=subprocess.STDOUT)
        if not daemon_ready(a, log_a):
            return
        for i in range(SERVER_STOPS):
            log_b = os.path.join(tmp, "stops-b%d.log" % i)
            if i > 0:
                b = server(i)
            # the server's own word: ready, and its link up (the client joined)
            up = wait_for(lambda: b.poll() is not None or
                          all(w in open(log_b).read() for w in
                              ("srnicd: ready", "link up (PORT_ACTIVE)")),
                          "server %d ready, the client joined" % i) and b.poll() is None
            rc = stop(b)
            if not up or rc != 0 or "srnicd: stopped" not in open(log_b).read():
                bad.append((i, up, rc, open(log_b).read()[-400:]))
        check(bad == [], "a memif server stopped %d times, its client daemon reconnecting: "
              "each stop clean (exit 0, 'stopped'): %s" % (SERVER_STOPS, bad))
    finally:
        for p in (b, a):
            if p is not None and p.poll() is None:
                stop(p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="srnicd-devs-")
    option_errors(a.daemon, tmp)
    if os.geteuid() != 0 or shutil.which("ibv_rc_pingpong") is None or \
            shutil.which("ib_write_bw") is None:
        print("skip: needs root, ibverbs-utils and perftest")
        shutil.rmtree(tmp, ignore_errors=True)
        return 1 if failures else SKIP
    no_server(a.daemon, tmp)
    sock = os.path.join(tmp, "srnicd.sock")
    memif = os.path.join(tmp, "memif.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    conf = os.path.join(tmp, "srnicd.conf")
    with open(conf, "w") as f:
        f.write("# two ports joined by one memif socket\n"
                "port = net_memif0,role=server,id=0,socket=%s\nip = %s\n"
                "port = net_memif1,role=client,id=0,socket=%s\nip = %s\n"
                "socket = %s\n" % (memif, IP0, memif, IP1, sock))
    daemon = None
    try:
        with open(log, "w") as lf:
            daemon = subprocess.Popen([SRNIC, "daemon", "--config", conf], env=env, stdout=lf,
                                      stderr=subprocess.STDOUT)
        if not daemon_ready(daemon, log):
            return 1
        up = wait_for(lambda: len(re.findall(r"^  link ACTIVE", status(env), re.M)) == 2,
                      "both links ACTIVE")
        text = status(env)
        devs = re.findall(r"^device (\S+) port (\S+) ip (\S+)$", text, re.M)
        check(up and [(n, ip) for n, _, ip in devs] == [("srnic0", IP0), ("srnic1", IP1)],
              "status: srnic0 on %s and srnic1 on %s, both ACTIVE: %s" % (IP0, IP1, devs))
        check(len(re.findall(r"^  engine ", text, re.M)) == 1, "status: one engine line")
        tsock = re.search(r"^telemetry (\S+) ", text, re.M).group(1)
        td = tel(tsock, "/srnicd/devices")
        check(isinstance(td, dict) and td.get("srnic0", {}).get("ip") == IP0 and
              td.get("srnic1", {}).get("ip") == IP1 and td["srnic1"]["index"] == 1 and
              td["srnic1"]["link"] == "ACTIVE", "/srnicd/devices: both: %s" % td)
        check(tel(tsock, "/srnicd/info")["devices"] == 2, "/srnicd/info: devices 2")
        out = subprocess.run([SRNIC, "run", "--", "ibv_devices"], env=env, capture_output=True,
                             text=True, timeout=GUARD_S).stdout
        check(re.search(r"^\s+srnic0\s", out, re.M) and re.search(r"^\s+srnic1\s", out, re.M),
              "ibv_devices attached lists srnic0 and srnic1: %s" % out)

        rs, out_s, rc, out_c, text = pair(env, ["-g", "1", "-c", "-n", "200"], "srnic0",
                                          "srnic1", "ibv_rc_pingpong")
        check(rs == 0 and rc == 0 and "GID ::ffff:%s" % IP1 in out_c,
              "ibv_rc_pingpong -c: server on srnic0, client on srnic1 (%s): both exit 0 "
              "(%s, %s): %s %s" % (IP1, rs, rc, out_s[-300:], out_c[-300:]))
        check(re.search(r"program ibv_rc_pingpong .*devices srnic0$", text, re.M) is not None,
              "status: the waiting server's session, on srnic0")
        rs, out_s, rc, out_c, _ = pair(env, ["-x", "1", "-n", "500", "-s", "4096"], "srnic0",
                                       "srnic1", "ib_write_bw")
        check(rs == 0 and rc == 0, "ib_write_bw: server on srnic0, client on srnic1: both "
              "exit 0 (%s, %s): %s %s" % (rs, rc, out_s[-300:], out_c[-300:]))

        cm0 = tel(tsock, "/srnicd/devices")
        raw_checks(sock, env)
        # each device's CM counted apart: the REQ sent on srnic1's CM to
        # srnic0's address (no listener there: its REJ back)
        sent = wait_for(lambda: tel(tsock, "/srnicd/devices")["srnic0"]["cm_tx_rej"] >
                        cm0["srnic0"]["cm_tx_rej"], "srnic0's REJ")
        td = tel(tsock, "/srnicd/devices")
        got = {n: {k: td[n]["cm_" + k] - cm0[n]["cm_" + k] for k in ("tx_req", "rx_req",
                                                                        "tx_rej")}
               for n in ("srnic0", "srnic1")}
        check(sent and got["srnic1"]["tx_req"] >= 1 and got["srnic0"]["tx_req"] == 0 and
              got["srnic0"]["rx_req"] >= 1 and got["srnic1"]["rx_req"] == 0,
              "/srnicd/devices: srnic1's CM sent the REQ, srnic0's got it and REJected it: %s" %
              got)
        ud_other_ah(sock, env)
        gone = wait_for(lambda: tel(tsock, "/srnicd/sessions") == [], "the sessions' ends")
        text = status(env)
        check(gone and objects(text) == {k: 0 for k in objects(text)} and
              status_num(text, "cm ids") == 0 and status_num(text, "listening") == 0,
              "afterwards: no object, no CM id: %s" % objects(text))
        rc = stop(daemon)
        check(rc == 0 and "srnicd: stopped" in open(log).read(), "SIGTERM: a clean stop (%d)" % rc)
        port_events(env, tmp)
        server_stops(env, tmp)
    finally:
        if daemon is not None and daemon.poll() is None:
            stop(daemon)
        if failures:
            print(open(log).read()[-3000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(failures) if failures else "srnicd devs: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
