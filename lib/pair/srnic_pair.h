/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_PAIR_H
#define SRNIC_PAIR_H

/**
 * @file
 * Two srnic devices in one process over a net_ring pair, and QPs connected
 * across them: the embedded default the demo, the tests and srnic-perf use.
 * Addresses are loopback-range (127.0.0.1, 127.0.0.2): the frames never
 * leave the process.
 */

#include "srnic.h"

#ifdef __cplusplus
extern "C" {
#endif

struct srnic_pair {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_pd *pd[2];
};

/**
 * Create the ring pair and one srnic device on each side with nb_engines
 * engines and the given Ethernet MTU (9000 gives path MTU 4096). Each
 * device knows the other's MAC statically (no ARP needed).
 * Returns 0 or a negative errno.
 */
int srnic_pair_create(struct srnic_pair *p, const char *name, uint16_t nb_engines,
		      uint16_t mtu);

/**
 * The same with the rest of both devices' configuration from base (engines,
 * MTU, mbufs, read_inline_max, host_rx); the pair sets port, addresses, MAC
 * and name.
 */
int srnic_pair_create_conf(struct srnic_pair *p, const char *name,
			   const struct srnic_dev_conf *base);

/** What srnic_pair_connect() sets on both QPs. */
struct srnic_pair_qp_conf {
	enum ibv_mtu path_mtu;
	uint32_t psn[2];           /**< initial send PSN of side 0 and side 1 */
	uint8_t max_rd_atomic;     /**< both directions, also max_dest_rd_atomic */
	uint8_t max_dest_rd_atomic; /**< 0: same as max_rd_atomic */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	int access;                /**< QP access flags; 0: remote read/write/atomic */
};

/** The other end of a QP, as an out-of-band exchange gives it. */
struct srnic_qp_peer {
	union ibv_gid gid;         /**< the peer's RoCEv2 GID */
	uint32_t qpn;              /**< the peer's QPN */
	uint32_t psn;              /**< the peer's first send PSN (our receive PSN) */
	uint32_t my_psn;           /**< our first send PSN */
	struct rte_ether_addr mac; /**< the peer's MAC, if mac_set (else ARP/ND) */
	bool mac_set;
	uint8_t traffic_class;     /**< IPv4 TOS / IPv6 traffic class of our packets */
	uint32_t flow_label;       /**< IPv6 flow label of our packets */
};

/**
 * Take a QP from RESET to RTS connected to peer, with the attributes of c
 * (c->psn is not used). Returns 0 or a negative errno.
 */
int srnic_qp_connect(struct srnic_qp *qp, const struct srnic_qp_peer *peer,
		     const struct srnic_pair_qp_conf *c);

/**
 * Take qa (on p->dev[0]) and qb (on p->dev[1]) from RESET to RTS connected to
 * each other. Returns 0 or a negative errno.
 */
int srnic_pair_connect(struct srnic_pair *p, struct srnic_qp *qa, struct srnic_qp *qb,
		       const struct srnic_pair_qp_conf *c);

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_PAIR_H */
