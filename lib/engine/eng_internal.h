/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_ENG_INTERNAL_H
#define SRNIC_ENG_INTERNAL_H

/*
 * What the engine's files share, and only they (engine context; every
 * function here is eng_*): the loop (loop.c), packets out and the TX
 * buffer (tx.c), the QP's completions, error, flush and route (qp.c),
 * timers (timer.c), doorbells and the graveyard (doorbell.c), lifecycle
 * (engine.c), receive and dispatch (recv.c), requester (req.c), responder
 * (resp.c), receive WQEs (rwqe.c), completer (comp.c), UD and UC receive
 * (ud.c, uc.c), events (event.c), neighbours on the wire (neigh.c). What
 * the control path calls is engine.h and neigh.h (srnic_*).
 */

#include <rte_ethdev.h>
#include <rte_spinlock.h>

#define SRNIC_LOGTYPE srnic_logtype_engine
#include "rnic.h"
#include "cq.h"
#include "engine.h"

static inline void
eng_stat(struct srnic_engine *eng, enum srnic_stat s, uint64_t n)
{
	eng->stats[s] += n;
}

/* A protocol event counted for the engine and for the QP it happened on
 * (srnic_qp_get_stats()). */
static inline void
eng_qp_stat(struct srnic_engine *eng, enum srnic_stat s, uint64_t *qp_count)
{
	eng_stat(eng, s, 1);
	(*qp_count)++;
}

/*
 * Spend one of the QP's transport retries (an ACK timeout, a sequence NAK,
 * an implied NAK): false when none is left (the WQE then fails with
 * RETRY_EXC_ERR). Every retry_cnt counts, 7 too: IBTA names an infinite
 * value only for the RNR retry count, and hardware RNICs fail the WQE
 * after 7 transport retries (perftest's "transport retry counter
 * exceeded"). Linux's rxe never spends a count of 7, so the survivor of a
 * killed peer resends for ever; srnic does as hardware.
 */
static inline bool
eng_qp_retry_take(struct srnic_qp *qp)
{
	if (qp->req.retry_left == 0)
		return false;
	qp->req.retry_left--;
	return true;
}

/*
 * An engine that was not running cannot judge its peers: when this poll
 * began more than one of qp's ACK timeouts after the previous one (the
 * lcore descheduled, the program not polling), the expiry it finds says
 * nothing of the peer, whose answer may be queued behind, or whose own
 * engine starved beside ours. Such an expiry resends (a loss is still
 * repaired) but spends no retry (retry_starved). Every poll reads its RX
 * burst before the timers, so an ACK that came meanwhile is taken first.
 */
static inline bool
eng_poll_late(const struct srnic_engine *eng, const struct srnic_qp *qp)
{
	return eng->poll_gap > qp->timeout_cycles;
}

/*
 * The mbufs a burst is done with, put back per pool in bulk: a received
 * packet's segments come from up to three pools (header, external payload,
 * trailer), and rte_pktmbuf_free() pays the per-lcore cache lookup once per
 * segment.
 *
 * A segment attached to an external buffer (a zero-copy READ response's
 * payload, on the responder's MR) is detached here without its reference:
 * the references are dropped per shared info at the flush, one atomic per
 * burst and buffer, not one per packet on a line the attaching lcore writes
 * too (it buys its references in batches, tx.c). The reference count's
 * other readers (srnic_dereg_mr_wait()) see it fall at the end of the
 * burst, in the same poll. Pinned external buffers and shared segments take
 * rte_pktmbuf_prefree_seg()'s way.
 */
#define ENG_FREE_POOLS 4
#define ENG_FREE_EXT 4

struct eng_free_batch {
	uint16_t nb_pools;
	uint16_t nb_ext;
	uint16_t n[ENG_FREE_POOLS];
	struct rte_mempool *mp[ENG_FREE_POOLS];
	void *obj[ENG_FREE_POOLS][SRNIC_RX_BURST];
	struct {
		struct rte_mbuf_ext_shared_info *shinfo;
		void *addr;  /* the last one's buffer, for the free callback */
		uint16_t refs;
	} ext[ENG_FREE_EXT];
};

/* Drop the external buffers' references counted so far: the last one out
 * frees the buffer, as __rte_pktmbuf_free_extbuf() would have for the last
 * segment of the batch. */
static inline void
eng_free_batch_ext_flush(struct eng_free_batch *fb)
{
	uint16_t k;

	for (k = 0; k < fb->nb_ext; k++)
		if (rte_mbuf_ext_refcnt_update(fb->ext[k].shinfo, (int16_t)-fb->ext[k].refs) == 0)
			fb->ext[k].shinfo->free_cb(fb->ext[k].addr, fb->ext[k].shinfo->fcb_opaque);
	fb->nb_ext = 0;
}

static inline void
eng_free_batch_flush(struct eng_free_batch *fb)
{
	uint16_t k;

	for (k = 0; k < fb->nb_pools; k++)
		if (fb->n[k] > 0)
			rte_mempool_put_bulk(fb->mp[k], fb->obj[k], fb->n[k]);
	fb->nb_pools = 0;
	eng_free_batch_ext_flush(fb);
}

/* An unshared segment on an external, unpinned buffer: its reference on the
 * buffer counted in fb, the mbuf back on its own (empty) buffer, as
 * rte_pktmbuf_detach() leaves it. */
static inline void
eng_free_batch_detach_ext(struct eng_free_batch *fb, struct rte_mbuf *m)
{
	struct rte_mempool *mp = m->pool;
	uint32_t hdr = (uint32_t)sizeof(*m) + rte_pktmbuf_priv_size(mp);
	uint16_t k;

	for (k = 0; k < fb->nb_ext && fb->ext[k].shinfo != m->shinfo; k++)
		;
	if (k == fb->nb_ext) {
		if (k == ENG_FREE_EXT) {
			eng_free_batch_ext_flush(fb);
			k = 0;
		}
		fb->ext[k].shinfo = m->shinfo;
		fb->ext[k].refs = 0;
		fb->nb_ext = (uint16_t)(k + 1);
	}
	fb->ext[k].addr = m->buf_addr;
	/* a burst holds far fewer segments than the 16-bit count */
	fb->ext[k].refs++;

	m->priv_size = (uint16_t)(hdr - sizeof(*m));
	m->buf_addr = (char *)m + hdr;
	rte_mbuf_iova_set(m, rte_mempool_virt2iova(m) + hdr);
	m->buf_len = rte_pktmbuf_data_room_size(mp);
	rte_pktmbuf_reset_headroom(m);
	m->data_len = 0;
	m->ol_flags = 0;
	m->next = NULL;
	m->nb_segs = 1;
}

/* Add every segment of packet m (rte_pktmbuf_free()'s semantics: shared
 * segments only drop a reference, external buffers are detached). Inlined
 * into the receive burst whatever LTO's weights: as a call it costs the
 * call, the spills and fb's reloads per packet (~60 instructions per 64 B
 * READ, doc/performance.md). */
static __rte_always_inline void
eng_free_batch_add(struct eng_free_batch *fb, struct rte_mbuf *m)
{
	while (m != NULL) {
		struct rte_mbuf *next = m->next;
		struct rte_mbuf *s;
		uint16_t k;

		if (RTE_MBUF_HAS_EXTBUF(m) && !RTE_MBUF_HAS_PINNED_EXTBUF(m) &&
		    rte_mbuf_refcnt_read(m) == 1) {
			eng_free_batch_detach_ext(fb, m);
			s = m;
		} else {
			s = rte_pktmbuf_prefree_seg(m);
		}
		m = next;
		if (s == NULL)
			continue;
		for (k = 0; k < fb->nb_pools && fb->mp[k] != s->pool; k++)
			;
		if (k == fb->nb_pools) {
			if (k == ENG_FREE_POOLS) {
				eng_free_batch_flush(fb);
				k = 0;
			}
			fb->mp[k] = s->pool;
			fb->n[k] = 0;
			fb->nb_pools = (uint16_t)(k + 1);
		}
		fb->obj[k][fb->n[k]++] = s;
		if (fb->n[k] == SRNIC_RX_BURST) {
			rte_mempool_put_bulk(fb->mp[k], fb->obj[k], fb->n[k]);
			fb->n[k] = 0;
		}
	}
}

/* Packets of a message of len bytes at path MTU pmtu (a power of two:
 * a shift, not a division). */
static inline uint32_t
eng_msg_npkts(uint64_t len, uint32_t pmtu)
{
	return len == 0 ? 1 : (uint32_t)((len + pmtu - 1) >> rte_bsf32(pmtu));
}

/* The port's bursts. A memif port's connection may go on EAL's
 * interrupt thread, which unmaps the peer's rings once it holds the
 * guard (lib/core/port.c): each burst holds it, one uncontended lock per
 * burst, never per packet; other ports have none. A guard held means a
 * connect or disconnect is under way (memif holds it across a blocking
 * sendmsg() to its peer): the burst is skipped, never waited for (RX:
 * nothing this poll; TX: the frames stay in tx_buf for the next). */
static inline uint16_t
eng_rx_burst(struct srnic_engine *eng, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t k;

	if (likely(eng->burst_guard == NULL))
		return rte_eth_rx_burst(eng->port_id, eng->queue, pkts, n);
	if (!rte_spinlock_trylock(eng->burst_guard))
		return 0;
	k = rte_eth_rx_burst(eng->port_id, eng->queue, pkts, n);
	rte_spinlock_unlock(eng->burst_guard);
	return k;
}

static inline uint16_t
eng_tx_burst(struct srnic_engine *eng, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t k;

	if (likely(eng->burst_guard == NULL))
		return rte_eth_tx_burst(eng->port_id, eng->queue, pkts, n);
	if (!rte_spinlock_trylock(eng->burst_guard))
		return 0;
	k = rte_eth_tx_burst(eng->port_id, eng->queue, pkts, n);
	rte_spinlock_unlock(eng->burst_guard);
	return k;
}

static inline uint32_t
eng_tx_free(const struct srnic_engine *eng)
{
	return SRNIC_TX_BUF_SIZE - eng->tx_len;
}

/* Queue a packet for TX, complete (roce 0) or closed and to be sealed at
 * the flush (roce 1). The caller checked eng_tx_free(). */
static inline void
eng_tx_queue(struct srnic_engine *eng, struct rte_mbuf *m, uint8_t roce)
{
	eng->stats[SRNIC_STAT_TX_PKTS]++;
	eng->stats[SRNIC_STAT_TX_BYTES] += rte_pktmbuf_pkt_len(m);
	eng->tx_roce[eng->tx_len] = roce;
	eng->tx_buf[eng->tx_len++] = m;
}

static inline void
eng_tx(struct srnic_engine *eng, struct rte_mbuf *m)
{
	eng_tx_queue(eng, m, 0);
}

/* WQE classes: a READ or atomic completes only with its own response. */
static inline bool
wqe_is_read(const struct srnic_swqe *w)
{
	return w->opcode == IBV_WR_RDMA_READ;
}

static inline bool
wqe_is_atomic(const struct srnic_swqe *w)
{
	return w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* IBTA 1.5's ATOMIC WRITE and FLUSH: one PSN each, answered by a
 * zero-length RDMA READ RESPONSE ONLY (rxe's send_read_response_ack()). */
static inline bool
wqe_is_rsp0(const struct srnic_swqe *w)
{
	return w->opcode == IBV_WR_ATOMIC_WRITE || w->opcode == SRNIC_WR_FLUSH;
}

/* Those that take one of max_rd_atomic (the responder keeps each). */
static inline bool
wqe_is_rd_atomic(const struct srnic_swqe *w)
{
	return wqe_is_read(w) || wqe_is_atomic(w) || wqe_is_rsp0(w);
}

static inline enum ibv_wc_opcode
eng_wr_to_wc_opcode(uint8_t op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case SRNIC_WR_FLUSH:
		return SRNIC_WC_FLUSH;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

/* Work requests the requester executes itself, sending nothing (mw.c). */
static inline bool
wqe_is_local(const struct srnic_swqe *w)
{
	return w->opcode == IBV_WR_BIND_MW || w->opcode == IBV_WR_LOCAL_INV;
}

/* A window's key at the responder (mw.c): the binding's checks (rnic.h). */
enum srnic_key_err eng_mw_check(const struct srnic_qp *qp, uint32_t key, int access, uint64_t va,
				uint64_t len, struct srnic_mr **out);

/*
 * The responder's R_Key check: an MR's key as srnic_mr_check(), the same
 * instructions as ever; only a key whose index is above every MR's looks
 * for a memory window.
 */
static inline enum srnic_key_err
eng_rkey_check(const struct srnic_qp *qp, uint32_t key, int access, uint64_t va, uint64_t len,
	       struct srnic_mr **out)
{
	if (unlikely(SRNIC_KEY_IS_MW(key)))
		return eng_mw_check(qp, key, access, va, len, out);
	return srnic_mr_check(qp->dev, qp->pd, key, access, va, len, out);
}

/* Execute a BIND_MW or LOCAL_INV WQE (mw.c): its completion status. */
enum ibv_wc_status eng_mw_local_op(struct srnic_engine *eng, struct srnic_qp *qp,
				   const struct srnic_swqe *w);

/* A SEND with Invalidate's key, at its responder (mw.c): 0, or -1 when it
 * names nothing this QP may invalidate. */
int eng_mw_remote_inv(struct srnic_engine *eng, const struct srnic_qp *qp, uint32_t key);

/* RNR timer code -> timer cycles (IBTA table 45, in units of 10 us). */
uint64_t eng_rnr_timer_cycles(uint8_t code);

/* Start a transport packet of qp: L2-L4 from its route, BTH with opcode,
 * destination QP and psn. Returns NULL (counted) when out of mbufs. */
struct rte_mbuf *eng_pkt_new(struct srnic_engine *eng, struct srnic_qp *qp, uint8_t opcode,
			       uint32_t psn, uint8_t **bth);
/* The same from template t: a UD QP's of another source GID than its route's. */
struct rte_mbuf *eng_pkt_new_tmpl(struct srnic_engine *eng, struct srnic_qp *qp,
				  const struct srnic_hdr_tmpl *t, uint8_t opcode, uint32_t psn,
				  uint8_t **bth);

/* Chain len bytes of registered memory at va (mr's address space, as its
 * key check took it) behind m, zero-copy (an external-buffer segment
 * holding a reference on mr). Returns 0 or -ENOMEM. */
int eng_pkt_attach(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr,
		     uint64_t va, uint32_t len);

/* Chain a copy of len bytes at src behind m (a segment of the TX copy
 * pool): for what must not stay zero-copy. Returns 0 or -ENOMEM (counted). */
int eng_pkt_attach_copy(struct srnic_engine *eng, struct rte_mbuf *m, const void *src,
			  uint32_t len);

/* Pad, ICRC, lengths, then queue for TX. Frees m on failure. */
int eng_pkt_xmit(struct srnic_engine *eng, struct rte_mbuf *m);

/* eng_sge_copy_in() for any scatter list and offset. */
enum srnic_key_err eng_sge_copy_in_sgl(struct srnic_qp *qp, const struct ibv_sge *sge,
					 unsigned int nsge, uint64_t off,
					 const struct srnic_pkt *pkt, uint32_t len);

/* Copy len bytes of pkt's payload into the scatter list at message offset
 * off, checking every piece against the keys (local write). The common case,
 * one SGE holding the whole piece, is one key check and one copy, inline. */
static inline enum srnic_key_err
eng_sge_copy_in(struct srnic_qp *qp, const struct ibv_sge *sge, unsigned int nsge, uint64_t off,
		  const struct srnic_pkt *pkt, uint32_t len)
{
	struct srnic_mr *mr;
	enum srnic_key_err ke;

	if (unlikely(nsge != 1 || len == 0 || off >= sge->length || len > sge->length - off))
		return eng_sge_copy_in_sgl(qp, sge, nsge, off, pkt, len);
	ke = srnic_mr_check(qp->dev, qp->pd, sge->lkey, IBV_ACCESS_LOCAL_WRITE, sge->addr + off,
			    len, &mr);
	if (likely(ke == SRNIC_KEY_OK))
		srnic_pkt_copy_payload(pkt, 0, srnic_mr_at(mr, sge->addr + off), len);
	return ke;
}

/* Add a completion; on CQ overflow the QP goes to ERR. */
void eng_qp_cqe(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
		  const struct ibv_wc *wc, uint32_t wq_next);
/* The same, for a receive completion whose message had BTH.SE set or not. */
void eng_qp_cqe_se(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_cq *cq,
		     const struct ibv_wc *wc, uint32_t wq_next, bool solicited);

/* Move qp to ERR from the engine; outstanding WQEs are flushed by the loop. */
void eng_qp_to_err(struct srnic_engine *eng, struct srnic_qp *qp, const char *why);

/* Asynchronous events (event.c): the engine's ring, and one event about qp
 * into it (dropped and counted when full, never waits). */
struct rte_ring *eng_events_create(const struct srnic_dev *dev, uint16_t index);
void eng_event(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_qp *qp);
void eng_event_srq(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_srq *srq);
void eng_event_cq(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_cq *cq);

/* IBV_EVENT_COMM_EST: the first packet a QP received in RTR (once per
 * connection; an affiliated event of IBTA 11.6.3, as rdmavt's rvt_comm_est()). */
static inline void
eng_comm_est(struct srnic_engine *eng, struct srnic_qp *qp)
{
	qp->comm_est_raised = 1;
	eng_stat(eng, SRNIC_STAT_COMM_EST, 1);
	eng_event(eng, IBV_EVENT_COMM_EST, qp);
}

/* Receive: parse, validate, dispatch a burst. */
void eng_recv_burst(struct srnic_engine *eng, struct rte_mbuf **pkts, uint16_t n,
		      unsigned int parse_flags);

/* Requester: build request packets from the SQ. Returns true when it
 * stopped with work left that needs no event from the peer (TX room,
 * budget, mbufs): the QP stays active. */
bool eng_req_run(struct srnic_engine *eng, struct srnic_qp *qp);

/* Responder: one request packet; then send what the responder owes. */
void eng_resp_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt);
/* Returns true while the responder still owes something. */
bool eng_resp_run(struct srnic_engine *eng, struct srnic_qp *qp);
void eng_resp_owed_at_err(struct srnic_engine *eng, struct srnic_qp *qp, bool route);

/* The receive CQE of the message pkt ends (RC and UC). resp.c. */
void eng_resp_recv_done(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_pkt *pkt);
/* The next receive WQE of a QP, from its SRQ or its RQ, if it holds need
 * bytes; NULL: none, or (*too_small set) one too small, left in place. rwqe.c. */
const struct srnic_rwqe *eng_rwqe_take(struct srnic_engine *eng, struct srnic_qp *qp,
				       struct srnic_rwqe *srq_buf, uint32_t *next, uint32_t need,
				       bool *too_small);
/* Take the oldest WQE of an SRQ into *out (a copy: the slot is free at
 * once); false when it is empty. Raises the SRQ limit event. rwqe.c. */
bool eng_srq_take(struct srnic_engine *eng, struct srnic_srq *srq, struct srnic_rwqe *out,
		  uint32_t need, bool *too_small);
/* UD receive (ud.c): Q_Key, length, a receive WQE with the GRH area. */
void eng_ud_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt);
/* A packet to an address not ours: if to a multicast group, delivered to
 * the group's QPs (those of other engines get a copy when from_port: the
 * packet came from the port, not from another engine) or dropped and
 * counted, and true; false if not multicast. The caller frees the mbuf. */
bool eng_ud_mcast_rx(struct srnic_engine *eng, struct srnic_pkt *pkt, bool from_port);
/* UC responder (uc.c): SEND/WRITE without ACKs; a gap drops the message. */
void eng_uc_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt);

/* Completer: one ACK / NAK / READ response / atomic ACK. */
void eng_comp_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt);

/* Is any request packet of qp waiting for its ACK or response? */
bool eng_comp_outstanding(const struct srnic_qp *qp);

/* Completer: the local ACK timer; when it expires, resend from the oldest
 * unacknowledged request or fail it once retry_cnt is spent. */
void eng_comp_timer(struct srnic_engine *eng, struct srnic_qp *qp);

/* A retry timeout: refresh the peer's MAC from the neighbour table, or
 * ask for it again (qp.c). */
void eng_route_refresh(struct srnic_engine *eng, struct srnic_qp *qp);

/* Completer: the local ACK timer of a QP whose peer's MAC is unknown (its
 * WQEs wait); true when an expiry spent a retry (ask for the MAC again). */
bool eng_comp_timer_unresolved(struct srnic_engine *eng, struct srnic_qp *qp);

/* Retire finished WQEs in order from sq.comp: CQEs for signaled ones and
 * for errors (an error moves the QP to ERR). */
void eng_comp_retire(struct srnic_engine *eng, struct srnic_qp *qp);

/* The QP has work for this engine's loop (idempotent): at the tail of the
 * FIFO (a QP is in it at most once, so ENG_ACTIVE_SLOTS hold them all). */
#define ENG_QP_SLOTS (SRNIC_MAX_QP + SRNIC_QPN_BASE) /* the table's QPs and the special ones (QP1) */
#define ENG_ACTIVE_SLOTS (2 * SRNIC_MAX_QP)            /* a power of 2 >= ENG_QP_SLOTS */
_Static_assert((ENG_ACTIVE_SLOTS & (ENG_ACTIVE_SLOTS - 1)) == 0 && ENG_ACTIVE_SLOTS >= ENG_QP_SLOTS,
	       "the active FIFO's index mask");
static inline void
eng_activate(struct srnic_engine *eng, struct srnic_qp *qp)
{
	if (!qp->active) {
		qp->active = 1;
		eng->active[eng->active_tail++ & (ENG_ACTIVE_SLOTS - 1)] = qp;
	}
}

/* Wake the QP at deadline (timer cycles) through the timer wheel. */
void eng_timer_arm(struct srnic_engine *eng, struct srnic_qp *qp, uint64_t deadline);

/* Flush every outstanding WQE of a QP in ERR. */
void eng_qp_flush(struct srnic_engine *eng, struct srnic_qp *qp);

/* The loop's steps, once per poll: doorbells rung and QPs buried since the
 * last (doorbell.c), the timer wheel (timer.c), the TX buffer (tx.c). */
void eng_doorbells(struct srnic_engine *eng);
void eng_bury(struct srnic_engine *eng);
void eng_timer_advance(struct srnic_engine *eng);
void eng_tx_flush(struct srnic_engine *eng);
/* Take qp off the timer wheel (timer.c). */
void eng_timer_remove(struct srnic_twheel *tw, struct srnic_qp *qp);
/* Free a QP the graveyard held (doorbell.c). */
void eng_qp_free(struct srnic_qp *qp);
/* Resolve the peer's MAC of a QP whose route is incomplete (qp.c). */
void eng_qp_resolve(struct srnic_engine *eng, struct srnic_qp *qp);
bool eng_qp_route_known(struct srnic_qp *qp);

#endif /* SRNIC_ENG_INTERNAL_H */
