/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_STEP_EAL_H
#define SRNIC_TEST_STEP_EAL_H

/* The state-machine tests' EAL: memory for rte_zmalloc() (the CM's
 * buffers, cache-aligned engines and QPs) and the timer, no device, its
 * runtime directory removed at exit. 0, or -1. */
#include <stdio.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>

#include "srnic.h"

static inline int
step_eal_init(const char *name)
{
	char prefix[64];
	char *argv[] = {
		(char *)(uintptr_t)name, (char *)(uintptr_t)"--no-huge",
		(char *)(uintptr_t)"--no-pci", (char *)(uintptr_t)"--no-shconf",
		(char *)(uintptr_t)"-m", (char *)(uintptr_t)"64", prefix,
		(char *)(uintptr_t)"--log-level=lib.eal:error",
	};

	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic_%s_%d", name, (int)getpid());
	if (rte_eal_init(RTE_DIM(argv), argv) < 0)
		return -1;
	srnic_eal_remove_at_exit();
	return 0;
}

#endif
