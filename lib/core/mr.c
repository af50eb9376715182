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

/* The port's device DMAs from application memory only once mapped
 * (IOMMU/VFIO); virtual PMDs answer ENOTSUP, which is fine. */
static void
mr_dma_map(struct srnic_mr *mr, bool map)
{
	struct rte_eth_dev_info info;
	int rc;

	if (rte_eth_dev_info_get(mr->port_id, &info) != 0 || info.device == NULL)
		return;
	rc = map ? rte_dev_dma_map(info.device, mr->addr, mr->iova, mr->length)
		 : rte_dev_dma_unmap(info.device, mr->addr, mr->iova, mr->length);
	if (rc != 0 && rte_errno != ENOTSUP)
		SRNIC_LOG(DEBUG, "MR %#x: DMA %smap: %s", mr->key, map ? "" : "un",
			  rte_strerror(rte_errno));
}

/* The last reference may go after the device was destroyed (an mbuf over
 * the memory still on a ring): nothing here reads mr->dev. */
static void
mr_final(struct srnic_mr *mr)
{
	if (mr->extmem) {
		mr_dma_map(mr, false);
		rte_extmem_unregister(mr->addr, mr->length);
	}
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
 * (srnic_pkt_attach() splits a piece at a discontinuity). -EFAULT for a
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

	mr->extmem = 0;
	mr->iova = RTE_BAD_IOVA;
	if (mr->length == 0)
		return 0;
	msl = rte_mem_virt2memseg_list(mr->addr);
	if (msl != NULL)
		return mr_iova_dpdk(mr, msl);
	if (rte_eal_iova_mode() != RTE_IOVA_VA) {
		/* IOVA-PA: application memory has no IOVA a NIC could DMA
		 * from (its pages are neither pinned nor known to DPDK). */
		SRNIC_LOG(ERR, "reg_mr %p: IOVA-PA mode needs DPDK memory (rte_malloc, or "
			  "rte_extmem_register() with IOVAs) or --iova-mode=va", mr->addr);
		return -EFAULT;
	}
	/* Application memory: make it known to DPDK so PMDs that DMA can map
	 * it (rte_dev_dma_map); virtual PMDs need nothing. */
	if (((uintptr_t)mr->addr % pg) == 0 && (mr->length % pg) == 0 &&
	    rte_extmem_register(mr->addr, mr->length, NULL, 0, pg) == 0)
		mr->extmem = 1;
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

struct srnic_mr *
srnic_reg_mr_cb(struct srnic_pd *pd, void *addr, size_t length, int access,
		srnic_mr_release_cb release, void *arg)
{
	struct srnic_dev *dev;
	struct srnic_mr *mr;
	uint32_t i, idx = 0;
	int rc;

	/* verbs: remote write or atomic need local write (IBTA 10.6.3.1) */
	if (pd == NULL || (addr == NULL && length != 0) ||
	    ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & IBV_ACCESS_LOCAL_WRITE))) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = pd->dev;
	mr = rte_zmalloc("srnic_mr", sizeof(*mr), RTE_CACHE_LINE_SIZE);
	if (mr == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	mr->dev = dev;
	mr->port_id = dev->port_id; /* mr_final's, which may outlive dev */
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
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

	rte_spinlock_lock(&dev->lock);
	for (i = 0; i < SRNIC_MAX_MR - 1; i++) {
		idx = 1 + (dev->mr_next + i) % (SRNIC_MAX_MR - 1); /* index 0 unused */
		if (dev->mr_tbl[idx] == NULL)
			break;
	}
	if (i == SRNIC_MAX_MR - 1) {
		rte_spinlock_unlock(&dev->lock);
		if (mr->extmem)
			rte_extmem_unregister(addr, length);
		rte_free(mr->iova_pg);
		rte_free(mr);
		rte_errno = ENOSPC;
		return NULL;
	}
	if (mr->extmem)
		mr_dma_map(mr, true);
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
srnic_reg_mr(struct srnic_pd *pd, void *addr, size_t length, int access)
{
	return srnic_reg_mr_cb(pd, addr, length, access, NULL, NULL);
}

/* Unpublish the key and wait out the engines; returns the references the
 * registration and the engines' prepaid credits hold (to drop). */
static unsigned int
mr_unpublish(struct srnic_mr *mr)
{
	struct srnic_dev *dev = mr->dev;
	unsigned int i, back = 0;

	rte_spinlock_lock(&dev->lock);
	__atomic_store_n(&dev->mr_tbl[SRNIC_MR_KEY_INDEX(mr->key)], NULL, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	srnic_dev_quiesce(dev);
	mr->unpublished = 1;
	/* No engine finds the key now: give back what they prepaid, then the
	 * registration's own reference. */
	for (i = 0; i < SRNIC_MAX_ENGINES_PER_DEV; i++) {
		back += mr->zc_credit[i].n;
		mr->zc_credit[i].n = 0;
	}
	return back + 1;
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
	refs = mr->unpublished ? 1 : mr_unpublish(mr);
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
	if (!mr->unpublished)
		rte_mbuf_ext_refcnt_update(&mr->shinfo, (int16_t)-(int)(mr_unpublish(mr) - 1));
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
