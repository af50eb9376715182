/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SQD drains (IBTA 10.3.1): a QP moved to SQD keeps its
 * ACK timer and retransmits, finishes what it started, starts nothing new
 * (WRs posted in SQD wait), and raises IBV_EVENT_SQ_DRAINED once when the
 * last outstanding WQE completed; SQD -> RTS sends what waited.
 */
#include <string.h>

#include "e2e_fixture.h"

#define W1_LEN (4 * 4096)          /* four packets at PMTU 4096 */
#define W2_LEN 8192
#define W2_OFF W1_LEN
#define BUF_LEN (W1_LEN + W2_LEN)
#define UNRES_TIMEOUT 10           /* local ACK timeout code: ~4 ms */
#define UNRES_RETRY 3
#define UNRES_HOST 77              /* the last GID byte of an address nobody answers */

static void
events_drain(void)
{
	struct srnic_async_event ev;

	while (srnic_get_async_event(E->p.dev[0], &ev) == 0)
		;
}

static void
to_sqd(struct srnic_qp *qp, bool notify)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.en_sqd_async_notify = notify;
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
}

static void
to_rts(struct srnic_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE), 0);
}

/* The reproduction: a WRITE whose ACK is lost, then SQD. */
static void
test_sqd_drains_lost_ack(void **state)
{
	struct srnic_async_event ev;
	struct srnic_qp_stats qs;
	struct ibv_qp_attr q;
	struct e2e_bufs b;
	uint32_t idx[256], n, i, psn0;

	RTE_SET_USED(state);
	events_drain();
	e2e_bufs_new(&b, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 11, 12);
	memset(b.r, 0, BUF_LEN);
	e2e_drop_arm(1, SRNIC_OP_RC_ACK, 0, 1);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, W1_LEN, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->drop.dropped == 1);
	assert_int_equal(E->nwc[0], 0);
	to_sqd(E->qp[0], true);
	/* accepted in SQD, but waits */
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 2, W2_OFF, W2_LEN, W2_OFF,
		      IBV_SEND_SIGNALED);
	assert_int_equal(srnic_query_qp(E->qp[0], &q, 0, NULL), 0);
	assert_int_equal(q.qp_state, IBV_QPS_SQD);
	assert_int_equal(q.en_sqd_async_notify, 1);
	assert_int_equal(q.sq_draining, 1);

	/* the ACK timer runs in SQD: WRITE 1 is resent and completes */
	E2E_RUN_UNTIL(E->nwc[0] >= 1);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(srnic_qp_get_stats(E->qp[0], &qs), 0);
	assert_true(qs.timeouts >= 1);
	assert_true(qs.retransmits >= 1);
	/* and then the SQ is drained: one event */
	E2E_RUN_UNTIL(srnic_get_async_event(E->p.dev[0], &ev) == 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SQ_DRAINED);
	assert_ptr_equal(ev.qp, E->qp[0]);
	assert_int_equal(ev.qp_num, srnic_qp_num(E->qp[0]));
	e2e_settle(8);
	assert_int_equal(srnic_get_async_event(E->p.dev[0], &ev), -EAGAIN);
	assert_int_equal(E->nwc[0], 1);
	assert_int_equal(srnic_query_qp(E->qp[0], &q, 0, NULL), 0);
	assert_int_equal(q.sq_draining, 0);
	/* WRITE 2 never left: every request A sent is one of WRITE 1's PSNs */
	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_true(n >= 8); /* four, and four again */
	psn0 = E->pkts[idx[0]].psn;
	for (i = 0; i < n; i++)
		if (E->pkts[idx[i]].parse_rc == SRNIC_PARSE_OK)
			assert_true(srnic_psn_in_window(E->pkts[idx[i]].psn, psn0,
							W1_LEN / 4096));
	assert_memory_equal(b.r, b.l, W1_LEN);
	for (i = 0; i < W2_LEN; i++)
		assert_int_equal(b.r[W2_OFF + i], 0);

	/* SQD -> RTS: what waited goes out */
	to_rts(E->qp[0]);
	E2E_RUN_UNTIL(E->nwc[0] >= 2);
	assert_int_equal(E->wc[0][1].wr_id, 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_memory_equal(b.r, b.l, BUF_LEN);
	assert_int_equal(srnic_get_async_event(E->p.dev[0], &ev), -EAGAIN);
}

/* A WRITE whose ACK is lost, SQD, then an SQD -> SQD AV
 * to an address nobody answers (ARP/ND unanswered). The drain must still
 * end: the ACK timer of what is outstanding runs while the route is
 * unresolved, each expiry spends a retry and asks for the MAC again, and
 * once retry_cnt is spent the WRITE fails with RETRY_EXC_ERR. */
static void
test_sqd_av_unresolved_times_out(void **state)
{
	struct e2e_conf c = { .timeout = UNRES_TIMEOUT, .retry_cnt = UNRES_RETRY };
	int64_t arp0, tmo0, lim0, sent;
	struct ibv_qp_attr a;
	struct e2e_bufs b;

	RTE_SET_USED(state);
	events_drain();
	e2e_qps_renew(&c);
	e2e_reset();
	e2e_bufs_new(&b, W1_LEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 13, 14);
	e2e_drop_arm(1, SRNIC_OP_RC_ACK, 0, 1);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, W1_LEN, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->drop.dropped == 1);
	assert_int_equal(E->nwc[0], 0);
	to_sqd(E->qp[0], false);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	srnic_dev_gid(E->p.dev[1], 1, &a.ah_attr.grh.dgid);
	a.ah_attr.grh.dgid.raw[15] = UNRES_HOST;
	arp0 = srnic_dev_stat(E->p.dev[0], "tx_arp") + srnic_dev_stat(E->p.dev[0], "tx_nd");
	lim0 = srnic_dev_stat(E->p.dev[0], "neigh_solicit_limited");
	tmo0 = srnic_dev_stat(E->p.dev[0], "retry_timeout");
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE | IBV_QP_AV), 0);
	E2E_RUN_UNTIL(E->nwc[0] >= 1);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	/* every retry spent (the first expiry may have come before the AV) */
	assert_true(srnic_dev_stat(E->p.dev[0], "retry_timeout") - tmo0 >= UNRES_RETRY);
	/* asked for the new peer's MAC at each expiry after it: sent, or held
	 * back by the limit of one request per neighbour per SRNIC_ARP_RETRY_MS */
	sent = srnic_dev_stat(E->p.dev[0], "tx_arp") + srnic_dev_stat(E->p.dev[0], "tx_nd") - arp0;
	assert_true(sent >= 1);
	assert_true(sent + srnic_dev_stat(E->p.dev[0], "neigh_solicit_limited") - lim0 >=
		    UNRES_RETRY);
}

/* An idle QP is drained at once; without IBV_QP_EN_SQD_ASYNC_NOTIFY (or
 * with 0) nothing is raised; each entry into SQD raises at most one. */
static void
test_sqd_idle_and_notify(void **state)
{
	struct srnic_async_event ev;
	struct e2e_bufs b;
	int64_t drained0 = srnic_dev_stat(E->p.dev[0], "sqd_drained");
	int round;

	RTE_SET_USED(state);
	events_drain();
	e2e_bufs_new(&b, 4096, IBV_ACCESS_LOCAL_WRITE);
	for (round = 0; round < 3; round++) {
		to_sqd(E->qp[0], true);
		E2E_RUN_UNTIL(srnic_get_async_event(E->p.dev[0], &ev) == 0);
		assert_int_equal(ev.event_type, IBV_EVENT_SQ_DRAINED);
		assert_int_equal(ev.qp_num, srnic_qp_num(E->qp[0]));
		e2e_settle(4);
		assert_int_equal(srnic_get_async_event(E->p.dev[0], &ev), -EAGAIN);
		to_rts(E->qp[0]);
	}
	to_sqd(E->qp[0], false);
	E2E_RUN_UNTIL(srnic_dev_stat(E->p.dev[0], "sqd_drained") == drained0 + 4);
	assert_int_equal(srnic_get_async_event(E->p.dev[0], &ev), -EAGAIN);
	to_rts(E->qp[0]);
	/* the QP works after all that */
	e2e_bufs_fill(&b, 5, 6);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 9, 0, 4096, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_memory_equal(b.r, b.l, 4096);
}

/* The engine moving a QP to ERR raises IBV_EVENT_QP_FATAL (once); the
 * application's own move to ERR does not. */
static void
test_qp_fatal_event(void **state)
{
	struct srnic_async_event ev;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct e2e_bufs b;

	RTE_SET_USED(state);
	events_drain();
	e2e_bufs_new(&b, 4096, IBV_ACCESS_LOCAL_WRITE);
	/* a bad rkey: B NAKs, A's WR fails, A's engine moves A to ERR (B's too) */
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 3, &(struct ibv_sge){ .addr = (uintptr_t)b.l,
		    .length = 64, .lkey = srnic_mr_lkey(b.lmr) }, 1, (uintptr_t)b.r,
		    srnic_mr_rkey(b.rmr) ^ 0x80u, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_REM_ACCESS_ERR);
	E2E_RUN_UNTIL(srnic_get_async_event(E->p.dev[0], &ev) == 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(ev.qp, E->qp[0]);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	/* the responder side's fatal NAK moved B to ERR: its event */
	E2E_RUN_UNTIL(srnic_get_async_event(E->p.dev[1], &ev) == 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	assert_int_equal(ev.qp_num, srnic_qp_num(E->qp[1]));
	e2e_settle(4);
	assert_int_equal(srnic_get_async_event(E->p.dev[0], &ev), -EAGAIN);
	assert_int_equal(srnic_get_async_event(E->p.dev[1], &ev), -EAGAIN);
	/* the application's own ERR: no event */
	e2e_qps_renew(&E->conf);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
	e2e_settle(4);
	assert_int_equal(srnic_get_async_event(E->p.dev[0], &ev), -EAGAIN);
	assert_int_equal(srnic_get_async_event(NULL, &ev), -EINVAL);
	assert_int_equal(srnic_get_async_event(E->p.dev[0], NULL), -EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sqd_drains_lost_ack, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_sqd_idle_and_notify, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_qp_fatal_event, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_sqd_av_unresolved_times_out, e2e_setup,
						e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_sqd", tests, e2e_group_setup,
					   e2e_group_teardown);
}
