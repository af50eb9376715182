/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An SRQ has one consumer, its engine. On a device of two
 * engines a QP whose CQs are on the other engine than the SRQ's is refused
 * (EINVAL); one on the SRQ's engine is taken, and keeps the SRQ busy.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <rte_errno.h>

#include "srnic.h"
#include "srnic_pair.h"
#include "test_eal.h"

static struct srnic_pair p2;

/* ---- an SRQ belongs to one engine: QPs of another are refused ---- */

static void
test_srq_engine_rule(void **state)
{
	struct ibv_srq_init_attr ia = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct srnic_qp_init_attr qa = { .max_send_wr = 8, .max_send_sge = 1,
					 .qp_type = IBV_QPT_RC,
					 .comp_mask = SRNIC_QP_INIT_ATTR_SRQ };
	struct srnic_srq *s0, *s1;
	struct srnic_engine *e0, *e1;
	struct srnic_cq *cq1;
	struct srnic_qp *qp;

	RTE_SET_USED(state);
	e0 = srnic_dev_engine(p2.dev[1], 0);
	e1 = srnic_dev_engine(p2.dev[1], 1);
	assert_non_null(e1);
	s0 = srnic_create_srq(p2.pd[1], &ia, e0);
	s1 = srnic_create_srq(p2.pd[1], &ia, e1);
	cq1 = srnic_create_cq(p2.dev[1], 16, e1);
	assert_non_null(s0);
	assert_non_null(s1);
	assert_non_null(cq1);
	assert_int_not_equal(srnic_srq_num(s0), srnic_srq_num(s1));
	qa.send_cq = qa.recv_cq = cq1;
	qa.srq = s0; /* engine 0's SRQ, engine 1's CQ */
	rte_errno = 0;
	assert_null(srnic_create_qp(p2.pd[1], &qa));
	assert_int_equal(rte_errno, EINVAL);
	qa.srq = s1;
	qp = srnic_create_qp(p2.pd[1], &qa);
	assert_non_null(qp);
	assert_int_equal(srnic_destroy_srq(s1), -EBUSY);
	assert_int_equal(srnic_destroy_srq(s0), 0);
	assert_int_equal(srnic_destroy_cq(cq1), -EBUSY);
	assert_int_equal(srnic_destroy_qp(qp), 0);
	assert_int_equal(srnic_destroy_srq(s1), 0);
	assert_int_equal(srnic_destroy_cq(cq1), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srq_engine_rule),
	};

	if (srnic_test_eal_init("srq_engines", 0, NULL) != 0 ||
	    srnic_pair_create(&p2, "srqe", 2, 1500) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
