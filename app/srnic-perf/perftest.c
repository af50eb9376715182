/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * --perftest: the out-of-band exchange of perftest's bandwidth tools
 * (ib_read_bw, ib_write_bw, ib_atomic_bw, ib_send_bw) and of ib_read_lat
 * and ib_atomic_lat (--lat; version 6.06, as Debian 12 ships it) over TCP,
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
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
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

/* The exchange's shape differs by tool. */
enum pt_kind {
	PT_BW,       /* ib_read_bw, ib_write_bw, ib_atomic_bw: the server waits, reports */
	PT_LAT,      /* ib_read_lat, ib_atomic_lat: QP 0's dest first, no report */
	PT_SEND_BW,  /* ib_send_bw: the server receives; QP 0's dest inside, no report */
};

static enum pt_kind
pt_kind(const struct perf_conf *c)
{
	return c->op == PERF_OP_SEND ? PT_SEND_BW : c->lat ? PT_LAT : PT_BW;
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
	int side = env->conf->role == PERF_ROLE_SERVER ? 1 : 0;
	unsigned int e;
	uint64_t errs = 0;

	if (side == 1 && env->qps != NULL) { /* QPs and CQs made: RECVs reposted too */
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

			if (perf_remote_quitting() || rc < 0)
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

int
perf_pt_setup(struct perf_env *env, int side)
{
	struct perf_conf *c = env->conf;
	char ver[PT_VERSION_LEN] = PT_VERSION, rver[PT_VERSION_LEN + 1];
	uint32_t page = htonl(PT_CYCLE_BUFFER), cl = htonl(PT_CACHE_LINE), rpage, rcl;
	char mtu[PT_MTU_LEN + 1], rmtu[PT_MTU_LEN + 1];
	struct srnic_pair_qp_conf qc;
	struct pt_dest *remote;
	uint32_t psn = side == 0 ? PERF_PSN_REQ : PERF_PSN_RESP, i;
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
	rc = pt_kind(c) == PT_LAT ? pt_handshake(env, side, 1, psn, NULL) : 0;
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
			fprintf(stderr, "srnic-perf: QP %#x: connect failed: %d\n",
				srnic_qp_num(q->qp[side]), rc);
	}
	free(remote);
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
	double mpps = r != NULL ? r->mops : 0;
	uint64_t b;

	out[0] = rte_cpu_to_be_64(r != NULL ? r->size : 0);
	out[1] = rte_cpu_to_be_64(r != NULL ? r->msgs : 0);
	memcpy(&b, &mbs, sizeof(b));
	out[2] = out[3] = rte_cpu_to_be_64(b); /* peak: the average (no per-interval peak) */
	memcpy(&b, &mpps, sizeof(b));
	out[4] = rte_cpu_to_be_64(b);
}

/* After the traffic: sync, reports, goodbye (perftest's order). */
static int
pt_finish(struct perf_env *env, int side, const struct perf_result *r)
{
	uint64_t mine[PT_REPORT_FIELDS], theirs[PT_REPORT_FIELDS];
	unsigned int k;
	int rc;

	uint32_t psn = side == 0 ? PERF_PSN_REQ : PERF_PSN_RESP;

	/* bandwidth tools sync and trade reports; latency tools go straight
	 * to the goodbye */
	bool reports = pt_kind(env->conf) == PT_BW;

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
		double mbs, mpps;
		uint64_t b;

		b = rte_be_to_cpu_64(theirs[3]);
		memcpy(&mbs, &b, sizeof(mbs));
		b = rte_be_to_cpu_64(theirs[4]);
		memcpy(&mpps, &b, sizeof(mpps));
		printf("srnic-perf: perftest client reports %" PRIu64 " x %" PRIu64
		       " bytes, %.2f MB/s, %.6f Mpps\n",
		       rte_be_to_cpu_64(theirs[1]), rte_be_to_cpu_64(theirs[0]), mbs, mpps);
	}
	close(env->sock);
	env->sock = -1;
	return rc;
}

int
perf_pt_run_end(struct perf_env *env, const struct perf_result *r)
{
	return pt_finish(env, 0, r);
}

int
perf_pt_serve(struct perf_env *env)
{
	uint64_t errs = 0;

	perf_prepare_size(env, env->max_size);
	/* The traffic is the client's; answer it until its sync arrives. */
	for (;;) {
		struct pollfd p = { .fd = env->sock, .events = POLLIN };
		int rc = poll(&p, 1, 0);

		if (perf_remote_quitting())
			return 0;
		if (rc < 0)
			return -EIO;
		if (rc > 0)
			break;
		perf_resp_poll_once(env, env->max_size, &errs);
	}
	return pt_finish(env, 1, NULL);
}
