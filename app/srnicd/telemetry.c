/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnicd through DPDK telemetry (dpdk-telemetry.py -f srnicd-PID, or any
 * client of /var/run/dpdk/srnicd-PID/dpdk_telemetry.v2): what `srnicd
 * --status` prints, as data. As DPDK's own /ethdev/list and
 * /ethdev/info,<id>:
 *   /srnicd/info            the daemon, its first device (srnic0), port and
 *                           link (its keys as with one device), "devices"
 *                           (how many), totals
 *   /srnicd/devices         every device: {name: {index, port, ip, link, mtu,
 *                           cm_tx_req, ...: its CM's counters}}
 *   /srnicd/sessions        the live sessions' ids
 *   /srnicd/session,<id>    one session: pid, uid, program, what it holds
 * lib/core's /srnic/devs and /srnic/stats,srnic0 give the engine's
 * counters beside them.
 *
 * The callbacks run on DPDK's telemetry thread. What they read belongs to
 * the control thread, so they take the control lock, which the control
 * thread holds while it serves its events (never while it waits in
 * epoll_wait, nor while it waits for an MR's packets in flight: a
 * DEREG_MR's, a REREG_MR's old object's, the retired sweep's, up to
 * SRND_DEREG_TIMEOUT_US each: srnd_ctl_wait_begin()): a telemetry request
 * waits at most one round of the control thread's work, its waits apart.
 * Nothing of the data path takes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_telemetry.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnicd.h"

static struct srnd *tel_d;      /* under the control lock; NULL: not serving */

void
srnd_telemetry_set(struct srnd *d)
{
	srnd_ctl_lock();
	tel_d = d;
	srnd_ctl_unlock();
}

static void
info_fill(struct srnd *d, struct rte_tel_data *t)
{
	const struct srnd_counts *c = srnd_counts();
	struct ibv_port_attr pa;

	memset(&pa, 0, sizeof(pa));
	srnic_dev_query_port(d->dev[0].sdev, &pa);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_int(t, "pid", (int)getpid());
	rte_tel_data_add_dict_string(t, "socket", d->sock_path);
	rte_tel_data_add_dict_u64(t, "devices", d->nb_devs);
	rte_tel_data_add_dict_string(t, "device", d->dev[0].name);
	rte_tel_data_add_dict_string(t, "port", d->dev[0].devargs);
	rte_tel_data_add_dict_string(t, "ip", d->dev[0].ip);
	rte_tel_data_add_dict_string(t, "link", srnd_port_state_name(&pa));
	rte_tel_data_add_dict_u64(t, "mtu", pa.active_mtu == IBV_MTU_4096 ? 4096 :
				  128u << pa.active_mtu);
	rte_tel_data_add_dict_u64(t, "engine_polls", atomic_load(&d->eng_polls));
	rte_tel_data_add_dict_u64(t, "engine_naps", atomic_load(&d->eng_naps));
	rte_tel_data_add_dict_u64(t, "engine_waiting_naps", atomic_load(&d->eng_waiting_naps));
	/* the engine's lcore id: a worker lcore's, its thread's once registered;
	 * RTE_MAX_LCORE or more: none (yet) */
	rte_tel_data_add_dict_u64(t, "engine_lcore", d->eng_lcore < RTE_MAX_LCORE ? d->eng_lcore :
				  atomic_load(&d->eng_thread_lcore));
	rte_tel_data_add_dict_u64(t, "engine_yields", atomic_load(&d->eng_yields));
	rte_tel_data_add_dict_u64(t, "engine_pollers_woken", atomic_load(&d->eng_poll_wakes));
	rte_tel_data_add_dict_u64(t, "engine_handoffs", atomic_load(&d->eng_handoffs));
	rte_tel_data_add_dict_u64(t, "engine_wakes_deferred", atomic_load(&d->eng_wakes_deferred));
	rte_tel_data_add_dict_u64(t, "engine_pollers_none", atomic_load(&d->eng_poll_none));
	rte_tel_data_add_dict_u64(t, "engine_wakes_bounded", atomic_load(&d->eng_wakes_bounded));
	rte_tel_data_add_dict_u64(t, "engine_wakes_mixed", atomic_load(&d->eng_wakes_mixed));
	rte_tel_data_add_dict_u64(t, "engine_sq_posts", atomic_load(&d->eng_sq_posts));
	rte_tel_data_add_dict_u64(t, "engine_sq_full", atomic_load(&d->eng_sq_full));
	rte_tel_data_add_dict_u64(t, "engine_ring_flushed", atomic_load(&d->eng_ring_flushed));
	rte_tel_data_add_dict_u64(t, "cpu_us", srnd_cpu_us() - d->ready_cpu_us);
	rte_tel_data_add_dict_u64(t, "wall_us", srnd_wall_us() - d->ready_wall_us);
	rte_tel_data_add_dict_u64(t, "sessions", srnd_sessions_count());
	rte_tel_data_add_dict_u64(t, "closed_bad", srnd_sessions_closed_bad());
	rte_tel_data_add_dict_u64(t, "pds", c->pds);
	rte_tel_data_add_dict_u64(t, "cqs", c->cqs);
	rte_tel_data_add_dict_u64(t, "qps", atomic_load(&c->qps));
	rte_tel_data_add_dict_u64(t, "mrs", c->mrs);
	rte_tel_data_add_dict_u64(t, "mr_bytes", c->mr_bytes);
	rte_tel_data_add_dict_u64(t, "shm_bytes", c->shm_bytes);
	rte_tel_data_add_dict_u64(t, "ahs", c->ahs);
	rte_tel_data_add_dict_u64(t, "srqs", c->srqs);
	rte_tel_data_add_dict_u64(t, "mws", c->mws);
	rte_tel_data_add_dict_u64(t, "cm_ids", srnd_cm_ids(NULL));
	rte_tel_data_add_dict_u64(t, "bad_ring", atomic_load(&c->bad_ring));
	rte_tel_data_add_dict_u64(t, "async_events", c->async_events);
	rte_tel_data_add_dict_u64(t, "async_drop", c->async_drop);
	rte_tel_data_add_dict_u64(t, "wake_full", atomic_load(&c->wake_full));
	rte_tel_data_add_dict_u64(t, "wake_closed", atomic_load(&c->wake_closed));
	rte_tel_data_add_dict_u64(t, "mrs_elsewhere", c->mrs_elsewhere);
	rte_tel_data_add_dict_u64(t, "mrs_dereg_waiting", atomic_load(&c->mrs_dereg_waiting));
	rte_tel_data_add_dict_u64(t, "mrs_retired", c->mrs_retired);
	rte_tel_data_add_dict_u64(t, "mrs_dereg_failed", c->mrs_dereg_failed);
	rte_tel_data_add_dict_u64(t, "dev_mixed", c->dev_mixed);
}

/* The most CM counters a device's dict takes (lib/cm has fewer) */
#define TEL_CM_STATS_MAX 64

/* /srnicd/devices: each device's dict under its name, its CM's counters
 * as cm_NAME (status' cm line sums them over the devices) */
static int
devices_fill(struct srnd *d, struct rte_tel_data *t)
{
	uint64_t cm[TEL_CM_STATS_MAX];
	char key[RTE_TEL_MAX_STRING_LEN];
	struct ibv_port_attr pa;
	struct rte_tel_data *v;
	unsigned int i, j, m;

	rte_tel_data_start_dict(t);
	for (i = 0; i < d->nb_devs; i++) {
		v = rte_tel_data_alloc();
		if (v == NULL)
			return -ENOMEM;
		memset(&pa, 0, sizeof(pa));
		srnic_dev_query_port(d->dev[i].sdev, &pa);
		rte_tel_data_start_dict(v);
		rte_tel_data_add_dict_u64(v, "index", i);
		rte_tel_data_add_dict_string(v, "port", d->dev[i].devargs);
		rte_tel_data_add_dict_string(v, "ip", d->dev[i].ip);
		rte_tel_data_add_dict_string(v, "link", srnd_port_state_name(&pa));
		rte_tel_data_add_dict_u64(v, "mtu", pa.active_mtu == IBV_MTU_4096 ? 4096 :
					  128u << pa.active_mtu);
		m = d->dev[i].cm != NULL ? srnic_cm_stats_get(d->dev[i].cm, cm, RTE_DIM(cm)) : 0;
		for (j = 0; j < m; j++) {
			snprintf(key, sizeof(key), "cm_%s", srnic_cm_stat_name(j));
			rte_tel_data_add_dict_u64(v, key, cm[j]);
		}
		if (rte_tel_data_add_dict_container(t, d->dev[i].name, v, 0) != 0) {
			rte_tel_data_free(v);
			return -ENOMEM;
		}
	}
	return 0;
}

static int
tel_devices(const char *cmd, const char *params, struct rte_tel_data *t)
{
	int rc = -ENODEV;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	srnd_ctl_lock();
	if (tel_d != NULL)
		rc = devices_fill(tel_d, t);
	srnd_ctl_unlock();
	return rc;
}

static int
tel_info(const char *cmd, const char *params, struct rte_tel_data *t)
{
	int rc = -ENODEV;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	srnd_ctl_lock();
	if (tel_d != NULL) {
		info_fill(tel_d, t);
		rc = 0;
	}
	srnd_ctl_unlock();
	return rc;
}

static int
tel_sessions(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct srnd_session_info si;
	unsigned int i;
	int rc = -ENODEV;

	RTE_SET_USED(cmd);
	RTE_SET_USED(params);
	srnd_ctl_lock();
	if (tel_d != NULL) {
		rte_tel_data_start_array(t, RTE_TEL_U64_VAL);
		for (i = 0; i < SRND_SESSIONS_MAX; i++)
			if (srnd_session_info(i, &si))
				rte_tel_data_add_array_u64(t, si.id);
		rc = 0;
	}
	srnd_ctl_unlock();
	return rc;
}

static int
tel_session(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct srnd_session_info si;
	unsigned long id;
	unsigned int i;
	char *end;
	int rc = -ENODEV;

	RTE_SET_USED(cmd);
	if (params == NULL || *params == '\0')
		return -EINVAL;
	errno = 0;
	id = strtoul(params, &end, 10);
	if (errno != 0 || *end != '\0' || id == 0 || id > UINT32_MAX)
		return -EINVAL;
	srnd_ctl_lock();
	for (i = 0; tel_d != NULL && i < SRND_SESSIONS_MAX; i++) {
		if (!srnd_session_info(i, &si) || si.id != id)
			continue;
		rte_tel_data_start_dict(t);
		rte_tel_data_add_dict_u64(t, "id", si.id);
		rte_tel_data_add_dict_int(t, "pid", (int)si.pid);
		rte_tel_data_add_dict_u64(t, "uid", si.uid);
		rte_tel_data_add_dict_string(t, "program", si.prog);
		rte_tel_data_add_dict_u64(t, "devices_open", si.devices_open);
		/* bit i: the daemon's device i (/srnicd/devices' index) */
		rte_tel_data_add_dict_u64(t, "devices_mask", si.devices);
		rte_tel_data_add_dict_u64(t, "qps", si.qps);
		rte_tel_data_add_dict_u64(t, "mrs", si.mrs);
		rte_tel_data_add_dict_u64(t, "wqes", si.wqes);
		rte_tel_data_add_dict_u64(t, "cm_ids", si.cm_ids);
		rte_tel_data_add_dict_u64(t, "messages", si.msgs);
		rc = 0;
		break;
	}
	if (tel_d != NULL && rc != 0)
		rc = -ENOENT;
	srnd_ctl_unlock();
	return rc;
}

RTE_INIT(srnd_telemetry_init)
{
	rte_telemetry_register_cmd("/srnicd/info", tel_info,
				   "Returns srnicd's first device, port, link and totals. No parameters");
	rte_telemetry_register_cmd("/srnicd/devices", tel_devices,
				   "Returns srnicd's devices: port, ip, link, mtu. No parameters");
	rte_telemetry_register_cmd("/srnicd/sessions", tel_sessions,
				   "Returns the ids of srnicd's live sessions. No parameters");
	rte_telemetry_register_cmd("/srnicd/session", tel_session,
				   "Returns one srnicd session: pid, program, what it holds. "
				   "Parameters: session id");
}
