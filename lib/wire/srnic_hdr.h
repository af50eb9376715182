/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_HDR_H
#define SRNIC_HDR_H

/**
 * @file
 * RoCEv2 transport header layouts and field accessors (IBTA Vol 1 ch. 9).
 *
 * Every accessor takes a pointer to the first byte of its header, hides
 * byte order and bit masks, and never assumes alignment: headers follow an
 * Ethernet header of 14 or 18 bytes, so nothing here is naturally aligned.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>

#ifdef __cplusplus
extern "C" {
#endif

/** UDP destination port of RoCEv2 (IANA). */
#define SRNIC_ROCE_UDP_PORT 4791
/** First UDP source port of the RoCEv2 entropy range (Annex A17.2.1). */
#define SRNIC_ROCE_SPORT_MIN 0xC000
#define SRNIC_FLOW_LABEL_MASK 0xFFFFFu /**< IPv6 flow label: 20 bits */

/* Header sizes in bytes. */
#define SRNIC_BTH_LEN 12
#define SRNIC_RETH_LEN 16
#define SRNIC_AETH_LEN 4
#define SRNIC_ATMETH_LEN 28
#define SRNIC_ATMACK_LEN 8
#define SRNIC_IMMDT_LEN 4
#define SRNIC_IETH_LEN 4
#define SRNIC_FETH_LEN 4
#define SRNIC_DETH_LEN 8
#define SRNIC_ICRC_LEN 4
/** CNP: BTH followed by 16 reserved bytes (Annex A17.9.3). */
#define SRNIC_CNP_RSVD_LEN 16

#define SRNIC_PKEY_DEFAULT 0xFFFF      /**< pkey index 0: the default key, full member */
#define SRNIC_PKEY_FULL_MEMBER 0x8000  /**< P_Key bit 15: full (1) or limited (0) member */
#define SRNIC_PKEY_BASE_MASK 0x7FFF    /**< P_Key bits 14-0: the partition */
#define SRNIC_QPN_MASK 0xFFFFFFu
#define SRNIC_PSN_MASK 0xFFFFFFu
#define SRNIC_MSN_MASK 0xFFFFFFu

/* ---- unaligned big-endian loads and stores ---- */

/* The compiler's byte swaps, not rte_bswap16()'s inline asm (which DPDK
 * 22.11 uses on x86 for non-constant values and the compiler cannot fold
 * into a load or store: movbe, rol). */
#if RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN
#define SRNIC_BE16(v) __builtin_bswap16(v)
#define SRNIC_BE32(v) __builtin_bswap32(v)
#define SRNIC_BE64(v) __builtin_bswap64(v)
#else
#define SRNIC_BE16(v) (v)
#define SRNIC_BE32(v) (v)
#define SRNIC_BE64(v) (v)
#endif

static inline uint16_t
srnic_ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return SRNIC_BE16(v);
}

static inline uint32_t
srnic_ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return SRNIC_BE32(v);
}

/* The low 24 bits of the big-endian word at p: a 24-bit field (QPN, PSN,
 * MSN) with the byte before it in its header (reserved bits, AckReq, the
 * syndrome), read by one load, a byte swap and a mask, not three byte
 * loads, shifts and ORs (two or three of them per packet received). */
static inline uint32_t
srnic_ld24_low(const uint8_t *p)
{
	return srnic_ld32(p) & 0xffffffu;
}

static inline uint64_t
srnic_ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return SRNIC_BE64(v);
}

static inline void
srnic_st16(uint8_t *p, uint16_t v)
{
	v = SRNIC_BE16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
srnic_st24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void
srnic_st32(uint8_t *p, uint32_t v)
{
	v = SRNIC_BE32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
srnic_st64(uint8_t *p, uint64_t v)
{
	v = SRNIC_BE64(v);
	memcpy(p, &v, sizeof(v));
}

/* The ICRC is the one little-endian field (stored as the CRC register's
 * bytes, low first). */
static inline uint32_t
srnic_icrc_load(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return rte_le_to_cpu_32(v);
}

static inline void
srnic_icrc_store(uint8_t *p, uint32_t icrc)
{
	icrc = rte_cpu_to_le_32(icrc);
	memcpy(p, &icrc, sizeof(icrc));
}

/* ---- BTH: Base Transport Header ---- */

#define SRNIC_BTH_SE 0x80
#define SRNIC_BTH_MIGREQ 0x40
#define SRNIC_BTH_PAD_SHIFT 4
#define SRNIC_BTH_PAD_MASK 0x30
#define SRNIC_BTH_TVER_MASK 0x0F
#define SRNIC_BTH_FECN 0x80
#define SRNIC_BTH_BECN 0x40
#define SRNIC_BTH_ACKREQ 0x80

static inline uint8_t srnic_bth_opcode(const uint8_t *b) { return b[0]; }
static inline bool srnic_bth_se(const uint8_t *b) { return b[1] & SRNIC_BTH_SE; }
static inline bool srnic_bth_migreq(const uint8_t *b) { return b[1] & SRNIC_BTH_MIGREQ; }
static inline uint8_t
srnic_bth_pad(const uint8_t *b)
{
	return (b[1] & SRNIC_BTH_PAD_MASK) >> SRNIC_BTH_PAD_SHIFT;
}
static inline uint8_t srnic_bth_tver(const uint8_t *b) { return b[1] & SRNIC_BTH_TVER_MASK; }
static inline uint16_t srnic_bth_pkey(const uint8_t *b) { return srnic_ld16(b + 2); }
/* IBTA 10.9 (partitioning): two P_Keys match when their partitions (low 15 bits) are
 * equal, not the invalid partition 0, and at least one is a full member
 * (two limited members may not talk). */
static inline bool
srnic_pkey_match(uint16_t a, uint16_t b)
{
	return ((a ^ b) & SRNIC_PKEY_BASE_MASK) == 0 && (a & SRNIC_PKEY_BASE_MASK) != 0 &&
	       ((a | b) & SRNIC_PKEY_FULL_MEMBER) != 0;
}
static inline bool srnic_bth_fecn(const uint8_t *b) { return b[4] & SRNIC_BTH_FECN; }
static inline bool srnic_bth_becn(const uint8_t *b) { return b[4] & SRNIC_BTH_BECN; }
static inline uint32_t srnic_bth_dqpn(const uint8_t *b) { return srnic_ld24_low(b + 4); }
static inline bool srnic_bth_ackreq(const uint8_t *b) { return b[8] & SRNIC_BTH_ACKREQ; }
static inline uint32_t srnic_bth_psn(const uint8_t *b) { return srnic_ld24_low(b + 8); }

static inline void srnic_bth_set_opcode(uint8_t *b, uint8_t op) { b[0] = op; }
static inline void
srnic_bth_set_se(uint8_t *b, bool on)
{
	b[1] = (uint8_t)((b[1] & ~SRNIC_BTH_SE) | (on ? SRNIC_BTH_SE : 0));
}
static inline void
srnic_bth_set_migreq(uint8_t *b, bool on)
{
	b[1] = (uint8_t)((b[1] & ~SRNIC_BTH_MIGREQ) | (on ? SRNIC_BTH_MIGREQ : 0));
}
static inline void
srnic_bth_set_pad(uint8_t *b, uint8_t pad)
{
	b[1] = (uint8_t)((b[1] & ~SRNIC_BTH_PAD_MASK) |
			 ((pad << SRNIC_BTH_PAD_SHIFT) & SRNIC_BTH_PAD_MASK));
}
static inline void
srnic_bth_set_tver(uint8_t *b, uint8_t v)
{
	b[1] = (uint8_t)((b[1] & ~SRNIC_BTH_TVER_MASK) | (v & SRNIC_BTH_TVER_MASK));
}
static inline void srnic_bth_set_pkey(uint8_t *b, uint16_t k) { srnic_st16(b + 2, k); }
static inline void
srnic_bth_set_fecn(uint8_t *b, bool on)
{
	b[4] = (uint8_t)((b[4] & ~SRNIC_BTH_FECN) | (on ? SRNIC_BTH_FECN : 0));
}
static inline void
srnic_bth_set_becn(uint8_t *b, bool on)
{
	b[4] = (uint8_t)((b[4] & ~SRNIC_BTH_BECN) | (on ? SRNIC_BTH_BECN : 0));
}
static inline void
srnic_bth_set_dqpn(uint8_t *b, uint32_t qpn)
{
	b[4] &= (SRNIC_BTH_FECN | SRNIC_BTH_BECN); /* reserved bits are 0 */
	srnic_st24(b + 5, qpn & SRNIC_QPN_MASK);
}
static inline void
srnic_bth_set_ackreq(uint8_t *b, bool on)
{
	b[8] = on ? SRNIC_BTH_ACKREQ : 0; /* reserved bits are 0 */
}
static inline void srnic_bth_set_psn(uint8_t *b, uint32_t psn) { srnic_st24(b + 9, psn & SRNIC_PSN_MASK); }

/* ---- RETH: RDMA Extended Transport Header ---- */
static inline uint64_t srnic_reth_va(const uint8_t *h) { return srnic_ld64(h); }
static inline uint32_t srnic_reth_rkey(const uint8_t *h) { return srnic_ld32(h + 8); }
static inline uint32_t srnic_reth_len(const uint8_t *h) { return srnic_ld32(h + 12); }
static inline void srnic_reth_set_va(uint8_t *h, uint64_t va) { srnic_st64(h, va); }
static inline void srnic_reth_set_rkey(uint8_t *h, uint32_t k) { srnic_st32(h + 8, k); }
static inline void srnic_reth_set_len(uint8_t *h, uint32_t l) { srnic_st32(h + 12, l); }

/* ---- FETH: FLUSH Extended Transport Header (IBTA 1.5) ----
 * bits 3-0 placement type (a mask: 1 global visibility, 2 persistence),
 * bits 5-4 selectivity level (0 the RETH's range, 1 the whole MR the
 * R_Key names), 31-6 reserved (0). */
#define SRNIC_FETH_PLT_MASK 0xFu
#define SRNIC_FETH_SEL_SHIFT 4
#define SRNIC_FETH_SEL_MASK 0x3u

/** FETH placement type bits (srnic.h's SRNIC_FLUSH_GLOBAL/PERSISTENT, rdma-core 45's
 * ibv_flush_type, have the same values). */
enum srnic_feth_plt {
	SRNIC_FETH_PLT_GLOBAL = 1,
	SRNIC_FETH_PLT_PERSISTENT = 2,
};

/** FETH selectivity level (srnic.h's SRNIC_FLUSH_RANGE/MR, rdma-core 45's
 * ibv_flush_level). */
enum srnic_feth_sel {
	SRNIC_FETH_SEL_RANGE = 0,
	SRNIC_FETH_SEL_MR = 1,
};

static inline uint32_t srnic_feth_plt(const uint8_t *h) { return srnic_ld32(h) & SRNIC_FETH_PLT_MASK; }
static inline uint32_t
srnic_feth_sel(const uint8_t *h)
{
	return (srnic_ld32(h) >> SRNIC_FETH_SEL_SHIFT) & SRNIC_FETH_SEL_MASK;
}
static inline void
srnic_feth_set(uint8_t *h, uint32_t plt, uint32_t sel)
{
	srnic_st32(h, (plt & SRNIC_FETH_PLT_MASK) |
		      ((sel & SRNIC_FETH_SEL_MASK) << SRNIC_FETH_SEL_SHIFT));
}

/* ---- AETH: ACK Extended Transport Header ---- */

/** AETH syndrome types (bits 6-5). */
enum srnic_aeth_type {
	SRNIC_AETH_ACK = 0,
	SRNIC_AETH_RNR_NAK = 1,
	SRNIC_AETH_RSVD = 2,
	SRNIC_AETH_NAK = 3,
};

/** NAK codes, AETH value bits when the type is NAK. */
enum srnic_nak_code {
	SRNIC_NAK_PSN_SEQ_ERR = 0,
	SRNIC_NAK_INVALID_REQ = 1,
	SRNIC_NAK_REM_ACCESS_ERR = 2,
	SRNIC_NAK_REM_OP_ERR = 3,
	SRNIC_NAK_INVALID_RD_REQ = 4,
};

/** ACK credit value meaning "credits not tracked" (what rxe sends). */
#define SRNIC_AETH_CREDIT_INVALID 0x1F

static inline uint8_t
srnic_aeth_syndrome_make(enum srnic_aeth_type t, uint8_t value)
{
	return (uint8_t)(((t & 3) << 5) | (value & 0x1F));
}

static inline uint8_t srnic_aeth_syndrome(const uint8_t *h) { return h[0]; }
static inline enum srnic_aeth_type
srnic_aeth_type(const uint8_t *h)
{
	return (enum srnic_aeth_type)((h[0] >> 5) & 3);
}
static inline uint8_t srnic_aeth_value(const uint8_t *h) { return h[0] & 0x1F; }
static inline uint32_t srnic_aeth_msn(const uint8_t *h) { return srnic_ld24_low(h); }
static inline void srnic_aeth_set_syndrome(uint8_t *h, uint8_t s) { h[0] = s; }
static inline void srnic_aeth_set_msn(uint8_t *h, uint32_t msn) { srnic_st24(h + 1, msn & SRNIC_MSN_MASK); }

/* ---- AtomicETH ---- */
static inline uint64_t srnic_atmeth_va(const uint8_t *h) { return srnic_ld64(h); }
static inline uint32_t srnic_atmeth_rkey(const uint8_t *h) { return srnic_ld32(h + 8); }
static inline uint64_t srnic_atmeth_swap_add(const uint8_t *h) { return srnic_ld64(h + 12); }
static inline uint64_t srnic_atmeth_compare(const uint8_t *h) { return srnic_ld64(h + 20); }
static inline void srnic_atmeth_set_va(uint8_t *h, uint64_t v) { srnic_st64(h, v); }
static inline void srnic_atmeth_set_rkey(uint8_t *h, uint32_t k) { srnic_st32(h + 8, k); }
static inline void srnic_atmeth_set_swap_add(uint8_t *h, uint64_t v) { srnic_st64(h + 12, v); }
static inline void srnic_atmeth_set_compare(uint8_t *h, uint64_t v) { srnic_st64(h + 20, v); }

/* ---- AtomicAckETH ---- */
static inline uint64_t srnic_atmack_orig(const uint8_t *h) { return srnic_ld64(h); }
static inline void srnic_atmack_set_orig(uint8_t *h, uint64_t v) { srnic_st64(h, v); }

/* ---- ImmDt, IETH: opaque 32-bit words kept in network order ---- */
static inline uint32_t
srnic_immdt_be(const uint8_t *h)
{
	uint32_t v;

	memcpy(&v, h, sizeof(v));
	return v; /* ibv_wc.imm_data and ibv_send_wr.imm_data are big endian */
}
static inline void srnic_immdt_set_be(uint8_t *h, uint32_t be) { memcpy(h, &be, sizeof(be)); }
static inline uint32_t srnic_ieth_rkey(const uint8_t *h) { return srnic_ld32(h); }
static inline void srnic_ieth_set_rkey(uint8_t *h, uint32_t k) { srnic_st32(h, k); }

/* ---- DETH (UD) ---- */
static inline uint32_t srnic_deth_qkey(const uint8_t *h) { return srnic_ld32(h); }
static inline uint32_t srnic_deth_sqpn(const uint8_t *h) { return srnic_ld24_low(h + 4); }
static inline void srnic_deth_set_qkey(uint8_t *h, uint32_t k) { srnic_st32(h, k); }
static inline void
srnic_deth_set_sqpn(uint8_t *h, uint32_t qpn)
{
	h[4] = 0;
	srnic_st24(h + 5, qpn & SRNIC_QPN_MASK);
}

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_HDR_H */
