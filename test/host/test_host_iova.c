/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IOVA of zero-copy segments (issue 12, item 17). A NIC DMAs a segment
 * from its buf_iova, so every attached piece must carry the IOVA of the
 * bytes it covers, which iova(start) + offset is not when the region's
 * pages are not IOVA-contiguous (IOVA-PA mode: rte_malloc memory over
 * scattered physical pages). Here the memsegs are the test's own: four
 * pages registered with rte_extmem_register() at scattered IOVAs (pages 1
 * and 2 adjacent, 0 and 3 elsewhere), then an MR over them.
 *
 * A WRITE of 4 pages - 100 bytes at PMTU 4096 from there: 4 packets, each
 * crossing one page boundary, two of them discontinuous. Every segment
 * the PMD is handed over that memory must have buf_iova + data_off equal
 * to the IOVA of its first byte and lie within one IOVA-contiguous run
 * (the two discontinuous pieces split: tx_iova_split 2); the bytes land
 * at the peer (the ring copies by VA). The same for READ responses from
 * such memory on the responder.
 */
#include <string.h>
#include <sys/mman.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_memory.h>

#include "host_util.h"
#include "test_eal.h"

#define IOVA_PG 4096
#define IOVA_NPG 4
#define IOVA_LEN (IOVA_PG * IOVA_NPG)
#define IOVA_OFF 100                /* every packet crosses a page boundary */

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x1a, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x1b, 0x02 } },
};
/* pages 1 and 2 follow each other; 0 -> 1 and 2 -> 3 are jumps */
static const rte_iova_t pg_iova[IOVA_NPG] = {
	0x100000000ull, 0x200000000ull, 0x200001000ull, 0x300000000ull,
};

static struct host_duo D;

/* What the PMD of one side was handed over the scattered pages. */
struct iova_tx {
	uint8_t *base;              /* the side's scattered pages */
	uint32_t segs;              /* segments over them */
	uint32_t bad_iova;          /* buf_iova + data_off not the first byte's IOVA */
	uint32_t crossing;          /* a segment over an IOVA discontinuity */
};

static struct iova_tx itx[2];

static rte_iova_t
expect_iova(const uint8_t *base, uintptr_t va)
{
	uintptr_t off = va - (uintptr_t)base;

	return pg_iova[off / IOVA_PG] + off % IOVA_PG;
}

static uint16_t
tx_cb(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct iova_tx *t = arg;
	uint16_t i;

	RTE_SET_USED(port);
	RTE_SET_USED(queue);
	for (i = 0; i < n; i++) {
		const struct rte_mbuf *s;

		for (s = pkts[i]; s != NULL; s = s->next) {
			uintptr_t va = (uintptr_t)s->buf_addr + s->data_off;
			uintptr_t last = va + s->data_len - 1;

			if (s->data_len == 0 || va < (uintptr_t)t->base ||
			    last >= (uintptr_t)t->base + IOVA_LEN)
				continue;
			t->segs++;
			if (s->buf_iova + s->data_off != expect_iova(t->base, va))
				t->bad_iova++;
			if (expect_iova(t->base, last) - expect_iova(t->base, va) != last - va)
				t->crossing++;
		}
	}
	return n;
}

/* Four anonymous pages made DPDK memory at the scattered IOVAs. */
static uint8_t *
scattered_pages(void)
{
	void *p = mmap(NULL, IOVA_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	assert_int_equal(rte_extmem_register(p, IOVA_LEN, (rte_iova_t *)(uintptr_t)pg_iova,
					     IOVA_NPG, IOVA_PG), 0);
	return p;
}

static int
group_setup(void **state)
{
	int i;

	RTE_SET_USED(state);
	if (host_eal_init("host_iova", 0, NULL) != 0)
		return -1;
	if (host_duo_setup(&D, "iova", mac, NULL) != 0)
		return -1;
	for (i = 0; i < 2; i++)
		if (rte_eth_add_tx_callback(D.port[i], 0, tx_cb, &itx[i]) == NULL)
			return -1;
	return 0;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	host_duo_teardown(&D);
	return 0;
}

static void
check_tx(const struct iova_tx *t, uint32_t min_segs)
{
	assert_int_equal(t->bad_iova, 0);
	assert_int_equal(t->crossing, 0);
	assert_true(t->segs >= min_segs);
}

static void
test_write_scattered(void **state)
{
	struct host_ep a, b;
	struct srnic_mr *lmr, *rmr;
	uint8_t *l, *r;
	int64_t split = host_eng_stat(D.eng[0], "tx_iova_split");
	struct ibv_sge s;

	RTE_SET_USED(state);
	l = scattered_pages();
	r = rte_zmalloc("iova_r", IOVA_LEN, 4096);
	assert_non_null(r);
	srnic_test_fill(l, IOVA_LEN, 17);
	host_duo_connect(&D, &a, &b, 64, IBV_MTU_4096);
	lmr = srnic_reg_mr(D.pd[0], l, IOVA_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(D.pd[1], r, IOVA_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(lmr);
	assert_non_null(rmr);
	memset(&itx, 0, sizeof(itx));
	itx[0].base = l;
	s = (struct ibv_sge){ .addr = (uintptr_t)l + IOVA_OFF, .length = IOVA_LEN - IOVA_OFF,
			      .lkey = srnic_mr_lkey(lmr) };
	assert_int_equal(srnic_test_post_send(a.qp, IBV_WR_RDMA_WRITE, 1, &s, 1,
					      (uintptr_t)r + IOVA_OFF, srnic_mr_rkey(rmr),
					      IBV_SEND_SIGNALED), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(r + IOVA_OFF, l + IOVA_OFF, IOVA_LEN - IOVA_OFF);
	/* 4 packets, 2 of them split at a jump: 6 segments */
	check_tx(&itx[0], 6);
	assert_int_equal(host_eng_stat(D.eng[0], "tx_iova_split") - split, 2);
	srnic_dereg_mr(lmr);
	srnic_dereg_mr(rmr);
	host_duo_disconnect(&a, &b);
	rte_free(r);
}

static void
test_read_resp_scattered(void **state)
{
	struct host_ep a, b;
	struct srnic_mr *lmr, *rmr;
	uint8_t *l, *r;
	int64_t split = host_eng_stat(D.eng[1], "tx_iova_split");
	struct ibv_sge s;

	RTE_SET_USED(state);
	r = scattered_pages();
	l = rte_zmalloc("iova_l", IOVA_LEN, 4096);
	assert_non_null(l);
	srnic_test_fill(r, IOVA_LEN, 23);
	host_duo_connect(&D, &a, &b, 64, IBV_MTU_4096);
	lmr = srnic_reg_mr(D.pd[0], l, IOVA_LEN, IBV_ACCESS_LOCAL_WRITE);
	rmr = srnic_reg_mr(D.pd[1], r, IOVA_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	assert_non_null(lmr);
	assert_non_null(rmr);
	memset(&itx, 0, sizeof(itx));
	itx[1].base = r;
	s = (struct ibv_sge){ .addr = (uintptr_t)l + IOVA_OFF, .length = IOVA_LEN - IOVA_OFF,
			      .lkey = srnic_mr_lkey(lmr) };
	assert_int_equal(srnic_test_post_send(a.qp, IBV_WR_RDMA_READ, 1, &s, 1,
					      (uintptr_t)r + IOVA_OFF, srnic_mr_rkey(rmr),
					      IBV_SEND_SIGNALED), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(l + IOVA_OFF, r + IOVA_OFF, IOVA_LEN - IOVA_OFF);
	check_tx(&itx[1], 6);
	assert_int_equal(host_eng_stat(D.eng[1], "tx_iova_split") - split, 2);
	srnic_dereg_mr(lmr);
	srnic_dereg_mr(rmr);
	host_duo_disconnect(&a, &b);
	rte_free(l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_scattered),
		cmocka_unit_test(test_read_resp_scattered),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
