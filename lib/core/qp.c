/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: creation, the modify_qp state machine with its attribute
 * checks (IBTA 10.3, table 91 as verbs enforces it), and posting work
 * requests into the SQ/RQ rings the QP's engine consumes.
 */
#include <rte_errno.h>
#include <rte_malloc.h>

#include "rnic.h"
#include "engine.h"
#include "neigh.h"

/*
 * modify_qp's attribute table (IBTA 10.3, o10-2.2: required and optional
 * attributes per transition and QP type, as verbs enforces it through the
 * kernel's ib_modify_qp_is_ok()). A transition is allowed when valid, with
 * every required bit and no bit that is neither required nor optional
 * (IBV_QP_STATE aside). One column per QP type.
 */
enum qp_tbl_col {
	QP_COL_RC,
	QP_COL_UC,
	QP_COL_UD,
	QP_COL_COUNT,
};

#define QP_ST_COUNT (IBV_QPS_ERR + 1)

struct qp_trans {
	bool valid;
	int req[QP_COL_COUNT];
	int opt[QP_COL_COUNT];
};

#define QP_PATH_OPT (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | \
		     IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE)
/* RTR -> RTS, RTS -> RTS, SQD -> RTS for UC (no RNR timer) and UD */
#define QP_UC_PATH_OPT (IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | \
			IBV_QP_PATH_MIG_STATE)
#define QP_UD_OPT (IBV_QP_CUR_STATE | IBV_QP_QKEY)

static const struct qp_trans qp_trans_tbl[QP_ST_COUNT][QP_ST_COUNT] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true }, /* as the kernel's table allows */
		[IBV_QPS_INIT] = { .valid = true,
			.req = { [QP_COL_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				 [QP_COL_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				 [QP_COL_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY } },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = { .valid = true,
			.opt = { [QP_COL_RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				 [QP_COL_UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				 [QP_COL_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY } },
		[IBV_QPS_RTR] = { .valid = true,
			.req = { [QP_COL_RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
					       IBV_QP_MIN_RNR_TIMER,
				 [QP_COL_UC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					       IBV_QP_RQ_PSN },
			.opt = { [QP_COL_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					       IBV_QP_PKEY_INDEX,
				 [QP_COL_UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					       IBV_QP_PKEY_INDEX,
				 [QP_COL_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY } },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.req = { [QP_COL_RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				 [QP_COL_UC] = IBV_QP_SQ_PSN,
				 [QP_COL_UD] = IBV_QP_SQ_PSN },
			.opt = { [QP_COL_RC] = QP_PATH_OPT,
				 [QP_COL_UC] = QP_UC_PATH_OPT,
				 [QP_COL_UD] = QP_UD_OPT } },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.opt = { [QP_COL_RC] = QP_PATH_OPT, [QP_COL_UC] = QP_UC_PATH_OPT,
				 [QP_COL_UD] = QP_UD_OPT } },
		[IBV_QPS_SQD] = { .valid = true,
			.opt = { [QP_COL_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [QP_COL_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [QP_COL_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY } },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.opt = { [QP_COL_RC] = QP_PATH_OPT, [QP_COL_UC] = QP_UC_PATH_OPT,
				 [QP_COL_UD] = QP_UD_OPT } },
		[IBV_QPS_SQD] = { .valid = true,
			.opt = { [QP_COL_RC] = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
					       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					       IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
					       IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					       IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER |
					       IBV_QP_PATH_MIG_STATE,
				 [QP_COL_UC] = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					       IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
				 [QP_COL_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY } },
	},
	/* srnic never moves a QP to SQE (RC send errors are fatal; a UD or
	 * UC send cannot fail on the wire), but verbs lets the application
	 * name the transition */
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.opt = { [QP_COL_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				 [QP_COL_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY } },
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

static const char *const qp_state_names[] = {
	[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT", [IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

/* The source of a route: GID sgid's address and IP version. */
static void
qp_route_src(const struct srnic_dev *dev, uint8_t sgid, struct srnic_route *r)
{
	const union ibv_gid *g = &dev->gid[sgid];

	memset(r->src_ip, 0, sizeof(r->src_ip));
	if (srnic_gid_is_v4mapped(g)) {
		r->ip_ver = 4;
		memcpy(r->src_ip, &g->raw[12], 4);
	} else {
		r->ip_ver = 6;
		memcpy(r->src_ip, g->raw, 16);
	}
}

/* A UD QP has no one peer: its template holds our side (MACs and
 * addresses of the destination are written per packet from the WQE's
 * copy of the AH), its UDP source port rxe's for the QPN, its path MTU
 * the port's active MTU. The route is "known": nothing to resolve per QP. */
static void
qp_ud_init(struct srnic_qp *qp)
{
	struct srnic_dev *dev = qp->dev;
	struct ibv_port_attr pa;
	struct srnic_route r;
	uint8_t i;

	srnic_dev_query_port(dev, &pa);
	qp->pmtu_enum = pa.active_mtu;
	qp->pmtu = srnic_mtu_bytes(pa.active_mtu);
	memset(&r, 0, sizeof(r));
	r.src_mac = dev->mac;
	r.ttl = SRNIC_IP_TTL;
	r.udp_sport = srnic_roce_ud_sport(qp->qpn);
	/* one template per source GID: an AH may name any */
	for (i = 0; i < SRNIC_GID_TBL_LEN; i++) {
		qp_route_src(dev, i, &r);
		if (i == SRNIC_GID_INDEX_IP)
			qp->route = r;
		srnic_hdr_tmpl_build(&qp->ud_tmpl[i], &r, 0);
	}
	qp->route_ok = 1;
	qp->tmpl = qp->ud_tmpl[SRNIC_GID_INDEX_IP];
}

/* The table entry of a QPN the device gave out: a special one (QP1) or
 * one from SRNIC_QPN_BASE up. Under dev->lock. */
static struct srnic_qp **
qp_slot(struct srnic_dev *dev, uint32_t qpn)
{
	return qpn < SRNIC_QPN_BASE ? &dev->qp_special[qpn] : &dev->qp_tbl[qpn - SRNIC_QPN_BASE];
}

static inline bool
qp_is_gsi(const struct srnic_qp *qp)
{
	return qp->qpn == SRNIC_GSI_QPN;
}

struct srnic_qp *
srnic_create_qp(struct srnic_pd *pd, struct srnic_qp_init_attr *a)
{
	struct srnic_dev *dev;
	struct srnic_qp *qp;
	struct srnic_srq *srq = NULL;
	uint32_t i, idx = 0, sq_size, rq_size;
	bool gsi;

	if (pd == NULL || a == NULL || a->send_cq == NULL || a->recv_cq == NULL ||
	    (a->comp_mask & ~(SRNIC_QP_INIT_ATTR_RESERVED - 1)) != 0) {
		rte_errno = EINVAL;
		return NULL;
	}
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD) {
		rte_errno = EOPNOTSUPP;
		return NULL;
	}
	gsi = (a->comp_mask & SRNIC_QP_INIT_ATTR_GSI) != 0;
	if (gsi && a->qp_type != IBV_QPT_UD) {
		rte_errno = EINVAL; /* QP1 is a UD QP (IBTA 13.4.6.1) */
		return NULL;
	}
	if (a->comp_mask & SRNIC_QP_INIT_ATTR_SRQ) {
		srq = a->srq;
		/* An SRQ has one consumer: its engine, the QP's (its CQs') */
		if (srq == NULL || srq->dev != pd->dev || srq->eng != a->recv_cq->eng) {
			rte_errno = EINVAL;
			return NULL;
		}
	}
	/* A CQ has one producer: all its QPs live on its engine. */
	if (a->send_cq->eng != a->recv_cq->eng ||
	    a->max_send_wr > SRNIC_MAX_QP_WR || a->max_recv_wr > SRNIC_MAX_QP_WR ||
	    a->max_send_sge > SRNIC_MAX_SGE || a->max_recv_sge > SRNIC_MAX_SGE ||
	    a->max_inline_data > SRNIC_MAX_INLINE) {
		rte_errno = EINVAL;
		return NULL;
	}
	dev = pd->dev;
	/* A queue of 0 WRs (a receive-only QP, a send-only one without an
	 * SRQ: rxe and mlx5 take them) has size 0, so that every post finds it
	 * full (ENOMEM), over one slot, so that no index needs a test. With an
	 * SRQ the QP's own RQ is never used: one slot. */
	sq_size = a->max_send_wr == 0 ? 0 : rte_align32pow2(a->max_send_wr);
	rq_size = srq != NULL ? 1 : a->max_recv_wr == 0 ? 0 : rte_align32pow2(a->max_recv_wr);
	qp = rte_zmalloc("srnic_qp", sizeof(*qp), RTE_CACHE_LINE_SIZE);
	if (qp == NULL)
		goto nomem;
	qp->sq.wqe = rte_zmalloc("srnic_sq", sizeof(*qp->sq.wqe) * RTE_MAX(sq_size, 1u),
				 RTE_CACHE_LINE_SIZE);
	qp->rq.wqe = rte_zmalloc("srnic_rq", sizeof(*qp->rq.wqe) * RTE_MAX(rq_size, 1u),
				 RTE_CACHE_LINE_SIZE);
	if (qp->sq.wqe == NULL || qp->rq.wqe == NULL)
		goto nomem;
	if (a->max_inline_data > 0 && sq_size > 0) {
		qp->sq.inline_buf = rte_zmalloc("srnic_inline", (size_t)sq_size * a->max_inline_data, 0);
		if (qp->sq.inline_buf == NULL)
			goto nomem;
	}
	qp->dev = dev;
	qp->pd = pd;
	qp->scq = a->send_cq;
	qp->rcq = a->recv_cq;
	qp->srq = srq;
	qp->eng = a->send_cq->eng;
	qp->sq_sig_all = a->sq_sig_all != 0;
	qp->sq.size = sq_size;
	qp->sq.mask = RTE_MAX(sq_size, 1u) - 1;
	qp->sq.max_sge = RTE_MAX(a->max_send_sge, 1u);
	qp->sq.max_inline = a->max_inline_data;
	qp->rq.size = rq_size;
	qp->rq.mask = RTE_MAX(rq_size, 1u) - 1;
	qp->rq.max_sge = RTE_MAX(a->max_recv_sge, 1u);
	qp->pmtu_enum = IBV_MTU_1024;
	qp->pmtu = srnic_mtu_bytes(IBV_MTU_1024);
	qp->type = (uint8_t)a->qp_type;
	qp->transport = a->qp_type == IBV_QPT_UD ? SRNIC_OPM_UD :
			a->qp_type == IBV_QPT_UC ? SRNIC_OPM_UC : SRNIC_OPM_RC;
	atomic_store(&qp->state, IBV_QPS_RESET);

	rte_spinlock_lock(&dev->lock);
	if (gsi) {
		/* One GSI QP per port: QPN 1, among the special ones. */
		if (dev->qp_special[SRNIC_GSI_QPN] != NULL) {
			rte_spinlock_unlock(&dev->lock);
			rte_errno = EEXIST;
			goto fail;
		}
		qp->qpn = SRNIC_GSI_QPN;
		/* fixed, as the kernel sets QP1's: IBV_QP_QKEY never changes it */
		qp->qkey = SRNIC_GSI_QKEY;
	} else {
		for (i = 0; i < SRNIC_MAX_QP; i++) {
			idx = (dev->qp_next + i) % SRNIC_MAX_QP;
			if (dev->qp_tbl[idx] == NULL)
				break;
		}
		if (i == SRNIC_MAX_QP) {
			rte_spinlock_unlock(&dev->lock);
			rte_errno = ENOSPC;
			goto fail;
		}
		dev->qp_next = idx + 1;
		qp->qpn = SRNIC_QPN_BASE + idx;
	}
	if (a->qp_type == IBV_QPT_UD)
		qp_ud_init(qp);
	qp->gen = srnic_dev_next_gen(dev);
	__atomic_store_n(qp_slot(dev, qp->qpn), qp, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	a->max_send_wr = sq_size;
	a->max_recv_wr = srq != NULL ? 0 : rq_size;
	if (srq != NULL) {
		a->max_recv_sge = 0;
		atomic_fetch_add(&srq->refs, 1);
	}
	atomic_fetch_add(&pd->refs, 1);
	atomic_fetch_add(&qp->scq->refs, 1);
	atomic_fetch_add(&qp->rcq->refs, 1);
	atomic_fetch_add(&dev->nb_qp, 1);
	return qp;

nomem:
	rte_errno = ENOMEM;
fail:
	if (qp != NULL) {
		rte_free(qp->sq.wqe);
		rte_free(qp->rq.wqe);
		rte_free(qp->sq.inline_buf);
		rte_free(qp);
	}
	return NULL;
}

/* The QP's engine produces no more CQEs for it (RESET, engines quiesced):
 * take its CQEs out of its CQs. */
static void
qp_clean_cqs(struct srnic_qp *qp)
{
	srnic_cq_clean(qp->scq, qp);
	if (qp->rcq != qp->scq)
		srnic_cq_clean(qp->rcq, qp);
}

int
srnic_destroy_qp(struct srnic_qp *qp)
{
	struct srnic_dev *dev;

	if (qp == NULL)
		return -EINVAL;
	dev = qp->dev;
	if (srnic_dev_in_poll(dev))
		return -EDEADLK; /* the quiesce below would wait for our own poll */
	if (srnic_qp_mcast_busy(qp))
		return -EBUSY; /* attached to a group: uverbs refuses too */
	atomic_store(&qp->state, IBV_QPS_RESET);
	rte_spinlock_lock(&dev->lock);
	__atomic_store_n(qp_slot(dev, qp->qpn), NULL, __ATOMIC_RELEASE);
	rte_spinlock_unlock(&dev->lock);
	/* No receive path finds it once every engine has left its poll; the
	 * engine may still hold it in its active list or timer wheel, so the
	 * engine itself unlinks and frees it. */
	srnic_dev_quiesce(dev);
	/* No CQE outlives its QP (libmlx5 does the same): a poll after this
	 * never touches the QP, whichever thread polls. */
	qp_clean_cqs(qp);
	atomic_fetch_sub(&qp->pd->refs, 1);
	atomic_fetch_sub(&qp->scq->refs, 1);
	atomic_fetch_sub(&qp->rcq->refs, 1);
	if (qp->srq != NULL)
		atomic_fetch_sub(&qp->srq->refs, 1);
	atomic_fetch_sub(&dev->nb_qp, 1);
	srnic_engine_bury_qp(qp->eng, qp);
	return 0;
}

uint32_t
srnic_qp_num(const struct srnic_qp *qp)
{
	return qp->qpn;
}

void
srnic_qp_set_user(struct srnic_qp *qp, void *user)
{
	/* under the lock srnic_get_async_event() reads it with */
	rte_spinlock_lock(&qp->dev->lock);
	qp->user = user;
	rte_spinlock_unlock(&qp->dev->lock);
}

uint32_t
srnic_qp_gen(const struct srnic_qp *qp)
{
	return qp->gen;
}

int
srnic_qp_get_stats(const struct srnic_qp *qp, struct srnic_qp_stats *st)
{
	if (qp == NULL || st == NULL)
		return -EINVAL;
	*st = qp->stats;
	return 0;
}

enum ibv_qp_state
srnic_qp_state(const struct srnic_qp *qp)
{
	return srnic_qp_cur_state(qp);
}

/* Is cur -> next a transition verbs allows for the QP type, with exactly
 * the required and allowed attribute bits? */
static int
qp_check_transition(enum ibv_qp_type type, enum ibv_qp_state cur, enum ibv_qp_state next,
		    int mask)
{
	const struct qp_trans *t;
	enum qp_tbl_col col;

	switch (type) {
	case IBV_QPT_RC: col = QP_COL_RC; break;
	case IBV_QPT_UC: col = QP_COL_UC; break;
	case IBV_QPT_UD: col = QP_COL_UD; break;
	default: return -EINVAL;
	}
	if ((unsigned int)cur >= QP_ST_COUNT || (unsigned int)next >= QP_ST_COUNT)
		return -EINVAL;
	/* Naming the current state only makes sense where it can be two things. */
	if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return -EINVAL;
	t = &qp_trans_tbl[cur][next];
	if (!t->valid || (mask & t->req[col]) != t->req[col] ||
	    (mask & ~(t->req[col] | t->opt[col] | IBV_QP_STATE)) != 0)
		return -EINVAL;
	return 0;
}

/* Range checks of the attributes present in mask. */
static int
qp_check_attr(const struct srnic_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > SRNIC_QPN_MASK)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > SRNIC_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > SRNIC_RETRY_CNT_MAX)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return -EINVAL;
	if (mask & IBV_QP_AV) {
		const struct ibv_ah_attr *ah = &a->ah_attr;
		bool v4 = srnic_gid_is_v4mapped(&ah->grh.dgid);

		/* any GID a source, of the destination's family */
		if (!ah->is_global || !srnic_dev_gid_valid(qp->dev, ah->grh.sgid_index) ||
		    srnic_gid_is_v4mapped(&qp->dev->gid[ah->grh.sgid_index]) != v4)
			return -EINVAL;
	}
	return 0;
}

/* Build the route (everything below the BTH) for the peer in the AV into
 * r (the QP's own, or route_next for a handoff); route_ok: MAC known. */
static void
qp_set_route(struct srnic_qp *qp, const struct ibv_qp_attr *a, const struct rte_ether_addr *dmac,
	     struct srnic_route *r, uint8_t *route_ok)
{
	struct srnic_dev *dev = qp->dev;

	memset(r, 0, sizeof(*r));
	qp->route_dmac = dmac != NULL; /* a retry timeout keeps it */
	qp->dgid = a->ah_attr.grh.dgid;
	r->src_mac = dev->mac;
	qp->sgid_index = a->ah_attr.grh.sgid_index;
	qp_route_src(dev, qp->sgid_index, r);
	/* rxe sends the AV's hop limit; a zeroed AV keeps rxe's usual 64. */
	qp->av_hop_limit = a->ah_attr.grh.hop_limit;
	r->ttl = qp->av_hop_limit != 0 ? qp->av_hop_limit : SRNIC_IP_TTL;
	r->tclass = a->ah_attr.grh.traffic_class;
	qp->av_flow_label = a->ah_attr.grh.flow_label & SRNIC_FLOW_LABEL_MASK;
	if (r->ip_ver == 4)
		memcpy(r->dst_ip, &qp->dgid.raw[12], 4);
	else
		memcpy(r->dst_ip, qp->dgid.raw, 16);
	if (dmac != NULL) {
		r->dst_mac = *dmac;
		*route_ok = 1;
	} else {
		*route_ok = srnic_neigh_lookup(dev, qp->dgid.raw, &r->dst_mac) == 0;
	}
}

/* As Linux (rdma_get_udp_sport()): the AV's flow label, or one from the
 * QPNs, in the IPv6 header and folded into the UDP source port. */
static void
qp_route_flow(const struct srnic_qp *qp, struct srnic_route *r)
{
	uint32_t fl = qp->av_flow_label != 0 ? qp->av_flow_label
					     : srnic_roce_flow_label(qp->qpn, qp->dest_qpn);

	r->flow_label = fl;
	r->udp_sport = srnic_roce_fl_sport(fl);
}

/* SQD -> SQD with a new AV: the engine builds packets from the route and
 * template under us, so the new route goes through a handoff
 * (qp->av_pending) and the engine installs it. */
static void
qp_av_handoff(struct srnic_qp *qp, const struct ibv_qp_attr *a, const struct rte_ether_addr *dmac)
{
	/* A previous handoff the engine has not taken is ours to overwrite;
	 * one it took may still be being copied: wait for that poll to end. */
	if (atomic_exchange_explicit(&qp->av_pending, 0, memory_order_acq_rel) == 0)
		srnic_dev_quiesce(qp->dev);
	qp_set_route(qp, a, dmac, &qp->route_next, &qp->route_next_ok);
	qp_route_flow(qp, &qp->route_next);
	atomic_store_explicit(&qp->av_pending, 1, memory_order_release);
}

/* Write the attributes of mask (checked) into the QP in state cur. Those
 * a transition out of RTS or SQD may carry are read by a running engine:
 * each is one aligned word, written once, or handed off (the AV). */
static void
qp_apply_attrs(struct srnic_qp *qp, enum ibv_qp_state cur, struct ibv_qp_attr *a, int mask,
	       const struct rte_ether_addr *dmac)
{
	/* Before RTS the requester is not running: its counters are ours. */
	bool req_idle = cur < IBV_QPS_RTS;

	if (mask & IBV_QP_ACCESS_FLAGS)
		qp->access = a->qp_access_flags;
	/* UD: read by the engine per packet, one word; QP1's is fixed */
	if ((mask & IBV_QP_QKEY) && !qp_is_gsi(qp))
		__atomic_store_n(&qp->qkey, a->qkey, __ATOMIC_RELAXED);
	if (mask & IBV_QP_PATH_MTU) { /* INIT -> RTR only */
		struct ibv_port_attr pa;

		srnic_dev_query_port(qp->dev, &pa);
		qp->pmtu_enum = RTE_MIN(a->path_mtu, pa.active_mtu);
		qp->pmtu = srnic_mtu_bytes(qp->pmtu_enum);
	}
	if (mask & IBV_QP_DEST_QPN) /* INIT -> RTR only */
		qp->dest_qpn = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN) { /* INIT -> RTR only */
		qp->rq_psn_init = a->rq_psn & SRNIC_PSN_MASK;
		qp->resp.epsn = qp->rq_psn_init;
	}
	if (mask & IBV_QP_SQ_PSN) { /* RTR -> RTS only */
		qp->sq_psn_init = a->sq_psn & SRNIC_PSN_MASK;
		qp->req.psn = qp->sq_psn_init;
	}
	/* The initiator depth above ours is capped, not refused (as Linux's
	 * bnxt_re does): fewer READs/atomics in flight than the responder
	 * allows is always safe, and programs take the peer's limit for it
	 * (perftest sets max_rd_atomic to the peer's OUT_READS: rxe's 128).
	 * The responder resources (max_dest_rd_atomic) are what we hold:
	 * above them is -EINVAL. */
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = RTE_MIN(a->max_rd_atomic, (uint8_t)SRNIC_MAX_RD_ATOMIC);
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_TIMEOUT) {
		/* the engine arms with timeout_cycles when timeout != 0 */
		qp->timeout_cycles = srnic_ack_timeout_cycles(a->timeout);
		qp->timeout = a->timeout;
	}
	/* In SQD the engine owns the counters left; it reloads them from
	 * these at the next progress. */
	if (mask & IBV_QP_RETRY_CNT) {
		qp->retry_cnt = a->retry_cnt;
		if (req_idle)
			qp->req.retry_left = a->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		qp->rnr_retry = a->rnr_retry;
		if (req_idle)
			qp->req.rnr_left = a->rnr_retry;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		qp->sqd_notify = a->en_sqd_async_notify != 0;
	/* IBV_QP_ALT_PATH, IBV_QP_PATH_MIG_STATE: no automatic path
	 * migration (srnic_dev_query() does not claim it); accepted where
	 * verbs allows them and ignored. */
	if ((mask & IBV_QP_AV) && cur == IBV_QPS_SQD) {
		qp_av_handoff(qp, a, dmac);
		return;
	}
	/* INIT -> RTR: the engine does not look at the QP yet */
	if (mask & IBV_QP_AV)
		qp_set_route(qp, a, dmac, &qp->route, &qp->route_ok);
	if (mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) {
		qp_route_flow(qp, &qp->route);
		srnic_hdr_tmpl_build(&qp->tmpl, &qp->route, qp->dest_qpn);
	}
}

int
srnic_modify_qp_dmac(struct srnic_qp *qp, struct ibv_qp_attr *a, int mask,
		     const struct rte_ether_addr *dmac)
{
	enum ibv_qp_state cur, next;
	uint8_t expect;
	int rc;

	if (qp == NULL || a == NULL)
		return -EINVAL;
	cur = srnic_qp_state(qp);
	next = (mask & IBV_QP_STATE) ? a->qp_state : cur;
	if ((mask & IBV_QP_CUR_STATE) && a->cur_qp_state != cur)
		return -EINVAL;
	rc = qp_check_transition((enum ibv_qp_type)qp->type, cur, next, mask);
	if (rc == 0)
		rc = qp_check_attr(qp, a, mask);
	if (rc != 0) {
		SRNIC_LOG(DEBUG, "qp %#x: %s -> %s (mask %#x) refused", qp->qpn,
			  (unsigned int)cur < QP_ST_COUNT ? qp_state_names[cur] : "?",
			  (unsigned int)next < QP_ST_COUNT ? qp_state_names[next] : "?", mask);
		return rc;
	}
	/* An SQD -> SQD AV hands off through a quiesce (qp_av_handoff()) */
	if ((mask & IBV_QP_AV) && cur == IBV_QPS_SQD && srnic_dev_in_poll(qp->dev))
		return -EDEADLK; /* it would wait for our own poll */

	if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
		if (srnic_dev_in_poll(qp->dev))
			return -EDEADLK; /* the quiesce would wait for our own poll */
		/* The engine skips RESET QPs; once quiescent, rewind the rings. */
		atomic_store_explicit(&qp->state, IBV_QPS_RESET, memory_order_release);
		srnic_dev_quiesce(qp->dev);
		/* An SQD -> SQD AV the engine did not take is stale now: the
		 * next connection's INIT -> RTR builds the route itself. */
		atomic_store_explicit(&qp->av_pending, 0, memory_order_relaxed);
		/* Its CQEs go too (verbs: a QP in RESET has none), before the
		 * rings rewind: polling one later would give the application
		 * slots that are no longer free. */
		qp_clean_cqs(qp);
		atomic_store(&qp->sq.head, 0);
		atomic_store(&qp->sq.comp, 0);
		atomic_store(&qp->sq.app_free, 0);
		atomic_store(&qp->rq.app_free, 0);
		qp->sq.req = 0;
		atomic_store(&qp->rq.head, 0);
		atomic_store(&qp->rq.tail, 0);
		memset(&qp->req, 0, sizeof(qp->req));
		memset(&qp->resp, 0, sizeof(qp->resp));
		qp->req_idle = 0;
		qp->resp_owed = 0;
		/* a new connection raises its own COMM_EST and LAST_WQE */
		qp->comm_est_raised = 0;
		qp->last_wqe_raised = 0;
		return 0;
	}

	qp_apply_attrs(qp, cur, a, mask, dmac);

	/* Publish, only if the state is still the one checked: the engine
	 * may have moved the QP to ERR since (eng_qp_to_err()). The engine
	 * reads the attributes after it sees the state (release). */
	expect = (uint8_t)cur;
	if (!atomic_compare_exchange_strong_explicit(&qp->state, &expect, (uint8_t)next,
						     memory_order_acq_rel, memory_order_acquire)) {
		SRNIC_LOG(DEBUG, "qp %#x: %s -> %s lost to the engine's %s", qp->qpn,
			  qp_state_names[cur], qp_state_names[next],
			  expect < QP_ST_COUNT ? qp_state_names[expect] : "?");
		/* To ERR, and the engine got there first: done, as asked. */
		if (!(expect == IBV_QPS_ERR && next == IBV_QPS_ERR &&
		      qp_check_transition((enum ibv_qp_type)qp->type, IBV_QPS_ERR, IBV_QPS_ERR,
					  mask) == 0))
			return -EINVAL;
	} else if (next == IBV_QPS_SQD && cur != IBV_QPS_SQD) {
		/* a new entry into SQD, only once it is one: the engine's
		 * drain check runs at the doorbell below */
		atomic_fetch_add_explicit(&qp->sqd_gen, 1, memory_order_relaxed);
	}
	if (next >= IBV_QPS_RTR)
		srnic_qp_doorbell(qp); /* resolve the peer, start, drain, install an AV, or flush */
	return 0;
}

int
srnic_modify_qp(struct srnic_qp *qp, struct ibv_qp_attr *a, int mask)
{
	return srnic_modify_qp_dmac(qp, a, mask, NULL);
}

int
srnic_query_qp(struct srnic_qp *qp, struct ibv_qp_attr *a, int mask,
	       struct srnic_qp_init_attr *init)
{
	RTE_SET_USED(mask);
	if (qp == NULL || a == NULL)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->qp_state = srnic_qp_state(qp);
	a->cur_qp_state = a->qp_state;
	a->path_mtu = qp->pmtu_enum;
	a->qp_access_flags = qp->access;
	a->dest_qp_num = qp->dest_qpn;
	a->rq_psn = qp->rq_psn_init;
	a->sq_psn = qp->sq_psn_init;
	a->max_rd_atomic = qp->max_rd_atomic;
	a->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	a->timeout = qp->timeout;
	a->retry_cnt = qp->retry_cnt;
	a->rnr_retry = qp->rnr_retry;
	a->min_rnr_timer = qp->min_rnr_timer;
	a->en_sqd_async_notify = qp->sqd_notify;
	a->qkey = qp->qkey;
	/* racy read of the engine's side, as a snapshot */
	a->sq_draining = a->qp_state == IBV_QPS_SQD &&
			 qp->sqd_done_gen != atomic_load_explicit(&qp->sqd_gen, memory_order_relaxed);
	a->port_num = 1;
	if (qp->type != IBV_QPT_UD) { /* UD: no AV, each WR names its own */
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		a->ah_attr.grh.dgid = qp->dgid;
		a->ah_attr.grh.sgid_index = qp->sgid_index;
		a->ah_attr.grh.hop_limit = qp->av_hop_limit;
		a->ah_attr.grh.flow_label = qp->av_flow_label;
		a->ah_attr.grh.traffic_class = qp->route.tclass;
	}
	a->cap.max_send_wr = qp->sq.size;
	a->cap.max_recv_wr = qp->srq != NULL ? 0 : qp->rq.size;
	a->cap.max_send_sge = qp->sq.max_sge;
	a->cap.max_recv_sge = qp->srq != NULL ? 0 : qp->rq.max_sge;
	a->cap.max_inline_data = qp->sq.max_inline;
	if (init != NULL) {
		memset(init, 0, sizeof(*init));
		init->send_cq = qp->scq;
		init->recv_cq = qp->rcq;
		init->max_send_wr = qp->sq.size;
		init->max_recv_wr = qp->srq != NULL ? 0 : qp->rq.size;
		init->max_send_sge = qp->sq.max_sge;
		init->max_recv_sge = qp->srq != NULL ? 0 : qp->rq.max_sge;
		if (qp->srq != NULL) {
			init->comp_mask = SRNIC_QP_INIT_ATTR_SRQ;
			init->srq = qp->srq;
		}
		if (qp_is_gsi(qp))
			init->comp_mask |= SRNIC_QP_INIT_ATTR_GSI;
		init->max_inline_data = qp->sq.max_inline;
		init->sq_sig_all = qp->sq_sig_all;
		init->qp_type = (enum ibv_qp_type)qp->type;
	}
	return 0;
}

/* ---- posting ---- */

/* Which QP types take each work request opcode (rxe's wr_opcode_info
 * masks): UC has no READ or atomics, UD only SENDs. */
#define WR_RC (1u << IBV_QPT_RC)
#define WR_UC (1u << IBV_QPT_UC)
#define WR_UD (1u << IBV_QPT_UD)

static const uint8_t wr_qp_types[] = {
	[IBV_WR_RDMA_WRITE] = WR_RC | WR_UC,
	[IBV_WR_RDMA_WRITE_WITH_IMM] = WR_RC | WR_UC,
	[IBV_WR_SEND] = WR_RC | WR_UC | WR_UD,
	[IBV_WR_SEND_WITH_IMM] = WR_RC | WR_UC | WR_UD,
	[IBV_WR_RDMA_READ] = WR_RC,
	[IBV_WR_ATOMIC_CMP_AND_SWP] = WR_RC,
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = WR_RC,
	/* IETH exists for RC only (IBTA 9.2, opcodes 0x16/0x17) */
	[IBV_WR_SEND_WITH_INV] = WR_RC,
	[IBV_WR_LOCAL_INV] = WR_RC | WR_UC,
	[IBV_WR_BIND_MW] = WR_RC | WR_UC,
	/* IBTA 1.5: RC only (opcodes 0x1C, 0x1D) */
	[SRNIC_WR_FLUSH] = WR_RC,
	[IBV_WR_ATOMIC_WRITE] = WR_RC,
};

/* A UD WR's destination into its WQE: a copy of the AH's, so the AH may
 * be destroyed once posted. The MAC, if the AH had none, is looked up now
 * and else by the engine at send time. */
static int
post_ud_dest(struct srnic_qp *qp, const struct ibv_send_wr *wr, struct srnic_swqe *w)
{
	struct srnic_ah *ah = srnic_ah_from_ibv(wr->wr.ud.ah);

	if (ah == NULL || ah->pd != qp->pd)
		return EINVAL; /* an AH of the QP's PD (IBTA 10.2.3) */
	w->ud = ah->dest;
	if (!w->ud.mac_ok)
		w->ud.mac_ok = srnic_neigh_lookup(qp->dev, w->ud.ip, &w->ud.mac) == 0;
	w->ud.qpn = wr->wr.ud.remote_qpn & SRNIC_QPN_MASK;
	/* The controlled Q_Key rule (IBTA 10.2.5): a high bit asks for the
	 * QP's own Q_Key, which only it may send. */
	w->ud.qkey = (wr->wr.ud.remote_qkey & SRNIC_QKEY_CONTROLLED) ?
		     __atomic_load_n(&qp->qkey, __ATOMIC_RELAXED) : wr->wr.ud.remote_qkey;
	/* GSI to GSI: QP1 takes only its well-known Q_Key (IBTA 13.4.6.1),
	 * whatever the WR says, as the kernel's MAD layer sends it. */
	if (qp_is_gsi(qp) && w->ud.qpn == SRNIC_GSI_QPN)
		w->ud.qkey = SRNIC_GSI_QKEY;
	return 0;
}

static int
post_one_send(struct srnic_qp *qp, const struct ibv_send_wr *wr, uint32_t head)
{
	struct srnic_swqe *w = &qp->sq.wqe[head & qp->sq.mask];
	uint64_t len = 0;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->sq.max_sge)
		return EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	switch ((int)wr->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (wr->num_sge != 1 || len != 8)
			return EINVAL;
		break;
	case IBV_WR_SEND_WITH_INV:
		break;
	case IBV_WR_ATOMIC_WRITE:
		/* one 64-bit store: 8 bytes, gathered or inline */
		if (len != 8)
			return EINVAL;
		break;
	case SRNIC_WR_FLUSH:
		if (wr->num_sge != 0 || (wr->send_flags & IBV_SEND_INLINE) ||
		    wr->wr.atomic.compare_add > SRNIC_MAX_MSG_SIZE ||
		    (wr->wr.atomic.swap & 0xFF) != SRNIC_FLUSH_GLOBAL ||
		    (wr->wr.atomic.swap >> 8) > SRNIC_FLUSH_MR)
			return EINVAL; /* persistence is not offered (srnic.h) */
		len = wr->wr.atomic.compare_add;
		break;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		/* local operations carry no data; a bind names a window and
		 * an MR (whose lkey is what srnic reads of it) */
		if (len != 0 || (wr->send_flags & IBV_SEND_INLINE))
			return EINVAL;
		if (wr->opcode == IBV_WR_BIND_MW &&
		    (wr->bind_mw.mw == NULL ||
		     (wr->bind_mw.bind_info.length != 0 && wr->bind_mw.bind_info.mr == NULL)))
			return EINVAL;
		break;
	default:
		return EOPNOTSUPP;
	}
	if (!(wr_qp_types[wr->opcode] & (1u << qp->type)))
		return EINVAL; /* READ/atomic on UC, WRITE on UD */
	if (len > SRNIC_MAX_MSG_SIZE)
		return EINVAL;
	if (qp->type == IBV_QPT_UD) {
		int rc = post_ud_dest(qp, wr, w);

		if (rc != 0)
			return rc;
	}
	if (wr->send_flags & IBV_SEND_INLINE) {
		if (wr->opcode == IBV_WR_RDMA_READ || wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
		    (len > qp->sq.max_inline && wr->opcode != IBV_WR_ATOMIC_WRITE))
			return EINVAL;
	}

	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->num_sge = (uint8_t)wr->num_sge;
	w->length = (uint32_t)len;
	w->signaled = qp->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED);
	w->fence = (wr->send_flags & IBV_SEND_FENCE) != 0;
	w->solicited = (wr->send_flags & IBV_SEND_SOLICITED) != 0;
	w->inline_data = (wr->send_flags & IBV_SEND_INLINE) != 0;
	w->imm_data = wr->imm_data; /* or invalidate_rkey: the same union */
	w->state = SRNIC_WQE_POSTED;
	w->wc_status = IBV_WC_SUCCESS;
	w->sent_pkts = 0;
	w->resp_pkts = 0;
	w->resent = 0;
	if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
	} else if ((int)wr->opcode == SRNIC_WR_FLUSH) {
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->flush.type = (uint8_t)wr->wr.atomic.swap;
		w->flush.level = (uint8_t)(wr->wr.atomic.swap >> 8);
	} else if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

		w->bind.mw = srnic_mw_from_ibv(wr->bind_mw.mw);
		w->rkey = wr->bind_mw.rkey;
		w->remote_addr = b->addr;
		w->bind.length = b->length;
		w->bind.mr_lkey = b->length != 0 ? b->mr->lkey : 0;
		w->bind.access = (int)b->mw_access_flags;
		w->num_sge = 0;
	} else {
		w->remote_addr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
	}
	if (w->inline_data && wr->opcode == IBV_WR_ATOMIC_WRITE) {
		/* its 8 bytes in the WQE (the inline buffer may be none:
		 * max_inline_data 0), what ibv_wr_atomic_write() hands on */
		uint8_t *dst = (uint8_t *)&w->compare_add;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else if (w->inline_data) {
		/* The application may reuse its buffer once post returns. */
		uint8_t *dst = qp->sq.inline_buf + (size_t)(head & qp->sq.mask) * qp->sq.max_inline;

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else {
		for (i = 0; i < wr->num_sge; i++)
			w->sge[i] = wr->sg_list[i];
	}
	return 0;
}

/* The WQEs are written past the published head, so one that fails leaves
 * the engine nothing of it; whole: none of the list is published unless
 * all of it is (ibv_wr_complete()), else each WR is as it is written. */
static int
post_send_list(struct srnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr,
	       bool whole)
{
	enum ibv_qp_state st = srnic_qp_state(qp);
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_relaxed);
	uint32_t start = head;
	int rc = 0;

	/* RTS and later states queue (ERR flushes); before RTS is an error. */
	if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR) {
		*bad_wr = wr;
		return EINVAL;
	}
	for (; wr != NULL; wr = wr->next) {
		uint32_t free_to = atomic_load_explicit(&qp->sq.app_free, memory_order_acquire);

		if (head - free_to >= qp->sq.size) {
			rc = ENOMEM;
			break;
		}
		rc = post_one_send(qp, wr, head);
		if (rc != 0)
			break;
		head++;
		if (!whole)
			atomic_store_explicit(&qp->sq.head, head, memory_order_release);
	}
	if (rc != 0) {
		*bad_wr = wr;
		if (whole)
			return rc;
	} else if (whole) {
		atomic_store_explicit(&qp->sq.head, head, memory_order_release);
	}
	if (head != start)
		srnic_qp_doorbell(qp);
	return rc;
}

int
srnic_post_send(struct srnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	return post_send_list(qp, wr, bad_wr, false);
}

int
srnic_post_send_all(struct srnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	return post_send_list(qp, wr, bad_wr, true);
}

uint32_t
srnic_qp_sq_room(const struct srnic_qp *qp)
{
	/* head is the caller's own (the single producer's): relaxed */
	uint32_t head = atomic_load_explicit(&qp->sq.head, memory_order_relaxed);
	uint32_t free_to = atomic_load_explicit(&qp->sq.app_free, memory_order_acquire);

	return qp->sq.size - (head - free_to);
}

bool
srnic_qp_wq_retired(const struct srnic_qp *qp)
{
	/* comp and tail are stored after the CQE pushes (eng_qp_flush());
	 * a receive WQE the responder took is pushed apart (rwqe_taken) */
	return atomic_load_explicit(&qp->sq.comp, memory_order_acquire) ==
	       atomic_load_explicit(&qp->sq.head, memory_order_relaxed) &&
	       atomic_load_explicit(&qp->rq.tail, memory_order_acquire) ==
	       atomic_load_explicit(&qp->rq.head, memory_order_relaxed) &&
	       !qp->resp.rwqe_taken;
}

int
srnic_post_recv(struct srnic_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	uint32_t head = atomic_load_explicit(&qp->rq.head, memory_order_relaxed);
	int rc = 0, i;

	/* verbs (rxe, mlx5): a QP with an SRQ has no receive queue of its own */
	if (srnic_qp_state(qp) == IBV_QPS_RESET || qp->srq != NULL) {
		*bad_wr = wr;
		return EINVAL;
	}
	for (; wr != NULL; wr = wr->next) {
		uint32_t free_to = atomic_load_explicit(&qp->rq.app_free, memory_order_acquire);
		struct srnic_rwqe *w;
		uint64_t len = 0;

		if (head - free_to >= qp->rq.size) {
			rc = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->rq.max_sge) {
			rc = EINVAL;
			break;
		}
		w = &qp->rq.wqe[head & qp->rq.mask];
		w->wr_id = wr->wr_id;
		w->num_sge = (uint8_t)wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			w->sge[i] = wr->sg_list[i];
			len += wr->sg_list[i].length;
		}
		w->length = (uint32_t)RTE_MIN(len, (uint64_t)UINT32_MAX);
		head++;
		atomic_store_explicit(&qp->rq.head, head, memory_order_release);
	}
	if (rc != 0)
		*bad_wr = wr;
	if (srnic_qp_state(qp) == IBV_QPS_ERR)
		srnic_qp_doorbell(qp); /* flushed at once, as verbs does in ERR */
	return rc;
}
