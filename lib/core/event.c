/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events, the consumer side (control path, any thread): the
 * engines produce into their rings (lib/engine/event.c); here the
 * application takes them, port events found from the link state, each
 * object looked up again under the device lock before it is handed out
 * (gone or another incarnation: a NULL pointer).
 */
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "rnic.h"

/* Port events: compare the link with what we saw last (control path, any
 * thread: a trylock, the loser skips the check). */
static void
dev_link_check(struct srnic_dev *dev)
{
	struct rte_eth_link link;
	uint64_t now = rte_get_timer_cycles();
	uint8_t up;

	if (!rte_spinlock_trylock(&dev->lock))
		return;
	if (now < dev->link_check_tsc) {
		rte_spinlock_unlock(&dev->lock);
		return;
	}
	dev->link_check_tsc = now + rte_get_timer_hz() / 1000 * SRNIC_LINK_CHECK_MS;
	if (rte_eth_link_get_nowait(dev->port_id, &link) == 0) {
		up = link.link_status == RTE_ETH_LINK_UP;
		if (up != dev->link_up) {
			struct srnic_async_event ev = {
				.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR,
				.port_num = 1,
			};

			dev->link_up = up;
			if (rte_ring_mp_enqueue_elem(dev->events, &ev, sizeof(ev)) != 0)
				SRNIC_LOG(WARNING, "%s: port event lost: ring full", dev->name);
		}
	}
	rte_spinlock_unlock(&dev->lock);
}

/* Under dev->lock: is the event's object still the one it names? */
static void
event_check_obj(struct srnic_dev *dev, struct srnic_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct srnic_qp *qp = srnic_dev_qp(dev, ev->qp_num);

		if (qp != ev->qp || qp == NULL || qp->gen != ev->gen)
			ev->qp = NULL;
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		if (ev->srq_num >= SRNIC_MAX_SRQ || dev->srq_tbl[ev->srq_num] != ev->srq ||
		    ev->srq->gen != ev->gen)
			ev->srq = NULL;
		break;
	case IBV_EVENT_CQ_ERR:
		if (ev->cq_num >= SRNIC_MAX_CQ || dev->cq_tbl[ev->cq_num] != ev->cq ||
		    ev->cq->gen != ev->gen)
			ev->cq = NULL;
		break;
	default:
		break;
	}
}

int
srnic_get_async_event(struct srnic_dev *dev, struct srnic_async_event *ev)
{
	uint16_t i;

	if (dev == NULL || ev == NULL)
		return -EINVAL;
	dev_link_check(dev);
	if (rte_ring_mc_dequeue_elem(dev->events, ev, sizeof(*ev)) == 0)
		return 0;
	for (i = 0; i < dev->nb_engines; i++) {
		if (rte_ring_mc_dequeue_elem(dev->engines[i]->events, ev, sizeof(*ev)) != 0)
			continue;
		rte_spinlock_lock(&dev->lock);
		event_check_obj(dev, ev);
		rte_spinlock_unlock(&dev->lock);
		return 0;
	}
	return -EAGAIN;
}

int
srnic_dev_event_fd(const struct srnic_dev *dev)
{
	if (dev == NULL) {
		rte_errno = EINVAL;
		return -1;
	}
	return dev->event_fd;
}
