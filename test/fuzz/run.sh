#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Run the fuzz targets of test/fuzz (libFuzzer, clang, ASan + UBSan).
#
# usage: test/fuzz/run.sh [--time S] [--target parse|rx|cm|api|svc|all] [--jobs N]
#                         [--build DIR] [--corpus-out DIR]
#
# Builds DIR (default build-fuzz: CC=clang, -Dfuzz=true -Dtests=false; no
# -Dwerror: clang warns where gcc does not, in code the targets do not use)
# when needed, then runs each target for S seconds (default 60) over its
# committed corpus (test/fuzz/corpus/<target>, only read) and a work
# corpus (default DIR/corpus/<target>: new inputs go there), N jobs in
# parallel (libFuzzer -jobs/-workers). Crashes land in DIR/artifacts/; the
# script fails when a target found one. To keep new inputs in the repo:
#   DIR/test/fuzz/fuzz_rx -merge=1 test/fuzz/corpus/rx DIR/corpus/rx
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)
TIME=60
TARGET=all
JOBS=1
BUILD=build-fuzz
OUT=
# The RX target brings DPDK up (--no-huge -m 256) under ASan.
RSS_LIMIT_MB=4096

while [ $# -gt 0 ]; do
	case "$1" in
	--time) TIME=$2; shift 2 ;;
	--target) TARGET=$2; shift 2 ;;
	--jobs) JOBS=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--corpus-out) OUT=$2; shift 2 ;;
	-h | --help) sed -n 3,16p "$0"; exit 0 ;;
	*) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
cd "$ROOT"
case "$TARGET" in
all) TARGETS=(parse rx cm api svc) ;;
parse | rx | cm | api | svc) TARGETS=("$TARGET") ;;
*) echo "run.sh: no target $TARGET (parse, rx, cm, api, svc, all)" >&2; exit 2 ;;
esac
command -v clang >/dev/null || { echo "run.sh: clang not found" >&2; exit 1; }

if [ ! -f "$BUILD/build.ninja" ]; then
	CC=clang meson setup "$BUILD" -Dfuzz=true -Dtests=false -Dbuildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false -Db_lto=false
fi
ninja -C "$BUILD" $(printf 'test/fuzz/fuzz_%s ' "${TARGETS[@]}")
mkdir -p "$BUILD/artifacts"

rc=0
for t in "${TARGETS[@]}"; do
	work=${OUT:-$BUILD/corpus}/$t
	mkdir -p "$work"
	par=()
	if [ "$JOBS" -gt 1 ]; then
		par=(-jobs="$JOBS" -workers="$JOBS")
	fi
	echo "run.sh: fuzz_$t for ${TIME}s, $JOBS job(s), new inputs in $work"
	if ! "$BUILD/test/fuzz/fuzz_$t" "$work" "test/fuzz/corpus/$t" \
		-max_total_time="$TIME" -rss_limit_mb=$RSS_LIMIT_MB -print_final_stats=1 \
		-artifact_prefix="$BUILD/artifacts/$t-" "${par[@]}"; then
		echo "run.sh: fuzz_$t FAILED: see $BUILD/artifacts/$t-*" >&2
		rc=1
	fi
done
exit $rc
