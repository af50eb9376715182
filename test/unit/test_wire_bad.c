/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bad input: every way a frame can be refused must give its own reason
 * (the exact enum srnic_parse_err value), and nothing may crash or read
 * past the frame. Frames are parsed from external buffers of exactly their
 * size (wt_parse_segs), so AddressSanitizer catches overreads. Each
 * mutation is applied to a valid frame whose IPv4 checksum and ICRC are
 * then recomputed with the reference code (wt_refresh), so that the one
 * intended defect is the only one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "srnic_wire.h"
#include "test_pcap.h"
#include "wire_util.h"

#define FRAME_MAX 9216

struct frame {
	uint8_t b[FRAME_MAX];
	uint32_t len;
	struct wt_layout lo;
	uint32_t hl;      /* BTH + extension headers */
	uint8_t op;
};

static struct rte_mempool *trailer_pool;

/* A valid frame built by srnic (the build test checks the builder). */
static void
make_frame(struct frame *fr, uint8_t op, int ip_ver, bool vlan, uint32_t pay_len)
{
	struct srnic_route r;
	struct rte_mbuf *m;
	uint8_t *bth, *pay;
	uint32_t i;

	wt_route(&r, ip_ver, vlan);
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, op, 0x1234);
	assert_non_null(bth);
	srnic_bth_set_psn(bth, 0xFFFFFE);
	srnic_bth_set_dqpn(bth, 0x000025);
	srnic_bth_set_ackreq(bth, true);
	if (pay_len > 0) {
		pay = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)pay_len);
		assert_non_null(pay);
		for (i = 0; i < pay_len; i++)
			pay[i] = (uint8_t)(0x30 + i);
	}
	assert_int_equal(srnic_pkt_finish(m, trailer_pool), 0);
	fr->len = rte_pktmbuf_pkt_len(m);
	assert_true(fr->len <= FRAME_MAX);
	srnic_test_mbuf_flatten(m, fr->b);
	rte_pktmbuf_free(m);
	assert_true(wt_layout_of(fr->b, fr->len, &fr->lo));
	fr->op = op;
	fr->hl = srnic_opcode_info(op)->hdr_len;
	assert_int_equal(wt_parse_flat(fr->b, fr->len, 0, NULL), SRNIC_PARSE_OK);
}

/* The frames the table runs on. */
struct base {
	uint8_t op;
	int ip_ver;
	bool vlan;
	uint32_t pay_len;
};

static const struct base bases[] = {
	{ SRNIC_OP_RC_SEND_ONLY, 4, false, 5 },
	{ SRNIC_OP_RC_SEND_ONLY, 6, true, 5 },
	{ SRNIC_OP_RC_ACK, 4, false, 0 },
	{ SRNIC_OP_RC_ACK, 6, false, 0 },
	{ SRNIC_OP_RC_READ_REQ, 4, true, 0 },
	{ SRNIC_OP_RC_WRITE_FIRST, 4, false, 64 },
	{ SRNIC_OP_RC_WRITE_ONLY_IMM, 6, false, 7 },
	{ SRNIC_OP_RC_ATOMIC_ACK, 4, false, 0 },
	{ SRNIC_OP_RC_CMP_SWAP, 6, true, 0 },
	{ SRNIC_OP_UD_SEND_ONLY_IMM, 4, false, 2 },
	{ SRNIC_OP_CNP, 4, false, 0 },
	{ SRNIC_OP_UC_SEND_FIRST, 6, false, 1024 },
};
#define N_BASES (sizeof(bases) / sizeof(bases[0]))

static void
make_base(struct frame *fr, unsigned int i)
{
	make_frame(fr, bases[i].op, bases[i].ip_ver, bases[i].vlan, bases[i].pay_len);
}

/* Rewrite the IP and UDP lengths for a frame cut (or grown) to len bytes. */
static void
set_lengths(struct frame *fr, uint32_t len)
{
	uint8_t *ip = fr->b + fr->lo.l3;

	if (fr->lo.ip_ver == 4) {
		ip[2] = (uint8_t)((len - fr->lo.l3) >> 8);
		ip[3] = (uint8_t)(len - fr->lo.l3);
	} else {
		ip[4] = (uint8_t)((len - fr->lo.l4) >> 8);
		ip[5] = (uint8_t)(len - fr->lo.l4);
	}
	if (len >= fr->lo.l4 + 6) {
		fr->b[fr->lo.l4 + 4] = (uint8_t)((len - fr->lo.l4) >> 8);
		fr->b[fr->lo.l4 + 5] = (uint8_t)(len - fr->lo.l4);
	}
	fr->len = len;
	wt_fix_ipcsum(fr->b);
}

static void
refresh(struct frame *fr)
{
	wt_refresh(fr->b, fr->len);
}

static void
expect(const struct frame *fr, unsigned int flags, enum srnic_parse_err want, const char *what)
{
	enum srnic_parse_err got = wt_parse_flat(fr->b, fr->len, flags, NULL);

	if (got != want)
		fail_msg("%s (op 0x%02x IPv%d len %u): got %s, want %s", what, fr->op,
			 fr->lo.ip_ver, fr->len, srnic_parse_err_name(got),
			 srnic_parse_err_name(want));
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* ---- truncation ---- */

/* Raw truncation at every byte: the IP header then claims more than the
 * frame holds. */
static void
test_truncate_every_byte(void **state)
{
	struct frame fr;
	unsigned int i;
	uint32_t n;

	(void)state;
	for (i = 0; i < N_BASES; i++) {
		make_base(&fr, i);
		uint32_t full = fr.len;

		for (n = 0; n < full; n++) {
			enum srnic_parse_err want;

			fr.len = n;
			if (n < fr.lo.l3)
				want = SRNIC_PARSE_TRUNC_ETH;
			else if (n < fr.lo.l4)
				want = SRNIC_PARSE_TRUNC_IP;
			else
				want = SRNIC_PARSE_IP_LEN;
			expect(&fr, 0, want, "raw truncation");
		}
		fr.len = full;
		expect(&fr, 0, SRNIC_PARSE_OK, "untruncated");
	}
}

/* Consistent truncation at every byte from the end of the IP header: the
 * IP and UDP lengths say the frame ends there, checksum and ICRC are
 * recomputed. Each header boundary gives its own reason. */
static void
test_truncate_consistent(void **state)
{
	struct frame fr, orig;
	unsigned int i;
	uint32_t b, bo;

	(void)state;
	for (i = 0; i < N_BASES; i++) {
		make_base(&orig, i);
		bo = orig.lo.bth;
		for (b = orig.lo.l4; b <= orig.len; b++) {
			enum srnic_parse_err want;
			uint32_t pad = srnic_bth_pad(orig.b + bo);

			fr = orig;
			set_lengths(&fr, b);
			if (b >= bo + SRNIC_BTH_LEN + SRNIC_ICRC_LEN)
				refresh(&fr);
			if (b < orig.lo.l4 + 8)
				want = SRNIC_PARSE_TRUNC_UDP;
			else if (b < bo + SRNIC_BTH_LEN + SRNIC_ICRC_LEN)
				want = SRNIC_PARSE_TRUNC_BTH;
			else if (b < bo + orig.hl + SRNIC_ICRC_LEN)
				want = SRNIC_PARSE_TRUNC_EXT;
			else if (pad > b - (bo + orig.hl + SRNIC_ICRC_LEN))
				want = SRNIC_PARSE_BAD_PAD;
			else
				want = SRNIC_PARSE_OK;
			expect(&fr, 0, want, "consistent truncation");
		}
	}
}

/* ---- lengths ---- */

static void
test_ip_length(void **state)
{
	struct frame fr, orig;
	unsigned int i;

	(void)state;
	for (i = 0; i < N_BASES; i++) {
		make_base(&orig, i);
		uint8_t *ip;
		uint32_t real, l3 = orig.lo.l3;
		int v4 = orig.lo.ip_ver == 4;
		/* the IPv4 total length covers the header, the IPv6 payload length not */
		uint32_t hdr = v4 ? 20 : 0;
		uint32_t lenpos = v4 ? 2 : 4;
		struct {
			uint32_t val;
			enum srnic_parse_err want;
		} cases[] = {
			{ 0, v4 ? SRNIC_PARSE_IP_LEN : SRNIC_PARSE_TRUNC_UDP },
			{ 19, v4 ? SRNIC_PARSE_IP_LEN : SRNIC_PARSE_UDP_LEN },
			{ hdr + 7, SRNIC_PARSE_TRUNC_UDP },          /* no room for UDP */
			{ hdr + 8, SRNIC_PARSE_UDP_LEN },            /* UDP says more */
			{ 0, SRNIC_PARSE_UDP_LEN },                  /* real - 1, set below */
			{ 0, SRNIC_PARSE_UDP_LEN },                  /* real - 4 */
			{ 0, SRNIC_PARSE_IP_LEN },                   /* real + 1 */
			{ 0, SRNIC_PARSE_IP_LEN },                   /* real + 100 */
			{ 0xFFFF, SRNIC_PARSE_IP_LEN },
		};
		unsigned int k;

		real = orig.len - l3 - (v4 ? 0 : 40);
		cases[4].val = real - 1;
		cases[5].val = real - 4;
		cases[6].val = real + 1;
		cases[7].val = real + 100;
		for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
			fr = orig;
			ip = fr.b + l3;
			put16(ip + lenpos, (uint16_t)cases[k].val);
			refresh(&fr);
			expect(&fr, 0, cases[k].want, "IP length");
		}
		fr = orig;
		put16(fr.b + l3 + lenpos, (uint16_t)real);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_OK, "IP length as is");
	}
}

static void
test_udp_length(void **state)
{
	static const int deltas[] = { -1, 1, -4, 4, 100 };
	struct frame fr, orig;
	unsigned int i, k;
	uint32_t real;

	(void)state;
	for (i = 0; i < N_BASES; i++) {
		make_base(&orig, i);
		real = orig.len - orig.lo.l4;
		for (k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++) {
			fr = orig;
			put16(fr.b + fr.lo.l4 + 4, (uint16_t)(real + deltas[k]));
			refresh(&fr);
			expect(&fr, 0, SRNIC_PARSE_UDP_LEN, "UDP length");
		}
		fr = orig;
		put16(fr.b + fr.lo.l4 + 4, 0);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_UDP_LEN, "UDP length 0");
		put16(fr.b + fr.lo.l4 + 4, 0xFFFF);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_UDP_LEN, "UDP length 0xFFFF");
	}
}

/* ---- BTH ---- */

static void
test_bad_pad(void **state)
{
	static const uint8_t nopay[] = { SRNIC_OP_RC_ACK, SRNIC_OP_RC_READ_REQ,
					 SRNIC_OP_RC_ATOMIC_ACK, SRNIC_OP_RC_FETCH_ADD, SRNIC_OP_CNP };
	struct frame fr;
	struct srnic_pkt p;
	unsigned int i, pad;

	(void)state;
	/* a pad count on an opcode that carries no payload */
	for (i = 0; i < sizeof(nopay); i++) {
		for (pad = 1; pad <= 3; pad++) {
			make_frame(&fr, nopay[i], 4, false, 0);
			srnic_bth_set_pad(fr.b + fr.lo.bth, (uint8_t)pad);
			refresh(&fr);
			expect(&fr, 0, SRNIC_PARSE_BAD_PAD, "pad without payload");
		}
	}
	/* a pad count larger than the payload: SEND ONLY with 0 bytes */
	for (pad = 1; pad <= 3; pad++) {
		make_frame(&fr, SRNIC_OP_RC_SEND_ONLY, 6, false, 0);
		srnic_bth_set_pad(fr.b + fr.lo.bth, (uint8_t)pad);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_BAD_PAD, "pad > payload");
		make_frame(&fr, SRNIC_OP_RC_READ_RESP_MIDDLE, 4, true, 0);
		srnic_bth_set_pad(fr.b + fr.lo.bth, (uint8_t)pad);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_BAD_PAD, "pad > payload");
	}
	/* pad == payload + pad bytes: structurally valid, payload shrinks */
	make_frame(&fr, SRNIC_OP_RC_SEND_ONLY, 4, false, 4);
	srnic_bth_set_pad(fr.b + fr.lo.bth, 3);
	refresh(&fr);
	assert_int_equal(wt_parse_flat(fr.b, fr.len, 0, &p), SRNIC_PARSE_OK);
	assert_int_equal(p.pay_len, 1);
	assert_int_equal(p.pad, 3);
}

/* Bytes after the headers of an opcode that carries no payload. */
static void
test_excess_len(void **state)
{
	static const uint8_t nopay[] = { SRNIC_OP_RC_ACK, SRNIC_OP_RC_READ_REQ,
					 SRNIC_OP_RC_ATOMIC_ACK, SRNIC_OP_RC_CMP_SWAP, SRNIC_OP_CNP };
	static const uint32_t extra[] = { 1, 3, 4, 8, 64 };
	struct frame fr;
	unsigned int i, k;
	int ipv;

	(void)state;
	for (i = 0; i < sizeof(nopay); i++) {
		for (ipv = 4; ipv <= 6; ipv += 2) {
			for (k = 0; k < sizeof(extra) / sizeof(extra[0]); k++) {
				make_frame(&fr, nopay[i], ipv, false, 0);
				/* insert before the ICRC */
				memset(fr.b + fr.len - 4, 0x5A, extra[k]);
				set_lengths(&fr, fr.len + extra[k]);
				refresh(&fr);
				expect(&fr, 0, SRNIC_PARSE_EXCESS_LEN, "bytes after an ACK");
			}
		}
	}
}

/* The opcodes ROCEV2.md defines; everything else must be refused. */
static bool
op_defined(unsigned int op)
{
	/* 0x1C FLUSH and 0x1D ATOMIC WRITE: IBTA 1.5 */
	return op <= 0x14 || op == 0x16 || op == 0x17 || op == 0x1C || op == 0x1D ||
	       (op >= 0x20 && op <= 0x2B) ||
	       op == 0x64 || op == 0x65 || op == 0x81;
}

static void
test_bad_opcode(void **state)
{
	static const uint8_t named[] = { 0x15, 0x1F, 0x3F, 0xFF };
	struct frame fr, orig;
	unsigned int op, n = 0, i;

	(void)state;
	make_frame(&orig, SRNIC_OP_RC_SEND_ONLY, 4, false, 8);
	for (i = 0; i < sizeof(named); i++)
		assert_false(op_defined(named[i]));
	for (op = 0; op < 256; op++) {
		if (op_defined(op))
			continue;
		fr = orig;
		fr.b[fr.lo.bth] = (uint8_t)op;
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_BAD_OPCODE, "unknown opcode");
		/* and before the ICRC is looked at */
		fr.b[fr.len - 1] ^= 0xFF;
		expect(&fr, 0, SRNIC_PARSE_BAD_OPCODE, "unknown opcode, bad ICRC");
		n++;
	}
	assert_int_equal(n, 256 - 40);
}

static void
test_tver(void **state)
{
	struct frame fr, orig;
	unsigned int v;

	(void)state;
	make_frame(&orig, SRNIC_OP_RC_SEND_ONLY, 6, true, 3);
	for (v = 1; v < 16; v++) {
		fr = orig;
		srnic_bth_set_tver(fr.b + fr.lo.bth, (uint8_t)v);
		assert_int_equal(fr.b[fr.lo.bth + 1] & 0x0F, v);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_TVER, "TVer");
	}
}

/* ---- ICRC ---- */

static void
test_bad_icrc(void **state)
{
	uint32_t seg1[1];
	struct frame fr, orig;
	unsigned int i, k;
	uint32_t pos;

	(void)state;
	for (i = 0; i < N_BASES; i++) {
		make_base(&orig, i);
		/* every ICRC byte, every bit */
		for (k = 0; k < 32; k++) {
			fr = orig;
			fr.b[fr.len - 4 + k / 8] ^= (uint8_t)(1u << (k % 8));
			expect(&fr, 0, SRNIC_PARSE_ICRC, "ICRC bit flipped");
			expect(&fr, SRNIC_PARSE_F_NO_ICRC, SRNIC_PARSE_OK, "ICRC not checked");
		}
		/* a bit of every byte the ICRC covers but the parser does not
		 * otherwise check: payload, pad, extension headers, BTH PSN/QP */
		for (pos = orig.lo.bth + 5; pos < orig.len - 4; pos++) {
			fr = orig;
			fr.b[pos] ^= 0x04;
			expect(&fr, 0, SRNIC_PARSE_ICRC, "covered byte flipped");
		}
		fr = orig;
		fr.b[fr.lo.bth + 8] ^= 0x80; /* AckReq */
		expect(&fr, 0, SRNIC_PARSE_ICRC, "AckReq flipped");
		fr = orig;
		fr.b[fr.lo.bth + 2] ^= 0x80; /* P_Key */
		expect(&fr, 0, SRNIC_PARSE_ICRC, "P_Key flipped");
		fr = orig;
		fr.b[fr.lo.bth + 1] ^= 0x80; /* SE */
		expect(&fr, 0, SRNIC_PARSE_ICRC, "SE flipped");
		/* IP addresses (checksum refreshed, ICRC not) */
		fr = orig;
		fr.b[fr.lo.l3 + (fr.lo.ip_ver == 4 ? 15 : 39)] ^= 0x01;
		wt_fix_ipcsum(fr.b);
		expect(&fr, 0, SRNIC_PARSE_ICRC, "IP address flipped");
		/* a payload byte flipped in a second segment */
		seg1[0] = orig.lo.bth + orig.hl;
		if (orig.len - 6 >= seg1[0]) {
			fr = orig;
			fr.b[fr.len - 6] ^= 0x40;
			assert_int_equal(wt_parse_segs(fr.b, fr.len, seg1, 1, 0, NULL),
					 SRNIC_PARSE_ICRC);
			assert_int_equal(wt_parse_segs(orig.b, orig.len, seg1, 1, 0, NULL),
					 SRNIC_PARSE_OK);
		}
	}
}

/* ---- IP ---- */

static void
test_ipv4_header(void **state)
{
	struct frame fr, orig;
	uint8_t *ip;
	unsigned int ihl;

	(void)state;
	make_frame(&orig, SRNIC_OP_RC_SEND_ONLY, 4, false, 16);
	/* options, or a header length below the minimum */
	for (ihl = 0; ihl < 16; ihl++) {
		if (ihl == 5)
			continue;
		fr = orig;
		ip = fr.b + fr.lo.l3;
		ip[0] = (uint8_t)(0x40 | ihl);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_IP_OPTIONS, "IHL != 5");
	}
	/* fragments: MF, or an offset, with or without DF */
	{
		static const uint16_t frags[] = { 0x2000, 0x6000, 0x0001, 0x4001, 0x1FFF, 0x3FFF,
						  0x0100 };
		unsigned int k;

		for (k = 0; k < sizeof(frags) / sizeof(frags[0]); k++) {
			fr = orig;
			put16(fr.b + fr.lo.l3 + 6, frags[k]);
			refresh(&fr);
			expect(&fr, 0, SRNIC_PARSE_IP_FRAGMENT, "fragment");
		}
		/* DF alone or no flag at all is not a fragment */
		fr = orig;
		put16(fr.b + fr.lo.l3 + 6, 0x0000);
		refresh(&fr);
		expect(&fr, 0, SRNIC_PARSE_OK, "no DF");
	}
	/* header checksum */
	fr = orig;
	fr.b[fr.lo.l3 + 10] ^= 0x01;
	expect(&fr, 0, SRNIC_PARSE_IP_CSUM, "bad IPv4 checksum");
	expect(&fr, SRNIC_PARSE_F_NO_IPCSUM, SRNIC_PARSE_OK, "checksum not checked");
	fr = orig;
	fr.b[fr.lo.l3 + 12] ^= 0x01; /* source address: checksum and ICRC both wrong */
	expect(&fr, 0, SRNIC_PARSE_IP_CSUM, "address changed, checksum first");
	expect(&fr, SRNIC_PARSE_F_NO_IPCSUM, SRNIC_PARSE_ICRC, "address changed, then ICRC");
	/* the RX checksum flag: GOOD skips the check, BAD does not */
	{
		struct rte_mbuf *m;
		struct srnic_pkt p;

		fr = orig;
		fr.b[fr.lo.l3 + 10] ^= 0x01;
		m = srnic_test_mbuf_from(wt_pool(), fr.b, fr.len);
		assert_non_null(m);
		m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_GOOD;
		assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
		m->ol_flags &= ~RTE_MBUF_F_RX_IP_CKSUM_MASK;
		m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_BAD;
		assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_IP_CSUM);
		m->ol_flags &= ~RTE_MBUF_F_RX_IP_CKSUM_MASK;
		m->ol_flags |= RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN;
		assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_IP_CSUM);
		rte_pktmbuf_free(m);
	}
}

static void
test_ip_version(void **state)
{
	static const uint8_t vers[] = { 0, 4, 6, 5, 15 };
	struct frame fr, orig;
	unsigned int i, k;
	int ipv;

	(void)state;
	for (ipv = 4; ipv <= 6; ipv += 2) {
		make_frame(&orig, SRNIC_OP_RC_ACK, ipv, ipv == 6, 0);
		for (k = 0; k < sizeof(vers); k++) {
			if (vers[k] == ipv)
				continue;
			fr = orig;
			i = fr.lo.l3;
			fr.b[i] = (uint8_t)((vers[k] << 4) | (fr.b[i] & 0x0F));
			refresh(&fr);
			expect(&fr, 0, SRNIC_PARSE_IP_VERSION, "IP version vs EtherType");
		}
	}
}

static void
test_not_roce(void **state)
{
	static const uint16_t etypes[] = { 0x0806, 0x8915, 0x88A8, 0x86DE, 0x0000, 0xFFFF, 0x8100 };
	static const uint8_t protos[] = { 6, 1, 0, 58, 44, 136, 255 };
	static const uint16_t ports[] = { 4790, 4792, 0, 0xB712, 0xFFFF, 53 };
	struct frame fr, orig, orig6;
	unsigned int k;

	(void)state;
	make_frame(&orig, SRNIC_OP_RC_SEND_ONLY, 4, false, 4);
	make_frame(&orig6, SRNIC_OP_RC_SEND_ONLY, 6, true, 4);
	/* EtherType, plain and behind a VLAN tag */
	for (k = 0; k < sizeof(etypes) / sizeof(etypes[0]); k++) {
		fr = orig;
		put16(fr.b + 12, etypes[k]);
		if (etypes[k] != 0x8100)
			expect(&fr, 0, SRNIC_PARSE_NOT_IP, "EtherType");
		fr = orig6;
		put16(fr.b + 16, etypes[k]);
		expect(&fr, 0, SRNIC_PARSE_NOT_IP, "EtherType after VLAN");
	}
	/* IP protocol / next header */
	for (k = 0; k < sizeof(protos); k++) {
		fr = orig;
		fr.b[fr.lo.l3 + 9] = protos[k];
		wt_fix_ipcsum(fr.b);
		expect(&fr, 0, SRNIC_PARSE_NOT_UDP, "IPv4 protocol");
		fr = orig6;
		fr.b[fr.lo.l3 + 6] = protos[k];
		expect(&fr, 0, SRNIC_PARSE_NOT_UDP, "IPv6 next header");
	}
	/* UDP destination port */
	for (k = 0; k < sizeof(ports) / sizeof(ports[0]); k++) {
		fr = orig;
		put16(fr.b + fr.lo.l4 + 2, ports[k]);
		expect(&fr, 0, SRNIC_PARSE_NOT_ROCE, "UDP port");
		fr = orig6;
		put16(fr.b + fr.lo.l4 + 2, ports[k]);
		put16(fr.b + fr.lo.l4, 4791); /* source 4791 does not make it RoCE */
		expect(&fr, 0, SRNIC_PARSE_NOT_ROCE, "UDP port (IPv6)");
	}
}

/* Headers split across segments: every split point inside the headers
 * gives HDR_SEGMENTED, every split after them parses. */
static void
test_hdr_segmented(void **state)
{
	struct frame fr;
	unsigned int i;
	uint32_t k, hdr_end, seg[2];

	(void)state;
	for (i = 0; i < N_BASES; i++) {
		make_base(&fr, i);
		hdr_end = fr.lo.bth + fr.hl;
		for (k = 0; k < fr.len; k++) {
			enum srnic_parse_err want = k < hdr_end ? SRNIC_PARSE_HDR_SEGMENTED
								: SRNIC_PARSE_OK;
			enum srnic_parse_err got;

			seg[0] = k;
			got = wt_parse_segs(fr.b, fr.len, seg, 1, 0, NULL);
			if (got != want)
				fail_msg("split at %u of op 0x%02x: got %s, want %s", k, fr.op,
					 srnic_parse_err_name(got), srnic_parse_err_name(want));
			/* three segments, the second one empty */
			seg[1] = 0;
			assert_int_equal(wt_parse_segs(fr.b, fr.len, seg, 2, 0, NULL), want);
		}
	}
}

/* ICRC over lengths shorter than, equal to and longer than the masked
 * headers, from exact-size buffers: 0 when there is no room for IP + UDP +
 * BTH, the reference value otherwise, and never a read past len. */
static void
test_icrc_bounds(void **state)
{
	struct frame fr;
	struct rte_mbuf *m;
	struct rte_mbuf_ext_shared_info shinfo;
	uint32_t len, hdr;
	uint8_t *buf;
	int ipv;

	(void)state;
	srnic_test_ext_shinfo_init(&shinfo);
	for (ipv = 4; ipv <= 6; ipv += 2) {
		make_frame(&fr, SRNIC_OP_RC_SEND_ONLY, ipv, false, 40);
		hdr = (ipv == 4 ? 20 : 40) + 8 + 12;
		for (len = 0; len <= fr.len - fr.lo.l3; len++) {
			uint32_t want = len < hdr ? 0 : wt_ref_icrc(fr.b + fr.lo.l3, len, ipv);

			buf = malloc(len > 0 ? len : 1);
			assert_non_null(buf);
			memcpy(buf, fr.b + fr.lo.l3, len);
			assert_int_equal(srnic_icrc_compute_flat(buf, len, (uint8_t)ipv), want);
			m = srnic_test_mbuf_ext(wt_pool(), buf, (uint16_t)len, &shinfo);
			assert_non_null(m);
			assert_int_equal(srnic_icrc_compute(m, 0, len, (uint8_t)ipv), want);
			rte_pktmbuf_free(m);
			free(buf);
		}
	}
}

/* Every parse result has a name of its own. */
static void
test_err_names(void **state)
{
	unsigned int i, j;

	(void)state;
	for (i = 0; i < SRNIC_PARSE_ERR_COUNT; i++) {
		const char *n = srnic_parse_err_name((enum srnic_parse_err)i);

		assert_non_null(n);
		assert_string_not_equal(n, "unknown");
		for (j = 0; j < i; j++)
			assert_string_not_equal(n, srnic_parse_err_name((enum srnic_parse_err)j));
	}
	assert_string_equal(srnic_parse_err_name(SRNIC_PARSE_OK), "ok");
	assert_string_equal(srnic_parse_err_name(SRNIC_PARSE_ICRC), "icrc");
	assert_string_equal(srnic_parse_err_name(SRNIC_PARSE_ERR_COUNT), "unknown");
	assert_string_equal(srnic_parse_err_name((enum srnic_parse_err)1000), "unknown");
}

/* ---- fuzz ---- */

static uint64_t rng_state;

static uint32_t
rng(void)
{
	/* xorshift64*, fixed seed: reproducible */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

static void
test_fuzz(void **state)
{
	static struct frame fr, base[N_BASES];
	unsigned long hist[SRNIC_PARSE_ERR_COUNT] = { 0 };
	unsigned int it, i, nmut, k, nseg, outcomes = 0;
	uint32_t seg[4], left;
	struct wt_layout lo;

	(void)state;
	rng_state = 0x5EED5EED12345678ull;
	for (i = 0; i < N_BASES; i++)
		make_base(&base[i], i);
	for (it = 0; it < 10000; it++) {
		uint32_t r = rng() % 100;

		if (r < 10) {
			/* garbage, sometimes with plausible Ethernet/IPv4/UDP bytes */
			fr.len = rng() % 200;
			for (k = 0; k < fr.len; k++)
				fr.b[k] = (uint8_t)rng();
			if ((rng() & 1) && fr.len >= 14 + 20 + 8) {
				put16(fr.b + 12, 0x0800);
				fr.b[14] = 0x45;
				fr.b[14 + 6] = 0x40;
				fr.b[14 + 7] = 0;
				fr.b[14 + 9] = 17;
				put16(fr.b + 14 + 2, (uint16_t)(fr.len - 14 - (rng() % 3)));
				put16(fr.b + 34 + 2, 4791);
				put16(fr.b + 34 + 4, (uint16_t)(fr.len - 34));
				fr.b[42 + 1] &= 0x30; /* TVer 0 */
				wt_fix_ipcsum(fr.b);
			}
		} else {
			fr = base[rng() % N_BASES];
			nmut = 1 + rng() % 4;
			for (k = 0; k < nmut; k++) {
				uint32_t m = rng() % 6;

				if (m == 0 || m == 1) {          /* random byte */
					if (fr.len > 0)
						fr.b[rng() % fr.len] = (uint8_t)rng();
				} else if (m == 2) {             /* a byte in the headers */
					fr.b[rng() % (fr.lo.bth + fr.hl)] ^= (uint8_t)(1u << (rng() % 8));
				} else if (m == 3) {             /* truncate */
					fr.len = fr.len > 0 ? rng() % fr.len : 0;
				} else if (m == 4) {             /* grow */
					uint32_t add = rng() % 64;

					for (i = 0; i < add && fr.len < FRAME_MAX; i++)
						fr.b[fr.len++] = (uint8_t)rng();
				} else {                         /* a length field */
					uint32_t pos = rng() % 2 ? fr.lo.l4 + 4
								 : fr.lo.l3 + (fr.lo.ip_ver == 4 ? 2 : 4);

					if (pos + 2 <= fr.len)
						put16(fr.b + pos, (uint16_t)rng());
				}
			}
			/* half the time, make checksum and ICRC right again so the
			 * parser goes deeper */
			if ((rng() & 1) && wt_layout_of(fr.b, fr.len, &lo) &&
			    fr.len >= lo.bth + 16)
				wt_refresh(fr.b, fr.len);
		}
		/* 0 to 3 split points */
		nseg = rng() % 4;
		left = fr.len;
		for (k = 0; k < nseg; k++) {
			seg[k] = left > 0 ? rng() % (left + 1) : 0;
			left -= seg[k];
		}
		hist[wt_parse_segs(fr.b, fr.len, seg, nseg, rng() % 4, NULL)]++;
	}
	for (i = 0; i < SRNIC_PARSE_ERR_COUNT; i++) {
		if (hist[i] > 0)
			outcomes++;
		print_message("%s=%lu ", srnic_parse_err_name((enum srnic_parse_err)i), hist[i]);
	}
	print_message("\n");
	/* the fuzz reached deep: valid results and many distinct reasons */
	assert_true(hist[SRNIC_PARSE_OK] > 0);
	assert_true(hist[SRNIC_PARSE_ICRC] > 0);
	assert_true(hist[SRNIC_PARSE_HDR_SEGMENTED] > 0);
	assert_true(outcomes >= 12);
}

static int
group_setup(void **state)
{
	(void)state;
	trailer_pool = rte_pktmbuf_pool_create("wt_trailer", 255, 0, 0,
					       RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	return trailer_pool == NULL ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_truncate_every_byte),
		cmocka_unit_test(test_truncate_consistent),
		cmocka_unit_test(test_ip_length),
		cmocka_unit_test(test_udp_length),
		cmocka_unit_test(test_bad_pad),
		cmocka_unit_test(test_excess_len),
		cmocka_unit_test(test_bad_opcode),
		cmocka_unit_test(test_tver),
		cmocka_unit_test(test_bad_icrc),
		cmocka_unit_test(test_ipv4_header),
		cmocka_unit_test(test_ip_version),
		cmocka_unit_test(test_not_roce),
		cmocka_unit_test(test_hdr_segmented),
		cmocka_unit_test(test_icrc_bounds),
		cmocka_unit_test(test_err_names),
		cmocka_unit_test(test_fuzz),
	};

	wt_eal_init("wire_bad");
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
