/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Capture through ethdev RX/TX callbacks (RTE_ETHDEV_RXTX_CALLBACKS, on in
 * Debian's DPDK build): one callback per queue and direction, all sharing
 * one struct srnic_capture as user_param.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_malloc.h>

#include "srnic_link.h"

RTE_LOG_REGISTER(srnic_logtype_link, srnic.link, INFO);
#define LINK_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, srnic_logtype_link, "srnic_link: " fmt "\n", \
		##__VA_ARGS__)

struct srnic_capture {
	srnic_capture_cb cb;
	void *arg;
	uint16_t port_id;
	uint16_t nb_rx;  /**< RX callbacks installed, queues 0 .. nb_rx - 1 */
	uint16_t nb_tx;  /**< TX callbacks installed */
	uint16_t max_rx; /**< slots in rx_cbs (configured RX queues) */
	/* rx_cbs[max_rx] then tx_cbs[]; handles from rte_eth_add_*_callback() */
	const struct rte_eth_rxtx_callback *cbs[];
};

static uint16_t
capture_rx(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[],
	   uint16_t nb_pkts, uint16_t max_pkts, void *user_param)
{
	const struct srnic_capture *c = user_param;
	uint64_t tsc;
	uint16_t i;

	RTE_SET_USED(queue);
	RTE_SET_USED(max_pkts);
	/* Most RX polls are empty: no TSC read for them. */
	if (nb_pkts == 0)
		return 0;
	tsc = rte_rdtsc();
	for (i = 0; i < nb_pkts; i++)
		c->cb(port_id, SRNIC_CAPTURE_RX, pkts[i], tsc, c->arg);
	return nb_pkts;
}

static uint16_t
capture_tx(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[],
	   uint16_t nb_pkts, void *user_param)
{
	const struct srnic_capture *c = user_param;
	uint64_t tsc;
	uint16_t i;

	RTE_SET_USED(queue);
	if (nb_pkts == 0)
		return 0;
	tsc = rte_rdtsc();
	for (i = 0; i < nb_pkts; i++)
		c->cb(port_id, SRNIC_CAPTURE_TX, pkts[i], tsc, c->arg);
	return nb_pkts;
}

/*
 * Remove every installed callback. With free_cbs, also free the handles
 * (DPDK leaves that to the caller, once no burst can be inside them).
 */
static int
capture_remove(struct srnic_capture *c, bool free_cbs)
{
	const struct rte_eth_rxtx_callback *cb;
	int rc, first = 0;
	uint16_t q;

	for (q = 0; q < c->nb_rx; q++) {
		cb = c->cbs[q];
		rc = rte_eth_remove_rx_callback(c->port_id, q, cb);
		if (rc < 0 && first == 0)
			first = rc;
		if (rc == 0 && free_cbs)
			rte_free((void *)(uintptr_t)cb);
	}
	for (q = 0; q < c->nb_tx; q++) {
		cb = c->cbs[c->max_rx + q];
		rc = rte_eth_remove_tx_callback(c->port_id, q, cb);
		if (rc < 0 && first == 0)
			first = rc;
		if (rc == 0 && free_cbs)
			rte_free((void *)(uintptr_t)cb);
	}
	c->nb_rx = 0;
	c->nb_tx = 0;
	return first;
}

struct srnic_capture *
srnic_capture_start(uint16_t port_id, unsigned int flags, srnic_capture_cb cb,
		    void *arg)
{
	struct rte_eth_dev_info info;
	struct srnic_capture *c;
	uint16_t want_rx, want_tx, q;
	int rc;

	if (!rte_eth_dev_is_valid_port(port_id)) {
		rte_errno = ENODEV;
		return NULL;
	}
	if (cb == NULL || flags == 0 ||
	    (flags & ~(unsigned int)(SRNIC_CAPTURE_RX | SRNIC_CAPTURE_TX)) != 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = rte_eth_dev_info_get(port_id, &info);
	if (rc < 0) {
		rte_errno = -rc;
		return NULL;
	}
	want_rx = (flags & SRNIC_CAPTURE_RX) ? info.nb_rx_queues : 0;
	want_tx = (flags & SRNIC_CAPTURE_TX) ? info.nb_tx_queues : 0;
	if (((flags & SRNIC_CAPTURE_RX) && want_rx == 0) ||
	    ((flags & SRNIC_CAPTURE_TX) && want_tx == 0)) {
		rte_errno = EINVAL;
		return NULL;
	}

	c = calloc(1, sizeof(*c) + (want_rx + want_tx) * sizeof(c->cbs[0]));
	if (c == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	c->cb = cb;
	c->arg = arg;
	c->port_id = port_id;
	c->max_rx = want_rx;

	for (q = 0; q < want_rx; q++) {
		c->cbs[q] = rte_eth_add_rx_callback(port_id, q, capture_rx, c);
		if (c->cbs[q] == NULL)
			goto fail;
		c->nb_rx++;
	}
	for (q = 0; q < want_tx; q++) {
		c->cbs[want_rx + q] = rte_eth_add_tx_callback(port_id, q, capture_tx, c);
		if (c->cbs[want_rx + q] == NULL)
			goto fail;
		c->nb_tx++;
	}
	return c;

fail:
	rc = rte_errno;
	if (c->nb_rx + c->nb_tx == 0) {
		free(c);
	} else {
		/*
		 * Lcores may be polling the port right now and be inside a
		 * callback just added: unhook, but leave the memory (a few
		 * bytes, on a path that only ENOMEM takes).
		 */
		capture_remove(c, false);
		LINK_LOG(WARNING, "port %u: capture start failed halfway (%d)",
			 port_id, rc);
	}
	rte_errno = rc;
	return NULL;
}

int
srnic_capture_stop(struct srnic_capture *c)
{
	int rc;

	if (c == NULL)
		return 0;
	rc = capture_remove(c, true);
	free(c);
	return rc;
}
