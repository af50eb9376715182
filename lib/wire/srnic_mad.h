/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_MAD_H
#define SRNIC_MAD_H

/**
 * @file
 * Management datagrams (IBTA Vol 1 ch. 13.4) and the communication
 * manager's messages (ch. 12.6, tables 99-119): layouts and field
 * accessors over the 256 bytes of a MAD, as srnic_hdr.h does for the
 * transport headers (no packed bitfield structs).
 *
 * Every accessor takes a pointer to the first byte of the MAD (its common
 * header); CM fields are named by their message (srnic_cm_req_..., _rep_,
 * ...) and placed by IBTA's byte offset in the message, which follows the
 * 24-byte MAD header. A bit-packed field is given by the big-endian 32-bit
 * word it lies in (the word's byte offset), its shift from the word's
 * least significant bit and its width: the CM tables' "byte, bit" layout
 * with bit 0 the most significant (as Linux's IBA_FIELD_BLOC, whose
 * values the rdma_cm golden capture shows).
 */

#include <stdint.h>
#include <string.h>

#include "srnic_hdr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SRNIC_MAD_LEN 256          /**< every MAD (IBTA 13.4.2) */
#define SRNIC_MAD_HDR_LEN 24       /**< common MAD header */
#define SRNIC_MAD_DATA_LEN (SRNIC_MAD_LEN - SRNIC_MAD_HDR_LEN) /**< a CM message's room: 232 */

#define SRNIC_MAD_BASE_VERSION 1
#define SRNIC_MGMT_CLASS_CM 0x07   /**< communication management */
#define SRNIC_CM_CLASS_VERSION 2   /**< what Linux sends (IB_CM_CLASS_VERSION) */
#define SRNIC_MAD_METHOD_SEND 0x03 /**< CM messages are all Send()s (IBTA 12.6.1) */
#define SRNIC_MAD_METHOD_RESP 0x80 /**< method bit 7: a response */

/** CM attribute IDs (IBTA Table 98). */
enum srnic_cm_attr {
	SRNIC_CM_ATTR_CLASS_PORT_INFO = 0x0001,
	SRNIC_CM_ATTR_REQ = 0x0010,
	SRNIC_CM_ATTR_MRA = 0x0011,
	SRNIC_CM_ATTR_REJ = 0x0012,
	SRNIC_CM_ATTR_REP = 0x0013,
	SRNIC_CM_ATTR_RTU = 0x0014,
	SRNIC_CM_ATTR_DREQ = 0x0015,
	SRNIC_CM_ATTR_DREP = 0x0016,
	SRNIC_CM_ATTR_SIDR_REQ = 0x0017,
	SRNIC_CM_ATTR_SIDR_REP = 0x0018,
	SRNIC_CM_ATTR_LAP = 0x0019,
	SRNIC_CM_ATTR_APR = 0x001A,
};
/** Name of a CM attribute ("REQ", ...), "?" for others. */
const char *srnic_cm_attr_name(uint16_t attr);

/** Message MRAed / REJected (MRA and REJ byte 8, 2 bits). */
enum srnic_cm_msg_ref {
	SRNIC_CM_MSG_REQ = 0,
	SRNIC_CM_MSG_REP = 1,
	SRNIC_CM_MSG_OTHER = 2,
};

/** REQ's transport service type (2 bits). */
enum srnic_cm_transport {
	SRNIC_CM_TRANSPORT_RC = 0,
	SRNIC_CM_TRANSPORT_UC = 1,
	SRNIC_CM_TRANSPORT_RD = 2,
};

#define SRNIC_CM_LID_PERMISSIVE 0xFFFF /**< REQ path LIDs on RoCE (Linux's, the golden) */
#define SRNIC_CM_GID_LEN 16

/* Private data: offset in the message and size (IBTA 12.6). */
#define SRNIC_CM_REQ_PDATA_OFF 140
#define SRNIC_CM_REQ_PDATA_LEN 92
#define SRNIC_CM_MRA_PDATA_OFF 10
#define SRNIC_CM_MRA_PDATA_LEN 222
#define SRNIC_CM_REJ_ARI_OFF 12
#define SRNIC_CM_REJ_ARI_LEN 72
#define SRNIC_CM_REJ_PDATA_OFF 84
#define SRNIC_CM_REJ_PDATA_LEN 148
#define SRNIC_CM_REP_PDATA_OFF 36
#define SRNIC_CM_REP_PDATA_LEN 196
#define SRNIC_CM_RTU_PDATA_OFF 8
#define SRNIC_CM_RTU_PDATA_LEN 224
#define SRNIC_CM_DREQ_PDATA_OFF 12
#define SRNIC_CM_DREQ_PDATA_LEN 220
#define SRNIC_CM_DREP_PDATA_OFF 8
#define SRNIC_CM_DREP_PDATA_LEN 224
#define SRNIC_CM_SIDR_REQ_PDATA_OFF 16
#define SRNIC_CM_SIDR_REQ_PDATA_LEN 216
#define SRNIC_CM_SIDR_REP_INFO_OFF 24
#define SRNIC_CM_SIDR_REP_INFO_LEN 72
#define SRNIC_CM_SIDR_REP_PDATA_OFF 96
#define SRNIC_CM_SIDR_REP_PDATA_LEN 136

/* ---- bit fields inside big-endian 32-bit words ---- */

static inline uint32_t
srnic_mad_get_bits(const uint8_t *w, unsigned int shift, unsigned int bits)
{
	uint32_t mask = bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1;

	return (srnic_ld32(w) >> shift) & mask;
}

static inline void
srnic_mad_set_bits(uint8_t *w, unsigned int shift, unsigned int bits, uint32_t v)
{
	uint32_t mask = (bits >= 32 ? 0xFFFFFFFFu : (1u << bits) - 1) << shift;

	srnic_st32(w, (srnic_ld32(w) & ~mask) | ((v << shift) & mask));
}

/*
 * One get/set pair per field: srnic_<name>(mad) and srnic_<name>_set(mad, v).
 * SRNIC_MAD_FIELD: in the MAD header; SRNIC_CM_FIELD: in the CM message
 * (offset from the message start, after the MAD header).
 */
#define SRNIC_MAD_FIELD_AT(name, off, shift, bits) \
	static inline uint32_t \
	srnic_##name(const uint8_t *mad) \
	{ \
		return srnic_mad_get_bits(mad + (off), (shift), (bits)); \
	} \
	static inline void \
	srnic_##name##_set(uint8_t *mad, uint32_t v) \
	{ \
		srnic_mad_set_bits(mad + (off), (shift), (bits), v); \
	}
#define SRNIC_CM_FIELD(name, off, shift, bits) \
	SRNIC_MAD_FIELD_AT(name, SRNIC_MAD_HDR_LEN + (off), shift, bits)
#define SRNIC_CM_FIELD64(name, off) \
	static inline uint64_t \
	srnic_##name(const uint8_t *mad) \
	{ \
		return srnic_ld64(mad + SRNIC_MAD_HDR_LEN + (off)); \
	} \
	static inline void \
	srnic_##name##_set(uint8_t *mad, uint64_t v) \
	{ \
		srnic_st64(mad + SRNIC_MAD_HDR_LEN + (off), v); \
	}
/* Byte arrays (GIDs, private data, ARI): a pointer into the MAD. */
#define SRNIC_CM_BYTES(name, off) \
	static inline uint8_t * \
	srnic_##name(uint8_t *mad) \
	{ \
		return mad + SRNIC_MAD_HDR_LEN + (off); \
	} \
	static inline const uint8_t * \
	srnic_##name##_c(const uint8_t *mad) \
	{ \
		return mad + SRNIC_MAD_HDR_LEN + (off); \
	}

/* ---- the common MAD header (IBTA 13.4.3, Figure 145) ---- */
SRNIC_MAD_FIELD_AT(mad_base_version, 0, 24, 8)
SRNIC_MAD_FIELD_AT(mad_mgmt_class, 0, 16, 8)
SRNIC_MAD_FIELD_AT(mad_class_version, 0, 8, 8)
SRNIC_MAD_FIELD_AT(mad_method, 0, 0, 8)
SRNIC_MAD_FIELD_AT(mad_status, 4, 16, 16)
SRNIC_MAD_FIELD_AT(mad_class_specific, 4, 0, 16)
SRNIC_MAD_FIELD_AT(mad_attr_id, 16, 16, 16)
SRNIC_MAD_FIELD_AT(mad_attr_mod, 20, 0, 32)
static inline uint64_t srnic_mad_tid(const uint8_t *mad) { return srnic_ld64(mad + 8); }
static inline void srnic_mad_tid_set(uint8_t *mad, uint64_t tid) { srnic_st64(mad + 8, tid); }

/** Zero the MAD and write a CM Send() header with tid and attribute attr. */
void srnic_cm_mad_init(uint8_t *mad, uint16_t attr, uint64_t tid);

/* ---- REQ (IBTA Table 99) ---- */
SRNIC_CM_FIELD(cm_req_local_comm_id, 0, 0, 32)
SRNIC_CM_FIELD64(cm_req_service_id, 8)
SRNIC_CM_FIELD64(cm_req_local_ca_guid, 16)
SRNIC_CM_FIELD(cm_req_local_qkey, 28, 0, 32)
SRNIC_CM_FIELD(cm_req_local_qpn, 32, 8, 24)
SRNIC_CM_FIELD(cm_req_resp_resources, 32, 0, 8)
SRNIC_CM_FIELD(cm_req_local_eecn, 36, 8, 24)
SRNIC_CM_FIELD(cm_req_init_depth, 36, 0, 8)
SRNIC_CM_FIELD(cm_req_remote_eecn, 40, 8, 24)
SRNIC_CM_FIELD(cm_req_remote_cm_resp_timeout, 40, 3, 5)
SRNIC_CM_FIELD(cm_req_transport, 40, 1, 2)
SRNIC_CM_FIELD(cm_req_flow_ctrl, 40, 0, 1)
SRNIC_CM_FIELD(cm_req_starting_psn, 44, 8, 24)
SRNIC_CM_FIELD(cm_req_local_cm_resp_timeout, 44, 3, 5)
SRNIC_CM_FIELD(cm_req_retry_count, 44, 0, 3)
SRNIC_CM_FIELD(cm_req_pkey, 48, 16, 16)
SRNIC_CM_FIELD(cm_req_path_mtu, 48, 12, 4)
SRNIC_CM_FIELD(cm_req_rdc_exists, 48, 11, 1)
SRNIC_CM_FIELD(cm_req_rnr_retry, 48, 8, 3)
SRNIC_CM_FIELD(cm_req_max_cm_retries, 48, 4, 4)
SRNIC_CM_FIELD(cm_req_srq, 48, 3, 1)
SRNIC_CM_FIELD(cm_req_ext_transport, 48, 0, 3)
/* primary path: bytes 52-95; the alternate path the same 44 bytes later */
#define SRNIC_CM_REQ_PATH(which, base) \
	SRNIC_CM_FIELD(cm_req_##which##_local_lid, (base), 16, 16) \
	SRNIC_CM_FIELD(cm_req_##which##_remote_lid, (base), 0, 16) \
	SRNIC_CM_BYTES(cm_req_##which##_local_gid, (base) + 4) \
	SRNIC_CM_BYTES(cm_req_##which##_remote_gid, (base) + 20) \
	SRNIC_CM_FIELD(cm_req_##which##_flow_label, (base) + 36, 12, 20) \
	SRNIC_CM_FIELD(cm_req_##which##_packet_rate, (base) + 36, 0, 6) \
	SRNIC_CM_FIELD(cm_req_##which##_traffic_class, (base) + 40, 24, 8) \
	SRNIC_CM_FIELD(cm_req_##which##_hop_limit, (base) + 40, 16, 8) \
	SRNIC_CM_FIELD(cm_req_##which##_sl, (base) + 40, 12, 4) \
	SRNIC_CM_FIELD(cm_req_##which##_subnet_local, (base) + 40, 11, 1) \
	SRNIC_CM_FIELD(cm_req_##which##_local_ack_timeout, (base) + 40, 3, 5)
SRNIC_CM_REQ_PATH(primary, 52)
SRNIC_CM_REQ_PATH(alt, 96)
SRNIC_CM_BYTES(cm_req_pdata, SRNIC_CM_REQ_PDATA_OFF)

/* ---- MRA (Table 101) ---- */
SRNIC_CM_FIELD(cm_mra_local_comm_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_mra_remote_comm_id, 4, 0, 32)
SRNIC_CM_FIELD(cm_mra_msg_mraed, 8, 30, 2)
SRNIC_CM_FIELD(cm_mra_service_timeout, 8, 19, 5)
SRNIC_CM_BYTES(cm_mra_pdata, SRNIC_CM_MRA_PDATA_OFF)

/* ---- REJ (Table 103) ---- */
SRNIC_CM_FIELD(cm_rej_local_comm_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_rej_remote_comm_id, 4, 0, 32)
SRNIC_CM_FIELD(cm_rej_msg_rejected, 8, 30, 2)
SRNIC_CM_FIELD(cm_rej_ari_len, 8, 17, 7)
SRNIC_CM_FIELD(cm_rej_reason, 8, 0, 16)
SRNIC_CM_BYTES(cm_rej_ari, SRNIC_CM_REJ_ARI_OFF)
SRNIC_CM_BYTES(cm_rej_pdata, SRNIC_CM_REJ_PDATA_OFF)

/* ---- REP (Table 104) ---- */
SRNIC_CM_FIELD(cm_rep_local_comm_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_rep_remote_comm_id, 4, 0, 32)
SRNIC_CM_FIELD(cm_rep_local_qkey, 8, 0, 32)
SRNIC_CM_FIELD(cm_rep_local_qpn, 12, 8, 24)
SRNIC_CM_FIELD(cm_rep_local_eecn, 16, 8, 24)
SRNIC_CM_FIELD(cm_rep_starting_psn, 20, 8, 24)
SRNIC_CM_FIELD(cm_rep_resp_resources, 24, 24, 8)
SRNIC_CM_FIELD(cm_rep_init_depth, 24, 16, 8)
SRNIC_CM_FIELD(cm_rep_target_ack_delay, 24, 11, 5)
SRNIC_CM_FIELD(cm_rep_failover, 24, 9, 2)
SRNIC_CM_FIELD(cm_rep_flow_ctrl, 24, 8, 1)
SRNIC_CM_FIELD(cm_rep_rnr_retry, 24, 5, 3)
SRNIC_CM_FIELD(cm_rep_srq, 24, 4, 1)
SRNIC_CM_FIELD64(cm_rep_local_ca_guid, 28)
SRNIC_CM_BYTES(cm_rep_pdata, SRNIC_CM_REP_PDATA_OFF)

/* ---- RTU (Table 105) ---- */
SRNIC_CM_FIELD(cm_rtu_local_comm_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_rtu_remote_comm_id, 4, 0, 32)
SRNIC_CM_BYTES(cm_rtu_pdata, SRNIC_CM_RTU_PDATA_OFF)

/* ---- DREQ (Table 106) ---- */
SRNIC_CM_FIELD(cm_dreq_local_comm_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_dreq_remote_comm_id, 4, 0, 32)
SRNIC_CM_FIELD(cm_dreq_remote_qpn, 8, 8, 24)
SRNIC_CM_BYTES(cm_dreq_pdata, SRNIC_CM_DREQ_PDATA_OFF)

/* ---- DREP (Table 107) ---- */
SRNIC_CM_FIELD(cm_drep_local_comm_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_drep_remote_comm_id, 4, 0, 32)
SRNIC_CM_BYTES(cm_drep_pdata, SRNIC_CM_DREP_PDATA_OFF)

/* ---- SIDR_REQ (Table 115) ---- */
SRNIC_CM_FIELD(cm_sidr_req_request_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_sidr_req_pkey, 4, 16, 16)
SRNIC_CM_FIELD64(cm_sidr_req_service_id, 8)
SRNIC_CM_BYTES(cm_sidr_req_pdata, SRNIC_CM_SIDR_REQ_PDATA_OFF)

/* ---- SIDR_REP (Table 116) ---- */
SRNIC_CM_FIELD(cm_sidr_rep_request_id, 0, 0, 32)
SRNIC_CM_FIELD(cm_sidr_rep_status, 4, 24, 8)
SRNIC_CM_FIELD(cm_sidr_rep_info_len, 4, 16, 8)
SRNIC_CM_FIELD(cm_sidr_rep_qpn, 8, 8, 24)
SRNIC_CM_FIELD64(cm_sidr_rep_service_id, 12)
SRNIC_CM_FIELD(cm_sidr_rep_qkey, 20, 0, 32)
SRNIC_CM_BYTES(cm_sidr_rep_info, SRNIC_CM_SIDR_REP_INFO_OFF)
SRNIC_CM_BYTES(cm_sidr_rep_pdata, SRNIC_CM_SIDR_REP_PDATA_OFF)

/** Why srnic_cm_mad_check() refused a MAD. */
enum srnic_mad_check {
	SRNIC_MAD_OK = 0,
	SRNIC_MAD_SHORT,           /**< fewer than SRNIC_MAD_LEN bytes */
	SRNIC_MAD_BAD_BASE,        /**< base version not 1 */
	SRNIC_MAD_BAD_CLASS,       /**< not the CM class */
	SRNIC_MAD_BAD_VERSION,     /**< CM class version not 2 */
	SRNIC_MAD_BAD_METHOD,      /**< not Send() */
	SRNIC_MAD_BAD_ATTR,        /**< an attribute the CM does not serve */
};
/** Is len bytes at mad a CM message srnic takes? (REQ .. SIDR_REP) */
enum srnic_mad_check srnic_cm_mad_check(const uint8_t *mad, uint32_t len);

/** The CA GUID of a port MAC: its modified EUI-64 (as rxe: 52:54:0a:4d:00:02 -> 0x50540afffe4d0002). */
uint64_t srnic_cm_guid_from_mac(const uint8_t mac[6]);

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_MAD_H */
