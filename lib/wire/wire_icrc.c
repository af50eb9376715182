/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC (IBTA Annex A17.3.3): CRC-32 (IEEE, reflected) over a pseudo header of
 * 8 bytes of 0xFF, then IP, UDP, BTH with the fields a router may change set
 * to ones, then the rest of the packet through the pad. ISA-L's
 * crc32_gzip_refl() has zlib's convention (pass the previous result to
 * continue), so a chain of segments is one running CRC with no copy.
 */
#include <isa-l/crc.h>

#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_udp.h>

#include "srnic_pkt.h"

/* crc32(0, 8 x 0xFF): the CRC state after the pseudo header. rxe keeps the
 * uninverted register, 0xdebb20e3 == ~0x2144df1c. */
#define ICRC_PSEUDO_HDR_CRC 0x2144df1cu

#define ICRC_MASKED_MAX (sizeof(struct rte_ipv6_hdr) + sizeof(struct rte_udp_hdr) + SRNIC_BTH_LEN)

/* Copy IP+UDP+BTH, set the variant fields to ones; returns the length. */
static uint32_t
icrc_masked_hdr(const uint8_t *l3, uint8_t ip_ver, uint8_t *out)
{
	uint32_t iplen = ip_ver == 4 ? sizeof(struct rte_ipv4_hdr) : sizeof(struct rte_ipv6_hdr);
	uint32_t n = iplen + sizeof(struct rte_udp_hdr) + SRNIC_BTH_LEN;
	uint8_t *udp = out + iplen;

	memcpy(out, l3, n);
	if (ip_ver == 4) {
		out[1] = 0xff;              /* TOS */
		out[8] = 0xff;              /* TTL */
		out[10] = out[11] = 0xff;   /* header checksum */
	} else {
		out[0] |= 0x0f;             /* traffic class (high nibble) */
		out[1] = out[2] = out[3] = 0xff; /* traffic class, flow label */
		out[7] = 0xff;              /* hop limit */
	}
	udp[6] = udp[7] = 0xff;             /* UDP checksum */
	udp[8 + 4] = 0xff;                  /* BTH FECN, BECN, reserved */
	return n;
}

uint32_t
srnic_icrc_compute_flat(const uint8_t *l3, uint32_t len, uint8_t ip_ver)
{
	uint8_t hdr[ICRC_MASKED_MAX];
	uint32_t n = (ip_ver == 4 ? sizeof(struct rte_ipv4_hdr) : sizeof(struct rte_ipv6_hdr)) +
		     sizeof(struct rte_udp_hdr) + SRNIC_BTH_LEN;
	uint32_t crc;

	/* no room for the masked headers: 0, as srnic_icrc_compute() */
	if (unlikely(len < n))
		return 0;
	icrc_masked_hdr(l3, ip_ver, hdr);
	crc = crc32_gzip_refl(ICRC_PSEUDO_HDR_CRC, hdr, n);
	return crc32_gzip_refl(crc, l3 + n, len - n);
}

uint32_t
srnic_icrc_compute(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len, uint8_t ip_ver)
{
	uint8_t hdr[ICRC_MASKED_MAX];
	uint8_t flat[ICRC_MASKED_MAX];
	uint32_t hl = (ip_ver == 4 ? sizeof(struct rte_ipv4_hdr) : sizeof(struct rte_ipv6_hdr)) +
		      sizeof(struct rte_udp_hdr) + SRNIC_BTH_LEN;
	const uint8_t *l3 = rte_pktmbuf_read(m, l3_off, hl, flat);
	uint32_t crc, off, left;
	const struct rte_mbuf *seg = m;

	if (unlikely(l3 == NULL || len < hl))
		return 0;
	icrc_masked_hdr(l3, ip_ver, hdr);
	crc = crc32_gzip_refl(ICRC_PSEUDO_HDR_CRC, hdr, hl);

	off = l3_off + hl;
	left = len - hl;
	while (seg != NULL && off >= seg->data_len) {
		off -= seg->data_len;
		seg = seg->next;
	}
	while (left > 0 && seg != NULL) {
		uint32_t n = RTE_MIN((uint32_t)seg->data_len - off, left);

		crc = crc32_gzip_refl(crc, rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n);
		left -= n;
		off = 0;
		seg = seg->next;
	}
	return crc;
}
