/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic_modify_qp() validation: transitions verbs does
 * not allow for RC, out-of-range attributes and missing required masks
 * are -EINVAL and change nothing; RESET -> INIT -> RTR -> RTS works;
 * ERR flushes posted WRs; RESET makes a used QP new again.
 */
#include <string.h>

#include "e2e_fixture.h"

#define M_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define M_RTR (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
	       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define M_RTS (IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | \
	       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)

static int
setup_reset(void **state)
{
	struct e2e_conf c = { .no_connect = true };

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	return 0;
}

static void
attr_init(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_WRITE;
}

static void
attr_rtr(struct ibv_qp_attr *a, int side)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = srnic_qp_num(E->qp[1 - side]);
	a->rq_psn = 77;
	a->max_dest_rd_atomic = 4;
	a->min_rnr_timer = 1;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.sgid_index = 1;
	a->ah_attr.grh.hop_limit = 64;
	srnic_dev_gid(E->p.dev[1 - side], 1, &a->ah_attr.grh.dgid);
}

static void
attr_rts(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->sq_psn = 77;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = 4;
}

/* modify must fail with -EINVAL and leave state and attributes alone */
static void
refused(struct srnic_qp *qp, struct ibv_qp_attr *a, int mask, const char *what)
{
	struct ibv_qp_attr before, after;
	struct srnic_qp_init_attr ib, ia;
	int rc;

	assert_int_equal(srnic_query_qp(qp, &before, 0, &ib), 0);
	rc = srnic_modify_qp(qp, a, mask);
	if (rc != -EINVAL)
		fail_msg("%s: modify returned %d, want -EINVAL", what, rc);
	assert_int_equal(srnic_query_qp(qp, &after, 0, &ia), 0);
	if (memcmp(&before, &after, sizeof(before)) != 0)
		fail_msg("%s: refused modify changed the QP's attributes", what);
}

static void
test_bad_transitions(void **state)
{
	struct srnic_qp *qp;
	struct ibv_qp_attr a;
	int bit;
	static const int rtr_bits[] = { IBV_QP_AV, IBV_QP_PATH_MTU, IBV_QP_DEST_QPN,
					IBV_QP_RQ_PSN, IBV_QP_MAX_DEST_RD_ATOMIC,
					IBV_QP_MIN_RNR_TIMER };
	static const int rts_bits[] = { IBV_QP_SQ_PSN, IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT,
					IBV_QP_RNR_RETRY, IBV_QP_MAX_QP_RD_ATOMIC };
	static const int init_bits[] = { IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_ACCESS_FLAGS };

	RTE_SET_USED(state);
	qp = E->qp[0];
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_RESET);

	/* from RESET: only INIT (or RESET/ERR) */
	attr_rtr(&a, 0);
	refused(qp, &a, M_RTR, "RESET -> RTR");
	attr_rts(&a);
	refused(qp, &a, M_RTS, "RESET -> RTS");
	attr_init(&a);
	a.qp_state = IBV_QPS_SQD;
	refused(qp, &a, M_INIT, "RESET -> SQD");
	for (bit = 0; bit < (int)RTE_DIM(init_bits); bit++) {
		attr_init(&a);
		refused(qp, &a, M_INIT & ~init_bits[bit], "RESET -> INIT missing a mask bit");
	}
	attr_init(&a);
	a.port_num = 2;
	refused(qp, &a, M_INIT, "port 2");
	attr_init(&a);
	a.pkey_index = 1;
	refused(qp, &a, M_INIT, "pkey index 1");
	/* cur_qp_state that is not the current state */
	attr_init(&a);
	a.cur_qp_state = IBV_QPS_RTS;
	refused(qp, &a, M_INIT | IBV_QP_CUR_STATE, "wrong cur_qp_state");
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_RESET);
	attr_init(&a);
	assert_int_equal(srnic_modify_qp(qp, &a, M_INIT), 0);
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_INIT);

	/* from INIT: not RTS */
	attr_rts(&a);
	refused(qp, &a, M_RTS, "INIT -> RTS");
	attr_rtr(&a, 0);
	a.path_mtu = 0;
	refused(qp, &a, M_RTR, "path_mtu 0");
	attr_rtr(&a, 0);
	a.path_mtu = 6;
	refused(qp, &a, M_RTR, "path_mtu 6");
	attr_rtr(&a, 0);
	a.max_dest_rd_atomic = 17;
	refused(qp, &a, M_RTR, "max_dest_rd_atomic 17");
	attr_rtr(&a, 0);
	a.min_rnr_timer = 32;
	refused(qp, &a, M_RTR, "min_rnr_timer 32");
	attr_rtr(&a, 0);
	a.dest_qp_num = 1u << 24;
	refused(qp, &a, M_RTR, "dest_qp_num 2^24");
	attr_rtr(&a, 0);
	a.ah_attr.is_global = 0;
	refused(qp, &a, M_RTR, "AV without GRH");
	attr_rtr(&a, 0);
	a.ah_attr.grh.sgid_index = SRNIC_GID_TBL_LEN;
	refused(qp, &a, M_RTR, "sgid_index out of the table");
	for (bit = 0; bit < (int)RTE_DIM(rtr_bits); bit++) {
		attr_rtr(&a, 0);
		refused(qp, &a, M_RTR & ~rtr_bits[bit], "INIT -> RTR missing a mask bit");
	}
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_INIT);
	attr_rtr(&a, 0);
	assert_int_equal(srnic_modify_qp(qp, &a, M_RTR), 0);
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_RTR);

	/* from RTR: RTS with every required attribute, in range */
	attr_init(&a);
	refused(qp, &a, M_INIT, "RTR -> INIT");
	attr_rts(&a);
	a.retry_cnt = 8;
	refused(qp, &a, M_RTS, "retry_cnt 8");
	attr_rts(&a);
	a.rnr_retry = 8;
	refused(qp, &a, M_RTS, "rnr_retry 8");
	attr_rts(&a);
	a.timeout = 32;
	refused(qp, &a, M_RTS, "timeout 32");
	for (bit = 0; bit < (int)RTE_DIM(rts_bits); bit++) {
		attr_rts(&a);
		refused(qp, &a, M_RTS & ~rts_bits[bit], "RTR -> RTS missing a mask bit");
	}
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_RTR);
	attr_rts(&a);
	assert_int_equal(srnic_modify_qp(qp, &a, M_RTS), 0);
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_RTS);

	/* from RTS: not back to INIT/RTR */
	attr_init(&a);
	refused(qp, &a, M_INIT, "RTS -> INIT");
	attr_rtr(&a, 0);
	refused(qp, &a, M_RTR, "RTS -> RTR");
	assert_int_equal(srnic_qp_state(qp), IBV_QPS_RTS);

	/* the attributes that went through are the ones queried */
	{
		struct ibv_qp_attr q;

		assert_int_equal(srnic_query_qp(qp, &q, 0, NULL), 0);
		assert_int_equal(q.path_mtu, IBV_MTU_1024);
		assert_int_equal(q.dest_qp_num, srnic_qp_num(E->qp[1]));
		assert_int_equal(q.rq_psn, 77);
		assert_int_equal(q.sq_psn, 77);
		assert_int_equal(q.max_rd_atomic, 4);
		assert_int_equal(q.max_dest_rd_atomic, 4);
		assert_int_equal(q.timeout, 14);
	}
}

/* Posting: nothing to send before RTS; receives from INIT on. */
static void
test_post_states(void **state)
{
	struct srnic_mr *mr;
	uint8_t *buf = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &mr);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64, .lkey = srnic_mr_lkey(mr) };
	struct ibv_send_wr swr, *sbad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_qp_attr a;

	RTE_SET_USED(state);
	memset(&swr, 0, sizeof(swr));
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	memset(&rwr, 0, sizeof(rwr));
	rwr.sg_list = &sge;
	rwr.num_sge = 1;

	assert_int_not_equal(srnic_post_send(E->qp[0], &swr, &sbad), 0);
	assert_int_not_equal(srnic_post_recv(E->qp[0], &rwr, &rbad), 0);
	attr_init(&a);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, M_INIT), 0);
	assert_int_not_equal(srnic_post_send(E->qp[0], &swr, &sbad), 0);
	assert_int_equal(srnic_post_recv(E->qp[0], &rwr, &rbad), 0);
	attr_rtr(&a, 0);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, M_RTR), 0);
	assert_int_not_equal(srnic_post_send(E->qp[0], &swr, &sbad), 0);
	assert_ptr_equal(sbad, &swr);
	/* too many SGEs */
	attr_rts(&a);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, M_RTS), 0);
	swr.num_sge = SRNIC_MAX_SGE + 1;
	assert_int_not_equal(srnic_post_send(E->qp[0], &swr, &sbad), 0);
	rwr.num_sge = SRNIC_MAX_SGE + 1;
	assert_int_not_equal(srnic_post_recv(E->qp[0], &rwr, &rbad), 0);
}

/* To ERR: posted RECVs and SENDs are flushed with IBV_WC_WR_FLUSH_ERR, in order. */
static void
test_err_flushes(void **state)
{
	struct srnic_mr *mr;
	uint8_t *buf;
	struct ibv_sge sge;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint32_t i;

	RTE_SET_USED(state);
	buf = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE, &mr);
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 64, .lkey = srnic_mr_lkey(mr) };
	for (i = 0; i < 3; i++)
		e2e_post_rx(1, 40 + i, &sge, 1);
	assert_int_equal(srnic_modify_qp(E->qp[1], &a, IBV_QP_STATE), 0);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_ERR);
	e2e_wait_wc(1, 3);
	e2e_settle(4);
	assert_int_equal(E->nwc[1], 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(E->wc[1][i].wr_id, 40 + i);
		assert_int_equal(E->wc[1][i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(E->wc[1][i].opcode, IBV_WC_RECV);
		assert_int_equal(E->wc[1][i].qp_num, srnic_qp_num(E->qp[1]));
	}
	/* RECVs posted in ERR are flushed too */
	e2e_post_rx(1, 50, &sge, 1);
	e2e_wait_wc(1, 4);
	assert_int_equal(E->wc[1][3].wr_id, 50);
	assert_int_equal(E->wc[1][3].status, IBV_WC_WR_FLUSH_ERR);

	/* the send queue: post without letting the engine run, then ERR */
	{
		struct srnic_mr *lmr;
		uint8_t *lbuf = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &lmr);
		struct ibv_sge ls = { .addr = (uintptr_t)lbuf, .length = 64,
				      .lkey = srnic_mr_lkey(lmr) };

		for (i = 0; i < 3; i++)
			e2e_post_op(0, IBV_WR_SEND, 60 + i, &ls, 1, 0, 0,
				    i == 1 ? 0 : IBV_SEND_SIGNALED);
		assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
		e2e_wait_wc(0, 3);
		e2e_settle(4);
		assert_int_equal(E->nwc[0], 3); /* unsignaled ones flush with a CQE too */
		for (i = 0; i < 3; i++) {
			assert_int_equal(E->wc[0][i].wr_id, 60 + i);
			assert_int_equal(E->wc[0][i].status, IBV_WC_WR_FLUSH_ERR);
		}
	}
}

/* ERR -> RESET -> INIT -> RTR -> RTS: a used QP pair works again. */
static void
test_reset_reuse(void **state)
{
	struct srnic_mr *lmr, *rmr, *vmr;
	uint8_t *lbuf, *rbuf, *vbuf;
	struct ibv_qp_attr a;
	struct ibv_sge sge, rsge;
	int round, i;

	RTE_SET_USED(state);
	lbuf = e2e_buf(0, 8192, IBV_ACCESS_LOCAL_WRITE, &lmr);
	rbuf = e2e_buf(1, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, &rmr);
	vbuf = e2e_buf(1, 8192, IBV_ACCESS_LOCAL_WRITE, &vmr);
	srnic_test_fill(rbuf, 8192, 9);
	for (round = 0; round < 3; round++) {
		uint32_t psn = 1000 * (round + 1);

		e2e_reset();
		for (i = 0; i < 2; i++)
			assert_int_equal(e2e_qp_connect(i, IBV_MTU_1024, psn + i, psn + 1 - i, 4, 4,
							IBV_ACCESS_LOCAL_WRITE |
							IBV_ACCESS_REMOTE_READ), 0);
		srnic_test_fill(lbuf, 8192, 20 + round);
		sge = (struct ibv_sge){ .addr = (uintptr_t)lbuf, .length = 3000,
					.lkey = srnic_mr_lkey(lmr) };
		rsge = (struct ibv_sge){ .addr = (uintptr_t)vbuf, .length = 4096,
					 .lkey = srnic_mr_lkey(vmr) };
		e2e_post_rx(1, 1, &rsge, 1);
		e2e_post_op(0, IBV_WR_SEND, 2, &sge, 1, 0, 0, IBV_SEND_SIGNALED);
		sge.addr = (uintptr_t)lbuf + 4096;
		e2e_post_op(0, IBV_WR_RDMA_READ, 3, &sge, 1, (uintptr_t)rbuf, srnic_mr_rkey(rmr),
			    IBV_SEND_SIGNALED);
		e2e_wait_wc(0, 2);
		e2e_wait_wc(1, 1);
		assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[1][0].byte_len, 3000);
		assert_memory_equal(vbuf, lbuf, 3000);
		assert_memory_equal(lbuf + 4096, rbuf, 3000);
		/* the first request of each round has the round's PSN */
		assert_int_equal(E->pkts[0].psn, psn);
		/* leave the QPs with work pending in ERR, then RESET them */
		e2e_post_rx(1, 9, &rsge, 1);
		a.qp_state = IBV_QPS_ERR;
		assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
		assert_int_equal(srnic_modify_qp(E->qp[1], &a, IBV_QP_STATE), 0);
		e2e_wait_wc(1, 2);
		assert_int_equal(E->wc[1][1].status, IBV_WC_WR_FLUSH_ERR);
		e2e_settle(4);
		a.qp_state = IBV_QPS_RESET;
		assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
		assert_int_equal(srnic_modify_qp(E->qp[1], &a, IBV_QP_STATE), 0);
		assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RESET);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_transitions, setup_reset, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_post_states, setup_reset, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_err_flushes, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_reset_reuse, setup_reset, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_modify", tests, e2e_group_setup,
					   e2e_group_teardown);
}
