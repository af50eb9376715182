/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A memif port that changes under srnic (issue 22 item 9, issue 25 item 4),
 * two processes as mpirun starts ranks:
 *
 * - late: the server's EAL is up (its socket listens) but its srnic device,
 *   which starts the port, comes only after the client's: DPDK's memif
 *   server answers "ID not found" until then and its client never tries
 *   again by itself. The server's port, with no peer, is DOWN (phys_state
 *   POLLING); then both see IBV_EVENT_PORT_ACTIVE, ACTIVE, and a READ of
 *   64 KiB carries the server's bytes.
 * - restart: a server serves one READ and exits; the client sees
 *   IBV_EVENT_PORT_ERR and DOWN (DISABLED); a new server process on the
 *   same socket, and the client (the same device) is up again and READs
 *   the new server's bytes.
 * - held: a server that accepts the client's connection and is slow to
 *   answer it (a loaded host): the client's port stays down past
 *   SRNIC_PORT_RESTART_MS but is not restarted while the connection is
 *   under way (port_restart_held counts each time it is left), so the
 *   connection is never closed under a server that has not accepted it
 *   yet (a 22.11 server then panics its interrupt thread); once the server
 *   hangs up, the client restarts and connects again.
 * - hold_bound: a server that accepts the client's connection and never
 *   answers: the client is held SRNIC_PORT_HOLD_MS at most, then restarted
 *   (port_hold_expired): its first connection closed, a second one made.
 *
 * - hangups: local processes that connect to a server's socket and close
 *   at once, many times: while its EAL is up and its device is being
 *   made, while it polls, and interleaved with a real client's connection.
 *   DPDK 22.11's server then fails to send HELLO and leaves EAL's
 *   interrupt thread a callback on a closed fd: the thread's next rebuild
 *   rte_panic()s (abort). The server must serve the real client (a 64 KiB
 *   READ of its bytes), count what it removed (port_memif_cc_purged) and
 *   exit 0.
 *
 * Each side drives its engine and srnic_get_async_event() (the port's
 * watch) from its one thread; the QPs' addresses go over pipes.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "srnic.h"
#include "srnic_pair.h"
#include "srnic_param.h"
#include "test_eal.h"

#define LEN (64 * 1024)
#define WAIT_S 60

struct info {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t va;
	union ibv_gid gid;
	struct rte_ether_addr mac;
};

struct side {
	uint16_t port;
	struct srnic_dev *dev;
	struct srnic_engine *eng;
	struct srnic_pd *pd;
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	uint8_t *buf;
	struct srnic_mr *mr;
	int port_active, port_err;      /* port events seen */
};

static int
eal(int server, const char *name, const char *sock)
{
	char vdev[200];
	const char *extra[] = { vdev, "--log-level=pmd.net.memif:critical" };

	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,id=0,socket=%s,bsize=4096",
		 server ? "server" : "client", sock);
	return srnic_test_eal_init(name, (int)RTE_DIM(extra), extra);
}

static int
dev_make(struct side *s, int server)
{
	memset(s, 0, sizeof(*s));
	s->dev = srnic_test_memif_dev(server, server ? "mps" : "mpc", &s->port);
	if (s->dev == NULL)
		return -1;
	s->eng = srnic_dev_engine(s->dev, 0);
	s->pd = srnic_alloc_pd(s->dev);
	s->cq = srnic_create_cq(s->dev, 64, s->eng);
	s->buf = rte_zmalloc("buf", LEN, 64);
	if (s->pd == NULL || s->cq == NULL || s->buf == NULL)
		return -1;
	s->mr = srnic_reg_mr(s->pd, s->buf, LEN,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	return s->mr == NULL ? -1 : 0;
}

static int
qp_make(struct side *s, struct info *me)
{
	struct srnic_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = s->cq;
	qa.max_send_wr = qa.max_recv_wr = 16;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	s->qp = srnic_create_qp(s->pd, &qa);
	if (s->qp == NULL)
		return -1;
	memset(me, 0, sizeof(*me));
	me->qpn = srnic_qp_num(s->qp);
	me->rkey = srnic_mr_rkey(s->mr);
	me->va = (uintptr_t)s->buf;
	srnic_dev_gid(s->dev, 1, &me->gid);
	return rte_eth_macaddr_get(s->port, &me->mac);
}

static int
qp_up(struct side *s, const struct info *peer)
{
	struct srnic_qp_peer p = { .gid = peer->gid, .qpn = peer->qpn, .psn = 100, .my_psn = 100,
				   .mac = peer->mac, .mac_set = true };
	const struct srnic_pair_qp_conf c = {
		.path_mtu = IBV_MTU_1024, .max_rd_atomic = 4, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = 7, .min_rnr_timer = 1, .access = IBV_ACCESS_REMOTE_READ,
	};

	return srnic_qp_connect(s->qp, &p, &c);
}

/* The port's watch: take the device's events, count the port's. */
static void
events(struct side *s)
{
	struct srnic_async_event ev;

	while (srnic_get_async_event(s->dev, &ev) == 0) {
		s->port_active += ev.event_type == IBV_EVENT_PORT_ACTIVE;
		s->port_err += ev.event_type == IBV_EVENT_PORT_ERR;
	}
}

static enum ibv_port_state
port_state(struct side *s, uint8_t *phys)
{
	struct ibv_port_attr pa;

	if (srnic_dev_query_port(s->dev, &pa) != 0)
		return IBV_PORT_NOP;
	if (phys != NULL)
		*phys = pa.phys_state;
	return pa.state;
}

/* Drive the engine (if poll) and the watch until *count reaches want. */
static int
wait_events(struct side *s, const int *count, int want, bool poll)
{
	uint64_t end = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();

	while (*count < want) {
		if (rte_get_timer_cycles() > end)
			return -1;
		if (poll)
			srnic_engine_poll(s->eng);
		events(s);
	}
	return 0;
}

/* One polled completion (the engine and the watch driven meanwhile). */
static int
wait_wc(struct side *s, struct ibv_wc *wc)
{
	uint64_t end = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();

	while (rte_get_timer_cycles() < end) {
		srnic_engine_poll(s->eng);
		events(s);
		if (srnic_poll_cq(s->cq, 1, wc) == 1)
			return 0;
	}
	return -1;
}

static int
xread(int fd, void *p, size_t n)
{
	return read(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static int
xwrite(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

/* Server: QP up toward the client, its buffer filled with seed, serve
 * until the client says it is done ('d'), polling. */
static int
serve(struct side *s, int rfd, int wfd, uint8_t seed)
{
	struct info me, peer;
	char c = 0;
	int i;

	for (i = 0; i < LEN; i++)
		s->buf[i] = (uint8_t)(i * 7 + seed);
	if (qp_make(s, &me) != 0 || xwrite(wfd, &me, sizeof(me)) != 0 ||
	    xread(rfd, &peer, sizeof(peer)) != 0 || qp_up(s, &peer) != 0 ||
	    xwrite(wfd, "r", 1) != 0)
		return 30;
	/* until the client's 'd': poll (the READ is served here) */
	while (c != 'd') {
		fd_set rs;
		struct timeval tv = { 0, 0 };

		srnic_engine_poll(s->eng);
		events(s);
		FD_ZERO(&rs);
		FD_SET(rfd, &rs);
		if (select(rfd + 1, &rs, NULL, NULL, &tv) == 1 && xread(rfd, &c, 1) != 0)
			return 31;
	}
	return 0;
}

/* Client: a fresh QP toward the server, READ its buffer, check seed. */
static int
fetch(struct side *s, int rfd, int wfd, uint8_t seed)
{
	struct info me, peer;
	struct ibv_sge sge = { .addr = (uintptr_t)s->buf, .length = LEN };
	struct ibv_send_wr wr = { .wr_id = seed, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	char c;
	int i;

	memset(s->buf, 0, LEN);
	sge.lkey = srnic_mr_lkey(s->mr);
	if (qp_make(s, &me) != 0 || xread(rfd, &peer, sizeof(peer)) != 0 ||
	    xwrite(wfd, &me, sizeof(me)) != 0 || qp_up(s, &peer) != 0 ||
	    xread(rfd, &c, 1) != 0)
		return 40;
	wr.wr.rdma.remote_addr = peer.va;
	wr.wr.rdma.rkey = peer.rkey;
	if (srnic_post_send(s->qp, &wr, &bad) != 0)
		return 41;
	if (wait_wc(s, &wc) != 0) {
		fprintf(stderr, "client: no completion for the READ (port %d)\n",
			(int)port_state(s, NULL));
		return 42;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != seed)
		return 43;
	for (i = 0; i < LEN; i++)
		if (s->buf[i] != (uint8_t)(i * 7 + seed))
			return 44;
	return 0;
}

/* ---- late: the server's device after the client's ---- */

static int
late_server(const char *sock, int rfd, int wfd)
{
	struct side s;
	uint8_t phys = 0;
	char c;
	int rc;

	if (eal(1, "mpl_s", sock) != 0 || xwrite(wfd, "s", 1) != 0) /* listening */
		return 10;
	if (xread(rfd, &c, 1) != 0) /* the client's device is made */
		return 11;
	if (dev_make(&s, 1) != 0)
		return 12;
	/* no peer yet: the client is not told to look again before 'p' */
	if (port_state(&s, &phys) != IBV_PORT_DOWN || phys != SRNIC_PORT_PHYS_POLLING) {
		fprintf(stderr, "server: port %d phys %u with no peer\n", (int)port_state(&s, NULL),
			phys);
		return 13;
	}
	if (xwrite(wfd, "p", 1) != 0)
		return 14;
	if (wait_events(&s, &s.port_active, 1, true) != 0) {
		fprintf(stderr, "server: no PORT_ACTIVE\n");
		return 15;
	}
	if (port_state(&s, &phys) != IBV_PORT_ACTIVE || phys != SRNIC_PORT_PHYS_LINK_UP)
		return 16;
	rc = serve(&s, rfd, wfd, 3);
	return rc;
}

static int
late_client(const char *sock, int rfd, int wfd)
{
	struct side s;
	char c;
	int rc;

	if (xread(rfd, &c, 1) != 0 || eal(0, "mpl_c", sock) != 0)
		return 20;
	if (dev_make(&s, 0) != 0) /* its memif connects: "ID not found" */
		return 21;
	if (xwrite(wfd, "c", 1) != 0 || xread(rfd, &c, 1) != 0)
		return 22;
	if (wait_events(&s, &s.port_active, 1, true) != 0) {
		fprintf(stderr, "client: no PORT_ACTIVE (%" PRId64 " restarts)\n",
			srnic_dev_stat(s.dev, "port_restart"));
		return 23;
	}
	if (port_state(&s, NULL) != IBV_PORT_ACTIVE)
		return 24;
	rc = fetch(&s, rfd, wfd, 3);
	if (xwrite(wfd, "d", 1) != 0)
		return 25;
	return rc;
}

/* ---- restart: a second server on the same socket ---- */

static int
restart_server(const char *sock, int rfd, int wfd, int gen)
{
	struct side s;
	int rc;

	if (eal(1, gen == 1 ? "mpr_s1" : "mpr_s2", sock) != 0 || dev_make(&s, 1) != 0)
		return 50 + gen;
	if (xwrite(wfd, "s", 1) != 0)
		return 52;
	rc = serve(&s, rfd, wfd, (uint8_t)(gen * 10));
	return rc;
}

static int
restart_client(const char *sock, int rfd, int wfd, int rfd2, int wfd2)
{
	struct side s;
	uint8_t phys = 0;
	char c;
	int rc;

	if (xread(rfd, &c, 1) != 0 || eal(0, "mpr_c", sock) != 0 || dev_make(&s, 0) != 0)
		return 60;
	rc = fetch(&s, rfd, wfd, 10);
	if (rc != 0)
		return rc;
	/* the first server goes: no engine poll meanwhile (DPDK 22.11's
	 * memif unmaps the rings from its interrupt thread under rx_burst) */
	if (xwrite(wfd, "d", 1) != 0)
		return 61;
	if (wait_events(&s, &s.port_err, 1, false) != 0) {
		fprintf(stderr, "client: no PORT_ERR\n");
		return 62;
	}
	if (port_state(&s, &phys) != IBV_PORT_DOWN || phys != SRNIC_PORT_PHYS_DISABLED)
		return 63;
	/* the second one: up again, without a new device */
	if (xwrite(wfd, "g", 1) != 0 || xread(rfd2, &c, 1) != 0)
		return 64;
	if (wait_events(&s, &s.port_active, 2, true) != 0) {
		fprintf(stderr, "client: not up again (%" PRId64 " restarts)\n",
			srnic_dev_stat(s.dev, "port_restart"));
		return 65;
	}
	rc = fetch(&s, rfd2, wfd2, 20);
	if (xwrite(wfd2, "d", 1) != 0)
		return 66;
	return rc;
}

/* ---- the processes ---- */

static void
wait_ok(pid_t pid, const char *who)
{
	int status = -1;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	print_message("%s exit %d\n", who, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void
sock_name(char *sock, size_t len, const char *tag)
{
	snprintf(sock, len, "/tmp/srnic-%s-%d.sock", tag, (int)getpid());
	unlink(sock);
}

static void
test_memif_server_late(void **state)
{
	char sock[64];
	int s2c[2], c2s[2];
	pid_t srv, cli;

	(void)state;
	sock_name(sock, sizeof(sock), "late");
	assert_int_equal(pipe(s2c), 0);
	assert_int_equal(pipe(c2s), 0);
	srv = fork();
	assert_true(srv >= 0);
	if (srv == 0) {
		close(s2c[0]);
		close(c2s[1]);
		_exit(late_server(sock, c2s[0], s2c[1]));
	}
	cli = fork();
	assert_true(cli >= 0);
	if (cli == 0) {
		close(c2s[0]);
		close(s2c[1]);
		_exit(late_client(sock, s2c[0], c2s[1]));
	}
	close(s2c[0]);
	close(s2c[1]);
	close(c2s[0]);
	close(c2s[1]);
	wait_ok(cli, "client");
	wait_ok(srv, "server");
	unlink(sock);
}

static void
test_memif_server_restart(void **state)
{
	char sock[64];
	int a2c[2], c2a[2], b2c[2], c2b[2];
	pid_t a, b, cli;
	char c;

	(void)state;
	sock_name(sock, sizeof(sock), "restart");
	assert_int_equal(pipe(a2c), 0);
	assert_int_equal(pipe(c2a), 0);
	assert_int_equal(pipe(b2c), 0);
	assert_int_equal(pipe(c2b), 0);
	a = fork();
	assert_true(a >= 0);
	if (a == 0) {
		close(a2c[0]);
		close(c2a[1]);
		close(b2c[0]);
		close(b2c[1]);
		close(c2b[0]);
		close(c2b[1]);
		_exit(restart_server(sock, c2a[0], a2c[1], 1));
	}
	cli = fork();
	assert_true(cli >= 0);
	if (cli == 0) {
		close(c2a[0]);
		close(a2c[1]);
		close(c2b[0]);
		close(b2c[1]);
		_exit(restart_client(sock, a2c[0], c2a[1], b2c[0], c2b[1]));
	}
	close(a2c[0]);
	close(a2c[1]);
	close(c2a[1]);
	wait_ok(a, "first server");
	/* the client says when it saw the first one go ('g'), read here
	 * from its pipe to the first server */
	assert_int_equal(read(c2a[0], &c, 1), 1);
	assert_int_equal(c, 'g');
	close(c2a[0]);
	b = fork();
	assert_true(b >= 0);
	if (b == 0) {
		close(b2c[0]);
		close(c2b[1]);
		_exit(restart_server(sock, c2b[0], b2c[1], 2));
	}
	close(b2c[0]);
	close(b2c[1]);
	close(c2b[0]);
	close(c2b[1]);
	wait_ok(cli, "client");
	wait_ok(b, "second server");
	unlink(sock);
}

/* ---- held: a connection under way is not restarted ---- */

/* the watch driven (no engine: the port is down) until the device's
 * counter NAME reaches want */
static int
wait_stat(struct side *s, const char *name, int64_t want)
{
	uint64_t end = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();

	while (srnic_dev_stat(s->dev, name) < want) {
		if (rte_get_timer_cycles() > end)
			return -1;
		events(s);
	}
	return 0;
}

static int
held_client(const char *sock, int rfd, int wfd)
{
	struct side s;
	char c;

	if (eal(0, "mph_c", sock) != 0 || dev_make(&s, 0) != 0)
		return 70;
	/* connected, no HELLO: two watches past the deadline leave it */
	if (wait_stat(&s, "port_restart_held", 2) != 0) {
		fprintf(stderr, "client: never held (%" PRId64 " restarts)\n",
			srnic_dev_stat(s.dev, "port_restart"));
		return 71;
	}
	/* none but one that held SRNIC_PORT_HOLD_MS (not on a host this slow) */
	if (srnic_dev_stat(s.dev, "port_restart") != srnic_dev_stat(s.dev, "port_hold_expired"))
		return 72;
	if (xwrite(wfd, "h", 1) != 0 || xread(rfd, &c, 1) != 0)
		return 73;
	/* the server hung up: restarted, a new connection */
	if (wait_stat(&s, "port_restart", 1) != 0)
		return 74;
	if (xwrite(wfd, "r", 1) != 0 || xread(rfd, &c, 1) != 0)
		return 75;
	return 0;
}

/* memif's listening socket (abstract, as memif's default), the test's own */
static int
held_listen(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sock));
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);

	memcpy(sa.sun_path + 1, sock, strlen(sock));
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, len), 0);
	assert_int_equal(listen(fd, 4), 0);
	return fd;
}

static int
held_accept(int lfd)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	assert_int_equal(poll(&p, 1, WAIT_S * 1000), 1);
	return accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
}

/* A client process, fn(sock, rfd, wfd), on the test's own listener (one
 * that accepts and never answers): its first connection accepted into
 * h->cfd and its first word read (the client that failed: its exit says) */
struct held {
	char sock[64];
	int lfd, cfd;
	int rfd, wfd;    /* from and to the client */
	pid_t cli;
};

static void
held_start(struct held *h, const char *tag, int (*fn)(const char *, int, int))
{
	int t2c[2], c2t[2];
	char c;

	sock_name(h->sock, sizeof(h->sock), tag);
	h->lfd = held_listen(h->sock);
	assert_int_equal(pipe(t2c), 0);
	assert_int_equal(pipe(c2t), 0);
	h->cli = fork();
	assert_true(h->cli >= 0);
	if (h->cli == 0) {
		close(t2c[1]);
		close(c2t[0]);
		close(h->lfd);
		_exit(fn(h->sock, t2c[0], c2t[1]));
	}
	close(t2c[0]);
	close(c2t[1]);
	h->rfd = c2t[0];
	h->wfd = t2c[1];
	h->cfd = held_accept(h->lfd);
	assert_true(h->cfd >= 0);
	if (read(h->rfd, &c, 1) != 1) {
		wait_ok(h->cli, "client");
		fail();
	}
}

static void
test_memif_client_held(void **state)
{
	struct held h;
	char c, buf[64];
	int cfd2;

	(void)state;
	held_start(&h, "held", held_client);
	/* the one connection still open, no second one */
	assert_int_equal(recv(h.cfd, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(accept4(h.lfd, NULL, NULL, SOCK_NONBLOCK), -1);
	assert_int_equal(errno, EAGAIN);
	close(h.cfd);
	assert_int_equal(write(h.wfd, "x", 1), 1);
	assert_int_equal(read(h.rfd, &c, 1), 1);
	cfd2 = held_accept(h.lfd);
	assert_true(cfd2 >= 0);
	assert_int_equal(write(h.wfd, "x", 1), 1);
	wait_ok(h.cli, "client");
	close(cfd2);
	close(h.lfd);
	close(h.rfd);
	close(h.wfd);
}

/* ---- hold_bound: a server that never answers holds the client a while ---- */

static int
bound_client(const char *sock, int rfd, int wfd)
{
	uint64_t t0 = rte_get_timer_cycles(), ms;
	struct side s;
	char c;

	if (eal(0, "mpb_c", sock) != 0 || dev_make(&s, 0) != 0)
		return 100;
	if (wait_stat(&s, "port_hold_expired", 1) != 0) {
		fprintf(stderr, "client: still held (%" PRId64 " holds, %" PRId64 " restarts)\n",
			srnic_dev_stat(s.dev, "port_restart_held"),
			srnic_dev_stat(s.dev, "port_restart"));
		return 101;
	}
	/* the connection began after t0: the bound is a lower one */
	ms = (rte_get_timer_cycles() - t0) * 1000 / rte_get_timer_hz();
	fprintf(stderr, "client: held %" PRId64 " times, restarted after %" PRIu64 " ms\n",
		srnic_dev_stat(s.dev, "port_restart_held"), ms);
	if (ms < SRNIC_PORT_HOLD_MS || srnic_dev_stat(s.dev, "port_restart") != 1 ||
	    srnic_dev_stat(s.dev, "port_restart_held") < 1)
		return 102;
	if (xwrite(wfd, "e", 1) != 0 || xread(rfd, &c, 1) != 0)
		return 103;
	return 0;
}

static void
test_memif_client_hold_bound(void **state)
{
	struct held h;
	char buf[64];
	int cfd2;

	(void)state;
	/* accepted, and not a word, until the client was restarted */
	held_start(&h, "bound", bound_client);
	/* the restart closed the first connection and made a second */
	assert_int_equal(recv(h.cfd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	cfd2 = held_accept(h.lfd);
	assert_true(cfd2 >= 0);
	assert_int_equal(write(h.wfd, "x", 1), 1);
	wait_ok(h.cli, "client");
	close(h.cfd);
	close(cfd2);
	close(h.lfd);
	close(h.rfd);
	close(h.wfd);
}

/* ---- hangups: clients that connect and go at once ---- */

#define HANGUPS_FIRST 20   /* made before the real client */
#define HANGUPS_DURING 1000 /* made at most while it works */

/* One local process's connection to memif's (abstract) socket, closed at
 * once: 1 made, 0 not now (the backlog, memif's listen(1), full), -1
 * refused (no server). */
static int
hangup_once(const char *sock)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sock));
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0);
	int rc;

	assert_true(fd >= 0);
	memcpy(sa.sun_path + 1, sock, strlen(sock));
	rc = connect(fd, (struct sockaddr *)&sa, len) == 0 ? 1 : errno == EAGAIN ? 0 : -1;
	close(fd);
	return rc;
}

static int
hangups_server(const char *sock, int rfd, int wfd, int tfd)
{
	struct side s;
	int64_t purged;
	int rc;

	if (eal(1, "mpx_s", sock) != 0 || xwrite(tfd, "l", 1) != 0)
		return 80; /* listening: the hangups begin */
	if (dev_make(&s, 1) != 0)
		return 81;
	rc = serve(&s, rfd, wfd, 5);
	purged = srnic_dev_stat(s.dev, "port_memif_cc_purged");
	fprintf(stderr, "server: port_memif_cc_purged %" PRId64 "\n", purged);
	if (rc == 0 && purged < 1) /* no hangup met memif's failed HELLO */
		rc = 82;
	return rc;
}

static int
hangups_client(const char *sock, int rfd, int wfd)
{
	struct side s;
	int rc;

	uint64_t end;

	if (eal(0, "mpx_c", sock) != 0 || dev_make(&s, 0) != 0)
		return 90;
	/* ACTIVE: with or without an event (the link may be up already
	 * when the device reads it first) */
	end = rte_get_timer_cycles() + WAIT_S * rte_get_timer_hz();
	while (port_state(&s, NULL) != IBV_PORT_ACTIVE) {
		if (rte_get_timer_cycles() > end) {
			fprintf(stderr, "client: not ACTIVE (%" PRId64 " restarts)\n",
				srnic_dev_stat(s.dev, "port_restart"));
			return 91;
		}
		srnic_engine_poll(s.eng);
		events(&s);
	}
	rc = fetch(&s, rfd, wfd, 5);
	if (xwrite(wfd, "d", 1) != 0)
		return 92;
	return rc;
}

static void
memif_server_hangups(void)
{
	char sock[64], c;
	int s2c[2], c2s[2], s2t[2], made = 0, rc, status;
	pid_t srv, cli, done = 0;

	sock_name(sock, sizeof(sock), "hang");
	assert_int_equal(pipe(s2c), 0);
	assert_int_equal(pipe(c2s), 0);
	assert_int_equal(pipe(s2t), 0);
	srv = fork();
	assert_true(srv >= 0);
	if (srv == 0) {
		close(s2c[0]);
		close(c2s[1]);
		close(s2t[0]);
		_exit(hangups_server(sock, c2s[0], s2c[1], s2t[1]));
	}
	close(s2t[1]);
	if (read(s2t[0], &c, 1) != 1) { /* the server failed: its exit says */
		wait_ok(srv, "server");
		fail();
	}
	/* its device being made, its engine polling; each waits for the one
	 * before to be accepted */
	while (made < HANGUPS_FIRST && (rc = hangup_once(sock)) >= 0) {
		made += rc;
		if (rc == 0)
			sched_yield();
	}
	cli = fork();
	assert_true(cli >= 0);
	if (cli == 0) {
		close(s2c[1]);
		close(c2s[0]);
		_exit(hangups_client(sock, s2c[0], c2s[1]));
	}
	close(s2c[0]);
	close(s2c[1]);
	close(c2s[0]);
	close(c2s[1]);
	/* interleaved with the real client's connection and READ, until it
	 * is done (or the server is gone) */
	while (done == 0 && made < HANGUPS_FIRST + HANGUPS_DURING &&
	       (rc = hangup_once(sock)) >= 0) {
		made += rc;
		if (rc == 0)
			sched_yield();
		done = waitpid(cli, &status, WNOHANG);
	}
	print_message("%d hangups made\n", made);
	if (done == 0)
		wait_ok(cli, "client");
	else {
		print_message("client exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	wait_ok(srv, "server");
	close(s2t[0]);
	unlink(sock);
}

static void
test_memif_server_hangups(void **state)
{
	(void)state;
	memif_server_hangups();
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest hangups[] = {
		cmocka_unit_test(test_memif_server_hangups),
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memif_server_late),
		cmocka_unit_test(test_memif_server_restart),
		cmocka_unit_test(test_memif_client_held),
		cmocka_unit_test(test_memif_client_hold_bound),
	};

	/* 'hangups': its own meson test (memif_server_hangups) */
	if (argc > 1 && strcmp(argv[1], "hangups") == 0)
		return cmocka_run_group_tests(hangups, NULL, NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
