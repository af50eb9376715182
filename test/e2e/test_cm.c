/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM (lib/cm) end to end: two srnic devices over a net_ring pair in
 * this process, with rdma_rxe's addresses of the golden capture (A:
 * 10.77.0.2 / 52:54:0a:4d:00:02, B: 10.77.0.3 / :03), each with its CM on
 * its GSI QP; this thread polls both engines and both CMs until a
 * condition holds. A lossy link on both ports (srnic_lossy.h, a filter)
 * drops chosen CM MADs and logs every MAD each side receives.
 *
 * Cases: connect (REQ/REP/RTU, the QPs moved with srnic_cm_init_qp_attr(),
 * then an RC SEND and a READ checked byte for byte, DREQ/DREP, timewait
 * exit), REJ INVALID_SERVICE_ID, a user REJ with ARI and private data, MRA
 * then a late REP, DREQ from the passive side and from both at once, a REQ
 * in the timewait (STALE_CONN), 16 simultaneous connects to one listener,
 * SIDR (a listener's qpn/qkey/status; UNSUPPORTED without one), REQ, REP
 * and RTU each lost once, a duplicate REQ answered with the REP, a dead
 * peer (REQ_ERROR after the retries), bad MADs dropped and counted, and
 * the golden: srnic's REQ/REP/RTU/DREQ/DREP with the capture's parameters
 * are its MADs byte for byte.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <pthread.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pause.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "eng_internal.h" /* test_qp1_rx_error: a receive error CQE as the engine makes one */
#include "srnic_link.h"
#include "srnic_lossy.h"
#include "srnic_mad.h"
#include "srnic_wire.h"
#include "test_cm_golden.h"
#include "test_eal.h"

#define WAIT_S 20                  /* generous: ASan on a loaded 2-core host */
#define MAX_EVS 512
#define MAX_MADS 1024
#define MAX_RULES 4
#define NCONN 16
#define SID 0x0000000001064853ull  /* the golden's service: RDMA_PS_TCP, port 18515 */
#define PLT 8                      /* packet life time of the tests' paths: 1 ms */
#define MSG_LEN 3000               /* SEND: 3 packets at path MTU 1024 */
#define READ_LEN 5000

/* ---- the pair ---- */

static const struct rte_ether_addr macs[2] = {
	{ { 0x52, 0x54, 0x0a, 0x4d, 0x00, 0x02 } },
	{ { 0x52, 0x54, 0x0a, 0x4d, 0x00, 0x03 } },
};

struct ev {
	enum srnic_cm_event_type type;
	struct srnic_cm_id *id;
	enum srnic_cm_state state;  /* the id's state during the handler */
	struct srnic_cm_event e;    /* pointers in it are not valid after the call */
	uint8_t pdata[256];
	uint8_t ari[SRNIC_CM_REJ_ARI];
	uint8_t info[SRNIC_CM_SIDR_REP_INFO];
};

struct side {
	struct srnic_dev *dev;
	struct srnic_pd *pd;
	struct srnic_engine *eng;
	struct srnic_cm *cm;
	uint16_t port;
	struct srnic_lossy *lossy;
	union ibv_gid gid;
	struct ev evs[MAX_EVS];
	unsigned int nevs;
	uint32_t force_local_id;    /* set on the next REQ_RECEIVED id (golden) */
	bool reject_in_handler;     /* REJ CONSUMER_DEFINED from the handler */
	bool block_in_handler;      /* REQ_RECEIVED: wait for another thread's destroy */
	unsigned int enomem_reqs;   /* REQ_RECEIVED: that many handler calls return -ENOMEM */
	/* MADs this side received (logged by the lossy filter) */
	uint8_t mads[MAX_MADS][SRNIC_MAD_LEN];
	unsigned int nmads;
};

struct rule {
	int from;                   /* sending side */
	uint16_t attr;
	uint32_t skip, count, dropped;
};

static struct side S[2];
/* test_threads: the handler and the other thread meet here */
static struct {
	struct srnic_cm_id *blocked_id;
	bool destroy_called;
	bool handler_done;
	bool done_at_return;        /* handler_done when srnic_cm_destroy_id() returned */
	int destroy_rc;
	struct srnic_cm_id *ids[NCONN];
	int req_rc[NCONN];
} T;
static uint8_t g_plt = PLT;         /* packet life time req_param() gives */
static struct rule rules[MAX_RULES];
static unsigned int nrules;

static enum srnic_lossy_action
filter(const struct rte_mbuf *m, void *arg)
{
	struct side *rx = arg;
	int from = rx == &S[0] ? 1 : 0;
	uint8_t f[14 + 20 + 8 + 12 + 8 + SRNIC_MAD_LEN];
	const uint8_t *p;
	unsigned int i;
	uint16_t attr;

	if (rte_pktmbuf_pkt_len(m) < sizeof(f))
		return SRNIC_LOSSY_PASS;
	p = rte_pktmbuf_read(m, 0, sizeof(f), f);
	if (p[12] != 0x08 || p[13] != 0x00 || p[14 + 9] != 17 ||
	    ((p[36] << 8) | p[37]) != SRNIC_ROCE_UDP_PORT || p[42] != SRNIC_OP_UD_SEND_ONLY ||
	    ((p[47] << 16) | (p[48] << 8) | p[49]) != SRNIC_GSI_QPN)
		return SRNIC_LOSSY_PASS;
	p += 62;
	attr = (uint16_t)((p[16] << 8) | p[17]);
	for (i = 0; i < nrules; i++) {
		struct rule *r = &rules[i];

		if (r->from != from || r->attr != attr || r->count == 0)
			continue;
		if (r->skip > 0) {
			r->skip--;
			continue;
		}
		r->count--;
		r->dropped++;
		return SRNIC_LOSSY_DROP;
	}
	if (rx->nmads < MAX_MADS)
		memcpy(rx->mads[rx->nmads++], p, SRNIC_MAD_LEN);
	return SRNIC_LOSSY_PASS;
}

static void
drop(int from, uint16_t attr, uint32_t skip, uint32_t count)
{
	assert_true(nrules < MAX_RULES);
	rules[nrules++] = (struct rule){ .from = from, .attr = attr, .skip = skip, .count = count };
}

static uint64_t deadline_in(uint64_t us);

static int
handler(struct srnic_cm_id *id, const struct srnic_cm_event *e)
{
	struct side *s = srnic_cm_id_context(id);
	struct ev *v;

	assert_true(s->nevs < MAX_EVS);
	v = &s->evs[s->nevs++];
	memset(v, 0, sizeof(*v));
	v->type = e->type;
	v->id = id;
	v->state = srnic_cm_id_state(id);
	v->e = *e;
	if (e->private_data != NULL)
		memcpy(v->pdata, e->private_data, e->private_data_len);
	if (e->type == SRNIC_CM_EV_REJ_RECEIVED && e->param.rej.ari != NULL)
		memcpy(v->ari, e->param.rej.ari, e->param.rej.ari_length);
	if (e->type == SRNIC_CM_EV_SIDR_REP_RECEIVED && e->param.sidr_rep.info != NULL)
		memcpy(v->info, e->param.sidr_rep.info, e->param.sidr_rep.info_len);
	if (e->type == SRNIC_CM_EV_REQ_RECEIVED && s->force_local_id != 0) {
		assert_int_equal(srnic_cm_id_set_local_id(id, s->force_local_id), 0);
		s->force_local_id = 0;
	}
	if (e->type == SRNIC_CM_EV_REQ_RECEIVED && s->block_in_handler) {
		uint64_t until;

		__atomic_store_n(&T.blocked_id, id, __ATOMIC_RELEASE);
		while (!__atomic_load_n(&T.destroy_called, __ATOMIC_ACQUIRE))
			rte_pause();
		/* a destroy that did not wait for us would return meanwhile */
		until = deadline_in(20000);
		while (rte_get_timer_cycles() < until)
			rte_pause();
		__atomic_store_n(&T.handler_done, true, __ATOMIC_RELEASE);
	}
	if (e->type == SRNIC_CM_EV_REQ_RECEIVED && s->reject_in_handler) {
		static const char why[] = "no thanks";
		static const uint8_t ari[3] = { 0xA1, 0xA2, 0xA3 };

		assert_int_equal(srnic_cm_send_rej(id, SRNIC_CM_REJ_CONSUMER_DEFINED, ari,
						   sizeof(ari), why, sizeof(why)), 0);
	}
	if (e->type == SRNIC_CM_EV_REQ_RECEIVED && s->enomem_reqs > 0) {
		s->enomem_reqs--;
		v->id = NULL; /* the CM destroys it: its address may come again */
		return -ENOMEM;
	}
	return 0;
}

static void
poll_all(void)
{
	srnic_engine_poll(S[0].eng);
	srnic_engine_poll(S[1].eng);
	if (S[0].cm != NULL)
		srnic_cm_poll(S[0].cm, NULL);
	if (S[1].cm != NULL)
		srnic_cm_poll(S[1].cm, NULL);
}

static uint64_t
deadline_in(uint64_t us)
{
	return rte_get_timer_cycles() + us * (rte_get_timer_hz() / 1000000);
}

#define RUN_UNTIL(cond) do { \
	uint64_t dl__ = deadline_in((uint64_t)WAIT_S * 1000000); \
	while (!(cond)) { \
		if (rte_get_timer_cycles() > dl__) \
			fail_msg("timeout waiting for %s (%s:%d)", #cond, __FILE__, __LINE__); \
		poll_all(); \
	} \
} while (0)

/* The n-th event (0-based) of type t on side s for id (NULL: any id), or NULL. */
static struct ev *
ev_find(int s, enum srnic_cm_event_type t, const struct srnic_cm_id *id, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < S[s].nevs; i++)
		if (S[s].evs[i].type == t && (id == NULL || S[s].evs[i].id == id) && n-- == 0)
			return &S[s].evs[i];
	return NULL;
}

/* Destroy id (0 expected) and forget its events: a later id may be given
 * the same address (the release build's malloc reuses it at once; ASan's
 * quarantine hid that), and ev_find() by id must not take a dead one's. */
static void
destroy_id(struct srnic_cm_id *id)
{
	unsigned int s, i;

	assert_int_equal(srnic_cm_destroy_id(id), 0);
	for (s = 0; s < 2; s++)
		for (i = 0; i < S[s].nevs; i++)
			if (S[s].evs[i].id == id)
				S[s].evs[i].id = NULL;
}

static unsigned int
ev_count(int s, enum srnic_cm_event_type t)
{
	unsigned int i, n = 0;

	for (i = 0; i < S[s].nevs; i++)
		n += S[s].evs[i].type == t;
	return n;
}

static int64_t
stat(int s, const char *name)
{
	int64_t v = srnic_cm_stat(S[s].cm, name);

	assert_true(v >= 0);
	return v;
}

static int
group_setup(void **state)
{
	uint16_t port[2];
	int i, rc;

	(void)state;
	rc = srnic_test_eal_init("cm", 0, NULL);
	if (rc != 0)
		return -1;
	rc = srnic_link_ring_pair("cm", 1, 4096, &port[0], &port[1]);
	if (rc != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		struct srnic_dev_conf c;
		struct srnic_lossy_conf lc;

		memset(&c, 0, sizeof(c));
		c.port_id = port[i];
		c.nb_engines = 1;
		c.mtu = 1500; /* path MTU 1024, as the golden's */
		c.ip_ver = 4;
		c.ip[0] = 10;
		c.ip[1] = 77;
		c.ip[3] = (uint8_t)(2 + i);
		c.mac = &macs[i];
		c.name = i == 0 ? "cma" : "cmb";
		S[i].port = port[i];
		S[i].dev = srnic_dev_create(&c);
		if (S[i].dev == NULL)
			return -1;
		S[i].pd = srnic_alloc_pd(S[i].dev);
		S[i].eng = srnic_dev_engine(S[i].dev, 0);
		if (S[i].pd == NULL || S[i].eng == NULL ||
		    srnic_dev_gid(S[i].dev, SRNIC_GID_INDEX_IP, &S[i].gid) != 0)
			return -1;
		memset(&lc, 0, sizeof(lc));
		lc.seed = 1;
		lc.filter = filter;
		lc.filter_arg = &S[i];
		S[i].lossy = srnic_lossy_attach(port[i], &lc);
		if (S[i].lossy == NULL)
			return -1;
	}
	for (i = 0; i < 2; i++)
		if (srnic_dev_add_neigh(S[i].dev, &S[1 - i].gid, &macs[1 - i]) != 0)
			return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 2; i++) {
		srnic_lossy_detach(S[i].lossy);
		srnic_dealloc_pd(S[i].pd);
		srnic_dev_destroy(S[i].dev);
	}
	rte_eal_cleanup();
	return 0;
}

/* A fresh CM on each side per test: no id of a test outlives it. */
static int
setup(void **state)
{
	int i;

	(void)state;
	nrules = 0;
	memset(rules, 0, sizeof(rules));
	for (i = 0; i < 2; i++) {
		S[i].nevs = 0;
		S[i].nmads = 0;
		S[i].force_local_id = 0;
		S[i].reject_in_handler = false;
		S[i].block_in_handler = false;
		S[i].enomem_reqs = 0;
		/* the device's address (a case may take another GID) */
		assert_int_equal(srnic_dev_gid(S[i].dev, SRNIC_GID_INDEX_IP, &S[i].gid), 0);
		S[i].cm = srnic_cm_create(S[i].dev, S[i].eng);
		if (S[i].cm == NULL) {
			fprintf(stderr, "srnic_cm_create: %s\n", rte_strerror(rte_errno));
			return -1;
		}
	}
	return 0;
}

static int
teardown(void **state)
{
	uint64_t dl = deadline_in((uint64_t)WAIT_S * 1000000);
	int i;

	(void)state;
	nrules = 0;
	/* let the last answers and timewaits of destroyed ids run out */
	for (;;) {
		uint64_t n0 = 0, n1 = 0;

		srnic_engine_poll(S[0].eng);
		srnic_engine_poll(S[1].eng);
		srnic_cm_poll(S[0].cm, &n0);
		srnic_cm_poll(S[1].cm, &n1);
		if ((n0 == UINT64_MAX && n1 == UINT64_MAX) || rte_get_timer_cycles() > dl)
			break;
	}
	for (i = 0; i < 2; i++) {
		int rc = srnic_cm_destroy(S[i].cm);

		if (rc != 0) {
			fprintf(stderr, "srnic_cm_destroy side %d: %d\n", i, rc);
			return -1;
		}
		S[i].cm = NULL;
	}
	return 0;
}

/* ---- QPs ---- */

struct qp_side {
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	struct srnic_mr *mr;
	uint8_t *buf;
};

static void
qp_make(int s, struct qp_side *q, size_t len)
{
	struct srnic_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	q->cq = srnic_create_cq(S[s].dev, 256, S[s].eng);
	assert_non_null(q->cq);
	qa.send_cq = qa.recv_cq = q->cq;
	qa.max_send_wr = qa.max_recv_wr = 64;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	q->qp = srnic_create_qp(S[s].pd, &qa);
	assert_non_null(q->qp);
	q->buf = NULL;
	q->mr = NULL;
	if (len > 0) {
		q->buf = rte_zmalloc("cmtest", len, 64);
		assert_non_null(q->buf);
		q->mr = srnic_reg_mr(S[s].pd, q->buf, len,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_WRITE);
		assert_non_null(q->mr);
	}
}

static void
qp_free(struct qp_side *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	srnic_modify_qp(q->qp, &a, IBV_QP_STATE);
	for (int i = 0; i < 64; i++)
		poll_all();
	assert_int_equal(srnic_destroy_qp(q->qp), 0);
	assert_int_equal(srnic_destroy_cq(q->cq), 0);
	if (q->mr != NULL) {
		assert_int_equal(srnic_dereg_mr(q->mr), 0);
		rte_free(q->buf);
	}
}

/* Move qp to st with what the CM says (srnic_cm_init_qp_attr). */
static void
qp_move(struct srnic_cm_id *id, struct srnic_qp *qp, enum ibv_qp_state st)
{
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	assert_int_equal(srnic_cm_init_qp_attr(id, &a, &mask), 0);
	assert_int_equal(srnic_modify_qp(qp, &a, mask), 0);
	assert_int_equal(srnic_qp_state(qp), st);
}

static void
req_param(struct srnic_cm_req_param *p, uint32_t qpn, uint64_t sid)
{
	memset(p, 0, sizeof(*p));
	p->path.sgid = S[0].gid;
	p->path.dgid = S[1].gid;
	p->path.hop_limit = 64;
	p->path.mtu = IBV_MTU_1024;
	p->path.packet_life_time = g_plt;
	p->path.flow_label = 0x12345;
	p->service_id = sid;
	p->qp_num = qpn;
	p->qp_type = IBV_QPT_RC;
	p->starting_psn = 0x100000 + qpn;
	p->responder_resources = 4;
	p->initiator_depth = 4;
	p->remote_cm_response_timeout = 15; /* 134 ms */
	p->local_cm_response_timeout = 15;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->max_cm_retries = 8;
}

static struct srnic_cm_id *
listen_on(int s, uint64_t sid)
{
	struct srnic_cm_id *l = srnic_cm_create_id(S[s].cm, handler, &S[s]);

	assert_non_null(l);
	assert_int_equal(srnic_cm_listen(l, sid, 0), 0);
	assert_int_equal(srnic_cm_id_state(l), SRNIC_CM_LISTEN);
	return l;
}

/* B listens (*l); A's id (returned) gets the REQ parameters p for qpn,
 * whose sender waits resp (an IBA time) per try, 1 + retries tries. */
static struct srnic_cm_id *
listen_and_a(struct srnic_cm_id **l, struct srnic_cm_req_param *p, uint32_t qpn, uint8_t resp,
	     uint8_t retries)
{
	struct srnic_cm_id *a;

	*l = listen_on(1, SID);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	assert_non_null(a);
	req_param(p, qpn, SID);
	p->remote_cm_response_timeout = resp;
	p->max_cm_retries = retries;
	return a;
}

/* A's REQ (p, from req_param()) to B, B's new id from its REQ_RECEIVED. */
static struct srnic_cm_id *
req_to_b(struct srnic_cm_id *a, const struct srnic_cm_req_param *p)
{
	struct ev *v;

	assert_int_equal(srnic_cm_send_req(a, p), 0);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, 0)) != NULL);
	return v->id;
}

/* B's REP (qpn, psn), A's RTU, then A destroys its ESTABLISHED id: a DREQ,
 * B's DREP, B's timewait; the ids and the listener l go. */
static void
rep_rtu_close(struct srnic_cm_id *a, struct srnic_cm_id *b, struct srnic_cm_id *l, uint32_t qpn,
	      uint32_t psn)
{
	struct srnic_cm_rep_param rp;

	memset(&rp, 0, sizeof(rp));
	rp.qp_num = qpn;
	rp.starting_psn = psn;
	assert_int_equal(srnic_cm_send_rep(b, &rp), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_REP_RECEIVED, a, 0) != NULL);
	assert_int_equal(srnic_cm_send_rtu(a, NULL, 0), 0);
	RUN_UNTIL(ev_find(1, SRNIC_CM_EV_RTU_RECEIVED, b, 0) != NULL);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_ESTABLISHED);
	assert_null(ev_find(0, SRNIC_CM_EV_REQ_ERROR, a, 0));
	destroy_id(a);
	RUN_UNTIL(ev_find(1, SRNIC_CM_EV_DREQ_RECEIVED, b, 0) != NULL);
	assert_int_equal(srnic_cm_send_drep(b, NULL, 0), 0);
	RUN_UNTIL(ev_find(1, SRNIC_CM_EV_TIMEWAIT_EXIT, b, 0) != NULL);
	destroy_id(b);
	destroy_id(l);
}

/* One RC connection made by the CM, A active. */
struct conn {
	struct srnic_cm_id *a, *b; /* A's id, B's (from REQ_RECEIVED) */
	struct qp_side qa, qb;
};

static const uint8_t req_pdata[] = "hello from A: REQ private data";
static uint8_t conn_cm_timeout = 15; /* conn_make()'s CM response timeouts */

/* REQ .. RTU with the QPs moved on the way, as rdma_cm does. */
static void
conn_make(struct conn *c, struct srnic_cm_id *listener, unsigned int nreq_ev)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_rep_param rp;
	uint8_t rep_pdata[16];
	struct ev *v;

	(void)listener;
	qp_make(0, &c->qa, READ_LEN + MSG_LEN);
	qp_make(1, &c->qb, READ_LEN + MSG_LEN);
	c->a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	assert_non_null(c->a);
	req_param(&p, srnic_qp_num(c->qa.qp), SID);
	p.remote_cm_response_timeout = conn_cm_timeout;
	p.local_cm_response_timeout = conn_cm_timeout;
	p.private_data = req_pdata;
	p.private_data_len = sizeof(req_pdata);
	assert_int_equal(srnic_cm_send_req(c->a, &p), 0);
	assert_int_equal(srnic_cm_id_state(c->a), SRNIC_CM_REQ_SENT);
	qp_move(c->a, c->qa.qp, IBV_QPS_INIT);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, nreq_ev)) != NULL);
	c->b = v->id;
	assert_int_equal(v->state, SRNIC_CM_REQ_RCVD);
	assert_int_equal(v->e.private_data_len, SRNIC_CM_REQ_PDATA);
	assert_memory_equal(v->pdata, req_pdata, sizeof(req_pdata));
	assert_int_equal(v->e.param.req.remote_qpn, srnic_qp_num(c->qa.qp));
	assert_int_equal(v->e.param.req.starting_psn, p.starting_psn);
	assert_int_equal(v->e.param.req.service_id, SID);
	assert_int_equal(v->e.param.req.remote_ca_guid, srnic_cm_ca_guid(S[0].cm));
	assert_memory_equal(v->e.param.req.path.dgid.raw, S[0].gid.raw, 16);
	assert_memory_equal(v->e.param.req.path.sgid.raw, S[1].gid.raw, 16);
	assert_int_equal(v->e.param.req.path.flow_label, 0x12345);
	assert_int_equal(v->e.param.req.path.mtu, IBV_MTU_1024);
	assert_int_equal(v->e.param.req.qp_type, IBV_QPT_RC);
	assert_int_equal(v->e.param.req.responder_resources, 4);
	assert_int_equal(srnic_cm_id_remote_id(c->b), srnic_cm_id_local_id(c->a));
	assert_int_equal(v->e.param.req.starting_psn, 0x100000 + srnic_qp_num(c->qa.qp));
	qp_move(c->b, c->qb.qp, IBV_QPS_INIT);
	/* RTR before the REP (as rdma_accept): the CM has no RQ PSN yet, the
	 * caller gives the one its REP will carry (as ipoib and rdma_cm do) */
	{
		struct ibv_qp_attr a;
		int mask = 0;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		assert_int_equal(srnic_cm_init_qp_attr(c->b, &a, &mask), 0);
		assert_true(mask & IBV_QP_RQ_PSN);
		assert_int_equal(a.rq_psn, 0);
		a.rq_psn = 0x200000 + srnic_qp_num(c->qb.qp);
		assert_int_equal(srnic_modify_qp(c->qb.qp, &a, mask), 0);
	}
	/* the REP carries where B's buffer is, for A's READ */
	{
		uint64_t addr = (uintptr_t)c->qb.buf;
		uint32_t rkey = srnic_mr_rkey(c->qb.mr);

		memcpy(rep_pdata, &addr, 8);
		memcpy(rep_pdata + 8, &rkey, 4);
		memcpy(rep_pdata + 12, "REP!", 4);
	}
	memset(&rp, 0, sizeof(rp));
	rp.qp_num = srnic_qp_num(c->qb.qp);
	rp.starting_psn = 0x200000 + rp.qp_num;
	rp.responder_resources = 4;
	rp.initiator_depth = 4;
	rp.rnr_retry_count = 7;
	rp.private_data = rep_pdata;
	rp.private_data_len = sizeof(rep_pdata);
	assert_int_equal(srnic_cm_send_rep(c->b, &rp), 0);
	assert_int_equal(srnic_cm_id_state(c->b), SRNIC_CM_REP_SENT);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REP_RECEIVED, c->a, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_REP_RCVD);
	assert_int_equal(v->e.param.rep.remote_qpn, rp.qp_num);
	assert_int_equal(v->e.param.rep.starting_psn, rp.starting_psn);
	assert_int_equal(v->e.param.rep.remote_ca_guid, srnic_cm_ca_guid(S[1].cm));
	assert_int_equal(v->e.param.rep.target_ack_delay, 15);
	assert_int_equal(v->e.private_data_len, SRNIC_CM_REP_PDATA);
	assert_memory_equal(v->pdata, rep_pdata, sizeof(rep_pdata));
	assert_int_equal(srnic_cm_id_remote_id(c->a), srnic_cm_id_local_id(c->b));
	qp_move(c->a, c->qa.qp, IBV_QPS_RTR);
	qp_move(c->a, c->qa.qp, IBV_QPS_RTS);
	assert_int_equal(srnic_cm_send_rtu(c->a, "rtu", 3), 0);
	assert_int_equal(srnic_cm_id_state(c->a), SRNIC_CM_ESTABLISHED);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_RTU_RECEIVED, c->b, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_ESTABLISHED);
	assert_memory_equal(v->pdata, "rtu", 3);
	qp_move(c->b, c->qb.qp, IBV_QPS_RTS);
}

static void
conn_free(struct conn *c)
{
	if (c->a != NULL)
		destroy_id(c->a);
	if (c->b != NULL)
		destroy_id(c->b);
	qp_free(&c->qa);
	qp_free(&c->qb);
}

static void
wait_wc(struct srnic_cq *cq, struct ibv_wc *wc)
{
	int n = 0;

	RUN_UNTIL((n = srnic_poll_cq(cq, 1, wc)) != 0);
	assert_int_equal(n, 1);
	if (wc->status != IBV_WC_SUCCESS)
		fail_msg("wc status %s", srnic_wc_status_str(wc->status));
}

/* A SEND A -> B and a READ by A of B's buffer, checked byte for byte. */
static void
conn_data(struct conn *c)
{
	struct ibv_sge sa, sb;
	struct ibv_send_wr wr, *bw;
	struct ibv_recv_wr rw, *brw;
	struct ibv_wc wc;
	uint64_t raddr;
	uint32_t rkey, i;
	struct ev *v = ev_find(0, SRNIC_CM_EV_REP_RECEIVED, c->a, 0);

	memcpy(&raddr, v->pdata, 8);
	memcpy(&rkey, v->pdata + 8, 4);
	for (i = 0; i < MSG_LEN; i++)
		c->qa.buf[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < READ_LEN; i++)
		c->qb.buf[MSG_LEN + i] = (uint8_t)(i * 13 + 5);
	sb = (struct ibv_sge){ .addr = (uintptr_t)c->qb.buf, .length = MSG_LEN,
			       .lkey = srnic_mr_lkey(c->qb.mr) };
	memset(&rw, 0, sizeof(rw));
	rw.wr_id = 1;
	rw.sg_list = &sb;
	rw.num_sge = 1;
	assert_int_equal(srnic_post_recv(c->qb.qp, &rw, &brw), 0);
	sa = (struct ibv_sge){ .addr = (uintptr_t)c->qa.buf, .length = MSG_LEN,
			       .lkey = srnic_mr_lkey(c->qa.mr) };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.sg_list = &sa;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	assert_int_equal(srnic_post_send(c->qa.qp, &wr, &bw), 0);
	wait_wc(c->qa.cq, &wc);
	assert_int_equal(wc.wr_id, 2);
	wait_wc(c->qb.cq, &wc);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, MSG_LEN);
	assert_memory_equal(c->qb.buf, c->qa.buf, MSG_LEN);
	sa = (struct ibv_sge){ .addr = (uintptr_t)c->qa.buf + MSG_LEN, .length = READ_LEN,
			       .lkey = srnic_mr_lkey(c->qa.mr) };
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = raddr + MSG_LEN;
	wr.wr.rdma.rkey = rkey;
	assert_int_equal(srnic_post_send(c->qa.qp, &wr, &bw), 0);
	wait_wc(c->qa.cq, &wc);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(c->qa.buf + MSG_LEN, c->qb.buf + MSG_LEN, READ_LEN);
}

/* DREQ from side `from` of c, DREP back, both through TIMEWAIT to IDLE. */
static void
conn_disconnect(struct conn *c, int from)
{
	struct srnic_cm_id *d = from == 0 ? c->a : c->b, *o = from == 0 ? c->b : c->a;
	struct ev *v;

	assert_int_equal(srnic_cm_send_dreq(d, "bye", 3), 0);
	assert_int_equal(srnic_cm_id_state(d), SRNIC_CM_DREQ_SENT);
	RUN_UNTIL((v = ev_find(1 - from, SRNIC_CM_EV_DREQ_RECEIVED, o, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_DREQ_RCVD);
	assert_memory_equal(v->pdata, "bye", 3);
	assert_int_equal(srnic_cm_send_drep(o, "ok", 2), 0);
	assert_int_equal(srnic_cm_id_state(o), SRNIC_CM_TIMEWAIT);
	RUN_UNTIL((v = ev_find(from, SRNIC_CM_EV_DREP_RECEIVED, d, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_TIMEWAIT);
	assert_memory_equal(v->pdata, "ok", 2);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_TIMEWAIT_EXIT, c->a, 0) != NULL &&
		  ev_find(1, SRNIC_CM_EV_TIMEWAIT_EXIT, c->b, 0) != NULL);
	assert_int_equal(srnic_cm_id_state(c->a), SRNIC_CM_IDLE);
	assert_int_equal(srnic_cm_id_state(c->b), SRNIC_CM_IDLE);
}

/* ---- the cases ---- */

static void
test_connect(void **state)
{
	struct srnic_cm_id *l;
	struct conn c;
	struct ibv_qp_attr a;
	int mask;

	(void)state;
	/* one CM per device */
	assert_null(srnic_cm_create(S[0].dev, S[0].eng));
	assert_int_equal(rte_errno, EEXIST);
	l = listen_on(1, SID);
	conn_cm_timeout = 20; /* 4.3 s: no resend even on a loaded host */
	conn_make(&c, l, 0);
	conn_cm_timeout = 15;
	/* what the QPs got, from the CM */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(srnic_cm_init_qp_attr(c.a, &a, &mask), 0);
	assert_int_equal(a.dest_qp_num, srnic_qp_num(c.qb.qp));
	/* a Starting PSN is what its sender receives from (Linux's reading):
	 * A's RTR takes its own REQ's, B's RTS A's; A's RTS takes B's REP's */
	assert_int_equal(a.rq_psn, 0x100000 + srnic_qp_num(c.qa.qp));
	assert_int_equal(a.path_mtu, IBV_MTU_1024);
	assert_int_equal(a.ah_attr.grh.flow_label, 0x12345);
	assert_memory_equal(a.ah_attr.grh.dgid.raw, S[1].gid.raw, 16);
	assert_true(mask & IBV_QP_MAX_DEST_RD_ATOMIC);
	assert_int_equal(a.max_dest_rd_atomic, 4);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(srnic_cm_init_qp_attr(c.b, &a, &mask), 0);
	assert_int_equal(a.sq_psn, 0x100000 + srnic_qp_num(c.qa.qp));
	{
		struct ibv_qp_attr qa, qb;
		struct srnic_qp_init_attr ia;

		/* what the QPs hold: A sends from B's REP PSN, B from A's REQ PSN */
		assert_int_equal(srnic_query_qp(c.qa.qp, &qa, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia), 0);
		assert_int_equal(srnic_query_qp(c.qb.qp, &qb, IBV_QP_SQ_PSN | IBV_QP_RQ_PSN, &ia), 0);
		assert_int_equal(qa.sq_psn, 0x200000 + srnic_qp_num(c.qb.qp));
		assert_int_equal(qb.rq_psn, qa.sq_psn);
		assert_int_equal(qb.sq_psn, 0x100000 + srnic_qp_num(c.qa.qp));
		assert_int_equal(qa.rq_psn, qb.sq_psn);
	}
	assert_int_equal(a.timeout, 15); /* cm_ack_timeout(15, 8) */
	assert_int_equal(a.retry_cnt, 7);
	assert_int_equal(a.rnr_retry, 7);
	a.qp_state = IBV_QPS_SQD;
	assert_int_equal(srnic_cm_init_qp_attr(c.b, &a, &mask), -EINVAL);
	assert_int_equal(srnic_cm_init_qp_attr(l, &a, &mask), -EINVAL);
	conn_data(&c);
	assert_int_equal(stat(0, "tx_req"), 1);
	assert_int_equal(stat(1, "tx_rep"), 1);
	assert_int_equal(stat(0, "tx_rtu"), 1);
	assert_int_equal(stat(0, "req_resent"), 0);
	/* calls a state does not take */
	assert_int_equal(srnic_cm_send_rtu(c.a, NULL, 0), -EINVAL);
	assert_int_equal(srnic_cm_send_drep(c.a, NULL, 0), -EINVAL);
	assert_int_equal(srnic_cm_listen(c.a, 7, 0), -EINVAL);
	conn_disconnect(&c, 0);
	assert_int_equal(stat(0, "timewait_exit"), 1);
	assert_int_equal(stat(1, "timewait_exit"), 1);
	/* a second listener on the service is refused; on another one it is not */
	{
		struct srnic_cm_id *l2 = srnic_cm_create_id(S[1].cm, handler, &S[1]);

		assert_int_equal(srnic_cm_listen(l2, SID, 0), -EBUSY);
		assert_int_equal(srnic_cm_listen(l2, SID + 1, 0), 0);
		destroy_id(l2);
	}
	conn_free(&c);
	/* ids of the CM live: it stays */
	assert_int_equal(srnic_cm_destroy(S[1].cm), -EBUSY);
	destroy_id(l);
	assert_int_equal(stat(0, "rx_unknown_comm_id"), 0);
	assert_int_equal(stat(1, "rx_bad_state"), 0);
}

/* A connection over GID 0 (fe80:: of each MAC, RoCEv2 over IPv6
 * link-local): A's REQ names its link-local GID and B's, goes over QP1
 * from GID 0 (the MACs by neighbour discovery), B's REQ_RECEIVED path has
 * the two link-local GIDs, both QPs get AVs from GID 0 to the other's,
 * and a SEND and a READ between them land byte for byte. */
static void
test_connect_link_local(void **state)
{
	struct srnic_cm_id *l;
	struct ibv_qp_attr a;
	struct srnic_qp_init_attr ia;
	struct conn c;
	int i, mask;

	(void)state;
	for (i = 0; i < 2; i++) { /* setup() gives each case GID 1 again */
		assert_int_equal(srnic_dev_gid(S[i].dev, SRNIC_GID_INDEX_LL, &S[i].gid), 0);
		assert_int_equal(S[i].gid.raw[0], 0xfe);
	}
	l = listen_on(1, SID);
	conn_make(&c, l, 0); /* checks the REQ's path: B's GID and A's, as sent */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(srnic_cm_init_qp_attr(c.b, &a, &mask), 0);
	assert_int_equal(a.ah_attr.grh.sgid_index, SRNIC_GID_INDEX_LL);
	assert_memory_equal(a.ah_attr.grh.dgid.raw, S[0].gid.raw, 16);
	assert_int_equal(srnic_query_qp(c.qa.qp, &a, IBV_QP_AV, &ia), 0);
	assert_int_equal(a.ah_attr.grh.sgid_index, SRNIC_GID_INDEX_LL);
	assert_memory_equal(a.ah_attr.grh.dgid.raw, S[1].gid.raw, 16);
	conn_data(&c);
	assert_true(srnic_dev_stat(S[0].dev, "rx_nd") > 0);
	conn_disconnect(&c, 0);
	conn_free(&c);
	destroy_id(l);
}

static void
test_rej_no_listener(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a;
	struct ev *v;

	(void)state;
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x77, SID + 99);
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.rej.reason, SRNIC_CM_REJ_INVALID_SERVICE_ID);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_IDLE);
	assert_int_equal(stat(1, "rej_no_listener"), 1);
	assert_int_equal(stat(1, "tx_rej"), 1);
	/* the REJ names A's REQ: message REQ, remote comm ID A's, local 0 */
	assert_int_equal(S[0].nmads, 1);
	assert_int_equal(srnic_mad_attr_id(S[0].mads[0]), SRNIC_CM_ATTR_REJ);
	assert_int_equal(srnic_cm_rej_msg_rejected(S[0].mads[0]), SRNIC_CM_MSG_REQ);
	assert_int_equal(srnic_cm_rej_remote_comm_id(S[0].mads[0]), srnic_cm_id_local_id(a));
	assert_int_equal(srnic_cm_rej_local_comm_id(S[0].mads[0]), 0);
	assert_int_equal(srnic_mad_tid(S[0].mads[0]), srnic_mad_tid(S[1].mads[0]));
	/* the id may connect again */
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 1) != NULL);
	destroy_id(a);
}

/* The CM logs as srnic.cm, beside srnic.core and srnic.engine, so that
 * --log-level='srnic.*:error' reaches it (it was RTE_LOG_DEFAULT_LOGTYPE.cm). */
static void
test_log_type(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	(void)state;
	assert_non_null(f);
	rte_log_list_types(f, "|"); /* "|NAME" per line */
	fclose(f);
	assert_non_null(strstr(buf, "|srnic.cm\n"));
	assert_non_null(strstr(buf, "|srnic.core\n"));
	free(buf);
}

/* A REQ whose path MTU the port cannot carry (4096 on a 1500-byte port):
 * REJ INVALID_MTU, counted, and the listener never sees it. A REQ at the
 * port's MTU then connects. */
static void
test_rej_bad_mtu(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *l;
	struct ev *v;

	(void)state;
	l = listen_on(1, SID);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x79, SID);
	p.path.mtu = IBV_MTU_4096;
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.rej.reason, SRNIC_CM_REJ_INVALID_MTU);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_IDLE);
	assert_int_equal(stat(1, "rej_bad_mtu"), 1);
	assert_null(ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, 0));
	assert_int_equal(srnic_mad_attr_id(S[0].mads[0]), SRNIC_CM_ATTR_REJ);
	assert_int_equal(srnic_cm_rej_msg_rejected(S[0].mads[0]), SRNIC_CM_MSG_REQ);
	assert_int_equal(srnic_cm_rej_remote_comm_id(S[0].mads[0]), srnic_cm_id_local_id(a));
	/* the port's own MTU goes through */
	p.path.mtu = IBV_MTU_1024;
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, 0)) != NULL);
	assert_int_equal(v->e.param.req.path.mtu, IBV_MTU_1024);
	assert_int_equal(stat(1, "rej_bad_mtu"), 1);
	destroy_id(v->id);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 1) != NULL);
	destroy_id(a);
	destroy_id(l);
}

static void
test_user_rej(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *l;
	struct ev *v;

	(void)state;
	l = listen_on(1, SID);
	S[1].reject_in_handler = true;
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x78, SID);
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.rej.reason, SRNIC_CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(v->e.param.rej.ari_length, 3);
	assert_memory_equal(v->ari, "\xA1\xA2\xA3", 3);
	assert_int_equal(v->e.private_data_len, SRNIC_CM_REJ_PDATA);
	assert_string_equal((const char *)v->pdata, "no thanks");
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_IDLE);
	v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, 0);
	assert_int_equal(srnic_cm_id_state(v->id), SRNIC_CM_IDLE);
	destroy_id(v->id);
	destroy_id(a);
	destroy_id(l);
}

static void
test_mra_late_rep(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *b, *l;
	uint64_t budget_us, until;
	struct ev *v;

	(void)state;
	l = listen_on(1, SID);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x79, SID);
	p.remote_cm_response_timeout = 8; /* 1 ms */
	p.max_cm_retries = 1;
	/* without an MRA the REQ is given up after 2 tries of ~3 ms */
	budget_us = 2 * (2 * 1049 + 1049);
	b = req_to_b(a, &p);
	assert_int_equal(srnic_cm_send_mra(b, 20 /* 4.3 s */, "wait", 4), 0);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_MRA_REQ_SENT);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_MRA_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.mra.service_timeout, 20);
	assert_memory_equal(v->pdata, "wait", 4);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_MRA_REQ_RCVD);
	/* ten times the budget: the MRA holds the REQ */
	until = deadline_in(10 * budget_us + 20000);
	while (rte_get_timer_cycles() < until)
		poll_all();
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_MRA_REQ_RCVD);
	assert_null(ev_find(0, SRNIC_CM_EV_REQ_ERROR, a, 0));
	assert_int_equal(stat(0, "req_timeout"), 0);
	rep_rtu_close(a, b, l, 0x80, 5);
}

/* Linux's rdma_cm on every connect request: an MRA kept back (FLAG_DELAY),
 * sent only when the REQ comes again before the consumer answers */
static void
test_mra_delayed(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *b, *l;
	struct ev *v;

	(void)state;
	a = listen_and_a(&l, &p, 0x7a, 8, 15); /* 1 ms: the REQ comes again soon */
	b = req_to_b(a, &p);
	assert_int_equal(srnic_cm_send_mra(b, 0x40 | SRNIC_CM_MRA_FLAG_DELAY, NULL, 0), -EINVAL);
	assert_int_equal(srnic_cm_send_mra(b, 20 | SRNIC_CM_MRA_FLAG_DELAY, "late", 4), 0);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_MRA_REQ_SENT);
	/* nothing on the wire yet */
	assert_int_equal(stat(1, "tx_mra"), 0);
	assert_int_equal(stat(1, "mra_delayed"), 1);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_MRA_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.mra.service_timeout, 20); /* the flag is not on the wire */
	assert_memory_equal(v->pdata, "late", 4);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_MRA_REQ_RCVD);
	assert_true(stat(1, "dup_req") >= 1);
	assert_true(stat(1, "tx_mra") >= 1);
	assert_true(stat(0, "rx_mra") >= 1);
	rep_rtu_close(a, b, l, 0x81, 6);
}

static void
test_dreq_passive(void **state)
{
	struct srnic_cm_id *l;
	struct conn c;

	(void)state;
	l = listen_on(1, SID);
	conn_make(&c, l, 0);
	conn_disconnect(&c, 1);
	conn_free(&c);
	destroy_id(l);
}

static void
test_dreq_both(void **state)
{
	struct srnic_cm_id *l;
	struct conn c;

	(void)state;
	l = listen_on(1, SID);
	conn_make(&c, l, 0);
	/* both ask before either hears the other */
	assert_int_equal(srnic_cm_send_dreq(c.a, NULL, 0), 0);
	assert_int_equal(srnic_cm_send_dreq(c.b, NULL, 0), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_DREQ_RECEIVED, c.a, 0) != NULL &&
		  ev_find(1, SRNIC_CM_EV_DREQ_RECEIVED, c.b, 0) != NULL);
	assert_int_equal(srnic_cm_id_state(c.a), SRNIC_CM_DREQ_RCVD);
	assert_int_equal(srnic_cm_id_state(c.b), SRNIC_CM_DREQ_RCVD);
	assert_int_equal(srnic_cm_send_drep(c.a, NULL, 0), 0);
	assert_int_equal(srnic_cm_send_drep(c.b, NULL, 0), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_TIMEWAIT_EXIT, c.a, 0) != NULL &&
		  ev_find(1, SRNIC_CM_EV_TIMEWAIT_EXIT, c.b, 0) != NULL);
	assert_int_equal(stat(0, "dreq_timeout"), 0);
	assert_int_equal(stat(1, "dreq_timeout"), 0);
	conn_free(&c);
	destroy_id(l);
}

/* A DREQ nobody answers: resent 1 + max_cm_retries times, then DREQ_ERROR
 * with the id in TIMEWAIT (Linux's cm_process_send_error(); rdma_cm turns it
 * into DISCONNECTED -ETIMEDOUT), and TIMEWAIT_EXIT after it. */
static void
test_dreq_timeout(void **state)
{
	struct srnic_cm_id *l;
	struct conn c;
	struct ev *v;

	(void)state;
	l = listen_on(1, SID);
	conn_make(&c, l, 0);
	drop(0, SRNIC_CM_ATTR_DREQ, 0, 1000);
	assert_int_equal(srnic_cm_send_dreq(c.a, NULL, 0), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_DREQ_ERROR, c.a, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_TIMEWAIT);
	assert_int_equal(stat(0, "dreq_timeout"), 1);
	assert_int_equal(stat(0, "tx_dreq"), 1 + 8); /* req_param()'s max_cm_retries */
	assert_int_equal(rules[0].dropped, 1 + 8);
	assert_null(ev_find(1, SRNIC_CM_EV_DREQ_RECEIVED, c.b, 0));
	assert_int_equal(srnic_cm_id_state(c.b), SRNIC_CM_ESTABLISHED);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_TIMEWAIT_EXIT, c.a, 0) != NULL);
	assert_int_equal(ev_count(0, SRNIC_CM_EV_DREQ_ERROR), 1);
	conn_free(&c);
	destroy_id(l);
}

/* A REQ from a QP still in its timewait at the peer: REJ STALE_CONN. */
static void
test_stale_conn(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *l, *a2;
	struct conn c;
	struct ev *v;

	(void)state;
	l = listen_on(1, SID);
	g_plt = 18; /* B's timewait: 2.1 s, time enough for the second REQ */
	conn_make(&c, l, 0);
	g_plt = PLT;
	assert_int_equal(srnic_cm_send_dreq(c.a, NULL, 0), 0);
	RUN_UNTIL(ev_find(1, SRNIC_CM_EV_DREQ_RECEIVED, c.b, 0) != NULL);
	assert_int_equal(srnic_cm_send_drep(c.b, NULL, 0), 0);
	assert_int_equal(srnic_cm_id_state(c.b), SRNIC_CM_TIMEWAIT);
	a2 = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, srnic_qp_num(c.qa.qp), SID);
	p.path.packet_life_time = 18;
	assert_int_equal(srnic_cm_send_req(a2, &p), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a2, 0)) != NULL);
	assert_int_equal(v->e.param.rej.reason, SRNIC_CM_REJ_STALE_CONN);
	assert_int_equal(stat(1, "stale_conn"), 1);
	/* STALE_CONN puts the REQ's id in timewait too (Linux's cm_rej_rcv) */
	assert_int_equal(srnic_cm_id_state(a2), SRNIC_CM_TIMEWAIT);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_TIMEWAIT_EXIT, a2, 0) != NULL &&
		  ev_find(1, SRNIC_CM_EV_TIMEWAIT_EXIT, c.b, 0) != NULL);
	destroy_id(a2);
	conn_free(&c);
	destroy_id(l);
}

static void
test_listener_many(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *l, *a[NCONN], *b[NCONN];
	unsigned int i, j;

	(void)state;
	l = listen_on(1, SID);
	for (i = 0; i < NCONN; i++) {
		a[i] = srnic_cm_create_id(S[0].cm, handler, &S[0]);
		assert_non_null(a[i]);
		req_param(&p, 0x300 + i, SID);
		p.remote_cm_response_timeout = 20;
		p.local_cm_response_timeout = 20;
		assert_int_equal(srnic_cm_send_req(a[i], &p), 0);
	}
	RUN_UNTIL(ev_count(1, SRNIC_CM_EV_REQ_RECEIVED) == NCONN);
	for (i = 0; i < NCONN; i++) {
		struct ev *v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, i);
		struct srnic_cm_rep_param rp;

		b[i] = v->id;
		for (j = 0; j < i; j++)
			assert_int_not_equal(srnic_cm_id_local_id(b[j]), srnic_cm_id_local_id(b[i]));
		memset(&rp, 0, sizeof(rp));
		rp.qp_num = 0x400 + v->e.param.req.remote_qpn;
		assert_int_equal(srnic_cm_send_rep(b[i], &rp), 0);
	}
	RUN_UNTIL(ev_count(0, SRNIC_CM_EV_REP_RECEIVED) == NCONN);
	for (i = 0; i < NCONN; i++) {
		struct ev *v = ev_find(0, SRNIC_CM_EV_REP_RECEIVED, a[i], 0);

		assert_non_null(v);
		/* each REQ got the REP of its own passive id */
		assert_int_equal(v->e.param.rep.remote_qpn, 0x400 + 0x300 + i);
		assert_int_equal(srnic_cm_send_rtu(a[i], NULL, 0), 0);
	}
	RUN_UNTIL(ev_count(1, SRNIC_CM_EV_RTU_RECEIVED) == NCONN);
	for (i = 0; i < NCONN; i++)
		assert_int_equal(srnic_cm_id_state(b[i]), SRNIC_CM_ESTABLISHED);
	/* half disconnect from each side */
	for (i = 0; i < NCONN; i++)
		assert_int_equal(srnic_cm_send_dreq(i % 2 ? b[i] : a[i], NULL, 0), 0);
	RUN_UNTIL(ev_count(0, SRNIC_CM_EV_DREQ_RECEIVED) == NCONN / 2 &&
		  ev_count(1, SRNIC_CM_EV_DREQ_RECEIVED) == NCONN / 2);
	for (i = 0; i < NCONN; i++)
		assert_int_equal(srnic_cm_send_drep(i % 2 ? a[i] : b[i], NULL, 0), 0);
	RUN_UNTIL(ev_count(0, SRNIC_CM_EV_TIMEWAIT_EXIT) == NCONN &&
		  ev_count(1, SRNIC_CM_EV_TIMEWAIT_EXIT) == NCONN);
	for (i = 0; i < NCONN; i++) {
		destroy_id(a[i]);
		destroy_id(b[i]);
	}
	assert_int_equal(stat(0, "req_resent") + stat(1, "rep_resent"), 0);
	destroy_id(l);
}

/* A SIDR_REQ from A to B for SID: 5 s per try, 3 retries. */
static void
sidr_req_param(struct srnic_cm_sidr_req_param *p)
{
	memset(p, 0, sizeof(*p));
	p->path.sgid = S[0].gid;
	p->path.dgid = S[1].gid;
	p->service_id = SID;
	p->timeout_ms = 5000;
	p->max_cm_retries = 3;
}

static void
test_sidr(void **state)
{
	struct srnic_cm_sidr_req_param p;
	struct srnic_cm_sidr_rep_param rp;
	struct srnic_cm_id *l, *a, *a2;
	int64_t resent;
	struct ev *v;

	(void)state;
	l = listen_on(1, SID);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	sidr_req_param(&p);
	p.private_data = "sidr?";
	p.private_data_len = 5;
	assert_int_equal(srnic_cm_send_sidr_req(a, &p), 0);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_SIDR_REQ_SENT);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_SIDR_REQ_RECEIVED, NULL, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_SIDR_REQ_RCVD);
	assert_int_equal(v->e.param.sidr_req.service_id, SID);
	assert_ptr_equal(v->e.param.sidr_req.listen_id, l);
	assert_memory_equal(v->e.param.sidr_req.path.dgid.raw, S[0].gid.raw, 16);
	assert_memory_equal(v->pdata, "sidr?", 5);
	memset(&rp, 0, sizeof(rp));
	rp.qp_num = 0x123456;
	rp.qkey = 0x11223344;
	rp.status = SRNIC_CM_SIDR_SUCCESS;
	rp.info = "inf";
	rp.info_length = 3;
	rp.private_data = "sidr!";
	rp.private_data_len = 5;
	assert_int_equal(srnic_cm_send_sidr_rep(v->id, &rp), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_SIDR_REP_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.sidr_rep.status, SRNIC_CM_SIDR_SUCCESS);
	assert_int_equal(v->e.param.sidr_rep.qpn, 0x123456);
	assert_int_equal(v->e.param.sidr_rep.qkey, 0x11223344);
	assert_int_equal(v->e.param.sidr_rep.info_len, 3);
	assert_memory_equal(v->info, "inf", 3);
	assert_memory_equal(v->pdata, "sidr!", 5);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_IDLE);
	destroy_id(ev_find(1, SRNIC_CM_EV_SIDR_REQ_RECEIVED, NULL, 0)->id);
	/* no listener: SIDR_REP UNSUPPORTED, from the CM itself */
	a2 = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	p.service_id = SID + 5;
	assert_int_equal(srnic_cm_send_sidr_req(a2, &p), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_SIDR_REP_RECEIVED, a2, 0)) != NULL);
	assert_int_equal(v->e.param.sidr_rep.status, SRNIC_CM_SIDR_UNSUPPORTED);
	assert_int_equal(stat(1, "sidr_no_listener"), 1);
	/* no answer at all: SIDR_REQ_ERROR after 1 + 3 tries */
	drop(0, SRNIC_CM_ATTR_SIDR_REQ, 0, 100);
	p.service_id = SID;
	p.timeout_ms = 5;
	resent = stat(0, "sidr_req_resent");
	assert_int_equal(srnic_cm_send_sidr_req(a2, &p), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_SIDR_REQ_ERROR, a2, 0) != NULL);
	assert_int_equal(rules[0].dropped, 4);
	assert_int_equal(stat(0, "sidr_req_resent") - resent, 3);
	destroy_id(a2);
	destroy_id(a);
	destroy_id(l);
}

/* REQ, REP and RTU each lost once: the connection is made all the same. */
static void
test_lossy_each_once(void **state)
{
	static const uint16_t attrs[3] = { SRNIC_CM_ATTR_REQ, SRNIC_CM_ATTR_REP,
					   SRNIC_CM_ATTR_RTU };
	static const int senders[3] = { 0, 1, 0 };
	struct srnic_cm_id *l;
	unsigned int k;

	(void)state;
	l = listen_on(1, SID);
	for (k = 0; k < 3; k++) {
		struct conn c;

		nrules = 0;
		drop(senders[k], attrs[k], 0, 1);
		conn_make(&c, l, k);
		if (k == 2) /* the RTU lost: B waits for the REP's resend to bring it */
			RUN_UNTIL(srnic_cm_id_state(c.b) == SRNIC_CM_ESTABLISHED);
		assert_int_equal(rules[0].dropped, 1);
		conn_data(&c);
		conn_disconnect(&c, 0);
		conn_free(&c);
	}
	assert_true(stat(0, "req_resent") >= 1);
	assert_true(stat(1, "rep_resent") + stat(1, "dup_req") >= 1);
	assert_true(stat(0, "dup_rep") >= 1); /* the RTU said again */
	destroy_id(l);
}

/* The REP lost, the REQ resent: B answers the duplicate with its REP. */
static void
test_dup_req(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_rep_param rp;
	struct srnic_cm_id *l, *a, *b;

	(void)state;
	l = listen_on(1, SID);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x91, SID);
	p.remote_cm_response_timeout = 10; /* A resends its REQ after ~6 ms */
	p.local_cm_response_timeout = 22;  /* B would resend its REP after 17 s */
	b = req_to_b(a, &p);
	drop(1, SRNIC_CM_ATTR_REP, 0, 1);
	memset(&rp, 0, sizeof(rp));
	rp.qp_num = 0x92;
	assert_int_equal(srnic_cm_send_rep(b, &rp), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_REP_RECEIVED, a, 0) != NULL);
	assert_int_equal(rules[0].dropped, 1);
	assert_true(stat(1, "dup_req") >= 1);
	assert_int_equal(stat(1, "rep_resent"), 0);
	assert_int_equal(ev_count(1, SRNIC_CM_EV_REQ_RECEIVED), 1); /* one id for it */
	assert_int_equal(srnic_cm_send_rtu(a, NULL, 0), 0);
	RUN_UNTIL(srnic_cm_id_state(b) == SRNIC_CM_ESTABLISHED);
	/* a DREQ lost once: resent */
	drop(0, SRNIC_CM_ATTR_DREQ, 0, 1);
	assert_int_equal(srnic_cm_send_dreq(a, NULL, 0), 0);
	RUN_UNTIL(ev_find(1, SRNIC_CM_EV_DREQ_RECEIVED, b, 0) != NULL);
	assert_true(stat(0, "dreq_resent") >= 1);
	/* the DREP lost once: the DREQ resent meets B in TIMEWAIT, which answers again */
	drop(1, SRNIC_CM_ATTR_DREP, 0, 1);
	assert_int_equal(srnic_cm_send_drep(b, NULL, 0), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_DREP_RECEIVED, a, 0) != NULL);
	assert_true(stat(1, "dup_dreq") >= 1);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_TIMEWAIT_EXIT, a, 0) != NULL &&
		  ev_find(1, SRNIC_CM_EV_TIMEWAIT_EXIT, b, 0) != NULL);
	destroy_id(a);
	destroy_id(b);
	destroy_id(l);
}

/* Nobody answers: REQ_ERROR after 1 + max_cm_retries REQs. */
static void
test_req_dead_peer(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *l;
	struct ev *v;

	(void)state;
	l = listen_on(1, SID); /* alive, but deaf: every REQ is lost */
	drop(0, SRNIC_CM_ATTR_REQ, 0, 1000);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x93, SID);
	p.remote_cm_response_timeout = 8;
	p.max_cm_retries = 4;
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REQ_ERROR, a, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_IDLE);
	assert_int_equal(rules[0].dropped, 5);
	assert_int_equal(stat(0, "tx_req"), 5);
	assert_int_equal(stat(0, "req_resent"), 4);
	assert_int_equal(stat(0, "req_timeout"), 1);
	/* REP_ERROR the same way: the passive side's REP never answered */
	nrules = 0;
	{
		struct srnic_cm_rep_param rp;
		struct srnic_cm_id *b;

		p.local_cm_response_timeout = 8;
		p.max_cm_retries = 2;
		p.remote_cm_response_timeout = 20; /* A does not resend meanwhile */
		assert_int_equal(srnic_cm_send_req(a, &p), 0);
		RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, 0)) != NULL);
		b = v->id;
		drop(1, SRNIC_CM_ATTR_REP, 0, 1000);
		memset(&rp, 0, sizeof(rp));
		rp.qp_num = 0x94;
		assert_int_equal(srnic_cm_send_rep(b, &rp), 0);
		RUN_UNTIL(ev_find(1, SRNIC_CM_EV_REP_ERROR, b, 0) != NULL);
		assert_int_equal(rules[0].dropped, 3);
		assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_IDLE);
		destroy_id(b);
	}
	/* A gives up on its REQ: destroy sends REJ TIMEOUT with its CA GUID */
	nrules = 0;
	destroy_id(a);
	RUN_UNTIL(stat(1, "rx_rej") == 1);
	assert_int_equal(srnic_cm_rej_reason(S[1].mads[S[1].nmads - 1]), SRNIC_CM_REJ_TIMEOUT);
	assert_int_equal(srnic_ld64(srnic_cm_rej_ari_c(S[1].mads[S[1].nmads - 1])),
			 srnic_cm_ca_guid(S[0].cm));
	destroy_id(l);
}

/* The active side gives up before any REP reached it (its REJ TIMEOUT
 * names no comm ID of ours, only its own and its CA GUID as ARI): the
 * passive id hears it at once, whether it had not answered yet or its REP
 * was lost, and resends nothing after (Linux's cm_acquire_rejected_id();
 * before, the REJ was dropped as for an unknown id and the REP was resent
 * until REP_ERROR). */
static void
test_rej_timeout_passive(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_rep_param rp;
	struct srnic_cm_id *a, *b, *l;
	struct ev *v;
	int round;

	(void)state;
	l = listen_on(1, SID);
	for (round = 0; round < 2; round++) {
		a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
		req_param(&p, 0x95 + round, SID);
		p.remote_cm_response_timeout = 20; /* A does not resend meanwhile */
		p.local_cm_response_timeout = 8;   /* B's REP: resent every ~1 ms */
		p.max_cm_retries = 15;
		b = req_to_b(a, &p);
		if (round == 1) {
			/* B answers; its REPs never reach A */
			drop(1, SRNIC_CM_ATTR_REP, 0, 1000);
			memset(&rp, 0, sizeof(rp));
			rp.qp_num = 0x97;
			assert_int_equal(srnic_cm_send_rep(b, &rp), 0);
			RUN_UNTIL(stat(1, "tx_rep") >= 2);
		}
		destroy_id(a);
		RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REJ_RECEIVED, b, 0)) != NULL);
		assert_int_equal(v->e.param.rej.reason, SRNIC_CM_REJ_TIMEOUT);
		assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_IDLE);
		assert_int_equal(stat(1, "rx_unknown_comm_id"), 0);
		if (round == 1) {
			uint64_t sent = stat(1, "tx_rep"), until = deadline_in(20000);

			/* no REP after the REJ (one every ~1 ms before), and no
			 * REP_ERROR: B's timer went with the REJ */
			while (rte_get_timer_cycles() < until)
				poll_all();
			assert_int_equal(stat(1, "tx_rep"), sent);
			assert_null(ev_find(1, SRNIC_CM_EV_REP_ERROR, b, 0));
			nrules = 0;
		}
		destroy_id(b);
		S[1].nevs = 0;
	}
	destroy_id(l);
}

/*
 * A consumer with no room for a request (rdma_cm's backlog full) returns
 * -ENOMEM: the request goes without a REJ (Linux's cm_destroy_id() for
 * REQ_RCVD), so the peer's next try finds room; it went with a REJ
 * CONSUMER_DEFINED and the connect failed.
 */
static void
test_req_dropped_enomem(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *b, *l;
	struct ev *v;

	(void)state;
	S[1].enomem_reqs = 1;
	a = listen_and_a(&l, &p, 0x99, 8, 8); /* ~1 ms: A tries again soon */
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, 1)) != NULL);
	b = v->id;
	assert_null(ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, 0)->id); /* the dropped one: gone */
	assert_int_equal(stat(1, "req_dropped"), 1);
	assert_int_equal(stat(1, "tx_rej"), 0);
	assert_true(stat(0, "req_resent") >= 1);
	assert_null(ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 0));
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_REQ_RCVD);
	rep_rtu_close(a, b, l, 0x9a, 0x4242);
}

/*
 * A request nobody answers expires once its sender has given up (its
 * REQ's retries and response time, counted again from each repeat): the
 * id is IDLE with REQ_EXPIRED, after A's REQ_ERROR; before, it stayed in
 * REQ_RCVD for good, holding its memory and AH.
 */
static void
test_req_expired(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *b, *l;
	struct ev *v;

	(void)state;
	a = listen_and_a(&l, &p, 0x9b, 8, 2); /* 2 x 1 ms life + 1 ms per try */
	b = req_to_b(a, &p);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REQ_EXPIRED, b, 0)) != NULL);
	/* the two timers run in order of expiry, A's first in each poll */
	assert_non_null(ev_find(0, SRNIC_CM_EV_REQ_ERROR, a, 0));
	assert_int_equal(v->state, SRNIC_CM_IDLE);
	assert_int_equal(stat(1, "req_expired"), 1);
	assert_int_equal(stat(1, "dup_req"), 2);
	assert_int_equal(stat(1, "tx_mads"), 0);
	assert_int_equal(srnic_cm_send_rep(b, &(struct srnic_cm_rep_param){ .qp_num = 0x9c }),
			 -EINVAL);
	destroy_id(b);
	assert_int_equal(stat(1, "tx_mads"), 0);
	destroy_id(a);
	destroy_id(l);
}

/* A listener destroyed on another thread while its request is delivered:
 * the destroy waits for the handler (the new id's handler reads the
 * listener's context), and the handler, finding its listener going,
 * returns nonzero: the new id goes with a REJ the peer hears at once. */
enum race_stage { RACE_IDLE, RACE_IN_HANDLER, RACE_DESTROYING, RACE_DESTROYED };
static atomic_int race_stage;
static atomic_bool race_overlap;

static int
race_handler(struct srnic_cm_id *id, const struct srnic_cm_event *e)
{
	uint64_t until;

	(void)id;
	if (e->type != SRNIC_CM_EV_REQ_RECEIVED)
		return 0;
	atomic_store(&race_stage, RACE_IN_HANDLER);
	while (atomic_load(&race_stage) < RACE_DESTROYING)
		sched_yield();
	/* a destroy that does not wait for us returns within microseconds:
	 * give it 100 ms to show (with the wait it never can) */
	until = deadline_in(100000);
	while (rte_get_timer_cycles() < until)
		if (atomic_load(&race_stage) == RACE_DESTROYED) {
			atomic_store(&race_overlap, true);
			break;
		}
	return 1; /* the listener is going: no connection */
}

static void *
race_destroy(void *arg)
{
	while (atomic_load(&race_stage) < RACE_IN_HANDLER)
		sched_yield();
	atomic_store(&race_stage, RACE_DESTROYING);
	destroy_id(arg);
	atomic_store(&race_stage, RACE_DESTROYED);
	return NULL;
}

static void
test_listener_destroyed_mid_request(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *a, *l;
	pthread_t t;
	struct ev *v;

	(void)state;
	atomic_store(&race_stage, RACE_IDLE);
	atomic_store(&race_overlap, false);
	l = srnic_cm_create_id(S[1].cm, race_handler, &S[1]);
	assert_int_equal(srnic_cm_listen(l, SID, 0), 0);
	assert_int_equal(pthread_create(&t, NULL, race_destroy, l), 0);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x98, SID);
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 0)) != NULL);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_false(atomic_load(&race_overlap));
	assert_int_equal(v->e.param.rej.reason, SRNIC_CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(stat(1, "ids_destroyed_by_handler"), 1);
	destroy_id(a);
}

/* A UD QP on side s that sends crafted MADs (or anything up to
 * RAW_BUF_LEN bytes) to the other side's QP1: a plain one, or (gsi) the
 * device's QP1 itself, its CM gone. */
#define RAW_BUF_LEN 1024

struct raw {
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	struct srnic_mr *mr;
	struct srnic_ah *ah;
	uint8_t *buf;
};

static void
raw_open(int s, struct raw *r, bool gsi)
{
	struct srnic_qp_init_attr qa;
	struct ibv_ah_attr aa;
	struct ibv_qp_attr a;

	r->cq = srnic_create_cq(S[s].dev, 64, S[s].eng);
	assert_non_null(r->cq);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = r->cq;
	qa.max_send_wr = qa.max_recv_wr = 16;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_UD;
	qa.comp_mask = gsi ? SRNIC_QP_INIT_ATTR_GSI : 0;
	r->qp = srnic_create_qp(S[s].pd, &qa);
	assert_non_null(r->qp);
	if (gsi)
		assert_int_equal(srnic_qp_num(r->qp), SRNIC_GSI_QPN);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = SRNIC_GSI_QKEY;
	assert_int_equal(srnic_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
							    IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(srnic_modify_qp(r->qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(srnic_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = S[1 - s].gid;
	aa.grh.sgid_index = SRNIC_GID_INDEX_IP;
	aa.port_num = 1;
	r->ah = srnic_create_ah(S[s].pd, &aa);
	assert_non_null(r->ah);
	r->buf = rte_zmalloc("cmraw", RAW_BUF_LEN, 64);
	assert_non_null(r->buf);
	r->mr = srnic_reg_mr(S[s].pd, r->buf, RAW_BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(r->mr);
}

/* Send the first len bytes of r->buf to the other side's QP1. */
static void
raw_send(struct raw *r, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->buf, .length = len,
			       .lkey = srnic_mr_lkey(r->mr) };
	struct ibv_send_wr wr, *bw;
	struct ibv_wc wc;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = srnic_ah_ibv(r->ah);
	wr.wr.ud.remote_qpn = SRNIC_GSI_QPN;
	wr.wr.ud.remote_qkey = SRNIC_GSI_QKEY;
	assert_int_equal(srnic_post_send(r->qp, &wr, &bw), 0);
	wait_wc(r->cq, &wc);
}

static void
raw_close(struct raw *r)
{
	assert_int_equal(srnic_dereg_mr(r->mr), 0);
	rte_free(r->buf);
	assert_int_equal(srnic_destroy_ah(r->ah), 0);
	assert_int_equal(srnic_destroy_qp(r->qp), 0);
	assert_int_equal(srnic_destroy_cq(r->cq), 0);
}

/* Side s's CM makes way for a raw QP1 (r): its ids must be gone. */
static void
raw_qp1_open(int s, struct raw *r)
{
	assert_int_equal(srnic_cm_destroy(S[s].cm), 0);
	S[s].cm = NULL;
	raw_open(s, r, true);
}

/* ... and comes back. */
static void
raw_qp1_close(int s, struct raw *r)
{
	raw_close(r);
	S[s].cm = srnic_cm_create(S[s].dev, S[s].eng);
	assert_non_null(S[s].cm);
}

/* Bad MADs to QP1: dropped and counted, nothing answered. */
static void
test_bad_mads(void **state)
{
	struct raw r;
	unsigned int k;
	/* each: what to break, and the counter that takes it */
	static const struct {
		const char *stat;
		unsigned int off;
		uint8_t val;
		uint32_t len;
	} bad[] = {
		{ "rx_short", 0, 1, 100 },
		{ "rx_bad_base_version", 0, 2, 256 },
		{ "rx_bad_class", 1, 0x04, 256 },
		{ "rx_bad_class_version", 2, 1, 256 },
		{ "rx_bad_method", 3, 0x83, 256 },
		{ "rx_bad_attr", 17, 0x19, 256 },          /* LAP */
		{ "rx_unknown_comm_id", 17, 0x14, 256 },   /* RTU for nobody */
		{ "rx_unknown_comm_id", 17, 0x13, 256 },   /* REP for nobody */
		{ "rx_unknown_comm_id", 17, 0x11, 256 },   /* MRA for nobody */
		{ "rx_unknown_comm_id", 17, 0x12, 256 },   /* REJ for nobody */
		{ "rx_unknown_comm_id", 17, 0x16, 256 },   /* DREP for nobody */
		{ "rx_unknown_comm_id", 17, 0x18, 256 },   /* SIDR_REP for nobody */
	};

	(void)state;
	/* a plain UD QP on A sends to B's QP1 (any source QP but 1 is refused too) */
	raw_open(0, &r, false);
	for (k = 0; k < RTE_DIM(bad); k++) {
		int64_t bad_src = stat(1, "rx_bad_src");

		srnic_cm_mad_init(r.buf, SRNIC_CM_ATTR_REQ, 0x1234);
		srnic_cm_rtu_remote_comm_id_set(r.buf, 0xDEAD0001); /* no id has it */
		srnic_cm_rtu_local_comm_id_set(r.buf, 0xBEEF0001);
		r.buf[bad[k].off] = bad[k].val;
		raw_send(&r, bad[k].len);
		/* not from a QP1: refused first */
		RUN_UNTIL(stat(1, "rx_bad_src") == bad_src + 1);
	}
	raw_close(&r);
	/* now from QP1 itself (A's CM makes way for a raw GSI QP): B's CM
	 * takes them through its checks */
	raw_qp1_open(0, &r);
	for (k = 0; k < RTE_DIM(bad); k++) {
		int64_t before = stat(1, bad[k].stat);

		srnic_cm_mad_init(r.buf, SRNIC_CM_ATTR_REQ, 0x1234);
		srnic_cm_rtu_remote_comm_id_set(r.buf, 0xDEAD0001); /* no id has it */
		srnic_cm_rtu_local_comm_id_set(r.buf, 0xBEEF0001);
		r.buf[bad[k].off] = bad[k].val;
		raw_send(&r, bad[k].len);
		RUN_UNTIL(stat(1, bad[k].stat) == before + 1);
	}
	/* nothing of this was answered, but the REJ/DREQ/SIDR cases below */
	assert_int_equal(stat(1, "tx_mads"), 0);
	raw_qp1_close(0, &r);
}

/*
 * Local comm IDs cannot be guessed from one seen: 64 ids' IDs are not a
 * run (they counted up from a random start: 63 steps of 1), and a REJ
 * naming an id by its ID but carrying another local comm ID than its
 * peer's is not the peer's: a REJ "of a REQ" was taken on the ID alone,
 * and ended an established connection.
 */
static void
test_comm_ids_forged_rej(void **state)
{
	struct srnic_cm_id *ids[64], *l;
	struct conn c;
	struct raw r;
	unsigned int i, ones = 0, tops = 0;
	uint32_t a_id, b_id;
	struct ev *v;

	(void)state;
	for (i = 0; i < RTE_DIM(ids); i++) {
		ids[i] = srnic_cm_create_id(S[0].cm, handler, &S[0]);
		assert_non_null(ids[i]);
		if (i > 0)
			ones += srnic_cm_id_local_id(ids[i]) - srnic_cm_id_local_id(ids[i - 1]) == 1;
		/* the top 4 bits of the IDs: 16 values seen over 64 draws */
		tops |= 1u << (srnic_cm_id_local_id(ids[i]) >> 28);
	}
	assert_true(ones <= 1);
	assert_true(__builtin_popcount(tops) >= 8);
	for (i = 0; i < RTE_DIM(ids); i++)
		destroy_id(ids[i]);

	l = listen_on(1, SID);
	conn_make(&c, NULL, 0);
	a_id = srnic_cm_id_local_id(c.a);
	b_id = srnic_cm_id_local_id(c.b);
	/* B goes deaf and dumb (its DREQ never reaches A); a forger takes its QP1 */
	drop(1, SRNIC_CM_ATTR_DREQ, 0, 1000);
	destroy_id(c.b);
	c.b = NULL;
	destroy_id(l);
	raw_qp1_open(1, &r);
	/* a REJ "of A's REQ" with A's ID right and B's wrong: dropped */
	srnic_cm_mad_init(r.buf, SRNIC_CM_ATTR_REJ, 0x77);
	srnic_cm_rej_local_comm_id_set(r.buf, b_id + 1);
	srnic_cm_rej_remote_comm_id_set(r.buf, a_id);
	srnic_cm_rej_msg_rejected_set(r.buf, SRNIC_CM_MSG_REQ);
	srnic_cm_rej_reason_set(r.buf, SRNIC_CM_REJ_CONSUMER_DEFINED);
	raw_send(&r, SRNIC_MAD_LEN);
	RUN_UNTIL(stat(0, "rx_unknown_comm_id") == 1);
	assert_int_equal(stat(0, "rx_rej"), 1);
	assert_int_equal(srnic_cm_id_state(c.a), SRNIC_CM_ESTABLISHED);
	assert_null(ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, c.a, 0));
	/* the same REJ with both IDs right is the peer's: taken */
	srnic_cm_rej_local_comm_id_set(r.buf, b_id);
	raw_send(&r, SRNIC_MAD_LEN);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, c.a, 0)) != NULL);
	assert_int_equal(v->state, SRNIC_CM_TIMEWAIT);
	assert_int_equal(stat(0, "rx_unknown_comm_id"), 1);
	raw_qp1_close(1, &r);
	conn_free(&c);
}

/*
 * Anyone who knows the GSI Q_Key (everyone) sends B's QP1
 * more than GRH + MAD: 600 and 1000 bytes (the audit's), then 257 (one
 * past a MAD). Each is B's engine's to drop (rx_ud_recv_too_small: class
 * D, QP1's receive WQEs stay posted), the CM sees nothing, QP1 stays in
 * RTS, and a connection is made afterwards as before. (Before: a
 * LOC_LEN_ERR CQE, QP1 in ERR, and every later connect timed out.)
 */
static void
test_qp1_big_datagram(void **state)
{
	static const uint32_t lens[] = { 600, 1000, SRNIC_MAD_LEN + 1 };
	int64_t small = srnic_dev_stat(S[1].dev, "rx_ud_recv_too_small");
	struct srnic_cm_id *l;
	struct raw r;
	struct conn c;
	unsigned int k;

	(void)state;
	raw_open(0, &r, false);
	for (k = 0; k < RTE_DIM(lens); k++) {
		srnic_cm_mad_init(r.buf, SRNIC_CM_ATTR_REQ, 0x1234);
		raw_send(&r, lens[k]);
		RUN_UNTIL(srnic_dev_stat(S[1].dev, "rx_ud_recv_too_small") == small + k + 1);
		assert_int_equal(srnic_qp_state(srnic_cm_gsi_qp(S[1].cm)), IBV_QPS_RTS);
	}
	assert_int_equal(stat(1, "rx_wc_err"), 0);
	assert_int_equal(stat(1, "rx_mads"), 0);
	assert_int_equal(stat(1, "qp1_recovered"), 0);
	raw_close(&r);
	l = listen_on(1, SID);
	conn_make(&c, l, 0);
	conn_data(&c);
	conn_disconnect(&c, 0);
	conn_free(&c);
	destroy_id(l);
}

/*
 * QP1 forced out of RTS: B's into ERR (what the engine does to a QP on a
 * fatal error), then A's into RESET. The next srnic_cm_poll() of each
 * brings it back (qp1_recovered 1 on each), and a SIDR exchange and a
 * connection go through both.
 */
static void
test_qp1_recovery(void **state)
{
	struct srnic_cm_sidr_req_param p;
	struct srnic_cm_sidr_rep_param rp;
	struct srnic_cm_id *l, *a;
	struct ibv_qp_attr qa;
	struct conn c;
	struct ev *v;

	(void)state;
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_ERR;
	assert_int_equal(srnic_modify_qp(srnic_cm_gsi_qp(S[1].cm), &qa, IBV_QP_STATE), 0);
	qa.qp_state = IBV_QPS_RESET;
	assert_int_equal(srnic_modify_qp(srnic_cm_gsi_qp(S[0].cm), &qa, IBV_QP_STATE), 0);
	RUN_UNTIL(stat(0, "qp1_recovered") == 1 && stat(1, "qp1_recovered") == 1);
	assert_int_equal(srnic_qp_state(srnic_cm_gsi_qp(S[0].cm)), IBV_QPS_RTS);
	assert_int_equal(srnic_qp_state(srnic_cm_gsi_qp(S[1].cm)), IBV_QPS_RTS);
	assert_int_equal(stat(0, "qp1_recover_failed") + stat(1, "qp1_recover_failed"), 0);
	assert_null(srnic_cm_gsi_qp(NULL));

	l = listen_on(1, SID);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	sidr_req_param(&p);
	assert_int_equal(srnic_cm_send_sidr_req(a, &p), 0);
	RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_SIDR_REQ_RECEIVED, NULL, 0)) != NULL);
	memset(&rp, 0, sizeof(rp));
	rp.qp_num = 0x123456;
	rp.qkey = 0x11223344;
	rp.status = SRNIC_CM_SIDR_SUCCESS;
	assert_int_equal(srnic_cm_send_sidr_rep(v->id, &rp), 0);
	destroy_id(v->id);
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_SIDR_REP_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.sidr_rep.qpn, 0x123456);
	destroy_id(a);
	conn_make(&c, l, 0);
	conn_data(&c);
	conn_disconnect(&c, 0);
	conn_free(&c);
	destroy_id(l);
	assert_int_equal(stat(0, "qp1_recovered") + stat(1, "qp1_recovered"), 2);
	assert_int_equal(stat(0, "req_resent") + stat(0, "sidr_req_resent"), 0);
}

/*
 * A QP1 receive completion in error (not a flush) with QP1 still
 * in RTS: the CM gave up the buffer, so QP1 lost a receive for good each
 * time. It comes of an error class that leaves the QP up, or of the engine
 * on another thread read between its CQE and its move to ERR. The test
 * does the engine's part on B's QP1, every posted WQE taken and completed
 * LOC_LEN_ERR without the move to ERR; B's CM posts each buffer again
 * (rx_wc_err_reposted), QP1 stays in RTS, and a connection goes through.
 * (Before: B's QP1 had no receive left, A's REQ was dropped as
 * rx_ud_no_recv_wqe and the connection timed out.)
 */
static void
test_qp1_rx_error(void **state)
{
	struct srnic_qp *qp1 = srnic_cm_gsi_qp(S[1].cm);
	int64_t norecv = srnic_dev_stat(S[1].dev, "rx_ud_no_recv_wqe");
	const struct srnic_rwqe *w;
	struct srnic_rwqe srq_buf;
	struct srnic_cm_id *l;
	struct ibv_wc wc;
	uint32_t next;
	int64_t n = 0;
	struct conn c;

	(void)state;
	while ((w = eng_rwqe_take(S[1].eng, qp1, &srq_buf, &next, 0, NULL)) != NULL) {
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = w->wr_id;
		wc.status = IBV_WC_LOC_LEN_ERR;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = SRNIC_GSI_QPN;
		eng_qp_cqe(S[1].eng, qp1, qp1->rcq, &wc, next);
		n++;
	}
	assert_true(n > 0);
	RUN_UNTIL(stat(1, "rx_wc_err") == n);
	assert_int_equal(stat(1, "rx_wc_err_reposted"), n);
	assert_int_equal(srnic_qp_state(qp1), IBV_QPS_RTS);
	l = listen_on(1, SID);
	conn_make(&c, l, 0);
	conn_data(&c);
	conn_disconnect(&c, 0);
	conn_free(&c);
	destroy_id(l);
	assert_int_equal(srnic_dev_stat(S[1].dev, "rx_ud_no_recv_wqe"), norecv);
	assert_int_equal(stat(1, "rx_wc_err"), n);
	assert_int_equal(stat(1, "qp1_recovered"), 0);
}

/* The destroyer: waits for the handler to block, destroys its id. */
static void *
destroyer(void *arg)
{
	struct srnic_cm_id *id;

	(void)arg;
	while ((id = __atomic_load_n(&T.blocked_id, __ATOMIC_ACQUIRE)) == NULL)
		rte_pause();
	__atomic_store_n(&T.destroy_called, true, __ATOMIC_RELEASE);
	T.destroy_rc = srnic_cm_destroy_id(id);
	T.done_at_return = __atomic_load_n(&T.handler_done, __ATOMIC_ACQUIRE);
	return NULL;
}

/* Another thread sends REQs while this one polls. */
static void *
connector(void *arg)
{
	struct srnic_cm_req_param p;
	unsigned int i;

	(void)arg;
	for (i = 0; i < NCONN; i++) {
		req_param(&p, 0x500 + i, SID + 1);
		T.req_rc[i] = srnic_cm_send_req(T.ids[i], &p);
	}
	return NULL;
}

/*
 * Threads (srnic_cm.h): a destroy from another thread waits for the
 * handler running for that id, and no event comes for it afterwards;
 * calls from another thread while this one polls.
 */
static void
test_threads(void **state)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *l, *a;
	pthread_t th;
	unsigned int i, nev;
	struct ev *v;

	(void)state;
	memset(&T, 0, sizeof(T));
	l = listen_on(1, SID);
	S[1].block_in_handler = true;
	assert_int_equal(pthread_create(&th, NULL, destroyer, NULL), 0);
	a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	req_param(&p, 0x95, SID);
	assert_int_equal(srnic_cm_send_req(a, &p), 0);
	RUN_UNTIL(__atomic_load_n(&T.handler_done, __ATOMIC_ACQUIRE));
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(T.destroy_rc, 0);
	assert_true(T.done_at_return);
	S[1].block_in_handler = false;
	/* the destroy in REQ_RCVD answered the REQ: REJ CONSUMER_DEFINED */
	RUN_UNTIL((v = ev_find(0, SRNIC_CM_EV_REJ_RECEIVED, a, 0)) != NULL);
	assert_int_equal(v->e.param.rej.reason, SRNIC_CM_REJ_CONSUMER_DEFINED);
	nev = S[1].nevs;
	for (i = 0; i < 256; i++)
		poll_all();
	assert_int_equal(S[1].nevs, nev); /* nothing for the destroyed id */
	destroy_id(a);
	destroy_id(l);
	/* REQs from another thread while this one polls */
	l = listen_on(1, SID + 1);
	for (i = 0; i < NCONN; i++) {
		T.ids[i] = srnic_cm_create_id(S[0].cm, handler, &S[0]);
		assert_non_null(T.ids[i]);
	}
	nev = ev_count(1, SRNIC_CM_EV_REQ_RECEIVED);
	assert_int_equal(pthread_create(&th, NULL, connector, NULL), 0);
	RUN_UNTIL(ev_count(1, SRNIC_CM_EV_REQ_RECEIVED) == nev + NCONN);
	assert_int_equal(pthread_join(th, NULL), 0);
	for (i = 0; i < NCONN; i++) {
		assert_int_equal(T.req_rc[i], 0);
		v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, nev + i);
		/* answered with REJ from here, the REQs' senders told */
		assert_int_equal(srnic_cm_send_rej(v->id, SRNIC_CM_REJ_NO_QP, NULL, 0, NULL, 0), 0);
	}
	RUN_UNTIL(ev_count(0, SRNIC_CM_EV_REJ_RECEIVED) == 1 + NCONN);
	for (i = 0; i < NCONN; i++) {
		v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, nev + i);
		destroy_id(v->id);
		destroy_id(T.ids[i]);
	}
	destroy_id(l);
}

/* ---- the golden: srnic's MADs with the capture's parameters are its MADs ---- */

static void
golden_cma_hdr(uint8_t *pd, uint16_t sport)
{
	memset(pd, 0, 36);
	pd[1] = 4 << 4;
	pd[2] = (uint8_t)(sport >> 8);
	pd[3] = (uint8_t)sport;
	pd[16] = 10; pd[17] = 77; pd[19] = 2;
	pd[32] = 10; pd[33] = 77; pd[35] = 3;
}

/* Find the MAD side s received with attribute attr, the n-th. */
static const uint8_t *
mad_of(int s, uint16_t attr, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < S[s].nmads; i++)
		if (srnic_mad_attr_id(S[s].mads[i]) == attr && n-- == 0)
			return S[s].mads[i];
	return NULL;
}

static void
golden_cmp(const uint8_t *mine, unsigned int gi)
{
	unsigned int k;

	assert_non_null(mine);
	for (k = 0; k < SRNIC_MAD_LEN; k++)
		if (mine[k] != cmg_mads[gi].mad[k])
			fail_msg("golden frame %u (%s): MAD byte %u: srnic %#x, rxe %#x",
				 cmg_mads[gi].frame, srnic_cm_attr_name(cmg_mads[gi].attr), k,
				 mine[k], cmg_mads[gi].mad[k]);
}

static void
test_golden(void **state)
{
	const char *dir = getenv("SRNIC_GOLDEN_DIR");
	/* conn 1: frames 1, 2, 3, then the passive's DREQ 73 and DREP 74;
	 * conn 2: frames 24, 25, 26, then the active's DREQ 71 and DREP 72 */
	static const struct {
		unsigned int req, rep, rtu, dreq, drep;
		int dreq_from;
	} g[2] = { { 0, 1, 2, 8, 9, 1 }, { 3, 4, 5, 6, 7, 0 } };
	struct srnic_cm_id *l;
	unsigned int k;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(cmg_load(dir), 0);
	srnic_cm_set_tid_high(S[0].cm, 2);
	srnic_cm_set_tid_high(S[1].cm, 2);
	/* the CA GUIDs: the EUI-64 of rxe's MACs */
	assert_int_equal(srnic_cm_ca_guid(S[0].cm), cmg_mads[0].ca_guid);
	assert_int_equal(srnic_cm_ca_guid(S[1].cm), cmg_mads[1].ca_guid);
	l = listen_on(1, SID);
	for (k = 0; k < 2; k++) {
		const struct cmg_mad *rq = &cmg_mads[g[k].req], *rp = &cmg_mads[g[k].rep];
		struct srnic_cm_req_param p;
		struct srnic_cm_rep_param rpp;
		struct srnic_cm_id *a, *b, *d;
		uint8_t pd[36];
		struct ev *v;
		unsigned int nrx0 = S[0].nmads, nrx1 = S[1].nmads;

		a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
		assert_int_equal(srnic_cm_id_set_local_id(a, rq->local_id), 0);
		memset(&p, 0, sizeof(p));
		p.path.sgid = S[0].gid;
		p.path.dgid = S[1].gid;
		p.path.flow_label = rq->flow_label;
		p.path.hop_limit = rq->hop_limit;
		p.path.mtu = (enum ibv_mtu)rq->mtu;
		p.path.packet_life_time = 18; /* rdma_cm's for RoCE: ACK timeout 19 */
		p.service_id = rq->service_id;
		p.qp_num = rq->qpn;
		p.qp_type = IBV_QPT_RC;
		p.starting_psn = rq->psn;
		p.remote_cm_response_timeout = rq->remote_cm_to;
		p.local_cm_response_timeout = rq->local_cm_to;
		p.retry_count = rq->retry;
		p.rnr_retry_count = rq->rnr_retry;
		p.max_cm_retries = rq->max_cm_retries;
		golden_cma_hdr(pd, rq->pdata_sport);
		p.private_data = pd;
		p.private_data_len = sizeof(pd);
		S[1].force_local_id = rp->local_id;
		assert_int_equal(srnic_cm_send_req(a, &p), 0);
		RUN_UNTIL((v = ev_find(1, SRNIC_CM_EV_REQ_RECEIVED, NULL, k)) != NULL);
		b = v->id;
		assert_int_equal(srnic_cm_id_local_id(b), rp->local_id);
		memset(&rpp, 0, sizeof(rpp));
		rpp.qp_num = rp->qpn;
		rpp.starting_psn = rp->psn;
		rpp.rnr_retry_count = rp->rnr_retry;
		assert_int_equal(srnic_cm_send_rep(b, &rpp), 0);
		RUN_UNTIL(ev_find(0, SRNIC_CM_EV_REP_RECEIVED, a, 0) != NULL);
		assert_int_equal(srnic_cm_send_rtu(a, NULL, 0), 0);
		RUN_UNTIL(ev_find(1, SRNIC_CM_EV_RTU_RECEIVED, b, 0) != NULL);
		d = g[k].dreq_from == 0 ? a : b;
		assert_int_equal(srnic_cm_send_dreq(d, NULL, 0), 0);
		RUN_UNTIL((v = ev_find(1 - g[k].dreq_from, SRNIC_CM_EV_DREQ_RECEIVED, NULL, 0)) !=
			  NULL);
		assert_int_equal(srnic_cm_send_drep(v->id, NULL, 0), 0);
		RUN_UNTIL(ev_find(g[k].dreq_from, SRNIC_CM_EV_DREP_RECEIVED, d, 0) != NULL);
		/* B got REQ, RTU (and the DREQ or DREP); A the REP (and the other) */
		golden_cmp(mad_of(1, SRNIC_CM_ATTR_REQ, 0), g[k].req);
		golden_cmp(mad_of(0, SRNIC_CM_ATTR_REP, 0), g[k].rep);
		golden_cmp(mad_of(1, SRNIC_CM_ATTR_RTU, 0), g[k].rtu);
		golden_cmp(mad_of(1 - g[k].dreq_from, SRNIC_CM_ATTR_DREQ, 0), g[k].dreq);
		golden_cmp(mad_of(g[k].dreq_from, SRNIC_CM_ATTR_DREP, 0), g[k].drep);
		assert_int_equal(S[0].nmads - nrx0, 2);
		assert_int_equal(S[1].nmads - nrx1, 3);
		/* the next connection's MADs are told apart by their own log */
		S[0].nmads = S[1].nmads = 0;
		destroy_id(a); /* in TIMEWAIT: the CM keeps it */
		destroy_id(b);
	}
	destroy_id(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_golden, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_connect_link_local, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rej_no_listener, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rej_bad_mtu, setup, teardown),
		cmocka_unit_test(test_log_type),
		cmocka_unit_test_setup_teardown(test_user_rej, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mra_late_rep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mra_delayed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dreq_passive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dreq_both, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dreq_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_conn, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listener_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sidr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lossy_each_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dup_req, setup, teardown),
		cmocka_unit_test_setup_teardown(test_req_dead_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rej_timeout_passive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_listener_destroyed_mid_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_req_dropped_enomem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_req_expired, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_mads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp1_big_datagram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp1_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_comm_ids_forged_rej, setup, teardown),
		cmocka_unit_test_setup_teardown(test_qp1_rx_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
