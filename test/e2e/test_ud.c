/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD end to end over the net_ring pair: SEND and SEND with immediate
 * with DETH, every frame and every completion checked; the GRH area of
 * the receive buffer against the IP header of the very frame that
 * carried it (IPv4 here, IPv6 on a second pair of IPv6 devices); Q_Key
 * checks and the controlled Q_Key; messages beyond the MTU; two senders
 * to one receiver; address handles (arguments, lifetime, from a
 * completion, a reply built from one).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "e2e_fixture.h"
#include "srnic_param.h"
#include "test_pcap.h"

#define QKEY 0x11223344u
#define UD_PSN 500

static int64_t
stat1(int side, const char *name)
{
	return srnic_dev_stat(E->p.dev[side], name);
}

static int
ud_setup(void **state)
{
	struct e2e_conf c = { .qp_type = IBV_QPT_UD, .no_connect = true, .max_inline = 64 };

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	e2e_ud_up(E->qp[0], QKEY, UD_PSN);
	e2e_ud_up(E->qp[1], QKEY, 9000);
	return 0;
}

/* An AH on side for the other side's address. */
static struct srnic_ah *
ah_to_peer(int side)
{
	struct ibv_ah_attr a;
	struct srnic_ah *ah;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = SRNIC_GID_INDEX_IP;
	assert_int_equal(srnic_dev_gid(E->p.dev[1 - side], SRNIC_GID_INDEX_IP, &a.grh.dgid), 0);
	ah = srnic_create_ah(E->p.pd[side], &a);
	assert_non_null(ah);
	return ah;
}

static int
ud_post(struct srnic_qp *qp, struct srnic_ah *ah, uint32_t rqpn, uint32_t rqkey,
	enum ibv_wr_opcode op, uint64_t wr_id, void *buf, uint32_t len, struct srnic_mr *mr,
	uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len,
			       .lkey = mr != NULL ? srnic_mr_lkey(mr) : 0 };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = rte_cpu_to_be_32(imm);
	wr.wr.ud.ah = srnic_ah_ibv(ah);
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = rqkey;
	return srnic_post_send(qp, &wr, &bad);
}

static void
ud_recv(struct srnic_qp *qp, uint64_t wr_id, void *buf, uint32_t len, struct srnic_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = srnic_mr_lkey(mr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(srnic_post_recv(qp, &wr, &bad), 0);
}

static void
fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

/* The last frame side sent (it must be one). */
static const struct e2e_pkt *
last_from(int side)
{
	uint32_t idx[64], n = e2e_pkts_from(side, idx, RTE_DIM(idx));

	assert_true(n > 0);
	return &E->pkts[idx[n - 1]];
}

/* A's SEND and SEND with IMM to B: frames, GRH area, payload, completions. */
static void
test_ud_send_recv(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint8_t *src = e2e_buf(0, 8192, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 8192, IBV_ACCESS_LOCAL_WRITE, &rmr);
	struct srnic_ah *ah = ah_to_peer(0);
	uint32_t aqpn = srnic_qp_num(E->qp[0]), bqpn = srnic_qp_num(E->qp[1]);
	const struct e2e_pkt *k;
	const struct ibv_wc *wc;
	const uint8_t *deth;
	int i;

	RTE_SET_USED(state);
	fill(src, 8192, 3);
	ud_recv(E->qp[1], 71, dst, 1024, rmr);
	ud_recv(E->qp[1], 72, dst + 1024, 1024, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 1, src, 100, smr, 0), 0);
	E2E_RUN_UNTIL(E->nwc[1] >= 1 && E->nwc[0] >= 1);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND_WITH_IMM, 2, src + 100, 333,
				 smr, 0xabcd), 0);
	E2E_RUN_UNTIL(E->nwc[1] >= 2 && E->nwc[0] >= 2);
	e2e_settle(2);

	/* the sender's completions: right after TX, no ACK on the wire */
	for (i = 0; i < 2; i++) {
		wc = &E->wc[0][i];
		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_SEND);
		assert_int_equal(wc->wr_id, (uint64_t)(i + 1));
		assert_int_equal(wc->qp_num, aqpn);
	}
	{
		uint32_t idx[8];

		assert_int_equal(e2e_pkts_from(1, idx, 8), 0); /* B sent nothing */
		assert_int_equal(e2e_pkts_from(0, idx, 8), 2);
		for (i = 0; i < 2; i++) {
			k = &E->pkts[idx[i]];
			assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
			assert_int_equal(k->opcode, i == 0 ? SRNIC_OP_UD_SEND_ONLY
							   : SRNIC_OP_UD_SEND_ONLY_IMM);
			assert_int_equal(k->psn, UD_PSN + i); /* one PSN per packet */
			assert_int_equal(k->dqpn, bqpn);
			assert_int_equal(k->pay_len, i == 0 ? 100 : 333);
			assert_int_equal(k->udp_sport, srnic_roce_ud_sport(aqpn));
			assert_true(srnic_bth_ackreq(e2e_bth(k)));
			assert_int_equal(srnic_bth_pkey(e2e_bth(k)), 0xFFFF);
			deth = e2e_hdr(k, SRNIC_HDR_DETH);
			assert_int_equal(srnic_deth_qkey(deth), QKEY);
			assert_int_equal(srnic_deth_sqpn(deth), aqpn);
			assert_int_equal(deth[4], 0); /* reserved */
			if (i == 1)
				assert_int_equal(srnic_immdt_be(e2e_hdr(k, SRNIC_HDR_IMMDT)),
						 rte_cpu_to_be_32(0xabcd));
			/* the receive buffer: 20 zero bytes, the IPv4 header, the payload */
			{
				const uint8_t *b = dst + 1024 * i;
				static const uint8_t zero[20];

				assert_memory_equal(b, zero, 20);
				assert_memory_equal(b + 20, k->data + k->l3_off, 20);
				assert_memory_equal(b + SRNIC_GRH_LEN, src + (i == 0 ? 0 : 100),
						    k->pay_len);
			}
		}
	}
	for (i = 0; i < 2; i++) {
		wc = &E->wc[1][i];
		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_RECV);
		assert_int_equal(wc->wr_id, (uint64_t)(71 + i));
		assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + (i == 0 ? 100 : 333));
		assert_int_equal(wc->qp_num, bqpn);
		assert_int_equal(wc->src_qp, aqpn);
		assert_int_equal(wc->pkey_index, 0);
		/* RoCEv2 over IPv4, where mlx5 says it (UCX's ud_verbs reads it) */
		assert_int_equal(wc->sl, SRNIC_WC_SL_ROCE_UDP | SRNIC_WC_SL_ROCE_IPV4);
		assert_int_equal(wc->wc_flags, IBV_WC_GRH | (i == 1 ? IBV_WC_WITH_IMM : 0));
		if (i == 1)
			assert_int_equal(wc->imm_data, rte_cpu_to_be_32(0xabcd));
	}
	assert_int_equal(stat1(1, "rx_ud_pkts"), 2);
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

/* The application that reuses a send buffer as soon as the send's CQE is
 * out: a UD SEND completes once queued for TX, before the engine's TX
 * flush seals it (ICRC) and the port reads it, so its payload must be
 * srnic's own copy by then. Here A's port's TX callback plays that
 * application: it polls A's CQ and, when the CQE is there, overwrites the
 * buffer before the port takes the frame (libfabric's ofi_rxd frees and
 * refills a packet buffer on its send completion: with the payload
 * attached zero-copy, B got the frame with the ICRC of the old bytes over
 * the new, rx_icrc_err, or the new bytes under the old length). */
#define REUSE_LEN 1000          /* beyond SRNIC_TX_COPY_MAX: not copied as a small piece */
#define REUSE_WR_ID 0x5eu

static struct {
	uint8_t *src;
	bool cqe_seen;          /* the CQE was out when the port took the frame */
	uint32_t frames;
} reuse;

static uint16_t
reuse_tx_cb(uint16_t port_id, uint16_t queue, struct rte_mbuf **pkts, uint16_t nb, void *arg)
{
	struct ibv_wc wc;

	RTE_SET_USED(port_id);
	RTE_SET_USED(queue);
	RTE_SET_USED(pkts);
	RTE_SET_USED(arg);
	reuse.frames += nb;
	while (srnic_poll_cq(E->cq[0], 1, &wc) == 1)
		if (wc.wr_id == REUSE_WR_ID && wc.status == IBV_WC_SUCCESS && !reuse.cqe_seen) {
			reuse.cqe_seen = true;
			memset(reuse.src, 0xEE, REUSE_LEN);
		}
	return nb;
}

static void
test_ud_send_buffer_reuse(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint8_t *src = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE, &rmr);
	uint8_t *want = malloc(REUSE_LEN);
	struct srnic_ah *ah = ah_to_peer(0);
	const struct rte_eth_rxtx_callback *cb;

	RTE_SET_USED(state);
	assert_non_null(want);
	fill(src, REUSE_LEN, 41);
	memcpy(want, src, REUSE_LEN);
	memset(&reuse, 0, sizeof(reuse));
	reuse.src = src;
	cb = rte_eth_add_tx_callback(E->p.port[0], 0, reuse_tx_cb, NULL);
	assert_non_null(cb);
	ud_recv(E->qp[1], 81, dst, 2048, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, srnic_qp_num(E->qp[1]), QKEY, IBV_WR_SEND,
				 REUSE_WR_ID, src, REUSE_LEN, smr, 0), 0);
	E2E_RUN_UNTIL(reuse.cqe_seen && reuse.frames >= 1);
	e2e_settle(4);
	assert_int_equal(rte_eth_remove_tx_callback(E->p.port[0], 0, cb), 0);
	assert_int_equal(srnic_destroy_ah(ah), 0);
	/* the test's premise: the buffer was the application's again before
	 * the port took the frame */
	assert_true(reuse.cqe_seen);
	assert_int_equal(stat1(1, "rx_icrc_err"), 0);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, SRNIC_GRH_LEN + REUSE_LEN);
	assert_memory_equal(dst + SRNIC_GRH_LEN, want, REUSE_LEN);
	assert_true(stat1(0, "req_ud_uc_copy") >= 1);
	free(want);
}

/* A Q_Key that is not the receiver's is dropped and counted; the
 * controlled Q_Key (high bit) sends the QP's own. */
static void
test_ud_qkey(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint8_t *src = e2e_buf(0, 256, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE, &rmr);
	struct srnic_ah *ah = ah_to_peer(0);
	uint32_t bqpn = srnic_qp_num(E->qp[1]);
	int64_t qerr = stat1(1, "rx_ud_qkey_err");
	struct ibv_qp_attr qa;
	const struct e2e_pkt *k;

	RTE_SET_USED(state);
	fill(src, 256, 9);
	ud_recv(E->qp[1], 1, dst, 4096, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY + 1, IBV_WR_SEND, 10, src, 64, smr, 0), 0);
	E2E_RUN_UNTIL(stat1(1, "rx_ud_qkey_err") == qerr + 1);
	e2e_settle(2);
	assert_int_equal(E->nwc[1], 0);
	assert_int_equal(E->nwc[0], 1);      /* the sender cannot know */
	assert_int_equal(srnic_deth_qkey(e2e_hdr(last_from(0), SRNIC_HDR_DETH)), QKEY + 1);

	/* controlled: A's own Q_Key goes out (A's is QKEY: accepted) */
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, SRNIC_QKEY_CONTROLLED | 0x5, IBV_WR_SEND, 11,
				 src, 64, smr, 0), 0);
	E2E_RUN_UNTIL(E->nwc[1] == 1);
	k = last_from(0);
	assert_int_equal(srnic_deth_qkey(e2e_hdr(k, SRNIC_HDR_DETH)), QKEY);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_memory_equal(dst + SRNIC_GRH_LEN, src, 64);

	/* a new Q_Key on the sender (RTS -> RTS): the controlled one follows */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.qkey = SRNIC_GSI_QKEY;
	assert_int_equal(srnic_modify_qp(E->qp[0], &qa, IBV_QP_STATE | IBV_QP_QKEY), 0);
	memset(&qa, 0, sizeof(qa));
	assert_int_equal(srnic_query_qp(E->qp[0], &qa, IBV_QP_QKEY, NULL), 0);
	assert_int_equal(qa.qkey, SRNIC_GSI_QKEY);
	ud_recv(E->qp[1], 2, dst, 4096, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, SRNIC_QKEY_CONTROLLED, IBV_WR_SEND, 12, src,
				 64, smr, 0), 0);
	E2E_RUN_UNTIL(stat1(1, "rx_ud_qkey_err") == qerr + 2);
	assert_int_equal(srnic_deth_qkey(e2e_hdr(last_from(0), SRNIC_HDR_DETH)), SRNIC_GSI_QKEY);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

/* Beyond the port's MTU: no packet, a successful completion (C10-93.1.1,
 * rxe); exactly the MTU goes. A datagram larger than the receive buffer
 * (GRH + payload) is dropped and the buffer kept for the next. */
static void
test_ud_mtu(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint32_t pmtu = 4096;
	uint8_t *src = e2e_buf(0, 2 * pmtu, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 2 * pmtu, IBV_ACCESS_LOCAL_WRITE, &rmr);
	struct srnic_ah *ah = ah_to_peer(0);
	uint32_t bqpn = srnic_qp_num(E->qp[1]), idx[8], i;
	int64_t too_long = stat1(0, "req_ud_too_long"), small;
	struct ibv_qp_attr qa;

	RTE_SET_USED(state);
	memset(&qa, 0, sizeof(qa));
	assert_int_equal(srnic_query_qp(E->qp[0], &qa, IBV_QP_PATH_MTU, NULL), 0);
	assert_int_equal(qa.path_mtu, IBV_MTU_4096); /* the port's active MTU */
	fill(src, 2 * pmtu, 1);
	ud_recv(E->qp[1], 1, dst, 2 * pmtu, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 1, src, pmtu + 1, smr, 0),
			 0);
	E2E_RUN_UNTIL(E->nwc[0] == 1);
	e2e_settle(4);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(stat1(0, "req_ud_too_long"), too_long + 1);
	assert_int_equal(e2e_pkts_from(0, idx, 8), 0);
	assert_int_equal(E->nwc[1], 0);

	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 2, src, pmtu, smr, 0), 0);
	E2E_RUN_UNTIL(E->nwc[1] == 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, SRNIC_GRH_LEN + pmtu);
	assert_memory_equal(dst + SRNIC_GRH_LEN, src, pmtu);
	assert_int_equal(e2e_pkts_from(0, idx, 8), 1);
	assert_int_equal(E->pkts[idx[0]].psn, UD_PSN + 1); /* the one not sent took a PSN */

	/* 40 + 100 and 40 + 600 bytes for a 120-byte buffer: class D (rxe),
	 * each dropped and counted, no CQE, B's QP in RTS and the WQE
	 * untouched; the next datagram that fits lands in it */
	small = stat1(1, "rx_ud_recv_too_small");
	memset(dst, 0xEE, 128);
	ud_recv(E->qp[1], 3, dst, 120, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 3, src, 100, smr, 0), 0);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 4, src, 600, smr, 0), 0);
	E2E_RUN_UNTIL(stat1(1, "rx_ud_recv_too_small") == small + 2);
	e2e_settle(4);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	for (i = 0; i < 128; i++)
		assert_int_equal(dst[i], 0xEE);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 5, src + 1000, 80, smr, 0),
			 0);
	E2E_RUN_UNTIL(E->nwc[1] == 2);
	assert_int_equal(E->wc[1][1].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][1].wr_id, 3);
	assert_int_equal(E->wc[1][1].byte_len, SRNIC_GRH_LEN + 80);
	assert_memory_equal(dst + SRNIC_GRH_LEN, src + 1000, 80);
	assert_int_equal(dst[SRNIC_GRH_LEN + 80], 0xEE); /* the WQE ends there */
	assert_int_equal(stat1(1, "rx_ud_recv_too_small"), small + 2);
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

/* Two UD QPs of A send to one of B: each datagram names its sender. */
static void
test_ud_many_to_one(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint8_t *src = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 64 * 256, IBV_ACCESS_LOCAL_WRITE, &rmr);
	struct srnic_qp_init_attr ia = { .send_cq = E->cq[0], .recv_cq = E->cq[0],
					 .max_send_wr = 64, .max_recv_wr = 64,
					 .max_send_sge = 1, .max_recv_sge = 1,
					 .qp_type = IBV_QPT_UD };
	struct srnic_qp *a2 = srnic_create_qp(E->p.pd[0], &ia);
	struct srnic_ah *ah = ah_to_peer(0);
	uint32_t bqpn = srnic_qp_num(E->qp[1]), n[2] = { 0, 0 };
	uint32_t q[2] = { srnic_qp_num(E->qp[0]), 0 };
	int i;

	RTE_SET_USED(state);
	assert_non_null(a2);
	q[1] = srnic_qp_num(a2);
	assert_int_not_equal(q[0], q[1]);
	e2e_ud_up(a2, QKEY, 77);
	fill(src, 4096, 5);
	for (i = 0; i < 32; i++)
		ud_recv(E->qp[1], 100 + i, dst + 256 * i, 256, rmr);
	for (i = 0; i < 16; i++) {
		assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, i, src + i, 16, smr,
					 0), 0);
		assert_int_equal(ud_post(a2, ah, bqpn, QKEY, IBV_WR_SEND_WITH_IMM, 100 + i,
					 src + 1000 + i, 17, smr, (uint32_t)i), 0);
	}
	E2E_RUN_UNTIL(E->nwc[1] == 32 && E->nwc[0] == 32);
	for (i = 0; i < 32; i++) {
		const struct ibv_wc *wc = &E->wc[1][i];
		const uint8_t *b = dst + 256 * (wc->wr_id - 100);
		int who = wc->src_qp == q[0] ? 0 : 1;

		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_true(wc->src_qp == q[0] || wc->src_qp == q[1]);
		assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + 16 + who);
		assert_int_equal(!!(wc->wc_flags & IBV_WC_WITH_IMM), who);
		/* in order per sender: the n-th datagram of each */
		assert_memory_equal(b + SRNIC_GRH_LEN, src + (who ? 1000 : 0) + n[who], 16 + who);
		if (who)
			assert_int_equal(rte_be_to_cpu_32(wc->imm_data), n[who]);
		n[who]++;
	}
	assert_int_equal(n[0], 16);
	assert_int_equal(n[1], 16);
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		assert_int_equal(srnic_modify_qp(a2, &a, IBV_QP_STATE), 0);
		e2e_settle(2);
		assert_int_equal(srnic_destroy_qp(a2), 0);
	}
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

/* Address handles: arguments, PD lifetime, the ibv_ah inside, WRs that
 * outlive their AH, and a reply to a completion (ibv_init_ah_from_wc). */
static void
test_ud_ah(void **state)
{
	struct srnic_mr *smr, *rmr, *bmr;
	uint8_t *src = e2e_buf(0, 256, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 1024, IBV_ACCESS_LOCAL_WRITE, &rmr);
	uint8_t *back = e2e_buf(0, 1024, IBV_ACCESS_LOCAL_WRITE, &bmr);
	struct srnic_pd *pd2 = srnic_alloc_pd(E->p.dev[0]);
	struct ibv_ah_attr a, got;
	struct srnic_ah *ah, *ah2, *reply;
	union ibv_gid agid;
	uint32_t aqpn = srnic_qp_num(E->qp[0]), bqpn = srnic_qp_num(E->qp[1]);
	struct rte_ether_addr mac = { { 0x02, 0, 0, 0, 0, 0x02 } };

	RTE_SET_USED(state);
	assert_non_null(pd2);
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = SRNIC_GID_INDEX_IP;
	assert_int_equal(srnic_dev_gid(E->p.dev[1], SRNIC_GID_INDEX_IP, &a.grh.dgid), 0);
	/* bad arguments */
	rte_errno = 0;
	assert_null(srnic_create_ah(NULL, &a));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_create_ah(pd2, NULL));
	assert_int_equal(rte_errno, EINVAL);
	got = a;
	got.is_global = 0;
	assert_null(srnic_create_ah(pd2, &got));
	assert_int_equal(rte_errno, EINVAL);
	got = a;
	got.grh.sgid_index = SRNIC_GID_INDEX_LL;
	assert_null(srnic_create_ah(pd2, &got));
	assert_int_equal(rte_errno, EINVAL);
	got = a;
	got.port_num = 2;
	assert_null(srnic_create_ah(pd2, &got));
	assert_int_equal(rte_errno, EINVAL);
	got = a;
	memset(got.grh.dgid.raw, 0, 16);
	got.grh.dgid.raw[0] = 0xfe; /* IPv6 from the IPv4 GID */
	got.grh.dgid.raw[1] = 0x80;
	assert_null(srnic_create_ah(pd2, &got));
	assert_int_equal(rte_errno, EINVAL);
	got = a;
	got.grh.dgid.raw[12] = 239; /* 239.x: a group's (test_mcast.c) */
	ah2 = srnic_create_ah(pd2, &got);
	assert_non_null(ah2);
	assert_int_equal(srnic_destroy_ah(ah2), 0);
	assert_null(srnic_create_ah_dmac(pd2, &a, NULL));
	assert_int_equal(rte_errno, EINVAL);
	assert_int_equal(srnic_destroy_ah(NULL), -EINVAL);
	assert_null(srnic_ah_ibv(NULL));
	assert_null(srnic_ah_from_ibv(NULL));

	/* lifetime: the PD is busy while an AH uses it */
	ah2 = srnic_create_ah_dmac(pd2, &a, &mac);
	assert_non_null(ah2);
	assert_ptr_equal(srnic_ah_from_ibv(srnic_ah_ibv(ah2)), ah2);
	assert_int_equal(srnic_query_ah(ah2, &got), 0);
	assert_memory_equal(&got, &a, sizeof(a));
	assert_int_equal(srnic_dealloc_pd(pd2), -EBUSY);
	/* an AH of another PD than the QP's: EINVAL at post, nothing sent */
	assert_int_equal(ud_post(E->qp[0], ah2, bqpn, QKEY, IBV_WR_SEND, 1, src, 8, smr, 0),
			 EINVAL);
	assert_int_equal(srnic_destroy_ah(ah2), 0);
	assert_int_equal(srnic_dealloc_pd(pd2), 0);

	/* no AH, a WRITE or a READ on UD: EINVAL */
	assert_int_equal(ud_post(E->qp[0], NULL, bqpn, QKEY, IBV_WR_SEND, 1, src, 8, smr, 0),
			 EINVAL);
	ah = srnic_create_ah(E->p.pd[0], &a);
	assert_non_null(ah);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_RDMA_WRITE, 1, src, 8, smr, 0),
			 EINVAL);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_RDMA_READ, 1, src, 8, smr, 0),
			 EINVAL);

	/* the WR keeps its copy: the AH may go right after the post */
	fill(src, 256, 77);
	ud_recv(E->qp[1], 5, dst, 1024, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 6, src, 200, smr, 0), 0);
	assert_int_equal(srnic_destroy_ah(ah), 0);
	E2E_RUN_UNTIL(E->nwc[1] == 1 && E->nwc[0] == 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_memory_equal(dst + SRNIC_GRH_LEN, src, 200);

	/* the reply address from the completion and its GRH area */
	assert_int_equal(srnic_init_ah_from_wc(E->p.dev[1], &E->wc[1][0], dst, &got), 0);
	assert_int_equal(srnic_dev_gid(E->p.dev[0], SRNIC_GID_INDEX_IP, &agid), 0);
	assert_memory_equal(got.grh.dgid.raw, agid.raw, 16);
	assert_int_equal(got.is_global, 1);
	assert_int_equal(got.grh.sgid_index, SRNIC_GID_INDEX_IP);
	assert_int_equal(got.grh.hop_limit, 0xFF);
	assert_int_equal(got.port_num, 1);
	/* not for us (the other device), or no GRH flag: EINVAL */
	assert_int_equal(srnic_init_ah_from_wc(E->p.dev[0], &E->wc[1][0], dst, &got), -EINVAL);
	{
		struct ibv_wc w = E->wc[1][0];
		uint8_t junk[SRNIC_GRH_LEN];

		w.wc_flags = 0;
		assert_int_equal(srnic_init_ah_from_wc(E->p.dev[1], &w, dst, &got), -EINVAL);
		memset(junk, 0x33, sizeof(junk));
		assert_int_equal(srnic_init_ah_from_wc(E->p.dev[1], &E->wc[1][0], junk, &got),
				 -EINVAL);
	}
	reply = srnic_create_ah_from_wc(E->p.pd[1], &E->wc[1][0], dst);
	assert_non_null(reply);
	ud_recv(E->qp[0], 9, back, 1024, bmr);
	assert_int_equal(ud_post(E->qp[1], reply, E->wc[1][0].src_qp, QKEY, IBV_WR_SEND, 7,
				 dst + SRNIC_GRH_LEN, 200, rmr, 0), 0);
	E2E_RUN_UNTIL(E->nwc[0] == 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][1].src_qp, bqpn);
	assert_int_equal(E->wc[0][1].qp_num, aqpn);
	assert_memory_equal(back + SRNIC_GRH_LEN, src, 200);
	assert_int_equal(last_from(1)->data[last_from(1)->l3_off + 8], 0xFF); /* TTL of the reply */
	assert_int_equal(srnic_destroy_ah(reply), 0);
}

/* The last RoCE frame side sent (ND's are not). */
static const struct e2e_pkt *
last_roce_from(int side)
{
	uint32_t idx[64], n = e2e_pkts_from(side, idx, RTE_DIM(idx));

	while (n > 0 && E->pkts[idx[n - 1]].parse_rc != SRNIC_PARSE_OK)
		n--;
	assert_true(n > 0);
	return &E->pkts[idx[n - 1]];
}

/* UD from GID 0 of IPv4 devices: RoCEv2 over IPv6 link-local, the peer's
 * MAC by neighbour discovery. A's AH (hop limit 9, traffic class 0x48,
 * flow label 0xabcde) to B's fe80::: the frame is IPv6 between the two
 * link-local GIDs with those fields, B's receive buffer holds that very
 * IPv6 header as its GRH and the payload, its CQE says RoCEv2 over IPv6
 * (sl 0x9, as mlx5); the reply address from the CQE names GID 0 and A's
 * fe80::, and B's reply along it reaches A the same way. Then the same QP
 * sends from its IPv4 GID: an IPv4 frame, sl 0xa. */
static void
test_ud_link_local(void **state)
{
	struct srnic_mr *smr, *rmr, *bmr;
	uint8_t *src = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE, &rmr);
	uint8_t *back = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &bmr);
	uint32_t aqpn = srnic_qp_num(E->qp[0]), bqpn = srnic_qp_num(E->qp[1]);
	union ibv_gid ll[2];
	struct ibv_ah_attr a, got;
	struct srnic_ah *ah, *reply, *ah4;
	const struct e2e_pkt *k;
	const uint8_t *ip;
	uint32_t vtc;
	int i;

	RTE_SET_USED(state);
	for (i = 0; i < 2; i++)
		assert_int_equal(srnic_dev_gid(E->p.dev[i], SRNIC_GID_INDEX_LL, &ll[i]), 0);
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = SRNIC_GID_INDEX_LL;
	a.grh.dgid = ll[1];
	a.grh.hop_limit = 9;
	a.grh.traffic_class = 0x48;
	a.grh.flow_label = 0xabcde;
	ah = srnic_create_ah(E->p.pd[0], &a);
	assert_non_null(ah);
	fill(src, 4096, 11);
	ud_recv(E->qp[1], 81, dst, 1024, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND_WITH_IMM, 1, src, 300, smr,
				 0x5150), 0);
	E2E_RUN_UNTIL(E->nwc[1] >= 1 && E->nwc[0] >= 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	e2e_settle(2);
	k = last_roce_from(0);
	ip = k->data + k->l3_off;
	vtc = (uint32_t)ip[0] << 24 | (uint32_t)ip[1] << 16 | (uint32_t)ip[2] << 8 | ip[3];
	assert_int_equal(vtc >> 28, 6);
	assert_int_equal((vtc >> 20) & 0xff, 0x48);
	assert_int_equal(vtc & 0xfffff, 0xabcde);
	assert_int_equal(ip[7], 9);
	assert_memory_equal(ip + 8, ll[0].raw, 16);
	assert_memory_equal(ip + 24, ll[1].raw, 16);
	assert_int_equal(k->opcode, SRNIC_OP_UD_SEND_ONLY_IMM);
	assert_int_equal(k->dqpn, bqpn);
	assert_int_equal(srnic_deth_sqpn(e2e_hdr(k, SRNIC_HDR_DETH)), aqpn);
	assert_true(stat1(1, "rx_nd") + stat1(0, "rx_nd") >= 2); /* B's NA came for A's NS */

	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, SRNIC_GRH_LEN + 300);
	assert_int_equal(E->wc[1][0].src_qp, aqpn);
	assert_int_equal(E->wc[1][0].sl, SRNIC_WC_SL_ROCE_UDP | SRNIC_WC_SL_ROCE_IPV6);
	assert_int_equal(E->wc[1][0].wc_flags, IBV_WC_GRH | IBV_WC_WITH_IMM);
	assert_int_equal(E->wc[1][0].imm_data, rte_cpu_to_be_32(0x5150));
	assert_memory_equal(dst, ip, SRNIC_GRH_LEN); /* the GRH area: the IPv6 header */
	assert_memory_equal(dst + SRNIC_GRH_LEN, src, 300);

	/* the reply: from the GID it was sent to, to the sender's */
	assert_int_equal(srnic_init_ah_from_wc(E->p.dev[1], &E->wc[1][0], dst, &got), 0);
	assert_int_equal(got.grh.sgid_index, SRNIC_GID_INDEX_LL);
	assert_memory_equal(got.grh.dgid.raw, ll[0].raw, 16);
	assert_int_equal(got.grh.traffic_class, 0x48);
	assert_int_equal(got.grh.flow_label, 0xabcde);
	reply = srnic_create_ah_from_wc(E->p.pd[1], &E->wc[1][0], dst);
	assert_non_null(reply);
	ud_recv(E->qp[0], 82, back, 1024, bmr);
	assert_int_equal(ud_post(E->qp[1], reply, aqpn, QKEY, IBV_WR_SEND, 2, dst + SRNIC_GRH_LEN,
				 300, rmr, 0), 0);
	E2E_RUN_UNTIL(E->nwc[0] >= 2 && E->nwc[1] >= 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][1].wr_id, 82);
	assert_int_equal(E->wc[0][1].src_qp, bqpn);
	assert_int_equal(E->wc[0][1].sl, SRNIC_WC_SL_ROCE_UDP | SRNIC_WC_SL_ROCE_IPV6);
	assert_memory_equal(back + SRNIC_GRH_LEN, src, 300);
	assert_memory_equal(back + 8, ll[1].raw, 16);  /* GRH source: B's fe80:: */
	assert_memory_equal(back + 24, ll[0].raw, 16); /* destination: A's */

	/* the same QP from its IPv4 GID */
	ah4 = ah_to_peer(0);
	ud_recv(E->qp[1], 83, dst + 1024, 1024, rmr);
	assert_int_equal(ud_post(E->qp[0], ah4, bqpn, QKEY, IBV_WR_SEND, 3, src + 300, 200, smr, 0),
			 0);
	E2E_RUN_UNTIL(E->nwc[1] >= 3 && E->nwc[0] >= 3);
	assert_int_equal(E->wc[1][2].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][2].sl, SRNIC_WC_SL_ROCE_UDP | SRNIC_WC_SL_ROCE_IPV4);
	assert_memory_equal(dst + 1024 + SRNIC_GRH_LEN, src + 300, 200);
	e2e_settle(2);
	k = last_roce_from(0);
	assert_int_equal(k->data[k->l3_off] >> 4, 4);
	assert_int_equal(srnic_destroy_ah(ah4), 0);
	assert_int_equal(srnic_destroy_ah(reply), 0);
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

/* Inline data and a gather list of three SGEs in one datagram. */
static void
test_ud_inline_sgl(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint8_t *src = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE, &rmr);
	struct srnic_ah *ah = ah_to_peer(0);
	struct ibv_sge sge[3] = {
		{ .addr = (uintptr_t)src, .length = 10, .lkey = srnic_mr_lkey(smr) },
		{ .addr = (uintptr_t)src + 1000, .length = 300, .lkey = srnic_mr_lkey(smr) },
		{ .addr = (uintptr_t)src + 3000, .length = 1, .lkey = srnic_mr_lkey(smr) },
	};
	struct ibv_send_wr wr, *bad = NULL;
	uint8_t want[311], inl[64];

	RTE_SET_USED(state);
	fill(src, 4096, 21);
	memcpy(want, src, 10);
	memcpy(want + 10, src + 1000, 300);
	want[310] = src[3000];
	ud_recv(E->qp[1], 1, dst, 2048, rmr);
	ud_recv(E->qp[1], 2, dst + 2048, 2048, rmr);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = srnic_ah_ibv(ah);
	wr.wr.ud.remote_qpn = srnic_qp_num(E->qp[1]);
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
	/* inline: the buffer is ours again once posted (max_inline_data 64) */
	fill(inl, sizeof(inl), 99);
	sge[0].addr = (uintptr_t)inl;
	sge[0].length = sizeof(inl);
	sge[0].lkey = 0;
	wr.wr_id = 2;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
	memset(inl, 0, sizeof(inl));
	E2E_RUN_UNTIL(E->nwc[1] == 2 && E->nwc[0] == 2);
	assert_int_equal(E->wc[1][0].byte_len, SRNIC_GRH_LEN + 311);
	assert_memory_equal(dst + SRNIC_GRH_LEN, want, 311);
	assert_int_equal(E->wc[1][1].byte_len, SRNIC_GRH_LEN + 64);
	fill(inl, sizeof(inl), 99);
	assert_memory_equal(dst + 2048 + SRNIC_GRH_LEN, inl, 64);
	/* more inline than the QP takes: EINVAL */
	sge[0].length = 65;
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), EINVAL);
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

/* A UD frame onto the wire as if from A's port, from src_ip (network
 * order), to B's QP dqpn with q_key, payload len bytes of seed. */
static void
inject_ud(struct rte_mempool *mp, uint8_t opcode, const uint8_t *src_ip, uint32_t dqpn,
	  uint32_t qkey, uint32_t sqpn, uint32_t len, uint32_t seed)
{
	static const struct rte_ether_addr mac[2] = {
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 } },
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } },
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	const struct srnic_opcode_info *oi = srnic_opcode_info(opcode);
	struct srnic_route r;
	union ibv_gid g;
	uint8_t *bth, *p;

	assert_non_null(m);
	memset(&r, 0, sizeof(r));
	r.src_mac = mac[0];
	r.dst_mac = mac[1];
	r.ip_ver = 4;
	r.ttl = 33;
	r.tclass = 0x10;
	memcpy(r.src_ip, src_ip, 4);
	assert_int_equal(srnic_dev_gid(E->p.dev[1], SRNIC_GID_INDEX_IP, &g), 0);
	memcpy(r.dst_ip, &g.raw[12], 4);
	r.udp_sport = srnic_roce_ud_sport(sqpn);
	bth = srnic_pkt_init(m, &r, opcode, 1);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, dqpn);
	srnic_bth_set_psn(bth, 12345);
	if (oi->mask & SRNIC_OPM_DETH) {
		srnic_deth_set_qkey(bth + oi->offset[SRNIC_HDR_DETH], qkey);
		srnic_deth_set_sqpn(bth + oi->offset[SRNIC_HDR_DETH], sqpn);
	}
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);
	assert_non_null(p);
	fill(p, len, seed);
	assert_int_equal(srnic_pkt_finish(m, mp), 0);
	assert_int_equal(rte_eth_tx_burst(E->p.port[0], 0, &m, 1), 1);
	e2e_settle(4);
}

/* Frames no srnic sender makes: a payload beyond the path MTU, another
 * transport's opcode, a datagram from a host B has never heard of (taken:
 * UD needs no peer), one with no receive WQE. */
static void
test_ud_injected(void **state)
{
	struct rte_mempool *mp = rte_pktmbuf_pool_create("ud_inj", 15, 0, 0,
							 RTE_PKTMBUF_HEADROOM + 8192, SOCKET_ID_ANY);
	struct srnic_mr *rmr;
	uint8_t *dst = e2e_buf(1, 8192, IBV_ACCESS_LOCAL_WRITE, &rmr);
	static const uint8_t stranger[4] = { 127, 0, 0, 99 };
	uint32_t bqpn = srnic_qp_num(E->qp[1]);
	int64_t too_long = stat1(1, "rx_ud_too_long"), bad_tr = stat1(1, "rx_bad_transport");
	int64_t norecv = stat1(1, "rx_ud_no_recv_wqe");
	struct ibv_ah_attr aa;
	uint8_t ref[300];

	RTE_SET_USED(state);
	assert_non_null(mp);
	ud_recv(E->qp[1], 1, dst, 8192, rmr);
	inject_ud(mp, SRNIC_OP_UD_SEND_ONLY, stranger, bqpn, QKEY, 0x123456, 4097, 1);
	assert_int_equal(stat1(1, "rx_ud_too_long"), too_long + 1);
	inject_ud(mp, SRNIC_OP_UC_SEND_ONLY, stranger, bqpn, QKEY, 0x123456, 100, 1);
	assert_int_equal(stat1(1, "rx_bad_transport"), bad_tr + 1);
	assert_int_equal(E->nwc[1], 0);
	inject_ud(mp, SRNIC_OP_UD_SEND_ONLY, stranger, bqpn, QKEY, 0x123456, 300, 2);
	E2E_RUN_UNTIL(E->nwc[1] == 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].src_qp, 0x123456);
	assert_int_equal(E->wc[1][0].byte_len, SRNIC_GRH_LEN + 300);
	fill(ref, 300, 2);
	assert_memory_equal(dst + SRNIC_GRH_LEN, ref, 300);
	assert_memory_equal(dst + 20 + 12, stranger, 4);  /* the IPv4 source in the GRH area */
	assert_int_equal(dst[20 + 8], 33);                /* its TTL */
	assert_int_equal(srnic_init_ah_from_wc(E->p.dev[1], &E->wc[1][0], dst, &aa), 0);
	assert_memory_equal(&aa.grh.dgid.raw[12], stranger, 4);
	assert_int_equal(aa.grh.dgid.raw[10], 0xff);
	assert_int_equal(aa.grh.traffic_class, 0x10);
	/* no receive WQE left: dropped, counted */
	inject_ud(mp, SRNIC_OP_UD_SEND_ONLY, stranger, bqpn, QKEY, 0x123456, 10, 3);
	assert_int_equal(stat1(1, "rx_ud_no_recv_wqe"), norecv + 1);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	e2e_settle(4);
	rte_mempool_free(mp);
}

/* An independent decode: the frames the engine sent, written to a pcap
 * and read back by tshark's InfiniBand dissector (skipped without tshark). */
static void
test_ud_tshark(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint8_t *src = e2e_buf(0, 256, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 1024, IBV_ACCESS_LOCAL_WRITE, &rmr);
	struct srnic_ah *ah = ah_to_peer(0);
	uint32_t aqpn = srnic_qp_num(E->qp[0]), bqpn = srnic_qp_num(E->qp[1]), idx[8], n, i;
	char path[] = "/tmp/srnic_ud_XXXXXX", cmd[512], line[256], want[256];
	FILE *f, *t;
	int fd;

	RTE_SET_USED(state);
	if (system("command -v tshark > /dev/null 2>&1") != 0)
		skip();
	fill(src, 256, 4);
	ud_recv(E->qp[1], 1, dst, 512, rmr);
	ud_recv(E->qp[1], 2, dst + 512, 512, rmr);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND, 1, src, 64, smr, 0), 0);
	assert_int_equal(ud_post(E->qp[0], ah, bqpn, QKEY, IBV_WR_SEND_WITH_IMM, 2, src, 99, smr,
				 0x1234), 0);
	E2E_RUN_UNTIL(E->nwc[1] == 2);
	n = e2e_pkts_from(0, idx, 8);
	assert_int_equal(n, 2);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	f = srnic_test_pcap_create(path);
	assert_non_null(f);
	for (i = 0; i < n; i++) {
		/* a classic pcap record: ts_sec, ts_usec, incl_len, orig_len */
		uint32_t rec[4] = { 0, i, E->pkts[idx[i]].len, E->pkts[idx[i]].len };

		assert_int_equal(fwrite(rec, sizeof(rec), 1, f), 1);
		assert_int_equal(fwrite(E->pkts[idx[i]].data, E->pkts[idx[i]].len, 1, f), 1);
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "tshark -r %s -d udp.port==4791,infiniband -T fields "
		 "-E separator=, -E occurrence=f -e infiniband.bth.opcode -e infiniband.bth.destqp "
		 "-e infiniband.bth.psn -e infiniband.deth.q_key -e infiniband.deth.srcqp "
		 "-e infiniband.immdt -e udp.srcport -e udp.dstport 2>/dev/null", path);
	t = popen(cmd, "r");
	assert_non_null(t);
	for (i = 0; i < n; i++) {
		assert_non_null(fgets(line, sizeof(line), t));
		line[strcspn(line, "\n")] = 0;
		snprintf(want, sizeof(want), "%u,0x%06x,%u,0x%016x,0x%08x,%s,%u,4791",
			 i == 0 ? 100 : 101, bqpn, E->pkts[idx[i]].psn, QKEY, aqpn,
			 i == 0 ? "" : "00001234", srnic_roce_ud_sport(aqpn));
		assert_string_equal(line, want);
	}
	assert_null(fgets(line, sizeof(line), t));
	assert_int_equal(pclose(t), 0);
	unlink(path);
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

/* ---- IPv6: a second pair of devices ---- */

struct v6 {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_pd *pd[2];
	struct srnic_cq *cq[2];
	struct srnic_qp *qp[2];
	struct srnic_capture *cap;
	uint8_t frame[2048];
	uint32_t frame_len;
};

static void
v6_on_rx(uint16_t port_id, int dir, const struct rte_mbuf *m, uint64_t tsc, void *arg)
{
	struct v6 *v = arg;

	RTE_SET_USED(port_id);
	RTE_SET_USED(dir);
	RTE_SET_USED(tsc);
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

	/* RoCEv2 only: IPv6, next header UDP (ND frames go by too) */
	if (rte_pktmbuf_pkt_len(m) <= sizeof(v->frame) && f[12] == 0x86 && f[13] == 0xDD &&
	    f[RTE_ETHER_HDR_LEN + 6] == IPPROTO_UDP) {
		v->frame_len = rte_pktmbuf_pkt_len(m);
		rte_memcpy(v->frame, rte_pktmbuf_read(m, 0, v->frame_len, v->frame), v->frame_len);
	}
}

static void
test_ud_ipv6(void **state)
{
	static const struct rte_ether_addr mac[2] = {
		{ { 0x02, 0, 0, 0, 0x66, 1 } }, { { 0x02, 0, 0, 0, 0x66, 2 } } };
	struct v6 *v = calloc(1, sizeof(*v));
	struct srnic_dev_conf c;
	struct ibv_ah_attr aa;
	struct srnic_ah *ah;
	struct srnic_mr *smr, *rmr;
	uint8_t *src, *dst;
	union ibv_gid gid;
	struct ibv_wc wc;
	uint64_t dl;
	int i, n = 0;

	RTE_SET_USED(state);
	assert_non_null(v);
	assert_int_equal(srnic_link_ring_pair("ud6", 1, 1024, &v->port[0], &v->port[1]), 0);
	for (i = 0; i < 2; i++) {
		struct srnic_qp_init_attr ia = { .max_send_wr = 16, .max_recv_wr = 16,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .qp_type = IBV_QPT_UD };

		memset(&c, 0, sizeof(c));
		c.port_id = v->port[i];
		c.nb_engines = 1;
		c.mtu = 1500;
		c.ip_ver = 6;
		c.ip[0] = 0xfd;
		c.ip[15] = (uint8_t)(1 + i);
		c.mac = &mac[i];
		c.nb_mbufs = 2047;
		c.name = i == 0 ? "ud6a" : "ud6b";
		v->dev[i] = srnic_dev_create(&c);
		if (v->dev[i] == NULL)
			fail_msg("srnic_dev_create (IPv6): %s", rte_strerror(rte_errno));
		v->pd[i] = srnic_alloc_pd(v->dev[i]);
		v->cq[i] = srnic_create_cq(v->dev[i], 64, srnic_dev_engine(v->dev[i], 0));
		assert_non_null(v->cq[i]);
		ia.send_cq = ia.recv_cq = v->cq[i];
		v->qp[i] = srnic_create_qp(v->pd[i], &ia);
		assert_non_null(v->qp[i]);
		e2e_ud_up(v->qp[i], QKEY, 1);
	}
	v->cap = srnic_capture_start(v->port[1], SRNIC_CAPTURE_RX, v6_on_rx, v);
	assert_non_null(v->cap);
	/* A learns B's MAC by neighbour discovery: the AH waits for it */
	src = rte_zmalloc(NULL, 4096, 64);
	dst = rte_zmalloc(NULL, 4096, 64);
	smr = srnic_reg_mr(v->pd[0], src, 4096, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(v->pd[1], dst, 4096, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(rmr);
	fill(src, 4096, 11);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = SRNIC_GID_INDEX_IP;
	aa.grh.traffic_class = 0x28;
	aa.grh.flow_label = 0x12345;
	aa.grh.hop_limit = 9;
	assert_int_equal(srnic_dev_gid(v->dev[1], SRNIC_GID_INDEX_IP, &aa.grh.dgid), 0);
	ah = srnic_create_ah(v->pd[0], &aa);
	assert_non_null(ah);
	{
		struct ibv_sge sge = { .addr = (uintptr_t)dst, .length = 4096,
				       .lkey = srnic_mr_lkey(rmr) };
		struct ibv_recv_wr rw = { .wr_id = 3, .sg_list = &sge, .num_sge = 1 }, *rb;

		assert_int_equal(srnic_post_recv(v->qp[1], &rw, &rb), 0);
	}
	{
		struct ibv_sge sge = { .addr = (uintptr_t)src, .length = 1000,
				       .lkey = srnic_mr_lkey(smr) };
		struct ibv_send_wr sw, *sb;

		memset(&sw, 0, sizeof(sw));
		sw.wr_id = 4;
		sw.opcode = IBV_WR_SEND;
		sw.sg_list = &sge;
		sw.num_sge = 1;
		sw.send_flags = IBV_SEND_SIGNALED;
		sw.wr.ud.ah = srnic_ah_ibv(ah);
		sw.wr.ud.remote_qpn = srnic_qp_num(v->qp[1]);
		sw.wr.ud.remote_qkey = QKEY;
		assert_int_equal(srnic_post_send(v->qp[0], &sw, &sb), 0);
	}
	assert_int_equal(srnic_destroy_ah(ah), 0);
	dl = e2e_deadline();
	while (n == 0) {
		assert_false(e2e_deadline_passed(dl));
		srnic_engine_poll(srnic_dev_engine(v->dev[0], 0));
		srnic_engine_poll(srnic_dev_engine(v->dev[1], 0));
		n = srnic_poll_cq(v->cq[1], 1, &wc);
	}
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, SRNIC_GRH_LEN + 1000);
	assert_int_equal(wc.wc_flags, IBV_WC_GRH);
	assert_int_equal(wc.src_qp, srnic_qp_num(v->qp[0]));
	assert_true(srnic_dev_stat(v->dev[0], "tx_nd") >= 1); /* it asked */
	/* the GRH area is the frame's IPv6 header; the header is as the AH said */
	assert_int_equal(srnic_dev_gid(v->dev[0], SRNIC_GID_INDEX_IP, &gid), 0);
	assert_true(v->frame_len > RTE_ETHER_HDR_LEN + SRNIC_GRH_LEN);
	assert_memory_equal(dst, v->frame + RTE_ETHER_HDR_LEN, SRNIC_GRH_LEN);
	assert_int_equal(dst[0] >> 4, 6);
	assert_int_equal(((dst[0] & 0xF) << 4) | (dst[1] >> 4), 0x28);
	assert_int_equal(((dst[1] & 0xF) << 16) | (dst[2] << 8) | dst[3], 0x12345);
	assert_int_equal(dst[7], 9);
	assert_memory_equal(dst + 8, gid.raw, 16);
	assert_memory_equal(dst + SRNIC_GRH_LEN, src, 1000);
	assert_int_equal(srnic_init_ah_from_wc(v->dev[1], &wc, dst, &aa), 0);
	assert_memory_equal(aa.grh.dgid.raw, gid.raw, 16);
	assert_int_equal(aa.grh.flow_label, 0x12345);
	assert_int_equal(aa.grh.traffic_class, 0x28);

	srnic_capture_stop(v->cap);
	while (srnic_poll_cq(v->cq[0], 1, &wc) > 0)
		;
	for (i = 0; i < 2; i++) {
		assert_int_equal(srnic_destroy_qp(v->qp[i]), 0);
		srnic_engine_poll(srnic_dev_engine(v->dev[i], 0));
		assert_int_equal(srnic_destroy_cq(v->cq[i]), 0);
	}
	assert_int_equal(srnic_dereg_mr_wait(smr, 1000000), 0);
	assert_int_equal(srnic_dereg_mr_wait(rmr, 1000000), 0);
	rte_free(src);
	rte_free(dst);
	for (i = 0; i < 2; i++) {
		assert_int_equal(srnic_dealloc_pd(v->pd[i]), 0);
		assert_int_equal(srnic_dev_destroy(v->dev[i]), 0);
	}
	free(v);
}

/* max_ah is what the device holds: SRNIC_MAX_AH address handles, the next
 * ENOMEM, one back after a destroy (ibv_devinfo showed max_ah 0). */
static void
test_ud_ah_limit(void **state)
{
	static struct srnic_ah *ah[SRNIC_MAX_AH];
	struct ibv_device_attr da;
	struct ibv_ah_attr a;
	unsigned int i;

	RTE_SET_USED(state);
	assert_int_equal(srnic_dev_query(E->p.dev[0], &da), 0);
	assert_int_equal(da.max_ah, SRNIC_MAX_AH);
	for (i = 0; i < SRNIC_MAX_AH; i++)
		ah[i] = ah_to_peer(0);
	assert_int_equal(srnic_query_ah(ah[0], &a), 0);
	assert_null(srnic_create_ah(E->p.pd[0], &a));
	assert_int_equal(rte_errno, ENOMEM);
	assert_int_equal(srnic_destroy_ah(ah[0]), 0);
	ah[0] = ah_to_peer(0);
	for (i = 0; i < SRNIC_MAX_AH; i++)
		assert_int_equal(srnic_destroy_ah(ah[i]), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ud_send_recv, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_send_buffer_reuse, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_ah_limit, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_qkey, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_mtu, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_many_to_one, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_link_local, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_ah, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_inline_sgl, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_injected, ud_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ud_tshark, ud_setup, e2e_teardown),
		cmocka_unit_test(test_ud_ipv6),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
