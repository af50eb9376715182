/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reliability end to end: frames dropped on purpose on the way in (an RX
 * callback ahead of the capture), and what RC must do about it (IBTA
 * 9.7.5.1, 9.9): NAK sequence error and go-back-N, the local ACK timeout
 * and retransmission, duplicates answered without executing twice
 * (C9-101: re-ACK SEND/WRITE, re-execute READ, replay the saved atomic
 * result), retry_cnt exhausted -> IBV_WC_RETRY_EXC_ERR.
 */
#include <string.h>

#include "e2e_fixture.h"

#define PSN0 500
/* timeout 10: 4.096 us * 2^10 = 4.2 ms, short enough for many retries */
#define TMO 10

static struct e2e_bufs bufs;

static void
fresh(uint8_t retry_cnt)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { PSN0, 900 }, .timeout = TMO,
			      .retry_cnt = retry_cnt };

	e2e_qps_renew(&c);
	e2e_bufs_new(&bufs, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 1, 2);
}

static uint32_t
count_op(int side, uint8_t opcode)
{
	uint32_t i, n = 0;

	for (i = 0; i < E->npkts; i++)
		n += E->pkts[i].side == side && E->pkts[i].opcode == opcode;
	return n;
}

static void
all_ok(uint32_t n)
{
	uint32_t i;

	e2e_wait_wc(0, n);
	e2e_settle(4);
	for (i = 0; i < n; i++) {
		if (E->wc[0][i].status != IBV_WC_SUCCESS)
			e2e_dump();
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][i].wr_id, i + 1);
	}
	assert_int_equal(E->nwc[0], n);
}

/* A lost MIDDLE: the next packet is out of sequence, one NAK, go back. */
static void
test_lost_write_middle(void **state)
{
	uint32_t i, naks = 0;

	RTE_SET_USED(state);
	fresh(7);
	e2e_drop_arm(0, SRNIC_OP_RC_WRITE_MIDDLE, 1, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 8192, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 8192, 4096, 8192, IBV_SEND_SIGNALED);
	all_ok(2);
	assert_int_equal(E->drop.dropped, 1);
	assert_memory_equal(bufs.r, bufs.l, 8192 + 4096);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->opcode == SRNIC_OP_RC_ACK &&
		    srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)) == 0x60) {
			assert_int_equal(k->psn, PSN0 + 2); /* the PSN expected */
			naks++;
		}
	}
	assert_int_equal(naks, 1); /* one NAK per gap */
}

/* A lost SEND LAST: nothing follows it, only the timer can tell. */
static void
test_lost_send_last(void **state)
{
	RTE_SET_USED(state);
	fresh(7);
	e2e_bufs_recv(&bufs, E->qp[1], 10, 0, 8192);
	e2e_drop_arm(0, SRNIC_OP_RC_SEND_LAST, 0, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 1, 0, 3000, 0, IBV_SEND_SIGNALED);
	all_ok(1);
	e2e_wait_wc(1, 1);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, 3000);
	assert_memory_equal(bufs.v, bufs.l, 3000);
}

/* A lost ACK: the SEND is retransmitted, the responder sees a duplicate,
 * ACKs it again and does not complete a second RECV. */
static void
test_lost_ack(void **state)
{
	int64_t dup = srnic_dev_stat(E->p.dev[1], "resp_dup");

	RTE_SET_USED(state);
	fresh(7);
	e2e_bufs_recv(&bufs, E->qp[1], 10, 0, 8192);
	e2e_bufs_recv(&bufs, E->qp[1], 11, 8192, 8192);
	e2e_drop_arm(1, SRNIC_OP_RC_ACK, 0, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 1, 0, 2000, 0, IBV_SEND_SIGNALED);
	all_ok(1);
	assert_true(count_op(0, SRNIC_OP_RC_SEND_FIRST) >= 2); /* sent again */
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].wr_id, 10);
	assert_true(srnic_dev_stat(E->p.dev[1], "resp_dup") > dup);
	/* the second RECV is still there for the next SEND */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 2, 100, 500, 0, IBV_SEND_SIGNALED);
	all_ok(2);
	assert_int_equal(E->wc[1][1].wr_id, 11);
	assert_memory_equal(bufs.v + 8192, bufs.l + 100, 500);
}

/* A lost READ response MIDDLE: the READ is asked again and completes. */
static void
test_lost_read_resp(void **state)
{
	RTE_SET_USED(state);
	fresh(7);
	e2e_drop_arm(1, SRNIC_OP_RC_READ_RESP_MIDDLE, 2, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, 8192, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 16384, 100, 16384, IBV_SEND_SIGNALED);
	all_ok(2);
	assert_memory_equal(bufs.l, bufs.r, 8192);
	assert_memory_equal(bufs.r + 16384, bufs.l + 16384, 100);
}

/* A lost READ request. */
static void
test_lost_read_req(void **state)
{
	RTE_SET_USED(state);
	fresh(7);
	e2e_drop_arm(0, SRNIC_OP_RC_READ_REQ, 0, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, 3000, 0, IBV_SEND_SIGNALED);
	all_ok(1);
	assert_memory_equal(bufs.l, bufs.r, 3000);
}

/* A lost atomic ACK: the atomic is sent again and answered from the saved
 * result, not executed twice. */
static void
test_lost_atomic_ack(void **state)
{
	uint64_t *ctr;

	RTE_SET_USED(state);
	fresh(7);
	ctr = (uint64_t *)bufs.r;
	*ctr = 100;
	e2e_drop_arm(1, SRNIC_OP_RC_ATOMIC_ACK, 0, 1);
	e2e_bufs_atomic(&bufs, E->qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 0, 5, 0,
			IBV_SEND_SIGNALED);
	all_ok(1);
	assert_true(count_op(0, SRNIC_OP_RC_FETCH_ADD) >= 2);
	assert_int_equal(*ctr, 105);                  /* executed once */
	assert_int_equal(*(uint64_t *)bufs.l, 100);   /* the original value */
}

/* Nobody answers: retry_cnt retries, then IBV_WC_RETRY_EXC_ERR, QP in ERR,
 * the rest flushed. */
static void
test_retry_exceeded(void **state)
{
	uint32_t sent;

	RTE_SET_USED(state);
	fresh(2);
	e2e_drop_arm(0, -1, 0, UINT32_MAX); /* A's frames never arrive */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 100, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 0, 100, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(E->wc[0][1].wr_id, 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	/* first transmission + retry_cnt retransmissions of the first WRITE */
	sent = E->drop.dropped;
	assert_true(sent >= 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lost_write_middle, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_lost_send_last, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_lost_ack, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_lost_read_resp, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_lost_read_req, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_lost_atomic_ack, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_retry_exceeded, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_loss", tests, e2e_group_setup,
					   e2e_group_teardown);
}
