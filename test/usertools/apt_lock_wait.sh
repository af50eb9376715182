#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# setup and another apt holding its lock (a freshly booted machine's
# unattended-upgrades): setup waits for it, saying so, instead of failing at
# once. usertools/srnic's apt_wait_locks on a lock file of the test's own,
# held with fcntl as apt and dpkg hold theirs.
#
#   apt_lock_wait.sh SOURCE_DIR TMP_DIR
set -euo pipefail

src=$1
tmp=$(mktemp -d "${2:-/tmp}/apt_lock_wait.XXXXXX")
holder=""
trap '[ -z "$holder" ] || kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
GUARD_S=60   # for what must happen; a loaded host takes seconds
# shellcheck source=test/common/check.sh
. "$src/test/common/check.sh"

# true once FILE has a line matching RE, false after GUARD_S
wait_line() {
	local file=$1 re=$2 t0=$SECONDS

	until grep -q -E "$re" "$file" 2>/dev/null; do
		[ $((SECONDS - t0)) -lt "$GUARD_S" ] || return 1
		sleep 0.05
	done
}

lock=$tmp/lock-frontend
: >"$lock"
# the holder: fcntl write lock (apt's kind), says so, keeps it until killed
python3 -c '
import fcntl, sys, time
f = open(sys.argv[1], "w")
fcntl.lockf(f, fcntl.LOCK_EX)
print("held", flush=True)
while True:
    time.sleep(3600)' "$lock" >"$tmp/holder.out" &
holder=$!
check "the test's holder has its lock" wait_line "$tmp/holder.out" '^held'

# shellcheck source=/dev/null
. "$src/usertools/srnic"
# shellcheck disable=SC2034 # read by the sourced functions
APT_LOCKS=("$tmp/no-such-lock" "$lock")
check "apt_lock_holder names the lock and its holder's PID" \
	bash -c '[[ "$1" == *"$2 is held by "*"(PID $3)" ]]' _ "$(apt_lock_holder)" "$lock" "$holder"
apt_wait_locks >"$tmp/wait.out" 2>&1 &
waiter=$!
check "setup says it waits for the other apt" \
	wait_line "$tmp/wait.out" "another apt is running \\($lock is held by .*PID $holder\\)\\): waiting"
check "and is still waiting while the lock is held" kill -0 "$waiter"
kill "$holder"
wait "$holder" 2>/dev/null || true
holder=""
rc=0
wait "$waiter" || rc=$?
check "the wait ends with 0 when the lock is free (rc $rc)" test "$rc" -eq 0
check "saying so" grep -q "apt is free after" "$tmp/wait.out"
check "no lock held: apt_lock_holder says none" test -z \
	"$(apt_lock_holder || true)"
[ "$fails" -eq 0 ] || cat "$tmp/wait.out"
check_done
