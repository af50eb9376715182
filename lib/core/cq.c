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
		rte_free(cq->ring);
		rte_free(cq->wq_next);
		rte_free(cq->solicited);
		rte_free(cq->qp);
		rte_free(cq);
		rte_errno = ENOMEM;
		return NULL;
	}
	cq->dev = dev;
	cq->eng = eng;
	cq->size = size;
	cq->mask = size - 1;
	rte_spinlock_init(&cq->poll_lock);
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
	atomic_fetch_sub(&cq->dev->nb_cq, 1);
	rte_free(cq->ring);
	rte_free(cq->wq_next);
	rte_free(cq->solicited);
	rte_free(cq->qp);
	rte_free(cq);
	return 0;
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
