#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The daemon's CM takes a QP of another session of the same process (a
program's ibv_open_device() context beside its rdma_cm's), and "the same
process" is SO_PEERCRED's pid and uid (app/srnicd/session.c,
srnd_session_qp_by_num()): a session outliving its process is not another
user's whose process got the pid again. Before, the pid alone.

No second user is needed: cm_uid_check (test/srnicd/cm_uid_check.c)
makes its QP in a context opened as root, then becomes nobody (uid and gid
65534) before its rdma_cm opens its own session: the same pid, another
uid, as a reused pid is. The daemon serves the group nogroup (--group, its
socket 0660) so nobody may attach.

  keep   rdma_connect() naming the QP: 0 (the REQ goes; nobody listens)
  drop   the same after setuid(nobody): -1 EINVAL, status'
         cm_refused_qp_other +1

  srnicd_cm_uid_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs \\
                        --check BUILD/test/srnicd/cm_uid_check
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, SRNIC, attached_env, check, daemon_ready, failures, finish,
                          objects, status, stop, wait_for)

SKIP = 77
DAEMON_IP = "10.88.0.1"
PORT = "7471"
EINVAL = 22


def refused(env):
    m = re.search(r"cm_refused_qp_other (\d+)", status(env))
    return int(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("skip: needs root")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-cmuid-")
    os.chmod(tmp, 0o755)        # nobody reaches the socket in it
    sock = os.path.join(tmp, "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    daemon = None
    try:
        with open(log, "w") as lf:
            daemon = subprocess.Popen([SRNIC, "daemon", "--port", "net_ring0", "--ip", DAEMON_IP,
                                       "--socket", sock, "--group", "nogroup"], env=env,
                                      stdout=lf, stderr=subprocess.STDOUT)
        if not daemon_ready(daemon, log):
            return 1
        base = objects(status(env))
        for case, want in (("keep", "connect 0 0"), ("drop", "connect -1 %d" % EINVAL)):
            r0 = refused(env)
            p = subprocess.Popen([SRNIC, "run", "--", a.check, DAEMON_IP, PORT, case], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out = finish(p, GUARD_S)
            check(p.returncode == 0 and re.search(r"^%s$" % want, out, re.M) is not None,
                  "%s: rdma_connect naming the QP of the process's root context: want %r: "
                  "exit %s %r" % (case, want, p.returncode, out[-600:]))
            r1 = refused(env)
            check(r1 == r0 + (case == "drop"), "%s: cm_refused_qp_other %d -> %d" %
                  (case, r0, r1))
            check(wait_for(lambda: objects(status(env)) == base, case + "'s objects freed"),
                  "%s: the daemon's objects back to %s" % (case, base))
    finally:
        if daemon is not None and daemon.poll() is None:
            stop(daemon)
        if failures:
            print(open(log).read()[-2000:])
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
