/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Floors measured in the same run as the figures they judge:
 * - bandwidth: the per-byte work no RoCE endpoint avoids, ICRC over the
 *   payload (ISA-L) plus one memcpy into the destination;
 * - message rate: DPDK's plain mbuf round trip (alloc, TX, RX, TX back, RX,
 *   free) on a net_ring pair of its own, one lcore.
 */
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "perf.h"

#define FLOOR_REPS 7
#define FLOOR_BYTES (256u << 20)   /* bytes touched per repetition */
#define FLOOR_BUF (4u << 20)
#define FLOOR_RT_PKTS (1u << 20)
#define FLOOR_BURST 32

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double
perf_floor_gbps(uint32_t size)
{
	uint8_t *src = malloc(FLOOR_BUF), *dst = malloc(FLOOR_BUF);
	double g[FLOOR_REPS];
	volatile uint32_t sink = 0;
	uint32_t per = size == 0 ? 1 : size, n = FLOOR_BYTES / per, i, off = 0;
	int r;

	if (src == NULL || dst == NULL || per > FLOOR_BUF) {
		free(src);
		free(dst);
		return 0;
	}
	memset(src, 0x5a, FLOOR_BUF);
	memset(dst, 0, FLOOR_BUF);
	for (r = 0; r < FLOOR_REPS; r++) {
		uint64_t t0 = rte_rdtsc(), t;

		for (i = 0; i < n; i++) {
			sink += crc32_gzip_refl(0, src + off, per);
			memcpy(dst + off, src + off, per);
			off = (off + per) % (FLOOR_BUF - per + 1);
		}
		t = rte_rdtsc() - t0;
		g[r] = (double)n * per * 8 * rte_get_tsc_hz() / (double)t / 1e9;
	}
	free(src);
	free(dst);
	qsort(g, FLOOR_REPS, sizeof(g[0]), cmp_d);
	return g[FLOOR_REPS / 2];
}

static int
floor_port(uint16_t port, struct rte_mempool *mp)
{
	struct rte_eth_conf conf;

	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(port, 0, 1024, rte_socket_id(), NULL, mp) != 0 ||
	    rte_eth_tx_queue_setup(port, 0, 1024, rte_socket_id(), NULL) != 0)
		return -1;
	return rte_eth_dev_start(port);
}

double
perf_floor_mpps(void)
{
	static struct rte_mempool *mp;
	static uint16_t pa, pb;
	static bool made;
	struct rte_mbuf *m[FLOOR_BURST], *rx[FLOOR_BURST];
	double g[FLOOR_REPS];
	int r;

	if (!made) {
		mp = rte_pktmbuf_pool_create("perf_floor", 8191, 256, 0, 256, rte_socket_id());
		if (mp == NULL || srnic_link_ring_pair("perffloor", 1, 4096, &pa, &pb) != 0 ||
		    floor_port(pa, mp) != 0 || floor_port(pb, mp) != 0)
			return 0;
		made = true;
	}
	for (r = 0; r < FLOOR_REPS; r++) {
		uint64_t t0 = rte_rdtsc(), done = 0;

		while (done < FLOOR_RT_PKTS) {
			uint16_t n, k;

			if (rte_pktmbuf_alloc_bulk(mp, m, FLOOR_BURST) != 0)
				return 0;
			for (k = 0; k < FLOOR_BURST; k++)
				rte_pktmbuf_append(m[k], 64);
			n = rte_eth_tx_burst(pa, 0, m, FLOOR_BURST);
			rte_pktmbuf_free_bulk(m + n, FLOOR_BURST - n);
			n = rte_eth_rx_burst(pb, 0, rx, FLOOR_BURST);
			k = rte_eth_tx_burst(pb, 0, rx, n);
			rte_pktmbuf_free_bulk(rx + k, n - k);
			n = rte_eth_rx_burst(pa, 0, rx, FLOOR_BURST);
			rte_pktmbuf_free_bulk(rx, n);
			done += n;
		}
		g[r] = (double)done * rte_get_tsc_hz() / (double)(rte_rdtsc() - t0) / 1e6;
	}
	qsort(g, FLOOR_REPS, sizeof(g[0]), cmp_d);
	return g[FLOOR_REPS / 2];
}
