/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lossy link, as an RX callback: it sees each burst after the PMD and
 * may return up to max_pkts packets, so it can drop, add (duplicates,
 * packets released from its hold queue) and replace (corrupted copies).
 *
 * A packet the link holds (reordered, delayed, or kept for the next burst)
 * is held with bytes of its own, as a switch's buffer holds a frame: a
 * zero-copy packet's payload is the sender's registered memory, which the
 * sender may rewrite once the packet is acknowledged (a retransmission
 * still in the link after the original's ACK), and the held packet must
 * then still carry what was sent, not fail its ICRC. Such packets are
 * copied into mbufs from conf.pool (direct, no external buffer) when
 * held; packets that pass straight through stay zero-copy.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "srnic_lossy.h"

#define LOSSY_MAX_QUEUES 16
#define LOSSY_HOLD 256             /* packets held back per queue */
#define LOSSY_REORDER_AFTER 3
#define LOSSY_DELAY_US 100

struct held {
	struct rte_mbuf *m;
	uint64_t release_tsc;         /* delay: release at this time */
	uint64_t release_seq;         /* reorder: release after this many packets */
};

struct lossy_q {
	struct srnic_lossy *l;
	const struct rte_eth_rxtx_callback *cb;
	uint64_t rng;
	uint64_t seq;                 /* packets seen on this queue */
	struct srnic_lossy_stats st;  /* this queue's: each RX queue has its own lcore */
	uint32_t nb_held;
	struct held held[LOSSY_HOLD];
};

struct srnic_lossy {
	uint16_t port_id;
	uint16_t nb_queues;
	struct srnic_lossy_conf conf;
	uint64_t delay_tsc;
	struct lossy_q q[LOSSY_MAX_QUEUES];
};

static const char *const action_names[SRNIC_LOSSY_ACTION_COUNT] = {
	[SRNIC_LOSSY_PASS] = "seen", [SRNIC_LOSSY_DROP] = "drop", [SRNIC_LOSSY_DUP] = "dup",
	[SRNIC_LOSSY_REORDER] = "reorder", [SRNIC_LOSSY_CORRUPT] = "corrupt",
	[SRNIC_LOSSY_DELAY] = "delay",
};

const char *
srnic_lossy_action_name(enum srnic_lossy_action a)
{
	return (unsigned int)a < SRNIC_LOSSY_ACTION_COUNT ? action_names[a] : "unknown";
}

/* xorshift64*: small, fast, reproducible. */
static inline double
rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return (double)((x * 0x2545F4914F6CDD1Dull) >> 11) / (double)(1ull << 53);
}

static enum srnic_lossy_action
decide(struct srnic_lossy *l, struct lossy_q *q, const struct rte_mbuf *m)
{
	const struct srnic_lossy_conf *c = &l->conf;
	enum srnic_lossy_action a = SRNIC_LOSSY_PASS;
	double r;

	if (c->filter != NULL)
		a = c->filter(m, c->filter_arg);
	if (a != SRNIC_LOSSY_PASS || (c->rates_first != 0 && q->seq > c->rates_first))
		return a;
	r = rng_next(&q->rng);
	if (r < c->drop)
		return SRNIC_LOSSY_DROP;
	r -= c->drop;
	if (r < c->dup)
		return SRNIC_LOSSY_DUP;
	r -= c->dup;
	if (r < c->reorder)
		return SRNIC_LOSSY_REORDER;
	r -= c->reorder;
	if (r < c->corrupt)
		return SRNIC_LOSSY_CORRUPT;
	r -= c->corrupt;
	if (r < c->delay)
		return SRNIC_LOSSY_DELAY;
	return SRNIC_LOSSY_PASS;
}

/* Does m own its bytes: every segment direct (no external buffer, not a
 * clone) and referenced by m alone? */
static bool
owns_bytes(const struct rte_mbuf *m)
{
	for (; m != NULL; m = m->next)
		if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1)
			return false;
	return true;
}

/* Keep m (or a copy of its bytes, m then freed) until tsc or the queue's
 * seq-th packet. False if it cannot be kept (hold queue full, or a copy
 * needed and none to be had): m is untouched and the caller's. */
static bool
hold(struct srnic_lossy *l, struct lossy_q *q, struct rte_mbuf *m, uint64_t tsc, uint64_t seq)
{
	if (q->nb_held == LOSSY_HOLD)
		return false;
	if (!owns_bytes(m)) {
		struct rte_mbuf *c = l->conf.pool != NULL ?
				     rte_pktmbuf_copy(m, l->conf.pool, 0, UINT32_MAX) : NULL;

		if (c == NULL) {
			q->st.hold_nocopy++;
			return false;
		}
		q->st.held_copies++;
		rte_pktmbuf_free(m);
		m = c;
	}
	q->held[q->nb_held].m = m;
	q->held[q->nb_held].release_tsc = tsc;
	q->held[q->nb_held].release_seq = seq;
	q->nb_held++;
	return true;
}

static uint16_t
lossy_rx(uint16_t port_id, uint16_t queue, struct rte_mbuf **pkts, uint16_t nb, uint16_t max,
	 void *arg)
{
	struct lossy_q *q = arg;
	struct srnic_lossy *l = q->l;
	struct rte_mbuf *in[nb > 0 ? nb : 1];
	uint64_t now = rte_rdtsc();
	uint16_t out = 0, i;
	uint32_t h;

	RTE_SET_USED(port_id);
	RTE_SET_USED(queue);
	memcpy(in, pkts, nb * sizeof(pkts[0]));
	/* Held packets whose time or turn has come go first. */
	for (h = 0; h < q->nb_held && out < max;) {
		struct held *e = &q->held[h];

		if ((e->release_tsc != 0 && now >= e->release_tsc) ||
		    (e->release_tsc == 0 && q->seq >= e->release_seq)) {
			pkts[out++] = e->m;
			*e = q->held[--q->nb_held];
		} else {
			h++;
		}
	}
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = in[i], *c;
		enum srnic_lossy_action a;

		q->seq++;
		q->st.n[SRNIC_LOSSY_PASS]++;
		if (out >= max) {
			/* The burst is full (duplicates, released packets): keep
			 * the rest for the next call rather than lose them. */
			if (!hold(l, q, m, 0, 0)) {
				rte_pktmbuf_free(m); /* a full buffer drops, as a switch's */
				q->st.n[SRNIC_LOSSY_DROP]++;
			}
			continue;
		}
		a = decide(l, q, m);
		switch (a) {
		case SRNIC_LOSSY_DROP:
			rte_pktmbuf_free(m);
			break;
		case SRNIC_LOSSY_DUP:
			pkts[out++] = m;
			c = l->conf.pool != NULL ? rte_pktmbuf_copy(m, l->conf.pool, 0, UINT32_MAX) : NULL;
			if (c != NULL && out < max)
				pkts[out++] = c;
			else if (c != NULL && !hold(l, q, c, 0, 0))
				rte_pktmbuf_free(c);
			break;
		case SRNIC_LOSSY_REORDER:
			if (!hold(l, q, m, 0, q->seq + l->conf.reorder_after)) {
				pkts[out++] = m; /* not held: not reordered either */
				continue;
			}
			break;
		case SRNIC_LOSSY_DELAY:
			if (!hold(l, q, m, now + l->delay_tsc, 0)) {
				pkts[out++] = m;
				continue;
			}
			break;
		case SRNIC_LOSSY_CORRUPT:
			/* Corrupt a copy: the original may be zero-copy memory. */
			c = l->conf.pool != NULL ? rte_pktmbuf_copy(m, l->conf.pool, 0, UINT32_MAX) : NULL;
			rte_pktmbuf_free(m);
			if (c == NULL)
				break; /* counted as corrupted: it is lost either way */
			if (rte_pktmbuf_pkt_len(c) > RTE_ETHER_HDR_LEN) {
				uint32_t off = RTE_ETHER_HDR_LEN +
					       (uint32_t)(rng_next(&q->rng) *
							  (rte_pktmbuf_pkt_len(c) - RTE_ETHER_HDR_LEN));
				struct rte_mbuf *s = c;

				while (s != NULL && off >= s->data_len) {
					off -= s->data_len;
					s = s->next;
				}
				if (s != NULL)
					*rte_pktmbuf_mtod_offset(s, uint8_t *, off) ^= 0x5a;
			}
			pkts[out++] = c;
			break;
		default:
			pkts[out++] = m;
			break;
		}
		if (a != SRNIC_LOSSY_PASS)
			q->st.n[a]++;
	}
	return out;
}

struct srnic_lossy *
srnic_lossy_attach(uint16_t port_id, const struct srnic_lossy_conf *conf)
{
	struct rte_eth_dev_info info;
	struct srnic_lossy *l;
	uint16_t i;

	if (conf == NULL || rte_eth_dev_info_get(port_id, &info) != 0 ||
	    info.nb_rx_queues == 0 || info.nb_rx_queues > LOSSY_MAX_QUEUES) {
		rte_errno = EINVAL;
		return NULL;
	}
	l = rte_zmalloc("srnic_lossy", sizeof(*l), RTE_CACHE_LINE_SIZE);
	if (l == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	l->port_id = port_id;
	l->nb_queues = info.nb_rx_queues;
	l->conf = *conf;
	if (l->conf.reorder_after == 0)
		l->conf.reorder_after = LOSSY_REORDER_AFTER;
	if (l->conf.delay_us == 0)
		l->conf.delay_us = LOSSY_DELAY_US;
	l->delay_tsc = rte_get_tsc_hz() / 1000000 * l->conf.delay_us;
	for (i = 0; i < l->nb_queues; i++) {
		struct lossy_q *q = &l->q[i];

		q->l = l;
		q->rng = (conf->seed ^ (0x9E3779B97F4A7C15ull * (i + 1 + port_id * 131ull))) | 1;
		q->cb = rte_eth_add_rx_callback(port_id, i, lossy_rx, q);
		if (q->cb == NULL) {
			while (i-- > 0)
				rte_eth_remove_rx_callback(port_id, i, l->q[i].cb);
			rte_free(l);
			rte_errno = EINVAL;
			return NULL;
		}
	}
	return l;
}

int
srnic_lossy_detach(struct srnic_lossy *l)
{
	uint16_t i;
	uint32_t h;
	int rc = 0;

	if (l == NULL)
		return -EINVAL;
	for (i = 0; i < l->nb_queues; i++) {
		if (l->q[i].cb == NULL)
			continue; /* removed by an earlier call */
		if (rte_eth_remove_rx_callback(l->port_id, i, l->q[i].cb) != 0) {
			rc = -EBUSY; /* still linked: it and l must stay */
			continue;
		}
		for (h = 0; h < l->q[i].nb_held; h++)
			rte_pktmbuf_free(l->q[i].held[h].m);
		l->q[i].nb_held = 0;
		/* unlinked but not freed by DPDK: no lcore polls the port now
		 * (the caller's promise), so it can go */
		rte_free((void *)(uintptr_t)l->q[i].cb);
		l->q[i].cb = NULL;
	}
	if (rc == 0)
		rte_free(l);
	return rc;
}

void
srnic_lossy_get_stats(const struct srnic_lossy *l, struct srnic_lossy_stats *st)
{
	uint16_t i;
	unsigned int a;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < l->nb_queues; i++) {
		for (a = 0; a < SRNIC_LOSSY_ACTION_COUNT; a++)
			st->n[a] += l->q[i].st.n[a];
		st->held_copies += l->q[i].st.held_copies;
		st->hold_nocopy += l->q[i].st.hold_nocopy;
	}
}
