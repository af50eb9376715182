/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * SRNIC_VERBS_PRIVATE_1: what srnic's librdmacm.so.1 takes from this
 * library (srnic_verbs_private.h): the one device with its srnic_dev and
 * CM, the hook the progress thread runs after each CM poll, and a CM
 * progress round for programs that run no progress thread. Both libraries
 * so share one engine and one port per process.
 */
#include <errno.h>

#include "srnic_verbs_private.h"
#include "verbs.h"

int
srnic_verbs_private_get(struct srnic_verbs_private *out)
{
	struct sv_device *dev;

	if (unlikely(sv_forked)) {
		sv_fork_refused("rdma_cm");
		errno = ENODEV;
		return -1;
	}
	dev = sv_device_get();
	if (dev == NULL) {
		errno = ENODEV;
		return -1;
	}
	out->ibdev = &dev->ibdev;
	out->sdev = dev->sdev;
	out->cm = dev->cm;
	out->progress_thread = dev->progress_started;
	return 0;
}

void
srnic_verbs_set_cm_hook(void (*fn)(void *arg), void *arg)
{
	struct sv_device *dev = sv_device_get();

	if (dev == NULL)
		return;
	atomic_store_explicit(&dev->cm_hook_arg, arg, memory_order_relaxed);
	atomic_store_explicit(&dev->cm_hook, fn, memory_order_release);
}

void
srnic_verbs_cm_progress(void)
{
	struct sv_device *dev = sv_forked ? NULL : sv_device_get();

	if (dev == NULL)
		return;
	sv_progress(dev, SV_RUN_WAIT);
	sv_cm_progress(dev);
}
