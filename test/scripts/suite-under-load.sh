#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole test suite, several times in a row, with every CPU kept busy by
# competing processes (stress(1)-like CPU hogs at the suite's own priority):
# a test that waits for a time instead of a condition fails here.
#
#   test/scripts/suite-under-load.sh [RUNS [HOGS]]
#     RUNS  suite runs in a row (default 10); stops at the first failure
#     HOGS  busy processes beside the suite (default: one per CPU)
#
# Needs the test build (usertools/srnic test makes it: build-test/). Each
# run's meson log is kept as build-test/meson-logs/testlog-load-N.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-10}
hogs=${2:-$(nproc)}
build=build-test
[ -f "$build/build.ninja" ] || { echo "no $build/: run usertools/srnic test first" >&2; exit 1; }

pids=()
stop_hogs() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
	( while :; do :; done ) &
	pids+=($!)
done
echo "suite-under-load: $runs runs, $hogs CPU hogs on $(nproc) CPUs"
for r in $(seq "$runs"); do
	t0=$(date +%s)
	if meson test -C "$build" --no-rebuild --print-errorlogs >"$build/load-run.out" 2>&1; then
		verdict=ok
	else
		verdict=FAILED
	fi
	cp "$build/meson-logs/testlog.txt" "$build/meson-logs/testlog-load-$r.txt"
	summary=$(grep -E '^(Ok|Fail|Timeout):' "$build/load-run.out" | tr -s ' ' | paste -sd' ')
	echo "run $r/$runs: $verdict in $(( $(date +%s) - t0 ))s ($summary; load $(cut -d' ' -f1-3 /proc/loadavg))"
	if [ "$verdict" != ok ]; then
		grep -E '^ *[0-9]+/[0-9]+ .*(FAIL|TIMEOUT)' "$build/load-run.out" || true
		exit 1
	fi
done
echo "suite-under-load: $runs of $runs runs passed"
