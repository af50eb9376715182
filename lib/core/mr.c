/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions. A key is index << 8 | a key byte: random per
 * registration and never the index's previous one, so a stale key fails the
 * lookup and a peer cannot guess the next one.
 * Engines look keys up without locks in dev->mr_tbl; deregistration clears
 * the entry and waits for every engine to leave its current poll, so no
 * access starts after srnic_dereg_mr() returns. Zero-copy mbufs hold a
 * reference on mr->shinfo; the MR (and the application's release callback)
 * goes when the last one is freed.
 */
/* rte_dev_dma_map() is still experimental in DPDK 22.11. */
#define ALLOW_EXPERIMENTAL_API

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_pause.h>

#include <rte_random.h>

#include "rnic.h"

/*
 * Application memory a port may DMA from: made DPDK's (rte_extmem_register)
 * and mapped for the port's device (rte_dev_dma_map: the IOMMU under VFIO;
 * virtual PMDs answer 0 or ENOTSUP). Page-rounded chunks, each registered
 * once and counted by the MRs over it, and mapped once per port and counted
 * likewise, so MRs that share pages (two malloc buffers on one page, an MR
 * inside another) share a mapping that goes with the last of them. Every
 * chunk takes one of DPDK's RTE_MAX_MEMSEG_LISTS memseg lists, which its
 * own memory uses too: an MR whose pages cannot all be registered and
 * mapped is not DMA-able (no_dma), and its zero-copy pieces are copied
 * (counter tx_unmapped_copy). Control path only, under mr_chunk_lock.
 */
struct mr_chunk {
	uintptr_t va;               /* page-aligned; 0: a free entry */
	size_t len;                 /* whole pages */
	uint32_t refs;              /* MRs over it */
	uint32_t map_refs[RTE_MAX_ETHPORTS]; /* ... of them per port (mapped while > 0) */
};

static struct mr_chunk mr_chunks[RTE_MAX_MEMSEG_LISTS];
static pthread_mutex_t mr_chunk_lock = PTHREAD_MUTEX_INITIALIZER;
/* said that DPDK's memseg lists are all taken (once until one is free again) */
static bool mr_full_logged;

static int
mr_msl_count(const struct rte_memseg_list *msl, void *arg)
{
	RTE_SET_USED(msl);
	(*(unsigned int *)arg)++;
	return 0;
}

/* Is a memseg list free? rte_extmem_register() logs an EAL error each time
 * it finds none (1,024 MRs printed it 897 times): asked first. */
static bool
mr_msl_free(void)
{
	unsigned int used = 0;

	rte_memseg_list_walk(mr_msl_count, &used);
	return used < RTE_MAX_MEMSEG_LISTS;
}

static struct rte_device *
mr_port_device(uint16_t port_id)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port_id, &info) != 0)
		return NULL;
	return info.device;
}

static void
mr_chunk_put(uint16_t c, uint16_t port_id, bool mapped)
{
	struct mr_chunk *k = &mr_chunks[c];

	if (mapped && --k->map_refs[port_id] == 0) {
		struct rte_device *d = mr_port_device(port_id);

		if (d != NULL && rte_dev_dma_unmap(d, (void *)k->va, k->va, k->len) != 0 &&
		    rte_errno != ENOTSUP)
			SRNIC_LOG(DEBUG, "chunk %#lx+%zu: DMA unmap: %s", (unsigned long)k->va,
				  k->len, rte_strerror(rte_errno));
	}
	if (--k->refs == 0) {
		rte_extmem_unregister((void *)k->va, k->len);
		memset(k, 0, sizeof(*k));
	}
}

/* A new chunk over [va, va + len): its index, or -1 (no entry, no memseg list). */
static int
mr_chunk_new(uintptr_t va, size_t len, size_t pg)
{
	int c;

	for (c = 0; c < RTE_MAX_MEMSEG_LISTS && mr_chunks[c].va != 0; c++)
		;
	if (c == RTE_MAX_MEMSEG_LISTS || !mr_msl_free()) {
		if (!mr_full_logged)
			SRNIC_LOG(WARNING, "reg_mr: DPDK has no memseg list left for application "
				  "memory (RTE_MAX_MEMSEG_LISTS %d): zero-copy sends from such MRs "
				  "are copied (counter tx_unmapped_copy); fewer, larger MRs avoid it",
				  RTE_MAX_MEMSEG_LISTS);
		mr_full_logged = true;
		return -1;
	}
	mr_full_logged = false;
	if (rte_extmem_register((void *)va, len, NULL, 0, pg) != 0) {
		SRNIC_LOG(WARNING, "reg_mr: rte_extmem_register %#lx+%zu: %s: the MR's zero-copy "
			  "sends are copied (counter tx_unmapped_copy)", (unsigned long)va, len,
			  rte_strerror(rte_errno));
		return -1;
	}
	mr_chunks[c].va = va;
	mr_chunks[c].len = len;
	return c;
}

/* The chunk holding va, else -1. */
static int
mr_chunk_find(uintptr_t va)
{
	int c;

	for (c = 0; c < RTE_MAX_MEMSEG_LISTS; c++)
		if (mr_chunks[c].va != 0 && va - mr_chunks[c].va < mr_chunks[c].len)
			return c;
	return -1;
}

/* Register and map the pages of mr (chunks already there, new ones for the
 * gaps between them); 0, or -1 with nothing held. */
static int
mr_chunks_get(struct srnic_mr *mr, size_t pg)
{
	uintptr_t cur = RTE_ALIGN_FLOOR((uintptr_t)mr->addr, pg);
	uintptr_t end = RTE_ALIGN_CEIL((uintptr_t)mr->addr + mr->length, pg);
	struct rte_device *d = mr_port_device(mr->port_id);
	int c, i;

	while (cur < end) {
		struct mr_chunk *k;

		if (mr->nb_chunks == SRNIC_MR_MAX_CHUNKS)
			goto fail;
		c = mr_chunk_find(cur);
		if (c < 0) {
			uintptr_t gap_end = end;

			/* up to the next chunk, which stays as it is */
			for (i = 0; i < RTE_MAX_MEMSEG_LISTS; i++)
				if (mr_chunks[i].va > cur && mr_chunks[i].va < gap_end)
					gap_end = mr_chunks[i].va;
			c = mr_chunk_new(cur, gap_end - cur, pg);
			if (c < 0)
				goto fail;
		}
		k = &mr_chunks[c];
		k->refs++;
		if (k->map_refs[mr->port_id]++ == 0 && d != NULL &&
		    rte_dev_dma_map(d, (void *)k->va, k->va, k->len) != 0 && rte_errno != ENOTSUP) {
			SRNIC_LOG(WARNING, "reg_mr %p: DMA map of %#lx+%zu: %s: its zero-copy sends "
				  "are copied", mr->addr, (unsigned long)k->va, k->len,
				  rte_strerror(rte_errno));
			k->map_refs[mr->port_id]--;
			mr_chunk_put((uint16_t)c, mr->port_id, false);
			goto fail;
		}
		mr->chunk[mr->nb_chunks++] = (uint16_t)c;
		cur = k->va + k->len;
	}
	return 0;
fail:
	while (mr->nb_chunks > 0)
		mr_chunk_put(mr->chunk[--mr->nb_chunks], mr->port_id, true);
	return -1;
}

static void
mr_chunks_put(struct srnic_mr *mr)
{
	pthread_mutex_lock(&mr_chunk_lock);
	while (mr->nb_chunks > 0)
		mr_chunk_put(mr->chunk[--mr->nb_chunks], mr->port_id, true);
	pthread_mutex_unlock(&mr_chunk_lock);
}

/* The last reference may go after the device was destroyed (an mbuf over
 * the memory still on a ring): nothing here reads mr->dev. */
static void
mr_final(struct srnic_mr *mr)
{
	mr_chunks_put(mr);
	if (mr->release != NULL)
		mr->release(mr->addr, mr->length, mr->release_arg);
	rte_free(mr->iova_pg);
	rte_free(mr);
}

/* rte_mbuf extbuf free callback: the last mbuf over this MR is gone. */
static void
mr_ext_free(void *addr __rte_unused, void *opaque)
{
	mr_final(opaque);
}

/* IOVA of va in DPDK memory (its memseg's, as rte_malloc_virt2iova());
 * in IOVA-VA mode memory registered without IOVAs is its VA. */
static rte_iova_t
mr_seg_iova(const struct rte_memseg_list *msl, const void *va)
{
	const struct rte_memseg *ms = rte_mem_virt2memseg(va, msl);

	if (ms == NULL || ms->iova == RTE_BAD_IOVA)
		return rte_eal_iova_mode() == RTE_IOVA_VA ? (rte_iova_t)(uintptr_t)va : RTE_BAD_IOVA;
	return ms->iova + (rte_iova_t)((uintptr_t)va - (uintptr_t)ms->addr);
}

/*
 * The IOVA of DPDK memory [addr, addr + len), page by page from its memsegs:
 * in IOVA-PA mode (or memory registered with scattered IOVAs) consecutive
 * pages need not have consecutive IOVAs, and iova + offset would point a
 * NIC's DMA elsewhere. Contiguous: mr->iova alone; else a table per page
 * (eng_pkt_attach() splits a piece at a discontinuity). -EFAULT for a
 * page without an IOVA.
 */
static int
mr_iova_dpdk(struct srnic_mr *mr, const struct rte_memseg_list *msl)
{
	uintptr_t a = (uintptr_t)mr->addr, end = a + mr->length, pg = msl->page_sz, base, va;
	size_t i, n;
	rte_iova_t first = RTE_BAD_IOVA, *t = NULL;
	int pass;

	base = RTE_ALIGN_FLOOR(a, pg);
	n = (end - base + pg - 1) / pg;
	/* pass 0 checks; pass 1, for a region that is not contiguous, fills */
	for (pass = 0; pass < 2; pass++) {
		bool contig = true;

		for (i = 0, va = base; i < n; i++, va += pg) {
			rte_iova_t io;

			if (va < (uintptr_t)msl->base_va || va >= (uintptr_t)msl->base_va + msl->len)
				msl = rte_mem_virt2memseg_list((void *)va);
			if (msl == NULL || msl->page_sz != pg)
				goto fault;
			io = mr_seg_iova(msl, (void *)va);
			if (io == RTE_BAD_IOVA)
				goto fault;
			if (i == 0)
				first = io;
			else if (io != first + (va - base))
				contig = false;
			if (t != NULL)
				t[i] = io;
		}
		mr->iova = first + (a - base);
		if (contig || t != NULL)
			break;
		t = rte_malloc("srnic_mr_iova", n * sizeof(*t), 0);
		if (t == NULL)
			return -ENOMEM;
	}
	mr->iova_pg = t;
	mr->pg_base = base;
	mr->pg_shift = (uint8_t)rte_log2_u64(pg);
	return 0;
fault:
	rte_free(t);
	return -EFAULT;
}

static int
mr_iova(struct srnic_mr *mr)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	const struct rte_memseg_list *msl;
	int own;

	mr->iova = RTE_BAD_IOVA;
	if (mr->length == 0)
		return 0;
	pthread_mutex_lock(&mr_chunk_lock);
	own = mr_chunk_find((uintptr_t)mr->addr);
	pthread_mutex_unlock(&mr_chunk_lock);
	/* DPDK's memory, or memory the application registered itself */
	msl = own < 0 ? rte_mem_virt2memseg_list(mr->addr) : NULL;
	if (msl != NULL)
		return mr_iova_dpdk(mr, msl);
	if (rte_eal_iova_mode() != RTE_IOVA_VA) {
		/* IOVA-PA: application memory has no IOVA a NIC could DMA
		 * from (its pages are neither pinned nor known to DPDK). */
		SRNIC_LOG(ERR, "reg_mr %p: IOVA-PA mode needs DPDK memory (rte_malloc, or "
			  "rte_extmem_register() with IOVAs) or --iova-mode=va", mr->addr);
		return -EFAULT;
	}
	/* Application memory: its IOVA is its VA, once registered and mapped
	 * (page-rounded, shared with the MRs on the same pages); what cannot
	 * be is copied, never DMA'd unmapped. */
	pthread_mutex_lock(&mr_chunk_lock);
	mr->no_dma = mr_chunks_get(mr, pg) != 0;
	pthread_mutex_unlock(&mr_chunk_lock);
	mr->iova = (rte_iova_t)(uintptr_t)mr->addr;
	return 0;
}

/* The key byte of a new registration: random, so that a peer cannot guess
 * an rkey from the last one it saw (a counter made the first rkey 0x101),
 * and never the index's previous byte, so a stale key still fails. */
static uint8_t
mr_key_byte(uint8_t prev)
{
	uint8_t b;

	do
		b = (uint8_t)rte_rand();
	while (b == prev);
	return b;
}

/* A registration's object, unpublished (no key yet), its one reference the
 * registration's; NULL with rte_errno. */
static struct srnic_mr *
mr_new(struct srnic_pd *pd, void *addr, size_t length, uint64_t va, int access,
       srnic_mr_release_cb release, void *arg)
{
	struct srnic_mr *mr;
	int rc;

	/* srnic's memory is DRAM: no persistence to offer (ib_core refuses
	 * the flag on a device without IB_DEVICE_FLUSH_PERSISTENT) */
	if (access & SRNIC_ACCESS_FLUSH_PERSISTENT) {
		rte_errno = EOPNOTSUPP;
		return NULL;
	}
	mr = rte_zmalloc("srnic_mr", sizeof(*mr), RTE_CACHE_LINE_SIZE);
	if (mr == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	mr->dev = pd->dev;
	mr->port_id = pd->dev->port_id; /* mr_final's, which may outlive dev */
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->va = va;
	mr->va_off = (uint64_t)(uintptr_t)addr - va;
	mr->access = access;
	mr->release = release;
	mr->release_arg = arg;
	rc = mr_iova(mr);
	if (rc != 0) {
		rte_free(mr);
		rte_errno = -rc;
		return NULL;
	}
	mr->shinfo.free_cb = mr_ext_free;
	mr->shinfo.fcb_opaque = mr;
	rte_mbuf_ext_refcnt_set(&mr->shinfo, 1);
	return mr;
}

struct srnic_mr *
srnic_reg_mr_iova(struct srnic_pd *pd, void *addr, size_t length, uint64_t iova, int access,
		  srnic_mr_release_cb release, void *arg)
{
	struct srnic_dev *dev;
	struct srnic_mr *mr;
	uint32_t i, idx = 0;

	/* verbs: remote write or atomic need local write (IBTA 10.6.3.1);
	 * an IOVA range that wraps could never be checked (ib_core: EINVAL) */
	if (pd == NULL || (addr == NULL && length != 0) || iova + length < iova ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = pd->dev;
	mr = mr_new(pd, addr, length, iova, access, release, arg);
	if (mr == NULL)
		return NULL;

	rte_spinlock_lock(&dev->lock);
	for (i = 0; i < SRNIC_MAX_MR - 1; i++) {
		idx = 1 + (dev->mr_next + i) % (SRNIC_MAX_MR - 1); /* index 0 unused */
		if (dev->mr_tbl[idx] == NULL)
			break;
	}
	if (i == SRNIC_MAX_MR - 1) {
		rte_spinlock_unlock(&dev->lock);
		mr_chunks_put(mr);
		rte_free(mr->iova_pg);
		rte_free(mr);
		rte_errno = ENOSPC;
		return NULL;
	}
	dev->mr_next = idx;
	dev->mr_gen[idx] = mr_key_byte(dev->mr_gen[idx]);
	mr->key = idx << 8 | dev->mr_gen[idx];
	__atomic_store_n(&dev->mr_tbl[idx], mr, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	atomic_fetch_add(&pd->refs, 1);
	atomic_fetch_add(&dev->nb_mr, 1);
	return mr;
}

struct srnic_mr *
srnic_reg_mr_cb(struct srnic_pd *pd, void *addr, size_t length, int access,
		srnic_mr_release_cb release, void *arg)
{
	return srnic_reg_mr_iova(pd, addr, length, (uintptr_t)addr, access, release, arg);
}

struct srnic_mr *
srnic_reg_mr(struct srnic_pd *pd, void *addr, size_t length, int access)
{
	return srnic_reg_mr_cb(pd, addr, length, access, NULL, NULL);
}

/* Unpublish the key and wait out the engines; *refs: the references the
 * registration and the engines' prepaid credits hold (to drop). -EINVAL,
 * the key published again and nothing else changed, while a memory window
 * is bound to the MR (rxe refuses it too): an engine's bind takes its
 * reference and then looks the key up again, so once the engines are
 * quiesced a bind either shows in mw_refs or failed. */
static int
mr_unpublish(struct srnic_mr *mr, unsigned int *refs)
{
	struct srnic_dev *dev = mr->dev;
	struct srnic_mr **slot = &dev->mr_tbl[SRNIC_MR_KEY_INDEX(mr->key)];
	unsigned int i, back = 0;

	if (atomic_load(&mr->mw_refs) != 0)
		return -EINVAL;
	rte_spinlock_lock(&dev->lock);
	__atomic_store_n(slot, NULL, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	srnic_dev_quiesce(dev);
	if (atomic_load(&mr->mw_refs) != 0) {
		__atomic_store_n(slot, mr, __ATOMIC_RELEASE);
		return -EINVAL;
	}
	mr->unpublished = 1;
	/* No engine finds the key now: give back what they prepaid, then the
	 * registration's own reference. */
	for (i = 0; i < SRNIC_MAX_ENGINES_PER_DEV; i++) {
		back += mr->zc_credit[i].n;
		mr->zc_credit[i].n = 0;
	}
	*refs = back + 1;
	return 0;
}

/* The MR is the PD's and the device's no more (it may outlive both). */
static void
mr_unaccount(struct srnic_mr *mr)
{
	atomic_fetch_sub(&mr->pd->refs, 1);
	atomic_fetch_sub(&mr->dev->nb_mr, 1);
}

int
srnic_dereg_mr(struct srnic_mr *mr)
{
	unsigned int refs;

	if (mr == NULL)
		return -EINVAL;
	if (srnic_dev_in_poll(mr->dev))
		return -EDEADLK; /* the quiesce would wait for our own poll */
	/* after a srnic_dereg_mr_wait() that said -EBUSY: its one reference */
	if (mr->unpublished)
		refs = 1;
	else if (mr_unpublish(mr, &refs) != 0)
		return -EINVAL; /* windows bound */
	mr_unaccount(mr);
	if (rte_mbuf_ext_refcnt_update(&mr->shinfo, (int16_t)-(int)refs) == 0)
		mr_final(mr);
	return 0;
}

int
srnic_dereg_mr_wait(struct srnic_mr *mr, uint64_t timeout_us)
{
	uint64_t deadline;

	if (mr == NULL)
		return -EINVAL;
	if (srnic_dev_in_poll(mr->dev))
		return -EDEADLK;
	/* Keep one reference of our own while we wait: with the key gone and
	 * the credits back, nothing takes a new one, so the count only falls
	 * as in-flight mbufs are freed (by the PMD after TX, by a peer's RX
	 * on a ring pair: other threads' polls). At 1 it is ours alone. A
	 * call after an -EBUSY one holds that reference already. */
	if (!mr->unpublished) {
		unsigned int refs;

		if (mr_unpublish(mr, &refs) != 0)
			return -EINVAL; /* windows bound: the MR stays registered */
		rte_mbuf_ext_refcnt_update(&mr->shinfo, (int16_t)-(int)(refs - 1));
	}
	deadline = rte_get_timer_cycles() + timeout_us * (rte_get_timer_hz() / 1000000);
	while (rte_mbuf_ext_refcnt_read(&mr->shinfo) > 1 && rte_get_timer_cycles() < deadline)
		rte_pause();
	if (rte_mbuf_ext_refcnt_read(&mr->shinfo) > 1)
		return -EBUSY;  /* still the caller's, its memory still in use */
	mr_unaccount(mr);
	rte_mbuf_ext_refcnt_update(&mr->shinfo, -1);
	mr_final(mr);
	return 0;
}

/* The new object of a reregistration, taken back before anything saw it. */
static void
mr_discard(struct srnic_mr *mr)
{
	mr_chunks_put(mr);
	rte_free(mr->iova_pg);
	rte_free(mr);
}

/*
 * Reregistration (ibv_rereg_mr(3)) builds a new object and puts it in the
 * old one's table slot: the engines look keys up without locks and
 * zero-copy mbufs in flight hold the old object, its range and its IOMMU
 * mappings, which a change in place would pull from under them. Once the
 * engines are quiesced no access uses the old object; it is left
 * unpublished with one reference of the caller's, as srnic_dereg_mr_wait()
 * leaves an MR it answered -EBUSY for, for the caller to deregister.
 * A new translation gets a new key byte (the old rkey named memory the
 * peer may no longer reach: a stale key fails as after deregistration);
 * a new PD or new access keep the keys, as rxe does.
 */
struct srnic_mr *
srnic_rereg_mr(struct srnic_mr *mr, int flags, struct srnic_pd *pd, void *addr, size_t length,
	       int access)
{
	return srnic_rereg_mr_iova(mr, flags, pd, addr, length, (uintptr_t)addr, access);
}

struct srnic_mr *
srnic_rereg_mr_iova(struct srnic_mr *mr, int flags, struct srnic_pd *pd, void *addr,
		    size_t length, uint64_t iova, int access)
{
	struct srnic_dev *dev;
	struct srnic_mr *nmr, **slot;
	bool xlate = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	unsigned int i, back = 0;
	uint8_t old_gen;

	if (mr == NULL || mr->unpublished || flags == 0 ||
	    (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) != 0 ||
	    (xlate && (addr == NULL || length == 0 || iova + length < iova)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (pd == NULL || pd->dev != mr->dev))) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = mr->dev;
	if (srnic_dev_in_poll(dev)) {
		rte_errno = EDEADLK; /* the quiesce would wait for our own poll */
		return NULL;
	}
	if (!(flags & IBV_REREG_MR_CHANGE_PD))
		pd = mr->pd;
	if (!xlate) {
		addr = mr->addr;
		length = mr->length;
	}
	if (!(flags & IBV_REREG_MR_CHANGE_ACCESS))
		access = mr->access;
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		rte_errno = EINVAL; /* IBTA 10.6.3.1, as srnic_reg_mr() */
		return NULL;
	}
	/* refused as deregistration is (rxe: EINVAL there): the windows bound
	 * to it would grant memory, a PD or rights the MR no longer has */
	if (atomic_load(&mr->mw_refs) != 0) {
		rte_errno = EBUSY;
		return NULL;
	}
	/* the same memory: its release callback goes with the new object */
	/* a new translation is at iova (rdma-core's hca_va is addr: the
	 * caller's), else the registration keeps its IOVA */
	nmr = mr_new(pd, addr, length, xlate ? iova : mr->va, access,
		     xlate ? NULL : mr->release, xlate ? NULL : mr->release_arg);
	if (nmr == NULL)
		return NULL;
	slot = &dev->mr_tbl[SRNIC_MR_KEY_INDEX(mr->key)];
	rte_spinlock_lock(&dev->lock);
	old_gen = dev->mr_gen[SRNIC_MR_KEY_INDEX(mr->key)];
	if (xlate)
		dev->mr_gen[SRNIC_MR_KEY_INDEX(mr->key)] = mr_key_byte(old_gen);
	nmr->key = SRNIC_MR_KEY_INDEX(mr->key) << 8 | dev->mr_gen[SRNIC_MR_KEY_INDEX(mr->key)];
	__atomic_store_n(slot, nmr, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	srnic_dev_quiesce(dev);
	/* a bind that raced us took its reference before looking the key up
	 * again (mr_unpublish()): it shows now, or it failed */
	if (atomic_load(&mr->mw_refs) != 0) {
		rte_spinlock_lock(&dev->lock);
		dev->mr_gen[SRNIC_MR_KEY_INDEX(mr->key)] = old_gen;
		__atomic_store_n(slot, mr, __ATOMIC_RELEASE);
		rte_spinlock_unlock(&dev->lock);
		srnic_dev_quiesce(dev);
		/* a bind to the new object at the same time (the same key)
		 * keeps it: the windows point at it */
		if (atomic_load(&nmr->mw_refs) == 0)
			mr_discard(nmr);
		else
			SRNIC_LOG(WARNING, "rereg_mr %#x: memory windows bound while it ran: "
				  "refused, the new registration kept for them", mr->key);
		rte_errno = EBUSY;
		return NULL;
	}
	if (!xlate) {
		mr->release = NULL;
		mr->release_arg = NULL;
	}
	atomic_fetch_add(&pd->refs, 1);
	atomic_fetch_add(&dev->nb_mr, 1);
	/* The old object: unpublished as srnic_dereg_mr_wait() leaves it,
	 * the engines' prepaid references back, the caller's one kept. */
	mr->unpublished = 1;
	for (i = 0; i < SRNIC_MAX_ENGINES_PER_DEV; i++) {
		back += mr->zc_credit[i].n;
		mr->zc_credit[i].n = 0;
	}
	if (back != 0)
		rte_mbuf_ext_refcnt_update(&mr->shinfo, (int16_t)-(int)back);
	return nmr;
}

uint32_t
srnic_mr_lkey(const struct srnic_mr *mr)
{
	return mr->key;
}

uint32_t
srnic_mr_rkey(const struct srnic_mr *mr)
{
	return mr->key;
}
