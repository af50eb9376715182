/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UD frames against rdma_rxe: the CM MADs of the rdma_cm capture
 * (SRNIC_GOLDEN_DIR/rdmacm_send_lat_64b.pcap; CAPTURES.md) travel on QP1
 * as UD SEND ONLY with a DETH (Q_Key 0x80010000, source QP 1). Every one
 * of its 10 UD frames (tshark -Y "infiniband.bth.opcode==100": frames 1-3,
 * 24-26, 71-74, PSNs 7-12 from 10.77.0.2 and 5-8 from 10.77.0.3, UDP
 * source port 55410) must parse, and srnic's builder, given the same
 * fields (MACs, addresses, IP id, PSN, Q_Key, QPs, the MAD), must make
 * the very same frame, ICRC included: BTH, DETH, UDP port rule and ICRC
 * compared field by field, then every byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "srnic_wire.h"
#include "test_pcap.h"
#include "wire_util.h"

#define CM_CAPTURE "rdmacm_send_lat_64b.pcap"
#define CM_UD_FRAMES 10
#define GSI_QKEY 0x80010000u /* QP1's well-known Q_Key (IBTA 13.4.6.1) */

static const char *golden_dir;

struct ud_walk {
	uint32_t frames;   /* UD frames seen */
	uint32_t psn_a;    /* next PSN expected from 10.77.0.2 */
	uint32_t psn_b;    /* ... from 10.77.0.3 */
};

/* Rebuild a golden UD frame from its fields with srnic's builder. */
static void
rebuild(const uint8_t *f, uint32_t len, const struct wt_layout *lo)
{
	const uint8_t *ip = f + lo->l3, *bth = f + lo->bth, *deth = bth + SRNIC_BTH_LEN;
	uint32_t pay_off = lo->bth + SRNIC_BTH_LEN + SRNIC_DETH_LEN;
	uint32_t pay_len = len - pay_off - SRNIC_ICRC_LEN - (bth[1] >> 4 & 3);
	struct srnic_route r;
	struct rte_mbuf *m = rte_pktmbuf_alloc(wt_pool());
	uint8_t *b, *d, out[512];
	uint32_t i;

	assert_non_null(m);
	memset(&r, 0, sizeof(r));
	memcpy(&r.dst_mac, f, 6);
	memcpy(&r.src_mac, f + 6, 6);
	r.ip_ver = 4;
	r.ttl = 64; /* rxe's, as the capture shows */
	r.tclass = 0;
	r.udp_sport = srnic_roce_ud_sport(1); /* QP1's, as rxe */
	memcpy(r.src_ip, ip + 12, 4);
	memcpy(r.dst_ip, ip + 16, 4);
	b = srnic_pkt_init(m, &r, SRNIC_OP_UD_SEND_ONLY, (uint16_t)wt_be(ip + 4, 2));
	assert_non_null(b);
	srnic_bth_set_dqpn(b, 1);
	srnic_bth_set_psn(b, srnic_bth_psn(bth));
	srnic_bth_set_ackreq(b, true);
	d = b + srnic_opcode_info(SRNIC_OP_UD_SEND_ONLY)->offset[SRNIC_HDR_DETH];
	srnic_deth_set_qkey(d, GSI_QKEY);
	srnic_deth_set_sqpn(d, 1);
	memcpy(rte_pktmbuf_append(m, (uint16_t)pay_len), f + pay_off, pay_len);
	assert_int_equal(srnic_pkt_finish(m, wt_pool()), 0);
	assert_int_equal(rte_pktmbuf_pkt_len(m), len);
	srnic_test_mbuf_flatten(m, out);
	/* field by field first, for a readable failure */
	assert_memory_equal(out + lo->bth, bth, SRNIC_BTH_LEN);                  /* BTH */
	assert_memory_equal(out + lo->bth + SRNIC_BTH_LEN, deth, SRNIC_DETH_LEN); /* DETH */
	assert_memory_equal(out + lo->l4, f + lo->l4, 8);                        /* UDP */
	assert_memory_equal(out + lo->l3, ip, 20);                               /* IPv4 */
	assert_memory_equal(out + len - SRNIC_ICRC_LEN, f + len - SRNIC_ICRC_LEN,
			    SRNIC_ICRC_LEN);                                        /* ICRC */
	for (i = 0; i < len; i++)
		if (out[i] != f[i])
			fail_msg("byte %u: srnic %#x, rxe %#x", i, out[i], f[i]);
	rte_pktmbuf_free(m);
}

static int
on_frame(const uint8_t *f, uint32_t caplen, uint32_t origlen, void *arg)
{
	struct ud_walk *w = arg;
	struct wt_layout lo;
	struct rte_mbuf *m;
	struct srnic_pkt p;
	const uint8_t *ip, *bth, *deth;
	uint32_t *next;

	assert_int_equal(caplen, origlen);
	if (!wt_layout_of(f, caplen, &lo) || lo.ip_ver != 4 || caplen < lo.bth + SRNIC_BTH_LEN ||
	    f[lo.l3 + 9] != 17 || wt_be(f + lo.l4 + 2, 2) != SRNIC_ROCE_UDP_PORT)
		return 0;
	bth = f + lo.bth;
	if ((bth[0] & 0xE0) != 0x60)
		return 0; /* RC: other tests' business */
	w->frames++;
	ip = f + lo.l3;
	deth = bth + SRNIC_BTH_LEN;
	/* the fields, read from the bytes here (not by srnic's parser) */
	assert_int_equal(bth[0], SRNIC_OP_UD_SEND_ONLY);
	assert_int_equal(wt_be(bth + 2, 2), 0xFFFF);             /* P_Key */
	assert_int_equal(wt_be(bth + 5, 3), 1);                  /* dest QP: QP1 */
	assert_int_equal(bth[8] & 0x80, 0x80);                   /* AckReq, as rxe sends */
	assert_int_equal(bth[1] & 0x0F, 0);                      /* TVer */
	assert_int_equal(wt_be(deth, 4), GSI_QKEY);
	assert_int_equal(deth[4], 0);
	assert_int_equal(wt_be(deth + 5, 3), 1);                 /* source QP1 */
	assert_int_equal(wt_be(f + lo.l4, 2), srnic_roce_ud_sport(1));
	assert_int_equal(wt_be(f + lo.l4, 2), 55410);
	assert_int_equal(ip[8], 64);                             /* TTL */
	assert_int_equal(ip[6] & 0x40, 0x40);                    /* DF */
	next = ip[15] == 2 ? &w->psn_a : &w->psn_b;              /* 10.77.0.2 or .3 */
	assert_int_equal(wt_be(bth + 9, 3), *next);              /* one PSN per packet */
	(*next)++;
	/* srnic's parser takes it, ICRC checked */
	m = srnic_test_mbuf_from(wt_pool(), f, caplen);
	assert_non_null(m);
	assert_int_equal(srnic_pkt_parse(m, &p, 0), SRNIC_PARSE_OK);
	assert_true(p.mask & SRNIC_OPM_UD);
	assert_true(p.mask & SRNIC_OPM_DETH);
	assert_int_equal(p.dqpn, 1);
	assert_int_equal(srnic_deth_qkey(srnic_pkt_hdr(&p, SRNIC_HDR_DETH)), GSI_QKEY);
	assert_int_equal(srnic_deth_sqpn(srnic_pkt_hdr(&p, SRNIC_HDR_DETH)), 1);
	assert_int_equal(p.pay_len, 256);                        /* a MAD */
	rte_pktmbuf_free(m);
	rebuild(f, caplen, &lo);
	return 0;
}

static void
test_golden_cm_ud(void **state)
{
	struct ud_walk w = { .psn_a = 7, .psn_b = 5 };
	char path[1024];

	RTE_SET_USED(state);
	snprintf(path, sizeof(path), "%s/%s", golden_dir, CM_CAPTURE);
	assert_int_equal(srnic_test_pcap_foreach(path, on_frame, &w), 74); /* frames in all */
	assert_int_equal(w.frames, CM_UD_FRAMES);
	assert_int_equal(w.psn_a, 13);
	assert_int_equal(w.psn_b, 9);
}

/* The UD source port rule: rxe's 0xC000 + hash_32(qpn, 14). */
static void
test_ud_sport(void **state)
{
	uint32_t q;

	RTE_SET_USED(state);
	assert_int_equal(srnic_roce_ud_sport(1), 55410); /* the capture */
	for (q = 0; q < 100000; q += 7) {
		uint16_t s = srnic_roce_ud_sport(q);

		assert_true(s >= SRNIC_ROCE_SPORT_MIN);
		assert_int_equal(s, 0xC000 | (((uint32_t)(q * 0x61C88647u)) >> 18));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_cm_ud),
		cmocka_unit_test(test_ud_sport),
	};

	golden_dir = getenv("SRNIC_GOLDEN_DIR");
	if (golden_dir == NULL || golden_dir[0] == '\0') {
		fprintf(stderr, "SRNIC_GOLDEN_DIR is not set (the meson test sets it)\n");
		return 1;
	}
	wt_eal_init("wire_ud");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
