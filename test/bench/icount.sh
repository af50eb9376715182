#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per operation, counted by callgrind, which does
# not move with the host's load: srnic-perf with both engines on one lcore
# (-l 0: the requester's pass req_step() and the responder's
# perf_resp_poll_once() take turns in one thread, so the count is the same
# from run to run) doing a fixed number of READs; only those two functions
# are counted (set-up, floors and the report are not), so requester (the
# benchmark's post and poll, the requester engine) and responder (the
# responder engine) together are what one READ costs.
#   test/bench/icount.sh [--quick] REF...
#   test/bench/icount.sh --idle REF...     instructions per idle engine poll
# REF: a commit or a build directory, as for ab.sh (trees.sh builds commits
# in worktrees under $AB_DIR, here with line information: build-g). One
# line per REF: instructions per 64 B READ (8 QPs x 16; requester,
# responder, both, the timer wheel's share of both, and net: both without
# it) and net per 64 KiB READ (1 QP x 16). doc/performance.md has results.
set -euo pipefail
cd "$(dirname "$0")/../.."
. test/bench/trees.sh
# Commits are built with line information (the same code: -g changes no
# instruction), so that the timer wheel's lines can be told apart (below).
AB_BUILD=build-g
AB_MESON_OPTS+=(-Ddebug=true)

# READs per figure (what a run pays once, first touches and the last pass,
# spread over them); --quick for a look in a few seconds.
ITERS_64=20000
ITERS_64K=2000
# READs of the idle poll's run (--idle): each one a time slice or two of
# the responder's thread spent polling with nothing to do
IDLE_ITERS=200
QUICK_DIV=10
# runs of one figure before giving up on a run without resends (below)
TRIES=${ICOUNT_TRIES:-4}
# ICOUNT_KEEP=DIR keeps each figure's counted run there (REF-SIZE.out),
# for callgrind_annotate's per-function view
KEEP=${ICOUNT_KEEP:-}
# the runs' niceness (ICOUNT_NICE=-10 on a loaded host: fewer resends)
NICE=${ICOUNT_NICE:-0}
EAL=(-l 0 --no-pci --no-huge -m 1024 --file-prefix srnic-icount-$$ --log-level=lib.eal:error
	--no-telemetry)

div=1 idle=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) div=$QUICK_DIV; shift ;;
	--idle) idle=1; shift ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || { echo "usage: $0 [--quick] [--idle] REF..." >&2; exit 2; }
[ -z "$KEEP" ] || mkdir -p "$KEEP"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wheel_cost CALLGRIND_FILE BINARY: the instructions spent on the lines of
# the timer wheel's walk, inlined into srnic_engine_poll() (tw_advance() in
# lib/engine/engine.c, eng_timer_advance() in lib/engine/timer.c since the
# engine's split),
# from the line information of a build-g tree: the walk steps once per
# 12.6 us tick passed, and under callgrind a READ takes ~150 us, so it pays
# ~100 instructions per READ that follow the host's speed, not the code.
# Prints "-" without line information (a build directory given as REF).
wheel_cost() {
	local src engine range
	src=$(cd "$(dirname "$2")/../../.." && pwd)
	engine=$src/lib/engine/timer.c
	[ -f "$engine" ] || engine=$src/lib/engine/engine.c
	range=$(awk '/^(tw_advance|eng_timer_advance)\(/ { s = NR } s && /^}/ { print s, NR; exit }' \
		"$engine" 2>/dev/null)
	[ -n "$range" ] || { echo -; return 0; }
	# shellcheck disable=SC2086 # two numbers
	/usr/bin/python3 - "$1" "lib/engine/${engine##*/}" $range <<'PY'
import re, sys
# self cost of lines lo..hi of the file (inlined code included: fi=/fe=
# switch the file, the cost line after calls= is a call's, not self)
path, suffix, lo, hi = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
files, fl, fi, line, skip, cost, seen = {}, "", None, 0, False, 0, False
for l in open(path):
    m = re.match(r"(fl|fi|fe|fn|cfi|cfl|cfn|ob|cob)=\((\d+)\)(?: (.*))?$", l.rstrip("\n"))
    if m:
        kind, idn, name = m.groups()
        if kind in ("fl", "fi", "fe", "cfi", "cfl") and name:
            files[idn] = name
        if kind == "fl":
            fl, fi = files[idn], None
        elif kind in ("fi", "fe"):
            fi = files[idn]
        elif kind == "fn":
            fi = None
        continue
    if l.startswith("calls="):
        skip = True
        continue
    m = re.match(r"([+-]\d+|\*|\d+)\s+(\d+)", l)
    if not m:
        continue
    p = m.group(1)
    line = line + int(p) if p[0] in "+-" else line if p == "*" else int(p)
    if skip:
        skip = False
        continue
    if (fi or fl).endswith(suffix):
        seen = True
        if lo <= line <= hi:
            cost += int(m.group(2))
print(cost if seen else "-")
PY
}

# calls_into CALLGRIND_OUT NAME...: the calls into the functions named
calls_into() {
	/usr/bin/python3 - "$@" <<'PY'
import re, sys
# calls into the functions named (one name, before or after a rename),
# from the callgrind file (names compressed:
# "(id) name" the first time, "(id)" after)
name, want, total = {}, False, 0
for line in open(sys.argv[1]):
    m = re.match(r"(c?fn)=\((\d+)\)(?: (.*))?", line)
    if m:
        if m.group(3):
            name[m.group(2)] = m.group(3)
        want = m.group(1) == "cfn" and name.get(m.group(2)) in sys.argv[2:]
    elif want and line.startswith("calls="):
        total += int(line[6:].split()[0])
        want = False
print(total)
PY
}

# count BINARY ITERS PKTS ARGS...: prints "requester responder reads": the
# inclusive cost of each toggled function and the READs done (packets
# built, eng_pkt_new() calls (srnic_pkt_new() before the engine's split),
# over PKTS per READ; srnic-perf does a few
# more than ITERS). Under callgrind a round of the 128 READs in flight
# takes milliseconds, so a host that takes the CPU away for longer than the
# ACK timeout (67 ms, srnic-perf's default) makes the requester resend, and
# resent packets cost instructions a clean run does not pay: the figure is
# run until two runs built the same number of packets (at most TRIES), and
# the one that built the fewest counts, its instructions over its packets'
# worth of READs. One more thing depends on time: the timer wheel steps
# once per 12.6 us tick passed (tw_advance()), and under callgrind a READ
# takes ~150 us, so ~12 steps (~100 instructions) per READ that move with
# the host's speed (doc/performance.md: runs of one tree agree
# within ~10 on a steady host, 3,776 and 3,907 across a change of load).
count() {
	local bin=$1 iters=$2 pkts=$3 out=$tmp/cg.out try built best=
	shift 3
	for ((try = 1; try <= TRIES; try++)); do
		rm -f "$out"
		nice -n "$NICE" valgrind --tool=callgrind --callgrind-out-file="$out" \
			--toggle-collect='req_step*' --toggle-collect='perf_resp_poll_once*' \
			"$bin" "${EAL[@]}" -- --quiet "$@" --iters "$iters" >"$tmp/run.log" 2>&1 ||
			{ echo "callgrind run failed:" >&2; tail -n 20 "$tmp/run.log" >&2; return 1; }
		# packets built: eng_pkt_new() calls (srnic_pkt_new() before the
		# engine's split); where LTO inlined it (a thin wrapper since the
		# per-GID templates), srnic_pkt_close() calls, one per packet built
		# too (the two counts agree in e894916)
		built=$(calls_into "$out" eng_pkt_new srnic_pkt_new)
		[ "$built" -gt 0 ] || built=$(calls_into "$out" srnic_pkt_close)
		[ "$built" -gt 0 ] || { echo "no eng_pkt_new() nor srnic_pkt_close() calls counted" >&2; return 1; }
		if [ -z "$best" ] || [ "$built" -lt "$best" ]; then
			cp "$out" "$tmp/best.out"
		fi
		[ "$built" = "$best" ] && break
		[ -n "$best" ] && echo "  $*: $built packets against $best: resends, once more" >&2
		best=$((${best:-$built} < built ? ${best:-$built} : built))
	done
	[ "$built" = "$best" ] || echo "  $*: no two runs alike in $TRIES; the fewest packets count" >&2
	[ -z "$KEEP" ] || cp "$tmp/best.out" "$KEEP/${ref//\//_}-$4.out"
	wheel=$(wheel_cost "$tmp/best.out" "$bin")
	callgrind_annotate --inclusive=yes "$tmp/best.out" 2>/dev/null |
		awk -v reads=$((best / pkts)) -v wheel="$wheel" '
		/:req_step/ && !rq { gsub(",", "", $1); rq = $1 }
		/:perf_resp_poll_once/ && !rs { gsub(",", "", $1); rs = $1 }
		END { if (!rq || !rs) exit 1; print rq, rs, reads, wheel }' ||
		{ echo "no cost for req_step / perf_resp_poll_once (inlined?)" >&2; return 1; }
}

# idle_poll BINARY: prints "instructions polls wheel" of the responder's
# engine polls (srnic_engine_poll(), inclusive: the RX burst's ethdev and
# PMD included, srnic-perf's own loop around it not) in a READ 64 B latency
# run on two lcores (-l 0,1; --fair-sched: without it one thread kept the
# lock and the run failed): valgrind runs one thread at a time, a time slice
# each, so the responder's thread polls its engine thousands of times with
# nothing to do for each READ it answers (~1,000 instructions each, under 1
# per poll spread over the polls): their cost over their number is an idle
# poll's.
idle_poll() {
	local bin=$1 out=$tmp/idle.out
	rm -f "$out"
	nice -n "$NICE" valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file="$out" \
		--toggle-collect='resp_main*' "$bin" -l 0,1 "${EAL[@]:2}" -- --quiet \
		--op read --size 64 --lat --iters $((IDLE_ITERS / div)) >"$tmp/run.log" 2>&1 ||
		{ echo "callgrind run failed:" >&2; tail -n 20 "$tmp/run.log" >&2; return 1; }
	[ -z "$KEEP" ] || cp "$out" "$KEEP/${ref//\//_}-idle.out"
	callgrind_annotate --inclusive=yes "$out" 2>/dev/null |
		awk -v polls="$(calls_into "$out" perf_resp_poll_once)" -v wheel="$(wheel_cost "$out" "$bin")" '
		/:srnic_engine_poll/ && !c { gsub(",", "", $1); c = $1 }
		END { if (!c || !polls) exit 1; print c, polls, wheel }' ||
		{ echo "no cost for srnic_engine_poll" >&2; return 1; }
}

if [ $idle = 1 ]; then
	printf '%-14s %-36s %10s %8s %8s %8s\n' ref subject polls "ins/poll" "wheel" "net/poll"
	for ref in "$@"; do
		bin=$(perf_binary "$ref")
		subj=$(if [ -d "$ref" ]; then git -C "$ref" log -1 --format='%h %s'; else
			git log -1 --format=%s "$ref"; fi 2>/dev/null | cut -c1-36 || true)
		read -r c polls w < <(idle_poll "$bin") || { echo "$ref: no count" >&2; continue; }
		if [ "$w" = - ]; then net=-; else net=$(printf '%.1f' "$(echo "($c - $w) / $polls" | bc -l)"); fi
		printf '%-14s %-36s %10s %8.1f %8s %8s\n' "$ref" "${subj:0:36}" "$polls" \
			"$(echo "$c / $polls" | bc -l)" \
			"$([ "$w" = - ] && echo - || printf '%.1f' "$(echo "$w / $polls" | bc -l)")" "$net"
	done
	exit 0
fi

# both: requester + responder; wheel: the timer wheel's share of it; net:
# both without the wheel (the figure to compare; "-" when not known)
printf '%-14s %-36s %8s %8s %8s %6s %8s %10s\n' ref subject "req/64B" "resp/64B" "both/64B" \
	"wheel" "net/64B" "net/64KiB"
for ref in "$@"; do
	bin=$(perf_binary "$ref")
	# a build directory: the commit of the tree it is in, if any
	subj=$(if [ -d "$ref" ]; then git -C "$ref" log -1 --format='%h %s'; else
		git log -1 --format=%s "$ref"; fi 2>/dev/null | cut -c1-44 || true)
	n64=$((ITERS_64 / div)) n64k=$((ITERS_64K / div))
	# packets per READ: the request and its answers at path MTU 4096
	read -r rq rs r64 w64 < <(count "$bin" "$n64" 2 --op read --size 64 --qps 8 --depth 16)
	read -r bq bs r64k w64k < <(count "$bin" "$n64k" 17 --op read --size 64K --qps 1 --depth 16)
	if [ -z "${r64:-}" ] || [ -z "${r64k:-}" ]; then
		echo "$ref: no count" >&2
		continue
	fi
	if [ "$w64" = - ] || [ "$w64k" = - ]; then
		wheel=- net=- netk=-
	else
		wheel=$(printf '%.0f' "$(echo "$w64 / $r64" | bc -l)")
		net=$(printf '%.0f' "$(echo "($rq + $rs - $w64) / $r64" | bc -l)")
		netk=$(printf '%.0f' "$(echo "($bq + $bs - $w64k) / $r64k" | bc -l)")
	fi
	printf '%-14s %-36s %8.0f %8.0f %8.0f %6s %8s %10s\n' "$ref" "${subj:0:36}" \
		"$(echo "$rq / $r64" | bc -l)" "$(echo "$rs / $r64" | bc -l)" \
		"$(echo "($rq + $rs) / $r64" | bc -l)" "$wheel" "$net" "$netk"
done
