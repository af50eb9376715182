#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Interop check against Linux Soft-RoCE (rdma_rxe) in a QEMU guest with
# unmodified perftest: srnic-perf --perftest on a DPDK net_af_packet port on
# dpdk0, the guest's ib_read_bw / ib_write_bw on the other end, in both roles:
#   srnic-client  srnic-perf is the requester, perftest the server (rxe answers
#                 srnic's READs, takes its WRITEs);
#   srnic-server  perftest is the requester (rxe READs from srnic's zero-copy
#                 responder, WRITEs into its memory).
# Every packet captured on the bridge side of dpdk0, every ICRC checked by the
# peer kit's checker. Not in CI (the guest is emulated: minutes).
#   test/interop/rxe-perftest.sh [OPS [ROLES [SIZE [ITERS]]]]
#   OPS: read, write, atomic, send (ib_*_bw), read_lat, atomic_lat, write_lat,
#   send_lat (ib_*_lat; srnic-perf --lat; the last two are ping-pongs, both
#   ends send); atomic* are FETCH_AND_ADD, cas / cas_lat the same tools with
#   CMP_AND_SWAP (srnic-perf --atomic cas)
#   (default: all ten x srnic-client, srnic-server; 8192 bytes, 200 iterations)
#   SRNIC_PERF_EXTRA: more srnic-perf options for both roles, e.g.
#   SRNIC_PERF_EXTRA="--read-inline 256" ... read srnic-server 2148
# Needs ../shared/rxe-peer (README there) and root.
set -euo pipefail
cd "$(dirname "$0")/../.."
peer=$(cd ../shared/rxe-peer && pwd)
bin=build/app/srnic-perf/srnic-perf
[ -x "$bin" ] || { echo "build first: usertools/srnic build" >&2; exit 1; }
ops=${1:-"read write atomic send read_lat atomic_lat write_lat send_lat cas cas_lat"} roles=${2:-"srnic-client srnic-server"} size=${3:-8192} iters=${4:-200}
mtu=1024                     # net_af_packet takes 1500 here: path MTU 1024
guest_ip=10.77.0.2 srnic_ip=10.77.0.10 ns_ip=10.77.0.1
[ -f "$peer/build/rootfs.img" ] || (cd "$peer" && ./build-image.sh)
ip netns exec rxenet true 2>/dev/null && ip -n rxenet link show rxtap-A >/dev/null 2>&1 ||
	(cd "$peer" && ./start-vm.sh A $guest_ip/24 9000)
eal=(-l 0 --no-pci --no-huge -m 512 --file-prefix srnic-perftest --log-level=lib.eal:error
	--no-telemetry --vdev=net_af_packet0,iface=dpdk0)
read -r -a extra <<<"${SRNIC_PERF_EXTRA:-}"
fail=0
for op in $ops; do
	for role in $roles; do
		if [ "$op" = read_lat ] || [ "$op" = write_lat ] || [ "$op" = send_lat ]; then
			tool="ib_$op -d rxe0 -x 1 -s $size -n $iters -m $mtu"
			sop=(--op "${op%_lat}" --lat)
		elif [ "${op%_lat}" = atomic ] || [ "${op%_lat}" = cas ]; then
			kind=bw atype=FETCH_AND_ADD
			sop=(--op atomic)
			[ "${op%_lat}" = cas ] && atype=CMP_AND_SWAP && sop+=(--atomic cas)
			[ "${op%_lat}" != "$op" ] && kind=lat && sop+=(--lat)
			tool="ib_atomic_$kind -d rxe0 -x 1 -A $atype -n $iters -m $mtu"
		else
			tool="ib_${op}_bw -d rxe0 -x 1 -s $size -n $iters -m $mtu"
			sop=(--op "$op")
		fi
		pcap=$(mktemp --suffix=.pcap)
		log=$(mktemp)
		(cd "$peer" && ./guest-run.sh A 'pkill ib_; true')
		ip netns exec rxenet tcpdump -i dpdk0-br -w "$pcap" -U 'udp port 4791 or arp' 2>/dev/null &
		dump=$!
		sleep 1
		rc=0
		echo "=== $op, $role: perftest '$tool'"
		if [ "$role" = srnic-client ]; then
			job=$(cd "$peer" && ./guest-run.sh -b A "$tool")
			(cd "$peer" && ./guest-run.sh A 'for i in $(seq 150); do ss -ltn | grep -q ":18515 " && exit 0; sleep 0.1; done; exit 1')
			timeout 120 ip netns exec rxenet "$bin" "${eal[@]}" -- --client $guest_ip --perftest \
				--ip $srnic_ip "${sop[@]}" --size "$size" --mtu $mtu --iters "$iters" \
				--depth 16 --quiet "${extra[@]}" >"$log" 2>&1 || rc=$?
			grep -E "^ +$size " "$log" || true
			(cd "$peer" && ./guest-run.sh -w "$job" -t 60 A) | tail -3 || rc=$?
		else
			# the guest reaches srnic-perf's TCP port on the namespace's own address;
			# the RoCE traffic goes to srnic's address on dpdk0
			timeout 120 ip netns exec rxenet "$bin" "${eal[@]}" -- --server --perftest \
				--ip $srnic_ip "${sop[@]}" --size "$size" --mtu $mtu --iters "$iters" \
				"${extra[@]}" >"$log" 2>&1 &
			srv=$!
			sleep 3
			(cd "$peer" && ./guest-run.sh -t 90 A "$tool $ns_ip") | tail -3 || rc=$?
			wait $srv || rc=$?
			# the ping-pongs' server measures too: its own result row
			grep -E "perftest client (reports|done)|^ +$size +$iters " "$log" || rc=1
		fi
		sleep 1
		kill "$dump" 2>/dev/null || true
		wait "$dump" 2>/dev/null || true
		/usr/bin/python3 "$peer/tests/check-icrc.py" "$pcap" || rc=$?
		[ "$rc" -eq 0 ] || { fail=1; echo "FAILED ($rc), log $log"; tail -5 "$log"; }
		echo "capture: $pcap"
	done
done
exit $fail
