#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Debian's perftest over srnic's libibverbs.so.1 in its two modes on the same
# port type (net_memif between two sides on this machine), in the same run:
#   embedded: two processes, each with its own port (usertools/srnic run
#             --port net_memif0,...), its engine in the process;
#   attached: two srnicd joined by the same memif, one program attached to
#             each (usertools/srnic run with no --port), the engines in the
#             daemons (doc/srnicd.md).
# Each run does every case once each way, back to back (the order swaps every
# run, so a host that slows down during a run slows both alike). Then the
# loopback case: one srnicd on a net_ring0 port, ib_read_bw -s 65536 between
# two processes attached to it, against the run's embedded memif figure. Last,
# the daemon's idle CPU: its utime + stime (/proc/PID/stat) over S seconds
# with sessions attached holding QPs and nothing moving, then with none.
# Beside them, not one of the issue's cases: "one daemon" (column one), both
# programs attached to ONE srnicd on a net_ring0 port (one device: srnic's
# loopback, the requester's and the responder's work in its one engine, as
# the two embedded engines do theirs); with PERF_PIN=1 its engine on CPU 1,
# both programs on CPU 0: two busy threads, as embedded has, where the
# two-daemon layout has four on two CPUs (doc/performance.md, "Session
# 22"). Column ports: one srnicd serving two net_memif ports joined to
# each other (two devices, srnic0 and srnic1: doc/srnicd.md, "Several
# ports, one engine thread"), the server program on srnic0 and the client
# on srnic1, so every packet crosses memif as between two hosts; with
# PERF_PIN=1 the daemon's one engine thread on CPU 1, both programs on CPU
# 0 (the service given a core of its own). The
# table gives the medians and the issue's ratios (the median of each run's
# ratio), each ok or MISS, for the two-daemon layout and the two-port one.
# doc/performance.md has the figures.
#   test/bench/attached-vs-embedded.sh [--runs N] [--seconds S]
#       [--lat-iters N] [--idle-seconds S] [--build DIR] [--daemon BIN]
# --build: the build whose library and srnicd run (default build/, what
# usertools/srnic build makes; a release build for figures that mean
# anything); --daemon: another srnicd binary (a daemon change timed against
# its parent: a copy of each, one run of the script each, alternately). Settings as test/bench/verbs-vs-perf.sh: perftest's defaults,
# path MTU 4096 (--mtu 9000 on both modes), the same memif buffers.
# PERF_PIN=1: every server side on CPU 1 (the embedded server, srnicd A and
# the program attached to it), every client side on CPU 0.
# PERF_PIN=service: embedded as with 1; attached, the service's CPU apart
# from the programs' (as a host that gives srnicd its cores, doc/srnicd.md):
# both daemons' engines on CPU 1, both attached programs on CPU 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=5 secs=4 lat_iters=20000 idle_s=10 bld=build daemon=
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) runs=$2 ;;
	--seconds) secs=$2 ;;
	--lat-iters) lat_iters=$2 ;;
	--idle-seconds) idle_s=$2 ;;
	--build) bld=$(realpath -- "$2"); shift 2; continue ;;
	--daemon) daemon=$2; shift 2; continue ;;
	*) echo "usage: $0 [--runs N] [--seconds S] [--lat-iters N] [--idle-seconds S] [--build DIR]" \
		"[--daemon BIN]" >&2
	   exit 2 ;;
	esac
	[[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$1 wants a positive count" >&2; exit 2; }
	shift 2
done
lib=$bld/drivers/verbs
daemon=${daemon:-$bld/app/srnicd/srnicd}
[ -e "$lib/libibverbs.so.1" ] && [ -x "$daemon" ] ||
	{ echo "no $lib/libibverbs.so.1 or $daemon: build first (usertools/srnic build)" >&2; exit 1; }
# usertools/srnic run takes these as they are (no rebuild of build/)
export SRNIC_VERBS_LIB=$(realpath -- "$lib") SRNIC_RDMACM_LIB=$(realpath -- "$bld/drivers/rdmacm")
unset SRNIC_PORT SRNIC_IP SRNIC_IP6 SRNIC_CONFIG SRNIC_DAEMON_SOCKET

# Every program gets this long before it is killed (a hung peer must not
# hang the benchmark): the case's own time and the set-up's.
GUARD_S=$((secs + 60))
# How long a server, a daemon or a session's end may take.
WAIT_S=30
LISTEN_S=$WAIT_S
MEMIF_ARGS=bsize=10240
# what the issue asks of attached against embedded
T_WRITE=0.8 T_READ=0.9 T_LAT=1.3 T_IDLE_PCT=2
case "${PERF_PIN:-0}" in
1|service)
	pin_srv=(taskset -c 1) pin_cl=(taskset -c 0)
	lc_srv=(--lcores 1) lc_cl=(--lcores 0) ;;
0)	pin_srv=() pin_cl=() lc_srv=() lc_cl=() ;;
*)	echo "PERF_PIN=${PERF_PIN}: 0, 1 or service" >&2; exit 2 ;;
esac
# where daemon B (the client side's) runs, and the attached server program
if [ "${PERF_PIN:-0}" = service ]; then
	pin_db=("${pin_srv[@]}") lc_db=("${lc_srv[@]}") pin_att_def=("${pin_cl[@]}")
else
	pin_db=("${pin_cl[@]}") lc_db=("${lc_cl[@]}") pin_att_def=("${pin_srv[@]}")
fi
pin_att_srv=("${pin_att_def[@]}")

tmp=$(mktemp -d /tmp/attached-vs-embedded.XXXXXX)
res=$tmp/results
port=$((20000 + $$ % 10000))
n=0
dpids=()
cleanup() {
	local p
	for p in "${dpids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${dpids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

. test/bench/pair.sh

# until_ok WHAT CMD...: CMD again until it succeeds, at most WAIT_S
until_ok() {
	local what=$1 deadline=$((SECONDS + WAIT_S))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || { echo "waited ${WAIT_S} s for $what" >&2; exit 1; }
		sleep 0.05
	done
}

dstatus() { "$daemon" --status --socket "$1" 2>/dev/null; }
# the daemon on socket $1 serves, its link is up
d_up() { dstatus "$1" | grep -q "link ACTIVE"; }
# the daemon on socket $1 has $2 sessions besides the asking one
d_sessions() { dstatus "$1" | grep -q "^sessions $(($2 + 1)) "; }

# start_daemon NAME SOCKET PIN... -- OPTIONS...: srnicd in the background
start_daemon() {
	local name=$1 sock=$2 pin=()
	shift 2
	while [ "$1" != "--" ]; do pin+=("$1"); shift; done
	shift
	"${pin[@]}" "$daemon" --socket "$sock" --mtu 9000 "$@" >"$tmp/$name.log" 2>&1 &
	dpids+=($!)
	eval "pid_$name=$!"
}

# record CASE MODE NAME: perftest's figure from $tmp/NAME.c (bw cases: M
# msg/s from the MsgRate column, lat: t_typical in us; the 5th field of the
# row under "#bytes" either way)
record() {
	local figure
	figure=$(awk '/#bytes/ { on = 1; next } on && $1 ~ /^[0-9]+$/ { print $5; exit }' "$tmp/$3.c")
	[ -n "$figure" ] || { echo "$1 $2: no result row" >&2; cat "$tmp/$3.c" >&2; exit 1; }
	echo "$r $1 $2 $figure" | tee -a "$res"
}

run=(usertools/srnic run)

# emb CASE TOOL ARGS...: two processes, each its own memif port
emb() {
	local c=$1 tool=$2 sock
	shift 2
	n=$((n + 1)) port=$((port + 1)) sock=$tmp/m$n.sock
	pair "e$n" "${pin_srv[@]}" "${run[@]}" --mtu 9000 \
		--port "net_memif0,role=server,socket=$sock,$MEMIF_ARGS" --ip 10.77.0.1 -- \
		"$tool" -p $port -F "$@" :: \
		"${pin_cl[@]}" "${run[@]}" --mtu 9000 \
		--port "net_memif0,role=client,socket=$sock,$MEMIF_ARGS" --ip 10.77.0.2 -- \
		"$tool" -p $port -F "$@" 127.0.0.1
	record "$c" emb "e$n"
}

# att MODE SERVER_SOCK CLIENT_SOCK CASE TOOL ARGS...: one program attached
# to each daemon (the same daemon for loopback)
att() {
	local mode=$1 ssock=$2 csock=$3 c=$4 tool=$5
	shift 5
	n=$((n + 1)) port=$((port + 1))
	# each program's session over before the next case's: the daemon's
	# engine serves no leftover
	until_ok "the sessions' end" d_sessions "$ssock" 0
	until_ok "the sessions' end" d_sessions "$csock" 0
	pair "a$n" env SRNIC_DAEMON_SOCKET="$ssock" "${pin_att_srv[@]}" "${run[@]}" -- \
		"$tool" -p $port -F "$@" :: \
		env SRNIC_DAEMON_SOCKET="$csock" "${pin_cl[@]}" "${run[@]}" -- \
		"$tool" -p $port -F "$@" 127.0.0.1
	record "$c" "$mode" "a$n"
}

# one CASE TOOL ARGS...: both programs attached to daemon O, on the client
# side's CPU (its engine on the server side's)
one() {
	pin_att_srv=("${pin_cl[@]}")
	att one "$so" "$so" "$@"
	pin_att_srv=("${pin_att_def[@]}")
}

# ports CASE TOOL ARGS...: the two-port daemon P, the server program on its
# srnic0 and the client on its srnic1 (the two memif ports joined to each
# other), both programs on the client side's CPU, P's engine on the server
# side's
ports() {
	local c=$1 tool=$2
	shift 2
	n=$((n + 1)) port=$((port + 1))
	until_ok "the sessions' end" d_sessions "$sp" 0
	pair "a$n" env SRNIC_DAEMON_SOCKET="$sp" "${pin_cl[@]}" "${run[@]}" -- \
		"$tool" -d srnic0 -p $port -F "$@" :: \
		env SRNIC_DAEMON_SOCKET="$sp" "${pin_cl[@]}" "${run[@]}" -- \
		"$tool" -d srnic1 -p $port -F "$@" 127.0.0.1
	record "$c" ports "a$n"
}

both() { # CASE TOOL ARGS...: embedded and attached, in this run's order
	if [ $((r % 2)) -eq 1 ]; then
		emb "$@"
		att att "$sa" "$sb" "$@"
	else
		att att "$sa" "$sb" "$@"
		emb "$@"
	fi
}

# cpu_ticks PID: the process's utime + stime, in clock ticks (the fields
# after the ")" that ends its name: state is the 1st, utime the 12th)
cpu_ticks() {
	local s
	s=$(<"/proc/$1/stat")
	s=${s##*) }
	awk '{ print $12 + $13 }' <<<"$s"
}

# idle WHAT PID: the % of a core PID used over idle_s seconds
idle() {
	local t0 t1 hz w0 w1
	hz=$(getconf CLK_TCK)
	t0=$(cpu_ticks "$2") w0=$(date +%s.%N)
	sleep "$idle_s"
	t1=$(cpu_ticks "$2") w1=$(date +%s.%N)
	pct=$(awk -v d=$((t1 - t0)) -v hz="$hz" -v w0="$w0" -v w1="$w1" \
		'BEGIN { printf "%.2f", 100 * d / hz / (w1 - w0) }')
	echo "0 idle_$1 att $pct" | tee -a "$res"
}

# Two daemons joined by one memif (A the server side, B the client side),
# and one on a net_ring0 port for loopback: started once, as a host runs them
sa=$tmp/a.sock sb=$tmp/b.sock sl=$tmp/l.sock so=$tmp/o.sock sp=$tmp/p.sock
start_daemon A "$sa" "${pin_srv[@]}" -- "${lc_srv[@]}" --ip 10.77.0.1 \
	--port "net_memif0,role=server,socket=$tmp/d.sock,$MEMIF_ARGS"
start_daemon B "$sb" "${pin_db[@]}" -- "${lc_db[@]}" --ip 10.77.0.2 \
	--port "net_memif0,role=client,socket=$tmp/d.sock,$MEMIF_ARGS"
start_daemon L "$sl" -- --ip 10.77.0.3 --port net_ring0
start_daemon O "$so" "${pin_srv[@]}" -- "${lc_srv[@]}" --ip 10.77.0.4 --port net_ring0
start_daemon P "$sp" "${pin_srv[@]}" -- "${lc_srv[@]}" \
	--port "net_memif0,role=server,id=0,socket=$tmp/p-memif.sock,$MEMIF_ARGS" --ip 10.77.0.5 \
	--port "net_memif1,role=client,id=0,socket=$tmp/p-memif.sock,$MEMIF_ARGS" --ip 10.77.0.6
for s in "$sa" "$sb" "$sl" "$so" "$sp"; do until_ok "the daemon on $s and its link" d_up "$s"; done
# both of P's links: its status has a link line per device
until_ok "the two-port daemon's second link" \
	eval '[ "$(dstatus "$sp" | grep -c "link ACTIVE")" -ge 2 ]' 

echo "# uptime before: $(uptime)"
for ((r = 1; r <= runs; r++)); do
	echo "--- run $r of $runs ($(date -u +%H:%M:%S) UTC)"
	both write64_bw ib_write_bw -s 64 -D "$secs"
	both read64k_bw ib_read_bw -s 65536 -D "$secs"
	both read64_lat ib_read_lat -s 64 -n "$lat_iters"
	att loop "$sl" "$sl" read64k_bw ib_read_bw -s 65536 -D "$secs"
	one write64_bw ib_write_bw -s 64 -D "$secs"
	one read64k_bw ib_read_bw -s 65536 -D "$secs"
	one read64_lat ib_read_lat -s 64 -n "$lat_iters"
	ports write64_bw ib_write_bw -s 64 -D "$secs"
	ports read64k_bw ib_read_bw -s 65536 -D "$secs"
	ports read64_lat ib_read_lat -s 64 -n "$lat_iters"
done

# The idle daemon (A): two sessions holding a QP each (ibv_rc_pingpong's
# servers waiting for a client that never comes), then none.
until_ok "the sessions' end" d_sessions "$sa" 0
hold=()
for i in 1 2; do
	port=$((port + 1))
	env SRNIC_DAEMON_SOCKET="$sa" timeout $((idle_s * 2 + GUARD_S)) "${run[@]}" -- \
		ibv_rc_pingpong -p $port >"$tmp/hold$i" 2>&1 &
	hold+=($!)
	until_ok "ibv_rc_pingpong's server" listening $port
done
dstatus "$sa" | grep -q "qps 2 " || { echo "the holders' QPs are not in the daemon" >&2; exit 1; }
idle sessions "$pid_A"
kill "${hold[@]}"
wait "${hold[@]}" 2>/dev/null || true
until_ok "the holders' sessions' end" d_sessions "$sa" 0
idle none "$pid_A"
echo "# uptime after: $(uptime)"

/usr/bin/python3 - "$res" "$T_WRITE" "$T_READ" "$T_LAT" "$T_IDLE_PCT" <<'PY'
import statistics, sys
t_write, t_read, t_lat, t_idle = map(float, sys.argv[2:6])
vals, runs = {}, {}
for line in open(sys.argv[1]):
    r, case, mode, v = line.split()
    vals.setdefault((case, mode), []).append(float(v))
    runs.setdefault((case, r), {})[mode] = float(v)
med = lambda case, mode: statistics.median(vals[(case, mode)])
units = {"write64_bw": "Mmsg/s", "read64k_bw": "Mmsg/s", "read64_lat": "us p50"}
print(f"{'case':12} {'unit':7} {'embedded':>9} {'attached':>9} {'loopback':>9} {'one':>9} {'ports':>9}  runs (embedded / attached / loopback / one daemon / two-port daemon)")
for case in ("write64_bw", "read64k_bw", "read64_lat"):
    row = [vals.get((case, m), []) for m in ("emb", "att", "loop", "one", "ports")]
    print("%-12s %-7s %s  %s" % (case, units[case],
          " ".join("%9.4f" % statistics.median(v) if v else "%9s" % "-" for v in row),
          " / ".join(" ".join("%g" % x for x in v) or "-" for v in row)))
# judged on the median of each run's ratio (its figures measured back to
# back); the ratio of the medians beside it. A 64 KiB message rate ratio is
# the bandwidth ratio.
targets = (("ib_write_bw -s 64 rate, attached / embedded", "write64_bw", "att", ">=", t_write),
           ("ib_read_bw -s 65536 bw, attached / embedded", "read64k_bw", "att", ">=", t_read),
           ("ib_read_lat -s 64 p50, attached / embedded", "read64_lat", "att", "<=", t_lat),
           ("ib_read_bw -s 65536, loopback / memif", "read64k_bw", "loop", ">=", 1.0),
           # the same memif crossing, both ports in one srnicd (its engine
           # on a CPU of its own, as a host gives the service its cores)
           ("ib_write_bw -s 64, two-port daemon / embedded", "write64_bw", "ports", ">=", t_write),
           ("ib_read_bw -s 65536, two-port daemon / emb.", "read64k_bw", "ports", ">=", t_read),
           ("ib_read_lat -s 64 p50, two-port daemon / emb.", "read64_lat", "ports", "<=", t_lat))
for what, case, mode, cmp, want in targets:
    per = [x[mode] / x["emb"] for (c, r), x in sorted(runs.items())
           if c == case and mode in x and "emb" in x]
    ratio = statistics.median(per)
    good = ratio >= want if cmp == ">=" else ratio <= want
    print("%-46s %6.3f (target %s %g) %-4s  of medians %.3f; runs %s" %
          (what, ratio, cmp, want, "ok" if good else "MISS", med(case, mode) / med(case, "emb"),
           " ".join("%.3f" % x for x in per)))
# the one-daemon layout: the same ratios, not the issue's case (no target)
for case in ("write64_bw", "read64k_bw", "read64_lat"):
    per = [x["one"] / x["emb"] for (c, r), x in sorted(runs.items())
           if c == case and "one" in x and "emb" in x]
    if per:
        print("%-46s %6.3f (one daemon, not judged); runs %s" %
              (case + ", one daemon / embedded", statistics.median(per),
               " ".join("%.3f" % x for x in per)))
for what in ("sessions", "none"):
    pct = vals[("idle_" + what, "att")][0]
    print("%-46s %5.2f%% (target < %g%%) %s" %
          ("srnicd idle CPU, " + ("2 sessions with a QP each" if what == "sessions" else "no session"),
           pct, t_idle, "ok" if pct < t_idle else "MISS"))
PY
