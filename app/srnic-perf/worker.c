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
#include <sys/resource.h>

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
	uint32_t *ready;            /* QPs (indexes) with room to post */
	uint32_t nb_ready;
	uint32_t nb_qps;            /* QPs of this worker */
	uint64_t posted;            /* WRs posted over its QPs */
	bool time_up_seen;
	uint64_t errors;
	uint64_t verify_errors;
	uint64_t msgs;
	int rc;
};

static volatile bool resp_stop;
static volatile bool req_time_up;
static volatile bool req_abort;     /* the server stopped the run: no drain */
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

/* Work completion opcodes by name (verbs' IBV_WC_*), for --trace. */
static const char *const wc_opcode_names[] = {
	[IBV_WC_SEND] = "SEND", [IBV_WC_RDMA_WRITE] = "RDMA_WRITE",
	[IBV_WC_RDMA_READ] = "RDMA_READ", [IBV_WC_COMP_SWAP] = "COMP_SWAP",
	[IBV_WC_FETCH_ADD] = "FETCH_ADD", [IBV_WC_BIND_MW] = "BIND_MW",
	[IBV_WC_LOCAL_INV] = "LOCAL_INV", [IBV_WC_TSO] = "TSO",
	[IBV_WC_RECV] = "RECV", [IBV_WC_RECV_RDMA_WITH_IMM] = "RECV_RDMA_WITH_IMM",
};

const char *
perf_wc_opcode_name(enum ibv_wc_opcode op)
{
	if ((unsigned int)op < RTE_DIM(wc_opcode_names) && wc_opcode_names[op] != NULL)
		return wc_opcode_names[op];
	return "UNKNOWN";
}

/* The WR slot after slot in a ring of depth (no division on the data path). */
static inline uint32_t
slot_next(uint32_t slot, uint32_t depth)
{
	return slot + 1 == depth ? 0 : slot + 1;
}

/* WRs per srnic_post_send() call at most: one list per QP and pass, as
 * perftest's --post_list (one call, one doorbell for the lot) */
#define POST_LIST_MAX 64

/* Fill wr/sge for WR number idx of q. */
static void
fill_wr(struct req_worker *w, struct perf_qp *q, uint32_t qi, uint64_t idx, uint32_t slot,
	bool sig, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	const struct perf_conf *c = w->env->conf;
	uint32_t slot_size = perf_slot_bytes(w->env);
	uint8_t *local = q->buf[0] + (size_t)slot * slot_size;

	/* the fields srnic_post_send() reads for these opcodes, each set here:
	 * no memset of the whole WR per post */
	wr->next = NULL;
	wr->imm_data = 0;
	sge->addr = (uintptr_t)local;
	sge->length = w->size;
	sge->lkey = srnic_mr_lkey(q->mr[0]);
	wr->sg_list = sge;
	wr->num_sge = 1;
	/* the QP's index and the WR's number in this run (low 32 bits): each
	 * WR its own wr_id; a CQE covers its WR and the unsignaled ones
	 * before it since the QP's last CQE */
	wr->wr_id = ((uint64_t)qi << 32) | (idx & WRID_COUNT_MASK);
	wr->send_flags = sig ? IBV_SEND_SIGNALED : 0;
	wr->wr.rdma.remote_addr = q->peer_va + (uint64_t)slot * q->peer_stride;
	wr->wr.rdma.rkey = q->peer_rkey;
	switch (c->op) {
	case PERF_OP_READ:
		wr->opcode = IBV_WR_RDMA_READ;
		if (c->verify)
			memset(local, 0, w->size);
		break;
	case PERF_OP_WRITE:
		wr->opcode = IBV_WR_RDMA_WRITE;
		if (c->verify)
			fill_pattern(local, w->size, idx);
		if (w->size <= c->inline_size) /* -I: copied at post, as perftest's */
			wr->send_flags |= IBV_SEND_INLINE;
		break;
	case PERF_OP_SEND:
		wr->opcode = IBV_WR_SEND;
		if (c->verify)
			fill_pattern(local, w->size, idx);
		if (w->size <= c->inline_size)
			wr->send_flags |= IBV_SEND_INLINE;
		break;
	case PERF_OP_ATOMIC:
		/* One counter per QP, each WR taking it from idx to idx + 1: the
		 * responder runs a QP's atomics in order, so a CMP_AND_SWAP finds
		 * idx there and both return the count so far. */
		wr->opcode = c->cas ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
		sge->length = 8;
		wr->wr.atomic.remote_addr = q->peer_va;
		wr->wr.atomic.rkey = q->peer_rkey;
		wr->wr.atomic.compare_add = c->cas ? idx : 1;
		wr->wr.atomic.swap = c->cas ? idx + 1 : 0;
		break;
	}
}

/* Post what the depth allows on q, up to target WRs in all, as one list.
 * Adds the number posted to *nb; returns 0 or srnic_post_send()'s error
 * (SQ full: the rest waits for the next pass). */
static int
post_list(struct req_worker *w, struct perf_qp *q, uint32_t qi, uint64_t target, uint64_t now,
	  uint64_t *nb)
{
	const struct perf_conf *c = w->env->conf;
	struct ibv_send_wr wr[POST_LIST_MAX], *bad = NULL;
	struct ibv_sge sge[POST_LIST_MAX];
	uint32_t slots[POST_LIST_MAX];
	uint32_t n = 0, k, done, unsig = q->unsig_run, slot = q->post_slot;
	int rc;

	while (n < POST_LIST_MAX && q->outstanding + n < c->depth && q->posted + n < target) {
		uint64_t idx = q->posted + n;
		bool sig = idx + 1 == target || unsig + 1 >= c->unsignaled;

		slots[n] = slot;
		slot = slot_next(slot, c->depth);
		fill_wr(w, q, qi, idx, slots[n], sig, &wr[n], &sge[n]);
		if (n > 0)
			wr[n - 1].next = &wr[n];
		unsig = sig ? 0 : unsig + 1;
		n++;
	}
	if (n == 0)
		return 0;
	rc = srnic_post_send(q->qp[0], wr, &bad);
	done = rc == 0 ? n : (uint32_t)(bad - wr);
	for (k = 0; k < done; k++) {
		if (wr[k].send_flags & IBV_SEND_SIGNALED) {
			q->unsig_run = 0;
			q->t_post[slots[k]] = now;
		} else {
			q->unsig_run++;
		}
		q->posted++;
		q->outstanding++;
	}
	if (done > 0)
		q->post_slot = slot_next(slots[done - 1], c->depth);
	*nb += done;
	return rc;
}

/* Data check for the WRs a completion covers: [completed, completed + n). */
static void
verify_done(struct req_worker *w, struct perf_qp *q, uint32_t n)
{
	const struct perf_conf *c = w->env->conf;
	uint32_t slot_size = perf_slot_bytes(w->env);
	uint64_t idx;

	for (idx = q->completed; idx < q->completed + n; idx++) {
		uint32_t slot = (uint32_t)(idx % c->depth);
		const uint8_t *l = q->buf[0] + (size_t)slot * slot_size;
		const uint8_t *r = q->buf[1] != NULL ? q->buf[1] + (size_t)slot * slot_size : NULL;
		bool ok = true;

		if (c->op == PERF_OP_READ)
			ok = check_pattern(l, w->size, slot); /* responder slots hold pattern(slot) */
		else if (c->op == PERF_OP_WRITE && q->buf[1] != NULL)
			ok = memcmp(l, r, w->size) == 0 && check_pattern(r, w->size, idx);
		else if (c->op == PERF_OP_ATOMIC)
			ok = *(const uint64_t *)l == idx; /* the count so far (fill_wr()) */
		if (!ok)
			w->verify_errors++;
	}
}

/* Put q on its worker's ready list (QPs with room to post), once. */
static inline void
ready_push(struct req_worker *w, struct perf_qp *q, uint32_t qi)
{
	if (!q->in_ready) {
		q->in_ready = 1;
		w->ready[w->nb_ready++] = qi;
	}
}

/* One pass of a requester worker: post what the depth allows on the QPs
 * that have room (those that just completed something: no walk over every
 * QP), poll the engine, poll the CQ. Returns 1 when its QPs are done, 0 to
 * go on, or a negative errno. */
static int
req_step(struct req_worker *w)
{
	struct perf_env *env = w->env;
	const struct perf_conf *c = env->conf;
	struct srnic_engine *eng = srnic_dev_engine(env->dev[0], (uint16_t)w->idx);
	struct ibv_wc wc[WC_BURST];
	uint32_t i, cnt, keep = 0;
	uint64_t now;
	int n, k;

	if (req_abort)
		return 1; /* what is outstanding is left: the server answers no more */
	if (req_time_up && !w->time_up_seen) {
		/* Stop, but end each QP on a signaled WR so everything drains. */
		w->time_up_seen = true;
		for (i = w->idx; i < c->qps; i += c->nb_lcores)
			ready_push(w, &env->qps[i], i);
	}
	/* One TSC read per pass, not per WR: WRs posted in one pass share
	 * their post time, CQEs polled together their completion time (in
	 * a VM, rdtsc costs tens of cycles; a pass is well under a us). */
	cnt = w->nb_ready;
	now = cnt > 0 ? rte_rdtsc() : 0;
	for (i = 0; i < cnt; i++) {
		uint32_t qi = w->ready[i];
		struct perf_qp *q = &env->qps[qi];
		uint64_t target = !req_time_up ? w->target_per_qp
					       : q->posted + (q->unsig_run > 0 ? 1 : 0);
		int rc = 0;

		while (rc == 0 && q->outstanding < c->depth && q->posted < target)
			rc = post_list(w, q, qi, target, now, &w->posted);
		if (rc != 0)
			w->ready[keep++] = qi; /* SQ full for now: try again */
		else
			q->in_ready = 0;
	}
	w->nb_ready = keep;
	srnic_engine_poll(eng);
	n = srnic_poll_cq(env->cq[0][w->idx], WC_BURST, wc);
	if (n < 0)
		return n;
	now = n > 0 ? rte_rdtsc() : 0;
	for (k = 0; k < n; k++) {
		uint32_t qi = (uint32_t)(wc[k].wr_id >> 32);
		struct perf_qp *q = &env->qps[qi];
		/* WRs complete in order on a QP, at most depth of them out */
		uint32_t cnt_wr = (uint32_t)(wc[k].wr_id & WRID_COUNT_MASK) -
				  (uint32_t)q->completed + 1;
		uint32_t sig_slot;

		if (wc[k].status != IBV_WC_SUCCESS) {
			w->errors++;
			fprintf(stderr, "srnic-perf: qp %#x: %s\n", wc[k].qp_num,
				srnic_wc_status_str(wc[k].status));
			return -EIO;
		}
		if (c->verify)
			verify_done(w, q, cnt_wr);
		if (c->trace)
			printf("  CQE  qp %#x wr_id %#" PRIx64 " (QP %u's WR %u, %u WR(s) done) status "
			       "%s opcode %s byte_len %u\n", wc[k].qp_num, wc[k].wr_id, qi,
			       (uint32_t)(wc[k].wr_id & WRID_COUNT_MASK), cnt_wr,
			       srnic_wc_status_str(wc[k].status), perf_wc_opcode_name(wc[k].opcode),
			       wc[k].byte_len);
		/* the signaled WR is the last one covered */
		sig_slot = q->comp_slot + cnt_wr - 1;
		while (sig_slot >= c->depth)
			sig_slot -= c->depth;
		if (w->nb_lat < w->cap_lat)
			w->lat[w->nb_lat++] = now - q->t_post[sig_slot];
		q->comp_slot = slot_next(sig_slot, c->depth);
		q->completed += cnt_wr;
		q->outstanding -= cnt_wr;
		w->msgs += cnt_wr;
		ready_push(w, q, qi);
	}
	if (n > 0) {
		w->last_progress = now;
		live_msgs[w->idx] = w->msgs;
	}
	if (w->nb_ready == 0 && w->msgs == w->posted &&
	    (req_time_up || w->posted == w->target_per_qp * w->nb_qps))
		return 1;
	if (n == 0 && rte_rdtsc() - w->last_progress > PERF_RUN_TIMEOUT_S * rte_get_tsc_hz()) {
		fprintf(stderr, "srnic-perf: requester %u: no completion for %d s\n", w->idx,
			PERF_RUN_TIMEOUT_S);
		return -ETIMEDOUT;
	}
	return 0;
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

/* ---- the responder side ---- */

/* Keep depth RECVs posted on q's responder side (cumulative counters:
 * RECVs left posted by an earlier size are reused). */
static int
post_recvs(struct perf_env *env, struct perf_qp *q)
{
	const struct perf_conf *c = env->conf;
	uint32_t slot_size = perf_slot_bytes(env);

	while (q->recv_posted < q->recv_done + c->depth) {
		uint32_t slot = q->recv_slot;
		struct ibv_sge sge = { .addr = (uintptr_t)(q->buf[1] + (size_t)slot * slot_size),
				       .length = slot_size, .lkey = srnic_mr_lkey(q->mr[1]) };
		/* the QP's index: completions name it without a QPN lookup */
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)(q - env->qps), .sg_list = &sge,
					  .num_sge = 1 };
		struct ibv_recv_wr *bad;

		if (srnic_post_recv(q->qp[1], &wr, &bad) != 0)
			return -1;
		q->recv_posted++;
		q->recv_slot = slot_next(slot, c->depth);
	}
	return 0;
}

void
perf_resp_poll_once(struct perf_env *env, uint32_t size, uint64_t *verify_errors)
{
	const struct perf_conf *c = env->conf;
	uint32_t slot_size = perf_slot_bytes(env);
	unsigned int e;

	for (e = 0; e < c->nb_lcores; e++) {
		struct ibv_wc wc[WC_BURST];
		int n, k;

		srnic_engine_poll(srnic_dev_engine(env->dev[1], (uint16_t)e));
		if (c->op != PERF_OP_SEND)
			continue;
		n = srnic_poll_cq(env->cq[1][e], WC_BURST, wc);
		for (k = 0; k < n; k++) {
			uint64_t qi = wc[k].wr_id; /* post_recvs() put the QP's index there */
			struct perf_qp *q;

			if (qi >= c->qps) {
				(*verify_errors)++;
				continue;
			}
			q = &env->qps[qi];
			if (c->verify) {
				const uint8_t *data =
					q->buf[1] + (size_t)(q->recv_done % c->depth) * slot_size;

				if (wc[k].status != IBV_WC_SUCCESS || wc[k].byte_len != size ||
				    !check_pattern(data, size, q->recv_run))
					(*verify_errors)++;
			}
			q->recv_run++;
			q->recv_done++;
			if (post_recvs(env, q) != 0)
				(*verify_errors)++; /* the RQ refused: the run will show it */
		}
	}
}

void
perf_prepare_size(struct perf_env *env, uint32_t size)
{
	const struct perf_conf *c = env->conf;
	uint32_t slot_size = perf_slot_bytes(env), i, s;

	for (i = 0; i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];

		q->recv_run = 0;
		if (c->op == PERF_OP_READ)
			for (s = 0; s < c->depth; s++)
				fill_pattern(q->buf[1] + (size_t)s * slot_size, size, s);
		if (c->op == PERF_OP_ATOMIC)
			memset(q->buf[1], 0, 8);
		if (c->op == PERF_OP_SEND && post_recvs(env, q) != 0)
			fprintf(stderr, "srnic-perf: qp %u: RECVs refused\n", i);
	}
}

uint64_t
perf_check_writes(struct perf_env *env, uint32_t size, const uint64_t *posted)
{
	const struct perf_conf *c = env->conf;
	uint32_t slot_size = perf_slot_bytes(env), i;
	uint64_t errs = 0, idx;

	if (!c->verify)
		return 0;
	if (c->op == PERF_OP_ATOMIC) {
		/* each WR took its QP's counter one step: it ends at the count */
		for (i = 0; i < c->qps; i++)
			errs += *(const uint64_t *)env->qps[i].buf[1] != posted[i];
		return errs;
	}
	if (c->op != PERF_OP_WRITE)
		return 0;
	for (i = 0; i < c->qps; i++)
		for (idx = posted[i] > c->depth ? posted[i] - c->depth : 0; idx < posted[i]; idx++)
			if (!check_pattern(env->qps[i].buf[1] + (size_t)(idx % c->depth) * slot_size,
					   size, idx))
				errs++;
	return errs;
}

struct resp_worker {
	struct perf_env *env;
	uint32_t size;
	uint64_t verify_errors;
};

static int
resp_main(void *arg)
{
	struct resp_worker *rw = arg;

	while (!resp_stop)
		perf_resp_poll_once(rw->env, rw->size, &rw->verify_errors);
	return 0;
}

static void
lat_summary(struct req_worker *w, unsigned int nb, double hz, struct perf_result *r)
{
	uint64_t *all;
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < nb; i++)
		n += w[i].nb_lat;
	all = malloc((n + 1) * sizeof(uint64_t));
	n = 0;
	for (i = 0; i < nb; i++) {
		if (all != NULL)
			memcpy(all + n, w[i].lat, w[i].nb_lat * sizeof(uint64_t));
		n += w[i].nb_lat;
		free(w[i].lat);
	}
	if (all != NULL)
		perf_lat_fill(r, all, n, hz);
	free(all);
}

/* Per QP: how many retransmitted since the last line, and the worst one. */
static void
live_qp_stats(struct perf_env *env)
{
	const struct perf_conf *c = env->conf;
	uint64_t worst = 0, total = 0, timeouts = 0;
	uint32_t i, n = 0, worst_qpn = 0;

	if (env->dev[0] == NULL)
		return;
	for (i = 0; i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];
		struct srnic_qp_stats st;
		uint64_t d;

		srnic_qp_get_stats(q->qp[0], &st);
		d = st.retransmits - q->prev_retx;
		timeouts += st.timeouts - q->prev_timeouts;
		q->prev_retx = st.retransmits;
		q->prev_timeouts = st.timeouts;
		total += d;
		n += d > 0;
		if (d > worst) {
			worst = d;
			worst_qpn = srnic_qp_num(q->qp[0]);
		}
	}
	if (total > 0)
		printf("      QPs with retransmits %u of %u (%" PRIu64 " rewinds, %" PRIu64
		       " timeouts; worst qp %#x: %" PRIu64 ")\n",
		       n, c->qps, total, timeouts, worst_qpn, worst);
}

/* testpmd's habit: per port (device) packet rates and trouble since the
 * last line, from the engine counters. */
static void
live_port_stats(struct perf_env *env, double secs)
{
	static const char *const names[] = { "rx_pkts", "tx_pkts", "retransmit_pkts",
					     "rx_icrc_err", "rx_malformed", "resp_dup" };
	static int64_t prev[2][RTE_DIM(names)];
	unsigned int s, k;

	for (s = 0; s < 2; s++) {
		int64_t v[RTE_DIM(names)];

		if (env->dev[s] == NULL)
			continue;
		for (k = 0; k < RTE_DIM(names); k++)
			v[k] = srnic_dev_stat(env->dev[s], names[k]);
		printf("      %-6s RX %8.3f Mpps  TX %8.3f Mpps  retransmit %6" PRId64
		       "  rx bad %6" PRId64 "  dup req %6" PRId64 "\n",
		       srnic_dev_name(env->dev[s]), (double)(v[0] - prev[s][0]) / secs / 1e6,
		       (double)(v[1] - prev[s][1]) / secs / 1e6, v[2] - prev[s][2],
		       (v[3] - prev[s][3]) + (v[4] - prev[s][4]), v[5] - prev[s][5]);
		memcpy(prev[s], v, sizeof(v));
	}
	live_qp_stats(env);
}

/* A device's engines' busy and idle poll cycles so far; false if remote. */
static bool
dev_busy(struct srnic_dev *dev, uint64_t *busy, uint64_t *idle)
{
	if (dev == NULL)
		return false;
	*busy = (uint64_t)srnic_dev_stat(dev, "poll_busy_cycles");
	*idle = (uint64_t)srnic_dev_stat(dev, "poll_idle_cycles");
	return true;
}

static double
tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

int
perf_run(struct perf_env *env, uint32_t size, struct perf_result *r)
{
	const struct perf_conf *c = env->conf;
	struct req_worker w[PERF_MAX_LCORES];
	struct resp_worker rw = { .env = env, .size = size };
	unsigned int lcores[RTE_MAX_LCORE], nb_workers = 0, lc, i, q;
	uint64_t t0, t1, hz = rte_get_tsc_hz(), last_stats, prev_msgs = 0;
	uint64_t peak_t, peak_m = 0, peak_win = hz * PERF_PEAK_WINDOW_MS / 1000;
	double peak_rate = 0;
	bool local_resp = env->dev[1] != NULL, resp_on_lcore;
	uint64_t *posted = NULL, busy0[2] = { 0, 0 }, idle0[2] = { 0, 0 };
	uint64_t stats_cycles = (uint64_t)(c->stats_period * (double)hz);
	/* two processes: the server may stop the run (STOP, or its end closing) */
	bool ctl = !local_resp && !c->perftest;
	uint64_t ctl_t, ctl_win = hz * PERF_CTL_POLL_MS / 1000;
	struct rusage ru0, ru1;
	int rc = 0, stop_rc = 0;

	if (c->mode->run != NULL) /* the mode runs it its own way */
		return c->mode->run(env, size, r);
	memset(r, 0, sizeof(*r));
	for (i = 0; i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];

		q->posted = q->completed = 0;
		q->post_slot = q->comp_slot = 0;
		q->outstanding = q->unsig_run = 0;
	}
	RTE_LCORE_FOREACH_WORKER(lc)
		lcores[nb_workers++] = lc;
	/* Requester worker 0 is the main lcore, workers 1.. the next lcores;
	 * the responder takes the next free lcore, or shares the main loop. */
	resp_on_lcore = local_resp && nb_workers >= c->nb_lcores;
	if (nb_workers + 1 < c->nb_lcores) {
		/* check_lcores() refused it before any setup: kept as a guard */
		fprintf(stderr, "srnic-perf: --req-lcores %u needs at least %u lcores (-l)\n",
			c->nb_lcores, c->nb_lcores);
		return -EINVAL;
	}
	if (local_resp) {
		perf_prepare_size(env, size);
	} else {
		rc = c->mode->run_begin != NULL ? c->mode->run_begin(env, size) : 0;
		if (rc != 0) {
			r->op = c->op;
			r->size = size;
			return rc == -ESHUTDOWN || rc == -ECONNRESET ? rc : -EIO;
		}
	}
	for (i = 0; i < c->nb_lcores; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].env = env;
		w[i].idx = i;
		w[i].size = size;
		w[i].target_per_qp = c->duration > 0 ? UINT64_MAX
						     : (perf_iters(c, size) + c->qps - 1) / c->qps;
		w[i].cap_lat = RTE_MIN((size_t)PERF_LAT_SAMPLES_MAX,
				       c->duration > 0 ? PERF_LAT_SAMPLES_MAX
						       : (size_t)w[i].target_per_qp * c->qps + 16);
		w[i].lat = malloc(w[i].cap_lat * sizeof(uint64_t));
		if (w[i].lat == NULL)
			w[i].cap_lat = 0;
		else /* fault its pages in now, not inside the timed run */
			memset(w[i].lat, 0, w[i].cap_lat * sizeof(uint64_t));
		w[i].ready = malloc(c->qps * sizeof(uint32_t));
		if (w[i].ready == NULL) {
			for (q = 0; q <= i; q++)
				free(w[q].lat);
			for (q = 0; q < i; q++)
				free(w[q].ready);
			return -ENOMEM;
		}
		for (q = i; q < c->qps; q += c->nb_lcores) {
			env->qps[q].in_ready = 1;
			w[i].ready[w[i].nb_ready++] = q;
		}
		w[i].nb_qps = w[i].nb_ready;
		live_msgs[i] = 0;
	}
	resp_stop = false;
	req_time_up = false;
	req_abort = false;
	if (resp_on_lcore)
		rte_eal_remote_launch(resp_main, &rw, lcores[c->nb_lcores - 1]);
	for (i = 0; i < 2; i++)
		dev_busy(env->dev[i], &busy0[i], &idle0[i]);
	getrusage(RUSAGE_SELF, &ru0); /* --cpu_util: every thread of the process */
	t0 = rte_rdtsc();
	for (i = 1; i < c->nb_lcores; i++) {
		w[i].last_progress = t0;
		rte_eal_remote_launch(req_main, &w[i], lcores[i - 1]);
	}

	/* Main lcore: requester worker 0 (and the responder when alone),
	 * the duration timer, live statistics, the peak rate. */
	last_stats = peak_t = ctl_t = t0;
	w[0].last_progress = t0;
	for (;;) {
		uint64_t now = rte_rdtsc();
		int st;

		if (now - peak_t >= peak_win) {
			uint64_t m = 0;

			for (i = 0; i < c->nb_lcores; i++)
				m += live_msgs[i];
			peak_rate = RTE_MAX(peak_rate, (double)(m - peak_m) * (double)hz /
						       (double)(now - peak_t));
			peak_m = m;
			peak_t = now;
		}

		if (stop_rc == 0 && now - ctl_t >= ctl_win) {
			ctl_t = now;
			/* the server's word first (its STOP, its end): the
			 * more precise news; then the device's events: a port
			 * down past PERF_PORT_DOWN_GRACE_S ends the run (nothing
			 * would complete); a failed QP is said, its failed
			 * completions end it */
			if (ctl && c->mode->poll_stop != NULL)
				stop_rc = c->mode->poll_stop(env);
			if (stop_rc == 0 && perf_async_check(env, false) == -ENETDOWN)
				stop_rc = -ENETDOWN;
			if (stop_rc != 0)
				req_abort = true; /* every requester lcore stops at once */
		}
		if (!req_time_up && ((c->duration > 0 && now - t0 > (uint64_t)(c->duration * hz)) ||
				     perf_quitting()))
			req_time_up = true; /* a signal ends the run as its duration would */
		if (local_resp && !resp_on_lcore)
			perf_resp_poll_once(env, size, &rw.verify_errors);
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
		if (stats_cycles > 0 && now - last_stats > stats_cycles) {
			uint64_t m = 0;
			double secs = (double)(now - last_stats) / hz;

			for (i = 0; i < c->nb_lcores; i++)
				m += live_msgs[i];
			if (c->json)
				printf("{\"live\":{\"op\":\"%s\",\"size\":%u,\"t\":%.3f,\"msgs\":%" PRIu64
				       ",\"mops\":%.4f,\"gbps\":%.3f}}\n", perf_op_name(c->op), size,
				       (double)(now - t0) / hz, m, (double)(m - prev_msgs) / secs / 1e6,
				       (double)(m - prev_msgs) * size * 8 / secs / 1e9);
			else
				printf("  ... %7.2f s %12" PRIu64 " msgs %9.3f Mpps %9.2f Gbps\n",
				       (double)(now - t0) / hz, m, (double)(m - prev_msgs) / secs / 1e6,
				       (double)(m - prev_msgs) * size * 8 / secs / 1e9);
			if (!c->json)
				live_port_stats(env, secs);
			fflush(stdout);
			prev_msgs = m;
			last_stats = now;
		}
	}
	t1 = rte_rdtsc();
	getrusage(RUSAGE_SELF, &ru1);
	r->cpu_user_s = tv_s(&ru1.ru_utime) - tv_s(&ru0.ru_utime);
	r->cpu_sys_s = tv_s(&ru1.ru_stime) - tv_s(&ru0.ru_stime);
	for (i = 0; i < 2; i++) {
		uint64_t b, id;

		r->busy_pct[i] = -1;
		if (dev_busy(env->dev[i], &b, &id) && b + id > busy0[i] + idle0[i])
			r->busy_pct[i] = 100.0 * (double)(b - busy0[i]) /
					 (double)(b + id - busy0[i] - idle0[i]);
	}
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
	r->mtu = 128u << (c->pmtu_eff != 0 ? c->pmtu_eff : c->mtu); /* what packets carry */
	r->seconds = (double)(t1 - t0) / hz;
	for (i = 0; i < c->nb_lcores; i++) {
		free(w[i].ready);
		r->msgs += w[i].msgs;
		r->errors += w[i].errors;
		r->verify_errors += w[i].verify_errors;
	}
	r->bytes = r->msgs * (c->op == PERF_OP_ATOMIC ? 8 : size);
	r->gbps = (double)r->bytes * 8 / r->seconds / 1e9;
	r->mops = (double)r->msgs / r->seconds / 1e6;
	/* the whole run is a window too: a peak is never under the average */
	r->mops_peak = RTE_MAX(peak_rate / 1e6, r->mops);
	r->gbps_peak = r->msgs > 0 ? r->gbps * r->mops_peak / r->mops : 0;
	posted = calloc(c->qps, sizeof(*posted));
	for (i = 0; posted != NULL && i < c->qps; i++)
		posted[i] = env->qps[i].posted;
	if (local_resp) {
		r->verify_errors += rw.verify_errors;
		if (posted != NULL)
			r->verify_errors += perf_check_writes(env, size, posted);
	} else if (posted != NULL && stop_rc == 0) {
		uint64_t remote_errs = 0;
		int e = c->mode->run_end != NULL ? c->mode->run_end(env, r, &remote_errs) : 0;

		if (e == -ESHUTDOWN || e == -ECONNRESET)
			stop_rc = e; /* the server stopped as we finished */
		else if (e != 0 && rc == 0)
			rc = -EIO;
		r->verify_errors += remote_errs;
	}
	free(posted);
	if (stop_rc != 0)
		rc = stop_rc;
	lat_summary(w, c->nb_lcores, (double)hz, r);
	r->qp_mem_bytes = env->qp_mem;
	return rc;
}
