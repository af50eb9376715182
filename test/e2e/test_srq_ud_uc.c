/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD and UC QPs with a shared receive queue, end to end over the net_ring
 * pair (B's QPs take from an SRQ on B, A's send):
 * - a UD QP with an SRQ: datagrams from two senders land in the SRQ's
 *   WQEs in posting order (GRH area + payload, qp_num/src_qp/byte_len/
 *   wc_flags); srnic_post_recv() on it is EINVAL; an empty SRQ drops the
 *   datagram (rx_ud_no_recv_wqe, UD has no RNR) and a post recovers; the
 *   limit event fires once when a UD take crosses srq_limit;
 * - two UD QPs on one SRQ: each completion names its QP; a datagram larger
 *   than the SRQ's next WQE is dropped (class D) and that WQE waits for
 *   the next datagram that fits, to either QP;
 * - a UC QP with an SRQ: a 4 KiB SEND at PMTU 1024 into one WQE; an empty
 *   SRQ drops the message (rx_uc_no_recv_wqe, no RNR counted) and the next
 *   lands after a post; the QP to ERR mid-message flushes only the WQE it
 *   took, raises LAST_WQE_REACHED, and a sibling gets the SRQ's next WQE;
 *   a SEND longer than the WQE it took is dropped (class D1), the WQE
 *   kept for the QP's next SEND;
 * - an RC, a UD and a UC QP on one SRQ: every WQE consumed once, each
 *   completion on the QP its message came to.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "e2e_fixture.h"

#define QKEY 0x5eed0001u
#define NQP 4                      /* QPs per side at most */
#define SLOT 8192                  /* receive buffer per WQE */
#define NSLOT 64
#define UC_MSG 4096                /* four packets at PMTU 1024 */

/* This test's objects; teardown destroys what is left. */
struct t {
	struct srnic_cq *cq[2];
	struct srnic_srq *srq;
	struct srnic_qp *a[NQP];       /* on A */
	struct srnic_qp *b[NQP];       /* on B */
	struct srnic_ah *ah;           /* A's, to B */
	uint8_t *sbuf, *rbuf;
	struct srnic_mr *smr, *rmr;
	uint32_t nwc[2];
	struct ibv_wc wc[2][1024];
};

static struct t T;

static int64_t
stat1(int side, const char *name)
{
	int64_t v = srnic_dev_stat(E->p.dev[side], name);

	assert_true(v >= 0); /* the counter exists */
	return v;
}

static void
events_drain(int side)
{
	struct srnic_async_event ev;

	while (srnic_get_async_event(E->p.dev[side], &ev) == 0)
		;
}

static int
t_setup(void **state)
{
	RTE_SET_USED(state);
	memset(&T, 0, sizeof(T));
	e2e_reset();
	events_drain(0);
	events_drain(1);
	T.sbuf = e2e_buf(0, (size_t)NSLOT * SLOT, IBV_ACCESS_LOCAL_WRITE, &T.smr);
	T.rbuf = e2e_buf(1, (size_t)NSLOT * SLOT, E2E_RALL, &T.rmr);
	T.cq[0] = srnic_create_cq(E->p.dev[0], 1024, E->eng[0]);
	T.cq[1] = srnic_create_cq(E->p.dev[1], 1024, E->eng[1]);
	assert_non_null(T.cq[0]);
	assert_non_null(T.cq[1]);
	return 0;
}

static int
t_teardown(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int i;

	RTE_SET_USED(state);
	for (i = 0; i < NQP; i++) {
		if (T.a[i] != NULL)
			srnic_modify_qp(T.a[i], &a, IBV_QP_STATE);
		if (T.b[i] != NULL)
			srnic_modify_qp(T.b[i], &a, IBV_QP_STATE);
	}
	e2e_settle(4);
	for (i = 0; i < NQP; i++) {
		if (T.a[i] != NULL)
			assert_int_equal(srnic_destroy_qp(T.a[i]), 0);
		if (T.b[i] != NULL)
			assert_int_equal(srnic_destroy_qp(T.b[i]), 0);
	}
	e2e_settle(4);
	if (T.ah != NULL)
		assert_int_equal(srnic_destroy_ah(T.ah), 0);
	if (T.srq != NULL)
		assert_int_equal(srnic_destroy_srq(T.srq), 0);
	for (i = 0; i < 2; i++)
		if (T.cq[i] != NULL)
			assert_int_equal(srnic_destroy_cq(T.cq[i]), 0);
	e2e_qps_destroy(); /* the buffers */
	e2e_reset();
	events_drain(0);
	events_drain(1);
	return 0;
}

static struct srnic_srq *
mk_srq(uint32_t max_wr, uint32_t limit)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = max_wr, .max_sge = 1,
						  .srq_limit = limit } };
	struct srnic_srq *srq = srnic_create_srq(E->p.pd[1], &ia, E->eng[1]);

	assert_non_null(srq);
	return srq;
}

static struct srnic_qp *
mk_qp(int side, enum ibv_qp_type type, struct srnic_srq *srq)
{
	struct srnic_qp_init_attr qa = {
		.send_cq = T.cq[side], .recv_cq = T.cq[side], .max_send_wr = 64,
		.max_recv_wr = 64, .max_send_sge = 1, .max_recv_sge = 1, .qp_type = type,
	};
	struct srnic_qp *qp;

	if (srq != NULL) {
		qa.comp_mask = SRNIC_QP_INIT_ATTR_SRQ;
		qa.srq = srq;
	}
	qp = srnic_create_qp(E->p.pd[side], &qa);
	assert_non_null(qp);
	if (srq != NULL)
		assert_int_equal(qa.max_recv_wr, 0);
	return qp;
}

/* A UC QP on side to peer (on the other side), path MTU 1024, to RTS. */
static void
uc_connect(struct srnic_qp *qp, int side, struct srnic_qp *peer, uint32_t sq_psn,
	   uint32_t rq_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = srnic_qp_num(peer);
	a.rq_psn = rq_psn;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = SRNIC_GID_INDEX_IP;
	assert_int_equal(srnic_dev_gid(E->p.dev[1 - side], SRNIC_GID_INDEX_IP,
				       &a.ah_attr.grh.dgid), 0);
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

/* An RC QP on side to peer, PMTU 1024, to RTS. */
static void
rc_connect(struct srnic_qp *qp, int side, struct srnic_qp *peer)
{
	struct srnic_test_path p = {
		.access = E2E_RALL, .mtu = IBV_MTU_1024, .dest_qpn = srnic_qp_num(peer),
		.rq_psn = side == 0 ? 7000 : 2000, .max_dest_rd_atomic = 16,
		.sq_psn = side == 0 ? 2000 : 7000, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .max_rd_atomic = 16,
	};

	assert_int_equal(srnic_dev_gid(E->p.dev[1 - side], SRNIC_GID_INDEX_IP, &p.dgid), 0);
	assert_int_equal(srnic_test_qp_connect(qp, &p), 0);
}

/* A's AH to B's address. */
static struct srnic_ah *
ah_to_b(void)
{
	struct ibv_ah_attr a;
	struct srnic_ah *ah;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.sgid_index = SRNIC_GID_INDEX_IP;
	assert_int_equal(srnic_dev_gid(E->p.dev[1], SRNIC_GID_INDEX_IP, &a.grh.dgid), 0);
	ah = srnic_create_ah(E->p.pd[0], &a);
	assert_non_null(ah);
	return ah;
}

static void
t_poll(void)
{
	int s, n;

	e2e_poll();
	for (s = 0; s < 2; s++) {
		n = srnic_poll_cq(T.cq[s], 64, &T.wc[s][T.nwc[s]]);
		if (n > 0)
			T.nwc[s] += (uint32_t)n;
	}
}

#define T_RUN_UNTIL(cond) do { \
	uint64_t dl__ = e2e_deadline(); \
	while (!(cond)) { \
		if (e2e_deadline_passed(dl__)) \
			fail_msg("timeout waiting for %s (%s:%d)", #cond, __FILE__, __LINE__); \
		t_poll(); \
	} \
} while (0)

/* A few quiet rounds, draining T's CQs. */
static void
t_settle(void)
{
	int i;

	for (i = 0; i < 64; i++)
		t_poll();
}

static void
wait_event(int side, struct srnic_async_event *ev)
{
	uint64_t dl = e2e_deadline();

	while (srnic_get_async_event(E->p.dev[side], ev) != 0) {
		if (e2e_deadline_passed(dl))
			fail_msg("no async event on side %d", side);
		t_poll();
	}
}

static void
assert_no_event(int side)
{
	struct srnic_async_event ev;

	t_settle();
	if (srnic_get_async_event(E->p.dev[side], &ev) == 0)
		fail_msg("unexpected event %d (qp_num %#x) on side %d", ev.event_type, ev.qp_num,
			 side);
}

/* A receive WQE of len bytes at slot of B's buffer (the slot zeroed). */
static void
post_srq_len(uint64_t wr_id, uint32_t slot, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(T.rbuf + (size_t)slot * SLOT),
			       .length = len, .lkey = srnic_mr_lkey(T.rmr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	memset(T.rbuf + (size_t)slot * SLOT, 0, SLOT);
	assert_int_equal(srnic_post_srq_recv(T.srq, &wr, &bad), 0);
}

static void
post_srq(uint64_t wr_id, uint32_t slot)
{
	post_srq_len(wr_id, slot, SLOT);
}

static uint8_t *
slot_of(uint32_t slot)
{
	return T.rbuf + (size_t)slot * SLOT;
}

/* A datagram of len bytes (srnic_test_fill(seed), at slot's place in A's
 * buffer) from A's QP qp to B's QP dqp; imm != 0: SEND with immediate. */
static void
ud_send(struct srnic_qp *qp, struct srnic_qp *dqp, uint64_t wr_id, uint32_t slot, uint32_t len,
	uint32_t seed, uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(T.sbuf + (size_t)slot * SLOT), .length = len,
			       .lkey = srnic_mr_lkey(T.smr) };
	struct ibv_send_wr wr, *bad = NULL;

	srnic_test_fill(T.sbuf + (size_t)slot * SLOT, len, seed);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = imm != 0 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = rte_cpu_to_be_32(imm);
	wr.wr.ud.ah = srnic_ah_ibv(T.ah);
	wr.wr.ud.remote_qpn = srnic_qp_num(dqp);
	wr.wr.ud.remote_qkey = QKEY;
	assert_int_equal(srnic_post_send(qp, &wr, &bad), 0);
}

/* A SEND of len bytes (srnic_test_fill(seed)) on a connected QP of A. */
static void
conn_send(struct srnic_qp *qp, uint64_t wr_id, uint32_t slot, uint32_t len, uint32_t seed)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(T.sbuf + (size_t)slot * SLOT), .length = len,
			       .lkey = srnic_mr_lkey(T.smr) };

	srnic_test_fill(T.sbuf + (size_t)slot * SLOT, len, seed);
	assert_int_equal(srnic_test_post_send(qp, IBV_WR_SEND, wr_id, &sge, 1, 0, 0,
					      IBV_SEND_SIGNALED), 0);
}

/* B's receive buffer at slot holds the GRH area of frame k (IPv4: 20
 * zero bytes, then its IP header) and len bytes of srnic_test_fill(seed). */
static void
check_ud_slot(uint32_t slot, const struct e2e_pkt *k, uint32_t len, uint32_t seed)
{
	static const uint8_t zero[20];
	uint8_t *want = malloc(len);
	const uint8_t *b = slot_of(slot);

	assert_non_null(want);
	srnic_test_fill(want, len, seed);
	assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
	assert_memory_equal(b, zero, 20);
	assert_memory_equal(b + 20, k->data + k->l3_off, 20);
	assert_memory_equal(b + SRNIC_GRH_LEN, want, len);
	/* nothing past the datagram */
	assert_int_equal(b[SRNIC_GRH_LEN + len], 0);
	free(want);
}

static void
check_slot(uint32_t slot, uint32_t len, uint32_t seed)
{
	uint8_t *want = malloc(len);

	assert_non_null(want);
	srnic_test_fill(want, len, seed);
	assert_memory_equal(slot_of(slot), want, len);
	assert_int_equal(slot_of(slot)[len], 0);
	free(want);
}

/* The n-th receive completion on B (counting only RECVs) */
static const struct ibv_wc *
b_recv(uint32_t n)
{
	uint32_t i, k = 0;

	for (i = 0; i < T.nwc[1]; i++)
		if (T.wc[1][i].opcode & IBV_WC_RECV)
			if (k++ == n)
				return &T.wc[1][i];
	fail_msg("no receive completion %u on B", n);
	return NULL;
}

/* ---- a UD QP with an SRQ ---- */

static void
test_srq_ud_recv(void **state)
{
	/* datagram i: sender, length, immediate */
	static const uint32_t len[4] = { 100, 333, 1, 4000 };
	static const uint32_t imm[4] = { 0, 0xabcd, 0x77, 0 };
	struct srnic_qp *snd[4];
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *bad = NULL;
	struct ibv_sge sge = { .addr = (uintptr_t)T.rbuf, .length = 64,
			       .lkey = srnic_mr_lkey(T.rmr) };
	struct srnic_async_event ev;
	struct ibv_srq_attr sa;
	uint32_t idx[16], n, i;
	int64_t norecv;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	T.a[0] = mk_qp(0, IBV_QPT_UD, NULL);
	T.a[1] = mk_qp(0, IBV_QPT_UD, NULL);
	T.b[0] = mk_qp(1, IBV_QPT_UD, T.srq);
	e2e_ud_up(T.a[0], QKEY, 100);
	e2e_ud_up(T.a[1], QKEY, 200);
	e2e_ud_up(T.b[0], QKEY, 300);
	T.ah = ah_to_b();
	snd[0] = T.a[0];
	snd[1] = T.a[1];
	snd[2] = T.a[1];
	snd[3] = T.a[0];

	/* the QP's own receive queue is not there to post to */
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	assert_int_equal(srnic_post_recv(T.b[0], &rwr, &bad), EINVAL);
	assert_ptr_equal(bad, &rwr);

	/* four datagrams from two senders, one after the other: WQE i each */
	for (i = 0; i < 4; i++)
		post_srq(100 + i, i);
	for (i = 0; i < 4; i++) {
		ud_send(snd[i], T.b[0], i, i, len[i], 10 + i, imm[i]);
		T_RUN_UNTIL(T.nwc[1] == i + 1);
	}
	T_RUN_UNTIL(T.nwc[0] == 4);
	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 4);
	for (i = 0; i < 4; i++) {
		const struct ibv_wc *wc = &T.wc[1][i];

		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_RECV);
		assert_int_equal(wc->wr_id, 100 + i);          /* posting order */
		assert_int_equal(wc->qp_num, srnic_qp_num(T.b[0]));
		assert_int_equal(wc->src_qp, srnic_qp_num(snd[i]));
		assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + len[i]);
		assert_int_equal(wc->wc_flags, IBV_WC_GRH | (imm[i] != 0 ? IBV_WC_WITH_IMM : 0));
		if (imm[i] != 0)
			assert_int_equal(wc->imm_data, rte_cpu_to_be_32(imm[i]));
		assert_int_equal(E->pkts[idx[i]].pay_len, len[i]);
		assert_int_equal(srnic_deth_sqpn(e2e_hdr(&E->pkts[idx[i]], SRNIC_HDR_DETH)),
				 srnic_qp_num(snd[i]));
		check_ud_slot(i, &E->pkts[idx[i]], len[i], 10 + i);
		assert_int_equal(T.wc[0][i].status, IBV_WC_SUCCESS);
		assert_int_equal(T.wc[0][i].wr_id, i);
	}

	/* the SRQ empty: dropped and counted, no completion, no RNR */
	norecv = stat1(1, "rx_ud_no_recv_wqe");
	e2e_reset();
	ud_send(T.a[0], T.b[0], 10, 10, 50, 99, 0);
	T_RUN_UNTIL(stat1(1, "rx_ud_no_recv_wqe") == norecv + 1);
	t_settle();
	assert_int_equal(T.nwc[1], 4);
	assert_int_equal(e2e_pkts_from(1, idx, RTE_DIM(idx)), 0); /* B answers nothing */
	/* a post recovers: the next datagram lands in it */
	post_srq(110, 10);
	ud_send(T.a[1], T.b[0], 11, 11, 60, 98, 0);
	T_RUN_UNTIL(T.nwc[1] == 5);
	assert_int_equal(T.wc[1][4].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][4].wr_id, 110);
	assert_int_equal(T.wc[1][4].src_qp, srnic_qp_num(T.a[1]));
	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 2);
	check_ud_slot(10, &E->pkts[idx[1]], 60, 98);
	assert_int_equal(stat1(1, "rx_ud_no_recv_wqe"), norecv + 1);

	/* the limit: 3 posted, limit 2; the first take leaves 2 (no event),
	 * the second 1 (the event, once), the third 0 (none: disarmed) */
	for (i = 0; i < 3; i++)
		post_srq(120 + i, 20 + i);
	memset(&sa, 0, sizeof(sa));
	sa.srq_limit = 2;
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_LIMIT), 0);
	events_drain(1);
	ud_send(T.a[0], T.b[0], 20, 20, 30, 1, 0);
	T_RUN_UNTIL(T.nwc[1] == 6);
	assert_no_event(1);
	ud_send(T.a[0], T.b[0], 21, 21, 31, 2, 0);
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.srq, T.srq);
	assert_int_equal(ev.srq_num, srnic_srq_num(T.srq));
	T_RUN_UNTIL(T.nwc[1] == 7);
	memset(&sa, 0, sizeof(sa));
	assert_int_equal(srnic_query_srq(T.srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 0);
	ud_send(T.a[0], T.b[0], 22, 22, 32, 3, 0);
	T_RUN_UNTIL(T.nwc[1] == 8);
	assert_no_event(1);
	for (i = 0; i < 3; i++) {
		assert_int_equal(T.wc[1][5 + i].status, IBV_WC_SUCCESS);
		assert_int_equal(T.wc[1][5 + i].wr_id, 120 + i);
		assert_int_equal(T.wc[1][5 + i].byte_len, SRNIC_GRH_LEN + 30 + i);
	}
	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 5);
	for (i = 0; i < 3; i++)
		check_ud_slot(20 + i, &E->pkts[idx[2 + i]], 30 + i, 1 + i);
}

/* ---- two UD QPs on one SRQ: completions name each QP ---- */

static void
test_srq_two_ud(void **state)
{
	uint32_t idx[64], n, i, got[2] = { 0, 0 };

	RTE_SET_USED(state);
	T.srq = mk_srq(32, 0);
	T.a[0] = mk_qp(0, IBV_QPT_UD, NULL);
	T.b[0] = mk_qp(1, IBV_QPT_UD, T.srq);
	T.b[1] = mk_qp(1, IBV_QPT_UD, T.srq);
	e2e_ud_up(T.a[0], QKEY, 10);
	e2e_ud_up(T.b[0], QKEY, 20);
	e2e_ud_up(T.b[1], QKEY, 30);
	T.ah = ah_to_b();
	for (i = 0; i < 12; i++)
		post_srq(200 + i, i);
	/* 12 datagrams, to B's QPs in turn 0 1 1 0 0 1 ..., sent one after
	 * the other: datagram i takes WQE i */
	for (i = 0; i < 12; i++) {
		ud_send(T.a[0], T.b[((i + 1) / 2) % 2], i, i, 64 + i, 50 + i, 0);
		T_RUN_UNTIL(T.nwc[1] == i + 1);
	}
	T_RUN_UNTIL(T.nwc[0] == 12);
	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 12);
	for (i = 0; i < 12; i++) {
		const struct ibv_wc *wc = &T.wc[1][i];
		int q = ((i + 1) / 2) % 2;

		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->wr_id, 200 + i);
		assert_int_equal(wc->qp_num, srnic_qp_num(T.b[q]));
		assert_int_equal(E->pkts[idx[i]].dqpn, srnic_qp_num(T.b[q]));
		assert_int_equal(wc->src_qp, srnic_qp_num(T.a[0]));
		assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + 64 + i);
		check_ud_slot(i, &E->pkts[idx[i]], 64 + i, 50 + i);
		got[q]++;
	}
	assert_int_equal(got[0], 6);
	assert_int_equal(got[1], 6);
	/* none left: the next datagram, to either QP, is dropped */
	{
		int64_t nr = stat1(1, "rx_ud_no_recv_wqe");

		ud_send(T.a[0], T.b[1], 30, 30, 10, 1, 0);
		T_RUN_UNTIL(stat1(1, "rx_ud_no_recv_wqe") == nr + 1);
		t_settle();
		assert_int_equal(T.nwc[1], 12);
	}
}

/* A UD QP with an SRQ whose next WQE is too small for the datagram: class
 * D as without an SRQ (rxe completes it REM_INV_REQ_ERR, class E: that
 * would let any sender burn the SRQ's WQEs): dropped and counted, no
 * completion, no event, the QP in RTS and the WQE left at the SRQ's head,
 * untouched; the next datagram that fits, to either QP, takes it. */
static void
test_srq_ud_too_small(void **state)
{
	uint32_t idx[8];
	int64_t small, lw;

	RTE_SET_USED(state);
	T.srq = mk_srq(8, 0);
	T.a[0] = mk_qp(0, IBV_QPT_UD, NULL);
	T.b[0] = mk_qp(1, IBV_QPT_UD, T.srq);
	T.b[1] = mk_qp(1, IBV_QPT_UD, T.srq);
	e2e_ud_up(T.a[0], QKEY, 10);
	e2e_ud_up(T.b[0], QKEY, 20);
	e2e_ud_up(T.b[1], QKEY, 30);
	T.ah = ah_to_b();
	small = stat1(1, "rx_ud_recv_too_small");
	lw = stat1(1, "srq_last_wqe_reached");
	post_srq_len(600, 0, SRNIC_GRH_LEN + 99);
	post_srq(601, 1);
	post_srq(602, 2);
	ud_send(T.a[0], T.b[0], 1, 0, 100, 40, 0);
	T_RUN_UNTIL(stat1(1, "rx_ud_recv_too_small") == small + 1);
	assert_no_event(1);
	assert_int_equal(T.nwc[1], 0);
	assert_int_equal(srnic_qp_state(T.b[0]), IBV_QPS_RTS);
	assert_int_equal(slot_of(0)[0], 0); /* nothing written */
	/* 40 + 99 bytes fit 600 exactly: the sibling's datagram takes it */
	e2e_reset();
	ud_send(T.a[0], T.b[1], 2, 1, 99, 41, 0);
	T_RUN_UNTIL(T.nwc[1] == 1);
	assert_int_equal(T.wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][0].wr_id, 600);
	assert_int_equal(T.wc[1][0].qp_num, srnic_qp_num(T.b[1]));
	assert_int_equal(T.wc[1][0].byte_len, SRNIC_GRH_LEN + 99);
	assert_int_equal(e2e_pkts_from(0, idx, RTE_DIM(idx)), 1);
	check_ud_slot(0, &E->pkts[idx[0]], 99, 41);
	/* and the QP that dropped one receives the next as ever */
	e2e_reset();
	ud_send(T.a[0], T.b[0], 3, 2, 100, 42, 0);
	T_RUN_UNTIL(T.nwc[1] == 2);
	assert_int_equal(T.wc[1][1].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][1].wr_id, 601);
	assert_int_equal(T.wc[1][1].qp_num, srnic_qp_num(T.b[0]));
	assert_int_equal(e2e_pkts_from(0, idx, RTE_DIM(idx)), 1);
	check_ud_slot(1, &E->pkts[idx[0]], 100, 42);
	assert_int_equal(stat1(1, "rx_ud_recv_too_small"), small + 1);
	assert_int_equal(stat1(1, "srq_last_wqe_reached"), lw);
	assert_no_event(1);
}

/* ---- a UC QP with an SRQ ---- */

static void
uc_pairs(int n)
{
	int i;

	for (i = 0; i < n; i++) {
		T.a[i] = mk_qp(0, IBV_QPT_UC, NULL);
		T.b[i] = mk_qp(1, IBV_QPT_UC, T.srq);
	}
	for (i = 0; i < n; i++) {
		uc_connect(T.a[i], 0, T.b[i], 1000 + 100 * i, 5000 + 100 * i);
		uc_connect(T.b[i], 1, T.a[i], 5000 + 100 * i, 1000 + 100 * i);
	}
}

static void
test_srq_uc(void **state)
{
	int64_t norecv, rnr, msgdrop;
	uint32_t idx[16], i;
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	uc_pairs(1);

	/* 4 KiB in four packets into one SRQ WQE */
	post_srq(300, 0);
	conn_send(T.a[0], 1, 0, UC_MSG, 7);
	T_RUN_UNTIL(T.nwc[1] == 1 && T.nwc[0] == 1);
	assert_int_equal(e2e_pkts_from(0, idx, RTE_DIM(idx)), 4);
	assert_int_equal(E->pkts[idx[0]].opcode, SRNIC_OP_UC_SEND_FIRST);
	assert_int_equal(E->pkts[idx[1]].opcode, SRNIC_OP_UC_SEND_MIDDLE);
	assert_int_equal(E->pkts[idx[2]].opcode, SRNIC_OP_UC_SEND_MIDDLE);
	assert_int_equal(E->pkts[idx[3]].opcode, SRNIC_OP_UC_SEND_LAST);
	for (i = 0; i < 4; i++)
		assert_int_equal(E->pkts[idx[i]].pay_len, 1024);
	wc = &T.wc[1][0];
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RECV);
	assert_int_equal(wc->wr_id, 300);
	assert_int_equal(wc->byte_len, UC_MSG);
	assert_int_equal(wc->qp_num, srnic_qp_num(T.b[0]));
	assert_int_equal(wc->src_qp, srnic_qp_num(T.a[0]));
	check_slot(0, UC_MSG, 7);

	/* the SRQ empty: the message is dropped (UC has no RNR: nothing goes
	 * back, no RNR counted), the next one lands after a post */
	norecv = stat1(1, "rx_uc_no_recv_wqe");
	rnr = stat1(1, "srq_empty_rnr");
	e2e_reset();
	conn_send(T.a[0], 2, 1, UC_MSG, 8);
	T_RUN_UNTIL(stat1(1, "rx_uc_no_recv_wqe") == norecv + 1 && T.nwc[0] == 2);
	t_settle();
	assert_int_equal(T.nwc[1], 1);
	assert_int_equal(e2e_pkts_from(1, idx, RTE_DIM(idx)), 0);
	assert_int_equal(stat1(1, "srq_empty_rnr"), rnr);
	post_srq(301, 1);
	conn_send(T.a[0], 3, 2, UC_MSG, 9);
	T_RUN_UNTIL(T.nwc[1] == 2 && T.nwc[0] == 3);
	wc = &T.wc[1][1];
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, 301);
	assert_int_equal(wc->byte_len, UC_MSG);
	check_slot(1, UC_MSG, 9);
	assert_int_equal(stat1(1, "rx_uc_no_recv_wqe"), norecv + 1);
	assert_int_equal(stat1(1, "srq_empty_rnr"), rnr);

	/* a lost MIDDLE abandons the message; its WQE stays taken and the
	 * next SEND fills it from its start */
	msgdrop = stat1(1, "rx_uc_msg_drop");
	post_srq(302, 2);
	post_srq(303, 3);
	e2e_reset();
	e2e_drop_arm(0, SRNIC_OP_UC_SEND_MIDDLE, 0, 1);
	conn_send(T.a[0], 4, 3, UC_MSG, 10);
	T_RUN_UNTIL(T.nwc[0] == 4 && stat1(1, "rx_uc_msg_drop") == msgdrop + 1);
	t_settle();
	assert_int_equal(E->drop.dropped, 1);
	assert_int_equal(T.nwc[1], 2);
	conn_send(T.a[0], 5, 4, 2000, 11);
	T_RUN_UNTIL(T.nwc[1] == 3);
	wc = &T.wc[1][2];
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, 302);
	assert_int_equal(wc->byte_len, 2000);
	assert_memory_equal(slot_of(2), T.sbuf + 4 * SLOT, 2000);
	/* 303 is still in the SRQ */
	conn_send(T.a[0], 6, 5, 100, 12);
	T_RUN_UNTIL(T.nwc[1] == 4);
	assert_int_equal(T.wc[1][3].wr_id, 303);
	check_slot(3, 100, 12);
}

/* A UC QP with an SRQ to ERR mid-message: only its WQE flushed, the
 * last WQE event, the SRQ's other WQEs for its sibling. */
static void
test_srq_uc_err_mid_message(void **state)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct srnic_async_event ev;
	uint32_t i;
	int64_t lw, pkts;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	uc_pairs(2);
	post_srq(400, 0);
	post_srq(401, 1);
	post_srq(402, 2);
	lw = stat1(1, "srq_last_wqe_reached");
	pkts = stat1(1, "rx_uc_pkts");
	/* B's QP 0 gets FIRST and MIDDLEs of a 4 KiB SEND, not its LAST */
	e2e_drop_arm(0, SRNIC_OP_UC_SEND_LAST, 0, 1);
	conn_send(T.a[0], 1, 0, UC_MSG, 20);
	T_RUN_UNTIL(T.nwc[0] == 1 && E->drop.dropped == 1 && stat1(1, "rx_uc_pkts") == pkts + 3);
	t_settle();
	assert_int_equal(T.nwc[1], 0);
	/* the part that came is in WQE 400's buffer */
	assert_memory_equal(slot_of(0), T.sbuf, 3 * 1024);
	assert_int_equal(srnic_modify_qp(T.b[0], &qa, IBV_QP_STATE), 0);
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.qp, T.b[0]);
	assert_int_equal(ev.qp_num, srnic_qp_num(T.b[0]));
	T_RUN_UNTIL(T.nwc[1] == 1);
	assert_int_equal(T.wc[1][0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(T.wc[1][0].wr_id, 400);
	assert_int_equal(T.wc[1][0].qp_num, srnic_qp_num(T.b[0]));
	assert_no_event(1); /* once */
	assert_int_equal(stat1(1, "srq_last_wqe_reached"), lw + 1);
	assert_int_equal(T.nwc[1], 1);      /* 401 and 402 were not flushed */
	/* the sibling takes them */
	for (i = 0; i < 2; i++) {
		conn_send(T.a[1], 10 + i, 10 + i, UC_MSG - 1 - i, 30 + i);
		T_RUN_UNTIL(T.nwc[1] == 2 + i);
		assert_int_equal(T.wc[1][1 + i].status, IBV_WC_SUCCESS);
		assert_int_equal(T.wc[1][1 + i].wr_id, 401 + i);
		assert_int_equal(T.wc[1][1 + i].qp_num, srnic_qp_num(T.b[1]));
		assert_int_equal(T.wc[1][1 + i].byte_len, UC_MSG - 1 - i);
		check_slot(1 + i, UC_MSG - 1 - i, 30 + i);
	}
}

/* A UC SEND longer than the SRQ WQE it took: class D1 as without an SRQ
 * (rxe's class E completion would let any peer burn the SRQ's WQEs):
 * dropped at the packet that would overflow, counted, no completion, no
 * event, the QP in RTS, nothing written past the WQE; the WQE stays with
 * the QP for its next SEND, and the SRQ's next WQE for the one after. */
static void
test_srq_uc_too_small(void **state)
{
	int64_t small, lw;

	RTE_SET_USED(state);
	T.srq = mk_srq(8, 0);
	uc_pairs(1);
	small = stat1(1, "rx_uc_recv_too_small");
	lw = stat1(1, "srq_last_wqe_reached");
	post_srq_len(700, 0, 2000);
	post_srq(701, 1);
	conn_send(T.a[0], 1, 0, UC_MSG, 20);
	T_RUN_UNTIL(stat1(1, "rx_uc_recv_too_small") == small + 1 && T.nwc[0] == 1);
	assert_no_event(1);
	assert_int_equal(T.nwc[1], 0);
	assert_int_equal(srnic_qp_state(T.b[0]), IBV_QPS_RTS);
	assert_int_equal(slot_of(0)[2000], 0); /* nothing past the WQE */
	conn_send(T.a[0], 2, 1, 1500, 21);
	T_RUN_UNTIL(T.nwc[1] == 1);
	assert_int_equal(T.wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][0].wr_id, 700);
	assert_int_equal(T.wc[1][0].byte_len, 1500);
	check_slot(0, 1500, 21);
	conn_send(T.a[0], 3, 2, UC_MSG, 22);
	T_RUN_UNTIL(T.nwc[1] == 2);
	assert_int_equal(T.wc[1][1].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][1].wr_id, 701);
	check_slot(1, UC_MSG, 22);
	assert_int_equal(stat1(1, "rx_uc_recv_too_small"), small + 1);
	assert_int_equal(stat1(1, "srq_last_wqe_reached"), lw);
	assert_no_event(1);
}

/* ---- an RC, a UD and a UC QP on one SRQ ---- */

static void
test_srq_rc_ud_uc(void **state)
{
	enum { RC, UD, UC };
	static const uint32_t len[3] = { 5000, 1000, 3000 };
	uint32_t i, seen[24] = { 0 }, per[3] = { 0, 0, 0 };
	const uint32_t n = 18;
	int64_t nr;

	RTE_SET_USED(state);
	T.srq = mk_srq(32, 0);
	T.a[RC] = mk_qp(0, IBV_QPT_RC, NULL);
	T.a[UD] = mk_qp(0, IBV_QPT_UD, NULL);
	T.a[UC] = mk_qp(0, IBV_QPT_UC, NULL);
	T.b[RC] = mk_qp(1, IBV_QPT_RC, T.srq);
	T.b[UD] = mk_qp(1, IBV_QPT_UD, T.srq);
	T.b[UC] = mk_qp(1, IBV_QPT_UC, T.srq);
	rc_connect(T.a[RC], 0, T.b[RC]);
	rc_connect(T.b[RC], 1, T.a[RC]);
	e2e_ud_up(T.a[UD], QKEY, 40);
	e2e_ud_up(T.b[UD], QKEY, 50);
	uc_connect(T.a[UC], 0, T.b[UC], 60, 70);
	uc_connect(T.b[UC], 1, T.a[UC], 70, 60);
	T.ah = ah_to_b();
	for (i = 0; i < n; i++)
		post_srq(500 + i, i);
	/* six messages to each, posted all at once, round robin: the order
	 * they take WQEs in (and complete, an RC SEND at its LAST) is the
	 * engine's; each takes one */
	for (i = 0; i < n; i++) {
		uint32_t q = i % 3;

		if (q == UD)
			ud_send(T.a[UD], T.b[UD], i, i, len[UD] + i, 100 + i, 0);
		else
			conn_send(T.a[q], i, i, len[q] + i, 100 + i);
	}
	T_RUN_UNTIL(T.nwc[1] == n && T.nwc[0] == n);
	t_settle();
	assert_int_equal(T.nwc[1], n);
	for (i = 0; i < n; i++) {
		const struct ibv_wc *wc = b_recv(i);
		uint32_t w = (uint32_t)(wc->wr_id - 500), q, m;
		int k;

		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_RECV);
		assert_true(w < n);
		assert_int_equal(seen[w], 0);        /* each WQE once */
		seen[w] = 1;
		for (k = 0; k < 3; k++)
			if (wc->qp_num == srnic_qp_num(T.b[k]))
				break;
		assert_true(k < 3);
		q = (uint32_t)k;
		/* per QP, messages arrive in order: the per[q]-th message to q */
		m = q + 3 * per[q]++;
		assert_int_equal(wc->src_qp, srnic_qp_num(T.a[q]));
		if (q == UD) {
			assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + len[UD] + m);
			assert_int_equal(wc->wc_flags, IBV_WC_GRH);
			assert_memory_equal(slot_of(w) + SRNIC_GRH_LEN, T.sbuf + (size_t)m * SLOT,
					    len[UD] + m);
		} else {
			assert_int_equal(wc->byte_len, len[q] + m);
			assert_memory_equal(slot_of(w), T.sbuf + (size_t)m * SLOT, len[q] + m);
			assert_int_equal(slot_of(w)[len[q] + m], 0);
		}
	}
	for (i = 0; i < 3; i++)
		assert_int_equal(per[i], n / 3);
	for (i = 0; i < n; i++)
		assert_int_equal(T.wc[0][i].status, IBV_WC_SUCCESS);
	/* every WQE is gone: a datagram more finds none */
	nr = stat1(1, "rx_ud_no_recv_wqe");
	ud_send(T.a[UD], T.b[UD], 99, 30, 10, 1, 0);
	T_RUN_UNTIL(stat1(1, "rx_ud_no_recv_wqe") == nr + 1);
	t_settle();
	assert_int_equal(T.nwc[1], n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_srq_ud_recv, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_two_ud, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_ud_too_small, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_uc, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_uc_err_mid_message, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_uc_too_small, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_rc_ud_uc, t_setup, t_teardown),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
