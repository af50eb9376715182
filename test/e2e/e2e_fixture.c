/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "e2e_fixture.h"
#include "test_eal.h"

struct e2e *E;

static void
on_rx(uint16_t port_id, int dir, const struct rte_mbuf *m, uint64_t tsc, void *arg)
{
	struct e2e *e = arg;
	int side = port_id == e->p.port[1] ? 0 : 1; /* received on B's port: A sent it */
	struct srnic_pkt pkt;
	struct e2e_pkt *k;

	RTE_SET_USED(dir);
	if (e->npkts >= E2E_MAX_PKTS)
		return;
	if (tsc != e->last_tsc[side]) {
		e->burst++;
		e->last_tsc[side] = tsc;
	}
	k = &e->pkts[e->npkts++];
	memset(k, 0, sizeof(*k));
	k->port = port_id;
	k->side = side;
	k->burst = e->burst;
	k->data = srnic_test_frame_copy(m, &k->len);
	if (k->data == NULL) {
		k->parse_rc = -1;
		return;
	}
	k->parse_rc = srnic_pkt_parse((struct rte_mbuf *)(uintptr_t)m, &pkt, 0);
	if (k->parse_rc != SRNIC_PARSE_OK)
		return;
	k->opcode = pkt.opcode;
	k->pad = pkt.pad;
	k->mask = pkt.mask;
	k->psn = pkt.psn;
	k->dqpn = pkt.dqpn;
	k->pay_len = pkt.pay_len;
	k->l3_off = pkt.l3_off;
	k->l4_off = pkt.l4_off;
	k->bth_off = pkt.bth_off;
	k->pay_off = pkt.pay_off;
	k->udp_sport = pkt.udp_sport;
}

static uint16_t
drop_cb(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n,
	uint16_t max, void *arg)
{
	struct e2e *e = arg;
	int side = port_id == e->p.port[1] ? 0 : 1;
	struct e2e_drop *d = &e->drop;
	uint16_t i, k = 0;

	RTE_SET_USED(queue);
	RTE_SET_USED(max);
	for (i = 0; i < n; i++) {
		struct srnic_pkt pkt;
		bool match = false;

		if (d->count > 0 && side == d->side &&
		    srnic_pkt_parse(pkts[i], &pkt, SRNIC_PARSE_F_NO_ICRC) == SRNIC_PARSE_OK)
			match = d->opcode < 0 || pkt.opcode == d->opcode;
		if (match && d->skip > 0) {
			d->skip--;
			match = false;
		}
		if (match) {
			d->count--;
			d->dropped++;
			rte_pktmbuf_free(pkts[i]);
			continue;
		}
		pkts[k++] = pkts[i];
	}
	return k;
}

void
e2e_drop_arm(int side, int opcode, uint32_t skip, uint32_t count)
{
	E->drop.side = side;
	E->drop.opcode = opcode;
	E->drop.skip = skip;
	E->drop.count = count;
	E->drop.dropped = 0;
}

uint64_t
e2e_deadline(void)
{
	return rte_get_timer_cycles() + (uint64_t)E2E_WAIT_S * rte_get_timer_hz();
}

bool
e2e_deadline_passed(uint64_t deadline)
{
	if (rte_get_timer_cycles() < deadline)
		return false;
	e2e_dump();
	return true;
}

static void
drain_cq(int side)
{
	struct ibv_wc wc[64];
	int n, i;

	if (E->cq[side] == NULL)
		return;
	do {
		n = srnic_poll_cq(E->cq[side], 64, wc);
		if (n < 0) {
			E->cq_err[side] = n;
			return;
		}
		for (i = 0; i < n; i++) {
			assert_true(E->nwc[side] < E2E_MAX_WC);
			E->wc[side][E->nwc[side]++] = wc[i];
		}
	} while (n == 64);
}

uint64_t e2e_poll_tsc[2];

void
e2e_poll_side(int side)
{
	e2e_poll_tsc[side] = rte_get_timer_cycles();
	srnic_engine_poll(E->eng[side]);
}

void
e2e_poll(void)
{
	e2e_poll_tsc[0] = rte_get_timer_cycles();
	srnic_engine_poll(E->eng[0]);
	e2e_poll_tsc[1] = rte_get_timer_cycles();
	srnic_engine_poll(E->eng[1]);
	if (!E->no_drain) {
		drain_cq(0);
		drain_cq(1);
	}
}

void
e2e_settle(unsigned int n)
{
	unsigned int quiet = 0, i;

	for (i = 0; i < n || quiet < 16; i++) {
		unsigned int moved;

		e2e_poll_tsc[0] = rte_get_timer_cycles();
		moved = srnic_engine_poll(E->eng[0]);
		e2e_poll_tsc[1] = rte_get_timer_cycles();
		moved += srnic_engine_poll(E->eng[1]);
		if (!E->no_drain) {
			drain_cq(0);
			drain_cq(1);
		}
		quiet = moved == 0 ? quiet + 1 : 0;
		if (i > 1000000)
			fail_msg("engines never settle");
	}
}

const struct ibv_wc *
e2e_wait_wc(int side, uint32_t n)
{
	E2E_RUN_UNTIL(E->nwc[side] >= n);
	return &E->wc[side][n - 1];
}

void
e2e_reset(void)
{
	uint32_t i;

	for (i = 0; i < E->npkts; i++)
		free(E->pkts[i].data);
	E->npkts = 0;
	memset(&E->drop, 0, sizeof(E->drop));
	E->nwc[0] = E->nwc[1] = 0;
	E->cq_err[0] = E->cq_err[1] = 0;
}

void
e2e_check_mix_wcs(uint32_t sig, uint32_t nrecv, const uint32_t *lens, const uint8_t *ops)
{
	uint32_t i;

	assert_int_equal(E->nwc[0], sig);
	assert_int_equal(E->nwc[1], nrecv);
	for (i = 0; i < E->nwc[0]; i++) {
		assert_int_equal(E->wc[0][i].status, IBV_WC_SUCCESS);
		if (i > 0)
			assert_true(E->wc[0][i].wr_id > E->wc[0][i - 1].wr_id);
	}
	for (i = 0; i < E->nwc[1]; i++) {
		const struct ibv_wc *w = &E->wc[1][i];

		assert_int_equal(w->status, IBV_WC_SUCCESS);
		assert_int_equal(w->byte_len, lens[w->wr_id]);
		if (ops[w->wr_id] != 0)
			assert_int_equal(w->imm_data, rte_cpu_to_be_32((uint32_t)w->wr_id));
		if (i > 0)
			assert_true(w->wr_id > E->wc[1][i - 1].wr_id);
	}
}

uint32_t
e2e_pkts_from(int side, uint32_t *idx, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < E->npkts && n < max; i++)
		if (E->pkts[i].side == side)
			idx[n++] = i;
	return n;
}

void
e2e_dump(void)
{
	uint32_t i;

	fprintf(stderr, "capture: %u frames\n", E->npkts);
	for (i = 0; i < E->npkts && i < 200; i++) {
		const struct e2e_pkt *k = &E->pkts[i];
		char aeth[32] = "";

		if (k->parse_rc != SRNIC_PARSE_OK) {
			fprintf(stderr, "  %3u %s burst %u: parse error %d, %u bytes\n", i,
				k->side == 0 ? "A->B" : "B->A", k->burst, k->parse_rc, k->len);
			continue;
		}
		if (k->mask & SRNIC_OPM_AETH)
			snprintf(aeth, sizeof(aeth), " syn %#x msn %u",
				 srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)),
				 srnic_aeth_msn(e2e_hdr(k, SRNIC_HDR_AETH)));
		fprintf(stderr, "  %3u %s burst %u: %-28s psn %u qp %#x ackreq %d pay %u%s\n", i,
			k->side == 0 ? "A->B" : "B->A", k->burst, srnic_opcode_name(k->opcode),
			k->psn, k->dqpn, srnic_bth_ackreq(e2e_bth(k)), k->pay_len, aeth);
	}
	for (i = 0; i < 2; i++) {
		uint32_t j;

		fprintf(stderr, "  side %c: %u WCs, cq_err %d, qp state %d\n", 'A' + i, E->nwc[i],
			E->cq_err[i], E->qp[i] != NULL ? (int)srnic_qp_state(E->qp[i]) : -1);
		for (j = 0; j < E->nwc[i] && j < 40; j++)
			fprintf(stderr, "    wr_id %#" PRIx64 " status %d (%s) opcode %d len %u\n",
				E->wc[i][j].wr_id, E->wc[i][j].status,
				srnic_wc_status_str(E->wc[i][j].status), E->wc[i][j].opcode,
				E->wc[i][j].byte_len);
	}
}

void *
e2e_buf(int side, size_t len, int access, struct srnic_mr **mr)
{
	return e2e_buf_iova(side, len, E2E_IOVA_SELF, access, mr);
}

void *
e2e_buf_iova(int side, size_t len, uint64_t iova, int access, struct srnic_mr **mr)
{
	void *b = rte_zmalloc("e2e_buf", len + 64, 4096);

	assert_non_null(b);
	assert_true(E->nmr < RTE_DIM(E->mr));
	*mr = srnic_reg_mr_iova(E->p.pd[side], b, len, iova == E2E_IOVA_SELF ? (uintptr_t)b : iova,
				access, NULL, NULL);
	assert_non_null(*mr);
	E->mr[E->nmr] = *mr;
	E->buf[E->nmr] = b;
	E->nmr++;
	return b;
}

struct srnic_mr *
e2e_mr_rereg(struct srnic_mr *old, int flags, struct srnic_pd *pd, void *addr, size_t len,
	     int access)
{
	struct srnic_mr *nmr = srnic_rereg_mr(old, flags, pd, addr, len, access);
	uint32_t i;

	assert_non_null(nmr);
	assert_int_equal(srnic_dereg_mr_wait(old, 5000000), 0);
	for (i = 0; i < E->nmr; i++)
		if (E->mr[i] == old)
			E->mr[i] = nmr;
	return nmr;
}

void
e2e_bufs_new(struct e2e_bufs *b, size_t len, int laccess)
{
	b->len = len;
	b->l = e2e_buf(0, len, laccess, &b->lmr);
	b->r = e2e_buf(1, len, E2E_RALL, &b->rmr);
	b->v = e2e_buf(1, len, IBV_ACCESS_LOCAL_WRITE, &b->vmr);
}

void
e2e_bufs_fill(struct e2e_bufs *b, uint32_t lseed, uint32_t rseed)
{
	srnic_test_fill(b->l, b->len, lseed);
	srnic_test_fill(b->r, b->len, rseed);
}

void
e2e_bufs_post(const struct e2e_bufs *b, struct srnic_qp *qp, enum ibv_wr_opcode op,
	      uint64_t wr_id, uint32_t off, uint32_t len, uint32_t roff, unsigned int flags)
{
	struct ibv_sge s = { .addr = (uintptr_t)b->l + off, .length = len,
			     .lkey = srnic_mr_lkey(b->lmr) };

	assert_int_equal(srnic_test_post_send(qp, op, wr_id, &s, 1, (uintptr_t)b->r + roff,
					      srnic_mr_rkey(b->rmr), flags), 0);
}

void
e2e_bufs_atomic(const struct e2e_bufs *b, struct srnic_qp *qp, enum ibv_wr_opcode op,
		uint64_t wr_id, uint32_t off, uint32_t roff, uint64_t cmp_add, uint64_t swap,
		unsigned int flags)
{
	struct ibv_sge s = { .addr = (uintptr_t)b->l + off, .length = 8,
			     .lkey = srnic_mr_lkey(b->lmr) };

	assert_int_equal(srnic_test_post_atomic(qp, op, wr_id, &s, (uintptr_t)b->r + roff,
						srnic_mr_rkey(b->rmr), cmp_add, swap, flags), 0);
}

void
e2e_bufs_recv(const struct e2e_bufs *b, struct srnic_qp *qp, uint64_t wr_id, uint32_t off,
	      uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)b->v + off, .length = len,
			     .lkey = srnic_mr_lkey(b->vmr) };

	assert_int_equal(srnic_test_post_recv(qp, wr_id, &s, 1), 0);
}

void
e2e_bufs_mix_post(const struct e2e_bufs *b, uint8_t op, uint32_t wr_id, uint32_t off,
		  uint32_t len, uint32_t roff, uint64_t *counter, unsigned int flags)
{
	static const enum ibv_wr_opcode opc[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	struct ibv_sge s = { .addr = (uintptr_t)b->l + off, .length = len,
			     .lkey = srnic_mr_lkey(b->lmr) };

	if (op == 5) {
		assert_int_equal(srnic_test_post_atomic(E->qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD,
							wr_id, &s, (uintptr_t)counter,
							srnic_mr_rkey(b->rmr), 1, 0, flags), 0);
		return;
	}
	assert_true(op < RTE_DIM(opc));
	assert_int_equal(srnic_test_post_send_imm(E->qp[0], opc[op], wr_id, &s, 1,
						  (uintptr_t)b->r + roff, srnic_mr_rkey(b->rmr),
						  op == 1 || op == 3 ? rte_cpu_to_be_32(wr_id) : 0,
						  flags), 0);
}

void
e2e_post_send(int side, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	assert_int_equal(srnic_post_send(E->qp[side], wr, &bad), 0);
}

void
e2e_post_recv(int side, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad = NULL;

	assert_int_equal(srnic_post_recv(E->qp[side], wr, &bad), 0);
}

void
e2e_ud_up(struct srnic_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						 IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	assert_int_equal(srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
}

int
e2e_qp_connect(int side, enum ibv_mtu mtu, uint32_t sq_psn, uint32_t rq_psn,
	       uint8_t max_rd_atomic, uint8_t max_dest_rd_atomic, int access)
{
	struct srnic_test_path p = {
		.access = access, .mtu = mtu, .dest_qpn = srnic_qp_num(E->qp[1 - side]),
		.rq_psn = rq_psn, .max_dest_rd_atomic = max_dest_rd_atomic, .sq_psn = sq_psn,
		.timeout = E->conf.timeout != 0 ? E->conf.timeout : 14,
		.retry_cnt = E->conf.retry_cnt == E2E_RNR_RETRY_0 ? 0 :
			     E->conf.retry_cnt == 0 ? 7 : E->conf.retry_cnt,
		.rnr_retry = E->conf.rnr_retry[side] == E2E_RNR_RETRY_0 ? 0 :
			     E->conf.rnr_retry[side] == 0 ? 7 : E->conf.rnr_retry[side],
		.max_rd_atomic = max_rd_atomic,
	};

	srnic_dev_gid(E->p.dev[1 - side], 1, &p.dgid);
	return srnic_test_qp_connect(E->qp[side], &p);
}

void
e2e_qps_create(const struct e2e_conf *conf)
{
	struct e2e_conf c = *conf;
	int i;

	if (c.mtu == 0)
		c.mtu = IBV_MTU_4096;
	if (c.cqe == 0)
		c.cqe = 4096;
	if (c.max_send_wr == 0)
		c.max_send_wr = 1024;
	if (c.max_recv_wr == 0)
		c.max_recv_wr = 1024;
	for (i = 0; i < 2; i++) {
		if (c.max_rd_atomic[i] == 0)
			c.max_rd_atomic[i] = 16;
		if (c.max_dest_rd_atomic[i] == 0)
			c.max_dest_rd_atomic[i] = 16;
		if (c.access[i] == 0)
			c.access[i] = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	}
	E->conf = c;
	E->pmtu = 128u << c.mtu;
	for (i = 0; i < 2; i++) {
		struct srnic_qp_init_attr qa = { .max_send_wr = c.max_send_wr,
						 .max_recv_wr = c.max_recv_wr,
						 .max_send_sge = c.max_sge != 0 ? c.max_sge : 4,
						 .max_recv_sge = c.max_sge != 0 ? c.max_sge : 4,
						 .max_inline_data = c.max_inline,
						 .sq_sig_all = c.sq_sig_all,
						 .qp_type = c.qp_type != 0 ? c.qp_type
									   : IBV_QPT_RC };

		if (c.no_send_wr[i])
			qa.max_send_wr = 0;
		if (c.no_recv_wr[i])
			qa.max_recv_wr = 0;
		E->cq[i] = srnic_create_cq(E->p.dev[i], c.cqe, E->eng[i]);
		assert_non_null(E->cq[i]);
		qa.send_cq = qa.recv_cq = E->cq[i];
		E->qp[i] = srnic_create_qp(E->p.pd[i], &qa);
		assert_non_null(E->qp[i]);
	}
	if (c.no_connect)
		return;
	for (i = 0; i < 2; i++)
		assert_int_equal(e2e_qp_connect(i, c.mtu, c.psn[i], c.psn[1 - i],
						c.max_rd_atomic[i], c.max_dest_rd_atomic[i],
						c.access[i]), 0);
}

void
e2e_qps_destroy(void)
{
	uint32_t i;

	/* Let whatever is in flight land (responses for a destroyed QP are
	 * dropped as rx_no_qp) so no mbuf still points into our buffers. */
	E->no_drain = false;
	for (i = 0; i < 2; i++)
		if (E->qp[i] != NULL && srnic_qp_state(E->qp[i]) != IBV_QPS_RESET) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			srnic_modify_qp(E->qp[i], &a, IBV_QP_STATE);
		}
	e2e_settle(4);
	for (i = 0; i < 2; i++) {
		if (E->qp[i] != NULL)
			assert_int_equal(srnic_destroy_qp(E->qp[i]), 0);
		E->qp[i] = NULL;
	}
	e2e_settle(4);
	for (i = 0; i < 2; i++) {
		if (E->cq[i] != NULL)
			srnic_destroy_cq(E->cq[i]);
		E->cq[i] = NULL;
	}
	for (i = 0; i < E->nmr; i++) {
		assert_int_equal(srnic_dereg_mr(E->mr[i]), 0);
		rte_free(E->buf[i]);
	}
	E->nmr = 0;
	e2e_reset();
}

void
e2e_qps_renew(const struct e2e_conf *conf)
{
	e2e_qps_destroy();
	e2e_qps_create(conf);
}

int
e2e_group_setup(void **state)
{
	struct srnic_dev_conf base;

	RTE_SET_USED(state);
	memset(&base, 0, sizeof(base));
	base.nb_engines = 1;
	base.mtu = 9000;
	return e2e_group_setup_conf(&base);
}

int
e2e_group_setup_conf(const struct srnic_dev_conf *base)
{
	int rc, i;

	rc = srnic_test_eal_init("e2e", 0, NULL);
	if (rc != 0) {
		fprintf(stderr, "EAL init failed: %d\n", rc);
		return -1;
	}
	E = calloc(1, sizeof(*E));
	if (E == NULL)
		return -1;
	rc = srnic_pair_create_conf(&E->p, "e2e", base);
	if (rc != 0) {
		fprintf(stderr, "srnic_pair_create_conf: %d\n", rc);
		return -1;
	}
	for (i = 0; i < 2; i++) {
		E->eng[i] = srnic_dev_engine(E->p.dev[i], 0);
		if (rte_eth_add_rx_callback(E->p.port[i], 0, drop_cb, E) == NULL)
			return -1;
		E->cap[i] = srnic_capture_start(E->p.port[i], SRNIC_CAPTURE_RX, on_rx, E);
		if (E->eng[i] == NULL || E->cap[i] == NULL)
			return -1;
	}
	return 0;
}

int
e2e_group_teardown(void **state)
{
	RTE_SET_USED(state);
	if (E == NULL)
		return 0;
	srnic_capture_stop(E->cap[0]);
	srnic_capture_stop(E->cap[1]);
	e2e_reset();
	/* a device is EBUSY while its PD lives */
	srnic_dealloc_pd(E->p.pd[0]);
	srnic_dealloc_pd(E->p.pd[1]);
	srnic_dev_destroy(E->p.dev[0]);
	srnic_dev_destroy(E->p.dev[1]);
	free(E);
	E = NULL;
	rte_eal_cleanup();
	return 0;
}

int
e2e_setup(void **state)
{
	struct e2e_conf c = { .mtu = IBV_MTU_4096, .psn = { 2000, 7000 } };

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	return 0;
}

int
e2e_teardown(void **state)
{
	RTE_SET_USED(state);
	e2e_qps_destroy();
	return 0;
}

void
e2e_expect_a(uint32_t n, uint64_t wr_id, enum ibv_wc_status st, int nak)
{
	const struct ibv_wc *wc = e2e_wait_wc(0, n);
	uint32_t i, naks = 0;

	if (wc->status != st)
		e2e_dump();
	assert_int_equal(wc->wr_id, wr_id);
	assert_int_equal(wc->status, st);
	if (nak < 0)
		return;
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side == 1 && k->opcode == SRNIC_OP_RC_ACK &&
		    srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)) == nak)
			naks++;
	}
	assert_int_equal(naks, 1);
}

void
e2e_post_op(int side, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge, int nsge,
	    uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	assert_int_equal(srnic_test_post_send(E->qp[side], op, wr_id, sge, nsge, raddr, rkey,
					      flags), 0);
}

void
e2e_post_atomic(int side, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
		uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap)
{
	assert_int_equal(srnic_test_post_atomic(E->qp[side], op, wr_id, sge, raddr, rkey, cmp_add,
						swap, IBV_SEND_SIGNALED), 0);
}

void
e2e_post_rx(int side, uint64_t wr_id, struct ibv_sge *sge, int nsge)
{
	assert_int_equal(srnic_test_post_recv(E->qp[side], wr_id, sge, nsge), 0);
}
