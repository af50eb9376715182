/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD multicast across engines: on a pair of two-engine devices over
 * net_ring, a QP of each of B's engines attached to 239.4.5.6. A's one SEND
 * to the group lands on one of B's RX queues; that engine delivers to its
 * own QP and hands the other engine a copy through its redirect ring
 * (rx_mcast_copies 1), where it is delivered and not passed on again: each
 * QP gets the datagram once (bytes, a CQE naming it and A's QPN).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <rte_cycles.h>
#include <rte_malloc.h>

#include "srnic.h"
#include "e2e_fixture.h"
#include "srnic_pair.h"
#include "test_eal.h"

#define QKEY 0x01234567u
#define SLOT 2048
#define MSG 300
#define WAIT_S 20                  /* a guard against a hang, not a wait */

static struct srnic_pair p2;

static union ibv_gid
mgid4(uint8_t a, uint8_t b, uint8_t c)
{
	union ibv_gid g;
	const uint8_t ip[4] = { 239, a, b, c };

	srnic_gid_from_ipv4(&g, ip);
	return g;
}

/* Drive every engine of both devices of p until cond. */
#define PAIR_RUN_UNTIL(p, cond) do { \
	uint64_t dl__ = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz(); \
	while (!(cond)) { \
		uint16_t s__, e__; \
		if (rte_get_timer_cycles() > dl__) \
			fail_msg("timeout waiting for %s (%s:%d)", #cond, __FILE__, __LINE__); \
		for (s__ = 0; s__ < 2; s__++) \
			for (e__ = 0; e__ < srnic_dev_nb_engines((p)->dev[s__]); e__++) \
				srnic_engine_poll(srnic_dev_engine((p)->dev[s__], e__)); \
	} \
} while (0)

static void
test_mcast_engines(void **state)
{
	union ibv_gid g = mgid4(4, 5, 6);
	struct srnic_cq *cq[3];
	struct srnic_qp *qp[3];
	struct srnic_mr *smr, *rmr;
	struct srnic_ah *ah;
	uint8_t *sbuf, *rbuf;
	struct ibv_wc wc[3][4];
	int got[3] = { 0, 0, 0 }, i, n;
	int64_t copies;

	RTE_SET_USED(state);
	assert_int_equal(srnic_dev_nb_engines(p2.dev[1]), 2);
	sbuf = rte_zmalloc("mc_s", 4096, 64);
	rbuf = rte_zmalloc("mc_r", 3 * SLOT, 64);
	assert_non_null(sbuf);
	assert_non_null(rbuf);
	for (i = 0; i < MSG; i++)
		sbuf[i] = (uint8_t)(i * 11 + 3);
	smr = srnic_reg_mr(p2.pd[0], sbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(p2.pd[1], rbuf, 3 * SLOT, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(rmr);
	/* qp[0] on A; qp[1], qp[2] on B's engines 0 and 1 */
	for (i = 0; i < 3; i++) {
		int side = i == 0 ? 0 : 1;
		struct srnic_qp_init_attr qa = { .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .qp_type = IBV_QPT_UD };

		cq[i] = srnic_create_cq(p2.dev[side], 16,
					srnic_dev_engine(p2.dev[side], i == 2 ? 1 : 0));
		assert_non_null(cq[i]);
		qa.send_cq = qa.recv_cq = cq[i];
		qp[i] = srnic_create_qp(p2.pd[side], &qa);
		assert_non_null(qp[i]);
		e2e_ud_up(qp[i], QKEY, 100);
	}
	for (i = 1; i < 3; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)rbuf + i * SLOT, .length = SLOT,
				       .lkey = srnic_mr_lkey(rmr) };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad = NULL;

		assert_int_equal(srnic_post_recv(qp[i], &wr, &bad), 0);
		assert_int_equal(srnic_attach_mcast(qp[i], &g, 0), 0);
	}
	copies = srnic_dev_stat(p2.dev[1], "rx_mcast_copies");
	{
		struct ibv_ah_attr a = { .is_global = 1, .port_num = 1,
					 .grh = { .dgid = g, .sgid_index = SRNIC_GID_INDEX_IP } };
		struct ibv_sge sge = { .addr = (uintptr_t)sbuf, .length = MSG,
				       .lkey = srnic_mr_lkey(smr) };
		struct ibv_send_wr wr, *bad = NULL;

		ah = srnic_create_ah(p2.pd[0], &a);
		assert_non_null(ah);
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_SEND;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = srnic_ah_ibv(ah);
		wr.wr.ud.remote_qpn = SRNIC_MCAST_QPN;
		wr.wr.ud.remote_qkey = QKEY;
		assert_int_equal(srnic_post_send(qp[0], &wr, &bad), 0);
	}
	PAIR_RUN_UNTIL(&p2, ((n = srnic_poll_cq(cq[0], 4, wc[0])) > 0 ? got[0] += n : 0,
			     (n = srnic_poll_cq(cq[1], 4, wc[1] + got[1])) > 0 ? got[1] += n : 0,
			     (n = srnic_poll_cq(cq[2], 4, wc[2] + got[2])) > 0 ? got[2] += n : 0,
			     got[0] >= 1 && got[1] >= 1 && got[2] >= 1));
	assert_int_equal(srnic_dev_stat(p2.dev[1], "rx_mcast_copies"), copies + 1);
	for (i = 1; i < 3; i++) {
		assert_int_equal(got[i], 1);
		assert_int_equal(wc[i][0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i][0].qp_num, srnic_qp_num(qp[i]));
		assert_int_equal(wc[i][0].src_qp, srnic_qp_num(qp[0]));
		assert_int_equal(wc[i][0].byte_len, SRNIC_GRH_LEN + MSG);
		assert_memory_equal(rbuf + i * SLOT + SRNIC_GRH_LEN, sbuf, MSG);
		assert_int_equal(srnic_detach_mcast(qp[i], &g, 0), 0);
	}
	assert_int_equal(srnic_destroy_ah(ah), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(srnic_destroy_qp(qp[i]), 0);
		assert_int_equal(srnic_destroy_cq(cq[i]), 0);
	}
	assert_int_equal(srnic_dereg_mr(smr), 0);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	rte_free(sbuf);
	rte_free(rbuf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcast_engines),
	};

	if (srnic_test_eal_init("mcast_engines", 0, NULL) != 0 ||
	    srnic_pair_create(&p2, "mce", 2, 1500) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
