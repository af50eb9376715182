/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs objects over srnic.h: PD, MR, completion channels, CQ, QP, work
 * requests, asynchronous events; the context's ops table (what rdma-core's
 * inline ibv_post_send(), ibv_poll_cq(), ibv_req_notify_cq() call).
 * Verbs return positive errnos (or NULL with errno); srnic negative ones.
 * Bad arguments get the errno rdma-core's rxe provider gives (EINVAL).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>

#include "verbs.h"
#include "verbs_attach.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

/* Access flags srnic enforces; the optional range (IBV_ACCESS_OPTIONAL_RANGE:
 * relaxed ordering and later hints) and HUGETLB are accepted and ignored,
 * as verbs lets a device do. */
/* SRNIC_ACCESS_FLUSH_GLOBAL: rdma-core 45's IBV_ACCESS_FLUSH_GLOBAL;
 * FLUSH_PERSISTENT is refused EOPNOTSUPP, as ib_core on a device without
 * persistence */
#define SV_ACCESS_ENFORCED (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | \
			    SRNIC_ACCESS_FLUSH_GLOBAL)
#define SV_ACCESS_IGNORED (IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_HUGETLB)

static void *
null_errno(int e)
{
	errno = e;
	return NULL;
}

/* ---- PD ---- */

struct ibv_pd *
ibv_alloc_pd(struct ibv_context *context)
{
	struct sv_context *ctx = sv_ctx(context);
	struct sv_pd *pd;

	SV_FORK_NULL("ibv_alloc_pd");
	if (sva_is_ctx(context))
		return sva_alloc_pd(context);
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL)
		return null_errno(ENOMEM);
	pd->spd = srnic_alloc_pd(ctx->dev->sdev);
	if (pd->spd == NULL) {
		free(pd);
		return null_errno(rte_errno != 0 ? rte_errno : ENOMEM);
	}
	pd->ibpd.context = context;
	return &pd->ibpd;
}

int
ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct sv_pd *pd = sv_pd(ibpd);
	int rc;

	SV_FORK_ERRNO("ibv_dealloc_pd");
	if (sva_is_ctx(ibpd->context))
		return sva_dealloc_pd(ibpd);
	rc = srnic_dealloc_pd(pd->spd);
	if (rc < 0)
		return -rc;
	free(pd);
	return 0;
}

/* ---- MR ---- */

struct ibv_mr *
ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t iova,
		 unsigned int access)
{
	struct sv_pd *pd = sv_pd(ibpd);
	struct sv_mr *mr;

	SV_FORK_NULL("ibv_reg_mr");
	if (sva_is_ctx(ibpd->context))
		return sva_reg_mr(ibpd, addr, length, iova, access);
	/* keys at iova, the memory at addr (srnic_reg_mr_iova()); no
	 * on-demand paging */
	if ((access & ~(SV_ACCESS_ENFORCED | SV_ACCESS_IGNORED)) != 0)
		return null_errno(EOPNOTSUPP);
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL)
		return null_errno(ENOMEM);
	mr->smr = srnic_reg_mr_iova(pd->spd, addr, length, iova, (int)(access & SV_ACCESS_ENFORCED),
				    NULL, NULL);
	if (mr->smr == NULL) {
		int e = rte_errno != 0 ? rte_errno : EINVAL;

		free(mr);
		return null_errno(e);
	}
	mr->ibmr.context = ibpd->context;
	mr->ibmr.pd = ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.lkey = srnic_mr_lkey(mr->smr);
	mr->ibmr.rkey = srnic_mr_rkey(mr->smr);
	mr->ibmr.handle = mr->ibmr.lkey;
	return &mr->ibmr;
}

struct ibv_mr *
ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *
ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

struct ibv_mr *
ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova, int fd,
		  int access)
{
	return null_errno(EOPNOTSUPP);
}

/* The old registration of a reregistration, or a deregistered one: wait
 * for its zero-copy packets in flight (ibv_dereg_mr()'s contract below);
 * 0 or a negative errno. */
static int
sv_mr_release(struct sv_device *dev, struct srnic_mr *smr, uint32_t lkey, const char *verb)
{
	bool self = !dev->progress_started;
	uint64_t end = rte_rdtsc() + dev->tsc_hz / 1000000 * SV_DEREG_TIMEOUT_US;
	int rc;

	while ((rc = srnic_dereg_mr_wait(smr, self ? 0 : SV_DEREG_TIMEOUT_US)) == -EBUSY &&
	       self && rte_rdtsc() < end)
		sv_progress(dev, SV_RUN_WAIT);
	if (rc == -EBUSY)
		sv_log("%s: MR %#x: zero-copy packets still hold its memory after %u ms "
		       "(a port that does not drain its TX queue?): EBUSY, the MR stays "
		       "registered (its keys refused); call ibv_dereg_mr() again",
		       verb, lkey, SV_DEREG_TIMEOUT_US / 1000);
	return rc;
}

/*
 * rdma-core's checks and return codes (libibverbs/verbs.c), then srnic's:
 * every flag served. A new translation has new keys (the old rkey refused
 * with a remote access error); its old range is the program's again on
 * return, as after ibv_dereg_mr(), or IBV_REREG_MR_ERR_DO_FORK_OLD with
 * errno EBUSY if zero-copy packets still hold it (it is released when
 * they are freed). An MR with memory windows bound: IBV_REREG_MR_ERR_CMD,
 * errno EBUSY.
 */
int
ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd, void *addr, size_t length,
	     int access)
{
	struct srnic_mr *old, *smr;
	struct sv_mr *mr;
	int rc;

	if (unlikely(sv_forked)) {
		errno = sv_fork_refused("ibv_rereg_mr");
		return IBV_REREG_MR_ERR_CMD;
	}
	if (flags == 0 || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) != 0 ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (addr == NULL || length == 0)) ||
	    (access != 0 && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	if ((flags & IBV_REREG_MR_CHANGE_PD) &&
	    (ibpd == NULL || ibpd->context != ibmr->context)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	if (sva_is_ctx(ibmr->context))
		return sva_rereg_mr(ibmr, flags, ibpd, addr, length, access);
	mr = sv_mr(ibmr);
	old = mr->smr;
	if ((flags & IBV_REREG_MR_CHANGE_ACCESS) &&
	    ((unsigned int)access & ~(SV_ACCESS_ENFORCED | SV_ACCESS_IGNORED)) != 0) {
		errno = EOPNOTSUPP; /* as ibv_reg_mr() refuses those bits */
		return IBV_REREG_MR_ERR_CMD;
	}
	smr = srnic_rereg_mr(old, flags, (flags & IBV_REREG_MR_CHANGE_PD) ? sv_pd(ibpd)->spd : NULL,
			     addr, length, (int)((unsigned int)access & SV_ACCESS_ENFORCED));
	if (smr == NULL) {
		errno = rte_errno != 0 ? rte_errno : EINVAL;
		return IBV_REREG_MR_ERR_CMD;
	}
	mr->smr = smr;
	if (flags & IBV_REREG_MR_CHANGE_PD)
		ibmr->pd = ibpd;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		ibmr->addr = addr;
		ibmr->length = length;
	}
	rc = sv_mr_release(sv_ctx(ibmr->context)->dev, old, ibmr->lkey, "ibv_rereg_mr");
	ibmr->lkey = srnic_mr_lkey(smr);
	ibmr->rkey = srnic_mr_rkey(smr);
	ibmr->handle = ibmr->lkey;
	if (rc < 0) {
		srnic_dereg_mr(old); /* its last packet frees it */
		errno = -rc;
		return IBV_REREG_MR_ERR_DO_FORK_OLD;
	}
	return 0;
}

/* ibv_dereg_mr()'s contract: the memory is the program's again on return.
 * Zero-copy packets in flight still refer to it (a PMD frees them after
 * its DMA, in a later TX burst): wait for them, at most SV_DEREG_TIMEOUT_US,
 * while the progress thread polls (without one, SRNIC_PROGRESS=app, this
 * thread polls between looks). Still in use then (a port that does not
 * drain its TX queue): EBUSY, as verbs says of an MR in use (bound memory
 * windows), and the MR stays the program's, its keys refused, to
 * deregister again later; never 0 while the NIC may still read it. */
int
ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct sv_mr *mr = sv_mr(ibmr);
	int rc;

	SV_FORK_ERRNO("ibv_dereg_mr");
	if (sva_is_ctx(ibmr->context))
		return sva_dereg_mr(ibmr);
	rc = sv_mr_release(sv_ctx(ibmr->context)->dev, mr->smr, ibmr->lkey, "ibv_dereg_mr");
	if (rc < 0)
		return -rc;
	free(mr);
	return 0;
}

/* ---- completion channels ---- */

struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct sv_channel *ch;

	SV_FORK_NULL("ibv_create_comp_channel");
	if (sva_is_ctx(context))
		return sva_create_comp_channel(context);
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		return null_errno(ENOMEM);
	/* one count per queued event; blocking unless the program says
	 * otherwise, as rdma-core's fd */
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		int e = errno;

		free(ch);
		return null_errno(e);
	}
	pthread_mutex_init(&ch->lock, NULL);
	ch->ch.context = context;
	ch->ch.refcnt = 0;
	return &ch->ch;
}

int
ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct sv_channel *ch = sv_channel(channel);

	SV_FORK_ERRNO("ibv_destroy_comp_channel");
	if (sva_is_ctx(channel->context))
		return sva_destroy_comp_channel(channel);
	if (channel->refcnt != 0)
		return EBUSY;
	close(ch->ch.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

/* Waiting for an event drives the engine itself for a short while
 * (SV_EVENT_SPIN_US): in a ping-pong the next completion is a round trip
 * away, and a hand-over to the progress thread and back costs two wake-ups.
 * Then the progress thread takes over and this blocks in poll(), as
 * rdma-core blocks in read() (a non-blocking fd does not wait at all).
 * Without a progress thread (SRNIC_PROGRESS=app) the wait drives the
 * device itself, as the progress thread would. */
int
ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	struct sv_channel *ch = sv_channel(channel);
	struct sv_device *dev;
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
	int flags = fcntl(channel->fd, F_GETFL);
	bool block = flags >= 0 && !(flags & O_NONBLOCK);
	struct sv_drive st;
	struct sv_cq *c;

	SV_FORK_NEG("ibv_get_cq_event");
	if (sva_is_ctx(channel->context))
		return sva_get_cq_event(channel, cq, cq_context);
	dev = sv_ctx(channel->context)->dev;

	if (block) {
		uint64_t end = rte_rdtsc() + dev->tsc_hz / 1000000 * SV_EVENT_SPIN_US;

		while (poll(&pfd, 1, 0) == 0 && rte_rdtsc() < end)
			sv_progress(dev, SV_RUN_WAIT);
	}
	/* the program stops polling: the progress thread takes over now,
	 * not a handover later */
	atomic_store_explicit(&dev->app_poll_tsc, 0, memory_order_relaxed);
	/* another thread may take the event poll() saw, or a destroy drop it */
	sv_drive_init(dev, &st);
	while ((c = sv_channel_pop(ch)) == NULL) {
		if (!block) {
			errno = EAGAIN;
			return -1;
		}
		if (!dev->progress_started)
			sv_drive(dev, &st);     /* SRNIC_PROGRESS=app: nobody else would */
		else if (poll(&pfd, 1, -1) < 0)
			return -1;
	}
	*cq = &c->ibcq;
	*cq_context = c->ibcq.cq_context;
	return 0;
}

void
ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	SV_FORK_VOID("ibv_ack_cq_events");

	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- CQ ---- */

void
verbs_init_cq(struct ibv_cq *cq, struct ibv_context *context,
	      struct ibv_comp_channel *channel, void *cq_context)
{
	cq->context = context;
	cq->channel = channel;
	if (channel != NULL) {
		pthread_mutex_lock(&context->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&context->mutex);
	}
	cq->cq_context = cq_context;
	cq->comp_events_completed = 0;
	cq->async_events_completed = 0;
	pthread_mutex_init(&cq->mutex, NULL);
	pthread_cond_init(&cq->cond, NULL);
}

struct sv_cq *
sv_cq_create(struct ibv_context *context, int cqe, void *cq_context,
	     struct ibv_comp_channel *channel, int comp_vector)
{
	struct sv_context *ctx = sv_ctx(context);
	struct sv_cq *cq;

	SV_FORK_NULL("ibv_create_cq");
	if (sva_is_ctx(context))
		return sva_no_data_path("ibv_create_cq");
	if (comp_vector < 0 || comp_vector >= context->num_comp_vectors)
		return null_errno(EINVAL);
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return null_errno(ENOMEM);
	cq->scq = srnic_create_cq(ctx->dev->sdev, cqe, ctx->dev->eng);
	if (cq->scq == NULL) {
		int e = rte_errno != 0 ? rte_errno : ENOMEM;

		free(cq);
		return null_errno(e);
	}
	cq->dev = ctx->dev;
	verbs_init_cq(&cq->ibcq, context, channel, cq_context);
	cq->ibcq.cqe = srnic_cq_cqe(cq->scq);
	cq->ibcq.handle = 0;
	srnic_cq_set_user(cq->scq, cq);
	return cq;
}

struct ibv_cq *
ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
	      struct ibv_comp_channel *channel, int comp_vector)
{
	struct sv_cq *cq;

	if (sva_is_ctx(context))
		return sva_create_cq(context, cqe, cq_context, channel, comp_vector);
	cq = sv_cq_create(context, cqe, cq_context, channel, comp_vector);
	return cq != NULL ? &cq->ibcq : NULL;
}

int
ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct sv_cq *cq = sv_cq(ibcq);
	struct sv_device *dev;
	bool armed;
	int rc;

	SV_FORK_ERRNO("ibv_destroy_cq");
	if (sva_is_ctx(ibcq->context))
		return sva_destroy_cq(ibcq);
	dev = cq->dev;
	/* off the armed list first: srnic's CQ is freed below */
	armed = sv_cq_armed_del(cq->dev, cq);
	rc = srnic_destroy_cq(cq->scq);
	if (rc < 0) {
		if (armed)
			sv_cq_armed_add(dev, cq);   /* still armed in srnic */
		return -rc;
	}
	sv_async_forget(dev, ibcq);
	/* rdma-core: events still queued go with the CQ, and every event
	 * handed out (completion and async) is acknowledged first */
	if (ibcq->channel != NULL)
		sv_channel_forget(sv_channel(ibcq->channel), cq);
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->async_events_completed != cq->events_reported ||
	       ibcq->comp_events_completed != cq->comp_events_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	if (ibcq->channel != NULL) {
		pthread_mutex_lock(&ibcq->context->mutex);
		ibcq->channel->refcnt--;
		pthread_mutex_unlock(&ibcq->context->mutex);
	}
	pthread_mutex_destroy(&ibcq->mutex);
	pthread_cond_destroy(&ibcq->cond);
	sv_cq_ex_free((struct sv_cq_head *)cq);
	free(cq);
	return 0;
}

int
ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct sv_cq *cq = sv_cq(ibcq);
	int rc;

	SV_FORK_ERRNO("ibv_resize_cq");
	if (sva_is_ctx(ibcq->context)) {
		sva_no_data_path("ibv_resize_cq");
		return EOPNOTSUPP;
	}
	/* rxe: EINVAL for cqe < 1, above the device's max, or below what
	 * the CQ holds now (srnic checks all three); srnic takes the lock
	 * srnic_poll_cq() takes, so polling threads wait out the copy.
	 * "What the CQ holds" includes what posts left to the next poll
	 * complete at once (UD sends: rdma-core's test_resize_cq posts and
	 * resizes, polling nothing): they go first, through an engine poll
	 * of this thread's own (one already under way may have missed them). */
	sv_progress_sync(cq->dev, SV_RUN_WAIT);
	rc = srnic_resize_cq(cq->scq, cqe);
	if (rc < 0)
		return -rc;
	ibcq->cqe = srnic_cq_cqe(cq->scq);
	return 0;
}

static int
sv_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct sv_cq *cq = sv_cq(ibcq);

	SV_FORK_NEG("ibv_poll_cq");
	sv_progress(cq->dev, SV_RUN_POLL);
	if (unlikely(cq->ex != NULL))
		return sv_cq_ex_poll((struct sv_cq_head *)cq, n, wc);
	/* srnic_poll_cq() takes the CQ's own lock: several polling threads
	 * need nothing more here */
	return srnic_poll_cq(cq->scq, n, wc);
}

static int
sv_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct sv_cq *cq = sv_cq(ibcq);
	int rc;

	SV_FORK_ERRNO("ibv_req_notify_cq");
	rc = srnic_cq_arm(cq->scq, solicited_only != 0);
	if (rc < 0)
		return -rc;
	sv_cq_armed_add(cq->dev, cq);
	/* a program arming its CQ stops polling (epoll, ibv_get_cq_event()):
	 * posts left to its next poll go now, and the progress thread takes
	 * over now, not a handover later, as in ibv_get_cq_event() */
	if (atomic_load_explicit(&cq->dev->posts_pending, memory_order_relaxed) != 0)
		sv_progress(cq->dev, SV_RUN_WAIT);
	atomic_store_explicit(&cq->dev->app_poll_tsc, 0, memory_order_relaxed);
	return 0;
}

/* ---- QP ---- */

struct sv_qp *
sv_qp_create(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	struct sv_context *ctx = sv_ctx(ibpd->context);
	struct sv_device *dev = ctx->dev;
	struct srnic_qp_init_attr sa, got;
	struct ibv_qp_attr qa;
	struct sv_qp *qp;

	SV_FORK_NULL("ibv_create_qp");
	if (attr == NULL || attr->send_cq == NULL || attr->recv_cq == NULL)
		return null_errno(EINVAL);
	memset(&sa, 0, sizeof(sa));
	if (attr->srq != NULL) {
		sa.comp_mask = SRNIC_QP_INIT_ATTR_SRQ;
		sa.srq = sv_srq(attr->srq)->ssrq;
	}
	sa.send_cq = sv_cq(attr->send_cq)->scq;
	sa.recv_cq = sv_cq(attr->recv_cq)->scq;
	sa.max_send_wr = attr->cap.max_send_wr;
	sa.max_recv_wr = attr->cap.max_recv_wr;
	sa.max_send_sge = attr->cap.max_send_sge;
	sa.max_recv_sge = attr->cap.max_recv_sge;
	sa.max_inline_data = attr->cap.max_inline_data;
	sa.sq_sig_all = attr->sq_sig_all;
	sa.qp_type = attr->qp_type;     /* srnic says EOPNOTSUPP for the types it lacks */
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return null_errno(ENOMEM);
	qp->sqp = srnic_create_qp(sv_pd(ibpd)->spd, &sa);
	if (qp->sqp == NULL) {
		int e = rte_errno != 0 ? rte_errno : EINVAL;

		free(qp);
		return null_errno(e);
	}
	/* verbs: cap comes back with what the QP has */
	if (srnic_query_qp(qp->sqp, &qa, 0, &got) == 0) {
		attr->cap.max_send_wr = got.max_send_wr;
		attr->cap.max_recv_wr = got.max_recv_wr;
		attr->cap.max_send_sge = got.max_send_sge;
		attr->cap.max_recv_sge = got.max_recv_sge;
		attr->cap.max_inline_data = got.max_inline_data;
	}
	qp->dev = dev;
	rte_spinlock_init(&qp->sq_lock);
	rte_spinlock_init(&qp->rq_lock);
	qp->ibqp.context = ibpd->context;
	qp->ibqp.qp_context = attr->qp_context;
	qp->ibqp.pd = ibpd;
	qp->ibqp.send_cq = attr->send_cq;
	qp->ibqp.recv_cq = attr->recv_cq;
	qp->ibqp.srq = attr->srq;
	qp->ibqp.events_completed = 0;
	qp->ibqp.qp_num = srnic_qp_num(qp->sqp);
	qp->ibqp.handle = qp->ibqp.qp_num;
	qp->ibqp.state = IBV_QPS_RESET;
	qp->ibqp.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibqp.mutex, NULL);
	pthread_cond_init(&qp->ibqp.cond, NULL);
	srnic_qp_set_user(qp->sqp, qp);
	return qp;
}

struct ibv_qp *
ibv_create_qp(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr)
{
	struct sv_qp *qp;

	if (ibpd == NULL)
		return null_errno(EINVAL);
	if (sva_is_ctx(ibpd->context))
		return sva_create_qp(ibpd, attr);
	qp = sv_qp_create(ibpd, attr);
	return qp != NULL ? &qp->ibqp : NULL;
}

int
ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct sv_qp *qp = sv_qp(ibqp);
	struct sv_device *dev;
	int rc;

	SV_FORK_ERRNO("ibv_destroy_qp");
	if (sva_is_ctx(ibqp->context))
		return sva_destroy_qp(ibqp);
	dev = qp->dev;
	rc = srnic_destroy_qp(qp->sqp);
	if (rc < 0)
		return -rc;
	sv_async_forget(dev, ibqp);
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->events_reported)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	sv_qp_ex_free((struct sv_qp_head *)qp);
	free(qp);
	return 0;
}

int
ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask)
{
	struct sv_qp *qp = sv_qp(ibqp);
	int rc;

	SV_FORK_ERRNO("ibv_modify_qp");
	if (sva_is_ctx(ibqp->context))
		return sva_modify_qp(ibqp, attr, attr_mask);
	rc = srnic_modify_qp(qp->sqp, attr, attr_mask);
	if (rc < 0)
		return -rc;
	if (attr_mask & IBV_QP_STATE)
		ibqp->state = attr->qp_state;
	return 0;
}

int
ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr)
{
	struct sv_qp *qp = sv_qp(ibqp);
	struct srnic_qp_init_attr got;
	int rc;

	SV_FORK_ERRNO("ibv_query_qp");
	if (sva_is_ctx(ibqp->context))
		return sva_query_qp(ibqp, attr, attr_mask, init_attr);
	memset(&got, 0, sizeof(got));
	rc = srnic_query_qp(qp->sqp, attr, attr_mask, &got);
	if (rc < 0)
		return -rc;
	if (init_attr != NULL) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = ibqp->qp_context;
		init_attr->send_cq = ibqp->send_cq;
		init_attr->recv_cq = ibqp->recv_cq;
		init_attr->srq = ibqp->srq;
		init_attr->cap.max_send_wr = got.max_send_wr;
		init_attr->cap.max_recv_wr = got.max_recv_wr;
		init_attr->cap.max_send_sge = got.max_send_sge;
		init_attr->cap.max_recv_sge = got.max_recv_sge;
		init_attr->cap.max_inline_data = got.max_inline_data;
		init_attr->qp_type = ibqp->qp_type;
		init_attr->sq_sig_all = got.sq_sig_all;
	}
	ibqp->state = attr->qp_state;
	return 0;
}

static int
sv_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct sv_qp *qp = sv_qp(ibqp);
	int rc;

	SV_FORK_POST("ibv_post_send");
	rte_spinlock_lock(&qp->sq_lock);
	rc = srnic_post_send(qp->sqp, wr, bad_wr);
	rte_spinlock_unlock(&qp->sq_lock);
	/* the engine runs now, or at the program's next ibv_poll_cq() when it
	 * polls (sv_post_progress()); posting is not polling: a program that
	 * posts and then waits elsewhere (ib_write_lat spins on its buffer)
	 * still needs the progress thread */
	sv_post_progress(qp->dev);
	return rc;
}

static int
sv_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sv_qp *qp = sv_qp(ibqp);
	int rc;

	SV_FORK_POST("ibv_post_recv");
	rte_spinlock_lock(&qp->rq_lock);
	rc = srnic_post_recv(qp->sqp, wr, bad_wr);
	rte_spinlock_unlock(&qp->rq_lock);
	sv_post_progress(qp->dev);
	return rc;
}

int
ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return 0;   /* "not guaranteed", the answer for a device that does not say */
}

int
ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

int
ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

/* ---- asynchronous events ---- */

/* A queued event whose object went (sv_async_forget()): skipped. */
#define SV_EVENT_GONE ((enum ibv_event_type)-1)

static bool
event_is_port(enum ibv_event_type t)
{
	return t == IBV_EVENT_PORT_ACTIVE || t == IBV_EVENT_PORT_ERR ||
	       t == IBV_EVENT_LID_CHANGE || t == IBV_EVENT_PKEY_CHANGE ||
	       t == IBV_EVENT_SM_CHANGE || t == IBV_EVENT_CLIENT_REREGISTER ||
	       t == IBV_EVENT_GID_CHANGE || t == IBV_EVENT_DEVICE_FATAL;
}

static bool
event_is_srq(enum ibv_event_type t)
{
	return t == IBV_EVENT_SRQ_ERR || t == IBV_EVENT_SRQ_LIMIT_REACHED;
}

/* Also the destroy's wait for sv_async_pump(): it hands events out under
 * ctx_lock, so once this took the lock, none names obj (srnic's object is
 * gone: its events come with no user pointer) but those marked here. */
void
sv_async_forget(struct sv_device *dev, const void *obj)
{
	struct sv_context *ctx;

	pthread_mutex_lock(&dev->ctx_lock);
	TAILQ_FOREACH(ctx, &dev->ctxs, next) {
		uint32_t k;

		pthread_mutex_lock(&ctx->async_lock);
		for (k = ctx->async_tail; k != ctx->async_head; k++) {
			struct ibv_async_event *e = &ctx->async[k % SV_ASYNC_RING];

			if (e->event_type != SV_EVENT_GONE && !event_is_port(e->event_type) &&
			    e->element.qp == obj)
				e->event_type = SV_EVENT_GONE;
		}
		pthread_mutex_unlock(&ctx->async_lock);
	}
	pthread_mutex_unlock(&dev->ctx_lock);
}

/* SRNIC_PROGRESS=app: the engine's events reach a context's queue only
 * from a thread that drives the device: this one, until one is there (or
 * once, on a non-blocking fd) */
static void
async_app_wait(struct sv_device *dev, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int flags = fcntl(fd, F_GETFL);
	struct sv_drive st;

	sv_drive_init(dev, &st);
	sv_async_pump(dev);
	while (flags >= 0 && !(flags & O_NONBLOCK) && poll(&pfd, 1, 0) == 0)
		sv_drive(dev, &st);
}

int
ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct sv_context *ctx;
	struct sv_device *dev;
	uint64_t one;

	SV_FORK_NEG("ibv_get_async_event");
	if (sva_is_ctx(context))
		return sva_get_async_event(context, event);
	ctx = sv_ctx(context);
	dev = ctx->dev;
	for (;;) {
		if (!dev->progress_started)
			async_app_wait(dev, context->async_fd);
		/* blocks unless the program made the fd non-blocking, as rdma-core */
		if (read(context->async_fd, &one, sizeof(one)) != sizeof(one))
			return -1;
		pthread_mutex_lock(&ctx->async_lock);
		*event = ctx->async[ctx->async_tail++ % SV_ASYNC_RING];
		/* handed out: its object's destroy now waits for the ack
		 * (rdma-core's events_reported); under async_lock, so a
		 * destroy's forget either saw it queued or sees it counted */
		if (event->event_type == SV_EVENT_GONE) {
			pthread_mutex_unlock(&ctx->async_lock);
			continue;
		}
		if (event_is_port(event->event_type)) {
			/* nothing to count */
		} else if (event_is_srq(event->event_type)) {
			struct ibv_srq *srq = event->element.srq;

			pthread_mutex_lock(&srq->mutex);
			sv_srq(srq)->events_reported++;
			pthread_mutex_unlock(&srq->mutex);
		} else if (event->event_type == IBV_EVENT_CQ_ERR) {
			struct ibv_cq *cq = event->element.cq;

			pthread_mutex_lock(&cq->mutex);
			sv_cq(cq)->events_reported++;
			pthread_mutex_unlock(&cq->mutex);
		} else {
			struct ibv_qp *qp = event->element.qp;

			pthread_mutex_lock(&qp->mutex);
			sv_qp(qp)->events_reported++;
			pthread_mutex_unlock(&qp->mutex);
		}
		pthread_mutex_unlock(&ctx->async_lock);
		return 0;
	}
}

void
ibv_ack_async_event(struct ibv_async_event *event)
{
	enum ibv_event_type t = event->event_type;

	SV_FORK_VOID("ibv_ack_async_event");
	if (event_is_port(t))
		return;
	if (event_is_srq(t)) {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
	} else if (t == IBV_EVENT_CQ_ERR) {
		struct ibv_cq *cq = event->element.cq;

		pthread_mutex_lock(&cq->mutex);
		cq->async_events_completed++;
		pthread_cond_signal(&cq->cond);
		pthread_mutex_unlock(&cq->mutex);
	} else {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_signal(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
	}
}

/* ---- SRQ ---- */

struct ibv_srq *
ibv_create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *attr)
{
	struct sv_context *ctx;
	struct sv_srq *srq;

	SV_FORK_NULL("ibv_create_srq");
	if (ibpd == NULL || attr == NULL)
		return null_errno(EINVAL);
	if (sva_is_ctx(ibpd->context))
		return sva_create_srq(ibpd, attr);
	ctx = sv_ctx(ibpd->context);
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL)
		return null_errno(ENOMEM);
	srq->ssrq = srnic_create_srq(sv_pd(ibpd)->spd, attr, ctx->dev->eng);
	if (srq->ssrq == NULL) {
		int e = rte_errno != 0 ? rte_errno : EINVAL;

		free(srq);
		return null_errno(e);
	}
	srq->dev = ctx->dev;
	rte_spinlock_init(&srq->lock);
	srq->ibsrq.context = ibpd->context;
	srq->ibsrq.srq_context = attr->srq_context;
	srq->ibsrq.pd = ibpd;
	srq->ibsrq.handle = srnic_srq_num(srq->ssrq);
	srq->ibsrq.events_completed = 0;
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	srnic_srq_set_user(srq->ssrq, srq);
	return &srq->ibsrq;
}

int
ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct sv_srq *srq = sv_srq(ibsrq);
	int rc;

	SV_FORK_ERRNO("ibv_modify_srq");
	if (attr == NULL)
		return EINVAL;
	if (sva_is_ctx(ibsrq->context))
		return sva_modify_srq(ibsrq, attr, mask);
	/* a resize copies the posted WQEs: no post meanwhile */
	rte_spinlock_lock(&srq->lock);
	rc = srnic_modify_srq(srq->ssrq, attr, mask);
	rte_spinlock_unlock(&srq->lock);
	return -rc;
}

int
ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	SV_FORK_ERRNO("ibv_query_srq");

	if (attr == NULL)
		return EINVAL;
	if (sva_is_ctx(ibsrq->context))
		return sva_query_srq(ibsrq, attr);
	return -srnic_query_srq(sv_srq(ibsrq)->ssrq, attr);
}

int
ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct sv_srq *srq = sv_srq(ibsrq);
	struct sv_device *dev;
	int rc;

	SV_FORK_ERRNO("ibv_destroy_srq");
	if (sva_is_ctx(ibsrq->context))
		return sva_destroy_srq(ibsrq);
	dev = srq->dev;
	rc = srnic_destroy_srq(srq->ssrq);
	if (rc < 0)
		return -rc;     /* EBUSY while a QP uses it, as rxe */
	sv_async_forget(dev, ibsrq);
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->events_reported)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq);
	return 0;
}

static int
sv_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct sv_srq *srq = sv_srq(ibsrq);
	int rc;

	SV_FORK_POST("ibv_post_srq_recv");
	rte_spinlock_lock(&srq->lock);
	rc = srnic_post_srq_recv(srq->ssrq, wr, bad_wr);
	rte_spinlock_unlock(&srq->lock);
	sv_progress(srq->dev, SV_RUN_POST);
	return rc;
}

/* verbs_context->get_srq_num: the inline ibv_get_srq_num()'s target */
static int
sv_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = srnic_srq_num(sv_srq(ibsrq)->ssrq);
	return 0;
}

/* ---- AH ---- */

struct ibv_ah *
ibv_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct srnic_ah *ah;
	struct ibv_ah *ia;

	SV_FORK_NULL("ibv_create_ah");
	if (ibpd == NULL || attr == NULL)
		return null_errno(EINVAL);
	if (sva_is_ctx(ibpd->context))
		return sva_create_ah(ibpd, attr);
	ah = srnic_create_ah(sv_pd(ibpd)->spd, attr);
	if (ah == NULL)
		return null_errno(rte_errno != 0 ? rte_errno : EINVAL);
	ia = srnic_ah_ibv(ah);
	ia->context = ibpd->context;
	ia->pd = ibpd;
	ia->handle = 0;
	return ia;
}

int
ibv_destroy_ah(struct ibv_ah *ah)
{
	SV_FORK_ERRNO("ibv_destroy_ah");

	if (ah == NULL)
		return EINVAL;
	if (sva_is_ctx(ah->context))
		return sva_destroy_ah(ah);
	return -srnic_destroy_ah(srnic_ah_from_ibv(ah));
}

int
ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
		    struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	int rc;

	if (context == NULL || wc == NULL || ah_attr == NULL || port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	if (sva_is_ctx(context))
		return sva_init_ah_from_wc(context, wc, grh, ah_attr);
	rc = srnic_init_ah_from_wc(sv_ctx(context)->dev->sdev, wc, grh, ah_attr);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	return 0;
}

struct ibv_ah *
ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
		      uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (pd == NULL || ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0)
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* ---- multicast (srnic_attach_mcast()): 0 or an errno, as rdma-core ---- */

static int
sv_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid,
	 int (*op)(struct srnic_qp *, const union ibv_gid *, uint16_t))
{
	int rc;

	if (qp == NULL || gid == NULL)
		return EINVAL;
	if (sva_is_ctx(qp->context))
		rc = -sva_mcast(qp, gid, lid, op == srnic_attach_mcast);
	else
		rc = op(sv_qp(qp)->sqp, gid, lid);
	if (rc < 0) {
		errno = -rc;
		return -rc;
	}
	return 0;
}

int
ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return sv_mcast(qp, gid, lid, srnic_attach_mcast);
}

int
ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return sv_mcast(qp, gid, lid, srnic_detach_mcast);
}

/* ---- memory windows (srnic_alloc_mw()) ---- */

static struct ibv_mw *
sv_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct srnic_mw *smw;
	struct ibv_mw *mw;

	SV_FORK_NULL("ibv_alloc_mw");
	smw = srnic_alloc_mw(sv_pd(ibpd)->spd, type);
	if (smw == NULL)
		return null_errno(rte_errno != 0 ? rte_errno : EINVAL);
	mw = srnic_mw_ibv(smw);
	mw->context = ibpd->context;
	mw->pd = ibpd;
	mw->handle = mw->rkey;
	return mw;
}

/* ibv_bind_mw() (type 1, checked by rdma-core's inline wrapper): a BIND_MW
 * send WR with the next key byte, as rdma-core's providers post it; the
 * window's rkey is the new one once posted (rxe's rxe_bind_mw()). Through
 * the context's post_send: the attached provider's too. */
int
sv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct ibv_send_wr wr = { .wr_id = bind->wr_id, .opcode = IBV_WR_BIND_MW,
				  .send_flags = bind->send_flags }, *bad;
	int rc;

	SV_FORK_ERRNO("ibv_bind_mw");
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = bind->bind_info;
	rc = qp->context->ops.post_send(qp, &wr, &bad);
	if (rc == 0)
		mw->rkey = wr.bind_mw.rkey;
	return rc;
}

static int
sv_dealloc_mw(struct ibv_mw *mw)
{
	SV_FORK_ERRNO("ibv_dealloc_mw");

	return -srnic_dealloc_mw(srnic_mw_from_ibv(mw));
}

/* The inline calls' table: every entry set, so no application path meets
 * a NULL. The extended (verbs_context) ops srnic has are set by
 * sv_ctx_set_ex_ops(); the others stay NULL: rdma-core's inline wrappers
 * then answer EOPNOTSUPP (ibv_alloc_td, ibv_create_wq, ...). */
static const struct ibv_context_ops sv_ops = {
	.alloc_mw = sv_alloc_mw,
	.bind_mw = sv_bind_mw,
	.dealloc_mw = sv_dealloc_mw,
	.poll_cq = sv_poll_cq,
	.req_notify_cq = sv_req_notify_cq,
	.post_srq_recv = sv_post_srq_recv,
	.post_send = sv_post_send,
	.post_recv = sv_post_recv,
};

void
sv_ctx_set_ops(struct sv_context *ctx)
{
	ctx->vctx.context.ops = sv_ops;
	ctx->vctx.get_srq_num = sv_get_srq_num;
	sv_ctx_set_ex_ops(ctx);
}
