/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MR lifetime with zero-copy READ responses, and stale keys.
 *
 * The responder (B) builds READ responses as external-buffer segments over
 * the registered memory. Polling only B's engine leaves the responses in
 * the ring towards A; deregistering then must return at once, must not
 * release the memory while those mbufs live, and must release it exactly
 * once when A has consumed (freed) the last of them. The old rkey is dead
 * from the moment srnic_dereg_mr() returns, also once its index is reused
 * by a new registration (with another generation byte). A stale lkey fails
 * locally, with no packet sent for its work request.
 */
#include <inttypes.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_ring.h>

#include "host_util.h"

#define MR_PMTU 4096
#define MR_NPKTS 48                        /* A consumes them in two steps */
#define MR_FIRST 32                        /* what A sees of them first */
#define MR_LEN (MR_NPKTS * MR_PMTU)

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x3a, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x3b, 0x02 } },
};

static struct host_duo D;              /* PDs outlive the QPs (and MRs outlive them) */
static struct {
	struct host_ep a, b;
} T;

struct release {
	unsigned int count;
	void *addr;
	size_t length;
	void *arg;
};

static void
on_release(void *addr, size_t length, void *arg)
{
	struct release *r = arg;

	r->count++;
	r->addr = addr;
	r->length = length;
	r->arg = arg;
}

static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	if (host_eal_init("host_mr", 0, NULL) != 0)
		return -1;
	return host_duo_setup(&D, "mrz", mac, NULL);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	host_duo_teardown(&D);
	rte_eal_cleanup();
	return 0;
}

static int
setup(void **state)
{
	RTE_SET_USED(state);
	host_duo_connect(&D, &T.a, &T.b, 64, IBV_MTU_4096);
	return 0;
}

static int
teardown(void **state)
{
	RTE_SET_USED(state);
	host_duo_disconnect(&T.a, &T.b);
	return 0;
}

/* The NAK B sent for a request at psn: exactly one, syndrome 0x62. */
static void
check_access_nak(uint32_t psn)
{
	uint32_t idx[64], n, i, found = 0;

	n = host_cap_roce(D.port[0], SRNIC_OP_RC_ACK, idx, RTE_DIM(idx));
	for (i = 0; i < n; i++) {
		const struct host_frame *k = &H_cap->f[idx[i]];
		const uint8_t *aeth = k->data + k->pkt.bth_off + SRNIC_BTH_LEN;

		assert_int_equal(k->parse_rc, SRNIC_PARSE_OK);
		if (aeth[0] != 0x62)
			continue;
		assert_int_equal(k->pkt.psn, psn);
		assert_true(k->icrc_ok);
		found++;
	}
	assert_int_equal(found, 1);
}

/* PSN of the last READ request A sent. */
static uint32_t
last_read_psn(void)
{
	uint32_t idx[64], n = host_cap_roce(D.port[1], SRNIC_OP_RC_READ_REQ, idx, RTE_DIM(idx));

	assert_true(n >= 1);
	return H_cap->f[idx[n - 1]].pkt.psn;
}

static void
test_mr_zero_copy_lifetime(void **state)
{
	struct release rel = { 0 };
	uint8_t *local = host_alloc(MR_LEN), *remote = host_alloc(MR_LEN);
	struct srnic_mr *lmr, *rmr, *mr;
	struct rte_mbuf *held[MR_NPKTS];
	int64_t zc0 = host_eng_stat(D.eng[1], "resp_zc_segs");
	int64_t copy0 = host_eng_stat(D.eng[1], "resp_zc_copy_fallback");
	int64_t nak0 = host_eng_stat(D.eng[1], "resp_nak_rem_access_sent");
	uint32_t old_key, key, i, spins;
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	srnic_test_fill(remote, MR_LEN, 4);
	lmr = srnic_reg_mr(T.a.pd, local, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr_cb(T.b.pd, remote, MR_LEN, IBV_ACCESS_REMOTE_READ, on_release, &rel);
	assert_non_null(lmr);
	assert_non_null(rmr);
	old_key = srnic_mr_rkey(rmr);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x41, local, MR_LEN, srnic_mr_lkey(lmr),
				   (uintptr_t)remote, old_key, IBV_SEND_SIGNALED), 0);

	/* A sends the request; B alone builds all 48 responses, zero-copy. */
	srnic_engine_poll(D.eng[0]);
	assert_int_equal(rte_ring_count(D.ab), 1);
	for (spins = 0; host_eng_stat(D.eng[1], "resp_read_pkts") < MR_NPKTS; spins++) {
		assert_true(spins < 1000);
		srnic_engine_poll(D.eng[1]);
	}
	assert_int_equal(host_eng_stat(D.eng[1], "resp_zc_segs") - zc0, MR_NPKTS);
	assert_int_equal(host_eng_stat(D.eng[1], "resp_zc_copy_fallback") - copy0, 0);
	assert_int_equal(rte_ring_count(D.ba), MR_NPKTS);

	/* (a) dereg returns while they are in flight, (b) no release yet */
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	assert_int_equal(rel.count, 0);

	/* (c) A reads all that reached it (a poll drains its RX ring) while
	 * the last 16 are still on the wire: those still hold the memory */
	assert_int_equal(rte_ring_dequeue_bulk(D.ba, (void **)held, MR_NPKTS, NULL), MR_NPKTS);
	assert_int_equal(rte_ring_enqueue_bulk(D.ba, (void **)held, MR_FIRST, NULL), MR_FIRST);
	srnic_engine_poll(D.eng[0]);
	assert_int_equal(rte_ring_count(D.ba), 0);
	assert_int_equal(rel.count, 0);
	assert_int_equal(T.a.nwc, 0);
	/* the last ones: released once, with what was registered */
	assert_int_equal(rte_ring_enqueue_bulk(D.ba, (void **)&held[MR_FIRST], MR_NPKTS - MR_FIRST,
					       NULL), MR_NPKTS - MR_FIRST);
	srnic_engine_poll(D.eng[0]);
	assert_int_equal(rte_ring_count(D.ba), 0);
	assert_int_equal(rel.count, 1);
	assert_ptr_equal(rel.addr, remote);
	assert_int_equal(rel.length, MR_LEN);
	assert_ptr_equal(rel.arg, &rel);
	wc = host_wait_wc(&T.a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc->byte_len, MR_LEN);
	assert_memory_equal(local, remote, MR_LEN);
	host_settle();
	assert_int_equal(rel.count, 1);

	/* (d) the old rkey is dead: NAK remote access error, QPs to ERR */
	memset(local, 0, MR_LEN);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x42, local, MR_PMTU,
				   srnic_mr_lkey(lmr), (uintptr_t)remote, old_key,
				   IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&T.a, 2);
	assert_int_equal(wc->wr_id, 0x42);
	assert_int_equal(wc->status, IBV_WC_REM_ACCESS_ERR);
	host_settle();
	check_access_nak(last_read_psn());
	assert_int_equal(host_eng_stat(D.eng[1], "resp_nak_rem_access_sent") - nak0, 1);
	assert_int_equal(srnic_qp_state(T.a.qp), IBV_QPS_ERR);
	assert_int_equal(srnic_qp_state(T.b.qp), IBV_QPS_ERR);
	assert_int_equal(rel.count, 1);
	for (i = 0; i < MR_PMTU; i++)
		assert_int_equal(local[i], 0);

	/* (e) keys are index << 8 | generation and indexes are handed out
	 * round robin: register until the old index comes round again. */
	for (i = 0;; i++) {
		assert_true(i < 65536);
		mr = srnic_reg_mr(T.b.pd, remote, MR_LEN, IBV_ACCESS_REMOTE_READ);
		assert_non_null(mr);
		key = srnic_mr_rkey(mr);
		if ((key >> 8) == (old_key >> 8))
			break;
		assert_int_equal(srnic_dereg_mr(mr), 0);
	}
	/* not at once: a freed index waits for the others (stale keys fail
	 * longer) */
	assert_true(i > 0);
	print_message("old rkey %#x, index reused by rkey %#x after %u registrations\n",
		      old_key, key, i + 1);
	assert_int_not_equal(key & 0xff, old_key & 0xff);
	assert_int_equal(srnic_mr_lkey(mr), key);
	teardown(NULL);
	setup(NULL);
	/* the new key reads the memory, the old one still fails */
	memset(local, 0, MR_LEN);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x43, local, 2 * MR_PMTU,
				   srnic_mr_lkey(lmr), (uintptr_t)remote + MR_PMTU, key,
				   IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&T.a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_memory_equal(local, remote + MR_PMTU, 2 * MR_PMTU);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x44, local, 64, srnic_mr_lkey(lmr),
				   (uintptr_t)remote, old_key, IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&T.a, 2);
	assert_int_equal(wc->wr_id, 0x44);
	assert_int_equal(wc->status, IBV_WC_REM_ACCESS_ERR);
	host_settle();
	check_access_nak(last_read_psn());

	assert_int_equal(srnic_dereg_mr(mr), 0);
	assert_int_equal(srnic_dereg_mr(lmr), 0);
	assert_int_equal(rel.count, 1); /* the other registrations had no callback */
	rte_free(local);
	rte_free(remote);
}

/* Deregistered while its READ is half answered: the responses already
 * built keep the memory, the rest is a NAK (no access after dereg). */
static void
test_mr_dereg_mid_read(void **state)
{
	struct release rel = { 0 };
	uint8_t *local = host_alloc(MR_LEN), *remote = host_alloc(MR_LEN);
	struct srnic_mr *lmr, *rmr;
	int64_t resp0 = host_eng_stat(D.eng[1], "resp_read_pkts");
	const struct ibv_wc *wc;
	uint32_t psn, idx[64];

	RTE_SET_USED(state);
	srnic_test_fill(remote, MR_LEN, 5);
	lmr = srnic_reg_mr(T.a.pd, local, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr_cb(T.b.pd, remote, MR_LEN, IBV_ACCESS_REMOTE_READ, on_release, &rel);
	assert_non_null(lmr);
	assert_non_null(rmr);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x45, local, MR_LEN, srnic_mr_lkey(lmr),
				   (uintptr_t)remote, srnic_mr_rkey(rmr), IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(D.eng[0]);
	srnic_engine_poll(D.eng[1]); /* one budget: 32 responses */
	assert_int_equal(host_eng_stat(D.eng[1], "resp_read_pkts") - resp0, 32);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	assert_int_equal(rel.count, 0);
	srnic_engine_poll(D.eng[1]); /* the rest: a NAK */
	assert_int_equal(host_eng_stat(D.eng[1], "resp_read_pkts") - resp0, 32);
	assert_int_equal(rte_ring_count(D.ba), 33);
	assert_int_equal(rel.count, 0);
	wc = host_wait_wc(&T.a, 1);
	assert_int_equal(wc->status, IBV_WC_REM_ACCESS_ERR);
	host_settle();
	assert_int_equal(rel.count, 1);
	psn = last_read_psn();
	check_access_nak((psn + 32) & SRNIC_PSN_MASK);
	assert_int_equal(host_cap_roce(D.port[0], SRNIC_OP_RC_READ_RESP_MIDDLE, idx, 64), 31);
	assert_int_equal(srnic_dereg_mr(lmr), 0);
	rte_free(local);
	rte_free(remote);
}

/* A stale lkey (deregistered before the WR was posted) fails locally with
 * LOC_PROT_ERR; nothing of it goes out; WRs after it are flushed; the WR
 * before it completes normally. */
static void
test_stale_lkey_write(void **state)
{
	uint8_t *src = host_alloc(3 * 1024), *dst = host_alloc(3 * 1024);
	struct srnic_mr *good, *stale, *rmr;
	uint32_t stale_key, idx[64], n, i;
	int64_t err0 = host_eng_stat(D.eng[0], "req_local_err");

	RTE_SET_USED(state);
	srnic_test_fill(src, 3 * 1024, 6);
	good = srnic_reg_mr(T.a.pd, src, 3 * 1024, 0);
	stale = srnic_reg_mr(T.a.pd, src + 1024, 1024, 0);
	rmr = srnic_reg_mr(T.b.pd, dst, 3 * 1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(good);
	assert_non_null(stale);
	assert_non_null(rmr);
	stale_key = srnic_mr_lkey(stale);
	assert_int_equal(srnic_dereg_mr(stale), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(host_post(&T.a, IBV_WR_RDMA_WRITE, 0x50 + i, src + i * 1024, 1024,
					   i == 1 ? stale_key : srnic_mr_lkey(good),
					   (uintptr_t)dst + i * 1024, srnic_mr_rkey(rmr),
					   IBV_SEND_SIGNALED), 0);
	host_wait_wc(&T.a, 3);
	host_settle();
	assert_int_equal(T.a.wc[0].wr_id, 0x50);
	assert_int_equal(T.a.wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(T.a.wc[1].wr_id, 0x51);
	assert_int_equal(T.a.wc[1].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(T.a.wc[1].opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(T.a.wc[2].wr_id, 0x52);
	assert_int_equal(T.a.wc[2].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(T.a.nwc, 3);
	assert_int_equal(host_eng_stat(D.eng[0], "req_local_err") - err0, 1);
	/* one request packet: the first WRITE */
	n = host_cap_roce(D.port[1], -1, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	assert_int_equal(H_cap->f[idx[0]].pkt.opcode, SRNIC_OP_RC_WRITE_ONLY);
	assert_int_equal(H_cap->f[idx[0]].pkt.pay_len, 1024);
	assert_memory_equal(dst, src, 1024);
	for (i = 1024; i < 3 * 1024; i++)
		assert_int_equal(dst[i], 0);
	assert_int_equal(srnic_qp_state(T.a.qp), IBV_QPS_ERR);
	assert_int_equal(srnic_dereg_mr(good), 0);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	rte_free(src);
	rte_free(dst);
}

/* A READ into a stale lkey, SEND from one: the first WR of an idle QP
 * fails with no packet at all. */
static void
test_stale_lkey_read(void **state)
{
	uint8_t *buf = host_alloc(4096), *remote = host_alloc(4096);
	struct srnic_mr *mr, *rmr;
	uint32_t key, idx[16];
	int op;

	RTE_SET_USED(state);
	for (op = 0; op < 2; op++) {
		if (op == 1) {
			teardown(NULL);
			setup(NULL);
		}
		mr = srnic_reg_mr(T.a.pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
		rmr = srnic_reg_mr(T.b.pd, remote, 4096, IBV_ACCESS_REMOTE_READ);
		assert_non_null(mr);
		assert_non_null(rmr);
		key = srnic_mr_lkey(mr);
		assert_int_equal(srnic_dereg_mr(mr), 0);
		assert_int_equal(host_post(&T.a, op == 0 ? IBV_WR_RDMA_READ : IBV_WR_SEND, 0x60,
					   buf, 4096, key, (uintptr_t)remote, srnic_mr_rkey(rmr),
					   IBV_SEND_SIGNALED), 0);
		host_wait_wc(&T.a, 1);
		host_settle();
		assert_int_equal(T.a.wc[0].status, IBV_WC_LOC_PROT_ERR);
		assert_int_equal(T.a.wc[0].opcode, op == 0 ? IBV_WC_RDMA_READ : IBV_WC_SEND);
		assert_int_equal(host_cap_roce(D.port[1], -1, idx, RTE_DIM(idx)), 0);
		assert_int_equal(srnic_dereg_mr(rmr), 0);
	}
	rte_free(buf);
	rte_free(remote);
}

/* The source of a WRITE deregistered while the WRITE is half sent: the
 * rest is not sent (no access after dereg) and the WR fails locally with
 * LOC_PROT_ERR, as a stale lkey does before the first packet; it neither
 * hangs nor waits for the retry counter. */
static void
test_stale_lkey_mid_write(void **state)
{
	uint8_t *src = host_alloc(65536), *dst = host_alloc(65536);
	struct srnic_mr *smr, *rmr;
	int64_t req0 = host_eng_stat(D.eng[0], "req_pkts");
	int64_t to0 = host_eng_stat(D.eng[0], "retry_timeout");
	const struct ibv_wc *wc;
	uint32_t sent;

	RTE_SET_USED(state);
	/* PMTU 1024: 64 packets, 32 per poll */
	teardown(NULL);
	host_cap_reset();
	host_ep_create(&T.a, D.dev[0], D.pd[0], 0, 64);
	host_ep_create(&T.b, D.dev[1], D.pd[1], 0, 64);
	host_connect_pair(&T.a, &T.b, IBV_MTU_1024);
	srnic_test_fill(src, 65536, 8);
	smr = srnic_reg_mr(T.a.pd, src, 65536, 0);
	rmr = srnic_reg_mr(T.b.pd, dst, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(smr);
	assert_non_null(rmr);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_WRITE, 0x70, src, 65536, srnic_mr_lkey(smr),
				   (uintptr_t)dst, srnic_mr_rkey(rmr), IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(D.eng[0]);
	sent = (uint32_t)(host_eng_stat(D.eng[0], "req_pkts") - req0);
	assert_true(sent > 0 && sent < 64);
	assert_int_equal(srnic_dereg_mr(smr), 0);
	wc = host_wait_wc(&T.a, 1);
	host_settle();
	assert_int_equal(wc->wr_id, 0x70);
	if (wc->status != IBV_WC_LOC_PROT_ERR)
		fail_msg("WRITE whose source was deregistered half-way: %s (retry_timeout %" PRId64
			 ", req_pkts %" PRId64 ")", srnic_wc_status_str(wc->status),
			 host_eng_stat(D.eng[0], "retry_timeout") - to0,
			 host_eng_stat(D.eng[0], "req_pkts") - req0);
	assert_int_equal(host_eng_stat(D.eng[0], "req_pkts") - req0, sent);
	assert_int_equal(host_eng_stat(D.eng[0], "retry_timeout") - to0, 0);
	assert_int_equal(srnic_qp_state(T.a.qp), IBV_QPS_ERR);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	rte_free(src);
	rte_free(dst);
}

/* The sink of a READ deregistered while its responses arrive: the READ
 * fails with LOC_PROT_ERR, nothing lands in the memory after the dereg. */
static void
test_stale_lkey_mid_read(void **state)
{
	uint8_t *local = host_alloc(MR_LEN), *remote = host_alloc(MR_LEN);
	struct srnic_mr *lmr, *rmr;
	const struct ibv_wc *wc;
	uint32_t i;

	RTE_SET_USED(state);
	srnic_test_fill(remote, MR_LEN, 9);
	memset(local, 0xee, MR_LEN);
	lmr = srnic_reg_mr(T.a.pd, local, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(T.b.pd, remote, MR_LEN, IBV_ACCESS_REMOTE_READ);
	assert_non_null(lmr);
	assert_non_null(rmr);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x80, local, MR_LEN,
				   srnic_mr_lkey(lmr), (uintptr_t)remote, srnic_mr_rkey(rmr),
				   IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(D.eng[0]);
	srnic_engine_poll(D.eng[1]);
	srnic_engine_poll(D.eng[1]);
	assert_int_equal(rte_ring_count(D.ba), MR_NPKTS);
	assert_int_equal(srnic_dereg_mr(lmr), 0);
	wc = host_wait_wc(&T.a, 1);
	host_settle();
	assert_int_equal(wc->wr_id, 0x80);
	assert_int_equal(wc->status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(T.a.nwc, 1);
	for (i = 0; i < MR_LEN; i++)
		if (local[i] != 0xee)
			fail_msg("byte %u written after the sink was deregistered", i);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	rte_free(local);
	rte_free(remote);
}

/* A RECV whose lkey is stale: the SEND it meets fails at the responder:
 * RECV completes with LOC_PROT_ERR, the sender gets NAK remote operational
 * error (0x63), REM_OP_ERR; nothing is written. */
static void
test_stale_lkey_recv(void **state)
{
	uint8_t *sbuf = host_alloc(2048), *rbuf = host_alloc(2048);
	struct srnic_mr *smr, *rmr;
	uint32_t key, idx[16], n, i;
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	srnic_test_fill(sbuf, 2048, 10);
	smr = srnic_reg_mr(T.a.pd, sbuf, 2048, 0);
	rmr = srnic_reg_mr(T.b.pd, rbuf, 2048, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(rmr);
	key = srnic_mr_lkey(rmr);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	assert_int_equal(host_post_recv(&T.b, 0x90, rbuf, 2048, key), 0);
	assert_int_equal(host_post(&T.a, IBV_WR_SEND, 0x91, sbuf, 2048, srnic_mr_lkey(smr), 0, 0,
				   IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&T.b, 1);
	assert_int_equal(wc->wr_id, 0x90);
	assert_int_equal(wc->status, IBV_WC_LOC_PROT_ERR);
	wc = host_wait_wc(&T.a, 1);
	assert_int_equal(wc->wr_id, 0x91);
	assert_int_equal(wc->status, IBV_WC_REM_OP_ERR);
	host_settle();
	n = host_cap_roce(D.port[0], SRNIC_OP_RC_ACK, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	assert_int_equal(H_cap->f[idx[0]].data[H_cap->f[idx[0]].pkt.bth_off + SRNIC_BTH_LEN], 0x63);
	for (i = 0; i < 2048; i++)
		assert_int_equal(rbuf[i], 0);
	assert_int_equal(srnic_dereg_mr(smr), 0);
	rte_free(sbuf);
	rte_free(rbuf);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_mr_zero_copy_lifetime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mr_dereg_mid_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_lkey_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_lkey_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_lkey_mid_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_lkey_mid_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_lkey_recv, setup, teardown),
	};

	return cmocka_run_group_tests_name("host_mr", tests, group_setup, group_teardown);
}
