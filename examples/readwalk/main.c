/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The READ walk: two srnic endpoints in one process over a net_ring pair.
 * Side A posts an 8 KiB RDMA READ (PMTU 4096, send PSN 2000) of side B's
 * registered memory; every packet on the wire and the completion are
 * printed as they happen. One lcore drives both engines.
 *
 *   srnic-readwalk [EAL args] [-- --size BYTES --mtu 256|512|1024|2048|4096]
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_malloc.h>

#include "srnic.h"
#include "srnic_link.h"
#include "srnic_pair.h"
#include "srnic_wire.h"

#define WALK_PSN 2000
#define WALK_TIMEOUT_S 5

static uint64_t t0;

static void
on_packet(uint16_t port_id, int dir, const struct rte_mbuf *m, uint64_t tsc, void *arg)
{
	const struct srnic_pair *p = arg;
	char line[256];

	RTE_SET_USED(dir);
	srnic_pkt_describe((struct rte_mbuf *)(uintptr_t)m, line, sizeof(line));
	printf("  %8.3f us  %s  %s\n", (double)(tsc - t0) * 1e6 / rte_get_tsc_hz(),
	       port_id == p->port[1] ? "A -> B" : "B -> A", line);
}

static int
parse_args(int argc, char **argv, uint32_t *size, enum ibv_mtu *mtu)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "mtu", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			*size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'm': {
			unsigned long v = strtoul(optarg, NULL, 0);

			*mtu = v == 256 ? IBV_MTU_256 : v == 512 ? IBV_MTU_512 :
			       v == 1024 ? IBV_MTU_1024 : v == 2048 ? IBV_MTU_2048 : IBV_MTU_4096;
			break;
		}
		default:
			fprintf(stderr, "usage: %s [EAL] -- [--size BYTES] [--mtu BYTES]\n", argv[0]);
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct srnic_pair p;
	struct srnic_pair_qp_conf qc = { .path_mtu = IBV_MTU_4096, .psn = { WALK_PSN, 7000 },
					 .max_rd_atomic = 16, .timeout = 14, .retry_cnt = 7,
					 .rnr_retry = 7, .min_rnr_timer = 12 };
	struct srnic_cq *cq[2];
	struct srnic_qp *qp[2];
	struct srnic_mr *lmr, *rmr;
	struct srnic_capture *cap[2];
	uint8_t *local, *remote;
	uint32_t size = 8192, i;
	struct ibv_wc wc;
	int rc, n = 0, bad = 0;
	uint64_t deadline;

	rc = srnic_eal_init(argc, argv);
	if (rc < 0)
		return 1;
	srnic_eal_remove_at_exit(); /* nothing left in /var/run/dpdk */
	if (parse_args(argc - rc, argv + rc, &size, &qc.path_mtu) != 0)
		return 1;
	if (srnic_pair_create(&p, "walk", 1, 9000) != 0) {
		fprintf(stderr, "cannot create the in-process pair\n");
		return 1;
	}
	for (i = 0; i < 2; i++) {
		struct srnic_qp_init_attr qa = { .max_send_wr = 16, .max_recv_wr = 16,
						 .max_send_sge = 3, .max_recv_sge = 3,
						 .qp_type = IBV_QPT_RC };

		cq[i] = srnic_create_cq(p.dev[i], 64, srnic_dev_engine(p.dev[i], 0));
		qa.send_cq = qa.recv_cq = cq[i];
		qp[i] = srnic_create_qp(p.pd[i], &qa);
		if (cq[i] == NULL || qp[i] == NULL)
			return 1;
	}
	if (srnic_pair_connect(&p, qp[0], qp[1], &qc) != 0)
		return 1;
	local = rte_zmalloc("walk_local", size + 1, 64);
	remote = rte_malloc("walk_remote", size + 1, 64);
	for (i = 0; i < size; i++)
		remote[i] = (uint8_t)(i * 7 + 3);
	lmr = srnic_reg_mr(p.pd[0], local, size, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(p.pd[1], remote, size, IBV_ACCESS_REMOTE_READ);
	if (lmr == NULL || rmr == NULL)
		return 1;
	cap[0] = srnic_capture_start(p.port[0], SRNIC_CAPTURE_RX, on_packet, &p);
	cap[1] = srnic_capture_start(p.port[1], SRNIC_CAPTURE_RX, on_packet, &p);

	printf("srnic READ walk: A (QPN %#x, 127.0.0.1) reads %u bytes of B's memory "
	       "(QPN %#x, 127.0.0.2), path MTU %u, A's next send PSN %u\n",
	       srnic_qp_num(qp[0]), size, srnic_qp_num(qp[1]), 128u << qc.path_mtu, WALK_PSN);
	printf("  1. A posts RDMA_READ: remote va %p rkey %#x -> local %p lkey %#x, signaled\n",
	       (void *)remote, srnic_mr_rkey(rmr), (void *)local, srnic_mr_lkey(lmr));
	{
		struct ibv_sge sge = { .addr = (uintptr_t)local, .length = size,
				       .lkey = srnic_mr_lkey(lmr) };
		struct ibv_send_wr wr = { .wr_id = 0x2000, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED }, *bad_wr;

		wr.wr.rdma.remote_addr = (uintptr_t)remote;
		wr.wr.rdma.rkey = srnic_mr_rkey(rmr);
		if (srnic_post_send(qp[0], &wr, &bad_wr) != 0)
			return 1;
	}
	printf("  2-4. on the wire (each packet as its receiver sees it):\n");
	t0 = rte_rdtsc();
	deadline = t0 + WALK_TIMEOUT_S * rte_get_tsc_hz();
	while (n == 0 && rte_rdtsc() < deadline) {
		srnic_engine_poll(srnic_dev_engine(p.dev[0], 0));
		srnic_engine_poll(srnic_dev_engine(p.dev[1], 0));
		n = srnic_poll_cq(cq[0], 1, &wc);
	}
	if (n != 1) {
		printf("  no completion within %d s\n", WALK_TIMEOUT_S);
		return 1;
	}
	for (i = 0; i < size; i++)
		bad += local[i] != remote[i];
	printf("  5. A's CQE: wr_id %#" PRIx64 " status %s opcode %s byte_len %u; "
	       "%u bytes in A's buffer, %d differ from B's\n",
	       wc.wr_id, srnic_wc_status_str(wc.status),
	       wc.opcode == IBV_WC_RDMA_READ ? "RDMA_READ" : "?", wc.byte_len, size, bad);
	printf("  A's next request will take PSN %u; READ responses sent zero-copy: %" PRId64
	       " segments attached, %" PRId64 " copied; ACK packets sent by B: %" PRId64 "\n",
	       srnic_psn_add(WALK_PSN, size == 0 ? 1 : (size + (128u << qc.path_mtu) - 1) /
							   (128u << qc.path_mtu)),
	       srnic_dev_stat(p.dev[1], "resp_zc_segs"),
	       srnic_dev_stat(p.dev[1], "resp_zc_copy_fallback"),
	       srnic_dev_stat(p.dev[1], "resp_ack_sent"));
	srnic_capture_stop(cap[0]);
	srnic_capture_stop(cap[1]);
	return (wc.status == IBV_WC_SUCCESS && bad == 0) ? 0 : 1;
}
