/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder: a state machine per request packet, in spec order (IBTA
 * 9.7.4-9.7.5; rxe's steps): check PSN, op sequence, op valid (QP access),
 * resources (RECV WQE, READ/atomic slots), length, R_Key, execute,
 * complete, acknowledge. Errors are states, each mapped once to a NAK.
 *
 * What the responder owes the requester (READ responses, atomic ACKs,
 * ACKs, NAKs) goes into a per-QP FIFO in PSN order, so an ACK never
 * overtakes an earlier READ's response; eng_resp_run() sends from it
 * under a budget. READ responses are zero-copy: each payload segment is an
 * external buffer over the registered memory.
 */
#include "eng_internal.h"

enum resp_state {
	RESP_CHECK_PSN,
	RESP_CHECK_OP_SEQ,
	RESP_CHECK_OP_VALID,
	RESP_CHECK_RESOURCE,
	RESP_CHECK_LENGTH,
	RESP_CHECK_RKEY,
	RESP_EXECUTE,
	RESP_COMPLETE,
	RESP_ACKNOWLEDGE,
	RESP_DONE,
	/* errors */
	RESP_DUPLICATE,
	RESP_ERR_OUT_OF_SEQ,
	RESP_ERR_OP_SEQ,           /* NAK invalid request */
	RESP_ERR_UNSUPPORTED,      /* NAK invalid request */
	RESP_ERR_RNR,              /* RNR NAK */
	RESP_ERR_NO_RESOURCE,      /* too many READ/atomic: NAK invalid request */
	RESP_ERR_LENGTH,           /* NAK invalid request */
	RESP_ERR_RECV_TOO_SMALL,   /* SEND longer than the RECV: NAK invalid request */
	RESP_ERR_MISALIGNED,       /* atomic VA not 8-byte aligned: NAK invalid request */
	RESP_ERR_RKEY,             /* NAK remote access error */
	RESP_ERR_RECV_LKEY,        /* bad RECV buffer: NAK remote operational error */
	RESP_ERR_INV_RKEY,         /* SEND with Invalidate of a key it cannot: NAK invalid request */
	RESP_STATE_COUNT
};

static const char *const resp_state_names[RESP_STATE_COUNT] = {
	[RESP_CHECK_PSN] = "CHECK_PSN",
	[RESP_CHECK_OP_SEQ] = "CHECK_OP_SEQ",
	[RESP_CHECK_OP_VALID] = "CHECK_OP_VALID",
	[RESP_CHECK_RESOURCE] = "CHECK_RESOURCE",
	[RESP_CHECK_LENGTH] = "CHECK_LENGTH",
	[RESP_CHECK_RKEY] = "CHECK_RKEY",
	[RESP_EXECUTE] = "EXECUTE",
	[RESP_COMPLETE] = "COMPLETE",
	[RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[RESP_DONE] = "DONE",
	[RESP_DUPLICATE] = "DUPLICATE",
	[RESP_ERR_OUT_OF_SEQ] = "ERR_OUT_OF_SEQ",
	[RESP_ERR_OP_SEQ] = "ERR_OP_SEQ",
	[RESP_ERR_UNSUPPORTED] = "ERR_UNSUPPORTED",
	[RESP_ERR_RNR] = "ERR_RNR",
	[RESP_ERR_NO_RESOURCE] = "ERR_NO_RESOURCE",
	[RESP_ERR_LENGTH] = "ERR_LENGTH",
	[RESP_ERR_RECV_TOO_SMALL] = "ERR_RECV_TOO_SMALL",
	[RESP_ERR_MISALIGNED] = "ERR_MISALIGNED",
	[RESP_ERR_RKEY] = "ERR_RKEY",
	[RESP_ERR_RECV_LKEY] = "ERR_RECV_LKEY",
	[RESP_ERR_INV_RKEY] = "ERR_INV_RKEY",
};

struct resp_ctx {
	struct srnic_engine *eng;
	struct srnic_qp *qp;
	struct srnic_pkt *pkt;
	uint32_t mask;
	uint64_t va;               /* RETH / AtomicETH */
	struct srnic_mr *mr;       /* its key's, once checked */
	uint32_t rkey;
	uint32_t len;              /* RETH DMA length */
};

/* ---- the FIFO of what is owed ---- */

static inline struct srnic_resp_entry *
fifo_tail(struct srnic_resp *r)
{
	return r->tail != r->head ? &r->fifo[(r->tail - 1) & (SRNIC_RESP_FIFO - 1)] : NULL;
}

/* A new entry at the tail of qp's FIFO (the QP then owes an answer), or
 * NULL when full. */
static struct srnic_resp_entry *
fifo_push(struct srnic_qp *qp)
{
	struct srnic_resp *r = &qp->resp;
	struct srnic_resp_entry *e;

	if (r->tail - r->head >= SRNIC_RESP_FIFO)
		return NULL;
	qp->resp_owed = 1;
	e = &r->fifo[r->tail & (SRNIC_RESP_FIFO - 1)];
	memset(e, 0, sizeof(*e));
	r->tail++;
	return e;
}

/* ACK coalescing: one ACK entry at the tail covers every later request. */
static void
owe_ack(struct srnic_qp *qp, uint32_t psn)
{
	struct srnic_resp *r = &qp->resp;
	struct srnic_resp_entry *e = fifo_tail(r);

	if (e == NULL || e->kind != SRNIC_RESP_ACK)
		e = fifo_push(qp);
	if (e == NULL)
		return; /* cannot happen: the FIFO holds twice the READ slots */
	e->kind = SRNIC_RESP_ACK;
	e->syndrome = srnic_aeth_syndrome_make(SRNIC_AETH_ACK, SRNIC_AETH_CREDIT_INVALID);
	e->psn = psn;
	e->msn = r->msn;
}

static void
owe_nak(struct srnic_engine *eng, struct srnic_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct srnic_resp_entry *e = fifo_push(qp);

	if (e == NULL) {
		eng_stat(eng, SRNIC_STAT_RESP_FIFO_FULL, 1);
		return;
	}
	e->kind = SRNIC_RESP_NAK;
	e->syndrome = syndrome;
	e->psn = psn;
	e->msn = qp->resp.msn;
}

/* ---- responder resources (struct srnic_resp_res) ---- */

/* Move ePSN on by n, counting the wraps (they extend PSNs to 64 bits). */
static inline void
epsn_add(struct srnic_resp *r, uint32_t n)
{
	uint32_t e = srnic_psn_add(r->epsn, n);

	r->epsn_wraps += e < r->epsn;
	r->epsn = e;
}

/* psn (at most 2^23 behind or ahead of ePSN) with the wraps. */
static inline uint64_t
psn_ext(const struct srnic_resp *r, uint32_t psn)
{
	return ((uint64_t)r->epsn_wraps << 24 | r->epsn) + (int64_t)srnic_psn_diff(psn, r->epsn);
}

/* A new resource for the READ/atomic at psn, replacing the oldest. Only
 * the last max_dest_rd_atomic are looked at, and no more of them are
 * in flight (check_resource), so the one replaced is finished. */
static struct srnic_resp_res *
res_new(struct srnic_resp *r, uint8_t kind, uint32_t psn, uint32_t npkts)
{
	struct srnic_resp_res *x = &r->res[r->res_count % SRNIC_MAX_RD_ATOMIC];

	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->id = ++r->res_count;
	x->psn_ext = psn_ext(r, psn);
	x->npkts = npkts;
	x->msn = r->msn;
	return x;
}

/* The newest remembered resource holding the PSN psn_x (extended), or NULL. */
static struct srnic_resp_res *
res_find(struct srnic_qp *qp, uint64_t psn_x)
{
	struct srnic_resp *r = &qp->resp;
	uint32_t k, n = RTE_MIN(r->res_count, (uint32_t)qp->max_dest_rd_atomic);

	for (k = 1; k <= n; k++) {
		struct srnic_resp_res *x = &r->res[(r->res_count - k) % SRNIC_MAX_RD_ATOMIC];

		if (psn_x - x->psn_ext < x->npkts)
			return x;
	}
	return NULL;
}

/* The FIFO entry still answering READ x (not all of it built), or NULL. */
static struct srnic_resp_entry *
res_live_entry(struct srnic_resp *r, const struct srnic_resp_res *x)
{
	struct srnic_resp_entry *e;

	if (x->fifo_pos - r->head >= r->tail - r->head)
		return NULL;
	e = &r->fifo[x->fifo_pos & (SRNIC_RESP_FIFO - 1)];
	if (e->res_id != x->id || e->kind != SRNIC_RESP_READ || e->sent >= e->npkts)
		return NULL;
	return e;
}

/* ---- steps ---- */

static enum resp_state
check_psn(struct resp_ctx *c)
{
	struct srnic_resp *r = &c->qp->resp;
	int32_t d = srnic_psn_diff(c->pkt->psn, r->epsn);

	if (d > 0)
		return RESP_ERR_OUT_OF_SEQ;
	if (d < 0)
		return RESP_DUPLICATE;
	r->seq_nak_sent = 0;
	return RESP_CHECK_OP_SEQ;
}

static enum resp_state
check_op_seq(struct resp_ctx *c)
{
	uint32_t m = c->mask;

	switch (c->qp->resp.msg) {
	case SRNIC_MSG_SEND:
		if ((m & SRNIC_OPM_SEND) && !(m & SRNIC_OPM_FIRST))
			return RESP_CHECK_OP_VALID;
		return RESP_ERR_OP_SEQ; /* missing MIDDLE/LAST */
	case SRNIC_MSG_WRITE:
		if ((m & SRNIC_OPM_WRITE) && !(m & SRNIC_OPM_FIRST))
			return RESP_CHECK_OP_VALID;
		return RESP_ERR_OP_SEQ;
	default:
		if (m & SRNIC_OPM_FIRST)
			return RESP_CHECK_OP_VALID;
		return RESP_ERR_OP_SEQ; /* missing FIRST */
	}
}

static enum resp_state
check_op_valid(struct resp_ctx *c)
{
	int acc = c->qp->access;
	uint32_t m = c->mask;

	if (((m & SRNIC_OPM_WRITE) && !(acc & IBV_ACCESS_REMOTE_WRITE)) ||
	    ((m & SRNIC_OPM_READ) && !(acc & IBV_ACCESS_REMOTE_READ)) ||
	    ((m & SRNIC_OPM_ATOMIC) && !(acc & IBV_ACCESS_REMOTE_ATOMIC)) ||
	    /* ATOMIC WRITE is a write to the QP (rxe's check_op_valid) */
	    ((m & SRNIC_OPM_ATOMIC_WRITE) && !(acc & IBV_ACCESS_REMOTE_WRITE)))
		return RESP_ERR_UNSUPPORTED;
	return RESP_CHECK_RESOURCE;
}

static enum resp_state
check_resource(struct resp_ctx *c)
{
	struct srnic_qp *qp = c->qp;
	struct srnic_resp *r = &qp->resp;

	if (c->mask & (SRNIC_OPM_READ | SRNIC_OPM_ATOMIC | SRNIC_OPM_ATOMIC_WRITE | SRNIC_OPM_FLUSH)) {
		if (r->rd_atomic >= qp->max_dest_rd_atomic)
			return RESP_ERR_NO_RESOURCE;
		return RESP_CHECK_LENGTH;
	}
	if ((c->mask & SRNIC_OPM_RECV) && !r->rwqe_taken &&
	    ((c->mask & SRNIC_OPM_SEND) || (c->mask & SRNIC_OPM_LAST))) {
		const struct srnic_rwqe *w =
			eng_rwqe_take(c->eng, qp, &r->rwqe, &r->rwqe_next, 0, NULL);

		if (w == NULL) {
			if (qp->srq != NULL)
				eng_stat(c->eng, SRNIC_STAT_SRQ_RNR, 1);
			return RESP_ERR_RNR;
		}
		if (w != &r->rwqe)
			r->rwqe = *w;
		r->rwqe_taken = 1;
		r->recv_off = 0;
	}
	return RESP_CHECK_LENGTH;
}

static enum resp_state
check_length(struct resp_ctx *c)
{
	const struct srnic_pkt *pkt = c->pkt;
	struct srnic_qp *qp = c->qp;
	struct srnic_resp *r = &qp->resp;
	uint32_t m = c->mask;

	/* FIRST and MIDDLE carry exactly one PMTU; LAST 1..PMTU; ONLY 0..PMTU. */
	if ((m & (SRNIC_OPM_FIRST | SRNIC_OPM_LAST)) != SRNIC_OPM_ONLY && (m & SRNIC_OPM_PAYLOAD)) {
		if (!(m & SRNIC_OPM_LAST) && pkt->pay_len != qp->pmtu)
			return RESP_ERR_LENGTH;
		if ((m & SRNIC_OPM_LAST) && (pkt->pay_len == 0 || pkt->pay_len > qp->pmtu))
			return RESP_ERR_LENGTH;
	} else if (pkt->pay_len > qp->pmtu) {
		return RESP_ERR_LENGTH;
	}
	if (m & SRNIC_OPM_RETH) {
		const uint8_t *reth = srnic_pkt_hdr(pkt, SRNIC_HDR_RETH);

		c->va = srnic_reth_va(reth);
		c->rkey = srnic_reth_rkey(reth);
		c->len = srnic_reth_len(reth);
		if (c->len > SRNIC_MAX_MSG_SIZE)
			return RESP_ERR_LENGTH;
		if ((m & SRNIC_OPM_WRITE) && (m & SRNIC_OPM_LAST) && pkt->pay_len != c->len)
			return RESP_ERR_LENGTH; /* WRITE ONLY */
		if ((m & SRNIC_OPM_WRITE) && !(m & SRNIC_OPM_LAST) && c->len <= qp->pmtu)
			return RESP_ERR_LENGTH; /* WRITE FIRST of a one-packet write */
	} else if ((m & SRNIC_OPM_WRITE) &&
		   (pkt->pay_len > r->write_resid ||
		    ((m & SRNIC_OPM_LAST) && pkt->pay_len != r->write_resid))) {
		return RESP_ERR_LENGTH;
	}
	if (unlikely(m & SRNIC_OPM_ATOMIC_WRITE)) {
		/* one 64-bit store: 8 bytes said and carried, 8-byte aligned
		 * (IBTA 1.5; rxe: RESPST_ERR_LENGTH, ..._MISALIGNED_ATOMIC) */
		if (c->len != sizeof(uint64_t) || pkt->pay_len != sizeof(uint64_t))
			return RESP_ERR_LENGTH;
		if (c->va & 7)
			return RESP_ERR_MISALIGNED;
	}
	if (unlikely(m & SRNIC_OPM_FLUSH) &&
	    (srnic_feth_plt(srnic_pkt_hdr(pkt, SRNIC_HDR_FETH)) &
	     ~(uint32_t)(SRNIC_FETH_PLT_GLOBAL | SRNIC_FETH_PLT_PERSISTENT)) != 0)
		return RESP_ERR_UNSUPPORTED; /* a placement type IBTA 1.5 does not name */
	if (m & SRNIC_OPM_ATOMIC) {
		const uint8_t *a = srnic_pkt_hdr(pkt, SRNIC_HDR_ATMETH);

		c->va = srnic_atmeth_va(a);
		c->rkey = srnic_atmeth_rkey(a);
		c->len = sizeof(uint64_t);
		if (c->va & 7)
			return RESP_ERR_MISALIGNED;
	}
	if ((m & SRNIC_OPM_SEND) && r->recv_off + pkt->pay_len > r->rwqe.length)
		return RESP_ERR_RECV_TOO_SMALL;
	return RESP_CHECK_RKEY;
}

static enum resp_state
check_rkey(struct resp_ctx *c)
{
	struct srnic_qp *qp = c->qp;
	int acc;

	if (!(c->mask & (SRNIC_OPM_RETH | SRNIC_OPM_ATOMIC)))
		return RESP_EXECUTE; /* FLUSH and ATOMIC WRITE have a RETH */
	if (unlikely(c->mask & SRNIC_OPM_FLUSH)) {
		/* always a key, whatever the length: the placement type's
		 * access (rxe's check_rkey); persistence no MR of srnic has */
		uint32_t plt = srnic_feth_plt(srnic_pkt_hdr(c->pkt, SRNIC_HDR_FETH));

		acc = ((plt & SRNIC_FETH_PLT_GLOBAL) ? SRNIC_ACCESS_FLUSH_GLOBAL : 0) |
		      ((plt & SRNIC_FETH_PLT_PERSISTENT) ? SRNIC_ACCESS_FLUSH_PERSISTENT : 0);
	} else if (c->len == 0) {
		return RESP_EXECUTE; /* a zero-length transfer checks no key (IBTA 9.7) */
	} else {
		acc = (c->mask & SRNIC_OPM_READ) ? IBV_ACCESS_REMOTE_READ :
		      (c->mask & (SRNIC_OPM_WRITE | SRNIC_OPM_ATOMIC_WRITE)) ? IBV_ACCESS_REMOTE_WRITE :
									       IBV_ACCESS_REMOTE_ATOMIC;
	}
	if (eng_rkey_check(qp, c->rkey, acc, c->va, c->len, &c->mr) != SRNIC_KEY_OK)
		return RESP_ERR_RKEY;
	return RESP_EXECUTE;
}

static uint64_t
do_atomic(const struct resp_ctx *c)
{
	const uint8_t *a = srnic_pkt_hdr(c->pkt, SRNIC_HDR_ATMETH);
	uint64_t *p = srnic_mr_at(c->mr, c->va);
	uint64_t orig;

	/* Atomic against every engine and the local CPU (IBV_ATOMIC_HCA). */
	if (c->pkt->opcode == SRNIC_OP_RC_CMP_SWAP) {
		orig = srnic_atmeth_compare(a);
		__atomic_compare_exchange_n(p, &orig, srnic_atmeth_swap_add(a), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		return orig; /* on failure, orig holds the value found */
	}
	return __atomic_fetch_add(p, srnic_atmeth_swap_add(a), __ATOMIC_SEQ_CST);
}

/* The zero-length READ RESPONSE ONLY that answers ATOMIC WRITE or FLUSH
 * x, at psn, in e (just pushed). */
static void
rsp0_entry(struct srnic_resp *r, struct srnic_resp_entry *e, struct srnic_resp_res *x,
	   uint32_t psn)
{
	x->fifo_pos = r->tail - 1;
	e->kind = SRNIC_RESP_READ;
	e->psn = psn;
	e->msn = r->msn;
	e->npkts = 1;
	e->va = x->va;
	e->rkey = x->rkey;
	e->length = 0;
	e->res_id = x->id;
}

/* ATOMIC WRITE or FLUSH (IBTA 1.5), executed once: the responder works
 * in PSN order, so every earlier request of the QP is placed. ATOMIC
 * WRITE is one aligned 64-bit store, atomic with respect to do_atomic()'s
 * (rxe: smp_store_release); FLUSH a full fence, what global visibility
 * of DRAM asks (persistence is not offered: check_rkey refused it). Both
 * owe a zero-length READ RESPONSE ONLY and hold a resource, so that a
 * duplicate is answered again, never executed again. */
static __rte_noinline enum resp_state
execute_rsp0(struct resp_ctx *c)
{
	struct srnic_qp *qp = c->qp;
	struct srnic_resp *r = &qp->resp;
	struct srnic_resp_entry *e = fifo_push(qp);
	struct srnic_resp_res *x;

	if (e == NULL)
		return RESP_ERR_NO_RESOURCE;
	if (c->mask & SRNIC_OPM_ATOMIC_WRITE) {
		uint64_t v;

		srnic_pkt_copy_payload(c->pkt, 0, &v, sizeof(v));
		__atomic_store_n((uint64_t *)srnic_mr_at(c->mr, c->va), v, __ATOMIC_RELEASE);
		eng_stat(c->eng, SRNIC_STAT_RESP_ATOMIC_WRITE, 1);
	} else {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		eng_stat(c->eng, SRNIC_STAT_RESP_FLUSH, 1);
	}
	r->msn = (r->msn + 1) & SRNIC_MSN_MASK;
	x = res_new(r, SRNIC_RESP_READ, c->pkt->psn, 1);
	x->va = c->va;
	x->rkey = c->rkey;
	x->length = 0;
	rsp0_entry(r, e, x, c->pkt->psn);
	r->rd_atomic++;
	epsn_add(r, 1);
	return RESP_DONE;
}

static enum resp_state
execute(struct resp_ctx *c)
{
	struct srnic_qp *qp = c->qp;
	struct srnic_resp *r = &qp->resp;
	const struct srnic_pkt *pkt = c->pkt;
	struct srnic_resp_res *x;
	uint32_t m = c->mask;

	if (unlikely(m & (SRNIC_OPM_ATOMIC_WRITE | SRNIC_OPM_FLUSH)))
		return execute_rsp0(c);
	if (m & SRNIC_OPM_SEND) {
		if (eng_sge_copy_in(qp, r->rwqe.sge, r->rwqe.num_sge, r->recv_off, pkt,
				      pkt->pay_len) != SRNIC_KEY_OK)
			return RESP_ERR_RECV_LKEY;
		r->recv_off += pkt->pay_len;
		/* SEND with Invalidate: the key goes once the message is
		 * placed, before its completion (IBTA 9.4.1.1.x; rxe execute) */
		if (unlikely(m & SRNIC_OPM_IETH) &&
		    eng_mw_remote_inv(c->eng, qp, srnic_ieth_rkey(srnic_pkt_hdr(pkt, SRNIC_HDR_IETH))) != 0)
			return RESP_ERR_INV_RKEY;
	} else if (m & SRNIC_OPM_WRITE) {
		struct srnic_mr *mr;

		if (m & SRNIC_OPM_FIRST) {
			r->write_va = c->va;
			r->write_rkey = c->rkey;
			r->write_resid = c->len;
			r->write_len = c->len;
		}
		if (pkt->pay_len > 0) {
			/* The key was checked for the whole range; look it up
			 * again in case it was deregistered since. */
			if (eng_rkey_check(qp, r->write_rkey, IBV_ACCESS_REMOTE_WRITE, r->write_va,
					   pkt->pay_len, &mr) != SRNIC_KEY_OK)
				return RESP_ERR_RKEY;
			srnic_pkt_copy_payload(pkt, 0, srnic_mr_at(mr, r->write_va), pkt->pay_len);
		}
		r->write_va += pkt->pay_len;
		r->write_resid -= pkt->pay_len;
	} else if (m & SRNIC_OPM_READ) {
		struct srnic_resp_entry *e = fifo_push(qp);
		uint32_t n = eng_msg_npkts(c->len, qp->pmtu);

		if (e == NULL)
			return RESP_ERR_NO_RESOURCE;
		r->msn = (r->msn + 1) & SRNIC_MSN_MASK;
		x = res_new(r, SRNIC_RESP_READ, pkt->psn, n);
		x->fifo_pos = r->tail - 1;
		x->va = c->va;
		x->rkey = c->rkey;
		x->length = c->len;
		e->kind = SRNIC_RESP_READ;
		e->psn = pkt->psn;
		e->msn = r->msn;
		e->npkts = n;
		e->va = c->va;
		e->rkey = c->rkey;
		e->length = c->len;
		e->res_id = x->id;
		r->rd_atomic++;
		epsn_add(r, n);
		return RESP_DONE;
	} else if (m & SRNIC_OPM_ATOMIC) {
		struct srnic_resp_entry *e = fifo_push(qp);

		if (e == NULL)
			return RESP_ERR_NO_RESOURCE;
		r->msn = (r->msn + 1) & SRNIC_MSN_MASK;
		e->kind = SRNIC_RESP_ATOMIC;
		e->psn = pkt->psn;
		e->msn = r->msn;
		e->atomic_orig = do_atomic(c);
		x = res_new(r, SRNIC_RESP_ATOMIC, pkt->psn, 1);
		x->orig = e->atomic_orig;
		e->res_id = x->id;
		r->rd_atomic++;
		epsn_add(r, 1);
		eng_stat(c->eng, SRNIC_STAT_RESP_ATOMIC, 1);
		return RESP_DONE;
	}
	epsn_add(r, 1);
	if (m & SRNIC_OPM_LAST) {
		r->msg = SRNIC_MSG_NONE;
		r->msn = (r->msn + 1) & SRNIC_MSN_MASK;
		return (m & SRNIC_OPM_COMP) ? RESP_COMPLETE : RESP_ACKNOWLEDGE;
	}
	r->msg = (m & SRNIC_OPM_SEND) ? SRNIC_MSG_SEND : SRNIC_MSG_WRITE;
	return RESP_ACKNOWLEDGE;
}

/* The receive completion of the message pkt ends (SEND, or WRITE with
 * immediate): its receive WQE is done. Shared by RC and UC (uc.c). */
void
eng_resp_recv_done(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_pkt *pkt)
{
	struct srnic_resp *r = &qp->resp;
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->rwqe.wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.qp_num = qp->qpn;
	wc.src_qp = qp->dest_qpn;
	if (pkt->mask & SRNIC_OPM_WRITE) {
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.byte_len = r->write_len;
	} else {
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = r->recv_off;
	}
	if (pkt->mask & SRNIC_OPM_IMMDT) {
		wc.imm_data = srnic_immdt_be(srnic_pkt_hdr(pkt, SRNIC_HDR_IMMDT));
		wc.wc_flags |= IBV_WC_WITH_IMM;
	} else if (unlikely(pkt->mask & SRNIC_OPM_IETH)) {
		wc.invalidated_rkey = srnic_ieth_rkey(srnic_pkt_hdr(pkt, SRNIC_HDR_IETH));
		wc.wc_flags |= IBV_WC_WITH_INV;
	}
	r->rwqe_taken = 0;
	/* SE of the message's last packet, kept beside the CQE for solicited
	 * notification (srnic_cq_solicited()); ibv_wc has no flag for it. */
	eng_qp_cqe_se(eng, qp, qp->rcq, &wc, r->rwqe_next, srnic_bth_se(pkt->bth));
}

static enum resp_state
complete(struct resp_ctx *c)
{
	eng_resp_recv_done(c->eng, c->qp, c->pkt);
	return RESP_ACKNOWLEDGE;
}

static enum resp_state
acknowledge(struct resp_ctx *c)
{
	/* Only packets with AckReq are ACKed (IBTA 9.7: a request with AckReq
	 * must be acknowledged, the others may be coalesced); one ACK entry covers
	 * every packet since the last response sent. */
	if (srnic_bth_ackreq(c->pkt->bth))
		owe_ack(c->qp, c->pkt->psn);
	return RESP_DONE;
}

/* Answers to duplicates reuse the resource their original held (they take
 * no READ/atomic slot, so a burst of duplicates never makes a new request
 * fail); they may use the FIFO only while room for every slot's READ and
 * its ACK stays free. */
static inline bool
dup_has_room(const struct srnic_resp *r)
{
	return r->tail - r->head < SRNIC_RESP_FIFO - 2 * SRNIC_MAX_RD_ATOMIC - 2;
}

/* A duplicate READ request: the requester lost (some of) the responses
 * and asks again for the rest (IBTA 9.7.5.1.4). It is served only when it
 * names a READ the responder executed and still remembers: the same R_Key,
 * and exactly the original's tail from the packet its PSN names (what
 * comp.c asks for). If that READ is still being answered, it restarts at
 * the PSN asked for, a new response message from there; otherwise the tail
 * is queued again. What goes back over packets already sent is answered
 * from a copy (the retry of a response whose memory changed under the
 * ICRC goes through).
 * Anything else is dropped and counted, never executed: a duplicate is no
 * way to read memory a READ never asked for, nor to make one request
 * answer many times. It never moves ePSN or the MSN. */
static void
duplicate_read(struct resp_ctx *c, uint64_t psn_x)
{
	struct srnic_qp *qp = c->qp;
	struct srnic_resp *r = &qp->resp;
	const uint8_t *reth = srnic_pkt_hdr(c->pkt, SRNIC_HDR_RETH);
	struct srnic_resp_res *x = res_find(qp, psn_x);
	struct srnic_resp_entry *e;
	uint32_t copy_npkts;
	uint32_t k;
	uint64_t skip;

	if (x == NULL || x->kind != SRNIC_RESP_READ || !(qp->access & IBV_ACCESS_REMOTE_READ))
		goto drop;
	k = (uint32_t)(psn_x - x->psn_ext);
	skip = (uint64_t)k * qp->pmtu;
	if (srnic_reth_rkey(reth) != x->rkey) {
		eng_qp_stat(c->eng, SRNIC_STAT_RESP_RKEY_ERR, &qp->stats.rkey_errs);
		goto drop;
	}
	if (srnic_reth_va(reth) != x->va + skip || srnic_reth_len(reth) != x->length - skip)
		goto drop;
	e = res_live_entry(r, x);
	if (e != NULL) {
		/* a copy only of what goes back over packets sent: up to the
		 * furthest this READ got (sent, or copied for an earlier
		 * restart), the rest zero-copy */
		uint32_t high = RTE_MAX(e->sent, e->copy_npkts);
		int32_t back = srnic_psn_diff(srnic_psn_add(e->psn, high), c->pkt->psn);

		copy_npkts = back > 0 ? (uint32_t)back : 0;
		eng_stat(c->eng, SRNIC_STAT_RESP_DUP_RESTART, 1);
	} else {
		if (!dup_has_room(r) || (e = fifo_push(qp)) == NULL)
			goto drop;
		e->kind = SRNIC_RESP_READ;
		e->rkey = x->rkey;
		e->res_id = x->id;
		e->dup = 1;
		x->fifo_pos = r->tail - 1;
		copy_npkts = x->npkts - k; /* all of it was sent */
	}
	/* an answer sent now reports the MSN as it is now (the requests
	 * completed since the original count too), as a new READ's does */
	e->msn = r->msn;
	e->psn = c->pkt->psn;
	e->npkts = x->npkts - k;
	e->va = x->va + skip;
	e->length = (uint32_t)(x->length - skip);
	e->sent = 0;
	e->copy_npkts = copy_npkts;
	return;
drop:
	eng_stat(c->eng, SRNIC_STAT_RESP_DUP_DROP, 1);
}

/* A duplicate atomic: answer with the saved result, never execute again.
 * Only a remembered atomic at exactly that PSN (newest first, the wraps
 * counted: one a PSN lap old is not it) has one. */
static void
duplicate_atomic(struct resp_ctx *c, uint64_t psn_x)
{
	struct srnic_resp *r = &c->qp->resp;
	struct srnic_resp_res *x = res_find(c->qp, psn_x);
	struct srnic_resp_entry *e;

	if (x == NULL || x->kind != SRNIC_RESP_ATOMIC || !dup_has_room(r) ||
	    (e = fifo_push(c->qp)) == NULL) {
		eng_stat(c->eng, SRNIC_STAT_RESP_DUP_DROP, 1);
		return; /* too old, not an atomic, or no room: dropped */
	}
	e->kind = SRNIC_RESP_ATOMIC;
	e->psn = c->pkt->psn;
	e->msn = x->msn;
	e->atomic_orig = x->orig;
	e->res_id = x->id;
	e->dup = 1;
}

/* A duplicate ATOMIC WRITE or FLUSH: the zero-length READ response
 * again for one remembered at exactly that PSN with the same R_Key, never
 * a second store or flush (rxe: res->replay). Else dropped and counted. */
static __rte_noinline void
duplicate_rsp0(struct resp_ctx *c, uint64_t psn_x)
{
	struct srnic_qp *qp = c->qp;
	struct srnic_resp *r = &qp->resp;
	struct srnic_resp_res *x = res_find(qp, psn_x);
	struct srnic_resp_entry *e;

	if (x == NULL || x->kind != SRNIC_RESP_READ || x->length != 0 || x->psn_ext != psn_x ||
	    x->rkey != srnic_reth_rkey(srnic_pkt_hdr(c->pkt, SRNIC_HDR_RETH)) ||
	    !dup_has_room(r) || (e = fifo_push(qp)) == NULL) {
		eng_stat(c->eng, SRNIC_STAT_RESP_DUP_DROP, 1);
		return;
	}
	rsp0_entry(r, e, x, c->pkt->psn);
	e->dup = 1;
}

static enum resp_state
duplicate(struct resp_ctx *c)
{
	struct srnic_qp *qp = c->qp;

	eng_qp_stat(c->eng, SRNIC_STAT_RESP_DUP, &qp->stats.dups_rcvd);
	/* SEND/WRITE are never executed twice: re-ACK with the current MSN
	 * (C9-101); READ is answered again from what the responder remembers
	 * of it, atomics from the saved result. */
	if (c->mask & SRNIC_OPM_READ)
		duplicate_read(c, psn_ext(&qp->resp, c->pkt->psn));
	else if (c->mask & SRNIC_OPM_ATOMIC)
		duplicate_atomic(c, psn_ext(&qp->resp, c->pkt->psn));
	else if (unlikely(c->mask & (SRNIC_OPM_ATOMIC_WRITE | SRNIC_OPM_FLUSH)))
		duplicate_rsp0(c, psn_ext(&qp->resp, c->pkt->psn));
	else
		owe_ack(qp, srnic_psn_add(qp->resp.epsn, SRNIC_PSN_MASK)); /* epsn - 1 */
	return RESP_DONE;
}

static enum resp_state
err_out_of_seq(struct resp_ctx *c)
{
	struct srnic_resp *r = &c->qp->resp;

	if (r->seq_nak_sent) {
		eng_stat(c->eng, SRNIC_STAT_RESP_OUT_OF_SEQ_DROP, 1);
		return RESP_DONE;
	}
	/* One NAK per gap, carrying the PSN we expect (IBTA 9.7: a PSN
	 * sequence error is NAKed once; the rest of the gap is dropped
	 * silently until the expected PSN arrives). */
	eng_qp_stat(c->eng, SRNIC_STAT_RESP_OUT_OF_SEQ, &c->qp->stats.out_of_seq_rcvd);
	eng_stat(c->eng, SRNIC_STAT_RESP_NAK_SEQ, 1);
	r->seq_nak_sent = 1;
	owe_nak(c->eng, c->qp, srnic_aeth_syndrome_make(SRNIC_AETH_NAK, SRNIC_NAK_PSN_SEQ_ERR),
		r->epsn);
	return RESP_DONE;
}

static enum resp_state
err_rnr(struct resp_ctx *c)
{
	eng_qp_stat(c->eng, SRNIC_STAT_RESP_RNR, &c->qp->stats.rnr_naks_sent);
	/* The rest of this message is dropped quietly until the requester
	 * comes back to the NAKed PSN: a sequence NAK for it now would make
	 * the requester resend before the RNR timer (and spend retry_cnt). */
	c->qp->resp.seq_nak_sent = 1;
	owe_nak(c->eng, c->qp, srnic_aeth_syndrome_make(SRNIC_AETH_RNR_NAK, c->qp->min_rnr_timer),
		c->pkt->psn);
	return RESP_DONE;
}

/* Class B/C errors: NAK, fail the RECV in progress, QP to ERR once the
 * NAK is out (rxe: do_class_ac_error). */
static enum resp_state
err_fatal(struct resp_ctx *c, enum resp_state why, uint8_t nak, enum ibv_wc_status recv_status)
{
	struct srnic_qp *qp = c->qp;
	struct srnic_resp *r = &qp->resp;
	enum srnic_stat s = nak == SRNIC_NAK_REM_ACCESS_ERR ? SRNIC_STAT_RESP_NAK_ACCESS :
			    nak == SRNIC_NAK_REM_OP_ERR ? SRNIC_STAT_RESP_NAK_OP :
							  SRNIC_STAT_RESP_NAK_INV;

	eng_stat(c->eng, s, 1);
	/* A QP-fatal error: rare, worth a line (rate-limited by the QP dying). */
	SRNIC_LOG(NOTICE, "qp %#x: %s on %s psn %u (epsn %u): NAK %u, QP to error", qp->qpn,
		  resp_state_names[why], srnic_opcode_name(c->pkt->opcode), c->pkt->psn,
		  r->epsn, nak);
	owe_nak(c->eng, qp, srnic_aeth_syndrome_make(SRNIC_AETH_NAK, nak), c->pkt->psn);
	if (r->rwqe_taken) {
		struct ibv_wc wc;

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = r->rwqe.wr_id;
		wc.status = recv_status;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = qp->qpn;
		r->rwqe_taken = 0;
		eng_qp_cqe(c->eng, qp, qp->rcq, &wc, r->rwqe_next);
	}
	r->goto_error = 1;
	return RESP_DONE;
}

void
eng_resp_rx(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_pkt *pkt)
{
	struct resp_ctx c = { .eng = eng, .qp = qp, .pkt = pkt, .mask = pkt->mask };
	enum resp_state st = RESP_CHECK_PSN;

	if (unlikely(qp->resp.goto_error))
		return;
	eng_stat(eng, SRNIC_STAT_RESP_PKTS, 1);
	while (st != RESP_DONE) {
		switch (st) {
		case RESP_CHECK_PSN: st = check_psn(&c); break;
		case RESP_CHECK_OP_SEQ: st = check_op_seq(&c); break;
		case RESP_CHECK_OP_VALID: st = check_op_valid(&c); break;
		case RESP_CHECK_RESOURCE: st = check_resource(&c); break;
		case RESP_CHECK_LENGTH: st = check_length(&c); break;
		case RESP_CHECK_RKEY: st = check_rkey(&c); break;
		case RESP_EXECUTE: st = execute(&c); break;
		case RESP_COMPLETE: st = complete(&c); break;
		case RESP_ACKNOWLEDGE: st = acknowledge(&c); break;
		case RESP_DUPLICATE: st = duplicate(&c); break;
		case RESP_ERR_OUT_OF_SEQ: st = err_out_of_seq(&c); break;
		case RESP_ERR_RNR: st = err_rnr(&c); break;
		case RESP_ERR_OP_SEQ:
			eng_stat(eng, SRNIC_STAT_RESP_OPSEQ_ERR, 1);
			/* fall through */
		case RESP_ERR_UNSUPPORTED:
		case RESP_ERR_NO_RESOURCE:
		case RESP_ERR_LENGTH:
		case RESP_ERR_MISALIGNED:
			st = err_fatal(&c, st, SRNIC_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR);
			break;
		case RESP_ERR_RECV_TOO_SMALL:
			st = err_fatal(&c, st, SRNIC_NAK_INVALID_REQ, IBV_WC_LOC_LEN_ERR);
			break;
		case RESP_ERR_RKEY:
			eng_qp_stat(eng, SRNIC_STAT_RESP_RKEY_ERR, &qp->stats.rkey_errs);
			st = err_fatal(&c, st, SRNIC_NAK_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
			break;
		case RESP_ERR_RECV_LKEY:
			st = err_fatal(&c, st, SRNIC_NAK_REM_OP_ERR, IBV_WC_LOC_PROT_ERR);
			break;
		case RESP_ERR_INV_RKEY:
			/* rxe: the receive fails IBV_WC_REM_INV_REQ_ERR, QP to ERR */
			st = err_fatal(&c, st, SRNIC_NAK_INVALID_REQ, IBV_WC_REM_INV_REQ_ERR);
			break;
		default:
			st = RESP_DONE;
			break;
		}
	}
}

/* ---- sending what is owed ---- */

static int
send_ack(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_resp_entry *e)
{
	struct rte_mbuf *m;
	uint8_t *bth, *aeth;

	m = eng_pkt_new(eng, qp, SRNIC_OP_RC_ACK, e->psn, &bth);
	if (m == NULL)
		return -1;
	aeth = bth + srnic_opcode_table[SRNIC_OP_RC_ACK].offset[SRNIC_HDR_AETH];
	srnic_aeth_set_syndrome(aeth, e->syndrome);
	srnic_aeth_set_msn(aeth, e->msn);
	if (eng_pkt_xmit(eng, m) != 0)
		return -1;
	if (e->kind == SRNIC_RESP_ACK)
		eng_stat(eng, SRNIC_STAT_RESP_ACK_SENT, 1);
	return 0;
}

static int
send_atomic_ack(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_resp_entry *e)
{
	const struct srnic_opcode_info *oi = srnic_opcode_info(SRNIC_OP_RC_ATOMIC_ACK);
	struct rte_mbuf *m;
	uint8_t *bth;

	m = eng_pkt_new(eng, qp, SRNIC_OP_RC_ATOMIC_ACK, e->psn, &bth);
	if (m == NULL)
		return -1;
	srnic_aeth_set_syndrome(bth + oi->offset[SRNIC_HDR_AETH],
				srnic_aeth_syndrome_make(SRNIC_AETH_ACK, SRNIC_AETH_CREDIT_INVALID));
	srnic_aeth_set_msn(bth + oi->offset[SRNIC_HDR_AETH], e->msn);
	srnic_atmack_set_orig(bth + oi->offset[SRNIC_HDR_ATMACK], e->atomic_orig);
	return eng_pkt_xmit(eng, m);
}

/* A retry's payload, copied now into its own segment (the TX copy pool's
 * mbufs hold a PMTU): the ICRC sealed over it stays right whatever the
 * application stores to the memory until the peer has read the packet
 * (a zero-copy retry would fail the same way as the response it
 * replaces). Retries only: the first answer stays zero-copy. */
static __rte_noinline int
retry_copy(struct srnic_engine *eng, struct rte_mbuf *m, const void *src, uint32_t len)
{
	if (eng_pkt_attach_copy(eng, m, src, len) != 0)
		return -ENOMEM;
	eng_stat(eng, SRNIC_STAT_RESP_READ_RETRY_COPY, 1);
	return 0;
}

/* One READ response packet: FIRST/LAST/ONLY carry an AETH, MIDDLE none. */
static int
send_read_resp(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_resp_entry *e)
{
	uint32_t i = e->sent, n = e->npkts;
	uint32_t off = i * qp->pmtu, len = RTE_MIN(qp->pmtu, e->length - off);
	uint8_t op = n == 1 ? SRNIC_OP_RC_READ_RESP_ONLY : i == 0 ? SRNIC_OP_RC_READ_RESP_FIRST :
		     i == n - 1 ? SRNIC_OP_RC_READ_RESP_LAST : SRNIC_OP_RC_READ_RESP_MIDDLE;
	const struct srnic_opcode_info *oi = srnic_opcode_info(op);
	struct srnic_mr *mr = NULL;
	struct rte_mbuf *m;
	uint8_t *bth;

	if (len > 0 && eng_rkey_check(qp, e->rkey, IBV_ACCESS_REMOTE_READ, e->va + off, len,
				      &mr) != SRNIC_KEY_OK) {
		/* Deregistered after the request was accepted: NAK it. */
		e->kind = SRNIC_RESP_NAK;
		e->syndrome = srnic_aeth_syndrome_make(SRNIC_AETH_NAK, SRNIC_NAK_REM_ACCESS_ERR);
		e->psn = srnic_psn_add(e->psn, i);
		if (!e->dup)
			qp->resp.rd_atomic--;
		qp->resp.goto_error = 1;
		return 0;
	}
	m = eng_pkt_new(eng, qp, op, srnic_psn_add(e->psn, i), &bth);
	if (m == NULL)
		return -1;
	if (oi->mask & SRNIC_OPM_AETH) {
		srnic_aeth_set_syndrome(bth + oi->offset[SRNIC_HDR_AETH],
					srnic_aeth_syndrome_make(SRNIC_AETH_ACK,
								 SRNIC_AETH_CREDIT_INVALID));
		srnic_aeth_set_msn(bth + oi->offset[SRNIC_HDR_AETH], e->msn);
	}
	if (len > 0 && len <= qp->dev->read_inline_max &&
	    rte_pktmbuf_tailroom(m) >= len + SRNIC_PKT_TRAILER_MAX_LEN) {
		/* the device's opt-in: a copy in the header mbuf (room for
		 * SRNIC_MAX_READ_INLINE by construction), one mbuf, not three */
		rte_memcpy(srnic_pkt_append_to(m, m, (uint16_t)len),
			   srnic_mr_at(mr, e->va + off), len);
		eng_stat(eng, SRNIC_STAT_RESP_READ_INLINE, 1);
	} else if (len > 0 && i < e->copy_npkts) {
		if (retry_copy(eng, m, srnic_mr_at(mr, e->va + off), len) != 0) {
			rte_pktmbuf_free(m);
			return -1;
		}
	} else if (len > 0 && eng_pkt_attach(eng, m, mr, e->va + off, len) != 0) {
		rte_pktmbuf_free(m);
		return -1;
	}
	if (eng_pkt_xmit(eng, m) != 0)
		return -1;
	eng_stat(eng, SRNIC_STAT_RESP_READ_PKTS, 1);
	e->sent++;
	return 0;
}

/*
 * A QP gone to ERR with answers still owed. The messages they answer were
 * taken and completed in RTR/RTS: the CQE is written when the packet is
 * taken, its ACK at the QP's turn later in the poll, and in between the
 * program may have polled it and moved the QP because of it
 * (rdma_disconnect() after its last receive; an unresolved route holds
 * the ACK longer). Dropped, that ACK leaves the peer's last SEND or WRITE
 * uncompleted until the DREQ flushes it (libfabric's rxm: "Work Request
 * Flushed Error" at the end of a run whose transfers all arrived); rxe's
 * responder sends it in the same run that completed the message. So the
 * ACKs, NAKs and atomic answers owed go once, if the route is known
 * (ROUTE) and the TX has room; READ responses not finished are not
 * continued (the requester's QP is to be flushed). Cold path: only on the
 * way to ERR.
 */
void
eng_resp_owed_at_err(struct srnic_engine *eng, struct srnic_qp *qp, bool route)
{
	struct srnic_resp *r = &qp->resp;

	for (; r->head != r->tail; r->head++) {
		const struct srnic_resp_entry *e = &r->fifo[r->head & (SRNIC_RESP_FIFO - 1)];
		int rc = -1;

		if (route && eng_tx_free(eng) > 0) {
			if (e->kind == SRNIC_RESP_ACK || e->kind == SRNIC_RESP_NAK)
				rc = send_ack(eng, qp, e);
			else if (e->kind == SRNIC_RESP_ATOMIC)
				rc = send_atomic_ack(eng, qp, e);
		}
		eng_stat(eng, rc == 0 ? SRNIC_STAT_RESP_ERR_SENT : SRNIC_STAT_RESP_ERR_DROP, 1);
	}
	qp->resp_owed = 0;
}

bool
eng_resp_run(struct srnic_engine *eng, struct srnic_qp *qp)
{
	struct srnic_resp *r = &qp->resp;
	unsigned int budget = SRNIC_RESP_BUDGET;

	while (r->head != r->tail && budget > 0) {
		struct srnic_resp_entry *e = &r->fifo[r->head & (SRNIC_RESP_FIFO - 1)];
		bool ctl = e->kind == SRNIC_RESP_ACK || e->kind == SRNIC_RESP_NAK;

		/* ACKs may use the reserve; data responses leave it alone. */
		if (eng_tx_free(eng) <= (ctl ? 0 : SRNIC_TX_RESERVE))
			return true;
		switch (e->kind) {
		case SRNIC_RESP_ACK:
		case SRNIC_RESP_NAK:
			if (send_ack(eng, qp, e) != 0)
				return true;
			r->head++;
			break;
		case SRNIC_RESP_ATOMIC:
			if (send_atomic_ack(eng, qp, e) != 0)
				return true;
			r->rd_atomic -= !e->dup;
			r->head++;
			break;
		case SRNIC_RESP_READ:
			if (send_read_resp(eng, qp, e) != 0)
				return true;
			if (e->kind == SRNIC_RESP_READ && e->sent == e->npkts) {
				r->rd_atomic -= !e->dup;
				r->head++;
			}
			break;
		}
		budget--;
	}
	if (r->head == r->tail && r->goto_error)
		eng_qp_to_err(eng, qp, "responder error NAKed");
	qp->resp_owed = r->head != r->tail;
	return qp->resp_owed;
}
