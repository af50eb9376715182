/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the port takes, end to end over the ring pair
 * made to look like an i40e/ice port: devices created with tx_seg_max 8
 * (their nb_mtu_seg_max), a TX callback that records how many segments
 * each packet reaches the PMD with, and the PMD's tx_pkt_prepare replaced
 * by one that checks like i40e's (more than 8 segments: EINVAL) and can be
 * told to refuse a packet.
 *
 * A WRITE and a SEND of 8 SGEs of 512 bytes are header + 8 attached pieces
 * + trailer = 10 segments: they must reach the PMD as one copied mbuf
 * (tx_linearised), with the bytes and ICRC the peer checks; 6 SGEs (8
 * segments) go as they are. A packet rte_eth_tx_prepare() refuses is
 * dropped and counted (tx_prepare_drop), and the retry delivers it.
 */
#include <string.h>

#include <rte_errno.h>
#include <rte_ethdev.h>

#include "e2e_fixture.h"

#define PORT_SEG_MAX 8          /* i40e/ice: I40E_TX_MAX_MTU_SEG */
#define PORT_PIECE 512          /* > SRNIC_TX_COPY_MAX: attached, not copied */
#define PORT_NSGE 8

/* The fake PMD's view of side's TX: what the callback and prepare saw. */
struct port_tx {
	uint16_t max_segs;          /* most segments of a packet at tx_burst */
	uint32_t pkts;              /* packets at tx_burst */
	uint32_t prepared;          /* packets tx_prepare was asked about */
	uint32_t over;              /* of them with more than PORT_SEG_MAX segments */
	int refuse_opcode;          /* -1: none; else refuse the next one */
	uint32_t refused;
};

static struct port_tx ptx[2];
static struct e2e_bufs bufs;

static uint8_t
pkt_opcode(const struct rte_mbuf *m)
{
	return srnic_bth_opcode(rte_pktmbuf_mtod_offset(m, const uint8_t *,
							m->l2_len + m->l3_len + m->l4_len));
}

static uint16_t
tx_cb(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct port_tx *t = arg;
	uint16_t i;

	RTE_SET_USED(port);
	RTE_SET_USED(queue);
	for (i = 0; i < n; i++)
		t->max_segs = RTE_MAX(t->max_segs, pkts[i]->nb_segs);
	t->pkts += n;
	return n;
}

/* Like i40e_prep_pkts(): index of the first packet refused, rte_errno set. */
static uint16_t
fake_prepare(struct port_tx *t, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t i;

	for (i = 0; i < n; i++) {
		t->prepared++;
		if (pkts[i]->nb_segs > PORT_SEG_MAX) {
			t->over++;
			rte_errno = EINVAL;
			return i;
		}
		if (t->refuse_opcode >= 0 && pkts[i]->l4_len != 0 &&
		    pkt_opcode(pkts[i]) == t->refuse_opcode) {
			t->refuse_opcode = -1;
			t->refused++;
			rte_errno = EINVAL;
			return i;
		}
	}
	return n;
}

static uint16_t
prep_a(void *q, struct rte_mbuf **pkts, uint16_t n)
{
	RTE_SET_USED(q);
	return fake_prepare(&ptx[0], pkts, n);
}

static uint16_t
prep_b(void *q, struct rte_mbuf **pkts, uint16_t n)
{
	RTE_SET_USED(q);
	return fake_prepare(&ptx[1], pkts, n);
}

static int
group_setup(void **state)
{
	struct srnic_dev_conf base;
	int i;

	RTE_SET_USED(state);
	memset(&base, 0, sizeof(base));
	base.nb_engines = 1;
	base.mtu = 9000;
	base.tx_seg_max = PORT_SEG_MAX;
	base.comp_mask |= SRNIC_DEV_CONF_TX_SEG_MAX;
	if (e2e_group_setup_conf(&base) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		ptx[i].refuse_opcode = -1;
		if (rte_eth_add_tx_callback(E->p.port[i], 0, tx_cb, &ptx[i]) == NULL)
			return -1;
	}
	/* The port is started: its fast-path ops are in place to be replaced. */
	rte_eth_fp_ops[E->p.port[0]].tx_pkt_prepare = prep_a;
	rte_eth_fp_ops[E->p.port[1]].tx_pkt_prepare = prep_b;
	return 0;
}

static void
fresh(void)
{
	struct e2e_conf c = { .psn = { 100, 200 }, .max_sge = PORT_NSGE };

	e2e_qps_renew(&c);
	e2e_bufs_new(&bufs, 1 << 16, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 7, 9);
	memset(ptx, 0, sizeof(ptx));
	ptx[0].refuse_opcode = ptx[1].refuse_opcode = -1;
}

/* nsge pieces of PORT_PIECE bytes at l + 1024 * i (never adjacent). */
static void
sges(struct ibv_sge *s, unsigned int nsge)
{
	unsigned int i;

	for (i = 0; i < nsge; i++) {
		s[i].addr = (uintptr_t)bufs.l + 1024 * i;
		s[i].length = PORT_PIECE;
		s[i].lkey = srnic_mr_lkey(bufs.lmr);
	}
}

static void
check_gathered(const uint8_t *dst, unsigned int nsge)
{
	unsigned int i;

	for (i = 0; i < nsge; i++)
		assert_memory_equal(dst + PORT_PIECE * i, bufs.l + 1024 * i, PORT_PIECE);
}

/* Every frame A sent parsed with a good ICRC (the fixture's parse). */
static void
check_frames_a(uint32_t want)
{
	uint32_t idx[64], n, i;

	n = e2e_pkts_from(0, idx, RTE_DIM(idx));
	assert_true(n >= want);
	for (i = 0; i < n; i++)
		assert_int_equal(E->pkts[idx[i]].parse_rc, SRNIC_PARSE_OK);
}

static void
test_linearise_8_sges(void **state)
{
	struct ibv_sge s[PORT_NSGE];
	int64_t lin = srnic_dev_stat(E->p.dev[0], "tx_linearised");

	RTE_SET_USED(state);
	fresh();
	e2e_reset();
	sges(s, PORT_NSGE);
	/* WRITE: one packet, 10 segments as built */
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 1, s, PORT_NSGE, (uintptr_t)bufs.r,
		    srnic_mr_rkey(bufs.rmr), IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 1)->status, IBV_WC_SUCCESS);
	check_gathered(bufs.r, PORT_NSGE);
	/* SEND: the same gather into B's RECV */
	e2e_bufs_recv(&bufs, E->qp[1], 2, 0, 1 << 14);
	e2e_post_op(0, IBV_WR_SEND, 3, s, PORT_NSGE, 0, 0, IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 2)->status, IBV_WC_SUCCESS);
	assert_int_equal(e2e_wait_wc(1, 1)->byte_len, PORT_NSGE * PORT_PIECE);
	check_gathered(bufs.v, PORT_NSGE);
	e2e_settle(2);

	check_frames_a(2);
	assert_true(ptx[0].pkts >= 2);
	assert_true(ptx[0].max_segs <= PORT_SEG_MAX);
	assert_int_equal(ptx[0].over, 0);
	assert_true(ptx[0].prepared >= 2); /* rte_eth_tx_prepare() before tx_burst */
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "tx_linearised") - lin, 2);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "tx_prepare_drop"), 0);

	/* 6 SGEs: 8 segments, what the port takes: zero-copy as built */
	memset(ptx, 0, sizeof(ptx));
	ptx[0].refuse_opcode = ptx[1].refuse_opcode = -1;
	memset(bufs.r, 0, 1 << 14);
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 4, s, 6, (uintptr_t)bufs.r,
		    srnic_mr_rkey(bufs.rmr), IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 3)->status, IBV_WC_SUCCESS);
	check_gathered(bufs.r, 6);
	assert_int_equal(ptx[0].max_segs, PORT_SEG_MAX);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "tx_linearised") - lin, 2);
}

static void
test_prepare_refused(void **state)
{
	struct ibv_sge s[PORT_NSGE];
	int64_t drop = srnic_dev_stat(E->p.dev[0], "tx_prepare_drop");
	int64_t rexmit = srnic_dev_stat(E->p.dev[0], "retransmit_pkts") +
			 srnic_dev_stat(E->p.dev[0], "retry_starved");

	RTE_SET_USED(state);
	fresh();
	e2e_reset();
	sges(s, 2);
	ptx[0].refuse_opcode = SRNIC_OP_RC_WRITE_ONLY;
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 1, s, 2, (uintptr_t)bufs.r,
		    srnic_mr_rkey(bufs.rmr), IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 1)->status, IBV_WC_SUCCESS);
	check_gathered(bufs.r, 2);
	assert_int_equal(ptx[0].refused, 1);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "tx_prepare_drop") - drop, 1);
	/* the refused packet never reached the wire; its retry did (a retry
	 * spent, or spared when the engine's poll came late: retry_starved) */
	assert_true(srnic_dev_stat(E->p.dev[0], "retransmit_pkts") +
		    srnic_dev_stat(E->p.dev[0], "retry_starved") > rexmit);
	check_frames_a(1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_linearise_8_sges, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_prepare_refused, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, e2e_group_teardown);
}
