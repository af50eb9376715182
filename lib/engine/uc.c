/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UC responder (IBTA 9.7.5, 9.8.3 for UC): SEND and RDMA WRITE, with or
 * without immediate, FIRST/MIDDLE/LAST/ONLY, never acknowledged. The steps
 * are the RC responder's without the answers: PSN, op sequence, op valid,
 * resources, length, R_Key, execute, complete. Where RC NAKs, UC drops:
 * - a PSN gap (a lost packet) abandons the message in progress and every
 *   packet up to the next FIRST or ONLY, which starts afresh at its own PSN
 *   (the expected PSN resyncs there, as rxe's drop_msg does);
 * - a FIRST/ONLY while a message is in progress abandons that one and
 *   starts the new one; a MIDDLE/LAST with no message in progress, or of
 *   the other operation, is dropped with the rest of its message;
 * - access, R_Key and length errors, and no receive WQE, drop the message.
 * An abandoned SEND's receive WQE is not completed: the next SEND fills it
 * from its start (rxe reuses it the same way). A WRITE abandoned part way
 * may have placed some of its data: UC promises nothing else.
 * A SEND longer than its receive WQE is one more such drop (IBTA's class
 * D1 for UC, rxe's RESPST_ERR_LENGTH without an SRQ): no completion, the
 * QP stays in RTS, the WQE waits for the next SEND; nothing is written
 * past the WQE (each packet is checked before its bytes are). With an
 * SRQ too, where rxe completes the WQE in error (class E): that would let
 * any peer burn the shared queue's WQEs.
 */
#include "eng_internal.h"

/* What happened to one packet. */
enum uc_verdict {
	UC_TAKEN,
	UC_DROP_MSG,       /* drop it and the rest of its message */
};

/* Forget the message in progress (its receive WQE stays for the next). */
static void
uc_abandon(struct srnic_engine *eng, struct srnic_resp *r)
{
	if (r->msg != SRNIC_MSG_NONE)
		eng_stat(eng, SRNIC_STAT_RX_UC_MSG_DROP, 1);
	r->msg = SRNIC_MSG_NONE;
	r->recv_off = 0;
	r->write_resid = 0;
}

/* FIRST/MIDDLE carry exactly one PMTU, LAST 1..PMTU, ONLY 0..PMTU; a
 * WRITE's packets add up to its RETH length. */
static bool
uc_length_ok(const struct srnic_qp *qp, const struct srnic_pkt *pkt, uint32_t reth_len)
{
	const struct srnic_resp *r = &qp->resp;
	uint32_t m = pkt->mask;

	if ((m & SRNIC_OPM_ONLY) == SRNIC_OPM_ONLY) {
		if (pkt->pay_len > qp->pmtu)
			return false;
	} else if (!(m & SRNIC_OPM_LAST)) {
		if (pkt->pay_len != qp->pmtu)
			return false;
	} else if (pkt->pay_len == 0 || pkt->pay_len > qp->pmtu) {
		return false;
	}
	if (!(m & SRNIC_OPM_WRITE))
		return true;
	if (m & SRNIC_OPM_RETH) {
		if (reth_len > SRNIC_MAX_MSG_SIZE)
			return false;
		if (m & SRNIC_OPM_LAST)
			return pkt->pay_len == reth_len;          /* WRITE ONLY */
		return reth_len > qp->pmtu;                       /* FIRST of a longer one */
	}
	if (pkt->pay_len > r->write_resid)
		return false;
	return !(m & SRNIC_OPM_LAST) || pkt->pay_len == r->write_resid;
}

static void
uc_complete(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_pkt *pkt)
{
	eng_resp_recv_done(eng, qp, pkt);
	qp->resp.recv_off = 0;
}

/* Take a receive WQE for the message, if it needs one and has none. */
static bool
uc_take_rwqe(struct srnic_engine *eng, struct srnic_qp *qp, uint32_t m)
{
	struct srnic_resp *r = &qp->resp;
	const struct srnic_rwqe *w;

	if (!(m & SRNIC_OPM_RECV) || r->rwqe_taken ||
	    !((m & SRNIC_OPM_SEND) || (m & SRNIC_OPM_LAST)))
		return true;
	/* empty: the caller counts the drop (srq_empty_rnr is RC's: UC
	 * answers nothing) */
	w = eng_rwqe_take(eng, qp, &r->rwqe, &r->rwqe_next, 0, NULL);
	if (w == NULL)
		return false;
	if (w != &r->rwqe)
		r->rwqe = *w;
	r->rwqe_taken = 1;
	r->recv_off = 0;
	return true;
}

/* One packet whose PSN and place in its message are right. */
static enum uc_verdict
uc_execute(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_pkt *pkt)
{
	struct srnic_resp *r = &qp->resp;
	uint32_t m = pkt->mask, reth_len = 0;
	uint64_t va = 0;
	uint32_t rkey = 0;
	struct srnic_mr *mr;

	if ((m & SRNIC_OPM_WRITE) && !(qp->access & IBV_ACCESS_REMOTE_WRITE)) {
		eng_stat(eng, SRNIC_STAT_RX_UC_ERR_DROP, 1);
		return UC_DROP_MSG;
	}
	if (!uc_take_rwqe(eng, qp, m)) {
		eng_stat(eng, SRNIC_STAT_RX_UC_NO_RECV, 1);
		return UC_DROP_MSG;
	}
	if (m & SRNIC_OPM_RETH) {
		const uint8_t *reth = srnic_pkt_hdr(pkt, SRNIC_HDR_RETH);

		va = srnic_reth_va(reth);
		rkey = srnic_reth_rkey(reth);
		reth_len = srnic_reth_len(reth);
	}
	if (!uc_length_ok(qp, pkt, reth_len)) {
		eng_stat(eng, SRNIC_STAT_RX_UC_ERR_DROP, 1);
		return UC_DROP_MSG;
	}
	if (m & SRNIC_OPM_SEND) {
		if (unlikely(r->recv_off + pkt->pay_len > r->rwqe.length)) {
			/* class D1: were it an error CQE and ERR, one long
			 * message from the peer would kill the QP */
			eng_stat(eng, SRNIC_STAT_RX_UC_RECV_TOO_SMALL, 1);
			return UC_DROP_MSG;
		}
		if (pkt->pay_len > 0 &&
		    eng_sge_copy_in(qp, r->rwqe.sge, r->rwqe.num_sge, r->recv_off, pkt,
				      pkt->pay_len) != SRNIC_KEY_OK) {
			eng_stat(eng, SRNIC_STAT_RX_UC_ERR_DROP, 1);
			return UC_DROP_MSG;
		}
		r->recv_off += pkt->pay_len;
	} else {
		if (m & SRNIC_OPM_FIRST) {
			/* a zero-length WRITE checks no key (IBTA 9.7) */
			if (reth_len > 0 &&
			    eng_rkey_check(qp, rkey, IBV_ACCESS_REMOTE_WRITE, va, reth_len,
					   &mr) != SRNIC_KEY_OK) {
				eng_qp_stat(eng, SRNIC_STAT_RESP_RKEY_ERR, &qp->stats.rkey_errs);
				eng_stat(eng, SRNIC_STAT_RX_UC_ERR_DROP, 1);
				return UC_DROP_MSG;
			}
			r->write_va = va;
			r->write_rkey = rkey;
			r->write_resid = reth_len;
			r->write_len = reth_len;
		}
		if (pkt->pay_len > 0) {
			/* looked up again: it may have been deregistered since */
			if (eng_rkey_check(qp, r->write_rkey, IBV_ACCESS_REMOTE_WRITE, r->write_va,
					   pkt->pay_len, &mr) != SRNIC_KEY_OK) {
				eng_stat(eng, SRNIC_STAT_RX_UC_ERR_DROP, 1);
				return UC_DROP_MSG;
			}
			srnic_pkt_copy_payload(pkt, 0, srnic_mr_at(mr, r->write_va), pkt->pay_len);
		}
		r->write_va += pkt->pay_len;
		r->write_resid -= pkt->pay_len;
	}
	r->epsn = srnic_psn_add(r->epsn, 1);
	if (m & SRNIC_OPM_LAST) {
		r->msg = SRNIC_MSG_NONE;
		r->msn = (r->msn + 1) & SRNIC_MSN_MASK;
		if (m & SRNIC_OPM_COMP)
			uc_complete(eng, qp, pkt);
	} else {
		r->msg = (m & SRNIC_OPM_SEND) ? SRNIC_MSG_SEND : SRNIC_MSG_WRITE;
	}
	return UC_TAKEN;
}

void
eng_uc_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt)
{
	struct srnic_resp *r = &qp->resp;
	uint32_t m = pkt->mask;
	bool first = (m & SRNIC_OPM_FIRST) != 0;

	eng_stat(eng, SRNIC_STAT_RX_UC_PKTS, 1);
	if (unlikely(pkt->psn != r->epsn || r->uc_drop)) {
		if (!first) {
			/* a gap inside a message, or the tail of a dropped one */
			if (!r->uc_drop) {
				eng_qp_stat(eng, SRNIC_STAT_RX_UC_PSN_GAP, &qp->stats.out_of_seq_rcvd);
				uc_abandon(eng, r);
				r->uc_drop = 1;
			}
			eng_stat(eng, SRNIC_STAT_RX_UC_DROP, 1);
			return;
		}
		/* a new message: start again at its PSN */
		if (pkt->psn != r->epsn && !r->uc_drop)
			eng_qp_stat(eng, SRNIC_STAT_RX_UC_PSN_GAP, &qp->stats.out_of_seq_rcvd);
		r->uc_drop = 0;
		r->epsn = pkt->psn;
	}
	/* op sequence (IBTA chapter 9, the UC responder: a new FIRST or ONLY
	 * abandons the message under way) */
	if (first) {
		uc_abandon(eng, r);
	} else if (r->msg == SRNIC_MSG_NONE ||
		   (r->msg == SRNIC_MSG_SEND) != ((m & SRNIC_OPM_SEND) != 0)) {
		eng_stat(eng, SRNIC_STAT_RX_UC_OPSEQ, 1);
		goto drop_msg;
	}
	if (uc_execute(eng, qp, pkt) == UC_TAKEN)
		return;
drop_msg:
	uc_abandon(eng, r);
	r->uc_drop = 1;
	eng_stat(eng, SRNIC_STAT_RX_UC_DROP, 1);
}
