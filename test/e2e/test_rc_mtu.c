/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A port whose MTU is lowered under live QPs (issue 22 item 9: at MTU 576
 * every QP stalled with no error, 0 iterations and 380 timeouts).
 *
 * net_ring has no MTU control of its own, so this binary gives its ports
 * one, as a NIC has: rte_eth_dev_set_mtu() and rte_eth_dev_get_mtu() are
 * this file's for a port whose PMD answers -ENOTSUP (the MTU is kept
 * here; srnic's library, linked in statically, calls these), and the
 * peer's RX callback drops what the sender's MTU does not carry, as the
 * sender's MAC would not send it. Every other port gets DPDK's own.
 *
 * A 1 MiB WRITE at path MTU 4096 is on the wire when A's port goes to
 * MTU 1500: A's QP must end in bounded time with an error completion, the
 * QP in ERR and IBV_EVENT_QP_FATAL, the port's active_mtu 1024; a QP
 * connected after asks 4096 and gets 1024, and a transfer at 1024 lands.
 */
#include <dlfcn.h>
#include <string.h>

#include <rte_ethdev.h>

#include "e2e_fixture.h"

#define MTU_LEN (1 << 20)
#define MTU_HIGH 9000
#define MTU_LOW 1500

/* The emulated MTU of each port (0: the PMD's own control). */
static uint16_t port_mtu[RTE_MAX_ETHPORTS];
static uint32_t tx_pkts[RTE_MAX_ETHPORTS];
static uint32_t tx_dropped[RTE_MAX_ETHPORTS];
static struct e2e_bufs bufs;

int
rte_eth_dev_set_mtu(uint16_t port_id, uint16_t mtu)
{
	int (*real)(uint16_t, uint16_t) =
		(int (*)(uint16_t, uint16_t))dlsym(RTLD_NEXT, "rte_eth_dev_set_mtu");
	int rc = real(port_id, mtu);

	if (rc == -ENOTSUP && port_id < RTE_MAX_ETHPORTS) {
		port_mtu[port_id] = mtu;
		return 0;
	}
	return rc;
}

int
rte_eth_dev_get_mtu(uint16_t port_id, uint16_t *mtu)
{
	int (*real)(uint16_t, uint16_t *) =
		(int (*)(uint16_t, uint16_t *))dlsym(RTLD_NEXT, "rte_eth_dev_get_mtu");

	if (port_id < RTE_MAX_ETHPORTS && port_mtu[port_id] != 0 && mtu != NULL) {
		*mtu = port_mtu[port_id];
		return 0;
	}
	return real(port_id, mtu);
}

/* The sender's MAC: a frame longer than its port's MTU and the Ethernet
 * header never reaches the peer (dropped as the peer's RX burst reads it:
 * a TX callback cannot drop without the sender losing track). */
static uint16_t
mtu_rx_cb(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, uint16_t max,
	  void *arg)
{
	uint16_t i, keep = 0, from = (uint16_t)(uintptr_t)arg;

	RTE_SET_USED(port);
	RTE_SET_USED(queue);
	RTE_SET_USED(max);
	for (i = 0; i < n; i++) {
		if (port_mtu[from] != 0 && pkts[i]->pkt_len > (uint32_t)port_mtu[from] + RTE_ETHER_HDR_LEN) {
			tx_dropped[from]++;
			rte_pktmbuf_free(pkts[i]);
			continue;
		}
		pkts[keep++] = pkts[i];
	}
	tx_pkts[from] += keep;
	return keep;
}

static int
group_setup(void **state)
{
	int i;

	if (e2e_group_setup(state) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		if (port_mtu[E->p.port[i]] != MTU_HIGH) {
			fprintf(stderr, "port %u: MTU not taken by the emulation\n", E->p.port[i]);
			return -1;
		}
		if (rte_eth_add_rx_callback(E->p.port[i], 0, mtu_rx_cb,
					    (void *)(uintptr_t)E->p.port[1 - i]) == NULL)
			return -1;
	}
	return 0;
}

/* Poll until side has a completion and a QP_FATAL about its QP came. */
static const struct ibv_wc *
wait_fatal(int side)
{
	struct srnic_async_event ev;
	uint64_t dl = e2e_deadline();
	bool fatal = false;

	while (!fatal || E->nwc[side] == 0) {
		if (e2e_deadline_passed(dl))
			fail_msg("side %d: %u completions, QP_FATAL %s (%u of A's frames reached B, %u dropped at the MTU)",
				 side, E->nwc[side], fatal ? "seen" : "not seen",
				 tx_pkts[E->p.port[0]], tx_dropped[E->p.port[0]]);
		e2e_poll();
		while (srnic_get_async_event(E->p.dev[side], &ev) == 0) {
			assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
			assert_ptr_equal(ev.qp, E->qp[side]);
			fatal = true;
		}
	}
	return &E->wc[side][0];
}

static void
test_mtu_lowered_live(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_4096, .psn = { 100, 200 } };
	struct ibv_port_attr pa;
	struct ibv_qp_attr qa;
	struct srnic_qp_init_attr qi;
	const struct ibv_wc *wc;
	uint16_t pa_port = E->p.port[0];

	RTE_SET_USED(state);
	e2e_qps_renew(&c);
	e2e_bufs_new(&bufs, MTU_LEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 5, 6);
	e2e_reset();
	assert_int_equal(srnic_dev_query_port(E->p.dev[0], &pa), 0);
	assert_int_equal(pa.active_mtu, IBV_MTU_4096);

	/* 256 packets of 4096: A's first burst leaves before B polls */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, MTU_LEN, 0, IBV_SEND_SIGNALED);
	e2e_poll_side(0);
	assert_true(srnic_dev_stat(E->p.dev[0], "tx_pkts") > 0);
	assert_int_equal(rte_eth_dev_set_mtu(pa_port, MTU_LOW), 0);

	wc = wait_fatal(0);
	assert_int_equal(wc->wr_id, 1);
	assert_int_not_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	assert_int_equal(srnic_dev_query_port(E->p.dev[0], &pa), 0);
	assert_int_equal(pa.active_mtu, IBV_MTU_1024);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "port_mtu_change"), 1);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "port_mtu_qp_err"), 1);
	/* B's port kept its MTU: its QP is not the change's */
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	assert_int_equal(srnic_dev_stat(E->p.dev[1], "port_mtu_qp_err"), 0);

	/* a QP connected now asks 4096 and gets what the port carries */
	e2e_qps_renew(&c);
	assert_int_equal(srnic_query_qp(E->qp[0], &qa, IBV_QP_PATH_MTU, &qi), 0);
	assert_int_equal(qa.path_mtu, IBV_MTU_1024);
	assert_int_equal(srnic_query_qp(E->qp[1], &qa, IBV_QP_PATH_MTU, &qi), 0);
	assert_int_equal(qa.path_mtu, IBV_MTU_4096);

	/* both at 1024 (what a CM would agree on): the WRITE lands whole */
	c.mtu = IBV_MTU_1024;
	e2e_qps_renew(&c);
	e2e_reset();
	tx_dropped[pa_port] = 0;
	e2e_bufs_new(&bufs, MTU_LEN, IBV_ACCESS_LOCAL_WRITE); /* the new QPs' PD */
	e2e_bufs_fill(&bufs, 7, 8);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 0, MTU_LEN, 0, IBV_SEND_SIGNALED);
	wc = e2e_wait_wc(0, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, 2);
	assert_memory_equal(bufs.r, bufs.l, MTU_LEN);
	assert_int_equal(tx_dropped[pa_port], 0);

	/* back up: active_mtu follows, no QP fails (none is above it) */
	assert_int_equal(rte_eth_dev_set_mtu(pa_port, MTU_HIGH), 0);
	E2E_RUN_UNTIL(srnic_get_async_event(E->p.dev[0], &(struct srnic_async_event){ 0 }) ==
		      -EAGAIN && srnic_dev_stat(E->p.dev[0], "port_mtu_change") == 2);
	assert_int_equal(srnic_dev_query_port(E->p.dev[0], &pa), 0);
	assert_int_equal(pa.active_mtu, IBV_MTU_4096);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "port_mtu_qp_err"), 1);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RTS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mtu_lowered_live, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
