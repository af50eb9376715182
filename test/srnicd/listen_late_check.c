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
 *
 * Each ends with exit 0 once it said its last line; 1 on anything else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

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

int
main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	if (argc != 4 || inet_pton(AF_INET, argv[2], &a.sin_addr) != 1 ||
	    (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0)) {
		fprintf(stderr, "usage: %s server|client IPV4 PORT\n", argv[0]);
		return 2;
	}
	a.sin_port = htons((uint16_t)atoi(argv[3]));
	setvbuf(stdout, NULL, _IOLBF, 0);
	ch = rdma_create_event_channel();
	if (ch == NULL) {
		perror("rdma_create_event_channel");
		return 1;
	}
	return strcmp(argv[1], "server") == 0 ? server(&a) : client(&a);
}
