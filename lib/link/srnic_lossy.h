/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_LOSSY_H
#define SRNIC_LOSSY_H

/**
 * @file
 * A lossy link for tests and benchmarks: on the receive side of a port it
 * drops, duplicates, reorders (holds a packet back and releases it after
 * later ones), corrupts one byte of, and delays packets at given rates.
 * Attached to both ports of a pair it makes each direction lossy on its
 * own. Decisions come from a seeded generator in packet order: the same
 * seed and the same traffic give the same faults, so a failure replays.
 */

#include <stdint.h>

#include <rte_mbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What to do with one packet. */
enum srnic_lossy_action {
	SRNIC_LOSSY_PASS,
	SRNIC_LOSSY_DROP,
	SRNIC_LOSSY_DUP,
	SRNIC_LOSSY_REORDER,
	SRNIC_LOSSY_CORRUPT,
	SRNIC_LOSSY_DELAY,
	SRNIC_LOSSY_ACTION_COUNT
};

/**
 * Targeted faults: called for every packet before the random ones; return
 * an action, or SRNIC_LOSSY_PASS to let the rates decide. Runs on the
 * receiving lcore.
 */
typedef enum srnic_lossy_action (*srnic_lossy_filter)(const struct rte_mbuf *m, void *arg);

struct srnic_lossy_conf {
	uint64_t seed;
	double drop;               /**< probability per packet, 0..1 */
	double dup;
	double reorder;
	double corrupt;
	double delay;
	uint32_t reorder_after;    /**< a reordered packet comes after this many others (default 3) */
	uint32_t delay_us;         /**< a delayed packet is held this long (default 100) */
	/** The rates apply to each RX queue's first this many packets only,
	 * none after (0: to every packet): faults early in a run, a clean end. */
	uint64_t rates_first;
	srnic_lossy_filter filter; /**< NULL: rates only */
	void *filter_arg;
	/** For copies: duplicates, corrupted packets, and held packets whose
	 * bytes are not their own (zero-copy segments, clones). NULL: no
	 * duplicates nor corruption, and such packets pass instead of being
	 * held (counted in hold_nocopy). */
	struct rte_mempool *pool;
};

/** Counters of what the link did, by action; [SRNIC_LOSSY_PASS] counts packets seen. */
struct srnic_lossy_stats {
	uint64_t n[SRNIC_LOSSY_ACTION_COUNT];
	uint64_t held_copies;      /**< held packets copied (their bytes were the sender's) */
	uint64_t hold_nocopy;      /**< not held: no copy to be had (no pool, pool empty) */
};

struct srnic_lossy;

/**
 * Make every RX queue of port_id lossy (the port must be configured).
 * Returns NULL and sets rte_errno (EINVAL, ENOMEM) on failure.
 */
struct srnic_lossy *srnic_lossy_attach(uint16_t port_id, const struct srnic_lossy_conf *conf);
/** Remove it (no lcore may poll the port meanwhile); held packets are freed.
 * Returns 0, or -EBUSY if DPDK kept a queue's callback (then l stays valid
 * and a later call retries). Counters are per RX queue, summed on read. */
int srnic_lossy_detach(struct srnic_lossy *l);
void srnic_lossy_get_stats(const struct srnic_lossy *l, struct srnic_lossy_stats *st);
/** Name of an action, e.g. "drop". */
const char *srnic_lossy_action_name(enum srnic_lossy_action a);

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_LOSSY_H */
