/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic-perf: RDMA benchmark over srnic, perftest's figures with testpmd's
 * habits. EAL arguments first, then "--" and srnic-perf's own (--help).
 * Exit status: 0, or 1 if any work request failed or any byte was wrong;
 * a client whose server stopped the run (a signal there: its STOP line, or
 * its control connection closed) exits PERF_EXIT_SERVER_STOPPED (3).
 * The first SIGINT/SIGTERM stops cleanly (partial results, counters, exit
 * status as above; a server tells its client); a second exits at once with
 * 128 + the signal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>

#include "perf.h"

#define PERF_TELEMETRY_QUIET "--log-level=lib.telemetry:error"
/* The EAL's five lines of start-up news (lcores, NUMA nodes, linkage, its
 * socket, IOVA mode) are INFO: quiet by default, as the demo runs it. */
#define PERF_EAL_QUIET "--log-level=lib.eal:error"
/* What to add to the EAL arguments with no hugepages to use */
#define PERF_NO_HUGE_HINT "--no-huge -m 1024"

/* The EAL's argv with that in front: lives as long as the process (the EAL
 * may keep pointers into it). */
static char **eal_argv;

/* Did the EAL options set the log level of log type NAME (by name, a
 * pattern, or a global level)? */
static bool
log_level_given(int argc, char **argv, const char *name)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *v = NULL;

		if (strncmp(argv[i], "--log-level=", 12) == 0)
			v = argv[i] + 12;
		else if (strcmp(argv[i], "--log-level") == 0 && i + 1 < argc)
			v = argv[i + 1];
		if (v != NULL && (strstr(v, name) != NULL || strchr(v, '*') != NULL ||
				  strchr(v, ':') == NULL))
			return true;
	}
	return false;
}

/* What needs no EAL: --help (before or after "--"), and srnic-perf's
 * options given without the "--" in front of them. Returns an exit status,
 * or -1 to go on. */
static int
args_before_eal(int argc, char **argv)
{
	int i, dd = argc;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dd = i;
			break;
		}
	for (i = dd + 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0) {
			perf_usage(argv[0]);
			return 0;
		}
	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
			perf_print_version(); /* perftest's -V: before or after "--" */
			return 0;
		}
	for (i = 1; i < dd; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			perf_usage(argv[0]);
			printf("\nEAL options (before \"--\"): any of DPDK's, e.g. -l 0,1, --vdev=..., "
			       "-a PCI, --no-huge -m MB,\n--file-prefix NAME; \"%s -h --\" lists "
			       "them all.\n", argv[0]);
			return 0;
		}
		if (perf_is_own_option(argv[i])) {
			fprintf(stderr, "srnic-perf: %s is srnic-perf's option: put srnic-perf's options "
					"after \"--\", the EAL's before it\n  (e.g. %s -l 0,1 "
					"--no-pci -- --op read)\n", argv[i], argv[0]);
			return 1;
		}
	}
	return -1;
}

/* Is ARG among the EAL arguments (before "--")? */
static bool
eal_arg_given(int argc, char **argv, const char *arg)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], arg) == 0)
			return true;
	return false;
}

/* The EAL did not start: what to do when it is the hugepages, the usual
 * cause for a user that is not root or a host with none reserved. */
static void
say_eal_failed(int argc, char **argv)
{
	fprintf(stderr, "srnic-perf: EAL init failed (%s)", rte_strerror(rte_errno));
	if (!eal_arg_given(argc, argv, "--no-huge") && geteuid() != 0)
		fprintf(stderr, ": not root, so no hugepages: add %s to the EAL arguments (before "
			"\"--\")\n", PERF_NO_HUGE_HINT);
	else if (!eal_arg_given(argc, argv, "--no-huge"))
		fprintf(stderr, ": DPDK's lines above say why; with no hugepages reserved "
			"(usertools/srnic setup reserves them) add %s to the EAL arguments\n",
			PERF_NO_HUGE_HINT);
	else
		fprintf(stderr, ": DPDK's lines above say why\n");
}

/* A client's server stopped the run (rc: -ESHUTDOWN, its STOP; -ECONNRESET,
 * its end closed): one line saying so, after the partial row if any. */
static void
say_server_stopped(int rc, unsigned int done, unsigned int nb, bool partial)
{
	char sizes[64];

	if (partial && done == nb)
		snprintf(sizes, sizeof(sizes), "the run above is partial");
	else
		snprintf(sizes, sizeof(sizes), "%u of %u sizes run%s", done, nb,
			 partial ? ", the last one partly" : "");
	printf("srnic-perf: the server stopped the run (%s): %s; exit status %d\n",
	       rc == -ESHUTDOWN ? "it was stopped by a signal" :
				  "its control connection closed: it exited or was killed",
	       sizes, PERF_EXIT_SERVER_STOPPED);
	fflush(stdout);
}

/* The modes (testpmd's forwarding engines): the first whose test the
 * options pass. */
static const struct perf_mode perf_modes[] = {
	/* both sides in this process (the default) */
	{ .name = "pair" },
	/* --perftest against ib_write_lat / ib_send_lat */
	{ .name = "perftest-pingpong", .setup = perf_pt_mode_setup, .serve = perf_pt_serve,
	  .run = perf_pt_pingpong_run, .run_end = perf_pt_run_end, .bye = perf_pt_bye },
	/* --perftest: perftest's exchange, one size agreed on the command lines */
	{ .name = "perftest", .setup = perf_pt_mode_setup, .serve = perf_pt_serve,
	  .run_end = perf_pt_run_end, .bye = perf_pt_bye },
	/* --server / --client: srnic-perf's own exchange over TCP */
	{ .name = "remote", .setup = perf_remote_setup, .serve = perf_serve,
	  .run_begin = perf_remote_run_begin, .poll_stop = perf_remote_poll_stop,
	  .run_end = perf_remote_run_end, .bye = perf_remote_bye },
};

static const struct perf_mode *
mode_of(const struct perf_conf *c)
{
	if (c->role == PERF_ROLE_BOTH)
		return &perf_modes[0];
	if (perf_pt_pingpong(c))
		return &perf_modes[1];
	return c->perftest ? &perf_modes[2] : &perf_modes[3];
}

int
main(int argc, char **argv)
{
	struct perf_conf conf;
	struct perf_env env;
	struct perf_result r;
	double floor_mpps = 0, floor_xc_mpps = 0;
	unsigned int i;
	int rc, failed = 0;

	rc = args_before_eal(argc, argv);
	if (rc >= 0)
		return rc;
	/* "TELEMETRY: No legacy callbacks, legacy socket not created" (a
	 * WARNING) is news to nobody: silenced unless the user set the
	 * telemetry's level (or every type's) themselves. */
	eal_argv = malloc(sizeof(*eal_argv) * ((size_t)argc + 3));
	if (eal_argv == NULL)
		return 1;
	i = 0;
	eal_argv[i++] = argv[0];
	if (!log_level_given(argc, argv, "telemetry"))
		eal_argv[i++] = (char *)(uintptr_t)PERF_TELEMETRY_QUIET;
	if (!log_level_given(argc, argv, "eal"))
		eal_argv[i++] = (char *)(uintptr_t)PERF_EAL_QUIET;
	memcpy(&eal_argv[i], &argv[1], sizeof(*argv) * (size_t)argc); /* incl. the NULL */
	argc += (int)i - 1;
	argv = eal_argv;
	/* EAL's threads (interrupts, multi-process, telemetry, the worker
	 * lcores) start with SIGINT/SIGTERM blocked: a signal for the program
	 * goes to this thread, whose blocking call (accept(), a read of the
	 * exchange) it ends with EINTR; taken by another thread it set the
	 * flag and left this one blocked (a --persist server waited in
	 * accept() for ever after a SIGINT) */
	rc = srnic_eal_init(argc, argv);
	if (rc < 0) {
		say_eal_failed(argc, argv);
		return 1;
	}
	/* no directory of ours left in /var/run/dpdk, nor of srnic processes
	 * that died before us */
	srnic_eal_remove_at_exit();
	srnic_eal_sweep();
	argv[rc] = argv[0];
	if (perf_parse_args(argc - rc, argv + rc, &conf) != 0)
		return 1;
	conf.mode = mode_of(&conf);
	perf_signals_install();
	rc = perf_setup(&env, &conf);
	if (rc != 0) {
		if (rc == -ESHUTDOWN) {
			say_server_stopped(rc, 0, conf.nb_sizes, false);
			if (conf.mode->bye != NULL)
				conf.mode->bye(&env); /* the server waits for it */
		}
		perf_teardown(&env); /* what was made before the failure (QPs, buffers) */
		if (rc == -ESHUTDOWN)
			return PERF_EXIT_SERVER_STOPPED;
		return perf_quitting() ? 0 : 1; /* stopped while setting up: said so */
	}
	perf_note_pmtu(&env); /* the path MTU the QPs took, the port's clamp explained */
	if (conf.role == PERF_ROLE_SERVER) {
		rc = conf.mode->serve(&env);
		perf_capture_close(&env);
		perf_print_counters(&env);
		perf_teardown(&env);
		return rc == 0 ? 0 : 1;
	}
	if (conf.floors) {
		floor_mpps = perf_floor_mpps();
		floor_xc_mpps = perf_floor_xcore_mpps(conf.op);
	}
	perf_print_header(&conf);
	for (i = 0; i < conf.nb_sizes; i++) {
		rc = perf_run(&env, conf.sizes[i], &r);
		if (rc == -ESHUTDOWN || rc == -ECONNRESET) {
			/* a row for the part that ran; none if this size never began */
			if (r.seconds > 0)
				perf_print_result(&conf, &r);
			say_server_stopped(rc, r.seconds > 0 ? i + 1 : i, conf.nb_sizes, r.seconds > 0);
			failed = PERF_EXIT_SERVER_STOPPED;
			break;
		}
		if (conf.floors) {
			r.floor_gbps = perf_floor_gbps(conf.sizes[i]);
			r.floor_mpps = floor_mpps;
			r.floor_xc_mpps = floor_xc_mpps;
		}
		perf_print_result(&conf, &r);
		if (rc != 0 || r.errors != 0 || r.verify_errors != 0) {
			failed = 1;
			if (rc != 0)
				break;
		}
		if (perf_quitting()) {
			if (i + 1 < conf.nb_sizes)
				printf("srnic-perf: stopped by signal %d: %u of %u sizes run, the last "
				       "one partly\n", perf_quit_signal(), i + 1, conf.nb_sizes);
			else
				printf("srnic-perf: stopped by signal %d: the run above is partial\n",
				       perf_quit_signal());
			break;
		}
	}
	if (conf.mode->bye != NULL)
		conf.mode->bye(&env);
	perf_capture_close(&env);
	perf_print_counters(&env);
	perf_teardown(&env);
	return failed;
}
