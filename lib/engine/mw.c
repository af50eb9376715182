/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows in the engine (IBTA 10.6.7; behaviour as rxe's): binding
 * (a BIND_MW WQE, which ibv_bind_mw() also posts for a type 1 window),
 * invalidation (a LOCAL_INV WQE, or a received SEND with Invalidate) and
 * the responder's check of a window's R_Key. Windows live in dev->mw_tbl
 * (lib/core/mw.c allocates and frees them); their binding is guarded by a
 * sequence count (rnic.h): written by the engine executing the work
 * request, read without a lock by every engine's responder.
 */
#include "eng_internal.h"

/* The access rights a window can grant (IBTA 10.6.7.2.2). */
#define MW_ACCESS (IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

/* The live window a key's index names, or NULL. Engine context: a window
 * found here is not freed before this poll ends (srnic_dealloc_mw()
 * quiesces). */
static struct srnic_mw *
mw_lookup(const struct srnic_dev *dev, uint32_t key)
{
	uint32_t slot = SRNIC_MR_KEY_INDEX(key) - SRNIC_MW_KEY_BASE;

	if (slot >= SRNIC_MAX_MW)
		return NULL;
	return __atomic_load_n(&dev->mw_tbl[slot], __ATOMIC_ACQUIRE);
}

/* Take the binding for writing: false if another engine holds it (the
 * work request then fails, as any bind that loses a race would). */
static bool
mw_write_begin(struct srnic_mw *mw, uint32_t *seq)
{
	uint32_t s = atomic_load_explicit(&mw->seq, memory_order_relaxed);

	if ((s & 1) || !atomic_compare_exchange_strong_explicit(&mw->seq, &s, s + 1,
								 memory_order_acquire,
								 memory_order_relaxed))
		return false;
	/* the odd count is seen before any field changes */
	atomic_thread_fence(memory_order_release);
	*seq = s;
	return true;
}

static void
mw_write_end(struct srnic_mw *mw, uint32_t seq)
{
	atomic_store_explicit(&mw->seq, seq + 2, memory_order_release);
}

/* Is qp the one a type 2B window was bound through? Its QPN and incarnation
 * (srnic_dev_next_gen(), never 0 for a QP), not its address: a QP
 * destroyed and another allocated in its place is another. */
static inline bool
mw_bound_to(uint32_t qpn, uint32_t gen, const struct srnic_qp *qp)
{
	return qpn == qp->qpn && gen == qp->gen;
}

enum srnic_key_err
eng_mw_check(const struct srnic_qp *qp, uint32_t key, int access, uint64_t va, uint64_t len,
	     struct srnic_mr **out)
{
	struct srnic_mw *mw = mw_lookup(qp->dev, key);
	uint32_t bound_qpn, bound_gen;
	enum srnic_key_err ke = SRNIC_KEY_BAD;
	uint64_t addr, length;
	struct srnic_mr *mr;
	uint32_t seq, rkey;
	uint8_t state;
	int acc;

	if (mw == NULL)
		goto out;
	seq = atomic_load_explicit(&mw->seq, memory_order_acquire);
	if (seq & 1)
		goto out; /* being bound or invalidated right now: not valid */
	rkey = mw->rkey;
	state = mw->state;
	acc = mw->access;
	addr = mw->addr;
	length = mw->length;
	mr = mw->mr;
	bound_qpn = mw->qpn;
	bound_gen = mw->qp_gen;
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&mw->seq, memory_order_relaxed) != seq)
		goto out;
	/* an unbound or invalidated window (a stale key byte, FREE, nothing
	 * bound) grants nothing: R_Key violation (o10-37.2.x, rxe_lookup_mw) */
	if (rkey != key || state != SRNIC_MW_VALID || length == 0 || mr == NULL)
		goto out;
	ke = SRNIC_KEY_PD;
	/* C10-77: the QP's PD; type 2B: the very QP it was bound through */
	if (mw->pd != qp->pd || (mw->type == IBV_MW_TYPE_2 && !mw_bound_to(bound_qpn, bound_gen, qp)))
		goto out;
	ke = SRNIC_KEY_ACCESS;
	if ((acc & access) != access)
		goto out;
	ke = SRNIC_KEY_BOUNDS;
	if (va < addr || len > length || va - addr > length - len)
		goto out;
	*out = mr;
	return SRNIC_KEY_OK;
out:
	eng_stat(qp->eng, SRNIC_STAT_RESP_MW_RKEY_ERR, 1);
	return ke;
}

/* The MR a bind names, checked as C10-73/74 and rxe_check_bind_mw() want,
 * with a window reference taken; NULL if refused. */
static struct srnic_mr *
mw_bind_mr(const struct srnic_qp *qp, const struct srnic_swqe *w)
{
	struct srnic_mr *mr;

	if (srnic_mr_check(qp->dev, qp->pd, w->bind.mr_lkey, 0, w->remote_addr, w->bind.length,
			   &mr) != SRNIC_KEY_OK)
		return NULL; /* no such MR, another PD, the range outside it */
	if (!(mr->access & IBV_ACCESS_MW_BIND))
		return NULL;
	if ((w->bind.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
		return NULL;
	/* The reference first, then the key again: a deregistration that
	 * unpublished it meanwhile sees the reference once it quiesces (and
	 * keeps the MR), or we see the key gone (mr.c, mr_unpublish()). */
	atomic_fetch_add(&mr->mw_refs, 1);
	if (__atomic_load_n(&qp->dev->mr_tbl[SRNIC_MR_KEY_INDEX(mr->key)], __ATOMIC_ACQUIRE) != mr) {
		atomic_fetch_sub(&mr->mw_refs, 1);
		return NULL;
	}
	return mr;
}

static enum ibv_wc_status
mw_bind(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_swqe *w)
{
	struct srnic_mw *mw = w->bind.mw;
	struct srnic_mr *mr = NULL, *old;
	uint32_t seq;

	/* the window still lives (freed: its slot is empty or another's) and
	 * the new key keeps its index: only the key byte is the binder's */
	if (mw == NULL || !SRNIC_KEY_IS_MW(w->rkey) || mw_lookup(qp->dev, w->rkey) != mw ||
	    mw->pd != qp->pd)
		goto err;
	if (w->bind.access & IBV_ACCESS_ZERO_BASED)
		goto err; /* o10-36.2.2 for type 1; srnic has no zero-based windows */
	if (mw->type == IBV_MW_TYPE_2 && w->bind.length == 0)
		goto err; /* o10-37.2.40: a type 2 window is invalidated, not unbound */
	if (w->bind.length != 0) {
		mr = mw_bind_mr(qp, w);
		if (mr == NULL)
			goto err;
	}
	if (!mw_write_begin(mw, &seq))
		goto err_mr;
	if (mw->type == IBV_MW_TYPE_2 && mw->state != SRNIC_MW_FREE) {
		mw_write_end(mw, seq); /* o10-37.2.30: bound already */
		goto err_mr;
	}
	old = mw->mr;
	__atomic_store_n(&mw->rkey, w->rkey, __ATOMIC_RELAXED);
	mw->state = SRNIC_MW_VALID;
	mw->access = w->bind.access & MW_ACCESS;
	mw->addr = w->remote_addr;
	mw->length = w->bind.length;
	mw->mr = mr;
	mw->qpn = mw->type == IBV_MW_TYPE_2 ? qp->qpn : 0;
	mw->qp_gen = mw->type == IBV_MW_TYPE_2 ? qp->gen : 0;
	mw_write_end(mw, seq);
	if (old != NULL)
		atomic_fetch_sub(&old->mw_refs, 1);
	eng_stat(eng, SRNIC_STAT_MW_BIND, 1);
	return IBV_WC_SUCCESS;
err_mr:
	if (mr != NULL)
		atomic_fetch_sub(&mr->mw_refs, 1);
err:
	eng_stat(eng, SRNIC_STAT_MW_BIND_ERR, 1);
	return IBV_WC_MW_BIND_ERR;
}

/*
 * Invalidate the type 2 window key names, for qp (remote: a SEND with
 * Invalidate it received). Only windows: an MR registered by user verbs
 * cannot be invalidated (rxe invalidates only the kernel's fast-register
 * MRs), nor a type 1 window (o10-37.2.26). A remote one must have been
 * bound through this QP (type 2B). 0, or -1.
 */
static int
mw_invalidate(struct srnic_engine *eng, const struct srnic_qp *qp, uint32_t key, bool remote)
{
	struct srnic_mw *mw = SRNIC_KEY_IS_MW(key) ? mw_lookup(qp->dev, key) : NULL;
	struct srnic_mr *old;
	uint32_t seq;

	if (mw == NULL || mw->type != IBV_MW_TYPE_2 || mw->pd != qp->pd ||
	    !mw_write_begin(mw, &seq))
		goto err;
	if (mw->rkey != key || mw->state != SRNIC_MW_VALID || (remote && !mw_bound_to(mw->qpn, mw->qp_gen, qp))) {
		mw_write_end(mw, seq); /* nothing changed */
		goto err;
	}
	old = mw->mr;
	mw->state = SRNIC_MW_FREE;
	mw->access = 0;
	mw->addr = 0;
	mw->length = 0;
	mw->mr = NULL;
	mw->qpn = 0;
	mw->qp_gen = 0;
	mw_write_end(mw, seq);
	if (old != NULL)
		atomic_fetch_sub(&old->mw_refs, 1);
	eng_stat(eng, remote ? SRNIC_STAT_MW_REMOTE_INV : SRNIC_STAT_MW_LOCAL_INV, 1);
	return 0;
err:
	eng_stat(eng, SRNIC_STAT_MW_INV_ERR, 1);
	return -1;
}

enum ibv_wc_status
eng_mw_local_op(struct srnic_engine *eng, struct srnic_qp *qp, const struct srnic_swqe *w)
{
	if (w->opcode == IBV_WR_BIND_MW)
		return mw_bind(eng, qp, w);
	/* rxe: a LOCAL_INV that fails is a local QP operation error */
	return mw_invalidate(eng, qp, w->invalidate_rkey, false) == 0 ? IBV_WC_SUCCESS :
									IBV_WC_LOC_QP_OP_ERR;
}

int
eng_mw_remote_inv(struct srnic_engine *eng, const struct srnic_qp *qp, uint32_t key)
{
	return mw_invalidate(eng, qp, key, true);
}
