#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A server that forks per client, attached (doc/srnicd.md, section 9):
Debian's unmodified qperf. Its server process accepts each client's TCP
connection and forks a child that opens the device only then (the late
opener rdma_resolve_addr could not find in embedded mode) and runs the test
through rdma_cm (-cm1: qperf's own exchange carries LIDs, not GIDs, which
RoCE refuses as rxe does). One daemon on net_ring0, the server and each
client attached, the client naming 127.0.0.1 (rdma_cm binds it to the
daemon's device, as Linux binds loopback to the first device). qperf's
server child sends its rdma_cm port before it calls rdma_listen(): the
client's REQ that comes first waits for the listen, as the child's bind
took the port's CM listen in the daemon (doc/rdmacm.md).

  qperf 127.0.0.1 -cm1 -t 1 TEST   for each of RC SEND bandwidth and latency,
                                   RDMA READ and WRITE, the two atomics:
                                   exit 0 and a figure
  the server's children            each a session of its own (status), gone
                                   with its client; the server itself holds
                                   no session
  after the server's SIGTERM       the daemon's objects are what they were

  srnicd_qperf_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, attached_env, check, daemon_ready, daemon_start, failures,
                          free_port, objects, status, stop, tcp_listening, wait_for)
from srnicd_test import SRNIC

SKIP = 77
DAEMON_IP = "10.86.0.1"
# test -> what its figure line starts with
TESTS = {
    "rc_bw": "bw",
    "rc_lat": "latency",
    "rc_rdma_read_bw": "bw",
    "rc_rdma_write_lat": "latency",
    "rc_compare_swap_mr": "msg_rate",
    "rc_fetch_add_mr": "msg_rate",
}


def sessions_of(text, prog):
    return [int(p) for p in re.findall(r"^  session \d+ pid (\d+) uid \d+ program %s " % prog,
                                       text, re.M)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("qperf") is None:
        print("skip: needs root and qperf (apt-get install qperf; usertools/srnic setup does)")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-qperf-")
    sock = os.path.join(tmp, "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    daemon = srv = None
    try:
        daemon = daemon_start(env, log, DAEMON_IP, sock)
        if not daemon_ready(daemon, log):
            return 1
        base = objects(status(env))
        port = free_port()
        srv = subprocess.Popen([SRNIC, "run", "--", "qperf", "-lp", str(port)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
        if not check(wait_for(lambda: tcp_listening(port) or srv.poll() is not None,
                              "qperf's server listening") and srv.poll() is None,
                     "qperf's server listens on TCP %d" % port):
            return 1
        check(sessions_of(status(env), "qperf") == [],
              "qperf's server holds no session before a client (it opens the device per child)")
        for test, key in TESTS.items():
            cli = subprocess.run([SRNIC, "run", "--", "qperf", "127.0.0.1", "-lp", str(port),
                                  "-cm1", "-t", "1", test], env=env, capture_output=True,
                                 text=True, timeout=GUARD_S)
            m = re.search(r"^\s+%s\s+=\s+([\d.]+) (\S+)" % key, cli.stdout, re.M)
            if not check(cli.returncode == 0 and m is not None and float(m.group(1)) > 0,
                         "qperf -cm1 %s: exit %d, %s" % (test, cli.returncode,
                                                         m.group(0).strip() if m else
                                                         (cli.stdout + cli.stderr)[-400:])):
                # the daemon's CM counters that moved, for the failure's cause
                cm = re.search(r"^cm (.*)$", status(env), re.M)
                print("  cm: " + " ".join("%s %s" % kv for kv in
                                           zip(*[iter(cm.group(1).split())] * 2)
                                           if kv[1] != "0") if cm else "  no cm line")
            # the server's child for this client ends after it: its session too
            check(wait_for(lambda: sessions_of(status(env), "qperf") == [],
                           "the server's child's session to end"),
                  "%s: the server's child's session gone after its client" % test)
            check(srv.poll() is None, "%s: qperf's server still serves" % test)
        # a child seen holding its session while its client runs: a long
        # test, the status taken meanwhile
        cli = subprocess.Popen([SRNIC, "run", "--", "qperf", "127.0.0.1", "-lp", str(port),
                                "-cm1", "-t", "3", "rc_bw"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        two = wait_for(lambda: len(sessions_of(status(env), "qperf")) == 2 or
                       cli.poll() is not None, "the client's and the child's sessions")
        pids = sessions_of(status(env), "qperf")
        check(two and len(pids) == 2 and cli.pid in pids and srv.pid not in pids,
              "during rc_bw: two qperf sessions, the client's and the server's forked "
              "child's, none the server's own: %s (server %d, client %d)" %
              (pids, srv.pid, cli.pid))
        out, _ = cli.communicate(timeout=GUARD_S)
        check(cli.returncode == 0, "qperf -cm1 -t 3 rc_bw: exit %d %s" % (cli.returncode,
                                                                          out[-300:]))
        os.killpg(srv.pid, signal.SIGTERM)
        srv.wait(timeout=GUARD_S)
        srv = None
        back = wait_for(lambda: objects(status(env)) == base, "the daemon's objects back")
        check(back, "after the server's end: the daemon's objects as before (%s)" %
              objects(status(env)))
    finally:
        if failures and os.path.exists(log):
            # what the daemon said (a slow control call, a session closed)
            print("the daemon's log:\n" + "".join(open(log).readlines()[-30:]))
        if srv is not None and srv.poll() is None:
            os.killpg(srv.pid, signal.SIGKILL)
        if daemon is not None and daemon.poll() is None:
            stop(daemon)
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(failures) if failures else "srnicd qperf: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
