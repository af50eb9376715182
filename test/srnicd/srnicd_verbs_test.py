#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnicd's attached verbs beyond RC/UC (doc/srnicd.md, section 9): UD QPs
and address handles, shared receive queues, async events. One daemon on a
net_ring0 port (its frames loop back; both programs of a pair talk over
the device's own GID), Debian's unmodified pingpongs attached (no --port),
and a small C program of the test's own for the async events:

  ibv_ud_pingpong -g 1 -c      server and client both exit 0, every
                               datagram's bytes checked (40-byte GRH first)
  srnicd_async ud_reply        src_qp, the GRH flag and area, an answer through
                               ibv_create_ah_from_wc
  srnicd_async ah_forged       another session's AH, a destroyed one: QP to ERR
  srnicd_async ring_flush      the failed QP's WQEs srnic never took: each wr_id
                               back, the bad one LOC_QP_OP_ERR, the rest
                               WR_FLUSH_ERR (status' ring_flushed)
  srnicd_async ring_hold       the same, its CQ full and not polled a while: the
                               engine naps meanwhile (CPU near idle), then each
                               wr_id back
  srnicd_async ring_reset      the same CQ full, the QP to RESET, then ERR: none
                               of the WRs RESET dropped completes
  srnicd_async qp_fatal        COMM_EST, then RETRY_EXC and QP_FATAL
  srnicd_async eintr           a signal ends ibv_get_cq_event with EINTR
  ibv_srq_pingpong -g 1 -c     16 QPs each side on one SRQ, both exit 0
  srnicd_async srq_limit       SRQ_LIMIT_REACHED at the take below the limit
  srnicd_async reg_past_eof    a private file mapping past its file's end:
                               ibv_reg_mr EFAULT, no SIGBUS
  srnicd_async reg_fsize       under ulimit -f: ibv_reg_mr EFBIG, no SIGXFSZ
  srnicd_async mcast_cap       a session's multicast attachments: the cap
                               ibv_query_device reports, one more ENOMEM
  a raw session's SRQ with a bad head: SRQ_ERR, counted, still served
  ibv_rc_pingpong -g 1 -n 200  the client's polls of an empty CQ never
                               yield (strace: no sched_yield(); whether
                               they sleep, on the engine's CPU only, is
                               srnicd_poll's) and every iteration
                               completes; the engine hands its CPU only to
                               pollers it woke (status' handoffs) and
                               gives it away between packets (yields)
  srnicd_async poll_word       a session that stores 1 in its poll_sleep
                               word (and mixed in poll_cpu) before each
                               post and never sleeps on it, 200 CQEs: the
                               engine's FUTEX_WAKEs for it one per CQE, all
                               counted pollers_none, none counted woken or
                               wakes_mixed, no handoff
  a sleeping engine            a pyverbs program holding a QP: the idle
                               daemon's CPU over 300 naps below 2% of a
                               core, and a receive posted while the engine
                               sleeps wakes it (status' woken; the post
                               sees the state line's sleep and FUTEX_WAKEs),
                               and so does an arm whose CQE is there already

  srnicd_verbs_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs

After each pair the daemon's objects (status) are what they were before.
Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import mmap
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

from srnicd_check import GUARD_S, check, failures, strace_calls, svc_types, wait_for
from srnicd_test import SRNIC, Session, free_port, hello_body, status, status_num, \
    tcp_listening

SKIP = 77
SHM_ASYNC = 128         # svc_shm.async: after db and state, a cache line each
IBV_EVENT_SRQ_ERR = 14


DAEMON_IP = "10.82.0.1"
GID_INDEX = "1"         # the daemon's IPv4 GID (::ffff:10.82.0.1)


def objects(env):
    """status' objects line (PDs, CQs, QPs, MRs, bytes, AHs, SRQs), without
    bad_ring (a counter, not an object)"""
    m = re.search(r"^objects (.*)$", status(env), re.M)
    return re.sub(r" bad_ring \d+", "", m.group(1)) if m else None


def pair(env, prog, args, guard=GUARD_S):
    """An unmodified pingpong, server and client, both attached: the client
    started once the server listens; (server, client) outputs and exits."""
    port = free_port()
    cmd = [SRNIC, "run", "--", prog, "-g", GID_INDEX, "-p", str(port)] + args
    srv = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    wait_for(lambda: tcp_listening(port) or srv.poll() is not None, prog + "'s server")
    cli = subprocess.Popen(cmd + ["127.0.0.1"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    out = []
    for p in (srv, cli):
        try:
            o, _ = p.communicate(timeout=guard)
        except subprocess.TimeoutExpired:
            p.kill()
            o, _ = p.communicate()
        out.append((p.returncode, o))
    return out


def pair_ok(env, base, prog, args, iters):
    (rs, os_), (rc, oc) = pair(env, prog, args)
    check(rs == 0 and rc == 0 and ("%d iters" % iters) in os_ and ("%d iters" % iters) in oc,
          "%s %s attached, server and client: exit %s/%s\n%s\n%s" %
          (prog, " ".join(args), rs, rc, os_[-600:], oc[-600:]))
    check(wait_for(lambda: objects(env) == base, prog + "'s objects freed"),
          "%s: the daemon's objects back to %s" % (prog, base))


def poll_word(env, base, prog):
    """A hostile poll_sleep word (srnicd_async poll_word): what it costs the
    engine. Before, each pass that wrote one of its 200 CQEs found the 1,
    woke nobody and yet counted pollers_woken and gave its CPU away
    (sched_yield(), handoffs): 200 of each."""
    cqes = 200
    s0 = status(env)
    async_case(env, base, prog, "poll_word")
    s1 = status(env)
    w = status_num(s1, "pollers_woken") - status_num(s0, "pollers_woken")
    h = status_num(s1, "handoffs") - status_num(s0, "handoffs")
    m = status_num(s1, "wakes_mixed") - status_num(s0, "wakes_mixed")
    n0, n1 = status_num(s0, "pollers_none"), status_num(s1, "pollers_none")
    # the pass that writes a CQE finds the 1 stored before its post (a
    # pass of two CQEs, or one that comes after the library's own look, finds
    # it once): at most one wake per CQE
    # poll_cpu forged mixed too: such a wake is counted wakes_mixed only
    # when it found a sleeper (before: each one, +200)
    check(n0 >= 0 and 1 <= n1 - n0 <= cqes and w == 0 and h == 0 and m == 0,
          "a poll_sleep word of 1 nobody sleeps on, poll_cpu mixed, %d CQEs: %d FUTEX_WAKEs "
          "that found none (1 to %d: at most one per CQE), pollers_woken +%d, handoffs +%d, "
          "wakes_mixed +%d (want 0, 0, 0)" % (cqes, n1 - n0, cqes, w, h, m))


def async_case(env, base, prog, case, preexec=None):
    """srnicd_async CASE attached: every step ok, exit 0, the objects freed"""
    try:
        out = subprocess.run([SRNIC, "run", "--", prog, case], env=env, capture_output=True,
                             text=True, timeout=GUARD_S, preexec_fn=preexec)
        rc, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = None, str(e.stdout)
    print(text, flush=True)
    check(rc == 0 and "FAIL" not in text, "srnicd_async %s attached: exit %s" % (case, rc))
    check(wait_for(lambda: objects(env) == base, case + "'s objects freed"),
          "srnicd_async %s: the daemon's objects back to %s" % (case, base))


def cpu_shared(env, base, tmp):
    """ibv_rc_pingpong attached, its client under strace counting futex()
    and sched_yield(): the library's empty polls never yield (they sleep
    on the engine's CPU only: srnicd_poll), and the engine yields between
    packets. Before 03e0847, the client's empty polls called sched_yield(): the
    poller competed with the engines for the CPUs and, on a busy host, a
    yield gave its CPU to another program for a time slice
    (test/bench/attached-vs-embedded.sh: ib_read_lat -s 64 through two
    daemons, p50 ~205 us)."""
    if not check(shutil.which("strace") is not None, "strace installed (usertools/srnic setup)"):
        return
    s0 = status(env)
    y0, w0 = status_num(s0, "yields"), status_num(s0, "pollers_woken")
    port = free_port()
    trace = os.path.join(tmp, "poll.strace")
    cmd = [SRNIC, "run", "--", "ibv_rc_pingpong", "-g", GID_INDEX, "-p", str(port), "-n", "200"]
    srv = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)
    wait_for(lambda: tcp_listening(port) or srv.poll() is not None, "ibv_rc_pingpong's server")
    cli = subprocess.Popen(["strace", "-f", "-qq", "-c", "-e", "trace=futex,sched_yield", "-o",
                            trace] + cmd + ["127.0.0.1"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    out = []
    for p in (srv, cli):
        try:
            o, _ = p.communicate(timeout=GUARD_S)
        except subprocess.TimeoutExpired:
            p.kill()
            o, _ = p.communicate()
        out.append((p.returncode, o))
    check(out[0][0] == 0 and out[1][0] == 0 and "200 iters" in out[1][1],
          "ibv_rc_pingpong -n 200 attached, the client under strace: exit %s/%s\n%s\n%s" %
          (out[0][0], out[1][0], out[0][1][-600:], out[1][1][-600:]))
    calls = {"futex": 0, "sched_yield": 0}
    calls.update(strace_calls(trace))
    check(calls["sched_yield"] == 0,
          "the client's empty polls never yielded: %d futex(), %d sched_yield() calls" %
          (calls["futex"], calls["sched_yield"]))
    s1 = status(env)
    y1, w1 = status_num(s1, "yields"), status_num(s1, "pollers_woken")
    h0, h1 = status_num(s0, "handoffs"), status_num(s1, "handoffs")
    check(h0 >= 0 and w0 >= 0 and h1 - h0 <= w1 - w0, "the engine gave its CPU over only to "
          "pollers it woke: handoffs %d -> %d, pollers_woken %d -> %d" % (h0, h1, w0, w1))
    check(y0 >= 0 and y1 > y0, "the daemon's engine yielded between packets: %d -> %d" % (y0, y1))
    check(wait_for(lambda: objects(env) == base, "ibv_rc_pingpong's objects freed"),
          "ibv_rc_pingpong: the daemon's objects back to %s" % base)


# A program holding a QP in INIT that posts one receive per line it reads
HOLDER = """
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.mr import MR
from pyverbs.wr import RecvWR, SGE
import pyverbs.enums as e
ctx = Context(name="srnic0")
pd = PD(ctx)
cq = CQ(ctx, 256)
qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                       cap=QPCap(max_send_wr=1, max_recv_wr=128)))
qp.to_init(QPAttr())
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
print("ready", flush=True)
for n, line in enumerate(sys.stdin):
    qp.post_recv(RecvWR(wr_id=n, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
    print("posted", flush=True)
"""
# A program whose CQ has a completion channel: "flush" makes an RC QP,
# posts a receive and moves the QP to ERR (its flush CQE is the CQ's,
# unpolled; the QP held, so the engine naps as with one), "arm" arms the
# CQ, blocks in ibv_get_cq_event(), then polls the CQE the event was for
ARMER = """
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.cq import CQ, CompChannel
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.mr import MR
from pyverbs.wr import RecvWR, SGE
import pyverbs.enums as e
ctx = Context(name="srnic0")
pd = PD(ctx)
ch = CompChannel(ctx)
cq = CQ(ctx, 16, None, ch, 0)
mr = MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
qp = None
print("ready", flush=True)
n = 0
for line in sys.stdin:
    if line.strip() == "flush":
        n += 1
        if qp is not None:
            qp.close()
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq,
                               cap=QPCap(max_send_wr=1, max_recv_wr=4)))
        qp.to_init(QPAttr())
        qp.post_recv(RecvWR(wr_id=n, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)]))
        qp.modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
        print("flushed", flush=True)
    else:
        cq.req_notify()
        ch.get_cq_event(cq)
        cq.ack_events(1)
        got, wcs = cq.poll(1)
        print("event %d %d %d" % (got, wcs[0].wr_id if got else -1,
                                  wcs[0].status if got else -1), flush=True)
"""
IDLE_NAPS = 300
# ring_flush's ring WQEs the daemon completes (srnicd_async's RF_*): the
# bad send, the RF_BEHIND behind it, RF_AFTER sends and receives after
RING_FLUSHED = 1 + 5 + 2 * 2
FSIZE_LIMIT = 1 << 20   # reg_fsize's ulimit -f: below any mapping's address
IDLE_CPU_MAX = 0.02     # of a core (issue 24: < 2% idle)
# A sanitizer's daemon (meson's b_sanitize, SRNIC_SANITIZE): each nap's pass
# instrumented, ~3x the CPU of the release build's (idle with a QP held, here:
# release 0.3-0.45% of a core, ASan 0.4-1.4%; the CI's ASan suite runs two
# tests at once on two CPUs). The 2% is the release daemon's: the
# release suite holds it; the ASan suite holds a third of the CPU a spin took.
SAN_CPU_SCALE = 3 if os.environ.get("SRNIC_SANITIZE", "none") not in ("", "none") else 1
NAPS_BEGUN = 2          # naps before a CPU measure begins (naps_begun())
HOLD_NAPS = 100         # ring_hold: the engine's naps while its CQ is full
HOLD_CPU_US = 2000000   # ... or this much of the daemon's CPU: it spins
# ... and its CPU meanwhile below this: a nap every 10 ms (SRND_SLEEP_DP_MAX_US,
# QPs held) whose pass tries the full CQ (release 0.45% of a core, ASan 0.8-1.4%
# here, more on a slower host under the suite; the spin it replaced: 99%). Not
# the idle daemon's IDLE_CPU_MAX: the session has work it cannot finish.
HOLD_CPU_MAX = 0.10
WAKE_TRIES = 20


def pyverbs_prog(env, src):
    """a pyverbs program attached, driven by lines on its stdin"""
    return subprocess.Popen([SRNIC, "run", "--", "/usr/bin/python3", "-c", src], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def prog_ready(p, what):
    """p's first line says ready (check()ed; its output shown if it died)"""
    line = p.stdout.readline()
    if check(line.strip() == "ready", "%s: %r" % (what, line)):
        return True
    print(p.stdout.read()[-2000:] if p.poll() is not None else "")
    return False


def naps_begun(env):
    """The daemon's status once its engine naps: its CPU measured from
    there. The spin before the first nap (up to SRND_SPIN_MAX_US of
    CPU after the last work, longer under ASan on a loaded host) is not
    what an idle engine costs: over 100 naps of 10 ms, 8 ms of spin is
    0.8% of a core, 40% of the 2% allowed."""
    n0 = status_num(status(env), "naps")
    wait_for(lambda: status_num(status(env), "naps") >= n0 + NAPS_BEGUN, "the engine's naps")
    return status(env)


def ring_hold(env, base, prog):
    """A failed QP's ring WQEs waiting for room in a CQ ring the program
    does not poll (srnicd_async ring_hold): the engine sleeps meanwhile
    (naps, its CPU below HOLD_CPU_MAX), then every CQE comes. Before, the
    session stayed pending every pass while the WQEs were left: the engine
    never slept (a whole core) till the program polled."""
    p = subprocess.Popen([SRNIC, "run", "--", prog, "ring_hold"], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        lines = []
        while not lines or lines[-1].strip() not in ("waiting", ""):
            lines.append(p.stdout.readline())   # its steps' lines, then "waiting"
        print("".join(lines), end="", flush=True)
        if check(lines[-1].strip() == "waiting", "ring_hold: its CQ full, waiting"):
            s0 = naps_begun(env)
            n0, c0 = status_num(s0, "naps"), status_num(s0, "cpu_us")
            s1 = wait_for(lambda: (lambda s: s if status_num(s, "naps") >= n0 + HOLD_NAPS or
                                   status_num(s, "cpu_us") >= c0 + HOLD_CPU_US else None)(
                                       status(env)),
                          "%d naps or %d us of CPU" % (HOLD_NAPS, HOLD_CPU_US), every=0.5)
            if s1 is not None:
                cpu = status_num(s1, "cpu_us") - c0
                wall = status_num(s1, "wall_us") - status_num(s0, "wall_us")
                check(status_num(s1, "naps") >= n0 + HOLD_NAPS and wall > 0 and
                      cpu / wall < HOLD_CPU_MAX,
                      "a failed QP's WQEs waiting for CQ room: the daemon's CPU %.2f%% of a "
                      "core over %.1f s, naps +%d (want below %.0f%%, +%d)" %
                      (100.0 * cpu / max(wall, 1), wall / 1e6, status_num(s1, "naps") - n0,
                       100 * HOLD_CPU_MAX, HOLD_NAPS))
        p.stdin.write("poll\n")
        p.stdin.flush()
        out, _ = p.communicate(timeout=GUARD_S)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    print(out, flush=True)
    check(p.returncode == 0 and "FAIL" not in out,
          "srnicd_async ring_hold attached: exit %s" % p.returncode)
    check(wait_for(lambda: objects(env) == base, "ring_hold's objects freed"),
          "srnicd_async ring_hold: the daemon's objects back to %s" % base)


def engine_sleeps(env, base):
    """The daemon's engine with a session holding a QP and nothing moving:
    it naps up to SRND_SLEEP_DP_MAX_US, its CPU below IDLE_CPU_MAX; a post
    while it sleeps wakes it. Before, it napped 1 ms at most while any QP
    existed (a doorbell waited for the nap's end): 2.3% to 3.1% of a core,
    and no post ever woke it. Each try posts once the engine has napped
    twice more (so it sleeps with the session's word armed): a post that
    lands in the microseconds between two naps is served without a wake,
    so WAKE_TRIES tries, of which one must wake it."""
    holder = pyverbs_prog(env, HOLDER)
    try:
        if not prog_ready(holder, "a pyverbs program holds a QP"):
            return
        s0 = naps_begun(env)
        n0 = status_num(s0, "naps")
        wait_for(lambda: status_num(status(env), "naps") >= n0 + IDLE_NAPS,
                 "%d naps" % IDLE_NAPS, every=0.5)
        s1 = status(env)
        cpu = status_num(s1, "cpu_us") - status_num(s0, "cpu_us")
        wall = status_num(s1, "wall_us") - status_num(s0, "wall_us")
        check(wall > 0 and cpu / wall < IDLE_CPU_MAX * SAN_CPU_SCALE,
              "idle with a QP held: the daemon's CPU %.2f%% of a core over %.1f s "
              "(%d naps, %d us; below %.0f%%)" %
              (100.0 * cpu / max(wall, 1), wall / 1e6, status_num(s1, "naps") - n0, cpu,
               100 * IDLE_CPU_MAX * SAN_CPU_SCALE))
        w0 = status_num(s1, "woken")
        woken = False
        for _ in range(WAKE_TRIES):
            n1 = status_num(status(env), "naps")
            wait_for(lambda: status_num(status(env), "naps") >= n1 + 2, "two naps")
            n2 = status_num(status(env), "naps")
            holder.stdin.write("post\n")
            holder.stdin.flush()
            if not check(holder.stdout.readline().strip() == "posted", "the receive posted"):
                break
            # the nap the post fell in (or the next) is over: woken counted
            # before naps, so it shows whether the post ended it
            wait_for(lambda: status_num(status(env), "naps") >= n2 + 1, "the nap's end")
            if status_num(status(env), "woken") > w0:
                woken = True
                break
        check(w0 >= 0 and woken, "a receive posted while the engine slept woke it: woken %d -> %d" %
              (w0, status_num(status(env), "woken")))
    finally:
        holder.stdin.close()
        holder.wait(GUARD_S)
    check(wait_for(lambda: objects(env) == base, "the holder's objects freed"),
          "the holder: the daemon's objects back to %s" % base)


def arm_wakes(env, base):
    """ibv_req_notify_cq on a CQ whose CQE is there already, the engine
    asleep: the channel's event comes, and the arm woke the engine (status'
    woken) rather than waiting out its nap. The arm rings the session's
    doorbell, so one stored between the engine's last look at the CQ and
    its sleep = 1 is seen by the engine's look at db before the nap; an arm
    that only loaded sleep (0 there) left that CQE's event owed for a whole
    nap. Each try waits for two naps after its CQE (so the engine sleeps
    with it in the ring); an arm between two naps needs no wake, so
    WAKE_TRIES tries, of which one must wake it."""
    armer = pyverbs_prog(env, ARMER)
    try:
        if not prog_ready(armer, "a pyverbs program with a channel"):
            return
        woken = False
        w0 = status_num(status(env), "woken")
        for i in range(1, WAKE_TRIES + 1):
            armer.stdin.write("flush\n")
            armer.stdin.flush()
            if not check(armer.stdout.readline().strip() == "flushed", "a receive flushed"):
                break
            n1 = status_num(status(env), "naps")
            wait_for(lambda: status_num(status(env), "naps") >= n1 + 2, "two naps")
            n2 = status_num(status(env), "naps")
            armer.stdin.write("arm\n")
            armer.stdin.flush()
            got = armer.stdout.readline().strip()
            # IBV_WC_WR_FLUSH_ERR (5) for the receive of this try
            if not check(got == "event 1 %d 5" % i,
                         "try %d: the armed CQ's event, its CQE the flushed receive %d: %r" %
                         (i, i, got)):
                break
            wait_for(lambda: status_num(status(env), "naps") >= n2 + 1, "the nap's end")
            if status_num(status(env), "woken") > w0:
                woken = True
                break
        check(woken, "an arm with its CQE in the ring woke the sleeping engine: woken %d -> %d" %
              (w0, status_num(status(env), "woken")))
    finally:
        armer.stdin.close()
        armer.wait(GUARD_S)
    check(wait_for(lambda: objects(env) == base, "the armer's objects freed"),
          "the armer: the daemon's objects back to %s" % base)


def srq_bad_index(env, sock, base):
    """A session of the test's own (its async pipe from MAP_SHM) makes an
    SRQ, then stores a head 1000 past the tail of its 8-slot ring and rings
    the doorbell: the SRQ is in error (bad_ring +1), the session gets
    IBV_EVENT_SRQ_ERR naming it in its async ring and a byte in its pipe, and is still
    served; its end frees the SRQ."""
    t = svc_types()
    s = Session(sock)
    call = s.call_fds

    bad0 = status_num(status(env), "bad_ring")
    call(t['SVC_HELLO'], hello_body())
    st, body, _ = call(t['SVC_OPEN_DEVICE'], struct.pack("<I", 0))
    dev = struct.unpack_from("<I", body)[0]
    st, body, fds = call(t['SVC_MAP_SHM'], struct.pack("<I", dev))
    if not check(st == 0 and len(fds) == 2, "MAP_SHM: %d, %d fds (memfd, async pipe)" %
                 (st, len(fds))):
        return
    shm = mmap.mmap(fds[0], struct.unpack_from("<Q", body)[0])
    os.close(fds[0])
    evfd = fds[1]
    st, body, _ = call(t['SVC_ALLOC_PD'], struct.pack("<I", dev))
    pd = struct.unpack_from("<I", body)[0]
    st, body, _ = call(t['SVC_CREATE_SRQ'], struct.pack("<IIII", pd, 8, 1, 0))
    srq, ring, size, _, _, _, off = struct.unpack_from("<IIIIIIQ", body)
    check(st == 0 and size == 8, "CREATE_SRQ: %d, ring %d of %d slots at %#x" %
          (st, ring, size, off))
    struct.pack_into("<I", shm, off, 1000)          # the SRQ's head: no such WQEs
    db = struct.unpack_from("<I", shm, 0)[0]
    struct.pack_into("<I", shm, 0, db + 1)          # the session's doorbell
    check(wait_for(lambda: status_num(status(env), "bad_ring") == bad0 + 1, "bad_ring + 1"),
          "a head beyond the SRQ's ring: the SRQ in error, counted (bad_ring %d -> %d)" %
          (bad0, status_num(status(env), "bad_ring")))
    check(wait_for(lambda: struct.unpack_from("<I", shm, SHM_ASYNC)[0] == 1, "an async event"),
          "the session's async ring holds one event")
    etype, ehandle = struct.unpack_from("<II", shm, SHM_ASYNC + 128)
    check(etype == IBV_EVENT_SRQ_ERR and ehandle == srq and os.read(evfd, 8) == b"\x01",
          "IBV_EVENT_SRQ_ERR naming the SRQ (%d, %#x), one byte in its pipe" % (etype, ehandle))
    st, body, _ = call(t['SVC_QUERY_SRQ'], struct.pack("<I", srq))
    check(st == 0, "the session is still served (QUERY_SRQ %d)" % st)
    shm.close()
    s.close()
    os.close(evfd)
    check(wait_for(lambda: objects(env) == base, "the session's SRQ freed"),
          "its end frees the SRQ: %s" % objects(env))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--async", dest="async_prog", help="srnicd_async (built with libibverbs)")
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("ibv_ud_pingpong") is None:
        print("skip: needs root and ibverbs-utils")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-verbs-")
    sock = os.path.join(tmp, "srnicd.sock")
    env = dict(os.environ)
    env.update({"SRNIC_DAEMON": a.daemon, "SRNIC_VERBS_LIB": a.lib,
                "SRNIC_DAEMON_SOCKET": sock, "ASAN_OPTIONS": "detect_leaks=0"})
    for k in ("SRNIC_PORT", "SRNIC_IP", "SRNIC_CONFIG"):
        env.pop(k, None)
    log = os.path.join(tmp, "srnicd.log")
    daemon = None
    try:
        with open(log, "w") as lf:
            daemon = subprocess.Popen([SRNIC, "daemon", "--port", "net_ring0", "--ip", DAEMON_IP,
                                       "--socket", sock], env=env, stdout=lf,
                                      stderr=subprocess.STDOUT)
        up = wait_for(lambda: "srnicd: ready" in open(log).read() or daemon.poll() is not None,
                      "the daemon's ready line")
        if not check(up and daemon.poll() is None, "daemon up: %s" % open(log).read()[-600:]):
            return 1
        base = objects(env)
        check(base is not None and " qps 0 " in base, "no objects before: %s" % base)

        # ---- UD QPs and AHs: each side's AH to the other's QPN on the
        # device's own GID, the datagrams' bytes checked after the GRH
        pair_ok(env, base, "ibv_ud_pingpong", ["-c", "-n", "100"], 100)
        # src_qp, IBV_WC_GRH, the GRH area's bytes, ibv_create_ah_from_wc
        if a.async_prog is not None:
            async_case(env, base, a.async_prog, "ud_reply")
            # a UD WQE naming another session's AH, then a destroyed one
            bad0 = status_num(status(env), "bad_ring")
            async_case(env, base, a.async_prog, "ah_forged")
            bad1 = status_num(status(env), "bad_ring")
            check(bad1 == bad0 + 2, "the two forged AHs counted bad_ring (%d -> %d)" %
                  (bad0, bad1))
            # a failed QP's ring WQEs srnic never took: each its CQE (the
            # bad one's error, the rest flushed), counted ring_flushed
            fl0 = status_num(status(env), "ring_flushed")
            async_case(env, base, a.async_prog, "ring_flush")
            fl1 = status_num(status(env), "ring_flushed")
            check(fl1 == fl0 + RING_FLUSHED, "ring_flush's ring WQEs counted ring_flushed "
                  "(%d -> %d, want +%d)" % (fl0, fl1, RING_FLUSHED))
            # ... waiting for room in a CQ ring the program does not poll
            ring_hold(env, base, a.async_prog)
            fl2 = status_num(status(env), "ring_flushed")
            check(fl2 == fl1 + RING_FLUSHED, "ring_hold's ring WQEs counted ring_flushed "
                  "(%d -> %d, want +%d)" % (fl1, fl2, RING_FLUSHED))
            # ... then RESET: they are dropped, a later ERR flushes none
            async_case(env, base, a.async_prog, "ring_reset")

        # ---- async events: COMM_EST at a QP in RTR, QP_FATAL with RETRY_EXC
        # once its peer is gone (two sessions of one program)
        if check(a.async_prog is not None, "srnicd_async built (libibverbs found)"):
            async_case(env, base, a.async_prog, "qp_fatal")
            # a signal ends a blocking ibv_get_cq_event() with EINTR
            async_case(env, base, a.async_prog, "eintr")

        # ---- registrations that cannot be re-backed: an error, no signal
        if a.async_prog is not None:
            # a private file mapping past its file's end: EFAULT, not SIGBUS
            async_case(env, base, a.async_prog, "reg_past_eof")
            # under ulimit -f: EFBIG, not SIGXFSZ
            async_case(env, base, a.async_prog, "reg_fsize",
                       preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                          (FSIZE_LIMIT, FSIZE_LIMIT)))
            check(daemon.poll() is None, "the daemon alive after both")
        # ---- a session's multicast attachments, capped and reported
        if a.async_prog is not None:
            async_case(env, base, a.async_prog, "mcast_cap")

        # ---- SRQs: Debian's srq_pingpong (16 QPs on one SRQ each side), the
        # limit event, a bad index in the SRQ's ring
        pair_ok(env, base, "ibv_srq_pingpong", ["-c", "-n", "100"], 100)
        if a.async_prog is not None:
            async_case(env, base, a.async_prog, "srq_limit")
        srq_bad_index(env, sock, base)

        # ---- a CPU shared by a program and the engine it waits for
        cpu_shared(env, base, tmp)
        if a.async_prog is not None:
            poll_word(env, base, a.async_prog)

        # ---- an idle daemon with a QP held: its engine asleep, woken by a post
        engine_sleeps(env, base)
        # ---- an arm with its CQE already there, the engine asleep
        arm_wakes(env, base)
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.terminate()
            try:
                daemon.wait(timeout=GUARD_S)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        if failures:
            print(open(log).read()[-3000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
