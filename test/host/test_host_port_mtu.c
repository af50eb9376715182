/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The kernel lowers the MTU under an af_packet port: `ip link set dev
 * srmtuA mtu 1000` on the veth A's port stands on, in a network namespace
 * of the test's own (unshare), B on the veth's other end. DPDK's af_packet
 * reports the MTU it was configured with (1500) whatever the kernel does,
 * so srnic reads the interface's (SIOCGIFMTU).
 *
 * - A's live RC QP at path MTU 1024 goes to ERR with IBV_EVENT_QP_FATAL
 *   (port_mtu_change, port_mtu_qp_err), the port's active_mtu is 512, a QP
 *   connected after asks 1024, gets 512, and its 8 KiB WRITE lands.
 * - A's UD QP follows the port: a 1024-byte datagram is not sent and
 *   completes successfully (C10-93.1.1, req_ud_too_long), a 512-byte one
 *   lands; the MTU back at 1500, the 1024-byte one lands again.
 *
 * Skipped (not failed) where a namespace or a veth pair cannot be had.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host_util.h"

#define MTU_QKEY 0x11111111
#define MTU_WRITE_LEN 8192
#define MTU_UD_BIG 1024                    /* fits 1500, not 1000 */
#define MTU_UD_SMALL 512

static struct {
	bool ok;                        /* namespace + veth pair + ports */
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_engine *eng[2];
} T;

static int
group_setup(void **state)
{
	static const char *const args[] = {
		"--vdev=net_af_packet0,iface=srmtuA", "--vdev=net_af_packet1,iface=srmtuB",
	};
	struct rte_ether_addr mac[2];
	struct host_dev_conf c;
	int i;

	RTE_SET_USED(state);
	/* A namespace of our own: the veths vanish with us, and parallel
	 * tests never see them. */
	if (unshare(CLONE_NEWNET) != 0) {
		fprintf(stderr, "host_port_mtu: no network namespace (needs root): skipped\n");
		return 0;
	}
	if (host_sh("ip link add srmtuA type veth peer name srmtuB && ip link set srmtuA up && "
	       "ip link set srmtuB up"))
		return 0;
	if (host_eal_init("host_port_mtu", 2, args) != 0)
		return -1;
	if (rte_eth_dev_get_port_by_name("net_af_packet0", &T.port[0]) != 0 ||
	    rte_eth_dev_get_port_by_name("net_af_packet1", &T.port[1]) != 0) {
		fprintf(stderr, "host_port_mtu: no af_packet ports: skipped\n");
		return 0;
	}
	for (i = 0; i < 2; i++) {
		const uint8_t ip[4] = { 10, 79, 0, (uint8_t)(1 + i) };

		if (rte_eth_macaddr_get(T.port[i], &mac[i]) != 0)
			return -1;
		host_dev_conf_init(&c, T.port[i], 4, ip, &mac[i], i == 0 ? "mtuA" : "mtuB");
		c.mtu = 1500;
		T.dev[i] = host_dev_create(&c);
		T.eng[i] = srnic_dev_engine(T.dev[i], 0);
	}
	host_poll_set(T.eng, 2);
	if (host_neigh_pair(T.dev, &mac[0], &mac[1]) != 0)
		return -1;
	T.ok = true;
	return 0;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	return 0;
}

/* A UD endpoint on dev's engine 0, in RTS. */
static void
ud_ep_create(struct host_ep *ep, struct srnic_dev *dev)
{
	struct srnic_qp_init_attr qi;

	memset(ep, 0, sizeof(*ep));
	ep->dev = dev;
	ep->pd = srnic_alloc_pd(dev);
	ep->own_pd = true;
	assert_non_null(ep->pd);
	ep->eng = srnic_dev_engine(dev, 0);
	ep->cq = srnic_create_cq(dev, 16, ep->eng);
	assert_non_null(ep->cq);
	memset(&qi, 0, sizeof(qi));
	qi.send_cq = qi.recv_cq = ep->cq;
	qi.max_send_wr = qi.max_recv_wr = 8;
	qi.max_send_sge = qi.max_recv_sge = 1;
	qi.qp_type = IBV_QPT_UD;
	ep->qp = srnic_create_qp(ep->pd, &qi);
	assert_non_null(ep->qp);
	host_ud_up(ep->qp, MTU_QKEY);
}

/* Set srmtuA's MTU (the kernel's) and wait until A's port watch has seen
 * its change number n; QP_FATAL events about A's QPs are counted in
 * *fatal (NULL: none may come). */
static void
set_mtu(unsigned int mtu, int64_t n, unsigned int *fatal)
{
	struct srnic_async_event ev;
	char cmd[64];
	uint64_t dl;

	snprintf(cmd, sizeof(cmd), "ip link set dev srmtuA mtu %u", mtu);
	assert_int_equal(host_sh(cmd), 0);
	dl = host_deadline();
	while (srnic_dev_stat(T.dev[0], "port_mtu_change") < n) {
		if (host_deadline_passed(dl))
			fail_msg("A's port MTU change to %u not seen (port_mtu_change %" PRId64
				 ", want %" PRId64 ")", mtu,
				 srnic_dev_stat(T.dev[0], "port_mtu_change"), n);
		host_poll();
		while (srnic_get_async_event(T.dev[0], &ev) == 0) {
			assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
			assert_non_null(fatal);
			(*fatal)++;
		}
	}
}

static enum ibv_mtu
active_mtu(void)
{
	struct ibv_port_attr pa;

	assert_int_equal(srnic_dev_query_port(T.dev[0], &pa), 0);
	return pa.active_mtu;
}

static enum ibv_mtu
qp_mtu(struct srnic_qp *qp)
{
	struct srnic_qp_init_attr qi;
	struct ibv_qp_attr qa;

	assert_int_equal(srnic_query_qp(qp, &qa, IBV_QP_PATH_MTU, &qi), 0);
	return qa.path_mtu;
}

/* A's RC QP at 1024 when the kernel lowers srmtuA to 1000 (active 512). */
static void
test_mtu_lowered_rc(void **state)
{
	struct host_ep a, b, a2, b2;
	union ibv_gid ga, gb;
	struct host_xfer x;
	uint8_t *l, *r;
	struct srnic_mr *lmr, *rmr;
	int64_t chg = srnic_dev_stat(T.dev[0], "port_mtu_change");
	int64_t qerr = srnic_dev_stat(T.dev[0], "port_mtu_qp_err");
	unsigned int fatal = 0;

	RTE_SET_USED(state);
	if (!T.ok)
		skip();
	assert_int_equal(active_mtu(), IBV_MTU_1024);
	host_ep_create(&a, T.dev[0], NULL, 0, 16);
	host_ep_create(&b, T.dev[1], NULL, 0, 16);
	host_connect_pair(&a, &b, IBV_MTU_1024);
	host_xfer_setup(&x, &a, &b, MTU_WRITE_LEN, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, 3);
	assert_int_equal(host_xfer_read(&x, &a, 1), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(x.local, x.remote, MTU_WRITE_LEN);

	set_mtu(1000, chg + 1, &fatal);
	assert_int_equal(fatal, 1);
	assert_int_equal(srnic_dev_stat(T.dev[0], "port_mtu_qp_err"), qerr + 1);
	assert_int_equal(srnic_qp_state(a.qp), IBV_QPS_ERR);
	assert_int_equal(active_mtu(), IBV_MTU_512);

	/* connected after: A's QP asks 1024 and gets 512, B's is given that
	 * (as the CM agrees on both sides' least); 16 WRITE packets land */
	host_ep_create(&a2, T.dev[0], NULL, 0, 16);
	host_ep_create(&b2, T.dev[1], NULL, 0, 16);
	assert_int_equal(srnic_dev_gid(T.dev[0], 1, &ga), 0);
	assert_int_equal(srnic_dev_gid(T.dev[1], 1, &gb), 0);
	assert_int_equal(host_connect(&a2, &gb, srnic_qp_num(b2.qp), NULL, IBV_MTU_1024, 1000, 5000),
			 0);
	assert_int_equal(qp_mtu(a2.qp), IBV_MTU_512);
	assert_int_equal(host_connect(&b2, &ga, srnic_qp_num(a2.qp), NULL, qp_mtu(a2.qp), 5000, 1000),
			 0);
	l = host_alloc(MTU_WRITE_LEN);
	r = host_alloc(MTU_WRITE_LEN);
	srnic_test_fill(l, MTU_WRITE_LEN, 9);
	lmr = srnic_reg_mr(a2.pd, l, MTU_WRITE_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(b2.pd, r, MTU_WRITE_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(lmr);
	assert_non_null(rmr);
	assert_int_equal(host_post(&a2, IBV_WR_RDMA_WRITE, 2, l, MTU_WRITE_LEN, srnic_mr_lkey(lmr),
				   (uintptr_t)r, srnic_mr_rkey(rmr), IBV_SEND_SIGNALED), 0);
	assert_int_equal(host_wait_wc(&a2, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(l, r, MTU_WRITE_LEN);

	set_mtu(1500, chg + 2, NULL);
	assert_int_equal(active_mtu(), IBV_MTU_1024);
	assert_int_equal(srnic_dereg_mr(lmr), 0);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	host_xfer_dereg(&x);
	host_ep_destroy(&a2);
	host_ep_destroy(&b2);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
	rte_free(l);
	rte_free(r);
}

/* A's UD endpoint, B's, and what they send and receive. */
static struct {
	struct host_ep a, b;
	struct srnic_ah *ah;
	struct srnic_mr *smr, *rmr;
	uint8_t *src, *dst;
} U;

/* A datagram of len bytes from A's UD QP to B's: A's completion is a
 * success whether it went or not (C10-93.1.1). B's receive is posted. */
static void
ud_send(uint32_t len)
{
	uint32_t n = U.a.nwc + 1;

	assert_int_equal(host_post_recv(&U.b, n, U.dst, SRNIC_GRH_LEN + MTU_UD_BIG,
					srnic_mr_lkey(U.rmr)), 0);
	assert_int_equal(host_ud_send(U.a.qp, U.ah, srnic_qp_num(U.b.qp), MTU_QKEY, n, U.src, len,
				      srnic_mr_lkey(U.smr)), 0);
	assert_int_equal(host_wait_wc(&U.a, n)->status, IBV_WC_SUCCESS);
}

/* B's next completion is a datagram of len bytes, A's first len. */
static void
ud_landed(uint32_t len)
{
	const struct ibv_wc *wc = host_wait_wc(&U.b, U.b.nwc + 1);

	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + len);
	assert_memory_equal(U.dst + SRNIC_GRH_LEN, U.src, len);
}

/* A's UD QP follows the port's active MTU down and up again. */
static void
test_mtu_lowered_ud(void **state)
{
	int64_t chg = srnic_dev_stat(T.dev[0], "port_mtu_change");
	int64_t too_long = host_eng_stat(T.eng[0], "req_ud_too_long");

	RTE_SET_USED(state);
	if (!T.ok)
		skip();
	ud_ep_create(&U.a, T.dev[0]);
	ud_ep_create(&U.b, T.dev[1]);
	assert_int_equal(qp_mtu(U.a.qp), IBV_MTU_1024);
	U.ah = host_ah_to(U.a.pd, T.dev[1]);
	U.src = host_alloc(MTU_UD_BIG);
	U.dst = host_alloc(SRNIC_GRH_LEN + MTU_UD_BIG);
	srnic_test_fill(U.src, MTU_UD_BIG, 5);
	U.smr = srnic_reg_mr(U.a.pd, U.src, MTU_UD_BIG, IBV_ACCESS_LOCAL_WRITE);
	U.rmr = srnic_reg_mr(U.b.pd, U.dst, SRNIC_GRH_LEN + MTU_UD_BIG, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(U.smr);
	assert_non_null(U.rmr);

	set_mtu(1000, chg + 1, NULL);
	assert_int_equal(qp_mtu(U.a.qp), IBV_MTU_512);
	/* over the port's MTU: not sent, no error (C10-93.1.1) */
	ud_send(MTU_UD_BIG);
	assert_int_equal(host_eng_stat(T.eng[0], "req_ud_too_long"), too_long + 1);
	/* one that fits lands, and is the first B receives */
	ud_send(MTU_UD_SMALL);
	ud_landed(MTU_UD_SMALL);

	/* back at 1500: the big one goes again */
	set_mtu(1500, chg + 2, NULL);
	assert_int_equal(qp_mtu(U.a.qp), IBV_MTU_1024);
	ud_send(MTU_UD_BIG);
	ud_landed(MTU_UD_BIG);
	assert_int_equal(host_eng_stat(T.eng[0], "req_ud_too_long"), too_long + 1);

	assert_int_equal(srnic_destroy_ah(U.ah), 0);
	assert_int_equal(srnic_dereg_mr(U.smr), 0);
	assert_int_equal(srnic_dereg_mr(U.rmr), 0);
	host_ep_destroy(&U.a);
	host_ep_destroy(&U.b);
	rte_free(U.src);
	rte_free(U.dst);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mtu_lowered_rc),
		cmocka_unit_test(test_mtu_lowered_ud),
	};

	return cmocka_run_group_tests_name("host_port_mtu", tests, group_setup, group_teardown);
}
