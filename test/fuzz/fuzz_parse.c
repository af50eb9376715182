/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the wire parser alone (srnic_pkt_parse with and without the
 * ICRC and IPv4 checksum checks), on the frame as one segment and split in
 * three (each segment its own heap block, so ASan sees any read past one),
 * then srnic_pkt_copy_payload() and srnic_pkt_describe() on what parses.
 *
 * Checked: a frame that parses has consistent offsets (headers in the first
 * segment, payload + pad + ICRC exactly to the end of the frame); the split
 * frame parses exactly as the flat one whenever its headers fit in the
 * first segment (the ICRC walk over a chain agrees with the flat one).
 *
 * No EAL: the mbufs are plain structs over heap buffers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_frame.h"
#include "srnic_wire.h"

#define SEGS 3
/* The split frame's first segment: this much plus a share of the rest. */
#define SEG0_MIN 54
#define DESCRIBE_LEN 256
#define IPV6_HDR_LEN 40

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fake_mbuf(struct rte_mbuf *m, uint8_t *buf, uint16_t len)
{
	memset(m, 0, sizeof(*m));
	m->buf_addr = buf;
	m->buf_len = len;
	m->data_off = 0;
	m->data_len = len;
	m->pkt_len = len;
	m->nb_segs = 1;
	rte_mbuf_refcnt_set(m, 1);
}

static void
check_parsed(const struct srnic_pkt *p, const struct rte_mbuf *m)
{
	const struct srnic_opcode_info *oi = srnic_opcode_info(p->opcode);
	const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, p->l3_off);
	uint32_t end;
	uint8_t *pay;

	/* the IP length ends the packet (an Ethernet trailer may follow) */
	end = p->l3_off + (p->ip_ver == 4 ? srnic_ld16(l3 + 2) : IPV6_HDR_LEN + srnic_ld16(l3 + 4));
	if (oi->mask == 0 || p->bth_off + oi->hdr_len > m->data_len || end > m->pkt_len ||
	    (uint32_t)p->pay_off + p->pay_len + p->pad + SRNIC_ICRC_LEN != end ||
	    p->pay_off != p->bth_off + oi->hdr_len) {
		fprintf(stderr, "fuzz_parse: inconsistent parse: op %#x bth %u pay %u+%u pad %u"
			" of %u\n", p->opcode, p->bth_off, p->pay_off, p->pay_len, p->pad,
			m->pkt_len);
		abort();
	}
	pay = malloc(p->pay_len + 1u);
	if (pay == NULL)
		abort();
	srnic_pkt_copy_payload(p, 0, pay, p->pay_len);
	free(pay);
}

static enum srnic_parse_err
parse_one(struct rte_mbuf *m, unsigned int flags, struct srnic_pkt *p)
{
	enum srnic_parse_err rc;

	rc = srnic_pkt_parse(m, p, flags);
	if (rc == SRNIC_PARSE_OK)
		check_parsed(p, m);
	(void)srnic_parse_err_name(rc);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rte_mbuf flat, seg[SEGS];
	struct srnic_pkt pf, ps;
	uint8_t *fb, *sb[SEGS];
	uint16_t cut[SEGS + 1];
	enum srnic_parse_err rf, rs;
	char line[DESCRIBE_LEN];
	unsigned int i;

	if (size == 0 || size > FUZZ_FRAME_MAX)
		return 0;
	fb = malloc(size);
	if (fb == NULL)
		abort();
	memcpy(fb, data, size);
	fake_mbuf(&flat, fb, (uint16_t)size);
	(void)parse_one(&flat, SRNIC_PARSE_F_NO_ICRC | SRNIC_PARSE_F_NO_IPCSUM, &pf);
	(void)parse_one(&flat, SRNIC_PARSE_F_NO_ICRC, &pf);
	rf = parse_one(&flat, 0, &pf);
	(void)srnic_pkt_describe(&flat, line, sizeof(line));

	/* The same bytes in three segments: the headers (and a share of the
	 * rest, from the size) in the first, the ICRC split over the last two
	 * when the frame is long enough. */
	cut[0] = 0;
	cut[1] = (uint16_t)(size < SEG0_MIN ? size / 2 : SEG0_MIN + (size - SEG0_MIN) * (size % 7) / 7);
	cut[3] = (uint16_t)size;
	cut[2] = (uint16_t)(size - cut[1] > 2 ? size - 2 : cut[1]);
	for (i = 0; i < SEGS; i++) {
		uint16_t l = (uint16_t)(cut[i + 1] - cut[i]);

		sb[i] = malloc(l + 1u); /* malloc(0) may be NULL */
		if (sb[i] == NULL)
			abort();
		memcpy(sb[i], data + cut[i], l);
		fake_mbuf(&seg[i], sb[i], l);
		if (i > 0) {
			seg[i - 1].next = &seg[i];
			seg[0].pkt_len = (uint32_t)size;
			seg[0].nb_segs = (uint16_t)(i + 1);
			seg[i].pkt_len = 0;
		}
	}
	seg[0].pkt_len = (uint32_t)size;
	rs = parse_one(&seg[0], 0, &ps);
	(void)srnic_pkt_describe(&seg[0], line, sizeof(line));
	if (rs == SRNIC_PARSE_OK && (rf != SRNIC_PARSE_OK || ps.psn != pf.psn ||
				     ps.pay_len != pf.pay_len || ps.opcode != pf.opcode)) {
		fprintf(stderr, "fuzz_parse: segmented parse OK, flat %s\n", srnic_parse_err_name(rf));
		abort();
	}
	if (rf == SRNIC_PARSE_OK && pf.pay_off <= cut[1] && rs != SRNIC_PARSE_OK) {
		fprintf(stderr, "fuzz_parse: flat parse OK, segmented (headers in segment 0) %s\n",
			srnic_parse_err_name(rs));
		abort();
	}
	for (i = 0; i < SEGS; i++)
		free(sb[i]);
	free(fb);
	return 0;
}

#ifdef SRNIC_FUZZ_LIBFUZZER
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* libFuzzer's mutation, then most of the time lengths, checksum and ICRC
 * made right again so the input reaches the checks after the ICRC. */
size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	uint32_t rnd = seed;

	size = LLVMFuzzerMutate(data, size, max_size);
	if (fuzz_rand(&rnd) % 4 != 0)
		size = fuzz_frame_fixup(data, size, max_size, NULL, &rnd);
	return size;
}
#endif
