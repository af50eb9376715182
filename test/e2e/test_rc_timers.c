/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester and completer timers: AckReq
 * every SRNIC_ACK_REQ_INTERVAL packets inside a long message, so that a
 * timeout resends only what no ACK covered; an implied NAK (a READ's
 * response lost, a later PSN answered) spends retry_cnt like a timeout;
 * READ responses of the wrong length or position are dropped and counted.
 */
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "e2e_fixture.h"
#include "srnic_param.h"
#include "test_eal.h"

#define PSN0 1000
#define TAIL_PKTS 200                 /* a WRITE of 200 packets of 1024 bytes */
#define ACK_EVERY 64                  /* SRNIC_ACK_REQ_INTERVAL, as rxe */
/* 1.07 s: no spurious timeout while 200 packets go. 67 ms (14) was not
 * enough at load 35: this thread descheduled that long in mid-message
 * left the timer due (it runs from the last packet sent) before the
 * next AckReq, and a late expiry resent from PSN 64 */
#define TMO_LONG 18
#define TMO_SHORT 10                  /* 4.2 ms */
#define TMO_BAD_RESP 18               /* 1.07 s */

static struct e2e_bufs bufs;

static void
fresh(uint8_t timeout, uint8_t retry_cnt, size_t len)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { PSN0, 900 }, .timeout = timeout,
			      .retry_cnt = retry_cnt };

	e2e_qps_renew(&c);
	e2e_bufs_new(&bufs, len, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 3, 4);
}

static uint32_t
count_op(int side, uint8_t opcode)
{
	uint32_t i, n = 0;

	for (i = 0; i < E->npkts; i++)
		n += E->pkts[i].side == side && E->pkts[i].opcode == opcode;
	return n;
}

/* A 200-packet WRITE asks for an ACK at packets 64, 128, 192 and
 * the last; the last ACK is lost. The timeout resends from the first PSN
 * no ACK covered (PSN0 + 192): 8 packets, not 200. */
static void
test_tail_loss_resends_tail(void **state)
{
	const uint32_t len = TAIL_PKTS * 1024;
	int64_t tmo = srnic_dev_stat(E->p.dev[0], "retry_timeout");
	int64_t starved = srnic_dev_stat(E->p.dev[0], "retry_starved");
	uint32_t i, writes = 0, resent = 0, acks = 0, ackreq = 0;
	uint32_t ack_psn[8];

	RTE_SET_USED(state);
	fresh(TMO_LONG, 7, 256 * 1024);
	e2e_drop_arm(1, SRNIC_OP_RC_ACK, 3, 1); /* B's 4th ACK: the one for the last PSN */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, len, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 1);
	e2e_settle(4);
	if (E->wc[0][0].status != IBV_WC_SUCCESS)
		e2e_dump();
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_memory_equal(bufs.r, bufs.l, len);
	assert_int_equal(E->drop.dropped, 1);
	/* one expiry: a timeout, or, when this thread was descheduled for
	 * more than the timeout between two polls of A (a loaded host), a
	 * late one that resends without spending a retry */
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_timeout") - tmo +
			 srnic_dev_stat(E->p.dev[0], "retry_starved") - starved, 1);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];
		uint32_t off = (k->psn - PSN0) & SRNIC_PSN_MASK;

		if (k->side == 1 && k->opcode == SRNIC_OP_RC_ACK) {
			assert_true(acks < RTE_DIM(ack_psn));
			ack_psn[acks++] = k->psn;
			continue;
		}
		if (k->side != 0)
			continue;
		writes++;
		if (writes > TAIL_PKTS) {
			/* the resent ones: 192..199, in order */
			assert_int_equal(off, TAIL_PKTS - (TAIL_PKTS % ACK_EVERY) + resent);
			resent++;
			continue;
		}
		assert_int_equal(off, writes - 1);
		if (srnic_bth_ackreq(e2e_bth(k))) {
			assert_true(off + 1 == TAIL_PKTS || (off + 1) % ACK_EVERY == 0);
			ackreq++;
		}
	}
	assert_int_equal(ackreq, TAIL_PKTS / ACK_EVERY + 1);
	assert_int_equal(resent, TAIL_PKTS % ACK_EVERY);
	/* ACKs seen by A: 63, 127, 191 (the 199 one lost), then 199 again */
	assert_int_equal(acks, 4);
	assert_int_equal(ack_psn[0], PSN0 + 63);
	assert_int_equal(ack_psn[1], PSN0 + 127);
	assert_int_equal(ack_psn[2], PSN0 + 191);
	assert_int_equal(ack_psn[3], PSN0 + TAIL_PKTS - 1);
}

/* Every READ response is lost, the WRITE behind the READ is
 * ACKed: each ACK for the later PSN is an implied NAK for the READ. Each
 * resend, whether implied NAK or timeout, spends one of retry_cnt: the
 * READ goes out 1 + retry_cnt times, then fails, and the WRITE is flushed
 * (once more for each timeout this thread found late, spending nothing). */
static void
test_implied_nak_spends_retry(void **state)
{
	const uint8_t retry = 3;
	int64_t starved = srnic_dev_stat(E->p.dev[0], "retry_starved");

	RTE_SET_USED(state);
	fresh(TMO_SHORT, retry, 1 << 16);
	e2e_drop_arm(1, SRNIC_OP_RC_READ_RESP_ONLY, 0, UINT32_MAX);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, 512, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 4096, 100, 4096, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	e2e_settle(4);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(E->wc[0][1].wr_id, 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	starved = srnic_dev_stat(E->p.dev[0], "retry_starved") - starved;
	assert_int_equal(count_op(0, SRNIC_OP_RC_READ_REQ), 1 + retry + starved);
	assert_true(E->drop.dropped >= 1u + retry);
}

/* The n WRs A posted (wr_id 1..n): the first failed with RETRY_EXC_ERR
 * after 1 + retry expiries of the ACK timer (since the count tmo), the
 * rest were flushed, A's QP is in ERR (C9-140). */
static void
wait_first_fails(uint32_t n, int64_t tmo, uint8_t retry)
{
	uint32_t i;

	e2e_wait_wc(0, n);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_RETRY_EXC_ERR);
	for (i = 1; i < n; i++) {
		assert_int_equal(E->wc[0][i].wr_id, i + 1);
		assert_int_equal(E->wc[0][i].status, IBV_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_timeout") - tmo, 1 + retry);
}

/* A port that takes nothing (a link that went down under the PMD: its
 * tx_burst returns 0, as net_memif's does once its peer is gone). */
static uint16_t
tx_stuck_cb(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n, void *arg)
{
	RTE_SET_USED(port_id);
	RTE_SET_USED(queue);
	RTE_SET_USED(pkts);
	RTE_SET_USED(n);
	RTE_SET_USED(arg);
	return 0; /* none taken: they stay the engine's */
}

#define STUCK_WRITES 20               /* 20 x 64 packets: more than the engine's TX room */

/* The port stops taking packets with more to send than the engine can
 * hold (SRNIC_TX_BUF_SIZE): the ACK timer still runs out, each expiry
 * spends one of retry_cnt whether or not the resend could leave, and the
 * first WRITE fails with RETRY_EXC_ERR, the rest flushed (C9-140). It hung
 * before: the timer fired once, its resend found no TX room, and nothing
 * armed it again (seen with memif: a killed perftest server left its
 * client in ib_write_bw for good). */
static void
test_port_stuck_times_out(void **state)
{
	const uint8_t retry = 3;
	const uint32_t len = 64 * 1024;
	int64_t tmo = srnic_dev_stat(E->p.dev[0], "retry_timeout");
	const struct rte_eth_rxtx_callback *cb;
	uint32_t i;

	RTE_SET_USED(state);
	fresh(TMO_SHORT, retry, STUCK_WRITES * len);
	cb = rte_eth_add_tx_callback(E->p.port[0], 0, tx_stuck_cb, NULL);
	assert_non_null(cb);
	for (i = 0; i < STUCK_WRITES; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, i + 1, i * len, len, i * len,
			      IBV_SEND_SIGNALED);
	wait_first_fails(STUCK_WRITES, tmo, retry);
	/* the port takes packets again: what the engine held leaves */
	assert_int_equal(rte_eth_remove_tx_callback(E->p.port[0], 0, cb), 0);
	e2e_settle(8);
}

/* ---- a dead peer with retry_cnt 7 ---- */

#define DEAD_RETRY 7                  /* perftest's and rping's: no infinite value */
#define DEAD_WRS 4

/* 4.096 us x 2^TMO_SHORT in timer cycles */
static uint64_t
short_tmo_cycles(void)
{
	return rte_get_timer_hz() / 1000 * (4096ull << TMO_SHORT) / 1000000;
}

enum dead_peer {
	DEAD_SILENT,                  /* B's port gives nothing back (all its frames dropped) */
	DEAD_QP_GONE,                 /* B's QP destroyed: requests land on no QP */
	DEAD_QP_ERR,                  /* B's QP in ERR: it answers nothing (item 8) */
};

/* A posts op (WRITE or READ of 1 KiB) and DEAD_WRS - 1 WRITEs behind it
 * to a peer that stopped answering, retry_cnt 7, timeout 4.2 ms. The first
 * WR is sent 1 + 7 times, each resend at least a timeout after the last,
 * then completes with RETRY_EXC_ERR; the rest are flushed, the QP is in
 * ERR and sends nothing more. Before, retry_cnt 7 never ran out (as in
 * rxe): the WR was resent for ever (836 times in 59 s for a READ whose
 * responder QP was in ERR) and the wait ran out of time. An expiry this
 * thread found late (preempted for more than a timeout between two polls
 * of A) resends without spending a retry (retry_starved): counted in. */
static void
dead_peer_times_out(enum dead_peer how, enum ibv_wr_opcode op)
{
	const uint8_t first_op = op == IBV_WR_RDMA_READ ? SRNIC_OP_RC_READ_REQ :
			       SRNIC_OP_RC_WRITE_ONLY;
	const uint64_t tmo_cycles = short_tmo_cycles();
	int64_t tmo, starved;
	uint64_t t0, spent;
	uint32_t i, sent, rounds;

	fresh(TMO_SHORT, DEAD_RETRY, DEAD_WRS * 4096);
	if (how == DEAD_QP_GONE) {
		assert_int_equal(srnic_destroy_qp(E->qp[1]), 0);
		E->qp[1] = NULL;
	} else {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		assert_int_equal(srnic_modify_qp(E->qp[1], &a, IBV_QP_STATE), 0);
	}
	e2e_settle(4);
	e2e_reset();
	if (how == DEAD_SILENT)
		e2e_drop_arm(1, -1, 0, UINT32_MAX);
	tmo = srnic_dev_stat(E->p.dev[0], "retry_timeout");
	starved = srnic_dev_stat(E->p.dev[0], "retry_starved");
	t0 = rte_get_timer_cycles();
	e2e_bufs_post(&bufs, E->qp[0], op, 1, 0, 1024, 0, IBV_SEND_SIGNALED);
	for (i = 1; i < DEAD_WRS; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, i + 1, i * 4096, 100, i * 4096,
			      IBV_SEND_SIGNALED);
	wait_first_fails(DEAD_WRS, tmo, DEAD_RETRY);
	/* none of the 1 + retry_cnt expiries earlier than its timeout */
	spent = rte_get_timer_cycles() - t0;
	assert_true(spent >= (1 + DEAD_RETRY) * tmo_cycles);
	/* every WR was in flight: each of the 7 rewinds (and each late
	 * expiry's) sent the first and those behind it again; nothing after
	 * ERR */
	rounds = 1 + DEAD_RETRY + (uint32_t)(srnic_dev_stat(E->p.dev[0], "retry_starved") - starved);
	sent = count_op(0, SRNIC_OP_RC_READ_REQ) + count_op(0, SRNIC_OP_RC_WRITE_ONLY);
	e2e_settle(8);
	assert_int_equal(count_op(0, SRNIC_OP_RC_READ_REQ) + count_op(0, SRNIC_OP_RC_WRITE_ONLY),
			 sent);
	assert_int_equal(sent, rounds * DEAD_WRS);
	assert_int_equal(count_op(0, first_op), rounds * (op == IBV_WR_RDMA_READ ? 1 : DEAD_WRS));
}

static void
test_dead_peer_silent(void **state)
{
	RTE_SET_USED(state);
	dead_peer_times_out(DEAD_SILENT, IBV_WR_RDMA_WRITE);
}

static void
test_dead_peer_qp_gone(void **state)
{
	RTE_SET_USED(state);
	dead_peer_times_out(DEAD_QP_GONE, IBV_WR_RDMA_WRITE);
}

/* A READ whose responder QP went to ERR. */
static void
test_dead_peer_read_resp_err(void **state)
{
	RTE_SET_USED(state);
	dead_peer_times_out(DEAD_QP_ERR, IBV_WR_RDMA_READ);
}

/* Neither engine polled for STARVE_TMOS ACK timeouts (the host gave their
 * lcores nothing), retry_cnt 0: the first poll of A finds the timer
 * expired, but a poll that comes more than a timeout after the previous
 * one judges no peer. The WRITE is resent without spending the retry
 * (retry_starved), B answers, it completes. Before, that expiry spent the
 * only retry there was: RETRY_EXC_ERR on a live peer (as srnic-perf's
 * lossy runs failed on a loaded host with retry_cnt 7 finite). With B's
 * ACK already in A's RX ring when A was starved, the poll reads it before
 * the timers: no expiry at all. */
#define STARVE_TMOS 4

static void
starve_both(void)
{
	uint64_t until = rte_get_timer_cycles() + STARVE_TMOS * short_tmo_cycles();

	/* the condition is the time itself: no engine runs meanwhile */
	while (rte_get_timer_cycles() < until)
		rte_pause();
}

/* A fresh pair, retry_cnt 0, the counters read (*tmo, *starved): a 1 KiB
 * WRITE posted and sent by one poll of A. */
static void
write_leaves_a(int64_t *tmo, int64_t *starved)
{
	fresh(TMO_SHORT, E2E_RNR_RETRY_0, 4096); /* retry_cnt 0 */
	e2e_settle(4);
	e2e_reset();
	*tmo = srnic_dev_stat(E->p.dev[0], "retry_timeout");
	*starved = srnic_dev_stat(E->p.dev[0], "retry_starved");
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 1024, 0, IBV_SEND_SIGNALED);
	e2e_poll_side(0);
}

static void
test_starved_engine_spends_no_retry(void **state)
{
	int64_t tmo, starved;

	RTE_SET_USED(state);
	/* the WRITE leaves A; nothing runs for 4 timeouts; then A first */
	write_leaves_a(&tmo, &starved);
	starve_both();
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.r, bufs.l, 1024);
	/* one late expiry at least (more if this thread was preempted that
	 * long again before B's ACK was read), each a resend */
	starved = srnic_dev_stat(E->p.dev[0], "retry_starved") - starved;
	assert_true(starved >= 1);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_timeout") - tmo, 0);
	assert_int_equal(count_op(0, SRNIC_OP_RC_WRITE_ONLY), 1 + starved);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RTS);

	/* B answered before both starved: A's poll takes the ACK first */
	e2e_settle(4);
	e2e_reset();
	starved = srnic_dev_stat(E->p.dev[0], "retry_starved");
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 1024, 1024, 1024, IBV_SEND_SIGNALED);
	e2e_poll_side(0);
	e2e_poll_side(1);
	starve_both();
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.r + 1024, bufs.l + 1024, 1024);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_starved") - starved, 0);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_timeout") - tmo, 0);
	assert_int_equal(count_op(0, SRNIC_OP_RC_WRITE_ONLY), 1);
}

/* A dead peer on a host where every poll of A is late (each more than 4
 * timeouts after the previous one), retry_cnt 0: the first
 * SRNIC_RETRY_STARVED_MAX expiries spend nothing (retry_starved), the next
 * one spends the retry there is not: RETRY_EXC_ERR, the QP in ERR. Before,
 * every late expiry spared the retry and the WRITE was resent for ever
 * (rc_timers' dead peer on a host at load 25-40: 186 rounds in 20 s). B is
 * not polled: nothing answers. */
static void
test_starved_engine_fails_dead_peer(void **state)
{
	int64_t tmo, starved;
	uint32_t i;

	RTE_SET_USED(state);
	write_leaves_a(&tmo, &starved);
	for (i = 0; i < 2 * SRNIC_RETRY_STARVED_MAX + 4 && srnic_qp_state(E->qp[0]) != IBV_QPS_ERR;
	     i++) {
		starve_both();
		e2e_poll_side(0);
	}
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_starved") - starved,
			 SRNIC_RETRY_STARVED_MAX);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_timeout") - tmo, 1);
	e2e_wait_wc(0, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	/* the first send and one resend per spared expiry */
	assert_int_equal(count_op(0, SRNIC_OP_RC_WRITE_ONLY), 1 + SRNIC_RETRY_STARVED_MAX);
}

/* An implied NAK and an expired ACK timer in the same poll of A (a late
 * one: this thread away for 4 timeouts after B answered): the implied NAK
 * resends the READ and restarts the timer, so the timers of that poll find
 * nothing due. Before, they found the old deadline, rewound again and
 * counted a retry_starved resend that sent nothing more (on a timely poll:
 * a second retry spent for one resend); rc_timers' implied NAK test then
 * counted one READ fewer than 1 + retry_cnt + retry_starved on a loaded
 * host. */
static void
test_implied_nak_restarts_timer(void **state)
{
	int64_t tmo, starved;

	RTE_SET_USED(state);
	fresh(TMO_SHORT, 3, 1 << 16);
	e2e_settle(4);
	e2e_reset();
	tmo = srnic_dev_stat(E->p.dev[0], "retry_timeout");
	starved = srnic_dev_stat(E->p.dev[0], "retry_starved");
	e2e_drop_arm(1, SRNIC_OP_RC_READ_RESP_ONLY, 0, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, 512, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 4096, 100, 4096, IBV_SEND_SIGNALED);
	e2e_poll_side(0);
	e2e_poll_side(1); /* the READ's response (lost on A's side) and the WRITE's ACK */
	assert_int_equal(count_op(0, SRNIC_OP_RC_READ_REQ), 1);
	starve_both();
	e2e_poll_side(0); /* the response dropped, the ACK: implied NAK; the timers */
	assert_int_equal(E->drop.dropped, 1);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_starved") - starved, 0);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "retry_timeout") - tmo, 0);
	e2e_poll_side(1); /* B takes the resent READ (A's packets are seen there) */
	assert_int_equal(count_op(0, SRNIC_OP_RC_READ_REQ), 2);
	e2e_wait_wc(0, 2);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.r, bufs.l, 512);
}

/* A copy of B's READ response k with PSN psn, opcode op and drop bytes of
 * payload fewer, IPv4/UDP lengths, header checksum and ICRC fixed, sent
 * into A's RX. */
static void
inject_resp(const struct e2e_pkt *k, uint32_t psn, uint8_t op, uint32_t drop)
{
	uint8_t f[2048];
	uint32_t len = k->len - drop, l3 = k->l3_off, l4 = k->l4_off, icrc;
	uint16_t c;
	struct rte_mbuf *m;

	assert_true(k->len <= sizeof(f));
	assert_int_equal(k->data[l3] >> 4, 4); /* IPv4 */
	memcpy(f, k->data, k->len - 4 - drop);
	f[k->bth_off] = op;
	srnic_bth_set_psn(f + k->bth_off, psn);
	srnic_st16(f + l3 + 2, (uint16_t)(srnic_ld16(f + l3 + 2) - drop));
	f[l3 + 10] = f[l3 + 11] = 0;
	c = srnic_ref_cksum_fold(srnic_ref_sum16(0, f + l3, 20));
	srnic_st16(f + l3 + 10, c);
	srnic_st16(f + l4 + 4, (uint16_t)(srnic_ld16(f + l4 + 4) - drop));
	icrc = srnic_ref_icrc(f + l3, len - 4 - l3, 4);
	f[len - 4] = (uint8_t)icrc;
	f[len - 3] = (uint8_t)(icrc >> 8);
	f[len - 2] = (uint8_t)(icrc >> 16);
	f[len - 1] = (uint8_t)(icrc >> 24);
	m = rte_pktmbuf_alloc(srnic_test_pool());
	assert_non_null(m);
	memcpy(rte_pktmbuf_append(m, (uint16_t)len), f, len);
	assert_int_equal(rte_eth_tx_burst(E->p.port[1], 0, &m, 1), 1);
}

/* READ responses of the wrong length or position are dropped,
 * each under its own counter, and place nothing; the READ's retry then
 * completes it. Once the READ's response is lost only A runs until both
 * bad ones were counted: B cannot answer a resend before them (with both
 * running and a 4.2 ms timeout, a thread descheduled that long let A's
 * resend be answered and the READ complete before the injection, which
 * then counted nothing). The timeout is long (1.07 s) so that the loss
 * itself is not repaired before the injection either. */
static void
test_bad_read_resp_counted(void **state)
{
	int64_t len_err = srnic_dev_stat(E->p.dev[0], "comp_read_resp_len_err");
	int64_t pos_err = srnic_dev_stat(E->p.dev[0], "comp_read_resp_pos_err");
	const struct e2e_pkt *tmpl = NULL;
	uint32_t i, psn = 0;
	uint64_t dl;

	RTE_SET_USED(state);
	assert_true(len_err >= 0);
	assert_true(pos_err >= 0);
	fresh(TMO_BAD_RESP, 7, 1 << 16);
	/* a READ answered normally: its response is the template */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, 1024, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 1);
	e2e_settle(2);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	for (i = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 1 && E->pkts[i].opcode == SRNIC_OP_RC_READ_RESP_ONLY)
			tmpl = &E->pkts[i];
	assert_non_null(tmpl);

	/* the second READ's response is lost: it stays outstanding */
	e2e_drop_arm(1, SRNIC_OP_RC_READ_RESP_ONLY, 0, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 2, 8192, 1024, 8192, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(E->drop.dropped == 1);
	for (i = 0; i < E->npkts; i++)
		if (E->pkts[i].side == 0 && E->pkts[i].opcode == SRNIC_OP_RC_READ_REQ)
			psn = E->pkts[i].psn;
	assert_int_equal(psn, PSN0 + 1);
	inject_resp(tmpl, psn, SRNIC_OP_RC_READ_RESP_ONLY, 4); /* 1020 bytes of 1024 */
	inject_resp(tmpl, psn, SRNIC_OP_RC_READ_RESP_FIRST, 0); /* FIRST of a 1-packet READ */
	dl = e2e_deadline();
	while (srnic_dev_stat(E->p.dev[0], "comp_read_resp_pos_err") == pos_err) {
		if (e2e_deadline_passed(dl))
			fail_msg("the injected READ responses were not counted");
		e2e_poll_side(0);
	}
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "comp_read_resp_len_err") - len_err, 1);
	assert_int_equal(srnic_dev_stat(E->p.dev[0], "comp_read_resp_pos_err") - pos_err, 1);
	e2e_wait_wc(0, 2);
	assert_int_equal(E->wc[0][1].wr_id, 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.l + 8192, bufs.r + 8192, 1024);
	assert_memory_equal(bufs.l, bufs.r, 1024);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tail_loss_resends_tail, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_port_stuck_times_out, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_implied_nak_spends_retry, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_implied_nak_restarts_timer, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dead_peer_silent, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_starved_engine_fails_dead_peer, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dead_peer_qp_gone, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_dead_peer_read_resp_err, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_starved_engine_spends_no_retry, e2e_setup,
						e2e_teardown),
		cmocka_unit_test_setup_teardown(test_bad_read_resp_counted, e2e_setup,
						e2e_teardown),
	};

	return cmocka_run_group_tests_name("rc_timers", tests, e2e_group_setup,
					   e2e_group_teardown);
}
