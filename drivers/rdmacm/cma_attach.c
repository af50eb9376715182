/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attached CM (doc/srnicd.md section 7, doc/rdmacm.md): cma.c's CM
 * table (struct cma_cm_ops) when the process's device is srnicd's. The
 * CM and ARP/ND are the daemon's; each call here is a control message on
 * the session of the context cma_init() opened (lib/svc's SVC_CM_*), so
 * the ids belong to that session and die with it. The daemon's CM events
 * come on the event socket CM_OPEN hands over; this file's thread reads
 * them and calls the id's handler (cma.c's cma_handler), as lib/cm's poll
 * does in embedded mode, and runs cma.c's tick for address resolutions.
 *
 * An id here is a slot of att.ids, the slot of the daemon's handle; cma.c
 * holds it as a struct srnic_cm_id pointer (never dereferenced there).
 * As srnic_cm_destroy_id(), destroying an id waits for a handler running
 * on it (never called under cma_lock, which the handler takes). One way
 * between the files: cma.c calls this one, never the other way (cma.c's
 * handler and tick come as pointers).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rdmacm.h"
#include "srnic_svc.h"
#include "test_hooks.h"

_Static_assert(sizeof(struct srnic_cm_req_param) <= SVC_CM_PARAM_MAX, "REQ's param fits");
_Static_assert(sizeof(struct srnic_cm_rep_param) <= SVC_CM_PARAM_MAX, "REP's param fits");
_Static_assert(sizeof(struct srnic_cm_sidr_req_param) <= SVC_CM_PARAM_MAX, "SIDR_REQ's fits");
_Static_assert(sizeof(struct srnic_cm_sidr_rep_param) <= SVC_CM_PARAM_MAX, "SIDR_REP's fits");
_Static_assert(sizeof(((struct srnic_cm_event *)0)->param) <= SVC_CM_PARAM_MAX, "events fit");

#define ATT_SLOT_MASK 0xfffu            /* the daemon's handle: its slot + 1 */

struct att_id {
	uint32_t handle;                /* the daemon's; 0: a free slot */
	srnic_cm_handler handler;
	void *context;
	unsigned int busy;              /* its handler runs on the event thread */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t idle;            /* a handler returned */
	struct ibv_context *verbs;
	uint32_t dev;                   /* the session's device handle */
	int ev_fd;                      /* the event socket */
	int wake_fd;                    /* eventfd: a resolution began */
	pthread_t thread;
	unsigned int (*tick)(void);
	struct att_id ids[SVC_SESSION_CM_IDS_MAX];
#ifdef SRNIC_TEST_HOOKS
	bool hold_req;                  /* test hooks: see att_dispatch() */
	bool hold_handler;
	unsigned int freed;             /* hold_handler: rdma_destroy_id()'s frees */
	bool release_waits;             /* hold_handler: an att_release() waits for a handler */
#endif
} att = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.idle = PTHREAD_COND_INITIALIZER,
	.ev_fd = -1,
	.wake_fd = -1,
};

static inline struct att_id *
att_of(const struct srnic_cm_id *c)
{
	return (struct att_id *)(uintptr_t)c;
}

static inline struct srnic_cm_id *
cm_of(struct att_id *x)
{
	return (struct srnic_cm_id *)(void *)x;
}

/* The slot a daemon's handle names, or NULL (a handle the daemon never gives). */
static struct att_id *
att_slot(uint32_t handle)
{
	unsigned int slot = (handle & ATT_SLOT_MASK) - 1;

	if ((handle & ATT_SLOT_MASK) == 0 || slot >= SVC_SESSION_CM_IDS_MAX)
		return NULL;
	return &att.ids[slot];
}

static int
att_call(void *req, void *rep, size_t cap)
{
	return srnic_verbs_attach_call(att.verbs, req, -1, rep, cap, NULL);
}

static int
att_call_handle(uint16_t type, uint32_t handle, struct svc_handle_rep *r)
{
	struct svc_handle_req q;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, type, 0, 0, 0);
	q.handle = handle;
	return att_call(&q, r, sizeof(*r));
}

/* The slot x the daemon's new id handle names, made that id's (att.lock
 * held). */
static struct srnic_cm_id *
att_take(struct att_id *x, uint32_t handle, srnic_cm_handler handler, void *context)
{
	while (x->busy > 0)     /* the slot's last id: its handler still runs */
		pthread_cond_wait(&att.idle, &att.lock);
	x->handle = handle;
	x->handler = handler;
	x->context = context;
	return cm_of(x);
}

static struct srnic_cm_id *
att_create_id(srnic_cm_handler handler, void *context)
{
	struct svc_handle_rep r;
	struct srnic_cm_id *c;
	struct att_id *x;
	int rc;

	rc = att_call_handle(SVC_CM_CREATE_ID, att.dev, &r);
	if (rc != 0 || (x = att_slot(r.handle)) == NULL) {
		errno = rc != 0 ? -rc : EPROTO;
		return NULL;
	}
	pthread_mutex_lock(&att.lock);
	c = att_take(x, r.handle, handler, context);
	pthread_mutex_unlock(&att.lock);
	return c;
}

/* The slot freed; its handler awaited unless this is its own thread. The
 * daemon's handle, 0 if it was free already. */
static uint32_t
att_release(struct att_id *x)
{
	uint32_t h;

	pthread_mutex_lock(&att.lock);
	h = x->handle;
	x->handle = 0;
	x->context = NULL;
#ifdef SRNIC_TEST_HOOKS
	pthread_cond_broadcast(&att.idle);      /* for the hook hold_req */
#endif
	if (!pthread_equal(pthread_self(), att.thread))
		while (x->busy > 0) {
#ifdef SRNIC_TEST_HOOKS
			att.release_waits = true;
			pthread_cond_broadcast(&att.idle);
#endif
			pthread_cond_wait(&att.idle, &att.lock);
		}
	pthread_mutex_unlock(&att.lock);
	return h;
}

#ifdef SRNIC_TEST_HOOKS
void
cma_attach_hook_freed(void)
{
	pthread_mutex_lock(&att.lock);
	att.freed++;
	pthread_cond_broadcast(&att.idle);
	pthread_mutex_unlock(&att.lock);
}

/* A hook's wait on att.idle (att.lock held) till end: false once it passed */
static bool
att_hook_wait(const struct timespec *end)
{
	return pthread_cond_timedwait(&att.idle, &att.lock, end) != ETIMEDOUT;
}

static void
att_hook_end(struct timespec *end)
{
	clock_gettime(CLOCK_REALTIME, end);     /* att.idle's clock */
	end->tv_sec += srnic_test_hook_hold_s();
}
#endif

static int
att_destroy_id(struct srnic_cm_id *c)
{
	struct svc_handle_rep r;
	uint32_t h = att_release(att_of(c));

	return h == 0 ? -EINVAL : att_call_handle(SVC_CM_DESTROY_ID, h, &r);
}

static void *
att_id_context(const struct srnic_cm_id *c)
{
	struct att_id *x = att_of(c);
	void *ctx;

	pthread_mutex_lock(&att.lock);
	ctx = x->handle != 0 ? x->context : NULL;
	pthread_mutex_unlock(&att.lock);
	return ctx;
}

static void
att_id_set_context(struct srnic_cm_id *c, void *context)
{
	struct att_id *x = att_of(c);

	pthread_mutex_lock(&att.lock);
	if (x->handle != 0)
		x->context = context;
	pthread_mutex_unlock(&att.lock);
}

static uint32_t
att_handle(const struct srnic_cm_id *c)
{
	struct att_id *x = att_of(c);
	uint32_t h;

	pthread_mutex_lock(&att.lock);
	h = x->handle;
	pthread_mutex_unlock(&att.lock);
	return h;
}

static enum srnic_cm_state
att_id_state(const struct srnic_cm_id *c)
{
	struct svc_handle_rep r;

	if (att_call_handle(SVC_CM_STATE, att_handle(c), &r) != 0)
		return SRNIC_CM_IDLE;
	return (enum srnic_cm_state)r.handle;
}

static int
att_listen(uint16_t type, uint32_t handle, uint64_t service_id, uint64_t service_mask,
	   struct svc_handle_rep *r)
{
	struct svc_cm_listen_req q;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, type, 0, 0, 0);
	q.id = handle;
	q.service_id = service_id;
	q.service_mask = service_mask;
	return att_call(&q, r, sizeof(*r));
}

/* rdma_listen()'s id: CM_CREATE_LISTEN, one round trip (a daemon of
 * protocol minor 0: CM_CREATE_ID, then CM_LISTEN). The daemon's REQ
 * for it may come on the event thread before the reply names the id
 * here: att.lock, held from before the call until the slot is the id's,
 * keeps att_dispatch() from taking it for an id destroyed meanwhile. */
static struct srnic_cm_id *
att_create_listen(srnic_cm_handler handler, void *context, uint64_t service_id,
		  uint64_t service_mask)
{
	struct svc_handle_rep r;
	struct srnic_cm_id *c;
	struct att_id *x = NULL;
	int rc;

	if (srnic_verbs_attach_minor(att.verbs) < 1) {
		c = att_create_id(handler, context);

		if (c == NULL)
			return NULL;
		rc = att_listen(SVC_CM_LISTEN, att_handle(c), service_id, service_mask, &r);
		if (rc != 0) {
			att_destroy_id(c);
			errno = -rc;
			return NULL;
		}
		return c;
	}
	pthread_mutex_lock(&att.lock);
	rc = att_listen(SVC_CM_CREATE_LISTEN, att.dev, service_id, service_mask, &r);
	if (rc == 0 && (x = att_slot(r.handle)) == NULL) {
		/* a handle no slot of ours can be: the daemon's listen given
		 * back, not left holding the port for the session's life */
		att_call_handle(SVC_CM_DESTROY_ID, r.handle, &r);
		rc = -EPROTO;
	}
	if (rc != 0) {
		pthread_mutex_unlock(&att.lock);
		errno = -rc;
		return NULL;
	}
	/* (while the slot's last id's handler runs, a REQ for the new one
	 * is taken for a gone id's: REJ) */
	c = att_take(x, r.handle, handler, context);
	pthread_mutex_unlock(&att.lock);
	return c;
}

/* One SVC_CM_SEND: what, lib/cm's param struct (param, n bytes; its
 * pointers the daemon replaces), arg, ARI or info, private data. */
static int
att_send_h(uint32_t id, enum svc_cm_send what, const void *param, size_t n, uint32_t arg,
	   const void *ari, uint8_t ari_len, const void *pdata, uint8_t pdata_len)
{
	struct svc_cm_send_req q;
	struct svc_handle_rep r;

	if (n > sizeof(q.param) || (ari_len > 0 && ari == NULL) || ari_len > sizeof(q.ari) ||
	    (pdata_len > 0 && pdata == NULL) || pdata_len > sizeof(q.pdata))
		return -EINVAL;
	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_CM_SEND, 0, 0, 0);
	q.id = id;
	q.what = what;
	q.arg = arg;
	if (n > 0)
		memcpy(q.param, param, n);
	q.ari_len = ari_len;
	if (ari_len > 0)
		memcpy(q.ari, ari, ari_len);
	q.pdata_len = pdata_len;
	if (pdata_len > 0)
		memcpy(q.pdata, pdata, pdata_len);
	return att_call(&q, &r, sizeof(r));
}

static int
att_send(struct srnic_cm_id *c, enum svc_cm_send what, const void *param, size_t n, uint32_t arg,
	 const void *ari, uint8_t ari_len, const void *pdata, uint8_t pdata_len)
{
	return att_send_h(att_handle(c), what, param, n, arg, ari, ari_len, pdata, pdata_len);
}

static int
att_send_req(struct srnic_cm_id *c, const struct srnic_cm_req_param *p)
{
	return att_send(c, SVC_CM_S_REQ, p, sizeof(*p), 0, NULL, 0, p->private_data,
			p->private_data_len);
}

static int
att_send_rep(struct srnic_cm_id *c, const struct srnic_cm_rep_param *p)
{
	return att_send(c, SVC_CM_S_REP, p, sizeof(*p), 0, NULL, 0, p->private_data,
			p->private_data_len);
}

static int
att_send_rtu(struct srnic_cm_id *c, const void *pdata, uint8_t len)
{
	return att_send(c, SVC_CM_S_RTU, NULL, 0, 0, NULL, 0, pdata, len);
}

static int
att_send_rej(struct srnic_cm_id *c, enum srnic_cm_rej_reason reason, const void *ari,
	     uint8_t ari_length, const void *pdata, uint8_t len)
{
	return att_send(c, SVC_CM_S_REJ, NULL, 0, (uint32_t)reason, ari, ari_length, pdata, len);
}

static int
att_send_mra(struct srnic_cm_id *c, uint8_t service_timeout, const void *pdata, uint8_t len)
{
	return att_send(c, SVC_CM_S_MRA, NULL, 0, service_timeout, NULL, 0, pdata, len);
}

static int
att_send_dreq(struct srnic_cm_id *c, const void *pdata, uint8_t len)
{
	return att_send(c, SVC_CM_S_DREQ, NULL, 0, 0, NULL, 0, pdata, len);
}

static int
att_send_drep(struct srnic_cm_id *c, const void *pdata, uint8_t len)
{
	return att_send(c, SVC_CM_S_DREP, NULL, 0, 0, NULL, 0, pdata, len);
}

static int
att_send_sidr_req(struct srnic_cm_id *c, const struct srnic_cm_sidr_req_param *p)
{
	return att_send(c, SVC_CM_S_SIDR_REQ, p, sizeof(*p), 0, NULL, 0, p->private_data,
			p->private_data_len);
}

static int
att_send_sidr_rep(struct srnic_cm_id *c, const struct srnic_cm_sidr_rep_param *p)
{
	return att_send(c, SVC_CM_S_SIDR_REP, p, sizeof(*p), 0, p->info, p->info_length,
			p->private_data, p->private_data_len);
}

static int
att_established(struct srnic_cm_id *c)
{
	return att_send(c, SVC_CM_S_ESTABLISHED, NULL, 0, 0, NULL, 0, NULL, 0);
}

static int
att_init_qp_attr(struct srnic_cm_id *c, struct ibv_qp_attr *qp_attr, int *mask)
{
	struct svc_cm_qp_attr_req q;
	struct svc_cm_qp_attr_rep r;
	int rc;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_CM_INIT_QP_ATTR, 0, 0, 0);
	q.id = att_handle(c);
	q.attr = *qp_attr;
	rc = att_call(&q, &r, sizeof(r));
	if (rc == 0) {
		*qp_attr = r.attr;
		*mask = r.mask;
	}
	return rc;
}

static int
att_resolve_neigh(const union ibv_gid *gid)
{
	struct svc_cm_resolve_req q;
	struct svc_handle_rep r;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_CM_RESOLVE, 0, 0, 0);
	q.dev = att.dev;
	memcpy(q.gid, gid->raw, sizeof(q.gid));
	return att_call(&q, &r, sizeof(r));
}

const struct cma_cm_ops cma_attach_ops = {
	.create_id = att_create_id,
	.destroy_id = att_destroy_id,
	.id_context = att_id_context,
	.id_set_context = att_id_set_context,
	.id_state = att_id_state,
	.create_listen = att_create_listen,
	.send_req = att_send_req,
	.send_rep = att_send_rep,
	.send_rtu = att_send_rtu,
	.send_rej = att_send_rej,
	.send_mra = att_send_mra,
	.send_dreq = att_send_dreq,
	.send_drep = att_send_drep,
	.send_sidr_req = att_send_sidr_req,
	.send_sidr_rep = att_send_sidr_rep,
	.established = att_established,
	.init_qp_attr = att_init_qp_attr,
	.resolve_neigh = att_resolve_neigh,
};

/* One event of the daemon's to its id's handler, as lib/cm's poll calls
 * it: for a REQ, the new id (the listener's handler and context) with the
 * listener in the event. A nonzero return destroys the id (its REJ). */
static void
att_dispatch(const struct svc_cm_event *m)
{
	struct att_id *x = att_slot(m->id), *nx = NULL, *target;
	bool req = m->type == SRNIC_CM_EV_REQ_RECEIVED ||
		   m->type == SRNIC_CM_EV_SIDR_REQ_RECEIVED;
	struct srnic_cm_event ev;
	srnic_cm_handler handler = NULL;
	struct svc_handle_rep r;
	bool gone;
	int rc;
#ifdef SRNIC_TEST_HOOKS
	struct timespec end;
	unsigned int freed;
#endif

	if (req && (nx = att_slot(m->new_id)) == NULL)
		return;
#ifdef SRNIC_TEST_HOOKS
	/* SRNIC_RDMACM_TEST_HOLD_REQ=1 (test/rdmacm/hooks' build only): a
	 * REQ's event waits here until its listen id is destroyed, so a test
	 * has it come after the listen is gone every time (a CM thread
	 * scheduled out meanwhile does so under load) */
	if (req && att.hold_req && x != NULL) {
		fputs("srnic librdmacm: test hook: a REQ held until its listen id is gone\n", stderr);
		att_hook_end(&end);
		pthread_mutex_lock(&att.lock);
		while (x->handle == m->id)
			if (!att_hook_wait(&end)) {
				fputs("srnic librdmacm: test hook: the listen id stays, "
				      "the REQ goes on\n", stderr);
				break;
			}
		pthread_mutex_unlock(&att.lock);
	}
#endif
	pthread_mutex_lock(&att.lock);
	gone = x == NULL || x->handle != m->id;
	if (!gone && (!req || nx->handle == 0)) {
		handler = x->handler;
		if (req) {
			nx->handle = m->new_id;
			nx->handler = x->handler;
			nx->context = x->context;
		}
	}
	target = req ? nx : x;
	if (handler != NULL) {
		target->busy++;
		/* a REQ's handler has the listener's context too: its
		 * destroy waits for the handler (as lib/cm's deliver_request()) */
		if (req)
			x->busy++;
	}
	pthread_mutex_unlock(&att.lock);
#ifdef SRNIC_TEST_HOOKS
	/* SRNIC_RDMACM_TEST_HOLD_HANDLER=1: a REQ's event, its handler
	 * taken, waits until its listen id is destroyed (the id freed, or
	 * its destroy waiting for this handler), so a test has the handler
	 * run in that window every time */
	if (req && handler != NULL && att.hold_handler) {
		fputs("srnic librdmacm: test hook: a REQ's handler held until its listen id is "
		      "destroyed\n", stderr);
		att_hook_end(&end);
		pthread_mutex_lock(&att.lock);
		freed = att.freed;
		att.release_waits = false;
		while (x->handle == m->id || (att.freed == freed && !att.release_waits))
			if (!att_hook_wait(&end)) {
				fputs("srnic librdmacm: test hook: no destroy came, "
				      "the handler goes on\n", stderr);
				break;
			}
		pthread_mutex_unlock(&att.lock);
	}
#endif
	if (handler == NULL) {
		/* an id destroyed meanwhile: a request to it goes with a REJ,
		 * INVALID_SERVICE_ID when its listen is gone (nobody listens:
		 * Linux's cm_match_req()), else the CM's destroy's */
		if (m->type == SRNIC_CM_EV_REQ_RECEIVED && gone)
			att_send_h(m->new_id, SVC_CM_S_REJ, NULL, 0, SRNIC_CM_REJ_INVALID_SERVICE_ID,
				   NULL, 0, NULL, 0);
		if (req)
			att_call_handle(SVC_CM_DESTROY_ID, m->new_id, &r);
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = (enum srnic_cm_event_type)m->type;
	memcpy(&ev.param, m->param, sizeof(ev.param));
	switch (ev.type) {
	case SRNIC_CM_EV_REQ_RECEIVED:
		ev.param.req.listen_id = cm_of(x);
		break;
	case SRNIC_CM_EV_SIDR_REQ_RECEIVED:
		ev.param.sidr_req.listen_id = cm_of(x);
		break;
	case SRNIC_CM_EV_REJ_RECEIVED:
		ev.param.rej.ari = m->ari;
		ev.param.rej.ari_length = RTE_MIN(m->ari_len, (uint8_t)SVC_CM_ARI_MAX);
		break;
	case SRNIC_CM_EV_SIDR_REP_RECEIVED:
		ev.param.sidr_rep.info = m->ari;
		ev.param.sidr_rep.info_len = RTE_MIN(m->ari_len, (uint8_t)SVC_CM_ARI_MAX);
		break;
	default:
		break;
	}
	if (m->has_pdata) {
		ev.private_data = m->pdata;
		ev.private_data_len = RTE_MIN(m->pdata_len, (uint8_t)SVC_CM_PDATA_MAX);
	}
	rc = handler(cm_of(target), &ev);
	pthread_mutex_lock(&att.lock);
	target->busy--;
	if (req)
		x->busy--;
	pthread_cond_broadcast(&att.idle);
	pthread_mutex_unlock(&att.lock);
	if (rc != 0)
		att_destroy_id(cm_of(target));
}

void
cma_attach_wake(void)
{
	uint64_t one = 1;

	/* (full only after 2^64 - 2 wakes nobody took: then it is readable) */
	if (write(att.wake_fd, &one, sizeof(one)) != sizeof(one) && errno != EAGAIN)
		fputs("srnic librdmacm: cannot wake the CM thread: an address resolution "
		      "waits for the next CM event\n", stderr);
}

/* The CM thread: blocked in poll() on the event socket and the wake
 * eventfd, never on a clock, unless an address resolution waits (then
 * its tick every CMA_ATTACH_TICK_MS until none does). */
static void *
att_thread(void *arg)
{
	struct svc_cm_event m;
	const char *why;
	int timeout = -1;
	uint64_t v;

	(void)arg;
	for (;;) {
		struct pollfd p[2] = { { .fd = att.ev_fd, .events = POLLIN },
				       { .fd = att.wake_fd, .events = POLLIN } };
		int r = poll(p, 2, timeout);
		ssize_t n;

		/* a wake's count taken (a short read: none was there) */
		if (r > 0 && p[1].revents != 0 && read(att.wake_fd, &v, sizeof(v)) != sizeof(v))
			v = 0;
		if (r > 0 && p[0].revents != 0) {
			n = recv(att.ev_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_TRUNC);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
				/* (cma_log()'s words: this file calls nothing of cma.c's) */
				fputs("srnic librdmacm: srnicd's CM events stopped (the daemon is "
				      "gone): rdma_cm ids get no more events\n", stderr);
				return NULL;
			}
			if (n > 0 && svc_msg_check(&m, (size_t)n, 0, &why) == 0 &&
			    m.h.type == SVC_CM_EVENT)
				att_dispatch(&m);
		}
		timeout = att.tick() > 0 ? CMA_ATTACH_TICK_MS : -1;
	}
	return NULL;
}

int
cma_attach_open(struct ibv_context *verbs, unsigned int (*tick)(void))
{
	struct svc_handle_req q;
	struct svc_handle_rep r;
	int rc, fd = -1;

	att.verbs = verbs;
	att.dev = srnic_verbs_attach_dev(verbs);
	att.tick = tick;
	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_CM_OPEN, 0, 0, 0);
	q.handle = att.dev;
	rc = srnic_verbs_attach_call(verbs, &q, -1, &r, sizeof(r), &fd);
	if (rc != 0)
		return rc;
	if (fd < 0)
		return -EPROTO;
	att.ev_fd = fd;
#ifdef SRNIC_TEST_HOOKS
	att.hold_req = SRNIC_TEST_HOOK("SRNIC_RDMACM_TEST_HOLD_REQ");
	att.hold_handler = SRNIC_TEST_HOOK("SRNIC_RDMACM_TEST_HOLD_HANDLER");
#endif
	att.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (att.wake_fd < 0) {
		rc = errno;
	} else {
		sigset_t all, old;

		/* the program's signals are never the CM thread's (a Ctrl-C
		 * reaches the program's own thread, doc/verbs.md) */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&att.thread, NULL, att_thread, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (rc != 0) {
		close(fd);
		if (att.wake_fd >= 0)
			close(att.wake_fd);
		att.ev_fd = att.wake_fd = -1;
		return -rc;
	}
	pthread_setname_np(att.thread, "srnic-cm");
	pthread_detach(att.thread);
	return 0;
}
