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

Then a rereg whose old range outlives the wait: B stopped again, A's
16 MiB WRITE from a second MR fills the ring, and that MR is moved to a
64 KiB range (IBV_REREG_MR_CHANGE_TRANSLATION). The daemon's wait for the
old range's packets ends (1 s) with them still in A: the old range stays
mapped in daemon A (its memfd mapping at the buffer's offset, in
/proc/PID/maps) and counted (mr_bytes, mrs_retired 1). The program on
A ends meanwhile: its session's end hands the old range and
its PD (which srnic counts the old object on) to the daemon, still
counted (pds 1, mr_bytes 16 MiB); B goes on, the packets come back, and
the control thread's sweep unmaps the range and deallocates the PD
(objects back to none, mrs_retired 0, the mapping gone). Before, the old
range was never unmapped and mr_bytes counted the new range only.

Then twice a rereg that keeps the translation (IBV_REREG_MR_CHANGE_ACCESS)
with the second MR's 16 MiB WRITE out, B stopped: the old object's wait
ends (1 s; telemetry answers meanwhile, mrs_dereg_waiting 1) with its
zero-copy mbufs still over the range the new object keeps: the old
object retired sharing it (mrs_retired 1, mr_bytes unchanged). Once the
program deregisters the MR (its new object has no packet out: at once),
once it is killed (SIGKILL: its session's end): the range stays mapped
for the old object's mbufs; B goes on, they leave, and only then the
range is unmapped, daemon A alive, counts back. Before, the old object
was let go (srnic_dereg_mr()) and the dereg, or the session's end,
unmapped the range under its mbufs: daemon A died (SIGSEGV) once B went
on; and the rereg's wait, as the session's end's for its retired
objects, held the control lock: telemetry waited behind it and never
saw it.

Last, an MR a session's end cannot deregister (daemon a, srnicd-test, runs
with the test hook SRNICD_RECLAIM_REFUSE_MW_BIND=1: a session's end finds the
dereg of an MR that allows window binds refused, as srnic refuses one
with a window bound; a real bind cannot run there, its SQ waits while the
TX buffer is full): the same keep-translation rereg with b stopped, adding
IBV_ACCESS_MW_BIND (the old object retired over the range), then the
program killed. Its session's end leaves the MR registered and mapped for
good (mrs_dereg_failed 1). B goes on, the old object's packets come back,
the sweep lets it go: the range stays mapped and counted (the MR is still
registered in srnic), daemon a alive. Before, the MR left registered was
noted nowhere the old object's release could see: the sweep unmapped the
range under it (mr_bytes down by 16 MiB, the mapping gone).

  srnicd_dereg_test.py --daemon BUILD/app/srnicd/srnicd-test --lib BUILD/drivers/verbs \
      --check BUILD/test/srnicd/dereg_check
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile

from srnicd_check import (SRNIC, attached_env, check, failures, finish, objects, session_of,
                          status, tel, teardown, wait_for)

SKIP = 77
MEMIF_IP = ("10.86.0.1", "10.86.0.2")
MACS = ("02:00:00:00:86:01", "02:00:00:00:86:02")
BIG = 16 << 20          # dereg_check's whole buffer
SMALL = 64 << 10        # dereg_check's rereg's new range


def memfd_mapped(pid, offset):
    """Whether process pid maps the attached library's MR memfd at offset."""
    with open("/proc/%d/maps" % pid) as f:
        for ln in f:
            part = ln.split()
            if len(part) >= 6 and part[5].startswith("/memfd:srnic-mr") and \
                    int(part[2], 16) == offset:
                return True
    return False


def line(p):
    return p.stdout.readline().strip()


def say(p, text):
    p.stdin.write(text + "\n")
    p.stdin.flush()


def info_or_none(tpath):
    """/srnicd/info, or {} when the daemon does not answer (gone)."""
    try:
        return tel(tpath, "/srnicd/info") or {}
    except (OSError, ValueError):
        return {}


def settled(envs, base, pids, what):
    """Both daemons' objects back to base and no session of the programs
    pids left: a program's exit ends its session asynchronously (the
    daemon reclaims it after), so a count read before this may still hold
    the last pair's MRs. False (check()ed, and each daemon's status
    printed) when they do not get there."""
    def idle():
        texts = [status(e) for e in envs]
        return all(objects(t) == b and all(session_of(t, pid) is None for pid in pids)
                   for t, b in zip(texts, base))
    if check(wait_for(idle, "the daemons' sessions ended (%s)" % what),
             "%s: both daemons' objects back to %r, no session left" % (what, base)):
        return True
    for e in envs:
        print(status(e), flush=True)
    return False


def why(tpath):
    """The whole /srnicd/info and the engine's nonzero counters printed:
    what a failed count check leaves to name its cause."""
    try:
        stats = tel(tpath, "/srnic/stats,srnic0") or {}
    except (OSError, ValueError):
        stats = {}
    print("/srnicd/info: %r" % info_or_none(tpath), flush=True)
    print("/srnic/stats,srnic0 (nonzero): %r" % {k: v for k, v in stats.items() if v}, flush=True)


def mismatch(tpath, cond, what):
    """check(cond, what); when it fails, why() printed."""
    if check(cond, what):
        return True
    why(tpath)
    return False


def fresh_pair(end, progs, pair, envs, base):
    """The last pair's programs finished (each must exit 0) and their
    sessions reclaimed, a new pair made and a's 64 KiB WRITE to b done:
    False when that fails."""
    for name, p in zip("ab", progs):
        if p.returncode is None:
            out = finish(p)
            check(p.returncode == 0, "dereg_check on daemon %s: exit %s %r" %
                  (name, p.returncode, out[-300:]))
    pids = [p.pid for p in progs]
    progs.clear()
    if not settled(envs, base, pids, end) or not pair():
        return False
    say(progs[0], "write 65536")
    got = line(progs[0])
    return check(got == "written 0", "%s: a's 64 KiB WRITE to b: %r" % (end, got))


def keep_rereg(end, daemons, envs, progs, tpath, base, pair):
    """A new pair; a's second MR's 16 MiB WRITE out, daemon b stopped, the
    MR's access changed (translation kept), then the MR deregistered
    (end "dereg") or a's program killed ("kill"); b goes on (SIGCONT
    before it returns): the range unmapped only after the old object's
    mbufs are gone. False when the pair does not get as far as the rereg."""
    if not fresh_pair(end, progs, pair, envs, base):
        return False
    m0 = tel(tpath, "/srnicd/info").get("mr_bytes")
    os.kill(daemons[1].pid, signal.SIGSTOP)
    try:
        full0 = tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0)
        say(progs[0], "post2 %d" % BIG)
        check(line(progs[0]) == "posted", "%s: a's 16 MiB WRITE from its second MR posted" % end)
        check(wait_for(lambda: tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0) > full0,
                       "a's TX buffer full", guard=10), "%s: daemon a's TX buffer full" % end)
        say(progs[0], "access")
        mismatch(tpath, wait_for(lambda: tel(tpath, "/srnicd/info").get("mrs_dereg_waiting", 0)
                                 >= 1, "telemetry while the rereg waits"),
                 "%s: telemetry answers while the rereg waits for the old object's packets "
                 "(mrs_dereg_waiting 1)" % end)
        got = line(progs[0]).split()
        if not check(len(got) == 4 and got[:3] == ["access", "0", "0"],
                     "%s: the second MR's access changed with its packets out: %r" % (end, got)):
            return False
        addr = int(got[3])
        info = tel(tpath, "/srnicd/info")
        mismatch(tpath, info.get("mrs_retired") == 1 and info.get("mr_bytes") == m0,
                 "%s: the old object retired over the range it shares: mrs_retired %r, mr_bytes "
                 "%r (want 1, %d: counted once)" % (end, info.get("mrs_retired"),
                                                    info.get("mr_bytes"), m0))
        if end == "dereg":
            say(progs[0], "dereg2")
            got = line(progs[0])
            check(re.match(r"^dereg2 0 0 0$", got) is not None,
                  "dereg: the MR's new object has no packet out: dereg at once: %r" % got)
            info = tel(tpath, "/srnicd/info")
            mismatch(tpath, info.get("mrs_retired") == 1 and info.get("mr_bytes") == m0,
                     "dereg: the range still counted for the old object: mrs_retired %r, "
                     "mr_bytes %r (want 1, %d)" % (info.get("mrs_retired"),
                                                   info.get("mr_bytes"), m0))
            want = m0 - BIG
        else:
            progs[0].kill()
            progs[0].wait()
            # the session's end waits for the old object (1 s) with the lock let go
            check(wait_for(lambda: tel(tpath, "/srnicd/info").get("mrs_dereg_waiting", 0) >= 1,
                           "telemetry while the session's end waits"),
                  "kill: telemetry answers while the session's end waits for the old "
                  "object's packets (mrs_dereg_waiting 1)")
            held = dict(base[0], pds=1, mr_bytes=BIG)
            check(wait_for(lambda: objects(status(envs[0])) == held, "a's session reclaimed"),
                  "kill: a's session gone: daemon a holds the shared range and its PD: %r "
                  "(want %r)" % (objects(status(envs[0])), held))
            want = base[0].get("mr_bytes")
        check(memfd_mapped(daemons[0].pid, addr) and
              tel(tpath, "/srnicd/info").get("mrs_retired") == 1,
              "%s: the range still mapped under the old object's mbufs, mrs_retired 1" % end)
    finally:
        os.kill(daemons[1].pid, signal.SIGCONT)
    # b drains its ring: the old object's mbufs leave daemon a (read from
    # the range by its memif TX) and the sweep finds them back
    gone = wait_for(lambda: daemons[0].poll() is not None or
                    info_or_none(tpath).get("mrs_retired") == 0, "the old object's packets back")
    if not check(daemons[0].poll() is None, "%s: daemon a alive once the old object's mbufs "
                 "left (exit %r)" % (end, daemons[0].poll())):
        return False
    info = info_or_none(tpath)
    mismatch(tpath, gone and info.get("mr_bytes") == want,
             "%s: then mrs_retired %r, mr_bytes %r (want 0, %d)" %
             (end, info.get("mrs_retired"), info.get("mr_bytes"), want))
    check(not memfd_mapped(daemons[0].pid, addr), "%s: and the range unmapped" % end)
    return True


def pinned(daemons, envs, progs, tpath, base, pair):
    """A keep-translation rereg with b stopped (the old object retired)
    that allows window binds, a's program killed: its session's end
    cannot deregister the MR (SRNICD_RECLAIM_REFUSE_MW_BIND=1 in daemon a),
    which stays mapped for good even once the old object sharing its
    range is let go. False when the pair does not get as far."""
    if not fresh_pair("pinned", progs, pair, envs, base):
        return False
    info = tel(tpath, "/srnicd/info")
    m0, failed0 = info.get("mr_bytes"), info.get("mrs_dereg_failed")
    os.kill(daemons[1].pid, signal.SIGSTOP)
    try:
        full0 = tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0)
        say(progs[0], "post2 %d" % BIG)
        check(line(progs[0]) == "posted", "pinned: a's 16 MiB WRITE from its second MR posted")
        check(wait_for(lambda: tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0) > full0,
                       "a's TX buffer full", guard=10), "pinned: daemon a's TX buffer full")
        say(progs[0], "access mw")
        got = line(progs[0]).split()
        if not check(len(got) == 4 and got[:3] == ["access", "0", "0"],
                     "pinned: the second MR's access changed with its packets out: %r" % got):
            return False
        addr = int(got[3])
        check(tel(tpath, "/srnicd/info").get("mrs_retired") == 1,
              "pinned: the old object retired over the range (mrs_retired 1)")
        progs[0].kill()
        progs[0].wait()
        check(wait_for(lambda: tel(tpath, "/srnicd/info").get("mrs_dereg_failed") == failed0 + 1,
                       "a's session's end"),
              "pinned: a's session's end cannot deregister the MR (refused): "
              "mrs_dereg_failed %r (want %d)" %
              (tel(tpath, "/srnicd/info").get("mrs_dereg_failed"), failed0 + 1))
        check(memfd_mapped(daemons[0].pid, addr) and
              tel(tpath, "/srnicd/info").get("mrs_retired") == 1,
              "pinned: the range mapped, the old object still retired over it")
    finally:
        os.kill(daemons[1].pid, signal.SIGCONT)
    gone = wait_for(lambda: daemons[0].poll() is not None or
                    info_or_none(tpath).get("mrs_retired") == 0, "the old object's packets back")
    if not check(daemons[0].poll() is None, "pinned: daemon a alive once the old object's "
                 "mbufs left (exit %r)" % daemons[0].poll()):
        return False
    info = info_or_none(tpath)
    # the program's first MR went at its session's end, the second stays
    mismatch(tpath, gone and info.get("mr_bytes") == m0 - BIG,
             "pinned: the old object let go (mrs_retired %r), the MR left registered still "
             "counted: mr_bytes %r (want %d)" % (info.get("mrs_retired"),
                                                 info.get("mr_bytes"), m0 - BIG))
    check(memfd_mapped(daemons[0].pid, addr),
          "pinned: the range of the MR left registered still mapped in daemon a")
    return True


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
            # a refuses a session's end the dereg of an MR that allows
            # window binds (the last case's)
            denv = dict(envs[-1], SRNICD_RECLAIM_REFUSE_MW_BIND="1") if name == "a" else envs[-1]
            with open(logs[-1], "w") as lf:
                daemons.append(subprocess.Popen(
                    [SRNIC, "daemon", "--port", "net_memif0,role=%s,socket=%s,mac=%s" %
                     (role, ms, MACS[i]), "--ip", MEMIF_IP[i], "--socket", sock,
                     "--mem-mb", "512"], env=denv, stdout=lf, stderr=subprocess.STDOUT))
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

        def pair():
            """Two new dereg_check, a on daemon a, b on b, connected: True."""
            for e in envs:
                progs.append(subprocess.Popen([SRNIC, "run", "--", a.check], env=e,
                                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                              stderr=subprocess.STDOUT, text=True))
            me = [line(p) for p in progs[-2:]]
            if not check(all(x.startswith("me ") for x in me), "both ends up: %r" % me):
                return False
            say(progs[-2], "peer " + me[1][3:])
            say(progs[-1], "peer " + me[0][3:])
            got = [line(p) for p in progs[-2:]]
            return check(got == ["connected"] * 2, "connected across the memif: %r" % got)

        if not pair():
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
            why(tpath)
            print("/srnicd/sessions: %r" % tel(tpath, "/srnicd/sessions"), flush=True)
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

        # the rereg whose old range outlives the wait: a new pair
        for name, p in zip("ab", progs):
            out = finish(p)
            check(p.returncode == 0, "dereg_check on daemon %s: exit %s %r" %
                  (name, p.returncode, out[-300:]))
        pids = [p.pid for p in progs]
        progs.clear()
        if not settled(envs, base, pids, "rereg") or not pair():
            return 1
        say(progs[0], "write 65536")
        got = line(progs[0])
        if not check(got == "written 0", "the new pair: a's 64 KiB WRITE to b: %r" % got):
            print(status(envs[0]), status(envs[1]), flush=True)
            return 1
        m0 = tel(tpath, "/srnicd/info").get("mr_bytes")
        os.kill(daemons[1].pid, signal.SIGSTOP)
        stopped = daemons[1]
        full0 = tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0)
        say(progs[0], "post2 %d" % BIG)
        check(line(progs[0]) == "posted", "a's 16 MiB WRITE from its second MR posted")
        if not check(wait_for(lambda: tel(tpath, "/srnic/stats,srnic0").get("req_tx_full", 0) >
                              full0, "a's TX buffer full again", guard=10),
                     "daemon a's TX buffer full again"):
            print(full0, tel(tpath, "/srnic/stats,srnic0"), status(envs[0]), flush=True)
        say(progs[0], "rereg")
        got = line(progs[0]).split()
        if not check(len(got) == 4 and got[:3] == ["rereg", "0", "0"],
                     "the second MR moved to 64 KiB with its packets out: %r" % got):
            return 1
        old = int(got[3])
        info = tel(tpath, "/srnicd/info")
        mismatch(tpath, info.get("mrs_retired") == 1 and info.get("mr_bytes") == m0 + SMALL,
                 "the old range still mapped is counted: mrs_retired %r, mr_bytes %r "
                 "(want 1, %d: the old 16 MiB and the new 64 KiB)" %
                 (info.get("mrs_retired"), info.get("mr_bytes"), m0 + SMALL))
        check(memfd_mapped(daemons[0].pid, old),
              "daemon a still maps the old range (memfd offset %#x)" % old)
        # a's program ends meanwhile (its ibv_dealloc_pd EBUSY: the old
        # object holds the PD): its session's end hands the old range and
        # the PD to the daemon, still counted
        out = finish(progs[0])
        check(progs[0].returncode == 0, "dereg_check on daemon a ends, b still stopped: "
              "exit %s %r" % (progs[0].returncode, out[-300:]))
        held = dict(base[0], pds=1, mr_bytes=BIG)
        check(wait_for(lambda: objects(status(envs[0])) == held, "a's session reclaimed"),
              "a's session gone: daemon a holds the old range and its PD: %r (want %r)" %
              (objects(status(envs[0])), held))
        check(memfd_mapped(daemons[0].pid, old) and
              tel(tpath, "/srnicd/info").get("mrs_retired") == 1,
              "the old range still mapped, mrs_retired 1")
        os.kill(daemons[1].pid, signal.SIGCONT)
        stopped = None
        swept = wait_for(lambda: not memfd_mapped(daemons[0].pid, old),
                         "daemon a to unmap the old range")
        check(swept, "b drains its ring: daemon a unmaps the old range")
        check(wait_for(lambda: objects(status(envs[0])) == base[0] and
                       tel(tpath, "/srnicd/info").get("mrs_retired") == 0,
                       "daemon a's objects freed"),
              "and frees the PD: objects %r (want %r), mrs_retired 0" %
              (objects(status(envs[0])), base[0]))
        for name, p in zip("ab", progs):
            if p.returncode is not None:
                continue    # a's, ended above
            out = finish(p)
            check(p.returncode == 0, "dereg_check on daemon %s: exit %s %r" %
                  (name, p.returncode, out[-300:]))
        for end in ("dereg", "kill"):
            if not keep_rereg(end, daemons, envs, progs, tpath, base, pair):
                return 1
        for name, p in zip("ab", progs):
            if p.returncode is None:
                out = finish(p)
                check(p.returncode == 0, "dereg_check on daemon %s: exit %s %r" %
                      (name, p.returncode, out[-300:]))
        for name, e, b in zip("ab", envs, base):
            check(wait_for(lambda: objects(status(e)) == b, "daemon %s's objects freed" % name),
                  "daemon %s's objects back to %r" % (name, b))
        # every session's end above deregistered its MRs or retired them
        # (packets out): none failed, in telemetry and status alike
        check(tel(tpath, "/srnicd/info").get("mrs_dereg_failed") == 0 and
              re.search(r"^mrs_dereg_failed 0 ", status(envs[0]), re.M) is not None,
              "daemon a: mrs_dereg_failed 0 (telemetry, status)")
        # last: what it leaves stays for the daemon's life
        if not pinned(daemons, envs, progs, tpath, base, pair):
            return 1
    finally:
        teardown(daemons, progs, logs, tmp, stopped)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
