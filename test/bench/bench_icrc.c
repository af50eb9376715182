/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC cost per packet: srnic_icrc_compute() over RoCEv2 packets (RC SEND
 * ONLY, IPv4) with 64, 256, 1024 and 4096 bytes of payload, laid out
 *   - "single": the whole packet in one mbuf;
 *   - "chain":  header mbuf + the payload in an external buffer attached with
 *               rte_pktmbuf_attach_extbuf() + the pad/ICRC trailer mbuf that
 *               srnic_pkt_finish() adds (the zero-copy send case),
 * against a bare crc32_gzip_refl() over the same bytes (IP header .. pad,
 * contiguous), measured in the same run. ratio = bare time / ICRC time
 * (1.0: the ICRC costs exactly a bare CRC of the same bytes).
 *
 * Each repetition times `iters` back-to-back calls of each variant with
 * rte_rdtsc(), variants interleaved; the table shows the median over the
 * repetitions.
 *
 *   bench_icrc [EAL args] [-- --reps R --iters N]
 *   e.g. bench_icrc -l 1 --no-pci --file-prefix bench_icrc
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/crc.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "srnic_wire.h"
#include "test_pcap.h"

#define MAX_REPS 101
#define N_SIZES 4

static const uint32_t sizes[N_SIZES] = { 64, 256, 1024, 4096 };

enum variant { V_BARE, V_SINGLE, V_CHAIN, V_COUNT };
static const char *const variant_name[V_COUNT] = { "bare", "single", "chain" };

/* Results must be consumed or the calls could be dropped. */
static volatile uint32_t sink;

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static struct rte_mbuf *
build(struct rte_mempool *mp, const struct srnic_route *r, const uint8_t *payload,
      uint32_t len, bool chain, struct rte_mbuf_ext_shared_info *shinfo)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp), *x;
	uint8_t *bth;
	char *d;

	if (m == NULL)
		return NULL;
	bth = srnic_pkt_init(m, r, SRNIC_OP_RC_SEND_ONLY, 1);
	if (bth == NULL)
		goto fail;
	srnic_bth_set_psn(bth, 6352000);
	srnic_bth_set_dqpn(bth, 0x25);
	srnic_bth_set_ackreq(bth, true);
	if (chain) {
		x = srnic_test_mbuf_ext(mp, (void *)(uintptr_t)payload, (uint16_t)len, shinfo);
		if (x == NULL || rte_pktmbuf_chain(m, x) != 0) {
			rte_pktmbuf_free(x);
			goto fail;
		}
	} else {
		d = rte_pktmbuf_append(m, (uint16_t)len);
		if (d == NULL)
			goto fail;
		memcpy(d, payload, len);
	}
	if (srnic_pkt_finish(m, mp) != 0)
		goto fail;
	return m;
fail:
	rte_pktmbuf_free(m);
	return NULL;
}

static void
usage(const char *prog)
{
	fprintf(stderr, "usage: %s [EAL args] [-- --reps R --iters N]\n", prog);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reps", required_argument, NULL, 'r' },
		{ "iters", required_argument, NULL, 'i' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const uint8_t src_ip[4] = { 10, 77, 0, 2 }, dst_ip[4] = { 10, 77, 0, 3 };
	struct rte_mbuf_ext_shared_info shinfo;
	double t[V_COUNT][MAX_REPS], med[N_SIZES][V_COUNT];
	struct rte_mbuf *single[N_SIZES], *chain[N_SIZES];
	unsigned int reps = 21, rep, si, v, n_iters = 0;
	uint32_t crc_len[N_SIZES], icrc_ref;
	uint8_t *payload, *flat[N_SIZES];
	struct rte_mempool *mp;
	struct srnic_route r;
	uint64_t hz;
	int rc, c;

	rc = rte_eal_init(argc, argv);
	if (rc < 0) {
		fprintf(stderr, "bench_icrc: EAL init failed: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= rc;
	argv += rc;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			reps = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'i':
			n_iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	if (reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "bench_icrc: --reps must be 1..%d\n", MAX_REPS);
		return 2;
	}

	mp = rte_pktmbuf_pool_create("bench_icrc", 255, 0, 0,
				     RTE_PKTMBUF_HEADROOM + 4096 + 256, rte_socket_id());
	/* the payload as registered memory would be: DPDK memory, cache aligned */
	payload = rte_malloc("bench_icrc_payload", 4096 + 64, RTE_CACHE_LINE_SIZE);
	if (mp == NULL || payload == NULL) {
		fprintf(stderr, "bench_icrc: out of memory\n");
		return 1;
	}
	for (si = 0; si < 4096 + 64; si++)
		payload[si] = (uint8_t)(si * 131 + 7);
	srnic_test_ext_shinfo_init(&shinfo);

	memset(&r, 0, sizeof(r));
	r.ip_ver = 4;
	r.ttl = 64;
	r.udp_sport = srnic_roce_sport(0x25, 0x25);
	memcpy(r.src_ip, src_ip, sizeof(src_ip));
	memcpy(r.dst_ip, dst_ip, sizeof(dst_ip));

	for (si = 0; si < N_SIZES; si++) {
		single[si] = build(mp, &r, payload, sizes[si], false, &shinfo);
		chain[si] = build(mp, &r, payload, sizes[si], true, &shinfo);
		if (single[si] == NULL || chain[si] == NULL) {
			fprintf(stderr, "bench_icrc: cannot build packets\n");
			return 1;
		}
		/* IP header .. pad: what the ICRC covers besides the pseudo header */
		crc_len[si] = rte_pktmbuf_pkt_len(single[si]) - RTE_ETHER_HDR_LEN - SRNIC_ICRC_LEN;
		flat[si] = rte_malloc("bench_icrc_flat", crc_len[si] + SRNIC_ICRC_LEN,
				      RTE_CACHE_LINE_SIZE);
		if (flat[si] == NULL)
			return 1;
		memcpy(flat[si], rte_pktmbuf_mtod_offset(single[si], uint8_t *, RTE_ETHER_HDR_LEN),
		       crc_len[si] + SRNIC_ICRC_LEN);
		/* sanity: both layouts give the stored ICRC */
		icrc_ref = srnic_icrc_compute(single[si], RTE_ETHER_HDR_LEN, crc_len[si], 4);
		if (icrc_ref != srnic_icrc_compute(chain[si], RTE_ETHER_HDR_LEN, crc_len[si], 4) ||
		    chain[si]->nb_segs != 3) {
			fprintf(stderr, "bench_icrc: layouts disagree\n");
			return 1;
		}
	}

	hz = rte_get_tsc_hz();
	printf("bench_icrc: lcore %u, TSC %.3f GHz, hugepages %s, %u repetitions, ISA-L crc32_gzip_refl\n",
	       rte_lcore_id(), hz / 1e9, rte_eal_has_hugepages() ? "yes" : "no", reps);
	printf("%8s %6s %8s | %9s %7s | %9s %7s | %6s\n", "payload", "bytes", "layout",
	       "ns/pkt", "GB/s", "bare ns", "GB/s", "ratio");

	for (si = 0; si < N_SIZES; si++) {
		/* about 2 ms of work per variant per repetition */
		unsigned int iters = n_iters != 0 ? n_iters : 20000000u / (crc_len[si] + 200);
		const struct rte_mbuf *ms = single[si], *mc = chain[si];
		const uint8_t *fb = flat[si];
		uint32_t n = crc_len[si], acc = 0, i;

		for (rep = 0; rep < reps + 1; rep++) {
			for (v = 0; v < V_COUNT; v++) {
				uint64_t t0, t1;

				t0 = rte_rdtsc();
				switch (v) {
				case V_BARE:
					for (i = 0; i < iters; i++)
						acc ^= crc32_gzip_refl(i, fb, n);
					break;
				case V_SINGLE:
					for (i = 0; i < iters; i++)
						acc ^= srnic_icrc_compute(ms, RTE_ETHER_HDR_LEN, n, 4);
					break;
				default:
					for (i = 0; i < iters; i++)
						acc ^= srnic_icrc_compute(mc, RTE_ETHER_HDR_LEN, n, 4);
					break;
				}
				t1 = rte_rdtsc();
				/* repetition 0 warms up caches and clocks: not kept */
				if (rep > 0)
					t[v][rep - 1] = (double)(t1 - t0) * 1e9 / (double)hz / iters;
			}
		}
		sink ^= acc;
		for (v = 0; v < V_COUNT; v++)
			med[si][v] = median(t[v], reps);
		for (v = V_SINGLE; v < V_COUNT; v++)
			printf("%8u %6u %8s | %9.1f %7.2f | %9.1f %7.2f | %6.3f\n", sizes[si], n,
			       variant_name[v], med[si][v], n / med[si][v], med[si][V_BARE],
			       n / med[si][V_BARE], med[si][V_BARE] / med[si][v]);
	}
	printf("ratio at 4096 B: single %.3f, chain %.3f (target >= 0.9)\n",
	       med[N_SIZES - 1][V_BARE] / med[N_SIZES - 1][V_SINGLE],
	       med[N_SIZES - 1][V_BARE] / med[N_SIZES - 1][V_CHAIN]);

	for (si = 0; si < N_SIZES; si++) {
		rte_pktmbuf_free(single[si]);
		rte_pktmbuf_free(chain[si]);
		rte_free(flat[si]);
	}
	rte_free(payload);
	rte_eal_cleanup();
	return 0;
}
