/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_VERBS_H
#define SRNIC_VERBS_H

/*
 * srnic's libibverbs.so.1: internal objects. Each embeds rdma-core's public
 * struct exactly as a provider's does (rdma-core's inline ibv_post_send(),
 * ibv_poll_cq(), ibv_req_notify_cq() and the ibv_query_port() macro are
 * compiled into the applications and reach through them), and converts
 * with DPDK's container_of (sv_ctx(), sv_cq(), ...). doc/verbs.md has the design:
 * objects, the progress model and the thread contract.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <infiniband/verbs.h>
#include <rte_common.h>
#include <rte_spinlock.h>

#include "srnic.h"
#include "srnic_hdr.h"

#define SV_DEV_NAME "srnic0"
#define SV_MAX_ARMED_CQ 1024        /* CQs armed (ibv_req_notify_cq) at once */
#define SV_ASYNC_RING 64            /* async events queued per context */
/* completion events queued per channel (one per arm: more means the
 * program arms without ever reading; past it they are dropped, logged) */
#define SV_CHANNEL_EVENTS 8192
#define SV_POLL_CQ_BURST 1          /* engine polls per ibv_poll_cq() that found nothing */
/* The progress thread takes the engine over when no application call has
 * polled it for this long, spins while there is traffic and for
 * SV_SPIN_US after the last packet, then sleeps in steps growing from
 * SV_SLEEP_MIN_US to SV_SLEEP_MAX_US (the ACK and RNR timers' resolution
 * while idle: far below their millisecond-range timeouts). */
#define SV_HANDOVER_US 50
#define SV_SPIN_US 2000
/* ... of which the first SV_SPIN_HOT_US without giving the CPU away: a
 * sched_yield() costs microseconds here (a syscall in a VM), and it hands
 * the CPU to another job for a time slice, while the peer's next packets
 * are on their way */
#define SV_SPIN_HOT_US 50
/* ibv_post_send() and ibv_post_recv() leave the engine to the program's
 * next ibv_poll_cq() when it polled this recently (a post-then-poll loop:
 * the WQEs posted in between go out together, not one engine poll and one
 * packet burst per WR), and a post runs it once the first post so left
 * is this old: a held post waits at most this long, however closely the
 * posts behind it follow (ib_write_bw -s 64 posts 100 WRs between polls
 * in well under it). The handover's length: the progress thread, which
 * leaves the engine to the program for SV_HANDOVER_US after its last poll,
 * takes over when the held posts are due.
 * (With 10 us, as it was, a run of posts broke at any longer pause: on the
 * ASan build at load 20, 8,850 and 16,011 of ib_write_bw's 20,000 posts
 * still ran the engine.) ... */
#define SV_POST_DEFER_US SV_HANDOVER_US
/* ... up to this many posts: the one that makes them SV_POST_BATCH runs
 * the engine, which sends them as one burst (the requester builds up to
 * SRNIC_REQ_BUDGET, 32, packets per QP and engine poll) while the program
 * goes on posting */
#define SV_POST_BATCH 32
#define SV_EVENT_SPIN_US 500       /* ibv_get_cq_event() polls before it blocks */
#define SV_SLEEP_MIN_US 20
#define SV_SLEEP_MAX_US 1000
#define SV_DEREG_TIMEOUT_US 1000000 /* ibv_dereg_mr(): wait for in-flight zero-copy mbufs */
#define SV_DEFAULT_MEM_MB 512       /* --no-huge -m */
#define SV_DEFAULT_MTU 1500
/* The progress thread polls the device's CM (srnic_cm_poll: QP1's MADs,
 * its resend timers) at least this often, also while the program drives
 * the engine itself (doc/rdmacm.md) */
#define SV_CM_POLL_US 200
/* At exit the engine's last frames get this long from when they left to
 * reach the peer (SRNIC_EXIT_LINGER_MS sets it): memif's peer drops what
 * its engine had not read from the ring when it handles the disconnect,
 * and an ACK lost there (the last of ibv_rc_pingpong's) has the peer resend
 * until its retry_cnt is spent and fail. A peer's idle engine polls every SV_SLEEP_MAX_US at least. */
#define SV_EXIT_LINGER_MS 200
#define SV_EXIT_LINGER_MAX_MS 60000
/* SRNIC_STALL_MS's largest stall (a peer slow to read, made deterministic) */
#define SV_STALL_MAX_MS 60000
/* The program's threads that drive the engine (a poll, a post that runs it)
 * get an lcore id of their own (rte_thread_register(), given back at their
 * exit): the engine's mbufs then go through that id's mempool cache, not
 * the pool's ring with a locked compare-and-swap each. At most this many
 * such threads hold one at a time: each id's cache keeps up to
 * SRNIC_MBUF_CACHE_HELD (1.5 x SRNIC_MBUF_CACHE, 384) mbufs of every pool,
 * which a thread that stopped driving keeps from the others until it
 * exits; the device's RX and TX-copy pools are sized for SV_CACHING_LCORES
 * such caches (srnic_dev_conf.nb_caching_lcores). The opener (EAL's main
 * lcore) and the progress thread have theirs besides. A thread past it, or
 * past the EAL's RTE_MAX_LCORE, drives without one
 * (verbs_thread_lcore_none) until one of them exits. */
#define SV_THREAD_LCORE_MAX 4
/* the lcore ids with caches: the opener's, the progress thread's, the cap's */
#define SV_CACHING_LCORES (2 + SV_THREAD_LCORE_MAX)

/* The configuration (environment, SRNIC_CONFIG file; doc/verbs.md). */
struct sv_conf {
	char port[512];             /* SRNIC_PORT: DPDK devargs (vdev or PCI) */
	char ip[64];                /* SRNIC_IP */
	char ip6[64];               /* SRNIC_IP6: ADDR[/PREFIX] */
	char lcores[64];            /* SRNIC_LCORES: EAL -l */
	char eal_args[512];         /* SRNIC_EAL_ARGS: more EAL arguments */
	unsigned int mem_mb;        /* SRNIC_MEM_MB */
	unsigned int mtu;           /* SRNIC_MTU */
	bool huge;                  /* SRNIC_HUGE=1: hugepages (--in-memory) */
	bool no_progress_thread;    /* SRNIC_PROGRESS=app: only application calls drive the engine */
	bool stats;                 /* SRNIC_STATS=1: the engine's counters on stderr at exit */
	double drop;                /* SRNIC_DROP: drop this share of received packets (srnic_lossy.h) */
	uint64_t drop_first;        /* SRNIC_DROP_FIRST: only among the first this many (0: all) */
	uint64_t stall_after;       /* SRNIC_STALL_AFTER: a slow peer, see sv_device */
	unsigned int stall_ms;      /* SRNIC_STALL_MS */
	unsigned int linger_ms;     /* SRNIC_EXIT_LINGER_MS */
	char log_level[64];         /* SRNIC_LOG_LEVEL: EAL --log-level */
};

/* Who ran an engine poll (sv_progress()'s caller): the drop-in's counters
 * (SRNIC_STATS=1), what a post pays against what a poll does */
enum sv_runner {
	SV_RUN_POLL,    /* ibv_poll_cq(), ibv_start_poll(): the program polls */
	SV_RUN_POST,    /* a post: ibv_post_send(), ibv_post_recv(), ibv_wr_complete(), ... */
	SV_RUN_DRIVE,   /* the progress thread; a blocking wait under SRNIC_PROGRESS=app */
	SV_RUN_WAIT,    /* other waits: ibv_get_cq_event()'s spin, ibv_dereg_mr(), the CM's, the exit's */
	SV_RUN_NB
};

struct sv_context;
struct srnic_cm;
struct srnic_lossy;

/* The one device: the srnic engine of this process. */
struct sv_device {
	struct ibv_device ibdev;    /* what ibv_get_device_list() hands out */
	struct srnic_dev *sdev;
	struct srnic_engine *eng;
	uint16_t port_id;
	union ibv_gid gid[SRNIC_GID_TBL_LEN];
	/* read by every post, written at start only: off the lines below */
	uint64_t tsc_hz;
	uint64_t post_defer_tsc;        /* SV_POST_DEFER_US in TSC ticks */

	/* The engine's one-poller rule: whoever wins busy runs it. */
	alignas(64) atomic_bool busy;
	/* the program's last ibv_poll_cq(), or the post that filled a batch
	 * (sv_post_progress()): the progress thread keeps off the engine for
	 * SV_HANDOVER_US after it. A post left to the next poll does not
	 * move it: the handover comes no later than SV_HANDOVER_US after the
	 * poll that let the batch start. */
	_Atomic uint64_t app_poll_tsc;
	/* engine polls by who ran them, and those of them that moved
	 * packets; posts that left the engine to a later poll (all under
	 * busy: SRNIC_STATS=1 prints them) */
	uint64_t runs[SV_RUN_NB], runs_moved[SV_RUN_NB];
	uint64_t posts_deferred;

	/* What a held post writes (sv_post_progress()), on a line of its
	 * own: on busy's, which a polling thread exchanges twice per poll,
	 * each post's locked add took that line from the poller and each
	 * poll took it back (a posting and a polling thread). The engine
	 * poll reads it, and writes it only when posts are held. */
	/* posts left to the next engine poll since the last one (a post adds
	 * one, the engine poll takes them all: atomic_exchange) */
	alignas(64) _Atomic uint32_t posts_pending;
	/* when the first of them was posted (posts_pending 0 -> 1): a post
	 * runs the engine once it is SV_POST_DEFER_US old */
	_Atomic uint64_t batch_tsc;

	/* armed CQs, checked after each engine poll */
	alignas(64) rte_spinlock_t arm_lock;
	_Atomic uint32_t nb_armed;
	struct sv_cq *armed[SV_MAX_ARMED_CQ];

	/* open contexts, for async events (under ctx_lock). An async
	 * event names its verbs object by srnic's user pointer
	 * (srnic_qp_set_user()): sv_async_pump() takes the event and hands
	 * it to its context under ctx_lock, and a destroy takes ctx_lock
	 * (sv_async_forget()) before it frees the object */
	pthread_mutex_t ctx_lock;
	TAILQ_HEAD(, sv_context) ctxs;

	struct srnic_lossy *lossy;  /* SRNIC_DROP > 0: the port's RX drops packets */
	_Atomic uint64_t last_moved_tsc; /* the engine's last poll that moved a packet */
	uint64_t linger_tsc;            /* SRNIC_EXIT_LINGER_MS in TSC ticks */
	/* SRNIC_STALL_AFTER=N, SRNIC_STALL_MS=M (a knob, doc/verbs.md): once
	 * the engine has sent N request messages, no engine poll for M ms (a
	 * peer slow to read, deterministically); under busy */
	uint64_t stall_after;
	uint64_t stall_until;
	unsigned int stall_ms;

	/* the CM (srnic_cm_poll: one thread at a time, whoever wins cm_busy)
	 * and srnic's librdmacm's hook run after each CM poll */
	struct srnic_cm *cm;
	alignas(64) atomic_bool cm_busy;
	uint64_t cm_poll_tsc;           /* SV_CM_POLL_US in TSC ticks */
	_Atomic(void (*)(void *)) cm_hook;
	void *_Atomic cm_hook_arg;

	pthread_t progress;
	bool progress_started;
	atomic_bool stop;

	/* the program's threads that drove the engine (sv_thread_lcore()):
	 * lcore ids taken, given back at their exit, those held now; threads
	 * that drove without one (SRNIC_STATS=1 prints them) */
	_Atomic uint64_t thread_lcores, thread_lcores_released, thread_lcore_none;
	_Atomic uint32_t thread_lcores_held;
};

/* A post's writes share no cache line with busy or with what the engine
 * poll writes (the struct is allocated on a line's start: sv_device's
 * aligned_alloc()). */
#define SV_DEV_LINE(f) (offsetof(struct sv_device, f) / 64)
static_assert(SV_DEV_LINE(posts_pending) == SV_DEV_LINE(batch_tsc),
	      "a held post's writes on one line");
static_assert(SV_DEV_LINE(posts_pending) != SV_DEV_LINE(busy) &&
	      SV_DEV_LINE(posts_pending) != SV_DEV_LINE(app_poll_tsc) &&
	      SV_DEV_LINE(posts_pending) != SV_DEV_LINE(posts_deferred) &&
	      SV_DEV_LINE(posts_pending) != SV_DEV_LINE(runs_moved[SV_RUN_NB - 1]) &&
	      SV_DEV_LINE(posts_pending) != SV_DEV_LINE(nb_armed) &&
	      SV_DEV_LINE(posts_pending) != SV_DEV_LINE(last_moved_tsc),
	      "posts_pending shares busy's line, or one the engine poll writes");
static_assert(SV_DEV_LINE(post_defer_tsc) != SV_DEV_LINE(busy) &&
	      SV_DEV_LINE(post_defer_tsc) != SV_DEV_LINE(posts_pending),
	      "what every post reads, set at start, on a line written per poll or post");
static_assert(offsetof(struct sv_device, busy) % 64 == 0 &&
	      offsetof(struct sv_device, posts_pending) % 64 == 0, "line starts");

struct sv_context {
	struct verbs_context vctx;  /* ibv_context last, as rdma-core's layout needs */
	struct sv_device *dev;
	TAILQ_ENTRY(sv_context) next; /* in dev->ctxs, under dev->ctx_lock */
	pthread_mutex_t async_lock;
	uint32_t async_head, async_tail;
	struct ibv_async_event async[SV_ASYNC_RING];
};

struct sv_pd {
	struct ibv_pd ibpd;
	struct srnic_pd *spd;
};

struct sv_mr {
	struct ibv_mr ibmr;
	struct srnic_mr *smr;
};

/* ibv_start_poll() takes completions from srnic's CQ this many at a time
 * (one CQ lock per burst); what the program has not read by ibv_end_poll()
 * stays for the next poll */
#define SV_CQ_EX_BURST 16

/* A CQ made by ibv_create_cq_ex(): the completions taken from srnic's CQ
 * and not yet consumed, [head, head + n) of wc. lock is held from a
 * successful ibv_start_poll() to ibv_end_poll() (rdma-core's providers'
 * rule: one poller between the two), and by ibv_poll_cq() on this CQ. */
struct sv_cq_ex {
	rte_spinlock_t lock;
	/* the device's own poll (embedded srnic's CQ, attached the ring) */
	int (*poll)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
	uint32_t head, n;
	bool cur;                   /* wc[head] is the program's current one */
	struct ibv_wc wc[SV_CQ_EX_BURST];
};

/* What a CQ of either kind (sv_cq embedded, verbs_attach_dp.c's sva_cq
 * attached) begins with, so that verbs_ex.c's calls find the extended
 * state of both through the struct ibv_cq_ex a program hands them: the
 * verbs CQ (ibv_cq_ex begins with ibv_cq's fields) and that state,
 * ibv_create_cq_ex()'s only, else NULL. */
#define SV_CQ_HEAD \
	union { \
		struct ibv_cq ibcq; \
		struct ibv_cq_ex ibcq_ex; \
	}; \
	struct sv_cq_ex *ex
struct sv_cq_head {
	SV_CQ_HEAD;
};

struct sv_cq {
	SV_CQ_HEAD;
	struct srnic_cq *scq;
	struct sv_device *dev;
	bool in_armed;              /* under dev->arm_lock */
	uint32_t events_reported;   /* async events handed out (under ibcq.mutex) */
	/* completion events ibv_get_cq_event() handed out (under ibcq.mutex):
	 * ibv_destroy_cq() waits until comp_events_completed reaches it */
	uint32_t comp_events_reported;
};

struct sv_wr_batch;

/* What a QP of either kind begins with (as SV_CQ_HEAD): the verbs QP
 * (ibv_qp_ex begins with an ibv_qp) and, for ibv_create_qp_ex() with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS only (what ibv_qp_to_qp_ex() answers
 * for), else NULL, the WRs the ibv_wr_*() builders made since
 * ibv_wr_start(). */
#define SV_QP_HEAD \
	union { \
		struct ibv_qp ibqp; \
		struct ibv_qp_ex ibqp_ex; \
	}; \
	struct sv_wr_batch *wrs
struct sv_qp_head {
	SV_QP_HEAD;
};

struct sv_qp {
	SV_QP_HEAD;
	struct srnic_qp *sqp;
	struct sv_device *dev;
	rte_spinlock_t sq_lock;     /* ibv_post_send() from several threads */
	rte_spinlock_t rq_lock;
	uint32_t events_reported;   /* under ibqp.mutex */
};

struct sv_srq {
	struct ibv_srq ibsrq;
	struct srnic_srq *ssrq;
	struct sv_device *dev;
	rte_spinlock_t lock;        /* srnic's SRQ has one producer: posts and resizes take this */
	uint32_t events_reported;   /* under ibsrq.mutex */
};


/*
 * A completion channel: its events (the CQs that have one) in a queue, and
 * fd an eventfd whose count is the queue's length, so that the program's
 * poll() on it and a blocking ibv_get_cq_event() see them. Every change of
 * the queue and the count is made under lock together, so a destroyed CQ's
 * events can leave the queue (rdma-core's kernel drops them in
 * ib_uverbs_release_ucq(); a pipe of CQ pointers handed them out freed).
 */
struct sv_channel {
	struct ibv_comp_channel ch;
	pthread_mutex_t lock;
	uint32_t head, tail;        /* events [tail, head) */
	uint64_t dropped;           /* pushed into a full queue */
	struct sv_cq *ev[SV_CHANNEL_EVENTS];
};

static inline struct sv_context *
sv_ctx(struct ibv_context *c)
{
	return container_of(container_of(c, struct verbs_context, context), struct sv_context, vctx);
}

static inline struct sv_pd *sv_pd(struct ibv_pd *p) { return container_of(p, struct sv_pd, ibpd); }
static inline struct sv_mr *sv_mr(struct ibv_mr *m) { return container_of(m, struct sv_mr, ibmr); }
static inline struct sv_cq *sv_cq(struct ibv_cq *c) { return container_of(c, struct sv_cq, ibcq); }
static inline struct sv_qp *sv_qp(struct ibv_qp *q) { return container_of(q, struct sv_qp, ibqp); }
static inline struct sv_srq *sv_srq(struct ibv_srq *q) { return container_of(q, struct sv_srq, ibsrq); }
static inline struct sv_channel *
sv_channel(struct ibv_comp_channel *c)
{
	return container_of(c, struct sv_channel, ch);
}

/* verbs_conf.c: the configuration; a line on stderr */
int sv_conf_load(struct sv_conf *c);
void sv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* src into dst of n bytes, cut and terminated */
void sv_copy_str(char *dst, size_t n, const char *src);

/* verbs_start.c: the device, brought up at the first call (NULL if that
 * failed); the device only if it was brought up already */
struct sv_device *sv_device_get(void);
struct sv_device *sv_device_started(void);

/* A thread's state while it drives the device with nothing else to do
 * (sv_drive()): its spin, yield and sleep steps. */
struct sv_drive {
	uint64_t last_work;         /* TSC of the last engine poll that did something */
	uint64_t last_cm;           /* TSC of its last CM poll */
	unsigned int nap;           /* next sleep, us */
	uint64_t hot, spin;         /* SV_SPIN_HOT_US, SV_SPIN_US in TSC ticks */
};

/* verbs_devfs.c: the device's /dev and /sys files in SRNIC_DEVFS (for
 * libsrnic_devfs.so): what they show of a device, embedded or attached */
#define SV_DEVFS_ENV "SRNIC_DEVFS"
struct sv_devfs_dev {
	const char *name;           /* the device's (srnic0) */
	const char *uverbs;         /* its ibv_device.dev_name (uverbs0) */
	const char *netdev;         /* the port's kernel interface, "" when none */
	struct ibv_port_attr port;
	union ibv_gid gid[SRNIC_GID_TBL_LEN];
	int nb_gid;
	uint8_t mac[6];
};
int sv_devfs_write(const struct sv_devfs_dev *d);
/* the embedded device's; NETDEV is the port's kernel interface or "" */
int sv_devfs_publish(struct sv_device *dev, const char *netdev);
/* verbs_dev.c: the port's attributes as programs are shown them */
int sv_port_attr(struct sv_device *dev, struct ibv_port_attr *a);
void sv_devfs_remove(void);

/* verbs_progress.c: the engine's driving (doc/verbs.md, "Progress") */
void sv_drive_init(struct sv_device *dev, struct sv_drive *st);
void sv_drive(struct sv_device *dev, struct sv_drive *st);
unsigned int sv_progress(struct sv_device *dev, enum sv_runner who);
unsigned int sv_progress_sync(struct sv_device *dev, enum sv_runner who);
void sv_post_progress(struct sv_device *dev);
int sv_progress_start(struct sv_device *dev);
void sv_progress_stop(struct sv_device *dev);
/* At exit: SRNIC_EXIT_LINGER_MS for the frames sent last to reach the peer. */
void sv_progress_linger(struct sv_device *dev);
void sv_cq_armed_add(struct sv_device *dev, struct sv_cq *cq);
/* off the armed list; whether it was on it */
bool sv_cq_armed_del(struct sv_device *dev, struct sv_cq *cq);
void sv_async_pump(struct sv_device *dev);
void sv_cm_progress(struct sv_device *dev);
void sv_ctx_register(struct sv_device *dev, struct sv_context *ctx);
void sv_ctx_unregister(struct sv_device *dev, struct sv_context *ctx);


/* verbs_fork.c: set in a fork()ed child of the process whose device this
 * is; then every verb refuses (sv_fork_refused(): one line on stderr, EIO) */
extern bool sv_forked;
int sv_fork_guard_install(void);
int sv_fork_refused(const char *verb);
/* at the top of a verb: its error in a child, by how the verb reports one */
#define SV_FORK_ERRNO(verb) do { \
	if (unlikely(sv_forked)) \
		return sv_fork_refused(verb); \
} while (0)
#define SV_FORK_NULL(verb) do { \
	if (unlikely(sv_forked)) { \
		errno = sv_fork_refused(verb); \
		return NULL; \
	} \
} while (0)
#define SV_FORK_NEG(verb) do { \
	if (unlikely(sv_forked)) { \
		errno = sv_fork_refused(verb); \
		return -1; \
	} \
} while (0)
/* a post: the first WR is the one that failed */
#define SV_FORK_POST(verb) do { \
	if (unlikely(sv_forked)) { \
		*bad_wr = wr; \
		return sv_fork_refused(verb); \
	} \
} while (0)
#define SV_FORK_VOID(verb) do { \
	if (unlikely(sv_forked)) { \
		sv_fork_refused(verb); \
		return; \
	} \
} while (0)

/* verbs_obj.c: the ops table of every context (the objects' verbs) */
void sv_ctx_set_ops(struct sv_context *ctx);
/* ibv_bind_mw(): a BIND_MW WR through the context's post_send (both modes) */
int sv_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);
/* a CQ / QP as ibv_create_cq() / ibv_create_qp() make it (NULL, errno) */
struct sv_cq *sv_cq_create(struct ibv_context *context, int cqe, void *cq_context,
			   struct ibv_comp_channel *channel, int comp_vector);
struct sv_qp *sv_qp_create(struct ibv_pd *ibpd, struct ibv_qp_init_attr *attr);

/* verbs_ex.c: the extended verbs (verbs_context's create_cq_ex,
 * create_qp_ex, query_device_ex; ibv_cq_ex's and ibv_qp_ex's calls), the
 * embedded device's and, through the same calls on their own post and
 * poll, the attached one's (verbs_attach_dp.c) */
void sv_ctx_set_ex_ops(struct sv_context *ctx);
int sv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
/* ibv_create_cq_ex()'s attributes: 0 or the errno it fails with */
int sv_cq_ex_check(const struct ibv_cq_init_attr_ex *attr);
/* A CQ just made, extended: its state (polled with poll) and its struct
 * ibv_cq_ex's calls (start_poll the device's, or sv_cq_ex_start_poll());
 * 0 or ENOMEM */
int sv_cq_ex_setup(struct sv_cq_head *h, int (*poll)(struct ibv_cq *, int, struct ibv_wc *),
		   int (*start_poll)(struct ibv_cq_ex *, struct ibv_poll_cq_attr *));
int sv_cq_ex_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr);
/* ibv_poll_cq() on a CQ of ibv_create_cq_ex() */
int sv_cq_ex_poll(struct sv_cq_head *h, int n, struct ibv_wc *wc);
/* ibv_create_qp_ex()'s attributes against the send operations the device
 * carries (ops): 0 or the errno it fails with, *wr_api whether the QP
 * gets the ibv_wr_*() calls */
int sv_qp_ex_check(struct ibv_context *context, const struct ibv_qp_init_attr_ex *attr,
		   uint64_t ops, bool *wr_api);
/* A QP just made, with the ibv_wr_*() calls: lock held from ibv_wr_start()
 * to ibv_wr_complete() / ibv_wr_abort() (NULL: the batch's own), post
 * queues a list whole or none of it (0 or its errno, under lock), posted
 * (may be NULL) runs after a post, unlocked; 0 or ENOMEM */
int sv_qp_ex_setup(struct sv_qp_head *h, const struct ibv_qp_cap *cap, rte_spinlock_t *lock,
		   int (*post)(struct ibv_qp *, struct ibv_send_wr *),
		   void (*posted)(struct ibv_qp *));
/* free what an extended CQ or QP holds beside the classic one */
void sv_cq_ex_free(struct sv_cq_head *h);
void sv_qp_ex_free(struct sv_qp_head *h);
/* drop the queued async events about obj (its destroy) */
void sv_async_forget(struct sv_device *dev, const void *obj);

/* verbs_channel.c: a completion event of cq queued on its channel (the
 * engine's poller); a destroyed CQ's events off the queue; the oldest
 * event (its CQ counted as reported), or NULL */
void sv_channel_push(struct sv_cq *cq);
void sv_channel_forget(struct sv_channel *ch, const struct sv_cq *cq);
struct sv_cq *sv_channel_pop(struct sv_channel *ch);

#endif /* SRNIC_VERBS_H */
