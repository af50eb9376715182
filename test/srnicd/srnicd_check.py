# SPDX-License-Identifier: BSD-3-Clause
"""The srnicd tests' checks: each prints ok/FAIL and is remembered; waits
are for a condition, with a guard that only stops a hang. And what the
tests share: a program's environment attached to the test's daemon, the
daemon's status."""
import os
import subprocess
import time

GUARD_S = 120           # a step that takes longer has hung

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def wait_for(cond, what, guard=GUARD_S, every=0.05):
    deadline = time.monotonic() + guard
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            check(False, "waited %d s for %s" % (guard, what))
            return v
        time.sleep(every)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRNIC = os.path.join(ROOT, "usertools", "srnic")


def attached_env(daemon, lib, sock):
    """The environment of a program attached to the daemon on sock: no port
    of its own (SRNIC_PORT, SRNIC_IP, SRNIC_IP6, SRNIC_CONFIG unset)."""
    env = dict(os.environ)
    env.update({"SRNIC_DAEMON": daemon, "SRNIC_VERBS_LIB": lib,
                "SRNIC_DAEMON_SOCKET": sock, "ASAN_OPTIONS": "detect_leaks=0"})
    for k in ("SRNIC_PORT", "SRNIC_IP", "SRNIC_IP6", "SRNIC_CONFIG"):
        env.pop(k, None)
    return env


def status(env):
    """usertools/srnic status' text, "" if no daemon answers."""
    out = subprocess.run([SRNIC, "status"], env=env, capture_output=True, text=True,
                         timeout=GUARD_S)
    return out.stdout if out.returncode == 0 else ""
