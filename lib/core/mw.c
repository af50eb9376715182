/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows: allocation and freeing (the control path). Binding and
 * invalidation are work requests the engines execute (lib/engine/mw.c);
 * the responders resolve a window's key there too. A window's key index is
 * SRNIC_MW_KEY_BASE + its slot, above every MR's, so a key names one or the
 * other by its index (rnic.h).
 */
#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "rnic.h"

struct srnic_mw *
srnic_alloc_mw(struct srnic_pd *pd, enum ibv_mw_type type)
{
	struct srnic_dev *dev;
	struct srnic_mw *mw;
	uint32_t i, slot = 0;

	if (pd == NULL || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = pd->dev;
	mw = rte_zmalloc("srnic_mw", sizeof(*mw), RTE_CACHE_LINE_SIZE);
	if (mw == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	mw->dev = dev;
	mw->pd = pd;
	mw->type = (uint8_t)type;
	/* rxe: a type 1 window is VALID with nothing bound (length 0 grants
	 * nothing), a type 2 one FREE until a bind */
	mw->state = type == IBV_MW_TYPE_1 ? SRNIC_MW_VALID : SRNIC_MW_FREE;
	rte_spinlock_lock(&dev->lock);
	for (i = 0; i < SRNIC_MAX_MW; i++) {
		slot = (dev->mw_next + i) % SRNIC_MAX_MW;
		if (dev->mw_tbl[slot] == NULL)
			break;
	}
	if (i == SRNIC_MAX_MW) {
		rte_spinlock_unlock(&dev->lock);
		rte_free(mw);
		rte_errno = ENOSPC;
		return NULL;
	}
	dev->mw_next = slot + 1;
	mw->slot = slot;
	/* a random first key byte, as an MR's: a peer cannot guess it */
	mw->rkey = (SRNIC_MW_KEY_BASE + slot) << 8 | (uint8_t)rte_rand();
	mw->ibv.rkey = mw->rkey;
	mw->ibv.type = type;
	__atomic_store_n(&dev->mw_tbl[slot], mw, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	atomic_fetch_add(&pd->refs, 1);
	atomic_fetch_add(&dev->nb_mw, 1);
	return mw;
}

int
srnic_dealloc_mw(struct srnic_mw *mw)
{
	struct srnic_dev *dev;

	if (mw == NULL)
		return -EINVAL;
	dev = mw->dev;
	if (srnic_dev_in_poll(dev))
		return -EDEADLK; /* the quiesce would wait for our own poll */
	rte_spinlock_lock(&dev->lock);
	__atomic_store_n(&dev->mw_tbl[mw->slot], NULL, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	/* No engine finds the window now, nor is inside an access through
	 * it: its binding is ours to drop. A bind still posted for it finds
	 * the slot empty (or another window) and fails. */
	srnic_dev_quiesce(dev);
	if (mw->mr != NULL)
		atomic_fetch_sub(&mw->mr->mw_refs, 1);
	atomic_fetch_sub(&mw->pd->refs, 1);
	atomic_fetch_sub(&dev->nb_mw, 1);
	rte_free(mw);
	return 0;
}

uint32_t
srnic_mw_rkey(const struct srnic_mw *mw)
{
	return __atomic_load_n(&mw->rkey, __ATOMIC_ACQUIRE);
}

struct ibv_mw *
srnic_mw_ibv(struct srnic_mw *mw)
{
	return &mw->ibv;
}

struct srnic_mw *
srnic_mw_from_ibv(struct ibv_mw *mw)
{
	return mw != NULL ? container_of(mw, struct srnic_mw, ibv) : NULL;
}
