#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Interop check against Linux Soft-RoCE (rdma_rxe) in a QEMU guest: an
# unmodified ibv_rc_pingpong in the guest (server) and srnic-rc-pingpong on a
# DPDK net_af_packet port on dpdk0 (client), SEND ping-pong, capture on the
# bridge side of dpdk0, every ICRC checked by the peer kit's own checker.
# Not in CI (the guest is emulated: minutes); a release check.
#   test/interop/rxe-pingpong.sh [SIZE [MTU [ITERS]]]     (default 8192 1024 20)
# Needs ../shared/rxe-peer (README there) and root.
set -euo pipefail
cd "$(dirname "$0")/../.."
size=${1:-8192} mtu=${2:-1024} iters=${3:-20}
peer=$(cd ../shared/rxe-peer && pwd)
bin=build/examples/rc_pingpong/srnic-rc-pingpong
[ -x "$bin" ] || { echo "build first: usertools/srnic build" >&2; exit 1; }
[ -f "$peer/build/rootfs.img" ] || (cd "$peer" && ./build-image.sh)
ip netns exec rxenet true 2>/dev/null && ip -n rxenet link show rxtap-A >/dev/null 2>&1 ||
	(cd "$peer" && ./start-vm.sh A 10.77.0.2/24 9000)
pcap=$(mktemp --suffix=.pcap)
(cd "$peer" && ./guest-run.sh A 'pkill ibv_rc_pingpong; true')
job=$(cd "$peer" && ./guest-run.sh -b A "ibv_rc_pingpong -d rxe0 -g 1 -s $size -m $mtu -n $iters")
(cd "$peer" && ./guest-run.sh A 'for i in $(seq 150); do ss -ltn | grep -q ":18515 " && exit 0; sleep 0.1; done; exit 1')
ip netns exec rxenet tcpdump -i dpdk0-br -w "$pcap" -U 'udp port 4791 or arp' 2>/dev/null &
dump=$!
sleep 1
rc=0
timeout 60 ip netns exec rxenet "$bin" -l 0 --no-pci --no-huge -m 512 --file-prefix srnic-interop \
	--log-level=lib.eal:error --no-telemetry --vdev=net_af_packet0,iface=dpdk0 -- \
	--ip 10.77.0.10 -s "$size" -m "$mtu" -n "$iters" 10.77.0.2 || rc=$?
echo "--- guest (rdma_rxe, ibv_rc_pingpong):"
(cd "$peer" && ./guest-run.sh -w "$job" -t 30 A) || rc=$?
sleep 1
kill "$dump" 2>/dev/null || true
wait "$dump" 2>/dev/null || true
/usr/bin/python3 "$peer/tests/check-icrc.py" "$pcap" || rc=$?
echo "capture: $pcap"
exit "$rc"
