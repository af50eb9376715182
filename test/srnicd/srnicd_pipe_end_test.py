#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A session's notification pipes end with its quiesce, not after its MR
waits (doc/srnicd.md, section 8): at a session's end the daemon takes its
rings out of the engine's sight, then closes the write ends of its
completion-channel and async pipes, and only then destroys its objects
and waits for the packets in flight over its MRs (up to
SRND_DEREG_TIMEOUT_US a try). A reader of those pipes (another thread of
the program, a process it shares them with) sees the end of file at once.
Before, the pipes closed at the reclaim's end: seconds later while a peer
held the MR's packets.

Two daemons joined by memif, dereg_check (srnicd_dereg's program) at each
end, one RC connection; a's program also makes a completion channel and a
CQ on it. The test opens the read ends of a's notification pipes (its
async pipe and the channel's) through /proc (the pipes a's program reads
and daemon a writes),
stops daemon b (SIGSTOP), has a post a 16 MiB WRITE (its packets stay in
daemon a: req_tx_full) and kills a's program (SIGKILL). Daemon a's
reclaim waits for the MR (mrs_dereg_waiting 1) and meanwhile every pipe
is at its end of file; then b goes on, a's objects return to none.

  srnicd_pipe_end_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs \\
      --check BUILD/test/srnicd/dereg_check
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile

from srnicd_check import (SRNIC, attached_env, check, failures, finish, objects,
                          status, tel, teardown, wait_for)

SKIP = 77
MEMIF_IP = ("10.85.0.1", "10.85.0.2")
MACS = ("02:00:00:00:85:01", "02:00:00:00:85:02")
BIG = 16 << 20          # dereg_check's whole buffer


def line(p):
    return p.stdout.readline().strip()


def say(p, text):
    p.stdin.write(text + "\n")
    p.stdin.flush()


def pipe_fds(pid, accmode):
    """Process pid's pipe descriptors open with accmode (O_RDONLY or
    O_WRONLY): {pipe inode: fd}"""
    got = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            info = open("/proc/%d/fdinfo/%s" % (pid, fd)).read()
        except OSError:
            continue
        m = re.match(r"pipe:\[(\d+)\]$", link)
        f = re.search(r"^flags:\s+([0-7]+)$", info, re.M)
        if m and f and int(f.group(1), 8) & os.O_ACCMODE == accmode:
            got[int(m.group(1))] = int(fd)
    return got


def at_eof(fd):
    """Whether the pipe read end fd is at its end of file (no writer
    left), its bytes read first; False while a writer holds it open."""
    while True:
        try:
            if os.read(fd, 4096) == b"":
                return True
        except BlockingIOError:
            return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("skip: needs root")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-pipe-end-")
    ms = os.path.join(tmp, "memif.sock")
    daemons, progs, envs, logs, ends = [], [], [], [], []
    stopped = None
    try:
        for i, (name, role) in enumerate((("a", "server"), ("b", "client"))):
            sock = os.path.join(tmp, name + ".sock")
            envs.append(attached_env(a.daemon, a.lib, sock))
            logs.append(os.path.join(tmp, "srnicd-%s.log" % name))
            with open(logs[-1], "w") as lf:
                daemons.append(subprocess.Popen(
                    [SRNIC, "daemon", "--port", "net_memif0,role=%s,socket=%s,mac=%s" %
                     (role, ms, MACS[i]), "--ip", MEMIF_IP[i], "--socket", sock,
                     "--mem-mb", "512"], env=envs[-1], stdout=lf, stderr=subprocess.STDOUT))
            up = wait_for(lambda: "srnicd: ready" in open(logs[-1]).read() or
                          daemons[-1].poll() is not None, "daemon %s's ready line" % name)
            if not check(up and daemons[-1].poll() is None, "daemon %s up on memif" % name):
                return 1
        if not check(wait_for(lambda: all("link ACTIVE" in status(e) for e in envs),
                              "both links up"), "both daemons' memif links ACTIVE"):
            return 1
        m = re.search(r"^telemetry (\S+) ", status(envs[0]), re.M)
        if not check(m is not None, "daemon a's status names its telemetry socket"):
            return 1
        tpath = m.group(1)
        base = [objects(status(e)) for e in envs]

        for e in envs:
            progs.append(subprocess.Popen([SRNIC, "run", "--", a.check], env=e,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        me = [line(p) for p in progs]
        if not check(all(x.startswith("me ") for x in me), "both ends up: %r" % me):
            return 1
        say(progs[0], "peer " + me[1][3:])
        say(progs[1], "peer " + me[0][3:])
        got = [line(p) for p in progs]
        if not check(got == ["connected"] * 2, "connected across the memif: %r" % got):
            return 1
        say(progs[0], "write 65536")
        got = line(progs[0])
        if not check(got == "written 0", "a's 64 KiB WRITE to b: %r" % got):
            return 1

        # a completion channel and a CQ on it: its pipe too
        say(progs[0], "chan")
        got = line(progs[0])
        m = re.match(r"chan (\d+)$", got)
        if not check(m is not None, "a's program made a completion channel: %r" % got):
            return 1
        link = os.readlink("/proc/%d/fd/%s" % (progs[0].pid, m.group(1)))
        chm = re.match(r"pipe:\[(\d+)\]$", link)
        chan = int(chm.group(1)) if chm else None

        # the pipes a's program reads and daemon a writes: its session's
        # (srnic run execs: the Popen's pid is the program's, the daemon's)
        rd = pipe_fds(progs[0].pid, os.O_RDONLY)
        wr = pipe_fds(daemons[0].pid, os.O_WRONLY)
        shared = sorted(set(rd) & set(wr))
        if not check(len(shared) >= 2 and chan in shared,
                     "a's program reads %d pipes daemon a writes (its async pipe and its "
                     "channel's, %s: %r)" % (len(shared), link, shared)):
            return 1
        for ino in shared:
            ends.append(os.open("/proc/%d/fd/%d" % (progs[0].pid, rd[ino]),
                                os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
        chan_end = ends[shared.index(chan)]
        check(not any(at_eof(fd) for fd in ends),
              "the test holds read ends of them: open, not at their end")

        # b stops draining its memif ring: a's big WRITE's packets stay
        os.kill(daemons[1].pid, signal.SIGSTOP)
        stopped = daemons[1]
        full0 = tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0)
        say(progs[0], "post %d" % BIG)
        check(line(progs[0]) == "posted", "a's 16 MiB WRITE posted, daemon b stopped")
        check(wait_for(lambda: tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0) > full0,
                       "a's TX buffer full"), "daemon a's TX buffer full (req_tx_full)")
        progs[0].kill()
        progs[0].wait()
        seen = wait_for(lambda: tel(tpath, "/srnicd/info").get("mrs_dereg_waiting", 0) >= 1,
                        "a's reclaim to wait for its MR")
        check(seen, "a's program killed: its session's reclaim waits for the MR's packets "
              "(mrs_dereg_waiting 1)")
        eof = [at_eof(fd) for fd in ends]
        waiting = tel(tpath, "/srnicd/info").get("mrs_dereg_waiting", 0)
        check(all(eof) and waiting >= 1,
              "meanwhile every pipe is at its end of file: %r, mrs_dereg_waiting still %d "
              "(before: the pipes closed after the MR waits)" % (eof, waiting))
        check(eof[ends.index(chan_end)],
              "the completion channel's pipe among them (its armed CQ writes the "
              "channel's write end, the same fd, closed once)")

        os.kill(daemons[1].pid, signal.SIGCONT)
        stopped = None
        check(wait_for(lambda: objects(status(envs[0])) == base[0] and
                       tel(tpath, "/srnicd/info").get("mrs_retired") == 0,
                       "daemon a's objects freed"),
              "b goes on: daemon a's objects back to %r, mrs_retired 0" % (base[0],))
        out = finish(progs[1])
        check(progs[1].returncode == 0, "dereg_check on daemon b: exit %s %r" %
              (progs[1].returncode, out[-300:]))
        check(wait_for(lambda: objects(status(envs[1])) == base[1], "daemon b's objects freed"),
              "daemon b's objects back to %r" % (base[1],))
    finally:
        for fd in ends:
            os.close(fd)
        teardown(daemons, progs, logs, tmp, stopped)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
