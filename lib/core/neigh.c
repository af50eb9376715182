/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbours from the control path: the application's static entries and
 * rdma_cm's resolve. The table and what answers on the wire are the
 * engine's (lib/engine/neigh.c); a resolve only marks an entry for an
 * engine to solicit from its poll: the control path never transmits.
 */
#include <string.h>

#include "rnic.h"
#include "neigh.h"

int
srnic_dev_add_neigh(struct srnic_dev *dev, const union ibv_gid *gid,
		    const struct rte_ether_addr *mac)
{
	/* IPv6 on any device (its link-local GID), IPv4 on an IPv4 one */
	if (dev == NULL || gid == NULL || mac == NULL ||
	    (srnic_gid_is_v4mapped(gid) && dev->ip_ver != 4))
		return -EINVAL;
	return srnic_neigh_update(dev, gid->raw, mac, SRNIC_NEIGH_SRC_STATIC);
}

/* A GID a neighbour can have: of a family the device has an address of
 * (IPv6 always: the link-local GID), a unicast address (not 0.0.0.0, ::,
 * broadcast or multicast). */
static bool
neigh_gid_ok(const struct srnic_dev *dev, const union ibv_gid *gid)
{
	static const uint8_t unspec[16];

	static const uint8_t bcast[4] = { 0xff, 0xff, 0xff, 0xff };
	bool v4 = srnic_gid_is_v4mapped(gid);

	if ((v4 && dev->ip_ver != 4) || srnic_gid_is_multicast(gid, v4))
		return false;
	if (v4)
		return memcmp(&gid->raw[12], unspec, 4) != 0 && memcmp(&gid->raw[12], bcast, 4) != 0;
	return memcmp(gid->raw, unspec, 16) != 0;
}

int
srnic_dev_resolve_neigh(struct srnic_dev *dev, const union ibv_gid *gid,
			struct rte_ether_addr *mac)
{
	int rc;

	if (dev == NULL || gid == NULL || mac == NULL)
		return -EINVAL;
	if (srnic_gid_is_mgid(gid) && (dev->ip_ver == 4 || !srnic_gid_is_v4mapped(gid))) {
		srnic_mcast_mac(gid, mac); /* a group's: no ARP (the kernel's arp_mc_map) */
		return 0;
	}
	if (!neigh_gid_ok(dev, gid))
		return -EINVAL;
	if (srnic_neigh_lookup(dev, gid->raw, mac) == 0) /* ourselves included: loopback */
		return 0;
	rc = srnic_neigh_ask(dev, gid->raw);
	return rc != 0 ? rc : -EAGAIN;
}

