/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC (IBTA Annex A17.3.3): CRC-32 (IEEE, reflected) over a pseudo header of
 * 8 bytes of 0xFF, then IP, UDP, BTH with the fields a router may change set
 * to ones, then the rest of the packet through the pad. ISA-L's
 * crc32_gzip_refl() has zlib's convention (pass the previous result to
 * continue), so a chain of segments is one running CRC with no copy.
 *
 * The masked headers are never built: ISA-L reads the packet where it is,
 * and the masking is made up for with the CRC's linearity. With R(s, m) the
 * raw register update (no inversions; crc32_gzip_refl(c, m) == ~R(~c, m)),
 * z a zero byte and d one byte (also read as the register value d),
 *
 *   R(s, a ^ b) == R(s, a) ^ R(0, b)        (a, b of equal length)
 *   R(0, z^i . d . z^k) == R(d, z^(k+1)) == d * x^(8(k+1)) mod P
 *   R(s ^ e, m) == R(s, m) ^ R(e, z^|m|)
 *
 * The masked header is the packet's XOR delta, delta nonzero only at the
 * variant bytes (delta == ~byte & the bits the mask sets). For a delta byte
 * d at offset i of a header of hl bytes:
 *
 *   fwd:  after the header, crc(c, masked) == crc(c, orig) ^ d * x^(8(hl-i));
 *   seed: before it, crc(c ^ d * x^(-8i), orig ...) == crc(c, masked ...),
 *         over the header and anything after it.
 *
 * icrc_tab holds both for every variant offset and every value of the
 * packet's byte there; a packet's correction is the XOR of 7 (IPv4) or 8
 * (IPv6) lookups. When the headers' segment holds more than the headers (a
 * received packet, anything flat) the ICRC is one ISA-L call from the
 * corrected seed over the headers and the rest of the segment. When the
 * headers end their segment (the zero-copy send chain: header mbuf, payload,
 * trailer) they get a call of their own anyway, so the fwd correction,
 * computed while that call runs, is XORed in after it: the seed's lookups
 * would delay the start of a call that short by their latency.
 *
 * Small flat packets (up to ICRC_BLK_MAX_LEN covered bytes, from an mbuf:
 * every request, ACK and copied READ response) take neither: icrc_blk_fold()
 * below folds them inline with PCLMULQDQ, masking the headers in the
 * registers (doc/performance.md, issue 26, twenty-first session).
 *
 * Measured (doc/performance.md): the seed path alone, also on the chain,
 * costs 1.5 to 2.2 ns more there at 256 B and 1 KiB; the fwd path alone, also
 * on single segments, costs a second ISA-L call, 4 to 5 ns more up to 256 B;
 * one call over headers + rest with the fwd correction carried through the
 * rest (times x^(8n) mod P: PCLMULQDQ, Barrett reduction) is slower on
 * single segments by 3 to 7.5 ns, the multiplication sitting behind the CRC.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include <isa-l/crc.h>

#include <rte_common.h>
#include <rte_cpuflags.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "srnic_pkt.h"
#include "wire_internal.h"

#ifdef RTE_ARCH_X86_64
#include <immintrin.h>
#endif

/* crc32(0, 8 x 0xFF): the CRC state after the pseudo header. rxe keeps the
 * uninverted register, 0xdebb20e3 == ~0x2144df1c. */
#define ICRC_PSEUDO_HDR_CRC 0x2144df1cu

/* CRC-32 (IEEE 802.3) polynomial, bit reflected */
#define ICRC_POLY_REFL 0xedb88320u

#define ICRC_HL4 (sizeof(struct rte_ipv4_hdr) + sizeof(struct rte_udp_hdr) + SRNIC_BTH_LEN)
#define ICRC_HL6 (sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr) + SRNIC_BTH_LEN)
#define ICRC_MASKED_MAX ICRC_HL6

/* Variant bytes: offset from the IP header, bits set to one. */
#define ICRC_V4_N 7
#define ICRC_V6_N 8
#define ICRC_UDP4 sizeof(struct rte_ipv4_hdr)
#define ICRC_UDP6 sizeof(struct rte_ipv6_hdr)

static const uint8_t icrc_v4_off[ICRC_V4_N] = {
	1,                      /* TOS */
	8,                      /* TTL */
	10, 11,                 /* header checksum */
	ICRC_UDP4 + 6, ICRC_UDP4 + 7, /* UDP checksum */
	ICRC_UDP4 + 8 + 4,      /* BTH FECN, BECN, reserved */
};
static const uint8_t icrc_v6_off[ICRC_V6_N] = {
	0, 1,                   /* traffic class (byte 0 low, byte 1 high nibble) */
	2, 3,                   /* flow label (with byte 1's low nibble) */
	7,                      /* hop limit */
	ICRC_UDP6 + 6, ICRC_UDP6 + 7, /* UDP checksum */
	ICRC_UDP6 + 8 + 4,      /* BTH FECN, BECN, reserved */
};
static const uint8_t icrc_v6_mask[ICRC_V6_N] = { 0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/*
 * [k][b]: the correction for byte value b at the k-th variant offset,
 *   seed: to XOR into the CRC before the header (d * x^(-8 * off));
 *   fwd:  to XOR into the CRC right after it (d * x^(8 * (hl - off))).
 * 2 x 15 KiB; a packet reads one entry of 7 (IPv4) or 8 (IPv6) of them.
 */
static struct {
	uint32_t seed4[ICRC_V4_N][256];
	uint32_t seed6[ICRC_V6_N][256];
	uint32_t fwd4[ICRC_V4_N][256];
	uint32_t fwd6[ICRC_V6_N][256];
} icrc_tab __rte_cache_aligned;

/* s * x^(8 * bytes) mod P: the raw register run over |bytes| zero bytes,
 * backwards if bytes < 0. */
static uint32_t
icrc_xpow(uint32_t s, int bytes)
{
	int k;

	for (k = 0; k < 8 * bytes; k++)
		s = (s >> 1) ^ (s & 1u ? ICRC_POLY_REFL : 0);
	for (k = 0; k < -8 * bytes; k++)
		s = s & 0x80000000u ? ((s ^ ICRC_POLY_REFL) << 1) | 1u : s << 1;
	return s;
}

/* tab[v] = (~v & mask) * x^(8 * bytes), by linearity from the 8 bits */
static void
icrc_tab_fill(uint32_t *tab, int bytes, uint8_t mask)
{
	uint32_t bit[8], b, v, e;

	for (b = 0; b < 8; b++)
		bit[b] = icrc_xpow(1u << b, bytes);
	for (v = 0; v < 256; v++) {
		uint8_t delta = (uint8_t)~v & mask;

		for (e = 0, b = 0; b < 8; b++)
			if (delta & (1u << b))
				e ^= bit[b];
		tab[v] = e;
	}
}

static void icrc_blk_init(void);

/* Built before main (and before any lcore runs); read-only afterwards. */
RTE_INIT(icrc_tab_init)
{
	unsigned int k;

	for (k = 0; k < ICRC_V4_N; k++) {
		icrc_tab_fill(icrc_tab.seed4[k], -(int)icrc_v4_off[k], 0xff);
		icrc_tab_fill(icrc_tab.fwd4[k], (int)(ICRC_HL4 - icrc_v4_off[k]), 0xff);
	}
	for (k = 0; k < ICRC_V6_N; k++) {
		icrc_tab_fill(icrc_tab.seed6[k], -(int)icrc_v6_off[k], icrc_v6_mask[k]);
		icrc_tab_fill(icrc_tab.fwd6[k], (int)(ICRC_HL6 - icrc_v6_off[k]), icrc_v6_mask[k]);
	}
	icrc_blk_init();
}

/* XOR of the corrections for the unmasked IP+UDP+BTH at h, from the tables
 * t4 / t6 (seed or fwd). */
static inline uint32_t
icrc_corr(const uint8_t *h, uint8_t ip_ver, const uint32_t (*t4)[256], const uint32_t (*t6)[256])
{
	if (ip_ver == 4)
		return t4[0][h[icrc_v4_off[0]]] ^ t4[1][h[icrc_v4_off[1]]] ^
		       t4[2][h[icrc_v4_off[2]]] ^ t4[3][h[icrc_v4_off[3]]] ^
		       t4[4][h[icrc_v4_off[4]]] ^ t4[5][h[icrc_v4_off[5]]] ^
		       t4[6][h[icrc_v4_off[6]]];
	return t6[0][h[icrc_v6_off[0]]] ^ t6[1][h[icrc_v6_off[1]]] ^
	       t6[2][h[icrc_v6_off[2]]] ^ t6[3][h[icrc_v6_off[3]]] ^
	       t6[4][h[icrc_v6_off[4]]] ^ t6[5][h[icrc_v6_off[5]]] ^
	       t6[6][h[icrc_v6_off[6]]] ^ t6[7][h[icrc_v6_off[7]]];
}

/* The seed that makes a CRC over the unmasked headers at h (and on over the
 * rest) the ICRC. */
static inline uint32_t
icrc_seed(const uint8_t *h, uint8_t ip_ver)
{
	return ICRC_PSEUDO_HDR_CRC ^ icrc_corr(h, ip_ver, icrc_tab.seed4, icrc_tab.seed6);
}

/*
 * Small flat packets (every request, ACK and copied READ response): no ISA-L
 * call and no seed lookups. Counted by callgrind (one call in a loop):
 * ISA-L 72 instructions over a 56-byte READ request, 96 over a 108-byte
 * READ response (~35 of them before its first byte), the seed's lookups
 * 25; this fold (VEX encodings) 60 and 83, masking included (SSE: 69 and
 * 98). The CRC is folded inline with PCLMULQDQ over 16-byte blocks, and the
 * masking is done in the registers: each block of the headers is ORed with
 * a constant (the first also ANDed), so the masked header is never stored
 * (the store-forwarding stall of "Before this change" in
 * doc/performance.md) and never looked up byte by byte.
 *
 * Blocks need a length that is a multiple of 16: k = (-len) mod 16 zero
 * bytes are put in front of the covered bytes, and the register starts at
 * S * x^(-8k) (which the k zero bytes then take to S: leading zeros with a
 * register run backwards change nothing), XORed into the message's first 4
 * bytes. S is the register after the pseudo header (~ICRC_PSEUDO_HDR_CRC):
 * the 8 bytes of ones are the same in every packet, so they are not folded
 * (one block fewer when len mod 16 is 9 to 12: a 108-byte READ response, a
 * 44-byte ACK). That needs 4 of the k zero bytes for the register; with k < 4
 * (len mod 16 is 0 or 13 to 15) the message keeps the pseudo header: k + 8
 * zero bytes, the 8 bytes of ones, then the covered bytes, from ~0 * x^(-8(k +
 * 8)), the same number of blocks either way. The first block is read from
 * l3 - front (k, or k + 16): the bytes before l3 (the Ethernet header,
 * headroom) are ANDed to zero and the pseudo header's ORed to ones, both by
 * icrc_blk_tab's masks for len mod 16 (which also OR the headers' variant
 * bits to ones). So the mbuf must have 3 + 16 bytes before l3
 * (ICRC_BLK_BEHIND), always true of srnic's packets (headroom 128); packets
 * without take ISA-L's path.
 *
 * Fold and reduction, in the reflected domain (bit i of a 64-bit lane is
 * the coefficient of x^(63 - i)), K(n) = bit-reflected (x^n mod P) << 1:
 *   fold:   acc = lo(acc) * K(160) ^ hi(acc) * K(96) ^ next block
 *   reduce: t = lo(acc) * K(96) ^ hi(acc)          (R(0, acc . 0^4), 12 B)
 *           v = (t & M32) * K(64) ^ t >> 32         (the same, 8 B)
 *           Barrett with P' = P reflected and u' = x^64 / P reflected
 * (derived and checked against zlib's crc32 by brute force; the unit test
 * test/unit/test_wire_icrc.c compares every length and header variant against the
 * plain reference).
 */
#define ICRC_K160 0x1751997d0ull
#define ICRC_K96  0x0ccaa009eull
#define ICRC_K64  0x163cd6124ull
#define ICRC_P_REFL 0x1db710641ull
#define ICRC_U_REFL 0x1f7011641ull

/* Covered lengths (IP .. pad) folded inline; longer ones go to ISA-L,
 * whose parallel folds win from 256 bytes on (ISA-L's own path below that
 * is one fold at a time, as here). */
#define ICRC_BLK_MAX_LEN 240
/* Bytes of the CRC register, put in the message's first bytes */
#define ICRC_REG_LEN 4
/* The pseudo header's bytes (all ones) */
#define ICRC_PSEUDO_LEN 8
/* Bytes read before l3: at most 3 of zero padding, the pseudo header and 8
 * more zero bytes for the register (k < ICRC_REG_LEN), or 15 of zero
 * padding (above). */
#define ICRC_BLK_BEHIND (ICRC_REG_LEN - 1 + 2 * ICRC_PSEUDO_LEN)
static_assert(ICRC_BLK_BEHIND == SRNIC_ICRC_BLK_BEHIND, "wire_internal.h: the fold's reach");
/* Blocks the headers can reach: 19 + 60 bytes. */
#define ICRC_BLK_HDR 5
/* or_[] holds every block icrc_blk_fill() writes (fewer: overflow) and
 * icrc_blk_fold() ORs no more than it holds (more: a block not masked) */
static_assert(ICRC_BLK_HDR == (ICRC_BLK_BEHIND + ICRC_HL6 + 15) / 16 && ICRC_HL6 >= ICRC_HL4,
	      "ICRC_BLK_HDR: the blocks the pseudo header, padding and IPv6 headers fill");

/* For IPv4 / IPv6 and len mod 16: the masks of the blocks holding headers,
 * how many those are, where the message starts and the register to start
 * from. Built with icrc_tab. */
struct icrc_blk_k {
	uint8_t and0[16];	/* block 0: zero before l3 or the pseudo header */
	/* ones at the pseudo header (if in the message) and the variant bits;
	 * in block 0 also the start register XORed in (those bytes are
	 * constant: the AND cleared them) */
	uint8_t or_[ICRC_BLK_HDR][16];
	uint32_t nh;	/* blocks holding header bytes, 3 to 5 */
	uint32_t front;	/* message bytes before l3: k or k + 16 */
} __rte_aligned(16);

static struct icrc_blk_k icrc_blk_tab[2][16] __rte_cache_aligned;
/* Which fold runs (enum srnic_icrc_fold): set once at start-up by
 * icrc_blk_init() (srnic_icrc_fold_force() in the unit tests), read by every
 * packet: a predictable branch to one of two direct calls, no pointer. */
static uint8_t icrc_blk_mode;

static void
icrc_blk_fill(unsigned int v6, unsigned int rem)
{
	const uint8_t *off = v6 ? icrc_v6_off : icrc_v4_off;
	unsigned int i, n = v6 ? ICRC_V6_N : ICRC_V4_N;
	struct icrc_blk_k *e = &icrc_blk_tab[v6][rem];
	uint8_t *o = &e->or_[0][0];
	/* k zero bytes make the message whole blocks; with fewer than the
	 * register's 4, the pseudo header is in the message, after 8 more */
	unsigned int k = -rem & 15, pseudo = k < ICRC_REG_LEN ? ICRC_PSEUDO_LEN : 0;
	unsigned int zeros = k + pseudo, front = zeros + pseudo;
	uint32_t init;

	memset(e->and0, 0xff, sizeof(e->and0));
	memset(o, 0, sizeof(e->or_));
	/* not the packet's bytes (front <= 19: the pseudo header may reach
	 * into block 1, whose bytes are then ones by the OR alone) */
	memset(e->and0, 0, RTE_MIN(front, 16u));
	memset(o + zeros, 0xff, pseudo);
	for (i = 0; i < n; i++)
		o[front + off[i]] = v6 ? icrc_v6_mask[i] : 0xff;
	/* the register before the message (~0, or after the pseudo header)
	 * run backwards over the zero bytes, into the first 4 (all of them in
	 * the part of block 0 the AND made constant: zeros >= 4) */
	init = icrc_xpow(pseudo ? 0xffffffffu : ~ICRC_PSEUDO_HDR_CRC, -(int)zeros);
	for (i = 0; i < ICRC_REG_LEN; i++)
		o[i] ^= (uint8_t)(init >> (8 * i));
	e->front = front;
	e->nh = (front + (v6 ? ICRC_HL6 : ICRC_HL4) + 15) / 16;
}

#ifdef RTE_ARCH_X86_64
/* acc folded forward over the next 16 bytes */
#define ICRC_FOLD(acc, k) \
	_mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11))
#define ICRC_BLK_LD(p, j) _mm_loadu_si128((const __m128i *)((p) + 16 * (j)))
/* header block j >= 1: the variant bytes ORed to ones */
#define ICRC_BLK_LDM(p, j, e) \
	_mm_or_si128(ICRC_BLK_LD(p, j), _mm_load_si128((const __m128i *)(e)->or_[j]))

/* The ICRC over len bytes at l3 (from the headers' length to
 * ICRC_BLK_MAX_LEN; ICRC_BLK_BEHIND bytes before l3 readable). Written once,
 * inlined into the two variants below, which the compiler encodes each its
 * own way. */
static inline __attribute__((always_inline, target("pclmul,sse4.1"))) uint32_t
icrc_blk_fold(const uint8_t *l3, uint32_t len, unsigned int v6)
{
	const struct icrc_blk_k *e = &icrc_blk_tab[v6][len & 15];
	const uint8_t *p = l3 - e->front, *end = l3 + len, *q;
	uint32_t nh = e->nh;
	const __m128i kf = _mm_set_epi64x((long long)ICRC_K96, (long long)ICRC_K160);
	const __m128i m32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i x, t;

	/* block 0: what comes before the pseudo header ANDed to zero, the
	 * rest as the others; or_[0] holds the start register too */
	x = _mm_or_si128(_mm_and_si128(ICRC_BLK_LD(p, 0), _mm_load_si128((const __m128i *)e->and0)),
			 _mm_load_si128((const __m128i *)e->or_[0]));
	x = _mm_xor_si128(ICRC_FOLD(x, kf), ICRC_BLK_LDM(p, 1, e));
	x = _mm_xor_si128(ICRC_FOLD(x, kf), ICRC_BLK_LDM(p, 2, e));
	/* IPv4: 3 or 4 blocks hold headers, IPv6: 4 or 5 (written out: a
	 * loop's set-up costs more than its turns) */
	if (nh > 3) {
		x = _mm_xor_si128(ICRC_FOLD(x, kf), ICRC_BLK_LDM(p, 3, e));
		if (nh > 4)
			x = _mm_xor_si128(ICRC_FOLD(x, kf), ICRC_BLK_LDM(p, 4, e));
	}
	/* the rest, two blocks a turn */
	for (q = p + 16 * nh; q + 16 < end; q += 32) {
		x = _mm_xor_si128(ICRC_FOLD(x, kf), ICRC_BLK_LD(q, 0));
		x = _mm_xor_si128(ICRC_FOLD(x, kf), ICRC_BLK_LD(q, 1));
	}
	if (q < end)
		x = _mm_xor_si128(ICRC_FOLD(x, kf), ICRC_BLK_LD(q, 0));
	/* 16 bytes -> 12 -> 8, then Barrett */
	t = _mm_xor_si128(_mm_clmulepi64_si128(x, _mm_cvtsi64_si128((long long)ICRC_K96), 0x00),
			  _mm_srli_si128(x, 8));
	t = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(t, m32),
					       _mm_cvtsi64_si128((long long)ICRC_K64), 0x00),
			  _mm_srli_si128(t, 4));
	x = _mm_clmulepi64_si128(_mm_and_si128(t, m32), _mm_cvtsi64_si128((long long)ICRC_U_REFL),
				 0x00);
	x = _mm_clmulepi64_si128(_mm_and_si128(x, m32), _mm_cvtsi64_si128((long long)ICRC_P_REFL),
				 0x00);
	return ~(uint32_t)_mm_extract_epi32(_mm_xor_si128(t, x), 1);
}

/* Legacy SSE encodings, as the rest of the build (-march=corei7): for CPUs
 * or systems without AVX. Two-operand forms: every fold step copies a
 * register first (~12 instructions a fold, doc/performance.md). */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
icrc_blk_crc_sse(const uint8_t *l3, uint32_t len, unsigned int v6)
{
	return icrc_blk_fold(l3, len, v6);
}

/* The same in VEX encodings (three-operand forms, no copies), 128-bit only:
 * VEX.128 clears the registers' upper halves, so the legacy SSE code around
 * it meets no AVX-SSE transition. Runs only where the OS saves AVX state
 * (icrc_blk_cpu()). */
__attribute__((target("avx,pclmul"))) static uint32_t
icrc_blk_crc_avx(const uint8_t *l3, uint32_t len, unsigned int v6)
{
	return icrc_blk_fold(l3, len, v6);
}

/* The best fold this CPU and OS can run. __builtin_cpu_supports() reads
 * libgcc's CPU model (gcc/common/config/i386/cpuinfo.h,
 * get_available_features(): "avx" is set only when CPUID has OSXSAVE and
 * XGETBV's XCR0 has both the SSE and the YMM state bits, i.e. the OS saves
 * the AVX registers; compiler-rt's cpu_model.c checks the same); DPDK's
 * RTE_CPUFLAG_AVX is CPUID's bit alone. PCLMULQDQ and SSE4.1 work on the
 * SSE state every x86-64 OS saves: CPUID is enough for them. */
static enum srnic_icrc_fold
icrc_blk_cpu(void)
{
	/* this runs in a constructor, maybe before libgcc's own */
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1"))
		return SRNIC_ICRC_FOLD_NONE;
	if (!__builtin_cpu_supports("avx"))
		return SRNIC_ICRC_FOLD_SSE;
	return SRNIC_ICRC_FOLD_AVX;
}
#else
#include <rte_debug.h>

/* elsewhere ISA-L's path only: icrc_blk_mode stays NONE, never called */
static uint32_t
icrc_blk_crc_sse(const uint8_t *l3, uint32_t len, unsigned int v6)
{
	RTE_SET_USED(l3);
	RTE_SET_USED(len);
	RTE_SET_USED(v6);
	RTE_VERIFY(0);
	return 0;
}
#define icrc_blk_crc_avx icrc_blk_crc_sse

static enum srnic_icrc_fold
icrc_blk_cpu(void)
{
	return SRNIC_ICRC_FOLD_NONE;
}
#endif

static void
icrc_blk_init(void)
{
	unsigned int rem;

	for (rem = 0; rem < 16; rem++) {
		icrc_blk_fill(0, rem);
		icrc_blk_fill(1, rem);
	}
	icrc_blk_mode = (uint8_t)icrc_blk_cpu();
}

/* Whether the flat bytes [l3, l3 + len) of m are in the inline fold's reach */
static inline bool
icrc_blk_room(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len)
{
	return len <= ICRC_BLK_MAX_LEN && rte_pktmbuf_headroom(m) + l3_off >= ICRC_BLK_BEHIND;
}

/* Flat packets the fold could take but for the bytes before l3 (fewer than
 * ICRC_BLK_BEHIND): ISA-L's path instead. Counted on that path only (the
 * fold's pays nothing), by any lcore: a relaxed atomic add. */
static uint64_t icrc_blk_short;

static __rte_noinline void
icrc_blk_short_count(void)
{
	__atomic_fetch_add(&icrc_blk_short, 1, __ATOMIC_RELAXED);
}

uint64_t
srnic_icrc_fold_short(void)
{
	return __atomic_load_n(&icrc_blk_short, __ATOMIC_RELAXED);
}

/* The inline fold over the flat len bytes at l3 (l3_off into m) into *crc,
 * in the encoding chosen at start-up; false where no fold runs or the bytes
 * are out of its reach (ISA-L's path then). The VEX encoding's test comes
 * first and alone: that path pays one compare of the mode, as the fold did
 * before there was a choice (a test for any fold, then for which, counted 3
 * instructions a packet more). */
static inline bool
icrc_blk_try(const struct rte_mbuf *m, uint32_t l3_off, const uint8_t *l3, uint32_t len,
	     unsigned int v6, uint32_t *crc)
{
	if (likely(icrc_blk_mode == SRNIC_ICRC_FOLD_AVX) && likely(icrc_blk_room(m, l3_off, len))) {
		*crc = icrc_blk_crc_avx(l3, len, v6);
		return true;
	}
	if (icrc_blk_mode == SRNIC_ICRC_FOLD_SSE && icrc_blk_room(m, l3_off, len)) {
		*crc = icrc_blk_crc_sse(l3, len, v6);
		return true;
	}
	if (icrc_blk_mode != SRNIC_ICRC_FOLD_NONE && len <= ICRC_BLK_MAX_LEN)
		icrc_blk_short_count();
	return false;
}

const char *
srnic_icrc_fold_name(enum srnic_icrc_fold f)
{
	static const char *const names[] = {
		[SRNIC_ICRC_FOLD_NONE] = "ISA-L",
		[SRNIC_ICRC_FOLD_SSE] = "SSE",
		[SRNIC_ICRC_FOLD_AVX] = "VEX",
	};

	return (unsigned int)f < RTE_DIM(names) ? names[f] : "unknown";
}

const char *
srnic_icrc_fold_why(void)
{
#ifdef RTE_ARCH_X86_64
	switch (icrc_blk_cpu()) {
	case SRNIC_ICRC_FOLD_NONE:
		return "no PCLMULQDQ or SSE4.1";
	case SRNIC_ICRC_FOLD_SSE:
		/* CPUID's bit alone (DPDK's flag) against libgcc's, which
		 * also asks XCR0 whether the OS saves the YMM state */
		return rte_cpu_get_flag_enabled(RTE_CPUFLAG_AVX) > 0 ? "no OS AVX state" : "no AVX";
	case SRNIC_ICRC_FOLD_AVX:
		break;
	}
	return "AVX, its state saved by the OS";
#else
	return "not x86-64";
#endif
}

enum srnic_icrc_fold
srnic_icrc_fold_best(void)
{
	return icrc_blk_cpu();
}

enum srnic_icrc_fold
srnic_icrc_fold_get(void)
{
	return (enum srnic_icrc_fold)icrc_blk_mode;
}

int
srnic_icrc_fold_force(enum srnic_icrc_fold f)
{
	if ((unsigned int)f > (unsigned int)icrc_blk_cpu())
		return -ENOTSUP;
	icrc_blk_mode = (uint8_t)f;
	return 0;
}

/* The ICRC the inline fold gives over the flat len bytes at l3 (at least
 * the headers' length), for the unit test; -1 when no fold runs. The caller
 * guarantees ICRC_BLK_BEHIND readable bytes before l3 and len <= the inline
 * maximum. */
int64_t
srnic_icrc_blk_flat(const uint8_t *l3, uint32_t len, uint8_t ip_ver)
{
	if (icrc_blk_mode == SRNIC_ICRC_FOLD_NONE || len > ICRC_BLK_MAX_LEN ||
	    len < (ip_ver == 4 ? ICRC_HL4 : ICRC_HL6))
		return -1;
	if (icrc_blk_mode == SRNIC_ICRC_FOLD_AVX)
		return icrc_blk_crc_avx(l3, len, ip_ver != 4);
	return icrc_blk_crc_sse(l3, len, ip_ver != 4);
}

uint32_t
srnic_icrc_compute_flat(const uint8_t *l3, uint32_t len, uint8_t ip_ver)
{
	uint32_t hl = ip_ver == 4 ? ICRC_HL4 : ICRC_HL6;

	/* no room for the masked headers: 0, as srnic_icrc_compute() */
	if (unlikely(len < hl))
		return 0;
	return crc32_gzip_refl(icrc_seed(l3, ip_ver), l3, len);
}

/* The ICRC over len bytes from l3_off; *end_seg / *end_off get where the
 * byte after them is (*end_seg NULL past the chain or on a short one). */
static uint32_t
icrc_walk(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len, uint8_t ip_ver,
	  const struct rte_mbuf **end_seg, uint32_t *end_off)
{
	uint32_t hl = ip_ver == 4 ? ICRC_HL4 : ICRC_HL6;
	const struct rte_mbuf *seg = m;
	uint32_t crc, corr, off = l3_off, left = len;

	*end_seg = NULL;
	*end_off = 0;

	/* flat packets took the API entries' one-call paths; what comes here
	 * is a chain (or, rarely, a flat packet whose stored ICRC is in the
	 * next segment: the loop below does it in one call too) */
	if (unlikely(len < hl))
		return 0;
	while (seg != NULL && off >= seg->data_len) {
		off -= seg->data_len;
		seg = seg->next;
	}
	if (unlikely(seg == NULL))
		return 0;
	if (likely(seg->data_len - off > hl)) {
		/* headers and more in one segment (a received packet): one
		 * call over both, from the corrected seed */
		crc = icrc_seed(rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), ip_ver);
	} else {
		/* the headers end their segment (the zero-copy send chain) or
		 * straddle two: a call over the headers alone, with the
		 * correction computed meanwhile and XORed in after; the seed
		 * would put the lookups in front of that short call */
		uint8_t flat[ICRC_MASKED_MAX];
		const uint8_t *h = rte_pktmbuf_read(m, l3_off, hl, flat);

		if (unlikely(h == NULL))
			return 0;
		corr = icrc_corr(h, ip_ver, icrc_tab.fwd4, icrc_tab.fwd6);
		/* have it ready before the call, not summed after it */
		__asm__("" : "+r"(corr));
		crc = crc32_gzip_refl(ICRC_PSEUDO_HDR_CRC, h, hl) ^ corr;
		off += hl;
		left -= hl;
		while (seg != NULL && off >= seg->data_len) {
			off -= seg->data_len;
			seg = seg->next;
		}
	}
	while (left > 0 && seg != NULL) {
		uint32_t n = RTE_MIN((uint32_t)seg->data_len - off, left);

		crc = crc32_gzip_refl(crc, rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n);
		left -= n;
		if (left == 0) {
			*end_seg = seg;
			*end_off = off + n;
			return crc;
		}
		off = 0;
		seg = seg->next;
	}
	*end_seg = seg;
	*end_off = off;
	return crc;
}

uint32_t
srnic_icrc_compute(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len, uint8_t ip_ver)
{
	const struct rte_mbuf *seg;
	uint32_t off, crc;

	/* a flat packet (a request, an ACK): one call, no walk */
	if (likely(l3_off + len <= m->data_len)) {
		const uint8_t *l3 = rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off);

		if (likely(len >= (ip_ver == 4 ? ICRC_HL4 : ICRC_HL6)) &&
		    likely(icrc_blk_try(m, l3_off, l3, len, ip_ver != 4, &crc)))
			return crc;
		return srnic_icrc_compute_flat(l3, len, ip_ver);
	}
	return icrc_walk(m, l3_off, len, ip_ver, &seg, &off);
}

bool
srnic_icrc_check(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len, uint8_t ip_ver)
{
	const struct rte_mbuf *seg;
	uint32_t off, icrc;
	uint8_t tmp[SRNIC_ICRC_LEN];
	const uint8_t *p;

	if (unlikely(len < (ip_ver == 4 ? ICRC_HL4 : ICRC_HL6)))
		return false;
	if (likely(l3_off + len + SRNIC_ICRC_LEN <= m->data_len)) {
		/* flat, the stored ICRC too (a received request, any copied
		 * frame): one call, no walk (srnic_icrc_compute_flat()'s body
		 * without its length check, done above: calling it costs ~15
		 * instructions per packet, measured) */
		p = rte_pktmbuf_mtod_offset(m, const uint8_t *, l3_off);
		if (likely(icrc_blk_try(m, l3_off, p, len, ip_ver != 4, &icrc)))
			return icrc == srnic_icrc_load(p + len);
		return crc32_gzip_refl(icrc_seed(p, ip_ver), p, len) == srnic_icrc_load(p + len);
	}
	icrc = icrc_walk(m, l3_off, len, ip_ver, &seg, &off);
	/* the stored ICRC follows where the walk ended: no second walk */
	if (seg != NULL && off == seg->data_len) {
		seg = seg->next;
		off = 0;
	}
	if (likely(seg != NULL && off + SRNIC_ICRC_LEN <= seg->data_len))
		p = rte_pktmbuf_mtod_offset(seg, const uint8_t *, off);
	else
		p = rte_pktmbuf_read(m, l3_off + len, SRNIC_ICRC_LEN, tmp);
	if (unlikely(p == NULL))
		return false;
	return icrc == srnic_icrc_load(p);
}
