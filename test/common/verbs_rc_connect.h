/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_VERBS_RC_CONNECT_H
#define SRNIC_TEST_VERBS_RC_CONNECT_H

/*
 * An RC QP through INIT, RTR and RTS to a peer QP over RoCE (a GRH to
 * dgid from the local GID sgid_index, port 1, MTU 1024, one READ/atomic
 * each way, retries 7, the ACK timeout timeout: 0 is none), its PSNs psn
 * both ways: for the test programs built against the system's
 * <infiniband/verbs.h> alone (never srnic's headers), which run over
 * srnic's libibverbs.so.1. Header-only: those programs link nothing of
 * the tree. 0, or ibv_modify_qp's error.
 * And verbs_qp_state_left(), below.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

static inline int
verbs_rc_connect_to(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid,
		    uint8_t sgid_index, uint32_t psn, unsigned int access, uint8_t timeout)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* verbs_rc_connect_to() with the ACK timeout 14 (67 ms, 8 tries) */
static inline int
verbs_rc_connect(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *dgid,
		 uint8_t sgid_index, uint32_t psn, unsigned int access)
{
	return verbs_rc_connect_to(qp, dqpn, dgid, sgid_index, psn, access, 14);
}

/*
 * The QP's state as its provider has it (ibv_query_qp()) once it has left
 * from: a state a daemon or a peer moves it out of by itself (RTS to ERR
 * after a hostile WQE). from again after guard_ms (a guard that stops a
 * hang, never a wait for an outcome); IBV_QPS_UNKNOWN if a query fails.
 */
static inline enum ibv_qp_state
verbs_qp_state_left(struct ibv_qp *qp, enum ibv_qp_state from, long guard_ms)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) != 0)
			return IBV_QPS_UNKNOWN;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (a.qp_state == from && (t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < guard_ms);
	return a.qp_state;
}

#endif /* SRNIC_TEST_VERBS_RC_CONNECT_H */
