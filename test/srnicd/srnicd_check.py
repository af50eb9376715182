# SPDX-License-Identifier: BSD-3-Clause
"""The srnicd tests' checks: each prints ok/FAIL and is remembered; waits
are for a condition, with a guard that only stops a hang. And what the
tests share: a program's environment attached to the test's daemon, and what
they read from the daemon and the host: status, its object counts, TCP ports."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRNIC = os.path.join(ROOT, "usertools", "srnic")
OBJECTS = ("pds", "cqs", "qps", "mrs", "mr_bytes", "shm_bytes")

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


def svc_header():
    """lib/svc/srnic_svc.h's text: tests that speak the protocol themselves
    read its numbers there (types are appended as the protocol grows)."""
    return open(os.path.join(ROOT, "lib", "svc", "srnic_svc.h")).read()


def svc_types():
    """enum svc_type's values, read from lib/svc/srnic_svc.h"""
    body = svc_header()
    body = body[body.index("enum svc_type {"):]
    names = re.findall(r"^\s*(SVC_[A-Z_]+)(?: = 1)?,", body[:body.index("};")], re.M)
    return {n: i + 1 for i, n in enumerate(names)}


def svc_major():
    """SVC_VERSION_MAJOR, the HELLO's major the daemon takes"""
    return int(re.search(r"^#define SVC_VERSION_MAJOR (\d+)", svc_header(), re.M).group(1))


def attached_env(daemon, lib, sock):
    """The environment of a program attached to the daemon on sock: no port
    of its own (SRNIC_PORT, SRNIC_IP, SRNIC_IP6, SRNIC_CONFIG unset)."""
    env = dict(os.environ)
    env.update({"SRNIC_DAEMON": daemon, "SRNIC_VERBS_LIB": lib,
                "SRNIC_DAEMON_SOCKET": sock, "ASAN_OPTIONS": "detect_leaks=0"})
    for k in ("SRNIC_PORT", "SRNIC_IP", "SRNIC_IP6", "SRNIC_CONFIG"):
        env.pop(k, None)
    return env


def daemon_start(env, log, ip, sock, port="net_ring0"):
    """srnicd on port (a net_ring0 port by default: its frames come back to
    it) with address ip and control socket sock, its output in log."""
    with open(log, "w") as lf:
        return subprocess.Popen([SRNIC, "daemon", "--port", port, "--ip", ip, "--socket", sock],
                                env=env, stdout=lf, stderr=subprocess.STDOUT)


def daemon_ready(daemon, log):
    """Whether daemon printed its ready line and runs (check()ed)."""
    up = wait_for(lambda: "srnicd: ready" in open(log).read() or daemon.poll() is not None,
                  "the daemon's ready line")
    return check(up and daemon.poll() is None, "daemon up: %s" % open(log).read()[-600:])


def run(env, args):
    """args started attached through usertools/srnic run, output piped."""
    return subprocess.Popen([SRNIC, "run", "--"] + args, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(p, guard=GUARD_S):
    """p's output once it exits (killed, and said so, after guard s)."""
    try:
        return p.communicate(timeout=guard)[0]
    except subprocess.TimeoutExpired:
        p.kill()
        return p.communicate()[0] + " (hung: killed)"


def stop(p):
    """p's exit status after SIGTERM (SIGKILL after GUARD_S s)."""
    p.terminate()
    try:
        return p.wait(GUARD_S)
    except subprocess.TimeoutExpired:
        p.kill()
        return p.wait()


def teardown(daemons, progs, logs, tmp, stopped=None):
    """A test's end, pass or fail: a stopped daemon continued, every program
    still running killed, the daemons stopped in reverse order (SIGKILL after
    GUARD_S s), the logs' tails printed if anything failed, tmp removed."""
    if stopped is not None:
        os.kill(stopped.pid, signal.SIGCONT)
    for p in progs:
        if p.poll() is None:
            p.kill()
            p.wait()
    for d in daemons[::-1]:
        if d.poll() is None:
            stop(d)
    if failures:
        for lg in logs:
            print(open(lg).read()[-2000:])
    shutil.rmtree(tmp, ignore_errors=True)


def session_of(text, pid):
    """pid's session line in status, or None."""
    m = re.search(r"^  session \d+ pid %d .*$" % pid, text, re.M)
    return m.group(0) if m else None


def strace_calls(path):
    """strace -c's summary in path: {system call: calls}"""
    calls = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 5 and w[3].isdigit():
                calls[w[-1]] = int(w[3])
    return calls


def status(env):
    """usertools/srnic status' text, "" if no daemon answers."""
    out = subprocess.run([SRNIC, "status"], env=env, capture_output=True, text=True,
                         timeout=GUARD_S)
    return out.stdout if out.returncode == 0 else ""


def status_num(text, key):
    m = re.search(r"\b%s (\d+)" % key, text)
    return int(m.group(1)) if m else -1


def objects(text):
    """The daemon's object and memory counts (status' objects line)."""
    m = re.search(r"^objects (.*)$", text, re.M)
    return {k: status_num(m.group(1), k) for k in OBJECTS} if m else None


def tel(path, cmd):
    """One DPDK telemetry command on the socket at path: its JSON reply's value (None for null)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(GUARD_S)
        s.connect(path)
        hello = json.loads(s.recv(16384).decode())
        s.send(cmd.encode())
        rep = json.loads(s.recv(hello["max_output_len"]).decode())
    return rep[cmd.split(",", 1)[0]]


def tcp_listening(port):
    """Whether some socket listens on TCP port (any address), from /proc/net/tcp{,6}."""
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            for line in open(f).read().splitlines()[1:]:
                x = line.split()
                if x[3] == "0A" and int(x[1].rsplit(":", 1)[1], 16) == port:
                    return True
        except OSError:
            pass
    return False


def free_port():
    with socket.socket() as t:
        t.bind(("127.0.0.1", 0))
        return t.getsockname()[1]
