/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two processes, each one srnic device on a net_memif port (server and
 * client roles on one socket). They exchange QPN, PSN, GID, rkey and VA over
 * a pipe, as perftest does over TCP; neither knows the other's MAC: ARP
 * finds it. The client READs 64 KiB of the server's memory (PMTU 1024) and
 * SENDs 3000 bytes into a posted RECV; each side checks bytes and CQEs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "srnic.h"
#include "srnic_pair.h"
#include "test_eal.h"

#define READ_LEN (64 * 1024)
#define SEND_LEN 3000
#define PEER_TIMEOUT_S 30

struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t va;
	union ibv_gid gid;
};

struct side {
	struct srnic_dev *dev;
	struct srnic_engine *eng;
	struct srnic_pd *pd;
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	uint8_t *buf;
	struct srnic_mr *mr;
};

static int
side_init(struct side *s, int server, const char *sock)
{
	char vdev[160];
	const char *extra[] = { vdev, "--log-level=pmd.net.memif:error" };
	struct srnic_qp_init_attr qa;
	uint16_t port;

	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,id=0,socket=%s,bsize=4096",
		 server ? "server" : "client", sock);
	if (srnic_test_eal_init(server ? "memif_s" : "memif_c", (int)RTE_DIM(extra), extra) != 0)
		return -1;
	s->dev = srnic_test_memif_dev(server, server ? "memifs" : "memifc", &port);
	if (s->dev == NULL)
		return -1;
	s->eng = srnic_dev_engine(s->dev, 0);
	s->pd = srnic_alloc_pd(s->dev);
	s->cq = srnic_create_cq(s->dev, 64, s->eng);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.max_send_wr = qa.max_recv_wr = 16;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	s->qp = srnic_create_qp(s->pd, &qa);
	s->buf = rte_zmalloc("buf", READ_LEN, 64);
	if (s->pd == NULL || s->cq == NULL || s->qp == NULL || s->buf == NULL)
		return -1;
	s->mr = srnic_reg_mr(s->pd, s->buf, READ_LEN,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	return s->mr == NULL ? -1 : 0;
}

/* RESET -> RTS toward the peer the pipe described (its MAC found by ARP). */
static int
side_connect(struct side *s, const struct peer_info *me, const struct peer_info *peer)
{
	const struct srnic_qp_peer p = { .gid = peer->gid, .qpn = peer->qpn,
					 .psn = peer->psn, .my_psn = me->psn };
	const struct srnic_pair_qp_conf c = {
		.path_mtu = IBV_MTU_1024, .max_rd_atomic = 4, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .min_rnr_timer = 1,
		.access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE,
	};

	return srnic_qp_connect(s->qp, &p, &c);
}

/* Poll until n completions arrived in wc[], or the timeout. */
static int
side_wait(struct side *s, struct ibv_wc *wc, int n)
{
	uint64_t end = rte_get_timer_cycles() + PEER_TIMEOUT_S * rte_get_timer_hz();
	int got = 0, k;

	while (got < n && rte_get_timer_cycles() < end) {
		srnic_engine_poll(s->eng);
		k = srnic_poll_cq(s->cq, n - got, wc + got);
		if (k < 0)
			return k;
		got += k;
	}
	return got;
}

static void
dump_stats(const struct side *s, const char *who)
{
	unsigned int i, n = srnic_engine_stats_count();
	uint64_t v[128];

	srnic_engine_stats_get(s->eng, v, RTE_MIN(n, 128u));
	for (i = 0; i < RTE_MIN(n, 128u); i++)
		if (v[i] != 0)
			fprintf(stderr, "%s %s=%" PRIu64 "\n", who, srnic_engine_stat_name(i), v[i]);
}

static int
run_side(int server, const char *sock, int rfd, int wfd)
{
	struct side s;
	struct peer_info me, peer;
	struct ibv_wc wc[2];
	int i, n;

	/* The client starts its memif port only once the server's socket
	 * exists (the server writes its info after creating it). */
	if (!server && read(rfd, &peer, sizeof(peer)) != sizeof(peer))
		return 11;
	if (side_init(&s, server, sock) != 0)
		return 10;
	memset(&me, 0, sizeof(me));
	me.qpn = srnic_qp_num(s.qp);
	me.psn = server ? 0xFFFFF0 : 4242; /* the server's PSNs wrap around 2^24 */
	me.rkey = srnic_mr_rkey(s.mr);
	me.va = (uintptr_t)s.buf;
	srnic_dev_gid(s.dev, 1, &me.gid);
	if (write(wfd, &me, sizeof(me)) != sizeof(me))
		return 11;
	if (server && read(rfd, &peer, sizeof(peer)) != sizeof(peer))
		return 11;
	if (side_connect(&s, &me, &peer) != 0)
		return 12;

	if (server) {
		struct ibv_sge sge = { .addr = (uintptr_t)s.buf, .length = READ_LEN,
				       .lkey = srnic_mr_lkey(s.mr) };
		struct ibv_recv_wr rwr = { .wr_id = 77, .sg_list = &sge, .num_sge = 1 }, *bad;

		for (i = 0; i < READ_LEN; i++)
			s.buf[i] = (uint8_t)(i ^ (i >> 8));
		/* The SEND lands past the READ source bytes' start: RECV after
		 * the READ was served (the client sends only after its READ). */
		sge.addr = (uintptr_t)s.buf + READ_LEN / 2;
		sge.length = READ_LEN / 2;
		if (srnic_post_recv(s.qp, &rwr, &bad) != 0)
			return 13;
		/* Ready: both QPs in RTS, data in place (perftest syncs the same way);
		 * without it the client's READ could reach a QP still in INIT. */
		if (write(wfd, "r", 1) != 1)
			return 17;
		n = side_wait(&s, wc, 1);
		if (n != 1 || wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != IBV_WC_RECV ||
		    wc[0].wr_id != 77 || wc[0].byte_len != SEND_LEN) {
			dump_stats(&s, "server");
			return 14;
		}
		for (i = 0; i < SEND_LEN; i++)
			if (s.buf[READ_LEN / 2 + i] != (uint8_t)(0xA5 ^ i))
				return 15;
		/* Keep serving ACKs a little so the client sees its SEND's ACK. */
		{
			uint64_t end = rte_get_timer_cycles() + rte_get_timer_hz() / 2;

			while (rte_get_timer_cycles() < end)
				srnic_engine_poll(s.eng);
		}
		/* Done polling: only now may the client go. Its exit takes
		 * the memif connection down, and DPDK 22.11's memif unmaps
		 * the rings from its control thread while rx_burst may be
		 * reading them (a crash in the PMD, 1 run in 10 here). */
		if (write(wfd, "d", 1) != 1)
			return 18;
		return srnic_dev_stat(s.dev, "rx_arp") > 0 || srnic_dev_stat(s.dev, "tx_arp") > 0
			       ? 0 : 16;
	} else {
		struct ibv_sge sge = { .addr = (uintptr_t)s.buf, .length = READ_LEN,
				       .lkey = srnic_mr_lkey(s.mr) };
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_READ,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;
		char ready;

		wr.wr.rdma.remote_addr = peer.va;
		wr.wr.rdma.rkey = peer.rkey;
		if (read(rfd, &ready, 1) != 1)
			return 26;
		if (srnic_post_send(s.qp, &wr, &bad) != 0)
			return 20;
		n = side_wait(&s, wc, 1);
		if (n != 1 || wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != IBV_WC_RDMA_READ) {
			fprintf(stderr, "client: READ: %d completions, status %d\n", n,
				n == 1 ? (int)wc[0].status : -1);
			dump_stats(&s, "client");
			return 21;
		}
		for (i = 0; i < READ_LEN; i++)
			if (s.buf[i] != (uint8_t)(i ^ (i >> 8)))
				return 22;
		for (i = 0; i < SEND_LEN; i++)
			s.buf[i] = (uint8_t)(0xA5 ^ i);
		sge.length = SEND_LEN;
		wr.wr_id = 2;
		wr.opcode = IBV_WR_SEND;
		if (srnic_post_send(s.qp, &wr, &bad) != 0)
			return 23;
		n = side_wait(&s, wc, 1);
		if (n != 1 || wc[0].status != IBV_WC_SUCCESS || wc[0].opcode != IBV_WC_SEND ||
		    wc[0].wr_id != 2)
			return 24;
		/* stay connected (not polling) until the server stops polling */
		if (read(rfd, &ready, 1) != 1 || ready != 'd')
			return 27;
		return srnic_dev_stat(s.dev, "rx_arp") > 0 ? 0 : 25;
	}
}

static void
test_memif_read_send(void **state)
{
	char sock[64];
	int p2c[2], c2p[2], status = -1;
	pid_t srv, cli;

	(void)state;
	snprintf(sock, sizeof(sock), "/tmp/srnic-memif-%d.sock", (int)getpid());
	unlink(sock);
	assert_int_equal(pipe(p2c), 0);
	assert_int_equal(pipe(c2p), 0);
	/* Each side keeps only its own pipe ends, the parent none: a side
	 * that returns early closes its write end and the other's read sees
	 * the end instead of waiting for ever. */
	srv = fork();
	assert_true(srv >= 0);
	if (srv == 0) {
		close(p2c[0]);
		close(c2p[1]);
		_exit(run_side(1, sock, c2p[0], p2c[1]));
	}
	cli = fork();
	assert_true(cli >= 0);
	if (cli == 0) {
		close(c2p[0]);
		close(p2c[1]);
		_exit(run_side(0, sock, p2c[0], c2p[1]));
	}
	close(p2c[0]);
	close(p2c[1]);
	close(c2p[0]);
	close(c2p[1]);
	assert_int_equal(waitpid(cli, &status, 0), cli);
	print_message("client exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(waitpid(srv, &status, 0), srv);
	print_message("server exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	unlink(sock);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memif_read_send),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
