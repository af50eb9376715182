/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device's verbs: device list, open/close, query_device/port/gid/pkey.
 * Bring-up and teardown are verbs_start.c's, the configuration verbs_conf.c's.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <getopt.h>
#include <inttypes.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_dev.h>

#include "srnic_cm.h"
#include "srnic_lossy.h"
#include "verbs.h"
#include "verbs_attach.h"

#undef ibv_get_device_list
#undef ibv_query_port

static int sv_query_port(struct ibv_context *context, uint8_t port_num,
			 struct ibv_port_attr *attr, size_t len);

/* ---- device list ---- */

struct ibv_device **
ibv_get_device_list(int *num_devices)
{
	struct sv_device *dev;
	struct ibv_device **list;

	if (sva_attached())
		return sva_get_device_list(num_devices);
	if (unlikely(sv_forked)) {
		sv_fork_refused("ibv_get_device_list");
		errno = ENODEV;
		return NULL;
	}
	dev = sv_device_get();
	list = calloc(2, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (dev != NULL)
		list[0] = &dev->ibdev;
	if (num_devices != NULL)
		*num_devices = dev != NULL ? 1 : 0;
	return list;
}

void
ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

int
ibv_get_device_index(struct ibv_device *device)
{
	if (sva_is_device(device))
		return sva_device_index(device);
	return 0;
}

__be64
ibv_get_device_guid(struct ibv_device *device)
{
	struct sv_device *dev = container_of(device, struct sv_device, ibdev);
	__be64 guid;

	if (sva_is_device(device))
		return sva_device_guid(device);
	memcpy(&guid, &dev->gid[SRNIC_GID_INDEX_LL].raw[8], sizeof(guid));
	return guid;
}

/* ---- open, close ---- */

struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	struct sv_device *dev = sv_device_started();
	struct sv_context *ctx;

	SV_FORK_NULL("ibv_open_device");
	if (sva_is_device(device))
		return sva_open_device(device);
	if (dev == NULL || device != &dev->ibdev) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dev = dev;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.device = device;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.context.num_comp_vectors = 1;
	/* a context is an fd in rdma-core (the uverbs file): programs dup
	 * and poll it (pyverbs' shared-PD tests dup it before asking to
	 * import it, which srnic refuses: EOPNOTSUPP) */
	ctx->vctx.context.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (ctx->vctx.context.cmd_fd < 0)
		goto fail;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	pthread_mutex_init(&ctx->async_lock, NULL);
	/* one count per queued event: poll() on it says one is there */
	ctx->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ctx->vctx.context.async_fd < 0) {
		close(ctx->vctx.context.cmd_fd);
		goto fail;
	}
	sv_ctx_set_ops(ctx);
	ctx->vctx.query_port = sv_query_port;
	sv_ctx_register(dev, ctx);
	return &ctx->vctx.context;
fail:
	pthread_mutex_destroy(&ctx->async_lock);
	free(ctx);
	return NULL;
}

struct ibv_context *
verbs_open_device(struct ibv_device *device, void *private_data)
{
	return ibv_open_device(device);
}

int
ibv_close_device(struct ibv_context *context)
{
	struct sv_context *ctx = sv_ctx(context);

	SV_FORK_ERRNO("ibv_close_device");
	if (sva_is_ctx(context))
		return sva_close_device(context);
	sv_ctx_unregister(ctx->dev, ctx);
	close(context->async_fd);
	close(context->cmd_fd);
	pthread_mutex_destroy(&ctx->async_lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

/* ---- queries ---- */

int
ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	int rc;

	SV_FORK_ERRNO("ibv_query_device");
	if (sva_is_ctx(context))
		return sva_query_device(context, attr);
	rc = srnic_dev_query(sv_ctx(context)->dev->sdev, attr);
	return rc < 0 ? -rc : 0;
}

/* The port as programs see it (ibv_query_port and the devfs files): a port
 * waiting for its first peer (phys_state Polling: a memif server before its
 * client) is ACTIVE, since perftest and most tools refuse a port that is
 * not and their own handshake is what starts that peer. Once up, a link
 * lost is DOWN (doc/verbs.md). */
int
sv_port_attr(struct sv_device *dev, struct ibv_port_attr *a)
{
	int rc = srnic_dev_query_port(dev->sdev, a);

	if (rc == 0 && a->state == IBV_PORT_DOWN && a->phys_state == SRNIC_PORT_PHYS_POLLING)
		a->state = IBV_PORT_ACTIVE;
	return rc;
}

/* verbs_context->query_port: the ibv_query_port() macro's target. */
static int
sv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
	      size_t len)
{
	struct sv_context *ctx = sv_ctx(context);
	struct ibv_port_attr a;
	int rc;

	SV_FORK_ERRNO("ibv_query_port");
	if (sva_is_ctx(context))
		return sva_query_port(context, port_num, attr, len);
	if (port_num != 1)
		return EINVAL;
	rc = sv_port_attr(ctx->dev, &a);
	if (rc < 0)
		return -rc;
	memcpy(attr, &a, RTE_MIN(len, sizeof(a)));
	return 0;
}

/* The exported symbol: old binaries' 48-byte struct (up to link_layer). */
int
ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr)
{
	return sv_query_port(context, port_num, (struct ibv_port_attr *)attr,
			     offsetof(struct ibv_port_attr, flags));
}

int
ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct sv_context *ctx = sv_ctx(context);
	int rc;

	SV_FORK_NEG("ibv_query_gid");
	if (port_num != 1 || index < 0 || index >= SRNIC_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	if (sva_is_ctx(context)) {
		rc = sva_query_gid(context, port_num, (uint32_t)index, gid);
		if (rc == ENODATA) {
			/* an empty entry reads as zeros, as its sysfs file */
			memset(gid, 0, sizeof(*gid));
			rc = 0;
		}
		errno = rc;
		return rc != 0 ? -1 : 0;
	}
	*gid = ctx->dev->gid[index];
	return 0;
}

int
_ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		  struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct sv_context *ctx = sv_ctx(context);

	if (flags != 0 || entry_size < sizeof(*entry))
		return EINVAL;
	/* as the kernel's rdma_get_gid_attr(): EINVAL for a port or an index
	 * beyond the table, ENODATA for an empty entry inside it (GID 2 of a
	 * device without both an IPv4 and a global IPv6 address) */
	if (port_num != 1 || gid_index >= SRNIC_GID_TBL_LEN)
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	if (sva_is_ctx(context)) {
		int rc = sva_query_gid(context, port_num, gid_index, &entry->gid);

		if (rc != 0)
			return rc;
	} else {
		entry->gid = ctx->dev->gid[gid_index];
	}
	if (entry->gid.global.subnet_prefix == 0 && entry->gid.global.interface_id == 0)
		return ENODATA;
	entry->gid_index = gid_index;
	entry->port_num = port_num;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

ssize_t
_ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
		     size_t max_entries, uint32_t flags, size_t entry_size)
{
	size_t i, n = 0;

	if (flags != 0 || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < SRNIC_GID_TBL_LEN)
		return -EINVAL;
	/* the valid entries, one after another, as the kernel's */
	for (i = 0; i < SRNIC_GID_TBL_LEN; i++)
		if (_ibv_query_gid_ex(context, 1, (uint32_t)i, &entries[n], 0,
				      sizeof(entries[n])) == 0)
			n++;
	return (ssize_t)n;
}

/* rdma-core's enum ibv_gid_type_sysfs (driver.h, not installed) */
#define SV_GID_TYPE_SYSFS_ROCE_V2 1

int
ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		   int *type)
{
	if (port_num != 1 || index >= SRNIC_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	*type = SV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

int
ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	SV_FORK_NEG("ibv_query_pkey");

	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htons(SRNIC_PKEY_DEFAULT);   /* the one P_Key RoCE uses */
	return 0;
}

int
ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	return (ntohs(pkey) & 0x7fff) == 0x7fff ? 0 : -1;
}
