/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address handles for UD QPs: the destination a UD work request names
 * (ibv_create_ah), and the reply address of a received datagram from its
 * GRH area (ibv_init_ah_from_wc). A UD post copies what the packet needs
 * of the AH into its WQE (struct srnic_ud_dest), so the engine never looks
 * at an AH and an AH's lifetime is the control path's alone.
 */
#include <rte_errno.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "rnic.h"
#include "neigh.h"

/* Check an AH attribute for this device: 0 or a positive errno. */
static int
ah_check(const struct srnic_dev *dev, const struct ibv_ah_attr *a)
{
	bool v4;

	if (!a->is_global || !srnic_dev_gid_valid(dev, a->grh.sgid_index) || a->port_num != 1)
		return EINVAL; /* RoCE routes by the GRH; one port */
	/* the source, any GID of the table, of the destination's family */
	v4 = srnic_gid_is_v4mapped(&a->grh.dgid);
	if (srnic_gid_is_v4mapped(&dev->gid[a->grh.sgid_index]) != v4)
		return EINVAL;
	return 0;
}

static struct srnic_ah *
ah_create(struct srnic_pd *pd, const struct ibv_ah_attr *a, const struct rte_ether_addr *dmac)
{
	struct srnic_dev *dev;
	struct srnic_ah *ah;
	int rc;

	if (pd == NULL || a == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = pd->dev;
	rc = ah_check(dev, a);
	if (rc != 0) {
		SRNIC_LOG(DEBUG, "create_ah: bad attribute (is_global %u, sgid_index %u, port %u)",
			  a->is_global, a->grh.sgid_index, a->port_num);
		rte_errno = rc;
		return NULL;
	}
	if (atomic_fetch_add(&dev->nb_ah, 1) >= SRNIC_MAX_AH) {
		atomic_fetch_sub(&dev->nb_ah, 1);
		SRNIC_LOG(DEBUG, "create_ah: %u address handles already (SRNIC_MAX_AH)",
			  SRNIC_MAX_AH);
		rte_errno = ENOMEM;
		return NULL;
	}
	ah = rte_zmalloc("srnic_ah", sizeof(*ah), 0);
	if (ah == NULL) {
		atomic_fetch_sub(&dev->nb_ah, 1);
		rte_errno = ENOMEM;
		return NULL;
	}
	ah->pd = pd;
	ah->attr = *a;
	ah->dest.ttl = a->grh.hop_limit != 0 ? a->grh.hop_limit : SRNIC_IP_TTL;
	ah->dest.tclass = a->grh.traffic_class;
	ah->dest.flow_label = srnic_gid_is_v4mapped(&a->grh.dgid) ?
			     0 : a->grh.flow_label & SRNIC_FLOW_LABEL_MASK;
	ah->dest.sgid_index = a->grh.sgid_index;
	memcpy(ah->dest.ip, a->grh.dgid.raw, 16);
	if (srnic_gid_is_mgid(&a->grh.dgid)) {
		/* a group: its MAC, never asked for (RFC 1112, RFC 2464) */
		srnic_mcast_mac(&a->grh.dgid, &ah->dest.mac);
		ah->dest.mac_ok = 1;
		ah->dmac_given = 1;
	} else if (dmac != NULL) {
		ah->dest.mac = *dmac;
		ah->dest.mac_ok = 1;
		ah->dmac_given = 1;
	} else {
		/* Known now (a static entry, a host that talked to us), or
		 * looked up again at each post, and by the engine at send. */
		ah->dest.mac_ok = srnic_neigh_lookup(dev, ah->dest.ip, &ah->dest.mac) == 0;
	}
	atomic_fetch_add(&pd->refs, 1);
	return ah;
}

struct srnic_ah *
srnic_create_ah(struct srnic_pd *pd, const struct ibv_ah_attr *attr)
{
	return ah_create(pd, attr, NULL);
}

struct srnic_ah *
srnic_create_ah_dmac(struct srnic_pd *pd, const struct ibv_ah_attr *attr,
		     const struct rte_ether_addr *dmac)
{
	if (dmac == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	return ah_create(pd, attr, dmac);
}

int
srnic_destroy_ah(struct srnic_ah *ah)
{
	if (ah == NULL)
		return -EINVAL;
	atomic_fetch_sub(&ah->pd->dev->nb_ah, 1);
	atomic_fetch_sub(&ah->pd->refs, 1);
	rte_free(ah);
	return 0;
}

struct ibv_ah *
srnic_ah_ibv(struct srnic_ah *ah)
{
	return ah != NULL ? &ah->ibv : NULL;
}

struct srnic_ah *
srnic_ah_from_ibv(struct ibv_ah *ah)
{
	return ah != NULL ? container_of(ah, struct srnic_ah, ibv) : NULL;
}

int
srnic_query_ah(const struct srnic_ah *ah, struct ibv_ah_attr *attr)
{
	if (ah == NULL || attr == NULL)
		return -EINVAL;
	*attr = ah->attr;
	return 0;
}

int
srnic_init_ah_from_wc(struct srnic_dev *dev, const struct ibv_wc *wc, const void *grh,
		      struct ibv_ah_attr *attr)
{
	static const uint8_t zero[SRNIC_GRH_LEN - sizeof(struct rte_ipv4_hdr)];
	const uint8_t *g = grh;

	if (dev == NULL || wc == NULL || grh == NULL || attr == NULL || !(wc->wc_flags & IBV_WC_GRH))
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->grh.sgid_index = SRNIC_GID_INDEX_IP;
	if ((g[0] >> 4) == 6) {
		const struct rte_ipv6_hdr *ip6 = (const struct rte_ipv6_hdr *)g;
		uint32_t vtc = rte_be_to_cpu_32(ip6->vtc_flow);
		int sgid = srnic_dev_gid_find(dev, ip6->dst_addr);

		/* the reply goes from the GID the datagram was sent to */
		if (sgid < 0)
			return -EINVAL;
		attr->grh.sgid_index = (uint8_t)sgid;
		memcpy(attr->grh.dgid.raw, ip6->src_addr, 16);
		attr->grh.traffic_class = (uint8_t)(vtc >> 20);
		attr->grh.flow_label = vtc & SRNIC_FLOW_LABEL_MASK;
	} else if (memcmp(g, zero, sizeof(zero)) == 0 && (g[sizeof(zero)] >> 4) == 4) {
		/* RoCEv2 over IPv4: 20 zero bytes, then the IPv4 header */
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(g + sizeof(zero));

		if (dev->ip_ver != 4 || memcmp(&ip->dst_addr, dev->ip, 4) != 0)
			return -EINVAL;
		srnic_gid_from_ipv4(&attr->grh.dgid, &ip->src_addr);
		attr->grh.traffic_class = ip->type_of_service;
	} else {
		return -EINVAL;
	}
	attr->is_global = 1;
	attr->grh.hop_limit = 0xFF; /* the kernel's, for a reply */
	attr->dlid = wc->slid;
	attr->sl = wc->sl;
	attr->port_num = 1;
	return 0;
}

struct srnic_ah *
srnic_create_ah_from_wc(struct srnic_pd *pd, const struct ibv_wc *wc, const void *grh)
{
	struct ibv_ah_attr a;
	int rc;

	if (pd == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = srnic_init_ah_from_wc(pd->dev, wc, grh, &a);
	if (rc != 0) {
		rte_errno = -rc;
		return NULL;
	}
	return srnic_create_ah(pd, &a);
}
