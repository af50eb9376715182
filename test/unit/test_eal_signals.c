/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic_eal_init() and srnic_thread_create(): every thread they start has
 * SIGINT and SIGTERM blocked, so a program's SIGINT goes to one of its own
 * threads (ending its blocking call with EINTR), never to EAL's interrupt,
 * multi-process or telemetry thread, a worker lcore or the drop-in's
 * progress thread; and the caller's own mask is given back as it was.
 *
 * Read from /proc/self/task/TID/status (SigBlk) for each thread that was
 * not there before the calls.
 */
#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_common.h>
#include <rte_eal.h>
#include <rte_lcore.h>

#include "srnic.h"
#include "srnic_thread.h"

#define MAX_TASKS 256

/* the process's thread ids now; how many */
static unsigned int
tasks(long *tid, unsigned int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL && n < max) {
		if (e->d_name[0] != '.')
			tid[n++] = strtol(e->d_name, NULL, 10);
	}
	closedir(d);
	return n;
}

static int
known(const long *tid, unsigned int n, long t)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (tid[i] == t)
			return 1;
	return 0;
}

/* thread t's blocked signals (SigBlk: bit s - 1 for signal s), and its name */
static uint64_t
sig_blocked(long t, char *name, size_t len)
{
	char path[64], line[256];
	uint64_t blk = 0;
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/status", t);
	f = fopen(path, "r");
	assert_non_null(f);
	name[0] = '\0';
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "Name:", 5) == 0)
			snprintf(name, len, "%s", line + 5 + strspn(line + 5, " \t"));
		if (strncmp(line, "SigBlk:", 7) == 0) {
			blk = strtoull(line + 7, NULL, 16);
			found = 1;
		}
	}
	fclose(f);
	assert_true(found);
	name[strcspn(name, "\n")] = '\0';
	return blk;
}

static pthread_barrier_t own_done;

static void *
own_thread(void *arg)
{
	RTE_SET_USED(arg);
	pthread_barrier_wait(&own_done); /* seen by the test */
	pthread_barrier_wait(&own_done); /* then it may go */
	return NULL;
}

static int
worker(void *arg)
{
	RTE_SET_USED(arg);
	return 0;
}

static void
test_threads_block_quit_signals(void **state)
{
	long before[MAX_TASKS], after[MAX_TASKS];
	unsigned int nb, na, i, checked = 0;
	char prefix[64], lcores[64], name[64];
	sigset_t mine, now;
	cpu_set_t cpus;
	pthread_t own;
	int cpu = 0;
	char *argv[] = {
		(char *)(uintptr_t)"test_eal_signals", (char *)(uintptr_t)"--no-huge",
		(char *)(uintptr_t)"--no-pci", (char *)(uintptr_t)"-m", (char *)(uintptr_t)"64",
		prefix, lcores, (char *)(uintptr_t)"--log-level=lib.eal:error",
	};

	RTE_SET_USED(state);
	/* two lcores (a worker thread) on the first CPU this process may use */
	assert_int_equal(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &cpus))
		cpu++;
	snprintf(lcores, sizeof(lcores), "--lcores=0@%d,1@%d", cpu, cpu);
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic_eal_signals_%d", (int)getpid());
	/* the caller's own mask: SIGUSR1 blocked, SIGINT and SIGTERM not */
	sigemptyset(&mine);
	sigaddset(&mine, SIGUSR1);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &mine, NULL), 0);
	nb = tasks(before, MAX_TASKS);

	assert_true(srnic_eal_init(RTE_DIM(argv), argv) >= 0);
	srnic_eal_remove_at_exit();
	assert_int_equal(rte_eal_remote_launch(worker, NULL, 1), 0);
	assert_int_equal(rte_eal_wait_lcore(1), 0);
	assert_int_equal(pthread_barrier_init(&own_done, NULL, 2), 0);
	assert_int_equal(srnic_thread_create(&own, own_thread, NULL), 0);
	pthread_barrier_wait(&own_done);

	/* the caller's mask as it was */
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &now), 0);
	assert_true(sigismember(&now, SIGUSR1));
	assert_false(sigismember(&now, SIGINT));
	assert_false(sigismember(&now, SIGTERM));

	na = tasks(after, MAX_TASKS);
	for (i = 0; i < na; i++) {
		uint64_t blk;

		if (known(before, nb, after[i]))
			continue;
		blk = sig_blocked(after[i], name, sizeof(name));
		printf("thread %ld (%s): SigBlk %016" PRIx64 "\n", after[i], name, blk);
		if (!(blk & (UINT64_C(1) << (SIGINT - 1))) || !(blk & (UINT64_C(1) << (SIGTERM - 1))))
			fail_msg("thread %ld (%s) started by srnic takes SIGINT or SIGTERM "
				 "(SigBlk %016" PRIx64 ")", after[i], name, blk);
		checked++;
	}
	/* EAL's interrupt and multi-process threads, the worker lcore, ours */
	assert_true(checked >= 4);
	pthread_barrier_wait(&own_done);
	assert_int_equal(pthread_join(own, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_block_quit_signals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
