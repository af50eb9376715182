/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbours and the retry timer: a QP whose
 * peer never resolves still times out (RETRY_EXC_ERR after retry_cnt
 * expiries, one ARP request per expiry), a resolved MAC that went stale
 * is refreshed on a retry timeout (the QP recovers instead of
 * black-holing), and a flood of ARP frames evicts neither a static entry
 * nor one a QP uses.
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host_util.h"

#define NEIGH_READ_LEN 8192
/* timeout code 10: 4.096 us * 2^10 = 4.2 ms, far below the ARP interval */
#define NEIGH_TMO 10
#define NEIGH_RETRY 3
/* timeout code 15: 134 ms, longer than SRNIC_ARP_RETRY_MS (100): each
 * expiry of a QP whose peer moved may ask for its MAC again */
#define MOVE_TMO 15
/* Frames of the flood: twice the table (SRNIC_NEIGH_MAX, 256) of each kind. */
#define NEIGH_FLOOD 512

static const struct rte_ether_addr mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x01 } };
static const struct rte_ether_addr mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x02 } };
static const struct rte_ether_addr mac_old = { { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x77 } };
static const struct rte_ether_addr mac_s = { { 0x02, 0x00, 0x00, 0x00, 0x5a, 0x05 } };
static const struct rte_ether_addr mac_x = { { 0x02, 0x00, 0x00, 0x00, 0x99, 0x09 } };
static const struct rte_ether_addr bcast = { { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
static const struct rte_ether_addr zero_mac;
static const uint8_t ip_a[4] = { 127, 0, 0, 1 };
static const uint8_t ip_b[4] = { 127, 0, 0, 2 };

static struct host_trio T;

/* B's side of the link as a switch sees it: RoCE frames reach B only when
 * addressed to B's MAC; while hide_b, B hears no ARP at all. */
static volatile int hide_b;
static uint32_t b_wrong_mac;

static uint16_t
b_switch(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n, uint16_t max,
	 void *arg)
{
	uint16_t i, k = 0;

	RTE_SET_USED(port);
	RTE_SET_USED(queue);
	RTE_SET_USED(max);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		const uint8_t *f = rte_pktmbuf_mtod(pkts[i], const uint8_t *);
		bool arp = host_be(f + 12, 2) == RTE_ETHER_TYPE_ARP;

		if ((arp && hide_b) || (!arp && memcmp(f, &mac_b, 6) != 0)) {
			b_wrong_mac += !arp;
			rte_pktmbuf_free(pkts[i]);
			continue;
		}
		pkts[k++] = pkts[i];
	}
	return k;
}

static uint32_t
build_arp(uint8_t *f, const struct rte_ether_addr *edst, uint16_t op,
	  const struct rte_ether_addr *sha, const uint8_t *sip, const struct rte_ether_addr *tha,
	  const uint8_t *tip)
{
	memset(f, 0, 60);
	memcpy(f, edst, 6);
	memcpy(f + 6, sha, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	f[15] = 1;
	f[16] = 0x08;
	f[18] = 6;
	f[19] = 4;
	f[21] = (uint8_t)op;
	memcpy(f + 22, sha, 6);
	memcpy(f + 28, sip, 4);
	memcpy(f + 32, tha, 6);
	memcpy(f + 38, tip, 4);
	return 60;
}

static void
v4_gid(union ibv_gid *g, const uint8_t *ip)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	memcpy(&g->raw[12], ip, 4);
}

static int
ep_connect(struct host_ep *ep, const union ibv_gid *g, uint32_t dqpn, uint8_t timeout,
	   uint8_t retry_cnt)
{
	struct srnic_test_path p = {
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_WRITE,
		.mtu = IBV_MTU_1024, .dest_qpn = dqpn, .rq_psn = 1, .max_dest_rd_atomic = 16,
		.dgid = *g, .sq_psn = 1, .timeout = timeout, .retry_cnt = retry_cnt,
		.rnr_retry = 7, .max_rd_atomic = 16,
	};

	return srnic_test_qp_connect(ep->qp, &p);
}

static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	if (host_eal_init("host_neigh", 0, NULL) != 0)
		return -1;
	if (host_trio_setup(&T, "ngh", 4, ip_a, ip_b, &mac_a, &mac_b) != 0)
		return -1;
	return rte_eth_add_rx_callback(T.port[1], 0, b_switch, NULL) == NULL ? -1 : 0;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	host_trio_teardown(&T);
	rte_eal_cleanup();
	return 0;
}

/* The reproduction: a peer IP nobody answers, a short
 * ACK timeout. The timer runs although nothing can be sent: each expiry
 * spends one retry and asks again, then the first WR fails with
 * RETRY_EXC_ERR, the QP goes to ERR and the next WR is flushed. */
static void
test_unresolved_times_out(void **state)
{
	static const uint8_t ip_none[4] = { 127, 0, 0, 77 };
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	int64_t tx_arp = host_eng_stat(eng[0], "tx_arp");
	int64_t lim = host_eng_stat(eng[0], "neigh_solicit_limited");
	int64_t tmo = host_eng_stat(eng[0], "retry_timeout");
	int64_t sent, asked;
	int64_t req = host_eng_stat(eng[0], "req_pkts");
	uint8_t *buf = host_alloc(64);
	const struct ibv_wc *wc;
	struct srnic_mr *mr;
	struct host_ep a;
	union ibv_gid g;
	uint64_t t0, t1;

	RTE_SET_USED(state);
	host_cap_reset();
	host_poll_set(eng, 2);
	host_ep_create(&a, T.dev[0], NULL, 0, 16);
	mr = srnic_reg_mr(a.pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	v4_gid(&g, ip_none);
	assert_int_equal(ep_connect(&a, &g, 0x77, NEIGH_TMO, NEIGH_RETRY), 0);
	assert_int_equal(host_post(&a, IBV_WR_SEND, 1, buf, 64, srnic_mr_lkey(mr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	assert_int_equal(host_post(&a, IBV_WR_SEND, 2, buf, 64, srnic_mr_lkey(mr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	t0 = rte_get_timer_cycles();
	wc = host_wait_wc(&a, 2);
	t1 = rte_get_timer_cycles();
	assert_int_equal(a.wc[0].wr_id, 1);
	assert_int_equal(a.wc[0].status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(a.wc[0].opcode, IBV_WC_SEND);
	assert_int_equal(wc->wr_id, 2);
	assert_int_equal(wc->status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(srnic_qp_state(a.qp), IBV_QPS_ERR);
	/* retry_cnt + 1 expiries; the first ARP request and one per retry
	 * asked (more only if this thread slept past the 100 ms ARP
	 * interval), of which one per 100 ms goes on the wire, the rest held
	 * back by the per-neighbour limit */
	assert_int_equal(host_eng_stat(eng[0], "retry_timeout") - tmo, NEIGH_RETRY + 1);
	sent = host_eng_stat(eng[0], "tx_arp") - tx_arp;
	asked = sent + host_eng_stat(eng[0], "neigh_solicit_limited") - lim;
	assert_true(sent >= 1);
	if (t1 - t0 < rte_get_timer_hz() / 10) {
		assert_int_equal(asked, NEIGH_RETRY + 1);
		assert_int_equal(sent, 1);
	} else {
		assert_true(asked >= NEIGH_RETRY + 1);
	}
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), req); /* nothing to send to */
	host_settle();
	assert_int_equal(a.nwc, 2);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&a);
	rte_free(buf);
}

/* A MAC move: A resolved B's address to mac_old (the answer of a
 * host that had the address before), B now answers at mac_b. A's READ
 * goes to mac_old and is lost; the retry timeout asks again, the reply
 * refreshes the entry, the retry after it reaches B and the READ
 * completes with B's bytes. The ACK timeout (134 ms) outlasts the ARP
 * interval: with 4.2 ms, 7 retries ran out before A could ask again. */
static void
test_mac_move(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	struct host_ep a, b;
	struct host_xfer x;
	const struct ibv_wc *wc;
	union ibv_gid g;
	uint8_t f[64];
	uint32_t idx[HOST_MAX_FRAMES], n, i, to_b = 0;
	int64_t arp0, req = host_eng_stat(eng[0], "req_pkts");
	int64_t tmo = host_eng_stat(eng[0], "retry_timeout");
	int64_t moved = host_eng_stat(eng[0], "neigh_mac_moved");
	int64_t starved = host_eng_stat(eng[0], "retry_starved");

	RTE_SET_USED(state);
	host_cap_reset();
	host_ep_create(&a, T.dev[0], NULL, 0, 64);
	host_ep_create(&b, T.dev[1], NULL, 0, 64);
	v4_gid(&g, ip_b);
	assert_int_equal(ep_connect(&a, &g, srnic_qp_num(b.qp), MOVE_TMO, 7), 0);
	v4_gid(&g, ip_a);
	assert_int_equal(host_connect(&b, &g, srnic_qp_num(a.qp), &mac_a, IBV_MTU_1024, 1, 1), 0);
	host_xfer_setup(&x, &a, &b, NEIGH_READ_LEN, IBV_ACCESS_LOCAL_WRITE,
			IBV_ACCESS_REMOTE_READ, 21);

	/* A asks (B does not hear it); the old owner of the address answers. */
	hide_b = 1;
	b_wrong_mac = 0;
	assert_int_equal(host_xfer_read(&x, &a, 0x61), 0);
	srnic_engine_poll(eng[0]);
	arp0 = host_eng_stat(eng[0], "tx_arp");
	assert_true(arp0 >= 1);
	build_arp(f, &mac_a, RTE_ARP_OP_REPLY, &mac_old, ip_b, &mac_a, ip_a);
	host_inject(T.port[1], 0, f, 60);
	srnic_engine_poll(eng[0]);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts") - req, 1); /* the READ, to mac_old */
	srnic_engine_poll(eng[1]);
	assert_int_equal(b_wrong_mac, 1);

	/* The address moved: B answers from now on. */
	hide_b = 0;
	host_poll_set(eng, 2);
	wc = host_wait_wc(&a, 1);
	if (wc->status != IBV_WC_SUCCESS)
		host_stats_dump("A", eng[0]);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, 0x61);
	assert_memory_equal(x.local, x.remote, NEIGH_READ_LEN);
	host_settle();
	/* A asked again at a timeout, B answered, A took mac_b at the next. */
	assert_true(host_eng_stat(eng[0], "tx_arp") > arp0);
	assert_true(host_eng_stat(eng[0], "retry_timeout") - tmo +
		    host_eng_stat(eng[0], "retry_starved") - starved >= 2);
	/* (the capture sees frames before the switch drops them) */
	n = host_cap_roce(T.port[1], -1, idx, RTE_DIM(idx));
	for (i = 0; i < n; i++) {
		if (memcmp(H_cap->f[idx[i]].data, &mac_b, 6) == 0)
			to_b++;
		else
			assert_memory_equal(H_cap->f[idx[i]].data, &mac_old, 6);
	}
	assert_true(to_b >= 1); /* the retried READ, to mac_b */
	assert_int_equal(n - to_b, b_wrong_mac);
	assert_int_equal(host_eng_stat(eng[0], "neigh_mac_moved") - moved, 1);
	n = host_cap_find(T.port[1], RTE_ETHER_TYPE_ARP, idx, RTE_DIM(idx));
	assert_true(n >= 1);
	host_xfer_dereg(&x);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
}

/* Item I: a MAC the application gave (srnic_modify_qp_dmac) is the
 * route, whatever the neighbour table says. A knows ip_b at mac_b (B
 * asked for A's address); A's QP is told to send to ip_b through mac_x
 * (a switch that drops them all). Each retry timeout leaves mac_x: every
 * RoCE frame goes to mac_x, the SEND fails with RETRY_EXC_ERR, no MAC
 * moved. Before, the first timeout took mac_b from the table and the
 * SEND reached B. */
static void
test_dmac_kept_on_retry(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	uint8_t *buf = host_alloc(64);
	int64_t moved = host_eng_stat(eng[0], "neigh_mac_moved");
	int64_t tmo = host_eng_stat(eng[0], "retry_timeout");
	int64_t starved = host_eng_stat(eng[0], "retry_starved");
	uint32_t idx[HOST_MAX_FRAMES], n, i, wrong = b_wrong_mac;
	struct host_ep a, b;
	const struct ibv_wc *wc;
	struct srnic_mr *mr;
	union ibv_gid g;
	uint8_t f[64];

	RTE_SET_USED(state);
	hide_b = 0;
	host_poll_set(eng, 2);
	/* B asks for A's address: A learns ip_b at mac_b */
	build_arp(f, &bcast, RTE_ARP_OP_REQUEST, &mac_b, ip_b, &zero_mac, ip_a);
	host_inject(T.port[1], 0, f, 60);
	host_settle();
	host_cap_reset();
	host_ep_create(&a, T.dev[0], NULL, 0, 16);
	host_ep_create(&b, T.dev[1], NULL, 0, 16);
	mr = srnic_reg_mr(a.pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	v4_gid(&g, ip_b);
	{
		struct srnic_test_path p = {
			.access = IBV_ACCESS_LOCAL_WRITE, .mtu = IBV_MTU_1024,
			.dest_qpn = srnic_qp_num(b.qp), .rq_psn = 1, .max_dest_rd_atomic = 16,
			.dgid = g, .dmac = &mac_x, .sq_psn = 1, .timeout = NEIGH_TMO,
			.retry_cnt = NEIGH_RETRY, .rnr_retry = 7, .max_rd_atomic = 16,
		};

		assert_int_equal(srnic_test_qp_connect(a.qp, &p), 0);
	}
	assert_int_equal(host_post(&a, IBV_WR_SEND, 1, buf, 64, srnic_mr_lkey(mr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&a, 1);
	assert_int_equal(wc->status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(host_eng_stat(eng[0], "retry_timeout") - tmo, NEIGH_RETRY + 1);
	assert_int_equal(host_eng_stat(eng[0], "neigh_mac_moved") - moved, 0);
	n = host_cap_roce(T.port[1], -1, idx, RTE_DIM(idx));
	/* the SEND and its retries, and a resend for each expiry this
	 * thread found late (descheduled longer than the 4.2 ms timeout) */
	starved = host_eng_stat(eng[0], "retry_starved") - starved;
	assert_int_equal(n, NEIGH_RETRY + 1 + starved);
	for (i = 0; i < n; i++)
		assert_memory_equal(H_cap->f[idx[i]].data, &mac_x, 6);
	assert_int_equal(b_wrong_mac - wrong, n);
	host_settle();
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	rte_free(buf);
}

/* One SEND from a fresh QP on C to ip (GID), polled once: it must leave
 * at once (no ARP) with dst MAC mac. */
static void
c_send_to(const uint8_t *ip, const struct rte_ether_addr *mac)
{
	struct srnic_engine *eng = srnic_dev_engine(T.dev_c, 0);
	int64_t arp = host_eng_stat(eng, "tx_arp");
	uint8_t *buf = host_alloc(256);
	struct rte_mbuf *m;
	struct srnic_mr *mr;
	struct host_ep c;
	union ibv_gid g;
	struct srnic_pkt pkt;

	host_ep_create(&c, T.dev_c, NULL, 0, 16);
	mr = srnic_reg_mr(c.pd, buf, 256, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	v4_gid(&g, ip);
	assert_int_equal(host_connect(&c, &g, 0x99, NULL, IBV_MTU_1024, 300, 300), 0);
	assert_int_equal(host_post(&c, IBV_WR_SEND, 1, buf, 256, srnic_mr_lkey(mr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(eng);
	assert_int_equal(host_eng_stat(eng, "tx_arp"), arp);
	m = host_raw_rx(T.rport[1]);
	assert_non_null(m);
	assert_memory_equal(rte_pktmbuf_mtod(m, const uint8_t *), mac, 6);
	assert_int_equal(srnic_pkt_parse(m, &pkt, 0), SRNIC_PARSE_OK);
	assert_int_equal(pkt.opcode, SRNIC_OP_RC_SEND_ONLY);
	rte_pktmbuf_free(m);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&c);
	while ((m = host_raw_rx(T.rport[1])) != NULL)
		rte_pktmbuf_free(m);
	rte_free(buf);
}

/* A flood: C has a static neighbour S and a live one X (it asked
 * for C's address, a QP of C sent to it). Then NEIGH_FLOOD ARP requests
 * for C's address and as many unsolicited replies from other addresses,
 * every last byte of the address many times over: S and X still resolve
 * at once to their MACs. */
static void
test_flood_keeps_static_and_live(void **state)
{
	static const uint8_t ip_s[4] = { 127, 0, 0, 5 };
	static const uint8_t ip_x[4] = { 127, 0, 0, 9 };
	struct srnic_engine *eng = srnic_dev_engine(T.dev_c, 0);
	union ibv_gid g;
	struct rte_mbuf *m;
	uint8_t f[64], ip[4];
	uint32_t i, replies = 0;

	RTE_SET_USED(state);
	host_poll_set(&eng, 1);
	v4_gid(&g, ip_s);
	assert_int_equal(srnic_dev_add_neigh(T.dev_c, &g, &mac_s), 0);
	build_arp(f, &bcast, RTE_ARP_OP_REQUEST, &mac_x, ip_x, &zero_mac, ip_a);
	host_inject(T.rport[1], 0, f, 60);
	host_settle();
	while ((m = host_raw_rx(T.rport[1])) != NULL)
		rte_pktmbuf_free(m);
	c_send_to(ip_x, &mac_x); /* X is live: looked up by a QP */

	for (i = 0; i < NEIGH_FLOOD; i++) {
		struct rte_ether_addr mac = { { 0x02, 0x10, 0, 0, (uint8_t)(i >> 8), (uint8_t)i } };

		ip[0] = 10;
		ip[1] = (uint8_t)(i >> 8);
		ip[2] = 0;
		ip[3] = (uint8_t)i;
		build_arp(f, &bcast, RTE_ARP_OP_REQUEST, &mac, ip, &zero_mac, ip_a);
		host_inject(T.rport[1], 0, f, 60);
		ip[2] = 1;
		build_arp(f, &mac_a, RTE_ARP_OP_REPLY, &mac, ip, &mac_a, ip_a);
		host_inject(T.rport[1], 0, f, 60);
		if (i % 16 == 15) {
			host_settle();
			while ((m = host_raw_rx(T.rport[1])) != NULL) {
				replies++;
				rte_pktmbuf_free(m);
			}
		}
	}
	assert_int_equal(replies, NEIGH_FLOOD); /* every request for C was answered */
	c_send_to(ip_s, &mac_s);
	c_send_to(ip_x, &mac_x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unresolved_times_out),
		cmocka_unit_test(test_mac_move),
		cmocka_unit_test(test_dmac_kept_on_retry),
		cmocka_unit_test(test_flood_keeps_static_and_live),
	};

	return cmocka_run_group_tests_name("host_neigh", tests, group_setup, group_teardown);
}
