/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_PKT_H
#define SRNIC_PKT_H

/**
 * @file
 * RoCEv2 packets in mbufs: parse, build, ICRC, UDP source port.
 *
 * A packet is `Ethernet [802.1Q] | IPv4 or IPv6 | UDP(4791) | BTH | ext
 * headers | payload | pad | ICRC`. The headers up to the end of the
 * extension headers must be in the first segment (true of every PMD's RX
 * and of every packet srnic builds); payload, pad and ICRC may span any
 * chain of segments, including external buffers over registered memory.
 */

#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>

#include "srnic_hdr.h"
#include "srnic_opcode.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Why a frame was not accepted. Names in srnic_parse_err_name(). */
enum srnic_parse_err {
	SRNIC_PARSE_OK = 0,
	/* not RoCEv2 at all: handed to the host-stack handler (ARP, ND...) */
	SRNIC_PARSE_NOT_IP,        /**< EtherType is neither IPv4 nor IPv6 */
	SRNIC_PARSE_NOT_UDP,       /**< IP protocol / next header is not UDP */
	SRNIC_PARSE_NOT_ROCE,      /**< UDP destination port is not 4791 */
	/* malformed: dropped and counted */
	SRNIC_PARSE_TRUNC_ETH,     /**< shorter than the Ethernet (+VLAN) header */
	SRNIC_PARSE_TRUNC_IP,      /**< shorter than the IP header */
	SRNIC_PARSE_IP_VERSION,    /**< IP version field disagrees with EtherType */
	SRNIC_PARSE_IP_OPTIONS,    /**< IPv4 UDP with IP options (IHL != 5) */
	SRNIC_PARSE_IP_FRAGMENT,   /**< IPv4 UDP fragment (MF or offset != 0) */
	SRNIC_PARSE_IP_CSUM,       /**< IPv4 header checksum wrong */
	SRNIC_PARSE_IP_LEN,        /**< IP length beyond the frame or too small */
	SRNIC_PARSE_TRUNC_UDP,     /**< no room for the UDP header */
	SRNIC_PARSE_UDP_LEN,       /**< UDP length disagrees with the IP length */
	SRNIC_PARSE_TRUNC_BTH,     /**< no room for BTH + ICRC */
	SRNIC_PARSE_BAD_OPCODE,    /**< opcode the table marks invalid */
	SRNIC_PARSE_TVER,          /**< BTH transport version is not 0 */
	SRNIC_PARSE_TRUNC_EXT,     /**< no room for the opcode's extension headers */
	SRNIC_PARSE_BAD_PAD,       /**< pad count on an opcode with no payload, or > payload */
	SRNIC_PARSE_EXCESS_LEN,    /**< bytes after the headers of an opcode with no payload */
	SRNIC_PARSE_HDR_SEGMENTED, /**< headers not in the first segment */
	SRNIC_PARSE_ICRC,          /**< ICRC mismatch */
	SRNIC_PARSE_ERR_COUNT
};

/** Name of a parse result, e.g. "icrc". */
const char *srnic_parse_err_name(enum srnic_parse_err e);

/** A parsed RoCEv2 packet: offsets into its mbuf and decoded BTH fields. */
struct srnic_pkt {
	struct rte_mbuf *mbuf;
	uint8_t *bth;            /**< BTH in the first segment */
	uint32_t mask;           /**< opcode mask (SRNIC_OPM_*) */
	uint32_t psn;
	uint32_t dqpn;
	uint32_t pay_len;        /**< payload bytes, pad excluded */
	uint16_t l3_off;         /**< IP header offset in the frame */
	uint16_t l4_off;         /**< UDP header offset */
	uint16_t bth_off;        /**< BTH offset */
	uint16_t pay_off;        /**< payload offset (may be past the first segment's end) */
	uint16_t vlan_tci;       /**< valid when has_vlan */
	uint16_t udp_sport;
	uint8_t has_vlan;
	uint8_t ip_ver;          /**< 4 or 6 */
	uint8_t opcode;
	uint8_t pad;
};

/** Pointer to an extension header of a parsed packet (must be present). */
static inline uint8_t *
srnic_pkt_hdr(const struct srnic_pkt *p, enum srnic_hdr_id h)
{
	return p->bth + srnic_opcode_table[p->opcode].offset[h];
}

/** Parse flags. */
#define SRNIC_PARSE_F_NO_ICRC 0x1  /**< skip the ICRC check (tools, tests) */
#define SRNIC_PARSE_F_NO_IPCSUM 0x2 /**< skip the IPv4 header checksum check */

/**
 * Parse and validate a frame. On SRNIC_PARSE_OK, *p describes it; on any
 * other value *p is partly filled and must not be used.
 */
enum srnic_parse_err srnic_pkt_parse(struct rte_mbuf *m, struct srnic_pkt *p,
				     unsigned int flags);

/** Copy len payload bytes starting at payload offset off into dst. */
void srnic_pkt_copy_payload(const struct srnic_pkt *p, uint32_t off, void *dst,
			    uint32_t len);

/**
 * One line describing a frame (opcode, PSN, QP, AckReq, payload, AETH,
 * RETH, AtomicETH), or why it does not parse. Returns snprintf's count.
 */
int srnic_pkt_describe(struct rte_mbuf *m, char *buf, size_t len);

/* ---- ICRC ---- */

/**
 * ICRC of a RoCEv2 packet: CRC-32 over 8 bytes of 0xFF, the IP header, UDP,
 * BTH (variant fields masked to ones), then everything up to len bytes after
 * l3_off (so len covers IP .. pad, not the ICRC itself). Walks the mbuf
 * chain as one running CRC. Returns the value to store little-endian.
 */
uint32_t srnic_icrc_compute(const struct rte_mbuf *m, uint32_t l3_off,
			    uint32_t len, uint8_t ip_ver);

/**
 * Whether the ICRC stored after len bytes from l3_off (as srnic_pkt_parse()
 * finds it) is the one computed over them: one walk over the chain for
 * both.
 */
bool srnic_icrc_check(const struct rte_mbuf *m, uint32_t l3_off, uint32_t len, uint8_t ip_ver);

/** Same over one flat buffer starting at the IP header. */
uint32_t srnic_icrc_compute_flat(const uint8_t *l3, uint32_t len, uint8_t ip_ver);

/* ---- build ---- */

/** Where a flow goes: everything below the BTH. Filled once per QP. */
struct srnic_route {
	struct rte_ether_addr src_mac;
	struct rte_ether_addr dst_mac;
	uint8_t has_vlan;
	uint16_t vlan_tci;
	uint8_t ip_ver;          /**< 4 or 6 */
	uint8_t ttl;             /**< IPv4 TTL / IPv6 hop limit */
	uint8_t tclass;          /**< DSCP/ECN byte */
	uint32_t flow_label;     /**< IPv6 only, 20 bits */
	uint16_t udp_sport;
	uint8_t src_ip[16];      /**< IPv4 in the first 4 bytes, network order */
	uint8_t dst_ip[16];
};

/** The largest Ethernet+VLAN+IP+UDP header srnic writes. */
#define SRNIC_L2L4_MAX_LEN (RTE_ETHER_HDR_LEN + 4 + 40 + 8)
/** Largest header a packet builder writes (L2-L4 + BTH + ext headers). */
#define SRNIC_PKT_HDR_MAX_LEN (SRNIC_L2L4_MAX_LEN + 64)
/** Pad + ICRC trailer, at most. */
#define SRNIC_PKT_TRAILER_MAX_LEN (3 + SRNIC_ICRC_LEN)

/**
 * A route's headers, prebuilt once per QP (rebuilt when its route changes):
 * Ethernet (+ 802.1Q), IP, UDP and the BTH with P_Key and destination QP.
 * IP and UDP lengths, the IPv4 identification, and the BTH's opcode,
 * flags and PSN are 0 in it; srnic_pkt_init_tmpl(), the builder and
 * srnic_pkt_finish() (or srnic_pkt_close()) fill them per packet. The
 * IPv4 checksum field holds the one's-complement sum of the fields every
 * packet keeps (never 0), to which srnic_pkt_close() adds the length and
 * the identification; whoever changes another IPv4 field of a packet
 * started from the template sets the field to 0 (then it is summed whole).
 */
struct srnic_hdr_tmpl {
	uint8_t len;             /**< L2 .. BTH */
	uint8_t l2_len;
	uint8_t l3_len;
	uint8_t ip_ver;
	/** destination MAC = source MAC: its frames are to the device that
	 * sends them (in-device loopback looks at those only) */
	uint8_t dst_is_src;
	/** the bytes; with the five above, an untagged IPv4 template (54
	 * bytes) is one cache line */
	uint8_t bytes[SRNIC_L2L4_MAX_LEN + SRNIC_BTH_LEN];
} __rte_cache_aligned;

/**
 * Append len bytes to m in its last segment last, whose tailroom the
 * caller checked: rte_pktmbuf_append() without its walk to the last
 * segment and its second check of the room. Returns where they go.
 */
static inline uint8_t *
srnic_pkt_append_to(struct rte_mbuf *m, struct rte_mbuf *last, uint16_t len)
{
	uint8_t *tail = rte_pktmbuf_mtod_offset(last, uint8_t *, last->data_len);

	last->data_len = (uint16_t)(last->data_len + len);
	m->pkt_len += len;
	return tail;
}

/** Fill t from route r, for packets to destination QP dqpn. */
void srnic_hdr_tmpl_build(struct srnic_hdr_tmpl *t, const struct srnic_route *r,
			  uint32_t dqpn);

/**
 * Start a packet in an empty mbuf from a template: the headers through the
 * BTH copied, the BTH opcode set, the extension headers of opcode zeroed,
 * the IPv4 identification ip_id (Linux counts it per flow). Sets
 * m->l2_len/l3_len/l4_len. Returns the BTH, or NULL when the mbuf lacks
 * room or the opcode is invalid. Payload is then appended (in this segment
 * or chained ones) and srnic_pkt_finish() closes the packet.
 */
uint8_t *srnic_pkt_init_tmpl(struct rte_mbuf *m, const struct srnic_hdr_tmpl *t,
			     uint8_t opcode, uint16_t ip_id);

/**
 * Start a packet from a route, not a template (tests and one-off packets):
 * srnic_pkt_init_tmpl() with a template built on the spot for destination
 * QP 0 (set it with srnic_bth_set_dqpn()).
 */
uint8_t *srnic_pkt_init(struct rte_mbuf *m, const struct srnic_route *r,
			uint8_t opcode, uint16_t ip_id);

/** A one's-complement sum in a 64-bit accumulator, folded to 16 bits. */
static inline uint16_t
srnic_csum_fold(uint64_t s)
{
	s = (s & 0xffffffffu) + (s >> 32);
	s = (s & 0xffffu) + (s >> 16);
	s = (s & 0xffffu) + (s >> 16);
	return (uint16_t)((s & 0xffffu) + (s >> 16));
}

/* The sum of a 20-byte IPv4 header by loads of width bytes (2 or 4; a
 * constant once inlined). */
static inline uint16_t
srnic_ipv4_sum_by(const void *ip, unsigned int width)
{
	const uint8_t *b = (const uint8_t *)ip;
	uint64_t s = 0;
	unsigned int k;

#pragma GCC unroll 10
	for (k = 0; k < 20; k += width) {
		uint16_t w16;
		uint32_t w32;

		if (width == sizeof(w16)) {
			memcpy(&w16, b + k, sizeof(w16));
			s += w16;
		} else {
			memcpy(&w32, b + k, sizeof(w32));
			s += w32;
		}
	}
	if (width == sizeof(uint16_t)) { /* ten 16-bit words: 20 bits, two folds */
		s = (s & 0xffffu) + (s >> 16);
		return (uint16_t)((s & 0xffffu) + (s >> 16));
	}
	return srnic_csum_fold(s);
}

/**
 * One's-complement sum of a 20-byte IPv4 header, folded to 16 bits: 0xFFFF
 * when the header checksum in it is right; its complement is the checksum
 * of a header whose checksum field is 0. Ten 16-bit loads: a header just
 * written by several stores (a template copy, then fields) is read without
 * a load spanning two of them, which store forwarding cannot serve.
 */
static inline uint16_t
srnic_ipv4_hdr_sum(const void *ip)
{
	return srnic_ipv4_sum_by(ip, sizeof(uint16_t));
}

/**
 * srnic_ipv4_hdr_sum() with five 32-bit loads: for headers written long
 * before (received frames), where no load waits on a recent narrow store.
 */
static inline uint16_t
srnic_ipv4_hdr_sum_rx(const void *ip)
{
	return srnic_ipv4_sum_by(ip, sizeof(uint32_t));
}

/**
 * Close a packet started by srnic_pkt_init(): pad the payload to 4 bytes
 * (BTH PadCnt), append the ICRC, fix IP and UDP lengths and the IPv4 header
 * checksum. Pad and ICRC go in the last segment when it is a writable
 * direct mbuf with room, else in a segment taken from trailer_pool.
 * Returns 0, or -ENOMEM / -EINVAL.
 */
int srnic_pkt_finish(struct rte_mbuf *m, struct rte_mempool *trailer_pool);

/**
 * srnic_pkt_finish() in two steps: close (pad, trailer, lengths, IPv4
 * checksum; the ICRC bytes 0) and seal (the ICRC, computed over the packet
 * as it is then). An engine closes each packet as it builds it and seals
 * them all just before the TX burst: the CRC's wide loads then read header
 * bytes whose small stores are long done, instead of stalling on store
 * forwarding right after them. Nothing may change the packet in between.
 * An IPv4 packet with RTE_MBUF_F_TX_IP_CKSUM in ol_flags gets header
 * checksum 0, for the NIC to fill (the ICRC masks that field).
 */
int srnic_pkt_close(struct rte_mbuf *m, struct rte_mempool *trailer_pool);
void srnic_pkt_seal(struct rte_mbuf *m);

/**
 * RoCEv2 UDP source port for a QP pair, as Linux computes it
 * (rdma_get_udp_sport(): flow label from lqpn * rqpn, folded to 14 bits,
 * in 0xC000..0xFFFF). Golden: QPN 0x25 <-> 0x25 gives 50521.
 */
uint16_t srnic_roce_sport(uint32_t lqpn, uint32_t rqpn);

/**
 * The 20-bit flow label Linux gives a connection whose address vector has
 * none (rdma_calc_flow_label(): lqpn * rqpn folded); never 0 for QPNs > 0.
 */
uint32_t srnic_roce_flow_label(uint32_t lqpn, uint32_t rqpn);

/**
 * RoCEv2 UDP source port of a flow label (rdma_flow_label_to_udp_sport():
 * the top 6 of its 20 bits folded into the low 14, | 0xC000). An address
 * vector's non-zero flow label gives the port; a zero one,
 * srnic_roce_flow_label() of the QPNs (so srnic_roce_sport()).
 */
uint16_t srnic_roce_fl_sport(uint32_t flow_label);

/**
 * RoCEv2 UDP source port of a UD QP, as Linux rxe sets it
 * (RXE_ROCE_V2_SPORT + hash_32(qpn, 14)): a UD QP has no one peer to mix
 * in. Golden (rdma_cm capture): QP1 sends from 55410.
 */
uint16_t srnic_roce_ud_sport(uint32_t qpn);

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_PKT_H */
