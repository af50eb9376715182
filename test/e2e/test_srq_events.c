/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine part: shared receive queues, asynchronous events
 * and CQ resize over the net_ring pair. B (side 1) receives, through an
 * SRQ shared by several of its QPs, what QPs on A (side 0) send; every
 * message's bytes, every CQE and every event is checked. Events: SRQ
 * limit (once), LAST_WQE_REACHED, COMM_EST, QP fatal on a remote access
 * error, CQ_ERR on overflow, port down/up, the event fd; pointers of
 * events about destroyed objects are NULL, never stale.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "e2e_fixture.h"

#define NQP 3                      /* QPs sharing the SRQ, one peer QP each on A */
#define MSG_MAX 6000               /* bytes: two packets at PMTU 4096 */
#define SLOT (8 * 1024)            /* receive buffer per WQE */
#define NSLOT 64
#define SRQ_WR 64

/* This test's objects; teardown destroys what is left. */
struct t {
	struct srnic_cq *cq[2];
	struct srnic_srq *srq;
	struct srnic_qp *a[NQP];       /* on A */
	struct srnic_qp *b[NQP];       /* on B, with the SRQ */
	uint8_t *sbuf, *rbuf;
	struct srnic_mr *smr, *rmr;
	uint32_t nwc[2];
	struct ibv_wc wc[2][1024];
};

static struct t T;

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
	events_drain(0);
	events_drain(1);
	T.sbuf = e2e_buf(0, (size_t)NSLOT * SLOT, IBV_ACCESS_LOCAL_WRITE, &T.smr);
	T.rbuf = e2e_buf(1, (size_t)NSLOT * SLOT, E2E_RALL, &T.rmr);
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
	if (T.srq != NULL)
		assert_int_equal(srnic_destroy_srq(T.srq), 0);
	for (i = 0; i < 2; i++)
		if (T.cq[i] != NULL)
			assert_int_equal(srnic_destroy_cq(T.cq[i]), 0);
	e2e_qps_destroy(); /* the buffers */
	events_drain(0);
	events_drain(1);
	return 0;
}

static struct srnic_srq *
mk_srq(uint32_t max_wr, uint32_t limit)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = max_wr, .max_sge = 2,
						  .srq_limit = limit } };
	struct srnic_srq *srq = srnic_create_srq(E->p.pd[1], &ia, E->eng[1]);

	assert_non_null(srq);
	assert_int_equal(ia.attr.max_wr, rte_align32pow2(max_wr));
	assert_int_equal(ia.attr.max_sge, 2);
	return srq;
}

static struct srnic_qp *
mk_qp(int side, struct srnic_cq *cq, struct srnic_srq *srq)
{
	struct srnic_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .max_send_wr = 64, .max_recv_wr = 64,
		.max_send_sge = 2, .max_recv_sge = 2, .qp_type = IBV_QPT_RC,
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

/* to INIT and RTR only (rts false), or on to RTS */
static void
qp_connect(struct srnic_qp *qp, int side, struct srnic_qp *peer, uint8_t rnr_retry, bool rts)
{
	struct srnic_test_path p = {
		.access = E2E_RALL, .mtu = IBV_MTU_4096, .dest_qpn = srnic_qp_num(peer),
		.rq_psn = side == 0 ? 7000 : 2000, .max_dest_rd_atomic = 16,
		.sq_psn = side == 0 ? 2000 : 7000, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = rnr_retry, .max_rd_atomic = 16,
	};

	srnic_dev_gid(E->p.dev[1 - side], 1, &p.dgid);
	if (rts) {
		assert_int_equal(srnic_test_qp_connect(qp, &p), 0);
		return;
	}
	{
		struct ibv_qp_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = p.access;
		assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
						 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = p.mtu;
		a.dest_qp_num = p.dest_qpn;
		a.rq_psn = p.rq_psn;
		a.max_dest_rd_atomic = 16;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.dgid = p.dgid;
		a.ah_attr.grh.sgid_index = SRNIC_GID_INDEX_IP;
		assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
						 IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
						 IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
						 IBV_QP_MIN_RNR_TIMER), 0);
	}
}

/* NQP pairs (or n): A's QP i -> B's QP i, B's with the SRQ (if any). */
static void
mk_pairs(int n, struct srnic_srq *srq, int cqe)
{
	int i;

	T.cq[0] = srnic_create_cq(E->p.dev[0], 1024, E->eng[0]);
	T.cq[1] = srnic_create_cq(E->p.dev[1], cqe, E->eng[1]);
	assert_non_null(T.cq[0]);
	assert_non_null(T.cq[1]);
	for (i = 0; i < n; i++) {
		T.a[i] = mk_qp(0, T.cq[0], NULL);
		T.b[i] = mk_qp(1, T.cq[1], srq);
	}
	for (i = 0; i < n; i++) {
		qp_connect(T.a[i], 0, T.b[i], 7, true);
		qp_connect(T.b[i], 1, T.a[i], 7, true);
	}
}

static void
t_poll(void)
{
	int s, n;

	e2e_poll();
	for (s = 0; s < 2; s++) {
		if (T.cq[s] == NULL)
			continue;
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

/* Poll the engines until an event comes on side (asserting one does). */
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

/* Settle, then no event is pending on side. */
static void
assert_no_event(int side)
{
	struct srnic_async_event ev;

	e2e_settle(8);
	if (srnic_get_async_event(E->p.dev[side], &ev) == 0)
		fail_msg("unexpected event %d (qp_num %#x) on side %d", ev.event_type, ev.qp_num,
			 side);
}

static void
post_srq(struct srnic_srq *srq, uint64_t wr_id, uint32_t slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(T.rbuf + (size_t)slot * SLOT),
			       .length = SLOT, .lkey = srnic_mr_lkey(T.rmr) };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad = NULL;

	assert_int_equal(srnic_post_srq_recv(srq, &wr, &bad), 0);
}

/* A SEND of len bytes from A's QP i, the payload srnic_test_fill(seed)
 * at slot's place in A's buffer. */
static void
send_from(int i, uint64_t wr_id, uint32_t slot, uint32_t len, uint32_t seed)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(T.sbuf + (size_t)slot * SLOT), .length = len,
			       .lkey = srnic_mr_lkey(T.smr) };

	srnic_test_fill(T.sbuf + (size_t)slot * SLOT, len, seed);
	assert_int_equal(srnic_test_post_send(T.a[i], IBV_WR_SEND, wr_id, &sge, 1, 0, 0,
					      IBV_SEND_SIGNALED), 0);
}

static void
check_bytes(uint32_t rslot, uint32_t len, uint32_t seed)
{
	uint8_t *want = malloc(len);

	assert_non_null(want);
	srnic_test_fill(want, len, seed);
	assert_memory_equal(T.rbuf + (size_t)rslot * SLOT, want, len);
	free(want);
}

/* ---- SRQ shared by three QPs receiving from three peers ---- */

static void
test_srq_shared(void **state)
{
	struct ibv_recv_wr wr = { .wr_id = 1 }, *bad = NULL;
	struct srnic_qp_init_attr qi;
	struct ibv_qp_attr qa;
	uint32_t seen[NQP] = { 0 }, k, j, nmsg = 4 * NQP;
	uint8_t used[NSLOT] = { 0 };
	int i;

	RTE_SET_USED(state);
	T.srq = mk_srq(SRQ_WR, 0);
	mk_pairs(NQP, T.srq, 1024);
	/* verbs: a QP with an SRQ has no RQ to post to */
	assert_int_equal(srnic_post_recv(T.b[0], &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	assert_int_equal(srnic_query_qp(T.b[1], &qa, 0, &qi), 0);
	assert_int_equal(qi.comp_mask, SRNIC_QP_INIT_ATTR_SRQ);
	assert_ptr_equal(qi.srq, T.srq);
	assert_int_equal(qa.cap.max_recv_wr, 0);

	for (k = 0; k < nmsg; k++)
		post_srq(T.srq, 100 + k, k); /* WQE k lands in slot k */
	/* message j of QP i: seed, length and A-side slot from (i, j) */
	for (j = 0; j < 4; j++)
		for (i = 0; i < NQP; i++)
			send_from(i, j, (uint32_t)(i * 4 + j), 1 + (j == 3 ? MSG_MAX : 37 * j + i),
				  (uint32_t)(i << 8 | j));
	T_RUN_UNTIL(T.nwc[0] == nmsg && T.nwc[1] == nmsg);
	for (k = 0; k < nmsg; k++)
		assert_int_equal(T.wc[0][k].status, IBV_WC_SUCCESS);
	/* each receive: a distinct WQE, in SRQ order, the QP it came in on,
	 * that QP's messages in its order, and the bytes its peer sent */
	for (k = 0; k < nmsg; k++) {
		const struct ibv_wc *wc = &T.wc[1][k];
		uint32_t slot = (uint32_t)(wc->wr_id - 100), len;

		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_RECV);
		assert_int_equal(wc->wr_id, 100 + k); /* taken in posting order */
		assert_false(used[slot]);
		used[slot] = 1;
		for (i = 0; i < NQP; i++)
			if (wc->qp_num == srnic_qp_num(T.b[i]))
				break;
		assert_true(i < NQP);
		assert_int_equal(wc->src_qp, srnic_qp_num(T.a[i]));
		j = seen[i]++;
		len = 1 + (j == 3 ? MSG_MAX : 37 * j + (uint32_t)i);
		assert_int_equal(wc->byte_len, len);
		check_bytes(slot, len, (uint32_t)(i << 8 | j));
	}
	for (i = 0; i < NQP; i++)
		assert_int_equal(seen[i], 4);
}

/* ---- empty SRQ: RNR NAK, then recovery once a WQE is posted ---- */

static void
test_srq_rnr_then_recovery(void **state)
{
	struct srnic_qp_stats qs;
	uint32_t idx[256], n, i, rnr = 0;
	int64_t rnr0;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	mk_pairs(1, T.srq, 64);
	rnr0 = srnic_dev_stat(E->p.dev[1], "srq_empty_rnr");
	e2e_reset();
	send_from(0, 1, 0, 3000, 77);
	/* until A received two (the capture is at the receiving port) */
	T_RUN_UNTIL(srnic_qp_get_stats(T.a[0], &qs) == 0 && qs.rnr_naks_rcvd >= 2);
	assert_true(srnic_dev_stat(E->p.dev[1], "srq_empty_rnr") >= rnr0 + 2);
	assert_int_equal(T.nwc[0], 0);
	assert_int_equal(T.nwc[1], 0);
	/* on the wire: B answered RNR NAKs (AETH syndrome RNR, min_rnr_timer 1) */
	n = e2e_pkts_from(1, idx, RTE_DIM(idx));
	for (i = 0; i < n; i++) {
		const struct e2e_pkt *k = &E->pkts[idx[i]];

		if (k->parse_rc == SRNIC_PARSE_OK && k->opcode == SRNIC_OP_RC_ACK &&
		    srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)) ==
		    srnic_aeth_syndrome_make(SRNIC_AETH_RNR_NAK, 1))
			rnr++;
	}
	assert_true(rnr >= 2);
	assert_int_equal(srnic_qp_get_stats(T.a[0], &qs), 0);
	assert_true(qs.rnr_naks_rcvd >= 2);
	post_srq(T.srq, 9, 5);
	T_RUN_UNTIL(T.nwc[0] == 1 && T.nwc[1] == 1);
	assert_int_equal(T.wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][0].wr_id, 9);
	assert_int_equal(T.wc[1][0].byte_len, 3000);
	check_bytes(5, 3000, 77);
}

/* ---- srq_limit: one event when fewer than the limit are left ---- */

static void
test_srq_limit_once(void **state)
{
	struct srnic_async_event ev;
	struct ibv_srq_attr sa;
	uint32_t k;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	mk_pairs(1, T.srq, 64);
	for (k = 0; k < 8; k++)
		post_srq(T.srq, k, k);
	/* rxe's checks */
	sa.srq_limit = 17;
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_LIMIT), -EINVAL);
	assert_int_equal(srnic_modify_srq(T.srq, &sa, 1 << 5), -EINVAL);
	sa.srq_limit = 4;
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_LIMIT), 0);
	srnic_srq_set_user(T.srq, &T.srq); /* its events carry it */
	sa.max_wr = 2; /* below the limit armed */
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_MAX_WR), -EINVAL);
	assert_int_equal(srnic_query_srq(T.srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 4);
	assert_int_equal(sa.max_wr, 16);

	/* 8 -> 4 left: not below the limit */
	for (k = 0; k < 4; k++)
		send_from(0, k, k, 100, k);
	T_RUN_UNTIL(T.nwc[1] == 4);
	assert_no_event(1);
	assert_int_equal(srnic_query_srq(T.srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 4);
	/* 3 left: the event, once */
	send_from(0, 4, 4, 100, 4);
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.srq, T.srq);
	assert_int_equal(ev.srq_num, srnic_srq_num(T.srq));
	assert_int_equal(ev.gen, srnic_srq_gen(T.srq));
	assert_ptr_equal(ev.user, &T.srq);
	T_RUN_UNTIL(T.nwc[1] == 5);
	assert_int_equal(srnic_query_srq(T.srq, &sa), 0);
	assert_int_equal(sa.srq_limit, 0); /* disarmed */
	for (k = 5; k < 8; k++)
		send_from(0, k, k, 100, k);
	T_RUN_UNTIL(T.nwc[1] == 8);
	assert_no_event(1);
	for (k = 0; k < 8; k++) {
		assert_int_equal(T.wc[1][k].wr_id, k);
		check_bytes(k, 100, k);
	}
	assert_int_equal(srnic_dev_stat(E->p.dev[1], "srq_limit_reached") >= 1, 1);
}

/* ---- SRQ resize (IBV_SRQ_MAX_WR, as rxe) keeps the WQEs posted ---- */

static void
test_srq_resize(void **state)
{
	struct ibv_recv_wr wr[20], *bad = NULL;
	struct ibv_sge sge[20];
	struct ibv_srq_attr sa;
	uint32_t k;

	RTE_SET_USED(state);
	T.srq = mk_srq(4, 0);
	mk_pairs(1, T.srq, 64);
	for (k = 0; k < 4; k++)
		post_srq(T.srq, k, k);
	/* full: ENOMEM with bad_wr */
	memset(wr, 0, sizeof(wr));
	for (k = 0; k < 20; k++) {
		sge[k] = (struct ibv_sge){ .addr = (uintptr_t)(T.rbuf + (size_t)(4 + k) * SLOT),
					   .length = SLOT, .lkey = srnic_mr_lkey(T.rmr) };
		wr[k].wr_id = 4 + k;
		wr[k].sg_list = &sge[k];
		wr[k].num_sge = 1;
		wr[k].next = k + 1 < 20 ? &wr[k + 1] : NULL;
	}
	assert_int_equal(srnic_post_srq_recv(T.srq, &wr[0], &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[0]);
	sa.max_wr = 3; /* below the 4 posted */
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_MAX_WR), -EINVAL);
	sa.max_wr = SRNIC_MAX_SRQ_WR + 1;
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_MAX_WR), -EINVAL);
	sa.max_wr = 0;
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_MAX_WR), -EINVAL);
	sa.max_wr = 20;
	assert_int_equal(srnic_modify_srq(T.srq, &sa, IBV_SRQ_MAX_WR), 0);
	assert_int_equal(sa.max_wr, 32);
	assert_int_equal(srnic_post_srq_recv(T.srq, &wr[0], &bad), 0);
	assert_int_equal(srnic_query_srq(T.srq, &sa), 0);
	assert_int_equal(sa.max_wr, 32);
	/* 24 posted, received in posting order across the resize */
	for (k = 0; k < 24; k++)
		send_from(0, k, k, 64 + k, 500 + k);
	T_RUN_UNTIL(T.nwc[1] == 24);
	for (k = 0; k < 24; k++) {
		assert_int_equal(T.wc[1][k].status, IBV_WC_SUCCESS);
		assert_int_equal(T.wc[1][k].wr_id, k);
		check_bytes(k, 64 + k, 500 + k);
	}
}

/* ---- LAST_WQE_REACHED: a QP with an SRQ moved to ERR ---- */

static void
test_srq_last_wqe(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct srnic_async_event ev;
	uint32_t k;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	mk_pairs(2, T.srq, 64);
	for (k = 0; k < 4; k++)
		post_srq(T.srq, k, k);
	assert_int_equal(srnic_modify_qp(T.b[0], &a, IBV_QP_STATE), 0);
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.qp, T.b[0]);
	assert_int_equal(ev.qp_num, srnic_qp_num(T.b[0]));
	assert_int_equal(ev.gen, srnic_qp_gen(T.b[0]));
	assert_null(ev.user); /* never set */
	/* once, no QP_FATAL (the application moved it), and the SRQ's WQEs
	 * are not flushed: they are the other QP's */
	assert_no_event(1);
	assert_int_equal(T.nwc[1], 0);
	send_from(1, 1, 0, 200, 31);
	T_RUN_UNTIL(T.nwc[1] == 1 && T.nwc[0] == 1);
	assert_int_equal(T.wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(T.wc[1][0].qp_num, srnic_qp_num(T.b[1]));
	assert_int_equal(T.wc[1][0].wr_id, 0);
	check_bytes(0, 200, 31);
}

/* ---- a message in progress when its SRQ QP goes to ERR ---- */

static void
test_srq_err_mid_message(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct srnic_async_event ev;
	uint32_t k;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	mk_pairs(2, T.srq, 64);
	for (k = 0; k < 3; k++)
		post_srq(T.srq, k, k);
	/* 6001 bytes: SEND_FIRST, SEND_LAST; the LAST never arrives */
	e2e_drop_arm(0, SRNIC_OP_RC_SEND_LAST, 0, 1000);
	send_from(0, 1, 0, 1 + MSG_MAX, 9);
	T_RUN_UNTIL(E->drop.dropped >= 1);
	e2e_settle(4);
	assert_int_equal(T.nwc[1], 0);
	assert_int_equal(srnic_modify_qp(T.b[0], &a, IBV_QP_STATE), 0);
	/* the WQE it had taken is flushed on its CQ, then the event */
	T_RUN_UNTIL(T.nwc[1] == 1);
	assert_int_equal(T.wc[1][0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(T.wc[1][0].wr_id, 0);
	assert_int_equal(T.wc[1][0].qp_num, srnic_qp_num(T.b[0]));
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.qp, T.b[0]);
	assert_no_event(1);
	/* the other two are the other QP's, in order */
	e2e_reset();
	send_from(1, 2, 1, 100, 21);
	send_from(1, 3, 2, 200, 22);
	T_RUN_UNTIL(T.nwc[1] == 3);
	for (k = 1; k < 3; k++) {
		assert_int_equal(T.wc[1][k].status, IBV_WC_SUCCESS);
		assert_int_equal(T.wc[1][k].wr_id, k);
		assert_int_equal(T.wc[1][k].qp_num, srnic_qp_num(T.b[1]));
	}
	check_bytes(1, 100, 21);
	check_bytes(2, 200, 22);
}

/* ---- COMM_EST: the first packet received in RTR ---- */

static void
test_comm_est(void **state)
{
	struct ibv_qp_attr a;
	struct srnic_async_event ev;
	struct ibv_sge sge = { .addr = (uintptr_t)T.rbuf, .length = SLOT,
			       .lkey = srnic_mr_lkey(T.rmr) };

	RTE_SET_USED(state);
	T.cq[0] = srnic_create_cq(E->p.dev[0], 64, E->eng[0]);
	T.cq[1] = srnic_create_cq(E->p.dev[1], 64, E->eng[1]);
	T.a[0] = mk_qp(0, T.cq[0], NULL);
	T.b[0] = mk_qp(1, T.cq[1], NULL);
	qp_connect(T.b[0], 1, T.a[0], 7, false); /* B stays in RTR */
	qp_connect(T.a[0], 0, T.b[0], 7, true);
	assert_int_equal(srnic_test_post_recv(T.b[0], 1, &sge, 1), 0);
	sge.addr = (uintptr_t)(T.rbuf + SLOT);
	assert_int_equal(srnic_test_post_recv(T.b[0], 2, &sge, 1), 0);
	send_from(0, 1, 0, 500, 5);
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_COMM_EST);
	assert_ptr_equal(ev.qp, T.b[0]);
	assert_int_equal(ev.gen, srnic_qp_gen(T.b[0]));
	/* the responder works in RTR: the message is there */
	T_RUN_UNTIL(T.nwc[1] == 1 && T.nwc[0] == 1);
	check_bytes(0, 500, 5);
	/* once per connection */
	send_from(0, 2, 1, 600, 6);
	T_RUN_UNTIL(T.nwc[1] == 2);
	assert_no_event(1);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 7000;
	a.max_rd_atomic = 16;
	assert_int_equal(srnic_modify_qp(T.b[0], &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
					 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
					 IBV_QP_MAX_QP_RD_ATOMIC), 0);
	assert_no_event(1);
	assert_int_equal(srnic_dev_stat(E->p.dev[1], "comm_est") >= 1, 1);
}

/* ---- QP fatal on a remote access error (the peer's bad rkey) ---- */

static void
test_qp_fatal_remote_access(void **state)
{
	struct srnic_async_event ev;
	struct ibv_sge sge = { .addr = (uintptr_t)T.sbuf, .length = 64,
			       .lkey = srnic_mr_lkey(T.smr) };

	RTE_SET_USED(state);
	T.srq = mk_srq(8, 0); /* B's QP with an SRQ: LAST_WQE follows its QP_FATAL */
	mk_pairs(1, T.srq, 64);
	assert_int_equal(srnic_test_post_send(T.a[0], IBV_WR_RDMA_WRITE, 1, &sge, 1,
					      (uintptr_t)T.rbuf, srnic_mr_rkey(T.rmr) ^ 0x80,
					      IBV_SEND_SIGNALED), 0);
	T_RUN_UNTIL(T.nwc[0] == 1);
	assert_int_equal(T.wc[0][0].status, IBV_WC_REM_ACCESS_ERR);
	wait_event(0, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(ev.qp, T.a[0]);
	assert_int_equal(ev.gen, srnic_qp_gen(T.a[0]));
	/* the responder NAKed a QP-fatal error: its QP goes to ERR too */
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(ev.qp, T.b[0]);
	wait_event(1, &ev);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.qp, T.b[0]);
	assert_int_equal(srnic_qp_state(T.a[0]), IBV_QPS_ERR);
	assert_int_equal(srnic_qp_state(T.b[0]), IBV_QPS_ERR);
	assert_no_event(0);
	assert_no_event(1);
}

/* ---- CQ_ERR: a CQ overflows ---- */

static void
test_cq_err_overflow(void **state)
{
	struct srnic_async_event ev;
	struct ibv_wc wc[16];
	bool cq_err = false, fatal = false;
	uint32_t k;
	int n;

	RTE_SET_USED(state);
	mk_pairs(1, NULL, 2); /* holds 3 (cqe + 1, a power of two: 4 slots, one kept free) */
	for (k = 0; k < 8; k++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(T.rbuf + (size_t)k * SLOT),
				       .length = SLOT, .lkey = srnic_mr_lkey(T.rmr) };

		assert_int_equal(srnic_test_post_recv(T.b[0], k, &sge, 1), 0);
	}
	/* B's CQ is not polled (T.cq[1] out of t_poll's reach) */
	{
		struct srnic_cq *bcq = T.cq[1];

		T.cq[1] = NULL;
		srnic_cq_set_user(bcq, &bcq);
		srnic_qp_set_user(T.b[0], &T.b[0]);
		for (k = 0; k < 8; k++)
			send_from(0, k, k, 32, k);
		while (!cq_err || !fatal) {
			wait_event(1, &ev);
			if (ev.event_type == IBV_EVENT_CQ_ERR) {
				assert_false(cq_err);
				cq_err = true;
				assert_ptr_equal(ev.cq, bcq);
				assert_int_equal(ev.gen, srnic_cq_gen(bcq));
				assert_ptr_equal(ev.user, &bcq);
			} else {
				assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
				assert_ptr_equal(ev.qp, T.b[0]);
				assert_ptr_equal(ev.user, &T.b[0]);
				fatal = true;
			}
		}
		assert_no_event(1);
		/* what it held, then -EOVERFLOW */
		n = srnic_poll_cq(bcq, 16, wc);
		assert_true(n >= 3 && n <= 4);
		for (k = 0; k < (uint32_t)n; k++) {
			assert_int_equal(wc[k].wr_id, k);
			assert_int_equal(wc[k].status, IBV_WC_SUCCESS);
		}
		assert_int_equal(srnic_poll_cq(bcq, 16, wc), -EOVERFLOW);
		T.cq[1] = bcq;
	}
}

/* ---- resize_cq: grow and shrink with completions pending ---- */

static void
test_resize_cq_pending(void **state)
{
	uint32_t k;

	RTE_SET_USED(state);
	T.srq = mk_srq(SRQ_WR, 0);
	mk_pairs(1, T.srq, 16);
	for (k = 0; k < 60; k++)
		post_srq(T.srq, k, k);
	{
		struct srnic_cq *bcq = T.cq[1];

		T.cq[1] = NULL; /* let completions pile up */
		for (k = 0; k < 10; k++)
			send_from(0, k, k, 40 + k, k);
		T_RUN_UNTIL(srnic_dev_stat(E->p.dev[1], "cqe") >= 0 && T.nwc[0] == 10);
		e2e_settle(4);
		assert_int_equal(srnic_resize_cq(bcq, 9), -EINVAL); /* 10 pending */
		assert_int_equal(srnic_resize_cq(bcq, 0), -EINVAL);
		assert_int_equal(srnic_resize_cq(bcq, SRNIC_MAX_CQE + 1), -EINVAL);
		assert_int_equal(srnic_resize_cq(NULL, 8), -EINVAL);
		assert_int_equal(srnic_resize_cq(bcq, 100), 0);
		assert_int_equal(srnic_cq_cqe(bcq), 100);
		for (k = 10; k < 50; k++)
			send_from(0, k, k, 40 + k, k);
		T_RUN_UNTIL(T.nwc[0] == 50);
		e2e_settle(4);
		/* 50 pending: take 45, shrink to 10 with 5 left */
		assert_int_equal(srnic_poll_cq(bcq, 45, T.wc[1]), 45);
		assert_int_equal(srnic_resize_cq(bcq, 10), 0);
		assert_int_equal(srnic_poll_cq(bcq, 64, &T.wc[1][45]), 5);
		T.nwc[1] = 50;
		T.cq[1] = bcq;
	}
	for (k = 0; k < 50; k++) {
		assert_int_equal(T.wc[1][k].status, IBV_WC_SUCCESS);
		assert_int_equal(T.wc[1][k].wr_id, k);
		assert_int_equal(T.wc[1][k].byte_len, 40 + k);
		check_bytes(k, 40 + k, k);
	}
}

/* ---- resize_cq under traffic: the engines run on another thread ---- */

static _Atomic int poller_stop;

static void *
poller(void *arg)
{
	RTE_SET_USED(arg);
	while (!atomic_load(&poller_stop)) {
		srnic_engine_poll(E->eng[0]);
		srnic_engine_poll(E->eng[1]);
	}
	return NULL;
}

#define TRAFFIC_MSGS 3000

static void
test_resize_cq_traffic(void **state)
{
	static const int sizes[] = { 64, 4096, 17, 1000, 33 };
	struct ibv_wc wc[64];
	uint32_t sent = 0, rcvd = 0, acked = 0, posted = 0, resizes = 0;
	uint64_t dl = e2e_deadline();
	pthread_t th;
	int n, i;

	RTE_SET_USED(state);
	T.srq = mk_srq(SRQ_WR, 0);
	mk_pairs(1, T.srq, 4096);
	atomic_store(&poller_stop, 0);
	assert_int_equal(pthread_create(&th, NULL, poller, NULL), 0);
	while (rcvd < TRAFFIC_MSGS && !e2e_deadline_passed(dl)) {
		struct ibv_sge sge = { .addr = (uintptr_t)T.sbuf, .length = 8,
				       .lkey = srnic_mr_lkey(T.smr) };

		/* keep the SRQ and the SQ fed; a send's payload is its number */
		while (posted < TRAFFIC_MSGS && posted - rcvd < 32) {
			post_srq(T.srq, posted, posted % NSLOT);
			posted++;
		}
		while (sent < posted && sent - acked < 32) {
			memcpy(T.sbuf + (sent % NSLOT) * 8, &sent, 4);
			sge.addr = (uintptr_t)(T.sbuf + (sent % NSLOT) * 8);
			assert_int_equal(srnic_test_post_send(T.a[0], IBV_WR_SEND, sent, &sge, 1, 0,
							      0, IBV_SEND_SIGNALED), 0);
			sent++;
		}
		n = srnic_poll_cq(T.cq[0], 64, wc);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, acked++);
		}
		/* with completions pending, while the engine produces */
		if (rcvd % 7 == 0 && srnic_resize_cq(T.cq[1], sizes[resizes % RTE_DIM(sizes)]) == 0)
			resizes++;
		n = srnic_poll_cq(T.cq[1], 64, wc);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			uint32_t v;

			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, rcvd); /* none lost, none twice, in order */
			assert_int_equal(wc[i].byte_len, 8);
			memcpy(&v, T.rbuf + (size_t)(rcvd % NSLOT) * SLOT, 4);
			assert_int_equal(v, rcvd);
			rcvd++;
		}
	}
	atomic_store(&poller_stop, 1);
	pthread_join(th, NULL);
	assert_int_equal(rcvd, TRAFFIC_MSGS);
	assert_true(resizes >= 100);
	print_message("resize_cq under traffic: %u messages, %u resizes\n", rcvd, resizes);
}

/* ---- destroy in any order; events about destroyed objects ---- */

static void
test_destroy_order(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct srnic_async_event ev;
	struct ibv_srq_attr sa = { .srq_limit = 2 };
	struct srnic_srq *srq2;
	uint32_t qpn, gen;

	RTE_SET_USED(state);
	T.srq = mk_srq(16, 0);
	mk_pairs(1, T.srq, 64);
	/* in use: the SRQ and the PD stay */
	assert_int_equal(srnic_destroy_srq(T.srq), -EBUSY);
	assert_int_equal(srnic_dealloc_pd(E->p.pd[1]), -EBUSY);
	assert_int_equal(srnic_destroy_cq(T.cq[1]), -EBUSY);

	/* an event queued about a QP destroyed before it is taken: no pointer */
	assert_int_equal(srnic_modify_qp(T.b[0], &a, IBV_QP_STATE), 0);
	e2e_settle(8);
	qpn = srnic_qp_num(T.b[0]);
	gen = srnic_qp_gen(T.b[0]);
	srnic_qp_set_user(T.b[0], &T.b[0]);
	assert_int_equal(srnic_destroy_qp(T.b[0]), 0);
	T.b[0] = mk_qp(1, T.cq[1], T.srq); /* may take the same memory and QPN */
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_null(ev.qp);
	assert_null(ev.user); /* the destroyed QP's pointer is not handed out */
	assert_int_equal(ev.qp_num, qpn);
	assert_int_equal(ev.gen, gen);
	assert_true(srnic_qp_gen(T.b[0]) != gen);

	/* the SRQ: busy until its last QP goes */
	assert_int_equal(srnic_destroy_srq(T.srq), -EBUSY);
	assert_int_equal(srnic_destroy_qp(T.b[0]), 0);
	T.b[0] = NULL;
	/* an SRQ limit event, then the SRQ destroyed: no pointer */
	srq2 = mk_srq(8, 0);
	T.b[0] = mk_qp(1, T.cq[1], srq2);
	qp_connect(T.b[0], 1, T.a[0], 7, true);
	/* A's QP reconnects to the new B QP: RESET, then to RTS again */
	{
		struct ibv_qp_attr r = { .qp_state = IBV_QPS_RESET };

		assert_int_equal(srnic_modify_qp(T.a[0], &r, IBV_QP_STATE), 0);
		qp_connect(T.a[0], 0, T.b[0], 7, true);
	}
	post_srq(srq2, 1, 1);
	post_srq(srq2, 2, 2);
	assert_int_equal(srnic_modify_srq(srq2, &sa, IBV_SRQ_LIMIT), 0);
	send_from(0, 1, 0, 10, 1);
	T_RUN_UNTIL(T.nwc[1] == 1);
	e2e_settle(4);
	assert_int_equal(srnic_destroy_srq(srq2), -EBUSY);
	assert_int_equal(srnic_modify_qp(T.b[0], &a, IBV_QP_STATE), 0);
	e2e_settle(8);
	assert_int_equal(srnic_destroy_qp(T.b[0]), 0);
	T.b[0] = NULL;
	gen = srnic_srq_gen(srq2);
	srnic_srq_set_user(srq2, &srq2);
	assert_int_equal(srnic_destroy_srq(srq2), 0);
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_null(ev.srq);
	assert_null(ev.user);
	assert_int_equal(ev.gen, gen);
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_null(ev.qp);
	/* the first SRQ, unused now, goes; then the CQ */
	assert_int_equal(srnic_destroy_srq(T.srq), 0);
	T.srq = NULL;
	assert_int_equal(srnic_destroy_srq(NULL), -EINVAL);
}

/* ---- bad arguments: rxe's errnos, never a crash ---- */

static void
test_bad_args(void **state)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct srnic_qp_init_attr qa = { .max_send_wr = 8, .max_send_sge = 1,
					 .qp_type = IBV_QPT_RC };
	struct ibv_sge sge[SRNIC_MAX_SGE + 1];
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = sge }, *bad = NULL;
	struct ibv_srq_attr sa;
	struct srnic_async_event ev;

	RTE_SET_USED(state);
	memset(sge, 0, sizeof(sge));
	rte_errno = 0;
	assert_null(srnic_create_srq(NULL, &ia, NULL));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_create_srq(E->p.pd[1], NULL, NULL));
	ia.attr.max_wr = 0;
	assert_null(srnic_create_srq(E->p.pd[1], &ia, NULL));
	assert_int_equal(rte_errno, EINVAL);
	ia.attr.max_wr = SRNIC_MAX_SRQ_WR + 1;
	assert_null(srnic_create_srq(E->p.pd[1], &ia, NULL));
	ia.attr.max_wr = 8;
	ia.attr.max_sge = SRNIC_MAX_SGE + 1;
	assert_null(srnic_create_srq(E->p.pd[1], &ia, NULL));
	ia.attr.max_sge = 1;
	ia.attr.srq_limit = 9;
	assert_null(srnic_create_srq(E->p.pd[1], &ia, NULL));
	ia.attr.srq_limit = 0;
	/* an engine of another device */
	assert_null(srnic_create_srq(E->p.pd[1], &ia, E->eng[0]));
	assert_int_equal(rte_errno, EINVAL);

	T.srq = srnic_create_srq(E->p.pd[1], &ia, NULL);
	assert_non_null(T.srq);
	wr.num_sge = 2; /* above its max_sge */
	assert_int_equal(srnic_post_srq_recv(T.srq, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	wr.num_sge = -1;
	assert_int_equal(srnic_post_srq_recv(T.srq, &wr, &bad), EINVAL);
	bad = NULL;
	assert_int_equal(srnic_post_srq_recv(NULL, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	assert_int_equal(srnic_modify_srq(NULL, &sa, IBV_SRQ_LIMIT), -EINVAL);
	assert_int_equal(srnic_modify_srq(T.srq, NULL, IBV_SRQ_LIMIT), -EINVAL);
	assert_int_equal(srnic_query_srq(NULL, &sa), -EINVAL);
	assert_int_equal(srnic_query_srq(T.srq, NULL), -EINVAL);

	/* QPs: the SRQ bit without an SRQ, an SRQ of the other device, an
	 * unknown comp_mask bit */
	T.cq[0] = srnic_create_cq(E->p.dev[0], 16, E->eng[0]);
	T.cq[1] = srnic_create_cq(E->p.dev[1], 16, E->eng[1]);
	qa.send_cq = qa.recv_cq = T.cq[1];
	qa.comp_mask = SRNIC_QP_INIT_ATTR_SRQ;
	qa.srq = NULL;
	assert_null(srnic_create_qp(E->p.pd[1], &qa));
	assert_int_equal(rte_errno, EINVAL);
	qa.send_cq = qa.recv_cq = T.cq[0];
	qa.srq = T.srq;
	assert_null(srnic_create_qp(E->p.pd[0], &qa));
	assert_int_equal(rte_errno, EINVAL);
	qa.comp_mask = SRNIC_QP_INIT_ATTR_RESERVED;
	assert_null(srnic_create_qp(E->p.pd[0], &qa));
	assert_int_equal(rte_errno, EINVAL);

	assert_int_equal(srnic_get_async_event(NULL, &ev), -EINVAL);
	assert_int_equal(srnic_get_async_event(E->p.dev[0], NULL), -EINVAL);
	assert_int_equal(srnic_dev_event_fd(NULL), -1);
	assert_int_equal(srnic_cq_cqe(NULL), -EINVAL);
}

/* ---- the event fd: readable when an engine queues an event ---- */

static bool
fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static void
test_event_fd(void **state)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct srnic_async_event ev;
	int fd = srnic_dev_event_fd(E->p.dev[1]);
	uint64_t v;

	RTE_SET_USED(state);
	assert_true(fd >= 0);
	T.srq = mk_srq(8, 0);
	mk_pairs(1, T.srq, 64);
	e2e_settle(4);
	while (fd_readable(fd))
		assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), -EAGAIN);
	assert_int_equal(srnic_modify_qp(T.b[0], &a, IBV_QP_STATE), 0);
	T_RUN_UNTIL(fd_readable(fd));
	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	assert_int_equal(v, 1);
	assert_false(fd_readable(fd));
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.qp, T.b[0]);
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), -EAGAIN);
}

/* ---- port events: link down, then up ---- */

static void
wait_port_event(int side, enum ibv_event_type want)
{
	struct srnic_async_event ev;
	uint64_t dl = e2e_deadline();

	while (srnic_get_async_event(E->p.dev[side], &ev) != 0) {
		if (e2e_deadline_passed(dl))
			fail_msg("no port event %d on side %d", want, side);
		e2e_poll();
	}
	assert_int_equal(ev.event_type, want);
	assert_int_equal(ev.port_num, 1);
	assert_null(ev.qp);
}

static void
test_port_events(void **state)
{
	struct rte_eth_link link;
	struct srnic_async_event ev;
	struct ibv_port_attr pa;

	RTE_SET_USED(state);
	assert_int_equal(rte_eth_link_get_nowait(E->p.port[1], &link), 0);
	assert_int_equal(link.link_status, RTE_ETH_LINK_UP);
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), -EAGAIN); /* none at creation */
	assert_int_equal(srnic_dev_query_port(E->p.dev[1], &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.phys_state, SRNIC_PORT_PHYS_LINK_UP);
	assert_int_equal(rte_eth_dev_set_link_down(E->p.port[1]), 0);
	/* the state is the link's at once, the event follows */
	assert_int_equal(srnic_dev_query_port(E->p.dev[1], &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_DOWN);
	assert_int_equal(pa.phys_state, SRNIC_PORT_PHYS_DISABLED);
	wait_port_event(1, IBV_EVENT_PORT_ERR);
	assert_int_equal(srnic_dev_query_port(E->p.dev[0], &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE); /* the other side's own link */
	assert_int_equal(rte_eth_dev_set_link_up(E->p.port[1]), 0);
	wait_port_event(1, IBV_EVENT_PORT_ACTIVE);
	assert_int_equal(srnic_dev_query_port(E->p.dev[1], &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.phys_state, SRNIC_PORT_PHYS_LINK_UP);
	e2e_settle(4);
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), -EAGAIN);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_port_events, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_shared, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_rnr_then_recovery, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_limit_once, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_resize, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_last_wqe, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_srq_err_mid_message, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_comm_est, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_qp_fatal_remote_access, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_cq_err_overflow, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_resize_cq_pending, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_resize_cq_traffic, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_destroy_order, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_bad_args, t_setup, t_teardown),
		cmocka_unit_test_setup_teardown(test_event_fd, t_setup, t_teardown),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
