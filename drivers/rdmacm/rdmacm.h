/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_RDMACM_H
#define SRNIC_RDMACM_H

/*
 * srnic's librdmacm.so.1: internal objects. Each embeds rdma-core's public
 * struct (applications read rdma_cm_id's verbs, qp, pd, route, channel and
 * rdma_cm_event's param directly) and converts with container_of.
 * doc/rdmacm.md has the design: objects, threads, the event flow, limits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <rdma/rdma_cma.h>
#include <rte_common.h>

#include "srnic_cm.h"
#include "srnic_hdr.h"
#include "srnic_verbs_private.h"

/* rdma_cm's private-data header in front of a REQ's / SIDR_REQ's
 * private data (Linux cma.c's cma_hdr): version, IP version << 4, the
 * active side's port, its address, the passive side's address (16 bytes
 * each at CMA_HDR_SRC / CMA_HDR_DST; IPv4 in the last 4, the rest 0). */
#define CMA_HDR_LEN 36
#define CMA_VERSION 0x00
#define CMA_HDR_IPV4 0x40
#define CMA_HDR_IPV6 0x60
#define CMA_HDR_PORT 2
#define CMA_HDR_SRC 4
#define CMA_HDR_DST 20
/* service ID of a port space's port: 0x0000000001000000 | ps << 16 | port */
#define CMA_SERVICE_ID(ps, port) (0x0000000001000000ull | ((uint64_t)(ps) << 16) | (port))
/* the CM's parameters for rdma_cm's connections, as Linux's cma.c sets them */
#define CMA_CM_RESPONSE_TIMEOUT 20  /* 4.096 us * 2^20: 4.3 s per REQ/REP try */
#define CMA_MAX_CM_RETRIES 15
#define CMA_CM_MRA_TIMEOUT 24       /* MRA service timeout, 4.096 us * 2^24: 69 s (Linux's CMA_CM_MRA_SETTING) */
#define CMA_PACKET_LIFETIME 18      /* the path's; local ACK timeout = 19 (the golden REQ's) */
#define CMA_HOP_LIMIT 64
#define CMA_SIDR_TIMEOUT_MS 4096    /* per SIDR_REQ try (1 << (CMA_CM_RESPONSE_TIMEOUT - 8)) */
#define CMA_MAX_RETRY 7             /* 3-bit retry and RNR retry counts */
/* ephemeral ports (rdma_bind_addr with port 0, an active id unbound):
 * the host's range, else the kernel's default one */
#define CMA_PORT_RANGE_FILE "/proc/sys/net/ipv4/ip_local_port_range"
#define CMA_PORT_MIN 32768
#define CMA_PORT_MAX 60999
/* a port-0 bind attached: the most ports of its walk the daemon may
 * refuse (another process listens on each), each a synchronous round trip
 * with cma_lock held (the default range alone is 28,232 ports); one more:
 * EADDRNOTAVAIL, the range named. As many as one other process can listen
 * on (SVC_SESSION_CM_IDS_MAX): a walk past all of them still goes on */
#define CMA_BIND_ANY_ASKS 1024
#define CMA_HELD_MAX 64             /* requests held per bound port not yet listened on (attached) */
#define CMA_DEFAULT_BACKLOG 1024    /* and the most (Linux's net.rdma_ucm.max_backlog) */
#define CMA_SYNC_TIMEOUT_MS 2000    /* rdma_create_ep's address and route resolution */
/* at exit, after the ids' DREQ / DREP / REJ went to the CM: the engine
 * and the CM run this long more, so the MADs leave before the process
 * does (Linux's kernel outlives the process and sends them anyway) */
#define CMA_EXIT_DRAIN_MS 20
/* exit() while an rdma_cm call holds the library's lock (exit() from a
 * signal handler that interrupted that call, as qperf's SIGALRM does, or
 * another thread's call): the exit's cleanup waits this long for it, then
 * leaves the ids to the peers (attached: the daemon's session end sends
 * their DREQs) rather than wait for ever */
#define CMA_EXIT_LOCK_MS 200
#define CMA_LOG_LINE_MAX 1024       /* a message of the library on stderr, written at once */
#define CMA_PDATA_MAX 256           /* an event's private data copy (RTU's 224 the largest) */

enum cma_state {
	CMA_IDLE,
	CMA_ADDR_QUERY,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_QUERY,
	CMA_ROUTE_RESOLVED,
	CMA_CONNECT,
	CMA_DISCONNECT,
	CMA_ADDR_BOUND,
	CMA_LISTEN,
	CMA_DESTROYING,
};

struct cma_event;
struct cma_mc;

/* rdma_event_channel: an eventfd (EFD_SEMAPHORE), one count per queued event (cma.c's event_queue) */
struct cma_channel {
	struct rdma_event_channel ch;
	TAILQ_HEAD(, cma_event) q;      /* under cma.lock */
	unsigned int nb_ids;
	bool sync;                      /* an id's own (rdma_create_id with NULL) */
};

struct cma_id {
	struct rdma_cm_id id;
	enum cma_state state;
	struct cma_channel *chan;
	bool sync;                      /* its own channel: calls wait for their event */
	struct srnic_cm_id *cm_id;
	/* attached, bound and not listening yet: cm_id is its port's CM
	 * listen, taken at rdma_bind_addr() (requests wait in cma.held) */
	bool early;
	unsigned int nb_held;           /* of cma.held, those it holds (at most CMA_HELD_MAX) */
	TAILQ_ENTRY(cma_id) link;       /* cma.ids */
	uint32_t events_reported, events_acked;
	uint16_t port;                  /* bound port, host order; 0: none */
	bool wildcard;                  /* bound to any (0.0.0.0, ::) or loopback: no device */
	uint16_t bind_family;           /* AF_INET or AF_INET6: the family the bind was given */
	/* the source in use, as a GID (IPv4: ::ffff:a.b.c.d), and its port
	 * (network order); route.addr shows the bound address as given until
	 * rdma_resolve_addr or a request sets the source, as Linux
	 * (rdma_get_local_addr() of an id bound to :: is ::) */
	union ibv_gid src_gid;
	uint16_t src_port;
	uint32_t scope_id;              /* a link-local address's sin6_scope_id, as given */
	int backlog;                    /* a listener's: CONNECT_REQUESTs queued at most */
	int nb_pending;                 /* ... queued now, not yet taken by rdma_get_cm_event */
	struct cma_event *req_ev;       /* a new id: its CONNECT_REQUEST while queued */
	uint8_t tos;
	bool tos_set;
	uint8_t ack_timeout;            /* RDMA_OPTION_ID_ACK_TIMEOUT; 0: the CM's */
	bool reuseaddr, afonly;
	bool afonly_set;                /* RDMA_OPTION_ID_AFONLY given: the bind keeps it */
	struct ibv_sa_path_rec path;
	uint64_t resolve_deadline_ms;   /* CMA_ADDR_QUERY: ADDR_ERROR -ETIMEDOUT then */
	uint32_t seq;                   /* our starting PSN */
	uint8_t resp_res, init_depth;   /* the REQ's, from our side (passive: CONNECT_REQUEST's; active: rdma_connect's) */
	bool disconnect_reported;
	bool connect_error;             /* a CONNECT_ERROR handed out: its REJECTED is not */
	unsigned int busy;              /* rdma_get_cm_event() works with cm_id (process_conn_resp) */
	/* how far rdma_destroy_id() got, for cma.c's test hook hold_rtu()
	 * (set in its test build only; here in every build: the objects
	 * test/rdmacm/hooks shares were built without SRNIC_TEST_HOOKS) */
	bool destroy_held, cm_id_gone;
	/* rdma_destroy_id() took the id as a listener (else it never listened,
	 * or its listen was gone: a REQ meanwhile is one nobody listens to);
	 * req_seen: such a REQ came meanwhile (for the hook hold_destroy()) */
	bool destroyed_listening, destroy_req_seen;
	bool own_cqs;                   /* rdma_create_qp made the CQs and channels */
	struct ibv_pd *ep_pd;           /* rdma_create_ep (passive): for rdma_get_request */
	struct ibv_qp_init_attr *ep_qp_attr;
	uint32_t remote_qpn, remote_qkey;
	LIST_HEAD(, cma_mc) mc;         /* multicast joins (cma_mcast.c), under cma_lock */
	/* set by cma_mcast.c at the id's first join (under cma_lock): how
	 * rdma_destroy_qp/rdma_destroy_id leave them, so that cma.c, below the
	 * joins, calls no code of theirs (one direction between the files) */
	void (*mc_leave_all)(struct cma_id *id, struct ibv_qp *qp);
};

enum cma_event_kind {
	CMA_EV_PLAIN,
	CMA_EV_CONN_RESP,               /* REP: QP to RTR/RTS and the RTU in rdma_get_cm_event */
	CMA_EV_CONN_REQ,                /* a new id: set up in rdma_get_cm_event */
	CMA_EV_REJECTED,                /* the QP to ERR in rdma_get_cm_event */
};

struct cma_event {
	struct rdma_cm_event ev;
	struct cma_id *owner;           /* whose events_reported / _acked count it */
	enum cma_event_kind kind;
	TAILQ_ENTRY(cma_event) link;
	uint8_t pdata[CMA_PDATA_MAX];
};

static inline struct cma_id *cma_id(struct rdma_cm_id *id) { return container_of(id, struct cma_id, id); }
static inline struct cma_channel *cma_chan(struct rdma_event_channel *c)
{
	return container_of(c, struct cma_channel, ch);
}

/* A call's failure as librdmacm reports it: errno e, -1. */
static inline int
err(int e)
{
	errno = e;
	return -1;
}

/*
 * The CM cma.c drives, as a table: embedded (cma.c's own, lib/cm on the
 * process's device: srnic_cm_*() themselves) or attached to srnicd
 * (cma_attach.c: each call a control message on the session of the
 * context cma_init() opened, the events from the daemon's event socket).
 * cma.c handles struct srnic_cm_id pointers only through this table;
 * attached, they are cma_attach.c's own ids. Each call returns what the
 * srnic_cm_*() call of its name returns; resolve_neigh is
 * srnic_dev_resolve_neigh()'s answer for the device (0, -EAGAIN while
 * ARP/ND asks, or a negative errno).
 */
struct cma_cm_ops {
	struct srnic_cm_id *(*create_id)(srnic_cm_handler handler, void *context);
	int (*destroy_id)(struct srnic_cm_id *id);
	void *(*id_context)(const struct srnic_cm_id *id);
	void (*id_set_context)(struct srnic_cm_id *id, void *context);
	enum srnic_cm_state (*id_state)(const struct srnic_cm_id *id);
	/* a new id that listens on service_id (rdma_listen()), or NULL with
	 * errno (EBUSY: the service ID is taken); attached, one round trip */
	struct srnic_cm_id *(*create_listen)(srnic_cm_handler handler, void *context,
					     uint64_t service_id, uint64_t service_mask);
	int (*send_req)(struct srnic_cm_id *id, const struct srnic_cm_req_param *p);
	int (*send_rep)(struct srnic_cm_id *id, const struct srnic_cm_rep_param *p);
	int (*send_rtu)(struct srnic_cm_id *id, const void *private_data, uint8_t len);
	int (*send_rej)(struct srnic_cm_id *id, enum srnic_cm_rej_reason reason, const void *ari,
			uint8_t ari_length, const void *private_data, uint8_t len);
	int (*send_mra)(struct srnic_cm_id *id, uint8_t service_timeout, const void *private_data,
			uint8_t len);
	int (*send_dreq)(struct srnic_cm_id *id, const void *private_data, uint8_t len);
	int (*send_drep)(struct srnic_cm_id *id, const void *private_data, uint8_t len);
	int (*send_sidr_req)(struct srnic_cm_id *id, const struct srnic_cm_sidr_req_param *p);
	int (*send_sidr_rep)(struct srnic_cm_id *id, const struct srnic_cm_sidr_rep_param *p);
	int (*established)(struct srnic_cm_id *id);
	int (*init_qp_attr)(struct srnic_cm_id *id, struct ibv_qp_attr *qp_attr, int *mask);
	int (*resolve_neigh)(const union ibv_gid *gid);
};

/* cma_attach.c: the attached CM. cma_attach_open() starts it on verbs, an
 * open context of the daemon's device: CM_OPEN, and the thread that
 * takes the daemon's events to their handler. It blocks in poll() on the
 * event socket and a wake eventfd; while tick() (the address resolutions)
 * says some still wait for ARP/ND, it runs tick() every
 * CMA_ATTACH_TICK_MS. cma_attach_wake(): a resolution begins, tick() has
 * work again. 0 or a negative errno. */
#define CMA_ATTACH_TICK_MS 5
extern const struct cma_cm_ops cma_attach_ops;
int cma_attach_open(struct ibv_context *verbs, unsigned int (*tick)(void));
void cma_attach_wake(void);
#ifdef SRNIC_TEST_HOOKS
/* cma.c's rdma_destroy_id() freed an id (for the hook hold_handler) */
void cma_attach_hook_freed(void);
#endif

/* cma.c */
extern pthread_mutex_t cma_lock;
int cma_init(void);
void cma_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct ibv_context *cma_verbs(void);
/* rdma_create_ep's (addrinfo.c): an id of the port space and QP type an
 * rdma_addrinfo names; a passive endpoint keeps its PD and QP attributes
 * for rdma_get_request's new ids */
int cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qpt);
int cma_ep_passive(struct rdma_cm_id *rid, struct ibv_pd *pd, const struct ibv_qp_init_attr *a);
/* for cma_mcast.c: an event about id on its channel (cma_lock held; NULL
 * posted says it was lost), and a sync id's wait for it */
struct cma_event *cma_event_new(struct cma_id *id, enum rdma_cm_event_type type, int status);
void cma_event_post(struct cma_id *id, struct cma_event *e);
int cma_complete(struct cma_id *id);

/* Leave every group id joined (qp NULL: rdma_destroy_id), or detach qp
 * from them (rdma_destroy_qp: the joins stay), through id->mc_leave_all if
 * it ever joined (set once by the first join, a release store). Not under
 * cma_lock. */
static inline void
cma_mc_leave(struct cma_id *id, struct ibv_qp *qp)
{
	void (*leave)(struct cma_id *, struct ibv_qp *) =
		__atomic_load_n(&id->mc_leave_all, __ATOMIC_ACQUIRE);

	if (leave != NULL)
		leave(id, qp);
}

#endif /* SRNIC_RDMACM_H */
