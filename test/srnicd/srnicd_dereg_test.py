#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Telemetry answers while a DEREG_MR waits (doc/srnicd.md, the
telemetry bullet): the control thread lets the control lock go while
srnic_dereg_mr_wait() waits for the MR's packets in flight (up to
SRND_DEREG_TIMEOUT_US each try), so /srnicd/info answers meanwhile and
says so (mrs_dereg_waiting 1). Before, the control thread held the lock
through the wait: telemetry waited behind it and never saw the wait.

Two daemons joined by memif; dereg_check (built against the system's
verbs.h) attached to each, one RC connection between them. A's program
WRITEs 64 KiB (the path works), then daemon B is stopped (SIGSTOP): A's
16 MiB WRITE fills the memif ring B does not drain, the rest of its
packets (zero-copy mbufs over A's MR) stay in A's engine (waited for:
its requester finds the TX buffer full, req_tx_full), and the
program's ibv_dereg_mr waits for them (EBUSY after each second, tried
again). Telemetry of A is asked meanwhile; then B goes on (SIGCONT), its
ring drains, the dereg returns 0.

  srnicd_dereg_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs \
      --check BUILD/test/srnicd/dereg_check
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, SRNIC, attached_env, check, failures, finish, objects,
                          status, tel, wait_for)

SKIP = 77
MEMIF_IP = ("10.86.0.1", "10.86.0.2")
MACS = ("02:00:00:00:86:01", "02:00:00:00:86:02")
BIG = 16 << 20          # dereg_check's whole buffer


def line(p):
    return p.stdout.readline().strip()


def say(p, text):
    p.stdin.write(text + "\n")
    p.stdin.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("skip: needs root")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-dereg-")
    ms = os.path.join(tmp, "memif.sock")
    daemons, progs, envs, logs = [], [], [], []
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

        # b stops draining its memif ring: a's big WRITE's packets stay
        os.kill(daemons[1].pid, signal.SIGSTOP)
        stopped = daemons[1]
        full0 = tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0)
        say(progs[0], "post %d" % BIG)
        check(line(progs[0]) == "posted", "a's 16 MiB WRITE posted, daemon b stopped")
        w0 = tel(tpath, "/srnicd/info")
        check(w0 is not None and w0.get("mrs_dereg_waiting") == 0,
              "telemetry before the dereg: mrs_dereg_waiting %r" % (w0 or {}).get(
                  "mrs_dereg_waiting"))
        # the requester found the engine's TX buffer full: its frames (and
        # so references on a's MR) stay in daemon a
        check(wait_for(lambda: tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0) > full0,
                       "a's TX buffer full"), "daemon a's TX buffer full (req_tx_full)")
        say(progs[0], "dereg")
        seen = wait_for(lambda: tel(tpath, "/srnicd/info").get("mrs_dereg_waiting", 0) >= 1,
                        "telemetry while the dereg waits")
        if not check(seen, "telemetry answers while a's dereg waits for its packets in flight "
                     "(mrs_dereg_waiting 1)"):
            print(tel(tpath, "/srnicd/info"), tel(tpath, "/srnicd/sessions"), flush=True)
        sessions = tel(tpath, "/srnicd/sessions")
        check(isinstance(sessions, list) and len(sessions) >= 1,
              "and /srnicd/sessions meanwhile: %r" % sessions)
        os.kill(daemons[1].pid, signal.SIGCONT)
        stopped = None
        got = line(progs[0])
        check(re.match(r"^dereg 0 ", got) is not None,
              "b drains its ring: a's dereg returns 0: %r" % got)
        info = tel(tpath, "/srnicd/info")
        check(info is not None and info.get("mrs_dereg_waiting") == 0,
              "then nothing waits: mrs_dereg_waiting %r" % (info or {}).get("mrs_dereg_waiting"))
        for name, p in zip("ab", progs):
            out = finish(p)
            check(p.returncode == 0, "dereg_check on daemon %s: exit %s %r" %
                  (name, p.returncode, out[-300:]))
        for name, e, b in zip("ab", envs, base):
            check(wait_for(lambda: objects(status(e)) == b, "daemon %s's objects freed" % name),
                  "daemon %s's objects back to %r" % (name, b))
    finally:
        if stopped is not None:
            os.kill(stopped.pid, signal.SIGCONT)
        for p in progs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for d in daemons[::-1]:
            if d.poll() is None:
                d.terminate()
                try:
                    d.wait(timeout=GUARD_S)
                except subprocess.TimeoutExpired:
                    d.kill()
                    d.wait()
        if failures:
            for lg in logs:
                print(open(lg).read()[-2000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
