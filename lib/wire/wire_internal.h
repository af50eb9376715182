/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire layer's functions for its own unit tests: not installed, not
 * exported from libsrnic.so (tests link the layer statically).
 */
#ifndef SRNIC_WIRE_INTERNAL_H
#define SRNIC_WIRE_INTERNAL_H

#include <stdint.h>

/** Bytes before l3 the inline fold reads (srnic_icrc_blk_flat()) */
#define SRNIC_ICRC_BLK_BEHIND 19

/** The ICRC's ways over small flat packets, each CPU's best last. */
enum srnic_icrc_fold {
	/** no fold: ISA-L's calls (no PCLMULQDQ / SSE4.1, not x86-64) */
	SRNIC_ICRC_FOLD_NONE,
	/** the inline fold in legacy SSE encodings */
	SRNIC_ICRC_FOLD_SSE,
	/** the same in VEX encodings: the CPU has AVX and the OS saves its
	 * state (XCR0) */
	SRNIC_ICRC_FOLD_AVX,
};

/** The best fold this CPU and OS can run: what start-up chose. */
enum srnic_icrc_fold srnic_icrc_fold_best(void);

/** f's name for logs and telemetry: "ISA-L", "SSE" or "VEX". */
const char *srnic_icrc_fold_name(enum srnic_icrc_fold f);

/** Why start-up chose srnic_icrc_fold_best(): "no OS AVX state", ... */
const char *srnic_icrc_fold_why(void);

/** The fold srnic_icrc_compute() / srnic_icrc_check() use now. */
enum srnic_icrc_fold srnic_icrc_fold_get(void);

/**
 * Make srnic_icrc_compute(), srnic_icrc_check() and srnic_icrc_blk_flat()
 * use fold f (a test hook: each variant checked on one CPU; not while other
 * threads compute ICRCs). Returns 0, or -ENOTSUP if f is better than
 * srnic_icrc_fold_best().
 */
int srnic_icrc_fold_force(enum srnic_icrc_fold f);

/**
 * Flat packets srnic_icrc_compute() / srnic_icrc_check() gave ISA-L's path
 * although a fold runs and their length is in its reach: fewer than
 * SRNIC_ICRC_BLK_BEHIND bytes before l3 (headroom + l3_off). Since start-up,
 * all lcores.
 */
uint64_t srnic_icrc_fold_short(void);

/**
 * The inline PCLMULQDQ fold that srnic_icrc_compute() and srnic_icrc_check()
 * use on flat packets of up to 240 covered bytes, over len bytes at l3 (for
 * the unit tests: it reads SRNIC_ICRC_BLK_BEHIND bytes before l3, which
 * must be readable), in
 * the encoding srnic_icrc_fold_get() says. Returns the ICRC, or -1 when that is
 * SRNIC_ICRC_FOLD_NONE, len is below the headers' length or above the inline
 * maximum.
 */
int64_t srnic_icrc_blk_flat(const uint8_t *l3, uint32_t len, uint8_t ip_ver);

#endif /* SRNIC_WIRE_INTERNAL_H */
