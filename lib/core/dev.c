/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device: one DPDK port, its mbuf pools, its engines (one RX/TX queue
 * pair each), the QP and MR tables, GIDs and neighbours. Control path only.
 */
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include "srnic_build_config.h"
#include "rnic.h"
#include "engine.h"
#include "wire_internal.h"

RTE_LOG_REGISTER(srnic_logtype_core, srnic.core, INFO);

#define DEV_RX_DESC 1024
#define DEV_TX_DESC 1024
/* Room in a header mbuf: headroom, L2-L4 + BTH + extension headers, inline
 * payload (SEND/WRITE inline data or copied pieces, READ responses up to
 * read_inline_max), pad and ICRC. */
#define DEV_HDR_DATA_ROOM (RTE_PKTMBUF_HEADROOM + SRNIC_PKT_HDR_MAX_LEN + \
			   RTE_MAX(SRNIC_MAX_INLINE, SRNIC_MAX_READ_INLINE) + \
			   SRNIC_PKT_TRAILER_MAX_LEN + 64)
/* RX mbufs hold a whole jumbo frame (PMTU 4096 + headers) in one segment,
 * and a 16 KiB af_packet frame (framesz=16384, what a 9000-byte MTU needs
 * there: its frames are powers of two). */
#define DEV_RX_DATA_ROOM (RTE_PKTMBUF_HEADROOM + 16384)
#define DEV_MAX_NAME 32
/* Headers above the payload that the path MTU must leave room for (rxe). */
#define DEV_MTU_HDR_ROOM 100

static int dev_count;
/* Pool names: one number per device created, so a device made again
 * under its old name never meets a pool of its predecessor. */
static _Atomic uint32_t pool_seq;

/* Pools of destroyed devices that still had mbufs out (in a peer's RX
 * ring of a net_ring pair, in a PMD's queue): freeing them would pull the
 * memory from under those mbufs. They wait here and go once every mbuf is
 * back, checked on each srnic_dev_create() and srnic_dev_destroy(). */
static struct {
	rte_spinlock_t lock;
	uint32_t n;
	struct rte_mempool *pool[SRNIC_ORPHAN_POOLS_MAX];
} orphans = { .lock = RTE_SPINLOCK_INITIALIZER };

static void
orphans_reap_locked(void)
{
	uint32_t i = 0;

	while (i < orphans.n) {
		if (rte_mempool_full(orphans.pool[i])) {
			rte_mempool_free(orphans.pool[i]);
			orphans.pool[i] = orphans.pool[--orphans.n];
		} else {
			i++;
		}
	}
}

static void
orphans_reap(void)
{
	rte_spinlock_lock(&orphans.lock);
	orphans_reap_locked();
	rte_spinlock_unlock(&orphans.lock);
}

/* Free a device's pool now if every mbuf is back, else once they are. */
static void
dev_pool_release(struct rte_mempool *mp)
{
	if (mp == NULL)
		return;
	rte_spinlock_lock(&orphans.lock);
	if (rte_mempool_full(mp)) {
		rte_mempool_free(mp);
	} else if (orphans.n < SRNIC_ORPHAN_POOLS_MAX) {
		orphans.pool[orphans.n++] = mp;
	} else {
		orphans_reap_locked();
		if (orphans.n < SRNIC_ORPHAN_POOLS_MAX)
			orphans.pool[orphans.n++] = mp;
		else
			SRNIC_LOG(ERR, "pool %s: %u mbufs out, no orphan slot: left allocated",
				  mp->name, rte_mempool_in_use_count(mp));
	}
	rte_spinlock_unlock(&orphans.lock);
}

static enum ibv_mtu
mtu_to_ib(uint16_t eth_mtu)
{
	int room = (int)eth_mtu - DEV_MTU_HDR_ROOM;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* Segments per TX packet the port takes: its descriptor limits (0 when a
 * PMD leaves them unset), 1 without MULTI_SEGS, tightened by the knob. */
static uint16_t
dev_tx_seg_max(const struct rte_eth_dev_info *info, uint16_t knob)
{
	uint16_t max = UINT16_MAX;

	if (!(info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
		max = 1;
	if (info->tx_desc_lim.nb_mtu_seg_max != 0)
		max = RTE_MIN(max, info->tx_desc_lim.nb_mtu_seg_max);
	if (info->tx_desc_lim.nb_seg_max != 0)
		max = RTE_MIN(max, info->tx_desc_lim.nb_seg_max);
	if (knob != 0)
		max = RTE_MIN(max, knob);
	return max;
}

/* RSS over the engines' queues: UDP ports if the port hashes them, else IP
 * addresses; without either the PMD's own queue choice stands (a NIC: queue
 * 0), and packets for another engine's QP are redirected. */
static void
dev_rss_conf(struct srnic_dev *dev, const struct rte_eth_dev_info *info,
	     struct rte_eth_conf *conf)
{
	uint64_t hf = info->flow_type_rss_offloads & SRNIC_RSS_HF_UDP;

	if (dev->nb_engines < 2)
		return;
	if (hf == 0)
		hf = info->flow_type_rss_offloads & SRNIC_RSS_HF_IP;
	if (hf == 0) {
		SRNIC_LOG(INFO, "%s: port %u has no UDP/IP RSS: its own queue choice feeds %u engines",
			  dev->name, dev->port_id, dev->nb_engines);
		return;
	}
	conf->rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
	conf->rx_adv_conf.rss_conf.rss_key = NULL; /* the PMD's default key */
	conf->rx_adv_conf.rss_conf.rss_hf = hf;
}

/* One failed call of the port's setup: a line naming the port, its driver
 * and the call with what it returned, and a negative errno for the caller.
 * Some PMDs return a bare -1 through ethdev (net_memif's start when its
 * socket is not there), which as an errno would read EPERM: EIO instead. */
static int
dev_port_fail(const struct srnic_dev *dev, const struct rte_eth_dev_info *info, const char *call,
	      int rc)
{
	const char *drv = info != NULL && info->driver_name != NULL ? info->driver_name : "?";

	if (rc < -1) {
		SRNIC_LOG(ERR, "%s: port %u (%s): %s failed: %s", dev->name, dev->port_id, drv, call,
			  rte_strerror(-rc));
		return rc;
	}
	SRNIC_LOG(ERR, "%s: port %u (%s): %s failed: %d (the PMD's, not an errno: taken as EIO)",
		  dev->name, dev->port_id, drv, call, rc);
	return -EIO;
}

static int
dev_port_setup(struct srnic_dev *dev, struct rte_mempool *rx_pool, uint16_t tx_seg_knob)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	int rc, socket = rte_eth_dev_socket_id(dev->port_id);
	uint16_t q, seg_max;
	uint64_t ol_ipv4 = 0;

	memset(&conf, 0, sizeof(conf));
	rc = rte_eth_dev_info_get(dev->port_id, &info);
	if (rc != 0)
		return dev_port_fail(dev, NULL, "rte_eth_dev_info_get()", rc);
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	/* The IPv4 header checksum by the NIC; the ICRC masks that field, so
	 * sealing before the NIC writes it is fine. */
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM) {
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
		ol_ipv4 = RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM;
	}
	seg_max = dev_tx_seg_max(&info, tx_seg_knob);
	if (dev->nb_engines > info.max_rx_queues || dev->nb_engines > info.max_tx_queues) {
		SRNIC_LOG(ERR, "%s: port %u (%s): %u engines need as many queues, the port has "
			  "%u RX, %u TX", dev->name, dev->port_id, info.driver_name, dev->nb_engines,
			  info.max_rx_queues, info.max_tx_queues);
		return -EINVAL;
	}
	dev_rss_conf(dev, &info, &conf);
	rc = rte_eth_dev_configure(dev->port_id, dev->nb_engines, dev->nb_engines, &conf);
	if (rc != 0)
		return dev_port_fail(dev, &info, "rte_eth_dev_configure()", rc);
	for (q = 0; q < dev->nb_engines; q++) {
		rc = rte_eth_rx_queue_setup(dev->port_id, q, DEV_RX_DESC, socket, NULL, rx_pool);
		if (rc != 0)
			return dev_port_fail(dev, &info, "rte_eth_rx_queue_setup()", rc);
		rc = rte_eth_tx_queue_setup(dev->port_id, q, DEV_TX_DESC, socket, NULL);
		if (rc != 0)
			return dev_port_fail(dev, &info, "rte_eth_tx_queue_setup()", rc);
		dev->engines[q]->tx_seg_max = seg_max;
		dev->engines[q]->tx_ol_ipv4 = ol_ipv4;
	}
	/* Best effort: virtual PMDs often have no MTU control. */
	rc = rte_eth_dev_set_mtu(dev->port_id, dev->mtu);
	if (rc != 0 && rc != -ENOTSUP) {
		uint16_t mtu;

		/* Keep to what the port carries: path MTUs are clamped to it. */
		if (rte_eth_dev_get_mtu(dev->port_id, &mtu) == 0 && mtu < dev->mtu) {
			SRNIC_LOG(NOTICE, "%s: port %u takes MTU %u, not %u: path MTU follows",
				  dev->name, dev->port_id, mtu, dev->mtu);
			dev->mtu = mtu;
		}
	}
	rc = rte_eth_dev_start(dev->port_id);
	if (rc != 0)
		return dev_port_fail(dev, &info, "rte_eth_dev_start()", rc);
	rte_eth_promiscuous_enable(dev->port_id); /* harmless if unsupported */
	return 0;
}

static void
dev_make_gids(struct srnic_dev *dev)
{
	union ibv_gid *g0 = &dev->gid[0], *g1 = &dev->gid[1];
	const uint8_t *m = dev->mac.addr_bytes;

	/* 0: fe80::/64 with the modified EUI-64 of the MAC, as rxe. */
	memset(g0, 0, sizeof(*g0));
	g0->raw[0] = 0xfe;
	g0->raw[1] = 0x80;
	g0->raw[8] = m[0] ^ 0x02;
	g0->raw[9] = m[1];
	g0->raw[10] = m[2];
	g0->raw[11] = 0xff;
	g0->raw[12] = 0xfe;
	g0->raw[13] = m[3];
	g0->raw[14] = m[4];
	g0->raw[15] = m[5];
	/* 1: the IP address, IPv4-mapped for IPv4 (RoCEv2 GID). */
	if (dev->ip_ver == 4)
		srnic_gid_from_ipv4(g1, dev->ip);
	else
		memcpy(g1->raw, dev->ip, 16);
	/* 2: an IPv4 device's global IPv6 address (SRNIC_DEV_CONF_IP6), or
	 * empty: srnic_dev_create() wrote it from the configuration */
}

/* A global unicast IPv6 address, as SRNIC_DEV_CONF_IP6 takes: not ::, ::1,
 * IPv4-mapped, link-local (fe80::/10: GID 0 is the device's) or multicast */
static bool
dev_ip6_ok(const uint8_t *a)
{
	static const uint8_t zero[15];
	union ibv_gid g;

	memcpy(g.raw, a, 16);
	if (memcmp(a, zero, 15) == 0 && (a[15] == 0 || a[15] == 1))
		return false;
	return !srnic_gid_is_v4mapped(&g) && !(a[0] == 0xfe && (a[1] & 0xc0) == 0x80) &&
	       a[0] != 0xff;
}

/* The device's event ring, fd and SRQ/CQ tables (create's failure path too). */
static void
dev_events_free(struct srnic_dev *dev)
{
	rte_ring_free(dev->events);
	if (dev->event_fd >= 0)
		close(dev->event_fd);
	rte_free(dev->srq_tbl);
	rte_free(dev->cq_tbl);
}

struct srnic_dev *
srnic_dev_create(const struct srnic_dev_conf *conf)
{
	struct srnic_dev *dev;
	char pname[RTE_MEMPOOL_NAMESIZE];
	uint32_t nb_mbufs, pid;
	int rc, id;
	uint16_t i, read_inline_max, nb_caching;

	/* Unknown comp_mask bits first: the struct may be a newer, larger one. */
	if (conf == NULL || (conf->comp_mask & ~(SRNIC_DEV_CONF_RESERVED - 1)) != 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	read_inline_max = (conf->comp_mask & SRNIC_DEV_CONF_READ_INLINE_MAX) ? conf->read_inline_max
									     : SRNIC_READ_INLINE_DEFAULT;
	nb_caching = (conf->comp_mask & SRNIC_DEV_CONF_CACHING_LCORES) ? conf->nb_caching_lcores : 0;
	if (conf->nb_engines == 0 || conf->nb_engines > SRNIC_MAX_ENGINES_PER_DEV ||
	    (conf->ip_ver != 4 && conf->ip_ver != 6) || !rte_eth_dev_is_valid_port(conf->port_id) ||
	    read_inline_max > SRNIC_MAX_READ_INLINE || nb_caching > SRNIC_MAX_CACHING_LCORES ||
	    ((conf->comp_mask & SRNIC_DEV_CONF_IP6) && (conf->ip_ver != 4 || !dev_ip6_ok(conf->ip6)))) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = rte_zmalloc("srnic_dev", sizeof(*dev), RTE_CACHE_LINE_SIZE);
	if (dev == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	id = __atomic_fetch_add(&dev_count, 1, __ATOMIC_RELAXED);
	if (conf->name != NULL)
		snprintf(dev->name, sizeof(dev->name), "%s", conf->name);
	else
		snprintf(dev->name, sizeof(dev->name), "srnic%d", id);
	dev->port_id = conf->port_id;
	dev->nb_engines = conf->nb_engines;
	dev->mtu = conf->mtu != 0 ? conf->mtu : SRNIC_DEFAULT_MTU;
	dev->ip_ver = conf->ip_ver;
	dev->read_inline_max = read_inline_max;
	memcpy(dev->ip, conf->ip, sizeof(dev->ip));
	dev->host_rx = conf->host_rx;
	dev->host_rx_arg = conf->host_rx_arg;
	dev->event_fd = -1;
	rte_spinlock_init(&dev->lock);
	rte_spinlock_init(&dev->neigh_lock);
	rte_spinlock_init(&dev->mcast_lock);
	if (conf->mac != NULL)
		dev->mac = *conf->mac;
	else if (rte_eth_macaddr_get(dev->port_id, &dev->mac) != 0)
		goto fail_inval;
	dev->nb_gid = SRNIC_GID_INDEX_IP + 1;
	if (conf->comp_mask & SRNIC_DEV_CONF_IP6) {
		memcpy(dev->gid[SRNIC_GID_INDEX_IP6].raw, conf->ip6, 16);
		dev->nb_gid = SRNIC_GID_INDEX_IP6 + 1;
	}
	dev_make_gids(dev);

	dev->qp_tbl = rte_zmalloc("srnic_qp_tbl", sizeof(*dev->qp_tbl) * SRNIC_MAX_QP, 0);
	dev->mr_tbl = rte_zmalloc("srnic_mr_tbl", sizeof(*dev->mr_tbl) * SRNIC_MAX_MR, 0);
	dev->mr_gen = rte_zmalloc("srnic_mr_gen", SRNIC_MAX_MR, 0);
	dev->mw_tbl = rte_zmalloc("srnic_mw_tbl", sizeof(*dev->mw_tbl) * SRNIC_MAX_MW, 0);
	dev->srq_tbl = rte_zmalloc("srnic_srq_tbl", sizeof(*dev->srq_tbl) * SRNIC_MAX_SRQ, 0);
	dev->cq_tbl = rte_zmalloc("srnic_cq_tbl", sizeof(*dev->cq_tbl) * SRNIC_MAX_CQ, 0);
	snprintf(pname, sizeof(pname), "%.20s_dev", dev->name);
	dev->events = rte_ring_create_elem(pname, sizeof(struct srnic_async_event),
					   SRNIC_DEV_EVENT_RING, rte_socket_id(), RING_F_EXACT_SZ);
	/* the engines signal it when they queue an event (srnic_dev_event_fd()) */
	dev->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (dev->qp_tbl == NULL || dev->mr_tbl == NULL || dev->mr_gen == NULL || dev->mw_tbl == NULL ||
	    dev->srq_tbl == NULL || dev->cq_tbl == NULL || dev->events == NULL ||
	    dev->event_fd < 0)
		goto fail_nomem;

	orphans_reap();
	nb_mbufs = conf->nb_mbufs != 0 ? conf->nb_mbufs : SRNIC_DEFAULT_MBUFS;
	pid = atomic_fetch_add(&pool_seq, 1);
	snprintf(pname, sizeof(pname), "%.12s_h%u", dev->name, pid);
	dev->pool = rte_pktmbuf_pool_create(pname, nb_mbufs, SRNIC_MBUF_CACHE, 0,
					    DEV_HDR_DATA_ROOM, rte_socket_id());
	snprintf(pname, sizeof(pname), "%.12s_e%u", dev->name, pid);
	dev->ext_pool = rte_pktmbuf_pool_create(pname, nb_mbufs, SRNIC_MBUF_CACHE, 0, 0,
						rte_socket_id());
	/* The RX and TX-copy pools: what the rings hold, a margin, and what
	 * every lcore id's cache may keep (srnic_dev_conf.nb_caching_lcores):
	 * an idle id's cache would otherwise starve the RX refill */
	snprintf(pname, sizeof(pname), "%.12s_r%u", dev->name, pid);
	dev->rx_pool = rte_pktmbuf_pool_create(pname,
					       dev->nb_engines * (DEV_RX_DESC + 2 * SRNIC_RX_BURST) +
					       SRNIC_RX_POOL_MARGIN +
					       (uint32_t)nb_caching * SRNIC_MBUF_CACHE_HELD,
					       SRNIC_MBUF_CACHE, 0, DEV_RX_DATA_ROOM, rte_socket_id());
	/* TX copies have their own pool: a TX ring full of them
	 * (a PMD that takes one segment) must not starve the RX refill */
	snprintf(pname, sizeof(pname), "%.12s_t%u", dev->name, pid);
	dev->tx_copy_pool = rte_pktmbuf_pool_create(pname,
						    dev->nb_engines * DEV_TX_DESC + SRNIC_TX_COPY_MARGIN +
						    (uint32_t)nb_caching * SRNIC_MBUF_CACHE_HELD,
						    SRNIC_MBUF_CACHE, 0, DEV_RX_DATA_ROOM,
						    rte_socket_id());
	if (dev->pool == NULL || dev->ext_pool == NULL || dev->rx_pool == NULL ||
	    dev->tx_copy_pool == NULL)
		goto fail_nomem;

	for (i = 0; i < dev->nb_engines; i++) {
		dev->engines[i] = srnic_engine_create(dev, i);
		if (dev->engines[i] == NULL)
			goto fail_nomem;
	}
	rc = dev_port_setup(dev, dev->rx_pool,
			    (conf->comp_mask & SRNIC_DEV_CONF_TX_SEG_MAX) ? conf->tx_seg_max : 0);
	if (rc != 0) {
		rte_errno = -rc; /* a negative errno, said which call failed */
		goto fail;
	}
	/* port events report changes from here on (srnic_get_async_event()) */
	srnic_dev_port_init(dev);
	srnic_telemetry_add(dev);
	SRNIC_LOG(INFO, "%s: ICRC of small flat packets: %s (%s)", dev->name,
		  srnic_icrc_fold_name(srnic_icrc_fold_get()), srnic_icrc_fold_why());
	return dev;

fail_inval:
	rte_errno = EINVAL;
	goto fail;
fail_nomem:
	rte_errno = ENOMEM;
fail:
	for (i = 0; i < dev->nb_engines; i++)
		if (dev->engines[i] != NULL)
			srnic_engine_destroy(dev->engines[i]);
	/* the port may hold RX mbufs if its setup got that far */
	dev_pool_release(dev->pool);
	dev_pool_release(dev->ext_pool);
	dev_pool_release(dev->rx_pool);
	dev_pool_release(dev->tx_copy_pool);
	dev_events_free(dev);
	rte_free(dev->qp_tbl);
	rte_free(dev->mr_tbl);
	rte_free(dev->mr_gen);
	rte_free(dev->mw_tbl);
	rte_free(dev);
	return NULL;
}

int
srnic_dev_destroy(struct srnic_dev *dev)
{
	uint16_t i;

	if (dev == NULL)
		return -EINVAL;
	if (srnic_dev_in_poll(dev))
		return -EDEADLK; /* its own engine would stop under us */
	/* verbs (ibv_close_device aside): EBUSY while objects live; their
	 * engines and tables would go under them */
	if (atomic_load(&dev->nb_pd) != 0 || atomic_load(&dev->nb_cq) != 0 ||
	    atomic_load(&dev->nb_mr) != 0 || atomic_load(&dev->nb_mw) != 0 ||
	    atomic_load(&dev->nb_qp) != 0 ||
	    atomic_load(&dev->nb_srq) != 0)
		return -EBUSY;
	srnic_telemetry_del(dev);
	for (i = 0; i < dev->nb_engines; i++)
		srnic_engine_stop(dev->engines[i]);
	rte_eth_dev_stop(dev->port_id);
	for (i = 0; i < dev->nb_engines; i++)
		srnic_engine_destroy(dev->engines[i]);
	/* Mbufs of this device may still sit in a peer's rings: each pool
	 * goes when its last mbuf is back (dev_pool_release()). */
	dev_pool_release(dev->pool);
	dev_pool_release(dev->ext_pool);
	dev_pool_release(dev->rx_pool);
	dev_pool_release(dev->tx_copy_pool);
	orphans_reap();
	srnic_dev_port_fini(dev);
	dev_events_free(dev);
	rte_free(dev->qp_tbl);
	rte_free(dev->mr_tbl);
	rte_free(dev->mr_gen);
	rte_free(dev->mw_tbl);
	rte_free(dev);
	return 0;
}

const char *
srnic_dev_name(const struct srnic_dev *dev)
{
	return dev->name;
}

int
srnic_dev_gid(const struct srnic_dev *dev, int index, union ibv_gid *gid)
{
	if (index < 0 || index >= SRNIC_GID_TBL_LEN || gid == NULL)
		return -EINVAL;
	*gid = dev->gid[index];        /* an empty entry: all zero */
	return srnic_dev_gid_valid(dev, (unsigned int)index) ? 0 : -ENODATA;
}

struct srnic_engine *
srnic_dev_engine(struct srnic_dev *dev, uint16_t index)
{
	return index < dev->nb_engines ? dev->engines[index] : NULL;
}

uint16_t
srnic_dev_nb_engines(const struct srnic_dev *dev)
{
	return dev->nb_engines;
}

int
srnic_dev_query(const struct srnic_dev *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", SRNIC_VERSION_STRING);
	memcpy(&a->node_guid, &dev->gid[0].raw[8], 8);
	memcpy(&a->sys_image_guid, &dev->gid[0].raw[8], 8);
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 4096;
	a->vendor_id = 0xFFFFFF;
	a->max_qp = SRNIC_MAX_QP;
	a->max_qp_wr = SRNIC_MAX_QP_WR;
	/* windows of type 1 and 2B (bound to a QP), as rxe (srnic_alloc_mw()) */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE |
			      IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_sge = SRNIC_MAX_SGE;
	a->max_sge_rd = SRNIC_MAX_SGE;
	a->max_cq = SRNIC_MAX_CQ;
	a->max_srq = SRNIC_MAX_SRQ;
	a->max_srq_wr = SRNIC_MAX_SRQ_WR;
	a->max_srq_sge = SRNIC_MAX_SGE;
	a->max_cqe = SRNIC_MAX_CQE;
	a->max_mr = SRNIC_MAX_MR - 1; /* key index 0 is never given (srnic_reg_mr()) */
	a->max_mw = SRNIC_MAX_MW;
	a->max_pd = SRNIC_MAX_PD;
	a->max_ah = SRNIC_MAX_AH;
	a->max_mcast_grp = SRNIC_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = SRNIC_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = SRNIC_MAX_TOTAL_MCAST_QP_ATTACH;
	a->max_qp_rd_atom = SRNIC_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = SRNIC_MAX_RD_ATOMIC;
	a->max_res_rd_atom = SRNIC_MAX_RD_ATOMIC * SRNIC_MAX_QP;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
	return 0;
}

int
srnic_dev_query_port(const struct srnic_dev *dev, struct ibv_port_attr *a)
{
	struct rte_eth_link link;

	memset(a, 0, sizeof(*a));
	/* The link as the PMD has it now (no wait): a memif without its
	 * peer, a cable out, a port set down are DOWN. phys_state as rxe's
	 * and the HCAs' (IBTA 14.2.5.6): LinkUp, else Polling while the port
	 * has never been up (waiting for its first peer), Disabled after. */
	if (rte_eth_link_get_nowait(dev->port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP) {
		a->state = IBV_PORT_ACTIVE;
		a->phys_state = SRNIC_PORT_PHYS_LINK_UP;
	} else {
		a->state = IBV_PORT_DOWN;
		a->phys_state = atomic_load_explicit(&dev->link_ever_up, memory_order_relaxed) ?
				SRNIC_PORT_PHYS_DISABLED : SRNIC_PORT_PHYS_POLLING;
	}
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = mtu_to_ib(__atomic_load_n(&dev->mtu, __ATOMIC_RELAXED));
	a->gid_tbl_len = SRNIC_GID_TBL_LEN;
	a->max_msg_sz = SRNIC_MAX_MSG_SIZE;
	a->pkey_tbl_len = 1;
	a->link_layer = IBV_LINK_LAYER_ETHERNET;
	a->active_width = 2;  /* 4x */
	a->active_speed = 32; /* EDR-ish, informative only */
	return 0;
}

void
srnic_dev_quiesce(struct srnic_dev *dev)
{
	uint16_t i;

	/* Dekker, control side: the caller's stores (a QP's state, a QP or
	 * MR table entry), this fence, then poll_seq. Engine side
	 * (srnic_engine_poll()): poll_seq odd, its fence, then those loads.
	 * Either we see the odd poll_seq and wait it out, or that poll (and
	 * every later one) sees our stores. */
	atomic_thread_fence(memory_order_seq_cst);
	for (i = 0; i < dev->nb_engines; i++) {
		struct srnic_engine *eng = dev->engines[i];
		uint64_t s = atomic_load_explicit(&eng->poll_seq, memory_order_acquire);

		if (s & 1)
			while (atomic_load_explicit(&eng->poll_seq, memory_order_acquire) == s)
				rte_pause();
	}
}

/* ---- PD ---- */

struct srnic_pd *
srnic_alloc_pd(struct srnic_dev *dev)
{
	struct srnic_pd *pd;

	if (dev == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	pd = rte_zmalloc("srnic_pd", sizeof(*pd), 0);
	if (pd == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	pd->dev = dev;
	atomic_fetch_add(&dev->nb_pd, 1);
	return pd;
}

int
srnic_dealloc_pd(struct srnic_pd *pd)
{
	if (pd == NULL)
		return -EINVAL;
	if (atomic_load(&pd->refs) != 0)
		return -EBUSY;
	atomic_fetch_sub(&pd->dev->nb_pd, 1);
	rte_free(pd);
	return 0;
}
