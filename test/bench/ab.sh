#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A/B benchmark: srnic-perf of two commits (or two built trees)
# on the same figures, run alternately, so that a change to the hot path
# shows its cost before it lands. doc/performance.md has the commands and
# results.
#   test/bench/ab.sh [--pairs N] [--quick] OLD NEW [EXTRA_EAL_ARGS...]
# OLD and NEW: commits (built as trees.sh says: a git worktree each under
# $AB_DIR, release build) or build directories holding
# app/srnic-perf/srnic-perf. Each pair runs every figure once per side, the
# two back to back, old first in odd pairs and new first in even ones (a
# host that slows down during a pair slows both alike). Per figure the table
# gives both medians, the median of the pairs' new/old ratios (the verdict:
# for rates above 1 is faster, for latency below 1 is faster) and every
# pair's ratio. The floor rows are each run's figure over the floor measured
# in the same process (srnic-perf --floors, as perf-targets.sh).
# --quick: a tenth of the iterations, to see that the script works.
# Raw JSON lines (side, pair, figure, srnic-perf's line): $AB_DIR/ab-*.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/trees.sh

PAIRS_DEFAULT=7
# A run that takes longer than this is killed and counted as failed (the
# longest figure takes a few seconds on a quiet host).
RUN_GUARD_S=300
QUICK_DIV=10

pairs=$PAIRS_DEFAULT div=1
while [ $# -gt 0 ]; do
	case "$1" in
	--pairs)
		pairs=$2
		[[ "$pairs" =~ ^[1-9][0-9]*$ ]] || { echo "--pairs wants a positive count" >&2; exit 2; }
		shift 2 ;;
	--quick) div=$QUICK_DIV; shift ;;
	-*) echo "usage: $0 [--pairs N] [--quick] OLD NEW [EXTRA_EAL_ARGS...]" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "usage: $0 [--pairs N] [--quick] OLD NEW [EXTRA_EAL_ARGS...]" >&2; exit 2; }
old=$(perf_binary "$1")
new=$(perf_binary "$2")
names=("$1" "$2")
shift 2
eal=(-l "0,1" --no-pci --file-prefix srnic-ab-$$ --log-level=lib.eal:error --no-telemetry "$@")

# The issue's figures: name, then srnic-perf's options (iterations last, so
# --quick can divide them). perf-targets.sh runs the same commands.
figures=(
	"read64k|--op read --size 64K --qps 1 --depth 16 --floors --iters 100000"
	"read64x8|--op read --size 64 --qps 8 --depth 16 --floors --iters 4000000"
	"readlat|--op read --size 64 --lat --iters 200000"
)

out=$AB_DIR/ab-$(date -u +%Y%m%dT%H%M%S).jsonl
: >"$out"
err=$(mktemp)
trap 'rm -f "$err"' EXIT
echo "old: ${names[0]} ($old)"
echo "new: ${names[1]} ($new)"
echo "$pairs pairs, raw lines in $out"

run() { # side pair figure binary args...
	local side=$1 pair=$2 fig=$3 bin=$4 line
	shift 4
	line=$(timeout "$RUN_GUARD_S" "$bin" "${eal[@]}" -- --quiet --json "$@" 2>"$err" |
		grep -m 1 '^{"op"') || line=null
	echo "{\"side\":\"$side\",\"pair\":$pair,\"figure\":\"$fig\",\"r\":$line}" >>"$out"
	if [ "$line" = null ]; then
		echo "  pair $pair: $fig failed on the $side side (exit or ${RUN_GUARD_S} s guard):" >&2
		tail -n 3 "$err" | sed 's/^/    /' >&2
	fi
}

for ((p = 1; p <= pairs; p++)); do
	echo "--- pair $p of $pairs ($(date -u +%H:%M:%S) UTC)"
	for f in "${figures[@]}"; do
		fig=${f%%|*}
		read -r -a args <<<"${f#*|}"
		iters=${args[-1]}
		args[-1]=$((iters / div))
		if ((p % 2)); then
			run old "$p" "$fig" "$old" "${args[@]}"
			run new "$p" "$fig" "$new" "${args[@]}"
		else
			run new "$p" "$fig" "$new" "${args[@]}"
			run old "$p" "$fig" "$old" "${args[@]}"
		fi
	done
done

/usr/bin/python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = statistics.median
# figure rows: (label, figure, value of a run, unit, higher is better)
ROWS = [
    ("READ 64 KiB, 1 QP x 16", "read64k", lambda r: r["gbps"], "Gb/s", True),
    ("  / CRC+memcpy floor", "read64k", lambda r: r.get("ratio_gbps"), "", True),
    ("READ 64 B, 8 QPs x 16", "read64x8", lambda r: r["mops"], "M/s", True),
    ("  / two-lcore floor", "read64x8", lambda r: r.get("ratio_xc_mpps"), "", True),
    ("READ 64 B latency p50", "readlat", lambda r: r["lat_us"]["p50"], "us", False),
]
by = {}
for x in rows:
    if x["r"] is not None:
        by[(x["figure"], x["pair"], x["side"])] = x["r"]
pairs = sorted({x["pair"] for x in rows})
print(f"\n{'figure':24} {'unit':4} {'old':>9} {'new':>9} {'new/old':>8} {'pairs':>5}  verdict  pairs' ratios")
for label, fig, val, unit, up in ROWS:
    olds, news, ratios = [], [], []
    for p in pairs:
        a, b = by.get((fig, p, "old")), by.get((fig, p, "new"))
        if a is None or b is None or val(a) is None or val(b) is None or val(a) == 0:
            continue
        olds.append(val(a))
        news.append(val(b))
        ratios.append(val(b) / val(a))
    if not ratios:
        print(f"{label:24} {unit:4} no complete pair")
        continue
    r = med(ratios)
    verdict = "faster" if (r > 1) == up and r != 1 else "slower" if r != 1 else "same"
    print(f"{label:24} {unit:4} {med(olds):9.3f} {med(news):9.3f} {r:8.3f} {len(ratios):5}  "
          f"{verdict:7}  " + " ".join(f"{x:.3f}" for x in ratios))
print("new/old: the median of the pairs' ratios (latency: below 1 is faster)")
PY
