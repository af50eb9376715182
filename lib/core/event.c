/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events, the consumer side (control path, any thread): the
 * engines produce into their rings (lib/engine/event.c); here the
 * application takes them, port events from the port's watch (port.c), each
 * object looked up again under the device lock before it is handed out
 * (gone or another incarnation: a NULL pointer).
 */
#include <unistd.h>

#include <rte_errno.h>

#include "rnic.h"

/* Under dev->lock: is the event's object still the one it names? */
static void
event_check_obj(struct srnic_dev *dev, struct srnic_async_event *ev)
{
	ev->user = NULL;
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
		else
			ev->user = qp->user;
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		if (ev->srq_num >= SRNIC_MAX_SRQ || dev->srq_tbl[ev->srq_num] != ev->srq ||
		    ev->srq->gen != ev->gen)
			ev->srq = NULL;
		else
			ev->user = ev->srq->user;
		break;
	case IBV_EVENT_CQ_ERR:
		if (ev->cq_num >= SRNIC_MAX_CQ || dev->cq_tbl[ev->cq_num] != ev->cq ||
		    ev->cq->gen != ev->gen)
			ev->cq = NULL;
		else
			ev->user = ev->cq->user;
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
	srnic_dev_port_watch(dev); /* port events, and QP_FATAL for an MTU change */
	for (i = 0; i <= dev->nb_engines; i++) {
		struct rte_ring *r = i == 0 ? dev->events : dev->engines[i - 1]->events;

		if (rte_ring_mc_dequeue_elem(r, ev, sizeof(*ev)) != 0)
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
