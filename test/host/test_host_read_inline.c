/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * READ responses copied instead of attached (srnic_dev_conf.read_inline_max).
 *
 * B, the responder, is created with read_inline_max = SRNIC_MAX_READ_INLINE:
 * response packets with at most that much payload carry a copy of it in
 * their header mbuf; larger ones stay zero-copy segments. A, created with
 * 0 (the default), answers B's READs zero-copy only. Checked: the bytes
 * that land, the CQEs, which way each packet was built (counters), every
 * response frame on the wire (srnic's parse and an independent ICRC, the
 * payload against the registered memory, pad included), packets of both
 * kinds in one multi-packet READ, the copy's independence from the memory
 * once built (deregistered and overwritten before A reads the answer: A
 * gets what was there, the release comes at once), and the limit.
 */
#include <errno.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "host_util.h"

#define RI_BUF (64 * 1024)

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x5a, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x5b, 0x02 } },
};

static struct host_duo D;
static struct {
	struct host_ep a, b;
	uint8_t *buf[2];                /* A's and B's registered buffers */
	struct srnic_mr *mr[2];
} T;

static int
group_setup(void **state)
{
	/* B copies up to the limit, A (the default) never */
	const uint16_t read_inline_max[2] = { 0, SRNIC_MAX_READ_INLINE };
	int i;

	RTE_SET_USED(state);
	if (host_eal_init("host_read_inline", 0, NULL) != 0 ||
	    host_duo_setup(&D, "rin", mac, read_inline_max) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		T.buf[i] = host_alloc(RI_BUF);
		if (T.buf[i] == NULL)
			return -1;
		T.mr[i] = srnic_reg_mr(D.pd[i], T.buf[i], RI_BUF,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
		if (T.mr[i] == NULL)
			return -1;
	}
	return 0;
}

static int
group_teardown(void **state)
{
	int i;

	RTE_SET_USED(state);
	for (i = 0; i < 2; i++)
		srnic_dereg_mr(T.mr[i]);
	host_duo_teardown(&D);
	for (i = 0; i < 2; i++)
		rte_free(T.buf[i]);
	rte_eal_cleanup();
	return 0;
}

static int
teardown(void **state)
{
	RTE_SET_USED(state);
	host_duo_disconnect(&T.a, &T.b);
	return 0;
}

/* Every READ response frame received on port (sent by the other side), in
 * order: parsed by srnic and by the independent ICRC, its payload the next
 * bytes of src. Returns the frames seen; *bytes the payload they carried. */
static uint32_t
check_responses(uint16_t port, const uint8_t *const *src, const uint32_t *len, uint32_t nreads,
		uint32_t *bytes)
{
	uint32_t idx[HOST_MAX_FRAMES], n, i, r = 0, off = 0, total = 0;

	n = host_cap_roce(port, -1, idx, RTE_DIM(idx));
	for (i = 0; i < n; i++) {
		const struct host_frame *f = &H_cap->f[idx[i]];
		uint8_t op;

		assert_int_equal(f->parse_rc, SRNIC_PARSE_OK);
		assert_true(f->icrc_ok);
		op = f->pkt.opcode;
		if (op < SRNIC_OP_RC_READ_RESP_FIRST || op > SRNIC_OP_RC_READ_RESP_ONLY)
			continue;
		assert_true(r < nreads);
		/* pad: the payload rounded up to 4 bytes, pad bytes zero */
		assert_int_equal(f->pkt.pad, (4 - (f->pkt.pay_len & 3)) & 3);
		assert_true(f->pkt.pay_off + f->pkt.pay_len + f->pkt.pad + SRNIC_ICRC_LEN <= f->len);
		for (uint32_t k = 0; k < f->pkt.pad; k++)
			assert_int_equal(f->data[f->pkt.pay_off + f->pkt.pay_len + k], 0);
		assert_memory_equal(f->data + f->pkt.pay_off, src[r] + off, f->pkt.pay_len);
		off += f->pkt.pay_len;
		total += f->pkt.pay_len;
		if (op == SRNIC_OP_RC_READ_RESP_LAST || op == SRNIC_OP_RC_READ_RESP_ONLY) {
			assert_int_equal(off, len[r]);
			r++;
			off = 0;
		}
	}
	assert_int_equal(r, nreads);
	*bytes = total;
	return n;
}

/* READs of sizes around the limit, one packet each (PMTU 4096): those of
 * at most SRNIC_MAX_READ_INLINE bytes are copied, the others attached. */
static void
test_read_inline_sizes(void **state)
{
	static const uint32_t size[] = { 1, 63, 64, 99, SRNIC_MAX_READ_INLINE,
					 SRNIC_MAX_READ_INLINE + 1, 4096 };
	const uint8_t *src[RTE_DIM(size)];
	uint32_t i, off = 0, copied = 0, bytes;
	int64_t in0 = host_eng_stat(D.eng[1], "resp_read_inline");
	int64_t zc0 = host_eng_stat(D.eng[1], "resp_zc_segs");
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	host_duo_connect(&D, &T.a, &T.b, 64, IBV_MTU_4096);
	srnic_test_fill(T.buf[1], RI_BUF, 21);
	memset(T.buf[0], 0, RI_BUF);
	for (i = 0; i < RTE_DIM(size); i++) {
		/* odd offsets too: the copy takes any alignment */
		src[i] = T.buf[1] + off + i;
		assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x100 + i, T.buf[0] + off,
					   size[i], srnic_mr_lkey(T.mr[0]), (uintptr_t)src[i],
					   srnic_mr_rkey(T.mr[1]), IBV_SEND_SIGNALED), 0);
		off += size[i] + 8;
		copied += size[i] <= SRNIC_MAX_READ_INLINE;
	}
	host_wait_wc(&T.a, RTE_DIM(size));
	host_settle();
	for (i = 0, off = 0; i < RTE_DIM(size); i++) {
		wc = &T.a.wc[i];
		assert_int_equal(wc->wr_id, 0x100 + i);
		assert_int_equal(wc->status, IBV_WC_SUCCESS);
		assert_int_equal(wc->opcode, IBV_WC_RDMA_READ);
		assert_int_equal(wc->byte_len, size[i]);
		assert_memory_equal(T.buf[0] + off, src[i], size[i]);
		assert_int_equal(T.buf[0][off + size[i]], 0); /* nothing past it */
		off += size[i] + 8;
	}
	assert_int_equal(host_eng_stat(D.eng[1], "resp_read_inline") - in0, copied);
	assert_int_equal(host_eng_stat(D.eng[1], "resp_zc_segs") - zc0, RTE_DIM(size) - copied);
	check_responses(D.port[0], src, size, RTE_DIM(size), &bytes);
	assert_int_equal(bytes, off - 8 * RTE_DIM(size));
}

/* One READ over several packets (PMTU 1024): the full FIRST and MIDDLE are
 * attached, the short LAST is copied; and A (read_inline_max 0) answers
 * B's READs of small sizes zero-copy. */
static void
test_read_inline_multi_packet(void **state)
{
	const uint32_t len = 2 * 1024 + 99, small = 64;
	const uint8_t *src[1];
	int64_t in0 = host_eng_stat(D.eng[1], "resp_read_inline");
	int64_t zc0 = host_eng_stat(D.eng[1], "resp_zc_segs");
	int64_t ain0 = host_eng_stat(D.eng[0], "resp_read_inline");
	int64_t azc0 = host_eng_stat(D.eng[0], "resp_zc_segs");
	uint32_t idx[16], bytes;
	const struct ibv_wc *wc;

	RTE_SET_USED(state);
	host_duo_connect(&D, &T.a, &T.b, 64, IBV_MTU_1024);
	srnic_test_fill(T.buf[1], RI_BUF, 22);
	srnic_test_fill(T.buf[0] + RI_BUF / 2, RI_BUF / 2, 23);
	memset(T.buf[0], 0, RI_BUF / 2);
	src[0] = T.buf[1] + 3;
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x200, T.buf[0], len,
				   srnic_mr_lkey(T.mr[0]), (uintptr_t)src[0],
				   srnic_mr_rkey(T.mr[1]), IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&T.a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->byte_len, len);
	assert_memory_equal(T.buf[0], src[0], len);
	host_settle();
	assert_int_equal(host_eng_stat(D.eng[1], "resp_read_inline") - in0, 1);
	assert_int_equal(host_eng_stat(D.eng[1], "resp_zc_segs") - zc0, 2);
	assert_int_equal(host_cap_roce(D.port[0], SRNIC_OP_RC_READ_RESP_FIRST, idx, 16), 1);
	assert_int_equal(host_cap_roce(D.port[0], SRNIC_OP_RC_READ_RESP_MIDDLE, idx, 16), 1);
	assert_int_equal(host_cap_roce(D.port[0], SRNIC_OP_RC_READ_RESP_LAST, idx, 16), 1);
	assert_int_equal(H_cap->f[idx[0]].pkt.pay_len, 99);
	check_responses(D.port[0], src, &len, 1, &bytes);
	assert_int_equal(bytes, len);

	/* the other way: A's responses stay zero-copy at any size */
	assert_int_equal(host_post(&T.b, IBV_WR_RDMA_READ, 0x201, T.buf[1] + RI_BUF / 2, small,
				   srnic_mr_lkey(T.mr[1]), (uintptr_t)(T.buf[0] + RI_BUF / 2),
				   srnic_mr_rkey(T.mr[0]), IBV_SEND_SIGNALED), 0);
	wc = host_wait_wc(&T.b, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_memory_equal(T.buf[1] + RI_BUF / 2, T.buf[0] + RI_BUF / 2, small);
	host_settle();
	assert_int_equal(host_eng_stat(D.eng[0], "resp_read_inline") - ain0, 0);
	assert_int_equal(host_eng_stat(D.eng[0], "resp_zc_segs") - azc0, 1);
}

struct release {
	unsigned int count;
};

static void
on_release(void *addr, size_t length, void *arg)
{
	RTE_SET_USED(addr);
	RTE_SET_USED(length);
	((struct release *)arg)->count++;
}

/* A copied answer does not hold the memory: B builds it, the MR is
 * deregistered (released at once: nothing references it) and the memory
 * overwritten before A reads the answer, and A gets the bytes as they
 * were when B built it. (Zero-copy answers hold the memory until A frees
 * them: test_host_mr.) */
static void
test_read_inline_copy_owns_bytes(void **state)
{
	uint8_t *remote = host_alloc(4096), want[200];
	const uint32_t len = sizeof(want);
	struct release rel = { 0 };
	struct srnic_mr *rmr;
	const struct ibv_wc *wc;
	uint32_t spins;
	int64_t resp0 = host_eng_stat(D.eng[1], "resp_read_pkts");

	RTE_SET_USED(state);
	assert_non_null(remote);
	host_duo_connect(&D, &T.a, &T.b, 64, IBV_MTU_4096);
	srnic_test_fill(remote, 4096, 24);
	memcpy(want, remote, len);
	memset(T.buf[0], 0, len + 8);
	rmr = srnic_reg_mr_cb(D.pd[1], remote, 4096, IBV_ACCESS_REMOTE_READ, on_release, &rel);
	assert_non_null(rmr);
	assert_int_equal(host_post(&T.a, IBV_WR_RDMA_READ, 0x300, T.buf[0], len,
				   srnic_mr_lkey(T.mr[0]), (uintptr_t)remote, srnic_mr_rkey(rmr),
				   IBV_SEND_SIGNALED), 0);
	srnic_engine_poll(D.eng[0]);
	assert_int_equal(rte_ring_count(D.ab), 1);
	for (spins = 0; host_eng_stat(D.eng[1], "resp_read_pkts") - resp0 < 1; spins++) {
		assert_true(spins < 1000);
		srnic_engine_poll(D.eng[1]);
	}
	assert_int_equal(rte_ring_count(D.ba), 1);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	assert_int_equal(rel.count, 1);
	memset(remote, 0xee, 4096);
	wc = host_wait_wc(&T.a, 1);
	assert_int_equal(wc->status, IBV_WC_SUCCESS);
	assert_int_equal(wc->byte_len, len);
	assert_memory_equal(T.buf[0], want, len);
	host_settle();
	assert_int_equal(rel.count, 1);
	rte_free(remote);
}

/* The limit: one byte over SRNIC_MAX_READ_INLINE is refused at creation. */
static void
test_read_inline_limit(void **state)
{
	struct srnic_dev_conf dc;
	uint16_t p[2];

	RTE_SET_USED(state);
	assert_int_equal(srnic_link_ring_pair("rlim", 1, HOST_RING_SIZE, &p[0], &p[1]), 0);
	memset(&dc, 0, sizeof(dc));
	dc.port_id = p[0];
	dc.nb_engines = 1;
	dc.ip_ver = 4;
	dc.ip[0] = 127;
	dc.ip[3] = 9;
	dc.nb_mbufs = HOST_NB_MBUFS;
	dc.name = "rlim";
	dc.comp_mask = SRNIC_DEV_CONF_READ_INLINE_MAX;
	dc.read_inline_max = SRNIC_MAX_READ_INLINE + 1;
	assert_null(srnic_dev_create(&dc));
	assert_int_equal(rte_errno, EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_read_inline_sizes, teardown),
		cmocka_unit_test_teardown(test_read_inline_multi_packet, teardown),
		cmocka_unit_test_teardown(test_read_inline_copy_owns_bytes, teardown),
		cmocka_unit_test(test_read_inline_limit),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
