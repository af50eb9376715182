/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The extended verbs: rdma-core's inline ibv_create_cq_ex(),
 * ibv_create_qp_ex() and ibv_query_device_ex() call through the
 * verbs_context's create_cq_ex, create_qp_ex and query_device_ex; a
 * program then polls with ibv_start_poll() / ibv_next_poll() / ibv_end_poll() and
 * the ibv_wc_read_*() readers, and posts with ibv_wr_start(), the
 * ibv_wr_*() builders and setters and ibv_wr_complete(), all inline calls
 * through the function pointers of struct ibv_cq_ex and struct ibv_qp_ex
 * (man ibv_create_cq_ex, ibv_wr_post). Every pointer is set: a call the
 * device lacks fails as verbs says, never on a NULL.
 *
 * The builders write struct ibv_send_wr, and ibv_wr_complete() hands the
 * list to the device's post: srnic_post_send_all() embedded, so the WQEs
 * are the ones ibv_post_send() makes (one conversion, srnic's
 * post_one_send()) and an opcode works through both or through neither;
 * attached, verbs_attach_dp.c's post into the shared SQ ring, the one
 * ibv_post_send() fills. Either queues the batch whole or not at all.
 * The extended CQ is the same for both devices too: a burst taken by the
 * device's own poll, read one completion at a time. Each device's file
 * makes its objects and hands them here (sv_cq_ex_setup(),
 * sv_qp_ex_setup()); both begin with SV_CQ_HEAD / SV_QP_HEAD.
 */
#include <assert.h>
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

/* The ibv_wr_*() operations a QP may ask for in send_ops_flags: those
 * srnic_post_send() carries, IBTA 1.5's ATOMIC_WRITE included (TSO is
 * UD/raw only, not here). FLUSH has no builder in rdma-core 44's struct
 * ibv_qp_ex (ibv_wr_flush() came with 45): srnic.h's SRNIC_WR_FLUSH
 * carries it for srnic's own API. */
#define SV_QP_EX_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_BIND_MW | \
			   IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV | \
			   IBV_QP_EX_WITH_ATOMIC_WRITE)
/* ibv_device_attr_ex.device_cap_flags_ex bits of rdma-core 45 (the
 * kernel's IB_UVERBS_DEVICE_*; 44's verbs.h lacks them): ATOMIC_WRITE and
 * global-visibility FLUSH served, persistence not (DRAM) */
#define SV_DEVICE_FLUSH_GLOBAL (1ULL << 38)
#define SV_DEVICE_ATOMIC_WRITE (1ULL << 40)
#define SV_QP_EX_COMP_MASK (IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | \
			    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)

static void *
null_errno(int e)
{
	errno = e;
	return NULL;
}

/* ---- CQ ---- */

static_assert(offsetof(struct sv_cq, ex) == offsetof(struct sv_cq_head, ex),
	      "an embedded CQ begins with SV_CQ_HEAD");
static_assert(offsetof(struct sv_qp, wrs) == offsetof(struct sv_qp_head, wrs),
	      "an embedded QP begins with SV_QP_HEAD");

static inline struct sv_cq_head *
cq_head(struct ibv_cq_ex *c)
{
	return container_of(c, struct sv_cq_head, ibcq_ex);
}

/* The completion the program reads now: the oldest taken (n > 0). */
static inline const struct ibv_wc *
cur_wc(struct ibv_cq_ex *c)
{
	const struct sv_cq_ex *x = cq_head(c)->ex;

	return &x->wc[x->head];
}

/* Under x->lock: make a completion current (take a burst from the
 * device's CQ when none is left); ENOENT when there is none, EOVERFLOW
 * after an overrun, as ibv_poll_cq()'s negative return */
static int
cq_ex_load(struct sv_cq_head *h)
{
	struct sv_cq_ex *x = h->ex;
	const struct ibv_wc *wc;

	if (x->n == 0) {
		int k = x->poll(&h->ibcq, SV_CQ_EX_BURST, x->wc);

		if (k <= 0)
			return k < 0 ? -k : ENOENT;
		x->head = 0;
		x->n = (uint32_t)k;
	}
	x->cur = true;
	wc = &x->wc[x->head];
	h->ibcq_ex.wr_id = wc->wr_id;
	h->ibcq_ex.status = wc->status;
	return 0;
}

int
sv_cq_ex_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct sv_cq_head *h = cq_head(ibcq);
	int rc;

	if (attr != NULL && attr->comp_mask != 0)
		return EINVAL;
	rte_spinlock_lock(&h->ex->lock);
	rc = cq_ex_load(h);
	/* verbs: no ibv_end_poll() follows a start_poll that failed */
	if (rc != 0)
		rte_spinlock_unlock(&h->ex->lock);
	return rc;
}

/* embedded: srnic's CQ, the engine run first as ibv_poll_cq() runs it */
static int
sv_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	SV_FORK_ERRNO("ibv_start_poll");
	sv_progress(container_of(ibcq, struct sv_cq, ibcq_ex)->dev, SV_RUN_POLL);
	return sv_cq_ex_start_poll(ibcq, attr);
}

static int
sv_cq_srnic_poll(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	return srnic_poll_cq(container_of(ibcq, struct sv_cq, ibcq)->scq, n, wc);
}

/* the current completion is the program's: drop it (none after a
 * next_poll that found nothing: the program may call it again) */
static inline void
cq_ex_consume(struct sv_cq_ex *x)
{
	if (x->cur) {
		x->cur = false;
		x->head++;
		x->n--;
	}
}

static int
sv_next_poll(struct ibv_cq_ex *ibcq)
{
	struct sv_cq_head *h = cq_head(ibcq);

	cq_ex_consume(h->ex);
	return cq_ex_load(h);
}

static void
sv_end_poll(struct ibv_cq_ex *ibcq)
{
	struct sv_cq_head *h = cq_head(ibcq);

	cq_ex_consume(h->ex);
	rte_spinlock_unlock(&h->ex->lock);
}

int
sv_cq_ex_poll(struct sv_cq_head *h, int n, struct ibv_wc *wc)
{
	struct sv_cq_ex *x = h->ex;
	int k = 0, rc;

	/* what start_poll took and the program did not read comes first */
	rte_spinlock_lock(&x->lock);
	while (k < n && x->n > 0) {
		wc[k++] = x->wc[x->head++];
		x->n--;
	}
	if (k < n) {
		rc = x->poll(&h->ibcq, n - k, wc + k);
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
int
sv_cq_ex_check(const struct ibv_cq_init_attr_ex *attr)
{
	if (attr == NULL ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)))
		return EINVAL;
	if ((attr->wc_flags & ~(uint64_t)SV_WC_EX_FLAGS) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)SV_CQ_EX_CREATE_FLAGS)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) && attr->parent_domain != NULL))
		return EOPNOTSUPP;
	if (attr->cqe > INT_MAX || attr->comp_vector > INT_MAX)
		return EINVAL;
	return 0;
}

int
sv_cq_ex_setup(struct sv_cq_head *h, int (*poll)(struct ibv_cq *, int, struct ibv_wc *),
	       int (*start_poll)(struct ibv_cq_ex *, struct ibv_poll_cq_attr *))
{
	struct ibv_cq_ex *c;

	h->ex = calloc(1, sizeof(*h->ex));
	if (h->ex == NULL)
		return ENOMEM;
	rte_spinlock_init(&h->ex->lock);
	h->ex->poll = poll;
	c = &h->ibcq_ex;
	c->comp_mask = 0;
	c->start_poll = start_poll;
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
	return 0;
}

static struct ibv_cq_ex *
sv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct sv_cq *cq;
	int rc;

	SV_FORK_NULL("ibv_create_cq_ex");
	rc = sv_cq_ex_check(attr);
	if (rc != 0)
		return null_errno(rc);
	cq = sv_cq_create(context, (int)attr->cqe, attr->cq_context, attr->channel,
			  (int)attr->comp_vector);
	if (cq == NULL)
		return NULL;
	if (sv_cq_ex_setup((struct sv_cq_head *)cq, sv_cq_srnic_poll, sv_start_poll) != 0) {
		ibv_destroy_cq(&cq->ibcq);
		return null_errno(ENOMEM);
	}
	return &cq->ibcq_ex;
}

void
sv_cq_ex_free(struct sv_cq_head *h)
{
	free(h->ex);
	h->ex = NULL;
}

/* ---- device ---- */

/* The extended attributes srnic has: none of ODP, timestamps, TSO, RSS,
 * packet pacing, tag matching, CQ moderation, device memory or PCI
 * atomics, so each is 0 as the kernel gives a device without it; the
 * classic part is ibv_query_device()'s (attached: the daemon's answer;
 * its engine is srnic's, so the extended flags are the same). */
int
sv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
		   struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int rc;

	SV_FORK_ERRNO("ibv_query_device_ex");
	if (input != NULL && input->comp_mask != 0)
		return EINVAL;
	if (attr_size < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	rc = ibv_query_device(context, &a.orig_attr);
	if (rc != 0)
		return rc;
	a.device_cap_flags_ex = a.orig_attr.device_cap_flags | SV_DEVICE_FLUSH_GLOBAL |
				SV_DEVICE_ATOMIC_WRITE;
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	memcpy(attr, &a, RTE_MIN(attr_size, sizeof(a)));
	return 0;
}

/* ---- QP: the ibv_wr_*() builders ---- */

/* The WRs of one ibv_wr_start() ... ibv_wr_complete(), at most the SQ's
 * size (more could not be queued at once): wr[i]'s gather list is
 * sge[i * max_sge ...], its inline data copied to inl[i * max_inline ...]
 * (the program may reuse its buffer once the setter returns). err is the
 * first builder's error, what ibv_wr_complete() returns. */
struct sv_wr_batch {
	uint32_t cap, max_sge, max_inline;
	uint32_t n;
	int err;
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	uint8_t *inl;
	/* the device's (sv_qp_ex_setup()) */
	rte_spinlock_t *lock;
	rte_spinlock_t own;
	int (*post)(struct ibv_qp *qp, struct ibv_send_wr *wr);
	void (*posted)(struct ibv_qp *qp);
};

static inline struct sv_qp_head *
qp_head(struct ibv_qp_ex *q)
{
	return container_of(q, struct sv_qp_head, ibqp_ex);
}

static inline void
wr_fail(struct sv_wr_batch *b, int e)
{
	if (b->err == 0)
		b->err = e;
}

/* a new WR at the batch's end, its id and flags the program's now */
static struct ibv_send_wr *
wr_new(struct ibv_qp_ex *q, enum ibv_wr_opcode op)
{
	struct sv_wr_batch *b = qp_head(q)->wrs;
	struct ibv_send_wr *wr;

	if (b->n == b->cap) {
		wr_fail(b, ENOMEM);     /* ibv_post_send()'s for a full SQ */
		return NULL;
	}
	wr = &b->wr[b->n++];
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = q->wr_id;
	wr->send_flags = q->wr_flags;
	wr->opcode = op;
	wr->sg_list = &b->sge[(size_t)(b->n - 1) * b->max_sge];
	return wr;
}

/* the WR a setter applies to: the last one made */
static struct ibv_send_wr *
wr_last(struct ibv_qp_ex *q)
{
	struct sv_wr_batch *b = qp_head(q)->wrs;

	if (b->n == 0) {
		wr_fail(b, EINVAL);
		return NULL;
	}
	return &b->wr[b->n - 1];
}

static void
sv_wr_send(struct ibv_qp_ex *q)
{
	wr_new(q, IBV_WR_SEND);
}

static void
sv_wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	struct ibv_send_wr *wr = wr_new(q, IBV_WR_SEND_WITH_IMM);

	if (wr != NULL)
		wr->imm_data = imm;
}

static void
sv_wr_send_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	struct ibv_send_wr *wr = wr_new(q, IBV_WR_SEND_WITH_INV);

	if (wr != NULL)
		wr->invalidate_rkey = rkey;
}

static void
sv_wr_rdma(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
	   __be32 imm)
{
	struct ibv_send_wr *wr = wr_new(q, op);

	if (wr == NULL)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = addr;
	wr->imm_data = imm;
}

static void
sv_wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	sv_wr_rdma(q, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void
sv_wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, __be32 imm)
{
	sv_wr_rdma(q, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void
sv_wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr)
{
	sv_wr_rdma(q, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void
sv_wr_atomic(struct ibv_qp_ex *q, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
	     uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = wr_new(q, op);

	if (wr == NULL)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void
sv_wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t compare,
		     uint64_t swap)
{
	sv_wr_atomic(q, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, compare, swap);
}

static void
sv_wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, uint64_t add)
{
	sv_wr_atomic(q, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add, 0);
}

static void
sv_wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
	      const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *wr = wr_new(q, IBV_WR_BIND_MW);

	if (wr == NULL)
		return;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	if (info != NULL)
		wr->bind_mw.bind_info = *info;
}

static void
sv_wr_local_inv(struct ibv_qp_ex *q, uint32_t rkey)
{
	struct ibv_send_wr *wr = wr_new(q, IBV_WR_LOCAL_INV);

	if (wr != NULL)
		wr->invalidate_rkey = rkey;
}

static void
sv_wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	wr_new(q, IBV_WR_TSO);  /* not on RC/UC/UD: ibv_post_send()'s answer */
}

static void
sv_wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct ibv_send_wr *wr = wr_last(q);

	if (wr == NULL)
		return;
	wr->wr.ud.ah = ah;
	wr->wr.ud.remote_qpn = qpn;
	wr->wr.ud.remote_qkey = qkey;
}

static void
sv_wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn)
{
	wr_fail(qp_head(q)->wrs, EOPNOTSUPP);  /* no XRC */
}

static void
sv_wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
	struct sv_wr_batch *b = qp_head(q)->wrs;
	struct ibv_send_wr *wr = wr_last(q);

	if (wr == NULL)
		return;
	if (n > b->max_sge) {
		wr_fail(b, EINVAL);     /* ibv_post_send()'s past max_send_sge */
		return;
	}
	memcpy(wr->sg_list, sg, n * sizeof(*sg));
	wr->num_sge = (int)n;
}

static void
sv_wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	sv_wr_set_sge_list(q, 1, &sge);
}

static void
sv_wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *buf)
{
	struct sv_wr_batch *b = qp_head(q)->wrs;
	struct ibv_send_wr *wr = wr_last(q);
	uint8_t *dst;
	size_t i, len = 0;

	if (wr == NULL)
		return;
	for (i = 0; i < n; i++)
		len += buf[i].length;
	if (len > b->max_inline) {
		wr_fail(b, EINVAL);     /* ibv_post_send()'s past max_inline_data */
		return;
	}
	dst = &b->inl[(size_t)(wr - b->wr) * b->max_inline];
	for (i = 0, len = 0; i < n; i++) {
		memcpy(dst + len, buf[i].addr, buf[i].length);
		len += buf[i].length;
	}
	wr->send_flags |= IBV_SEND_INLINE;
	wr->sg_list[0] = (struct ibv_sge){ .addr = (uintptr_t)dst, .length = (uint32_t)len };
	wr->num_sge = len != 0;
}

static void
sv_wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	sv_wr_set_inline_data_list(q, 1, &buf);
}

/* IBTA 1.5's ATOMIC_WRITE: its 8 bytes copied as inline data (srnic keeps
 * them in the WQE, whatever max_inline_data) */
static void
sv_wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t addr, const void *val)
{
	struct ibv_send_wr *wr = wr_new(q, IBV_WR_ATOMIC_WRITE);
	struct ibv_data_buf buf = { .addr = (void *)(uintptr_t)val, .length = 8 };

	if (wr == NULL)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = addr;
	sv_wr_set_inline_data_list(q, 1, &buf);
}

/* rdma-core's providers hold the SQ from ibv_wr_start() to
 * ibv_wr_complete() / ibv_wr_abort(): embedded, ibv_post_send() on another
 * thread waits meanwhile (the batch's lock is the SQ's); attached, another
 * thread's ibv_wr_start() does */
static void
sv_wr_start(struct ibv_qp_ex *q)
{
	struct sv_wr_batch *b = qp_head(q)->wrs;

	rte_spinlock_lock(b->lock);
	b->n = 0;
	b->err = 0;
}

static void
sv_wr_abort(struct ibv_qp_ex *q)
{
	struct sv_wr_batch *b = qp_head(q)->wrs;

	b->n = 0;
	rte_spinlock_unlock(b->lock);
}

/* The batch whole, or (a builder's error, or ibv_post_send()'s for one of
 * its WRs) none of it and that errno. */
static int
sv_wr_complete(struct ibv_qp_ex *q)
{
	struct sv_qp_head *h = qp_head(q);
	struct sv_wr_batch *b = h->wrs;
	int rc = b->err;
	uint32_t i;

	if (rc == 0 && b->n != 0) {
		for (i = 0; i + 1 < b->n; i++)
			b->wr[i].next = &b->wr[i + 1];
		b->wr[b->n - 1].next = NULL;
		rc = b->post(&h->ibqp, b->wr);
	}
	b->n = 0;
	rte_spinlock_unlock(b->lock);
	if (rc == 0 && b->posted != NULL)
		b->posted(&h->ibqp);
	return rc;
}

/* embedded: srnic's SQ, under its lock (the batch's) */
static int
sv_wr_post_srnic(struct ibv_qp *ibqp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	if (unlikely(sv_forked))
		return sv_fork_refused("ibv_wr_complete");
	return srnic_post_send_all(sv_qp(ibqp)->sqp, wr, &bad);
}

static void
sv_wr_posted_srnic(struct ibv_qp *ibqp)
{
	sv_post_progress(sv_qp(ibqp)->dev);
}

static struct sv_wr_batch *
wr_batch_new(const struct ibv_qp_cap *cap)
{
	struct sv_wr_batch *b = calloc(1, sizeof(*b));

	if (b == NULL)
		return NULL;
	b->cap = cap->max_send_wr;
	/* one gather entry at least: inline data is handed on in it */
	b->max_sge = RTE_MAX(cap->max_send_sge, 1u);
	/* 8 at least: ATOMIC_WRITE's value */
	b->max_inline = RTE_MAX(cap->max_inline_data, 8u);
	b->wr = calloc(b->cap, sizeof(*b->wr));
	b->sge = calloc((size_t)b->cap * b->max_sge, sizeof(*b->sge));
	b->inl = calloc(b->cap, b->max_inline);
	if (b->wr == NULL || b->sge == NULL || b->inl == NULL) {
		free(b->wr);
		free(b->sge);
		free(b->inl);
		free(b);
		return NULL;
	}
	return b;
}

void
sv_qp_ex_free(struct sv_qp_head *h)
{
	if (h->wrs == NULL)
		return;
	free(h->wrs->wr);
	free(h->wrs->sge);
	free(h->wrs->inl);
	free(h->wrs);
	h->wrs = NULL;
}

static void
qp_ex_set_ops(struct ibv_qp_ex *q)
{
	q->comp_mask = 0;
	q->wr_id = 0;
	q->wr_flags = 0;
	q->wr_atomic_cmp_swp = sv_wr_atomic_cmp_swp;
	q->wr_atomic_fetch_add = sv_wr_atomic_fetch_add;
	q->wr_bind_mw = sv_wr_bind_mw;
	q->wr_local_inv = sv_wr_local_inv;
	q->wr_rdma_read = sv_wr_rdma_read;
	q->wr_rdma_write = sv_wr_rdma_write;
	q->wr_rdma_write_imm = sv_wr_rdma_write_imm;
	q->wr_send = sv_wr_send;
	q->wr_send_imm = sv_wr_send_imm;
	q->wr_send_inv = sv_wr_send_inv;
	q->wr_send_tso = sv_wr_send_tso;
	q->wr_set_ud_addr = sv_wr_set_ud_addr;
	q->wr_set_xrc_srqn = sv_wr_set_xrc_srqn;
	q->wr_set_inline_data = sv_wr_set_inline_data;
	q->wr_set_inline_data_list = sv_wr_set_inline_data_list;
	q->wr_set_sge = sv_wr_set_sge;
	q->wr_set_sge_list = sv_wr_set_sge_list;
	q->wr_start = sv_wr_start;
	q->wr_complete = sv_wr_complete;
	q->wr_abort = sv_wr_abort;
	q->wr_atomic_write = sv_wr_atomic_write;
}

int
sv_qp_ex_setup(struct sv_qp_head *h, const struct ibv_qp_cap *cap, rte_spinlock_t *lock,
	       int (*post)(struct ibv_qp *, struct ibv_send_wr *), void (*posted)(struct ibv_qp *))
{
	struct sv_wr_batch *b = wr_batch_new(cap);

	if (b == NULL)
		return ENOMEM;
	rte_spinlock_init(&b->own);
	b->lock = lock != NULL ? lock : &b->own;
	b->post = post;
	b->posted = posted;
	h->wrs = b;
	qp_ex_set_ops(&h->ibqp_ex);
	return 0;
}

/* rxe's checks and errnos: no PD EINVAL; XRC, RSS, TSO, create flags and
 * send operations the device lacks EOPNOTSUPP; the rest as ibv_create_qp() */
int
sv_qp_ex_check(struct ibv_context *context, const struct ibv_qp_init_attr_ex *attr,
	       uint64_t ops, bool *wr_api)
{
	if (attr == NULL || !(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == NULL ||
	    attr->pd->context != context)
		return EINVAL;
	if ((attr->comp_mask & ~(uint32_t)SV_QP_EX_COMP_MASK) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0))
		return EOPNOTSUPP;
	*wr_api = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
	if (*wr_api && (attr->send_ops_flags & ~ops))
		return EOPNOTSUPP;
	return 0;
}

static struct ibv_qp *
sv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct sv_qp *qp;
	bool wr_api;
	int rc;

	rc = sv_qp_ex_check(context, attr, SV_QP_EX_SEND_OPS, &wr_api);
	if (rc != 0)
		return null_errno(rc);
	/* struct ibv_qp_init_attr_ex begins with struct ibv_qp_init_attr's
	 * fields, as rdma-core's own ibv_create_qp_ex() relies on */
	qp = sv_qp_create(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (qp == NULL)
		return NULL;
	if (wr_api && sv_qp_ex_setup((struct sv_qp_head *)qp, &attr->cap, &qp->sq_lock,
				     sv_wr_post_srnic, sv_wr_posted_srnic) != 0) {
		ibv_destroy_qp(&qp->ibqp);
		return null_errno(ENOMEM);
	}
	return &qp->ibqp;
}

struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct sv_qp_head *h = (struct sv_qp_head *)ibqp;

	/* rdma-core's: NULL for a QP not made with send_ops_flags (either
	 * kind of device: both begin with SV_QP_HEAD) */
	if (h->wrs == NULL)
		return null_errno(EOPNOTSUPP);
	return &h->ibqp_ex;
}

void
sv_ctx_set_ex_ops(struct sv_context *ctx)
{
	ctx->vctx.create_cq_ex = sv_create_cq_ex;
	ctx->vctx.create_qp_ex = sv_create_qp_ex;
	ctx->vctx.query_device_ex = sv_query_device_ex;
}
