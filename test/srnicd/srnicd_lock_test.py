#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""One daemon per control socket (app/srnicd/util.c: srnd_lock), however
they are started:

  - DAEMONS daemons started at once on one socket path (each on a port of
    its own, a net_ring0 that loops its frames back): exactly one is
    ready, every other exits 1 saying another srnicd holds the path, and
    the one left answers --status;
  - that one killed with SIGKILL (no clean stop: its socket file stays):
    a new daemon on the path starts and serves (the kernel dropped the
    dead one's lock);
  - stopped with SIGTERM: exit 0, and again a new one starts.

  srnicd_lock_test.py --daemon BUILD/app/srnicd/srnicd

Waits are for conditions (a line in a log, a process's exit), each with a
guard that only stops a hang.
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

DAEMONS = 3
GUARD_S = 120
READY = "srnicd: ready:"
TAKEN = "another srnicd serves"

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def wait_for(cond, what, guard=GUARD_S, every=0.05):
    deadline = time.monotonic() + guard
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            check(False, "waited %d s for %s" % (guard, what))
            return v
        time.sleep(every)


class Daemon:
    def __init__(self, binary, sock, tmp, n):
        self.log = os.path.join(tmp, "d%d.log" % n)
        with open(self.log, "w") as f:
            self.p = subprocess.Popen(
                [binary, "--port", "net_ring0", "--ip", "10.80.0.%d" % (n + 1),
                 "--socket", sock, "--mem-mb", "128"],
                stdout=f, stderr=subprocess.STDOUT)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def ready(self):
        return READY in self.text()

    def settled(self):
        """ready, or exited"""
        return self.ready() or self.p.poll() is not None

    def stop(self, sig):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(GUARD_S)
        except subprocess.TimeoutExpired:
            self.p.kill()
            check(False, "daemon pid %d stopped on signal %d" % (self.p.pid, sig))
            return self.p.wait()


def status(binary, sock):
    r = subprocess.run([binary, "--status", "--socket", sock], capture_output=True,
                       text=True, timeout=GUARD_S)
    return r.returncode, r.stdout + r.stderr


def one_starts(binary, sock, tmp, n, why):
    d = Daemon(binary, sock, tmp, n)
    wait_for(d.settled, "the daemon %s to be ready or exit" % why)
    check(d.ready(), "a daemon on the path %s is ready" % why) or print(d.text())
    rc, out = status(binary, sock)
    check(rc == 0 and "srnic0" in out, "it answers --status (exit %d)" % rc) or print(out)
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="srnicd-lock-")
    sock = os.path.join(tmp, "run", "srnicd.sock")   # its directory made by the daemon
    daemons = []
    try:
        daemons = [Daemon(a.daemon, sock, tmp, n) for n in range(DAEMONS)]
        for d in daemons:
            wait_for(d.settled, "daemon pid %d to be ready or exit" % d.p.pid)
        ready = [d for d in daemons if d.ready()]
        check(len(ready) == 1, "%d daemons at once on one socket: one ready (%d)" %
              (DAEMONS, len(ready)))
        for d in daemons:
            if d in ready:
                continue
            rc = d.p.wait(GUARD_S)
            check(rc == 1 and TAKEN in d.text(),
                  "another exits 1 saying the path is taken (exit %d)" % rc) or print(d.text())
        rc, out = status(a.daemon, sock)
        check(rc == 0 and "srnic0" in out, "the one left answers --status (exit %d)" % rc) \
            or print(out)
        for d in ready:
            d.stop(signal.SIGKILL)
        check(os.path.exists(sock), "SIGKILL left the socket file behind")
        d = one_starts(a.daemon, sock, tmp, DAEMONS, "after one died of SIGKILL")
        daemons.append(d)
        check(d.stop(signal.SIGTERM) == 0, "SIGTERM: exit 0")
        d = one_starts(a.daemon, sock, tmp, DAEMONS + 1, "after a clean stop")
        daemons.append(d)
        check(d.stop(signal.SIGTERM) == 0, "SIGTERM: exit 0")
    finally:
        for d in daemons:
            if d.p.poll() is None:
                d.p.kill()
                d.p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failure(s): %s" % (len(failures), "; ".join(failures)))
        return 1
    print("all ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
