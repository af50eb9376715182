#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The issue-5 benchmark set on the embedded pair (2 lcores: requester on the
# first, responder on the second; hugepages when reserved), one JSON line per
# figure, then a summary table. Figures and ratios in doc/performance.md.
#   test/bench/perf-targets.sh [EXTRA_EAL_ARGS...]
set -euo pipefail
cd "$(dirname "$0")/../.."
perf=build/app/srnic-perf/srnic-perf
[ -x "$perf" ] || { echo "build first: usertools/srnic build" >&2; exit 1; }
eal=(-l 0,1 --no-pci --file-prefix srnic-targets --log-level=lib.eal:error "$@")
out=$(mktemp)
run() { "$perf" "${eal[@]}" -- --quiet --json "$@" | grep '^{' | tee -a "$out"; }

run --op read --size 64K --qps 1 --depth 16 --iters 100000 --floors
run --op read --size 64 --qps 8 --depth 16 --iters 4000000 --floors
run --op read --size 64 --lat --iters 200000
for op in write send; do
	run --op $op --size 64K --qps 1 --depth 16 --iters 100000 --floors
	run --op $op --size 64 --qps 8 --depth 16 --iters 4000000 --floors
	run --op $op --size 64 --lat --iters 200000
done
for q in 1 8 64 1024; do
	run --op read --size 64 --qps $q --depth 16 --iters 2000000
done
/usr/bin/python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'op':6} {'size':>6} {'qps':>5} {'depth':>5} {'Gb/s':>8} {'M/s':>7} {'p50 us':>8} {'p99 us':>8} "
      f"{'floor':>8} {'ratio':>6} {'B/QP':>7} {'busy A/B %':>11}")
for r in rows:
    floor, ratio = "", ""
    if "floor_gbps" in r:
        big = r["size"] >= 4096
        floor = f"{r['floor_gbps']:.1f}G" if big else f"{r['floor_mpps']:.2f}M"
        ratio = f"{r['ratio_gbps']:.3f}" if big else f"{r['ratio_mpps']:.3f}"
    print(f"{r['op']:6} {r['size']:>6} {r['qps']:>5} {r['depth']:>5} {r['gbps']:>8.2f} {r['mops']:>7.3f} "
          f"{r['lat_us']['p50']:>8.2f} {r['lat_us']['p99']:>8.2f} {floor:>8} {ratio:>6} {r['qp_mem_bytes']:>7} "
          f"{'%.0f/%.0f' % (r['busy_pct']['req'], r['busy_pct']['resp']) if 'busy_pct' in r else '':>11}")
PY
rm -f "$out"
