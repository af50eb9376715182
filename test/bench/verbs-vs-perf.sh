#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's perftest over srnic's libibverbs.so.1 (usertools/srnic
# run) against srnic-perf's own two processes, both over net_memif on this
# machine, in the same run. Each run does every case twice, once each way,
# the two back to back (the order swaps every run, so a host that slows down
# during a run slows both sides alike); the table gives the medians of the
# runs and the issue's three ratios (the median of each run's ratio), each
# ok or MISS. doc/performance.md has
# the figures.
#   test/bench/verbs-vs-perf.sh [--runs N] [--seconds S] [--lat-iters N]
# Matching settings: perftest's defaults (1 QP, tx depth 128, a CQE every
# 100 WRs: --cq-mod 100; ib_read_bw's 16 outstanding READs are the device's
# max_qp_rd_atom, srnic-perf's too) are srnic-perf's --qps 1 --depth 128
# --unsignaled 100; both use a path MTU of 4096 (the drop-in with --mtu 9000,
# srnic-perf's default) and the same memif buffers. The bandwidth cases run
# for S seconds each (-D / --duration), the latency cases N round trips
# (-n / --iters). ib_read_lat -e (completion events) is reported beside the
# polling figure; srnic-perf has no such mode.
set -euo pipefail
cd "$(dirname "$0")/../.."
perf=build/app/srnic-perf/srnic-perf
lib=build/drivers/verbs/libibverbs.so.1
[ -x "$perf" ] && [ -e "$lib" ] || { echo "build first: usertools/srnic build" >&2; exit 1; }
runs=5 secs=4 lat_iters=20000
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs=$2 ;;
	--seconds) secs=$2 ;;
	--lat-iters) lat_iters=$2 ;;
	*) echo "usage: $0 [--runs N] [--seconds S] [--lat-iters N]" >&2; exit 2 ;;
	esac
	[[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$1 wants a positive count" >&2; exit 2; }
	shift 2
done

# Every process gets this long before it is killed (a hung peer must not
# hang the benchmark): the case's own time and the set-up's.
GUARD_S=$((secs + 60))
# How long a server may take to listen on its TCP port.
LISTEN_S=30
# perftest's defaults, spelt out for srnic-perf
PT_DEPTH=128
PT_CQ_MOD=100
MEMIF_ARGS=bsize=10240
# srnic-perf's one lcore may run on either CPU, as the drop-in's threads do
# (the library gives the program its own CPU set back after rte_eal_init()):
# pinned, a process waits whenever another job takes its CPU, while the
# other CPU may be idle. PERF_PIN=1 pins both kinds alike: every server on
# CPU 1, every client on CPU 0 (srnic-perf with -l, the drop-in's programs
# with taskset, whose CPU set the library keeps, its progress thread too).
if [ "${PERF_PIN:-0}" = 1 ]; then
	perf_srv_lcore=1 perf_cl_lcore=0
	pin_srv=(taskset -c 1) pin_cl=(taskset -c 0)
else
	perf_srv_lcore="0@(0-1)" perf_cl_lcore="0@(0-1)"
	pin_srv=() pin_cl=()
fi
EAL_COMMON=(--no-huge -m 512 --no-pci --log-level=lib.eal:error --no-telemetry)

tmp=$(mktemp -d /tmp/verbs-vs-perf.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
res=$tmp/results
port=$((20000 + $$ % 10000))
n=0

. test/bench/pair.sh

next() {
	n=$((n + 1))
	port=$((port + 1))
	sock=$tmp/m$n.sock
}

# verbs CASE TOOL ARGS...: perftest over the drop-in; records CASE's figure
# (bw cases: M msg/s from the MsgRate column, lat: t_typical in us)
verbs() {
	local c=$1 tool=$2 figure
	shift 2
	next
	local run=(usertools/srnic run --mtu 9000 --port)
	pair "v$n" "${pin_srv[@]}" "${run[@]}" "net_memif0,role=server,socket=$sock,$MEMIF_ARGS" \
		--ip 10.77.0.1 -- "$tool" -p $port -F "$@" :: \
		"${pin_cl[@]}" "${run[@]}" "net_memif0,role=client,socket=$sock,$MEMIF_ARGS" --ip 10.77.0.2 \
		-- "$tool" -p $port -F "$@" 127.0.0.1
	# the row under "#bytes": bytes iters peak avg msgrate (bw) or bytes
	# iters min max typical ... (lat): the 5th field either way
	figure=$(awk '/#bytes/ { on = 1; next } on && $1 ~ /^[0-9]+$/ { print $5; exit }' "$tmp/v$n.c")
	[ -n "$figure" ] || { echo "$c: no result row from $tool" >&2; cat "$tmp/v$n.c" >&2; exit 1; }
	echo "$r $c verbs $figure" | tee -a "$res"
}

# perf CASE ARGS...: srnic-perf --server / --client; records CASE's figure
# (mops or the p50 latency, as verbs() records)
perf() {
	local c=$1 figure
	shift
	next
	pair "p$n" "$perf" --lcores "$perf_srv_lcore" --file-prefix "vvp-s-$$" "${EAL_COMMON[@]}" \
		"--vdev=net_memif0,role=server,socket=$sock,$MEMIF_ARGS" -- --server --tcp-port $port :: \
		"$perf" --lcores "$perf_cl_lcore" --file-prefix "vvp-c-$$" "${EAL_COMMON[@]}" \
		"--vdev=net_memif0,role=client,socket=$sock,$MEMIF_ARGS" -- --client 127.0.0.1 \
		--tcp-port $port --quiet --json "$@"
	figure=$(/usr/bin/python3 -c '
import json, sys
for l in open(sys.argv[1]):
    if l.startswith("{\"op\""):
        r = json.loads(l)
        # mops has 4 decimals: 64 KiB rates from the Gb/s figure
        print(r["lat_us"]["p50"] if sys.argv[2] == "lat" else
              r["gbps"] * 1e3 / (r["size"] * 8) if r["size"] >= 4096 else r["mops"])
        break' "$tmp/p$n.c" "${c##*_}")
	[ -n "$figure" ] || { echo "$c: no JSON row from srnic-perf" >&2; cat "$tmp/p$n.c" >&2; exit 1; }
	echo "$r $c perf $figure" | tee -a "$res"
}

both() { # CASE "verbs args" "perf args": the two, in this run's order
	if [ $((r % 2)) -eq 1 ]; then
		verbs "$1" $2
		perf "$1" $3
	else
		perf "$1" $3
		verbs "$1" $2
	fi
}

bw_perf="--qps 1 --depth $PT_DEPTH --unsignaled $PT_CQ_MOD --duration $secs"
echo "# uptime before: $(uptime)"
for ((r = 1; r <= runs; r++)); do
	echo "--- run $r of $runs ($(date -u +%H:%M:%S) UTC)"
	both write64_bw "ib_write_bw -s 64 -D $secs" "--op write --size 64 $bw_perf"
	both read64k_bw "ib_read_bw -s 65536 -D $secs" "--op read --size 65536 $bw_perf"
	both read64_lat "ib_read_lat -s 64 -n $lat_iters" "--op read --size 64 --lat --iters $lat_iters"
	verbs read64_lat_e ib_read_lat -s 64 -n $lat_iters -e
done
echo "# uptime after: $(uptime)"

/usr/bin/python3 - "$res" <<'PY'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    r, case, side, v = line.split()
    vals.setdefault((case, side), []).append(float(v))
med = lambda case, side: statistics.median(vals[(case, side)])
print(f"{'case':16} {'unit':7} {'drop-in':>9} {'srnic-perf':>10}  runs (drop-in / srnic-perf)")
units = {"write64_bw": "Mmsg/s", "read64k_bw": "Mmsg/s", "read64_lat": "us p50", "read64_lat_e": "us p50"}
for case in ("write64_bw", "read64k_bw", "read64_lat", "read64_lat_e"):
    v = vals[(case, "verbs")]
    p = vals.get((case, "perf"), [])
    pm = "%10.4f" % statistics.median(p) if p else "%10s" % "-"
    print("%-16s %-7s %9.4f %s  %s / %s" % (case, units[case], statistics.median(v), pm,
          " ".join("%g" % x for x in v), " ".join("%g" % x for x in p) or "-"))
# a 64 KiB message rate ratio is the bandwidth ratio
targets = (("ib_write_bw -s 64 rate / srnic-perf's", "write64_bw", ">=", 0.9),
           ("ib_read_bw -s 65536 bw / srnic-perf's", "read64k_bw", ">=", 0.95),
           ("ib_read_lat -s 64 p50 / srnic-perf's", "read64_lat", "<=", 1.1))
# judged on the median of each run's ratio (its two figures measured back to
# back); the ratio of the medians beside it
runs = {}
for line in open(sys.argv[1]):
    r, case, side, v = line.split()
    runs.setdefault((case, r), {})[side] = float(v)
for what, case, cmp, want in targets:
    per = [x["verbs"] / x["perf"] for (c, r), x in sorted(runs.items()) if c == case and len(x) == 2]
    ratio = statistics.median(per)
    good = ratio >= want if cmp == ">=" else ratio <= want
    print("%-40s %6.3f (target %s %g) %-4s  of medians %.3f; runs %s" %
          (what, ratio, cmp, want, "ok" if good else "MISS", med(case, "verbs") / med(case, "perf"),
           " ".join("%.3f" % x for x in per)))
PY
