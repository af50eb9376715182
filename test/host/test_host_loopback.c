/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * In-device loopback: a packet to the device's own address comes back to
 * the device without leaving its port (rxe_loopback()), so one process
 * connects QPs of one device to each other, or a QP to itself.
 *
 * Device A of a duo (its port's peer is B, whose RX is captured: nothing
 * A sends to itself may arrive there) carries: RC SEND, WRITE, READ (its
 * zero-copy responses), FETCH_AND_ADD and CMP_AND_SWP between two of its
 * QPs, and an RC QP connected to itself; UC WRITE and SEND; UD datagrams
 * between two of its QPs and a UD QP to itself (the GRH area names A as
 * sender and receiver). Device C has two engines: a QP on each, so a
 * looped frame reaches the engine that owns its QP. Bytes, CQEs and the
 * counters tx_loopback / rx_loopback checked each time.
 */
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_malloc.h>

#include "host_util.h"

#define LB_BUF (64 * 1024)
#define LB_QKEY 0x1234u

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x1b, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x1b, 0x02 } },
};

static struct host_duo D;
static struct {
	uint8_t *buf;                   /* A's registered buffer, LB_BUF bytes */
	struct srnic_mr *mr;
	int64_t tx0, rx0;               /* A's loopback counters at the test's start */
} T;

static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	if (host_eal_init("host_loopback", 0, NULL) != 0 || host_duo_setup(&D, "lpb", mac, NULL) != 0)
		return -1;
	T.buf = host_alloc(LB_BUF);
	if (T.buf == NULL)
		return -1;
	T.mr = srnic_reg_mr(D.pd[0], T.buf, LB_BUF,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	return T.mr != NULL ? 0 : -1;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	srnic_dereg_mr(T.mr);
	host_duo_teardown(&D);
	rte_free(T.buf);
	rte_eal_cleanup();
	return 0;
}

static int
setup(void **state)
{
	RTE_SET_USED(state);
	host_poll_set(D.eng, 2);
	host_cap_reset();
	memset(T.buf, 0, LB_BUF);
	T.tx0 = srnic_dev_stat(D.dev[0], "tx_loopback");
	T.rx0 = srnic_dev_stat(D.dev[0], "rx_loopback");
	return 0;
}

/* Nothing of A's reached its port's peer, every frame A sent to itself
 * went through its loopback (at least min of them), none dropped. */
static void
check_in_device(int64_t min)
{
	uint32_t idx[8];
	int64_t tx = srnic_dev_stat(D.dev[0], "tx_loopback") - T.tx0;

	host_settle();
	assert_int_equal(host_cap_roce(D.port[1], -1, idx, RTE_DIM(idx)), 0);
	assert_true(tx >= min);
	assert_int_equal(srnic_dev_stat(D.dev[0], "rx_loopback") - T.rx0, tx);
	assert_int_equal(srnic_dev_stat(D.dev[0], "rx_not_for_us"), 0);
	assert_int_equal(srnic_dev_stat(D.dev[0], "rx_malformed"), 0);
	assert_int_equal(srnic_dev_stat(D.dev[0], "rx_icrc_err"), 0);
	assert_int_equal(srnic_dev_stat(D.dev[0], "req_ud_no_route"), 0);
}

static void
wc_ok(const struct ibv_wc *wc, uint64_t wr_id, enum ibv_wc_opcode op)
{
	if (wc->status != IBV_WC_SUCCESS)
		fail_msg("wr_id %lu: status %d", (unsigned long)wc->wr_id, (int)wc->status);
	assert_int_equal(wc->wr_id, wr_id);
	assert_int_equal(wc->opcode, op);
}

/* RC between a and b of one device (a == b: a QP to itself): a 5000-byte
 * SEND (5 packets at PMTU 1024), a 9000-byte WRITE, a 9000-byte READ back
 * (zero-copy responses), FETCH_AND_ADD and CMP_AND_SWP. */
static void
rc_ops(struct host_ep *a, struct host_ep *b, uint8_t *buf, uint32_t lkey, uint32_t rkey)
{
	uint8_t *src = buf, *dst = buf + 16384, *rd = buf + 32768;
	uint64_t *ctr = (uint64_t *)(void *)(buf + 49152), *res = ctr + 1;
	struct host_ep *both[2] = { a, b };
	const struct ibv_wc *wc;
	int i;

	srnic_test_fill(src, 9000, 77);
	*ctr = 40;
	/* SEND: b's RECV takes it */
	assert_int_equal(host_post_recv(b, 1, dst, 8192, lkey), 0);
	assert_int_equal(host_post(a, IBV_WR_SEND, 2, src, 5000, lkey, 0, 0, IBV_SEND_SIGNALED), 0);
	if (a == b) {
		wc = host_wait_wc(a, 2);
		for (i = 0; i < 2; i++)
			wc_ok(&a->wc[i], a->wc[i].opcode == IBV_WC_RECV ? 1 : 2, a->wc[i].opcode);
		wc = a->wc[0].opcode == IBV_WC_RECV ? &a->wc[0] : &a->wc[1];
	} else {
		wc_ok(host_wait_wc(a, 1), 2, IBV_WC_SEND);
		wc = host_wait_wc(b, 1);
		wc_ok(wc, 1, IBV_WC_RECV);
	}
	assert_int_equal(wc->byte_len, 5000);
	assert_int_equal(wc->qp_num, srnic_qp_num(b->qp));
	assert_memory_equal(dst, src, 5000);
	for (i = 0; i < 2; i++)
		both[i]->nwc = 0;

	/* WRITE over the SEND's bytes, then READ them back elsewhere */
	assert_int_equal(host_post(a, IBV_WR_RDMA_WRITE, 3, src, 9000, lkey, (uintptr_t)dst, rkey,
				   IBV_SEND_SIGNALED), 0);
	wc_ok(host_wait_wc(a, 1), 3, IBV_WC_RDMA_WRITE);
	assert_memory_equal(dst, src, 9000);
	assert_int_equal(host_post(a, IBV_WR_RDMA_READ, 4, rd, 9000, lkey, (uintptr_t)dst, rkey,
				   IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(a, 2);
	wc_ok(wc, 4, IBV_WC_RDMA_READ);
	assert_int_equal(wc->byte_len, 9000);
	assert_memory_equal(rd, src, 9000);

	/* atomics on ctr: 40 + 2 = 42, then 42 swapped for 7 */
	{
		struct ibv_sge sge = { .addr = (uintptr_t)res, .length = 8, .lkey = lkey };

		assert_int_equal(srnic_test_post_atomic(a->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, &sge,
							(uintptr_t)ctr, rkey, 2, 0,
							IBV_SEND_SIGNALED), 0);
		wc_ok(host_wait_wc(a, 3), 5, IBV_WC_FETCH_ADD);
		assert_int_equal(*res, 40);
		assert_int_equal(srnic_test_post_atomic(a->qp, IBV_WR_ATOMIC_CMP_AND_SWP, 6, &sge,
							(uintptr_t)ctr, rkey, 42, 7,
							IBV_SEND_SIGNALED), 0);
		wc_ok(host_wait_wc(a, 4), 6, IBV_WC_COMP_SWAP);
		assert_int_equal(*res, 42);
		assert_int_equal(*ctr, 7);
	}
}

/* Two RC QPs of A, connected to each other through A's own GID 1. */
static void
test_loopback_rc(void **state)
{
	struct host_ep a, b;

	RTE_SET_USED(state);
	host_ep_create(&a, D.dev[0], D.pd[0], 0, 64);
	host_ep_create(&b, D.dev[0], D.pd[0], 0, 64);
	host_connect_pair(&a, &b, IBV_MTU_1024);
	rc_ops(&a, &b, T.buf, srnic_mr_lkey(T.mr), srnic_mr_rkey(T.mr));
	/* 5 SEND + 9 WRITE + 1 READ request + 9 responses + 2 atomics and
	 * their answers, with b's ACKs */
	check_in_device(5 + 9 + 1 + 9 + 4);
	host_duo_disconnect(&a, &b);
}

/* One RC QP connected to itself: requester and responder of every op. */
static void
test_loopback_rc_self(void **state)
{
	union ibv_gid g;
	struct host_ep a;

	RTE_SET_USED(state);
	host_ep_create(&a, D.dev[0], D.pd[0], 0, 64);
	assert_int_equal(srnic_dev_gid(D.dev[0], SRNIC_GID_INDEX_IP, &g), 0);
	assert_int_equal(host_connect(&a, &g, srnic_qp_num(a.qp), NULL, IBV_MTU_1024, 300, 300), 0);
	rc_ops(&a, &a, T.buf, srnic_mr_lkey(T.mr), srnic_mr_rkey(T.mr));
	check_in_device(5 + 9 + 1 + 9 + 4);
	host_ep_destroy(&a);
}

/* Endpoints a and b on A's engine 0, a CQ each, QPs of type (16 WRs,
 * one SGE) in RESET. */
static void
two_eps(struct host_ep *a, struct host_ep *b, enum ibv_qp_type type)
{
	struct host_ep *ep[2] = { a, b };
	struct srnic_qp_init_attr qa;
	int i;

	memset(&qa, 0, sizeof(qa));
	qa.max_send_wr = qa.max_recv_wr = 16;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = type;
	for (i = 0; i < 2; i++) {
		memset(ep[i], 0, sizeof(*ep[i]));
		ep[i]->dev = D.dev[0];
		ep[i]->pd = D.pd[0];
		ep[i]->eng = D.eng[0];
		ep[i]->cq = srnic_create_cq(D.dev[0], 64, D.eng[0]);
		assert_non_null(ep[i]->cq);
		qa.send_cq = qa.recv_cq = ep[i]->cq;
		ep[i]->qp = srnic_create_qp(D.pd[0], &qa);
		assert_non_null(ep[i]->qp);
	}
}

/* A UC QP up to RTS towards dest_qpn on A's own address. */
static void
uc_up(struct srnic_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr at;

	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_INIT;
	at.port_num = 1;
	at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(srnic_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_ACCESS_FLAGS), 0);
	at.qp_state = IBV_QPS_RTR;
	at.path_mtu = IBV_MTU_1024;
	at.dest_qp_num = dest_qpn;
	at.rq_psn = 10;
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	at.ah_attr.grh.sgid_index = SRNIC_GID_INDEX_IP;
	assert_int_equal(srnic_dev_gid(D.dev[0], SRNIC_GID_INDEX_IP, &at.ah_attr.grh.dgid), 0);
	assert_int_equal(srnic_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
						 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN), 0);
	at.qp_state = IBV_QPS_RTS;
	at.sq_psn = 10;
	assert_int_equal(srnic_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

/* UC between two QPs of A: a 3000-byte WRITE and a 2500-byte SEND. */
static void
test_loopback_uc(void **state)
{
	struct host_ep a, b;
	uint8_t *src = T.buf, *dst = T.buf + 16384, *rv = T.buf + 32768;
	uint32_t lkey = srnic_mr_lkey(T.mr);
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	two_eps(&a, &b, IBV_QPT_UC);
	uc_up(a.qp, srnic_qp_num(b.qp));
	uc_up(b.qp, srnic_qp_num(a.qp));
	srnic_test_fill(src, 3000, 5);
	assert_int_equal(host_post(&a, IBV_WR_RDMA_WRITE, 1, src, 3000, lkey, (uintptr_t)dst,
				   srnic_mr_rkey(T.mr), IBV_SEND_SIGNALED), 0);
	wc_ok(host_wait_wc(&a, 1), 1, IBV_WC_RDMA_WRITE);
	/* UC has no ACK: the bytes are there once A's engine has looped them */
	HOST_RUN_UNTIL(memcmp(dst, src, 3000) == 0);
	assert_int_equal(host_post_recv(&b, 2, rv, 4096, lkey), 0);
	assert_int_equal(host_post(&a, IBV_WR_SEND, 3, src, 2500, lkey, 0, 0, IBV_SEND_SIGNALED),
			 0);
	wc_ok(host_wait_wc(&a, 2), 3, IBV_WC_SEND);
	wc = host_wait_wc(&b, 1);
	wc_ok(wc, 2, IBV_WC_RECV);
	assert_int_equal(wc->byte_len, 2500);
	assert_memory_equal(rv, src, 2500);
	check_in_device(3 + 3);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
}

/* The receive of a 1000-byte datagram from QP sqpn: its CQE, the GRH area
 * an IPv4 header from A to A, the payload after it. */
static void
ud_check_recv(const struct ibv_wc *wc, uint64_t wr_id, uint32_t sqpn, const uint8_t *buf,
	      const uint8_t *src)
{
	const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(buf + SRNIC_GRH_LEN - 20);
	const uint8_t a_ip[4] = { 127, 0, 0, 1 };

	wc_ok(wc, wr_id, IBV_WC_RECV);
	assert_int_equal(wc->byte_len, SRNIC_GRH_LEN + 1000);
	assert_int_equal(wc->src_qp, sqpn);
	assert_true(wc->wc_flags & IBV_WC_GRH);
	assert_int_equal(ip->version_ihl, 0x45);
	assert_memory_equal(&ip->src_addr, a_ip, 4);
	assert_memory_equal(&ip->dst_addr, a_ip, 4);
	assert_memory_equal(buf + SRNIC_GRH_LEN, src, 1000);
}

/* UD: two QPs of A, and a QP to itself, through an AH for A's own GID 1
 * (it was dropped as req_ud_no_route: the neighbour table never holds
 * the device's own address). */
static void
test_loopback_ud(void **state)
{
	struct host_ep a, b;
	struct srnic_ah *ah;
	uint8_t *src = T.buf, *rb = T.buf + 16384, *ra = T.buf + 32768;
	uint32_t lkey = srnic_mr_lkey(T.mr);

	RTE_SET_USED(state);
	two_eps(&a, &b, IBV_QPT_UD);
	host_ud_up(a.qp, LB_QKEY);
	host_ud_up(b.qp, LB_QKEY);
	ah = host_ah_to(D.pd[0], D.dev[0]);
	srnic_test_fill(src, 2000, 9);

	/* a -> b */
	assert_int_equal(host_post_recv(&b, 10, rb, 2048, lkey), 0);
	assert_int_equal(host_ud_send(a.qp, ah, srnic_qp_num(b.qp), LB_QKEY, 11, src, 1000, lkey), 0);
	wc_ok(host_wait_wc(&a, 1), 11, IBV_WC_SEND);
	ud_check_recv(host_wait_wc(&b, 1), 10, srnic_qp_num(a.qp), rb, src);
	/* a -> a */
	assert_int_equal(host_post_recv(&a, 20, ra, 2048, lkey), 0);
	assert_int_equal(host_ud_send(a.qp, ah, srnic_qp_num(a.qp), LB_QKEY, 21, src + 1000, 1000, lkey), 0);
	host_wait_wc(&a, 3);
	wc_ok(&a.wc[1], a.wc[1].opcode == IBV_WC_SEND ? 21 : 20, a.wc[1].opcode);
	ud_check_recv(a.wc[1].opcode == IBV_WC_RECV ? &a.wc[1] : &a.wc[2], 20, srnic_qp_num(a.qp),
		      ra, src + 1000);
	check_in_device(2);

	assert_int_equal(srnic_destroy_ah(ah), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
}

/* Device C of two engines: a QP on each, connected through C's address.
 * A frame one engine sends to itself is for a QP the other owns: its RX
 * hands it over as a frame from the port would be. */
static void
test_loopback_two_engines(void **state)
{
	static const struct rte_ether_addr mc = { { 0x02, 0x00, 0x00, 0x00, 0x1b, 0x0c } };
	const uint8_t ip[4] = { 127, 0, 0, 9 };
	struct srnic_engine *eng[2];
	struct host_dev_conf c;
	struct srnic_dev *dev;
	struct srnic_mr *mr;
	struct srnic_pd *pd;
	struct host_ep a, b;
	uint16_t p0, p1;
	uint8_t *buf;

	RTE_SET_USED(state);
	assert_int_equal(srnic_link_ring_pair("lpc", 2, HOST_RING_SIZE, &p0, &p1), 0);
	host_dev_conf_init(&c, p0, 4, ip, &mc, "lpcC");
	c.nb_engines = 2;
	dev = host_dev_create(&c);
	assert_non_null(dev);
	eng[0] = srnic_dev_engine(dev, 0);
	eng[1] = srnic_dev_engine(dev, 1);
	host_poll_set(eng, 2);
	pd = srnic_alloc_pd(dev);
	assert_non_null(pd);
	buf = host_alloc(LB_BUF);
	assert_non_null(buf);
	mr = srnic_reg_mr(pd, buf, LB_BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(mr);
	host_ep_create(&a, dev, pd, 0, 64);
	host_ep_create(&b, dev, pd, 1, 64);
	host_connect_pair(&a, &b, IBV_MTU_1024);
	rc_ops(&a, &b, buf, srnic_mr_lkey(mr), srnic_mr_rkey(mr));
	host_settle();
	assert_true(host_eng_stat(eng[0], "tx_loopback") > 0);
	assert_true(host_eng_stat(eng[1], "tx_loopback") > 0);
	/* each engine's looped frames were for the other's QP */
	assert_int_equal(host_eng_stat(eng[0], "rx_redirect"), host_eng_stat(eng[0], "tx_loopback"));
	assert_int_equal(host_eng_stat(eng[1], "rx_redirect"), host_eng_stat(eng[1], "tx_loopback"));
	assert_int_equal(srnic_dev_stat(dev, "rx_redirect_drop"), 0);
	host_duo_disconnect(&a, &b);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	assert_int_equal(srnic_dealloc_pd(pd), 0);
	assert_int_equal(srnic_dev_destroy(dev), 0);
	rte_free(buf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_loopback_rc, setup),
		cmocka_unit_test_setup(test_loopback_rc_self, setup),
		cmocka_unit_test_setup(test_loopback_uc, setup),
		cmocka_unit_test_setup(test_loopback_ud, setup),
		cmocka_unit_test_setup(test_loopback_two_engines, setup),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
