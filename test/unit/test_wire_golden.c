/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire layer against real traffic: the rdma_rxe captures in
 * SRNIC_GOLDEN_DIR (= test/data/rxe, see its README.md and SUMMARY.txt),
 * and two hand-computed IPv6 vectors (scapy's RoCE layer has no IPv6 ICRC).
 *
 * Provenance of the numbers below: frame counts from tshark
 * ("tshark -r F | wc -l", "-Y udp.dstport==4791"); the per-frame values from
 * "tshark -r F -d udp.port==4791,infiniband -T fields -e infiniband.bth.psn
 * -e infiniband.reth.va ... -e infiniband.invariant.crc" (tshark shows the
 * ICRC as the big-endian number of the 4 stored bytes); QPNs from the
 * perftest / ibv_rc_pingpong output in the .log files. This test does not
 * run tshark.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_byteorder.h>
#include <rte_mbuf.h>

#include "srnic_wire.h"
#include "test_pcap.h"
#include "wire_util.h"

static const char *golden_dir;

static void
golden_path(char *buf, size_t n, const char *file)
{
	int r = snprintf(buf, n, "%s/%s", golden_dir, file);

	assert_true(r > 0 && (size_t)r < n);
}

/* Is this frame RoCEv2 (IPv4/IPv6, UDP destination 4791)? Decided here from
 * the bytes, independently of srnic_pkt_parse(). On yes, fills lo and the
 * IP datagram end (ip_end). */
static bool
is_roce(const uint8_t *f, uint32_t len, struct wt_layout *lo, uint32_t *ip_end)
{
	const uint8_t *ip;

	if (!wt_layout_of(f, len, lo) || len < lo->bth)
		return false;
	ip = f + lo->l3;
	if (lo->ip_ver == 4) {
		if (ip[9] != 17 || (ip[0] & 0x0F) != 5)
			return false;
		*ip_end = lo->l3 + (uint32_t)wt_be(ip + 2, 2);
	} else {
		if (ip[6] != 17)
			return false;
		*ip_end = lo->l4 + (uint32_t)wt_be(ip + 4, 2);
	}
	return wt_be(f + lo->l4 + 2, 2) == 4791 && *ip_end <= len;
}

/* ---- every RoCE packet of every capture: ICRC ---- */

struct golden_file {
	const char *name;
	unsigned int frames;  /* all frames (tshark) */
	unsigned int roce;    /* RoCEv2 frames (tshark -Y udp.dstport==4791) */
};

static const struct golden_file golden_files[] = {
	{ "atomic_cas_lat.pcap", 40, 10 },
	{ "atomic_fadd_bw.pcap", 50, 10 },
	{ "atomic_fadd_lat.pcap", 41, 10 },
	{ "guest_to_dpdk0_send_noack.pcap", 36, 35 },
	{ "rdmacm_send_lat_64b.pcap", 74, 74 },
	{ "read_8k_mtu1024.pcap", 75, 45 },
	{ "read_8k_mtu4096.pcap", 44, 15 },
	{ "read_bw_8k_mtu1024.pcap", 86, 45 },
	{ "send_lat_8k_mtu1024.pcap", 119, 90 },
	{ "send_pingpong_4k_mtu1024.pcap", 61, 50 },
	{ "send_pingpong_64b.pcap", 31, 20 },
	{ "write_16k_mtu4096.pcap", 65, 25 },
	{ "write_8k_mtu1024.pcap", 84, 45 },
	{ "write_lat_2k_mtu1024.pcap", 55, 30 },
};
#define N_GOLDEN_FILES (sizeof(golden_files) / sizeof(golden_files[0]))

struct icrc_ctx {
	unsigned int roce, other, chains;
};

static int
icrc_cb(const uint8_t *f, uint32_t caplen, uint32_t origlen, void *arg)
{
	struct icrc_ctx *c = arg;
	struct wt_layout lo;
	struct srnic_pkt p;
	struct rte_mbuf *m;
	uint32_t ip_end, stored, n, splits[16], ns = 0, k, i;
	enum srnic_parse_err e;

	assert_int_equal(caplen, origlen); /* snaplen 9216: nothing was cut */
	if (!is_roce(f, caplen, &lo, &ip_end)) {
		/* ARP, TCP (perftest's exchange): not for us, and not "malformed" */
		e = wt_parse_flat(f, caplen, 0, NULL);
		assert_true(e == SRNIC_PARSE_NOT_IP || e == SRNIC_PARSE_NOT_UDP ||
			    e == SRNIC_PARSE_NOT_ROCE);
		c->other++;
		return 0;
	}
	c->roce++;
	stored = wt_le32(f + ip_end - 4);
	n = ip_end - 4 - lo.l3; /* IP header .. pad */

	/* the reference, srnic flat, srnic over one mbuf */
	assert_int_equal(wt_ref_icrc(f + lo.l3, n, lo.ip_ver), stored);
	assert_int_equal(srnic_icrc_compute_flat(f + lo.l3, n, (uint8_t)lo.ip_ver), stored);
	m = srnic_test_mbuf_from(wt_pool(), f, caplen);
	assert_non_null(m);
	assert_int_equal(srnic_icrc_compute(m, lo.l3, n, (uint8_t)lo.ip_ver), stored);
	assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
	rte_pktmbuf_free(m);

	/* over chains split at several points, including inside the masked
	 * headers, right before the ICRC and inside it */
	{
		const uint32_t pts[] = { 1, 13, 14, lo.l3 + 1, lo.l3 + 9, lo.l3 + 11, lo.l4,
					 lo.l4 + 7, lo.bth, lo.bth + 4, lo.bth + 5, lo.bth + 12,
					 (lo.bth + ip_end) / 2, ip_end - 5, ip_end - 4,
					 ip_end - 2 };

		for (k = 0; k < sizeof(pts) / sizeof(pts[0]); k++) {
			splits[0] = pts[k];
			m = srnic_test_mbuf_chain_from(wt_pool(), f, caplen, splits, 1);
			assert_non_null(m);
			assert_int_equal(m->nb_segs, 2);
			assert_int_equal(srnic_icrc_compute(m, lo.l3, n, (uint8_t)lo.ip_ver),
					 stored);
			rte_pktmbuf_free(m);
			c->chains++;
		}
	}
	/* many segments: 1, 2, 3, ... bytes, then the rest */
	for (i = 1, k = 0; ns < 16 && k + i < caplen; i++) {
		splits[ns++] = i;
		k += i;
	}
	m = srnic_test_mbuf_chain_from(wt_pool(), f, caplen, splits, ns);
	assert_non_null(m);
	assert_int_equal(srnic_icrc_compute(m, lo.l3, n, (uint8_t)lo.ip_ver), stored);
	rte_pktmbuf_free(m);
	c->chains++;
	/* parse with the headers in the first segment and the rest split
	 * twice (exact-size external buffers) */
	{
		uint32_t hdr_end = lo.bth + srnic_opcode_info(f[lo.bth])->hdr_len;
		uint32_t s2[2] = { hdr_end, (caplen - hdr_end) / 2 };

		assert_int_equal(wt_parse_segs(f, caplen, s2, 2, 0, NULL), SRNIC_PARSE_OK);
	}
	return 0;
}

static void
test_golden_icrc(void **state)
{
	unsigned int i, total_roce = 0, total_known = 0, n_files = 0;
	struct dirent *de;
	char path[4096];
	DIR *d;

	(void)state;
	/* every known capture is there, with the frame counts tshark reports */
	for (i = 0; i < N_GOLDEN_FILES; i++) {
		struct icrc_ctx c = { 0 };
		int n;

		golden_path(path, sizeof(path), golden_files[i].name);
		n = srnic_test_pcap_foreach(path, icrc_cb, &c);
		if (n < 0)
			fail_msg("%s: %s", path, strerror(-n));
		assert_int_equal(n, golden_files[i].frames);
		if (c.roce != golden_files[i].roce)
			fail_msg("%s: %u RoCE frames, tshark says %u", golden_files[i].name,
				 c.roce, golden_files[i].roce);
		assert_int_equal(c.roce + c.other, golden_files[i].frames);
		total_known += c.roce;
	}
	assert_int_equal(total_known, 504);

	/* and every *.pcap in the directory, known or new */
	d = opendir(golden_dir);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);
		struct icrc_ctx c = { 0 };
		int n;

		if (l < 5 || strcmp(de->d_name + l - 5, ".pcap") != 0)
			continue;
		golden_path(path, sizeof(path), de->d_name);
		n = srnic_test_pcap_foreach(path, icrc_cb, &c);
		if (n < 0)
			fail_msg("%s: %s", path, strerror(-n));
		total_roce += c.roce;
		n_files++;
	}
	closedir(d);
	assert_true(n_files >= N_GOLDEN_FILES);
	assert_true(total_roce > 0);
	assert_true(total_roce >= total_known);
	print_message("ICRC checked on %u RoCEv2 packets of %u captures\n", total_roce, n_files);
}

/* ---- specific frames decoded ---- */

enum { H_NONE = 0, H_RETH = 1, H_AETH = 2, H_ATM = 4, H_ATMACK = 8, H_DETH = 16 };

struct golden_frame {
	const char *file;
	unsigned int frame;       /* 1-based, as tshark numbers them */
	uint8_t opcode;
	uint32_t psn, dqpn;
	bool ackreq;
	uint8_t pad;
	uint32_t pay_len;
	uint16_t sport;
	uint8_t src_ip_last;      /* 10.77.0.x */
	unsigned int hdrs;
	uint64_t va;              /* RETH or AtomicETH */
	uint32_t rkey, dmalen;    /* RETH / AtomicETH R_Key; RETH length */
	uint64_t swap_add, compare;
	uint8_t syndrome;
	uint32_t msn;
	uint64_t orig;            /* AtomicAckETH */
	uint32_t qkey, sqpn;      /* DETH */
	uint32_t tshark_icrc;     /* infiniband.invariant.crc */
};

#define RD8K4 "read_8k_mtu4096.pcap"
#define RD8K1 "read_8k_mtu1024.pcap"
#define RDBW "read_bw_8k_mtu1024.pcap"
#define WR16K "write_16k_mtu4096.pcap"
#define WR8K "write_8k_mtu1024.pcap"
#define WRLAT "write_lat_2k_mtu1024.pcap"
#define SDLAT "send_lat_8k_mtu1024.pcap"
#define PP64 "send_pingpong_64b.pcap"
#define PP4K "send_pingpong_4k_mtu1024.pcap"
#define FADD "atomic_fadd_lat.pcap"
#define FADDBW "atomic_fadd_bw.pcap"
#define CAS "atomic_cas_lat.pcap"
#define RCM "rdmacm_send_lat_64b.pcap"
#define G2D "guest_to_dpdk0_send_noack.pcap"

static const struct golden_frame golden_frames[] = {
	/* RDMA READ 8 KiB, PMTU 4096: request reserves 2 PSNs, First + Last */
	{ RD8K4, 23, 0x0C, 6352000, 0x25, 1, 0, 0, 50521, 2, H_RETH,
	  .va = 0x000055b9c6f42000, .rkey = 0x1679, .dmalen = 8192, .tshark_icrc = 0xf4583159 },
	{ RD8K4, 24, 0x0D, 6352000, 0x25, 0, 0, 4096, 50521, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0x92e27d00 },
	{ RD8K4, 25, 0x0F, 6352001, 0x25, 0, 0, 4096, 50521, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0xc5e2d785 },
	{ RD8K4, 26, 0x0C, 6352002, 0x25, 1, 0, 0, 50521, 2, H_RETH,
	  .va = 0x000055b9c6f42000, .rkey = 0x1679, .dmalen = 8192, .tshark_icrc = 0xa03b3347 },
	/* RDMA READ 8 KiB, PMTU 1024: 8 PSNs per request, Middle without AETH */
	{ RD8K1, 23, 0x0C, 1088140, 0x27, 1, 0, 0, 50673, 2, H_RETH,
	  .va = 0x0000563f6d27a000, .rkey = 0x1854, .dmalen = 8192, .tshark_icrc = 0x6c8dd360 },
	{ RD8K1, 24, 0x0D, 1088140, 0x27, 0, 0, 1024, 50673, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0xa4f2bfb8 },
	{ RD8K1, 25, 0x0E, 1088141, 0x27, 0, 0, 1024, 50673, 3, H_NONE,
	  .tshark_icrc = 0x975e90d1 },
	{ RD8K1, 31, 0x0F, 1088147, 0x27, 0, 0, 1024, 50673, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0xc1adab70 },
	{ RD8K1, 32, 0x0C, 1088148, 0x27, 1, 0, 0, 50673, 2, H_RETH,
	  .va = 0x0000563f6d27a000, .rkey = 0x1854, .dmalen = 8192, .tshark_icrc = 0x7b49a014 },
	/* pipelined READs */
	{ RDBW, 20, 0x0C, 6495774, 0x28, 1, 0, 0, 50752, 2, H_RETH,
	  .va = 0x000055c494c00000, .rkey = 0x19fa, .dmalen = 8192, .tshark_icrc = 0x8d5d159b },
	{ RDBW, 21, 0x0C, 6495782, 0x28, 1, 0, 0, 50752, 2, H_RETH,
	  .va = 0x000055c494c00000, .rkey = 0x19fa, .dmalen = 8192, .tshark_icrc = 0x074ac98e },
	{ RDBW, 22, 0x0D, 6495774, 0x28, 0, 0, 1024, 50752, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0x967d2eb6 },
	{ RDBW, 29, 0x0F, 6495781, 0x28, 0, 0, 1024, 50752, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0xac798d37 },
	/* RDMA WRITE 16 KiB, PMTU 4096, coalesced ACK */
	{ WR16K, 20, 0x06, 15555033, 0x26, 0, 0, 4096, 50596, 2, H_RETH,
	  .va = 0x000055d8e77d4000, .rkey = 0x17f9, .dmalen = 16384, .tshark_icrc = 0xa2145c7b },
	{ WR16K, 21, 0x07, 15555034, 0x26, 0, 0, 4096, 50596, 2, H_NONE,
	  .tshark_icrc = 0xa10cd991 },
	{ WR16K, 23, 0x08, 15555036, 0x26, 1, 0, 4096, 50596, 2, H_NONE,
	  .tshark_icrc = 0x30a1295a },
	{ WR16K, 24, 0x11, 15555036, 0x26, 0, 0, 0, 50596, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0x2c92741d },
	{ WR8K, 20, 0x06, 2454582, 0x29, 0, 0, 1024, 50833, 2, H_RETH,
	  .va = 0x00005601edb3e000, .rkey = 0x1a1b, .dmalen = 8192, .tshark_icrc = 0x7f32d242 },
	{ WR8K, 27, 0x08, 2454589, 0x29, 1, 0, 1024, 50833, 2, H_NONE,
	  .tshark_icrc = 0x96395aac },
	{ WRLAT, 23, 0x06, 6183208, 0x2a, 0, 0, 1024, 50916, 3, H_RETH,
	  .va = 0x000055688ddad000, .rkey = 0x1be2, .dmalen = 2048, .tshark_icrc = 0xf8fb28b7 },
	{ WRLAT, 24, 0x08, 6183209, 0x2a, 1, 0, 1024, 50916, 3, H_NONE,
	  .tshark_icrc = 0x98cff474 },
	{ WRLAT, 25, 0x11, 6183209, 0x2a, 0, 0, 0, 50916, 2, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0x5ae4e434 },
	/* SEND */
	{ SDLAT, 23, 0x00, 530338, 0x2b, 0, 0, 1024, 51001, 2, H_NONE, .tshark_icrc = 0xf69acf6f },
	{ SDLAT, 30, 0x02, 530345, 0x2b, 1, 0, 1024, 51001, 2, H_NONE, .tshark_icrc = 0x448b626e },
	{ SDLAT, 31, 0x11, 530345, 0x2b, 0, 0, 0, 51001, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0x9d77bc7f },
	{ PP4K, 15, 0x02, 3959329, 0x2c, 1, 0, 1024, 51088, 2, H_NONE, .tshark_icrc = 0x5378d3d9 },
	{ PP4K, 16, 0x11, 3959329, 0x2c, 0, 0, 0, 51088, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0x173253d0 },
	{ PP64, 12, 0x04, 10336180, 0x2d, 1, 0, 64, 51177, 2, H_NONE, .tshark_icrc = 0x84ee0000 },
	{ PP64, 13, 0x11, 10336180, 0x2d, 0, 0, 0, 51177, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0xf47cf68b },
	{ PP64, 14, 0x04, 10757740, 0x2d, 1, 0, 64, 51177, 3, H_NONE, .tshark_icrc = 0x5495313c },
	/* atomics: AtomicETH, ATOMIC ACKNOWLEDGE = AETH + AtomicAckETH */
	{ FADD, 23, 0x14, 16531038, 0x2e, 1, 0, 0, 51268, 2, H_ATM,
	  .va = 0x0000558f2cfef000, .rkey = 0x1f1a, .swap_add = 1, .compare = 0,
	  .tshark_icrc = 0xaf669143 },
	{ FADD, 24, 0x12, 16531038, 0x2e, 0, 0, 0, 51268, 3, H_AETH | H_ATMACK,
	  .syndrome = 31, .msn = 1, .orig = 0x8c00cccf04ff63d7, .tshark_icrc = 0xc3ebdf32 },
	{ CAS, 23, 0x13, 13903470, 0x2f, 1, 0, 0, 51361, 2, H_ATM,
	  .va = 0x0000559428ffc000, .rkey = 0x2043, .swap_add = 0, .compare = 0,
	  .tshark_icrc = 0xb8c1495e },
	{ CAS, 24, 0x12, 13903470, 0x2f, 0, 0, 0, 51361, 3, H_AETH | H_ATMACK,
	  .syndrome = 31, .msn = 1, .orig = 0x183026dbf311780e, .tshark_icrc = 0xa38e49ce },
	{ FADDBW, 22, 0x14, 6086984, 0x30, 1, 0, 0, 51456, 2, H_ATM,
	  .va = 0x000055f9a1c3f080, .rkey = 0x2142, .swap_add = 1, .compare = 0,
	  .tshark_icrc = 0x31eccb1c },
	{ FADDBW, 27, 0x12, 6086984, 0x30, 0, 0, 0, 51456, 3, H_AETH | H_ATMACK,
	  .syndrome = 31, .msn = 3, .orig = 0xcc9ff2f129226143, .tshark_icrc = 0x82e596d2 },
	/* RDMA-CM: CM MADs are UD SEND ONLY to QP1 with DETH (Q_Key 0x80010000,
	 * source QP 1), 256-byte MAD; then the connection's SENDs, two of them
	 * with 2-byte payloads and pad count 2 (the only pads in the captures) */
	{ RCM, 1, 0x64, 7, 0x01, 1, 0, 256, 55410, 2, H_DETH,
	  .qkey = 0x80010000, .sqpn = 1, .tshark_icrc = 0xb694fdfc },
	{ RCM, 2, 0x64, 5, 0x01, 1, 0, 256, 55410, 3, H_DETH,
	  .qkey = 0x80010000, .sqpn = 1, .tshark_icrc = 0xecc6b747 },
	{ RCM, 4, 0x04, 6891899, 0x31, 1, 0, 16, 59092, 2, H_NONE, .tshark_icrc = 0xf4a7a7f1 },
	{ RCM, 5, 0x11, 6891899, 0x31, 0, 0, 0, 59092, 3, H_AETH,
	  .syndrome = 31, .msn = 1, .tshark_icrc = 0xc93617bc },
	{ RCM, 16, 0x04, 6891902, 0x31, 1, 2, 2, 59092, 2, H_NONE, .tshark_icrc = 0x4d59957e },
	{ RCM, 18, 0x04, 4478959, 0x31, 1, 2, 2, 59092, 3, H_NONE, .tshark_icrc = 0x0aa7e28a },
	/* to a DPDK port nobody answers: retransmissions */
	{ G2D, 2, 0x04, 6323787, 0x100, 1, 0, 64, 62208, 2, H_NONE, .tshark_icrc = 0x0cba9279 },
};
#define N_GOLDEN_FRAMES (sizeof(golden_frames) / sizeof(golden_frames[0]))

struct frame_ctx {
	const char *file;
	unsigned int idx;   /* 1-based frame number */
	unsigned int found;
};

static void
check_golden_frame(const struct golden_frame *g, const uint8_t *f, uint32_t len)
{
	const struct srnic_opcode_info *info;
	struct srnic_pkt p;
	struct rte_mbuf *m;
	const uint8_t *h;
	uint32_t icrc;

	m = srnic_test_mbuf_from(wt_pool(), f, len);
	assert_non_null(m);
	assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
	info = srnic_opcode_info(g->opcode);
	assert_int_equal(p.opcode, g->opcode);
	assert_int_equal(p.psn, g->psn);
	assert_int_equal(p.dqpn, g->dqpn);
	assert_int_equal(srnic_bth_ackreq(p.bth), g->ackreq);
	assert_int_equal(p.pad, g->pad);
	assert_int_equal(p.pay_len, g->pay_len);
	assert_int_equal(p.udp_sport, g->sport);
	assert_int_equal(p.ip_ver, 4);
	assert_int_equal(p.has_vlan, 0);
	assert_int_equal(f[p.l3_off + 15], g->src_ip_last);
	/* rxe: SE 0, MigReq 0, P_Key 0xFFFF, TVer 0, FECN/BECN 0 */
	assert_false(srnic_bth_se(p.bth));
	assert_false(srnic_bth_migreq(p.bth));
	assert_int_equal(srnic_bth_pkey(p.bth), 0xFFFF);
	assert_false(srnic_bth_fecn(p.bth));
	assert_false(srnic_bth_becn(p.bth));
	/* the extension headers the opcode has are exactly those listed */
	assert_int_equal(!!(info->mask & SRNIC_OPM_RETH), !!(g->hdrs & H_RETH));
	assert_int_equal(!!(info->mask & SRNIC_OPM_AETH), !!(g->hdrs & H_AETH));
	assert_int_equal(!!(info->mask & SRNIC_OPM_ATMETH), !!(g->hdrs & H_ATM));
	assert_int_equal(!!(info->mask & SRNIC_OPM_ATMACK), !!(g->hdrs & H_ATMACK));
	assert_int_equal(!!(info->mask & SRNIC_OPM_DETH), !!(g->hdrs & H_DETH));
	if (g->hdrs & H_RETH) {
		h = srnic_pkt_hdr(&p, SRNIC_HDR_RETH);
		assert_true(srnic_reth_va(h) == g->va);
		assert_int_equal(srnic_reth_rkey(h), g->rkey);
		assert_int_equal(srnic_reth_len(h), g->dmalen);
	}
	if (g->hdrs & H_AETH) {
		h = srnic_pkt_hdr(&p, SRNIC_HDR_AETH);
		assert_int_equal(srnic_aeth_syndrome(h), g->syndrome);
		assert_int_equal(srnic_aeth_type(h), SRNIC_AETH_ACK);
		assert_int_equal(srnic_aeth_value(h), SRNIC_AETH_CREDIT_INVALID);
		assert_int_equal(srnic_aeth_msn(h), g->msn);
	}
	if (g->hdrs & H_ATM) {
		h = srnic_pkt_hdr(&p, SRNIC_HDR_ATMETH);
		assert_true(srnic_atmeth_va(h) == g->va);
		assert_int_equal(srnic_atmeth_rkey(h), g->rkey);
		assert_true(srnic_atmeth_swap_add(h) == g->swap_add);
		assert_true(srnic_atmeth_compare(h) == g->compare);
		assert_int_equal(srnic_atmeth_va(h) & 7, 0); /* 8-byte aligned */
	}
	if (g->hdrs & H_ATMACK) {
		h = srnic_pkt_hdr(&p, SRNIC_HDR_ATMACK);
		assert_true(srnic_atmack_orig(h) == g->orig);
	}
	if (g->hdrs & H_DETH) {
		h = srnic_pkt_hdr(&p, SRNIC_HDR_DETH);
		assert_int_equal(srnic_deth_qkey(h), g->qkey);
		assert_int_equal(srnic_deth_sqpn(h), g->sqpn);
	}
	/* the stored ICRC, as tshark shows it (big-endian view of the 4 bytes) */
	icrc = srnic_icrc_compute(m, p.l3_off, p.pay_off + p.pay_len + p.pad - p.l3_off, 4);
	assert_int_equal(icrc, rte_bswap32(g->tshark_icrc));
	assert_int_equal(wt_be(f + p.pay_off + p.pay_len + p.pad, 4), g->tshark_icrc);
	rte_pktmbuf_free(m);
}

static int
frame_cb(const uint8_t *f, uint32_t caplen, uint32_t origlen, void *arg)
{
	struct frame_ctx *c = arg;
	unsigned int i;

	(void)origlen;
	c->idx++;
	for (i = 0; i < N_GOLDEN_FRAMES; i++) {
		if (strcmp(golden_frames[i].file, c->file) == 0 &&
		    golden_frames[i].frame == c->idx) {
			check_golden_frame(&golden_frames[i], f, caplen);
			c->found++;
		}
	}
	return 0;
}

static void
test_golden_frames(void **state)
{
	unsigned int i, found = 0;
	char path[4096];

	(void)state;
	for (i = 0; i < N_GOLDEN_FILES; i++) {
		struct frame_ctx c = { .file = golden_files[i].name };

		golden_path(path, sizeof(path), golden_files[i].name);
		assert_true(srnic_test_pcap_foreach(path, frame_cb, &c) > 0);
		found += c.found;
	}
	assert_int_equal(found, N_GOLDEN_FRAMES);
}

/* ---- UDP source port ---- */

/* Linux include/rdma/ib_verbs.h, transcribed: rdma_calc_flow_label() and
 * rdma_flow_label_to_udp_sport(). */
static uint16_t
ref_sport(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t v = (uint64_t)lqpn * rqpn;
	uint32_t fl, fl_low, fl_high;

	v ^= v >> 20;
	v ^= v >> 40;
	fl = (uint32_t)(v & 0xFFFFF);
	fl_low = fl & 0x03FFF;
	fl_high = fl & 0xFC000;
	fl_low ^= fl_high >> 14;
	return (uint16_t)(fl_low | 0xC000);
}

struct sport_file {
	const char *file;
	uint32_t qpn; /* local == remote QPN, from the .log */
};

/* The captures whose both sides have the same QPN (perftest without
 * RDMA-CM and ibv_rc_pingpong). Not here: rdmacm_send_lat_64b (RDMA-CM
 * sets a flow label of its own, and QP1 MADs), guest_to_dpdk0_send_noack
 * (the peer QPN is not logged). */
static const struct sport_file sport_files[] = {
	{ "atomic_cas_lat.pcap", 0x2f },
	{ "atomic_fadd_bw.pcap", 0x30 },
	{ "atomic_fadd_lat.pcap", 0x2e },
	{ "read_8k_mtu1024.pcap", 0x27 },
	{ "read_8k_mtu4096.pcap", 0x25 },
	{ "read_bw_8k_mtu1024.pcap", 0x28 },
	{ "send_lat_8k_mtu1024.pcap", 0x2b },
	{ "send_pingpong_4k_mtu1024.pcap", 0x2c },
	{ "send_pingpong_64b.pcap", 0x2d },
	{ "write_16k_mtu4096.pcap", 0x26 },
	{ "write_8k_mtu1024.pcap", 0x29 },
	{ "write_lat_2k_mtu1024.pcap", 0x2a },
};

struct sport_ctx {
	uint32_t qpn;
	unsigned int n;
};

static int
sport_cb(const uint8_t *f, uint32_t caplen, uint32_t origlen, void *arg)
{
	struct sport_ctx *c = arg;
	struct wt_layout lo;
	uint32_t ip_end;

	(void)origlen;
	if (!is_roce(f, caplen, &lo, &ip_end))
		return 0;
	assert_int_equal(wt_be(f + lo.bth + 5, 3), c->qpn);
	assert_int_equal(wt_be(f + lo.l4, 2), srnic_roce_sport(c->qpn, c->qpn));
	c->n++;
	return 0;
}

static void
test_golden_sport(void **state)
{
	unsigned int i, total = 0;
	char path[4096];
	uint32_t a, b;

	(void)state;
	/* the README example */
	assert_int_equal(srnic_roce_sport(0x25, 0x25), 50521);
	for (i = 0; i < sizeof(sport_files) / sizeof(sport_files[0]); i++) {
		struct sport_ctx c = { .qpn = sport_files[i].qpn };

		golden_path(path, sizeof(path), sport_files[i].file);
		assert_true(srnic_test_pcap_foreach(path, sport_cb, &c) > 0);
		assert_true(c.n > 0);
		total += c.n;
	}
	assert_int_equal(total, 10 + 10 + 10 + 45 + 15 + 45 + 90 + 50 + 20 + 25 + 45 + 30);
	/* against the transcribed kernel formula, symmetric, in range */
	srand(4791);
	for (i = 0; i < 100000; i++) {
		a = ((uint32_t)rand() ^ ((uint32_t)rand() << 12)) & 0xFFFFFF;
		b = i & 1 ? a : (((uint32_t)rand() ^ ((uint32_t)rand() << 12)) & 0xFFFFFF);
		assert_int_equal(srnic_roce_sport(a, b), ref_sport(a, b));
		assert_int_equal(srnic_roce_sport(a, b), srnic_roce_sport(b, a));
		assert_true(srnic_roce_sport(a, b) >= 0xC000);
	}
	assert_int_equal(srnic_roce_sport(0xFFFFFF, 0xFFFFFF), ref_sport(0xFFFFFF, 0xFFFFFF));
	assert_int_equal(srnic_roce_sport(0, 0), 0xC000);
}

/* ---- IPv6: hand-computed vectors ---- */

/*
 * scapy.contrib.roce computes the ICRC for IPv4 only ("TODO support IPv6"),
 * so these two IPv6 frames were built and their ICRC computed with Python's
 * zlib, independently of srnic, following ROCEV2.md:
 *
 *   def icrc(ip):  # ip = IPv6 header .. pad
 *       m = bytearray(ip)
 *       m[0] |= 0x0f; m[1] = m[2] = m[3] = 0xff; m[7] = 0xff  # TC, flow label, hop limit
 *       m[40+6] = m[40+7] = 0xff                               # UDP checksum
 *       m[48+4] = 0xff                                         # BTH FECN/BECN/resv6
 *       return zlib.crc32(b'\xff'*8 + bytes(m)) & 0xffffffff
 *   ... frame = eth + ip6 + udp + bth + ext + payload + pad + struct.pack('<I', icrc)
 *
 * Common: dst MAC 52:54:0a:4d:00:02, src MAC 02:00:00:77:00:10, IPv6 traffic
 * class 0x6a, flow label 0xabcde, hop limit 64, fd00:77::10 ->
 * fd00:77::1234:5678:9abc:de02, UDP 0xc123 -> 4791, UDP checksum 0.
 *
 * A: RC RDMA WRITE ONLY with IMM (0x0B), SE, pad 3, P_Key 0xffff, dest QP
 *    0x000abc, AckReq, PSN 0xfffffe; RETH VA 0x00007f0012345000 R_Key
 *    0x1234abcd length 5; ImmDt 0xdeadbeef; payload "hello". ICRC 0x81913993.
 * B: VLAN TCI 0x6123; UD SEND ONLY with IMM (0x65), pad 2, FECN set (masked
 *    by the ICRC), dest QP 1, PSN 7; DETH Q_Key 0x80010000 src QP 2; ImmDt
 *    0x01020304; payload 5a a5. ICRC 0x9cf51e06.
 */
static const uint8_t v6_a[106] = {
	0x52, 0x54, 0x0a, 0x4d, 0x00, 0x02, 0x02, 0x00, 0x00, 0x77, 0x00, 0x10,
	0x86, 0xdd, 0x66, 0xaa, 0xbc, 0xde, 0x00, 0x34, 0x11, 0x40, 0xfd, 0x00,
	0x00, 0x77, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x10, 0xfd, 0x00, 0x00, 0x77, 0x00, 0x00, 0x00, 0x00, 0x12, 0x34,
	0x56, 0x78, 0x9a, 0xbc, 0xde, 0x02, 0xc1, 0x23, 0x12, 0xb7, 0x00, 0x34,
	0x00, 0x00, 0x0b, 0xb0, 0xff, 0xff, 0x00, 0x00, 0x0a, 0xbc, 0x80, 0xff,
	0xff, 0xfe, 0x00, 0x00, 0x7f, 0x00, 0x12, 0x34, 0x50, 0x00, 0x12, 0x34,
	0xab, 0xcd, 0x00, 0x00, 0x00, 0x05, 0xde, 0xad, 0xbe, 0xef, 0x68, 0x65,
	0x6c, 0x6c, 0x6f, 0x00, 0x00, 0x00, 0x93, 0x39, 0x91, 0x81,
};

static const uint8_t v6_b[98] = {
	0x52, 0x54, 0x0a, 0x4d, 0x00, 0x02, 0x02, 0x00, 0x00, 0x77, 0x00, 0x10,
	0x81, 0x00, 0x61, 0x23, 0x86, 0xdd, 0x66, 0xaa, 0xbc, 0xde, 0x00, 0x28,
	0x11, 0x40, 0xfd, 0x00, 0x00, 0x77, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0xfd, 0x00, 0x00, 0x77, 0x00, 0x00,
	0x00, 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0x02, 0xc1, 0x23,
	0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x65, 0x20, 0xff, 0xff, 0x80, 0x00,
	0x00, 0x01, 0x00, 0x00, 0x00, 0x07, 0x80, 0x01, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x02, 0x01, 0x02, 0x03, 0x04, 0x5a, 0xa5, 0x00, 0x00, 0x06, 0x1e,
	0xf5, 0x9c,
};

static void
check_v6_icrc(const uint8_t *f, uint32_t len, uint32_t l3, uint32_t want)
{
	struct rte_mbuf *m;
	uint32_t k, seg[1];

	assert_int_equal(wt_le32(f + len - 4), want);
	assert_int_equal(wt_ref_icrc(f + l3, len - l3 - 4, 6), want);
	assert_int_equal(srnic_icrc_compute_flat(f + l3, len - l3 - 4, 6), want);
	for (k = 0; k < len; k++) {
		seg[0] = k;
		m = srnic_test_mbuf_chain_from(wt_pool(), f, len, seg, 1);
		assert_non_null(m);
		assert_int_equal(srnic_icrc_compute(m, l3, len - l3 - 4, 6), want);
		rte_pktmbuf_free(m);
	}
}

static void
test_ipv6_vectors(void **state)
{
	struct srnic_route r;
	struct rte_mbuf *m;
	struct srnic_pkt p;
	uint8_t *bth, *d, flat[128];
	const uint8_t *h;

	(void)state;
	check_v6_icrc(v6_a, sizeof(v6_a), 14, 0x81913993);
	check_v6_icrc(v6_b, sizeof(v6_b), 18, 0x9cf51e06);

	/* A parses into what the Python script put in */
	assert_int_equal(wt_parse_flat(v6_a, sizeof(v6_a), 0, &p), SRNIC_PARSE_OK);
	assert_int_equal(p.ip_ver, 6);
	assert_int_equal(p.opcode, SRNIC_OP_RC_WRITE_ONLY_IMM);
	assert_int_equal(p.psn, 0xfffffe);
	assert_int_equal(p.dqpn, 0xabc);
	assert_int_equal(p.pad, 3);
	assert_int_equal(p.pay_len, 5);
	assert_int_equal(p.udp_sport, 0xc123);
	h = v6_a + p.bth_off;
	assert_true(srnic_bth_se(h));
	assert_true(srnic_bth_ackreq(h));
	assert_true(srnic_reth_va(h + 12) == 0x00007f0012345000ull);
	assert_int_equal(srnic_reth_rkey(h + 12), 0x1234abcd);
	assert_int_equal(srnic_reth_len(h + 12), 5);
	assert_int_equal(srnic_immdt_be(h + 28), rte_cpu_to_be_32(0xdeadbeef));
	assert_memory_equal(v6_a + p.pay_off, "hello", 5);
	/* B */
	assert_int_equal(wt_parse_flat(v6_b, sizeof(v6_b), 0, &p), SRNIC_PARSE_OK);
	assert_int_equal(p.has_vlan, 1);
	assert_int_equal(p.vlan_tci, 0x6123);
	assert_int_equal(p.opcode, SRNIC_OP_UD_SEND_ONLY_IMM);
	assert_int_equal(p.pad, 2);
	assert_int_equal(p.pay_len, 2);
	h = v6_b + p.bth_off;
	assert_true(srnic_bth_fecn(h));
	assert_int_equal(srnic_deth_qkey(h + 12), 0x80010000);
	assert_int_equal(srnic_deth_sqpn(h + 12), 2);

	/* srnic builds A and B byte for byte (the test route is the same) */
	wt_route(&r, 6, false);
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, SRNIC_OP_RC_WRITE_ONLY_IMM, 0);
	assert_non_null(bth);
	srnic_bth_set_se(bth, true);
	srnic_bth_set_dqpn(bth, 0xabc);
	srnic_bth_set_ackreq(bth, true);
	srnic_bth_set_psn(bth, 0xfffffe);
	srnic_reth_set_va(bth + 12, 0x00007f0012345000ull);
	srnic_reth_set_rkey(bth + 12, 0x1234abcd);
	srnic_reth_set_len(bth + 12, 5);
	srnic_immdt_set_be(bth + 28, rte_cpu_to_be_32(0xdeadbeef));
	d = (uint8_t *)rte_pktmbuf_append(m, 5);
	assert_non_null(d);
	memcpy(d, "hello", 5);
	assert_int_equal(srnic_pkt_finish(m, wt_pool()), 0);
	assert_int_equal(rte_pktmbuf_pkt_len(m), sizeof(v6_a));
	srnic_test_mbuf_flatten(m, flat);
	assert_memory_equal(flat, v6_a, sizeof(v6_a));
	rte_pktmbuf_free(m);

	wt_route(&r, 6, true);
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, SRNIC_OP_UD_SEND_ONLY_IMM, 0);
	assert_non_null(bth);
	srnic_bth_set_dqpn(bth, 1);
	srnic_bth_set_psn(bth, 7);
	srnic_bth_set_fecn(bth, true);
	srnic_deth_set_qkey(bth + 12, 0x80010000);
	srnic_deth_set_sqpn(bth + 12, 2);
	srnic_immdt_set_be(bth + 20, rte_cpu_to_be_32(0x01020304));
	d = (uint8_t *)rte_pktmbuf_append(m, 2);
	assert_non_null(d);
	d[0] = 0x5a;
	d[1] = 0xa5;
	assert_int_equal(srnic_pkt_finish(m, wt_pool()), 0);
	assert_int_equal(rte_pktmbuf_pkt_len(m), sizeof(v6_b));
	srnic_test_mbuf_flatten(m, flat);
	assert_memory_equal(flat, v6_b, sizeof(v6_b));
	rte_pktmbuf_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_icrc),
		cmocka_unit_test(test_golden_frames),
		cmocka_unit_test(test_golden_sport),
		cmocka_unit_test(test_ipv6_vectors),
	};

	golden_dir = getenv("SRNIC_GOLDEN_DIR");
	if (golden_dir == NULL || golden_dir[0] == '\0') {
		fprintf(stderr, "SRNIC_GOLDEN_DIR is not set (the meson test sets it)\n");
		return 1;
	}
	wt_eal_init("wire_golden");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
