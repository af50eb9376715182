/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Duplicate READs and atomics at the responder: the responder answers a
 * duplicate only from what it remembers of a
 * READ or atomic it executed (its responder resources), restarts a READ
 * still being answered instead of queuing a second copy, answers a retry
 * from a copy of the memory, and tells an atomic a PSN lap old from the
 * one it answers now. Requests are built with the wire library and put on
 * the link to B as if A had sent them; what B sends back is checked frame
 * by frame in the fixture's capture.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "e2e_fixture.h"

#define PMTU 1024u
#define PSN_A 5000u                /* A's first PSN: B's ePSN */
#define PSN(n) ((PSN_A + (uint32_t)(n)) & SRNIC_PSN_MASK)
#define BUFLEN (1u << 16)

static struct rte_mempool *pool;
static struct e2e_bufs bufs;
static uint16_t ip_id;

static int64_t
stat(int side, const char *name)
{
	int64_t v = srnic_dev_stat(E->p.dev[side], name);

	assert_true(v >= 0);
	return v;
}

static struct srnic_qp_stats
qstats(struct srnic_qp *qp)
{
	struct srnic_qp_stats s;

	assert_int_equal(srnic_qp_get_stats(qp, &s), 0);
	return s;
}

/* ---- requests built here, sent as A's QP ---- */

struct req {
	uint8_t op;
	uint32_t psn;
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint64_t swap_add;
};

static struct rte_mbuf *
req_build(const struct req *x)
{
	const struct srnic_opcode_info *oi = srnic_opcode_info(x->op);
	static const struct rte_ether_addr mac[2] = {
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 } },
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } },
	};
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct srnic_route r;
	union ibv_gid g;
	uint8_t *bth;

	assert_non_null(m);
	memset(&r, 0, sizeof(r));
	r.src_mac = mac[0];
	r.dst_mac = mac[1];
	r.ip_ver = 4;
	r.ttl = 64;
	assert_int_equal(srnic_dev_gid(E->p.dev[0], 1, &g), 0);
	memcpy(r.src_ip, &g.raw[12], 4);
	assert_int_equal(srnic_dev_gid(E->p.dev[1], 1, &g), 0);
	memcpy(r.dst_ip, &g.raw[12], 4);
	r.udp_sport = srnic_roce_sport(srnic_qp_num(E->qp[0]), srnic_qp_num(E->qp[1]));
	bth = srnic_pkt_init(m, &r, x->op, ip_id++);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, srnic_qp_num(E->qp[1]));
	srnic_bth_set_psn(bth, x->psn & SRNIC_PSN_MASK);
	srnic_bth_set_ackreq(bth, true);
	if (oi->mask & SRNIC_OPM_RETH) {
		uint8_t *reth = bth + oi->offset[SRNIC_HDR_RETH];

		srnic_reth_set_va(reth, x->va);
		srnic_reth_set_rkey(reth, x->rkey);
		srnic_reth_set_len(reth, x->len);
	}
	if (oi->mask & SRNIC_OPM_ATMETH) {
		uint8_t *a = bth + oi->offset[SRNIC_HDR_ATMETH];

		srnic_atmeth_set_va(a, x->va);
		srnic_atmeth_set_rkey(a, x->rkey);
		srnic_atmeth_set_swap_add(a, x->swap_add);
		srnic_atmeth_set_compare(a, 0);
	}
	assert_int_equal(srnic_pkt_finish(m, pool), 0);
	return m;
}

/* Put n requests on the link to B in one burst (B receives them in one RX
 * burst, before it answers any), then let both sides settle. */
static void
inject(const struct req *x, unsigned int n)
{
	struct rte_mbuf *m[8];
	unsigned int i;

	assert_true(n <= RTE_DIM(m));
	for (i = 0; i < n; i++)
		m[i] = req_build(&x[i]);
	assert_int_equal(rte_eth_tx_burst(E->p.port[0], 0, m, (uint16_t)n), n);
	e2e_settle(8);
}

/* READ responses B sent since the last e2e_reset(); the first's PSN, the
 * count of FIRST/ONLY (messages) in *msgs. */
static uint32_t
read_resps(uint32_t *first_psn, uint32_t *msgs)
{
	uint32_t i, n = 0;

	*msgs = 0;
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side != 1 || k->parse_rc != SRNIC_PARSE_OK || !(k->mask & SRNIC_OPM_READ))
			continue;
		if (n++ == 0 && first_psn != NULL)
			*first_psn = k->psn;
		if (k->mask & SRNIC_OPM_FIRST)
			(*msgs)++;
	}
	return n;
}

/* Poll only B until cond holds (A leaves B's responses on the link). */
#define E2E_RUN_UNTIL_SIDE1(cond) do { \
	uint64_t dl__ = e2e_deadline(); \
	while (!(cond)) { \
		if (e2e_deadline_passed(dl__)) \
			fail_msg("timeout waiting for %s", #cond); \
		e2e_poll_side(1); \
	} \
} while (0)

/* ---- setup ---- */

static struct e2e_conf
conf_default(void)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { PSN_A, 77 } };

	return c;
}

static int
group_setup(void **state)
{
	if (e2e_group_setup(state) != 0)
		return -1;
	pool = rte_pktmbuf_pool_create("e2e_respdup", 1023, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
	return pool == NULL ? -1 : 0;
}

static int
setup(void **state)
{
	struct e2e_conf c = conf_default();

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	e2e_bufs_new(&bufs, BUFLEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 11, 22);
	e2e_reset();
	return 0;
}

/* ---- a duplicate READ must name a READ B executed ---- */

/* A READ at a PSN behind ePSN that no READ ever had, on a fresh QP (one
 * 74-byte frame, 64 KiB asked): nothing is sent back, the drop is counted,
 * the QP goes on. Before, B answered it with 64 responses. */
static void
test_dup_read_never_executed(void **state)
{
	int64_t drop = stat(1, "resp_dup_drop"), dup = stat(1, "resp_dup");
	uint32_t msgs;

	RTE_SET_USED(state);
	inject(&(struct req){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN_A - 100,
			      .va = (uintptr_t)bufs.r, .rkey = srnic_mr_rkey(bufs.rmr),
			      .len = BUFLEN }, 1);
	assert_int_equal(stat(1, "resp_dup") - dup, 1);
	assert_int_equal(read_resps(NULL, &msgs), 0);
	assert_int_equal(stat(1, "resp_dup_drop") - drop, 1);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	/* the QP goes on */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, 3000, 0, IBV_SEND_SIGNALED);
	assert_int_equal(e2e_wait_wc(0, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.l, bufs.r, 3000);
}

/* A READ of 8 KiB at PSN 0, executed; then duplicates of it: one asking
 * for more than the original (the whole buffer), one with another R_Key,
 * one for a middle piece that is not the original's tail: all dropped, the
 * R_Key one counted on the QP. The tail from PSN 2 (va + 2 PMTU, 6 PMTU)
 * is answered as a new message FIRST..LAST from PSN 2. */
static void
test_dup_read_not_a_tail(void **state)
{
	const uint64_t va = (uintptr_t)bufs.r;
	const uint32_t rkey = srnic_mr_rkey(bufs.rmr), len = 8 * PMTU;
	int64_t drop = stat(1, "resp_dup_drop");
	uint64_t rk = qstats(E->qp[1]).rkey_errs;
	uint32_t msgs, first = 0;

	RTE_SET_USED(state);
	inject(&(struct req){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = va, .rkey = rkey,
			      .len = len }, 1);
	assert_int_equal(read_resps(&first, &msgs), 8);
	e2e_reset();
	inject((const struct req[]){
		{ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = va, .rkey = rkey, .len = BUFLEN },
		{ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = va, .rkey = rkey ^ 0x80,
		  .len = len },
		{ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(2), .va = va + 2 * PMTU, .rkey = rkey,
		  .len = PMTU },
	}, 3);
	assert_int_equal(read_resps(NULL, &msgs), 0);
	assert_int_equal(stat(1, "resp_dup_drop") - drop, 3);
	assert_int_equal(qstats(E->qp[1]).rkey_errs - rk, 1);
	inject(&(struct req){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(2), .va = va + 2 * PMTU,
			      .rkey = rkey, .len = len - 2 * PMTU }, 1);
	assert_int_equal(read_resps(&first, &msgs), 6);
	assert_int_equal(first, PSN(2));
	assert_int_equal(msgs, 1);
	assert_int_equal(stat(1, "resp_dup_drop") - drop, 3);
	assert_int_equal(stat(1, "resp_read_retry_copy") > 0, 1);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
}

/* A new READ with a wrong R_Key: NAK remote access error, QP to ERR, and
 * the failure counted on the QP (a peer guessing keys shows up there). */
static void
test_rkey_errs_counted(void **state)
{
	uint64_t rk = qstats(E->qp[1]).rkey_errs;

	RTE_SET_USED(state);
	inject(&(struct req){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = (uintptr_t)bufs.r,
			      .rkey = srnic_mr_rkey(bufs.rmr) ^ 0x01, .len = PMTU }, 1);
	E2E_RUN_UNTIL(srnic_qp_state(E->qp[1]) == IBV_QPS_ERR);
	assert_int_equal(qstats(E->qp[1]).rkey_errs - rk, 1);
}

/* The key byte of an rkey is not a counter: 32 registrations in a row do
 * not all get the same byte (a counter gave each new index byte 1, so the
 * first rkey was 0x101), and a reused index never gets its previous byte. */
static void
test_rkey_random(void **state)
{
	static uint8_t mem[64];
	uint8_t b[32];
	unsigned int i, same = 0;

	RTE_SET_USED(state);
	for (i = 0; i < RTE_DIM(b); i++) {
		struct srnic_mr *mr = srnic_reg_mr(E->p.pd[1], mem, sizeof(mem), E2E_RALL);
		uint32_t k;

		assert_non_null(mr);
		k = srnic_mr_rkey(mr);
		b[i] = (uint8_t)k;
		same += i > 0 && b[i] == b[0];
		assert_int_equal(srnic_dereg_mr(mr), 0);
	}
	assert_true(same < RTE_DIM(b) - 1);
}

/* ---- a duplicate READ still being answered restarts it ---- */

/* A READ of 64 KiB and its duplicate in the same burst: the duplicate
 * comes while the READ is queued, so its answer restarts at the PSN asked
 * for (its first) and B sends the 64 responses once. Before, a second copy
 * was queued behind the first: 128 responses. Then a retry from PSN 40
 * (the tail) while B is still answering: B restarts there, never more than
 * one answer in its FIFO. */
static void
test_dup_read_restart(void **state)
{
	const uint64_t va = (uintptr_t)bufs.r;
	const uint32_t rkey = srnic_mr_rkey(bufs.rmr);
	int64_t restart = stat(1, "resp_dup_read_restart");
	uint32_t msgs, first = 0;
	struct req r[2] = {
		{ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = va, .rkey = rkey, .len = BUFLEN },
		{ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = va, .rkey = rkey, .len = BUFLEN },
	};

	RTE_SET_USED(state);
	inject(r, 2);
	assert_int_equal(read_resps(&first, &msgs), BUFLEN / PMTU);
	assert_int_equal(first, PSN(0));
	assert_int_equal(msgs, 1);
	assert_int_equal(stat(1, "resp_dup_read_restart") - restart, 1);
	/* a READ at PSN 64, then a retry of its tail from PSN 64 + 40 */
	e2e_reset();
	r[0].psn = PSN(64);
	r[1].psn = PSN(64 + 40);
	r[1].va = va + 40 * PMTU;
	r[1].len = BUFLEN - 40 * PMTU;
	inject(r, 2);
	assert_int_equal(read_resps(&first, &msgs), BUFLEN / PMTU - 40);
	assert_int_equal(first, PSN(64 + 40));
	assert_int_equal(stat(1, "resp_dup_read_restart") - restart, 2);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
}

/* A READ of 64 KiB that B has begun answering (one poll of B: some of
 * its responses sent, not all), then its duplicate from its first PSN: B
 * restarts it there. Only the packets it goes back over (those sent
 * before the restart) are answered from a copy; the rest stay zero-copy.
 * Before, the whole restarted READ was copied (64 copies). */
static void
test_dup_read_restart_copy_part(void **state)
{
	const uint64_t va = (uintptr_t)bufs.r;
	const uint32_t rkey = srnic_mr_rkey(bufs.rmr);
	const uint32_t n = BUFLEN / PMTU;
	int64_t copies = stat(1, "resp_read_retry_copy"), zc = stat(1, "resp_zc_segs");
	int64_t pkts = stat(1, "resp_read_pkts"), restart = stat(1, "resp_dup_read_restart");
	int64_t sent;
	struct req r = { .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = va, .rkey = rkey,
			 .len = BUFLEN };
	struct rte_mbuf *m;

	RTE_SET_USED(state);
	m = req_build(&r);
	assert_int_equal(rte_eth_tx_burst(E->p.port[0], 0, &m, 1), 1);
	E2E_RUN_UNTIL_SIDE1(stat(1, "resp_read_pkts") - pkts > 0);
	sent = stat(1, "resp_read_pkts") - pkts;
	assert_true(sent > 0 && sent < n);
	inject(&r, 1);
	assert_int_equal(stat(1, "resp_dup_read_restart") - restart, 1);
	assert_int_equal(stat(1, "resp_read_pkts") - pkts, sent + n);
	assert_int_equal(stat(1, "resp_read_retry_copy") - copies, sent);
	/* the first answer's sent packets and the restart's n - sent */
	assert_int_equal(stat(1, "resp_zc_segs") - zc, sent + (n - sent));
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
}

/* The retry storm without srnic-perf, scaled to what
 * an ASan build moves in an ACK timeout: many QPs with READs of 1 MiB
 * outstanding over the ring, TX-bound at B (the ring and B's TX buffer
 * full), the timeout (code 17, 537 ms) longer than the frames in flight
 * take but shorter than the whole queue. Every QP gets its turn at B's TX
 * (the engine rotates its active QPs when TX-bound), a retry restarts the
 * READ B is answering instead of queuing a copy, and every READ completes
 * with its data. The counts (timeouts, restarts) are printed. */
#define STORM_QPS 8
#define STORM_READS 2
#define STORM_LEN (1u << 20)
#ifndef STORM_TIMEOUT
#define STORM_TIMEOUT 17
#endif

static void
test_read_storm(void **state)
{
	struct srnic_pair_qp_conf pc = { .path_mtu = IBV_MTU_4096, .psn = { 900, 1900 },
					 .max_rd_atomic = 16, .max_dest_rd_atomic = 16,
					 .timeout = STORM_TIMEOUT, .retry_cnt = 7, .rnr_retry = 7,
					 .min_rnr_timer = 1, .access = E2E_RALL };
	struct srnic_cq *cq[2];
	struct srnic_qp *qp[STORM_QPS][2];
	struct srnic_mr *lmr, *rmr;
	uint8_t *l, *r;
	struct ibv_wc wc[64];
	int64_t tmo = stat(0, "retry_timeout");
	uint32_t done = 0, ok = 0, q, i;
	uint64_t dl;

	RTE_SET_USED(state);
	l = e2e_buf(0, (size_t)STORM_QPS * STORM_READS * STORM_LEN, IBV_ACCESS_LOCAL_WRITE, &lmr);
	r = e2e_buf(1, (size_t)STORM_QPS * STORM_READS * STORM_LEN, E2E_RALL, &rmr);
	srnic_test_fill(r, (size_t)STORM_QPS * STORM_READS * STORM_LEN, 7);
	for (i = 0; i < 2; i++) {
		cq[i] = srnic_create_cq(E->p.dev[i], 1024, E->eng[i]);
		assert_non_null(cq[i]);
	}
	for (q = 0; q < STORM_QPS; q++) {
		for (i = 0; i < 2; i++) {
			struct srnic_qp_init_attr qa = { .max_send_wr = 64, .max_recv_wr = 16,
							 .max_send_sge = 1, .max_recv_sge = 1,
							 .qp_type = IBV_QPT_RC,
							 .send_cq = cq[i], .recv_cq = cq[i] };

			qp[q][i] = srnic_create_qp(E->p.pd[i], &qa);
			assert_non_null(qp[q][i]);
		}
		assert_int_equal(srnic_pair_connect(&E->p, qp[q][0], qp[q][1], &pc), 0);
	}
	E->drop.count = 0;
	for (q = 0; q < STORM_QPS; q++)
		for (i = 0; i < STORM_READS; i++) {
			size_t off = ((size_t)q * STORM_READS + i) * STORM_LEN;
			struct ibv_sge s = { .addr = (uintptr_t)l + off, .length = STORM_LEN,
					     .lkey = srnic_mr_lkey(lmr) };
			struct ibv_send_wr wr, *bad;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = off;
			wr.sg_list = &s;
			wr.num_sge = 1;
			wr.opcode = IBV_WR_RDMA_READ;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.wr.rdma.remote_addr = (uintptr_t)r + off;
			wr.wr.rdma.rkey = srnic_mr_rkey(rmr);
			assert_int_equal(srnic_post_send(qp[q][0], &wr, &bad), 0);
		}
	dl = e2e_deadline();
	while (done < STORM_QPS * STORM_READS) {
		int n;

		if (e2e_deadline_passed(dl))
			fail_msg("storm: %u of %u READs done", done, STORM_QPS * STORM_READS);
		e2e_poll();
		n = srnic_poll_cq(cq[0], (int)RTE_DIM(wc), wc);
		assert_true(n >= 0);
		for (i = 0; i < (uint32_t)n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				fprintf(stderr, "storm: wr %" PRIu64 " status %d\n", wc[i].wr_id,
					(int)wc[i].status);
			ok += wc[i].status == IBV_WC_SUCCESS;
		}
		done += (uint32_t)n;
	}
	fprintf(stderr, "storm: %u READs, %" PRId64 " timeouts, resp_dup %" PRId64
		", restarts %" PRId64 ", dup drops %" PRId64 "\n", done,
		stat(0, "retry_timeout") - tmo, stat(1, "resp_dup"),
		stat(1, "resp_dup_read_restart"), stat(1, "resp_dup_drop"));
	assert_int_equal(ok, STORM_QPS * STORM_READS);
	assert_memory_equal(l, r, (size_t)STORM_QPS * STORM_READS * STORM_LEN);
	for (q = 0; q < STORM_QPS; q++)
		for (i = 0; i < 2; i++)
			assert_int_equal(srnic_destroy_qp(qp[q][i]), 0);
	e2e_settle(4);
	for (i = 0; i < 2; i++)
		assert_int_equal(srnic_destroy_cq(cq[i]), 0);
}

/* ---- a retried READ is answered from a copy ---- */

/* The application stores to the READ source after B built each zero-copy
 * response and before A reads it off the link (legal: the READ returns
 * undefined data): the first answer fails A's ICRC. The retry is answered
 * from a copy made when it was built, so the same store cannot break it:
 * the READ completes (with the bytes as they were then), the QPs stay in
 * RTS. Before, every retry was zero-copy again: RETRY_EXC_ERR. */
static void
test_retry_copy_icrc(void **state)
{
	struct e2e_conf c = conf_default();
	const uint32_t len = 4 * PMTU;
	int64_t icrc = stat(0, "rx_icrc_err"), copies = stat(1, "resp_read_retry_copy");
	uint64_t dl;

	RTE_SET_USED(state);
	c.timeout = 8;
	c.retry_cnt = 3;
	e2e_qps_renew(&c);
	e2e_bufs_new(&bufs, BUFLEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 11, 22);
	e2e_reset();
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, len, 0, IBV_SEND_SIGNALED);
	dl = e2e_deadline();
	while (E->nwc[0] == 0) {
		if (e2e_deadline_passed(dl))
			fail_msg("no completion");
		e2e_poll_side(1);      /* B answers what A asked */
		bufs.r[len / 2] ^= 1;  /* the application stores meanwhile */
		bufs.r[len - 1] ^= 1;
		e2e_poll();            /* A reads the link */
	}
	e2e_settle(16);
	assert_int_equal(E->nwc[0], 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_true(stat(0, "rx_icrc_err") - icrc > 0);
	assert_true(stat(1, "resp_read_retry_copy") - copies > 0);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RTS);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	assert_memory_equal(bufs.l, bufs.r, len / 2); /* untouched bytes */
}

/* ---- a duplicate READ reports the current MSN ---- */

/* One replayed READ response k checked field by field: B's frame to A's QP
 * at psn, opcode op, nothing set in the BTH but the PSN (no AckReq, SE,
 * MigReq, pad), the default P_Key, an AETH ACK (credit invalid) with MSN
 * msn, the PMTU of the source from byte off, and A's UDP source port. */
static void
check_read_resp(const struct e2e_pkt *k, uint8_t op, uint32_t psn, uint32_t msn, uint32_t off)
{
	const uint8_t *b = e2e_bth(k), *aeth = e2e_hdr(k, SRNIC_HDR_AETH);

	assert_int_equal(k->side, 1);
	assert_int_equal(k->parse_rc, SRNIC_PARSE_OK); /* ICRC too */
	assert_int_equal(k->opcode, op);
	assert_int_equal(k->psn, psn);
	assert_int_equal(k->dqpn, srnic_qp_num(E->qp[0]));
	assert_false(srnic_bth_ackreq(b));
	assert_false(srnic_bth_se(b));
	assert_false(srnic_bth_migreq(b));
	assert_int_equal(srnic_bth_pad(b), 0);
	assert_int_equal(srnic_bth_tver(b), 0);
	assert_int_equal(srnic_bth_pkey(b), SRNIC_PKEY_DEFAULT);
	assert_int_equal(srnic_aeth_syndrome(aeth),
			 srnic_aeth_syndrome_make(SRNIC_AETH_ACK, SRNIC_AETH_CREDIT_INVALID));
	assert_int_equal(srnic_aeth_msn(aeth), msn);
	assert_int_equal(k->pay_len, PMTU);
	assert_memory_equal(e2e_payload(k), bufs.r + off, PMTU);
	assert_int_equal(k->udp_sport,
			 srnic_roce_sport(srnic_qp_num(E->qp[0]), srnic_qp_num(E->qp[1])));
}

/* A READ of 4 PMTU at PSN 0 (B's MSN 1), answered; a FETCH_ADD at PSN 4,
 * executed and answered (MSN 2); then the READ's tail from PSN 2 again, as
 * a requester that lost the READ's last two responses asks. B answers
 * FIRST at PSN 2 and LAST at PSN 3 with the current MSN, 2: the MSN counts
 * the requests the responder has completed, and a response reports it as
 * it is now (every AETH carries the responder's count; rxe builds each from its
 * qp->resp.msn). Neither ePSN nor the MSN moves: the next request, a READ
 * at PSN 5, gets MSN 3. Before, the replay carried the MSN saved with the
 * original READ: 1. */
static void
test_dup_read_current_msn(void **state)
{
	const uint64_t va = (uintptr_t)bufs.r;
	const uint32_t rkey = srnic_mr_rkey(bufs.rmr);
	uint64_t ctr = *(uint64_t *)(bufs.r + 8 * PMTU);
	uint32_t i, n;
	const struct e2e_pkt *k[2];

	RTE_SET_USED(state);
	inject(&(struct req){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .va = va, .rkey = rkey,
			      .len = 4 * PMTU }, 1);
	for (i = 0, n = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 1 && (E->pkts[i].mask & SRNIC_OPM_AETH))
			assert_int_equal(srnic_aeth_msn(e2e_hdr(&E->pkts[i], SRNIC_HDR_AETH)), 1);
	assert_int_equal(read_resps(NULL, &n), 4);
	e2e_reset();
	inject(&(struct req){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(4), .va = va + 8 * PMTU,
			      .rkey = rkey, .swap_add = 1 }, 1);
	assert_int_equal(*(uint64_t *)(bufs.r + 8 * PMTU), ctr + 1);
	for (i = 0, n = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 1 && E->pkts[i].opcode == SRNIC_OP_RC_ATOMIC_ACK) {
			assert_int_equal(srnic_aeth_msn(e2e_hdr(&E->pkts[i], SRNIC_HDR_AETH)), 2);
			n++;
		}
	assert_int_equal(n, 1);
	e2e_reset();
	inject(&(struct req){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(2), .va = va + 2 * PMTU,
			      .rkey = rkey, .len = 2 * PMTU }, 1);
	for (i = 0, n = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 1) {
			assert_true(n < RTE_DIM(k));
			k[n++] = &E->pkts[i];
		}
	assert_int_equal(n, 2); /* the two responses, nothing else */
	check_read_resp(k[0], SRNIC_OP_RC_READ_RESP_FIRST, PSN(2), 2, 2 * PMTU);
	check_read_resp(k[1], SRNIC_OP_RC_READ_RESP_LAST, PSN(3), 2, 3 * PMTU);
	assert_int_equal(*(uint64_t *)(bufs.r + 8 * PMTU), ctr + 1);
	e2e_reset();
	inject(&(struct req){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(5), .va = va, .rkey = rkey,
			      .len = PMTU }, 1);
	for (i = 0, n = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 1) {
			assert_int_equal(E->pkts[i].opcode, SRNIC_OP_RC_READ_RESP_ONLY);
			assert_int_equal(E->pkts[i].psn, PSN(5));
			assert_int_equal(srnic_aeth_msn(e2e_hdr(&E->pkts[i], SRNIC_HDR_AETH)), 3);
			n++;
		}
	assert_int_equal(n, 1);
	/* The same for a READ still being answered: a READ of 4 PMTU at PSN
	 * 6 (MSN 4), a FETCH_ADD at PSN 10 (MSN 5) and the READ's duplicate
	 * in one burst: the READ restarts at PSN 6 and every response of it
	 * carries MSN 5 (before: 4). */
	e2e_reset();
	inject((const struct req[]){
		{ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(6), .va = va, .rkey = rkey, .len = 4 * PMTU },
		{ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(10), .va = va + 8 * PMTU, .rkey = rkey,
		  .swap_add = 1 },
		{ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(6), .va = va, .rkey = rkey, .len = 4 * PMTU },
	}, 3);
	assert_int_equal(*(uint64_t *)(bufs.r + 8 * PMTU), ctr + 2);
	for (i = 0, n = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 1 && (E->pkts[i].mask & SRNIC_OPM_AETH)) {
			assert_int_equal(srnic_aeth_msn(e2e_hdr(&E->pkts[i], SRNIC_HDR_AETH)), 5);
			n++;
		}
	assert_int_equal(n, 3); /* the READ's FIRST and LAST, the atomic ACK */
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
}

/* ---- a duplicate atomic after the PSN wraps ---- */

/* PMTU 256, a MR of 2 GiB (reserved, never touched but for one packet):
 * a FETCH_ADD at PSN 0, then two READs of 2^23 PSNs each (each retried at
 * once for its last packet, so B restarts it there and sends one
 * response), which take ePSN a whole 2^24 lap round to PSN 0 again. A new
 * FETCH_ADD at PSN 0 runs; its duplicate gets its result, not the one a
 * lap old. Before, the first saved slot with that PSN answered: the old
 * result. */
#define WRAP_MR ((size_t)SRNIC_MAX_MSG_SIZE + 4096)

static void
test_dup_atomic_after_wrap(void **state)
{
	struct e2e_conf c = conf_default();
	const uint32_t pmtu = 256, half = SRNIC_MAX_MSG_SIZE / 256; /* 2^23 PSNs */
	uint8_t *big;
	struct srnic_mr *mr;
	uint64_t *ctr, va;
	uint32_t rkey, msgs, i, n;
	const struct e2e_pkt *k = NULL;

	RTE_SET_USED(state);
	c.mtu = IBV_MTU_256;
	e2e_qps_renew(&c);
	big = mmap(NULL, WRAP_MR, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	assert_true(big != MAP_FAILED);
	/* not a multiple of the page: no rte_extmem_register of 2 GiB */
	mr = srnic_reg_mr(E->p.pd[1], big, WRAP_MR - 8, E2E_RALL);
	assert_non_null(mr);
	rkey = srnic_mr_rkey(mr);
	va = (uintptr_t)big;
	ctr = (uint64_t *)big;
	*ctr = 100;
	e2e_reset();
	inject(&(struct req){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(0), .va = va, .rkey = rkey,
			      .swap_add = 1 }, 1);
	assert_int_equal(*ctr, 101);
	for (i = 0; i < 2; i++) {
		/* the second one stops one PSN short: the FETCH_ADD took one */
		uint32_t np = i == 0 ? half : half - 1;
		uint32_t p = i == 0 ? PSN(1) : PSN(1 + half);
		uint64_t len = (uint64_t)np * pmtu;
		struct req r[2] = {
			{ .op = SRNIC_OP_RC_READ_REQ, .psn = p, .va = va, .rkey = rkey,
			  .len = (uint32_t)len },
			{ .op = SRNIC_OP_RC_READ_REQ, .psn = p + np - 1, .va = va + len - pmtu,
			  .rkey = rkey, .len = pmtu },
		};

		inject(r, 2);
	}
	n = read_resps(NULL, &msgs);
	assert_int_equal(n, 2); /* each restarted at its last packet: not 2^24 responses */
	*ctr = 1000;
	e2e_reset();
	/* ePSN is PSN 0 again */
	inject(&(struct req){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(0), .va = va, .rkey = rkey,
			      .swap_add = 1 }, 1);
	assert_int_equal(*ctr, 1001);
	inject(&(struct req){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(0), .va = va, .rkey = rkey,
			      .swap_add = 1 }, 1);
	assert_int_equal(*ctr, 1001); /* not executed again */
	for (i = 0, n = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 1 && E->pkts[i].parse_rc == SRNIC_PARSE_OK &&
		    E->pkts[i].opcode == SRNIC_OP_RC_ATOMIC_ACK) {
			k = &E->pkts[i];
			assert_int_equal(k->psn, PSN(0));
			assert_int_equal(srnic_atmack_orig(e2e_hdr(k, SRNIC_HDR_ATMACK)), 1000);
			n++;
		}
	assert_int_equal(n, 2);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	e2e_settle(4);
	munmap(big, WRAP_MR);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dup_read_never_executed, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dup_read_not_a_tail, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rkey_errs_counted, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_rkey_random, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dup_read_restart, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dup_read_restart_copy_part, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_read_storm, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_retry_copy_icrc, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dup_read_current_msn, setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dup_atomic_after_wrap, setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_respdup", tests, group_setup,
					   e2e_group_teardown);
}
