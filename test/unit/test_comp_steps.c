/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The completer's window over the send queue stepped one ACK, NAK or
 * timeout at a time, as SPDK's rdma_ut.c steps its requests:
 * lib/engine/comp.c is compiled into this test over a stand-in for the
 * engine calls it makes (completions and the move to ERR recorded, the
 * timer's arming recorded), with a QP whose send queue the test fills by
 * hand as the requester would have sent it: no port, no requester. After
 * each step: every WQE's state, where the completer (sq.comp) and the
 * requester (sq.req) stand, the CQEs, the retries left, the ACK timer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/engine/comp.c"

#include "step_eal.h"
#include <rte_malloc.h>

#define SQ_SIZE 8
#define PSN0 100
#define TIMEOUT_CYCLES 1000

int srnic_logtype_engine;

static struct {
	struct ibv_wc wc[SQ_SIZE * 2];
	unsigned int cqes;
	unsigned int to_err;
	unsigned int armed;         /* eng_timer_arm() calls */
	unsigned int route_refresh;
} out;

void
eng_qp_cqe(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
	   const struct ibv_wc *wc, uint32_t wq_next)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(qp);
	RTE_SET_USED(cq);
	RTE_SET_USED(wq_next);
	assert_true(out.cqes < RTE_DIM(out.wc));
	out.wc[out.cqes++] = *wc;
}

void
eng_qp_to_err(struct srnic_engine *eng, struct srnic_qp *qp, const char *why)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(why);
	atomic_store(&qp->state, IBV_QPS_ERR);
	out.to_err++;
}

void
eng_timer_arm(struct srnic_engine *eng, struct srnic_qp *qp, uint64_t at)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(qp);
	RTE_SET_USED(at);
	out.armed++;
}

void
eng_route_refresh(struct srnic_engine *eng, struct srnic_qp *qp)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(qp);
	out.route_refresh++;
}

uint64_t
eng_rnr_timer_cycles(uint8_t code)
{
	return code;
}

enum srnic_key_err
eng_sge_copy_in_sgl(struct srnic_qp *qp, const struct ibv_sge *sge, unsigned int nsge,
		    uint64_t off, const struct srnic_pkt *pkt, uint32_t len)
{
	RTE_SET_USED(qp);
	RTE_SET_USED(sge);
	RTE_SET_USED(nsge);
	RTE_SET_USED(off);
	RTE_SET_USED(pkt);
	RTE_SET_USED(len);
	return SRNIC_KEY_OK; /* no READ payload in these tests */
}

static struct srnic_engine *eng;
static struct srnic_qp *qp;
static struct srnic_swqe wqe[SQ_SIZE];

static int
setup(void **state)
{
	RTE_SET_USED(state);
	memset(&out, 0, sizeof(out));
	memset(wqe, 0, sizeof(wqe));
	eng = rte_zmalloc("eng", sizeof(*eng), RTE_CACHE_LINE_SIZE);
	qp = rte_zmalloc("qp", sizeof(*qp), RTE_CACHE_LINE_SIZE);
	assert_non_null(eng);
	assert_non_null(qp);
	qp->eng = eng;
	qp->qpn = 0x11;
	qp->type = IBV_QPT_RC;
	atomic_store(&qp->state, IBV_QPS_RTS);
	qp->sq.wqe = wqe;
	qp->sq.size = SQ_SIZE;
	qp->sq.mask = SQ_SIZE - 1;
	qp->timeout = 14;
	qp->timeout_cycles = TIMEOUT_CYCLES;
	qp->retry_cnt = 2;
	qp->rnr_retry = 2;
	qp->req.retry_left = 2;
	qp->req.rnr_left = 2;
	eng->now = 5000;
	return 0;
}

static int
teardown(void **state)
{
	RTE_SET_USED(state);
	rte_free(qp);
	rte_free(eng);
	return 0;
}

/* The requester sent a SEND of npkts packets from the next PSN. */
static void
sent(uint64_t wr_id, uint32_t npkts, bool signaled)
{
	uint32_t i = atomic_load(&qp->sq.head);
	struct srnic_swqe *w = &wqe[i & qp->sq.mask];

	memset(w, 0, sizeof(*w));
	w->wr_id = wr_id;
	w->opcode = IBV_WR_SEND;
	w->signaled = signaled;
	w->length = npkts * 1024;
	w->state = SRNIC_WQE_SENT;
	w->first_psn = qp->req.psn;
	w->npkts = npkts;
	w->sent_pkts = npkts;
	qp->req.psn = srnic_psn_add(qp->req.psn, npkts);
	atomic_store(&qp->sq.head, i + 1);
	qp->sq.req = i + 1;
	qp->req.timer_at = eng->now + TIMEOUT_CYCLES;
}

/* The requester sends again what a rewind left SENDING. */
static void
resent(void)
{
	uint32_t i, head = atomic_load(&qp->sq.head);

	for (i = qp->sq.req; i != head; i++) {
		wqe[i & qp->sq.mask].state = SRNIC_WQE_SENT;
		wqe[i & qp->sq.mask].sent_pkts = wqe[i & qp->sq.mask].npkts;
	}
	qp->sq.req = head;
}

/* An ACK, NAK or RNR NAK (AETH type t, value) at psn. */
static void
aeth_rx(uint32_t psn, enum srnic_aeth_type t, uint8_t value)
{
	const struct srnic_opcode_info *oi = srnic_opcode_info(SRNIC_OP_RC_ACK);
	uint8_t hdr[64];
	struct srnic_pkt pkt;

	memset(hdr, 0, sizeof(hdr));
	srnic_bth_set_opcode(hdr, SRNIC_OP_RC_ACK);
	srnic_bth_set_psn(hdr, psn);
	srnic_aeth_set_syndrome(hdr + oi->offset[SRNIC_HDR_AETH], srnic_aeth_syndrome_make(t, value));
	memset(&pkt, 0, sizeof(pkt));
	pkt.bth = hdr;
	pkt.opcode = SRNIC_OP_RC_ACK;
	pkt.mask = oi->mask;
	pkt.psn = psn;
	eng_comp_rx(eng, qp, &pkt);
}

static void
ack(uint32_t psn)
{
	aeth_rx(psn, SRNIC_AETH_ACK, SRNIC_AETH_CREDIT_INVALID);
}

static uint32_t
comp(void)
{
	return atomic_load(&qp->sq.comp);
}

static void
expect_cqe(unsigned int i, uint64_t wr_id, enum ibv_wc_status st)
{
	assert_true(i < out.cqes);
	assert_int_equal(out.wc[i].wr_id, wr_id);
	assert_int_equal(out.wc[i].status, st);
}

/* Four SENDs (PSNs 100, 101, 102-103, 104; the second unsignaled): ACKs
 * coalesce, an ACK inside a message moves no WQE, a sequence NAK at 103
 * acknowledges what is before it and rewinds to it (go-back-N from the
 * packet named), the last ACK retires the rest and stops the timer. */
static void
test_window_ack_nak(void **state)
{
	RTE_SET_USED(state);
	qp->req.psn = PSN0;
	sent(10, 1, true);
	sent(11, 1, false);
	sent(12, 2, true);
	sent(13, 1, true);
	assert_true(eng_comp_outstanding(qp));

	ack(PSN0);
	assert_int_equal(comp(), 1);
	assert_int_equal(out.cqes, 1);
	expect_cqe(0, 10, IBV_WC_SUCCESS);
	assert_int_equal(qp->req.timer_at, eng->now + TIMEOUT_CYCLES); /* re-armed */

	ack(PSN0 + 2); /* inside the third SEND */
	assert_int_equal(comp(), 2); /* the unsignaled one: retired, no CQE */
	assert_int_equal(out.cqes, 1);
	assert_int_equal(wqe[2].state, SRNIC_WQE_SENT);
	assert_int_equal(wqe[2].acked_pkts, 1);

	aeth_rx(PSN0 + 3, SRNIC_AETH_NAK, SRNIC_NAK_PSN_SEQ_ERR);
	assert_int_equal(comp(), 2);
	assert_int_equal(qp->sq.req, 2); /* the requester goes back ... */
	assert_int_equal(wqe[2].state, SRNIC_WQE_SENDING);
	assert_int_equal(wqe[2].sent_pkts, 1); /* ... to PSN 103, the packet NAKed */
	assert_int_equal(wqe[3].state, SRNIC_WQE_SENDING);
	assert_int_equal(wqe[3].sent_pkts, 0);
	assert_int_equal(qp->req.retry_left, 1);
	assert_int_equal(qp->stats.naks_rcvd, 1);
	assert_int_equal(qp->stats.retransmits, 1);
	assert_int_equal(out.to_err, 0);

	resent();
	ack(PSN0 + 4);
	assert_int_equal(comp(), 4);
	assert_int_equal(out.cqes, 3);
	expect_cqe(1, 12, IBV_WC_SUCCESS);
	expect_cqe(2, 13, IBV_WC_SUCCESS);
	assert_int_equal(qp->req.retry_left, 2); /* progress gives the retries back */
	assert_false(eng_comp_outstanding(qp));
	assert_int_equal(qp->req.timer_at, 0);

	/* the same ACK again: nothing moves, counted */
	ack(PSN0 + 4);
	assert_int_equal(comp(), 4);
	assert_int_equal(out.cqes, 3);
	assert_int_equal(eng->stats[SRNIC_STAT_COMP_DUP_ACK], 1);
}

/* No ACK: the timer resends from the first packet no ACK covered while
 * retries are left (two here), then the WQE fails RETRY_EXC_ERR and the QP
 * goes to ERR. Before its deadline the timer does nothing. */
static void
test_window_timeout(void **state)
{
	RTE_SET_USED(state);
	qp->req.psn = PSN0;
	sent(20, 3, true);
	ack(PSN0); /* the first of its three packets */
	assert_int_equal(wqe[0].acked_pkts, 1);
	assert_int_equal(qp->req.timer_at, eng->now + TIMEOUT_CYCLES);

	eng->now += TIMEOUT_CYCLES - 1;
	eng_comp_timer(eng, qp);
	assert_int_equal(qp->stats.timeouts, 0);
	assert_int_equal(qp->sq.req, 1);

	for (unsigned int k = 1; k <= 2; k++) {
		eng->now += TIMEOUT_CYCLES;
		eng_comp_timer(eng, qp);
		assert_int_equal(qp->stats.timeouts, k);
		assert_int_equal(qp->req.retry_left, 2 - k);
		assert_int_equal(qp->sq.req, 0);
		assert_int_equal(wqe[0].state, SRNIC_WQE_SENDING);
		assert_int_equal(wqe[0].sent_pkts, 1); /* from PSN 101 */
		assert_int_equal(qp->req.timer_at, eng->now + TIMEOUT_CYCLES);
		assert_int_equal(out.route_refresh, k);
		resent();
	}
	eng->now += TIMEOUT_CYCLES;
	eng_comp_timer(eng, qp);
	assert_int_equal(qp->stats.timeouts, 3);
	assert_int_equal(comp(), 1);
	assert_int_equal(out.cqes, 1);
	expect_cqe(0, 20, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(out.to_err, 1);
}

/* RNR NAK: the WQE waits (the timer is no ACK timeout then) and rewinds;
 * rnr_retry spent, it fails RNR_RETRY_EXC_ERR. */
static void
test_window_rnr(void **state)
{
	RTE_SET_USED(state);
	qp->req.psn = PSN0;
	sent(30, 1, true);
	aeth_rx(PSN0, SRNIC_AETH_RNR_NAK, 5);
	assert_int_equal(qp->req.rnr_left, 1);
	assert_int_equal(qp->sq.req, 0);
	assert_int_equal(wqe[0].state, SRNIC_WQE_SENDING);
	assert_int_equal(qp->req.timer_at, 0);
	assert_true(qp->req.wait_until != 0);
	resent();
	aeth_rx(PSN0, SRNIC_AETH_RNR_NAK, 5);
	assert_int_equal(qp->req.rnr_left, 0);
	resent();
	aeth_rx(PSN0, SRNIC_AETH_RNR_NAK, 5);
	assert_int_equal(comp(), 1);
	expect_cqe(0, 30, IBV_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(out.to_err, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_window_ack_nak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_rnr, setup, teardown),
	};

	if (step_eal_init("comp_steps") != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
