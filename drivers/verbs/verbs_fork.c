/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork() in embedded mode. The engine, its DPDK memory (hugepages or memfd
 * mapped shared, which a child inherits mapped shared) and the port belong
 * to the process that brought the device up. A child of fork() has a copy
 * of every object but none of the threads (no progress thread, no EAL
 * interrupt thread), and a post, a poll or a create there would write into
 * the parent's rings and pools or run an engine the parent runs too. So
 * from the moment of fork every verb of this library refuses in the child:
 * EIO, as the kernel's uverbs answers every command on a device that left
 * the process (ib_uverbs_write() and the ioctl path after
 * ib_uverbs_disassociate()), with one line on stderr saying why; a new
 * ibv_get_device_list() gets NULL and ENODEV (no device this process may
 * use). rdma-core leaves a child's use of its parent's resources undefined
 * (ibv_fork_init(3): "the child process must not use" them); srnic makes it
 * an error the child can see. The parent is untouched: its memory and its
 * MRs are its own (copy on write), so ibv_is_fork_initialized() says
 * IBV_FORK_UNNEEDED (verbs_misc.c).
 *
 * The cost: pthread_atfork() once per device, and one load of sv_forked
 * per verb call (never per packet).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <unistd.h>

#include "verbs.h"

bool sv_forked;
static pid_t sv_owner;          /* the process that brought the device up */
static atomic_bool sv_fork_said;

static void
sv_fork_child(void)
{
	/* the child has one thread now: a plain store is seen by all it makes */
	sv_forked = true;
}

int
sv_fork_guard_install(void)
{
	sv_owner = getpid();
	return pthread_atfork(NULL, NULL, sv_fork_child);
}

int
sv_fork_refused(const char *verb)
{
	if (!atomic_exchange(&sv_fork_said, true))
		sv_log("%s in pid %d, a fork()ed child of pid %d: %s runs inside that process (its "
		       "engine, DPDK memory and port) and a child cannot use it: its verbs fail here "
		       "with EIO, ibv_get_device_list() with ENODEV. A child needs a device of its "
		       "own (its own SRNIC_PORT, opened after exec() or in a process that made no "
		       "verbs call before fork())", verb, (int)getpid(), (int)sv_owner, SV_DEV_NAME);
	return EIO;
}
