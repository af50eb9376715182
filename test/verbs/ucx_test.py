#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Programs that look for an RDMA device on the filesystem (UCX), and UCX's
own transports over srnic, all started with usertools/srnic run as users do.

  ucx_test.py --lib BUILD/drivers/verbs CASE

devfs: a program that brought the device up (ctypes: ibv_get_device_list)
  finds /dev/infiniband/uverbs0 a character device it may read and write,
  /sys/class/infiniband/srnic0 with the GID table the verbs report, and its
  children (ls, cat: other entries into libc) the same.
ucx_info: `ucx_info -d` lists srnic0's rc_verbs and ud_verbs, nothing faked
  (skipped, saying so, without ucx-utils).
ucx_tag: ucx_perftest between two srnic processes over memif, tag_lat and
  tag_bw over ud_verbs alone and over rc_verbs (ud_verbs its wireup): both
  exit 0, the client with its Final line.
ucx_ops: the same pair for UCP put, get, the four atomics, stream and am
  over rc_verbs, and UCT's zero-copy put and get of 64 KiB.
"""
import argparse
import os
import shutil
import subprocess
import sys

import verbs_test as vt

# the device's view, printed by a program under srnic run; checked here
DEVFS_PROBE = r"""
import ctypes, os, stat, subprocess, sys
v = ctypes.CDLL("libibverbs.so.1")
v.ibv_get_device_list.restype = ctypes.c_void_p
n = ctypes.c_int(0)
if not v.ibv_get_device_list(ctypes.byref(n)) or n.value != 1:
    sys.exit("no device")
st = os.stat("/dev/infiniband/uverbs0")
print("chr", int(stat.S_ISCHR(st.st_mode)))
print("rw", int(os.access("/dev/infiniband/uverbs0", os.R_OK | os.W_OK)))
print("class", " ".join(sorted(os.listdir("/sys/class/infiniband"))))
print("ibdev", open("/sys/class/infiniband_verbs/uverbs0/ibdev").read().strip())
p = "/sys/class/infiniband/srnic0/ports/1/"
for f in ("state", "link_layer", "gids/1", "gid_attrs/types/1"):
    print(f, open(p + f).read().strip())
print("ls", subprocess.run(["ls", p + "gids"], capture_output=True, text=True).stdout.split())
print("cat", subprocess.run(["cat", "/sys/class/infiniband/srnic0/node_type"],
      capture_output=True, text=True).stdout.strip())
print("root", os.environ.get("SRNIC_DEVFS", ""))
"""


def run_one(name, port, ip, prog, env=None, wrap=()):
    out = os.path.join(vt.TMP, name + ".log")
    with open(out, "w") as f:
        p = subprocess.run(list(wrap) + vt.srnic_run(port, ip, prog), stdout=f,
                           stderr=subprocess.STDOUT,
                           env=env or vt.run_env(), timeout=vt.GUARD_S)
    return p.returncode, open(out).read()


def case_devfs():
    sock = os.path.join(vt.TMP, "devfs.sock")
    rc, out = run_one("devfs", "net_memif0,role=server,socket=" + sock, "10.77.0.1",
                      [sys.executable, "-c", DEVFS_PROBE])
    lines = dict(l.split(" ", 1) for l in out.splitlines() if " " in l)
    vt.check(rc == 0, "devfs: the probe exits %s:\n%s" % (rc, out))
    vt.check(lines.get("chr") == "1", "devfs: /dev/infiniband/uverbs0 a character device")
    vt.check(lines.get("rw") == "1", "devfs: /dev/infiniband/uverbs0 readable and writable")
    vt.check(lines.get("class") == "srnic0", "devfs: /sys/class/infiniband lists srnic0 alone")
    vt.check(lines.get("ibdev") == "srnic0", "devfs: uverbs0's ibdev is srnic0")
    vt.check(lines.get("state") == "4: ACTIVE", "devfs: port 1 ACTIVE")
    vt.check(lines.get("link_layer") == "Ethernet", "devfs: link layer Ethernet")
    vt.check(lines.get("gids/1") == "0000:0000:0000:0000:0000:ffff:0a4d:0001",
             "devfs: GID 1 is ::ffff:10.77.0.1 (%s)" % lines.get("gids/1"))
    vt.check(lines.get("gid_attrs/types/1") == "RoCE v2", "devfs: GID 1 RoCE v2")
    vt.check(lines.get("ls") == "['0', '1', '2']",
             "devfs: ls lists the GID table, 2 empty as the kernel's (%s)" % lines.get("ls"))
    vt.check(lines.get("cat") == "1: CA", "devfs: cat reads node_type (%s)" % lines.get("cat"))
    root = lines.get("root", "")
    vt.check(root != "" and not os.path.exists(root),
             "devfs: the private directory %r removed at exit" % root)
    # a root its maker left when killed (no exit handler runs on SIGKILL),
    # and `srnic run` names roots by pid, which the system reuses: the next
    # process adopts it, empties it (no old device shows) and removes it
    stale = os.path.join(vt.TMP, "devfs-stale")
    os.makedirs(os.path.join(stale, "sys/class/infiniband/old0"), exist_ok=True)
    os.chmod(stale, 0o755)  # this user's, nobody else writes into it (else not adopted)
    dead = subprocess.Popen(["true"])
    dead.wait()
    with open(os.path.join(stale, "owner"), "w") as f:
        f.write("%d\n" % dead.pid)
    env = vt.run_env()
    env["SRNIC_DEVFS"] = stale
    rc, out2 = run_one("devfs-stale", "net_memif0,role=server,socket=" + sock + "2",
                       "10.77.0.1", [sys.executable, "-c", DEVFS_PROBE], env=env)
    lines = dict(l.split(" ", 1) for l in out2.splitlines() if " " in l)
    vt.check(rc == 0, "devfs stale: the probe exits %s:\n%s" % (rc, out2))
    vt.check(lines.get("class") == "srnic0",
             "devfs stale: the dead maker's old0 gone, srnic0 alone (%s)" % lines.get("class"))
    vt.check(lines.get("root") == stale and not os.path.exists(stale),
             "devfs stale: the adopted %r removed at exit" % stale)
    # the likeliest stale root: `srnic run`'s own name for it, left by a
    # killed process whose pid this one now has (the maker recorded is this
    # very pid; it is not this process's own root for all that)
    own = os.path.join(vt.TMP, "devfs-ownpid")
    os.makedirs(os.path.join(own, "sys/class/infiniband/old0"), exist_ok=True)
    os.chmod(own, 0o755)
    env["SRNIC_DEVFS"] = own
    shell = "echo $$ > %s/owner && exec \"$@\"" % own
    rc, out3 = run_one("devfs-ownpid", "net_memif0,role=server,socket=" + sock + "3",
                       "10.77.0.1", [sys.executable, "-c", DEVFS_PROBE], env=env,
                       wrap=["sh", "-c", shell, "sh"])
    lines = dict(l.split(" ", 1) for l in out3.splitlines() if " " in l)
    vt.check(rc == 0, "devfs own pid: the probe exits %s:\n%s" % (rc, out3))
    vt.check(lines.get("class") == "srnic0",
             "devfs own pid: the old0 of the pid's last holder gone, srnic0 alone (%s)" %
             lines.get("class"))
    vt.check(lines.get("root") == own and not os.path.exists(own),
             "devfs own pid: the adopted %r removed at exit" % own)
    out += out2 + out3
    if vt.failures:
        print(out)


def case_ucx_info():
    need_ucx()
    sock = os.path.join(vt.TMP, "ucx_info.sock")
    rc, out = run_one("ucx_info", "net_memif0,role=server,socket=" + sock, "10.77.0.1",
                      ["ucx_info", "-d"])
    vt.check(rc == 0, "ucx_info -d exits %s" % rc)
    vt.check("# Memory domain: srnic0" in out, "ucx_info -d: memory domain srnic0")
    for tl in ("rc_verbs", "ud_verbs"):
        vt.check(("Transport: %s\n#         Device: srnic0:1" % tl) in out,
                 "ucx_info -d: %s on srnic0:1" % tl)
    if vt.failures:
        print(out)


def need_ucx():
    for tool in ("ucx_info", "ucx_perftest"):
        if shutil.which(tool) is None:
            print("skip: %s not installed (apt-get install ucx-utils; usertools/srnic setup does)"
                  % tool)
            sys.exit(vt.SKIP)


def ucx_pair(name, tls, args, uct=False):
    """ucx_perftest's server and client over srnic0, UCX_TLS=tls (uct: the
    transport layer's tests, on that transport and device by name)."""
    os.environ.update({"UCX_TLS": tls, "UCX_NET_DEVICES": "srnic0:1",
                       "UCX_UD_TIMEOUT": "60s"})
    port = vt.free_tcp_port()
    both = ["ucx_perftest", "-p", str(port)] + (["-d", "srnic0:1", "-x", tls] if uct else [])
    p = vt.memif_pair(name, both, both + args, port)
    p.ok()
    # the client reports; the server only serves
    vt.check("Final:" in p.out_c, "%s: the client's Final line" % name)


def case_ucx_tag():
    need_ucx()
    # ud_verbs alone: every packet is UD (its receive CQE's sl, srnic.h)
    for tls in ("ud_verbs", "rc_verbs,ud_verbs"):
        for test in ("tag_lat", "tag_bw"):
            ucx_pair("%s-%s" % (tls.split(",")[0], test), tls, ["-t", test, "-n", "1000"])


# UCP's one-sided, atomic, stream and active-message tests over rc_verbs
# (ud_verbs its wireup), and UCT's zero-copy put and get of 64 KiB
UCP_OPS = ("ucp_put_bw", "ucp_get", "ucp_add", "ucp_fadd", "ucp_swap", "ucp_cswap",
           "stream_bw", "stream_lat", "ucp_am_lat", "ucp_am_bw")


def case_ucx_ops():
    need_ucx()
    for test in UCP_OPS:
        ucx_pair(test, "rc_verbs,ud_verbs", ["-t", test, "-n", "500"])
    for test in ("put_bw", "get"):
        ucx_pair("uct-%s-64k-zcopy" % test, "rc_verbs",
                 ["-t", test, "-s", "65536", "-D", "zcopy", "-n", "500"], uct=True)


CASES = {
    "devfs": case_devfs,
    "ucx_info": case_ucx_info,
    "ucx_tag": case_ucx_tag,
    "ucx_ops": case_ucx_ops,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True, help="the folder with srnic's libibverbs.so.1")
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    vt.LIB = os.path.abspath(a.lib)
    vt.run_case("srnic-ucx-", CASES[a.case])


if __name__ == "__main__":
    main()
