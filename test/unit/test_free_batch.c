/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receive burst's free batch (lib/engine/eng_internal.h) and the
 * external buffers of zero-copy READ responses: the segments attached to a
 * responder's MR are released one reference update per burst and buffer,
 * at the flush, not one per segment as each is added (the count's line is
 * the responder's lcore's too). Checked on the count itself: unchanged
 * while packets are added, down by all of them after the flush; the free
 * callback once, when the last reference goes; the mbufs back in their
 * pools detached (their own empty buffer, no flags); a segment still
 * shared and a pinned pool's keep rte_pktmbuf_free()'s way.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "eng_internal.h"
#include "step_eal.h"

#define NB_MBUF 256
#define PKTS 24     /* a burst's worth of READ responses */

static struct rte_mempool *hdr_pool, *ext_pool;
static uint8_t mr_mem[PKTS * 64];
static struct rte_mbuf_ext_shared_info shinfo, shinfo2;
static unsigned int frees;
static void *freed_opaque, *freed_addr;

static void
ext_free(void *addr, void *opaque)
{
	frees++;
	freed_addr = addr;
	freed_opaque = opaque;
}

/* A READ response as the responder sends it: a header mbuf and 64 bytes of
 * the MR attached behind it. */
static struct rte_mbuf *
response(unsigned int i, struct rte_mbuf_ext_shared_info *si)
{
	struct rte_mbuf *h = rte_pktmbuf_alloc(hdr_pool);
	struct rte_mbuf *e = rte_pktmbuf_alloc(ext_pool);

	assert_non_null(h);
	assert_non_null(e);
	assert_non_null(rte_pktmbuf_append(h, 58));
	rte_pktmbuf_attach_extbuf(e, mr_mem + 64 * i, 0, 64, si);
	e->data_len = 64;
	e->pkt_len = 64;
	assert_int_equal(rte_pktmbuf_chain(h, e), 0);
	return h;
}

static void
setup_shinfo(struct rte_mbuf_ext_shared_info *si, uint16_t refs)
{
	si->free_cb = ext_free;
	si->fcb_opaque = si;
	rte_mbuf_ext_refcnt_set(si, refs);
}

static void
check_pools_full(void)
{
	assert_int_equal(rte_mempool_avail_count(hdr_pool), NB_MBUF);
	assert_int_equal(rte_mempool_avail_count(ext_pool), NB_MBUF);
}

/* one update per burst and buffer; the MR's own reference keeps it */
static void
test_one_update_per_burst(void **state)
{
	struct rte_mbuf *pkts[PKTS];
	struct eng_free_batch fb;
	unsigned int i;

	(void)state;
	frees = 0;
	setup_shinfo(&shinfo, 1 + PKTS);
	setup_shinfo(&shinfo2, 1 + PKTS);
	for (i = 0; i < PKTS; i++)
		pkts[i] = response(i, i % 3 == 2 ? &shinfo2 : &shinfo);
	fb.nb_pools = 0;
	fb.nb_ext = 0;
	for (i = 0; i < PKTS; i++) {
		eng_free_batch_add(&fb, pkts[i]);
		/* nothing written on the buffer's line per packet */
		assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 1 + PKTS);
		assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo2), 1 + PKTS);
	}
	eng_free_batch_flush(&fb);
	assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 1 + PKTS - 2 * PKTS / 3);
	assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo2), 1 + PKTS - PKTS / 3);
	assert_int_equal(frees, 0);
	check_pools_full();

	/* the mbufs came back detached: a fresh one is direct, on its own
	 * (empty) buffer */
	for (i = 0; i < 8; i++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(ext_pool);

		assert_non_null(m);
		assert_true(RTE_MBUF_DIRECT(m));
		assert_ptr_equal(m->buf_addr, (char *)m + sizeof(*m) + rte_pktmbuf_priv_size(ext_pool));
		assert_int_equal(m->buf_len, rte_pktmbuf_data_room_size(ext_pool));
		assert_int_equal(m->data_len, 0);
		pkts[i] = m;
	}
	rte_pktmbuf_free_bulk(pkts, 8);
	check_pools_full();
}

/* the last references go in the flush: the free callback once */
static void
test_last_reference_frees(void **state)
{
	struct rte_mbuf *pkts[PKTS];
	struct eng_free_batch fb;
	unsigned int i;

	(void)state;
	frees = 0;
	setup_shinfo(&shinfo, PKTS);
	for (i = 0; i < PKTS; i++)
		pkts[i] = response(i, &shinfo);
	fb.nb_pools = 0;
	fb.nb_ext = 0;
	for (i = 0; i < PKTS; i++)
		eng_free_batch_add(&fb, pkts[i]);
	assert_int_equal(frees, 0);
	eng_free_batch_flush(&fb);
	assert_int_equal(frees, 1);
	assert_ptr_equal(freed_opaque, &shinfo);
	assert_ptr_equal(freed_addr, mr_mem + 64 * (PKTS - 1));
	assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 0);
	check_pools_full();
}

/* more buffers than the batch tracks: each still dropped exactly */
static void
test_many_buffers(void **state)
{
	static struct rte_mbuf_ext_shared_info si[PKTS];
	struct rte_mbuf *pkts[PKTS];
	struct eng_free_batch fb;
	unsigned int i;

	(void)state;
	frees = 0;
	for (i = 0; i < PKTS; i++) {
		setup_shinfo(&si[i], 2);
		pkts[i] = response(i, &si[i]);
	}
	fb.nb_pools = 0;
	fb.nb_ext = 0;
	for (i = 0; i < PKTS; i++)
		eng_free_batch_add(&fb, pkts[i]);
	eng_free_batch_flush(&fb);
	for (i = 0; i < PKTS; i++)
		assert_int_equal(rte_mbuf_ext_refcnt_read(&si[i]), 1);
	assert_int_equal(frees, 0);
	check_pools_full();
}

/* a segment someone else still holds (a capture's clone): only its own
 * reference drops, the buffer's stays until the last holder frees it */
static void
test_shared_segment(void **state)
{
	struct rte_mbuf *m, *e;
	struct eng_free_batch fb;

	(void)state;
	frees = 0;
	setup_shinfo(&shinfo, 2);
	m = response(0, &shinfo);
	e = m->next;
	rte_mbuf_refcnt_update(e, 1);
	fb.nb_pools = 0;
	fb.nb_ext = 0;
	eng_free_batch_add(&fb, m);
	eng_free_batch_flush(&fb);
	assert_int_equal(rte_mbuf_refcnt_read(e), 1);
	assert_true(RTE_MBUF_HAS_EXTBUF(e));
	assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 2);
	rte_pktmbuf_free(e);
	assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 1);
	assert_int_equal(frees, 0);
	check_pools_full();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_update_per_burst),
		cmocka_unit_test(test_last_reference_frees),
		cmocka_unit_test(test_many_buffers),
		cmocka_unit_test(test_shared_segment),
	};

	if (step_eal_init("free_batch") != 0)
		return 1;
	hdr_pool = rte_pktmbuf_pool_create("fb_hdr", NB_MBUF, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
					   SOCKET_ID_ANY);
	/* as the device's zero-copy pool: no data room */
	ext_pool = rte_pktmbuf_pool_create("fb_ext", NB_MBUF, 0, 0, 0, SOCKET_ID_ANY);
	if (hdr_pool == NULL || ext_pool == NULL)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
