/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_NEIGH_H
#define SRNIC_NEIGH_H

/*
 * The device as a host on its link: ARP (IPv4) and neighbour discovery
 * (IPv6) for its own address, and a small neighbour table for peers.
 */

#include "rnic.h"

static inline bool
srnic_gid_is_v4mapped(const union ibv_gid *g)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g->raw, pfx, sizeof(pfx)) == 0;
}

int srnic_neigh_lookup(struct srnic_dev *dev, const uint8_t *ip, struct rte_ether_addr *mac);
void srnic_neigh_update(struct srnic_dev *dev, const uint8_t *ip, const struct rte_ether_addr *mac);
/* ARP / ND frame for us: answer or learn. Returns true if consumed (m freed). */
bool srnic_neigh_rx(struct srnic_engine *eng, struct rte_mbuf *m);
/* Ask who has ip (ARP request or neighbour solicitation). */
void srnic_neigh_solicit(struct srnic_engine *eng, const uint8_t *ip);

#endif
