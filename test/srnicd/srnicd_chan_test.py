#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A session must not freeze srnicd through the descriptors it gives the
daemon to write (doc/srnicd.md, section 10): its completion channels'
eventfds (the engine writes them) and its async eventfd (the control
thread's). One daemon on a net_ring0 port:

  srnicd_async chan_full      a hostile context's channel and async eventfds
                              at the counter's limit (a write of 1 blocks),
                              then an event for each: two other contexts
                              still open, connect and exchange a SEND; the
                              hostile one still gets its event, CQE and
                              COMM_EST; status counts the writes skipped
                              (evfd_full) and still answers
  a raw session               CREATE_CHANNEL with a pipe, MAP_SHM with a
                              pipe as its async fd: EINVAL, nothing kept,
                              the session still served (an eventfd then
                              taken)
  SIGTERM                     the daemon stops cleanly (exit 0, "stopped")

  srnicd_chan_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs
      --async BUILD/test/srnicd/srnicd_async

Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import errno
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from srnicd_check import attached_env, check, daemon_ready, daemon_start, failures, \
    finish, run, status, status_num, stop, svc_types
from srnicd_test import Session, hello_body

SKIP = 77
DAEMON_IP = "10.83.0.1"


def chan_full(env, prog):
    """srnicd_async chan_full attached: every step ok, exit 0; the two
    writes the daemon could not make counted"""
    f0 = status_num(status(env), "evfd_full")
    p = run(env, [prog, "chan_full"])
    out = finish(p)
    print(out, flush=True)
    check(p.returncode == 0 and "FAIL" not in out,
          "srnicd_async chan_full attached (exit %s): the other sessions served, h's events "
          "there" % p.returncode)
    try:
        text = status(env)
    except subprocess.TimeoutExpired:
        text = ""
    f1 = status_num(text, "evfd_full")
    check(f1 >= f0 + 2, "status answers and counts the skipped writes (evfd_full %d -> %d)" %
          (f0, f1))


def raw_pipes(sock):
    """A session of the test's own sends pipes where the daemon wants
    eventfds: EINVAL each, then an eventfd is taken."""
    t = svc_types()
    s = Session(sock)

    def call(mtype, body, fds=()):
        st, rbody, rfds = s.call_fds(mtype, body, fds)
        for fd in rfds:
            os.close(fd)
        return st, rbody

    rd, wr = os.pipe()
    evfd = os.eventfd(0)
    call(t['SVC_HELLO'], hello_body())
    st, body = call(t['SVC_OPEN_DEVICE'], struct.pack("<I", 0))
    dev = struct.unpack_from("<I", body)[0]
    st, _ = call(t['SVC_MAP_SHM'], struct.pack("<I", dev), [wr])
    check(st == -errno.EINVAL, "MAP_SHM with a pipe as its async fd: %d (EINVAL)" % st)
    st, _ = call(t['SVC_MAP_SHM'], struct.pack("<I", dev), [evfd])
    check(st == 0, "MAP_SHM with an eventfd: %d" % st)
    st, _ = call(t['SVC_CREATE_CHANNEL'], struct.pack("<I", dev), [wr])
    check(st == -errno.EINVAL, "CREATE_CHANNEL with a pipe: %d (EINVAL)" % st)
    st, body = call(t['SVC_CREATE_CHANNEL'], struct.pack("<I", dev), [evfd])
    check(st == 0, "CREATE_CHANNEL with an eventfd: %d" % st)
    s.close()
    for fd in (rd, wr, evfd):
        os.close(fd)


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
        raw_pipes(sock)
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
