/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engines' counters read from the control path: by index for a
 * telemetry or a stats dump, by name summed over a device's engines.
 * Relaxed loads of words only the engines write.
 */
#include <string.h>

#include "rnic.h"
#include "wire_internal.h"

static const char *const stat_names[SRNIC_STAT_COUNT] = {
#define X(id, name) [SRNIC_STAT_##id] = name,
	SRNIC_STATS(X)
#undef X
};

/* ---- counters ---- */

unsigned int
srnic_engine_stats_count(void)
{
	return SRNIC_STAT_COUNT;
}

const char *
srnic_engine_stat_name(unsigned int i)
{
	return i < SRNIC_STAT_COUNT ? stat_names[i] : NULL;
}

unsigned int
srnic_engine_stats_get(const struct srnic_engine *eng, uint64_t *vals, unsigned int n)
{
	unsigned int i;

	n = RTE_MIN(n, (unsigned int)SRNIC_STAT_COUNT);
	for (i = 0; i < n; i++)
		vals[i] = __atomic_load_n(&eng->stats[i], __ATOMIC_RELAXED);
	return n;
}

int64_t
srnic_dev_stat(const struct srnic_dev *dev, const char *name)
{
	unsigned int i;
	uint16_t e;
	int64_t sum = 0;

	for (i = 0; i < SRNIC_STAT_COUNT; i++)
		if (strcmp(stat_names[i], name) == 0)
			break;
	if (i == SRNIC_STAT_COUNT)
		return srnic_dev_port_stat(dev, name); /* the port's watch's, or -1 */
	if (i == SRNIC_STAT_ICRC_FOLD_SHORT) /* counted by lib/wire, not an engine */
		return (int64_t)srnic_icrc_fold_short();
	for (e = 0; e < dev->nb_engines; e++)
		sum += (int64_t)__atomic_load_n(&dev->engines[e]->stats[i], __ATOMIC_RELAXED);
	return sum;
}
