/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An engine's life: created with its device (its rings, its timer wheel),
 * destroyed with it (what its rings still hold freed). Its log type.
 */
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "eng_internal.h"

RTE_LOG_REGISTER(srnic_logtype_engine, srnic.engine, INFO);

struct srnic_engine *
srnic_engine_create(struct srnic_dev *dev, uint16_t index)
{
	struct srnic_engine *eng = rte_zmalloc("srnic_engine", sizeof(*eng), RTE_CACHE_LINE_SIZE);
	char name[RTE_RING_NAMESIZE];
	unsigned int i;

	if (eng == NULL)
		return NULL;
	eng->dev = dev;
	eng->index = index;
	eng->queue = index;
	eng->port_id = dev->port_id;
	snprintf(name, sizeof(name), "%.20s_rd%u", dev->name, index);
	eng->redirect = rte_ring_create(name, SRNIC_REDIRECT_RING, rte_socket_id(), RING_F_SC_DEQ);
	/* One entry per QP at most in each: room for every QP of the device. */
	snprintf(name, sizeof(name), "%.20s_db%u", dev->name, index);
	eng->doorbell = rte_ring_create(name, ENG_QP_SLOTS, rte_socket_id(),
					RING_F_SC_DEQ | RING_F_EXACT_SZ);
	snprintf(name, sizeof(name), "%.20s_gy%u", dev->name, index);
	eng->graveyard = rte_ring_create(name, ENG_QP_SLOTS, rte_socket_id(),
					 RING_F_SC_DEQ | RING_F_EXACT_SZ);
	eng->events = eng_events_create(dev, index);
	eng->active = rte_zmalloc("srnic_active", sizeof(eng->active[0]) * ENG_ACTIVE_SLOTS, 0);
	if (eng->redirect == NULL || eng->doorbell == NULL || eng->graveyard == NULL ||
	    eng->events == NULL || eng->active == NULL) {
		rte_ring_free(eng->events);
		rte_ring_free(eng->redirect);
		rte_ring_free(eng->doorbell);
		rte_ring_free(eng->graveyard);
		rte_free(eng->active);
		rte_free(eng);
		return NULL;
	}
	/* a power of two of timer cycles, so that ticks are shifts, not
	 * divisions (tens of cycles each, on every arm) */
	eng->tw.tick_shift = (uint8_t)rte_bsf64(rte_align64prevpow2(
		RTE_MAX(rte_get_timer_hz() / 1000000 * SRNIC_TW_TICK_US, 1ul)));
	eng->tw.cur = rte_get_timer_cycles() >> eng->tw.tick_shift;
	for (i = 0; i < SRNIC_TW_SLOTS; i++)
		TAILQ_INIT(&eng->tw.slot[i]);
	return eng;
}

void
srnic_engine_destroy(struct srnic_engine *eng)
{
	struct rte_mbuf *m;
	struct srnic_qp *qp;

	while (rte_ring_dequeue(eng->redirect, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	while (rte_ring_dequeue(eng->graveyard, (void **)&qp) == 0)
		eng_qp_free(qp);
	rte_ring_free(eng->redirect);
	rte_ring_free(eng->doorbell);
	rte_ring_free(eng->graveyard);
	rte_ring_free(eng->events);
	rte_pktmbuf_free_bulk(eng->tx_buf, eng->tx_len);
	rte_pktmbuf_free_bulk(eng->loop_buf, eng->loop_len);
	rte_free(eng->active);
	rte_free(eng);
}
