/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast end to end over the net_ring pair (A sends, B's QPs join):
 * - two UD QPs of B attached to 239.1.2.3: one SEND from A to the group
 *   (remote_qpn 0xFFFFFF) is one frame to 01:00:5e:01:02:03 and 239.1.2.3,
 *   and lands in both QPs' receive WQEs (GRH area + payload, a CQE each
 *   naming its QP and A's QPN); a QP of the group with another Q_Key
 *   drops it (rx_ud_qkey_err), the others take it;
 * - after both detach, the next SEND is dropped and counted
 *   (rx_mcast_no_group) and the WQEs stay posted; so is a SEND to a group
 *   nobody joined;
 * - an IPv6 group's AH sends to 33:33 + its low 32 bits;
 * (test_mcast_engines.c: a group's QPs on two engines of one device)
 * - the API: a non-UD QP or a unicast GID is EINVAL, a detach of a QP not
 *   attached EINVAL, a second attach of the same QP 0, an attached QP
 *   cannot be destroyed (EBUSY), SRNIC_MAX_MCAST_GRP groups then ENOMEM,
 *   SRNIC_MAX_MCAST_QP_ATTACH QPs in a group then ENOMEM, and
 *   srnic_dev_query() reports those limits.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "e2e_fixture.h"

#define QKEY 0x01234567u           /* rdma_cm's RoCE multicast Q_Key */
#define NQP (SRNIC_MAX_MCAST_QP_ATTACH + 1)
#define SLOT 2048
#define MSG 300

struct t {
	struct srnic_cq *cq[2];
	struct srnic_qp *a;            /* sender, on A */
	struct srnic_qp *b[NQP];       /* on B */
	struct srnic_ah *ah;
	uint8_t *sbuf, *rbuf;
	struct srnic_mr *smr, *rmr;
	uint32_t nwc[2];
	struct ibv_wc wc[2][256];
};

static struct t T;

static int64_t
stat1(int side, const char *name)
{
	int64_t v = srnic_dev_stat(E->p.dev[side], name);

	assert_true(v >= 0); /* the counter exists */
	return v;
}

/* 239.a.b.c, IPv4-mapped. */
static union ibv_gid
mgid4(uint8_t a, uint8_t b, uint8_t c)
{
	union ibv_gid g;
	const uint8_t ip[4] = { 239, a, b, c };

	srnic_gid_from_ipv4(&g, ip);
	return g;
}

static bool
t_poll(void)
{
	int s, n;

	for (s = 0; s < 2; s++) {
		n = srnic_poll_cq(T.cq[s], 16, &T.wc[s][T.nwc[s]]);
		assert_true(n >= 0);
		T.nwc[s] += (uint32_t)n;
		assert_true(T.nwc[s] < RTE_DIM(T.wc[0]) - 16);
	}
	return true;
}

static struct srnic_qp *
mk_qp(int side, enum ibv_qp_type type)
{
	struct srnic_qp_init_attr qa = {
		.send_cq = T.cq[side], .recv_cq = T.cq[side], .max_send_wr = 16,
		.max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1, .qp_type = type,
	};
	struct srnic_qp *qp = srnic_create_qp(E->p.pd[side], &qa);

	assert_non_null(qp);
	return qp;
}

static struct srnic_ah *
ah_to(const union ibv_gid *dgid, uint8_t sgid_index)
{
	struct ibv_ah_attr a;
	struct srnic_ah *ah;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = sgid_index;
	a.grh.dgid = *dgid;
	ah = srnic_create_ah(E->p.pd[0], &a);
	assert_non_null(ah);
	return ah;
}

static void
post_recv(struct srnic_qp *qp, uint64_t wr_id, uint8_t *buf)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = SLOT,
			       .lkey = srnic_mr_lkey(T.rmr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(srnic_post_recv(qp, &wr, &bad), 0);
}

static void
send_to(struct srnic_ah *ah, uint64_t wr_id, uint32_t off)
{
	struct ibv_sge sge = { .addr = (uintptr_t)T.sbuf + off, .length = MSG,
			       .lkey = srnic_mr_lkey(T.smr) };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = srnic_ah_ibv(ah);
	wr.wr.ud.remote_qpn = SRNIC_MCAST_QPN;
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(srnic_post_send(T.a, &wr, &bad), 0);
}

static int
t_setup(void **state)
{
	uint32_t i;

	RTE_SET_USED(state);
	memset(&T, 0, sizeof(T));
	e2e_reset();
	T.sbuf = e2e_buf(0, 64 * 1024, IBV_ACCESS_LOCAL_WRITE, &T.smr);
	T.rbuf = e2e_buf(1, (size_t)NQP * 4 * SLOT, IBV_ACCESS_LOCAL_WRITE, &T.rmr);
	for (i = 0; i < 64 * 1024; i++)
		T.sbuf[i] = (uint8_t)(i * 13 + 5);
	T.cq[0] = srnic_create_cq(E->p.dev[0], 256, E->eng[0]);
	T.cq[1] = srnic_create_cq(E->p.dev[1], 256, E->eng[1]);
	assert_non_null(T.cq[0]);
	assert_non_null(T.cq[1]);
	T.a = mk_qp(0, IBV_QPT_UD);
	e2e_ud_up(T.a, QKEY, 100);
	for (i = 0; i < 3; i++) {
		T.b[i] = mk_qp(1, IBV_QPT_UD);
		e2e_ud_up(T.b[i], i < 2 ? QKEY : QKEY + 1, 100);
	}
	return 0;
}

static int
t_teardown(void **state)
{
	uint32_t i;

	RTE_SET_USED(state);
	e2e_settle(4);
	assert_int_equal(srnic_destroy_qp(T.a), 0);
	for (i = 0; i < NQP; i++)
		if (T.b[i] != NULL)
			assert_int_equal(srnic_destroy_qp(T.b[i]), 0);
	if (T.ah != NULL)
		assert_int_equal(srnic_destroy_ah(T.ah), 0);
	assert_int_equal(srnic_destroy_cq(T.cq[0]), 0);
	assert_int_equal(srnic_destroy_cq(T.cq[1]), 0);
	e2e_qps_destroy(); /* the buffers */
	e2e_reset();
	return 0;
}

/* The one frame A sent last: to the group's MAC and address, QPN 0xFFFFFF. */
static void
check_frame(const uint8_t mac[6], const uint8_t ip4[4])
{
	uint32_t idx[64], n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	const struct e2e_pkt *k;

	assert_true(n > 0);
	k = &E->pkts[idx[n - 1]];
	assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
	assert_int_equal(k->opcode, SRNIC_OP_UD_SEND_ONLY);
	assert_int_equal(k->dqpn, SRNIC_MCAST_QPN);
	assert_int_equal(k->pay_len, MSG);
	assert_memory_equal(k->data, mac, 6);
	assert_memory_equal(k->data + k->l3_off + 16, ip4, 4); /* IPv4 destination */
	assert_int_equal(srnic_deth_qkey(e2e_hdr(k, SRNIC_HDR_DETH)), QKEY);
}

static void
test_mcast_two_qps(void **state)
{
	static const uint8_t mac[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	static const uint8_t ip4[4] = { 239, 1, 2, 3 };
	union ibv_gid g = mgid4(1, 2, 3), other = mgid4(9, 9, 9);
	uint32_t i, aqpn = srnic_qp_num(T.a);
	int64_t qkey_err = stat1(1, "rx_ud_qkey_err"), pkts0 = stat1(1, "rx_mcast_pkts");
	int64_t nogrp0 = stat1(1, "rx_mcast_no_group");
	struct srnic_ah *ah2;
	bool got[2] = { false, false };

	RTE_SET_USED(state);
	for (i = 0; i < 3; i++) {
		post_recv(T.b[i], 10 + i, T.rbuf + i * SLOT);
		assert_int_equal(srnic_attach_mcast(T.b[i], &g, 0), 0);
	}
	assert_int_equal(srnic_attach_mcast(T.b[0], &g, 0), 0); /* again: nothing */
	T.ah = ah_to(&g, SRNIC_GID_INDEX_IP);
	send_to(T.ah, 1, 0);
	E2E_RUN_UNTIL(t_poll() && T.nwc[0] >= 1 && T.nwc[1] >= 2 &&
		      stat1(1, "rx_ud_qkey_err") > qkey_err);
	e2e_settle(2);
	t_poll();
	check_frame(mac, ip4);
	assert_int_equal(T.nwc[0], 1);
	assert_int_equal(T.wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[0][0].opcode, IBV_WC_SEND);
	assert_int_equal(T.nwc[1], 2); /* b[2]'s Q_Key differs: not delivered */
	assert_int_equal(stat1(1, "rx_ud_qkey_err"), qkey_err + 1);
	assert_int_equal(stat1(1, "rx_mcast_pkts"), pkts0 + 1);
	for (i = 0; i < 2; i++) {
		const struct ibv_wc *wc = &T.wc[1][i];
		int q = wc->wr_id == 10 ? 0 : 1;
		const uint8_t *b = T.rbuf + q * SLOT;

		assert_true(wc->wr_id == 10 || wc->wr_id == 11);
		assert_false(got[q]);
		got[q] = true;
		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_RECV);
		assert_int_equal(wc->qp_num, srnic_qp_num(T.b[q]));
		assert_int_equal(wc->src_qp, aqpn);
		assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + MSG);
		assert_true(wc->wc_flags & IBV_WC_GRH);
		assert_memory_equal(b + SRNIC_GRH_LEN - 4, ip4, 4); /* GRH area: the IPv4 dst */
		assert_memory_equal(b + SRNIC_GRH_LEN, T.sbuf, MSG);
	}

	/* detached: dropped and counted, the WQEs stay */
	for (i = 0; i < 2; i++)
		post_recv(T.b[i], 20 + i, T.rbuf + (4 + i) * SLOT);
	for (i = 0; i < 3; i++)
		assert_int_equal(srnic_detach_mcast(T.b[i], &g, 0), 0);
	assert_int_equal(srnic_detach_mcast(T.b[0], &g, 0), -EINVAL); /* not attached */
	send_to(T.ah, 2, 1000);
	E2E_RUN_UNTIL(t_poll() && T.nwc[0] >= 2 && stat1(1, "rx_mcast_no_group") >= nogrp0 + 1);

	/* a group nobody joined, while another is joined */
	assert_int_equal(srnic_attach_mcast(T.b[0], &g, 0), 0);
	ah2 = ah_to(&other, SRNIC_GID_INDEX_IP);
	send_to(ah2, 3, 2000);
	E2E_RUN_UNTIL(t_poll() && T.nwc[0] >= 3 && stat1(1, "rx_mcast_no_group") >= nogrp0 + 2);
	e2e_settle(2);
	t_poll();
	assert_int_equal(T.nwc[1], 2);
	assert_int_equal(stat1(1, "rx_mcast_pkts"), pkts0 + 1);
	assert_int_equal(stat1(1, "rx_mcast_no_group"), nogrp0 + 2);
	assert_int_equal(srnic_destroy_ah(ah2), 0);

	/* joined again: the WQE posted before the drops takes the next one */
	send_to(T.ah, 4, 3000);
	E2E_RUN_UNTIL(t_poll() && T.nwc[1] >= 3);
	assert_int_equal(T.wc[1][2].wr_id, 20);
	assert_memory_equal(T.rbuf + 4 * SLOT + SRNIC_GRH_LEN, T.sbuf + 3000, MSG);
	assert_int_equal(srnic_detach_mcast(T.b[0], &g, 0), 0);
}

static void
test_mcast_ipv6_ah(void **state)
{
	static const uint8_t mac[6] = { 0x33, 0x33, 0x80, 0x00, 0x12, 0x34 };
	union ibv_gid g;
	uint32_t idx[64], n;
	const struct e2e_pkt *k;
	int64_t nogrp0 = stat1(1, "rx_mcast_no_group");

	RTE_SET_USED(state);
	memset(&g, 0, sizeof(g));
	g.raw[0] = 0xff;
	g.raw[1] = 0x0e;
	g.raw[12] = 0x80;
	g.raw[14] = 0x12;
	g.raw[15] = 0x34;
	/* from the link-local GID, IPv6 */
	T.ah = ah_to(&g, SRNIC_GID_INDEX_LL);
	send_to(T.ah, 1, 0);
	E2E_RUN_UNTIL(t_poll() && T.nwc[0] >= 1);
	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_true(n > 0);
	k = &E->pkts[idx[n - 1]];
	assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
	assert_int_equal(k->dqpn, SRNIC_MCAST_QPN);
	assert_memory_equal(k->data, mac, 6);
	assert_memory_equal(k->data + k->l3_off + 24, g.raw, 16); /* IPv6 destination */
	E2E_RUN_UNTIL(stat1(1, "rx_mcast_no_group") >= nogrp0 + 1);
}

static void
test_mcast_api(void **state)
{
	union ibv_gid g = mgid4(1, 2, 3), uni;
	struct ibv_device_attr da;
	struct srnic_qp *rc;
	uint32_t i;

	RTE_SET_USED(state);
	assert_int_equal(srnic_dev_query(E->p.dev[1], &da), 0);
	assert_int_equal(da.max_mcast_grp, SRNIC_MAX_MCAST_GRP);
	assert_int_equal(da.max_mcast_qp_attach, SRNIC_MAX_MCAST_QP_ATTACH);
	assert_int_equal(da.max_total_mcast_qp_attach, SRNIC_MAX_TOTAL_MCAST_QP_ATTACH);

	rc = mk_qp(1, IBV_QPT_RC);
	assert_int_equal(srnic_attach_mcast(rc, &g, 0), -EINVAL);
	assert_int_equal(srnic_destroy_qp(rc), 0);
	assert_int_equal(srnic_dev_gid(E->p.dev[1], SRNIC_GID_INDEX_IP, &uni), 0);
	assert_int_equal(srnic_attach_mcast(T.b[0], &uni, 0), -EINVAL);
	assert_int_equal(srnic_attach_mcast(NULL, &g, 0), -EINVAL);
	assert_int_equal(srnic_attach_mcast(T.b[0], NULL, 0), -EINVAL);

	/* attached: not destroyed */
	assert_int_equal(srnic_attach_mcast(T.b[0], &g, 0), 0);
	assert_int_equal(srnic_destroy_qp(T.b[0]), -EBUSY);
	assert_int_equal(srnic_detach_mcast(T.b[0], &g, 0), 0);

	/* groups per device */
	for (i = 0; i < SRNIC_MAX_MCAST_GRP; i++) {
		union ibv_gid gi = mgid4(2, (uint8_t)(i >> 8), (uint8_t)i);

		assert_int_equal(srnic_attach_mcast(T.b[0], &gi, 0), 0);
	}
	assert_int_equal(srnic_attach_mcast(T.b[1], &g, 0), -ENOMEM);
	for (i = 0; i < SRNIC_MAX_MCAST_GRP; i++) {
		union ibv_gid gi = mgid4(2, (uint8_t)(i >> 8), (uint8_t)i);

		assert_int_equal(srnic_detach_mcast(T.b[0], &gi, 0), 0);
	}
	/* QPs per group */
	for (i = 3; i < NQP; i++) {
		T.b[i] = mk_qp(1, IBV_QPT_UD);
		e2e_ud_up(T.b[i], QKEY, 100);
	}
	for (i = 0; i < SRNIC_MAX_MCAST_QP_ATTACH; i++)
		assert_int_equal(srnic_attach_mcast(T.b[i], &g, 0), 0);
	assert_int_equal(srnic_attach_mcast(T.b[NQP - 1], &g, 0), -ENOMEM);
	for (i = 0; i < SRNIC_MAX_MCAST_QP_ATTACH; i++)
		assert_int_equal(srnic_detach_mcast(T.b[i], &g, 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mcast_two_qps, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_mcast_ipv6_ah, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_mcast_api, t_setup, t_teardown),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
