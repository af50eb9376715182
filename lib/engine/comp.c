/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer: matches ACKs, NAKs, READ responses and atomic ACKs to the
 * send queue's outstanding WQEs (IBTA 9.7.5.1). An ACK or response with
 * PSN p acknowledges every SEND/WRITE up to p (coalesced ACKs); a READ or
 * atomic completes only with its own response. READ payload lands in the
 * buffers the WQE named: nothing on the wire says where. WQEs retire in
 * order; CQEs only for signaled WQEs and for every error.
 */
#include <rte_cycles.h>

#include "eng_internal.h"

/* Completer steps, named for tracing and tests. */
enum comp_event {
	COMP_EV_ACK,
	COMP_EV_READ_RESP,
	COMP_EV_ATOMIC_ACK,
	COMP_EV_NAK,
};

static inline uint32_t
wqe_last_psn(const struct srnic_swqe *w)
{
	return srnic_psn_add(w->first_psn, w->npkts - 1);
}

static void
wqe_done(struct srnic_qp *qp, struct srnic_swqe *w, enum ibv_wc_status st)
{
	if (wqe_is_rd_atomic(w))
		qp->req.rd_atomic--;
	w->state = SRNIC_WQE_DONE;
	w->wc_status = (uint8_t)st;
}

void
eng_comp_retire(struct srnic_engine *eng, struct srnic_qp *qp)
{
	uint32_t c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);

	while (c != qp->sq.req) {
		struct srnic_swqe *w = &qp->sq.wqe[c & qp->sq.mask];
		enum ibv_wc_status st;
		struct ibv_wc wc;

		if (w->state != SRNIC_WQE_DONE)
			break;
		/* Read before the CQE is out: once it is polled, the slot is
		 * the application's, which may post into it at once. */
		st = (enum ibv_wc_status)w->wc_status;
		if (w->signaled || st != IBV_WC_SUCCESS) {
			memset(&wc, 0, sizeof(wc));
			wc.wr_id = w->wr_id;
			wc.status = st;
			wc.opcode = eng_wr_to_wc_opcode(w->opcode);
			wc.byte_len = w->length;
			wc.qp_num = qp->qpn;
			eng_qp_cqe(eng, qp, qp->scq, &wc, c + 1);
		}
		c++;
		if (st != IBV_WC_SUCCESS) {
			atomic_store_explicit(&qp->sq.comp, c, memory_order_release);
			eng_qp_to_err(eng, qp, "work request failed");
			return;
		}
	}
	atomic_store_explicit(&qp->sq.comp, c, memory_order_release);
}

/* Resend from psn: the WQE holding it restarts at that packet, every later
 * one from its start; PSNs already assigned are kept (go-back-N). This
 * includes the WQE the requester is in the middle of (at sq.req, some of
 * its packets sent): they follow the resent ones again. */
static void
comp_rewind(struct srnic_qp *qp, uint32_t c, uint32_t psn)
{
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	uint32_t i;

	for (i = c; i != head; i++) {
		struct srnic_swqe *w = &qp->sq.wqe[i & qp->sq.mask];

		if (w->state == SRNIC_WQE_DONE)
			continue;
		if (w->state == SRNIC_WQE_POSTED)
			break; /* not started: nothing of it is out */
		if (i == c && !wqe_is_rd_atomic(w) &&
		    srnic_psn_in_window(psn, w->first_psn, w->npkts))
			w->sent_pkts = (psn - w->first_psn) & SRNIC_PSN_MASK;
		else
			w->sent_pkts = 0;
		/* READ responses already placed stay: the retry asks for the rest. */
		w->state = SRNIC_WQE_SENDING;
		/* an earlier zero-copy copy of a packet may still be on the way
		 * (a ring pair's ring, a duplicated NAK's second rewind): once
		 * the first is acknowledged the application may rewrite the
		 * memory, and the later copy must still carry what was sent */
		w->resent = 1;
	}
	qp->sq.req = c;
	qp->req_idle = 0;
	qp->req.tx_wait = 0;
	qp->req.read_retry = 0;
}

/* w (at c) fails. One still being sent (at sq.req) leaves the requester
 * so that it retires, in order, with its error. */
static void
comp_fail(struct srnic_qp *qp, uint32_t c, struct srnic_swqe *w, enum ibv_wc_status st)
{
	if (c == qp->sq.req)
		qp->sq.req++;
	wqe_done(qp, w, st);
}

/* Something answers a PSN after a READ or atomic whose own response has
 * not (all) arrived: the responder answers in order, so that response was
 * lost. Ask again now, once per gap (rxe: implied NAK), not at the timer.
 * A resend like a timeout's: it spends one of retry_cnt (rxe's
 * COMPST_ERROR_RETRY), or fails the WQE when they are spent. */
static void
comp_implied_nak(struct srnic_engine *eng, struct srnic_qp *qp, uint32_t c,
		 struct srnic_swqe *w)
{
	if (qp->req.read_retry)
		return;
	if (!eng_qp_retry_take(qp)) {
		comp_fail(qp, c, w, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	eng_qp_stat(eng, SRNIC_STAT_RETRANSMIT, &qp->stats.retransmits);
	comp_rewind(qp, c, srnic_psn_add(w->first_psn, w->resp_pkts));
	qp->req.read_retry = 1;
	/* The resend is the request the ACK timer now waits for. Left at the
	 * old deadline, the timers of this same poll (after RX, before the
	 * requester sends) could find it due and rewind again: a second retry
	 * spent for one resend, or, on a late poll, a retry_starved resend
	 * that sends nothing more. */
	if (qp->timeout != 0) {
		qp->req.timer_at = eng->now + qp->timeout_cycles;
		eng_timer_arm(eng, qp, qp->req.timer_at);
	}
}

/* READ response for w (PSN already known to be inside w's range). */
static void
comp_read_resp(struct srnic_engine *eng, struct srnic_qp *qp, uint32_t c, struct srnic_swqe *w,
	       const struct srnic_pkt *pkt)
{
	uint32_t i = w->resp_pkts, n = w->npkts, off, want;
	uint32_t m = pkt->mask & (SRNIC_OPM_FIRST | SRNIC_OPM_MIDDLE | SRNIC_OPM_LAST);
	uint32_t pos_ok;

	if (pkt->psn != srnic_psn_add(w->first_psn, i)) {
		eng_stat(eng, SRNIC_STAT_COMP_UNEXPECTED, 1);
		/* Later than expected: responses were lost. Ask again for the
		 * rest now, once per gap, rather than wait for the timer
		 * (rxe: out-of-order read response -> retry). */
		if (srnic_psn_diff(pkt->psn, srnic_psn_add(w->first_psn, i)) > 0)
			comp_implied_nak(eng, qp, c, w);
		return;
	}
	/* A retried READ is answered as a new response message (FIRST from
	 * the retry point), so only "last or not" is fixed by the PSN. */
	pos_ok = i == n - 1 ? SRNIC_OPM_LAST : 0;
	off = i * qp->pmtu;
	want = RTE_MIN(qp->pmtu, w->length - off);
	/* Dropped, placing nothing (the retry asks for it again); each kind
	 * counted apart: a peer that gets them wrong shows up. */
	if (unlikely((m & SRNIC_OPM_LAST) != pos_ok)) {
		eng_stat(eng, SRNIC_STAT_COMP_READ_POS_ERR, 1);
		return;
	}
	if (unlikely(pkt->pay_len != want)) {
		eng_stat(eng, SRNIC_STAT_COMP_READ_LEN_ERR, 1);
		return;
	}
	if (unlikely(eng_sge_copy_in(qp, w->sge, w->num_sge, off, pkt, want) != SRNIC_KEY_OK)) {
		wqe_done(qp, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	w->resp_pkts++;
	qp->req.read_retry = 0; /* the gap is closed */
	if (w->resp_pkts == n)
		wqe_done(qp, w, IBV_WC_SUCCESS);
}

static void
comp_atomic_ack(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w,
		const struct srnic_pkt *pkt)
{
	uint64_t orig = srnic_atmack_orig(srnic_pkt_hdr(pkt, SRNIC_HDR_ATMACK));
	struct srnic_mr *mr;

	RTE_SET_USED(eng);
	if (srnic_mr_check(qp->dev, qp->pd, w->sge[0].lkey, IBV_ACCESS_LOCAL_WRITE,
			   w->sge[0].addr, sizeof(orig), &mr) != SRNIC_KEY_OK) {
		wqe_done(qp, w, IBV_WC_LOC_PROT_ERR);
		return;
	}
	memcpy(srnic_mr_at(mr, w->sge[0].addr), &orig, sizeof(orig));
	wqe_done(qp, w, IBV_WC_SUCCESS);
}

/* The answer to an ATOMIC WRITE or FLUSH: a READ RESPONSE ONLY with no
 * payload (IBTA 1.5, rxe). Anything else at its PSN is dropped and counted
 * as a READ response of the wrong shape; the retry asks again. */
static bool
comp_rsp0(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w,
	  const struct srnic_pkt *pkt)
{
	if (unlikely((pkt->mask & SRNIC_OPM_ONLY) != SRNIC_OPM_ONLY)) {
		eng_stat(eng, SRNIC_STAT_COMP_READ_POS_ERR, 1);
		return false;
	}
	if (unlikely(pkt->pay_len != 0)) {
		eng_stat(eng, SRNIC_STAT_COMP_READ_LEN_ERR, 1);
		return false;
	}
	w->resp_pkts = 1;
	wqe_done(qp, w, IBV_WC_SUCCESS);
	return true;
}

static enum ibv_wc_status
nak_to_status(uint8_t code)
{
	switch (code) {
	case SRNIC_NAK_INVALID_REQ:
		return IBV_WC_REM_INV_REQ_ERR;
	case SRNIC_NAK_REM_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case SRNIC_NAK_INVALID_RD_REQ:
		return IBV_WC_REM_INV_RD_REQ_ERR;
	default:
		return IBV_WC_REM_OP_ERR;
	}
}

/* NAK at psn: everything before psn is acknowledged (IBTA 9.7: a NAK
 * acknowledges the requests before the PSN it names), the WQE
 * holding psn is retried (sequence error, RNR) or fails. That WQE may be
 * the one still being sent (a message longer than one requester budget):
 * a NAK for a packet of it already out counts as well. */
static void
comp_nak(struct srnic_engine *eng, struct srnic_qp *qp, uint32_t c, const uint8_t *aeth,
	 uint32_t psn)
{
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	struct srnic_swqe *w = &qp->sq.wqe[c & qp->sq.mask];
	enum srnic_aeth_type t = srnic_aeth_type(aeth);
	uint8_t val = srnic_aeth_value(aeth);

	if (t == SRNIC_AETH_RNR_NAK)
		eng_qp_stat(eng, SRNIC_STAT_COMP_RNR, &qp->stats.rnr_naks_rcvd);
	else
		eng_qp_stat(eng, SRNIC_STAT_COMP_NAK, &qp->stats.naks_rcvd);
	if (c == qp->sq.req ? c == head || w->state != SRNIC_WQE_SENDING ||
			      !srnic_psn_in_window(psn, w->first_psn, w->sent_pkts)
			    : !srnic_psn_in_window(psn, w->first_psn, w->npkts))
		return; /* stale */
	if (t == SRNIC_AETH_RNR_NAK) {
		if (qp->req.rnr_left == 0) {
			comp_fail(qp, c, w, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		if (qp->rnr_retry != 7)
			qp->req.rnr_left--;
		/* From now, not from the poll's start: the NAK may have been
		 * received well after it (a preempted lcore), and the peer asked
		 * for at least this long. */
		qp->req.wait_until = rte_get_timer_cycles() + eng_rnr_timer_cycles(val);
		eng_timer_arm(eng, qp, qp->req.wait_until);
		qp->req.timer_at = 0; /* the RNR wait is no ACK timeout */
		comp_rewind(qp, c, psn);
		return;
	}
	if (t == SRNIC_AETH_NAK && val == SRNIC_NAK_PSN_SEQ_ERR) {
		if (!eng_qp_retry_take(qp)) {
			comp_fail(qp, c, w, IBV_WC_RETRY_EXC_ERR);
			return;
		}
		eng_qp_stat(eng, SRNIC_STAT_RETRANSMIT, &qp->stats.retransmits);
		comp_rewind(qp, c, psn);
		return;
	}
	comp_fail(qp, c, w, t == SRNIC_AETH_NAK ? nak_to_status(val) : IBV_WC_REM_OP_ERR);
}

/* An ACK at psn inside a SEND/WRITE (AckReq every SRNIC_ACK_REQ_INTERVAL
 * packets): the packets up to psn need no resend; a timeout resumes after
 * them. True if that is further than before (progress). */
static bool
comp_ack_inside(struct srnic_swqe *w, uint32_t psn, uint32_t sent)
{
	uint32_t n;

	if (!srnic_psn_in_window(psn, w->first_psn, sent))
		return false;
	n = ((psn - w->first_psn) & SRNIC_PSN_MASK) + 1;
	if (n <= w->acked_pkts)
		return false;
	w->acked_pkts = n;
	return true;
}

void
eng_comp_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt)
{
	uint32_t c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);
	uint32_t psn = pkt->psn;
	const uint8_t *aeth = (pkt->mask & SRNIC_OPM_AETH) ? srnic_pkt_hdr(pkt, SRNIC_HDR_AETH) : NULL;
	enum comp_event ev;
	bool progress = false;

	if (pkt->mask & SRNIC_OPM_READ)
		ev = COMP_EV_READ_RESP;
	else if (pkt->mask & SRNIC_OPM_ATOMIC)
		ev = COMP_EV_ATOMIC_ACK;
	else if (srnic_aeth_type(aeth) != SRNIC_AETH_ACK)
		ev = COMP_EV_NAK;
	else
		ev = COMP_EV_ACK;
	eng_stat(eng, ev == COMP_EV_READ_RESP ? SRNIC_STAT_COMP_READ_RESP :
		      ev == COMP_EV_ATOMIC_ACK ? SRNIC_STAT_COMP_ATOMIC_ACK : SRNIC_STAT_COMP_ACK, 1);

	for (; c != qp->sq.req; c++) {
		struct srnic_swqe *w = &qp->sq.wqe[c & qp->sq.mask];

		if (w->state == SRNIC_WQE_DONE)
			continue;
		if (wqe_is_read(w)) {
			if (ev == COMP_EV_READ_RESP &&
			    srnic_psn_in_window(psn, w->first_psn, w->npkts)) {
				comp_read_resp(eng, qp, c, w, pkt);
				progress = true;
			} else if (srnic_psn_diff(psn, wqe_last_psn(w)) > 0) {
				comp_implied_nak(eng, qp, c, w);
			}
			break;
		}
		if (unlikely(wqe_is_rsp0(w))) {
			if (ev == COMP_EV_READ_RESP && psn == w->first_psn) {
				progress |= comp_rsp0(eng, qp, w, pkt);
			} else if (srnic_psn_diff(psn, w->first_psn) > 0) {
				comp_implied_nak(eng, qp, c, w);
			}
			break;
		}
		if (wqe_is_atomic(w)) {
			if (ev == COMP_EV_ATOMIC_ACK && psn == w->first_psn) {
				comp_atomic_ack(eng, qp, w, pkt);
				progress = true;
			} else if (srnic_psn_diff(psn, w->first_psn) > 0) {
				comp_implied_nak(eng, qp, c, w);
			}
			break;
		}
		/* SEND/WRITE: acknowledged when p is at or after its last PSN
		 * (a NAK at p acknowledges only what is before p). */
		if (w->state != SRNIC_WQE_SENT)
			break;
		if (ev == COMP_EV_NAK ? srnic_psn_diff(psn, wqe_last_psn(w)) <= 0
				      : srnic_psn_diff(psn, wqe_last_psn(w)) < 0) {
			if (ev == COMP_EV_ACK)
				progress |= comp_ack_inside(w, psn, w->npkts);
			break;
		}
		wqe_done(qp, w, IBV_WC_SUCCESS);
		progress = true;
	}
	if (ev == COMP_EV_ACK && c == qp->sq.req &&
	    c != atomic_load_explicit(&qp->sq.head, memory_order_acquire)) {
		struct srnic_swqe *w = &qp->sq.wqe[c & qp->sq.mask];

		/* an ACK inside the message still being sent */
		if (w->state == SRNIC_WQE_SENDING && !wqe_is_rd_atomic(w))
			progress |= comp_ack_inside(w, psn, w->sent_pkts);
	}
	if (ev == COMP_EV_NAK)
		comp_nak(eng, qp, c, aeth, psn);
	else if (!progress)
		eng_stat(eng, SRNIC_STAT_COMP_DUP_ACK, 1);
	if (progress) {
		qp->req.retry_left = qp->retry_cnt;
		qp->req.rnr_left = qp->rnr_retry;
		qp->req.read_retry = 0;
		qp->req.starved_run = 0;
	}
	eng_comp_retire(eng, qp);
	if (progress && qp->timeout != 0) {
		/* not in an RNR wait (a RNR NAK that also acknowledges): that
		 * wait is no ACK timeout, and its rewound WQE counts as
		 * outstanding */
		qp->req.timer_at = eng_comp_outstanding(qp) && qp->req.wait_until == 0 ?
				   eng->now + qp->timeout_cycles : 0;
		eng_timer_arm(eng, qp, qp->req.timer_at);
	}
}

bool
eng_comp_outstanding(const struct srnic_qp *qp)
{
	uint32_t c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	const struct srnic_swqe *w;

	if (c != qp->sq.req)
		return true;
	if (qp->sq.req == head)
		return false;
	/* partly sent, or rewound after it was on the wire (its resend not
	 * gone yet: a port without TX room; the ACK timer still runs) */
	w = &qp->sq.wqe[qp->sq.req & qp->sq.mask];
	return w->sent_pkts > 0 || w->resent;
}

void
eng_comp_timer(struct srnic_engine *eng, struct srnic_qp *qp)
{
	uint32_t c, head;
	struct srnic_swqe *w = NULL;

	/* the deadline first: the SQ's lines stay untouched on every turn
	 * but the rare one where the timer is due */
	if (likely(qp->req.timer_at == 0 || eng->now < qp->req.timer_at))
		return;
	c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);
	head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	qp->req.timer_at = 0;
	if (!eng_comp_outstanding(qp))
		return;
	/* the oldest request not acknowledged yet */
	for (; c != head; c++) {
		w = &qp->sq.wqe[c & qp->sq.mask];
		if (w->state != SRNIC_WQE_DONE)
			break;
	}
	if (c == head || w->state == SRNIC_WQE_POSTED)
		return;
	if (unlikely(eng_poll_late(eng, qp)) && qp->req.starved_run < SRNIC_RETRY_STARVED_MAX) {
		qp->req.starved_run++;
		eng_stat(eng, SRNIC_STAT_RETRY_STARVED, 1);
	} else {
		eng_qp_stat(eng, SRNIC_STAT_TIMEOUT, &qp->stats.timeouts);
		if (!eng_qp_retry_take(qp)) {
			/* retry_cnt spent: the WQE fails, the QP goes to ERR (C9-140) */
			if (c == qp->sq.req)
				qp->sq.req++; /* partly sent: it retires with its error */
			wqe_done(qp, w, IBV_WC_RETRY_EXC_ERR);
			eng_comp_retire(eng, qp);
			return;
		}
		eng_qp_stat(eng, SRNIC_STAT_RETRANSMIT, &qp->stats.retransmits);
	}
	eng_route_refresh(eng, qp); /* the peer may have moved */
	/* from the first packet no ACK covered (a READ asks for what is
	 * missing, an atomic is one packet) */
	comp_rewind(qp, c, srnic_psn_add(w->first_psn, wqe_is_rd_atomic(w) ? 0 : w->acked_pkts));
	/* The timer runs again from now, resent or not: a port that takes
	 * nothing (its link down, its ring never drained) leaves the resend
	 * without TX room, and no packet sent would arm it; each expiry
	 * a timely poll finds still spends one of retry_cnt, so the QP fails
	 * instead of hanging
	 * (a resend that leaves arms it later, from its own send). */
	if (qp->timeout != 0) { /* 0: no timer (an SQD -> SQD modify may set it) */
		qp->req.timer_at = eng->now + qp->timeout_cycles;
		eng_timer_arm(eng, qp, qp->req.timer_at);
	}
}

/* The peer's MAC is not known yet (ARP/ND unanswered): nothing has gone,
 * but the local ACK timer runs as if the first request had (rxe sends into
 * the neighbour miss and its retransmit timer fires), so that a peer that
 * never resolves fails the QP instead of hanging it (C9-140). Armed when
 * the first WQE waits; each expiry spends one of retry_cnt (true: ask for
 * the MAC again); spent, the first WQE completes with RETRY_EXC_ERR and the
 * QP goes to ERR (the rest is flushed). */
bool
eng_comp_timer_unresolved(struct srnic_engine *eng, struct srnic_qp *qp)
{
	uint32_t c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	struct srnic_swqe *w;

	if (qp->timeout == 0 || c == head || c != qp->sq.req)
		return false; /* no timer, nothing posted, or something went */
	if (qp->req.timer_at == 0) {
		qp->req.timer_at = eng->now + qp->timeout_cycles;
		eng_timer_arm(eng, qp, qp->req.timer_at);
		return false;
	}
	if (eng->now < qp->req.timer_at)
		return false;
	eng_qp_stat(eng, SRNIC_STAT_TIMEOUT, &qp->stats.timeouts);
	if (!eng_qp_retry_take(qp)) {
		w = &qp->sq.wqe[c & qp->sq.mask];
		/* never started: no READ/atomic slot to give back */
		w->state = SRNIC_WQE_DONE;
		w->wc_status = IBV_WC_RETRY_EXC_ERR;
		qp->sq.req++;
		qp->req.timer_at = 0;
		eng_comp_retire(eng, qp);
		return false;
	}
	qp->req.timer_at = eng->now + qp->timeout_cycles;
	eng_timer_arm(eng, qp, qp->req.timer_at);
	return true;
}
