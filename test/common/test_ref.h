/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_REF_H
#define SRNIC_TEST_REF_H

/**
 * @file
 * Reference code shared by the wire, e2e and host tests, written from
 * /work/shared/ROCEV2.md and IBTA Annex A17 independently of lib/wire, so
 * that the tests do not check srnic against itself.
 */

#include <stddef.h>
#include <stdint.h>

/** Bitwise CRC-32 (IEEE 802.3, reflected, poly 0xEDB88320), zlib convention:
 * pass the previous result to continue, 0 to start. No table, no ISA-L. */
uint32_t srnic_ref_crc32(uint32_t crc, const uint8_t *buf, size_t len);

/**
 * Reference ICRC of a flat RoCEv2 packet starting at its IP header; len
 * covers IP .. pad (not the ICRC) and must hold the IP, UDP and BTH headers.
 * Masks per ROCEV2.md: 8 x 0xFF prefix; IPv4 TOS, TTL, checksum; IPv6
 * traffic class, flow label, hop limit; UDP checksum; BTH byte 4.
 */
uint32_t srnic_ref_icrc(const uint8_t *l3, uint32_t len, int ip_ver);

/** Headers the ICRC covers before the payload: IP, UDP and BTH. */
static inline uint32_t
srnic_ref_icrc_hdr_len(int ip_ver)
{
	return (ip_ver == 4 ? 20 : 40) + 8 + 12;
}

/**
 * Internet checksum (RFC 1071), written here rather than taken from
 * lib/wire: add the big-endian 16-bit words of p[0..len) to the running
 * one's-complement sum acc (0 to start; an odd last byte is padded with a
 * zero byte, so only the last piece may have an odd length). The result is
 * not folded; pass it on, or to srnic_ref_cksum_fold().
 */
uint32_t srnic_ref_sum16(uint32_t acc, const uint8_t *p, uint32_t len);

/** Fold the carries of acc into 16 bits and complement: the checksum to
 * put in a header, or 0 when summed over data holding a correct one. */
uint16_t srnic_ref_cksum_fold(uint32_t acc);

/** Fill with a pseudo-random pattern depending on seed. */
void srnic_test_fill(void *buf, size_t len, uint32_t seed);

#endif
