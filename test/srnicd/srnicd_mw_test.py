#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Memory windows attached (doc/srnicd.md, section 9): one srnicd on a
net_ring0 port (its frames loop back), mw_check attached (a program built
only against the system's <infiniband/verbs.h>), each case a process:

  type2      a type 2 window bound through the SQ, a 4 KiB WRITE through it
             (T's bytes), LOCAL_INV, the next WRITE refused (remote access
             error, T unchanged)
  send_inv   invalidated by the peer's SEND with Invalidate (IBV_WC_WITH_INV,
             invalidated_rkey), the next WRITE refused
  type1      ibv_bind_mw, a WRITE, an unbind, the WRITE refused
  hostile    another session's window forged into a bind (the QP to ERR,
             bad_ring counted) and into ibv_dealloc_mw (EINVAL, the window
             still its owner's); a window bound over another session's MR
             (IBV_WC_MW_BIND_ERR)
  die        SIGKILLed with a window bound over an MR: the daemon frees the
             window, then the MR (status' mws and mrs back to before)
  rereg      ibv_rereg_mr: an MR moved to a new range over two pages (new
             keys, a WRITE's bytes there, READ back), then made read only
             (the same keys, a WRITE refused); refused with a window bound

After each case the daemon's objects (status) are what they were before.
Then rereg again on a daemon that maps every MR elsewhere than the
program's addresses (SRNICD_MR_ELSEWHERE=1): the new range's keys name the
program's addresses, not the daemon's.

  srnicd_mw_test.py --daemon BUILD/app/srnicd/srnicd-test --lib BUILD/drivers/verbs \\
      --check BUILD/test/srnicd/mw_check
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

from srnicd_check import (attached_env, check, daemon_ready, daemon_start, failures, finish,
                          run, status, stop, wait_for)

DAEMON_IP = "10.86.0.1"


def objects(env):
    """status' objects line, without bad_ring (a counter, not an object)"""
    m = re.search(r"^objects (.*)$", status(env), re.M)
    return re.sub(r" bad_ring \d+", "", m.group(1)) if m else None


def bad_ring(env):
    m = re.search(r"\bbad_ring (\d+)", status(env))
    return int(m.group(1)) if m else -1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--check", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="srnicd-mw-test-")
    sock = os.path.join(tmp, "run", "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    daemon = daemon_start(env, log, DAEMON_IP, sock)
    try:
        if not daemon_ready(daemon, log):
            return 1
        base = objects(env)
        check(base is not None and " mws 0" in base,
              "status counts the daemon's memory windows: %r" % base)
        for case in ("type2", "send_inv", "type1", "hostile", "rereg"):
            bad0 = bad_ring(env)
            p = run(env, [a.check, case])
            out = finish(p)
            print(out, flush=True)
            check(p.returncode == 0 and "mw_check %s: ok" % case in out,
                  "mw_check %s attached: exit %s" % (case, p.returncode))
            if case == "hostile":
                check(bad_ring(env) == bad0 + 1,
                      "the forged bind counted bad_ring: %d -> %d" % (bad0, bad_ring(env)))
            check(wait_for(lambda: objects(env) == base, "mw_check %s's objects freed" % case),
                  "after mw_check %s the daemon holds what it held before: %r" %
                  (case, objects(env)))
        p = run(env, [a.check, "die"])
        out = finish(p)
        check(p.returncode == -9 and "bound" in out,
              "mw_check die: a window bound, then SIGKILLed: exit %s, %r" %
              (p.returncode, out[-600:]))
        check(wait_for(lambda: objects(env) == base, "the killed process's objects freed"),
              "after its SIGKILL the daemon holds what it held before (its window freed, "
              "then its MR): %r, log %r" % (objects(env), open(log).read()[-400:]))
    finally:
        rc = stop(daemon)
        check(rc == 0, "the daemon stops cleanly on SIGTERM: %s (%s)" %
              (rc, open(log).read()[-600:]))
    env["SRNICD_MR_ELSEWHERE"] = "1"
    daemon = daemon_start(env, log, DAEMON_IP, sock)
    try:
        if daemon_ready(daemon, log):
            p = run(env, [a.check, "rereg"])
            out = finish(p)
            print(out, flush=True)
            m = re.search(r"^mrs_elsewhere (\d+)", status(env), re.M)
            check(p.returncode == 0 and "mw_check rereg: ok" in out and m and int(m.group(1)) >= 4,
                  "mw_check rereg with every MR mapped elsewhere in the daemon: exit %s, "
                  "mrs_elsewhere %s" % (p.returncode, m and m.group(1)))
    finally:
        stop(daemon)
        shutil.rmtree(tmp, ignore_errors=True)
    print("srnicd_mw: %s" % ("ok" if not failures else "%d failed" % len(failures)))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
