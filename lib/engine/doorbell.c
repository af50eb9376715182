/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Doorbells and the graveyard: the control path tells a QP's engine it has
 * work (a post, a state change) through the engine's doorbell ring, and
 * hands it a destroyed QP to unlink and free (the graveyard). The loop
 * takes both once per poll.
 */
#include <rte_malloc.h>

#include "eng_internal.h"

void
srnic_qp_doorbell(struct srnic_qp *qp)
{
	/* Dekker, poster side: the sq/rq head (or state) store above, a full
	 * barrier, then db_pending. Engine side: db_pending cleared in
	 * eng_doorbells(), the fence in srnic_engine_poll(), then the heads.
	 * Either the engine sees our head, or we see its 0 and enqueue.
	 * On x86 the exchange is a locked instruction, itself a full barrier
	 * (its load is not passed by the store before it), and seq_cst keeps
	 * the compiler from sinking that store below it: one locked
	 * instruction per post, not a fence (lock or) and then the xchg.
	 * C11 alone does not promise that a seq_cst RMW orders an earlier
	 * store before its load for every target: elsewhere the fence. */
#ifdef RTE_ARCH_X86
	bool pending = atomic_exchange_explicit(&qp->sq.db_pending, 1, memory_order_seq_cst);
#else
	bool pending;

	atomic_thread_fence(memory_order_seq_cst);
	pending = atomic_exchange_explicit(&qp->sq.db_pending, 1, memory_order_relaxed);
#endif
	/* a full ring cannot happen (one entry per QP): a plain store undoes it */
	if (!pending && rte_ring_mp_enqueue(qp->eng->doorbell, qp) != 0)
		atomic_store_explicit(&qp->sq.db_pending, 0, memory_order_release);
}

/* A buried QP's memory: the engine that served it frees it (the control
 * path hands it over and never calls back up here: lib/core uses the
 * engines, the engines never call lib/core). */
void
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

void
eng_doorbells(struct srnic_engine *eng)
{
	struct srnic_qp *q[SRNIC_RX_BURST];
	unsigned int n, i;

	/* Drain it all: the graveyard below must not free a QP still here.
	 * The clear is relaxed: the fence after it in srnic_engine_poll()
	 * orders it before our reads of the heads (srnic_qp_doorbell()). */
	while ((n = rte_ring_sc_dequeue_burst(eng->doorbell, (void **)q, RTE_DIM(q), NULL)) > 0)
		for (i = 0; i < n; i++) {
			atomic_store_explicit(&q[i]->sq.db_pending, 0, memory_order_relaxed);
			q[i]->req_idle = 0; /* posted to (or moved): look at the SQ */
			eng_activate(eng, q[i]);
		}
}

void
eng_bury(struct srnic_engine *eng)
{
	struct srnic_qp *qp;
	uint32_t i;

	while (rte_ring_sc_dequeue(eng->graveyard, (void **)&qp) == 0) {
		if (qp->in_wheel)
			eng_timer_remove(&eng->tw, qp);
		if (qp->arp_waiting)
			for (i = 0; i < eng->nb_arp_wait; i++)
				if (eng->arp_wait[i] == qp) {
					eng->arp_wait[i] = eng->arp_wait[--eng->nb_arp_wait];
					break;
				}
		if (qp->active) /* its slot takes the last one's */
			for (i = eng->active_head; i != eng->active_tail; i++)
				if (eng->active[i & (ENG_ACTIVE_SLOTS - 1)] == qp) {
					eng->active[i & (ENG_ACTIVE_SLOTS - 1)] =
						eng->active[--eng->active_tail & (ENG_ACTIVE_SLOTS - 1)];
					break;
				}
		eng_qp_free(qp);
	}
}
