#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The poster's side of the doorbell's Dekker pair (srnic_qp_doorbell(),
# lib/engine/doorbell.c) on x86: one locked instruction per post, the
# exchange of db_pending, which is itself the full barrier the pair needs;
# not a seq_cst fence (GCC: lock or) and then the exchange. Read from the
# built library's code, as it runs.
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
# a lock prefix, or xchg with memory (locked without one); mfence too
locked=$(grep -cE '\block\b|\bxchg[bwlq]?\b.*\(|\bmfence\b' <<<"$body" || true)
echo "srnic_qp_doorbell: $locked locked instruction(s) or fences:"
grep -E '\block\b|\bxchg[bwlq]?\b.*\(|\bmfence\b' <<<"$body" || true
if [ "$locked" -ne 1 ]; then
	echo "FAIL: want 1 (the exchange of db_pending); a fence before it is redundant on x86"
	exit 1
fi
echo "ok"
