/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MRs registered at an IOVA apart from their address (srnic_reg_mr_iova(),
 * ibv_reg_mr_iova(3)): A's l at IOVA_L, B's r at IOVA_R and v at IOVA_V,
 * each far from where the memory is. WRITE, READ (zero-copy responses and
 * a small one), FETCH_ADD, CMP_SWAP, ATOMIC WRITE and SEND name only those
 * IOVAs, in local SGEs and in the RETH/AtomicETH, and land at the right
 * bytes of the memory. An rkey access a byte outside [iova, iova + len), or
 * at the memory's own address, is NAKed Remote Access Error (0x62,
 * IBV_WC_REM_ACCESS_ERR) with the memory untouched; a local SGE outside
 * the IOVA range completes IBV_WC_LOC_PROT_ERR (the receive's: NAK Remote
 * Operational Error 0x63 to the sender).
 */
#include <string.h>

#include <rte_errno.h>

#include "e2e_fixture.h"

#define NAK_REM_ACCESS 0x62
#define NAK_REM_OP 0x63
#define LEN 16384
/* far from anything rte_zmalloc hands out, and from each other */
#define IOVA_L 0x10000ull
#define IOVA_R 0xa5a5000000000000ull
#define IOVA_V 0x7000ull

struct iova_bufs {
	uint8_t *l, *r, *v;
	struct srnic_mr *lmr, *rmr, *vmr;
};

/* Fresh QPs and buffers at their IOVAs, l and r filled. */
static void
case_new(struct iova_bufs *b)
{
	struct e2e_conf c = { .psn = { 1200, 3400 } };

	e2e_qps_renew(&c);
	b->l = e2e_buf_iova(0, LEN, IOVA_L, IBV_ACCESS_LOCAL_WRITE, &b->lmr);
	b->r = e2e_buf_iova(1, LEN, IOVA_R, E2E_RALL, &b->rmr);
	b->v = e2e_buf_iova(1, LEN, IOVA_V, IBV_ACCESS_LOCAL_WRITE, &b->vmr);
	srnic_test_fill(b->l, LEN, 71);
	srnic_test_fill(b->r, LEN, 72);
	e2e_reset();
}

/* A's op of len bytes from the SGE at laddr (an address of l's MR) to
 * raddr with r's rkey. */
static void
post(const struct iova_bufs *b, enum ibv_wr_opcode op, uint64_t wr_id, uint64_t laddr,
     uint32_t len, uint64_t raddr)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = srnic_mr_lkey(b->lmr) };

	e2e_post_op(0, op, wr_id, &sge, 1, raddr, srnic_mr_rkey(b->rmr), IBV_SEND_SIGNALED);
}

static void
post_recv(const struct iova_bufs *b, uint64_t wr_id, uint64_t vaddr, uint32_t len)
{
	struct ibv_sge sge = { .addr = vaddr, .length = len, .lkey = srnic_mr_lkey(b->vmr) };

	e2e_post_rx(1, wr_id, &sge, 1);
}

static void
test_ops(void **state)
{
	uint8_t want[LEN], lwant[LEN];
	struct iova_bufs b;
	uint64_t orig16, orig24, v, aw = 0x0123456789abcdefull;
	const struct ibv_wc *wc;
	struct ibv_sge sge;

	RTE_SET_USED(state);
	case_new(&b);
	memcpy(&orig16, b.r + 16, 8);
	memcpy(&orig24, b.r + 24, 8);
	/* WRITE: 4096 B (zero-copy gather at the requester) and 64 B (copied) */
	post(&b, IBV_WR_RDMA_WRITE, 1, IOVA_L, 4096, IOVA_R + 100);
	post(&b, IBV_WR_RDMA_WRITE, 2, IOVA_L + 5000, 64, IOVA_R + 6000);
	/* READ: 6000 B (two zero-copy response packets) and 32 B into l */
	post(&b, IBV_WR_RDMA_READ, 3, IOVA_L + 8192, 6000, IOVA_R + 8000);
	post(&b, IBV_WR_RDMA_READ, 4, IOVA_L + 15000, 32, IOVA_R + 16000);
	/* atomics: targets in r, results into l */
	sge = (struct ibv_sge){ .addr = IOVA_L + 64, .length = 8, .lkey = srnic_mr_lkey(b.lmr) };
	e2e_post_atomic(0, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, &sge, IOVA_R + 16,
			srnic_mr_rkey(b.rmr), 5, 0);
	sge.addr = IOVA_L + 72;
	e2e_post_atomic(0, IBV_WR_ATOMIC_CMP_AND_SWP, 6, &sge, IOVA_R + 24, srnic_mr_rkey(b.rmr),
			orig24, 0x1122334455667788ull);
	/* ATOMIC WRITE of 8 bytes from l + 80 (A's own IOVA) */
	memcpy(b.l + 80, &aw, 8);
	post(&b, IBV_WR_ATOMIC_WRITE, 7, IOVA_L + 80, 8, IOVA_R + 32);
	/* SEND 3000 B from l + 100 into v + 200 */
	post_recv(&b, 8, IOVA_V + 200, 3000);
	post(&b, IBV_WR_SEND, 8, IOVA_L + 100, 3000, 0);
	for (v = 1; v <= 8; v++)
		e2e_expect_a((uint32_t)v, v, IBV_WC_SUCCESS, -1);
	wc = e2e_wait_wc(1, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->byte_len, 3000);

	/* what l held when posted (the atomics' results land in it after) */
	srnic_test_fill(lwant, LEN, 71);
	memcpy(lwant + 80, &aw, 8);
	srnic_test_fill(want, LEN, 72);
	assert_memory_equal(b.r + 100, lwant, 4096);
	assert_memory_equal(b.r + 6000, lwant + 5000, 64);
	assert_memory_equal(b.l + 8192, want + 8000, 6000);
	assert_memory_equal(b.l + 15000, want + 16000, 32);
	memcpy(&v, b.l + 64, 8);
	assert_int_equal(v, orig16);
	memcpy(&v, b.r + 16, 8);
	assert_int_equal(v, orig16 + 5);
	memcpy(&v, b.l + 72, 8);
	assert_int_equal(v, orig24);
	memcpy(&v, b.r + 24, 8);
	assert_int_equal(v, 0x1122334455667788ull);
	memcpy(&v, b.r + 32, 8);
	assert_int_equal(v, aw);
	assert_memory_equal(b.v + 200, lwant + 100, 3000);
	/* nothing else of r moved: the bytes between the targets */
	assert_memory_equal(b.r + 40, want + 40, 60);
	assert_memory_equal(b.r + 4196, want + 4196, 6000 - 4196);
}

/* A's WRITE of 64 B to raddr: NAKed 0x62, r untouched. */
static void
rkey_refused(enum ibv_wr_opcode op, uint64_t raddr)
{
	uint8_t want[LEN];
	struct iova_bufs b;

	case_new(&b);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		struct ibv_sge sge = { .addr = IOVA_L, .length = 8,
				       .lkey = srnic_mr_lkey(b.lmr) };

		e2e_post_atomic(0, op, 1, &sge, raddr, srnic_mr_rkey(b.rmr), 1, 0);
	} else {
		post(&b, op, 1, IOVA_L, 64, raddr);
	}
	e2e_expect_a(1, 1, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	srnic_test_fill(want, LEN, 72);
	assert_memory_equal(b.r, want, LEN);
}

static void
test_rkey_bounds(void **state)
{
	RTE_SET_USED(state);
	rkey_refused(IBV_WR_RDMA_WRITE, IOVA_R - 1);
	rkey_refused(IBV_WR_RDMA_WRITE, IOVA_R + LEN - 63);
	rkey_refused(IBV_WR_RDMA_READ, IOVA_R + LEN - 63);
	rkey_refused(IBV_WR_RDMA_READ, IOVA_R - 64);
	rkey_refused(IBV_WR_ATOMIC_FETCH_AND_ADD, IOVA_R + LEN);
	/* where the memory is: not the MR's address any more */
	{
		struct iova_bufs b;

		case_new(&b);
		post(&b, IBV_WR_RDMA_WRITE, 1, IOVA_L, 64, (uintptr_t)b.r);
		e2e_expect_a(1, 1, IBV_WC_REM_ACCESS_ERR, NAK_REM_ACCESS);
	}
}

static void
test_lkey_bounds(void **state)
{
	uint8_t want[LEN];
	struct iova_bufs b;
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	srnic_test_fill(want, LEN, 72);
	/* a gather a byte outside l's range, or at l's own address */
	case_new(&b);
	post(&b, IBV_WR_RDMA_WRITE, 1, IOVA_L - 1, 64, IOVA_R);
	e2e_expect_a(1, 1, IBV_WC_LOC_PROT_ERR, -1);
	assert_memory_equal(b.r, want, LEN);
	case_new(&b);
	post(&b, IBV_WR_SEND, 2, (uintptr_t)b.l, 64, 0);
	e2e_expect_a(1, 2, IBV_WC_LOC_PROT_ERR, -1);
	/* a READ's landing place past l's end */
	case_new(&b);
	post(&b, IBV_WR_RDMA_READ, 3, IOVA_L + LEN - 10, 64, IOVA_R);
	e2e_expect_a(1, 3, IBV_WC_LOC_PROT_ERR, -1);
	/* B's receive buffer past v's end: B's WC LOC_PROT_ERR, A's NAK 0x63 */
	case_new(&b);
	post_recv(&b, 9, IOVA_V + LEN - 10, 64);
	post(&b, IBV_WR_SEND, 4, IOVA_L, 64, 0);
	e2e_expect_a(1, 4, IBV_WC_REM_OP_ERR, NAK_REM_OP);
	wc = e2e_wait_wc(1, 1);
	assert_int_equal(wc->wr_id, 9);
	assert_int_equal(wc->status, IBV_WC_LOC_PROT_ERR);
	memset(want, 0, LEN); /* v was zeroed: nothing landed */
	assert_memory_equal(b.v, want, LEN);
}

/* Refused registrations; a reregistration of the access keeps the IOVA,
 * a new translation is at its own address (rdma-core's hca_va). */
static void
test_register(void **state)
{
	struct iova_bufs b;

	RTE_SET_USED(state);
	case_new(&b);
	/* [iova, iova + len) wraps */
	assert_null(srnic_reg_mr_iova(E->p.pd[1], b.r, LEN, UINT64_MAX - 100, E2E_RALL, NULL,
				      NULL));
	assert_int_equal(rte_errno, EINVAL);
	b.rmr = e2e_mr_rereg(b.rmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, E2E_RALL);
	post(&b, IBV_WR_RDMA_WRITE, 1, IOVA_L, 64, IOVA_R + 64);
	e2e_expect_a(1, 1, IBV_WC_SUCCESS, -1);
	assert_memory_equal(b.r + 64, b.l, 64);
	b.rmr = e2e_mr_rereg(b.rmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b.r, LEN, 0);
	post(&b, IBV_WR_RDMA_WRITE, 2, IOVA_L + 64, 64, (uintptr_t)b.r + 128);
	e2e_expect_a(2, 2, IBV_WC_SUCCESS, -1);
	assert_memory_equal(b.r + 128, b.l + 64, 64);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ops, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rkey_bounds, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_lkey_bounds, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_register, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_mr_iova", tests, e2e_group_setup,
					   e2e_group_teardown);
}
