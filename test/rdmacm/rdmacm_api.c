/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_cm calls no tool of rdmacm-utils makes, checked end to end between
 * two processes: built ONLY against the system's <rdma/rdma_cma.h> and
 * -lrdmacm -libverbs, run over srnic's libraries through LD_LIBRARY_PATH
 * (usertools/srnic run), as any rdma_cm program is.
 *   rdmacm_api server SERVER_IP PORT
 *   rdmacm_api client SERVER_IP PORT
 *   rdmacm_api server-apart|client-apart SERVER_IP PORT SERVER_IPV6
 * Each check prints "ok ..." or "FAIL ..."; the last line is "SIDE: all ok".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "bind_table.h"

#define MSG_LEN 4096
#define REJ_PDATA "no-thanks"
#define ACC_PDATA "welcome"
#define API_TOS 0x28            /* the accepted connection's traffic class (DSCP 10) */

static int fails;

#define CHECK(cond, ...) do { \
	if (cond) { printf("ok "); } else { printf("FAIL "); fails++; } \
	printf(__VA_ARGS__); printf("\n"); fflush(stdout); \
} while (0)

static struct rdma_cm_event *
next_event(struct rdma_event_channel *ch, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev) != 0) {
		CHECK(0, "rdma_get_cm_event for %s: %s", rdma_event_str(want), strerror(errno));
		return NULL;
	}
	CHECK(ev->event == want, "event %s (want %s), status %d", rdma_event_str(ev->event),
	      rdma_event_str(want), ev->status);
	return ev;
}

/* Whether ch's fd is readable now (poll with no wait). */
static bool
readable(struct rdma_event_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void
addr_of(struct sockaddr_in *sin, const char *ip, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &sin->sin_addr);
}

static void
fill(uint8_t *b, size_t n, uint8_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(seed + i * 7);
}

static int
wait_wc(struct rdma_cm_id *id, bool send, struct ibv_wc *wc)
{
	int rc = send ? rdma_get_send_comp(id, wc) : rdma_get_recv_comp(id, wc);

	return rc > 0 && wc->status == IBV_WC_SUCCESS ? 0 : -1;
}

/* What the server's accept gives the client of connection 3: a buffer to
 * READ from. */
struct read_target {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

/* Connection 3: the client connects with a NULL rdma_conn_param, so its
 * REQ offers the device's depths (as rdma-core's: 0 would leave the
 * connection no RDMA READ); the server makes its QP with ibv_create_qp()
 * and moves it to RTS itself with rdma_init_qp_attr() before rdma_accept()
 * (RTS before the REP, as Linux's CM allows), accepts with the QP's number
 * and a READ target in its private data; the client READs it. */
static int
server_self_moved(struct rdma_event_channel *ch)
{
	static const enum ibv_qp_state steps[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct rdma_conn_param cp;
	struct read_target t;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	unsigned int i;
	int mask;

	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	c = ev->id;
	CHECK(ibv_query_device(c->verbs, &da) == 0, "ibv_query_device");
	CHECK(ev->param.conn.responder_resources == da.max_qp_rd_atom &&
	      ev->param.conn.initiator_depth == da.max_qp_init_rd_atom &&
	      da.max_qp_rd_atom > 0,
	      "CONNECT_REQUEST 3, connect(NULL): the device's depths (resp %u init %u, device %d %d)",
	      ev->param.conn.responder_resources, ev->param.conn.initiator_depth,
	      da.max_qp_rd_atom, da.max_qp_init_rd_atom);
	rdma_ack_cm_event(ev);
	pd = ibv_alloc_pd(c->verbs);
	cq = pd != NULL ? ibv_create_cq(c->verbs, 8, NULL, NULL, 0) : NULL;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	qp = cq != NULL ? ibv_create_qp(pd, &qa) : NULL;
	CHECK(qp != NULL, "ibv_create_qp on the request's device");
	if (qp == NULL)
		return 1;
	buf = malloc(MSG_LEN);
	fill(buf, MSG_LEN, 0x5a);
	mr = ibv_reg_mr(pd, buf, MSG_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(mr != NULL, "ibv_reg_mr with REMOTE_READ");
	if (mr == NULL)
		return 1;
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = steps[i];
		CHECK(rdma_init_qp_attr(c, &a, &mask) == 0 && ibv_modify_qp(qp, &a, mask) == 0,
		      "before rdma_accept: rdma_init_qp_attr and ibv_modify_qp to %s (%s)",
		      i == 0 ? "INIT" : i == 1 ? "RTR" : "RTS", strerror(errno));
	}
	t.addr = (uint64_t)(uintptr_t)buf;
	t.rkey = mr->rkey;
	t.len = MSG_LEN;
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = qp->qp_num;
	cp.responder_resources = RDMA_MAX_RESP_RES;
	cp.initiator_depth = RDMA_MAX_INIT_DEPTH;
	cp.private_data = &t;
	cp.private_data_len = sizeof(t);
	CHECK(rdma_accept(c, &cp) == 0, "rdma_accept with our own QP's number");
	ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	CHECK(rdma_disconnect(c) == 0, "rdma_disconnect (connection 3)");
	CHECK(ibv_destroy_qp(qp) == 0 && ibv_dereg_mr(mr) == 0 && ibv_destroy_cq(cq) == 0,
	      "our own QP, MR and CQ destroyed");
	CHECK(rdma_destroy_id(c) == 0 && ibv_dealloc_pd(pd) == 0, "the id and our PD destroyed");
	free(buf);
	return 0;
}

/* Reject the request of ev (NULL: the next CONNECT_REQUEST on ch) and
 * destroy its id. */
static int
reject_request(struct rdma_event_channel *ch, struct rdma_cm_event *ev, const char *what)
{
	struct rdma_cm_id *c;

	if (ev == NULL)
		ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	c = ev->id;
	rdma_ack_cm_event(ev);
	CHECK(rdma_reject(c, NULL, 0) == 0 && rdma_destroy_id(c) == 0, "backlog: %s rejected", what);
	return 0;
}

/* A listener with backlog 1 on port + 2, on a channel of its own read
 * only here: the client sent two REQs to it, then one to port (on ch);
 * QP1 takes MADs in order, so once that last one is here the first two
 * were handled: one CONNECT_REQUEST queued, the other dropped without a
 * REJ (as Linux's), and the client's REQ again finds room once the
 * first is taken. All three are rejected. */
static int
server_backlog(struct rdma_event_channel *ch, struct rdma_event_channel *ch3,
	       struct rdma_cm_id *l3)
{
	struct rdma_cm_event *ev, *ev2;
	int flags;

	if (reject_request(ch, NULL, "the request after the two") != 0)
		return 1;
	flags = fcntl(ch3->fd, F_GETFL);
	fcntl(ch3->fd, F_SETFL, flags | O_NONBLOCK);
	ev = next_event(ch3, RDMA_CM_EVENT_CONNECT_REQUEST);
	errno = 0;
	ev2 = NULL;
	CHECK(rdma_get_cm_event(ch3, &ev2) == -1 && errno == EAGAIN,
	      "backlog 1: one CONNECT_REQUEST queued, the second request dropped (%s)",
	      ev2 != NULL ? "queued too" : strerror(errno));
	fcntl(ch3->fd, F_SETFL, flags);
	if (ev == NULL)
		return 1;
	CHECK(ev->listen_id == l3, "backlog: the request is the backlog listener's");
	/* then the dropped one: the client's REQ again (~6 s later), room now */
	if (reject_request(ch3, ev, "the first") != 0 ||
	    reject_request(ch3, ev2, "the dropped request, come again,") != 0)
		return 1;
	rdma_destroy_id(l3);
	rdma_destroy_event_channel(ch3);
	return 0;
}

/* The client connects to l's port (port + 3) last but one: once its
 * CONNECT_REQUEST is queued on ch, l moves to a new channel, and the
 * request goes with it (as Linux's ucma_migrate_id moves the events of a
 * listener): ch is left with nothing, the new channel has it at once. */
static int
server_migrated(struct rdma_event_channel *ch, struct rdma_cm_id *l)
{
	struct rdma_event_channel *ch5 = rdma_create_event_channel();
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;

	if (ch5 == NULL)
		return 1;
	CHECK(poll(&p, 1, -1) == 1, "migrate: a CONNECT_REQUEST queued for the listener");
	CHECK(rdma_migrate_id(l, ch5) == 0 && l->channel == ch5, "rdma_migrate_id of the listener");
	CHECK(!readable(ch), "migrate: the old channel's fd is not readable any more");
	fcntl(ch5->fd, F_SETFL, fcntl(ch5->fd, F_GETFL) | O_NONBLOCK);
	errno = 0;
	CHECK(rdma_get_cm_event(ch5, &ev) == 0 && ev->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
	      ev->listen_id == l && ev->id->channel == ch5,
	      "migrate: the CONNECT_REQUEST is on the new channel, its id too (%s)",
	      ev != NULL ? rdma_event_str(ev->event) : strerror(errno));
	if (ev == NULL)
		return 1;
	if (reject_request(ch5, ev, "the migrated listener's request") != 0)
		return 1;
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(ch5);
	return 0;
}

/* The client's UDP id, last: a SIDR_REQ to l; accepted with no QP of
 * ours (a QP number in the parameters), then rdma_disconnect: 0 on a UD
 * id, as Linux's (its QP, if any, to ERR; nothing sent, no event). */
static int
server_ud(struct rdma_event_channel *ch, struct rdma_cm_id *l)
{
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;

	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	c = ev->id;
	CHECK(ev->listen_id == l && c->qp_type == IBV_QPT_UD, "UD: the request is the UDP listener's");
	rdma_ack_cm_event(ev);
	memset(&cp, 0, sizeof(cp));
	cp.qp_num = 0x123;
	CHECK(rdma_accept(c, &cp) == 0, "UD: rdma_accept");
	errno = 0;
	CHECK(rdma_disconnect(c) == 0, "UD: rdma_disconnect on the passive side: 0 (%s)",
	      strerror(errno));
	CHECK(rdma_destroy_id(c) == 0 && rdma_destroy_id(l) == 0, "UD: ids destroyed");
	return 0;
}

static int server_connect_error(struct rdma_event_channel *ch);
static int server_stale(struct rdma_event_channel *ch);

/* An id of port space TCP on ch bound to family's addr:port (AF_INET6:
 * text an IPv6 address), AFONLY set first if afonly >= 0; rdma_bind_addr's
 * result, errno kept. */
static int
bind_to(struct rdma_event_channel *ch, struct rdma_cm_id **id, int family, const char *addr,
	int port, int afonly)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP) != 0)
		return -1;
	if (afonly >= 0 &&
	    rdma_set_option(*id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &afonly, sizeof(afonly)) != 0)
		return -1;
	if (family == AF_INET) {
		addr_of((struct sockaddr_in *)&ss, addr, port);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
	}
	return rdma_bind_addr(*id, (struct sockaddr *)&ss);
}

/* The host's net.ipv6.bindv6only: an AF_INET6 bind's AFONLY by default. */
static int
host_bindv6only(void)
{
	FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "r");
	int v = 0;

	if (f != NULL) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/* Binds as Linux's rdma_cm makes them (cma_check_port(), cma_any_addr(),
 * cma_resolve_loopback()), on ports port..port+3 of this process only:
 * 0.0.0.0 and :: with AFONLY both bound and listening (getaddrinfo(NULL,
 * AI_PASSIVE)'s two addresses), :: without it (bindv6only 0) refused
 * beside 0.0.0.0 with EADDRNOTAVAIL, two wildcards EADDRNOTAVAIL;
 * 127.0.0.1 and ::1 bind as any (no device) and keep their address; a
 * connection from 127.0.0.1 to a listener on 127.0.0.1 in this one
 * process (the device's own GID, in-device loopback) carries a SEND. */
/* An RC QP's attributes of 4 WRs and one SGE each way, no CQs given. */
static struct ibv_qp_init_attr *
rc_qp_attr(struct ibv_qp_init_attr *qa)
{
	memset(qa, 0, sizeof(*qa));
	qa->cap.max_send_wr = qa->cap.max_recv_wr = 4;
	qa->cap.max_send_sge = qa->cap.max_recv_sge = 1;
	qa->qp_type = IBV_QPT_RC;
	return qa;
}

static int
server_binds(int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_event_channel *cch = rdma_create_event_channel();
	struct rdma_cm_id *v4, *v6, *x, *lo, *c, *s;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	struct sockaddr_in d;
	struct ibv_mr *smr, *cmr;
	struct ibv_wc wc;
	uint8_t sbuf[256], cbuf[256];

	if (ch == NULL || cch == NULL)
		return 1;
	CHECK(bind_to(ch, &v4, AF_INET, "0.0.0.0", port, -1) == 0, "bind 0.0.0.0:%d", port);
	CHECK(bind_to(ch, &v6, AF_INET6, "::", port, 1) == 0,
	      "bind [::]:%d with AFONLY beside 0.0.0.0 (errno %d)", port, errno);
	CHECK(rdma_listen(v4, 4) == 0 && rdma_listen(v6, 4) == 0,
	      "both listen (errno %d)", errno);
	/* each shows its bound address in its family, as Linux's */
	{
		const struct sockaddr_in6 *l6 = (const void *)rdma_get_local_addr(v6);
		const struct sockaddr_in *l4 = (const void *)rdma_get_local_addr(v4);

		CHECK(l6->sin6_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&l6->sin6_addr) &&
		      l6->sin6_port == htons((uint16_t)port),
		      "rdma_get_local_addr of the id on [::]:%d: [::]:%d (family %d, port %d)", port,
		      port, l6->sin6_family, ntohs(l6->sin6_port));
		CHECK(l4->sin_family == AF_INET && l4->sin_addr.s_addr == INADDR_ANY &&
		      l4->sin_port == htons((uint16_t)port),
		      "rdma_get_local_addr of the id on 0.0.0.0:%d: 0.0.0.0:%d", port, port);
	}
	errno = 0;
	CHECK(bind_to(ch, &x, AF_INET, "0.0.0.0", port, -1) == -1 && errno == EADDRNOTAVAIL,
	      "0.0.0.0:%d again: EADDRNOTAVAIL, as Linux (errno %d)", port, errno);
	rdma_destroy_id(x);
	errno = 0;
	if (host_bindv6only() == 0)
		CHECK(bind_to(ch, &x, AF_INET6, "::", port + 1, -1) == 0 &&
		      bind_to(ch, &c, AF_INET, "0.0.0.0", port + 1, -1) == -1 &&
		      errno == EADDRNOTAVAIL,
		      "[::]:%d without AFONLY (bindv6only 0) holds IPv4 too: 0.0.0.0 EADDRNOTAVAIL "
		      "(errno %d)", port + 1, errno);
	else
		CHECK(1, "bindv6only 1 on this host: [::] without AFONLY is IPv6 only");
	rdma_destroy_id(x);
	rdma_destroy_id(c);
	rdma_destroy_id(v4);
	rdma_destroy_id(v6);

	/* the loopback range binds as any: no device, its address kept */
	CHECK(bind_to(ch, &x, AF_INET6, "::1", port + 2, -1) == 0 && x->verbs == NULL &&
	      rdma_get_local_addr(x)->sa_family == AF_INET6 &&
	      IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)rdma_get_local_addr(x))->sin6_addr),
	      "bind [::1]:%d: as any, no device, [::1] kept (errno %d)", port + 2, errno);
	rdma_destroy_id(x);
	CHECK(bind_to(ch, &lo, AF_INET, "127.0.0.1", port + 3, -1) == 0 && lo->verbs == NULL &&
	      ((struct sockaddr_in *)rdma_get_local_addr(lo))->sin_addr.s_addr ==
	      htonl(INADDR_LOOPBACK), "bind 127.0.0.1:%d: as any, its address kept (errno %d)", port + 3,
	      errno);
	CHECK(rdma_listen(lo, 4) == 0, "listen on 127.0.0.1:%d", port + 3);
	CHECK(rdma_create_id(cch, &c, NULL, RDMA_PS_TCP) == 0, "the loopback client's id");
	addr_of(&d, "127.0.0.1", port + 3);
	CHECK(rdma_resolve_addr(c, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "rdma_resolve_addr 127.0.0.1 (errno %d)", errno);
	ev = next_event(cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (ev == NULL)
		return 1;
	rdma_ack_cm_event(ev);
	CHECK(c->verbs != NULL, "resolved to 127.0.0.1: the first device (cma_bind_loopback)");
	CHECK(rdma_resolve_route(c, 2000) == 0, "rdma_resolve_route");
	ev = next_event(cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (ev == NULL)
		return 1;
	rdma_ack_cm_event(ev);
	CHECK(rdma_create_qp(c, NULL, rc_qp_attr(&qa)) == 0, "the loopback client's QP");
	memset(&cp, 0, sizeof(cp));
	cp.retry_count = 7;
	CHECK(rdma_connect(c, &cp) == 0, "rdma_connect to 127.0.0.1 (errno %d)", errno);
	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	s = ev->id;
	CHECK(ev->listen_id == lo, "the request is the 127.0.0.1 listener's");
	rdma_ack_cm_event(ev);
	CHECK(rdma_create_qp(s, NULL, rc_qp_attr(&qa)) == 0, "the loopback server's QP");
	memset(sbuf, 0, sizeof(sbuf));
	smr = rdma_reg_msgs(s, sbuf, sizeof(sbuf));
	cmr = rdma_reg_msgs(c, cbuf, sizeof(cbuf));
	CHECK(smr != NULL && cmr != NULL && rdma_post_recv(s, NULL, sbuf, sizeof(sbuf), smr) == 0,
	      "MRs, the server's RECV");
	CHECK(rdma_accept(s, &cp) == 0, "rdma_accept (errno %d)", errno);
	ev = next_event(cch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev == NULL)
		return 1;
	rdma_ack_cm_event(ev);
	ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev == NULL)
		return 1;
	rdma_ack_cm_event(ev);
	fill(cbuf, sizeof(cbuf), 0x3c);
	CHECK(rdma_post_send(c, NULL, cbuf, sizeof(cbuf), cmr, IBV_SEND_SIGNALED) == 0 &&
	      wait_wc(c, true, &wc) == 0 && wait_wc(s, false, &wc) == 0 &&
	      wc.byte_len == sizeof(cbuf) && memcmp(sbuf, cbuf, sizeof(cbuf)) == 0,
	      "a SEND of %zu bytes over the loopback connection", sizeof(cbuf));
	CHECK(rdma_disconnect(c) == 0, "rdma_disconnect");
	ev = next_event(cch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	rdma_dereg_mr(smr);
	rdma_dereg_mr(cmr);
	rdma_destroy_qp(s);
	rdma_destroy_qp(c);
	rdma_destroy_id(s);
	rdma_destroy_id(c);
	rdma_destroy_id(lo);
	rdma_destroy_event_channel(cch);
	rdma_destroy_event_channel(ch);
	errno = 0; /* the refusals' errno is not for the checks after */
	return 0;
}

static int
server(const char *ip, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch3, *ch4;
	struct rdma_cm_id *l, *l2, *l3, *l4, *lu, *c;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *buf, want[MSG_LEN];
	int flags;

	CHECK(ch != NULL && ch->fd >= 0, "rdma_create_event_channel: fd %d", ch ? ch->fd : -1);
	if (ch == NULL)
		return 1;
	/* a non-blocking fd with nothing queued: EAGAIN */
	flags = fcntl(ch->fd, F_GETFL);
	fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK);
	CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN, "empty non-blocking channel: EAGAIN");
	fcntl(ch->fd, F_SETFL, flags);

	CHECK(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	addr_of(&sin, "10.99.99.99", port);
	CHECK(rdma_bind_addr(l, (struct sockaddr *)&sin) == -1 && errno == EADDRNOTAVAIL,
	      "bind to an address not ours: EADDRNOTAVAIL");
	addr_of(&sin, ip, port);
	CHECK(rdma_bind_addr(l, (struct sockaddr *)&sin) == 0, "rdma_bind_addr %s:%d", ip, port);
	CHECK(ntohs(rdma_get_src_port(l)) == port, "rdma_get_src_port %d", ntohs(rdma_get_src_port(l)));
	CHECK(rdma_create_id(ch, &l2, NULL, RDMA_PS_TCP) == 0, "a second id");
	CHECK(rdma_bind_addr(l2, (struct sockaddr *)&sin) == -1 && errno == EADDRINUSE,
	      "the same port again: EADDRINUSE");
	rdma_destroy_id(l2);
	CHECK(rdma_listen(l, 4) == 0, "rdma_listen");
	/* server_backlog()'s listener, before the client can send to it */
	ch3 = rdma_create_event_channel();
	addr_of(&sin, ip, port + 2);
	CHECK(ch3 != NULL && rdma_create_id(ch3, &l3, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_bind_addr(l3, (struct sockaddr *)&sin) == 0 && rdma_listen(l3, 1) == 0,
	      "rdma_listen on port %d with backlog 1, on a channel of its own", port + 2);
	/* server_migrated()'s, and server_ud()'s (the UDP port space, on ch) */
	ch4 = rdma_create_event_channel();
	addr_of(&sin, ip, port + 3);
	CHECK(ch4 != NULL && rdma_create_id(ch4, &l4, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_bind_addr(l4, (struct sockaddr *)&sin) == 0 && rdma_listen(l4, 4) == 0,
	      "rdma_listen on port %d, on a channel of its own", port + 3);
	addr_of(&sin, ip, port);
	CHECK(rdma_create_id(ch, &lu, NULL, RDMA_PS_UDP) == 0 &&
	      rdma_bind_addr(lu, (struct sockaddr *)&sin) == 0 && rdma_listen(lu, 4) == 0,
	      "rdma_listen on UDP port %d", port);
	/* the client's requests wait for the listeners above meanwhile */
	if (server_binds(port + 10) != 0)
		return 1;
	/* Linux's bind and listen rules, every pair (bind_table.h) */
	fails += bind_table(ip, port + 20);

	/* 1: rejected with private data */
	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	CHECK(ev->listen_id == l && ev->param.conn.private_data != NULL &&
	      memcmp(ev->param.conn.private_data, "hello-reject", 13) == 0,
	      "CONNECT_REQUEST 1: the client's private data (after rdma_cm's header)");
	c = ev->id;
	CHECK(ntohs(rdma_get_dst_port(c)) != 0 && c->route.addr.dst_sin.sin_family == AF_INET,
	      "the new id has the peer's address and port (%d)", ntohs(rdma_get_dst_port(c)));
	CHECK(rdma_reject(c, REJ_PDATA, sizeof(REJ_PDATA)) == 0, "rdma_reject with private data");
	rdma_ack_cm_event(ev);
	rdma_destroy_id(c);

	/* 2: accepted, a SEND of MSG_LEN bytes, the client disconnects */
	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	c = ev->id;
	CHECK(memcmp(ev->param.conn.private_data, "hello-accept", 13) == 0,
	      "CONNECT_REQUEST 2: its private data");
	CHECK(ev->param.conn.initiator_depth == 4 && ev->param.conn.responder_resources == 2,
	      "CONNECT_REQUEST: the peer's depths from our side (resp %u init %u)",
	      ev->param.conn.responder_resources, ev->param.conn.initiator_depth);
	rdma_ack_cm_event(ev);
	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	CHECK(rdma_create_qp(c, NULL, &qa) == 0 && c->qp != NULL && c->send_cq != NULL &&
	      c->recv_cq != NULL && c->pd != NULL, "rdma_create_qp with no CQs and no PD: made");
	buf = calloc(1, MSG_LEN);
	mr = rdma_reg_msgs(c, buf, MSG_LEN);
	CHECK(mr != NULL, "rdma_reg_msgs");
	CHECK(rdma_post_recv(c, NULL, buf, MSG_LEN, mr) == 0, "rdma_post_recv");
	memset(&cp, 0, sizeof(cp));
	cp.private_data = ACC_PDATA;
	cp.private_data_len = sizeof(ACC_PDATA);
	cp.responder_resources = 2;
	cp.initiator_depth = 2;
	CHECK(rdma_accept(c, &cp) == 0, "rdma_accept");
	ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev != NULL) {
		CHECK(ev->param.conn.private_data == NULL && ev->param.conn.private_data_len == 0,
		      "passive ESTABLISHED carries no private data, as Linux's (%u bytes)",
		      ev->param.conn.private_data_len);
		rdma_ack_cm_event(ev);
	}
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		CHECK(ibv_query_qp(c->qp, &a, IBV_QP_AV, &ia) == 0 &&
		      a.ah_attr.grh.traffic_class == API_TOS,
		      "the accepted QP's traffic class is the REQ's, the client's TOS (0x%x)",
		      a.ah_attr.grh.traffic_class);
	}
	CHECK(wait_wc(c, false, &wc) == 0 && wc.byte_len == MSG_LEN, "received %u bytes", wc.byte_len);
	fill(want, MSG_LEN, 0x3c);
	CHECK(memcmp(buf, want, MSG_LEN) == 0, "every byte as sent");
	ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	CHECK(rdma_disconnect(c) == 0, "rdma_disconnect after the peer's (sends the DREP)");
	rdma_dereg_mr(mr);
	rdma_destroy_qp(c);
	CHECK(rdma_destroy_id(c) == 0, "rdma_destroy_id");
	free(buf);

	if (server_self_moved(ch) != 0)
		return 1;
	if (server_backlog(ch, ch3, l3) != 0)
		return 1;
	if (server_migrated(ch4, l4) != 0 || server_ud(ch, lu) != 0)
		return 1;
	if (server_connect_error(ch) != 0 || server_stale(ch) != 0)
		return 1;
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* An RC QP of 4 WRs each way on c, CQs and PD made by rdma_create_qp. */
static int
make_qp(struct rdma_cm_id *c)
{
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	return rdma_create_qp(c, NULL, &qa);
}

/* The client's "ce-accept" request is accepted, then its id destroyed
 * (the CM's REJ follows the REP); its "ce-reject" request, sent after, is
 * rejected once that REJ is out: the client sees that REJECTED only after
 * ours was in, and takes the REP's CONNECT_RESPONSE then. */
static int
server_connect_error(struct rdma_event_channel *ch)
{
	struct rdma_cm_id *acc = NULL, *rej = NULL;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	int i;

	for (i = 0; i < 2; i++) {
		ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		if (ev == NULL)
			return 1;
		if (memcmp(ev->param.conn.private_data, "ce-accept", 10) == 0)
			acc = ev->id;
		else
			rej = ev->id;
		rdma_ack_cm_event(ev);
	}
	CHECK(acc != NULL && rej != NULL, "REP dropped: both requests");
	if (acc == NULL || rej == NULL)
		return 1;
	memset(&cp, 0, sizeof(cp));
	CHECK(make_qp(acc) == 0 && rdma_accept(acc, &cp) == 0, "REP dropped: accepted");
	rdma_destroy_qp(acc);
	CHECK(rdma_destroy_id(acc) == 0, "REP dropped: the accepted id destroyed (a REJ)");
	CHECK(rdma_reject(rej, NULL, 0) == 0, "REP dropped: the second request rejected");
	rdma_destroy_id(rej);
	return 0;
}

/* A connection the client then names its QP in a second REQ for: the
 * CM rejects that STALE_CONN and ends this one with a DREQ. */
static int
server_stale(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct rdma_cm_id *c;

	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	c = ev->id;
	rdma_ack_cm_event(ev);
	memset(&cp, 0, sizeof(cp));
	CHECK(make_qp(c) == 0 && rdma_accept(c, &cp) == 0, "stale: accepted");
	ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	/* the client's stale REQ ends it: our CM's DREQ, the client's DREP */
	ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	rdma_destroy_qp(c);
	CHECK(rdma_destroy_id(c) == 0, "stale: destroyed");
	return 0;
}

/* An id with its address and route resolved; tos >= 0: set with
 * rdma_set_option() before the route, which carries it. */
static struct rdma_cm_id *
resolved(struct rdma_event_channel *ch, const char *ip, int port, int tos)
{
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct sockaddr_in d;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0)
		return NULL;
	addr_of(&d, ip, port);
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) != 0)
		return NULL;
	ev = next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (ev == NULL)
		return NULL;
	rdma_ack_cm_event(ev);
	CHECK(id->verbs != NULL, "id->verbs set after ADDR_RESOLVED");
	if (tos >= 0) {
		uint8_t t = (uint8_t)tos;
		int v = 1;

		CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &t, sizeof(t)) == 0,
		      "rdma_set_option TOS 0x%x", tos);
		errno = 0;
		CHECK(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &v, sizeof(v)) == -1 &&
		      errno == EINVAL, "rdma_set_option TOS with an int's length: EINVAL");
		errno = 0;
		CHECK(rdma_set_option(id, RDMA_OPTION_ID, 99, &v, sizeof(v)) == -1 && errno == ENOSYS,
		      "rdma_set_option with an unknown option: ENOSYS");
	}
	if (rdma_resolve_route(id, 2000) != 0)
		return NULL;
	ev = next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (ev == NULL)
		return NULL;
	rdma_ack_cm_event(ev);
	CHECK(id->route.num_paths == 1 && id->route.path_rec != NULL &&
	      id->route.path_rec->hop_limit == 64, "route: one path, hop limit 64");
	if (tos >= 0 && id->route.path_rec != NULL)
		CHECK(id->route.path_rec->traffic_class == tos, "the route's traffic class is the TOS (0x%x)",
		      id->route.path_rec->traffic_class);
	return id;
}

/* The client's end of a connection: its disconnect, the peer's answer,
 * the MR, QP and id gone. */
static void
client_close(struct rdma_event_channel *ch, struct rdma_cm_id *id, struct ibv_mr *mr,
	     const char *what)
{
	struct rdma_cm_event *ev;

	CHECK(rdma_disconnect(id) == 0, "rdma_disconnect (%s)", what);
	ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	rdma_dereg_mr(mr);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
}

static int
client(const char *ip, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel(), *ch2;
	struct rdma_cm_id *id;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct rdma_addrinfo hints, *res;
	struct ibv_qp_init_attr qa;
	struct sockaddr_in d;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *buf;

	CHECK(strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED") == 0,
	      "rdma_event_str");
	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	CHECK(rdma_getaddrinfo(ip, "7000", &hints, &res) == 0 && res->ai_dst_addr != NULL &&
	      ntohs(((struct sockaddr_in *)res->ai_dst_addr)->sin_port) == 7000 &&
	      res->ai_qp_type == IBV_QPT_RC, "rdma_getaddrinfo %s:7000", ip);
	rdma_freeaddrinfo(res);
	/* the system's getaddrinfo error as the call's, as rdma-core's */
	hints.ai_flags = RAI_NUMERICHOST;
	errno = 0;
	CHECK(rdma_getaddrinfo("not-an-address", "7000", &hints, &res) == -1 && errno == EAI_NONAME,
	      "rdma_getaddrinfo of a name with RAI_NUMERICHOST: -1, errno EAI_NONAME (%d)", errno);
	hints.ai_flags = 0;

	/* rsockets are not served: each call says so */
	errno = 0;
	CHECK(rsocket(AF_INET, SOCK_STREAM, 0) == -1 && errno == ENOSYS, "rsocket(): ENOSYS");
	errno = 0;
	CHECK(rpoll(NULL, 0, 0) == -1 && errno == ENOSYS, "rpoll(): ENOSYS");

	/* a NULL id: EINVAL, no crash (Debian's perftest 4.5+0.17 retries a
	 * rejected connect with the id it destroyed, set to NULL) */
	addr_of(&d, ip, port);
	errno = 0;
	CHECK(rdma_resolve_addr(NULL, NULL, (struct sockaddr *)&d, 2000) == -1 && errno == EINVAL,
	      "rdma_resolve_addr(NULL id): EINVAL");
	errno = 0;
	CHECK(rdma_connect(NULL, NULL) == -1 && errno == EINVAL, "rdma_connect(NULL id): EINVAL");
	errno = 0;
	CHECK(rdma_destroy_id(NULL) == -1 && errno == EINVAL, "rdma_destroy_id(NULL): EINVAL");
	rdma_destroy_qp(NULL);
	rdma_destroy_ep(NULL);

	/* an address nobody answers ARP for: ADDR_ERROR, -ETIMEDOUT */
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	addr_of(&d, "10.77.0.99", port);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 300) == 0, "rdma_resolve_addr .99");
	ev = next_event(ch, RDMA_CM_EVENT_ADDR_ERROR);
	if (ev != NULL) {
		CHECK(ev->status == -ETIMEDOUT, "ADDR_ERROR status -ETIMEDOUT (%d)", ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);

	/* migrate: the event of a resolution goes to the new channel */
	ch2 = rdma_create_event_channel();
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id for migrate");
	addr_of(&d, ip, port);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0, "rdma_resolve_addr");
	CHECK(rdma_migrate_id(id, ch2) == 0 && id->channel == ch2, "rdma_migrate_id");
	ev = next_event(ch2, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	rdma_destroy_id(id);
	/* an id destroyed with an event queued: the event goes with it, and
	 * the fd says so (as Linux's ucma) */
	CHECK(!readable(ch2), "nothing queued on the second channel");
	CHECK(rdma_create_id(ch2, &id, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0,
	      "an id resolving on the second channel");
	{
		struct pollfd p = { .fd = ch2->fd, .events = POLLIN };

		CHECK(poll(&p, 1, -1) == 1, "its ADDR_RESOLVED queued");
	}
	CHECK(rdma_destroy_id(id) == 0, "the id destroyed, its event not taken");
	CHECK(!readable(ch2), "its event went with it: the fd is not readable");
	rdma_destroy_event_channel(ch2);

	/* a port nobody listens on: REJECTED, INVALID_SERVICE_ID (8) */
	id = resolved(ch, ip, port + 1, -1);
	if (id == NULL)
		return 1;
	memset(&cp, 0, sizeof(cp));
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect to port %d", port + 1);
	ev = next_event(ch, RDMA_CM_EVENT_REJECTED);
	if (ev != NULL) {
		CHECK(ev->status == 8, "REJECTED status 8 (no listener for the service ID): %d", ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);

	/* rejected by the server: its private data comes back */
	id = resolved(ch, ip, port, -1);
	if (id == NULL)
		return 1;
	cp.private_data = "hello-reject";
	cp.private_data_len = 13;
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect (to be rejected)");
	ev = next_event(ch, RDMA_CM_EVENT_REJECTED);
	if (ev != NULL) {
		CHECK(ev->status == 28, "REJECTED status 28 (consumer defined): %d", ev->status);
		errno = 0;
		CHECK(rdma_disconnect(id) == 0,
		      "rdma_disconnect after REJECTED: 0, as Linux's (%s)", strerror(errno));
		CHECK(ev->param.conn.private_data != NULL &&
		      memcmp(ev->param.conn.private_data, REJ_PDATA, sizeof(REJ_PDATA)) == 0,
		      "REJECTED carries the server's private data");
		rdma_ack_cm_event(ev);
		/* Linux's id stays in its connect state: no new address, no
		 * new connect (a new id is needed) */
		addr_of(&d, ip, port);
		errno = 0;
		CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == -1 &&
		      errno == EINVAL, "rdma_resolve_addr after REJECTED: EINVAL, as Linux's (errno %d)",
		      errno);
		errno = 0;
		CHECK(rdma_connect(id, &cp) == -1 && errno == EINVAL,
		      "rdma_connect after REJECTED: EINVAL, as Linux's (errno %d)", errno);
	}
	rdma_destroy_id(id);

	/* accepted, with a TOS: a SEND, then our disconnect */
	id = resolved(ch, ip, port, API_TOS);
	if (id == NULL)
		return 1;
	memset(&qa, 0, sizeof(qa));
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	CHECK(rdma_create_qp(id, NULL, &qa) == 0, "rdma_create_qp");
	buf = malloc(MSG_LEN);
	fill(buf, MSG_LEN, 0x3c);
	mr = rdma_reg_msgs(id, buf, MSG_LEN);
	cp.private_data = "hello-accept";
	cp.private_data_len = 13;
	cp.responder_resources = 4;
	cp.initiator_depth = 2;
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect");
	ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev == NULL)
		return 1;
	CHECK(memcmp(ev->param.conn.private_data, ACC_PDATA, sizeof(ACC_PDATA)) == 0,
	      "ESTABLISHED carries the REP's private data");
	rdma_ack_cm_event(ev);
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		CHECK(ibv_query_qp(id->qp, &a, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC, &ia) == 0 &&
		      a.qp_state == IBV_QPS_RTS, "our QP is RTS after ESTABLISHED");
		CHECK(ibv_query_qp(id->qp, &a, IBV_QP_AV, &ia) == 0 &&
		      a.ah_attr.grh.traffic_class == API_TOS,
		      "our QP's traffic class is the TOS (0x%x)", a.ah_attr.grh.traffic_class);
	}
	errno = 0;
	CHECK(rdma_notify(id, IBV_EVENT_COMM_EST) == -1 && errno == EISCONN,
	      "rdma_notify(COMM_EST) on an established id: EISCONN, as Linux's (%s)",
	      strerror(errno));
	CHECK(rdma_post_send(id, NULL, buf, MSG_LEN, mr, IBV_SEND_SIGNALED) == 0, "rdma_post_send");
	CHECK(wait_wc(id, true, &wc) == 0, "send completion");
	client_close(ch, id, mr, "connection 2");

	/* connection 3 (server_self_moved()): connect(NULL), then a READ */
	id = resolved(ch, ip, port, -1);
	if (id == NULL)
		return 1;
	/* rdma_create_qp() wrote the CQs it made into qa (as rdma-core's):
	 * those went with the QP */
	qa.send_cq = qa.recv_cq = NULL;
	CHECK(rdma_create_qp(id, NULL, &qa) == 0, "rdma_create_qp (connection 3)");
	memset(buf, 0, MSG_LEN);
	mr = rdma_reg_msgs(id, buf, MSG_LEN);
	CHECK(rdma_connect(id, NULL) == 0, "rdma_connect(id, NULL)");
	ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev == NULL)
		return 1;
	{
		struct read_target t;
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		uint8_t want[MSG_LEN];

		memcpy(&t, ev->param.conn.private_data, sizeof(t));
		rdma_ack_cm_event(ev);
		CHECK(ibv_query_qp(id->qp, &a, IBV_QP_MAX_QP_RD_ATOMIC, &ia) == 0 &&
		      a.max_rd_atomic > 0, "connect(NULL): our QP may READ (max_rd_atomic %u)",
		      a.max_rd_atomic);
		CHECK(t.len == MSG_LEN &&
		      rdma_post_read(id, NULL, buf, MSG_LEN, mr, IBV_SEND_SIGNALED, t.addr,
				     t.rkey) == 0, "rdma_post_read of the server's buffer");
		CHECK(wait_wc(id, true, &wc) == 0 && wc.opcode == IBV_WC_RDMA_READ,
		      "READ completion (status %d)", wc.status);
		fill(want, MSG_LEN, 0x5a);
		CHECK(memcmp(buf, want, MSG_LEN) == 0, "READ: every byte the server's");
	}
	client_close(ch, id, mr, "connection 3");

	/* server_backlog(): two REQs to its backlog-1 listener, then one to
	 * port; all three rejected, the one dropped after its REQ again */
	{
		struct rdma_cm_id *x = resolved(ch, ip, port + 2, -1), *y = resolved(ch, ip, port + 2, -1);
		struct rdma_cm_id *z = resolved(ch, ip, port, -1);
		unsigned int got = 0, i;

		if (x == NULL || y == NULL || z == NULL)
			return 1;
		memset(&cp, 0, sizeof(cp));
		CHECK(rdma_connect(x, &cp) == 0 && rdma_connect(y, &cp) == 0 &&
		      rdma_connect(z, &cp) == 0, "backlog: three connects");
		for (i = 0; i < 3; i++) {
			ev = next_event(ch, RDMA_CM_EVENT_REJECTED);
			if (ev == NULL)
				return 1;
			got |= ev->id == x ? 1u : ev->id == y ? 2u : ev->id == z ? 4u : 8u;
			CHECK(ev->status == 28, "backlog: REJECTED status 28 (%d)", ev->status);
			rdma_ack_cm_event(ev);
		}
		CHECK(got == 7, "backlog: each connect rejected once (0x%x)", got);
		rdma_destroy_id(x);
		rdma_destroy_id(y);
		rdma_destroy_id(z);
	}

	/* server_migrated(): its listener on port + 3 moves channels with our
	 * request queued, and rejects it from the new one */
	id = resolved(ch, ip, port + 3, -1);
	if (id == NULL)
		return 1;
	memset(&cp, 0, sizeof(cp));
	CHECK(rdma_connect(id, &cp) == 0, "rdma_connect to the listener that migrates");
	ev = next_event(ch, RDMA_CM_EVENT_REJECTED);
	if (ev != NULL) {
		CHECK(ev->status == 28, "migrated listener: REJECTED status 28 (%d)", ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_id(id);

	/* server_ud(): a UDP id resolved, its SIDR_REQ accepted, then
	 * rdma_disconnect: 0 on a UD id, as Linux's */
	CHECK(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP) == 0, "rdma_create_id UDP");
	addr_of(&d, ip, port);
	CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0, "UD: rdma_resolve_addr");
	ev = next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	CHECK(rdma_resolve_route(id, 2000) == 0, "UD: rdma_resolve_route");
	ev = next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (ev != NULL)
		rdma_ack_cm_event(ev);
	memset(&cp, 0, sizeof(cp));
	CHECK(rdma_connect(id, &cp) == 0, "UD: rdma_connect (a SIDR_REQ)");
	ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
	if (ev != NULL) {
		CHECK(ev->param.ud.qp_num == 0x123, "UD: ESTABLISHED with the server's QP number");
		rdma_ack_cm_event(ev);
	}
	errno = 0;
	CHECK(rdma_disconnect(id) == 0, "UD: rdma_disconnect on the active side: 0, as Linux's (%s)",
	      strerror(errno));
	rdma_destroy_id(id);

	/* server_connect_error(): our REP's CONNECT_RESPONSE taken after the
	 * server's REJ for it came in: CONNECT_ERROR, and that REJ gives no
	 * REJECTED after it (rdma-core's connect_error) */
	ch2 = rdma_create_event_channel();
	{
		struct rdma_cm_id *x = resolved(ch, ip, port, -1), *y;
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		y = ch2 != NULL ? resolved(ch2, ip, port, -1) : NULL;
		if (x == NULL || y == NULL || make_qp(x) != 0)
			return 1;
		memset(&cp, 0, sizeof(cp));
		cp.private_data = "ce-accept";
		cp.private_data_len = 10;
		CHECK(rdma_connect(x, &cp) == 0, "REP dropped: rdma_connect (accepted, then dropped)");
		cp.private_data = "ce-reject";
		CHECK(rdma_connect(y, &cp) == 0, "REP dropped: rdma_connect (rejected after)");
		/* the server's REJ for y left after its REJ for x: x's is in */
		ev = next_event(ch2, RDMA_CM_EVENT_REJECTED);
		if (ev != NULL)
			rdma_ack_cm_event(ev);
		ev = next_event(ch, RDMA_CM_EVENT_CONNECT_ERROR);
		if (ev != NULL) {
			CHECK(ev->id == x && ev->status != 0, "REP dropped: x's, status %d",
			      ev->status);
			rdma_ack_cm_event(ev);
		}
		CHECK(ibv_query_qp(x->qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR,
		      "REP dropped: our QP in ERR (%d)", a.qp_state);
		/* the REJ's event is still queued (the fd readable, as
		 * rdma-core's over the kernel's queue); taking it gives
		 * nothing */
		{
			int fl = fcntl(ch->fd, F_GETFL);

			fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK);
			errno = 0;
			ev = NULL;
			CHECK(rdma_get_cm_event(ch, &ev) == -1 && errno == EAGAIN,
			      "REP dropped: no REJECTED after CONNECT_ERROR, as rdma-core's (%s)",
			      ev != NULL ? rdma_event_str(ev->event) : strerror(errno));
			if (ev != NULL)
				rdma_ack_cm_event(ev);
			fcntl(ch->fd, F_SETFL, fl);
		}
		rdma_destroy_qp(x);
		rdma_destroy_id(x);
		rdma_destroy_id(y);
	}

	/* server_stale(): a connection, then a REQ naming its QP again: the
	 * server's CM rejects it STALE_CONN (and ends the connection). The
	 * REJ puts the new id's CM id in timewait, as Linux's cm; Linux's
	 * rdma_cm hands up no TIMEWAIT_EXIT from it (the id never was
	 * disconnected). The connection's own timewait, as long and begun
	 * after, ends after it: once its TIMEWAIT_EXIT is here, the other's
	 * would be too. */
	{
		struct rdma_cm_id *a = resolved(ch, ip, port, -1), *z;

		if (ch2 == NULL || a == NULL || make_qp(a) != 0)
			return 1;
		memset(&cp, 0, sizeof(cp));
		CHECK(rdma_connect(a, &cp) == 0, "stale: rdma_connect");
		ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
		if (ev == NULL)
			return 1;
		rdma_ack_cm_event(ev);
		z = resolved(ch2, ip, port, -1);
		if (z == NULL)
			return 1;
		memset(&cp, 0, sizeof(cp));
		cp.qp_num = a->qp->qp_num;
		CHECK(rdma_connect(z, &cp) == 0, "stale: rdma_connect naming the connected QP %u",
		      cp.qp_num);
		ev = next_event(ch2, RDMA_CM_EVENT_REJECTED);
		if (ev != NULL) {
			CHECK(ev->status == 10, "stale: REJECTED status 10, STALE_CONN (%d)", ev->status);
			rdma_ack_cm_event(ev);
		}
		ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
		if (ev != NULL)
			rdma_ack_cm_event(ev);
		CHECK(rdma_disconnect(a) == 0, "stale: rdma_disconnect (the DREP)");
		ev = next_event(ch, RDMA_CM_EVENT_TIMEWAIT_EXIT);
		if (ev != NULL)
			rdma_ack_cm_event(ev);
		CHECK(!readable(ch2), "stale: no TIMEWAIT_EXIT for the rejected id, as Linux's");
		rdma_destroy_qp(a);
		rdma_destroy_id(a);
		rdma_destroy_id(z);
	}
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(ch);
	free(buf);
	return 0;
}

/* race: rdma_destroy_id() on one thread while rdma_get_cm_event() on
 * another works on the id's CONNECT_RESPONSE. srnic's test hook
 * SRNIC_RDMACM_TEST_HOLD_RTU=1 holds the RTU (the QP already in RTS)
 * until the destroy has gone as far as it goes without it, so the two
 * meet every time. The server accepts and sees our destroy's REJ. */
static int
server_race(const char *ip, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	struct rdma_cm_id *l, *c;

	addr_of(&sin, ip, port);
	CHECK(ch != NULL && rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) == 0 &&
	      rdma_bind_addr(l, (struct sockaddr *)&sin) == 0 && rdma_listen(l, 4) == 0,
	      "race: rdma_listen");
	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (ev == NULL)
		return 1;
	c = ev->id;
	rdma_ack_cm_event(ev);
	memset(&cp, 0, sizeof(cp));
	CHECK(make_qp(c) == 0 && rdma_accept(c, &cp) == 0, "race: accepted");
	ev = next_event(ch, RDMA_CM_EVENT_REJECTED);
	if (ev != NULL) {
		CHECK(ev->status == 28, "race: the destroyed client's REJ (status %d)", ev->status);
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_qp(c);
	rdma_destroy_id(c);
	rdma_destroy_id(l);
	rdma_destroy_event_channel(ch);
	return 0;
}

static void *
destroyer(void *arg)
{
	struct rdma_cm_id *id = arg;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	/* the CONNECT_RESPONSE is taken once the QP is in RTS */
	do {
		if (ibv_query_qp(id->qp, &a, IBV_QP_STATE, &ia) != 0)
			return NULL;
	} while (a.qp_state != IBV_QPS_RTS && a.qp_state != IBV_QPS_ERR);
	CHECK(rdma_destroy_id(id) == 0, "race: rdma_destroy_id on its thread");
	return NULL;
}

static int
client_race(const char *ip, int port)
{
	struct rdma_event_channel *ch;
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	pthread_t t;

	setenv("SRNIC_RDMACM_TEST_HOLD_RTU", "1", 1);   /* srnic's hook, read at start */
	ch = rdma_create_event_channel();
	if (ch == NULL)
		return 1;
	id = resolved(ch, ip, port, -1);
	if (id == NULL || make_qp(id) != 0)
		return 1;
	qp = id->qp;
	memset(&cp, 0, sizeof(cp));
	CHECK(rdma_connect(id, &cp) == 0, "race: rdma_connect");
	CHECK(pthread_create(&t, NULL, destroyer, id) == 0, "race: the destroying thread");
	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_ERROR);
	if (ev == NULL)
		return 1;
	CHECK(ev->status == -ENOENT, "race: CONNECT_ERROR -ENOENT, the id being destroyed (%d)",
	      ev->status);
	CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR,
	      "race: our QP in ERR (%d)", a.qp_state);
	rdma_destroy_qp(id);    /* the id stays until its event is acknowledged */
	rdma_ack_cm_event(ev);
	pthread_join(t, NULL);
	rdma_destroy_event_channel(ch);
	return 0;
}

/* text (IPv4, or IPv6 with an optional %scope) and port as a sockaddr */
static int
sa_of(struct sockaddr_storage *ss, const char *text, int port)
{
	struct addrinfo h = { .ai_flags = AI_NUMERICHOST }, *ai;

	if (getaddrinfo(text, NULL, &h, &ai) != 0)
		return -1;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
	return 0;
}

/* 0.0.0.0 and :: bound apart (AFONLY) on one port, as getaddrinfo(NULL,
 * AI_PASSIVE) hands them to a server, each takes the requests of its IP
 * version: the client's first connection is over IPv6 (to ip6, the
 * device's address or its link-local fe80::), its second over IPv4 (to
 * ip); each carries a SEND the server checks byte by byte. [::], the
 * first to listen, holds the port's CM listen and goes before the IPv4
 * connection: 0.0.0.0 takes that request still. */
static int
server_apart(const char *ip, int port, const char *ip6)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage want6;
	struct rdma_cm_id *v4, *v6, *c;
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t buf[512], exp[512];
	int i;

	(void)ip;
	/* [::] listens first: the client's first request, over IPv6, may
	 * come as soon as a listen is logged */
	if (ch == NULL || sa_of(&want6, ip6, port) != 0)
		return 1;
	CHECK(bind_to(ch, &v4, AF_INET, "0.0.0.0", port, -1) == 0 &&
	      bind_to(ch, &v6, AF_INET6, "::", port, 1) == 0 && rdma_listen(v6, 4) == 0 &&
	      rdma_listen(v4, 4) == 0, "apart: 0.0.0.0:%d and [::]:%d AFONLY listen (errno %d)",
	      port, port, errno);
	for (i = 0; i < 2; i++) {
		bool over6 = i == 0;
		const struct sockaddr *l, *p;

		ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
		if (ev == NULL)
			return 1;
		c = ev->id;
		CHECK(ev->listen_id == (over6 ? v6 : v4), "apart: the IPv%d request is the %s listener's",
		      over6 ? 6 : 4, over6 ? "[::]" : "0.0.0.0");
		rdma_ack_cm_event(ev);
		l = rdma_get_local_addr(c);
		p = rdma_get_peer_addr(c);
		CHECK(l->sa_family == (over6 ? AF_INET6 : AF_INET) && p->sa_family == l->sa_family &&
		      ntohs(rdma_get_src_port(c)) == port,
		      "apart: the new id's addresses are IPv%d, local port %d (families %d %d, port %d)",
		      over6 ? 6 : 4, port, l->sa_family, p->sa_family, ntohs(rdma_get_src_port(c)));
		if (over6)
			CHECK(memcmp(&((const struct sockaddr_in6 *)l)->sin6_addr,
				     &((struct sockaddr_in6 *)&want6)->sin6_addr, 16) == 0,
			      "apart: the IPv6 request's local address is %s", ip6);
		memset(buf, 0, sizeof(buf));
		mr = NULL;
		CHECK(make_qp(c) == 0 && (mr = rdma_reg_msgs(c, buf, sizeof(buf))) != NULL &&
		      rdma_post_recv(c, NULL, buf, sizeof(buf), mr) == 0, "apart: QP, MR, RECV");
		memset(&cp, 0, sizeof(cp));
		CHECK(rdma_accept(c, &cp) == 0, "apart: rdma_accept (errno %d)", errno);
		ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
		if (ev == NULL)
			return 1;
		rdma_ack_cm_event(ev);
		fill(exp, sizeof(exp), (uint8_t)(0x60 + i));
		CHECK(wait_wc(c, false, &wc) == 0 && wc.byte_len == sizeof(exp) &&
		      memcmp(buf, exp, sizeof(exp)) == 0,
		      "apart: the SEND over IPv%d: %zu bytes as sent", over6 ? 6 : 4, sizeof(exp));
		if (over6) {
			/* [::] goes (it holds the port's CM listen, its first
			 * listener), then our DREQ tells the client to make
			 * the IPv4 connection: 0.0.0.0 must still take it */
			CHECK(rdma_destroy_id(v6) == 0, "apart: the [::] listener destroyed");
			v6 = NULL;
			CHECK(rdma_disconnect(c) == 0, "apart: the server disconnects the IPv6 one");
		}
		ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
		if (ev != NULL)
			rdma_ack_cm_event(ev);
		rdma_dereg_mr(mr);
		rdma_destroy_qp(c);
		rdma_destroy_id(c);
	}
	rdma_destroy_id(v4);
	rdma_destroy_event_channel(ch);
	return 0;
}

static int
client_apart(const char *ip, int port, const char *ip6)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event *ev;
	struct rdma_conn_param cp;
	int i;

	if (ch == NULL)
		return 1;
	for (i = 0; i < 2; i++) {
		bool over6 = i == 0;
		struct sockaddr_storage d;
		struct rdma_cm_id *id;
		struct ibv_mr *mr;
		struct ibv_wc wc;
		uint8_t buf[512];

		if (sa_of(&d, over6 ? ip6 : ip, port) != 0 || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) != 0)
			return 1;
		CHECK(rdma_resolve_addr(id, NULL, (struct sockaddr *)&d, 2000) == 0,
		      "apart: rdma_resolve_addr %s (errno %d)", over6 ? ip6 : ip, errno);
		ev = next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
		if (ev == NULL)
			return 1;
		rdma_ack_cm_event(ev);
		CHECK(rdma_get_local_addr(id)->sa_family == d.ss_family &&
		      rdma_get_peer_addr(id)->sa_family == d.ss_family,
		      "apart: local and peer addresses of the destination's family (%d %d)",
		      rdma_get_local_addr(id)->sa_family, rdma_get_peer_addr(id)->sa_family);
		CHECK(rdma_resolve_route(id, 2000) == 0, "apart: rdma_resolve_route");
		ev = next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
		if (ev == NULL)
			return 1;
		rdma_ack_cm_event(ev);
		mr = NULL;
		fill(buf, sizeof(buf), (uint8_t)(0x60 + i));
		CHECK(make_qp(id) == 0 && (mr = rdma_reg_msgs(id, buf, sizeof(buf))) != NULL,
		      "apart: QP and MR");
		memset(&cp, 0, sizeof(cp));
		cp.retry_count = 7;
		CHECK(rdma_connect(id, &cp) == 0, "apart: rdma_connect over IPv%d", over6 ? 6 : 4);
		ev = next_event(ch, RDMA_CM_EVENT_ESTABLISHED);
		if (ev == NULL)
			return 1;
		rdma_ack_cm_event(ev);
		CHECK(rdma_post_send(id, NULL, buf, sizeof(buf), mr, IBV_SEND_SIGNALED) == 0 &&
		      wait_wc(id, true, &wc) == 0, "apart: a SEND of %zu bytes over IPv%d", sizeof(buf),
		      over6 ? 6 : 4);
		if (!over6) {
			client_close(ch, id, mr, "apart");
			continue;
		}
		/* the server ends the IPv6 connection once its [::] listener
		 * is gone: the IPv4 one after it finds 0.0.0.0 alone */
		ev = next_event(ch, RDMA_CM_EVENT_DISCONNECTED);
		if (ev != NULL)
			rdma_ack_cm_event(ev);
		rdma_dereg_mr(mr);
		rdma_destroy_qp(id);
		rdma_destroy_id(id);
	}
	rdma_destroy_event_channel(ch);
	return 0;
}

int
main(int argc, char **argv)
{
	int rc;

	if (argc < 4) {
		fprintf(stderr, "usage: %s server|client|server-race|client-race SERVER_IP PORT\n"
			"       %s server-apart|client-apart SERVER_IP PORT SERVER_IPV6\n", argv[0],
			argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "server-apart") == 0 || strcmp(argv[1], "client-apart") == 0) {
		if (argc < 5)
			return 2;
		rc = argv[1][0] == 's' ? server_apart(argv[2], atoi(argv[3]), argv[4])
				       : client_apart(argv[2], atoi(argv[3]), argv[4]);
	} else if (strcmp(argv[1], "server-race") == 0)
		rc = server_race(argv[2], atoi(argv[3]));
	else if (strcmp(argv[1], "client-race") == 0)
		rc = client_race(argv[2], atoi(argv[3]));
	else
		rc = strcmp(argv[1], "server") == 0 ? server(argv[2], atoi(argv[3]))
						    : client(argv[2], atoi(argv[3]));
	if (rc == 0 && fails == 0)
		printf("%s: all ok\n", argv[1]);
	return rc != 0 || fails != 0;
}
