# SPDX-License-Identifier: BSD-3-Clause
"""The srnicd tests' checks: each prints ok/FAIL and is remembered; waits
are for a condition, with a guard that only stops a hang."""
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
