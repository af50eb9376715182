/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire layer's functions for its own unit tests: not installed, not
 * exported from libsrnic.so (tests link the layer statically).
 */
#ifndef SRNIC_WIRE_INTERNAL_H
#define SRNIC_WIRE_INTERNAL_H

#include <stdint.h>

/**
 * The inline PCLMULQDQ fold that srnic_icrc_compute() and srnic_icrc_check()
 * use on flat packets of up to 240 covered bytes, over len bytes at l3 (for
 * the unit tests: it reads 23 bytes before l3, which must be readable).
 * Returns the ICRC, or -1 when this CPU lacks PCLMULQDQ / SSE4.1, len is
 * below the headers' length or above the inline maximum.
 */
int64_t srnic_icrc_blk_flat(const uint8_t *l3, uint32_t len, uint8_t ip_ver);

#endif /* SRNIC_WIRE_INTERNAL_H */
