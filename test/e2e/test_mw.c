/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows end to end (IBTA 10.6.7, behaviour as rxe's): B binds a
 * window over part of its MR (type 2 by a BIND_MW WR on its QP, type 1 as
 * ibv_bind_mw() posts it), A reads and writes through the window's rkey
 * inside the bound range (bytes checked) and one byte outside it (NAK
 * Remote Access Error 0x62, IBV_WC_REM_ACCESS_ERR, nothing written);
 * invalidation by LOCAL_INV and by A's SEND with Invalidate (opcode 0x17
 * with the IETH on the wire, B's receive CQE with IBV_WC_WITH_INV and
 * invalidated_rkey), after which the key is refused; the binds and
 * invalidations IBTA refuses fail with the CQE rxe gives.
 */
#include <inttypes.h>
#include <string.h>

#include <rte_malloc.h>

#include "e2e_fixture.h"
#include "srnic_param.h"

#define NAK_INV_REQ 0x61
#define NAK_REM_ACCESS 0x62
#define NAK_SEQ_ERR 0x60
/* local ACK timeout 10: 4.096 us * 2^10 = 4.2 ms, for the resend by timer */
#define REWIND_TMO 10
#define RLEN 8192
#define WOFF 1024               /* the window: [r + WOFF, r + WOFF + WLEN) */
#define WLEN 4096

struct mw_case {
	struct e2e_bufs b;
	struct srnic_mw *mw;
	uint32_t rkey;              /* the window's key once bound */
};

/* Fresh QPs, buffers (B's r with MW_BIND), the pattern in l and r. */
static void
mw_case_new(struct mw_case *t, int mr_access)
{
	struct e2e_conf c = { .psn = { 100, 900 } };

	memset(t, 0, sizeof(*t));
	e2e_qps_renew(&c);
	e2e_bufs_new(&t->b, RLEN, IBV_ACCESS_LOCAL_WRITE);
	/* the window's MR: r again, over a second registration with mr_access */
	t->b.rmr = srnic_reg_mr(E->p.pd[1], t->b.r, RLEN, mr_access);
	assert_non_null(t->b.rmr);
	e2e_bufs_fill(&t->b, 11, 22);
}

static void
mw_case_end(struct mw_case *t)
{
	if (t->mw != NULL)
		assert_int_equal(srnic_dealloc_mw(t->mw), 0);
	assert_int_equal(srnic_dereg_mr(t->b.rmr), 0);
}

/* Post a BIND_MW of t->mw on side's QP: [r + off, + len) of rmr, acc. */
static void
post_bind(struct mw_case *t, int side, uint64_t wr_id, uint32_t new_rkey, uint64_t off,
	  uint64_t len, unsigned int acc)
{
	struct ibv_mr ibmr = { .lkey = srnic_mr_lkey(t->b.rmr) };
	struct ibv_send_wr wr = { .wr_id = wr_id, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.bind_mw.mw = srnic_mw_ibv(t->mw);
	wr.bind_mw.rkey = new_rkey;
	wr.bind_mw.bind_info.mr = &ibmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)t->b.r + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = acc;
	assert_int_equal(srnic_post_send(E->qp[side], &wr, &bad), 0);
}

/* ibv_inc_rkey(): a new key byte, the index kept. */
static uint32_t
inc_rkey(uint32_t k)
{
	return (k & ~0xFFu) | ((k + 1) & 0xFF);
}

/* B binds a window of type over [r + WOFF, + WLEN), as wr_id 50; its CQE. */
static void
bind_ok(struct mw_case *t, enum ibv_mw_type type, unsigned int acc)
{
	const struct ibv_wc *wc;

	t->mw = srnic_alloc_mw(E->p.pd[1], type);
	assert_non_null(t->mw);
	assert_int_equal(srnic_mw_ibv(t->mw)->type, type);
	t->rkey = inc_rkey(srnic_mw_rkey(t->mw));
	post_bind(t, 1, 50, t->rkey, WOFF, WLEN, acc);
	wc = e2e_wait_wc(1, 1);
	assert_int_equal(wc->wr_id, 50);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_BIND_MW);
	assert_int_equal(srnic_mw_rkey(t->mw), t->rkey);
	assert_true(srnic_dev_stat(E->p.dev[1], "mw_bind") >= 1);
}

static void
post_rdma(struct mw_case *t, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t len, uint64_t roff,
	  uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)t->b.l + roff, .length = len,
			       .lkey = srnic_mr_lkey(t->b.lmr) };

	e2e_post_op(0, op, wr_id, &sge, 1, (uintptr_t)t->b.r + roff, rkey, IBV_SEND_SIGNALED);
}

/* A WRITE and a READ through a type 2 window inside its range move the
 * bytes; a WRITE one byte past it is NAKed and writes nothing. */
static void
test_type2_inside_outside(void **state)
{
	struct mw_case t;
	uint8_t want[RLEN];

	RTE_SET_USED(state);
	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	bind_ok(&t, IBV_MW_TYPE_2, IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	e2e_reset();
	/* WRITE l[WOFF, +2048) to r[WOFF, ...), READ r[WOFF + 2048, +2048) into l */
	post_rdma(&t, IBV_WR_RDMA_WRITE, 1, 2048, WOFF, t.rkey);
	post_rdma(&t, IBV_WR_RDMA_READ, 2, 2048, WOFF + 2048, t.rkey);
	e2e_expect_a(1, 1, IBV_WC_SUCCESS, -1);
	e2e_expect_a(2, 2, IBV_WC_SUCCESS, -1);
	assert_memory_equal(t.b.r + WOFF, t.b.l + WOFF, 2048);
	srnic_test_fill(want, RLEN, 22);
	assert_memory_equal(t.b.l + WOFF + 2048, want + WOFF + 2048, 2048);
	/* the last byte of the window and one more */
	memcpy(want, t.b.r, RLEN);
	post_rdma(&t, IBV_WR_RDMA_WRITE, 3, 2, WOFF + WLEN - 1, t.rkey);
	e2e_expect_a(3, 3, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	assert_memory_equal(t.b.r, want, RLEN);
	assert_true(srnic_dev_stat(E->p.dev[1], "resp_mw_rkey_err") >= 1);
	mw_case_end(&t);
}

/* A window grants only its own access: READ through a write-only one and
 * an access before its start are refused. */
static void
test_type2_access(void **state)
{
	struct mw_case t;

	RTE_SET_USED(state);
	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	bind_ok(&t, IBV_MW_TYPE_2, IBV_ACCESS_REMOTE_WRITE);
	e2e_reset();
	post_rdma(&t, IBV_WR_RDMA_READ, 1, 64, WOFF, t.rkey);
	e2e_expect_a(1, 1, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	mw_case_end(&t);

	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	bind_ok(&t, IBV_MW_TYPE_2, IBV_ACCESS_REMOTE_WRITE);
	e2e_reset();
	post_rdma(&t, IBV_WR_RDMA_WRITE, 1, 64, WOFF - 1, t.rkey);
	e2e_expect_a(1, 1, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	mw_case_end(&t);
}

/* Type 1, bound and unbound (length 0) as ibv_bind_mw() does: READ
 * through it works, then is refused. */
static void
test_type1_bind_unbind(void **state)
{
	struct mw_case t;
	const struct ibv_wc *wc;
	uint8_t want[RLEN];

	RTE_SET_USED(state);
	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	bind_ok(&t, IBV_MW_TYPE_1, IBV_ACCESS_REMOTE_READ);
	e2e_reset();
	post_rdma(&t, IBV_WR_RDMA_READ, 1, 512, WOFF, t.rkey);
	e2e_expect_a(1, 1, IBV_WC_SUCCESS, -1);
	srnic_test_fill(want, RLEN, 22);
	assert_memory_equal(t.b.l + WOFF, want + WOFF, 512);
	/* unbind: a new key byte, length 0 */
	t.rkey = inc_rkey(t.rkey);
	post_bind(&t, 1, 51, t.rkey, 0, 0, 0);
	wc = e2e_wait_wc(1, 1); /* B's first since the reset */
	assert_int_equal(wc->wr_id, 51);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_BIND_MW);
	post_rdma(&t, IBV_WR_RDMA_READ, 2, 512, WOFF, t.rkey);
	e2e_expect_a(2, 2, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	mw_case_end(&t);
}

/* LOCAL_INV: the window goes FREE, a WRITE with its key is refused. */
static void
test_local_inv(void **state)
{
	struct ibv_send_wr wr = { .wr_id = 60, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	const struct ibv_wc *wc;
	struct mw_case t;

	RTE_SET_USED(state);
	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	bind_ok(&t, IBV_MW_TYPE_2, IBV_ACCESS_REMOTE_WRITE);
	/* bound: the MR stays registered */
	assert_int_equal(srnic_dereg_mr(t.b.rmr), -EINVAL);
	assert_int_equal(srnic_dereg_mr_wait(t.b.rmr, 0), -EINVAL);
	wr.invalidate_rkey = t.rkey;
	assert_int_equal(srnic_post_send(E->qp[1], &wr, &bad), 0);
	wc = e2e_wait_wc(1, 2);
	assert_int_equal(wc->wr_id, 60);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(srnic_dev_stat(E->p.dev[1], "mw_local_inv"), 1);
	e2e_reset();
	post_rdma(&t, IBV_WR_RDMA_WRITE, 1, 64, WOFF, t.rkey);
	e2e_expect_a(1, 1, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	mw_case_end(&t);
}

/* B posts a 256-byte RECV (wr_id 70), A a 100-byte SEND with Invalidate
 * of key (wr_id 1). */
static void
send_inv(struct mw_case *t, uint32_t key)
{
	struct ibv_sge rsge = { .addr = (uintptr_t)t->b.v, .length = 256,
				.lkey = srnic_mr_lkey(t->b.vmr) };
	struct ibv_sge sge = { .addr = (uintptr_t)t->b.l, .length = 100,
			       .lkey = srnic_mr_lkey(t->b.lmr) };
	struct ibv_send_wr wr = { .wr_id = 1, .opcode = IBV_WR_SEND_WITH_INV, .num_sge = 1,
				  .sg_list = &sge, .send_flags = IBV_SEND_SIGNALED }, *bad;

	e2e_post_rx(1, 70, &rsge, 1);
	wr.invalidate_rkey = key;
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
}

/* A's SEND with Invalidate: 0x17 with the IETH on the wire, B's receive
 * CQE with IBV_WC_WITH_INV and the key; then the key is refused. */
static void
test_remote_inv(void **state)
{
	const struct ibv_wc *wc;
	struct mw_case t;
	uint32_t i, ieth = 0;

	RTE_SET_USED(state);
	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	bind_ok(&t, IBV_MW_TYPE_2, IBV_ACCESS_REMOTE_WRITE);
	e2e_reset();
	send_inv(&t, t.rkey);
	e2e_expect_a(1, 1, IBV_WC_SUCCESS, -1);
	wc = e2e_wait_wc(1, 1);
	assert_int_equal(wc->wr_id, 70);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RECV);
	assert_int_equal(wc->byte_len, 100);
	assert_true(wc->wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc->invalidated_rkey, t.rkey);
	assert_memory_equal(t.b.v, t.b.l, 100);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side != 0)
			continue;
		assert_int_equal(k->opcode, SRNIC_OP_RC_SEND_ONLY_INV);
		assert_int_equal(srnic_ieth_rkey(e2e_hdr(k, SRNIC_HDR_IETH)), t.rkey);
		ieth++;
	}
	assert_int_equal(ieth, 1);
	assert_int_equal(srnic_dev_stat(E->p.dev[1], "mw_remote_inv"), 1);
	/* a second use of the key: refused */
	post_rdma(&t, IBV_WR_RDMA_WRITE, 2, 64, WOFF, t.rkey);
	e2e_expect_a(2, 2, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	/* invalidated, the window is free to bind again and its MR to go */
	mw_case_end(&t);
}

/* A SEND with Invalidate of a key B cannot invalidate (an MR's: user
 * verbs' MRs are not invalidated, as rxe): NAK Invalid Request, both
 * sides' CQEs IBV_WC_REM_INV_REQ_ERR, the MR still works for B. */
static void
test_remote_inv_refused(void **state)
{
	const struct ibv_wc *wc;
	struct mw_case t;

	RTE_SET_USED(state);
	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	e2e_reset();
	send_inv(&t, srnic_mr_rkey(t.b.rmr));
	e2e_expect_a(1, 1, IBV_WC_REM_INV_REQ_ERR, NAK_INV_REQ);
	wc = e2e_wait_wc(1, 1);
	assert_int_equal(wc->wr_id, 70);
	assert_int_equal(wc->status, IBV_WC_REM_INV_REQ_ERR);
	E2E_RUN_UNTIL(srnic_qp_state(E->qp[1]) == IBV_QPS_ERR);
	assert_int_equal(srnic_dev_stat(E->p.dev[1], "mw_inv_err"), 1);
	mw_case_end(&t);
}

/* What IBTA refuses: a bind over an MR without IBV_ACCESS_MW_BIND (C10-73)
 * fails IBV_WC_MW_BIND_ERR; a LOCAL_INV of a type 1 window (o10-37.2.26)
 * IBV_WC_LOC_QP_OP_ERR; each moves the QP to ERR. */
static void
test_refused(void **state)
{
	struct ibv_send_wr wr = { .wr_id = 61, .opcode = IBV_WR_LOCAL_INV,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	const struct ibv_wc *wc;
	struct mw_case t;

	RTE_SET_USED(state);
	mw_case_new(&t, E2E_RALL);
	t.mw = srnic_alloc_mw(E->p.pd[1], IBV_MW_TYPE_2);
	assert_non_null(t.mw);
	post_bind(&t, 1, 50, inc_rkey(srnic_mw_rkey(t.mw)), WOFF, WLEN, IBV_ACCESS_REMOTE_READ);
	wc = e2e_wait_wc(1, 1);
	assert_int_equal(wc->wr_id, 50);
	assert_int_equal(wc->status, IBV_WC_MW_BIND_ERR);
	E2E_RUN_UNTIL(srnic_qp_state(E->qp[1]) == IBV_QPS_ERR);
	mw_case_end(&t);

	mw_case_new(&t, E2E_RALL | IBV_ACCESS_MW_BIND);
	bind_ok(&t, IBV_MW_TYPE_1, IBV_ACCESS_REMOTE_READ);
	wr.invalidate_rkey = t.rkey;
	assert_int_equal(srnic_post_send(E->qp[1], &wr, &bad), 0);
	wc = e2e_wait_wc(1, 2);
	assert_int_equal(wc->wr_id, 61);
	assert_int_equal(wc->status, IBV_WC_LOC_QP_OP_ERR);
	E2E_RUN_UNTIL(srnic_qp_state(E->qp[1]) == IBV_QPS_ERR);
	/* a window is no lkey: freed, the MR is free to go */
	mw_case_end(&t);
}

/* A type 2B window answers only the QP it was bound through, not one made
 * in its place: B's QP destroyed and QPs created until the allocator hands
 * back the same struct, A's WRITE through the window is refused (NAK
 * Remote Access Error), the memory untouched. */
static void
test_type2_qp_reused(void **state)
{
	struct e2e_conf c = { .psn = { 100, 900 } };
	const struct srnic_qp *bound;
	uint8_t want[RLEN];
	struct mw_case t;
	int i;

	RTE_SET_USED(state);
	memset(&t, 0, sizeof(t));
	/* the window's memory outlives the fixture's buffers, which each
	 * e2e_qps_renew() frees */
	t.b.r = rte_zmalloc("mw_r", RLEN, 64);
	assert_non_null(t.b.r);
	srnic_test_fill(t.b.r, RLEN, 22);
	t.b.rmr = srnic_reg_mr(E->p.pd[1], t.b.r, RLEN, E2E_RALL | IBV_ACCESS_MW_BIND);
	assert_non_null(t.b.rmr);
	e2e_reset();
	bind_ok(&t, IBV_MW_TYPE_2, IBV_ACCESS_REMOTE_WRITE);
	bound = E->qp[1];
	for (i = 0; i < 64; i++) {
		e2e_qps_renew(&c);
		if (E->qp[1] == bound)
			break;
	}
	assert_ptr_equal(E->qp[1], bound);
	t.b.l = e2e_buf(0, RLEN, IBV_ACCESS_LOCAL_WRITE, &t.b.lmr);
	srnic_test_fill(t.b.l, RLEN, 11);
	memcpy(want, t.b.r, RLEN);
	e2e_reset();
	post_rdma(&t, IBV_WR_RDMA_WRITE, 1, 64, WOFF, t.rkey);
	e2e_expect_a(1, 1, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	assert_memory_equal(t.b.r, want, RLEN);
	mw_case_end(&t);
	rte_free(t.b.r);
}

/* A's WRITEs that fill the TX path: PMTU 256, FILL_NW WRITEs of
 * FILL_LEN / FILL_NW bytes, more packets (8192) than the net_ring B does not
 * drain (4096) and A's TX buffer (SRNIC_TX_BUF_SIZE) hold. */
#define FILL_LEN (2u << 20)
#define FILL_NW 8
/* Polls of A alone that a blocked QP's turns must spend without reading
 * its SQ again. */
#define FILL_IDLE_POLLS 100

/* Poll A's engine alone until cq yields a WC (into *wc) or the deadline. */
static bool
poll_a_for_wc(struct srnic_cq *cq, struct ibv_wc *wc)
{
	uint64_t dl = e2e_deadline();

	while (!e2e_deadline_passed(dl)) {
		e2e_poll_side(0);
		if (srnic_poll_cq(cq, 1, wc) == 1)
			return true;
	}
	return false;
}

/*
 * A local WQE does not wait for the wire (an RNIC runs it without it):
 * B stops polling, so A's WRITEs on its QP 1 fill B's ring and then A's TX
 * buffer (req_tx_full). A BIND_MW and then a LOCAL_INV posted on A's
 * second QP complete at once (req_tx_full_local 2), the window bound and
 * then free, while QP 1's WRITEs still wait; QP 1's turns meanwhile read
 * no SQ line for the wait (req_tx_full_peek 0: the turn that filled the
 * buffer knew its WRITE needs the wire), not one per turn. A BIND_MW posted on
 * QP 1 behind its WRITEs waits for them (in order). B polls again: every
 * WRITE lands, then that bind completes. Then QP 2's WRITEs fill TX again
 * and a LOCAL_INV on QP 1 completes at once: QP 1's wait for the wire
 * ended with its WRITEs (req.tx_wait cleared). Before, the requester left at a
 * full TX buffer before reading any SQ: the second QP's BIND_MW never
 * completed while B did not drain.
 */
static void
test_local_behind_full_tx(void **state)
{
	struct e2e_conf c = { .psn = { 100, 900 }, .mtu = IBV_MTU_256, .timeout = 31 };
	struct srnic_qp_init_attr qa = { .max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1,
					 .max_recv_sge = 1, .qp_type = IBV_QPT_RC };
	struct ibv_send_wr wr = { .wr_id = 80, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct srnic_test_path path = { .access = E2E_RALL, .mtu = IBV_MTU_256, .sq_psn = 5000,
					.rq_psn = 6000, .max_dest_rd_atomic = 1, .timeout = 31,
					.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	struct srnic_dev *a;
	struct rte_ether_addr mac;
	struct ibv_mr ibmr;
	struct e2e_bufs b;
	struct srnic_mr *wmr;
	struct srnic_mw *mw;
	struct srnic_qp *qp2, *qpb;
	struct srnic_cq *cq2, *cqb;
	struct ibv_wc wc;
	int64_t full0, peek0;
	uint32_t key, i, n = FILL_LEN / FILL_NW, got;
	const struct ibv_wc *w;

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	a = E->p.dev[0];
	e2e_bufs_new(&b, FILL_LEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 11, 22);
	/* the path works and A knows B's MAC */
	e2e_reset();
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 64, 0, IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 1)->status, IBV_WC_SUCCESS);
	/* A's second QP and its peer b on B: each its own CQ */
	cq2 = srnic_create_cq(a, 16, E->eng[0]);
	assert_non_null(cq2);
	qa.send_cq = qa.recv_cq = cq2;
	qp2 = srnic_create_qp(E->p.pd[0], &qa);
	assert_non_null(qp2);
	cqb = srnic_create_cq(E->p.dev[1], 16, E->eng[1]);
	assert_non_null(cqb);
	qa.send_cq = qa.recv_cq = cqb;
	qpb = srnic_create_qp(E->p.pd[1], &qa);
	assert_non_null(qpb);
	srnic_dev_gid(E->p.dev[1], 1, &path.dgid);
	assert_int_equal(srnic_dev_resolve_neigh(a, &path.dgid, &mac), 0);
	path.dmac = &mac;
	path.dest_qpn = srnic_qp_num(qpb);
	assert_int_equal(srnic_test_qp_connect(qp2, &path), 0);
	srnic_dev_gid(a, 1, &path.dgid);
	assert_int_equal(srnic_dev_resolve_neigh(E->p.dev[1], &path.dgid, &mac), 0);
	path.dest_qpn = srnic_qp_num(qp2);
	path.sq_psn = 6000;
	path.rq_psn = 5000;
	assert_int_equal(srnic_test_qp_connect(qpb, &path), 0);
	/* a type 2 window over A's l */
	wmr = srnic_reg_mr(E->p.pd[0], b.l, 4096, E2E_RALL | IBV_ACCESS_MW_BIND);
	assert_non_null(wmr);
	ibmr.lkey = srnic_mr_lkey(wmr);
	mw = srnic_alloc_mw(E->p.pd[0], IBV_MW_TYPE_2);
	assert_non_null(mw);

	/* B stops: A's WRITEs fill its ring, then A's TX buffer */
	full0 = srnic_dev_stat(a, "req_tx_full");
	peek0 = srnic_dev_stat(a, "req_tx_full_peek");
	for (i = 0; i < FILL_NW; i++)
		e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 10 + i, i * n, n, i * n,
			      IBV_SEND_SIGNALED);
	{
		uint64_t dl = e2e_deadline();

		while (srnic_dev_stat(a, "req_tx_full") == full0) {
			if (e2e_deadline_passed(dl))
				fail_msg("A's TX buffer never full (req_tx_full)");
			e2e_poll_side(0);
		}
	}
	/* QP 1's turns go on, its SQ not read for them: the turn that met
	 * the full buffer had read the WRITE it was sending, which needs the
	 * wire (req.tx_wait), and the turns after it read only that */
	e2e_poll_side(0);
	full0 = srnic_dev_stat(a, "req_tx_full");
	for (i = 0; i < FILL_IDLE_POLLS; i++)
		e2e_poll_side(0);
	assert_true(srnic_dev_stat(a, "req_tx_full") >= full0 + FILL_IDLE_POLLS);
	/* deterministic: B never polls and no timer fires (timeout 31), so
	 * the packet that fills the buffer is fixed by the link ring's size,
	 * SRNIC_TX_BUF_SIZE and SRNIC_REQ_BUDGET, not by timing; with these
	 * it is met inside a turn's loop, the WRITE read (were it met at a
	 * turn's end, the next turn would peek once, in every run) */
	assert_int_equal(srnic_dev_stat(a, "req_tx_full_peek"), peek0);
	assert_int_equal(srnic_dev_stat(a, "req_tx_full_local"), 0);

	/* a BIND_MW on QP 2 completes with the TX buffer still full */
	key = inc_rkey(srnic_mw_rkey(mw));
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = srnic_mw_ibv(mw);
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info.mr = &ibmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)b.l;
	wr.bind_mw.bind_info.length = 4096;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	assert_int_equal(srnic_post_send(qp2, &wr, &bad), 0);
	if (!poll_a_for_wc(cq2, &wc))
		fail_msg("QP 2's BIND_MW waited behind QP 1's packets (req_tx_full_local %" PRId64 ")",
			 srnic_dev_stat(a, "req_tx_full_local"));
	assert_int_equal(wc.wr_id, 80);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	assert_int_equal(srnic_mw_rkey(mw), key);
	/* then a LOCAL_INV of it: the window free again (its MR deregisters) */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 81;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	assert_int_equal(srnic_dereg_mr_wait(wmr, 0), -EINVAL); /* bound */
	assert_int_equal(srnic_post_send(qp2, &wr, &bad), 0);
	assert_true(poll_a_for_wc(cq2, &wc));
	assert_int_equal(wc.wr_id, 81);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(srnic_dev_stat(a, "mw_local_inv"), 1);
	assert_int_equal(srnic_dev_stat(a, "req_tx_full_local"), 2);
	/* all along, QP 1's turns were put off for TX room */
	assert_true(srnic_dev_stat(a, "req_tx_full") > full0 + FILL_IDLE_POLLS);

	/* a BIND_MW on QP 1 waits behind its WRITEs */
	key = inc_rkey(key);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 90;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = srnic_mw_ibv(mw);
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info.mr = &ibmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)b.l;
	wr.bind_mw.bind_info.length = 4096;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
	for (i = 0; i < FILL_IDLE_POLLS; i++)
		e2e_poll_side(0);
	assert_int_not_equal(srnic_mw_rkey(mw), key);
	assert_int_equal(srnic_dev_stat(a, "req_tx_full_local"), 2);

	/* B polls again: the WRITEs land in order, then the bind */
	w = e2e_wait_wc(0, 1 + FILL_NW + 1);
	for (i = 0; i < FILL_NW + 1; i++) {
		w = &E->wc[0][1 + i];
		assert_int_equal(w->status, IBV_WC_SUCCESS);
		assert_int_equal(w->wr_id, i < FILL_NW ? 10 + i : 90);
	}
	assert_int_equal(w->opcode, IBV_WC_BIND_MW);
	assert_int_equal(srnic_mw_rkey(mw), key);
	assert_memory_equal(b.r, b.l, FILL_LEN);

	/* QP 1's WRITEs are done, its wait for TX room over (req.tx_wait,
	 * set while they waited, cleared by the turn that found room). QP
	 * 2's WRITEs to b fill the TX path again (B stops), and a LOCAL_INV
	 * of the window, at QP 1's SQ head, completes at once
	 * (req_tx_full_local 3). Before (a stale tx_wait), QP 1's turns left
	 * at the full buffer without reading its SQ: the LOCAL_INV waited
	 * for B. */
	full0 = srnic_dev_stat(a, "req_tx_full");
	for (i = 0; i < FILL_NW; i++)
		e2e_bufs_post(&b, qp2, IBV_WR_RDMA_WRITE, 100 + i, i * n, n, i * n,
			      IBV_SEND_SIGNALED);
	{
		uint64_t dl = e2e_deadline();

		while (srnic_dev_stat(a, "req_tx_full") == full0) {
			if (e2e_deadline_passed(dl))
				fail_msg("QP 2's WRITEs never filled A's TX buffer (req_tx_full)");
			e2e_poll_side(0);
		}
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 91;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = key;
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
	if (!poll_a_for_wc(E->cq[0], &wc))
		fail_msg("QP 1's LOCAL_INV waited behind QP 2's packets (req_tx_full_local %" PRId64
			 ")", srnic_dev_stat(a, "req_tx_full_local"));
	assert_int_equal(wc.wr_id, 91);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(srnic_dev_stat(a, "req_tx_full_local"), 3);
	/* B polls again: QP 2's WRITEs land */
	{
		uint64_t dl = e2e_deadline();

		for (got = 0; got < FILL_NW;) {
			if (e2e_deadline_passed(dl))
				fail_msg("QP 2's WRITEs: %u of %u completed", got, FILL_NW);
			e2e_poll_side(0);
			e2e_poll_side(1);
			if (srnic_poll_cq(cq2, 1, &wc) == 1) {
				assert_int_equal(wc.status, IBV_WC_SUCCESS);
				assert_int_equal(wc.wr_id, 100 + got);
				got++;
			}
		}
	}

	assert_int_equal(srnic_dealloc_mw(mw), 0);
	assert_int_equal(srnic_dereg_mr(wmr), 0);
	assert_int_equal(srnic_destroy_qp(qp2), 0);
	assert_int_equal(srnic_destroy_cq(cq2), 0);
	assert_int_equal(srnic_destroy_qp(qpb), 0);
	assert_int_equal(srnic_destroy_cq(cqb), 0);
}

/* Local WQEs on one QP: eight turns' budget */
#define LOCAL_NB (SRNIC_REQ_BUDGET * 8)

/*
 * Local WQEs spend the requester's per-turn budget as packets do: A's
 * second QP posts LOCAL_NB (256) of them (a BIND_MW of one window, then
 * its LOCAL_INV, in turn; the last signaled) and A polls once; then QP 1
 * posts a 64 B WRITE. Its packet goes out (req_pkts) before the second
 * QP's last LOCAL_INV has run (mw_bind + mw_local_inv < LOCAL_NB); then
 * that one completes, the window free, and the WRITE too. Before, the
 * requester charged nothing for a local WQE: the first turn ran all 256
 * while other QPs waited.
 */
static void
test_local_ops_budget(void **state)
{
	struct e2e_conf c = { .psn = { 100, 900 } };
	struct srnic_qp_init_attr qa = { .max_send_wr = LOCAL_NB, .max_recv_wr = 1,
					 .max_send_sge = 1, .max_recv_sge = 1,
					 .qp_type = IBV_QPT_RC };
	struct srnic_test_path path = { .access = E2E_RALL, .mtu = IBV_MTU_1024, .sq_psn = 5000,
					.rq_psn = 6000, .max_dest_rd_atomic = 1, .timeout = 14,
					.retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 1 };
	struct ibv_send_wr wr, *bad;
	struct srnic_dev *a;
	struct rte_ether_addr mac;
	struct ibv_mr ibmr;
	struct e2e_bufs b;
	struct srnic_mr *wmr;
	struct srnic_mw *mw;
	struct srnic_qp *qp2;
	struct srnic_cq *cq2;
	struct ibv_wc wc;
	int64_t local0, pkts0, ran;
	uint32_t key, i;
	uint64_t dl;

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	a = E->p.dev[0];
	e2e_bufs_new(&b, 4096, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 11, 22);
	/* the path works and A knows B's MAC */
	e2e_reset();
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 64, 0, IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 1)->status, IBV_WC_SUCCESS);
	/* A's second QP: its own CQ, RTS toward B (it never sends) */
	cq2 = srnic_create_cq(a, 16, E->eng[0]);
	assert_non_null(cq2);
	qa.send_cq = qa.recv_cq = cq2;
	qp2 = srnic_create_qp(E->p.pd[0], &qa);
	assert_non_null(qp2);
	srnic_dev_gid(E->p.dev[1], 1, &path.dgid);
	assert_int_equal(srnic_dev_resolve_neigh(a, &path.dgid, &mac), 0);
	path.dmac = &mac;
	path.dest_qpn = srnic_qp_num(E->qp[1]);
	assert_int_equal(srnic_test_qp_connect(qp2, &path), 0);
	wmr = srnic_reg_mr(E->p.pd[0], b.l, 4096, E2E_RALL | IBV_ACCESS_MW_BIND);
	assert_non_null(wmr);
	ibmr.lkey = srnic_mr_lkey(wmr);
	mw = srnic_alloc_mw(E->p.pd[0], IBV_MW_TYPE_2);
	assert_non_null(mw);

	key = srnic_mw_rkey(mw);
	for (i = 0; i < LOCAL_NB; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 1000 + i;
		wr.send_flags = i == LOCAL_NB - 1 ? IBV_SEND_SIGNALED : 0;
		if (i % 2 == 0) {
			key = inc_rkey(key);
			wr.opcode = IBV_WR_BIND_MW;
			wr.bind_mw.mw = srnic_mw_ibv(mw);
			wr.bind_mw.rkey = key;
			wr.bind_mw.bind_info.mr = &ibmr;
			wr.bind_mw.bind_info.addr = (uintptr_t)b.l;
			wr.bind_mw.bind_info.length = 4096;
			wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
		} else {
			wr.opcode = IBV_WR_LOCAL_INV;
			wr.invalidate_rkey = key;
		}
		assert_int_equal(srnic_post_send(qp2, &wr, &bad), 0);
	}
	local0 = srnic_dev_stat(a, "mw_bind") + srnic_dev_stat(a, "mw_local_inv");
	pkts0 = srnic_dev_stat(a, "req_pkts");
	e2e_poll_side(0);
	/* QP 1's WRITE: its packet leaves before the last local WQE runs */
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 2, 0, 64, 0, IBV_SEND_SIGNALED);
	dl = e2e_deadline();
	while (srnic_dev_stat(a, "req_pkts") == pkts0) {
		if (e2e_deadline_passed(dl))
			fail_msg("QP 1's WRITE never sent (req_pkts)");
		e2e_poll_side(0);
	}
	ran = srnic_dev_stat(a, "mw_bind") + srnic_dev_stat(a, "mw_local_inv") - local0;
	print_message("local WQEs run when QP 1's WRITE was sent: %" PRId64 " of %u\n", ran,
		      LOCAL_NB);
	if (ran >= LOCAL_NB)
		fail_msg("QP 2's %u local WQEs all ran before QP 1's WRITE was sent: they spent "
			 "no budget", LOCAL_NB);
	/* then the rest: the last LOCAL_INV's CQE, the window free */
	assert_true(poll_a_for_wc(cq2, &wc));
	assert_int_equal(wc.wr_id, 1000 + LOCAL_NB - 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_LOCAL_INV);
	assert_int_equal(srnic_dev_stat(a, "mw_bind") + srnic_dev_stat(a, "mw_local_inv") - local0,
			 LOCAL_NB);
	assert_int_equal(srnic_dereg_mr(wmr), 0); /* no window bound on it */
	/* the WRITE landed */
	assert_int_equal(e2e_wait_wc(0, 2)->wr_id, 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_memory_equal(b.r, b.l, 64);

	assert_int_equal(srnic_dealloc_mw(mw), 0);
	assert_int_equal(srnic_destroy_qp(qp2), 0);
	assert_int_equal(srnic_destroy_cq(cq2), 0);
}

/*
 * A resend that goes back over a local WQE that already ran: A posts
 * WRITE 1, a local op 2 (a BIND_MW of a window over its l, or a LOCAL_INV
 * of one bound before) and WRITE 3, all signaled. The first WRITE's packet
 * is lost: with drops 1, B sees WRITE 3 out of sequence and NAKs it
 * (nak); with drops 2 both are lost, B says nothing and A's ACK timer
 * resends. A goes back to WRITE 1 (comp_rewind()): the local op, done, is
 * passed over (req_rewind_local_skip), neither run again nor sent. Three
 * successful CQEs, both WRITEs' bytes in r, the local op's effect kept
 * (run once), and nothing on the wire but WRITE_ONLY and ACK. Before, the
 * DONE local WQE at sq.req went to req_build(): a SEND_FIRST and then
 * SEND_MIDDLEs without end, WRITE 3 never completed.
 */
static void
rewind_over_local(enum ibv_wr_opcode lop, uint32_t drops, bool nak)
{
	struct e2e_conf c = { .psn = { 100, 900 }, .timeout = REWIND_TMO, .retry_cnt = 7 };
	struct ibv_send_wr wr = { .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct srnic_dev *a;
	struct ibv_mr ibmr;
	struct e2e_bufs b;
	struct srnic_mr *wmr;
	struct srnic_mw *mw;
	uint32_t key, i, seq_naks = 0, writes = 0;
	int64_t binds, invs, skips;

	e2e_qps_renew(&c);
	a = E->p.dev[0];
	e2e_bufs_new(&b, RLEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&b, 11, 22);
	wmr = srnic_reg_mr(E->p.pd[0], b.l, WLEN, E2E_RALL | IBV_ACCESS_MW_BIND);
	assert_non_null(wmr);
	ibmr.lkey = srnic_mr_lkey(wmr);
	mw = srnic_alloc_mw(E->p.pd[0], IBV_MW_TYPE_2);
	assert_non_null(mw);
	key = inc_rkey(srnic_mw_rkey(mw));
	wr.opcode = IBV_WR_BIND_MW;
	wr.bind_mw.mw = srnic_mw_ibv(mw);
	wr.bind_mw.rkey = key;
	wr.bind_mw.bind_info.mr = &ibmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)b.l;
	wr.bind_mw.bind_info.length = WLEN;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	e2e_reset();
	if (lop == IBV_WR_LOCAL_INV) {
		/* bound first, on its own; op 2 then invalidates it */
		wr.wr_id = 70;
		assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
		assert_int_equal(e2e_wait_wc(0, 1)->status, IBV_WC_SUCCESS);
		assert_int_equal(srnic_mw_rkey(mw), key);
		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.invalidate_rkey = key;
		e2e_reset();
	}
	binds = srnic_dev_stat(a, "mw_bind");
	invs = srnic_dev_stat(a, "mw_local_inv");
	skips = srnic_dev_stat(a, "req_rewind_local_skip");

	e2e_drop_arm(0, SRNIC_OP_RC_WRITE_ONLY, 0, drops);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 512, 0, IBV_SEND_SIGNALED);
	wr.wr_id = 2;
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
	e2e_bufs_post(&b, E->qp[0], IBV_WR_RDMA_WRITE, 3, 1024, 512, 1024, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 3);
	e2e_settle(4);
	assert_int_equal(E->drop.dropped, drops);
	assert_int_equal(E->nwc[0], 3);
	for (i = 0; i < 3; i++) {
		if (E->wc[0][i].status != IBV_WC_SUCCESS)
			e2e_dump();
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
		assert_int_equal(E->wc[0][i].wr_id, i + 1);
	}
	assert_int_equal(E->wc[0][1].opcode,
			 lop == IBV_WR_BIND_MW ? IBV_WC_BIND_MW : IBV_WC_LOCAL_INV);
	assert_memory_equal(b.r, b.l, 512);
	assert_memory_equal(b.r + 1024, b.l + 1024, 512);
	/* the local op ran once, its effect kept */
	if (lop == IBV_WR_BIND_MW) {
		assert_int_equal(srnic_dev_stat(a, "mw_bind"), binds + 1);
		assert_int_equal(srnic_mw_rkey(mw), key);
		assert_int_equal(srnic_dereg_mr_wait(wmr, 0), -EINVAL); /* bound */
	} else {
		assert_int_equal(srnic_dev_stat(a, "mw_local_inv"), invs + 1);
		assert_int_equal(srnic_dev_stat(a, "mw_bind"), binds);
	}
	/* only WRITEs (the first again) and ACKs (a sequence NAK if nak) */
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side == 0) {
			if (k->opcode != SRNIC_OP_RC_WRITE_ONLY)
				e2e_dump();
			assert_int_equal(k->opcode, SRNIC_OP_RC_WRITE_ONLY);
			writes++;
		} else {
			uint8_t syn;

			assert_int_equal(k->opcode, SRNIC_OP_RC_ACK);
			syn = srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH));
			/* an ACK (type 0) or a sequence error NAK, nothing else */
			if (syn >> 5 != 0 && syn != NAK_SEQ_ERR)
				e2e_dump();
			assert_true(syn >> 5 == 0 || syn == NAK_SEQ_ERR);
			seq_naks += syn == NAK_SEQ_ERR;
		}
	}
	assert_true(writes >= 3 - drops + 1); /* WRITE 1 resent */
	if (nak)
		assert_true(seq_naks >= 1);
	else
		assert_int_equal(seq_naks, 0);
	assert_true(srnic_dev_stat(a, "req_rewind_local_skip") > skips);
	assert_int_equal(srnic_dealloc_mw(mw), 0);
	assert_int_equal(srnic_dereg_mr(wmr), 0);
}

static void
test_rewind_over_bind(void **state)
{
	RTE_SET_USED(state);
	rewind_over_local(IBV_WR_BIND_MW, 1, true);
}

static void
test_rewind_over_local_inv(void **state)
{
	RTE_SET_USED(state);
	rewind_over_local(IBV_WR_LOCAL_INV, 1, true);
}

/* the rewind by the ACK timer: both WRITEs lost, no NAK */
static void
test_rewind_over_bind_timeout(void **state)
{
	RTE_SET_USED(state);
	rewind_over_local(IBV_WR_BIND_MW, 2, false);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_type2_inside_outside, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_type2_access, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_type1_bind_unbind, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_local_inv, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_remote_inv, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_remote_inv_refused, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_refused, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_type2_qp_reused, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_local_behind_full_tx, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_local_ops_budget, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rewind_over_bind, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rewind_over_local_inv, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rewind_over_bind_timeout, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_mw", tests, e2e_group_setup, e2e_group_teardown);
}
