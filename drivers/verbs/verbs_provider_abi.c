/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IBVERBS_PRIVATE_34: rdma-core's interface to its providers (libmlx5,
 * libefa, ... which perftest links, BIND_NOW). No provider ever gets a
 * device here, so none of these is reached in normal use; they exist so
 * those libraries load, and answer EOPNOTSUPP (NULL with errno) if called.
 * verbs_register_driver_34() (every provider's constructor) is a no-op.
 * Prototypes are rdma-core's driver.h ones, which Debian does not install:
 * pointer arguments are opaque here.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verbs.h"

/* rdma-core: set by a program that lets destroy calls succeed after the
 * device is gone (disassociate); nothing here disassociates. */
bool verbs_allow_disassociate_destroy;

void
verbs_register_driver_34(const void *ops)
{
}

void
verbs_set_ops(struct verbs_context *vctx, const void *ops)
{
}

void
verbs_uninit_context(struct verbs_context *context)
{
}

void *
_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
			      struct verbs_context *context_offset, uint32_t driver_id)
{
	errno = EOPNOTSUPP;
	return NULL;
}

void
__verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
}

unsigned int
__ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	return num_attrs;
}

int
execute_ioctl(struct ibv_context *context, void *cmd)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* The kernel command helpers: every one returns an errno (int). */
#define SV_CMD_UNSUPPORTED(name) \
	int name(void); \
	int name(void) { errno = EOPNOTSUPP; return EOPNOTSUPP; }

SV_CMD_UNSUPPORTED(ibv_cmd_advise_mr)
SV_CMD_UNSUPPORTED(ibv_cmd_alloc_dm)
SV_CMD_UNSUPPORTED(ibv_cmd_alloc_mw)
SV_CMD_UNSUPPORTED(ibv_cmd_alloc_pd)
SV_CMD_UNSUPPORTED(ibv_cmd_attach_mcast)
SV_CMD_UNSUPPORTED(ibv_cmd_close_xrcd)
SV_CMD_UNSUPPORTED(ibv_cmd_create_ah)
SV_CMD_UNSUPPORTED(ibv_cmd_create_counters)
SV_CMD_UNSUPPORTED(ibv_cmd_create_cq)
SV_CMD_UNSUPPORTED(ibv_cmd_create_cq_ex)
SV_CMD_UNSUPPORTED(ibv_cmd_create_flow)
SV_CMD_UNSUPPORTED(ibv_cmd_create_flow_action_esp)
SV_CMD_UNSUPPORTED(ibv_cmd_create_qp)
SV_CMD_UNSUPPORTED(ibv_cmd_create_qp_ex)
SV_CMD_UNSUPPORTED(ibv_cmd_create_qp_ex2)
SV_CMD_UNSUPPORTED(ibv_cmd_create_rwq_ind_table)
SV_CMD_UNSUPPORTED(ibv_cmd_create_srq)
SV_CMD_UNSUPPORTED(ibv_cmd_create_srq_ex)
SV_CMD_UNSUPPORTED(ibv_cmd_create_wq)
SV_CMD_UNSUPPORTED(ibv_cmd_dealloc_mw)
SV_CMD_UNSUPPORTED(ibv_cmd_dealloc_pd)
SV_CMD_UNSUPPORTED(ibv_cmd_dereg_mr)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_ah)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_counters)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_cq)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_flow)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_flow_action)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_qp)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_rwq_ind_table)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_srq)
SV_CMD_UNSUPPORTED(ibv_cmd_destroy_wq)
SV_CMD_UNSUPPORTED(ibv_cmd_detach_mcast)
SV_CMD_UNSUPPORTED(ibv_cmd_free_dm)
SV_CMD_UNSUPPORTED(ibv_cmd_get_context)
SV_CMD_UNSUPPORTED(ibv_cmd_modify_cq)
SV_CMD_UNSUPPORTED(ibv_cmd_modify_flow_action_esp)
SV_CMD_UNSUPPORTED(ibv_cmd_modify_qp)
SV_CMD_UNSUPPORTED(ibv_cmd_modify_qp_ex)
SV_CMD_UNSUPPORTED(ibv_cmd_modify_srq)
SV_CMD_UNSUPPORTED(ibv_cmd_modify_wq)
SV_CMD_UNSUPPORTED(ibv_cmd_open_qp)
SV_CMD_UNSUPPORTED(ibv_cmd_open_xrcd)
SV_CMD_UNSUPPORTED(ibv_cmd_poll_cq)
SV_CMD_UNSUPPORTED(ibv_cmd_post_recv)
SV_CMD_UNSUPPORTED(ibv_cmd_post_send)
SV_CMD_UNSUPPORTED(ibv_cmd_post_srq_recv)
SV_CMD_UNSUPPORTED(ibv_cmd_query_context)
SV_CMD_UNSUPPORTED(ibv_cmd_query_device_any)
SV_CMD_UNSUPPORTED(ibv_cmd_query_mr)
SV_CMD_UNSUPPORTED(ibv_cmd_query_port)
SV_CMD_UNSUPPORTED(ibv_cmd_query_qp)
SV_CMD_UNSUPPORTED(ibv_cmd_query_srq)
SV_CMD_UNSUPPORTED(ibv_cmd_read_counters)
SV_CMD_UNSUPPORTED(ibv_cmd_reg_dm_mr)
SV_CMD_UNSUPPORTED(ibv_cmd_reg_dmabuf_mr)
SV_CMD_UNSUPPORTED(ibv_cmd_reg_mr)
SV_CMD_UNSUPPORTED(ibv_cmd_req_notify_cq)
SV_CMD_UNSUPPORTED(ibv_cmd_rereg_mr)
SV_CMD_UNSUPPORTED(ibv_cmd_resize_cq)
