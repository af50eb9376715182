/* SPDX-License-Identifier: BSD-3-Clause */
/* srnicd's log line, clocks (the daemon's and the control fuzz target's),
 * the control lock (telemetry.c) and the lock that makes it the only
 * daemon of its socket. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "srnicd.h"

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread bool ctl_held;  /* this thread holds ctl_lock */

void
srnd_ctl_lock(void)
{
	pthread_mutex_lock(&ctl_lock);
	ctl_held = true;
}

void
srnd_ctl_unlock(void)
{
	ctl_held = false;
	pthread_mutex_unlock(&ctl_lock);
}

bool
srnd_ctl_wait_begin(void)
{
	if (!ctl_held)
		return false;
	srnd_ctl_unlock();
	return true;
}

void
srnd_ctl_wait_end(bool held)
{
	if (held)
		srnd_ctl_lock();
}

void
srnd_log(const char *fmt, ...)
{
	va_list ap;

	fputs("srnicd: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* The process's CPU time (every thread), microseconds. */
uint64_t
srnd_cpu_us(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

uint64_t
srnd_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The daemon of a socket path holds an flock on PATH.lock for its life
 * (the kernel drops it when the process dies, however it dies): two
 * daemons started at once on one path cannot both pass the "does a daemon
 * answer" check and then take the socket from each other. The socket's
 * directory (its last component only, 0755) is made here. Returns the
 * lock's fd (kept open, close-on-exec), or -1 after saying why. */
int
srnd_lock(const char *sock_path)
{
	char path[SVC_SOCK_PATH_MAX + sizeof(SRND_LOCK_SUFFIX)], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s", sock_path);
	slash = strrchr(path, '/');
	if (slash != NULL && slash != path) {
		*slash = '\0';
		if (mkdir(path, 0755) != 0 && errno != EEXIST) {
			srnd_log("cannot make %s for the socket: %s", path, strerror(errno));
			return -1;
		}
	}
	snprintf(path, sizeof(path), "%s%s", sock_path, SRND_LOCK_SUFFIX);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		srnd_log("cannot open the lock %s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			srnd_log("another srnicd serves %s, or is starting on it (it holds %s): "
				 "stop it, or give this one --socket PATH", sock_path, path);
		else
			srnd_log("cannot lock %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}
