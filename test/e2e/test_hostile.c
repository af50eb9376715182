/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A hostile third host on the segment: A (10.77.0.2) and B
 * (10.77.0.3) are two srnic devices over a net_ring pair in this process,
 * each with its CM; the attacker is neither (52:54:0a:4d:00:66, 10.77.0.66)
 * and its frames, built here byte for byte (Ethernet, IPv4, UDP 4791, BTH,
 * DETH, MAD, ICRC through lib/wire; ARP by hand), go into B's RX ring
 * beside A's traffic. While A WRITEs 2 MiB to B and READs it back over a
 * connection the CMs made (ESTABLISHED on both sides), the attacker sends
 * B, round after round:
 *   - datagrams of 600 and 1000 bytes to QP1 with the GSI Q_Key:
 *     dropped by the engine (rx_ud_recv_too_small), QP1 stays in RTS;
 *   - REQs and SIDR_REQs with fresh comm IDs to B's two listeners:
 *     the consumer's backlog holds BACKLOG of each, the rest go without a
 *     REJ (req_dropped), the REQs' ids expire (req_expired) when the
 *     attacker's own timeouts say it has given up;
 *   - ARP requests for B, gratuitous ARPs for addresses B does not use and
 *     one claiming A's address: each request answered once, no
 *     address learned, A's entry and B's QP routes untouched;
 *   - REJs and DREQs naming B's established id by its comm ID but with a
 *     guessed peer ID: not taken (rx_unknown_comm_id; the DREQ
 *     gets the DREP Linux gives an unknown DREQ, dup_dreq).
 * Then the transfer is checked byte for byte, the connection is still
 * ESTABLISHED and disconnects cleanly, and a new connection A -> B is made
 * and carries a SEND and a READ. The test waits for conditions only; the
 * attack runs until the transfer is done and HOSTILE_MIN_ROUNDS rounds went.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_random.h>
#include <rte_ring.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnic_link.h"
#include "srnic_lossy.h"
#include "srnic_mad.h"
#include "srnic_wire.h"
#include "test_eal.h"

#define WAIT_S 20                  /* generous: ASan on a loaded 2-core host */
#define LINK_NAME "hostile"
#define RING_SIZE 4096
#define ATK_POOL_MBUFS 4095        /* the attacker's frames in flight at most */
#define ATK_POOL_CACHE 64
#define SID_RC 0x0000000001064853ull  /* RDMA_PS_TCP, port 18515 */
#define SID_UD 0x0000000002114853ull  /* RDMA_PS_UDP, port 18515 */
#define BACKLOG 8                  /* the consumer's room per listener (rdma_listen's) */
#define HOSTILE_MIN_ROUNDS 256     /* attack rounds at least, each every kind once */
#define XFER_LEN (2u << 20)        /* WRITE A -> B, then READ back */
#define XFER_CHUNK (64u << 10)
#define XFER_DEPTH 16              /* WRs outstanding at most */
#define QP_WR 64
#define CQ_LEN 256
#define MSG_LEN 3000               /* the second connection's SEND */
#define BIG_UD_1 600               /* the big datagrams: more than GRH + MAD */
#define BIG_UD_2 1000
#define ATK_IP_HOST 66
#define ATK_UNUSED_IP_BASE 100     /* 10.77.0.100.. : addresses nobody uses */
#define ATK_UNUSED_IPS 16
#define ATK_REQ_RESP_TIMEOUT 17    /* the forged REQs' response time: 537 ms */
#define ATK_REQ_ACK_TIMEOUT 1      /* packet life time 0 */
#define PLT 8                      /* the legitimate paths' packet life time: 1 ms */

static const struct rte_ether_addr macs[2] = {
	{ { 0x52, 0x54, 0x0a, 0x4d, 0x00, 0x02 } },
	{ { 0x52, 0x54, 0x0a, 0x4d, 0x00, 0x03 } },
};
static const struct rte_ether_addr atk_mac = { { 0x52, 0x54, 0x0a, 0x4d, 0x00, ATK_IP_HOST } };
static const uint8_t net[3] = { 10, 77, 0 };

/* A listener's consumer, as rdma_cm's: requests it has not taken count
 * against its backlog; past it the handler says -ENOMEM (no REJ). */
struct lsn {
	struct srnic_cm_id *id;
	unsigned int queued;       /* delivered, not taken, not expired */
	unsigned int peak;
	unsigned int held;         /* requests it made room for */
	unsigned int refused;      /* -ENOMEM */
	unsigned int expired;
	bool take_next;            /* the application waits for a request */
	struct srnic_cm_id *taken;
	struct srnic_cm_id *sidr_ids[BACKLOG];
	unsigned int nsidr;
};

#define MAX_EVS 64

struct ev {
	enum srnic_cm_event_type type;
	struct srnic_cm_id *id;
};

struct side {
	struct srnic_dev *dev;
	struct srnic_pd *pd;
	struct srnic_engine *eng;
	struct srnic_cm *cm;
	union ibv_gid gid;
	struct ev evs[MAX_EVS];
	unsigned int nevs;
};

static struct side S[2];
static struct lsn L_rc, L_ud;
static struct srnic_lossy *a_tap;
static struct rte_ring *b_rx;
static struct rte_mempool *atk_pool;
static union ibv_gid atk_gid;

/* What A's port sees of B's ARP (the tap on A's RX). */
static struct {
	unsigned int replies_to_atk;
} tap;

/* ---- fixture ---- */

static bool
is_lsn(const void *ctx)
{
	return ctx == &L_rc || ctx == &L_ud;
}

static int
lsn_event(struct lsn *l, struct srnic_cm_id *id, const struct srnic_cm_event *e)
{
	switch (e->type) {
	case SRNIC_CM_EV_REQ_RECEIVED:
	case SRNIC_CM_EV_SIDR_REQ_RECEIVED:
		if (l->take_next && l->taken == NULL) {
			l->taken = id;
			return 0;
		}
		if (l->queued >= BACKLOG) {
			l->refused++;
			return -ENOMEM;
		}
		l->queued++;
		l->held++;
		if (l->queued > l->peak)
			l->peak = l->queued;
		if (e->type == SRNIC_CM_EV_SIDR_REQ_RECEIVED)
			l->sidr_ids[l->nsidr++] = id;
		return 0;
	case SRNIC_CM_EV_REQ_EXPIRED:
		/* the room it took is free again; the id goes (nonzero) */
		l->queued--;
		l->expired++;
		return 1;
	default:
		fail_msg("listener id: unexpected %s", srnic_cm_event_str(e->type));
	}
	return 0;
}

static int
handler(struct srnic_cm_id *id, const struct srnic_cm_event *e)
{
	void *ctx = srnic_cm_id_context(id);
	struct side *s;

	if (is_lsn(ctx))
		return lsn_event(ctx, id, e);
	s = ctx;
	assert_true(s->nevs < MAX_EVS);
	s->evs[s->nevs++] = (struct ev){ .type = e->type, .id = id };
	return 0;
}

static enum srnic_lossy_action
a_filter(const struct rte_mbuf *m, void *arg)
{
	uint8_t f[sizeof(struct rte_ether_hdr) + sizeof(struct rte_arp_hdr)];
	const struct rte_ether_hdr *eth;
	const struct rte_arp_hdr *arp;

	(void)arg;
	if (rte_pktmbuf_pkt_len(m) < sizeof(f))
		return SRNIC_LOSSY_PASS;
	eth = rte_pktmbuf_read(m, 0, sizeof(f), f);
	if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP))
		return SRNIC_LOSSY_PASS;
	arp = (const struct rte_arp_hdr *)(eth + 1);
	if (arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REPLY) &&
	    rte_is_same_ether_addr(&arp->arp_data.arp_tha, &atk_mac))
		tap.replies_to_atk++;
	return SRNIC_LOSSY_PASS;
}

static void
poll_all(void)
{
	int i;

	for (i = 0; i < 2; i++)
		srnic_engine_poll(S[i].eng);
	for (i = 0; i < 2; i++)
		if (S[i].cm != NULL)
			srnic_cm_poll(S[i].cm, NULL);
}

static uint64_t
deadline_in_s(unsigned int s)
{
	return rte_get_timer_cycles() + (uint64_t)s * rte_get_timer_hz();
}

#define RUN_UNTIL(cond) do { \
	uint64_t dl__ = deadline_in_s(WAIT_S); \
	while (!(cond)) { \
		if (rte_get_timer_cycles() > dl__) \
			fail_msg("timeout waiting for %s (%s:%d)", #cond, __FILE__, __LINE__); \
		poll_all(); \
	} \
} while (0)

static struct ev *
ev_find(int s, enum srnic_cm_event_type t, const struct srnic_cm_id *id)
{
	unsigned int i;

	for (i = 0; i < S[s].nevs; i++)
		if (S[s].evs[i].type == t && S[s].evs[i].id == id)
			return &S[s].evs[i];
	return NULL;
}

/* Destroy id and forget its events: the next connection's ids may get the
 * same addresses (the release build's malloc hands them out again at once),
 * and ev_find() must not take the old connection's REP for the new one's. */
static void
id_destroy(struct srnic_cm_id *id)
{
	unsigned int s, i;

	assert_int_equal(srnic_cm_destroy_id(id), 0);
	for (s = 0; s < 2; s++)
		for (i = 0; i < S[s].nevs; i++)
			if (S[s].evs[i].id == id)
				S[s].evs[i].id = NULL;
}

static int64_t
cm_stat(int s, const char *name)
{
	int64_t v = srnic_cm_stat(S[s].cm, name);

	assert_true(v >= 0);
	return v;
}

static int64_t
dev_stat(int s, const char *name)
{
	int64_t v = srnic_dev_stat(S[s].dev, name);

	assert_true(v >= 0);
	return v;
}

static void
gid_of(union ibv_gid *g, uint8_t host)
{
	*g = S[1].gid; /* v4-mapped: the last 4 bytes are the address */
	g->raw[15] = host;
}

static int
group_setup(void **state)
{
	struct srnic_lossy_conf lc;
	uint16_t port[2];
	int i;

	(void)state;
	if (srnic_test_eal_init(LINK_NAME, 0, NULL) != 0 ||
	    srnic_link_ring_pair(LINK_NAME, 1, RING_SIZE, &port[0], &port[1]) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		struct srnic_dev_conf c;

		memset(&c, 0, sizeof(c));
		c.port_id = port[i];
		c.nb_engines = 1;
		c.mtu = 1500; /* path MTU 1024 */
		c.ip_ver = 4;
		memcpy(c.ip, net, sizeof(net));
		c.ip[3] = (uint8_t)(2 + i);
		c.mac = &macs[i];
		c.name = i == 0 ? "hsa" : "hsb";
		S[i].dev = srnic_dev_create(&c);
		if (S[i].dev == NULL)
			return -1;
		S[i].pd = srnic_alloc_pd(S[i].dev);
		S[i].eng = srnic_dev_engine(S[i].dev, 0);
		if (S[i].pd == NULL || S[i].eng == NULL ||
		    srnic_dev_gid(S[i].dev, SRNIC_GID_INDEX_IP, &S[i].gid) != 0)
			return -1;
	}
	for (i = 0; i < 2; i++)
		if (srnic_dev_add_neigh(S[i].dev, &S[1 - i].gid, &macs[1 - i]) != 0)
			return -1;
	gid_of(&atk_gid, ATK_IP_HOST);
	/* the pair's rings are named: B receives what is put on A -> B */
	b_rx = rte_ring_lookup(LINK_NAME "_ab0");
	atk_pool = rte_pktmbuf_pool_create("hostile_atk", ATK_POOL_MBUFS, ATK_POOL_CACHE, 0,
					   RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	memset(&lc, 0, sizeof(lc));
	lc.seed = 1;
	lc.filter = a_filter;
	a_tap = srnic_lossy_attach(port[0], &lc);
	if (b_rx == NULL || atk_pool == NULL || a_tap == NULL)
		return -1;
	for (i = 0; i < 2; i++) {
		S[i].cm = srnic_cm_create(S[i].dev, S[i].eng);
		if (S[i].cm == NULL)
			return -1;
	}
	return 0;
}

static int
group_teardown(void **state)
{
	int i;

	(void)state;
	srnic_lossy_detach(a_tap);
	for (i = 0; i < 2; i++) {
		srnic_dealloc_pd(S[i].pd);
		srnic_dev_destroy(S[i].dev);
	}
	rte_mempool_free(atk_pool);
	rte_eal_cleanup();
	return 0;
}

/* ---- the legitimate side: QPs and connections ---- */

struct conn {
	struct srnic_cm_id *a, *b;
	struct srnic_cq *cq[2];
	struct srnic_qp *qp[2];
	struct srnic_mr *mr[2];
	uint8_t *buf[2];
	size_t len[2];
};

static void
qp_make(struct conn *c, int s, size_t len)
{
	struct srnic_qp_init_attr qa;

	c->cq[s] = srnic_create_cq(S[s].dev, CQ_LEN, S[s].eng);
	assert_non_null(c->cq[s]);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = c->cq[s];
	qa.max_send_wr = qa.max_recv_wr = QP_WR;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	c->qp[s] = srnic_create_qp(S[s].pd, &qa);
	assert_non_null(c->qp[s]);
	c->buf[s] = rte_zmalloc("hostile", len, 64);
	assert_non_null(c->buf[s]);
	c->len[s] = len;
	c->mr[s] = srnic_reg_mr(S[s].pd, c->buf[s], len,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(c->mr[s]);
}

static void
qp_move(struct srnic_cm_id *id, struct srnic_qp *qp, enum ibv_qp_state st, uint32_t rq_psn)
{
	struct ibv_qp_attr a;
	int mask = 0;

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	assert_int_equal(srnic_cm_init_qp_attr(id, &a, &mask), 0);
	if (rq_psn != 0)
		a.rq_psn = rq_psn; /* the passive RTR before its REP: the REP's PSN */
	assert_int_equal(srnic_modify_qp(qp, &a, mask), 0);
	assert_int_equal(srnic_qp_state(qp), st);
}

/* REQ .. RTU to B's RC listener, the QPs moved on the way as rdma_cm does;
 * B's application takes the next request its listener is given. */
static void
conn_make(struct conn *c, size_t len_a, size_t len_b)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_rep_param rp;
	uint32_t b_psn;

	memset(c, 0, sizeof(*c));
	qp_make(c, 0, len_a);
	qp_make(c, 1, len_b);
	c->a = srnic_cm_create_id(S[0].cm, handler, &S[0]);
	assert_non_null(c->a);
	memset(&p, 0, sizeof(p));
	p.path.sgid = S[0].gid;
	p.path.dgid = S[1].gid;
	p.path.hop_limit = 64;
	p.path.mtu = IBV_MTU_1024;
	p.path.packet_life_time = PLT;
	p.service_id = SID_RC;
	p.qp_num = srnic_qp_num(c->qp[0]);
	p.qp_type = IBV_QPT_RC;
	p.starting_psn = 0x100000 + p.qp_num;
	p.responder_resources = 4;
	p.initiator_depth = 4;
	p.remote_cm_response_timeout = 15; /* 134 ms */
	p.local_cm_response_timeout = 15;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.max_cm_retries = 8;
	L_rc.taken = NULL;
	L_rc.take_next = true;
	assert_int_equal(srnic_cm_send_req(c->a, &p), 0);
	qp_move(c->a, c->qp[0], IBV_QPS_INIT, 0);
	RUN_UNTIL(L_rc.taken != NULL);
	L_rc.take_next = false;
	c->b = L_rc.taken;
	srnic_cm_id_set_context(c->b, &S[1]);
	assert_int_equal(srnic_cm_id_state(c->b), SRNIC_CM_REQ_RCVD);
	assert_int_equal(srnic_cm_id_remote_id(c->b), srnic_cm_id_local_id(c->a));
	b_psn = 0x200000 + srnic_qp_num(c->qp[1]);
	qp_move(c->b, c->qp[1], IBV_QPS_INIT, 0);
	qp_move(c->b, c->qp[1], IBV_QPS_RTR, b_psn);
	memset(&rp, 0, sizeof(rp));
	rp.qp_num = srnic_qp_num(c->qp[1]);
	rp.starting_psn = b_psn;
	rp.responder_resources = 4;
	rp.initiator_depth = 4;
	rp.rnr_retry_count = 7;
	assert_int_equal(srnic_cm_send_rep(c->b, &rp), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_REP_RECEIVED, c->a) != NULL);
	qp_move(c->a, c->qp[0], IBV_QPS_RTR, 0);
	qp_move(c->a, c->qp[0], IBV_QPS_RTS, 0);
	assert_int_equal(srnic_cm_send_rtu(c->a, NULL, 0), 0);
	RUN_UNTIL(ev_find(1, SRNIC_CM_EV_RTU_RECEIVED, c->b) != NULL);
	assert_int_equal(srnic_cm_id_state(c->a), SRNIC_CM_ESTABLISHED);
	assert_int_equal(srnic_cm_id_state(c->b), SRNIC_CM_ESTABLISHED);
	qp_move(c->b, c->qp[1], IBV_QPS_RTS, 0);
}

/* DREQ from A, DREP from B, both through the timewait; then all goes. */
static void
conn_close(struct conn *c)
{
	int s;

	assert_int_equal(srnic_cm_send_dreq(c->a, NULL, 0), 0);
	RUN_UNTIL(ev_find(1, SRNIC_CM_EV_DREQ_RECEIVED, c->b) != NULL);
	assert_int_equal(srnic_cm_send_drep(c->b, NULL, 0), 0);
	RUN_UNTIL(ev_find(0, SRNIC_CM_EV_TIMEWAIT_EXIT, c->a) != NULL &&
		  ev_find(1, SRNIC_CM_EV_TIMEWAIT_EXIT, c->b) != NULL);
	id_destroy(c->a);
	id_destroy(c->b);
	for (s = 0; s < 2; s++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		struct ibv_wc wc[8];

		assert_int_equal(srnic_modify_qp(c->qp[s], &a, IBV_QP_STATE), 0);
		poll_all();
		while (srnic_poll_cq(c->cq[s], RTE_DIM(wc), wc) > 0)
			;
		assert_int_equal(srnic_destroy_qp(c->qp[s]), 0);
		assert_int_equal(srnic_destroy_cq(c->cq[s]), 0);
		assert_int_equal(srnic_dereg_mr(c->mr[s]), 0);
		rte_free(c->buf[s]);
	}
}

static int
post_rdma(struct conn *c, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t off_a, uint32_t off_b,
	  uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)c->buf[0] + off_a, .length = len,
			       .lkey = srnic_mr_lkey(c->mr[0]) };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)c->buf[1] + off_b;
	wr.wr.rdma.rkey = srnic_mr_rkey(c->mr[1]);
	return srnic_post_send(c->qp[0], &wr, &bad);
}

/* The transfer over c: XFER_LEN WRITTEN from A's first half to B, then
 * READ back into A's second half, XFER_DEPTH chunks at a time. */
struct xfer {
	unsigned int posted, done; /* chunks: WRITEs first, then READs */
};

#define XFER_CHUNKS (XFER_LEN / XFER_CHUNK)

static bool
xfer_step(struct conn *c, struct xfer *x)
{
	struct ibv_wc wc[XFER_DEPTH];
	int n, i;

	n = srnic_poll_cq(c->cq[0], XFER_DEPTH, wc);
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			fail_msg("transfer chunk %" PRIu64 ": %s", wc[i].wr_id,
				 srnic_wc_status_str(wc[i].status));
		assert_int_equal(wc[i].wr_id, x->done);
		x->done++;
	}
	/* the READs start once every WRITE is complete */
	while (x->posted < 2 * XFER_CHUNKS && x->posted - x->done < XFER_DEPTH &&
	       (x->posted < XFER_CHUNKS || x->done >= XFER_CHUNKS)) {
		uint32_t k = x->posted % XFER_CHUNKS;

		if (x->posted < XFER_CHUNKS)
			assert_int_equal(post_rdma(c, IBV_WR_RDMA_WRITE, x->posted, k * XFER_CHUNK,
						   k * XFER_CHUNK, XFER_CHUNK), 0);
		else
			assert_int_equal(post_rdma(c, IBV_WR_RDMA_READ, x->posted,
						   XFER_LEN + k * XFER_CHUNK, k * XFER_CHUNK,
						   XFER_CHUNK), 0);
		x->posted++;
	}
	return x->done == 2 * XFER_CHUNKS;
}

/* ---- the attacker ---- */

struct atk {
	unsigned int rounds;
	unsigned int big_ud, reqs, sidr_reqs, arp_req_b, garp, rejs, dreqs;
	uint32_t psn;
	uint32_t b_id, b_qpn, a_id; /* B's established id as the attacker saw it; A's, to miss */
};

static bool
atk_inject(struct rte_mbuf *m)
{
	if (rte_ring_enqueue(b_rx, m) == 0)
		return true;
	rte_pktmbuf_free(m); /* B's ring full: not sent, not counted */
	return false;
}

/* A UD SEND_ONLY from the attacker's QP1 to B's QP1 with the GSI Q_Key,
 * len bytes of payload from p. */
static bool
atk_ud(struct atk *t, const uint8_t *p, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(atk_pool);
	struct srnic_route r;
	uint8_t *bth, *pay;

	assert_non_null(m);
	memset(&r, 0, sizeof(r));
	r.src_mac = atk_mac;
	r.dst_mac = macs[1];
	r.ip_ver = 4;
	r.ttl = 64;
	r.udp_sport = srnic_roce_ud_sport(SRNIC_GSI_QPN);
	memcpy(r.src_ip, &atk_gid.raw[12], 4);
	memcpy(r.dst_ip, &S[1].gid.raw[12], 4);
	bth = srnic_pkt_init(m, &r, SRNIC_OP_UD_SEND_ONLY, (uint16_t)t->psn);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, SRNIC_GSI_QPN);
	srnic_bth_set_psn(bth, t->psn++);
	srnic_deth_set_qkey(bth + SRNIC_BTH_LEN, SRNIC_GSI_QKEY);
	srnic_deth_set_sqpn(bth + SRNIC_BTH_LEN, SRNIC_GSI_QPN);
	pay = (uint8_t *)rte_pktmbuf_append(m, len);
	assert_non_null(pay);
	memcpy(pay, p, len);
	assert_int_equal(srnic_pkt_finish(m, atk_pool), 0);
	return atk_inject(m);
}

/* An ARP of op from (sha, sip) about tip, to dst. */
static bool
atk_arp(uint16_t op, const struct rte_ether_addr *dst, const struct rte_ether_addr *sha,
	uint8_t sip_host, uint8_t tip_host)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(atk_pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;
	uint8_t ip[4] = { net[0], net[1], net[2], 0 };

	assert_non_null(m);
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*arp));
	assert_non_null(eth);
	eth->dst_addr = *dst;
	eth->src_addr = atk_mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp = (struct rte_arp_hdr *)(eth + 1);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = *sha;
	ip[3] = sip_host;
	memcpy(&arp->arp_data.arp_sip, ip, 4);
	memset(&arp->arp_data.arp_tha, 0, sizeof(arp->arp_data.arp_tha));
	ip[3] = tip_host;
	memcpy(&arp->arp_data.arp_tip, ip, 4);
	return atk_inject(m);
}

/* A REQ from the attacker to B's RC listener with a fresh comm ID: a
 * well-formed one (its path the attacker's), whose sender gives up after
 * one try of ATK_REQ_RESP_TIMEOUT. */
static bool
atk_req(struct atk *t)
{
	uint8_t m[SRNIC_MAD_LEN];

	srnic_cm_mad_init(m, SRNIC_CM_ATTR_REQ, rte_rand());
	srnic_cm_req_local_comm_id_set(m, (uint32_t)rte_rand() | 1);
	srnic_cm_req_service_id_set(m, SID_RC);
	srnic_cm_req_local_ca_guid_set(m, srnic_cm_guid_from_mac(atk_mac.addr_bytes));
	srnic_cm_req_local_qpn_set(m, 0x100 + (t->reqs & 0xfff));
	srnic_cm_req_resp_resources_set(m, 1);
	srnic_cm_req_init_depth_set(m, 1);
	srnic_cm_req_remote_cm_resp_timeout_set(m, ATK_REQ_RESP_TIMEOUT);
	srnic_cm_req_transport_set(m, SRNIC_CM_TRANSPORT_RC);
	srnic_cm_req_starting_psn_set(m, t->reqs & 0xffffff);
	srnic_cm_req_local_cm_resp_timeout_set(m, ATK_REQ_RESP_TIMEOUT);
	srnic_cm_req_retry_count_set(m, 7);
	srnic_cm_req_pkey_set(m, SRNIC_PKEY_DEFAULT);
	srnic_cm_req_path_mtu_set(m, IBV_MTU_1024);
	srnic_cm_req_rnr_retry_set(m, 7);
	srnic_cm_req_max_cm_retries_set(m, 0);
	srnic_cm_req_primary_local_lid_set(m, SRNIC_CM_LID_PERMISSIVE);
	srnic_cm_req_primary_remote_lid_set(m, SRNIC_CM_LID_PERMISSIVE);
	memcpy(srnic_cm_req_primary_local_gid(m), atk_gid.raw, SRNIC_CM_GID_LEN);
	memcpy(srnic_cm_req_primary_remote_gid(m), S[1].gid.raw, SRNIC_CM_GID_LEN);
	srnic_cm_req_primary_hop_limit_set(m, 64);
	srnic_cm_req_primary_subnet_local_set(m, 1);
	srnic_cm_req_primary_local_ack_timeout_set(m, ATK_REQ_ACK_TIMEOUT);
	return atk_ud(t, m, sizeof(m));
}

static bool
atk_sidr_req(struct atk *t)
{
	uint8_t m[SRNIC_MAD_LEN];

	srnic_cm_mad_init(m, SRNIC_CM_ATTR_SIDR_REQ, rte_rand());
	srnic_cm_sidr_req_request_id_set(m, (uint32_t)rte_rand() | 1);
	srnic_cm_sidr_req_pkey_set(m, SRNIC_PKEY_DEFAULT);
	srnic_cm_sidr_req_service_id_set(m, SID_UD);
	return atk_ud(t, m, sizeof(m));
}

/* A guess at A's comm ID: anything but A's (the 2^-32 hit is the one
 * attack no CM can refuse; the test must not depend on luck). */
static uint32_t
atk_guess(const struct atk *t)
{
	uint32_t g = (uint32_t)rte_rand();

	return g == t->a_id || g == 0 ? t->a_id + 1 : g;
}

/* A REJ and a DREQ naming B's established id by its comm ID, with a
 * guessed one for A's. */
static void
atk_forge(struct atk *t)
{
	uint8_t m[SRNIC_MAD_LEN];

	srnic_cm_mad_init(m, SRNIC_CM_ATTR_REJ, rte_rand());
	srnic_cm_rej_local_comm_id_set(m, atk_guess(t));
	srnic_cm_rej_remote_comm_id_set(m, t->b_id);
	srnic_cm_rej_msg_rejected_set(m, t->rounds & 1 ? SRNIC_CM_MSG_REP : SRNIC_CM_MSG_OTHER);
	srnic_cm_rej_reason_set(m, SRNIC_CM_REJ_CONSUMER_DEFINED);
	t->rejs += atk_ud(t, m, sizeof(m));
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_DREQ, rte_rand());
	srnic_cm_dreq_local_comm_id_set(m, atk_guess(t));
	srnic_cm_dreq_remote_comm_id_set(m, t->b_id);
	srnic_cm_dreq_remote_qpn_set(m, t->b_qpn);
	t->dreqs += atk_ud(t, m, sizeof(m));
}

/* One round: every attack once. */
static void
atk_round(struct atk *t)
{
	static const struct rte_ether_addr bcast = { { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	uint8_t junk[BIG_UD_2];
	uint8_t unused = (uint8_t)(ATK_UNUSED_IP_BASE + t->rounds % ATK_UNUSED_IPS);
	struct rte_ether_addr stranger = atk_mac;

	/* datagrams: more than QP1's GRH + 256-byte receive buffers */
	memset(junk, 0xA5, sizeof(junk));
	srnic_cm_mad_init(junk, SRNIC_CM_ATTR_REQ, rte_rand());
	t->big_ud += atk_ud(t, junk, BIG_UD_1);
	t->big_ud += atk_ud(t, junk, BIG_UD_2);
	/* REQs and SIDR_REQs with fresh comm IDs */
	t->reqs += atk_req(t);
	t->sidr_reqs += atk_sidr_req(t);
	/* ARP: a request for B (answered), a gratuitous ARP for an
	 * address nobody uses from a stranger's MAC, and one saying A's
	 * address is the attacker's */
	t->arp_req_b += atk_arp(RTE_ARP_OP_REQUEST, &bcast, &atk_mac, ATK_IP_HOST,
				S[1].gid.raw[15]);
	stranger.addr_bytes[4] = unused;
	t->garp += atk_arp(RTE_ARP_OP_REQUEST, &bcast, &stranger, unused, unused);
	t->garp += atk_arp(RTE_ARP_OP_REPLY, &bcast, &atk_mac, S[0].gid.raw[15],
			   S[0].gid.raw[15]);
	/* REJ and DREQ with a guessed peer ID */
	atk_forge(t);
	t->rounds++;
}

/* ---- the test ---- */

static void
listen_with_backlog(struct lsn *l, uint64_t sid)
{
	memset(l, 0, sizeof(*l));
	l->id = srnic_cm_create_id(S[1].cm, handler, l);
	assert_non_null(l->id);
	assert_int_equal(srnic_cm_listen(l->id, sid, 0), 0);
}

static void
test_hostile_peer(void **state)
{
	int64_t small0 = dev_stat(1, "rx_ud_recv_too_small");
	struct ibv_sge sge;
	struct ibv_recv_wr rw, *brw;
	struct rte_ether_addr mac;
	struct conn c1, c2;
	struct xfer x = { 0 };
	struct atk t = { 0 };
	uint64_t dl;
	unsigned int i;
	bool done = false;

	(void)state;
	listen_with_backlog(&L_rc, SID_RC);
	listen_with_backlog(&L_ud, SID_UD);
	/* A's connection to B, before the attacker starts */
	conn_make(&c1, 2 * XFER_LEN, XFER_LEN);
	for (i = 0; i < XFER_LEN; i++)
		c1.buf[0][i] = (uint8_t)(i * 7 + i / 4099 + 1);
	/* the attacker saw B's comm ID and QPN (a REP on the segment); A's it guesses */
	t.b_id = srnic_cm_id_local_id(c1.b);
	t.b_qpn = srnic_qp_num(c1.qp[1]);
	t.a_id = srnic_cm_id_local_id(c1.a);

	dl = deadline_in_s(WAIT_S);
	while (!done || t.rounds < HOSTILE_MIN_ROUNDS) {
		if (rte_get_timer_cycles() > dl)
			fail_msg("transfer: %u of %u chunks after %u attack rounds", x.done,
				 2 * XFER_CHUNKS, t.rounds);
		if (!done)
			done = xfer_step(&c1, &x);
		atk_round(&t);
		poll_all();
	}
	print_message("hostile: %u rounds: %u big UD, %u REQ, %u SIDR_REQ, %u ARP to B, "
		      "%u gratuitous ARP, %u REJ, %u DREQ\n", t.rounds, t.big_ud, t.reqs,
		      t.sidr_reqs, t.arp_req_b, t.garp, t.rejs, t.dreqs);

	print_message("hostile: B dropped %" PRId64 " big datagrams, held %u+%u requests "
		      "(refused %u+%u, req_dropped %" PRId64 "), %" PRId64 " forged REJs, "
		      "%u ARP replies to the attacker\n",
		      dev_stat(1, "rx_ud_recv_too_small") - small0, L_rc.held, L_ud.held,
		      L_rc.refused, L_ud.refused, cm_stat(1, "req_dropped"),
		      cm_stat(1, "rx_unknown_comm_id"), tap.replies_to_atk);
	/* the transfer, byte for byte: B got A's bytes, A read them back */
	assert_memory_equal(c1.buf[1], c1.buf[0], XFER_LEN);
	assert_memory_equal(c1.buf[0] + XFER_LEN, c1.buf[0], XFER_LEN);
	/* forged REJs and DREQs with a guessed peer ID: not the peer's */
	assert_int_equal(srnic_cm_id_state(c1.a), SRNIC_CM_ESTABLISHED);
	assert_int_equal(srnic_cm_id_state(c1.b), SRNIC_CM_ESTABLISHED);
	assert_null(ev_find(1, SRNIC_CM_EV_REJ_RECEIVED, c1.b));
	assert_null(ev_find(1, SRNIC_CM_EV_DREQ_RECEIVED, c1.b));
	assert_true(t.rejs > 0 && t.dreqs > 0);
	RUN_UNTIL(cm_stat(1, "rx_dreq") >= 1 && cm_stat(1, "rx_rej") >= 1);
	assert_int_equal(cm_stat(1, "rx_unknown_comm_id"), cm_stat(1, "rx_rej"));
	assert_int_equal(cm_stat(1, "dup_dreq"), cm_stat(1, "rx_dreq"));
	/* the big datagrams: dropped by the engine, QP1 never left RTS */
	assert_true(dev_stat(1, "rx_ud_recv_too_small") - small0 >= 1);
	assert_true(dev_stat(1, "rx_ud_recv_too_small") - small0 <= t.big_ud);
	assert_int_equal(srnic_qp_state(srnic_cm_gsi_qp(S[1].cm)), IBV_QPS_RTS);
	assert_int_equal(cm_stat(1, "rx_wc_err"), 0);
	assert_int_equal(cm_stat(1, "qp1_recovered"), 0);
	/* the floods: BACKLOG requests held per listener, the rest dropped
	 * without a REJ; B sent the flood nothing but the DREPs */
	assert_int_equal(L_rc.peak, BACKLOG);
	assert_int_equal(L_ud.peak, BACKLOG);
	assert_int_equal(L_ud.nsidr, BACKLOG);
	assert_true(L_rc.refused > 0 && L_ud.refused > 0);
	assert_int_equal(cm_stat(1, "req_dropped"), L_rc.refused + L_ud.refused);
	assert_int_equal(cm_stat(1, "tx_rej"), 0);
	assert_int_equal(cm_stat(1, "tx_sidr_rep"), 0);
	/* ... and the REQs' ids expire once their sender has given up */
	RUN_UNTIL(L_rc.queued == 0);
	assert_int_equal(L_rc.expired, L_rc.held);
	assert_int_equal(cm_stat(1, "req_expired"), L_rc.held);
	/* ARP: each request answered at most once (no amplification),
	 * nothing learned from strangers, A where it was, no QP moved */
	RUN_UNTIL(tap.replies_to_atk >= 1);
	assert_true(tap.replies_to_atk <= t.arp_req_b);
	assert_int_equal(srnic_dev_resolve_neigh(S[1].dev, &S[0].gid, &mac), 0);
	assert_memory_equal(&mac, &macs[0], sizeof(mac));
	assert_int_equal(dev_stat(1, "neigh_mac_moved"), 0);
	for (i = 0; i < ATK_UNUSED_IPS; i++) {
		union ibv_gid g;

		gid_of(&g, (uint8_t)(ATK_UNUSED_IP_BASE + i));
		assert_int_equal(srnic_dev_resolve_neigh(S[1].dev, &g, &mac), -EAGAIN);
	}

	/* the established connection still works, and ends as it should */
	conn_close(&c1);
	/* the SIDR_REQs' ids wait out their 120 s unless answered: B's
	 * application lets them go */
	for (i = 0; i < L_ud.nsidr; i++)
		assert_int_equal(srnic_cm_destroy_id(L_ud.sidr_ids[i]), 0);
	/* a new connection A -> B, and data over it */
	conn_make(&c2, MSG_LEN, MSG_LEN);
	for (i = 0; i < MSG_LEN; i++)
		c2.buf[0][i] = (uint8_t)(i * 13 + 5);
	sge = (struct ibv_sge){ .addr = (uintptr_t)c2.buf[1], .length = MSG_LEN,
				.lkey = srnic_mr_lkey(c2.mr[1]) };
	memset(&rw, 0, sizeof(rw));
	rw.sg_list = &sge;
	rw.num_sge = 1;
	assert_int_equal(srnic_post_recv(c2.qp[1], &rw, &brw), 0);
	{
		struct ibv_sge sa = { .addr = (uintptr_t)c2.buf[0], .length = MSG_LEN,
				      .lkey = srnic_mr_lkey(c2.mr[0]) };
		struct ibv_send_wr wr, *bw;
		struct ibv_wc wc;

		memset(&wr, 0, sizeof(wr));
		wr.sg_list = &sa;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		assert_int_equal(srnic_post_send(c2.qp[0], &wr, &bw), 0);
		RUN_UNTIL(srnic_poll_cq(c2.cq[1], 1, &wc) == 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, MSG_LEN);
		assert_memory_equal(c2.buf[1], c2.buf[0], MSG_LEN);
		RUN_UNTIL(srnic_poll_cq(c2.cq[0], 1, &wc) == 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		/* B's bytes changed, read back over A's */
		for (i = 0; i < MSG_LEN; i++)
			c2.buf[1][i] ^= 0x5a;
		assert_int_equal(post_rdma(&c2, IBV_WR_RDMA_READ, 9, 0, 0, MSG_LEN), 0);
		RUN_UNTIL(srnic_poll_cq(c2.cq[0], 1, &wc) == 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 9);
		assert_memory_equal(c2.buf[0], c2.buf[1], MSG_LEN);
	}
	conn_close(&c2);
	assert_int_equal(srnic_cm_destroy_id(L_rc.id), 0);
	assert_int_equal(srnic_cm_destroy_id(L_ud.id), 0);
	/* no id of the flood is left: the CMs go */
	for (i = 0; i < 2; i++) {
		assert_int_equal(srnic_cm_destroy(S[i].cm), 0);
		S[i].cm = NULL;
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_peer),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
