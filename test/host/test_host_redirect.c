/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RX redirect: two devices with two engines each over a two-queue ring
 * pair (queue i of A's TX is queue i of B's RX). A's QP is on engine 1,
 * B's on engine 0: A's requests arrive on B's queue 1 and B's responses
 * on A's queue 0, so the engine that receives each packet hands it to the
 * QP's engine (rx_redirect) and the operations still complete. Once with
 * every engine polled from this thread, once with B's engines on two
 * worker lcores (the redirect ring crossing threads).
 */
#include <sched.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "host_util.h"
#include "test_eal.h"

#define RD_LEN 65536                  /* 16 READ responses at PMTU 4096 */

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x5a, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x5b, 0x02 } },
};

static struct {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_engine *eng[2][2];   /* [device][engine] */
	struct srnic_capture *cap[2];
	unsigned int lcore[2];
} T;

static int
group_setup(void **state)
{
	static const char *const args[] = { "--lcores=(0-2)@(0-1)" };
	struct host_dev_conf c;
	int i;

	RTE_SET_USED(state);
	if (host_eal_init("host_redirect", 1, args) != 0)
		return -1;
	if (srnic_link_ring_pair("rdr", 2, HOST_RING_SIZE, &T.port[0], &T.port[1]) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		const uint8_t ip[4] = { 127, 0, 0, (uint8_t)(1 + i) };

		host_dev_conf_init(&c, T.port[i], 4, ip, &mac[i], i == 0 ? "rdrA" : "rdrB");
		c.nb_engines = 2;
		T.dev[i] = host_dev_create(&c);
		T.eng[i][0] = srnic_dev_engine(T.dev[i], 0);
		T.eng[i][1] = srnic_dev_engine(T.dev[i], 1);
		T.cap[i] = host_cap_start(T.port[i]);
	}
	if (host_neigh_pair(T.dev, &mac[0], &mac[1]) != 0)
		return -1;
	return host_two_workers(T.lcore) == 2 ? 0 : -1;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	srnic_engine_stop(T.eng[1][0]);
	srnic_engine_stop(T.eng[1][1]);
	srnic_capture_stop(T.cap[0]);
	srnic_capture_stop(T.cap[1]);
	host_cap_reset();
	srnic_dev_destroy(T.dev[0]);
	srnic_dev_destroy(T.dev[1]);
	rte_eal_cleanup();
	return 0;
}

static int64_t
st(int d, int e, const char *name)
{
	return host_eng_stat(T.eng[d][e], name);
}

/* Counters of interest, before and after. */
struct rd_snap {
	int64_t redirect[2][2], redirect_drop[2][2], rx[2][2], icrc[2][2];
	int64_t req_pkts[2][2], read_pkts[2][2];
};

static void
snap(struct rd_snap *s)
{
	int d, e;

	for (d = 0; d < 2; d++)
		for (e = 0; e < 2; e++) {
			s->redirect[d][e] = st(d, e, "rx_redirect");
			s->redirect_drop[d][e] = st(d, e, "rx_redirect_drop");
			s->rx[d][e] = st(d, e, "rx_pkts");
			s->icrc[d][e] = st(d, e, "rx_icrc_err");
			s->req_pkts[d][e] = st(d, e, "req_pkts");
			s->read_pkts[d][e] = st(d, e, "resp_read_pkts");
		}
}

static void
test_redirect_read(void **state)
{
	struct srnic_engine *all[4] = { T.eng[0][0], T.eng[0][1], T.eng[1][0], T.eng[1][1] };
	uint8_t *sbuf = host_alloc(3000), *rbuf = host_alloc(3000);
	struct srnic_mr *smr, *rcvmr;
	struct host_xfer x;
	struct host_ep a, b;
	struct rd_snap s0, s1;
	const struct ibv_wc *wc;
	uint32_t idx[64], n, i, req, resp;

	RTE_SET_USED(state);
	host_cap_reset();
	host_poll_set(all, 4);
	host_ep_create(&a, T.dev[0], NULL, 1, 64);  /* A's QP on engine 1 */
	host_ep_create(&b, T.dev[1], NULL, 0, 64);  /* B's QP on engine 0 */
	host_connect_pair(&a, &b, IBV_MTU_4096);
	host_xfer_setup(&x, &a, &b, RD_LEN, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ, 21);
	srnic_test_fill(sbuf, 3000, 22);
	smr = srnic_reg_mr(a.pd, sbuf, 3000, 0);
	rcvmr = srnic_reg_mr(b.pd, rbuf, 3000, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(rcvmr);
	snap(&s0);

	assert_int_equal(host_xfer_read(&x, &a, 0x71), 0);
	wc = host_wait_wc(&a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->byte_len, RD_LEN);
	assert_memory_equal(x.local, x.remote, RD_LEN);
	assert_int_equal(host_post_recv(&b, 0x72, rbuf, 3000, srnic_mr_lkey(rcvmr)), 0);
	assert_int_equal(host_post(&a, IBV_WR_SEND, 0x73, sbuf, 3000, srnic_mr_lkey(smr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&b, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->byte_len, 3000);
	assert_memory_equal(rbuf, sbuf, 3000);
	assert_int_equal(host_wait_wc(&a, 2)->status, IBV_WC_SUCCESS);
	host_settle();
	snap(&s1);

	/* A -> B: the READ request and the SEND (2), on B's queue 1; B -> A:
	 * 16 responses and an ACK on A's queue 0. Every one of them crossed
	 * engines, and was checked (ICRC included) by the engine it came in
	 * on. */
	req = host_cap_roce(T.port[1], -1, idx, RTE_DIM(idx));
	for (i = 0; i < req; i++)
		assert_true(H_cap->f[idx[i]].icrc_ok);
	resp = host_cap_roce(T.port[0], -1, idx, RTE_DIM(idx));
	for (i = 0; i < resp; i++)
		assert_true(H_cap->f[idx[i]].icrc_ok);
	assert_int_equal(req, 2);
	assert_int_equal(resp, 17);
	assert_int_equal(s1.redirect[1][1] - s0.redirect[1][1], req);
	assert_int_equal(s1.redirect[0][0] - s0.redirect[0][0], resp);
	assert_int_equal(s1.redirect[1][0] - s0.redirect[1][0], 0);
	assert_int_equal(s1.redirect[0][1] - s0.redirect[0][1], 0);
	assert_int_equal(s1.rx[1][1] - s0.rx[1][1], req);       /* received on queue 1 */
	assert_int_equal(s1.rx[1][0] - s0.rx[1][0], req);       /* handled by engine 0 */
	assert_int_equal(s1.rx[0][0] - s0.rx[0][0], resp);
	assert_int_equal(s1.rx[0][1] - s0.rx[0][1], resp);
	for (n = 0; n < 4; n++)
		assert_int_equal(s1.redirect_drop[n / 2][n % 2], s0.redirect_drop[n / 2][n % 2]);
	assert_int_equal(srnic_dev_stat(T.dev[0], "rx_redirect") -
			 (s0.redirect[0][0] + s0.redirect[0][1]), resp);

	/* A bad ICRC on the wrong queue is dropped where it arrives, never
	 * handed over. */
	n = host_cap_roce(T.port[1], SRNIC_OP_RC_SEND_ONLY, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	{
		struct host_frame *k = &H_cap->f[idx[0]];

		k->data[k->len - 1] ^= 0x55;
		host_inject(T.port[0], 1, k->data, k->len);
	}
	host_settle();
	snap(&s0);
	assert_int_equal(s0.icrc[1][1] - s1.icrc[1][1], 1);
	assert_int_equal(s0.redirect[1][1], s1.redirect[1][1]);
	assert_int_equal(s0.rx[1][0], s1.rx[1][0]);

	host_xfer_dereg(&x);
	assert_int_equal(srnic_dereg_mr(smr), 0);
	assert_int_equal(srnic_dereg_mr(rcvmr), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
	rte_free(sbuf);
	rte_free(rbuf);
}

/* B's two engines on worker lcores: the redirect ring's producer (engine
 * 1, receiving A's requests) and consumer (engine 0, owning B's QP) run
 * on different threads. 200 READs of 64 KiB. */
static void
test_redirect_threads(void **state)
{
	struct srnic_engine *all[4] = { T.eng[0][0], T.eng[0][1], T.eng[1][0], T.eng[1][1] };
	struct host_xfer x;
	struct host_ep a, b;
	struct rd_snap s0, s1;
	int round;

	RTE_SET_USED(state);
	host_cap_reset();
	host_poll_set(all, 2); /* A's engines; B's run on workers */
	host_ep_create(&a, T.dev[0], NULL, 1, 64);
	host_ep_create(&b, T.dev[1], NULL, 0, 64);
	host_connect_pair(&a, &b, IBV_MTU_4096);
	/* remote refilled below, every 50 rounds */
	host_xfer_setup(&x, &a, &b, RD_LEN, IBV_ACCESS_LOCAL_WRITE,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 300);
	/* no capture while engines run on workers: keep the RX hooks quiet */
	srnic_capture_stop(T.cap[1]);
	T.cap[1] = NULL;
	snap(&s0);
	assert_int_equal(srnic_engine_launch(T.eng[1][0], T.lcore[0]), 0);
	assert_int_equal(srnic_engine_launch(T.eng[1][1], T.lcore[1]), 0);
	for (round = 0; round < 200; round++) {
		const struct ibv_wc *wc;

		if (round % 50 == 0)
			srnic_test_fill(x.remote, RD_LEN, 300 + round); /* no READ in flight */
		a.nwc = 0;
		assert_int_equal(host_xfer_read(&x, &a, round), 0);
		wc = host_wait_wc(&a, 1);
		if (wc->status != IBV_WC_SUCCESS)
			fail_msg("READ %d: %s", round, srnic_wc_status_str(wc->status));
		assert_int_equal(wc->wr_id, round);
		assert_memory_equal(x.local, x.remote, RD_LEN);
		if (round % 8 == 0)
			sched_yield();
	}
	assert_int_equal(srnic_engine_stop(T.eng[1][0]), 0);
	assert_int_equal(srnic_engine_stop(T.eng[1][1]), 0);
	host_settle(); /* A takes in what B sent last (answers to resends) */
	snap(&s1);
	/* Every READ request A sent (200, plus the resends a slow host's ACK
	 * timer makes: the engines run on shared vCPUs) was redirected to B's
	 * engine 0, every response B sent to A's engine 1; none lost. */
	assert_true(s1.req_pkts[0][1] - s0.req_pkts[0][1] >= 200);
	assert_int_equal(s1.redirect[1][1] - s0.redirect[1][1],
			 s1.req_pkts[0][1] - s0.req_pkts[0][1]);
	assert_true(s1.read_pkts[1][0] - s0.read_pkts[1][0] >= 200 * 16);
	assert_int_equal(s1.redirect[0][0] - s0.redirect[0][0],
			 s1.read_pkts[1][0] - s0.read_pkts[1][0]);
	assert_int_equal(s1.redirect_drop[1][1], s0.redirect_drop[1][1]);
	assert_int_equal(s1.redirect_drop[0][0], s0.redirect_drop[0][0]);
	T.cap[1] = host_cap_start(T.port[1]);
	host_xfer_dereg(&x);
	host_poll_set(all, 4); /* all engines on this thread again */
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redirect_read),
		cmocka_unit_test(test_redirect_threads),
	};

	return cmocka_run_group_tests_name("host_redirect", tests, group_setup, group_teardown);
}
