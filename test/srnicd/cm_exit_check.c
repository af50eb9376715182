/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_exit_check: exit() from a signal handler that interrupted an rdma_cm
 * call, as qperf ends a test that timed out (its SIGALRM handler reports
 * and exits). Built against the system's <rdma/rdma_cma.h> only, run over
 * srnic's librdmacm.so.1 attached to srnicd.
 *
 * The main thread binds, listens and destroys ids in a loop (attached, each
 * rdma_listen() is daemon round trips under the library's lock); a
 * SIGALRM after ALARM_US, handled without SA_RESTART, calls exit(0). The
 * library's exit handler must not wait for ever for the lock the
 * interrupted call holds: the process ends (the test waits for that, a
 * guard only stops a hang).
 *
 *   cm_exit_check IPV4      the daemon's address, to bind
 */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <rdma/rdma_cma.h>

#define ALARM_US 30000

static void
on_alarm(int sig)
{
	(void)sig;
	exit(0);        /* as qperf's error path does from its handler */
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	struct itimerval it = { .it_value = { .tv_usec = ALARM_US } };
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	unsigned long n;

	if (argc != 2 || inet_pton(AF_INET, argv[1], &a.sin_addr) != 1) {
		fprintf(stderr, "usage: %s IPV4\n", argv[0]);
		return 2;
	}
	ch = rdma_create_event_channel();
	if (ch == NULL) {
		perror("rdma_create_event_channel");
		return 1;
	}
	/* one call first: the session and the CM are up before the alarm */
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0 || rdma_destroy_id(id) != 0) {
		perror("rdma_create_id");
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) != 0 || setitimer(ITIMER_REAL, &it, NULL) != 0) {
		perror("SIGALRM");
		return 1;
	}
	for (n = 0;; n++) {
		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0)
			continue;
		a.sin_port = 0;
		if (rdma_bind_addr(id, (struct sockaddr *)&a) == 0)
			rdma_listen(id, 1);
		rdma_destroy_id(id);
	}
	return 1;
}
