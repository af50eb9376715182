#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's two "usertools/srnic run ... &" lines on a fresh clone: two
# run commands started at the same moment in a tree with no build/. Both
# must work (one builds, the other waits for that build: one build of the
# directory at a time), and run builds what it needs only (the two drop-in
# libraries, no program). Then the build command there: no tests, its
# progress shown.
#
#   run_concurrent.sh SOURCE_DIR TMP_DIR
# The clone is a copy of the source's files git knows or would take, as they are (edits
# included). Its build/ is set up without optimisation (SRNIC_BUILD_OPTIONS)
# to keep the test short: the race is in the script, not in the compiler.
set -euo pipefail

src=$1
tmp=$(mktemp -d "${2:-/tmp}/run_concurrent.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=test/common/check.sh
. "$src/test/common/check.sh"

if ! git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "SKIP: $src is not a git checkout (nothing to clone)"
	exit 77
fi
clone=$tmp/clone
mkdir "$clone"
git -C "$src" ls-files -z --cached --others --exclude-standard | tar -C "$src" --null -T - --ignore-failed-read -cf - |
	tar -C "$clone" -xf -

export SRNIC_BUILD_OPTIONS="-Dbuildtype=plain -Db_lto=false"
# no hugepages reserved on the host by a test; the programs run --no-huge
export SRNIC_HUGEPAGES=0 SRNIC_HUGE=0 SRNIC_MEM_MB=256
unset SRNIC_VERBS_LIB SRNIC_RDMACM_LIB SRNIC_CONFIG LD_PRELOAD
pids=()
for i in 1 2; do
	(cd "$tmp" && exec "$clone/usertools/srnic" run --port net_null0 --ip "10.88.0.$i" \
		-- ibv_devices >"$tmp/run$i.out" 2>"$tmp/run$i.err") &
	pids+=($!)
done
for i in 1 2; do
	rc=0
	wait "${pids[$((i - 1))]}" || rc=$?
	check "run $i exits 0 (rc $rc)" test "$rc" -eq 0
	check "run $i lists srnic0" grep -q srnic0 "$tmp/run$i.out"
done
check "one run waited for the other's build" \
	grep -q "waiting for another srnic command building build/" "$tmp/run1.err" "$tmp/run2.err"
check "the drop-ins were built" test -e "$clone/build/drivers/verbs/libibverbs.so.1" -a \
	-e "$clone/build/drivers/rdmacm/librdmacm.so.1"
check "no program built (run builds the two libraries only)" \
	test ! -e "$clone/build/app/srnic-perf/srnic-perf"
# then the build command on that tree: no tests (test builds them, in its
# own trees), its steps done / total shown as it goes on a terminal
# (script(1) gives it one), nothing left for meson install to build
out=$(cd "$tmp" && script -qec "$clone/usertools/srnic build" /dev/null 2>&1) || true
check "build shows its steps done / total on a terminal" \
	grep -qE 'building into build/ .* [0-9]+/[0-9]+ steps, ' <<<"$out"
check "build ends with 'done in'" grep -q "done in" <<<"$out"
check "build built the programs" test -x "$clone/build/app/srnic-perf/srnic-perf"
check "build/ has no tests (-Dtests=false)" test ! -e "$clone/build/test/e2e"
check "nothing left for meson install to build" \
	grep -q "no work to do" < <(ninja -C "$clone/build" -n 2>&1)
if [ "$fails" -ne 0 ]; then
	echo "---- build's output:"
	printf '%s\n' "$out" | tr '\r' '\n' | tail -n 5
	for i in 1 2; do
		echo "---- run $i stderr:"
		cat "$tmp/run$i.err"
	done
	echo "---- build/srnic-build.log (end):"
	tail -n 30 "$clone/build/srnic-build.log" 2>/dev/null || true
fi
check_done
