/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_NEIGH_H
#define SRNIC_NEIGH_H

/*
 * The device as a host on its link: ARP (IPv4) and neighbour discovery
 * (IPv6) for its own address, and a small neighbour table for peers.
 */

#include "rnic.h"

/* A multicast GID: 224.0.0.0/4 (IPv4-mapped, v4) or ff00::/8. */
static inline bool
srnic_gid_is_multicast(const union ibv_gid *g, bool v4)
{
	if (v4)
		return (g->raw[12] & 0xF0) == 0xE0;
	return g->raw[0] == 0xFF;
}

/* The table's key of a route's destination: its address as a GID (IPv4
 * as ::ffff:a.b.c.d), so that one table holds both families (an IPv4
 * device talks IPv6 from its link-local GID too). */
static inline void
srnic_neigh_key(uint8_t ip_ver, const uint8_t *ip, union ibv_gid *key)
{
	if (ip_ver == 4)
		srnic_gid_from_ipv4(key, ip);
	else
		memcpy(key->raw, ip, 16);
}

/* Where a neighbour's MAC comes from: what may be learned. */
enum srnic_neigh_src {
	SRNIC_NEIGH_SRC_STATIC,     /* the application: kept, never evicted */
	SRNIC_NEIGH_SRC_ASKED_US,   /* an ARP request / NS for our address */
	SRNIC_NEIGH_SRC_HEARD,      /* a reply, gratuitous ARP, NA: only for an address we know or want */
};

/* Whether a key is an IPv4 address (::ffff:0:0/96). */
static inline bool
srnic_neigh_key_v4(const uint8_t *key)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(key, pfx, sizeof(pfx)) == 0;
}

/* Every ip below is a key: 16 bytes, an address as a GID (srnic_neigh_key()). */

/* The MAC of ip if known (a QP's lookup: the entry becomes live), ours for our own
 * address (in-device loopback); -ENOENT. */
int srnic_neigh_lookup(struct srnic_dev *dev, const uint8_t *ip, struct rte_ether_addr *mac);
/* The same without marking it; *is_static says whether the application set it
 * (or it is our own address). */
int srnic_neigh_peek(struct srnic_dev *dev, const uint8_t *ip, struct rte_ether_addr *mac,
		     bool *is_static);
/* A QP needs ip: a pending entry, so that the reply is learned. */
void srnic_neigh_want(struct srnic_dev *dev, const uint8_t *ip);
/* Learn or refresh ip -> mac as src allows; 0, or -ENOSPC (table full of
 * entries src may not evict). */
int srnic_neigh_update(struct srnic_dev *dev, const uint8_t *ip, const struct rte_ether_addr *mac,
		       enum srnic_neigh_src src);
/* The entry of ip made or kept pending and marked for an engine to solicit
 * (srnic_dev_resolve_neigh()); 0, or -ENOSPC (the table is all static). */
int srnic_neigh_ask(struct srnic_dev *dev, const uint8_t *ip);
/* ARP / ND frame for us: answer or learn. Returns true if consumed (m freed). */
bool eng_neigh_rx(struct srnic_engine *eng, struct rte_mbuf *m);
/* Ask who has ip (ARP request or neighbour solicitation). */
void eng_neigh_solicit(struct srnic_engine *eng, const uint8_t *ip);
/* Solicit the entries srnic_dev_resolve_neigh() asked for (dev->neigh_ask
 * set): any one engine of the device, from its poll. */
void eng_neigh_ask_run(struct srnic_engine *eng);

#endif
