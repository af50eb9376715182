/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The embedded topology: two srnic devices over a net_ring pair, one engine
 * per requester lcore on each side (queue i of A feeds queue i of B, so QP i
 * on A's engine k talks to B's engine k and no packet is redirected), one CQ
 * per engine, QPs connected across, buffers registered.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "perf.h"
#include "srnic_wire.h"

#define PERF_CQE_MIN 256u

static struct srnic_pcap *pcap;
static struct srnic_capture *cap[2];
static const struct srnic_pair *trace_pair;

static void
on_packet(uint16_t port_id, int dir, const struct rte_mbuf *m, uint64_t tsc, void *arg)
{
	const struct perf_conf *c = arg;

	RTE_SET_USED(dir);
	if (pcap != NULL)
		srnic_pcap_write(pcap, m, srnic_pcap_tsc_to_ns(pcap, tsc));
	if (c->trace) {
		char line[256];

		srnic_pkt_describe((struct rte_mbuf *)(uintptr_t)m, line, sizeof(line));
		printf("  %s  %s\n", port_id == trace_pair->port[1] ? "A -> B" : "B -> A", line);
	}
}

static void *
buf_alloc(size_t len)
{
	void *p = rte_malloc("perf_buf", len, 4096);

	if (p == NULL) /* hugepages short: application memory works as well */
		p = aligned_alloc(4096, RTE_ALIGN_CEIL(len, 4096));
	return p;
}

static size_t
heap_used(void)
{
	struct rte_malloc_socket_stats st;

	memset(&st, 0, sizeof(st));
	rte_malloc_get_socket_stats((int)rte_socket_id(), &st);
	return st.heap_allocsz_bytes;
}

int
perf_setup(struct perf_env *env, struct perf_conf *c)
{
	/* ACK timeout: 67 ms (14) on a clean link; 1 ms (8) with injected loss. */
	struct srnic_pair_qp_conf qc = { .path_mtu = c->mtu, .psn = { 2000, 7000 },
					 .max_rd_atomic = SRNIC_MAX_RD_ATOMIC,
					 .timeout = c->lossy ? 8 : 14,
					 .retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1 };
	uint32_t per_lcore = (c->qps + c->nb_lcores - 1) / c->nb_lcores;
	size_t before, slot_bytes;
	unsigned int i, s;
	int rc;

	memset(env, 0, sizeof(*env));
	env->conf = c;
	for (i = 0; i < c->nb_sizes; i++)
		env->max_size = RTE_MAX(env->max_size, c->sizes[i]);
	rc = srnic_pair_create(&env->pair, "perf", (uint16_t)c->nb_lcores, 9000);
	if (rc != 0) {
		fprintf(stderr, "srnic-perf: cannot create the pair: %d\n", rc);
		return rc;
	}
	before = heap_used();
	for (s = 0; s < 2; s++)
		for (i = 0; i < c->nb_lcores; i++) {
			env->cq[s][i] = srnic_create_cq(env->pair.dev[s],
						       (int)RTE_MAX(PERF_CQE_MIN, per_lcore * c->depth * 2),
						       srnic_dev_engine(env->pair.dev[s], (uint16_t)i));
			if (env->cq[s][i] == NULL)
				return -ENOMEM;
		}
	env->qps = calloc(c->qps, sizeof(*env->qps));
	if (env->qps == NULL)
		return -ENOMEM;
	slot_bytes = RTE_MAX(env->max_size, 8u);
	for (i = 0; i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];

		q->lcore_idx = i % c->nb_lcores;
		for (s = 0; s < 2; s++) {
			struct srnic_qp_init_attr qa = {
				.send_cq = env->cq[s][q->lcore_idx],
				.recv_cq = env->cq[s][q->lcore_idx],
				.max_send_wr = c->depth, .max_recv_wr = c->depth,
				.max_send_sge = 1, .max_recv_sge = 1, .qp_type = IBV_QPT_RC,
			};

			q->qp[s] = srnic_create_qp(env->pair.pd[s], &qa);
			if (q->qp[s] == NULL)
				return -ENOMEM;
		}
		if (i == 0)
			env->qp_mem = heap_used() - before; /* CQs + the first QP pair */
		rc = srnic_pair_connect(&env->pair, q->qp[0], q->qp[1], &qc);
		if (rc != 0)
			return rc;
	}
	/* Memory per QP: the control objects (both sides) averaged, buffers apart. */
	env->qp_mem = (heap_used() - before) / c->qps;
	for (i = 0; i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];

		for (s = 0; s < 2; s++) {
			size_t len = slot_bytes * c->depth;

			q->buf[s] = buf_alloc(len);
			if (q->buf[s] == NULL)
				return -ENOMEM;
			memset(q->buf[s], 0, len);
			q->mr[s] = srnic_reg_mr(env->pair.pd[s], q->buf[s], len,
						IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
						IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
			if (q->mr[s] == NULL)
				return -ENOMEM;
		}
		q->peer_rkey = srnic_mr_rkey(q->mr[1]);
		q->peer_va = (uintptr_t)q->buf[1];
	}
	if (c->lossy) {
		/* Retransmission timeout 1 ms (code 8) is set in perf_setup's qc. */
		c->loss.pool = rte_pktmbuf_pool_create("perf_loss", 8191, 256, 0,
						       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
		for (s = 0; s < 2; s++) {
			env->loss[s] = srnic_lossy_attach(env->pair.port[s], &c->loss);
			if (c->loss.pool == NULL || env->loss[s] == NULL)
				return -ENOMEM;
			c->loss.seed = c->loss.seed * 6364136223846793005ull + 1442695040888963407ull;
		}
	}
	if (c->pcap != NULL) {
		pcap = srnic_pcap_open(c->pcap);
		if (pcap == NULL) {
			fprintf(stderr, "srnic-perf: cannot open %s\n", c->pcap);
			return -EIO;
		}
	}
	if (c->trace || pcap != NULL) {
		trace_pair = &env->pair;
		cap[0] = srnic_capture_start(env->pair.port[0], SRNIC_CAPTURE_RX, on_packet, c);
		cap[1] = srnic_capture_start(env->pair.port[1], SRNIC_CAPTURE_RX, on_packet, c);
	}
	return 0;
}

void
perf_capture_close(struct perf_env *env)
{
	RTE_SET_USED(env);
	if (cap[0] != NULL)
		srnic_capture_stop(cap[0]);
	if (cap[1] != NULL)
		srnic_capture_stop(cap[1]);
	cap[0] = cap[1] = NULL;
	if (pcap != NULL)
		srnic_pcap_close(pcap);
	pcap = NULL;
}
