/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_VERBS_ATTACH_H
#define SRNIC_VERBS_ATTACH_H

/*
 * The attached side of libibverbs.so.1 (doc/srnicd.md): with neither
 * SRNIC_PORT nor SRNIC_IP set and srnicd answering on its socket, the
 * devices are the daemon's, each open context is a session with it, and
 * the queries are its answers. The verbs of verbs_dev.c and verbs_obj.c
 * hand an attached device or context here first.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* Whether this process runs attached (decided once, at the first call). */
bool sva_attached(void);
/* Whether a device, a context is the daemon's. */
bool sva_is_device(const struct ibv_device *device);
static inline bool
sva_is_ctx(const struct ibv_context *context)
{
	return sva_is_device(context->device);
}

struct ibv_device **sva_get_device_list(int *num_devices);
__be64 sva_device_guid(struct ibv_device *device);
int sva_device_index(struct ibv_device *device);
struct ibv_context *sva_open_device(struct ibv_device *device);
int sva_close_device(struct ibv_context *context);
/* 0 or an errno, as the verbs they serve */
int sva_query_device(struct ibv_context *context, struct ibv_device_attr *attr);
int sva_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		   size_t len);
int sva_query_gid(struct ibv_context *context, uint32_t port_num, uint32_t index,
		  union ibv_gid *gid);
/* A verb that needs the data path, on an attached context: NULL (or -1)
 * with errno EOPNOTSUPP, and once a line saying why. */
void *sva_no_data_path(const char *verb);

#endif /* SRNIC_VERBS_ATTACH_H */
