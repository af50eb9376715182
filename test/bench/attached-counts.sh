#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Counts, not times, per message of `ib_write_bw -s 64 -n N` (or the tool
# and arguments given after --), attached against embedded on the layout of
# attached-vs-embedded.sh with PERF_PIN=1 (the server side on CPU 1, the
# client side on CPU 0; attached: two srnicd over memif, each program on its
# daemon's CPU). Counts that do not move with the host's load as a rate
# does: each program's voluntary and involuntary context switches (its
# rusage), each daemon thread's (/proc/PID/task/TID/status), the daemons'
# engine counters (srnicd --status: passes, yields, naps, pollers woken,
# handoffs, owed wakes). --strace adds each client program's system calls
# (strace -c -f: slows it, the switches of that run are not comparable);
# --callgrind counts the client program's instructions (valgrind's
# callgrind, its own run; attached: the library's post and poll; embedded:
# those and the engine the program drives). --layout one: attached through
# ONE srnicd on a net_ring0 port, both programs on its one device (srnic's
# loopback: the requester's and the responder's work in one engine, as the
# two embedded engines do theirs), its engine alone on CPU 1, both programs
# on CPU 0: the same number of busy threads as embedded
# (attached-vs-embedded.sh's always-run column `one`). doc/performance.md ("Session 22") has results.
#   test/bench/attached-counts.sh [--build DIR] [-n N] [--strace]
#       [--callgrind] [--layout two|one] [--modes "emb att"] [-- TOOL ARGS...]
set -euo pipefail
cd "$(dirname "$0")/../.."
bld=build iters=200000 use_strace=0 use_cg=0 layout=two modes="emb att"
while [ $# -gt 0 ]; do
	case "$1" in
	--build) bld=$(realpath -- "$2"); shift 2 ;;
	-n) iters=$2; shift 2 ;;
	--strace) use_strace=1; shift ;;
	--callgrind) use_cg=1; shift ;;
	--layout) layout=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [--build DIR] [-n N] [--strace] [--callgrind] [--layout two|one]" \
		"[--modes \"emb att\"] [-- TOOL ARGS...]" >&2
	   exit 2 ;;
	esac
done
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || { echo "-n wants a positive count" >&2; exit 2; }
case "$layout" in two|one) ;; *) echo "--layout: two or one" >&2; exit 2 ;; esac
tool=(ib_write_bw -s 64)
[ $# -eq 0 ] || tool=("$@")
lib=$bld/drivers/verbs
daemon=$bld/app/srnicd/srnicd
[ -e "$lib/libibverbs.so.1" ] && [ -x "$daemon" ] ||
	{ echo "no $lib/libibverbs.so.1 or $daemon: build first" >&2; exit 1; }
export SRNIC_VERBS_LIB=$(realpath -- "$lib") SRNIC_RDMACM_LIB=$(realpath -- "$bld/drivers/rdmacm")
unset SRNIC_PORT SRNIC_IP SRNIC_IP6 SRNIC_CONFIG SRNIC_DAEMON_SOCKET

GUARD_S=600
WAIT_S=30
LISTEN_S=$WAIT_S
MEMIF_ARGS=bsize=10240
tmp=$(mktemp -d /tmp/attached-counts.XXXXXX)
port=$((30000 + $$ % 10000))
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

until_ok() {
	local what=$1 deadline=$((SECONDS + WAIT_S))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || { echo "waited ${WAIT_S} s for $what" >&2; exit 1; }
		sleep 0.05
	done
}
dstatus() { "$daemon" --status --socket "$1" 2>/dev/null; }
d_up() { [ "$(dstatus "$1" | grep -c "link ACTIVE")" -ge "${2:-1}" ]; }
d_sessions() { dstatus "$1" | grep -q "^sessions $(($2 + 1)) "; }

# engine counters of the daemon on socket $1 (summed over its devices), as
# "name value" lines
d_counts() {
	dstatus "$1" | awk '/^  engine / { for (i = 1; i < NF && $i != "polls"; i++) ;
			for (; i < NF; i += 2) s[$i] += $(i + 1) }
		END { for (k in s) print k, s[k] }'
}
# every thread of PID: "comm vol invol"
t_switches() {
	local t
	for t in /proc/$1/task/*; do
		printf '%s %s %s\n' "$(tr ' ' _ <"$t/comm")" \
			"$(awk '/^voluntary_ctxt/ { print $2 }' "$t/status")" \
			"$(awk '/^nonvoluntary_ctxt/ { print $2 }' "$t/status")"
	done | sort
}

# the program's rusage: GNU time's voluntary, involuntary switches, user, sys
TIMEF=switches_%w_%c_cpu_%U_%S
w_s=() w_c=()
wrap() { # NAME SIDE: the command prefix of one program, in w_NAME
	local -n w=w_$2
	w=(/usr/bin/time -f "$TIMEF" -o "$tmp/$1.$2.time")
	if [ "$2" = c ] && [ "$use_strace" = 1 ]; then
		w+=(strace -f -c -o "$tmp/$1.strace")
	fi
	if [ "$2" = c ] && [ "$use_cg" = 1 ]; then
		w+=(valgrind --tool=callgrind --callgrind-out-file="$tmp/$1.cg.%p"
		    --trace-children=yes)
	fi
}

report_prog() { # NAME: per message
	local s
	for s in s c; do
		tr _ ' ' <"$tmp/$1.$s.time" | awk -v n="$iters" -v who="$1 program ($s)" \
			'{ printf "%-24s vol %.4f invol %.4f /msg  cpu user %s sys %s s\n",
			   who, $2 / n, $3 / n, $5, $6 }'
	done
	# perftest's own figure (wall clock: moves with the host's load)
	awk '/#bytes/ { on = 1; next } on && $1 ~ /^[0-9]+$/ {
		printf "%-24s %s M msg/s (wall clock)\n", "rate", $5; exit }' "$tmp/$1.c"
	if [ -e "$tmp/$1.strace" ]; then
		echo "$1 client system calls (strace -c -f), per message:"
		awk -v n="$iters" '$1 ~ /^[0-9.]+$/ && NF >= 5 { c = $4; name = $NF;
			printf "  %-16s %.4f\n", name, c / n }' "$tmp/$1.strace"
	fi
	if [ "$use_cg" = 1 ]; then
		local f
		for f in "$tmp/$1".cg*; do
			[ -s "$f" ] || continue
			awk -v n="$iters" -v f="${f##*/}" '/^summary:/ {
				printf "  %s instructions %.0f per message (all, set-up included)\n",
				f, $2 / n }' "$f"
		done
	fi
}

emb() {
	local sock
	n=$((n + 1)) port=$((port + 1)) sock=$tmp/m$n.sock
	wrap "e$n" s
	wrap "e$n" c
	pair "e$n" "${w_s[@]}" taskset -c 1 usertools/srnic run --mtu 9000 \
		--port "net_memif0,role=server,socket=$sock,$MEMIF_ARGS" --ip 10.77.0.1 -- \
		"${tool[@]}" -n "$iters" -p $port -F :: \
		"${w_c[@]}" taskset -c 0 usertools/srnic run --mtu 9000 \
		--port "net_memif0,role=client,socket=$sock,$MEMIF_ARGS" --ip 10.77.0.2 -- \
		"${tool[@]}" -n "$iters" -p $port -F 127.0.0.1
	echo "== embedded (${tool[*]} -n $iters)"
	report_prog "e$n"
}

# counters of every daemon before/after, per message
att() { # SSOCK CSOCK SCPU CCPU
	local ss=$1 cs=$2 d
	n=$((n + 1)) port=$((port + 1))
	until_ok "the sessions' end" d_sessions "$ss" 0
	until_ok "the sessions' end" d_sessions "$cs" 0
	for d in "${!dsock[@]}"; do
		d_counts "${dsock[$d]}" >"$tmp/a$n.$d.c0"
		t_switches "${dpid[$d]}" >"$tmp/a$n.$d.t0"
	done
	wrap "a$n" s
	wrap "a$n" c
	pair "a$n" "${w_s[@]}" env SRNIC_DAEMON_SOCKET="$ss" taskset -c "$3" usertools/srnic run -- \
		"${tool[@]}" -n "$iters" -p $port -F :: \
		"${w_c[@]}" env SRNIC_DAEMON_SOCKET="$cs" taskset -c "$4" usertools/srnic run -- \
		"${tool[@]}" -n "$iters" -p $port -F 127.0.0.1
	for d in "${!dsock[@]}"; do
		d_counts "${dsock[$d]}" >"$tmp/a$n.$d.c1"
		t_switches "${dpid[$d]}" >"$tmp/a$n.$d.t1"
	done
	echo "== attached, $layout daemon(s) (${tool[*]} -n $iters)"
	report_prog "a$n"
	for d in "${!dsock[@]}"; do
		echo "daemon $d per message:"
		join "$tmp/a$n.$d.c0" "$tmp/a$n.$d.c1" | awk -v n="$iters" \
			'{ printf "  %-16s %.4f\n", $1, ($3 - $2) / n }'
		join "$tmp/a$n.$d.t0" "$tmp/a$n.$d.t1" | awk -v n="$iters" \
			'($4 - $2) + ($5 - $3) > 0 { printf "  thread %-16s vol %.4f invol %.4f\n",
			  $1, ($4 - $2) / n, ($5 - $3) / n }'
	done
}

declare -A dsock dpid
start_daemon() { # NAME CPU OPTIONS...
	local name=$1 cpu=$2
	shift 2
	taskset -c "$cpu" "$daemon" --socket "$tmp/$name.sock" --mtu 9000 --lcores "$cpu" "$@" \
		>"$tmp/$name.log" 2>&1 &
	dpids+=($!)
	dsock[$name]=$tmp/$name.sock dpid[$name]=$!
}
if [[ " $modes " == *" att "* ]]; then
	if [ "$layout" = two ]; then
		start_daemon A 1 --ip 10.77.0.1 \
			--port "net_memif0,role=server,socket=$tmp/d.sock,$MEMIF_ARGS"
		start_daemon B 0 --ip 10.77.0.2 \
			--port "net_memif0,role=client,socket=$tmp/d.sock,$MEMIF_ARGS"
		until_ok "daemon A's link" d_up "${dsock[A]}"
		until_ok "daemon B's link" d_up "${dsock[B]}"
	else
		start_daemon O 1 --ip 10.77.0.3 --port net_ring0
		until_ok "the daemon's link" d_up "${dsock[O]}"
	fi
fi

echo "# $(uptime)"
for m in $modes; do
	case "$m" in
	emb) emb ;;
	att) if [ "$layout" = two ]; then
		att "${dsock[A]}" "${dsock[B]}" 1 0
	     else
		att "${dsock[O]}" "${dsock[O]}" 0 0
	     fi ;;
	esac
done
echo "# $(uptime)"
