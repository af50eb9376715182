/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive checks and the address vector on the wire:
 * the BTH P_Key against the QP's (a mismatch dropped and counted, the
 * default partition's limited member accepted), BTH.SE on SEND and WRITE
 * with immediate and its record beside the receive CQE, the AV's hop limit
 * and flow label in the IP and UDP headers (Linux's zero-flow-label rule),
 * and sgid_index 0 refused. Every check reads the captured frames.
 */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "e2e_fixture.h"
#include "cq.h" /* srnic_cq_solicited(): the engine's record, no public API yet */

#define PSN_A 2000u
#define PSN_B 7000u
#define LEN 4096u
#define WLEN 64u

static struct rte_mempool *pool;
static uint16_t inj_ip_id;

static int64_t
stat(int side, const char *name)
{
	int64_t v = srnic_dev_stat(E->p.dev[side], name);

	assert_true(v >= 0);
	return v;
}

static uint32_t
qpn(int side)
{
	return srnic_qp_num(E->qp[side]);
}

/* Linux's port from a flow label, written out here (not srnic's). */
static uint16_t
ref_sport(uint32_t fl)
{
	return (uint16_t)(0xC000 | ((fl & 0x3FFF) ^ ((fl >> 14) & 0x3F)));
}

static uint32_t
ref_flow_label(uint32_t a, uint32_t b)
{
	uint64_t v = (uint64_t)a * b;

	v ^= v >> 20;
	v ^= v >> 40;
	return (uint32_t)(v & 0xFFFFF);
}

/* A WRITE ONLY with AckReq to B's QP at psn, as if A had sent it, with the
 * given BTH P_Key (sealed with it: the ICRC covers the P_Key). */
static void
inject_write(uint32_t psn, uint16_t pkey, uint64_t va, uint32_t rkey, uint32_t seed)
{
	static const struct rte_ether_addr mac[2] = {
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 } },
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } },
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	const struct srnic_opcode_info *oi = srnic_opcode_info(SRNIC_OP_RC_WRITE_ONLY);
	struct srnic_route r;
	union ibv_gid g;
	uint8_t *bth, *reth;
	void *p;

	assert_non_null(m);
	memset(&r, 0, sizeof(r));
	r.src_mac = mac[0];
	r.dst_mac = mac[1];
	r.ip_ver = 4;
	r.ttl = 64;
	assert_int_equal(srnic_dev_gid(E->p.dev[0], SRNIC_GID_INDEX_IP, &g), 0);
	memcpy(r.src_ip, &g.raw[12], 4);
	assert_int_equal(srnic_dev_gid(E->p.dev[1], SRNIC_GID_INDEX_IP, &g), 0);
	memcpy(r.dst_ip, &g.raw[12], 4);
	r.udp_sport = srnic_roce_sport(qpn(0), qpn(1));
	bth = srnic_pkt_init(m, &r, SRNIC_OP_RC_WRITE_ONLY, inj_ip_id++);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, qpn(1));
	srnic_bth_set_psn(bth, psn);
	srnic_bth_set_ackreq(bth, true);
	srnic_bth_set_pkey(bth, pkey);
	reth = bth + oi->offset[SRNIC_HDR_RETH];
	srnic_reth_set_va(reth, va);
	srnic_reth_set_rkey(reth, rkey);
	srnic_reth_set_len(reth, WLEN);
	p = rte_pktmbuf_append(m, WLEN);
	assert_non_null(p);
	srnic_test_fill(p, WLEN, seed);
	assert_int_equal(srnic_pkt_finish(m, pool), 0);
	assert_int_equal(rte_eth_tx_burst(E->p.port[0], 0, &m, 1), 1);
	e2e_settle(8);
}

/* Frames B sent since the last e2e_reset(). */
static uint32_t
b_frames(void)
{
	uint32_t idx[16];

	return e2e_pkts_from(1, idx, RTE_DIM(idx));
}

/* A P_Key of another partition, partition 0 (invalid), or another
 * partition's limited member: dropped without an answer and counted, the
 * memory untouched; the default partition's limited member 0x7FFF matches
 * the QP's full-member 0xFFFF: written and ACKed. */
static void
test_pkey(void **state)
{
	static const uint16_t bad[] = { 0x8001, 0x8000, 0x7FFE, 0x0000 };
	struct e2e_bufs b;
	uint8_t ref[WLEN], zero[WLEN];
	int64_t drops = stat(1, "rx_bad_pkey");
	uint32_t i, idx[4];

	RTE_SET_USED(state);
	e2e_bufs_new(&b, LEN, IBV_ACCESS_LOCAL_WRITE);
	memset(zero, 0, sizeof(zero));
	e2e_reset();
	for (i = 0; i < RTE_DIM(bad); i++) {
		inject_write(PSN_A, bad[i], (uintptr_t)b.r, srnic_mr_rkey(b.rmr), 5);
		assert_int_equal(stat(1, "rx_bad_pkey") - drops, i + 1);
		assert_int_equal(b_frames(), 0);
		assert_memory_equal(b.r, zero, WLEN);
	}
	inject_write(PSN_A, 0x7FFF, (uintptr_t)b.r, srnic_mr_rkey(b.rmr), 6);
	assert_int_equal(stat(1, "rx_bad_pkey") - drops, RTE_DIM(bad));
	assert_int_equal(e2e_pkts_from(1, idx, RTE_DIM(idx)), 1);
	assert_int_equal(E->pkts[idx[0]].opcode, SRNIC_OP_RC_ACK);
	assert_int_equal(E->pkts[idx[0]].psn, PSN_A);
	srnic_test_fill(ref, WLEN, 6);
	assert_memory_equal(b.r, ref, WLEN);
	/* and what srnic sends carries the default key */
	assert_int_equal(srnic_bth_pkey(e2e_bth(&E->pkts[idx[0]])), SRNIC_PKEY_DEFAULT);
}

/* BTH.SE on the last packet of a solicited SEND or WRITE with immediate,
 * never on a plain WRITE nor on an unsolicited message; B records it
 * beside each receive completion. */
static void
test_solicited_write_imm(void **state)
{
	struct e2e_bufs b;
	struct ibv_sge s;
	uint32_t i, se_psn[8], nse = 0;
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	e2e_qps_renew(&(struct e2e_conf){ .mtu = IBV_MTU_1024, .psn = { PSN_A, PSN_B } });
	e2e_bufs_new(&b, 8192, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 1, 2);
	for (i = 0; i < 3; i++)
		e2e_bufs_recv(&b, E->qp[1], 100 + i, 0, 4096);
	e2e_reset();
	s = (struct ibv_sge){ .addr = (uintptr_t)b.l, .length = 3000,
			      .lkey = srnic_mr_lkey(b.lmr) };
	/* PSNs: 2000..2002 (WRITE_IMM, SE), 2003 (WRITE_IMM), 2004 (WRITE,
	 * flag ignored), 2005 (SEND, SE) */
	assert_int_equal(srnic_test_post_send_imm(E->qp[0], IBV_WR_RDMA_WRITE_WITH_IMM, 1, &s, 1,
						  (uintptr_t)b.r, srnic_mr_rkey(b.rmr),
						  rte_cpu_to_be_32(11),
						  IBV_SEND_SIGNALED | IBV_SEND_SOLICITED), 0);
	s.length = 100;
	assert_int_equal(srnic_test_post_send_imm(E->qp[0], IBV_WR_RDMA_WRITE_WITH_IMM, 2, &s, 1,
						  (uintptr_t)b.r, srnic_mr_rkey(b.rmr),
						  rte_cpu_to_be_32(12), IBV_SEND_SIGNALED), 0);
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 3, &s, 1, (uintptr_t)b.r, srnic_mr_rkey(b.rmr),
		    IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	e2e_post_op(0, IBV_WR_SEND, 4, &s, 1, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	e2e_wait_wc(0, 4);
	e2e_wait_wc(1, 3);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side == 0 && srnic_bth_se(e2e_bth(k))) {
			assert_true(nse < RTE_DIM(se_psn));
			se_psn[nse++] = k->psn;
		}
	}
	assert_int_equal(nse, 2);
	assert_int_equal(se_psn[0], PSN_A + 2);  /* WRITE LAST with IMM */
	assert_int_equal(se_psn[1], PSN_A + 5);  /* SEND ONLY */
	for (i = 0; i < 3; i++) {
		wc = &E->wc[1][i];
		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->wr_id, 100 + i);
	}
	assert_int_equal(E->wc[1][0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(E->wc[1][2].opcode, IBV_WC_RECV);
	assert_true(srnic_cq_solicited(E->cq[1], 0));
	assert_false(srnic_cq_solicited(E->cq[1], 1));
	assert_true(srnic_cq_solicited(E->cq[1], 2));
}

/* Connect side's QP to the other with the GRH fields given: from our GID
 * sgid_index to the peer's GID dgid_index. */
static int
connect_gids(int side, uint8_t sgid_index, int dgid_index, uint8_t hop_limit, uint32_t flow_label,
	     uint8_t tclass)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = E2E_RALL;
	rc = srnic_modify_qp(E->qp[side], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						  IBV_QP_ACCESS_FLAGS);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qpn(1 - side);
	a.rq_psn = side == 0 ? PSN_B : PSN_A;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = hop_limit;
	a.ah_attr.grh.flow_label = flow_label;
	a.ah_attr.grh.traffic_class = tclass;
	assert_int_equal(srnic_dev_gid(E->p.dev[1 - side], dgid_index, &a.ah_attr.grh.dgid), 0);
	rc = srnic_modify_qp(E->qp[side], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
						  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = side == 0 ? PSN_A : PSN_B;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	return srnic_modify_qp(E->qp[side], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
						  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
						  IBV_QP_MAX_QP_RD_ATOMIC);
}

static int
connect_grh(int side, uint8_t sgid_index, uint8_t hop_limit, uint32_t flow_label,
	    uint8_t tclass)
{
	return connect_gids(side, sgid_index, SRNIC_GID_INDEX_IP, hop_limit, flow_label, tclass);
}

/* Both QPs connected from their GID gid to the other's, A's AV with hop
 * limit 7, flow label 0x12345 and traffic class 0xa0, B's zeroed; A's
 * 3000-B WRITE and 1000-B READ complete, their bytes checked. */
static void
write_read(struct e2e_bufs *b, uint8_t gid)
{
	e2e_qps_renew(&(struct e2e_conf){ .no_connect = true });
	assert_int_equal(connect_gids(0, gid, gid, 7, 0x12345, 0xa0), 0);
	assert_int_equal(connect_gids(1, gid, gid, 0, 0, 0), 0);
	e2e_bufs_new(b, LEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(b, 3, 4);
	e2e_reset();
	e2e_bufs_post(b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 3000, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(b, E->qp[0], IBV_WR_RDMA_READ, 2, 3000, 1000, 3000, IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 2)->status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][1].wr_id, 2);
	assert_memory_equal(b->r, b->l, 3000);
	assert_memory_equal(b->l + 3000, b->r + 3000, 1000);
	e2e_settle(4);
}

/* A's AV: hop limit 7, flow label 0x12345, DSCP 0x28: A's frames carry TTL
 * 7, that TOS and the port of that flow label. B's AV is zeroed: TTL 64
 * and the port of the QPNs' flow label, as rxe and the golden captures. A
 * query gives the AV back. */
static void
test_hop_limit_flow_label(void **state)
{
	struct e2e_bufs b;
	struct ibv_qp_attr qa;
	uint32_t i, na = 0, nb = 0;

	RTE_SET_USED(state);
	write_read(&b, SRNIC_GID_INDEX_IP);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];
		const uint8_t *ip = k->data + k->l3_off;

		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
		if (k->side == 0) {
			assert_int_equal(ip[8], 7);      /* TTL */
			assert_int_equal(ip[1], 0xa0);   /* TOS */
			assert_int_equal(k->udp_sport, ref_sport(0x12345));
			na++;
		} else {
			assert_int_equal(ip[8], 64);
			assert_int_equal(ip[1], 0);
			assert_int_equal(k->udp_sport, ref_sport(ref_flow_label(qpn(1), qpn(0))));
			nb++;
		}
	}
	assert_true(na >= 4 && nb >= 2); /* 3 WRITE packets, the READ; ACK, responses */
	assert_int_equal(srnic_query_qp(E->qp[0], &qa, IBV_QP_AV, NULL), 0);
	assert_int_equal(qa.ah_attr.grh.hop_limit, 7);
	assert_int_equal(qa.ah_attr.grh.flow_label, 0x12345);
	assert_int_equal(qa.ah_attr.grh.traffic_class, 0xa0);
	assert_int_equal(qa.ah_attr.grh.sgid_index, SRNIC_GID_INDEX_IP);
}

/* An AV's source GID must be of its destination's family: GID 0 (fe80::
 * from the MAC) with an IPv4 peer is refused, as an index past the table. */
static void
test_sgid_index(void **state)
{
	union ibv_gid g;

	RTE_SET_USED(state);
	assert_int_equal(srnic_dev_gid(E->p.dev[0], SRNIC_GID_INDEX_LL, &g), 0);
	assert_int_equal(g.raw[0], 0xfe);
	assert_int_equal(g.raw[1], 0x80);
	e2e_qps_renew(&(struct e2e_conf){ .no_connect = true });
	assert_int_equal(connect_grh(0, SRNIC_GID_INDEX_LL, 64, 0, 0), -EINVAL);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_INIT);
	assert_int_equal(connect_grh(0, SRNIC_GID_TBL_LEN, 64, 0, 0), -EINVAL);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_INIT);
	assert_int_equal(connect_gids(0, SRNIC_GID_INDEX_IP, SRNIC_GID_INDEX_LL, 64, 0, 0), -EINVAL);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_INIT);
}

/* RC from GID 0 on IPv4 devices, as rdma-core's tests and libfabric take
 * it by default: RoCEv2 over IPv6 link-local, the peer's MAC found by
 * neighbour discovery over the ring (no static entry for fe80::). A 3000-B
 * WRITE and a 1000-B READ land byte for byte; every transport frame of
 * either side is IPv6 from its link-local GID to the other's, A's with
 * the AV's hop limit 7, traffic class 0xa0 and flow label 0x12345 in the
 * header; the QP's AV reads back sgid_index 0. */
static void
test_sgid_link_local(void **state)
{
	union ibv_gid ll[2];
	struct e2e_bufs b;
	struct ibv_qp_attr qa;
	uint32_t i, na = 0, nb = 0, nd = 0;

	RTE_SET_USED(state);
	for (i = 0; i < 2; i++)
		assert_int_equal(srnic_dev_gid(E->p.dev[i], SRNIC_GID_INDEX_LL, &ll[i]), 0);
	write_read(&b, SRNIC_GID_INDEX_LL);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];
		const uint8_t *ip = k->data + k->l3_off;
		uint32_t vtc;

		if (k->parse_rc != SRNIC_PARSE_OK) {
			nd++; /* ARP or ND: not RoCE */
			continue;
		}
		assert_int_equal(ip[0] >> 4, 6);
		vtc = (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 | (uint32_t)ip[2] << 8 | ip[3];
		assert_memory_equal(ip + 8, ll[k->side].raw, 16);      /* source */
		assert_memory_equal(ip + 24, ll[1 - k->side].raw, 16); /* destination */
		if (k->side == 0) {
			assert_int_equal(ip[7], 7);                     /* hop limit */
			assert_int_equal((vtc >> 20) & 0xff, 0xa0);     /* traffic class */
			assert_int_equal(vtc & 0xfffff, 0x12345);       /* flow label */
			assert_int_equal(k->udp_sport, ref_sport(0x12345));
			na++;
		} else {
			assert_int_equal(ip[7], 64);
			nb++;
		}
	}
	assert_true(na >= 4 && nb >= 2);
	assert_true(nd >= 2); /* B's solicitation for A's fe80:: and A's advertisement, at least */
	assert_int_equal(srnic_query_qp(E->qp[0], &qa, IBV_QP_AV, NULL), 0);
	assert_int_equal(qa.ah_attr.grh.sgid_index, SRNIC_GID_INDEX_LL);
	assert_memory_equal(qa.ah_attr.grh.dgid.raw, ll[1].raw, 16);
}

static int
group_setup(void **state)
{
	if (e2e_group_setup(state) != 0)
		return -1;
	pool = rte_pktmbuf_pool_create("e2e_wirechecks", 511, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
	return pool == NULL ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pkey, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_solicited_write_imm, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_hop_limit_flow_label, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_sgid_index, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_sgid_link_local, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_wirechecks", tests, group_setup,
					   e2e_group_teardown);
}
