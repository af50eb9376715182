/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include "fuzz_frame.h"
#include "srnic_wire.h"

#define ETH_LEN 14
#define VLAN_LEN 4
#define IPV4_LEN 20
#define IPV6_LEN 40
#define UDP_LEN 8
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86DD
#define ETHERTYPE_VLAN 0x8100
#define IPV4_DF 0x4000
#define IP_PROTO_UDP 17
/* PSNs around the expected one: a few before (duplicates), more after. */
#define PSN_BEFORE 4
#define PSN_SPREAD 24

unsigned int
fuzz_recs_parse(const uint8_t *in, size_t len, struct fuzz_rec *r, unsigned int max)
{
	unsigned int n = 0;
	size_t off = 0;

	while (n < max && off + FUZZ_REC_HDR <= len) {
		uint16_t l = srnic_ld16(in + off + 1);

		if (l > len - off - FUZZ_REC_HDR)
			l = (uint16_t)(len - off - FUZZ_REC_HDR);
		if (l > FUZZ_FRAME_MAX)
			l = FUZZ_FRAME_MAX;
		r[n].side = in[off] & 3;
		r[n].len = l;
		r[n].data = in + off + FUZZ_REC_HDR;
		n++;
		off += FUZZ_REC_HDR + l;
	}
	return n;
}

/* One chance in d. */
static bool
one_in(uint32_t *rnd, uint32_t d)
{
	return fuzz_rand(rnd) % d == 0;
}

/* Aim the BTH and its extension headers at t. */
static void
aim_bth(uint8_t *bth, size_t room, const struct fuzz_target *t, uint32_t *rnd)
{
	uint8_t op = srnic_bth_opcode(bth);
	const struct srnic_opcode_info *oi = srnic_opcode_info(op);
	uint32_t base;

	/* the side's QP of the opcode's transport */
	if (!one_in(rnd, 8))
		srnic_bth_set_dqpn(bth, (oi->mask & SRNIC_OPM_UD) ? t->ud_qpn :
					(oi->mask & SRNIC_OPM_UC) ? t->uc_qpn : t->qpn);
	if ((oi->mask & SRNIC_OPM_DETH) && oi->hdr_len <= room && !one_in(rnd, 8))
		srnic_deth_set_qkey(bth + oi->offset[SRNIC_HDR_DETH], t->qkey);
	if (!one_in(rnd, 16)) {
		srnic_bth_set_tver(bth, 0);
		srnic_bth_set_pkey(bth, SRNIC_PKEY_DEFAULT);
	}
	/* the expected PSN itself a third of the time: only it executes */
	base = (oi->mask & SRNIC_OPM_REQ) ? t->req_psn : t->resp_psn;
	switch (fuzz_rand(rnd) % 3) {
	case 0:
		srnic_bth_set_psn(bth, base);
		break;
	case 1:
		srnic_bth_set_psn(bth, base + fuzz_rand(rnd) % PSN_SPREAD - PSN_BEFORE);
		break;
	default:
		break;
	}
	if (oi->mask == 0 || oi->hdr_len > room)
		return;
	if ((oi->mask & SRNIC_OPM_RETH) && !one_in(rnd, 2)) {
		uint8_t *h = bth + oi->offset[SRNIC_HDR_RETH];

		uint32_t off = fuzz_rand(rnd) % t->mr_len;

		srnic_reth_set_rkey(h, t->rkey);
		srnic_reth_set_va(h, t->va + off);
		/* mostly inside the MR, now and then up to its end and past */
		if (!one_in(rnd, 4))
			srnic_reth_set_len(h, fuzz_rand(rnd) % (t->mr_len - off + (one_in(rnd, 8) ? 2 : 1)));
	}
	if ((oi->mask & SRNIC_OPM_ATMETH) && !one_in(rnd, 2)) {
		uint8_t *h = bth + oi->offset[SRNIC_HDR_ATMETH];

		srnic_atmeth_set_rkey(h, t->rkey);
		srnic_atmeth_set_va(h, t->va + (fuzz_rand(rnd) % t->mr_len & ~(uint64_t)7));
	}
}

/* The frame length the opcode wants, most of the time: its headers alone
 * when it has no payload, a path MTU of payload for FIRST and MIDDLE, the
 * pad count that rounds the payload to 4 bytes. New bytes are zero. */
static size_t
fit_length(uint8_t *bth, size_t bth_off, size_t len, size_t cap, const struct fuzz_target *t,
	   uint32_t *rnd)
{
	const struct srnic_opcode_info *oi = srnic_opcode_info(srnic_bth_opcode(bth));
	size_t want = len, hdr_end = bth_off + oi->hdr_len;

	if (oi->mask == 0 || one_in(rnd, 8))
		return len;
	if (!(oi->mask & SRNIC_OPM_PAYLOAD))
		want = hdr_end + SRNIC_ICRC_LEN;
	else if (t != NULL && t->pmtu != 0 && (oi->mask & (SRNIC_OPM_FIRST | SRNIC_OPM_MIDDLE)) &&
		 !(oi->mask & SRNIC_OPM_LAST) && !one_in(rnd, 4))
		want = hdr_end + t->pmtu + SRNIC_ICRC_LEN;
	if (want > cap)
		return len;
	if (want > len)
		memset(bth - bth_off + len, 0, want - len);
	if (want >= hdr_end + SRNIC_ICRC_LEN && (oi->mask & SRNIC_OPM_PAYLOAD))
		srnic_bth_set_pad(bth, (uint8_t)(-(want - hdr_end - SRNIC_ICRC_LEN) & 3));
	return want;
}

size_t
fuzz_frame_fixup(uint8_t *f, size_t len, size_t cap, const struct fuzz_target *t,
		 uint32_t *rnd)
{
	size_t l2 = ETH_LEN, l3_len, bth_off;
	uint16_t type, csum;
	uint8_t *ip, *udp;
	uint8_t ver;

	(void)cap;
	if (len < ETH_LEN + IPV4_LEN + UDP_LEN + SRNIC_BTH_LEN + SRNIC_ICRC_LEN)
		return len;
	type = srnic_ld16(f + 12);
	if (type == ETHERTYPE_VLAN) {
		l2 += VLAN_LEN;
		type = srnic_ld16(f + 16);
	}
	if (t != NULL) {
		memcpy(f, t->dst_mac, 6);
		memcpy(f + 6, t->src_mac, 6);
		if (type != ETHERTYPE_IPV6 || one_in(rnd, 4)) {
			type = ETHERTYPE_IPV4;
			srnic_st16(f + l2 - 2, type);
		}
	}
	if (type != ETHERTYPE_IPV4 && type != ETHERTYPE_IPV6)
		return len;
	ver = type == ETHERTYPE_IPV4 ? 4 : 6;
	l3_len = ver == 4 ? IPV4_LEN : IPV6_LEN;
	bth_off = l2 + l3_len + UDP_LEN;
	if (len < bth_off + SRNIC_BTH_LEN + SRNIC_ICRC_LEN)
		return len;
	len = fit_length(f + bth_off, bth_off, len, cap, t, rnd);
	ip = f + l2;
	udp = ip + l3_len;
	if (ver == 4) {
		/* now and then leave options, fragments, other protocols */
		if (!one_in(rnd, 16)) {
			ip[0] = 0x45;
			srnic_st16(ip + 6, IPV4_DF);
			ip[9] = IP_PROTO_UDP;
		}
		srnic_st16(ip + 2, (uint16_t)(len - l2));
		if (t != NULL) {
			memcpy(ip + 12, t->src_ip, 4);
			memcpy(ip + 16, t->dst_ip, 4);
		}
		csum = 0;
		memcpy(ip + 10, &csum, sizeof(csum));
		/* the sum is of the header's words as loaded: stored as is */
		csum = (uint16_t)~srnic_ipv4_hdr_sum(ip);
		memcpy(ip + 10, &csum, sizeof(csum));
	} else {
		ip[0] = (uint8_t)(0x60 | (ip[0] & 0x0F));
		srnic_st16(ip + 4, (uint16_t)(len - l2 - IPV6_LEN));
		ip[6] = IP_PROTO_UDP;
	}
	srnic_st16(udp + 2, SRNIC_ROCE_UDP_PORT);
	srnic_st16(udp + 4, (uint16_t)(len - l2 - l3_len));
	srnic_st16(udp + 6, 0);
	if (t != NULL)
		aim_bth(f + bth_off, len - bth_off - SRNIC_ICRC_LEN, t, rnd);
	srnic_icrc_store(f + len - SRNIC_ICRC_LEN,
			 srnic_icrc_compute_flat(ip, (uint32_t)(len - l2 - SRNIC_ICRC_LEN), ver));
	return len;
}
