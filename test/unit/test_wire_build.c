/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Build -> parse round trip for every opcode of the table, and the opcode
 * table itself against an independent transcription of ROCEV2.md.
 *
 * Every packet is built with srnic_pkt_init() + payload + srnic_pkt_finish(),
 * for IPv4 and IPv6, with and without VLAN, with payload lengths giving all
 * four pad counts, and with the payload in the header mbuf, in chained direct
 * segments, and in external buffers (so that srnic_pkt_finish() must take a
 * trailer segment from the trailer pool). The result is checked byte by byte
 * against the wire format (raw big-endian reads, not srnic accessors), then
 * through srnic_pkt_parse() and the accessors; the ICRC against a bitwise
 * reference CRC with its own masking code.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "srnic_wire.h"
#include "test_pcap.h"
#include "wire_util.h"

/*
 * The opcode table transcribed from ROCEV2.md ("RC opcodes", "Extended
 * headers", UC = RC + 0x20 for SEND/WRITE, UD 0x64/0x65, CNP 0x81 with 16
 * reserved bytes), in wire order. Letters: D DETH(8) R RETH(16)
 * T AtomicETH(28) A AETH(4) K AtomicAckETH(8) I ImmDt(4) V IETH(4)
 * C CNP reserved(16) F FETH(4, IBTA 1.5: FLUSH's, before its RETH).
 */
struct exp_op {
	uint8_t op;
	const char *hdrs;
	bool payload;
	char transport; /* 'R'C, 'U'C, u'D', 'C'NP */
};

#define SW(base, t) \
	{ base + 0x00, "", true, t }, { base + 0x01, "", true, t }, \
	{ base + 0x02, "", true, t }, { base + 0x03, "I", true, t }, \
	{ base + 0x04, "", true, t }, { base + 0x05, "I", true, t }, \
	{ base + 0x06, "R", true, t }, { base + 0x07, "", true, t }, \
	{ base + 0x08, "", true, t }, { base + 0x09, "I", true, t }, \
	{ base + 0x0A, "R", true, t }, { base + 0x0B, "RI", true, t }

static const struct exp_op exp_ops[] = {
	SW(0x00, 'R'),
	{ 0x0C, "R", false, 'R' },  /* READ REQUEST */
	{ 0x0D, "A", true, 'R' },   /* READ RESPONSE FIRST */
	{ 0x0E, "", true, 'R' },    /* READ RESPONSE MIDDLE */
	{ 0x0F, "A", true, 'R' },   /* READ RESPONSE LAST */
	{ 0x10, "A", true, 'R' },   /* READ RESPONSE ONLY */
	{ 0x11, "A", false, 'R' },  /* ACKNOWLEDGE */
	{ 0x12, "AK", false, 'R' }, /* ATOMIC ACKNOWLEDGE */
	{ 0x13, "T", false, 'R' },  /* COMPARE SWAP */
	{ 0x14, "T", false, 'R' },  /* FETCH ADD */
	{ 0x16, "V", true, 'R' },   /* SEND LAST with INVALIDATE */
	{ 0x17, "V", true, 'R' },   /* SEND ONLY with INVALIDATE */
	{ 0x1C, "FR", false, 'R' }, /* FLUSH (IBTA 1.5): FETH then RETH */
	{ 0x1D, "R", true, 'R' },   /* ATOMIC WRITE (IBTA 1.5): RETH, 8 bytes */
	SW(0x20, 'U'),
	{ 0x64, "D", true, 'D' },   /* UD SEND ONLY */
	{ 0x65, "DI", true, 'D' },  /* UD SEND ONLY with IMM */
	{ 0x81, "C", false, 'C' },  /* CNP */
};

#define N_EXP_OPS (sizeof(exp_ops) / sizeof(exp_ops[0]))

static const struct exp_op *
exp_find(unsigned int op)
{
	unsigned int i;

	for (i = 0; i < N_EXP_OPS; i++)
		if (exp_ops[i].op == op)
			return &exp_ops[i];
	return NULL;
}

static uint32_t
hdr_letter_len(char c)
{
	switch (c) {
	case 'D': return 8;
	case 'R': return 16;
	case 'T': return 28;
	case 'A': return 4;
	case 'K': return 8;
	case 'I': return 4;
	case 'V': return 4;
	case 'C': return 16;
	case 'F': return 4;
	}
	fail_msg("bad header letter %c", c);
	return 0;
}

static enum srnic_hdr_id
hdr_letter_id(char c)
{
	switch (c) {
	case 'D': return SRNIC_HDR_DETH;
	case 'R': return SRNIC_HDR_RETH;
	case 'T': return SRNIC_HDR_ATMETH;
	case 'A': return SRNIC_HDR_AETH;
	case 'K': return SRNIC_HDR_ATMACK;
	case 'I': return SRNIC_HDR_IMMDT;
	case 'V': return SRNIC_HDR_IETH;
	case 'C': return SRNIC_HDR_CNP_RSVD;
	case 'F': return SRNIC_HDR_FETH;
	}
	fail_msg("bad header letter %c", c);
	return SRNIC_HDR_COUNT;
}

/* Offset of header letter c after the BTH start, per the expected list. */
static uint32_t
exp_offset(const struct exp_op *e, char c)
{
	uint32_t off = SRNIC_BTH_LEN;
	const char *h;

	for (h = e->hdrs; *h != '\0'; h++) {
		if (*h == c)
			return off;
		off += hdr_letter_len(*h);
	}
	fail_msg("opcode 0x%02x has no header %c", e->op, c);
	return 0;
}

static uint32_t
exp_hdr_len(const struct exp_op *e)
{
	uint32_t n = SRNIC_BTH_LEN;
	const char *h;

	for (h = e->hdrs; *h != '\0'; h++)
		n += hdr_letter_len(*h);
	return n;
}

/* ---- the opcode table ---- */

static void
test_opcode_table(void **state)
{
	unsigned int op, n_valid = 0;

	(void)state;
	for (op = 0; op < 256; op++) {
		const struct exp_op *e = exp_find(op);
		const struct srnic_opcode_info *info = srnic_opcode_info((uint8_t)op);
		uint32_t hdr_bits = 0;
		const char *h;

		if (e == NULL) {
			if (info->mask != 0 || info->name != NULL)
				fail_msg("opcode 0x%02x should be invalid", op);
			assert_string_equal(srnic_opcode_name((uint8_t)op), "INVALID");
			continue;
		}
		n_valid++;
		if (info->mask == 0 || info->name == NULL)
			fail_msg("opcode 0x%02x should be valid", op);
		assert_ptr_equal(srnic_opcode_name((uint8_t)op), info->name);
		assert_int_equal(srnic_opcode_mask((uint8_t)op), info->mask);
		for (h = e->hdrs; *h != '\0'; h++) {
			enum srnic_hdr_id id = hdr_letter_id(*h);

			hdr_bits |= 1u << id;
			if (info->offset[id] != exp_offset(e, *h))
				fail_msg("opcode 0x%02x header %c at %u, expected %u", op, *h,
					 info->offset[id], exp_offset(e, *h));
		}
		if ((info->mask & SRNIC_OPM_HDRS) != hdr_bits)
			fail_msg("opcode 0x%02x header bits 0x%x, expected 0x%x", op,
				 info->mask & SRNIC_OPM_HDRS, hdr_bits);
		assert_int_equal(info->hdr_len, exp_hdr_len(e));
		assert_int_equal(!!(info->mask & SRNIC_OPM_PAYLOAD), e->payload);
		assert_int_equal(!!(info->mask & SRNIC_OPM_RC), e->transport == 'R');
		assert_int_equal(!!(info->mask & SRNIC_OPM_UC), e->transport == 'U');
		assert_int_equal(!!(info->mask & SRNIC_OPM_UD), e->transport == 'D');
		assert_int_equal(!!(info->mask & SRNIC_OPM_CNP), e->transport == 'C');
		/* the transport is in bits 7-5 of the opcode (ROCEV2.md BTH table) */
		if (e->transport == 'R')
			assert_int_equal(op >> 5, 0);
		if (e->transport == 'U')
			assert_int_equal(op >> 5, 1);
		if (e->transport == 'D')
			assert_int_equal(op >> 5, 3);
	}
	assert_int_equal(n_valid, N_EXP_OPS);
	assert_int_equal(n_valid, 25 + 12 + 2 + 1);
}

/* ---- round trip ---- */

enum layout {
	LAY_HDR,       /* payload copied into the header mbuf */
	LAY_CHAIN,     /* payload in three chained direct segments (some may be empty) */
	LAY_EXT_TAIL,  /* part in the header mbuf, the rest in an external buffer (last) */
	LAY_EXT_ONLY,  /* whole payload in one external buffer (last) */
	LAY_EXT_MID,   /* external buffer, then a direct segment with the rest */
	LAY_EXT_ROOM,  /* one external buffer with tailroom that is not the mbuf's to use */
	LAY_COUNT
};

static const char *const layout_name[LAY_COUNT] = {
	"hdr", "chain", "ext_tail", "ext_only", "ext_mid", "ext_room",
};

#define PAT_LEN (8192 + 256)
static uint8_t pattern[PAT_LEN];
static uint8_t pattern_ref[PAT_LEN]; /* to check nobody wrote into the external buffers */
static struct rte_mbuf_ext_shared_info ext_shinfo;
static struct rte_mempool *trailer_pool;

/* Field values derived from a seed: each header field distinct. */
struct fields {
	uint32_t psn, dqpn;
	bool se, migreq, ackreq, fecn, becn;
	uint64_t va, swap_add, compare, orig;
	uint32_t rkey, dmalen, msn, imm_be, ieth, qkey, sqpn;
	uint8_t syndrome;
	uint8_t plt, sel;  /* FETH */
};

static void
fields_from_seed(struct fields *v, uint32_t s)
{
	static const uint32_t psns[] = { 0, 1, 0x7FFFFF, 0x800000, 0xFFFFFF, 0x123456, 6352000 };
	static const uint32_t qpns[] = { 0xFFFFFF, 1, 0x25, 0xABCDEF, 0x800000 };

	v->psn = psns[s % 7];
	v->dqpn = qpns[s % 5];
	v->se = s & 1;
	v->migreq = (s >> 1) & 1;
	v->ackreq = (s >> 2) & 1;
	v->fecn = (s >> 3) & 1;
	v->becn = (s >> 4) & 1;
	v->va = 0x0011223344556677ull ^ ((uint64_t)s << 40) ^ s;
	v->rkey = 0x89ABCDEFu ^ s;
	v->dmalen = 0xFEDCBA98u ^ s;
	v->swap_add = 0x0102030405060708ull + s;
	v->compare = 0xF0E0D0C0B0A09080ull - s;
	v->orig = 0x8877665544332211ull ^ ((uint64_t)s << 32);
	v->syndrome = (uint8_t)(0x1F + s * 32);  /* varies type and value bits */
	v->msn = (0xABCDEFu + s) & 0xFFFFFF;
	v->imm_be = 0x11223344u + s;            /* stored as is (network order) */
	v->ieth = 0x55667788u ^ s;
	v->qkey = 0x80010000u + s;
	v->sqpn = (0x000001u + s * 977u) & 0xFFFFFF;
	v->plt = (uint8_t)(1 + s % 15);
	v->sel = (uint8_t)(s % 4);
}

static void
set_fields(uint8_t *bth, const struct exp_op *e, const struct fields *v)
{
	const struct srnic_opcode_info *info = srnic_opcode_info(e->op);
	uint8_t *h;

	srnic_bth_set_se(bth, v->se);
	srnic_bth_set_migreq(bth, v->migreq);
	srnic_bth_set_dqpn(bth, v->dqpn);
	srnic_bth_set_fecn(bth, v->fecn);
	srnic_bth_set_becn(bth, v->becn);
	srnic_bth_set_ackreq(bth, v->ackreq);
	srnic_bth_set_psn(bth, v->psn);
	if (info->mask & SRNIC_OPM_RETH) {
		h = bth + info->offset[SRNIC_HDR_RETH];
		srnic_reth_set_va(h, v->va);
		srnic_reth_set_rkey(h, v->rkey);
		srnic_reth_set_len(h, v->dmalen);
	}
	if (info->mask & SRNIC_OPM_AETH) {
		h = bth + info->offset[SRNIC_HDR_AETH];
		srnic_aeth_set_syndrome(h, v->syndrome);
		srnic_aeth_set_msn(h, v->msn);
	}
	if (info->mask & SRNIC_OPM_ATMACK)
		srnic_atmack_set_orig(bth + info->offset[SRNIC_HDR_ATMACK], v->orig);
	if (info->mask & SRNIC_OPM_ATMETH) {
		h = bth + info->offset[SRNIC_HDR_ATMETH];
		srnic_atmeth_set_va(h, v->va);
		srnic_atmeth_set_rkey(h, v->rkey);
		srnic_atmeth_set_swap_add(h, v->swap_add);
		srnic_atmeth_set_compare(h, v->compare);
	}
	if (info->mask & SRNIC_OPM_IMMDT)
		srnic_immdt_set_be(bth + info->offset[SRNIC_HDR_IMMDT], v->imm_be);
	if (info->mask & SRNIC_OPM_IETH)
		srnic_ieth_set_rkey(bth + info->offset[SRNIC_HDR_IETH], v->ieth);
	if (info->mask & SRNIC_OPM_FETH)
		srnic_feth_set(bth + info->offset[SRNIC_HDR_FETH], v->plt, v->sel);
	if (info->mask & SRNIC_OPM_DETH) {
		h = bth + info->offset[SRNIC_HDR_DETH];
		srnic_deth_set_qkey(h, v->qkey);
		srnic_deth_set_sqpn(h, v->sqpn);
	}
}

/* Check the extension headers at their expected offsets: raw bytes, then
 * through the accessors at the parser's srnic_pkt_hdr() address. */
static void
check_ext(const uint8_t *bth, const struct srnic_pkt *p, const struct exp_op *e,
	  const struct fields *v)
{
	const char *hl;

	for (hl = e->hdrs; *hl != '\0'; hl++) {
		const uint8_t *h = bth + exp_offset(e, *hl);
		const uint8_t *a = srnic_pkt_hdr(p, hdr_letter_id(*hl));
		uint32_t be;
		int i;

		assert_ptr_equal(a, p->bth + exp_offset(e, *hl));
		switch (*hl) {
		case 'R':
			assert_true(wt_be(h, 8) == v->va);
			assert_int_equal(wt_be(h + 8, 4), v->rkey);
			assert_int_equal(wt_be(h + 12, 4), v->dmalen);
			assert_true(srnic_reth_va(a) == v->va);
			assert_int_equal(srnic_reth_rkey(a), v->rkey);
			assert_int_equal(srnic_reth_len(a), v->dmalen);
			break;
		case 'A':
			assert_int_equal(h[0], v->syndrome);
			assert_int_equal(wt_be(h + 1, 3), v->msn);
			assert_int_equal(srnic_aeth_syndrome(a), v->syndrome);
			assert_int_equal(srnic_aeth_type(a), (v->syndrome >> 5) & 3);
			assert_int_equal(srnic_aeth_value(a), v->syndrome & 0x1F);
			assert_int_equal(srnic_aeth_msn(a), v->msn);
			break;
		case 'K':
			assert_true(wt_be(h, 8) == v->orig);
			assert_true(srnic_atmack_orig(a) == v->orig);
			break;
		case 'T':
			assert_true(wt_be(h, 8) == v->va);
			assert_int_equal(wt_be(h + 8, 4), v->rkey);
			assert_true(wt_be(h + 12, 8) == v->swap_add);
			assert_true(wt_be(h + 20, 8) == v->compare);
			assert_true(srnic_atmeth_va(a) == v->va);
			assert_int_equal(srnic_atmeth_rkey(a), v->rkey);
			assert_true(srnic_atmeth_swap_add(a) == v->swap_add);
			assert_true(srnic_atmeth_compare(a) == v->compare);
			break;
		case 'I':
			memcpy(&be, h, 4);
			assert_int_equal(be, v->imm_be);
			assert_int_equal(srnic_immdt_be(a), v->imm_be);
			break;
		case 'V':
			assert_int_equal(wt_be(h, 4), v->ieth);
			assert_int_equal(srnic_ieth_rkey(a), v->ieth);
			break;
		case 'D':
			assert_int_equal(wt_be(h, 4), v->qkey);
			assert_int_equal(h[4], 0);     /* reserved */
			assert_int_equal(wt_be(h + 5, 3), v->sqpn);
			assert_int_equal(srnic_deth_qkey(a), v->qkey);
			assert_int_equal(srnic_deth_sqpn(a), v->sqpn);
			break;
		case 'C':
			for (i = 0; i < SRNIC_CNP_RSVD_LEN; i++)
				assert_int_equal(h[i], 0);
			break;
		case 'F':
			/* IBTA 1.5 FETH: PLT in bits 3-0, SEL in 5-4, the rest 0 */
			assert_int_equal(wt_be(h, 4), (uint32_t)v->plt | (uint32_t)v->sel << 4);
			assert_int_equal(srnic_feth_plt(a), v->plt);
			assert_int_equal(srnic_feth_sel(a), v->sel);
			break;
		}
	}
}

/* Append len bytes of src to the header mbuf m (in its own data). */
static void
append_copy(struct rte_mbuf *m, const uint8_t *src, uint32_t len)
{
	uint8_t *d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)len);

	assert_non_null(d);
	memcpy(d, src, len);
}

static void
chain_direct(struct rte_mbuf *m, const uint8_t *src, uint32_t len)
{
	struct rte_mbuf *s = srnic_test_mbuf_from(wt_pool(), src, len);

	assert_non_null(s);
	assert_int_equal(rte_pktmbuf_chain(m, s), 0);
}

static void
chain_ext(struct rte_mbuf *m, const uint8_t *src, uint32_t len)
{
	struct rte_mbuf *s = srnic_test_mbuf_ext(wt_pool(), (void *)(uintptr_t)src,
						 (uint16_t)len, &ext_shinfo);

	assert_non_null(s);
	assert_false(RTE_MBUF_DIRECT(s));
	assert_int_equal(rte_pktmbuf_chain(m, s), 0);
}

/* Place the payload according to the layout; returns whether the last
 * segment is an external buffer (so that finish needs a trailer mbuf). */
static bool
place_payload(struct rte_mbuf *m, enum layout lay, const uint8_t *pay, uint32_t len)
{
	uint32_t a, b;

	switch (lay) {
	case LAY_HDR:
		append_copy(m, pay, len);
		return false;
	case LAY_CHAIN:
		a = len / 3;
		b = len / 3;
		chain_direct(m, pay, a);
		chain_direct(m, pay + a, b);
		chain_direct(m, pay + a + b, len - a - b);
		return false;
	case LAY_EXT_TAIL:
		a = len / 2;
		append_copy(m, pay, a);
		chain_ext(m, pay + a, len - a);
		return true;
	case LAY_EXT_ONLY:
		chain_ext(m, pay, len);
		return true;
	case LAY_EXT_MID:
		a = (len + 1) / 2;
		chain_ext(m, pay, a);
		chain_direct(m, pay + a, len - a);
		return false;
	case LAY_EXT_ROOM: {
		struct rte_mbuf *s = srnic_test_mbuf_ext_room(wt_pool(), (void *)(uintptr_t)pay,
							      (uint16_t)(len + 64), (uint16_t)len,
							      &ext_shinfo);

		assert_non_null(s);
		assert_true(rte_pktmbuf_tailroom(s) >= 64);
		assert_int_equal(rte_pktmbuf_chain(m, s), 0);
		return true;
	}
	default:
		fail();
	}
	return false;
}

struct rt_case {
	const struct exp_op *e;
	int ip_ver;
	bool vlan;
	uint32_t pay_len;
	enum layout lay;
	uint32_t seed;
};

static unsigned long n_built, n_trailer;

/* Flip the fields the ICRC masks: the packet must still parse. Then one
 * that it covers: it must fail with SRNIC_PARSE_ICRC. */
static void
check_icrc_masking(const uint8_t *flat, uint32_t len, uint32_t l3, uint32_t l4, int ip_ver)
{
	uint8_t *f = malloc(len);
	struct srnic_pkt p;

	assert_non_null(f);
	memcpy(f, flat, len);
	if (ip_ver == 4) {
		f[l3 + 1] ^= 0xff;         /* TOS */
		f[l3 + 8] ^= 0x3f;         /* TTL */
	} else {
		f[l3 + 0] ^= 0x0f;         /* traffic class */
		f[l3 + 1] ^= 0xff;         /* traffic class, flow label */
		f[l3 + 2] ^= 0x5a;
		f[l3 + 3] ^= 0xa5;         /* flow label */
		f[l3 + 7] ^= 0x3f;         /* hop limit */
	}
	f[l4 + 6] ^= 0x12;                 /* UDP checksum */
	f[l4 + 7] ^= 0x34;
	f[l4 + 8 + 4] ^= 0xff;             /* BTH FECN, BECN, reserved */
	wt_fix_ipcsum(f);
	assert_int_equal(wt_parse_flat(f, len, 0, &p), SRNIC_PARSE_OK);
	assert_int_equal(srnic_icrc_compute_flat(f + l3, len - l3 - 4, (uint8_t)ip_ver),
			 wt_le32(f + len - 4));

	/* invariant fields: IPv4 identification / IPv6 source; BTH P_Key */
	memcpy(f, flat, len);
	f[ip_ver == 4 ? l3 + 5 : l3 + 23] ^= 0x01;
	wt_fix_ipcsum(f);
	assert_int_equal(wt_parse_flat(f, len, 0, NULL), SRNIC_PARSE_ICRC);
	memcpy(f, flat, len);
	f[l4 + 8 + 3] ^= 0x80;
	assert_int_equal(wt_parse_flat(f, len, 0, NULL), SRNIC_PARSE_ICRC);
	free(f);
}

static void
round_trip(const struct rt_case *c, bool masking)
{
	const struct exp_op *e = c->e;
	struct srnic_route r;
	struct fields v;
	struct rte_mbuf *m, *last;
	struct srnic_pkt p;
	uint8_t *bth, *flat, *chk;
	const uint8_t *pay = pattern + (c->seed % 256);
	uint32_t l2 = c->vlan ? 18 : 14, l3 = c->ip_ver == 4 ? 20 : 40;
	uint32_t l4 = l2 + l3, bo = l4 + 8, hl = exp_hdr_len(e);
	uint32_t pad = (4 - (c->pay_len & 3)) & 3;
	uint32_t len = bo + hl + c->pay_len + pad + 4;
	uint16_t nseg_before, ip_id = (uint16_t)(c->seed * 40503u);
	uint32_t i, icrc;
	bool want_trailer;

	wt_route(&r, c->ip_ver, c->vlan);
	r.udp_sport = (uint16_t)(0xC000 | (c->seed & 0x3FFF));
	fields_from_seed(&v, c->seed);

	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, e->op, ip_id);
	assert_non_null(bth);
	assert_ptr_equal(bth, rte_pktmbuf_mtod_offset(m, uint8_t *, bo));
	assert_int_equal(m->l2_len, l2);
	assert_int_equal(m->l3_len, l3);
	assert_int_equal(m->l4_len, 8);
	assert_int_equal(rte_pktmbuf_pkt_len(m), bo + hl);
	set_fields(bth, e, &v);
	want_trailer = place_payload(m, c->lay, pay, c->pay_len);
	nseg_before = m->nb_segs;
	assert_int_equal(srnic_pkt_finish(m, trailer_pool), 0);
	n_built++;

	/* segments: the trailer comes from the trailer pool iff the last
	 * segment was an external buffer */
	last = rte_pktmbuf_lastseg(m);
	if (want_trailer) {
		n_trailer++;
		assert_int_equal(m->nb_segs, nseg_before + 1);
		assert_ptr_equal(last->pool, trailer_pool);
		assert_int_equal(last->data_len, pad + 4);
	} else {
		assert_int_equal(m->nb_segs, nseg_before);
		assert_ptr_equal(last->pool, wt_pool());
	}
	assert_int_equal(rte_pktmbuf_pkt_len(m), len);
	/* external buffers are read, never written (pad, ICRC or anything) */
	if (c->lay >= LAY_EXT_TAIL)
		assert_memory_equal(pattern, pattern_ref, PAT_LEN);

	flat = malloc(len);
	assert_non_null(flat);
	srnic_test_mbuf_flatten(m, flat);

	/* Ethernet */
	assert_memory_equal(flat, &r.dst_mac, 6);
	assert_memory_equal(flat + 6, &r.src_mac, 6);
	if (c->vlan) {
		assert_int_equal(wt_be(flat + 12, 2), 0x8100);
		assert_int_equal(wt_be(flat + 14, 2), r.vlan_tci);
	}
	assert_int_equal(wt_be(flat + l2 - 2, 2), c->ip_ver == 4 ? 0x0800 : 0x86DD);
	/* IP */
	chk = flat + l2;
	if (c->ip_ver == 4) {
		uint32_t sum = 0;

		assert_int_equal(chk[0], 0x45);
		assert_int_equal(chk[1], r.tclass);
		assert_int_equal(wt_be(chk + 2, 2), len - l2);
		assert_int_equal(wt_be(chk + 4, 2), ip_id);
		assert_int_equal(wt_be(chk + 6, 2), 0x4000);  /* DF, offset 0 */
		assert_int_equal(chk[8], r.ttl);
		assert_int_equal(chk[9], 17);
		for (i = 0; i < 20; i += 2)
			sum += wt_be(chk + i, 2);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		assert_int_equal(sum, 0xffff);                /* checksum valid */
		assert_memory_equal(chk + 12, r.src_ip, 4);
		assert_memory_equal(chk + 16, r.dst_ip, 4);
	} else {
		assert_int_equal(wt_be(chk, 4),
				 (6u << 28) | ((uint32_t)r.tclass << 20) | r.flow_label);
		assert_int_equal(wt_be(chk + 4, 2), len - l2 - 40);
		assert_int_equal(chk[6], 17);
		assert_int_equal(chk[7], r.ttl);
		assert_memory_equal(chk + 8, r.src_ip, 16);
		assert_memory_equal(chk + 24, r.dst_ip, 16);
	}
	/* UDP */
	chk = flat + l4;
	assert_int_equal(wt_be(chk, 2), r.udp_sport);
	assert_int_equal(wt_be(chk + 2, 2), 4791);
	assert_int_equal(wt_be(chk + 4, 2), len - l4);
	assert_int_equal(wt_be(chk + 6, 2), 0);
	/* BTH, raw */
	chk = flat + bo;
	assert_int_equal(chk[0], e->op);
	assert_int_equal(chk[1], (v.se << 7) | (v.migreq << 6) | (pad << 4)); /* TVer 0 */
	assert_int_equal(wt_be(chk + 2, 2), 0xFFFF);
	assert_int_equal(chk[4], (v.fecn << 7) | (v.becn << 6));
	assert_int_equal(wt_be(chk + 5, 3), v.dqpn);
	assert_int_equal(chk[8], v.ackreq << 7);
	assert_int_equal(wt_be(chk + 9, 3), v.psn);
	/* payload, pad */
	assert_memory_equal(flat + bo + hl, pay, c->pay_len);
	for (i = 0; i < pad; i++)
		assert_int_equal(flat[bo + hl + c->pay_len + i], 0);
	/* ICRC: reference, flat, mbuf chain */
	icrc = wt_le32(flat + len - 4);
	assert_int_equal(icrc, wt_ref_icrc(flat + l2, len - l2 - 4, c->ip_ver));
	assert_int_equal(icrc, srnic_icrc_compute_flat(flat + l2, len - l2 - 4, (uint8_t)c->ip_ver));
	assert_int_equal(icrc, srnic_icrc_compute(m, l2, len - l2 - 4, (uint8_t)c->ip_ver));

	/* parse the chain itself */
	assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
	assert_ptr_equal(p.mbuf, m);
	assert_ptr_equal(p.bth, rte_pktmbuf_mtod_offset(m, uint8_t *, bo));
	assert_int_equal(p.opcode, e->op);
	assert_int_equal(p.mask, srnic_opcode_mask(e->op));
	assert_int_equal(p.psn, v.psn);
	assert_int_equal(p.dqpn, v.dqpn);
	assert_int_equal(p.pad, pad);
	assert_int_equal(p.pay_len, c->pay_len);
	assert_int_equal(p.l3_off, l2);
	assert_int_equal(p.l4_off, l4);
	assert_int_equal(p.bth_off, bo);
	assert_int_equal(p.pay_off, bo + hl);
	assert_int_equal(p.has_vlan, c->vlan);
	assert_int_equal(p.vlan_tci, c->vlan ? r.vlan_tci : 0);
	assert_int_equal(p.ip_ver, c->ip_ver);
	assert_int_equal(p.udp_sport, r.udp_sport);
	assert_int_equal(srnic_bth_opcode(p.bth), e->op);
	assert_int_equal(srnic_bth_se(p.bth), v.se);
	assert_int_equal(srnic_bth_migreq(p.bth), v.migreq);
	assert_int_equal(srnic_bth_pad(p.bth), pad);
	assert_int_equal(srnic_bth_tver(p.bth), 0);
	assert_int_equal(srnic_bth_pkey(p.bth), SRNIC_PKEY_DEFAULT);
	assert_int_equal(srnic_bth_fecn(p.bth), v.fecn);
	assert_int_equal(srnic_bth_becn(p.bth), v.becn);
	assert_int_equal(srnic_bth_dqpn(p.bth), v.dqpn);
	assert_int_equal(srnic_bth_ackreq(p.bth), v.ackreq);
	assert_int_equal(srnic_bth_psn(p.bth), v.psn);
	check_ext(flat + bo, &p, e, &v);
	if (c->pay_len > 0) {
		uint8_t *out = malloc(c->pay_len);

		assert_non_null(out);
		srnic_pkt_copy_payload(&p, 0, out, c->pay_len);
		assert_memory_equal(out, pay, c->pay_len);
		free(out);
	}
	/* the same bytes, flat, parse the same way */
	assert_int_equal(wt_parse_flat(flat, len, 0, NULL), SRNIC_PARSE_OK);
	if (masking)
		check_icrc_masking(flat, len, l2, l4, c->ip_ver);

	free(flat);
	rte_pktmbuf_free(m);
}

static const uint32_t pay_lens[] = { 0, 1, 2, 3, 4, 5, 6, 7, 63, 64, 1021, 1024, 4093, 4096 };
#define N_PAY_LENS (sizeof(pay_lens) / sizeof(pay_lens[0]))

static void
test_round_trip_all(void **state)
{
	unsigned int oi, li, lay, pads_seen[4] = { 0 }, n_cases = 0;
	int ipv, vlan;
	uint32_t seed = 1;
	struct rt_case c;

	(void)state;
	n_built = n_trailer = 0;
	for (oi = 0; oi < N_EXP_OPS; oi++) {
		for (ipv = 4; ipv <= 6; ipv += 2) {
			for (vlan = 0; vlan < 2; vlan++) {
				for (li = 0; li < N_PAY_LENS; li++) {
					if (!exp_ops[oi].payload && pay_lens[li] != 0)
						continue;
					for (lay = 0; lay < LAY_COUNT; lay++) {
						c.e = &exp_ops[oi];
						c.ip_ver = ipv;
						c.vlan = vlan;
						c.pay_len = pay_lens[li];
						c.lay = (enum layout)lay;
						c.seed = seed++;
						/* the masking check on one layout is enough */
						round_trip(&c, lay == LAY_HDR);
						pads_seen[(4 - (c.pay_len & 3)) & 3]++;
						n_cases++;
					}
				}
			}
		}
	}
	/* every pad count happened, and the external-buffer layouts made
	 * srnic_pkt_finish() take trailer mbufs */
	for (li = 0; li < 4; li++)
		assert_true(pads_seen[li] > 0);
	assert_int_equal(n_built, n_cases);
	assert_true(n_trailer > 0);
	print_message("%u packets built and parsed (%lu with a trailer segment), layouts:",
		      n_cases, n_trailer);
	for (lay = 0; lay < LAY_COUNT; lay++)
		print_message(" %s", layout_name[lay]);
	print_message("\n");
	/* nothing leaked from the trailer pool */
	assert_int_equal(rte_mempool_in_use_count(trailer_pool), 0);
}

/* Ethernet padding: bytes after the IP datagram are ignored. */
static void
test_eth_padding(void **state)
{
	struct srnic_route r;
	struct rte_mbuf *m;
	struct srnic_pkt p;
	uint8_t *bth;
	char *junk;

	(void)state;
	wt_route(&r, 4, false);
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, SRNIC_OP_RC_ACK, 1);
	assert_non_null(bth);
	srnic_aeth_set_syndrome(bth + 12, 0x1F);
	assert_int_equal(srnic_pkt_finish(m, trailer_pool), 0);
	assert_int_equal(rte_pktmbuf_pkt_len(m), 62);
	junk = rte_pktmbuf_append(m, 10);
	assert_non_null(junk);
	memset(junk, 0xEE, 10);
	assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
	assert_int_equal(p.pay_len, 0);
	rte_pktmbuf_free(m);
}

/* srnic_pkt_init/finish failures. */
static void
test_init_finish_errors(void **state)
{
	static const uint8_t bad_ops[] = { 0x15, 0x18, 0x1F, 0x2C, 0x3F, 0x40, 0x60, 0x63,
					   0x66, 0x80, 0x82, 0xFF };
	struct rte_mempool *tiny, *one;
	struct srnic_route r;
	struct rte_mbuf *m, *hold, *x;
	struct srnic_pkt p;
	unsigned int i;
	uint8_t *bth;

	(void)state;
	wt_route(&r, 4, false);
	/* invalid opcodes */
	for (i = 0; i < sizeof(bad_ops); i++) {
		m = rte_pktmbuf_alloc(wt_pool());
		assert_non_null(m);
		assert_null(srnic_pkt_init(m, &r, bad_ops[i], 0));
		rte_pktmbuf_free(m);
	}
	/* not an empty mbuf */
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	assert_non_null(rte_pktmbuf_append(m, 1));
	assert_null(srnic_pkt_init(m, &r, SRNIC_OP_RC_SEND_ONLY, 0));
	rte_pktmbuf_free(m);
	/* no room: 64 bytes of data room, an atomic needs 14+20+8+12+28 = 82 */
	tiny = rte_pktmbuf_pool_create("wt_tiny", 63, 0, 0, 64, SOCKET_ID_ANY);
	assert_non_null(tiny);
	m = rte_pktmbuf_alloc(tiny);
	assert_non_null(m);
	assert_null(srnic_pkt_init(m, &r, SRNIC_OP_RC_FETCH_ADD, 0));
	rte_pktmbuf_free(m);
	rte_mempool_free(tiny);
	/* packet shorter than its headers */
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	assert_non_null(srnic_pkt_init(m, &r, SRNIC_OP_RC_READ_REQ, 0));
	assert_int_equal(rte_pktmbuf_trim(m, 1), 0);
	assert_int_equal(srnic_pkt_finish(m, trailer_pool), -EINVAL);
	rte_pktmbuf_free(m);
	/* trailer pool empty */
	one = rte_pktmbuf_pool_create("wt_one", 1, 0, 0, RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	assert_non_null(one);
	hold = rte_pktmbuf_alloc(one);
	assert_non_null(hold);
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, SRNIC_OP_RC_SEND_ONLY, 0);
	assert_non_null(bth);
	x = srnic_test_mbuf_ext(wt_pool(), pattern, 100, &ext_shinfo);
	assert_non_null(x);
	assert_int_equal(rte_pktmbuf_chain(m, x), 0);
	assert_int_equal(srnic_pkt_finish(m, one), -ENOMEM);
	/* with a trailer mbuf available it then succeeds */
	rte_pktmbuf_free(hold);
	assert_int_equal(srnic_pkt_finish(m, one), 0);
	assert_int_equal(m->nb_segs, 3);
	assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
	assert_int_equal(p.pay_len, 100);
	rte_pktmbuf_free(m);
	assert_int_equal(rte_mempool_in_use_count(one), 0);
	rte_mempool_free(one);
}

/* srnic_pkt_copy_payload across many segment boundaries. */
/* Headers and payload flat in one segment, the pad and ICRC in the next
 * (srnic_pkt_close() when the header mbuf is full): srnic_icrc_check()'s
 * walk, not its flat path, for every pad; a flipped payload bit fails. */
static void
test_icrc_trailer_apart(void **state)
{
	struct srnic_route r;
	unsigned int pay_len;

	(void)state;
	for (pay_len = 61; pay_len <= 64; pay_len++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(wt_pool()), *t;
		uint32_t len, l2, tail;
		uint16_t buf_len;
		uint8_t *p;

		wt_route(&r, 4, false);
		assert_non_null(m);
		assert_non_null(srnic_pkt_init(m, &r, SRNIC_OP_RC_SEND_ONLY, 3));
		append_copy(m, pattern, pay_len);
		/* leave the header mbuf exactly full: the trailer must go apart */
		buf_len = m->buf_len;
		m->buf_len = (uint16_t)(m->data_off + m->data_len);
		assert_int_equal(srnic_pkt_finish(m, trailer_pool), 0);
		assert_int_equal(m->nb_segs, 2);
		t = m->next;
		tail = t->data_len;
		assert_int_equal(tail, ((4 - (pay_len & 3)) & 3) + SRNIC_ICRC_LEN);
		l2 = RTE_ETHER_HDR_LEN;
		len = rte_pktmbuf_pkt_len(m) - l2 - SRNIC_ICRC_LEN;
		assert_true(srnic_icrc_check(m, l2, len, 4));
		assert_int_equal(srnic_pkt_parse(m, &(struct srnic_pkt){ 0 }, 0), SRNIC_PARSE_OK);
		p = rte_pktmbuf_mtod_offset(m, uint8_t *, m->data_len - 1);
		*p ^= 1;
		assert_false(srnic_icrc_check(m, l2, len, 4));
		*p ^= 1;
		m->buf_len = buf_len; /* the pool's mbuf as it was */
		rte_pktmbuf_free(m);
	}
}

static void
test_copy_payload(void **state)
{
	static const uint32_t lens[] = { 0, 1, 2, 3, 5, 8, 13, 16, 31, 64, 100 };
	struct srnic_route r;
	struct rte_mbuf *m;
	struct srnic_pkt p;
	uint32_t pay_len = 0, off, n, k, a;
	const uint8_t *pay = pattern + 17;
	uint8_t *bth;
	unsigned int i;

	(void)state;
	wt_route(&r, 6, true);
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, SRNIC_OP_RC_WRITE_FIRST, 9);
	assert_non_null(bth);
	/* 7 bytes in the header mbuf, then segments of the lengths above,
	 * alternately direct and external */
	append_copy(m, pay, 7);
	pay_len = 7;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		if (i & 1)
			chain_ext(m, pay + pay_len, lens[i]);
		else
			chain_direct(m, pay + pay_len, lens[i]);
		pay_len += lens[i];
	}
	assert_int_equal(srnic_pkt_finish(m, trailer_pool), 0);
	assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
	assert_int_equal(p.pay_len, pay_len);
	/* every offset, and lengths crossing 0, 1, several boundaries, to the end */
	for (off = 0; off <= pay_len; off++) {
		static const uint32_t ns[] = { 0, 1, 2, 3, 4, 7, 9, 15, 33, 70, 129 };

		for (k = 0; k <= sizeof(ns) / sizeof(ns[0]); k++) {
			uint8_t *dst;

			n = k < sizeof(ns) / sizeof(ns[0]) ? ns[k] : pay_len - off;
			if (n > pay_len - off)
				continue;
			/* exact-size heap buffer: ASan catches any overrun */
			dst = malloc(n + 1);
			assert_non_null(dst);
			dst[n] = 0xA5;
			srnic_pkt_copy_payload(&p, off, dst, n);
			assert_memory_equal(dst, pay + off, n);
			assert_int_equal(dst[n], 0xA5);
			free(dst);
		}
	}
	/* the whole payload in one go and the boundaries exactly */
	a = 7;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint8_t tmp[256];

		if (a + 2 <= pay_len && a >= 1) {
			srnic_pkt_copy_payload(&p, a - 1, tmp, 2);
			assert_memory_equal(tmp, pay + a - 1, 2);
		}
		a += lens[i];
	}
	rte_pktmbuf_free(m);
}

/* srnic_ipv4_hdr_sum() and srnic_ipv4_hdr_sum_rx() against DPDK's general
 * rte_raw_cksum() on random headers, and a built header's checksum verifies
 * with all three. */
static void
test_ipv4_hdr_sum(void **state)
{
	uint8_t h[20];
	unsigned int i, k;

	(void)state;
	srand(4791);
	for (i = 0; i < 100000; i++) {
		for (k = 0; k < sizeof(h); k++)
			h[k] = (uint8_t)rand();
		if (i % 7 == 0) /* sums near the fold boundaries */
			memset(h + 4, 0xff, 12);
		h[0] = 0x45;
		assert_int_equal(srnic_ipv4_hdr_sum(h), rte_raw_cksum(h, sizeof(h)));
		assert_int_equal(srnic_ipv4_hdr_sum_rx(h), rte_raw_cksum(h, sizeof(h)));
		h[10] = h[11] = 0;
		{
			uint16_t c = (uint16_t)~srnic_ipv4_hdr_sum(h);

			memcpy(h + 10, &c, 2);
		}
		assert_int_equal(srnic_ipv4_hdr_sum(h), 0xffff);
		assert_int_equal(srnic_ipv4_hdr_sum_rx(h), 0xffff);
		assert_int_equal(rte_raw_cksum(h, sizeof(h)), 0xffff);
	}
}

/* A QP's template (route + destination QP) starts packets exactly as the
 * route path with the QP set afterwards, for every route shape. */
static void
test_hdr_tmpl(void **state)
{
	static const uint8_t ops[] = { SRNIC_OP_RC_SEND_ONLY, SRNIC_OP_RC_READ_REQ,
				       SRNIC_OP_RC_ACK, SRNIC_OP_RC_CMP_SWAP,
				       SRNIC_OP_RC_WRITE_ONLY_IMM };
	struct srnic_hdr_tmpl t;
	struct srnic_route r;
	unsigned int v, o;

	(void)state;
	for (v = 0; v < 4; v++) {
		wt_route(&r, v & 1 ? 6 : 4, v & 2);
		srnic_hdr_tmpl_build(&t, &r, 0xabcdef);
		for (o = 0; o < RTE_DIM(ops); o++) {
			struct rte_mbuf *a = rte_pktmbuf_alloc(wt_pool());
			struct rte_mbuf *b = rte_pktmbuf_alloc(wt_pool());
			uint8_t *ba, *bb;

			assert_non_null(a);
			assert_non_null(b);
			/* dirty the data rooms: the template must zero what it owns */
			memset(rte_pktmbuf_mtod(a, uint8_t *), 0xa5, rte_pktmbuf_tailroom(a));
			memset(rte_pktmbuf_mtod(b, uint8_t *), 0x5a, rte_pktmbuf_tailroom(b));
			ba = srnic_pkt_init(a, &r, ops[o], 0x1234);
			bb = srnic_pkt_init_tmpl(b, &t, ops[o], 0x1234);
			assert_non_null(ba);
			assert_non_null(bb);
			srnic_bth_set_dqpn(ba, 0xabcdef);
			assert_int_equal(rte_pktmbuf_pkt_len(a), rte_pktmbuf_pkt_len(b));
			assert_memory_equal(rte_pktmbuf_mtod(a, uint8_t *),
					    rte_pktmbuf_mtod(b, uint8_t *), rte_pktmbuf_pkt_len(a));
			assert_int_equal(a->l2_len, b->l2_len);
			assert_int_equal(a->l3_len, b->l3_len);
			assert_int_equal(a->l4_len, b->l4_len);
			assert_int_equal(srnic_pkt_finish(a, trailer_pool), 0);
			assert_int_equal(srnic_pkt_finish(b, trailer_pool), 0);
			assert_memory_equal(rte_pktmbuf_mtod(a, uint8_t *),
					    rte_pktmbuf_mtod(b, uint8_t *), rte_pktmbuf_pkt_len(a));
			rte_pktmbuf_free(a);
			rte_pktmbuf_free(b);
		}
	}
	/* an empty template (a QP without a route) starts nothing */
	memset(&t, 0, sizeof(t));
	{
		struct rte_mbuf *m = rte_pktmbuf_alloc(wt_pool());

		assert_null(srnic_pkt_init_tmpl(m, &t, SRNIC_OP_RC_ACK, 1));
		rte_pktmbuf_free(m);
	}
}

static int
group_setup(void **state)
{
	unsigned int i;

	(void)state;
	for (i = 0; i < PAT_LEN; i++)
		pattern[i] = (uint8_t)(i * 131u + 7u + (i >> 8));
	memcpy(pattern_ref, pattern, PAT_LEN);
	srnic_test_ext_shinfo_init(&ext_shinfo);
	trailer_pool = rte_pktmbuf_pool_create("wt_trailer", 1023, 0, 0,
					       RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	return trailer_pool == NULL ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opcode_table),
		cmocka_unit_test(test_round_trip_all),
		cmocka_unit_test(test_eth_padding),
		cmocka_unit_test(test_init_finish_errors),
		cmocka_unit_test(test_copy_payload),
		cmocka_unit_test(test_icrc_trailer_apart),
		cmocka_unit_test(test_ipv4_hdr_sum),
		cmocka_unit_test(test_hdr_tmpl),
	};

	wt_eal_init("wire_build");
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
