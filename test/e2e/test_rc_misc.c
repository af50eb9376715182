/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * More RC behaviour end to end: SQ/RQ ring wrap and full queues, several
 * QP pairs at once on shared CQs, fences, solicited events, RNR NAK and
 * retry, PSN wrap inside multi-packet messages, local protection errors,
 * sq_sig_all, and a long pipelined mix of every opcode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "e2e_fixture.h"


static struct e2e_bufs bufs;

#define BUF_LEN (1u << 20)

static void
fresh(const struct e2e_conf *c)
{
	e2e_qps_renew(c);
	e2e_bufs_new(&bufs, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 1, 2);
}

static struct ibv_sge
lsge(uint32_t off, uint32_t len)
{
	return (struct ibv_sge){ .addr = (uintptr_t)bufs.l + off, .length = len,
				 .lkey = srnic_mr_lkey(bufs.lmr) };
}

/* Small SQ and RQ used many times round: slots are reused correctly, and
 * a full queue refuses with ENOMEM. */
static void
test_ring_wrap(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 5, 6 }, .max_send_wr = 4,
			      .max_recv_wr = 4 };
	uint32_t round, i, n = 0;

	RTE_SET_USED(state);
	fresh(&c);
	for (round = 0; round < 25; round++) {
		for (i = 0; i < 4; i++) {
			struct ibv_sge s = lsge((n % 64) * 2048, 1500 + i);

			e2e_bufs_recv(&bufs, E->qp[1], 1000 + n, (n % 64) * 2048, 2048);
			e2e_post_op(0, IBV_WR_SEND, n, &s, 1, 0, 0, IBV_SEND_SIGNALED);
			n++;
		}
		/* the queues are full now */
		{
			struct ibv_sge s = lsge(0, 8);
			struct ibv_send_wr wr, *bad = NULL;
			struct ibv_recv_wr rwr, *rbad = NULL;

			memset(&wr, 0, sizeof(wr));
			wr.sg_list = &s;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_SEND;
			assert_int_equal(srnic_post_send(E->qp[0], &wr, &bad), ENOMEM);
			assert_ptr_equal(bad, &wr);
			memset(&rwr, 0, sizeof(rwr));
			assert_int_equal(srnic_post_recv(E->qp[1], &rwr, &rbad), ENOMEM);
		}
		e2e_wait_wc(0, n);
		e2e_wait_wc(1, n);
	}
	for (i = 0; i < n; i++) {
		const struct ibv_wc *s = &E->wc[0][i], *r = &E->wc[1][i];

		assert_int_equal(s->wr_id, i);
		assert_int_equal(s->status, IBV_WC_SUCCESS);
		assert_int_equal(r->wr_id, 1000 + i);
		assert_int_equal(r->status, IBV_WC_SUCCESS);
		assert_int_equal(r->byte_len, 1500 + i % 4);
	}
	/* the last 64 messages are in place */
	for (i = n - 64; i < n; i++)
		assert_memory_equal(bufs.v + (i % 64) * 2048, bufs.l + (i % 64) * 2048,
				    1500 + i % 4);
}

/* Several QP pairs on the same two CQs, traffic interleaved: every
 * completion names its QP and every byte lands where its QP put it. */
static void
test_many_qps(void **state)
{
	enum { NQ = 6, PER = 20, LEN = 3000 };
	struct srnic_qp *qa[NQ], *qb[NQ];
	struct srnic_pair_qp_conf pc = { .path_mtu = IBV_MTU_1024, .max_rd_atomic = 8,
					 .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
					 .min_rnr_timer = 1 };
	uint32_t got[2][NQ] = { { 0 } };
	uint32_t q, i;

	RTE_SET_USED(state);
	fresh(&(struct e2e_conf){ .mtu = IBV_MTU_1024 });
	for (q = 0; q < NQ; q++) {
		struct srnic_qp_init_attr ia = { .send_cq = E->cq[0], .recv_cq = E->cq[0],
						 .max_send_wr = 64, .max_recv_wr = 64,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .qp_type = IBV_QPT_RC };

		qa[q] = srnic_create_qp(E->p.pd[0], &ia);
		ia.send_cq = ia.recv_cq = E->cq[1];
		qb[q] = srnic_create_qp(E->p.pd[1], &ia);
		assert_non_null(qa[q]);
		assert_non_null(qb[q]);
		pc.psn[0] = 0xFFFFF0 + q;  /* some wrap inside the run */
		pc.psn[1] = 100 * q;
		assert_int_equal(srnic_pair_connect(&E->p, qa[q], qb[q], &pc), 0);
	}
	for (i = 0; i < PER; i++) {
		for (q = 0; q < NQ; q++) {
			uint32_t slot = q * PER + i, off = slot * LEN;
			struct ibv_sge s = lsge(off, LEN), r = {
				.addr = (uintptr_t)bufs.v + off, .length = LEN,
				.lkey = srnic_mr_lkey(bufs.vmr) };
			struct ibv_send_wr wr, *bad;
			struct ibv_recv_wr rwr, *rbad;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = slot;
			wr.sg_list = &s;
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_SIGNALED;
			switch (i % 3) {
			case 0:
				memset(&rwr, 0, sizeof(rwr));
				rwr.wr_id = slot;
				rwr.sg_list = &r;
				rwr.num_sge = 1;
				assert_int_equal(srnic_post_recv(qb[q], &rwr, &rbad), 0);
				wr.opcode = IBV_WR_SEND;
				break;
			case 1:
				wr.opcode = IBV_WR_RDMA_WRITE;
				wr.wr.rdma.remote_addr = (uintptr_t)bufs.r + off;
				wr.wr.rdma.rkey = srnic_mr_rkey(bufs.rmr);
				break;
			default:
				wr.opcode = IBV_WR_RDMA_READ;
				wr.wr.rdma.remote_addr = (uintptr_t)bufs.r + BUF_LEN / 2 + off;
				wr.wr.rdma.rkey = srnic_mr_rkey(bufs.rmr);
				break;
			}
			assert_int_equal(srnic_post_send(qa[q], &wr, &bad), 0);
		}
	}
	E2E_RUN_UNTIL(E->nwc[0] >= NQ * PER && E->nwc[1] >= NQ * ((PER + 2) / 3));
	e2e_settle(8);
	assert_int_equal(E->nwc[0], NQ * PER);
	assert_int_equal(E->nwc[1], NQ * ((PER + 2) / 3));
	for (i = 0; i < E->nwc[0]; i++) {
		const struct ibv_wc *w = &E->wc[0][i];

		q = (uint32_t)w->wr_id / PER;
		assert_int_equal(w->status, IBV_WC_SUCCESS);
		assert_int_equal(w->qp_num, srnic_qp_num(qa[q]));
		/* per QP, completions in posting order */
		assert_int_equal(w->wr_id % PER, got[0][q]);
		got[0][q]++;
	}
	for (i = 0; i < E->nwc[1]; i++) {
		const struct ibv_wc *w = &E->wc[1][i];

		q = (uint32_t)w->wr_id / PER;
		assert_int_equal(w->status, IBV_WC_SUCCESS);
		assert_int_equal(w->opcode, IBV_WC_RECV);
		assert_int_equal(w->qp_num, srnic_qp_num(qb[q]));
		assert_int_equal(w->src_qp, srnic_qp_num(qa[q]));
		assert_int_equal(w->byte_len, LEN);
	}
	for (q = 0; q < NQ; q++) {
		for (i = 0; i < PER; i++) {
			uint32_t off = (q * PER + i) * LEN;

			if (i % 3 == 0)
				assert_memory_equal(bufs.v + off, bufs.l + off, LEN);
			else if (i % 3 == 1)
				assert_memory_equal(bufs.r + off, bufs.l + off, LEN);
			else
				assert_memory_equal(bufs.l + off, bufs.r + BUF_LEN / 2 + off, LEN);
		}
	}
	for (q = 0; q < NQ; q++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		srnic_modify_qp(qa[q], &a, IBV_QP_STATE);
		srnic_modify_qp(qb[q], &a, IBV_QP_STATE);
	}
	e2e_settle(8);
	for (q = 0; q < NQ; q++) {
		assert_int_equal(srnic_destroy_qp(qa[q]), 0);
		assert_int_equal(srnic_destroy_qp(qb[q]), 0);
	}
}

/* A fenced WRITE after a READ waits for the READ's response. */
static void
test_fence(void **state)
{
	uint32_t i, last_resp = 0, write_at = 0;

	RTE_SET_USED(state);
	fresh(&(struct e2e_conf){ .mtu = IBV_MTU_1024 });
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, 8192, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 65536, 100, 65536,
		      IBV_SEND_SIGNALED | IBV_SEND_FENCE);
	e2e_wait_wc(0, 2);
	e2e_settle(4);
	for (i = 0; i < E->npkts; i++) {
		if (E->pkts[i].opcode == SRNIC_OP_RC_READ_RESP_LAST)
			last_resp = i;
		if (E->pkts[i].opcode == SRNIC_OP_RC_WRITE_ONLY)
			write_at = i;
	}
	assert_true(write_at > last_resp);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][1].wr_id, 2);
	assert_memory_equal(bufs.l, bufs.r, 8192);
	assert_memory_equal(bufs.r + 65536, bufs.l + 65536, 100);
}

/* IBV_SEND_SOLICITED sets SE on the last packet of a SEND only. */
static void
test_solicited(void **state)
{
	struct ibv_sge s;
	uint32_t i, se = 0;

	RTE_SET_USED(state);
	fresh(&(struct e2e_conf){ .mtu = IBV_MTU_1024 });
	e2e_bufs_recv(&bufs, E->qp[1], 1, 0, 4096);
	e2e_bufs_recv(&bufs, E->qp[1], 2, 4096, 4096);
	s = lsge(0, 3000);
	e2e_post_op(0, IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	e2e_post_op(0, IBV_WR_SEND, 2, &s, 1, 0, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	e2e_wait_wc(1, 2);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side != 0)
			continue;
		if (srnic_bth_se(e2e_bth(k))) {
			assert_int_equal(k->opcode, SRNIC_OP_RC_SEND_LAST);
			assert_int_equal(k->psn, 2);  /* PSNs 0..2 are the first SEND */
			se++;
		}
	}
	assert_int_equal(se, 1);
}

/* No RECV posted: RNR NAK, the requester waits and retries; a RECV posted
 * later lets the SEND through. With rnr_retry 0: IBV_WC_RNR_RETRY_EXC_ERR. */
static void
test_rnr(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 40, 50 } };
	struct ibv_sge s;
	uint32_t i, rnr = 0;
	int k;

	RTE_SET_USED(state);
	fresh(&c);
	s = lsge(0, 2500);
	e2e_post_op(0, IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED);
	for (k = 0; k < 200; k++)
		e2e_poll();
	assert_int_equal(E->nwc[0], 0);
	e2e_bufs_recv(&bufs, E->qp[1], 7, 0, 4096);
	e2e_wait_wc(0, 1);
	e2e_wait_wc(1, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, 2500);
	assert_memory_equal(bufs.v, bufs.l, 2500);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *p = &E->pkts[i];

		if (p->opcode == SRNIC_OP_RC_ACK &&
		    srnic_aeth_type(e2e_hdr(p, SRNIC_HDR_AETH)) == SRNIC_AETH_RNR_NAK) {
			assert_int_equal(p->psn, 40);
			assert_int_equal(srnic_aeth_value(e2e_hdr(p, SRNIC_HDR_AETH)), 1);
			rnr++;
		}
	}
	assert_true(rnr >= 1);

	c.rnr_retry[0] = E2E_RNR_RETRY_0;
	fresh(&c);
	s = lsge(0, 100);
	e2e_post_op(0, IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED);
	e2e_post_op(0, IBV_WR_SEND, 2, &s, 1, 0, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	assert_int_equal(E->wc[0][0].status, IBV_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(E->wc[0][1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
}

/* RNR at the LAST packet of a multi-packet WRITE_WITH_IMM: the first
 * packets are placed, the LAST is retried once a RECV is there. */
static void
test_rnr_write_imm(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 40, 50 } };
	struct ibv_sge s;
	struct ibv_send_wr wr;
	int k;

	RTE_SET_USED(state);
	fresh(&c);
	s = lsge(0, 5000);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = rte_cpu_to_be_32(0x1234);
	wr.wr.rdma.remote_addr = (uintptr_t)bufs.r + 8;
	wr.wr.rdma.rkey = srnic_mr_rkey(bufs.rmr);
	e2e_post_send(0, &wr);
	for (k = 0; k < 200; k++)
		e2e_poll();
	assert_int_equal(E->nwc[0], 0);
	e2e_bufs_recv(&bufs, E->qp[1], 9, 0, 0);
	e2e_wait_wc(0, 1);
	e2e_wait_wc(1, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(E->wc[1][0].imm_data, rte_cpu_to_be_32(0x1234));
	assert_int_equal(E->wc[1][0].byte_len, 5000);
	assert_memory_equal(bufs.r + 8, bufs.l, 5000);
}

/* PSN wrap inside multi-packet SEND and WRITE. */
static void
test_psn_wrap(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_256, .psn = { 0xFFFFFA, 0xFFFFFF } };
	struct ibv_sge s;
	uint32_t i, n = 0;

	RTE_SET_USED(state);
	fresh(&c);
	e2e_bufs_recv(&bufs, E->qp[1], 1, 0, 4096);
	s = lsge(0, 3000);   /* 12 packets: 0xFFFFFA .. 0x000005 */
	e2e_post_op(0, IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 8192, 3000, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 3, 16384, 3000, 65536, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 3);
	e2e_wait_wc(1, 1);
	for (i = 0; i < 3; i++)
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.v, bufs.l, 3000);
	assert_memory_equal(bufs.r, bufs.l + 8192, 3000);
	assert_memory_equal(bufs.l + 16384, bufs.r + 65536, 3000);
	for (i = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 0) {
			assert_int_equal(E->pkts[i].psn, (0xFFFFFA + n) & SRNIC_PSN_MASK);
			n++;
		}
	assert_int_equal(n, 12 + 12 + 1);
}

/* Requester-side errors: bad lkey, READ into memory without local write. */
static void
test_local_errors(void **state)
{
	struct srnic_mr *romr;
	uint8_t *ro;
	struct ibv_sge s;

	RTE_SET_USED(state);
	fresh(&(struct e2e_conf){ .mtu = IBV_MTU_1024 });
	s = lsge(0, 100);
	s.lkey ^= 0x80; /* stale generation */
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)bufs.r, srnic_mr_rkey(bufs.rmr),
		    IBV_SEND_SIGNALED);
	s = lsge(0, 100);
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 2, &s, 1, (uintptr_t)bufs.r, srnic_mr_rkey(bufs.rmr), 0);
	e2e_wait_wc(0, 2);
	assert_int_equal(E->wc[0][0].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(E->wc[0][1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	e2e_settle(4);
	assert_int_equal(E->npkts, 0); /* nothing went on the wire */

	fresh(&(struct e2e_conf){ .mtu = IBV_MTU_1024 });
	ro = e2e_buf(0, 4096, 0, &romr);
	s = (struct ibv_sge){ .addr = (uintptr_t)ro, .length = 100, .lkey = srnic_mr_lkey(romr) };
	e2e_post_op(0, IBV_WR_RDMA_READ, 1, &s, 1, (uintptr_t)bufs.r, srnic_mr_rkey(bufs.rmr), 0);
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(ro[0], 0);
	/* lengths past the MR */
	fresh(&(struct e2e_conf){ .mtu = IBV_MTU_1024 });
	s = lsge(BUF_LEN - 10, 11);
	e2e_post_op(0, IBV_WR_SEND, 1, &s, 1, 0, 0, 0);
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_LOC_PROT_ERR);
}

/* sq_sig_all: every WR completes with a CQE, flags or not. */
static void
test_sig_all(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .sq_sig_all = true };
	struct ibv_sge s;
	int i;

	RTE_SET_USED(state);
	fresh(&c);
	for (i = 0; i < 5; i++) {
		s = lsge(i * 100, 100);
		e2e_post_op(0, IBV_WR_RDMA_WRITE, i, &s, 1, (uintptr_t)bufs.r + i * 100,
			    srnic_mr_rkey(bufs.rmr), 0);
	}
	e2e_wait_wc(0, 5);
	e2e_settle(4);
	assert_int_equal(E->nwc[0], 5);
	for (i = 0; i < 5; i++)
		assert_int_equal(E->wc[0][i].wr_id, i);
}

/* A long pipelined mix of every opcode and size: completions in order,
 * every byte and every atomic result right. */
static void
test_pipelined_mix(void **state)
{
	enum { N = 600 };
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { 0xFFFF00, 77 }, .max_send_wr = 1024,
			      .max_rd_atomic = { 8, 16 } };
	uint32_t lens[N], i, nrecv = 0, sig = 0, fadds = 0;
	uint8_t ops[N];
	uint64_t *counter;
	uint32_t seed = 12345;

	RTE_SET_USED(state);
	fresh(&c);
	counter = (uint64_t *)(bufs.r + BUF_LEN - 64);
	*counter = 0;
	for (i = 0; i < N; i++) {
		uint32_t off = (i % 64) * 8192, aoff = BUF_LEN - 8 * 1024 + (i % 64) * 8;
		unsigned int flags;

		seed = seed * 1103515245u + 12345;
		ops[i] = (uint8_t)((seed >> 16) % 6);
		lens[i] = (seed >> 8) % 8129; /* slot 63 of the READ half ends before the counter */
		/* the last of a batch is signaled: its CQE says the batch is done */
		flags = (i % 3 == 0 || ops[i] == 5 || i % 64 == 63 || i == N - 1) ?
			IBV_SEND_SIGNALED : 0;
		sig += flags != 0;
		if (ops[i] <= 1)
			e2e_bufs_recv(&bufs, E->qp[1], i, off, 8192);
		if (ops[i] == 3)
			e2e_bufs_recv(&bufs, E->qp[1], i, 0, 0);
		nrecv += ops[i] <= 1 || ops[i] == 3;
		fadds += ops[i] == 5;
		e2e_bufs_mix_post(&bufs, ops[i], i, ops[i] == 5 ? aoff : off,
				  ops[i] == 5 ? 8 : lens[i], ops[i] == 4 ? BUF_LEN / 2 + off : off,
				  counter, flags);
		/* let it run sometimes, so data of the same slot is checked
		 * before being reused: wait for everything every 64 WRs */
		if (i % 64 == 63 || i == N - 1) {
			uint32_t j;

			e2e_wait_wc(0, sig);
			e2e_wait_wc(1, nrecv);
			for (j = i - (i % 64); j <= i; j++) {
				uint32_t o = (j % 64) * 8192;

				switch (ops[j]) {
				case 0:
				case 1:
					assert_memory_equal(bufs.v + o, bufs.l + o, lens[j]);
					break;
				case 2:
				case 3:
					assert_memory_equal(bufs.r + o, bufs.l + o, lens[j]);
					break;
				case 4:
					assert_memory_equal(bufs.l + o, bufs.r + BUF_LEN / 2 + o,
							    lens[j]);
					break;
				default:
					break;
				}
			}
			/* refill what READs overwrote */
			srnic_test_fill(bufs.l, BUF_LEN / 2, i);
		}
	}
	e2e_settle(4);
	e2e_check_mix_wcs(sig, nrecv, lens, ops);
	assert_int_equal(*counter, fadds);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ring_wrap, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_many_qps, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_fence, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_solicited, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rnr, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rnr_write_imm, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_psn_wrap, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_local_errors, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_sig_all, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_pipelined_mix, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_misc", tests, e2e_group_setup,
					   e2e_group_teardown);
}
