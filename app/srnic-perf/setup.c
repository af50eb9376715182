/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Endpoints and QPs of a run. Embedded (default): two srnic devices over a
 * net_ring pair, one engine per requester lcore on each side (queue i of A
 * feeds queue i of B, so QP i on A's engine k talks to B's engine k and no
 * packet is redirected). Two processes: one device on the given port, the
 * other side's parameters from remote.c. One CQ per engine, buffers
 * registered.
 */
#include <stdlib.h>
#include <errno.h>
#include <poll.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "perf.h"
#include "srnic_wire.h"

#define PERF_CQE_MIN 256u

static struct srnic_pcap *pcap;
static bool pcap_full;       /* --pcap-max reached: no more records */
static struct srnic_capture *cap[2];
static uint16_t trace_port_b;

static void
on_packet(uint16_t port_id, int dir, const struct rte_mbuf *m, uint64_t tsc, void *arg)
{
	const struct perf_conf *c = arg;

	if (pcap != NULL && !pcap_full) {
		if (c->pcap_max_bytes > 0 && srnic_pcap_bytes(pcap) >= c->pcap_max_bytes) {
			/* lcores race to here: one of them says it */
			if (!__atomic_exchange_n(&pcap_full, true, __ATOMIC_RELAXED))
				fprintf(stderr, "srnic-perf: %s reached --pcap-max %" PRIu64 " MiB: "
						"no more packets written to it (--pcap-max 0: no "
						"limit)\n", c->pcap, c->pcap_max_bytes >> 20);
		} else {
			srnic_pcap_write(pcap, m, srnic_pcap_tsc_to_ns(pcap, tsc));
		}
	}
	if (c->trace) {
		char line[256];

		srnic_pkt_describe((struct rte_mbuf *)(uintptr_t)m, line, sizeof(line));
		if (c->role == PERF_ROLE_BOTH)
			printf("  %s  %s\n", port_id == trace_port_b ? "A -> B" : "B -> A", line);
		else
			printf("  %s  %s\n", dir == SRNIC_CAPTURE_RX ? "in " : "out", line);
	}
}

static void *
buf_alloc(size_t len, bool *heap)
{
	void *p = rte_malloc("perf_buf", len, 4096);

	*heap = p == NULL;
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

/* Why srnic could not come up, in words: what ran short or what is wrong,
 * and what to do about it (never a bare errno). */
static void
dev_fail_why(const char *what, int err)
{
	struct rte_malloc_socket_stats st;

	memset(&st, 0, sizeof(st));
	rte_malloc_get_socket_stats((int)rte_socket_id(), &st);
	if (err == ENOMEM || err == ENOSPC)
		fprintf(stderr, "srnic-perf: cannot create %s: out of DPDK memory (%zu MiB in the "
				"EAL's heap, %zu MiB free; srnic-perf needs about %u MiB per device):\n"
				"  give the EAL more (-m 512 or more with --no-huge) or reserve hugepages\n",
			what, st.heap_totalsz_bytes >> 20, st.heap_freesz_bytes >> 20,
			PERF_DEV_MEM_MB);
	else
		fprintf(stderr, "srnic-perf: cannot create %s: %s\n", what, rte_strerror(err));
}

/* buf_reg()'s undo, for whatever part of it was done. */
static void
buf_unreg(uint8_t *buf, bool heap, struct srnic_mr *mr)
{
	if (mr != NULL)
		srnic_dereg_mr(mr);
	if (heap)
		free(buf);
	else
		rte_free(buf);
}

/* A zeroed buffer of len bytes registered in pd; *bytes grows by what it
 * took from the DPDK heap (0 from the C heap). */
static int
buf_reg(struct srnic_pd *pd, size_t len, int access, uint8_t **buf, bool *heap,
	struct srnic_mr **mr, size_t *bytes)
{
	size_t heap0 = heap_used();

	*buf = buf_alloc(len, heap);
	*bytes += heap_used() - heap0;
	if (*buf == NULL)
		return -ENOMEM;
	memset(*buf, 0, len);
	*mr = srnic_reg_mr(pd, *buf, len, access);
	return *mr == NULL ? -ENOMEM : 0;
}

void
perf_qp_conf(const struct perf_conf *c, struct srnic_pair_qp_conf *qc)
{
	memset(qc, 0, sizeof(*qc));
	qc->path_mtu = c->mtu;
	qc->psn[0] = PERF_PSN_REQ;
	qc->psn[1] = PERF_PSN_RESP;
	qc->max_rd_atomic = c->max_rd_atomic > 0 ? c->max_rd_atomic : SRNIC_MAX_RD_ATOMIC;
	/* ACK timeout: 67 ms (14) on a clean link; 16.8 ms (12) with injected
	 * loss, where most losses are repaired by NAKs and implied NAKs anyway.
	 * retry_cnt 7 (perftest's) is 7 retries, then RETRY_EXC_ERR, as on
	 * hardware: a run that must ride out longer stalls (a peer's lcore
	 * the OS starves) asks a longer -u, as perftest's users do; the RNR
	 * count stays 7 (without end). -u and --retry_count set them. */
	qc->timeout = c->qp_timeout_set ? c->qp_timeout :
		      c->lossy ? PERF_QP_TIMEOUT_LOSSY : PERF_QP_TIMEOUT_CLEAN;
	qc->retry_cnt = c->retry_cnt;
	qc->rnr_retry = 7;
	qc->min_rnr_timer = 1;
	/* the op's remote right, as perftest's QPs; more with --remote-access */
	qc->access = perf_access(c);
}

int
perf_setup_dev(struct perf_env *env, int side)
{
	struct perf_conf *c = env->conf;
	struct srnic_dev_conf dc;

	memset(&dc, 0, sizeof(dc));
	dc.port_id = c->port_id;
	dc.nb_engines = (uint16_t)c->nb_lcores;
	dc.mtu = 9000;
	dc.ip_ver = 4;
	memcpy(dc.ip, c->ip, 4);
	dc.name = side == 0 ? "perfc" : "perfs";
	dc.comp_mask = SRNIC_DEV_CONF_READ_INLINE_MAX;
	dc.read_inline_max = c->read_inline;
	dc.nb_mbufs = c->nb_mbufs;
	if (!rte_eth_dev_is_valid_port(c->port_id)) {
		fprintf(stderr, "srnic-perf: no port %u: give one with the EAL's --vdev (or -a "
			"PCI); if you gave one, its driver refused it: DPDK's lines above say why\n",
			c->port_id);
		return -ENODEV;
	}
	env->dev[side] = srnic_dev_create(&dc);
	if (env->dev[side] == NULL) {
		char what[64];

		snprintf(what, sizeof(what), "the srnic device on port %u", c->port_id);
		dev_fail_why(what, rte_errno);
		return -ENODEV;
	}
	env->pd[side] = srnic_alloc_pd(env->dev[side]);
	return env->pd[side] == NULL ? -ENOMEM : 0;
}

int
perf_setup_qps(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	uint32_t per_lcore = (c->qps + c->nb_lcores - 1) / c->nb_lcores;
	size_t before = heap_used(), slot_bytes, buf_bytes = 0;
	unsigned int i, s;

	for (i = 0; i < c->nb_sizes; i++)
		env->max_size = RTE_MAX(env->max_size, c->sizes[i]);
	slot_bytes = perf_slot_bytes(env);
	for (s = 0; s < 2; s++)
		for (i = 0; env->dev[s] != NULL && i < c->nb_lcores; i++) {
			/* each side completes one direction: at most depth per QP */
			env->cq[s][i] = srnic_create_cq(env->dev[s],
						       (int)RTE_MAX(PERF_CQE_MIN, per_lcore * c->depth),
						       srnic_dev_engine(env->dev[s], (uint16_t)i));
			if (env->cq[s][i] == NULL)
				return -ENOMEM;
		}
	env->qps = calloc(c->qps, sizeof(*env->qps));
	if (env->qps == NULL)
		return -ENOMEM;
	/* One registered buffer per side for every QP, as perftest does by
	 * default: one MR's lines on the data path, not one MR per QP. */
	for (s = 0; s < 2 && !c->mr_per_qp; s++)
		if (env->dev[s] != NULL &&
		    buf_reg(env->pd[s], slot_bytes * c->depth * c->qps, perf_access(c),
			    &env->buf_all[s],
			    &env->buf_all_heap[s], &env->mr_all[s], &buf_bytes) != 0)
			return -ENOMEM;
	for (i = 0; i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];

		q->lcore_idx = i % c->nb_lcores;
		q->t_post = calloc(c->depth, sizeof(*q->t_post));
		if (q->t_post == NULL)
			return -ENOMEM;
		for (s = 0; s < 2; s++) {
			struct srnic_qp_init_attr qa = {
				.send_cq = env->cq[s][q->lcore_idx],
				.recv_cq = env->cq[s][q->lcore_idx],
				.max_send_wr = c->depth, .max_recv_wr = c->depth,
				.max_send_sge = 1, .max_recv_sge = 1, .qp_type = IBV_QPT_RC,
				.max_inline_data = s == 0 ? c->inline_size : 0, /* -I */
			};
			size_t len = slot_bytes * c->depth;

			if (env->dev[s] == NULL)
				continue;
			q->qp[s] = srnic_create_qp(env->pd[s], &qa);
			if (q->qp[s] == NULL)
				return -ENOMEM;
			if (!c->mr_per_qp) {
				q->buf[s] = env->buf_all[s] + (size_t)i * len;
				q->mr[s] = env->mr_all[s];
			} else if (buf_reg(env->pd[s], len, perf_access(c), &q->buf[s],
					   &q->buf_heap[s], &q->mr[s], &buf_bytes) != 0) {
				return -ENOMEM;
			}
		}
		if (q->mr[1] != NULL) {
			q->peer_rkey = srnic_mr_rkey(q->mr[1]);
			q->peer_va = (uintptr_t)q->buf[1];
			q->peer_stride = perf_slot_bytes(env);
		}
	}
	/* Memory per QP: control objects of the local side(s), CQs shared,
	 * data buffers apart (heap delta over the QP count). */
	env->qp_mem = (heap_used() - before - buf_bytes) / c->qps;
	return 0;
}

/* Waits up to ms for sock (-1: none) to say anything; true when it is at
 * its end (the peer closed it). Data waiting is left for the exchange, the
 * rest of ms slept. */
static bool
peer_gone(int sock, int ms)
{
	struct pollfd p = { .fd = sock, .events = POLLIN };
	char b;

	if (sock >= 0 && poll(&p, 1, ms) == 1) {
		if ((p.revents & (POLLHUP | POLLERR)) != 0 ||
		    recv(sock, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0)
			return true;
		usleep((useconds_t)ms * 1000); /* a line waits: not ours to read */
	} else if (sock < 0) {
		usleep((useconds_t)ms * 1000);
	}
	return false;
}

/* The first WRs of a run go out as soon as the exchange is done, and a
 * port whose link is not up yet holds them (net_memif's TX takes nothing
 * while it is not connected): a memif client's link comes up only when
 * its server has answered every message of memif's handshake, on the two
 * processes' interrupt threads, which on a loaded host can end after the
 * TCP exchange and after the first WRs' ACK timeouts have run out (8 x
 * 67 ms by default: 'transport retry counter exceeded', nothing received;
 * perf_app_firsthour's --persist third client, at load 30-40). */
int
perf_wait_link(struct perf_env *env, int (*peer_said)(struct perf_env *env))
{
	const struct perf_conf *c = env->conf;
	uint64_t hz = rte_get_timer_hz(), t0 = rte_get_timer_cycles();
	struct rte_eth_link link;
	bool said = false;
	int rc;

	for (;;) {
		uint64_t waited = rte_get_timer_cycles() - t0;

		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(c->port_id, &link) == 0 &&
		    link.link_status == RTE_ETH_LINK_UP)
			break;
		if (perf_quitting())
			return -EINTR;
		/* also runs the port's watch (a memif client started again) */
		rc = perf_async_check(env, false);
		if (rc != 0)
			return rc;
		if (waited >= (uint64_t)PERF_LINK_WAIT_S * hz) {
			fprintf(stderr, "srnic-perf: port %u's link is still down after %d s: nothing "
					"can be sent (net_memif: is the peer's port a memif of the other "
					"role on the same socket? a kernel interface under af_packet: "
					"ip link set IFACE up)\n", c->port_id, PERF_LINK_WAIT_S);
			return -ENETDOWN;
		}
		if (!said && waited >= hz) {
			printf("srnic-perf: waiting for port %u's link to come up (at most %d s)\n",
			       c->port_id, PERF_LINK_WAIT_S);
			fflush(stdout);
			said = true;
		}
		/* sleeps: nothing to poll yet; a peer gone meanwhile (its
		 * control connection at its end) ends the wait, its link
		 * would never come */
		if (peer_said != NULL) {
			/* the exchange's own reader: the server's STOP (a signal
			 * stopped it) or its end, said as the run would say them */
			rc = peer_said(env);
			if (rc != 0)
				return rc;
			usleep(PERF_LINK_POLL_MS * 1000);
		} else if (peer_gone(env->sock, PERF_LINK_POLL_MS)) {
			fprintf(stderr, "srnic-perf: the peer closed the control connection while "
					"port %u's link was down: it stopped or failed (see its output)\n",
				c->port_id);
			return -ECONNRESET;
		}
	}
	if (said) {
		printf("srnic-perf: port %u's link is up after %.2f s\n", c->port_id,
		       (double)(rte_get_timer_cycles() - t0) / (double)hz);
		fflush(stdout);
	}
	return 0;
}

static const char *
async_event_name(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
		return "IBV_EVENT_QP_FATAL";
	case IBV_EVENT_QP_REQ_ERR:
		return "IBV_EVENT_QP_REQ_ERR";
	case IBV_EVENT_QP_ACCESS_ERR:
		return "IBV_EVENT_QP_ACCESS_ERR";
	case IBV_EVENT_PATH_MIG_ERR:
		return "IBV_EVENT_PATH_MIG_ERR";
	case IBV_EVENT_CQ_ERR:
		return "IBV_EVENT_CQ_ERR";
	case IBV_EVENT_DEVICE_FATAL:
		return "IBV_EVENT_DEVICE_FATAL";
	default:
		return "an asynchronous error";
	}
}

/* After side's events are drained: went_down, a PORT_ERR not followed by
 * a PORT_ACTIVE among them. The port as the device has it now decides:
 * up, it goes on (a flap); down, the wait starts (said once) or, past
 * PERF_PORT_DOWN_GRACE_S, the run ends (-ENETDOWN, said). rc: what the
 * events said so far (one line in all). */
static int
port_down_check(struct perf_env *env, int side, bool went_down, int rc)
{
	const struct perf_conf *c = env->conf;
	uint64_t now = rte_get_timer_cycles(), hz = rte_get_timer_hz();
	struct ibv_port_attr pa;

	if (srnic_dev_query_port(env->dev[side], &pa) == 0 && pa.state == IBV_PORT_ACTIVE) {
		if (env->port_down_at[side] != 0) {
			printf("srnic-perf: port %u's link is up again after %.2f s\n", c->port_id,
			       (double)(now - env->port_down_at[side]) / (double)hz);
			fflush(stdout);
		}
		env->port_down_at[side] = 0;
		return rc;
	}
	if (env->port_down_at[side] == 0) {
		env->port_down_at[side] = now;
		if (went_down) {
			fprintf(stderr, "srnic-perf: port %u's link is down (IBV_EVENT_PORT_ERR): "
					"waiting up to %d s for it to come back\n", c->port_id,
				PERF_PORT_DOWN_GRACE_S);
		}
		return rc;
	}
	if (now - env->port_down_at[side] < (uint64_t)PERF_PORT_DOWN_GRACE_S * hz || rc != 0)
		return rc;
	fprintf(stderr, "srnic-perf: port %u's link went down (IBV_EVENT_PORT_ERR) and stayed down "
			"for %d s: nothing can be sent or received; its peer stopped or the link was "
			"lost (net_memif: is the other process still running?): start the peer again, "
			"then this run\n", c->port_id, PERF_PORT_DOWN_GRACE_S);
	return -ENETDOWN;
}

int
perf_async_check(struct perf_env *env, bool say_up)
{
	const struct perf_conf *c = env->conf;
	struct srnic_async_event ev;
	int side, rc = 0;
	bool went_down;

	for (side = 0; side < 2; side++) {
		if (env->dev[side] == NULL || (side == 1 && env->dev[1] == env->dev[0]))
			continue;
		went_down = false;
		while (srnic_get_async_event(env->dev[side], &ev) == 0) {
			switch (ev.event_type) {
			case IBV_EVENT_PORT_ACTIVE:
				went_down = false;
				if (say_up) {
					printf("srnic-perf: port %u's link is up\n", c->port_id);
					fflush(stdout);
				}
				break;
			case IBV_EVENT_PORT_ERR:
				went_down = true;
				break;
			case IBV_EVENT_QP_FATAL:
			case IBV_EVENT_QP_REQ_ERR:
			case IBV_EVENT_QP_ACCESS_ERR:
			case IBV_EVENT_PATH_MIG_ERR:
			case IBV_EVENT_CQ_ERR:
			case IBV_EVENT_DEVICE_FATAL:
				if (rc != 0)
					break; /* one line: the first says it */
				if (ev.event_type == IBV_EVENT_CQ_ERR)
					fprintf(stderr, "srnic-perf: CQ %u overflowed (%s): a "
							"completion was lost and its QP failed; the run "
							"cannot finish (srnic-perf sizes its CQs from --qps and --depth: a bug to report)\n",
						ev.cq_num, async_event_name(ev.event_type));
				else
					fprintf(stderr, "srnic-perf: QP %#x failed (%s): the run "
							"cannot finish; its failed completion says why\n",
						ev.qp_num, async_event_name(ev.event_type));
				rc = -EIO;
				break;
			default:
				break; /* COMM_EST, SQ_DRAINED, LAST_WQE, SRQ_LIMIT: news */
			}
		}
		if (went_down || env->port_down_at[side] != 0)
			rc = port_down_check(env, side, went_down, rc);
	}
	return rc;
}

void
perf_capture_start(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	unsigned int fl = SRNIC_CAPTURE_RX;
	int s;

	if (c->pcap != NULL && pcap == NULL) {
		pcap = srnic_pcap_open_snaplen(c->pcap, c->pcap_snaplen);
		pcap_full = false;
		if (pcap == NULL)
			fprintf(stderr, "srnic-perf: cannot open %s\n", c->pcap);
	}
	if (!c->trace && pcap == NULL)
		return;
	if (c->role != PERF_ROLE_BOTH)
		fl |= SRNIC_CAPTURE_TX; /* one port: see both directions on it */
	trace_port_b = env->pair.port[1];
	for (s = 0; s < 2; s++)
		if (env->dev[s] != NULL)
			cap[s] = srnic_capture_start(c->role == PERF_ROLE_BOTH ? env->pair.port[s]
									     : c->port_id,
						     fl, on_packet, c);
}

int
perf_setup(struct perf_env *env, struct perf_conf *c)
{
	struct srnic_pair_qp_conf qc;
	struct srnic_dev_conf dc;
	unsigned int i, s;
	int rc;

	memset(env, 0, sizeof(*env));
	env->conf = c;
	env->sock = -1;
	env->lsock = -1;
	if (c->mode->setup != NULL)
		return c->mode->setup(env); /* with a peer: the mode's exchange */

	memset(&dc, 0, sizeof(dc));
	dc.nb_engines = (uint16_t)c->nb_lcores;
	dc.mtu = 9000;
	dc.comp_mask = SRNIC_DEV_CONF_READ_INLINE_MAX;
	dc.read_inline_max = c->read_inline;
	dc.nb_mbufs = c->nb_mbufs;
	rc = srnic_pair_create_conf(&env->pair, "perf", &dc);
	if (rc != 0) {
		dev_fail_why("the two srnic devices over a net_ring pair", -rc);
		return rc;
	}
	for (s = 0; s < 2; s++) {
		env->dev[s] = env->pair.dev[s];
		env->pd[s] = env->pair.pd[s];
	}
	rc = perf_setup_qps(env);
	if (rc != 0)
		return rc;
	perf_qp_conf(c, &qc);
	for (i = 0; i < c->qps; i++) {
		rc = srnic_pair_connect(&env->pair, env->qps[i].qp[0], env->qps[i].qp[1], &qc);
		if (rc != 0)
			return rc;
	}
	if (c->lossy) {
		c->loss.pool = rte_pktmbuf_pool_create("perf_loss", 8191, 256, 0,
						       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
		for (s = 0; s < 2; s++) {
			env->loss[s] = srnic_lossy_attach(env->pair.port[s], &c->loss);
			if (c->loss.pool == NULL || env->loss[s] == NULL)
				return -ENOMEM;
			c->loss.seed = c->loss.seed * 6364136223846793005ull + 1442695040888963407ull;
		}
	}
	perf_capture_start(env);
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

void
perf_teardown(struct perf_env *env)
{
	uint32_t i;
	int s;

	for (i = 0; env->qps != NULL && i < env->conf->qps; i++) {
		struct perf_qp *q = &env->qps[i];

		for (s = 0; s < 2; s++) {
			if (q->qp[s] != NULL)
				srnic_destroy_qp(q->qp[s]);
			if (env->conf->mr_per_qp) /* else slots of buf_all, mr_all's */
				buf_unreg(q->buf[s], q->buf_heap[s], q->mr[s]);
		}
		free(q->t_post);
	}
	for (s = 0; s < 2; s++) {
		buf_unreg(env->buf_all[s], env->buf_all_heap[s], env->mr_all[s]);
		env->mr_all[s] = NULL;
		env->buf_all[s] = NULL;
	}
	free(env->qps);
	env->qps = NULL;
}

void
perf_session_teardown(struct perf_env *env)
{
	unsigned int s, i;

	perf_teardown(env);
	for (s = 0; s < 2; s++)
		for (i = 0; i < PERF_MAX_LCORES; i++)
			if (env->cq[s][i] != NULL) {
				srnic_destroy_cq(env->cq[s][i]);
				env->cq[s][i] = NULL;
			}
	env->max_size = 0; /* the next client's HELLO sets it; qp_mem stays the last one's */
	env->in_run = false;
	env->remote_verify_errors = 0;
	env->run_size = 0;
}
