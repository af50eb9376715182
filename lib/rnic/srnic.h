/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_H
#define SRNIC_H

/**
 * @file
 * srnic: a software RoCEv2 RNIC on a DPDK port. The public API.
 *
 * Objects follow verbs: a device on an ethdev port, protection domains,
 * memory regions, completion queues, RC, UC and UD queue pairs, address
 * handles. Work requests and
 * completions are rdma-core's own types (struct ibv_send_wr, ibv_recv_wr,
 * ibv_wc, ibv_qp_attr), so a verbs layer over srnic stays thin.
 *
 * Threads. The engine is a set of per-lcore instances (struct srnic_engine),
 * one per RX/TX queue pair of the port; each QP is pinned to one engine and
 * a CQ belongs to the engine of its QPs. An engine runs when its owner calls
 * srnic_engine_poll() (the application's own lcore loop) or, if asked,
 * srnic_engine_launch() on a worker lcore. srnic starts no thread by itself.
 *
 * Ownership of the rings shared between the application and an engine:
 * - SQ and RQ: the application is the single producer (srnic_post_send(),
 *   srnic_post_recv()), the QP's engine the single consumer. A slot returns
 *   to the application when srnic_poll_cq() hands out the completion of its
 *   work request or of a later one of the same queue (as with a hardware
 *   RNIC: unsignaled sends are reclaimed by the next signaled one), so a CQ
 *   at least as deep as the work queues feeding it never overflows.
 * - CQ: the engine is the single producer, the application the single
 *   consumer (srnic_poll_cq()).
 * Posting to one QP or polling one CQ from two threads at once needs the
 * caller's own lock; different QPs and CQs need none. Polling a CQ on one
 * thread while another destroys or resets one of its QPs is safe: a QP's
 * completions are removed from its CQs on RESET and destroy (as libmlx5
 * does), under a lock srnic_poll_cq() takes once per call.
 *
 * Lifetimes: srnic_destroy_cq() is -EBUSY while a QP uses the CQ,
 * srnic_destroy_srq() while a QP uses the SRQ, srnic_dealloc_pd() while a
 * QP, SRQ, MR or AH uses the PD, srnic_dev_destroy() while any PD, CQ, MR,
 * SRQ or QP of the device lives. A device can be created
 * again on its port under the same name once destroyed. From inside
 * srnic_engine_poll() (a host_rx callback), srnic_dereg_mr(),
 * srnic_destroy_qp(), srnic_modify_qp() to RESET and srnic_dev_destroy()
 * of that device return -EDEADLK: they wait for every engine of the
 * device to leave its poll, this one included.
 *
 * Control functions return 0 or a negative errno; constructors return NULL
 * and set rte_errno.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rte_ether.h>


#ifdef __cplusplus
extern "C" {
#endif

struct srnic_dev;
struct srnic_engine;
struct srnic_pd;
struct srnic_mr;
struct srnic_mw;
struct srnic_cq;
struct srnic_qp;
struct srnic_ah;
struct srnic_srq;
struct rte_mbuf;

/* ---- GIDs ---- */

/**
 * The RoCEv2 GID of an IPv4 address: ::ffff:a.b.c.d (IPv4-mapped, RFC 4291
 * 2.5.5.2), as Linux's ipv6_addr_set_v4mapped() makes it.
 * @param ip4 the address, 4 bytes in network order
 */
static inline void
srnic_gid_from_ipv4(union ibv_gid *gid, const void *ip4)
{
	memset(gid->raw, 0, 10);
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], ip4, 4);
}

/** Whether gid is IPv4-mapped (::ffff:0:0/96): an IPv4 address. */
static inline bool srnic_gid_is_v4mapped(const union ibv_gid *gid);

/**
 * Whether gid is a multicast group's: IPv6 ff00::/8, or an IPv4-mapped
 * 224.0.0.0/4 (the kernel's rdma_is_multicast_addr()).
 */
static inline bool
srnic_gid_is_mgid(const union ibv_gid *gid)
{
	if (srnic_gid_is_v4mapped(gid))
		return (gid->raw[12] & 0xF0) == 0xE0;
	return gid->raw[0] == 0xFF;
}

/** Whether gid is IPv4-mapped (::ffff:0:0/96): an IPv4 address. */
static inline bool
srnic_gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t pfx[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid->raw, pfx, sizeof(pfx)) == 0;
}

/* ---- limits (see also srnic_param.h for engine internals) ---- */
#define SRNIC_MAX_SGE 8            /**< SGEs per work request */
#define SRNIC_MAX_INLINE 256       /**< bytes of inline data per send WR */
#define SRNIC_MAX_READ_INLINE SRNIC_MAX_INLINE /**< srnic_dev_conf.read_inline_max at most */
/** srnic_dev_conf.read_inline_max when its comp_mask bit is clear: READ
 * response packets of at most this much payload carry a copy (one mbuf),
 * as SEND/WRITE pieces of the same size always do; larger ones are
 * zero-copy. Hardware RNICs likewise inline small responses. */
#define SRNIC_READ_INLINE_DEFAULT 128
#define SRNIC_MAX_QP_WR 4096       /**< SQ/RQ depth at most */
/** CQ depth at most: libfabric's ofi_rxm sizes its one MSG CQ for its
 * default universe (1,024 peers x 128 sends and 128 receives, 262,144) and
 * fails without it; mlx5 offers 4M. The ring is allocated at create. */
#define SRNIC_MAX_CQE (1 << 18)
#define SRNIC_MAX_CQ 65536         /**< CQs per device */
#define SRNIC_MAX_SRQ 4096         /**< SRQs per device */
#define SRNIC_MAX_SRQ_WR 16384     /**< SRQ depth at most */
#define SRNIC_MAX_RD_ATOMIC 16     /**< max_rd_atomic / max_dest_rd_atomic */
#define SRNIC_MAX_MSG_SIZE (1u << 31) /**< bytes per message */
#define SRNIC_MAX_ENGINES_PER_DEV 16 /**< RX/TX queue pairs used on one port */
#define SRNIC_MAX_MCAST_GRP 64     /**< multicast groups a device has QPs attached to */
#define SRNIC_MAX_MCAST_QP_ATTACH 16 /**< UD QPs attached to one group */
/** attachments over all groups (every group full) */
#define SRNIC_MAX_TOTAL_MCAST_QP_ATTACH (SRNIC_MAX_MCAST_GRP * SRNIC_MAX_MCAST_QP_ATTACH)
#define SRNIC_MCAST_QPN 0xFFFFFFu  /**< a multicast datagram's destination QPN (IBTA 10.5.2.2) */
#define SRNIC_GID_TBL_LEN 3        /**< 0: link-local from MAC, 1 and 2: IP-based; each RoCEv2 */
#define SRNIC_GID_INDEX_LL 0       /**< fe80:: from the MAC: RoCEv2 over IPv6 link-local, as rxe */
#define SRNIC_GID_INDEX_IP 1       /**< the device's address (IPv4-mapped or IPv6) */
/** an IPv4 device's global IPv6 address too (SRNIC_DEV_CONF_IP6); else
 * empty (all zero: ibv_query_gid_ex() ENODATA, as an unused entry) */
#define SRNIC_GID_INDEX_IP6 2
#define SRNIC_GRH_LEN 40           /**< the GRH area at the front of every UD receive buffer */
/**
 * A UD receive CQE's ibv_wc.sl: the received packet's type, where mlx5 puts
 * it for RoCE (bit 3: a UDP header, RoCEv2; bits 2:0: the L3 header, 1 IPv6,
 * 2 IPv4). RoCE carries no SL on the wire; annex A17.4.5.1 wants a UD CQE
 * to tell an IPv4 frame from an IPv6 one and verbs has no other field for
 * it. UCX's ud_verbs (1.13 uct_ud_iface_check_grh()) reads it to find the
 * destination address in the GRH area: with anything but 2 in bits 2:0 it
 * takes the last 16 bytes as an IPv6 destination and drops the packet as
 * not its own.
 */
#define SRNIC_WC_SL_ROCE_UDP 0x8
#define SRNIC_WC_SL_ROCE_IPV6 0x1
#define SRNIC_WC_SL_ROCE_IPV4 0x2
#define SRNIC_QKEY_CONTROLLED 0x80000000u /**< Q_Key high bit: a UD WR's remote_qkey with it means the QP's own (IBTA 10.2.5) */
#define SRNIC_GSI_QKEY 0x80010000u /**< the well-known Q_Key of QP1 (CM MADs, IBTA 13.4.6.1) */
#define SRNIC_GSI_QPN 1            /**< the GSI QP's number (SRNIC_QP_INIT_ATTR_GSI) */
/**
 * retry_cnt (IBV_QP_RETRY_CNT), 0 to 7, is the number of transport retries
 * (ACK timeouts, sequence and implied NAKs) a WQE rides out without
 * progress, then it completes with IBV_WC_RETRY_EXC_ERR and the QP goes to
 * ERR, as on hardware; 7 is no infinite value (only rnr_retry's 7 is, by
 * IBTA). Linux's rxe differs: it never spends a count of 7.
 */
#define SRNIC_RETRY_CNT_MAX 7

/** Callback for frames that are not RoCEv2 (nor ARP/ND srnic answers). */
typedef void (*srnic_host_rx_cb)(struct srnic_dev *dev, struct rte_mbuf *m, void *arg);

/**
 * srnic_dev_conf.comp_mask: one bit per field added after the base ones,
 * as rdma-core's _ex structs. A field whose bit is clear is not read (its
 * default applies), so a caller that zeroes the struct keeps the behaviour
 * of the version it was written for; bits from SRNIC_DEV_CONF_RESERVED up
 * are fields this library does not know (a caller built against a newer
 * srnic.h) and make srnic_dev_create() fail with EINVAL, as rdma-core
 * refuses unknown comp_mask bits (EOPNOTSUPP stays for known fields whose
 * value is not supported).
 */
enum srnic_dev_conf_mask {
	SRNIC_DEV_CONF_READ_INLINE_MAX = 1u << 0, /**< read_inline_max is set */
	SRNIC_DEV_CONF_TX_SEG_MAX = 1u << 1,      /**< tx_seg_max is set */
	SRNIC_DEV_CONF_IP6 = 1u << 2,             /**< ip6 is set */
	SRNIC_DEV_CONF_CACHING_LCORES = 1u << 3,  /**< nb_caching_lcores is set */
	SRNIC_DEV_CONF_RESERVED = 1u << 4,        /**< this bit and above: refused */
};

/** Device configuration. */
struct srnic_dev_conf {
	uint16_t port_id;          /**< a DPDK ethdev, not yet configured */
	uint16_t nb_engines;       /**< RX/TX queue pairs, one engine each (>= 1) */
	uint16_t mtu;              /**< Ethernet MTU; 0: 1500. Path MTU is bounded by it */
	uint8_t ip_ver;            /**< 4 or 6 */
	uint8_t ip[16];            /**< our address, network order (IPv4: first 4 bytes) */
	const struct rte_ether_addr *mac; /**< NULL: the port's own MAC */
	uint32_t nb_mbufs;         /**< mbuf pool size; 0: a default */
	srnic_host_rx_cb host_rx;  /**< NULL: count and drop */
	void *host_rx_arg;
	const char *name;          /**< device name, e.g. "srnic0" */
	/* ---- the base ends here; later fields need their comp_mask bit ---- */
	uint32_t comp_mask;        /**< enum srnic_dev_conf_mask bits; 0: base only */
	/**
	 * SRNIC_DEV_CONF_READ_INLINE_MAX. READ response packets whose
	 * payload is at most this many bytes carry a copy of it in their
	 * header mbuf (one mbuf per packet) instead of a zero-copy segment
	 * over the registered memory (three: headers, the segment, the ICRC
	 * trailer), as small SEND/WRITE payloads always do: the copy costs
	 * less than the attachment, its trailer and the two ICRC walks over
	 * three segments. At most SRNIC_MAX_READ_INLINE; the bit clear:
	 * SRNIC_READ_INLINE_DEFAULT; 0: every READ response is zero-copy.
	 */
	uint16_t read_inline_max;
	/**
	 * SRNIC_DEV_CONF_TX_SEG_MAX. Segments a TX packet may have at most;
	 * 0 (or the bit clear): what the port takes
	 * (rte_eth_dev_info tx_desc_lim.nb_mtu_seg_max and nb_seg_max, 1
	 * if it lacks RTE_ETH_TX_OFFLOAD_MULTI_SEGS). A packet with more
	 * (headers, one attached piece per SGE, the pad + ICRC trailer:
	 * 10 with 8 SGEs, where i40e/ice take 8) is copied into one mbuf
	 * before TX (counter tx_linearised). A value above the port's limit
	 * is lowered to it: the knob only tightens (tests, PMDs whose
	 * limits are not in their dev_info).
	 */
	uint16_t tx_seg_max;
	/**
	 * SRNIC_DEV_CONF_IP6. A device of ip_ver 4 holds this global IPv6
	 * address too, as GID SRNIC_GID_INDEX_IP6 (ip is GID 1, IPv4-mapped;
	 * the link-local fe80:: GID 0 as always): RoCEv2 over either family.
	 * -EINVAL for another ip_ver, or an address that is not global
	 * unicast (::, ::1, IPv4-mapped, link-local fe80::/10, multicast).
	 */
	uint8_t ip6[16];
	/**
	 * SRNIC_DEV_CONF_CACHING_LCORES. How many lcore ids at most drive
	 * the device's engines or free its mbufs (the engines' lcores,
	 * threads the program registered with rte_thread_register()): each
	 * id's mempool cache may keep up to 1.5 x SRNIC_MBUF_CACHE mbufs of
	 * every pool it touched, so the RX and TX-copy pools get that many
	 * more per id. At most SRNIC_MAX_CACHING_LCORES; the bit clear: 0
	 * (the pools' margins alone, as before the field).
	 */
	uint16_t nb_caching_lcores;
};

/**
 * srnic_qp_init_attr.comp_mask: as srnic_dev_conf.comp_mask: a field added
 * after the base is read only with its bit set; bits from
 * SRNIC_QP_INIT_ATTR_RESERVED up are refused (EINVAL).
 */
enum srnic_qp_init_attr_mask {
	SRNIC_QP_INIT_ATTR_SRQ = 1u << 0,         /**< srq is set */
	SRNIC_QP_INIT_ATTR_GSI = 1u << 1,         /**< the device's GSI QP (QP1): srnic_create_qp() */
	SRNIC_QP_INIT_ATTR_RESERVED = 1u << 2,    /**< this bit and above: refused */
};

/** NULL with rte_errno EINVAL for a bad field or an unknown comp_mask bit. */
struct srnic_dev *srnic_dev_create(const struct srnic_dev_conf *conf);
/**
 * -EBUSY while a PD, CQ, MR or QP of the device lives. Its mbuf pools are
 * freed once every mbuf is back (a peer's RX ring may still hold some).
 */
int srnic_dev_destroy(struct srnic_dev *dev);
const char *srnic_dev_name(const struct srnic_dev *dev);
/**
 * Our RoCEv2 GID at index (0: link-local from the MAC, 1: IP-based, 2: the
 * IPv6 address of a device of both families). -EINVAL for an index beyond
 * SRNIC_GID_TBL_LEN; -ENODATA for an empty entry (gid all zero).
 */
int srnic_dev_gid(const struct srnic_dev *dev, int index, union ibv_gid *gid);
int srnic_dev_query(const struct srnic_dev *dev, struct ibv_device_attr *attr);
/** ibv_port_attr.phys_state values (IBTA 14.2.5.6, as rxe and the HCAs give them). */
enum srnic_port_phys_state {
	SRNIC_PORT_PHYS_POLLING = 2,    /**< down, never up yet: waiting for a peer */
	SRNIC_PORT_PHYS_DISABLED = 3,   /**< down after it was up (peer gone, link set down) */
	SRNIC_PORT_PHYS_LINK_UP = 5,
};
/**
 * The port's attributes (ibv_query_port()). state is the link's now
 * (rte_eth_link_get_nowait()): IBV_PORT_ACTIVE with carrier or a peer
 * (a memif's), else IBV_PORT_DOWN; phys_state says which down it is.
 * active_mtu is the port's MTU less the headers (changes are followed:
 * srnic_get_async_event()). 0, or -EINVAL.
 */
int srnic_dev_query_port(const struct srnic_dev *dev, struct ibv_port_attr *attr);
struct srnic_engine *srnic_dev_engine(struct srnic_dev *dev, uint16_t index);
uint16_t srnic_dev_nb_engines(const struct srnic_dev *dev);
/**
 * Add a static neighbour (no ARP/ND needed for this address). Static
 * entries are never evicted nor changed by ARP/ND from the wire. The table
 * (SRNIC_NEIGH_MAX entries) learns only addresses a QP asked for and hosts
 * that asked for ours, refreshes them from replies and gratuitous ARP (a QP
 * takes a moved MAC at its next retry timeout, which also asks again), and
 * evicts the least recently used entry no QP uses.
 * @return 0; -EINVAL (bad arguments, an IPv4-mapped GID on an IPv6 device);
 *   -ENOSPC (the table is full of static entries).
 */
int srnic_dev_add_neigh(struct srnic_dev *dev, const union ibv_gid *gid,
			const struct rte_ether_addr *mac);
/**
 * The MAC of the host at gid, for an application that needs it before any
 * QP talks to it (rdma_resolve_addr()): a static or learned entry, or our
 * own MAC for our own address (loopback). Not known yet: the address is
 * made a pending entry (so that its ARP reply / neighbour advertisement is
 * learned) and the next poll of any of the device's engines sends an ARP
 * request (IPv4) or a neighbour solicitation (IPv6) for it, at most once
 * per SRNIC_ARP_RETRY_MS however often this is called; call again (after
 * polling the engines, if this thread drives them) until it returns 0 or
 * the caller's own timeout passes. Any thread; no engine need be idle.
 * A multicast group's GID (srnic_gid_is_mgid()) resolves at once to the
 * group's MAC (01:00:5e / 33:33, srnic_attach_mcast()), with no request.
 * @return 0 with *mac set; -EAGAIN (asked, not known yet); -EINVAL (NULL
 *   argument, an IPv4-mapped GID on an IPv6 device, an unspecified or
 *   broadcast address); -ENOSPC (the table is full of static entries, so
 *   no reply could be learned).
 */
int srnic_dev_resolve_neigh(struct srnic_dev *dev, const union ibv_gid *gid,
			    struct rte_ether_addr *mac);

/* ---- engine: the per-lcore loop ---- */

/**
 * Run one iteration of an engine: RX burst, parse and dispatch to the
 * responder or completer, requester work from the send queues, timers, TX.
 * Must be called by one thread at a time per engine. Returns the number of
 * packets received and sent.
 */
unsigned int srnic_engine_poll(struct srnic_engine *eng);
/** Run srnic_engine_poll() in a loop on worker lcore until srnic_engine_stop(). */
int srnic_engine_launch(struct srnic_engine *eng, unsigned int lcore_id);
int srnic_engine_stop(struct srnic_engine *eng);
/**
 * How many of the engine's QPs wait for a deadline: an ACK or a response
 * (their retransmit timer), an RNR wait, a neighbour's answer. A thread
 * that runs srnic_engine_poll() and sleeps when it finds no work (srnicd)
 * keeps its sleeps short while this is not 0: what those QPs wait for
 * comes from the network, which does not wake it. A hint, not a count to
 * act on exactly: a QP whose answer came leaves the wheel at the sooner of
 * its old deadline's tick and one turn of the wheel (SRNIC_TW_SLOTS ticks);
 * an RNR wait counts though only the engine's timer ends it. Only the
 * engine's thread writes it; any thread may read.
 */
unsigned int srnic_engine_waiting(const struct srnic_engine *eng);

/* ---- counters ---- */

/** Number of named counters of an engine (xstats style). */
unsigned int srnic_engine_stats_count(void);
/** Name of counter i, e.g. "rx_icrc_err". */
const char *srnic_engine_stat_name(unsigned int i);
/** Copy up to n counter values; returns the count. Safe from any thread (racy reads). */
unsigned int srnic_engine_stats_get(const struct srnic_engine *eng, uint64_t *vals, unsigned int n);
/** Sum of one counter over every engine of the device; -1 if the name is unknown. */
int64_t srnic_dev_stat(const struct srnic_dev *dev, const char *name);

/* ---- PD, MR ---- */

struct srnic_pd *srnic_alloc_pd(struct srnic_dev *dev);
int srnic_dealloc_pd(struct srnic_pd *pd);

/** Called once the last reference to a deregistered region's memory is gone. */
typedef void (*srnic_mr_release_cb)(void *addr, size_t length, void *arg);

/**
 * Register memory for local and remote access (IBV_ACCESS_* flags). The
 * memory may be hugepage memory from rte_malloc or any application memory;
 * for PMDs that DMA, it is made known to DPDK (rte_extmem_register) and
 * mapped for the port's device (rte_dev_dma_map), page-rounded and shared
 * with other MRs on the same pages, when DPDK does not already manage it;
 * memory that cannot be (DPDK's memseg lists all taken) is registered all
 * the same and its zero-copy sends are copied (counter tx_unmapped_copy). DPDK memory's IOVAs are taken page by
 * page from its memsegs (IOVA-PA: not contiguous; zero-copy pieces are split
 * where they jump). In IOVA-PA mode application memory has no IOVA a NIC
 * could use: NULL with rte_errno EFAULT (use rte_malloc memory, register it
 * with rte_extmem_register() and its IOVAs first, or --iova-mode=va).
 */
struct srnic_mr *srnic_reg_mr(struct srnic_pd *pd, void *addr, size_t length, int access);
/** As srnic_reg_mr(), with a callback for when the memory is free to reuse. */
struct srnic_mr *srnic_reg_mr_cb(struct srnic_pd *pd, void *addr, size_t length, int access,
				 srnic_mr_release_cb release, void *arg);
/**
 * As srnic_reg_mr_cb() (release may be NULL), the region named by iova
 * (ibv_reg_mr_iova(3)): local SGEs and a peer's RETH/AtomicETH address
 * [iova, iova + length), which srnic reads and writes at addr + (address -
 * iova). srnic_reg_mr() is this with iova == addr. EINVAL as srnic_reg_mr(),
 * and when iova + length wraps.
 */
struct srnic_mr *srnic_reg_mr_iova(struct srnic_pd *pd, void *addr, size_t length, uint64_t iova,
				   int access, srnic_mr_release_cb release, void *arg);
/**
 * Reregister (ibv_rereg_mr(3)): flags IBV_REREG_MR_CHANGE_TRANSLATION (addr,
 * length), _CHANGE_PD (pd, of mr's device), _CHANGE_ACCESS (access), any
 * together; what a flag does not name stays. Returns the MR that now holds
 * the registration, a new object: a new translation has new keys (the old
 * ones are refused from the return on), a new PD or access the same keys.
 * mr itself is left deregistered but the caller's, with one reference: its
 * keys gone, its old range possibly still under zero-copy mbufs in flight;
 * give it to srnic_dereg_mr_wait() (the old memory free to reuse on 0) or
 * srnic_dereg_mr() (its release callback, which a new translation leaves
 * with it, says when). NULL with rte_errno, mr unchanged: EINVAL (no flag,
 * an unknown flag, a translation without addr or length, a PD of another
 * device, remote write or atomic without local write, mr already
 * deregistered), EBUSY (a memory window bound to it), ENOMEM, ENOSPC,
 * EFAULT (as srnic_reg_mr()), EDEADLK (called from inside a poll of the
 * device).
 */
struct srnic_mr *srnic_rereg_mr(struct srnic_mr *mr, int flags, struct srnic_pd *pd, void *addr,
				size_t length, int access);
/**
 * srnic_rereg_mr() whose new translation (IBV_REREG_MR_CHANGE_TRANSLATION)
 * is named by iova, as srnic_reg_mr_iova(): srnic reads and writes addr +
 * (address - iova). srnic_rereg_mr() is this with iova == addr (what
 * ibv_rereg_mr(3) names); a process that maps the application's memory
 * elsewhere (srnicd) passes the application's address. iova is ignored
 * without a new translation. EINVAL also when iova + length wraps.
 */
struct srnic_mr *srnic_rereg_mr_iova(struct srnic_mr *mr, int flags, struct srnic_pd *pd,
				     void *addr, size_t length, uint64_t iova, int access);
/**
 * Deregister: -EINVAL while a memory window is bound to it (nothing
 * changed; invalidate or free the windows first: rxe refuses it so, with
 * EINVAL). srnic_dereg_mr_wait() too.
 * Else no access passes the key check once this returns, and srnic
 * reads or writes the memory no more, except that mbufs already built over
 * it (zero-copy responses in flight) keep it until they are freed; the
 * release callback says when. Returns 0, or -EDEADLK when called from
 * inside srnic_engine_poll() of this device (a host_rx callback): it waits
 * for every engine of the device to leave its poll, ours included.
 */
int srnic_dereg_mr(struct srnic_mr *mr);
/**
 * Deregister and wait (at most timeout_us) until no mbuf refers to the
 * memory any more: ibv_dereg_mr()'s contract, what a program that free()s
 * the memory right after needs (srnic_dereg_mr() is the non-blocking form
 * for callers that use the release callback instead).
 *
 * In-flight mbufs are freed by polls of other threads meanwhile: the PMD
 * frees sent ones in this device's later TX bursts, a ring pair's peer
 * when its engine receives them. The caller must not be the only thread
 * polling those engines (it would wait on itself): then, or when the
 * peer never drains, this returns -EBUSY after timeout_us: the memory is
 * still in use and the MR still the caller's (its keys refused from the
 * first call on; the PD and the device count it), to deregister again
 * with srnic_dereg_mr_wait() (a later try, after polling) or
 * srnic_dereg_mr() (the release callback then says when the memory is
 * free). 0: the memory is free to reuse (the release callback has run).
 * -EDEADLK from inside srnic_engine_poll() of this device.
 */
int srnic_dereg_mr_wait(struct srnic_mr *mr, uint64_t timeout_us);
uint32_t srnic_mr_lkey(const struct srnic_mr *mr);
/** The rkey (== lkey): index << 8 | a key byte that is random per
 * registration (never the index's previous one), so a peer cannot guess it. */
uint32_t srnic_mr_rkey(const struct srnic_mr *mr);

/* ---- memory windows ---- */

/**
 * A memory window (ibv_alloc_mw(), IBTA 10.6.7) of type IBV_MW_TYPE_1 or
 * IBV_MW_TYPE_2 (type 2B: bound to the QP it was bound through). It grants
 * remote access to part of an MR registered with IBV_ACCESS_MW_BIND, through
 * its own rkey (srnic_mw_rkey(): a key index above every MR's, and a key byte
 * the binder chooses), once bound by a send work request:
 * - IBV_WR_BIND_MW (wr.bind_mw: mw is srnic_mw_ibv(), rkey the new key
 *   (same index, ibv_inc_rkey()), bind_info.mr an ibv_mr whose lkey names
 *   the srnic MR: srnic reads only that lkey, bind_info.addr/length inside
 *   the MR, bind_info.mw_access_flags IBV_ACCESS_REMOTE_READ/WRITE/ATOMIC).
 *   A type 1 window is bound this way by the verbs layer's ibv_bind_mw()
 *   (length 0 unbinds it); a type 2 one must be FREE (just allocated or
 *   invalidated) and the QP of its PD. Completes with IBV_WC_BIND_MW, or
 *   IBV_WC_MW_BIND_ERR for a binding IBTA C10-72..75 refuses (QP to ERR).
 * - IBV_WR_LOCAL_INV (invalidate_rkey): a type 2 window goes FREE (a type
 *   1 cannot be invalidated, o10-37.2.26; nor can an MR registered by user
 *   verbs, as rxe: IBV_WC_LOC_QP_OP_ERR, QP to ERR).
 * - IBV_WR_SEND_WITH_INV (RC): a SEND whose last packet carries an IETH;
 *   the responder invalidates that type 2 window once the message is
 *   placed and its receive CQE has IBV_WC_WITH_INV and invalidated_rkey. A
 *   key it cannot invalidate fails the message: NAK Invalid Request
 *   (IBV_WC_REM_INV_REQ_ERR at the requester), the receive WQE completes
 *   with IBV_WC_REM_INV_REQ_ERR and the responder's QP goes to ERR.
 * An RDMA READ, WRITE or atomic through a window is checked against its
 * binding (VALID, length > 0, the QP's PD, type 2B: the QP it was bound
 * through; the access; the range inside [addr, addr + length)); a key that
 * fails is NAKed Remote Access Error (IBV_WC_REM_ACCESS_ERR). Windows are
 * no lkeys: a local SGE naming one fails IBV_WC_LOC_PROT_ERR.
 * NULL with rte_errno EINVAL (bad PD, other types), ENOSPC (SRNIC_MAX_MW
 * live), ENOMEM.
 */
struct srnic_mw *srnic_alloc_mw(struct srnic_pd *pd, enum ibv_mw_type type);
/**
 * Free a window (bound or not: its binding goes). No access passes its key
 * once this returns; a bind work request still posted for it fails
 * IBV_WC_MW_BIND_ERR. 0; -EINVAL; -EDEADLK from inside a poll of its device.
 */
int srnic_dealloc_mw(struct srnic_mw *mw);
/** The window's current rkey (what its last bind set). */
uint32_t srnic_mw_rkey(const struct srnic_mw *mw);
/** The struct ibv_mw inside (the verbs layer's to hand out; wr.bind_mw.mw names it). */
struct ibv_mw *srnic_mw_ibv(struct srnic_mw *mw);
/** Back from srnic_mw_ibv()'s pointer (container_of). */
struct srnic_mw *srnic_mw_from_ibv(struct ibv_mw *mw);

/* ---- CQ ---- */

/** A CQ of at least cqe entries, served by engine eng (its QPs' engine). */
struct srnic_cq *srnic_create_cq(struct srnic_dev *dev, int cqe, struct srnic_engine *eng);
/** -EBUSY while a QP uses it (as send or recv CQ). */
int srnic_destroy_cq(struct srnic_cq *cq);
/**
 * ibv_resize_cq(): make the CQ hold at least cqe entries (larger or
 * smaller), keeping the completions it holds, in order. Safe while its
 * engine runs and other threads poll it: the engine's next completion for
 * the CQ waits (a few microseconds: the copy) until the new ring is in
 * place. 0; -EINVAL for cqe < 1, above SRNIC_MAX_CQE, or below the count
 * of completions the CQ holds now (rxe's rule); -ENOMEM; -EDEADLK from
 * inside a poll of its device (it waits for the engines' polls).
 */
int srnic_resize_cq(struct srnic_cq *cq, int cqe);
/** Entries the CQ holds at most (the cqe asked for, or more). */
int srnic_cq_cqe(const struct srnic_cq *cq);
/**
 * Poll up to n completions. Returns the count, or -EOVERFLOW once the CQ
 * has overflowed (completions were lost: the CQ and its QPs are in error).
 * A QP moved to RESET or destroyed leaves no completion behind.
 */
int srnic_poll_cq(struct srnic_cq *cq, int n, struct ibv_wc *wc);

/** What an armed CQ waits for (srnic_cq_arm()). */
enum srnic_cq_arm {
	SRNIC_CQ_ARM_NONE = 0,      /**< not armed */
	SRNIC_CQ_ARM_NEXT = 1,      /**< any completion */
	SRNIC_CQ_ARM_SOLICITED = 2, /**< a solicited one (BTH.SE) or an error */
};

/**
 * Arm the CQ for one completion event (ibv_req_notify_cq()). The engine
 * signals nothing by itself: whoever drives the engine asks
 * srnic_cq_notify_due() afterwards and delivers the event its own way
 * (a verbs layer: the completion channel's fd). The event is for a
 * completion added after the arm (IBTA 11.4.2.2): completions already in
 * the CQ are the caller's to poll, as the verbs pattern (arm, then poll)
 * expects. Arming an armed CQ for any completion widens a
 * solicited-only arm; a solicited-only arm never narrows one.
 * @return 0; -EINVAL.
 */
int srnic_cq_arm(struct srnic_cq *cq, bool solicited_only);
/**
 * Whether an armed CQ holds a completion its arm waits for; if so the arm
 * is consumed (one event per arm) and this returns true exactly once. Any
 * thread; cheap when the CQ is not armed (one load).
 */
bool srnic_cq_notify_due(struct srnic_cq *cq);

/** Name of a work completion status, as rdma-core prints it (no libibverbs needed). */
const char *srnic_wc_status_str(enum ibv_wc_status status);

/* ---- QP ---- */

struct srnic_qp_init_attr {
	struct srnic_cq *send_cq;
	struct srnic_cq *recv_cq;
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
	int sq_sig_all;            /**< every send WR signaled */
	enum ibv_qp_type qp_type;  /**< IBV_QPT_RC, IBV_QPT_UC or IBV_QPT_UD */
	/* ---- the base ends here; later fields need their comp_mask bit ---- */
	uint32_t comp_mask;        /**< enum srnic_qp_init_attr_mask bits; 0: base only */
	/**
	 * SRNIC_QP_INIT_ATTR_SRQ. The shared receive queue the QP takes its
	 * receive WQEs from (NULL: its own RQ). max_recv_wr and max_recv_sge
	 * are then ignored (reported 0, as verbs), srnic_post_recv() on the
	 * QP is refused (EINVAL), and the SRQ must be on the engine of the
	 * QP's CQs (srnic_create_srq()). The QP's receive completions carry
	 * its own qp_num.
	 */
	struct srnic_srq *srq;
};

/**
 * A QP served by the engine of its CQs. NULL with rte_errno EINVAL for a
 * bad attribute or an unknown comp_mask bit, EOPNOTSUPP for a type other
 * than RC, UC and UD, EEXIST for a second GSI QP (below), ENOSPC with
 * SRNIC_MAX_QP QPs.
 *
 * UC (IBTA 9.8): SEND and RDMA WRITE, with or without immediate, split by
 * the path MTU as RC, with no ACK, no retransmission, no READ or atomics
 * (EINVAL at post). A send WR completes once its last packet is built for
 * TX. The responder takes a message only from its FIRST (or ONLY) packet
 * on: a PSN gap or an out-of-sequence opcode drops the message in progress
 * (its receive WQE is reused for the next message, no completion) and
 * every packet until the next FIRST/ONLY, which resyncs the expected PSN
 * (IBTA 9.7.5.1.x for UC, as rxe does); a bad R_Key, a length that does
 * not add up or no receive WQE drop the message too (counted, no NAK).
 *
 * UD (IBTA 9.8.4): SEND and SEND with immediate only, one packet each
 * (BTH + DETH [+ ImmDt]) to the AH, remote_qpn and remote_qkey of the WR
 * (wr.ud); a remote_qkey with SRNIC_QKEY_CONTROLLED set sends the QP's own
 * Q_Key instead. A message longer than the port's active MTU sends no packet
 * and completes successfully (C10-93.1.1, as rxe), counted as
 * req_ud_too_long. The send CQE comes once the packet is built for TX (no
 * ACK); each packet takes the next SQ PSN, which the receiver does not
 * check. The UDP source port is the QP's (Linux rxe: 0xC000 | a hash of
 * the QPN, 55410 for QP1 as in the rdma_cm capture). A receive takes a
 * packet whose DETH Q_Key is the QP's (else dropped, rx_ud_qkey_err) and
 * whose payload fits the path MTU (else rx_ud_too_long): the receive buffer
 * gets SRNIC_GRH_LEN bytes first, as Linux fills them for RoCEv2 (IPv4: 20
 * zero bytes then the packet's IPv4 header; IPv6: its IPv6 header), then
 * the payload; byte_len counts both. wc.src_qp is the DETH's source QP,
 * wc_flags has IBV_WC_GRH, pkey_index is 0, sl the packet's type as mlx5
 * gives it (SRNIC_WC_SL_ROCE_*), slid 0. A receive WQE too small for GRH + payload completes
 * with IBV_WC_LOC_LEN_ERR and the QP goes to ERR. A UD WR's AH must be of
 * the QP's PD (else EINVAL at post, as for a WR with no AH). srnic has no
 * SQE state: a local error of a UC or UD send WR (a bad lkey) moves the QP
 * to ERR, as for RC.
 *
 * GSI (IBTA 13.4, QP1: where rdma_cm's CM MADs go): comp_mask
 * SRNIC_QP_INIT_ATTR_GSI with qp_type IBV_QPT_UD makes the device's one
 * GSI QP, QPN SRNIC_GSI_QPN (1); a second one while it lives fails with
 * rte_errno EEXIST, the bit with another qp_type with EINVAL; once
 * srnic_destroy_qp() returns, QPN 1 is free for a new one. It is a UD QP
 * in all else (modify RESET -> INIT -> RTR -> RTS, AH sends, GRH area,
 * wc.src_qp) with one difference, as the kernel fixes QP1's: its Q_Key is
 * SRNIC_GSI_QKEY whatever IBV_QP_QKEY says (modify accepts the bit where
 * UD takes it and keeps SRNIC_GSI_QKEY; query shows it). So it receives
 * only packets whose DETH Q_Key is SRNIC_GSI_QKEY (others: rx_ud_qkey_err),
 * and its sends to remote QPN 1 carry SRNIC_GSI_QKEY whatever the WR's
 * remote_qkey; to other QPNs, the WR's (controlled: SRNIC_GSI_QKEY). Its
 * UDP source port is 55410, as rxe's QP1 (the rdma_cm capture). Nothing
 * lives at QPN 0 (no SMI on Ethernet): packets to it are dropped, rx_no_qp.
 */
struct srnic_qp *srnic_create_qp(struct srnic_pd *pd, struct srnic_qp_init_attr *attr);
/** Its completions still in its CQs go with it. -EDEADLK from inside a poll of its device. */
int srnic_destroy_qp(struct srnic_qp *qp);
uint32_t srnic_qp_num(const struct srnic_qp *qp);

/**
 * Move a QP through RESET -> INIT -> RTR -> RTS (-> SQD) and to ERR (from
 * any state, RESET included, as the kernel's table allows), with the
 * attributes verbs names for each transition (IBV_QP_* mask).
 * RTR needs IBV_QP_AV (ah_attr.grh.dgid: the peer's GID; is_global 1),
 * IBV_QP_PATH_MTU, IBV_QP_DEST_QPN, IBV_QP_RQ_PSN,
 * IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER. RTS needs IBV_QP_SQ_PSN,
 * IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT, IBV_QP_RNR_RETRY, IBV_QP_MAX_QP_RD_ATOMIC.
 * The peer's MAC comes from a static neighbour or ARP/ND; set dmac to skip it.
 * The AV's grh.sgid_index names the source: any GID of the table, each a
 * RoCEv2 address (SRNIC_GID_INDEX_LL: IPv6 from the link-local fe80:: of
 * the MAC, whatever the device's own address; SRNIC_GID_INDEX_IP: that
 * address), of the dgid's family (IPv4-mapped or not), else -EINVAL.
 * grh.hop_limit is the IPv4 TTL / IPv6 hop limit (0: 64, SRNIC_IP_TTL);
 * grh.flow_label the IPv6 flow label and the UDP source port's entropy; 0
 * means the one Linux derives from the two QPNs (rdma_calc_flow_label()).
 * Every transition takes exactly the attributes verbs allows for it (IBTA
 * 10.3; the kernel's ib_modify_qp_is_ok() table): the required ones and any
 * of the optional ones. RTS -> RTS and SQD -> RTS may change access flags and
 * min_rnr_timer; SQD -> SQD also the AV, timeout, retry counts and the
 * rd_atomic limits, safely under a running engine. IBV_QP_ALT_PATH and
 * IBV_QP_PATH_MIG_STATE are accepted where allowed and ignored (no APM).
 * max_rd_atomic above SRNIC_MAX_RD_ATOMIC is taken as SRNIC_MAX_RD_ATOMIC
 * (query shows it; fewer in flight than the peer allows is always safe, and
 * perftest asks for the peer's limit: rxe's 128); max_dest_rd_atomic above
 * it is out of range.
 * Returns -EINVAL for a bad transition, a missing or extra attribute bit, or
 * an attribute out of range; then nothing changed. RESET removes the QP's
 * completions from its CQs; it, and an SQD -> SQD modify with IBV_QP_AV
 * (the engine takes the new AV over a quiesce), are -EDEADLK from inside a
 * poll of its device (e.g. a host_rx callback), with nothing changed.
 * The state changes atomically: the new state is published only if the QP
 * is still in the state checked, so if the engine moves the QP to ERR (a
 * failed work request) during the call, the call returns -EINVAL and the
 * QP stays in ERR (a move to ERR then succeeds); the call's attributes
 * may then have been applied all the same (query shows them), but the QP
 * is in ERR and must go through RESET, which sets them again. RESET always wins: the
 * engine never takes a QP out of RESET.
 * RTS -> SQD drains the send queue: work requests already started finish
 * (with their retries), new ones wait until SQD -> RTS; with
 * IBV_QP_EN_SQD_ASYNC_NOTIFY the end of the drain is an
 * IBV_EVENT_SQ_DRAINED (srnic_get_async_event()).
 * UD and UC QPs take the kernel's ib_modify_qp_is_ok() table for their
 * type: UD RESET -> INIT needs IBV_QP_PKEY_INDEX | IBV_QP_PORT |
 * IBV_QP_QKEY, INIT -> RTR nothing (optional PKEY_INDEX, QKEY), RTR -> RTS
 * IBV_QP_SQ_PSN (optional QKEY); UC RESET -> INIT needs PKEY_INDEX | PORT |
 * ACCESS_FLAGS, INIT -> RTR IBV_QP_AV | PATH_MTU | DEST_QPN | RQ_PSN,
 * RTR -> RTS IBV_QP_SQ_PSN; the optional bits per transition as that table
 * says. A UD QP's path MTU is the port's active MTU (query_qp shows it).
 * Any Q_Key is taken, the controlled ones (high bit) included: there is no
 * privilege to check in one process.
 */
int srnic_modify_qp(struct srnic_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
/** Same, with the peer's MAC given (as ah_attr carries in rdma-core's extended form).
 * That MAC is the route until the next AV: a retry timeout never replaces
 * it with the neighbour table's (only a MAC resolved by ARP/ND is refreshed). */
int srnic_modify_qp_dmac(struct srnic_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			 const struct rte_ether_addr *dmac);
int srnic_query_qp(struct srnic_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		   struct srnic_qp_init_attr *init);
enum ibv_qp_state srnic_qp_state(const struct srnic_qp *qp);

/** Per-QP protocol events (the engine counters, per QP). Racy reads. */
struct srnic_qp_stats {
	uint64_t retransmits;      /**< go-back-N rewinds (NAK, implied NAK, timeout) */
	uint64_t timeouts;         /**< local ACK timer expiries */
	uint64_t naks_rcvd;        /**< NAKs received (sequence, fatal) */
	uint64_t rnr_naks_rcvd;
	uint64_t dups_rcvd;        /**< duplicate requests (a READ/atomic matching no remembered one is dropped) */
	uint64_t out_of_seq_rcvd;  /**< requests after a gap */
	uint64_t rnr_naks_sent;
	uint64_t rkey_errs;        /**< requests with an R_Key that failed (a guessing peer shows here) */
};

int srnic_qp_get_stats(const struct srnic_qp *qp, struct srnic_qp_stats *st);

/* ---- address handles (UD) ---- */

/**
 * An address handle for UD work requests (ibv_create_ah()). RoCE needs the
 * GRH: is_global 1, grh.dgid the peer's GID (IPv4-mapped or IPv6,
 * unicast or a group's), grh.sgid_index any GID of the table of the dgid's family (the
 * source: IPv4 or IPv6, link-local GID 0 too); port_num 1. grh.hop_limit
 * (0: SRNIC_IP_TTL), traffic_class and (IPv6) flow_label go into the
 * packets as given. The peer's MAC comes from the neighbour table (a
 * static entry, or ARP/ND: a send to an address not yet resolved asks for
 * it and waits for the reply up to SRNIC_UD_RESOLVE_MS, then the datagram
 * is dropped, counted as req_ud_no_route, and the WR completes, as a
 * datagram the kernel's neighbour layer gave up on).
 * A multicast dgid (srnic_gid_is_mgid()) needs no lookup: the packets go
 * to the group's MAC (srnic_attach_mcast()); a UD work request to it names
 * remote_qpn SRNIC_MCAST_QPN.
 * NULL with rte_errno EINVAL (bad arguments).
 */
struct srnic_ah *srnic_create_ah(struct srnic_pd *pd, const struct ibv_ah_attr *attr);
/** The same with the peer's MAC given (rdma-core's extended AH): no lookup. */
struct srnic_ah *srnic_create_ah_dmac(struct srnic_pd *pd, const struct ibv_ah_attr *attr,
				      const struct rte_ether_addr *dmac);
/**
 * Destroy an AH. Work requests already posted with it are unaffected (they
 * carry a copy of its address). 0 or -EINVAL.
 */
int srnic_destroy_ah(struct srnic_ah *ah);
/**
 * The struct ibv_ah inside the AH: the pointer a UD ibv_send_wr names in
 * wr.ud.ah. Its context, pd and handle are the verbs layer's to set (srnic
 * does not read them), so the application can be handed this very pointer.
 */
struct ibv_ah *srnic_ah_ibv(struct srnic_ah *ah);
/** Back from srnic_ah_ibv()'s pointer (container_of). */
struct srnic_ah *srnic_ah_from_ibv(struct ibv_ah *ah);
/** The attributes the AH was created with. 0 or -EINVAL. */
int srnic_query_ah(const struct srnic_ah *ah, struct ibv_ah_attr *attr);
/**
 * Fill attr for a reply to the sender of a UD receive completion wc (what
 * ibv_init_ah_from_wc() needs): grh is the receive buffer's first
 * SRNIC_GRH_LEN bytes. dgid is the sender's address as a GID (IPv4:
 * ::ffff:a.b.c.d), sgid_index the GID the packet was sent to (one of the
 * device's), hop_limit 0xFF and traffic_class /
 * flow_label from the header, as the kernel's ib_init_ah_attr_from_wc()
 * does; sl from wc, port_num 1. 0, or -EINVAL (no IBV_WC_GRH in wc, a GRH
 * area that holds neither header, not sent to us).
 */
int srnic_init_ah_from_wc(struct srnic_dev *dev, const struct ibv_wc *wc, const void *grh,
			  struct ibv_ah_attr *attr);
/** srnic_init_ah_from_wc() then srnic_create_ah() (ibv_create_ah_from_wc()). */
struct srnic_ah *srnic_create_ah_from_wc(struct srnic_pd *pd, const struct ibv_wc *wc,
					 const void *grh);

/* ---- multicast (UD) ---- */

/**
 * Attach a UD QP to the multicast group gid (ibv_attach_mcast()): datagrams
 * to the group's address and destination QPN SRNIC_MCAST_QPN are delivered
 * to every QP attached, each checking its own Q_Key. gid is an IPv6
 * multicast address (ff00::/8) or an IPv4-mapped one (::ffff:224.0.0.0/4),
 * lid is ignored (RoCE). The port's multicast filter takes the group's MAC
 * (01:00:5e + the low 23 bits of an IPv4 group, 33:33 + the low 32 bits of
 * an IPv6 one) while a QP is attached. Attaching an attached QP again does
 * nothing. A QP cannot be destroyed while attached (-EBUSY, as uverbs).
 * 0, or -EINVAL (not a UD QP, not a multicast GID), -ENOMEM
 * (SRNIC_MAX_MCAST_GRP groups, or SRNIC_MAX_MCAST_QP_ATTACH QPs in this
 * one), -EDEADLK (called from inside an engine poll).
 */
int srnic_attach_mcast(struct srnic_qp *qp, const union ibv_gid *gid, uint16_t lid);
/**
 * Detach qp from gid (ibv_detach_mcast()): once this returns, no engine
 * delivers the group's datagrams to it. 0, or -EINVAL (not attached, bad
 * arguments), -EDEADLK.
 */
int srnic_detach_mcast(struct srnic_qp *qp, const union ibv_gid *gid, uint16_t lid);
/**
 * Detach qp from every group it is attached to (what uverbs does for a
 * QP whose process is gone, before it destroys it). 0, or -EDEADLK.
 */
int srnic_detach_mcast_all(struct srnic_qp *qp);

/* ---- shared receive queues ---- */

/**
 * A shared receive queue (ibv_create_srq()): receive WQEs that any QP
 * created with it (srnic_qp_init_attr.srq) takes, in posting order, as
 * its messages arrive. attr.max_wr (1 .. SRNIC_MAX_SRQ_WR) and
 * attr.max_sge (0 .. SRNIC_MAX_SGE; 0 is 1) are raised to what the SRQ
 * holds (written back, as verbs); attr.srq_limit arms the limit event at
 * once when nonzero (rxe takes the init limit too).
 *
 * Engines: an SRQ belongs to one engine, eng (NULL: the device's first),
 * and every QP using it must be on that engine (its CQs' engine):
 * srnic_create_qp() refuses another one with EINVAL. The engine is then
 * the SRQ's single consumer, the application its single producer
 * (srnic_post_srq_recv(); two posting threads need the caller's lock).
 *
 * A WQE's slot is free again as soon as a QP's responder takes it (it
 * copies the WQE, as rxe does): a message in progress holds no SRQ slot.
 * An empty SRQ makes an RC responder answer RNR NAK, as an empty RQ does;
 * a UD datagram or UC message that finds it empty is dropped and counted
 * (rx_ud_no_recv_wqe, rx_uc_no_recv_wqe), as with an empty RQ.
 * The WQE's lkeys are checked against the PD of the QP that takes it.
 * A QP moved to ERR flushes only the WQE it had taken (if any), then
 * raises IBV_EVENT_QP_LAST_WQE_REACHED (an affiliated event, IBTA 11.6.3): the
 * SRQ's other WQEs stay for its other QPs.
 *
 * NULL with rte_errno EINVAL (bad argument, engine of another device),
 * ENOSPC (SRNIC_MAX_SRQ live), ENOMEM.
 */
struct srnic_srq *srnic_create_srq(struct srnic_pd *pd, struct ibv_srq_init_attr *attr,
				   struct srnic_engine *eng);
/**
 * ibv_modify_srq(). IBV_SRQ_LIMIT sets srq_limit: nonzero arms
 * IBV_EVENT_SRQ_LIMIT_REACHED, which fires once when a QP's take leaves
 * fewer than srq_limit WQEs posted, then disarms (srq_limit reads 0 again;
 * set it again to re-arm), as rxe does; 0 disarms.
 * IBV_SRQ_MAX_WR resizes (rxe does), keeping the posted WQEs; safe with the
 * engine running (it waits on the SRQ's lock for the copy); no post may run
 * meanwhile (the single producer is the caller).
 * 0; -EINVAL (as rxe: unknown mask bits, max_wr 0 or above
 * SRNIC_MAX_SRQ_WR or below the limit armed or the WQEs posted, srq_limit
 * above what the SRQ holds); -ENOMEM (nothing changed).
 */
int srnic_modify_srq(struct srnic_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
/** max_wr, max_sge and srq_limit (0 when disarmed). 0 or -EINVAL. */
int srnic_query_srq(struct srnic_srq *srq, struct ibv_srq_attr *attr);
/** -EBUSY while a QP uses it (destroy the QPs first), -EINVAL. WQEs still posted are dropped. */
int srnic_destroy_srq(struct srnic_srq *srq);
/** The SRQ's number (ibv_get_srq_num()): unique among the device's live SRQs. */
uint32_t srnic_srq_num(const struct srnic_srq *srq);
/**
 * Post receive WQEs to the SRQ (ibv_post_srq_recv()). Returns 0, or an
 * errno with *bad_wr set: ENOMEM when the SRQ is full, EINVAL for more
 * SGEs than its max_sge (or a NULL srq: bad_wr is then the first WR).
 */
int srnic_post_srq_recv(struct srnic_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* ---- asynchronous events ---- */

/**
 * An asynchronous event (rdma-core's struct ibv_async_event): its type,
 * the object it is about (as ibv_async_event.element: qp, srq or cq by
 * type, or the port number) and that object's incarnation.
 *
 * QP events: IBV_EVENT_QP_FATAL, IBV_EVENT_SQ_DRAINED, IBV_EVENT_COMM_EST,
 * IBV_EVENT_QP_LAST_WQE_REACHED (qp, qp_num). SRQ events:
 * IBV_EVENT_SRQ_LIMIT_REACHED (srq). CQ events: IBV_EVENT_CQ_ERR (cq).
 * Port events: IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR (port_num 1).
 *
 * Pointers are safe: an event about an object destroyed since (or whose
 * memory went to a new object) comes with a NULL pointer, never a stale
 * one. gen is the object's incarnation (srnic_qp_gen(), srnic_srq_gen(),
 * srnic_cq_gen(); unique per device until 2^32 creations), so a consumer
 * that keeps its own table of objects (a verbs layer) can tell too.
 * A consumer that destroys objects on one thread while another takes events
 * gets either the live pointer or NULL: the check and the copy happen
 * under the device's lock, which destroy takes. user is the object's
 * pointer of srnic_qp_set_user() (srq, cq alike), read under that lock
 * with the check: a verbs layer finds its own object from it, with no
 * table of its own.
 */
struct srnic_async_event {
	enum ibv_event_type event_type;
	uint32_t qp_num;                /**< QP events: the QP's number, always valid */
	union {
		struct srnic_qp *qp;    /**< QP events: the QP, NULL if destroyed since */
		struct srnic_srq *srq;  /**< SRQ events: the SRQ, NULL if destroyed since */
		struct srnic_cq *cq;    /**< CQ events: the CQ, NULL if destroyed since */
	};
	uint32_t gen;                   /**< the object's incarnation (0: port events) */
	uint32_t port_num;              /**< port events: 1; else 0 */
	uint32_t srq_num;               /**< SRQ events: srnic_srq_num(), always valid */
	uint32_t cq_num;                /**< CQ events: the CQ's number on its device */
	void *user;                     /**< the live object's srnic_*_set_user() pointer; NULL if
					     destroyed since, never set, or a port event */
};

/**
 * Take the oldest pending asynchronous event of a device, without
 * blocking. Events come from the engines: IBV_EVENT_SQ_DRAINED once a QP
 * moved to SQD with IBV_QP_EN_SQD_ASYNC_NOTIFY (en_sqd_async_notify 1) has
 * no work request left in flight (posted ones wait for SQD -> RTS);
 * IBV_EVENT_QP_FATAL when an engine moved a QP to ERR (a failed work
 * request, a fatal NAK, a CQ overflow: the CQE says which), not when the
 * application did; IBV_EVENT_COMM_EST at the first packet a QP receives in
 * RTR (once per connection; the application should move it
 * to RTS); IBV_EVENT_QP_LAST_WQE_REACHED when a QP with an SRQ is in ERR
 * and has flushed the WQE it had taken (once per entry into ERR, however
 * it got there); IBV_EVENT_SRQ_LIMIT_REACHED (srnic_modify_srq());
 * IBV_EVENT_CQ_ERR at a CQ's first overflow (a completion lost: the QP
 * whose completion it was goes to ERR with its own QP_FATAL).
 * Port events come from the link state, read here (at most every
 * SRNIC_LINK_CHECK_MS): IBV_EVENT_PORT_ERR when the port's link went
 * down, IBV_EVENT_PORT_ACTIVE when it came back (as rxe on netdev
 * carrier changes; none for the state at srnic_dev_create(), as a verbs
 * context opened later sees none). The same look watches the port
 * (doc/reliability.md): a lowered MTU moves each live RC/UC QP whose path
 * MTU is above it to ERR (IBV_EVENT_QP_FATAL, its WQEs flushed), and a
 * memif client that is down is started again (every
 * SRNIC_PORT_RESTART_MS; not while its connection is under way, for
 * SRNIC_PORT_HOLD_MS at most) until its server takes it: call this function
 * regularly, or a port's changes go unnoticed.
 * In order per engine; each engine holds up to SRNIC_ASYNC_EVENT_RING,
 * more are dropped and counted (async_event_drop).
 * Any thread, several at once. Nothing to acknowledge: the event is a copy
 * (ibv_ack_async_event() maps to nothing).
 * Returns 0, -EAGAIN when there is none, -EINVAL.
 */
int srnic_get_async_event(struct srnic_dev *dev, struct srnic_async_event *ev);

/**
 * A file descriptor that becomes readable when an engine queues an
 * asynchronous event (an eventfd the device owns: do not close it), for
 * poll()/epoll instead of spinning (ibv_get_async_event()'s blocking
 * form). Read it (8 bytes) to clear it, then take events until -EAGAIN:
 * an event queued after the read makes it readable again. Port events are
 * found by srnic_get_async_event() itself and do not signal it. -1 with
 * rte_errno EINVAL for a NULL device.
 */
int srnic_dev_event_fd(const struct srnic_dev *dev);

/**
 * A pointer of the caller's for the object, handed back in its async
 * events (srnic_async_event.user) while the object lives. Set it right
 * after the create, before the object can have events. Any thread.
 */
void srnic_qp_set_user(struct srnic_qp *qp, void *user);
void srnic_srq_set_user(struct srnic_srq *srq, void *user);
void srnic_cq_set_user(struct srnic_cq *cq, void *user);

/** Incarnations: what srnic_async_event.gen holds for the object. */
uint32_t srnic_qp_gen(const struct srnic_qp *qp);
uint32_t srnic_srq_gen(const struct srnic_srq *srq);
uint32_t srnic_cq_gen(const struct srnic_cq *cq);

/*
 * IBTA 1.5's ATOMIC WRITE and FLUSH (RC only), as rxe has them since Linux
 * 6.2. rdma-core 44's verbs.h names ATOMIC WRITE (IBV_WR_ATOMIC_WRITE,
 * IBV_WC_ATOMIC_WRITE) but not FLUSH: its values are rdma-core 45's.
 * - IBV_WR_ATOMIC_WRITE (wr.rdma: remote_addr 8-byte aligned, rkey of an
 *   MR or window with IBV_ACCESS_REMOTE_WRITE): the 8 bytes of the gather
 *   list (or inline) are stored at the responder as one 64-bit store,
 *   atomic with respect to the atomics, after every earlier request of the
 *   QP is placed. Completes IBV_WC_ATOMIC_WRITE; a misaligned address is
 *   NAKed Invalid Request (IBV_WC_REM_INV_REQ_ERR), a bad key Remote Access
 *   Error (IBV_WC_REM_ACCESS_ERR).
 * - SRNIC_WR_FLUSH (srnic_wr_set_flush()): makes what earlier requests of
 *   the QP placed in [remote_addr, + length) (SRNIC_FLUSH_RANGE) or in
 *   the whole MR (SRNIC_FLUSH_MR) globally visible (SRNIC_FLUSH_GLOBAL).
 *   The key needs SRNIC_ACCESS_FLUSH_GLOBAL. srnic's memory is DRAM:
 *   SRNIC_FLUSH_PERSISTENT is not offered (an MR asking for it is refused
 *   EOPNOTSUPP, a FLUSH asking for it NAKed Remote Access Error).
 *   Completes SRNIC_WC_FLUSH.
 * Both take a READ/atomic slot (max_rd_atomic) and are answered with a
 * zero-length RDMA READ RESPONSE ONLY; a duplicate is answered again,
 * never executed twice.
 */
#define SRNIC_WR_FLUSH ((enum ibv_wr_opcode)14)        /**< rdma-core 45's IBV_WR_FLUSH */
#define SRNIC_WC_FLUSH ((enum ibv_wc_opcode)8)         /**< rdma-core 45's IBV_WC_FLUSH */
#define SRNIC_ACCESS_FLUSH_GLOBAL (1 << 8)              /**< rdma-core 45's IBV_ACCESS_FLUSH_GLOBAL */
#define SRNIC_ACCESS_FLUSH_PERSISTENT (1 << 9)          /**< rdma-core 45's IBV_ACCESS_FLUSH_PERSISTENT */

/** FLUSH's placement type (rdma-core 45's ibv_flush_type; the FETH's bits). */
enum srnic_flush_type {
	SRNIC_FLUSH_GLOBAL = 1,
	SRNIC_FLUSH_PERSISTENT = 2,
};

/** FLUSH's selectivity level (rdma-core 45's ibv_flush_level; the FETH's). */
enum srnic_flush_level {
	SRNIC_FLUSH_RANGE = 0,
	SRNIC_FLUSH_MR = 1,
};

/** A FLUSH work request: type SRNIC_FLUSH_GLOBAL, level SRNIC_FLUSH_RANGE
 * or SRNIC_FLUSH_MR, carried in wr.atomic. */
static inline void
srnic_wr_set_flush(struct ibv_send_wr *wr, uint32_t rkey, uint64_t addr, uint64_t len,
		   uint8_t type, uint8_t level)
{
	wr->opcode = SRNIC_WR_FLUSH;
	wr->num_sge = 0;
	wr->wr.atomic.remote_addr = addr;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.compare_add = len;
	wr->wr.atomic.swap = (uint64_t)level << 8 | type;
}

/** Post send work requests. Returns 0, or an errno with *bad_wr set. */
int srnic_post_send(struct srnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
/**
 * Post a list of send work requests whole or not at all: 0 with every WR
 * queued, or an errno with *bad_wr set and none of them queued (verbs'
 * ibv_wr_complete(): no work is executed unless it returns success).
 */
int srnic_post_send_all(struct srnic_qp *qp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr);
/**
 * How many send WRs srnic_post_send() would take now, at most: the SQ's
 * free slots (one acquire load). For the SQ's single producer, the caller
 * of srnic_post_send(): the room only grows until it posts again.
 */
uint32_t srnic_qp_sq_room(const struct srnic_qp *qp);
/**
 * Whether the engine has completed every WQE posted to the QP's SQ and
 * RQ (in ERR: flushed), each CQE pushed into its CQ, polled or not. For
 * the engine's own thread, between two srnic_engine_poll() calls (srnicd's
 * data path: a failed QP's ring WQEs complete after srnic's flushes).
 */
bool srnic_qp_wq_retired(const struct srnic_qp *qp);
/**
 * Post receive work requests. Returns 0, or an errno with *bad_wr set;
 * EINVAL on a QP created with an SRQ (post to the SRQ), as verbs does.
 */
int srnic_post_recv(struct srnic_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/**
 * @name EAL's start
 * @{
 */
/**
 * rte_eal_init() with SIGINT and SIGTERM blocked in every thread EAL
 * starts (interrupts, multi-process, telemetry, the worker lcores): a
 * program's SIGINT/SIGTERM then goes to one of its own threads, whose
 * blocking call it ends with EINTR as it would without srnic. The
 * caller's signal mask is as before on return. Returns what
 * rte_eal_init() returns (rte_errno set by it on failure).
 */
int srnic_eal_init(int argc, char **argv);
/** @} */

/**
 * @name EAL's runtime directory
 * EAL makes a directory per --file-prefix (/var/run/dpdk/PREFIX/ as root)
 * and leaves it behind, at rte_eal_cleanup() and when the process dies.
 * @{
 */
/**
 * Remove this process's runtime directory (and the files EAL put there)
 * when the process exits, after the caller's own rte_eal_cleanup(). Call
 * after rte_eal_init(). 0; -EINVAL in a secondary process (the directory
 * is its primary's) or before rte_eal_init(); -ENOMEM.
 */
int srnic_eal_remove_at_exit(void);
/**
 * Remove the runtime directories, beside this process's, of srnic
 * processes that are gone: prefixes that start with "srnic" and end with
 * "-PID" or "_PID" (the drop-ins' srnic-PID, the tests'), PID no longer
 * running. Returns how many were removed, or a negative errno.
 */
int srnic_eal_sweep(void);
/** @} */

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_H */
