/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_VERBS_PRIVATE_H
#define SRNIC_VERBS_PRIVATE_H

/*
 * What srnic's libibverbs.so.1 gives srnic's librdmacm.so.1 (drivers/rdmacm),
 * under the private version node SRNIC_VERBS_PRIVATE_1 (not in rdma-core's
 * list): the process's one device, its srnic_dev and its CM, and a hook the
 * progress thread calls after each CM poll. doc/rdmacm.md has the design.
 */
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

struct srnic_dev;
struct srnic_cm;

struct srnic_verbs_private {
	struct ibv_device *ibdev;   /* "srnic0" */
	struct srnic_dev *sdev;
	struct srnic_cm *cm;        /* NULL when the CM could not start */
	int progress_thread;        /* 0 under SRNIC_PROGRESS=app */
};

/* Start the device if it is not (as ibv_get_device_list() does) and
 * describe it: 0, or -1 with errno ENODEV (unconfigured: the library
 * has said what to set). */
int srnic_verbs_private_get(struct srnic_verbs_private *out);
/* fn(arg) runs on the thread that just polled the CM (the progress
 * thread, or srnic_verbs_cm_progress()'s caller), one at a time. */
void srnic_verbs_set_cm_hook(void (*fn)(void *arg), void *arg);
/* One round of what the progress thread does for the CM: an engine
 * poll when the engine is free, a CM poll when no other thread polls
 * it, the hook. For programs without a progress thread. */
void srnic_verbs_cm_progress(void);

/* Attached to srnicd (doc/srnicd.md section 7): whether this process's
 * devices are the daemon's (1) or its own (0). */
int srnic_verbs_attached(void);
/* One control message req (struct svc_hdr first; lib/svc's protocol) and
 * its reply on the session of context, an attached device's open context:
 * the descriptor fd_out (-1: none) goes with it, one that comes back goes
 * into *fd_in (may be NULL). 0 or a negative errno (-ENOTSUP: not an
 * attached context). */
/* The device handle of context's session (what CM_OPEN, CM_CREATE_ID and
 * CM_RESOLVE name); 0: not an attached context. */
uint32_t srnic_verbs_attach_dev(struct ibv_context *context);
/* The protocol minor of the daemon context's session speaks (a message of
 * a later minor it would take for a bad one); 0: not an attached context. */
uint16_t srnic_verbs_attach_minor(struct ibv_context *context);
int srnic_verbs_attach_call(struct ibv_context *context, void *req, int fd_out, void *rep,
			    size_t cap, int *fd_in);

#endif /* SRNIC_VERBS_PRIVATE_H */
