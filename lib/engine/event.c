/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asynchronous events (IBTA 11.6.3, verbs' ibv_get_async_event): what an
 * engine learns about a QP, an SRQ or a CQ outside any completion. Each
 * engine produces into a ring of its own (single producer: the engine; any
 * number of consumers: the application's threads, which never block). A
 * full ring drops the event and counts it; the engine never waits. The
 * device's own ring holds what srnic_get_async_event() finds itself (port
 * events, from the link state).
 *
 * An event carries its object's pointer and incarnation (gen). Before it
 * is handed out, the object is looked up again under the device lock (the
 * lock destroy takes to unpublish it): gone, or another incarnation at the
 * same place, and the pointer is NULL. The check reads nothing of a freed
 * object: only a table entry that still holds the pointer is dereferenced.
 */
#include <unistd.h>

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

static void
eng_event_post(struct srnic_engine *eng, struct srnic_async_event *ev)
{
	uint64_t one = 1;

	if (unlikely(rte_ring_sp_enqueue_elem(eng->events, ev, sizeof(*ev)) != 0)) {
		eng_stat(eng, SRNIC_STAT_ASYNC_EVENT_DROP, 1);
		return;
	}
	eng_stat(eng, SRNIC_STAT_ASYNC_EVENT, 1);
	/* Rare: a syscall is fine. The enqueue comes first, so a waiter that
	 * reads the fd and then drains finds it. */
	if (eng->dev->event_fd >= 0 && write(eng->dev->event_fd, &one, sizeof(one)) < 0)
		eng_stat(eng, SRNIC_STAT_ASYNC_EVENT_FD_ERR, 1);
}

void
srnic_eng_event(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_qp *qp)
{
	struct srnic_async_event ev = {
		.event_type = type,
		.qp_num = qp->qpn,
		.qp = qp,
		.gen = qp->gen,
	};

	eng_event_post(eng, &ev);
}

void
srnic_eng_event_srq(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_srq *srq)
{
	struct srnic_async_event ev = {
		.event_type = type,
		.srq = srq,
		.gen = srq->gen,
		.srq_num = srq->srq_num,
	};

	eng_event_post(eng, &ev);
}

void
srnic_eng_event_cq(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_cq *cq)
{
	struct srnic_async_event ev = {
		.event_type = type,
		.cq = cq,
		.gen = cq->gen,
		.cq_num = cq->cq_num,
	};

	eng_event_post(eng, &ev);
}

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
