#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A session must not freeze srnicd through the notification pipes the
daemon writes (doc/srnicd.md, section 10): its completion channels' (the
engine writes them) and its async one (the control thread's). Since
protocol 4.3 the daemon makes each pipe and keeps its write end,
O_NONBLOCK; the program gets the read end only. One daemon on a net_ring0
port:

  srnicd_async chan_full      h never reads its channel while its CQ fires
                              until the pipe is full (nothing read, FIONREAD
                              = F_GETPIPE_SZ), then 16 armed SENDs complete
                              into the full pipe; g closes the read ends of
                              its channel and async pipes and gets a
                              completion event and COMM_EST; two other
                              contexts still open, connect and exchange a
                              SEND; h's wake is still there. status and
                              telemetry count the writes not taken
                              (wake_full +16, wake_closed +2: the daemon,
                              SIGPIPE ignored, goes on)
  srnicd_async chan_nofd      at its descriptor limit, 32 channels asked
                              for: the kernel drops each reply's pipe, each
                              call EMFILE; the library gives each channel
                              back (DESTROY_CHANNEL), so below the limit 16
                              (the session's limit) are made, one more
                              ENOSPC. Not given back, the 17th call was
                              ENOSPC: the session's slots all leaked
  a raw session               CREATE_CHANNEL and MAP_SHM of protocol 4.2
                              (an eventfd with the request): EINVAL, the
                              descriptor not kept, the session still served;
                              then without: the replies carry the read ends
                              of pipes (read-only), MAP_SHM's after its memfd
  SIGTERM                     the daemon stops cleanly (exit 0, "stopped")

  srnicd_chan_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs
      --async BUILD/test/srnicd/srnicd_async

Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import errno
import fcntl
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tempfile

from srnicd_check import attached_env, check, daemon_ready, daemon_start, failures, \
    finish, run, status, status_num, stop, svc_types, wait_for
from srnicd_test import Session, hello_body

SKIP = 77
DAEMON_IP = "10.83.0.1"


def chan_full(env, prog):
    """srnicd_async chan_full attached: every step ok, exit 0; the writes
    the daemon could not make counted, the daemon still answering"""
    f0 = status_num(status(env), "wake_full")
    c0 = status_num(status(env), "wake_closed")
    p = run(env, [prog, "chan_full"])
    out = finish(p)
    print(out, flush=True)
    check(p.returncode == 0 and "FAIL" not in out,
          "srnicd_async chan_full attached (exit %s): h's pipe full, g's closed, the other "
          "sessions served, h's wake there" % p.returncode)
    m = re.search(r"^wake_full_min (\d+)$", out, re.M)
    more = int(m.group(1)) if m else 1 << 30
    text = []

    def counted():
        try:
            text[:] = [status(env)]
        except subprocess.TimeoutExpired:
            return False
        return status_num(text[0], "wake_full") >= f0 + more and \
            status_num(text[0], "wake_closed") >= c0 + 2
    if m is not None:       # the program ran through: the counts follow
        wait_for(counted, "wake_full and wake_closed")
    else:
        counted()
    f1 = status_num(text[0], "wake_full") if text else -1
    c1 = status_num(text[0], "wake_closed") if text else -1
    check(f1 >= f0 + more and c1 >= c0 + 2,
          "status answers and counts the wakes not taken: wake_full %d -> %d (>= +%d, the "
          "full pipe), wake_closed %d -> %d (>= +2, g's closed pipes)" %
          (f0, f1, more, c0, c1))


def chan_nofd(env, prog):
    """srnicd_async chan_nofd attached: every step ok, exit 0"""
    p = run(env, [prog, "chan_nofd"])
    out = finish(p)
    print(out, flush=True)
    check(p.returncode == 0 and "FAIL" not in out,
          "srnicd_async chan_nofd (exit %s): a channel whose pipe the process could not "
          "receive is given back: 16 made after 32 such, one more ENOSPC" % p.returncode)


def raw_old_form(sock):
    """A session of the test's own sends descriptors with CREATE_CHANNEL and
    MAP_SHM, as a library of protocol 4.2 did: EINVAL each, the session
    served on; without one, the replies carry the read ends of the
    daemon's pipes."""
    t = svc_types()
    s = Session(sock)

    def call(mtype, body, fds=()):
        st, rbody, rfds = s.call_fds(mtype, body, fds)
        return st, rbody, rfds

    def is_read_end(fd):
        return stat.S_ISFIFO(os.fstat(fd).st_mode) and \
            fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY

    evfd = os.eventfd(0)
    call(t['SVC_HELLO'], hello_body())
    st, body, _ = call(t['SVC_OPEN_DEVICE'], struct.pack("<I", 0))
    dev = struct.unpack_from("<I", body)[0]
    st, _, rfds = call(t['SVC_MAP_SHM'], struct.pack("<I", dev), [evfd])
    check(st == -errno.EINVAL and not rfds,
          "MAP_SHM with an eventfd (4.2's form): %d (EINVAL), %d fds" % (st, len(rfds)))
    st, _, rfds = call(t['SVC_MAP_SHM'], struct.pack("<I", dev))
    check(st == 0 and len(rfds) == 2 and is_read_end(rfds[1]),
          "MAP_SHM: %d, %d fds, the second a pipe's read end" % (st, len(rfds)))
    for fd in rfds:
        os.close(fd)
    st, _, rfds = call(t['SVC_CREATE_CHANNEL'], struct.pack("<I", dev), [evfd])
    check(st == -errno.EINVAL and not rfds,
          "CREATE_CHANNEL with an eventfd (4.2's form): %d (EINVAL)" % st)
    st, _, rfds = call(t['SVC_CREATE_CHANNEL'], struct.pack("<I", dev))
    check(st == 0 and len(rfds) == 1 and is_read_end(rfds[0]),
          "CREATE_CHANNEL: %d, %d fds, a pipe's read end" % (st, len(rfds)))
    for fd in rfds:
        os.close(fd)
    s.close()
    os.close(evfd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--async", dest="async_prog", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("skip: needs root")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-chan-")
    sock = os.path.join(tmp, "srnicd.sock")
    log = os.path.join(tmp, "srnicd.log")
    env = attached_env(a.daemon, a.lib, sock)
    daemon = None
    try:
        daemon = daemon_start(env, log, DAEMON_IP, sock)
        if not daemon_ready(daemon, log):
            return 1
        chan_full(env, a.async_prog)
        chan_nofd(env, a.async_prog)
        raw_old_form(sock)
        rc = stop(daemon)
        text = open(log).read()
        check(rc == 0 and "srnicd: stopped" in text,
              "SIGTERM: the daemon stops cleanly (exit %s)" % rc)
        print(text[-1500:])
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
