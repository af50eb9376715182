/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The opcode table. Offsets are computed at compile time from the mask, in
 * the wire order of the extension headers: DETH, RETH, AtomicETH, AETH,
 * AtomicAckETH, ImmDt, IETH (IBTA 9.2, table 38); FLUSH's FETH comes
 * between the BTH (DETH) and its RETH (IBTA 1.5, as rxe's offsets).
 */
#include "srnic_opcode.h"

#define SZ(m, bit, len) (((m) & (bit)) ? (len) : 0)
#define OFF_DETH(m) SRNIC_BTH_LEN
#define OFF_FETH(m) (OFF_DETH(m) + SZ(m, SRNIC_OPM_DETH, SRNIC_DETH_LEN))
#define OFF_RETH(m) (OFF_FETH(m) + SZ(m, SRNIC_OPM_FETH, SRNIC_FETH_LEN))
#define OFF_ATMETH(m) (OFF_RETH(m) + SZ(m, SRNIC_OPM_RETH, SRNIC_RETH_LEN))
#define OFF_AETH(m) (OFF_ATMETH(m) + SZ(m, SRNIC_OPM_ATMETH, SRNIC_ATMETH_LEN))
#define OFF_ATMACK(m) (OFF_AETH(m) + SZ(m, SRNIC_OPM_AETH, SRNIC_AETH_LEN))
#define OFF_IMMDT(m) (OFF_ATMACK(m) + SZ(m, SRNIC_OPM_ATMACK, SRNIC_ATMACK_LEN))
#define OFF_IETH(m) (OFF_IMMDT(m) + SZ(m, SRNIC_OPM_IMMDT, SRNIC_IMMDT_LEN))
#define OFF_CNP(m) (OFF_IETH(m) + SZ(m, SRNIC_OPM_IETH, SRNIC_IETH_LEN))
#define HDR_LEN(m) (OFF_CNP(m) + SZ(m, SRNIC_OPM_CNP_RSVD, SRNIC_CNP_RSVD_LEN))

#define OP(code, nm, m) \
	[code] = { \
		.name = nm, \
		.mask = (m), \
		.hdr_len = HDR_LEN(m), \
		.offset = { \
			[SRNIC_HDR_DETH] = OFF_DETH(m), \
			[SRNIC_HDR_RETH] = OFF_RETH(m), \
			[SRNIC_HDR_ATMETH] = OFF_ATMETH(m), \
			[SRNIC_HDR_AETH] = OFF_AETH(m), \
			[SRNIC_HDR_ATMACK] = OFF_ATMACK(m), \
			[SRNIC_HDR_IMMDT] = OFF_IMMDT(m), \
			[SRNIC_HDR_IETH] = OFF_IETH(m), \
			[SRNIC_HDR_CNP_RSVD] = OFF_CNP(m), \
			[SRNIC_HDR_FETH] = OFF_FETH(m), \
		}, \
	}

#define RC SRNIC_OPM_RC
#define UC SRNIC_OPM_UC
#define UD SRNIC_OPM_UD
#define REQ SRNIC_OPM_REQ
#define RESP SRNIC_OPM_RESP
#define PAY SRNIC_OPM_PAYLOAD
#define FIRST SRNIC_OPM_FIRST
#define MIDDLE SRNIC_OPM_MIDDLE
#define LAST SRNIC_OPM_LAST
#define ONLY SRNIC_OPM_ONLY
#define SEND (SRNIC_OPM_SEND | SRNIC_OPM_RECV)
#define WRITE SRNIC_OPM_WRITE
#define READ SRNIC_OPM_READ
#define ATOMIC SRNIC_OPM_ATOMIC
#define COMP SRNIC_OPM_COMP
#define RECV SRNIC_OPM_RECV
#define IMM SRNIC_OPM_IMMDT
#define RETH SRNIC_OPM_RETH
#define AETH SRNIC_OPM_AETH

/* The SEND and WRITE families, shared by RC and UC (UC = RC + 0x20). */
#define SEND_WRITE_OPS(T, base, pfx) \
	OP(base + 0x00, pfx "SEND_FIRST", T | REQ | PAY | SEND | FIRST), \
	OP(base + 0x01, pfx "SEND_MIDDLE", T | REQ | PAY | SEND | MIDDLE), \
	OP(base + 0x02, pfx "SEND_LAST", T | REQ | PAY | SEND | LAST | COMP), \
	OP(base + 0x03, pfx "SEND_LAST_WITH_IMMEDIATE", T | REQ | PAY | SEND | LAST | COMP | IMM), \
	OP(base + 0x04, pfx "SEND_ONLY", T | REQ | PAY | SEND | ONLY | COMP), \
	OP(base + 0x05, pfx "SEND_ONLY_WITH_IMMEDIATE", T | REQ | PAY | SEND | ONLY | COMP | IMM), \
	OP(base + 0x06, pfx "RDMA_WRITE_FIRST", T | REQ | PAY | WRITE | FIRST | RETH), \
	OP(base + 0x07, pfx "RDMA_WRITE_MIDDLE", T | REQ | PAY | WRITE | MIDDLE), \
	OP(base + 0x08, pfx "RDMA_WRITE_LAST", T | REQ | PAY | WRITE | LAST), \
	OP(base + 0x09, pfx "RDMA_WRITE_LAST_WITH_IMMEDIATE", \
	   T | REQ | PAY | WRITE | LAST | IMM | RECV | COMP), \
	OP(base + 0x0A, pfx "RDMA_WRITE_ONLY", T | REQ | PAY | WRITE | ONLY | RETH), \
	OP(base + 0x0B, pfx "RDMA_WRITE_ONLY_WITH_IMMEDIATE", \
	   T | REQ | PAY | WRITE | ONLY | RETH | IMM | RECV | COMP)

const struct srnic_opcode_info srnic_opcode_table[256] = {
	SEND_WRITE_OPS(RC, 0x00, "RC_"),
	OP(0x0C, "RC_RDMA_READ_REQUEST", RC | REQ | READ | ONLY | RETH),
	OP(0x0D, "RC_RDMA_READ_RESPONSE_FIRST", RC | RESP | PAY | READ | FIRST | AETH),
	OP(0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", RC | RESP | PAY | READ | MIDDLE),
	OP(0x0F, "RC_RDMA_READ_RESPONSE_LAST", RC | RESP | PAY | READ | LAST | AETH),
	OP(0x10, "RC_RDMA_READ_RESPONSE_ONLY", RC | RESP | PAY | READ | ONLY | AETH),
	OP(0x11, "RC_ACKNOWLEDGE", RC | RESP | SRNIC_OPM_ACK | ONLY | AETH),
	OP(0x12, "RC_ATOMIC_ACKNOWLEDGE",
	   RC | RESP | SRNIC_OPM_ACK | ATOMIC | ONLY | AETH | SRNIC_OPM_ATMACK),
	OP(0x13, "RC_COMPARE_SWAP", RC | REQ | ATOMIC | ONLY | SRNIC_OPM_ATMETH),
	OP(0x14, "RC_FETCH_ADD", RC | REQ | ATOMIC | ONLY | SRNIC_OPM_ATMETH),
	OP(0x16, "RC_SEND_LAST_WITH_INVALIDATE",
	   RC | REQ | PAY | SEND | LAST | COMP | SRNIC_OPM_INV | SRNIC_OPM_IETH),
	OP(0x17, "RC_SEND_ONLY_WITH_INVALIDATE",
	   RC | REQ | PAY | SEND | ONLY | COMP | SRNIC_OPM_INV | SRNIC_OPM_IETH),
	/* IBTA 1.5: both answered by a zero-length RDMA READ RESPONSE ONLY
	 * (as rxe's send_read_response_ack()), so both take a READ/atomic
	 * resource of the responder */
	OP(0x1C, "RC_FLUSH", RC | REQ | ONLY | SRNIC_OPM_FLUSH | SRNIC_OPM_FETH | RETH),
	OP(0x1D, "RC_ATOMIC_WRITE", RC | REQ | PAY | ONLY | SRNIC_OPM_ATOMIC_WRITE | RETH),
	SEND_WRITE_OPS(UC, 0x20, "UC_"),
	OP(0x64, "UD_SEND_ONLY", UD | REQ | PAY | SEND | ONLY | COMP | SRNIC_OPM_DETH),
	OP(0x65, "UD_SEND_ONLY_WITH_IMMEDIATE",
	   UD | REQ | PAY | SEND | ONLY | COMP | IMM | SRNIC_OPM_DETH),
	OP(0x81, "CNP", SRNIC_OPM_CNP | SRNIC_OPM_CNP_RSVD),
};

const char *
srnic_opcode_name(uint8_t opcode)
{
	const char *n = srnic_opcode_table[opcode].name;

	return n != NULL ? n : "INVALID";
}
