/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-lcore loop: RX burst -> parse/dispatch, packets redirected from
 * other engines, then for each QP pinned here: flush if in ERR, responses
 * owed, requests to send; finally one TX burst. Everything a QP touches on
 * the data path is touched by its engine only: no locks.
 */
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_launch.h>

#include "eng_internal.h"
#include "neigh.h"

/* The device whose engine this thread is polling (inside
 * srnic_engine_poll(), e.g. in a host_rx callback); NULL outside. */
_Thread_local const struct srnic_dev *srnic_poll_dev;

/* The neighbour table changed: give every QP waiting for a MAC a turn. */
static void
eng_neigh_changed(struct srnic_engine *eng)
{
	uint32_t i;

	eng->neigh_gen_seen = atomic_load_explicit(&eng->dev->neigh_gen, memory_order_acquire);
	for (i = 0; i < eng->nb_arp_wait; i++) {
		eng->arp_wait[i]->arp_waiting = 0;
		eng_activate(eng, eng->arp_wait[i]);
	}
	eng->nb_arp_wait = 0;
}

/* Install the AV an SQD -> SQD modify handed off (qp->av_pending): from
 * RTR on, only the engine writes the route and the header template. */
static __rte_noinline void
qp_av_install(struct srnic_qp *qp)
{
	qp->route = qp->route_next;
	qp->route_ok = qp->route_next_ok;
	srnic_hdr_tmpl_build(&qp->tmpl, &qp->route, qp->dest_qpn);
}

/* Every WQE the requester started is done: nothing in flight, and the next
 * one (if any) not begun. */
static inline bool
qp_sq_drained(const struct srnic_qp *qp)
{
	uint32_t c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);

	return c == qp->sq.req &&
	       (c == head || qp->sq.wqe[c & qp->sq.mask].state == SRNIC_WQE_POSTED);
}

/* SQD: raise IBV_EVENT_SQ_DRAINED once per entry into SQD (sqd_gen), if
 * the RTS -> SQD asked for it (IBV_QP_EN_SQD_ASYNC_NOTIFY). */
static __rte_noinline void
eng_sqd_check(struct srnic_engine *eng, struct srnic_qp *qp)
{
	uint32_t gen = atomic_load_explicit(&qp->sqd_gen, memory_order_relaxed);

	if (qp->sqd_done_gen == gen || !qp_sq_drained(qp))
		return;
	qp->sqd_done_gen = gen;
	eng_stat(eng, SRNIC_STAT_SQD_DRAINED, 1);
	if (qp->sqd_notify)
		eng_event(eng, IBV_EVENT_SQ_DRAINED, qp);
}

/* The peer's MAC is unknown (RTS or SQD): nothing can go, but the ACK
 * timer runs. For requests already sent (before an SQD -> SQD AV
 * moved the peer) it is the usual one: an expiry spends a retry and
 * rewinds, spent it gives RETRY_EXC_ERR; then, or if nothing was sent, the
 * one that runs as if the first WQE had gone (not in SQD when the drain is
 * over: SQD starts nothing). True when a timer expired (a retry spent):
 * ask for the MAC again. */
static __rte_noinline bool
eng_unresolved_timer(struct srnic_engine *eng, struct srnic_qp *qp, enum ibv_qp_state st)
{
	bool spent = false;

	if (eng_comp_outstanding(qp)) {
		uint64_t expiries = qp->stats.timeouts;

		eng_comp_timer(eng, qp);
		spent = qp->stats.timeouts != expiries;
		if (eng_comp_outstanding(qp) || srnic_qp_cur_state(qp) == IBV_QPS_ERR)
			return spent;
	}
	if (st == IBV_QPS_SQD && qp_sq_drained(qp))
		return spent;
	return eng_comp_timer_unresolved(eng, qp) || spent;
}

/* One QP's turn. Returns true if it has work left for the next poll. */
static bool
eng_qp_run(struct srnic_engine *eng, struct srnic_qp *qp)
{
	enum ibv_qp_state st = srnic_qp_cur_state(qp);
	bool more;

	/* Only in the states an SQD -> SQD AV can still be meant for (SQD,
	 * or RTS when SQD -> RTS came before this poll); RESET drops it. */
	if (unlikely(atomic_load_explicit(&qp->av_pending, memory_order_relaxed)) &&
	    (st == IBV_QPS_SQD || st == IBV_QPS_RTS) &&
	    atomic_exchange_explicit(&qp->av_pending, 0, memory_order_acquire))
		qp_av_install(qp);

	if (st == IBV_QPS_ERR) {
		if (unlikely(qp->resp_owed))
			eng_resp_owed_at_err(eng, qp, eng_qp_route_known(qp));
		eng_qp_flush(eng, qp);
		return false; /* posts in ERR ring the doorbell again */
	}
	if (st < IBV_QPS_RTR)
		return false;
	if (unlikely(!qp->route_ok)) {
		eng_qp_resolve(eng, qp);
		if (!qp->route_ok) {
			/* Nothing can go, but the ACK timer runs: an
			 * expiry spends a retry and asks for the MAC again. */
			if ((st == IBV_QPS_RTS || st == IBV_QPS_SQD) &&
			    eng_unresolved_timer(eng, qp, st)) {
				qp->arp_next_tsc = 0;
				eng_qp_resolve(eng, qp);
			}
			/* the wheel wakes it for the next ARP/ND or expiry */
			return srnic_qp_cur_state(qp) == IBV_QPS_ERR;
		}
	}
	more = qp->resp_owed ? eng_resp_run(eng, qp) : false;
	/* SQD drains (IBTA 10.3.1): the ACK timer, retries and the
	 * message in progress go on as in RTS; the requester starts no new
	 * WQE (eng_req_run()), and once the last one started is done the
	 * application hears of it once. */
	if (st == IBV_QPS_RTS || st == IBV_QPS_SQD) {
		eng_comp_timer(eng, qp);
		more |= eng_req_run(eng, qp);
		if (unlikely(st == IBV_QPS_SQD))
			eng_sqd_check(eng, qp);
	}
	return more || srnic_qp_cur_state(qp) == IBV_QPS_ERR;
}

/* The frames eng_tx_loopback() (tx.c) took at the previous flush,
 * received in bursts. */
static __rte_noinline uint16_t
eng_rx_loopback(struct srnic_engine *eng)
{
	uint16_t n = eng->loop_len, i, k;

	eng->loop_len = 0;
	eng_stat(eng, SRNIC_STAT_RX_LOOPBACK, n);
	for (i = 0; i < n; i += k) {
		k = (uint16_t)RTE_MIN(n - i, SRNIC_RX_BURST);
		eng_recv_burst(eng, &eng->loop_buf[i], k, SRNIC_PARSE_F_NO_ICRC);
	}
	return n;
}

/* Under many QPs with work: RX bursts after a full first one, until one
 * comes back short, SRNIC_POLL_RX_BURSTS in all. Returns the packets. */
static __rte_noinline uint32_t
eng_rx_drain(struct srnic_engine *eng, struct rte_mbuf **pkts)
{
	uint32_t b, n = 0;
	uint16_t k;

	for (b = 1; b < SRNIC_POLL_RX_BURSTS; b++) {
		k = eng_rx_burst(eng, pkts, SRNIC_RX_BURST);
		if (k > 0)
			eng_recv_burst(eng, pkts, k, 0);
		n += k;
		if (k < SRNIC_RX_BURST)
			break;
	}
	return n;
}

unsigned int
srnic_engine_poll(struct srnic_engine *eng)
{
	struct rte_mbuf *pkts[SRNIC_RX_BURST];
	uint16_t k, r;
	uint32_t i, n, cnt, keep, tx_before, moved;
	uint64_t now, seq;
	const struct srnic_dev *prev_dev;
	bool port_off;

	/* odd: inside. Only this engine writes poll_seq: a relaxed store.
	 * Two Dekker pairs meet at the one fence below (C11: a seq_cst fence
	 * on each side between the store and the load; a seq_cst RMW
	 * followed by an acquire load is not enough, and ARMv8.3 LDAPR lets
	 * the load pass):
	 * - quiesce: poll_seq odd, fence, then QP state / QP and MR tables;
	 *   the control path stores those, fences, then reads poll_seq
	 *   (srnic_dev_quiesce()).
	 * - doorbells: db_pending cleared (eng_doorbells()), fence, then the
	 *   SQ/RQ heads; the poster stores a head, fences, then sets
	 *   db_pending (srnic_qp_doorbell()).
	 * On x86 the fence is the poll's one mfence (it was a lock xadd). */
	seq = atomic_load_explicit(&eng->poll_seq, memory_order_relaxed) + 1;
	atomic_store_explicit(&eng->poll_seq, seq, memory_order_relaxed);
	prev_dev = srnic_poll_dev;
	srnic_poll_dev = eng->dev;
	/* The doorbell, redirect and graveyard rings are empty in most polls:
	 * each is looked at with one compare of its producer's tail and our
	 * consumer's (rte_ring_empty()), and dequeued only when it holds
	 * something. A producer's entry the compare misses is one its
	 * dequeue would have missed too: taken next poll. */
	if (!rte_ring_empty(eng->doorbell))
		eng_doorbells(eng);
	atomic_thread_fence(memory_order_seq_cst);
	/* the port is being started again (lib/core/port.c): hands off */
	port_off = atomic_load_explicit(&eng->dev->port_paused, memory_order_relaxed);
	now = rte_get_timer_cycles();
	/* The time since the previous poll is charged to busy or idle by what
	 * that poll did (testpmd's --record-core-cycles, without a 2nd rdtsc). */
	eng->poll_gap = likely(eng->now != 0) ? now - eng->now : 0;
	eng->stats[eng->last_poll_busy ? SRNIC_STAT_POLL_BUSY_CYCLES :
					 SRNIC_STAT_POLL_IDLE_CYCLES] += eng->poll_gap;
	eng->now = now;
	tx_before = eng->stats[SRNIC_STAT_TX_PKTS];

	/* One RX burst per poll while every QP with work runs in it; with
	 * more (the poll runs SRNIC_POLL_QPS of them), bursts until one comes
	 * back short, SRNIC_POLL_RX_BURSTS at most: one burst per poll then
	 * fell behind the ACKs of what a poll sends. Not always: with a few
	 * busy QPs the drain cost a fifth of the 64 B READ rate (8 QPs x 16,
	 * doc/performance.md). The first burst is outside the loop: an idle
	 * poll pays one call and one compare for RX. */
	n = 0;
	if (likely(!port_off)) {
		k = eng_rx_burst(eng, pkts, SRNIC_RX_BURST);
		if (k > 0) {
			eng_recv_burst(eng, pkts, k, 0);
			n = k;
			if (unlikely(k == SRNIC_RX_BURST) &&
			    eng->active_tail - eng->active_head > SRNIC_POLL_QPS)
				n += eng_rx_drain(eng, pkts);
		}
	}
	r = 0;
	if (!rte_ring_empty(eng->redirect)) {
		r = (uint16_t)rte_ring_sc_dequeue_burst(eng->redirect, (void **)pkts,
							SRNIC_RX_BURST, NULL);
		if (r > 0) /* ICRC was checked by the engine that received them */
			eng_recv_burst(eng, pkts, r, SRNIC_PARSE_F_NO_ICRC);
	}
	if (unlikely(eng->loop_len > 0))
		r = (uint16_t)(r + eng_rx_loopback(eng));
	if (unlikely(!rte_ring_empty(eng->graveyard)))
		eng_bury(eng);
	/* the wheel's walk only when a tick has passed (one compare) */
	if (eng->now >> eng->tw.tick_shift >= eng->tw.cur)
		eng_timer_advance(eng);
	if (unlikely(atomic_load_explicit(&eng->dev->neigh_ask, memory_order_relaxed) != 0))
		eng_neigh_ask_run(eng); /* srnic_dev_resolve_neigh() asked */
	if (unlikely(eng->nb_arp_wait > 0) &&
	    atomic_load_explicit(&eng->dev->neigh_gen, memory_order_acquire) != eng->neigh_gen_seen)
		eng_neigh_changed(eng);

	/* Only QPs with work (woken by a packet, a doorbell or the wheel), at
	 * most SRNIC_POLL_QPS of them, from the FIFO's head; those with work
	 * left go back at its tail, the rest run first next poll, after one
	 * more RX burst. After a TX-bound poll the first QP goes to the tail:
	 * under a TX-bound load every QP's turn must come (else the last QPs
	 * sent nothing for seconds and their requesters timed out on a
	 * lossless link). */
	if (unlikely(eng->active_rotate)) {
		if (eng->active_tail - eng->active_head > 1)
			eng->active[eng->active_tail++ & (ENG_ACTIVE_SLOTS - 1)] =
				eng->active[eng->active_head++ & (ENG_ACTIVE_SLOTS - 1)];
		eng->active_rotate = 0;
	}
	cnt = RTE_MIN(eng->active_tail - eng->active_head, (uint32_t)SRNIC_POLL_QPS);
	keep = 0;
	for (i = 0; i < cnt; i++) {
		struct srnic_qp *qp = eng->active[eng->active_head++ & (ENG_ACTIVE_SLOTS - 1)];

		if (eng_qp_run(eng, qp)) {
			eng->active[eng->active_tail++ & (ENG_ACTIVE_SLOTS - 1)] = qp;
			keep++;
		} else {
			qp->active = 0;
		}
	}
	if (unlikely(eng_tx_free(eng) <= SRNIC_TX_RESERVE) && keep > 1)
		eng->active_rotate = 1;

	if (likely(!port_off))
		eng_tx_flush(eng);
	/* even: outside; only this engine writes it, and a release store
	 * (a plain one on x86) orders everything above before it */
	atomic_store_explicit(&eng->poll_seq, seq + 1, memory_order_release);
	srnic_poll_dev = prev_dev;
	moved = n + r + (uint32_t)(eng->stats[SRNIC_STAT_TX_PKTS] - tx_before);
	eng->last_poll_busy = moved != 0;
	eng->stats[SRNIC_STAT_POLL_BUSY] += moved != 0;
	return moved;
}

static int
eng_main(void *arg)
{
	struct srnic_engine *eng = arg;

	while (!atomic_load_explicit(&eng->stop, memory_order_relaxed))
		srnic_engine_poll(eng);
	return 0;
}

int
srnic_engine_launch(struct srnic_engine *eng, unsigned int lcore_id)
{
	int rc;

	if (eng == NULL || atomic_load(&eng->running))
		return -EINVAL;
	atomic_store(&eng->stop, 0);
	rc = rte_eal_remote_launch(eng_main, eng, lcore_id);
	if (rc == 0) {
		eng->lcore = lcore_id;
		atomic_store(&eng->running, 1);
	}
	return rc;
}

int
srnic_engine_stop(struct srnic_engine *eng)
{
	if (eng == NULL)
		return -EINVAL;
	if (!atomic_load(&eng->running))
		return 0;
	atomic_store(&eng->stop, 1);
	rte_eal_wait_lcore(eng->lcore);
	atomic_store(&eng->running, 0);
	return 0;
}
