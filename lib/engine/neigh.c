/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device as a well-behaved host: it answers ARP requests and IPv6
 * neighbour solicitations for its address, and asks for a QP's peer when
 * the address vector gave only a GID. It learns only what a QP asked for
 * (a pending entry) or what asked for us, refreshes what it knows from
 * replies and gratuitous ARP (a MAC move), keeps the application's static
 * entries and evicts the least recently used. Not the data path: the
 * table is small and behind a spinlock.
 */
#include <rte_arp.h>
#include <rte_icmp.h>
#include <rte_ip.h>

#include "eng_internal.h"
#include "neigh.h"

#define ND_NS 135
#define ND_NA 136
#define ND_OPT_SRC_LL 1
#define ND_OPT_TGT_LL 2
#define ND_NA_FLAG_SOLICITED 0x40
#define ND_NA_FLAG_OVERRIDE 0x20
#define ND_HDR_LEN 24 /* type, code, cksum, flags/reserved, target */
#define ND_OPT_LL_LEN 8
#define ND_HOP_LIMIT 255

/* Under neigh_lock. */
static struct srnic_neigh *
neigh_find(struct srnic_dev *dev, const uint8_t *ip)
{
	unsigned int i;

	for (i = 0; i < SRNIC_NEIGH_MAX; i++) {
		struct srnic_neigh *n = &dev->neigh[i];

		if (n->state != SRNIC_NEIGH_FREE && memcmp(n->ip, ip, sizeof(n->ip)) == 0)
			return n;
	}
	return NULL;
}

/* A slot for a new entry, under neigh_lock: a free one, else the least
 * recently used entry that may go. Static entries never go; live ones (a
 * QP looked them up) and pending ones (a QP waits) only for a QP's need,
 * so that a flood of ARP on the segment evicts nothing a QP uses. */
static struct srnic_neigh *
neigh_victim(struct srnic_dev *dev, bool for_qp)
{
	struct srnic_neigh *v = NULL;
	unsigned int i;

	for (i = 0; i < SRNIC_NEIGH_MAX; i++) {
		struct srnic_neigh *n = &dev->neigh[i];

		if (n->state == SRNIC_NEIGH_FREE)
			return n;
		if (n->state == SRNIC_NEIGH_STATIC ||
		    (!for_qp && (n->live || n->state == SRNIC_NEIGH_PENDING)))
			continue;
		if (v == NULL || n->last_used < v->last_used)
			v = n;
	}
	return v;
}

static void
neigh_fill(struct srnic_dev *dev, struct srnic_neigh *n, const uint8_t *ip,
	   const struct rte_ether_addr *mac, enum srnic_neigh_state st, bool live)
{
	memset(n, 0, sizeof(*n));
	memcpy(n->ip, ip, sizeof(n->ip));
	n->ip_ver = srnic_neigh_key_v4(n->ip) ? 4 : 6;
	if (mac != NULL)
		n->mac = *mac;
	n->state = (uint8_t)st;
	n->live = live;
	n->last_used = ++dev->neigh_clock;
}

int
srnic_neigh_peek(struct srnic_dev *dev, const uint8_t *ip, struct rte_ether_addr *mac,
		 bool *is_static)
{
	struct srnic_neigh *n;
	int rc = -ENOENT;

	if (srnic_dev_gid_find(dev, ip) >= 0) {
		*mac = dev->mac; /* ourselves, as fixed as a static entry */
		*is_static = true;
		return 0;
	}
	rte_spinlock_lock(&dev->neigh_lock);
	n = neigh_find(dev, ip);
	if (n != NULL && n->state != SRNIC_NEIGH_PENDING) {
		*mac = n->mac;
		*is_static = n->state == SRNIC_NEIGH_STATIC;
		rc = 0;
	}
	rte_spinlock_unlock(&dev->neigh_lock);
	return rc;
}

int
srnic_neigh_lookup(struct srnic_dev *dev, const uint8_t *ip, struct rte_ether_addr *mac)
{
	struct srnic_neigh *n;
	int rc = -ENOENT;

	/* Our own address: our MAC, and the engine's TX hands such frames
	 * to our own RX (in-device loopback, eng_tx_loopback()). */
	if (srnic_dev_gid_find(dev, ip) >= 0) {
		*mac = dev->mac;
		return 0;
	}
	rte_spinlock_lock(&dev->neigh_lock);
	n = neigh_find(dev, ip);
	if (n != NULL && n->state != SRNIC_NEIGH_PENDING) {
		*mac = n->mac;
		n->live = 1;
		n->last_used = ++dev->neigh_clock;
		rc = 0;
	}
	rte_spinlock_unlock(&dev->neigh_lock);
	return rc;
}

void
srnic_neigh_want(struct srnic_dev *dev, const uint8_t *ip)
{
	struct srnic_neigh *n;

	rte_spinlock_lock(&dev->neigh_lock);
	n = neigh_find(dev, ip);
	if (n != NULL) {
		n->live = 1;
		n->last_used = ++dev->neigh_clock;
	} else if ((n = neigh_victim(dev, true)) != NULL) {
		neigh_fill(dev, n, ip, NULL, SRNIC_NEIGH_PENDING, true);
	}
	rte_spinlock_unlock(&dev->neigh_lock);
}

int
srnic_neigh_update(struct srnic_dev *dev, const uint8_t *ip, const struct rte_ether_addr *mac,
		   enum srnic_neigh_src src)
{
	struct srnic_neigh *n;
	int rc = 0;

	rte_spinlock_lock(&dev->neigh_lock);
	n = neigh_find(dev, ip);
	if (n != NULL) {
		/* The application's entries are not the wire's to change. */
		if (n->state == SRNIC_NEIGH_STATIC && src != SRNIC_NEIGH_SRC_STATIC)
			goto out;
		/* A reply or gratuitous ARP for an address we know refreshes
		 * it: a MAC move reaches the QPs (they take it at their next
		 * retry timeout, eng_route_refresh()). */
		if (n->state == SRNIC_NEIGH_PENDING || !rte_is_same_ether_addr(&n->mac, mac) ||
		    src == SRNIC_NEIGH_SRC_STATIC) {
			n->mac = *mac;
			n->state = src == SRNIC_NEIGH_SRC_STATIC ? SRNIC_NEIGH_STATIC
								 : SRNIC_NEIGH_LEARNED;
			atomic_fetch_add_explicit(&dev->neigh_gen, 1, memory_order_release);
		}
		n->last_used = ++dev->neigh_clock;
		goto out;
	}
	/* Learn only what asked us (we will talk to it) or what the
	 * application set; other hosts' chatter is not ours to keep. */
	if (src == SRNIC_NEIGH_SRC_HEARD)
		goto out;
	n = neigh_victim(dev, src == SRNIC_NEIGH_SRC_STATIC);
	if (n == NULL) {
		rc = -ENOSPC;
		goto out;
	}
	neigh_fill(dev, n, ip, mac,
		   src == SRNIC_NEIGH_SRC_STATIC ? SRNIC_NEIGH_STATIC : SRNIC_NEIGH_LEARNED, false);
	atomic_fetch_add_explicit(&dev->neigh_gen, 1, memory_order_release);
out:
	rte_spinlock_unlock(&dev->neigh_lock);
	return rc;
}

/* The entry of ip made or kept pending, and marked for an engine to
 * solicit if the last ask is SRNIC_ARP_RETRY_MS old. 0; -ENOSPC (the
 * table is full of static entries: a reply would not be learned). */
int
srnic_neigh_ask(struct srnic_dev *dev, const uint8_t *ip)
{
	uint64_t now = rte_get_timer_cycles();
	struct srnic_neigh *n;
	int rc = 0;

	rte_spinlock_lock(&dev->neigh_lock);
	n = neigh_find(dev, ip);
	if (n == NULL) {
		n = neigh_victim(dev, true);
		if (n == NULL) {
			rc = -ENOSPC;
			goto out;
		}
		neigh_fill(dev, n, ip, NULL, SRNIC_NEIGH_PENDING, true);
	} else {
		/* learned between the lookup and here: the caller's next
		 * call finds it; nothing to ask */
		if (n->state != SRNIC_NEIGH_PENDING)
			goto out;
		n->live = 1;
		n->last_used = ++dev->neigh_clock;
	}
	if (now >= n->ask_next_tsc) {
		n->ask = 1;
		n->ask_next_tsc = now + rte_get_timer_hz() / 1000 * SRNIC_ARP_RETRY_MS;
		/* inside the lock: an engine that sees it scans after us */
		atomic_store_explicit(&dev->neigh_ask, 1, memory_order_release);
	}
out:
	rte_spinlock_unlock(&dev->neigh_lock);
	return rc;
}

static void
neigh_tx(struct srnic_engine *eng, struct rte_mbuf *m, enum srnic_stat s)
{
	if (eng_tx_free(eng) == 0) {
		rte_pktmbuf_free(m);
		return;
	}
	eng_stat(eng, s, 1);
	eng_tx(eng, m);
}

static bool
arp_rx(struct srnic_engine *eng, struct rte_mbuf *m, uint32_t l2)
{
	struct srnic_dev *dev = eng->dev;
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_arp_hdr *arp;
	union ibv_gid key;
	uint32_t sip, tip;
	bool asks_us;

	/* Not the Ethernet/IPv4 ARP of an IPv4 device: the host's. */
	if (rte_pktmbuf_data_len(m) < l2 + sizeof(*arp) || dev->ip_ver != 4)
		return false;
	arp = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, l2);
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) || arp->arp_hlen != 6 ||
	    arp->arp_plen != 4)
		return false;
	eng_stat(eng, SRNIC_STAT_RX_ARP, 1);
	sip = arp->arp_data.arp_sip;
	tip = arp->arp_data.arp_tip;
	asks_us = arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) &&
		  memcmp(&tip, dev->ip, 4) == 0;
	if (sip != 0) {
		srnic_gid_from_ipv4(&key, &sip);
		srnic_neigh_update(dev, key.raw, &arp->arp_data.arp_sha,
				   asks_us ? SRNIC_NEIGH_SRC_ASKED_US : SRNIC_NEIGH_SRC_HEARD);
	}
	if (asks_us) {
		/* Answer in place. */
		arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REPLY);
		arp->arp_data.arp_tha = arp->arp_data.arp_sha;
		arp->arp_data.arp_sha = dev->mac;
		arp->arp_data.arp_tip = sip;
		memcpy(&arp->arp_data.arp_sip, dev->ip, 4);
		eth->dst_addr = eth->src_addr;
		eth->src_addr = dev->mac;
		neigh_tx(eng, m, SRNIC_STAT_TX_ARP);
		return true;
	}
	rte_pktmbuf_free(m);
	return true;
}

/* Fill IPv6 + ICMPv6 checksum of an ND frame built in m. */
static void
nd_finish(struct rte_ipv6_hdr *ip6, uint8_t *icmp, uint16_t icmp_len)
{
	ip6->payload_len = rte_cpu_to_be_16(icmp_len);
	icmp[2] = icmp[3] = 0;
	srnic_st16(icmp + 2, rte_be_to_cpu_16(rte_ipv6_udptcp_cksum(ip6, icmp)));
}

/* An NS or NA from our address src (a GID of the table, IPv6). */
static struct rte_mbuf *
nd_build(struct srnic_engine *eng, uint8_t type, const struct rte_ether_addr *dmac,
	 const uint8_t *src, const uint8_t *dip, const uint8_t *target, uint8_t flags)
{
	struct srnic_dev *dev = eng->dev;
	uint16_t icmp_len = ND_HDR_LEN + ND_OPT_LL_LEN;
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->pool);
	struct rte_ether_hdr *eth;
	struct rte_ipv6_hdr *ip6;
	uint8_t *icmp;

	if (m == NULL)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*ip6) + icmp_len);
	if (eth == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	eth->dst_addr = *dmac;
	eth->src_addr = dev->mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6);
	ip6 = (struct rte_ipv6_hdr *)(eth + 1);
	ip6->vtc_flow = rte_cpu_to_be_32(6u << 28);
	ip6->proto = IPPROTO_ICMPV6;
	ip6->hop_limits = ND_HOP_LIMIT;
	memcpy(ip6->src_addr, src, 16);
	memcpy(ip6->dst_addr, dip, 16);
	icmp = (uint8_t *)(ip6 + 1);
	memset(icmp, 0, icmp_len);
	icmp[0] = type;
	icmp[4] = flags;
	memcpy(icmp + 8, target, 16);
	icmp[ND_HDR_LEN] = type == ND_NS ? ND_OPT_SRC_LL : ND_OPT_TGT_LL;
	icmp[ND_HDR_LEN + 1] = 1; /* length in units of 8 bytes */
	memcpy(icmp + ND_HDR_LEN + 2, &dev->mac, RTE_ETHER_ADDR_LEN);
	nd_finish(ip6, icmp, icmp_len);
	return m;
}

/* RFC 4861 7.1.1, 7.1.2: hop limit 255 (no router forwarded it: the sender
 * is on the link), code 0, the message within the frame, a valid checksum. */
static bool
nd_valid(const struct rte_ipv6_hdr *ip6, const uint8_t *icmp, uint32_t avail)
{
	uint32_t plen = rte_be_to_cpu_16(ip6->payload_len), sum;

	if (ip6->hop_limits != ND_HOP_LIMIT || icmp[1] != 0 || plen < ND_HDR_LEN || plen > avail)
		return false;
	sum = (uint32_t)rte_raw_cksum(icmp, plen) + rte_ipv6_phdr_cksum(ip6, 0);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

static bool
nd_rx(struct srnic_engine *eng, struct rte_mbuf *m, uint32_t l2)
{
	struct srnic_dev *dev = eng->dev;
	struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	struct rte_ipv6_hdr *ip6;
	uint8_t *icmp;
	uint32_t len = rte_pktmbuf_data_len(m), plen, o;
	const struct rte_ether_addr *ll = NULL;
	int tgt;

	/* Every device has IPv6: its link-local GID, whatever its address. */
	if (len < l2 + sizeof(*ip6) + ND_HDR_LEN)
		return false;
	ip6 = rte_pktmbuf_mtod_offset(m, struct rte_ipv6_hdr *, l2);
	if (ip6->proto != IPPROTO_ICMPV6)
		return false;
	icmp = (uint8_t *)(ip6 + 1);
	if (icmp[0] != ND_NS && icmp[0] != ND_NA)
		return false;
	if (!nd_valid(ip6, icmp, len - l2 - (uint32_t)sizeof(*ip6))) {
		/* discarded, learned nothing from (a forged NA would redirect
		 * a QP's traffic) */
		eng_stat(eng, SRNIC_STAT_RX_MALFORMED, 1);
		rte_pktmbuf_free(m);
		return true;
	}
	plen = rte_be_to_cpu_16(ip6->payload_len);
	eng_stat(eng, SRNIC_STAT_RX_ND, 1);
	for (o = ND_HDR_LEN; o + ND_OPT_LL_LEN <= plen && icmp[o + 1] != 0; o += icmp[o + 1] * 8u)
		if ((icmp[0] == ND_NS && icmp[o] == ND_OPT_SRC_LL) ||
		    (icmp[0] == ND_NA && icmp[o] == ND_OPT_TGT_LL))
			ll = (const struct rte_ether_addr *)(icmp + o + 2);
	tgt = srnic_dev_gid_find(dev, icmp + 8);
	if (icmp[0] == ND_NA) {
		srnic_neigh_update(dev, icmp + 8, ll != NULL ? ll : &eth->src_addr,
				   SRNIC_NEIGH_SRC_HEARD);
	} else if (tgt >= 0 && !srnic_gid_is_v4mapped(&dev->gid[tgt])) {
		const uint8_t *us = dev->gid[tgt].raw;
		static const uint8_t unspec[16];
		static const uint8_t all_nodes[16] = { 0xff, 0x02, [15] = 1 };
		static const struct rte_ether_addr all_nodes_mac = { { 0x33, 0x33, 0, 0, 0, 1 } };
		struct rte_mbuf *r;

		if (memcmp(ip6->src_addr, unspec, 16) == 0) {
			/* Duplicate address detection of our address: nobody
			 * to learn, defend it to all-nodes, not solicited
			 * (RFC 4861 7.2.4). */
			r = nd_build(eng, ND_NA, &all_nodes_mac, us, all_nodes, us,
				     ND_NA_FLAG_OVERRIDE);
		} else {
			srnic_neigh_update(dev, ip6->src_addr, ll != NULL ? ll : &eth->src_addr,
					   SRNIC_NEIGH_SRC_ASKED_US);
			r = nd_build(eng, ND_NA, &eth->src_addr, us, ip6->src_addr, us,
				     ND_NA_FLAG_SOLICITED | ND_NA_FLAG_OVERRIDE);
		}
		if (r != NULL)
			neigh_tx(eng, r, SRNIC_STAT_TX_ND);
	}
	rte_pktmbuf_free(m);
	return true;
}

bool
eng_neigh_rx(struct srnic_engine *eng, struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t l2 = RTE_ETHER_HDR_LEN;
	uint16_t et;

	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + 4)
		return false;
	et = srnic_ld16(f + 12);
	if (et == RTE_ETHER_TYPE_VLAN) {
		et = srnic_ld16(f + 16);
		l2 += 4;
	}
	if (et == RTE_ETHER_TYPE_ARP)
		return arp_rx(eng, m, l2);
	if (et == RTE_ETHER_TYPE_IPV6)
		return nd_rx(eng, m, l2);
	return false;
}

/* Whether a solicitation for ip may go now: one per neighbour per
 * SRNIC_ARP_RETRY_MS, whoever asks. Every QP to a peer asks at each of its
 * retry timeouts (eng_route_refresh()), each unresolved QP and UD
 * sender at its own pace: thousands of QPs to a dead peer would otherwise
 * broadcast thousands of requests a second for one address (RFC 1122
 * 2.3.2.1 asks for a per-destination limit; Linux times its requests per
 * entry, 1 s apart by default; srnic's 100 ms keeps first resolution
 * quick). An address with no entry (the table full of
 * entries it may not evict) is not limited: there is nothing to time it by. */
static bool
neigh_solicit_due(struct srnic_dev *dev, const uint8_t *ip)
{
	uint64_t now = rte_get_timer_cycles();
	uint64_t gap = rte_get_timer_hz() / 1000 * SRNIC_ARP_RETRY_MS;
	struct srnic_neigh *n;
	bool due = true;

	rte_spinlock_lock(&dev->neigh_lock);
	n = neigh_find(dev, ip);
	if (n != NULL) {
		if (n->solicit_tsc != 0 && now - n->solicit_tsc < gap)
			due = false;
		else
			n->solicit_tsc = now;
	}
	rte_spinlock_unlock(&dev->neigh_lock);
	return due;
}

void
eng_neigh_solicit(struct srnic_engine *eng, const uint8_t *ip)
{
	struct srnic_dev *dev = eng->dev;
	struct rte_mbuf *m;

	if (!neigh_solicit_due(dev, ip)) {
		eng_stat(eng, SRNIC_STAT_NEIGH_SOLICIT_LIMITED, 1);
		return;
	}
	if (srnic_neigh_key_v4(ip)) {
		struct rte_ether_hdr *eth;
		struct rte_arp_hdr *arp;

		if (dev->ip_ver != 4)
			return; /* no IPv4 address to ask from (no route takes one) */
		m = rte_pktmbuf_alloc(dev->pool);
		if (m == NULL)
			return;
		eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*arp));
		if (eth == NULL) {
			rte_pktmbuf_free(m);
			return;
		}
		memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
		eth->src_addr = dev->mac;
		eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		arp = (struct rte_arp_hdr *)(eth + 1);
		arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
		arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
		arp->arp_hlen = RTE_ETHER_ADDR_LEN;
		arp->arp_plen = 4;
		arp->arp_opcode = rte_cpu_to_be_16(RTE_ARP_OP_REQUEST);
		arp->arp_data.arp_sha = dev->mac;
		memcpy(&arp->arp_data.arp_sip, dev->ip, 4);
		memset(&arp->arp_data.arp_tha, 0, RTE_ETHER_ADDR_LEN);
		memcpy(&arp->arp_data.arp_tip, ip + 12, 4);
		neigh_tx(eng, m, SRNIC_STAT_TX_ARP);
	} else {
		/* Solicited-node multicast ff02::1:ffXX:XXXX, MAC 33:33:ff:XX:XX:XX. */
		uint8_t dip[16] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, ip[13], ip[14],
				    ip[15] };
		struct rte_ether_addr dmac = { { 0x33, 0x33, 0xff, ip[13], ip[14], ip[15] } };
		/* from the address the target would answer: link-local for a
		 * link-local target or on a device with no global IPv6 */
		bool ll = (ip[0] == 0xfe && (ip[1] & 0xc0) == 0x80) || dev->ip_ver != 6;
		const uint8_t *src = dev->gid[ll ? SRNIC_GID_INDEX_LL : SRNIC_GID_INDEX_IP].raw;

		m = nd_build(eng, ND_NS, &dmac, src, dip, ip, 0);
		if (m != NULL)
			neigh_tx(eng, m, SRNIC_STAT_TX_ND);
	}
}

void
eng_neigh_ask_run(struct srnic_engine *eng)
{
	struct srnic_dev *dev = eng->dev;
	uint8_t ip[SRNIC_NEIGH_MAX][16];
	unsigned int i, n = 0;

	/* one engine takes the batch; a later ask sets the flag again */
	if (atomic_exchange_explicit(&dev->neigh_ask, 0, memory_order_acq_rel) == 0)
		return;
	rte_spinlock_lock(&dev->neigh_lock);
	for (i = 0; i < SRNIC_NEIGH_MAX; i++) {
		struct srnic_neigh *e = &dev->neigh[i];

		if (!e->ask)
			continue;
		e->ask = 0;
		if (e->state == SRNIC_NEIGH_PENDING)
			memcpy(ip[n++], e->ip, 16);
	}
	rte_spinlock_unlock(&dev->neigh_lock);
	/* outside the lock: building and queueing a frame is not the table's */
	for (i = 0; i < n; i++)
		eng_neigh_solicit(eng, ip[i]);
}
