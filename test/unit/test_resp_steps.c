/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder's FIFO of what it owes stepped one packet at a time, as
 * SPDK's rdma_ut.c steps its requests: lib/engine/resp.c is compiled into
 * this test (struct srnic_resp and its FIFO in reach) over a stand-in for
 * the engine calls it makes (eng_pkt_new() and eng_pkt_xmit() record
 * the response instead of building a frame): no port, no engine loop. Each
 * request goes through eng_resp_rx() with its parsed header only; the
 * test checks the FIFO's entries after each, and eng_resp_run() sends
 * them in PSN order, checked opcode by opcode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/engine/resp.c"

#include "step_eal.h"
#include <rte_malloc.h>

/* ---- the stand-in engine calls ---- */

#define SENT_MAX 64
#define PMTU 1024
#define EPSN0 1000
#define RKEY 0x0105                 /* index 1, key byte 5 */

int srnic_logtype_engine;

struct sent {
	uint8_t opcode;
	uint32_t psn;
	uint8_t syndrome;           /* AETH, when the opcode has one */
	uint32_t msn;
	uint32_t len;               /* payload chained behind */
	bool copy;                  /* that payload a copy (a retry) */
	uint8_t hdr[64];            /* BTH and what follows */
};

static struct {
	struct sent s[SENT_MAX];
	unsigned int n;             /* built */
	unsigned int seen;          /* checked by the test */
	struct rte_mbuf mbuf[SENT_MAX];
	unsigned int cqes, to_err;
} out;

struct rte_mbuf *
eng_pkt_new(struct srnic_engine *eng, struct srnic_qp *qp, uint8_t opcode, uint32_t psn,
	    uint8_t **bth)
{
	struct sent *s;

	RTE_SET_USED(eng);
	RTE_SET_USED(qp);
	assert_true(out.n < SENT_MAX);
	s = &out.s[out.n];
	memset(s, 0, sizeof(*s));
	s->opcode = opcode;
	s->psn = psn;
	srnic_bth_set_opcode(s->hdr, opcode);
	srnic_bth_set_psn(s->hdr, psn);
	*bth = s->hdr;
	return &out.mbuf[out.n];
}

int
eng_pkt_attach(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr, uint64_t va,
	       uint32_t len)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(mr);
	RTE_SET_USED(va);
	out.s[m - out.mbuf].len = len;
	return 0;
}

int
eng_pkt_attach_copy(struct srnic_engine *eng, struct rte_mbuf *m, const void *src, uint32_t len)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(src);
	out.s[m - out.mbuf].len = len;
	out.s[m - out.mbuf].copy = true;
	return 0;
}

int
eng_pkt_xmit(struct srnic_engine *eng, struct rte_mbuf *m)
{
	struct sent *s = &out.s[m - out.mbuf];
	const struct srnic_opcode_info *oi = srnic_opcode_info(s->opcode);

	RTE_SET_USED(eng);
	assert_int_equal(m - out.mbuf, out.n);
	if (oi->mask & SRNIC_OPM_AETH) {
		s->syndrome = srnic_aeth_syndrome(s->hdr + oi->offset[SRNIC_HDR_AETH]);
		s->msn = srnic_aeth_msn(s->hdr + oi->offset[SRNIC_HDR_AETH]);
	}
	out.n++;
	return 0;
}

void
eng_qp_cqe(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
	   const struct ibv_wc *wc, uint32_t wq_next)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(qp);
	RTE_SET_USED(cq);
	RTE_SET_USED(wc);
	RTE_SET_USED(wq_next);
	out.cqes++;
}

void
eng_qp_cqe_se(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
	      const struct ibv_wc *wc, uint32_t wq_next, bool solicited)
{
	RTE_SET_USED(solicited);
	eng_qp_cqe(eng, qp, cq, wc, wq_next);
}

void
eng_qp_to_err(struct srnic_engine *eng, struct srnic_qp *qp, const char *why)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(qp);
	RTE_SET_USED(why);
	out.to_err++;
}

void
eng_event_srq(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_srq *srq)
{
	RTE_SET_USED(eng);
	RTE_SET_USED(type);
	RTE_SET_USED(srq);
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
	return SRNIC_KEY_OK; /* the tests send no payload */
}

/* ---- one QP's responder ---- */

static struct srnic_engine *eng;
static struct srnic_dev *dev;
static struct srnic_qp *qp;
static struct srnic_mr mr;
static uint8_t mem[8192];

static int
setup(void **state)
{
	RTE_SET_USED(state);
	memset(&out, 0, sizeof(out));
	eng = rte_zmalloc("eng", sizeof(*eng), RTE_CACHE_LINE_SIZE);
	dev = rte_zmalloc("dev", sizeof(*dev), RTE_CACHE_LINE_SIZE);
	qp = rte_zmalloc("qp", sizeof(*qp), RTE_CACHE_LINE_SIZE);
	assert_non_null(eng);
	assert_non_null(dev);
	assert_non_null(qp);
	dev->mr_tbl = calloc(SRNIC_MAX_MR, sizeof(*dev->mr_tbl));
	assert_non_null(dev->mr_tbl);
	memset(&mr, 0, sizeof(mr));
	mr.dev = dev;
	mr.pd = (struct srnic_pd *)(uintptr_t)0x1000;
	mr.addr = mem;
	mr.va = (uintptr_t)mem;
	mr.length = sizeof(mem);
	mr.key = RKEY;
	mr.access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	dev->mr_tbl[SRNIC_MR_KEY_INDEX(RKEY)] = &mr;
	qp->dev = dev;
	qp->eng = eng;
	qp->pd = mr.pd;
	qp->qpn = 0x11;
	qp->type = IBV_QPT_RC;
	qp->transport = SRNIC_OPM_RC;
	qp->pmtu = PMTU;
	qp->access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	qp->max_dest_rd_atomic = 4;
	qp->resp.epsn = EPSN0;
	return 0;
}

static int
teardown(void **state)
{
	RTE_SET_USED(state);
	free(dev->mr_tbl);
	rte_free(qp);
	rte_free(dev);
	rte_free(eng);
	return 0;
}

/* A request with no payload: op at psn, AckReq as given, RETH as given. */
static void
rx(uint8_t op, uint32_t psn, bool ackreq, uint64_t va, uint32_t len)
{
	const struct srnic_opcode_info *oi = srnic_opcode_info(op);
	uint8_t hdr[64];
	struct srnic_pkt pkt;

	memset(hdr, 0, sizeof(hdr));
	srnic_bth_set_opcode(hdr, op);
	srnic_bth_set_psn(hdr, psn);
	srnic_bth_set_dqpn(hdr, qp->qpn);
	srnic_bth_set_ackreq(hdr, ackreq);
	if (oi->mask & SRNIC_OPM_RETH) {
		srnic_reth_set_va(hdr + oi->offset[SRNIC_HDR_RETH], va);
		srnic_reth_set_rkey(hdr + oi->offset[SRNIC_HDR_RETH], RKEY);
		srnic_reth_set_len(hdr + oi->offset[SRNIC_HDR_RETH], len);
	}
	memset(&pkt, 0, sizeof(pkt));
	pkt.bth = hdr;
	pkt.opcode = op;
	pkt.mask = oi->mask;
	pkt.psn = psn;
	pkt.dqpn = qp->qpn;
	eng_resp_rx(eng, qp, &pkt);
}

static void
write0(uint32_t psn)
{
	rx(SRNIC_OP_RC_WRITE_ONLY, psn, true, (uintptr_t)mem, 0);
}

static unsigned int
fifo_len(void)
{
	return qp->resp.tail - qp->resp.head;
}

/* The FIFO's entry i (0: the oldest owed). */
static const struct srnic_resp_entry *
fifo(unsigned int i)
{
	assert_true(i < fifo_len());
	return &qp->resp.fifo[(qp->resp.head + i) & (SRNIC_RESP_FIFO - 1)];
}

/* Send everything owed (several turns if a READ is longer than a turn's budget). */
static void
run(void)
{
	unsigned int turns = 0;

	while (eng_resp_run(eng, qp))
		assert_true(++turns < 1000);
	assert_int_equal(fifo_len(), 0);
	assert_false(qp->resp_owed);
}

/* The next response sent: opcode, PSN, and for ACK/NAK and READ
 * FIRST/LAST/ONLY the AETH's syndrome and MSN. */
static const struct sent *
expect_sent(uint8_t op, uint32_t psn)
{
	const struct sent *s;

	assert_true(out.seen < out.n);
	s = &out.s[out.seen++];
	assert_string_equal(srnic_opcode_name(s->opcode), srnic_opcode_name(op));
	assert_int_equal(s->psn, psn);
	return s;
}

static const uint8_t ack_syn = (SRNIC_AETH_ACK << 5) | SRNIC_AETH_CREDIT_INVALID;

/* ACKs coalesce at the FIFO's tail; a READ between requests splits them,
 * and run() answers in PSN order: ACK, the READ's four packets, ACK. */
static void
test_fifo_order(void **state)
{
	const struct sent *s;

	RTE_SET_USED(state);
	write0(EPSN0);
	assert_int_equal(fifo_len(), 1);
	assert_int_equal(fifo(0)->kind, SRNIC_RESP_ACK);
	assert_int_equal(fifo(0)->psn, EPSN0);
	assert_int_equal(fifo(0)->msn, 1);

	write0(EPSN0 + 1);
	assert_int_equal(fifo_len(), 1); /* the same entry, now up to EPSN0 + 1 */
	assert_int_equal(fifo(0)->psn, EPSN0 + 1);
	assert_int_equal(fifo(0)->msn, 2);

	rx(SRNIC_OP_RC_READ_REQ, EPSN0 + 2, true, (uintptr_t)mem, 4 * PMTU);
	assert_int_equal(fifo_len(), 2);
	assert_int_equal(fifo(1)->kind, SRNIC_RESP_READ);
	assert_int_equal(fifo(1)->psn, EPSN0 + 2);
	assert_int_equal(fifo(1)->npkts, 4);
	assert_int_equal(fifo(1)->msn, 3);
	assert_int_equal(qp->resp.rd_atomic, 1);
	assert_int_equal(qp->resp.epsn, EPSN0 + 6); /* the READ took four PSNs */

	write0(EPSN0 + 6);
	assert_int_equal(fifo_len(), 3); /* behind the READ: a new ACK */
	assert_int_equal(fifo(2)->kind, SRNIC_RESP_ACK);
	assert_int_equal(fifo(2)->psn, EPSN0 + 6);
	assert_int_equal(out.n, 0); /* nothing sent before the run */

	run();
	s = expect_sent(SRNIC_OP_RC_ACK, EPSN0 + 1);
	assert_int_equal(s->syndrome, ack_syn);
	assert_int_equal(s->msn, 2);
	s = expect_sent(SRNIC_OP_RC_READ_RESP_FIRST, EPSN0 + 2);
	assert_int_equal(s->msn, 3);
	assert_int_equal(s->len, PMTU);
	assert_false(s->copy);
	expect_sent(SRNIC_OP_RC_READ_RESP_MIDDLE, EPSN0 + 3);
	expect_sent(SRNIC_OP_RC_READ_RESP_MIDDLE, EPSN0 + 4);
	s = expect_sent(SRNIC_OP_RC_READ_RESP_LAST, EPSN0 + 5);
	assert_int_equal(s->msn, 3);
	s = expect_sent(SRNIC_OP_RC_ACK, EPSN0 + 6);
	assert_int_equal(s->msn, 4);
	assert_int_equal(out.seen, out.n);
	assert_int_equal(qp->resp.rd_atomic, 0);
}

/* A gap: one NAK (sequence error, the PSN expected), the rest of the gap
 * dropped unanswered; the expected PSN clears it. */
static void
test_out_of_seq_one_nak(void **state)
{
	const struct sent *s;

	RTE_SET_USED(state);
	write0(EPSN0 + 2);
	assert_int_equal(fifo_len(), 1);
	assert_int_equal(fifo(0)->kind, SRNIC_RESP_NAK);
	assert_int_equal(fifo(0)->psn, EPSN0);
	assert_int_equal(qp->resp.seq_nak_sent, 1);
	assert_int_equal(qp->resp.epsn, EPSN0);

	write0(EPSN0 + 3);
	assert_int_equal(fifo_len(), 1);
	assert_int_equal(eng->stats[SRNIC_STAT_RESP_OUT_OF_SEQ_DROP], 1);
	assert_int_equal(eng->stats[SRNIC_STAT_RESP_NAK_SEQ], 1);

	write0(EPSN0);
	assert_int_equal(qp->resp.seq_nak_sent, 0);
	assert_int_equal(qp->resp.epsn, EPSN0 + 1);
	assert_int_equal(fifo_len(), 2);
	assert_int_equal(fifo(1)->kind, SRNIC_RESP_ACK);

	run();
	s = expect_sent(SRNIC_OP_RC_ACK, EPSN0);
	assert_int_equal(s->syndrome, (SRNIC_AETH_NAK << 5) | SRNIC_NAK_PSN_SEQ_ERR);
	assert_int_equal(s->msn, 0);
	s = expect_sent(SRNIC_OP_RC_ACK, EPSN0);
	assert_int_equal(s->syndrome, ack_syn);
	assert_int_equal(s->msn, 1);
	assert_int_equal(out.seen, out.n);
	assert_int_equal(out.to_err, 0);
}

/* Duplicates: a READ asked again from its third packet is answered from
 * what the responder remembers (that tail only, copied: it goes back over
 * packets sent), ePSN and MSN unmoved; one asking for anything else is
 * dropped; a duplicate WRITE is ACKed again at ePSN - 1, never executed. */
static void
test_dup_read_replay(void **state)
{
	const struct sent *s;

	RTE_SET_USED(state);
	rx(SRNIC_OP_RC_READ_REQ, EPSN0, true, (uintptr_t)mem, 4 * PMTU);
	write0(EPSN0 + 4);
	run();
	out.seen = out.n;
	assert_int_equal(qp->resp.epsn, EPSN0 + 5);
	assert_int_equal(qp->resp.msn, 2);

	rx(SRNIC_OP_RC_READ_REQ, EPSN0 + 2, true, (uintptr_t)mem + 2 * PMTU, 2 * PMTU);
	assert_int_equal(fifo_len(), 1);
	assert_int_equal(fifo(0)->kind, SRNIC_RESP_READ);
	assert_int_equal(fifo(0)->dup, 1);
	assert_int_equal(fifo(0)->psn, EPSN0 + 2);
	assert_int_equal(fifo(0)->npkts, 2);
	assert_int_equal(qp->resp.rd_atomic, 0); /* a duplicate holds no slot */
	assert_int_equal(qp->resp.epsn, EPSN0 + 5);
	assert_int_equal(qp->resp.msn, 2);

	/* not the original's tail (one byte off): dropped */
	rx(SRNIC_OP_RC_READ_REQ, EPSN0 + 1, true, (uintptr_t)mem + PMTU + 1, 3 * PMTU - 1);
	assert_int_equal(fifo_len(), 1);
	assert_int_equal(eng->stats[SRNIC_STAT_RESP_DUP_DROP], 1);

	/* the WRITE again: ACK at ePSN - 1 */
	write0(EPSN0 + 4);
	assert_int_equal(fifo_len(), 2);
	assert_int_equal(fifo(1)->kind, SRNIC_RESP_ACK);
	assert_int_equal(fifo(1)->psn, EPSN0 + 4);
	assert_int_equal(eng->stats[SRNIC_STAT_RESP_DUP], 3);

	run();
	s = expect_sent(SRNIC_OP_RC_READ_RESP_FIRST, EPSN0 + 2);
	assert_int_equal(s->len, PMTU);
	assert_true(s->copy);
	assert_int_equal(s->msn, 2); /* the MSN as it is now */
	s = expect_sent(SRNIC_OP_RC_READ_RESP_LAST, EPSN0 + 3);
	assert_true(s->copy);
	s = expect_sent(SRNIC_OP_RC_ACK, EPSN0 + 4);
	assert_int_equal(s->msn, 2);
	assert_int_equal(out.seen, out.n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fifo_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_seq_one_nak, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dup_read_replay, setup, teardown),
	};

	if (step_eal_init("resp_steps") != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
