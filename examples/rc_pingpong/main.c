/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma-core's ibv_rc_pingpong, on srnic: the same TCP exchange (a 52-byte
 * "LID:QPN:PSN:GID" message each way, then "done") and the same SEND
 * ping-pong, so an unmodified ibv_rc_pingpong on a real RNIC or on Linux
 * Soft-RoCE is the peer. The RoCE side runs on any DPDK port; the peer's
 * MAC comes from ARP, which srnic answers and asks while the exchange runs.
 *
 *   srnic-rc-pingpong [EAL] -- --ip A.B.C.D [--port-id N] [-p TCP] [-s SIZE]
 *                     [-n ITERS] [-m MTU] [-r RX_DEPTH] [SERVER]
 *
 * With SERVER: the client (it sends first), as `ibv_rc_pingpong ... SERVER`.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "srnic.h"
#include "srnic_pair.h"
#include "srnic_hdr.h"

#define PP_MSG_LEN 52               /* sizeof "0000:000000:000000:" + 32 hex + NUL */
#define PP_RECV_WRID 1
#define PP_SEND_WRID 2
#define PP_DEFAULT_PORT 18515
#define PP_TIMEOUT_S 30

struct pp {
	struct srnic_dev *dev;
	struct srnic_engine *eng;
	struct srnic_pd *pd;
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	struct srnic_mr *mr;
	uint8_t *buf;
	uint32_t size;
	int rx_depth;
	int sock;
};

/* Wait for fd readable while keeping the engine running (ARP, ND). */
static int
wait_readable(struct pp *p, int fd)
{
	uint64_t end = rte_get_timer_cycles() + PP_TIMEOUT_S * rte_get_timer_hz();
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	while (rte_get_timer_cycles() < end) {
		if (poll(&pf, 1, 0) > 0)
			return 0;
		srnic_engine_poll(p->eng);
	}
	return -1;
}

static int
read_all(struct pp *p, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t k;

		if (wait_readable(p, p->sock) != 0)
			return -1;
		k = read(p->sock, (uint8_t *)b + got, n - got);
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

static void
gid_to_wire(const union ibv_gid *g, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g->raw[i]);
}

static int
parse_dest(const char *msg, uint32_t *qpn, uint32_t *psn, union ibv_gid *gid)
{
	unsigned int lid, q, s, i;
	char wgid[33];

	if (sscanf(msg, "%x:%x:%x:%32s", &lid, &q, &s, wgid) != 4 || strlen(wgid) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(wgid + 2 * i, "%2x", &b) != 1)
			return -1;
		gid->raw[i] = (uint8_t)b;
	}
	*qpn = q;
	*psn = s;
	return 0;
}

static int
post_recvs(struct pp *p, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf, .length = p->size,
			       .lkey = srnic_mr_lkey(p->mr) };
	struct ibv_recv_wr wr = { .wr_id = PP_RECV_WRID, .sg_list = &sge, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < n; i++)
		if (srnic_post_recv(p->qp, &wr, &bad) != 0)
			break;
	return i;
}

static int
post_send(struct pp *p)
{
	struct ibv_sge sge = { .addr = (uintptr_t)p->buf, .length = p->size,
			       .lkey = srnic_mr_lkey(p->mr) };
	struct ibv_send_wr wr = { .wr_id = PP_SEND_WRID, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	return srnic_post_send(p->qp, &wr, &bad);
}

static void
usage(const char *prog)
{
	fprintf(stderr, "usage: %s [EAL] -- --ip A.B.C.D [--port-id N] [-p PORT] [-s SIZE] "
			"[-n ITERS] [-m MTU] [-r RX_DEPTH] [SERVER]\n", prog);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ip", required_argument, NULL, 'i' },
		{ "port-id", required_argument, NULL, 'P' },
		{ "port", required_argument, NULL, 'p' },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	struct pp p = { .size = 4096, .rx_depth = 500, .sock = -1 };
	struct srnic_pair_qp_conf qc = { .path_mtu = IBV_MTU_1024, .max_rd_atomic = 1,
					 .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
					 .min_rnr_timer = 12 };
	struct srnic_qp_peer peer = { 0 };
	struct srnic_dev_conf dc = { .nb_engines = 1, .mtu = 9000, .ip_ver = 4, .name = "srnic0" };
	struct srnic_qp_init_attr qa = { .max_send_wr = 1, .max_recv_wr = 500, .max_send_sge = 1,
					 .max_recv_sge = 1, .qp_type = IBV_QPT_RC };
	const char *server = NULL;
	unsigned int iters = 1000, rcnt = 0, scnt = 0, pending;
	uint16_t tcp_port = PP_DEFAULT_PORT;
	char mine[PP_MSG_LEN], theirs[PP_MSG_LEN], wgid[33];
	union ibv_gid gid;
	uint64_t t0, t1, deadline;
	int rc, c, routs;

	rc = srnic_eal_init(argc, argv);
	if (rc < 0)
		return 1;
	argc -= rc;
	argv += rc;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:s:n:m:r:", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (inet_pton(AF_INET, optarg, dc.ip) != 1)
				return usage(argv[0]), 1;
			break;
		case 'P':
			dc.port_id = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 'p':
			tcp_port = (uint16_t)strtoul(optarg, NULL, 0);
			break;
		case 's':
			p.size = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'm': {
			unsigned long v = strtoul(optarg, NULL, 0);

			qc.path_mtu = v == 256 ? IBV_MTU_256 : v == 512 ? IBV_MTU_512 :
				      v == 2048 ? IBV_MTU_2048 : v == 4096 ? IBV_MTU_4096 : IBV_MTU_1024;
			break;
		}
		case 'r':
			p.rx_depth = atoi(optarg);
			break;
		default:
			usage(argv[0]);
			return 1;
		}
	}
	if (optind < argc)
		server = argv[optind];
	if (dc.ip[0] == 0 || p.rx_depth < 2 || p.size == 0) {
		usage(argv[0]);
		return 1;
	}

	/* The device, one QP, one buffer (rc_pingpong's shape). */
	p.dev = srnic_dev_create(&dc);
	if (p.dev == NULL) {
		fprintf(stderr, "cannot bring srnic up on port %u\n", dc.port_id);
		return 1;
	}
	p.eng = srnic_dev_engine(p.dev, 0);
	p.pd = srnic_alloc_pd(p.dev);
	p.cq = srnic_create_cq(p.dev, p.rx_depth + 1, p.eng);
	qa.send_cq = qa.recv_cq = p.cq;
	qa.max_recv_wr = (uint32_t)p.rx_depth;
	p.qp = srnic_create_qp(p.pd, &qa);
	p.buf = rte_zmalloc("pp", p.size, 4096);
	if (p.pd == NULL || p.cq == NULL || p.qp == NULL || p.buf == NULL)
		return 1;
	p.mr = srnic_reg_mr(p.pd, p.buf, p.size, IBV_ACCESS_LOCAL_WRITE);
	if (p.mr == NULL)
		return 1;
	peer.my_psn = (uint32_t)(rte_rdtsc() & SRNIC_PSN_MASK);
	srnic_dev_gid(p.dev, 1, &gid);
	gid_to_wire(&gid, wgid);
	snprintf(mine, sizeof(mine), "%04x:%06x:%06x:%s", 0, srnic_qp_num(p.qp), peer.my_psn, wgid);
	printf("  local address:  LID 0x0000, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       srnic_qp_num(p.qp), peer.my_psn, wgid);

	/* rc_pingpong's exchange over TCP. */
	if (server != NULL) {
		struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
		char ps[8];

		snprintf(ps, sizeof(ps), "%u", tcp_port);
		if (getaddrinfo(server, ps, &hints, &ai) != 0)
			return 1;
		p.sock = socket(ai->ai_family, ai->ai_socktype, 0);
		if (p.sock < 0 || connect(p.sock, ai->ai_addr, ai->ai_addrlen) != 0) {
			fprintf(stderr, "couldn't connect to %s:%u\n", server, tcp_port);
			return 1;
		}
		freeaddrinfo(ai);
		if (write(p.sock, mine, sizeof(mine)) != sizeof(mine) ||
		    read_all(&p, theirs, sizeof(theirs)) != 0)
			return 1;
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(tcp_port) };
		int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

		setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 1) != 0)
			return 1;
		if (wait_readable(&p, l) != 0)
			return 1;
		p.sock = accept(l, NULL, NULL);
		close(l);
		if (p.sock < 0 || read_all(&p, theirs, sizeof(theirs)) != 0)
			return 1;
	}
	theirs[PP_MSG_LEN - 1] = '\0';
	if (parse_dest(theirs, &peer.qpn, &peer.psn, &peer.gid) != 0) {
		fprintf(stderr, "bad remote address: %s\n", theirs);
		return 1;
	}
	printf("  remote address: %s\n", theirs);
	rc = srnic_qp_connect(p.qp, &peer, &qc); /* the peer's MAC: ARP */
	if (rc != 0) {
		fprintf(stderr, "couldn't connect the QP: %d\n", rc);
		return 1;
	}
	routs = post_recvs(&p, p.rx_depth);
	if (server != NULL) {
		if (write(p.sock, "done", 5) != 5)
			return 1;
	} else {
		if (write(p.sock, mine, sizeof(mine)) != sizeof(mine) ||
		    read_all(&p, theirs, 5) != 0)
			return 1;
	}

	/* The ping-pong: a SEND each way per iteration, client first. */
	pending = PP_RECV_WRID;
	if (server != NULL) {
		if (post_send(&p) != 0)
			return 1;
		pending |= PP_SEND_WRID;
	}
	t0 = rte_get_timer_cycles();
	deadline = t0 + PP_TIMEOUT_S * rte_get_timer_hz();
	while ((rcnt < iters || scnt < iters) && rte_get_timer_cycles() < deadline) {
		struct ibv_wc wc[8];
		int n, i;

		srnic_engine_poll(p.eng);
		n = srnic_poll_cq(p.cq, 8, wc);
		if (n < 0)
			return 1;
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
					srnic_wc_status_str(wc[i].status), wc[i].status,
					(int)wc[i].wr_id);
				return 1;
			}
			if (wc[i].wr_id == PP_SEND_WRID) {
				scnt++;
			} else {
				if (--routs <= 1)
					routs += post_recvs(&p, p.rx_depth - routs);
				rcnt++;
			}
			pending &= ~(unsigned int)wc[i].wr_id;
			if (scnt < iters && pending == 0) {
				if (post_send(&p) != 0)
					return 1;
				pending = PP_RECV_WRID | PP_SEND_WRID;
			}
		}
	}
	t1 = rte_get_timer_cycles();
	if (rcnt < iters || scnt < iters) {
		unsigned int i;

		fprintf(stderr, "timed out: %u sent, %u received of %u; counters:", scnt, rcnt, iters);
		for (i = 0; i < srnic_engine_stats_count(); i++) {
			int64_t v = srnic_dev_stat(p.dev, srnic_engine_stat_name(i));

			if (v != 0)
				fprintf(stderr, " %s=%" PRId64, srnic_engine_stat_name(i), v);
		}
		fprintf(stderr, "\n");
		return 1;
	}
	{
		double s = (double)(t1 - t0) / rte_get_timer_hz();
		uint64_t bytes = (uint64_t)p.size * iters * 2;

		printf("%" PRIu64 " bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, s,
		       bytes * 8.0 / s / 1e6);
		printf("%u iters in %.2f seconds = %.2f usec/iter\n", iters, s, s * 1e6 / iters);
	}
	close(p.sock);
	return 0;
}
