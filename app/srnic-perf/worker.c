/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The workers. A requester worker owns engine k of side A and the QPs
 * pinned to it: it posts up to --depth WRs per QP, polls its engine, polls
 * its CQ. The responder worker polls every engine of side B (and, for SEND,
 * reposts RECVs). Each runs on its own lcore when there are enough; with
 * one lcore the main loop drives both sides in turn.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "perf.h"

#define WC_BURST 64
#define WRID_COUNT_MASK 0xFFFFFFFFull

struct req_worker {
	struct perf_env *env;
	unsigned int idx;
	uint32_t size;
	uint64_t target_per_qp;     /* iterations mode */
	uint64_t *lat;              /* samples, in TSC cycles */
	size_t nb_lat;
	size_t cap_lat;
	uint64_t last_progress;     /* TSC of the last completion */
	uint64_t errors;
	uint64_t verify_errors;
	uint64_t msgs;
	int rc;
};

static volatile bool resp_stop;
static volatile bool req_time_up;
static volatile uint64_t live_msgs[PERF_MAX_LCORES];

static inline uint8_t
pattern(uint64_t idx, uint32_t j)
{
	return (uint8_t)(idx * 131u + j * 7u + 1u);
}

static void
fill_pattern(uint8_t *p, uint32_t len, uint64_t idx)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		p[j] = pattern(idx, j);
}

static bool
check_pattern(const uint8_t *p, uint32_t len, uint64_t idx)
{
	uint32_t j;

	for (j = 0; j < len; j++)
		if (p[j] != pattern(idx, j))
			return false;
	return true;
}

static int
post_one(struct req_worker *w, struct perf_qp *q, uint32_t qi, bool last)
{
	const struct perf_conf *c = w->env->conf;
	uint32_t slot_size = RTE_MAX(w->env->max_size, 8u);
	uint64_t idx = q->posted;
	uint32_t slot = (uint32_t)(idx % c->depth);
	uint8_t *local = q->buf[0] + (size_t)slot * slot_size;
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = w->size,
			       .lkey = srnic_mr_lkey(q->mr[0]) };
	struct ibv_send_wr wr, *bad;
	bool sig = last || q->unsig_run + 1 >= c->unsignaled;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr_id = ((uint64_t)qi << 32) | (q->unsig_run + 1);
	wr.send_flags = sig ? IBV_SEND_SIGNALED : 0;
	wr.wr.rdma.remote_addr = q->peer_va + (uint64_t)slot * slot_size;
	wr.wr.rdma.rkey = q->peer_rkey;
	switch (c->op) {
	case PERF_OP_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		if (c->verify)
			memset(local, 0, w->size);
		break;
	case PERF_OP_WRITE:
		wr.opcode = IBV_WR_RDMA_WRITE;
		if (c->verify)
			fill_pattern(local, w->size, idx);
		break;
	case PERF_OP_SEND:
		wr.opcode = IBV_WR_SEND;
		if (c->verify)
			fill_pattern(local, w->size, idx);
		break;
	case PERF_OP_ATOMIC:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		sge.length = 8;
		wr.wr.atomic.remote_addr = q->peer_va; /* one counter per QP */
		wr.wr.atomic.rkey = q->peer_rkey;
		wr.wr.atomic.compare_add = 1;
		break;
	}
	rc = srnic_post_send(q->qp[0], &wr, &bad);
	if (rc != 0)
		return rc;
	if (sig) {
		q->unsig_run = 0;
		q->t_post = rte_rdtsc();
	} else {
		q->unsig_run++;
	}
	q->posted++;
	q->outstanding++;
	return 0;
}

/* Data check for the WRs a completion covers: [completed, completed + n). */
static void
verify_done(struct req_worker *w, struct perf_qp *q, uint32_t n)
{
	const struct perf_conf *c = w->env->conf;
	uint32_t slot_size = RTE_MAX(w->env->max_size, 8u);
	uint64_t idx;

	for (idx = q->completed; idx < q->completed + n; idx++) {
		uint32_t slot = (uint32_t)(idx % c->depth);
		const uint8_t *l = q->buf[0] + (size_t)slot * slot_size;
		const uint8_t *r = q->buf[1] + (size_t)slot * slot_size;
		bool ok = true;

		if (c->op == PERF_OP_READ)
			ok = check_pattern(l, w->size, slot); /* responder slots hold pattern(slot) */
		else if (c->op == PERF_OP_WRITE)
			ok = memcmp(l, r, w->size) == 0 && check_pattern(r, w->size, idx);
		else if (c->op == PERF_OP_ATOMIC && c->unsignaled == 1 && c->depth == 1)
			ok = *(const uint64_t *)l == idx; /* FETCH_ADD returns the count so far */
		if (!ok)
			w->verify_errors++;
	}
}

/* One pass of a requester worker: post what the depth allows, poll the
 * engine, poll the CQ. Returns 1 when its QPs are done, 0 to go on, or a
 * negative errno. */
static int
req_step(struct req_worker *w)
{
	struct perf_env *env = w->env;
	const struct perf_conf *c = env->conf;
	struct srnic_engine *eng = srnic_dev_engine(env->pair.dev[0], (uint16_t)w->idx);
	struct ibv_wc wc[WC_BURST];
	bool done = true;
	uint32_t i;
	int n, k;

	for (i = w->idx; i < c->qps; i += c->nb_lcores) {
		struct perf_qp *q = &env->qps[i];
		/* Time up: stop, but end on a signaled WR so everything drains. */
		uint64_t target = !req_time_up ? w->target_per_qp
					       : q->posted + (q->unsig_run > 0 ? 1 : 0);

		while (q->outstanding < c->depth && q->posted < target)
			if (post_one(w, q, i, q->posted + 1 == target) != 0)
				break;
		if (q->completed < target || q->outstanding > 0)
			done = false;
	}
	srnic_engine_poll(eng);
	n = srnic_poll_cq(env->cq[0][w->idx], WC_BURST, wc);
	if (n < 0)
		return n;
	for (k = 0; k < n; k++) {
		struct perf_qp *q = &env->qps[wc[k].wr_id >> 32];
		uint32_t cnt = (uint32_t)(wc[k].wr_id & WRID_COUNT_MASK);

		if (wc[k].status != IBV_WC_SUCCESS) {
			w->errors++;
			fprintf(stderr, "srnic-perf: qp %#x: %s\n", wc[k].qp_num,
				srnic_wc_status_str(wc[k].status));
			return -EIO;
		}
		if (c->verify)
			verify_done(w, q, cnt);
		if (c->trace)
			printf("  CQE  qp %#x wr_id %#" PRIx64 " status %s opcode %d byte_len %u\n",
			       wc[k].qp_num, wc[k].wr_id, srnic_wc_status_str(wc[k].status),
			       wc[k].opcode, wc[k].byte_len);
		if (w->nb_lat < w->cap_lat)
			w->lat[w->nb_lat++] = rte_rdtsc() - q->t_post;
		q->completed += cnt;
		q->outstanding -= cnt;
		w->msgs += cnt;
	}
	if (n > 0) {
		w->last_progress = rte_rdtsc();
		live_msgs[w->idx] = w->msgs;
	} else if (!done && rte_rdtsc() - w->last_progress > PERF_RUN_TIMEOUT_S * rte_get_tsc_hz()) {
		fprintf(stderr, "srnic-perf: requester %u: no completion for %d s\n", w->idx,
			PERF_RUN_TIMEOUT_S);
		return -ETIMEDOUT;
	}
	return done ? 1 : 0;
}

static int
req_main(void *arg)
{
	struct req_worker *w = arg;
	int rc;

	while ((rc = req_step(w)) == 0)
		;
	w->rc = rc < 0 ? rc : 0;
	return w->rc;
}

/* Responder side: poll B's engines; for SEND keep RECVs posted and check data. */
struct resp_worker {
	struct perf_env *env;
	uint32_t size;
	uint64_t *recvd;            /* per QP */
	uint64_t verify_errors;
};

/* Keep depth RECVs posted on q's responder side (cumulative counters:
 * RECVs left posted by an earlier size are reused). */
static int
post_recvs(struct perf_env *env, struct perf_qp *q)
{
	const struct perf_conf *c = env->conf;
	uint32_t slot_size = RTE_MAX(env->max_size, 8u);

	while (q->recv_posted < q->recv_done + c->depth) {
		uint64_t first = q->recv_posted;
		uint32_t i = 0;
		uint32_t slot = (uint32_t)(first % c->depth);
		struct ibv_sge sge = { .addr = (uintptr_t)(q->buf[1] + (size_t)slot * slot_size),
				       .length = slot_size, .lkey = srnic_mr_lkey(q->mr[1]) };
		struct ibv_recv_wr wr = { .wr_id = first + i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (srnic_post_recv(q->qp[1], &wr, &bad) != 0)
			return -1;
		q->recv_posted++;
	}
	return 0;
}

static void
resp_poll(struct resp_worker *rw)
{
	struct perf_env *env = rw->env;
	const struct perf_conf *c = env->conf;
	unsigned int e;

	for (e = 0; e < c->nb_lcores; e++) {
		srnic_engine_poll(srnic_dev_engine(env->pair.dev[1], (uint16_t)e));
		if (c->op == PERF_OP_SEND) {
			struct ibv_wc wc[WC_BURST];
			int n = srnic_poll_cq(env->cq[1][e], WC_BURST, wc), k;
			uint32_t slot_size = RTE_MAX(env->max_size, 8u);

			for (k = 0; k < n; k++) {
				uint32_t qi = srnic_qp_num(env->qps[0].qp[1]);
				struct perf_qp *q;
				uint64_t idx;

				/* QPNs of side B were handed out in order. */
				qi = wc[k].qp_num - qi;
				if (qi >= c->qps)
					continue;
				q = &env->qps[qi];
				idx = rw->recvd[qi]++; /* this run's SEND number */
				if (c->verify &&
				    (wc[k].status != IBV_WC_SUCCESS || wc[k].byte_len != rw->size ||
				     !check_pattern(q->buf[1] + (size_t)(q->recv_done % c->depth) *
							    slot_size, rw->size, idx)))
					rw->verify_errors++;
				q->recv_done++;
				post_recvs(env, q);
			}
		}
	}
}

static int
resp_main(void *arg)
{
	struct resp_worker *rw = arg;

	while (!resp_stop)
		resp_poll(rw);
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int
perf_run(struct perf_env *env, uint32_t size, struct perf_result *r)
{
	const struct perf_conf *c = env->conf;
	struct req_worker w[PERF_MAX_LCORES];
	struct resp_worker rw;
	unsigned int lcores[PERF_MAX_LCORES + 1], nb_workers = 0, lc, i;
	uint64_t t0, t1, hz = rte_get_tsc_hz(), last_stats, prev_msgs = 0;
	bool resp_on_lcore;
	uint64_t *all_lat;
	size_t nb_all = 0;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	memset(&rw, 0, sizeof(rw));
	rw.env = env;
	rw.size = size;
	rw.recvd = calloc(c->qps, sizeof(*rw.recvd));
	for (i = 0; i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];
		uint32_t slot_size = RTE_MAX(env->max_size, 8u), s;

		q->posted = q->completed = 0;
		q->outstanding = q->unsig_run = 0;
		if (c->op == PERF_OP_READ)
			for (s = 0; s < c->depth; s++)
				fill_pattern(q->buf[1] + (size_t)s * slot_size, size, s);
		if (c->op == PERF_OP_ATOMIC)
			memset(q->buf[1], 0, 8);
	}
	RTE_LCORE_FOREACH_WORKER(lc)
		lcores[nb_workers++] = lc;
	/* Requester worker 0 is the main lcore, workers 1.. the next lcores;
	 * the responder takes the next free lcore, or shares the main loop. */
	resp_on_lcore = nb_workers >= c->nb_lcores;
	if (!resp_on_lcore && c->nb_lcores > 1) {
		fprintf(stderr, "srnic-perf: --lcores %u needs %u lcores (-l)\n", c->nb_lcores,
			c->nb_lcores + 1);
		free(rw.recvd);
		return -EINVAL;
	}
	for (i = 0; i < c->nb_lcores; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].env = env;
		w[i].idx = i;
		w[i].size = size;
		w[i].target_per_qp = c->duration > 0 ? UINT64_MAX
						     : (c->iters + c->qps - 1) / c->qps;
		w[i].cap_lat = RTE_MIN((size_t)PERF_LAT_SAMPLES_MAX,
				       c->duration > 0 ? PERF_LAT_SAMPLES_MAX
						       : (size_t)w[i].target_per_qp * c->qps + 16);
		w[i].lat = malloc(w[i].cap_lat * sizeof(uint64_t));
		live_msgs[i] = 0;
	}
	if (c->op == PERF_OP_SEND)
		for (i = 0; i < c->qps; i++)
			post_recvs(env, &env->qps[i]);
	resp_stop = false;
	req_time_up = false;
	if (resp_on_lcore)
		rte_eal_remote_launch(resp_main, &rw, lcores[c->nb_lcores - 1]);
	t0 = rte_rdtsc();
	for (i = 1; i < c->nb_lcores; i++) {
		w[i].last_progress = t0;
		rte_eal_remote_launch(req_main, &w[i], lcores[i - 1]);
	}

	/* Main lcore: requester worker 0 (and the responder when alone),
	 * the duration timer, live statistics. */
	last_stats = t0;
	w[0].last_progress = t0;
	for (;;) {
		uint64_t now = rte_rdtsc();
		int st;

		if (c->duration > 0 && !req_time_up && now - t0 > (uint64_t)(c->duration * hz))
			req_time_up = true;
		if (!resp_on_lcore)
			resp_poll(&rw);
		st = w[0].rc == 0 ? req_step(&w[0]) : 1;
		if (st < 0) {
			rc = w[0].rc = st;
			req_time_up = true; /* the others stop posting */
		}
		if (st != 0) {
			bool others = false;

			for (i = 1; i < c->nb_lcores; i++)
				if (rte_eal_get_lcore_state(lcores[i - 1]) != WAIT)
					others = true;
			if (!others)
				break;
		}
		if (!c->quiet && !c->json && now - last_stats > hz * PERF_STATS_PERIOD_MS / 1000) {
			uint64_t m = 0;

			for (i = 0; i < c->nb_lcores; i++)
				m += live_msgs[i];
			printf("  ... %7.2f s %12" PRIu64 " msgs %9.3f Mpps %9.2f Gbps\n",
			       (double)(now - t0) / hz, m,
			       (double)(m - prev_msgs) * hz / (double)(now - last_stats) / 1e6,
			       (double)(m - prev_msgs) * size * 8 * hz /
				       (double)(now - last_stats) / 1e9);
			fflush(stdout);
			prev_msgs = m;
			last_stats = now;
		}
	}
	t1 = rte_rdtsc();
	for (i = 1; i < c->nb_lcores; i++)
		if (rte_eal_wait_lcore(lcores[i - 1]) != 0 && rc == 0)
			rc = w[i].rc;
	resp_stop = true;
	if (resp_on_lcore)
		rte_eal_wait_lcore(lcores[c->nb_lcores - 1]);

	r->op = c->op;
	r->size = size;
	r->qps = c->qps;
	r->depth = c->depth;
	r->mtu = 128u << c->mtu;
	r->seconds = (double)(t1 - t0) / hz;
	for (i = 0; i < c->nb_lcores; i++) {
		r->msgs += w[i].msgs;
		r->errors += w[i].errors;
		r->verify_errors += w[i].verify_errors;
		nb_all += w[i].nb_lat;
	}
	r->verify_errors += rw.verify_errors;
	r->bytes = r->msgs * (c->op == PERF_OP_ATOMIC ? 8 : size);
	r->gbps = (double)r->bytes * 8 / r->seconds / 1e9;
	r->mops = (double)r->msgs / r->seconds / 1e6;
	all_lat = malloc((nb_all + 1) * sizeof(uint64_t));
	nb_all = 0;
	for (i = 0; i < c->nb_lcores; i++) {
		memcpy(all_lat + nb_all, w[i].lat, w[i].nb_lat * sizeof(uint64_t));
		nb_all += w[i].nb_lat;
		free(w[i].lat);
	}
	if (nb_all > 0) {
		double sum = 0;
		size_t k;

		qsort(all_lat, nb_all, sizeof(uint64_t), cmp_u64);
		for (k = 0; k < nb_all; k++)
			sum += (double)all_lat[k];
		r->lat_us[0] = (double)all_lat[0] * 1e6 / hz;
		r->lat_us[1] = perf_percentile(all_lat, nb_all, 50) * 1e6 / hz;
		r->lat_us[2] = perf_percentile(all_lat, nb_all, 99) * 1e6 / hz;
		r->lat_us[3] = perf_percentile(all_lat, nb_all, 99.9) * 1e6 / hz;
		r->lat_us[4] = (double)all_lat[nb_all - 1] * 1e6 / hz;
		r->lat_avg_us = sum / (double)nb_all * 1e6 / hz;
	}
	free(all_lat);
	r->gbps_peak = r->gbps;
	r->qp_mem_bytes = env->qp_mem;
	free(rw.recvd);
	return rc;
}
