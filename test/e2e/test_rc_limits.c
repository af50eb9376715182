/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Limits end to end: the requester's
 * max_rd_atomic bounds READs/atomics on the wire (one above srnic's own is
 * capped to it), the responder's
 * max_dest_rd_atomic NAKs what goes beyond it, and a CQ overflow is an
 * error the application sees (-EOVERFLOW, QP in ERR), never a silent loss.
 */
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>

#include "e2e_fixture.h"
#include "rnic.h"

#define NAK_INV_REQ 0x61

static struct e2e_bufs bufs;

static void
fresh(const struct e2e_conf *c)
{
	e2e_qps_renew(c);
	/* (v unused here) A's buffer stays zeroed: only B's is filled */
	e2e_bufs_new(&bufs, 1 << 17, IBV_ACCESS_LOCAL_WRITE);
	srnic_test_fill(bufs.r, 1 << 17, 3);
}

/* Max over the capture of (READ/atomic requests seen - answered). */
static uint32_t
max_outstanding(void)
{
	uint32_t i, req = 0, done = 0, max = 0;

	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->opcode == SRNIC_OP_RC_READ_REQ || k->opcode == SRNIC_OP_RC_FETCH_ADD ||
		    k->opcode == SRNIC_OP_RC_CMP_SWAP)
			req++;
		if (k->opcode == SRNIC_OP_RC_READ_RESP_LAST ||
		    k->opcode == SRNIC_OP_RC_READ_RESP_ONLY || k->opcode == SRNIC_OP_RC_ATOMIC_ACK)
			done++;
		assert_true(done <= req);
		max = RTE_MAX(max, req - done);
	}
	return max;
}

static void
test_requester_limit(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 10, 20 },
			      .max_rd_atomic = { 2, 16 } };
	int64_t waits = srnic_dev_stat(E->p.dev[0], "req_wait_rd_atomic");
	uint32_t i;

	RTE_SET_USED(state);
	fresh(&c);
	for (i = 0; i < 8; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, i, i * 8192, 8192, i * 8192,
			      IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 8);
	e2e_settle(4);
	for (i = 0; i < 8; i++) {
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][i].wr_id, i);
	}
	assert_memory_equal(bufs.l, bufs.r, 8 * 8192);
	assert_int_equal(max_outstanding(), 2);
	assert_true(srnic_dev_stat(E->p.dev[0], "req_wait_rd_atomic") > waits);

	/* atomics count too: max_rd_atomic 1 */
	c.max_rd_atomic[0] = 1;
	fresh(&c);
	memset(bufs.r, 0, 8 * 64);
	for (i = 0; i < 8; i++)
		e2e_bufs_atomic(&bufs, E->qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, i, (i % 2) * 64,
				(i % 2) * 64, 1, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 8, 4096, 100, 4096, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 9);
	e2e_settle(4);
	for (i = 0; i < 9; i++)
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
	assert_int_equal(max_outstanding(), 1);
	assert_int_equal(*(uint64_t *)bufs.r, 4);
	assert_int_equal(*(uint64_t *)(bufs.r + 64), 4);
}

/*
 * A requester asked for more READs/atomics in flight than srnic holds
 * (perftest's max_rd_atomic is the peer's OUT_READS: rdma_rxe announces
 * 128) gets srnic's SRNIC_MAX_RD_ATOMIC: RTS succeeds, query shows the cap,
 * and the wire keeps to it, so a responder with that many resources (B's
 * 16) never NAKs. Before the cap, RTS was -EINVAL and perftest's ib_read_bw
 * and ib_atomic_lat against rxe stopped at "Failed to modify QP to RTS".
 * A responder limit above ours stays out of range (test_rc_modify).
 */
static void
test_requester_above_ours(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 10, 20 },
			      .max_rd_atomic = { 128, 16 } };
	int64_t waits = srnic_dev_stat(E->p.dev[0], "req_wait_rd_atomic");
	struct ibv_qp_attr q;
	uint32_t i, n = 2 * SRNIC_MAX_RD_ATOMIC;

	RTE_SET_USED(state);
	fresh(&c);
	assert_int_equal(srnic_query_qp(E->qp[0], &q, 0, NULL), 0);
	assert_int_equal(q.max_rd_atomic, SRNIC_MAX_RD_ATOMIC);
	for (i = 0; i < n; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, i, i * 4096, 4096, i * 4096,
			      IBV_SEND_SIGNALED);
	e2e_wait_wc(0, n);
	e2e_settle(4);
	for (i = 0; i < n; i++) {
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][i].wr_id, i);
	}
	assert_memory_equal(bufs.l, bufs.r, n * 4096);
	assert_true(max_outstanding() <= SRNIC_MAX_RD_ATOMIC);
	assert_true(srnic_dev_stat(E->p.dev[0], "req_wait_rd_atomic") > waits);
}

/*
 * Responder max_dest_rd_atomic 1, requester max_rd_atomic 4: four READs in
 * one RX burst. The first is answered; the second exceeds the responder's
 * limit: NAK invalid request at its PSN, the requester's WC
 * IBV_WC_REM_INV_REQ_ERR, the rest flushed.
 */
static void
test_responder_limit(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 10, 20 },
			      .max_rd_atomic = { 4, 16 }, .max_dest_rd_atomic = { 16, 1 } };
	const struct e2e_pkt *nak = NULL;
	uint32_t i, reqs = 0;
	int k;

	RTE_SET_USED(state);
	fresh(&c);
	for (i = 0; i < 4; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, i, i * 4096, 4096, i * 4096,
			      IBV_SEND_SIGNALED);
	/* all four requests leave A before B looks at its RX queue */
	for (k = 0; k < 3; k++)
		e2e_poll_side(0);
	e2e_wait_wc(0, 4);
	e2e_settle(4);

	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *p = &E->pkts[i];

		if (p->opcode == SRNIC_OP_RC_READ_REQ) {
			assert_int_equal(p->burst, E->pkts[0].burst);
			reqs++;
		}
		if (p->opcode == SRNIC_OP_RC_ACK) {
			assert_null(nak);
			nak = p;
		}
	}
	assert_int_equal(reqs, 4);
	if (nak == NULL)
		e2e_dump();
	assert_non_null(nak);
	assert_int_equal(srnic_aeth_syndrome(e2e_hdr(nak, SRNIC_HDR_AETH)), NAK_INV_REQ);
	assert_int_equal(nak->psn, 10 + 4); /* the second READ's PSN */
	assert_int_equal(srnic_aeth_msn(e2e_hdr(nak, SRNIC_HDR_AETH)), 1);

	assert_int_equal(E->wc[0][0].wr_id, 0);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.l, bufs.r, 4096);
	assert_int_equal(E->wc[0][1].wr_id, 1);
	assert_int_equal(E->wc[0][1].status, IBV_WC_REM_INV_REQ_ERR);
	for (i = 2; i < 4; i++) {
		assert_int_equal(E->wc[0][i].wr_id, i);
		assert_int_equal(E->wc[0][i].status, IBV_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(E->nwc[0], 4);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
}

/* Within the responder's limit nothing is refused, even in one burst. */
static void
test_responder_limit_ok(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 10, 20 },
			      .max_rd_atomic = { 4, 16 }, .max_dest_rd_atomic = { 16, 4 } };
	uint32_t i;
	int k;

	RTE_SET_USED(state);
	fresh(&c);
	for (i = 0; i < 4; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, i, i * 4096, 4096, i * 4096,
			      IBV_SEND_SIGNALED);
	for (k = 0; k < 3; k++)
		e2e_poll_side(0);
	e2e_wait_wc(0, 4);
	e2e_settle(4);
	for (i = 0; i < 4; i++)
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.l, bufs.r, 4 * 4096);
}

/*
 * CQ overflow: a CQ asked for 4 entries (it may hold more: verbs gives at
 * least cqe), 16 signaled WRITEs and nobody polls. The entries that fit
 * come out in order, then srnic_poll_cq() returns -EOVERFLOW, and the QP
 * is in ERR.
 */
/* A receive-only QP (max_send_wr 0, as servers create and rxe and mlx5
 * take) facing a send-only one (max_recv_wr 0): both created, both report
 * 0, a post to the empty queue is ENOMEM, and SENDs, WRITEs and READs
 * from A still land on B, byte for byte. */
static void
test_zero_wr_queues(void **state)
{
	struct e2e_conf c = { .no_send_wr = { false, true }, .no_recv_wr = { true, false } };
	struct srnic_qp_init_attr init;
	struct ibv_qp_attr qa;
	struct ibv_send_wr swr, *bad_s;
	struct ibv_recv_wr rwr, *bad_r;
	struct ibv_sge sge;

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	e2e_bufs_new(&bufs, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 5, 6);
	assert_int_equal(srnic_query_qp(E->qp[1], &qa, IBV_QP_CAP, &init), 0);
	assert_int_equal(qa.cap.max_send_wr, 0);
	assert_int_equal(init.max_send_wr, 0);
	assert_int_equal(qa.cap.max_recv_wr, 1024);
	assert_int_equal(srnic_query_qp(E->qp[0], &qa, IBV_QP_CAP, &init), 0);
	assert_int_equal(qa.cap.max_recv_wr, 0);
	assert_int_equal(qa.cap.max_send_wr, 1024);
	/* the empty queues take nothing */
	memset(&sge, 0, sizeof(sge));
	sge.addr = (uintptr_t)bufs.v;
	sge.length = 64;
	sge.lkey = srnic_mr_lkey(bufs.vmr);
	memset(&swr, 0, sizeof(swr));
	swr.opcode = IBV_WR_SEND;
	swr.sg_list = &sge;
	swr.num_sge = 1;
	assert_int_equal(srnic_post_send(E->qp[1], &swr, &bad_s), ENOMEM);
	assert_ptr_equal(bad_s, &swr);
	memset(&rwr, 0, sizeof(rwr));
	sge.addr = (uintptr_t)bufs.l;
	sge.lkey = srnic_mr_lkey(bufs.lmr);
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	assert_int_equal(srnic_post_recv(E->qp[0], &rwr, &bad_r), ENOMEM);
	assert_ptr_equal(bad_r, &rwr);
	/* A -> B: a SEND into B's RQ, a WRITE, a READ back */
	e2e_bufs_recv(&bufs, E->qp[1], 0x100, 0, 4096);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 1, 0, 4096, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 4096, 8192, 4096, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 3, 32768, 8192, 16384,
		      IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 3)->status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_int_equal(e2e_wait_wc(1, 1)->status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].wr_id, 0x100);
	assert_int_equal(E->wc[1][0].byte_len, 4096);
	assert_memory_equal(bufs.v, bufs.l, 4096);
	assert_memory_equal(bufs.r + 4096, bufs.l + 4096, 8192);
	assert_memory_equal(bufs.l + 32768, bufs.r + 16384, 8192);
}

static void
test_cq_overflow(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 10, 20 }, .cqe = 4 };
	struct ibv_wc wc[32];
	uint64_t dl;
	int n, got = 0, i;

	RTE_SET_USED(state);
	fresh(&c);
	E->no_drain = true;
	for (i = 0; i < 16; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)bufs.l + i * 64, .length = 64,
				       .lkey = srnic_mr_lkey(bufs.lmr) };

		e2e_post_op(0, IBV_WR_RDMA_WRITE, i, &sge, 1, (uintptr_t)bufs.r + i * 64,
			    srnic_mr_rkey(bufs.rmr), IBV_SEND_SIGNALED);
	}
	dl = e2e_deadline();
	while (srnic_qp_state(E->qp[0]) != IBV_QPS_ERR) {
		if (e2e_deadline_passed(dl))
			fail_msg("QP never went to ERR on CQ overflow");
		e2e_poll();
	}
	e2e_settle(8);
	assert_true(srnic_dev_stat(E->p.dev[0], "cq_overflow") > 0);
	/* what fit: successes in order, at least the 4 asked for */
	for (;;) {
		n = srnic_poll_cq(E->cq[0], 1, wc);
		if (n <= 0)
			break;
		assert_int_equal(wc[0].wr_id, got);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		got++;
	}
	assert_int_equal(n, -EOVERFLOW);
	assert_true(got >= 4 && got < 16);
	/* and it stays overflowed */
	assert_int_equal(srnic_poll_cq(E->cq[0], 32, wc), -EOVERFLOW);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	E->no_drain = false;
}

/* max_mr is what registers: that many MRs live on the device (the
 * fixture's own among them), the next refused; one back after a dereg.
 * It said SRNIC_MAX_MR, one more than the key space holds (index 0 is
 * never a key). */
static void
test_mr_limit(void **state)
{
	static struct srnic_mr *mr[SRNIC_MAX_MR];
	struct ibv_device_attr da;
	uint32_t live, n = 0, i;
	uint8_t *buf = rte_zmalloc("mr_limit", 64, 64);

	RTE_SET_USED(state);
	assert_non_null(buf);
	assert_int_equal(srnic_dev_query(E->p.dev[0], &da), 0);
	live = atomic_load(&E->p.dev[0]->nb_mr);
	while (n < SRNIC_MAX_MR) {
		mr[n] = srnic_reg_mr(E->p.pd[0], buf, 64, IBV_ACCESS_LOCAL_WRITE);
		if (mr[n] == NULL)
			break;
		n++;
	}
	assert_int_equal(live + n, (uint32_t)da.max_mr);
	assert_int_equal(rte_errno, ENOSPC);
	assert_int_equal(srnic_dereg_mr(mr[0]), 0);
	mr[0] = srnic_reg_mr(E->p.pd[0], buf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr[0]);
	for (i = 0; i < n; i++)
		assert_int_equal(srnic_dereg_mr(mr[i]), 0);
	rte_free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_requester_limit, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_requester_above_ours, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_responder_limit, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_responder_limit_ok, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_cq_overflow, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_zero_wr_queues, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_mr_limit, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_limits", tests, e2e_group_setup,
					   e2e_group_teardown);
}
