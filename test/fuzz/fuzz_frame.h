/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_FUZZ_FRAME_H
#define SRNIC_FUZZ_FRAME_H

/*
 * What both fuzz targets share: the input format of the RX target (a list
 * of frames, each for one side), a small PRNG for the custom mutators, and
 * the structure-aware fix-up that makes a mutated frame a well-formed
 * RoCEv2 frame again (lengths, IPv4 checksum, ICRC) and, for the RX target,
 * aims it at a live QP (addresses, QPN, PSN near the expected one, R_Key and
 * VA inside a registered region).
 *
 * RX input: records of [side (1 byte) | length (2 bytes, big endian) |
 * frame]. A record cut short ends the list; the side byte's bit 0 picks the
 * device whose RX the frame is injected into, bit 1 lets the engines poll
 * once before it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Largest frame of a record: the pair's Ethernet MTU (9000) + L2 + VLAN. */
#define FUZZ_FRAME_MAX 9018
/* Frames per RX input at most (more are ignored). */
#define FUZZ_MAX_RECORDS 16
/* Record header: side + 16-bit length. */
#define FUZZ_REC_HDR 3

struct fuzz_rec {
	uint8_t side;
	uint16_t len;
	const uint8_t *data;
};

/* Split an RX input into records; returns how many (at most max). */
unsigned int fuzz_recs_parse(const uint8_t *in, size_t len, struct fuzz_rec *r,
			     unsigned int max);

/* xorshift32: the mutators' randomness, seeded by libFuzzer's seed. */
static inline uint32_t
fuzz_rand(uint32_t *s)
{
	uint32_t x = *s != 0 ? *s : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

/* Where a frame for one side is aimed (RX target); NULL for none. */
struct fuzz_target {
	uint8_t dst_mac[6], src_mac[6];
	uint8_t dst_ip[4], src_ip[4];  /* the side's and its peer's IPv4 */
	uint32_t qpn;                  /* the side's QPN (RC) */
	uint32_t ud_qpn;               /* its UD QP: UD opcodes are aimed there */
	uint32_t uc_qpn;               /* its UC QP: UC opcodes */
	uint32_t qkey;                 /* the UD QP's Q_Key */
	uint32_t req_psn;              /* ePSN of its responder */
	uint32_t resp_psn;             /* first PSN its requester has outstanding */
	uint32_t rkey;                 /* an MR of the side with remote rights */
	uint64_t va;                   /* its start */
	uint32_t mr_len;
	uint32_t pmtu;                 /* path MTU of its QP, bytes */
};

/*
 * Make frame f (len bytes, room for cap) well formed again: Ethernet type,
 * IP version/length/protocol/checksum, UDP port and length, and the ICRC.
 * With t, also aim it at t with the probabilities of the fix-up (from the
 * PRNG). Returns the frame's new length (unchanged unless it was too short
 * for the headers, which the fix-up then leaves alone: 0 means "not
 * fixable").
 */
size_t fuzz_frame_fixup(uint8_t *f, size_t len, size_t cap, const struct fuzz_target *t,
			uint32_t *rnd);

#endif /* SRNIC_FUZZ_FRAME_H */
