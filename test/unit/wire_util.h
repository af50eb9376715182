/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_WIRE_UTIL_H
#define SRNIC_TEST_WIRE_UTIL_H

/**
 * @file
 * Helpers shared by the wire unit tests. Everything that serves as a
 * reference (the CRC, the ICRC masking, the header layouts) is written
 * here from /work/shared/ROCEV2.md and IBTA Annex A17, independently of
 * lib/wire, so that the tests do not check srnic against itself.
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "srnic_wire.h"

/**
 * The reference ICRC (srnic_ref_icrc() in test/common/test_ref.h), asserting
 * that len holds the IP, UDP and BTH headers.
 */
uint32_t wt_ref_icrc(const uint8_t *l3, uint32_t len, int ip_ver);

/** Little-endian load of a stored ICRC. */
static inline uint32_t
wt_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

/** Big-endian loads written out byte by byte (no srnic_ld*). */
static inline uint64_t
wt_be(const uint8_t *p, unsigned int n)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/** The route the tests build with: IPv4 or IPv6, with or without VLAN. */
void wt_route(struct srnic_route *r, int ip_ver, bool vlan);

/** Offsets of a flat Ethernet frame: returns false if not IPv4/IPv6. */
struct wt_layout {
	uint32_t l3;     /**< IP header */
	uint32_t l4;     /**< UDP header */
	uint32_t bth;    /**< BTH */
	int ip_ver;
};
bool wt_layout_of(const uint8_t *f, uint32_t len, struct wt_layout *lo);

/**
 * After a test mutated a flat frame of wire length len (pkt_len minus any
 * Ethernet padding): rewrite the IPv4 header checksum, then the ICRC (the
 * last 4 bytes), both with the reference code, so that only the intended
 * defect remains. Uses the IP/UDP lengths as they are in the frame.
 */
void wt_refresh(uint8_t *f, uint32_t len);

/** Rewrite only the IPv4 header checksum (no-op for IPv6). */
void wt_fix_ipcsum(uint8_t *f);

/**
 * Parse a copy of a flat frame held in external buffers of exactly the
 * right size (malloc'd, so AddressSanitizer sees any read past the frame
 * or past a segment): one segment per seg_lens entry (0 allowed), the
 * remaining bytes in a last one. On SRNIC_PARSE_OK, also checks the result
 * is self-consistent (offsets, lengths, payload copy, ICRC over the chain).
 * *out (optional) keeps the decoded fields; its pointers are cleared.
 */
enum srnic_parse_err wt_parse_segs(const uint8_t *f, uint32_t len, const uint32_t *seg_lens,
				   unsigned int n, unsigned int flags, struct srnic_pkt *out);

/** wt_parse_segs() with one segment. */
enum srnic_parse_err wt_parse_flat(const uint8_t *f, uint32_t len, unsigned int flags,
				   struct srnic_pkt *out);

/** The test mbuf pool (srnic_test_pool()), asserted non-NULL. */
struct rte_mempool *wt_pool(void);

/** EAL up for a test binary, asserted. */
void wt_eal_init(const char *name);

#endif /* SRNIC_TEST_WIRE_UTIL_H */
