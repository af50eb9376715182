#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The demo's benchmark table (usertools/srnic demo): srnic-perf's --json
result lines of one op/size in bandwidth mode (depth > 1) and latency mode
(depth 1) become one row each: bandwidth and message rate, latency median
and p99. Exit 1 when a run had errors or a mode is missing.

    demo-table.py FILE   (srnic-perf --json output, any number of runs)
"""
import json, sys

bw, lat = {}, {}
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    if "op" not in r:   # the run's closing {"counters":...} line
        continue
    (lat if r["depth"] == 1 else bw)[(r["op"], r["size"])] = r

def size(b):
    return f"{b // 1024} KiB" if b >= 1024 else f"{b} B"

print(f"  {'':6} {'size':>7}  {'bandwidth':>11} {'messages':>12}   "
      f"{'latency: median':>15} {'p99':>9}")
errors = 0
for key in sorted(bw.keys() | lat.keys(), key=lambda k: (k[0] != "read", k[1])):
    b, l = bw.get(key), lat.get(key)
    cols = f"{b['gbps']:6.2f} Gb/s {b['mops']:6.3f} M/s" if b else f"{'-':>11} {'-':>12}"
    lcol = (f"{l['lat_us']['p50']:12.2f} us {l['lat_us']['p99']:6.2f} us"
            if l else f"{'-':>15} {'-':>9}")
    print(f"  {key[0].upper():6} {size(key[1]):>7}  {cols}   {lcol}")
    errors += sum(r["errors"] + r["verify_errors"] for r in (b, l) if r)
if errors:
    print(f"  ERRORS: {errors} failed work requests or data mismatches")
sys.exit(1 if errors or not bw or not lat else 0)
