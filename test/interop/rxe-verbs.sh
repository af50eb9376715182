#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Interop check of srnic's drop-in libibverbs.so.1 (drivers/verbs) against
# Linux Soft-RoCE (rdma_rxe) in a QEMU guest: the same unmodified tools
# (Debian's ibverbs-utils and perftest) on both ends, srnic's end run by
# `usertools/srnic run` on a DPDK net_af_packet port on dpdk0, in both roles:
#   srnic-server  srnic's program listens (its TCP on the namespace's own
#                 address 10.77.0.1, its RoCE on dpdk0 as 10.77.0.10), the
#                 guest's program connects;
#   srnic-client  the guest's program listens, srnic's connects to 10.77.0.2.
# Every packet is captured on the bridge side of dpdk0 and every ICRC checked
# by the peer kit's checker (tests/check-icrc.py); both programs must exit 0.
# Not in CI (the guest is emulated: minutes); a release check.
#   test/interop/rxe-verbs.sh [CASES [ROLES]]
#   CASES: rc_pingpong ud_pingpong read_bw write_lat send_bw_ud atomic_lat
#          (default: all six), ROLES: srnic-server srnic-client (default: both)
#   RXE_KIT: the rdma_rxe QEMU kit (default ../shared/rxe-peer; README there)
#   ITERS: iterations per run (default 100); KEEP=1 keeps the captures/logs
# Needs root (netns, tcpdump) and a release build (usertools/srnic build).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
kit=$(cd "${RXE_KIT:-../shared/rxe-peer}" && pwd)
cases=${1:-"rc_pingpong ud_pingpong read_bw write_lat send_bw_ud atomic_lat"}
roles=${2:-"srnic-server srnic-client"}
iters=${ITERS:-100}
mtu=1024                     # net_af_packet takes 1500 here: path MTU 1024
guest=A guest_ip=10.77.0.2 srnic_ip=10.77.0.10 ns_ip=10.77.0.1
port=18515                   # the tools' default TCP port
run_guard=240                # a run that takes longer has hung (TCG: ms per op)
lib=build/drivers/verbs/libibverbs.so.1
[ -f "$lib" ] || { echo "build first: usertools/srnic build" >&2; exit 1; }
[ -f "$kit/tests/check-icrc.py" ] || { echo "RXE_KIT=$kit is not the rxe kit" >&2; exit 1; }

g() { (cd "$kit" && ./guest-run.sh "$@"); }

[ -f "$kit/build/rootfs.img" ] || [ -f "${TMPDIR:-/tmp}/rxe-peer/build/rootfs.img" ] ||
	(cd "$kit" && ./build-image.sh)
ip -n rxenet link show rxtap-$guest >/dev/null 2>&1 ||
	(cd "$kit" && ./start-vm.sh $guest $guest_ip/24 9000)

# The tools' arguments: common to both ends (CASE_ARGS), the guest's own
# device and GID (rxe0, index 1 = ::ffff:10.77.0.2); srnic's program finds
# its one device, srnic0, whose GID index 1 is ::ffff:10.77.0.10.
declare -A TOOL CASE_ARGS
TOOL[rc_pingpong]=ibv_rc_pingpong;  CASE_ARGS[rc_pingpong]="-g 1 -m $mtu -s 4096 -n $iters -c"
TOOL[ud_pingpong]=ibv_ud_pingpong;  CASE_ARGS[ud_pingpong]="-g 1 -s 1024 -n $iters -c"
TOOL[read_bw]=ib_read_bw;           CASE_ARGS[read_bw]="-x 1 -m $mtu -s 8192 -n $iters"
TOOL[write_lat]=ib_write_lat;       CASE_ARGS[write_lat]="-x 1 -m $mtu -s 2048 -n $iters"
TOOL[send_bw_ud]=ib_send_bw;        CASE_ARGS[send_bw_ud]="-c UD -x 1 -m $mtu -s 1024 -n $iters"
TOOL[atomic_lat]=ib_atomic_lat;     CASE_ARGS[atomic_lat]="-x 1 -m $mtu -n $iters"

srnic_run=(ip netns exec rxenet env SRNIC_STATS=1 usertools/srnic run
	--port net_af_packet0,iface=dpdk0 --ip $srnic_ip --mtu 1500 --)

# The figure a tool prints: the pingpongs' usec/iter, perftest's BW average
# or typical latency (the first result row under its #bytes header).
figure() {
	awk '
	/usec\/iter/ { for (i = 1; i <= NF; i++) if ($i == "usec/iter") { f = $(i - 1) " us/iter" } }
	/^ *#bytes.*BW average/ { col = 4; unit = " MB/s"; next }     # bytes iters peak average
	/^ *#bytes.*t_typical/ { col = 5; unit = " us typ"; next }    # bytes iters min max typical
	col && $1 ~ /^[0-9]+$/ { f = $col unit; col = 0 }
	END { print (f == "" ? "-" : f) }' "$@"
}

tmp=$(mktemp -d /tmp/srnic-rxe-verbs.XXXXXX)
summary=()
fail=0
for c in $cases; do
	[ -n "${TOOL[$c]:-}" ] || { echo "unknown case $c (${!TOOL[*]})" >&2; exit 2; }
	tool=${TOOL[$c]} args=${CASE_ARGS[$c]}
	for role in $roles; do
		pcap=$tmp/$c-$role.pcap slog=$tmp/$c-$role.srnic.log glog=$tmp/$c-$role.guest.log
		g $guest "pkill -x $tool; true" >/dev/null
		ip netns exec rxenet tcpdump -i dpdk0-br -w "$pcap" -U 'udp port 4791 or arp' 2>"$pcap.err" &
		dump=$!
		for _ in $(seq 100); do grep -q "listening on" "$pcap.err" && break; sleep 0.1; done
		src=0 grc=0
		echo "=== $c, $role: $tool $args"
		if [ "$role" = srnic-server ]; then
			timeout $run_guard "${srnic_run[@]}" $tool $args >"$slog" 2>&1 &
			srv=$!
			for _ in $(seq 300); do
				ip netns exec rxenet ss -ltn | grep -q ":$port " && break
				kill -0 $srv 2>/dev/null || break
				sleep 0.1
			done
			g -t $run_guard $guest "$tool -d rxe0 $args $ns_ip" >"$glog" 2>&1 || grc=$?
			wait $srv || src=$?
		else
			job=$(g -b $guest "$tool -d rxe0 $args")
			g $guest "for i in \$(seq 300); do ss -ltn | grep -q ':$port ' && exit 0; sleep 0.1; done; exit 1" ||
				echo "the guest's $tool does not listen"
			timeout $run_guard "${srnic_run[@]}" $tool $args $guest_ip >"$slog" 2>&1 || src=$?
			g -w "$job" -t $run_guard $guest >"$glog" 2>&1 || grc=$?
			[ $grc -ne 124 ] || g -k "$job" $guest >/dev/null || true
		fi
		sleep 0.5   # the last frames into the capture file (-U writes each one)
		kill $dump 2>/dev/null || true
		wait $dump 2>/dev/null || true
		icrc=$(/usr/bin/python3 "$kit/tests/check-icrc.py" "$pcap") || true
		pkts=$(sed -E 's/.*: ([0-9]+) RoCEv2 packets, ([0-9]+) bad ICRC/\1/' <<<"$icrc")
		bad=$(sed -E 's/.*: ([0-9]+) RoCEv2 packets, ([0-9]+) bad ICRC/\2/' <<<"$icrc")
		# the client's figure (ib_atomic_lat's server prints none)
		if [ "$role" = srnic-server ]; then fig=$(figure "$glog"); else fig=$(figure "$slog"); fi
		ok=ok
		if [ $src -ne 0 ] || [ $grc -ne 0 ] || [ "$bad" != 0 ] || [ "${pkts:-0}" -eq 0 ]; then
			ok=FAIL fail=1
			echo "--- srnic ($slog):"; tail -15 "$slog"
			echo "--- guest ($glog):"; tail -15 "$glog"
		fi
		echo "$icrc"
		summary+=("$(printf '%-12s %-13s %5s %5s %7s %4s  %-16s %s' "$c" "$role" $src $grc "$pkts" "$bad" "$fig" $ok)")
	done
done
echo
printf '%-12s %-13s %5s %5s %7s %4s  %-16s %s\n' case role srnic guest packets bad figure result
printf '%s\n' "${summary[@]}"
if [ "${KEEP:-0}" = 1 ] || [ $fail -ne 0 ]; then echo "captures and logs: $tmp"; else rm -rf "$tmp"; fi
exit $fail
