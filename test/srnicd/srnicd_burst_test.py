#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The engine takes an SQ's new WQEs into srnic in bursts (doc/srnicd.md,
"The engine's pass"): one srnic_post_send() per burst of up to
DP_SQ_BURST WQEs, so srnic's doorbell (a locked exchange) and its checks
once per burst. One daemon on a net_ring0 port, Debian's ib_write_bw -s 64
-n ITERS --post_list LIST between two programs attached to it: the library
writes LIST WQEs, then one doorbell, so the engine finds them together.

  the daemon's sq_posts      grows by fewer than ITERS / 4 (the bound;
                             ~ITERS / LIST when the engine finds each
                             list whole, more when it reads one while it
                             is being written; before: one call per WQE,
                             +ITERS)

Every WRITE completes (perftest's own count); status shows sq_full.

  srnicd_burst_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from srnicd_check import SRNIC, attached_env, check, daemon_ready, failures, finish, \
    free_port, status, status_num, stop, tcp_listening, wait_for

SKIP = 77
ITERS = 2048
LIST = 16
DAEMON_IP = "10.83.1.1"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("ib_write_bw") is None:
        print("skip: needs root and perftest")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-burst-")
    sock = os.path.join(tmp, "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    daemon = None
    try:
        with open(log, "w") as lf:
            daemon = subprocess.Popen([SRNIC, "daemon", "--port", "net_ring0", "--ip",
                                       DAEMON_IP, "--socket", sock, "--mtu", "9000"],
                                      env=env, stdout=lf, stderr=subprocess.STDOUT)
        if not daemon_ready(daemon, log):
            return 1
        port = free_port()
        cmd = ["ib_write_bw", "-s", "64", "-n", str(ITERS), "--post_list", str(LIST),
               "-p", str(port), "-F"]
        srv = subprocess.Popen([SRNIC, "run", "--"] + cmd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        wait_for(lambda: tcp_listening(port) or srv.poll() is not None, "ib_write_bw's server")
        s0 = status(env)
        cli = subprocess.Popen([SRNIC, "run", "--"] + cmd + ["127.0.0.1"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = [(p, finish(p)) for p in (srv, cli)]
        s1 = status(env)
        ok = check(all(p.returncode == 0 for p, _ in out) and
                   any(ln.split()[:2] == ["64", str(ITERS)] for ln in out[1][1].splitlines()),
                   "ib_write_bw -s 64 -n %d --post_list %d attached: exit %s/%s\n%s\n%s" %
                   (ITERS, LIST, out[0][0].returncode, out[1][0].returncode,
                    out[0][1][-800:], out[1][1][-800:]))
        if ok:
            posts = status_num(s1, "sq_posts") - status_num(s0, "sq_posts")
            print("%d WRITEs posted %d at a time: the daemon's sq_posts +%d" %
                  (ITERS, LIST, posts), flush=True)
            check(0 < posts < ITERS // 4, "%d WQEs into srnic in %d srnic_post_send() calls "
                  "(want fewer than %d: a burst per call, not one call per WQE)" %
                  (ITERS, posts, ITERS // 4))
            # srnic's SQ full: the passes that left WQEs in the ring, shown
            check(status_num(s1, "sq_full") >= status_num(s0, "sq_full") >= 0,
                  "status' engine line shows sq_full (%d -> %d)" %
                  (status_num(s0, "sq_full"), status_num(s1, "sq_full")))
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
