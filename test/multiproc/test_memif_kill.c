/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A memif peer killed while srnic's engine bursts on the other side.
 *
 * DPDK 22.11's net_memif takes a connection down on EAL's interrupt thread
 * when the peer's control socket hangs up (memif_disconnect()): it clears
 * the port's CONNECTED flag, then munmap()s the rings and buffers the peer
 * shared. eth_memif_rx() and eth_memif_tx() test the flag once, on entry:
 * a burst under way when the peer dies reads unmapped memory (SIGSEGV in
 * eth_memif_rx at the C2S ring's head, librte_net_memif.so.23.0+0x8b03;
 * srnic-perf's server in CI, its client killed mid-run).
 *
 * Here one server process (srnic device, its engine polled from its one
 * thread) and client after client (a raw DPDK memif port that floods the
 * server with frames, so the server is mostly inside rx_burst copying them
 * out of the ring). Each client first stops and starts its port CYCLES
 * times, CYCLE_PKTS frames sent before each stop (its DISCONNECT takes the
 * server's side down on the server's interrupt thread, the same path as a
 * hang-up), then floods until it is SIGKILLed, once the server has taken
 * KILL_AFTER packets from it. KILLS of them; the server must survive every
 * disconnect, take the next client's packets, and exit 0. Before the fix
 * the server died of SIGSEGV within a few hundred disconnects.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "srnic.h"
#include "test_eal.h"

#define KILLS 4            /* clients killed under the server's bursts */
#define CYCLES 50          /* before its kill, each client stops and starts its port */
#define CYCLE_PKTS 2048    /* packets a client sends before each stop */
#define KILL_AFTER 4096    /* packets the server takes from a client before its kill */
#define POOL_MBUFS 4095
#define LINK_WAIT_S 30     /* a link that does not come up: the client fails */
#define FRAME_LEN 1500     /* the flood's frames: long copies out of the ring */
#define FLOOD_BURST 32
#define POLLS_PER_LOOK 64  /* engine polls between looks at the parent's pipe */

static int
eal(int server, const char *name, const char *sock)
{
	char vdev[200];
	const char *extra[] = { vdev, "--log-level=pmd.net.memif:critical" };

	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,id=0,socket=%s,bsize=2048",
		 server ? "server" : "client", sock);
	return srnic_test_eal_init(name, (int)RTE_DIM(extra), extra);
}

static int
xwrite(int fd, char c)
{
	return write(fd, &c, 1) == 1 ? 0 : -1;
}

/* The server: its engine polled all the time. From the parent: 'a' (a new
 * client: say 't' once KILL_AFTER more packets came in), 'q' (done). */
static int
server(const char *sock, int rfd, int wfd)
{
	struct srnic_engine *eng;
	struct srnic_dev *dev;
	uint64_t mark = 0, in = 0;
	bool armed = false;
	uint16_t port;
	unsigned int n = 0;

	if (eal(1, "mks", sock) != 0)
		return 40;
	dev = srnic_test_memif_dev(1, "mks", &port);
	if (dev == NULL)
		return 41;
	eng = srnic_dev_engine(dev, 0);
	if (xwrite(wfd, 'r') != 0)
		return 42;
	for (;;) {
		srnic_engine_poll(eng);
		if (++n % POLLS_PER_LOOK != 0)
			continue;
		/* srnic's count: memif's own restarts at each connection */
		in = (uint64_t)srnic_dev_stat(dev, "rx_pkts");
		if (armed && in - mark >= KILL_AFTER) {
			armed = false;
			if (xwrite(wfd, 't') != 0)
				return 44;
		}
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		char c;

		if (poll(&p, 1, 0) <= 0)
			continue;
		if (read(rfd, &c, 1) != 1)
			return 45;
		if (c == 'q')
			break;
		armed = true;
		mark = in;
	}
	printf("server: %" PRIu64 " packets in, survived every disconnect\n", in);
	fflush(stdout);
	if (srnic_dev_destroy(dev) != 0)
		return 46;
	rte_eal_cleanup();
	return 0;
}

/* A client's port up (started, its link up). */
static int
client_up(uint16_t port)
{
	struct rte_eth_link link;

	uint64_t t0 = rte_get_timer_cycles();

	if (rte_eth_dev_start(port) != 0)
		return -1;
	do
		rte_eth_link_get_nowait(port, &link);
	while (link.link_status != RTE_ETH_LINK_UP &&
	       rte_get_timer_cycles() - t0 < LINK_WAIT_S * rte_get_timer_hz());
	return link.link_status == RTE_ETH_LINK_UP ? 0 : -1;
}

/* Frames of an EtherType no one speaks, as fast as the ring takes them:
 * `count` of them (0: until killed). */
static int
flood(uint16_t port, struct rte_mempool *mp, uint64_t count)
{
	struct rte_mbuf *m[FLOOD_BURST];
	uint64_t total = 0;
	uint16_t i, sent;

	while (count == 0 || total < count) {
		if (rte_pktmbuf_alloc_bulk(mp, m, FLOOD_BURST) != 0)
			return -1;
		for (i = 0; i < FLOOD_BURST; i++) {
			struct rte_ether_hdr *eh =
				(struct rte_ether_hdr *)rte_pktmbuf_append(m[i], FRAME_LEN);

			memset(eh, 0xa5, FRAME_LEN);
			eh->ether_type = rte_cpu_to_be_16(0x88b5); /* IEEE local experimental */
		}
		sent = rte_eth_tx_burst(port, 0, m, FLOOD_BURST);
		rte_pktmbuf_free_bulk(&m[sent], FLOOD_BURST - sent);
		total += sent;
		sent = rte_eth_rx_burst(port, 0, m, FLOOD_BURST);
		rte_pktmbuf_free_bulk(m, sent);
	}
	return 0;
}

/* A client: CYCLES floods each ended by a stop, then one until killed
 * ('f' to the parent when it begins). */
static int
client(const char *sock, int k, int wfd)
{
	struct rte_eth_conf conf;
	struct rte_mempool *mp;
	char name[32];
	uint16_t port;
	int c;

	snprintf(name, sizeof(name), "mkc%d", k);
	if (eal(0, name, sock) != 0)
		return 50;
	mp = rte_pktmbuf_pool_create("flood", POOL_MBUFS, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				     rte_socket_id());
	memset(&conf, 0, sizeof(conf));
	if (mp == NULL || rte_eth_dev_get_port_by_name("net_memif0", &port) != 0 ||
	    rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup(port, 0, 1024, rte_socket_id(), NULL, mp) != 0 ||
	    rte_eth_tx_queue_setup(port, 0, 1024, rte_socket_id(), NULL) != 0)
		return 51;
	for (c = 0; c < CYCLES; c++) {
		if (client_up(port) != 0) {
			fprintf(stderr, "client %d: no link at its start %d\n", k, c);
			return 52;
		}
		if (flood(port, mp, CYCLE_PKTS) != 0)
			return 57;
		if (rte_eth_dev_stop(port) != 0)
			return 53;
	}
	if (client_up(port) != 0)
		return 54;
	if (xwrite(wfd, 'f') != 0)
		return 56;
	return flood(port, mp, 0) == 0 ? 0 : 55;
}

static void
test_memif_peer_killed(void **state)
{
	char sock[64], c;
	int p2s[2], s2p[2], c2p[2], k, status = -1;
	pid_t srv;

	(void)state;
	signal(SIGPIPE, SIG_IGN); /* a dead server's pipe: said below */
	snprintf(sock, sizeof(sock), "/tmp/srnic-kill-%d.sock", (int)getpid());
	unlink(sock);
	assert_int_equal(pipe(p2s), 0);
	assert_int_equal(pipe(s2p), 0);
	srv = fork();
	assert_true(srv >= 0);
	if (srv == 0) {
		/* a fault is the server's death, not cmocka's failure report
		 * (its handlers, inherited, would go on running the test) */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		close(p2s[1]);
		close(s2p[0]);
		_exit(server(sock, p2s[0], s2p[1]));
	}
	close(p2s[0]);
	close(s2p[1]);
	assert_int_equal(read(s2p[0], &c, 1), 1);
	assert_int_equal(c, 'r');
	for (k = 0; k < KILLS; k++) {
		pid_t cli;

		assert_int_equal(pipe(c2p), 0);
		cli = fork();
		assert_true(cli >= 0);
		if (cli == 0) {
			close(p2s[1]);
			close(s2p[0]);
			close(c2p[0]);
			_exit(client(sock, k, c2p[1]));
		}
		close(c2p[1]);
		/* its stops and starts done: a client that failed says so */
		if (read(c2p[0], &c, 1) != 1) {
			assert_int_equal(waitpid(cli, &status, 0), cli);
			print_message("client %d: exit %d\n", k, WEXITSTATUS(status));
			close(c2p[0]);
			break;
		}
		close(c2p[0]);
		if (xwrite(p2s[1], 'a') != 0)
			c = 0;
		/* the server died (its end of the pipe closed): stop here */
		if (c == 0 || read(s2p[0], &c, 1) != 1 || c != 't') {
			kill(cli, SIGKILL);
			waitpid(cli, NULL, 0);
			print_message("the server stopped at client %d\n", k);
			break;
		}
		assert_int_equal(kill(cli, SIGKILL), 0);
		assert_int_equal(waitpid(cli, &status, 0), cli);
		/* killed, not exited on an error of its own */
		assert_true(WIFSIGNALED(status));
	}
	print_message("%d clients (%d stops each) killed under the server's bursts\n", k, CYCLES);
	(void)xwrite(p2s[1], 'q');
	close(p2s[1]);
	assert_int_equal(waitpid(srv, &status, 0), srv);
	print_message("server: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
		      WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	assert_int_equal(k, KILLS);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(s2p[0]);
	unlink(sock);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memif_peer_killed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
