/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Classic pcap files (not pcapng): a 24-byte file header, then per frame a
 * 16-byte record header and the bytes. Written in host byte order; readers
 * tell the order and the nanosecond resolution from the magic.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_spinlock.h>

#include "srnic_link.h"

#define PCAP_MAGIC_NSEC 0xa1b23c4du
#define PCAP_VERSION_MAJOR 2
#define PCAP_VERSION_MINOR 4
#define PCAP_LINKTYPE_ETHERNET 1
#define PCAP_NS_PER_S 1000000000ull

struct pcap_file_hdr {
	uint32_t magic;
	uint16_t version_major;
	uint16_t version_minor;
	int32_t thiszone;
	uint32_t sigfigs;
	uint32_t snaplen;
	uint32_t linktype;
};

struct pcap_rec_hdr {
	uint32_t ts_sec;
	uint32_t ts_nsec;
	uint32_t incl_len;
	uint32_t orig_len;
};

struct srnic_pcap {
	rte_spinlock_t lock; /* one record at a time, from any lcore */
	FILE *f;
	int failed;          /* a write failed: the file is truncated */
	uint64_t tsc0;       /* TSC and wall clock read together at open */
	uint64_t ns0;
	uint64_t hz;
	uint32_t snaplen;    /* bytes of a frame kept */
	uint64_t bytes;      /* written so far, the file header included */
};

struct srnic_pcap *
srnic_pcap_open(const char *path)
{
	return srnic_pcap_open_snaplen(path, SRNIC_PCAP_SNAPLEN);
}

struct srnic_pcap *
srnic_pcap_open_snaplen(const char *path, uint32_t snaplen)
{
	const struct pcap_file_hdr h = {
		.magic = PCAP_MAGIC_NSEC,
		.version_major = PCAP_VERSION_MAJOR,
		.version_minor = PCAP_VERSION_MINOR,
		.snaplen = snaplen,
		.linktype = PCAP_LINKTYPE_ETHERNET,
	};
	struct srnic_pcap *p;
	struct timespec ts;
	int err;

	if (path == NULL || snaplen == 0 || snaplen > SRNIC_PCAP_SNAPLEN) {
		rte_errno = EINVAL;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (p == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	rte_spinlock_init(&p->lock);
	p->snaplen = snaplen;
	p->bytes = sizeof(h);
	p->f = fopen(path, "wb");
	if (p->f == NULL) {
		err = errno;
		goto fail;
	}
	if (fwrite(&h, sizeof(h), 1, p->f) != 1) {
		err = errno != 0 ? errno : EIO;
		fclose(p->f);
		goto fail;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	p->tsc0 = rte_rdtsc();
	p->ns0 = (uint64_t)ts.tv_sec * PCAP_NS_PER_S + (uint64_t)ts.tv_nsec;
	p->hz = rte_get_tsc_hz();
	if (p->hz == 0)
		p->hz = PCAP_NS_PER_S;
	return p;

fail:
	free(p);
	rte_errno = err;
	return NULL;
}

uint64_t
srnic_pcap_tsc_to_ns(const struct srnic_pcap *p, uint64_t tsc)
{
	uint64_t d, ns;

	/* Split so that d * 1e9 cannot overflow (d may span days). */
	if (tsc >= p->tsc0) {
		d = tsc - p->tsc0;
		ns = d / p->hz * PCAP_NS_PER_S + d % p->hz * PCAP_NS_PER_S / p->hz;
		return p->ns0 + ns;
	}
	d = p->tsc0 - tsc;
	ns = d / p->hz * PCAP_NS_PER_S + d % p->hz * PCAP_NS_PER_S / p->hz;
	return ns < p->ns0 ? p->ns0 - ns : 0;
}

int
srnic_pcap_write(struct srnic_pcap *p, const struct rte_mbuf *m,
		 uint64_t ns_timestamp)
{
	struct pcap_rec_hdr r;
	const struct rte_mbuf *seg;
	uint32_t left, n;
	int rc = 0;

	if (p == NULL || m == NULL)
		return -EINVAL;
	r.ts_sec = (uint32_t)(ns_timestamp / PCAP_NS_PER_S);
	r.ts_nsec = (uint32_t)(ns_timestamp % PCAP_NS_PER_S);
	r.orig_len = rte_pktmbuf_pkt_len(m);
	r.incl_len = RTE_MIN(r.orig_len, p->snaplen);

	rte_spinlock_lock(&p->lock);
	if (p->failed || fwrite(&r, sizeof(r), 1, p->f) != 1)
		goto fail;
	left = r.incl_len;
	for (seg = m; seg != NULL && left > 0; seg = seg->next) {
		n = RTE_MIN(left, (uint32_t)seg->data_len);
		if (n > 0 &&
		    fwrite(rte_pktmbuf_mtod(seg, const uint8_t *), n, 1, p->f) != 1)
			goto fail;
		left -= n;
	}
	/* pkt_len larger than the chain holds: keep the record well formed. */
	for (; left > 0; left--)
		if (fputc(0, p->f) == EOF)
			goto fail;
	__atomic_store_n(&p->bytes, p->bytes + sizeof(r) + r.incl_len, __ATOMIC_RELAXED);
	rte_spinlock_unlock(&p->lock);
	return 0;

fail:
	p->failed = 1;
	rc = -EIO;
	rte_spinlock_unlock(&p->lock);
	return rc;
}

uint64_t
srnic_pcap_bytes(const struct srnic_pcap *p)
{
	return p != NULL ? __atomic_load_n(&p->bytes, __ATOMIC_RELAXED) : 0;
}

int
srnic_pcap_close(struct srnic_pcap *p)
{
	int rc = 0;

	if (p == NULL)
		return 0;
	if (fclose(p->f) != 0 || p->failed)
		rc = -EIO;
	free(p);
	return rc;
}
