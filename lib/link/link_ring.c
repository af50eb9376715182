/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring pairs: two net_ring ethdevs wired back to back.
 *
 * rte_eth_from_rings() attaches existing rings (the PMD's DEV_ATTACH mode), so
 * closing a port never frees them: the rings are ours, and on a failed
 * creation we free them ourselves.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_bus_vdev.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "srnic_link.h"

/* "net_ring_" + name + "_a" must fit the PMD's RTE_RING_NAMESIZE buffer. */
_Static_assert(sizeof("net_ring_") - 1 + SRNIC_LINK_NAME_MAX + 2 < RTE_RING_NAMESIZE,
	       "SRNIC_LINK_NAME_MAX too long for net_ring port names");

static void
ring_pair_free_rings(struct rte_ring **r, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		rte_ring_free(r[i]);
}

static int
ring_port_create(const char *name, const char *side, struct rte_ring *const *rx,
		 struct rte_ring *const *tx, uint16_t nb_queues, uint16_t *port)
{
	char port_name[RTE_RING_NAMESIZE];
	int rc;

	snprintf(port_name, sizeof(port_name), "%s_%s", name, side);
	rc = rte_eth_from_rings(port_name, rx, nb_queues, tx, nb_queues,
				rte_socket_id());
	if (rc < 0)
		return rte_errno != 0 ? -rte_errno : -EINVAL;
	*port = (uint16_t)rc;
	return 0;
}

int
srnic_link_ring_pair(const char *name, uint16_t nb_queues,
		     unsigned int ring_size, uint16_t *port_a, uint16_t *port_b)
{
	struct rte_ring *ab[RTE_PMD_RING_MAX_RX_RINGS]; /* A's TX, B's RX */
	struct rte_ring *ba[RTE_PMD_RING_MAX_RX_RINGS]; /* B's TX, A's RX */
	char ring_name[RTE_RING_NAMESIZE];
	char vdev_name[RTE_RING_NAMESIZE];
	unsigned int n_ab = 0, n_ba = 0;
	uint16_t a = RTE_MAX_ETHPORTS, b = RTE_MAX_ETHPORTS;
	size_t len;
	int rc;

	if (name == NULL || port_a == NULL || port_b == NULL)
		return -EINVAL;
	len = strnlen(name, SRNIC_LINK_NAME_MAX + 1);
	if (len == 0)
		return -EINVAL;
	if (len > SRNIC_LINK_NAME_MAX)
		return -ENAMETOOLONG;
	if (nb_queues == 0 || nb_queues > RTE_PMD_RING_MAX_RX_RINGS ||
	    nb_queues > RTE_PMD_RING_MAX_TX_RINGS)
		return -EINVAL;
	if (ring_size < 2 || ring_size > RTE_RING_SZ_MASK ||
	    !rte_is_power_of_2(ring_size))
		return -EINVAL;

	for (; n_ab < nb_queues; n_ab++) {
		snprintf(ring_name, sizeof(ring_name), "%s_ab%u", name, n_ab);
		ab[n_ab] = rte_ring_create(ring_name, ring_size, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (ab[n_ab] == NULL) {
			rc = -rte_errno;
			goto fail;
		}
	}
	for (; n_ba < nb_queues; n_ba++) {
		snprintf(ring_name, sizeof(ring_name), "%s_ba%u", name, n_ba);
		ba[n_ba] = rte_ring_create(ring_name, ring_size, rte_socket_id(),
					   RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (ba[n_ba] == NULL) {
			rc = -rte_errno;
			goto fail;
		}
	}

	rc = ring_port_create(name, "a", ba, ab, nb_queues, &a);
	if (rc < 0)
		goto fail;
	rc = ring_port_create(name, "b", ab, ba, nb_queues, &b);
	if (rc < 0) {
		/* Removes port A; its rings stay ours (attached, not created). */
		snprintf(vdev_name, sizeof(vdev_name), "net_ring_%s_a", name);
		rte_vdev_uninit(vdev_name);
		goto fail;
	}
	*port_a = a;
	*port_b = b;
	return 0;

fail:
	ring_pair_free_rings(ab, n_ab);
	ring_pair_free_rings(ba, n_ba);
	return rc;
}
