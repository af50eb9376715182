/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reference code for the tests, written from ROCEV2.md and IBTA Annex
 * A17.3.3 without using lib/wire's CRC, masking or layout code.
 */
#include <string.h>

#include "test_ref.h"

uint32_t
srnic_ref_crc32(uint32_t crc, const uint8_t *buf, size_t len)
{
	size_t i;
	int b;

	crc = ~crc;
	for (i = 0; i < len; i++) {
		crc ^= buf[i];
		for (b = 0; b < 8; b++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

uint32_t
srnic_ref_icrc(const uint8_t *l3, uint32_t len, int ip_ver)
{
	static const uint8_t ones[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	uint8_t h[40 + 8 + 12];
	uint32_t iph = ip_ver == 4 ? 20 : 40;
	uint32_t n = srnic_ref_icrc_hdr_len(ip_ver);
	uint32_t crc;

	memcpy(h, l3, n);
	if (ip_ver == 4) {
		h[1] = 0xff;                    /* TOS (DSCP + ECN) */
		h[8] = 0xff;                    /* TTL */
		h[10] = 0xff;                   /* header checksum */
		h[11] = 0xff;
	} else {
		h[0] |= 0x0f;                   /* traffic class, high 4 bits */
		h[1] = 0xff;                    /* traffic class low 4, flow label high 4 */
		h[2] = 0xff;                    /* flow label */
		h[3] = 0xff;
		h[7] = 0xff;                    /* hop limit */
	}
	h[iph + 6] = 0xff;                      /* UDP checksum */
	h[iph + 7] = 0xff;
	h[iph + 8 + 4] = 0xff;                  /* BTH FECN, BECN, reserved 6 */
	crc = srnic_ref_crc32(0, ones, sizeof(ones));
	crc = srnic_ref_crc32(crc, h, n);
	return srnic_ref_crc32(crc, l3 + n, len - n);
}

uint32_t
srnic_ref_sum16(uint32_t acc, const uint8_t *p, uint32_t len)
{
	uint32_t i;

	for (i = 0; i + 1 < len; i += 2) {
		acc += (uint32_t)p[i] << 8 | p[i + 1];
		if (acc & 0x80000000u)          /* end-around carry before overflow */
			acc = (acc & 0xffff) + (acc >> 16);
	}
	if (len & 1)
		acc += (uint32_t)p[len - 1] << 8;
	return acc;
}

uint16_t
srnic_ref_cksum_fold(uint32_t acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (uint16_t)~acc;
}

void
srnic_test_fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *b = buf;
	uint32_t x = seed * 2654435761u + 12345;
	size_t i;

	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345;
		b[i] = (uint8_t)(x >> 16);
	}
}
