#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The poster's side of the doorbell's Dekker pair (srnic_qp_doorbell(),
# lib/engine/doorbell.c) on x86: the exchange of db_pending, a locked
# instruction, is itself the full barrier the pair needs; no fence before
# it (GCC: lock or to the stack; mfence). The doorbell ring's enqueue, when
# inlined (LTO), brings its own compare-and-swap, paid only by the post that
# finds db_pending 0. Read from the built library's code, as it runs.
#   doorbell_barrier.sh BUILD_DIR
# Exit 77 (skipped) off x86-64, without objdump, or where LTO inlined the
# function into its callers (no body of its own to read).
set -euo pipefail
build=$1
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64: the fence stays, nothing to check"; exit 77; }
command -v objdump >/dev/null || { echo "objdump is not installed"; exit 77; }
lib=$build/libsrnic.so
[ -e "$lib" ] || { echo "$lib: not built"; exit 1; }
body=$(objdump -d --no-show-raw-insn --disassemble=srnic_qp_doorbell "$lib" |
	awk '/<srnic_qp_doorbell>:$/ { on = 1; next } on && /^$/ { exit } on')
[ -n "$body" ] || { echo "srnic_qp_doorbell has no body of its own in $lib (inlined)"; exit 77; }
fence_re='\bmfence\b|\block (or|add)[bwlq]? +\$0x0,.*\(%rsp\)'
xchg_re='\bxchg[bwlq]? .*\('
echo "srnic_qp_doorbell's fences and exchanges:"
grep -E "$fence_re|$xchg_re" <<<"$body" || true
fences=$(grep -cE "$fence_re" <<<"$body" || true)
xchgs=$(grep -cE "$xchg_re" <<<"$body" || true)
if [ "$fences" -ne 0 ] || [ "$xchgs" -ne 1 ]; then
	echo "FAIL: $fences fence(s), $xchgs exchange(s); want none and one (db_pending's):" \
		"a fence before a locked exchange is redundant on x86"
	exit 1
fi
echo "ok"
