/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_cm in the daemon (doc/srnicd.md section 7): a session's CM ids on
 * the device's one CM (lib/cm), so listeners are the device's across
 * processes (a second listen on a taken service ID is -EBUSY, rdma_listen's
 * EADDRINUSE) and a REQ goes to the session whose listener matches. The
 * control thread serves the session's SVC_CM_* calls; the CM's handlers
 * run on the engine's thread and write each event to the session's event
 * socket (CM_OPEN gave the library the other end). cm_lock (control path,
 * CM events: never a data packet) guards the ids against a session's end.
 * At the end (section 8, step 2) every id is destroyed as
 * srnic_cm_destroy_id() does: a connected one sends its DREQ, a DREQ
 * received gets its DREP, a request its REJ, a listener stops.
 */
#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnicd.h"

/* handle: SRND_CM_KIND << 28 | generation << 12 | (slot + 1), as objects.c's */
#define SRND_CM_KIND 8u
#define CM_SLOT_BITS 12
#define CM_GEN_MASK 0xffffu
/* CM events a session's event socket holds while its library does not
 * read (its CM thread waits for a lock held across a round trip, or the
 * process is not scheduled): a burst of REQs to one listener, each the
 * session's id, fits; past it an event is lost (a REQ gets its REJ). */
#define CM_EVENTS_QUEUED (2 * SVC_SESSION_CM_IDS_MAX)
/* the kernel charges a queued message its buffer's true size, not its
 * bytes: a bound for struct svc_cm_event's */
#define CM_EVENT_TRUESIZE 2048
_Static_assert(sizeof(struct svc_cm_event) + 1024 <= CM_EVENT_TRUESIZE, "an event's charge");

_Static_assert(SVC_SESSION_CM_IDS_MAX < (1u << CM_SLOT_BITS), "a slot fits its bits");
_Static_assert(sizeof(struct srnic_cm_req_param) <= SVC_CM_PARAM_MAX, "REQ's param fits");
_Static_assert(sizeof(struct srnic_cm_rep_param) <= SVC_CM_PARAM_MAX, "REP's param fits");
_Static_assert(sizeof(struct srnic_cm_sidr_req_param) <= SVC_CM_PARAM_MAX, "SIDR_REQ's fits");
_Static_assert(sizeof(struct srnic_cm_sidr_rep_param) <= SVC_CM_PARAM_MAX, "SIDR_REP's fits");
_Static_assert(sizeof(((struct srnic_cm_event *)0)->param) <= SVC_CM_PARAM_MAX, "events fit");

struct srnd_cm_id {
	struct srnd_cm *owner;
	struct srnd_dev *dv;        /* the device CM_CREATE_ID named: its CM, its GIDs */
	struct srnic_cm_id *cmid;   /* NULL: the slot is free */
	uint16_t gen;
	bool listening;             /* a LISTEN of it succeeded (status' listening) */
};

struct srnd_cm {
	int ev_fd;                  /* ours of the event socket; -1 before CM_OPEN */
	int app_fd;                 /* the library's end, kept for its replies */
	uint16_t gen;
	unsigned int nb_ids;
	uint64_t events_lost;       /* the event socket was full */
	struct srnd_cm_id ids[SVC_SESSION_CM_IDS_MAX];
};

static pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int cm_ids_total;  /* every session's (status) */
static unsigned int cm_listening;  /* of them, listeners (status: a client may connect) */
static uint64_t cm_events_lost;    /* every session's event socket full (status) */

/* Why a session's CM message was refused (status' cm_refused_* counters):
 * lib/cm sends whatever QPN and path it is given, so the daemon checks
 * each as it checks a verbs handle; the session is otherwise served. */
enum cm_refusal {
	CMR_QP_OTHER,       /* a QPN no live QP of the session has: -EINVAL */
	CMR_QP_TYPE,        /* the QP's type is not the message's: -EINVAL */
	CMR_QP_STATE,       /* a QP past the state the message starts from: -EINVAL */
	CMR_SGID,           /* a source GID that is not the device's: -EINVAL */
	CMR_LISTEN_MASK,    /* a listen on more than its one service ID: -EINVAL */
	CMR_NB,
};

static const char *const cm_refusal_name[CMR_NB] = {
	[CMR_QP_OTHER] = "cm_refused_qp_other",
	[CMR_QP_TYPE] = "cm_refused_qp_type",
	[CMR_QP_STATE] = "cm_refused_qp_state",
	[CMR_SGID] = "cm_refused_sgid",
	[CMR_LISTEN_MASK] = "cm_refused_listen_mask",
};

static uint64_t cm_refused[CMR_NB];    /* the control thread's */

static int
cm_refuse(enum cm_refusal why)
{
	cm_refused[why]++;
	return -EINVAL;
}

/* The QP a REQ, REP or SIDR_REP names: a live QP of the session's process
 * on the id's device (each device numbers its QPs alike), of the
 * message's type (UD for SIDR_REP, the REQ's RC or UC), in a state the
 * message may start from: a REQ before the QP has a peer (RESET, INIT), a
 * REP before it has another (up to RTS: a program that moves its own QP,
 * as rdma-core's rdma_accept() does, is there already), a SIDR_REP any but
 * ERR. The kernel's ucma passes the QPN through unchecked; here the CM is
 * the whole host's and one process's REQ must not hand out another's QP. */
static int
cm_qp_check(const struct srnd_dev *dv, const struct srnd_session *s, uint32_t qpn,
	    enum svc_cm_send what, enum ibv_qp_type want)
{
	enum ibv_qp_state st;
	enum ibv_qp_type t;

	if (srnd_session_qp_by_num(s, dv, qpn, &t, &st) != 0)
		return cm_refuse(CMR_QP_OTHER);
	if (what == SVC_CM_S_SIDR_REP ? t != IBV_QPT_UD :
	    what == SVC_CM_S_REQ ? t != want : t != IBV_QPT_RC && t != IBV_QPT_UC)
		return cm_refuse(CMR_QP_TYPE);
	if ((what == SVC_CM_S_REQ && st != IBV_QPS_RESET && st != IBV_QPS_INIT) ||
	    (what == SVC_CM_S_REP && st != IBV_QPS_RESET && st != IBV_QPS_INIT &&
	     st != IBV_QPS_RTR && st != IBV_QPS_RTS) || st == IBV_QPS_ERR)
		return cm_refuse(CMR_QP_STATE);
	return 0;
}

/* A path's source is one of the device's GIDs (lib/cm would put its own
 * in place of another: refused here, not rewritten behind the caller). */
static int
cm_sgid_check(const struct srnd_dev *dv, const union ibv_gid *sgid)
{
	union ibv_gid g;
	int i;

	for (i = 0; i < SRNIC_GID_TBL_LEN; i++)
		if (srnic_dev_gid(dv->sdev, i, &g) == 0 &&
		    memcmp(g.raw, sgid->raw, sizeof(g.raw)) == 0)
			return 0;
	return cm_refuse(CMR_SGID);
}

static uint32_t
id_handle(const struct srnd_cm *c, const struct srnd_cm_id *x)
{
	return SRND_CM_KIND << 28 | (uint32_t)x->gen << CM_SLOT_BITS |
	       (uint32_t)(x - c->ids + 1);
}

/* The session's live id a handle names, or NULL (cm_lock held). */
static struct srnd_cm_id *
id_get(struct srnd_cm *c, uint32_t h)
{
	unsigned int slot = (h & ((1u << CM_SLOT_BITS) - 1)) - 1;

	if (c == NULL || h >> 28 != SRND_CM_KIND || (h & ((1u << CM_SLOT_BITS) - 1)) == 0 ||
	    slot >= SVC_SESSION_CM_IDS_MAX || c->ids[slot].cmid == NULL ||
	    c->ids[slot].gen != ((h >> CM_SLOT_BITS) & CM_GEN_MASK))
		return NULL;
	return &c->ids[slot];
}

/* A free slot for cmid, or NULL: the session's limit (cm_lock held). */
static struct srnd_cm_id *
id_new(struct srnd_cm *c, struct srnic_cm_id *cmid)
{
	unsigned int i;

	for (i = 0; i < SVC_SESSION_CM_IDS_MAX; i++) {
		struct srnd_cm_id *x = &c->ids[i];

		if (x->cmid != NULL)
			continue;
		x->owner = c;
		x->cmid = cmid;
		x->gen = c->gen++;
		if (c->gen == 0)
			c->gen = 1;
		c->nb_ids++;
		cm_ids_total++;
		return x;
	}
	return NULL;
}

/* The slot free again, its CM id out of the handler's sight (cm_lock held):
 * the CM id, for srnic_cm_destroy_id() once the lock is let go (it waits
 * for a running handler, which takes the lock). */
static struct srnic_cm_id *
id_drop(struct srnd_cm_id *x)
{
	struct srnic_cm_id *cmid = x->cmid;

	srnic_cm_id_set_context(cmid, NULL);
	x->cmid = NULL;
	x->dv = NULL;
	x->owner->nb_ids--;
	cm_ids_total--;
	if (x->listening)
		cm_listening--;
	x->listening = false;
	return cmid;
}

/* The CM's handler, on the engine's thread: the event to the session
 * whose id it is. For a REQ, id is a new CM id that has its listener's
 * context; it gets a slot of the listener's session (none: REJ). */
static int
cm_handler(struct srnic_cm_id *cmid, const struct srnic_cm_event *ev)
{
	bool req = ev->type == SRNIC_CM_EV_REQ_RECEIVED ||
		   ev->type == SRNIC_CM_EV_SIDR_REQ_RECEIVED;
	struct srnd_cm_id *x, *nx = NULL;
	struct svc_cm_event m;
	const void *ari = NULL;
	uint8_t ari_len = 0;
	struct srnd_cm *c;

	pthread_mutex_lock(&cm_lock);
	x = srnic_cm_id_context(cmid);
	if (x == NULL || x->cmid == NULL) {
		pthread_mutex_unlock(&cm_lock);
		return req;     /* a session gone: a request gets its REJ */
	}
	c = x->owner;
	memset(&m, 0, sizeof(m));
	svc_msg_init(&m, SVC_CM_EVENT, 0, 0, 0);
	if (req) {
		nx = id_new(c, cmid);
		if (nx == NULL) {
			pthread_mutex_unlock(&cm_lock);
			return 1;
		}
		/* the REQ came to the listener's device: its GIDs, its QPs */
		nx->dv = x->dv;
		srnic_cm_id_set_context(cmid, nx);
		m.new_id = id_handle(c, nx);
		/* the listener is x's: the event names it */
	}
	m.id = id_handle(c, x);
	m.type = (uint32_t)ev->type;
	memcpy(m.param, &ev->param, sizeof(ev->param));
	/* the daemon's own addresses are no session's to see: the library
	 * points these at its ids and at the message's ARI itself */
	if (ev->type == SRNIC_CM_EV_REQ_RECEIVED)
		memset(m.param + offsetof(struct srnic_cm_req_event, listen_id), 0,
		       sizeof(void *));
	else if (ev->type == SRNIC_CM_EV_SIDR_REQ_RECEIVED)
		memset(m.param + offsetof(struct srnic_cm_sidr_req_event, listen_id), 0,
		       sizeof(void *));
	else if (ev->type == SRNIC_CM_EV_REJ_RECEIVED)
		memset(m.param + offsetof(struct srnic_cm_rej_event, ari), 0, sizeof(void *));
	else if (ev->type == SRNIC_CM_EV_SIDR_REP_RECEIVED)
		memset(m.param + offsetof(struct srnic_cm_sidr_rep_event, info), 0,
		       sizeof(void *));
	if (ev->type == SRNIC_CM_EV_REJ_RECEIVED) {
		ari = ev->param.rej.ari;
		ari_len = ev->param.rej.ari_length;
	} else if (ev->type == SRNIC_CM_EV_SIDR_REP_RECEIVED) {
		ari = ev->param.sidr_rep.info;
		ari_len = ev->param.sidr_rep.info_len;
	}
	if (ari != NULL && ari_len > 0) {
		m.ari_len = RTE_MIN(ari_len, SVC_CM_ARI_MAX);
		memcpy(m.ari, ari, m.ari_len);
	}
	if (ev->private_data != NULL) {
		m.has_pdata = 1;
		m.pdata_len = RTE_MIN(ev->private_data_len, SVC_CM_PDATA_MAX);
		memcpy(m.pdata, ev->private_data, m.pdata_len);
	}
	if (c->ev_fd < 0 || send(c->ev_fd, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(m)) {
		c->events_lost++;
		cm_events_lost++;
		if (nx != NULL) {
			id_drop(nx);
			pthread_mutex_unlock(&cm_lock);
			return 1;   /* nobody will answer it: REJ */
		}
	}
	pthread_mutex_unlock(&cm_lock);
	return 0;
}

/* A SVC_CM_SEND's parameters, with the pointers at the message's own
 * bytes and every length clamped to the message's room and the CM's. */
static int
cm_send(const struct srnd_dev *dv, const struct srnd_session *s, struct srnic_cm_id *cmid,
	const struct svc_cm_send_req *q)
{
	uint8_t pl = RTE_MIN(q->pdata_len, (uint8_t)SVC_CM_PDATA_MAX);
	uint8_t al = RTE_MIN(q->ari_len, (uint8_t)SVC_CM_ARI_MAX);
	const void *pd = pl > 0 ? q->pdata : NULL;
	int rc;

	if (dv == NULL)
		return -EINVAL;     /* every live id has its device: never here */
	switch (q->what) {
	case SVC_CM_S_REQ: {
		struct srnic_cm_req_param p;

		memcpy(&p, q->param, sizeof(p));
		rc = cm_sgid_check(dv, &p.path.sgid);
		if (rc == 0)
			rc = cm_qp_check(dv, s, p.qp_num, SVC_CM_S_REQ, p.qp_type);
		if (rc != 0)
			return rc;
		p.private_data = pd;
		p.private_data_len = RTE_MIN(pl, (uint8_t)SRNIC_CM_REQ_PDATA);
		return srnic_cm_send_req(cmid, &p);
	}
	case SVC_CM_S_REP: {
		struct srnic_cm_rep_param p;

		memcpy(&p, q->param, sizeof(p));
		rc = cm_qp_check(dv, s, p.qp_num, SVC_CM_S_REP, IBV_QPT_RC);
		if (rc != 0)
			return rc;
		p.private_data = pd;
		p.private_data_len = RTE_MIN(pl, (uint8_t)SRNIC_CM_REP_PDATA);
		return srnic_cm_send_rep(cmid, &p);
	}
	case SVC_CM_S_SIDR_REQ: {
		struct srnic_cm_sidr_req_param p;

		memcpy(&p, q->param, sizeof(p));
		rc = cm_sgid_check(dv, &p.path.sgid);
		if (rc != 0)
			return rc;
		p.private_data = pd;
		p.private_data_len = RTE_MIN(pl, (uint8_t)SRNIC_CM_SIDR_REQ_PDATA);
		return srnic_cm_send_sidr_req(cmid, &p);
	}
	case SVC_CM_S_SIDR_REP: {
		struct srnic_cm_sidr_rep_param p;

		memcpy(&p, q->param, sizeof(p));
		/* a rejecting SIDR_REP names no QP (rdma_reject()'s is 0) */
		if (p.status == SRNIC_CM_SIDR_SUCCESS) {
			rc = cm_qp_check(dv, s, p.qp_num, SVC_CM_S_SIDR_REP, IBV_QPT_UD);
			if (rc != 0)
				return rc;
		}
		p.private_data = pd;
		p.private_data_len = RTE_MIN(pl, (uint8_t)SRNIC_CM_SIDR_REP_PDATA);
		p.info = al > 0 ? q->ari : NULL;
		p.info_length = RTE_MIN(al, (uint8_t)SRNIC_CM_SIDR_REP_INFO);
		return srnic_cm_send_sidr_rep(cmid, &p);
	}
	case SVC_CM_S_RTU:
		return srnic_cm_send_rtu(cmid, pd, RTE_MIN(pl, (uint8_t)SRNIC_CM_RTU_PDATA));
	case SVC_CM_S_REJ:
		return srnic_cm_send_rej(cmid, (enum srnic_cm_rej_reason)q->arg,
					 al > 0 ? q->ari : NULL, RTE_MIN(al, (uint8_t)SRNIC_CM_REJ_ARI),
					 pd, RTE_MIN(pl, (uint8_t)SRNIC_CM_REJ_PDATA));
	case SVC_CM_S_MRA:
		return srnic_cm_send_mra(cmid, (uint8_t)q->arg, pd,
					 RTE_MIN(pl, (uint8_t)SRNIC_CM_MRA_PDATA));
	case SVC_CM_S_DREQ:
		return srnic_cm_send_dreq(cmid, pd, RTE_MIN(pl, (uint8_t)SRNIC_CM_DREQ_PDATA));
	case SVC_CM_S_DREP:
		return srnic_cm_send_drep(cmid, pd, RTE_MIN(pl, (uint8_t)SRNIC_CM_DREP_PDATA));
	case SVC_CM_S_ESTABLISHED:
		return srnic_cm_established(cmid);
	default:
		return -EINVAL;
	}
}

static int
cm_open(struct srnd_cm **cp, int *tx_fd)
{
	struct srnd_cm *c = *cp;
	int sv[2], sndbuf;

	if (c == NULL) {
		c = calloc(1, sizeof(*c));
		if (c == NULL)
			return -ENOMEM;
		c->ev_fd = c->app_fd = -1;
		c->gen = 1;
		*cp = c;
	}
	if (c->ev_fd >= 0)
		return -EEXIST;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	/* room for CM_EVENTS_QUEUED events (the default, net.core.wmem_default,
	 * holds some 160: a burst of connects to a listener whose library
	 * was not reading lost the rest); the kernel doubles what it is given.
	 * Without CAP_NET_ADMIN, as much as net.core.wmem_max allows */
	sndbuf = CM_EVENTS_QUEUED * CM_EVENT_TRUESIZE / 2;
	if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) != 0)
		(void)setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	pthread_mutex_lock(&cm_lock);
	c->ev_fd = sv[0];
	c->app_fd = sv[1];
	pthread_mutex_unlock(&cm_lock);
	*tx_fd = sv[1];
	return 0;
}

/* A new CM id of the session's (CM_CREATE_ID), its handle in *h. */
static int
cm_create(struct srnd_dev *dv, struct srnd_cm *c, struct srnd_cm_id **xp, uint32_t *h)
{
	struct srnic_cm_id *cmid;
	struct srnd_cm_id *x;

	cmid = srnic_cm_create_id(dv->cm, cm_handler, NULL);
	if (cmid == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&cm_lock);
	x = id_new(c, cmid);
	if (x != NULL) {
		x->dv = dv;
		srnic_cm_id_set_context(cmid, x);
		*h = id_handle(c, x);
	}
	pthread_mutex_unlock(&cm_lock);
	if (x == NULL) {
		srnic_cm_destroy_id(cmid);
		return -EMFILE;
	}
	*xp = x;
	return 0;
}

/* CM_LISTEN of x, its CM id cmid: rdma_listen() takes one port, its one
 * service ID (mask 0 or all ones), never a range that would take other
 * sessions' */
static int
cm_listen(struct srnd_cm_id *x, struct srnic_cm_id *cmid, const struct svc_cm_listen_req *q)
{
	int rc;

	if (q->service_mask != 0 && q->service_mask != UINT64_MAX)
		return cm_refuse(CMR_LISTEN_MASK);
	rc = srnic_cm_listen(cmid, q->service_id, q->service_mask);
	if (rc == 0) {
		pthread_mutex_lock(&cm_lock);
		if (x->cmid == cmid && !x->listening) {
			x->listening = true;
			cm_listening++;
		}
		pthread_mutex_unlock(&cm_lock);
	}
	return rc;
}

int
srnd_cm_serve(struct srnd *d, struct srnd_dev *dv, const struct srnd_session *s,
	      struct srnd_cm **cp, const void *msg, union srnd_rep *rep, int *tx_fd)
{
	const struct svc_hdr *h = msg;
	struct srnd_cm *c = *cp;
	struct srnic_cm_id *cmid = NULL;
	struct srnd_cm_id *x;
	int rc = 0;

	if (h->type == SVC_CM_OPEN)
		return cm_open(cp, tx_fd);
	if (h->type == SVC_CM_RESOLVE) {
		const struct svc_cm_resolve_req *q = msg;
		struct rte_ether_addr mac;
		union ibv_gid g;

		memcpy(g.raw, q->gid, sizeof(g.raw));
		return srnic_dev_resolve_neigh(dv->sdev, &g, &mac);
	}
	if (c == NULL || c->ev_fd < 0)
		return -EBADF;  /* no CM_OPEN: no id can be the session's */
	if (dv != NULL && dv->cm == NULL)
		return -ENODEV;
	if (h->type == SVC_CM_CREATE_ID)
		return cm_create(dv, c, &x, &rep->handle.handle);
	if (h->type == SVC_CM_CREATE_LISTEN) {
		/* one round trip for rdma_listen(): the listener is there
		 * once the library's message is, not a reply later */
		rc = cm_create(dv, c, &x, &rep->handle.handle);
		if (rc != 0)
			return rc;
		cmid = x->cmid;
		rc = cm_listen(x, cmid, msg);
		if (rc != 0) {
			rep->handle.handle = 0;
			pthread_mutex_lock(&cm_lock);
			id_drop(x);
			pthread_mutex_unlock(&cm_lock);
			srnic_cm_destroy_id(cmid);
		}
		return rc;
	}
	/* the rest name an id of the session's: q->id / q->handle, first after the header */
	pthread_mutex_lock(&cm_lock);
	x = id_get(c, ((const struct svc_handle_req *)msg)->handle);
	if (x == NULL) {
		pthread_mutex_unlock(&cm_lock);
		return -EBADF;
	}
	cmid = x->cmid;
	if (h->type == SVC_CM_DESTROY_ID) {
		id_drop(x);
		pthread_mutex_unlock(&cm_lock);
		return srnic_cm_destroy_id(cmid);
	}
	pthread_mutex_unlock(&cm_lock);
	/* only this thread destroys a session's ids: cmid lives on here */
	switch (h->type) {
	case SVC_CM_LISTEN:
		rc = cm_listen(x, cmid, msg);
		break;
	case SVC_CM_SEND:
		rc = cm_send(x->dv, s, cmid, msg);
		break;
	case SVC_CM_STATE:
		rep->handle.handle = (uint32_t)srnic_cm_id_state(cmid);
		break;
	case SVC_CM_INIT_QP_ATTR: {
		const struct svc_cm_qp_attr_req *q = msg;
		int mask = 0;

		rep->cm_qp_attr.attr = q->attr;
		rc = srnic_cm_init_qp_attr(cmid, &rep->cm_qp_attr.attr, &mask);
		rep->cm_qp_attr.mask = mask;
		break;
	}
	default:
		rc = -EINVAL;
		break;
	}
	return rc;
}

void
srnd_cm_reclaim(struct srnd_cm *c)
{
	struct srnic_cm_id *gone[64];
	unsigned int i, n;

	if (c == NULL)
		return;
	/* in batches: srnic_cm_destroy_id() may wait for a handler, which
	 * takes cm_lock */
	do {
		n = 0;
		pthread_mutex_lock(&cm_lock);
		for (i = 0; i < SVC_SESSION_CM_IDS_MAX && n < RTE_DIM(gone); i++)
			if (c->ids[i].cmid != NULL)
				gone[n++] = id_drop(&c->ids[i]);
		pthread_mutex_unlock(&cm_lock);
		for (i = 0; i < n; i++) {
			/* as the kernel's ucma_close(): a DREQ received gets
			 * its DREP, the rest srnic_cm_destroy_id()'s (a DREQ,
			 * a REJ, a listener gone) */
			if (srnic_cm_id_state(gone[i]) == SRNIC_CM_DREQ_RCVD)
				srnic_cm_send_drep(gone[i], NULL, 0);
			srnic_cm_destroy_id(gone[i]);
		}
	} while (n > 0);
	pthread_mutex_lock(&cm_lock);
	if (c->ev_fd >= 0)
		close(c->ev_fd);
	if (c->app_fd >= 0)
		close(c->app_fd);
	c->ev_fd = c->app_fd = -1;
	pthread_mutex_unlock(&cm_lock);
	free(c);
}

unsigned int
srnd_cm_ids(const struct srnd_cm *c)
{
	return c == NULL ? cm_ids_total : c->nb_ids;
}

size_t
srnd_cm_status(const struct srnd *d, char *t, size_t n)
{
	uint64_t v[64];
	unsigned int i, k;
	size_t off = 0;
	int rc;

	/* every device's CM's counters, summed: one line as with one device */
	memset(v, 0, sizeof(v));
	for (k = 0, i = 0; i < d->nb_devs; i++) {
		uint64_t w[RTE_DIM(v)];
		unsigned int j, m;

		if (d->dev[i].cm == NULL)
			continue;
		m = srnic_cm_stats_get(d->dev[i].cm, w, RTE_DIM(w));
		for (j = 0; j < m; j++)
			v[j] += w[j];
		k = RTE_MAX(k, m);
	}
	if (k == 0)
		return 0;
	for (i = 0; i <= k + CMR_NB + 1 && off + 1 < n; i++) {
		if (i == 0)
			rc = snprintf(t, n, "cm ids %u listening %u events_lost %" PRIu64,
				      srnd_cm_ids(NULL), cm_listening, cm_events_lost);
		else if (i <= k)
			rc = snprintf(t + off, n - off, " %s %" PRIu64, srnic_cm_stat_name(i - 1),
				      v[i - 1]);
		else if (i <= k + CMR_NB)
			rc = snprintf(t + off, n - off, " %s %" PRIu64,
				      cm_refusal_name[i - k - 1], cm_refused[i - k - 1]);
		else
			rc = snprintf(t + off, n - off, "\n");
		if (rc < 0)
			break;
		off = (size_t)rc >= n - off ? n - 1 : off + (size_t)rc;
	}
	return off;
}
