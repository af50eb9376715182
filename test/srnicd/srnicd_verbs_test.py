#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""srnicd's attached verbs beyond RC/UC (doc/srnicd.md, section 9): UD QPs
and address handles, shared receive queues, async events. One daemon on a
net_ring0 port (its frames loop back; both programs of a pair talk over
the device's own GID), Debian's unmodified pingpongs attached (no --port),
and a small C program of the test's own for the async events:

  ibv_ud_pingpong -g 1 -c      server and client both exit 0, every
                               datagram's bytes checked (40-byte GRH first)

  srnicd_verbs_test.py --daemon BUILD/app/srnicd/srnicd --lib BUILD/drivers/verbs

After each pair the daemon's objects (status) are what they were before.
Every wait is for a condition, with a guard that only stops a hang.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

from srnicd_check import GUARD_S, check, failures, wait_for
from srnicd_test import SRNIC, free_port, status, tcp_listening

SKIP = 77
DAEMON_IP = "10.82.0.1"
GID_INDEX = "1"         # the daemon's IPv4 GID (::ffff:10.82.0.1)


def objects(env):
    """status' objects line (PDs, CQs, QPs, MRs, bytes, bad_ring, AHs, ...)"""
    m = re.search(r"^objects (.*)$", status(env), re.M)
    return m.group(1) if m else None


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


def async_case(env, base, prog, case):
    """srnicd_async CASE attached: every step ok, exit 0, the objects freed"""
    try:
        out = subprocess.run([SRNIC, "run", "--", prog, case], env=env, capture_output=True,
                             text=True, timeout=GUARD_S)
        rc, text = out.returncode, out.stdout + out.stderr
    except subprocess.TimeoutExpired as e:
        rc, text = None, str(e.stdout)
    print(text, flush=True)
    check(rc == 0 and "FAIL" not in text, "srnicd_async %s attached: exit %s" % (case, rc))
    check(wait_for(lambda: objects(env) == base, case + "'s objects freed"),
          "srnicd_async %s: the daemon's objects back to %s" % (case, base))


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

        # ---- async events: COMM_EST at a QP in RTR, QP_FATAL with RETRY_EXC
        # once its peer is gone (two sessions of one program)
        if check(a.async_prog is not None, "srnicd_async built (libibverbs found)"):
            async_case(env, base, a.async_prog, "qp_fatal")
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
