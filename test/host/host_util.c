/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "host_util.h"
#include "test_eal.h"

struct host_cap *H_cap;

static struct srnic_engine *poll_eng[HOST_MAX_ENG];
static unsigned int poll_n;

int
host_eal_init(const char *name, int n_extra, const char *const *extra)
{
	int rc = srnic_test_eal_init(name, n_extra, extra);

	if (rc != 0) {
		fprintf(stderr, "EAL init failed: %d\n", rc);
		return rc;
	}
	H_cap = calloc(1, sizeof(*H_cap));
	return H_cap == NULL ? -ENOMEM : 0;
}

struct srnic_dev *
host_dev_create(const struct host_dev_conf *c)
{
	struct srnic_dev_conf dc;
	struct srnic_dev *dev;

	memset(&dc, 0, sizeof(dc));
	dc.port_id = c->port;
	dc.nb_engines = c->nb_engines != 0 ? c->nb_engines : 1;
	dc.mtu = c->mtu != 0 ? c->mtu : 9000;
	dc.ip_ver = c->ip_ver != 0 ? c->ip_ver : 4;
	memcpy(dc.ip, c->ip, sizeof(dc.ip));
	dc.mac = &c->mac;
	dc.nb_mbufs = HOST_NB_MBUFS;
	dc.host_rx = c->host_rx;
	dc.host_rx_arg = c->host_rx_arg;
	dc.name = c->name;
	dc.comp_mask = SRNIC_DEV_CONF_READ_INLINE_MAX;
	dc.read_inline_max = c->read_inline_max;
	dev = srnic_dev_create(&dc);
	if (dev == NULL)
		fprintf(stderr, "srnic_dev_create(%s): %s\n", c->name, rte_strerror(rte_errno));
	assert_non_null(dev);
	return dev;
}

void
host_dev_conf_init(struct host_dev_conf *c, uint16_t port, uint8_t ip_ver, const uint8_t *ip,
		   const struct rte_ether_addr *mac, const char *name)
{
	memset(c, 0, sizeof(*c));
	c->port = port;
	c->ip_ver = ip_ver;
	memcpy(c->ip, ip, ip_ver == 6 ? 16 : 4);
	c->mac = *mac;
	c->name = name;
}

struct srnic_dev *
host_dev_new(uint16_t port, uint8_t ip_ver, const uint8_t *ip, const struct rte_ether_addr *mac,
	     const char *name)
{
	struct host_dev_conf c;

	host_dev_conf_init(&c, port, ip_ver, ip, mac, name);
	return host_dev_create(&c);
}

int
host_neigh_pair(struct srnic_dev *const dev[2], const struct rte_ether_addr *mac0,
		const struct rte_ether_addr *mac1)
{
	union ibv_gid g;

	srnic_dev_gid(dev[1], 1, &g);
	if (srnic_dev_add_neigh(dev[0], &g, mac1) != 0)
		return -1;
	srnic_dev_gid(dev[0], 1, &g);
	return srnic_dev_add_neigh(dev[1], &g, mac0) != 0 ? -1 : 0;
}

unsigned int
host_two_workers(unsigned int lcore[2])
{
	unsigned int lc, n = 0;

	RTE_LCORE_FOREACH_WORKER(lc) {
		if (n < 2)
			lcore[n++] = lc;
	}
	return n;
}

void
host_raw_port(uint16_t port, uint16_t nq)
{
	struct rte_eth_conf conf;
	uint16_t q;

	memset(&conf, 0, sizeof(conf));
	assert_int_equal(rte_eth_dev_configure(port, nq, nq, &conf), 0);
	for (q = 0; q < nq; q++) {
		assert_int_equal(rte_eth_rx_queue_setup(port, q, 1024, rte_socket_id(), NULL,
							srnic_test_pool()), 0);
		assert_int_equal(rte_eth_tx_queue_setup(port, q, 1024, rte_socket_id(), NULL), 0);
	}
	assert_int_equal(rte_eth_dev_start(port), 0);
}

struct rte_mbuf *
host_raw_rx(uint16_t port)
{
	struct rte_mbuf *m;

	return rte_eth_rx_burst(port, 0, &m, 1) == 1 ? m : NULL;
}

void
host_ep_create(struct host_ep *ep, struct srnic_dev *dev, struct srnic_pd *pd, uint16_t engine,
	       uint32_t depth)
{
	struct srnic_qp_init_attr qa;

	memset(ep, 0, sizeof(*ep));
	ep->dev = dev;
	ep->pd = pd != NULL ? pd : srnic_alloc_pd(dev);
	ep->own_pd = pd == NULL;
	assert_non_null(ep->pd);
	ep->eng = srnic_dev_engine(dev, engine);
	assert_non_null(ep->eng);
	ep->cq = srnic_create_cq(dev, (int)(2 * depth), ep->eng);
	assert_non_null(ep->cq);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = ep->cq;
	qa.max_send_wr = depth;
	qa.max_recv_wr = depth;
	qa.max_send_sge = 4;
	qa.max_recv_sge = 4;
	qa.qp_type = IBV_QPT_RC;
	ep->qp = srnic_create_qp(ep->pd, &qa);
	assert_non_null(ep->qp);
}

void
host_ep_destroy(struct host_ep *ep)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_wc wc[64];

	if (ep->qp == NULL)
		return;
	srnic_modify_qp(ep->qp, &a, IBV_QP_STATE);
	host_settle();
	while (srnic_poll_cq(ep->cq, 64, wc) > 0)
		;
	assert_int_equal(srnic_destroy_qp(ep->qp), 0);
	ep->qp = NULL;
	host_settle();
	assert_int_equal(srnic_destroy_cq(ep->cq), 0);
	ep->cq = NULL;
	if (ep->own_pd)
		assert_int_equal(srnic_dealloc_pd(ep->pd), 0);
	ep->pd = NULL;
}

int
host_connect(struct host_ep *ep, const union ibv_gid *dgid, uint32_t dest_qpn,
	     const struct rte_ether_addr *dmac, enum ibv_mtu mtu, uint32_t sq_psn, uint32_t rq_psn)
{
	return host_connect_grh(ep, dgid, dest_qpn, dmac, mtu, sq_psn, rq_psn, 0, 0);
}

int
host_connect_grh(struct host_ep *ep, const union ibv_gid *dgid, uint32_t dest_qpn,
		 const struct rte_ether_addr *dmac, enum ibv_mtu mtu, uint32_t sq_psn,
		 uint32_t rq_psn, uint8_t tclass, uint32_t flow_label)
{
	struct srnic_test_path p = {
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC,
		.mtu = mtu, .dest_qpn = dest_qpn, .rq_psn = rq_psn, .max_dest_rd_atomic = 16,
		.dgid = *dgid, .tclass = tclass, .flow_label = flow_label, .dmac = dmac,
		.sq_psn = sq_psn, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.max_rd_atomic = 16,
	};

	return srnic_test_qp_connect(ep->qp, &p);
}

void
host_connect_pair(struct host_ep *a, struct host_ep *b, enum ibv_mtu mtu)
{
	host_connect_pair_grh(a, b, mtu, 0, 0, 0, 0);
}

void
host_connect_pair_grh(struct host_ep *a, struct host_ep *b, enum ibv_mtu mtu, uint8_t tclass_ab,
		      uint32_t flow_ab, uint8_t tclass_ba, uint32_t flow_ba)
{
	union ibv_gid ga, gb;

	assert_int_equal(srnic_dev_gid(a->dev, 1, &ga), 0);
	assert_int_equal(srnic_dev_gid(b->dev, 1, &gb), 0);
	assert_int_equal(host_connect_grh(a, &gb, srnic_qp_num(b->qp), NULL, mtu, 1000, 5000,
					  tclass_ab, flow_ab), 0);
	assert_int_equal(host_connect_grh(b, &ga, srnic_qp_num(a->qp), NULL, mtu, 5000, 1000,
					  tclass_ba, flow_ba), 0);
}

/* ---- poll loop ---- */

void
host_poll_set(struct srnic_engine *const *eng, unsigned int n)
{
	assert_true(n <= HOST_MAX_ENG);
	memcpy(poll_eng, eng, n * sizeof(eng[0]));
	poll_n = n;
}

unsigned int
host_poll(void)
{
	unsigned int i, moved = 0;

	for (i = 0; i < poll_n; i++)
		moved += srnic_engine_poll(poll_eng[i]);
	return moved;
}

void
host_settle(void)
{
	unsigned int quiet = 0, i;

	for (i = 0; quiet < 16; i++) {
		quiet = host_poll() == 0 ? quiet + 1 : 0;
		if (i > 1000000)
			fail_msg("engines never settle");
	}
}

uint64_t
host_deadline(void)
{
	return rte_get_timer_cycles() + (uint64_t)HOST_WAIT_S * rte_get_timer_hz();
}

bool
host_deadline_passed(uint64_t deadline)
{
	if (rte_get_timer_cycles() < deadline)
		return false;
	host_cap_dump();
	return true;
}

static void
drain(struct host_ep *ep)
{
	struct ibv_wc wc[16];
	int n, i;

	do {
		n = srnic_poll_cq(ep->cq, 16, wc);
		assert_true(n >= 0);
		for (i = 0; i < n; i++) {
			assert_true(ep->nwc < RTE_DIM(ep->wc));
			ep->wc[ep->nwc++] = wc[i];
		}
	} while (n == 16);
}

const struct ibv_wc *
host_wait_wc(struct host_ep *ep, uint32_t n)
{
	uint64_t dl = host_deadline();

	drain(ep);
	while (ep->nwc < n) {
		if (host_deadline_passed(dl))
			fail_msg("timeout waiting for %u completions (have %u)", n, ep->nwc);
		host_poll();
		drain(ep);
	}
	return &ep->wc[n - 1];
}

/* ---- capture ---- */

static bool
frame_is_roce(const uint8_t *f, uint32_t len, uint32_t *l3)
{
	uint16_t et;

	if (len < 14)
		return false;
	et = (uint16_t)host_be(f + 12, 2);
	*l3 = 14;
	if (et == RTE_ETHER_TYPE_VLAN) {
		if (len < 18)
			return false;
		et = (uint16_t)host_be(f + 16, 2);
		*l3 = 18;
	}
	if (et == RTE_ETHER_TYPE_IPV4)
		return len >= *l3 + 20 + 8 + 12 + 4 && f[*l3 + 9] == IPPROTO_UDP &&
		       host_be(f + *l3 + 20 + 2, 2) == SRNIC_ROCE_UDP_PORT;
	if (et == RTE_ETHER_TYPE_IPV6)
		return len >= *l3 + 40 + 8 + 12 + 4 && f[*l3 + 6] == IPPROTO_UDP &&
		       host_be(f + *l3 + 40 + 2, 2) == SRNIC_ROCE_UDP_PORT;
	return false;
}

static void
on_rx(uint16_t port_id, int dir, const struct rte_mbuf *m, uint64_t tsc, void *arg)
{
	struct host_frame *k;
	uint32_t l3;

	RTE_SET_USED(dir);
	RTE_SET_USED(tsc);
	RTE_SET_USED(arg);
	if (H_cap->n >= HOST_MAX_FRAMES)
		return;
	k = &H_cap->f[H_cap->n++];
	memset(k, 0, sizeof(*k));
	k->port = port_id;
	k->data = srnic_test_frame_copy(m, &k->len);
	if (k->data == NULL) {
		k->parse_rc = -1;
		return;
	}
	k->parse_rc = srnic_pkt_parse((struct rte_mbuf *)(uintptr_t)m, &k->pkt, 0);
	if (frame_is_roce(k->data, k->len, &l3)) {
		const uint8_t *ip = k->data + l3;
		uint32_t end = (ip[0] >> 4) == 4 ? l3 + host_be(ip + 2, 2)
						 : l3 + 40 + host_be(ip + 4, 2);

		if (end <= k->len && end >= l3 + 4) {
			const uint8_t *t = k->data + end - 4;
			uint32_t stored = t[0] | t[1] << 8 | t[2] << 16 | (uint32_t)t[3] << 24;

			k->icrc_ok = host_icrc(k->data, end, l3) == stored;
		}
	}
}

struct srnic_capture *
host_cap_start(uint16_t port)
{
	struct srnic_capture *c = srnic_capture_start(port, SRNIC_CAPTURE_RX, on_rx, NULL);

	assert_non_null(c);
	return c;
}

void
host_cap_reset(void)
{
	uint32_t i;

	for (i = 0; i < H_cap->n; i++)
		free(H_cap->f[i].data);
	H_cap->n = 0;
}

uint32_t
host_cap_find(uint16_t port, uint16_t ethertype, uint32_t *idx, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < H_cap->n && n < max; i++) {
		const struct host_frame *k = &H_cap->f[i];

		if (k->port != port || k->len < 14)
			continue;
		if (ethertype != 0 && host_be(k->data + 12, 2) != ethertype)
			continue;
		idx[n++] = i;
	}
	return n;
}

uint32_t
host_cap_roce(uint16_t port, int opcode, uint32_t *idx, uint32_t max)
{
	uint32_t i, n = 0, l3;

	for (i = 0; i < H_cap->n && n < max; i++) {
		const struct host_frame *k = &H_cap->f[i];

		if (k->port != port || !frame_is_roce(k->data, k->len, &l3))
			continue;
		if (opcode >= 0 && (k->parse_rc != SRNIC_PARSE_OK || k->pkt.opcode != opcode))
			continue;
		idx[n++] = i;
	}
	return n;
}

void
host_cap_dump(void)
{
	uint32_t i;

	fprintf(stderr, "capture: %u frames\n", H_cap->n);
	for (i = 0; i < H_cap->n && i < 100; i++) {
		const struct host_frame *k = &H_cap->f[i];

		fprintf(stderr, "  %3u port %u len %u type %#06x parse %d icrc_ok %d opcode %#x psn %u\n",
			i, k->port, k->len, k->len >= 14 ? host_be(k->data + 12, 2) : 0,
			k->parse_rc, k->icrc_ok, k->parse_rc == 0 ? k->pkt.opcode : 0,
			k->parse_rc == 0 ? k->pkt.psn : 0);
	}
}

/* ---- independent computations ---- */

uint32_t
host_icrc(const uint8_t *frame, uint32_t len, uint32_t l3)
{
	return srnic_ref_icrc(frame + l3, len - 4 - l3, (frame[l3] >> 4) == 6 ? 6 : 4);
}

uint16_t
host_cksum6(const uint8_t *src, const uint8_t *dst, uint8_t proto, const uint8_t *l4,
	    uint32_t len)
{
	uint8_t ph[40] = { 0 };         /* RFC 8200 8.1 pseudo header */

	memcpy(ph, src, 16);
	memcpy(ph + 16, dst, 16);
	ph[32] = (uint8_t)(len >> 24);
	ph[33] = (uint8_t)(len >> 16);
	ph[34] = (uint8_t)(len >> 8);
	ph[35] = (uint8_t)len;
	ph[39] = proto;
	return srnic_ref_cksum_fold(srnic_ref_sum16(srnic_ref_sum16(0, ph, sizeof(ph)), l4, len));
}

/* ---- misc ---- */

int64_t
host_eng_stat(const struct srnic_engine *eng, const char *name)
{
	uint64_t v[128];
	unsigned int i, n = srnic_engine_stats_get(eng, v, RTE_DIM(v));

	for (i = 0; i < n; i++)
		if (strcmp(srnic_engine_stat_name(i), name) == 0)
			return (int64_t)v[i];
	fail_msg("no counter %s", name);
	return -1;
}

void
host_stats_dump(const char *what, const struct srnic_engine *eng)
{
	uint64_t v[128];
	unsigned int i, n = srnic_engine_stats_get(eng, v, RTE_DIM(v));

	fprintf(stderr, "%s:", what);
	for (i = 0; i < n; i++)
		if (v[i] != 0)
			fprintf(stderr, " %s %" PRIu64, srnic_engine_stat_name(i), v[i]);
	fprintf(stderr, "\n");
}

void *
host_alloc(size_t len)
{
	void *b = rte_zmalloc("host_buf", len, 4096);

	assert_non_null(b);
	return b;
}

int
host_post(struct host_ep *ep, enum ibv_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
	  uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };

	return srnic_test_post_send(ep->qp, op, wr_id, &sge, 1, raddr, rkey, flags);
}

int
host_post_recv(struct host_ep *ep, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };

	return srnic_test_post_recv(ep->qp, wr_id, &sge, 1);
}

void
host_ud_up(struct srnic_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qkey = qkey;
	assert_int_equal(srnic_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_QKEY), 0);
	at.qp_state = IBV_QPS_RTR;
	assert_int_equal(srnic_modify_qp(qp, &at, IBV_QP_STATE), 0);
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 1;
	assert_int_equal(srnic_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

int
host_ud_send(struct srnic_qp *qp, struct srnic_ah *ah, uint32_t rqpn, uint32_t qkey,
	     uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = srnic_ah_ibv(ah);
	wr.wr.ud.remote_qpn = rqpn;
	wr.wr.ud.remote_qkey = qkey;
	return srnic_post_send(qp, &wr, &bad);
}

struct srnic_ah *
host_ah_to(struct srnic_pd *pd, const struct srnic_dev *dev)
{
	struct ibv_ah_attr aa;
	struct srnic_ah *ah;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = SRNIC_GID_INDEX_IP;
	assert_int_equal(srnic_dev_gid(dev, SRNIC_GID_INDEX_IP, &aa.grh.dgid), 0);
	ah = srnic_create_ah(pd, &aa);
	assert_non_null(ah);
	return ah;
}

int
host_sh(const char *cmd)
{
	int rc = system(cmd);

	if (rc != 0)
		fprintf(stderr, "'%s' failed: %d\n", cmd, rc);
	return rc;
}

void
host_xfer_setup(struct host_xfer *x, const struct host_ep *a, const struct host_ep *b,
		uint32_t len, int laccess, int raccess, uint32_t seed)
{
	x->len = len;
	x->local = host_alloc(len);
	x->remote = host_alloc(len);
	srnic_test_fill(x->remote, len, seed);
	x->lmr = srnic_reg_mr(a->pd, x->local, len, laccess);
	x->rmr = srnic_reg_mr(b->pd, x->remote, len, raccess);
	assert_non_null(x->lmr);
	assert_non_null(x->rmr);
}

int
host_xfer_read(const struct host_xfer *x, struct host_ep *a, uint64_t wr_id)
{
	return host_post(a, IBV_WR_RDMA_READ, wr_id, x->local, x->len, srnic_mr_lkey(x->lmr),
			 (uintptr_t)x->remote, srnic_mr_rkey(x->rmr), IBV_SEND_SIGNALED);
}

void
host_xfer_dereg(struct host_xfer *x)
{
	assert_int_equal(srnic_dereg_mr(x->lmr), 0);
	assert_int_equal(srnic_dereg_mr(x->rmr), 0);
	x->lmr = x->rmr = NULL;
}

void
host_xfer_free(struct host_xfer *x)
{
	rte_free(x->local);
	rte_free(x->remote);
	x->local = x->remote = NULL;
}

void
host_inject(uint16_t port, uint16_t queue, const void *frame, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(srnic_test_pool());
	void *d;

	assert_non_null(m);
	d = rte_pktmbuf_append(m, (uint16_t)len);
	assert_non_null(d);
	memcpy(d, frame, len);
	assert_int_equal(rte_eth_tx_burst(port, queue, &m, 1), 1);
}

int
host_trio_setup(struct host_trio *t, const char *name, uint8_t ip_ver, const uint8_t *ip_a,
		const uint8_t *ip_b, const struct rte_ether_addr *mac_a,
		const struct rte_ether_addr *mac_b)
{
	char n[32];
	int i;

	if (srnic_link_ring_pair(name, 1, HOST_RING_SIZE, &t->port[0], &t->port[1]) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		snprintf(n, sizeof(n), "%s%c", name, 'A' + i);
		t->dev[i] = host_dev_new(t->port[i], ip_ver, i == 0 ? ip_a : ip_b,
					 i == 0 ? mac_a : mac_b, n);
		t->cap[i] = host_cap_start(t->port[i]);
	}
	snprintf(n, sizeof(n), "%sraw", name);
	if (srnic_link_ring_pair(n, 1, HOST_RING_SIZE, &t->rport[0], &t->rport[1]) != 0)
		return -1;
	snprintf(n, sizeof(n), "%sC", name);
	t->dev_c = host_dev_new(t->rport[0], ip_ver, ip_a, mac_a, n);
	host_raw_port(t->rport[1], 1);
	return 0;
}

void
host_trio_teardown(struct host_trio *t)
{
	srnic_capture_stop(t->cap[0]);
	srnic_capture_stop(t->cap[1]);
	host_cap_reset();
	srnic_dev_destroy(t->dev[0]);
	srnic_dev_destroy(t->dev[1]);
	srnic_dev_destroy(t->dev_c);
}

int
host_duo_setup(struct host_duo *d, const char *name, const struct rte_ether_addr mac[2],
	       const uint16_t *read_inline_max)
{
	char n[32];
	int i;

	memset(d, 0, sizeof(*d));
	if (srnic_link_ring_pair(name, 1, HOST_RING_SIZE, &d->port[0], &d->port[1]) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		const uint8_t ip[4] = { 127, 0, 0, (uint8_t)(1 + i) };
		struct host_dev_conf c;

		snprintf(n, sizeof(n), "%s%c", name, 'A' + i);
		host_dev_conf_init(&c, d->port[i], 4, ip, &mac[i], n);
		c.read_inline_max = read_inline_max != NULL ? read_inline_max[i] : 0;
		d->dev[i] = host_dev_create(&c);
		d->eng[i] = srnic_dev_engine(d->dev[i], 0);
		d->cap[i] = host_cap_start(d->port[i]);
		d->pd[i] = srnic_alloc_pd(d->dev[i]);
		if (d->pd[i] == NULL)
			return -1;
	}
	if (host_neigh_pair(d->dev, &mac[0], &mac[1]) != 0)
		return -1;
	/* srnic_link_ring_pair()'s rings: <name>_ab0 and <name>_ba0 */
	snprintf(n, sizeof(n), "%s_ab0", name);
	d->ab = rte_ring_lookup(n);
	snprintf(n, sizeof(n), "%s_ba0", name);
	d->ba = rte_ring_lookup(n);
	if (d->ab == NULL || d->ba == NULL)
		return -1;
	host_poll_set(d->eng, 2);
	return 0;
}

void
host_duo_teardown(struct host_duo *d)
{
	int i;

	for (i = 0; i < 2; i++)
		srnic_capture_stop(d->cap[i]);
	host_cap_reset();
	for (i = 0; i < 2; i++) {
		srnic_dealloc_pd(d->pd[i]);
		srnic_dev_destroy(d->dev[i]);
	}
}

void
host_duo_connect(struct host_duo *d, struct host_ep *a, struct host_ep *b, uint32_t depth,
		 enum ibv_mtu mtu)
{
	host_cap_reset();
	host_ep_create(a, d->dev[0], d->pd[0], 0, depth);
	host_ep_create(b, d->dev[1], d->pd[1], 0, depth);
	host_connect_pair(a, b, mtu);
}

void
host_duo_disconnect(struct host_ep *a, struct host_ep *b)
{
	host_ep_destroy(a);
	host_ep_destroy(b);
}
