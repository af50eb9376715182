#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# usertools/srnic bench --quick is test/bench/perf-targets.sh --quick: the
# same rows and table with QUICK_DIV (20) times fewer messages each, and a
# progress line per row. Run with a stand-in srnic-perf (PERF) that records
# its arguments and prints a result row for them: the set's shape, not the
# figures (those take minutes of a quiet host).
#
#   bench_quick.sh SOURCE_DIR TMP_DIR
set -euo pipefail

src=$1
tmp=$(mktemp -d "${2:-/tmp}/bench_quick.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=test/common/check.sh
. "$src/test/common/check.sh"

cat >"$tmp/perf" <<'PERF'
#!/usr/bin/env bash
# srnic-perf's stand-in: EAL args, "--", its own; one JSON row for them
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
echo "$*" >>"${0%/*}/calls"
op=read size=64 qps=1 depth=16 floors=""
while [ $# -gt 0 ]; do
	case "$1" in
	--op) op=$2 ;;
	--size) size=${2/K/*1024} ;;
	--qps) qps=$2 ;;
	--depth) depth=$2 ;;
	--lat) depth=1 ;;
	--floors) floors=', "floor_gbps": 2, "ratio_gbps": 0.5, "floor_mpps": 2, "ratio_mpps": 0.5, "floor_xc_mpps": 2, "ratio_xc_mpps": 0.5' ;;
	esac
	shift
done
echo "{\"op\": \"$op\", \"size\": $((size)), \"qps\": $qps, \"depth\": $depth, \"gbps\": 1, \"mops\": 1, \"lat_us\": {\"p50\": 1, \"p99\": 2}, \"qp_mem_bytes\": 4096$floors}"
PERF
chmod +x "$tmp/perf"

cd "$src"
full=$(PERF=$tmp/perf test/bench/perf-targets.sh 2>"$tmp/full.err")
mv "$tmp/calls" "$tmp/calls.full"
quick=$(PERF=$tmp/perf test/bench/perf-targets.sh --quick 2>"$tmp/quick.err")
mv "$tmp/calls" "$tmp/calls.quick"

n=$(wc -l <"$tmp/calls.full")
check "the full set runs rows ($n)" test "$n" -gt 0
check "--quick runs the same rows" test "$(wc -l <"$tmp/calls.quick")" -eq "$n"
# every call the same but its --iters, 20 times fewer
check "--quick: every row's --iters divided by 20" python3 - "$tmp/calls.full" "$tmp/calls.quick" <<'PY'
import sys
full = [l.split() for l in open(sys.argv[1])]
quick = [l.split() for l in open(sys.argv[2])]
ok = len(full) == len(quick)
for f, q in zip(full, quick):
    i = f.index("--iters")
    ok = ok and f[:i + 1] == q[:i + 1] and f[i + 2:] == q[i + 2:] and int(q[i + 1]) * 20 == int(f[i + 1])
sys.exit(0 if ok else 1)
PY
check "the same table (the figures' lines but the JSON rows)" \
	test "$(grep -v '^{' <<<"$full")" = "$(grep -v '^{' <<<"$quick")"
check "a table with the targets" grep -q "targets (issue 5) on the medians" <<<"$quick"
check "a progress line per row, 'row N of $n'" \
	test "$(grep -cE "^perf-targets: row [0-9]+ of $n \([0-9]+s\) --op " "$tmp/quick.err")" -eq "$n"
check "--runs 2 counts its rows over both runs" bash -c \
	"PERF='$tmp/perf' test/bench/perf-targets.sh --quick --runs 2 2>&1 >/dev/null |
	 grep -q 'row $((2 * n)) of $((2 * n))'"
check_done
