/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues (IBTA 10.2.9; verbs' ibv_create_srq()): a ring of
 * receive WQEs the application produces and the responders of the QPs
 * using it consume (lib/engine/rwqe.c, eng_srq_take()). One engine per
 * SRQ, so the consumer side is single-threaded; the argument checks and
 * errnos follow rxe's (rxe_srq_chk_attr()).
 */
#include <rte_errno.h>
#include <rte_malloc.h>

#include "rnic.h"

#define SRQ_ATTR_MASK_ALL (IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)

static int
srq_tbl_add(struct srnic_dev *dev, struct srnic_srq *srq)
{
	uint32_t i, idx = 0;

	rte_spinlock_lock(&dev->lock);
	for (i = 0; i < SRNIC_MAX_SRQ; i++) {
		idx = (dev->srq_next + i) % SRNIC_MAX_SRQ;
		if (dev->srq_tbl[idx] == NULL)
			break;
	}
	if (i == SRNIC_MAX_SRQ) {
		rte_spinlock_unlock(&dev->lock);
		return -ENOSPC;
	}
	dev->srq_next = idx + 1;
	srq->srq_num = idx;
	srq->gen = srnic_dev_next_gen(dev);
	dev->srq_tbl[idx] = srq;
	rte_spinlock_unlock(&dev->lock);
	return 0;
}

struct srnic_srq *
srnic_create_srq(struct srnic_pd *pd, struct ibv_srq_init_attr *init, struct srnic_engine *eng)
{
	struct srnic_dev *dev;
	struct srnic_srq *srq;
	struct ibv_srq_attr *a;
	uint32_t size;

	if (pd == NULL || init == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = pd->dev;
	a = &init->attr;
	if (eng == NULL)
		eng = dev->engines[0];
	if (eng->dev != dev || a->max_wr == 0 || a->max_wr > SRNIC_MAX_SRQ_WR ||
	    a->max_sge > SRNIC_MAX_SGE) {
		rte_errno = EINVAL;
		return NULL;
	}
	size = rte_align32pow2(a->max_wr);
	if (a->srq_limit > size) {
		rte_errno = EINVAL;
		return NULL;
	}
	srq = rte_zmalloc("srnic_srq", sizeof(*srq), RTE_CACHE_LINE_SIZE);
	if (srq == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	srq->wqe = rte_zmalloc("srnic_srq_wqe", sizeof(*srq->wqe) * size, RTE_CACHE_LINE_SIZE);
	if (srq->wqe == NULL) {
		rte_free(srq);
		rte_errno = ENOMEM;
		return NULL;
	}
	srq->dev = dev;
	srq->pd = pd;
	srq->eng = eng;
	srq->size = size;
	srq->mask = size - 1;
	srq->max_sge = RTE_MAX(a->max_sge, 1u);
	atomic_store(&srq->limit, a->srq_limit);
	rte_spinlock_init(&srq->lock);
	if (srq_tbl_add(dev, srq) != 0) {
		rte_free(srq->wqe);
		rte_free(srq);
		rte_errno = ENOSPC;
		return NULL;
	}
	a->max_wr = size;
	a->max_sge = srq->max_sge;
	atomic_fetch_add(&pd->refs, 1);
	atomic_fetch_add(&dev->nb_srq, 1);
	return srq;
}

int
srnic_destroy_srq(struct srnic_srq *srq)
{
	struct srnic_dev *dev;

	if (srq == NULL)
		return -EINVAL;
	/* verbs: EBUSY while a QP uses it (its engine takes from the ring) */
	if (atomic_load(&srq->refs) != 0)
		return -EBUSY;
	dev = srq->dev;
	rte_spinlock_lock(&dev->lock);
	dev->srq_tbl[srq->srq_num] = NULL;
	rte_spinlock_unlock(&dev->lock);
	atomic_fetch_sub(&srq->pd->refs, 1);
	atomic_fetch_sub(&dev->nb_srq, 1);
	rte_free(srq->wqe);
	rte_free(srq);
	return 0;
}

/* IBV_SRQ_MAX_WR: a new ring holding the WQEs posted, in order. The
 * engine's takes wait on srq->lock meanwhile; posts must not run (the
 * caller is the producer). */
static int
srq_resize(struct srnic_srq *srq, uint32_t max_wr)
{
	uint32_t size = rte_align32pow2(max_wr), head, tail, i;

	struct srnic_rwqe *wqe;

	wqe = rte_zmalloc("srnic_srq_wqe", sizeof(*wqe) * size, RTE_CACHE_LINE_SIZE);
	if (wqe == NULL)
		return -ENOMEM;
	rte_spinlock_lock(&srq->lock);
	head = atomic_load_explicit(&srq->head, memory_order_relaxed);
	tail = atomic_load_explicit(&srq->tail, memory_order_relaxed);
	if (head - tail > max_wr) {
		rte_spinlock_unlock(&srq->lock);
		rte_free(wqe);
		return -EINVAL; /* rxe: the WQEs posted must fit in max_wr */
	}
	for (i = tail; i != head; i++)
		wqe[i & (size - 1)] = srq->wqe[i & srq->mask];
	RTE_SWAP(wqe, srq->wqe);
	srq->size = size;
	srq->mask = size - 1;
	rte_spinlock_unlock(&srq->lock);
	rte_free(wqe);
	return 0;
}

int
srnic_modify_srq(struct srnic_srq *srq, struct ibv_srq_attr *a, int mask)
{
	uint32_t size;
	int rc;

	if (srq == NULL || a == NULL || (mask & ~SRQ_ATTR_MASK_ALL) != 0)
		return -EINVAL;
	size = srq->size;
	if (mask & IBV_SRQ_MAX_WR) {
		uint32_t limit = (mask & IBV_SRQ_LIMIT) ? a->srq_limit : atomic_load(&srq->limit);

		if (a->max_wr == 0 || a->max_wr > SRNIC_MAX_SRQ_WR || a->max_wr < limit)
			return -EINVAL;
		size = rte_align32pow2(a->max_wr);
	}
	if ((mask & IBV_SRQ_LIMIT) && a->srq_limit > size)
		return -EINVAL;
	if (mask & IBV_SRQ_MAX_WR) {
		rc = srq_resize(srq, a->max_wr);
		if (rc != 0)
			return rc;
		a->max_wr = srq->size;
	}
	/* armed (nonzero) or disarmed; the engine's take reads it next */
	if (mask & IBV_SRQ_LIMIT)
		atomic_store_explicit(&srq->limit, a->srq_limit, memory_order_release);
	return 0;
}

int
srnic_query_srq(struct srnic_srq *srq, struct ibv_srq_attr *a)
{
	if (srq == NULL || a == NULL)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->max_wr = srq->size;
	a->max_sge = srq->max_sge;
	a->srq_limit = atomic_load_explicit(&srq->limit, memory_order_acquire);
	return 0;
}

uint32_t
srnic_srq_num(const struct srnic_srq *srq)
{
	return srq->srq_num;
}

void
srnic_srq_set_user(struct srnic_srq *srq, void *user)
{
	/* under the lock srnic_get_async_event() reads it with */
	rte_spinlock_lock(&srq->dev->lock);
	srq->user = user;
	rte_spinlock_unlock(&srq->dev->lock);
}

uint32_t
srnic_srq_gen(const struct srnic_srq *srq)
{
	return srq->gen;
}

int
srnic_post_srq_recv(struct srnic_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	uint32_t head;
	int rc = 0, i;

	if (srq == NULL) {
		*bad_wr = wr;
		return EINVAL;
	}
	head = atomic_load_explicit(&srq->head, memory_order_relaxed);
	for (; wr != NULL; wr = wr->next) {
		/* a slot is free once the engine took its WQE (tail passed it) */
		uint32_t tail = atomic_load_explicit(&srq->tail, memory_order_acquire);
		struct srnic_rwqe *w;
		uint64_t len = 0;

		if (head - tail >= srq->size) {
			rc = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge) {
			rc = EINVAL;
			break;
		}
		w = &srq->wqe[head & srq->mask];
		w->wr_id = wr->wr_id;
		w->num_sge = (uint8_t)wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			w->sge[i] = wr->sg_list[i];
			len += wr->sg_list[i].length;
		}
		w->length = (uint32_t)RTE_MIN(len, (uint64_t)UINT32_MAX);
		head++;
		atomic_store_explicit(&srq->head, head, memory_order_release);
	}
	if (rc != 0)
		*bad_wr = wr;
	return rc;
}
