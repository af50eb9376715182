/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The per-lcore loop: RX burst -> parse/dispatch, packets redirected from
 * other engines, then for each QP pinned here: flush if in ERR, responses
 * owed, requests to send; finally one TX burst. Everything a QP touches on
 * the data path is touched by its engine only: no locks.
 */
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_malloc.h>

#include "engine.h"
#include "neigh.h"

RTE_LOG_REGISTER(srnic_logtype_engine, srnic.engine, INFO);

/* ---- packets ---- */

struct rte_mbuf *
srnic_pkt_new(struct srnic_engine *eng, struct srnic_qp *qp, uint8_t opcode, uint32_t psn,
	      uint8_t **bth)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(eng->dev->pool);
	uint8_t *b;

	if (unlikely(m == NULL)) {
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return NULL;
	}
	b = srnic_pkt_init_tmpl(m, &qp->tmpl, opcode, qp->ip_id++);
	if (unlikely(b == NULL)) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	srnic_bth_set_psn(b, psn);
	if (qp->tmpl.ip_ver == 4)
		m->ol_flags |= eng->tx_ol_ipv4; /* the NIC's IPv4 checksum, if offered */
	*bth = b;
	return m;
}

/* One zero-copy segment over [va, va + len) of mr at iova, chained to m. */
static inline int
pkt_attach_seg(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr, uint64_t va,
	       rte_iova_t iova, uint32_t len)
{
	struct rte_mbuf *e = rte_pktmbuf_alloc(eng->dev->ext_pool);

	if (unlikely(e == NULL)) {
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return -ENOMEM;
	}
	mr->zc_credit[eng->index].n--; /* the mbuf's reference, prepaid */
	rte_pktmbuf_attach_extbuf(e, (void *)(uintptr_t)va, iova, (uint16_t)len, &mr->shinfo);
	e->data_len = (uint16_t)len;
	e->pkt_len = len;
	eng_stat(eng, SRNIC_STAT_RESP_ZC_SEGS, 1);
	if (unlikely(rte_pktmbuf_chain(m, e) != 0)) {
		rte_pktmbuf_free(e);
		return -ENOMEM;
	}
	return 0;
}

/* An MR that is not IOVA-contiguous: a segment per run of pages whose IOVAs
 * follow each other (a piece of at most a PMTU crosses one page boundary
 * on 4 KiB pages, none on huge pages). */
static __rte_noinline int
pkt_attach_split(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr, uint64_t va,
		 uint32_t len)
{
	uint64_t pg = 1ull << mr->pg_shift;

	while (len > 0) {
		uint64_t off = va - mr->pg_base;
		uint64_t p = off >> mr->pg_shift;
		rte_iova_t iova = mr->iova_pg[p] + (off & (pg - 1));
		uint32_t n = (uint32_t)RTE_MIN((uint64_t)len, pg - (off & (pg - 1)));
		int rc;

		while (n < len && mr->iova_pg[p + 1] == mr->iova_pg[p] + pg) {
			n = (uint32_t)RTE_MIN((uint64_t)len, n + pg);
			p++;
		}
		if (n < len)
			eng_stat(eng, SRNIC_STAT_TX_IOVA_SPLIT, 1);
		/* The caller had a reference for the first segment; the few
		 * more a split takes fit in the room above SRNIC_MR_MAX_ZC_REFS. */
		if (mr->zc_credit[eng->index].n == 0) {
			__atomic_add_fetch(&mr->shinfo.refcnt, SRNIC_ZC_CREDIT_BATCH,
					   __ATOMIC_ACQ_REL);
			mr->zc_credit[eng->index].n = SRNIC_ZC_CREDIT_BATCH;
		}
		rc = pkt_attach_seg(eng, m, mr, va, iova, n);
		if (rc != 0)
			return rc;
		va += n;
		len -= n;
	}
	return 0;
}

int
srnic_pkt_attach(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr, uint64_t va,
		 uint32_t len)
{
	if (len == 0)
		return 0;
	/* Memory the port's DMA cannot reach (no memseg list or mapping for
	 * it, lib/core/mr.c) is never attached. */
	if (unlikely(mr->no_dma)) {
		if (srnic_pkt_attach_copy(eng, m, va, len) != 0)
			return -ENOMEM;
		eng_stat(eng, SRNIC_STAT_TX_UNMAPPED_COPY, 1);
		return 0;
	}
	/* References on the MR are bought in batches per engine: one atomic
	 * on the shared line per SRNIC_ZC_CREDIT_BATCH attachments, not one
	 * each (the line lives with the lcore that frees the mbufs). */
	if (unlikely(mr->zc_credit[eng->index].n == 0) &&
	    rte_mbuf_ext_refcnt_read(&mr->shinfo) < SRNIC_MR_MAX_ZC_REFS) {
		/* Atomic even at refcnt 1 (rte_mbuf_ext_refcnt_update() is
		 * not, there): another engine may be buying too. */
		__atomic_add_fetch(&mr->shinfo.refcnt, SRNIC_ZC_CREDIT_BATCH, __ATOMIC_ACQ_REL);
		mr->zc_credit[eng->index].n = SRNIC_ZC_CREDIT_BATCH;
	}
	if (likely(mr->zc_credit[eng->index].n != 0)) {
		if (unlikely(mr->iova_pg != NULL))
			return pkt_attach_split(eng, m, mr, va, len);
		return pkt_attach_seg(eng, m, mr, va,
				      mr->iova == RTE_BAD_IOVA ? RTE_BAD_IOVA :
				      mr->iova + (va - (uint64_t)(uintptr_t)mr->addr), len);
	}
	/* The 16-bit shared refcount is nearly full: copy this one. */
	if (srnic_pkt_attach_copy(eng, m, va, len) != 0)
		return -ENOMEM;
	eng_stat(eng, SRNIC_STAT_RESP_ZC_COPY, 1);
	return 0;
}

int
srnic_pkt_attach_copy(struct srnic_engine *eng, struct rte_mbuf *m, uint64_t va, uint32_t len)
{
	struct rte_mbuf *e = rte_pktmbuf_alloc(eng->dev->tx_copy_pool);

	if (e == NULL || rte_pktmbuf_tailroom(e) < len) {
		rte_pktmbuf_free(e);
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return -ENOMEM;
	}
	rte_memcpy(rte_pktmbuf_append(e, (uint16_t)len), (const void *)(uintptr_t)va, len);
	if (unlikely(rte_pktmbuf_chain(m, e) != 0)) {
		rte_pktmbuf_free(e);
		return -ENOMEM;
	}
	return 0;
}

/* A packet of more segments than the port takes, copied into one mbuf of
 * the TX copy pool (its data room holds a jumbo frame). Frees m (and with it
 * the MR references of its attached pieces); NULL when out of mbufs. */
static __rte_noinline struct rte_mbuf *
eng_linearise(struct srnic_engine *eng, struct rte_mbuf *m)
{
	struct rte_mbuf *n = rte_pktmbuf_alloc(eng->dev->tx_copy_pool);
	const struct rte_mbuf *s;
	uint8_t *d;

	if (unlikely(n == NULL || rte_pktmbuf_tailroom(n) < rte_pktmbuf_pkt_len(m))) {
		rte_pktmbuf_free(n);
		rte_pktmbuf_free(m);
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return NULL;
	}
	d = (uint8_t *)rte_pktmbuf_append(n, (uint16_t)rte_pktmbuf_pkt_len(m));
	for (s = m; s != NULL; s = s->next) {
		rte_memcpy(d, rte_pktmbuf_mtod(s, const uint8_t *), s->data_len);
		d += s->data_len;
	}
	n->tx_offload = m->tx_offload;
	n->ol_flags |= m->ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK;
	rte_pktmbuf_free(m);
	eng_stat(eng, SRNIC_STAT_TX_LINEARISED, 1);
	return n;
}

int
srnic_pkt_xmit(struct srnic_engine *eng, struct rte_mbuf *m)
{
	if (unlikely(srnic_pkt_close(m, eng->dev->pool) != 0)) {
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		rte_pktmbuf_free(m);
		return -ENOMEM;
	}
	/* Before the seal: the ICRC then runs over the copy, one flat piece. */
	if (unlikely(m->nb_segs > eng->tx_seg_max)) {
		m = eng_linearise(eng, m);
		if (m == NULL)
			return -ENOMEM;
	}
	eng_tx_queue(eng, m, 1); /* sealed at the flush */
	return 0;
}

enum srnic_key_err
srnic_sge_copy_in_sgl(struct srnic_qp *qp, const struct ibv_sge *sge, unsigned int nsge,
		      uint64_t off, const struct srnic_pkt *pkt, uint32_t len)
{
	uint32_t done = 0;
	unsigned int i;

	for (i = 0; i < nsge && len > 0; i++) {
		struct srnic_mr *mr;
		uint32_t n;
		enum srnic_key_err ke;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = (uint32_t)RTE_MIN((uint64_t)len, sge[i].length - off);
		ke = srnic_mr_check(qp->dev, qp->pd, sge[i].lkey, IBV_ACCESS_LOCAL_WRITE,
				    sge[i].addr + off, n, &mr);
		if (unlikely(ke != SRNIC_KEY_OK))
			return ke;
		srnic_pkt_copy_payload(pkt, done, (void *)(uintptr_t)(sge[i].addr + off), n);
		done += n;
		len -= n;
		off = 0;
	}
	return len == 0 ? SRNIC_KEY_OK : SRNIC_KEY_BOUNDS;
}

/* ---- QPs ---- */

/* A CQ overflowed (a completion is lost): IBV_EVENT_CQ_ERR, at the first
 * only (the CQ is in error from then on). */
static __rte_noinline void
eng_cq_err(struct srnic_engine *eng, struct srnic_cq *cq)
{
	if (cq->err_raised)
		return;
	cq->err_raised = 1;
	eng_stat(eng, SRNIC_STAT_CQ_ERR, 1);
	srnic_eng_event_cq(eng, IBV_EVENT_CQ_ERR, cq);
}

void
srnic_qp_cqe(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
	     const struct ibv_wc *wc, uint32_t wq_next)
{
	srnic_qp_cqe_se(eng, qp, cq, wc, wq_next, false);
}

void
srnic_qp_cqe_se(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
		const struct ibv_wc *wc, uint32_t wq_next, bool solicited)
{
	eng_stat(eng, SRNIC_STAT_CQE, 1);
	if (wc->status != IBV_WC_SUCCESS)
		eng_stat(eng, SRNIC_STAT_CQE_ERR, 1);
	if (unlikely(srnic_cq_push_se(cq, wc, qp, wq_next, solicited) != 0)) {
		eng_stat(eng, SRNIC_STAT_CQ_OVERFLOW, 1);
		eng_cq_err(eng, cq);
		srnic_qp_to_err(eng, qp, "CQ overflow");
	}
}

void
srnic_qp_to_err(struct srnic_engine *eng, struct srnic_qp *qp, const char *why)
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
			srnic_eng_event(eng, IBV_EVENT_QP_FATAL, qp);
			break;
		}
	}
	if (s == IBV_QPS_RESET)
		return;
	srnic_eng_activate(eng, qp); /* to flush */
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

/* RNR NAK timer values in units of 10 us (IBTA table 45); code 0 is 655.36 ms. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

uint64_t
srnic_rnr_timer_cycles(uint8_t code)
{
	return rte_get_timer_hz() / 100000 * rnr_timer_10us[code & 31];
}

uint64_t
srnic_ack_timeout_cycles(uint8_t code)
{
	if (code == 0)
		return 0;
	/* 4096 ns << code, in cycles; no overflow up to code 31 */
	return rte_get_timer_hz() / 1000000 * ((uint64_t)4096 << (code & 31)) / 1000;
}

void
srnic_qp_flush(struct srnic_engine *eng, struct srnic_qp *qp)
{
	uint32_t c = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	uint32_t t, rh;

	/* Every WQE completes, errors always with a CQE (IBTA 10.8.3.3). */
	for (; c != h; c++) {
		struct srnic_swqe *w = &qp->sq.wqe[c & qp->sq.mask];

		flush_cqe(eng, qp, qp->scq, w->wr_id, srnic_wr_to_wc_opcode(w->opcode), c + 1);
	}
	qp->sq.req = c;
	qp->req_idle = 0;
	qp->req.rd_atomic = 0;
	qp->req.timer_at = 0;
	qp->req.wait_until = 0;
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
			srnic_eng_event(eng, IBV_EVENT_QP_LAST_WQE_REACHED, qp);
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

/* Resolve the peer's MAC of a QP whose route is incomplete. */
static void
qp_resolve(struct srnic_engine *eng, struct srnic_qp *qp)
{
	uint64_t now;

	if (srnic_neigh_lookup(eng->dev, qp->route.dst_ip, &qp->route.dst_mac) == 0) {
		srnic_hdr_tmpl_build(&qp->tmpl, &qp->route, qp->dest_qpn);
		qp->route_ok = 1;
		return;
	}
	srnic_neigh_want(eng->dev, qp->route.dst_ip); /* the reply is learned */
	if (!qp->arp_waiting && eng->nb_arp_wait < SRNIC_ARP_WAIT_MAX) {
		qp->arp_waiting = 1;
		eng->arp_wait[eng->nb_arp_wait++] = qp;
	}
	now = eng->now;
	if (now >= qp->arp_next_tsc) {
		qp->arp_next_tsc = now + rte_get_timer_hz() / 1000 * SRNIC_ARP_RETRY_MS;
		srnic_neigh_solicit(eng, qp->route.dst_ip);
	}
	srnic_eng_timer_arm(eng, qp, qp->arp_next_tsc);
}

/* A retry timeout of a QP whose route is resolved: its peer's MAC may have
 * moved (item 14). Take what the table knows now (a reply or gratuitous
 * ARP since); if nothing changed, ask again, so that the reply refreshes
 * the entry for the next retry. Static entries, and MACs the address
 * vector gave (no entry, or the application's dmac whatever the table
 * says), are left alone. One request per expiry at most:
 * the ACK timeout and retry_cnt bound them. */
void
srnic_eng_route_refresh(struct srnic_engine *eng, struct srnic_qp *qp)
{
	struct rte_ether_addr mac;
	bool is_static;

	if (qp->route_dmac ||
	    srnic_neigh_peek(eng->dev, qp->route.dst_ip, &mac, &is_static) != 0 || is_static)
		return;
	if (!rte_is_same_ether_addr(&mac, &qp->route.dst_mac)) {
		qp->route.dst_mac = mac;
		srnic_hdr_tmpl_build(&qp->tmpl, &qp->route, qp->dest_qpn);
		eng_stat(eng, SRNIC_STAT_NEIGH_MAC_MOVED, 1);
		return;
	}
	srnic_neigh_solicit(eng, qp->route.dst_ip);
}

/* ---- the timer wheel ---- */

static inline uint64_t
qp_deadline(const struct srnic_qp *qp)
{
	uint64_t d = 0;

	if (qp->req.timer_at != 0)
		d = qp->req.timer_at;
	if (qp->req.wait_until != 0 && (d == 0 || qp->req.wait_until < d))
		d = qp->req.wait_until;
	if (!qp->route_ok && (d == 0 || qp->arp_next_tsc < d))
		d = qp->arp_next_tsc;
	return d;
}

static void
tw_insert(struct srnic_twheel *tw, struct srnic_qp *qp, uint64_t tick)
{
	if (tick < tw->cur)
		tick = tw->cur;
	if (tick - tw->cur >= SRNIC_TW_SLOTS)
		tick = tw->cur + SRNIC_TW_SLOTS - 1; /* comes back a turn later */
	TAILQ_INSERT_TAIL(&tw->slot[tick & (SRNIC_TW_SLOTS - 1)], qp, tw_link);
	qp->in_wheel = 1;
	qp->tw_tick = tick;
}

static void
tw_remove(struct srnic_twheel *tw, struct srnic_qp *qp)
{
	TAILQ_REMOVE(&tw->slot[qp->tw_tick & (SRNIC_TW_SLOTS - 1)], qp, tw_link);
	qp->in_wheel = 0;
}

void
srnic_eng_timer_arm(struct srnic_engine *eng, struct srnic_qp *qp, uint64_t deadline)
{
	if (deadline == 0)
		return;
	/* Re-armed on every packet sent: the common case is one shift. */
	if (qp->in_wheel) {
		if (qp->tw_tick << eng->tw.tick_shift <= deadline)
			return; /* wakes no later than asked: looked at again then */
		tw_remove(&eng->tw, qp);
	}
	tw_insert(&eng->tw, qp, deadline >> eng->tw.tick_shift);
}

/* Wake the QPs whose deadline has come; put back those whose moved. */
static void
tw_advance(struct srnic_engine *eng)
{
	struct srnic_twheel *tw = &eng->tw;
	uint64_t now_tick = eng->now >> tw->tick_shift;
	unsigned int steps = 0;

	while (tw->cur <= now_tick && steps < SRNIC_TW_SLOTS) {
		struct srnic_qp_list *slot = &tw->slot[tw->cur & (SRNIC_TW_SLOTS - 1)];
		struct srnic_qp *qp;

		while ((qp = TAILQ_FIRST(slot)) != NULL) {
			uint64_t d;

			tw_remove(tw, qp);
			d = qp_deadline(qp);
			if (d == 0)
				continue;
			if (d <= eng->now)
				srnic_eng_activate(eng, qp);
			else
				tw_insert(tw, qp, RTE_MAX(d >> tw->tick_shift, tw->cur + 1));
		}
		tw->cur++;
		steps++;
	}
	if (tw->cur <= now_tick)
		tw->cur = now_tick; /* idle for more than a turn: every slot was seen */
}

/* The device whose engine this thread is polling (inside
 * srnic_engine_poll(), e.g. in a host_rx callback); NULL outside. */
_Thread_local const struct srnic_dev *srnic_poll_dev;

/* ---- doorbells and the graveyard ---- */

void
srnic_qp_doorbell(struct srnic_qp *qp)
{
	/* Dekker, poster side: the sq/rq head (or state) store above, this
	 * fence, then db_pending. Engine side: db_pending cleared in
	 * eng_doorbells(), the fence in srnic_engine_poll(), then the heads.
	 * Either the engine sees our head, or we see its 0 and enqueue. */
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_exchange_explicit(&qp->db_pending, 1, memory_order_relaxed) &&
	    rte_ring_mp_enqueue(qp->eng->doorbell, qp) != 0)
		atomic_store(&qp->db_pending, 0); /* cannot happen: one entry per QP */
}

/* A buried QP's memory: the engine that served it frees it (the control
 * path hands it over and never calls back up here: lib/core uses the
 * engines, the engines never call lib/core). */
static void
eng_qp_free(struct srnic_qp *qp)
{
	rte_free(qp->sq.wqe);
	rte_free(qp->rq.wqe);
	rte_free(qp->sq.inline_buf);
	rte_free(qp);
}

void
srnic_engine_bury_qp(struct srnic_engine *eng, struct srnic_qp *qp)
{
	if (rte_ring_mp_enqueue(eng->graveyard, qp) != 0)
		SRNIC_LOG(ERR, "qp %#x: graveyard full, leaked", qp->qpn);
}

static void
eng_doorbells(struct srnic_engine *eng)
{
	struct srnic_qp *q[SRNIC_RX_BURST];
	unsigned int n, i;

	/* Drain it all: the graveyard below must not free a QP still here.
	 * The clear is relaxed: the fence after it in srnic_engine_poll()
	 * orders it before our reads of the heads (srnic_qp_doorbell()). */
	while ((n = rte_ring_sc_dequeue_burst(eng->doorbell, (void **)q, RTE_DIM(q), NULL)) > 0)
		for (i = 0; i < n; i++) {
			atomic_store_explicit(&q[i]->db_pending, 0, memory_order_relaxed);
			q[i]->req_idle = 0; /* posted to (or moved): look at the SQ */
			srnic_eng_activate(eng, q[i]);
		}
}

static void
eng_bury(struct srnic_engine *eng)
{
	struct srnic_qp *qp;
	uint32_t i;

	while (rte_ring_sc_dequeue(eng->graveyard, (void **)&qp) == 0) {
		if (qp->in_wheel)
			tw_remove(&eng->tw, qp);
		if (qp->arp_waiting)
			for (i = 0; i < eng->nb_arp_wait; i++)
				if (eng->arp_wait[i] == qp) {
					eng->arp_wait[i] = eng->arp_wait[--eng->nb_arp_wait];
					break;
				}
		if (qp->active)
			for (i = 0; i < eng->nb_active; i++)
				if (eng->active[i] == qp) {
					eng->active[i] = eng->active[--eng->nb_active];
					break;
				}
		eng_qp_free(qp);
	}
}

/* The neighbour table changed: give every QP waiting for a MAC a turn. */
static void
eng_neigh_changed(struct srnic_engine *eng)
{
	uint32_t i;

	eng->neigh_gen_seen = atomic_load_explicit(&eng->dev->neigh_gen, memory_order_acquire);
	for (i = 0; i < eng->nb_arp_wait; i++) {
		eng->arp_wait[i]->arp_waiting = 0;
		srnic_eng_activate(eng, eng->arp_wait[i]);
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
		srnic_eng_event(eng, IBV_EVENT_SQ_DRAINED, qp);
}

/* The peer's MAC is unknown (RTS or SQD): nothing can go, but the ACK
 * timer runs (item 9). For requests already sent (before an SQD -> SQD AV
 * moved the peer) it is the usual one: an expiry spends a retry and
 * rewinds, spent it gives RETRY_EXC_ERR; then, or if nothing was sent, the
 * one that runs as if the first WQE had gone (not in SQD when the drain is
 * over: SQD starts nothing). True when a timer expired (a retry spent, or
 * one more of retry_cnt 7's unlimited ones): ask for
 * the MAC again. */
static __rte_noinline bool
eng_unresolved_timer(struct srnic_engine *eng, struct srnic_qp *qp, enum ibv_qp_state st)
{
	bool spent = false;

	if (srnic_comp_outstanding(qp)) {
		uint64_t expiries = qp->stats.timeouts;

		srnic_comp_timer(eng, qp);
		spent = qp->stats.timeouts != expiries;
		if (srnic_comp_outstanding(qp) || srnic_qp_cur_state(qp) == IBV_QPS_ERR)
			return spent;
	}
	if (st == IBV_QPS_SQD && qp_sq_drained(qp))
		return spent;
	return srnic_comp_timer_unresolved(eng, qp) || spent;
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
		srnic_qp_flush(eng, qp);
		return false; /* posts in ERR ring the doorbell again */
	}
	if (st < IBV_QPS_RTR)
		return false;
	if (unlikely(!qp->route_ok)) {
		qp_resolve(eng, qp);
		if (!qp->route_ok) {
			/* Nothing can go, but the ACK timer runs (item 9): an
			 * expiry spends a retry and asks for the MAC again. */
			if ((st == IBV_QPS_RTS || st == IBV_QPS_SQD) &&
			    eng_unresolved_timer(eng, qp, st)) {
				qp->arp_next_tsc = 0;
				qp_resolve(eng, qp);
			}
			/* the wheel wakes it for the next ARP/ND or expiry */
			return srnic_qp_cur_state(qp) == IBV_QPS_ERR;
		}
	}
	more = qp->resp_owed ? srnic_resp_run(eng, qp) : false;
	/* SQD drains (IBTA 10.3.1): the ACK timer, retries and the
	 * message in progress go on as in RTS; the requester starts no new
	 * WQE (srnic_req_run()), and once the last one started is done the
	 * application hears of it once. */
	if (st == IBV_QPS_RTS || st == IBV_QPS_SQD) {
		srnic_comp_timer(eng, qp);
		more |= srnic_req_run(eng, qp);
		if (unlikely(st == IBV_QPS_SQD))
			eng_sqd_check(eng, qp);
	}
	return more || srnic_qp_cur_state(qp) == IBV_QPS_ERR;
}

/* ---- the loop ---- */

static void
eng_tx_flush(struct srnic_engine *eng)
{
	uint16_t sent, i;

	if (eng->tx_len == 0)
		return;
	/* ICRCs last, over packets built a while ago (srnic_pkt_seal()) */
	for (i = eng->tx_sealed; i < eng->tx_len; i++)
		if (eng->tx_roce[i])
			srnic_pkt_seal(eng->tx_buf[i]);
	/* The PMD's checks and fix-ups (e.g. i40e refuses more than 8
	 * segments), once per packet: those left over were prepared. One
	 * call when it takes them all (no callback: it returns at once). */
	i = eng->tx_sealed;
	while (i < eng->tx_len) {
		i += rte_eth_tx_prepare(eng->port_id, eng->queue, &eng->tx_buf[i],
					(uint16_t)(eng->tx_len - i));
		if (likely(i == eng->tx_len))
			break;
		/* tx_buf[i] refused (rte_errno): dropped like a lost packet,
		 * the requester's retry or the peer's resends recover */
		eng_stat(eng, SRNIC_STAT_TX_PREPARE_DROP, 1);
		rte_pktmbuf_free(eng->tx_buf[i]);
		memmove(&eng->tx_buf[i], &eng->tx_buf[i + 1],
			(eng->tx_len - i - 1) * sizeof(eng->tx_buf[0]));
		eng->tx_len--;
	}
	sent = rte_eth_tx_burst(eng->port_id, eng->queue, eng->tx_buf, eng->tx_len);
	if (sent < eng->tx_len)
		memmove(eng->tx_buf, eng->tx_buf + sent, (eng->tx_len - sent) * sizeof(eng->tx_buf[0]));
	eng->tx_len -= sent;
	eng->tx_sealed = eng->tx_len;
}

unsigned int
srnic_engine_poll(struct srnic_engine *eng)
{
	struct rte_mbuf *pkts[SRNIC_RX_BURST];
	uint16_t n, r;
	uint32_t i, cnt, keep, start, tx_before, moved;
	struct srnic_qp *head;
	uint64_t now, seq;
	const struct srnic_dev *prev_dev;

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
	eng_doorbells(eng);
	atomic_thread_fence(memory_order_seq_cst);
	now = rte_get_timer_cycles();
	/* The time since the previous poll is charged to busy or idle by what
	 * that poll did (testpmd's --record-core-cycles, without a 2nd rdtsc). */
	if (likely(eng->now != 0))
		eng->stats[eng->last_poll_busy ? SRNIC_STAT_POLL_BUSY_CYCLES :
						 SRNIC_STAT_POLL_IDLE_CYCLES] += now - eng->now;
	eng->now = now;
	tx_before = eng->stats[SRNIC_STAT_TX_PKTS];

	n = rte_eth_rx_burst(eng->port_id, eng->queue, pkts, SRNIC_RX_BURST);
	if (n > 0)
		srnic_recv_burst(eng, pkts, n, 0);
	r = (uint16_t)rte_ring_sc_dequeue_burst(eng->redirect, (void **)pkts, SRNIC_RX_BURST, NULL);
	if (r > 0) /* ICRC was checked by the engine that received them */
		srnic_recv_burst(eng, pkts, r, SRNIC_PARSE_F_NO_ICRC);
	eng_bury(eng);
	tw_advance(eng);
	if (unlikely(atomic_load_explicit(&eng->dev->neigh_ask, memory_order_relaxed) != 0))
		srnic_neigh_ask_run(eng); /* srnic_dev_resolve_neigh() asked */
	if (unlikely(eng->nb_arp_wait > 0) &&
	    atomic_load_explicit(&eng->dev->neigh_gen, memory_order_acquire) != eng->neigh_gen_seen)
		eng_neigh_changed(eng);

	/* Only QPs with work: woken by a packet, a doorbell or the wheel. */
	/* After a TX-bound poll the first QP runs last: the compaction below
	 * moves every kept QP anyway, so it rotates the list one place at no
	 * cost (active[0] saved, read last). */
	cnt = eng->nb_active;
	keep = 0;
	start = eng->active_rotate && cnt > 1;
	eng->active_rotate = 0;
	head = cnt > 0 ? eng->active[0] : NULL;
	for (i = start; i < cnt + start; i++) {
		struct srnic_qp *qp = i < cnt ? eng->active[i] : head;

		if (eng_qp_run(eng, qp))
			eng->active[keep++] = qp;
		else
			qp->active = 0;
	}
	if (eng->nb_active > cnt) /* woken while the others ran */
		memmove(&eng->active[keep], &eng->active[cnt],
			(eng->nb_active - cnt) * sizeof(eng->active[0]));
	eng->nb_active = keep + (eng->nb_active - cnt);
	/* Out of TX room: the QPs first in the list took it all. The first
	 * goes last, so that under a TX-bound load every QP's turn comes
	 * (issue 12 item 15: else the last QPs sent nothing for seconds and
	 * their requesters timed out on a lossless link). Per poll, not per
	 * packet, and only when TX-bound: O(1), the next poll's compaction
	 * does the move (no memmove of the list). */
	if (unlikely(eng_tx_free(eng) <= SRNIC_TX_RESERVE) && keep > 1)
		eng->active_rotate = 1;

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

struct srnic_engine *
srnic_engine_create(struct srnic_dev *dev, uint16_t index)
{
	struct srnic_engine *eng = rte_zmalloc("srnic_engine", sizeof(*eng), RTE_CACHE_LINE_SIZE);
	char name[RTE_RING_NAMESIZE];
	unsigned int i;

	if (eng == NULL)
		return NULL;
	eng->dev = dev;
	eng->index = index;
	eng->queue = index;
	eng->port_id = dev->port_id;
	snprintf(name, sizeof(name), "%.20s_rd%u", dev->name, index);
	eng->redirect = rte_ring_create(name, SRNIC_REDIRECT_RING, rte_socket_id(), RING_F_SC_DEQ);
	/* One entry per QP at most in each: room for every QP of the device. */
	snprintf(name, sizeof(name), "%.20s_db%u", dev->name, index);
	eng->doorbell = rte_ring_create(name, SRNIC_MAX_QP, rte_socket_id(),
					RING_F_SC_DEQ | RING_F_EXACT_SZ);
	snprintf(name, sizeof(name), "%.20s_gy%u", dev->name, index);
	eng->graveyard = rte_ring_create(name, SRNIC_MAX_QP, rte_socket_id(),
					 RING_F_SC_DEQ | RING_F_EXACT_SZ);
	eng->events = srnic_eng_events_create(dev, index);
	eng->active_cap = SRNIC_MAX_QP;
	eng->active = rte_zmalloc("srnic_active", sizeof(eng->active[0]) * eng->active_cap, 0);
	if (eng->redirect == NULL || eng->doorbell == NULL || eng->graveyard == NULL ||
	    eng->events == NULL || eng->active == NULL) {
		rte_ring_free(eng->events);
		rte_ring_free(eng->redirect);
		rte_ring_free(eng->doorbell);
		rte_ring_free(eng->graveyard);
		rte_free(eng->active);
		rte_free(eng);
		return NULL;
	}
	/* a power of two of timer cycles, so that ticks are shifts, not
	 * divisions (tens of cycles each, on every arm) */
	eng->tw.tick_shift = (uint8_t)rte_bsf64(rte_align64prevpow2(
		RTE_MAX(rte_get_timer_hz() / 1000000 * SRNIC_TW_TICK_US, 1ul)));
	eng->tw.cur = rte_get_timer_cycles() >> eng->tw.tick_shift;
	for (i = 0; i < SRNIC_TW_SLOTS; i++)
		TAILQ_INIT(&eng->tw.slot[i]);
	return eng;
}

void
srnic_engine_destroy(struct srnic_engine *eng)
{
	struct rte_mbuf *m;
	struct srnic_qp *qp;

	while (rte_ring_dequeue(eng->redirect, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	while (rte_ring_dequeue(eng->graveyard, (void **)&qp) == 0)
		eng_qp_free(qp);
	rte_ring_free(eng->redirect);
	rte_ring_free(eng->doorbell);
	rte_ring_free(eng->graveyard);
	rte_ring_free(eng->events);
	rte_pktmbuf_free_bulk(eng->tx_buf, eng->tx_len);
	rte_free(eng->active);
	rte_free(eng);
}
