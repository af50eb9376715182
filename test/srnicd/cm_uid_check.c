/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_uid_check: the daemon's CM takes a QP of another session of the same
 * process (a program's own ibv_open_device() beside its rdma_cm's), and
 * "the same process" is its pid and its uid (SO_PEERCRED at connect). Built
 * against the system's verbs.h and rdma_cma.h only, run attached.
 *
 *   cm_uid_check IPV4 PORT keep   an RC QP in a context opened as root, then
 *                                 rdma_connect() naming it: 0 (the REQ goes)
 *   cm_uid_check IPV4 PORT drop   the same, but the process becomes nobody
 *                                 (uid and gid 65534) between the two: its
 *                                 rdma_cm session has the pid of the QP's
 *                                 and another uid, as another user's
 *                                 process given a reused pid: -1 EINVAL
 *
 * Prints "connect RC ERRNO"; exit 0 when it could try.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define NOBODY 65534
#define TIMEOUT_MS 2000

static int
wait_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;
	int got;

	if (rdma_get_cm_event(ch, &ev) != 0)
		return -1;
	got = ev->event;
	rdma_ack_cm_event(ev);
	if (got != (int)want) {
		printf("FAIL: event %s, want %s\n", rdma_event_str(got), rdma_event_str(want));
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct sockaddr_in dst = { .sin_family = AF_INET };
	struct rdma_conn_param cp;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int n, rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: %s IPV4 PORT keep|drop\n", argv[0]);
		return 2;
	}
	dst.sin_port = htons((uint16_t)atoi(argv[2]));
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1 || (ctx = ibv_open_device(list[0])) == NULL) {
		printf("FAIL: no device\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	qa.send_cq = qa.recv_cq = cq;
	qp = pd != NULL && cq != NULL ? ibv_create_qp(pd, &qa) : NULL;
	if (qp == NULL) {
		printf("FAIL: a QP\n");
		return 1;
	}
	if (strcmp(argv[3], "drop") == 0 &&
	    (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0)) {
		printf("FAIL: becoming nobody: %s\n", strerror(errno));
		return 1;
	}
	ch = rdma_create_event_channel();
	if (ch == NULL || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0 ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, TIMEOUT_MS) != 0 ||
	    wait_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED) != 0 ||
	    rdma_resolve_route(id, TIMEOUT_MS) != 0 ||
	    wait_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED) != 0) {
		printf("FAIL: an rdma_cm id with a route to %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = qp->qp_num;
	cp.retry_count = 1;
	errno = 0;
	rc = rdma_connect(id, &cp);
	printf("connect %d %d\n", rc, rc != 0 ? errno : 0);
	/* whatever the REQ became (no one listens: a REJ), the process ends */
	return 0;
}
