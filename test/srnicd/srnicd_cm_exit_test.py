#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""exit() from a signal handler that interrupted an rdma_cm call, attached
(drivers/rdmacm/cma.c, cma_exit_lock()): qperf ends a timed-out test so,
and the library's exit handler waited for ever for the lock the
interrupted call held (a qperf server child hung until killed).

cm_exit_check (test/srnicd/cm_exit_check.c) loops rdma_create_id,
rdma_bind_addr, rdma_listen, rdma_destroy_id on one daemon's device and
exits from its SIGALRM handler 30 ms in: RUNS runs, each must end, exit 0
(a guard only stops a hang); the daemon's objects and CM ids are back to
none after each.

  srnicd_cm_exit_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs \\
                         --check BUILD/test/srnicd/cm_exit_check
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from srnicd_check import (SRNIC, attached_env, check, daemon_ready, daemon_start, failures,
                          objects, status, stop, wait_for)

SKIP = 77
DAEMON_IP = "10.87.0.1"
RUNS = 10
EXIT_GUARD_S = 30       # a run takes 30 ms and its exit; a hang is killed here


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("skip: needs root")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-cmexit-")
    sock = os.path.join(tmp, "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    daemon = None
    try:
        daemon = daemon_start(env, log, DAEMON_IP, sock)
        if not daemon_ready(daemon, log):
            return 1
        base = objects(status(env))
        ended = 0
        for i in range(RUNS):
            p = subprocess.Popen([SRNIC, "run", "--", a.check, DAEMON_IP], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
            try:
                out, _ = p.communicate(timeout=EXIT_GUARD_S)
                rc = p.returncode
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                out, _ = p.communicate()
                rc = None
            ended += rc == 0
            if not check(rc == 0, "run %d: exit() from the SIGALRM handler ends the process: "
                         "exit %s %s" % (i, "(hung)" if rc is None else rc, out[-300:])):
                continue
        check(ended == RUNS, "%d of %d runs ended" % (ended, RUNS))
        check(wait_for(lambda: objects(status(env)) == base and
                       re.search(r"^cm ids 0 ", status(env), re.M) is not None, "objects back"),
              "the daemon's objects and CM ids back to none: %s" % objects(status(env)))
    finally:
        if daemon is not None and daemon.poll() is None:
            stop(daemon)
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(failures) if failures else "srnicd cm_exit: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
