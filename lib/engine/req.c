/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester: send queue WQEs -> request packets. Segments SEND/WRITE by the
 * path MTU, assigns PSNs (a READ reserves one PSN per response packet,
 * IBTA 9.7.1), sets AckReq on the last packet of each message and every
 * SRNIC_ACK_REQ_INTERVAL packets inside a long one, honours
 * fences and max_rd_atomic. RC payload is attached zero-copy from the
 * registered memory the SGEs name; inline data is copied, and so is UD
 * and UC payload (their CQE is out before the TX flush reads the buffer).
 *
 * UC takes the same path with UC opcodes; UD builds one packet per WR
 * (BTH + DETH [+ ImmDt]) from the QP's template with the destination of
 * the WQE's copy of its AH written in. Neither waits for an ACK: a WR is
 * done once its last packet is queued for TX.
 */
#include <rte_cycles.h>
#include <rte_ip.h>

#include "eng_internal.h"
#include "neigh.h"

/* Opcodes of a message by position: [op][pos], pos 0 FIRST, 1 MIDDLE,
 * 2 LAST, 3 ONLY. */
enum { POS_FIRST, POS_MIDDLE, POS_LAST, POS_ONLY };

static const uint8_t send_ops[2][4] = {
	{ SRNIC_OP_RC_SEND_FIRST, SRNIC_OP_RC_SEND_MIDDLE, SRNIC_OP_RC_SEND_LAST,
	  SRNIC_OP_RC_SEND_ONLY },
	{ SRNIC_OP_RC_SEND_FIRST, SRNIC_OP_RC_SEND_MIDDLE, SRNIC_OP_RC_SEND_LAST_IMM,
	  SRNIC_OP_RC_SEND_ONLY_IMM },
};

static const uint8_t write_ops[2][4] = {
	{ SRNIC_OP_RC_WRITE_FIRST, SRNIC_OP_RC_WRITE_MIDDLE, SRNIC_OP_RC_WRITE_LAST,
	  SRNIC_OP_RC_WRITE_ONLY },
	{ SRNIC_OP_RC_WRITE_FIRST, SRNIC_OP_RC_WRITE_MIDDLE, SRNIC_OP_RC_WRITE_LAST_IMM,
	  SRNIC_OP_RC_WRITE_ONLY_IMM },
};

/* PSNs a WQE takes: an atomic one, a SEND/WRITE/READ one per PMTU (>= 1). */
static inline uint32_t
wqe_npkts(const struct srnic_swqe *w, uint32_t pmtu)
{
	return wqe_is_atomic(w) || wqe_is_rsp0(w) ? 1 : eng_msg_npkts(w->length, pmtu);
}

/* Check the WQE's local buffers once, before its first packet. */
static enum ibv_wc_status
wqe_check_local(struct srnic_qp *qp, const struct srnic_swqe *w)
{
	/* what responses land in is written; ATOMIC WRITE's source only read */
	int access = wqe_is_read(w) || wqe_is_atomic(w) ? IBV_ACCESS_LOCAL_WRITE : 0;
	unsigned int i;

	for (i = 0; i < w->num_sge; i++) {
		struct srnic_mr *mr;

		if (w->sge[i].length == 0)
			continue;
		if (srnic_mr_check(qp->dev, qp->pd, w->sge[i].lkey, access, w->sge[i].addr,
				   w->sge[i].length, &mr) != SRNIC_KEY_OK)
			return IBV_WC_LOC_PROT_ERR;
	}
	return IBV_WC_SUCCESS;
}

/* Chain [off, off + len) of the message's gather list behind m. */
static int
req_gather(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_swqe *w,
	   struct rte_mbuf *m, uint32_t off, uint32_t len)
{
	unsigned int i;

	if (w->inline_data) {
		const uint8_t *src = qp->sq.inline_buf +
				     (size_t)(w - qp->sq.wqe) * qp->sq.max_inline + off;
		void *dst = rte_pktmbuf_append(m, (uint16_t)len);

		if (unlikely(dst == NULL && len > 0))
			return -ENOMEM;
		rte_memcpy(dst, src, len);
		return 0;
	}
	for (i = 0; i < w->num_sge && len > 0; i++) {
		struct srnic_mr *mr;
		uint32_t n;

		if (off >= w->sge[i].length) {
			off -= w->sge[i].length;
			continue;
		}
		n = RTE_MIN(len, w->sge[i].length - off);
		if (unlikely(srnic_mr_check(qp->dev, qp->pd, w->sge[i].lkey, 0,
					    w->sge[i].addr + off, n, &mr) != SRNIC_KEY_OK))
			return -EACCES; /* deregistered since the WQE started */
		if (n <= SRNIC_TX_COPY_MAX && rte_pktmbuf_tailroom(rte_pktmbuf_lastseg(m)) >= n &&
		    RTE_MBUF_DIRECT(rte_pktmbuf_lastseg(m))) {
			rte_memcpy(rte_pktmbuf_append(m, (uint16_t)n),
				   srnic_mr_at(mr, w->sge[i].addr + off), n);
		} else if (unlikely(w->resent)) {
			/* a resend, copied as resp.c's READ retries: the ICRC
			 * sealed now stays right whatever the application
			 * stores once an earlier copy is acknowledged */
			if (eng_pkt_attach_copy(eng, m, srnic_mr_at(mr, w->sge[i].addr + off), n) != 0)
				return -ENOMEM;
			eng_stat(eng, SRNIC_STAT_REQ_RETRY_COPY, 1);
		} else if (qp->transport != SRNIC_OPM_RC) {
			/* UD and UC complete once queued (no ACK to wait
			 * for), before the flush seals the packet and the
			 * port reads it: the application owns the buffer
			 * again at its CQE and may refill it (libfabric's
			 * ofi_rxd does), so the packet carries a copy, as
			 * rxe's skb does */
			if (eng_pkt_attach_copy(eng, m, srnic_mr_at(mr, w->sge[i].addr + off), n) != 0)
				return -ENOMEM;
			eng_stat(eng, SRNIC_STAT_REQ_UD_UC_COPY, 1);
		} else if (eng_pkt_attach(eng, m, mr, w->sge[i].addr + off, n) != 0) {
			return -ENOMEM;
		}
		len -= n;
		off = 0;
	}
	return 0;
}

/* PSNs in flight stay under SRNIC_MAX_INFLIGHT_PSN (< 2^23, C9-94): a READ
 * reserves one per response packet, so a few large READs could otherwise
 * spread PSNs over half the space, where before/after stops meaning. */
static bool
req_psn_window_full(const struct srnic_qp *qp, uint32_t comp, const struct srnic_swqe *w)
{
	uint32_t oldest;

	if (comp == qp->sq.req)
		return false; /* nothing in flight: any one message may go */
	oldest = qp->sq.wqe[comp & qp->sq.mask].first_psn;
	return ((qp->req.psn - oldest) & SRNIC_PSN_MASK) + wqe_npkts(w, qp->pmtu) >
	       SRNIC_MAX_INFLIGHT_PSN;
}

/* A WQE that failed before reaching the wire: it completes in order with
 * its error (eng_comp_retire()), and nothing after it is sent. */
static void
req_local_error(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w,
		enum ibv_wc_status st)
{
	eng_stat(eng, SRNIC_STAT_REQ_LOCAL_ERR, 1);
	w->state = SRNIC_WQE_DONE;
	w->wc_status = (uint8_t)st;
	qp->sq.req++;
	qp->req.stalled = 1;
	eng_comp_retire(eng, qp);
}

/* A BIND_MW or LOCAL_INV WQE, reached in order (after the fences before
 * it): executed here, sending nothing, and retired in order with the
 * WQEs before it (rxe's local operations). False if it failed: the QP
 * stops as for any local error. */
static __rte_noinline bool
req_local_op(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w)
{
	enum ibv_wc_status st = eng_mw_local_op(eng, qp, w);

	w->first_psn = qp->req.psn;
	w->npkts = 0;
	if (st != IBV_WC_SUCCESS) {
		req_local_error(eng, qp, w, st);
		return false;
	}
	w->state = SRNIC_WQE_DONE;
	w->wc_status = IBV_WC_SUCCESS;
	qp->sq.req++;
	eng_comp_retire(eng, qp);
	return true;
}

/* The destination of a UD WQE into a packet started from the QP's
 * template t of its source GID (our MAC, address and UDP port; theirs zero). */
static void
ud_set_dest(struct srnic_engine *eng, const struct srnic_hdr_tmpl *t, struct rte_mbuf *m,
	    uint8_t *bth, const struct srnic_ud_dest *d)
{
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t *l3 = f + t->l2_len;

	memcpy(f, &d->mac, RTE_ETHER_ADDR_LEN);
	/* to our own MAC, or to a group (that may have QPs here too): the
	 * flush looks for in-device loopback */
	eng->tx_loop_maybe |= rte_is_same_ether_addr(&d->mac, &eng->dev->mac) |
			      rte_is_multicast_ether_addr(&d->mac);
	if (t->ip_ver == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)l3;

		ip->type_of_service = d->tclass;
		ip->time_to_live = d->ttl;
		memcpy(&ip->dst_addr, d->ip + 12, 4); /* ::ffff:a.b.c.d */
		ip->hdr_checksum = 0; /* not the template's sum now: close sums it all */
	} else {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)l3;

		ip6->vtc_flow = rte_cpu_to_be_32((6u << 28) | ((uint32_t)d->tclass << 20) |
						 (d->flow_label & SRNIC_FLOW_LABEL_MASK));
		ip6->hop_limits = d->ttl;
		memcpy(ip6->dst_addr, d->ip, 16);
	}
	srnic_bth_set_dqpn(bth, d->qpn);
}

/* A UD WQE whose peer's MAC was unknown at post: look again, ask (ARP/ND,
 * once per SRNIC_ARP_RETRY_MS per QP), wait a little through the timer
 * wheel (req.wait_until). 0: known now; 1: wait; -1: given up
 * (SRNIC_UD_RESOLVE_MS), the datagram is dropped. */
static __rte_noinline int
ud_resolve(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w)
{
	uint64_t hz = rte_get_timer_hz();

	if (srnic_neigh_lookup(eng->dev, w->ud.ip, &w->ud.mac) == 0) {
		w->ud.mac_ok = 1;
		return 0;
	}
	if (w->ud.resolve_by == 0)
		w->ud.resolve_by = eng->now + hz / 1000 * SRNIC_UD_RESOLVE_MS;
	else if (eng->now >= w->ud.resolve_by)
		return -1;
	srnic_neigh_want(eng->dev, w->ud.ip);
	if (eng->now >= qp->arp_next_tsc) {
		qp->arp_next_tsc = eng->now + hz / 1000 * SRNIC_ARP_RETRY_MS;
		eng_neigh_solicit(eng, w->ud.ip);
	}
	qp->req.wait_until = eng->now + hz / 1000000 * SRNIC_UD_RESOLVE_POLL_US;
	eng_timer_arm(eng, qp, qp->req.wait_until);
	return 1;
}

/* The one packet of a UD WQE. 0: sent, or completed without a packet
 * (too long, no route); -1: stop for now (mbufs, or waiting for the MAC:
 * *wait set). */
static int
req_build_ud(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w, uint32_t psn,
	     bool *wait)
{
	bool imm = w->opcode == IBV_WR_SEND_WITH_IMM;
	uint8_t op = imm ? SRNIC_OP_UD_SEND_ONLY_IMM : SRNIC_OP_UD_SEND_ONLY;
	const struct srnic_opcode_info *oi = srnic_opcode_info(op);
	const struct srnic_hdr_tmpl *t;
	struct rte_mbuf *m;
	uint8_t *bth, *deth;
	int rc;

	/* C10-93.1.1: longer than the port's MTU, no packet and no error
	 * (rxe's fake UD send) */
	if (unlikely(w->length > qp->pmtu)) {
		eng_stat(eng, SRNIC_STAT_REQ_UD_TOO_LONG, 1);
		w->sent_pkts = 1;
		return 0;
	}
	if (unlikely(!w->ud.mac_ok)) {
		rc = ud_resolve(eng, qp, w);
		if (rc > 0) {
			*wait = true;
			return -1;
		}
		if (rc < 0) {
			eng_stat(eng, SRNIC_STAT_REQ_UD_NO_ROUTE, 1);
			w->sent_pkts = 1;
			return 0;
		}
	}
	t = likely(w->ud.sgid_index == SRNIC_GID_INDEX_IP) ? &qp->tmpl
							    : &qp->ud_tmpl[w->ud.sgid_index];
	m = eng_pkt_new_tmpl(eng, qp, t, op, psn, &bth);
	if (m == NULL)
		return -1;
	ud_set_dest(eng, t, m, bth, &w->ud);
	deth = bth + oi->offset[SRNIC_HDR_DETH];
	srnic_deth_set_qkey(deth, w->ud.qkey);
	srnic_deth_set_sqpn(deth, qp->qpn);
	if (imm)
		srnic_immdt_set_be(bth + oi->offset[SRNIC_HDR_IMMDT], w->imm_data);
	/* AckReq on the last packet of a message, as rxe (the rdma_cm capture) */
	srnic_bth_set_ackreq(bth, true);
	srnic_bth_set_se(bth, w->solicited);
	rc = req_gather(eng, qp, w, m, 0, w->length);
	if (rc != 0) {
		rte_pktmbuf_free(m);
		if (rc == -EACCES)
			req_local_error(eng, qp, w, IBV_WC_LOC_PROT_ERR);
		return -1;
	}
	if (eng_pkt_xmit(eng, m) != 0)
		return -1;
	eng_stat(eng, SRNIC_STAT_REQ_PKTS, 1);
	w->sent_pkts = 1;
	return 0;
}

/* The one packet of an ATOMIC WRITE (RETH, its 8 bytes: from the WQE when
 * posted inline, else gathered now) or a FLUSH (FETH, RETH). Ordered as
 * any request: the responder executes in PSN order, so every earlier
 * WRITE is placed before either runs there (IBTA 1.5; a FLUSH need not
 * wait here for anything). NULL: stop for now. */
static __rte_noinline struct rte_mbuf *
req_build_rsp0(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w, uint32_t psn)
{
	bool flush = w->opcode == SRNIC_WR_FLUSH;
	uint8_t op = flush ? SRNIC_OP_RC_FLUSH : SRNIC_OP_RC_ATOMIC_WRITE;
	const struct srnic_opcode_info *oi = srnic_opcode_info(op);
	struct rte_mbuf *m;
	uint8_t *bth, *reth;
	int rc = 0;

	m = eng_pkt_new(eng, qp, op, psn, &bth);
	if (m == NULL)
		return NULL;
	reth = bth + oi->offset[SRNIC_HDR_RETH];
	srnic_reth_set_va(reth, w->remote_addr);
	srnic_reth_set_rkey(reth, w->rkey);
	srnic_reth_set_len(reth, w->length);
	if (flush) {
		/* the API's values are the FETH's (srnic.h, srnic_hdr.h) */
		_Static_assert((int)SRNIC_FLUSH_GLOBAL == (int)SRNIC_FETH_PLT_GLOBAL &&
			       (int)SRNIC_FLUSH_PERSISTENT == (int)SRNIC_FETH_PLT_PERSISTENT &&
			       (int)SRNIC_FLUSH_RANGE == (int)SRNIC_FETH_SEL_RANGE &&
			       (int)SRNIC_FLUSH_MR == (int)SRNIC_FETH_SEL_MR,
			       "FLUSH's type and level on the wire");
		srnic_feth_set(bth + oi->offset[SRNIC_HDR_FETH], w->flush.type, w->flush.level);
	} else if (w->num_sge == 0) {
		void *d = rte_pktmbuf_append(m, sizeof(w->compare_add));

		if (d == NULL)
			rc = -ENOMEM;
		else
			memcpy(d, &w->compare_add, sizeof(w->compare_add));
	} else {
		rc = req_gather(eng, qp, w, m, 0, w->length);
	}
	if (rc != 0) {
		rte_pktmbuf_free(m);
		if (rc == -EACCES)
			req_local_error(eng, qp, w, IBV_WC_LOC_PROT_ERR);
		return NULL;
	}
	srnic_bth_set_ackreq(bth, true);
	w->sent_pkts = 1;
	return m;
}

/* Build and queue the next packet of w. Returns 0, or -1 to stop for now. */
static int
req_build(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_swqe *w, bool *wait)
{
	uint32_t psn = srnic_psn_add(w->first_psn, w->sent_pkts);
	struct rte_mbuf *m;
	uint8_t *bth;
	uint8_t op;
	int rc;

	if (qp->transport == SRNIC_OPM_UD)
		return req_build_ud(eng, qp, w, psn, wait);

	switch (w->opcode) {
	case IBV_WR_RDMA_READ: {
		uint8_t *reth;

		m = eng_pkt_new(eng, qp, SRNIC_OP_RC_READ_REQ, psn, &bth);
		if (m == NULL)
			return -1;
		reth = bth + srnic_opcode_table[SRNIC_OP_RC_READ_REQ].offset[SRNIC_HDR_RETH];
		/* A retried READ asks only for what has not arrived, from the
		 * PSN of the first missing response (IBTA 9.7: a READ may be
		 * resumed from any response PSN of it). */
		srnic_bth_set_psn(bth, srnic_psn_add(w->first_psn, w->resp_pkts));
		srnic_reth_set_va(reth, w->remote_addr + (uint64_t)w->resp_pkts * qp->pmtu);
		srnic_reth_set_rkey(reth, w->rkey);
		srnic_reth_set_len(reth, w->length - RTE_MIN(w->length, w->resp_pkts * qp->pmtu));
		srnic_bth_set_ackreq(bth, true);
		w->sent_pkts = w->npkts; /* the responses use the reserved PSNs */
		break;
	}
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD: {
		uint8_t *a;

		op = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? SRNIC_OP_RC_CMP_SWAP
							    : SRNIC_OP_RC_FETCH_ADD;
		m = eng_pkt_new(eng, qp, op, psn, &bth);
		if (m == NULL)
			return -1;
		a = bth + srnic_opcode_table[op].offset[SRNIC_HDR_ATMETH];
		srnic_atmeth_set_va(a, w->remote_addr);
		srnic_atmeth_set_rkey(a, w->rkey);
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			srnic_atmeth_set_swap_add(a, w->swap);
			srnic_atmeth_set_compare(a, w->compare_add);
		} else {
			srnic_atmeth_set_swap_add(a, w->compare_add);
			srnic_atmeth_set_compare(a, 0);
		}
		srnic_bth_set_ackreq(bth, true);
		w->sent_pkts = 1;
		break;
	}
	case IBV_WR_ATOMIC_WRITE:
	case SRNIC_WR_FLUSH:
		m = req_build_rsp0(eng, qp, w, psn);
		if (m == NULL)
			return -1;
		break;
	default: {
		bool imm = w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
		bool inv = w->opcode == IBV_WR_SEND_WITH_INV;
		bool write = w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
		uint32_t off = w->sent_pkts * qp->pmtu;
		uint32_t len = RTE_MIN(qp->pmtu, w->length - off);
		bool first = w->sent_pkts == 0, last = w->sent_pkts + 1 == w->npkts;
		int pos = first ? (last ? POS_ONLY : POS_FIRST) : (last ? POS_LAST : POS_MIDDLE);
		const struct srnic_opcode_info *oi;

		op = write ? write_ops[imm][pos] : send_ops[imm][pos];
		/* SEND with Invalidate: its LAST or ONLY packet carries the IETH
		 * (RC only: post refuses it on UC) */
		if (unlikely(inv) && last)
			op = pos == POS_ONLY ? SRNIC_OP_RC_SEND_ONLY_INV : SRNIC_OP_RC_SEND_LAST_INV;
		if (qp->transport == SRNIC_OPM_UC)
			op += SRNIC_OP_UC_SEND_FIRST; /* the same family, UC's range */
		oi = srnic_opcode_info(op);
		m = eng_pkt_new(eng, qp, op, psn, &bth);
		if (m == NULL)
			return -1;
		if (oi->mask & SRNIC_OPM_RETH) {
			uint8_t *reth = bth + oi->offset[SRNIC_HDR_RETH];

			srnic_reth_set_va(reth, w->remote_addr);
			srnic_reth_set_rkey(reth, w->rkey);
			srnic_reth_set_len(reth, w->length);
		}
		if (oi->mask & SRNIC_OPM_IMMDT)
			srnic_immdt_set_be(bth + oi->offset[SRNIC_HDR_IMMDT], w->imm_data);
		if (unlikely(oi->mask & SRNIC_OPM_IETH))
			srnic_ieth_set_rkey(bth + oi->offset[SRNIC_HDR_IETH], w->invalidate_rkey);
		if (last) {
			srnic_bth_set_ackreq(bth, true);
			/* SE belongs to the messages that consume a RECV (IBTA ch. 9 BTH):
			 * SEND and WRITE with immediate, as rxe sets it. */
			srnic_bth_set_se(bth, w->solicited && (!write || imm));
		} else if ((w->sent_pkts + 1) % SRNIC_ACK_REQ_INTERVAL == 0) {
			/* inside a long message too: a timeout then resends
			 * only what no ACK covered (comp.c, acked_pkts) */
			srnic_bth_set_ackreq(bth, true);
		}
		rc = req_gather(eng, qp, w, m, off, len);
		if (rc != 0) {
			rte_pktmbuf_free(m);
			/* The source was deregistered since the WQE started:
			 * it fails now, as a stale lkey before its first packet
			 * (retrying could never send it). */
			if (rc == -EACCES)
				req_local_error(eng, qp, w, IBV_WC_LOC_PROT_ERR);
			return -1;
		}
		w->sent_pkts++;
		break;
	}
	}
	if (eng_pkt_xmit(eng, m) != 0)
		return -1;
	eng_stat(eng, SRNIC_STAT_REQ_PKTS, 1);
	/* Something is out: the local ACK timer runs from the last packet
	 * sent or the last progress, whichever is later (as rxe), so a long
	 * message is not timed out while it is still being sent. */
	if (qp->timeout != 0) {
		qp->req.timer_at = eng->now + qp->timeout_cycles;
		eng_timer_arm(eng, qp, qp->req.timer_at);
	}
	return 0;
}

/*
 * A retransmit rewinds sq.req to the first WQE not acknowledged
 * (comp_rewind()); the WQEs it goes back over that have already finished
 * (DONE: a BIND_MW or LOCAL_INV that ran, which the rewind leaves as is)
 * and any all sent (SENT) are not started again: sq.req passes over them.
 * A local WQE runs once; built as a packet it would fall into the SEND
 * case with no packets and send MIDDLEs forever. True if w was passed.
 */
static inline bool
req_pass_finished(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_swqe *w)
{
	if (likely(w->state == SRNIC_WQE_POSTED || w->state == SRNIC_WQE_SENDING))
		return false;
	qp->sq.req++;
	eng_stat(eng, SRNIC_STAT_REQ_REWIND_LOCAL_SKIP, 1);
	eng_comp_retire(eng, qp);
	return true;
}

/*
 * The requester's turn when the TX buffer has no room. A WQE that sends
 * nothing (BIND_MW, LOCAL_INV: wqe_is_local()) does not wait for the wire,
 * as an RNIC executes it without it: those at the SQ's head run now, in
 * order, up to the first that needs the wire (a local WQE behind it
 * waits for it: a QP's WQEs start in order). Then req.tx_wait: the QP's
 * later turns under a full TX buffer read none of its SQ's lines until
 * sq.req moves. True when the QP has work left.
 */
static __rte_noinline bool
req_tx_full_run(struct srnic_engine *eng, struct srnic_qp *qp)
{
	unsigned int budget = SRNIC_REQ_BUDGET;
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);

	eng_stat(eng, SRNIC_STAT_REQ_TX_FULL_PEEK, 1);
	while (qp->sq.req != head) {
		struct srnic_swqe *w = &qp->sq.wqe[qp->sq.req & qp->sq.mask];

		if (req_pass_finished(eng, qp, w))
			continue;
		if (w->state != SRNIC_WQE_POSTED || !wqe_is_local(w)) {
			qp->req.tx_wait = 1;
			return true;
		}
		/* the same waits as eng_req_run()'s, which start nothing */
		if (unlikely(srnic_qp_cur_state(qp) == IBV_QPS_SQD)) {
			eng_stat(eng, SRNIC_STAT_REQ_WAIT_SQD, 1);
			return false;
		}
		if (w->fence && qp->req.rd_atomic > 0) {
			eng_stat(eng, SRNIC_STAT_REQ_WAIT_FENCE, 1);
			return false;
		}
		if (budget-- == 0)
			return true;
		if (!req_local_op(eng, qp, w))
			return false;
		eng_stat(eng, SRNIC_STAT_REQ_TX_FULL_LOCAL, 1);
	}
	qp->req_idle = 1;
	return false;
}

bool
eng_req_run(struct srnic_engine *eng, struct srnic_qp *qp)
{
	unsigned int budget = SRNIC_REQ_BUDGET;
	bool sqd, wait = false;
	uint32_t head;

	if (qp->req_idle)
		return false; /* nothing posted since: the SQ's lines stay untouched */
	if (unlikely(qp->req.stalled))
		return false;
	if (unlikely(qp->req.wait_until != 0)) {
		if (eng->now < qp->req.wait_until)
			return false; /* RNR wait: the timer wheel wakes the QP */
		qp->req.wait_until = 0;
	}
	/* No room to build into: only the local WQEs at the SQ's head can
	 * run (req_tx_full_run()). Once the head is known to need the wire
	 * (req.tx_wait), leave before the SQ's lines are read (with a
	 * thousand QPs, each is a miss, for every turn spent waiting). */
	if (unlikely(eng_tx_free(eng) <= SRNIC_TX_RESERVE)) {
		eng_stat(eng, SRNIC_STAT_REQ_TX_FULL, 1);
		if (qp->req.tx_wait)
			return true;
		return req_tx_full_run(eng, qp);
	}
	if (unlikely(qp->req.tx_wait))
		qp->req.tx_wait = 0; /* sq.req may move now */
	sqd = srnic_qp_cur_state(qp) == IBV_QPS_SQD;
	head = atomic_load_explicit(&qp->sq.head, memory_order_acquire);
	while (budget > 0 && qp->sq.req != head) {
		struct srnic_swqe *w = &qp->sq.wqe[qp->sq.req & qp->sq.mask];

		if (req_pass_finished(eng, qp, w))
			continue;
		if (unlikely(eng_tx_free(eng) <= SRNIC_TX_RESERVE)) {
			eng_stat(eng, SRNIC_STAT_REQ_TX_FULL, 1);
			/* w is read: if it needs the wire, the turns until
			 * TX has room need not look at the SQ to know */
			qp->req.tx_wait = w->state != SRNIC_WQE_POSTED || !wqe_is_local(w);
			return true;
		}
		if (w->state == SRNIC_WQE_POSTED) {
			bool rd_atomic = wqe_is_rd_atomic(w);
			enum ibv_wc_status st;
			uint32_t comp = atomic_load_explicit(&qp->sq.comp, memory_order_relaxed);

			/* SQD: what was started is finished (and retried),
			 * nothing new starts (IBTA 10.3.1); SQD -> RTS rings
			 * the doorbell. */
			if (unlikely(sqd)) {
				eng_stat(eng, SRNIC_STAT_REQ_WAIT_SQD, 1);
				return false;
			}
			/* A fenced WQE waits for every earlier READ/atomic (IBTA 10.8.3.3). */
			if (w->fence && qp->req.rd_atomic > 0) {
				eng_stat(eng, SRNIC_STAT_REQ_WAIT_FENCE, 1);
				return false; /* a completion wakes the QP */
			}
			/* a local op spends the turn's budget as a packet
			 * does: an SQ of BIND_MWs runs SRNIC_REQ_BUDGET of
			 * them per turn, not whole while other QPs wait */
			if (unlikely(wqe_is_local(w))) {
				if (!req_local_op(eng, qp, w))
					return false;
				budget--;
				continue;
			}
			if (rd_atomic && qp->req.rd_atomic >= qp->max_rd_atomic) {
				eng_stat(eng, SRNIC_STAT_REQ_WAIT_RD_ATOMIC, 1);
				return false;
			}
			if (qp->sq.req - comp >= SRNIC_MAX_INFLIGHT_WQE ||
			    req_psn_window_full(qp, comp, w)) {
				eng_stat(eng, SRNIC_STAT_REQ_WAIT_WINDOW, 1);
				return false;
			}
			st = wqe_check_local(qp, w);
			if (unlikely(st != IBV_WC_SUCCESS)) {
				req_local_error(eng, qp, w, st);
				return false;
			}
			/* UD: one packet, or none when too long */
			w->npkts = qp->transport == SRNIC_OPM_UD ? 1 : wqe_npkts(w, qp->pmtu);
			w->first_psn = qp->req.psn;
			w->acked_pkts = 0;
			qp->req.psn = srnic_psn_add(qp->req.psn, w->npkts);
			w->state = SRNIC_WQE_SENDING;
			if (rd_atomic)
				qp->req.rd_atomic++;
			eng_stat(eng, SRNIC_STAT_REQ_MSGS, 1);
		}
		if (req_build(eng, qp, w, &wait) != 0)
			return !wait; /* out of mbufs or gone: try again next poll */
		budget--;
		if (w->sent_pkts == w->npkts) {
			/* UC and UD wait for no ACK: done once queued for TX */
			bool acked = qp->transport == SRNIC_OPM_RC;

			w->state = acked ? SRNIC_WQE_SENT : SRNIC_WQE_DONE;
			qp->sq.req++;
			if (!acked)
				eng_comp_retire(eng, qp);
		}
	}
	qp->req_idle = qp->sq.req == head;
	return !qp->req_idle; /* budget spent with work left */
}
