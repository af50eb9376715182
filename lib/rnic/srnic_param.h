/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_PARAM_H
#define SRNIC_PARAM_H

/**
 * @file
 * Engine limits and tunables, each named once. Public limits of the API
 * (SGEs, depths) are in srnic.h.
 */

#define SRNIC_RX_BURST 32              /**< packets per rte_eth_rx_burst */
#define SRNIC_TX_BUF_SIZE 1024         /**< packets an engine holds for TX */
#define SRNIC_TX_RESERVE 64            /**< TX slots kept for ACKs/NAKs */
#define SRNIC_REQ_BUDGET 32            /**< packets or local WQEs per turn of one QP's requester */
#define SRNIC_RESP_BUDGET 32           /**< READ response packets one QP builds per poll */
/** QPs with work one poll runs at most; the rest run first in the next. A poll reads
 * one RX burst: a walk of every QP with work between two bursts (16,384 QPs, each
 * with WRs waiting for TX room) left their ACKs unread until the ACK timers expired. */
#define SRNIC_POLL_QPS 256
/** RX bursts one poll reads at most when more QPs have work than it runs (else one), while
 * each comes back full: as many packets as the
 * poll can send (its TX buffer), so the ACKs of what it sent keep pace with it (one burst
 * a poll: at 16,384 QPs the requester's RX ring held 100 ms of ACKs, and their timers
 * expired). */
#define SRNIC_POLL_RX_BURSTS (SRNIC_TX_BUF_SIZE / SRNIC_RX_BURST)
#define SRNIC_REDIRECT_RING 4096       /**< packets handed from another engine's RX queue */
/** ACK timeouts in a row, with no progress between them, that a late poll (more than a timeout
 * after the engine's previous one) may find without spending a retry (retry_starved); the
 * next late one spends one like any. A live peer answers a resend by then, however loaded the
 * host (each resend's answer is read before the timers); a dead one on a host where every poll
 * is late was resent for ever before (rc_timers' dead peer at load 25-40: 186 rounds in 20 s). */
#define SRNIC_RETRY_STARVED_MAX 7
/** QPs per device (ibv_query_device's max_qp): 16,384 each with WRs outstanding at once carry
 * their traffic on one engine (test perf_qps); 65,536 at depth 1 did not (ACK timeouts, QPs in
 * RETRY_EXC_ERR; doc/performance.md). A power of 2 (the engine's active FIFO). */
#define SRNIC_MAX_QP 16384
#define SRNIC_QPN_BASE 0x11            /**< first QPN (0, 1 are special; rxe starts at 0x11) */
#define SRNIC_MAX_MR 65536             /**< MRs per device */
#define SRNIC_MAX_MW 65536             /**< memory windows per device (ibv_query_device's max_mw) */
#define SRNIC_MAX_PD 4096              /**< PDs per device */
#define SRNIC_MAX_AH 65536             /**< address handles per device (ibv_query_device's max_ah) */
#define SRNIC_MR_MAX_ZC_REFS 0xF000    /**< in-flight zero-copy mbufs per MR (16-bit refcnt) */
#define SRNIC_ZC_CREDIT_BATCH 64       /**< MR references an engine takes at a time */
#define SRNIC_MR_MAX_CHUNKS 8          /**< registered page chunks one MR of application memory spans (overlapping earlier MRs); more: not DMA-mapped, copied */
#define SRNIC_MAX_INFLIGHT_PSN (1u << 22) /**< send window in PSNs (< 2^23, C9-94) */
#define SRNIC_MAX_INFLIGHT_WQE 1024    /**< un-acked WQEs per QP */
#define SRNIC_ACK_REQ_INTERVAL 64      /**< AckReq on every this many packets inside a SEND/WRITE, not only its last (rxe: 64): a timeout resends from the first packet no ACK covered */
#define SRNIC_DEFAULT_MBUFS 32767      /**< default mbuf pool size */
#define SRNIC_MBUF_CACHE 256
#define SRNIC_ORPHAN_POOLS_MAX 64      /**< pools of destroyed devices kept until their mbufs are back */
#define SRNIC_TX_COPY_MARGIN 1024     /**< TX copy pool: mbufs beyond the TX rings' (in the engines' TX buffers) */
#define SRNIC_RX_POOL_MARGIN 1024     /**< RX pool: mbufs beyond the RX rings' and bursts' (held in reassembly, CQ payloads) */
/** mbufs an lcore id's mempool cache may keep of a pool (DPDK: flushthresh 1.5 x size) */
#define SRNIC_MBUF_CACHE_HELD (SRNIC_MBUF_CACHE + SRNIC_MBUF_CACHE / 2)
#define SRNIC_MAX_CACHING_LCORES 64   /**< srnic_dev_conf.nb_caching_lcores at most */
#define SRNIC_TX_COPY_MAX 128          /**< SEND/WRITE payload pieces up to this are copied into the header mbuf (cheaper than an attach + trailer); READ response packets likewise up to the device's read_inline_max (SRNIC_READ_INLINE_DEFAULT unless set) */
#define SRNIC_NEIGH_MAX 256            /**< neighbour table entries */
#define SRNIC_ARP_RETRY_MS 100         /**< ARP/ND request interval while unresolved; at most one request per neighbour per interval */
#define SRNIC_ARP_WAIT_MAX 256         /**< QPs per engine woken at once by a neighbour update */
#define SRNIC_UD_RESOLVE_MS 1000       /**< a UD send waits this long for its AH's MAC (ARP/ND), then is dropped */
#define SRNIC_UD_RESOLVE_POLL_US 100   /**< ... looking at the neighbour table this often meanwhile */
#define SRNIC_ASYNC_EVENT_RING 1024    /**< async events an engine holds for the application */
#define SRNIC_DEV_EVENT_RING 64        /**< port events the device holds (srnic_get_async_event()) */
#define SRNIC_LINK_CHECK_MS 10         /**< srnic_get_async_event() reads the link state at most this often */
#define SRNIC_PORT_RESTART_MS 250      /**< a memif client that is down is started again at most this often */
#define SRNIC_PORT_HOLD_MS 5000        /**< ... but not while its connection is under way, for at most this long */
#define SRNIC_MEMIF_CC_MAX 256         /**< memif control channels a process watches at once (the rest unwatched) */
#define SRNIC_IP_TTL 64                /**< as rxe (golden) */
#define SRNIC_DEFAULT_MTU 1500
/* RSS over the engines' RX queues (nb_engines > 1): RoCEv2's UDP source
 * port comes from the QPNs (srnic_roce_sport), so a hash over UDP ports
 * spreads QPs; a port without UDP hashing gets the IP one (spreads peers). */
#define SRNIC_RSS_HF_UDP (RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP)
#define SRNIC_RSS_HF_IP (RTE_ETH_RSS_IPV4 | RTE_ETH_RSS_IPV6)

#endif /* SRNIC_PARAM_H */
