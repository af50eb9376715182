/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * IOVA of zero-copy segments. A NIC DMAs a segment
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
 *
 * Application memory: an MR over malloc or mmap memory
 * is made DPDK's and DMA-mapped page-rounded and reference-counted, so
 * every segment handed to the PMD over it lies in memory DPDK knows (a
 * memseg list: what rte_dev_dma_map() mapped for the device) and carries
 * its VA as IOVA: an unaligned malloc buffer (it was never registered), an
 * MR whose overlapping twin was deregistered first (the twin's dereg
 * removed the shared mapping), and, once DPDK's memseg lists are all
 * taken, an MR whose sends are copied and counted (tx_unmapped_copy)
 * rather than attached unmapped.
 */
#include <errno.h>
#include <stdlib.h>
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

/* What A's PMD was handed over one application buffer. */
struct app_tx {
	uint8_t *base;              /* the buffer (NULL: not watching) */
	size_t len;
	uint32_t segs;              /* segments over it */
	uint32_t unknown;           /* ... not in DPDK memory (unmapped) */
	uint32_t bad_iova;          /* ... whose IOVA is not the VA */
};

static struct app_tx atx;

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

static uint16_t
app_tx_cb(uint16_t port, uint16_t queue, struct rte_mbuf **pkts, uint16_t n, void *arg)
{
	struct app_tx *t = arg;
	uint16_t i;

	RTE_SET_USED(port);
	RTE_SET_USED(queue);
	for (i = 0; t->base != NULL && i < n; i++) {
		const struct rte_mbuf *s;

		for (s = pkts[i]; s != NULL; s = s->next) {
			uint8_t *va = (uint8_t *)s->buf_addr + s->data_off;

			if (s->data_len == 0 || va + s->data_len <= t->base || va >= t->base + t->len)
				continue;
			t->segs++;
			if (rte_mem_virt2memseg_list(va) == NULL ||
			    rte_mem_virt2memseg_list(va + s->data_len - 1) == NULL)
				t->unknown++;
			if (s->buf_iova + s->data_off != (rte_iova_t)(uintptr_t)va)
				t->bad_iova++;
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
	if (rte_eth_add_tx_callback(D.port[0], 0, app_tx_cb, &atx) == NULL)
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

#define APP_LEN (3 * IOVA_PG + 300)  /* 13 packets at PMTU 1024 */
#define APP_PKTS ((APP_LEN + 1023) / 1024)
#define APP_OFF 40                    /* not page-aligned */

/* A WRITE of len bytes from l (lkey of lmr) on a fresh connection, to an
 * rte_malloc buffer of B's; A's segments over [l, l + len) counted in atx.
 * Returns A's tx_unmapped_copy growth. */
static int64_t
app_write(struct srnic_mr *lmr, uint8_t *l, uint32_t len)
{
	int64_t copies = host_eng_stat(D.eng[0], "tx_unmapped_copy");
	struct srnic_mr *rmr;
	struct host_ep a, b;
	struct ibv_sge s;
	uint8_t *r;

	r = rte_zmalloc("iova_app_r", len, 64);
	assert_non_null(r);
	rmr = srnic_reg_mr(D.pd[1], r, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(rmr);
	host_duo_connect(&D, &a, &b, 64, IBV_MTU_1024);
	srnic_test_fill(l, len, 29);
	memset(&atx, 0, sizeof(atx));
	atx.base = l;
	atx.len = len;
	s = (struct ibv_sge){ .addr = (uintptr_t)l, .length = len, .lkey = srnic_mr_lkey(lmr) };
	assert_int_equal(srnic_test_post_send(a.qp, IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)r,
					      srnic_mr_rkey(rmr), IBV_SEND_SIGNALED), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	atx.base = NULL;
	assert_memory_equal(r, l, len);
	host_duo_disconnect(&a, &b);
	assert_int_equal(srnic_dereg_mr(rmr), 0);
	rte_free(r);
	return host_eng_stat(D.eng[0], "tx_unmapped_copy") - copies;
}

/* Every zero-copy segment over the buffer in mapped memory, IOVA = VA. */
static void
check_mapped(uint32_t min_segs)
{
	assert_int_equal(atx.unknown, 0);
	assert_int_equal(atx.bad_iova, 0);
	assert_true(atx.segs >= min_segs);
}

/* An ordinary malloc buffer, not page-aligned: mapped page-rounded */
static void
test_app_unaligned(void **state)
{
	uint8_t *m = malloc(APP_LEN + APP_OFF);
	struct srnic_mr *mr;

	RTE_SET_USED(state);
	assert_non_null(m);
	mr = srnic_reg_mr(D.pd[0], m + APP_OFF, APP_LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(app_write(mr, m + APP_OFF, APP_LEN), 0);
	check_mapped(APP_PKTS);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	free(m);
}

/* Two MRs over the same pages: the first one's dereg leaves the second's
 * mapping in place (and so does a third MR over part of them) */
static void
test_app_overlap(void **state)
{
	uint8_t *m = mmap(NULL, 4 * IOVA_PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct srnic_mr *m1, *m2, *m3;

	RTE_SET_USED(state);
	assert_true(m != MAP_FAILED);
	m1 = srnic_reg_mr(D.pd[0], m, 4 * IOVA_PG, IBV_ACCESS_LOCAL_WRITE);
	m2 = srnic_reg_mr(D.pd[0], m, 4 * IOVA_PG, IBV_ACCESS_LOCAL_WRITE);
	m3 = srnic_reg_mr(D.pd[0], m + IOVA_PG + 8, APP_LEN - IOVA_PG, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(m1);
	assert_non_null(m2);
	assert_non_null(m3);
	assert_int_equal(srnic_dereg_mr(m1), 0);
	assert_int_equal(app_write(m2, m, APP_LEN), 0);
	check_mapped(APP_PKTS);
	assert_int_equal(srnic_dereg_mr(m2), 0);
	assert_int_equal(app_write(m3, m + IOVA_PG + 8, APP_LEN - IOVA_PG), 0);
	check_mapped(APP_PKTS - 4);
	assert_int_equal(srnic_dereg_mr(m3), 0);
	munmap(m, 4 * IOVA_PG);
}

#define FILL_MAX RTE_MAX_MEMSEG_LISTS

/* DPDK's memseg lists all taken (the test registers pages until
 * rte_extmem_register() says ENOSPC): a new MR still registers, and its
 * WRITE is copied, every piece counted, none attached; with a list free
 * again the next MR is mapped */
static void
test_app_memseg_full(void **state)
{
	static uint8_t *fill[FILL_MAX];
	uint8_t *m = malloc(APP_LEN);
	struct srnic_mr *mr;
	int n = 0, i;

	RTE_SET_USED(state);
	assert_non_null(m);
	for (;;) {
		void *p = mmap(NULL, IOVA_PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);

		assert_true(p != MAP_FAILED);
		if (rte_extmem_register(p, IOVA_PG, NULL, 0, IOVA_PG) != 0) {
			assert_int_equal(rte_errno, ENOSPC);
			munmap(p, IOVA_PG);
			break;
		}
		assert_true(n < FILL_MAX);
		fill[n++] = p;
	}
	mr = srnic_reg_mr(D.pd[0], m, APP_LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	/* 13 packets, each a piece over 128 bytes: copied, none attached */
	assert_int_equal(app_write(mr, m, APP_LEN), APP_PKTS);
	assert_int_equal(atx.segs, 0);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	rte_extmem_unregister(fill[--n], IOVA_PG);
	munmap(fill[n], IOVA_PG);
	mr = srnic_reg_mr(D.pd[0], m, APP_LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(app_write(mr, m, APP_LEN), 0);
	check_mapped(APP_PKTS);
	assert_int_equal(srnic_dereg_mr(mr), 0);
	for (i = 0; i < n; i++) {
		rte_extmem_unregister(fill[i], IOVA_PG);
		munmap(fill[i], IOVA_PG);
	}
	free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_scattered),
		cmocka_unit_test(test_read_resp_scattered),
		cmocka_unit_test(test_app_unaligned),
		cmocka_unit_test(test_app_overlap),
		cmocka_unit_test(test_app_memseg_full),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
