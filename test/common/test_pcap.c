/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classic pcap files (https://wiki.wireshark.org/Development/LibpcapFileFormat)
 * and mbufs built from flat frames, for tests and benchmarks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <rte_byteorder.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "test_pcap.h"

#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define PCAP_LINKTYPE_ETHERNET 1u
#define PCAP_GHDR_LEN 24
#define PCAP_RHDR_LEN 16

static uint32_t
pcap_u32(const uint8_t *p, int swap)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return swap ? rte_bswap32(v) : v;
}

int
srnic_test_pcap_foreach(const char *path,
			int (*cb)(const uint8_t *frame, uint32_t caplen, uint32_t origlen,
				  void *arg),
			void *arg)
{
	uint8_t ghdr[PCAP_GHDR_LEN], rhdr[PCAP_RHDR_LEN];
	uint8_t *buf = NULL;
	uint32_t magic, linktype;
	int swap, n = 0, rc;
	size_t got;
	FILE *f;

	f = fopen(path, "rb");
	if (f == NULL)
		return -errno;
	if (fread(ghdr, 1, sizeof(ghdr), f) != sizeof(ghdr)) {
		rc = -EINVAL;
		goto out;
	}
	memcpy(&magic, ghdr, sizeof(magic));
	if (magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS) {
		swap = 0;
	} else if (magic == rte_bswap32(PCAP_MAGIC_US) || magic == rte_bswap32(PCAP_MAGIC_NS)) {
		swap = 1;
	} else {
		rc = -EINVAL;
		goto out;
	}
	/* The link type's low 16 bits (the upper ones may carry FCS info). */
	linktype = pcap_u32(ghdr + 20, swap) & 0xffff;
	if (linktype != PCAP_LINKTYPE_ETHERNET) {
		rc = -EPROTONOSUPPORT;
		goto out;
	}
	buf = malloc(SRNIC_TEST_PCAP_MAX_FRAME);
	if (buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		uint32_t caplen, origlen;

		got = fread(rhdr, 1, sizeof(rhdr), f);
		if (got == 0 && feof(f))
			break;
		if (got != sizeof(rhdr)) {
			rc = -EBADMSG;
			goto out;
		}
		caplen = pcap_u32(rhdr + 8, swap);
		origlen = pcap_u32(rhdr + 12, swap);
		if (caplen > SRNIC_TEST_PCAP_MAX_FRAME ||
		    fread(buf, 1, caplen, f) != caplen) {
			rc = -EBADMSG;
			goto out;
		}
		rc = cb(buf, caplen, origlen, arg);
		if (rc < 0)
			goto out;
		n++;
		if (rc > 0)
			break;
	}
	rc = n;
out:
	free(buf);
	fclose(f);
	return rc;
}

struct rte_mbuf *
srnic_test_mbuf_from(struct rte_mempool *mp, const uint8_t *frame, uint32_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	char *d;

	if (m == NULL)
		return NULL;
	if (len > UINT16_MAX || (d = rte_pktmbuf_append(m, (uint16_t)len)) == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	memcpy(d, frame, len);
	return m;
}

struct rte_mbuf *
srnic_test_mbuf_chain_from(struct rte_mempool *mp, const uint8_t *frame, uint32_t len,
			   const uint32_t *seg_lens, unsigned int n)
{
	struct rte_mbuf *head = NULL, *seg;
	uint32_t off = 0, sl;
	unsigned int i;

	for (i = 0; i <= n; i++) {
		if (i < n) {
			sl = seg_lens[i];
			if (sl > len - off)
				goto fail;
		} else {
			sl = len - off;
			if (sl == 0 && head != NULL)
				break;
		}
		seg = srnic_test_mbuf_from(mp, frame + off, sl);
		if (seg == NULL)
			goto fail;
		if (head == NULL) {
			head = seg;
		} else if (rte_pktmbuf_chain(head, seg) != 0) {
			rte_pktmbuf_free(seg);
			goto fail;
		}
		off += sl;
	}
	return head;
fail:
	rte_pktmbuf_free(head);
	return NULL;
}

static void
test_ext_free_noop(void *addr, void *opaque)
{
	RTE_SET_USED(addr);
	RTE_SET_USED(opaque);
}

void
srnic_test_ext_shinfo_init(struct rte_mbuf_ext_shared_info *shinfo)
{
	memset(shinfo, 0, sizeof(*shinfo));
	shinfo->free_cb = test_ext_free_noop;
	shinfo->fcb_opaque = NULL;
	rte_mbuf_ext_refcnt_set(shinfo, 1);
}

struct rte_mbuf *
srnic_test_mbuf_ext_room(struct rte_mempool *mp, void *buf, uint16_t buf_len, uint16_t data_len,
			 struct rte_mbuf_ext_shared_info *shinfo)
{
	struct rte_mbuf *m;
	rte_iova_t iova;

	if (data_len > buf_len)
		return NULL;
	m = rte_pktmbuf_alloc(mp);
	if (m == NULL)
		return NULL;
	iova = rte_mem_virt2iova(buf);
	if (iova == RTE_BAD_IOVA)
		iova = (rte_iova_t)(uintptr_t)buf;
	rte_mbuf_ext_refcnt_update(shinfo, 1);
	rte_pktmbuf_attach_extbuf(m, buf, iova, buf_len, shinfo);
	m->data_len = data_len;
	m->pkt_len = data_len;
	return m;
}

struct rte_mbuf *
srnic_test_mbuf_ext(struct rte_mempool *mp, void *buf, uint16_t len,
		    struct rte_mbuf_ext_shared_info *shinfo)
{
	return srnic_test_mbuf_ext_room(mp, buf, len, len, shinfo);
}

void
srnic_test_mbuf_flatten(const struct rte_mbuf *m, uint8_t *dst)
{
	for (; m != NULL; m = m->next) {
		memcpy(dst, rte_pktmbuf_mtod(m, const uint8_t *), m->data_len);
		dst += m->data_len;
	}
}

FILE *
srnic_test_pcap_create(const char *path)
{
	uint16_t ver[2] = { 2, 4 }; /* version_major, version_minor */
	uint32_t ghdr[6] = {
		PCAP_MAGIC_US,
		0,               /* the version, filled below */
		0,               /* thiszone */
		0,               /* sigfigs */
		SRNIC_TEST_PCAP_MAX_FRAME,
		PCAP_LINKTYPE_ETHERNET,
	};
	FILE *f;

	memcpy(&ghdr[1], ver, sizeof(ver));
	f = fopen(path, "wb");
	if (f == NULL)
		return NULL;
	if (fwrite(ghdr, 1, PCAP_GHDR_LEN, f) != PCAP_GHDR_LEN) {
		int e = errno;

		fclose(f);
		errno = e != 0 ? e : EIO;
		return NULL;
	}
	return f;
}

int
srnic_test_pcap_write(FILE *f, const struct rte_mbuf *m)
{
	const struct rte_mbuf *s;
	struct timeval tv;
	uint32_t rhdr[4];

	gettimeofday(&tv, NULL);
	rhdr[0] = (uint32_t)tv.tv_sec;
	rhdr[1] = (uint32_t)tv.tv_usec;
	rhdr[2] = rte_pktmbuf_pkt_len(m);
	rhdr[3] = rte_pktmbuf_pkt_len(m);
	if (fwrite(rhdr, 1, sizeof(rhdr), f) != sizeof(rhdr))
		return -EIO;
	for (s = m; s != NULL; s = s->next) {
		if (s->data_len != 0 &&
		    fwrite(rte_pktmbuf_mtod(s, const void *), 1, s->data_len, f) != s->data_len)
			return -EIO;
	}
	return 0;
}
