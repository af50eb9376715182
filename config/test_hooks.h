/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test hooks: a state a test cannot reach for real, forced through an
 * environment variable, in the test builds of a program or library only
 * (built from the same sources with -DSRNIC_TEST_HOOKS, never installed:
 * app/srnicd's srnicd-test, test/rdmacm/hooks' librdmacm.so.1). In every
 * other build SRNIC_TEST_HOOK() is a constant false: the variable's name
 * is not in the binary and the hook's code is dropped (doc/reliability.md,
 * "Test hooks").
 */
#ifndef SRNIC_TEST_HOOKS_H
#define SRNIC_TEST_HOOKS_H

#include <stdbool.h>

#ifdef SRNIC_TEST_HOOKS
#include <stdlib.h>
#include <string.h>

/* Whether the hook named by environment variable name is on (set to 1) */
static inline bool
srnic_test_hook_on(const char *name)
{
	const char *e = getenv(name);

	return e != NULL && strcmp(e, "1") == 0;
}

#define SRNIC_TEST_HOOK(name) srnic_test_hook_on(name)

/* A hook that holds a thread for another's step waits at most this long,
 * then says so and goes on (a test that never takes the step fails on its
 * own, and does not hang); SRNIC_TEST_HOOK_HOLD_S=N (1 to
 * SRNIC_TEST_HOOK_HOLD_MAX_S) sets it, for a test of the bound itself */
#define SRNIC_TEST_HOOK_HOLD_S 30
#define SRNIC_TEST_HOOK_HOLD_MAX_S 3600

static inline int
srnic_test_hook_hold_s(void)
{
	const char *e = getenv("SRNIC_TEST_HOOK_HOLD_S");
	char *end;
	long v;

	if (e == NULL)
		return SRNIC_TEST_HOOK_HOLD_S;
	v = strtol(e, &end, 10);
	return *e != '\0' && *end == '\0' && v >= 1 && v <= SRNIC_TEST_HOOK_HOLD_MAX_S ?
	       (int)v : SRNIC_TEST_HOOK_HOLD_S;
}
#else
#define SRNIC_TEST_HOOK(name) false
#endif

#endif /* SRNIC_TEST_HOOKS_H */
