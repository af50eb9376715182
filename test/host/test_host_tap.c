/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port that offers what a physical NIC does: net_tap,
 * which has the IPv4 checksum offload and UDP/IP RSS. In a network
 * namespace of its own (unshare), two tap ports joined by a kernel bridge:
 * A (one engine) and B (two engines, two queues).
 *
 * - Port setup asks for what the port offers: RSS over UDP with two
 *   engines (not with one), the IPv4 checksum offload on both.
 * - The checksum is the NIC's: every RoCEv2 packet A hands to the PMD
 *   carries RTE_MBUF_F_TX_IP_CKSUM with the right l2/l3 lengths and a
 *   zero checksum field, and the frames B receives (tap filled them) have
 *   a valid checksum and ICRC, the WRITEs' bytes landed.
 * - Many QPs: B's rx_redirect share is printed (the tap's queue choice is
 *   the kernel's flow hash with its flow table; a NIC's RSS is a hash).
 *
 * Skipped (not failed) where a namespace or tap device cannot be had.
 */
/* rte_eth_dev_conf_get() is experimental in DPDK 22.11 */
#define ALLOW_EXPERIMENTAL_API

#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "host_util.h"
#include "test_eal.h"

#define TAP_NQP 32                 /* QP pairs of the RSS run */
#define TAP_WR_LEN 4096
#define TAP_WRS 8                  /* WRITEs per QP */

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x7a, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x7b, 0x02 } },
};

static struct {
	bool ok;                        /* namespace + taps + bridge up */
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_engine *eng[3];    /* A's, B's 0 and 1 */
	struct srnic_capture *cap;
	/* A's TX as the PMD sees it */
	uint32_t tx_v4, tx_flagged, tx_sw_cksum, tx_bad_len;
} T;

static uint16_t
tx_cb(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	uint16_t i;

	RTE_SET_USED(port);
	RTE_SET_USED(queue);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		const struct rte_mbuf *m = pkts[i];
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(f + 14);

		if (m->data_len < 14 + 20 + 8 || host_be(f + 12, 2) != RTE_ETHER_TYPE_IPV4 ||
		    ip->next_proto_id != IPPROTO_UDP ||
		    host_be(f + 14 + 20 + 2, 2) != SRNIC_ROCE_UDP_PORT)
			continue;
		T.tx_v4++;
		if ((m->ol_flags & (RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM)) ==
		    (RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM))
			T.tx_flagged++;
		if (ip->hdr_checksum != 0)
			T.tx_sw_cksum++;
		if (m->l2_len != 14 || m->l3_len != 20)
			T.tx_bad_len++;
	}
	return n;
}

static int
group_setup(void **state)
{
	static const char *const args[] = {
		"--vdev=net_tap_srA,iface=srtapA", "--vdev=net_tap_srB,iface=srtapB",
	};
	struct host_dev_conf c;
	int i;

	RTE_SET_USED(state);
	/* A namespace of our own: the taps and the bridge vanish with us,
	 * and parallel tests never see them. */
	if (unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "host_tap: no network namespace: skipped\n");
		return 0;
	}
	if (host_eal_init("host_tap", 2, args) != 0)
		return -1;
	if (rte_eth_dev_get_port_by_name("net_tap_srA", &T.port[0]) != 0 ||
	    rte_eth_dev_get_port_by_name("net_tap_srB", &T.port[1]) != 0) {
		fprintf(stderr, "host_tap: no tap ports: skipped\n");
		return 0;
	}
	for (i = 0; i < 2; i++) {
		const uint8_t ip[4] = { 10, 77, 0, (uint8_t)(1 + i) };

		host_dev_conf_init(&c, T.port[i], 4, ip, &mac[i], i == 0 ? "tapA" : "tapB");
		c.nb_engines = (uint16_t)(1 + i);
		c.mtu = 1500;
		T.dev[i] = host_dev_create(&c);
	}
	T.eng[0] = srnic_dev_engine(T.dev[0], 0);
	T.eng[1] = srnic_dev_engine(T.dev[1], 0);
	T.eng[2] = srnic_dev_engine(T.dev[1], 1);
	host_poll_set(T.eng, 3);
	if (host_neigh_pair(T.dev, &mac[0], &mac[1]) != 0)
		return -1;
	if (host_sh("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1") ||
	    host_sh("ip link add srbr type bridge && ip link set srtapA master srbr && "
	       "ip link set srtapB master srbr && ip link set srbr up && "
	       "ip link set srtapA up && ip link set srtapB up"))
		return 0;
	if (rte_eth_add_tx_callback(T.port[0], 0, tx_cb, NULL) == NULL)
		return -1;
	T.cap = host_cap_start(T.port[1]);
	T.ok = true;
	return 0;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	if (T.cap != NULL)
		srnic_capture_stop(T.cap);
	host_cap_reset();
	return 0;
}

static void
test_port_conf(void **state)
{
	struct rte_eth_conf conf;
	int i;

	RTE_SET_USED(state);
	if (T.dev[1] == NULL)
		skip();
	for (i = 0; i < 2; i++) {
		assert_int_equal(rte_eth_dev_conf_get(T.port[i], &conf), 0);
		assert_true(conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM);
		if (i == 0) { /* one engine, one queue: nothing to spread */
			assert_int_equal(conf.rxmode.mq_mode, RTE_ETH_MQ_RX_NONE);
			continue;
		}
		assert_int_equal(conf.rxmode.mq_mode, RTE_ETH_MQ_RX_RSS);
		assert_true(conf.rx_adv_conf.rss_conf.rss_hf & RTE_ETH_RSS_NONFRAG_IPV4_UDP);
		assert_true(conf.rx_adv_conf.rss_conf.rss_hf & RTE_ETH_RSS_NONFRAG_IPV6_UDP);
	}
}

static void
connect_eps(struct host_ep *a, struct host_ep *b, uint16_t b_engine)
{
	host_ep_create(a, T.dev[0], NULL, 0, 64);
	host_ep_create(b, T.dev[1], NULL, b_engine, 64);
	host_connect_pair(a, b, IBV_MTU_1024);
}

static void
test_ipv4_cksum_offload(void **state)
{
	struct host_ep a, b;
	struct srnic_mr *lmr, *rmr;
	uint8_t *l, *r;
	uint32_t i, roce = 0;

	RTE_SET_USED(state);
	if (!T.ok)
		skip();
	connect_eps(&a, &b, 0);
	l = rte_zmalloc("tap_l", TAP_WRS * TAP_WR_LEN, 4096);
	r = rte_zmalloc("tap_r", TAP_WRS * TAP_WR_LEN, 4096);
	assert_non_null(l);
	assert_non_null(r);
	srnic_test_fill(l, TAP_WRS * TAP_WR_LEN, 21);
	lmr = srnic_reg_mr(a.pd, l, TAP_WRS * TAP_WR_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(b.pd, r, TAP_WRS * TAP_WR_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(lmr);
	assert_non_null(rmr);
	host_cap_reset();
	memset(&T.tx_v4, 0, sizeof(uint32_t) * 4);
	for (i = 0; i < TAP_WRS; i++) {
		struct ibv_sge s = { .addr = (uintptr_t)l + i * TAP_WR_LEN, .length = TAP_WR_LEN,
				     .lkey = srnic_mr_lkey(lmr) };

		assert_int_equal(srnic_test_post_send(a.qp, IBV_WR_RDMA_WRITE, i, &s, 1,
						      (uintptr_t)r + i * TAP_WR_LEN,
						      srnic_mr_rkey(rmr), IBV_SEND_SIGNALED), 0);
	}
	for (i = 1; i <= TAP_WRS; i++)
		assert_int_equal(host_wait_wc(&a, i)->status, IBV_WC_SUCCESS);
	assert_memory_equal(l, r, TAP_WRS * TAP_WR_LEN);

	/* 4 KiB at PMTU 1024: 4 packets a WRITE, each checksummed by the PMD */
	assert_true(T.tx_v4 >= TAP_WRS * 4);
	assert_int_equal(T.tx_flagged, T.tx_v4);
	assert_int_equal(T.tx_sw_cksum, 0);
	assert_int_equal(T.tx_bad_len, 0);
	for (i = 0; i < H_cap->n; i++) {
		const struct host_frame *f = &H_cap->f[i];
		uint32_t l3;

		if (f->len < 14 + 20 || host_be(f->data + 12, 2) != RTE_ETHER_TYPE_IPV4)
			continue;
		l3 = 14;
		if (f->data[l3 + 9] != IPPROTO_UDP ||
		    host_be(f->data + l3 + 22, 2) != SRNIC_ROCE_UDP_PORT)
			continue;
		roce++;
		/* the checksum the tap filled in: the header sums to 0xFFFF */
		assert_int_equal(rte_ipv4_cksum((const struct rte_ipv4_hdr *)(f->data + l3)), 0);
		assert_int_equal(f->parse_rc, 0);
		assert_true(f->icrc_ok);
	}
	assert_true(roce >= TAP_WRS * 4);
	srnic_dereg_mr(lmr);
	srnic_dereg_mr(rmr);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	rte_free(l);
	rte_free(r);
}

/* Measured, not a limit: how much of B's traffic arrives on the queue of
 * another engine than its QP's, with QPs alternating over B's engines. */
static void
test_rss_redirect_share(void **state)
{
	static struct host_ep a[TAP_NQP], b[TAP_NQP];
	struct srnic_mr *lmr[TAP_NQP], *rmr[TAP_NQP];
	uint8_t *l, *r;
	int64_t rx0[2], rd0[2], rx[2], rd[2];
	uint32_t q, i;

	RTE_SET_USED(state);
	if (!T.ok)
		skip();
	l = rte_zmalloc("tap_l", TAP_NQP * TAP_WR_LEN, 4096);
	r = rte_zmalloc("tap_r", TAP_NQP * TAP_WR_LEN, 4096);
	assert_non_null(l);
	assert_non_null(r);
	srnic_test_fill(l, TAP_NQP * TAP_WR_LEN, 5);
	for (q = 0; q < TAP_NQP; q++) {
		connect_eps(&a[q], &b[q], (uint16_t)(q & 1));
		lmr[q] = srnic_reg_mr(a[q].pd, l + q * TAP_WR_LEN, TAP_WR_LEN,
				      IBV_ACCESS_LOCAL_WRITE);
		rmr[q] = srnic_reg_mr(b[q].pd, r + q * TAP_WR_LEN, TAP_WR_LEN,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		assert_non_null(lmr[q]);
		assert_non_null(rmr[q]);
	}
	for (i = 0; i < 2; i++) {
		rx0[i] = host_eng_stat(T.eng[1 + i], "rx_pkts");
		rd0[i] = host_eng_stat(T.eng[1 + i], "rx_redirect");
	}
	for (i = 0; i < TAP_WRS; i++)
		for (q = 0; q < TAP_NQP; q++) {
			struct ibv_sge s = { .addr = (uintptr_t)l + q * TAP_WR_LEN,
					     .length = TAP_WR_LEN, .lkey = srnic_mr_lkey(lmr[q]) };

			assert_int_equal(srnic_test_post_send(a[q].qp, IBV_WR_RDMA_WRITE, i, &s, 1,
							      (uintptr_t)r + q * TAP_WR_LEN,
							      srnic_mr_rkey(rmr[q]),
							      IBV_SEND_SIGNALED), 0);
		}
	for (q = 0; q < TAP_NQP; q++)
		assert_int_equal(host_wait_wc(&a[q], TAP_WRS)->status, IBV_WC_SUCCESS);
	assert_memory_equal(l, r, TAP_NQP * TAP_WR_LEN);
	for (i = 0; i < 2; i++) {
		rx[i] = host_eng_stat(T.eng[1 + i], "rx_pkts") - rx0[i];
		rd[i] = host_eng_stat(T.eng[1 + i], "rx_redirect") - rd0[i];
	}
	fprintf(stderr, "host_tap: %u QPs over B's 2 engines: queue 0 rx %" PRId64
		" (redirected %" PRId64 "), queue 1 rx %" PRId64 " (redirected %" PRId64
		"): redirect share %.1f%%\n", TAP_NQP, rx[0], rd[0], rx[1], rd[1],
		100.0 * (double)(rd[0] + rd[1]) / (double)RTE_MAX(rx[0] + rx[1], 1));
	for (q = 0; q < TAP_NQP; q++) {
		srnic_dereg_mr(lmr[q]);
		srnic_dereg_mr(rmr[q]);
		host_ep_destroy(&a[q]);
		host_ep_destroy(&b[q]);
	}
	rte_free(l);
	rte_free(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_port_conf),
		cmocka_unit_test(test_ipv4_cksum_offload),
		cmocka_unit_test(test_rss_redirect_share),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
