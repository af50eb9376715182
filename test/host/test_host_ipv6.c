/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IPv6: two devices with private addresses (fd00::1, fd00::2; the frames
 * never leave the process) and no static neighbours. A QP connected with
 * the peer's IPv6 GID resolves it by neighbour discovery (solicitation to
 * the solicited-node multicast group, advertisement back; ICMPv6
 * checksums recomputed here), then READ and SEND run over IPv6: every
 * RoCE frame's IPv6 and UDP headers are checked, its ICRC verified both
 * by srnic_pkt_parse() and by the independent CRC of host_util.c. A
 * device on a raw port answers an unknown host's solicitation.
 */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host_util.h"

#define V6_READ_LEN 8192
#define V6_SEND_LEN 3000
#define ND_NS 135
#define ND_NA 136

static const struct rte_ether_addr mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x6a, 0x01 } };
static const struct rte_ether_addr mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x6b, 0x02 } };
static const struct rte_ether_addr mac_x = { { 0x02, 0x00, 0x00, 0x00, 0x99, 0x06 } };
static const uint8_t ip_a[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
static const uint8_t ip_b[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 };
static const uint8_t ip_x[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x34 };

static struct host_trio T;

static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	if (host_eal_init("host_ipv6", 0, NULL) != 0)
		return -1;
	/* C: a device whose peer is a raw port driven by the test. */
	return host_trio_setup(&T, "nd6", 6, ip_a, ip_b, &mac_a, &mac_b);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	host_trio_teardown(&T);
	rte_eal_cleanup();
	return 0;
}

/* Check an Ethernet + IPv6 + ND frame (one link-layer address option). */
static void
check_nd(const uint8_t *f, uint32_t len, const struct rte_ether_addr *edst,
	 const struct rte_ether_addr *esrc, const uint8_t *sip, const uint8_t *dip,
	 uint8_t type, uint8_t flags, const uint8_t *target, uint8_t opt,
	 const struct rte_ether_addr *ll)
{
	const uint8_t *ip6 = f + 14, *icmp = ip6 + 40;
	uint8_t copy[32];

	assert_int_equal(len, 14 + 40 + 32);
	assert_memory_equal(f, edst, 6);
	assert_memory_equal(f + 6, esrc, 6);
	assert_int_equal(host_be(f + 12, 2), RTE_ETHER_TYPE_IPV6);
	assert_int_equal(host_be(ip6, 4), 0x60000000); /* version 6, class 0, flow 0 */
	assert_int_equal(host_be(ip6 + 4, 2), 32);      /* payload length */
	assert_int_equal(ip6[6], IPPROTO_ICMPV6);
	assert_int_equal(ip6[7], 255);                  /* RFC 4861: hop limit 255 */
	assert_memory_equal(ip6 + 8, sip, 16);
	assert_memory_equal(ip6 + 24, dip, 16);
	assert_int_equal(icmp[0], type);
	assert_int_equal(icmp[1], 0);
	/* The checksum, recomputed: over the message with the field zeroed it
	 * gives the stored value; over the message as sent it gives 0. */
	memcpy(copy, icmp, 32);
	copy[2] = copy[3] = 0;
	assert_int_equal(host_cksum6(sip, dip, IPPROTO_ICMPV6, copy, 32), host_be(icmp + 2, 2));
	assert_int_equal(host_cksum6(sip, dip, IPPROTO_ICMPV6, icmp, 32), 0);
	assert_int_equal(icmp[4], flags);
	assert_int_equal(icmp[5] | icmp[6] | icmp[7], 0);
	assert_memory_equal(icmp + 8, target, 16);
	assert_int_equal(icmp[24], opt);
	assert_int_equal(icmp[25], 1);
	assert_memory_equal(icmp + 26, ll, 6);
}

/* Build an Ethernet + IPv6 + ND frame, the fields as check_nd() takes
 * them: one link-layer address option of type opt with address ll (opt
 * 0: none), hop limit hl, a good or a broken checksum; returns its length. */
static uint32_t
build_nd(uint8_t *f, const struct rte_ether_addr *edst, const struct rte_ether_addr *esrc,
	 const uint8_t *sip, const uint8_t *dip, uint8_t type, uint8_t flags,
	 const uint8_t *target, uint8_t opt, const struct rte_ether_addr *ll, uint8_t hl,
	 bool good_csum)
{
	uint8_t *ip6 = f + 14, *icmp = ip6 + 40;
	uint32_t mlen = opt != 0 ? 32 : 24;
	uint16_t ck;

	memset(f, 0, 14 + 40 + mlen);
	memcpy(f, edst, 6);
	memcpy(f + 6, esrc, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	ip6[0] = 0x60;
	ip6[5] = (uint8_t)mlen;
	ip6[6] = IPPROTO_ICMPV6;
	ip6[7] = hl;
	memcpy(ip6 + 8, sip, 16);
	memcpy(ip6 + 24, dip, 16);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	if (opt != 0) {
		icmp[24] = opt;
		icmp[25] = 1;
		memcpy(icmp + 26, ll, 6);
	}
	ck = host_cksum6(sip, dip, IPPROTO_ICMPV6, icmp, mlen);
	if (!good_csum)
		ck ^= 0x1234;
	icmp[2] = (uint8_t)(ck >> 8);
	icmp[3] = (uint8_t)ck;
	return 14 + 40 + mlen;
}

/* Linux's flow label of a QP pair whose AV has none (rdma_calc_flow_label())
 * and the UDP source port of a flow label, computed here. */
static uint32_t
ref_flow_label(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t v = (uint64_t)lqpn * rqpn;

	v ^= v >> 20;
	v ^= v >> 40;
	return (uint32_t)(v & 0xFFFFF);
}

static uint16_t
ref_fl_sport(uint32_t fl)
{
	return (uint16_t)(0xC000 | ((fl & 0x3FFF) ^ ((fl >> 14) & 0x3F)));
}

/* The IPv6/UDP/BTH headers of every RoCE frame received on port, sent by
 * QP lqpn to rqpn with a zeroed flow label in the AV: the IPv6 header
 * carries the label Linux derives from the QPNs, the port its fold. */
static uint32_t
check_roce6(uint16_t port, const uint8_t *sip, const uint8_t *dip,
	    const struct rte_ether_addr *edst, const struct rte_ether_addr *esrc, uint32_t lqpn,
	    uint32_t rqpn)
{
	uint32_t idx[256], n = host_cap_roce(port, -1, idx, RTE_DIM(idx)), i;
	uint32_t fl = ref_flow_label(lqpn, rqpn);
	uint16_t sport = ref_fl_sport(fl);

	for (i = 0; i < n; i++) {
		const struct host_frame *k = &H_cap->f[idx[i]];
		const uint8_t *ip6 = k->data + 14, *udp = ip6 + 40;

		assert_memory_equal(k->data, edst, 6);
		assert_memory_equal(k->data + 6, esrc, 6);
		assert_int_equal(host_be(k->data + 12, 2), RTE_ETHER_TYPE_IPV6);
		assert_int_not_equal(fl, 0);
		assert_int_equal(host_be(ip6, 4), 0x60000000 | fl); /* class 0 */
		assert_int_equal(host_be(ip6 + 4, 2), k->len - 14 - 40);
		assert_int_equal(ip6[6], IPPROTO_UDP);
		assert_int_equal(ip6[7], 64);
		assert_memory_equal(ip6 + 8, sip, 16);
		assert_memory_equal(ip6 + 24, dip, 16);
		assert_int_equal(host_be(udp, 2), sport);
		assert_int_equal(host_be(udp + 2, 2), SRNIC_ROCE_UDP_PORT);
		assert_int_equal(host_be(udp + 4, 2), k->len - 14 - 40);
		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK); /* srnic's ICRC check */
		assert_int_equal(k->pkt.ip_ver, 6);
		assert_int_equal(k->pkt.l3_off, 14);
		assert_int_equal(k->pkt.bth_off, 14 + 40 + 8);
		if (!k->icrc_ok) {
			host_cap_dump();
			fail_msg("frame %u: the ICRC srnic wrote and accepts is not the one "
				 "computed independently", idx[i]);
		}
	}
	return n;
}

static void
test_nd_read_send(void **state)
{
	static const uint8_t snm_b[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 2 };
	static const struct rte_ether_addr snm_mac_b = { { 0x33, 0x33, 0xff, 0, 0, 2 } };
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	struct host_ep a, b;
	struct srnic_mr *smr, *rcvmr;
	struct host_xfer x;
	uint8_t *sbuf = host_alloc(V6_SEND_LEN), *rbuf = host_alloc(V6_SEND_LEN + 100);
	union ibv_gid g;
	const struct ibv_wc *wc;
	uint32_t idx[16], n;

	RTE_SET_USED(state);
	host_cap_reset();
	/* GID 1 is the address itself; GID 0 the link-local EUI-64 of the MAC. */
	assert_int_equal(srnic_dev_gid(T.dev[1], 1, &g), 0);
	assert_memory_equal(g.raw, ip_b, 16);
	assert_int_equal(srnic_dev_gid(T.dev[1], 0, &g), 0);
	assert_int_equal(host_be(g.raw, 4), 0xfe800000);
	assert_int_equal(host_be(g.raw + 8, 4), 0x000000ff);
	assert_int_equal(host_be(g.raw + 12, 4), 0xfe006b02);

	host_ep_create(&a, T.dev[0], NULL, 0, 64);
	host_ep_create(&b, T.dev[1], NULL, 0, 64);
	host_connect_pair(&a, &b, IBV_MTU_4096);
	srnic_test_fill(sbuf, V6_SEND_LEN, 62);
	host_xfer_setup(&x, &a, &b, V6_READ_LEN, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, 61);
	smr = srnic_reg_mr(a.pd, sbuf, V6_SEND_LEN, 0);
	rcvmr = srnic_reg_mr(b.pd, rbuf, V6_SEND_LEN + 100, IBV_ACCESS_LOCAL_WRITE);
	assert_true(smr != NULL && rcvmr != NULL);
	assert_int_equal(host_xfer_read(&x, &a, 0x61), 0);

	/* A: a solicitation for fd00::2, to its solicited-node group. */
	srnic_engine_poll(eng[0]);
	assert_int_equal(host_eng_stat(eng[0], "tx_nd"), 1);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), 0);
	srnic_engine_poll(eng[1]);
	n = host_cap_find(T.port[1], RTE_ETHER_TYPE_IPV6, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	check_nd(H_cap->f[idx[0]].data, H_cap->f[idx[0]].len, &snm_mac_b, &mac_a, ip_a, snm_b,
		 ND_NS, 0, ip_b, 1 /* source link-layer address */, &mac_a);
	assert_int_equal(H_cap->f[idx[0]].parse_rc, SRNIC_PARSE_NOT_UDP);
	assert_int_equal(host_eng_stat(eng[1], "rx_nd"), 1);
	assert_int_equal(host_eng_stat(eng[1], "tx_nd"), 1); /* the advertisement only */

	/* A: the solicited advertisement (S and O set, R clear), then the READ
	 * in the same poll. */
	srnic_engine_poll(eng[0]);
	n = host_cap_find(T.port[0], RTE_ETHER_TYPE_IPV6, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	check_nd(H_cap->f[idx[0]].data, H_cap->f[idx[0]].len, &mac_a, &mac_b, ip_b, ip_a, ND_NA,
		 0x60, ip_b, 2 /* target link-layer address */, &mac_b);
	assert_int_equal(host_eng_stat(eng[0], "rx_nd"), 1);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), 1);

	host_poll_set(eng, 2);
	wc = host_wait_wc(&a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc->byte_len, V6_READ_LEN);
	assert_memory_equal(x.local, x.remote, V6_READ_LEN);

	assert_int_equal(host_post_recv(&b, 0x62, rbuf, V6_SEND_LEN + 100, srnic_mr_lkey(rcvmr)),
			 0);
	assert_int_equal(host_post(&a, IBV_WR_SEND, 0x63, sbuf, V6_SEND_LEN, srnic_mr_lkey(smr), 0,
				   0, IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&b, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RECV);
	assert_int_equal(wc->wr_id, 0x62);
	assert_int_equal(wc->byte_len, V6_SEND_LEN);
	assert_memory_equal(rbuf, sbuf, V6_SEND_LEN);
	wc = host_wait_wc(&a, 2);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_SEND);
	host_settle();

	/* A -> B: READ request, SEND ONLY; B -> A: READ FIRST, LAST, ACK. */
	assert_int_equal(check_roce6(T.port[1], ip_a, ip_b, &mac_b, &mac_a, srnic_qp_num(a.qp),
				     srnic_qp_num(b.qp)), 2);
	assert_int_equal(check_roce6(T.port[0], ip_b, ip_a, &mac_a, &mac_b, srnic_qp_num(b.qp),
				     srnic_qp_num(a.qp)), 3);
	assert_int_equal(host_cap_roce(T.port[1], SRNIC_OP_RC_READ_REQ, idx, 16), 1);
	assert_int_equal(host_cap_roce(T.port[1], SRNIC_OP_RC_SEND_ONLY, idx, 16), 1);
	assert_int_equal(H_cap->f[idx[0]].pkt.pay_len, V6_SEND_LEN);
	assert_int_equal(host_cap_roce(T.port[0], SRNIC_OP_RC_READ_RESP_FIRST, idx, 16), 1);
	assert_int_equal(H_cap->f[idx[0]].pkt.pay_len, 4096);
	assert_int_equal(H_cap->f[idx[0]].len, 14 + 40 + 8 + 12 + 4 + 4096 + 4);
	assert_int_equal(host_cap_roce(T.port[0], SRNIC_OP_RC_READ_RESP_LAST, idx, 16), 1);
	assert_int_equal(host_cap_roce(T.port[0], SRNIC_OP_RC_ACK, idx, 16), 1);
	/* Neighbour discovery happened once each way, nothing else. */
	assert_int_equal(host_eng_stat(eng[0], "tx_nd"), 1);
	assert_int_equal(host_eng_stat(eng[0], "rx_nd"), 1);
	assert_int_equal(host_eng_stat(eng[1], "tx_nd"), 1);
	assert_int_equal(host_eng_stat(eng[1], "rx_nd"), 1);
	assert_int_equal(srnic_dev_stat(T.dev[0], "rx_icrc_err"), 0);
	assert_int_equal(srnic_dev_stat(T.dev[1], "rx_icrc_err"), 0);

	host_xfer_dereg(&x);
	assert_int_equal(srnic_dereg_mr(smr), 0);
	assert_int_equal(srnic_dereg_mr(rcvmr), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
	rte_free(sbuf);
	rte_free(rbuf);
}

/* A traffic class and flow label in the GRH: carried in every IPv6
 * header, and masked out of the ICRC (IBTA A17.4.1.1: they may change on
 * the way), so both ICRC computations must still agree. */
static void
test_nd_tclass_flow_label(void **state)
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
	host_connect_pair_grh(&a, &b, IBV_MTU_4096, 0xb8, 0xabcde, 0x4a, 0x12345);
	host_xfer_setup(&x, &a, &b, V6_READ_LEN, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, 63);
	assert_int_equal(host_xfer_read(&x, &a, 0x64), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(x.local, x.remote, V6_READ_LEN);
	host_settle();
	for (port = 0; port < 2; port++) {
		/* received on port 1: A's frames */
		uint32_t vtc = port == 1 ? 0x6b8abcde : 0x64a12345;

		n = host_cap_roce(T.port[port], -1, idx, RTE_DIM(idx));
		assert_int_equal(n, port == 1 ? 1 : 2);
		for (i = 0; i < n; i++) {
			const struct host_frame *k = &H_cap->f[idx[i]];

			assert_int_equal(host_be(k->data + 14, 4), vtc);
			/* the AV's flow label gives the port (rdma_get_udp_sport()) */
			assert_int_equal(host_be(k->data + 14 + 40, 2), ref_fl_sport(vtc & 0xFFFFF));
			assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
			if (!k->icrc_ok)
				fail_msg("frame %u: srnic and the independent ICRC disagree with "
					 "traffic class and flow label set", idx[i]);
		}
	}
	host_xfer_dereg(&x);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
}

/* An unknown host solicits C's address, to the solicited-node group and
 * unicast: each gets a solicited advertisement to the host. */
static void
test_nd_unknown_host(void **state)
{
	static const uint8_t snm_a[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 1 };
	static const struct rte_ether_addr snm_mac_a = { { 0x33, 0x33, 0xff, 0, 0, 1 } };
	struct srnic_engine *eng = srnic_dev_engine(T.dev_c, 0);
	uint8_t f[128];
	struct rte_mbuf *m;
	uint32_t len;
	int i;

	RTE_SET_USED(state);
	host_poll_set(&eng, 1);
	for (i = 0; i < 2; i++) {
		len = build_nd(f, i == 0 ? &snm_mac_a : &mac_a, &mac_x, ip_x,
			       i == 0 ? snm_a : ip_a, ND_NS, 0, ip_a, 1, &mac_x, 255, true);
		host_inject(T.rport[1], 0, f, len);
		host_settle();
		m = host_raw_rx(T.rport[1]);
		assert_non_null(m);
		assert_int_equal(rte_pktmbuf_data_len(m), rte_pktmbuf_pkt_len(m));
		check_nd(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_pkt_len(m), &mac_x,
			 &mac_a, ip_a, ip_x, ND_NA, 0x60, ip_a, 2, &mac_a);
		rte_pktmbuf_free(m);
		assert_int_equal(host_eng_stat(eng, "rx_nd"), i + 1);
		assert_int_equal(host_eng_stat(eng, "tx_nd"), i + 1);
	}
	/* A solicitation for another target: no answer. */
	len = build_nd(f, &mac_a, &mac_x, ip_x, ip_a, ND_NS, 0, ip_x, 1, &mac_x, 255, true);
	host_inject(T.rport[1], 0, f, len);
	host_settle();
	assert_null(host_raw_rx(T.rport[1]));
	assert_int_equal(host_eng_stat(eng, "tx_nd"), 2);
	assert_int_equal(host_eng_stat(eng, "rx_host_drop"), 0);
	/* RFC 4861 7.1.1: hop limit other than 255, or a bad checksum: discarded */
	for (i = 0; i < 2; i++) {
		len = build_nd(f, &mac_a, &mac_x, ip_x, ip_a, ND_NS, 0, ip_a, 1, &mac_x,
			       i == 0 ? 64 : 255, i == 0);
		host_inject(T.rport[1], 0, f, len);
		host_settle();
		assert_null(host_raw_rx(T.rport[1]));
	}
	assert_int_equal(host_eng_stat(eng, "tx_nd"), 2);
	assert_int_equal(host_eng_stat(eng, "rx_malformed"), 2);
}

/* Frames C sent to the raw port: how many solicitations for target, how
 * many RoCE frames (and to which MAC the last one went). */
static void
drain_raw(const uint8_t *target, uint32_t *ns, uint32_t *roce, struct rte_ether_addr *roce_dst)
{
	struct rte_mbuf *m;

	while ((m = host_raw_rx(T.rport[1])) != NULL) {
		const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);

		assert_int_equal(host_be(f + 12, 2), RTE_ETHER_TYPE_IPV6);
		if (f[14 + 6] == IPPROTO_ICMPV6) {
			assert_int_equal(f[14 + 40], ND_NS);
			assert_memory_equal(f + 14 + 40 + 8, target, 16);
			(*ns)++;
		} else {
			assert_int_equal(f[14 + 6], IPPROTO_UDP);
			memcpy(roce_dst, f, 6);
			(*roce)++;
		}
		rte_pktmbuf_free(m);
	}
}

/* RFC 4861 7.1.2: an NA whose hop limit is not 255 (it crossed a router:
 * anyone off-link can send it) or whose checksum is wrong is discarded;
 * it must not give a QP its peer's MAC. The valid one then does. */
static void
test_nd_invalid_na(void **state)
{
	static const uint8_t ip_t[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 };
	static const struct rte_ether_addr mac_t = { { 0x02, 0x00, 0x00, 0x00, 0x77, 0x07 } };
	static const struct rte_ether_addr mac_evil = { { 0x02, 0x00, 0x00, 0x00, 0xee, 0xee } };
	struct srnic_engine *eng = srnic_dev_engine(T.dev_c, 0);
	struct rte_ether_addr dst;
	uint32_t ns = 0, roce = 0, len, i;
	int64_t bad0, nd0;
	uint8_t *buf = host_alloc(64), f[128];
	struct srnic_mr *mr;
	struct host_ep c;
	union ibv_gid g;

	RTE_SET_USED(state);
	host_poll_set(&eng, 1);
	host_ep_create(&c, T.dev_c, NULL, 0, 16);
	mr = srnic_reg_mr(c.pd, buf, 64, 0);
	assert_non_null(mr);
	memcpy(g.raw, ip_t, 16);
	assert_int_equal(host_connect(&c, &g, 0x77, NULL, IBV_MTU_1024, 1, 1), 0);
	assert_int_equal(host_post(&c, IBV_WR_SEND, 1, buf, 64, srnic_mr_lkey(mr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(eng);
	drain_raw(ip_t, &ns, &roce, &dst);
	assert_int_equal(ns, 1);

	bad0 = host_eng_stat(eng, "rx_malformed");
	nd0 = host_eng_stat(eng, "rx_nd");
	for (i = 0; i < 3; i++) {
		/* hop limit 64 (valid otherwise); a bad checksum; code 1 */
		len = build_nd(f, &mac_a, &mac_evil, ip_t, ip_a, ND_NA, 0x60, ip_t, 2, &mac_evil,
			       i == 1 ? 255 : 64, i != 1);
		if (i == 2) {
			f[14 + 40 + 1] = 1; /* code 1 */
			f[14 + 40 + 2] = f[14 + 40 + 3] = 0;
			{
				uint16_t ck = host_cksum6(ip_t, ip_a, IPPROTO_ICMPV6,
							  f + 14 + 40, 32);

				f[14 + 40 + 2] = (uint8_t)(ck >> 8);
				f[14 + 40 + 3] = (uint8_t)ck;
			}
			f[14 + 7] = 255;
		}
		host_inject(T.rport[1], 0, f, len);
		host_settle();
		drain_raw(ip_t, &ns, &roce, &dst);
		assert_int_equal(roce, 0);
	}
	assert_int_equal(host_eng_stat(eng, "rx_malformed") - bad0, 3);
	assert_int_equal(host_eng_stat(eng, "rx_nd"), nd0);
	/* The valid advertisement: the SEND goes to its MAC. */
	len = build_nd(f, &mac_a, &mac_t, ip_t, ip_a, ND_NA, 0x60, ip_t, 2, &mac_t, 255, true);
	host_inject(T.rport[1], 0, f, len);
	host_settle();
	drain_raw(ip_t, &ns, &roce, &dst);
	assert_true(roce >= 1);
	assert_memory_equal(&dst, &mac_t, 6);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&c);
	drain_raw(ip_t, &ns, &roce, &dst);
	rte_free(buf);
}

/* RFC 4861 7.2.4: a solicitation from the unspecified address (duplicate
 * address detection for C's address) is answered to all-nodes, with the
 * Solicited flag clear. */
static void
test_nd_dad(void **state)
{
	static const uint8_t unspec[16];
	static const uint8_t snm_a[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0, 0, 1 };
	static const uint8_t all_nodes[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
	static const struct rte_ether_addr snm_mac_a = { { 0x33, 0x33, 0xff, 0, 0, 1 } };
	static const struct rte_ether_addr all_nodes_mac = { { 0x33, 0x33, 0, 0, 0, 1 } };
	struct srnic_engine *eng = srnic_dev_engine(T.dev_c, 0);
	uint8_t f[128];
	struct rte_mbuf *m;
	uint32_t len;

	RTE_SET_USED(state);
	host_poll_set(&eng, 1);
	/* no source link-layer option from the unspecified address (7.1.1) */
	len = build_nd(f, &snm_mac_a, &mac_x, unspec, snm_a, ND_NS, 0, ip_a, 0, NULL, 255, true);
	assert_int_equal(len, 14 + 40 + 24);
	host_inject(T.rport[1], 0, f, len);
	host_settle();
	m = host_raw_rx(T.rport[1]);
	assert_non_null(m);
	check_nd(rte_pktmbuf_mtod(m, const uint8_t *), rte_pktmbuf_pkt_len(m), &all_nodes_mac,
		 &mac_a, ip_a, all_nodes, ND_NA, 0x20 /* O only */, ip_a, 2, &mac_a);
	rte_pktmbuf_free(m);
	assert_null(host_raw_rx(T.rport[1]));
}

/* ARP on an IPv6 device is not srnic's: a host frame (here: no callback,
 * so counted in rx_host_drop), not a silent drop. */
static void
test_nd_arp_is_host(void **state)
{
	struct srnic_engine *eng = srnic_dev_engine(T.dev_c, 0);
	int64_t drop0 = host_eng_stat(eng, "rx_host_drop");
	uint8_t f[60];

	RTE_SET_USED(state);
	host_poll_set(&eng, 1);
	memset(f, 0, sizeof(f));
	memset(f, 0xff, 6);
	memcpy(f + 6, &mac_x, 6);
	f[12] = 0x08;
	f[13] = 0x06;
	f[15] = 1;
	f[16] = 0x08;
	f[18] = 6;
	f[19] = 4;
	f[21] = 1;
	memcpy(f + 22, &mac_x, 6);
	f[28] = 10;
	f[31] = 9;
	f[38] = 10;
	f[41] = 1;
	host_inject(T.rport[1], 0, f, sizeof(f));
	host_settle();
	assert_null(host_raw_rx(T.rport[1]));
	assert_int_equal(host_eng_stat(eng, "rx_host_drop") - drop0, 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nd_read_send),
		cmocka_unit_test(test_nd_tclass_flow_label),
		cmocka_unit_test(test_nd_unknown_host),
		cmocka_unit_test(test_nd_invalid_na),
		cmocka_unit_test(test_nd_dad),
		cmocka_unit_test(test_nd_arp_is_host),
	};

	return cmocka_run_group_tests_name("host_ipv6", tests, group_setup, group_teardown);
}
