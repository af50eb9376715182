/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Timers (rxe's timer code): the IBTA timer encodings (RNR NAK, local ACK
 * timeout) and the engine's timer wheel, one slot per tick of
 * SRNIC_TW_TICK_US, that wakes a QP at its earliest deadline (ACK timer,
 * RNR wait, neighbour retry). The loop advances it once per poll.
 */
#include <rte_cycles.h>

#include "eng_internal.h"

/* RNR NAK timer values in units of 10 us (IBTA table 45); code 0 is 655.36 ms. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576,
	32768, 49152,
};

uint64_t
eng_rnr_timer_cycles(uint8_t code)
{
	return rte_get_timer_hz() / 100000 * rnr_timer_10us[code & 31];
}

uint64_t
srnic_ack_timeout_cycles(uint8_t code)
{
	if (code == 0)
		return 0;
	/* 4096 ns << code, in cycles; no overflow up to code 31 */
	return rte_get_timer_hz() / 1000000 * ((uint64_t)4096 << (code & 31)) / 1000;
}

static inline uint64_t
qp_deadline(const struct srnic_qp *qp)
{
	uint64_t d = 0;

	if (qp->req.timer_at != 0)
		d = qp->req.timer_at;
	if (qp->req.wait_until != 0 && (d == 0 || qp->req.wait_until < d))
		d = qp->req.wait_until;
	if (!qp->route_ok && (d == 0 || qp->arp_next_tsc < d))
		d = qp->arp_next_tsc;
	return d;
}

static void
tw_insert(struct srnic_twheel *tw, struct srnic_qp *qp, uint64_t tick)
{
	if (tick < tw->cur)
		tick = tw->cur;
	if (tick - tw->cur >= SRNIC_TW_SLOTS)
		tick = tw->cur + SRNIC_TW_SLOTS - 1; /* comes back a turn later */
	TAILQ_INSERT_TAIL(&tw->slot[tick & (SRNIC_TW_SLOTS - 1)], qp, tw_link);
	qp->in_wheel = 1;
	qp->tw_tick = tick;
	tw->nb_armed++;
}

void
eng_timer_remove(struct srnic_twheel *tw, struct srnic_qp *qp)
{
	TAILQ_REMOVE(&tw->slot[qp->tw_tick & (SRNIC_TW_SLOTS - 1)], qp, tw_link);
	qp->in_wheel = 0;
	tw->nb_armed--;
}

void
eng_timer_arm(struct srnic_engine *eng, struct srnic_qp *qp, uint64_t deadline)
{
	if (deadline == 0)
		return;
	/* Re-armed on every packet sent: the common case is one shift. */
	if (qp->in_wheel) {
		if (qp->tw_tick << eng->tw.tick_shift <= deadline)
			return; /* wakes no later than asked: looked at again then */
		eng_timer_remove(&eng->tw, qp);
	}
	tw_insert(&eng->tw, qp, deadline >> eng->tw.tick_shift);
}

/* Wake the QPs whose deadline has come; put back those whose moved. */
void
eng_timer_advance(struct srnic_engine *eng)
{
	struct srnic_twheel *tw = &eng->tw;
	uint64_t now_tick = eng->now >> tw->tick_shift;
	unsigned int steps = 0;

	while (tw->cur <= now_tick && steps < SRNIC_TW_SLOTS) {
		struct srnic_qp_list *slot = &tw->slot[tw->cur & (SRNIC_TW_SLOTS - 1)];
		struct srnic_qp *qp;

		while ((qp = TAILQ_FIRST(slot)) != NULL) {
			uint64_t d;

			eng_timer_remove(tw, qp);
			d = qp_deadline(qp);
			if (d == 0)
				continue;
			if (d <= eng->now)
				eng_activate(eng, qp);
			else
				tw_insert(tw, qp, RTE_MAX(d >> tw->tick_shift, tw->cur + 1));
		}
		tw->cur++;
		steps++;
	}
	if (tw->cur <= now_tick)
		tw->cur = now_tick; /* idle for more than a turn: every slot was seen */
}

unsigned int
srnic_engine_waiting(const struct srnic_engine *eng)
{
	/* the engine's plain stores, a relaxed load: a hint (srnic.h) */
	return eng == NULL ? 0 : __atomic_load_n(&eng->tw.nb_armed, __ATOMIC_RELAXED);
}
