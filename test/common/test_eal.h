/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_EAL_H
#define SRNIC_TEST_EAL_H

/**
 * Bring up DPDK for a test process: no PCI, no hugepages (tests must run on
 * any CI machine), a file prefix of its own, plus extra EAL arguments
 * (e.g. "--vdev=net_memif0,role=server"). Returns 0 or a negative errno.
 */
int srnic_test_eal_init(const char *name, int n_extra, const char *const *extra);

/** A packet mbuf pool for tests (created once per process). */
struct rte_mempool *srnic_test_pool(void);

#endif
