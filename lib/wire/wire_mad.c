/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MAD and CM message helpers: the header a CM Send() carries, the checks a
 * received MAD passes before the CM reads a field, the CA GUID of a port.
 */
#include <stdint.h>
#include <string.h>

#include "srnic_mad.h"

const char *
srnic_cm_attr_name(uint16_t attr)
{
	switch (attr) {
	case SRNIC_CM_ATTR_CLASS_PORT_INFO: return "ClassPortInfo";
	case SRNIC_CM_ATTR_REQ: return "REQ";
	case SRNIC_CM_ATTR_MRA: return "MRA";
	case SRNIC_CM_ATTR_REJ: return "REJ";
	case SRNIC_CM_ATTR_REP: return "REP";
	case SRNIC_CM_ATTR_RTU: return "RTU";
	case SRNIC_CM_ATTR_DREQ: return "DREQ";
	case SRNIC_CM_ATTR_DREP: return "DREP";
	case SRNIC_CM_ATTR_SIDR_REQ: return "SIDR_REQ";
	case SRNIC_CM_ATTR_SIDR_REP: return "SIDR_REP";
	case SRNIC_CM_ATTR_LAP: return "LAP";
	case SRNIC_CM_ATTR_APR: return "APR";
	default: return "?";
	}
}

void
srnic_cm_mad_init(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	memset(mad, 0, SRNIC_MAD_LEN);
	srnic_mad_base_version_set(mad, SRNIC_MAD_BASE_VERSION);
	srnic_mad_mgmt_class_set(mad, SRNIC_MGMT_CLASS_CM);
	srnic_mad_class_version_set(mad, SRNIC_CM_CLASS_VERSION);
	srnic_mad_method_set(mad, SRNIC_MAD_METHOD_SEND);
	srnic_mad_tid_set(mad, tid);
	srnic_mad_attr_id_set(mad, attr);
}

enum srnic_mad_check
srnic_cm_mad_check(const uint8_t *mad, uint32_t len)
{
	uint32_t attr;

	if (len < SRNIC_MAD_LEN)
		return SRNIC_MAD_SHORT;
	if (srnic_mad_base_version(mad) != SRNIC_MAD_BASE_VERSION)
		return SRNIC_MAD_BAD_BASE;
	if (srnic_mad_mgmt_class(mad) != SRNIC_MGMT_CLASS_CM)
		return SRNIC_MAD_BAD_CLASS;
	if (srnic_mad_class_version(mad) != SRNIC_CM_CLASS_VERSION)
		return SRNIC_MAD_BAD_VERSION;
	if (srnic_mad_method(mad) != SRNIC_MAD_METHOD_SEND)
		return SRNIC_MAD_BAD_METHOD;
	attr = srnic_mad_attr_id(mad);
	if (attr < SRNIC_CM_ATTR_REQ || attr > SRNIC_CM_ATTR_SIDR_REP)
		return SRNIC_MAD_BAD_ATTR;
	return SRNIC_MAD_OK;
}

uint64_t
srnic_cm_guid_from_mac(const uint8_t mac[6])
{
	/* modified EUI-64: the universal/local bit flipped, FF:FE in the middle */
	return ((uint64_t)(mac[0] ^ 0x02) << 56) | ((uint64_t)mac[1] << 48) |
	       ((uint64_t)mac[2] << 40) | (0xFFFEull << 24) | ((uint64_t)mac[3] << 16) |
	       ((uint64_t)mac[4] << 8) | mac[5];
}
