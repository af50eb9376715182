/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive WQEs taken by the transports that consume them (the RC and UC
 * responders, UD receive): from the QP's own RQ in place, or copied out of
 * its SRQ (rxe's get_srq_wqe()), with the SRQ limit event.
 */
#include "eng_internal.h"

/* Take the oldest WQE of a shared receive queue (copied: its slot is
 * free at once, as rxe's get_srq_wqe()); then the limit event, once, when
 * fewer than srq_limit WQEs are left (the limit disarms, as rxe). A WQE
 * shorter than need bytes is not taken (*too_small): see eng_rwqe_take(). */
bool
eng_srq_take(struct srnic_engine *eng, struct srnic_srq *srq, struct srnic_rwqe *out,
	       uint32_t need, bool *too_small)
{
	uint32_t tail, head, limit;

	rte_spinlock_lock(&srq->lock); /* uncontended but for a resize */
	tail = atomic_load_explicit(&srq->tail, memory_order_relaxed);
	head = atomic_load_explicit(&srq->head, memory_order_acquire);
	if (tail == head) {
		rte_spinlock_unlock(&srq->lock);
		return false;
	}
	if (unlikely(srq->wqe[tail & srq->mask].length < need)) {
		rte_spinlock_unlock(&srq->lock);
		*too_small = true;
		return false;
	}
	*out = srq->wqe[tail & srq->mask];
	atomic_store_explicit(&srq->tail, tail + 1, memory_order_release);
	rte_spinlock_unlock(&srq->lock);
	limit = atomic_load_explicit(&srq->limit, memory_order_acquire);
	if (unlikely(limit != 0 && head - (tail + 1) < limit) &&
	    atomic_compare_exchange_strong_explicit(&srq->limit, &limit, 0, memory_order_acq_rel,
						    memory_order_relaxed)) {
		eng_stat(eng, SRNIC_STAT_SRQ_LIMIT, 1);
		eng_event_srq(eng, IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	}
	return true;
}

/* The next receive WQE of a QP, from its SRQ (copied into *srq_buf: the
 * SRQ slot is free at once) or its own RQ (in place: the slot returns to
 * the application with the CQE that names *next). NULL when there is none;
 * the caller counts and answers that as its transport says (RC: RNR NAK,
 * UC/UD: a drop). need: the bytes the message must find room for (0: any
 * WQE will do); a WQE holding fewer is left where it is and *too_small set
 * (UD's class D: the datagram is dropped, the WQE waits for the next). */
const struct srnic_rwqe *
eng_rwqe_take(struct srnic_engine *eng, struct srnic_qp *qp, struct srnic_rwqe *srq_buf,
		uint32_t *next, uint32_t need, bool *too_small)
{
	uint32_t tail, head;

	if (qp->srq != NULL) {
		if (!eng_srq_take(eng, qp->srq, srq_buf, need, too_small))
			return NULL;
		*next = 0; /* no slot of the QP's own RQ to give back */
		return srq_buf;
	}
	tail = atomic_load_explicit(&qp->rq.tail, memory_order_relaxed);
	head = atomic_load_explicit(&qp->rq.head, memory_order_acquire);
	if (tail == head)
		return NULL;
	if (unlikely(qp->rq.wqe[tail & qp->rq.mask].length < need)) {
		*too_small = true;
		return NULL;
	}
	*next = tail + 1;
	atomic_store_explicit(&qp->rq.tail, tail + 1, memory_order_release);
	return &qp->rq.wqe[tail & qp->rq.mask];
}
