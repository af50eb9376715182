/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soak: SEND, WRITE, READ and FETCH_ADD on several QPs over a link that
 * drops 1%, duplicates 0.5%, reorders 0.5% and corrupts 0.1% of packets in
 * each direction. Every WR is signaled: each must complete exactly once,
 * successfully and in order per QP; every destination byte is checked;
 * fetch-and-add results and totals must be exact (executed once); the
 * retransmission counters must show the recovery happened.
 *
 *   SRNIC_SOAK_MSGS   messages over all QPs (default 200000)
 *   SRNIC_SOAK_SEED   fault seed (default 1): a failure replays with it
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "srnic.h"
#include "srnic_link.h"
#include "srnic_lossy.h"
#include "srnic_pair.h"
#include "test_eal.h"

#define SOAK_QPS 4
#define SOAK_DEPTH 8
#define SOAK_SLOT 8192              /* bytes per slot; messages up to this */
#define SOAK_STALL_S 60             /* no completion for this long: fail */
#define SOAK_DEFAULT_MSGS 200000

enum soak_op { OP_SEND, OP_WRITE, OP_READ, OP_FADD, OP_COUNT };

static const uint32_t soak_sizes[] = { 0, 1, 3, 64, 1000, 1024, 1025, 3000, 4096, 8192 };

struct soak_qp {
	struct srnic_qp *qp[2];
	uint8_t *lbuf;              /* requester slots */
	uint8_t *wbuf;              /* responder: WRITE targets */
	uint8_t *rbuf;              /* responder: READ source (fixed pattern) */
	uint8_t *recvbuf;           /* responder: RECV slots */
	uint64_t *counter;          /* responder: FETCH_ADD target */
	struct srnic_mr *lmr, *wmr, *rmr, *recvmr, *cmr;
	uint64_t posted, completed; /* requester WR sequence */
	uint64_t sends_posted, sends_done;
	uint64_t recv_posted, recv_done;
	uint64_t fadds;             /* FETCH_ADDs posted */
	uint64_t fadds_done;
	uint8_t op[SOAK_DEPTH];
	uint32_t size[SOAK_DEPTH];
	uint64_t send_no[SOAK_DEPTH];
	uint64_t fadd_no[SOAK_DEPTH];
};

static struct srnic_pair pair;
static struct srnic_cq *cq[2];
static struct soak_qp sq[SOAK_QPS];
static uint64_t rng = 0x1234567;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

static inline uint8_t
pat(uint64_t seq, uint32_t j)
{
	return (uint8_t)(seq * 29u + j * 13u + 5u);
}

static void
post_recvs(struct soak_qp *q)
{
	while (q->recv_posted < q->recv_done + SOAK_DEPTH) {
		uint32_t slot = (uint32_t)(q->recv_posted % SOAK_DEPTH);
		struct ibv_sge sge = { .addr = (uintptr_t)(q->recvbuf + (size_t)slot * SOAK_SLOT),
				       .length = SOAK_SLOT, .lkey = srnic_mr_lkey(q->recvmr) };
		struct ibv_recv_wr wr = { .wr_id = q->recv_posted, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;

		assert_int_equal(srnic_post_recv(q->qp[1], &wr, &bad), 0);
		q->recv_posted++;
	}
}

static void
post_one(struct soak_qp *q)
{
	uint32_t slot = (uint32_t)(q->posted % SOAK_DEPTH), j;
	uint8_t *l = q->lbuf + (size_t)slot * SOAK_SLOT;
	enum soak_op op = (enum soak_op)(rnd() % OP_COUNT);
	uint32_t size = soak_sizes[rnd() % RTE_DIM(soak_sizes)];
	struct ibv_sge sge = { .addr = (uintptr_t)l, .length = size, .lkey = srnic_mr_lkey(q->lmr) };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = q->posted;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	switch (op) {
	case OP_SEND:
		wr.opcode = IBV_WR_SEND;
		for (j = 0; j < size; j++)
			l[j] = pat(q->sends_posted, j);
		q->send_no[slot] = q->sends_posted++;
		break;
	case OP_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		for (j = 0; j < size; j++)
			l[j] = pat(q->posted, j);
		wr.wr.rdma.remote_addr = (uintptr_t)(q->wbuf + (size_t)slot * SOAK_SLOT);
		wr.wr.rdma.rkey = srnic_mr_rkey(q->wmr);
		break;
	case OP_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		memset(l, 0xEE, size);
		/* read from a varying offset of the fixed source */
		wr.wr.rdma.remote_addr = (uintptr_t)(q->rbuf + (q->posted % 97));
		wr.wr.rdma.rkey = srnic_mr_rkey(q->rmr);
		break;
	default:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		sge.length = 8;
		size = 8;
		wr.wr.atomic.remote_addr = (uintptr_t)q->counter;
		wr.wr.atomic.rkey = srnic_mr_rkey(q->cmr);
		wr.wr.atomic.compare_add = 1;
		q->fadd_no[slot] = q->fadds++;
		break;
	}
	q->op[slot] = (uint8_t)op;
	q->size[slot] = size;
	assert_int_equal(srnic_post_send(q->qp[0], &wr, &bad), 0);
	q->posted++;
}

static void
dump_counters(void)
{
	unsigned int i, n = srnic_engine_stats_count();

	for (i = 0; i < n; i++) {
		int64_t a = srnic_dev_stat(pair.dev[0], srnic_engine_stat_name(i));
		int64_t b = srnic_dev_stat(pair.dev[1], srnic_engine_stat_name(i));

		if (a != 0 || b != 0)
			print_message("  %-28s %12" PRId64 " | %12" PRId64 "\n",
				      srnic_engine_stat_name(i), a, b);
	}
}

static void
check_completion(struct soak_qp *q, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)(q->completed % SOAK_DEPTH), j;
	const uint8_t *l = q->lbuf + (size_t)slot * SOAK_SLOT;
	uint32_t size = q->size[slot];

	if (wc->status != IBV_WC_SUCCESS) {
		dump_counters();
		fail_msg("qp %#x wr %" PRIu64 " (op %u size %u): %s", wc->qp_num, wc->wr_id,
			 q->op[slot], size, srnic_wc_status_str(wc->status));
	}
	/* exactly once and in order */
	assert_int_equal(wc->wr_id, q->completed);
	switch (q->op[slot]) {
	case OP_WRITE: {
		const uint8_t *r = q->wbuf + (size_t)slot * SOAK_SLOT;

		for (j = 0; j < size; j++)
			if (r[j] != pat(q->completed, j))
				fail_msg("WRITE wr %" PRIu64 " byte %u", q->completed, j);
		break;
	}
	case OP_READ: {
		const uint8_t *r = q->rbuf + (q->completed % 97);

		if (memcmp(l, r, size) != 0)
			fail_msg("READ wr %" PRIu64 " data", q->completed);
		break;
	}
	case OP_FADD: {
		uint64_t orig;

		memcpy(&orig, l, sizeof(orig));
		/* executed once, in order: the n-th FETCH_ADD sees n */
		assert_int_equal(orig, q->fadd_no[slot]);
		q->fadds_done++;
		break;
	}
	default:
		break;
	}
	q->completed++;
}

static void
check_recv(struct soak_qp *q, const struct ibv_wc *wc)
{
	uint32_t slot = (uint32_t)(q->recv_done % SOAK_DEPTH), j;
	const uint8_t *r = q->recvbuf + (size_t)slot * SOAK_SLOT;

	if (wc->status != IBV_WC_SUCCESS)
		fail_msg("recv qp %#x: %s", wc->qp_num, srnic_wc_status_str(wc->status));
	assert_int_equal(wc->wr_id, q->recv_done);
	/* SEND number recv_done carried pattern recv_done; its size is in byte_len */
	for (j = 0; j < wc->byte_len; j++)
		if (r[j] != pat(q->recv_done, j))
			fail_msg("SEND %" PRIu64 " byte %u", q->recv_done, j);
	q->recv_done++;
	post_recvs(q);
}

static struct soak_qp *
qp_of(uint32_t qpn, int side)
{
	int i;

	for (i = 0; i < SOAK_QPS; i++)
		if (srnic_qp_num(sq[i].qp[side]) == qpn)
			return &sq[i];
	fail_msg("unknown qpn %#x", qpn);
	return NULL;
}

static uint8_t *
zalloc_reg(struct srnic_pd *pd, size_t len, int access, struct srnic_mr **mr)
{
	uint8_t *p = rte_zmalloc("soak", len, 64);

	assert_non_null(p);
	*mr = srnic_reg_mr(pd, p, len, access);
	assert_non_null(*mr);
	return p;
}

static void
test_soak(void **state)
{
	const char *e = getenv("SRNIC_SOAK_MSGS");
	const char *s = getenv("SRNIC_SOAK_SEED");
	uint64_t msgs = e != NULL ? strtoull(e, NULL, 0) : SOAK_DEFAULT_MSGS;
	uint64_t seed = s != NULL ? strtoull(s, NULL, 0) : 1, total = 0, per_qp;
	struct srnic_pair_qp_conf qc = { .path_mtu = IBV_MTU_1024, .psn = { 0xFFFF00, 100 },
					 .max_rd_atomic = 4, .timeout = 8, .retry_cnt = 7,
					 .rnr_retry = 7, .min_rnr_timer = 1 };
	struct srnic_lossy_conf lc = { .seed = seed, .drop = 0.01, .dup = 0.005,
				       .reorder = 0.005, .corrupt = 0.001,
				       .pool = srnic_test_pool() };
	struct srnic_lossy *loss[2];
	struct srnic_lossy_stats ls[2];
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		     IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t last = rte_get_timer_cycles(), hz = rte_get_timer_hz(), t0 = last;
	int i, side;
	uint32_t j;

	(void)state;
	per_qp = (msgs + SOAK_QPS - 1) / SOAK_QPS;
	for (side = 0; side < 2; side++) {
		cq[side] = srnic_create_cq(pair.dev[side], 4 * SOAK_QPS * SOAK_DEPTH,
					   srnic_dev_engine(pair.dev[side], 0));
		assert_non_null(cq[side]);
	}
	for (i = 0; i < SOAK_QPS; i++) {
		struct soak_qp *q = &sq[i];

		for (side = 0; side < 2; side++) {
			struct srnic_qp_init_attr qa = { .send_cq = cq[side], .recv_cq = cq[side],
							 .max_send_wr = SOAK_DEPTH,
							 .max_recv_wr = SOAK_DEPTH, .max_send_sge = 1,
							 .max_recv_sge = 1, .qp_type = IBV_QPT_RC };

			q->qp[side] = srnic_create_qp(pair.pd[side], &qa);
			assert_non_null(q->qp[side]);
		}
		assert_int_equal(srnic_pair_connect(&pair, q->qp[0], q->qp[1], &qc), 0);
		q->lbuf = zalloc_reg(pair.pd[0], SOAK_DEPTH * SOAK_SLOT, access, &q->lmr);
		q->wbuf = zalloc_reg(pair.pd[1], SOAK_DEPTH * SOAK_SLOT, access, &q->wmr);
		q->rbuf = zalloc_reg(pair.pd[1], SOAK_SLOT + 128, access, &q->rmr);
		q->recvbuf = zalloc_reg(pair.pd[1], SOAK_DEPTH * SOAK_SLOT, access, &q->recvmr);
		q->counter = (uint64_t *)zalloc_reg(pair.pd[1], 64, access, &q->cmr);
		for (j = 0; j < SOAK_SLOT + 128; j++)
			q->rbuf[j] = (uint8_t)(j * 31 + i);
		post_recvs(q);
	}
	loss[0] = srnic_lossy_attach(pair.port[0], &lc);
	lc.seed = seed * 7 + 3;
	loss[1] = srnic_lossy_attach(pair.port[1], &lc);
	assert_non_null(loss[0]);
	assert_non_null(loss[1]);

	while (total < per_qp * SOAK_QPS) {
		struct ibv_wc wc[32];
		int n, k;

		for (i = 0; i < SOAK_QPS; i++)
			while (sq[i].posted < per_qp && sq[i].posted - sq[i].completed < SOAK_DEPTH)
				post_one(&sq[i]);
		srnic_engine_poll(srnic_dev_engine(pair.dev[0], 0));
		srnic_engine_poll(srnic_dev_engine(pair.dev[1], 0));
		n = srnic_poll_cq(cq[0], 32, wc);
		assert_true(n >= 0);
		for (k = 0; k < n; k++)
			check_completion(qp_of(wc[k].qp_num, 0), &wc[k]);
		total += (uint64_t)n;
		if (n > 0)
			last = rte_get_timer_cycles();
		n = srnic_poll_cq(cq[1], 32, wc);
		assert_true(n >= 0);
		for (k = 0; k < n; k++)
			check_recv(qp_of(wc[k].qp_num, 1), &wc[k]);
		if (rte_get_timer_cycles() - last > SOAK_STALL_S * hz)
			fail_msg("no completion for %d s at %" PRIu64 " messages", SOAK_STALL_S, total);
	}
	/* Let the last SENDs' RECVs complete (their ACKs came before). */
	for (i = 0; i < SOAK_QPS; i++)
		while (sq[i].recv_done < sq[i].sends_posted) {
			struct ibv_wc wc[32];
			int n, k;

			srnic_engine_poll(srnic_dev_engine(pair.dev[0], 0));
			srnic_engine_poll(srnic_dev_engine(pair.dev[1], 0));
			n = srnic_poll_cq(cq[1], 32, wc);
			for (k = 0; k < n; k++)
				check_recv(qp_of(wc[k].qp_num, 1), &wc[k]);
		}
	for (i = 0; i < SOAK_QPS; i++) {
		assert_int_equal(*sq[i].counter, sq[i].fadds); /* executed exactly once each */
		assert_int_equal(sq[i].recv_done, sq[i].sends_posted);
	}
	srnic_lossy_get_stats(loss[0], &ls[0]);
	srnic_lossy_get_stats(loss[1], &ls[1]);
	print_message("soak: %" PRIu64 " messages in %.1f s; link A->B seen %" PRIu64
		      " drop %" PRIu64 " dup %" PRIu64 " reorder %" PRIu64 " corrupt %" PRIu64
		      "; B->A seen %" PRIu64 " drop %" PRIu64 " dup %" PRIu64 " reorder %" PRIu64
		      " corrupt %" PRIu64 "\n",
		      total, (double)(rte_get_timer_cycles() - t0) / hz, ls[1].n[0], ls[1].n[1],
		      ls[1].n[2], ls[1].n[3], ls[1].n[4], ls[0].n[0], ls[0].n[1], ls[0].n[2],
		      ls[0].n[3], ls[0].n[4]);
	print_message("soak: retransmit_pkts %" PRId64 " retry_timeout %" PRId64
		      " resp_dup %" PRId64 " resp_nak_seq_sent %" PRId64 " rx_icrc_err %" PRId64
		      " rx_malformed %" PRId64 "\n",
		      srnic_dev_stat(pair.dev[0], "retransmit_pkts"),
		      srnic_dev_stat(pair.dev[0], "retry_timeout"),
		      srnic_dev_stat(pair.dev[1], "resp_dup"),
		      srnic_dev_stat(pair.dev[1], "resp_nak_seq_sent"),
		      srnic_dev_stat(pair.dev[0], "rx_icrc_err") +
			      srnic_dev_stat(pair.dev[1], "rx_icrc_err"),
		      srnic_dev_stat(pair.dev[0], "rx_malformed") +
			      srnic_dev_stat(pair.dev[1], "rx_malformed"));
	assert_true(ls[0].n[1] + ls[1].n[1] > 0);
	assert_true(srnic_dev_stat(pair.dev[0], "retransmit_pkts") > 0);
	assert_true(srnic_dev_stat(pair.dev[1], "resp_dup") > 0);
	srnic_lossy_detach(loss[0]);
	srnic_lossy_detach(loss[1]);
}

static int
setup(void **state)
{
	(void)state;
	if (srnic_test_eal_init("soak", 0, NULL) != 0)
		return -1;
	return srnic_pair_create(&pair, "soak", 1, 9000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soak),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
