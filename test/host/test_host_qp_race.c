/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QP state changes racing the engine, with both engines
 * on worker lcores and the main thread modifying:
 * - RTS -> RTS modifies in a loop while A's engine moves the QP to ERR (a
 *   WRITE to a bad rkey: B NAKs it, the WR fails): once the error CQE is
 *   there the QP is in ERR, never back in RTS (a modify that checked RTS
 *   publishes only if the state is still RTS);
 * - modify(RESET) at every moment of the same failure (a delay swept
 *   across the NAK's arrival): it returns 0 and the QP is in RESET, also
 *   after the NAK has been through A's engine (the engine's ERR never
 *   overwrites RESET).
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "host_util.h"

#define RACE_ITERS 16               /* failed WRs the modify loop races */
#define RACE_RESETS 128             /* RESETs swept across a WR's failure */
#define RACE_DEPTH 16
#define RACE_CQE 4096
#define RACE_BAD_RKEY 0x7fffff01u   /* no such MR */

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x5a, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x5b, 0x02 } },
};

static struct {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_engine *eng[2];
	struct srnic_pd *pd[2];
	struct srnic_cq *cq[2];
	unsigned int lcore[2];
	uint8_t *buf;
	struct srnic_mr *mr;
} T;

static int
group_setup(void **state)
{
	static const char *const args[] = { "--lcores=(0-2)@(0-1)" };
	int i;

	RTE_SET_USED(state);
	if (host_eal_init("host_qp_race", 1, args) != 0)
		return -1;
	if (rte_lcore_count() < 3)
		return -1;
	if (srnic_link_ring_pair("qr", 1, HOST_RING_SIZE, &T.port[0], &T.port[1]) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		const uint8_t ip[4] = { 127, 0, 0, (uint8_t)(1 + i) };

		T.dev[i] = host_dev_new(T.port[i], 4, ip, &mac[i], i == 0 ? "qrA" : "qrB");
		T.eng[i] = srnic_dev_engine(T.dev[i], 0);
		T.pd[i] = srnic_alloc_pd(T.dev[i]);
		T.cq[i] = srnic_create_cq(T.dev[i], RACE_CQE, T.eng[i]);
		if (T.pd[i] == NULL || T.cq[i] == NULL)
			return -1;
	}
	if (host_neigh_pair(T.dev, &mac[0], &mac[1]) != 0)
		return -1;
	T.buf = host_alloc(4096);
	T.mr = srnic_reg_mr(T.pd[0], T.buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	if (T.mr == NULL || host_two_workers(T.lcore) < 2)
		return -1;
	host_poll_set(T.eng, 0); /* the workers poll, never this thread */
	if (srnic_engine_launch(T.eng[0], T.lcore[0]) != 0 ||
	    srnic_engine_launch(T.eng[1], T.lcore[1]) != 0)
		return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	srnic_engine_stop(T.eng[0]);
	srnic_engine_stop(T.eng[1]);
	srnic_dereg_mr(T.mr);
	srnic_dev_destroy(T.dev[0]);
	srnic_dev_destroy(T.dev[1]);
	rte_eal_cleanup();
	return 0;
}

static struct srnic_qp *
qp_new(int side)
{
	struct srnic_qp_init_attr qa;
	struct srnic_qp *qp;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = T.cq[side];
	qa.max_send_wr = RACE_DEPTH;
	qa.max_recv_wr = RACE_DEPTH;
	qa.max_send_sge = 1;
	qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	qp = srnic_create_qp(T.pd[side], &qa);
	assert_non_null(qp);
	return qp;
}

static void
pair_new(struct srnic_qp *qp[2])
{
	struct host_ep ep[2];
	int i;

	for (i = 0; i < 2; i++) {
		memset(&ep[i], 0, sizeof(ep[i]));
		qp[i] = qp_new(i);
		ep[i].dev = T.dev[i];
		ep[i].qp = qp[i];
	}
	host_connect_pair(&ep[0], &ep[1], IBV_MTU_1024);
}

/* Both to ERR (or left in RESET), let the engines flush, destroy. */
static void
pair_free(struct srnic_qp *qp[2])
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[64];
	int i;

	for (i = 0; i < 2; i++) {
		if (srnic_qp_state(qp[i]) != IBV_QPS_RESET)
			srnic_modify_qp(qp[i], &a, IBV_QP_STATE);
		assert_int_equal(srnic_destroy_qp(qp[i]), 0);
		while (srnic_poll_cq(T.cq[i], 64, wc) > 0)
			;
	}
}

static void
post_bad_write(struct srnic_qp *qp, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)T.buf, .length = 64, .lkey = srnic_mr_lkey(T.mr) };

	assert_int_equal(srnic_test_post_send(qp, IBV_WR_RDMA_WRITE, wr_id, &sge, 1, 0x1000,
					      RACE_BAD_RKEY, IBV_SEND_SIGNALED), 0);
}

/* The CQE of wr_id on side 0's CQ, if it is there now. */
static bool
got_wc(uint64_t wr_id, enum ibv_wc_status *st)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = srnic_poll_cq(T.cq[0], 16, wc)) > 0)
		for (i = 0; i < n; i++)
			if (wc[i].wr_id == wr_id) {
				*st = wc[i].status;
				return true;
			}
	return false;
}

static void
test_modify_vs_engine_err(void **state)
{
	struct srnic_qp *qp[2];
	struct ibv_qp_attr a;
	uint32_t it, modifies = 0, refused = 0;

	RTE_SET_USED(state);
	for (it = 0; it < RACE_ITERS; it++) {
		enum ibv_wc_status st = IBV_WC_SUCCESS;
		uint64_t dl = host_deadline();
		bool done = false;
		int rc;

		pair_new(qp);
		post_bad_write(qp[0], 100 + it);
		/* RTS -> RTS back to back while the engine fails the WR */
		while (!done) {
			if (host_deadline_passed(dl))
				fail_msg("iteration %u: no CQE for the failed WRITE", it);
			memset(&a, 0, sizeof(a));
			a.min_rnr_timer = (uint8_t)(1 + modifies % 8);
			rc = srnic_modify_qp(qp[0], &a, IBV_QP_MIN_RNR_TIMER);
			modifies++;
			if (rc != 0) {
				assert_int_equal(rc, -EINVAL); /* ERR -> ERR takes no attribute */
				refused++;
			}
			done = got_wc(100 + it, &st);
		}
		assert_int_equal(st, IBV_WC_REM_ACCESS_ERR);
		/* the WR failed: the engine moves the QP to ERR right after the
		 * CQE, and no modify that checked RTS brings it back */
		dl = host_deadline();
		while (srnic_qp_state(qp[0]) != IBV_QPS_ERR)
			if (host_deadline_passed(dl))
				fail_msg("iteration %u: QP in state %d after its WR failed, want ERR",
					 it, srnic_qp_state(qp[0]));
		memset(&a, 0, sizeof(a));
		assert_int_equal(srnic_modify_qp(qp[0], &a, IBV_QP_MIN_RNR_TIMER), -EINVAL);
		pair_free(qp);
	}
	print_message("%u modifies raced %u engine-side ERRs, %u refused\n", modifies,
		      RACE_ITERS, refused);
}

static void
test_reset_vs_engine_err(void **state)
{
	struct srnic_qp *qp[2];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	uint64_t step, t0, dl;
	uint32_t it, sent = 0;
	enum ibv_wc_status st;

	RTE_SET_USED(state);
	/* How long from post to the WR's failure here, now: the sweep covers
	 * one and a half times that */
	pair_new(qp);
	t0 = rte_get_timer_cycles();
	post_bad_write(qp[0], 199);
	dl = host_deadline();
	while (!got_wc(199, &st))
		if (host_deadline_passed(dl))
			fail_msg("no CQE for the failed WRITE");
	step = RTE_MAX((rte_get_timer_cycles() - t0) * 3 / 2 / (RACE_RESETS), 1ull);
	pair_free(qp);
	for (it = 0; it < RACE_RESETS; it++) {
		int64_t seen = srnic_dev_stat(T.dev[0], "comp_nak_rcvd") +
			       srnic_dev_stat(T.dev[0], "rx_qp_state_drop");
		int64_t req0 = srnic_dev_stat(T.dev[0], "req_pkts");
		uint64_t until;

		pair_new(qp);
		post_bad_write(qp[0], 200 + it);
		until = rte_get_timer_cycles() + it * step;
		while (rte_get_timer_cycles() < until)
			rte_pause();
		assert_int_equal(srnic_modify_qp(qp[0], &a, IBV_QP_STATE), 0);
		if (srnic_qp_state(qp[0]) != IBV_QPS_RESET)
			fail_msg("iteration %u: modify(RESET) returned 0, QP in state %d", it,
				 srnic_qp_state(qp[0]));
		/* If the WRITE went out, B NAKs it and the NAK comes through A's
		 * engine (to the completer, or dropped for the RESET QP): after
		 * that nothing can turn RESET into ERR. */
		dl = host_deadline();
		while (srnic_dev_stat(T.dev[0], "req_pkts") > req0 &&
		       srnic_dev_stat(T.dev[0], "comp_nak_rcvd") +
		       srnic_dev_stat(T.dev[0], "rx_qp_state_drop") == seen)
			if (host_deadline_passed(dl))
				fail_msg("iteration %u: the NAK never reached A", it);
		sent += srnic_dev_stat(T.dev[0], "req_pkts") > req0;
		if (srnic_qp_state(qp[0]) != IBV_QPS_RESET)
			fail_msg("iteration %u: QP left RESET for state %d", it,
				 srnic_qp_state(qp[0]));
		pair_free(qp);
	}
	print_message("%u RESETs over %.1f us, %u of them after the WRITE went out\n",
		      RACE_RESETS, (double)step * RACE_RESETS * 1e6 / rte_get_timer_hz(), sent);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modify_vs_engine_err),
		cmocka_unit_test(test_reset_vs_engine_err),
	};

	return cmocka_run_group_tests_name("host_qp_race", tests, group_setup, group_teardown);
}
