/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Wire format end to end against the golden rdma_rxe captures. The
 * scenarios of the golden files are replayed between two
 * srnic endpoints (same sizes, same path MTU); then:
 * - every frame: P_Key 0xFFFF, TVer 0, MigReq 0, FECN/BECN 0, pad count,
 *   IPv4 DF, TTL 64, TOS 0, UDP checksum 0, UDP dst 4791, UDP src port
 *   srnic_roce_sport(local QPN, remote QPN) (constant per QP), MACs and IP
 *   addresses of the pair, ICRC valid;
 * - per opcode, the first frame of that opcode in the golden capture and
 *   in ours agree on frame length, BTH byte 1, AckReq and AETH syndrome;
 * - AckReq placement, RETH on WRITE FIRST only, MSN progression, ACK
 *   coalescing of back-to-back WRITEs received in one burst.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "e2e_fixture.h"

#define SYN_ACK 0x1F

/* ---- golden captures: the first RoCEv2 frame of each opcode ---- */

struct golden {
	bool have[256];
	uint32_t len[256];
	uint8_t bth1[256];
	uint8_t bth8[256];
	uint8_t syn[256];
};

static int
golden_load(const char *file, struct golden *g)
{
	const char *dir = getenv("SRNIC_GOLDEN_DIR");
	char path[512];
	uint8_t hdr[24], rec[16], *fr;
	FILE *f;

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), "%s/%s", dir != NULL ? dir : "test/data/rxe", file);
	f = fopen(path, "rb");
	if (f == NULL)
		return -errno;
	fr = malloc(65536);
	if (fr == NULL || fread(hdr, 1, 24, f) != 24 || hdr[0] != 0xd4 || hdr[1] != 0xc3) {
		/* little-endian microsecond pcap is what tcpdump wrote */
		free(fr);
		fclose(f);
		return -EINVAL;
	}
	while (fread(rec, 1, 16, f) == 16) {
		uint32_t cl = rec[8] | rec[9] << 8 | rec[10] << 16 | (uint32_t)rec[11] << 24;
		const uint8_t *bth;

		if (cl > 65536 || fread(fr, 1, cl, f) != cl)
			break;
		if (cl < 14 + 20 + 8 + 12 + 4 || srnic_ld16(fr + 12) != RTE_ETHER_TYPE_IPV4 ||
		    fr[23] != IPPROTO_UDP || srnic_ld16(fr + 36) != SRNIC_ROCE_UDP_PORT)
			continue;
		bth = fr + 42;
		if (g->have[bth[0]])
			continue;
		g->have[bth[0]] = true;
		g->len[bth[0]] = cl;
		g->bth1[bth[0]] = bth[1];
		g->bth8[bth[0]] = bth[8];
		if (srnic_opcode_mask(bth[0]) & SRNIC_OPM_AETH)
			g->syn[bth[0]] = bth[srnic_opcode_table[bth[0]].offset[SRNIC_HDR_AETH]];
	}
	free(fr);
	fclose(f);
	return 0;
}

/* Our capture against a golden file: same opcodes, same template fields. */
static void
compare_golden(const char *file)
{
	struct golden g;
	bool seen[256] = { false };
	uint32_t i;
	int op, rc;

	rc = golden_load(file, &g);
	if (rc != 0)
		fail_msg("cannot read golden %s: %d (set SRNIC_GOLDEN_DIR)", file, rc);
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];
		const uint8_t *bth = e2e_bth(k);

		if (seen[k->opcode])
			continue;
		seen[k->opcode] = true;
		if (!g.have[k->opcode])
			fail_msg("%s: we sent %s, rxe did not", file, srnic_opcode_name(k->opcode));
		if (k->len != g.len[k->opcode] || bth[1] != g.bth1[k->opcode] ||
		    bth[8] != g.bth8[k->opcode] ||
		    ((k->mask & SRNIC_OPM_AETH) &&
		     srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)) != g.syn[k->opcode]))
			fail_msg("%s %s: ours len %u bth1 %#x bth8 %#x, rxe len %u bth1 %#x bth8 %#x",
				 file, srnic_opcode_name(k->opcode), k->len, bth[1], bth[8],
				 g.len[k->opcode], g.bth1[k->opcode], g.bth8[k->opcode]);
	}
	for (op = 0; op < 256; op++)
		if (g.have[op] && !seen[op] && (srnic_opcode_mask((uint8_t)op) & SRNIC_OPM_RC))
			fail_msg("%s: rxe sent %s, we did not", file, srnic_opcode_name((uint8_t)op));
}

/* ---- per-frame rules ---- */

static void
check_frame(const struct e2e_pkt *k)
{
	const uint8_t *f = k->data, *ip, *udp, *bth = e2e_bth(k);
	uint32_t lqpn = srnic_qp_num(E->qp[k->side]), rqpn = srnic_qp_num(E->qp[1 - k->side]);
	const uint8_t mac[2][6] = { { 2, 0, 0, 0, 0, 1 }, { 2, 0, 0, 0, 0, 2 } };

	assert_int_equal(k->parse_rc, SRNIC_PARSE_OK); /* ICRC and IP checksum valid */
	/* Ethernet */
	assert_memory_equal(f, mac[1 - k->side], 6);
	assert_memory_equal(f + 6, mac[k->side], 6);
	assert_int_equal(srnic_ld16(f + 12), RTE_ETHER_TYPE_IPV4);
	/* IPv4 */
	ip = f + k->l3_off;
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[1], 0);                     /* DSCP/ECN */
	assert_int_equal(srnic_ld16(ip + 6), 0x4000);   /* DF, no fragment */
	assert_int_equal(ip[8], 64);                    /* TTL */
	assert_int_equal(ip[9], IPPROTO_UDP);
	assert_int_equal(srnic_ld32(ip + 12), RTE_IPV4(127, 0, 0, 1 + k->side));
	assert_int_equal(srnic_ld32(ip + 16), RTE_IPV4(127, 0, 0, 2 - k->side));
	assert_int_equal(srnic_ld16(ip + 2), k->len - k->l3_off);
	/* UDP */
	udp = f + k->l4_off;
	assert_int_equal(srnic_ld16(udp + 2), SRNIC_ROCE_UDP_PORT);
	assert_int_equal(srnic_ld16(udp), srnic_roce_sport(lqpn, rqpn));
	assert_int_equal(k->udp_sport, srnic_roce_sport(lqpn, rqpn));
	assert_true(k->udp_sport >= SRNIC_ROCE_SPORT_MIN);
	assert_int_equal(srnic_ld16(udp + 6), 0);       /* checksum */
	assert_int_equal(srnic_ld16(udp + 4), k->len - k->l4_off);
	/* BTH */
	assert_int_equal(srnic_bth_pkey(bth), SRNIC_PKEY_DEFAULT);
	assert_int_equal(srnic_bth_tver(bth), 0);
	assert_false(srnic_bth_migreq(bth));
	assert_false(srnic_bth_fecn(bth));
	assert_false(srnic_bth_becn(bth));
	assert_int_equal(bth[4] & 0x3F, 0);
	assert_int_equal(bth[8] & 0x7F, 0);
	assert_int_equal(k->dqpn, rqpn);
	assert_int_equal(srnic_bth_pad(bth), (4 - k->pay_len % 4) % 4);
	assert_int_equal(k->pad, (4 - k->pay_len % 4) % 4);
	/* requests: AckReq exactly on the last packet of a message */
	if (k->mask & SRNIC_OPM_REQ)
		assert_int_equal(srnic_bth_ackreq(bth), (k->mask & SRNIC_OPM_LAST) != 0);
	else
		assert_false(srnic_bth_ackreq(bth));
	/* RETH on WRITE FIRST/ONLY and READ REQUEST only */
	assert_int_equal((k->mask & SRNIC_OPM_RETH) != 0,
			 k->opcode == SRNIC_OP_RC_WRITE_FIRST || k->opcode == SRNIC_OP_RC_WRITE_ONLY ||
			 k->opcode == SRNIC_OP_RC_WRITE_ONLY_IMM || k->opcode == SRNIC_OP_RC_READ_REQ);
	/* ACK syndromes: 0x1F (credits invalid) on every positive response */
	if ((k->mask & SRNIC_OPM_AETH) &&
	    srnic_aeth_type(e2e_hdr(k, SRNIC_HDR_AETH)) == SRNIC_AETH_ACK)
		assert_int_equal(srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)), SYN_ACK);
}

static void
check_all_frames(void)
{
	uint32_t i;

	assert_true(E->npkts > 0);
	for (i = 0; i < E->npkts; i++)
		check_frame(&E->pkts[i]);
}

/* ---- scenarios ---- */

static struct e2e_bufs bufs;

static void
fresh(enum ibv_mtu mtu, uint32_t psn_a, uint32_t psn_b)
{
	struct e2e_conf c = { .mtu = mtu, .psn = { psn_a, psn_b } };

	e2e_qps_renew(&c);
	/* A's buffer has every access too, unlike the other tests' */
	e2e_bufs_new(&bufs, 1 << 18, E2E_RALL);
	e2e_bufs_fill(&bufs, 1, 2);
}

static void
test_read_golden(void **state)
{
	int i;

	RTE_SET_USED(state);
	fresh(IBV_MTU_1024, 1088140, 500);
	for (i = 0; i < 5; i++) {
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, i, 0, 8192, 0, IBV_SEND_SIGNALED);
		e2e_wait_wc(0, i + 1);
	}
	e2e_settle(4);
	check_all_frames();
	compare_golden("read_8k_mtu1024.pcap");
	/* request PSN advances by 8 per READ, AETH MSN per READ */
	for (i = 0; i < (int)E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->opcode == SRNIC_OP_RC_READ_REQ)
			assert_int_equal((k->psn - 1088140) % 8, 0);
		if (k->opcode == SRNIC_OP_RC_READ_RESP_FIRST || k->opcode == SRNIC_OP_RC_READ_RESP_LAST)
			assert_int_equal(srnic_aeth_msn(e2e_hdr(k, SRNIC_HDR_AETH)),
					 (k->psn - 1088140) / 8 + 1);
	}

	fresh(IBV_MTU_4096, 6352000, 500);
	for (i = 0; i < 5; i++) {
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, i, 0, 8192, 0, IBV_SEND_SIGNALED);
		e2e_wait_wc(0, i + 1);
	}
	e2e_settle(4);
	check_all_frames();
	compare_golden("read_8k_mtu4096.pcap");
}

static void
test_write_golden(void **state)
{
	uint32_t i, n, acks = 0;

	RTE_SET_USED(state);
	fresh(IBV_MTU_1024, 2454582, 500);
	for (i = 0; i < 5; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, i, i * 8192, 8192, i * 8192,
			      IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 5);
	e2e_settle(4);
	check_all_frames();
	compare_golden("write_8k_mtu1024.pcap");
	assert_memory_equal(bufs.r, bufs.l, 5 * 8192);
	/* FIRST has a RETH for the whole message, MIDDLEs none, LAST AckReq */
	for (i = 0, n = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side != 0)
			continue;
		assert_int_equal(k->opcode, n % 8 == 0 ? SRNIC_OP_RC_WRITE_FIRST :
					    n % 8 == 7 ? SRNIC_OP_RC_WRITE_LAST :
							 SRNIC_OP_RC_WRITE_MIDDLE);
		assert_int_equal(k->psn, 2454582 + n);
		assert_int_equal(k->pay_len, 1024);
		if (k->opcode == SRNIC_OP_RC_WRITE_FIRST) {
			assert_int_equal(srnic_reth_len(e2e_hdr(k, SRNIC_HDR_RETH)), 8192);
			assert_int_equal(srnic_reth_va(e2e_hdr(k, SRNIC_HDR_RETH)),
					 (uintptr_t)bufs.r + n / 8 * 8192);
			assert_int_equal(srnic_reth_rkey(e2e_hdr(k, SRNIC_HDR_RETH)),
					 srnic_mr_rkey(bufs.rmr));
		}
		n++;
	}
	assert_int_equal(n, 40);
	/* ACKs: at the last PSN of a message, MSN = messages done so far */
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side != 1)
			continue;
		assert_int_equal(k->opcode, SRNIC_OP_RC_ACK);
		assert_int_equal((k->psn - 2454582 + 1) % 8, 0);
		assert_int_equal(srnic_aeth_msn(e2e_hdr(k, SRNIC_HDR_AETH)),
				 (k->psn - 2454582 + 1) / 8);
		acks++;
	}
	assert_true(acks >= 1 && acks <= 5);
	assert_int_equal(E->pkts[E->npkts - 1].side, 1);
	assert_int_equal(srnic_aeth_msn(e2e_hdr(&E->pkts[E->npkts - 1], SRNIC_HDR_AETH)), 5);

	fresh(IBV_MTU_4096, 15555033, 500);
	for (i = 0; i < 5; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, i, i * 16384, 16384, i * 16384,
			      IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 5);
	e2e_settle(4);
	check_all_frames();
	compare_golden("write_16k_mtu4096.pcap");

	fresh(IBV_MTU_1024, 5621162, 6183208);
	for (i = 0; i < 5; i++) {
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, i, 0, 2048, 0, IBV_SEND_SIGNALED);
		e2e_wait_wc(0, i + 1);
	}
	e2e_settle(4);
	check_all_frames();
	compare_golden("write_lat_2k_mtu1024.pcap");
}

static void
test_send_golden(void **state)
{
	static const struct {
		const char *file;
		uint32_t len;
	} g[] = {
		{ "send_lat_8k_mtu1024.pcap", 8192 },
		{ "send_pingpong_4k_mtu1024.pcap", 4096 },
		{ "send_pingpong_64b.pcap", 64 },
	};
	unsigned int t;
	uint32_t i;

	RTE_SET_USED(state);
	for (t = 0; t < RTE_DIM(g); t++) {
		fresh(IBV_MTU_1024, 530338, 500);
		for (i = 0; i < 5; i++) {
			e2e_bufs_recv(&bufs, E->qp[1], i, 0, g[t].len);
			e2e_bufs_post(&bufs, E->qp[0], IBV_WR_SEND, i, i * 64, g[t].len, i * 64,
				      IBV_SEND_SIGNALED);
			e2e_wait_wc(0, i + 1);
			e2e_wait_wc(1, i + 1);
			assert_memory_equal(bufs.v, bufs.l + i * 64, g[t].len);
		}
		e2e_settle(4);
		check_all_frames();
		compare_golden(g[t].file);
		/* one ACK per message here (one outstanding), MSN counting */
		for (i = 0; i < E->npkts; i++) {
			const struct e2e_pkt *k = &E->pkts[i];
			uint32_t per = (g[t].len + 1023) / 1024;

			if (k->opcode == SRNIC_OP_RC_ACK)
				assert_int_equal(srnic_aeth_msn(e2e_hdr(k, SRNIC_HDR_AETH)),
						 (k->psn - 530338) / per + 1);
		}
	}
}

static void
test_atomic_golden(void **state)
{
	uint32_t i, acks = 0;

	RTE_SET_USED(state);
	/* ib_atomic_bw: 5 pipelined FETCH_ADDs, 5 atomic ACKs */
	fresh(IBV_MTU_1024, 6086982, 500);
	memset(bufs.r, 0, 64 * 5);
	for (i = 0; i < 5; i++)
		e2e_bufs_atomic(&bufs, E->qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, i, i * 64, i * 64, 1,
				0, IBV_SEND_SIGNALED);
	e2e_wait_wc(0, 5);
	e2e_settle(4);
	check_all_frames();
	compare_golden("atomic_fadd_bw.pcap");
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->opcode == SRNIC_OP_RC_FETCH_ADD) {
			const uint8_t *a = e2e_hdr(k, SRNIC_HDR_ATMETH);

			assert_true(srnic_bth_ackreq(e2e_bth(k)));
			assert_int_equal(srnic_atmeth_va(a),
					 (uintptr_t)bufs.r + (k->psn - 6086982) * 64);
			assert_int_equal(srnic_atmeth_rkey(a), srnic_mr_rkey(bufs.rmr));
			assert_int_equal(srnic_atmeth_swap_add(a), 1);
			assert_int_equal(srnic_atmeth_compare(a), 0);
		} else {
			assert_int_equal(k->opcode, SRNIC_OP_RC_ATOMIC_ACK);
			assert_int_equal(k->psn, 6086982 + acks);
			assert_int_equal(srnic_aeth_syndrome(e2e_hdr(k, SRNIC_HDR_AETH)), SYN_ACK);
			assert_int_equal(srnic_aeth_msn(e2e_hdr(k, SRNIC_HDR_AETH)), acks + 1);
			assert_int_equal(srnic_atmack_orig(e2e_hdr(k, SRNIC_HDR_ATMACK)), 0);
			acks++;
		}
	}
	assert_int_equal(acks, 5);

	fresh(IBV_MTU_1024, 13903470, 500);
	for (i = 0; i < 5; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)bufs.l, .length = 8,
				       .lkey = srnic_mr_lkey(bufs.lmr) };
		struct ibv_send_wr wr;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = (uintptr_t)bufs.r;
		wr.wr.atomic.rkey = srnic_mr_rkey(bufs.rmr);
		e2e_post_send(0, &wr);
		e2e_wait_wc(0, i + 1);
	}
	e2e_settle(4);
	check_all_frames();
	compare_golden("atomic_cas_lat.pcap");
}

/*
 * ACK coalescing: 4 back-to-back WRITEs whose packets the responder gets
 * in one RX burst are acknowledged by fewer than 4 ACKs; the last ACK
 * carries the last WRITE's last PSN and MSN 4.
 */
static void
coalesce(uint32_t len, enum ibv_mtu mtu)
{
	uint32_t pmtu = 128u << mtu, per = (len + pmtu - 1) / pmtu, i, acks = 0, reqs = 0;
	const struct e2e_pkt *last = NULL;

	fresh(mtu, 100, 500);
	for (i = 0; i < 4; i++)
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, i, i * len, len, i * len,
			      IBV_SEND_SIGNALED);
	/* A builds all of them in one poll (budget 32), B receives one burst */
	e2e_poll_side(0);
	e2e_poll_side(1);
	e2e_wait_wc(0, 4);
	e2e_settle(4);
	check_all_frames();
	for (i = 0; i < E->npkts; i++) {
		const struct e2e_pkt *k = &E->pkts[i];

		if (k->side == 0) {
			assert_int_equal(k->burst, E->pkts[0].burst); /* one RX burst */
			reqs++;
		} else {
			assert_int_equal(k->opcode, SRNIC_OP_RC_ACK);
			last = k;
			acks++;
		}
	}
	assert_int_equal(reqs, 4 * per);
	assert_true(acks >= 1 && acks < 4);
	assert_non_null(last);
	assert_int_equal(last->psn, 100 + 4 * per - 1);
	assert_int_equal(srnic_aeth_msn(e2e_hdr(last, SRNIC_HDR_AETH)), 4);
	assert_memory_equal(bufs.r, bufs.l, 4 * len);
}

static void
test_ack_coalescing(void **state)
{
	RTE_SET_USED(state);
	coalesce(1024, IBV_MTU_4096);   /* 4 WRITE ONLY */
	coalesce(8192, IBV_MTU_1024);   /* 4 x (FIRST, 6 MIDDLE, LAST) = 32 packets */
}

/* The UDP source port is per QP pair: another QP pair, another port. */
static void
test_sport_per_qp(void **state)
{
	uint16_t sport[2];
	uint32_t q[2];
	int r;

	RTE_SET_USED(state);
	for (r = 0; r < 2; r++) {
		fresh(IBV_MTU_1024, 100, 500);
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_WRITE, 1, 0, 100, 0, IBV_SEND_SIGNALED);
		e2e_bufs_post(&bufs, E->qp[0], IBV_WR_RDMA_READ, 2, 0, 100, 0, IBV_SEND_SIGNALED);
		e2e_wait_wc(0, 2);
		e2e_settle(4);
		check_all_frames();
		sport[r] = E->pkts[0].udp_sport;
		q[r] = srnic_qp_num(E->qp[0]);
	}
	assert_int_not_equal(q[0], q[1]);
	if (srnic_roce_sport(q[0], q[0] + 1) != srnic_roce_sport(q[1], q[1] + 1))
		assert_int_not_equal(sport[0], sport[1]);
	/* rxe's value for QPN 0x25 <-> 0x25 (golden read_8k_mtu4096) */
	assert_int_equal(srnic_roce_sport(0x25, 0x25), 50521);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_golden, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_write_golden, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_send_golden, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_golden, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_ack_coalescing, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_sport_per_qp, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_wire", tests, e2e_group_setup,
					   e2e_group_teardown);
}
