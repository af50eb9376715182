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
	if (cq->ring == NULL || cq->wq_next == NULL || cq->solicited == NULL) {
		rte_free(cq->ring);
		rte_free(cq->wq_next);
		rte_free(cq->solicited);
		rte_free(cq);
		rte_errno = ENOMEM;
		return NULL;
	}
	cq->dev = dev;
	cq->eng = eng;
	cq->size = size;
	cq->mask = size - 1;
	return cq;
}

int
srnic_destroy_cq(struct srnic_cq *cq)
{
	if (cq == NULL)
		return -EINVAL;
	rte_free(cq->ring);
	rte_free(cq->wq_next);
	rte_free(cq->solicited);
	rte_free(cq);
	return 0;
}

int
srnic_poll_cq(struct srnic_cq *cq, int n, struct ibv_wc *wc)
{
	uint32_t cons = atomic_load_explicit(&cq->cons, memory_order_relaxed);
	uint32_t prod = atomic_load_explicit(&cq->prod, memory_order_acquire);
	uint32_t k = RTE_MIN((uint32_t)RTE_MAX(n, 0), prod - cons), i;

	for (i = 0; i < k; i++) {
		uint32_t slot = (cons + i) & cq->mask;
		struct srnic_qp *qp;

		wc[i] = cq->ring[slot];
		/* The WQE's slots go back to the application now, as with a
		 * hardware RNIC: a CQ as deep as its work queues never overflows. */
		qp = srnic_dev_qp(cq->dev, wc[i].qp_num);
		if (qp != NULL)
			atomic_store_explicit((wc[i].opcode & IBV_WC_RECV) ? &qp->rq.app_free
									  : &qp->sq.app_free,
					      cq->wq_next[slot], memory_order_release);
	}
	atomic_store_explicit(&cq->cons, cons + k, memory_order_release);
	if (k == 0 && atomic_load_explicit(&cq->overflow, memory_order_relaxed))
		return -EOVERFLOW;
	return (int)k;
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
