#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# usertools/srnic's commands and their arguments: COMMAND --help prints the
# summary and does nothing else (demo --help ran the demo), and setup,
# build and demo refuse arguments they do not take, saying so. The script
# runs from a copy in an empty folder: a command that went ahead would find
# no tree to build, and touch none.
#
#   commands.sh SOURCE_DIR TMP_DIR
set -euo pipefail

src=$1
tmp=$(mktemp -d "${2:-/tmp}/commands.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=test/common/check.sh
. "$src/test/common/check.sh"
mkdir "$tmp/usertools"
cp "$src/usertools/srnic" "$tmp/usertools/"

for cmd in setup build demo test bench run daemon status; do
	for h in --help -h; do
		rc=0
		"$tmp/usertools/srnic" "$cmd" "$h" >"$tmp/out" 2>"$tmp/err" || rc=$?
		if [ "$cmd" = run ]; then
			# run's own usage line
			check "run $h: its usage, exit 1" bash -c \
				"[ $rc -eq 1 ] && grep -q 'usage: usertools/srnic run' '$tmp/err'"
		else
			check "$cmd $h: the summary, exit 0 (rc $rc), nothing built" bash -c \
				"[ $rc -eq 0 ] && grep -q '^usage: usertools/srnic COMMAND' '$tmp/out' &&
				 ! grep -q building '$tmp/out' '$tmp/err' && [ ! -e '$tmp/build' ]"
		fi
	done
done
for cmd in setup build demo; do
	rc=0
	"$tmp/usertools/srnic" "$cmd" extra >"$tmp/out" 2>"$tmp/err" || rc=$?
	check "$cmd extra: refused, naming it (rc $rc)" bash -c \
		"[ $rc -ne 0 ] && grep -q '$cmd takes no arguments (given: extra)' '$tmp/err' &&
		 [ ! -e '$tmp/build' ]"
done
check_done
