/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_HOST_UTIL_H
#define SRNIC_HOST_UTIL_H

/*
 * Helpers of the host tests: srnic devices built by hand over net_ring
 * pairs (any address family, MAC, engine count, host_rx callback, with or
 * without static neighbours), raw peer ports the test drives itself, RC
 * endpoints, a frame capture with an independent check of every RoCEv2
 * frame (ICRC, IPv4/IPv6 and UDP lengths computed here, not by srnic), and
 * a poll loop over a set of engines.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "srnic.h"
#include "srnic_link.h"
#include "srnic_wire.h"
#include "test_rc.h"
#include "test_ref.h"

/* Generous: ASan debug builds are several times slower. */
#define HOST_WAIT_S 20
#define HOST_MAX_FRAMES 4096
#define HOST_MAX_ENG 8
#define HOST_RING_SIZE 4096
#define HOST_NB_MBUFS 8191

/** A device to create on a port. */
struct host_dev_conf {
	uint16_t port;
	uint16_t nb_engines;        /* 0: 1 */
	uint16_t mtu;               /* 0: 9000 */
	uint8_t ip_ver;             /* 0: 4 */
	uint8_t ip[16];
	struct rte_ether_addr mac;
	srnic_host_rx_cb host_rx;
	void *host_rx_arg;
	const char *name;
	uint16_t read_inline_max;   /* srnic_dev_conf.read_inline_max */
};

struct srnic_dev *host_dev_create(const struct host_dev_conf *c);
/* c zeroed but for port, IP version, address (4 or 16 bytes), MAC and name. */
void host_dev_conf_init(struct host_dev_conf *c, uint16_t port, uint8_t ip_ver, const uint8_t *ip,
			const struct rte_ether_addr *mac, const char *name);
/* host_dev_create() of such a conf. */
struct srnic_dev *host_dev_new(uint16_t port, uint8_t ip_ver, const uint8_t *ip,
			       const struct rte_ether_addr *mac, const char *name);
/* dev[0] and dev[1] learn each other (GID index 1) as static neighbours
 * with MACs mac0 and mac1; 0 or -1. */
int host_neigh_pair(struct srnic_dev *const dev[2], const struct rte_ether_addr *mac0,
		    const struct rte_ether_addr *mac1);
/* The first two worker lcores into lcore; returns how many there were (<= 2). */
unsigned int host_two_workers(unsigned int lcore[2]);

/* A port configured by the test itself (no srnic on it): nq RX/TX queues. */
void host_raw_port(uint16_t port, uint16_t nq);
/* One frame from a raw port's RX queue 0, or NULL. */
struct rte_mbuf *host_raw_rx(uint16_t port);

/** One RC endpoint: PD, CQ and QP on one engine of a device. */
struct host_ep {
	struct srnic_dev *dev;
	struct srnic_pd *pd;
	struct srnic_engine *eng;
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	bool own_pd;
	struct ibv_wc wc[256];      /* completions drained by host_wait_wc() */
	uint32_t nwc;
};

/* pd NULL: a PD of its own. */
void host_ep_create(struct host_ep *ep, struct srnic_dev *dev, struct srnic_pd *pd,
		    uint16_t engine, uint32_t depth);
/* QP to ERR, let the engines settle, destroy QP and CQ (and the own PD). */
void host_ep_destroy(struct host_ep *ep);
/* RESET -> RTS towards dgid / dest_qpn; dmac NULL: resolve by ARP/ND. */
int host_connect(struct host_ep *ep, const union ibv_gid *dgid, uint32_t dest_qpn,
		 const struct rte_ether_addr *dmac, enum ibv_mtu mtu, uint32_t sq_psn,
		 uint32_t rq_psn);
/* Same with the GRH's traffic class and flow label. */
int host_connect_grh(struct host_ep *ep, const union ibv_gid *dgid, uint32_t dest_qpn,
		     const struct rte_ether_addr *dmac, enum ibv_mtu mtu, uint32_t sq_psn,
		     uint32_t rq_psn, uint8_t tclass, uint32_t flow_label);
/* Connect a and b to each other (peer GID index 1, no dmac), PMTU mtu. */
void host_connect_pair(struct host_ep *a, struct host_ep *b, enum ibv_mtu mtu);
/* Same with the GRH's traffic class and flow label of a's frames to b
 * (_ab) and of b's to a (_ba). */
void host_connect_pair_grh(struct host_ep *a, struct host_ep *b, enum ibv_mtu mtu,
			   uint8_t tclass_ab, uint32_t flow_ab, uint8_t tclass_ba,
			   uint32_t flow_ba);

/* ---- the poll loop ---- */

/* Engines host_poll() drives, in this order. */
void host_poll_set(struct srnic_engine *const *eng, unsigned int n);
/* One iteration of every engine; returns what srnic_engine_poll() moved. */
unsigned int host_poll(void);
/* Poll until n quiet rounds in a row. */
void host_settle(void);
uint64_t host_deadline(void);
bool host_deadline_passed(uint64_t deadline);

#define HOST_RUN_UNTIL(cond) do { \
	uint64_t dl__ = host_deadline(); \
	while (!(cond)) { \
		if (host_deadline_passed(dl__)) \
			fail_msg("timeout waiting for %s (%s:%d)", #cond, __FILE__, __LINE__); \
		host_poll(); \
	} \
} while (0)

/* Poll until ep has n completions in ep->wc (since ep->nwc was 0). */
const struct ibv_wc *host_wait_wc(struct host_ep *ep, uint32_t n);

/* ---- capture ---- */

struct host_frame {
	uint16_t port;              /* port that received it */
	uint32_t len;
	uint8_t *data;
	int parse_rc;               /* srnic_pkt_parse(flags 0): ICRC checked */
	int icrc_ok;                /* our own ICRC over the frame agrees (RoCE only) */
	struct srnic_pkt pkt;       /* offsets, valid when parse_rc == 0 (mbuf/bth stale) */
};

struct host_cap {
	uint32_t n;
	struct host_frame f[HOST_MAX_FRAMES];
};

extern struct host_cap *H_cap;

/* Capture every frame port receives (RX). */
struct srnic_capture *host_cap_start(uint16_t port);
void host_cap_reset(void);

/* Two srnic devices A and B on a ring pair named name (captured, no
 * neighbours), and a third, C (ip_a, mac_a), on a ring pair "<name>raw"
 * whose other port is a raw port the test drives. */
struct host_trio {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_capture *cap[2];
	uint16_t rport[2];
	struct srnic_dev *dev_c;
};

int host_trio_setup(struct host_trio *t, const char *name, uint8_t ip_ver, const uint8_t *ip_a,
		    const uint8_t *ip_b, const struct rte_ether_addr *mac_a,
		    const struct rte_ether_addr *mac_b);
void host_trio_teardown(struct host_trio *t);
/* Two srnic devices A and B (IPv4 127.0.0.1 and .2, MACs mac[0], mac[1],
 * devices "<name>A", "<name>B") on a ring pair named name, each captured,
 * with a PD each, knowing each other statically, the pair's rings (A -> B,
 * B -> A) and host_poll_set() on their engines 0. read_inline_max: each
 * side's srnic_dev_conf.read_inline_max (NULL: 0). */
struct host_duo {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_engine *eng[2];
	struct srnic_capture *cap[2];
	struct srnic_pd *pd[2];
	struct rte_ring *ab, *ba;
};

int host_duo_setup(struct host_duo *d, const char *name, const struct rte_ether_addr mac[2],
		   const uint16_t *read_inline_max);
void host_duo_teardown(struct host_duo *d);
/* The capture emptied, fresh endpoints a on A and b on B (engine 0, the
 * duo's PDs, depth WRs) connected to each other at mtu. */
void host_duo_connect(struct host_duo *d, struct host_ep *a, struct host_ep *b, uint32_t depth,
		      enum ibv_mtu mtu);
/* host_ep_destroy() of both. */
void host_duo_disconnect(struct host_ep *a, struct host_ep *b);
/* Frames received on port with the EtherType (0: any), into idx. */
uint32_t host_cap_find(uint16_t port, uint16_t ethertype, uint32_t *idx, uint32_t max);
/* RoCEv2 frames received on port with opcode (-1: any). */
uint32_t host_cap_roce(uint16_t port, int opcode, uint32_t *idx, uint32_t max);
void host_cap_dump(void);

/* ---- independent computations ---- */

/* The ICRC of a flat RoCEv2 frame, len including the ICRC: srnic_ref_icrc(). */
uint32_t host_icrc(const uint8_t *frame, uint32_t len, uint32_t l3);
/* Internet checksum over an IPv6 pseudo header (proto) and the L4 bytes. */
uint16_t host_cksum6(const uint8_t *src, const uint8_t *dst, uint8_t proto,
		     const uint8_t *l4, uint32_t len);

/* Big-endian load from a frame. */
static inline uint32_t
host_be(const uint8_t *p, unsigned int n)
{
	uint32_t v = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* ---- misc ---- */

int host_eal_init(const char *name, int n_extra, const char *const *extra);
int64_t host_eng_stat(const struct srnic_engine *eng, const char *name);
/* Print an engine's non-zero counters to stderr (on failures). */
void host_stats_dump(const char *what, const struct srnic_engine *eng);
/* rte_zmalloc'd, page aligned. */
void *host_alloc(size_t len);
/* Post one send WR (rdma fields for READ/WRITE). */
int host_post(struct host_ep *ep, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
	      uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, unsigned int flags);
int host_post_recv(struct host_ep *ep, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
/* RESET -> INIT (Q_Key qkey) -> RTR -> RTS (SQ PSN 1) for a UD QP. */
void host_ud_up(struct srnic_qp *qp, uint32_t qkey);
/* Post one signalled UD SEND of len bytes at addr to rqpn (Q_Key qkey) through ah. */
int host_ud_send(struct srnic_qp *qp, struct srnic_ah *ah, uint32_t rqpn, uint32_t qkey,
		 uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
/* An AH on pd for dev's GID 1 (its IP address), asserted. */
struct srnic_ah *host_ah_to(struct srnic_pd *pd, const struct srnic_dev *dev);
/* system(cmd), a failure said on stderr: 0 or its status. */
int host_sh(const char *cmd);

/** A READ between two endpoints: a's local buffer, b's remote one. */
struct host_xfer {
	uint32_t len;
	uint8_t *local, *remote;    /* host_alloc()'d */
	struct srnic_mr *lmr, *rmr; /* on a's PD, on b's PD */
};

/* Allocate both buffers of len bytes, fill remote with srnic_test_fill()
 * (seed), register local on a's PD with laccess and remote on b's with
 * raccess (both asserted non-NULL). */
void host_xfer_setup(struct host_xfer *x, const struct host_ep *a, const struct host_ep *b,
		     uint32_t len, int laccess, int raccess, uint32_t seed);
/* Post on a the signalled READ of all of remote into local. */
int host_xfer_read(const struct host_xfer *x, struct host_ep *a, uint64_t wr_id);
/* Deregister both MRs (asserted), before the endpoints' PDs go. */
void host_xfer_dereg(struct host_xfer *x);
/* Free both buffers: after the endpoints are destroyed, as responses built
 * over remote may be in flight until then. */
void host_xfer_free(struct host_xfer *x);
/* Send one raw frame on port/queue (a copy in the test pool). */
void host_inject(uint16_t port, uint16_t queue, const void *frame, uint32_t len);

#endif /* SRNIC_HOST_UTIL_H */
