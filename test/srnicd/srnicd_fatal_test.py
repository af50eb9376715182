#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The daemon's death never hangs an attached program (doc/srnicd.md,
section 8). The daemon on a net_ring0 port (its device's loopback carries
the pairs' traffic), Debian's ibv_rc_pingpong -n 100000 server and client
attached to it, busy-polling and with -e (waiting in ibv_get_cq_event):

  - the daemon killed with SIGKILL mid-run (each side's WQEs counted by
    status first): the library's watcher sees the control socket hang up;
  - the daemon stopped with SIGTERM mid-run: it writes FATAL into each
    session's state line and wakes the channels before it closes them,
    and exits with no timeout waited out (its log says none);
  - SIGTERM while an ib_write_bw -s 65536 pair keeps packets over its MRs
    in flight: the daemon releases every MR (its engine stopped last),
    waiting out no timeout; both programs end with an error;

either way both programs exit non-zero with an error line (a flushed WQE
or a refused post), waited on as their exit; then a fresh daemon starts on
the same socket and a new pingpong pair runs to its end (exit 0).

fork_check (a C program under test/srnicd) runs an RC exchange between two
QPs of its own, forks, and goes on while the child checks what it
inherited (the parent's QP: EIO; the parent's registered bytes: its private
copy, which it overwrites unseen by the parent) and runs an exchange of its
own on a session of its own; every byte and CQE checked on both sides.

fatal_check (a C program under test/srnicd) then checks the verbs one by
one on a context whose daemon was killed (in the middle of a call: the
daemon stopped, the program's ibv_query_port waiting for its reply, then
the kill; the call gets EIO): IBV_EVENT_DEVICE_FATAL from
ibv_get_async_event, EIO from posts and from a create, each outstanding
receive flushed with its wr_id then an empty poll, ibv_get_cq_event
returning, and destroys and close that succeed.

  srnicd_fatal_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs
                       --check BUILD/test/srnicd/fatal_check
                       --fork BUILD/test/srnicd/fork_check

Every wait is for a condition (a log line, a count in status, an exit),
with a guard that only stops a hang.
"""
import argparse
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

from srnicd_check import GUARD_S, check, failures, free_port, tcp_listening, wait_for
from srnicd_test import (SVC_ALLOC_PD, SVC_HELLO, SVC_MAP_SHM, SVC_OPEN, Session, hello_body, msg,
                         pingpong_pair)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRNIC = os.path.join(ROOT, "usertools", "srnic")
SKIP = 77
ITERS = "100000"         # far more than the run lasts: the daemon dies mid-run
RUNNING_WQES = 200       # each side's WQEs taken before the daemon is stopped


class Daemon:
    def __init__(self, binary, sock, tmp, env):
        self.log = os.path.join(tmp, "srnicd.log")
        self.binary, self.sock = binary, sock
        with open(self.log, "w") as f:
            self.p = subprocess.Popen([binary, "--port", "net_ring0", "--ip", "10.81.0.1",
                                       "--socket", sock, "--mem-mb", "128"],
                                      env=env, stdout=f, stderr=subprocess.STDOUT)
        up = wait_for(lambda: "srnicd: ready" in self.text() or self.p.poll() is not None,
                      "the daemon's ready line")
        check(up and self.p.poll() is None, "daemon up: %s" % self.text()[-400:])

    def text(self):
        with open(self.log) as f:
            return f.read()

    def status(self):
        r = subprocess.run([self.binary, "--status", "--socket", self.sock],
                           capture_output=True, text=True, timeout=GUARD_S)
        return r.stdout if r.returncode == 0 else ""

    def wqes(self, pid):
        m = re.search(r"session \d+ pid %d .* wqes (\d+)" % pid, self.status())
        return int(m.group(1)) if m else 0


SYS_RECVMSG = 47        # x86_64


def in_recvmsg(pid):
    """Whether pid's main thread sits in recvmsg() (/proc/PID/syscall)."""
    try:
        return open("/proc/%d/syscall" % pid).read().split()[0] == str(SYS_RECVMSG)
    except (OSError, IndexError):
        return False


def finish(p):
    """The program's exit code and output; None and '(hung)' past the guard."""
    try:
        out = p.communicate(timeout=GUARD_S)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        return None, p.communicate()[0] + " (hung)"
    return p.returncode, out


# what ibv_rc_pingpong prints when a verb fails: a flushed or failed WQE,
# a refused post, a failed event wait or poll
PP_ERROR = re.compile(r"Failed status [^\n]*|Couldn't post [^\n]*|Failed to get cq_event[^\n]*|"
                      r"poll CQ failed[^\n]*|Couldn't request CQ notification[^\n]*")


def death_mid_run(binary, sock, tmp, env, sig, args):
    name = "%s, ibv_rc_pingpong %s" % (signal.Signals(sig).name, " ".join(args))
    d = Daemon(binary, sock, tmp, env)
    srv, cli = pingpong_pair(env, args + ["-n", ITERS])
    running = wait_for(lambda: (d.wqes(srv.pid) >= RUNNING_WQES and
                                d.wqes(cli.pid) >= RUNNING_WQES) or
                       srv.poll() is not None or cli.poll() is not None,
                       "%s: the pair under way" % name, every=0.2)
    check(running and srv.poll() is None and cli.poll() is None,
          "%s: both under way (WQEs taken: server %d, client %d)" %
          (name, d.wqes(srv.pid), d.wqes(cli.pid)))
    t0 = time.monotonic()
    d.p.send_signal(sig)
    # the programs' exits, whatever the daemon's own stop takes
    wait_for(lambda: srv.poll() is not None and cli.poll() is not None,
             "%s: both programs' exits" % name, every=0.02)
    took = time.monotonic() - t0
    res = [finish(srv), finish(cli)]
    rc_d = d.p.wait(timeout=GUARD_S)
    took_d = time.monotonic() - t0
    if sig == signal.SIGTERM:
        check(rc_d == 0 and "srnicd: stopped" in d.text(),
              "%s: the daemon stops cleanly (exit %s)" % (name, rc_d))
        # a stop that waits out timeouts says so in its log (a time bound
        # here failed at load 46: 3.09 s); the time is printed, not judged
        log = d.text()
        check("packets in flight" not in log and "did not go cleanly" not in log,
              "%s: the daemon's stop waited out no timeout (%.2f s): %r" %
              (name, took_d, log[-400:]))
    for side, (rc, out) in zip(("server", "client"), res):
        err = PP_ERROR.search(out)
        check(rc not in (0, None) and err is not None,
              "%s: the %s exits %s with an error (%r), %.1f s after the signal" %
              (name, side, rc, err.group(0) if err else out[-500:], took))
        check("IBV_EVENT_DEVICE_FATAL" in out,
              "%s: the %s's library said the session ended" % (name, side))


def stop_with_writes(binary, sock, tmp, env):
    """SIGTERM while an ib_write_bw -s 65536 pair attached keeps the wire
    full: packets over its MRs in flight at the stop. The daemon tells
    both sessions, releases their MRs with its engine still running, then
    stops it: it exits with every MR released, no timeout waited out (before,
    the engine stopped first and each dereg waited out its timeout ten
    times: 11.4 s, 'an MR still has packets in flight'), and both programs
    end with an error."""
    name = "SIGTERM, ib_write_bw -s 65536"
    d = Daemon(binary, sock, tmp, env)
    port = str(free_port())
    cmd = [SRNIC, "run", "--", "ib_write_bw", "-d", "srnic0", "-x", "1", "-s", "65536", "-n",
           "100000000", "-p", port]
    srv = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    wait_for(lambda: tcp_listening(int(port)) or srv.poll() is not None, "ib_write_bw's server")
    cli = subprocess.Popen(cmd + ["127.0.0.1"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    running = wait_for(lambda: d.wqes(cli.pid) >= 2000 or cli.poll() is not None,
                       "%s: the WRITEs under way" % name, every=0.2)
    check(running and cli.poll() is None and srv.poll() is None,
          "%s: under way (the client's WQEs taken: %d)" % (name, d.wqes(cli.pid)))
    t0 = time.monotonic()
    d.p.send_signal(signal.SIGTERM)
    rc_d = d.p.wait(timeout=GUARD_S)
    took = time.monotonic() - t0
    log = d.text()
    check(rc_d == 0 and "srnicd: stopped" in log and "packets in flight" not in log and
          "did not go cleanly" not in log,
          "%s: the daemon stops cleanly, every MR released (exit %s): %r" %
          (name, rc_d, log[-400:]))
    print("%s: the daemon exited %.2f s after SIGTERM" % (name, took), flush=True)
    for side, p in (("server", srv), ("client", cli)):
        rc, out = finish(p)
        check(rc not in (0, None), "%s: the %s ends with an error, no hang: exit %s, %r" %
              (name, side, rc, out[-300:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check", required=True)
    ap.add_argument("--fork", required=True)
    a = ap.parse_args()
    if shutil.which("ibv_rc_pingpong") is None or shutil.which("ib_write_bw") is None:
        print("skip: needs ibverbs-utils (ibv_rc_pingpong) and perftest (ib_write_bw)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-fatal-")
    sock = os.path.join(tmp, "srnicd.sock")
    env = dict(os.environ)
    env.update({"SRNIC_DAEMON": a.daemon, "SRNIC_VERBS_LIB": a.lib,
                "SRNIC_DAEMON_SOCKET": sock, "ASAN_OPTIONS": "detect_leaks=0"})
    for k in ("SRNIC_PORT", "SRNIC_IP", "SRNIC_IP6", "SRNIC_CONFIG"):
        env.pop(k, None)
    d = None
    try:
        for sig in (signal.SIGKILL, signal.SIGTERM):
            for args in ([], ["-e"]):
                death_mid_run(a.daemon, sock, tmp, env, sig, args)
        stop_with_writes(a.daemon, sock, tmp, env)

        # ---- the verbs one by one on a context whose daemon died
        d = Daemon(a.daemon, sock, tmp, env)
        fc = subprocess.Popen([SRNIC, "run", "--", a.check], env=env, stdout=subprocess.PIPE,
                              stdin=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = []

        def ready():
            line = fc.stdout.readline()
            lines.append(line)
            return line.startswith("ready") or line == ""
        wait_for(ready, "fatal_check's objects made", every=0)
        check(lines and lines[-1].startswith("ready"), "fatal_check ready: %r" % lines)
        # the daemon stopped, fatal_check's main thread in recvmsg() for the
        # reply to ibv_query_port, then the daemon killed under it
        d.p.send_signal(signal.SIGSTOP)
        fc.stdin.write("go\n")
        fc.stdin.flush()
        check(wait_for(lambda: in_recvmsg(fc.pid), "fatal_check waiting for a reply"),
              "fatal_check's ibv_query_port waits for the stopped daemon's reply")
        d.p.kill()
        d.p.wait()
        rc, out = finish(fc)
        out = "".join(lines) + out
        check(rc == 0 and "fatal_check: ok" in out,
              "after SIGKILL of the daemon, fatal_check: exit %s\n%s" % (rc, out[-1500:]))

        # ---- a fresh daemon on the same socket, a new pair to its end
        d = Daemon(a.daemon, sock, tmp, env)
        srv, cli = pingpong_pair(env, ["-c", "-n", "200"])
        for side, (rc, out) in zip(("server", "client"), (finish(srv), finish(cli))):
            check(rc == 0 and "200 iters in" in out,
                  "a fresh daemon: ibv_rc_pingpong -c -n 200 %s exit %s, %r" %
                  (side, rc, out[-400:]))

        # ---- a session that dies in the middle of a call: its request sent,
        # its socket closed before the reply. Its end, not a bad message
        # (closed_bad unchanged), and reclaimed like any other
        bad0 = re.search(r"closed_bad (\d+)", d.status()).group(1)
        s = Session(sock)
        s.call(SVC_HELLO, hello_body())
        r = s.call(SVC_OPEN, struct.pack("<I", 0))
        handle = struct.unpack_from("<I", r[1])[0]
        s.call(SVC_MAP_SHM, struct.pack("<I", handle))
        s.call(SVC_ALLOC_PD, struct.pack("<I", handle))
        s.s.send(msg(SVC_ALLOC_PD, 99, struct.pack("<I", handle)))
        s.close()
        gone = wait_for(lambda: "pid %d " % os.getpid() not in d.status(), "its session's end")
        st = d.status()
        check(gone and re.search(r"closed_bad (\d+)", st).group(1) == bad0 and
              re.search(r"^objects pds 0 .*shm_bytes 0 ", st, re.M),
              "a session closed in the middle of ALLOC_PD: reclaimed, closed_bad %s -> %s, %s" %
              (bad0, re.search(r"closed_bad (\d+)", st).group(1),
               re.search(r"^objects .*$", st, re.M).group(0)))

        # ---- fork(): the parent's exchange goes on, the child opens its own
        out = subprocess.run([SRNIC, "run", "--", a.fork], env=env, capture_output=True,
                             text=True, timeout=2 * GUARD_S)
        check(out.returncode == 0 and "fork_check: ok" in out.stdout and
              "child: 200 iterations" in out.stdout,
              "fork_check attached: exit %d\n%s%s" % (out.returncode, out.stdout[-1500:],
                                                      out.stderr[-800:]))
        check(wait_for(lambda: re.search(r"^objects .*\bqps 0\b", d.status(), re.M),
                       "fork_check's sessions reclaimed"),
              "after fork_check the daemon holds no QP: %s" %
              re.search(r"^objects .*$", d.status(), re.M).group(0))
        d.p.send_signal(signal.SIGTERM)
        check(d.p.wait(timeout=GUARD_S) == 0, "the fresh daemon stops cleanly")
    finally:
        if d is not None and d.p.poll() is None:
            d.p.kill()
            d.p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
