/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Faults end to end, beyond test_rc_loss.c, each checked packet
 * by packet on the wire:
 *  - lost READ responses (FIRST, a MIDDLE, LAST): the requester asks again
 *    only for what is missing (PSN, RETH va/len), answered as a new message;
 *  - duplicated READ and atomic requests: READ executed again, atomic
 *    answered from the saved result, one completion;
 *  - reordered and corrupted WRITE packets: one NAK sequence error per gap,
 *    go-back-N, ICRC drops;
 *  - RNR: NAK, wait the RNR timer, retry; rnr_retry exhausted;
 *  - a peer that disappears: RETRY_EXC_ERR, flush, other QPs unaffected;
 *  - NAKs (sequence, RNR, fatal) for a message longer than one requester
 *    budget that is still going out: they count at once;
 *  - hostile requests built with the wire library and put straight on the
 *    link: the responder NAKs them as the spec says and never touches
 *    memory outside the MR (canaries right after the MR, poisoned for
 *    ASan).
 *
 * Faults come from three places: the fixture's drop hook (ahead of the
 * capture), this file's own RX callback installed ahead of everything
 * (drops and payload corruption of copies; it also records every frame as
 * sent, with a timestamp), and the lossy link (after the capture: the
 * capture shows frames as sent, a tap after the lossy link shows them as
 * delivered).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "e2e_fixture.h"
#include "srnic_lossy.h"

#if defined(__SANITIZE_ADDRESS__)
#define FAULTS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAULTS_ASAN 1
#endif
#endif
#ifdef FAULTS_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) do { RTE_SET_USED(p); RTE_SET_USED(n); } while (0)
#define UNPOISON(p, n) POISON(p, n)
#endif

/* A's first PSN: multi-packet messages cross the 2^24 wrap. */
#define PSN_A 0xFFFFFAu
#define PSN_B 77u
#define PSN(n) ((PSN_A + (uint32_t)(n)) & SRNIC_PSN_MASK)
#define PMTU 1024u
#define BUFLEN (1u << 16)

#define SYN_ACK 0x1F
#define SYN_NAK_SEQ 0x60
#define SYN_NAK_INV 0x61
#define SYN_NAK_ACCESS 0x62
#define SYN_RNR(t) (0x20 | (t))

/* IPv4, no VLAN: where the BTH of a frame that does not parse is. */
#define RAW_BTH_OFF (RTE_ETHER_HDR_LEN + 20 + 8)

static struct e2e_bufs bufs;
static struct rte_mempool *pool;
static uint16_t inj_ip_id;

static int64_t
stat(int side, const char *name)
{
	int64_t v = srnic_dev_stat(E->p.dev[side], name);

	assert_true(v >= 0);
	return v;
}

static uint32_t
qpn(int side)
{
	return srnic_qp_num(E->qp[side]);
}

/* ---- frames as sent: an RX callback ahead of every other one ---- */

enum fault { F_PASS, F_DROP, F_CORRUPT };

struct rec {
	int side;                  /* sender */
	int parse_rc;
	uint8_t opcode;
	uint8_t syn;
	uint32_t psn;
	uint32_t dqpn;
	uint32_t msn;
	uint32_t pay_len;
	uint64_t tsc;
	enum fault fault;          /* what the callback did to it */
};

#define REC_MAX 8192
static struct rec sent[REC_MAX];   /* as sent, before any fault */
static uint32_t nsent;
static struct rec dlv[REC_MAX];    /* A->B as delivered after the lossy link */
static uint32_t ndlv;

/* Fault rule: frames side sends with this opcode (-1: any) to dqpn (0: any),
 * after skip of them, count of them. */
struct fault_rule {
	int side;
	int opcode;
	uint32_t dqpn;
	uint32_t skip;
	uint32_t count;
	enum fault action;
	uint32_t corrupt_off;      /* payload byte flipped */
	uint32_t hits;             /* out */
};
static struct fault_rule rule;

static void
rec_fill(struct rec *r, int side, struct rte_mbuf *m)
{
	struct srnic_pkt p;

	memset(r, 0, sizeof(*r));
	r->side = side;
	r->tsc = rte_get_timer_cycles();
	r->parse_rc = srnic_pkt_parse(m, &p, 0);
	if (r->parse_rc != SRNIC_PARSE_OK)
		return;
	r->opcode = p.opcode;
	r->psn = p.psn;
	r->dqpn = p.dqpn;
	r->pay_len = p.pay_len;
	if (p.mask & SRNIC_OPM_AETH) {
		r->syn = srnic_aeth_syndrome(srnic_pkt_hdr(&p, SRNIC_HDR_AETH));
		r->msn = srnic_aeth_msn(srnic_pkt_hdr(&p, SRNIC_HDR_AETH));
	}
}

/* A copy with one byte flipped: the original may be zero-copy memory of
 * the sender's MR. */
static struct rte_mbuf *
corrupt_copy(struct rte_mbuf *m, uint32_t off)
{
	struct rte_mbuf *c = rte_pktmbuf_copy(m, pool, 0, UINT32_MAX), *s;

	if (c == NULL)
		return NULL;
	for (s = c; s != NULL && off >= s->data_len; s = s->next)
		off -= s->data_len;
	if (s != NULL)
		*rte_pktmbuf_mtod_offset(s, uint8_t *, off) ^= 0x5a;
	return c;
}

static uint16_t
pre_rx(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n, uint16_t max,
       void *arg)
{
	int side = port_id == E->p.port[1] ? 0 : 1;
	uint16_t i, k = 0;

	RTE_SET_USED(queue);
	RTE_SET_USED(max);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i], *c;
		struct rec tmp, *r = nsent < REC_MAX ? &sent[nsent++] : &tmp;
		enum fault f = F_PASS;

		rec_fill(r, side, m);
		if (rule.count > 0 && side == rule.side && r->parse_rc == SRNIC_PARSE_OK &&
		    (rule.opcode < 0 || r->opcode == rule.opcode) &&
		    (rule.dqpn == 0 || r->dqpn == rule.dqpn)) {
			if (rule.skip > 0) {
				rule.skip--;
			} else {
				rule.count--;
				rule.hits++;
				f = rule.action;
			}
		}
		r->fault = f;
		if (f == F_DROP) {
			rte_pktmbuf_free(m);
			continue;
		}
		if (f == F_CORRUPT) {
			struct srnic_pkt p;

			assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
			c = corrupt_copy(m, p.pay_off + rule.corrupt_off);
			rte_pktmbuf_free(m);
			if (c == NULL)
				continue;
			m = c;
		}
		pkts[k++] = m;
	}
	return k;
}

/* When the polls of A's engine that sent the rounds of test_peer_gone's
 * first WRITE began (the engine reads its clock and arms the ACK timer at
 * a poll's start): the arrival stamps above, and even a stamp taken in the
 * TX callback, can be a preempted poll late on a loaded host; the poll's
 * start cannot. */
#define TX_ROUNDS_MAX 8
static uint64_t tx_round_tsc[TX_ROUNDS_MAX];
static uint32_t tx_rounds, tx_round_dqpn, tx_round_psn;

static uint16_t
tx_rounds_cb(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n, void *arg)
{
	uint64_t now = e2e_poll_tsc[0];
	uint16_t i;

	RTE_SET_USED(port_id);
	RTE_SET_USED(queue);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		struct srnic_pkt p;

		if (srnic_pkt_parse(pkts[i], &p, 0) == SRNIC_PARSE_OK &&
		    p.opcode == SRNIC_OP_RC_WRITE_ONLY && p.dqpn == tx_round_dqpn &&
		    p.psn == tx_round_psn && tx_rounds < TX_ROUNDS_MAX)
			tx_round_tsc[tx_rounds++] = now;
	}
	return n;
}

static void
rule_arm(int side, int opcode, uint32_t dqpn, uint32_t skip, uint32_t count, enum fault a)
{
	memset(&rule, 0, sizeof(rule));
	rule.side = side;
	rule.opcode = opcode;
	rule.dqpn = dqpn;
	rule.skip = skip;
	rule.count = count;
	rule.action = a;
}

static void
rec_dump(const char *what, const struct rec *r, uint32_t n)
{
	uint32_t i;

	fprintf(stderr, "%s: %u frames\n", what, n);
	for (i = 0; i < n && i < 200; i++)
		fprintf(stderr, "  %3u %s %-28s psn %u qp %#x pay %u syn %#x msn %u parse %d fault %d\n",
			i, r[i].side == 0 ? "A->B" : "B->A",
			r[i].parse_rc == SRNIC_PARSE_OK ? srnic_opcode_name(r[i].opcode) : "(bad)",
			r[i].psn, r[i].dqpn, r[i].pay_len, r[i].syn, r[i].msn, r[i].parse_rc,
			r[i].fault);
}

/* ---- the lossy link on B's port (A->B), with a tap after it ---- */

struct lossy_rule {
	int opcode[2];             /* matched opcodes (-1: none) */
	enum srnic_lossy_action action;
	uint32_t left;
	uint32_t hits;
};
static struct lossy_rule lrule;
static struct srnic_lossy *lossy;
static const struct rte_eth_rxtx_callback *dlv_cb;

static enum srnic_lossy_action
lossy_filter(const struct rte_mbuf *m, void *arg)
{
	struct lossy_rule *r = arg;
	struct srnic_pkt p;

	if (r->left == 0 ||
	    srnic_pkt_parse((struct rte_mbuf *)(uintptr_t)m, &p, SRNIC_PARSE_F_NO_ICRC) !=
		    SRNIC_PARSE_OK ||
	    (p.opcode != r->opcode[0] && p.opcode != r->opcode[1]))
		return SRNIC_LOSSY_PASS;
	r->left--;
	r->hits++;
	return r->action;
}

static uint16_t
dlv_rx(uint16_t port_id, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n, uint16_t max,
       void *arg)
{
	uint16_t i;

	RTE_SET_USED(port_id);
	RTE_SET_USED(queue);
	RTE_SET_USED(max);
	RTE_SET_USED(arg);
	for (i = 0; i < n && ndlv < REC_MAX; i++)
		rec_fill(&dlv[ndlv++], 0, pkts[i]);
	return n;
}

/* Attach the lossy link to A->B with conf (filter: lrule when set up). */
static void
lossy_on(struct srnic_lossy_conf *c)
{
	c->pool = pool;
	if (c->filter == NULL && (lrule.opcode[0] >= 0 || lrule.opcode[1] >= 0)) {
		c->filter = lossy_filter;
		c->filter_arg = &lrule;
	}
	lossy = srnic_lossy_attach(E->p.port[1], c);
	assert_non_null(lossy);
	dlv_cb = rte_eth_add_rx_callback(E->p.port[1], 0, dlv_rx, NULL);
	assert_non_null(dlv_cb);
}

static void
lossy_rule_set(int op0, int op1, enum srnic_lossy_action a, uint32_t count)
{
	lrule.opcode[0] = op0;
	lrule.opcode[1] = op1;
	lrule.action = a;
	lrule.left = count;
	lrule.hits = 0;
}

static void
lossy_off(void)
{
	if (dlv_cb != NULL) {
		rte_eth_remove_rx_callback(E->p.port[1], 0, dlv_cb);
		rte_free((void *)(uintptr_t)dlv_cb); /* no lcore polls: ours to free */
		dlv_cb = NULL;
	}
	if (lossy != NULL) {
		srnic_lossy_detach(lossy);
		lossy = NULL;
	}
	lossy_rule_set(-1, -1, SRNIC_LOSSY_PASS, 0);
}

/* ---- buffers with guards: canaries right before and after an MR ---- */

#define GUARD 64
#define CANARY 0xA5

struct gbuf {
	uint8_t *base;             /* malloc'd: ASan's heap, redzones beyond */
	size_t total;
	uint8_t *p;                /* the MR */
	size_t len;
	struct srnic_mr *mr;
};
static struct gbuf gbufs[8];
static unsigned int ngbufs;

static struct gbuf *
gbuf_new(int side, size_t len, int access, uint32_t seed)
{
	struct gbuf *g;

	assert_true(ngbufs < RTE_DIM(gbufs));
	g = &gbufs[ngbufs++];
	g->total = RTE_ALIGN_CEIL(len + 2 * GUARD, 64);
	g->base = aligned_alloc(64, g->total);
	assert_non_null(g->base);
	memset(g->base, CANARY, g->total);
	g->p = g->base + GUARD;
	g->len = len;
	srnic_test_fill(g->p, len, seed);
	g->mr = srnic_reg_mr(E->p.pd[side], g->p, len, access);
	assert_non_null(g->mr);
	/* Any engine access to the guards is an ASan report on the spot. */
	POISON(g->base, GUARD);
	POISON(g->p + len, g->total - GUARD - len);
	return g;
}

static void
gbuf_check_canaries(struct gbuf *g)
{
	size_t i;

	UNPOISON(g->base, g->total);
	for (i = 0; i < GUARD; i++)
		if (g->base[i] != CANARY)
			fail_msg("canary before the MR hit at -%zu", GUARD - i);
	for (i = GUARD + g->len; i < g->total; i++)
		if (g->base[i] != CANARY)
			fail_msg("canary after the MR hit at +%zu", i - GUARD - g->len);
	POISON(g->base, GUARD);
	POISON(g->p + g->len, g->total - GUARD - g->len);
}

static void
gbufs_free(void)
{
	while (ngbufs > 0) {
		struct gbuf *g = &gbufs[--ngbufs];

		UNPOISON(g->base, g->total);
		if (g->mr != NULL)
			assert_int_equal(srnic_dereg_mr(g->mr), 0);
		free(g->base);
		memset(g, 0, sizeof(*g));
	}
}

/* Expected frames (filled by w_*(), checked by expect_frames()). */
enum { C_SYN = 1, C_MSN = 2, C_VA = 4, C_LEN = 8, C_PAY = 16, C_ORIG = 32, C_BAD = 64 };

struct want {
	uint8_t op;
	uint32_t psn;
	unsigned int chk;
	uint8_t syn;
	uint32_t msn;
	uint64_t va;
	uint32_t len;
	uint32_t pay;
	uint64_t orig;
	int parse_rc;              /* with C_BAD */
};
static struct want W[256];
static uint32_t nw;

/* ---- setup ---- */

static struct srnic_cq *cq2[2];
static struct srnic_qp *qp2[2];

static void
qp2_destroy(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (qp2[i] != NULL) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			srnic_modify_qp(qp2[i], &a, IBV_QP_STATE);
		}
	e2e_settle(4);
	for (i = 0; i < 2; i++) {
		if (qp2[i] != NULL)
			assert_int_equal(srnic_destroy_qp(qp2[i]), 0);
		qp2[i] = NULL;
	}
	e2e_settle(4);
	for (i = 0; i < 2; i++) {
		if (cq2[i] != NULL)
			srnic_destroy_cq(cq2[i]);
		cq2[i] = NULL;
	}
}

static int
group_setup(void **state)
{
	int i;

	if (e2e_group_setup(state) != 0)
		return -1;
	pool = rte_pktmbuf_pool_create("e2e_faults", 2047, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
				       rte_socket_id());
	if (pool == NULL)
		return -1;
	for (i = 0; i < 2; i++)
		if (rte_eth_add_first_rx_callback(E->p.port[i], 0, pre_rx, NULL) == NULL)
			return -1;
	lossy_off();
	return 0;
}

static void
tap_reset(void)
{
	memset(&rule, 0, sizeof(rule));
	nsent = 0;
	ndlv = 0;
	nw = 0; /* expectations left by a failed test */
}

static struct e2e_conf
conf_default(void)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { PSN_A, PSN_B } };

	return c;
}

/* Fresh QPs with c, buffers, counters of the taps reset. */
static void
fresh(const struct e2e_conf *c)
{
	lossy_off();
	e2e_qps_renew(c);
	tap_reset();
	e2e_bufs_new(&bufs, BUFLEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 11, 22);
}

static int
setup(void **state)
{
	struct e2e_conf c = conf_default();

	RTE_SET_USED(state);
	e2e_qps_create(&c);
	tap_reset();
	return 0;
}

static int
teardown(void **state)
{
	lossy_off();
	tap_reset();
	qp2_destroy();
	e2e_teardown(state);
	gbufs_free();
	return 0;
}

/* ---- posting ---- */

/* Side's WCs are exactly n, the i-th with wr_id ids[i] and status st[i]. */
static void
expect_wcs(int side, uint32_t n, const uint64_t *ids, const enum ibv_wc_status *st)
{
	uint32_t i;

	if (E->nwc[side] != n)
		e2e_dump();
	assert_int_equal(E->nwc[side], n);
	for (i = 0; i < n; i++) {
		if (E->wc[side][i].wr_id != ids[i] || E->wc[side][i].status != st[i])
			e2e_dump();
		assert_int_equal(E->wc[side][i].wr_id, ids[i]);
		assert_int_equal(E->wc[side][i].status, st[i]);
	}
}

/* One successful WC on A (wr_id 1, opcode op, byte_len len), none on B. */
static void
expect_one_ok(enum ibv_wc_opcode op, uint32_t len)
{
	const struct ibv_wc *wc = e2e_wait_wc(0, 1);

	e2e_settle(16);
	if (wc->status != IBV_WC_SUCCESS || E->nwc[0] != 1)
		e2e_dump();
	assert_int_equal(E->nwc[0], 1);
	assert_int_equal(wc->wr_id, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, op);
	assert_int_equal(wc->byte_len, len);
	assert_int_equal(E->nwc[1], 0);
}

/* ---- expected frames in the capture ---- */

static struct want *
want(uint8_t op, uint32_t psn, unsigned int chk)
{
	struct want *w;

	assert_true(nw < RTE_DIM(W));
	w = &W[nw++];
	memset(w, 0, sizeof(*w));
	w->op = op;
	w->psn = psn & SRNIC_PSN_MASK;
	w->chk = chk;
	return w;
}

static void
w_ack(uint32_t psn, uint8_t syn, uint32_t msn)
{
	struct want *w = want(SRNIC_OP_RC_ACK, psn, C_SYN | C_MSN);

	w->syn = syn;
	w->msn = msn;
}

static void
w_req(uint8_t op, uint32_t psn, uint32_t pay)
{
	want(op, psn, C_PAY)->pay = pay;
}

static void
w_rreq(uint32_t psn, uint64_t va, uint32_t len)
{
	struct want *w = want(SRNIC_OP_RC_READ_REQ, psn, C_VA | C_LEN | C_PAY);

	w->va = va;
	w->len = len;
}

static void
w_aack(uint32_t psn, uint32_t msn, uint64_t orig)
{
	struct want *w = want(SRNIC_OP_RC_ATOMIC_ACK, psn, C_SYN | C_MSN | C_ORIG);

	w->syn = SYN_ACK;
	w->msn = msn;
	w->orig = orig;
}

static void
w_bad(int parse_rc, uint8_t op, uint32_t psn)
{
	want(op, psn, C_BAD)->parse_rc = parse_rc;
}

/* The READ response message for len bytes from psn: FIRST..LAST or ONLY. */
static void
w_read_msg(uint32_t psn, uint32_t msn, uint32_t len)
{
	uint32_t n = len == 0 ? 1 : (len + PMTU - 1) / PMTU, i;

	for (i = 0; i < n; i++) {
		uint8_t op = n == 1 ? SRNIC_OP_RC_READ_RESP_ONLY :
			     i == 0 ? SRNIC_OP_RC_READ_RESP_FIRST :
			     i == n - 1 ? SRNIC_OP_RC_READ_RESP_LAST : SRNIC_OP_RC_READ_RESP_MIDDLE;
		unsigned int chk = C_PAY;
		struct want *w;

		if (op != SRNIC_OP_RC_READ_RESP_MIDDLE)
			chk |= C_SYN | C_MSN;
		w = want(op, psn + i, chk);
		w->syn = SYN_ACK;
		w->msn = msn;
		w->pay = RTE_MIN(PMTU, len - i * PMTU);
	}
}

static bool
frame_ok(const struct e2e_pkt *k, const struct want *w, char *why, size_t n)
{
	if (w->chk & C_BAD) {
		const uint8_t *bth = k->data + RAW_BTH_OFF;

		if (k->parse_rc != w->parse_rc || k->len < RAW_BTH_OFF + SRNIC_BTH_LEN ||
		    srnic_bth_opcode(bth) != w->op || srnic_bth_psn(bth) != w->psn) {
			snprintf(why, n, "want a frame that fails parse with %d (%s psn %u), got parse %d",
				 w->parse_rc, srnic_opcode_name(w->op), w->psn, k->parse_rc);
			return false;
		}
		return true;
	}
	if (k->parse_rc != SRNIC_PARSE_OK) {
		snprintf(why, n, "parse error %d", k->parse_rc);
		return false;
	}
	if (k->opcode != w->op || k->psn != w->psn) {
		snprintf(why, n, "want %s psn %u, got %s psn %u", srnic_opcode_name(w->op), w->psn,
			 srnic_opcode_name(k->opcode), k->psn);
		return false;
	}
	if ((w->chk & C_PAY) && k->pay_len != w->pay) {
		snprintf(why, n, "payload %u, want %u", k->pay_len, w->pay);
		return false;
	}
	if (w->chk & (C_SYN | C_MSN)) {
		const uint8_t *aeth;

		if (!(k->mask & SRNIC_OPM_AETH)) {
			snprintf(why, n, "no AETH");
			return false;
		}
		aeth = e2e_hdr(k, SRNIC_HDR_AETH);
		if ((w->chk & C_SYN) && srnic_aeth_syndrome(aeth) != w->syn) {
			snprintf(why, n, "syndrome %#x, want %#x", srnic_aeth_syndrome(aeth), w->syn);
			return false;
		}
		if ((w->chk & C_MSN) && srnic_aeth_msn(aeth) != w->msn) {
			snprintf(why, n, "MSN %u, want %u", srnic_aeth_msn(aeth), w->msn);
			return false;
		}
	}
	if (w->chk & (C_VA | C_LEN)) {
		const uint8_t *reth = e2e_hdr(k, SRNIC_HDR_RETH);

		if ((w->chk & C_VA) && srnic_reth_va(reth) != w->va) {
			snprintf(why, n, "RETH va %#" PRIx64 ", want %#" PRIx64, srnic_reth_va(reth),
				 w->va);
			return false;
		}
		if ((w->chk & C_LEN) && srnic_reth_len(reth) != w->len) {
			snprintf(why, n, "RETH len %u, want %u", srnic_reth_len(reth), w->len);
			return false;
		}
	}
	if ((w->chk & C_ORIG) &&
	    srnic_atmack_orig(e2e_hdr(k, SRNIC_HDR_ATMACK)) != w->orig) {
		snprintf(why, n, "original data %#" PRIx64 ", want %#" PRIx64,
			 srnic_atmack_orig(e2e_hdr(k, SRNIC_HDR_ATMACK)), w->orig);
		return false;
	}
	return true;
}

static uint32_t
raw_dqpn(const struct e2e_pkt *k)
{
	if (k->parse_rc == SRNIC_PARSE_OK)
		return k->dqpn;
	return k->len >= RAW_BTH_OFF + SRNIC_BTH_LEN ? srnic_bth_dqpn(k->data + RAW_BTH_OFF) : 0;
}

/* The frames side sent to dqpn (0: any) captured from index from on are
 * exactly W[0..nw). Clears W. */
static void
expect_frames(int side, uint32_t dqpn, uint32_t from)
{
	uint32_t i, j = 0;
	char why[160];

	for (i = from; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side != side || (dqpn != 0 && raw_dqpn(k) != dqpn))
			continue;
		if (j >= nw) {
			e2e_dump();
			fail_msg("%s: frame %u (capture %u) is one too many", side ? "B->A" : "A->B",
				 j, i);
		}
		if (!frame_ok(k, &W[j], why, sizeof(why))) {
			e2e_dump();
			fail_msg("%s: frame %u (capture %u): %s", side ? "B->A" : "A->B", j, i, why);
		}
		j++;
	}
	if (j != nw) {
		e2e_dump();
		fail_msg("%s: %u frames, want %u", side ? "B->A" : "A->B", j, nw);
	}
	nw = 0;
}

/* ---- 1, 2: lost READ responses ---- */

static uint8_t saved[BUFLEN];

/* A READ of len with the nth response of opcode op dropped (skip before it). */
static void
read_with_lost_resp(uint32_t len, uint8_t op, uint32_t skip)
{
	struct e2e_conf c = conf_default();

	fresh(&c);
	memcpy(saved, bufs.l, BUFLEN);
	e2e_drop_arm(1, op, skip, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, len, 0, IBV_SEND_SIGNALED);
	expect_one_ok(IBV_WC_RDMA_READ, len);
	assert_int_equal(E->drop.dropped, 1);
	assert_memory_equal(bufs.l, bufs.r, len);
	assert_memory_equal(bufs.l + len, saved + len, BUFLEN - len); /* nothing past it */
}

/* FIRST lost: the MIDDLE after it shows the gap; the retry asks for all of
 * it again from the READ's own PSN. */
static void
test_read_lost_first(void **state)
{
	const uint32_t len = 8 * PMTU;
	uint64_t va;

	RTE_SET_USED(state);
	read_with_lost_resp(len, SRNIC_OP_RC_READ_RESP_FIRST, 0);
	va = (uintptr_t)bufs.r;
	w_rreq(PSN(0), va, len);
	w_rreq(PSN(0), va, len);
	expect_frames(0, 0, 0);
	w_read_msg(PSN(0), 1, len);
	memmove(&W[0], &W[1], (nw - 1) * sizeof(W[0])); /* the lost FIRST */
	nw--;
	w_read_msg(PSN(0), 1, len); /* the answer to the retry: all of it */
	expect_frames(1, 0, 0);
}

/* MIDDLE k lost: the retry READ has PSN first + k, RETH va + k * PMTU and
 * len - k * PMTU; it is answered as a new message FIRST..LAST. */
static void
test_read_lost_middle(void **state)
{
	const uint32_t len = 8 * PMTU, k = 3;
	uint64_t va;

	RTE_SET_USED(state);
	read_with_lost_resp(len, SRNIC_OP_RC_READ_RESP_MIDDLE, k - 1);
	va = (uintptr_t)bufs.r;
	w_rreq(PSN(0), va, len);
	w_rreq(PSN(k), va + k * PMTU, len - k * PMTU);
	expect_frames(0, 0, 0);
	w_read_msg(PSN(0), 1, len);
	memmove(&W[k], &W[k + 1], (nw - k - 1) * sizeof(W[0])); /* the lost one */
	nw--;
	w_read_msg(PSN(k), 1, len - k * PMTU);
	expect_frames(1, 0, 0);
}

/* LAST lost: nothing follows it, the ACK timer fires; the retry asks for
 * exactly the last piece, answered with READ_RESPONSE_ONLY at the last PSN. */
static void
test_read_lost_last(void **state)
{
	const uint32_t len = 7 * PMTU + 512;
	int64_t tmo = stat(0, "retry_timeout") + stat(0, "retry_starved");
	uint64_t va;

	RTE_SET_USED(state);
	read_with_lost_resp(len, SRNIC_OP_RC_READ_RESP_LAST, 0);
	/* one expiry, judged or found late (both resend) */
	assert_int_equal(stat(0, "retry_timeout") + stat(0, "retry_starved") - tmo, 1);
	va = (uintptr_t)bufs.r;
	w_rreq(PSN(0), va, len);
	w_rreq(PSN(7), va + 7 * PMTU, 512);
	expect_frames(0, 0, 0);
	w_read_msg(PSN(0), 1, len);
	nw--; /* LAST lost */
	w_read_msg(PSN(7), 1, 512);
	assert_int_equal(W[nw - 1].op, SRNIC_OP_RC_READ_RESP_ONLY);
	expect_frames(1, 0, 0);
}

/* ---- 3, 4: duplicated requests ---- */

/* Put a copy of a captured frame on the wire again, from the side that
 * sent it. */
static void
replay(uint32_t idx)
{
	const struct e2e_pkt *k = &E->pkts[idx];
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	void *d;

	assert_non_null(m);
	d = rte_pktmbuf_append(m, (uint16_t)k->len);
	assert_non_null(d);
	memcpy(d, k->data, k->len);
	assert_int_equal(rte_eth_tx_burst(E->p.port[k->side], 0, &m, 1), 1);
}

static uint32_t
find_frame(int side, uint8_t op, uint32_t psn)
{
	uint32_t i;

	for (i = 0; i < E->npkts; i++)
		if (E->pkts[i].side == side && E->pkts[i].parse_rc == SRNIC_PARSE_OK &&
		    E->pkts[i].opcode == op && E->pkts[i].psn == psn)
			return i;
	e2e_dump();
	fail_msg("no %s psn %u from side %d", srnic_opcode_name(op), psn, side);
	return 0;
}

/* The lossy link duplicates the READ request: the copy arrives while the
 * READ is still being answered, so the responder restarts that answer at
 * the PSN asked for (here its first: nothing was sent yet) instead of
 * queuing a second one; the requester completes once. A
 * copy replayed after the completion, with the remote data changed
 * meanwhile, is answered again and the requester places none of it. */
static void
test_dup_read(void **state)
{
	struct e2e_conf c;
	struct srnic_lossy_conf lc = { .seed = 1 };
	const uint32_t len = 8 * PMTU;
	int64_t dup = stat(1, "resp_dup"), dupack = stat(0, "comp_dup_ack");
	int64_t restart = stat(1, "resp_dup_read_restart");
	uint32_t req;

	RTE_SET_USED(state);
	c = conf_default();

	fresh(&c);
	lossy_rule_set(SRNIC_OP_RC_READ_REQ, -1, SRNIC_LOSSY_DUP, 1);
	lossy_on(&lc);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 1, 0, len, 0, IBV_SEND_SIGNALED);
	expect_one_ok(IBV_WC_RDMA_READ, len);
	assert_int_equal(lrule.hits, 1);
	assert_memory_equal(bufs.l, bufs.r, len);
	assert_int_equal(stat(1, "resp_dup") - dup, 1);
	assert_int_equal(stat(1, "resp_dup_read_restart") - restart, 1);
	assert_int_equal(stat(0, "comp_dup_ack") - dupack, 0);
	/* sent once, delivered twice */
	w_rreq(PSN(0), (uintptr_t)bufs.r, len);
	expect_frames(0, 0, 0);
	assert_int_equal(ndlv, 2);
	assert_int_equal(dlv[0].opcode, SRNIC_OP_RC_READ_REQ);
	assert_int_equal(dlv[1].opcode, SRNIC_OP_RC_READ_REQ);
	assert_int_equal(dlv[1].psn, PSN(0));
	w_read_msg(PSN(0), 1, len);
	expect_frames(1, 0, 0);

	/* later: new remote data, the same request again */
	req = find_frame(0, SRNIC_OP_RC_READ_REQ, PSN(0));
	memcpy(saved, bufs.l, len);
	srnic_test_fill(bufs.r, len, 33);
	replay(req);
	e2e_settle(64);
	assert_int_equal(stat(1, "resp_dup") - dup, 2);
	assert_int_equal(E->nwc[0], 1);
	assert_memory_equal(bufs.l, saved, len);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RTS);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	/* and the QPs go on */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 2, 0, 3000, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.l, bufs.r, 3000);
}

/* The lossy link duplicates a FETCH_AND_ADD and a COMPARE_AND_SWAP: each is
 * executed once, the duplicate answered from the saved result (same PSN,
 * same MSN, same original value). Replayed later, after the local CPU
 * changed the value, the answer is still the saved one and nothing runs. */
static void
test_dup_atomic(void **state)
{
	struct e2e_conf c;
	struct srnic_lossy_conf lc = { .seed = 2 };
	int64_t dup = stat(1, "resp_dup"), ran = stat(1, "resp_atomic");
	uint64_t *ctr;
	uint32_t fadd;

	RTE_SET_USED(state);
	c = conf_default();

	fresh(&c);
	ctr = (uint64_t *)(bufs.r + 64);
	*ctr = 100;
	lossy_rule_set(SRNIC_OP_RC_FETCH_ADD, SRNIC_OP_RC_CMP_SWAP, SRNIC_LOSSY_DUP, 2);
	lossy_on(&lc);
	e2e_bufs_atomic(&bufs, E->qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, 64, 5, 0,
			IBV_SEND_SIGNALED);
	expect_one_ok(IBV_WC_FETCH_ADD, 8);
	assert_int_equal(*ctr, 105);                    /* executed once */
	assert_int_equal(*(uint64_t *)bufs.l, 100);
	e2e_bufs_atomic(&bufs, E->qp[0], IBV_WR_ATOMIC_CMP_AND_SWP, 2, 8, 64, 105, 7,
			IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	e2e_settle(16);
	assert_int_equal(E->nwc[0], 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_int_equal(*ctr, 7);
	assert_int_equal(*(uint64_t *)(bufs.l + 8), 105);
	assert_int_equal(lrule.hits, 2);
	assert_int_equal(stat(1, "resp_atomic") - ran, 2);
	assert_int_equal(stat(1, "resp_dup") - dup, 2);
	w_aack(PSN(0), 1, 100);
	w_aack(PSN(0), 1, 100);
	w_aack(PSN(1), 2, 105);
	w_aack(PSN(1), 2, 105);
	expect_frames(1, 0, 0);
	assert_int_equal(ndlv, 4);

	/* later */
	fadd = find_frame(0, SRNIC_OP_RC_FETCH_ADD, PSN(0));
	*ctr = 1000;
	replay(fadd);
	e2e_settle(64);
	assert_int_equal(*ctr, 1000);
	assert_int_equal(stat(1, "resp_atomic") - ran, 2);
	assert_int_equal(E->nwc[0], 2);
	assert_int_equal(*(uint64_t *)bufs.l, 100);
	w_aack(PSN(0), 1, 100);
	w_aack(PSN(0), 1, 100);
	w_aack(PSN(1), 2, 105);
	w_aack(PSN(1), 2, 105);
	w_aack(PSN(0), 1, 100);
	expect_frames(1, 0, 0);
}

/* ---- 5: reorder ---- */

/* The lossy link holds WRITE FIRST back behind the rest of an 8-packet
 * WRITE: the responder NAKs sequence error once at the PSN it expects,
 * drops the rest of the gap silently; FIRST then arrives (executed), the
 * requester goes back to it: the resent FIRST is a duplicate, the rest
 * lands, one ACK covers the message. */
static void
test_reorder_write(void **state)
{
	struct e2e_conf c;
	struct srnic_lossy_conf lc = { .seed = 3, .reorder_after = 1 };
	const uint32_t len = 8 * PMTU;
	int64_t oos = stat(1, "resp_out_of_seq"), drop = stat(1, "resp_out_of_seq_drop");
	int64_t naks = stat(1, "resp_nak_seq_sent"), dup = stat(1, "resp_dup");
	uint32_t i;

	RTE_SET_USED(state);
	c = conf_default();

	fresh(&c);
	lossy_rule_set(SRNIC_OP_RC_WRITE_FIRST, -1, SRNIC_LOSSY_REORDER, 1);
	lossy_on(&lc);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, len, 0, IBV_SEND_SIGNALED);
	expect_one_ok(IBV_WC_RDMA_WRITE, len);
	assert_memory_equal(bufs.r, bufs.l, len);
	assert_int_equal(stat(1, "resp_out_of_seq") - oos, 1);
	assert_int_equal(stat(1, "resp_nak_seq_sent") - naks, 1);
	assert_int_equal(stat(1, "resp_out_of_seq_drop") - drop, 6);
	assert_int_equal(stat(1, "resp_dup") - dup, 1);
	/* as sent: the message twice */
	for (i = 0; i < 2 * 8; i++)
		w_req(i % 8 == 0 ? SRNIC_OP_RC_WRITE_FIRST :
		      i % 8 == 7 ? SRNIC_OP_RC_WRITE_LAST : SRNIC_OP_RC_WRITE_MIDDLE, PSN(i % 8), PMTU);
	expect_frames(0, 0, 0);
	/* as delivered: FIRST behind the other seven */
	if (ndlv != 16)
		rec_dump("delivered", dlv, ndlv);
	assert_int_equal(ndlv, 16);
	for (i = 0; i < 7; i++)
		assert_int_equal(dlv[i].psn, PSN(i + 1));
	assert_int_equal(dlv[7].opcode, SRNIC_OP_RC_WRITE_FIRST);
	assert_int_equal(dlv[7].psn, PSN(0));
	assert_int_equal(dlv[8].opcode, SRNIC_OP_RC_WRITE_FIRST);
	/* one NAK for the gap, at the PSN expected; one ACK for the message */
	w_ack(PSN(0), SYN_NAK_SEQ, 0);
	w_ack(PSN(7), SYN_ACK, 1);
	expect_frames(1, 0, 0);
}

/* ---- 6: corruption ---- */

/* One payload byte of a copy of the first WRITE MIDDLE flipped on the way:
 * ICRC error, dropped; the next packet opens a gap, NAK at the corrupted
 * one's PSN, go-back-N from there. */
static void
test_corrupt_payload(void **state)
{
	struct e2e_conf c;
	const uint32_t len = 4 * PMTU;
	int64_t icrc = stat(1, "rx_icrc_err"), bad = stat(1, "rx_malformed");
	uint32_t i;

	RTE_SET_USED(state);
	c = conf_default();

	fresh(&c);
	rule_arm(0, SRNIC_OP_RC_WRITE_MIDDLE, 0, 0, 1, F_CORRUPT);
	rule.corrupt_off = 100;
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, len, 0, IBV_SEND_SIGNALED);
	expect_one_ok(IBV_WC_RDMA_WRITE, len);
	assert_int_equal(rule.hits, 1);
	assert_int_equal(stat(1, "rx_icrc_err") - icrc, 1);
	assert_int_equal(stat(1, "rx_malformed") - bad, 0);
	assert_memory_equal(bufs.r, bufs.l, len);
	srnic_test_fill(saved, BUFLEN, 11);
	assert_memory_equal(bufs.l, saved, len); /* the sender's memory untouched */
	w_req(SRNIC_OP_RC_WRITE_FIRST, PSN(0), PMTU);
	w_bad(SRNIC_PARSE_ICRC, SRNIC_OP_RC_WRITE_MIDDLE, PSN(1));
	w_req(SRNIC_OP_RC_WRITE_MIDDLE, PSN(2), PMTU);
	w_req(SRNIC_OP_RC_WRITE_LAST, PSN(3), PMTU);
	for (i = 1; i < 3; i++)
		w_req(SRNIC_OP_RC_WRITE_MIDDLE, PSN(i), PMTU);
	w_req(SRNIC_OP_RC_WRITE_LAST, PSN(3), PMTU);
	expect_frames(0, 0, 0);
	w_ack(PSN(1), SYN_NAK_SEQ, 0);
	w_ack(PSN(3), SYN_ACK, 1);
	expect_frames(1, 0, 0);
}

/* The same with the lossy link's own corruption (a random byte after the
 * Ethernet header of a copy) on a one-packet 4 KiB WRITE: the frame is
 * dropped (ICRC, or malformed if the byte hit a header), only the timer
 * can tell, the WRITE is sent again. */
static void
test_corrupt_lossy(void **state)
{
	struct e2e_conf c;
	struct srnic_lossy_conf lc = { .seed = 4 };
	struct srnic_lossy_stats st;
	int64_t icrc = stat(1, "rx_icrc_err"), bad = stat(1, "rx_malformed");
	int64_t host = stat(1, "rx_host_drop");

	RTE_SET_USED(state);
	c = conf_default();

	c.mtu = IBV_MTU_4096;
	c.timeout = 12;
	fresh(&c);
	lossy_rule_set(SRNIC_OP_RC_WRITE_ONLY, -1, SRNIC_LOSSY_CORRUPT, 1);
	lossy_on(&lc);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 4096, 0, IBV_SEND_SIGNALED);
	expect_one_ok(IBV_WC_RDMA_WRITE, 4096);
	srnic_lossy_get_stats(lossy, &st);
	assert_int_equal(st.n[SRNIC_LOSSY_CORRUPT], 1);
	assert_int_equal(stat(1, "rx_icrc_err") - icrc + stat(1, "rx_malformed") - bad +
			 stat(1, "rx_host_drop") - host, 1);
	assert_memory_equal(bufs.r, bufs.l, 4096);
	want(SRNIC_OP_RC_WRITE_ONLY, PSN(0), C_PAY)->pay = 4096;
	want(SRNIC_OP_RC_WRITE_ONLY, PSN(0), C_PAY)->pay = 4096;
	expect_frames(0, 0, 0);
	assert_int_equal(ndlv, 2);
	assert_int_not_equal(dlv[0].parse_rc, SRNIC_PARSE_OK);
	assert_int_equal(dlv[1].parse_rc, SRNIC_PARSE_OK);
	w_ack(PSN(0), SYN_ACK, 1);
	expect_frames(1, 0, 0);
}

/* ---- 7, 8: RNR ---- */

#define RNR_T 14 /* 1.28 ms */

#define RNR_T_LONG 18 /* 5.12 ms: many ACK timeouts of 131 us */

/* An RNR wait is no ACK timeout, also when the RNR NAK acknowledges an
 * earlier message (progress): SEND 1 finds B's one RECV (its ACK lost),
 * SEND 2 none; each
 * RNR wait lasts ~39 ACK timeouts, with retry_cnt 1. Both SENDs complete
 * once a RECV comes, and no ACK timeout is counted (a rewound WQE counted
 * as outstanding once armed the ACK timer inside the wait and failed the
 * QP with RETRY_EXC_ERR). */
static void
test_rnr_wait_no_ack_timeout(void **state)
{
	struct e2e_conf c;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .min_rnr_timer = RNR_T_LONG };
	int64_t rnr0 = stat(1, "resp_rnr_nak_sent"), tmo0;
	uint32_t i, dropped = 0;

	RTE_SET_USED(state);
	c = conf_default();
	c.timeout = 5; /* 131 us */
	c.retry_cnt = 1;
	fresh(&c);
	tmo0 = stat(0, "retry_timeout");
	assert_int_equal(srnic_modify_qp(E->qp[1], &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
	e2e_bufs_recv(&bufs, E->qp[1], 10, 0, 4096);
	/* B's ACK of SEND 1 lost: its RNR NAK for SEND 2 acknowledges SEND 1 */
	rule_arm(1, SRNIC_OP_RC_ACK, 0, 0, 1, F_DROP);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 1, 0, 700, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 2, 1024, 600, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(stat(1, "resp_rnr_nak_sent") - rnr0 >= 3 || E->nwc[0] >= 2);
	e2e_bufs_recv(&bufs, E->qp[1], 11, 4096, 4096);
	e2e_wait_wc(0, 2);
	e2e_wait_wc(1, 2);
	assert_int_equal(E->wc[0][0].wr_id, 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][1].wr_id, 2);
	assert_int_equal(E->wc[0][1].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][1].byte_len, 600);
	assert_true(stat(1, "resp_rnr_nak_sent") - rnr0 >= 3);
	assert_int_equal(stat(0, "retry_timeout") - tmo0, 0);
	/* what was dropped was the ACK of SEND 1: the RNR NAK acknowledged it */
	for (i = 0; i < nsent; i++)
		if (sent[i].fault == F_DROP) {
			assert_int_equal(sent[i].side, 1);
			assert_int_equal(sent[i].syn, SYN_ACK);
			assert_int_equal(sent[i].psn, PSN(0));
			dropped++;
		}
	assert_int_equal(dropped, 1);
}

/* A SEND with no RECV posted: RNR NAK with the SEND's PSN and B's
 * min_rnr_timer; the requester waits at least that long each time; the
 * RECV posted late lets it through. */
static void
test_rnr_late_recv(void **state)
{
	struct e2e_conf c;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .min_rnr_timer = RNR_T };
	uint64_t t_rnr = rte_get_timer_hz() * 128 / 100000; /* 1.28 ms */
	uint32_t i, nnak = 0, nsend = 0, last_send = 0;
	uint64_t t_nak = 0;
	int64_t rnr0 = stat(1, "resp_rnr_nak_sent");

	RTE_SET_USED(state);
	c = conf_default();

	fresh(&c);
	assert_int_equal(srnic_modify_qp(E->qp[1], &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER), 0);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 1, 0, 700, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(stat(1, "resp_rnr_nak_sent") - rnr0 >= 3);
	assert_int_equal(E->nwc[0], 0);
	e2e_bufs_recv(&bufs, E->qp[1], 10, 0, 4096);
	e2e_wait_wc(0, 1);
	e2e_wait_wc(1, 1);
	e2e_settle(16);
	assert_int_equal(E->nwc[0], 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[0][0].opcode, IBV_WC_SEND);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].wr_id, 10);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].opcode, IBV_WC_RECV);
	assert_int_equal(E->wc[1][0].byte_len, 700);
	assert_memory_equal(bufs.v, bufs.l, 700);
	/* on the wire: SEND, RNR NAK, SEND, RNR NAK, ..., SEND, ACK; each
	 * retry at least the RNR timer after the NAK */
	for (i = 0; i < nsent; i++) {
		const struct rec *r = &sent[i];

		if (r->side == 0) {
			assert_int_equal(r->opcode, SRNIC_OP_RC_SEND_ONLY);
			assert_int_equal(r->psn, PSN(0));
			assert_int_equal(r->pay_len, 700);
			assert_int_equal(nsend, nnak);
			if (nnak > 0 && r->tsc - t_nak < t_rnr) {
				rec_dump("sent", sent, nsent);
				fail_msg("retry %u after %.3f ms, RNR timer 1.28 ms", nsend,
					 (double)(r->tsc - t_nak) * 1e3 / rte_get_timer_hz());
			}
			nsend++;
			last_send = i;
		} else {
			assert_int_equal(r->opcode, SRNIC_OP_RC_ACK);
			assert_int_equal(r->psn, PSN(0));
			assert_int_equal(nsend, nnak + 1);
			if (r->syn != SYN_RNR(RNR_T)) {
				assert_int_equal(r->syn, SYN_ACK); /* the last one */
				assert_int_equal(r->msn, 1);
				assert_true(i > last_send);
				continue;
			}
			assert_int_equal(r->msn, 0);
			t_nak = r->tsc;
			nnak++;
		}
	}
	assert_true(nnak >= 3);
	assert_int_equal(nsend, nnak + 1);
	assert_int_equal(stat(1, "resp_rnr_nak_sent") - rnr0, nnak);
}

/* No RECV ever, rnr_retry 2: three RNR NAKs (the first try and two
 * retries), then IBV_WC_RNR_RETRY_EXC_ERR, the QP in ERR, WRs posted later
 * flushed and never sent. */
static void
test_rnr_exhausted(void **state)
{
	struct e2e_conf c;
	static const uint64_t ids[] = { 1, 2, 3 };
	static const enum ibv_wc_status st[] = { IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_WR_FLUSH_ERR,
						 IBV_WC_WR_FLUSH_ERR };
	uint32_t i;

	RTE_SET_USED(state);
	c = conf_default();

	c.rnr_retry[0] = 2;
	fresh(&c);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 1, 0, 300, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 1);
	E2E_RUN_UNTIL(srnic_qp_state(E->qp[0]) == IBV_QPS_ERR);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 2, 0, 300, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 3, 0, 300, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 3);
	e2e_settle(64);
	expect_wcs(0, 3, ids, st);
	assert_int_equal(E->nwc[1], 0);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	for (i = 0; i < 3; i++) /* rnr_retry + 1 */
		w_req(SRNIC_OP_RC_SEND_ONLY, PSN(0), 300);
	expect_frames(0, 0, 0);
	for (i = 0; i < 3; i++)
		w_ack(PSN(0), SYN_RNR(1), 0);
	expect_frames(1, 0, 0);
}

/* ---- 9: the peer goes away ---- */

static struct ibv_wc wc2[64];
static uint32_t nwc2;

static uint32_t
poll2(void)
{
	int n = srnic_poll_cq(cq2[0], (int)(RTE_DIM(wc2) - nwc2), wc2 + nwc2);

	assert_true(n >= 0);
	nwc2 += (uint32_t)n;
	return nwc2;
}

static void
qp2_create(void)
{
	struct srnic_pair_qp_conf pc = { .path_mtu = IBV_MTU_1024, .psn = { 500, 600 },
					 .max_rd_atomic = 16, .timeout = 14, .retry_cnt = 7,
					 .rnr_retry = 7, .min_rnr_timer = 1, .access = E2E_RALL };
	int i;

	for (i = 0; i < 2; i++) {
		struct srnic_qp_init_attr qa = { .max_send_wr = 64, .max_recv_wr = 64,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .qp_type = IBV_QPT_RC };

		cq2[i] = srnic_create_cq(E->p.dev[i], 256, E->eng[i]);
		assert_non_null(cq2[i]);
		qa.send_cq = qa.recv_cq = cq2[i];
		qp2[i] = srnic_create_qp(E->p.pd[i], &qa);
		assert_non_null(qp2[i]);
	}
	assert_int_equal(srnic_pair_connect(&E->p, qp2[0], qp2[1], &pc), 0);
	nwc2 = 0;
}

static void
post2_read(uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge s = { .addr = (uintptr_t)bufs.l + off, .length = len,
			     .lkey = srnic_mr_lkey(bufs.lmr) };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)bufs.r + off;
	wr.wr.rdma.rkey = srnic_mr_rkey(bufs.rmr);
	assert_int_equal(srnic_post_send(qp2[0], &wr, &bad), 0);
}

/* After a first WRITE completes, nothing A sends to B's QP arrives any
 * more (timeout 5, 131 us; retry_cnt 3): every outstanding WQE is sent
 * 1 + retry_cnt times, at least the timeout apart, then the first fails
 * with IBV_WC_RETRY_EXC_ERR and the rest flush. Meanwhile and afterwards a
 * second QP pair on the same devices and engines works. */
static void
test_peer_gone(void **state)
{
	struct e2e_conf c;
	static const uint64_t ids[] = { 1, 2, 3, 4, 5, 6 };
	static const enum ibv_wc_status st[] = {
		IBV_WC_SUCCESS, IBV_WC_RETRY_EXC_ERR, IBV_WC_WR_FLUSH_ERR,
		IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR,
	};
	uint64_t t_tmo = rte_get_timer_hz() * 131072 / 1000000000;
	uint32_t i, cap_mark, tap_mark, nwrite = 0, nqp1 = 0, rounds;
	const struct rte_eth_rxtx_callback *tx_cb;
	int64_t starved;

	RTE_SET_USED(state);
	c = conf_default();

	c.timeout = 5;
	c.retry_cnt = 3;
	fresh(&c);
	qp2_create();
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 1000, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 1);
	e2e_settle(16);
	cap_mark = E->npkts;
	tap_mark = nsent;
	starved = stat(0, "retry_starved");
	tx_rounds = 0;
	tx_round_dqpn = qpn(1);
	tx_round_psn = PSN(1);
	tx_cb = rte_eth_add_tx_callback(E->p.port[0], 0, tx_rounds_cb, NULL);
	assert_non_null(tx_cb);
	rule_arm(0, -1, qpn(1), 0, UINT32_MAX, F_DROP);
	/* PSN 1, 2..4, 5..6 and 7 */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 0, 100, 0, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 3, 4096, 3000, 4096, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 4, 8192, 2000, 8192, IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 5, 0, 10, 0, IBV_SEND_SIGNALED);
	post2_read(21, 16384, 5000);
	E2E_RUN_UNTIL(E->nwc[0] >= 5 && poll2() >= 1);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	assert_int_equal(wc2[0].wr_id, 21);
	assert_int_equal(wc2[0].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.l + 16384, bufs.r + 16384, 5000);
	/* the failed QP takes WRs and flushes them */
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 6, 0, 10, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 6);
	/* the second pair still works after the first failed */
	srnic_test_fill(bufs.r + 32768, 3000, 44);
	post2_read(22, 32768, 3000);
	E2E_RUN_UNTIL(poll2() >= 2);
	assert_int_equal(wc2[1].wr_id, 22);
	assert_int_equal(wc2[1].status, IBV_WC_SUCCESS);
	assert_memory_equal(bufs.l + 32768, bufs.r + 32768, 3000);
	e2e_settle(16);
	expect_wcs(0, 6, ids, st);
	for (i = 1; i < 6; i++)
		assert_int_equal(E->wc[0][i].qp_num, qpn(0));
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	assert_int_equal(E->nwc[1], 0);
	/* nothing of QP 1 after the mark arrived, nor was answered */
	expect_frames(0, qpn(1), cap_mark);
	expect_frames(1, qpn(0), cap_mark);
	/* as sent: 1 + retry_cnt rounds of the 6 outstanding packets, every
	 * one dropped, each round a timeout after the last */
	for (i = tap_mark; i < nsent; i++) {
		const struct rec *r = &sent[i];

		if (r->side != 0 || r->dqpn != qpn(1))
			continue;
		assert_int_equal(r->fault, F_DROP);
		nqp1++;
		if (r->opcode == SRNIC_OP_RC_WRITE_ONLY && r->psn == PSN(1))
			nwrite++;
	}
	rte_eth_remove_tx_callback(E->p.port[0], 0, tx_cb);
	/* each round at least a timeout after the last: the timer is armed
	 * at the sending poll's start, and a round goes out in the first poll
	 * that starts a timeout later; half the timeout is the floor, for the
	 * instructions between our stamp and the engine's clock read; one
	 * more round for each expiry this thread found late (preempted longer
	 * than the 131 us timeout: resent, no retry spent) */
	rounds = 4 + (uint32_t)(stat(0, "retry_starved") - starved);
	assert_int_equal(tx_rounds, RTE_MIN(rounds, (uint32_t)TX_ROUNDS_MAX));
	for (i = 1; i < tx_rounds; i++)
		if (tx_round_tsc[i] - tx_round_tsc[i - 1] < t_tmo / 2) {
			rec_dump("sent", sent, nsent);
			fail_msg("round %u %.1f us after the last, timeout 131 us", i,
				 (double)(tx_round_tsc[i] - tx_round_tsc[i - 1]) * 1e6 /
					 rte_get_timer_hz());
		}
	if (nwrite != rounds || nqp1 != rounds * 6)
		rec_dump("sent", sent, nsent);
	assert_int_equal(nwrite, rounds);
	assert_int_equal(nqp1, rounds * 6);
	assert_int_equal(rule.hits, rounds * 6);
}

/* ---- NAKs for a message still going out ---- */

/* A message longer than one requester budget (64 packets) is still being
 * sent when the NAK for one of its first packets comes back: the NAK
 * counts at once. */
#define LONG_PKTS 64u
#define LONG_LEN (LONG_PKTS * PMTU)

static void
w_msg(uint8_t first, uint8_t middle, uint8_t last, uint32_t from, uint32_t to)
{
	uint32_t i;

	for (i = from; i < to; i++)
		w_req(i == 0 ? first : i == LONG_PKTS - 1 ? last : middle, PSN(i), PMTU);
}

/* Sequence error: MIDDLE 5 lost, NAK at 5 while 32..63 are not sent yet:
 * go back to 5 at once, no timeout. */
static void
test_long_write_nak_seq(void **state)
{
	struct e2e_conf c;
	int64_t tmo = stat(0, "retry_timeout");

	RTE_SET_USED(state);
	c = conf_default();
	fresh(&c);
	e2e_drop_arm(0, SRNIC_OP_RC_WRITE_MIDDLE, 4, 1);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, LONG_LEN, 0, IBV_SEND_SIGNALED);
	expect_one_ok(IBV_WC_RDMA_WRITE, LONG_LEN);
	assert_memory_equal(bufs.r, bufs.l, LONG_LEN);
	assert_int_equal(stat(0, "retry_timeout") - tmo, 0);
	w_msg(SRNIC_OP_RC_WRITE_FIRST, SRNIC_OP_RC_WRITE_MIDDLE, SRNIC_OP_RC_WRITE_LAST, 0, 5);
	w_msg(SRNIC_OP_RC_WRITE_FIRST, SRNIC_OP_RC_WRITE_MIDDLE, SRNIC_OP_RC_WRITE_LAST, 6, 32);
	w_msg(SRNIC_OP_RC_WRITE_FIRST, SRNIC_OP_RC_WRITE_MIDDLE, SRNIC_OP_RC_WRITE_LAST, 5,
	      LONG_PKTS);
	expect_frames(0, 0, 0);
	w_ack(PSN(5), SYN_NAK_SEQ, 0);
	w_ack(PSN(LONG_PKTS - 1), SYN_ACK, 1);
	expect_frames(1, 0, 0);
}

/* RNR on the FIRST of a 64-packet SEND: the requester stops, waits the
 * RNR timer and starts the message again (the responder drops the rest of
 * each refused try without a sequence NAK); the RECV posted late lets it
 * through. retry_cnt 1 is not used up by RNR. */
static void
test_long_send_rnr(void **state)
{
	struct e2e_conf c;
	int64_t rnr0 = stat(1, "resp_rnr_nak_sent");
	uint32_t i, n0 = 0, nrnr = 0, nseq = 0;

	RTE_SET_USED(state);
	c = conf_default();
	c.retry_cnt = 1;
	fresh(&c);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, 1, 0, LONG_LEN, 0, IBV_SEND_SIGNALED);
	E2E_RUN_UNTIL(stat(1, "resp_rnr_nak_sent") - rnr0 >= 3 || E->nwc[0] > 0);
	assert_int_equal(E->nwc[0], 0);
	e2e_bufs_recv(&bufs, E->qp[1], 10, 0, LONG_LEN);
	e2e_wait_wc(0, 1);
	e2e_wait_wc(1, 1);
	e2e_settle(16);
	assert_int_equal(E->nwc[0], 1);
	assert_int_equal(E->wc[0][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].status, IBV_WC_SUCCESS);
	assert_int_equal(E->wc[1][0].byte_len, LONG_LEN);
	assert_memory_equal(bufs.v, bufs.l, LONG_LEN);
	/* B->A: one RNR NAK per refused try (the rest of that try is dropped
	 * quietly: no sequence NAK to hurry the requester), then one ACK */
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];
		uint8_t syn;

		if (k->side == 0) {
			n0 += k->opcode == SRNIC_OP_RC_SEND_FIRST;
			continue;
		}
		assert_int_equal(k->opcode, SRNIC_OP_RC_ACK);
		syn = srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH));
		if (syn == SYN_ACK) {
			assert_int_equal(k->psn, PSN(LONG_PKTS - 1));
			assert_int_equal(i, E->npkts - 1);
			continue;
		}
		assert_int_equal(k->psn, PSN(0));
		assert_int_equal(syn, SYN_RNR(1));
		nseq += syn == SYN_NAK_SEQ;
		nrnr++;
	}
	assert_true(nrnr >= 3);
	assert_int_equal(nseq, 0);
	assert_int_equal(n0, nrnr + 1); /* every try from FIRST */
}

/* A fatal NAK (remote access error: the rkey has no remote write) for the
 * FIRST of a 64-packet WRITE: the WQE fails with IBV_WC_REM_ACCESS_ERR
 * there and then, nothing more is sent. */
static void
test_long_write_nak_fatal(void **state)
{
	static const uint64_t ids[] = { 1, 2 };
	static const enum ibv_wc_status st[] = { IBV_WC_REM_ACCESS_ERR, IBV_WC_WR_FLUSH_ERR };
	struct ibv_sge s;
	struct e2e_conf c;

	RTE_SET_USED(state);
	c = conf_default();
	c.retry_cnt = 1;
	fresh(&c);
	s = (struct ibv_sge){ .addr = (uintptr_t)bufs.l, .length = LONG_LEN,
			      .lkey = srnic_mr_lkey(bufs.lmr) };
	e2e_post_op(0, IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)bufs.v, srnic_mr_rkey(bufs.vmr),
		    IBV_SEND_SIGNALED);
	e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 2, 0, 8, 0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 2);
	e2e_settle(16);
	expect_wcs(0, 2, ids, st);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_ERR);
	assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_ERR);
	w_msg(SRNIC_OP_RC_WRITE_FIRST, SRNIC_OP_RC_WRITE_MIDDLE, SRNIC_OP_RC_WRITE_LAST, 0, 32);
	expect_frames(0, 0, 0);
	w_ack(PSN(0), SYN_NAK_ACCESS, 0);
	expect_frames(1, 0, 0);
}

/* ---- 10: hostile requests ---- */

struct evil {
	uint8_t op;
	uint32_t psn;
	bool ackreq;
	uint64_t va;               /* RETH or AtomicETH */
	uint32_t rkey;
	uint32_t len;              /* RETH DMA length */
	uint64_t swap_add;
	uint64_t compare;
	uint32_t pay;              /* payload bytes, pattern seed 99 */
};

/* What A's QP puts below the BTH: the pair's MACs (link_pair.c; the
 * engine checks the IP addresses only), A's and B's IP from their GIDs. */
static void
evil_route(struct srnic_route *r)
{
	static const struct rte_ether_addr mac[2] = {
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 } },
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } },
	};
	union ibv_gid g;

	memset(r, 0, sizeof(*r));
	r->src_mac = mac[0];
	r->dst_mac = mac[1];
	r->ip_ver = 4;
	r->ttl = 64;
	assert_int_equal(srnic_dev_gid(E->p.dev[0], 1, &g), 0);
	memcpy(r->src_ip, &g.raw[12], 4);
	assert_int_equal(srnic_dev_gid(E->p.dev[1], 1, &g), 0);
	memcpy(r->dst_ip, &g.raw[12], 4);
	r->udp_sport = srnic_roce_sport(qpn(0), qpn(1));
}

/* Build a request with the wire library and put it on the link to B as if
 * A had sent it (A's requester knows nothing of it). */
static void
inject(const struct evil *x)
{
	const struct srnic_opcode_info *oi = srnic_opcode_info(x->op);
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct srnic_route r;
	uint8_t *bth;

	assert_non_null(m);
	evil_route(&r);
	bth = srnic_pkt_init(m, &r, x->op, inj_ip_id++);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, qpn(1));
	srnic_bth_set_psn(bth, x->psn);
	srnic_bth_set_ackreq(bth, x->ackreq);
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
		srnic_atmeth_set_compare(a, x->compare);
	}
	if (x->pay > 0) {
		void *p = rte_pktmbuf_append(m, (uint16_t)x->pay);

		assert_non_null(p);
		srnic_test_fill(p, x->pay, 99);
	}
	assert_int_equal(srnic_pkt_finish(m, pool), 0);
	assert_int_equal(rte_eth_tx_burst(E->p.port[0], 0, &m, 1), 1);
	e2e_settle(8);
}

/* Fresh QPs and one guarded MR of len on B; ref keeps its first contents. */
static struct gbuf *
evil_fresh(size_t len, int access)
{
	struct e2e_conf c = conf_default();
	struct gbuf *g;

	fresh(&c);
	gbufs_free(); /* after the old QPs are gone and the link is quiet */
	g = gbuf_new(1, len, access, 55);
	memcpy(saved, g->p, len);
	return g;
}

/* B answered with exactly the NAKs in W (after the expected good frames),
 * went to ERR, its MR is as expected (saved) and the canaries intact. */
static void
evil_check(struct gbuf *g, bool err)
{
	e2e_settle(16);
	expect_frames(1, 0, 0);
	if (err)
		E2E_RUN_UNTIL(srnic_qp_state(E->qp[1]) == IBV_QPS_ERR);
	else
		assert_int_equal(srnic_qp_state(E->qp[1]), IBV_QPS_RTS);
	assert_int_equal(srnic_qp_state(E->qp[0]), IBV_QPS_RTS); /* stale NAKs: ignored */
	assert_int_equal(E->nwc[0], 0);
	gbuf_check_canaries(g);
	assert_memory_equal(g->p, saved, g->len);
}

static uint8_t pattern99[PMTU];

/* WRITE FIRST whose RETH length runs past the MR (the first packet alone
 * would fit): remote access error at once, nothing written. And a WRITE
 * ONLY running one PMTU past a small MR. */
static void
test_evil_write_len(void **state)
{
	struct gbuf *g;

	RTE_SET_USED(state);
	g = evil_fresh(4096, E2E_RALL);
	inject(&(struct evil){ .op = SRNIC_OP_RC_WRITE_FIRST, .psn = PSN(0), .va = (uintptr_t)g->p,
			       .rkey = srnic_mr_rkey(g->mr), .len = 4096 + PMTU, .pay = PMTU });
	w_ack(PSN(0), SYN_NAK_ACCESS, 0);
	evil_check(g, true);

	g = evil_fresh(512, E2E_RALL);
	inject(&(struct evil){ .op = SRNIC_OP_RC_WRITE_ONLY, .psn = PSN(0), .ackreq = true,
			       .va = (uintptr_t)g->p, .rkey = srnic_mr_rkey(g->mr), .len = PMTU,
			       .pay = PMTU });
	w_ack(PSN(0), SYN_NAK_ACCESS, 0);
	evil_check(g, true);
}

/* READ whose va + len wraps around 2^64, and READ of 2^31 + 1 bytes (over
 * the largest message) or exactly 2^31 (over the MR). */
static void
test_evil_read_range(void **state)
{
	struct gbuf *g;

	RTE_SET_USED(state);
	g = evil_fresh(4096, E2E_RALL);
	inject(&(struct evil){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .ackreq = true,
			       .va = UINT64_MAX - 1023, .rkey = srnic_mr_rkey(g->mr),
			       .len = 4096 });
	w_ack(PSN(0), SYN_NAK_ACCESS, 0);
	evil_check(g, true);

	g = evil_fresh(4096, E2E_RALL);
	inject(&(struct evil){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .ackreq = true,
			       .va = (uintptr_t)g->p + 4096 - 16, .rkey = srnic_mr_rkey(g->mr),
			       .len = UINT32_MAX - 8 });
	w_ack(PSN(0), SYN_NAK_INV, 0);
	evil_check(g, true);

	g = evil_fresh(4096, E2E_RALL);
	inject(&(struct evil){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .ackreq = true,
			       .va = (uintptr_t)g->p, .rkey = srnic_mr_rkey(g->mr),
			       .len = (1u << 31) + 1 });
	w_ack(PSN(0), SYN_NAK_INV, 0);
	evil_check(g, true);

	g = evil_fresh(4096, E2E_RALL);
	inject(&(struct evil){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .ackreq = true,
			       .va = (uintptr_t)g->p, .rkey = srnic_mr_rkey(g->mr),
			       .len = 1u << 31 });
	w_ack(PSN(0), SYN_NAK_ACCESS, 0);
	evil_check(g, true);
}

/* WRITE MIDDLE and WRITE LAST with no FIRST before them: invalid request. */
static void
test_evil_write_no_first(void **state)
{
	static const uint8_t ops[] = { SRNIC_OP_RC_WRITE_MIDDLE, SRNIC_OP_RC_WRITE_LAST };
	unsigned int i;

	RTE_SET_USED(state);
	for (i = 0; i < RTE_DIM(ops); i++) {
		struct gbuf *g = evil_fresh(4096, E2E_RALL);

		inject(&(struct evil){ .op = ops[i], .psn = PSN(0), .ackreq = true, .pay = PMTU });
		w_ack(PSN(0), SYN_NAK_INV, 0);
		evil_check(g, true);
	}
}

/* A WRITE of 1124 bytes ending at the MR's end: FIRST lands 1024 bytes,
 * then a LAST with 200 (100 remain) or a MIDDLE with a full PMTU: invalid
 * request at that PSN, nothing of it written. */
static void
test_evil_write_last_too_long(void **state)
{
	static const struct { uint8_t op; uint32_t pay; } tail[] = {
		{ SRNIC_OP_RC_WRITE_LAST, 200 },
		{ SRNIC_OP_RC_WRITE_MIDDLE, PMTU },
	};
	unsigned int i;

	RTE_SET_USED(state);
	srnic_test_fill(pattern99, PMTU, 99);
	for (i = 0; i < RTE_DIM(tail); i++) {
		const uint32_t len = PMTU + 100;
		struct gbuf *g = evil_fresh(4096, E2E_RALL);
		uint64_t va = (uintptr_t)g->p + 4096 - len;

		inject(&(struct evil){ .op = SRNIC_OP_RC_WRITE_FIRST, .psn = PSN(0), .va = va,
				       .rkey = srnic_mr_rkey(g->mr), .len = len, .pay = PMTU });
		inject(&(struct evil){ .op = tail[i].op, .psn = PSN(1), .ackreq = true,
				       .pay = tail[i].pay });
		w_ack(PSN(1), SYN_NAK_INV, 0);
		memcpy(saved + 4096 - len, pattern99, PMTU); /* FIRST was fine */
		evil_check(g, true);
	}
}

/* SEND longer than the RECV: a SEND ONLY of 200 into 100 bytes, and SEND
 * FIRST + LAST of 2048 into 1500; the RECV (its buffer the whole MR)
 * completes with IBV_WC_LOC_LEN_ERR, nothing past it written. */
static void
test_evil_send_over_recv(void **state)
{
	struct ibv_sge s;
	struct gbuf *g;

	RTE_SET_USED(state);
	srnic_test_fill(pattern99, PMTU, 99);
	g = evil_fresh(100, IBV_ACCESS_LOCAL_WRITE);
	s = (struct ibv_sge){ .addr = (uintptr_t)g->p, .length = 100, .lkey = srnic_mr_lkey(g->mr) };
	e2e_post_rx(1, 7, &s, 1);
	inject(&(struct evil){ .op = SRNIC_OP_RC_SEND_ONLY, .psn = PSN(0), .ackreq = true,
			       .pay = 200 });
	w_ack(PSN(0), SYN_NAK_INV, 0);
	evil_check(g, true);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].wr_id, 7);
	assert_int_equal(E->wc[1][0].status, IBV_WC_LOC_LEN_ERR);

	g = evil_fresh(1500, IBV_ACCESS_LOCAL_WRITE);
	s = (struct ibv_sge){ .addr = (uintptr_t)g->p, .length = 1500,
			      .lkey = srnic_mr_lkey(g->mr) };
	e2e_post_rx(1, 8, &s, 1);
	inject(&(struct evil){ .op = SRNIC_OP_RC_SEND_FIRST, .psn = PSN(0), .pay = PMTU });
	inject(&(struct evil){ .op = SRNIC_OP_RC_SEND_LAST, .psn = PSN(1), .ackreq = true,
			       .pay = PMTU });
	w_ack(PSN(1), SYN_NAK_INV, 0);
	memcpy(saved, pattern99, PMTU);
	evil_check(g, true);
	assert_int_equal(E->nwc[1], 1);
	assert_int_equal(E->wc[1][0].wr_id, 8);
	assert_int_equal(E->wc[1][0].status, IBV_WC_LOC_LEN_ERR);
}

/* Atomics on the MR's last 4 bytes: an MR of 4092 bytes, its last 8-byte
 * aligned word half outside: remote access error, neither half touched.
 * Misaligned at the last 4 bytes of a 4096-byte MR: invalid request. */
static void
test_evil_atomic_tail(void **state)
{
	static const uint8_t ops[] = { SRNIC_OP_RC_FETCH_ADD, SRNIC_OP_RC_CMP_SWAP };
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	unsigned int i;

	RTE_SET_USED(state);
	for (i = 0; i < RTE_DIM(ops); i++) {
		struct gbuf *g = evil_fresh(4092, acc);
		uint64_t word;

		/* compare = what the 8 bytes hold (4 of the MR, 4 of canary) */
		memcpy(&word, g->p + 4088, 4);
		memset((uint8_t *)&word + 4, CANARY, 4);
		inject(&(struct evil){ .op = ops[i], .psn = PSN(0), .ackreq = true,
				       .va = (uintptr_t)g->p + 4088, .rkey = srnic_mr_rkey(g->mr),
				       .swap_add = 0x0101010101010101ull, .compare = word });
		w_ack(PSN(0), SYN_NAK_ACCESS, 0);
		evil_check(g, true);

		g = evil_fresh(4096, acc);
		inject(&(struct evil){ .op = ops[i], .psn = PSN(0), .ackreq = true,
				       .va = (uintptr_t)g->p + 4092, .rkey = srnic_mr_rkey(g->mr),
				       .swap_add = 1 });
		w_ack(PSN(0), SYN_NAK_INV, 0);
		evil_check(g, true);
	}
}

/* Duplicates naming memory outside the MR: a duplicate READ whose range
 * runs past the MR is not answered (no byte of it read), a duplicate
 * atomic with a wild address is answered from the saved result without
 * touching memory, one at a PSN that was a WRITE is not executed, an
 * atomic ahead of the expected PSN gets a sequence NAK and does not run.
 * The QP stays usable. */
static void
test_evil_duplicates(void **state)
{
	struct gbuf *g;
	uint32_t rkey;
	uint64_t v;
	int64_t dup = stat(1, "resp_dup");

	RTE_SET_USED(state);
	srnic_test_fill(pattern99, PMTU, 99);
	g = evil_fresh(4096, E2E_RALL);
	rkey = srnic_mr_rkey(g->mr);
	/* PSN 0: READ of 1024 at the MR's start, answered */
	inject(&(struct evil){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .ackreq = true,
			       .va = (uintptr_t)g->p, .rkey = rkey, .len = PMTU });
	/* again, now reaching 512 bytes past the MR's end: dropped */
	inject(&(struct evil){ .op = SRNIC_OP_RC_READ_REQ, .psn = PSN(0), .ackreq = true,
			       .va = (uintptr_t)g->p + 4096 - 512, .rkey = rkey, .len = PMTU });
	/* PSN 1: FETCH_ADD 1 on word 0 */
	inject(&(struct evil){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(1), .ackreq = true,
			       .va = (uintptr_t)g->p, .rkey = rkey, .swap_add = 1 });
	/* its duplicate naming the word right after the MR: the saved answer */
	inject(&(struct evil){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(1), .ackreq = true,
			       .va = (uintptr_t)g->p + 4096, .rkey = rkey, .swap_add = 1 });
	/* PSN 2: WRITE ONLY of 8 bytes at 8 */
	inject(&(struct evil){ .op = SRNIC_OP_RC_WRITE_ONLY, .psn = PSN(2), .ackreq = true,
			       .va = (uintptr_t)g->p + 8, .rkey = rkey, .len = 8, .pay = 8 });
	/* an "atomic" at PSN 2 (a WRITE's) outside the MR: no saved result */
	inject(&(struct evil){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(2), .ackreq = true,
			       .va = (uintptr_t)g->p + 4096, .rkey = rkey, .swap_add = 1 });
	/* an atomic from the future, outside the MR */
	inject(&(struct evil){ .op = SRNIC_OP_RC_FETCH_ADD, .psn = PSN(9), .ackreq = true,
			       .va = (uintptr_t)g->p + 4096, .rkey = rkey, .swap_add = 1 });
	/* and the QP goes on: PSN 3 */
	inject(&(struct evil){ .op = SRNIC_OP_RC_WRITE_ONLY, .psn = PSN(3), .ackreq = true,
			       .va = (uintptr_t)g->p + 16, .rkey = rkey, .len = 8, .pay = 8 });
	w_read_msg(PSN(0), 1, PMTU);
	memcpy(&v, saved, 8); /* the word as stored, host order */
	w_aack(PSN(1), 2, v);
	w_aack(PSN(1), 2, v);
	w_ack(PSN(2), SYN_ACK, 3);
	w_ack(PSN(3), SYN_NAK_SEQ, 3);
	w_ack(PSN(3), SYN_ACK, 4);
	/* memory: word 0 + 1, the two WRITEs */
	v += 1;
	memcpy(saved, &v, 8);
	memcpy(saved + 8, pattern99, 8);
	memcpy(saved + 16, pattern99, 8);
	evil_check(g, false);
	assert_int_equal(stat(1, "resp_dup") - dup, 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_lost_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_lost_middle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_lost_last, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dup_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dup_atomic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reorder_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_payload, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_lossy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_late_recv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_wait_no_ack_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_exhausted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_gone, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_write_nak_seq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_send_rnr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_write_nak_fatal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evil_write_len, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evil_read_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evil_write_no_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evil_write_last_too_long, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evil_send_over_recv, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evil_atomic_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_evil_duplicates, setup, teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_faults", tests, group_setup,
					   e2e_group_teardown);
}
