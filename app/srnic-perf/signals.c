/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stopping as testpmd does: the first SIGINT or SIGTERM asks the run to
 * stop (what is outstanding drains, the partial results and the counters
 * are printed, the peer is told); a second one exits at once. The handlers
 * do not restart system calls, so a server blocked in accept() or poll()
 * sees the signal too.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"

static volatile sig_atomic_t quit_sig;

static void
write_str(const char *s)
{
	ssize_t rc = write(STDERR_FILENO, s, strlen(s));

	RTE_SET_USED(rc);
}

static void
on_signal(int sig)
{
	if (quit_sig != 0) {
		write_str("srnic-perf: second signal: exiting now\n");
		_exit(128 + sig);
	}
	quit_sig = sig;
	write_str("srnic-perf: stopping cleanly (signal again to exit now)\n");
}

void
perf_signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: blocking calls return EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a peer gone mid-write is an error, not a kill */
}

bool
perf_quitting(void)
{
	return quit_sig != 0;
}

int
perf_quit_signal(void)
{
	return quit_sig;
}
