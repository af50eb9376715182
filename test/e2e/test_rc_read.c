/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RDMA READ end to end, packet by packet: the
 * 8 KiB walk at PMTU 4096 from PSN 2000, READs of 0, 1, one PMTU and many
 * PMTUs, and signaled vs unsignaled work requests.
 */
#include <string.h>

#include "e2e_fixture.h"

#define SYN_ACK 0x1F

/*
 * Post one READ of len bytes at PSN psn (the QPs are fresh unless
 * !renew) and check every frame and the CQE. msn is the responder's MSN
 * the response must carry.
 */
static void
read_walk(enum ibv_mtu mtu, uint32_t len, uint32_t psn, uint32_t msn, bool renew)
{
	struct e2e_conf c = { .mtu = mtu, .psn = { psn, 7000 } };
	uint32_t pmtu = 128u << mtu, n = len == 0 ? 1 : (len + pmtu - 1) / pmtu;
	uint32_t ia[8], ib[4200], na, nb, i;
	struct srnic_mr *lmr, *rmr;
	uint8_t *local, *remote;
	const struct ibv_wc *wc;
	struct ibv_sge sge;

	if (renew)
		e2e_qps_renew(&c);
	e2e_reset();
	local = e2e_buf(0, len + 1, IBV_ACCESS_LOCAL_WRITE, &lmr);
	remote = e2e_buf(1, len + 1, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, &rmr);
	srnic_test_fill(remote, len + 1, len ^ psn);
	memset(local, 0xEE, len + 1);
	sge.addr = (uintptr_t)local;
	sge.length = len;
	sge.lkey = srnic_mr_lkey(lmr);
	e2e_post_op(0, IBV_WR_RDMA_READ, 0x2000 + len, &sge, 1, (uintptr_t)remote,
		    srnic_mr_rkey(rmr), IBV_SEND_SIGNALED);
	wc = e2e_wait_wc(0, 1);
	e2e_settle(8);

	/* the CQE */
	assert_int_equal(E->nwc[0], 1);
	assert_int_equal(E->nwc[1], 0);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc->byte_len, len);
	assert_int_equal(wc->wr_id, 0x2000 + len);
	assert_int_equal(wc->qp_num, srnic_qp_num(E->qp[0]));
	assert_memory_equal(local, remote, len);
	assert_int_equal(local[len], 0xEE); /* nothing written past the SGE */

	/* A -> B: exactly one READ_REQUEST */
	na = e2e_pkts_from(0, ia, RTE_DIM(ia));
	assert_int_equal(na, 1);
	{
		const struct e2e_pkt *k = &E->pkts[ia[0]];
		const uint8_t *reth;

		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
		assert_int_equal(k->opcode, SRNIC_OP_RC_READ_REQ);
		assert_int_equal(k->psn, psn);
		assert_int_equal(k->dqpn, srnic_qp_num(E->qp[1]));
		assert_true(srnic_bth_ackreq(e2e_bth(k)));
		assert_int_equal(k->pay_len, 0);
		reth = e2e_hdr(k, SRNIC_HDR_RETH);
		assert_int_equal(srnic_reth_va(reth), (uintptr_t)remote);
		assert_int_equal(srnic_reth_rkey(reth), srnic_mr_rkey(rmr));
		assert_int_equal(srnic_reth_len(reth), len);
	}

	/* B -> A: n responses, consecutive PSNs, AETH on FIRST/LAST/ONLY only, no ACK */
	nb = e2e_pkts_from(1, ib, RTE_DIM(ib));
	assert_int_equal(nb, n);
	for (i = 0; i < n; i++) {
		const struct e2e_pkt *k = &E->pkts[ib[i]];
		uint8_t op = n == 1 ? SRNIC_OP_RC_READ_RESP_ONLY :
			     i == 0 ? SRNIC_OP_RC_READ_RESP_FIRST :
			     i == n - 1 ? SRNIC_OP_RC_READ_RESP_LAST : SRNIC_OP_RC_READ_RESP_MIDDLE;
		uint32_t want = RTE_MIN(pmtu, len - i * pmtu);

		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
		assert_int_equal(k->opcode, op);
		assert_int_equal(k->psn, (psn + i) & SRNIC_PSN_MASK);
		assert_int_equal(k->dqpn, srnic_qp_num(E->qp[0]));
		assert_false(srnic_bth_ackreq(e2e_bth(k)));
		assert_int_equal(k->pay_len, want);
		assert_int_equal(k->pad, (4 - want % 4) % 4);
		assert_memory_equal(e2e_payload(k), remote + i * pmtu, want);
		if (op == SRNIC_OP_RC_READ_RESP_MIDDLE) {
			assert_false(k->mask & SRNIC_OPM_AETH);
		} else {
			const uint8_t *aeth = e2e_hdr(k, SRNIC_HDR_AETH);

			assert_true(k->mask & SRNIC_OPM_AETH);
			assert_int_equal(srnic_aeth_syndrome(aeth), SYN_ACK);
			assert_int_equal(srnic_aeth_msn(aeth), msn);
		}
	}
}

/* The next request of A takes the PSN after the READ's reserved ones. */
static void
check_next_psn(uint32_t want_psn, uint32_t want_msn)
{
	uint32_t len = 8192;

	read_walk(E->conf.mtu, len, want_psn, want_msn, false);
}

static int
stats_zero_setup(void **state)
{
	return e2e_setup(state);
}

static void
test_read_walk_8k(void **state)
{
	RTE_SET_USED(state);
	/* resp_ack_sent is a device-lifetime counter: check the delta */
	{
		int64_t acks = srnic_dev_stat(E->p.dev[1], "resp_ack_sent");

		read_walk(IBV_MTU_4096, 8192, 2000, 1, true);
		assert_int_equal(srnic_dev_stat(E->p.dev[1], "resp_ack_sent"), acks);
		check_next_psn(2002, 2);
		assert_int_equal(srnic_dev_stat(E->p.dev[1], "resp_ack_sent"), acks);
	}
}

static void
test_read_sizes(void **state)
{
	static const struct {
		enum ibv_mtu mtu;
		uint32_t len;
	} cases[] = {
		{ IBV_MTU_4096, 0 },
		{ IBV_MTU_4096, 1 },
		{ IBV_MTU_4096, 4096 },
		{ IBV_MTU_4096, 4095 },
		{ IBV_MTU_4096, 4097 },
		{ IBV_MTU_4096, 5 * 4096 + 100 },
		{ IBV_MTU_1024, 8192 },
		{ IBV_MTU_256, 256 * 7 + 3 },
	};
	unsigned int i;

	RTE_SET_USED(state);
	for (i = 0; i < RTE_DIM(cases); i++) {
		uint32_t pmtu = 128u << cases[i].mtu;
		uint32_t n = cases[i].len == 0 ? 1 : (cases[i].len + pmtu - 1) / pmtu;

		print_message("READ %u bytes at PMTU %u\n", cases[i].len, pmtu);
		read_walk(cases[i].mtu, cases[i].len, 2000, 1, true);
		/* and the next READ starts right after the reserved PSNs */
		check_next_psn(2000 + n, 2);
	}
}

/* PSNs wrap at 2^24: a READ reserving PSNs across the wrap. */
static void
test_read_psn_wrap(void **state)
{
	RTE_SET_USED(state);
	read_walk(IBV_MTU_1024, 4 * 1024, 0xFFFFFE, 1, true);
	check_next_psn(2, 2);
}

/* Signaled vs unsignaled: only signaled WRs yield a CQE; every one's data lands. */
static void
test_signaled(void **state)
{
	struct srnic_mr *lmr, *rmr;
	uint8_t *local, *remote;
	struct ibv_sge sge;
	const struct ibv_wc *wc;
	int k;

	RTE_SET_USED(state);
	local = e2e_buf(0, 4 * 4096, IBV_ACCESS_LOCAL_WRITE, &lmr);
	remote = e2e_buf(1, 4 * 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_WRITE, &rmr);
	srnic_test_fill(remote, 2 * 4096, 11);
	srnic_test_fill(local + 2 * 4096, 2 * 4096, 12);

	/* READs: unsignaled then signaled */
	for (k = 0; k < 2; k++) {
		sge.addr = (uintptr_t)local + k * 4096;
		sge.length = 4096;
		sge.lkey = srnic_mr_lkey(lmr);
		e2e_post_op(0, IBV_WR_RDMA_READ, 100 + k, &sge, 1, (uintptr_t)remote + k * 4096,
			    srnic_mr_rkey(rmr), k == 1 ? IBV_SEND_SIGNALED : 0);
	}
	wc = e2e_wait_wc(0, 1);
	e2e_settle(8);
	assert_int_equal(E->nwc[0], 1);
	assert_int_equal(wc->wr_id, 101);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(local, remote, 2 * 4096);

	/* WRITEs: signaled, unsignaled, unsignaled, signaled */
	e2e_reset();
	for (k = 0; k < 4; k++) {
		sge.addr = (uintptr_t)local + 2 * 4096 + k * 2048;
		sge.length = 2048;
		sge.lkey = srnic_mr_lkey(lmr);
		e2e_post_op(0, IBV_WR_RDMA_WRITE, 200 + k, &sge, 1,
			    (uintptr_t)remote + 2 * 4096 + k * 2048, srnic_mr_rkey(rmr),
			    (k == 0 || k == 3) ? IBV_SEND_SIGNALED : 0);
	}
	e2e_wait_wc(0, 2);
	e2e_settle(8);
	assert_int_equal(E->nwc[0], 2);
	assert_int_equal(E->wc[0][0].wr_id, 200);
	assert_int_equal(E->wc[0][1].wr_id, 203);
	for (k = 0; k < 2; k++) {
		assert_int_equal(E->wc[0][k].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][k].opcode, IBV_WC_RDMA_WRITE);
	}
	assert_int_equal(E->nwc[1], 0);
	assert_memory_equal(local + 2 * 4096, remote + 2 * 4096, 2 * 4096);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_walk_8k, stats_zero_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_read_sizes, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_read_psn_wrap, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_signaled, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_read", tests, e2e_group_setup,
					   e2e_group_teardown);
}
