/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_TEST_PCAP_H
#define SRNIC_TEST_PCAP_H

/**
 * @file
 * Test helpers: classic pcap files (read and write) and mbufs made from
 * flat frames (one segment, a chain of segments, external buffers).
 *
 * The reader accepts the classic libpcap format in both byte orders, with
 * microsecond (0xa1b2c3d4) or nanosecond (0xa1b23c4d) timestamps, link
 * type Ethernet only. pcapng is not supported.
 */

#include <stdint.h>
#include <stdio.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

/** Largest frame the reader accepts (a record claiming more is corrupt). */
#define SRNIC_TEST_PCAP_MAX_FRAME (256u * 1024u)

/**
 * Per-frame callback. Return 0 to go on, > 0 to stop early (the reader then
 * returns the number of frames delivered so far), < 0 to abort (the reader
 * returns that value).
 */
typedef int (*srnic_test_pcap_cb)(const uint8_t *frame, uint32_t caplen,
				  uint32_t origlen, void *arg);

/**
 * Call cb for every frame of a classic pcap file, in file order.
 * Returns the number of frames delivered, or a negative errno: -ENOENT etc.
 * from fopen, -EINVAL for an unknown magic, -EPROTONOSUPPORT for a link
 * type other than Ethernet, -EBADMSG for a truncated or oversized record,
 * -ENOMEM; or the callback's negative return value.
 */
int srnic_test_pcap_foreach(const char *path,
			    int (*cb)(const uint8_t *frame, uint32_t caplen,
				      uint32_t origlen, void *arg),
			    void *arg);

/** A one-segment mbuf holding a copy of frame; NULL if it does not fit. */
struct rte_mbuf *srnic_test_mbuf_from(struct rte_mempool *mp, const uint8_t *frame,
				      uint32_t len);

/**
 * A chain of direct mbufs holding a copy of frame: segment i holds
 * seg_lens[i] bytes (0 is allowed: an empty segment), and the bytes left
 * after the n given lengths, if any, go in one more segment. NULL when the
 * lengths add up to more than len, a segment does not fit, or on
 * allocation failure.
 */
struct rte_mbuf *srnic_test_mbuf_chain_from(struct rte_mempool *mp, const uint8_t *frame,
					    uint32_t len, const uint32_t *seg_lens,
					    unsigned int n);

/**
 * Prepare a shared info for external buffers owned by the test: no-op free
 * callback and one reference held by the caller forever, so that freeing
 * the mbufs attached to it never frees the buffer.
 */
void srnic_test_ext_shinfo_init(struct rte_mbuf_ext_shared_info *shinfo);

/**
 * An mbuf from mp attached (rte_pktmbuf_attach_extbuf) to the external
 * buffer buf, with len data bytes (buf itself is not copied). shinfo must
 * have been set up by srnic_test_ext_shinfo_init(). NULL on failure.
 */
struct rte_mbuf *srnic_test_mbuf_ext(struct rte_mempool *mp, void *buf, uint16_t len,
				     struct rte_mbuf_ext_shared_info *shinfo);

/**
 * Same with a buffer of buf_len bytes of which the first data_len are data:
 * the mbuf has tailroom, which code must still not write into (it is not
 * the mbuf's own memory: think registered user memory).
 */
struct rte_mbuf *srnic_test_mbuf_ext_room(struct rte_mempool *mp, void *buf, uint16_t buf_len,
					  uint16_t data_len,
					  struct rte_mbuf_ext_shared_info *shinfo);

/** Copy a (possibly chained) mbuf's bytes into dst (room for pkt_len). */
void srnic_test_mbuf_flatten(const struct rte_mbuf *m, uint8_t *dst);

/**
 * Create a classic pcap file (native byte order, microsecond timestamps,
 * Ethernet). Returns NULL and sets errno on failure. Close with fclose().
 */
FILE *srnic_test_pcap_create(const char *path);

/**
 * Append an mbuf (all its segments, as one frame) to a pcap file made by
 * srnic_test_pcap_create(). Returns 0 or a negative errno.
 */
int srnic_test_pcap_write(FILE *f, const struct rte_mbuf *m);

#endif /* SRNIC_TEST_PCAP_H */
