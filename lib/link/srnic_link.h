/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_LINK_H
#define SRNIC_LINK_H

/**
 * @file
 * In-process links, packet capture and pcap files for srnic ports.
 *
 * - A ring pair: two ethdev ports joined back to back by rte_rings (the
 *   net_ring PMD), so two srnic endpoints can talk inside one process with
 *   no NIC, no hugepages and no kernel.
 * - Capture: a per-packet hook on the RX and/or TX path of any configured
 *   ethdev port, built on ethdev RX/TX callbacks.
 * - A classic pcap writer (nanosecond timestamps, Ethernet link type) that
 *   tshark, Wireshark and scapy read.
 *
 * Constructors return NULL and set rte_errno; other functions return 0 or a
 * negative errno.
 */

#include <stdint.h>

#include <rte_mbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ring pair ---- */

/** Longest name accepted by srnic_link_ring_pair(). */
#define SRNIC_LINK_NAME_MAX 16

/**
 * Create two ethdev ports joined back to back by rings.
 *
 * Queue i of port A's TX feeds queue i of port B's RX and vice versa, so the
 * queue a packet is sent on is the queue it is received on. Each direction
 * of each queue is one rte_ring created with RING_F_SP_ENQ | RING_F_SC_DEQ:
 * a queue may be used by one sending and one receiving lcore at a time, as
 * with any PMD queue.
 *
 * The ports are created, not configured: the caller configures them like
 * any other port (rte_eth_dev_configure() with nb_queues RX and TX queues,
 * rte_eth_rx_queue_setup(), rte_eth_tx_queue_setup(), rte_eth_dev_start()).
 * The descriptor counts and mempool passed to the queue setup calls are
 * ignored by the net_ring PMD: a queue holds ring_size - 1 packets, and
 * received mbufs are the very mbufs the peer sent (no copy).
 *
 * The ethdev names are "net_ring_<name>_a" and "net_ring_<name>_b"; the rings
 * are named "<name>_ab<i>" (A to B) and "<name>_ba<i>" (B to A). The ports
 * and rings live until the process exits.
 *
 * @param name
 *   Unique name of the pair, 1 to SRNIC_LINK_NAME_MAX characters.
 * @param nb_queues
 *   Queues per port and direction, 1 to RTE_PMD_RING_MAX_RX_RINGS (16).
 * @param ring_size
 *   Slots per ring, a power of two from 2 to 2^30 (RTE_RING_SZ_MASK).
 * @param port_a
 *   Set to the first port's id.
 * @param port_b
 *   Set to the second port's id.
 * @return
 *   0 on success, or a negative errno:
 *   - -EINVAL: name, port_a or port_b NULL; nb_queues or ring_size out of
 *     range; or the net_ring PMD refused the port.
 *   - -ENAMETOOLONG: name longer than SRNIC_LINK_NAME_MAX.
 *   - -EEXIST: a pair (or ring) of that name exists already.
 *   - -ENOMEM: no memory for the rings or the port.
 *   - -ENOSPC: no free memzone or ethdev port slot.
 *   - -E_RTE_NO_CONFIG, -E_RTE_SECONDARY: EAL not initialised, or called
 *     from a secondary process.
 *   On failure nothing is left behind.
 */
int srnic_link_ring_pair(const char *name, uint16_t nb_queues,
			 unsigned int ring_size, uint16_t *port_a,
			 uint16_t *port_b);

/* ---- capture ---- */

/** Capture packets the port receives (after the PMD's RX burst). */
#define SRNIC_CAPTURE_RX 0x1
/** Capture packets offered to the port for transmission (before TX). */
#define SRNIC_CAPTURE_TX 0x2

/**
 * Called once per captured packet, on the lcore polling the queue.
 *
 * @param port_id
 *   Port the packet was seen on.
 * @param dir
 *   SRNIC_CAPTURE_RX or SRNIC_CAPTURE_TX.
 * @param m
 *   The packet; valid only during the call, must not be modified or freed.
 * @param tsc
 *   rte_rdtsc() taken once per burst (every packet of a burst has the same
 *   value).
 * @param arg
 *   The arg given to srnic_capture_start().
 */
typedef void (*srnic_capture_cb)(uint16_t port_id, int dir,
				 const struct rte_mbuf *m, uint64_t tsc,
				 void *arg);

/** A capture installed on one port (opaque). */
struct srnic_capture;

/**
 * Start capturing on every configured queue of a port.
 *
 * Must be called after rte_eth_dev_configure() (before or after
 * rte_eth_dev_start()): the callbacks are installed on the queues the port
 * has at that time. Reconfiguring the port with another queue count needs
 * a new capture.
 *
 * The callback runs inside rte_eth_rx_burst() / rte_eth_tx_burst() on the
 * polling lcores, possibly several at once (one per queue): it must be
 * thread safe (srnic_pcap_write() is) and fast.
 *
 * What is seen:
 * - RX sees each packet the application receives, once. On a ring pair,
 *   capturing RX on both ports sees every packet exactly once; capturing RX
 *   and TX sees every packet twice.
 * - TX sees each packet offered to rte_eth_tx_burst(), before the PMD takes
 *   it: a packet the PMD does not accept (queue full) is seen anyway, and
 *   again each time the caller retries it.
 *
 * Several captures may be installed on one port; each gets every packet.
 *
 * @param port_id
 *   A configured ethdev port.
 * @param flags
 *   SRNIC_CAPTURE_RX and/or SRNIC_CAPTURE_TX.
 * @param cb
 *   Called once per packet.
 * @param arg
 *   Passed to cb.
 * @return
 *   The capture, or NULL with rte_errno set:
 *   - ENODEV: port_id is not a valid port.
 *   - EINVAL: cb NULL, flags empty or with unknown bits, or the port has no
 *     queue in a selected direction (not configured yet).
 *   - ENOMEM: out of memory.
 *   - ENOTSUP: DPDK was built without RTE_ETHDEV_RXTX_CALLBACKS.
 */
struct srnic_capture *srnic_capture_start(uint16_t port_id, unsigned int flags,
					  srnic_capture_cb cb, void *arg);

/**
 * Remove a capture's callbacks and free it.
 *
 * No lcore may be polling the port's queues during the call (stop the port,
 * or stop and join the polling lcores first): a burst in flight could still
 * be using the callbacks being freed.
 *
 * @param c
 *   A capture from srnic_capture_start(), or NULL (no-op).
 * @return
 *   0, or the first error met while removing callbacks (the capture is
 *   freed anyway):
 *   - -ENODEV: the port was detached (its callbacks went with it).
 *   - -EINVAL: a callback was not found on its queue.
 */
int srnic_capture_stop(struct srnic_capture *c);

/* ---- pcap ---- */

/** Bytes of a frame a pcap record keeps at most (longer frames are cut). */
#define SRNIC_PCAP_SNAPLEN 65535

/** An open pcap file (opaque). */
struct srnic_pcap;

/**
 * Create (or truncate) a pcap file and write its header: classic pcap,
 * nanosecond timestamps (magic 0xa1b23c4d), link type Ethernet (1), snap
 * length SRNIC_PCAP_SNAPLEN.
 *
 * One writer may be shared by several lcores (e.g. capture callbacks on
 * several queues): each srnic_pcap_write() takes a spinlock, so records
 * never interleave. Keep it for debugging and tests, not for line rate.
 *
 * @param path
 *   File to write.
 * @return
 *   The writer, or NULL with rte_errno set:
 *   - EINVAL: path NULL.
 *   - ENOMEM: out of memory.
 *   - any errno of fopen() or fwrite() (EACCES, ENOENT, ENOSPC...).
 */
struct srnic_pcap *srnic_pcap_open(const char *path);

/**
 * srnic_pcap_open() with a snap length of its own: records keep at most
 * snaplen bytes of each frame (the headers, say, not a 64 KiB READ's
 * payload), with the frame's original length; the file header says so.
 *
 * @param path
 *   File to write.
 * @param snaplen
 *   Bytes kept per frame, 1 to SRNIC_PCAP_SNAPLEN.
 * @return
 *   As srnic_pcap_open(); EINVAL also for a snaplen out of range.
 */
struct srnic_pcap *srnic_pcap_open_snaplen(const char *path, uint32_t snaplen);

/**
 * Bytes written to the file so far (its header and every record), e.g. to
 * stop capturing at a size. Thread safe, may lag a record being written.
 *
 * @param p
 *   Writer from srnic_pcap_open(), or NULL (0).
 * @return
 *   The file's size in bytes.
 */
uint64_t srnic_pcap_bytes(const struct srnic_pcap *p);

/**
 * Append one frame. A multi-segment mbuf is written as one frame (all
 * segments in order); frames longer than the snap length are cut, with
 * their original length recorded.
 *
 * @param p
 *   Writer from srnic_pcap_open().
 * @param m
 *   The frame (not modified).
 * @param ns_timestamp
 *   Nanoseconds since the Unix epoch, e.g. from srnic_pcap_tsc_to_ns().
 * @return
 *   0, or a negative errno:
 *   - -EINVAL: p or m NULL.
 *   - -EIO: the write failed (disk full...); the file is then unusable.
 */
int srnic_pcap_write(struct srnic_pcap *p, const struct rte_mbuf *m,
		     uint64_t ns_timestamp);

/**
 * Convert a TSC value (e.g. a capture callback's tsc) to nanoseconds since
 * the Unix epoch, from the wall clock and TSC read together at
 * srnic_pcap_open(). Thread safe.
 *
 * @param p
 *   Writer from srnic_pcap_open().
 * @param tsc
 *   An rte_rdtsc() value of this process.
 * @return
 *   The timestamp in nanoseconds.
 */
uint64_t srnic_pcap_tsc_to_ns(const struct srnic_pcap *p, uint64_t tsc);

/**
 * Flush and close a pcap file, and free the writer. No srnic_pcap_write()
 * may be running or start on it (stop the captures using it first).
 *
 * @param p
 *   Writer from srnic_pcap_open(), or NULL (no-op).
 * @return
 *   0, or -EIO if flushing or closing failed (the writer is freed anyway).
 */
int srnic_pcap_close(struct srnic_pcap *p);

#ifdef __cplusplus
}
#endif

#endif /* SRNIC_LINK_H */
