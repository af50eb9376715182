/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_PSN_H
#define SRNIC_PSN_H

/**
 * @file
 * 24-bit packet sequence number arithmetic (IBTA 9.7.1), modulo 2^24.
 *
 * "a after b" is decided on the signed distance of the 24-bit difference,
 * so comparisons are meaningful when the two PSNs are within 2^23 of each
 * other, which the windows of the transport guarantee (C9-94).
 */

#include <stdbool.h>
#include <stdint.h>

#include "srnic_hdr.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Half the PSN space: the largest window in which order is defined. */
#define SRNIC_PSN_HALF (1u << 23)

/** (a + n) mod 2^24. */
static inline uint32_t
srnic_psn_add(uint32_t a, uint32_t n)
{
	return (a + n) & SRNIC_PSN_MASK;
}

/** Signed distance from b to a: >0 when a is after b, <0 when before. */
static inline int32_t
srnic_psn_diff(uint32_t a, uint32_t b)
{
	/* Shift the 24-bit difference into the top of an int32 and back. */
	return (int32_t)((a - b) << 8) >> 8;
}

/** <0, 0, >0 as a is before, equal to or after b. */
static inline int
srnic_psn_cmp(uint32_t a, uint32_t b)
{
	int32_t d = srnic_psn_diff(a, b);

	return (d > 0) - (d < 0);
}

/** Is psn inside [start, start + len)? len < 2^23. */
static inline bool
srnic_psn_in_window(uint32_t psn, uint32_t start, uint32_t len)
{
	return ((psn - start) & SRNIC_PSN_MASK) < len;
}

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_PSN_H */
