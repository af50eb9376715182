/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The whole modify_qp attribute table for RC, over QPs
 * of a real device: for every (current, next) pair of states the QP can be
 * in, every attribute bit alone on top of the required ones, and every
 * required bit left out. A transition the table allows with a mask whose
 * bits are all required or optional succeeds and lands in next; anything
 * else is -EINVAL and changes neither the state nor any attribute.
 *
 * The reference below is IBTA 10.3 (o10-2.2, table 91's RC column) as
 * written out here, independently of lib/core/qp.c.
 */
#include <string.h>

#include "e2e_fixture.h"

#define NSTATES (IBV_QPS_ERR + 1)
#define NBITS 31                    /* every bit of an int mask but the sign */
#define TCLASS 0x68                 /* a traffic class an SQD -> SQD AV sets */

struct ref_trans {
	bool valid;
	int req;
	int opt;
};

/* RC: what the spec (and every verbs provider through the kernel) allows. */
static const struct ref_trans ref[NSTATES][NSTATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { true, 0, 0 },
		/* the kernel's ib_modify_qp_is_ok() allows it */
		[IBV_QPS_ERR] = { true, 0, 0 },
		[IBV_QPS_INIT] = { true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0 },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { true, 0, 0 },
		[IBV_QPS_ERR] = { true, 0, 0 },
		[IBV_QPS_INIT] = { true, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS },
		[IBV_QPS_RTR] = { true,
			IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
			IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { true, 0, 0 },
		[IBV_QPS_ERR] = { true, 0, 0 },
		[IBV_QPS_RTS] = { true,
			IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
			IBV_QP_MAX_QP_RD_ATOMIC,
			IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
			IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { true, 0, 0 },
		[IBV_QPS_ERR] = { true, 0, 0 },
		[IBV_QPS_RTS] = { true, 0,
			IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
			IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER },
		[IBV_QPS_SQD] = { true, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { true, 0, 0 },
		[IBV_QPS_ERR] = { true, 0, 0 },
		[IBV_QPS_RTS] = { true, 0,
			IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
			IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE },
		[IBV_QPS_SQD] = { true, 0,
			IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
			IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
			IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE },
	},
	/* SQE: an RC QP never gets there (IBTA 10.3.1: SQE is for unreliable
	 * QPs; an RC send error takes the QP to ERR). */
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { true, 0, 0 },
		[IBV_QPS_ERR] = { true, 0, 0 },
	},
};

/* States an RC QP can be driven to, in the order of the path there. */
static const enum ibv_qp_state reachable[] = {
	IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_ERR,
};

static int
setup_reset(void **state)
{
	struct e2e_conf c = { .no_connect = true };

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	return 0;
}

/* Every attribute in range (so that only the mask decides), going to next
 * from cur. */
static void
attr_all(struct ibv_qp_attr *a, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = next;
	a->cur_qp_state = cur;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			     IBV_ACCESS_REMOTE_WRITE;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = srnic_qp_num(E->qp[1]);
	a->rq_psn = 300;
	a->sq_psn = 200;
	a->max_dest_rd_atomic = 4;
	a->max_rd_atomic = 4;
	a->min_rnr_timer = 1;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.sgid_index = 1;
	a->ah_attr.grh.hop_limit = 64;
	srnic_dev_gid(E->p.dev[1], 1, &a->ah_attr.grh.dgid);
	a->alt_ah_attr = a->ah_attr;
	a->alt_port_num = 1;
	a->alt_timeout = 14;
	a->path_mig_state = IBV_MIG_ARMED;
}

/* Take QP A to st the usual way (through RESET), with the required masks. */
static void
drive_to(enum ibv_qp_state st)
{
	struct srnic_qp *qp = E->qp[0];
	struct ibv_qp_attr a;
	enum ibv_qp_state s = IBV_QPS_RESET;
	unsigned int i;

	attr_all(&a, srnic_qp_state(qp), IBV_QPS_RESET);
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE), 0);
	if (st == IBV_QPS_ERR) {
		attr_all(&a, s, IBV_QPS_INIT);
		assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | ref[s][IBV_QPS_INIT].req), 0);
		attr_all(&a, IBV_QPS_INIT, IBV_QPS_ERR);
		assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE), 0);
		assert_int_equal(srnic_qp_state(qp), IBV_QPS_ERR);
		return;
	}
	for (i = 1; i < RTE_DIM(reachable) && s != st; i++) {
		enum ibv_qp_state n = reachable[i];

		attr_all(&a, s, n);
		assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | ref[s][n].req), 0);
		s = n;
	}
	assert_int_equal(srnic_qp_state(qp), st);
}

/* One modify: succeeds into next iff want, else -EINVAL with nothing changed. */
static void
try_mask(enum ibv_qp_state cur, enum ibv_qp_state next, int mask, bool want)
{
	struct srnic_qp *qp = E->qp[0];
	struct ibv_qp_attr a, before, after;
	struct srnic_qp_init_attr ib, ia;
	int rc;

	assert_int_equal(srnic_qp_state(qp), cur);
	assert_int_equal(srnic_query_qp(qp, &before, 0, &ib), 0);
	attr_all(&a, cur, next);
	rc = srnic_modify_qp(qp, &a, mask);
	if (want) {
		if (rc != 0 || srnic_qp_state(qp) != next)
			fail_msg("%d -> %d mask %#x: rc %d state %d, want 0 and %d", cur, next, mask,
				 rc, srnic_qp_state(qp), next);
		drive_to(cur);
		return;
	}
	if (rc != -EINVAL)
		fail_msg("%d -> %d mask %#x: rc %d, want -EINVAL", cur, next, mask, rc);
	assert_int_equal(srnic_query_qp(qp, &after, 0, &ia), 0);
	if (memcmp(&before, &after, sizeof(before)) != 0 || srnic_qp_state(qp) != cur)
		fail_msg("%d -> %d mask %#x: refused, but the QP changed", cur, next, mask);
}

static void
test_table(void **state)
{
	unsigned int ci, accepted = 0, refused = 0;
	int next, bit;

	RTE_SET_USED(state);
	for (ci = 0; ci < RTE_DIM(reachable); ci++) {
		enum ibv_qp_state cur = reachable[ci];

		drive_to(cur);
		/* next == NSTATES: no IBV_QP_STATE in the mask (next is cur);
		 * next > ERR in qp_state: never valid. */
		for (next = 0; next <= NSTATES; next++) {
			enum ibv_qp_state n = next == NSTATES ? cur : (enum ibv_qp_state)next;
			int st_bit = next == NSTATES ? 0 : IBV_QP_STATE;
			const struct ref_trans *t = &ref[cur][n];

			/* the required mask alone */
			try_mask(cur, n, st_bit | t->req, t->valid);
			t->valid ? accepted++ : refused++;
			/* each bit on top of it */
			for (bit = 0; bit < NBITS; bit++) {
				int b = 1 << bit;
				bool ok = t->valid && ((t->req | t->opt) & b) != 0;

				if (b == IBV_QP_STATE || (t->req & b))
					continue;
				try_mask(cur, n, st_bit | t->req | b, ok);
				ok ? accepted++ : refused++;
			}
			/* each required bit left out */
			for (bit = 0; bit < NBITS; bit++) {
				int b = 1 << bit;

				if (!(t->req & b))
					continue;
				try_mask(cur, n, (st_bit | t->req) & ~b, false);
				refused++;
			}
		}
		/* a state beyond ERR */
		try_mask(cur, IBV_QPS_UNKNOWN, IBV_QP_STATE, false);
	}
	/* Every optional attribute together, where the table allows several. */
	drive_to(IBV_QPS_SQD);
	try_mask(IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_STATE | ref[IBV_QPS_SQD][IBV_QPS_SQD].opt, true);
	drive_to(IBV_QPS_RTS);
	try_mask(IBV_QPS_RTS, IBV_QPS_RTS, IBV_QP_STATE | ref[IBV_QPS_RTS][IBV_QPS_RTS].opt, true);
	print_message("modify_qp table: %u masks accepted, %u refused\n", accepted, refused);
	e2e_settle(4);
}

/* What the RTS -> RTS and SQD -> SQD attributes change is what query says,
 * and a running pair still moves bytes afterwards (nothing torn). */
static void
test_live_changes(void **state)
{
	struct ibv_qp_attr a, q;
	struct e2e_bufs b;

	RTE_SET_USED(state);
	e2e_bufs_new(&b, 8192, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 3, 4);
	memset(&a, 0, sizeof(a));
	a.min_rnr_timer = 5;
	a.qp_access_flags = E2E_RALL;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS),
			 0);
	/* not allowed in RTS: PMTU, PSNs, destination */
	a.path_mtu = IBV_MTU_256;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_PATH_MTU), -EINVAL);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_SQ_PSN), -EINVAL);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_DEST_QPN), -EINVAL);
	assert_int_equal(srnic_query_qp(E->qp[0], &q, 0, NULL), 0);
	assert_int_equal(q.min_rnr_timer, 5);
	assert_int_equal(q.path_mtu, IBV_MTU_4096);
	/* SQD -> SQD: timeout and retry counts */
	a.qp_state = IBV_QPS_SQD;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
	a.timeout = 16;
	a.retry_cnt = 5;
	a.rnr_retry = 6;
	a.max_rd_atomic = 2;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC), 0);
	assert_int_equal(srnic_query_qp(E->qp[0], &q, 0, NULL), 0);
	assert_int_equal(q.qp_state, IBV_QPS_SQD);
	assert_int_equal(q.timeout, 16);
	assert_int_equal(q.retry_cnt, 5);
	assert_int_equal(q.rnr_retry, 6);
	assert_int_equal(q.max_rd_atomic, 2);
	/* SQD -> SQD: a new AV (the same peer, another traffic class) is
	 * installed by the engine; what A sends from then on carries it */
	memset(&a.ah_attr, 0, sizeof(a.ah_attr));
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = TCLASS;
	srnic_dev_gid(E->p.dev[1], 1, &a.ah_attr.grh.dgid);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_AV), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
	e2e_reset();
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 8192, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_READ, 2, 0, 4096, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_memory_equal(b.r, b.l, 8192);
	{
		uint32_t idx[64], n = e2e_pkts_from(0, idx, RTE_DIM(idx)), i;

		assert_true(n >= 3);
		for (i = 0; i < n; i++) {
			const uint8_t *ip = E->pkts[idx[i]].data + E->pkts[idx[i]].l3_off;
			uint8_t tc = (ip[0] >> 4) == 4 ? ip[1] : (uint8_t)((ip[0] << 4) | (ip[1] >> 4));

			assert_int_equal(tc, TCLASS);
		}
	}
}

/* The traffic class of every request A sent since the last e2e_reset(). */
static void
check_tclass(uint8_t want)
{
	uint32_t idx[64], n = e2e_pkts_from(0, idx, RTE_DIM(idx)), i;

	assert_true(n >= 1);
	for (i = 0; i < n; i++) {
		const uint8_t *ip = E->pkts[idx[i]].data + E->pkts[idx[i]].l3_off;
		uint8_t tc = (ip[0] >> 4) == 4 ? ip[1] : (uint8_t)((ip[0] << 4) | (ip[1] >> 4));

		assert_int_equal(tc, want);
	}
}

/* An SQD -> SQD AV the engine has not installed yet does
 * not outlive RESET. A goes SQD, gets an AV with TCLASS, is reset before
 * any poll, then connected again with its usual AV (traffic class 0):
 * what it sends carries the new connection's AV, not the stale one. */
static void
test_av_handoff_reset(void **state)
{
	struct ibv_qp_attr a;
	struct e2e_bufs b;

	RTE_SET_USED(state);
	e2e_bufs_new(&b, 4096, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 7, 8);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_SQD;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.traffic_class = TCLASS;
	srnic_dev_gid(E->p.dev[1], 1, &a.ah_attr.grh.dgid);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE | IBV_QP_AV), 0);
	/* no poll in between: the handoff is still pending */
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
	assert_int_equal(e2e_qp_connect(0, IBV_MTU_4096, E->conf.psn[0], E->conf.psn[1], 16, 16,
					E2E_RALL), 0);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RTS);
	e2e_reset();
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 4096, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_memory_equal(b.r, b.l, 4096);
	check_tclass(0);
	assert_int_equal(srnic_query_qp(E->qp[0], &a, 0, NULL), 0);
	assert_int_equal(a.ah_attr.grh.traffic_class, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_table, setup_reset, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_live_changes, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_av_handoff_reset, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_qp_table", tests, e2e_group_setup,
					   e2e_group_teardown);
}
