/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * host_rx: frames that are not RoCEv2 (nor ARP/ND srnic handles) go to the
 * device's host_rx callback, which owns them; without a callback they are
 * counted (rx_host_drop) and freed. RoCEv2 frames, good or bad, never
 * reach the callback. A is created with a callback, B without; frames are
 * injected on the peer port of each.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mempool.h>

#include "host_util.h"
#include "test_eal.h"

#define RX_MAX_FRAMES 64
#define RX_READ_LEN 16384

static const struct rte_ether_addr mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x1a, 0x01 } };
static const struct rte_ether_addr mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x1b, 0x02 } };
static const struct rte_ether_addr mac_x = { { 0x02, 0x00, 0x00, 0x00, 0x99, 0x01 } };
static const uint8_t ip_a[4] = { 127, 0, 0, 1 };
static const uint8_t ip_b[4] = { 127, 0, 0, 2 };
static const uint8_t ip_x[4] = { 127, 0, 0, 9 };

struct frame {
	const char *name;
	uint32_t len;
	uint8_t b[128];
};

static struct {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_engine *eng[2];
	/* what the callback saw */
	uint32_t ncb;
	uint32_t bad_arg;
	uint32_t len[RX_MAX_FRAMES];
	uint8_t data[RX_MAX_FRAMES][128];
} T;

static int cookie;

static void
on_host_rx(struct srnic_dev *dev, struct rte_mbuf *m, void *arg)
{
	if (dev != T.dev[0] || arg != &cookie)
		T.bad_arg++;
	if (T.ncb < RX_MAX_FRAMES) {
		uint32_t len = RTE_MIN(rte_pktmbuf_pkt_len(m), 128u);
		const void *d = rte_pktmbuf_read(m, 0, len, T.data[T.ncb]);

		T.len[T.ncb] = rte_pktmbuf_pkt_len(m);
		if (d != NULL && d != T.data[T.ncb])
			memcpy(T.data[T.ncb], d, len);
	}
	T.ncb++;
	rte_pktmbuf_free(m); /* the callback owns it */
}

static int
group_setup(void **state)
{
	struct host_dev_conf c;
	int i;

	RTE_SET_USED(state);
	if (host_eal_init("host_rx", 0, NULL) != 0)
		return -1;
	if (srnic_link_ring_pair("hrx", 1, HOST_RING_SIZE, &T.port[0], &T.port[1]) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		host_dev_conf_init(&c, T.port[i], 4, i == 0 ? ip_a : ip_b, i == 0 ? &mac_a : &mac_b,
				   i == 0 ? "hrxA" : "hrxB");
		if (i == 0) {
			c.host_rx = on_host_rx;
			c.host_rx_arg = &cookie;
		}
		T.dev[i] = host_dev_create(&c);
		T.eng[i] = srnic_dev_engine(T.dev[i], 0);
	}
	if (host_neigh_pair(T.dev, &mac_a, &mac_b) != 0)
		return -1;
	host_poll_set(T.eng, 2);
	return 0;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	srnic_dev_destroy(T.dev[0]);
	srnic_dev_destroy(T.dev[1]);
	rte_eal_cleanup();
	return 0;
}

/* ---- frames ---- */

static uint16_t
csum(const uint8_t *p, uint32_t n)
{
	return srnic_ref_cksum_fold(srnic_ref_sum16(0, p, n));
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static uint8_t *
eth(struct frame *f, const struct rte_ether_addr *dst, uint16_t type)
{
	memset(f->b, 0, sizeof(f->b));
	memcpy(f->b, dst, 6);
	memcpy(f->b + 6, &mac_x, 6);
	put16(f->b + 12, type);
	return f->b + 14;
}

/* IPv4 header at p with ihl words (options zero but for Router Alert),
 * l4 bytes after it; returns the L4 start. */
static uint8_t *
ipv4(uint8_t *p, const uint8_t *dst, uint8_t proto, uint32_t l4, unsigned int ihl,
     uint16_t frag)
{
	uint32_t hl = ihl * 4;

	p[0] = (uint8_t)(0x40 | ihl);
	put16(p + 2, (uint16_t)(hl + l4));
	put16(p + 4, 0x1234);
	put16(p + 6, frag);
	p[8] = ihl > 5 ? 1 : 64;
	p[9] = proto;
	memcpy(p + 12, ip_x, 4);
	memcpy(p + 16, dst, 4);
	if (ihl > 5) {
		p[20] = 0x94; /* Router Alert (RFC 2113) */
		p[21] = 4;
	}
	put16(p + 10, csum(p, hl));
	return p + hl;
}

/* The non-RoCE frames, addressed to dst_ip / dst_mac. */
static unsigned int
host_frames(struct frame *fr, const uint8_t *dst_ip, const struct rte_ether_addr *dst_mac)
{
	static const uint8_t ip6_x[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9 };
	static const uint8_t ip6_a[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	static const struct rte_ether_addr lldp_mac = { { 0x01, 0x80, 0xc2, 0, 0, 0x0e } };
	static const uint8_t igmp_grp[4] = { 224, 0, 0, 251 };
	static const struct rte_ether_addr igmp_mac = { { 0x01, 0x00, 0x5e, 0, 0, 0xfb } };
	unsigned int n = 0;
	uint8_t *p, *l4;

	/* DNS query: UDP to port 53 */
	fr[n].name = "udp53";
	p = eth(&fr[n], dst_mac, RTE_ETHER_TYPE_IPV4);
	l4 = ipv4(p, dst_ip, IPPROTO_UDP, 8 + 12, 5, 0x4000);
	put16(l4, 40000);
	put16(l4 + 2, 53);
	put16(l4 + 4, 8 + 12);
	put16(l4 + 8, 0xabcd);  /* DNS id */
	put16(l4 + 10, 0x0100); /* RD */
	put16(l4 + 12, 1);      /* one question */
	fr[n++].len = 14 + 20 + 8 + 12;

	/* TCP SYN to port 80 */
	fr[n].name = "tcp";
	p = eth(&fr[n], dst_mac, RTE_ETHER_TYPE_IPV4);
	l4 = ipv4(p, dst_ip, IPPROTO_TCP, 20, 5, 0x4000);
	put16(l4, 40001);
	put16(l4 + 2, 80);
	l4[12] = 0x50;
	l4[13] = 0x02; /* SYN */
	put16(l4 + 14, 65535);
	fr[n++].len = 14 + 20 + 20;

	/* LLDP: chassis ID, port ID, TTL, end */
	fr[n].name = "lldp";
	p = eth(&fr[n], &lldp_mac, 0x88cc);
	p[0] = 0x02; p[1] = 7; p[2] = 4; memcpy(p + 3, &mac_x, 6);
	p[9] = 0x04; p[10] = 4; p[11] = 7; memcpy(p + 12, "p01", 3);
	p[15] = 0x06; p[16] = 2; p[17] = 0; p[18] = 120;
	fr[n++].len = 60;

	/* IPv6 UDP to port 53 (an IPv4 device: still a host frame) */
	fr[n].name = "ipv6_udp53";
	p = eth(&fr[n], dst_mac, RTE_ETHER_TYPE_IPV6);
	p[0] = 0x60;
	put16(p + 4, 8 + 4);
	p[6] = IPPROTO_UDP;
	p[7] = 64;
	memcpy(p + 8, ip6_x, 16);
	memcpy(p + 24, ip6_a, 16);
	put16(p + 40, 40002);
	put16(p + 42, 53);
	put16(p + 44, 12);
	fr[n++].len = 14 + 40 + 12;

	/* ICMP echo request */
	fr[n].name = "icmp_echo";
	p = eth(&fr[n], dst_mac, RTE_ETHER_TYPE_IPV4);
	l4 = ipv4(p, dst_ip, IPPROTO_ICMP, 16, 5, 0x4000);
	l4[0] = 8;
	put16(l4 + 4, 0x77);
	put16(l4 + 6, 1);
	put16(l4 + 2, csum(l4, 16));
	fr[n++].len = 14 + 20 + 16;

	/* 802.1Q-tagged DNS query */
	fr[n].name = "vlan_udp53";
	p = eth(&fr[n], dst_mac, RTE_ETHER_TYPE_VLAN);
	put16(p, 100);
	put16(p + 2, RTE_ETHER_TYPE_IPV4);
	l4 = ipv4(p + 4, dst_ip, IPPROTO_UDP, 8 + 12, 5, 0x4000);
	put16(l4, 40003);
	put16(l4 + 2, 53);
	put16(l4 + 4, 8 + 12);
	fr[n++].len = 18 + 20 + 8 + 12;

	/* IGMPv2 membership report: IP options (Router Alert), as every
	 * host joining a group sends */
	fr[n].name = "igmp_router_alert";
	p = eth(&fr[n], &igmp_mac, RTE_ETHER_TYPE_IPV4);
	l4 = ipv4(p, igmp_grp, 2 /* IGMP */, 8, 6, 0x4000);
	l4[0] = 0x16;
	memcpy(l4 + 4, igmp_grp, 4);
	put16(l4 + 2, csum(l4, 8));
	fr[n++].len = 14 + 24 + 8;

	/* The second fragment of a large ICMP echo */
	fr[n].name = "icmp_fragment";
	p = eth(&fr[n], dst_mac, RTE_ETHER_TYPE_IPV4);
	l4 = ipv4(p, dst_ip, IPPROTO_ICMP, 40, 5, 185); /* offset 1480 */
	memset(l4, 0x5a, 40);
	fr[n++].len = 14 + 20 + 40;
	return n;
}

/* RoCEv2 frames from X: a SEND to a QPN nobody has, the same with a bad
 * ICRC, and a truncated one. */
static unsigned int
roce_frames(struct frame *fr, const uint8_t *dst_ip, const struct rte_ether_addr *dst_mac)
{
	struct srnic_route r;
	struct rte_mbuf *m = rte_pktmbuf_alloc(srnic_test_pool());
	uint8_t *bth, *pay, *t;
	unsigned int n = 0;
	const void *d;

	assert_non_null(m);
	memset(&r, 0, sizeof(r));
	r.src_mac = mac_x;
	r.dst_mac = *dst_mac;
	r.ip_ver = 4;
	r.ttl = 64;
	r.udp_sport = 0xc123;
	memcpy(r.src_ip, ip_x, 4);
	memcpy(r.dst_ip, dst_ip, 4);
	bth = srnic_pkt_init(m, &r, SRNIC_OP_RC_SEND_ONLY, 1);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, 0x5555);
	srnic_bth_set_psn(bth, 100);
	pay = (uint8_t *)rte_pktmbuf_append(m, 16);
	memset(pay, 0xc3, 16);
	assert_int_equal(srnic_pkt_finish(m, srnic_test_pool()), 0);
	assert_true(rte_pktmbuf_pkt_len(m) <= sizeof(fr[0].b));

	fr[n].name = "roce_no_qp";
	fr[n].len = rte_pktmbuf_pkt_len(m);
	d = rte_pktmbuf_read(m, 0, fr[n].len, fr[n].b);
	assert_non_null(d);
	if (d != fr[n].b)
		memcpy(fr[n].b, d, fr[n].len);
	n++;
	rte_pktmbuf_free(m);
	/* the independent ICRC agrees with what srnic_pkt_finish() wrote */
	t = fr[0].b + fr[0].len - 4;
	assert_int_equal(host_icrc(fr[0].b, fr[0].len, 14),
			 t[0] | t[1] << 8 | t[2] << 16 | (uint32_t)t[3] << 24);

	fr[n] = fr[0];
	fr[n].name = "roce_bad_icrc";
	fr[n].b[fr[n].len - 1] ^= 0xff;
	n++;

	fr[n] = fr[0];
	fr[n].name = "roce_truncated";
	fr[n].len = 14 + 20 + 8 + 4; /* UDP 4791, 4 bytes of BTH */
	put16(fr[n].b + 14 + 2, 20 + 8 + 4);
	fr[n].b[14 + 10] = fr[n].b[14 + 11] = 0;
	put16(fr[n].b + 14 + 10, csum(fr[n].b + 14, 20));
	put16(fr[n].b + 14 + 20 + 4, 8 + 4);
	n++;
	return n;
}

static unsigned int
pool_avail(void)
{
	return rte_mempool_avail_count(srnic_test_pool());
}

/* Non-RoCE frames reach A's callback, byte for byte, once each. */
static void
test_host_rx_callback(void **state)
{
	struct frame fr[16];
	unsigned int n = host_frames(fr, ip_a, &mac_a), i, avail = pool_avail();
	int64_t malformed = host_eng_stat(T.eng[0], "rx_malformed");

	RTE_SET_USED(state);
	T.ncb = 0;
	for (i = 0; i < n; i++) {
		host_inject(T.port[1], 0, fr[i].b, fr[i].len);
		host_settle();
		if (T.ncb != i + 1)
			fail_msg("frame %s: %u callbacks, expected %u (rx_host_drop %" PRId64
				 ", rx_malformed %" PRId64 ")", fr[i].name, T.ncb, i + 1,
				 host_eng_stat(T.eng[0], "rx_host_drop"),
				 host_eng_stat(T.eng[0], "rx_malformed") - malformed);
		assert_int_equal(T.len[i], fr[i].len);
		assert_memory_equal(T.data[i], fr[i].b, fr[i].len);
	}
	assert_int_equal(T.bad_arg, 0);
	assert_int_equal(host_eng_stat(T.eng[0], "rx_host"), n);
	assert_int_equal(host_eng_stat(T.eng[0], "rx_host_drop"), 0);
	assert_int_equal(pool_avail(), avail); /* the callback freed each, once */
}

/* RoCEv2 frames never reach the callback: good traffic, a frame for no
 * QP, a bad ICRC, a truncated one; nor does an ARP request. */
static void
test_host_rx_not_roce(void **state)
{
	struct frame fr[4], arp;
	unsigned int n = roce_frames(fr, ip_a, &mac_a), i, avail = pool_avail();
	int64_t host0 = host_eng_stat(T.eng[0], "rx_host");
	int64_t noqp0 = host_eng_stat(T.eng[0], "rx_no_qp");
	int64_t icrc0 = host_eng_stat(T.eng[0], "rx_icrc_err");
	int64_t bad0 = host_eng_stat(T.eng[0], "rx_malformed");
	int64_t arp0 = host_eng_stat(T.eng[0], "rx_arp");
	struct host_ep a, b;
	struct host_xfer x;
	uint8_t *p;

	RTE_SET_USED(state);
	T.ncb = 0;
	for (i = 0; i < n; i++)
		host_inject(T.port[1], 0, fr[i].b, fr[i].len);
	host_settle();
	assert_int_equal(T.ncb, 0);
	assert_int_equal(host_eng_stat(T.eng[0], "rx_no_qp") - noqp0, 1);
	assert_int_equal(host_eng_stat(T.eng[0], "rx_icrc_err") - icrc0, 1);
	assert_int_equal(host_eng_stat(T.eng[0], "rx_malformed") - bad0, 1);

	/* an ARP request for another address: srnic's, not the host's */
	p = eth(&arp, &(struct rte_ether_addr){ { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } },
		RTE_ETHER_TYPE_ARP);
	p[1] = 1; p[2] = 8; p[4] = 6; p[5] = 4; p[7] = 1;
	memcpy(p + 8, &mac_x, 6);
	memcpy(p + 14, ip_x, 4);
	memcpy(p + 24, ip_b, 4);
	arp.len = 60;
	host_inject(T.port[1], 0, arp.b, arp.len);
	host_settle();
	assert_int_equal(T.ncb, 0);
	assert_int_equal(host_eng_stat(T.eng[0], "rx_arp") - arp0, 1);
	assert_int_equal(pool_avail(), avail);

	/* a READ both ways */
	host_ep_create(&a, T.dev[0], NULL, 0, 64);
	host_ep_create(&b, T.dev[1], NULL, 0, 64);
	host_connect_pair(&a, &b, IBV_MTU_1024);
	host_xfer_setup(&x, &a, &b, RX_READ_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 2);
	srnic_test_fill(x.local, RX_READ_LEN, 1);
	assert_int_equal(host_post(&a, IBV_WR_RDMA_READ, 1, x.local, RX_READ_LEN / 2,
				   srnic_mr_lkey(x.lmr), (uintptr_t)x.remote, srnic_mr_rkey(x.rmr),
				   IBV_SEND_SIGNALED), 0);
	assert_int_equal(host_post(&b, IBV_WR_RDMA_READ, 2, x.remote + RX_READ_LEN / 2,
				   RX_READ_LEN / 2, srnic_mr_lkey(x.rmr),
				   (uintptr_t)x.local + RX_READ_LEN / 2, srnic_mr_rkey(x.lmr),
				   IBV_SEND_SIGNALED), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_int_equal(host_wait_wc(&b, 1)->status, IBV_WC_SUCCESS);
	host_settle();
	assert_memory_equal(x.local, x.remote, RX_READ_LEN);
	assert_true(host_eng_stat(T.eng[0], "rx_pkts") > 16);
	assert_int_equal(T.ncb, 0);
	assert_int_equal(host_eng_stat(T.eng[0], "rx_host"), host0);
	host_xfer_dereg(&x);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
}

/* Without a callback: the same frames are counted and dropped (freed). */
static void
test_host_rx_drop(void **state)
{
	struct frame fr[16];
	unsigned int n = host_frames(fr, ip_b, &mac_b), i, avail = pool_avail();

	RTE_SET_USED(state);
	T.ncb = 0;
	for (i = 0; i < n; i++) {
		host_inject(T.port[0], 0, fr[i].b, fr[i].len);
		host_settle();
		if (host_eng_stat(T.eng[1], "rx_host_drop") != i + 1)
			fail_msg("frame %s: rx_host_drop %" PRId64 ", expected %u", fr[i].name,
				 host_eng_stat(T.eng[1], "rx_host_drop"), i + 1);
	}
	assert_int_equal(host_eng_stat(T.eng[1], "rx_host"), 0);
	assert_int_equal(T.ncb, 0);
	assert_int_equal(pool_avail(), avail);
	/* RoCE frames are not host frames there either */
	n = roce_frames(fr, ip_b, &mac_b);
	for (i = 0; i < n; i++)
		host_inject(T.port[0], 0, fr[i].b, fr[i].len);
	host_settle();
	assert_int_equal(host_eng_stat(T.eng[1], "rx_host_drop"), host_frames(fr, ip_b, &mac_b));
	assert_int_equal(host_eng_stat(T.eng[1], "rx_icrc_err"), 1);
	assert_int_equal(pool_avail(), avail);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_rx_callback),
		cmocka_unit_test(test_host_rx_not_roce),
		cmocka_unit_test(test_host_rx_drop),
	};

	return cmocka_run_group_tests_name("host_rx", tests, group_setup, group_teardown);
}
