/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD receive (IBTA 9.8.4, 10.2.5): a SEND ONLY [with immediate] with a
 * DETH. After the receive path's checks (transport, state, P_Key), in
 * order: Q_Key, length against the path MTU, a receive WQE that holds GRH
 * and payload (none, or too small: dropped, UD has no RNR), then the buffer gets the 40-byte GRH area first, as
 * Linux fills it for RoCEv2 (rxe's send_data_in of union rdma_network_hdr:
 * IPv4, 20 zero bytes then the IPv4 header; IPv6, the IPv6 header), and
 * the payload after it. The completion names the sender (src_qp from the
 * DETH) and carries IBV_WC_GRH. Nothing is acknowledged and PSNs are not
 * checked (no ordering, no duplicates to find).
 *
 * Multicast (IBTA 10.5, eng_ud_mcast_rx()): a datagram to a group's IP
 * address and QPN 0xFFFFFF goes through the same steps once per QP
 * attached to the group (lib/core/mcast.c), each with its own Q_Key and
 * receive WQE.
 */
#include <rte_ip.h>

#include "eng_internal.h"

/* Copy len bytes of src into the scatter list at offset off (local write
 * checked per piece). */
static enum srnic_key_err
ud_copy_flat(struct srnic_qp *qp, const struct ibv_sge *sge, unsigned int nsge, uint64_t off,
	     const uint8_t *src, uint32_t len)
{
	unsigned int i;

	for (i = 0; i < nsge && len > 0; i++) {
		struct srnic_mr *mr;
		enum srnic_key_err ke;
		uint32_t n;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = (uint32_t)RTE_MIN((uint64_t)len, sge[i].length - off);
		ke = srnic_mr_check(qp->dev, qp->pd, sge[i].lkey, IBV_ACCESS_LOCAL_WRITE,
				    sge[i].addr + off, n, &mr);
		if (unlikely(ke != SRNIC_KEY_OK))
			return ke;
		memcpy(srnic_mr_at(mr, sge[i].addr + off), src, n);
		src += n;
		len -= n;
		off = 0;
	}
	return len == 0 ? SRNIC_KEY_OK : SRNIC_KEY_BOUNDS;
}

/* The GRH area of a packet, as Linux writes it into a UD receive buffer. */
static void
ud_grh(const struct srnic_pkt *pkt, uint8_t grh[SRNIC_GRH_LEN])
{
	const uint8_t *l3 = rte_pktmbuf_mtod(pkt->mbuf, const uint8_t *) + pkt->l3_off;

	if (pkt->ip_ver == 4) {
		memset(grh, 0, SRNIC_GRH_LEN - 20);
		memcpy(grh + SRNIC_GRH_LEN - 20, l3, 20); /* IHL 5: srnic_pkt_parse() */
	} else {
		memcpy(grh, l3, SRNIC_GRH_LEN);
	}
}

/* A receive WQE whose scatter list fails the local write check (an lkey
 * that is not the PD's or no longer registered, a range outside its MR):
 * the application's own WQE is malformed, which a peer cannot cause (the
 * length was checked first), so as rxe (RESPST_ERR_MALFORMED_WQE, class A)
 * its error CQE and the QP to ERR. */
static __rte_noinline void
ud_recv_prot_error(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_rwqe *w,
		   uint32_t wq_next)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = IBV_WC_LOC_PROT_ERR;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qp->qpn;
	eng_qp_cqe(eng, qp, qp->rcq, &wc, wq_next);
	eng_qp_to_err(eng, qp, "UD receive WQE key error");
}

void
eng_ud_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt)
{
	const uint8_t *deth = srnic_pkt_hdr(pkt, SRNIC_HDR_DETH);
	uint8_t grh[SRNIC_GRH_LEN];
	struct srnic_rwqe srq_wqe;
	const struct srnic_rwqe *w;
	bool too_small = false;
	uint32_t next;
	struct ibv_wc wc;

	/* A packet whose Q_Key is not the QP's is silently dropped (C10-15). */
	if (unlikely(srnic_deth_qkey(deth) != __atomic_load_n(&qp->qkey, __ATOMIC_RELAXED))) {
		eng_stat(eng, SRNIC_STAT_RX_UD_QKEY_ERR, 1);
		return;
	}
	if (unlikely(pkt->pay_len > qp->pmtu)) {
		eng_stat(eng, SRNIC_STAT_RX_UD_TOO_LONG, 1);
		return;
	}
	/* A datagram larger than the next receive WQE is a class D error
	 * (rxe's RESPST_ERR_LENGTH for UD): dropped, no completion, the QP
	 * stays in RTS and the WQE stays posted, untouched, for the next
	 * datagram. Were it an error CQE and ERR, one datagram from anyone
	 * who knows the Q_Key would kill the QP (QP1: the CM). */
	w = eng_rwqe_take(eng, qp, &srq_wqe, &next, SRNIC_GRH_LEN + pkt->pay_len, &too_small);
	if (unlikely(w == NULL)) {
		eng_stat(eng, too_small ? SRNIC_STAT_RX_UD_RECV_TOO_SMALL : SRNIC_STAT_RX_UD_NO_RECV,
			 1);
		return;
	}
	ud_grh(pkt, grh);
	if (unlikely(ud_copy_flat(qp, w->sge, w->num_sge, 0, grh, SRNIC_GRH_LEN) != SRNIC_KEY_OK ||
		     (pkt->pay_len > 0 &&
		      eng_sge_copy_in_sgl(qp, w->sge, w->num_sge, SRNIC_GRH_LEN, pkt,
					    pkt->pay_len) != SRNIC_KEY_OK))) {
		ud_recv_prot_error(eng, qp, w, next);
		return;
	}
	eng_stat(eng, SRNIC_STAT_RX_UD_PKTS, 1);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = w->wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = SRNIC_GRH_LEN + pkt->pay_len;
	wc.qp_num = qp->qpn;
	wc.src_qp = srnic_deth_sqpn(deth);
	wc.wc_flags = IBV_WC_GRH;
	wc.pkey_index = 0;
	/* the packet's type where mlx5 puts it, not the 802.1Q priority
	 * (srnic.h: UCX's ud_verbs drops every packet otherwise) */
	wc.sl = SRNIC_WC_SL_ROCE_UDP |
		(pkt->ip_ver == 4 ? SRNIC_WC_SL_ROCE_IPV4 : SRNIC_WC_SL_ROCE_IPV6);
	if (pkt->mask & SRNIC_OPM_IMMDT) {
		wc.imm_data = srnic_immdt_be(srnic_pkt_hdr(pkt, SRNIC_HDR_IMMDT));
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	eng_qp_cqe_se(eng, qp, qp->rcq, &wc, next, srnic_bth_se(pkt->bth));
}

/* The group a multicast datagram is for (its destination address as a
 * GID), from the table mcast.c publishes; NULL if no QP joined it. */
static const struct srnic_mcast_grp *
ud_mcast_group(const struct srnic_dev *dev, const union ibv_gid *mgid)
{
	uint32_t i;

	for (i = 0; i < SRNIC_MAX_MCAST_GRP; i++) {
		const struct srnic_mcast_grp *g = __atomic_load_n(&dev->mcast[i], __ATOMIC_ACQUIRE);

		if (g != NULL && memcmp(g->mgid.raw, mgid->raw, 16) == 0)
			return g;
	}
	return NULL;
}

/* Hand a copy of a group's datagram to engine `to`, whose QPs in the
 * group take it from its redirect ring (there it is not passed on again). */
static void
ud_mcast_copy(struct srnic_engine *eng, struct srnic_engine *to, const struct srnic_pkt *pkt)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(pkt->mbuf, eng->dev->pool, 0, UINT32_MAX);

	if (unlikely(c == NULL || rte_ring_mp_enqueue(to->redirect, c) != 0)) {
		rte_pktmbuf_free(c);
		eng_stat(eng, SRNIC_STAT_RX_MCAST_COPY_DROP, 1);
		return;
	}
	eng_stat(eng, SRNIC_STAT_RX_MCAST_COPIES, 1);
}

bool
eng_ud_mcast_rx(struct srnic_engine *eng, struct srnic_pkt *pkt, bool from_port)
{
	const uint8_t *l3 = rte_pktmbuf_mtod(pkt->mbuf, const uint8_t *) + pkt->l3_off;
	struct srnic_dev *dev = eng->dev;
	const struct srnic_mcast_grp *g;
	uint32_t others = 0;
	union ibv_gid mgid;
	uint16_t k;

	if (pkt->ip_ver == 4)
		srnic_gid_from_ipv4(&mgid, l3 + offsetof(struct rte_ipv4_hdr, dst_addr));
	else
		memcpy(mgid.raw, l3 + offsetof(struct rte_ipv6_hdr, dst_addr), 16);
	if (!srnic_gid_is_mgid(&mgid))
		return false;
	/* IBTA 10.5.2.2: to a group, the destination QPN is 0xFFFFFF */
	g = atomic_load_explicit(&dev->nb_mcast_grp, memory_order_relaxed) != 0 &&
	    pkt->dqpn == SRNIC_MCAST_QPN ? ud_mcast_group(dev, &mgid) : NULL;
	if (g == NULL) {
		eng_stat(eng, SRNIC_STAT_RX_MCAST_NO_GROUP, 1);
		return true;
	}
	if (unlikely(!(pkt->mask & SRNIC_OPM_UD))) {
		eng_stat(eng, SRNIC_STAT_RX_BAD_TRANSPORT, 1);
		return true;
	}
	if (unlikely(!srnic_pkey_match(srnic_bth_pkey(pkt->bth), SRNIC_PKEY_DEFAULT))) {
		eng_stat(eng, SRNIC_STAT_RX_BAD_PKEY, 1);
		return true;
	}
	eng_stat(eng, SRNIC_STAT_RX_MCAST_PKTS, 1);
	/* Every QP of the group on this engine gets the datagram (each
	 * checks its Q_Key and takes its own receive WQE: eng_ud_rx() only
	 * reads the packet); the other engines get a copy each. */
	for (k = 0; k < g->nb_qp; k++) {
		struct srnic_qp *qp = g->qp[k];
		enum ibv_qp_state st;

		if (qp->eng != eng) {
			others |= 1u << qp->eng->index;
			continue;
		}
		st = srnic_qp_cur_state(qp);
		if (unlikely(st < IBV_QPS_RTR || st == IBV_QPS_ERR)) {
			eng_stat(eng, SRNIC_STAT_RX_QP_STATE, 1);
			continue;
		}
		if (unlikely(st == IBV_QPS_RTR) && !qp->comm_est_raised)
			eng_comm_est(eng, qp);
		eng_ud_rx(eng, qp, pkt);
	}
	if (unlikely(others != 0) && from_port) {
		for (k = 0; k < dev->nb_engines; k++)
			if (others & (1u << k))
				ud_mcast_copy(eng, dev->engines[k], pkt);
	}
	return true;
}
