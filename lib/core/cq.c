/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: a single-producer (the engine of the CQ's QPs),
 * single-consumer (the application) ring of struct ibv_wc. Overflow is an
 * error the consumer sees (-EOVERFLOW), never a silent loss.
 */
#include <rte_errno.h>
#include <rte_malloc.h>

#include "rnic.h"
#include "cq.h"

static void
cq_bufs_free(struct ibv_wc *ring, uint32_t *wq_next, uint8_t *solicited, struct srnic_qp **qp)
{
	rte_free(ring);
	rte_free(wq_next);
	rte_free(solicited);
	rte_free(qp);
}

/* A number and an incarnation; srnic_get_async_event() finds live CQs here. */
static int
cq_tbl_add(struct srnic_dev *dev, struct srnic_cq *cq)
{
	uint32_t i, idx = 0;

	rte_spinlock_lock(&dev->lock);
	for (i = 0; i < SRNIC_MAX_CQ; i++) {
		idx = (dev->cq_next + i) % SRNIC_MAX_CQ;
		if (dev->cq_tbl[idx] == NULL)
			break;
	}
	if (i == SRNIC_MAX_CQ) {
		rte_spinlock_unlock(&dev->lock);
		return -ENOSPC;
	}
	dev->cq_next = idx + 1;
	cq->cq_num = idx;
	cq->gen = srnic_dev_next_gen(dev);
	dev->cq_tbl[idx] = cq;
	rte_spinlock_unlock(&dev->lock);
	return 0;
}

struct srnic_cq *
srnic_create_cq(struct srnic_dev *dev, int cqe, struct srnic_engine *eng)
{
	struct srnic_cq *cq;
	uint32_t size;

	if (dev == NULL || cqe < 1 || cqe > SRNIC_MAX_CQE) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (eng == NULL)
		eng = dev->engines[0];
	if (eng->dev != dev) {
		rte_errno = EINVAL;
		return NULL;
	}
	size = rte_align32pow2((uint32_t)cqe + 1);
	cq = rte_zmalloc("srnic_cq", sizeof(*cq), RTE_CACHE_LINE_SIZE);
	if (cq == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	cq->ring = rte_zmalloc("srnic_cq_ring", sizeof(*cq->ring) * size, RTE_CACHE_LINE_SIZE);
	cq->wq_next = rte_zmalloc("srnic_cq_wq", sizeof(*cq->wq_next) * size, RTE_CACHE_LINE_SIZE);
	cq->solicited = rte_zmalloc("srnic_cq_se", size, RTE_CACHE_LINE_SIZE);
	cq->qp = rte_zmalloc("srnic_cq_qp", sizeof(*cq->qp) * size, RTE_CACHE_LINE_SIZE);
	if (cq->ring == NULL || cq->wq_next == NULL || cq->solicited == NULL || cq->qp == NULL) {
		cq_bufs_free(cq->ring, cq->wq_next, cq->solicited, cq->qp);
		rte_free(cq);
		rte_errno = ENOMEM;
		return NULL;
	}
	cq->dev = dev;
	cq->eng = eng;
	cq->size = size;
	cq->mask = size - 1;
	cq->cqe = cqe;
	rte_spinlock_init(&cq->poll_lock);
	if (cq_tbl_add(dev, cq) != 0) {
		cq_bufs_free(cq->ring, cq->wq_next, cq->solicited, cq->qp);
		rte_free(cq);
		rte_errno = ENOSPC;
		return NULL;
	}
	atomic_fetch_add(&dev->nb_cq, 1);
	return cq;
}

int
srnic_destroy_cq(struct srnic_cq *cq)
{
	if (cq == NULL)
		return -EINVAL;
	/* verbs: EBUSY while a QP uses it (its engine still writes the ring) */
	if (atomic_load(&cq->refs) != 0)
		return -EBUSY;
	/* out of the table first: an event about it now comes without it */
	rte_spinlock_lock(&cq->dev->lock);
	cq->dev->cq_tbl[cq->cq_num] = NULL;
	rte_spinlock_unlock(&cq->dev->lock);
	atomic_fetch_sub(&cq->dev->nb_cq, 1);
	cq_bufs_free(cq->ring, cq->wq_next, cq->solicited, cq->qp);
	rte_free(cq);
	return 0;
}

/* Stop the CQ's producer, its engine, before it writes the ring again:
 * a new odd generation in cq->frozen, then wait until the engine either
 * acknowledged it (a push saw it and waits) or left the poll it was in
 * (every later poll sees it: the fence pairs with the one at the start of
 * srnic_engine_poll()). Not srnic_dev_quiesce(): a poll that waits in a
 * push never ends. Returns the generation; frozen = it + 1 thaws. */
static uint32_t
cq_freeze(struct srnic_cq *cq)
{
	struct srnic_engine *eng = cq->eng;
	uint32_t gen = atomic_load_explicit(&cq->frozen, memory_order_relaxed) + 1;
	uint64_t s;

	atomic_store_explicit(&cq->frozen, gen, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
	s = atomic_load_explicit(&eng->poll_seq, memory_order_acquire);
	if (s & 1)
		while (atomic_load_explicit(&eng->poll_seq, memory_order_acquire) == s &&
		       atomic_load_explicit(&cq->frozen_ack, memory_order_acquire) != gen)
			rte_pause();
	return gen;
}

int
srnic_resize_cq(struct srnic_cq *cq, int cqe)
{
	uint32_t size, cons, prod, i, gen;
	struct ibv_wc *ring;
	uint32_t *wq_next;
	uint8_t *solicited;
	struct srnic_qp **qps;

	if (cq == NULL || cqe < 1 || cqe > SRNIC_MAX_CQE)
		return -EINVAL;
	if (srnic_dev_in_poll(cq->dev))
		return -EDEADLK; /* the quiesce below would wait for our own poll */
	size = rte_align32pow2((uint32_t)cqe + 1);
	ring = rte_zmalloc("srnic_cq_ring", sizeof(*ring) * size, RTE_CACHE_LINE_SIZE);
	wq_next = rte_zmalloc("srnic_cq_wq", sizeof(*wq_next) * size, RTE_CACHE_LINE_SIZE);
	solicited = rte_zmalloc("srnic_cq_se", size, RTE_CACHE_LINE_SIZE);
	qps = rte_zmalloc("srnic_cq_qp", sizeof(*qps) * size, RTE_CACHE_LINE_SIZE);
	if (ring == NULL || wq_next == NULL || solicited == NULL || qps == NULL) {
		cq_bufs_free(ring, wq_next, solicited, qps);
		return -ENOMEM;
	}
	gen = cq_freeze(cq);
	rte_spinlock_lock(&cq->poll_lock);
	cons = atomic_load_explicit(&cq->cons, memory_order_relaxed);
	prod = atomic_load_explicit(&cq->prod, memory_order_acquire);
	if (prod - cons > (uint32_t)cqe) {
		/* rxe: EINVAL below the completions it holds */
		rte_spinlock_unlock(&cq->poll_lock);
		atomic_store_explicit(&cq->frozen, gen + 1, memory_order_release);
		cq_bufs_free(ring, wq_next, solicited, qps);
		return -EINVAL;
	}
	/* same positions (prod and cons run free), new mask */
	for (i = cons; i != prod; i++) {
		ring[i & (size - 1)] = cq->ring[i & cq->mask];
		wq_next[i & (size - 1)] = cq->wq_next[i & cq->mask];
		solicited[i & (size - 1)] = cq->solicited[i & cq->mask];
		qps[i & (size - 1)] = cq->qp[i & cq->mask];
	}
	RTE_SWAP(ring, cq->ring);
	RTE_SWAP(wq_next, cq->wq_next);
	RTE_SWAP(solicited, cq->solicited);
	RTE_SWAP(qps, cq->qp);
	cq->size = size;
	cq->mask = size - 1;
	cq->cqe = cqe;
	rte_spinlock_unlock(&cq->poll_lock);
	atomic_store_explicit(&cq->frozen, gen + 1, memory_order_release); /* thaw */
	cq_bufs_free(ring, wq_next, solicited, qps); /* the old ones */
	return 0;
}

int
srnic_cq_cqe(const struct srnic_cq *cq)
{
	return cq != NULL ? cq->cqe : -EINVAL;
}

void
srnic_cq_set_user(struct srnic_cq *cq, void *user)
{
	/* under the lock srnic_get_async_event() reads it with */
	rte_spinlock_lock(&cq->dev->lock);
	cq->user = user;
	rte_spinlock_unlock(&cq->dev->lock);
}

uint32_t
srnic_cq_gen(const struct srnic_cq *cq)
{
	return cq->gen;
}

void
srnic_cq_clean(struct srnic_cq *cq, const struct srnic_qp *qp)
{
	uint32_t cons, prod, i, nfreed = 0;

	rte_spinlock_lock(&cq->poll_lock);
	cons = atomic_load_explicit(&cq->cons, memory_order_relaxed);
	prod = atomic_load_explicit(&cq->prod, memory_order_acquire);
	/* As libmlx5's cq clean: newest to oldest, each kept entry moves up
	 * over the removed ones, then cons passes the hole. The engine may
	 * push other QPs' CQEs meanwhile, at prod and later only: the slots
	 * written here are all in [cons + nfreed, prod), still ours. */
	for (i = prod; i != cons; i--) {
		uint32_t from = (i - 1) & cq->mask;

		if (cq->qp[from] == qp) {
			nfreed++;
		} else if (nfreed > 0) {
			uint32_t to = (i - 1 + nfreed) & cq->mask;

			cq->ring[to] = cq->ring[from];
			cq->wq_next[to] = cq->wq_next[from];
			cq->qp[to] = cq->qp[from];
			cq->solicited[to] = cq->solicited[from];
		}
	}
	if (nfreed > 0)
		atomic_store_explicit(&cq->cons, cons + nfreed, memory_order_release);
	rte_spinlock_unlock(&cq->poll_lock);
}

int
srnic_poll_cq(struct srnic_cq *cq, int n, struct ibv_wc *wc)
{
	uint32_t cons, prod, k, i;

	/* One uncontended lock per call: srnic_cq_clean() (RESET, destroy of
	 * a QP, from any thread) edits the ring and frees nothing under us;
	 * every cq->qp[] entry read here is a live QP. */
	rte_spinlock_lock(&cq->poll_lock);
	cons = atomic_load_explicit(&cq->cons, memory_order_relaxed);
	prod = atomic_load_explicit(&cq->prod, memory_order_acquire);
	k = RTE_MIN((uint32_t)RTE_MAX(n, 0), prod - cons);
	for (i = 0; i < k; i++) {
		uint32_t slot = (cons + i) & cq->mask;
		struct srnic_qp *qp = cq->qp[slot];

		wc[i] = cq->ring[slot];
		/* The WQE's slots go back to the application now, as with a
		 * hardware RNIC: a CQ as deep as its work queues never overflows. */
		atomic_store_explicit((wc[i].opcode & IBV_WC_RECV) ? &qp->rq.app_free
								  : &qp->sq.app_free,
				      cq->wq_next[slot], memory_order_release);
	}
	atomic_store_explicit(&cq->cons, cons + k, memory_order_release);
	rte_spinlock_unlock(&cq->poll_lock);
	if (k == 0 && atomic_load_explicit(&cq->overflow, memory_order_relaxed))
		return -EOVERFLOW;
	return (int)k;
}

int
srnic_cq_arm(struct srnic_cq *cq, bool solicited_only)
{
	uint8_t want = solicited_only ? SRNIC_CQ_ARM_SOLICITED : SRNIC_CQ_ARM_NEXT;
	uint8_t cur;

	if (cq == NULL)
		return -EINVAL;
	cur = atomic_load_explicit(&cq->arm, memory_order_relaxed);
	/* an event is for a completion added after the arm (IBTA 11.4.2.2):
	 * one already there is the caller's to poll (rdma-core's examples and
	 * perftest arm, then poll; an event for what they poll right after
	 * would be an empty one on their next wait) */
	if (cur == SRNIC_CQ_ARM_NONE)
		atomic_store_explicit(&cq->arm_prod,
				      atomic_load_explicit(&cq->prod, memory_order_acquire),
				      memory_order_relaxed);
	/* NEXT covers SOLICITED: keep the wider arm */
	while (cur != SRNIC_CQ_ARM_NEXT &&
	       !atomic_compare_exchange_weak_explicit(&cq->arm, &cur, want,
						      memory_order_release, memory_order_relaxed))
		;
	/* the arm must be visible before the caller's next look at prod, so
	 * a completion pushed meanwhile is seen by one of the two */
	atomic_thread_fence(memory_order_seq_cst);
	return 0;
}

bool
srnic_cq_notify_due(struct srnic_cq *cq)
{
	uint8_t arm = atomic_load_explicit(&cq->arm, memory_order_acquire);
	uint32_t from, prod, i;

	if (arm == SRNIC_CQ_ARM_NONE)
		return false;
	prod = atomic_load_explicit(&cq->prod, memory_order_acquire);
	from = atomic_load_explicit(&cq->arm_prod, memory_order_relaxed);
	/* polled past (or cleaned to) the arm point: start at cons */
	if ((int32_t)(atomic_load_explicit(&cq->cons, memory_order_acquire) - from) > 0)
		from = atomic_load_explicit(&cq->cons, memory_order_acquire);
	if ((int32_t)(prod - from) <= 0)
		return false;
	if (arm == SRNIC_CQ_ARM_SOLICITED) {
		/* IBTA 11.4.2.2: solicited-only fires for a solicited
		 * receive or for any completion in error */
		for (i = from; i != prod; i++)
			if (srnic_cq_solicited(cq, i) ||
			    cq->ring[i & cq->mask].status != IBV_WC_SUCCESS)
				break;
		if (i == prod)
			return false;
	}
	return atomic_compare_exchange_strong_explicit(&cq->arm, &arm, SRNIC_CQ_ARM_NONE,
						       memory_order_acq_rel, memory_order_relaxed);
}

const char *
srnic_wc_status_str(enum ibv_wc_status status)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
	};

	if ((unsigned int)status >= RTE_DIM(names) || names[status] == NULL)
		return "unknown";
	return names[status];
}
