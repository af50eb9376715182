# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the perftest benchmarks (verbs-vs-perf.sh,
# attached-vs-embedded.sh): a server and its client, the client once the
# server listens. The caller sets tmp (the run's directory), port (the
# server's TCP port), GUARD_S (each program's time before it is killed) and
# LISTEN_S (how long a server may take to listen).

listening() { ss -Hltn "sport = :$1" | grep -q .; }

# pair NAME SERVER_CMD... :: CLIENT_CMD...: the server, once it listens on
# $port, the client; both must exit 0. The client's output is in $tmp/NAME.c.
pair() {
	local name=$1 srv=() cl=() deadline pid rc=0
	shift
	while [ "$1" != "::" ]; do srv+=("$1"); shift; done
	shift
	cl=("$@")
	timeout $GUARD_S "${srv[@]}" >"$tmp/$name.s" 2>&1 &
	pid=$!
	deadline=$((SECONDS + LISTEN_S))
	until listening $port; do
		kill -0 $pid 2>/dev/null || break
		[ $SECONDS -lt $deadline ] || break
		sleep 0.05
	done
	timeout $GUARD_S "${cl[@]}" >"$tmp/$name.c" 2>&1 || rc=$?
	wait $pid || rc=$((rc ? rc : $?))
	if [ $rc -ne 0 ]; then
		echo "$name failed (exit $rc); server, then client:" >&2
		tail -n 40 "$tmp/$name.s" "$tmp/$name.c" >&2
		exit 1
	fi
}
