/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet construction: headers copied from a per-QP template (built from
 * the route), then, once the payload is in place (copied or attached),
 * close (pad, trailer, IP/UDP lengths, IPv4 checksum) and seal (ICRC).
 * Field values follow the rxe captures: DF set, UDP checksum 0, P_Key
 * 0xFFFF, MigReq 0, TVer 0.
 */
#include <rte_ip.h>
#include <rte_udp.h>

#include "srnic_pkt.h"

void
srnic_hdr_tmpl_build(struct srnic_hdr_tmpl *t, const struct srnic_route *r, uint32_t dqpn)
{
	uint16_t l2 = RTE_ETHER_HDR_LEN + (r->has_vlan ? 4 : 0);
	uint16_t l3 = r->ip_ver == 4 ? sizeof(struct rte_ipv4_hdr) : sizeof(struct rte_ipv6_hdr);
	uint8_t *f = t->bytes, *p, *bth;
	struct rte_udp_hdr *udp;

	memset(t, 0, sizeof(*t));
	memcpy(f, &r->dst_mac, RTE_ETHER_ADDR_LEN);
	memcpy(f + 6, &r->src_mac, RTE_ETHER_ADDR_LEN);
	p = f + 12;
	if (r->has_vlan) {
		srnic_st16(p, RTE_ETHER_TYPE_VLAN);
		srnic_st16(p + 2, r->vlan_tci);
		p += 4;
	}
	srnic_st16(p, r->ip_ver == 4 ? RTE_ETHER_TYPE_IPV4 : RTE_ETHER_TYPE_IPV6);
	p += 2;

	if (r->ip_ver == 4) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)p;

		ip->version_ihl = RTE_IPV4_VHL_DEF;
		ip->type_of_service = r->tclass;
		ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
		ip->time_to_live = r->ttl;
		ip->next_proto_id = IPPROTO_UDP;
		memcpy(&ip->src_addr, r->src_ip, 4);
		memcpy(&ip->dst_addr, r->dst_ip, 4);
		/* the sum of the fields every packet keeps, where the checksum
		 * goes: srnic_pkt_close() adds the length and the ID (never 0:
		 * version_ihl is not) */
		ip->hdr_checksum = srnic_ipv4_hdr_sum(ip);
	} else {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)p;

		ip6->vtc_flow = rte_cpu_to_be_32((6u << 28) | ((uint32_t)r->tclass << 20) |
						 (r->flow_label & SRNIC_FLOW_LABEL_MASK));
		ip6->proto = IPPROTO_UDP;
		ip6->hop_limits = r->ttl;
		memcpy(ip6->src_addr, r->src_ip, 16);
		memcpy(ip6->dst_addr, r->dst_ip, 16);
	}
	udp = (struct rte_udp_hdr *)(p + l3);
	udp->src_port = rte_cpu_to_be_16(r->udp_sport);
	udp->dst_port = rte_cpu_to_be_16(SRNIC_ROCE_UDP_PORT);
	/* checksum 0: allowed for IPv4; rxe sends 0 for IPv6 too */

	bth = (uint8_t *)(udp + 1);
	srnic_bth_set_pkey(bth, SRNIC_PKEY_DEFAULT);
	srnic_bth_set_dqpn(bth, dqpn);

	t->l2_len = (uint8_t)l2;
	t->l3_len = (uint8_t)l3;
	t->ip_ver = r->ip_ver;
	t->dst_is_src = rte_is_same_ether_addr(&r->dst_mac, &r->src_mac);
	t->len = (uint8_t)(bth + SRNIC_BTH_LEN - f);
}

/* The common lengths as constant-size copies (a few vector moves), the
 * others through memcpy(). */
static inline void
tmpl_copy(uint8_t *f, const struct srnic_hdr_tmpl *t)
{
	switch (t->len) {
	case RTE_ETHER_HDR_LEN + 20 + 8 + SRNIC_BTH_LEN:
		memcpy(f, t->bytes, RTE_ETHER_HDR_LEN + 20 + 8 + SRNIC_BTH_LEN);
		break;
	case RTE_ETHER_HDR_LEN + 40 + 8 + SRNIC_BTH_LEN:
		memcpy(f, t->bytes, RTE_ETHER_HDR_LEN + 40 + 8 + SRNIC_BTH_LEN);
		break;
	default:
		memcpy(f, t->bytes, t->len);
	}
}

uint8_t *
srnic_pkt_init_tmpl(struct rte_mbuf *m, const struct srnic_hdr_tmpl *t, uint8_t opcode,
		    uint16_t ip_id)
{
	const struct srnic_opcode_info *info = srnic_opcode_info(opcode);
	uint16_t hl = (uint16_t)(t->len - SRNIC_BTH_LEN + info->hdr_len);
	uint8_t *f, *bth;

	/* an empty packet: the headers go in its first segment */
	if (unlikely(info->mask == 0 || rte_pktmbuf_pkt_len(m) != 0 || t->len == 0 ||
		     rte_pktmbuf_tailroom(m) < hl))
		return NULL;
	f = srnic_pkt_append_to(m, m, hl);
	tmpl_copy(f, t);
	if (t->ip_ver == 4)
		srnic_st16(f + t->l2_len + offsetof(struct rte_ipv4_hdr, packet_id), ip_id);
	bth = f + t->len - SRNIC_BTH_LEN;
	srnic_bth_set_opcode(bth, opcode);
	if (info->hdr_len > SRNIC_BTH_LEN)
		memset(bth + SRNIC_BTH_LEN, 0, info->hdr_len - SRNIC_BTH_LEN);

	/* l2_len, l3_len, l4_len in one store */
	m->tx_offload = rte_mbuf_tx_offload(t->l2_len, t->l3_len, sizeof(struct rte_udp_hdr),
					    0, 0, 0, 0);
	return bth;
}

uint8_t *
srnic_pkt_init(struct rte_mbuf *m, const struct srnic_route *r, uint8_t opcode, uint16_t ip_id)
{
	struct srnic_hdr_tmpl t;

	srnic_hdr_tmpl_build(&t, r, 0);
	return srnic_pkt_init_tmpl(m, &t, opcode, ip_id);
}

int
srnic_pkt_close(struct rte_mbuf *m, struct rte_mempool *trailer_pool)
{
	uint32_t l2 = m->l2_len, l3 = m->l3_len;
	uint32_t bth_off = l2 + l3 + m->l4_len;
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t *bth = f + bth_off;
	const struct srnic_opcode_info *info = srnic_opcode_info(srnic_bth_opcode(bth));
	struct rte_mbuf *last = rte_pktmbuf_lastseg(m);
	uint32_t pay_len, pad, need, len;
	uint8_t *tail;

	if (unlikely(rte_pktmbuf_pkt_len(m) < bth_off + info->hdr_len))
		return -EINVAL;
	pay_len = rte_pktmbuf_pkt_len(m) - bth_off - info->hdr_len;
	pad = (4 - (pay_len & 3)) & 3;
	need = pad + SRNIC_ICRC_LEN;
	srnic_bth_set_pad(bth, (uint8_t)pad);

	/* The trailer's room first: a close that fails (no trailer mbuf)
	 * leaves the headers as they were, to be closed again. */
	len = rte_pktmbuf_pkt_len(m) + need;
	if (RTE_MBUF_DIRECT(last) && rte_mbuf_refcnt_read(last) == 1 &&
	    rte_pktmbuf_tailroom(last) >= need) {
		tail = srnic_pkt_append_to(m, last, (uint16_t)need);
	} else {
		struct rte_mbuf *t = rte_pktmbuf_alloc(trailer_pool);

		if (unlikely(t == NULL))
			return -ENOMEM;
		tail = (uint8_t *)rte_pktmbuf_append(t, need);
		if (unlikely(tail == NULL || rte_pktmbuf_chain(m, t) != 0)) {
			rte_pktmbuf_free(t);
			return -EINVAL;
		}
	}
	/* Lengths and checksum, then the trailer's bytes: the ICRC's wide
	 * loads of these bytes then find the small stores already done (a
	 * load over stores still in flight stalls on store forwarding; the
	 * checksum's 16-bit loads match the 16-bit stores, so they do not). */
	if (l3 == sizeof(struct rte_ipv4_hdr)) {
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(f + l2);
		uint16_t tot = SRNIC_BE16((uint16_t)(len - l2)), part = ip->hdr_checksum;

		ip->total_length = tot;
		ip->hdr_checksum = 0;
		/* else the NIC's (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM); ICRC masks it */
		if (!(m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM)) {
			/* From the template's sum of the fixed fields (in the
			 * checksum's place, srnic_hdr_tmpl_build()), the length
			 * and the ID added: three words, not ten. 0: a header
			 * changed after the copy (a UD destination), summed whole. */
			uint32_t s = (uint32_t)part + tot + ip->packet_id;

			if (likely(part != 0)) {
				s = (s & 0xffffu) + (s >> 16);
				ip->hdr_checksum = (uint16_t)~((s & 0xffffu) + (s >> 16));
			} else {
				ip->hdr_checksum = (uint16_t)~srnic_ipv4_hdr_sum(ip);
			}
		}
	} else {
		struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(f + l2);

		ip6->payload_len = SRNIC_BE16((uint16_t)(len - l2 - l3));
	}
	srnic_st16(f + l2 + l3 + 4, (uint16_t)(len - l2 - l3));
	memset(tail, 0, need); /* pad, and the ICRC srnic_pkt_seal() writes */
	return 0;
}

void
srnic_pkt_seal(struct rte_mbuf *m)
{
	uint32_t l2 = m->l2_len, len = rte_pktmbuf_pkt_len(m);
	struct rte_mbuf *last = rte_pktmbuf_lastseg(m);
	uint8_t *tail = rte_pktmbuf_mtod_offset(last, uint8_t *, last->data_len - SRNIC_ICRC_LEN);
	uint32_t icrc = srnic_icrc_compute(m, l2, len - l2 - SRNIC_ICRC_LEN,
					   m->l3_len == sizeof(struct rte_ipv4_hdr) ? 4 : 6);

	srnic_icrc_store(tail, icrc);
}

int
srnic_pkt_finish(struct rte_mbuf *m, struct rte_mempool *trailer_pool)
{
	int rc = srnic_pkt_close(m, trailer_pool);

	if (rc == 0)
		srnic_pkt_seal(m);
	return rc;
}

uint32_t
srnic_roce_flow_label(uint32_t lqpn, uint32_t rqpn)
{
	/* Linux: the 64-bit product folded to 20 bits. */
	uint64_t v = (uint64_t)lqpn * rqpn;

	v ^= v >> 20;
	v ^= v >> 40;
	return (uint32_t)v & SRNIC_FLOW_LABEL_MASK;
}

uint16_t
srnic_roce_fl_sport(uint32_t flow_label)
{
	/* The top 6 bits folded into the low 14, in 0xC000..0xFFFF. */
	uint32_t fl = flow_label & SRNIC_FLOW_LABEL_MASK;
	uint32_t lo = (fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14);

	return (uint16_t)(lo | SRNIC_ROCE_SPORT_MIN);
}

uint16_t
srnic_roce_sport(uint32_t lqpn, uint32_t rqpn)
{
	return srnic_roce_fl_sport(srnic_roce_flow_label(lqpn, rqpn));
}

uint16_t
srnic_roce_ud_sport(uint32_t qpn)
{
	/* The kernel's hash_32(): the golden-ratio multiply, top 14 bits. */
	uint32_t h = (uint32_t)(qpn * 0x61C88647u) >> (32 - 14);

	return (uint16_t)(SRNIC_ROCE_SPORT_MIN | (h & 0x3FFF));
}
