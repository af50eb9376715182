/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Remote errors end to end, each on a fresh QP pair:
 * bad R_Key, missing MR permission, one byte out of bounds -> NAK remote
 * access error (AETH 0x62) and IBV_WC_REM_ACCESS_ERR; misaligned atomic
 * and SEND longer than the RECV -> NAK invalid request (0x61) and
 * IBV_WC_REM_INV_REQ_ERR. The requester's QP goes to ERR and every WR
 * posted after the failing one is flushed (IBV_WC_WR_FLUSH_ERR).
 */
#include <string.h>

#include "e2e_fixture.h"

#define NAK_INV_REQ 0x61
#define NAK_REM_ACCESS 0x62
#define PSN_A 3000

enum { W_WRITE, W_READ, W_FADD, W_CAS, W_SEND };

static const enum ibv_wr_opcode wr_ops[] = {
	[W_WRITE] = IBV_WR_RDMA_WRITE, [W_READ] = IBV_WR_RDMA_READ,
	[W_FADD] = IBV_WR_ATOMIC_FETCH_AND_ADD, [W_CAS] = IBV_WR_ATOMIC_CMP_AND_SWP,
	[W_SEND] = IBV_WR_SEND,
};

struct case_buf {
	uint8_t *local, *remote;
	struct srnic_mr *lmr, *rmr;
};

static void
bufs(struct case_buf *b, size_t rlen, int raccess)
{
	b->local = e2e_buf(0, 65536, IBV_ACCESS_LOCAL_WRITE, &b->lmr);
	b->remote = e2e_buf(1, rlen, raccess, &b->rmr);
	srnic_test_fill(b->local, 65536, 5);
}

static void
post(int w, uint64_t wr_id, struct case_buf *b, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)b->local, .length = len,
			       .lkey = srnic_mr_lkey(b->lmr) };

	if (w == W_FADD || w == W_CAS)
		assert_int_equal(srnic_test_post_atomic(E->qp[0], wr_ops[w], wr_id, &sge, raddr,
							rkey, 1, 0, IBV_SEND_SIGNALED), 0);
	else
		assert_int_equal(srnic_test_post_send(E->qp[0], wr_ops[w], wr_id, &sge, 1, raddr,
						      rkey, IBV_SEND_SIGNALED), 0);
}

/*
 * The first WR posted (wr_id 1, from PSN PSN_A) must fail with a NAK at
 * nak_psn of syndrome nak and status st at the requester; WR 2 was posted right
 * behind it, WR 3 is posted once the QP is in ERR: both flush.
 */
static void
expect_nak(int w, struct case_buf *b, uint8_t nak, enum ibv_wc_status st, uint32_t nak_psn)
{
	uint32_t i, naks = 0;
	const struct ibv_wc *wc;

	wc = e2e_wait_wc(0, 1);
	if (wc->status != st)
		e2e_dump();
	assert_int_equal(wc->wr_id, 1);
	assert_int_equal(wc->status, st);
	assert_int_equal(wc->qp_num, srnic_qp_num(E->qp[0]));
	E2E_RUN_UNTIL(srnic_qp_state(E->qp[0]) == IBV_QPS_ERR);
	/* the WR posted behind it is flushed */
	wc = e2e_wait_wc(0, 2);
	assert_int_equal(wc->wr_id, 2);
	assert_int_equal(wc->status, IBV_WC_WR_FLUSH_ERR);
	/* and so is one posted now */
	post(W_WRITE, 3, b, 16, (uintptr_t)b->remote, srnic_mr_rkey(b->rmr));
	wc = e2e_wait_wc(0, 3);
	assert_int_equal(wc->wr_id, 3);
	assert_int_equal(wc->status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc->opcode, IBV_WC_RDMA_WRITE);
	e2e_settle(8);
	assert_int_equal(E->nwc[0], 3);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);

	/* on the wire: exactly one NAK, at the failing request's PSN */
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side != 1)
			continue;
		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
		assert_int_equal(k->opcode, SRNIC_OP_RC_ACK);
		assert_int_equal(srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)), nak);
		assert_int_equal(k->psn, nak_psn);
		assert_int_equal(srnic_aeth_msn(e2e_hdr(k, SRNIC_HDR_AETH)), 0);
		naks++;
	}
	assert_int_equal(naks, 1);
	/* the responder moved to ERR too (class B/C error, as rxe) */
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_ERR);
	RTE_SET_USED(w);
}

static void
run_case(int w, size_t rlen, int raccess, uint32_t len, int64_t roff, int key_delta,
	 uint8_t nak, enum ibv_wc_status st)
{
	struct e2e_conf c = { .psn = { PSN_A, 9000 } };
	struct case_buf b;

	e2e_qps_renew(&c);
	bufs(&b, rlen, raccess);
	memset(b.remote, 0x5A, rlen);
	post(w, 1, &b, len, (uintptr_t)b.remote + roff, srnic_mr_rkey(b.rmr) + key_delta);
	post(W_WRITE, 2, &b, 16, (uintptr_t)b.remote, srnic_mr_rkey(b.rmr));
	expect_nak(w, &b, nak, st, PSN_A);
	if (w == W_WRITE || w == W_FADD || w == W_CAS) {
		size_t i;

		for (i = 0; i < rlen; i++)
			if (b.remote[i] != 0x5A)
				fail_msg("remote byte %zu changed by a refused request", i);
	}
}

static void
test_bad_rkey_write(void **state)
{
	RTE_SET_USED(state);
	/* another index */
	run_case(W_WRITE, 4096, E2E_RALL, 100, 0, 0x100, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
	/* same index, stale generation byte */
	run_case(W_WRITE, 4096, E2E_RALL, 100, 0, 1, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
	/* an index beyond the table */
	run_case(W_WRITE, 4096, E2E_RALL, 100, 0, 0x7F000000, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_bad_rkey_read(void **state)
{
	RTE_SET_USED(state);
	run_case(W_READ, 4096, E2E_RALL, 100, 0, 0x100, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_bad_rkey_atomic(void **state)
{
	RTE_SET_USED(state);
	run_case(W_FADD, 64, E2E_RALL, 8, 0, 0x100, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_no_remote_write(void **state)
{
	RTE_SET_USED(state);
	run_case(W_WRITE, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 100, 0, 0,
		 NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_no_remote_read(void **state)
{
	RTE_SET_USED(state);
	run_case(W_READ, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 100, 0, 0,
		 NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_no_remote_atomic(void **state)
{
	RTE_SET_USED(state);
	run_case(W_CAS, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ, 8, 0, 0, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_oob_write(void **state)
{
	RTE_SET_USED(state);
	/* one byte past the end, single packet */
	run_case(W_WRITE, 4096, E2E_RALL, 100, 4096 - 99, 0, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
	/* one byte past the end, multi-packet (checked on the FIRST) */
	run_case(W_WRITE, 16384, E2E_RALL, 16385, 0, 0, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
	/* one byte before the start */
	run_case(W_WRITE, 4096, E2E_RALL, 100, -1, 0, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_oob_read(void **state)
{
	RTE_SET_USED(state);
	run_case(W_READ, 4096, E2E_RALL, 4097, 0, 0, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
	run_case(W_READ, 4096, E2E_RALL, 1, 4096, 0, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_oob_atomic(void **state)
{
	RTE_SET_USED(state);
	run_case(W_FADD, 64, E2E_RALL, 8, 64, 0, NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR);
}

static void
test_misaligned_atomic(void **state)
{
	RTE_SET_USED(state);
	run_case(W_FADD, 64, E2E_RALL, 8, 4, 0, NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
	run_case(W_CAS, 64, E2E_RALL, 8, 1, 0, NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR);
}

static void
test_send_too_long(void **state)
{
	static const uint32_t lens[][2] = {
		{ 101, 100 },     /* SEND ONLY one byte too long */
		{ 9000, 8192 },   /* multi-packet: fails at the LAST */
		{ 100, 0 },       /* RECV with no buffer at all */
	};
	unsigned int t;

	RTE_SET_USED(state);
	for (t = 0; t < RTE_DIM(lens); t++) {
		struct e2e_conf c = { .psn = { PSN_A, 9000 } };
		struct srnic_mr *vmr;
		struct case_buf b;
		uint8_t *recv;
		struct ibv_sge rsge;
		const struct ibv_wc *wc;

		e2e_qps_renew(&c);
		bufs(&b, 64, E2E_RALL);
		recv = e2e_buf(1, 16384, IBV_ACCESS_LOCAL_WRITE, &vmr);
		rsge = (struct ibv_sge){ .addr = (uintptr_t)recv, .length = lens[t][1],
					 .lkey = srnic_mr_lkey(vmr) };
		e2e_post_rx(1, 77, &rsge, lens[t][1] > 0 ? 1 : 0);
		e2e_post_rx(1, 78, &rsge, 1);
		post(W_SEND, 1, &b, lens[t][0], 0, 0);
		post(W_WRITE, 2, &b, 16, (uintptr_t)b.remote, srnic_mr_rkey(b.rmr));
		expect_nak(W_SEND, &b, NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR,
			   PSN_A + (lens[t][0] - 1) / E->pmtu);
		/* the responder's RECV fails with a local length error, the
		 * next one is flushed */
		wc = e2e_wait_wc(1, 2);
		if (E->wc[1][0].status != IBV_WC_LOC_LEN_ERR)
			e2e_dump();
		assert_int_equal(E->wc[1][0].wr_id, 77);
		assert_int_equal(E->wc[1][0].status, IBV_WC_LOC_LEN_ERR);
		assert_int_equal(E->wc[1][0].opcode, IBV_WC_RECV);
		assert_int_equal(wc->wr_id, 78);
		assert_int_equal(wc->status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(E->nwc[1], 2);
	}
}

/* A QP without remote write access refuses a valid-key WRITE: NAK invalid request. */
static void
test_qp_access(void **state)
{
	struct e2e_conf c = { .psn = { PSN_A, 9000 },
			      .access = { 0, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ } };
	struct case_buf b;

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	bufs(&b, 4096, E2E_RALL);
	post(W_WRITE, 1, &b, 100, (uintptr_t)b.remote, srnic_mr_rkey(b.rmr));
	post(W_WRITE, 2, &b, 16, (uintptr_t)b.remote, srnic_mr_rkey(b.rmr));
	expect_nak(W_WRITE, &b, NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR, PSN_A);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_rkey_write, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_bad_rkey_read, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_bad_rkey_atomic, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_no_remote_write, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_no_remote_read, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_no_remote_atomic, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_oob_write, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_oob_read, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_oob_atomic, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_misaligned_atomic, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_send_too_long, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_qp_access, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_errors", tests, e2e_group_setup,
					   e2e_group_teardown);
}
