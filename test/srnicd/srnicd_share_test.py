#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Registrations that share pages, attached (doc/srnicd.md section 5,
"Registrations that share pages"): one srnicd on a net_ring0 port, every
program attached to it, servers and clients on the device's own address
(every packet loops back through the daemon):

  - share_check: five MRs over three pages (two in one page, one over
    both and into the next, one across the next two, one a second PD's
    over the same bytes), RDMA WRITE and READ through each, deregistered
    in eight orders, every byte checked after each step;
  - Debian's unmodified rping -s / rping -c -V -C 20 (-V: the client
    verifies every ping's data), rdma_server / rdma_client, ucmatose and
    udaddy, server and client each: all exit 0;
  - a process SIGKILLed mid-rping (the server, then in a second run the
    client): the other ends (an error or DISCONNECTED) by itself, and the
    daemon's rdma_cm ids and objects go back to what they were before.

  srnicd_share_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs \\
      --share BUILD/test/srnicd/share_check

Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from srnicd_check import (GUARD_S, SRNIC, attached_env, check, daemon_ready, daemon_start,
                          failures, finish, objects, run, session_of, status, stop, wait_for)

SKIP = 77
DAEMON_IP = "10.84.0.1"
TOOLS = ("rping", "rdma_server", "rdma_client", "ucmatose", "udaddy")


def cm_ids(env):
    m = re.search(r"^cm .*\bids (\d+)", status(env), re.M)
    return int(m.group(1)) if m else -1


def listening(env, p):
    """p's session holds an rdma_cm id and the daemon's CM a listener (a
    REQ before rdma_listen is REJected, as the kernel's is), or p is gone."""
    text = status(env)
    s = session_of(text, p.pid)
    return (s is not None and re.search(r"\bcm_ids [1-9]", s) is not None and
            re.search(r"^cm .*\blistening [1-9]", text, re.M) is not None) or \
        p.poll() is not None


def pair(env, base, name, srv_args, cli_args, procs):
    """A server started and listening, then its client: both exit 0 and the
    daemon's objects and ids go back to base. The two outputs."""
    srv = run(env, srv_args)
    procs.append(srv)
    wait_for(lambda: listening(env, srv), "%s's listener" % name)
    cli = run(env, cli_args)
    procs.append(cli)
    outs = finish(srv), finish(cli)
    for side, p, out in (("server", srv, outs[0]), ("client", cli, outs[1])):
        check(p.returncode == 0, "%s attached, %s (%s): exit %s, %r" %
              (name, side, " ".join(srv_args if side == "server" else cli_args), p.returncode,
               out[-700:]))
    check(wait_for(lambda: objects(status(env)) == base and cm_ids(env) == 0,
                   "%s's objects and ids freed" % name),
          "after %s the daemon holds what it held before: %r" % (name, objects(status(env))))
    return outs


def kill_mid_rping(env, base, victim, port, tmp, procs):
    """rping -s and an endless rping -c -v; once pings flow, victim (server
    or client) is SIGKILLed: the other must exit by itself (an error or
    DISCONNECTED: the daemon disconnects the dead session's id with a DREQ)
    and the daemon's ids and objects go back to base."""
    outf = os.path.join(tmp, "rping-%s.out" % victim)
    srv = run(env, ["rping", "-s", "-a", DAEMON_IP, "-p", port])
    procs.append(srv)
    wait_for(lambda: listening(env, srv), "rping -s's listener")
    with open(outf, "w") as of:
        cli = subprocess.Popen([SRNIC, "run", "--", "rping", "-c", "-a", DAEMON_IP, "-p", port,
                                "-v"], env=env, stdout=of, stderr=subprocess.STDOUT, text=True)
    procs.append(cli)
    # rping's stdout to a file is block-buffered: a block of pings
    # written means some fifty went by
    flowing = wait_for(lambda: "ping data: rdma-ping-" in open(outf).read() or
                       cli.poll() is not None or srv.poll() is not None, "rping's pings")
    check(flowing and cli.poll() is None and srv.poll() is None,
          "rping attached: pings flow before the kill (%r)" % open(outf).read()[-300:])
    dead, survivor = (srv, cli) if victim == "server" else (cli, srv)
    t0 = time.monotonic()
    dead.kill()
    dead.wait()
    try:
        survivor.wait(timeout=GUARD_S)
        took = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        took = None
    out = open(outf).read() if survivor is cli else finish(srv)
    check(took is not None and (survivor.returncode != 0 or "DISCONNECT" in out),
          "rping's %s SIGKILLed mid-run: the %s ends by itself%s: exit %s, %r" %
          (victim, "client" if survivor is cli else "server",
           " in %.2f s" % took if took is not None else " (hung)", survivor.returncode,
           out[-300:]))
    check(wait_for(lambda: objects(status(env)) == base and cm_ids(env) == 0,
                   "the killed rping's ids and objects freed"),
          "after the %s's SIGKILL the daemon holds what it held before: %r, ids %d" %
          (victim, objects(status(env)), cm_ids(env)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--share", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or any(shutil.which(t) is None for t in TOOLS):
        print("skip: needs root and rdmacm-utils (%s)" % ", ".join(TOOLS))
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-share-test-")
    sock = os.path.join(tmp, "run", "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    procs = []
    daemon = daemon_start(env, log, DAEMON_IP, sock)
    try:
        if not daemon_ready(daemon, log):
            return 1
        base = objects(status(env))
        check(base is not None and cm_ids(env) == 0,
              "status shows the daemon's objects, no rdma_cm id: %r" % base)

        # ---- MRs over shared pages, RDMA through each, dereg in every order
        p = run(env, [a.share])
        procs.append(p)
        out = finish(p)
        check(p.returncode == 0 and "share_check: ok" in out,
              "share_check attached: exit %s, %r" % (p.returncode, out[-1500:]))
        check(wait_for(lambda: objects(status(env)) == base, "share_check's objects freed"),
              "after share_check the daemon holds what it held before: %r" %
              objects(status(env)))

        # ---- Debian's rdma_cm programs: their buffers are heap neighbours
        port = "7472"
        outs = pair(env, base, "rping -V",
                    ["rping", "-s", "-a", DAEMON_IP, "-p", port, "-C", "20", "-V"],
                    ["rping", "-c", "-a", DAEMON_IP, "-p", port, "-C", "20", "-V", "-v"], procs)
        pings = re.findall(r"^ping data: rdma-ping-(\d+): ", outs[1], re.M)
        check(len(pings) == 20 and pings == [str(i) for i in range(20)],
              "rping -c -V -v printed pings 0-19 in order, each verified: %d" % len(pings))
        port = "7473"
        pair(env, base, "rdma_server/rdma_client", ["rdma_server", "-s", DAEMON_IP, "-p", port],
             ["rdma_client", "-s", DAEMON_IP, "-p", port], procs)
        port = "7474"
        pair(env, base, "ucmatose", ["ucmatose", "-b", DAEMON_IP, "-p", port, "-C", "10"],
             ["ucmatose", "-s", DAEMON_IP, "-p", port, "-C", "10"], procs)
        pair(env, base, "udaddy", ["udaddy", "-b", DAEMON_IP, "-C", "10"],
             ["udaddy", "-s", DAEMON_IP, "-C", "10"], procs)

        # ---- a process SIGKILLed mid-rping: the survivor ends by itself
        for victim, port in (("server", "7475"), ("client", "7476")):
            kill_mid_rping(env, base, victim, port, tmp, procs)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        rc = stop(daemon)
        check(rc == 0, "the daemon stops cleanly on SIGTERM: %s (%s)" %
              (rc, open(log).read()[-600:]))
        shutil.rmtree(tmp, ignore_errors=True)
    print("srnicd_share: %s" % ("ok" if not failures else "%d failed" % len(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
