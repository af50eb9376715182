/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The extended verbs: rdma-core's inline ibv_create_cq_ex() calls through
 * the verbs_context's create_cq_ex; a program then polls with
 * ibv_start_poll() / ibv_next_poll() / ibv_end_poll() and the
 * ibv_wc_read_*() readers, inline calls through the function pointers of
 * struct ibv_cq_ex (man ibv_create_cq_ex). Every pointer is set: a call
 * the device lacks fails as verbs says, never on a NULL.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "verbs.h"

/* The completion fields ibv_create_cq_ex() can give (those of struct
 * ibv_wc, as rxe's): the timestamps, CVLAN, flow tag and tag matching
 * are not there. */
#define SV_WC_EX_FLAGS IBV_WC_STANDARD_FLAGS
#define SV_CQ_EX_CREATE_FLAGS IBV_CREATE_CQ_ATTR_SINGLE_THREADED

static void *
null_errno(int e)
{
	errno = e;
	return NULL;
}

/* ---- CQ ---- */

static inline struct sv_cq *
sv_cq_of_ex(struct ibv_cq_ex *c)
{
	return container_of(c, struct sv_cq, ibcq_ex);
}

/* The completion the program reads now: the oldest taken (n > 0). */
static inline const struct ibv_wc *
cur_wc(struct ibv_cq_ex *c)
{
	const struct sv_cq_ex *x = sv_cq_of_ex(c)->ex;

	return &x->wc[x->head];
}

/* Under x->lock: make a completion current (take a burst from srnic's CQ
 * when none is left); ENOENT when there is none, EOVERFLOW after an
 * overrun, as ibv_poll_cq()'s negative return */
static int
cq_ex_load(struct sv_cq *cq)
{
	struct sv_cq_ex *x = cq->ex;
	const struct ibv_wc *wc;

	if (x->n == 0) {
		int k = srnic_poll_cq(cq->scq, SV_CQ_EX_BURST, x->wc);

		if (k <= 0)
			return k < 0 ? -k : ENOENT;
		x->head = 0;
		x->n = (uint32_t)k;
	}
	wc = &x->wc[x->head];
	cq->ibcq_ex.wr_id = wc->wr_id;
	cq->ibcq_ex.status = wc->status;
	return 0;
}

static int
sv_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct sv_cq *cq = sv_cq_of_ex(ibcq);
	int rc;

	if (attr != NULL && attr->comp_mask != 0)
		return EINVAL;
	sv_progress(cq->dev, true);
	rte_spinlock_lock(&cq->ex->lock);
	rc = cq_ex_load(cq);
	/* verbs: no ibv_end_poll() follows a start_poll that failed */
	if (rc != 0)
		rte_spinlock_unlock(&cq->ex->lock);
	return rc;
}

/* the current completion is the program's: drop it */
static inline void
cq_ex_consume(struct sv_cq_ex *x)
{
	x->head++;
	x->n--;
}

static int
sv_next_poll(struct ibv_cq_ex *ibcq)
{
	struct sv_cq *cq = sv_cq_of_ex(ibcq);

	cq_ex_consume(cq->ex);
	return cq_ex_load(cq);
}

static void
sv_end_poll(struct ibv_cq_ex *ibcq)
{
	struct sv_cq *cq = sv_cq_of_ex(ibcq);

	cq_ex_consume(cq->ex);
	rte_spinlock_unlock(&cq->ex->lock);
}

int
sv_cq_ex_poll(struct sv_cq *cq, int n, struct ibv_wc *wc)
{
	struct sv_cq_ex *x = cq->ex;
	int k = 0, rc;

	/* what start_poll took and the program did not read comes first */
	rte_spinlock_lock(&x->lock);
	while (k < n && x->n > 0) {
		wc[k++] = x->wc[x->head];
		cq_ex_consume(x);
	}
	if (k < n) {
		rc = srnic_poll_cq(cq->scq, n - k, wc + k);
		if (rc < 0 && k == 0)
			k = rc;
		else if (rc > 0)
			k += rc;
	}
	rte_spinlock_unlock(&x->lock);
	return k;
}

static enum ibv_wc_opcode
sv_read_opcode(struct ibv_cq_ex *c)
{
	return cur_wc(c)->opcode;
}

static uint32_t
sv_read_vendor_err(struct ibv_cq_ex *c)
{
	return cur_wc(c)->vendor_err;
}

static uint32_t
sv_read_byte_len(struct ibv_cq_ex *c)
{
	return cur_wc(c)->byte_len;
}

/* also ibv_wc_read_invalidated_rkey(): the same union in struct ibv_wc */
static __be32
sv_read_imm_data(struct ibv_cq_ex *c)
{
	return cur_wc(c)->imm_data;
}

static uint32_t
sv_read_qp_num(struct ibv_cq_ex *c)
{
	return cur_wc(c)->qp_num;
}

static uint32_t
sv_read_src_qp(struct ibv_cq_ex *c)
{
	return cur_wc(c)->src_qp;
}

static unsigned int
sv_read_wc_flags(struct ibv_cq_ex *c)
{
	return cur_wc(c)->wc_flags;
}

static uint32_t
sv_read_slid(struct ibv_cq_ex *c)
{
	return cur_wc(c)->slid;
}

static uint8_t
sv_read_sl(struct ibv_cq_ex *c)
{
	return cur_wc(c)->sl;
}

static uint8_t
sv_read_dlid_path_bits(struct ibv_cq_ex *c)
{
	return cur_wc(c)->dlid_path_bits;
}

/* the fields ibv_create_cq_ex() refuses to give (EOPNOTSUPP): a program
 * that reads them anyway reads 0, never a NULL call */
static uint64_t
sv_read_u64_none(struct ibv_cq_ex *c)
{
	return 0;
}

static uint16_t
sv_read_cvlan_none(struct ibv_cq_ex *c)
{
	return 0;
}

static uint32_t
sv_read_flow_tag_none(struct ibv_cq_ex *c)
{
	return 0;
}

static void
sv_read_tm_info_none(struct ibv_cq_ex *c, struct ibv_wc_tm_info *tm)
{
	memset(tm, 0, sizeof(*tm));
}

/* rxe's checks and errnos: an unknown comp_mask bit EINVAL, a field, flag
 * or parent domain the device lacks EOPNOTSUPP; the rest as
 * ibv_create_cq() */
static struct ibv_cq_ex *
sv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct sv_cq *cq;
	struct ibv_cq_ex *c;

	if (attr == NULL ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)))
		return null_errno(EINVAL);
	if ((attr->wc_flags & ~(uint64_t)SV_WC_EX_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)SV_CQ_EX_CREATE_FLAGS)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain != NULL))
		return null_errno(EOPNOTSUPP);
	if (attr->cqe > INT_MAX || attr->comp_vector > INT_MAX)
		return null_errno(EINVAL);
	cq = sv_cq_create(context, (int)attr->cqe, attr->cq_context, attr->channel,
			  (int)attr->comp_vector);
	if (cq == NULL)
		return NULL;
	cq->ex = calloc(1, sizeof(*cq->ex));
	if (cq->ex == NULL) {
		ibv_destroy_cq(&cq->ibcq);
		return null_errno(ENOMEM);
	}
	rte_spinlock_init(&cq->ex->lock);
	c = &cq->ibcq_ex;
	c->comp_mask = 0;
	c->start_poll = sv_start_poll;
	c->next_poll = sv_next_poll;
	c->end_poll = sv_end_poll;
	c->read_opcode = sv_read_opcode;
	c->read_vendor_err = sv_read_vendor_err;
	c->read_byte_len = sv_read_byte_len;
	c->read_imm_data = sv_read_imm_data;
	c->read_qp_num = sv_read_qp_num;
	c->read_src_qp = sv_read_src_qp;
	c->read_wc_flags = sv_read_wc_flags;
	c->read_slid = sv_read_slid;
	c->read_sl = sv_read_sl;
	c->read_dlid_path_bits = sv_read_dlid_path_bits;
	c->read_completion_ts = sv_read_u64_none;
	c->read_completion_wallclock_ns = sv_read_u64_none;
	c->read_cvlan = sv_read_cvlan_none;
	c->read_flow_tag = sv_read_flow_tag_none;
	c->read_tm_info = sv_read_tm_info_none;
	return c;
}

void
sv_cq_ex_free(struct sv_cq *cq)
{
	free(cq->ex);
	cq->ex = NULL;
}

void
sv_ctx_set_ex_ops(struct sv_context *ctx)
{
	ctx->vctx.create_cq_ex = sv_create_cq_ex;
}
