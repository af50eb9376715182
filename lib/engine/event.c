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

#include "eng_internal.h"

static_assert(sizeof(struct srnic_async_event) % 4 == 0, "rte_ring elements are 4-byte multiples");

struct rte_ring *
eng_events_create(const struct srnic_dev *dev, uint16_t index)
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
eng_event(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_qp *qp)
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
eng_event_srq(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_srq *srq)
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
eng_event_cq(struct srnic_engine *eng, enum ibv_event_type type, struct srnic_cq *cq)
{
	struct srnic_async_event ev = {
		.event_type = type,
		.cq = cq,
		.gen = cq->gen,
		.cq_num = cq->cq_num,
	};

	eng_event_post(eng, &ev);
}
