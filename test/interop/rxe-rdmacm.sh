#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Interop check of srnic's drop-in librdmacm.so.1 (drivers/rdmacm, lib/cm)
# against Linux's rdma_cm on Soft-RoCE (rdma_rxe) in a QEMU guest: the same
# unmodified rdma_cm tools (Debian's rdmacm-utils and perftest's -R) on both
# ends, srnic's end run by `usertools/srnic run` on a DPDK net_af_packet port
# on dpdk0, in both roles:
#   srnic-server  srnic's program listens on 10.77.0.10 (srnic's own address:
#                 srnic answers the guest kernel's ARP), the guest connects;
#   srnic-client  the guest's program listens on 10.77.0.2, srnic's connects
#                 (srnic's CM asks ARP through srnic's neighbour table).
# Unlike rxe-verbs.sh, no TCP: every exchange is the IB CM on QP1 (MADs).
# Every frame is captured on the bridge side of dpdk0; per run: both exits
# 0, the kit's tests/check-icrc.py 0 bad ICRC, tshark decodes the capture
# as InfiniBand with CM MADs in it and no "Malformed".
# Not in CI (the guest is emulated: minutes); a release check.
#   test/interop/rxe-rdmacm.sh [CASES [ROLES]]
#   CASES: rping rping_4k send_lat read_bw udaddy mtu_rej (default: all)
#   ROLES: srnic-server srnic-client (default: both)
#   RXE_KIT: the rdma_rxe QEMU kit (default ../shared/rxe-peer; README there)
#   PERFTEST_DIR: the ib_* tools of srnic's end from there (e.g. an upstream
#     perftest build tree; default: Debian's, in PATH)
#   GUEST_PERFTEST_DIR: the guest's from there, a directory in the guest
#     (default: Debian's). perftest -R's key exchange is its struct
#     pingpong_dest raw, 64 bytes since upstream's 4f48008 (26.04.17), 56
#     in Debian's 4.5-0.17: the two ends need one layout.
#   KEEP=1 keeps the captures/logs
#   RACE_RUNS: runs of a pair that lost perftest's reconnect race (default 4;
#     1: no rerun, e.g. for a perftest that retries after the REJ itself)
# Needs root (netns, tcpdump) and a release build (usertools/srnic build).
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=$(cd "${RXE_KIT:-../shared/rxe-peer}" && pwd)
cases=${1:-"rping rping_4k send_lat read_bw udaddy mtu_rej"}
MTU_CASES=$cases
cases=${cases//mtu_rej/}
roles=${2:-"srnic-server srnic-client"}
guest=A guest_ip=10.77.0.2 srnic_ip=10.77.0.10
run_guard=300                # a run that takes longer has hung (TCG: ms per op)
RACE_RUNS=${RACE_RUNS:-4}    # runs of a perftest pair that lost its reconnect race
for lib in build/drivers/verbs/libibverbs.so.1 build/drivers/rdmacm/librdmacm.so.1; do
	[ -f "$lib" ] || { echo "build first: usertools/srnic build ($lib missing)" >&2; exit 1; }
done
[ -f "$kit/tests/check-icrc.py" ] || { echo "RXE_KIT=$kit is not the rxe kit" >&2; exit 1; }
perftest_dir=
if [ -n "${PERFTEST_DIR:-}" ]; then
	perftest_dir=$(cd "$PERFTEST_DIR" && pwd)
	for t in ib_send_lat ib_read_bw; do
		[ -x "$perftest_dir/$t" ] || { echo "PERFTEST_DIR=$perftest_dir has no $t" >&2; exit 1; }
	done
	echo "srnic's end runs perftest from $perftest_dir ($("$perftest_dir/ib_send_lat" --version 2>&1 | head -1))"
fi

g() { (cd "$kit" && ./guest-run.sh "$@"); }

ip -n rxenet link show rxtap-$guest >/dev/null 2>&1 ||
	(cd "$kit" && ./start-vm.sh $guest $guest_ip/24 9000)
# srnic's port carries 1500-byte frames (net_af_packet): the guest's eth0
# too, or its rdma_cm asks path MTU 4096 in a REQ that srnic's 1024 cannot
# serve (Linux's passive side takes the REQ's MTU; a READ then hangs).
g $guest "ip link set eth0 mtu 1500" >/dev/null
# rdma_cm in the guest resolves 10.77.0.10 by ARP through its kernel: start
# from an empty entry so every run sees srnic answer it.
g $guest "ip neigh del $srnic_ip dev eth0 2>/dev/null; true" >/dev/null

# Per case: the tool, its server's and its client's arguments (SERVER gets
# "-a ADDR"-style listen address appended by LISTEN_OPT, CLIENT the
# server's address by CONNECT_OPT), the port its listener takes.
declare -A TOOL SARGS CARGS LOPT COPT PORT
TOOL[rping]=rping;         SARGS[rping]="-s -v -C 10 -S 64";    CARGS[rping]="-c -v -V -C 10 -S 64"
LOPT[rping]="-a";          COPT[rping]="-a";                    PORT[rping]=7174
TOOL[rping_4k]=rping;      SARGS[rping_4k]="-s -v -C 10 -S 4096"; CARGS[rping_4k]="-c -v -V -C 10 -S 4096"
LOPT[rping_4k]="-a";       COPT[rping_4k]="-a";                 PORT[rping_4k]=7174
TOOL[send_lat]=ib_send_lat; SARGS[send_lat]="-R -s 64 -n 100";  CARGS[send_lat]="-R -s 64 -n 100"
LOPT[send_lat]="";         COPT[send_lat]="";                   PORT[send_lat]=18515
TOOL[read_bw]=ib_read_bw;  SARGS[read_bw]="-R -s 8192 -n 100";  CARGS[read_bw]="-R -s 8192 -n 100"
LOPT[read_bw]="";          COPT[read_bw]="";                    PORT[read_bw]=18515
TOOL[udaddy]=udaddy;       SARGS[udaddy]="-C 10";               CARGS[udaddy]="-C 10"
LOPT[udaddy]="-b";         COPT[udaddy]="-s";                   PORT[udaddy]=7174

srnic_run=(ip netns exec rxenet env SRNIC_STATS=1 SRNIC_RDMACM_TRACE=1 usertools/srnic run
	--port net_af_packet0,iface=dpdk0 --ip $srnic_ip --mtu 1500 --)

# A server's command line: perftest's -R server binds any address.
server_cmd() { # CASE OWN_ADDR
	local c=$1
	if [ -n "${LOPT[$c]}" ]; then echo "${TOOL[$c]} ${SARGS[$c]} ${LOPT[$c]} $2"
	else echo "${TOOL[$c]} ${SARGS[$c]}"; fi
}
client_cmd() { # CASE SERVER_ADDR
	local c=$1
	echo "${TOOL[$c]} ${CARGS[$c]} ${COPT[$c]} $2"
}
# A command with perftest's tools from DIR if one is given (an end's
# PERFTEST_DIR).
in_dir() { # DIR COMMAND...
	local dir=$1
	shift
	if [ -n "$dir" ] && [[ $1 == ib_* ]]; then
		echo "$dir/$*"
	else
		echo "$*"
	fi
}
srnic_cmd() { in_dir "$perftest_dir" "$@"; }
guest_cmd() { in_dir "${GUEST_PERFTEST_DIR:-}" "$@"; }

# The figure a tool prints: perftest's typical latency / BW average (the
# first row under its #bytes header), rping's count of validated pings.
figure() {
	awk '
	/^ *#bytes.*BW average/ { col = 4; unit = " MB/s"; next }
	/^ *#bytes.*t_typical/ { col = 5; unit = " us typ"; next }
	col && $1 ~ /^[0-9]+$/ { f = $col unit; col = 0 }
	/^ping data:/ { n++; f = n " pings" }
	/^received [0-9]+ of [0-9]+ datagrams/ { f = $0 }
	END { print (f == "" ? "-" : f) }' "$@"
}

tmp=$(mktemp -d /tmp/srnic-rxe-rdmacm.XXXXXX)
summary=()
fail=0
for c in $cases; do
	[ -n "${TOOL[$c]:-}" ] || { echo "unknown case $c (${!TOOL[*]})" >&2; exit 2; }
	tool=${TOOL[$c]} port=${PORT[$c]}
	for role in $roles; do
		pcap=$tmp/$c-$role.pcap slog=$tmp/$c-$role.srnic.log glog=$tmp/$c-$role.guest.log
		g $guest "pkill -x $tool; true" >/dev/null
		ip netns exec rxenet tcpdump -i dpdk0-br --immediate-mode -B 16384 -w "$pcap" -U 'udp port 4791 or arp' 2>"$pcap.err" &
		dump=$!
		for _ in $(seq 100); do grep -q "listening on" "$pcap.err" && break; sleep 0.1; done
		src=0 grc=0
		if [ "$role" = srnic-server ]; then
			scmd=$(srnic_cmd $(server_cmd $c $srnic_ip)) gcmd=$(guest_cmd $(client_cmd $c $srnic_ip))
			echo "=== $c, $role: srnic: $scmd; guest: $gcmd"
			timeout $run_guard "${srnic_run[@]}" $scmd >"$slog" 2>&1 &
			srv=$!
			# SRNIC_RDMACM_TRACE's line for rdma_listen()
			for _ in $(seq 600); do
				grep -q "srnic librdmacm: .*listening on " "$slog" 2>/dev/null && break
				kill -0 $srv 2>/dev/null || break
				sleep 0.1
			done
			g -t $run_guard $guest "$gcmd" >"$glog" 2>&1 || grc=$?
			wait $srv || src=$?
		else
			scmd=$(srnic_cmd $(client_cmd $c $guest_ip)) gcmd=$(guest_cmd $(server_cmd $c $guest_ip))
			echo "=== $c, $role: guest: $gcmd; srnic: $scmd"
			# perftest -R's reconnect race (doc/interop.md): its second REQ
			# can beat the guest's new listen; Linux answers REJ 8 and
			# Debian's perftest then fails on its destroyed ids. Run the
			# pair again then, at most RACE_RUNS times, as suite rdmacm does.
			for attempt in $(seq $RACE_RUNS); do
				src=0 grc=0
				job=$(g -b $guest "$gcmd")
				g $guest "for i in \$(seq 300); do rdma res show cm_id | grep 'state LISTEN' | grep -q ':$port ' && exit 0; sleep 0.1; done; exit 1" ||
					echo "the guest's $tool does not listen"
				timeout $run_guard "${srnic_run[@]}" $scmd >"$slog" 2>&1 || src=$?
				if [ $src -ne 0 ] && [ "$attempt" -lt $RACE_RUNS ] &&
					grep -qE "srnic librdmacm: .*RDMA_CM_EVENT_REJECTED status 8\b" "$slog"; then
					echo "    run $attempt: perftest's reconnect race (REJ 8 to its second REQ): again"
					g -k "$job" $guest >/dev/null || true
					g $guest "pkill -x $tool; true" >/dev/null
					continue
				fi
				# srnic's end failed: the guest's server waits for nobody
				g -w "$job" -t $([ $src -eq 0 ] && echo $run_guard || echo 10) $guest >"$glog" 2>&1 || grc=$?
				[ $grc -ne 124 ] || g -k "$job" $guest >/dev/null || true
				break
			done
		fi
		sleep 0.5   # the last frames into the capture file (-U writes each one)
		kill $dump 2>/dev/null || true
		wait $dump 2>/dev/null || true
		# a starved tcpdump loses frames (2 cores beside a test soak): the
		# packet count is then a lower bound
		drop=$(sed -n 's/^\([0-9]*\) packets dropped by kernel/\1/p' "$pcap.err")
		icrc=$(/usr/bin/python3 "$kit/tests/check-icrc.py" "$pcap") || true
		pkts=$(sed -E 's/.*: ([0-9]+) RoCEv2 packets, ([0-9]+) bad ICRC/\1/' <<<"$icrc")
		bad=$(sed -E 's/.*: ([0-9]+) RoCEv2 packets, ([0-9]+) bad ICRC/\2/' <<<"$icrc")
		# the MADs: tshark's InfiniBand dissector on UDP 4791, CM class 0x07
		tshark -r "$pcap" -d udp.port==4791,infiniband --disable-protocol rpcordma -V >"$pcap.txt" 2>&1 || true
		mads=$(tshark -r "$pcap" -d udp.port==4791,infiniband -Y 'infiniband.mad.mgmtclass == 0x07' \
			-T fields -e infiniband.mad.attributeid 2>/dev/null |
			awk '{ n[$1]++ } END { split("0x0010 REQ 0x0011 MRA 0x0012 REJ 0x0013 REP 0x0014 RTU 0x0015 DREQ 0x0016 DREP 0x0017 SIDR_REQ 0x0018 SIDR_REP", a, " ");
				for (i = 1; i < 18; i += 2) if (n[a[i]]) s = s a[i + 1] ":" n[a[i]] " "; print (s == "" ? "none" : s) }')
		malformed=$(grep -c -i malformed "$pcap.txt" || true)
		if [ "$role" = srnic-server ]; then fig=$(figure "$glog"); else fig=$(figure "$slog"); fi
		ok=ok
		if [ $src -ne 0 ] || [ $grc -ne 0 ] || [ "$bad" != 0 ] || [ "${pkts:-0}" -eq 0 ] ||
			[ "$malformed" != 0 ] || [ "$mads" = none ]; then
			ok=FAIL fail=1
			echo "--- srnic ($slog):"; tail -15 "$slog"
			echo "--- guest ($glog):"; tail -15 "$glog"
		fi
		echo "$icrc; CM MADs: $mads; malformed: $malformed; dropped by tcpdump: ${drop:-?}"
		summary+=("$(printf '%-9s %-13s %5s %5s %7s %4s %4s %4s  %-16s %-40s %s' "$c" "$role" $src $grc \
			"$pkts" "${drop:-?}" "$bad" "$malformed" "$fig" "$mads" $ok)")
	done
done
# mtu_rej: the guest's eth0 at 9000 asks path MTU 4096 in its REQ; srnic's
# port (1500-byte frames) carries 1024: srnic's CM answers REJ INVALID_MTU
# (26) and the guest's ib_send_lat -R fails at once instead of hanging
# (the guest has perftest, not rdmacm-utils).
if [[ " $MTU_CASES " == *" mtu_rej "* ]]; then
	pcap=$tmp/mtu_rej.pcap slog=$tmp/mtu_rej.srnic.log glog=$tmp/mtu_rej.guest.log
	g $guest "pkill -x ib_send_lat; ip link set eth0 mtu 9000" >/dev/null
	ip netns exec rxenet tcpdump -i dpdk0-br --immediate-mode -B 16384 -w "$pcap" -U 'udp port 4791 or arp' 2>"$pcap.err" &
	dump=$!
	for _ in $(seq 100); do grep -q "listening on" "$pcap.err" && break; sleep 0.1; done
	echo "=== mtu_rej, srnic-server: srnic: ib_send_lat -R; guest (eth0 mtu 9000): ib_send_lat -R $srnic_ip"
	timeout $run_guard "${srnic_run[@]}" $(srnic_cmd ib_send_lat -R -s 64 -n 10) >"$slog" 2>&1 &
	srv=$!
	for _ in $(seq 600); do
		grep -q "srnic librdmacm: .*listening on " "$slog" 2>/dev/null && break
		sleep 0.1
	done
	grc=0
	g -t 60 $guest "$(guest_cmd ib_send_lat -R -s 64 -n 10 $srnic_ip)" >"$glog" 2>&1 || grc=$?
	kill -INT $srv 2>/dev/null || true
	wait $srv 2>/dev/null || true
	sleep 0.5
	kill $dump 2>/dev/null || true
	wait $dump 2>/dev/null || true
	g $guest "ip link set eth0 mtu 1500" >/dev/null
	reason=$(tshark -r "$pcap" -d udp.port==4791,infiniband -Y 'infiniband.mad.attributeid == 0x0012' \
		-T fields -e infiniband.cm.rej.reason 2>/dev/null | head -1)
	ok=ok
	if [ $grc -eq 0 ] || [ $grc -eq 124 ] || ! grep -q "rejected (REJ invalid MTU)" "$slog" ||
		[ "$((reason))" != 26 ]; then
		ok=FAIL fail=1
		echo "--- srnic ($slog):"; tail -15 "$slog"
		echo "--- guest ($glog):"; tail -15 "$glog"
	fi
	echo "guest ib_send_lat exit $grc; REJ reason in the capture: ${reason:-none}; srnic: $(grep -o 'a REQ asks path MTU.*rejected' "$slog" | head -1)"
	summary+=("$(printf '%-9s %-13s %5s %5s %7s %4s %4s %4s  %-16s %-40s %s' mtu_rej srnic-server - $grc \
		- - - - "REJ ${reason:-none}" "REQ REJ" $ok)")
fi

echo
printf '%-9s %-13s %5s %5s %7s %4s %4s %4s  %-16s %-40s %s\n' case role srnic guest packets drop bad malf figure "CM MADs" result
printf '%s\n' "${summary[@]}"
if [ "${KEEP:-0}" = 1 ] || [ $fail -ne 0 ]; then echo "captures and logs: $tmp"; else rm -rf "$tmp"; fi
exit $fail
