/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A completion channel's queue of events (struct sv_channel): pushed by
 * whoever polls the engine (an armed CQ's completion), taken by
 * ibv_get_cq_event(), purged of a destroyed CQ's.
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "verbs.h"

/* Take one count off the eventfd: under ch->lock it is the queue's length,
 * so it is there and the read does not block. */
static void
channel_take_count(struct sv_channel *ch)
{
	uint64_t one;
	ssize_t rc = read(ch->ch.fd, &one, sizeof(one));

	(void)rc;
}

void
sv_channel_push(struct sv_cq *cq)
{
	struct sv_channel *ch = sv_channel(cq->ibcq.channel);
	uint64_t one = 1;

	pthread_mutex_lock(&ch->lock);
	if (ch->head - ch->tail < SV_CHANNEL_EVENTS) {
		ssize_t rc;

		ch->ev[ch->head++ % SV_CHANNEL_EVENTS] = cq;
		rc = write(ch->ch.fd, &one, sizeof(one));
		(void)rc;
	} else if (ch->dropped++ == 0) {
		sv_log("completion channel fd %d: %u events unread, more are dropped (the "
		       "program arms its CQs without calling ibv_get_cq_event)",
		       ch->ch.fd, SV_CHANNEL_EVENTS);
	}
	pthread_mutex_unlock(&ch->lock);
}

/* A destroyed CQ's events leave its channel (none is handed out after). */
void
sv_channel_forget(struct sv_channel *ch, const struct sv_cq *cq)
{
	uint32_t k, keep;

	pthread_mutex_lock(&ch->lock);
	for (k = keep = ch->tail; k != ch->head; k++) {
		struct sv_cq *c = ch->ev[k % SV_CHANNEL_EVENTS];

		if (c == cq)
			channel_take_count(ch);
		else
			ch->ev[keep++ % SV_CHANNEL_EVENTS] = c;
	}
	ch->head = keep;
	pthread_mutex_unlock(&ch->lock);
}

/* The oldest event, or NULL; counted as reported on its CQ under the
 * channel's lock, so a destroy that found the queue without it waits for
 * its ack. */
struct sv_cq *
sv_channel_pop(struct sv_channel *ch)
{
	struct sv_cq *cq = NULL;

	pthread_mutex_lock(&ch->lock);
	if (ch->tail != ch->head) {
		cq = ch->ev[ch->tail++ % SV_CHANNEL_EVENTS];
		channel_take_count(ch);
		pthread_mutex_lock(&cq->ibcq.mutex);
		cq->comp_events_reported++;
		pthread_mutex_unlock(&cq->ibcq.mutex);
	}
	pthread_mutex_unlock(&ch->lock);
	return cq;
}

