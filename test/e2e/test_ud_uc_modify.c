/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic_modify_qp() for UD and UC QPs against the kernel's
 * ib_modify_qp_is_ok() table (drivers/infiniband/core/verbs.c,
 * qp_state_table, the IB_QPT_UD and IB_QPT_UC columns), restated here
 * independently of lib/core/qp.c: for every allowed transition, each
 * required bit left out and each bit neither required nor optional added
 * is -EINVAL with the state unchanged, and required plus every optional
 * bit goes through; every other transition is refused. Also query_qp's
 * view of the type and the Q_Key.
 */
#include <string.h>

#include <rte_errno.h>

#include "e2e_fixture.h"

struct tr {
	enum ibv_qp_state cur, next;
	int req, opt;
};

#define P IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QK IBV_QP_QKEY
#define ACC IBV_QP_ACCESS_FLAGS
#define CUR IBV_QP_CUR_STATE
#define ALT IBV_QP_ALT_PATH
#define MIG IBV_QP_PATH_MIG_STATE

/* transitions to RESET and ERR (allowed from everywhere, with no bit) are
 * added by the test */
static const struct tr ud_tbl[] = {
	{ IBV_QPS_RESET, IBV_QPS_INIT, P | PORT | QK, 0 },
	{ IBV_QPS_INIT, IBV_QPS_INIT, 0, P | PORT | QK },
	{ IBV_QPS_INIT, IBV_QPS_RTR, 0, P | QK },
	{ IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, CUR | QK },
	{ IBV_QPS_RTS, IBV_QPS_RTS, 0, CUR | QK },
	{ IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY },
	{ IBV_QPS_SQD, IBV_QPS_RTS, 0, CUR | QK },
	{ IBV_QPS_SQD, IBV_QPS_SQD, 0, P | QK },
};

static const struct tr uc_tbl[] = {
	{ IBV_QPS_RESET, IBV_QPS_INIT, P | PORT | ACC, 0 },
	{ IBV_QPS_INIT, IBV_QPS_INIT, 0, P | PORT | ACC },
	{ IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN, ALT | ACC | P },
	{ IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN, CUR | ALT | ACC | MIG },
	{ IBV_QPS_RTS, IBV_QPS_RTS, 0, CUR | ACC | ALT | MIG },
	{ IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY },
	{ IBV_QPS_SQD, IBV_QPS_RTS, 0, CUR | ALT | ACC | MIG },
	{ IBV_QPS_SQD, IBV_QPS_SQD, 0, IBV_QP_AV | ALT | ACC | P | MIG },
};

/* every attribute bit verbs has (IBV_QP_STATE aside) */
#define ALL_BITS_FIRST 1
#define ALL_BITS_LAST 20 /* IBV_QP_DEST_QPN */

static int
setup_type(enum ibv_qp_type t)
{
	struct e2e_conf c = { .qp_type = t, .no_connect = true };

	e2e_qps_create(&c);
	return 0;
}

static int
setup_ud(void **state)
{
	RTE_SET_USED(state);
	return setup_type(IBV_QPT_UD);
}

static int
setup_uc(void **state)
{
	RTE_SET_USED(state);
	return setup_type(IBV_QPT_UC);
}

/* Valid values for every attribute, for a move cur -> next. */
static void
attr_all(struct ibv_qp_attr *a, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = next;
	a->cur_qp_state = cur;
	a->port_num = 1;
	a->qkey = 0x77;
	a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = srnic_qp_num(E->qp[1]);
	a->rq_psn = 5;
	a->sq_psn = 6;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->max_rd_atomic = 1;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 1;
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.sgid_index = SRNIC_GID_INDEX_IP;
	srnic_dev_gid(E->p.dev[1], SRNIC_GID_INDEX_IP, &a->ah_attr.grh.dgid);
	a->alt_ah_attr = a->ah_attr;
	a->alt_port_num = 1;
}

static const struct tr *
find(const struct tr *t, size_t n, enum ibv_qp_state cur, enum ibv_qp_state next)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].cur == cur && t[i].next == next)
			return &t[i];
	return NULL;
}

/* E->qp[0] into state st by the table's own required masks. */
static void
go_to(const struct tr *t, size_t n, enum ibv_qp_state st)
{
	static const enum ibv_qp_state path[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
						  IBV_QPS_RTS, IBV_QPS_SQD };
	struct ibv_qp_attr a;
	size_t i;

	attr_all(&a, IBV_QPS_RESET, IBV_QPS_RESET);
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
	if (st == IBV_QPS_ERR) {
		attr_all(&a, IBV_QPS_RESET, IBV_QPS_ERR);
		assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), 0);
		return;
	}
	for (i = 1; i < RTE_DIM(path) && path[i - 1] != st; i++) {
		const struct tr *x = find(t, n, path[i - 1], path[i]);

		assert_non_null(x);
		attr_all(&a, path[i - 1], path[i]);
		assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE | x->req), 0);
	}
	assert_int_equal(srnic_qp_state(E->qp[0]), st);
}

static void
check_table(const struct tr *t, size_t n, enum ibv_qp_type type)
{
	static const enum ibv_qp_state states[] = { IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR,
						    IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_ERR };
	struct srnic_qp_init_attr init;
	struct ibv_qp_attr a;
	size_t ci, ni;
	int b, tried = 0;

	assert_int_equal(srnic_query_qp(E->qp[0], &a, 0, &init), 0);
	assert_int_equal(init.qp_type, type);
	for (ci = 0; ci < RTE_DIM(states); ci++) {
		for (ni = 0; ni < RTE_DIM(states); ni++) {
			enum ibv_qp_state cur = states[ci], next = states[ni];
			const struct tr *x = find(t, n, cur, next);
			struct tr any = { cur, next, 0, 0 };

			if (next == IBV_QPS_RESET || next == IBV_QPS_ERR)
				x = &any;
			go_to(t, n, cur);
			attr_all(&a, cur, next);
			if (x == NULL) {
				/* not a transition of this type, whatever the mask */
				assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE), -EINVAL);
				for (b = ALL_BITS_FIRST; b <= ALL_BITS_LAST; b++)
					assert_int_equal(srnic_modify_qp(E->qp[0], &a,
									 IBV_QP_STATE | (1 << b)),
							 -EINVAL);
				assert_int_equal(srnic_qp_state(E->qp[0]), cur);
				continue;
			}
			for (b = ALL_BITS_FIRST; b <= ALL_BITS_LAST; b++) {
				int bit = 1 << b;

				if (x->req & bit) {
					assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE |
									 (x->req & ~bit)), -EINVAL);
				} else if (!(x->opt & bit)) {
					if (srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE | x->req | bit) !=
					    -EINVAL)
						fail_msg("type %d %d -> %d: extra bit %#x taken", type,
							 cur, next, bit);
				}
				assert_int_equal(srnic_qp_state(E->qp[0]), cur);
			}
			if (srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE | x->req | x->opt) != 0)
				fail_msg("type %d %d -> %d: mask %#x refused", type, cur, next,
					 x->req | x->opt);
			assert_int_equal(srnic_qp_state(E->qp[0]), next);
			tried++;
		}
	}
	assert_int_equal(tried, (int)n + 2 * (int)RTE_DIM(states));
}

static void
test_ud_modify_table(void **state)
{
	struct ibv_qp_attr a;

	RTE_SET_USED(state);
	check_table(ud_tbl, RTE_DIM(ud_tbl), IBV_QPT_UD);
	/* the Q_Key as set at INIT, then changed at RTR -> RTS */
	go_to(ud_tbl, RTE_DIM(ud_tbl), IBV_QPS_RTR);
	assert_int_equal(srnic_query_qp(E->qp[0], &a, IBV_QP_QKEY, NULL), 0);
	assert_int_equal(a.qkey, 0x77);
	attr_all(&a, IBV_QPS_RTR, IBV_QPS_RTS);
	a.qkey = SRNIC_GSI_QKEY;
	assert_int_equal(srnic_modify_qp(E->qp[0], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_QKEY),
			 0);
	memset(&a, 0, sizeof(a));
	assert_int_equal(srnic_query_qp(E->qp[0], &a, IBV_QP_QKEY | IBV_QP_SQ_PSN, NULL), 0);
	assert_int_equal(a.qkey, SRNIC_GSI_QKEY);
	assert_int_equal(a.sq_psn, 6);
	assert_int_equal(a.qp_state, IBV_QPS_RTS);
}

static void
test_uc_modify_table(void **state)
{
	struct ibv_qp_attr a;

	RTE_SET_USED(state);
	check_table(uc_tbl, RTE_DIM(uc_tbl), IBV_QPT_UC);
	go_to(uc_tbl, RTE_DIM(uc_tbl), IBV_QPS_RTS);
	memset(&a, 0, sizeof(a));
	assert_int_equal(srnic_query_qp(E->qp[0], &a, IBV_QP_DEST_QPN, NULL), 0);
	assert_int_equal(a.dest_qp_num, srnic_qp_num(E->qp[1]));
	assert_int_equal(a.path_mtu, IBV_MTU_1024);
	assert_int_equal(a.rq_psn, 5);
}

/* A type srnic does not have */
static void
test_qp_type_refused(void **state)
{
	struct srnic_qp_init_attr ia = { .send_cq = E->cq[0], .recv_cq = E->cq[0],
					 .max_send_wr = 4, .max_recv_wr = 4,
					 .qp_type = IBV_QPT_RAW_PACKET };

	RTE_SET_USED(state);
	rte_errno = 0;
	assert_null(srnic_create_qp(E->p.pd[0], &ia));
	assert_int_equal(rte_errno, EOPNOTSUPP);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ud_modify_table, setup_ud, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_uc_modify_table, setup_uc, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_qp_type_refused, setup_ud, e2e_teardown),
	};

	return cmocka_run_group_tests(tests, e2e_group_setup, e2e_group_teardown);
}
