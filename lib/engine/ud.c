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
 */
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
		memcpy((void *)(uintptr_t)(sge[i].addr + off), src, n);
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
