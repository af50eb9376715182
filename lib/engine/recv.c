/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive and dispatch, in the order of rxe's receive path: frame and
 * header lengths, version, ICRC (srnic_pkt_parse), then destination
 * address, QP lookup, QP's engine, transport and state, P_Key; RC requests
 * go to the responder, responses to the completer, UD and UC packets to
 * their receive paths (ud.c, uc.c). Every drop has its counter.
 */
#include <rte_ip.h>

#include "eng_internal.h"
#include "neigh.h"

/* IPv6 to any of our GIDs: the device's IPv6 address or, on any device,
 * its link-local GID 0. */
static __rte_noinline bool
pkt_is_for_us6(const struct srnic_dev *dev, const uint8_t *dst)
{
	return srnic_dev_gid_find(dev, dst) >= 0;
}

static bool
pkt_is_for_us(const struct srnic_dev *dev, const struct srnic_pkt *p)
{
	const uint8_t *f = rte_pktmbuf_mtod(p->mbuf, const uint8_t *);

	if (likely(p->ip_ver == 4))
		return dev->ip_ver == 4 &&
		       memcmp(f + p->l3_off + offsetof(struct rte_ipv4_hdr, dst_addr), dev->ip, 4) == 0;
	return pkt_is_for_us6(dev, f + p->l3_off + offsetof(struct rte_ipv6_hdr, dst_addr));
}

/* The peer's address must be the one the QP is connected to (read from
 * the QP's header template, on a line the packet's answer uses anyway). */
static bool
pkt_from_peer(const struct srnic_qp *qp, const struct srnic_pkt *p)
{
	const uint8_t *f = rte_pktmbuf_mtod(p->mbuf, const uint8_t *);
	const uint8_t *peer = qp->tmpl.bytes + qp->tmpl.l2_len;

	/* of the family the QP's source GID talks */
	if (unlikely(p->ip_ver != qp->tmpl.ip_ver))
		return false;
	if (p->ip_ver == 4)
		return memcmp(f + p->l3_off + offsetof(struct rte_ipv4_hdr, src_addr),
			      peer + offsetof(struct rte_ipv4_hdr, dst_addr), 4) == 0;
	return memcmp(f + p->l3_off + offsetof(struct rte_ipv6_hdr, src_addr),
		      peer + offsetof(struct rte_ipv6_hdr, dst_addr), 16) == 0;
}

/* The states a QP takes a packet in, as masks of enum ibv_qp_state (a
 * single test per packet): requests from RTR on, responses to its own
 * requests from RTS on (rxe's check_qp_state()), nothing in ERR. */
#define RECV_STATES_RESP (RTE_BIT32(IBV_QPS_RTS) | RTE_BIT32(IBV_QPS_SQD) | RTE_BIT32(IBV_QPS_SQE))
#define RECV_STATES_REQ (RTE_BIT32(IBV_QPS_RTR) | RECV_STATES_RESP)

static void
recv_host(struct srnic_engine *eng, struct rte_mbuf *m)
{
	struct srnic_dev *dev = eng->dev;

	if (eng_neigh_rx(eng, m))
		return;
	if (dev->host_rx != NULL) {
		eng_stat(eng, SRNIC_STAT_RX_HOST, 1);
		dev->host_rx(dev, m, dev->host_rx_arg);
		return;
	}
	eng_stat(eng, SRNIC_STAT_RX_HOST_DROP, 1);
	rte_pktmbuf_free(m);
}

void
eng_recv_burst(struct srnic_engine *eng, struct rte_mbuf **pkts, uint16_t n,
		 unsigned int parse_flags)
{
	struct srnic_dev *dev = eng->dev;
	struct eng_free_batch fb;
	uint64_t bytes = 0;
	uint16_t i;

	fb.nb_pools = 0;
	fb.nb_ext = 0;
	/* the burst's counters once, not per packet */
	eng_stat(eng, SRNIC_STAT_RX_PKTS, n);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i];
		struct srnic_pkt pkt;
		struct srnic_qp *qp;
		enum srnic_parse_err pe;
		enum ibv_qp_state st;

		if (i + 1 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 1], void *));
		bytes += rte_pktmbuf_pkt_len(m);
		pe = srnic_pkt_parse(m, &pkt, parse_flags);
		if (unlikely(pe != SRNIC_PARSE_OK)) {
			if (pe <= SRNIC_PARSE_NOT_ROCE) {
				recv_host(eng, m);
				continue;
			}
			eng_stat(eng, pe == SRNIC_PARSE_ICRC ? SRNIC_STAT_RX_ICRC_ERR
							     : SRNIC_STAT_RX_MALFORMED, 1);
			goto drop;
		}
		if (unlikely(!pkt_is_for_us(dev, &pkt))) {
			/* a group's: the port's RX reads with the ICRC check,
			 * other engines' copies and our loopback without */
			if (!eng_ud_mcast_rx(eng, &pkt, !(parse_flags & SRNIC_PARSE_F_NO_ICRC)))
				eng_stat(eng, SRNIC_STAT_RX_NOT_FOR_US, 1);
			goto drop;
		}
		qp = srnic_dev_qp(dev, pkt.dqpn);
		if (unlikely(qp == NULL)) {
			eng_stat(eng, SRNIC_STAT_RX_NO_QP, 1);
			goto drop;
		}
		if (qp->eng != eng) {
			/* Another engine owns this QP: hand the packet over. */
			if (rte_ring_mp_enqueue(qp->eng->redirect, m) != 0) {
				eng_stat(eng, SRNIC_STAT_RX_REDIRECT_DROP, 1);
				goto drop;
			}
			eng_stat(eng, SRNIC_STAT_RX_REDIRECT, 1);
			continue;
		}
		if (unlikely(!(pkt.mask & qp->transport))) {
			eng_stat(eng, SRNIC_STAT_RX_BAD_TRANSPORT, 1);
			goto drop;
		}
		st = srnic_qp_cur_state(qp);
		/* UD takes datagrams from anyone; RC and UC from their peer */
		if (unlikely(!((pkt.mask & SRNIC_OPM_RESP ? RECV_STATES_RESP : RECV_STATES_REQ) &
			       RTE_BIT32(st & 31)) ||
			     (qp->transport != SRNIC_OPM_UD && !pkt_from_peer(qp, &pkt)))) {
			eng_stat(eng, SRNIC_STAT_RX_QP_STATE, 1);
			goto drop;
		}
		/* rxe's check_keys: every QP has pkey index 0, the default
		 * full-member key; a mismatch is silently dropped (IBTA 9.6 header
		 * validation: no NAK for a bad P_Key). */
		if (unlikely(!srnic_pkey_match(srnic_bth_pkey(pkt.bth), SRNIC_PKEY_DEFAULT))) {
			eng_stat(eng, SRNIC_STAT_RX_BAD_PKEY, 1);
			goto drop;
		}
		if (unlikely(st == IBV_QPS_RTR) && !qp->comm_est_raised)
			eng_comm_est(eng, qp);
		if (unlikely(qp->transport != SRNIC_OPM_RC)) {
			/* nothing to answer: no turn needed */
			if (qp->transport == SRNIC_OPM_UD)
				eng_ud_rx(eng, qp, &pkt);
			else
				eng_uc_rx(eng, qp, &pkt);
			goto drop;
		}
		if (pkt.mask & SRNIC_OPM_REQ)
			eng_resp_rx(eng, qp, &pkt);
		else
			eng_comp_rx(eng, qp, &pkt);
		/* Something to answer, or room to send more: give it a turn. */
		eng_activate(eng, qp);
drop:
		eng_free_batch_add(&fb, m);
	}
	eng_free_batch_flush(&fb);
	eng_stat(eng, SRNIC_STAT_RX_BYTES, bytes);
}
