/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_CM_GOLDEN_H
#define SRNIC_TEST_CM_GOLDEN_H

/**
 * @file
 * The CM MADs of the rdma_cm golden capture (test/data/rxe/
 * rdmacm_send_lat_64b.pcap: ib_send_lat -R between two rdma_rxe guests,
 * 10.77.0.2 / 52:54:0a:4d:00:02 the client, 10.77.0.3 / :03 the server;
 * CAPTURES.md): the 10 UD frames on QP1, and what
 * `tshark -r F -d udp.port==4791,infiniband -V` prints for each of their
 * CM fields, written out here by hand from its output.
 */
#include <stdint.h>

#define CMG_CAPTURE "rdmacm_send_lat_64b.pcap"
#define CMG_NMADS 10
#define CMG_MAD_LEN 256

/** What tshark printed for one MAD (fields of its message type only). */
struct cmg_mad {
	uint32_t frame;             /* frame number in the capture (1-based) */
	uint8_t from;               /* last byte of the sender's IP: 2 or 3 */
	uint16_t attr;
	uint64_t tid;
	uint32_t local_id, remote_id;
	/* REQ */
	uint64_t service_id, ca_guid;
	uint32_t qpn, psn;
	uint8_t resp_res, init_depth, remote_cm_to, local_cm_to, retry, rnr_retry, mtu,
		max_cm_retries, hop_limit, ack_timeout, tclass, sl;
	uint32_t flow_label;        /* the value in the bits: see test_cm_golden.c */
	uint16_t pdata_sport;       /* rdma_cm private data: source port */
	/* REP */
	uint8_t target_ack_delay;
	/* DREQ: remote QPN in qpn */
	uint8_t mad[CMG_MAD_LEN];   /* filled by cmg_load() */
};

extern struct cmg_mad cmg_mads[CMG_NMADS];

/** Read the capture from dir into cmg_mads[].mad; 0 or a negative errno. */
int cmg_load(const char *dir);

#endif /* SRNIC_TEST_CM_GOLDEN_H */
