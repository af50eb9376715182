/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program's SIGINT handler, installed before srnic starts, under the
 * drop-in (embedded mode): srnic puts its own handler in front (it removes
 * the device's files) and must then run the program's as the kernel would.
 * Built against the system's <infiniband/verbs.h> and libibverbs only.
 *
 * The handler is SA_SIGINFO without SA_RESTART: it records info->si_pid
 * (a NULL siginfo crashes here) and sets a stop flag; the program then
 * blocks in read() on a pipe nothing writes to, which must end with EINTR
 * (a forced SA_RESTART would block it for ever).
 *
 *   verbs_signal info       one SIGINT: "si_pid N", "all ok", exit 0
 *   verbs_signal resethand  the handler also has SA_RESETHAND: the first
 *                           SIGINT as above ("first ok"), then a second
 *                           read() that the next SIGINT's default action
 *                           ends (killed by SIGINT)
 *
 * Each wait begins with a "ready PID" line on stdout: the test's cue.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static volatile sig_atomic_t stop;
static volatile sig_atomic_t sender = -1;

static void
on_sigint(int sig, siginfo_t *info, void *uctx)
{
	(void)sig;
	(void)uctx;
	sender = info->si_pid;
	stop = 1;
}

static int
wait_eintr(int fd)
{
	char c;
	ssize_t n;

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	n = read(fd, &c, 1);
	if (n != -1 || errno != EINTR || !stop) {
		printf("FAIL read() returned %zd (errno %d: %s), stop %d: want -1 EINTR after "
		       "the handler\n", n, errno, strerror(errno), (int)stop);
		return -1;
	}
	printf("si_pid %d\n", (int)sender);
	fflush(stdout);
	return 0;
}

/* SIGINT ignored before srnic starts (a background job of a script): it
 * stays ignored; a SIGINT neither interrupts the read() of a byte the test
 * then writes to stdin nor removes srnic's files */
static int
run_ignored(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	char c;
	ssize_t n;
	int num;

	if (signal(SIGINT, SIG_IGN) == SIG_ERR) {
		perror("signal");
		return 1;
	}
	list = ibv_get_device_list(&num);
	if (list == NULL || num < 1) {
		printf("FAIL no verbs device (errno %d: %s)\n", errno, strerror(errno));
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL) {
		printf("FAIL ibv_open_device (errno %d: %s)\n", errno, strerror(errno));
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	n = read(0, &c, 1);
	if (n != 1) {
		printf("FAIL read() of stdin returned %zd (errno %d: %s): want the test's byte\n", n,
		       errno, strerror(errno));
		return 1;
	}
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("all ok\n");
	return 0;
}

int
main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct sigaction sa;
	int fds[2], num, reset;

	if (argc != 2 || (strcmp(argv[1], "info") != 0 && strcmp(argv[1], "resethand") != 0 &&
			  strcmp(argv[1], "ignored") != 0)) {
		fprintf(stderr, "usage: %s info|resethand|ignored\n", argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "ignored") == 0)
		return run_ignored();
	reset = strcmp(argv[1], "resethand") == 0;
	if (pipe(fds) != 0) {
		perror("pipe");
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigint;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | (reset ? SA_RESETHAND : 0);
	if (sigaction(SIGINT, &sa, NULL) != 0) {
		perror("sigaction");
		return 1;
	}
	/* srnic starts here, after the program's handler */
	list = ibv_get_device_list(&num);
	if (list == NULL || num < 1) {
		printf("FAIL no verbs device (errno %d: %s)\n", errno, strerror(errno));
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	if (ctx == NULL) {
		printf("FAIL ibv_open_device (errno %d: %s)\n", errno, strerror(errno));
		return 1;
	}
	if (wait_eintr(fds[0]) != 0)
		return 1;
	if (reset) {
		char c;

		printf("first ok\n");
		stop = 0;
		/* SA_RESETHAND: this SIGINT takes the default action */
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		(void)read(fds[0], &c, 1);
		printf("FAIL the second SIGINT returned to the program (stop %d)\n", (int)stop);
		return 1;
	}
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	printf("all ok\n");
	return 0;
}
