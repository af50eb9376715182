/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A session's verbs objects and its data path (doc/srnicd.md, sections 4,
 * 5 and 8). The control thread makes and destroys the objects (PD, MR,
 * CQ, QP) on the session's messages, each named by a handle checked
 * against the session's own tables (a kind, a slot and a generation: a
 * stale or foreign handle is -EBADF). The engine's thread serves the
 * rings of every live session (srnd_dpath_poll()): it reads the
 * application's indexes once per look, checks them against its own
 * copies, copies each WQE before it reads it and posts it to srnic, and
 * moves srnic's completions into the session's CQ rings. The control
 * thread hands an object to the engine by publishing its pointer and
 * takes it back by clearing it, then waiting out the engine's current
 * pass (srnd_engine_quiesce()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <rte_errno.h>

#include "srnic.h"
#include "srnicd.h"
#include "test_hooks.h"

enum srnd_kind { K_PD = 1, K_CQ, K_QP, K_MR, K_CH, K_AH, K_SRQ, K_MW, K_NKINDS };

/* handle: kind << 28 | generation << 12 | (slot + 1) */
#define H_SLOT_BITS 12
#define H_GEN_MASK 0xffffu

struct srnd_objs;

/* What an object's srnic async events find (srnic_*_set_user()): its
 * session and the handle the session knows it by. */
struct srnd_evsrc {
	struct srnd_objs *o;
	uint32_t handle;
};

struct srnd_pd {
	struct srnic_pd *spd;
	struct srnd_dev *dv;        /* the device ALLOC_PD's handle named: its objects' */
	unsigned int users;         /* CQs do not count; QPs and MRs do */
};

struct srnd_mr {
	struct srnic_mr *smr;
	void *base;                 /* the daemon's mapping */
	size_t maplen;
	uint32_t pd;
	uint32_t access;            /* IBV_ACCESS_*, as registered or reregistered */
	/* its note should its session's end leave the range mapped (a
	 * retired or pinned struct srnd_retired), allocated at REG_MR so
	 * that end cannot fail to note it; freed at its dereg */
	struct srnd_retired *note;
};

struct srnd_ch {
	int fd;                     /* its pipe's write end: the daemon's only, O_NONBLOCK */
	struct srnd_dev *dv;        /* the device CREATE_CHANNEL's handle named: its CQs' */
	unsigned int users;
};

/* A UD address handle: the engine finds it by the handle a WQE names
 * (published in eah[], checked whole: a stale handle finds nothing). */
struct srnd_ah {
	uint32_t handle;            /* first: dp_pub() reads it */
	uint32_t pd;
	struct srnic_ah *sah;
};

/* A memory window: the engine finds it by the handle a BIND_MW WQE names
 * (published in emw[], checked whole, as an AH). */
struct srnd_mw {
	uint32_t handle;            /* first: dp_pub() reads it */
	uint32_t pd;
	struct srnic_mw *smw;
};

struct srnd_cq {
	struct srnd_evsrc src;
	struct srnic_cq *scq;
	struct srnd_dev *dv;        /* the device CREATE_CQ's handle named (its engine's) */
	uint32_t ring, size;
	uint32_t prod;              /* the daemon's own copy: the ring's prod */
	unsigned int users;
	uint32_t ch;                /* its channel's handle, or 0 */
	int ev_fd;                  /* its channel's pipe (write end), or -1 */
	/* the engine's: the last arm seen, whether it waits, events signalled */
	uint32_t arm_seen, ev;
	bool armed;
};

/* An SRQ: its ring's WQEs go to srnic's SRQ (the engine its one
 * producer). A bad index or WQE in the ring is the SRQ's error: its ring
 * is ignored from then on, counted bad_ring, and the control thread tells
 * the session (IBV_EVENT_SRQ_ERR). */
struct srnd_srq {
	struct srnd_evsrc src;
	struct srnic_srq *ssrq;
	uint32_t ring, size, next;  /* next: the daemon's own copy of tail */
	uint32_t pd;
	unsigned int users;         /* QPs on it */
	atomic_bool err;            /* the engine's */
	bool err_told;              /* the control thread's */
};

struct srnd_qp {
	struct srnd_evsrc src;
	struct srnic_qp *sqp;
	uint32_t ring, sq_size, rq_size;
	uint32_t sq_next, rq_next;  /* the daemon's own copies of sq_comp, rq_tail */
	uint32_t pd, scq, rcq;
	uint32_t srq;               /* its SRQ's handle, or 0 */
	bool ud;
	/* a bad index or WQE: the QP is in ERR, its rings ignored (the
	 * engine's), and the control thread tells the session once */
	atomic_bool err;
	bool err_told;
	/* the engine's, once err: the WQE at sq_next (rq_next) is the bad
	 * one (its CQE LOC_QP_OP_ERR, not a flush); flush_ready: srnic has
	 * completed every WQE it took, the rings' rest completes now
	 * (dp_ring_flush()) */
	bool sq_bad, rq_bad, flush_ready;
};

struct srnd_slot {
	uint16_t gen;
	bool used;
	union {
		struct srnd_pd pd;
		struct srnd_mr mr;
		struct srnd_cq cq;
		struct srnd_qp qp;
		struct srnd_ch ch;
		struct srnd_ah ah;
		struct srnd_srq srq;
		struct srnd_mw mw;
	};
};

struct srnd_objs {
	int shm_fd;
	struct svc_shm *shm;
	uint16_t gen;
	int live;                   /* its index in dp_live[], -1 while not published */
	int async_fd;               /* the async pipe's write end (MAP_SHM's), or -1 */
	_Atomic uint32_t devices;   /* the devices its session holds open: bit i, dev[i] */
	bool fd_refused;            /* a request's descriptor refused (logged once) */
	uint32_t ev_prod;           /* the control thread's copy of shm->async.prod */
	uint64_t mr_bytes;
	/* the engine's thread only */
	uint32_t db_seen;
	uint32_t cpu_told;          /* the eng_cpu last stored in its state line */
	bool pending;               /* a WQE waits for room in srnic's queue */
	/* failed QPs whose rings hold WQEs to complete (flush_ready): while
	 * any, dp_cq() tries them each pass (after every nap), as srnic's own
	 * CQEs waiting for room in the CQ ring; never work that keeps the
	 * engine awake (a CQ ring full, a cons the program never moves) */
	unsigned int flush_qps;
	bool wake_owed;             /* a poller on the engine's CPU has CQEs waiting */
	unsigned int owed_passes;   /* passes since its last CQE while wake_owed */
	_Atomic uint64_t wqes;      /* WQEs taken from its rings (status) */
	/* published to the engine: the QPs and CQs it serves */
	/* eqp[], ecq[], esrq[] slots ever published, + 1: the engine's
	 * passes look no further (raised before a slot is published, never
	 * lowered: obj_new() reuses the lowest free slot) */
	_Atomic unsigned int eqp_hi, ecq_hi, esrq_hi;
	struct srnd_qp *_Atomic eqp[SVC_SESSION_QPS_MAX];
	struct srnd_cq *_Atomic ecq[SVC_SESSION_CQS_MAX];
	/* struct srnd_ah, struct srnd_srq (obj_retire() serves both) */
	void *_Atomic eah[SVC_SESSION_AHS_MAX];
	void *_Atomic esrq[SVC_SESSION_SRQS_MAX];
	void *_Atomic emw[SVC_SESSION_MWS_MAX];      /* struct srnd_mw */
	struct srnd_slot pd[SVC_SESSION_PDS_MAX];
	struct srnd_slot cq[SVC_SESSION_CQS_MAX];
	struct srnd_slot qp[SVC_SESSION_QPS_MAX];
	struct srnd_slot mr[SVC_SESSION_MRS_MAX];
	struct srnd_slot ch[SVC_SESSION_CHANNELS_MAX];
	struct srnd_slot ah[SVC_SESSION_AHS_MAX];
	struct srnd_slot srq[SVC_SESSION_SRQS_MAX];
	/* its multicast attachments: QP handle and group, nb_mc of them */
	struct srnd_mc {
		uint32_t qp;
		union ibv_gid gid;
	} mc[SRND_SESSION_MCAST_MAX];
	unsigned int nb_mc;
	struct srnd_slot mw[SVC_SESSION_MWS_MAX];
};

static const unsigned int kind_max[K_NKINDS] = {
	[K_PD] = SVC_SESSION_PDS_MAX, [K_CQ] = SVC_SESSION_CQS_MAX,
	[K_QP] = SVC_SESSION_QPS_MAX, [K_MR] = SVC_SESSION_MRS_MAX,
	[K_CH] = SVC_SESSION_CHANNELS_MAX, [K_AH] = SVC_SESSION_AHS_MAX,
	[K_SRQ] = SVC_SESSION_SRQS_MAX, [K_MW] = SVC_SESSION_MWS_MAX,
};

/* the sessions whose rings the engine serves */
static struct srnd_objs *_Atomic dp_live[SRND_SESSIONS_MAX];
/* dp_live's slots ever used, + 1: the engine's passes look no further
 * (never lowered: shm_map() takes the lowest free slot). Before, every
 * pass loaded all SRND_SESSIONS_MAX slots, and each session's
 * SVC_SESSION_CQS_MAX CQ slots (and QP and SRQ slots at its doorbells). */
static _Atomic unsigned int dp_live_hi;

/* hi raised to cover slot idx (the control thread's; before it publishes
 * the slot: the engine loads hi after the doorbell that names it) */
static void
dp_hi_raise(_Atomic unsigned int *hi, unsigned int idx)
{
	if (atomic_load_explicit(hi, memory_order_relaxed) <= idx)
		atomic_store_explicit(hi, idx + 1, memory_order_release);
}
/* the daemon's totals, for status: objects held and memory mapped */
static struct srnd_counts counts;

const struct srnd_counts *
srnd_counts(void)
{
	return &counts;
}

/* An MR's old object still under packets in flight when its wait ended
 * (a rereg's old object, an MR at its session's end): the srnic object is
 * the daemon's still (deregistered, its keys refused, one reference
 * kept), its range mapped and counted in mr_bytes (its session's too,
 * while the session lives: the limit counts it) until retired_sweep()
 * finds no packet left over it. A mapping may be shared: a rereg that
 * keeps the translation retires the old object over the range the new
 * one (the live MR) still uses; the range is unmapped when the last
 * object over it, live or retired, lets it go (mr_release()). A pinned
 * note is an MR a session's end could not deregister (mrs_dereg_failed):
 * still registered, its range mapped and counted for good; the sweep
 * passes it by, mr_release() sees it (a retired object sharing its range
 * must not unmap it). The control thread's. */
struct srnd_retired {
	struct srnd_retired *next;
	struct srnic_mr *smr;
	void *base;
	size_t maplen;
	struct srnd_objs *o;        /* NULL once its session has ended */
	bool pinned;                /* mapped for good: never swept */
};
static struct srnd_retired *retired;

/* A PD of an ended session that srnic still counts an object on (a
 * retired MR's): deallocated by the sweep once srnic lets it go, counted
 * in pds until then. The control thread's. */
struct srnd_orphan_pd {
	struct srnd_orphan_pd *next;
	struct srnic_pd *spd;
};
static struct srnd_orphan_pd *orphan_pds;

static struct srnd_slot *
kind_table(struct srnd_objs *o, unsigned int kind)
{
	switch (kind) {
	case K_PD: return o->pd;
	case K_CQ: return o->cq;
	case K_QP: return o->qp;
	case K_MR: return o->mr;
	case K_CH: return o->ch;
	case K_AH: return o->ah;
	case K_SRQ: return o->srq;
	case K_MW: return o->mw;
	}
	return NULL;
}

/* The slot a handle of kind names (not yet whether it is live), or -1. */
static int
handle_slot(unsigned int kind, uint32_t h)
{
	unsigned int slot = (h & ((1u << H_SLOT_BITS) - 1)) - 1;

	if (h >> 28 != kind || (h & ((1u << H_SLOT_BITS) - 1)) == 0 || slot >= kind_max[kind])
		return -1;
	return (int)slot;
}

/* The session's live object of kind a handle names, or NULL. */
static struct srnd_slot *
obj_get(struct srnd_objs *o, unsigned int kind, uint32_t h)
{
	int slot = handle_slot(kind, h);
	struct srnd_slot *t;

	if (o == NULL || slot < 0)
		return NULL;
	t = kind_table(o, kind);
	if (!t[slot].used || t[slot].gen != ((h >> H_SLOT_BITS) & H_GEN_MASK))
		return NULL;
	return &t[slot];
}

/* A free slot of kind (its index in *idx), or NULL: the session's limit. */
static struct srnd_slot *
obj_new(struct srnd_objs *o, unsigned int kind, unsigned int *idx)
{
	struct srnd_slot *t = kind_table(o, kind);
	unsigned int i;

	for (i = 0; i < kind_max[kind]; i++) {
		if (!t[i].used) {
			memset(&t[i], 0, sizeof(t[i]));
			t[i].gen = o->gen++;
			if (o->gen == 0)
				o->gen = 1;
			*idx = i;
			return &t[i];
		}
	}
	return NULL;
}

static uint32_t
obj_handle(unsigned int kind, const struct srnd_slot *sl, unsigned int idx)
{
	return (uint32_t)kind << 28 | (uint32_t)sl->gen << H_SLOT_BITS | (idx + 1);
}

static uint32_t
pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* ---- the engine's side ---- */

static void
dp_qp_fail(struct srnd_qp *q, const char *why, uint32_t qpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	srnic_modify_qp(q->sqp, &a, IBV_QP_STATE);
	atomic_store(&q->err, true);   /* after: the watch's event finds it in ERR */
	q->src.o->pending = true;      /* its rings' WQEs to complete (dp_flush_due()) */
	atomic_fetch_add_explicit(&counts.bad_ring, 1, memory_order_relaxed);
	srnd_log("QP %#x to ERR: %s", qpn, why);
}

/* A copied WQE's SGEs for srnic (the application's addresses: each MR is
 * registered at them, wherever the daemon maps it), or false: more than a
 * WQE holds (the caller fails its ring). */
static bool
dp_sges(const struct srnd_objs *o, const struct svc_wqe *w, struct ibv_sge *sg)
{
	unsigned int i;

	if (w->num_sge > SVC_WQE_SGE_MAX)
		return false;
	for (i = 0; i < w->num_sge; i++) {
		sg[i].addr = w->sg[i].addr;
		sg[i].length = w->sg[i].length;
		sg[i].lkey = w->sg[i].lkey;
	}
	return true;
}

/* The session's live object of kind a WQE names (a UD WQE's AH, a bind's
 * window), or NULL (another session's, a destroyed one, garbage): the
 * handle is checked whole against the object published in pub (its
 * first member), which the control thread unpublishes before it destroys
 * it (a quiesce between). */
static void *
dp_pub(void *_Atomic *pub, unsigned int kind, uint32_t h)
{
	int slot = handle_slot(kind, h);
	void *p;

	if (slot < 0)
		return NULL;
	p = atomic_load_explicit(&pub[slot], memory_order_acquire);
	return p != NULL && *(const uint32_t *)p == h ? p : NULL;
}

/* The WQEs one srnic_post_send() of dp_sq() takes, chained: srnic's
 * doorbell (a locked exchange) and its per-call checks once per burst, not
 * once per WQE (doc/srnicd.md, "The engine's pass") */
#define DP_SQ_BURST 32

/* A burst's WRs and what they point at: the copied WQEs (an inline WQE's
 * data is its sge), their SGEs, a bind's MR */
struct dp_sq_burst {
	struct ibv_send_wr wr[DP_SQ_BURST];
	struct ibv_sge sg[DP_SQ_BURST][SVC_WQE_SGE_MAX];
	struct ibv_mr bind_mr[DP_SQ_BURST];
	struct svc_wqe w[DP_SQ_BURST];
};

/* srnic's SQ full with WQEs left in the ring: again at the next poll */
static void
dp_sq_full(struct srnd *d, struct srnd_objs *o)
{
	o->pending = true;
	atomic_store_explicit(&d->eng_sq_full,
			      atomic_load_explicit(&d->eng_sq_full, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/* The burst's nb WRs into srnic, one call: how many it took (all, or up to
 * the one it refused: ENOMEM, its SQ full, leaves the rest for the next
 * poll; another refusal fails the QP). *stop when the caller must stop.
 * sq_posts counts the calls that took a WQE (the engine its only writer). */
static unsigned int
dp_sq_flush(struct srnd *d, struct srnd_objs *o, struct srnd_qp *q, struct dp_sq_burst *b,
	    unsigned int nb, bool *stop)
{
	struct ibv_send_wr *bad = NULL;
	unsigned int i, took;
	int rc;

	if (nb == 0)
		return 0;
	for (i = 0; i + 1 < nb; i++)
		b->wr[i].next = &b->wr[i + 1];
	b->wr[nb - 1].next = NULL;
	rc = srnic_post_send(q->sqp, &b->wr[0], &bad);
	took = rc == 0 ? nb : bad != NULL ? (unsigned int)(bad - &b->wr[0]) : 0;
	if (took > 0)
		atomic_store_explicit(&d->eng_sq_posts,
				      atomic_load_explicit(&d->eng_sq_posts, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	if (rc == 0)
		return nb;
	*stop = true;
	if (rc == ENOMEM) {
		dp_sq_full(d, o);
	} else {
		q->sq_bad = true;   /* the refused WQE: at sq_next once took are counted */
		dp_qp_fail(q, "a send WQE srnic refused", srnic_qp_num(q->sqp));
	}
	return took;
}

/* Take the SQ's new WQEs into srnic, DP_SQ_BURST per call, no more than
 * srnic's SQ has room for (the rest read at a later poll): how many. A bad
 * WQE fails the QP once the WQEs before it are in srnic (as one by one);
 * while srnic has no room for them, it stays in the ring, read again. */
static unsigned int
dp_sq(struct srnd *d, struct srnd_objs *o, struct srnd_qp *q, struct svc_qp_ring *r)
{
	uint32_t head = __atomic_load_n(&r->sq_head.v, __ATOMIC_ACQUIRE), n = 0, room;
	const char *bad = NULL;
	struct dp_sq_burst b;
	struct ibv_send_wr *wr;
	struct ibv_sge *sg;
	struct svc_wqe *w;
	unsigned int nb = 0, took;
	bool stop = false;

	if (head - q->sq_next > q->sq_size) {
		dp_qp_fail(q, "SQ head beyond the ring", srnic_qp_num(q->sqp));
		return 0;
	}
	if (head == q->sq_next)
		return 0;
	room = srnic_qp_sq_room(q->sqp);
	if (head - q->sq_next > room) {
		head = q->sq_next + room;  /* the rest when srnic has room */
		dp_sq_full(d, o);
	}
	while (q->sq_next + nb != head) {
		if (nb == DP_SQ_BURST) {
			took = dp_sq_flush(d, o, q, &b, nb, &stop);
			q->sq_next += took;
			n += took;
			nb = 0;
			if (stop)
				break;
		}
		w = &b.w[nb];
		wr = &b.wr[nb];
		sg = b.sg[nb];
		/* copied first: a slot rewritten after the checks changes nothing */
		memcpy(w, &r->sq[(q->sq_next + nb) & (q->sq_size - 1)], sizeof(*w));
		memset(wr, 0, sizeof(*wr));
		wr->wr_id = w->wr_id;
		wr->opcode = (enum ibv_wr_opcode)w->opcode;
		wr->send_flags = w->send_flags;
		wr->imm_data = w->imm_data;
		wr->sg_list = sg;
		if (w->send_flags & IBV_SEND_INLINE) {
			if (w->num_sge > SVC_WQE_INLINE_MAX) {
				bad = "inline data longer than a WQE holds";
				break;
			}
			sg[0].addr = (uintptr_t)w->inl;
			sg[0].length = w->num_sge;
			sg[0].lkey = 0;
			wr->num_sge = w->num_sge > 0;
		} else {
			if (!dp_sges(o, w, sg)) {
				bad = "more SGEs than a WQE holds";
				break;
			}
			wr->num_sge = (int)w->num_sge;
		}
		if (q->ud) {
			struct srnd_ah *ah = dp_pub(o->eah, K_AH, w->ah);

			if (ah == NULL) {
				bad = "a UD WQE names no AH of the session";
				break;
			}
			wr->wr.ud.ah = srnic_ah_ibv(ah->sah);
			wr->wr.ud.remote_qpn = w->remote_qpn;
			wr->wr.ud.remote_qkey = w->remote_qkey;
		} else if (wr->opcode == IBV_WR_BIND_MW) {
			struct srnd_mw *mw = dp_pub(o->emw, K_MW, w->bind.mw);

			if (mw == NULL || w->num_sge != 0) {
				bad = "a bind names no window of the session";
				break;
			}
			/* srnic reads the MR's lkey only, at the post: its
			 * PD must be the QP's, so another session's MR fails
			 * the bind (IBV_WC_MW_BIND_ERR) */
			b.bind_mr[nb] = (struct ibv_mr){ .lkey = w->bind.mr_lkey };
			wr->num_sge = 0;
			wr->bind_mw.mw = srnic_mw_ibv(mw->smw);
			wr->bind_mw.rkey = w->rkey;
			wr->bind_mw.bind_info.mr = &b.bind_mr[nb];
			wr->bind_mw.bind_info.addr = w->bind.addr;
			wr->bind_mw.bind_info.length = w->bind.length;
			wr->bind_mw.bind_info.mw_access_flags = w->bind.access;
		} else if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			   wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr->wr.atomic.remote_addr = w->remote_addr;
			wr->wr.atomic.rkey = w->rkey;
			wr->wr.atomic.compare_add = w->compare_add;
			wr->wr.atomic.swap = w->swap;
		} else {
			wr->wr.rdma.remote_addr = w->remote_addr;
			wr->wr.rdma.rkey = w->rkey;
		}
		nb++;
	}
	if (!stop) {
		took = dp_sq_flush(d, o, q, &b, nb, &stop);
		q->sq_next += took;
		n += took;
	}
	/* a bad WQE (it broke out of the loop before nb++): the QP failed
	 * only when srnic took every WQE before it (else the QP is failed
	 * already, or the bad WQE is read again when srnic has room) */
	if (bad != NULL && !stop) {
		q->sq_bad = true;   /* the WQE at sq_next */
		dp_qp_fail(q, bad, srnic_qp_num(q->sqp));
	}
	__atomic_store_n(&r->sq_comp.v, q->sq_next, __ATOMIC_RELEASE);
	return n;
}

/* An SRQ's error (a bad index or WQE): its ring ignored from now on */
static void
dp_srq_fail(struct srnd_srq *s, const char *why)
{
	atomic_store(&s->err, true);
	atomic_fetch_add_explicit(&counts.bad_ring, 1, memory_order_relaxed);
	srnd_log("SRQ %u in error: %s", srnic_srq_num(s->ssrq), why);
}

/* A bad receive ring: a QP's RQ puts the QP in ERR, an SRQ's the SRQ */
static void
dp_recv_fail(struct srnd_qp *q, struct srnd_srq *s, const char *why)
{
	if (q != NULL)
		dp_qp_fail(q, why, srnic_qp_num(q->sqp));
	else
		dp_srq_fail(s, why);
}

/* Take a receive ring's new WQEs into srnic: a QP's RQ (q) or an SRQ's
 * ring (s), one ownership for both: the head read once and never trusted
 * past the ring, each WQE copied before it is read. How many. */
static unsigned int
dp_recv(struct srnd_objs *o, struct srnd_qp *q, struct srnd_srq *s)
{
	struct svc_idx *head_line, *tail_line;
	struct ibv_sge sg[SVC_WQE_SGE_MAX];
	struct ibv_recv_wr wr, *bad;
	uint32_t head, size, *next, n = 0;
	const struct svc_wqe *slots;
	struct svc_wqe w;
	int rc;

	if (q != NULL) {
		struct svc_qp_ring *r = &o->shm->qp[q->ring];

		head_line = &r->rq_head;
		tail_line = &r->rq_tail;
		slots = r->rq;
		size = q->rq_size;
		next = &q->rq_next;
	} else {
		struct svc_srq_ring *r = &o->shm->srq[s->ring];

		head_line = &r->head;
		tail_line = &r->tail;
		slots = r->rq;
		size = s->size;
		next = &s->next;
	}
	head = __atomic_load_n(&head_line->v, __ATOMIC_ACQUIRE);
	if (head - *next > size) {
		dp_recv_fail(q, s, "receive head beyond the ring");
		return 0;
	}
	while (*next != head) {
		memcpy(&w, &slots[*next & (size - 1)], sizeof(w));
		if (!dp_sges(o, &w, sg)) {
			if (q != NULL)
				q->rq_bad = true;   /* the WQE at rq_next */
			dp_recv_fail(q, s, "more SGEs than a WQE holds");
			break;
		}
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = w.wr_id;
		wr.sg_list = sg;
		wr.num_sge = (int)w.num_sge;
		rc = q != NULL ? srnic_post_recv(q->sqp, &wr, &bad) :
				 srnic_post_srq_recv(s->ssrq, &wr, &bad);
		if (rc == ENOMEM) {
			o->pending = true;  /* srnic's queue is full: again at the next poll */
			break;
		}
		if (rc != 0) {
			if (q != NULL)
				q->rq_bad = true;
			dp_recv_fail(q, s, "a receive WQE srnic refused");
			break;
		}
		(*next)++;
		n++;
	}
	__atomic_store_n(&tail_line->v, *next, __ATOMIC_RELEASE);
	return n;
}

/* A descriptor with CREATE_CHANNEL or MAP_SHM: the form of protocol 4.2
 * and older, whose library sent an eventfd for the daemon to write. Since
 * 4.3 the daemon makes the pipe and writes only its own end: the one sent
 * is closed and the request refused (EINVAL), said once per session. */
static int
fd_refuse(struct srnd_objs *o, int *fd, const char *what)
{
	if (*fd < 0)
		return 0;
	close(*fd);
	*fd = -1;
	if (!o->fd_refused)
		srnd_log("a session's %s came with a descriptor (protocol 4.2 or older): refused "
			 "(EINVAL); since %u.3 srnicd makes it: use the libibverbs built with this "
			 "srnicd", what, SVC_VERSION_MAJOR);
	o->fd_refused = true;
	return -EINVAL;
}

/* A notification pipe: *rd for the session (its library polls and reads
 * it), *wr the daemon's, O_NONBLOCK. The write end never leaves the
 * daemon, so no program can fill it, clear its O_NONBLOCK (the flag is
 * its open file description's, which only the daemon holds) or block its
 * writer: a write either takes the byte or fails at once. */
static int
ev_pipe(int *rd, int *wr)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0)
		return -errno;
	if (fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	*rd = p[0];
	*wr = p[1];
	return 0;
}

/* One byte into a session's notification pipe, never waiting: a full pipe
 * (EAGAIN; 64 KiB of wakes unread) has its reader's wake pending already,
 * a closed read end (EPIPE; SIGPIPE is ignored) has no reader; either is
 * counted and the event stays in the ring. */
static void
ev_wake(int fd)
{
	static const uint8_t one = 1;

	if (fd < 0 || write(fd, &one, sizeof(one)) == sizeof(one))
		return;
	if (errno == EPIPE)
		atomic_fetch_add_explicit(&counts.wake_closed, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&counts.wake_full, 1, memory_order_relaxed);
}

#define DP_CQ_BURST 32

/* One completion event: counted in the ring, then the channel's pipe. */
static void
dp_cq_fire(struct srnd_cq *c, struct svc_cq_ring *r)
{
	c->armed = false;
	__atomic_store_n(&r->ev.v, ++c->ev, __ATOMIC_RELEASE);
	ev_wake(c->ev_fd);
}

/* A failed QP's WQEs in its rings that srnic never took (posted before
 * the failure or after it) complete as a hardware RNIC's (rxe's) flush of
 * a QP in ERR completes each outstanding WR: IBV_WC_WR_FLUSH_ERR, wr_id
 * kept, in ring order, after srnic's own flushes of what it took (those
 * are in the CQ ring by then: dp_flush_due(), dp_cq()); the bad WQE the
 * QP failed on first, IBV_WC_LOC_QP_OP_ERR. An SRQ's WQEs are the SRQ's:
 * never flushed. A head beyond the ring flushes nothing (no WQE of it is
 * the program's). Into the CQ ring at c->prod (moved on), at most room:
 * how many. */
static uint32_t
dp_ring_flush_wq(struct srnd_objs *o, struct srnd_qp *q, bool rq, struct srnd_cq *c,
		 struct svc_cq_ring *r, uint32_t room)
{
	struct svc_qp_ring *qr = &o->shm->qp[q->ring];
	struct svc_idx *head_line = rq ? &qr->rq_head : &qr->sq_head;
	struct svc_idx *done_line = rq ? &qr->rq_tail : &qr->sq_comp;
	const struct svc_wqe *slots = rq ? qr->rq : qr->sq;
	uint32_t size = rq ? q->rq_size : q->sq_size;
	uint32_t *next = rq ? &q->rq_next : &q->sq_next;
	bool *bad = rq ? &q->rq_bad : &q->sq_bad;
	uint32_t head = __atomic_load_n(&head_line->v, __ATOMIC_ACQUIRE), n = 0;
	struct ibv_wc *wc;

	if (head - *next > size)
		return 0;
	for (; *next != head && n < room; (*next)++, n++) {
		wc = &r->cqe[(c->prod + n) & (c->size - 1)];
		memset(wc, 0, sizeof(*wc));
		/* the one field read: the WQE's slot is the program's to rewrite */
		wc->wr_id = __atomic_load_n(&slots[*next & (size - 1)].wr_id, __ATOMIC_RELAXED);
		wc->status = *bad ? IBV_WC_LOC_QP_OP_ERR : IBV_WC_WR_FLUSH_ERR;
		wc->opcode = rq ? IBV_WC_RECV : IBV_WC_SEND;  /* undefined in an error CQE */
		wc->qp_num = srnic_qp_num(q->sqp);
		*bad = false;
	}
	c->prod += n;
	if (n > 0)
		__atomic_store_n(&done_line->v, *next, __ATOMIC_RELEASE);
	return n;
}

/* The session's failed QPs' ring WQEs whose CQ is c, into its ring after
 * srnic's CQEs (dp_cq() calls it with srnic's CQ emptied), c->prod moved
 * on: how many. */
static uint32_t
dp_ring_flush(struct srnd *d, struct srnd_objs *o, struct srnd_cq *c, struct svc_cq_ring *r,
	      uint32_t room)
{
	unsigned int k, hi = atomic_load_explicit(&o->eqp_hi, memory_order_acquire);
	uint32_t n = 0;

	for (k = 0; k < hi && n < room; k++) {
		struct srnd_qp *q = atomic_load_explicit(&o->eqp[k], memory_order_acquire);

		if (q == NULL || !q->flush_ready)
			continue;
		if (q->scq == c->src.handle)
			n += dp_ring_flush_wq(o, q, false, c, r, room - n);
		if (q->srq == 0 && q->rcq == c->src.handle && n < room)
			n += dp_ring_flush_wq(o, q, true, c, r, room - n);
	}
	if (n > 0)
		atomic_store_explicit(&d->eng_ring_flushed,
				      atomic_load_explicit(&d->eng_ring_flushed,
							   memory_order_relaxed) + n,
				      memory_order_relaxed);
	return n;
}

/* Whether a failed QP's rings hold WQEs of the program's to complete (an
 * index beyond its ring: none of it the program's). Only in ERR: a QP the
 * program moved on (RESET) has its WQEs dropped, as verbs' RESET does. */
static bool
dp_flush_owed(const struct srnd_objs *o, const struct srnd_qp *q)
{
	const struct svc_qp_ring *qr = &o->shm->qp[q->ring];
	uint32_t sq = __atomic_load_n(&qr->sq_head.v, __ATOMIC_ACQUIRE) - q->sq_next;
	uint32_t rq = q->srq != 0 ? 0 :
		      __atomic_load_n(&qr->rq_head.v, __ATOMIC_ACQUIRE) - q->rq_next;

	if ((sq == 0 || sq > q->sq_size) && (rq == 0 || rq > q->rq_size))
		return false;
	return srnic_qp_state(q->sqp) == IBV_QPS_ERR;
}

/* A failed QP's pass: whether its rings hold WQEs to complete, once srnic
 * has completed every WQE it took (srnic's flush runs in the engine's
 * next srnic_engine_poll(): till then the session's next pass looks
 * again). Ready, it stays so, counted in flush_qps, till its rings are
 * done (dp_flush_recount()): no pass of its own while the CQ ring has no
 * room. */
static void
dp_flush_due(struct srnd_objs *o, struct srnd_qp *q)
{
	if (q->flush_ready || !dp_flush_owed(o, q))
		return;
	if (!srnic_qp_wq_retired(q->sqp)) {
		o->pending = true;
		return;
	}
	q->flush_ready = true;
	o->flush_qps++;
}

/* The session's QPs still owing ring WQEs (flush_ready): counted again
 * after a pass's CQs, a QP done (or moved to RESET, or destroyed:
 * unpublished) no longer */
static void
dp_flush_recount(struct srnd_objs *o)
{
	unsigned int k, hi = atomic_load_explicit(&o->eqp_hi, memory_order_acquire), n = 0;

	for (k = 0; k < hi; k++) {
		struct srnd_qp *q = atomic_load_explicit(&o->eqp[k], memory_order_acquire);

		if (q == NULL || !q->flush_ready)
			continue;
		if (dp_flush_owed(o, q))
			n++;
		else
			q->flush_ready = false;
	}
	o->flush_qps = n;
}

static unsigned int
dp_cq(struct srnd *d, struct srnd_objs *o, struct srnd_cq *c, struct svc_cq_ring *r)
{
	uint32_t cons = __atomic_load_n(&r->cons.v, __ATOMIC_ACQUIRE), room, i, seq, ask;
	struct ibv_wc wc[DP_CQ_BURST];
	int n;

	if (c->ev_fd >= 0) {
		/* a new arm: fire at once if the ring holds a CQE past the
		 * cons it was armed at (written before the arm was seen), as
		 * a NIC's arm doorbell carries the consumer index */
		seq = __atomic_load_n(&r->arm.seq, __ATOMIC_ACQUIRE);
		if (seq != c->arm_seen) {
			c->arm_seen = seq;
			c->armed = true;
			if (c->prod != __atomic_load_n(&r->arm.cons, __ATOMIC_RELAXED))
				dp_cq_fire(c, r);
		}
	}

	if (c->prod - cons > c->size) {
		/* an index the application never had: nothing more for this CQ */
		atomic_fetch_add_explicit(&counts.bad_ring, 1, memory_order_relaxed);
		return 0;
	}
	room = c->size - (c->prod - cons);
	if (room == 0)
		return 0;
	ask = RTE_MIN(room, (uint32_t)DP_CQ_BURST);
	n = srnic_poll_cq(c->scq, (int)ask, wc);
	if (n < 0)
		n = 0;
	for (i = 0; i < (uint32_t)n; i++)
		r->cqe[(c->prod + i) & (c->size - 1)] = wc[i];
	c->prod += (uint32_t)n;
	/* srnic's CQ emptied: a failed QP's ring WQEs after its CQEs */
	if (o->flush_qps > 0 && (uint32_t)n < ask)
		n += (int)dp_ring_flush(d, o, c, r, room - (uint32_t)n);
	if (n == 0)
		return 0;
	__atomic_store_n(&r->prod.v, c->prod, __ATOMIC_RELEASE);
	/* a solicited-only arm fires for any CQE too: an extra event, never a missed one */
	if (c->armed)
		dp_cq_fire(c, r);
	return (unsigned int)n;
}

/* The session's pollers asleep on an empty CQ (svc_state_line.poll_sleep):
 * woken, all of them, one system call per sleep. Only the engine stores
 * 0 there: a 1 seen by dp_poll_done() stays until this exchange. A 1
 * nobody sleeps on (a poller that timed out, or a program that writes the
 * word itself, as often as it likes) costs one FUTEX_WAKE per pass that
 * wrote CQEs, never more, and no handoff: counted pollers_none. */
static bool
dp_poll_wake(struct srnd *d, struct srnd_objs *o)
{
	uint32_t *w = &o->shm->state.poll_sleep;

	o->wake_owed = false;
	if (__atomic_load_n(w, __ATOMIC_RELAXED) == 0)
		return false;
	/* every sleeper woken: the next one's CPU starts poll_cpu afresh.
	 * seq_cst, before the exchange: a poller whose 1 the exchange
	 * misses loads poll_cpu after its store of it, sees this 0 (or a
	 * later sleeper's CPU) and marks its own again (poll_sleep(),
	 * drivers/verbs/verbs_attach_dp.c); one whose 1 it takes is woken */
	__atomic_store_n(&o->shm->state.poll_cpu, 0, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(w, 0, __ATOMIC_SEQ_CST) == 0)
		return false;
	if (syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0) <= 0) {
		atomic_fetch_add_explicit(&d->eng_poll_none, 1, memory_order_relaxed);
		return false;
	}
	atomic_fetch_add_explicit(&d->eng_poll_wakes, 1, memory_order_relaxed);
	return true;
}

/* After a pass that wrote CQEs into a session's rings, its sleeping
 * pollers: one that went to sleep on this CPU (poll_cpu) could not run
 * before the engine gives the CPU up, so its wake waits for the engine's
 * first pass with nothing to do (srnd_dpath_wake_owed()), or for
 * SRND_WAKE_DEFER_PASSES passes in a row without its session's CQEs
 * (srnd_dpath_poll(): another session keeps the engine busy): one wake and
 * one handover for every CQE written meanwhile, not one each (64 KiB
 * READs with a CQE each: a wake per READ, each preempting the engine
 * between two bursts of the READs behind it). A poller elsewhere, or of a
 * library that does not say where (poll_cpu 0), or of a session whose
 * pollers sleep on several CPUs (SVC_POLL_CPU_MIXED: one of them may be
 * elsewhere, able to run), is woken now; the engine then hands its CPU
 * over (sched_yield()) unless the poller said it sleeps on another (where
 * the poller has a CPU of its own the yield would return at once). */
static void
dp_poll_done(struct srnd *d, struct srnd_objs *o, int cpu)
{
	uint32_t pc;

	/* the CQE stores (release), then the load of poll_sleep: a full
	 * fence between, against the poller's store of it and load of prod */
	atomic_thread_fence(memory_order_seq_cst);
	if (__atomic_load_n(&o->shm->state.poll_sleep, __ATOMIC_RELAXED) == 0)
		return;
	pc = __atomic_load_n(&o->shm->state.poll_cpu, __ATOMIC_RELAXED);
	if (cpu >= 0 && pc == (uint32_t)cpu + 1) {
		o->wake_owed = true;
		o->owed_passes = 0;
		d->eng_wake_owed = true;
		atomic_fetch_add_explicit(&d->eng_wakes_deferred, 1, memory_order_relaxed);
		return;
	}
	if (!dp_poll_wake(d, o))
		return;
	/* a wake that found a sleeper: counted as such (pollers_none else) */
	if (pc == SVC_POLL_CPU_MIXED)
		atomic_fetch_add_explicit(&d->eng_wakes_mixed, 1, memory_order_relaxed);
	if (pc == 0 || pc == SVC_POLL_CPU_MIXED) {
		sched_yield();
		atomic_fetch_add_explicit(&d->eng_handoffs, 1, memory_order_relaxed);
	}
}

void
srnd_dpath_wake_owed(struct srnd *d)
{
	struct srnd_objs *o;
	unsigned int i;
	bool woke = false;

	d->eng_wake_owed = false;
	for (i = 0; i < SRND_SESSIONS_MAX; i++) {
		o = atomic_load_explicit(&dp_live[i], memory_order_acquire);
		if (o != NULL && o->wake_owed)
			woke |= dp_poll_wake(d, o);
	}
	/* the pollers woken sleep on this CPU: theirs now */
	if (woke) {
		sched_yield();
		atomic_fetch_add_explicit(&d->eng_handoffs, 1, memory_order_relaxed);
	}
}

unsigned int
srnd_dpath_poll(struct srnd *d)
{
	unsigned int n = 0, i, k, cqes;
	struct srnd_objs *o;
	int cpu = sched_getcpu();   /* rseq's or the vDSO's: no system call */
	unsigned int live_hi = atomic_load_explicit(&dp_live_hi, memory_order_acquire), hi;
	uint32_t db;
	bool woke = false;

	for (i = 0; i < live_hi; i++) {
		o = atomic_load_explicit(&dp_live[i], memory_order_acquire);
		if (o == NULL)
			continue;
		/* where the engine runs, for the session's pollers */
		if (o->cpu_told != (uint32_t)(cpu + 1)) {
			o->cpu_told = (uint32_t)(cpu + 1);
			__atomic_store_n(&o->shm->state.eng_cpu, o->cpu_told, __ATOMIC_RELAXED);
		}
		db = __atomic_load_n(&o->shm->db.v, __ATOMIC_ACQUIRE);
		if (db != o->db_seen || o->pending) {
			o->db_seen = db;
			o->pending = false;
			hi = atomic_load_explicit(&o->eqp_hi, memory_order_acquire);
			for (k = 0; k < hi; k++) {
				struct srnd_qp *q = atomic_load_explicit(&o->eqp[k],
									 memory_order_acquire);

				if (q == NULL)
					continue;
				if (atomic_load_explicit(&q->err, memory_order_relaxed)) {
					dp_flush_due(o, q);
					continue;
				}
				if (q->srq == 0)
					n += dp_recv(o, q, NULL);
				n += dp_sq(d, o, q, &o->shm->qp[q->ring]);
			}
			hi = atomic_load_explicit(&o->esrq_hi, memory_order_acquire);
			for (k = 0; k < hi; k++) {
				struct srnd_srq *s = atomic_load_explicit(&o->esrq[k],
									  memory_order_acquire);

				if (s != NULL && !atomic_load_explicit(&s->err, memory_order_relaxed))
					n += dp_recv(o, NULL, s);
			}
			if (n > 0)
				atomic_store_explicit(&o->wqes, atomic_load_explicit(&o->wqes,
						      memory_order_relaxed) + n, memory_order_relaxed);
		}
		cqes = 0;
		hi = atomic_load_explicit(&o->ecq_hi, memory_order_acquire);
		for (k = 0; k < hi; k++) {
			struct srnd_cq *c = atomic_load_explicit(&o->ecq[k], memory_order_acquire);

			if (c != NULL)
				cqes += dp_cq(d, o, c, &o->shm->cq[c->ring]);
		}
		if (o->flush_qps > 0)
			dp_flush_recount(o);
		if (cqes > 0) {
			dp_poll_done(d, o, cpu);
		} else if (o->wake_owed && ++o->owed_passes >= SRND_WAKE_DEFER_PASSES) {
			/* the engine works on (another session's traffic) and
			 * this session's CQEs have stopped: its wake is due
			 * (counted when it found a sleeper) */
			if (dp_poll_wake(d, o)) {
				atomic_fetch_add_explicit(&d->eng_wakes_bounded, 1,
							  memory_order_relaxed);
				woke = true;
			}
		}
		n += cqes;
	}
	/* the pollers woken sleep on this CPU: theirs now */
	if (woke) {
		sched_yield();
		atomic_fetch_add_explicit(&d->eng_handoffs, 1, memory_order_relaxed);
	}
	return n;
}

/* No futex_waitv() (Linux before 5.16): naps are plain nanosleep()s */
static bool dp_waitv = true;

/* The engine's nap (doc/srnicd.md section 4, "A sleeping engine"): every
 * live session's state line says it sleeps (sleep = 1, or
 * SVC_SLEEP_WAITING for a short nap while QPs wait: waiting), then its
 * doorbell is looked at once more: a post whose db store came before that
 * look is served now, one after it finds sleep != 0 and wakes the engine
 * (svc_state_line). Then futex_waitv() on every session's word for at
 * most us. 1 when a doorbell woke it. */
int
srnd_dpath_sleep(struct srnd *d, unsigned int us, bool waiting)
{
	uint32_t sv = waiting ? SVC_SLEEP_WAITING : SVC_SLEEP_IDLE;
	struct futex_waitv w[SRND_SESSIONS_MAX];
	struct timespec ts;
	struct srnd_objs *o;
	unsigned int i, n = 0;
	bool work = false, fallback = false, woken;
	long rc = -1;

	for (i = 0; dp_waitv && i < SRND_SESSIONS_MAX; i++) {
		o = atomic_load_explicit(&dp_live[i], memory_order_acquire);
		if (o == NULL)
			continue;
		/* seq_cst both: the application's db store, then its load of
		 * sleep; here the store of sleep, then the load of db */
		__atomic_store_n(&o->shm->state.sleep, sv, __ATOMIC_SEQ_CST);
		memset(&w[n], 0, sizeof(w[n]));
		w[n].uaddr = (uintptr_t)&o->shm->state.sleep;
		w[n].val = sv;
		w[n].flags = FUTEX_32;      /* shared: the word is in both processes */
		n++;
		if (__atomic_load_n(&o->shm->db.v, __ATOMIC_SEQ_CST) != o->db_seen || o->pending)
			work = true;
	}
	if (!work && n > 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)us * 1000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		rc = syscall(SYS_futex_waitv, w, n, 0, &ts, CLOCK_MONOTONIC);
		/* any failure but the timeout, a word already 0 or a signal (no
		 * futex_waitv before Linux 5.16, a seccomp profile that refuses
		 * it: EPERM, ...): nanosleep from now on, never a spin */
		if (rc < 0 && errno != ETIMEDOUT && errno != EAGAIN && errno != EINTR) {
			dp_waitv = false;
			fallback = true;
		}
	}
	if (!work && (n == 0 || fallback)) {
		ts.tv_sec = 0;
		ts.tv_nsec = (long)us * 1000;
		nanosleep(&ts, NULL);
	}
	/* the sessions stay mapped: a session's end waits out this pass */
	for (i = 0; i < n; i++)
		__atomic_store_n((uint32_t *)(uintptr_t)w[i].uaddr, 0, __ATOMIC_RELEASE);
	/* >= 0: the index of a word woken; EAGAIN: one was 0 already */
	woken = rc >= 0 || (rc < 0 && errno == EAGAIN);
	/* woken before naps (a test reads naps, then woken); a nap counted
	 * only when the engine slept, not when a session had work */
	if (woken)
		atomic_fetch_add_explicit(&d->eng_woken, 1, memory_order_relaxed);
	if (!work) {
		atomic_fetch_add_explicit(&d->eng_naps, 1, memory_order_relaxed);
		if (waiting)
			atomic_fetch_add_explicit(&d->eng_waiting_naps, 1, memory_order_relaxed);
	}
	return woken;
}

/* ---- the control thread's side ---- */

void
srnd_engine_quiesce(struct srnd *d)
{
	uint64_t g;
	struct timespec ts = { .tv_nsec = 20000 };

	if (!d->eng_started)
		return;
	/* a pass ends with +1: two more and the one running at the call is over */
	g = atomic_load(&d->eng_gen);
	while (atomic_load(&d->eng_gen) < g + 2 && !atomic_load(&d->stop))
		nanosleep(&ts, NULL);
}

static int
shm_map(struct srnd_objs *o, int *rx_fd, int *async_rd)
{
	size_t size = sizeof(struct svc_shm);
	unsigned int i;
	int fd, rc;

	if (fd_refuse(o, rx_fd, "MAP_SHM") != 0)
		return -EINVAL;
	if (o->shm != NULL)
		return -EEXIST;     /* its async pipe's read end went with the first */
	fd = memfd_create("srnicd-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	rc = ev_pipe(async_rd, &o->async_fd);   /* the write end the control thread's */
	if (rc != 0) {
		close(fd);
		return rc;
	}
	o->shm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (o->shm == MAP_FAILED) {
		rc = -errno;
		o->shm = NULL;
		close(fd);
		close(*async_rd);
		close(o->async_fd);
		*async_rd = o->async_fd = -1;
		return rc;
	}
	o->shm_fd = fd;
	for (i = 0; i < SRND_SESSIONS_MAX; i++) {
		struct srnd_objs *none = NULL;

		if (atomic_compare_exchange_strong(&dp_live[i], &none, o)) {
			o->live = (int)i;
			/* after: no QP of it yet, a pass that misses it misses nothing */
			dp_hi_raise(&dp_live_hi, i);
			break;
		}
	}
	counts.shm_bytes += size;
	return 0;
}

static int
pd_of(struct srnd_objs *o, uint32_t h, struct srnd_pd **pd)
{
	struct srnd_slot *sl = obj_get(o, K_PD, h);

	if (sl == NULL)
		return -EBADF;
	*pd = &sl->pd;
	return 0;
}

/* The test hook SRNICD_MR_ELSEWHERE=1 (srnicd-test only: test_hooks.h):
 * every MR mapped elsewhere than the application's addresses, as when
 * that range is taken in the daemon. */
static bool
mr_elsewhere(void)
{
	static int on = -1;

	if (on < 0)
		on = SRNIC_TEST_HOOK("SRNICD_MR_ELSEWHERE");
	return on;
}

/* The test hook SRNICD_RECLAIM_REFUSE_MW_BIND=1 (srnicd-test only:
 * test_hooks.h): a session's end finds
 * the dereg of each MR that allows window binds (IBV_ACCESS_MW_BIND)
 * refused, -EINVAL, as srnic refuses an MR with a window still bound,
 * without asking srnic: the MR stays registered and the session's end
 * leaves it mapped for good (mrs_dereg_failed), the path srnicd_dereg
 * tests. (A real bound window cannot be had there: its bind waits in the
 * SQ while the engine's TX buffer is full, which the test needs.) */
static bool
reclaim_refuses(const struct srnd_mr *m)
{
	static int on = -1;

	if (on < 0)
		on = SRNIC_TEST_HOOK("SRNICD_RECLAIM_REFUSE_MW_BIND");
	return on && (m->access & IBV_ACCESS_MW_BIND);
}

/* The daemon's view of [addr, addr + length), fd's pages from offset
 * (page-aligned) backing it: *p maps [*base, *end), the range's pages. 0
 * or a negative errno (nothing mapped). */
static int
mr_map(const struct srnd_objs *o, uint64_t addr, uint64_t length, uint64_t offset, int fd,
       void **map, uintptr_t *base_out, uintptr_t *end_out)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t base, end;
	struct stat st;
	void *p;
	int seals;

	if (fd < 0 || length == 0 || addr + length < addr ||
	    (offset & (uint64_t)(pg - 1)) != 0 || offset > INT64_MAX - SVC_SESSION_MR_BYTES_MAX)
		return -EINVAL;
	base = (uintptr_t)addr & ~(uintptr_t)(pg - 1);
	end = ((uintptr_t)(addr + length) + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
	if (o->mr_bytes + (end - base) > SVC_SESSION_MR_BYTES_MAX)
		return -ENOMEM;
	/* a memfd that could shrink under the daemon would be a SIGBUS in its engine */
	seals = fcntl(fd, F_GET_SEALS);
	if (fstat(fd, &st) != 0 || seals < 0 || (seals & F_SEAL_SHRINK) == 0 ||
	    (uint64_t)st.st_size < offset + (end - base))
		return -EINVAL;
	/* at the application's own addresses when that range is free here
	 * (the test hook SRNICD_MR_ELSEWHERE=1 says never), else anywhere:
	 * the MR is registered at the IOVA the application names either way
	 * (its SGEs and a peer's RETH), so only where srnic reads differs */
	p = MAP_FAILED;
	if (!mr_elsewhere()) {
		p = mmap((void *)base, end - base, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, (off_t)offset);
		if (p != MAP_FAILED && p != (void *)base) {
			munmap(p, end - base);  /* a kernel without MAP_FIXED_NOREPLACE */
			p = MAP_FAILED;
		}
	}
	if (p == MAP_FAILED) {
		p = mmap(NULL, end - base, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)offset);
		if (p == MAP_FAILED)
			return -errno;
		counts.mrs_elsewhere++;
	}
	*map = p;
	*base_out = base;
	*end_out = end;
	return 0;
}

/* An MR's range unmapped and no longer counted (o: its session, or NULL
 * after the session's end) */
static void
mr_unmap(struct srnd_objs *o, void *base, size_t maplen)
{
	munmap(base, maplen);
	if (o != NULL)
		o->mr_bytes -= maplen;
	counts.mr_bytes -= maplen;
}

/* An object's hold on the mapping at base given up (its packets back, or
 * the slot self, still used, deregistered): unmapped unless another
 * object refers to it, a retired one (any session's) or a live MR of
 * session o (NULL: none left), which unmaps it in turn. */
static void
mr_release(struct srnd_objs *o, const struct srnd_slot *self, void *base, size_t maplen)
{
	const struct srnd_retired *r;
	unsigned int i;

	for (r = retired; r != NULL; r = r->next)
		if (r->base == base)
			return;
	for (i = 0; o != NULL && i < SVC_SESSION_MRS_MAX; i++)
		if (o->mr[i].used && &o->mr[i] != self && o->mr[i].mr.base == base)
			return;
	mr_unmap(o, base, maplen);
}

/* srnic_dereg_mr_wait() from the control thread: the engine polls
 * meanwhile (its own thread) and frees the mbufs; telemetry answers
 * meanwhile (nothing it reads changes until this returns) and counts the
 * wait (mrs_dereg_waiting) */
static int
mr_wait(struct srnic_mr *smr, uint64_t timeout_us)
{
	bool held;
	int rc;

	if (timeout_us == 0)
		return srnic_dereg_mr_wait(smr, 0);
	atomic_fetch_add(&counts.mrs_dereg_waiting, 1);
	held = srnd_ctl_wait_begin();
	rc = srnic_dereg_mr_wait(smr, timeout_us);
	srnd_ctl_wait_end(held);
	atomic_fetch_sub(&counts.mrs_dereg_waiting, 1);
	return rc;
}

/* REG_MR (offset 0) and REG_MR_AT: fd's pages from offset back the range */
static int
reg_mr(struct srnd *d, struct srnd_objs *o, const struct svc_reg_mr_req *q, uint64_t offset,
       int fd, struct svc_reg_mr_rep *rep)
{
	struct srnd_retired *note;
	uintptr_t base, end;
	struct srnd_slot *sl;
	struct srnd_pd *pd;
	unsigned int idx;
	void *p;
	int rc;

	(void)d;
	rc = pd_of(o, q->pd, &pd);
	if (rc != 0)
		return rc;
	sl = obj_new(o, K_MR, &idx);
	if (sl == NULL)
		return -ENOSPC;
	note = malloc(sizeof(*note));
	if (note == NULL)
		return -ENOMEM;
	rc = mr_map(o, q->addr, q->length, offset, fd, &p, &base, &end);
	if (rc != 0) {
		free(note);
		return rc;     /* the slot stays free */
	}
	sl->mr.smr = srnic_reg_mr_iova(pd->spd, (uint8_t *)p + (q->addr - base), q->length,
				       q->iova, (int)q->access, NULL, NULL);
	if (sl->mr.smr == NULL) {
		rc = rte_errno != 0 ? rte_errno : EINVAL;
		munmap(p, end - base);
		free(note);
		return -rc;
	}
	sl->used = true;
	sl->mr.note = note;
	sl->mr.base = p;
	sl->mr.maplen = end - base;
	sl->mr.pd = q->pd;
	sl->mr.access = q->access;
	pd->users++;
	o->mr_bytes += end - base;
	counts.mrs++;
	counts.mr_bytes += end - base;
	rep->handle = obj_handle(K_MR, sl, idx);
	rep->lkey = srnic_mr_lkey(sl->mr.smr);
	rep->rkey = srnic_mr_rkey(sl->mr.smr);
	return 0;
}

static int
dereg_mr(struct srnd_objs *o, struct srnd_slot *sl)
{
	struct srnd_pd *pd;
	int rc;

	rc = mr_wait(sl->mr.smr, SRND_DEREG_TIMEOUT_US);
	if (rc < 0)
		return rc;
	/* a rereg's old object still out over it keeps it mapped */
	mr_release(o, sl, sl->mr.base, sl->mr.maplen);
	if (pd_of(o, sl->mr.pd, &pd) == 0)
		pd->users--;
	counts.mrs--;
	free(sl->mr.note);
	sl->mr.note = NULL;
	sl->used = false;
	return 0;
}

/* An MR's old object still under packets (smr deregistered, -EBUSY from
 * its wait), noted in r: its range kept mapped and counted until
 * retired_sweep() finds its packets back and releases it. pinned: an MR
 * left registered (its dereg refused), its range mapped for good. */
static void
mr_retire_in(struct srnd_retired *r, struct srnd_objs *o, struct srnic_mr *smr, void *base,
	     size_t maplen, bool pinned)
{
	*r = (struct srnd_retired){ .next = retired, .smr = smr, .base = base,
				    .maplen = maplen, .o = o, .pinned = pinned };
	retired = r;
	if (!pinned)
		counts.mrs_retired++;
}

/* The old ranges srnic is done with (of session o only, or all: NULL)
 * unmapped, each waited for at most timeout_us; at a session's end
 * (handover) those still under packets become the daemon's alone. */
static void
retired_sweep(struct srnd_objs *o, uint64_t timeout_us, bool handover)
{
	struct srnd_retired **pp = &retired, *r;

	while ((r = *pp) != NULL) {
		if (r->pinned || (o != NULL && r->o != o)) {
			pp = &r->next;
		} else if (mr_wait(r->smr, timeout_us) == 0) {
			/* unlinked first: the mapping goes unless another
			 * object (live or retired) still refers to it */
			*pp = r->next;
			counts.mrs_retired--;
			mr_release(r->o, NULL, r->base, r->maplen);
			free(r);
		} else {
			if (handover)
				r->o = NULL;
			pp = &r->next;
		}
	}
}

/* The ended sessions' PDs srnic lets go now (their retired MRs gone) */
static void
orphan_pd_sweep(void)
{
	struct srnd_orphan_pd **pp = &orphan_pds, *p;

	while ((p = *pp) != NULL) {
		if (srnic_dealloc_pd(p->spd) == 0) {
			counts.pds--;
			*pp = p->next;
			free(p);
		} else {
			pp = &p->next;
		}
	}
}

void
srnd_objs_retired_drain(void)
{
	struct srnd_retired *r;

	retired_sweep(NULL, SRND_DEREG_TIMEOUT_US, false);
	/* the device goes next: what is left is srnic's to free with its
	 * last packet, and the process's mappings go with the process */
	while ((r = retired) != NULL) {
		if (!r->pinned) {
			srnd_log("stop: an MR's old range still has packets in flight: left mapped");
			srnic_dereg_mr(r->smr);
		}
		retired = r->next;
		free(r);
	}
	orphan_pd_sweep();
}

/* REREG_MR: srnic's reregistration (srnic_rereg_mr_iova(): a new object
 * in the key's slot), then the old object released. A new translation is
 * mapped first (fd's pages, as REG_MR_AT's, checked against the
 * session's MR bytes with the old range still counted: ENOMEM) and the
 * old mapping unmapped once no packet refers to it. An old object still
 * under packets after the dereg timeout (a port that does not drain) is
 * retired (mr_retire_in(), its note allocated before anything changes):
 * its range mapped and counted until the control thread's sweep finds
 * its packets back; kept, the translation is then shared with the new
 * object and unmapped after both (mr_release()). Refused (a window
 * bound: EBUSY; a PD not the session's: EINVAL; no memory for the note:
 * ENOMEM), the MR is as it was. */
static int
rereg_mr(struct srnd_objs *o, const struct svc_rereg_mr_req *q, int fd,
	 struct svc_reg_mr_rep *rep)
{
	bool xlate = q->flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	struct srnd_pd *npd = NULL, *opd;
	struct srnic_mr *old, *nmr;
	struct srnd_retired *note;
	struct srnd_slot *sl;
	uintptr_t base = 0, end = 0;
	void *p = NULL;
	int rc;

	sl = obj_get(o, K_MR, q->handle);
	if (sl == NULL)
		return -EBADF;
	if ((q->flags & IBV_REREG_MR_CHANGE_PD) && pd_of(o, q->pd, &npd) != 0)
		return -EINVAL;
	/* an MR stays its device's: a PD of another's is refused */
	if ((q->flags & IBV_REREG_MR_CHANGE_PD) && pd_of(o, sl->mr.pd, &opd) == 0 &&
	    opd->dv != npd->dv) {
		counts.dev_mixed++;
		return -EINVAL;
	}
	note = malloc(sizeof(*note));
	if (note == NULL)
		return -ENOMEM;
	if (xlate) {
		rc = mr_map(o, q->addr, q->length, q->offset, fd, &p, &base, &end);
		if (rc != 0) {
			free(note);
			return rc;
		}
	}
	old = sl->mr.smr;
	nmr = srnic_rereg_mr_iova(old, (int)q->flags, npd != NULL ? npd->spd : NULL,
				  xlate ? (uint8_t *)p + (q->addr - base) : NULL, q->length, q->addr,
				  (int)q->access);
	if (nmr == NULL) {
		rc = rte_errno != 0 ? rte_errno : EINVAL;
		if (xlate)
			munmap(p, end - base);
		free(note);
		return -rc;
	}
	sl->mr.smr = nmr;
	if (q->flags & IBV_REREG_MR_CHANGE_ACCESS)
		sl->mr.access = q->access;
	if (npd != NULL) {
		if (pd_of(o, sl->mr.pd, &opd) == 0)
			opd->users--;
		npd->users++;
		sl->mr.pd = q->pd;
	}
	if (mr_wait(old, SRND_DEREG_TIMEOUT_US) == 0) {
		free(note);
		/* a new translation: the old range goes unless an earlier
		 * rereg's retired object is still out over it */
		if (xlate)
			mr_release(o, sl, sl->mr.base, sl->mr.maplen);
	} else {
		/* kept, the translation is the new object's too: the old
		 * object's mbufs point into it, so its dereg (or the
		 * session's end) leaves it to this note (mr_release()) */
		mr_retire_in(note, o, old, sl->mr.base, sl->mr.maplen, false);
	}
	if (xlate) {
		o->mr_bytes += end - base;
		counts.mr_bytes += end - base;
		sl->mr.base = p;
		sl->mr.maplen = end - base;
	}
	rep->handle = q->handle;
	rep->lkey = srnic_mr_lkey(nmr);
	rep->rkey = srnic_mr_rkey(nmr);
	return 0;
}

static int
create_cq(struct srnd_dev *dv, struct srnd_objs *o, const struct svc_create_cq_req *q,
	  struct svc_create_cq_rep *rep)
{
	struct srnd_slot *sl, *ch = NULL;
	unsigned int idx;
	uint32_t size;

	if (q->cqe < 1 || q->cqe >= SVC_RING_CQE_MAX)
		return -EINVAL;
	if (q->channel != 0 && (ch = obj_get(o, K_CH, q->channel)) == NULL)
		return -EBADF;
	/* a channel is a context's, so one device's (verbs' CQ of another
	 * context's channel is refused) */
	if (ch != NULL && ch->ch.dv != dv) {
		counts.dev_mixed++;
		return -EINVAL;
	}
	size = pow2_at_least(q->cqe + 1);
	sl = obj_new(o, K_CQ, &idx);
	if (sl == NULL)
		return -ENOSPC;
	sl->cq.scq = srnic_create_cq(dv->sdev, (int)q->cqe, dv->eng);
	if (sl->cq.scq == NULL)
		return -(rte_errno != 0 ? rte_errno : ENOMEM);
	sl->cq.dv = dv;
	sl->used = true;
	sl->cq.ring = idx;
	sl->cq.size = size;
	sl->cq.prod = 0;
	sl->cq.ch = ch != NULL ? q->channel : 0;
	sl->cq.ev_fd = ch != NULL ? ch->ch.fd : -1;
	sl->cq.src.o = o;
	sl->cq.src.handle = obj_handle(K_CQ, sl, idx);
	srnic_cq_set_user(sl->cq.scq, &sl->cq.src);
	if (ch != NULL)
		ch->ch.users++;
	memset(&o->shm->cq[idx], 0, offsetof(struct svc_cq_ring, cqe));
	dp_hi_raise(&o->ecq_hi, idx);
	atomic_store_explicit(&o->ecq[idx], &sl->cq, memory_order_release);
	counts.cqs++;
	rep->handle = obj_handle(K_CQ, sl, idx);
	rep->ring = idx;
	rep->size = size;
	return 0;
}

static int
destroy_cq(struct srnd *d, struct srnd_objs *o, struct srnd_slot *sl)
{
	int rc;

	bool seen = atomic_load(&o->ecq[sl->cq.ring]) != NULL;
	struct srnd_slot *c;

	if (sl->cq.users != 0)
		return -EBUSY;
	if (seen) {
		atomic_store_explicit(&o->ecq[sl->cq.ring], NULL, memory_order_release);
		srnd_engine_quiesce(d);
	}
	rc = srnic_destroy_cq(sl->cq.scq);
	if (rc < 0) {
		if (seen)
			atomic_store_explicit(&o->ecq[sl->cq.ring], &sl->cq, memory_order_release);
		return rc;
	}
	if ((c = obj_get(o, K_CH, sl->cq.ch)) != NULL)
		c->ch.users--;
	sl->used = false;
	counts.cqs--;
	return 0;
}

/* An SRQ's device: its PD's (NULL if its PD is gone: never while it lives) */
static const struct srnd_dev *
srq_dev(struct srnd_objs *o, const struct srnd_slot *srq)
{
	struct srnd_pd *pd;

	return pd_of(o, srq->srq.pd, &pd) == 0 ? pd->dv : NULL;
}

static void
cap_clamp(struct svc_qp_cap *c)
{
	c->max_send_wr = pow2_at_least(c->max_send_wr ? c->max_send_wr : 1);
	c->max_recv_wr = pow2_at_least(c->max_recv_wr ? c->max_recv_wr : 1);
}

static int
create_qp(struct srnd_objs *o, const struct svc_create_qp_req *q, struct svc_create_qp_rep *rep)
{
	struct srnic_qp_init_attr a, got;
	struct srnd_slot *sl, *scq, *rcq, *srq = NULL;
	struct svc_qp_cap cap = q->cap;
	struct ibv_qp_attr qa;
	struct srnd_pd *pd;
	unsigned int idx;
	int rc;

	rc = pd_of(o, q->pd, &pd);
	if (rc != 0)
		return rc;
	scq = obj_get(o, K_CQ, q->send_cq);
	rcq = obj_get(o, K_CQ, q->recv_cq);
	if (scq == NULL || rcq == NULL)
		return -EBADF;
	if (q->srq != 0 && (srq = obj_get(o, K_SRQ, q->srq)) == NULL)
		return -EBADF;
	/* a QP is one device's: its PD's, its CQs' and its SRQ's (srnic's
	 * engine of one device would complete into another's CQ, whose
	 * engine is its only writer). verbs' objects are one context's,
	 * so no library asks this; the protocol can. */
	if (scq->cq.dv != pd->dv || rcq->cq.dv != pd->dv ||
	    (srq != NULL && srq_dev(o, srq) != pd->dv)) {
		counts.dev_mixed++;
		return -EINVAL;
	}
	if (q->qp_type != IBV_QPT_RC && q->qp_type != IBV_QPT_UC && q->qp_type != IBV_QPT_UD)
		return -EOPNOTSUPP;
	if (cap.max_send_wr > SVC_RING_WR_MAX || cap.max_recv_wr > SVC_RING_WR_MAX ||
	    cap.max_send_sge > SVC_WQE_SGE_MAX || cap.max_recv_sge > SVC_WQE_SGE_MAX ||
	    cap.max_inline_data > SVC_WQE_INLINE_MAX)
		return -EINVAL;
	cap_clamp(&cap);
	sl = obj_new(o, K_QP, &idx);
	if (sl == NULL)
		return -ENOSPC;
	memset(&a, 0, sizeof(a));
	a.send_cq = scq->cq.scq;
	a.recv_cq = rcq->cq.scq;
	a.max_send_wr = cap.max_send_wr;
	a.max_recv_wr = cap.max_recv_wr;
	a.max_send_sge = cap.max_send_sge;
	a.max_recv_sge = cap.max_recv_sge;
	a.max_inline_data = cap.max_inline_data;
	a.sq_sig_all = q->sq_sig_all != 0;
	a.qp_type = (enum ibv_qp_type)q->qp_type;
	if (srq != NULL) {
		a.comp_mask = SRNIC_QP_INIT_ATTR_SRQ;
		a.srq = srq->srq.ssrq;
		cap.max_recv_wr = cap.max_recv_sge = 0;  /* as verbs reports them */
	}
	sl->qp.sqp = srnic_create_qp(pd->spd, &a);
	if (sl->qp.sqp == NULL)
		return -(rte_errno != 0 ? rte_errno : EINVAL);
	if (srnic_query_qp(sl->qp.sqp, &qa, 0, &got) == 0) {
		cap.max_send_sge = got.max_send_sge < SVC_WQE_SGE_MAX ? got.max_send_sge :
				   SVC_WQE_SGE_MAX;
		cap.max_recv_sge = got.max_recv_sge < SVC_WQE_SGE_MAX ? got.max_recv_sge :
				   SVC_WQE_SGE_MAX;
		cap.max_inline_data = got.max_inline_data < SVC_WQE_INLINE_MAX ?
				      got.max_inline_data : SVC_WQE_INLINE_MAX;
	}
	sl->used = true;
	sl->qp.ring = idx;
	sl->qp.sq_size = cap.max_send_wr;
	sl->qp.rq_size = cap.max_recv_wr;
	sl->qp.sq_next = sl->qp.rq_next = 0;
	atomic_store(&sl->qp.err, false);
	sl->qp.ud = q->qp_type == IBV_QPT_UD;
	sl->qp.srq = srq != NULL ? q->srq : 0;
	if (srq != NULL)
		srq->srq.users++;
	sl->qp.src.o = o;
	sl->qp.src.handle = obj_handle(K_QP, sl, idx);
	srnic_qp_set_user(sl->qp.sqp, &sl->qp.src);
	sl->qp.pd = q->pd;
	sl->qp.scq = q->send_cq;
	sl->qp.rcq = q->recv_cq;
	pd->users++;
	scq->cq.users++;
	rcq->cq.users++;
	memset(&o->shm->qp[idx], 0, 4 * sizeof(struct svc_idx));
	dp_hi_raise(&o->eqp_hi, idx);
	atomic_store_explicit(&o->eqp[idx], &sl->qp, memory_order_release);
	atomic_fetch_add(&counts.qps, 1);
	rep->handle = obj_handle(K_QP, sl, idx);
	rep->ring = idx;
	rep->qp_num = srnic_qp_num(sl->qp.sqp);
	rep->sq_size = cap.max_send_wr;
	rep->rq_size = cap.max_recv_wr;
	rep->cap = cap;
	return 0;
}

/* ATTACH_MCAST / DETACH_MCAST of the session's QP handle, counted against
 * SRND_SESSION_MCAST_MAX: an attachment the session holds already is
 * srnic's to answer (0, as rxe), a new one past the cap ENOMEM. */
static int
mcast(struct srnd_objs *o, struct srnd_slot *sl, uint32_t qp, const union ibv_gid *gid,
      uint16_t lid, bool attach)
{
	unsigned int i;
	int rc;

	for (i = 0; i < o->nb_mc; i++)
		if (o->mc[i].qp == qp && memcmp(&o->mc[i].gid, gid, sizeof(*gid)) == 0)
			break;
	if (!attach) {
		rc = srnic_detach_mcast(sl->qp.sqp, gid, lid);
		if (rc == 0 && i < o->nb_mc)
			o->mc[i] = o->mc[--o->nb_mc];
		return rc;
	}
	if (i == o->nb_mc && o->nb_mc == SRND_SESSION_MCAST_MAX)
		return -ENOMEM;
	rc = srnic_attach_mcast(sl->qp.sqp, gid, lid);
	if (rc == 0 && i == o->nb_mc) {
		o->mc[i].qp = qp;
		o->mc[i].gid = *gid;
		o->nb_mc++;
	}
	return rc;
}

/* MODIFY_QP to RESET: the WRs outstanding are dropped, as verbs' RESET
 * does, the rings' too: out of the engine's sight (a quiesce), srnic's QP
 * to RESET, then the rings' WQEs the daemon never took count as done
 * (sq_comp, rq_tail at their heads; an SRQ's are the SRQ's) and the QP's
 * failure forgotten (a later ERR flushes only what is posted after) */
static int
reset_qp(struct srnd *d, struct srnd_objs *o, struct srnd_qp *q, struct ibv_qp_attr *a, int mask)
{
	struct svc_qp_ring *qr = &o->shm->qp[q->ring];
	bool seen = atomic_load(&o->eqp[q->ring]) != NULL;
	int rc;

	if (seen) {
		atomic_store_explicit(&o->eqp[q->ring], NULL, memory_order_release);
		srnd_engine_quiesce(d);
	}
	rc = srnic_modify_qp(q->sqp, a, mask);
	if (rc == 0) {
		q->sq_next = __atomic_load_n(&qr->sq_head.v, __ATOMIC_ACQUIRE);
		__atomic_store_n(&qr->sq_comp.v, q->sq_next, __ATOMIC_RELEASE);
		if (q->srq == 0) {
			q->rq_next = __atomic_load_n(&qr->rq_head.v, __ATOMIC_ACQUIRE);
			__atomic_store_n(&qr->rq_tail.v, q->rq_next, __ATOMIC_RELEASE);
		}
		q->sq_bad = q->rq_bad = q->flush_ready = false;
		q->err_told = false;
		atomic_store(&q->err, false);
	}
	/* (release: the engine sees the QP as left here) */
	if (seen)
		atomic_store_explicit(&o->eqp[q->ring], q, memory_order_release);
	return rc;
}

static int
destroy_qp(struct srnd *d, struct srnd_objs *o, struct srnd_slot *sl)
{
	struct srnd_slot *c;
	struct srnd_pd *pd;
	int rc;

	bool seen = atomic_load(&o->eqp[sl->qp.ring]) != NULL;

	/* out of the engine's sight first (a reclaim has done it already) */
	if (seen) {
		atomic_store_explicit(&o->eqp[sl->qp.ring], NULL, memory_order_release);
		srnd_engine_quiesce(d);
	}
	rc = srnic_destroy_qp(sl->qp.sqp);
	if (rc < 0) {
		if (seen)
			atomic_store_explicit(&o->eqp[sl->qp.ring], &sl->qp, memory_order_release);
		return rc;
	}
	if (pd_of(o, sl->qp.pd, &pd) == 0)
		pd->users--;
	if ((c = obj_get(o, K_CQ, sl->qp.scq)) != NULL)
		c->cq.users--;
	if ((c = obj_get(o, K_CQ, sl->qp.rcq)) != NULL)
		c->cq.users--;
	if ((c = obj_get(o, K_SRQ, sl->qp.srq)) != NULL)
		c->srq.users--;
	sl->used = false;
	atomic_fetch_sub(&counts.qps, 1);
	return 0;
}

/* An AH, SRQ or window made, its fields set (an AH's or window's handle
 * first: dp_pub() checks it): the slot live, its PD's user and the
 * daemon's total counted, then published to the engine (release: it
 * finds the object whole). */
static void
slot_publish(struct srnd_slot *sl, struct srnd_pd *pd, uint64_t *count, void *_Atomic *pub,
	     void *obj)
{
	sl->used = true;
	pd->users++;
	(*count)++;
	atomic_store_explicit(pub, obj, memory_order_release);
}

static int
create_ah(struct srnd_objs *o, const struct svc_create_ah_req *q, struct svc_handle_rep *rep)
{
	struct ibv_ah_attr attr = q->attr;
	struct srnd_slot *sl;
	struct srnd_pd *pd;
	unsigned int idx;
	int rc;

	rc = pd_of(o, q->pd, &pd);
	if (rc != 0)
		return rc;
	sl = obj_new(o, K_AH, &idx);
	if (sl == NULL)
		return -ENOSPC;
	sl->ah.sah = srnic_create_ah(pd->spd, &attr);
	if (sl->ah.sah == NULL)
		return -(rte_errno != 0 ? rte_errno : EINVAL);
	sl->ah.pd = q->pd;
	sl->ah.handle = obj_handle(K_AH, sl, idx);
	slot_publish(sl, pd, &counts.ahs, &o->eah[idx], &sl->ah);
	rep->handle = sl->ah.handle;
	return 0;
}

/* Destroy an AH, an SRQ or a memory window the engine finds by its
 * published pointer: out of the engine's sight first (a pass waited out),
 * so a WQE it takes after finds none (the WRs srnic took before an AH's
 * end carry their own copy of the address; a bind srnic took before a
 * window's end fails IBV_WC_MW_BIND_ERR); published again if srnic
 * refuses. 0 or srnic's error. */
static int
obj_retire(struct srnd *d, struct srnd_objs *o, unsigned int kind, struct srnd_slot *sl)
{
	void *_Atomic *pub = kind == K_AH ? &o->eah[sl - o->ah] :
			     kind == K_SRQ ? &o->esrq[sl - o->srq] : &o->emw[sl - o->mw];
	void *seen = atomic_load(pub);
	struct srnd_pd *pd;
	int rc;

	if (seen != NULL) {
		atomic_store_explicit(pub, NULL, memory_order_release);
		srnd_engine_quiesce(d);
	}
	rc = kind == K_AH ? srnic_destroy_ah(sl->ah.sah) :
	     kind == K_SRQ ? srnic_destroy_srq(sl->srq.ssrq) : srnic_dealloc_mw(sl->mw.smw);
	if (rc < 0) {
		atomic_store_explicit(pub, seen, memory_order_release);
		return rc;
	}
	if (pd_of(o, kind == K_AH ? sl->ah.pd : kind == K_SRQ ? sl->srq.pd : sl->mw.pd, &pd) == 0)
		pd->users--;
	sl->used = false;
	if (kind == K_AH)
		counts.ahs--;
	else if (kind == K_SRQ)
		counts.srqs--;
	else
		counts.mws--;
	return 0;
}

/* ALLOC_MW: a window on the session's PD, published for its binds */
static int
alloc_mw(struct srnd_objs *o, const struct svc_alloc_mw_req *q, struct svc_alloc_mw_rep *rep)
{
	struct srnd_slot *sl;
	struct srnd_pd *pd;
	unsigned int idx;
	int rc;

	rc = pd_of(o, q->pd, &pd);
	if (rc != 0)
		return rc;
	if (q->type != IBV_MW_TYPE_1 && q->type != IBV_MW_TYPE_2)
		return -EINVAL;
	sl = obj_new(o, K_MW, &idx);
	if (sl == NULL)
		return -ENOSPC;
	sl->mw.smw = srnic_alloc_mw(pd->spd, (enum ibv_mw_type)q->type);
	if (sl->mw.smw == NULL)
		return -(rte_errno != 0 ? rte_errno : ENOMEM);
	sl->mw.pd = q->pd;
	sl->mw.handle = obj_handle(K_MW, sl, idx);
	slot_publish(sl, pd, &counts.mws, &o->emw[idx], &sl->mw);
	rep->handle = sl->mw.handle;
	rep->rkey = srnic_mw_rkey(sl->mw.smw);
	return 0;
}

static int
create_srq(struct srnd_objs *o, const struct svc_create_srq_req *q,
	   struct svc_create_srq_rep *rep)
{
	struct ibv_srq_init_attr ia;
	struct srnd_slot *sl;
	struct srnd_pd *pd;
	unsigned int idx;
	uint32_t size;
	int rc;

	rc = pd_of(o, q->pd, &pd);
	if (rc != 0)
		return rc;
	if (q->max_wr < 1 || q->max_wr > SVC_RING_SRQ_WR_MAX || q->max_sge > SVC_WQE_SGE_MAX)
		return -EINVAL;
	size = pow2_at_least(q->max_wr);
	if (q->srq_limit > size)
		return -EINVAL;
	sl = obj_new(o, K_SRQ, &idx);
	if (sl == NULL)
		return -ENOSPC;
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = size;
	ia.attr.max_sge = q->max_sge;
	ia.attr.srq_limit = q->srq_limit;
	sl->srq.ssrq = srnic_create_srq(pd->spd, &ia, pd->dv->eng);
	if (sl->srq.ssrq == NULL)
		return -(rte_errno != 0 ? rte_errno : EINVAL);
	sl->srq.ring = idx;
	sl->srq.size = size;
	sl->srq.next = 0;
	sl->srq.pd = q->pd;
	atomic_store(&sl->srq.err, false);
	sl->srq.src.o = o;
	sl->srq.src.handle = obj_handle(K_SRQ, sl, idx);
	srnic_srq_set_user(sl->srq.ssrq, &sl->srq.src);
	memset(&o->shm->srq[idx], 0, offsetof(struct svc_srq_ring, rq));
	dp_hi_raise(&o->esrq_hi, idx);
	slot_publish(sl, pd, &counts.srqs, &o->esrq[idx], &sl->srq);
	rep->handle = sl->srq.src.handle;
	rep->ring = idx;
	rep->size = size;
	rep->max_sge = ia.attr.max_sge < SVC_WQE_SGE_MAX ? ia.attr.max_sge : SVC_WQE_SGE_MAX;
	rep->srq_num = srnic_srq_num(sl->srq.ssrq);
	rep->offset = offsetof(struct svc_shm, srq) + idx * sizeof(struct svc_srq_ring);
	return 0;
}

static int
destroy_srq(struct srnd *d, struct srnd_objs *o, struct srnd_slot *sl)
{
	if (sl->srq.users != 0)
		return -EBUSY;  /* as rxe: the QPs on it first */
	return obj_retire(d, o, K_SRQ, sl);
}

static int
serve_srq(struct srnd *d, struct srnd_objs *o, const void *msg, union srnd_rep *rep)
{
	const struct svc_handle_req *q = msg;
	struct srnd_slot *sl = obj_get(o, K_SRQ, q->handle);
	struct ibv_srq_attr a;
	int rc;

	if (sl == NULL)
		return -EBADF;
	switch (q->h.type) {
	case SVC_MODIFY_SRQ: {
		const struct svc_modify_srq_req *m = msg;

		/* the limit only: the ring is made once (as mlx5's SRQs) */
		if ((m->mask & ~IBV_SRQ_LIMIT) != 0)
			return -EINVAL;
		a = m->attr;
		if (a.srq_limit > sl->srq.size)
			return -EINVAL;
		return srnic_modify_srq(sl->srq.ssrq, &a, m->mask);
	}
	case SVC_QUERY_SRQ:
		rc = srnic_query_srq(sl->srq.ssrq, &rep->query_srq.attr);
		rep->query_srq.attr.max_wr = sl->srq.size;
		return rc;
	default:
		return destroy_srq(d, o, sl);
	}
}

struct srnd_objs *
srnd_objs_new(void)
{
	struct srnd_objs *o = calloc(1, sizeof(*o));

	if (o == NULL)
		return NULL;
	o->shm_fd = -1;
	o->async_fd = -1;
	o->live = -1;
	o->gen = 1;
	return o;
}

void
srnd_objs_set_devices(struct srnd_objs *o, uint32_t mask)
{
	atomic_store(&o->devices, mask);
}

int
srnd_objs_serve(struct srnd *d, struct srnd_dev *dv, struct srnd_objs *o, const void *msg,
		union srnd_rep *rep, int *rx_fd, int *tx_fd)
{
	struct svc_hdr h;
	struct srnd_slot *sl;
	struct srnd_pd *pd;
	unsigned int idx;
	int rc;

	memcpy(&h, msg, sizeof(h));
	if (h.type != SVC_MAP_SHM && o->shm == NULL)
		return -EPERM;      /* the rings first: MAP_SHM */
	switch (h.type) {
	case SVC_MAP_SHM:
		rc = shm_map(o, rx_fd, &tx_fd[1]);
		if (rc == 0) {
			rep->shm.size = sizeof(struct svc_shm);
			tx_fd[0] = o->shm_fd;
		}
		return rc;
	case SVC_ALLOC_PD:
		sl = obj_new(o, K_PD, &idx);
		if (sl == NULL)
			return -ENOSPC;
		sl->pd.spd = srnic_alloc_pd(dv->sdev);
		if (sl->pd.spd == NULL)
			return -(rte_errno != 0 ? rte_errno : ENOMEM);
		sl->pd.dv = dv;
		sl->used = true;
		counts.pds++;
		rep->handle.handle = obj_handle(K_PD, sl, idx);
		return 0;
	case SVC_DEALLOC_PD: {
		const struct svc_handle_req *q = msg;

		sl = obj_get(o, K_PD, q->handle);
		if (sl == NULL)
			return -EBADF;
		if (sl->pd.users != 0)
			return -EBUSY;
		rc = srnic_dealloc_pd(sl->pd.spd);
		if (rc < 0)
			return rc;
		sl->used = false;
		counts.pds--;
		return 0;
	}
	case SVC_REG_MR:
	case SVC_REG_MR_AT:
		rc = reg_mr(d, o, msg, h.type == SVC_REG_MR_AT ?
			    ((const struct svc_reg_mr_at_req *)msg)->offset : 0, *rx_fd,
			    &rep->reg_mr);
		if (*rx_fd >= 0)
			close(*rx_fd);  /* mapped, or refused: the daemon keeps no descriptor */
		*rx_fd = -1;
		return rc;
	case SVC_REREG_MR:
		rc = rereg_mr(o, msg, *rx_fd, &rep->reg_mr);
		if (*rx_fd >= 0)
			close(*rx_fd);  /* mapped, or refused: as REG_MR's */
		*rx_fd = -1;
		return rc;
	case SVC_DEREG_MR: {
		const struct svc_handle_req *q = msg;

		sl = obj_get(o, K_MR, q->handle);
		return sl == NULL ? -EBADF : dereg_mr(o, sl);
	}
	case SVC_CREATE_CQ:
		return create_cq(dv, o, msg, &rep->create_cq);
	case SVC_DESTROY_CQ: {
		const struct svc_handle_req *q = msg;

		sl = obj_get(o, K_CQ, q->handle);
		return sl == NULL ? -EBADF : destroy_cq(d, o, sl);
	}
	case SVC_CREATE_QP:
		return create_qp(o, msg, &rep->create_qp);
	case SVC_CREATE_CHANNEL:
		if (fd_refuse(o, rx_fd, "CREATE_CHANNEL") != 0)
			return -EINVAL;
		sl = obj_new(o, K_CH, &idx);
		if (sl == NULL)
			return -ENOSPC;
		rc = ev_pipe(&tx_fd[1], &sl->ch.fd);    /* the write end the engine's */
		if (rc != 0)
			return rc;
		sl->ch.dv = dv;
		sl->used = true;
		rep->handle.handle = obj_handle(K_CH, sl, idx);
		return 0;
	case SVC_DESTROY_CHANNEL: {
		const struct svc_handle_req *q = msg;

		sl = obj_get(o, K_CH, q->handle);
		if (sl == NULL)
			return -EBADF;
		if (sl->ch.users != 0)
			return -EBUSY;
		close(sl->ch.fd);
		sl->used = false;
		return 0;
	}
	case SVC_MODIFY_QP: {
		const struct svc_modify_qp_req *q = msg;
		struct ibv_qp_attr a = q->attr;

		sl = obj_get(o, K_QP, q->handle);
		if (sl == NULL)
			return -EBADF;
		if ((q->mask & IBV_QP_STATE) && a.qp_state == IBV_QPS_RESET)
			return reset_qp(d, o, &sl->qp, &a, q->mask);
		return srnic_modify_qp(sl->qp.sqp, &a, q->mask);
	}
	case SVC_QUERY_QP: {
		const struct svc_query_qp_req *q = msg;
		struct srnic_qp_init_attr got;

		sl = obj_get(o, K_QP, q->handle);
		if (sl == NULL)
			return -EBADF;
		memset(&got, 0, sizeof(got));
		rc = srnic_query_qp(sl->qp.sqp, &rep->query_qp.attr, q->mask, &got);
		if (rc < 0)
			return rc;
		rep->query_qp.cap.max_send_wr = sl->qp.sq_size;
		rep->query_qp.cap.max_recv_wr = sl->qp.rq_size;
		rep->query_qp.cap.max_send_sge = RTE_MIN(got.max_send_sge, SVC_WQE_SGE_MAX);
		rep->query_qp.cap.max_recv_sge = RTE_MIN(got.max_recv_sge, SVC_WQE_SGE_MAX);
		rep->query_qp.cap.max_inline_data = RTE_MIN(got.max_inline_data,
							    SVC_WQE_INLINE_MAX);
		rep->query_qp.sq_sig_all = (uint32_t)got.sq_sig_all;
		rep->query_qp.attr.cap.max_send_wr = sl->qp.sq_size;
		rep->query_qp.attr.cap.max_recv_wr = sl->qp.rq_size;
		return 0;
	}
	case SVC_DESTROY_QP: {
		const struct svc_handle_req *q = msg;

		sl = obj_get(o, K_QP, q->handle);
		return sl == NULL ? -EBADF : destroy_qp(d, o, sl);
	}
	case SVC_ATTACH_MCAST:
	case SVC_DETACH_MCAST: {
		const struct svc_mcast_req *q = msg;

		sl = obj_get(o, K_QP, q->qp);
		if (sl == NULL)
			return -EBADF;
		return mcast(o, sl, q->qp, &q->gid, q->lid, h.type == SVC_ATTACH_MCAST);
	}
	case SVC_CREATE_AH:
		return create_ah(o, msg, &rep->handle);
	case SVC_CREATE_SRQ:
		return create_srq(o, msg, &rep->create_srq);
	case SVC_MODIFY_SRQ:
	case SVC_QUERY_SRQ:
	case SVC_DESTROY_SRQ:
		return serve_srq(d, o, msg, rep);
	case SVC_DESTROY_AH: {
		const struct svc_handle_req *q = msg;

		sl = obj_get(o, K_AH, q->handle);
		return sl == NULL ? -EBADF : obj_retire(d, o, K_AH, sl);
	}
	case SVC_ALLOC_MW:
		return alloc_mw(o, msg, &rep->alloc_mw);
	case SVC_DEALLOC_MW: {
		const struct svc_handle_req *q = msg;

		/* not a window of the session: EINVAL, as rxe answers a
		 * window it does not know */
		sl = obj_get(o, K_MW, q->handle);
		return sl == NULL ? -EINVAL : obj_retire(d, o, K_MW, sl);
	}
	}
	(void)pd;
	return -EINVAL;
}

/* A session's notification pipes closed at its end, once its rings are
 * out of the engine's sight (a quiesce: no pass fires its CQs): each
 * reader (a thread in ibv_get_cq_event() or ibv_get_async_event(), a
 * process it shares them with) sees the end of file now, not after the
 * MR waits, which take seconds while a peer holds packets in flight.
 * Every write end -1 from here: a wake is ev_wake(-1), nothing; an async
 * event dropped and counted (ev_push()). */
static void
pipes_close(struct srnd_objs *o)
{
	unsigned int i;

	for (i = 0; i < SVC_SESSION_CHANNELS_MAX; i++) {
		if (o->ch[i].used && o->ch[i].ch.fd >= 0) {
			close(o->ch[i].ch.fd);
			o->ch[i].ch.fd = -1;
		}
	}
	for (i = 0; i < SVC_SESSION_CQS_MAX; i++)
		if (o->cq[i].used)
			o->cq[i].cq.ev_fd = -1;
	if (o->async_fd >= 0)
		close(o->async_fd);
	o->async_fd = -1;
}

/* A session's end (doc/srnicd.md, section 8): its rings out of the
 * engine's sight, its pipes closed, its QPs to ERR and destroyed, then its
 * CQs, MRs (once no mbuf refers to them) and PDs, its ring memory
 * unmapped. */
void
srnd_objs_reclaim(struct srnd *d, struct srnd_objs *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	unsigned int i, k;

	if (o == NULL)
		return;
	if (o->live >= 0)
		atomic_store(&dp_live[o->live], NULL);
	for (i = 0; i < SVC_SESSION_QPS_MAX; i++)
		atomic_store(&o->eqp[i], NULL);
	for (i = 0; i < SVC_SESSION_CQS_MAX; i++)
		atomic_store(&o->ecq[i], NULL);
	for (i = 0; i < SVC_SESSION_AHS_MAX; i++)
		atomic_store(&o->eah[i], NULL);
	for (i = 0; i < SVC_SESSION_SRQS_MAX; i++)
		atomic_store(&o->esrq[i], NULL);
	for (i = 0; i < SVC_SESSION_MWS_MAX; i++)
		atomic_store(&o->emw[i], NULL);
	srnd_engine_quiesce(d);
	pipes_close(o);
	for (i = 0; i < SVC_SESSION_QPS_MAX; i++) {
		if (o->qp[i].used) {
			srnic_modify_qp(o->qp[i].qp.sqp, &a, IBV_QP_STATE);
			/* its groups first, as uverbs at a process's end */
			srnic_detach_mcast_all(o->qp[i].qp.sqp);
			o->nb_mc = 0;
			if (destroy_qp(d, o, &o->qp[i]) != 0)
				srnd_log("reclaim: a QP could not be destroyed");
		}
	}
	for (i = 0; i < SVC_SESSION_SRQS_MAX; i++)
		if (o->srq[i].used && destroy_srq(d, o, &o->srq[i]) != 0)
			srnd_log("reclaim: an SRQ could not be destroyed");
	for (i = 0; i < SVC_SESSION_AHS_MAX; i++)
		if (o->ah[i].used && obj_retire(d, o, K_AH, &o->ah[i]) != 0)
			srnd_log("reclaim: an AH could not be destroyed");
	for (i = 0; i < SVC_SESSION_CQS_MAX; i++)
		if (o->cq[i].used && destroy_cq(d, o, &o->cq[i]) != 0)
			srnd_log("reclaim: a CQ could not be destroyed");
	/* windows before MRs: a bound one keeps its MR registered */
	for (i = 0; i < SVC_SESSION_MWS_MAX; i++)
		if (o->mw[i].used && obj_retire(d, o, K_MW, &o->mw[i]) != 0)
			srnd_log("reclaim: a memory window could not be freed");
	/* its rereg's old ranges: one wait each, then the daemon's */
	retired_sweep(o, SRND_DEREG_TIMEOUT_US, true);
	for (i = 0; i < SVC_SESSION_MRS_MAX; i++) {
		struct srnd_mr *m = &o->mr[i].mr;
		struct srnd_pd *pd;
		int rc = 0;

		/* a wait again only while packets are out (-EBUSY) */
		if (o->mr[i].used && reclaim_refuses(m))
			rc = -EINVAL;
		else
			for (k = 0; o->mr[i].used && k < SRND_RECLAIM_DEREG_TRIES; k++)
				if ((rc = dereg_mr(o, &o->mr[i])) != -EBUSY)
					break;
		if (!o->mr[i].used)
			continue;
		if (rc == -EBUSY) {
			/* deregistered, its packets still out: the sweep releases it */
			srnd_log("reclaim: an MR still has packets in flight: unmapped when they "
				 "are back");
			mr_retire_in(m->note, NULL, m->smr, m->base, m->maplen, false);
		} else {
			/* refused (a window still bound, which none should be
			 * by now): a bug; srnic
			 * may still use the range, so it stays registered and
			 * mapped for good rather than be retried for ever,
			 * pinned so that no retired sharer unmaps it */
			counts.mrs_dereg_failed++;
			srnd_log("reclaim: BUG: an MR's dereg failed (%s): left registered and "
				 "mapped (mrs_dereg_failed)", strerror(-rc));
			mr_retire_in(m->note, NULL, m->smr, m->base, m->maplen, true);
		}
		m->note = NULL;
		if (pd_of(o, m->pd, &pd) == 0)
			pd->users--;
		counts.mrs--;
		o->mr[i].used = false;
	}
	for (i = 0; i < SVC_SESSION_PDS_MAX; i++) {
		struct srnd_orphan_pd *op;

		if (!o->pd[i].used)
			continue;
		if (srnic_dealloc_pd(o->pd[i].pd.spd) == 0) {
			counts.pds--;
		} else if ((op = malloc(sizeof(*op))) != NULL) {
			/* a retired MR holds it: the sweep deallocates it after */
			*op = (struct srnd_orphan_pd){ .next = orphan_pds, .spd = o->pd[i].pd.spd };
			orphan_pds = op;
		} else {
			srnd_log("reclaim: a PD could not be deallocated");
		}
		o->pd[i].used = false;
	}
	if (o->shm != NULL) {
		munmap(o->shm, sizeof(struct svc_shm));
		close(o->shm_fd);
		counts.shm_bytes -= sizeof(struct svc_shm);
	}
	free(o);
}

void
srnd_objs_hide(struct srnd_objs *o)
{
	if (o != NULL && o->live >= 0)
		atomic_store(&dp_live[o->live], NULL);
}

void
srnd_objs_fatal(struct srnd_objs *o)
{
	unsigned int i;

	if (o == NULL || o->shm == NULL)
		return;
	__atomic_store_n(&o->shm->state.v, SVC_SHM_FATAL, __ATOMIC_RELEASE);
	for (i = 0; i < SVC_SESSION_CHANNELS_MAX; i++)
		if (o->ch[i].used)
			ev_wake(o->ch[i].ch.fd);
	/* a waiter in ibv_get_async_event wakes to IBV_EVENT_DEVICE_FATAL */
	ev_wake(o->async_fd);
}

/* One event into the session's async ring, then its pipe (the control
 * thread's: the one writer of the ring's prod). */
static void
ev_push(struct srnd_objs *o, uint32_t type, uint32_t handle)
{
	struct svc_ev_ring *r;
	uint32_t cons;

	if (o->async_fd < 0) {
		/* its session ending (pipes_close()): no one to read it */
		counts.async_drop++;
		return;
	}
	r = &o->shm->async;
	cons = __atomic_load_n(&r->cons.v, __ATOMIC_ACQUIRE);
	if (o->ev_prod - cons >= SVC_ASYNC_RING) {
		/* not taken (or a cons the daemon never gave): dropped */
		counts.async_drop++;
		return;
	}
	r->ev[o->ev_prod & (SVC_ASYNC_RING - 1)] = (struct svc_async_ev){ type, handle };
	__atomic_store_n(&r->prod.v, ++o->ev_prod, __ATOMIC_RELEASE);
	ev_wake(o->async_fd);       /* not taken: the pipe is readable already, or unread */
	counts.async_events++;
}

/* The devices o's objects are of (bit i, dev[i]): its PDs' (every SRQ,
 * MR, AH, window and QP is a PD's) and its CQs' (the control thread's) */
static uint32_t
objs_devices(const struct srnd_objs *o)
{
	uint32_t mask = 0;
	unsigned int i;

	for (i = 0; i < SVC_SESSION_PDS_MAX; i++)
		if (o->pd[i].used && o->pd[i].pd.dv != NULL)
			mask |= 1u << o->pd[i].pd.dv->idx;
	for (i = 0; i < SVC_SESSION_CQS_MAX; i++)
		if (o->cq[i].used && o->cq[i].cq.dv != NULL)
			mask |= 1u << o->cq[i].cq.dv->idx;
	return mask;
}

void
srnd_objs_async(const struct srnd_dev *dv, const struct srnic_async_event *ev)
{
	const struct srnd_evsrc *src = ev->user;
	struct srnd_objs *o;
	unsigned int i;

	if (ev->event_type == IBV_EVENT_PORT_ACTIVE || ev->event_type == IBV_EVENT_PORT_ERR) {
		/* the port's: every session holding its device open, or
		 * objects of it (its handle closed, they still work) */
		for (i = 0; i < SRND_SESSIONS_MAX; i++) {
			o = atomic_load(&dp_live[i]);
			if (o != NULL && ((atomic_load(&o->devices) | objs_devices(o)) &
					  (1u << dv->idx)) != 0)
				ev_push(o, ev->event_type, ev->port_num);
		}
		return;
	}
	/* an object's: its session's (none for the daemon's own QP1, nor for
	 * an object destroyed since: srnic gives no pointer then) */
	if (src != NULL)
		ev_push(src->o, ev->event_type, src->handle);
}

void
srnd_objs_watch(void)
{
	struct srnd_objs *o;
	unsigned int i, k;

	retired_sweep(NULL, 0, false);
	orphan_pd_sweep();
	/* an SRQ the engine found in error, a QP it failed (a bad index or
	 * WQE in its rings: IBV_EVENT_QP_FATAL, as a kernel provider reports
	 * a QP its device failed): its session told once */
	for (i = 0; i < SRND_SESSIONS_MAX; i++) {
		o = atomic_load(&dp_live[i]);
		for (k = 0; o != NULL && k < SVC_SESSION_QPS_MAX; k++) {
			struct srnd_qp *q = &o->qp[k].qp;

			if (o->qp[k].used && atomic_load(&q->err) && !q->err_told) {
				q->err_told = true;
				ev_push(o, IBV_EVENT_QP_FATAL, q->src.handle);
			}
		}
		for (k = 0; o != NULL && k < SVC_SESSION_SRQS_MAX; k++) {
			struct srnd_srq *s = &o->srq[k].srq;

			if (o->srq[k].used && atomic_load(&s->err) && !s->err_told) {
				s->err_told = true;
				ev_push(o, IBV_EVENT_SRQ_ERR, s->src.handle);
			}
		}
	}
}

unsigned int
srnd_objs_held(const struct srnd_objs *o, unsigned int *qps, unsigned int *mrs, uint64_t *wqes)
{
	unsigned int i, n = 0;

	*qps = *mrs = 0;
	*wqes = 0;
	if (o == NULL)
		return 0;
	*wqes = atomic_load_explicit(&o->wqes, memory_order_relaxed);
	for (i = 0; i < SVC_SESSION_QPS_MAX; i++)
		*qps += o->qp[i].used;
	for (i = 0; i < SVC_SESSION_MRS_MAX; i++)
		*mrs += o->mr[i].used;
	for (i = 0; i < SVC_SESSION_PDS_MAX; i++)
		n += o->pd[i].used;
	for (i = 0; i < SVC_SESSION_CQS_MAX; i++)
		n += o->cq[i].used;
	for (i = 0; i < SVC_SESSION_AHS_MAX; i++)
		n += o->ah[i].used;
	for (i = 0; i < SVC_SESSION_SRQS_MAX; i++)
		n += o->srq[i].used;
	for (i = 0; i < SVC_SESSION_MWS_MAX; i++)
		n += o->mw[i].used;
	return n + *qps + *mrs;
}

int
srnd_objs_qp_by_num(struct srnd_objs *o, const struct srnd_dev *dv, uint32_t qpn,
		    enum ibv_qp_type *type, enum ibv_qp_state *state)
{
	struct srnic_qp_init_attr ia;
	struct ibv_qp_attr qa;
	struct srnd_pd *pd;
	unsigned int i;

	/* the session's own table only: another session's QP, a destroyed
	 * one and QP1 are no QP of it; nor is its QP of another device
	 * (each device numbers its QPs from the same first QPN) */
	for (i = 0; o != NULL && i < SVC_SESSION_QPS_MAX; i++) {
		const struct srnd_slot *sl = &o->qp[i];

		if (!sl->used || srnic_qp_num(sl->qp.sqp) != qpn ||
		    pd_of(o, sl->qp.pd, &pd) != 0 || pd->dv != dv)
			continue;
		if (srnic_query_qp(sl->qp.sqp, &qa, IBV_QP_STATE, &ia) != 0)
			return -EINVAL;
		*type = ia.qp_type;
		*state = qa.qp_state;
		return 0;
	}
	return -EINVAL;
}
