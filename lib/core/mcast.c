/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Multicast groups (IBTA 10.5, RoCEv2 annex A17.4.5): UD QPs attached to a
 * group's GID receive the datagrams sent to the group's IP address with
 * destination QPN 0xFFFFFF (the engines' eng_ud_mcast_rx()). On RoCE there
 * is no subnet manager to join: attaching is local, as the kernel's
 * rdma_cm joins a RoCE group with no SA (cma_iboe_join_multicast()), and
 * the port's multicast filter takes the group's MAC.
 *
 * The table is dev->mcast[]: a slot per group, each an immutable struct
 * srnic_mcast_grp that engines read with no lock. An attach or detach
 * builds the group anew under mcast_lock, publishes it, and frees the old
 * one once every engine left the poll that may hold it (quiesce).
 */
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "rnic.h"

/* The Ethernet address of a group (RFC 1112 6.4: 01:00:5e and the low 23
 * bits of the IPv4 group; RFC 2464 7: 33:33 and the low 32 bits of the
 * IPv6 one). */
void
srnic_mcast_mac(const union ibv_gid *mgid, struct rte_ether_addr *mac)
{
	uint8_t *a = mac->addr_bytes;

	if (srnic_gid_is_v4mapped(mgid)) {
		a[0] = 0x01;
		a[1] = 0x00;
		a[2] = 0x5e;
		a[3] = mgid->raw[13] & 0x7f;
		a[4] = mgid->raw[14];
		a[5] = mgid->raw[15];
	} else {
		a[0] = 0x33;
		a[1] = 0x33;
		memcpy(&a[2], &mgid->raw[12], 4);
	}
}

/* The port takes the groups' MACs (under mcast_lock). A PMD that cannot
 * filter by list gets all multicast; one that has neither (net_ring,
 * memif, af_packet in promiscuous mode) passes every frame already. */
static void
mcast_filter_update(struct srnic_dev *dev)
{
	struct rte_ether_addr macs[SRNIC_MAX_MCAST_GRP];
	uint32_t i, n = 0;
	int rc;

	for (i = 0; i < SRNIC_MAX_MCAST_GRP; i++)
		if (dev->mcast[i] != NULL)
			macs[n++] = dev->mcast[i]->mac;
	if (dev->mcast_allmulti)
		return;
	rc = rte_eth_dev_set_mc_addr_list(dev->port_id, n != 0 ? macs : NULL, n);
	if (rc == 0 || n == 0)
		return;
	rc = rte_eth_allmulticast_enable(dev->port_id);
	SRNIC_LOG(DEBUG, "%s: port %u has no multicast list (%d): all multicast %s", dev->name,
		  dev->port_id, rc, rc == 0 ? "enabled" : "as the PMD passes it");
	dev->mcast_allmulti = 1;
}

static int
mcast_find(const struct srnic_dev *dev, const union ibv_gid *mgid)
{
	int i;

	for (i = 0; i < SRNIC_MAX_MCAST_GRP; i++)
		if (dev->mcast[i] != NULL && memcmp(dev->mcast[i]->mgid.raw, mgid->raw, 16) == 0)
			return i;
	return -1;
}

static int
mcast_args(struct srnic_qp *qp, const union ibv_gid *gid)
{
	if (qp == NULL || gid == NULL || qp->type != IBV_QPT_UD || !srnic_gid_is_mgid(gid))
		return -EINVAL;
	if (srnic_dev_in_poll(qp->dev))
		return -EDEADLK; /* the quiesce would wait for our own poll */
	return 0;
}

/* Publish grp in slot i (NULL: the group is gone), then free the old one
 * once no engine can hold it. Called with mcast_lock held; drops it. */
static void
mcast_publish(struct srnic_dev *dev, int i, struct srnic_mcast_grp *grp)
{
	struct srnic_mcast_grp *old = dev->mcast[i];
	bool filter = (old == NULL) != (grp == NULL);

	__atomic_store_n(&dev->mcast[i], grp, __ATOMIC_RELEASE);
	if (old == NULL)
		atomic_fetch_add(&dev->nb_mcast_grp, 1);
	else if (grp == NULL)
		atomic_fetch_sub(&dev->nb_mcast_grp, 1);
	if (filter)
		mcast_filter_update(dev);
	rte_spinlock_unlock(&dev->mcast_lock);
	if (old != NULL) {
		srnic_dev_quiesce(dev);
		rte_free(old);
	}
}

int
srnic_attach_mcast(struct srnic_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	struct srnic_mcast_grp *grp;
	struct srnic_dev *dev;
	int i, rc;

	RTE_SET_USED(lid); /* RoCE: no LIDs */
	rc = mcast_args(qp, gid);
	if (rc != 0)
		return rc;
	dev = qp->dev;
	grp = rte_zmalloc("srnic_mcast_grp", sizeof(*grp), 0);
	if (grp == NULL)
		return -ENOMEM;
	rte_spinlock_lock(&dev->mcast_lock);
	i = mcast_find(dev, gid);
	if (i >= 0) {
		const struct srnic_mcast_grp *cur = dev->mcast[i];
		uint16_t k;

		for (k = 0; k < cur->nb_qp; k++)
			if (cur->qp[k] == qp)
				break;
		if (k < cur->nb_qp || cur->nb_qp == SRNIC_MAX_MCAST_QP_ATTACH) {
			rte_spinlock_unlock(&dev->mcast_lock);
			rte_free(grp);
			if (k < cur->nb_qp)
				return 0; /* attached already: as rxe */
			SRNIC_LOG(DEBUG, "attach_mcast: %u QPs in the group already "
				  "(SRNIC_MAX_MCAST_QP_ATTACH)", SRNIC_MAX_MCAST_QP_ATTACH);
			return -ENOMEM;
		}
		*grp = *cur;
	} else {
		for (i = 0; i < SRNIC_MAX_MCAST_GRP && dev->mcast[i] != NULL; i++)
			;
		if (i == SRNIC_MAX_MCAST_GRP) {
			rte_spinlock_unlock(&dev->mcast_lock);
			rte_free(grp);
			SRNIC_LOG(DEBUG, "attach_mcast: %u groups already (SRNIC_MAX_MCAST_GRP)",
				  SRNIC_MAX_MCAST_GRP);
			return -ENOMEM;
		}
		grp->mgid = *gid;
		srnic_mcast_mac(gid, &grp->mac);
	}
	grp->qp[grp->nb_qp++] = qp;
	qp->nb_mcast++;
	mcast_publish(dev, i, grp);
	return 0;
}

int
srnic_detach_mcast(struct srnic_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	const struct srnic_mcast_grp *cur;
	struct srnic_mcast_grp *grp = NULL;
	struct srnic_dev *dev;
	uint16_t k, j;
	int i, rc;

	RTE_SET_USED(lid);
	rc = mcast_args(qp, gid);
	if (rc != 0)
		return rc;
	dev = qp->dev;
	rte_spinlock_lock(&dev->mcast_lock);
	i = mcast_find(dev, gid);
	cur = i >= 0 ? dev->mcast[i] : NULL;
	for (k = 0; cur != NULL && k < cur->nb_qp && cur->qp[k] != qp; k++)
		;
	if (cur == NULL || k == cur->nb_qp) {
		rte_spinlock_unlock(&dev->mcast_lock);
		return -EINVAL; /* not attached: as rxe */
	}
	if (cur->nb_qp > 1) {
		/* allocated under the spinlock: rte_malloc takes no lock of ours */
		grp = rte_malloc("srnic_mcast_grp", sizeof(*grp), 0);
		if (grp == NULL) {
			rte_spinlock_unlock(&dev->mcast_lock);
			return -ENOMEM;
		}
		grp->mgid = cur->mgid;
		grp->mac = cur->mac;
		grp->nb_qp = 0;
		for (j = 0; j < cur->nb_qp; j++)
			if (j != k)
				grp->qp[grp->nb_qp++] = cur->qp[j];
	}
	qp->nb_mcast--;
	mcast_publish(dev, i, grp);
	return 0;
}

int
srnic_detach_mcast_all(struct srnic_qp *qp)
{
	struct srnic_dev *dev;
	union ibv_gid mgid;
	uint16_t k;
	int i, rc;

	if (qp == NULL)
		return -EINVAL;
	dev = qp->dev;
	for (;;) {
		rte_spinlock_lock(&dev->mcast_lock);
		for (i = 0; i < SRNIC_MAX_MCAST_GRP; i++) {
			const struct srnic_mcast_grp *cur = dev->mcast[i];

			for (k = 0; cur != NULL && k < cur->nb_qp && cur->qp[k] != qp; k++)
				;
			if (cur != NULL && k < cur->nb_qp) {
				mgid = cur->mgid;
				break;
			}
		}
		rte_spinlock_unlock(&dev->mcast_lock);
		if (i == SRNIC_MAX_MCAST_GRP)
			return 0;
		rc = srnic_detach_mcast(qp, &mgid, 0);
		if (rc < 0 && rc != -EINVAL)
			return rc;
	}
}

bool
srnic_qp_mcast_busy(struct srnic_qp *qp)
{
	bool busy;

	rte_spinlock_lock(&qp->dev->mcast_lock);
	busy = qp->nb_mcast != 0;
	rte_spinlock_unlock(&qp->dev->mcast_lock);
	return busy;
}
