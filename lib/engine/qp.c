/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's side of a QP (rxe's rxe_qp.c error and flush): completions
 * into its CQs (an overflow is a CQ error), the move to ERR and the flush of
 * every outstanding WQE, and its route: the peer's MAC resolved through the
 * neighbour table, refreshed at a retry timeout.
 */
#include "eng_internal.h"
#include "neigh.h"

/* A CQ overflowed (a completion is lost): IBV_EVENT_CQ_ERR, at the first
 * only (the CQ is in error from then on). */
static __rte_noinline void
eng_cq_err(struct srnic_engine *eng, struct srnic_cq *cq)
{
	if (cq->err_raised)
		return;
	cq->err_raised = 1;
	eng_stat(eng, SRNIC_STAT_CQ_ERR, 1);
	eng_event_cq(eng, IBV_EVENT_CQ_ERR, cq);
}

void
eng_qp_cqe(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
	     const struct ibv_wc *wc, uint32_t wq_next)
{
	eng_qp_cqe_se(eng, qp, cq, wc, wq_next, false);
}

void
eng_qp_cqe_se(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
		const struct ibv_wc *wc, uint32_t wq_next, bool solicited)
{
	eng_stat(eng, SRNIC_STAT_CQE, 1);
	if (wc->status != IBV_WC_SUCCESS)
		eng_stat(eng, SRNIC_STAT_CQE_ERR, 1);
	if (unlikely(srnic_cq_push_se(cq, wc, qp, wq_next, solicited) != 0)) {
		eng_stat(eng, SRNIC_STAT_CQ_OVERFLOW, 1);
		eng_cq_err(eng, cq);
		eng_qp_to_err(eng, qp, "CQ overflow");
	}
}

void
eng_qp_to_err(struct srnic_engine *eng, struct srnic_qp *qp, const char *why)
{
	uint8_t s = atomic_load_explicit(&qp->state, memory_order_relaxed);

	/* A compare-and-swap, never a store: the application may be moving
	 * the QP at the same time. A QP it put in RESET stays there (its
	 * rings are being rewound); a modify that checked the old state
	 * fails its own swap instead of bringing the QP back. */
	while (s != IBV_QPS_ERR && s != IBV_QPS_RESET) {
		if (atomic_compare_exchange_weak_explicit(&qp->state, &s, IBV_QPS_ERR,
							  memory_order_acq_rel,
							  memory_order_relaxed)) {
			eng_stat(eng, SRNIC_STAT_QP_TO_ERR, 1);
			/* Rare and final for the QP: worth a line. */
			SRNIC_LOG(NOTICE, "qp %#x to ERR: %s", qp->qpn, why);
			eng_event(eng, IBV_EVENT_QP_FATAL, qp);
			break;
		}
	}
	if (s == IBV_QPS_RESET)
		return;
	eng_activate(eng, qp); /* to flush */
}

static void
flush_cqe(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq, uint64_t wr_id,
	  enum ibv_wc_opcode op, uint32_t wq_next)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = IBV_WC_WR_FLUSH_ERR;
	wc.opcode = op;
	wc.qp_num = qp->qpn;
	eng_stat(eng, SRNIC_STAT_CQE, 1);
	eng_stat(eng, SRNIC_STAT_CQE_ERR, 1);
	if (srnic_cq_push(cq, &wc, qp, wq_next) != 0) {
		eng_stat(eng, SRNIC_STAT_CQ_OVERFLOW, 1);
		eng_cq_err(eng, cq);
	}
}

void
eng_qp_flush(struct srnic_engine *eng, struct srnic_qp *qp)
{
	uint32_t c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	uint32_t t, rh;

	/* Every WQE completes, errors always with a CQE (IBTA 10.8.3.3). */
	for (; c != h; c++) {
		struct srnic_swqe *w = &qp->sq.wqe[c & qp->sq.mask];

		flush_cqe(eng, qp, qp->scq, w->wr_id, eng_wr_to_wc_opcode(w->opcode), c + 1);
	}
	qp->sq.req = c;
	qp->req_idle = 0;
	qp->req.rd_atomic = 0;
	qp->req.timer_at = 0;
	qp->req.wait_until = 0;
	qp->req.starved_run = 0;
	atomic_store_explicit(&qp->sq.comp, c, memory_order_release);

	if (qp->resp.rwqe_taken) {
		flush_cqe(eng, qp, qp->rcq, qp->resp.rwqe.wr_id, IBV_WC_RECV, qp->resp.rwqe_next);
		qp->resp.rwqe_taken = 0;
	}
	if (qp->srq != NULL) {
		/* The SRQ's WQEs are its other QPs': only the one taken was
		 * flushed. The QP takes no more (ERR): the last WQE event
		 * (as rdmavt and the HCAs raise it), once per entry into ERR. */
		if (!qp->last_wqe_raised && srnic_qp_cur_state(qp) == IBV_QPS_ERR) {
			qp->last_wqe_raised = 1;
			eng_stat(eng, SRNIC_STAT_SRQ_LAST_WQE, 1);
			eng_event(eng, IBV_EVENT_QP_LAST_WQE_REACHED, qp);
		}
		qp->resp.head = qp->resp.tail = 0;
		qp->resp.rd_atomic = 0;
		return;
	}
	t = atomic_load_explicit(&qp->rq.tail, memory_order_relaxed);
	rh = atomic_load_explicit(&qp->rq.head, memory_order_acquire);
	for (; t != rh; t++)
		flush_cqe(eng, qp, qp->rcq, qp->rq.wqe[t & qp->rq.mask].wr_id, IBV_WC_RECV, t + 1);
	atomic_store_explicit(&qp->rq.tail, t, memory_order_release);
	qp->resp.head = qp->resp.tail = 0;
	qp->resp.rd_atomic = 0;
}

/* Whether the QP's route is complete, taking the peer's MAC from the
 * neighbour table if it is there by now; asks nobody. */
bool
eng_qp_route_known(struct srnic_qp *qp)
{
	union ibv_gid key;

	if (qp->route_ok)
		return true;
	srnic_neigh_key(qp->route.ip_ver, qp->route.dst_ip, &key);
	if (srnic_neigh_lookup(qp->dev, key.raw, &qp->route.dst_mac) != 0)
		return false;
	srnic_hdr_tmpl_build(&qp->tmpl, &qp->route, qp->dest_qpn);
	qp->route_ok = 1;
	return true;
}

/* Resolve the peer's MAC of a QP whose route is incomplete. */
void
eng_qp_resolve(struct srnic_engine *eng, struct srnic_qp *qp)
{
	union ibv_gid key;
	uint64_t now;

	if (eng_qp_route_known(qp))
		return;
	srnic_neigh_key(qp->route.ip_ver, qp->route.dst_ip, &key);
	srnic_neigh_want(eng->dev, key.raw); /* the reply is learned */
	if (!qp->arp_waiting && eng->nb_arp_wait < SRNIC_ARP_WAIT_MAX) {
		qp->arp_waiting = 1;
		eng->arp_wait[eng->nb_arp_wait++] = qp;
	}
	now = eng->now;
	if (now >= qp->arp_next_tsc) {
		qp->arp_next_tsc = now + rte_get_timer_hz() / 1000 * SRNIC_ARP_RETRY_MS;
		eng_neigh_solicit(eng, key.raw);
	}
	eng_timer_arm(eng, qp, qp->arp_next_tsc);
}

/* A retry timeout of a QP whose route is resolved: its peer's MAC may have
 * moved. Take what the table knows now (a reply or gratuitous
 * ARP since); if nothing changed, ask again, so that the reply refreshes
 * the entry for the next retry. Static entries, and MACs the address
 * vector gave (no entry, or the application's dmac whatever the table
 * says), are left alone. One request per expiry at most:
 * the ACK timeout and retry_cnt bound them. */
void
eng_route_refresh(struct srnic_engine *eng, struct srnic_qp *qp)
{
	struct rte_ether_addr mac;
	union ibv_gid key;
	bool is_static;

	if (qp->route_dmac)
		return;
	srnic_neigh_key(qp->route.ip_ver, qp->route.dst_ip, &key);
	if (srnic_neigh_peek(eng->dev, key.raw, &mac, &is_static) != 0 || is_static)
		return;
	if (!rte_is_same_ether_addr(&mac, &qp->route.dst_mac)) {
		qp->route.dst_mac = mac;
		srnic_hdr_tmpl_build(&qp->tmpl, &qp->route, qp->dest_qpn);
		eng_stat(eng, SRNIC_STAT_NEIGH_MAC_MOVED, 1);
		return;
	}
	eng_neigh_solicit(eng, key.raw);
}
