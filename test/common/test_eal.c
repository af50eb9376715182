/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "srnic.h"
#include "test_eal.h"

#define TEST_EAL_MAX_ARGS 32
#define TEST_POOL_MBUFS 16383
#define TEST_POOL_CACHE 256

int
srnic_test_eal_init(const char *name, int n_extra, const char *const *extra)
{
	static char prefix[64];
	char *argv[TEST_EAL_MAX_ARGS];
	int argc = 0, i, rc;

	if (n_extra > TEST_EAL_MAX_ARGS - 8)
		return -E2BIG;
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic_%s_%d", name, (int)getpid());
	argv[argc++] = (char *)(uintptr_t)name;
	argv[argc++] = (char *)(uintptr_t)"--no-huge";
	argv[argc++] = (char *)(uintptr_t)"--no-pci";
	argv[argc++] = (char *)(uintptr_t)"-m";
	argv[argc++] = (char *)(uintptr_t)"512";
	argv[argc++] = prefix;
	argv[argc++] = (char *)(uintptr_t)"--log-level=lib.eal:error";
	for (i = 0; i < n_extra; i++)
		argv[argc++] = (char *)(uintptr_t)extra[i];
	rc = rte_eal_init(argc, argv);
	if (rc < 0)
		return -rte_errno;
	/* nothing left in /var/run/dpdk by this test, nor by earlier ones
	 * that were killed (a timeout) */
	srnic_eal_remove_at_exit();
	srnic_eal_sweep();
	return 0;
}

struct rte_mempool *
srnic_test_pool(void)
{
	static struct rte_mempool *mp;

	if (mp == NULL)
		mp = rte_pktmbuf_pool_create("srnic_test", TEST_POOL_MBUFS, TEST_POOL_CACHE, 0,
					     RTE_MBUF_DEFAULT_BUF_SIZE + 8192, rte_socket_id());
	return mp;
}

struct srnic_dev *
srnic_test_memif_dev(int server, const char *name, uint16_t *port)
{
	struct srnic_dev_conf dc;

	if (rte_eth_dev_get_port_by_name("net_memif0", port) != 0)
		return NULL;
	memset(&dc, 0, sizeof(dc));
	dc.port_id = *port;
	dc.nb_engines = 1;
	dc.mtu = 1500;
	dc.ip_ver = 4;
	dc.ip[0] = 127;
	dc.ip[2] = 1;
	dc.ip[3] = server ? 1 : 2;
	dc.name = name;
	return srnic_dev_create(&dc);
}
