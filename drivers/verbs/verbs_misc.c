/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The string and rate helpers, fork support, sysfs, import/export and the
 * kernel-ABI copy helpers of libibverbs' public symbol set. What needs a
 * kernel (sysfs files, shared device fds) says so: ENOSYS/EOPNOTSUPP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "verbs.h"

/* ---- strings, as rdma-core prints them ---- */

const char *
ibv_wc_status_str(enum ibv_wc_status status)
{
	return srnic_wc_status_str(status);
}

const char *
ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const names[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	if (node_type < IBV_NODE_CA || (size_t)node_type >= RTE_DIM(names) ||
	    names[node_type] == NULL)
		return "unknown";
	return names[node_type];
}

const char *
ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const names[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	if ((size_t)port_state >= RTE_DIM(names))
		return "unknown";
	return names[port_state];
}

const char *
ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const names[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	if ((size_t)event >= RTE_DIM(names) || names[event] == NULL)
		return "unknown";
	return names[event];
}

/* ---- rates: enum ibv_rate <-> multiples of 2.5 Gb/s <-> Mb/s ---- */

static const struct {
	enum ibv_rate rate;
	int mult;       /* of 2.5 Gb/s, 0 when not a multiple */
	int mbps;
} sv_rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },    { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },    { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },   { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },   { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 }, { IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },    { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },  { IBV_RATE_25_GBPS, 10, 25781 },
	{ IBV_RATE_100_GBPS, 40, 103125 }, { IBV_RATE_200_GBPS, 80, 206250 },
	{ IBV_RATE_300_GBPS, 120, 309375 }, { IBV_RATE_28_GBPS, 11, 28125 },
	{ IBV_RATE_50_GBPS, 20, 53125 },   { IBV_RATE_400_GBPS, 160, 425000 },
	{ IBV_RATE_600_GBPS, 240, 637500 }, { IBV_RATE_800_GBPS, 320, 850000 },
	{ IBV_RATE_1200_GBPS, 480, 1275000 },
};

int
ibv_rate_to_mult(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < RTE_DIM(sv_rates); i++)
		if (sv_rates[i].rate == rate)
			return sv_rates[i].mult > 0 ? sv_rates[i].mult : -1;
	return -1;
}

enum ibv_rate
mult_to_ibv_rate(int mult)
{
	size_t i;

	for (i = 0; i < RTE_DIM(sv_rates); i++)
		if (sv_rates[i].mult == mult && mult > 0)
			return sv_rates[i].rate;
	return IBV_RATE_MAX;
}

int
ibv_rate_to_mbps(enum ibv_rate rate)
{
	size_t i;

	for (i = 0; i < RTE_DIM(sv_rates); i++)
		if (sv_rates[i].rate == rate)
			return sv_rates[i].mbps;
	return -1;
}

enum ibv_rate
mbps_to_ibv_rate(int mbps)
{
	size_t i;

	for (i = 0; i < RTE_DIM(sv_rates); i++)
		if (sv_rates[i].mbps == mbps)
			return sv_rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- fork: srnic pins nothing through the kernel, fork needs no care ---- */

int
ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status
ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

int
ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

int
ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

/* ---- sysfs: srnic has no kernel device ---- */

const char *
ibv_get_sysfs_path(void)
{
	return "/sys";
}

int
ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	errno = ENOENT;
	return -1;
}

int
ibv_read_ibdev_sysfs_file(char *buf, size_t size, const char *fmt, ...)
{
	errno = ENOENT;
	return -1;
}

int
ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
			    uint8_t eth_mac[6], uint16_t *vid)
{
	return EOPNOTSUPP;  /* srnic resolves neighbours itself (ARP/ND) */
}

/* ---- sharing a device between processes: no kernel fd to share ---- */

struct ibv_context *
ibv_import_device(int cmd_fd)
{
	errno = EOPNOTSUPP;
	return NULL;
}

struct ibv_pd *
ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_pd(struct ibv_pd *pd)
{
}

struct ibv_mr *
ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_mr(struct ibv_mr *mr)
{
}

struct ibv_dm *
ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void
ibv_unimport_dm(struct ibv_dm *dm)
{
}

/* ---- kernel ABI copies (rdma-core's marshall helpers, for rdma_cm and
 * ibacm). The kernel structs they convert never exist here: left as they
 * are. ---- */

void
ibv_copy_qp_attr_from_kern(void *dst, const void *src)
{
}

void
ibv_copy_ah_attr_from_kern(void *dst, const void *src)
{
}

void
ibv_copy_path_rec_from_kern(void *dst, const void *src)
{
}

void
ibv_copy_path_rec_to_kern(void *dst, const void *src)
{
}
