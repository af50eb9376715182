/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_EAL_H
#define SRNIC_TEST_EAL_H

#include <stdint.h>

/**
 * Bring up DPDK for a test process: no PCI, no hugepages (tests must run on
 * any CI machine), a file prefix of its own, plus extra EAL arguments
 * (e.g. "--vdev=net_memif0,role=server"). Returns 0 or a negative errno.
 */
int srnic_test_eal_init(const char *name, int n_extra, const char *const *extra);

/** A packet mbuf pool for tests (created once per process). */
struct rte_mempool *srnic_test_pool(void);

struct srnic_dev;
/* The memif tests' device, on net_memif0 (its port in *port): one
 * engine, MTU 1500, IPv4 127.0.1.1 for the server, .2 for the client. */
struct srnic_dev *srnic_test_memif_dev(int server, const char *name, uint16_t *port);

#endif
