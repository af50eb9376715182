/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The MAD and CM message layouts (lib/wire/srnic_mad.h) against rdma_rxe +
 * rdma_cm: every CM MAD of the golden capture (REQ, REP, RTU twice each,
 * then DREQ/DREP both ways) parses to the values tshark prints
 * (test/common/test_cm_golden.c), and a MAD built from those values with
 * srnic's setters is the golden MAD byte for byte. Then each field's bits
 * stay its own (all ones into one field leaves the others zero), the
 * checks a received MAD passes, and the CA GUID of a MAC.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "srnic_mad.h"
#include "test_cm_golden.h"

static const char *golden_dir;

/* ::ffff:10.77.0.x, the GID of an IPv4 address */
static void
gid_of(uint8_t *gid, uint8_t host)
{
	static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	memcpy(gid, pre, 12);
	gid[12] = 10;
	gid[13] = 77;
	gid[14] = 0;
	gid[15] = host;
}

/* rdma_cm's private data header in a REQ (cma.c's cma_hdr, IPv4) */
static void
cma_hdr(uint8_t *pd, uint16_t sport, uint8_t src, uint8_t dst)
{
	pd[0] = 0x00;          /* cma_version 0 */
	pd[1] = 4 << 4;        /* ip_version 4 */
	pd[2] = (uint8_t)(sport >> 8);
	pd[3] = (uint8_t)sport;
	memset(pd + 4, 0, 32);
	pd[16] = 10; pd[17] = 77; pd[18] = 0; pd[19] = src;
	pd[32] = 10; pd[33] = 77; pd[34] = 0; pd[35] = dst;
}

static void
check_req(const struct cmg_mad *g, const uint8_t *m)
{
	uint8_t gid[16];

	assert_int_equal(srnic_cm_req_local_comm_id(m), g->local_id);
	assert_int_equal(srnic_cm_req_service_id(m), g->service_id);
	assert_int_equal(srnic_cm_req_local_ca_guid(m), g->ca_guid);
	assert_int_equal(srnic_cm_req_local_qkey(m), 0);
	assert_int_equal(srnic_cm_req_local_qpn(m), g->qpn);
	assert_int_equal(srnic_cm_req_resp_resources(m), g->resp_res);
	assert_int_equal(srnic_cm_req_local_eecn(m), 0);
	assert_int_equal(srnic_cm_req_init_depth(m), g->init_depth);
	assert_int_equal(srnic_cm_req_remote_eecn(m), 0);
	assert_int_equal(srnic_cm_req_remote_cm_resp_timeout(m), g->remote_cm_to);
	assert_int_equal(srnic_cm_req_transport(m), SRNIC_CM_TRANSPORT_RC);
	assert_int_equal(srnic_cm_req_flow_ctrl(m), 0);
	assert_int_equal(srnic_cm_req_starting_psn(m), g->psn);
	assert_int_equal(srnic_cm_req_local_cm_resp_timeout(m), g->local_cm_to);
	assert_int_equal(srnic_cm_req_retry_count(m), g->retry);
	assert_int_equal(srnic_cm_req_pkey(m), 0xffff);
	assert_int_equal(srnic_cm_req_path_mtu(m), g->mtu);
	assert_int_equal(srnic_cm_req_rdc_exists(m), 0);
	assert_int_equal(srnic_cm_req_rnr_retry(m), g->rnr_retry);
	assert_int_equal(srnic_cm_req_max_cm_retries(m), g->max_cm_retries);
	assert_int_equal(srnic_cm_req_srq(m), 0);
	assert_int_equal(srnic_cm_req_ext_transport(m), 0);
	assert_int_equal(srnic_cm_req_primary_local_lid(m), SRNIC_CM_LID_PERMISSIVE);
	assert_int_equal(srnic_cm_req_primary_remote_lid(m), SRNIC_CM_LID_PERMISSIVE);
	gid_of(gid, 2);
	assert_memory_equal(srnic_cm_req_primary_local_gid_c(m), gid, 16);
	gid_of(gid, 3);
	assert_memory_equal(srnic_cm_req_primary_remote_gid_c(m), gid, 16);
	assert_int_equal(srnic_cm_req_primary_flow_label(m), g->flow_label);
	/* Linux's rdma_cm for RoCE: (sport * 31 + dport) & 0xFFFFF */
	assert_int_equal(g->flow_label, ((uint32_t)g->pdata_sport * 31 + 0x4853) & 0xFFFFF);
	assert_int_equal(srnic_cm_req_primary_packet_rate(m), 0);
	assert_int_equal(srnic_cm_req_primary_traffic_class(m), g->tclass);
	assert_int_equal(srnic_cm_req_primary_hop_limit(m), g->hop_limit);
	assert_int_equal(srnic_cm_req_primary_sl(m), g->sl);
	assert_int_equal(srnic_cm_req_primary_subnet_local(m), 0);
	assert_int_equal(srnic_cm_req_primary_local_ack_timeout(m), g->ack_timeout);
	assert_int_equal(srnic_cm_req_alt_local_lid(m), 0);
	assert_int_equal(srnic_cm_req_alt_hop_limit(m), 0);
	assert_int_equal(srnic_cm_req_alt_local_ack_timeout(m), 0);
	assert_int_equal(srnic_cm_req_pdata_c(m)[1], 0x40);
	assert_int_equal((srnic_cm_req_pdata_c(m)[2] << 8) | srnic_cm_req_pdata_c(m)[3],
			 g->pdata_sport);
}

static void
build_req(const struct cmg_mad *g, uint8_t *m)
{
	srnic_cm_req_local_comm_id_set(m, g->local_id);
	srnic_cm_req_service_id_set(m, g->service_id);
	srnic_cm_req_local_ca_guid_set(m, g->ca_guid);
	srnic_cm_req_local_qkey_set(m, 0);
	srnic_cm_req_local_qpn_set(m, g->qpn);
	srnic_cm_req_resp_resources_set(m, g->resp_res);
	srnic_cm_req_init_depth_set(m, g->init_depth);
	srnic_cm_req_remote_cm_resp_timeout_set(m, g->remote_cm_to);
	srnic_cm_req_transport_set(m, SRNIC_CM_TRANSPORT_RC);
	srnic_cm_req_starting_psn_set(m, g->psn);
	srnic_cm_req_local_cm_resp_timeout_set(m, g->local_cm_to);
	srnic_cm_req_retry_count_set(m, g->retry);
	srnic_cm_req_pkey_set(m, 0xffff);
	srnic_cm_req_path_mtu_set(m, g->mtu);
	srnic_cm_req_rnr_retry_set(m, g->rnr_retry);
	srnic_cm_req_max_cm_retries_set(m, g->max_cm_retries);
	srnic_cm_req_primary_local_lid_set(m, SRNIC_CM_LID_PERMISSIVE);
	srnic_cm_req_primary_remote_lid_set(m, SRNIC_CM_LID_PERMISSIVE);
	gid_of(srnic_cm_req_primary_local_gid(m), 2);
	gid_of(srnic_cm_req_primary_remote_gid(m), 3);
	srnic_cm_req_primary_flow_label_set(m, g->flow_label);
	srnic_cm_req_primary_traffic_class_set(m, g->tclass);
	srnic_cm_req_primary_hop_limit_set(m, g->hop_limit);
	srnic_cm_req_primary_sl_set(m, g->sl);
	srnic_cm_req_primary_local_ack_timeout_set(m, g->ack_timeout);
	cma_hdr(srnic_cm_req_pdata(m), g->pdata_sport, 2, 3);
}

static void
check_rep(const struct cmg_mad *g, const uint8_t *m)
{
	assert_int_equal(srnic_cm_rep_local_comm_id(m), g->local_id);
	assert_int_equal(srnic_cm_rep_remote_comm_id(m), g->remote_id);
	assert_int_equal(srnic_cm_rep_local_qkey(m), 0);
	assert_int_equal(srnic_cm_rep_local_qpn(m), g->qpn);
	assert_int_equal(srnic_cm_rep_local_eecn(m), 0);
	assert_int_equal(srnic_cm_rep_starting_psn(m), g->psn);
	assert_int_equal(srnic_cm_rep_resp_resources(m), g->resp_res);
	assert_int_equal(srnic_cm_rep_init_depth(m), g->init_depth);
	assert_int_equal(srnic_cm_rep_target_ack_delay(m), g->target_ack_delay);
	assert_int_equal(srnic_cm_rep_failover(m), 0);
	assert_int_equal(srnic_cm_rep_flow_ctrl(m), 0);
	assert_int_equal(srnic_cm_rep_rnr_retry(m), g->rnr_retry);
	assert_int_equal(srnic_cm_rep_srq(m), 0);
	assert_int_equal(srnic_cm_rep_local_ca_guid(m), g->ca_guid);
}

static void
build_rep(const struct cmg_mad *g, uint8_t *m)
{
	srnic_cm_rep_local_comm_id_set(m, g->local_id);
	srnic_cm_rep_remote_comm_id_set(m, g->remote_id);
	srnic_cm_rep_local_qpn_set(m, g->qpn);
	srnic_cm_rep_starting_psn_set(m, g->psn);
	srnic_cm_rep_resp_resources_set(m, g->resp_res);
	srnic_cm_rep_init_depth_set(m, g->init_depth);
	srnic_cm_rep_target_ack_delay_set(m, g->target_ack_delay);
	srnic_cm_rep_rnr_retry_set(m, g->rnr_retry);
	srnic_cm_rep_local_ca_guid_set(m, g->ca_guid);
}

static void
test_golden_mads(void **state)
{
	unsigned int i, seen[0x20] = { 0 };

	(void)state;
	assert_int_equal(cmg_load(golden_dir), 0);
	for (i = 0; i < CMG_NMADS; i++) {
		const struct cmg_mad *g = &cmg_mads[i];
		const uint8_t *m = g->mad;
		uint8_t b[SRNIC_MAD_LEN];

		assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_OK);
		assert_int_equal(srnic_mad_base_version(m), 1);
		assert_int_equal(srnic_mad_mgmt_class(m), 0x07);
		assert_int_equal(srnic_mad_class_version(m), 2);
		assert_int_equal(srnic_mad_method(m), 0x03);
		assert_int_equal(srnic_mad_status(m), 0);
		assert_int_equal(srnic_mad_class_specific(m), 0);
		assert_int_equal(srnic_mad_tid(m), g->tid);
		assert_int_equal(srnic_mad_attr_id(m), g->attr);
		assert_int_equal(srnic_mad_attr_mod(m), 0);
		srnic_cm_mad_init(b, g->attr, g->tid);
		switch (g->attr) {
		case SRNIC_CM_ATTR_REQ:
			check_req(g, m);
			build_req(g, b);
			break;
		case SRNIC_CM_ATTR_REP:
			check_rep(g, m);
			build_rep(g, b);
			break;
		case SRNIC_CM_ATTR_RTU:
			assert_int_equal(srnic_cm_rtu_local_comm_id(m), g->local_id);
			assert_int_equal(srnic_cm_rtu_remote_comm_id(m), g->remote_id);
			srnic_cm_rtu_local_comm_id_set(b, g->local_id);
			srnic_cm_rtu_remote_comm_id_set(b, g->remote_id);
			break;
		case SRNIC_CM_ATTR_DREQ:
			assert_int_equal(srnic_cm_dreq_local_comm_id(m), g->local_id);
			assert_int_equal(srnic_cm_dreq_remote_comm_id(m), g->remote_id);
			assert_int_equal(srnic_cm_dreq_remote_qpn(m), g->qpn);
			srnic_cm_dreq_local_comm_id_set(b, g->local_id);
			srnic_cm_dreq_remote_comm_id_set(b, g->remote_id);
			srnic_cm_dreq_remote_qpn_set(b, g->qpn);
			break;
		case SRNIC_CM_ATTR_DREP:
			assert_int_equal(srnic_cm_drep_local_comm_id(m), g->local_id);
			assert_int_equal(srnic_cm_drep_remote_comm_id(m), g->remote_id);
			srnic_cm_drep_local_comm_id_set(b, g->local_id);
			srnic_cm_drep_remote_comm_id_set(b, g->remote_id);
			break;
		default:
			fail_msg("frame %u: attribute %#x", g->frame, g->attr);
		}
		for (unsigned int k = 0; k < SRNIC_MAD_LEN; k++)
			if (b[k] != m[k])
				fail_msg("frame %u (%s): MAD byte %u: srnic %#x, rxe %#x", g->frame,
					 srnic_cm_attr_name(g->attr), k, b[k], m[k]);
		seen[g->attr & 0x1F]++;
	}
	assert_int_equal(seen[SRNIC_CM_ATTR_REQ], 2);
	assert_int_equal(seen[SRNIC_CM_ATTR_REP], 2);
	assert_int_equal(seen[SRNIC_CM_ATTR_RTU], 2);
	assert_int_equal(seen[SRNIC_CM_ATTR_DREQ], 2);
	assert_int_equal(seen[SRNIC_CM_ATTR_DREP], 2);
}

/* All ones into one field: only that field's bits change, and it reads back. */
#define ONE_FIELD(name, bits) do { \
	uint8_t z[SRNIC_MAD_LEN] = { 0 }; \
	uint32_t want = (bits) >= 32 ? 0xFFFFFFFFu : (1u << (bits)) - 1; \
	unsigned int ones = 0; \
	srnic_##name##_set(z, 0xFFFFFFFFu); \
	assert_int_equal(srnic_##name(z), want); \
	for (unsigned int k = 0; k < SRNIC_MAD_LEN; k++) \
		ones += (unsigned int)__builtin_popcount(z[k]); \
	assert_int_equal(ones, (bits)); \
	srnic_##name##_set(z, 0); \
	for (unsigned int k = 0; k < SRNIC_MAD_LEN; k++) \
		assert_int_equal(z[k], 0); \
} while (0)

static void
test_field_bits(void **state)
{
	(void)state;
	ONE_FIELD(cm_req_local_qpn, 24);
	ONE_FIELD(cm_req_resp_resources, 8);
	ONE_FIELD(cm_req_remote_cm_resp_timeout, 5);
	ONE_FIELD(cm_req_transport, 2);
	ONE_FIELD(cm_req_flow_ctrl, 1);
	ONE_FIELD(cm_req_local_cm_resp_timeout, 5);
	ONE_FIELD(cm_req_retry_count, 3);
	ONE_FIELD(cm_req_path_mtu, 4);
	ONE_FIELD(cm_req_rdc_exists, 1);
	ONE_FIELD(cm_req_rnr_retry, 3);
	ONE_FIELD(cm_req_max_cm_retries, 4);
	ONE_FIELD(cm_req_srq, 1);
	ONE_FIELD(cm_req_ext_transport, 3);
	ONE_FIELD(cm_req_primary_flow_label, 20);
	ONE_FIELD(cm_req_primary_packet_rate, 6);
	ONE_FIELD(cm_req_primary_sl, 4);
	ONE_FIELD(cm_req_primary_subnet_local, 1);
	ONE_FIELD(cm_req_primary_local_ack_timeout, 5);
	ONE_FIELD(cm_req_alt_flow_label, 20);
	ONE_FIELD(cm_rep_target_ack_delay, 5);
	ONE_FIELD(cm_rep_failover, 2);
	ONE_FIELD(cm_rep_flow_ctrl, 1);
	ONE_FIELD(cm_rep_rnr_retry, 3);
	ONE_FIELD(cm_rep_srq, 1);
	ONE_FIELD(cm_mra_msg_mraed, 2);
	ONE_FIELD(cm_mra_service_timeout, 5);
	ONE_FIELD(cm_rej_msg_rejected, 2);
	ONE_FIELD(cm_rej_ari_len, 7);
	ONE_FIELD(cm_rej_reason, 16);
	ONE_FIELD(cm_sidr_req_pkey, 16);
	ONE_FIELD(cm_sidr_rep_status, 8);
	ONE_FIELD(cm_sidr_rep_info_len, 8);
	ONE_FIELD(cm_sidr_rep_qpn, 24);
	ONE_FIELD(cm_sidr_rep_qkey, 32);
	ONE_FIELD(mad_attr_id, 16);
	/* IBTA byte offsets of a few fields, by hand */
	{
		uint8_t z[SRNIC_MAD_LEN] = { 0 };

		srnic_cm_rej_reason_set(z, 0x1234);
		assert_int_equal(z[24 + 10], 0x12);
		assert_int_equal(z[24 + 11], 0x34);
		srnic_cm_mra_service_timeout_set(z, 0x1F);
		assert_int_equal(z[24 + 9], 0xF8);
		memset(z, 0, sizeof(z));
		srnic_cm_sidr_rep_qpn_set(z, 0xABCDEF);
		assert_int_equal(z[24 + 8], 0xAB);
		assert_int_equal(z[24 + 10], 0xEF);
		assert_int_equal(z[24 + 11], 0);
		srnic_cm_sidr_rep_service_id_set(z, 0x0102030405060708ull);
		assert_int_equal(z[24 + 12], 1);
		assert_int_equal(z[24 + 19], 8);
		srnic_cm_rep_local_ca_guid_set(z, 0x1122334455667788ull);
		assert_int_equal(z[24 + 28], 0x11);
		assert_int_equal(z[24 + 35], 0x88);
		assert_ptr_equal(srnic_cm_sidr_rep_pdata(z), z + 24 + 96);
		assert_ptr_equal(srnic_cm_rej_pdata(z), z + 24 + 84);
		assert_ptr_equal(srnic_cm_req_pdata(z) + SRNIC_CM_REQ_PDATA_LEN, z + SRNIC_MAD_LEN);
		assert_ptr_equal(srnic_cm_rej_pdata(z) + SRNIC_CM_REJ_PDATA_LEN, z + SRNIC_MAD_LEN);
		assert_ptr_equal(srnic_cm_rep_pdata(z) + SRNIC_CM_REP_PDATA_LEN, z + SRNIC_MAD_LEN);
		assert_ptr_equal(srnic_cm_mra_pdata(z) + SRNIC_CM_MRA_PDATA_LEN, z + SRNIC_MAD_LEN);
		assert_ptr_equal(srnic_cm_dreq_pdata(z) + SRNIC_CM_DREQ_PDATA_LEN,
				 z + SRNIC_MAD_LEN);
		assert_ptr_equal(srnic_cm_sidr_req_pdata(z) + SRNIC_CM_SIDR_REQ_PDATA_LEN,
				 z + SRNIC_MAD_LEN);
		assert_ptr_equal(srnic_cm_sidr_rep_pdata(z) + SRNIC_CM_SIDR_REP_PDATA_LEN,
				 z + SRNIC_MAD_LEN);
	}
}

static void
test_mad_check(void **state)
{
	uint8_t m[SRNIC_MAD_LEN];

	(void)state;
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_REQ, 1);
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_OK);
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN - 1), SRNIC_MAD_SHORT);
	assert_int_equal(srnic_cm_mad_check(m, 0), SRNIC_MAD_SHORT);
	m[0] = 2;
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_BAD_BASE);
	m[0] = 1;
	m[1] = 0x04; /* PerfMgt */
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_BAD_CLASS);
	m[1] = 0x07;
	m[2] = 1;
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_BAD_VERSION);
	m[2] = 2;
	m[3] = 0x01; /* Get() */
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_BAD_METHOD);
	m[3] = 0x83;
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_BAD_METHOD);
	m[3] = 0x03;
	srnic_mad_attr_id_set(m, SRNIC_CM_ATTR_LAP);
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_BAD_ATTR);
	srnic_mad_attr_id_set(m, 0x000F);
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_BAD_ATTR);
	srnic_mad_attr_id_set(m, SRNIC_CM_ATTR_SIDR_REP);
	assert_int_equal(srnic_cm_mad_check(m, SRNIC_MAD_LEN), SRNIC_MAD_OK);
	assert_string_equal(srnic_cm_attr_name(SRNIC_CM_ATTR_DREQ), "DREQ");
	assert_string_equal(srnic_cm_attr_name(0x7777), "?");
}

static void
test_guid(void **state)
{
	static const uint8_t a[6] = { 0x52, 0x54, 0x0a, 0x4d, 0x00, 0x02 };
	static const uint8_t b[6] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55 };

	(void)state;
	/* the golden REQ's and REP's Local CA GUIDs */
	assert_int_equal(srnic_cm_guid_from_mac(a), 0x50540afffe4d0002ull);
	assert_int_equal(srnic_cm_guid_from_mac(b), 0x021122fffe334455ull);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_mads),
		cmocka_unit_test(test_field_bits),
		cmocka_unit_test(test_mad_check),
		cmocka_unit_test(test_guid),
	};

	golden_dir = getenv("SRNIC_GOLDEN_DIR");
	if (golden_dir == NULL || golden_dir[0] == '\0') {
		fprintf(stderr, "SRNIC_GOLDEN_DIR is not set (the meson test sets it)\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
