/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Frame -> srnic_pkt. Checks in wire order, each failure with its own
 * reason: Ethernet, IP (version, options, fragments, lengths, checksum),
 * UDP (port, length), BTH (opcode, TVer), extension headers, pad, ICRC.
 * Lengths come from the IP header, never from the frame: Ethernet may pad.
 */
#include <rte_ip.h>
#include <rte_memcpy.h>
#include <rte_udp.h>

#include "srnic_pkt.h"

static const char *const parse_err_names[SRNIC_PARSE_ERR_COUNT] = {
	[SRNIC_PARSE_OK] = "ok",
	[SRNIC_PARSE_NOT_IP] = "not_ip",
	[SRNIC_PARSE_NOT_UDP] = "not_udp",
	[SRNIC_PARSE_NOT_ROCE] = "not_roce",
	[SRNIC_PARSE_TRUNC_ETH] = "trunc_eth",
	[SRNIC_PARSE_TRUNC_IP] = "trunc_ip",
	[SRNIC_PARSE_IP_VERSION] = "ip_version",
	[SRNIC_PARSE_IP_OPTIONS] = "ip_options",
	[SRNIC_PARSE_IP_FRAGMENT] = "ip_fragment",
	[SRNIC_PARSE_IP_CSUM] = "ip_csum",
	[SRNIC_PARSE_IP_LEN] = "ip_len",
	[SRNIC_PARSE_TRUNC_UDP] = "trunc_udp",
	[SRNIC_PARSE_UDP_LEN] = "udp_len",
	[SRNIC_PARSE_TRUNC_BTH] = "trunc_bth",
	[SRNIC_PARSE_BAD_OPCODE] = "bad_opcode",
	[SRNIC_PARSE_TVER] = "tver",
	[SRNIC_PARSE_TRUNC_EXT] = "trunc_ext",
	[SRNIC_PARSE_BAD_PAD] = "bad_pad",
	[SRNIC_PARSE_EXCESS_LEN] = "excess_len",
	[SRNIC_PARSE_HDR_SEGMENTED] = "hdr_segmented",
	[SRNIC_PARSE_ICRC] = "icrc",
};

const char *
srnic_parse_err_name(enum srnic_parse_err e)
{
	if ((unsigned int)e >= SRNIC_PARSE_ERR_COUNT)
		return "unknown";
	return parse_err_names[e];
}

enum srnic_parse_err
srnic_pkt_parse(struct rte_mbuf *m, struct srnic_pkt *p, unsigned int flags)
{
	const uint32_t frame_len = rte_pktmbuf_pkt_len(m);
	const uint32_t seg_len = rte_pktmbuf_data_len(m);
	uint8_t *f = rte_pktmbuf_mtod(m, uint8_t *);
	const struct srnic_opcode_info *info;
	uint32_t off, ip_end, ip_hl, rest;
	uint16_t etype;

	p->mbuf = m;
	p->has_vlan = 0;
	p->vlan_tci = 0;

	/* Ethernet, optional 802.1Q tag. */
	if (unlikely(seg_len < RTE_ETHER_HDR_LEN))
		return frame_len < RTE_ETHER_HDR_LEN ? SRNIC_PARSE_TRUNC_ETH
						     : SRNIC_PARSE_HDR_SEGMENTED;
	etype = srnic_ld16(f + 12);
	off = RTE_ETHER_HDR_LEN;
	if (etype == RTE_ETHER_TYPE_VLAN) {
		if (unlikely(seg_len < RTE_ETHER_HDR_LEN + 4))
			return frame_len < RTE_ETHER_HDR_LEN + 4 ? SRNIC_PARSE_TRUNC_ETH
								 : SRNIC_PARSE_HDR_SEGMENTED;
		p->has_vlan = 1;
		p->vlan_tci = srnic_ld16(f + 14);
		etype = srnic_ld16(f + 16);
		off += 4;
	}
	p->l3_off = (uint16_t)off;

	/* IP */
	if (etype == RTE_ETHER_TYPE_IPV4) {
		const struct rte_ipv4_hdr *ip;
		uint16_t tot, frag;

		ip_hl = sizeof(*ip);
		if (unlikely(frame_len < off + ip_hl))
			return SRNIC_PARSE_TRUNC_IP;
		if (unlikely(seg_len < off + ip_hl))
			return SRNIC_PARSE_HDR_SEGMENTED;
		ip = (const struct rte_ipv4_hdr *)(f + off);
		if (unlikely((ip->version_ihl >> 4) != 4))
			return SRNIC_PARSE_IP_VERSION;
		/* Not UDP: the host's, options and fragments included (IGMP
		 * reports carry Router Alert); RoCE never uses either. */
		if (ip->next_proto_id != IPPROTO_UDP)
			return SRNIC_PARSE_NOT_UDP;
		if (unlikely((ip->version_ihl & 0xf) != 5))
			return SRNIC_PARSE_IP_OPTIONS;
		tot = rte_be_to_cpu_16(ip->total_length);
		if (unlikely(tot < ip_hl || off + tot > frame_len))
			return SRNIC_PARSE_IP_LEN;
		frag = rte_be_to_cpu_16(ip->fragment_offset);
		if (unlikely(frag & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)))
			return SRNIC_PARSE_IP_FRAGMENT;
		if (!(flags & SRNIC_PARSE_F_NO_IPCSUM) &&
		    (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK) != RTE_MBUF_F_RX_IP_CKSUM_GOOD &&
		    unlikely(srnic_ipv4_hdr_sum_rx(ip) != 0xffff))
			return SRNIC_PARSE_IP_CSUM;
		p->ip_ver = 4;
		ip_end = off + tot;
	} else if (etype == RTE_ETHER_TYPE_IPV6) {
		const struct rte_ipv6_hdr *ip6;
		uint16_t plen;

		ip_hl = sizeof(*ip6);
		if (unlikely(frame_len < off + ip_hl))
			return SRNIC_PARSE_TRUNC_IP;
		if (unlikely(seg_len < off + ip_hl))
			return SRNIC_PARSE_HDR_SEGMENTED;
		ip6 = (const struct rte_ipv6_hdr *)(f + off);
		if (unlikely((rte_be_to_cpu_32(ip6->vtc_flow) >> 28) != 6))
			return SRNIC_PARSE_IP_VERSION;
		plen = rte_be_to_cpu_16(ip6->payload_len);
		if (unlikely(off + ip_hl + plen > frame_len))
			return SRNIC_PARSE_IP_LEN;
		if (ip6->proto != IPPROTO_UDP)
			return SRNIC_PARSE_NOT_UDP;
		p->ip_ver = 6;
		ip_end = off + ip_hl + plen;
	} else {
		return SRNIC_PARSE_NOT_IP;
	}

	/* UDP */
	off += ip_hl;
	p->l4_off = (uint16_t)off;
	if (unlikely(off + sizeof(struct rte_udp_hdr) > ip_end))
		return SRNIC_PARSE_TRUNC_UDP;
	if (unlikely(seg_len < off + sizeof(struct rte_udp_hdr)))
		return SRNIC_PARSE_HDR_SEGMENTED;
	if (srnic_ld16(f + off + 2) != SRNIC_ROCE_UDP_PORT)
		return SRNIC_PARSE_NOT_ROCE;
	if (unlikely(srnic_ld16(f + off + 4) != ip_end - off))
		return SRNIC_PARSE_UDP_LEN;
	p->udp_sport = srnic_ld16(f + off);

	/* BTH */
	off += sizeof(struct rte_udp_hdr);
	p->bth_off = (uint16_t)off;
	if (unlikely(off + SRNIC_BTH_LEN + SRNIC_ICRC_LEN > ip_end))
		return SRNIC_PARSE_TRUNC_BTH;
	if (unlikely(seg_len < off + SRNIC_BTH_LEN))
		return SRNIC_PARSE_HDR_SEGMENTED;
	p->bth = f + off;
	p->opcode = srnic_bth_opcode(p->bth);
	info = srnic_opcode_info(p->opcode);
	p->mask = info->mask;
	if (unlikely(p->mask == 0))
		return SRNIC_PARSE_BAD_OPCODE;
	if (unlikely(srnic_bth_tver(p->bth) != 0))
		return SRNIC_PARSE_TVER;
	p->psn = srnic_bth_psn(p->bth);
	p->dqpn = srnic_bth_dqpn(p->bth);

	/* Extension headers, payload, pad. */
	if (unlikely(off + info->hdr_len + SRNIC_ICRC_LEN > ip_end))
		return SRNIC_PARSE_TRUNC_EXT;
	if (unlikely(seg_len < off + info->hdr_len))
		return SRNIC_PARSE_HDR_SEGMENTED;
	rest = ip_end - SRNIC_ICRC_LEN - (off + info->hdr_len);
	p->pad = srnic_bth_pad(p->bth);
	if (!(p->mask & SRNIC_OPM_PAYLOAD)) {
		if (unlikely(p->pad != 0))
			return SRNIC_PARSE_BAD_PAD;
		if (unlikely(rest != 0))
			return SRNIC_PARSE_EXCESS_LEN;
	} else if (unlikely(p->pad > rest)) {
		return SRNIC_PARSE_BAD_PAD;
	}
	p->pay_off = (uint16_t)(off + info->hdr_len);
	p->pay_len = rest - p->pad;

	/* ICRC, stored little-endian after the pad. */
	if (!(flags & SRNIC_PARSE_F_NO_ICRC) &&
	    unlikely(!srnic_icrc_check(m, p->l3_off, ip_end - SRNIC_ICRC_LEN - p->l3_off, p->ip_ver)))
		return SRNIC_PARSE_ICRC;
	return SRNIC_PARSE_OK;
}

void
srnic_pkt_copy_payload(const struct srnic_pkt *p, uint32_t off, void *dst, uint32_t len)
{
	const struct rte_mbuf *seg = p->mbuf;
	uint8_t *d = dst;

	off += p->pay_off;
	while (seg != NULL && off >= seg->data_len) {
		off -= seg->data_len;
		seg = seg->next;
	}
	while (len > 0 && seg != NULL) {
		uint32_t n = RTE_MIN((uint32_t)seg->data_len - off, len);

		rte_memcpy(d, rte_pktmbuf_mtod_offset(seg, const uint8_t *, off), n);
		d += n;
		len -= n;
		off = 0;
		seg = seg->next;
	}
}
