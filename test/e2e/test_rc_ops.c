/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Every RC opcode end to end, data checked byte for byte: SEND,
 * SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM,
 * RDMA_READ for sizes 0, 1, PMTU-1, PMTU, PMTU+1 and 1 MiB at PMTU 256,
 * 1024 and 4096, with 1 and 3 SGEs on both sides; atomics; inline SEND.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "e2e_fixture.h"

#define BIG (1u << 20)
#define SLACK 4096
#define POISON 0xEE

struct bufs {
	uint8_t *local;             /* A: gather/scatter list of the requester */
	uint8_t *remote;            /* B: RDMA target */
	uint8_t *recv;              /* B: RECV buffers */
	uint8_t *msg;               /* expected message (not registered) */
	struct srnic_mr *lmr, *rmr, *vmr;
};

static struct bufs B;

static void
bufs_alloc(void)
{
	int racc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

	B.local = e2e_buf(0, BIG + SLACK, IBV_ACCESS_LOCAL_WRITE, &B.lmr);
	B.remote = e2e_buf(1, BIG + SLACK, racc, &B.rmr);
	B.recv = e2e_buf(1, BIG + SLACK, IBV_ACCESS_LOCAL_WRITE, &B.vmr);
	if (B.msg == NULL)
		B.msg = malloc(BIG + SLACK);
	assert_non_null(B.msg);
}

/* Split len into n uneven pieces placed with gaps in a buffer; returns the
 * footprint. Pieces: 1/7, 1/2, rest for the sender; 1/3, 1/4 + 1, rest +
 * slack for a receiver (recv != 0). */
static void
split(uint8_t *base, uint32_t lkey, uint32_t len, int n, bool recv, struct ibv_sge *sge)
{
	static const uint32_t gap[3] = { 0, 13, 29 };
	uint64_t off = 0;
	int i;

	if (n == 1) {
		sge[0].addr = (uintptr_t)base + 3;
		sge[0].length = len + (recv ? 16 : 0);
		sge[0].lkey = lkey;
		return;
	}
	for (i = 0; i < 3; i++) {
		uint32_t l;

		if (!recv)
			l = i == 0 ? len / 7 : i == 1 ? len / 2 : len - len / 7 - len / 2;
		else
			l = i == 0 ? len / 3 : i == 1 ? len / 4 + 1 :
			    (uint32_t)((int64_t)len - len / 3 - (len / 4 + 1) + 16);
		off += gap[i];
		sge[i].addr = (uintptr_t)base + off;
		sge[i].length = l;
		sge[i].lkey = lkey;
		off += l;
	}
}

/* Check that the scatter list holds msg[0, len) and that every byte of
 * base[0, footprint) outside it is still POISON. */
static void
check_scatter(const uint8_t *base, const struct ibv_sge *sge, int n, const uint8_t *msg,
	      uint32_t len)
{
	uint64_t done = 0, pos = 0, end;
	int i;

	for (i = 0; i < n; i++) {
		uint64_t off = sge[i].addr - (uintptr_t)base;
		uint32_t take = (uint32_t)RTE_MIN((uint64_t)sge[i].length, len - done);
		uint64_t j;

		for (j = pos; j < off; j++)
			if (base[j] != POISON)
				fail_msg("gap byte %" PRIu64 " overwritten", j);
		if (take > 0)
			assert_memory_equal(base + off, msg + done, take);
		for (j = off + take; j < off + sge[i].length; j++)
			if (base[j] != POISON)
				fail_msg("byte %" PRIu64 " past the message overwritten", j);
		done += take;
		pos = off + sge[i].length;
	}
	end = pos + 64;
	for (; pos < end; pos++)
		if (base[pos] != POISON)
			fail_msg("byte %" PRIu64 " after the list overwritten", pos);
	assert_int_equal(done, len);
}

static void
gather(const struct ibv_sge *sge, int n, uint8_t *msg)
{
	int i;

	for (i = 0; i < n; i++) {
		memcpy(msg, (void *)(uintptr_t)sge[i].addr, sge[i].length);
		msg += sge[i].length;
	}
}

static const char *
op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	default: return "?";
	}
}

static void
transfer(enum ibv_wr_opcode op, uint32_t len, int nsge, uint32_t seed)
{
	bool is_send = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
	bool imm = op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool read = op == IBV_WR_RDMA_READ;
	uint32_t npkts = len == 0 ? 1 : (len + E->pmtu - 1) / E->pmtu;
	uint32_t imm_be = rte_cpu_to_be_32(0xC0DE0000u | seed);
	struct ibv_sge lsge[3], rsge[3];
	struct ibv_send_wr wr, *bad;
	int64_t rt0;
	uint64_t raddr = (uintptr_t)B.remote + 5;
	const struct ibv_wc *wc;
	uint32_t i, n, idx[8];

	e2e_reset();
	split(B.local, srnic_mr_lkey(B.lmr), len, nsge, false, lsge);
	if (read) {
		memset(B.local, POISON, BIG + SLACK);
		srnic_test_fill(B.remote, BIG + SLACK, seed);
		memcpy(B.msg, (uint8_t *)(uintptr_t)raddr, len);
	} else {
		srnic_test_fill(B.local, BIG + SLACK, seed);
		memset(B.remote, POISON, BIG + SLACK);
		memset(B.recv, POISON, BIG + SLACK);
		gather(lsge, nsge, B.msg);
	}
	if (is_send || op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		split(B.recv, srnic_mr_lkey(B.vmr), len, is_send ? nsge : 1, true, rsge);
		e2e_post_rx(1, 0x5000 + seed, rsge, is_send ? nsge : 0);
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1000 + seed;
	wr.sg_list = lsge;
	wr.num_sge = nsge;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = imm_be;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = srnic_mr_rkey(B.rmr);
	rt0 = srnic_dev_stat(E->p.dev[0], "retransmit_pkts");
	assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);

	wc = e2e_wait_wc(0, 1);
	if (is_send || imm)
		e2e_wait_wc(1, 1);
	e2e_settle(4);

	/* requester */
	assert_int_equal(E->nwc[0], 1);
	if (wc->status != IBV_WC_SUCCESS)
		e2e_dump();
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, 0x1000 + seed);
	assert_int_equal(wc->opcode, is_send ? IBV_WC_SEND : read ? IBV_WC_RDMA_READ
								 : IBV_WC_RDMA_WRITE);
	if (read)
		assert_int_equal(wc->byte_len, len);

	/* responder */
	if (is_send || imm) {
		const struct ibv_wc *r = &E->wc[1][0];

		assert_int_equal(E->nwc[1], 1);
		assert_int_equal(r->status, IBV_WC_SUCCESS);
		assert_int_equal(r->wr_id, 0x5000 + seed);
		assert_int_equal(r->opcode, is_send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM);
		assert_int_equal(r->byte_len, len);
		assert_int_equal(r->qp_num, srnic_qp_num(E->qp[1]));
		if (imm) {
			assert_true(r->wc_flags & IBV_WC_WITH_IMM);
			assert_int_equal(r->imm_data, imm_be);
		} else {
			assert_false(r->wc_flags & IBV_WC_WITH_IMM);
		}
	} else {
		assert_int_equal(E->nwc[1], 0);
	}

	/* data */
	if (read) {
		check_scatter(B.local, lsge, nsge, B.msg, len);
	} else if (is_send) {
		check_scatter(B.recv, rsge, nsge, B.msg, len);
	} else {
		uint8_t *dst = (uint8_t *)(uintptr_t)raddr;

		assert_memory_equal(dst, B.msg, len);
		for (i = 0; i < 5; i++)
			assert_int_equal(B.remote[i], POISON);
		for (i = 0; i < 64; i++)
			assert_int_equal(dst[len + i], POISON);
	}

	/* the request packets: count and consecutive PSNs. A loaded host can
	 * starve the test's thread past the ACK timeout, and the requester
	 * then rightly goes back and resends (a PSN at or before the next
	 * new one): such packets are not counted, and are allowed only if
	 * the requester counted a retransmission. */
	n = 0;
	{
		uint32_t first = UINT32_MAX, j, resent = 0;

		for (j = 0; j < E->npkts; j++) {
			const struct e2e_pkt *k = &E->pkts[j];

			if (k->side != 0)
				continue;
			assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
			if (first == UINT32_MAX)
				first = k->psn;
			if (n > 0 && srnic_psn_cmp(k->psn, srnic_psn_add(first, n)) < 0) {
				resent++;
				continue;
			}
			assert_int_equal(k->psn, srnic_psn_add(first, n));
			n++;
		}
		if (resent > 0)
			assert_true(srnic_dev_stat(E->p.dev[0], "retransmit_pkts") > rt0);
		else if (read)
			assert_int_equal(e2e_pkts_from(1, idx, RTE_DIM(idx)), RTE_MIN(npkts, 8u));
	}
	assert_int_equal(n, read ? 1 : npkts);
}

static void
all_ops(enum ibv_mtu mtu)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	struct e2e_conf c = { .mtu = mtu, .psn = { 100, 200 } };
	uint32_t pmtu = 128u << mtu;
	uint32_t sizes[] = { 0, 1, pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 17, BIG };
	unsigned int o, s, g, seed = 0;

	e2e_qps_renew(&c);
	bufs_alloc();
	for (o = 0; o < RTE_DIM(ops); o++)
		for (s = 0; s < RTE_DIM(sizes); s++)
			for (g = 1; g <= 3; g += 2) {
				print_message("%s %u bytes, %u SGE, PMTU %u\n", op_name(ops[o]),
					      sizes[s], g, pmtu);
				transfer(ops[o], sizes[s], (int)g, ++seed);
			}
}

static void
test_ops_mtu256(void **state)
{
	RTE_SET_USED(state);
	all_ops(IBV_MTU_256);
}

static void
test_ops_mtu1024(void **state)
{
	RTE_SET_USED(state);
	all_ops(IBV_MTU_1024);
}

static void
test_ops_mtu4096(void **state)
{
	RTE_SET_USED(state);
	all_ops(IBV_MTU_4096);
}

/* ---- atomics ---- */

static const struct ibv_wc *
atomic_op(enum ibv_wr_opcode op, uint64_t *local, struct srnic_mr *lmr, uint64_t *remote,
	  struct srnic_mr *rmr, uint64_t cmp_add, uint64_t swap, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = 8, .lkey = srnic_mr_lkey(lmr) };
	const struct ibv_wc *wc;

	e2e_post_atomic(0, op, wr_id, &sge, (uintptr_t)remote, srnic_mr_rkey(rmr), cmp_add, swap);
	wc = e2e_wait_wc(0, (uint32_t)wr_id);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, wr_id);
	assert_int_equal(wc->opcode, op == IBV_WR_ATOMIC_FETCH_AND_ADD ? IBV_WC_FETCH_ADD
								       : IBV_WC_COMP_SWAP);
	return wc;
}

static void
test_atomics(void **state)
{
	struct srnic_mr *lmr, *rmr;
	uint64_t *local, *remote;

	RTE_SET_USED(state);
	local = e2e_buf(0, 64, IBV_ACCESS_LOCAL_WRITE, &lmr);
	remote = e2e_buf(1, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, &rmr);
	remote[1] = 0x0123456789ABCDEFull;

	/* FETCH_AND_ADD: original back, sum remote (with a carry across words) */
	local[0] = 0xDEAD;
	atomic_op(IBV_WR_ATOMIC_FETCH_AND_ADD, &local[0], lmr, &remote[1], rmr,
		  0x00000001FFFFFFFFull, 0, 1);
	assert_int_equal(local[0], 0x0123456789ABCDEFull);
	assert_int_equal(remote[1], 0x0123456789ABCDEFull + 0x00000001FFFFFFFFull);
	assert_int_equal(remote[0], 0);
	assert_int_equal(remote[2], 0);

	/* CMP_AND_SWP, compare matches: swapped */
	remote[1] = 1000;
	local[1] = 0;
	atomic_op(IBV_WR_ATOMIC_CMP_AND_SWP, &local[1], lmr, &remote[1], rmr, 1000, 0xFEEDull, 2);
	assert_int_equal(local[1], 1000);
	assert_int_equal(remote[1], 0xFEED);

	/* CMP_AND_SWP, compare differs: unchanged, original back */
	local[2] = 0;
	atomic_op(IBV_WR_ATOMIC_CMP_AND_SWP, &local[2], lmr, &remote[1], rmr, 1000, 0xBAD, 3);
	assert_int_equal(local[2], 0xFEED);
	assert_int_equal(remote[1], 0xFEED);

	/* FETCH_AND_ADD wraps modulo 2^64 */
	remote[3] = UINT64_MAX;
	atomic_op(IBV_WR_ATOMIC_FETCH_AND_ADD, &local[3], lmr, &remote[3], rmr, 2, 0, 4);
	assert_int_equal(local[3], UINT64_MAX);
	assert_int_equal(remote[3], 1);

	/* byte_len of an atomic is 8 */
	assert_int_equal(E->wc[0][0].byte_len, 8);
}

/* ---- inline ---- */

static void
test_inline_send(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 1, 2 }, .max_inline = 256 };
	static const uint32_t sizes[] = { 0, 1, 100, 255, 256 };
	struct srnic_mr *vmr;
	uint8_t *recv;
	unsigned int s;

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	recv = e2e_buf(1, 4096, IBV_ACCESS_LOCAL_WRITE, &vmr);
	for (s = 0; s < RTE_DIM(sizes); s++) {
		uint8_t data[256], want[256];
		struct ibv_sge sge[3], rsge = { .addr = (uintptr_t)recv, .length = 1024,
						.lkey = srnic_mr_lkey(vmr) };
		struct ibv_send_wr wr, *bad;
		uint32_t len = sizes[s];
		int nsge = s % 2 == 0 ? 1 : 3;
		const struct ibv_wc *wc;

		e2e_reset();
		memset(recv, POISON, 4096);
		srnic_test_fill(data, sizeof(data), 77 + s);
		memcpy(want, data, sizeof(want));
		/* unregistered memory, lkey 0: inline data is copied at post */
		if (nsge == 1) {
			sge[0] = (struct ibv_sge){ .addr = (uintptr_t)data, .length = len };
		} else {
			sge[0] = (struct ibv_sge){ .addr = (uintptr_t)data, .length = len / 3 };
			sge[1] = (struct ibv_sge){ .addr = (uintptr_t)data + len / 3,
						   .length = len / 2 };
			sge[2] = (struct ibv_sge){ .addr = (uintptr_t)data + len / 3 + len / 2,
						   .length = len - len / 3 - len / 2 };
		}
		e2e_post_rx(1, 900 + s, &rsge, 1);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 800 + s;
		wr.sg_list = sge;
		wr.num_sge = nsge;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
		assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
		memset(data, 0, sizeof(data)); /* the buffer is ours again */
		wc = e2e_wait_wc(0, 1);
		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_SEND);
		assert_int_equal(wc->wr_id, 800 + s);
		wc = e2e_wait_wc(1, 1);
		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_RECV);
		assert_int_equal(wc->byte_len, len);
		assert_int_equal(wc->wr_id, 900 + s);
		assert_memory_equal(recv, want, len);
		assert_int_equal(recv[len], POISON);
	}
	/* more than max_inline is refused at post */
	{
		uint8_t data[300] = { 0 };
		struct ibv_sge sge = { .addr = (uintptr_t)data, .length = 257 };
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_INLINE;
		assert_int_not_equal(srnic_post_send(E->qp[0], &wr, &bad), 0);
		assert_ptr_equal(bad, &wr);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ops_mtu256, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ops_mtu1024, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ops_mtu4096, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_atomics, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_inline_send, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_ops", tests, e2e_group_setup,
					   e2e_group_teardown);
}
