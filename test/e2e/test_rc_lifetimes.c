/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Object lifetimes across incarnations and threads:
 * a QP's CQEs go with it on RESET and destroy (a stale CQE once handed
 * send credit to the QP's next life, or to a new QP with its number), a
 * poll on one thread races a destroy on another, and a CQ with QPs is
 * -EBUSY to destroy.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include <rte_pause.h>

#include "e2e_fixture.h"
#include "srnic_param.h"

#define LT_SQ 8                 /* SQ depth of the tests: 8 WRs fill it */
#define LT_MSG 8192             /* 2 packets at PMTU 4096: FIRST + LAST */
#define LT_RACE_ROUNDS 200

static void
conf_small(struct e2e_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu = IBV_MTU_4096;
	c->psn[0] = 2000;
	c->psn[1] = 7000;
	c->max_send_wr = LT_SQ;
	c->cqe = 64;
}

/* Both QPs to RESET and back to RTS with new PSNs. */
static void
reconnect(uint32_t psn_a, uint32_t psn_b)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int i;

	for (i = 0; i < 2; i++)
		if (srnic_qp_state(E->qp[i]) != IBV_QPS_RESET)
			assert_int_equal(srnic_modify_qp(E->qp[i], &a, IBV_QP_STATE), 0);
	assert_int_equal(e2e_qp_connect(0, IBV_MTU_4096, psn_a, psn_b, 16, 16, E2E_RALL), 0);
	assert_int_equal(e2e_qp_connect(1, IBV_MTU_4096, psn_b, psn_a, 16, 16, E2E_RALL), 0);
}

/* n signaled WRITEs of LT_MSG from l + i * LT_MSG to the same place in r. */
static void
post_writes(const struct e2e_bufs *b, uint64_t wr_id0, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		e2e_bufs_post(b, E->qp[0], IBV_WR_RDMA_WRITE, wr_id0 + i, i * LT_MSG, LT_MSG,
			      i * LT_MSG, IBV_SEND_SIGNALED);
}

/* 8 signaled WRITEs whose CQEs the application leaves in A's CQ. */
static void
leave_cqes(const struct e2e_bufs *b)
{
	int64_t cqe0 = srnic_dev_stat(E->p.dev[0], "cqe");

	E->no_drain = true;
	post_writes(b, 100, LT_SQ);
	E2E_RUN_UNTIL(srnic_dev_stat(E->p.dev[0], "cqe") >= cqe0 + LT_SQ);
}

/* The SQ is full (8 posted, none polled): one more post is ENOMEM. */
static void
assert_sq_full(const struct e2e_bufs *b)
{
	struct ibv_sge s = { .addr = (uintptr_t)b->l, .length = 8, .lkey = srnic_mr_lkey(b->lmr) };

	assert_int_equal(srnic_test_post_send(E->qp[0], IBV_WR_RDMA_WRITE, 999, &s, 1,
					      (uintptr_t)b->r, srnic_mr_rkey(b->rmr),
					      IBV_SEND_SIGNALED), ENOMEM);
}

/* The 8 WRITEs wr_id 0..7 complete in order and their bytes are on B;
 * every frame A sent is a well-formed WRITE FIRST/LAST pair; both QPs RTS. */
static void
check_writes(const struct e2e_bufs *b)
{
	uint32_t i, idx[64], n;

	E->no_drain = false;
	e2e_wait_wc(0, LT_SQ);
	e2e_settle(4);
	assert_int_equal(E->nwc[0], LT_SQ);
	for (i = 0; i < LT_SQ; i++) {
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][i].wr_id, i);
		assert_int_equal(E->wc[0][i].qp_num, srnic_qp_num(E->qp[0]));
	}
	assert_memory_equal(b->r, b->l, LT_SQ * LT_MSG);
	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_int_equal(n, 2 * LT_SQ);
	for (i = 0; i < n; i++)
		assert_int_equal(E->pkts[idx[i]].opcode,
				 i % 2 == 0 ? SRNIC_OP_RC_WRITE_FIRST
					    : SRNIC_OP_RC_WRITE_LAST);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RTS);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
}

/* The reproduction: RESET with 8 CQEs in the CQ. They go with
 * the old incarnation: polling after RESET finds none, so the 8 WRs posted
 * into the reconnected QP's 8-slot SQ keep it full, and all 8 complete. */
static void
test_reset_cleans_cq(void **state)
{
	struct e2e_conf c;
	struct e2e_bufs b;
	struct ibv_wc wc[16];

	RTE_SET_USED(state);
	conf_small(&c);
	e2e_qps_renew(&c);
	e2e_bufs_new(&b, LT_SQ * LT_MSG, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 1, 2);
	leave_cqes(&b);

	reconnect(3000, 8000);
	e2e_reset();
	e2e_bufs_fill(&b, 3, 4);
	post_writes(&b, 0, LT_SQ);
	assert_int_equal(srnic_poll_cq(E->cq[0], RTE_DIM(wc), wc), 0);
	assert_sq_full(&b);
	check_writes(&b);
}

/* A new QP that gets a destroyed QP's number (after 65,536 creates) sees
 * none of the old one's CQEs, and its SQ is whole. */
static void
test_qpn_reuse(void **state)
{
	struct srnic_qp_init_attr qa = { .send_cq = E->cq[0], .recv_cq = E->cq[0],
					 .max_send_wr = LT_SQ, .max_recv_wr = 1,
					 .max_send_sge = 4, .max_recv_sge = 4,
					 .qp_type = IBV_QPT_RC };
	struct e2e_conf c;
	struct e2e_bufs b;
	struct ibv_wc wc[16];
	struct srnic_qp *qp = NULL;
	uint32_t qpn, i;

	RTE_SET_USED(state);
	conf_small(&c);
	e2e_qps_renew(&c);
	qa.send_cq = qa.recv_cq = E->cq[0];
	e2e_bufs_new(&b, LT_SQ * LT_MSG, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 5, 6);
	leave_cqes(&b);

	qpn = srnic_qp_num(E->qp[0]);
	assert_int_equal(srnic_destroy_qp(E->qp[0]), 0);
	E->qp[0] = NULL;
	for (i = 0; i <= SRNIC_MAX_QP; i++) {
		qp = srnic_create_qp(E->p.pd[0], &qa);
		assert_non_null(qp);
		if (srnic_qp_num(qp) == qpn)
			break;
		assert_int_equal(srnic_destroy_qp(qp), 0);
		qp = NULL;
		if (i % 256 == 0)
			e2e_poll_side(0); /* the engine frees destroyed QPs */
	}
	assert_non_null(qp);
	E->qp[0] = qp;
	reconnect(3000, 8000);
	e2e_reset();
	assert_int_equal(srnic_poll_cq(E->cq[0], RTE_DIM(wc), wc), 0);
	e2e_bufs_fill(&b, 7, 8);
	post_writes(&b, 0, LT_SQ);
	assert_sq_full(&b);
	check_writes(&b);
}

struct poller {
	struct srnic_cq *cq;
	_Atomic int stop;
	_Atomic uint64_t polled;
};

static void *
poll_thread(void *arg)
{
	struct poller *p = arg;
	struct ibv_wc wc[8];

	while (!atomic_load(&p->stop)) {
		int n = srnic_poll_cq(p->cq, RTE_DIM(wc), wc);

		if (n > 0)
			atomic_fetch_add(&p->polled, (uint64_t)n);
		else
			rte_pause();
	}
	return NULL;
}

/* srnic_poll_cq() on a second thread while this one destroys QPs whose
 * CQEs are being polled (ASan: no access to a freed QP, no lost CQE of a
 * live one). Every round: a new QP on A's CQ, 8 WRITEs, destroyed once
 * their CQEs are out and the poller has taken at least one, whether it
 * took the others or not. */
static void
test_poll_vs_destroy(void **state)
{
	struct srnic_qp_init_attr qa = { .max_send_wr = LT_SQ, .max_recv_wr = 1,
					 .max_send_sge = 4, .max_recv_sge = 4,
					 .qp_type = IBV_QPT_RC };
	struct poller p = { .cq = NULL };
	struct e2e_conf c;
	struct e2e_bufs b;
	pthread_t th;
	uint32_t r;

	RTE_SET_USED(state);
	conf_small(&c);
	e2e_qps_renew(&c);
	e2e_bufs_new(&b, LT_SQ * LT_MSG, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 9, 10);
	E->no_drain = true;
	p.cq = E->cq[0];
	qa.send_cq = qa.recv_cq = E->cq[0];
	assert_int_equal(pthread_create(&th, NULL, poll_thread, &p), 0);
	for (r = 0; r < LT_RACE_ROUNDS; r++) {
		int64_t cqe0 = srnic_dev_stat(E->p.dev[0], "cqe");
		uint64_t polled0 = atomic_load(&p.polled);

		assert_int_equal(srnic_destroy_qp(E->qp[0]), 0);
		E->qp[0] = srnic_create_qp(E->p.pd[0], &qa);
		assert_non_null(E->qp[0]);
		reconnect(3000 + r * 100, 8000 + r * 100);
		post_writes(&b, r * LT_SQ, LT_SQ);
		E2E_RUN_UNTIL(srnic_dev_stat(E->p.dev[0], "cqe") >= cqe0 + LT_SQ);
		/* the poller has started on this round's CQEs (on a loaded
		 * host it may not have run at all yet): the destroy below
		 * races with it taking the rest */
		E2E_RUN_UNTIL(atomic_load(&p.polled) > polled0);
	}
	atomic_store(&p.stop, 1);
	pthread_join(th, NULL);
	/* the poller saw CQEs (the race was run), never more than made */
	assert_true(atomic_load(&p.polled) > 0u);
	assert_true(atomic_load(&p.polled) <= (uint64_t)LT_RACE_ROUNDS * LT_SQ);
	e2e_reset();
}

/* verbs: a CQ with QPs is EBUSY, and stays usable. */
static void
test_destroy_cq_busy(void **state)
{
	struct e2e_conf c;
	struct e2e_bufs b;

	RTE_SET_USED(state);
	conf_small(&c);
	e2e_qps_renew(&c);
	assert_int_equal(srnic_destroy_cq(E->cq[0]), -EBUSY);
	assert_int_equal(srnic_destroy_cq(E->cq[1]), -EBUSY);
	e2e_bufs_new(&b, LT_SQ * LT_MSG, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 11, 12);
	post_writes(&b, 0, LT_SQ);
	check_writes(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reset_cleans_cq, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_qpn_reuse, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_poll_vs_destroy, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_destroy_cq_busy, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
