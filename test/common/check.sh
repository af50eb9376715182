# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# The shell tests' checks (test/usertools, test/install): "ok: WHAT" or
# "FAIL: WHAT" per check, the count of failures last (check_done: the
# script's exit status).
fails=0

check() {
	local what=$1

	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what"
		fails=$((fails + 1))
	fi
}

check_done() {
	echo "$fails failed"
	[ "$fails" -eq 0 ]
}
