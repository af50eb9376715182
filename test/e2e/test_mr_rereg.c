/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic_rereg_mr() end to end (ibv_rereg_mr(3)): B's MR r moved to a new
 * range with new access takes A's WRITE and READ there (bytes checked, the
 * old range untouched) and refuses the old rkey (NAK Remote Access Error
 * 0x62, IBV_WC_REM_ACCESS_ERR); a new access alone keeps the keys and
 * refuses what it no longer grants; a new PD refuses A's QP (another PD)
 * until the MR is moved back; bad arguments get EINVAL and an MR with a
 * memory window bound EBUSY, the registration unchanged (a WRITE lands).
 */
#include <string.h>

#include <rte_errno.h>

#include "e2e_fixture.h"

#define NAK_REM_ACCESS 0x62
#define RLEN 8192

/* e2e_bufs with r registered E2E_RALL, the pattern in l and r. */
static void
case_new(struct e2e_bufs *b)
{
	struct e2e_conf c = { .psn = { 300, 700 } };

	e2e_qps_renew(&c);
	e2e_bufs_new(b, RLEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(b, 31, 42);
}

/* Reregister b->rmr (e2e_mr_rereg()). */
static void
rereg_ok(struct e2e_bufs *b, int flags, struct srnic_pd *pd, void *addr, size_t len, int access)
{
	b->rmr = e2e_mr_rereg(b->rmr, flags, pd, addr, len, access);
}

/* A's RDMA op of len bytes from l + off to raddr with rkey, as wr_id. */
static void
post_rdma(const struct e2e_bufs *b, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off,
	  uint32_t len, const void *raddr, uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)b->l + off, .length = len,
			       .lkey = srnic_mr_lkey(b->lmr) };

	e2e_post_op(0, op, wr_id, &sge, 1, (uintptr_t)raddr, rkey, IBV_SEND_SIGNALED);
}

/* A new range and new access: WRITE and READ there; the old rkey refused. */
static void
test_translation(void **state)
{
	struct e2e_bufs b;
	uint8_t *r2, old_r[RLEN], want[RLEN];
	struct srnic_mr *r2mr;
	uint32_t old_key;

	RTE_SET_USED(state);
	case_new(&b);
	/* r2: another buffer of the fixture's (it frees it after the MRs) */
	r2 = e2e_buf(1, RLEN, IBV_ACCESS_LOCAL_WRITE, &r2mr);
	srnic_test_fill(r2, RLEN, 53);
	memcpy(old_r, b.r, RLEN);
	old_key = srnic_mr_rkey(b.rmr);
	rereg_ok(&b, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_ACCESS, NULL, r2, RLEN,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	/* the same index, a new key byte */
	assert_int_equal(srnic_mr_rkey(b.rmr) >> 8, old_key >> 8);
	assert_int_not_equal(srnic_mr_rkey(b.rmr), old_key);
	assert_int_equal(srnic_mr_lkey(b.rmr), srnic_mr_rkey(b.rmr));
	e2e_reset();
	post_rdma(&b, IBV_WR_RDMA_WRITE, 1, 0, 4096, r2 + 1000, srnic_mr_rkey(b.rmr));
	post_rdma(&b, IBV_WR_RDMA_READ, 2, 4096, 2048, r2 + 6000, srnic_mr_rkey(b.rmr));
	e2e_expect_a(1, 1, IBV_WC_SUCCESS, -1);
	e2e_expect_a(2, 2, IBV_WC_SUCCESS, -1);
	assert_memory_equal(r2 + 1000, b.l, 4096);
	srnic_test_fill(want, RLEN, 53);
	assert_memory_equal(b.l + 4096, want + 6000, 2048);
	/* the old range is not the MR's: the old key at the old address */
	post_rdma(&b, IBV_WR_RDMA_WRITE, 3, 0, 64, b.r, old_key);
	e2e_expect_a(3, 3, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	assert_memory_equal(b.r, old_r, RLEN);
	/* nor with the new key: outside the new range */
	case_new(&b);
	rereg_ok(&b, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r2, RLEN, 0);
	memcpy(old_r, b.r, RLEN);
	e2e_reset();
	post_rdma(&b, IBV_WR_RDMA_WRITE, 4, 0, 64, b.r, srnic_mr_rkey(b.rmr));
	e2e_expect_a(1, 4, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	assert_memory_equal(b.r, old_r, RLEN);
}

/* A new access alone keeps the keys: READ still passes, WRITE refused. */
static void
test_access(void **state)
{
	struct e2e_bufs b;
	uint8_t old_r[RLEN];
	uint32_t key;

	RTE_SET_USED(state);
	case_new(&b);
	key = srnic_mr_rkey(b.rmr);
	rereg_ok(&b, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_int_equal(srnic_mr_rkey(b.rmr), key);
	memcpy(old_r, b.r, RLEN);
	e2e_reset();
	post_rdma(&b, IBV_WR_RDMA_READ, 1, 0, 4096, b.r, key);
	e2e_expect_a(1, 1, IBV_WC_SUCCESS, -1);
	assert_memory_equal(b.l, b.r, 4096);
	post_rdma(&b, IBV_WR_RDMA_WRITE, 2, 4096, 64, b.r, key);
	e2e_expect_a(2, 2, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	assert_memory_equal(b.r, old_r, RLEN);
}

/* A new PD: A's QP's PD on B is another, refused; moved back, it passes.
 * The PD with the MR cannot go. */
static void
test_pd(void **state)
{
	struct srnic_pd *pd2 = srnic_alloc_pd(E->p.dev[1]);
	struct e2e_bufs b;

	RTE_SET_USED(state);
	assert_non_null(pd2);
	case_new(&b);
	rereg_ok(&b, IBV_REREG_MR_CHANGE_PD, pd2, NULL, 0, 0);
	assert_int_equal(srnic_dealloc_pd(pd2), -EBUSY);
	e2e_reset();
	post_rdma(&b, IBV_WR_RDMA_WRITE, 1, 0, 64, b.r, srnic_mr_rkey(b.rmr));
	e2e_expect_a(1, 1, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	rereg_ok(&b, IBV_REREG_MR_CHANGE_PD, E->p.pd[1], NULL, 0, 0);
	assert_int_equal(srnic_dealloc_pd(pd2), 0);
	case_new(&b);
	e2e_reset();
	post_rdma(&b, IBV_WR_RDMA_WRITE, 2, 0, 4096, b.r, srnic_mr_rkey(b.rmr));
	e2e_expect_a(1, 2, IBV_WC_SUCCESS, -1);
	assert_memory_equal(b.r, b.l, 4096);
}

/* Bad arguments: EINVAL; a window bound: EBUSY; the MR as it was. */
static void
test_refused(void **state)
{
	struct e2e_bufs b;
	struct srnic_mw *mw;
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	const struct ibv_wc *wc;
	struct ibv_mr ibmr;
	uint8_t x[64];
	int acc = E2E_RALL | IBV_ACCESS_MW_BIND;

	RTE_SET_USED(state);
	case_new(&b);
	assert_null(srnic_rereg_mr(NULL, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, 0));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_rereg_mr(b.rmr, 0, NULL, NULL, 0, 0));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_rereg_mr(b.rmr, IBV_REREG_MR_FLAGS_SUPPORTED + 1, NULL, NULL, 0, 0));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_rereg_mr(b.rmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, NULL, 64, 0));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_rereg_mr(b.rmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, x, 0, 0));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_rereg_mr(b.rmr, IBV_REREG_MR_CHANGE_PD, NULL, NULL, 0, 0));
	assert_int_equal(rte_errno, EINVAL);
	/* the other device's PD */
	assert_null(srnic_rereg_mr(b.rmr, IBV_REREG_MR_CHANGE_PD, E->p.pd[0], NULL, 0, 0));
	assert_int_equal(rte_errno, EINVAL);
	/* IBTA 10.6.3.1: remote write needs local write */
	assert_null(srnic_rereg_mr(b.rmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				   IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(rte_errno, EINVAL);

	/* a type 2 window bound to the MR by B's BIND_MW */
	rereg_ok(&b, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, acc);
	mw = srnic_alloc_mw(E->p.pd[1], IBV_MW_TYPE_2);
	assert_non_null(mw);
	ibmr = (struct ibv_mr){ .lkey = srnic_mr_lkey(b.rmr) };
	wr.bind_mw.mw = srnic_mw_ibv(mw);
	wr.bind_mw.rkey = (srnic_mw_rkey(mw) & ~0xFFu) | ((srnic_mw_rkey(mw) + 1) & 0xFF);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){ .mr = &ibmr, .addr = (uintptr_t)b.r,
							  .length = 4096,
							  .mw_access_flags = IBV_ACCESS_REMOTE_READ };
	e2e_reset();
	assert_int_equal(srnic_post_send(E->qp[1], &wr, &bad), 0);
	wc = e2e_wait_wc(1, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_null(srnic_rereg_mr(b.rmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, E2E_RALL));
	assert_int_equal(rte_errno, EBUSY);
	assert_int_equal(srnic_dealloc_mw(mw), 0);

	/* still registered as it was: a WRITE lands */
	e2e_reset();
	post_rdma(&b, IBV_WR_RDMA_WRITE, 1, 0, 4096, b.r, srnic_mr_rkey(b.rmr));
	e2e_expect_a(1, 1, IBV_WC_SUCCESS, -1);
	assert_memory_equal(b.r, b.l, 4096);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_translation, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_access, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_pd, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_refused, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_mr_rereg", tests, e2e_group_setup,
					   e2e_group_teardown);
}
