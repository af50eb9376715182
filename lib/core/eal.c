/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What EAL leaves on disk: the runtime directory of a --file-prefix
 * (/var/run/dpdk/PREFIX/ as root, $XDG_RUNTIME_DIR/dpdk/PREFIX/ or
 * /tmp/dpdk/PREFIX/ otherwise). rte_eal_cleanup() keeps it, and a process
 * that is killed or fails half way through its start keeps it too: a day
 * of tests and drop-in programs left 173 of them on a host. srnic removes
 * the one its process made when it ends, and at start the ones of srnic
 * processes that died.
 *
 * And how EAL starts: with the signals a program stops on blocked in the
 * threads it makes (srnic_eal_init()).
 */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include "srnic.h"
#include "srnic_thread.h"

/* The signals a program stops on. The kernel gives a process's signal to
 * any one of its threads that does not block it: taken by a thread srnic
 * started (EAL's interrupt, multi-process and telemetry threads, the
 * worker lcores, the drop-in's progress thread), the program's handler
 * runs there and the program's own blocking call (accept(), read())
 * goes on waiting instead of ending with EINTR. */
static void
quit_signals_block(sigset_t *old)
{
	sigset_t quit;

	sigemptyset(&quit);
	sigaddset(&quit, SIGINT);
	sigaddset(&quit, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &quit, old);
}

int
srnic_eal_init(int argc, char **argv)
{
	sigset_t old;
	int rc;

	/* the threads inherit the mask they are created with; the caller's
	 * own is given back (rte_errno is left as rte_eal_init() set it) */
	quit_signals_block(&old);
	rc = rte_eal_init(argc, argv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int
srnic_thread_create(pthread_t *thread, void *(*fn)(void *), void *arg)
{
	sigset_t old;
	int rc;

	quit_signals_block(&old);
	rc = pthread_create(thread, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* Removes dir and what EAL put in it (config, fbarray_*, mp_socket*,
 * hugepage_info: files only, never a subdirectory). */
static int
dir_remove(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
	return rmdir(dir) == 0 ? 0 : -errno;
}

static char eal_dir[PATH_MAX];

static void
eal_dir_at_exit(void)
{
	if (eal_dir[0] != '\0')
		dir_remove(eal_dir);
}

int
srnic_eal_remove_at_exit(void)
{
	static bool registered;
	const char *dir = rte_eal_get_runtime_dir();

	/* a secondary shares its primary's directory: not its to remove */
	if (rte_eal_process_type() != RTE_PROC_PRIMARY || dir == NULL || dir[0] == '\0')
		return -EINVAL;
	if ((size_t)snprintf(eal_dir, sizeof(eal_dir), "%s", dir) >= sizeof(eal_dir))
		return -ENAMETOOLONG;
	if (!registered && atexit(eal_dir_at_exit) != 0)
		return -ENOMEM;
	registered = true;
	return 0;
}

/* The pid a srnic prefix ends with ("srnic-1234", "srnic_host_arp_1234"),
 * or 0 for any other name. */
static pid_t
prefix_pid(const char *name)
{
	const char *p = name + strlen(name);
	long pid;

	if (strncmp(name, "srnic", 5) != 0)
		return 0;
	while (p > name && isdigit((unsigned char)p[-1]))
		p--;
	if (*p == '\0' || p == name || (p[-1] != '-' && p[-1] != '_'))
		return 0;
	pid = strtol(p, NULL, 10);
	return pid > 0 && pid <= INT_MAX ? (pid_t)pid : 0;
}

int
srnic_eal_sweep(void)
{
	char parent[PATH_MAX], path[PATH_MAX];
	const char *dir = rte_eal_get_runtime_dir();
	struct dirent *e;
	char *slash;
	int n = 0;
	DIR *d;

	if (dir == NULL || dir[0] == '\0' ||
	    (size_t)snprintf(parent, sizeof(parent), "%s", dir) >= sizeof(parent))
		return -EINVAL;
	slash = strrchr(parent, '/');
	if (slash == NULL || slash == parent)
		return -EINVAL;
	*slash = '\0';
	d = opendir(parent);
	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		pid_t pid = prefix_pid(e->d_name);

		/* alive, or not ours to judge (another user's): kept */
		if (pid == 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", parent, e->d_name) >= sizeof(path))
			continue;
		if (dir_remove(path) == 0)
			n++;
	}
	closedir(d);
	return n;
}
