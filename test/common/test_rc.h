/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_RC_H
#define SRNIC_TEST_RC_H

/**
 * @file
 * RC helpers shared by the e2e and host tests: the RESET -> RTS sequence,
 * one-WR posts, and a flat copy of a received frame.
 */

#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include "srnic.h"

/** What srnic_test_qp_connect() sets on the way to RTS. */
struct srnic_test_path {
	int access;                 /* INIT: qp_access_flags */
	enum ibv_mtu mtu;           /* RTR */
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint8_t max_dest_rd_atomic;
	union ibv_gid dgid;         /* GRH, from sgid_index 1, hop limit 64 */
	uint8_t tclass;
	uint32_t flow_label;
	const struct rte_ether_addr *dmac; /* NULL: resolved by ARP/ND */
	uint32_t sq_psn;            /* RTS */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t max_rd_atomic;
};

/** RESET -> INIT -> RTR -> RTS; 0 or the first failing modify's result. */
int srnic_test_qp_connect(struct srnic_qp *qp, const struct srnic_test_path *p);

/** Post one atomic WR (op FETCH_AND_ADD or CMP_AND_SWP) on an 8-byte sge. */
int srnic_test_post_atomic(struct srnic_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
			   struct ibv_sge *sge, uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
			   uint64_t swap, unsigned int flags);

/** Post one send WR of opcode with nsge SGEs (raddr/rkey for RDMA). */
int srnic_test_post_send(struct srnic_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
			 struct ibv_sge *sge, int nsge, uint64_t raddr, uint32_t rkey,
			 unsigned int flags);
/** The same with immediate data (big endian, as in ibv_send_wr). */
int srnic_test_post_send_imm(struct srnic_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
			     struct ibv_sge *sge, int nsge, uint64_t raddr, uint32_t rkey,
			     uint32_t imm_be, unsigned int flags);
/** Post one RECV with nsge SGEs. */
int srnic_test_post_recv(struct srnic_qp *qp, uint64_t wr_id, struct ibv_sge *sge, int nsge);

/** A malloc'd flat copy of m's *len = pkt_len bytes; NULL (and *len 0) if
 * out of memory. */
uint8_t *srnic_test_frame_copy(const struct rte_mbuf *m, uint32_t *len);

#endif
