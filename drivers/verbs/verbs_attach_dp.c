/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attached data path (doc/srnicd.md, sections 4 and 5): PDs, MRs, CQs
 * and QPs made by the daemon on control messages, and posts and polls
 * with no system call: a send or receive WQE is written into the QP's
 * ring in the session's shared memory, its head stored (release), then
 * the session's doorbell counter; a poll reads the CQ ring up to the
 * daemon's prod and stores its cons. A registered range of private
 * anonymous memory is re-backed by the process's memfd, which the daemon
 * maps too (verbs_attach_mem.c; no copy on the data path, READ responses
 * zero-copy).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "srnic_svc.h"
#include "verbs.h"
#include "verbs_attach.h"

struct sva_pd {
	struct ibv_pd ibpd;
	uint32_t handle;
};

struct sva_mr {
	struct ibv_mr ibmr;
	uint32_t handle;
	uintptr_t base, end;        /* its pages, counted in verbs_attach_mem.c's table */
	bool backed;                /* false: a fork()ed child's copy, counting none */
	struct sva_mr *next;        /* the context's MRs, under sva_objs_lock */
};

struct sva_cq {
	SV_CQ_HEAD;                 /* ibv_create_cq_ex()'s state (verbs_ex.c) */
	uint32_t handle;
	pthread_spinlock_t lock;    /* pollers of this CQ */
	struct svc_cq_ring *ring;
	uint32_t size, cons;
	uint32_t arm_seq;           /* under lock */
	uint32_t ev_seen;           /* under its channel's lock */
	struct sva_qp *last;        /* under lock: the QP of the last CQE */
	bool fatal_ev;              /* under its channel's lock: the session's end told */
	uint32_t events_reported;   /* async events handed out (ibcq.mutex) */
};

/* A completion channel: the read end of the daemon's pipe (a byte per
 * event; the write end is the daemon's alone) and its CQs, whose rings
 * count their events (svc_cq_ring.ev). */
struct sva_channel {
	struct ibv_comp_channel ch;
	uint32_t handle;
	pthread_mutex_t lock;
	struct sva_cq *cq[SVC_SESSION_CQS_MAX];
};

/* A WQE as the library remembers it until its CQE: at the session's end
 * the ones with none are flushed (IBV_WC_WR_FLUSH_ERR) by the library,
 * the daemon being gone. */
struct sva_shadow {
	uint64_t wr_id;
	uint8_t signaled;
	uint8_t wc_opcode;          /* enum ibv_wc_opcode */
};

/* Outstanding WQEs: at most the ring's (not taken yet) and srnic's queue
 * of the same size (taken, not completed) */
#define SVA_SHADOW_RINGS 2
/* An SRQ's: the ring's, srnic's SRQ of the same size, and one in each of
 * its QPs' hands, whose CQEs may come after later ones of other QPs: room
 * for twice that before a slot comes round again */
#define SVA_SRQ_SHADOW_RINGS 4

/* An SRQ's WQE as the library remembers it until a CQE of one of its QPs
 * names its wr_id (any of their receive CQs' pollers: taken by a CAS, no
 * lock), for the session's end to flush the rest. */
enum { SVA_SH_FREE, SVA_SH_POSTED, SVA_SH_DONE };
struct sva_srq_shadow {
	uint64_t wr_id;
	uint32_t state;             /* SVA_SH_*: the poster's POSTED, a poller's DONE */
};

/* An SRQ: its ring in the session's memory, posted as an RQ is. */
struct sva_srq {
	struct ibv_srq ibsrq;
	uint32_t handle;
	struct svc_srq_ring *ring;
	pthread_spinlock_t lock;    /* posters */
	uint32_t size, head, max_sge, srq_num;
	uint32_t *db;
	uint32_t *sleep;            /* the state line's: the engine sleeps */
	uint32_t events_reported;   /* async events handed out (ibsrq.mutex) */
	/* by post index & (SVA_SRQ_SHADOW_RINGS * size - 1); sh_done: every
	 * WQE before it has had its CQE or its flush (moved by CAS) */
	struct sva_srq_shadow *sh;
	uint32_t sh_done;
};

/* A memory window: the daemon's handle, which a BIND_MW WQE names (the
 * daemon checks it is the session's). */
struct sva_mw {
	struct ibv_mw ibmw;
	uint32_t handle;
};

/* A UD address handle: the daemon's handle, which a UD WQE names. */
struct sva_ah {
	struct ibv_ah ibah;
	uint32_t handle;
};

struct sva_qp {
	SV_QP_HEAD;                 /* the ibv_wr_*() batch (verbs_ex.c) */
	uint32_t handle;
	struct svc_qp_ring *ring;
	pthread_spinlock_t sq_lock, rq_lock;
	uint32_t sq_size, rq_size, sq_head, rq_head;
	struct svc_qp_cap cap;
	uint32_t *db;
	uint32_t *sleep;            /* the state line's: the engine sleeps */
	const uint32_t *state;      /* the session's state line */
	bool sig_all;
	/* by index & (SVA_SHADOW_RINGS * size - 1): written by the posters;
	 * sq_done by the send CQ's pollers, rq_done by the receive CQ's */
	struct sva_shadow *sq_sh, *rq_sh;
	uint32_t sq_done, rq_done;
	uint32_t events_reported;   /* async events handed out (ibqp.mutex) */
};

/* An empty ibv_poll_cq() returns at once (the verb is non-blocking)
 * unless the thread runs on the CPU the daemon's engine last ran on
 * (svc_state_line.eng_cpu): there the CQE it waits for cannot come while
 * it polls, so it sleeps (not while the engine naps idle,
 * svc_state_line.sleep; during its short nap while QPs wait,
 * SVC_SLEEP_WAITING, after SVA_POLL_HOT empty polls in a row) until the
 * engine writes a CQE into one of the session's CQs
 * (svc_state_line.poll_sleep), at most SVA_POLL_SLEEP_US,
 * which bounds what a program polling anything else meanwhile (another
 * context's CQ, a socket) waits for it. A daemon that does not say where
 * its engine runs (eng_cpu 0) gets the old rule: a sleep at each empty
 * poll after SVA_POLL_HOT in a row. SRNIC_ATTACHED_POLL=spin never
 * sleeps, =sleep always follows the old rule (doc/srnicd.md, "A sleeping
 * poller"). */
#define SVA_POLL_HOT 64
#define SVA_POLL_SLEEP_US 100
/* bytes of a channel's pipe one read in ibv_get_cq_event takes: wakes
 * only (a CQ's events collapse into one), so any number will do */
#define SVA_CHANNEL_READ 64
#define SVA_POLL_ENV "SRNIC_ATTACHED_POLL"

enum sva_poll_mode { SVA_POLL_AUTO, SVA_POLL_SPIN, SVA_POLL_SLEEP };

static __thread uint32_t sva_empty_polls;   /* this thread's, in a row */
/* this thread posted a send WQE since its last poll that took a CQE: it
 * waits for the network (a hint: poll_should_sleep()) */
static __thread bool sva_sends_out;
static enum sva_poll_mode sva_poll_mode;
static pthread_once_t sva_poll_once = PTHREAD_ONCE_INIT;

static void
sva_poll_mode_init(void)
{
	const char *v = getenv(SVA_POLL_ENV);

	if (v == NULL || *v == '\0' || strcmp(v, "auto") == 0)
		sva_poll_mode = SVA_POLL_AUTO;
	else if (strcmp(v, "spin") == 0)
		sva_poll_mode = SVA_POLL_SPIN;
	else if (strcmp(v, "sleep") == 0)
		sva_poll_mode = SVA_POLL_SLEEP;
	else
		sv_log("%s=%s: unknown (auto, spin or sleep); auto used", SVA_POLL_ENV, v);
}

#define SVA_OF(type, p, member) ((type *)((char *)(p) - offsetof(type, member)))

static_assert(offsetof(struct sva_cq, ex) == offsetof(struct sv_cq_head, ex),
	      "an attached CQ begins with SV_CQ_HEAD");
static_assert(offsetof(struct sva_qp, wrs) == offsetof(struct sv_qp_head, wrs),
	      "an attached QP begins with SV_QP_HEAD");

/* A sleeping engine is woken once (svc_state_line): the doorbell's store
 * and then the load of sleep both seq_cst, the engine's the other way. */
static void __rte_noinline
engine_wake(uint32_t *sleep)
{
	__atomic_store_n(sleep, 0, __ATOMIC_RELAXED);
	syscall(SYS_futex, sleep, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* The session's doorbell: the engine looks at db once more after it stores
 * sleep = 1, so whatever was stored before this bump (a ring's head, a CQ's
 * arm) is seen before it naps, or its sleep is seen here and ended. */
static inline void
session_ring(uint32_t *db, uint32_t *sleep)
{
	__atomic_fetch_add(db, 1, __ATOMIC_SEQ_CST);
	if (unlikely(__atomic_load_n(sleep, __ATOMIC_SEQ_CST) != 0))
		engine_wake(sleep);
}

static void *
null_errno(int e)
{
	errno = e;
	return NULL;
}

static void
req_init(void *msg, uint16_t type)
{
	memset(msg, 0, svc_msg_size(type, 0));
	svc_msg_init(msg, type, 0, 0, 0);
}

/* A destroy: a request that names one handle and gets nothing back. 0
 * or an errno; 0 after the session's end, whose reclaim destroyed the
 * object (rdma-core's verbs_is_destroy_err() takes EIO as success). */
static int
call_destroy(struct sva_context *ctx, uint16_t type, uint32_t handle)
{
	struct svc_handle_req q;
	struct svc_handle_rep r;
	int rc;

	req_init(&q, type);
	q.handle = handle;
	rc = -sva_call_fd(ctx, &q, -1, &r, sizeof(r), NULL);
	return rc == EIO && sva_dead(ctx) ? 0 : rc;
}

static void sva_ctx_set_ops(struct sva_context *ctx);

/* ---- the session's rings ---- */

int
sva_dp_open(struct sva_context *ctx)
{
	struct svc_handle_req q;
	struct svc_shm_rep r;
	int fd[SVC_MSG_FDS_MAX], rc;
	void *p;

	if (ctx->minor < 3) {
		/* before 4.3 the library made the eventfds the daemon wrote */
		sv_log("srnicd on its socket speaks protocol %u.%u, this libibverbs.so.1 needs "
		       "%u.3 or later (the daemon's notification pipes): use the srnicd built "
		       "with this library", SVC_VERSION_MAJOR, ctx->minor, SVC_VERSION_MAJOR);
		return -EPROTONOSUPPORT;
	}
	pthread_mutex_init(&ctx->ev_lock, NULL);
	req_init(&q, SVC_MAP_SHM);
	q.handle = ctx->handle;
	/* the reply: the ring memory, then the async pipe's read end */
	rc = sva_call_fds(ctx, &q, -1, &r, sizeof(r), fd, SVC_MSG_FDS_MAX);
	if (rc != 0)
		goto fail;
	if (fd[0] < 0 || fd[1] < 0 || r.size != sizeof(struct svc_shm)) {
		sv_log("srnicd's ring memory is not this library's (%" PRIu64 " bytes, %zu here): "
		       "use the library built with that daemon", r.size, sizeof(struct svc_shm));
		rc = -EPROTO;
		goto fail_fds;
	}
	p = mmap(NULL, sizeof(struct svc_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd[0], 0);
	rc = -errno;
	if (p == MAP_FAILED)
		goto fail_fds;
	close(fd[0]);
	ctx->vctx.context.async_fd = fd[1];
	ctx->shm = p;
	sva_ctx_set_ops(ctx);
	return 0;
fail_fds:
	for (unsigned int i = 0; i < SVC_MSG_FDS_MAX; i++)
		if (fd[i] >= 0)
			close(fd[i]);
fail:
	pthread_mutex_destroy(&ctx->ev_lock);
	return rc;
}

void
sva_dp_close(struct sva_context *ctx)
{
	if (ctx->shm != NULL)
		munmap(ctx->shm, sizeof(struct svc_shm));
	ctx->shm = NULL;
	pthread_mutex_destroy(&ctx->ev_lock);
}

/* ---- async events ---- */

_Static_assert(SVA_EVOBJ_MAX >= SVC_SESSION_QPS_MAX + SVC_SESSION_CQS_MAX + SVC_SESSION_SRQS_MAX,
	       "a context's QPs, CQs and SRQs fit its event table");

/* An object events may name from now on. */
static void
evobj_add(struct sva_context *ctx, void *obj, uint32_t handle)
{
	unsigned int i;

	pthread_mutex_lock(&ctx->ev_lock);
	for (i = 0; i < SVA_EVOBJ_MAX; i++) {
		if (ctx->evobj[i].obj == NULL) {
			ctx->evobj[i].obj = obj;
			ctx->evobj[i].handle = handle;
			break;
		}
	}
	pthread_mutex_unlock(&ctx->ev_lock);
}

/* A destroyed object: no event names it after this, and its destroy
 * returns once the events handed out are acknowledged (rdma-core's
 * contract: events_completed reaches what was reported). */
static void
evobj_del(struct sva_context *ctx, void *obj, pthread_mutex_t *mu, pthread_cond_t *cond,
	  const uint32_t *completed, const uint32_t *reported)
{
	unsigned int i;

	pthread_mutex_lock(&ctx->ev_lock);
	for (i = 0; i < SVA_EVOBJ_MAX; i++)
		if (ctx->evobj[i].obj == obj)
			ctx->evobj[i].obj = NULL;
	pthread_mutex_unlock(&ctx->ev_lock);
	pthread_mutex_lock(mu);
	while (*completed != *reported)
		pthread_cond_wait(cond, mu);
	pthread_mutex_unlock(mu);
}

static void *
evobj_find(struct sva_context *ctx, uint32_t handle)
{
	unsigned int i;

	for (i = 0; i < SVA_EVOBJ_MAX; i++)
		if (ctx->evobj[i].obj != NULL && ctx->evobj[i].handle == handle)
			return ctx->evobj[i].obj;
	return NULL;
}

static bool
event_is_port(enum ibv_event_type t)
{
	return t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR ||
	       t == IBV_EVENT_LID_CHANGE || t == IBV_EVENT_PKEY_CHANGE ||
	       t == IBV_EVENT_SM_CHANGE || t == IBV_EVENT_CLIENT_REREGISTER ||
	       t == IBV_EVENT_GID_CHANGE || t == IBV_EVENT_DEVICE_FATAL;
}

/* The next event of the context's ring: a byte of the daemon's async pipe
 * (one per event it put in the ring: at most SVC_ASYNC_RING unread, never
 * a full pipe; blocking unless the program made the fd non-blocking, as
 * rdma-core), then the entry. An event naming an object destroyed since is
 * passed over. Once the session ended (verbs_attach_fatal.c; the daemon's
 * last byte, or its end of the pipe closed: end of file):
 * IBV_EVENT_DEVICE_FATAL once, then EIO, as the kernel's event file of a
 * disassociated device. */
int
sva_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sva_context *ctx = sva_ctx(context);
	struct svc_ev_ring *r = &ctx->shm->async;
	struct svc_async_ev e;
	uint8_t byte;
	ssize_t n;
	void *obj;

	for (;;) {
		if (sva_async_fatal(ctx, event))
			return 0;
		if (sva_dead(ctx)) {
			errno = EIO;
			return -1;
		}
		n = read(context->async_fd, &byte, sizeof(byte));
		if (n < 0)
			return -1;
		if (n == 0) {
			/* the daemon's end closed: only at the session's end */
			sva_ctx_fatal(ctx);
			continue;
		}
		pthread_mutex_lock(&ctx->ev_lock);
		if (ctx->ev_cons == __atomic_load_n(&r->prod.v, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&ctx->ev_lock);
			continue;
		}
		e = r->ev[ctx->ev_cons & (SVC_ASYNC_RING - 1)];
		__atomic_store_n(&r->cons.v, ++ctx->ev_cons, __ATOMIC_RELEASE);
		memset(event, 0, sizeof(*event));
		event->event_type = (enum ibv_event_type)e.type;
		if (event_is_port(event->event_type)) {
			event->element.port_num = (int)e.handle;
			pthread_mutex_unlock(&ctx->ev_lock);
			return 0;
		}
		obj = evobj_find(ctx, e.handle);
		if (obj == NULL) {
			pthread_mutex_unlock(&ctx->ev_lock);
			continue;
		}
		/* counted under ev_lock: a destroy that took the object out
		 * after this waits for this event's ack */
		if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED ||
		    event->event_type == IBV_EVENT_SRQ_ERR) {
			struct sva_srq *srq = obj;

			event->element.srq = &srq->ibsrq;
			pthread_mutex_lock(&srq->ibsrq.mutex);
			srq->events_reported++;
			pthread_mutex_unlock(&srq->ibsrq.mutex);
		} else if (event->event_type == IBV_EVENT_CQ_ERR) {
			struct sva_cq *cq = obj;

			event->element.cq = &cq->ibcq;
			pthread_mutex_lock(&cq->ibcq.mutex);
			cq->events_reported++;
			pthread_mutex_unlock(&cq->ibcq.mutex);
		} else {
			struct sva_qp *qp = obj;

			event->element.qp = &qp->ibqp;
			pthread_mutex_lock(&qp->ibqp.mutex);
			qp->events_reported++;
			pthread_mutex_unlock(&qp->ibqp.mutex);
		}
		pthread_mutex_unlock(&ctx->ev_lock);
		return 0;
	}
}

/* ---- PD ---- */

struct ibv_pd *
sva_alloc_pd(struct ibv_context *context)
{
	struct sva_context *ctx = sva_ctx(context);
	struct svc_handle_req q;
	struct svc_handle_rep r;
	struct sva_pd *pd;
	int rc;

	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return null_errno(ENOMEM);
	req_init(&q, SVC_ALLOC_PD);
	q.handle = ctx->handle;
	rc = sva_call_fd(ctx, &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		free(pd);
		return null_errno(-rc);
	}
	pd->handle = r.handle;
	pd->ibpd.context = context;
	pd->ibpd.handle = r.handle;
	return &pd->ibpd;
}

int
sva_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sva_pd *pd = SVA_OF(struct sva_pd, ibpd, ibpd);
	int rc = call_destroy(sva_ctx(ibpd->context), SVC_DEALLOC_PD, pd->handle);

	if (rc == 0)
		free(pd);
	return rc;
}

/* ---- MR: re-backed memory (verbs_attach_mem.c) ---- */

#define SVA_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)
#define SVA_ACCESS_IGNORED (IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB | \
			    IBV_ACCESS_RELAXED_ORDERING)

struct ibv_mr *
sva_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova, unsigned int access)
{
	struct sva_pd *pd = SVA_OF(struct sva_pd, ibpd, ibpd);
	struct sva_context *ctx = sva_ctx(ibpd->context);
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), base, end;
	struct svc_reg_mr_at_req q;
	struct svc_reg_mr_rep r;
	struct sva_mr *mr;
	int rc, fd;

	if (addr == NULL || length == 0 || (uintptr_t)addr + length < (uintptr_t)addr)
		return null_errno(EINVAL);
	if ((access & ~(SVA_ACCESS | SVA_ACCESS_IGNORED)) != 0) {
		sv_log("ibv_reg_mr: access %#x: srnicd's attached mode takes local/remote "
		       "read/write/atomic and MW bind only", access);
		return null_errno(EOPNOTSUPP);
	}
	base = (uintptr_t)addr & ~(pg - 1);
	end = ((uintptr_t)addr + length + pg - 1) & ~(pg - 1);
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return null_errno(ENOMEM);
	/* its pages re-backed, or counted once more where they are already */
	rc = sva_mem_acquire(base, end, &fd);
	if (rc != 0) {
		free(mr);
		return null_errno(rc);
	}
	mr->base = base;
	mr->end = end;
	mr->backed = true;
	req_init(&q, SVC_REG_MR_AT);
	q.mr.pd = pd->handle;
	q.mr.access = access & SVA_ACCESS;
	q.mr.addr = (uintptr_t)addr;
	q.mr.length = length;
	q.mr.iova = iova;
	q.offset = base;
	rc = sva_call_fd(ctx, &q, fd, &r, sizeof(r), NULL);
	if (rc != 0) {
		sva_mem_release(base, end);
		free(mr);
		return null_errno(-rc);
	}
	mr->handle = r.handle;
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.lkey = r.lkey;
	mr->ibmr.rkey = r.rkey;
	mr->ibmr.handle = r.handle;
	pthread_mutex_lock(&sva_objs_lock);
	mr->next = ctx->mrs;
	ctx->mrs = mr;
	pthread_mutex_unlock(&sva_objs_lock);
	return &mr->ibmr;
}

int
sva_dereg_mr(struct ibv_mr *ibmr)
{
	struct sva_mr *mr = SVA_OF(struct sva_mr, ibmr, ibmr);
	struct sva_context *ctx = sva_ctx(ibmr->context);
	struct sva_mr **pp;
	int rc;

	/* the daemon answers once no packet refers to the range and it has
	 * unmapped it */
	rc = call_destroy(ctx, SVC_DEREG_MR, mr->handle);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&sva_objs_lock);
	for (pp = &ctx->mrs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == mr) {
			*pp = mr->next;
			break;
		}
	}
	pthread_mutex_unlock(&sva_objs_lock);
	/* the daemon has unmapped its view: one MR fewer over the pages */
	if (mr->backed)
		sva_mem_release(mr->base, mr->end);
	free(mr);
	return 0;
}

/* A new range (IBV_REREG_MR_CHANGE_TRANSLATION) is re-backed as
 * ibv_reg_mr's and the old one's pages counted one MR fewer once the
 * daemon answers (it has then unmapped its view of them); a new PD or
 * access keeps the range. The daemon refuses an MR with windows bound
 * (EBUSY), as srnic does embedded. */
int
sva_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr, size_t length,
	     int access)
{
	struct sva_mr *mr = SVA_OF(struct sva_mr, ibmr, ibmr);
	bool xlate = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), base = 0, end = 0;
	struct svc_rereg_mr_req q;
	struct svc_reg_mr_rep r;
	int rc, fd = -1;

	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) &&
	    ((unsigned int)access & ~(SVA_ACCESS | SVA_ACCESS_IGNORED)) != 0) {
		errno = EOPNOTSUPP;     /* as sva_reg_mr() refuses those bits */
		return IBV_REREG_MR_ERR_CMD;
	}
	if (xlate && (uintptr_t)addr + length < (uintptr_t)addr) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	req_init(&q, SVC_REREG_MR);
	q.handle = mr->handle;
	q.flags = (uint32_t)flags;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		q.pd = SVA_OF(struct sva_pd, ibpd, ibpd)->handle;
	q.access = (uint32_t)access & SVA_ACCESS;
	if (xlate) {
		base = (uintptr_t)addr & ~(pg - 1);
		end = ((uintptr_t)addr + length + pg - 1) & ~(pg - 1);
		rc = sva_mem_acquire(base, end, &fd);
		if (rc != 0) {
			errno = rc;
			return IBV_REREG_MR_ERR_CMD;
		}
		q.addr = (uintptr_t)addr;
		q.length = length;
		q.offset = base;
	}
	rc = sva_call_fd(sva_ctx(ibmr->context), &q, fd, &r, sizeof(r), NULL);
	if (rc != 0) {
		if (xlate)
			sva_mem_release(base, end);
		errno = -rc;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (xlate) {
		if (mr->backed)
			sva_mem_release(mr->base, mr->end);
		mr->base = base;
		mr->end = end;
		mr->backed = true;
		ibmr->addr = addr;
		ibmr->length = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = ibpd;
	ibmr->lkey = r.lkey;
	ibmr->rkey = r.rkey;
	return 0;
}

/* ---- CQ ---- */

/* The QP a CQE names (the last one's, else the context's table), or NULL. */
static struct sva_qp *
cqe_qp(struct sva_cq *cq, uint32_t qp_num)
{
	struct sva_context *ctx = sva_ctx(cq->ibcq.context);
	struct sva_qp *qp;
	unsigned int i;

	if (likely(cq->last != NULL && cq->last->ibqp.qp_num == qp_num))
		return cq->last;
	for (i = 0; i < SVC_SESSION_QPS_MAX; i++) {
		qp = __atomic_load_n(&ctx->qp[i], __ATOMIC_ACQUIRE);
		if (qp != NULL && qp->ibqp.qp_num == qp_num) {
			cq->last = qp;
			return qp;
		}
	}
	return NULL;
}

/* sh_done past the SRQ's WQEs that are done, from i on (pollers of
 * several CQs at once: each step a CAS; a loser's view is taken again) */
static void
srq_sh_advance(struct sva_srq *srq, uint32_t head, uint32_t mask)
{
	uint32_t i = __atomic_load_n(&srq->sh_done, __ATOMIC_ACQUIRE);

	while (i != head &&
	       __atomic_load_n(&srq->sh[i & mask].state, __ATOMIC_ACQUIRE) == SVA_SH_DONE)
		if (__atomic_compare_exchange_n(&srq->sh_done, &i, i + 1, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			i++;
}

/* A receive CQE of a QP on an SRQ retires the oldest outstanding WQE of
 * its wr_id (srnic takes the SRQ's WQEs in order; CQEs of its several QPs
 * may come in another): almost always the one at sh_done. */
static void
srq_retire(struct sva_srq *srq, uint64_t wr_id)
{
	uint32_t head = __atomic_load_n(&srq->ring->head.v, __ATOMIC_ACQUIRE);
	uint32_t mask = SVA_SRQ_SHADOW_RINGS * srq->size - 1;
	uint32_t i = __atomic_load_n(&srq->sh_done, __ATOMIC_ACQUIRE);
	struct sva_srq_shadow *w;
	uint32_t posted;

	if (head - i > mask + 1)
		i = head - (mask + 1);
	for (; i != head; i++) {
		w = &srq->sh[i & mask];
		posted = SVA_SH_POSTED;
		if (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) == SVA_SH_POSTED &&
		    w->wr_id == wr_id &&
		    __atomic_compare_exchange_n(&w->state, &posted, SVA_SH_DONE, false,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			break;
	}
	srq_sh_advance(srq, head, mask);
}

/* A CQE retires its WQE from the QP's shadow: a receive the next one (on
 * an SRQ, the SRQ's of its wr_id), a send the next signaled one and the
 * unsignaled before it (they completed in order), an error the one of its
 * wr_id (errors come for unsignaled WQEs too). The CQ's lock held. */
static void
cqe_retire(struct sva_cq *cq, const struct ibv_wc *wc)
{
	struct sva_qp *qp = cqe_qp(cq, wc->qp_num);
	uint32_t head, mask;
	const struct sva_shadow *w;

	if (qp == NULL)
		return;
	if (wc->opcode & IBV_WC_RECV) {
		if (qp->ibqp.srq != NULL)
			srq_retire(SVA_OF(struct sva_srq, qp->ibqp.srq, ibsrq), wc->wr_id);
		else    /* the RQ's room, to its poster (sva_post_recv()) */
			__atomic_store_n(&qp->rq_done, qp->rq_done + 1, __ATOMIC_RELEASE);
		return;
	}
	head = __atomic_load_n(&qp->ring->sq_head.v, __ATOMIC_ACQUIRE);
	mask = SVA_SHADOW_RINGS * qp->sq_size - 1;
	while (qp->sq_done != head) {
		w = &qp->sq_sh[qp->sq_done++ & mask];
		if (wc->status == IBV_WC_SUCCESS ? w->signaled : w->wr_id == wc->wr_id)
			break;
	}
}

static void
flush_wc(struct ibv_wc *wc, const struct sva_shadow *w, uint32_t qp_num)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = w->wr_id;
	wc->status = IBV_WC_WR_FLUSH_ERR;
	wc->opcode = (enum ibv_wc_opcode)w->wc_opcode;
	wc->qp_num = qp_num;
}

/* One queue's WQEs with no CQE, from *done to head, flushed into wc[got]
 * up to wc[n - 1] (at most the shadow's mask + 1 of them): the new got. */
static int
flush_queue(struct ibv_wc *wc, int got, int n, const struct sva_shadow *sh, uint32_t *done,
	    uint32_t head, uint32_t mask, uint32_t qp_num)
{
	if (head - *done > mask + 1)
		*done = head - (mask + 1);
	for (; *done != head && got < n; (*done)++)
		flush_wc(&wc[got++], &sh[*done & mask], qp_num);
	return got;
}

/* An SRQ's WQEs with no CQE, flushed into wc[got] up to wc[n - 1] as
 * qp_num's (the first CQ to poll after the end that receives for one of
 * its QPs: each WQE once, taken by the same CAS as a CQE's): the new got. */
static int
flush_srq(struct ibv_wc *wc, int got, int n, struct sva_srq *srq, uint32_t qp_num)
{
	uint32_t head = __atomic_load_n(&srq->ring->head.v, __ATOMIC_ACQUIRE);
	uint32_t mask = SVA_SRQ_SHADOW_RINGS * srq->size - 1;
	uint32_t i = __atomic_load_n(&srq->sh_done, __ATOMIC_ACQUIRE);
	struct sva_srq_shadow *w;
	struct sva_shadow f;
	uint32_t posted;

	if (head - i > mask + 1)
		i = head - (mask + 1);
	for (; i != head && got < n; i++) {
		w = &srq->sh[i & mask];
		posted = SVA_SH_POSTED;
		if (!__atomic_compare_exchange_n(&w->state, &posted, SVA_SH_DONE, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		f = (struct sva_shadow){ .wr_id = w->wr_id, .wc_opcode = IBV_WC_RECV };
		flush_wc(&wc[got++], &f, qp_num);
	}
	srq_sh_advance(srq, head, mask);
	return got;
}

/* After the session's end: what the daemon wrote into the ring, then each
 * WQE of the CQ's QPs with no CQE (and of their SRQs), flushed, as a
 * device's reset flow completes a dead device's work (mlx5's
 * mlx5_ib_poll_sw_comp()); then nothing. The CQ's lock held. */
static int __rte_noinline
poll_cq_dead(struct sva_cq *cq, int n, struct ibv_wc *wc)
{
	struct sva_context *ctx = sva_ctx(cq->ibcq.context);
	uint32_t prod, avail;
	struct sva_qp *qp;
	unsigned int i;
	int got = 0;

	prod = __atomic_load_n(&cq->ring->prod.v, __ATOMIC_ACQUIRE);
	avail = prod - cq->cons;
	if (avail > cq->size)       /* a fork()ed child's private rings: none */
		avail = 0;
	for (; avail > 0 && got < n; avail--, got++) {
		wc[got] = cq->ring->cqe[cq->cons++ & (cq->size - 1)];
		cqe_retire(cq, &wc[got]);
	}
	for (i = 0; i < SVC_SESSION_QPS_MAX && got < n; i++) {
		qp = __atomic_load_n(&ctx->qp[i], __ATOMIC_ACQUIRE);
		if (qp == NULL)
			continue;
		if (qp->ibqp.send_cq == &cq->ibcq)
			got = flush_queue(wc, got, n, qp->sq_sh, &qp->sq_done,
					  __atomic_load_n(&qp->ring->sq_head.v, __ATOMIC_ACQUIRE),
					  SVA_SHADOW_RINGS * qp->sq_size - 1, qp->ibqp.qp_num);
		if (qp->ibqp.recv_cq == &cq->ibcq && qp->ibqp.srq != NULL)
			got = flush_srq(wc, got, n, SVA_OF(struct sva_srq, qp->ibqp.srq, ibsrq),
					qp->ibqp.qp_num);
		else if (qp->ibqp.recv_cq == &cq->ibcq)
			got = flush_queue(wc, got, n, qp->rq_sh, &qp->rq_done,
					  __atomic_load_n(&qp->ring->rq_head.v, __ATOMIC_ACQUIRE),
					  SVA_SHADOW_RINGS * qp->rq_size - 1, qp->ibqp.qp_num);
	}
	return got;
}

/* An empty poll: whether this thread sleeps (above SVA_POLL_SLEEP_US) */
static bool
poll_should_sleep(const struct svc_state_line *st, int *cpu)
{
	uint32_t eng, sl;

	*cpu = -1;
	if (sva_poll_mode == SVA_POLL_SPIN)
		return false;
	eng = __atomic_load_n(&st->eng_cpu, __ATOMIC_RELAXED);
	if (sva_poll_mode == SVA_POLL_SLEEP || eng == 0)
		return ++sva_empty_polls > SVA_POLL_HOT;
	sl = __atomic_load_n(&st->sleep, __ATOMIC_RELAXED);
	/* the engine naps with nothing expected (svc_state_line.sleep 1): no
	 * CQE comes sooner for a sleep here; the program's spin is its own */
	if (sl != 0 && sl != SVC_SLEEP_WAITING)
		return false;
	*cpu = sched_getcpu();
	if (*cpu < 0 || (uint32_t)*cpu + 1 != eng)
		return false;
	/* a short nap while QPs wait for the network: the answer's CQE comes
	 * at the nap's end; if this thread is among those waiting (it posted
	 * a send WQE since its last CQE: sva_sends_out), after SVA_POLL_HOT
	 * empty polls in a row it sleeps until then (the pass that writes the CQE
	 * wakes it). Its spin burnt the CPU the engine wakes up on
	 * (doc/performance.md, "Session 22": 60-108 us of user CPU per 64 B
	 * WRITE at load 25). A thread with nothing out spins, as under an
	 * idle nap: another session's waiting QPs owe it nothing (a
	 * progress loop polling on would pay ~150 us a poll). */
	if (sl == SVC_SLEEP_WAITING)
		return sva_sends_out && ++sva_empty_polls > SVA_POLL_HOT;
	return true;
}

/* The daemon's minor from which it stores 0 in poll_cpu as it wakes every
 * sleeper: the library's merge (SVC_POLL_CPU_MIXED) needs it */
#define SVA_MINOR_POLL_MIXED 4

/* This thread's CPU (me, + 1) merged into the session's poll_cpu: 0 -> me,
 * another CPU -> SVC_POLL_CPU_MIXED; me or mixed there already: its mark */
static void
poll_cpu_mark(uint32_t *pcw, uint32_t me)
{
	uint32_t pc = __atomic_load_n(pcw, __ATOMIC_SEQ_CST);

	while (pc != me && pc != SVC_POLL_CPU_MIXED &&
	       !__atomic_compare_exchange_n(pcw, &pc, pc == 0 ? me : SVC_POLL_CPU_MIXED,
					    false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* An empty CQ this thread sleeps on: its CPU told in the session's
 * poll_cpu (SVC_POLL_CPU_MIXED when a sleeper on another CPU was there
 * first: the engine then wakes them at once, wherever they sleep), and
 * poll_sleep stored, then the CQ's prod looked at once more (a CQE
 * written before that look is returned by the next poll, one after it
 * finds 1 and wakes this thread), then a wait on the word for at most
 * SVA_POLL_SLEEP_US. The word stays 1 after a timeout: the engine's next
 * CQE pays the one wake. A daemon of minor 3 never stores 0 in poll_cpu
 * (protocol 4.4 does, when it wakes every sleeper): with it the plain
 * store of 4.3, mixed would stick. */
static void __rte_noinline
poll_sleep(struct sva_cq *cq, uint32_t prod, int cpu)
{
	struct sva_context *ctx = sva_ctx(cq->ibcq.context);
	struct svc_state_line *st = &ctx->shm->state;
	uint32_t *w = &st->poll_sleep;
	struct timespec ts = { .tv_nsec = SVA_POLL_SLEEP_US * 1000 };
	uint32_t me = (uint32_t)(cpu + 1), pc;

	if (ctx->minor < SVA_MINOR_POLL_MIXED)
		__atomic_store_n(&st->poll_cpu, me, __ATOMIC_RELAXED);
	else
		poll_cpu_mark(&st->poll_cpu, me);
	__atomic_store_n(w, 1, __ATOMIC_SEQ_CST);
	if (ctx->minor >= SVA_MINOR_POLL_MIXED) {
		/* the engine stores 0 in poll_cpu, then takes poll_sleep
		 * (both seq_cst); here poll_sleep stored, then poll_cpu
		 * loaded: an engine whose exchange missed this 1 stored its
		 * 0 before this load, which sees it (or a later sleeper's
		 * CPU) and marks again. Else a sleeper on the engine's CPU
		 * after the 0 would name that CPU alone, and this thread's
		 * wake be put off though it could run. */
		pc = __atomic_load_n(&st->poll_cpu, __ATOMIC_SEQ_CST);
		if (pc != me && pc != SVC_POLL_CPU_MIXED)
			poll_cpu_mark(&st->poll_cpu, me);
	}
	if (__atomic_load_n(&cq->ring->prod.v, __ATOMIC_SEQ_CST) != prod)
		return;
	syscall(SYS_futex, w, FUTEX_WAIT, 1, &ts, NULL, 0);
}

static int
sva_poll_ring(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct sva_cq *cq = SVA_OF(struct sva_cq, ibcq, ibcq);
	uint32_t prod, avail, i;

	if (n <= 0)
		return 0;
	if (unlikely(sva_dead(sva_ctx(ibcq->context)))) {
		sva_ctx_fatal(sva_ctx(ibcq->context));
		pthread_spin_lock(&cq->lock);
		n = poll_cq_dead(cq, n, wc);
		pthread_spin_unlock(&cq->lock);
		return n;
	}
	pthread_spin_lock(&cq->lock);
	prod = __atomic_load_n(&cq->ring->prod.v, __ATOMIC_ACQUIRE);
	avail = prod - cq->cons;
	if (avail > (uint32_t)n)
		avail = (uint32_t)n;
	for (i = 0; i < avail; i++) {
		wc[i] = cq->ring->cqe[(cq->cons + i) & (cq->size - 1)];
		cqe_retire(cq, &wc[i]);
	}
	cq->cons += avail;
	if (avail > 0)
		__atomic_store_n(&cq->ring->cons.v, cq->cons, __ATOMIC_RELEASE);
	pthread_spin_unlock(&cq->lock);
	if (avail > 0) {
		sva_empty_polls = 0;
		sva_sends_out = false;
	} else {
		int cpu;

		pthread_once(&sva_poll_once, sva_poll_mode_init);
		if (poll_should_sleep(&sva_ctx(ibcq->context)->shm->state, &cpu))
			poll_sleep(cq, prod, cpu);
	}
	return (int)avail;
}

/* ibv_poll_cq(): the ring, after what an extended CQ's ibv_start_poll()
 * took and the program did not read */
static int
sva_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct sv_cq_head *h = SVA_OF(struct sv_cq_head, ibcq, ibcq);

	if (unlikely(h->ex != NULL))
		return sv_cq_ex_poll(h, n, wc);
	return sva_poll_ring(ibcq, n, wc);
}

static int
sva_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sva_cq *cq = SVA_OF(struct sva_cq, ibcq, ibcq);
	struct svc_shm *shm = sva_ctx(ibcq->context)->shm;

	if (ibcq->channel == NULL)
		return EINVAL;
	/* the cons it is armed at, then the new seq: stores, no system call */
	pthread_spin_lock(&cq->lock);
	__atomic_store_n(&cq->ring->arm.cons, cq->cons, __ATOMIC_RELAXED);
	cq->arm_seq += 2;
	__atomic_store_n(&cq->ring->arm.seq, cq->arm_seq | (solicited_only != 0), __ATOMIC_RELEASE);
	pthread_spin_unlock(&cq->lock);
	/* a CQE written before the arm was seen fires at the engine's next
	 * look: now, not after its nap. The doorbell, not a look at sleep
	 * alone: an arm stored after the engine's last look at the CQ but
	 * before its store of sleep = 1 found sleep 0, and the engine, finding
	 * db unchanged, napped with the event owed */
	session_ring(&shm->db.v, &shm->state.sleep);
	return 0;
}

struct ibv_comp_channel *
sva_create_comp_channel(struct ibv_context *context)
{
	struct sva_context *ctx = sva_ctx(context);
	struct svc_create_channel_req q;
	struct svc_handle_rep r;
	struct sva_channel *ch;
	int rc;

	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		return null_errno(ENOMEM);
	req_init(&q, SVC_CREATE_CHANNEL);
	q.dev = ctx->handle;
	/* the reply carries the pipe's read end: the program's fd */
	rc = sva_call_fd(ctx, &q, -1, &r, sizeof(r), &ch->ch.fd);
	if (ch->ch.fd < 0 && (rc == 0 || rc == -EMFILE) && r.h.status == 0) {
		/* the daemon made the channel, its pipe's read end is not
		 * here (none sent, or the kernel dropped it at our descriptor
		 * limit): given back, else it holds one of the session's
		 * SVC_SESSION_CHANNELS_MAX until the session's end */
		call_destroy(ctx, SVC_DESTROY_CHANNEL, r.handle);
		if (rc == 0)
			rc = -EPROTO;
		else
			sv_log("ibv_create_comp_channel: the channel's descriptor could not be "
			       "received (the kernel dropped it: this process's limit of open files, "
			       "the system's, or a security module): close some descriptors or raise "
			       "the limit (ulimit -n)");
	}
	if (rc != 0) {
		free(ch);
		return null_errno(-rc);
	}
	ch->handle = r.handle;
	ch->ch.context = context;
	pthread_mutex_init(&ch->lock, NULL);
	pthread_mutex_lock(&sva_objs_lock);
	for (unsigned int i = 0; i < SVC_SESSION_CHANNELS_MAX; i++) {
		if (ctx->ch[i] == NULL) {
			ctx->ch[i] = ch;
			break;
		}
	}
	pthread_mutex_unlock(&sva_objs_lock);
	return &ch->ch;
}

int
sva_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sva_channel *ch = SVA_OF(struct sva_channel, channel, ch);
	int rc;

	if (channel->refcnt != 0)
		return EBUSY;
	struct sva_context *ctx = sva_ctx(channel->context);

	rc = call_destroy(ctx, SVC_DESTROY_CHANNEL, ch->handle);
	if (rc != 0)
		return rc;
	pthread_mutex_lock(&sva_objs_lock);
	for (unsigned int i = 0; i < SVC_SESSION_CHANNELS_MAX; i++)
		if (ctx->ch[i] == ch)
			ctx->ch[i] = NULL;
	pthread_mutex_unlock(&sva_objs_lock);
	close(channel->fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/* The next CQ with an event not handed out yet, else wait on the pipe
 * (blocking unless the program made the fd non-blocking: then EAGAIN; a
 * signal handled without SA_RESTART: EINTR) and take what bytes it holds:
 * the events are the rings' counts, a byte only a wake.
 * After the session's end, each of its CQs once (its flushed WQEs to
 * poll), then EIO: never a wait for an event no one will write. */
int
sva_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq_out, void **cq_context)
{
	struct sva_channel *ch = SVA_OF(struct sva_channel, channel, ch);
	uint8_t bytes[SVA_CHANNEL_READ];
	struct sva_cq *cq;
	uint32_t ev;
	unsigned int i;
	ssize_t n;

	for (;;) {
		pthread_mutex_lock(&ch->lock);
		for (i = 0; i < SVC_SESSION_CQS_MAX; i++) {
			cq = ch->cq[i];
			if (cq == NULL)
				continue;
			ev = __atomic_load_n(&cq->ring->ev.v, __ATOMIC_ACQUIRE);
			if (ev != cq->ev_seen) {
				/* events of one CQ collapse into one, as a NIC's EQ */
				cq->ev_seen = ev;
				pthread_mutex_unlock(&ch->lock);
				*cq_out = &cq->ibcq;
				*cq_context = cq->ibcq.cq_context;
				return 0;
			}
		}
		if (sva_dead(sva_ctx(channel->context))) {
			for (i = 0; i < SVC_SESSION_CQS_MAX; i++) {
				cq = ch->cq[i];
				if (cq != NULL && !cq->fatal_ev) {
					cq->fatal_ev = true;
					pthread_mutex_unlock(&ch->lock);
					*cq_out = &cq->ibcq;
					*cq_context = cq->ibcq.cq_context;
					return 0;
				}
			}
			pthread_mutex_unlock(&ch->lock);
			errno = EIO;
			return -1;
		}
		pthread_mutex_unlock(&ch->lock);
		/* a signal's handler without SA_RESTART ends the wait with EINTR,
		 * as rdma-core's read() of the kernel's channel: programs stop a
		 * timed test that way (qperf's SIGALRM) */
		n = read(channel->fd, bytes, sizeof(bytes));
		if (n < 0)
			return -1;
		if (n == 0)         /* the daemon's end closed: only at the session's end */
			sva_ctx_fatal(sva_ctx(channel->context));
	}
}

struct ibv_cq *
sva_create_cq(struct ibv_context *context, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	struct sva_context *ctx = sva_ctx(context);
	struct svc_create_cq_req q;
	struct svc_create_cq_rep r;
	struct sva_cq *cq;
	int rc;

	if (channel != NULL && channel->context != context)
		return null_errno(EINVAL);
	if (cqe < 1 || (unsigned int)cqe >= SVC_RING_CQE_MAX || comp_vector != 0)
		return null_errno(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return null_errno(ENOMEM);
	req_init(&q, SVC_CREATE_CQ);
	q.dev = ctx->handle;
	q.cqe = (uint32_t)cqe;
	q.channel = channel != NULL ? SVA_OF(struct sva_channel, channel, ch)->handle : 0;
	rc = sva_call_fd(ctx, &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		free(cq);
		return null_errno(-rc);
	}
	if (r.ring >= SVC_SESSION_CQS_MAX || r.size > SVC_RING_CQE_MAX ||
	    (r.size & (r.size - 1)) != 0) {
		free(cq);
		return null_errno(EPROTO);
	}
	cq->handle = r.handle;
	cq->ring = &ctx->shm->cq[r.ring];
	cq->size = r.size;
	cq->cons = 0;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ibcq.context = context;
	cq->ibcq.channel = channel;
	cq->ibcq.cq_context = cq_context;
	if (channel != NULL) {
		struct sva_channel *ch = SVA_OF(struct sva_channel, channel, ch);

		pthread_mutex_lock(&ch->lock);
		ch->cq[r.ring] = cq;
		pthread_mutex_unlock(&ch->lock);
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
	cq->ibcq.cqe = (int)r.size - 1;
	cq->ibcq.handle = r.handle;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	evobj_add(ctx, cq, r.handle);
	return &cq->ibcq;
}

int
sva_destroy_cq(struct ibv_cq *ibcq)
{
	struct sva_cq *cq = SVA_OF(struct sva_cq, ibcq, ibcq);
	int rc = call_destroy(sva_ctx(ibcq->context), SVC_DESTROY_CQ, cq->handle);

	if (rc != 0)
		return rc;
	evobj_del(sva_ctx(ibcq->context), cq, &ibcq->mutex, &ibcq->cond,
		  &ibcq->async_events_completed, &cq->events_reported);
	if (ibcq->channel != NULL) {
		struct sva_channel *ch = SVA_OF(struct sva_channel, ibcq->channel, ch);
		unsigned int i;

		pthread_mutex_lock(&ch->lock);
		for (i = 0; i < SVC_SESSION_CQS_MAX; i++)
			if (ch->cq[i] == cq)
				ch->cq[i] = NULL;
		pthread_mutex_unlock(&ch->lock);
		pthread_mutex_lock(&ibcq->context->mutex);
		ibcq->channel->refcnt--;
		pthread_mutex_unlock(&ibcq->context->mutex);
	}
	pthread_spin_destroy(&cq->lock);
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	sv_cq_ex_free((struct sv_cq_head *)cq);
	free(cq);
	return 0;
}

/* ibv_create_cq_ex(): ibv_create_cq()'s CQ, polled a burst of its ring at
 * a time (verbs_ex.c) */
static struct ibv_cq_ex *
sva_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq *ibcq;
	int rc = sv_cq_ex_check(attr);

	if (rc != 0)
		return null_errno(rc);
	ibcq = sva_create_cq(context, (int)attr->cqe, attr->cq_context, attr->channel,
			     (int)attr->comp_vector);
	if (ibcq == NULL)
		return NULL;
	if (sv_cq_ex_setup(SVA_OF(struct sv_cq_head, ibcq, ibcq), sva_poll_ring,
			   sv_cq_ex_start_poll) != 0) {
		sva_destroy_cq(ibcq);
		return null_errno(ENOMEM);
	}
	return &SVA_OF(struct sv_cq_head, ibcq, ibcq)->ibcq_ex;
}

/* ---- QP ---- */

static bool
send_opcode_ok(enum ibv_qp_type t, enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return true;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return t != IBV_QPT_UD;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_WRITE:
	case IBV_WR_SEND_WITH_INV:          /* an IETH: RC only */
		return t == IBV_QPT_RC;
	case IBV_WR_LOCAL_INV:
	case IBV_WR_BIND_MW:
		return t == IBV_QPT_RC || t == IBV_QPT_UC;
	default:
		return false;
	}
}

/* The ibv_wr_*() operations an attached QP may ask for: the opcodes
 * send_opcode_ok() lets through (the daemon hands each WQE to srnic's own
 * post, so ATOMIC_WRITE is the engine's, as embedded), memory windows and
 * invalidation included */
#define SVA_QP_EX_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			    IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			    IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_WRITE | \
			    IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV | \
			    IBV_QP_EX_WITH_SEND_WITH_INV)

/* IBTA 1.5's ATOMIC_WRITE carries its 8 bytes in the WQE whatever the QP's
 * max_inline_data (as srnic's own post) */
#define SVA_ATOMIC_WRITE_LEN 8

/* A send WR the QP cannot take: EINVAL, else 0 (the ring's room apart) */
static int
send_wr_check(const struct sva_qp *qp, const struct ibv_send_wr *wr)
{
	uint32_t len, max;
	int i;

	if (!send_opcode_ok(qp->ibqp.qp_type, wr->opcode) || wr->num_sge < 0 ||
	    (!(wr->send_flags & IBV_SEND_INLINE) &&
	     (uint32_t)wr->num_sge > qp->cap.max_send_sge))
		return EINVAL;
	if (qp->ibqp.qp_type == IBV_QPT_UD && (wr->wr.ud.ah == NULL ||
					       wr->wr.ud.ah->context != qp->ibqp.context))
		return EINVAL;
	if (wr->send_flags & IBV_SEND_INLINE) {
		max = qp->cap.max_inline_data;
		if (wr->opcode == IBV_WR_ATOMIC_WRITE)
			max = RTE_MAX(max, (uint32_t)SVA_ATOMIC_WRITE_LEN);
		for (len = 0, i = 0; i < wr->num_sge; i++)
			len += wr->sg_list[i].length;
		if (len > max)
			return EINVAL;
	}
	return 0;
}

/* A WQE's SGEs from a work request's, and the ring's new head published
 * and the doorbell rung (the lock of the ring held). */
static void
wqe_sges(struct svc_wqe *w, const struct ibv_sge *sg, int num_sge)
{
	int i;

	for (i = 0; i < num_sge; i++) {
		w->sg[i].addr = sg[i].addr;
		w->sg[i].length = sg[i].length;
		w->sg[i].lkey = sg[i].lkey;
	}
	w->num_sge = (uint32_t)num_sge;
}

/* The CQE opcode of a send WQE's opcode (send_opcode_ok()'s). */
static uint8_t
wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

/* A bind's window and MR as verbs wants them (rxe's checks at the post):
 * a window of the QP's PD, an MR unless the bind unbinds (length 0), no
 * data. The rest (the MR's PD and access, the range, the window's state)
 * is srnic's, in the daemon: a bind it refuses completes
 * IBV_WC_MW_BIND_ERR. */
static bool
bind_ok(const struct ibv_qp *qp, const struct ibv_send_wr *wr)
{
	const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

	return wr->bind_mw.mw != NULL && wr->bind_mw.mw->pd == qp->pd && wr->num_sge == 0 &&
	       !(wr->send_flags & IBV_SEND_INLINE) && (b->length == 0 || b->mr != NULL);
}

static inline void
ring_publish(uint32_t *head_line, uint32_t head, uint32_t *db, uint32_t *sleep)
{
	__atomic_store_n(head_line, head, __ATOMIC_RELEASE);
	session_ring(db, sleep);
}

/* A post the QP refuses whole: EIO after the session's end, EINVAL before
 * RTS; else 0 */
static int
sq_refused(struct ibv_qp *ibqp)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);

	/* the session ended: EIO, as a device in its reset flow (mlx5) */
	if (unlikely(__atomic_load_n(qp->state, __ATOMIC_ACQUIRE) != SVC_SHM_LIVE)) {
		sva_ctx_fatal(sva_ctx(ibqp->context));  /* said once, waiters woken */
		return EIO;
	}
	/* as srnic answers a post before RTS: here, not as a QP in ERR later */
	if (ibqp->state == IBV_QPS_RESET || ibqp->state == IBV_QPS_INIT ||
	    ibqp->state == IBV_QPS_RTR)
		return EINVAL;
	return 0;
}

/* The WRs into the SQ ring up to the first it cannot take (*bad_wr, its
 * errno), the new head published; the SQ's lock held. */
static int
sq_write(struct sva_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct ibv_qp *ibqp = &qp->ibqp;
	struct sva_shadow *sh;
	struct svc_wqe *w;
	uint32_t comp, len;
	int i, rc = 0;

	comp = __atomic_load_n(&qp->ring->sq_comp.v, __ATOMIC_ACQUIRE);
	for (; wr != NULL; wr = wr->next) {
		rc = send_wr_check(qp, wr);
		if (rc != 0)
			break;
		if (qp->sq_head - comp >= qp->sq_size) {
			rc = ENOMEM;
			break;
		}
		if (unlikely(wr->opcode == IBV_WR_BIND_MW) && !bind_ok(ibqp, wr)) {
			rc = EINVAL;
			break;
		}
		w = &qp->ring->sq[qp->sq_head & (qp->sq_size - 1)];
		w->wr_id = wr->wr_id;
		w->opcode = wr->opcode;
		w->send_flags = wr->send_flags;
		w->imm_data = wr->imm_data;
		if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			w->remote_addr = wr->wr.atomic.remote_addr;
			w->rkey = wr->wr.atomic.rkey;
			w->compare_add = wr->wr.atomic.compare_add;
			w->swap = wr->wr.atomic.swap;
		} else if (ibqp->qp_type == IBV_QPT_UD) {
			/* the daemon checks the handle is this session's, live */
			w->ah = SVA_OF(struct sva_ah, wr->wr.ud.ah, ibah)->handle;
			w->remote_qpn = wr->wr.ud.remote_qpn;
			w->remote_qkey = wr->wr.ud.remote_qkey;
		} else {
			w->remote_addr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		if (unlikely(wr->opcode == IBV_WR_BIND_MW)) {
			const struct ibv_mw_bind_info *b = &wr->bind_mw.bind_info;

			/* the daemon checks the window is this session's, live */
			w->bind.mw = SVA_OF(struct sva_mw, wr->bind_mw.mw, ibmw)->handle;
			w->bind.mr_lkey = b->length != 0 ? b->mr->lkey : 0;
			w->bind.addr = b->addr;
			w->bind.length = b->length;
			w->bind.access = b->mw_access_flags;
			w->rkey = wr->bind_mw.rkey;
			w->num_sge = 0;
		} else if (wr->send_flags & IBV_SEND_INLINE) {
			/* the data goes in the WQE: the buffer is the program's again */
			for (len = 0, i = 0; i < wr->num_sge; i++) {
				memcpy(w->inl + len, (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				len += wr->sg_list[i].length;
			}
			w->num_sge = len;
		} else {
			wqe_sges(w, wr->sg_list, wr->num_sge);
		}
		sh = &qp->sq_sh[qp->sq_head & (SVA_SHADOW_RINGS * qp->sq_size - 1)];
		sh->wr_id = wr->wr_id;
		sh->signaled = qp->sig_all || (wr->send_flags & IBV_SEND_SIGNALED) != 0;
		sh->wc_opcode = wc_opcode(wr->opcode);
		qp->sq_head++;
	}
	ring_publish(&qp->ring->sq_head.v, qp->sq_head, qp->db, qp->sleep);
	sva_sends_out = true;
	if (rc != 0)
		*bad_wr = wr;
	return rc;
}

static int
sva_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);
	int rc = sq_refused(ibqp);

	if (unlikely(rc != 0)) {
		*bad_wr = wr;
		return rc;
	}
	pthread_spin_lock(&qp->sq_lock);
	rc = sq_write(qp, wr, bad_wr);
	pthread_spin_unlock(&qp->sq_lock);
	return rc;
}

/* ibv_wr_complete()'s post (verbs_ex.c): the list whole, or none of it and
 * the errno ibv_post_send() would give for its first bad WR */
static int
sva_post_send_all(struct ibv_qp *ibqp, struct ibv_send_wr *wr)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);
	const struct ibv_send_wr *w;
	struct ibv_send_wr *bad;
	uint32_t n = 0, comp;
	int rc = sq_refused(ibqp);

	for (w = wr; rc == 0 && w != NULL; w = w->next, n++)
		rc = send_wr_check(qp, w);
	if (rc != 0)
		return rc;
	pthread_spin_lock(&qp->sq_lock);
	comp = __atomic_load_n(&qp->ring->sq_comp.v, __ATOMIC_ACQUIRE);
	if (qp->sq_size - (qp->sq_head - comp) < n)
		rc = ENOMEM;
	else
		rc = sq_write(qp, wr, &bad);
	pthread_spin_unlock(&qp->sq_lock);
	return rc;
}

static int
sva_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);
	struct sva_shadow *sh;
	struct svc_wqe *w;
	uint32_t done, room;
	int rc = 0;

	if (unlikely(__atomic_load_n(qp->state, __ATOMIC_ACQUIRE) != SVC_SHM_LIVE)) {
		sva_ctx_fatal(sva_ctx(ibqp->context));  /* said once, waiters woken */
		*bad_wr = wr;
		return EIO;
	}
	/* a QP on an SRQ takes its WQEs there (as verbs: EINVAL) */
	if (ibqp->state == IBV_QPS_RESET || ibqp->srq != NULL) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq_lock);
	/* full at max_recv_wr WQEs without their CQE polled, as mlx5's RQ
	 * (the ring's tail would let twice that in once the daemon has moved
	 * them into srnic's RQ: ENOMEM or not by the engine's timing); the
	 * ring, behind, never overflows */
	done = __atomic_load_n(&qp->rq_done, __ATOMIC_ACQUIRE);
	room = RTE_MIN(qp->cap.max_recv_wr, qp->rq_size);
	for (; wr != NULL; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			rc = EINVAL;
			break;
		}
		if (qp->rq_head - done >= room) {
			rc = ENOMEM;
			break;
		}
		w = &qp->ring->rq[qp->rq_head & (qp->rq_size - 1)];
		w->wr_id = wr->wr_id;
		wqe_sges(w, wr->sg_list, wr->num_sge);
		sh = &qp->rq_sh[qp->rq_head & (SVA_SHADOW_RINGS * qp->rq_size - 1)];
		sh->wr_id = wr->wr_id;
		sh->wc_opcode = IBV_WC_RECV;
		qp->rq_head++;
	}
	ring_publish(&qp->ring->rq_head.v, qp->rq_head, qp->db, qp->sleep);
	pthread_spin_unlock(&qp->rq_lock);
	if (rc != 0)
		*bad_wr = wr;
	return rc;
}

static int
sva_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sva_srq *srq = SVA_OF(struct sva_srq, ibsrq, ibsrq);
	struct sva_srq_shadow *sh;
	struct svc_wqe *w;
	uint32_t tail;
	int rc = 0;

	if (unlikely(sva_dead(sva_ctx(ibsrq->context)))) {
		sva_ctx_fatal(sva_ctx(ibsrq->context));  /* said once, waiters woken */
		*bad_wr = wr;
		return EIO;
	}
	pthread_spin_lock(&srq->lock);
	tail = __atomic_load_n(&srq->ring->tail.v, __ATOMIC_ACQUIRE);
	for (; wr != NULL; wr = wr->next) {
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > srq->max_sge) {
			rc = EINVAL;
			break;
		}
		if (srq->head - tail >= srq->size) {
			rc = ENOMEM;
			break;
		}
		w = &srq->ring->rq[srq->head & (srq->size - 1)];
		w->wr_id = wr->wr_id;
		wqe_sges(w, wr->sg_list, wr->num_sge);
		sh = &srq->sh[srq->head & (SVA_SRQ_SHADOW_RINGS * srq->size - 1)];
		sh->wr_id = wr->wr_id;
		__atomic_store_n(&sh->state, SVA_SH_POSTED, __ATOMIC_RELEASE);
		srq->head++;
	}
	ring_publish(&srq->ring->head.v, srq->head, srq->db, srq->sleep);
	pthread_spin_unlock(&srq->lock);
	if (rc != 0)
		*bad_wr = wr;
	return rc;
}

struct ibv_srq *
sva_create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *attr)
{
	struct sva_context *ctx = sva_ctx(ibpd->context);
	struct svc_create_srq_req q;
	struct svc_create_srq_rep r;
	struct sva_srq *srq;
	int rc;

	srq = calloc(1, sizeof(*srq));
	if (srq == NULL)
		return null_errno(ENOMEM);
	req_init(&q, SVC_CREATE_SRQ);
	q.pd = SVA_OF(struct sva_pd, ibpd, ibpd)->handle;
	q.max_wr = attr->attr.max_wr;
	q.max_sge = attr->attr.max_sge;
	q.srq_limit = attr->attr.srq_limit;
	rc = sva_call_fd(ctx, &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		free(srq);
		return null_errno(-rc);
	}
	if (r.ring >= SVC_SESSION_SRQS_MAX || r.size > SVC_RING_SRQ_WR_MAX ||
	    (r.size & (r.size - 1)) != 0 || r.size == 0) {
		free(srq);
		return null_errno(EPROTO);
	}
	srq->sh = calloc(SVA_SRQ_SHADOW_RINGS * r.size, sizeof(*srq->sh));
	if (srq->sh == NULL) {
		call_destroy(ctx, SVC_DESTROY_SRQ, r.handle);
		free(srq);
		return null_errno(ENOMEM);
	}
	srq->handle = r.handle;
	srq->ring = &ctx->shm->srq[r.ring];
	srq->size = r.size;
	srq->max_sge = r.max_sge;
	srq->srq_num = r.srq_num;
	srq->db = &ctx->shm->db.v;
	srq->sleep = &ctx->shm->state.sleep;
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	/* what it holds, written back as verbs does */
	attr->attr.max_wr = r.size;
	attr->attr.max_sge = r.max_sge;
	srq->ibsrq.context = ibpd->context;
	srq->ibsrq.srq_context = attr->srq_context;
	srq->ibsrq.pd = ibpd;
	srq->ibsrq.handle = r.handle;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	evobj_add(ctx, srq, r.handle);
	return &srq->ibsrq;
}

int
sva_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct sva_srq *srq = SVA_OF(struct sva_srq, ibsrq, ibsrq);
	struct svc_modify_srq_req q;
	struct svc_handle_rep r;

	req_init(&q, SVC_MODIFY_SRQ);
	q.handle = srq->handle;
	q.mask = mask;
	q.attr = *attr;
	return -sva_call_fd(sva_ctx(ibsrq->context), &q, -1, &r, sizeof(r), NULL);
}

int
sva_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct sva_srq *srq = SVA_OF(struct sva_srq, ibsrq, ibsrq);
	struct svc_handle_req q;
	struct svc_query_srq_rep r;
	int rc;

	req_init(&q, SVC_QUERY_SRQ);
	q.handle = srq->handle;
	rc = sva_call_fd(sva_ctx(ibsrq->context), &q, -1, &r, sizeof(r), NULL);
	if (rc == 0)
		*attr = r.attr;
	return -rc;
}

int
sva_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sva_srq *srq = SVA_OF(struct sva_srq, ibsrq, ibsrq);
	int rc = call_destroy(sva_ctx(ibsrq->context), SVC_DESTROY_SRQ, srq->handle);

	if (rc != 0)
		return rc;      /* EBUSY while a QP uses it */
	evobj_del(sva_ctx(ibsrq->context), srq, &ibsrq->mutex, &ibsrq->cond,
		  &ibsrq->events_completed, &srq->events_reported);
	pthread_spin_destroy(&srq->lock);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq->sh);
	free(srq);
	return 0;
}

/* verbs_context->get_srq_num: the inline ibv_get_srq_num()'s target */
static int
sva_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = SVA_OF(struct sva_srq, ibsrq, ibsrq)->srq_num;
	return 0;
}

struct ibv_qp *
sva_create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	struct sva_context *ctx = sva_ctx(ibpd->context);
	struct svc_create_qp_req q;
	struct svc_create_qp_rep r;
	struct sva_qp *qp;
	int rc;

	if (attr == NULL || attr->send_cq == NULL || attr->recv_cq == NULL ||
	    attr->send_cq->context != ibpd->context || attr->recv_cq->context != ibpd->context)
		return null_errno(EINVAL);
	if (attr->srq != NULL && attr->srq->context != ibpd->context)
		return null_errno(EINVAL);
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	    attr->qp_type != IBV_QPT_UD) {
		sv_log("ibv_create_qp: srnicd's attached mode has RC, UC and UD QPs so far "
		       "(doc/srnicd.md, section 9)");
		return null_errno(EOPNOTSUPP);
	}
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return null_errno(ENOMEM);
	req_init(&q, SVC_CREATE_QP);
	q.pd = SVA_OF(struct sva_pd, ibpd, ibpd)->handle;
	q.send_cq = SVA_OF(struct sva_cq, attr->send_cq, ibcq)->handle;
	q.recv_cq = SVA_OF(struct sva_cq, attr->recv_cq, ibcq)->handle;
	q.qp_type = attr->qp_type;
	q.sq_sig_all = (uint32_t)attr->sq_sig_all;
	q.cap.max_send_wr = attr->cap.max_send_wr;
	q.cap.max_recv_wr = attr->cap.max_recv_wr;
	q.cap.max_send_sge = attr->cap.max_send_sge;
	q.cap.max_recv_sge = attr->cap.max_recv_sge;
	q.cap.max_inline_data = attr->cap.max_inline_data;
	q.srq = attr->srq != NULL ? SVA_OF(struct sva_srq, attr->srq, ibsrq)->handle : 0;
	rc = sva_call_fd(ctx, &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		free(qp);
		return null_errno(-rc);
	}
	if (r.ring >= SVC_SESSION_QPS_MAX || r.sq_size > SVC_RING_WR_MAX ||
	    r.rq_size > SVC_RING_WR_MAX || (r.sq_size & (r.sq_size - 1)) != 0 ||
	    (r.rq_size & (r.rq_size - 1)) != 0) {
		free(qp);
		return null_errno(EPROTO);
	}
	qp->sq_sh = calloc(SVA_SHADOW_RINGS * r.sq_size, sizeof(*qp->sq_sh));
	qp->rq_sh = calloc(SVA_SHADOW_RINGS * r.rq_size, sizeof(*qp->rq_sh));
	if (qp->sq_sh == NULL || qp->rq_sh == NULL) {
		call_destroy(ctx, SVC_DESTROY_QP, r.handle);
		free(qp->sq_sh);
		free(qp->rq_sh);
		free(qp);
		return null_errno(ENOMEM);
	}
	qp->handle = r.handle;
	qp->ring = &ctx->shm->qp[r.ring];
	qp->sq_size = r.sq_size;
	qp->rq_size = r.rq_size;
	qp->cap = r.cap;
	qp->db = &ctx->shm->db.v;
	qp->sleep = &ctx->shm->state.sleep;
	qp->state = &ctx->shm->state.v;
	qp->sig_all = attr->sq_sig_all != 0;
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	attr->cap.max_send_wr = r.cap.max_send_wr;
	attr->cap.max_recv_wr = r.cap.max_recv_wr;
	attr->cap.max_send_sge = r.cap.max_send_sge;
	attr->cap.max_recv_sge = r.cap.max_recv_sge;
	attr->cap.max_inline_data = r.cap.max_inline_data;
	qp->ibqp.context = ibpd->context;
	qp->ibqp.qp_context = attr->qp_context;
	qp->ibqp.pd = ibpd;
	qp->ibqp.send_cq = attr->send_cq;
	qp->ibqp.recv_cq = attr->recv_cq;
	qp->ibqp.srq = attr->srq;
	qp->ibqp.qp_num = r.qp_num;
	qp->ibqp.handle = r.handle;
	qp->ibqp.state = IBV_QPS_RESET;
	qp->ibqp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	__atomic_store_n(&ctx->qp[r.ring], qp, __ATOMIC_RELEASE);
	evobj_add(ctx, qp, r.handle);
	return &qp->ibqp;
}

/* A QP to RESET: its CQEs the daemon already put in the ring go, as srnic
 * cleans its own CQs (and libmlx5 its CQs): newest to oldest, each kept
 * entry moved up behind the ones after it, cons past the dropped (the
 * slots up to prod are the application's). Its WQEs are done with. */
static void
cq_clean(struct sva_cq *cq, struct sva_qp *qp)
{
	uint32_t prod, i, keep, mask = cq->size - 1;

	pthread_spin_lock(&cq->lock);
	prod = __atomic_load_n(&cq->ring->prod.v, __ATOMIC_ACQUIRE);
	for (i = keep = prod; i != cq->cons; i--) {
		const struct ibv_wc *wc = &cq->ring->cqe[(i - 1) & mask];

		if (wc->qp_num == qp->ibqp.qp_num)
			continue;
		keep--;
		if (keep != i - 1)
			cq->ring->cqe[keep & mask] = *wc;
	}
	if (keep != cq->cons) {
		cq->cons = keep;
		__atomic_store_n(&cq->ring->cons.v, cq->cons, __ATOMIC_RELEASE);
	}
	if (&cq->ibcq == qp->ibqp.send_cq)
		qp->sq_done = __atomic_load_n(&qp->ring->sq_head.v, __ATOMIC_ACQUIRE);
	if (&cq->ibcq == qp->ibqp.recv_cq && qp->ibqp.srq == NULL)
		qp->rq_done = __atomic_load_n(&qp->ring->rq_head.v, __ATOMIC_ACQUIRE);
	pthread_spin_unlock(&cq->lock);
}

int
sva_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);
	struct svc_modify_qp_req q;
	struct svc_handle_rep r;
	int rc;

	req_init(&q, SVC_MODIFY_QP);
	q.handle = qp->handle;
	q.mask = attr_mask;
	q.attr = *attr;
	rc = -sva_call_fd(sva_ctx(ibqp->context), &q, -1, &r, sizeof(r), NULL);
	if (rc == 0 && (attr_mask & IBV_QP_STATE))
		ibqp->state = attr->qp_state;
	if (rc == 0 && (attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		cq_clean(SVA_OF(struct sva_cq, ibqp->send_cq, ibcq), qp);
		if (ibqp->recv_cq != ibqp->send_cq)
			cq_clean(SVA_OF(struct sva_cq, ibqp->recv_cq, ibcq), qp);
	}
	return rc;
}

int
sva_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);
	struct svc_query_qp_req q;
	struct svc_query_qp_rep r;
	int rc;

	req_init(&q, SVC_QUERY_QP);
	q.handle = qp->handle;
	q.mask = attr_mask;
	rc = sva_call_fd(sva_ctx(ibqp->context), &q, -1, &r, sizeof(r), NULL);
	if (rc != 0)
		return -rc;
	*attr = r.attr;
	attr->cap.max_send_wr = r.cap.max_send_wr;
	attr->cap.max_recv_wr = r.cap.max_recv_wr;
	attr->cap.max_send_sge = r.cap.max_send_sge;
	attr->cap.max_recv_sge = r.cap.max_recv_sge;
	attr->cap.max_inline_data = r.cap.max_inline_data;
	if (init_attr != NULL) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = (int)r.sq_sig_all;
	}
	ibqp->state = attr->qp_state;
	return 0;
}

int
sva_destroy_qp(struct ibv_qp *ibqp)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);
	struct sva_context *ctx = sva_ctx(ibqp->context);
	struct sva_cq *cq[2] = { SVA_OF(struct sva_cq, ibqp->send_cq, ibcq),
				 SVA_OF(struct sva_cq, ibqp->recv_cq, ibcq) };
	unsigned int i;
	int rc = call_destroy(ctx, SVC_DESTROY_QP, qp->handle);

	if (rc != 0)
		return rc;
	for (i = 0; i < SVC_SESSION_QPS_MAX; i++)
		if (__atomic_load_n(&ctx->qp[i], __ATOMIC_RELAXED) == qp)
			__atomic_store_n(&ctx->qp[i], NULL, __ATOMIC_RELEASE);
	/* no poller names it again */
	for (i = 0; i < 2; i++) {
		pthread_spin_lock(&cq[i]->lock);
		if (cq[i]->last == qp)
			cq[i]->last = NULL;
		pthread_spin_unlock(&cq[i]->lock);
	}
	free(qp->sq_sh);
	free(qp->rq_sh);
	sv_qp_ex_free((struct sv_qp_head *)qp);
	evobj_del(sva_ctx(ibqp->context), qp, &ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
		  &qp->events_reported);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	free(qp);
	return 0;
}

/* ibv_create_qp_ex(): ibv_create_qp()'s QP, and with send_ops_flags the
 * ibv_wr_*() calls (verbs_ex.c's builders) posting whole batches into its
 * SQ ring */
static struct ibv_qp *
sva_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp *ibqp;
	bool wr_api;
	int rc = sv_qp_ex_check(context, attr, SVA_QP_EX_SEND_OPS, &wr_api);

	if (rc != 0)
		return null_errno(rc);
	/* struct ibv_qp_init_attr_ex begins with struct ibv_qp_init_attr's
	 * fields (rdma-core's ibv_create_qp_ex() relies on it too) */
	ibqp = sva_create_qp(attr->pd, (struct ibv_qp_init_attr *)attr);
	if (ibqp == NULL)
		return NULL;
	if (wr_api && sv_qp_ex_setup(SVA_OF(struct sv_qp_head, ibqp, ibqp), &attr->cap, NULL,
				     sva_post_send_all, NULL) != 0) {
		sva_destroy_qp(ibqp);
		return null_errno(ENOMEM);
	}
	return ibqp;
}

/* A fork()ed child's copy of a context (the only thread, sva_objs_lock
 * held): its MRs count no page (their pages the child's private copy,
 * sva_mem_fork_child()), its rings private and zero with FATAL in the
 * state line. */
void
sva_dp_fork_child(struct sva_context *ctx)
{
	struct sva_mr *mr;

	/* the pages are the child's private copy (sva_mem_fork_child()) */
	for (mr = ctx->mrs; mr != NULL; mr = mr->next)
		mr->backed = false;
	if (mmap(ctx->shm, sizeof(*ctx->shm), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
		return;
	ctx->shm->state.v = SVC_SHM_FATAL;
}

/* ---- AH ---- */

struct ibv_ah *
sva_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct svc_create_ah_req q;
	struct svc_handle_rep r;
	struct sva_ah *ah;
	int rc;

	ah = calloc(1, sizeof(*ah));
	if (ah == NULL)
		return null_errno(ENOMEM);
	req_init(&q, SVC_CREATE_AH);
	q.pd = SVA_OF(struct sva_pd, ibpd, ibpd)->handle;
	q.attr = *attr;
	rc = sva_call_fd(sva_ctx(ibpd->context), &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		free(ah);
		return null_errno(-rc);
	}
	ah->handle = r.handle;
	ah->ibah.context = ibpd->context;
	ah->ibah.pd = ibpd;
	ah->ibah.handle = r.handle;
	return &ah->ibah;
}

/* The daemon's device reads the GRH area (its GIDs: which one the
 * datagram was sent to): 0, or -1 with errno */
int
sva_init_ah_from_wc(struct ibv_context *context, const struct ibv_wc *wc, const void *grh,
		    struct ibv_ah_attr *attr)
{
	struct svc_init_ah_req q;
	struct svc_init_ah_rep r;
	int rc;

	if (grh == NULL) {
		errno = EINVAL;
		return -1;
	}
	req_init(&q, SVC_INIT_AH_FROM_WC);
	q.dev = sva_ctx(context)->handle;
	q.wc = *wc;
	memcpy(q.grh, grh, SVC_GRH_LEN);
	rc = sva_call_fd(sva_ctx(context), &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		errno = -rc;
		return -1;
	}
	*attr = r.attr;
	return 0;
}

int
sva_destroy_ah(struct ibv_ah *ibah)
{
	struct sva_ah *ah = SVA_OF(struct sva_ah, ibah, ibah);
	int rc = call_destroy(sva_ctx(ibah->context), SVC_DESTROY_AH, ah->handle);

	if (rc == 0)
		free(ah);
	return rc;
}

/* ibv_attach_mcast/ibv_detach_mcast: the daemon's device joins the
 * session's QP to the group; 0 or an errno */
int
sva_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid, bool attach)
{
	struct sva_qp *qp = SVA_OF(struct sva_qp, ibqp, ibqp);
	struct svc_mcast_req q;
	struct svc_handle_rep r;

	req_init(&q, attach ? SVC_ATTACH_MCAST : SVC_DETACH_MCAST);
	q.qp = qp->handle;
	q.lid = lid;
	q.gid = *gid;
	return -sva_call_fd(sva_ctx(ibqp->context), &q, -1, &r, sizeof(r), NULL);
}

/* ---- memory windows: made and freed by the daemon, bound and
 * invalidated through the SQ ring (sva_post_send) ---- */

static struct ibv_mw *
sva_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct svc_alloc_mw_req q;
	struct svc_alloc_mw_rep r;
	struct sva_mw *mw;
	int rc;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return null_errno(EINVAL);
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL)
		return null_errno(ENOMEM);
	req_init(&q, SVC_ALLOC_MW);
	q.pd = SVA_OF(struct sva_pd, ibpd, ibpd)->handle;
	q.type = (uint32_t)type;
	rc = sva_call_fd(sva_ctx(ibpd->context), &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		free(mw);
		return null_errno(-rc);
	}
	mw->handle = r.handle;
	mw->ibmw.context = ibpd->context;
	mw->ibmw.pd = ibpd;
	mw->ibmw.rkey = r.rkey;
	mw->ibmw.handle = r.handle;
	mw->ibmw.type = type;
	return &mw->ibmw;
}

static int
sva_dealloc_mw(struct ibv_mw *ibmw)
{
	struct sva_mw *mw = SVA_OF(struct sva_mw, ibmw, ibmw);
	int rc = call_destroy(sva_ctx(ibmw->context), SVC_DEALLOC_MW, mw->handle);

	if (rc == 0)
		free(mw);
	return rc;
}

static void
sva_ctx_set_ops(struct sva_context *ctx)
{
	ctx->vctx.context.ops.poll_cq = sva_poll_cq;
	ctx->vctx.context.ops.req_notify_cq = sva_req_notify_cq;
	ctx->vctx.context.ops.post_send = sva_post_send;
	ctx->vctx.context.ops.post_recv = sva_post_recv;
	ctx->vctx.context.ops.post_srq_recv = sva_post_srq_recv;
	ctx->vctx.get_srq_num = sva_get_srq_num;
	ctx->vctx.create_cq_ex = sva_create_cq_ex;
	ctx->vctx.create_qp_ex = sva_create_qp_ex;
	ctx->vctx.context.ops.alloc_mw = sva_alloc_mw;
	ctx->vctx.context.ops.dealloc_mw = sva_dealloc_mw;
	ctx->vctx.context.ops.bind_mw = sv_bind_mw;     /* through sva_post_send */
}
