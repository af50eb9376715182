/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbours and the retry timer (issue 12, item 9): a QP whose peer
 * never resolves still times out (RETRY_EXC_ERR after retry_cnt expiries,
 * one ARP request per expiry).
 */
#include <string.h>

#include <rte_arp.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host_util.h"

/* timeout code 10: 4.096 us * 2^10 = 4.2 ms, far below the ARP interval */
#define NEIGH_TMO 10
#define NEIGH_RETRY 3

static const struct rte_ether_addr mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x01 } };
static const struct rte_ether_addr mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x02 } };
static const uint8_t ip_a[4] = { 127, 0, 0, 1 };
static const uint8_t ip_b[4] = { 127, 0, 0, 2 };

static struct host_trio T;

static void
v4_gid(union ibv_gid *g, const uint8_t *ip)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	memcpy(&g->raw[12], ip, 4);
}

static int
ep_connect(struct host_ep *ep, const union ibv_gid *g, uint32_t dqpn, uint8_t retry_cnt)
{
	struct srnic_test_path p = {
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_WRITE,
		.mtu = IBV_MTU_1024, .dest_qpn = dqpn, .rq_psn = 1, .max_dest_rd_atomic = 16,
		.dgid = *g, .sq_psn = 1, .timeout = NEIGH_TMO, .retry_cnt = retry_cnt,
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
	return host_trio_setup(&T, "ngh", 4, ip_a, ip_b, &mac_a, &mac_b);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	host_trio_teardown(&T);
	rte_eal_cleanup();
	return 0;
}

/* Item 9, the reproduction: a peer IP nobody answers, a short
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
	int64_t tmo = host_eng_stat(eng[0], "retry_timeout");
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
	assert_int_equal(ep_connect(&a, &g, 0x77, NEIGH_RETRY), 0);
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
	 * (more only if this thread slept past the 100 ms ARP interval) */
	assert_int_equal(host_eng_stat(eng[0], "retry_timeout") - tmo, NEIGH_RETRY + 1);
	if (t1 - t0 < rte_get_timer_hz() / 10)
		assert_int_equal(host_eng_stat(eng[0], "tx_arp") - tx_arp, NEIGH_RETRY + 1);
	else
		assert_true(host_eng_stat(eng[0], "tx_arp") - tx_arp >= NEIGH_RETRY + 1);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), req); /* nothing to send to */
	host_settle();
	assert_int_equal(a.nwc, 2);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	host_ep_destroy(&a);
	rte_free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unresolved_times_out),
	};

	return cmocka_run_group_tests_name("host_neigh", tests, group_setup, group_teardown);
}
