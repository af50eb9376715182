/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An acknowledgement owed when the QP goes to ERR: B has taken A's SEND
 * (its receive CQE is there) but has not sent the ACK yet (its route to A
 * waits for ARP), and the program moves B's QP to ERR because of that CQE,
 * as rdma_disconnect() after a last receive does. The ACK still goes once
 * the route is known, and A's SEND completes successfully instead of
 * retrying into a QP that answers nothing (RETRY_EXC_ERR, or a flush at
 * the DREQ: libfabric's rxm said "Work Request Flushed Error").
 *
 * An RNR NAK owed so (B took A's SEND with no receive posted) goes the
 * same way: NAKs ride the same per-QP FIFO as ACKs (a PSN sequence NAK
 * too), and A hears it (comp_rnr_rcvd) rather than timing out.
 */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "host_util.h"

#define LEN 64

static const struct rte_ether_addr mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x0a, 0x01 } };
static const struct rte_ether_addr mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x0b, 0x02 } };
static const uint8_t ip_a[4] = { 127, 0, 0, 1 };
static const uint8_t ip_b[4] = { 127, 0, 0, 2 };

static const struct rte_ether_addr mac_c = { { 0x02, 0x00, 0x00, 0x00, 0x0c, 0x03 } };
static const struct rte_ether_addr mac_d = { { 0x02, 0x00, 0x00, 0x00, 0x0d, 0x04 } };
static const uint8_t ip_c[4] = { 127, 0, 0, 3 };
static const uint8_t ip_d[4] = { 127, 0, 0, 4 };

static struct host_trio T, R;   /* R: the RNR case's pair, neither knowing the other's MAC */

static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	return host_eal_init("host_owed_ack", 0, NULL);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	rte_eal_cleanup();
	return 0;
}

/* each case its own pair (one pair's memory at a time): the route to the
 * peer is not known at its start */
static int
ack_setup(void **state)
{
	RTE_SET_USED(state);
	return host_trio_setup(&T, "owed", 4, ip_a, ip_b, &mac_a, &mac_b);
}

static int
rnr_setup(void **state)
{
	RTE_SET_USED(state);
	return host_trio_setup(&R, "owedrnr", 4, ip_c, ip_d, &mac_c, &mac_d);
}

static int
ack_teardown(void **state)
{
	RTE_SET_USED(state);
	host_trio_teardown(&T);
	return 0;
}

static int
rnr_teardown(void **state)
{
	RTE_SET_USED(state);
	host_trio_teardown(&R);
	return 0;
}

/* RC QPs a on t's A and b on its B, connected: A is told B's MAC (mac_b),
 * B must ask for A's, so what B owes waits for the route */
static void
half_known_pair(const struct host_trio *t, const struct rte_ether_addr *mac_b,
		struct host_ep *a, struct host_ep *b)
{
	union ibv_gid ga, gb;

	host_ep_create(a, t->dev[0], NULL, 0, 16);
	host_ep_create(b, t->dev[1], NULL, 0, 16);
	assert_int_equal(srnic_dev_gid(t->dev[0], 1, &ga), 0);
	assert_int_equal(srnic_dev_gid(t->dev[1], 1, &gb), 0);
	assert_int_equal(host_connect(a, &gb, srnic_qp_num(b->qp), mac_b, IBV_MTU_1024,
				      1000, 5000), 0);
	assert_int_equal(host_connect(b, &ga, srnic_qp_num(a->qp), NULL, IBV_MTU_1024,
				      5000, 1000), 0);
}

static void
test_ack_owed_at_err(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct host_ep a, b;
	struct srnic_mr *smr, *dmr;
	const struct ibv_wc *wc;
	struct ibv_wc rwc;
	uint8_t *src, *dst;

	RTE_SET_USED(state);
	half_known_pair(&T, &mac_b, &a, &b);
	src = rte_zmalloc("src", LEN, 64);
	dst = rte_zmalloc("dst", LEN, 64);
	assert_non_null(src);
	assert_non_null(dst);
	memset(src, 0x5a, LEN);
	smr = srnic_reg_mr(a.pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	dmr = srnic_reg_mr(b.pd, dst, LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(dmr);
	assert_int_equal(host_post_recv(&b, 0x77, dst, LEN, srnic_mr_lkey(dmr)), 0);
	assert_int_equal(host_post(&a, IBV_WR_SEND, 0x55, src, LEN, srnic_mr_lkey(smr), 0, 0,
				   IBV_SEND_SIGNALED), 0);

	/* A sends; B takes the SEND (its CQE) and asks for A's MAC: the ACK
	 * waits for the route */
	srnic_engine_poll(eng[0]);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), 1);
	srnic_engine_poll(eng[1]);
	assert_int_equal(srnic_poll_cq(b.cq, 1, &rwc), 1);
	assert_int_equal(rwc.status, IBV_WC_SUCCESS);
	assert_int_equal(rwc.wr_id, 0x77);
	assert_int_equal(rwc.byte_len, LEN);
	assert_memory_equal(dst, src, LEN);
	assert_int_equal(host_eng_stat(eng[1], "resp_ack_sent"), 0);
	assert_true(host_eng_stat(eng[1], "tx_arp") >= 1);

	/* the program's answer to that CQE: B's QP to ERR */
	assert_int_equal(srnic_modify_qp(b.qp, &attr, IBV_QP_STATE), 0);

	/* A answers the ARP; B learns A, and the ACK it owed goes */
	srnic_engine_poll(eng[0]);
	srnic_engine_poll(eng[1]);
	host_poll_set(eng, 2);
	wc = host_wait_wc(&a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->wr_id, 0x55);
	assert_int_equal(wc->opcode, IBV_WC_SEND);
	assert_int_equal(host_eng_stat(eng[1], "resp_owed_sent_at_err"), 1);
	assert_int_equal(host_eng_stat(eng[1], "resp_owed_dropped_at_err"), 0);
	assert_int_equal(host_eng_stat(eng[0], "retransmit_pkts"), 0);

	host_settle();
	assert_int_equal(srnic_dereg_mr(smr), 0);
	assert_int_equal(srnic_dereg_mr(dmr), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	rte_free(src);
	rte_free(dst);
}

static void
test_rnr_nak_owed_at_err(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(R.dev[0], 0),
					srnic_dev_engine(R.dev[1], 0) };
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct host_ep a, b;
	struct srnic_mr *smr;
	uint8_t *src;
	unsigned int i;

	RTE_SET_USED(state);
	half_known_pair(&R, &mac_d, &a, &b);
	src = rte_zmalloc("src", LEN, 64);
	assert_non_null(src);
	smr = srnic_reg_mr(a.pd, src, LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	/* no receive at B: the SEND is owed an RNR NAK, which waits for the route */
	assert_int_equal(host_post(&a, IBV_WR_SEND, 0x66, src, LEN, srnic_mr_lkey(smr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(eng[0]);
	assert_int_equal(host_eng_stat(eng[0], "req_pkts"), 1);
	srnic_engine_poll(eng[1]);
	assert_int_equal(host_eng_stat(eng[1], "resp_rnr_nak_sent"), 1);
	assert_true(host_eng_stat(eng[1], "tx_arp") >= 1);
	assert_int_equal(host_eng_stat(eng[1], "resp_owed_sent_at_err"), 0);

	/* B's QP to ERR with the NAK still owed; A answers the ARP: it goes */
	assert_int_equal(srnic_modify_qp(b.qp, &attr, IBV_QP_STATE), 0);
	host_poll_set(eng, 2);
	for (i = 0; host_eng_stat(eng[0], "comp_rnr_rcvd") == 0; i++) {
		host_poll();
		if (i > 1000000)
			fail_msg("A never hears the RNR NAK B owed at ERR");
	}
	assert_int_equal(host_eng_stat(eng[1], "resp_owed_sent_at_err"), 1);
	assert_int_equal(host_eng_stat(eng[1], "resp_owed_dropped_at_err"), 0);
	assert_int_equal(host_eng_stat(eng[0], "comp_rnr_rcvd"), 1);

	/* A's SEND is not answered again (B is in ERR): its QP ends here */
	assert_int_equal(srnic_modify_qp(a.qp, &attr, IBV_QP_STATE), 0);
	host_settle();
	assert_int_equal(srnic_dereg_mr(smr), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	rte_free(src);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ack_owed_at_err, ack_setup, ack_teardown),
		cmocka_unit_test_setup_teardown(test_rnr_nak_owed_at_err, rnr_setup,
						rnr_teardown),
	};

	return cmocka_run_group_tests_name("host_owed_ack", tests, group_setup, group_teardown);
}
