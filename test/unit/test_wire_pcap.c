/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The test helpers themselves (test/common/test_pcap.c): the pcap reader in
 * both byte orders and both timestamp resolutions, its error cases, the
 * writer, and the mbuf builders (single segment, chains, external buffers).
 * The pcap files here are written byte by byte from the format description
 * (https://wiki.wireshark.org/Development/LibpcapFileFormat), not by the
 * writer under test.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "test_pcap.h"
#include "wire_util.h"

struct rec {
	uint32_t caplen, origlen;
	uint8_t fill;
};

static void
put32(uint8_t *p, uint32_t v, bool be)
{
	unsigned int i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t)(be ? v >> (24 - 8 * i) : v >> (8 * i));
}

static void
put16(uint8_t *p, uint16_t v, bool be)
{
	p[be ? 0 : 1] = (uint8_t)(v >> 8);
	p[be ? 1 : 0] = (uint8_t)v;
}

/* Write a classic pcap file by hand. magic: 0xa1b2c3d4 or 0xa1b23c4d,
 * stored in the byte order be says. Returns the path (static buffer). */
static const char *
write_pcap(const char *tag, uint32_t magic, bool be, uint32_t linktype, const struct rec *r,
	   unsigned int n, uint32_t cut)
{
	static char path[256];
	uint8_t hdr[24], rh[16], buf[2048];
	unsigned int i;
	long sz;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/srnic_pcaptest_%s_%d.pcap", tag, (int)getpid());
	f = fopen(path, "wb");
	assert_non_null(f);
	put32(hdr, magic, be);
	put16(hdr + 4, 2, be);
	put16(hdr + 6, 4, be);
	put32(hdr + 8, 0, be);
	put32(hdr + 12, 0, be);
	put32(hdr + 16, 65535, be);
	put32(hdr + 20, linktype, be);
	assert_int_equal(fwrite(hdr, 1, 24, f), 24);
	for (i = 0; i < n; i++) {
		put32(rh, 1700000000u + i, be);
		put32(rh + 4, magic == 0xa1b23c4du ? 999999999u : 999999u, be);
		put32(rh + 8, r[i].caplen, be);
		put32(rh + 12, r[i].origlen, be);
		assert_int_equal(fwrite(rh, 1, 16, f), 16);
		assert_true(r[i].caplen <= sizeof(buf));
		memset(buf, r[i].fill, r[i].caplen);
		buf[0] = (uint8_t)i;
		assert_int_equal(fwrite(buf, 1, r[i].caplen, f), r[i].caplen);
	}
	assert_int_equal(fclose(f), 0);
	if (cut > 0) {
		/* chop the last cut bytes off */
		f = fopen(path, "rb");
		assert_non_null(f);
		assert_int_equal(fseek(f, 0, SEEK_END), 0);
		sz = ftell(f);
		fclose(f);
		assert_int_equal(truncate(path, sz - (long)cut), 0);
	}
	return path;
}

struct rd_ctx {
	const struct rec *r;
	unsigned int n, seen;
	int stop_after, ret;
};

static int
rd_cb(const uint8_t *frame, uint32_t caplen, uint32_t origlen, void *arg)
{
	struct rd_ctx *c = arg;
	uint32_t i;

	assert_true(c->seen < c->n);
	assert_int_equal(caplen, c->r[c->seen].caplen);
	assert_int_equal(origlen, c->r[c->seen].origlen);
	if (caplen > 0)
		assert_int_equal(frame[0], (uint8_t)c->seen);
	for (i = 1; i < caplen; i++)
		assert_int_equal(frame[i], c->r[c->seen].fill);
	c->seen++;
	if (c->stop_after > 0 && (int)c->seen == c->stop_after)
		return c->ret;
	return 0;
}

static const struct rec recs[] = {
	{ 60, 60, 0x11 },
	{ 1514, 1514, 0x22 },
	{ 0, 0, 0 },
	{ 100, 4000, 0x33 },   /* snapped: caplen < origlen */
	{ 1, 1, 0 },
};
#define N_RECS (sizeof(recs) / sizeof(recs[0]))

static void
test_pcap_read_formats(void **state)
{
	static const uint32_t magics[] = { 0xa1b2c3d4u, 0xa1b23c4du };
	unsigned int mi, be;
	const char *p;

	(void)state;
	for (mi = 0; mi < 2; mi++) {
		for (be = 0; be < 2; be++) {
			struct rd_ctx c = { .r = recs, .n = N_RECS };

			p = write_pcap("fmt", magics[mi], be, 1, recs, N_RECS, 0);
			assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), (int)N_RECS);
			assert_int_equal(c.seen, N_RECS);
			unlink(p);
		}
	}
}

static void
test_pcap_read_errors(void **state)
{
	struct rd_ctx c = { .r = recs, .n = N_RECS };
	char path[256];
	const char *p;
	FILE *f;

	(void)state;
	assert_int_equal(srnic_test_pcap_foreach("/nonexistent/srnic.pcap", rd_cb, &c), -ENOENT);
	/* unknown magic (pcapng's section header block) */
	p = write_pcap("magic", 0x0A0D0D0Au, false, 1, recs, 1, 0);
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), -EINVAL);
	unlink(p);
	/* empty file, and a file shorter than the global header */
	snprintf(path, sizeof(path), "/tmp/srnic_pcaptest_empty_%d.pcap", (int)getpid());
	f = fopen(path, "wb");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(srnic_test_pcap_foreach(path, rd_cb, &c), -EINVAL);
	unlink(path);
	p = write_pcap("short", 0xa1b2c3d4u, false, 1, recs, 0, 4);
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), -EINVAL);
	unlink(p);
	/* global header only: no frame */
	p = write_pcap("none", 0xa1b2c3d4u, true, 1, recs, 0, 0);
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), 0);
	unlink(p);
	/* not Ethernet (LINKTYPE_RAW) */
	p = write_pcap("raw", 0xa1b2c3d4u, false, 101, recs, 1, 0);
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), -EPROTONOSUPPORT);
	unlink(p);
	/* truncated frame data, truncated record header */
	c.seen = 0;
	p = write_pcap("cutdata", 0xa1b2c3d4u, false, 1, recs, 2, 10);
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), -EBADMSG);
	assert_int_equal(c.seen, 1);
	unlink(p);
	c.seen = 0;
	p = write_pcap("cuthdr", 0xa1b2c3d4u, false, 1, recs, 1, 60 + 8);
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), -EBADMSG);
	assert_int_equal(c.seen, 0);
	unlink(p);
	/* a record claiming more than the reader accepts */
	{
		static const struct rec huge[] = { { SRNIC_TEST_PCAP_MAX_FRAME + 1, 70000, 0 } };
		uint8_t hdr[24 + 16] = { 0 };

		snprintf(path, sizeof(path), "/tmp/srnic_pcaptest_huge_%d.pcap", (int)getpid());
		put32(hdr, 0xa1b2c3d4u, false);
		put16(hdr + 4, 2, false);
		put16(hdr + 6, 4, false);
		put32(hdr + 16, 65535, false);
		put32(hdr + 20, 1, false);
		put32(hdr + 24 + 8, huge[0].caplen, false);
		put32(hdr + 24 + 12, huge[0].origlen, false);
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(hdr, 1, sizeof(hdr), f), sizeof(hdr));
		fclose(f);
		assert_int_equal(srnic_test_pcap_foreach(path, rd_cb, &c), -EBADMSG);
		unlink(path);
	}
}

static void
test_pcap_callback_stop(void **state)
{
	struct rd_ctx c = { .r = recs, .n = N_RECS, .stop_after = 2, .ret = 1 };
	const char *p;

	(void)state;
	p = write_pcap("stop", 0xa1b2c3d4u, false, 1, recs, N_RECS, 0);
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), 2);
	assert_int_equal(c.seen, 2);
	c.seen = 0;
	c.stop_after = 3;
	c.ret = -42;
	assert_int_equal(srnic_test_pcap_foreach(p, rd_cb, &c), -42);
	assert_int_equal(c.seen, 3);
	unlink(p);
}

/* The writer: a file of single and chained mbufs, checked byte by byte
 * against the format, then read back. */
static void
test_pcap_writer(void **state)
{
	static const uint32_t segs[] = { 10, 0, 30 };
	uint8_t frame[200], file[1024];
	struct rte_mbuf *m1, *m2;
	struct rec r[2] = { { 200, 200, 0 }, { 200, 200, 0 } };
	char path[256];
	uint32_t v;
	size_t n;
	FILE *f;
	int i;

	(void)state;
	for (i = 0; i < 200; i++)
		frame[i] = (uint8_t)(i == 0 ? 0 : 0x5C);
	m1 = srnic_test_mbuf_from(wt_pool(), frame, 200);
	assert_non_null(m1);
	frame[0] = 1;
	m2 = srnic_test_mbuf_chain_from(wt_pool(), frame, 200, segs, 3);
	assert_non_null(m2);
	assert_int_equal(m2->nb_segs, 4);
	r[0].fill = r[1].fill = 0x5C;
	snprintf(path, sizeof(path), "/tmp/srnic_pcaptest_w_%d.pcap", (int)getpid());
	f = srnic_test_pcap_create(path);
	assert_non_null(f);
	assert_int_equal(srnic_test_pcap_write(f, m1), 0);
	assert_int_equal(srnic_test_pcap_write(f, m2), 0);
	assert_int_equal(fclose(f), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(file, 1, sizeof(file), f);
	fclose(f);
	assert_int_equal(n, 24 + 2 * (16 + 200));
	memcpy(&v, file, 4);
	assert_int_equal(v, 0xa1b2c3d4u);     /* native order, microseconds */
	memcpy(&v, file + 20, 4);
	assert_int_equal(v, 1);               /* Ethernet */
	memcpy(&v, file + 24 + 8, 4);
	assert_int_equal(v, 200);
	memcpy(&v, file + 24 + 12, 4);
	assert_int_equal(v, 200);
	assert_memory_equal(file + 24 + 16 + 1, frame + 1, 199);
	{
		struct rd_ctx c = { .r = r, .n = 2 };

		assert_int_equal(srnic_test_pcap_foreach(path, rd_cb, &c), 2);
	}
	/* unwritable place */
	assert_null(srnic_test_pcap_create("/nonexistent/dir/x.pcap"));
	unlink(path);
	rte_pktmbuf_free(m1);
	rte_pktmbuf_free(m2);
}

static void
test_mbuf_builders(void **state)
{
	static uint8_t ext_buf[300];
	struct rte_mbuf_ext_shared_info shinfo;
	uint8_t frame[300], out[300];
	struct rte_mbuf *m, *s;
	uint32_t segs[4];
	int i;

	(void)state;
	for (i = 0; i < 300; i++)
		frame[i] = (uint8_t)(i * 3 + 1);
	/* one segment */
	m = srnic_test_mbuf_from(wt_pool(), frame, 300);
	assert_non_null(m);
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(rte_pktmbuf_pkt_len(m), 300);
	assert_memory_equal(rte_pktmbuf_mtod(m, uint8_t *), frame, 300);
	rte_pktmbuf_free(m);
	/* too large for one mbuf of the pool */
	{
		uint8_t *big = calloc(1, 65536);

		assert_non_null(big);
		assert_null(srnic_test_mbuf_from(wt_pool(), big, 65536));
		assert_null(srnic_test_mbuf_from(wt_pool(), big, 20000));
		free(big);
	}
	/* chains: given lengths, empty segments, the rest in a last one */
	segs[0] = 1;
	segs[1] = 0;
	segs[2] = 99;
	m = srnic_test_mbuf_chain_from(wt_pool(), frame, 300, segs, 3);
	assert_non_null(m);
	assert_int_equal(m->nb_segs, 4);
	assert_int_equal(rte_pktmbuf_pkt_len(m), 300);
	for (s = m, i = 0; s != NULL; s = s->next, i++)
		assert_int_equal(s->data_len, i < 3 ? segs[i] : 200);
	memset(out, 0, sizeof(out));
	srnic_test_mbuf_flatten(m, out);
	assert_memory_equal(out, frame, 300);
	rte_pktmbuf_free(m);
	/* lengths adding up exactly: no extra segment */
	segs[0] = 100;
	segs[1] = 200;
	m = srnic_test_mbuf_chain_from(wt_pool(), frame, 300, segs, 2);
	assert_non_null(m);
	assert_int_equal(m->nb_segs, 2);
	rte_pktmbuf_free(m);
	/* lengths adding up to more than the frame */
	segs[1] = 201;
	assert_null(srnic_test_mbuf_chain_from(wt_pool(), frame, 300, segs, 2));
	/* no lengths: one segment */
	m = srnic_test_mbuf_chain_from(wt_pool(), frame, 300, NULL, 0);
	assert_non_null(m);
	assert_int_equal(m->nb_segs, 1);
	rte_pktmbuf_free(m);
	/* external buffer: not copied, not freed with the mbuf */
	srnic_test_ext_shinfo_init(&shinfo);
	memcpy(ext_buf, frame, 300);
	m = srnic_test_mbuf_ext(wt_pool(), ext_buf, 300, &shinfo);
	assert_non_null(m);
	assert_false(RTE_MBUF_DIRECT(m));
	assert_true(RTE_MBUF_HAS_EXTBUF(m));
	assert_ptr_equal(rte_pktmbuf_mtod(m, uint8_t *), ext_buf);
	assert_int_equal(rte_pktmbuf_pkt_len(m), 300);
	assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 2);
	rte_pktmbuf_free(m);
	assert_int_equal(rte_mbuf_ext_refcnt_read(&shinfo), 1);
	assert_memory_equal(ext_buf, frame, 300);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pcap_read_formats),
		cmocka_unit_test(test_pcap_read_errors),
		cmocka_unit_test(test_pcap_callback_stop),
		cmocka_unit_test(test_pcap_writer),
		cmocka_unit_test(test_mbuf_builders),
	};

	wt_eal_init("wire_pcap");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
