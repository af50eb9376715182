#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""rdma_cm in the daemon (doc/srnicd.md section 7): unmodified rdma_cm
programs attached to one srnicd (no --port: the daemon's device, its CM
and its ARP), server and client on the device's own address, so every
packet loops back through the daemon:

  - perftest's ib_write_bw -R (rdma_cm connects it: REQ, REP, RTU through
    the daemon's CM, the events through each library's event socket, a
    DREQ/DREP at the end): both exit 0, the daemon's CM counted each MAD,
    and its rdma_cm ids and objects go back to none;
  - a second `rping -s` on the port a first one listens on gets
    EADDRINUSE (rping prints it and exits non-zero): listeners are the
    device's, across processes; once the first is killed its listener goes
    with its session and the port is free again;
  - cmtime -c 16: sixteen connections at once, made and ended through the
    daemon's CM;
  - a session's death: ib_write_bw -R's server SIGKILLed mid-run, the
    daemon disconnects its id (a DREQ to the client's), the client ends
    with an error in bounded time, everything is freed.

  srnicd_cm_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs

Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, attached_env, check, daemon_ready, daemon_start,
                          failures, finish, run, session_of, status, wait_for)

SKIP = 77
DAEMON_IP = "10.83.0.1"
OBJECTS = ("pds", "cqs", "qps", "mrs", "mr_bytes", "shm_bytes")


def cm_counts(text):
    """status' cm line: ids and lib/cm's counters, as a dict."""
    m = re.search(r"^cm (.*)$", text, re.M)
    if not m:
        return None
    f = m.group(1).split()
    return {f[i]: int(f[i + 1]) for i in range(0, len(f) - 1, 2)}


def objects(text):
    m = re.search(r"^objects (.*)$", text, re.M)
    if not m:
        return None
    return {k: int(re.search(r"\b%s (\d+)" % k, m.group(1)).group(1)) for k in OBJECTS}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("rping") is None or shutil.which("ib_write_bw") is None:
        print("skip: needs root, rdmacm-utils (rping) and perftest (ib_write_bw)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-cm-test-")
    sock = os.path.join(tmp, "run", "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    procs = []
    # a net_ring0 port: the device's own address never leaves the daemon anyway
    daemon = daemon_start(env, log, DAEMON_IP, sock)
    try:
        if not daemon_ready(daemon, log):
            return 1
        base = objects(status(env))
        cm0 = cm_counts(status(env))
        check(base is not None and cm0 is not None and cm0["ids"] == 0,
              "status shows the daemon's objects and its CM, no id held: %r %r" % (base, cm0))

        # ---- ib_write_bw -R: connected by rdma_cm through the daemon
        port = "18515"
        cmd = ["ib_write_bw", "-R", "-s", "65536", "-n", "200", "-p", port]
        srv = run(env, cmd)
        procs.append(srv)
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids", 0) >= 1 or
                       srv.poll() is not None, "ib_write_bw -R's listener"),
              "the server's rdma_listen is an id of the daemon's")
        cli = run(env, cmd + [DAEMON_IP])
        procs.append(cli)
        outs = [finish(srv), finish(cli)]
        for name, p, out in (("server", srv, outs[0]), ("client", cli, outs[1])):
            check(p.returncode == 0 and re.search(r"^\s*65536\s+200\s", out, re.M),
                  "ib_write_bw -R -s 65536 -n 200 attached, %s: exit %s, %r" %
                  (name, p.returncode, out[-600:]))
        cm1 = wait_for(lambda: (lambda c: c if c and c["ids"] == 0 else None)(
            cm_counts(status(env))), "the rdma_cm ids of both gone")
        cm1 = cm1 or cm_counts(status(env))
        d = {k: cm1[k] - cm0[k] for k in cm0}
        check(d["tx_req"] >= 1 and d["rx_req"] >= 1 and d["tx_rep"] >= 1 and
              d["rx_rep"] >= 1 and d["tx_rtu"] >= 1 and d["rx_rtu"] >= 1,
              "the daemon's CM carried the connection: REQ %d/%d, REP %d/%d, RTU %d/%d" %
              (d["tx_req"], d["rx_req"], d["tx_rep"], d["rx_rep"], d["tx_rtu"], d["rx_rtu"]))
        check(d["tx_dreq"] >= 1 and d["rx_dreq"] >= 1,
              "and its end: DREQ sent %d, received %d" % (d["tx_dreq"], d["rx_dreq"]))
        check(cm1["ids"] == 0, "no rdma_cm id left in the daemon: %d" % cm1["ids"])
        check(wait_for(lambda: objects(status(env)) == base, "ib_write_bw's objects freed"),
              "the daemon holds what it held before: %r" % objects(status(env)))

        # ---- one listener per port on the device, across processes
        port = "7471"
        first = run(env, ["rping", "-s", "-a", DAEMON_IP, "-p", port, "-v"])
        procs.append(first)
        check(wait_for(lambda: (lambda s: s is not None and "cm_ids 1" in s)(
            session_of(status(env), first.pid)) or first.poll() is not None,
            "the first rping -s listening"),
              "the first rping -s listens (its session holds one rdma_cm id): %r" %
              session_of(status(env), first.pid))
        second = run(env, ["rping", "-s", "-a", DAEMON_IP, "-p", port, "-v"])
        procs.append(second)
        out = finish(second)
        check(second.returncode not in (0, None) and "Address already in use" in out,
              "a second rping -s on port %s: exit %s, %r" % (port, second.returncode,
                                                             out[-300:]))
        check(first.poll() is None, "the first still listens")
        first.kill()
        first.wait()
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids") == 0,
                       "the killed listener's id reclaimed"),
              "SIGKILL: the first's listener goes with its session")
        third = run(env, ["rping", "-s", "-a", DAEMON_IP, "-p", port, "-v"])
        procs.append(third)
        check(wait_for(lambda: (lambda s: s is not None and "cm_ids 1" in s)(
            session_of(status(env), third.pid)) or third.poll() is not None,
            "a new rping -s listening"),
              "then a new rping -s listens on the port: %r" % session_of(status(env),
                                                                          third.pid))
        third.kill()
        third.wait()
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids") == 0 and
                       objects(status(env)) == base, "everything freed"),
              "the daemon holds what it held before: %r" % status(env)[-400:])

        # ---- cmtime: 16 connections at once through the daemon's CM (its
        # server accepts on one thread, disconnects and destroys on
        # another); the client times its 7 steps and exits 0
        n = 16
        cm0 = cm_counts(status(env))
        srv = run(env, ["cmtime", "-b", DAEMON_IP, "-c", str(n)])
        procs.append(srv)
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids", 0) >= 1 or
                       srv.poll() is not None, "cmtime's listener") and srv.poll() is None,
              "cmtime's server listens")
        cli = run(env, ["cmtime", "-s", DAEMON_IP, "-c", str(n)])
        procs.append(cli)
        out = finish(cli)
        steps = re.findall(r"^(create id|resolve addr|resolve route|create qp|connect|"
                           r"disconnect|destroy)\s*:", out, re.M)
        check(cli.returncode == 0 and len(steps) == 7,
              "cmtime -c %d attached: exit %s, a time for each of its 7 steps %s" %
              (n, cli.returncode, steps))
        cm1 = wait_for(lambda: (lambda c: c if c and c["rx_drep"] - cm0["rx_drep"] >= n
                                else None)(cm_counts(status(env))), "cmtime's DREPs")
        cm1 = cm1 or cm_counts(status(env))
        d = {k: cm1[k] - cm0[k] for k in ("tx_req", "rx_req", "tx_rep", "tx_rtu", "tx_dreq",
                                          "rx_drep", "tx_rej")}
        check(all(d[k] == n for k in d if k != "tx_rej") and d["tx_rej"] == 0,
              "the daemon's CM: %d connections made and ended, none rejected: %r" % (n, d))
        check(srv.poll() is None, "cmtime's server still serves")
        srv.kill()
        srv.wait()
        check(wait_for(lambda: (cm_counts(status(env)) or {}).get("ids") == 0 and
                       objects(status(env)) == base, "cmtime's ids and objects freed"),
              "cmtime's ids and objects freed: %r" % objects(status(env)))

        # ---- a session's death disconnects its ids (doc/srnicd.md 8,
        # step 2): ib_write_bw -R's server SIGKILLed mid-run. The daemon
        # destroys its connected id as the kernel's ucma_close() does, so a
        # DREQ goes to the client's id (here the same CM: sent and received
        # once each); the client, whose WRITEs no QP answers, ends with an
        # error in bounded time (the test waits on its exit), never a hang
        cm0 = cm_counts(status(env))
        port = "18516"
        cmd = ["ib_write_bw", "-R", "-s", "65536", "-n", "100000000", "-p", port]
        srv = run(env, cmd)
        procs.append(srv)
        wait_for(lambda: (cm_counts(status(env)) or {}).get("ids", 0) >= 1 or
                 srv.poll() is not None, "the server's listener")
        cli = run(env, cmd + [DAEMON_IP])
        procs.append(cli)

        def wqes_of(pid):
            # (every session of the pid: rdma_cm's context and the program's own)
            return sum(int(w) for w in re.findall(r"session \d+ pid %d .* wqes (\d+)" % pid,
                                                  status(env)))
        running = wait_for(lambda: wqes_of(cli.pid) > 1000 or cli.poll() is not None,
                           "the client's WRITEs under way", every=0.2)
        check(running and cli.poll() is None and srv.poll() is None,
              "ib_write_bw -R attached under way: %d WQEs posted" % wqes_of(cli.pid))
        srv.kill()
        srv.wait()
        check(wait_for(lambda: session_of(status(env), srv.pid) is None,
                       "the killed server's session reclaimed"),
              "SIGKILL: the server's session is gone")
        # the control thread that answers status reclaimed it first: the
        # DREQs are the daemon's, sent while the client still runs (its
        # WRITEs' retries take seconds to give up)
        cmk = cm_counts(status(env))
        alive = cli.poll() is None
        check(alive and cmk["tx_dreq"] - cm0["tx_dreq"] >= 1,
              "the daemon sent the killed server's DREQ at once (%d), the client still "
              "running: %s" % (cmk["tx_dreq"] - cm0["tx_dreq"], alive))
        out = finish(cli)
        check(cli.returncode not in (0, None) and "(hung" not in out,
              "the client ends with an error, not a hang: exit %s, %r" %
              (cli.returncode, out[-300:]))
        cm1 = wait_for(lambda: (lambda c: c if c and c["ids"] == 0 else None)(
            cm_counts(status(env))), "both sides' ids gone") or cm_counts(status(env))
        check(cm1["ids"] == 0, "no rdma_cm id left in the daemon: %d" % cm1["ids"])
        check(cm1["tx_dreq"] - cm0["tx_dreq"] >= 1 and cm1["rx_dreq"] - cm0["rx_dreq"] >= 1,
              "the killed server's connection got its DREQ from the daemon: sent %d, "
              "received %d" % (cm1["tx_dreq"] - cm0["tx_dreq"], cm1["rx_dreq"] - cm0["rx_dreq"]))
        check(wait_for(lambda: objects(status(env)) == base, "both sessions' objects freed"),
              "the daemon holds what it held before: %r" % objects(status(env)))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        if daemon.poll() is None:
            daemon.terminate()
            try:
                daemon.wait(timeout=GUARD_S)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
