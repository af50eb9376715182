/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "test_cm_golden.h"
#include "test_pcap.h"

/*
 * tshark 4.0 prints the REQ's Primary Flow Label as 0x009a6 / 0x0094e: its
 * dissector shows the 20 bits one byte too late. The bits on the wire
 * (bytes 88-90 of the REQ: 9a 6f 2., 94 e2 f.) are 0x9a6f2 / 0x94e2f,
 * which is what Linux's rdma_cm puts there for RoCEv2 (cma.c:
 * (sport * 31 + dport) & 0xFFFFF with the private data's source port
 * 0xd181 / 0xcea4 and the service's port 0x4853): those are the values here.
 */
#define CMG_SID 0x0000000001064853ull /* RDMA_PS_TCP (0x106), port 18515 */
#define CMG_GUID2 0x50540afffe4d0002ull
#define CMG_GUID3 0x50540afffe4d0003ull

struct cmg_mad cmg_mads[CMG_NMADS] = {
	{ .frame = 1, .from = 2, .attr = 0x10, .tid = 0x00000002e4d6cfafull,
	  .local_id = 0xafcfd6e4, .service_id = CMG_SID, .ca_guid = CMG_GUID2, .qpn = 0x31,
	  .psn = 0x4457ec, .remote_cm_to = 0x14, .local_cm_to = 0x14, .retry = 7, .rnr_retry = 7,
	  .mtu = 3, .max_cm_retries = 15, .hop_limit = 0x40, .ack_timeout = 0x13,
	  .flow_label = 0x9a6f2, .pdata_sport = 0xd181 },
	{ .frame = 2, .from = 3, .attr = 0x13, .tid = 0x00000002e4d6cfafull,
	  .local_id = 0xb1893422, .remote_id = 0xafcfd6e4, .ca_guid = CMG_GUID3, .qpn = 0x31,
	  .psn = 0x69297b, .target_ack_delay = 0x0f, .rnr_retry = 7 },
	{ .frame = 3, .from = 2, .attr = 0x14, .tid = 0x00000002e4d6cfafull,
	  .local_id = 0xafcfd6e4, .remote_id = 0xb1893422 },
	{ .frame = 24, .from = 2, .attr = 0x10, .tid = 0x00000002e4d6cfaeull,
	  .local_id = 0xaecfd6e4, .service_id = CMG_SID, .ca_guid = CMG_GUID2, .qpn = 0x32,
	  .psn = 0x8c2262, .remote_cm_to = 0x14, .local_cm_to = 0x14, .retry = 7, .rnr_retry = 7,
	  .mtu = 3, .max_cm_retries = 15, .hop_limit = 0x40, .ack_timeout = 0x13,
	  .flow_label = 0x94e2f, .pdata_sport = 0xcea4 },
	{ .frame = 25, .from = 3, .attr = 0x13, .tid = 0x00000002e4d6cfaeull,
	  .local_id = 0xb3893422, .remote_id = 0xaecfd6e4, .ca_guid = CMG_GUID3, .qpn = 0x32,
	  .psn = 0xfa10b7, .target_ack_delay = 0x0f, .rnr_retry = 7 },
	{ .frame = 26, .from = 2, .attr = 0x14, .tid = 0x00000002e4d6cfaeull,
	  .local_id = 0xaecfd6e4, .remote_id = 0xb3893422 },
	{ .frame = 71, .from = 2, .attr = 0x15, .tid = 0x00000002e4d6cfaeull,
	  .local_id = 0xaecfd6e4, .remote_id = 0xb3893422, .qpn = 0x32 },
	{ .frame = 72, .from = 3, .attr = 0x16, .tid = 0x00000002e4d6cfaeull,
	  .local_id = 0xb3893422, .remote_id = 0xaecfd6e4 },
	{ .frame = 73, .from = 3, .attr = 0x15, .tid = 0x00000002223489b1ull,
	  .local_id = 0xb1893422, .remote_id = 0xafcfd6e4, .qpn = 0x31 },
	{ .frame = 74, .from = 2, .attr = 0x16, .tid = 0x00000002223489b1ull,
	  .local_id = 0xafcfd6e4, .remote_id = 0xb1893422 },
};

struct cmg_walk {
	uint32_t frame;
	uint32_t n;
};

static int
on_frame(const uint8_t *f, uint32_t caplen, uint32_t origlen, void *arg)
{
	/* Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + DETH 8, then the MAD */
	const uint32_t mad_off = 14 + 20 + 8 + 12 + 8;
	struct cmg_walk *w = arg;

	(void)origlen;
	w->frame++;
	if (w->n >= CMG_NMADS || w->frame != cmg_mads[w->n].frame)
		return 0;
	if (caplen < mad_off + CMG_MAD_LEN || f[12] != 0x08 || f[13] != 0x00 ||
	    f[14 + 20 + 8] != 100 /* UD SEND ONLY */ || f[14 + 15] != cmg_mads[w->n].from)
		return -EBADMSG;
	memcpy(cmg_mads[w->n].mad, f + mad_off, CMG_MAD_LEN);
	w->n++;
	return 0;
}

int
cmg_load(const char *dir)
{
	struct cmg_walk w = { 0, 0 };
	char path[1024];
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, CMG_CAPTURE);
	rc = srnic_test_pcap_foreach(path, on_frame, &w);
	if (rc < 0)
		return rc;
	return w.n == CMG_NMADS ? 0 : -ENOENT;
}
