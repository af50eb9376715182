/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ARP: a device that knows no neighbour resolves its QP's peer by ARP
 * before sending anything, answers ARP requests for its own address (from
 * a peer srnic or from an unknown host on a raw port), ignores requests
 * for other addresses, learns senders, and retries at its interval (not
 * every poll) while nobody answers.
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host_util.h"
#include "srnic_param.h"

#define ARP_READ_LEN 8192

static const struct rte_ether_addr mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x01 } };
static const struct rte_ether_addr mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x02 } };
static const struct rte_ether_addr mac_x = { { 0x02, 0x00, 0x00, 0x00, 0x99, 0x09 } };
static const struct rte_ether_addr bcast = { { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
static const struct rte_ether_addr zero_mac;
static const uint8_t ip_a[4] = { 127, 0, 0, 1 };
static const uint8_t ip_b[4] = { 127, 0, 0, 2 };
static const uint8_t ip_x[4] = { 127, 0, 0, 9 };

static struct host_trio T;

/* Check an Ethernet + ARP frame field by field. */
static void
check_arp(const uint8_t *f, uint32_t len, const struct rte_ether_addr *edst,
	  const struct rte_ether_addr *esrc, uint16_t op, const struct rte_ether_addr *sha,
	  const uint8_t *sip, const struct rte_ether_addr *tha, const uint8_t *tip)
{
	assert_true(len >= 42);
	assert_memory_equal(f, edst, 6);
	assert_memory_equal(f + 6, esrc, 6);
	assert_int_equal(host_be(f + 12, 2), RTE_ETHER_TYPE_ARP);
	assert_int_equal(host_be(f + 14, 2), RTE_ARP_HRD_ETHER);
	assert_int_equal(host_be(f + 16, 2), RTE_ETHER_TYPE_IPV4);
	assert_int_equal(f[18], 6);
	assert_int_equal(f[19], 4);
	assert_int_equal(host_be(f + 20, 2), op);
	assert_memory_equal(f + 22, sha, 6);
	assert_memory_equal(f + 28, sip, 4);
	assert_memory_equal(f + 32, tha, 6);
	assert_memory_equal(f + 38, tip, 4);
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
	return 60; /* padded to the Ethernet minimum, as on a wire */
}

static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	if (host_eal_init("host_arp", 0, NULL) != 0)
		return -1;
	/* C: a device whose peer is a raw port driven by the test. */
	return host_trio_setup(&T, "arp", 4, ip_a, ip_b, &mac_a, &mac_b);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	host_trio_teardown(&T);
	rte_eal_cleanup();
	return 0;
}

static unsigned int
ring_count(const char *name)
{
	struct rte_ring *r = rte_ring_lookup(name);

	assert_non_null(r);
	return rte_ring_count(r);
}

/* A's QP has only B's GID: A ARPs, B answers, the READ then goes. */
static void
test_arp_resolve(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	struct host_ep a, b;
	struct host_xfer x;
	const struct ibv_wc *wc;
	uint32_t idx[64], n, i;
	uint64_t t0, t_reply;

	RTE_SET_USED(state);
	host_cap_reset();
	host_ep_create(&a, T.dev[0], NULL, 0, 64);
	host_ep_create(&b, T.dev[1], NULL, 0, 64);
	host_connect_pair(&a, &b, IBV_MTU_4096);
	host_xfer_setup(&x, &a, &b, ARP_READ_LEN, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, 11);
	assert_int_equal(host_xfer_read(&x, &a, 0x51), 0);

	/* A alone: one ARP request, then silence until the retry interval
	 * (100 ms); no RoCE packet while the MAC is unknown. */
	t0 = rte_get_timer_cycles();
	srnic_engine_poll(eng[0]);
	assert_int_equal(host_eng_stat(eng[0], "tx_arp"), 1);
	while (rte_get_timer_cycles() - t0 < rte_get_timer_hz() / 50) /* 20 ms */
		srnic_engine_poll(eng[0]);
	if (rte_get_timer_cycles() - t0 < rte_get_timer_hz() / 10)
		assert_int_equal(host_eng_stat(eng[0], "tx_arp"), 1);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), 0);
	assert_int_equal(host_eng_stat(eng[0], "tx_pkts"), host_eng_stat(eng[0], "tx_arp"));
	assert_int_equal(ring_count("arp_ab0"), host_eng_stat(eng[0], "tx_arp"));

	/* B receives it: a broadcast from A's MAC asking for B's IP. */
	srnic_engine_poll(eng[1]);
	n = host_cap_find(T.port[1], RTE_ETHER_TYPE_ARP, idx, RTE_DIM(idx));
	assert_true(n >= 1);
	check_arp(H_cap->f[idx[0]].data, H_cap->f[idx[0]].len, &bcast, &mac_a,
		  RTE_ARP_OP_REQUEST, &mac_a, ip_a, &zero_mac, ip_b);
	assert_int_equal(H_cap->f[idx[0]].len, 42);
	/* B learned A from the request: it answers and asks nothing itself. */
	assert_int_equal(host_eng_stat(eng[1], "rx_arp"), n);
	assert_int_equal(host_eng_stat(eng[1], "tx_arp"), n);

	/* A receives the reply (B's MAC), learns it and sends the READ in the
	 * same poll. */
	srnic_engine_poll(eng[0]);
	t_reply = rte_get_timer_cycles();
	n = host_cap_find(T.port[0], RTE_ETHER_TYPE_ARP, idx, RTE_DIM(idx));
	assert_true(n >= 1);
	check_arp(H_cap->f[idx[0]].data, H_cap->f[idx[0]].len, &mac_a, &mac_b, RTE_ARP_OP_REPLY,
		  &mac_b, ip_b, &mac_a, ip_a);
	assert_int_equal(host_eng_stat(eng[0], "rx_arp"), n);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), 1);

	host_poll_set(eng, 2);
	wc = host_wait_wc(&a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc->wr_id, 0x51);
	assert_int_equal(wc->byte_len, ARP_READ_LEN);
	assert_memory_equal(x.local, x.remote, ARP_READ_LEN);
	host_settle();

	/* Counters: A's requests, each answered by B, nothing else; one of
	 * each unless this thread slept past the 100 ms retry interval. */
	n = (uint32_t)host_eng_stat(eng[0], "tx_arp");
	if (t_reply - t0 < rte_get_timer_hz() / 10)
		assert_int_equal(n, 1);
	assert_int_equal(host_eng_stat(eng[1], "rx_arp"), n);
	assert_int_equal(host_eng_stat(eng[1], "tx_arp"), n);
	assert_int_equal(host_eng_stat(eng[0], "rx_arp"), n);
	/* Every RoCE frame carries the resolved MACs. */
	n = host_cap_roce(T.port[1], -1, idx, RTE_DIM(idx));
	assert_true(n >= 1);
	for (i = 0; i < n; i++) {
		const struct host_frame *k = &H_cap->f[idx[i]];

		assert_memory_equal(k->data, &mac_b, 6);
		assert_memory_equal(k->data + 6, &mac_a, 6);
		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
		assert_true(k->icrc_ok);
	}
	n = host_cap_roce(T.port[0], SRNIC_OP_RC_READ_RESP_FIRST, idx, RTE_DIM(idx));
	n += host_cap_roce(T.port[0], SRNIC_OP_RC_READ_RESP_LAST, idx + n, RTE_DIM(idx) - n);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++) {
		const struct host_frame *k = &H_cap->f[idx[i]];

		assert_memory_equal(k->data, &mac_a, 6);
		assert_memory_equal(k->data + 6, &mac_b, 6);
		assert_true(k->icrc_ok);
	}

	host_xfer_dereg(&x);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
}

/* Nobody answers for 127.0.0.77: A asks again every 100 ms, B (asked
 * for another address) never answers, nothing is sent on the QP. */
static void
test_arp_retry(void **state)
{
	static const uint8_t ip_none[4] = { 127, 0, 0, 77 };
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	int64_t tx_a = host_eng_stat(eng[0], "tx_arp"), tx_b = host_eng_stat(eng[1], "tx_arp");
	int64_t rx_b = host_eng_stat(eng[1], "rx_arp"), req = host_eng_stat(eng[0], "req_pkts");
	int64_t tmo = host_eng_stat(eng[0], "retry_timeout");
	union ibv_gid g;
	struct host_ep a;
	uint8_t *buf = host_alloc(64);
	struct srnic_mr *mr;
	uint32_t idx[64], n, i;
	uint64_t t0;

	RTE_SET_USED(state);
	host_cap_reset();
	host_poll_set(eng, 2);
	host_ep_create(&a, T.dev[0], NULL, 0, 16);
	mr = srnic_reg_mr(a.pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	memcpy(&g.raw[12], ip_none, 4);
	assert_int_equal(host_connect(&a, &g, 0x77, NULL, IBV_MTU_1024, 1, 1), 0);
	assert_int_equal(host_post(&a, IBV_WR_SEND, 1, buf, 64, srnic_mr_lkey(mr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	t0 = rte_get_timer_cycles();
	while (rte_get_timer_cycles() - t0 < rte_get_timer_hz() * 35 / 100) /* 350 ms */
		host_poll();
	host_settle();
	n = host_cap_find(T.port[1], RTE_ETHER_TYPE_ARP, idx, RTE_DIM(idx));
	/* t = 0, 100, 200, 300 ms, fewer if this process was descheduled;
	 * and one more at each ACK timeout (67 ms: the timer runs while the
	 * MAC is unknown, each expiry spends a retry and asks again). */
	tmo = host_eng_stat(eng[0], "retry_timeout") - tmo;
	assert_true(tmo >= 1);
	assert_true(n >= 2 && n <= 5 + tmo);
	for (i = 0; i < n; i++)
		check_arp(H_cap->f[idx[i]].data, H_cap->f[idx[i]].len, &bcast, &mac_a,
			  RTE_ARP_OP_REQUEST, &mac_a, ip_a, &zero_mac, ip_none);
	assert_int_equal(host_eng_stat(eng[0], "tx_arp") - tx_a, n);
	assert_int_equal(host_eng_stat(eng[1], "rx_arp") - rx_b, n);
	assert_int_equal(host_eng_stat(eng[1], "tx_arp"), tx_b); /* not B's address */
	assert_int_equal(host_cap_find(T.port[0], 0, idx, RTE_DIM(idx)), 0);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), req);
	assert_int_equal(a.nwc, 0);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&a);
	rte_free(buf);
}

/* 64 QPs whose peer stopped answering (their QPNs unknown at B), a retry
 * timeout every ~4 ms each: every expiry asks again for B's MAC
 * (eng_route_refresh()), but the wire sees at most one ARP request
 * per neighbour per SRNIC_ARP_RETRY_MS; the rest are counted. With 16,384
 * such QPs a request per expiry was ~400 broadcasts a second. */
#define STORM_QPS 64

static void
test_arp_storm_limited(void **state)
{
	static struct host_ep a[STORM_QPS];
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	struct srnic_test_path p = {
		.access = IBV_ACCESS_LOCAL_WRITE, .mtu = IBV_MTU_1024, .rq_psn = 1,
		.max_dest_rd_atomic = 1, .sq_psn = 1, .timeout = 10 /* 4.2 ms */,
		.retry_cnt = 2, .max_rd_atomic = 1,
	};
	uint8_t *buf = host_alloc(64);
	struct rte_ether_addr mac;
	struct srnic_mr *mr;
	int64_t arp, tmo, lim, starved, arp0, tmo0, lim0, starved0;
	uint64_t t0, ms;
	unsigned int i;
	int rc;

	RTE_SET_USED(state);
	host_poll_set(eng, 2);
	assert_int_equal(srnic_dev_gid(T.dev[1], 1, &p.dgid), 0);
	/* B's MAC learned from the wire, as the QPs' routes will take it */
	while ((rc = srnic_dev_resolve_neigh(T.dev[0], &p.dgid, &mac)) == -EAGAIN)
		host_poll();
	assert_int_equal(rc, 0);
	host_settle();
	for (i = 0; i < STORM_QPS; i++) {
		host_ep_create(&a[i], T.dev[0], i == 0 ? NULL : a[0].pd, 0, 4);
		p.dest_qpn = 0xabc000 + i;
		assert_int_equal(srnic_test_qp_connect(a[i].qp, &p), 0);
	}
	mr = srnic_reg_mr(a[0].pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	arp0 = host_eng_stat(eng[0], "tx_arp");
	tmo0 = host_eng_stat(eng[0], "retry_timeout");
	lim0 = host_eng_stat(eng[0], "neigh_solicit_limited");
	starved0 = host_eng_stat(eng[0], "retry_starved");
	t0 = rte_get_timer_cycles();
	for (i = 0; i < STORM_QPS; i++)
		assert_int_equal(host_post(&a[i], IBV_WR_SEND, i, buf, 64, srnic_mr_lkey(mr), 0, 0,
					   IBV_SEND_SIGNALED), 0);
	for (i = 0; i < STORM_QPS; i++)
		assert_int_equal(host_wait_wc(&a[i], 1)->status, IBV_WC_RETRY_EXC_ERR);
	ms = (rte_get_timer_cycles() - t0) * 1000 / rte_get_timer_hz();
	arp = host_eng_stat(eng[0], "tx_arp") - arp0;
	tmo = host_eng_stat(eng[0], "retry_timeout") - tmo0;
	lim = host_eng_stat(eng[0], "neigh_solicit_limited") - lim0;
	starved = host_eng_stat(eng[0], "retry_starved") - starved0;
	/* 3 expiries a QP (retry_cnt 2), and those a late poll found (a
	 * loaded host: resent, no retry spent); one request per 100 ms went
	 * out (the first, and one more per interval begun since) */
	assert_true(tmo >= STORM_QPS * 3);
	assert_true(arp >= 1);
	assert_true((uint64_t)arp <= 2 + ms / SRNIC_ARP_RETRY_MS);
	/* each expiry asks but the last, which fails the QP */
	assert_int_equal(arp + lim, STORM_QPS * 2 + starved);
	for (i = STORM_QPS; i-- > 1;)
		host_ep_destroy(&a[i]);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&a[0]);
	rte_free(buf);
}

/* IPv4 with a traffic class: TOS carried, masked out of the ICRC (both
 * computations agree), header checksum right; TTL 64, DF. */
static void
test_ipv4_tos(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	struct host_xfer x;
	struct host_ep a, b;
	uint32_t idx[16], n, i;
	int port;

	RTE_SET_USED(state);
	host_cap_reset();
	host_poll_set(eng, 2);
	host_ep_create(&a, T.dev[0], NULL, 0, 64);
	host_ep_create(&b, T.dev[1], NULL, 0, 64);
	host_connect_pair_grh(&a, &b, IBV_MTU_4096, 0xb8, 0, 0x4a, 0);
	host_xfer_setup(&x, &a, &b, ARP_READ_LEN, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, 12);
	assert_int_equal(host_xfer_read(&x, &a, 0x52), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(x.local, x.remote, ARP_READ_LEN);
	host_settle();
	for (port = 0; port < 2; port++) {
		n = host_cap_roce(T.port[port], -1, idx, RTE_DIM(idx));
		assert_int_equal(n, port == 1 ? 1 : 2);
		for (i = 0; i < n; i++) {
			const struct host_frame *k = &H_cap->f[idx[i]];
			const uint8_t *ip = k->data + 14;

			assert_int_equal(ip[0], 0x45);
			assert_int_equal(ip[1], port == 1 ? 0xb8 : 0x4a);
			assert_int_equal(host_be(ip + 2, 2), k->len - 14);
			assert_int_equal(host_be(ip + 6, 2), 0x4000); /* DF */
			assert_int_equal(ip[8], 64);
			assert_int_equal(ip[9], IPPROTO_UDP);
			/* header checksum: the sum over the header folds to 0xffff */
			assert_int_equal(srnic_ref_cksum_fold(srnic_ref_sum16(0, ip, 20)), 0);
			assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
			assert_true(k->icrc_ok);
		}
	}
	host_xfer_dereg(&x);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
}

/* An unknown host asks for C's address: every field of the reply. */
static void
test_arp_unknown_host(void **state)
{
	struct srnic_engine *eng = srnic_dev_engine(T.dev_c, 0);
	static const uint8_t ip_other[4] = { 127, 0, 0, 50 };
	uint8_t f[64], flat[512];
	uint32_t len;
	struct rte_mbuf *m;
	const uint8_t *d;
	struct host_ep c;
	union ibv_gid g;
	uint8_t *buf = host_alloc(256);
	struct srnic_mr *mr;
	struct srnic_pkt pkt;

	RTE_SET_USED(state);
	host_poll_set(&eng, 1);
	len = build_arp(f, &bcast, RTE_ARP_OP_REQUEST, &mac_x, ip_x, &zero_mac, ip_a);
	host_inject(T.rport[1], 0, f, len);
	host_settle();
	m = host_raw_rx(T.rport[1]);
	assert_non_null(m);
	assert_int_equal(rte_pktmbuf_pkt_len(m), len); /* answered in place, padding kept */
	d = rte_pktmbuf_mtod(m, const uint8_t *);
	check_arp(d, rte_pktmbuf_data_len(m), &mac_x, &mac_a, RTE_ARP_OP_REPLY, &mac_a, ip_a,
		  &mac_x, ip_x);
	rte_pktmbuf_free(m);
	assert_int_equal(host_eng_stat(eng, "rx_arp"), 1);
	assert_int_equal(host_eng_stat(eng, "tx_arp"), 1);

	/* A request for another address: counted, learned from, not answered. */
	len = build_arp(f, &bcast, RTE_ARP_OP_REQUEST, &mac_x, ip_x, &zero_mac, ip_other);
	host_inject(T.rport[1], 0, f, len);
	host_settle();
	assert_null(host_raw_rx(T.rport[1]));
	assert_int_equal(host_eng_stat(eng, "rx_arp"), 2);
	assert_int_equal(host_eng_stat(eng, "tx_arp"), 1);
	assert_int_equal(host_eng_stat(eng, "rx_host_drop"), 0);

	/* C learned X from its request: a QP to X sends at once, no ARP. */
	host_ep_create(&c, T.dev_c, NULL, 0, 16);
	mr = srnic_reg_mr(c.pd, buf, 256, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	srnic_test_fill(buf, 256, 3);
	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	memcpy(&g.raw[12], ip_x, 4);
	assert_int_equal(host_connect(&c, &g, 0x99, NULL, IBV_MTU_1024, 300, 300), 0);
	assert_int_equal(host_post(&c, IBV_WR_SEND, 1, buf, 256, srnic_mr_lkey(mr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(eng);
	m = host_raw_rx(T.rport[1]);
	assert_non_null(m);
	assert_int_equal(host_eng_stat(eng, "tx_arp"), 1);
	len = rte_pktmbuf_pkt_len(m);
	assert_int_equal(len, 14 + 20 + 8 + 12 + 256 + 4);
	d = rte_pktmbuf_read(m, 0, len, flat);
	assert_non_null(d);
	if (d != flat)
		memcpy(flat, d, len);
	assert_memory_equal(flat, &mac_x, 6);
	assert_memory_equal(flat + 6, &mac_a, 6);
	assert_int_equal(srnic_pkt_parse(m, &pkt, 0), SRNIC_PARSE_OK);
	assert_int_equal(pkt.opcode, SRNIC_OP_RC_SEND_ONLY);
	assert_int_equal(pkt.dqpn, 0x99);
	assert_int_equal(pkt.pay_len, 256);
	assert_memory_equal(flat + 14 + 12, ip_a, 4);
	assert_memory_equal(flat + 14 + 16, ip_x, 4);
	assert_memory_equal(flat + pkt.pay_off, buf, 256);
	assert_int_equal(host_icrc(flat, len, 14), flat[len - 4] | flat[len - 3] << 8 |
			 flat[len - 2] << 16 | (uint32_t)flat[len - 1] << 24);
	rte_pktmbuf_free(m);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&c);
	/* The retries of the unanswered SEND, if any, went to the raw port. */
	while ((m = host_raw_rx(T.rport[1])) != NULL)
		rte_pktmbuf_free(m);
	rte_free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arp_resolve),
		cmocka_unit_test(test_arp_retry),
		cmocka_unit_test(test_arp_storm_limited),
		cmocka_unit_test(test_ipv4_tos),
		cmocka_unit_test(test_arp_unknown_host),
	};

	return cmocka_run_group_tests_name("host_arp", tests, group_setup, group_teardown);
}
