/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The GSI QP (QP1: where rdma_cm's CM MADs go) end to end over
 * the net_ring pair: each device has one, QPN 1, Q_Key 0x80010000 fixed
 * whatever modify_qp says; 256-byte "MADs" QP1 -> QP1 both ways through
 * AHs, every frame checked as rxe's QP1 sends it in the rdma_cm capture
 * (test/data/rxe/rdmacm_send_lat_64b.pcap: BTH dest QPN 1, DETH Q_Key
 * 0x80010000 and source QP 1, UDP source port 55410), the GRH area and
 * payload in the receive buffer, wc.src_qp 1; a datagram to QP1 with
 * another Q_Key and one to QPN 0 dropped and counted; one GSI QP per
 * device (EEXIST), the bit on other QP types (EINVAL); destroy frees QPN 1
 * for a new one.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_errno.h>

#include "e2e_fixture.h"

#define MAD_LEN 256            /* a MAD: what rdma_cm's CM messages are */
#define UD_QKEY 0x11223344u    /* the fixture's ordinary UD QPs */
#define GSI_SPORT 55410        /* rxe's UDP source port for QP1 (the rdma_cm capture) */
#define GSI_DEPTH 16

static struct srnic_qp *gsi[2];

static int64_t
stat1(int side, const char *name)
{
	return srnic_dev_stat(E->p.dev[side], name);
}

static void
gsi_attr(struct srnic_qp_init_attr *ia, int side, enum ibv_qp_type type)
{
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = ia->recv_cq = E->cq[side];
	ia->max_send_wr = GSI_DEPTH;
	ia->max_recv_wr = GSI_DEPTH;
	ia->max_send_sge = 1;
	ia->max_recv_sge = 1;
	ia->qp_type = type;
	ia->comp_mask = SRNIC_QP_INIT_ATTR_GSI;
}

static struct srnic_qp *
gsi_create(int side)
{
	struct srnic_qp_init_attr ia;
	struct srnic_qp *qp;

	gsi_attr(&ia, side, IBV_QPT_UD);
	qp = srnic_create_qp(E->p.pd[side], &ia);
	assert_non_null(qp);
	assert_int_equal(srnic_qp_num(qp), SRNIC_GSI_QPN);
	/* the kernel brings QP1 up with its Q_Key: whatever INIT says */
	e2e_ud_up(qp, 0x1234, 100 + (uint32_t)side);
	return qp;
}

/* The fixture's ordinary UD QPs (E->qp) and a GSI QP on each side. */
static int
gsi_setup(void **state)
{
	struct e2e_conf c = { .qp_type = IBV_QPT_UD, .no_connect = true };
	int i;

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	e2e_ud_up(E->qp[0], UD_QKEY, 500);
	e2e_ud_up(E->qp[1], UD_QKEY, 900);
	for (i = 0; i < 2; i++)
		gsi[i] = gsi_create(i);
	return 0;
}

static void
gsi_destroy(int side)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (gsi[side] == NULL)
		return;
	assert_int_equal(srnic_modify_qp(gsi[side], &a, IBV_QP_STATE), 0);
	e2e_settle(2);
	assert_int_equal(srnic_destroy_qp(gsi[side]), 0);
	gsi[side] = NULL;
}

static int
gsi_teardown(void **state)
{
	gsi_destroy(0);
	gsi_destroy(1);
	return e2e_teardown(state);
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

static void
ud_send(struct srnic_qp *qp, struct srnic_ah *ah, uint32_t rqpn, uint32_t rqkey, uint64_t wr_id,
	void *buf, uint32_t len, struct srnic_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = srnic_mr_lkey(mr) };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = srnic_ah_ibv(ah);
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = rqkey;
	assert_int_equal(srnic_post_send(qp, &wr, &bad), 0);
}

static void
ud_recv(struct srnic_qp *qp, uint64_t wr_id, void *buf, uint32_t len, struct srnic_mr *mr)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = srnic_mr_lkey(mr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(srnic_post_recv(qp, &wr, &bad), 0);
}

/* The frames side sent, into idx: their count. */
static uint32_t
sent_by(int side, uint32_t *idx, uint32_t max)
{
	return e2e_pkts_from(side, idx, max);
}

/* A frame QP1 sent to QP1, as rxe's in the rdma_cm capture. */
static void
check_gsi_frame(const struct e2e_pkt *k, uint32_t psn)
{
	const uint8_t *deth;

	assert_int_equal(k->parse_rc, SRNIC_PARSE_OK); /* ICRC included */
	assert_int_equal(k->opcode, SRNIC_OP_UD_SEND_ONLY);
	assert_int_equal(k->dqpn, SRNIC_GSI_QPN);
	assert_int_equal(k->psn, psn);
	assert_int_equal(k->pay_len, MAD_LEN);
	assert_int_equal(k->udp_sport, GSI_SPORT);
	assert_int_equal(srnic_bth_pkey(e2e_bth(k)), 0xFFFF);
	deth = e2e_hdr(k, SRNIC_HDR_DETH);
	assert_int_equal(srnic_deth_qkey(deth), 0x80010000u);
	assert_int_equal(srnic_deth_sqpn(deth), SRNIC_GSI_QPN);
	/* the raw bytes too: Q_Key 80 01 00 00, reserved 0, source QP 00 00 01 */
	assert_int_equal(deth[0], 0x80);
	assert_int_equal(deth[1], 0x01);
	assert_int_equal(deth[4], 0);
	assert_int_equal(deth[7], 0x01);
}

/* A received MAD: its completion and its buffer (GRH area, payload). */
static void
check_gsi_recv(const struct ibv_wc *wc, uint64_t wr_id, const uint8_t *buf, const uint8_t *mad,
	       const struct e2e_pkt *k)
{
	static const uint8_t zero[20];

	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RECV);
	assert_int_equal(wc->wr_id, wr_id);
	assert_int_equal(wc->qp_num, SRNIC_GSI_QPN);
	assert_int_equal(wc->src_qp, SRNIC_GSI_QPN);
	assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + MAD_LEN);
	assert_int_equal(wc->wc_flags, IBV_WC_GRH);
	assert_int_equal(wc->pkey_index, 0);
	/* IPv4: 20 zero bytes, then the IPv4 header of the very frame */
	assert_memory_equal(buf, zero, 20);
	assert_memory_equal(buf + 20, k->data + k->l3_off, 20);
	assert_memory_equal(buf + SRNIC_GRH_LEN, mad, MAD_LEN);
}

/* MADs QP1 -> QP1 both ways. The WRs name a wrong Q_Key (0): QP1 to QP1
 * goes with 0x80010000 whatever the WR says, as the kernel's MAD layer. */
static void
test_gsi_mads(void **state)
{
	struct srnic_mr *mr[2];
	uint8_t *buf[2] = { e2e_buf(0, 8192, IBV_ACCESS_LOCAL_WRITE, &mr[0]),
			    e2e_buf(1, 8192, IBV_ACCESS_LOCAL_WRITE, &mr[1]) };
	struct srnic_ah *ah[2] = { ah_to_peer(0), ah_to_peer(1) };
	uint32_t idx[16], n;
	struct ibv_qp_attr qa;
	struct srnic_qp_init_attr qi;
	int s, i;

	RTE_SET_USED(state);
	/* the Q_Key INIT asked for did not stick; nor does an RTS -> RTS one */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.qkey = 0x5678;
	assert_int_equal(srnic_modify_qp(gsi[0], &qa, IBV_QP_STATE | IBV_QP_QKEY), 0);
	for (s = 0; s < 2; s++) {
		memset(&qa, 0, sizeof(qa));
		assert_int_equal(srnic_query_qp(gsi[s], &qa, IBV_QP_QKEY, &qi), 0);
		assert_int_equal(qa.qkey, SRNIC_GSI_QKEY);
		assert_int_equal(qa.qp_state, IBV_QPS_RTS);
		assert_int_equal(qi.qp_type, IBV_QPT_UD);
		assert_int_equal(qi.comp_mask, SRNIC_QP_INIT_ATTR_GSI);
	}
	/* the fixture's QPs are ordinary ones, above the special QPNs */
	assert_true(srnic_qp_num(E->qp[0]) > SRNIC_GSI_QPN);

	for (s = 0; s < 2; s++) {
		for (i = 0; i < 2 * MAD_LEN; i++)
			buf[s][i] = (uint8_t)(s * 101 + i * 13 + 7); /* two MADs each */
		for (i = 0; i < 2; i++)
			ud_recv(gsi[1 - s], 10 * s + (uint64_t)i, buf[1 - s] + 4096 + 1024 * i,
				1024, mr[1 - s]);
	}
	/* A -> B, B -> A, then one more each way */
	for (i = 0; i < 2; i++)
		for (s = 0; s < 2; s++)
			ud_send(gsi[s], ah[s], SRNIC_GSI_QPN, 0, 100 * s + (uint64_t)i,
				buf[s] + MAD_LEN * i, MAD_LEN, mr[s]);
	E2E_RUN_UNTIL(E->nwc[0] == 4 && E->nwc[1] == 4);
	e2e_settle(2);

	for (s = 0; s < 2; s++) {
		uint32_t nsend = 0, nrecv = 0;

		n = sent_by(s, idx, RTE_DIM(idx));
		assert_int_equal(n, 2);
		for (i = 0; i < 2; i++)
			check_gsi_frame(&E->pkts[idx[i]], 100 + (uint32_t)s + (uint32_t)i);
		/* side s's completions: its two sends and the two MADs of the other side */
		for (i = 0; i < 4; i++) {
			const struct ibv_wc *wc = &E->wc[s][i];

			if (wc->opcode == IBV_WC_SEND) {
				assert_int_equal(wc->status, IBV_WC_SUCCESS);
				assert_int_equal(wc->wr_id, 100 * s + nsend);
				assert_int_equal(wc->qp_num, SRNIC_GSI_QPN);
				nsend++;
				continue;
			}
			/* the other side's nrecv-th frame landed in our nrecv-th buffer */
			{
				uint32_t oidx[16];

				assert_int_equal(sent_by(1 - s, oidx, RTE_DIM(oidx)), 2);
				check_gsi_recv(wc, 10 * (1 - s) + nrecv,
					       buf[s] + 4096 + 1024 * nrecv,
					       buf[1 - s] + MAD_LEN * nrecv, &E->pkts[oidx[nrecv]]);
			}
			nrecv++;
		}
		assert_int_equal(nsend, 2);
		assert_int_equal(nrecv, 2);
		assert_int_equal(stat1(s, "rx_ud_pkts"), 2);
		assert_int_equal(stat1(s, "rx_ud_qkey_err"), 0);
	}
	assert_int_equal(srnic_destroy_ah(ah[0]), 0);
	assert_int_equal(srnic_destroy_ah(ah[1]), 0);
}

/* The Q_Key check of QP1, from an ordinary UD QP: another Q_Key is
 * dropped and counted (so is 0x80010000 named in the WR of a QP whose own
 * Q_Key it is not: controlled), 0x80010000 is taken (wc.src_qp the
 * sender's). QP1
 * to an ordinary QP sends the WR's Q_Key. A datagram to QPN 0 is dropped
 * and counted, and QP1 goes on working. */
static void
test_gsi_qkey_qpn0(void **state)
{
	struct srnic_mr *smr, *rmr, *amr;
	uint8_t *src = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 8192, IBV_ACCESS_LOCAL_WRITE, &rmr);
	uint8_t *adst = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &amr);
	struct srnic_ah *ah = ah_to_peer(0), *ahb = ah_to_peer(1);
	uint32_t aqpn = srnic_qp_num(E->qp[0]), bqpn = srnic_qp_num(E->qp[1]), idx[16], n;
	int64_t qerr = stat1(1, "rx_ud_qkey_err"), noqp = stat1(1, "rx_no_qp");
	const struct e2e_pkt *k;
	struct ibv_qp_attr qa;
	int i;

	RTE_SET_USED(state);
	for (i = 0; i < MAD_LEN; i++)
		src[i] = (uint8_t)(i ^ 0x5a);
	ud_recv(gsi[1], 1, dst, 1024, rmr);
	ud_recv(gsi[1], 2, dst + 1024, 1024, rmr);
	ud_recv(E->qp[1], 3, dst + 4096, 1024, rmr);

	/* another Q_Key to QP1: dropped, counted, no completion */
	ud_send(E->qp[0], ah, SRNIC_GSI_QPN, 0x1234, 1, src, MAD_LEN, smr);
	E2E_RUN_UNTIL(stat1(1, "rx_ud_qkey_err") == qerr + 1);
	e2e_settle(2);
	assert_int_equal(E->nwc[1], 0);
	n = sent_by(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	k = &E->pkts[idx[0]];
	assert_int_equal(k->dqpn, SRNIC_GSI_QPN);
	assert_int_equal(srnic_deth_qkey(e2e_hdr(k, SRNIC_HDR_DETH)), 0x1234);

	/* to QPN 0 (nothing there on Ethernet): dropped, counted */
	ud_send(E->qp[0], ah, 0, SRNIC_GSI_QKEY, 2, src, MAD_LEN, smr);
	E2E_RUN_UNTIL(stat1(1, "rx_no_qp") == noqp + 1);
	e2e_settle(2);
	assert_int_equal(E->nwc[1], 0);
	assert_int_equal(sent_by(0, idx, RTE_DIM(idx)), 2);
	assert_int_equal(E->pkts[idx[1]].dqpn, 0);

	/* 0x80010000 is a controlled Q_Key (high bit): an ordinary QP's WR
	 * naming it sends the QP's own (IBTA 10.2.5), dropped at QP1 */
	ud_send(E->qp[0], ah, SRNIC_GSI_QPN, SRNIC_GSI_QKEY, 3, src, MAD_LEN, smr);
	E2E_RUN_UNTIL(stat1(1, "rx_ud_qkey_err") == qerr + 2);
	n = sent_by(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 3);
	assert_int_equal(srnic_deth_qkey(e2e_hdr(&E->pkts[idx[2]], SRNIC_HDR_DETH)), UD_QKEY);
	assert_int_equal(E->nwc[1], 0);

	/* an ordinary QP whose own Q_Key is QP1's: taken, src_qp the sender */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.qkey = SRNIC_GSI_QKEY;
	assert_int_equal(srnic_modify_qp(E->qp[0], &qa, IBV_QP_STATE | IBV_QP_QKEY), 0);
	ud_send(E->qp[0], ah, SRNIC_GSI_QPN, SRNIC_QKEY_CONTROLLED, 33, src, MAD_LEN, smr);
	E2E_RUN_UNTIL(E->nwc[1] == 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].wr_id, 1);
	assert_int_equal(E->wc[1][0].qp_num, SRNIC_GSI_QPN);
	assert_int_equal(E->wc[1][0].src_qp, aqpn);
	assert_memory_equal(dst + SRNIC_GRH_LEN, src, MAD_LEN);
	assert_int_equal(stat1(1, "rx_ud_qkey_err"), qerr + 2);

	/* QP1 to an ordinary QP: the WR's Q_Key, QP1's port and number */
	ud_send(gsi[0], ah, bqpn, UD_QKEY, 4, src, MAD_LEN, smr);
	E2E_RUN_UNTIL(E->nwc[1] == 2);
	assert_int_equal(E->wc[1][1].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][1].wr_id, 3);
	assert_int_equal(E->wc[1][1].qp_num, bqpn);
	assert_int_equal(E->wc[1][1].src_qp, SRNIC_GSI_QPN);
	n = sent_by(0, idx, RTE_DIM(idx));
	k = &E->pkts[idx[n - 1]];
	assert_int_equal(k->dqpn, bqpn);
	assert_int_equal(k->udp_sport, GSI_SPORT);
	assert_int_equal(srnic_deth_qkey(e2e_hdr(k, SRNIC_HDR_DETH)), UD_QKEY);
	assert_int_equal(srnic_deth_sqpn(e2e_hdr(k, SRNIC_HDR_DETH)), SRNIC_GSI_QPN);

	/* QP1 still takes MADs: B's QP1 answers A's QP1 */
	ud_recv(gsi[0], 5, adst, 1024, amr);
	ud_send(gsi[1], ahb, SRNIC_GSI_QPN, SRNIC_QKEY_CONTROLLED, 6, dst + SRNIC_GRH_LEN,
		MAD_LEN, rmr);
	E2E_RUN_UNTIL(E->nwc[0] == 6); /* A's 5 sends, B's MAD */
	n = sent_by(1, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	check_gsi_frame(&E->pkts[idx[0]], 101);
	for (i = 0; i < (int)E->nwc[0]; i++)
		if (E->wc[0][i].opcode == IBV_WC_RECV)
			check_gsi_recv(&E->wc[0][i], 5, adst, src, &E->pkts[idx[0]]);
	assert_int_equal(srnic_qp_state(gsi[1]), IBV_QPS_RTS);
	assert_int_equal(srnic_destroy_ah(ah), 0);
	assert_int_equal(srnic_destroy_ah(ahb), 0);
}

/* One GSI QP per device; the bit wants UD; destroy frees QPN 1, and a
 * datagram to it meanwhile is dropped; the new one works. */
static void
test_gsi_lifetime(void **state)
{
	struct srnic_mr *smr, *rmr;
	uint8_t *src = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &smr);
	uint8_t *dst = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE, &rmr);
	struct srnic_ah *ah = ah_to_peer(0);
	struct srnic_qp_init_attr ia;
	int64_t noqp;
	uint32_t idx[16], n;
	int i;

	RTE_SET_USED(state);
	gsi_attr(&ia, 1, IBV_QPT_UD);
	rte_errno = 0;
	assert_null(srnic_create_qp(E->p.pd[1], &ia));
	assert_int_equal(rte_errno, EEXIST);
	gsi_attr(&ia, 1, IBV_QPT_RC);
	rte_errno = 0;
	assert_null(srnic_create_qp(E->p.pd[1], &ia));
	assert_int_equal(rte_errno, EINVAL);
	gsi_attr(&ia, 1, IBV_QPT_UC);
	rte_errno = 0;
	assert_null(srnic_create_qp(E->p.pd[1], &ia));
	assert_int_equal(rte_errno, EINVAL);
	gsi_attr(&ia, 1, IBV_QPT_UD);
	ia.comp_mask = SRNIC_QP_INIT_ATTR_RESERVED;
	rte_errno = 0;
	assert_null(srnic_create_qp(E->p.pd[1], &ia));
	assert_int_equal(rte_errno, EINVAL);
	/* an ordinary UD QP never gets QPN 1 */
	gsi_attr(&ia, 1, IBV_QPT_UD);
	ia.comp_mask = 0;
	{
		struct srnic_qp *q = srnic_create_qp(E->p.pd[1], &ia);

		assert_non_null(q);
		assert_true(srnic_qp_num(q) > SRNIC_GSI_QPN);
		assert_int_equal(srnic_destroy_qp(q), 0);
	}

	/* B's QP1 gone: a MAD to it is dropped (rx_no_qp) */
	gsi_destroy(1);
	for (i = 0; i < MAD_LEN; i++)
		src[i] = (uint8_t)(i * 3);
	noqp = stat1(1, "rx_no_qp");
	ud_send(gsi[0], ah, SRNIC_GSI_QPN, SRNIC_GSI_QKEY, 1, src, MAD_LEN, smr);
	E2E_RUN_UNTIL(stat1(1, "rx_no_qp") == noqp + 1);

	/* a new one: QPN 1 again (gsi_create() checks), and it takes MADs */
	gsi[1] = gsi_create(1);
	gsi_attr(&ia, 1, IBV_QPT_UD);
	rte_errno = 0;
	assert_null(srnic_create_qp(E->p.pd[1], &ia));
	assert_int_equal(rte_errno, EEXIST);
	ud_recv(gsi[1], 7, dst, 1024, rmr);
	ud_send(gsi[0], ah, SRNIC_GSI_QPN, SRNIC_GSI_QKEY, 2, src, MAD_LEN, smr);
	E2E_RUN_UNTIL(E->nwc[1] == 1);
	n = sent_by(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 2);
	check_gsi_recv(&E->wc[1][0], 7, dst, src, &E->pkts[idx[1]]);
	assert_int_equal(srnic_destroy_ah(ah), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gsi_mads, gsi_setup, gsi_teardown),
		cmocka_unit_test_setup_teardown(test_gsi_qkey_qpn0, gsi_setup, gsi_teardown),
		cmocka_unit_test_setup_teardown(test_gsi_lifetime, gsi_setup, gsi_teardown),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
