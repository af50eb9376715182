/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ICRC's inline PCLMULQDQ fold (lib/wire/wire_icrc.c, small flat
 * packets) against the plain reference (test/common: copy, mask, bitwise
 * CRC): every covered length it takes, both IP versions, random bytes
 * everywhere (so every variant field takes random values), through the
 * function itself, srnic_icrc_compute() and srnic_icrc_check() on pool
 * mbufs (headroom: the fold's path) and on mbufs without headroom (ISA-L's
 * path), and on mbufs holding their bytes in a heap buffer from buf_addr
 * (ASan fails a read before it) with 0 to 24 bytes before l3: below the
 * fold's reach ISA-L's path, counted (srnic_icrc_fold_short()), from it on
 * the fold; all of it under every fold this CPU runs (ISA-L alone, the fold
 * in SSE encodings, in VEX encodings where the OS saves AVX state), forced
 * in turn through lib/wire/wire_internal.h's hook, after checking that
 * start-up chose the best. Then built packets of each opcode class, IPv4
 * and IPv6, whose masked fields (TTL / hop limit, DSCP / ECN, flow label, UDP checksum,
 * BTH FECN / BECN) change and still parse, and whose fields that stay the
 * same for a QP (addresses, UDP ports, destination QP, P_Key) or change
 * per packet (PSN, opcode flags) change and fail the ICRC, again under
 * every fold.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_cpuflags.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "srnic_wire.h"
#include "test_ref.h"
#include "wire_internal.h"
#include "wire_util.h"

/* the fold's longest covered length (ICRC_BLK_MAX_LEN), and past it */
#define BLK_MAX 240
#define LEN_TOP 300
/* bytes in front of l3 in the flat buffer: the fold reads that many and
 * no more (a heap buffer: ASan, in the test build, fails a read before it) */
#define FRONT SRNIC_ICRC_BLK_BEHIND
#define SEEDS 8

static struct rte_mempool *trailer_pool;

/* CPUID.1:ECX's OSXSAVE and AVX bits; XCR0's SSE and YMM state bits */
#define CPUID1_ECX_OSXSAVE (1u << 27)
#define CPUID1_ECX_AVX (1u << 28)
#define XCR0_SSE_YMM 0x6u

/* The best fold this CPU should run, found here without the library's
 * check: DPDK's CPUID flags, and for AVX CPUID and XGETBV read directly
 * (the OS saves the YMM registers). */
static enum srnic_icrc_fold
fold_expected(void)
{
#ifdef RTE_ARCH_X86_64 /* as lib/wire/wire_icrc.c: the fold exists there only */
	unsigned int eax, ebx, ecx, edx, xcr0_lo, xcr0_hi;

	if (rte_cpu_get_flag_enabled(RTE_CPUFLAG_PCLMULQDQ) <= 0 ||
	    rte_cpu_get_flag_enabled(RTE_CPUFLAG_SSE4_1) <= 0)
		return SRNIC_ICRC_FOLD_NONE;
	__asm__("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(1), "c"(0));
	if ((ecx & (CPUID1_ECX_OSXSAVE | CPUID1_ECX_AVX)) != (CPUID1_ECX_OSXSAVE | CPUID1_ECX_AVX))
		return SRNIC_ICRC_FOLD_SSE;
	__asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
	(void)xcr0_hi;
	return (xcr0_lo & XCR0_SSE_YMM) == XCR0_SSE_YMM ? SRNIC_ICRC_FOLD_AVX : SRNIC_ICRC_FOLD_SSE;
#else
	return SRNIC_ICRC_FOLD_NONE;
#endif
}

static const char *const fold_name[] = {
	[SRNIC_ICRC_FOLD_NONE] = "ISA-L (no fold)",
	[SRNIC_ICRC_FOLD_SSE] = "fold, SSE encodings",
	[SRNIC_ICRC_FOLD_AVX] = "fold, VEX encodings",
};

/* Each fold this CPU runs in turn: true with it in force, false after the
 * last (the best in force again). */
static bool
fold_next(int *f)
{
	for ((*f)++; *f <= SRNIC_ICRC_FOLD_AVX; (*f)++) {
		if (srnic_icrc_fold_force((enum srnic_icrc_fold)*f) == 0) {
			print_message("ICRC: %s\n", fold_name[*f]);
			return true;
		}
		assert_true(*f > (int)fold_expected());
		print_message("ICRC: %s: not on this CPU, not tested\n", fold_name[*f]);
	}
	assert_int_equal(srnic_icrc_fold_force(srnic_icrc_fold_best()), 0);
	return false;
}

/* Start-up chose this CPU's best (the VEX forms wherever the OS saves AVX
 * state) and the hook refuses what the CPU cannot run. */
static void
test_icrc_fold_choice(void **state)
{
	enum srnic_icrc_fold want = fold_expected();

	(void)state;
	print_message("this CPU's best: %s\n", fold_name[want]);
	assert_int_equal(srnic_icrc_fold_best(), want);
	assert_int_equal(srnic_icrc_fold_get(), want);
	/* the names the device's INFO line and /srnic/info give */
	assert_string_equal(srnic_icrc_fold_name(want), want == SRNIC_ICRC_FOLD_AVX ? "VEX" :
					      want == SRNIC_ICRC_FOLD_SSE ? "SSE" : "ISA-L");
	if (want == SRNIC_ICRC_FOLD_AVX)
		assert_string_equal(srnic_icrc_fold_why(), "AVX, its state saved by the OS");
	if (want < SRNIC_ICRC_FOLD_AVX) {
		assert_int_equal(srnic_icrc_fold_force(want + 1), -ENOTSUP);
		assert_int_equal(srnic_icrc_fold_get(), want);
	}
}

/* an mbuf holding l2 bytes of Ethernet and f's len bytes, headroom hr */
static struct rte_mbuf *
mbuf_of(const uint8_t *f, uint32_t len, uint16_t hr)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(wt_pool());
	uint8_t *d;

	assert_non_null(m);
	m->data_off = hr;
	d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(RTE_ETHER_HDR_LEN + len));
	assert_non_null(d);
	memset(d, 0x5a, RTE_ETHER_HDR_LEN);
	memcpy(d + RTE_ETHER_HDR_LEN, f, len);
	return m;
}

/* Random bytes, every length from the headers to past the fold's limit. */
static void
check_random(enum srnic_icrc_fold f)
{
	const size_t size = FRONT + LEN_TOP + SRNIC_ICRC_LEN;
	uint8_t *buf = malloc(size), *l3 = buf + FRONT;
	int v;

	assert_non_null(buf);
	for (v = 4; v <= 6; v += 2) {
		uint32_t hl = srnic_ref_icrc_hdr_len(v), len, seed;

		for (len = hl; len <= LEN_TOP; len++) {
			for (seed = 0; seed < SEEDS; seed++) {
				uint32_t ref, pos;
				int64_t blk;
				struct rte_mbuf *m;
				uint16_t hr;

				srnic_test_fill(buf, size, len * 131 + seed * 7 + (uint32_t)v);
				ref = wt_ref_icrc(l3, len, v);
				blk = srnic_icrc_blk_flat(l3, len, (uint8_t)v);
				if (len <= BLK_MAX && f != SRNIC_ICRC_FOLD_NONE)
					assert_int_equal(blk, (int64_t)ref);
				else
					assert_int_equal(blk, -1);
				/* pool mbufs: headroom 128 (the fold), then
				 * none (ISA-L), the stored ICRC after the pad */
				for (hr = 0; hr <= RTE_PKTMBUF_HEADROOM; hr += RTE_PKTMBUF_HEADROOM) {
					l3[len] = (uint8_t)ref;
					l3[len + 1] = (uint8_t)(ref >> 8);
					l3[len + 2] = (uint8_t)(ref >> 16);
					l3[len + 3] = (uint8_t)(ref >> 24);
					m = mbuf_of(l3, len + SRNIC_ICRC_LEN, hr);
					assert_int_equal(srnic_icrc_compute(m, RTE_ETHER_HDR_LEN, len,
									    (uint8_t)v), ref);
					assert_true(srnic_icrc_check(m, RTE_ETHER_HDR_LEN, len,
								     (uint8_t)v));
					/* one bit anywhere the masks do not
					 * cover: in the headers' last bytes
					 * (BTH PSN) or past them */
					pos = RTE_ETHER_HDR_LEN + hl - 1 + seed * 37 % (len - hl + 1);
					*rte_pktmbuf_mtod_offset(m, uint8_t *, pos) ^= (uint8_t)(1u << (seed & 7));
					assert_false(srnic_icrc_check(m, RTE_ETHER_HDR_LEN, len,
								      (uint8_t)v));
					rte_pktmbuf_free(m);
				}
			}
		}
	}
	free(buf);
}

/* the bytes from buf_addr to l3 tried: past SRNIC_ICRC_BLK_BEHIND by 5 */
#define ROOM_TOP (SRNIC_ICRC_BLK_BEHIND + 5)

static void
ext_free(void *addr, void *opaque)
{
	(void)opaque;
	free(addr);
}

/* A pool mbuf attached to a heap buffer that starts at buf_addr (ASan, in
 * the test build, fails any read before it), holding f's len bytes d bytes
 * after it: l3_off bytes of Ethernet (up to 14) after d - l3_off of
 * headroom. */
static struct rte_mbuf *
mbuf_ext(const uint8_t *f, uint32_t len, uint16_t d, uint16_t l3_off,
	 struct rte_mbuf_ext_shared_info *sh)
{
	uint16_t size = (uint16_t)(d + len);
	struct rte_mbuf *m = rte_pktmbuf_alloc(wt_pool());
	uint8_t *buf = malloc(size), *p;

	assert_non_null(m);
	assert_non_null(buf);
	sh->free_cb = ext_free;
	sh->fcb_opaque = NULL;
	rte_mbuf_ext_refcnt_set(sh, 1);
	rte_pktmbuf_attach_extbuf(m, buf, RTE_BAD_IOVA, size, sh);
	m->data_off = (uint16_t)(d - l3_off);
	p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(l3_off + len));
	assert_non_null(p);
	assert_ptr_equal(p + l3_off, buf + d);
	memset(p, 0x5a, l3_off);
	memcpy(p + l3_off, f, len);
	return m;
}

/* Every distance from buf_addr to l3 up to past the fold's reach, every
 * length mod 16 (so every start the fold reads from): below
 * SRNIC_ICRC_BLK_BEHIND ISA-L's path (counted, not one byte read before
 * buf_addr), from it on the fold (not counted), the right ICRC either way. */
static void
check_room(enum srnic_icrc_fold f)
{
	static struct rte_mbuf_ext_shared_info sh;
	uint8_t frame[LEN_TOP + SRNIC_ICRC_LEN];
	int v;

	for (v = 4; v <= 6; v += 2) {
		uint32_t hl = srnic_ref_icrc_hdr_len(v), len;
		uint16_t d;

		for (len = hl; len <= hl + 16 || len == BLK_MAX || len == BLK_MAX + 1;
		     len = len == hl + 16 ? BLK_MAX : len + 1) {
			for (d = 0; d <= ROOM_TOP; d++) {
				uint16_t l3_off = RTE_MIN(d, (uint16_t)RTE_ETHER_HDR_LEN);
				bool fold = f != SRNIC_ICRC_FOLD_NONE && len <= BLK_MAX;
				uint64_t before = srnic_icrc_fold_short(), want;
				struct rte_mbuf *m;
				uint32_t ref;

				srnic_test_fill(frame, len, len * 17 + d);
				ref = wt_ref_icrc(frame, len, v);
				frame[len] = (uint8_t)ref;
				frame[len + 1] = (uint8_t)(ref >> 8);
				frame[len + 2] = (uint8_t)(ref >> 16);
				frame[len + 3] = (uint8_t)(ref >> 24);
				m = mbuf_ext(frame, len + SRNIC_ICRC_LEN, d, l3_off, &sh);
				assert_int_equal(srnic_icrc_compute(m, l3_off, len, (uint8_t)v), ref);
				assert_true(srnic_icrc_check(m, l3_off, len, (uint8_t)v));
				/* compute and check: each counted once off the fold */
				want = fold && d < SRNIC_ICRC_BLK_BEHIND ? 2 : 0;
				if (srnic_icrc_fold_short() - before != want)
					fail_msg("IPv%d len %u, %u bytes before l3: %s expected",
						 v, len, d, want ? "ISA-L" : "the fold");
				rte_pktmbuf_free(m);
			}
		}
	}
}

static void
test_icrc_room(void **state)
{
	int f = -1;

	(void)state;
	while (fold_next(&f))
		check_room((enum srnic_icrc_fold)f);
}

static void
test_icrc_clmul_random(void **state)
{
	int f = -1;

	(void)state;
	/* every fold this CPU runs; without one (NONE) the fold says -1 and
	 * ISA-L's path is checked */
	while (fold_next(&f))
		check_random((enum srnic_icrc_fold)f);
}

/* One opcode of each class: what it carries after the BTH. */
static const struct {
	uint8_t op;
	uint32_t pay;
} classes[] = {
	{ SRNIC_OP_RC_SEND_ONLY, 64 },         /* payload */
	{ SRNIC_OP_RC_SEND_ONLY_IMM, 13 },     /* ImmDt, pad */
	{ SRNIC_OP_RC_WRITE_FIRST, 128 },      /* RETH */
	{ SRNIC_OP_RC_READ_REQ, 0 },           /* RETH, no payload */
	{ SRNIC_OP_RC_READ_RESP_ONLY, 64 },    /* AETH */
	{ SRNIC_OP_RC_READ_RESP_MIDDLE, 220 }, /* IPv4 past the fold: ISA-L */
	{ SRNIC_OP_RC_ACK, 0 },                /* AETH only */
	{ SRNIC_OP_RC_FETCH_ADD, 0 },          /* AtomicETH */
	{ SRNIC_OP_RC_ATOMIC_ACK, 0 },         /* AETH, AtomicAckETH */
	{ SRNIC_OP_UD_SEND_ONLY, 37 },         /* DETH */
};

/* A field: offset from l3 (the IPv4 or IPv6 header's own), length. */
struct field {
	const char *name;
	uint32_t off4, off6, len;
	uint8_t bit;	/* covered: the bit flipped in the field's last byte */
};

/* Masked to ones in the ICRC: changing them keeps it. */
static const struct field masked[] = {
	{ "DSCP/ECN (IPv4 TOS, IPv6 traffic class)", 1, 0, 1 },
	{ "TTL / hop limit", 8, 7, 1 },
	{ "IPv6 traffic class low bits, flow label", 0, 1, 3 }, /* IPv6 only */
	{ "UDP checksum", 20 + 6, 40 + 6, 2 },
	{ "BTH FECN/BECN/resv", 28 + 4, 48 + 4, 1 },
};

/* The same for every packet of a QP, or changing per packet: covered. */
static const struct field covered[] = {
	{ "source IP", 12, 8, 4, 0x01 },
	{ "destination IP", 16, 24, 4, 0x01 },
	{ "UDP source port", 20, 40, 2, 0x01 },
	{ "BTH P_Key", 28 + 2, 48 + 2, 2, 0x01 },
	{ "BTH destination QP", 28 + 5, 48 + 5, 3, 0x01 },
	{ "BTH PSN", 28 + 9, 48 + 9, 3, 0x01 },
	{ "BTH AckReq", 28 + 8, 48 + 8, 1, 0x80 },
	{ "BTH SE", 28 + 1, 48 + 1, 1, 0x80 },
	{ "BTH MigReq", 28 + 1, 48 + 1, 1, 0x40 },
	{ "IPv4 identification", 4, 4, 0, 0x01 },
};

static enum srnic_parse_err
parse(struct rte_mbuf *m)
{
	struct srnic_pkt p;

	memset(&p, 0, sizeof(p));
	return srnic_pkt_parse(m, &p, 0);
}

static void
check_fields(void)
{
	unsigned int c, i, b;
	int v;

	for (v = 4; v <= 6; v += 2) {
		for (c = 0; c < RTE_DIM(classes); c++) {
			struct srnic_route r;
			struct rte_mbuf *m = rte_pktmbuf_alloc(wt_pool());
			uint8_t *bth, *f, *l3, pay[256];
			uint32_t len;

			assert_non_null(m);
			wt_route(&r, v, false);
			bth = srnic_pkt_init(m, &r, classes[c].op, 77);
			assert_non_null(bth);
			srnic_bth_set_dqpn(bth, 0x12345);
			srnic_bth_set_psn(bth, 2000);
			srnic_test_fill(pay, sizeof(pay), c);
			if (classes[c].pay > 0)
				assert_non_null(rte_pktmbuf_append(m, (uint16_t)classes[c].pay));
			if (classes[c].pay > 0)
				memcpy(rte_pktmbuf_mtod_offset(m, uint8_t *, m->data_len - classes[c].pay),
				       pay, classes[c].pay);
			assert_int_equal(srnic_pkt_finish(m, trailer_pool), 0);
			assert_int_equal(m->nb_segs, 1);
			assert_int_equal(parse(m), SRNIC_PARSE_OK);
			f = rte_pktmbuf_mtod(m, uint8_t *);
			len = m->data_len;
			l3 = f + RTE_ETHER_HDR_LEN;

			for (i = 0; i < RTE_DIM(masked); i++) {
				const struct field *fl = &masked[i];
				uint32_t off = v == 4 ? fl->off4 : fl->off6;
				uint8_t keep[4];

				if (v == 4 && fl->off4 == 0)
					continue; /* no flow label in IPv4 */
				memcpy(keep, l3 + off, fl->len);
				for (b = 0; b < fl->len; b++)
					l3[off + b] ^= (uint8_t)(0xa5 + b);
				if (v == 6 && i == 0)
					l3[off] ^= 0xa5 & 0xf0; /* version: not ours */
				wt_fix_ipcsum(f);
				print_message("IPv%d opcode 0x%02x: %s changed\n", v, classes[c].op,
					      fl->name);
				assert_int_equal(parse(m), SRNIC_PARSE_OK);
				memcpy(l3 + off, keep, fl->len);
				wt_fix_ipcsum(f);
			}
			for (i = 0; i < RTE_DIM(covered); i++) {
				const struct field *fl = &covered[i];
				uint32_t off = v == 4 ? fl->off4 : fl->off6;
				uint32_t n = fl->len;
				uint8_t keep[4];

				if (n == 0) {
					if (v == 6)
						continue; /* no identification in IPv6 */
					n = 2;
				}
				memcpy(keep, l3 + off, n);
				l3[off + n - 1] ^= fl->bit;
				wt_fix_ipcsum(f);
				print_message("IPv%d opcode 0x%02x: %s changed\n", v, classes[c].op,
					      fl->name);
				assert_int_equal(parse(m), SRNIC_PARSE_ICRC);
				/* with the ICRC rewritten by the reference the
				 * same packet passes: the ICRC was its only
				 * defect */
				wt_refresh(f, len);
				assert_int_equal(parse(m), SRNIC_PARSE_OK);
				memcpy(l3 + off, keep, n);
				wt_refresh(f, len);
				assert_int_equal(parse(m), SRNIC_PARSE_OK);
			}
			rte_pktmbuf_free(m);
		}
	}
}

static void
test_icrc_fields(void **state)
{
	int f = -1;

	(void)state;
	while (fold_next(&f))
		check_fields();
}

static int
group_setup(void **state)
{
	(void)state;
	trailer_pool = rte_pktmbuf_pool_create("wt_icrc_trailer", 255, 0, 0,
					       RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	return trailer_pool == NULL ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_icrc_fold_choice),
		cmocka_unit_test(test_icrc_clmul_random),
		cmocka_unit_test(test_icrc_room),
		cmocka_unit_test(test_icrc_fields),
	};

	wt_eal_init("wire_icrc");
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
