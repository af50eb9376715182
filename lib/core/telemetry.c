/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counters through DPDK telemetry, for applications that embed srnic and
 * for dpdk-telemetry.py:
 *   /srnic/devs             the devices
 *   /srnic/stats,<device>   every counter of the device, summed over its engines
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <rte_spinlock.h>
#include <rte_telemetry.h>

#include "rnic.h"
#include "wire_internal.h"

#define TEL_MAX_DEVS 16

static rte_spinlock_t tel_lock = RTE_SPINLOCK_INITIALIZER;
static struct srnic_dev *tel_devs[TEL_MAX_DEVS];

static int tel_devs_cb(const char *cmd, const char *params, struct rte_tel_data *d);
static int tel_stats_cb(const char *cmd, const char *params, struct rte_tel_data *d);
static int tel_info_cb(const char *cmd, const char *params, struct rte_tel_data *d);

void
srnic_telemetry_add(struct srnic_dev *dev)
{
	static bool registered;
	unsigned int i;

	rte_spinlock_lock(&tel_lock);
	/* At the first device, not at load: a process can hold two copies of
	 * this file (a DPDK program of srnic's, and srnic's libibverbs.so.1
	 * that EAL's mlx PMD plugins pull in when it comes first on the
	 * library path), and DPDK keeps the first registration of a name:
	 * the copy that makes devices must be the one that answers. */
	if (!registered) {
		rte_telemetry_register_cmd("/srnic/devs", tel_devs_cb,
					   "Returns the srnic devices.");
		rte_telemetry_register_cmd("/srnic/stats", tel_stats_cb,
					   "Returns a device's counters. Parameters: device name");
		rte_telemetry_register_cmd("/srnic/info", tel_info_cb,
					   "Returns a device's engines and ICRC path. Parameters: device name");
		registered = true;
	}
	for (i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i] == NULL) {
			tel_devs[i] = dev;
			break;
		}
	rte_spinlock_unlock(&tel_lock);
}

void
srnic_telemetry_del(struct srnic_dev *dev)
{
	unsigned int i;

	rte_spinlock_lock(&tel_lock);
	for (i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i] == dev)
			tel_devs[i] = NULL;
	rte_spinlock_unlock(&tel_lock);
}

static int
tel_devs_cb(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	rte_spinlock_lock(&tel_lock);
	for (i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i] != NULL)
			rte_tel_data_add_array_string(d, tel_devs[i]->name);
	rte_spinlock_unlock(&tel_lock);
	return 0;
}

static int
tel_stats_cb(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct srnic_dev *dev = NULL;
	unsigned int i;
	int rc = -EINVAL;

	RTE_SET_USED(cmd);
	if (params == NULL)
		return -EINVAL;
	rte_spinlock_lock(&tel_lock);
	for (i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i] != NULL && strcmp(tel_devs[i]->name, params) == 0)
			dev = tel_devs[i];
	if (dev != NULL) {
		rte_tel_data_start_dict(d);
		for (i = 0; i < srnic_engine_stats_count(); i++)
			rte_tel_data_add_dict_u64(d, srnic_engine_stat_name(i),
						  (uint64_t)srnic_dev_stat(dev, srnic_engine_stat_name(i)));
		rc = 0;
	}
	rte_spinlock_unlock(&tel_lock);
	return rc;
}

/* What the device runs, not counted: its engines, and the ICRC path for
 * small flat packets start-up chose (lib/wire) and why. */
static int
tel_info_cb(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct srnic_dev *dev = NULL;
	unsigned int i;
	int rc = -EINVAL;

	RTE_SET_USED(cmd);
	if (params == NULL)
		return -EINVAL;
	rte_spinlock_lock(&tel_lock);
	for (i = 0; i < TEL_MAX_DEVS; i++)
		if (tel_devs[i] != NULL && strcmp(tel_devs[i]->name, params) == 0)
			dev = tel_devs[i];
	if (dev != NULL) {
		rte_tel_data_start_dict(d);
		rte_tel_data_add_dict_string(d, "name", dev->name);
		rte_tel_data_add_dict_u64(d, "engines", dev->nb_engines);
		rte_tel_data_add_dict_string(d, "icrc_fold",
					     srnic_icrc_fold_name(srnic_icrc_fold_get()));
		rte_tel_data_add_dict_string(d, "icrc_fold_why", srnic_icrc_fold_why());
		rc = 0;
	}
	rte_spinlock_unlock(&tel_lock);
	return rc;
}
