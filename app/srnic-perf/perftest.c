/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --perftest: the out-of-band exchange of perftest's bandwidth tools
 * (ib_read_bw, ib_write_bw, ib_atomic_bw, ib_send_bw) and of its latency
 * tools ib_read_lat, ib_atomic_lat, ib_write_lat and ib_send_lat (--lat;
 * version 6.06, as Debian 12 ships it) over TCP,
 * so that an unmodified perftest on a hardware RNIC or on rdma_rxe is the
 * other end: srnic-perf --client against "ib_read_bw" (server), or
 * srnic-perf --server against "ib_read_bw HOST" (client). The sequence, as
 * perftest's server and client speak it (the client writes first in every
 * exchange, the server reads first; golden/read_bw_8k_mtu1024.pcap has one):
 *
 *   version     16 bytes, "6.06" and NULs
 *   page size   4 bytes, network order (the larger one is the cycle buffer)
 *   cache line  4 bytes, network order
 *   path MTU    2 bytes, the ibv_mtu value as a decimal string (the smaller wins)
 *   per QP      the QP's "dest", 108 bytes:
 *               LID:OUT_READS:QPN:PSN:RKEY:VADDR:GID[0]:...:GID[15]:SRQN:  (hex) NUL
 *               (latency tools: QP 0's dest once before this round)
 *   per QP      the same again (after connecting; ib_send_bw: QP 0's once
 *               before it), then once more (after RTR)
 *   ...traffic (the client posts; the server answers, or receives)...
 *   READ/WRITE/atomic bandwidth tools only:
 *   dest        once (the client is done)
 *   report      size, iterations (8 bytes each, network order), BW peak,
 *               BW average (MB/s as perftest counts them, 2^20 bytes), message
 *               rate (Mpps): doubles, byte-swapped to network order
 *   dest        once, then "done" and its NUL from each side; close
 *               (ib_write_lat: nothing after its ping-pong, just the close;
 *               golden/write_lat_2k_mtu1024.pcap, send_lat_8k_mtu1024.pcap)
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_ethdev.h>

#include "perf.h"
#include "srnic_hdr.h"

#define PT_VERSION "6.06"
#define PT_VERSION_LEN 16
#define PT_DEST_LEN 108              /* KEY_MSG_SIZE_GID with its NUL */
#define PT_MTU_LEN 2
#define PT_CYCLE_BUFFER 4096         /* perftest's default: the page size */
#define PT_CYCLE_BUFFER_MAX (1u << 21) /* a peer's larger one is refused (2 MiB pages) */
#define PT_CACHE_LINE 64
#define PT_REPORT_FIELDS 5
#define PT_MB (1024.0 * 1024.0)      /* perftest's MB/sec */
#define PT_DONE "done"
#define PT_LINGER_S 5                /* ib_write_lat's end: the wait for the peer's close */
#define PT_LINGER_POLL_MS 100

/* The exchange's shape differs by tool. */
enum pt_kind {
	PT_BW,        /* ib_read_bw, ib_write_bw, ib_atomic_bw: the server waits, reports */
	PT_LAT,       /* ib_read_lat, ib_atomic_lat: QP 0's dest first, no report */
	PT_SEND_BW,   /* ib_send_bw: the server receives; QP 0's dest inside, no report */
	PT_WRITE_LAT, /* ib_write_lat: ping-pong, the server opens; nothing after it */
	PT_SEND_LAT,  /* ib_send_lat: ping-pong, the client opens; goodbye as PT_LAT */
};

static enum pt_kind
pt_kind(const struct perf_conf *c)
{
	if (c->lat)
		return c->op == PERF_OP_WRITE ? PT_WRITE_LAT :
		       c->op == PERF_OP_SEND  ? PT_SEND_LAT : PT_LAT;
	return c->op == PERF_OP_SEND ? PT_SEND_BW : PT_BW;
}

/* The report's doubles travel as their bits in network order. */
static uint64_t
pt_double_to_be(double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	return rte_cpu_to_be_64(b);
}

static double
pt_double_from_be(uint64_t be)
{
	uint64_t b = rte_be_to_cpu_64(be);
	double v;

	memcpy(&v, &b, sizeof(v));
	return v;
}

struct pt_dest {
	uint32_t lid, out_reads, qpn, psn, rkey, srqn;
	uint64_t vaddr;
	union ibv_gid gid;
};

/* Run this side's engines once: while we wait on TCP, the peer's kernel
 * resolves our MAC by ARP (its QP's move to RTR fails without an answer). */
static void
pt_poll_engines(struct perf_env *env)
{
	int side = perf_side(env->conf);
	unsigned int e;
	uint64_t errs = 0;

	/* the ping-pongs' completions are their run's own to take */
	if (side == 1 && env->qps != NULL && !perf_pt_pingpong(env->conf)) {
		/* QPs and CQs made: RECVs reposted too */
		perf_resp_poll_once(env, env->max_size, &errs);
		return;
	}
	for (e = 0; e < env->conf->nb_lcores; e++)
		srnic_engine_poll(srnic_dev_engine(env->dev[side], (uint16_t)e));
}

/* All len bytes out (wr) or in; waiting for input runs the engines. */
static int
pt_io(struct perf_env *env, void *buf, size_t len, bool wr)
{
	uint8_t *p = buf;

	while (len > 0) {
		struct pollfd pf = { .fd = env->sock, .events = POLLIN };
		ssize_t n;

		if (!wr) {
			int rc = poll(&pf, 1, 0);

			if (perf_quitting() || rc < 0)
				return -EINTR;
			if (rc == 0) {
				pt_poll_engines(env);
				continue;
			}
		}
		n = wr ? write(env->sock, p, len) : read(env->sock, p, len);
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One exchange, perftest's ctx_xchg_data(): the client writes first. */
static int
pt_xchg(struct perf_env *env, const void *mine, void *theirs, size_t len)
{
	void *out = (void *)(uintptr_t)mine;

	bool client = env->conf->role == PERF_ROLE_CLIENT;
	int rc = client ? pt_io(env, out, len, true) : pt_io(env, theirs, len, false);

	if (rc == 0)
		rc = client ? pt_io(env, theirs, len, false) : pt_io(env, out, len, true);
	if (rc == -EIO)
		fprintf(stderr, "srnic-perf: the perftest peer closed or broke the connection\n");
	return rc;
}

static void
pt_dest_format(const struct pt_dest *d, char out[PT_DEST_LEN])
{
	int n, i;

	memset(out, 0, PT_DEST_LEN);
	n = snprintf(out, PT_DEST_LEN, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":", d->lid,
		     d->out_reads, d->qpn, d->psn, d->rkey, d->vaddr);
	for (i = 0; i < 16; i++)
		n += snprintf(out + n, (size_t)(PT_DEST_LEN - n), "%02x:", d->gid.raw[i]);
	snprintf(out + n, (size_t)(PT_DEST_LEN - n), "%08x:", d->srqn);
}

/* Fields are hex between colons; anything else is refused. */
static int
pt_dest_parse(const char in[PT_DEST_LEN], struct pt_dest *d)
{
	char buf[PT_DEST_LEN + 1], *save = NULL, *tok;
	uint64_t v[6 + 16 + 1];
	unsigned int k = 0;

	memcpy(buf, in, PT_DEST_LEN);
	buf[PT_DEST_LEN] = '\0';
	for (tok = strtok_r(buf, ":", &save); tok != NULL && k < RTE_DIM(v);
	     tok = strtok_r(NULL, ":", &save)) {
		char *end;

		v[k++] = strtoull(tok, &end, 16);
		if (end == tok || *end != '\0')
			return -EPROTO;
	}
	if (k != RTE_DIM(v))
		return -EPROTO;
	d->lid = (uint32_t)v[0];
	d->out_reads = (uint32_t)v[1];
	d->qpn = (uint32_t)v[2];
	d->psn = (uint32_t)v[3] & SRNIC_PSN_MASK;
	d->rkey = (uint32_t)v[4];
	d->vaddr = v[5];
	for (k = 0; k < 16; k++)
		d->gid.raw[k] = (uint8_t)v[6 + k];
	d->srqn = (uint32_t)v[22];
	return 0;
}

static void
pt_my_dest(struct perf_env *env, int side, uint32_t i, uint32_t psn, struct pt_dest *d)
{
	struct perf_qp *q = &env->qps[i];

	memset(d, 0, sizeof(*d));
	d->out_reads = SRNIC_MAX_RD_ATOMIC;
	d->qpn = srnic_qp_num(q->qp[side]);
	d->psn = psn;
	d->rkey = srnic_mr_rkey(q->mr[side]);
	d->vaddr = (uint64_t)(uintptr_t)q->buf[side];
	srnic_dev_gid(env->dev[side], 1, &d->gid);
}

/* Every QP's dest both ways; remote[] gets the peer's. */
static int
pt_handshake(struct perf_env *env, int side, uint32_t nb, uint32_t psn, struct pt_dest *remote)
{
	uint32_t i;

	for (i = 0; i < nb; i++) {
		struct pt_dest mine, theirs;
		char out[PT_DEST_LEN], in[PT_DEST_LEN];

		int rc;

		pt_my_dest(env, side, i, psn, &mine);
		pt_dest_format(&mine, out);
		rc = pt_xchg(env, out, in, PT_DEST_LEN);
		if (rc != 0)
			return rc;
		if (pt_dest_parse(in, &theirs) != 0) {
			fprintf(stderr, "srnic-perf: bad perftest dest from the peer\n");
			return -EPROTO;
		}
		if (remote != NULL)
			remote[i] = theirs;
	}
	return 0;
}

/* The ping-pongs' two slots of QP 0's buffer: the peer's messages land in
 * the first (our dest's vaddr), ours leave from the second. */
static uint8_t *
pt_rx_slot(struct perf_env *env, int side)
{
	return env->qps[0].buf[side];
}

static uint8_t *
pt_tx_slot(struct perf_env *env, int side)
{
	return env->qps[0].buf[side] + perf_slot_bytes(env);
}

static int
pt_post_recv(struct perf_env *env, int side)
{
	struct perf_qp *q = &env->qps[0];
	struct ibv_sge sge = { .addr = (uintptr_t)pt_rx_slot(env, side),
			       .length = perf_slot_bytes(env),
			       .lkey = srnic_mr_lkey(q->mr[side]) };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	return srnic_post_recv(q->qp[side], &wr, &bad);
}

/* Before the last syncs, after which the opener's first message may come:
 * RECVs posted (ib_send_lat), the byte polled for a WRITE not yet its turn's
 * number (ib_write_lat). */
static int
pt_pingpong_ready(struct perf_env *env, int side)
{
	const struct perf_conf *c = env->conf;
	uint32_t i;

	memset(pt_rx_slot(env, side), 0, perf_slot_bytes(env));
	for (i = 0; pt_kind(c) == PT_SEND_LAT && i < c->depth; i++)
		if (pt_post_recv(env, side) != 0)
			return -ENOMEM;
	return 0;
}

int
perf_pt_setup(struct perf_env *env, int side)
{
	struct perf_conf *c = env->conf;
	char ver[PT_VERSION_LEN] = PT_VERSION, rver[PT_VERSION_LEN + 1];
	uint32_t page = htonl(PT_CYCLE_BUFFER), cl = htonl(PT_CACHE_LINE), rpage, rcl;
	char mtu[PT_MTU_LEN + 1], rmtu[PT_MTU_LEN + 1];
	struct srnic_pair_qp_conf qc;
	struct ibv_port_attr pa;
	struct pt_dest *remote;
	uint32_t psn = perf_first_psn(side), i;
	long rm;
	int rc;

	/* perftest's buffer is at least one cycle buffer; its requester walks
	 * a cycle buffer of ours */
	env->max_size = RTE_MAX(env->max_size, (uint32_t)PT_CYCLE_BUFFER);
	rc = perf_setup_dev(env, side);
	if (rc != 0)
		return rc;
	env->sock = side == 0 ? perf_tcp_client(c->peer_host, c->tcp_port)
			      : perf_tcp_server(c->tcp_port);
	if (env->sock < 0) {
		fprintf(stderr, "srnic-perf: no TCP connection with perftest\n");
		return -ECONNREFUSED;
	}
	memset(rver, 0, sizeof(rver));
	rc = pt_xchg(env, ver, rver, PT_VERSION_LEN);
	if (rc != 0)
		return rc;
	if (atof(rver) < 5.33) {
		fprintf(stderr, "srnic-perf: perftest %s is older than 5.33: not spoken\n", rver);
		return -EPROTO;
	}
	if (strcmp(rver, PT_VERSION) != 0)
		fprintf(stderr, "srnic-perf: the peer is perftest %s; this speaks %s's exchange\n",
			rver, PT_VERSION);
	rc = pt_xchg(env, &page, &rpage, sizeof(page));
	if (rc == 0)
		rc = pt_xchg(env, &cl, &rcl, sizeof(cl));
	if (rc != 0)
		return rc;
	if (ntohl(rpage) > PT_CYCLE_BUFFER_MAX) {
		fprintf(stderr, "srnic-perf: perftest's cycle buffer %u is over %u\n", ntohl(rpage),
			PT_CYCLE_BUFFER_MAX);
		return -EPROTO;
	}
	env->max_size = RTE_MAX(env->max_size, ntohl(rpage));
	memset(mtu, 0, sizeof(mtu));
	memset(rmtu, 0, sizeof(rmtu));
	/* announce what our QPs will take: --mtu, or less if the port's frames
	 * are smaller (net_af_packet: 1518 bytes), never more than we carry */
	if (srnic_dev_query_port(env->dev[side], &pa) == 0 && pa.active_mtu < c->mtu)
		snprintf(mtu, sizeof(mtu), "%d", (int)pa.active_mtu);
	else
		snprintf(mtu, sizeof(mtu), "%d", (int)c->mtu);
	rc = pt_xchg(env, mtu, rmtu, PT_MTU_LEN);
	if (rc != 0)
		return rc;
	rm = strtol(rmtu, NULL, 10);
	if (rm >= IBV_MTU_256 && rm < (long)c->mtu)
		c->mtu = (enum ibv_mtu)rm;
	rc = perf_setup_qps(env);
	if (rc != 0)
		return rc;

	remote = calloc(c->qps, sizeof(*remote));
	if (remote == NULL)
		return -ENOMEM;
	/* latency tools trade QP 0's dest once before the per-QP round */
	rc = c->lat ? pt_handshake(env, side, 1, psn, NULL) : 0;
	if (rc == 0)
		rc = pt_handshake(env, side, c->qps, psn, remote);
	perf_qp_conf(c, &qc);
	for (i = 0; rc == 0 && i < c->qps; i++) {
		struct perf_qp *q = &env->qps[i];
		struct srnic_qp_peer peer = { .qpn = remote[i].qpn, .psn = remote[i].psn,
					      .my_psn = psn, .gid = remote[i].gid };

		/* no more READs / atomics in flight than the peer answers; we
		 * answer what we announced */
		qc.max_rd_atomic = (uint8_t)RTE_MAX(1u, RTE_MIN((uint32_t)SRNIC_MAX_RD_ATOMIC,
								 remote[i].out_reads));
		qc.max_dest_rd_atomic = SRNIC_MAX_RD_ATOMIC;
		q->peer_rkey = remote[i].rkey;
		q->peer_va = remote[i].vaddr;
		q->peer_stride = 0; /* perftest's buffer: read or write its start */
		rc = srnic_qp_connect(q->qp[side], &peer, &qc);
		if (rc != 0)
			fprintf(stderr, "srnic-perf: QP %#x: connect failed: %s\n",
				srnic_qp_num(q->qp[side]), strerror(-rc));
	}
	free(remote);
	if (rc == 0 && perf_pt_pingpong(c))
		rc = pt_pingpong_ready(env, side);
	/* again after connecting (ib_send_bw: QP 0's first), and once after
	 * RTR (ib_send_bw: after posting its receives), as perftest does */
	if (rc == 0 && pt_kind(c) == PT_SEND_BW)
		rc = pt_handshake(env, side, 1, psn, NULL);
	if (rc == 0)
		rc = pt_handshake(env, side, c->qps, psn, NULL);
	if (rc == 0)
		rc = pt_handshake(env, side, 1, psn, NULL);
	return rc;
}

/* The report fields, each as perftest sends it (network byte order). */
static void
pt_report(const struct perf_result *r, uint64_t out[PT_REPORT_FIELDS])
{
	double mbs = r != NULL && r->seconds > 0 ? (double)r->bytes / r->seconds / PT_MB : 0;
	double peak = r != NULL ? r->gbps_peak * 1e9 / 8 / PT_MB : 0;
	double mpps = r != NULL ? r->mops : 0;

	out[0] = rte_cpu_to_be_64(r != NULL ? r->size : 0);
	out[1] = rte_cpu_to_be_64(r != NULL ? r->msgs : 0);
	out[2] = pt_double_to_be(peak);
	out[3] = pt_double_to_be(mbs);
	out[4] = pt_double_to_be(mpps);
}

/*
 * ib_write_lat ends with each side closing, no goodbye. The server keeps its
 * engines running (a last ACK lost: the client's WRITE again) until the
 * client's end of the socket closes; the client, whose turns are all
 * acknowledged, waits for the server's close without polling. So neither
 * leaves, taking its link down (under some PMDs' rx_burst, memif's), while
 * the other still polls. At most PT_LINGER_S either way.
 */
static void
pt_linger(struct perf_env *env, int side)
{
	uint64_t end = rte_get_timer_cycles() + PT_LINGER_S * rte_get_timer_hz();
	struct srnic_engine *eng = srnic_dev_engine(env->dev[side], 0);

	if (shutdown(env->sock, SHUT_WR) != 0)
		return;
	while (rte_get_timer_cycles() < end && !perf_quitting()) {
		struct pollfd p = { .fd = env->sock, .events = POLLIN };
		char buf[64];
		int rc = poll(&p, 1, side == 1 ? 0 : PT_LINGER_POLL_MS);

		if (rc < 0 || (rc > 0 && read(env->sock, buf, sizeof(buf)) <= 0))
			return; /* the peer's end closed (or broke) */
		if (side == 1)
			srnic_engine_poll(eng);
	}
}

/* After the traffic: sync, reports, goodbye (perftest's order). */
static int
pt_finish(struct perf_env *env, int side, const struct perf_result *r)
{
	uint64_t mine[PT_REPORT_FIELDS], theirs[PT_REPORT_FIELDS];
	uint32_t psn = perf_first_psn(side);
	/* bandwidth tools sync and trade reports; latency tools go straight
	 * to the goodbye */
	bool reports = pt_kind(env->conf) == PT_BW;
	unsigned int k;
	int rc;

	if (pt_kind(env->conf) == PT_WRITE_LAT) {
		/* the ping-pong was its own sync: ib_write_lat just closes */
		pt_linger(env, side);
		close(env->sock);
		env->sock = -1;
		return 0;
	}
	rc = reports ? pt_handshake(env, side, 1, psn, NULL) : 0;
	pt_report(r, mine);
	for (k = 0; rc == 0 && reports && k < PT_REPORT_FIELDS; k++)
		rc = pt_xchg(env, &mine[k], &theirs[k], sizeof(mine[k]));
	if (rc == 0)
		rc = pt_handshake(env, side, 1, psn, NULL);
	if (rc == 0)
		rc = pt_io(env, (void *)(uintptr_t)PT_DONE, sizeof(PT_DONE), true);
	if (rc == 0 && side == 1 && !reports) {
		printf("srnic-perf: perftest client done\n");
	} else if (rc == 0 && side == 1) {
		double mbs = pt_double_from_be(theirs[3]);

		/* perftest's MB/s (2^20 bytes), and in srnic-perf's Gb/s */
		printf("srnic-perf: perftest client reports %" PRIu64 " x %" PRIu64
		       " bytes, %.2f MB/s (%.3f Gb/s), %.6f Mpps\n",
		       rte_be_to_cpu_64(theirs[1]), rte_be_to_cpu_64(theirs[0]), mbs,
		       mbs * PT_MB * 8 / 1e9, pt_double_from_be(theirs[4]));
	}
	close(env->sock);
	env->sock = -1;
	return rc;
}

/*
 * ib_write_lat / ib_send_lat on QP 0: the opener (ib_write_lat's server,
 * ib_send_lat's client) sends, and each end answers every message of the
 * other with its own, iters times each way. A WRITE is seen arriving by its
 * last byte, which carries its turn's number (mod 256) as perftest writes
 * and polls it; a SEND by its RECV's completion (the RECV reposted at once).
 * The latency is perftest's figure: half the time between two of our posts,
 * one round trip.
 */
int
perf_pt_pingpong_run(struct perf_env *env, uint32_t size, struct perf_result *r)
{
	const struct perf_conf *c = env->conf;
	int side = perf_side(c);
	enum pt_kind k = pt_kind(c);
	struct perf_qp *q = &env->qps[0];
	struct srnic_engine *eng = srnic_dev_engine(env->dev[side], 0);
	volatile const uint8_t *last_in = pt_rx_slot(env, side) + size - 1;
	uint8_t *tx = pt_tx_slot(env, side);
	struct ibv_sge sge = { .addr = (uintptr_t)tx, .length = size,
			       .lkey = srnic_mr_lkey(q->mr[side]) };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED,
				  .opcode = k == PT_WRITE_LAT ? IBV_WR_RDMA_WRITE : IBV_WR_SEND };
	uint64_t iters = c->iters, scnt = 0, rcnt = 0, ccnt = 0, recvd = 0, i;
	/* post times of the first turns, as many as latency samples are kept */
	uint64_t nb_t = RTE_MIN(iters, (uint64_t)PERF_LAT_SAMPLES_MAX);
	uint64_t hz = rte_get_tsc_hz(), *t_post = malloc(nb_t * sizeof(*t_post));
	uint64_t t0, last_progress;
	bool my_turn = (k == PT_WRITE_LAT) == (side == 1);
	int rc = 0;

	memset(r, 0, sizeof(*r));
	r->busy_pct[0] = r->busy_pct[1] = -1;
	if (size == 0 || size > env->max_size) {
		/* the turn's number rides in the last byte */
		fprintf(stderr, "srnic-perf: ping-pong: --size 1 to %u\n", env->max_size);
		free(t_post);
		return -EINVAL;
	}
	if (t_post == NULL) {
		fprintf(stderr, "srnic-perf: ping-pong: no memory for %" PRIu64 " post times\n",
			nb_t);
		return -ENOMEM;
	}
	memset(t_post, 0, nb_t * sizeof(*t_post)); /* its pages faulted in now, not timed */
	t0 = last_progress = rte_rdtsc();
	wr.wr.rdma.remote_addr = q->peer_va;
	wr.wr.rdma.rkey = q->peer_rkey;
	while (rc == 0 && (scnt < iters || rcnt < iters || ccnt < iters)) {
		struct ibv_wc wc[4];
		uint64_t now;
		bool moved;
		int n, j;

		srnic_engine_poll(eng);
		n = srnic_poll_cq(env->cq[side][0], (int)RTE_DIM(wc), wc);
		for (j = 0; j < n && rc == 0; j++) {
			if (wc[j].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "srnic-perf: qp %#x: %s\n", wc[j].qp_num,
					srnic_wc_status_str(wc[j].status));
				r->errors++;
				rc = -EIO;
			} else if (wc[j].opcode == IBV_WC_RECV) {
				r->verify_errors += wc[j].byte_len != size;
				recvd++;
				rc = pt_post_recv(env, side);
			} else {
				ccnt++;
			}
		}
		moved = n > 0;
		if (!my_turn && rcnt < iters &&
		    (k == PT_WRITE_LAT ? *last_in == (uint8_t)(rcnt + 1) : recvd > rcnt)) {
			rcnt++;
			my_turn = moved = true;
		}
		now = rte_rdtsc();
		if (rc == 0 && my_turn && scnt < iters) {
			struct ibv_send_wr *bad;

			tx[size - 1] = (uint8_t)(scnt + 1);
			wr.wr_id = scnt;
			/* a full SQ (the last ACK still on its way) is tried again */
			if (srnic_post_send(q->qp[side], &wr, &bad) == 0) {
				if (scnt < nb_t)
					t_post[scnt] = now;
				scnt++;
				my_turn = false;
				moved = true;
			}
		}
		if (moved)
			last_progress = now;
		if (perf_quitting()) {
			rc = -EINTR;
		} else if (now - last_progress > PERF_RUN_TIMEOUT_S * hz) {
			fprintf(stderr, "srnic-perf: ping-pong: nothing for %d s (%" PRIu64
				" sent, %" PRIu64 " received; the peer's -n must be --iters)\n",
				PERF_RUN_TIMEOUT_S, scnt, rcnt);
			rc = -ETIMEDOUT;
		}
	}
	r->op = c->op;
	r->size = size;
	r->qps = 1;
	r->depth = 1;
	r->mtu = 128u << (c->pmtu_eff != 0 ? c->pmtu_eff : c->mtu);
	r->msgs = scnt;
	r->bytes = scnt * size;
	r->seconds = (double)(rte_rdtsc() - t0) / (double)hz;
	if (r->seconds > 0) {
		r->gbps = (double)r->bytes * 8 / r->seconds / 1e9;
		r->mops = (double)r->msgs / r->seconds / 1e6;
	}
	r->gbps_peak = r->gbps; /* one message at a time: no peak apart */
	r->mops_peak = r->mops;
	/* one round trip between consecutive posts: half of it, in place */
	nb_t = RTE_MIN(nb_t, scnt);
	for (i = 0; i + 1 < nb_t; i++)
		t_post[i] = (t_post[i + 1] - t_post[i]) / 2;
	if (nb_t > 1)
		perf_lat_fill(r, t_post, nb_t - 1, (double)hz);
	free(t_post);
	r->qp_mem_bytes = env->qp_mem;
	if (rc == 0)
		rc = pt_finish(env, side, r);
	return rc;
}

int
perf_pt_run_end(struct perf_env *env, const struct perf_result *r, uint64_t *verify_errors)
{
	RTE_SET_USED(verify_errors); /* perftest's exchange reports none */
	return pt_finish(env, 0, r);
}

/* The perftest modes' setup: a server whose peer is on its command line
 * as the remote mode does it, else perftest's exchange. */
int
perf_pt_mode_setup(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	int side = perf_side(c), rc;

	if (side == 1 && c->peer_cmdline)
		return perf_remote_setup(env);
	rc = perf_pt_setup(env, side);
	if (rc == 0 && side == 0)
		rc = perf_wait_link(env, NULL); /* the first WRs must find it up */
	if (rc == 0)
		perf_capture_start(env);
	return rc;
}

/* perf_pt_run_end() said goodbye: the socket only closes. */
void
perf_pt_bye(struct perf_env *env)
{
	if (env->sock >= 0) {
		close(env->sock);
		env->sock = -1;
	}
}

int
perf_pt_serve(struct perf_env *env)
{
	uint64_t errs = 0;

	if (perf_pt_pingpong(env->conf)) {
		/* both ends measure: the server prints its table too, as perftest */
		struct perf_result r;
		int rc = perf_pt_pingpong_run(env, env->conf->sizes[0], &r);

		if (rc == 0 || r.msgs > 0) {
			perf_print_header(env->conf);
			perf_print_result(env->conf, &r);
		}
		return rc != 0 || r.errors != 0 || r.verify_errors != 0 ? -EIO : 0;
	}
	perf_prepare_size(env, env->max_size);
	/* The traffic is the client's; answer it until its sync arrives. */
	for (;;) {
		struct pollfd p = { .fd = env->sock, .events = POLLIN };
		int rc = poll(&p, 1, 0);

		if (perf_quitting())
			return 0;
		if (rc < 0)
			return -EIO;
		if (rc > 0)
			break;
		perf_resp_poll_once(env, env->max_size, &errs);
	}
	return pt_finish(env, 1, NULL);
}
