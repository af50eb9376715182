#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""How srnicd starts: its configuration file, and one daemon per control
socket (app/srnicd/util.c: srnd_lock) however they are started:

  - --config FILE ("key = value", the keys srnicd's options): the daemon
    serves with the file's port, address and socket; an option on the
    command line wins over the file (--status shows the address it took);
    a key that is no option, or a line that is not "key = value", exits 2
    naming the file and line; so does a file that is not there; the
    example config/srnicd.conf parses;

  - DAEMONS daemons started at once on one socket path (each on a port of
    its own, a net_ring0 that loops its frames back): exactly one is
    ready, every other exits 1 saying another srnicd holds the path, and
    the one left answers --status;
  - that one killed with SIGKILL (no clean stop: its socket file stays):
    a new daemon on the path starts and serves (the kernel dropped the
    dead one's lock);
  - stopped with SIGTERM: exit 0, and again a new one starts;

  - where its threads run: with no --lcores the engine's thread (and the
    control thread) may run on every CPU the daemon was started with, as an
    embedded program's progress thread does (before: EAL's lcore 0 only,
    so every daemon of a host spun on CPU 0 beside one another: attached
    ib_read_lat -s 64 between two daemons 16 ms against 133 us embedded,
    test/bench/attached-vs-embedded.sh); with --lcores N, on CPU N only;
    either way EAL's main lcore is lcore 0 mapped to that CPU (--lcores
    0@CPU), so a CPU numbered past RTE_MAX_LCORE is taken (EAL's -l CPU
    refused it).

  srnicd_start_test.py --daemon BUILD/app/srnicd/srnicd

Waits are for conditions (a line in a log, a process's exit), each with a
guard that only stops a hang.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from srnicd_check import GUARD_S, check, failures, wait_for

DAEMONS = 3
READY = "srnicd: ready:"
TAKEN = "another srnicd serves"


class Daemon:
    def __init__(self, binary, sock, tmp, n, args=None):
        self.log = os.path.join(tmp, "d%d.log" % n)
        if args is None:
            args = ["--port", "net_ring0", "--ip", "10.80.0.%d" % (n + 1),
                    "--socket", sock, "--mem-mb", "128"]
        with open(self.log, "w") as f:
            self.p = subprocess.Popen([binary] + args, stdout=f, stderr=subprocess.STDOUT)

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


def config_cases(binary, tmp):
    sock = os.path.join(tmp, "conf", "srnicd.sock")
    conf = os.path.join(tmp, "srnicd.conf")
    with open(conf, "w") as f:
        f.write("# srnicd, for the test\n\n"
                "port = net_ring0\n"
                "ip=10.81.0.1\n"
                "  socket =  %s  \n"
                "mem-mb = 128\n" % sock)
    d = Daemon(binary, sock, tmp, 100, ["--config", conf])
    try:
        wait_for(d.settled, "the daemon of --config to be ready or exit")
        check(d.ready() and "ip 10.81.0.1" in d.text(),
              "--config: ready with the file's port and address") or print(d.text())
        rc, out = status(binary, sock)
        check(rc == 0 and "port net_ring0 ip 10.81.0.1" in out,
              "--config: it serves on the file's socket (exit %d)" % rc) or print(out)
    finally:
        check(d.stop(signal.SIGTERM) == 0, "--config: SIGTERM, exit 0")
    d = Daemon(binary, sock, tmp, 101, ["--ip", "10.81.0.2", "--config", conf])
    try:
        wait_for(d.settled, "the daemon of --config and --ip to be ready or exit")
        rc, out = status(binary, sock)
        check(rc == 0 and "ip 10.81.0.2" in out,
              "--config: the command line's --ip wins over the file's (exit %d)" % rc) or print(out)
    finally:
        check(d.stop(signal.SIGTERM) == 0, "--config and --ip: SIGTERM, exit 0")
    for name, text, want in (
            ("key", "port = net_ring0\nport-id = 3\n", ":2: no key port-id"),
            ("line", "ip 10.81.0.3\n", ":1: not \"key = value\": ip 10.81.0.3"),
            ("flag", "status = 1\n", ":1: no key status")):
        bad = os.path.join(tmp, "bad-%s.conf" % name)
        with open(bad, "w") as f:
            f.write(text)
        r = subprocess.run([binary, "--config", bad], capture_output=True, text=True,
                           timeout=GUARD_S)
        check(r.returncode == 2 and (bad + want) in r.stderr,
              "--config with a bad %s: exit 2 naming the file and line (exit %d)" %
              (name, r.returncode)) or print(r.stderr)
    # the example the repository ships parses (--status reads it, then finds
    # no daemon on the socket given here)
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "config", "srnicd.conf")
    r = subprocess.run([binary, "--status", "--config", example, "--socket",
                        os.path.join(tmp, "nobody.sock")], capture_output=True, text=True,
                       timeout=GUARD_S)
    check(r.returncode == 1 and "no daemon answers" in r.stderr,
          "config/srnicd.conf parses (exit %d)" % r.returncode) or print(r.stderr)
    r = subprocess.run([binary, "--config", os.path.join(tmp, "none.conf")],
                       capture_output=True, text=True, timeout=GUARD_S)
    check(r.returncode == 2 and "none.conf: No such file" in r.stderr,
          "--config of a missing file: exit 2 saying so (exit %d)" % r.returncode)


def engine_cpus(pid):
    """the CPU sets of the daemon's engine thread and its control thread"""
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == "srnicd-engine":
                return os.sched_getaffinity(int(tid)), os.sched_getaffinity(pid)
    return None, None


def cpu_cases(binary, tmp):
    sock = os.path.join(tmp, "cpu", "srnicd.sock")
    mine = os.sched_getaffinity(0)
    last = max(mine)
    for n, lcores, want in ((200, None, mine), (201, str(last), {last})):
        # EAL's debug lines name the main lcore and its CPU
        args = ["--port", "net_ring0", "--ip", "10.82.0.1", "--socket", sock, "--mem-mb", "128",
                "--log-level", "lib.eal:debug"]
        if lcores is not None:
            args += ["--lcores", lcores]
        what = "no --lcores" if lcores is None else "--lcores " + lcores
        d = Daemon(binary, sock, tmp, n, args)
        try:
            wait_for(d.settled, "the daemon to be ready or exit")
            if not check(d.ready(), "%s: ready" % what):
                print(d.text())
                continue
            eng, ctl = wait_for(lambda: engine_cpus(d.p.pid)[0] is not None and
                                engine_cpus(d.p.pid), "the engine's thread")
            check(eng == want and ctl == want,
                  "%s: the engine's thread runs on CPUs %s, the control thread on "
                  "%s (want %s; the daemon's set %s)" %
                  (what, sorted(eng), sorted(ctl), sorted(want), sorted(mine)))
            # lcore 0 on the CPU, whatever its number: EAL's -l named lcores
            # by CPU, and refused a CPU past RTE_MAX_LCORE (128)
            cpu = min(mine) if lcores is None else last
            m = re.search(r"Main lcore (\d+) is ready \(tid=\w+;cpuset=\[([\d,]+)\]\)", d.text())
            check(m is not None and m.group(1) == "0" and m.group(2) == str(cpu),
                  "%s: EAL's main lcore is lcore 0 on CPU %d: %r" %
                  (what, cpu, m.group(0) if m else d.text()[-300:]))
        finally:
            check(d.stop(signal.SIGTERM) == 0, "%s: SIGTERM, exit 0" % what)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="srnicd-lock-")
    sock = os.path.join(tmp, "run", "srnicd.sock")   # its directory made by the daemon
    daemons = []
    try:
        config_cases(a.daemon, tmp)
        cpu_cases(a.daemon, tmp)
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
