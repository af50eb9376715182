/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two processes, as perftest runs: the server (responder) listens on a TCP
 * port, the client (requester) connects, and they exchange each QP's
 * parameters as text lines before the traffic starts on the DPDK port:
 *
 *   C: SRNIC-PERF 1   (PERF_GREETING, at once: a server drops a connection
 *                      that says nothing else within PERF_HANDSHAKE_WAIT_S)
 *   C: HELLO op qps depth mtu maxsize lcores verify
 *   S: QP <qpn> <psn> <rkey> <va> <gid hex> <mac>   (one per QP), END
 *   C: QP <qpn> <psn> 0 0 <gid hex> <mac>           (one per QP), END
 *      (<psn>: that QP's first PSN, drawn at random each session)
 *   S: READY
 *   per size:  C: RUN <size>   S: OK   ...traffic...   C: DONE <posted per QP>   S: ERR <n>
 *   C: BYE   S: BYE
 *   S: STOP   (a signal stopped the server: sent at any point after HELLO; the
 *             client ends its run at once, says so, and says BYE; the
 *             server keeps answering until then, at most STOP_WAIT_S)
 *
 * The server polls its engines while it waits for the next line; its BYE
 * says it has stopped, and only then does the client go (a client leaving
 * takes the port's link down, and some PMDs, DPDK 22.11's memif among
 * them, unmap their rings under an rx_burst still running). A server
 * may instead take its one peer from the command line (--peer-*) and print
 * its own parameters as one JSON line, for scripts and external tools.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_random.h>

#include "perf.h"
#include "srnic_wire.h"

#define LINE_MAX_LEN 512
/* "DONE" and every QP's WR count (at most 20 digits and a space each) */
#define DONE_LINE_MAX (8 + PERF_MAX_QPS * 21)
#define TCP_CONNECT_WAIT_S 10       /* how long a client waits for its server to come up */
#define TCP_CONNECT_TRY_MS 1000     /* one attempt at most (an address where nothing answers) */
#define TCP_RETRY_MS 100            /* between attempts */
#define BYE_WAIT_MS 5000            /* the client's wait for the server's BYE */
#define STOP_WAIT_S 15              /* a server stopped by a signal: its wait for the client's BYE */

/* The client is ending a run (DONE/ERR, BYE): a first signal lets that
 * exchange finish, so the server's figures still arrive. */
static bool finishing;
/* --server: a signal came, STOP was sent; the client's BYE is awaited until
 * stop_deadline (a second signal exits at once). */
static bool stopping;
static uint64_t stop_deadline;
/* --server: the client of the connection in hand, "address:port" */
static char client_addr[64];

static int
send_line(int fd, const char *fmt, ...)
{
	char buf[LINE_MAX_LEN];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -1;
	return write(fd, buf, (size_t)n) == n ? 0 : -1;
}

/* Read one line; while waiting, keep the responder's engines running
 * (serve). wait_s > 0 bounds the wait for what (-ETIMEDOUT, said why): a
 * client also says after a second of silence what it waits for; a server
 * bounds its client's handshake only (between runs and mid-run a server's
 * waits are its client's to end: wait_s 0). */
static int
get_line(struct perf_env *env, char *buf, size_t len, bool serve, int wait_s, const char *what)
{
	const struct perf_conf *c = env->conf;
	uint64_t t0 = rte_get_timer_cycles(), hz = rte_get_timer_hz();
	bool said = false;
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = { .fd = env->sock, .events = POLLIN };
		char ch;
		int rc = poll(&p, 1, serve ? 0 : 1000);

		if (perf_quitting() && !stopping && (serve || !finishing))
			return -EINTR;
		if (stopping && rte_get_timer_cycles() > stop_deadline)
			return -ETIMEDOUT;
		if (rc < 0 && errno == EINTR)
			continue; /* a signal we ride out (finishing, stopping) */
		if (rc == 0) {
			if (serve) {
				uint64_t errs = 0;

				perf_resp_poll_once(env, env->run_size, &errs);
				env->remote_verify_errors += errs;
			} else if (wait_s > 0 && rte_get_timer_cycles() - t0 >= (uint64_t)wait_s * hz) {
				if (c->role == PERF_ROLE_SERVER)
					printf("srnic-perf: the client at %s sent nothing more in %d s "
					       "(waiting for %s): dropped it (a srnic-perf client "
					       "greets at once and sends its QPs as soon as they are "
					       "up)\n", client_addr, wait_s, what);
				else
					fprintf(stderr, "srnic-perf: no reply from the server on %s:%u "
							"in %d s (waiting for %s): it accepted the "
							"connection but says nothing; is it srnic-perf "
							"--server (a perftest server takes --perftest)?\n",
						c->peer_host, c->tcp_port, wait_s, what);
				fflush(stdout);
				return -ETIMEDOUT;
			} else if (wait_s > 0 && !said && c->role != PERF_ROLE_SERVER) {
				printf("srnic-perf: waiting for the server's reply on %s:%u (%s; at most "
				       "%d s)\n", c->peer_host, c->tcp_port, what, wait_s);
				fflush(stdout);
				said = true;
			}
			continue;
		}
		if (rc < 0)
			return -EIO;
		rc = (int)read(env->sock, &ch, 1);
		if (rc == 0 || (rc < 0 && errno == ECONNRESET))
			return -ECONNRESET; /* the peer went away */
		if (rc != 1)
			return -EIO;
		if (ch == '\n') {
			buf[n] = '\0';
			/* the server was stopped (a signal there): the client's run ends */
			if (c->role == PERF_ROLE_CLIENT && strcmp(buf, "STOP") == 0)
				return -ESHUTDOWN;
			return 0;
		}
		buf[n++] = ch;
	}
	return -E2BIG;
}

/* A server's wait: as long as its client takes. */
#define SERVER_WAIT 0, NULL

static void
gid_hex(const union ibv_gid *g, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g->raw[i]);
}

static int
gid_parse(const char *s, union ibv_gid *g)
{
	int i;

	for (i = 0; i < 16; i++) {
		unsigned int b;

		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		g->raw[i] = (uint8_t)b;
	}
	return 0;
}

/* Each QP's first PSN for this session, at random (perftest's lrand48() &
 * 0xffffff). A --persist server's next client has the addresses of the
 * last and, a new process, numbers its QPs as the last did: a packet of
 * the last one's still on the way (an ACK, a request resent) would
 * otherwise carry a PSN the new connection expects, and complete or write
 * what it never sent. Now it falls outside the new connection's window
 * (a match as likely as the window's share of 2^24 PSNs) and is dropped
 * as any stale PSN is. The peer learns it from our QP lines, as ever. */
static void
session_psns(struct perf_env *env)
{
	uint32_t i;

	for (i = 0; i < env->conf->qps; i++)
		env->qps[i].first_psn = (uint32_t)rte_rand() & SRNIC_PSN_MASK;
}

static int
send_qps(struct perf_env *env, int side)
{
	union ibv_gid gid;
	char ghex[33], mac[RTE_ETHER_ADDR_FMT_SIZE];
	struct rte_ether_addr ea;
	uint32_t i;

	srnic_dev_gid(env->dev[side], 1, &gid);
	gid_hex(&gid, ghex);
	rte_eth_macaddr_get(env->conf->port_id, &ea);
	rte_ether_format_addr(mac, sizeof(mac), &ea);
	for (i = 0; i < env->conf->qps; i++) {
		struct perf_qp *q = &env->qps[i];

		if (send_line(env->sock, "QP %u %u %u %" PRIu64 " %s %s\n",
			      srnic_qp_num(q->qp[side]), q->first_psn,
			      side == 1 ? srnic_mr_rkey(q->mr[1]) : 0,
			      side == 1 ? (uint64_t)(uintptr_t)q->buf[1] : 0, ghex, mac) != 0)
			return -EIO;
	}
	return send_line(env->sock, "END\n");
}

/* Read the peer's QP lines and connect ours to them. */
static int
recv_and_connect(struct perf_env *env, int side)
{
	struct srnic_pair_qp_conf qc;
	char line[LINE_MAX_LEN];
	uint32_t i;
	int rc;

	int wait_s = PERF_HANDSHAKE_WAIT_S;
	const char *what = side == 0 ? "its QP parameters, after our HELLO" :
				       "its QP parameters, after ours";

	perf_qp_conf(env->conf, &qc);
	for (i = 0; i < env->conf->qps; i++) {
		struct perf_qp *q = &env->qps[i];
		struct srnic_qp_peer peer = { .my_psn = q->first_psn, .mac_set = true };
		char ghex[64], mac[64];
		uint64_t va;
		uint32_t rkey;

		rc = get_line(env, line, sizeof(line), false, wait_s, what);
		if (rc != 0)
			return rc;
		if (sscanf(line, "QP %u %u %u %" SCNu64 " %63s %63s", &peer.qpn, &peer.psn, &rkey,
			   &va, ghex, mac) != 6 ||
		    gid_parse(ghex, &peer.gid) != 0 || rte_ether_unformat_addr(mac, &peer.mac) != 0) {
			fprintf(stderr, "srnic-perf: bad QP line from the peer: %s\n", line);
			return -EPROTO;
		}
		if (side == 0) {
			q->peer_rkey = rkey;
			q->peer_va = va;
			q->peer_stride = perf_slot_bytes(env); /* the server's slots */
		}
		rc = srnic_qp_connect(q->qp[side], &peer, &qc);
		if (rc != 0) {
			fprintf(stderr, "srnic-perf: QP %#x: connect failed: %s\n",
				srnic_qp_num(q->qp[side]), strerror(-rc));
			return rc;
		}
	}
	rc = get_line(env, line, sizeof(line), false, wait_s, what);
	if (rc != 0)
		return rc;
	return strcmp(line, "END") == 0 ? 0 : -EPROTO;
}

/* One non-blocking connect, at most TCP_CONNECT_TRY_MS: 0 or an errno. */
static int
tcp_try(const struct addrinfo *ai, int *out)
{
	struct pollfd p;
	socklen_t len = sizeof(int);
	int fd, err = 0, fl;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		err = errno;
		if (err == EINPROGRESS) {
			p.fd = fd;
			p.events = POLLOUT;
			p.revents = 0;
			err = poll(&p, 1, TCP_CONNECT_TRY_MS);
			if (err == 0)
				err = ETIMEDOUT;
			else if (err < 0)
				err = errno;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
				err = errno;
		}
	}
	if (err != 0) {
		close(fd);
		return err;
	}
	fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	*out = fd;
	return 0;
}

int
perf_tcp_client(const char *host, uint16_t port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	uint64_t deadline = rte_get_timer_cycles() + TCP_CONNECT_WAIT_S * rte_get_timer_hz();
	bool said = false;
	char ps[8];
	int fd = -1, err, gai;

	snprintf(ps, sizeof(ps), "%u", port);
	gai = getaddrinfo(host, ps, &hints, &ai);
	if (gai != 0) {
		fprintf(stderr, "srnic-perf: cannot resolve the server's address %s: %s\n", host,
			gai_strerror(gai));
		return -1;
	}
	for (;;) {
		err = tcp_try(ai, &fd);
		if (err == 0 || perf_quitting() || rte_get_timer_cycles() >= deadline)
			break;
		if (!said) {
			printf("srnic-perf: waiting up to %d s for the server at %s:%u (%s)\n",
			       TCP_CONNECT_WAIT_S, host, port, strerror(err));
			fflush(stdout);
			said = true;
		}
		usleep(TCP_RETRY_MS * 1000); /* sleeps: no spinning while we wait */
	}
	freeaddrinfo(ai);
	if (err != 0) {
		if (perf_quitting())
			fprintf(stderr, "srnic-perf: stopped while waiting for the server\n");
		else
			fprintf(stderr, "srnic-perf: cannot reach the server at %s:%u: %s (is "
				"srnic-perf --server, or the perftest server, running there on that "
				"port? --tcp-port sets it)\n", host, port, strerror(err));
		return -1;
	}
	return fd;
}

/* A listening socket on port, or -1 (said why). */
static int
tcp_listen(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0) {
		fprintf(stderr, "srnic-perf: cannot open a TCP socket: %s\n", strerror(errno));
		return -1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 1) != 0) {
		int err = errno;

		fprintf(stderr, "srnic-perf: cannot listen on TCP port %u: %s%s\n", port,
			strerror(err), err == EADDRINUSE ?
			" (another server has it: stop it, or pick another with --tcp-port)" : "");
		close(lfd);
		return -1;
	}
	return lfd;
}

/* The next client on lfd, or -1 (said why, or stopped by a signal). */
static int
tcp_accept(int lfd, uint16_t port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd;

	printf("srnic-perf: server waiting for a client on TCP port %u\n", port);
	fflush(stdout);
	/* a signal that came before the wait (between a session's end and
	 * this accept(), or taken by another thread) ended no system call:
	 * the flag is looked at every PERF_ACCEPT_POLL_MS */
	for (;;) {
		struct pollfd p = { .fd = lfd, .events = POLLIN };
		int n;

		if (perf_quitting()) {
			fd = -1;
			break;
		}
		n = poll(&p, 1, PERF_ACCEPT_POLL_MS);
		if (n < 0 && errno != EINTR) {
			fd = -1;
			break;
		}
		if (n <= 0)
			continue;
		len = sizeof(sa);
		fd = accept(lfd, (struct sockaddr *)&sa, &len);
		if (fd >= 0 || (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN))
			break;
	}
	if (fd >= 0 && sa.sin_family == AF_INET)
		snprintf(client_addr, sizeof(client_addr), "%s:%u", inet_ntoa(sa.sin_addr),
			 ntohs(sa.sin_port));
	else
		snprintf(client_addr, sizeof(client_addr), "(unknown address)");
	if (fd < 0 && perf_quitting())
		printf("srnic-perf: stopped while waiting for a client\n");
	else if (fd < 0)
		fprintf(stderr, "srnic-perf: accepting a client on TCP port %u: %s\n", port,
			strerror(errno));
	return fd;
}

int
perf_tcp_server(uint16_t port)
{
	int lfd = tcp_listen(port), fd;

	if (lfd < 0)
		return -1;
	fd = tcp_accept(lfd, port);
	close(lfd);
	return fd;
}

/* The server's one peer from the command line: connect, print ours as JSON
 * (what the connection took: the path MTU after the port's clamp, the
 * rights the region and the QP grant). */
static int
cmdline_peer(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	struct perf_qp *q = &env->qps[0];
	struct srnic_pair_qp_conf qc;
	struct srnic_qp_peer peer = { .qpn = c->peer_qpn, .psn = c->peer_psn,
				      .mac = c->peer_mac, .mac_set = c->peer_mac_set };
	struct srnic_qp_init_attr init;
	struct ibv_qp_attr a;
	struct rte_ether_addr ea;
	char mac[RTE_ETHER_ADDR_FMT_SIZE];
	union ibv_gid gid;
	char ghex[33];
	int rc;

	perf_qp_conf(c, &qc);
	peer.my_psn = qc.psn[1];
	srnic_gid_from_ipv4(&peer.gid, c->peer_ip);
	rc = srnic_qp_connect(q->qp[1], &peer, &qc);
	if (rc != 0) {
		fprintf(stderr, "srnic-perf: QP %#x: connect failed: %s\n", srnic_qp_num(q->qp[1]),
			strerror(-rc));
		return rc;
	}
	rc = srnic_query_qp(q->qp[1], &a, IBV_QP_PATH_MTU | IBV_QP_ACCESS_FLAGS, &init);
	if (rc != 0)
		return rc;
	srnic_dev_gid(env->dev[1], 1, &gid);
	gid_hex(&gid, ghex);
	rte_eth_macaddr_get(c->port_id, &ea);
	rte_ether_format_addr(mac, sizeof(mac), &ea);
	/* len: the whole region, depth slots of max(size, 8) bytes (an
	 * atomic's 8-byte target at least); slot says the stride */
	printf("{\"qpn\":%u,\"psn\":%u,\"rkey\":%u,\"va\":%" PRIu64 ",\"len\":%zu,"
	       "\"slot\":%u,\"depth\":%u,\"gid\":\"%s\",\"ip\":\"%u.%u.%u.%u\",\"mac\":\"%s\","
	       "\"pmtu\":%u,\"access\":\"%s\"}\n",
	       srnic_qp_num(q->qp[1]), peer.my_psn, srnic_mr_rkey(q->mr[1]),
	       (uint64_t)(uintptr_t)q->buf[1], (size_t)perf_slot_bytes(env) * c->depth,
	       perf_slot_bytes(env), c->depth, ghex, c->ip[0], c->ip[1], c->ip[2], c->ip[3], mac,
	       128u << a.path_mtu, perf_access_str(a.qp_access_flags));
	fflush(stdout);
	return 0;
}

int
perf_remote_setup(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	char line[LINE_MAX_LEN];
	int side = perf_side(c), rc;

	if (side == 1 && c->peer_cmdline) {
		rc = perf_setup_dev(env, 1);
		if (rc == 0)
			rc = perf_setup_qps(env);
		if (rc == 0)
			rc = cmdline_peer(env);
		if (rc == 0)
			perf_capture_start(env); /* --pcap, --trace */
		return rc;
	}
	if (side == 0) {
		/* The server starts its port before it listens: once TCP is up,
		 * a port that connects at start (memif client) finds it. */
		env->sock = perf_tcp_client(c->peer_host, c->tcp_port);
		if (env->sock < 0)
			return -ECONNREFUSED; /* said why */
		if (send_line(env->sock, PERF_GREETING "\n") != 0)
			return -EIO;
		rc = perf_setup_dev(env, 0);
		if (rc == 0)
			rc = perf_setup_qps(env);
		if (rc != 0)
			return rc;
		if (send_line(env->sock, "HELLO %u %u %u %u %u %u %u\n", c->op, c->qps, c->depth,
			      c->mtu, env->max_size, c->nb_lcores, c->verify) != 0)
			return -EIO;
		session_psns(env);
		rc = recv_and_connect(env, 0);
		if (rc == 0)
			rc = send_qps(env, 0);
		if (rc == 0)
			rc = get_line(env, line, sizeof(line), false, PERF_HANDSHAKE_WAIT_S,
				      "its READY, after our QP parameters");
		if (rc == 0 && strcmp(line, "READY") != 0)
			rc = -EPROTO;
		if (rc == 0)
			rc = perf_wait_link(env, perf_remote_poll_stop); /* the first WRs must find it up */
		if (rc == -ECONNRESET)
			fprintf(stderr, "srnic-perf: the server at %s:%u closed the connection during "
					"the handshake\n", c->peer_host, c->tcp_port);
		else if (rc == -EPROTO)
			fprintf(stderr, "srnic-perf: the server at %s:%u does not speak srnic-perf's "
					"exchange (a perftest server takes --perftest)\n",
				c->peer_host, c->tcp_port);
	} else {
		/* the device and the listening socket; each client's QPs come
		 * with its HELLO (perf_serve()) */
		rc = perf_setup_dev(env, 1); /* engines: this side's own --lcores */
		if (rc != 0)
			return rc;
		env->lsock = tcp_listen(c->tcp_port);
		if (env->lsock < 0)
			return -EADDRINUSE;
	}
	if (rc == 0)
		perf_capture_start(env);
	return rc;
}

/* The device's packet and byte counters now: rx_pkts, rx_bytes, tx_pkts, tx_bytes. */
static void
run_counters(const struct perf_env *env, int64_t v[4])
{
	static const char *const names[4] = { "rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes" };
	unsigned int k;

	for (k = 0; k < 4; k++)
		v[k] = srnic_dev_stat(env->dev[1], names[k]);
}

/* What this side saw of the run in progress: "S s into its run of N-byte
 * OP: partial, this side received ..." */
static void
run_partial(const struct perf_env *env, char *buf, size_t len)
{
	const struct perf_conf *c = env->conf;
	int64_t v[4];
	double s;

	run_counters(env, v);
	s = (double)(rte_get_timer_cycles() - env->run_t0) / (double)rte_get_timer_hz();
	snprintf(buf, len, "%.2f s into its run of %u-byte %s: partial, this side received %" PRId64
		 " packets (%.3f MB) and sent %" PRId64 " (%.3f MB), %.3f Gb/s in + out",
		 s, env->run_size, perf_op_name(c->op), v[0] - env->run_base[0],
		 (double)(v[1] - env->run_base[1]) / 1e6, v[2] - env->run_base[2],
		 (double)(v[3] - env->run_base[3]) / 1e6,
		 s > 0 ? (double)(v[1] - env->run_base[1] + v[3] - env->run_base[3]) * 8 / s / 1e9 :
			 0.0);
}

/* A signal stopped this server with a client connected (testpmd's first
 * Ctrl-C): one line with what this side saw of the run in progress, the
 * client told (STOP: it ends its run at once, prints its partial row and
 * says BYE), and its BYE awaited, at most STOP_WAIT_S, this side's engines
 * polled meanwhile once the QPs are up (serve), so that neither leaves
 * under the other's polling (see the top). A second signal exits at once.
 * Returns -EINTR (stopped by a signal). */
static int
server_stop(struct perf_env *env, bool serve)
{
	char line[DONE_LINE_MAX], what[256];
	int rc;

	if (env->in_run) {
		run_partial(env, what, sizeof(what));
		printf("srnic-perf: stopped by signal %d %s; telling the client (STOP)\n",
		       perf_quit_signal(), what);
	} else {
		printf("srnic-perf: stopped by signal %d %s; telling the client (STOP)\n",
		       perf_quit_signal(), serve ? "between the client's runs" :
						   "while setting up the client's QPs");
	}
	fflush(stdout);
	if (send_line(env->sock, "STOP\n") != 0)
		return -EINTR; /* it is gone already */
	stopping = true;
	stop_deadline = rte_get_timer_cycles() + STOP_WAIT_S * rte_get_timer_hz();
	/* anything before its BYE (a DONE crossing our STOP) goes unanswered:
	 * the run is over */
	while ((rc = get_line(env, line, sizeof(line), serve, SERVER_WAIT)) == 0)
		if (strcmp(line, "BYE") == 0) {
			(void)send_line(env->sock, "BYE\n"); /* no more polling from here */
			break;
		}
	if (rc == -ETIMEDOUT)
		fprintf(stderr, "srnic-perf: the client did not answer STOP within %d s\n",
			STOP_WAIT_S);
	stopping = false;
	env->in_run = false;
	return -EINTR;
}

/* --server: take the next client and set up its QPs (its HELLO says how
 * many, how deep, which op). 0, or an errno (said why). */
static int
session_begin(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	char line[LINE_MAX_LEN];
	unsigned int op, mtu, verify, lcores;
	int rc;

	env->sock = tcp_accept(env->lsock, c->tcp_port);
	if (!c->persist) {
		close(env->lsock); /* one client, as perftest's servers */
		env->lsock = -1;
	}
	if (env->sock < 0)
		return perf_quitting() ? -EINTR : -ENOTCONN; /* accept() failed: said why */
	/* A connection that is not a srnic-perf client (a port scan, a stray
	 * telnet, perftest's client without --perftest here) must not hold the
	 * server: it greets at once or is dropped. */
	rc = get_line(env, line, sizeof(line), false, PERF_HANDSHAKE_WAIT_S,
		      "its greeting, '" PERF_GREETING "'");
	if (rc == 0 && strcmp(line, PERF_GREETING) != 0) {
		printf("srnic-perf: the client at %s is not a srnic-perf client of this version "
		       "(its first line: '%.64s', not '" PERF_GREETING "'): dropped it%s\n",
		       client_addr, line,
		       strncmp(line, "SRNIC-PERF", 10) == 0 ? " (run the same srnic-perf on both ends)" :
		       " (a perftest client needs --perftest here)");
		fflush(stdout);
		return -EPROTO;
	}
	if (rc == 0)
		rc = get_line(env, line, sizeof(line), false, PERF_CLIENT_SETUP_WAIT_S,
			      "its HELLO, after its greeting");
	if (rc == -EINTR)
		return server_stop(env, false);
	if (rc != 0)
		return rc;
	if (sscanf(line, "HELLO %u %u %u %u %u %u %u", &op, &c->qps, &c->depth, &mtu,
		   &c->sizes[0], &lcores, &verify) != 7 ||
	    op > PERF_OP_ATOMIC || c->qps == 0 || c->qps > PERF_MAX_QPS || c->depth == 0 ||
	    c->depth > PERF_MAX_DEPTH) {
		fprintf(stderr, "srnic-perf: bad HELLO from the client: %s\n", line);
		return -EPROTO;
	}
	if (perf_check_cq(c) != 0)
		return -EINVAL;
	c->op = (enum perf_op)op;
	c->mtu = (enum ibv_mtu)mtu;
	c->nb_sizes = 1;
	c->verify = verify != 0;
	rc = perf_setup_qps(env);
	if (rc == 0) {
		session_psns(env);
		rc = send_qps(env, 1);
	}
	if (rc == 0)
		rc = recv_and_connect(env, 1);
	if (rc == 0)
		rc = send_line(env->sock, "READY\n");
	if (rc == -EINTR)
		return server_stop(env, false);
	return rc;
}

int
perf_remote_run_begin(struct perf_env *env, uint32_t size)
{
	char line[LINE_MAX_LEN];
	int rc;

	finishing = false;

	if (send_line(env->sock, "RUN %u\n", size) != 0)
		return -ECONNRESET;
	/* -ESHUTDOWN: STOP */
	rc = get_line(env, line, sizeof(line), false, PERF_RUN_TIMEOUT_S, "its OK to our RUN");
	if (rc != 0)
		return rc;
	return strcmp(line, "OK") == 0 ? 0 : -EPROTO;
}

int
perf_remote_poll_stop(struct perf_env *env)
{
	struct pollfd p = { .fd = env->sock, .events = POLLIN };
	char line[LINE_MAX_LEN];
	int rc;

	if (env->sock < 0 || poll(&p, 1, 0) <= 0)
		return 0;
	rc = get_line(env, line, sizeof(line), false, PERF_HANDSHAKE_WAIT_S, "the rest of its line");
	if (rc == -EINTR)
		return 0; /* our own signal: the run drains and ends as it does */
	if (rc == 0) {
		fprintf(stderr, "srnic-perf: unexpected line from the server mid-run: %s\n", line);
		return -EPROTO;
	}
	return rc; /* -ESHUTDOWN (STOP), -ECONNRESET (closed) */
}

int
perf_remote_run_end(struct perf_env *env, const struct perf_result *r, uint64_t *verify_errors)
{
	char line[DONE_LINE_MAX];
	size_t n;
	uint32_t i;
	int rc;

	finishing = true;
	n = (size_t)snprintf(line, sizeof(line), "DONE");
	for (i = 0; i < env->conf->qps; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %" PRIu64, env->qps[i].posted);
	snprintf(line + n, sizeof(line) - n, "\n");
	if (write(env->sock, line, strlen(line)) != (ssize_t)strlen(line))
		return -ECONNRESET;
	/* -ESHUTDOWN: STOP */
	rc = get_line(env, line, sizeof(line), false, PERF_RUN_TIMEOUT_S, "its ERR to our DONE");
	if (rc != 0)
		return rc;
	return sscanf(line, "ERR %" SCNu64, verify_errors) == 1 ? 0 : -EPROTO;
}

void
perf_remote_bye(struct perf_env *env)
{
	finishing = true;
	if (env->sock >= 0) {
		uint64_t hz = rte_get_timer_hz();
		uint64_t end = rte_get_timer_cycles() + BYE_WAIT_MS * hz / 1000;
		char line[LINE_MAX_LEN];

		/* the answer, or the server's end of the socket closing; a
		 * server that says neither is not waited for long. A STOP (or
		 * an answer to a DONE) crossing our BYE is skipped. */
		if (send_line(env->sock, "BYE\n") == 0)
			for (;;) {
				struct pollfd p = { .fd = env->sock, .events = POLLIN };
				uint64_t now = rte_get_timer_cycles();
				int rc;

				if (now >= end || poll(&p, 1, (int)((end - now) * 1000 / hz) + 1) <= 0)
					break;
				rc = get_line(env, line, sizeof(line), false, BYE_WAIT_MS / 1000,
					      "its BYE");
				if (rc == -ESHUTDOWN)
					continue;
				if (rc != 0 || strcmp(line, "BYE") == 0)
					break;
			}
		close(env->sock);
		env->sock = -1;
	}
}

/* The client went away (its TCP connection closed, e.g. it was killed):
 * one line that says so, with what this side saw of the run in progress. */
static void
client_gone(struct perf_env *env, FILE *out)
{
	const struct perf_conf *c = env->conf;
	char what[256];

	if (!env->in_run) {
		fprintf(out, "srnic-perf: the client went away (its TCP connection closed) between "
			     "runs%s\n", c->persist ? "; waiting for the next one" : "");
		return;
	}
	run_partial(env, what, sizeof(what));
	fprintf(out, "srnic-perf: the client went away (its TCP connection closed) %s%s\n", what,
		c->persist ? "; waiting for the next one" : "");
	fflush(out);
}

/* Serve one client's runs until its BYE: 0, -EINTR (a signal), or an
 * errno (-ECONNRESET: it went away). */
static int
serve_client(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	char line[DONE_LINE_MAX];
	uint32_t size = env->max_size;

	for (;;) {
		int rc = get_line(env, line, sizeof(line), true, SERVER_WAIT);

		if (rc == -EINTR)
			return server_stop(env, true);
		if (rc != 0)
			return rc;
		if (sscanf(line, "RUN %u", &size) == 1) {
			env->run_size = size;
			perf_prepare_size(env, size);
			env->remote_verify_errors = 0;
			env->in_run = true;
			env->run_t0 = rte_get_timer_cycles();
			run_counters(env, env->run_base);
			if (send_line(env->sock, "OK\n") != 0)
				return -ECONNRESET;
		} else if (strncmp(line, "DONE", 4) == 0) {
			uint64_t posted[PERF_MAX_QPS];
			char *p = line + 4, *end;
			uint32_t i;

			for (i = 0; i < c->qps; i++) {
				posted[i] = strtoull(p, &end, 10);
				if (end == p) {
					fprintf(stderr, "srnic-perf: DONE without QP %u's count\n", i);
					return -EPROTO;
				}
				p = end;
			}
			/* The last SENDs' RECV completions may still be queued. */
			for (i = 0; i < 1000; i++) {
				uint64_t errs = 0;

				perf_resp_poll_once(env, size, &errs);
				env->remote_verify_errors += errs;
			}
			env->remote_verify_errors += perf_check_writes(env, size, posted);
			env->in_run = false;
			if (send_line(env->sock, "ERR %" PRIu64 "\n", env->remote_verify_errors) != 0)
				return -ECONNRESET;
		} else if (strcmp(line, "BYE") == 0) {
			/* no more polling from here: the client may go */
			(void)send_line(env->sock, "BYE\n");
			return 0;
		} else {
			fprintf(stderr, "srnic-perf: unknown request: %s\n", line);
			return -EPROTO;
		}
	}
}

int
perf_serve(struct perf_env *env)
{
	struct perf_conf *c = env->conf;
	uint32_t size = env->max_size;
	unsigned int clients = 0;

	if (c->peer_cmdline) {
		/* Serve until the duration ends or a signal comes. */
		uint64_t end = c->duration > 0 ? rte_get_timer_cycles() +
						 (uint64_t)(c->duration * rte_get_timer_hz()) : 0;
		uint64_t look = rte_get_timer_hz() / 1000 * PERF_CTL_POLL_MS;
		uint64_t errs = 0, now, next_look = 0;
		int rc;

		perf_prepare_size(env, size);
		while (!perf_quitting() && (end == 0 || rte_get_timer_cycles() < end)) {
			perf_resp_poll_once(env, size, &errs);
			now = rte_get_timer_cycles();
			if (now < next_look)
				continue;
			next_look = now + look;
			/* no control connection: the port's and the QP's
			 * events are all the news of the peer (said); a
			 * port gone down ends it (its peer is gone), a QP in
			 * error does not (a peer's bad request puts it there:
			 * served until the duration or a signal, as before) */
			rc = perf_async_check(env, true);
			if (rc == -ENETDOWN)
				return rc;
		}
		return 0;
	}
	/* One client (perftest's servers), or client after client until a
	 * signal (--persist, as testpmd stays up): each with QPs of its own. */
	for (;;) {
		int rc = session_begin(env);
		bool began = rc == 0;

		if (began)
			rc = serve_client(env);
		if (rc == -EINTR || (rc != 0 && perf_quitting()))
			return 0; /* a signal: said so */
		if (rc == -ENOTCONN)
			return rc; /* no client to be had: persisting would spin */
		if (rc == -ECONNRESET || rc == -EIO)
			client_gone(env, c->persist ? stdout : stderr);
		clients += began; /* a connection dropped at its greeting is no client */
		if (!c->persist)
			return rc;
		close(env->sock);
		env->sock = -1;
		perf_session_teardown(env);
		printf("srnic-perf: %u client(s) served; --persist: on to the next\n", clients);
		fflush(stdout);
	}

}
