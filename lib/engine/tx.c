/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packets out (rxe's rxe_net.c): a transport packet started from the QP's
 * header template, payload attached zero-copy from registered memory or
 * copied, sealed (pad, ICRC, lengths) and queued in the engine's TX buffer;
 * the buffer's flush, once per poll (ICRCs last, the PMD's prepare, one TX
 * burst). Scatter-list copies into registered memory for the receive side.
 */
#include <rte_ethdev.h>
#include <rte_ip.h>

#include "eng_internal.h"

static inline struct rte_mbuf *
pkt_new(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_hdr_tmpl *t,
	uint8_t opcode, uint32_t psn, uint8_t **bth)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(eng->dev->pool);
	uint8_t *b;

	if (unlikely(m == NULL)) {
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return NULL;
	}
	b = srnic_pkt_init_tmpl(m, t, opcode, qp->ip_id++);
	if (unlikely(b == NULL)) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	srnic_bth_set_psn(b, psn);
	eng->tx_loop_maybe |= t->dst_is_src;
	if (t->ip_ver == 4)
		m->ol_flags |= eng->tx_ol_ipv4; /* the NIC's IPv4 checksum, if offered */
	*bth = b;
	return m;
}

struct rte_mbuf *
eng_pkt_new(struct srnic_engine *eng, struct srnic_qp *qp, uint8_t opcode, uint32_t psn,
	      uint8_t **bth)
{
	return pkt_new(eng, qp, &qp->tmpl, opcode, psn, bth);
}

struct rte_mbuf *
eng_pkt_new_tmpl(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_hdr_tmpl *t,
		 uint8_t opcode, uint32_t psn, uint8_t **bth)
{
	return pkt_new(eng, qp, t, opcode, psn, bth);
}

/* One zero-copy segment over [va, va + len) of mr at iova, chained to m. */
static inline int
pkt_attach_seg(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr, uint64_t va,
	       rte_iova_t iova, uint32_t len)
{
	struct rte_mbuf *e = rte_pktmbuf_alloc(eng->dev->ext_pool);

	if (unlikely(e == NULL)) {
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return -ENOMEM;
	}
	mr->zc_credit[eng->index].n--; /* the mbuf's reference, prepaid */
	rte_pktmbuf_attach_extbuf(e, (void *)(uintptr_t)va, iova, (uint16_t)len, &mr->shinfo);
	e->data_len = (uint16_t)len;
	e->pkt_len = len;
	eng_stat(eng, SRNIC_STAT_RESP_ZC_SEGS, 1);
	if (unlikely(rte_pktmbuf_chain(m, e) != 0)) {
		rte_pktmbuf_free(e);
		return -ENOMEM;
	}
	return 0;
}

/* An MR that is not IOVA-contiguous: a segment per run of pages whose IOVAs
 * follow each other (a piece of at most a PMTU crosses one page boundary
 * on 4 KiB pages, none on huge pages). */
static __rte_noinline int
pkt_attach_split(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr, uint64_t va,
		 uint32_t len)
{
	uint64_t pg = 1ull << mr->pg_shift;

	while (len > 0) {
		uint64_t off = va - mr->pg_base;
		uint64_t p = off >> mr->pg_shift;
		rte_iova_t iova = mr->iova_pg[p] + (off & (pg - 1));
		uint32_t n = (uint32_t)RTE_MIN((uint64_t)len, pg - (off & (pg - 1)));
		int rc;

		while (n < len && mr->iova_pg[p + 1] == mr->iova_pg[p] + pg) {
			n = (uint32_t)RTE_MIN((uint64_t)len, n + pg);
			p++;
		}
		if (n < len)
			eng_stat(eng, SRNIC_STAT_TX_IOVA_SPLIT, 1);
		/* The caller had a reference for the first segment; the few
		 * more a split takes fit in the room above SRNIC_MR_MAX_ZC_REFS. */
		if (mr->zc_credit[eng->index].n == 0) {
			__atomic_add_fetch(&mr->shinfo.refcnt, SRNIC_ZC_CREDIT_BATCH,
					   __ATOMIC_ACQ_REL);
			mr->zc_credit[eng->index].n = SRNIC_ZC_CREDIT_BATCH;
		}
		rc = pkt_attach_seg(eng, m, mr, va, iova, n);
		if (rc != 0)
			return rc;
		va += n;
		len -= n;
	}
	return 0;
}

int
eng_pkt_attach(struct srnic_engine *eng, struct rte_mbuf *m, struct srnic_mr *mr, uint64_t va,
		 uint32_t len)
{
	if (len == 0)
		return 0;
	va += mr->va_off; /* the pointer (srnic_mr_at()) from here on */
	/* Memory the port's DMA cannot reach (no memseg list or mapping for
	 * it, lib/core/mr.c) is never attached. */
	if (unlikely(mr->no_dma)) {
		if (eng_pkt_attach_copy(eng, m, (const void *)(uintptr_t)va, len) != 0)
			return -ENOMEM;
		eng_stat(eng, SRNIC_STAT_TX_UNMAPPED_COPY, 1);
		return 0;
	}
	/* References on the MR are bought in batches per engine: one atomic
	 * on the shared line per SRNIC_ZC_CREDIT_BATCH attachments, not one
	 * each (the line lives with the lcore that frees the mbufs). */
	if (unlikely(mr->zc_credit[eng->index].n == 0) &&
	    rte_mbuf_ext_refcnt_read(&mr->shinfo) < SRNIC_MR_MAX_ZC_REFS) {
		/* Atomic even at refcnt 1 (rte_mbuf_ext_refcnt_update() is
		 * not, there): another engine may be buying too. */
		__atomic_add_fetch(&mr->shinfo.refcnt, SRNIC_ZC_CREDIT_BATCH, __ATOMIC_ACQ_REL);
		mr->zc_credit[eng->index].n = SRNIC_ZC_CREDIT_BATCH;
	}
	if (likely(mr->zc_credit[eng->index].n != 0)) {
		if (unlikely(mr->iova_pg != NULL))
			return pkt_attach_split(eng, m, mr, va, len);
		return pkt_attach_seg(eng, m, mr, va,
				      mr->iova == RTE_BAD_IOVA ? RTE_BAD_IOVA :
				      mr->iova + (va - (uint64_t)(uintptr_t)mr->addr), len);
	}
	/* The 16-bit shared refcount is nearly full: copy this one. */
	if (eng_pkt_attach_copy(eng, m, (const void *)(uintptr_t)va, len) != 0)
		return -ENOMEM;
	eng_stat(eng, SRNIC_STAT_RESP_ZC_COPY, 1);
	return 0;
}

int
eng_pkt_attach_copy(struct srnic_engine *eng, struct rte_mbuf *m, const void *src, uint32_t len)
{
	struct rte_mbuf *e = rte_pktmbuf_alloc(eng->dev->tx_copy_pool);

	if (e == NULL || rte_pktmbuf_tailroom(e) < len) {
		rte_pktmbuf_free(e);
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return -ENOMEM;
	}
	rte_memcpy(rte_pktmbuf_append(e, (uint16_t)len), src, len);
	if (unlikely(rte_pktmbuf_chain(m, e) != 0)) {
		rte_pktmbuf_free(e);
		return -ENOMEM;
	}
	return 0;
}

/* A packet of more segments than the port takes, copied into one mbuf of
 * the TX copy pool (its data room holds a jumbo frame). Frees m (and with it
 * the MR references of its attached pieces); NULL when out of mbufs. */
static __rte_noinline struct rte_mbuf *
eng_linearise(struct srnic_engine *eng, struct rte_mbuf *m)
{
	struct rte_mbuf *n = rte_pktmbuf_alloc(eng->dev->tx_copy_pool);
	const struct rte_mbuf *s;
	uint8_t *d;

	if (unlikely(n == NULL || rte_pktmbuf_tailroom(n) < rte_pktmbuf_pkt_len(m))) {
		rte_pktmbuf_free(n);
		rte_pktmbuf_free(m);
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		return NULL;
	}
	d = (uint8_t *)rte_pktmbuf_append(n, (uint16_t)rte_pktmbuf_pkt_len(m));
	for (s = m; s != NULL; s = s->next) {
		rte_memcpy(d, rte_pktmbuf_mtod(s, const uint8_t *), s->data_len);
		d += s->data_len;
	}
	n->tx_offload = m->tx_offload;
	n->ol_flags |= m->ol_flags & RTE_MBUF_F_TX_OFFLOAD_MASK;
	rte_pktmbuf_free(m);
	eng_stat(eng, SRNIC_STAT_TX_LINEARISED, 1);
	return n;
}

int
eng_pkt_xmit(struct srnic_engine *eng, struct rte_mbuf *m)
{
	if (unlikely(srnic_pkt_close(m, eng->dev->pool) != 0)) {
		eng_stat(eng, SRNIC_STAT_TX_NOMBUF, 1);
		rte_pktmbuf_free(m);
		return -ENOMEM;
	}
	/* Before the seal: the ICRC then runs over the copy, one flat piece. */
	if (unlikely(m->nb_segs > eng->tx_seg_max)) {
		m = eng_linearise(eng, m);
		if (m == NULL)
			return -ENOMEM;
	}
	eng_tx_queue(eng, m, 1); /* sealed at the flush */
	return 0;
}

enum srnic_key_err
eng_sge_copy_in_sgl(struct srnic_qp *qp, const struct ibv_sge *sge, unsigned int nsge,
		      uint64_t off, const struct srnic_pkt *pkt, uint32_t len)
{
	uint32_t done = 0;
	unsigned int i;

	for (i = 0; i < nsge && len > 0; i++) {
		struct srnic_mr *mr;
		uint32_t n;
		enum srnic_key_err ke;

		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		n = (uint32_t)RTE_MIN((uint64_t)len, sge[i].length - off);
		ke = srnic_mr_check(qp->dev, qp->pd, sge[i].lkey, IBV_ACCESS_LOCAL_WRITE,
				    sge[i].addr + off, n, &mr);
		if (unlikely(ke != SRNIC_KEY_OK))
			return ke;
		srnic_pkt_copy_payload(pkt, done, srnic_mr_at(mr, sge[i].addr + off), n);
		done += n;
		len -= n;
		off = 0;
	}
	return len == 0 ? SRNIC_KEY_OK : SRNIC_KEY_BOUNDS;
}

/* A frame for this device: our MAC and our address. The MAC alone is not
 * enough: two hosts on one segment may share one (two memif ports of one
 * host take the same default MAC), and a frame to the other's address
 * must still go out. The address is read only when the MAC matches. */
static inline bool
eng_frame_is_ours(const struct srnic_engine *eng, const struct rte_mbuf *m)
{
	const struct srnic_dev *dev = eng->dev;
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	const uint8_t *l3 = f + m->l2_len;

	if (likely(!rte_is_same_ether_addr((const struct rte_ether_addr *)f, &dev->mac)))
		return false;
	if ((l3[0] >> 4) == 4)
		return dev->ip_ver == 4 &&
		       memcmp(l3 + offsetof(struct rte_ipv4_hdr, dst_addr), dev->ip, 4) == 0;
	/* IPv6: any of our GIDs (the link-local one on any device) */
	return srnic_dev_gid_find(dev, l3 + offsetof(struct rte_ipv6_hdr, dst_addr)) >= 0;
}

/* A frame to a multicast group while QPs of this device are in some group:
 * the device receives a copy of it too, as Linux's IP stack loops a
 * multicast datagram back to its own host (IP_MULTICAST_LOOP, on by
 * default) and rxe takes it there; the receive finds the group's QPs, or
 * counts it rx_mcast_no_group. */
static inline bool
eng_frame_mcast_here(const struct srnic_engine *eng, const struct rte_mbuf *m)
{
	return rte_is_multicast_ether_addr(rte_pktmbuf_mtod(m, const struct rte_ether_addr *)) &&
	       atomic_load_explicit(&eng->dev->nb_mcast_grp, memory_order_relaxed) != 0;
}

/* Frame m to our RX path at the next poll, as the port would have sent it
 * (its IPv4 checksum made; no ICRC: eng_rx_loopback() skips the check). */
static void
eng_loop_push(struct srnic_engine *eng, struct rte_mbuf *m)
{
	if (m->ol_flags & RTE_MBUF_F_TX_IP_CKSUM) {
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *,
								  m->l2_len);

		ip->hdr_checksum = 0;
		ip->hdr_checksum = rte_ipv4_cksum(ip);
	}
	m->ol_flags = 0;
	m->port = eng->port_id;
	eng->loop_buf[eng->loop_len++] = m;
	eng_stat(eng, SRNIC_STAT_TX_LOOPBACK, 1);
}

/* The copy of a multicast frame the device receives (the frame itself
 * leaves by the port). */
static void
eng_tx_mcast_copy(struct srnic_engine *eng, struct rte_mbuf *m)
{
	struct rte_mbuf *c = eng->loop_len < SRNIC_TX_BUF_SIZE ?
			     rte_pktmbuf_copy(m, eng->dev->pool, 0, UINT32_MAX) : NULL;

	if (unlikely(c == NULL)) {
		eng_stat(eng, SRNIC_STAT_RX_MCAST_COPY_DROP, 1);
		return;
	}
	eng_loop_push(eng, c);
}

/* In-device loopback, as rxe_loopback(): a RoCEv2 frame to our own MAC and
 * address (a QP of this device to another of its QPs, or to itself) would leave
 * by the port and not come back, so it is taken out of tx_buf[i] (no
 * ICRC: it crosses no wire, and its receive skips the check) and goes to
 * our RX path at the start of the next poll (eng_recv_burst(), which
 * hands it to the engine of its QP). Zero-copy pieces (READ responses
 * over registered memory) stay attached: the receive copies from them
 * and drops their MR reference when it frees the frame, as a PMD does
 * after TX. Returns tx_len, less the frames taken. */
static __rte_noinline uint16_t
eng_tx_loopback(struct srnic_engine *eng, uint16_t i)
{
	uint16_t keep = i;

	for (; i < eng->tx_len; i++) {
		struct rte_mbuf *m = eng->tx_buf[i];

		if (!eng->tx_roce[i] || !eng_frame_is_ours(eng, m)) {
			if (eng->tx_roce[i] && eng_frame_mcast_here(eng, m))
				eng_tx_mcast_copy(eng, m);
			eng->tx_roce[keep] = eng->tx_roce[i];
			eng->tx_buf[keep++] = m;
			continue;
		}
		/* never full: the poll before this flush emptied it, and each
		 * frame of the burst puts at most one there */
		eng_loop_push(eng, m);
	}
	return keep;
}

void
eng_tx_flush(struct srnic_engine *eng)
{
	uint16_t sent, i;

	if (eng->tx_len == 0)
		return;
	/* ICRCs last, over packets built a while ago (srnic_pkt_seal()).
	 * A frame to our own MAC and address is for our RX, not the port:
	 * its first ends the sealing here and the rest of the burst is
	 * sorted once. Only a burst that holds a frame to our own MAC
	 * (tx_loop_maybe: a QP's template or a UD destination said so as it
	 * was built) pays a MAC compare per frame. */
	for (i = eng->tx_sealed; i < eng->tx_len; i++) {
		if (!eng->tx_roce[i])
			continue;
		if (unlikely(eng->tx_loop_maybe) && (eng_frame_is_ours(eng, eng->tx_buf[i]) ||
						     eng_frame_mcast_here(eng, eng->tx_buf[i]))) {
			eng->tx_len = eng_tx_loopback(eng, i);
			for (; i < eng->tx_len; i++)
				if (eng->tx_roce[i])
					srnic_pkt_seal(eng->tx_buf[i]);
			break;
		}
		srnic_pkt_seal(eng->tx_buf[i]);
	}
	/* every frame queued so far was looked at */
	eng->tx_loop_maybe = 0;
	if (eng->tx_len == 0) {
		eng->tx_sealed = 0;
		return;
	}
	/* The PMD's checks and fix-ups (e.g. i40e refuses more than 8
	 * segments), once per packet: those left over were prepared. One
	 * call when it takes them all (no callback: it returns at once). */
	i = eng->tx_sealed;
	while (i < eng->tx_len) {
		i += rte_eth_tx_prepare(eng->port_id, eng->queue, &eng->tx_buf[i],
					(uint16_t)(eng->tx_len - i));
		if (likely(i == eng->tx_len))
			break;
		/* tx_buf[i] refused (rte_errno): dropped like a lost packet,
		 * the requester's retry or the peer's resends recover */
		eng_stat(eng, SRNIC_STAT_TX_PREPARE_DROP, 1);
		rte_pktmbuf_free(eng->tx_buf[i]);
		memmove(&eng->tx_buf[i], &eng->tx_buf[i + 1],
			(eng->tx_len - i - 1) * sizeof(eng->tx_buf[0]));
		eng->tx_len--;
	}
	eng_stat(eng, SRNIC_STAT_TX_BURSTS, 1);
	sent = eng_tx_burst(eng, eng->tx_buf, eng->tx_len);
	if (sent < eng->tx_len)
		memmove(eng->tx_buf, eng->tx_buf + sent, (eng->tx_len - sent) * sizeof(eng->tx_buf[0]));
	eng->tx_len -= sent;
	eng->tx_sealed = eng->tx_len;
}
