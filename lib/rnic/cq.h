/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_CQ_H
#define SRNIC_CQ_H

#include "rnic.h"

/* srnic_resize_cq() is swapping the ring (generation f, odd): say we
 * stopped before writing anything, and wait (the copy's few microseconds)
 * for the new ring. Cold. */
static __rte_noinline void
srnic_cq_thaw_wait(struct srnic_cq *cq, uint32_t f)
{
	atomic_store_explicit(&cq->frozen_ack, f, memory_order_release);
	while (atomic_load_explicit(&cq->frozen, memory_order_acquire) == f)
		rte_pause();
}

/* Engine side: add one completion of qp's WQE before work queue index
 * wq_next, solicited if its message had BTH.SE. Returns 0, or -1 when the
 * CQ is full (the CQ is then marked overflowed and the caller moves the QP
 * to ERR). */
static inline int
srnic_cq_push_se(struct srnic_cq *cq, const struct ibv_wc *wc, struct srnic_qp *qp,
		 uint32_t wq_next, bool solicited)
{
	/* acquire: the ring, mask and size a resize installed before its
	 * generation went even */
	uint32_t f = atomic_load_explicit(&cq->frozen, memory_order_acquire);
	uint32_t prod, cons;

	if (unlikely(f & 1))
		srnic_cq_thaw_wait(cq, f);
	prod = atomic_load_explicit(&cq->prod, memory_order_relaxed);
	cons = atomic_load_explicit(&cq->cons, memory_order_acquire);

	if (unlikely(prod - cons >= cq->size)) {
		atomic_store_explicit(&cq->overflow, 1, memory_order_relaxed);
		return -1;
	}
	cq->ring[prod & cq->mask] = *wc;
	cq->wq_next[prod & cq->mask] = wq_next;
	cq->solicited[prod & cq->mask] = solicited;
	cq->qp[prod & cq->mask] = qp;
	atomic_store_explicit(&cq->prod, prod + 1, memory_order_release);
	return 0;
}

/* A completion whose message asked for no solicited event. */
static inline int
srnic_cq_push(struct srnic_cq *cq, const struct ibv_wc *wc, struct srnic_qp *qp,
	      uint32_t wq_next)
{
	return srnic_cq_push_se(cq, wc, qp, wq_next, false);
}

/* Whether the completion at ring position pos (cons-relative positions, as
 * prod and cons count them) was of a message with BTH.SE set: for
 * solicited-only notification. srnic_cq_clean() moves it with its entry.
 * Valid until the ring wraps over it. */
static inline bool
srnic_cq_solicited(const struct srnic_cq *cq, uint32_t pos)
{
	return cq->solicited[pos & cq->mask] != 0;
}

#endif
