/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events (IBTA 11.6.3, verbs' ibv_get_async_event): what an
 * engine learns about a QP outside any completion. Each engine produces
 * into a ring of its own (single producer: the engine; any number of
 * consumers: the application's threads, which never block). A full ring
 * drops the event and counts it; the engine never waits.
 */
#include <rte_errno.h>

#include "engine.h"

static_assert(sizeof(struct srnic_async_event) % 4 == 0, "rte_ring elements are 4-byte multiples");

struct rte_ring *
srnic_eng_events_create(const struct srnic_dev *dev, uint16_t index)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "%.20s_ev%u", dev->name, index);
	return rte_ring_create_elem(name, sizeof(struct srnic_async_event), SRNIC_ASYNC_EVENT_RING,
				    rte_socket_id(), RING_F_SP_ENQ | RING_F_EXACT_SZ);
}

void
srnic_eng_event(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_qp *qp)
{
	struct srnic_async_event ev = {
		.event_type = type,
		.qp_num = qp->qpn,
		.qp = qp,
	};

	if (unlikely(rte_ring_sp_enqueue_elem(eng->events, &ev, sizeof(ev)) != 0)) {
		eng_stat(eng, SRNIC_STAT_ASYNC_EVENT_DROP, 1);
		return;
	}
	eng_stat(eng, SRNIC_STAT_ASYNC_EVENT, 1);
}

int
srnic_get_async_event(struct srnic_dev *dev, struct srnic_async_event *ev)
{
	uint16_t i;

	if (dev == NULL || ev == NULL)
		return -EINVAL;
	for (i = 0; i < dev->nb_engines; i++)
		if (rte_ring_mc_dequeue_elem(dev->engines[i]->events, ev, sizeof(*ev)) == 0)
			return 0;
	return -EAGAIN;
}
