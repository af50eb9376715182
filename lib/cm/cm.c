/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The IB communication manager (IBTA Vol 1 ch. 12) over a srnic device's
 * GSI QP. Shaped after Linux's ib_cm (drivers/infiniband/core/cm.c): ids
 * with named states, a table of ids by local communication ID, listeners by
 * service ID, one timer per id (resend, timewait, a deferred event) on a
 * sorted list srnic_cm_poll() reads, and answers to duplicates from the
 * last message an id sent. doc/cm.md has the state table.
 *
 * One mutex (cm->lock) guards everything; it is dropped around a handler
 * call, the id being kept alive meanwhile by its in_handler count.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnic_mad.h"
#include "cm.h"

#ifndef SRNIC_GSI_QPN
/* a srnic without the GSI QP (QP1): srnic_cm_create() fails */
#define SRNIC_GSI_QPN 1
#define SRNIC_QP_INIT_ATTR_GSI 0
#endif

RTE_LOG_REGISTER(srnic_logtype_cm, srnic.cm, NOTICE);
#define CM_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, srnic_logtype_cm, "srnic cm: " fmt "\n", ##__VA_ARGS__)

#define CM_NRECV 64                /* receive buffers posted on QP1 */
#define CM_NSEND 128               /* send buffers: MADs in flight at most */
#define CM_RECV_LEN (SRNIC_GRH_LEN + SRNIC_MAD_LEN)
#define CM_POLL_BURST 32
#define CM_ID_BUCKETS 256          /* id table by local comm ID (power of 2) */
#define CM_PEER_BITS 12            /* tables by the peer's comm ID / QPN: 4096 buckets each */
/* a SIDR_REQ carries no timeout: its id expires after this unanswered
 * (rdma_cm's sender gives up after 16 x 4096 ms) */
#define CM_SIDR_REQ_EXPIRE_US (120ull * 1000000)
#define CM_CA_ACK_DELAY 15         /* REP's target ACK delay: rxe's local_ca_ack_delay */
#define CM_DEFAULT_HOP_LIMIT 64
#define CM_MAX_TIMEOUT 31          /* 5-bit IBA times */
#define CM_WR_SEND_FLAG (1ull << 63) /* wr_id of a send: flag | buffer index */

enum cm_timer_kind {
	CM_TMR_NONE,
	CM_TMR_RESEND,             /* REQ, REP, DREQ, SIDR_REQ not answered yet */
	CM_TMR_TIMEWAIT,
	CM_TMR_EVENT,              /* USER_ESTABLISHED, delivered from the poll */
	CM_TMR_EXPIRE,             /* a request not answered: its peer has given up */
};

/* An id in a table by its peer: the peer's comm ID (or QPN) and CA GUID
 * (a SIDR peer: its GID folded), the key it went in with. */
struct cm_hnode {
	struct cm_hnode *next;
	uint32_t key;
	uint64_t guid;
	bool in;
};

struct srnic_cm_id {
	struct srnic_cm *cm;
	srnic_cm_handler handler;
	void *context;
	enum srnic_cm_state state;
	uint32_t local_id;
	uint32_t remote_id;
	uint64_t service_id;
	uint64_t service_mask;     /* listeners */
	uint64_t remote_ca_guid;
	uint64_t tid;              /* of the connection's REQ (or SIDR_REQ) */
	uint64_t dreq_tid;         /* of the DREQ being answered */
	struct srnic_cm_id *hash_next;
	struct cm_hnode by_remote;  /* passive ids: the REQ's (comm ID, GUID), O(1) for duplicates */
	struct cm_hnode by_qpn;     /* the peer's (QPN, GUID): the stale connection check */
	uint64_t expire_us;        /* a request unanswered: how long its peer waits */
	uint8_t mra_timeout;       /* the service timeout of our MRA */
	TAILQ_ENTRY(srnic_cm_id) all_link;
	TAILQ_ENTRY(srnic_cm_id) listen_link;
	TAILQ_ENTRY(srnic_cm_id) timer_link;
	enum cm_timer_kind timer;
	uint64_t timer_at;         /* TSC */
	uint32_t retries_left;
	uint64_t timeout_us;       /* per try of the message being resent */
	uint8_t max_cm_retries;
	uint8_t retx[SRNIC_MAD_LEN]; /* the message resent on timeout */
	uint8_t last[SRNIC_MAD_LEN]; /* the last answer (MRA, RTU, REJ, DREP), for duplicates */
	bool last_valid;
	bool sent_any;
	bool mra_seen;
	bool user_gone;            /* srnic_cm_destroy_id() returned: no events */
	bool in_table;
	unsigned int in_handler;
	unsigned int waiters;      /* srnic_cm_destroy_id() calls waiting for the handler */
	pthread_t handler_thread;
	struct srnic_ah *ah;
	/* the connection (ib_cm's cm_id_private) */
	struct srnic_cm_path path;
	enum ibv_qp_type qp_type;
	uint32_t local_qpn, remote_qpn;
	/* A Starting PSN is the PSN its sender's QP receives from (IBTA 12.7.24,
	 * as Linux reads it): ours went in our REQ/REP, the peer's came in its. */
	uint32_t rq_psn, sq_psn;
	uint8_t responder_resources, initiator_depth;
	uint8_t retry_count, rnr_retry_count;
	uint8_t ack_timeout;       /* local ACK timeout of the QP */
	bool passive;
};

TAILQ_HEAD(cm_id_list, srnic_cm_id);

struct srnic_cm {
	struct srnic_dev *dev;
	struct srnic_engine *eng;
	struct srnic_pd *pd;
	struct srnic_cq *cq;
	struct srnic_qp *qp1;
	struct srnic_mr *mr;
	uint8_t *mem;              /* CM_NRECV receive then CM_NSEND send buffers */
	uint16_t send_free[CM_NSEND];
	uint16_t nsend_free;
	pthread_mutex_t lock;
	uint32_t tid_hi;
	uint64_t guid;
	union ibv_gid gid;
	uint32_t nids;
	struct srnic_cm_id *ids[CM_ID_BUCKETS];
	uint64_t hseed;            /* the peer tables' hash: a peer cannot aim at a bucket */
	struct cm_hnode *by_remote[1u << CM_PEER_BITS];
	struct cm_hnode *by_qpn[1u << CM_PEER_BITS];
	struct cm_id_list all;
	struct cm_id_list listeners;
	struct cm_id_list timers;  /* sorted by timer_at */
	uint64_t stats[SRNIC_CM_STAT_COUNT];
};

static const char *const cm_stat_names[] = {
#define SRNIC_CM_STAT_NAME(id, name) [SRNIC_CM_STAT_##id] = name,
	SRNIC_CM_STATS(SRNIC_CM_STAT_NAME)
#undef SRNIC_CM_STAT_NAME
};

#define CM_STAT(cm, id) ((cm)->stats[SRNIC_CM_STAT_##id]++)

/* one CM per device */
static pthread_mutex_t cm_devs_lock = PTHREAD_MUTEX_INITIALIZER;
#define CM_MAX_DEVS 64
static struct srnic_dev *cm_devs[CM_MAX_DEVS];

static const char *const cm_state_names[] = {
	[SRNIC_CM_IDLE] = "IDLE",
	[SRNIC_CM_LISTEN] = "LISTEN",
	[SRNIC_CM_REQ_SENT] = "REQ_SENT",
	[SRNIC_CM_REQ_RCVD] = "REQ_RCVD",
	[SRNIC_CM_MRA_REQ_SENT] = "MRA_REQ_SENT",
	[SRNIC_CM_MRA_REQ_RCVD] = "MRA_REQ_RCVD",
	[SRNIC_CM_REP_SENT] = "REP_SENT",
	[SRNIC_CM_REP_RCVD] = "REP_RCVD",
	[SRNIC_CM_MRA_REP_SENT] = "MRA_REP_SENT",
	[SRNIC_CM_MRA_REP_RCVD] = "MRA_REP_RCVD",
	[SRNIC_CM_ESTABLISHED] = "ESTABLISHED",
	[SRNIC_CM_DREQ_SENT] = "DREQ_SENT",
	[SRNIC_CM_DREQ_RCVD] = "DREQ_RCVD",
	[SRNIC_CM_TIMEWAIT] = "TIMEWAIT",
	[SRNIC_CM_SIDR_REQ_SENT] = "SIDR_REQ_SENT",
	[SRNIC_CM_SIDR_REQ_RCVD] = "SIDR_REQ_RCVD",
};

static const char *const cm_event_names[] = {
	[SRNIC_CM_EV_REQ_ERROR] = "REQ_ERROR",
	[SRNIC_CM_EV_REQ_RECEIVED] = "REQ_RECEIVED",
	[SRNIC_CM_EV_REP_ERROR] = "REP_ERROR",
	[SRNIC_CM_EV_REP_RECEIVED] = "REP_RECEIVED",
	[SRNIC_CM_EV_RTU_RECEIVED] = "RTU_RECEIVED",
	[SRNIC_CM_EV_USER_ESTABLISHED] = "USER_ESTABLISHED",
	[SRNIC_CM_EV_DREQ_ERROR] = "DREQ_ERROR",
	[SRNIC_CM_EV_DREQ_RECEIVED] = "DREQ_RECEIVED",
	[SRNIC_CM_EV_DREP_RECEIVED] = "DREP_RECEIVED",
	[SRNIC_CM_EV_TIMEWAIT_EXIT] = "TIMEWAIT_EXIT",
	[SRNIC_CM_EV_MRA_RECEIVED] = "MRA_RECEIVED",
	[SRNIC_CM_EV_REJ_RECEIVED] = "REJ_RECEIVED",
	[SRNIC_CM_EV_SIDR_REQ_ERROR] = "SIDR_REQ_ERROR",
	[SRNIC_CM_EV_SIDR_REQ_RECEIVED] = "SIDR_REQ_RECEIVED",
	[SRNIC_CM_EV_SIDR_REP_RECEIVED] = "SIDR_REP_RECEIVED",
	[SRNIC_CM_EV_REQ_EXPIRED] = "REQ_EXPIRED",
};

const char *
srnic_cm_state_str(enum srnic_cm_state s)
{
	if ((unsigned int)s >= RTE_DIM(cm_state_names) || cm_state_names[s] == NULL)
		return "UNKNOWN";
	return cm_state_names[s];
}

const char *
srnic_cm_event_str(enum srnic_cm_event_type t)
{
	if ((unsigned int)t >= RTE_DIM(cm_event_names) || cm_event_names[t] == NULL)
		return "UNKNOWN";
	return cm_event_names[t];
}

/* ---- times ---- */

/* An IBA time code: 4.096 us * 2^t, in us. */
static uint64_t
cm_time_us(uint8_t t)
{
	if (t > CM_MAX_TIMEOUT)
		t = CM_MAX_TIMEOUT;
	return ((uint64_t)4096 << t) / 1000 + 1;
}

/*
 * The QP's local ACK timeout from the CA's ACK delay and the path's packet
 * life time (the rule Linux's cm_ack_timeout() applies: 2 * life + delay,
 * as one 5-bit code). Life 18 and delay 15 give the golden's 19.
 */
static uint8_t
cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time)
{
	unsigned int t = packet_life_time + 1u;

	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1u);
	return (uint8_t)(t > CM_MAX_TIMEOUT ? CM_MAX_TIMEOUT : t);
}

static uint64_t
cm_now(void)
{
	return rte_get_timer_cycles();
}

static uint64_t
cm_us_to_tsc(uint64_t us)
{
	return us * (rte_get_timer_hz() / 1000000) + us * (rte_get_timer_hz() % 1000000) / 1000000;
}

/* ---- timers: one per id, on a list sorted by expiry ---- */

static void
timer_stop(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	if (id->timer == CM_TMR_NONE)
		return;
	TAILQ_REMOVE(&cm->timers, id, timer_link);
	id->timer = CM_TMR_NONE;
}

static void
timer_start(struct srnic_cm *cm, struct srnic_cm_id *id, enum cm_timer_kind kind, uint64_t us)
{
	struct srnic_cm_id *t;

	timer_stop(cm, id);
	id->timer = kind;
	id->timer_at = cm_now() + cm_us_to_tsc(us);
	TAILQ_FOREACH(t, &cm->timers, timer_link)
		if (t->timer_at > id->timer_at)
			break;
	if (t == NULL)
		TAILQ_INSERT_TAIL(&cm->timers, id, timer_link);
	else
		TAILQ_INSERT_BEFORE(t, id, timer_link);
}

/* ---- the id table ---- */

static struct srnic_cm_id **
id_bucket(struct srnic_cm *cm, uint32_t local_id)
{
	return &cm->ids[(local_id ^ (local_id >> 16)) & (CM_ID_BUCKETS - 1)];
}

static struct srnic_cm_id *
id_find(struct srnic_cm *cm, uint32_t local_id)
{
	struct srnic_cm_id *id;

	if (local_id == 0)
		return NULL;
	for (id = *id_bucket(cm, local_id); id != NULL; id = id->hash_next)
		if (id->local_id == local_id)
			return id;
	return NULL;
}

static void
id_table_insert(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	struct srnic_cm_id **b = id_bucket(cm, id->local_id);

	id->hash_next = *b;
	*b = id;
	id->in_table = true;
}

static void
id_table_remove(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	struct srnic_cm_id **b;

	if (!id->in_table)
		return;
	for (b = id_bucket(cm, id->local_id); *b != NULL; b = &(*b)->hash_next)
		if (*b == id) {
			*b = id->hash_next;
			break;
		}
	id->in_table = false;
}

/* ---- the tables by peer (Linux: rb-trees by remote ID and by remote QPN) ---- */

static struct cm_hnode **
peer_bucket(struct srnic_cm *cm, struct cm_hnode **tab, uint32_t key, uint64_t guid)
{
	uint64_t h = ((key ^ cm->hseed) * 0x9E3779B97F4A7C15ull + guid) * 0xC2B2AE3D27D4EB4Full;

	return &tab[h >> (64 - CM_PEER_BITS)];
}

static void
peer_del(struct srnic_cm *cm, struct cm_hnode **tab, struct cm_hnode *n)
{
	struct cm_hnode **b;

	if (!n->in)
		return;
	for (b = peer_bucket(cm, tab, n->key, n->guid); *b != NULL; b = &(*b)->next)
		if (*b == n) {
			*b = n->next;
			break;
		}
	n->in = false;
}

static void
peer_add(struct srnic_cm *cm, struct cm_hnode **tab, struct cm_hnode *n, uint32_t key,
	 uint64_t guid)
{
	struct cm_hnode **b;

	peer_del(cm, tab, n);
	n->key = key;
	n->guid = guid;
	b = peer_bucket(cm, tab, key, guid);
	n->next = *b;
	*b = n;
	n->in = true;
}

/* A SIDR peer has no CA GUID in its SIDR_REQ: its GID stands for it. */
static uint64_t
gid_key(const union ibv_gid *g)
{
	uint64_t a, b;

	memcpy(&a, g->raw, 8);
	memcpy(&b, g->raw + 8, 8);
	return a ^ (b * 0x9E3779B97F4A7C15ull);
}

/* 32 bits from the kernel's CSPRNG (rte_rand(), a Tausworthe generator,
 * is predictable from a few outputs; it stays only as the fallback). */
static uint32_t
cm_rand32(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == (ssize_t)sizeof(v))
		return v;
	return (uint32_t)rte_rand();
}

/*
 * A fresh local comm ID, never 0 nor taken, and unpredictable: the REJ,
 * DREQ, RTU ... a peer sends name the id by it, so one who saw one REQ
 * must not guess the next connection's ID (sequential IDs let him forge
 * the REJ of a later connection). Linux xors a random operand into its
 * cyclic IDs; srnic draws each.
 */
static uint32_t
id_next_local(struct srnic_cm *cm)
{
	uint32_t v;

	do {
		v = cm_rand32();
	} while (v == 0 || id_find(cm, v) != NULL);
	return v;
}

static struct srnic_cm_id *
id_alloc(struct srnic_cm *cm, srnic_cm_handler handler, void *context)
{
	struct srnic_cm_id *id = calloc(1, sizeof(*id));

	if (id == NULL)
		return NULL;
	id->cm = cm;
	id->handler = handler;
	id->context = context;
	id->state = SRNIC_CM_IDLE;
	id->local_id = id_next_local(cm);
	id_table_insert(cm, id);
	TAILQ_INSERT_TAIL(&cm->all, id, all_link);
	cm->nids++;
	return id;
}

/* Free an id the user has let go of once the protocol is done with it. */
static void
id_maybe_free(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	if (!id->user_gone || id->in_handler > 0 || id->waiters > 0 || id->timer != CM_TMR_NONE)
		return;
	if (id->state != SRNIC_CM_IDLE && id->state != SRNIC_CM_LISTEN)
		return;
	if (id->state == SRNIC_CM_LISTEN)
		TAILQ_REMOVE(&cm->listeners, id, listen_link);
	id_table_remove(cm, id);
	peer_del(cm, cm->by_remote, &id->by_remote);
	peer_del(cm, cm->by_qpn, &id->by_qpn);
	TAILQ_REMOVE(&cm->all, id, all_link);
	if (id->ah != NULL)
		srnic_destroy_ah(id->ah);
	cm->nids--;
	free(id);
}

/* ---- MAD I/O ---- */

static uint8_t *
recv_buf(struct srnic_cm *cm, unsigned int i)
{
	return cm->mem + (size_t)i * CM_RECV_LEN;
}

static uint8_t *
send_buf(struct srnic_cm *cm, unsigned int i)
{
	return cm->mem + (size_t)CM_NRECV * CM_RECV_LEN + (size_t)i * SRNIC_MAD_LEN;
}

static int
recv_post(struct srnic_cm *cm, unsigned int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)recv_buf(cm, i), .length = CM_RECV_LEN,
			       .lkey = srnic_mr_lkey(cm->mr) };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	return srnic_post_recv(cm->qp1, &wr, &bad);
}

static const enum srnic_cm_stat_id cm_tx_stat[] = {
	[SRNIC_CM_ATTR_REQ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_REQ,
	[SRNIC_CM_ATTR_MRA - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_MRA,
	[SRNIC_CM_ATTR_REJ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_REJ,
	[SRNIC_CM_ATTR_REP - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_REP,
	[SRNIC_CM_ATTR_RTU - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_RTU,
	[SRNIC_CM_ATTR_DREQ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_DREQ,
	[SRNIC_CM_ATTR_DREP - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_DREP,
	[SRNIC_CM_ATTR_SIDR_REQ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_SIDR_REQ,
	[SRNIC_CM_ATTR_SIDR_REP - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_TX_SIDR_REP,
};

static const enum srnic_cm_stat_id cm_rx_stat[] = {
	[SRNIC_CM_ATTR_REQ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_REQ,
	[SRNIC_CM_ATTR_MRA - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_MRA,
	[SRNIC_CM_ATTR_REJ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_REJ,
	[SRNIC_CM_ATTR_REP - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_REP,
	[SRNIC_CM_ATTR_RTU - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_RTU,
	[SRNIC_CM_ATTR_DREQ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_DREQ,
	[SRNIC_CM_ATTR_DREP - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_DREP,
	[SRNIC_CM_ATTR_SIDR_REQ - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_SIDR_REQ,
	[SRNIC_CM_ATTR_SIDR_REP - SRNIC_CM_ATTR_REQ] = SRNIC_CM_STAT_RX_SIDR_REP,
};

/* Post one MAD to the peer's QP1 through ah (a copy: mad may be reused). */
static int
mad_send(struct srnic_cm *cm, struct srnic_ah *ah, const uint8_t *mad)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	unsigned int attr = srnic_mad_attr_id(mad);
	uint16_t i;
	int rc;

	if (ah == NULL) {
		CM_STAT(cm, AH_ERR);
		return -EHOSTUNREACH;
	}
	if (cm->nsend_free == 0) {
		/* freed by srnic_cm_poll(); a resent message goes at its timeout */
		CM_STAT(cm, TX_NO_BUF);
		return -ENOBUFS;
	}
	i = cm->send_free[--cm->nsend_free];
	memcpy(send_buf(cm, i), mad, SRNIC_MAD_LEN);
	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)send_buf(cm, i);
	sge.length = SRNIC_MAD_LEN;
	sge.lkey = srnic_mr_lkey(cm->mr);
	wr.wr_id = CM_WR_SEND_FLAG | i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = srnic_ah_ibv(ah);
	wr.wr.ud.remote_qpn = SRNIC_GSI_QPN;
	wr.wr.ud.remote_qkey = SRNIC_GSI_QKEY;
	rc = srnic_post_send(cm->qp1, &wr, &bad);
	if (rc != 0) {
		cm->send_free[cm->nsend_free++] = i;
		CM_STAT(cm, TX_POST_ERR);
		return -abs(rc);
	}
	CM_STAT(cm, TX_MADS);
	if (attr >= SRNIC_CM_ATTR_REQ && attr <= SRNIC_CM_ATTR_SIDR_REP)
		cm->stats[cm_tx_stat[attr - SRNIC_CM_ATTR_REQ]]++;
	return 0;
}

/* An answer to the sender of a received MAD with no id of ours (REJ, DREP, SIDR_REP). */
static void
mad_reply(struct srnic_cm *cm, const struct ibv_wc *wc, const uint8_t *grh, const uint8_t *mad)
{
	struct srnic_ah *ah = srnic_create_ah_from_wc(cm->pd, wc, grh);

	if (ah == NULL) {
		CM_STAT(cm, AH_ERR);
		return;
	}
	mad_send(cm, ah, mad);
	srnic_destroy_ah(ah); /* posted WRs keep their copy of the address */
}

static uint64_t
cm_tid(const struct srnic_cm *cm, uint32_t local_id)
{
	/* Linux's cm_form_tid(): its agent number, then the ID's __be32 as a u32 */
	return ((uint64_t)cm->tid_hi << 32) | __builtin_bswap32(local_id);
}

static void
pdata_copy(uint8_t *dst, const void *src, uint8_t len)
{
	if (src != NULL && len > 0)
		memcpy(dst, src, len);
}

/* The id's resent message: send now, then again on each timeout. */
static int
retx_start(struct srnic_cm *cm, struct srnic_cm_id *id, uint64_t timeout_us, uint8_t retries)
{
	id->timeout_us = timeout_us;
	id->retries_left = retries;
	id->sent_any = true;
	timer_start(cm, id, CM_TMR_RESEND, timeout_us);
	/* a MAD that could not go now (no buffer, no route yet) goes at the timeout */
	mad_send(cm, id->ah, id->retx);
	return 0;
}

static void
last_send(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	id->last_valid = true;
	id->sent_any = true;
	mad_send(cm, id->ah, id->last);
}

/* ---- events ---- */

/*
 * Call the id's handler with the lock dropped; the id stays allocated
 * (in_handler) and a nonzero return destroys it, as ib_cm's. Returns with
 * the lock held again.
 */
static int cm_destroy_locked(struct srnic_cm *cm, struct srnic_cm_id *id);
static void reset_to_idle(struct srnic_cm *cm, struct srnic_cm_id *id);

/* A request the consumer has not answered, and the peer has heard nothing of. */
static bool
request_unanswered(const struct srnic_cm_id *id)
{
	return !id->sent_any && (id->state == SRNIC_CM_REQ_RCVD ||
				 id->state == SRNIC_CM_MRA_REQ_SENT ||
				 id->state == SRNIC_CM_SIDR_REQ_RCVD);
}

static void
deliver(struct srnic_cm *cm, struct srnic_cm_id *id, const struct srnic_cm_event *ev)
{
	int rc;

	if (id->user_gone || id->handler == NULL)
		return;
	id->in_handler++;
	id->handler_thread = pthread_self();
	CM_STAT(cm, EVENTS);
	pthread_mutex_unlock(&cm->lock);
	rc = id->handler(id, ev);
	pthread_mutex_lock(&cm->lock);
	id->in_handler--;
	if (rc == -ENOMEM && !id->user_gone && request_unanswered(id)) {
		/* the consumer has no room (rdma_cm's backlog): as Linux's
		 * cm_destroy_id() for REQ_RCVD with -ENOMEM, no REJ, so the
		 * peer's next try (a REQ resent on its timeout) may find room */
		CM_STAT(cm, REQ_DROPPED);
		id->user_gone = true;
		reset_to_idle(cm, id);
	} else if (rc != 0 && !id->user_gone) {
		CM_STAT(cm, IDS_DESTROYED_BY_HANDLER);
		cm_destroy_locked(cm, id);
	}
	id_maybe_free(cm, id);
}

/*
 * A request to a listener l is delivered on its new id, whose handler and
 * context are l's until the consumer takes it: l stays allocated (counted
 * as in a handler) meanwhile, so a destroy of the listener on another
 * thread waits for this delivery instead of freeing what the handler reads
 * (Linux serializes the two with the listener's handler_mutex). A handler
 * that finds its listener going returns nonzero: the new id goes with a
 * REJ, and the peer hears at once.
 */
static void
deliver_request(struct srnic_cm *cm, struct srnic_cm_id *l, struct srnic_cm_id *id,
		const struct srnic_cm_event *ev)
{
	l->in_handler++;
	l->handler_thread = pthread_self();
	deliver(cm, id, ev);
	l->in_handler--;
	id_maybe_free(cm, l);
}

static void
deliver_simple(struct srnic_cm *cm, struct srnic_cm_id *id, enum srnic_cm_event_type t,
	       const uint8_t *pdata, uint8_t pdata_len)
{
	struct srnic_cm_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = t;
	ev.private_data = pdata;
	ev.private_data_len = pdata != NULL ? pdata_len : 0;
	deliver(cm, id, &ev);
}

/* ---- state changes shared by several paths ---- */

static void
enter_timewait(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	id->state = SRNIC_CM_TIMEWAIT;
	/* as Linux: the QP's ACK timeout, the time a stray packet may live */
	timer_start(cm, id, CM_TMR_TIMEWAIT, cm_time_us(id->ack_timeout));
}

static void
reset_to_idle(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	timer_stop(cm, id);
	id->state = SRNIC_CM_IDLE;
}

/* ---- message formats ---- */

static void
format_rej(struct srnic_cm_id *id, uint8_t *m, enum srnic_cm_rej_reason reason,
	   const void *ari, uint8_t ari_len, const void *pdata, uint8_t len)
{
	uint32_t msg;

	switch (id->state) {
	case SRNIC_CM_REQ_RCVD:
	case SRNIC_CM_MRA_REQ_SENT:
	case SRNIC_CM_REQ_SENT:
	case SRNIC_CM_MRA_REQ_RCVD:
		msg = SRNIC_CM_MSG_REQ;
		break;
	case SRNIC_CM_REP_RCVD:
	case SRNIC_CM_MRA_REP_SENT:
		msg = SRNIC_CM_MSG_REP;
		break;
	default:
		msg = SRNIC_CM_MSG_OTHER;
		break;
	}
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_REJ, id->tid);
	/* Linux's cm_format_rej(): a REQ not yet answered is rejected with local ID 0 */
	srnic_cm_rej_local_comm_id_set(m, id->state == SRNIC_CM_REQ_RCVD ? 0 : id->local_id);
	srnic_cm_rej_remote_comm_id_set(m, id->remote_id);
	srnic_cm_rej_msg_rejected_set(m, msg);
	srnic_cm_rej_reason_set(m, reason);
	if (ari != NULL && ari_len > 0) {
		srnic_cm_rej_ari_len_set(m, ari_len);
		memcpy(srnic_cm_rej_ari(m), ari, ari_len);
	}
	pdata_copy(srnic_cm_rej_pdata(m), pdata, len);
}

static void
send_rej_locked(struct srnic_cm *cm, struct srnic_cm_id *id, enum srnic_cm_rej_reason reason,
		const void *ari, uint8_t ari_len, const void *pdata, uint8_t len)
{
	format_rej(id, id->last, reason, ari, ari_len, pdata, len);
	last_send(cm, id);
}

static void
format_dreq(struct srnic_cm *cm, struct srnic_cm_id *id, const void *pdata, uint8_t len)
{
	uint8_t *m = id->retx;

	srnic_cm_mad_init(m, SRNIC_CM_ATTR_DREQ, cm_tid(cm, id->local_id));
	srnic_cm_dreq_local_comm_id_set(m, id->local_id);
	srnic_cm_dreq_remote_comm_id_set(m, id->remote_id);
	srnic_cm_dreq_remote_qpn_set(m, id->remote_qpn);
	pdata_copy(srnic_cm_dreq_pdata(m), pdata, len);
}

static void
format_drep(struct srnic_cm_id *id, uint8_t *m, uint64_t tid, const void *pdata, uint8_t len)
{
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_DREP, tid);
	srnic_cm_drep_local_comm_id_set(m, id->local_id);
	srnic_cm_drep_remote_comm_id_set(m, id->remote_id);
	pdata_copy(srnic_cm_drep_pdata(m), pdata, len);
}

static void
send_drep_locked(struct srnic_cm *cm, struct srnic_cm_id *id, const void *pdata, uint8_t len)
{
	format_drep(id, id->last, id->dreq_tid, pdata, len);
	last_send(cm, id);
	enter_timewait(cm, id);
}

/* ---- destroy ---- */

static int
cm_destroy_locked(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	id->user_gone = true;
	switch (id->state) {
	case SRNIC_CM_LISTEN:
		break; /* id_maybe_free() takes it off the listeners */
	case SRNIC_CM_REQ_SENT:
	case SRNIC_CM_MRA_REQ_RCVD: {
		uint8_t guid[8];

		/* ARI: our CA GUID (IBTA 12.6.7.1 for TIMEOUT; Linux's) */
		srnic_st64(guid, cm->guid);
		timer_stop(cm, id);
		send_rej_locked(cm, id, SRNIC_CM_REJ_TIMEOUT, guid, sizeof(guid), NULL, 0);
		reset_to_idle(cm, id);
		break;
	}
	case SRNIC_CM_REQ_RCVD:
	case SRNIC_CM_MRA_REQ_SENT:
	case SRNIC_CM_REP_RCVD:
	case SRNIC_CM_MRA_REP_SENT:
		send_rej_locked(cm, id, SRNIC_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		reset_to_idle(cm, id);
		break;
	case SRNIC_CM_REP_SENT:
	case SRNIC_CM_MRA_REP_RCVD:
		timer_stop(cm, id);
		send_rej_locked(cm, id, SRNIC_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		enter_timewait(cm, id);
		break;
	case SRNIC_CM_ESTABLISHED:
		/* one DREQ (Linux's cm_issue_dreq), then this CM keeps the timewait */
		format_dreq(cm, id, NULL, 0);
		mad_send(cm, id->ah, id->retx);
		enter_timewait(cm, id);
		break;
	case SRNIC_CM_DREQ_SENT:
		enter_timewait(cm, id);
		break;
	case SRNIC_CM_DREQ_RCVD:
		send_drep_locked(cm, id, NULL, 0);
		break;
	case SRNIC_CM_TIMEWAIT:
		break; /* the timer frees it */
	case SRNIC_CM_SIDR_REQ_SENT:
	case SRNIC_CM_SIDR_REQ_RCVD:
	case SRNIC_CM_IDLE:
	default:
		reset_to_idle(cm, id);
		break;
	}
	if (id->timer == CM_TMR_EVENT)
		timer_stop(cm, id);
	return 0;
}

int
srnic_cm_destroy_id(struct srnic_cm_id *id)
{
	struct srnic_cm *cm;

	if (id == NULL)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->user_gone) {
		pthread_mutex_unlock(&cm->lock);
		return -EINVAL;
	}
	cm_destroy_locked(cm, id);
	/* a handler running for it on another thread: wait for its return
	 * (waiters keeps the id from being freed by the poll meanwhile) */
	id->waiters++;
	while (id->in_handler > 0 && !pthread_equal(id->handler_thread, pthread_self())) {
		pthread_mutex_unlock(&cm->lock);
		sched_yield();
		pthread_mutex_lock(&cm->lock);
	}
	id->waiters--;
	id_maybe_free(cm, id);
	pthread_mutex_unlock(&cm->lock);
	return 0;
}

/* ---- receive: one function per message ---- */

struct cm_rx {
	const struct ibv_wc *wc;
	const uint8_t *grh;
	const uint8_t *mad;
};

static struct srnic_cm_id *
find_listener(struct srnic_cm *cm, uint64_t sid)
{
	struct srnic_cm_id *l;

	TAILQ_FOREACH(l, &cm->listeners, listen_link)
		if (!l->user_gone && (sid & l->service_mask) == (l->service_id & l->service_mask))
			return l;
	return NULL;
}

/* A passive id whose peer is (remote comm ID, CA GUID): a REQ (or a
 * SIDR_REQ: GUID gid_key()) seen before. */
static struct srnic_cm_id *
find_by_remote(struct srnic_cm *cm, uint32_t remote_id, uint64_t guid)
{
	struct cm_hnode *n;

	for (n = *peer_bucket(cm, cm->by_remote, remote_id, guid); n != NULL; n = n->next) {
		struct srnic_cm_id *id = container_of(n, struct srnic_cm_id, by_remote);

		if (n->key == remote_id && n->guid == guid && id->state != SRNIC_CM_IDLE)
			return id;
	}
	return NULL;
}

/* A connection still up (or in its timewait) to the peer's QP. */
static struct srnic_cm_id *
find_by_remote_qpn(struct srnic_cm *cm, uint32_t qpn, uint64_t guid)
{
	struct cm_hnode *n;

	for (n = *peer_bucket(cm, cm->by_qpn, qpn, guid); n != NULL; n = n->next) {
		struct srnic_cm_id *id = container_of(n, struct srnic_cm_id, by_qpn);

		if (n->key == qpn && n->guid == guid &&
		    (id->state == SRNIC_CM_ESTABLISHED || id->state == SRNIC_CM_DREQ_SENT ||
		     id->state == SRNIC_CM_DREQ_RCVD || id->state == SRNIC_CM_TIMEWAIT))
			return id;
	}
	return NULL;
}

/* The time a request's sender waits for an answer, from now: its tries
 * left at most (1 + retries), each as long as one wait. */
/* ... after our MRA: each try the MRA's service time + the ACK timeout
 * (the sender's wait, as rx_mra() keeps it) */
static uint64_t
mra_expire_us(const struct srnic_cm_id *id)
{
	return (1ull + id->max_cm_retries) *
	       (cm_time_us(id->mra_timeout) + cm_time_us(id->ack_timeout));
}

static void
expire_start(struct srnic_cm *cm, struct srnic_cm_id *id)
{
	timer_start(cm, id, CM_TMR_EXPIRE, id->expire_us);
}

/* A REJ to a REQ no id took (INVALID_SERVICE_ID, STALE_CONN ...): Linux's cm_issue_rej(). */
static void
issue_rej(struct srnic_cm *cm, const struct cm_rx *rx, uint32_t remote_id,
	  enum srnic_cm_msg_ref msg, enum srnic_cm_rej_reason reason)
{
	uint8_t m[SRNIC_MAD_LEN];

	srnic_cm_mad_init(m, SRNIC_CM_ATTR_REJ, srnic_mad_tid(rx->mad));
	srnic_cm_rej_local_comm_id_set(m, 0);
	srnic_cm_rej_remote_comm_id_set(m, remote_id);
	srnic_cm_rej_msg_rejected_set(m, msg);
	srnic_cm_rej_reason_set(m, reason);
	mad_reply(cm, rx->wc, rx->grh, m);
}

/* The index of our GID g, or -1. */
static int
cm_gid_index(const struct srnic_cm *cm, const union ibv_gid *g)
{
	union ibv_gid x;
	int i;

	for (i = 0; i < SRNIC_GID_TBL_LEN; i++)
		if (srnic_dev_gid(cm->dev, i, &x) == 0 && memcmp(x.raw, g->raw, sizeof(x.raw)) == 0)
			return i;
	return -1;
}

/* A path's source: the GID it names if ours (any GID is a source: the
 * link-local GID 0 too), else the device's address (callers that left it
 * zero). */
static void
cm_path_sgid(const struct srnic_cm *cm, union ibv_gid *sgid, const union ibv_gid *want)
{
	*sgid = cm_gid_index(cm, want) >= 0 ? *want : cm->gid;
}

/* The sgid_index of a path's source. */
static uint8_t
cm_sgid_index(const struct srnic_cm *cm, const union ibv_gid *sgid)
{
	int i = cm_gid_index(cm, sgid);

	return i >= 0 ? (uint8_t)i : SRNIC_GID_INDEX_IP;
}

static void
path_from_req(struct srnic_cm *cm, const uint8_t *m, struct srnic_cm_path *p)
{
	union ibv_gid ours;

	uint8_t t;

	memset(p, 0, sizeof(*p));
	/* as seen from here: the REQ's remote GID is ours */
	memcpy(ours.raw, srnic_cm_req_primary_remote_gid_c(m), SRNIC_CM_GID_LEN);
	cm_path_sgid(cm, &p->sgid, &ours);
	memcpy(p->dgid.raw, srnic_cm_req_primary_local_gid_c(m), SRNIC_CM_GID_LEN);
	p->flow_label = srnic_cm_req_primary_flow_label(m);
	p->traffic_class = (uint8_t)srnic_cm_req_primary_traffic_class(m);
	p->hop_limit = (uint8_t)srnic_cm_req_primary_hop_limit(m);
	p->sl = (uint8_t)srnic_cm_req_primary_sl(m);
	p->mtu = (enum ibv_mtu)srnic_cm_req_path_mtu(m);
	t = (uint8_t)srnic_cm_req_primary_local_ack_timeout(m);
	p->packet_life_time = t > 0 ? (uint8_t)(t - 1) : 0;
}

/*
 * The path MTU is the active side's choice (a REP cannot name another):
 * one above what our port carries would leave both ends disagreeing on
 * the packet size (our packets at the port's MTU, the peer's dropped or
 * refused as too short), a connection that hangs. Refuse it in words
 * instead, with the REJ the spec names for it (IBTA 12.6.7: reason 26).
 */
static bool
req_mtu_ok(struct srnic_cm *cm, const struct cm_rx *rx)
{
	unsigned int mtu = srnic_cm_req_path_mtu(rx->mad);
	struct ibv_port_attr pa;

	if (srnic_dev_query_port(cm->dev, &pa) != 0 ||
	    (mtu >= IBV_MTU_256 && mtu <= (unsigned int)pa.active_mtu))
		return true;
	CM_STAT(cm, REJ_BAD_MTU);
	if (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096)
		CM_LOG(ERR, "%s: a REQ asks path MTU %u, the port carries %u: "
		       "rejected (REJ invalid MTU); lower the peer's MTU (its netdev's) "
		       "or give srnic's port a larger one", srnic_dev_name(cm->dev),
		       128u << mtu, 128u << pa.active_mtu);
	else
		CM_LOG(ERR, "%s: a REQ with path MTU code %u (no such MTU): "
		       "rejected (REJ invalid MTU)", srnic_dev_name(cm->dev), mtu);
	issue_rej(cm, rx, srnic_cm_req_local_comm_id(rx->mad), SRNIC_CM_MSG_REQ,
		  SRNIC_CM_REJ_INVALID_MTU);
	return false;
}

static void
rx_req(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	uint32_t rid = srnic_cm_req_local_comm_id(m);
	uint64_t guid = srnic_cm_req_local_ca_guid(m);
	uint32_t transport = srnic_cm_req_transport(m);
	struct srnic_cm_id *id, *l, *old;
	struct srnic_cm_event ev;
	struct srnic_cm_req_event *r = &ev.param.req;

	id = find_by_remote(cm, rid, guid);
	if (id != NULL) {
		/* a REQ resent (ours to it lost): answered again with what we sent,
		 * never a second connection (IBTA chapter 12, the passive side's
		 * duplicate REQ; Linux's cm_dup_req_handler()) */
		CM_STAT(cm, DUP_REQ);
		switch (id->state) {
		case SRNIC_CM_MRA_REQ_SENT:
			if (id->last_valid) {
				mad_send(cm, id->ah, id->last);
				id->sent_any = true;
				/* the peer waits anew, the MRA's time per try */
				id->expire_us = mra_expire_us(id);
			}
			expire_start(cm, id);
			break;
		case SRNIC_CM_REQ_RCVD:
			expire_start(cm, id); /* the peer tries on: it waits again */
			break;
		case SRNIC_CM_REP_SENT:
		case SRNIC_CM_MRA_REP_RCVD:
			mad_send(cm, id->ah, id->retx);
			break;
		case SRNIC_CM_TIMEWAIT:
			issue_rej(cm, rx, rid, SRNIC_CM_MSG_REQ, SRNIC_CM_REJ_STALE_CONN);
			break;
		default:
			break;
		}
		return;
	}
	old = find_by_remote_qpn(cm, srnic_cm_req_local_qpn(m), guid);
	if (old != NULL) {
		/* Linux's stale connection check: that QP is still ours */
		CM_STAT(cm, STALE_CONN);
		issue_rej(cm, rx, rid, SRNIC_CM_MSG_REQ, SRNIC_CM_REJ_STALE_CONN);
		if (old->state == SRNIC_CM_ESTABLISHED) {
			format_dreq(cm, old, NULL, 0);
			old->state = SRNIC_CM_DREQ_SENT;
			retx_start(cm, old, old->timeout_us, old->max_cm_retries);
		}
		return;
	}
	l = find_listener(cm, srnic_cm_req_service_id(m));
	if (l == NULL) {
		CM_STAT(cm, REJ_NO_LISTENER);
		issue_rej(cm, rx, rid, SRNIC_CM_MSG_REQ, SRNIC_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	if (transport != SRNIC_CM_TRANSPORT_RC && transport != SRNIC_CM_TRANSPORT_UC) {
		CM_STAT(cm, REJ_BAD_TRANSPORT);
		issue_rej(cm, rx, rid, SRNIC_CM_MSG_REQ, SRNIC_CM_REJ_INVALID_TRANSPORT_TYPE);
		return;
	}
	if (!req_mtu_ok(cm, rx))
		return;
	id = id_alloc(cm, l->handler, l->context);
	if (id == NULL) {
		issue_rej(cm, rx, rid, SRNIC_CM_MSG_REQ, SRNIC_CM_REJ_NO_RESOURCES);
		return;
	}
	id->passive = true;
	id->state = SRNIC_CM_REQ_RCVD;
	id->remote_id = rid;
	id->remote_ca_guid = guid;
	id->service_id = srnic_cm_req_service_id(m);
	id->tid = srnic_mad_tid(m);
	id->ah = srnic_create_ah_from_wc(cm->pd, rx->wc, rx->grh);
	if (id->ah == NULL)
		CM_STAT(cm, AH_ERR);
	peer_add(cm, cm->by_remote, &id->by_remote, rid, guid);
	peer_add(cm, cm->by_qpn, &id->by_qpn, srnic_cm_req_local_qpn(m), guid);
	path_from_req(cm, m, &id->path);
	id->qp_type = transport == SRNIC_CM_TRANSPORT_UC ? IBV_QPT_UC : IBV_QPT_RC;
	id->remote_qpn = srnic_cm_req_local_qpn(m);
	id->sq_psn = srnic_cm_req_starting_psn(m);
	/* ours mirror the peer's: its initiator depth is our responder resources */
	id->responder_resources = (uint8_t)srnic_cm_req_init_depth(m);
	id->initiator_depth = (uint8_t)srnic_cm_req_resp_resources(m);
	id->retry_count = (uint8_t)srnic_cm_req_retry_count(m);
	id->rnr_retry_count = (uint8_t)srnic_cm_req_rnr_retry(m);
	id->ack_timeout = (uint8_t)srnic_cm_req_primary_local_ack_timeout(m);
	id->max_cm_retries = (uint8_t)srnic_cm_req_max_cm_retries(m);
	/* the REQ's sender waits this long for our RTU's answer: Linux's timeout_ms */
	id->timeout_us = cm_time_us((uint8_t)srnic_cm_req_local_cm_resp_timeout(m));
	/* ... and for our REP, per try (srnic_cm_send_req's rule), 1 + retries tries */
	id->expire_us = (1ull + id->max_cm_retries) *
			(2 * cm_time_us(id->path.packet_life_time) +
			 cm_time_us((uint8_t)srnic_cm_req_remote_cm_resp_timeout(m)));
	expire_start(cm, id);

	memset(&ev, 0, sizeof(ev));
	ev.type = SRNIC_CM_EV_REQ_RECEIVED;
	r->listen_id = l;
	r->path = id->path;
	r->remote_ca_guid = guid;
	r->service_id = id->service_id;
	r->remote_qkey = srnic_cm_req_local_qkey(m);
	r->remote_qpn = id->remote_qpn;
	r->qp_type = id->qp_type;
	r->starting_psn = id->sq_psn;
	r->responder_resources = (uint8_t)srnic_cm_req_resp_resources(m);
	r->initiator_depth = (uint8_t)srnic_cm_req_init_depth(m);
	r->local_cm_response_timeout = (uint8_t)srnic_cm_req_local_cm_resp_timeout(m);
	r->remote_cm_response_timeout = (uint8_t)srnic_cm_req_remote_cm_resp_timeout(m);
	r->flow_control = (uint8_t)srnic_cm_req_flow_ctrl(m);
	r->retry_count = id->retry_count;
	r->rnr_retry_count = id->rnr_retry_count;
	r->srq = (uint8_t)srnic_cm_req_srq(m);
	ev.private_data = srnic_cm_req_pdata_c(m);
	ev.private_data_len = SRNIC_CM_REQ_PDATA_LEN;
	deliver_request(cm, l, id, &ev);
}

static void
rx_mra(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	struct srnic_cm_id *id = id_find(cm, srnic_cm_mra_remote_comm_id(m));
	uint32_t what = srnic_cm_mra_msg_mraed(m);
	struct srnic_cm_event ev;
	bool first;

	if (id == NULL) {
		CM_STAT(cm, RX_UNKNOWN_ID);
		return;
	}
	if (what == SRNIC_CM_MSG_REQ &&
	    (id->state == SRNIC_CM_REQ_SENT || id->state == SRNIC_CM_MRA_REQ_RCVD)) {
		id->state = SRNIC_CM_MRA_REQ_RCVD;
	} else if (what == SRNIC_CM_MSG_REP &&
		   (id->state == SRNIC_CM_REP_SENT || id->state == SRNIC_CM_MRA_REP_RCVD) &&
		   srnic_cm_mra_local_comm_id(m) == id->remote_id) {
		id->state = SRNIC_CM_MRA_REP_RCVD;
	} else {
		CM_STAT(cm, RX_BAD_STATE);
		return;
	}
	/* the peer is alive and asks for time: wait its service timeout + the
	 * path's ACK timeout, and start the retries again (Linux's cm_mra_rcv) */
	first = !id->mra_seen;
	id->mra_seen = true;
	id->retries_left = id->max_cm_retries;
	timer_start(cm, id, CM_TMR_RESEND,
		    cm_time_us((uint8_t)srnic_cm_mra_service_timeout(m)) +
			    cm_time_us(id->ack_timeout));
	if (!first)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.type = SRNIC_CM_EV_MRA_RECEIVED;
	ev.param.mra.service_timeout = (uint8_t)srnic_cm_mra_service_timeout(m);
	ev.private_data = srnic_cm_mra_pdata_c(m);
	ev.private_data_len = SRNIC_CM_MRA_PDATA_LEN;
	deliver(cm, id, &ev);
}

/* The id a REJ is for. A peer that gives up on its REQ before any REP
 * came (it knows no comm ID of ours: remote 0) sends REJ TIMEOUT with its
 * CA GUID as ARI (IBTA 12.6.7.1): that names our passive id by the peer's
 * comm ID and GUID, as Linux's cm_acquire_rejected_id() finds it. Else
 * the REJ names our ID, and its local comm ID must be the peer's where
 * the id knows it (a passive id always, an active one after the REP),
 * whatever message it rejects: a REJ of a REQ was taken on our ID alone,
 * and one who learnt that ID could end the connection, even established. */
static struct srnic_cm_id *
rej_target(struct srnic_cm *cm, const uint8_t *m)
{
	struct srnic_cm_id *id;

	if (srnic_cm_rej_reason(m) == SRNIC_CM_REJ_TIMEOUT && srnic_cm_rej_remote_comm_id(m) == 0) {
		if (srnic_cm_rej_ari_len(m) < sizeof(uint64_t))
			return NULL;
		return find_by_remote(cm, srnic_cm_rej_local_comm_id(m),
				      srnic_ld64(srnic_cm_rej_ari_c(m)));
	}
	id = id_find(cm, srnic_cm_rej_remote_comm_id(m));
	if (id == NULL || (id->remote_id != 0 && srnic_cm_rej_local_comm_id(m) != id->remote_id))
		return NULL;
	return id;
}

static void
rx_rej(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	struct srnic_cm_id *id = rej_target(cm, m);
	enum srnic_cm_rej_reason reason = (enum srnic_cm_rej_reason)srnic_cm_rej_reason(m);
	struct srnic_cm_event ev;
	uint8_t ari_len = (uint8_t)srnic_cm_rej_ari_len(m);

	if (id == NULL) {
		CM_STAT(cm, RX_UNKNOWN_ID);
		return;
	}
	switch (id->state) {
	case SRNIC_CM_REQ_SENT:
	case SRNIC_CM_MRA_REQ_RCVD:
	case SRNIC_CM_REP_SENT:
	case SRNIC_CM_MRA_REP_RCVD:
	case SRNIC_CM_REQ_RCVD:
	case SRNIC_CM_MRA_REQ_SENT:
	case SRNIC_CM_REP_RCVD:
	case SRNIC_CM_MRA_REP_SENT:
		if (reason == SRNIC_CM_REJ_STALE_CONN)
			enter_timewait(cm, id);
		else
			reset_to_idle(cm, id);
		break;
	case SRNIC_CM_ESTABLISHED:
	case SRNIC_CM_DREQ_SENT:
		/* a REJ for a connection made: the peer dropped it (Linux: timewait) */
		enter_timewait(cm, id);
		break;
	default:
		CM_STAT(cm, RX_BAD_STATE);
		return;
	}
	if (id->remote_id == 0)
		id->remote_id = srnic_cm_rej_local_comm_id(m);
	memset(&ev, 0, sizeof(ev));
	ev.type = SRNIC_CM_EV_REJ_RECEIVED;
	ev.param.rej.reason = reason;
	if (ari_len > SRNIC_CM_REJ_ARI_LEN)
		ari_len = SRNIC_CM_REJ_ARI_LEN;
	ev.param.rej.ari = ari_len > 0 ? srnic_cm_rej_ari_c(m) : NULL;
	ev.param.rej.ari_length = ari_len;
	ev.private_data = srnic_cm_rej_pdata_c(m);
	ev.private_data_len = SRNIC_CM_REJ_PDATA_LEN;
	deliver(cm, id, &ev);
}

static void
rx_rep(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	struct srnic_cm_id *id = id_find(cm, srnic_cm_rep_remote_comm_id(m));
	struct srnic_cm_event ev;
	struct srnic_cm_rep_event *r = &ev.param.rep;

	if (id == NULL || id->passive) {
		CM_STAT(cm, RX_UNKNOWN_ID);
		return;
	}
	switch (id->state) {
	case SRNIC_CM_REQ_SENT:
	case SRNIC_CM_MRA_REQ_RCVD:
		break;
	case SRNIC_CM_ESTABLISHED:
	case SRNIC_CM_MRA_REP_SENT:
		/* our RTU (or MRA) was lost: say it again (Linux's cm_dup_rep_handler) */
		CM_STAT(cm, DUP_REP);
		if (srnic_cm_rep_local_comm_id(m) == id->remote_id && id->last_valid)
			mad_send(cm, id->ah, id->last);
		return;
	default:
		CM_STAT(cm, DUP_REP);
		return;
	}
	timer_stop(cm, id);
	id->state = SRNIC_CM_REP_RCVD;
	id->remote_id = srnic_cm_rep_local_comm_id(m);
	id->remote_ca_guid = srnic_cm_rep_local_ca_guid(m);
	id->remote_qpn = srnic_cm_rep_local_qpn(m);
	peer_add(cm, cm->by_qpn, &id->by_qpn, id->remote_qpn, id->remote_ca_guid);
	id->sq_psn = srnic_cm_rep_starting_psn(m);
	id->responder_resources = (uint8_t)srnic_cm_rep_init_depth(m);
	id->initiator_depth = (uint8_t)srnic_cm_rep_resp_resources(m);
	id->rnr_retry_count = (uint8_t)srnic_cm_rep_rnr_retry(m);
	id->ack_timeout = cm_ack_timeout((uint8_t)srnic_cm_rep_target_ack_delay(m),
					 id->path.packet_life_time);
	memset(&ev, 0, sizeof(ev));
	ev.type = SRNIC_CM_EV_REP_RECEIVED;
	r->remote_ca_guid = id->remote_ca_guid;
	r->remote_qkey = srnic_cm_rep_local_qkey(m);
	r->remote_qpn = id->remote_qpn;
	r->starting_psn = id->sq_psn;
	r->responder_resources = (uint8_t)srnic_cm_rep_resp_resources(m);
	r->initiator_depth = (uint8_t)srnic_cm_rep_init_depth(m);
	r->target_ack_delay = (uint8_t)srnic_cm_rep_target_ack_delay(m);
	r->failover_accepted = (uint8_t)srnic_cm_rep_failover(m);
	r->flow_control = (uint8_t)srnic_cm_rep_flow_ctrl(m);
	r->rnr_retry_count = id->rnr_retry_count;
	r->srq = (uint8_t)srnic_cm_rep_srq(m);
	ev.private_data = srnic_cm_rep_pdata_c(m);
	ev.private_data_len = SRNIC_CM_REP_PDATA_LEN;
	deliver(cm, id, &ev);
}

static void
rx_rtu(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	struct srnic_cm_id *id = id_find(cm, srnic_cm_rtu_remote_comm_id(m));

	if (id == NULL || srnic_cm_rtu_local_comm_id(m) != id->remote_id) {
		CM_STAT(cm, RX_UNKNOWN_ID);
		return;
	}
	if (id->state != SRNIC_CM_REP_SENT && id->state != SRNIC_CM_MRA_REP_RCVD) {
		CM_STAT(cm, RX_BAD_STATE); /* e.g. after srnic_cm_established() */
		return;
	}
	timer_stop(cm, id);
	id->state = SRNIC_CM_ESTABLISHED;
	deliver_simple(cm, id, SRNIC_CM_EV_RTU_RECEIVED, srnic_cm_rtu_pdata_c(m),
		       SRNIC_CM_RTU_PDATA_LEN);
}

static void
rx_dreq(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	struct srnic_cm_id *id = id_find(cm, srnic_cm_dreq_remote_comm_id(m));

	if (id == NULL || srnic_cm_dreq_local_comm_id(m) != id->remote_id) {
		uint8_t r[SRNIC_MAD_LEN];

		/* Linux's cm_issue_drep(): a DREQ for nothing we know gets its DREP */
		CM_STAT(cm, DUP_DREQ);
		srnic_cm_mad_init(r, SRNIC_CM_ATTR_DREP, srnic_mad_tid(m));
		srnic_cm_drep_local_comm_id_set(r, srnic_cm_dreq_remote_comm_id(m));
		srnic_cm_drep_remote_comm_id_set(r, srnic_cm_dreq_local_comm_id(m));
		mad_reply(cm, rx->wc, rx->grh, r);
		return;
	}
	if (srnic_cm_dreq_remote_qpn(m) != id->local_qpn) {
		CM_STAT(cm, RX_BAD_QPN);
		return;
	}
	switch (id->state) {
	case SRNIC_CM_REP_SENT:
	case SRNIC_CM_MRA_REP_RCVD:
	case SRNIC_CM_DREQ_SENT:
		timer_stop(cm, id);
		break;
	case SRNIC_CM_ESTABLISHED:
		break;
	case SRNIC_CM_TIMEWAIT:
		/* our DREP was lost */
		CM_STAT(cm, DUP_DREQ);
		id->dreq_tid = srnic_mad_tid(m);
		format_drep(id, id->last, id->dreq_tid, NULL, 0);
		mad_send(cm, id->ah, id->last);
		return;
	case SRNIC_CM_DREQ_RCVD:
		CM_STAT(cm, DUP_DREQ);
		return;
	default:
		CM_STAT(cm, RX_BAD_STATE);
		return;
	}
	id->state = SRNIC_CM_DREQ_RCVD;
	id->dreq_tid = srnic_mad_tid(m);
	if (id->user_gone) {
		send_drep_locked(cm, id, NULL, 0); /* nobody to ask: answer now */
		return;
	}
	deliver_simple(cm, id, SRNIC_CM_EV_DREQ_RECEIVED, srnic_cm_dreq_pdata_c(m),
		       SRNIC_CM_DREQ_PDATA_LEN);
}

static void
rx_drep(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	struct srnic_cm_id *id = id_find(cm, srnic_cm_drep_remote_comm_id(m));

	if (id == NULL || srnic_cm_drep_local_comm_id(m) != id->remote_id) {
		CM_STAT(cm, RX_UNKNOWN_ID);
		return;
	}
	if (id->state != SRNIC_CM_DREQ_SENT && id->state != SRNIC_CM_DREQ_RCVD) {
		CM_STAT(cm, RX_BAD_STATE);
		return;
	}
	enter_timewait(cm, id);
	deliver_simple(cm, id, SRNIC_CM_EV_DREP_RECEIVED, srnic_cm_drep_pdata_c(m),
		       SRNIC_CM_DREP_PDATA_LEN);
}

static void
rx_sidr_req(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	uint32_t rid = srnic_cm_sidr_req_request_id(m);
	struct srnic_cm_id *id, *l;
	struct srnic_cm_event ev;
	union ibv_gid from;
	struct ibv_ah_attr aa;

	if (srnic_init_ah_from_wc(cm->dev, rx->wc, rx->grh, &aa) != 0) {
		CM_STAT(cm, RX_BAD_SRC);
		return;
	}
	from = aa.grh.dgid;
	id = find_by_remote(cm, rid, gid_key(&from));
	if (id != NULL && id->state == SRNIC_CM_SIDR_REQ_RCVD &&
	    memcmp(id->path.dgid.raw, from.raw, sizeof(from.raw)) == 0) {
		CM_STAT(cm, DUP_SIDR_REQ);
		return;
	}
	l = find_listener(cm, srnic_cm_sidr_req_service_id(m));
	if (l == NULL) {
		uint8_t r[SRNIC_MAD_LEN];

		CM_STAT(cm, SIDR_NO_LISTENER);
		srnic_cm_mad_init(r, SRNIC_CM_ATTR_SIDR_REP, srnic_mad_tid(m));
		srnic_cm_sidr_rep_request_id_set(r, rid);
		srnic_cm_sidr_rep_status_set(r, SRNIC_CM_SIDR_UNSUPPORTED);
		srnic_cm_sidr_rep_service_id_set(r, srnic_cm_sidr_req_service_id(m));
		mad_reply(cm, rx->wc, rx->grh, r);
		return;
	}
	id = id_alloc(cm, l->handler, l->context);
	if (id == NULL)
		return;
	id->passive = true;
	id->state = SRNIC_CM_SIDR_REQ_RCVD;
	id->remote_id = rid;
	id->tid = srnic_mad_tid(m);
	id->service_id = srnic_cm_sidr_req_service_id(m);
	id->ah = srnic_create_ah(cm->pd, &aa);
	if (id->ah == NULL)
		CM_STAT(cm, AH_ERR);
	srnic_dev_gid(cm->dev, aa.grh.sgid_index, &id->path.sgid); /* the GID it came to */
	id->path.dgid = from;
	id->path.hop_limit = aa.grh.hop_limit;
	id->path.traffic_class = aa.grh.traffic_class;
	id->path.flow_label = aa.grh.flow_label;
	peer_add(cm, cm->by_remote, &id->by_remote, rid, gid_key(&from));
	id->expire_us = CM_SIDR_REQ_EXPIRE_US;
	expire_start(cm, id);
	memset(&ev, 0, sizeof(ev));
	ev.type = SRNIC_CM_EV_SIDR_REQ_RECEIVED;
	ev.param.sidr_req.listen_id = l;
	ev.param.sidr_req.path = id->path;
	ev.param.sidr_req.service_id = id->service_id;
	ev.private_data = srnic_cm_sidr_req_pdata_c(m);
	ev.private_data_len = SRNIC_CM_SIDR_REQ_PDATA_LEN;
	deliver_request(cm, l, id, &ev);
}

static void
rx_sidr_rep(struct srnic_cm *cm, const struct cm_rx *rx)
{
	const uint8_t *m = rx->mad;
	struct srnic_cm_id *id = id_find(cm, srnic_cm_sidr_rep_request_id(m));
	struct srnic_cm_event ev;
	uint8_t info_len = (uint8_t)srnic_cm_sidr_rep_info_len(m);

	if (id == NULL) {
		CM_STAT(cm, RX_UNKNOWN_ID);
		return;
	}
	if (id->state != SRNIC_CM_SIDR_REQ_SENT) {
		CM_STAT(cm, RX_BAD_STATE);
		return;
	}
	reset_to_idle(cm, id);
	memset(&ev, 0, sizeof(ev));
	ev.type = SRNIC_CM_EV_SIDR_REP_RECEIVED;
	ev.param.sidr_rep.status = (enum srnic_cm_sidr_status)srnic_cm_sidr_rep_status(m);
	ev.param.sidr_rep.qkey = srnic_cm_sidr_rep_qkey(m);
	ev.param.sidr_rep.qpn = srnic_cm_sidr_rep_qpn(m);
	if (info_len > SRNIC_CM_SIDR_REP_INFO_LEN)
		info_len = SRNIC_CM_SIDR_REP_INFO_LEN;
	ev.param.sidr_rep.info = info_len > 0 ? srnic_cm_sidr_rep_info_c(m) : NULL;
	ev.param.sidr_rep.info_len = info_len;
	ev.private_data = srnic_cm_sidr_rep_pdata_c(m);
	ev.private_data_len = SRNIC_CM_SIDR_REP_PDATA_LEN;
	deliver(cm, id, &ev);
}

typedef void (*cm_rx_fn)(struct srnic_cm *cm, const struct cm_rx *rx);

static const cm_rx_fn cm_rx_ops[] = {
	[SRNIC_CM_ATTR_REQ - SRNIC_CM_ATTR_REQ] = rx_req,
	[SRNIC_CM_ATTR_MRA - SRNIC_CM_ATTR_REQ] = rx_mra,
	[SRNIC_CM_ATTR_REJ - SRNIC_CM_ATTR_REQ] = rx_rej,
	[SRNIC_CM_ATTR_REP - SRNIC_CM_ATTR_REQ] = rx_rep,
	[SRNIC_CM_ATTR_RTU - SRNIC_CM_ATTR_REQ] = rx_rtu,
	[SRNIC_CM_ATTR_DREQ - SRNIC_CM_ATTR_REQ] = rx_dreq,
	[SRNIC_CM_ATTR_DREP - SRNIC_CM_ATTR_REQ] = rx_drep,
	[SRNIC_CM_ATTR_SIDR_REQ - SRNIC_CM_ATTR_REQ] = rx_sidr_req,
	[SRNIC_CM_ATTR_SIDR_REP - SRNIC_CM_ATTR_REQ] = rx_sidr_rep,
};

static const enum srnic_cm_stat_id cm_check_stat[] = {
	[SRNIC_MAD_SHORT] = SRNIC_CM_STAT_RX_SHORT,
	[SRNIC_MAD_BAD_BASE] = SRNIC_CM_STAT_RX_BAD_BASE,
	[SRNIC_MAD_BAD_CLASS] = SRNIC_CM_STAT_RX_BAD_CLASS,
	[SRNIC_MAD_BAD_VERSION] = SRNIC_CM_STAT_RX_BAD_VERSION,
	[SRNIC_MAD_BAD_METHOD] = SRNIC_CM_STAT_RX_BAD_METHOD,
	[SRNIC_MAD_BAD_ATTR] = SRNIC_CM_STAT_RX_BAD_ATTR,
};

static void
cm_recv(struct srnic_cm *cm, const struct ibv_wc *wc)
{
	unsigned int i = (unsigned int)wc->wr_id;
	const uint8_t *buf = recv_buf(cm, i);
	struct cm_rx rx = { .wc = wc, .grh = buf, .mad = buf + SRNIC_GRH_LEN };
	enum srnic_mad_check c;
	uint32_t attr;

	if (unlikely(wc->status != IBV_WC_SUCCESS)) {
		CM_STAT(cm, RX_WC_ERR);
		/* A flush comes of ERR, and out of RTS qp1_recover() posts
		 * every buffer again (its RESET drops the rest of the old
		 * WQEs' CQEs). Any other error with QP1 in RTS (an error class
		 * that leaves the QP up, or the engine on another thread that
		 * has pushed the CQE and not yet moved the QP: its RESET then
		 * rewinds this post too) leaves the buffer with no WQE:
		 * post it again, or QP1 loses a receive for good each time. */
		if (wc->status == IBV_WC_WR_FLUSH_ERR ||
		    srnic_qp_state(cm->qp1) != IBV_QPS_RTS)
			return;
		CM_STAT(cm, RX_WC_ERR_REPOSTED);
		goto repost;
	}
	if (wc->byte_len < SRNIC_GRH_LEN) {
		CM_STAT(cm, RX_SHORT);
		goto repost;
	}
	if (!(wc->wc_flags & IBV_WC_GRH) || wc->src_qp != SRNIC_GSI_QPN) {
		CM_STAT(cm, RX_BAD_SRC);
		goto repost;
	}
	c = srnic_cm_mad_check(rx.mad, wc->byte_len - SRNIC_GRH_LEN);
	if (c != SRNIC_MAD_OK) {
		cm->stats[cm_check_stat[c]]++;
		goto repost;
	}
	attr = srnic_mad_attr_id(rx.mad);
	CM_STAT(cm, RX_MADS);
	cm->stats[cm_rx_stat[attr - SRNIC_CM_ATTR_REQ]]++;
	cm_rx_ops[attr - SRNIC_CM_ATTR_REQ](cm, &rx);
repost:
	if (recv_post(cm, i) != 0)
		CM_STAT(cm, RX_WC_ERR);
}

static void
cm_send_done(struct srnic_cm *cm, const struct ibv_wc *wc)
{
	uint16_t i = (uint16_t)(wc->wr_id & ~CM_WR_SEND_FLAG);

	if (wc->status != IBV_WC_SUCCESS)
		CM_STAT(cm, TX_WC_ERR);
	if (i < CM_NSEND)
		cm->send_free[cm->nsend_free++] = i;
}

/* ---- timers ---- */

static void
cm_timeout(struct srnic_cm *cm, struct srnic_cm_id *id, enum cm_timer_kind kind)
{
	enum srnic_cm_event_type ev;

	if (kind == CM_TMR_TIMEWAIT) {
		CM_STAT(cm, TIMEWAIT_EXIT);
		id->state = SRNIC_CM_IDLE;
		deliver_simple(cm, id, SRNIC_CM_EV_TIMEWAIT_EXIT, NULL, 0);
		return;
	}
	if (kind == CM_TMR_EVENT) {
		deliver_simple(cm, id, SRNIC_CM_EV_USER_ESTABLISHED, NULL, 0);
		return;
	}
	if (kind == CM_TMR_EXPIRE) {
		/* the peer gave up on this request: nothing to send, the id
		 * is free for its consumer to destroy (bounds the memory of
		 * requests nobody takes) */
		CM_STAT(cm, REQ_EXPIRED);
		reset_to_idle(cm, id);
		deliver_simple(cm, id, SRNIC_CM_EV_REQ_EXPIRED, NULL, 0);
		return;
	}
	if (id->retries_left > 0) {
		id->retries_left--;
		switch (id->state) {
		case SRNIC_CM_REQ_SENT:
		case SRNIC_CM_MRA_REQ_RCVD:
			CM_STAT(cm, REQ_RESENT);
			break;
		case SRNIC_CM_REP_SENT:
		case SRNIC_CM_MRA_REP_RCVD:
			CM_STAT(cm, REP_RESENT);
			break;
		case SRNIC_CM_DREQ_SENT:
			CM_STAT(cm, DREQ_RESENT);
			break;
		default:
			CM_STAT(cm, SIDR_REQ_RESENT);
			break;
		}
		timer_start(cm, id, CM_TMR_RESEND, id->timeout_us);
		mad_send(cm, id->ah, id->retx);
		return;
	}
	/* Linux's cm_process_send_error() */
	switch (id->state) {
	case SRNIC_CM_REQ_SENT:
	case SRNIC_CM_MRA_REQ_RCVD:
		CM_STAT(cm, REQ_TIMEOUT);
		reset_to_idle(cm, id);
		ev = SRNIC_CM_EV_REQ_ERROR;
		break;
	case SRNIC_CM_REP_SENT:
	case SRNIC_CM_MRA_REP_RCVD:
		CM_STAT(cm, REP_TIMEOUT);
		reset_to_idle(cm, id);
		ev = SRNIC_CM_EV_REP_ERROR;
		break;
	case SRNIC_CM_DREQ_SENT:
		CM_STAT(cm, DREQ_TIMEOUT);
		enter_timewait(cm, id);
		ev = SRNIC_CM_EV_DREQ_ERROR;
		break;
	case SRNIC_CM_SIDR_REQ_SENT:
		CM_STAT(cm, SIDR_REQ_TIMEOUT);
		reset_to_idle(cm, id);
		ev = SRNIC_CM_EV_SIDR_REQ_ERROR;
		break;
	default:
		return;
	}
	deliver_simple(cm, id, ev, NULL, 0);
}

static void
cm_run_timers(struct srnic_cm *cm)
{
	uint64_t now = cm_now();
	struct srnic_cm_id *id;

	while ((id = TAILQ_FIRST(&cm->timers)) != NULL && id->timer_at <= now) {
		enum cm_timer_kind kind = id->timer;

		timer_stop(cm, id);
		id->in_handler++; /* keep it while cm_timeout() works on it */
		cm_timeout(cm, id, kind);
		id->in_handler--;
		id_maybe_free(cm, id);
	}
}

static void qp1_recover(struct srnic_cm *cm);

int
srnic_cm_poll(struct srnic_cm *cm, uint64_t *next_us)
{
	struct ibv_wc wc[CM_POLL_BURST];
	int n, i, handled = 0;

	if (cm == NULL)
		return -EINVAL;
	pthread_mutex_lock(&cm->lock);
	do {
		n = srnic_poll_cq(cm->cq, CM_POLL_BURST, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & CM_WR_SEND_FLAG) {
				cm_send_done(cm, &wc[i]);
			} else if (wc[i].wr_id < CM_NRECV) {
				cm_recv(cm, &wc[i]);
				handled++;
			}
		}
	} while (n == CM_POLL_BURST);
	if (unlikely(srnic_qp_state(cm->qp1) != IBV_QPS_RTS))
		qp1_recover(cm);
	cm_run_timers(cm);
	if (next_us != NULL) {
		struct srnic_cm_id *t = TAILQ_FIRST(&cm->timers);
		uint64_t now = cm_now(), hz = rte_get_timer_hz();

		if (t == NULL)
			*next_us = UINT64_MAX;
		else if (t->timer_at <= now)
			*next_us = 0;
		else
			*next_us = (t->timer_at - now) * 1000000 / hz;
	}
	pthread_mutex_unlock(&cm->lock);
	return handled;
}

/* ---- create / destroy ---- */

static int
cm_dev_claim(struct srnic_dev *dev, bool claim)
{
	int i, free_slot = -1, rc = 0;

	pthread_mutex_lock(&cm_devs_lock);
	for (i = 0; i < CM_MAX_DEVS; i++) {
		if (cm_devs[i] == dev) {
			if (claim)
				rc = -EEXIST;
			else
				cm_devs[i] = NULL;
			goto out;
		}
		if (cm_devs[i] == NULL && free_slot < 0)
			free_slot = i;
	}
	if (claim) {
		if (free_slot < 0)
			rc = -ENOSPC;
		else
			cm_devs[free_slot] = dev;
	}
out:
	pthread_mutex_unlock(&cm_devs_lock);
	return rc;
}

static int
qp1_up(struct srnic_cm *cm)
{
	struct ibv_qp_attr a;
	unsigned int i;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = SRNIC_GSI_QKEY;
	rc = srnic_modify_qp(cm->qp1, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_QKEY);
	if (rc != 0)
		return rc;
	for (i = 0; i < CM_NRECV; i++) {
		rc = recv_post(cm, i);
		if (rc != 0)
			return -abs(rc);
	}
	a.qp_state = IBV_QPS_RTR;
	rc = srnic_modify_qp(cm->qp1, &a, IBV_QP_STATE);
	if (rc != 0)
		return rc;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = rte_rand() & SRNIC_PSN_MASK;
	return srnic_modify_qp(cm->qp1, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/*
 * QP1 out of RTS, whatever moved it (the engine's ERR, a modify): a CM
 * whose GSI QP stayed down would fail every later connect, accept and SIDR
 * of the device until restart. Back through RESET (its WQEs and CQEs go:
 * every buffer is the CM's again) to RTS with every receive posted, as
 * Linux's MAD layer brings its QP back to RTS after a send error
 * (mad_error_handler()). A failed attempt (-EDEADLK from inside an
 * engine's poll) is counted and tried again at the next poll. Under the
 * CM's lock.
 */
static void
qp1_recover(struct srnic_cm *cm)
{
	enum ibv_qp_state st = srnic_qp_state(cm->qp1);
	struct ibv_qp_attr a;
	unsigned int i;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	rc = srnic_modify_qp(cm->qp1, &a, IBV_QP_STATE);
	if (rc == 0) {
		for (i = 0; i < CM_NSEND; i++)
			cm->send_free[i] = (uint16_t)i;
		cm->nsend_free = CM_NSEND;
		rc = qp1_up(cm);
	}
	if (rc != 0) {
		CM_STAT(cm, QP1_RECOVER_FAILED);
		CM_LOG(ERR, "%s: QP1 in state %d could not be brought back to RTS (%s); "
		       "trying again at the next poll", srnic_dev_name(cm->dev), (int)st,
		       strerror(-rc));
		return;
	}
	CM_STAT(cm, QP1_RECOVERED);
	CM_LOG(WARNING, "%s: QP1 was in state %d: reset and back in RTS, %u receives posted",
	       srnic_dev_name(cm->dev), (int)st, CM_NRECV);
}

/* The buffers go once no mbuf in flight points into them (zero-copy TX). */
static void
cm_mem_release(void *addr, size_t length, void *arg)
{
	RTE_SET_USED(length);
	RTE_SET_USED(arg);
	rte_free(addr);
}

static void
cm_free(struct srnic_cm *cm)
{
	if (cm->qp1 != NULL)
		srnic_destroy_qp(cm->qp1);
	if (cm->cq != NULL)
		srnic_destroy_cq(cm->cq);
	if (cm->mr != NULL)
		srnic_dereg_mr(cm->mr); /* cm_mem_release() frees cm->mem */
	else
		rte_free(cm->mem);
	if (cm->pd != NULL)
		srnic_dealloc_pd(cm->pd);
	pthread_mutex_destroy(&cm->lock);
	free(cm);
}

struct srnic_cm *
srnic_cm_create(struct srnic_dev *dev, struct srnic_engine *eng)
{
	struct srnic_qp_init_attr qa;
	struct ibv_device_attr da;
	struct srnic_cm *cm;
	size_t len = (size_t)CM_NRECV * CM_RECV_LEN + (size_t)CM_NSEND * SRNIC_MAD_LEN;
	unsigned int i;
	int rc;

	if (dev == NULL || eng == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	rc = cm_dev_claim(dev, true);
	if (rc != 0) {
		CM_LOG(ERR, "%s: %s", srnic_dev_name(dev),
		       rc == -EEXIST ? "the device has a CM already (one per device)"
				     : "too many devices with a CM");
		rte_errno = -rc;
		return NULL;
	}
	cm = calloc(1, sizeof(*cm));
	if (cm == NULL) {
		cm_dev_claim(dev, false);
		rte_errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&cm->lock, NULL);
	TAILQ_INIT(&cm->all);
	TAILQ_INIT(&cm->listeners);
	TAILQ_INIT(&cm->timers);
	cm->dev = dev;
	cm->eng = eng;
	cm->tid_hi = (uint32_t)rte_rand() | 1u;
	cm->hseed = ((uint64_t)cm_rand32() << 32) | cm_rand32();
	rc = srnic_dev_gid(dev, SRNIC_GID_INDEX_IP, &cm->gid);
	if (rc == 0)
		rc = srnic_dev_query(dev, &da);
	if (rc != 0)
		goto fail_rc;
	/* node_guid: the EUI-64 of the MAC, network order (as rxe's) */
	cm->guid = rte_be_to_cpu_64(da.node_guid);
	cm->pd = srnic_alloc_pd(dev);
	cm->mem = rte_zmalloc("srnic_cm", len, 64);
	if (cm->pd == NULL || cm->mem == NULL)
		goto fail;
	cm->mr = srnic_reg_mr_cb(cm->pd, cm->mem, len, IBV_ACCESS_LOCAL_WRITE, cm_mem_release,
				 NULL);
	cm->cq = srnic_create_cq(dev, CM_NRECV + CM_NSEND, eng);
	if (cm->mr == NULL || cm->cq == NULL)
		goto fail;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cm->cq;
	qa.max_send_wr = CM_NSEND;
	qa.max_recv_wr = CM_NRECV;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_UD;
	qa.comp_mask = SRNIC_QP_INIT_ATTR_GSI;
	cm->qp1 = srnic_create_qp(cm->pd, &qa);
	if (cm->qp1 == NULL)
		goto fail;
	if (srnic_qp_num(cm->qp1) != SRNIC_GSI_QPN) {
		CM_LOG(ERR, "%s: the GSI QP got QPN %u, not 1", srnic_dev_name(dev),
		       srnic_qp_num(cm->qp1));
		rc = -EBUSY;
		goto fail_rc;
	}
	for (i = 0; i < CM_NSEND; i++)
		cm->send_free[i] = (uint16_t)i;
	cm->nsend_free = CM_NSEND;
	rc = qp1_up(cm);
	if (rc != 0)
		goto fail_rc;
	return cm;
fail:
	rc = rte_errno != 0 ? -rte_errno : -ENOMEM;
fail_rc:
	CM_LOG(ERR, "%s: CM not created (%s)", srnic_dev_name(dev), strerror(-rc));
	cm_free(cm);
	cm_dev_claim(dev, false);
	rte_errno = -rc;
	return NULL;
}

int
srnic_cm_destroy(struct srnic_cm *cm)
{
	struct srnic_cm_id *id, *tmp;
	bool busy = false;

	if (cm == NULL)
		return -EINVAL;
	pthread_mutex_lock(&cm->lock);
	/* ids the user let go of that only wait for their timewait go now */
	for (id = TAILQ_FIRST(&cm->all); id != NULL; id = tmp) {
		tmp = TAILQ_NEXT(id, all_link);
		if (!id->user_gone || id->in_handler > 0) {
			busy = true;
			continue;
		}
		timer_stop(cm, id);
		id->state = SRNIC_CM_IDLE;
		id_maybe_free(cm, id);
	}
	pthread_mutex_unlock(&cm->lock);
	if (busy)
		return -EBUSY;
	cm_dev_claim(cm->dev, false);
	cm_free(cm);
	return 0;
}

/* ---- ids ---- */

struct srnic_cm_id *
srnic_cm_create_id(struct srnic_cm *cm, srnic_cm_handler handler, void *context)
{
	struct srnic_cm_id *id;

	if (cm == NULL || handler == NULL) {
		rte_errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&cm->lock);
	id = id_alloc(cm, handler, context);
	pthread_mutex_unlock(&cm->lock);
	if (id == NULL)
		rte_errno = ENOMEM;
	return id;
}

void *
srnic_cm_id_context(const struct srnic_cm_id *id)
{
	return id != NULL ? id->context : NULL;
}

void
srnic_cm_id_set_context(struct srnic_cm_id *id, void *context)
{
	if (id != NULL)
		id->context = context;
}

enum srnic_cm_state
srnic_cm_id_state(const struct srnic_cm_id *id)
{
	return id != NULL ? __atomic_load_n(&id->state, __ATOMIC_RELAXED) : SRNIC_CM_IDLE;
}

uint32_t
srnic_cm_id_local_id(const struct srnic_cm_id *id)
{
	return id != NULL ? id->local_id : 0;
}

uint32_t
srnic_cm_id_remote_id(const struct srnic_cm_id *id)
{
	return id != NULL ? id->remote_id : 0;
}

uint64_t
srnic_cm_id_service_id(const struct srnic_cm_id *id)
{
	return id != NULL ? id->service_id : 0;
}

int
srnic_cm_id_set_local_id(struct srnic_cm_id *id, uint32_t local_id)
{
	struct srnic_cm *cm;
	struct srnic_cm_id *o;
	int rc = 0;

	if (id == NULL || local_id == 0)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	o = id_find(cm, local_id);
	/* IDLE, or a REQ's new id not answered yet: the peer knows no ID of it */
	if ((id->state != SRNIC_CM_IDLE && id->state != SRNIC_CM_REQ_RCVD) || id->sent_any ||
	    id->user_gone)
		rc = -EINVAL;
	else if (o != NULL && o != id)
		rc = -EEXIST;
	else {
		id_table_remove(cm, id);
		id->local_id = local_id;
		id_table_insert(cm, id);
	}
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

void
srnic_cm_set_tid_high(struct srnic_cm *cm, uint32_t hi)
{
	if (cm == NULL)
		return;
	pthread_mutex_lock(&cm->lock);
	cm->tid_hi = hi;
	pthread_mutex_unlock(&cm->lock);
}

uint64_t
srnic_cm_ca_guid(const struct srnic_cm *cm)
{
	return cm != NULL ? cm->guid : 0;
}

struct srnic_qp *
srnic_cm_gsi_qp(const struct srnic_cm *cm)
{
	return cm != NULL ? cm->qp1 : NULL;
}

int
srnic_cm_listen(struct srnic_cm_id *id, uint64_t service_id, uint64_t service_mask)
{
	struct srnic_cm *cm;
	struct srnic_cm_id *l;
	int rc = 0;

	if (id == NULL)
		return -EINVAL;
	cm = id->cm;
	if (service_mask == 0)
		service_mask = UINT64_MAX;
	pthread_mutex_lock(&cm->lock);
	if (id->state != SRNIC_CM_IDLE) {
		rc = -EINVAL;
		goto out;
	}
	TAILQ_FOREACH(l, &cm->listeners, listen_link)
		if (!l->user_gone &&
		    ((service_id & service_mask & l->service_mask) ==
		     (l->service_id & service_mask & l->service_mask))) {
			rc = -EBUSY;
			goto out;
		}
	id->service_id = service_id;
	id->service_mask = service_mask;
	id->state = SRNIC_CM_LISTEN;
	TAILQ_INSERT_TAIL(&cm->listeners, id, listen_link);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

static int
ah_to(struct srnic_cm *cm, struct srnic_cm_id *id, const struct srnic_cm_path *p)
{
	struct ibv_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = p->dgid;
	aa.grh.sgid_index = cm_sgid_index(cm, &p->sgid);
	aa.grh.hop_limit = p->hop_limit != 0 ? p->hop_limit : CM_DEFAULT_HOP_LIMIT;
	aa.grh.traffic_class = p->traffic_class;
	aa.sl = p->sl;
	aa.port_num = 1;
	if (id->ah != NULL)
		srnic_destroy_ah(id->ah);
	id->ah = srnic_create_ah(cm->pd, &aa);
	return id->ah != NULL ? 0 : -rte_errno;
}

int
srnic_cm_send_req(struct srnic_cm_id *id, const struct srnic_cm_req_param *p)
{
	struct srnic_cm *cm;
	uint8_t *m;
	uint8_t hop;
	int rc;

	if (id == NULL || p == NULL || p->private_data_len > SRNIC_CM_REQ_PDATA ||
	    (p->private_data_len > 0 && p->private_data == NULL) ||
	    (p->qp_type != IBV_QPT_RC && p->qp_type != IBV_QPT_UC) ||
	    p->qp_num > SRNIC_QPN_MASK || p->max_cm_retries > 15 ||
	    p->remote_cm_response_timeout > CM_MAX_TIMEOUT ||
	    p->local_cm_response_timeout > CM_MAX_TIMEOUT || p->retry_count > 7 ||
	    p->rnr_retry_count > 7 || p->path.mtu < IBV_MTU_256 || p->path.mtu > IBV_MTU_4096 ||
	    p->path.flow_label > SRNIC_FLOW_LABEL_MASK || p->path.sl > 15 ||
	    p->path.packet_life_time > CM_MAX_TIMEOUT)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->state != SRNIC_CM_IDLE || id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	rc = ah_to(cm, id, &p->path);
	if (rc != 0) {
		CM_STAT(cm, AH_ERR);
		goto out;
	}
	id->passive = false;
	id->path = p->path;
	cm_path_sgid(cm, &id->path.sgid, &p->path.sgid);
	hop = p->path.hop_limit != 0 ? p->path.hop_limit : CM_DEFAULT_HOP_LIMIT;
	id->service_id = p->service_id;
	id->qp_type = p->qp_type;
	id->local_qpn = p->qp_num;
	id->rq_psn = p->starting_psn & SRNIC_PSN_MASK;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	id->retry_count = p->retry_count;
	id->rnr_retry_count = p->rnr_retry_count;
	id->max_cm_retries = p->max_cm_retries;
	id->ack_timeout = cm_ack_timeout(CM_CA_ACK_DELAY, p->path.packet_life_time);
	id->remote_id = 0;
	id->remote_qpn = 0;
	id->remote_ca_guid = 0;
	id->mra_seen = false;
	id->last_valid = false;
	id->tid = cm_tid(cm, id->local_id);

	m = id->retx;
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_REQ, id->tid);
	srnic_cm_req_local_comm_id_set(m, id->local_id);
	srnic_cm_req_service_id_set(m, p->service_id);
	srnic_cm_req_local_ca_guid_set(m, cm->guid);
	srnic_cm_req_local_qkey_set(m, 0);
	srnic_cm_req_local_qpn_set(m, p->qp_num);
	srnic_cm_req_resp_resources_set(m, p->responder_resources);
	srnic_cm_req_init_depth_set(m, p->initiator_depth);
	srnic_cm_req_remote_cm_resp_timeout_set(m, p->remote_cm_response_timeout);
	srnic_cm_req_transport_set(m, p->qp_type == IBV_QPT_UC ? SRNIC_CM_TRANSPORT_UC
							       : SRNIC_CM_TRANSPORT_RC);
	srnic_cm_req_flow_ctrl_set(m, p->flow_control);
	srnic_cm_req_starting_psn_set(m, id->rq_psn);
	srnic_cm_req_local_cm_resp_timeout_set(m, p->local_cm_response_timeout);
	srnic_cm_req_retry_count_set(m, p->retry_count);
	srnic_cm_req_pkey_set(m, SRNIC_PKEY_DEFAULT);
	srnic_cm_req_path_mtu_set(m, p->path.mtu);
	srnic_cm_req_rnr_retry_set(m, p->rnr_retry_count);
	srnic_cm_req_max_cm_retries_set(m, p->max_cm_retries);
	srnic_cm_req_srq_set(m, p->srq);
	/* RoCE: permissive LIDs, the GIDs carry the addresses (Annex A17.8) */
	srnic_cm_req_primary_local_lid_set(m, SRNIC_CM_LID_PERMISSIVE);
	srnic_cm_req_primary_remote_lid_set(m, SRNIC_CM_LID_PERMISSIVE);
	memcpy(srnic_cm_req_primary_local_gid(m), id->path.sgid.raw, SRNIC_CM_GID_LEN);
	memcpy(srnic_cm_req_primary_remote_gid(m), p->path.dgid.raw, SRNIC_CM_GID_LEN);
	srnic_cm_req_primary_flow_label_set(m, p->path.flow_label);
	srnic_cm_req_primary_traffic_class_set(m, p->path.traffic_class);
	srnic_cm_req_primary_hop_limit_set(m, hop);
	srnic_cm_req_primary_sl_set(m, p->path.sl);
	srnic_cm_req_primary_subnet_local_set(m, hop <= 1);
	srnic_cm_req_primary_local_ack_timeout_set(m, id->ack_timeout);
	pdata_copy(srnic_cm_req_pdata(m), p->private_data, p->private_data_len);

	id->state = SRNIC_CM_REQ_SENT;
	/* Linux: 2 * packet life time + the peer's CM response time */
	rc = retx_start(cm, id,
			2 * cm_time_us(p->path.packet_life_time) +
				cm_time_us(p->remote_cm_response_timeout),
			p->max_cm_retries);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_rep(struct srnic_cm_id *id, const struct srnic_cm_rep_param *p)
{
	struct srnic_cm *cm;
	uint8_t *m;
	int rc = 0;

	if (id == NULL || p == NULL || p->private_data_len > SRNIC_CM_REP_PDATA ||
	    (p->private_data_len > 0 && p->private_data == NULL) || p->qp_num > SRNIC_QPN_MASK ||
	    p->rnr_retry_count > 7 || p->failover_accepted > 3)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if ((id->state != SRNIC_CM_REQ_RCVD && id->state != SRNIC_CM_MRA_REQ_SENT) ||
	    id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	id->local_qpn = p->qp_num;
	id->rq_psn = p->starting_psn & SRNIC_PSN_MASK;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	m = id->retx;
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_REP, id->tid);
	srnic_cm_rep_local_comm_id_set(m, id->local_id);
	srnic_cm_rep_remote_comm_id_set(m, id->remote_id);
	srnic_cm_rep_local_qkey_set(m, 0);
	srnic_cm_rep_local_qpn_set(m, p->qp_num);
	srnic_cm_rep_starting_psn_set(m, id->rq_psn);
	srnic_cm_rep_resp_resources_set(m, p->responder_resources);
	srnic_cm_rep_init_depth_set(m, p->initiator_depth);
	srnic_cm_rep_target_ack_delay_set(m, CM_CA_ACK_DELAY);
	srnic_cm_rep_failover_set(m, p->failover_accepted);
	srnic_cm_rep_flow_ctrl_set(m, p->flow_control);
	srnic_cm_rep_rnr_retry_set(m, p->rnr_retry_count);
	srnic_cm_rep_srq_set(m, p->srq);
	srnic_cm_rep_local_ca_guid_set(m, cm->guid);
	pdata_copy(srnic_cm_rep_pdata(m), p->private_data, p->private_data_len);
	id->state = SRNIC_CM_REP_SENT;
	id->mra_seen = false;
	rc = retx_start(cm, id, id->timeout_us, id->max_cm_retries);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_rtu(struct srnic_cm_id *id, const void *private_data, uint8_t len)
{
	struct srnic_cm *cm;
	uint8_t *m;
	int rc = 0;

	if (id == NULL || len > SRNIC_CM_RTU_PDATA || (len > 0 && private_data == NULL))
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if ((id->state != SRNIC_CM_REP_RCVD && id->state != SRNIC_CM_MRA_REP_SENT) ||
	    id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	m = id->last;
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_RTU, id->tid);
	srnic_cm_rtu_local_comm_id_set(m, id->local_id);
	srnic_cm_rtu_remote_comm_id_set(m, id->remote_id);
	pdata_copy(srnic_cm_rtu_pdata(m), private_data, len);
	/* a later DREQ waits as the REQ did (timeout_us: Linux's timeout_ms) */
	id->state = SRNIC_CM_ESTABLISHED;
	last_send(cm, id);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_rej(struct srnic_cm_id *id, enum srnic_cm_rej_reason reason, const void *ari,
		  uint8_t ari_len, const void *private_data, uint8_t len)
{
	struct srnic_cm *cm;
	int rc = 0;

	if (id == NULL || len > SRNIC_CM_REJ_PDATA || ari_len > SRNIC_CM_REJ_ARI ||
	    (len > 0 && private_data == NULL) || (ari_len > 0 && ari == NULL))
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	switch (id->state) {
	case SRNIC_CM_REQ_SENT:
	case SRNIC_CM_MRA_REQ_RCVD:
	case SRNIC_CM_REQ_RCVD:
	case SRNIC_CM_MRA_REQ_SENT:
	case SRNIC_CM_REP_RCVD:
	case SRNIC_CM_MRA_REP_SENT:
		timer_stop(cm, id);
		send_rej_locked(cm, id, reason, ari, ari_len, private_data, len);
		reset_to_idle(cm, id);
		break;
	case SRNIC_CM_REP_SENT:
	case SRNIC_CM_MRA_REP_RCVD:
		timer_stop(cm, id);
		send_rej_locked(cm, id, reason, ari, ari_len, private_data, len);
		enter_timewait(cm, id);
		break;
	default:
		rc = -EINVAL;
		break;
	}
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_mra(struct srnic_cm_id *id, uint8_t service_timeout, const void *private_data,
		  uint8_t len)
{
	struct srnic_cm *cm;
	uint8_t *m;
	uint32_t what;
	bool delay = (service_timeout & SRNIC_CM_MRA_FLAG_DELAY) != 0;
	int rc = 0;

	service_timeout &= (uint8_t)~SRNIC_CM_MRA_FLAG_DELAY;
	if (id == NULL || len > SRNIC_CM_MRA_PDATA || (len > 0 && private_data == NULL) ||
	    service_timeout > CM_MAX_TIMEOUT)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	switch (id->state) {
	case SRNIC_CM_REQ_RCVD:
		id->state = SRNIC_CM_MRA_REQ_SENT;
		what = SRNIC_CM_MSG_REQ;
		break;
	case SRNIC_CM_REP_RCVD:
		id->state = SRNIC_CM_MRA_REP_SENT;
		what = SRNIC_CM_MSG_REP;
		break;
	default:
		rc = -EINVAL;
		goto out;
	}
	m = id->last;
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_MRA, id->tid);
	srnic_cm_mra_local_comm_id_set(m, id->local_id);
	srnic_cm_mra_remote_comm_id_set(m, id->remote_id);
	srnic_cm_mra_msg_mraed_set(m, what);
	srnic_cm_mra_service_timeout_set(m, service_timeout);
	pdata_copy(srnic_cm_mra_pdata(m), private_data, len);
	id->mra_timeout = service_timeout;
	if (delay) {
		/* kept for a repeated REQ/REP (rx_req, rx_rep); the peer knows no more yet */
		id->last_valid = true;
		CM_STAT(cm, MRA_DELAYED);
	} else {
		last_send(cm, id);
		if (what == SRNIC_CM_MSG_REQ) {
			id->expire_us = mra_expire_us(id);
			expire_start(cm, id);
		}
	}
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_dreq(struct srnic_cm_id *id, const void *private_data, uint8_t len)
{
	struct srnic_cm *cm;
	int rc = 0;

	if (id == NULL || len > SRNIC_CM_DREQ_PDATA || (len > 0 && private_data == NULL))
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->state != SRNIC_CM_ESTABLISHED || id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	/* a USER_ESTABLISHED not delivered yet is moot now: the timer resends the DREQ */
	format_dreq(cm, id, private_data, len);
	id->state = SRNIC_CM_DREQ_SENT;
	if (id->timeout_us == 0)
		id->timeout_us = cm_time_us(id->ack_timeout);
	rc = retx_start(cm, id, id->timeout_us, id->max_cm_retries);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_drep(struct srnic_cm_id *id, const void *private_data, uint8_t len)
{
	struct srnic_cm *cm;
	int rc = 0;

	if (id == NULL || len > SRNIC_CM_DREP_PDATA || (len > 0 && private_data == NULL))
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->state != SRNIC_CM_DREQ_RCVD || id->user_gone)
		rc = -EINVAL;
	else
		send_drep_locked(cm, id, private_data, len);
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_sidr_req(struct srnic_cm_id *id, const struct srnic_cm_sidr_req_param *p)
{
	struct srnic_cm *cm;
	uint8_t *m;
	int rc;

	if (id == NULL || p == NULL || p->private_data_len > SRNIC_CM_SIDR_REQ_PDATA ||
	    (p->private_data_len > 0 && p->private_data == NULL) || p->timeout_ms == 0)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->state != SRNIC_CM_IDLE || id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	rc = ah_to(cm, id, &p->path);
	if (rc != 0) {
		CM_STAT(cm, AH_ERR);
		goto out;
	}
	id->passive = false;
	id->path = p->path;
	cm_path_sgid(cm, &id->path.sgid, &p->path.sgid);
	id->service_id = p->service_id;
	id->max_cm_retries = p->max_cm_retries;
	id->tid = cm_tid(cm, id->local_id);
	m = id->retx;
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_SIDR_REQ, id->tid);
	srnic_cm_sidr_req_request_id_set(m, id->local_id);
	srnic_cm_sidr_req_pkey_set(m, SRNIC_PKEY_DEFAULT);
	srnic_cm_sidr_req_service_id_set(m, p->service_id);
	pdata_copy(srnic_cm_sidr_req_pdata(m), p->private_data, p->private_data_len);
	id->state = SRNIC_CM_SIDR_REQ_SENT;
	rc = retx_start(cm, id, (uint64_t)p->timeout_ms * 1000, p->max_cm_retries);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_send_sidr_rep(struct srnic_cm_id *id, const struct srnic_cm_sidr_rep_param *p)
{
	struct srnic_cm *cm;
	uint8_t *m;
	int rc = 0;

	if (id == NULL || p == NULL || p->private_data_len > SRNIC_CM_SIDR_REP_PDATA ||
	    p->info_length > SRNIC_CM_SIDR_REP_INFO ||
	    (p->private_data_len > 0 && p->private_data == NULL) ||
	    (p->info_length > 0 && p->info == NULL) || p->qp_num > SRNIC_QPN_MASK)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if (id->state != SRNIC_CM_SIDR_REQ_RCVD || id->user_gone) {
		rc = -EINVAL;
		goto out;
	}
	m = id->last;
	srnic_cm_mad_init(m, SRNIC_CM_ATTR_SIDR_REP, id->tid);
	srnic_cm_sidr_rep_request_id_set(m, id->remote_id);
	srnic_cm_sidr_rep_status_set(m, p->status);
	srnic_cm_sidr_rep_qpn_set(m, p->qp_num);
	srnic_cm_sidr_rep_service_id_set(m, id->service_id);
	srnic_cm_sidr_rep_qkey_set(m, p->qkey);
	if (p->info_length > 0) {
		srnic_cm_sidr_rep_info_len_set(m, p->info_length);
		memcpy(srnic_cm_sidr_rep_info(m), p->info, p->info_length);
	}
	pdata_copy(srnic_cm_sidr_rep_pdata(m), p->private_data, p->private_data_len);
	last_send(cm, id);
	reset_to_idle(cm, id); /* its expiry with it */
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_established(struct srnic_cm_id *id)
{
	struct srnic_cm *cm;
	int rc = 0;

	if (id == NULL)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	if ((id->state != SRNIC_CM_REP_SENT && id->state != SRNIC_CM_MRA_REP_RCVD) ||
	    id->user_gone) {
		/* Linux's cm_establish(): EISCONN when it is already */
		rc = id->state == SRNIC_CM_ESTABLISHED && !id->user_gone ? -EISCONN : -EINVAL;
		goto out;
	}
	id->state = SRNIC_CM_ESTABLISHED;
	/* the event comes from the poll thread, as ib_cm queues it */
	timer_start(cm, id, CM_TMR_EVENT, 0);
out:
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

int
srnic_cm_init_qp_attr(struct srnic_cm_id *id, struct ibv_qp_attr *a, int *mask)
{
	struct srnic_cm *cm;
	enum srnic_cm_state s;
	bool rc_qp;
	int rc = 0;

	if (id == NULL || a == NULL || mask == NULL)
		return -EINVAL;
	cm = id->cm;
	pthread_mutex_lock(&cm->lock);
	s = id->state;
	rc_qp = id->qp_type == IBV_QPT_RC;
	switch (a->qp_state) {
	case IBV_QPS_INIT:
		if (s == SRNIC_CM_IDLE || s == SRNIC_CM_LISTEN || s == SRNIC_CM_TIMEWAIT ||
		    s == SRNIC_CM_SIDR_REQ_SENT || s == SRNIC_CM_SIDR_REQ_RCVD ||
		    s == SRNIC_CM_DREQ_SENT || s == SRNIC_CM_DREQ_RCVD) {
			rc = -EINVAL;
			break;
		}
		*mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (id->responder_resources > 0 && rc_qp)
			a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		a->pkey_index = 0;
		a->port_num = 1;
		break;
	case IBV_QPS_RTR:
		if (s != SRNIC_CM_REQ_RCVD && s != SRNIC_CM_MRA_REQ_SENT && s != SRNIC_CM_REP_RCVD &&
		    s != SRNIC_CM_MRA_REP_SENT && s != SRNIC_CM_REP_SENT &&
		    s != SRNIC_CM_MRA_REP_RCVD && s != SRNIC_CM_ESTABLISHED) {
			rc = -EINVAL;
			break;
		}
		*mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		memset(&a->ah_attr, 0, sizeof(a->ah_attr));
		a->ah_attr.is_global = 1;
		a->ah_attr.grh.dgid = id->path.dgid;
		a->ah_attr.grh.sgid_index = cm_sgid_index(id->cm, &id->path.sgid);
		a->ah_attr.grh.flow_label = id->path.flow_label;
		a->ah_attr.grh.hop_limit = id->path.hop_limit != 0 ? id->path.hop_limit
								   : CM_DEFAULT_HOP_LIMIT;
		a->ah_attr.grh.traffic_class = id->path.traffic_class;
		a->ah_attr.sl = id->path.sl;
		a->ah_attr.port_num = 1;
		a->path_mtu = id->path.mtu;
		a->dest_qp_num = id->remote_qpn;
		a->rq_psn = id->rq_psn;
		if (rc_qp) {
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
			a->max_dest_rd_atomic = id->responder_resources;
			a->min_rnr_timer = 0;
		}
		break;
	case IBV_QPS_RTS:
		/* the passive side may go to RTS before its REP (as Linux's
		 * cm_init_qp_rts_attr allows; rdmacm-utils' cmtime does so):
		 * what it sends with is the REQ's Starting PSN */
		if (s != SRNIC_CM_REQ_RCVD && s != SRNIC_CM_MRA_REQ_SENT &&
		    s != SRNIC_CM_REP_RCVD && s != SRNIC_CM_MRA_REP_SENT && s != SRNIC_CM_REP_SENT &&
		    s != SRNIC_CM_MRA_REP_RCVD && s != SRNIC_CM_ESTABLISHED) {
			rc = -EINVAL;
			break;
		}
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		a->sq_psn = id->sq_psn;
		if (rc_qp) {
			*mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_MAX_QP_RD_ATOMIC;
			a->timeout = id->ack_timeout;
			a->retry_cnt = id->retry_count;
			a->rnr_retry = id->rnr_retry_count;
			a->max_rd_atomic = id->initiator_depth;
		}
		break;
	default:
		rc = -EINVAL;
		break;
	}
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

/* ---- counters ---- */

unsigned int
srnic_cm_stats_count(void)
{
	return SRNIC_CM_STAT_COUNT;
}

const char *
srnic_cm_stat_name(unsigned int i)
{
	return i < SRNIC_CM_STAT_COUNT ? cm_stat_names[i] : NULL;
}

unsigned int
srnic_cm_stats_get(const struct srnic_cm *cm, uint64_t *vals, unsigned int n)
{
	unsigned int i;

	if (cm == NULL || vals == NULL)
		return 0;
	if (n > SRNIC_CM_STAT_COUNT)
		n = SRNIC_CM_STAT_COUNT;
	for (i = 0; i < n; i++)
		vals[i] = __atomic_load_n(&cm->stats[i], __ATOMIC_RELAXED);
	return n;
}

int64_t
srnic_cm_stat(const struct srnic_cm *cm, const char *name)
{
	unsigned int i;

	if (cm == NULL || name == NULL)
		return -1;
	for (i = 0; i < SRNIC_CM_STAT_COUNT; i++)
		if (strcmp(cm_stat_names[i], name) == 0)
			return (int64_t)__atomic_load_n(&cm->stats[i], __ATOMIC_RELAXED);
	return -1;
}
