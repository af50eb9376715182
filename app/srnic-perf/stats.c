/* SPDX-License-Identifier: BSD-3-Clause */
/* Result tables (perftest's columns), JSON lines, engine counters. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_version.h>

#include "perf.h"

#ifndef SRNIC_PERF_VERSION
#define SRNIC_PERF_VERSION "unknown"
#endif

double
perf_percentile(uint64_t *sorted, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)ceil(p / 100.0 * (double)n);
	return (double)sorted[i == 0 ? 0 : RTE_MIN(i, n) - 1];
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void
perf_lat_fill(struct perf_result *r, uint64_t *samples, size_t n, double hz)
{
	double sum = 0;
	size_t k;

	if (n == 0)
		return;
	qsort(samples, n, sizeof(uint64_t), cmp_u64);
	for (k = 0; k < n; k++)
		sum += (double)samples[k];
	r->lat_us[0] = (double)samples[0] * 1e6 / hz;
	r->lat_us[1] = perf_percentile(samples, n, 50) * 1e6 / hz;
	r->lat_us[2] = perf_percentile(samples, n, 99) * 1e6 / hz;
	r->lat_us[3] = perf_percentile(samples, n, 99.9) * 1e6 / hz;
	r->lat_us[4] = (double)samples[n - 1] * 1e6 / hz;
	r->lat_avg_us = sum / (double)n * 1e6 / hz;
	/* perftest's t_stdev, and the histogram (-H) in powers of two of ns */
	{
		double mean = sum / (double)n, var = 0;

		for (k = 0; k < n; k++) {
			double d = (double)samples[k] - mean;
			unsigned int b = 0;
			double ns = (double)samples[k] * 1e9 / hz;

			var += d * d;
			while (b + 1 < PERF_HIST_BUCKETS && ns >= (double)(2ull << b))
				b++;
			r->lat_hist[b]++;
		}
		r->lat_stdev_us = sqrt(var / (double)n) * 1e6 / hz;
		r->lat_n = n;
	}
}

/* Bucket b of the histogram: [lo, hi) ns. */
static void
hist_bounds(unsigned int b, uint64_t *lo, uint64_t *hi)
{
	*lo = b == 0 ? 0 : 1ull << b;
	*hi = 2ull << b;
}

/* The extra lines and JSON keys of perftest's and testpmd's options. */
static void
print_habits(const struct perf_conf *c, const struct perf_result *r)
{
	double cpu = r->cpu_user_s + r->cpu_sys_s;
	unsigned int b;
	uint64_t lo, hi, cum = 0;
	bool first = true;

	if (c->json) {
		printf(",\"lat_stdev_us\":%.3f", r->lat_stdev_us);
		if (c->histogram) {
			printf(",\"lat_hist_ns\":[");
			for (b = 0; b < PERF_HIST_BUCKETS; b++) {
				if (r->lat_hist[b] == 0)
					continue;
				hist_bounds(b, &lo, &hi);
				printf("%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", lo,
				       hi, r->lat_hist[b]);
				first = false;
			}
			printf("]");
		}
		if (c->cpu_util)
			printf(",\"cpu_util\":{\"user_s\":%.3f,\"sys_s\":%.3f,\"pct\":%.1f}",
			       r->cpu_user_s, r->cpu_sys_s,
			       r->seconds > 0 ? 100.0 * cpu / r->seconds : 0.0);
		return;
	}
	if (c->lat)
		printf("   t_stdev %.2f us over %zu samples\n", r->lat_stdev_us, r->lat_n);
	if (c->histogram && r->lat_n > 0) {
		printf("   latency histogram: [from, to) ns    samples   cumulative\n");
		for (b = 0; b < PERF_HIST_BUCKETS; b++) {
			if (r->lat_hist[b] == 0)
				continue;
			cum += r->lat_hist[b];
			hist_bounds(b, &lo, &hi);
			printf("   %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %10.3f%%\n", lo, hi,
			       r->lat_hist[b], 100.0 * (double)cum / (double)r->lat_n);
		}
	}
	if (c->cpu_util)
		printf("   CPU: %.1f%% of one core over the run (user %.3f s, sys %.3f s; each "
		       "polling lcore takes a whole core)\n",
		       r->seconds > 0 ? 100.0 * cpu / r->seconds : 0.0, r->cpu_user_s, r->cpu_sys_s);
}

void
perf_print_xstats(const struct perf_env *env)
{
	const struct perf_conf *c = env->conf;
	uint16_t ports[2];
	unsigned int nb = 0, p;

	if (c->json)
		return;
	if (c->role == PERF_ROLE_BOTH) {
		ports[nb++] = env->pair.port[0];
		ports[nb++] = env->pair.port[1];
	} else {
		ports[nb++] = c->port_id;
	}
	for (p = 0; p < nb; p++) {
		struct rte_eth_xstat_name *names = NULL;
		struct rte_eth_xstat *vals = NULL;
		char pname[RTE_ETH_NAME_MAX_LEN] = "?";
		int n = rte_eth_xstats_get_names(ports[p], NULL, 0), k, got;

		if (n <= 0)
			continue;
		names = calloc((size_t)n, sizeof(*names));
		vals = calloc((size_t)n, sizeof(*vals));
		if (names != NULL && vals != NULL &&
		    rte_eth_xstats_get_names(ports[p], names, (unsigned int)n) == n &&
		    (got = rte_eth_xstats_get(ports[p], vals, (unsigned int)n)) > 0) {
			unsigned int shown = 0;

			rte_eth_dev_get_name_by_port(ports[p], pname);
			printf("   port %u (%s) xstats, nonzero:", ports[p], pname);
			for (k = 0; k < got && k < n; k++)
				if (vals[k].value != 0 && vals[k].id < (uint64_t)n) {
					printf("\n     %-34s %16" PRIu64, names[vals[k].id].name,
					       vals[k].value);
					shown++;
				}
			printf("%s\n", shown == 0 ? " none" : "");
		}
		free(names);
		free(vals);
	}
}

void
perf_print_header(const struct perf_conf *c)
{
	if (c->json)
		return;
	printf("---------------------------------------------------------------------------------------------------\n");
	printf(" srnic-perf: RDMA_%s, %u QP(s), depth %u, path MTU %u, %u requester lcore(s)%s%s\n",
	       c->op == PERF_OP_READ ? "Read" : c->op == PERF_OP_WRITE ? "Write" :
	       c->op == PERF_OP_SEND ? "Send" : c->cas ? "Cmp_Swap" : "Fetch_Add",
	       c->qps, perf_pt_pingpong(c) ? 1 : c->depth,
	       128u << (c->pmtu_eff != 0 ? c->pmtu_eff : c->mtu), c->nb_lcores,
	       perf_pt_pingpong(c) ? ", ping-pong latency (half a round trip, as perftest)" :
	       c->lat ? ", latency mode" : "",
	       c->verify ? ", data verified" : "");
	if (c->pmtu_eff != 0 && c->pmtu_eff < c->mtu)
		printf(" path MTU %u, not the %u asked: the port carries Ethernet MTU %u (see the "
		       "warning above)\n", 128u << c->pmtu_eff, 128u << c->mtu, c->port_mtu);
	if (c->read_inline > 0 && c->op == PERF_OP_READ)
		printf(" READ responses of up to %u payload bytes copied, not zero-copy (--read-inline)\n",
		       c->read_inline);
	printf("---------------------------------------------------------------------------------------------------\n");
	printf(" %9s %12s %10s %10s %10s %10s %9s %9s %9s %9s %9s\n", "#bytes", "#iterations",
	       "BW peak", "BW avg", "MsgRate", "t_min[us]", "t_p50", "t_p99", "t_p99.9", "t_max",
	       "t_avg");
	printf(" %9s %12s %10s %10s %10s\n", "", "", "[Gb/s]", "[Gb/s]", "[Mpps]");
}

void
perf_print_result(const struct perf_conf *c, const struct perf_result *r)
{
	if (c->json) {
		printf("{\"op\":\"%s\",\"size\":%u,\"qps\":%u,\"depth\":%u,\"mtu\":%u,"
		       "\"mtu_asked\":%u,"
		       "\"msgs\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"seconds\":%.6f,"
		       "\"gbps\":%.3f,\"mops\":%.4f,\"gbps_peak\":%.3f,\"mops_peak\":%.4f,"
		       "\"lat_us\":{\"min\":%.3f,\"p50\":%.3f,"
		       "\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f,\"avg\":%.3f},"
		       "\"errors\":%" PRIu64 ",\"verify_errors\":%" PRIu64 ",\"qp_mem_bytes\":%zu",
		       perf_op_name(r->op), r->size, r->qps, r->depth, r->mtu, 128u << c->mtu,
		       r->msgs, r->bytes,
		       r->seconds, r->gbps, r->mops, r->gbps_peak, r->mops_peak, r->lat_us[0],
		       r->lat_us[1], r->lat_us[2],
		       r->lat_us[3], r->lat_us[4], r->lat_avg_us, r->errors, r->verify_errors,
		       r->qp_mem_bytes);
		if (r->op == PERF_OP_ATOMIC)
			printf(",\"atomic\":\"%s\"", c->cas ? "cas" : "fadd");
		printf(",\"read_inline\":%u", c->read_inline);
		if (r->floor_gbps > 0)
			printf(",\"floor_gbps\":%.3f,\"ratio_gbps\":%.4f,\"floor_mpps\":%.3f,"
			       "\"ratio_mpps\":%.4f",
			       r->floor_gbps, r->gbps / r->floor_gbps, r->floor_mpps,
			       r->floor_mpps > 0 ? r->mops / r->floor_mpps : 0.0);
		if (r->floor_xc_mpps > 0)
			printf(",\"floor_xc_mpps\":%.3f,\"ratio_xc_mpps\":%.4f", r->floor_xc_mpps,
			       r->mops / r->floor_xc_mpps);
		if (r->busy_pct[0] >= 0 && r->busy_pct[1] >= 0)
			printf(",\"busy_pct\":{\"req\":%.1f,\"resp\":%.1f}", r->busy_pct[0],
			       r->busy_pct[1]);
		print_habits(c, r);
		printf("}\n");
		fflush(stdout);
		return;
	}
	printf(" %9u %12" PRIu64 " %10.2f %10.2f %10.3f %10.2f %9.2f %9.2f %9.2f %9.2f %9.2f\n",
	       r->size, r->msgs, r->gbps_peak, r->gbps, r->mops, r->lat_us[0], r->lat_us[1],
	       r->lat_us[2], r->lat_us[3], r->lat_us[4], r->lat_avg_us);
	if (r->floor_gbps > 0)
		printf("   floors (same run): ICRC+memcpy %.2f Gb/s -> ratio %.3f; mbuf round trip "
		       "%.3f M/s -> ratio %.3f\n",
		       r->floor_gbps, r->gbps / r->floor_gbps, r->floor_mpps,
		       r->floor_mpps > 0 ? r->mops / r->floor_mpps : 0.0);
	if (r->floor_xc_mpps > 0)
		printf("   floor across the two lcores (this op's mbufs carried, nothing built): "
		       "%.3f M/s -> ratio %.3f\n",
		       r->floor_xc_mpps, r->mops / r->floor_xc_mpps);
	if (r->busy_pct[0] >= 0 && r->busy_pct[1] >= 0)
		printf("   engine busy: requester side %.1f%%, responder side %.1f%%\n",
		       r->busy_pct[0], r->busy_pct[1]);
	print_habits(c, r);
	if (r->errors || r->verify_errors)
		printf("   ERRORS: %" PRIu64 " failed WRs, %" PRIu64 " data mismatches\n", r->errors,
		       r->verify_errors);
	fflush(stdout);
}

/* The local devices' sides (0: requester, 1: responder), and how many. */
static unsigned int
local_sides(const struct perf_env *env, unsigned int *sides)
{
	unsigned int s, n = 0;

	for (s = 0; s < 2; s++)
		if (env->dev[s] != NULL)
			sides[n++] = s;
	return n;
}

static const char *const side_names[2] = { "requester side A", "responder side B" };

void
perf_print_counters(const struct perf_env *env)
{
	const struct perf_conf *c = env->conf;
	unsigned int n = srnic_engine_stats_count(), i, s, k, sides[2], nb;

	if (c->json) {
		perf_print_counters_json(env);
		return;
	}
	nb = local_sides(env, sides);
	if (nb == 0)
		return;
	printf("---------------------------------------------------------------------------------------------------\n");
	/* two processes: this process's device only, no column of zeros
	 * for the other side's (its own counters are printed there) */
	printf(" engine counters (nonzero), %s%s%s%s; memory per QP %zu bytes\n",
	       side_names[sides[0]], nb == 2 ? " | " : "", nb == 2 ? side_names[sides[1]] : "",
	       nb == 1 ? (sides[0] == 0 ? " (this client)" : " (this server)") : "", env->qp_mem);
	for (s = 0; s < 2; s++) {
		struct srnic_lossy_stats ls;
		unsigned int a;

		if (env->loss[s] == NULL)
			continue;
		srnic_lossy_get_stats(env->loss[s], &ls);
		printf("   lossy link %s:", s == 1 ? "A -> B" : "B -> A");
		for (a = 0; a < SRNIC_LOSSY_ACTION_COUNT; a++)
			printf(" %s %" PRIu64, srnic_lossy_action_name((enum srnic_lossy_action)a),
			       ls.n[a]);
		/* held packets keep their own bytes (zero-copy ones copied) */
		printf(" held-copies %" PRIu64 "\n", ls.held_copies);
	}
	for (i = 0; i < n; i++) {
		int64_t v[2];
		bool any = false;

		for (k = 0; k < nb; k++) {
			v[k] = srnic_dev_stat(env->dev[sides[k]], srnic_engine_stat_name(i));
			any |= v[k] != 0;
		}
		if (!any)
			continue;
		printf("   %-28s %16" PRId64, srnic_engine_stat_name(i), v[0]);
		if (nb == 2)
			printf(" | %16" PRId64, v[1]);
		printf("\n");
	}
	/* how loaded each side's engine lcore was: which one bounds the rate */
	printf("   %-28s", "engine busy (%)");
	for (k = 0; k < nb; k++) {
		struct srnic_dev *dev = env->dev[sides[k]];
		double b, t;

		b = (double)srnic_dev_stat(dev, "poll_busy_cycles");
		t = b + (double)srnic_dev_stat(dev, "poll_idle_cycles");
		b = t > 0 ? 100.0 * b / t : 0;
		printf(k == 0 ? " %16.1f" : " | %16.1f", b);
	}
	printf("\n");
	perf_print_xstats(env);
}

void
perf_print_counters_json(const struct perf_env *env)
{
	static const char *const keys[2] = { "req", "resp" };
	unsigned int n = srnic_engine_stats_count(), i, k, sides[2], nb;

	nb = local_sides(env, sides);
	if (nb == 0)
		return;
	/* its own key, no "op": a reader of result lines tells it apart */
	printf("{\"counters\":{");
	for (k = 0; k < nb; k++) {
		struct srnic_dev *dev = env->dev[sides[k]];

		printf("%s\"%s\":{\"dev\":\"%s\"", k > 0 ? "," : "", keys[sides[k]],
		       srnic_dev_name(dev));
		for (i = 0; i < n; i++) {
			int64_t v = srnic_dev_stat(dev, srnic_engine_stat_name(i));

			if (v != 0)
				printf(",\"%s\":%" PRId64, srnic_engine_stat_name(i), v);
		}
		printf("}");
	}
	printf("},\"qp_mem_bytes\":%zu}\n", env->qp_mem);
	fflush(stdout);
}

void
perf_note_pmtu(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	struct rte_eth_dev_info info;
	struct srnic_qp_init_attr init;
	struct ibv_qp_attr a;
	int side = env->dev[0] != NULL ? 0 : 1;

	if (env->qps == NULL || env->qps[0].qp[side] == NULL ||
	    srnic_query_qp(env->qps[0].qp[side], &a, IBV_QP_PATH_MTU, &init) != 0)
		return;
	c->pmtu_eff = a.path_mtu;
	if (c->role == PERF_ROLE_BOTH || c->pmtu_eff >= c->mtu)
		return;
	/* The device kept to the Ethernet MTU the port takes (a NOTICE line
	 * of srnic's, a WARNING of DPDK's above): say what it means here. */
	memset(&info, 0, sizeof(info));
	if (rte_eth_dev_get_mtu(c->port_id, &c->port_mtu) != 0)
		c->port_mtu = 0;
	rte_eth_dev_info_get(c->port_id, &info);
	fprintf(stderr, "srnic-perf: WARNING: path MTU %u, not the %u asked (--mtu): port %u (%s) "
			"takes Ethernet MTU %u, frames of at most %u bytes\n",
		128u << c->pmtu_eff, 128u << c->mtu, c->port_id,
		info.driver_name != NULL ? info.driver_name : "?", c->port_mtu, info.max_rx_pktlen);
	if (info.driver_name != NULL && strcmp(info.driver_name, "net_af_packet") == 0)
		fprintf(stderr, "  net_af_packet's frame limit: for jumbo frames use net_pcap on the "
				"same interface (--vdev=net_pcap0,iface=IFACE)\n  with the interface's "
				"MTU raised (ip link set IFACE mtu 9000)\n");
	else
		fprintf(stderr, "  for a larger path MTU give the port (and the link) a larger MTU, or "
				"pass --mtu %u\n", 128u << c->pmtu_eff);
}
