/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ring pair, capture and pcap, end to end: two ports with two queues, frames
 * both ways on both queues, RX captured on both ports into a pcap file that
 * tshark (when installed) must read back frame for frame. And the lossy
 * link's hold: a zero-copy frame it reorders, delays or keeps for the next
 * burst arrives with the bytes that were sent, though the sender rewrote
 * its memory meanwhile; frames that pass stay zero-copy.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "srnic_link.h"
#include "srnic_lossy.h"

#define NB_QUEUES 2
#define RING_SIZE 256
#define FRAMES_PER_QUEUE 3
#define FRAMES_PER_PORT (NB_QUEUES * FRAMES_PER_QUEUE)
#define MAX_FRAMES 64
#define ETHERTYPE_TEST 0x88b5 /* IEEE local experimental */

static struct rte_mempool *pool;
static uint16_t port_a, port_b;

/* What the capture callbacks saw. Single lcore here, so no atomics. */
struct cap_log {
	struct srnic_pcap *pcap;
	unsigned int count[2][2]; /* [port A/B][RX/TX] */
	uint32_t len[MAX_FRAMES]; /* frames written to pcap, in order */
	unsigned int n;
	int write_err;
};

static int
eal_setup(void **state)
{
	char prefix[64];
	char *argv[] = {
		(char *)(uintptr_t)"test_link",
		(char *)(uintptr_t)"--no-huge",
		(char *)(uintptr_t)"--no-pci",
		(char *)(uintptr_t)"-m",
		(char *)(uintptr_t)"256",
		prefix,
		(char *)(uintptr_t)"--log-level=lib.eal:error",
	};

	(void)state;
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic_link_%d", (int)getpid());
	if (rte_eal_init(RTE_DIM(argv), argv) < 0) {
		fprintf(stderr, "rte_eal_init: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	pool = rte_pktmbuf_pool_create("link_test", 1023, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
	return pool == NULL ? -1 : 0;
}

static int
eal_teardown(void **state)
{
	(void)state;
	rte_eal_cleanup();
	return 0;
}

/* Frame seq on queue q from port index dir (0 = A, 1 = B). */
static uint32_t
frame_len(int dir, uint16_t q, int seq)
{
	return 60 + 100 * seq + 13 * q + 7 * dir;
}

static uint8_t
frame_byte(int dir, uint16_t q, int seq, uint32_t i)
{
	return (uint8_t)(dir * 97 + q * 31 + seq * 7 + i);
}

/* The last frame of each queue is two segments, to exercise the pcap walk. */
static struct rte_mbuf *
frame_make(int dir, uint16_t q, int seq)
{
	uint32_t len = frame_len(dir, q, seq);
	uint32_t first = seq == FRAMES_PER_QUEUE - 1 ? 40 : len;
	struct rte_mbuf *m, *tail;
	uint8_t *d;
	uint32_t i;

	m = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	d = (uint8_t *)rte_pktmbuf_append(m, first);
	assert_non_null(d);
	for (i = 0; i < first; i++)
		d[i] = frame_byte(dir, q, seq, i);
	if (first < len) {
		tail = rte_pktmbuf_alloc(pool);
		assert_non_null(tail);
		d = (uint8_t *)rte_pktmbuf_append(tail, len - first);
		assert_non_null(d);
		for (i = first; i < len; i++)
			d[i - first] = frame_byte(dir, q, seq, i);
		assert_int_equal(rte_pktmbuf_chain(m, tail), 0);
	}
	/* Ethernet header over the pattern: locally administered MACs. */
	d = rte_pktmbuf_mtod(m, uint8_t *);
	memset(d, 0, 12);
	d[0] = 0x02;
	d[5] = (uint8_t)(1 - dir);
	d[6] = 0x02;
	d[11] = (uint8_t)dir;
	d[12] = ETHERTYPE_TEST >> 8;
	d[13] = ETHERTYPE_TEST & 0xff;
	d[14] = (uint8_t)dir; /* where it came from, for the receiver */
	d[15] = (uint8_t)q;
	d[16] = (uint8_t)seq;
	return m;
}

static void
frame_check(const struct rte_mbuf *m, int dir, uint16_t q, int seq)
{
	uint32_t len = frame_len(dir, q, seq);
	uint8_t buf[1024];
	const uint8_t *d;
	uint32_t i;

	assert_int_equal(rte_pktmbuf_pkt_len(m), len);
	assert_int_equal(m->nb_segs, seq == FRAMES_PER_QUEUE - 1 ? 2 : 1);
	d = rte_pktmbuf_read(m, 0, len, buf);
	assert_non_null(d);
	assert_int_equal(d[12], ETHERTYPE_TEST >> 8);
	assert_int_equal(d[13], ETHERTYPE_TEST & 0xff);
	assert_int_equal(d[14], dir);
	assert_int_equal(d[15], q);
	assert_int_equal(d[16], seq);
	for (i = 17; i < len; i++)
		assert_int_equal(d[i], frame_byte(dir, q, seq, i));
}

static void
cap_cb(uint16_t port_id, int dir, const struct rte_mbuf *m, uint64_t tsc,
       void *arg)
{
	struct cap_log *log = arg;
	int side = port_id == port_a ? 0 : 1;

	log->count[side][dir == SRNIC_CAPTURE_RX ? 0 : 1]++;
	if (log->pcap == NULL)
		return;
	if (srnic_pcap_write(log->pcap, m, srnic_pcap_tsc_to_ns(log->pcap, tsc)) != 0)
		log->write_err++;
	if (log->n < MAX_FRAMES)
		log->len[log->n++] = rte_pktmbuf_pkt_len(m);
}

static void
port_setup(uint16_t port, uint16_t nb_queues)
{
	struct rte_eth_conf conf;
	struct rte_eth_link link;
	uint16_t q;

	memset(&conf, 0, sizeof(conf));
	assert_int_equal(rte_eth_dev_configure(port, nb_queues, nb_queues, &conf), 0);
	for (q = 0; q < nb_queues; q++) {
		assert_int_equal(rte_eth_rx_queue_setup(port, q, RING_SIZE,
							rte_socket_id(), NULL, pool), 0);
		assert_int_equal(rte_eth_tx_queue_setup(port, q, RING_SIZE,
							rte_socket_id(), NULL), 0);
	}
	assert_int_equal(rte_eth_dev_start(port), 0);
	assert_int_equal(rte_eth_link_get_nowait(port, &link), 0);
	assert_int_equal(link.link_status, RTE_ETH_LINK_UP);
}

/* Send FRAMES_PER_QUEUE frames from one side on every queue. */
static void
send_all(int dir)
{
	struct rte_mbuf *pkts[FRAMES_PER_QUEUE];
	uint16_t port = dir == 0 ? port_a : port_b;
	uint16_t q;
	int seq;

	for (q = 0; q < NB_QUEUES; q++) {
		for (seq = 0; seq < FRAMES_PER_QUEUE; seq++)
			pkts[seq] = frame_make(dir, q, seq);
		assert_int_equal(rte_eth_tx_burst(port, q, pkts, FRAMES_PER_QUEUE),
				 FRAMES_PER_QUEUE);
	}
}

/* Receive what dir sent, on the peer, queue by queue: same queue index. */
static void
recv_all(int dir)
{
	struct rte_mbuf *pkts[32];
	uint16_t port = dir == 0 ? port_b : port_a;
	uint16_t q, n, i;

	for (q = 0; q < NB_QUEUES; q++) {
		n = rte_eth_rx_burst(port, q, pkts, RTE_DIM(pkts));
		assert_int_equal(n, FRAMES_PER_QUEUE);
		for (i = 0; i < n; i++) {
			frame_check(pkts[i], dir, q, i);
			rte_pktmbuf_free(pkts[i]);
		}
	}
	for (q = 0; q < NB_QUEUES; q++)
		assert_int_equal(rte_eth_rx_burst(port, q, pkts, RTE_DIM(pkts)), 0);
}

static void
test_ring_pair_args(void **state)
{
	uint16_t a, b;

	(void)state;
	assert_int_equal(srnic_link_ring_pair(NULL, 1, 64, &a, &b), -EINVAL);
	assert_int_equal(srnic_link_ring_pair("", 1, 64, &a, &b), -EINVAL);
	assert_int_equal(srnic_link_ring_pair("x", 0, 64, &a, &b), -EINVAL);
	assert_int_equal(srnic_link_ring_pair("x", 17, 64, &a, &b), -EINVAL);
	assert_int_equal(srnic_link_ring_pair("x", 1, 100, &a, &b), -EINVAL);
	assert_int_equal(srnic_link_ring_pair("x", 1, 1, &a, &b), -EINVAL);
	assert_int_equal(srnic_link_ring_pair("x", 1, 64, NULL, &b), -EINVAL);
	assert_int_equal(srnic_link_ring_pair("sixteen_chars_ok", 1, 64, &a, &b), 0);
	assert_int_equal(srnic_link_ring_pair("sixteen_chars_ok!", 1, 64, &a, &b),
			 -ENAMETOOLONG);
	/* Same name again: refused, and the first pair is untouched. */
	assert_int_equal(srnic_link_ring_pair("sixteen_chars_ok", 1, 64, &a, &b),
			 -EEXIST);
	assert_true(rte_eth_dev_is_valid_port(a));
	assert_true(rte_eth_dev_is_valid_port(b));

	assert_null(srnic_capture_start(RTE_MAX_ETHPORTS, SRNIC_CAPTURE_RX, cap_cb, NULL));
	assert_int_equal(rte_errno, ENODEV);
	assert_null(srnic_capture_start(a, 0, cap_cb, NULL));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_capture_start(a, 0x4, cap_cb, NULL));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_capture_start(a, SRNIC_CAPTURE_RX, NULL, NULL));
	assert_int_equal(rte_errno, EINVAL);
	assert_int_equal(srnic_capture_stop(NULL), 0);

	assert_null(srnic_pcap_open(NULL));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_pcap_open("/nonexistent-dir/x.pcap"));
	assert_int_equal(rte_errno, ENOENT);
	assert_int_equal(srnic_pcap_close(NULL), 0);
}

/* Read a pcap file back: check the header, return the record lengths. */
static unsigned int
pcap_read_back(const char *path, uint32_t *lens, unsigned int max)
{
	uint32_t fh[6], rh[4];
	uint8_t buf[2048];
	unsigned int n = 0;
	FILE *f;

	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(fh, sizeof(fh), 1, f), 1);
	assert_int_equal(fh[0], 0xa1b23c4d);
	assert_int_equal(fh[1], 2 | (4 << 16)); /* version 2.4, host order */
	assert_int_equal(fh[4], SRNIC_PCAP_SNAPLEN);
	assert_int_equal(fh[5], 1);
	while (fread(rh, sizeof(rh), 1, f) == 1) {
		assert_true(n < max);
		assert_true(rh[1] < 1000000000u);
		assert_int_equal(rh[2], rh[3]);
		assert_true(rh[2] <= sizeof(buf));
		assert_int_equal(fread(buf, rh[2], 1, f), 1);
		lens[n++] = rh[2];
	}
	fclose(f);
	return n;
}

/* Frame lengths as tshark reads them, or -1 when tshark is not installed. */
static int
tshark_lens(const char *path, uint32_t *lens, unsigned int max)
{
	const char *tshark = getenv("SRNIC_TSHARK");
	char cmd[1024], line[64];
	unsigned int n = 0;
	FILE *f;

	if (tshark == NULL || tshark[0] == '\0' || access(tshark, X_OK) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "'%s' -r '%s' -T fields -e frame.len 2>/dev/null",
		 tshark, path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		assert_true(n < max);
		lens[n++] = (uint32_t)strtoul(line, NULL, 10);
	}
	assert_int_equal(pclose(f), 0);
	return (int)n;
}

static void
test_ring_pair_traffic(void **state)
{
	struct cap_log rx_log, tx_log;
	struct srnic_capture *cap_a, *cap_b, *cap_tx;
	uint32_t lens[MAX_FRAMES];
	struct rte_mbuf *m;
	const char *dir;
	char path[512];
	unsigned int i;
	int n;

	(void)state;
	assert_int_equal(srnic_link_ring_pair("lt", NB_QUEUES, RING_SIZE, &port_a,
					      &port_b), 0);
	assert_int_not_equal(port_a, port_b);

	/* net_ring ports take the standard bring-up, with their queue count at most. */
	{
		struct rte_eth_conf conf;

		memset(&conf, 0, sizeof(conf));
		assert_true(rte_eth_dev_configure(port_a, NB_QUEUES + 1, NB_QUEUES + 1,
						  &conf) < 0);
	}
	port_setup(port_a, NB_QUEUES);
	port_setup(port_b, NB_QUEUES);

	dir = getenv("SRNIC_TEST_TMPDIR");
	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	snprintf(path, sizeof(path), "%s/test_link_%d.pcap", dir, (int)getpid());
	memset(&rx_log, 0, sizeof(rx_log));
	memset(&tx_log, 0, sizeof(tx_log));
	rx_log.pcap = srnic_pcap_open(path);
	assert_non_null(rx_log.pcap);

	cap_a = srnic_capture_start(port_a, SRNIC_CAPTURE_RX, cap_cb, &rx_log);
	assert_non_null(cap_a);
	cap_b = srnic_capture_start(port_b, SRNIC_CAPTURE_RX, cap_cb, &rx_log);
	assert_non_null(cap_b);
	cap_tx = srnic_capture_start(port_a, SRNIC_CAPTURE_TX, cap_cb, &tx_log);
	assert_non_null(cap_tx);

	send_all(0);
	send_all(1);
	/* TX capture runs inside tx_burst: counted before anyone receives. */
	assert_int_equal(tx_log.count[0][1], FRAMES_PER_PORT);
	assert_int_equal(rx_log.count[0][0] + rx_log.count[1][0], 0);
	recv_all(0);
	recv_all(1);

	/* RX on both ports: every frame exactly once. */
	assert_int_equal(rx_log.count[0][0], FRAMES_PER_PORT);
	assert_int_equal(rx_log.count[1][0], FRAMES_PER_PORT);
	assert_int_equal(rx_log.count[0][1] + rx_log.count[1][1], 0);
	assert_int_equal(tx_log.count[0][1], FRAMES_PER_PORT);
	assert_int_equal(tx_log.count[0][0] + tx_log.count[1][0] + tx_log.count[1][1], 0);
	assert_int_equal(rx_log.write_err, 0);
	assert_int_equal(rx_log.n, 2 * FRAMES_PER_PORT);

	assert_int_equal(srnic_capture_stop(cap_a), 0);
	assert_int_equal(srnic_capture_stop(cap_b), 0);
	assert_int_equal(srnic_capture_stop(cap_tx), 0);

	/* Stopped captures see nothing. */
	m = frame_make(0, 1, 0);
	assert_int_equal(rte_eth_tx_burst(port_a, 1, &m, 1), 1);
	assert_int_equal(rte_eth_rx_burst(port_b, 1, &m, 1), 1);
	rte_pktmbuf_free(m);
	assert_int_equal(rx_log.count[1][0], FRAMES_PER_PORT);
	assert_int_equal(tx_log.count[0][1], FRAMES_PER_PORT);

	assert_int_equal(srnic_pcap_close(rx_log.pcap), 0);

	n = (int)pcap_read_back(path, lens, MAX_FRAMES);
	assert_int_equal(n, rx_log.n);
	for (i = 0; i < rx_log.n; i++)
		assert_int_equal(lens[i], rx_log.len[i]);

	n = tshark_lens(path, lens, MAX_FRAMES);
	if (n < 0) {
		printf("note: tshark not found, pcap not cross-checked with tshark\n");
	} else {
		assert_int_equal(n, rx_log.n);
		for (i = 0; i < rx_log.n; i++)
			assert_int_equal(lens[i], rx_log.len[i]);
	}
	unlink(path);

	for (i = 0; i < 2; i++) {
		uint16_t port = i == 0 ? port_a : port_b;

		assert_int_equal(rte_eth_dev_stop(port), 0);
		assert_int_equal(rte_eth_dev_close(port), 0);
	}
}

/* A snap length of its own: the file header says it, records keep that
 * many bytes of longer frames (their original length noted, the bytes the
 * frame's own, across segments) and all of shorter ones; srnic_pcap_bytes()
 * is the file's size. */
static void
test_pcap_snaplen(void **state)
{
	enum { SNAP = 64, LONG_LEN = 200, SHORT_LEN = 40 };
	uint32_t fh[6], rh[4];
	uint8_t head[LONG_LEN], rec[LONG_LEN];
	struct srnic_pcap *p;
	struct rte_mbuf *m, *tail;
	char path[256];
	const char *dir;
	uint8_t *d;
	FILE *f;
	int i;

	(void)state;
	assert_null(srnic_pcap_open_snaplen("/tmp/x.pcap", 0));
	assert_int_equal(rte_errno, EINVAL);
	assert_null(srnic_pcap_open_snaplen("/tmp/x.pcap", SRNIC_PCAP_SNAPLEN + 1));
	assert_int_equal(rte_errno, EINVAL);
	assert_int_equal(srnic_pcap_bytes(NULL), 0);

	dir = getenv("SRNIC_TEST_TMPDIR");
	if (dir == NULL || dir[0] == '\0')
		dir = "/tmp";
	snprintf(path, sizeof(path), "%s/test_link_snap_%d.pcap", dir, (int)getpid());
	p = srnic_pcap_open_snaplen(path, SNAP);
	assert_non_null(p);
	assert_int_equal(srnic_pcap_bytes(p), 24);
	/* 200 bytes in two segments (30 + 170): the cut falls in the second */
	m = rte_pktmbuf_alloc(pool);
	tail = rte_pktmbuf_alloc(pool);
	assert_non_null(m);
	assert_non_null(tail);
	d = (uint8_t *)rte_pktmbuf_append(m, 30);
	for (i = 0; i < 30; i++)
		d[i] = head[i] = (uint8_t)(i * 7 + 1);
	d = (uint8_t *)rte_pktmbuf_append(tail, LONG_LEN - 30);
	for (i = 30; i < LONG_LEN; i++)
		d[i - 30] = head[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(rte_pktmbuf_chain(m, tail), 0);
	assert_int_equal(srnic_pcap_write(p, m, 1000000000ull), 0);
	assert_int_equal(srnic_pcap_bytes(p), 24 + 16 + SNAP);
	rte_pktmbuf_trim(m, LONG_LEN - SHORT_LEN); /* drops the second segment's bytes */
	assert_int_equal(srnic_pcap_write(p, m, 2000000000ull), 0);
	assert_int_equal(srnic_pcap_bytes(p), 24 + 16 + SNAP + 16 + SHORT_LEN);
	rte_pktmbuf_free(m);
	assert_int_equal(srnic_pcap_close(p), 0);

	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(fh, sizeof(fh), 1, f), 1);
	assert_int_equal(fh[4], SNAP);
	assert_int_equal(fread(rh, sizeof(rh), 1, f), 1);
	assert_int_equal(rh[2], SNAP);
	assert_int_equal(rh[3], LONG_LEN);
	assert_int_equal(fread(rec, SNAP, 1, f), 1);
	assert_memory_equal(rec, head, SNAP);
	assert_int_equal(fread(rh, sizeof(rh), 1, f), 1);
	assert_int_equal(rh[2], SHORT_LEN);
	assert_int_equal(rh[3], SHORT_LEN);
	assert_int_equal(fread(rec, SHORT_LEN, 1, f), 1);
	assert_memory_equal(rec, head, SHORT_LEN);
	assert_int_equal(fread(rh, 1, 1, f), 0); /* nothing after */
	fclose(f);
	unlink(path);
}

/* ---- the lossy link holds bytes, not references ---- */

#define ZC_FRAMES 8
#define ZC_HDR_LEN 17       /* Ethernet header, then the frame's number */
#define ZC_PAY_LEN 1000     /* the "registered memory" behind each frame */
#define ZC_WAIT_S 5         /* a delayed frame is due after 100 us; generous */

static uint8_t zc_mem[ZC_FRAMES][ZC_PAY_LEN]; /* the sender's memory */
static struct rte_mbuf_ext_shared_info zc_shinfo[ZC_FRAMES];
static unsigned int zc_freed[ZC_FRAMES];      /* the link gave the memory back */
static enum srnic_lossy_action zc_action[ZC_FRAMES];

static void
zc_free_cb(void *addr, void *opaque)
{
	(void)addr;
	zc_freed[(uintptr_t)opaque]++;
}

static uint8_t
zc_byte(unsigned int f, uint32_t i)
{
	return (uint8_t)(f * 29 + i * 3 + 1);
}

/* Frame f: a header mbuf and, chained behind it, a zero-copy segment over
 * zc_mem[f] (as the engine's TX chains registered memory). */
static struct rte_mbuf *
zc_frame(unsigned int f)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool), *e = rte_pktmbuf_alloc(pool);
	uint8_t *d;
	uint32_t i;

	assert_non_null(m);
	assert_non_null(e);
	assert_non_null(rte_pktmbuf_append(m, ZC_HDR_LEN));
	d = rte_pktmbuf_mtod(m, uint8_t *); /* as frame_make() (GCC's bounds from append are 0) */
	memset(d, 0, ZC_HDR_LEN);
	d[0] = 0x02;
	d[6] = 0x02;
	d[12] = ETHERTYPE_TEST >> 8;
	d[13] = ETHERTYPE_TEST & 0xff;
	d[16] = (uint8_t)f;
	for (i = 0; i < ZC_PAY_LEN; i++)
		zc_mem[f][i] = zc_byte(f, i);
	zc_shinfo[f].free_cb = zc_free_cb;
	zc_shinfo[f].fcb_opaque = (void *)(uintptr_t)f;
	rte_mbuf_ext_refcnt_set(&zc_shinfo[f], 1);
	rte_pktmbuf_attach_extbuf(e, zc_mem[f], rte_mem_virt2iova(zc_mem[f]), ZC_PAY_LEN,
				  &zc_shinfo[f]);
	e->data_len = ZC_PAY_LEN;
	e->pkt_len = ZC_PAY_LEN;
	assert_int_equal(rte_pktmbuf_chain(m, e), 0);
	return m;
}

static enum srnic_lossy_action
zc_filter(const struct rte_mbuf *m, void *arg)
{
	uint8_t f = *rte_pktmbuf_mtod_offset(m, const uint8_t *, 16);

	(void)arg;
	return f < ZC_FRAMES ? zc_action[f] : SRNIC_LOSSY_PASS;
}

/* The frame's number; its payload checked against what was sent. */
static unsigned int
zc_check(const struct rte_mbuf *m, bool zero_copy)
{
	uint8_t buf[ZC_HDR_LEN + ZC_PAY_LEN];
	const uint8_t *d;
	unsigned int f;
	uint32_t i;

	assert_int_equal(rte_pktmbuf_pkt_len(m), ZC_HDR_LEN + ZC_PAY_LEN);
	d = rte_pktmbuf_read(m, 0, sizeof(buf), buf);
	assert_non_null(d);
	f = d[16];
	assert_true(f < ZC_FRAMES);
	for (i = 0; i < ZC_PAY_LEN; i++)
		assert_int_equal(d[ZC_HDR_LEN + i], zc_byte(f, i));
	/* passed straight through: still the sender's memory; held: a copy */
	assert_int_equal(m->next != NULL && RTE_MBUF_HAS_EXTBUF(m->next), zero_copy);
	return f;
}

/* Receive on b until n frames came (or ZC_WAIT_S), at most max per burst. */
static unsigned int
zc_recv(uint16_t b, struct rte_mbuf **got, unsigned int n, uint16_t max)
{
	uint64_t end = rte_get_timer_cycles() + ZC_WAIT_S * rte_get_timer_hz();
	unsigned int k = 0;

	while (k < n && rte_get_timer_cycles() < end)
		k += rte_eth_rx_burst(b, 0, got + k, RTE_MIN(max, (uint16_t)(n - k)));
	return k;
}

/* A one-queue ring pair a -> b, the lossy link on b's receive side. */
static struct srnic_lossy *
lossy_pair(const char *name, const struct srnic_lossy_conf *lc, uint16_t *a, uint16_t *b)
{
	struct srnic_lossy *l;

	assert_int_equal(srnic_link_ring_pair(name, 1, RING_SIZE, a, b), 0);
	port_setup(*a, 1);
	port_setup(*b, 1);
	l = srnic_lossy_attach(*b, lc);
	assert_non_null(l);
	return l;
}

static void
lossy_pair_close(struct srnic_lossy *l, uint16_t a, uint16_t b)
{
	assert_int_equal(srnic_lossy_detach(l), 0);
	assert_int_equal(rte_eth_dev_stop(a), 0);
	assert_int_equal(rte_eth_dev_stop(b), 0);
	assert_int_equal(rte_eth_dev_close(a), 0);
	assert_int_equal(rte_eth_dev_close(b), 0);
}

static void
test_lossy_holds_bytes(void **state)
{
	struct srnic_lossy_conf lc = { .seed = 1, .filter = zc_filter, .pool = pool };
	struct rte_mbuf *tx[ZC_FRAMES], *rx[ZC_FRAMES + 4];
	struct srnic_lossy_stats st;
	struct srnic_lossy *l;
	uint16_t a, b;
	unsigned int f;

	(void)state;
	l = lossy_pair("lh", &lc, &a, &b);

	/* Reorder: frame 0 is held, comes after 1..3; meanwhile its sender
	 * rewrites the memory (an acknowledged packet's buffer reused). */
	zc_action[0] = SRNIC_LOSSY_REORDER;
	tx[0] = zc_frame(0);
	assert_int_equal(rte_eth_tx_burst(a, 0, tx, 1), 1);
	assert_int_equal(rte_eth_rx_burst(b, 0, rx, RTE_DIM(rx)), 0);
	assert_int_equal(zc_freed[0], 1); /* copied: the sender's memory is free */
	memset(zc_mem[0], 0xee, ZC_PAY_LEN);
	for (f = 1; f <= 3; f++)
		tx[f] = zc_frame(f);
	assert_int_equal(rte_eth_tx_burst(a, 0, tx + 1, 3), 3);
	assert_int_equal(zc_recv(b, rx, 4, RTE_DIM(rx)), 4);
	for (f = 0; f < 3; f++) {
		assert_int_equal(zc_check(rx[f], true), f + 1);
		rte_pktmbuf_free(rx[f]);
	}
	assert_int_equal(zc_check(rx[3], false), 0); /* after the other three, as sent */
	rte_pktmbuf_free(rx[3]);

	/* Delay: frame 4 held for the delay, its memory rewritten meanwhile. */
	zc_action[4] = SRNIC_LOSSY_DELAY;
	tx[4] = zc_frame(4);
	assert_int_equal(rte_eth_tx_burst(a, 0, tx + 4, 1), 1);
	assert_int_equal(rte_eth_rx_burst(b, 0, rx, RTE_DIM(rx)), 0);
	memset(zc_mem[4], 0xee, ZC_PAY_LEN);
	assert_int_equal(zc_recv(b, rx, 1, RTE_DIM(rx)), 1);
	assert_int_equal(zc_check(rx[0], false), 4);
	rte_pktmbuf_free(rx[0]);

	/* Duplicates in a burst of two: frame 5 and its copy fill it, frame 6
	 * waits in the link for the next burst (kept, with its bytes). */
	zc_action[5] = zc_action[6] = SRNIC_LOSSY_DUP;
	tx[5] = zc_frame(5);
	tx[6] = zc_frame(6);
	assert_int_equal(rte_eth_tx_burst(a, 0, tx + 5, 2), 2);
	assert_int_equal(rte_eth_rx_burst(b, 0, rx, 2), 2);
	memset(zc_mem[6], 0xee, ZC_PAY_LEN);
	assert_int_equal(zc_check(rx[0], true), 5);
	assert_int_equal(zc_check(rx[1], false), 5); /* the duplicate: a copy */
	assert_int_equal(zc_recv(b, rx + 2, 1, 2), 1);
	assert_int_equal(zc_check(rx[2], false), 6);
	for (f = 0; f < 3; f++)
		rte_pktmbuf_free(rx[f]);
	assert_int_equal(rte_eth_rx_burst(b, 0, rx, RTE_DIM(rx)), 0);

	srnic_lossy_get_stats(l, &st);
	assert_int_equal(st.n[SRNIC_LOSSY_PASS], 7);
	assert_int_equal(st.n[SRNIC_LOSSY_REORDER], 1);
	assert_int_equal(st.n[SRNIC_LOSSY_DELAY], 1);
	assert_int_equal(st.n[SRNIC_LOSSY_DUP], 1);    /* frame 6 had no turn to be decided */
	assert_int_equal(st.held_copies, 3);           /* frames 0, 4 and 6 */
	assert_int_equal(st.hold_nocopy, 0);
	for (f = 0; f < 7; f++)
		assert_int_equal(zc_freed[f], 1);      /* every sender's buffer given back */
	lossy_pair_close(l, a, b);
}

/* rates_first: the rates decide the first packets of a queue only; every
 * later one passes (a run's clean end). Half of the first 20 of 60 frames
 * dropped at most, the last 40 all through, in order. */
#define RF_FRAMES 60
#define RF_FIRST 20

static void
test_lossy_rates_first(void **state)
{
	struct srnic_lossy_conf lc = { .seed = 7, .drop = 0.5, .rates_first = RF_FIRST };
	struct rte_mbuf *tx[RF_FRAMES], *rx[RF_FRAMES];
	struct srnic_lossy_stats st;
	struct srnic_lossy *l;
	uint16_t a, b, n, i;

	(void)state;
	l = lossy_pair("lf", &lc, &a, &b);
	for (i = 0; i < RF_FRAMES; i++) {
		tx[i] = rte_pktmbuf_alloc(pool);
		assert_non_null(tx[i]);
		*(uint8_t *)rte_pktmbuf_append(tx[i], 64) = (uint8_t)i;
	}
	assert_int_equal(rte_eth_tx_burst(a, 0, tx, RF_FRAMES), RF_FRAMES);
	n = rte_eth_rx_burst(b, 0, rx, RF_FRAMES);
	srnic_lossy_get_stats(l, &st);
	assert_int_equal(st.n[SRNIC_LOSSY_PASS], RF_FRAMES);
	assert_true(st.n[SRNIC_LOSSY_DROP] > 0 && st.n[SRNIC_LOSSY_DROP] <= RF_FIRST);
	assert_int_equal(n, RF_FRAMES - st.n[SRNIC_LOSSY_DROP]);
	for (i = 0; i < RF_FRAMES - RF_FIRST; i++)
		assert_int_equal(*rte_pktmbuf_mtod(rx[n - (RF_FRAMES - RF_FIRST) + i], uint8_t *),
				 RF_FIRST + i);
	for (i = 0; i < n; i++)
		rte_pktmbuf_free(rx[i]);
	lossy_pair_close(l, a, b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_pair_args),
		cmocka_unit_test(test_ring_pair_traffic),
		cmocka_unit_test(test_pcap_snaplen),
		cmocka_unit_test(test_lossy_holds_bytes),
		cmocka_unit_test(test_lossy_rates_first),
	};

	return cmocka_run_group_tests_name("link", tests, eal_setup, eal_teardown);
}
