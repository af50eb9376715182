/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Floors measured in the same run as the figures they judge:
 * - bandwidth: the per-byte work no RoCE endpoint avoids, ICRC over the
 *   payload (ISA-L) plus one memcpy into the destination;
 * - message rate: DPDK's plain mbuf round trip (alloc, TX, RX, TX back, RX,
 *   free) on a net_ring pair of its own, one lcore;
 * - message rate across two lcores: the mbufs one message moves, carried
 *   between the two lcores the engines use, on a net_ring pair of its own,
 *   nothing built or read: a request of one mbuf, an answer of three
 *   segments (header, an external-buffer attachment, trailer) for a READ,
 *   the other way round for a WRITE or SEND, one mbuf each way for an
 *   atomic. What the in-process pair costs before any RoCE work.
 */
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>
#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "perf.h"

#define FLOOR_REPS 7
#define FLOOR_BYTES (256u << 20)   /* bytes touched per repetition */
#define FLOOR_BUF (4u << 20)
#define FLOOR_RT_PKTS (1u << 20)
#define FLOOR_BURST 32
#define FLOOR_RING 4096              /* entries per net_ring direction, as the pair's */
#define FLOOR_POOL_CACHE 256         /* per-lcore mempool cache, as the engine's pools */
#define FLOOR_DATA_ROOM 256          /* direct mbufs: headers only */
#define FLOOR_RT_MBUFS 8191
#define FLOOR_XC_MSGS (1u << 20)     /* messages per repetition, two lcores */
#define FLOOR_XC_WINDOW 128          /* in flight: 8 QPs x 16 */
#define FLOOR_XC_MBUFS 4095
#define FLOOR_XC_HDR 58              /* Ethernet .. AETH of a READ response */
#define FLOOR_XC_REQ 74              /* Ethernet .. RETH + ICRC of a READ request */
#define FLOOR_XC_TRAILER 4
#define FLOOR_XC_PAYLOAD 64
#define FLOOR_XC_CREDITS 64          /* shinfo references taken at a time, as the engine */
#define FLOOR_XC_STALL_S 10          /* no answer for this long: a message was lost */
/* A repetition ends after its work or after this long, whichever comes
 * first (the rate is over what was done): the work above takes 10-300 ms
 * on a quiet host, but minutes in an ASan build on a loaded one. */
#define FLOOR_REP_MAX_MS 1000
#define FLOOR_CRC_CHECK_EVERY 256    /* copies between two looks at the clock */

static inline uint64_t
floor_rep_end(uint64_t t0)
{
	return t0 + rte_get_tsc_hz() / 1000 * FLOOR_REP_MAX_MS;
}

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
		uint64_t t0 = rte_rdtsc(), t, end = floor_rep_end(t0);

		for (i = 0; i < n; i++) {
			sink += crc32_gzip_refl(0, src + off, per);
			memcpy(dst + off, src + off, per);
			off = (off + per) % (FLOOR_BUF - per + 1);
			if (i % FLOOR_CRC_CHECK_EVERY == FLOOR_CRC_CHECK_EVERY - 1 &&
			    rte_rdtsc() > end) {
				i++;
				break;
			}
		}
		t = rte_rdtsc() - t0;
		g[r] = (double)i * per * 8 * rte_get_tsc_hz() / (double)t / 1e9;
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
		mp = rte_pktmbuf_pool_create("perf_floor", FLOOR_RT_MBUFS, FLOOR_POOL_CACHE, 0,
					     FLOOR_DATA_ROOM, rte_socket_id());
		if (mp == NULL || srnic_link_ring_pair("perffloor", 1, FLOOR_RING, &pa, &pb) != 0 ||
		    floor_port(pa, mp) != 0 || floor_port(pb, mp) != 0)
			return 0;
		made = true;
	}
	for (r = 0; r < FLOOR_REPS; r++) {
		uint64_t t0 = rte_rdtsc(), done = 0, end = floor_rep_end(t0);

		while (done < FLOOR_RT_PKTS && rte_rdtsc() < end) {
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

/* ---- the two-lcore floor ---- */

struct xc_floor {
	uint16_t port[2];                /* side A (this lcore), side B (worker) */
	struct rte_mempool *pool[2];     /* direct mbufs of each side */
	struct rte_mempool *ext_pool[2]; /* attachments of each side (no data room) */
	uint8_t *payload;
	rte_iova_t payload_iova;
	struct rte_mbuf_ext_shared_info shinfo;
	uint32_t credits[2];
	uint8_t chain[2];                /* side s sends 3-segment chains */
	volatile bool stop;
};

static void
xc_noop_free(void *addr __rte_unused, void *opaque __rte_unused)
{
}

/* A message of side s: one mbuf, or header + attachment + trailer. */
static struct rte_mbuf *
xc_build(struct xc_floor *x, int s)
{
	struct rte_mbuf *h, *e, *t;

	h = rte_pktmbuf_alloc(x->pool[s]);
	if (h == NULL)
		return NULL;
	if (!x->chain[s]) {
		rte_pktmbuf_append(h, FLOOR_XC_REQ);
		return h;
	}
	rte_pktmbuf_append(h, FLOOR_XC_HDR);
	e = rte_pktmbuf_alloc(x->ext_pool[s]);
	t = rte_pktmbuf_alloc(x->pool[s]);
	if (e == NULL || t == NULL) {
		rte_pktmbuf_free(h);
		rte_pktmbuf_free(e);
		rte_pktmbuf_free(t);
		return NULL;
	}
	if (x->credits[s] == 0) {
		__atomic_add_fetch(&x->shinfo.refcnt, FLOOR_XC_CREDITS, __ATOMIC_ACQ_REL);
		x->credits[s] = FLOOR_XC_CREDITS;
	}
	x->credits[s]--;
	rte_pktmbuf_attach_extbuf(e, x->payload, x->payload_iova, FLOOR_XC_PAYLOAD, &x->shinfo);
	e->data_len = FLOOR_XC_PAYLOAD;
	e->pkt_len = FLOOR_XC_PAYLOAD;
	rte_pktmbuf_append(t, FLOOR_XC_TRAILER);
	rte_pktmbuf_chain(h, e);
	rte_pktmbuf_chain(h, t);
	return h;
}

/* Side B: answer every message with one of its own until told to stop. */
static int
xc_side_b(void *arg)
{
	struct xc_floor *x = arg;
	struct rte_mbuf *rx[FLOOR_BURST], *tx[FLOOR_BURST];

	while (!x->stop) {
		uint16_t n = rte_eth_rx_burst(x->port[1], 0, rx, FLOOR_BURST), k, sent;

		for (k = 0; k < n; k++) {
			tx[k] = xc_build(x, 1);
			if (tx[k] == NULL)
				break;
		}
		rte_pktmbuf_free_bulk(rx, n);
		sent = rte_eth_tx_burst(x->port[1], 0, tx, k);
		rte_pktmbuf_free_bulk(tx + sent, k - sent);
	}
	return 0;
}

/* Side A: FLOOR_XC_WINDOW messages in flight; returns answers per second,
 * or 0 if a message was lost. */
static double
xc_side_a(struct xc_floor *x)
{
	struct rte_mbuf *m[FLOOR_BURST];
	uint64_t sent = 0, done = 0, t0 = rte_rdtsc(), end = floor_rep_end(t0);
	uint64_t give_up = t0 + FLOOR_XC_STALL_S * rte_get_tsc_hz();

	/* past the time cap: no new messages; the window drains */
	for (;;) {
		bool more = done < FLOOR_XC_MSGS && rte_rdtsc() < end; /* once per burst */
		uint16_t n, k;

		if (!more && done >= sent)
			break;
		for (k = 0; more && k < FLOOR_BURST && sent + k < FLOOR_XC_MSGS &&
			    sent + k - done < FLOOR_XC_WINDOW; k++) {
			m[k] = xc_build(x, 0);
			if (m[k] == NULL)
				break;
		}
		n = rte_eth_tx_burst(x->port[0], 0, m, k);
		rte_pktmbuf_free_bulk(m + n, k - n);
		sent += n;
		n = rte_eth_rx_burst(x->port[0], 0, m, FLOOR_BURST);
		rte_pktmbuf_free_bulk(m, n);
		done += n;
		if (n > 0)
			give_up = rte_rdtsc() + FLOOR_XC_STALL_S * rte_get_tsc_hz();
		else if (rte_rdtsc() > give_up)
			return 0;
	}
	return (double)done * rte_get_tsc_hz() / (double)(rte_rdtsc() - t0) / 1e6;
}

double
perf_floor_xcore_mpps(enum perf_op op)
{
	static struct xc_floor x;
	static bool made;
	unsigned int lcore = rte_get_next_lcore(rte_lcore_id(), 1, 0);
	double g[FLOOR_REPS];
	int r, s;

	if (lcore >= RTE_MAX_LCORE || rte_eal_get_lcore_state(lcore) != WAIT)
		return 0; /* needs a second lcore */
	if (!made) {
		for (s = 0; s < 2; s++) { /* each side's headers and attachments */
			char name[RTE_MEMPOOL_NAMESIZE];

			snprintf(name, sizeof(name), "perf_xf%c", 'a' + s);
			x.pool[s] = rte_pktmbuf_pool_create(name, FLOOR_XC_MBUFS, FLOOR_POOL_CACHE,
							    0, FLOOR_DATA_ROOM, rte_socket_id());
			snprintf(name, sizeof(name), "perf_xfe%c", 'a' + s);
			x.ext_pool[s] = rte_pktmbuf_pool_create(name, FLOOR_XC_MBUFS,
								FLOOR_POOL_CACHE, 0, 0,
								rte_socket_id());
			if (x.pool[s] == NULL || x.ext_pool[s] == NULL)
				return 0;
		}
		x.payload = rte_zmalloc("perf_xfp", FLOOR_XC_PAYLOAD, RTE_CACHE_LINE_SIZE);
		if (x.payload == NULL ||
		    srnic_link_ring_pair("perfxfloor", 1, FLOOR_RING, &x.port[0], &x.port[1]) != 0 ||
		    floor_port(x.port[0], x.pool[0]) != 0 || floor_port(x.port[1], x.pool[1]) != 0)
			return 0;
		x.payload_iova = rte_malloc_virt2iova(x.payload);
		x.shinfo.free_cb = xc_noop_free;
		rte_mbuf_ext_refcnt_set(&x.shinfo, 1); /* ours, never dropped */
		made = true;
	}
	x.chain[0] = op == PERF_OP_WRITE || op == PERF_OP_SEND;
	x.chain[1] = op == PERF_OP_READ;
	for (r = 0; r < FLOOR_REPS; r++) {
		x.stop = false;
		if (rte_eal_remote_launch(xc_side_b, &x, lcore) != 0)
			return 0;
		g[r] = xc_side_a(&x);
		x.stop = true;
		rte_eal_wait_lcore(lcore);
		if (g[r] == 0)
			return 0;
	}
	qsort(g, FLOOR_REPS, sizeof(g[0]), cmp_d);
	return g[FLOOR_REPS / 2];
}
