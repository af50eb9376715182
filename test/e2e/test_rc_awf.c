/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IBTA 1.5's ATOMIC WRITE and FLUSH over a net_ring pair (rxe's, Linux
 * 6.2): the bytes each places, the CQEs, every frame's opcode and
 * headers (ATOMIC WRITE 0x1D: RETH, 8 bytes; FLUSH 0x1C: FETH, RETH; both
 * answered by a zero-length RDMA READ RESPONSE ONLY 0x10), the NAKs of a
 * misaligned address, a bad key and a key without the access, and a
 * duplicate answered again, never executed again; malformed requests
 * built here byte for byte (a short or long ATOMIC WRITE, a FLUSH of a
 * placement type IBTA 1.5 does not name) NAKed Invalid Request.
 */
#include <string.h>

#include <rte_common.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "e2e_fixture.h"

/* The frames side sent since the last e2e_reset(), of opcode op. */
static uint32_t
frames_of(int side, uint8_t op, uint32_t *idx, uint32_t max)
{
	uint32_t all[64], n = e2e_pkts_from(side, all, RTE_DIM(all)), i, k = 0;

	for (i = 0; i < n && k < max; i++)
		if (E->pkts[all[i]].opcode == op)
			idx[k++] = all[i];
	return k;
}

static void
post_atomic_write(uint64_t wr_id, const uint64_t *src, struct srnic_mr *lmr, uint64_t raddr,
		  uint32_t rkey, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = 8,
			       .lkey = lmr != NULL ? srnic_mr_lkey(lmr) : 0 };

	e2e_post_op(0, IBV_WR_ATOMIC_WRITE, wr_id, &sge, 1, raddr, rkey,
		    IBV_SEND_SIGNALED | flags);
}

static void
post_flush(uint64_t wr_id, uint64_t raddr, uint32_t rkey, uint64_t len, uint8_t level)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.send_flags = IBV_SEND_SIGNALED;
	srnic_wr_set_flush(&wr, rkey, raddr, len, SRNIC_FLUSH_GLOBAL, level);
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
}

/* The one response B sent to A's request at psn: a READ RESPONSE ONLY
 * with an ACK AETH and no payload. */
static void
check_rsp0(uint32_t psn)
{
	uint32_t idx[8], n = frames_of(1, SRNIC_OP_RC_READ_RESP_ONLY, idx, RTE_DIM(idx)), i, k = 0;

	for (i = 0; i < n; i++) {
		const struct e2e_pkt *p = &E->pkts[idx[i]];

		if (p->psn != psn)
			continue;
		k++;
		assert_int_equal(p->pay_len, 0);
		assert_int_equal(srnic_aeth_type(e2e_hdr(p, SRNIC_HDR_AETH)), SRNIC_AETH_ACK);
	}
	assert_int_equal(k, 1);
}

static void
test_atomic_write(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 100, 200 } };
	struct srnic_mr *lmr, *rmr;
	uint64_t *local, *remote;
	uint32_t idx[4];
	const struct e2e_pkt *p;
	const struct ibv_wc *wc;
	uint64_t v;

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	local = e2e_buf(0, 64, IBV_ACCESS_LOCAL_WRITE, &lmr);
	remote = e2e_buf(1, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &rmr);
	memset(remote, 0xEE, 64);
	local[0] = 0x0123456789ABCDEFull;

	/* gathered from an MR */
	post_atomic_write(1, &local[0], lmr, (uintptr_t)&remote[1], srnic_mr_rkey(rmr), 0);
	wc = e2e_wait_wc(0, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_ATOMIC_WRITE);
	assert_int_equal(wc->wr_id, 1);
	assert_true(remote[1] == 0x0123456789ABCDEFull);
	assert_true(remote[0] == 0xEEEEEEEEEEEEEEEEull && remote[2] == 0xEEEEEEEEEEEEEEEEull);
	/* the request: 0x1D, RETH (va, rkey, length 8), the 8 bytes as they
	 * are in memory */
	assert_int_equal(frames_of(0, SRNIC_OP_RC_ATOMIC_WRITE, idx, 4), 1);
	p = &E->pkts[idx[0]];
	assert_int_equal(p->psn, 100);
	assert_int_equal(p->pay_len, 8);
	assert_true(srnic_reth_va(e2e_hdr(p, SRNIC_HDR_RETH)) == (uintptr_t)&remote[1]);
	assert_int_equal(srnic_reth_rkey(e2e_hdr(p, SRNIC_HDR_RETH)), srnic_mr_rkey(rmr));
	assert_int_equal(srnic_reth_len(e2e_hdr(p, SRNIC_HDR_RETH)), 8);
	assert_true(srnic_bth_ackreq(e2e_bth(p)));
	memcpy(&v, e2e_payload(p), 8);
	assert_true(v == 0x0123456789ABCDEFull);
	check_rsp0(100);

	/* inline on a QP without inline room (ibv_wr_atomic_write()'s way):
	 * the value is taken at post, the buffer reused at once */
	v = 0xFEDCBA9876543210ull;
	post_atomic_write(2, &v, NULL, (uintptr_t)&remote[7], srnic_mr_rkey(rmr), IBV_SEND_INLINE);
	v = 0;
	wc = e2e_wait_wc(0, 2);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_ATOMIC_WRITE);
	assert_true(remote[7] == 0xFEDCBA9876543210ull);
	check_rsp0(101);
	/* 8 bytes only; UC has none */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 4,
				       .lkey = srnic_mr_lkey(lmr) };

		assert_int_equal(srnic_test_post_send(E->qp[0], IBV_WR_ATOMIC_WRITE, 3, &sge, 1,
						      (uintptr_t)remote, srnic_mr_rkey(rmr), 0),
				 EINVAL);
	}
}

/* A WRITE then a FLUSH of its range and one of the whole MR: each FLUSH
 * answered once the WRITE is placed, in order. */
static void
test_flush(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 7, 9 } };
	struct srnic_mr *lmr, *rmr;
	uint8_t *local, *remote;
	uint32_t idx[4], i;
	const struct e2e_pkt *p;
	const struct ibv_wc *wc;
	struct ibv_sge sge;

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	local = e2e_buf(0, 4096, IBV_ACCESS_LOCAL_WRITE, &lmr);
	remote = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  SRNIC_ACCESS_FLUSH_GLOBAL, &rmr);
	for (i = 0; i < 4096; i++)
		local[i] = (uint8_t)(i * 7 + 3);
	sge = (struct ibv_sge){ .addr = (uintptr_t)local, .length = 3000,
				.lkey = srnic_mr_lkey(lmr) };
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 1, &sge, 1, (uintptr_t)remote, srnic_mr_rkey(rmr), 0);
	post_flush(2, (uintptr_t)remote, srnic_mr_rkey(rmr), 3000, SRNIC_FLUSH_RANGE);
	post_flush(3, (uintptr_t)remote, srnic_mr_rkey(rmr), 0, SRNIC_FLUSH_MR);
	wc = e2e_wait_wc(0, 2);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, 3);
	assert_int_equal(wc->opcode, SRNIC_WC_FLUSH);
	assert_int_equal(E->wc[0][0].wr_id, 2);
	assert_int_equal(E->wc[0][0].opcode, SRNIC_WC_FLUSH);
	assert_memory_equal(remote, local, 3000);
	/* WRITE 7..9, FLUSH 10 (FETH 0x01: global, range), FLUSH 11 (0x11) */
	assert_int_equal(frames_of(0, SRNIC_OP_RC_FLUSH, idx, 4), 2);
	for (i = 0; i < 2; i++) {
		const uint8_t *feth;

		p = &E->pkts[idx[i]];
		feth = e2e_hdr(p, SRNIC_HDR_FETH);
		assert_int_equal(p->psn, 10 + i);
		assert_int_equal(p->pay_len, 0);
		assert_ptr_equal(feth, e2e_bth(p) + SRNIC_BTH_LEN);
		assert_int_equal(srnic_ld32(feth), i == 0 ? 0x01 : 0x11);
		assert_ptr_equal(e2e_hdr(p, SRNIC_HDR_RETH), feth + SRNIC_FETH_LEN);
		assert_int_equal(srnic_reth_len(e2e_hdr(p, SRNIC_HDR_RETH)), i == 0 ? 3000 : 0);
		check_rsp0(10 + i);
	}
	/* persistence: no MR has it, no FLUSH asks for it */
	assert_null(srnic_reg_mr(E->p.pd[1], remote, 64,
				 IBV_ACCESS_LOCAL_WRITE | SRNIC_ACCESS_FLUSH_PERSISTENT));
	assert_int_equal(rte_errno, EOPNOTSUPP);
	{
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		srnic_wr_set_flush(&wr, srnic_mr_rkey(rmr), (uintptr_t)remote, 64,
				   SRNIC_FLUSH_PERSISTENT, SRNIC_FLUSH_RANGE);
		assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), EINVAL);
	}
}

/* The error each NAK names, at the requester's CQE; the responder's QP
 * goes to ERR (a class B/C error), nothing stored. */
static void
nak_case(int raccess, uint64_t roff, bool flush, bool bad_key, uint8_t nak,
	 enum ibv_wc_status want)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 300, 400 } };
	struct srnic_mr *lmr, *rmr;
	uint64_t *local;
	uint8_t *remote;
	uint32_t idx[4], rkey;
	const struct ibv_wc *wc;
	const struct e2e_pkt *p;

	e2e_qps_renew(&c);
	local = e2e_buf(0, 64, IBV_ACCESS_LOCAL_WRITE, &lmr);
	remote = e2e_buf(1, 64, raccess, &rmr);
	memset(remote, 0x5A, 64);
	local[0] = 0x1111111111111111ull;
	rkey = srnic_mr_rkey(rmr) ^ (bad_key ? 0x80 : 0);
	if (flush)
		post_flush(1, (uintptr_t)remote + roff, rkey, 8, SRNIC_FLUSH_RANGE);
	else
		post_atomic_write(1, local, lmr, (uintptr_t)remote + roff, rkey, 0);
	wc = e2e_wait_wc(0, 1);
	assert_int_equal(wc->status, want);
	E2E_RUN_UNTIL(srnic_qp_state(E->qp[1]) == IBV_QPS_ERR);
	assert_int_equal(frames_of(1, SRNIC_OP_RC_ACK, idx, 4), 1);
	p = &E->pkts[idx[0]];
	assert_int_equal(p->psn, 300);
	assert_int_equal(srnic_aeth_type(e2e_hdr(p, SRNIC_HDR_AETH)), SRNIC_AETH_NAK);
	assert_int_equal(srnic_aeth_value(e2e_hdr(p, SRNIC_HDR_AETH)), nak);
	for (int i = 0; i < 64; i++)
		assert_int_equal(remote[i], 0x5A);
}

static void
test_atomic_write_misaligned(void **state)
{
	RTE_SET_USED(state);
	nak_case(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 4, false, false,
		 SRNIC_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR);
}

static void
test_atomic_write_bad_rkey(void **state)
{
	RTE_SET_USED(state);
	nak_case(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 8, false, true,
		 SRNIC_NAK_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
}

/* REMOTE_WRITE is what the key must give (rxe), not REMOTE_ATOMIC */
static void
test_atomic_write_no_write_access(void **state)
{
	RTE_SET_USED(state);
	nak_case(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, 8, false, false,
		 SRNIC_NAK_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
}

static void
test_flush_no_flush_access(void **state)
{
	RTE_SET_USED(state);
	nak_case(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0, true, false,
		 SRNIC_NAK_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
}

/* The response lost: A's retry reaches B as a duplicate, answered from
 * the resource, the store not made again (B's CPU rewrote the word
 * between the two). */
static void
test_atomic_write_duplicate(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 50, 60 } };
	struct srnic_qp_stats s0, s1;
	struct srnic_mr *lmr, *rmr;
	uint64_t *local;
	volatile uint64_t *remote;
	const struct ibv_wc *wc;
	uint32_t idx[4];

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	local = e2e_buf(0, 64, IBV_ACCESS_LOCAL_WRITE, &lmr);
	remote = e2e_buf(1, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &rmr);
	local[0] = 0xAAAAAAAAAAAAAAAAull;
	assert_int_equal(srnic_qp_get_stats(E->qp[1], &s0), 0);
	e2e_drop_arm(1, SRNIC_OP_RC_READ_RESP_ONLY, 0, 1);
	post_atomic_write(1, local, lmr, (uintptr_t)&remote[0], srnic_mr_rkey(rmr), 0);
	E2E_RUN_UNTIL(remote[0] == 0xAAAAAAAAAAAAAAAAull);
	remote[0] = 0xBBBBBBBBBBBBBBBBull;
	wc = e2e_wait_wc(0, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_ATOMIC_WRITE);
	assert_int_equal(E->drop.dropped, 1);
	assert_true(remote[0] == 0xBBBBBBBBBBBBBBBBull);
	assert_int_equal(srnic_qp_get_stats(E->qp[1], &s1), 0);
	assert_true(s1.dups_rcvd - s0.dups_rcvd >= 1);
	/* sent twice at PSN 50, answered (after the drop) once */
	assert_int_equal(frames_of(0, SRNIC_OP_RC_ATOMIC_WRITE, idx, 4), 2);
	check_rsp0(50);
}

static struct rte_mempool *pool;

/* A request of opcode op to B's QP at psn, as if A had sent it: RETH
 * (va, rkey, dmalen), paylen bytes of 0x77, the FETH's placement type plt
 * for a FLUSH. */
static void
inject(uint8_t op, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t dmalen, uint32_t paylen,
       uint32_t plt)
{
	static const struct rte_ether_addr mac[2] = {
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 } },
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } },
	};
	const struct srnic_opcode_info *oi = srnic_opcode_info(op);
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct srnic_route r;
	union ibv_gid g;
	uint8_t *bth;

	assert_non_null(m);
	memset(&r, 0, sizeof(r));
	r.src_mac = mac[0];
	r.dst_mac = mac[1];
	r.ip_ver = 4;
	r.ttl = 64;
	assert_int_equal(srnic_dev_gid(E->p.dev[0], SRNIC_GID_INDEX_IP, &g), 0);
	memcpy(r.src_ip, &g.raw[12], 4);
	assert_int_equal(srnic_dev_gid(E->p.dev[1], SRNIC_GID_INDEX_IP, &g), 0);
	memcpy(r.dst_ip, &g.raw[12], 4);
	r.udp_sport = srnic_roce_sport(srnic_qp_num(E->qp[0]), srnic_qp_num(E->qp[1]));
	bth = srnic_pkt_init(m, &r, op, 1);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, srnic_qp_num(E->qp[1]));
	srnic_bth_set_psn(bth, psn);
	srnic_bth_set_ackreq(bth, true);
	srnic_reth_set_va(bth + oi->offset[SRNIC_HDR_RETH], va);
	srnic_reth_set_rkey(bth + oi->offset[SRNIC_HDR_RETH], rkey);
	srnic_reth_set_len(bth + oi->offset[SRNIC_HDR_RETH], dmalen);
	if (oi->mask & SRNIC_OPM_FETH)
		srnic_feth_set(bth + oi->offset[SRNIC_HDR_FETH], plt, SRNIC_FETH_SEL_RANGE);
	if (paylen > 0)
		memset(rte_pktmbuf_append(m, (uint16_t)paylen), 0x77, paylen);
	assert_int_equal(srnic_pkt_finish(m, pool), 0);
	assert_int_equal(rte_eth_tx_burst(E->p.port[0], 0, &m, 1), 1);
}

/* Each malformed request: B NAKs it Invalid Request at its PSN, stores
 * nothing, and its QP goes to ERR. */
static void
test_malformed(void **state)
{
	static const struct {
		uint8_t op;
		uint32_t dmalen, paylen, plt;
	} bad[] = {
		{ SRNIC_OP_RC_ATOMIC_WRITE, 8, 4, 0 },   /* 4 bytes carried */
		{ SRNIC_OP_RC_ATOMIC_WRITE, 16, 16, 0 }, /* 16 bytes said and carried */
		{ SRNIC_OP_RC_ATOMIC_WRITE, 4, 8, 0 },   /* 4 said */
		{ SRNIC_OP_RC_FLUSH, 8, 0, 4 },          /* placement type 4: none */
	};
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 500, 600 } };
	struct srnic_mr *rmr;
	uint8_t *remote;
	unsigned int i, k;

	RTE_SET_USED(state);
	for (i = 0; i < RTE_DIM(bad); i++) {
		uint32_t idx[4];
		const struct e2e_pkt *p;

		e2e_qps_renew(&c);
		remote = e2e_buf(1, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					SRNIC_ACCESS_FLUSH_GLOBAL, &rmr);
		memset(remote, 0x5A, 64);
		e2e_reset();
		inject(bad[i].op, 500, (uintptr_t)remote, srnic_mr_rkey(rmr), bad[i].dmalen,
		       bad[i].paylen, bad[i].plt);
		E2E_RUN_UNTIL(srnic_qp_state(E->qp[1]) == IBV_QPS_ERR);
		E2E_RUN_UNTIL(frames_of(1, SRNIC_OP_RC_ACK, idx, 4) == 1);
		p = &E->pkts[idx[0]];
		assert_int_equal(p->psn, 500);
		assert_int_equal(srnic_aeth_type(e2e_hdr(p, SRNIC_HDR_AETH)), SRNIC_AETH_NAK);
		assert_int_equal(srnic_aeth_value(e2e_hdr(p, SRNIC_HDR_AETH)),
				 SRNIC_NAK_INVALID_REQ);
		for (k = 0; k < 64; k++)
			assert_int_equal(remote[k], 0x5A);
	}
}

static int
group_setup(void **state)
{
	if (e2e_group_setup(state) != 0)
		return -1;
	pool = rte_pktmbuf_pool_create("e2e_awf", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
	return pool == NULL ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_atomic_write, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_flush, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_misaligned, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_bad_rkey, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_no_write_access, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_flush_no_flush_access, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_duplicate, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_malformed, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_awf", tests, group_setup,
					   e2e_group_teardown);
}
