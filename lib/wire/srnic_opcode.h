/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_OPCODE_H
#define SRNIC_OPCODE_H

/**
 * @file
 * The one BTH opcode table (IBTA Vol 1 table 38, Annex A17 for CNP; IBTA
 * 1.5's FLUSH 0x1C and ATOMIC WRITE 0x1D).
 *
 * Indexed by the 8-bit BTH opcode. For each opcode: which headers follow
 * the BTH and at which offset, whether a payload may follow, the packet's
 * place in its message and its operation class. Receive checks become bit
 * tests; an opcode whose mask is 0 is invalid.
 */

#include <stdint.h>

#include "srnic_hdr.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Headers after the BTH, in wire order. */
enum srnic_hdr_id {
	SRNIC_HDR_DETH,
	SRNIC_HDR_RETH,
	SRNIC_HDR_ATMETH,
	SRNIC_HDR_AETH,
	SRNIC_HDR_ATMACK,
	SRNIC_HDR_IMMDT,
	SRNIC_HDR_IETH,
	SRNIC_HDR_CNP_RSVD,
	SRNIC_HDR_FETH,    /* FLUSH's, before its RETH on the wire (IBTA 1.5) */
	SRNIC_HDR_COUNT
};

/** Opcode mask bits. The first SRNIC_HDR_COUNT bits are the headers. */
#define SRNIC_OPM_DETH (1u << SRNIC_HDR_DETH)
#define SRNIC_OPM_RETH (1u << SRNIC_HDR_RETH)
#define SRNIC_OPM_ATMETH (1u << SRNIC_HDR_ATMETH)
#define SRNIC_OPM_AETH (1u << SRNIC_HDR_AETH)
#define SRNIC_OPM_ATMACK (1u << SRNIC_HDR_ATMACK)
#define SRNIC_OPM_IMMDT (1u << SRNIC_HDR_IMMDT)
#define SRNIC_OPM_IETH (1u << SRNIC_HDR_IETH)
#define SRNIC_OPM_CNP_RSVD (1u << SRNIC_HDR_CNP_RSVD)
#define SRNIC_OPM_FETH (1u << SRNIC_HDR_FETH)
#define SRNIC_OPM_PAYLOAD (1u << 9)  /**< may carry payload */
#define SRNIC_OPM_REQ (1u << 10)     /**< requester -> responder */
#define SRNIC_OPM_RESP (1u << 11)    /**< responder -> requester */
#define SRNIC_OPM_FIRST (1u << 12)   /**< first packet of a message */
#define SRNIC_OPM_MIDDLE (1u << 13)
#define SRNIC_OPM_LAST (1u << 14)    /**< last packet of a message */
#define SRNIC_OPM_SEND (1u << 15)
#define SRNIC_OPM_WRITE (1u << 16)
#define SRNIC_OPM_READ (1u << 17)    /**< read request or read response */
#define SRNIC_OPM_ATOMIC (1u << 18)  /**< atomic request or atomic ack */
#define SRNIC_OPM_ACK (1u << 19)     /**< ACKNOWLEDGE or ATOMIC ACKNOWLEDGE */
#define SRNIC_OPM_RECV (1u << 20)    /**< consumes a receive WQE */
#define SRNIC_OPM_COMP (1u << 21)    /**< ends a message that completes a receive WQE */
#define SRNIC_OPM_INV (1u << 22)     /**< carries an R_Key to invalidate */
#define SRNIC_OPM_RC (1u << 23)
#define SRNIC_OPM_UC (1u << 24)
#define SRNIC_OPM_UD (1u << 25)
#define SRNIC_OPM_CNP (1u << 26)
#define SRNIC_OPM_ATOMIC_WRITE (1u << 27) /**< ATOMIC WRITE: RETH + 8 bytes, one store */
#define SRNIC_OPM_FLUSH (1u << 28)   /**< FLUSH: FETH + RETH, no payload */
#define SRNIC_OPM_ONLY (SRNIC_OPM_FIRST | SRNIC_OPM_LAST)
#define SRNIC_OPM_HDRS ((1u << SRNIC_HDR_COUNT) - 1)

/** BTH opcodes (transport in bits 7-5, operation in 4-0). */
enum srnic_opcode {
	SRNIC_OP_RC_SEND_FIRST = 0x00,
	SRNIC_OP_RC_SEND_MIDDLE = 0x01,
	SRNIC_OP_RC_SEND_LAST = 0x02,
	SRNIC_OP_RC_SEND_LAST_IMM = 0x03,
	SRNIC_OP_RC_SEND_ONLY = 0x04,
	SRNIC_OP_RC_SEND_ONLY_IMM = 0x05,
	SRNIC_OP_RC_WRITE_FIRST = 0x06,
	SRNIC_OP_RC_WRITE_MIDDLE = 0x07,
	SRNIC_OP_RC_WRITE_LAST = 0x08,
	SRNIC_OP_RC_WRITE_LAST_IMM = 0x09,
	SRNIC_OP_RC_WRITE_ONLY = 0x0A,
	SRNIC_OP_RC_WRITE_ONLY_IMM = 0x0B,
	SRNIC_OP_RC_READ_REQ = 0x0C,
	SRNIC_OP_RC_READ_RESP_FIRST = 0x0D,
	SRNIC_OP_RC_READ_RESP_MIDDLE = 0x0E,
	SRNIC_OP_RC_READ_RESP_LAST = 0x0F,
	SRNIC_OP_RC_READ_RESP_ONLY = 0x10,
	SRNIC_OP_RC_ACK = 0x11,
	SRNIC_OP_RC_ATOMIC_ACK = 0x12,
	SRNIC_OP_RC_CMP_SWAP = 0x13,
	SRNIC_OP_RC_FETCH_ADD = 0x14,
	SRNIC_OP_RC_SEND_LAST_INV = 0x16,
	SRNIC_OP_RC_SEND_ONLY_INV = 0x17,
	SRNIC_OP_RC_FLUSH = 0x1C,
	SRNIC_OP_RC_ATOMIC_WRITE = 0x1D,
	SRNIC_OP_UC_SEND_FIRST = 0x20,
	SRNIC_OP_UC_SEND_MIDDLE = 0x21,
	SRNIC_OP_UC_SEND_LAST = 0x22,
	SRNIC_OP_UC_SEND_LAST_IMM = 0x23,
	SRNIC_OP_UC_SEND_ONLY = 0x24,
	SRNIC_OP_UC_SEND_ONLY_IMM = 0x25,
	SRNIC_OP_UC_WRITE_FIRST = 0x26,
	SRNIC_OP_UC_WRITE_MIDDLE = 0x27,
	SRNIC_OP_UC_WRITE_LAST = 0x28,
	SRNIC_OP_UC_WRITE_LAST_IMM = 0x29,
	SRNIC_OP_UC_WRITE_ONLY = 0x2A,
	SRNIC_OP_UC_WRITE_ONLY_IMM = 0x2B,
	SRNIC_OP_UD_SEND_ONLY = 0x64,
	SRNIC_OP_UD_SEND_ONLY_IMM = 0x65,
	SRNIC_OP_CNP = 0x81,
};

/** What the table knows of one opcode. */
struct srnic_opcode_info {
	const char *name;     /**< e.g. "RC_READ_RESPONSE_FIRST"; NULL if invalid */
	uint32_t mask;        /**< SRNIC_OPM_* bits; 0 if invalid */
	uint8_t hdr_len;      /**< BTH + extension headers, bytes */
	uint8_t offset[SRNIC_HDR_COUNT]; /**< header offsets from the BTH start */
};

extern const struct srnic_opcode_info srnic_opcode_table[256];

static inline const struct srnic_opcode_info *
srnic_opcode_info(uint8_t opcode)
{
	return &srnic_opcode_table[opcode];
}

static inline uint32_t
srnic_opcode_mask(uint8_t opcode)
{
	return srnic_opcode_table[opcode].mask;
}

/** Name of an opcode, "INVALID" for one the table does not know. */
const char *srnic_opcode_name(uint8_t opcode);

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_OPCODE_H */
