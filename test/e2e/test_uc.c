/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UC end to end over the net_ring pair at path MTU 1024: SEND and RDMA
 * WRITE, with and without immediate, split FIRST/MIDDLE/LAST; no ACK ever
 * comes back and each WR completes once sent. A lost MIDDLE (the loss
 * hook drops it before B sees it) drops exactly its message: the next
 * message arrives whole, into the receive WQE the dropped one had taken
 * (IBTA 9.7.5.x for UC, rxe). Access errors, and a SEND longer than its
 * receive WQE, drop the message and leave the QP in RTS.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "e2e_fixture.h"

#define PMTU 1024

/* e2e_bufs_post() with immediate wr_id (big endian on the wire) */
static void
post_imm(const struct e2e_bufs *b, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off,
	 uint32_t len, uint32_t roff)
{
	struct ibv_sge s = { .addr = (uintptr_t)b->l + off, .length = len,
			     .lkey = srnic_mr_lkey(b->lmr) };

	assert_int_equal(srnic_test_post_send_imm(E->qp[0], op, wr_id, &s, 1,
						  (uintptr_t)b->r + roff, srnic_mr_rkey(b->rmr),
						  rte_cpu_to_be_32((uint32_t)wr_id),
						  IBV_SEND_SIGNALED), 0);
}
#define MSG 3000 /* three packets */

static int64_t
stat1(int side, const char *name)
{
	return srnic_dev_stat(E->p.dev[side], name);
}

/* side's UC QP to the other's, from our GID gid to the peer's GID gid. */
static void
uc_connect_gid(int side, uint32_t sq_psn, uint32_t rq_psn, uint8_t gid)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(srnic_modify_qp(E->qp[side], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
							  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = srnic_qp_num(E->qp[1 - side]);
	a.rq_psn = rq_psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = gid;
	assert_int_equal(srnic_dev_gid(E->p.dev[1 - side], gid, &a.ah_attr.grh.dgid), 0);
	assert_int_equal(srnic_modify_qp(E->qp[side], &a, IBV_QP_STATE | IBV_QP_AV |
							  IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
							  IBV_QP_RQ_PSN), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	assert_int_equal(srnic_modify_qp(E->qp[side], &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

static void
uc_connect(int side, uint32_t sq_psn, uint32_t rq_psn)
{
	uc_connect_gid(side, sq_psn, rq_psn, SRNIC_GID_INDEX_IP);
}

static int
uc_setup(void **state)
{
	struct e2e_conf c = { .qp_type = IBV_QPT_UC, .no_connect = true, .mtu = IBV_MTU_1024 };

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	E->pmtu = PMTU;
	uc_connect(0, 100, 200);
	uc_connect(1, 200, 100);
	return 0;
}

/* The opcodes A sent since the last reset, and their PSNs consecutive from
 * psn0. Returns the count. */
static uint32_t
a_opcodes(uint8_t *ops, uint32_t max, uint32_t psn0)
{
	uint32_t idx[64], n = e2e_pkts_from(0, idx, RTE_DIM(idx)), i;

	assert_true(n <= max);
	for (i = 0; i < n; i++) {
		const struct e2e_pkt *k = &E->pkts[idx[i]];

		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
		assert_int_equal(k->psn, psn0 + i);
		assert_int_equal(k->dqpn, srnic_qp_num(E->qp[1]));
		ops[i] = k->opcode;
	}
	return n;
}

static void
test_uc_send_write(void **state)
{
	static const uint8_t want[] = {
		SRNIC_OP_UC_SEND_FIRST, SRNIC_OP_UC_SEND_MIDDLE, SRNIC_OP_UC_SEND_LAST,
		SRNIC_OP_UC_SEND_ONLY_IMM,
		SRNIC_OP_UC_WRITE_FIRST, SRNIC_OP_UC_WRITE_MIDDLE, SRNIC_OP_UC_WRITE_LAST,
		SRNIC_OP_UC_WRITE_FIRST, SRNIC_OP_UC_WRITE_MIDDLE, SRNIC_OP_UC_WRITE_LAST_IMM,
		SRNIC_OP_UC_WRITE_ONLY,
	};
	struct e2e_bufs b;
	uint8_t ops[64];
	uint32_t idx[8];
	int i;

	RTE_SET_USED(state);
	e2e_bufs_new(&b, 16384, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 1, 2);
	e2e_bufs_recv(&b, E->qp[1], 10, 0, 4096);
	e2e_bufs_recv(&b, E->qp[1], 11, 4096, 4096);
	e2e_bufs_recv(&b, E->qp[1], 12, 8192, 4096);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 1, 0, MSG, 0, IBV_SEND_SIGNALED);
	post_imm(&b, IBV_WR_SEND_WITH_IMM, 2, 3000, 10, 0);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 3, 4000, MSG, 0, IBV_SEND_SIGNALED);
	post_imm(&b, IBV_WR_RDMA_WRITE_WITH_IMM, 4, 8000, 2500, 5000);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 5, 12000, 100, 9000, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->nwc[0] == 5 && E->nwc[1] == 3);
	e2e_settle(4);
	assert_int_equal(a_opcodes(ops, sizeof(ops), 100), RTE_DIM(want));
	assert_memory_equal(ops, want, sizeof(want));
	assert_int_equal(e2e_pkts_from(1, idx, 8), 0); /* no ACK, ever */
	for (i = 0; i < 5; i++) {
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][i].wr_id, (uint64_t)(i + 1));
	}
	assert_int_equal(E->wc[1][0].wr_id, 10);
	assert_int_equal(E->wc[1][0].opcode, IBV_WC_RECV);
	assert_int_equal(E->wc[1][0].byte_len, MSG);
	assert_int_equal(E->wc[1][0].src_qp, srnic_qp_num(E->qp[0]));
	assert_memory_equal(b.v, b.l, MSG);
	assert_int_equal(E->wc[1][1].wr_id, 11);
	assert_int_equal(E->wc[1][1].byte_len, 10);
	assert_int_equal(E->wc[1][1].wc_flags, IBV_WC_WITH_IMM);
	assert_int_equal(E->wc[1][1].imm_data, rte_cpu_to_be_32(2));
	assert_memory_equal(b.v + 4096, b.l + 3000, 10);
	assert_int_equal(E->wc[1][2].wr_id, 12);
	assert_int_equal(E->wc[1][2].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(E->wc[1][2].byte_len, 2500);
	assert_int_equal(E->wc[1][2].imm_data, rte_cpu_to_be_32(4));
	assert_memory_equal(b.r, b.l + 4000, MSG);
	assert_memory_equal(b.r + 5000, b.l + 8000, 2500);
	assert_memory_equal(b.r + 9000, b.l + 12000, 100);
	assert_int_equal(stat1(1, "rx_uc_pkts"), RTE_DIM(want));
	/* RC's machinery never ran: no ACK timer, no responder answers */
	assert_int_equal(stat1(0, "retry_timeout"), 0);
	assert_int_equal(stat1(1, "resp_ack_sent"), 0);
}

/* A UC SEND completes once its last packet is queued, before the TX flush
 * seals its packets and the port reads them: the application may refill
 * the buffer at the CQE (test_ud's test_ud_send_buffer_reuse for UD). A's
 * port's TX callback plays it: when the CQE is in A's CQ, it overwrites
 * the buffer before the port takes the frames. B gets the posted bytes. */
static struct {
	uint8_t *src;
	bool cqe_seen;
} uc_reuse;

static uint16_t
uc_reuse_tx_cb(uint16_t port_id, uint16_t queue, struct rte_mbuf **pkts, uint16_t nb, void *arg)
{
	struct ibv_wc wc;

	RTE_SET_USED(port_id);
	RTE_SET_USED(queue);
	RTE_SET_USED(pkts);
	RTE_SET_USED(arg);
	while (srnic_poll_cq(E->cq[0], 1, &wc) == 1)
		if (wc.wr_id == 7 && wc.status == IBV_WC_SUCCESS && !uc_reuse.cqe_seen) {
			uc_reuse.cqe_seen = true;
			memset(uc_reuse.src, 0xEE, MSG);
		}
	return nb;
}

static void
test_uc_send_buffer_reuse(void **state)
{
	const struct rte_eth_rxtx_callback *cb;
	uint8_t *want = malloc(MSG);
	struct e2e_bufs b;

	RTE_SET_USED(state);
	assert_non_null(want);
	e2e_bufs_new(&b, 8192, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 5, 6);
	memcpy(want, b.l, MSG);
	memset(&uc_reuse, 0, sizeof(uc_reuse));
	uc_reuse.src = b.l;
	cb = rte_eth_add_tx_callback(E->p.port[0], 0, uc_reuse_tx_cb, NULL);
	assert_non_null(cb);
	e2e_bufs_recv(&b, E->qp[1], 20, 0, 4096);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 7, 0, MSG, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(uc_reuse.cqe_seen);
	e2e_settle(4);
	assert_int_equal(rte_eth_remove_tx_callback(E->p.port[0], 0, cb), 0);
	assert_true(uc_reuse.cqe_seen);
	assert_int_equal(stat1(1, "rx_icrc_err"), 0);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, MSG);
	assert_memory_equal(b.v, want, MSG);
	assert_true(stat1(0, "req_ud_uc_copy") >= 3);
	free(want);
}

/* A lost SEND MIDDLE: that message is gone, the next one lands whole in
 * the same receive WQE, the one after in the next. */
static void
test_uc_lost_send_middle(void **state)
{
	struct e2e_bufs b;
	int64_t gap = stat1(1, "rx_uc_psn_gap"), mdrop = stat1(1, "rx_uc_msg_drop");
	int64_t pdrop = stat1(1, "rx_uc_drop");

	RTE_SET_USED(state);
	e2e_bufs_new(&b, 16384, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 5, 6);
	e2e_bufs_recv(&b, E->qp[1], 20, 0, 4096);
	e2e_bufs_recv(&b, E->qp[1], 21, 4096, 4096);
	e2e_drop_arm(0, SRNIC_OP_UC_SEND_MIDDLE, 0, 1);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 1, 0, MSG, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 2, 4096, MSG, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->nwc[0] == 2 && E->nwc[1] == 1);
	e2e_settle(4);
	assert_int_equal(E->drop.dropped, 1);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].wr_id, 20);     /* the WQE message 1 had taken */
	assert_int_equal(E->wc[1][0].byte_len, MSG);
	assert_memory_equal(b.v, b.l + 4096, MSG);   /* message 2's bytes */
	assert_int_equal(stat1(1, "rx_uc_psn_gap"), gap + 1);
	assert_int_equal(stat1(1, "rx_uc_msg_drop"), mdrop + 1);
	assert_int_equal(stat1(1, "rx_uc_drop"), pdrop + 1); /* message 1's LAST */
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	/* and on: message 3 into the next WQE */
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 3, 8192, 2000, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->nwc[1] == 2);
	assert_int_equal(E->wc[1][1].wr_id, 21);
	assert_int_equal(E->wc[1][1].byte_len, 2000);
	assert_memory_equal(b.v + 4096, b.l + 8192, 2000);
}

/* A lost WRITE MIDDLE of a WRITE with IMM: no completion for it; the next
 * WRITE with IMM completes the receive WQE. */
static void
test_uc_lost_write_middle(void **state)
{
	struct e2e_bufs b;

	RTE_SET_USED(state);
	e2e_bufs_new(&b, 16384, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 7, 8);
	e2e_bufs_recv(&b, E->qp[1], 30, 0, 64);
	e2e_drop_arm(0, SRNIC_OP_UC_WRITE_MIDDLE, 0, 1);
	post_imm(&b, IBV_WR_RDMA_WRITE_WITH_IMM, 1, 0, MSG, 0);
	post_imm(&b, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 4096, MSG, 4096);
	E2E_RUN_UNTIL(E->nwc[0] == 2 && E->nwc[1] == 1);
	e2e_settle(4);
	assert_int_equal(E->drop.dropped, 1);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].wr_id, 30);
	assert_int_equal(E->wc[1][0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(E->wc[1][0].imm_data, rte_cpu_to_be_32(2));
	assert_memory_equal(b.r + 4096, b.l + 4096, MSG);
	/* message 1: its FIRST landed, its LAST did not */
	assert_memory_equal(b.r, b.l, PMTU);
	assert_memory_not_equal(b.r + 2 * PMTU, b.l + 2 * PMTU, MSG - 2 * PMTU);
}

/* What RC NAKs, UC drops: a bad R_Key, no receive WQE; the QP stays up.
 * READ and atomics are not UC operations. */
static void
test_uc_errors(void **state)
{
	struct e2e_bufs b;
	struct ibv_sge sge;
	int64_t err = stat1(1, "rx_uc_err_drop"), norecv = stat1(1, "rx_uc_no_recv_wqe");
	uint8_t before[MSG];

	RTE_SET_USED(state);
	e2e_bufs_new(&b, 16384, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 9, 10);
	memcpy(before, b.r, MSG);
	sge.addr = (uintptr_t)b.l;
	sge.length = MSG;
	sge.lkey = srnic_mr_lkey(b.lmr);
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 1, &sge, 1, (uintptr_t)b.r, srnic_mr_rkey(b.rmr) ^ 0x55,
		    IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(stat1(1, "rx_uc_err_drop") == err + 1 && E->nwc[0] == 1);
	e2e_settle(4);
	assert_memory_equal(b.r, before, MSG);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS); /* the sender cannot know */
	/* a SEND with no receive WQE posted */
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 2, 0, 100, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(stat1(1, "rx_uc_no_recv_wqe") == norecv + 1);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	/* and the QP goes on */
	e2e_bufs_recv(&b, E->qp[1], 40, 0, 4096);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 3, 100, 1500, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->nwc[1] == 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, 1500);
	assert_memory_equal(b.v, b.l + 100, 1500);
	/* not UC operations */
	{
		struct ibv_send_wr wr, *bad = NULL;
		uint64_t v = 0;
		struct ibv_sge s8 = { .addr = (uintptr_t)b.l, .length = 8,
				      .lkey = srnic_mr_lkey(b.lmr) };

		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &s8;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_RDMA_READ;
		assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), EINVAL);
		assert_ptr_equal(bad, &wr);
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)&v;
		assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), EINVAL);
	}
}

/* A SEND longer than its receive WQE is dropped (IBTA class D1, rxe):
 * counted, no completion, the QP stays in RTS, nothing past the WQE is
 * written, and the WQE takes the next SEND that fits. A 3000-byte SEND
 * (FIRST, MIDDLE, LAST) into 2000 bytes fails at its MIDDLE; a 1500-byte
 * one (FIRST, LAST) then lands in the same WQE. Before, the
 * WQE completed LOC_LEN_ERR and the QP went to ERR: any peer could kill
 * a UC QP with one long message. */
static void
test_uc_recv_too_small(void **state)
{
	int64_t small = stat1(1, "rx_uc_recv_too_small"), drop = stat1(1, "rx_uc_drop");
	struct e2e_bufs b;
	uint8_t past[512];

	RTE_SET_USED(state);
	e2e_bufs_new(&b, 8192, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 3, 4);
	memcpy(past, b.v + 2000, sizeof(past));
	e2e_bufs_recv(&b, E->qp[1], 50, 0, 2000);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 1, 0, MSG, 0, IBV_SEND_SIGNALED);
	/* the MIDDLE, and the LAST with the message it ends */
	E2E_RUN_UNTIL(stat1(1, "rx_uc_recv_too_small") == small + 1 &&
		      stat1(1, "rx_uc_drop") == drop + 2 && E->nwc[0] == 1);
	e2e_settle(4);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS); /* the sender cannot know */
	assert_int_equal(E->nwc[1], 0);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	assert_memory_equal(b.v + 2000, past, sizeof(past));
	/* the WQE it had taken takes the next message, from its start */
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 2, 4000, 1500, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->nwc[1] == 1 && E->nwc[0] == 2);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].wr_id, 50);
	assert_int_equal(E->wc[1][0].byte_len, 1500);
	assert_memory_equal(b.v, b.l + 4000, 1500);
	assert_int_equal(stat1(1, "rx_uc_recv_too_small"), small + 1);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
}

/* UC from GID 0 of IPv4 devices (RoCEv2 over IPv6 link-local, the MACs
 * by neighbour discovery): a 3000-B SEND and a 2500-B WRITE with
 * immediate land byte for byte with their CQEs; every RoCE frame is IPv6
 * from A's fe80:: to B's, B sends none (no ACK). */
static void
test_uc_link_local(void **state)
{
	union ibv_gid ll[2];
	struct e2e_bufs b;
	uint32_t idx[64], n, i, roce = 0;

	RTE_SET_USED(state);
	for (i = 0; i < 2; i++)
		assert_int_equal(srnic_dev_gid(E->p.dev[i], SRNIC_GID_INDEX_LL, &ll[i]), 0);
	e2e_qps_renew(&(struct e2e_conf){ .qp_type = IBV_QPT_UC, .no_connect = true,
					  .mtu = IBV_MTU_1024 });
	E->pmtu = PMTU;
	uc_connect_gid(0, 100, 200, SRNIC_GID_INDEX_LL);
	uc_connect_gid(1, 200, 100, SRNIC_GID_INDEX_LL);
	e2e_bufs_new(&b, 16384, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 7, 8);
	e2e_reset();
	e2e_bufs_recv(&b, E->qp[1], 10, 0, 4096);
	e2e_bufs_recv(&b, E->qp[1], 11, 4096, 4096);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_SEND, 1, 0, MSG, 0, IBV_SEND_SIGNALED);
	post_imm(&b, IBV_WR_RDMA_WRITE_WITH_IMM, 2, 8000, 2500, 5000);
	E2E_RUN_UNTIL(E->nwc[0] == 2 && E->nwc[1] == 2);
	e2e_settle(4);
	for (i = 0; i < 2; i++)
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].wr_id, 10);
	assert_int_equal(E->wc[1][0].byte_len, MSG);
	assert_memory_equal(b.v, b.l, MSG);
	assert_int_equal(E->wc[1][1].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][1].wr_id, 11);
	assert_int_equal(E->wc[1][1].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(E->wc[1][1].imm_data, rte_cpu_to_be_32(2));
	assert_memory_equal(b.r + 5000, b.l + 8000, 2500);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];
		const uint8_t *ip = k->data + k->l3_off;

		if (k->parse_rc != SRNIC_PARSE_OK)
			continue; /* neighbour discovery */
		assert_int_equal(k->side, 0);
		assert_int_equal(ip[0] >> 4, 6);
		assert_memory_equal(ip + 8, ll[0].raw, 16);
		assert_memory_equal(ip + 24, ll[1].raw, 16);
		roce++;
	}
	assert_int_equal(roce, 6); /* SEND 3 packets, WRITE 3 */
	n = e2e_pkts_from(1, idx, RTE_DIM(idx));
	for (i = 0; i < n; i++)
		assert_int_not_equal(E->pkts[idx[i]].parse_rc, SRNIC_PARSE_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_uc_send_write, uc_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_uc_send_buffer_reuse, uc_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_uc_lost_send_middle, uc_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_uc_lost_write_middle, uc_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_uc_errors, uc_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_uc_recv_too_small, uc_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_uc_link_local, uc_setup, e2e_teardown),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
