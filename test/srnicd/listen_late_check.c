/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * listen_late_check: a server that tells its port before it listens, as
 * qperf's does (it sends its rdma_cm port to the client over TCP, then
 * calls rdma_listen()), with the window held open: the test decides when
 * the server listens, after its client's REQ has come. Built against the
 * system's <rdma/rdma_cma.h> only, run over srnic's librdmacm.so.1
 * attached to srnicd.
 *
 *   listen_late_check server IPV4 PORT   binds IPV4:PORT, says "bound", then
 *       reads one line: "listen" (rdma_listen, accept the request that
 *       comes, say "established") or "close" (rdma_destroy_id, say
 *       "closed"); a bind refused says "bind: ERRNO-NAME"
 *   listen_late_check client IPV4 PORT   connects to IPV4:PORT, says
 *       "established" or "rejected STATUS" (the REJ's reason)
 *   listen_late_check serve IPV4 accept|reject PORT...   one id per PORT
 *       (0: the library picks; "*PORT": bound to 0.0.0.0, not IPV4;
 *       "~PORT": to :: with AFONLY; "LO-HI": one id on each of those
 *       ports; every id REUSEADDR, so a port may come twice),
 *       says "port N" for each, "bound"; then reads lines: "destroy I"
 *       (the I-th id, before its listen: "destroyed I"), "listen" (every
 *       id left; "listen I": the I-th only; "listening", or "listen I:
 *       ERRNO-NAME" for the I-th refused, left bound), "close" (all
 *       gone: "closed", the end);
 *       each request meanwhile accepted (a QP of its own) or rejected
 *       (rdma_reject with REJ_PDATA, the peer's REJECTED 28 with it),
 *       "requests N" after each,
 *       "established N" after each ESTABLISHED. A bind refused says
 *       "bind: ERRNO-NAME, local port P" (what rdma_get_src_port() says
 *       of the id after it)
 *   listen_late_check clients IPV4 PORT N   N connects at once on one
 *       channel (one CQ for their QPs), says "done established E rejected
 *       R reason8 A reason28 B byserver S other O" once each has its
 *       answer (byserver: REJECTED with serve's REJ_PDATA, not the daemon's
 *       REJ of a request no listener took)
 *   listen_late_check table IPV4 BASE   Linux's bind and listen rules
 *       (test/rdmacm/bind_table.h) on ports BASE.., a line each, then
 *       "table: N failed"
 *
 * Each ends with exit 0 once it said its last line; 1 on anything else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#include "../rdmacm/bind_table.h"

static struct rdma_event_channel *ch;

/* The next event, which must be want (its status in *status). */
static int
expect(enum rdma_cm_event_type want, struct rdma_cm_id **id, int *status)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev) != 0) {
		perror("rdma_get_cm_event");
		return -1;
	}
	if (id != NULL)
		*id = ev->id;
	if (status != NULL)
		*status = ev->status;
	if (ev->event != want) {
		int got = ev->event;

		rdma_ack_cm_event(ev);
		return got;
	}
	rdma_ack_cm_event(ev);
	return 0;
}

static int
qp_make(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qa) != 0) {
		perror("rdma_create_qp");
		return -1;
	}
	return 0;
}

static int
server(struct sockaddr_in *a)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	struct rdma_cm_id *id, *conn;
	char line[32];

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) {
		perror("rdma_create_id");
		return 1;
	}
	if (rdma_bind_addr(id, (struct sockaddr *)a) != 0) {
		printf("bind: %s\n", errno == EADDRINUSE ? "EADDRINUSE" : strerror(errno));
		return 0;
	}
	printf("bound\n");
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL)
		return 1;
	if (strncmp(line, "close", 5) == 0) {
		rdma_destroy_id(id);
		printf("closed\n");
		return 0;
	}
	if (rdma_listen(id, 1) != 0) {
		perror("rdma_listen");
		return 1;
	}
	if (expect(RDMA_CM_EVENT_CONNECT_REQUEST, &conn, NULL) != 0) {
		fprintf(stderr, "no CONNECT_REQUEST\n");
		return 1;
	}
	if (qp_make(conn) != 0 || rdma_accept(conn, &cp) != 0) {
		perror("rdma_accept");
		return 1;
	}
	if (expect(RDMA_CM_EVENT_ESTABLISHED, NULL, NULL) != 0) {
		fprintf(stderr, "no ESTABLISHED\n");
		return 1;
	}
	printf("established\n");
	fflush(stdout);
	/* the client disconnects once it is established too */
	expect(RDMA_CM_EVENT_DISCONNECTED, NULL, NULL);
	rdma_destroy_qp(conn);
	rdma_destroy_id(conn);
	rdma_destroy_id(id);
	return 0;
}

static int
client(struct sockaddr_in *a)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *id;
	int rc, status = 0;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0) {
		perror("rdma_create_id");
		return 1;
	}
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)a, 2000) != 0 ||
	    expect(RDMA_CM_EVENT_ADDR_RESOLVED, NULL, NULL) != 0 ||
	    rdma_resolve_route(id, 2000) != 0 ||
	    expect(RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, NULL) != 0) {
		fprintf(stderr, "cannot resolve\n");
		return 1;
	}
	if (qp_make(id) != 0 || rdma_connect(id, &cp) != 0) {
		perror("rdma_connect");
		return 1;
	}
	rc = expect(RDMA_CM_EVENT_ESTABLISHED, NULL, &status);
	if (rc == RDMA_CM_EVENT_REJECTED) {
		printf("rejected %d\n", status);
		return 0;
	}
	if (rc != 0) {
		fprintf(stderr, "event %d (%s), status %d\n", rc,
			rdma_event_str((enum rdma_cm_event_type)rc), status);
		return 1;
	}
	printf("established\n");
	fflush(stdout);
	rdma_disconnect(id);
	expect(RDMA_CM_EVENT_DISCONNECTED, NULL, NULL);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return 0;
}

#define SERVE_IDS_MAX 1024       /* a session's rdma_cm ids (SVC_SESSION_CM_IDS_MAX) */
#define REJ_PDATA "serve's rdma_reject"
#define SERVE_CONNS_MAX 256

/* serve: the ports' ids bound, then what stdin says; every request
 * answered as policy says meanwhile */
static int
serve(struct sockaddr_in *a, bool accept, int nports, char **ports)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	static struct rdma_cm_id *ids[SERVE_IDS_MAX];
	struct rdma_cm_id *conns[SERVE_CONNS_MAX];
	int i, k, one = 1, nconns = 0, reqs = 0, est = 0, nids = 0;
	char line[64];

	for (k = 0; k < nports; k++) {
		struct sockaddr_storage ss;
		struct sockaddr_in *b = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *b6 = (struct sockaddr_in6 *)&ss;
		const char *p = ports[k], *dash = strchr(ports[k], '-');
		int lo, hi, port;

		memset(&ss, 0, sizeof(ss));
		*b = *a;
		/* "*PORT": 0.0.0.0, the wildcard; "~PORT": ::, AFONLY */
		if (p[0] == '*')
			b->sin_addr.s_addr = htonl(INADDR_ANY);
		if (p[0] == '*' || p[0] == '~')
			p++;
		lo = atoi(p);
		hi = dash != NULL ? atoi(dash + 1) : lo;
		for (port = lo; port <= hi; port++) {
			if (nids == SERVE_IDS_MAX)
				return 2;
			i = nids++;
			if (ports[k][0] == '~') {
				/* from scratch: a's IPv4 address would be
				 * sin6_flowinfo */
				memset(&ss, 0, sizeof(ss));
				b6->sin6_family = AF_INET6;
				b6->sin6_addr = in6addr_any;
				b6->sin6_port = htons((uint16_t)port);
			} else {
				b->sin_port = htons((uint16_t)port);
			}
			if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP) != 0 ||
			    rdma_set_option(ids[i], RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
					    sizeof(one)) != 0 ||
			    (ports[k][0] == '~' &&
			     rdma_set_option(ids[i], RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
					     sizeof(one)) != 0)) {
				perror("rdma_create_id");
				return 1;
			}
			if (rdma_bind_addr(ids[i], (struct sockaddr *)&ss) != 0) {
				printf("bind: %s, local port %u\n", errno == EADDRINUSE ? "EADDRINUSE" :
				       errno == EADDRNOTAVAIL ? "EADDRNOTAVAIL" : strerror(errno),
				       ntohs(rdma_get_src_port(ids[i])));
				return 0;
			}
			printf("port %u\n", ntohs(rdma_get_src_port(ids[i])));
		}
	}
	nports = nids;
	printf("bound\n");
	for (;;) {
		struct pollfd p[2] = { { .fd = 0, .events = POLLIN },
				       { .fd = ch->fd, .events = POLLIN } };
		struct rdma_cm_event *ev;
		struct rdma_cm_id *conn;
		enum rdma_cm_event_type type;

		if (poll(p, 2, -1) < 0) {
			perror("poll");
			return 1;
		}
		if (p[0].revents != 0) {
			if (fgets(line, sizeof(line), stdin) == NULL)
				return 1;
			if (strncmp(line, "destroy ", 8) == 0) {
				i = atoi(line + 8);
				if (i < 0 || i >= nports || ids[i] == NULL)
					return 1;
				rdma_destroy_id(ids[i]);
				ids[i] = NULL;
				printf("destroyed %d\n", i);
			} else if (strncmp(line, "listen", 6) == 0) {
				int only = line[6] == ' ' ? atoi(line + 7) : -1;

				bool refused = false;

				for (i = 0; i < nports; i++)
					if (ids[i] != NULL && (only < 0 || only == i) &&
					    rdma_listen(ids[i], 0) != 0) {
						if (errno != EADDRINUSE && errno != EADDRNOTAVAIL) {
							perror("rdma_listen");
							return 1;
						}
						printf("listen %d: %s\n", i, errno == EADDRINUSE ?
						       "EADDRINUSE" : "EADDRNOTAVAIL");
						refused = true;
					}
				if (!refused)
					printf("listening\n");
			} else if (strncmp(line, "close", 5) == 0) {
				for (i = 0; i < nconns; i++) {
					if (conns[i]->qp != NULL)
						rdma_destroy_qp(conns[i]);
					rdma_destroy_id(conns[i]);
				}
				for (i = 0; i < nports; i++)
					if (ids[i] != NULL)
						rdma_destroy_id(ids[i]);
				printf("closed\n");
				return 0;
			}
		}
		if (p[1].revents == 0)
			continue;
		if (rdma_get_cm_event(ch, &ev) != 0) {
			perror("rdma_get_cm_event");
			return 1;
		}
		type = ev->event;
		conn = ev->id;
		rdma_ack_cm_event(ev);
		if (type == RDMA_CM_EVENT_CONNECT_REQUEST) {
			printf("requests %d\n", ++reqs);
			if (!accept || nconns == SERVE_CONNS_MAX) {
				rdma_reject(conn, REJ_PDATA, sizeof(REJ_PDATA));
				rdma_destroy_id(conn);
				continue;
			}
			conns[nconns++] = conn;
			if (qp_make(conn) != 0 || rdma_accept(conn, &cp) != 0) {
				perror("rdma_accept");
				return 1;
			}
		} else if (type == RDMA_CM_EVENT_ESTABLISHED) {
			printf("established %d\n", ++est);
		} else if (type == RDMA_CM_EVENT_DISCONNECTED) {
			rdma_disconnect(conn);  /* its DREP */
		}
	}
}

/* clients: n connects at once, each answer counted */
static int
clients(struct sockaddr_in *a, int n)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
				      .retry_count = 7, .rnr_retry_count = 7 };
	int i, est = 0, rej = 0, r8 = 0, r28 = 0, srv = 0, other = 0;
	struct rdma_cm_id **ids = calloc((size_t)n, sizeof(*ids));
	struct ibv_cq *cq = NULL;

	if (ids == NULL)
		return 1;
	for (i = 0; i < n; i++)
		if (rdma_create_id(ch, &ids[i], NULL, RDMA_PS_TCP) != 0 ||
		    rdma_resolve_addr(ids[i], NULL, (struct sockaddr *)a, 2000) != 0) {
			perror("rdma_resolve_addr");
			return 1;
		}
	while (est + rej + other < n) {
		struct ibv_qp_init_attr qa;
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		enum rdma_cm_event_type type;
		bool by_server;
		int status;

		if (rdma_get_cm_event(ch, &ev) != 0) {
			perror("rdma_get_cm_event");
			return 1;
		}
		type = ev->event;
		id = ev->id;
		status = ev->status;
		by_server = ev->param.conn.private_data_len >= sizeof(REJ_PDATA) &&
			    memcmp(ev->param.conn.private_data, REJ_PDATA, sizeof(REJ_PDATA)) == 0;
		rdma_ack_cm_event(ev);
		switch (type) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (rdma_resolve_route(id, 2000) != 0)
				return 1;
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			if (cq == NULL && (cq = ibv_create_cq(id->verbs, 4, NULL, NULL, 0)) == NULL) {
				perror("ibv_create_cq");
				return 1;
			}
			memset(&qa, 0, sizeof(qa));
			qa.qp_type = IBV_QPT_RC;
			qa.send_cq = qa.recv_cq = cq;
			qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
			qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
			if (rdma_create_qp(id, NULL, &qa) != 0 || rdma_connect(id, &cp) != 0) {
				perror("rdma_connect");
				return 1;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			est++;
			break;
		case RDMA_CM_EVENT_REJECTED:
			rej++;
			r8 += status == 8;
			r28 += status == 28;
			srv += by_server;
			break;
		default:
			fprintf(stderr, "event %s, status %d\n", rdma_event_str(type), status);
			other++;
			break;
		}
	}
	printf("done established %d rejected %d reason8 %d reason28 %d byserver %d other %d\n", est,
	       rej, r8, r28, srv, other);
	for (i = 0; i < n; i++) {
		if (ids[i]->qp != NULL)
			rdma_destroy_qp(ids[i]);
		rdma_destroy_id(ids[i]);
	}
	if (cq != NULL)
		ibv_destroy_cq(cq);
	free(ids);
	return 0;
}

int
main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	if (argc < 4 || inet_pton(AF_INET, argv[2], &a.sin_addr) != 1) {
		fprintf(stderr, "usage: %s server|client IPV4 PORT, serve IPV4 accept|reject "
			"PORT..., clients IPV4 PORT N, table IPV4 BASE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	ch = rdma_create_event_channel();
	if (ch == NULL) {
		perror("rdma_create_event_channel");
		return 1;
	}
	if (strcmp(argv[1], "table") == 0 && argc == 4) {
		int n = bind_table(argv[2], atoi(argv[3]));

		printf("table: %d failed\n", n);
		return 0;
	}
	if (strcmp(argv[1], "serve") == 0 && argc >= 5)
		return serve(&a, strcmp(argv[3], "accept") == 0, argc - 4, argv + 4);
	a.sin_port = htons((uint16_t)atoi(argv[3]));
	if (strcmp(argv[1], "clients") == 0 && argc == 5)
		return clients(&a, atoi(argv[4]));
	if (argc != 4 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0))
		return 2;
	return strcmp(argv[1], "server") == 0 ? server(&a) : client(&a);
}
