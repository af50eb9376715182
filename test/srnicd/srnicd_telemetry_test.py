#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnicd through DPDK telemetry (doc/srnicd.md, "Seeing it"): the daemon's
telemetry socket, named in its status, answers what status says, as data,
to any telemetry client (the protocol of dpdk-telemetry.py):

  /srnicd/info           pid, device, port, link, the object totals: the
                         same figures as status' lines
  /srnicd/sessions       the ids of the live sessions
  /srnicd/session,ID     an attached program's pid, program name, QPs, MRs
  /srnic/stats,srnic0    the engine's counters (lib/core's command)
  bad parameters         null, the daemon still serving

One daemon on net_ring0; Debian's unmodified ibv_rc_pingpong server
attached holds a PD, CQ, QP and MR while it waits for a client that never
comes; after its SIGKILL the session is gone from telemetry too.

  srnicd_telemetry_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from srnicd_check import (GUARD_S, SRNIC, attached_env, check, daemon_ready, daemon_start,
                          failures, free_port, status, status_num, stop, tel, wait_for)

SKIP = 77
DAEMON_IP = "10.83.0.1"


def tel_socket(text):
    m = re.search(r"^telemetry (\S+) ", text, re.M)
    return m.group(1) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--daemon", required=True)
    ap.add_argument("--lib", required=True)
    a = ap.parse_args()
    if os.geteuid() != 0 or shutil.which("ibv_rc_pingpong") is None:
        print("skip: needs root and ibverbs-utils")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="srnicd-tel-")
    sock = os.path.join(tmp, "srnicd.sock")
    env = attached_env(a.daemon, a.lib, sock)
    log = os.path.join(tmp, "srnicd.log")
    daemon = prog = None
    try:
        daemon = daemon_start(env, log, DAEMON_IP, sock)
        if not daemon_ready(daemon, log):
            return 1
        text = status(env)
        path = tel_socket(text)
        if not check(path is not None and os.path.exists(path),
                     "status names the telemetry socket, and it exists: %s" % path):
            return 1
        info = tel(path, "/srnicd/info")
        check(info["pid"] == status_num(text, "pid") and info["device"] == "srnic0" and
              info["ip"] == DAEMON_IP and info["port"] == "net_ring0" and
              info["link"] == "ACTIVE" and info["sessions"] == 0 and info["qps"] == 0,
              "/srnicd/info before: the daemon's pid, srnic0, its ip and port, ACTIVE, "
              "no session, no QP: %s" % info)
        check(tel(path, "/srnicd/sessions") == [], "/srnicd/sessions: none yet")

        # an attached program holding a PD, CQ, QP and MR, waiting for a client
        prog = subprocess.Popen([SRNIC, "run", "--", "ibv_rc_pingpong", "-g", "1", "-p",
                                 str(free_port())], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        held = wait_for(lambda: re.search(r"program ibv_rc_pingpong .*qps 1 mrs 1",
                                          status(env)) is not None or prog.poll() is not None,
                        "the pingpong's session holding its QP and MR")
        if not check(held and prog.poll() is None, "ibv_rc_pingpong attached and waiting"):
            return 1
        text = status(env)
        ids = tel(path, "/srnicd/sessions")
        m = re.search(r"^  session (\d+) pid (\d+) .*program ibv_rc_pingpong", text, re.M)
        check(m is not None and ids == [int(m.group(1))],
              "/srnicd/sessions: the one session status lists (%s, %s)" %
              (ids, m.group(1) if m else None))
        if ids:
            s = tel(path, "/srnicd/session,%d" % ids[0])
            check(s is not None and s["pid"] == int(m.group(2)) and
                  s["program"] == "ibv_rc_pingpong" and s["qps"] == 1 and s["mrs"] == 1 and
                  s["devices_open"] == 1 and s["id"] == ids[0],
                  "/srnicd/session,%d: its pid, program, 1 QP, 1 MR: %s" % (ids[0], s))
        info = tel(path, "/srnicd/info")
        check(info["sessions"] == 1 and info["qps"] == status_num(text, "qps") >= 1 and
              info["mrs"] == status_num(text, "mrs") >= 1 and
              info["cqs"] == status_num(text, "cqs") >= 1,
              "/srnicd/info with the program: the totals status gives: %s" % info)
        stats = tel(path, "/srnic/stats,srnic0")
        check(isinstance(stats, dict) and "rx_pkts" in stats and len(stats) > 20,
              "/srnic/stats,srnic0: the engine's counters (%d)" % len(stats or {}))
        for bad in ("/srnicd/session,abc", "/srnicd/session,0", "/srnicd/session,999999",
                    "/srnicd/session"):
            check(tel(path, bad) is None, "%s: null" % bad)
        check(tel(path, "/srnicd/sessions") == ids, "served after the bad parameters")

        # the program dies: its session leaves telemetry as it leaves status
        os.killpg(prog.pid, signal.SIGKILL)
        prog.wait(timeout=GUARD_S)
        gone = wait_for(lambda: tel(path, "/srnicd/sessions") == [], "the session's end")
        info = tel(path, "/srnicd/info")
        check(gone and info["sessions"] == 0 and info["qps"] == 0 and info["mrs"] == 0,
              "after SIGKILL: no session, no QP, no MR: %s" % info)
    finally:
        if prog is not None and prog.poll() is None:
            os.killpg(prog.pid, signal.SIGKILL)
        if daemon is not None and daemon.poll() is None:
            stop(daemon)
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failed" % len(failures) if failures else "srnicd telemetry: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
