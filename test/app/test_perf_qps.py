#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Many QPs on one engine: srnic-perf with 16,384 RC QPs over a net_ring
pair, every QP with WRITEs outstanding at once, retry count 7 and a 1.07 s ACK
timeout (-u 18: the other srnic-perf tests' on a loaded 2-core host under ASan;
the collapse happens at it too). Each poll used to walk every QP with work while
reading one 32-packet RX burst: the requester's RX ring filled with ACKs,
their timers expired, thousands of QPs went back N at once and some failed
RETRY_EXC_ERR. Every WRITE must complete, its bytes checked (--verify).
Prints 'N passed, N failed' and exits non-zero on any failure."""
import json
import os
import subprocess
import sys

PERF = sys.argv[1]
QPS, DEPTH, ITERS = 16384, 4, 4 * 16384 * 2

cmd = [PERF, "-l", "0,1", "--file-prefix", f"perf_qps_{os.getpid()}", "--no-pci", "--no-huge",
       "-m", "2048", "--log-level=lib.eal:error", "--", "--op", "write", "--size", "64",
       "--qps", str(QPS), "--depth", str(DEPTH), "--iters", str(ITERS), "-u", "18",
       "--retry_count", "7", "--verify", "--json", "--quiet"]
p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
res = [j for j in lines if "op" in j]
cnt = [j["counters"] for j in lines if "counters" in j]
r = res[0] if res else {}
req = cnt[0]["req"] if cnt else {}
print(f"result {r}\nrequester counters {req}")
checks = [
    ("srnic-perf exits 0", p.returncode == 0, f"exit {p.returncode}: {p.stderr[-2000:]}"),
    (f"{QPS} QPs x depth {DEPTH}: all {ITERS} WRITEs completed",
     r.get("qps") == QPS and r.get("msgs") == ITERS, f"{r.get('qps')} QPs, {r.get('msgs')} msgs"),
    ("no failed WR, no byte wrong", r.get("errors") == 0 and r.get("verify_errors") == 0,
     f"errors {r.get('errors')}, verify_errors {r.get('verify_errors')}"),
    ("one good CQE per WRITE, no QP in ERR",
     req.get("cqe") == ITERS and "cqe_err" not in req and "qp_to_err" not in req,
     f"cqe {req.get('cqe')}, cqe_err {req.get('cqe_err')}, qp_to_err {req.get('qp_to_err')}"),
]
for name, good, detail in checks:
    print(f"ok   {name}" if good else f"FAIL {name} {detail}")
failed = sum(not good for _, good, _ in checks)
print(f"{len(checks) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
