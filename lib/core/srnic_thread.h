/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_THREAD_H
#define SRNIC_THREAD_H

/*
 * srnic's own threads (lib/core/eal.c). Internal, not installed: the
 * drop-in libraries link lib/core whole (srnic_stack_dep), so libsrnic.so
 * exports nothing of it.
 */

#include <pthread.h>

/*
 * pthread_create() of a thread of srnic's own (not the program's) with
 * SIGINT and SIGTERM blocked in it, as srnic_eal_init() does for EAL's;
 * the caller's mask unchanged. 0 or an errno, as pthread_create().
 */
int srnic_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg);

#endif /* SRNIC_THREAD_H */
