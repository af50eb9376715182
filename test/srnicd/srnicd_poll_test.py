#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""ibv_poll_cq attached and the CPU it shares (doc/srnicd.md, "A sleeping
poller"). One daemon on a net_ring0 port pinned to CPU 0 (taskset and
--lcores 0: its engine runs there), Debian's ib_read_bw -s 65536 -n ITERS
between two programs attached to it, the server on CPU 1, its client
under strace counting futex():

  client on CPU 0 (the engine's)  the client's empty polls sleep (the
                                  daemon's wakes_deferred: a sleeper on its
                                  CPU), and the engine wakes it once it has
                                  nothing else to do, not per CQE: the
                                  daemon's pollers_woken + handoffs below
                                  ITERS / 10 (before: a wake and a handoff
                                  per READ's CQE, ~0.5 per READ), its
                                  wakes_deferred counted
  client on CPU 1                 ibv_poll_cq never sleeps: the client
                                  makes fewer than ITERS / 10 futex()
                                  calls, the daemon wakes no poller
                                  (before: a sleep after 64 empty polls,
                                  ~0.5 per READ)

With --async (test/srnicd/srnicd_async):

  poll_nap on CPU 0, the state      an empty poll returns without sleeping:
  line's sleep forged 1 (a nap)     the CQE comes no sooner for it (before:
                                    it slept on the stale eng_cpu)
  ... forged 2 (a short nap while   the 65th empty poll in a row sleeps:
  QPs wait for the network)         the CQE comes at the nap's end, on this
                                    CPU (before: it spun through the nap)
  wait_nap on CPU 1: an RC SEND     the engine's naps while the QP waits
  nobody answers, ~0.5 s of ACK     stay short (SRND_SLEEP_WAIT_US): the
  timeouts to RETRY_EXC_ERR         daemon's waiting_naps +WAIT_NAPS_MIN or
                                    more (before: naps doubling to 10 ms,
                                    an answer waited for each one's end)
  ib_write_bw -s 1048576 streaming  the engine never has a pass without work
  on CPU 1 (another session)
  poll_busy on CPU 0 meanwhile,     each round trip's CQE: the sleep it comes
  under strace                      in ends by the engine's wake, paid
                                    SRND_WAKE_DEFER_PASSES passes later
                                    (wakes_bounded > 0) or at an idle pass
                                    (before: by its 100 us timeout, every
                                    one: the wake waited for an idle pass
                                    that never came)
  poll_mixed meanwhile              sleepers of one session on CPUs 1 and 0:
                                    poll_cpu mixed, the one on CPU 1 woken
                                    at once by the session's CQE
                                    (wakes_mixed), nothing put off (before:
                                    poll_cpu named CPU 0, the last
                                    sleeper's, and the wake was deferred)
  poll_owed meanwhile               a forged sleeper on the engine's CPU:
                                    its owed wakes find nobody, none
                                    counted wakes_bounded (pollers_none)

Every transfer completes. Every wait is for a condition, with a guard that
only stops a hang.

  srnicd_poll_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs \
      [--async BUILD/test/srnicd/srnicd_async]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading

from srnicd_check import GUARD_S, SRNIC, attached_env, check, daemon_ready, failures, finish, \
    free_port, status, status_num, stop, strace_calls, tcp_listening, wait_for

SKIP = 77
ITERS = 1000
DAEMON_IP = "10.83.0.1"
COUNTERS = ("pollers_woken", "handoffs", "wakes_deferred", "wakes_bounded", "wakes_mixed",
            "pollers_none")
BUSY_ROUNDS = 300       # srnicd_async's POLL_BUSY_ROUNDS
MIXED_ROUNDS = 20       # srnicd_async's POLL_MIXED_ROUNDS
# the stream beside it: 128 WRITEs of 1 MiB in flight keep the engine busy
# for far longer than a time slice of the client's on a loaded host (64 KiB
# ones left it idle passes: the poller's wakes paid there)
STREAM_SIZE = 1 << 20
# the library's sleep: FUTEX_WAIT on the shared word, SVA_POLL_SLEEP_US
POLL_SLEEP = "FUTEX_WAIT, 1, {tv_sec=0, tv_nsec=100000}"
# wait_nap's ~0.5 s of ACK timeouts (8 x 67 ms) in naps of 50 us: thousands
# on a quiet host; doubling naps (20 us to 10 ms) took ~12 per timeout
WAIT_NAPS_MIN = 200


def read_bw(env, tmp, cpu_client):
    """ib_read_bw -s 65536 -n ITERS, the server on CPU 1, the client on
    cpu_client under strace: (the client's futex() calls, the daemon's
    counters' growth) or None"""
    port = free_port()
    cmd = ["ib_read_bw", "-s", "65536", "-n", str(ITERS), "-p", str(port), "-F"]
    srv = subprocess.Popen(["taskset", "-c", "1", SRNIC, "run", "--"] + cmd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: tcp_listening(port) or srv.poll() is not None, "ib_read_bw's server")
    s0 = status(env)
    trace = os.path.join(tmp, "client.strace")
    cli = subprocess.Popen(["taskset", "-c", str(cpu_client), "strace", "-f", "-qq", "-c",
                            "-e", "trace=futex", "-o", trace, SRNIC, "run", "--"] +
                           cmd + ["127.0.0.1"], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    out = [(p.returncode, o) for p, o in ((p, finish(p)) for p in (srv, cli))]
    s1 = status(env)
    if not check(out[0][0] == 0 and out[1][0] == 0 and "65536" in out[1][1],
                 "ib_read_bw -s 65536 -n %d attached, client on CPU %d: exit %s/%s\n%s\n%s" %
                 (ITERS, cpu_client, out[0][0], out[1][0], out[0][1][-800:],
                  out[1][1][-800:])):
        return None
    futex = strace_calls(trace).get("futex", 0)
    grew = {k: status_num(s1, k) - status_num(s0, k) for k in COUNTERS}
    print("client on CPU %d: %d futex() calls, daemon %s" % (cpu_client, futex, grew), flush=True)
    return futex, grew


def async_case(env, prog, case, cpus, trace=None):
    """srnicd_async CASE attached on cpus (under strace into trace if given):
    (its output, the daemon's counters' growth); the case's steps checked"""
    cmd = ["taskset", "-c", cpus]
    if trace is not None:
        # the program's own thread (srnic run execs it): whole lines
        cmd += ["strace", "-qq", "-e", "trace=futex", "-o", trace]
    s0 = status(env)
    try:
        out = subprocess.run(cmd + [SRNIC, "run", "--", prog, case], env=env,
                             capture_output=True, text=True, timeout=GUARD_S)
        rc, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = None, str(e.stdout)
    s1 = status(env)
    print(text, flush=True)
    check(rc == 0 and "FAIL" not in text, "srnicd_async %s attached: exit %s" % (case, rc))
    grew = {k: status_num(s1, k) - status_num(s0, k) for k in COUNTERS}
    print("%s: daemon %s" % (case, grew), flush=True)
    return text, grew


def futex_sleeps(trace):
    """the library's poll sleeps in an strace log: (how many, how many a
    FUTEX_WAKE ended, how many their timeout)"""
    sleeps = woken = timeouts = 0
    with open(trace) as f:
        for line in f:
            if POLL_SLEEP in line:
                sleeps += 1
                woken += line.rstrip().endswith("= 0")
                timeouts += "ETIMEDOUT" in line
    return sleeps, woken, timeouts


def stream_start(env):
    """ib_write_bw -s STREAM_SIZE --run_infinitely, server and client on CPU 1
    (they poll without sleeping there): (server, client, its output lines)
    once the client reports its first second"""
    port = free_port()
    cmd = ["ib_write_bw", "-s", str(STREAM_SIZE), "-D", "1", "--run_infinitely", "-p", str(port),
           "-F"]
    srv = subprocess.Popen(["taskset", "-c", "1", SRNIC, "run", "--"] + cmd, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: tcp_listening(port) or srv.poll() is not None, "ib_write_bw's server")
    cli = subprocess.Popen(["taskset", "-c", "1", SRNIC, "run", "--"] + cmd + ["127.0.0.1"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []

    def read():
        for line in cli.stdout:
            lines.append(line)
    threading.Thread(target=read, daemon=True).start()
    ok = wait_for(lambda: any(line.split()[:1] == [str(STREAM_SIZE)] for line in lines) or
                  cli.poll() is not None, "ib_write_bw's first second")
    check(ok and cli.poll() is None, "ib_write_bw -s %d streams attached on CPU 1: %s" %
          (STREAM_SIZE, "".join(lines)[-600:]))
    return srv, cli, lines


def busy(env, prog, tmp):
    """poll_busy and poll_mixed on the engine's CPU while another session
    streams"""
    srv, cli, lines = stream_start(env)
    try:
        trace = os.path.join(tmp, "busy.strace")
        _, grew = async_case(env, prog, "poll_busy", "0", trace)
        sleeps, woken, timeouts = futex_sleeps(trace)
        print("poll_busy: %d sleeps, %d woken, %d timed out" % (sleeps, woken, timeouts),
              flush=True)
        # the main check: a round trip's sleeps before its CQE exists end
        # in their timeout (the WRITE waits behind the stream's packets);
        # the one its CQE comes in is woken, by the bound (wakes_bounded)
        # or, where the stream leaves the engine an idle pass, there
        check(woken >= BUSY_ROUNDS // 2,
              "%d sleeps in ibv_poll_cq, %d ended by the engine's wake (at least %d: the "
              "sleep each CQE came in), %d by their 100 us timeout" %
              (sleeps, woken, BUSY_ROUNDS // 2, timeouts))
        check(grew["wakes_bounded"] > 0,
              "%d round trips on the engine's CPU beside a stream: the engine paid wakes it "
              "owed within its bound, wakes_bounded +%d (deferred +%d, handoffs +%d)" %
              (BUSY_ROUNDS, grew["wakes_bounded"], grew["wakes_deferred"], grew["handoffs"]))
        # the engine woke the thread asleep on CPU 1 beside mixed: a wake
        # counted only when it found a sleeper (a round whose thread was
        # between two sleeps takes its CQE at its next look)
        _, grew = async_case(env, prog, "poll_mixed", "0,1")
        check(grew["wakes_mixed"] >= 1 and grew["wakes_deferred"] == 0 and
              grew["pollers_woken"] >= grew["wakes_mixed"],
              "pollers of one session asleep on two CPUs, %d rounds: the engine woke the "
              "one on CPU 1 at once, wakes_mixed +%d (at least 1), pollers_woken +%d, "
              "wakes_deferred +%d (want 0)" % (MIXED_ROUNDS, grew["wakes_mixed"],
                                               grew["pollers_woken"], grew["wakes_deferred"]))
        # a poll_sleep word of 1 and poll_cpu naming the engine's CPU,
        # nobody asleep: the owed wakes are paid to nobody, none counted
        # bounded (before: each payment counted, a sleeper found or not)
        _, grew = async_case(env, prog, "poll_owed", "0")
        check(grew["wakes_deferred"] > 0 and grew["wakes_bounded"] == 0 and
              grew["pollers_woken"] == 0 and grew["pollers_none"] > 0,
              "a forged sleeper on the engine's CPU beside a stream: wakes_deferred +%d (want "
              "> 0), pollers_none +%d (want > 0), wakes_bounded +%d, pollers_woken +%d "
              "(want 0, 0: nobody slept)" % (grew["wakes_deferred"], grew["pollers_none"],
                                             grew["wakes_bounded"], grew["pollers_woken"]))
    finally:
        alive = cli.poll() is None
        for p in (cli, srv):
            if p.poll() is None:
                stop(p)
        check(alive, "the stream ran throughout: %s" % "".join(lines)[-600:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--async", dest="prog")
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("ib_read_bw") is None or \
            shutil.which("strace") is None or shutil.which("taskset") is None:
        print("skip: needs root, perftest, strace and taskset")
        return SKIP
    if not {0, 1} <= os.sched_getaffinity(0):
        print("skip: needs CPUs 0 and 1")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-poll-")
    sock = os.path.join(tmp, "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    daemon = None
    try:
        with open(log, "w") as lf:
            daemon = subprocess.Popen(["taskset", "-c", "0", SRNIC, "daemon", "--port",
                                       "net_ring0", "--ip", DAEMON_IP, "--socket", sock,
                                       "--lcores", "0", "--mtu", "9000"],
                                      env=env, stdout=lf, stderr=subprocess.STDOUT)
        if not daemon_ready(daemon, log):
            return 1
        if not check(status_num(status(env), "wakes_deferred") >= 0,
                     "status counts wakes_deferred"):
            return 1

        # the client on the engine's CPU: it sleeps, woken once per idle
        # engine rather than per CQE
        r = read_bw(env, tmp, 0)
        if r is not None:
            futex, grew = r
            check(grew["pollers_woken"] + grew["handoffs"] < ITERS // 10,
                  "%d READs of 64 KiB, the client on the engine's CPU: %d poller wakes + %d "
                  "handoffs (below %d)" % (ITERS, grew["pollers_woken"], grew["handoffs"],
                                           ITERS // 10))
            check(grew["wakes_deferred"] > 0, "the client slept on the engine's CPU and the "
                  "engine put its wake off: wakes_deferred +%d (%d futex() calls)" %
                  (grew["wakes_deferred"], futex))

        # the client on the other CPU: ibv_poll_cq never blocks
        r = read_bw(env, tmp, 1)
        if r is not None:
            futex, grew = r
            check(futex < ITERS // 10, "%d READs of 64 KiB, the client off the engine's CPU: "
                  "%d futex() calls (below %d): its polls never slept" %
                  (ITERS, futex, ITERS // 10))
            check(grew["pollers_woken"] == 0 and grew["wakes_deferred"] == 0,
                  "no poller asleep for the daemon to wake: %s" % grew)

        if a.prog is not None:
            async_case(env, a.prog, "poll_nap", "0")
            s0 = status(env)
            async_case(env, a.prog, "wait_nap", "1")
            s1 = status(env)
            grew = {k: status_num(s1, k) - status_num(s0, k) for k in ("naps", "waiting_naps")}
            check(grew["waiting_naps"] >= WAIT_NAPS_MIN,
                  "a QP waiting ~0.5 s for ACKs that never come: the engine's naps short "
                  "meanwhile, waiting_naps +%d (want %d or more; naps +%d)" %
                  (grew["waiting_naps"], WAIT_NAPS_MIN, grew["naps"]))
            busy(env, a.prog, tmp)
    finally:
        if daemon is not None and daemon.poll() is None:
            stop(daemon)
        if failures:
            print(open(log).read()[-3000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
