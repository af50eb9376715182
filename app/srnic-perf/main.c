/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic-perf: RDMA benchmark over srnic, perftest's figures with testpmd's
 * habits. EAL arguments first, then "--" and srnic-perf's own (--help).
 * Exit status: 0, or 1 if any work request failed or any byte was wrong.
 */
#include <stdlib.h>

#include <rte_eal.h>

#include "perf.h"

int
main(int argc, char **argv)
{
	struct perf_conf conf;
	struct perf_env env;
	struct perf_result r;
	double floor_mpps = 0, floor_xc_mpps = 0;
	unsigned int i;
	int rc, failed = 0;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "srnic-perf: EAL init failed\n");
		return 1;
	}
	argv[rc] = argv[0];
	if (perf_parse_args(argc - rc, argv + rc, &conf) != 0)
		return 1;
	if (perf_setup(&env, &conf) != 0)
		return 1;
	if (conf.role == PERF_ROLE_SERVER) {
		rc = perf_serve(&env);
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
	}
	perf_remote_bye(&env);
	perf_capture_close(&env);
	perf_print_counters(&env);
	perf_teardown(&env);
	return failed;
}
