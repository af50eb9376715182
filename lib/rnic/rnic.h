/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_RNIC_H
#define SRNIC_RNIC_H

/*
 * Internal object layouts shared by the control path (lib/core) and the
 * engines (lib/engine), on the floor below both (lib/rnic). Not installed.
 */

#include <stdalign.h>
#include <stdatomic.h>
#include <sys/queue.h>

#include <rte_common.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_spinlock.h>

#include "srnic.h"
#include "srnic_param.h"
#include "srnic_wire.h"
#include "stats.h"

/* One log type per layer (--log-level='srnic.*:debug', 'srnic.engine:error'):
 * srnic.core (control path, lib/core), srnic.engine (lib/engine: eng_internal.h
 * sets SRNIC_LOGTYPE before including this), srnic.link (lib/link). */
extern int srnic_logtype_core;
extern int srnic_logtype_engine;
#ifndef SRNIC_LOGTYPE
#define SRNIC_LOGTYPE srnic_logtype_core
#endif
#define SRNIC_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, SRNIC_LOGTYPE, "srnic: " fmt "\n", ##__VA_ARGS__)

/* ---- memory regions ---- */

struct srnic_mr {
	struct srnic_dev *dev;
	struct srnic_pd *pd;
	uint8_t *addr;
	uint64_t length;
	/* The address SGEs and peers name for addr (ibv_reg_mr_iova()'s
	 * iova; (uintptr_t)addr unless registered at another), and what
	 * turns one the key checks passed into a pointer: addr - va, 0 then.
	 * The engines check keys against [va, va + length). */
	uint64_t va;
	uint64_t va_off;
	rte_iova_t iova;            /* DMA address of addr; RTE_BAD_IOVA if unknown */
	/* Not IOVA-contiguous (IOVA-PA, or memsegs of scattered IOVAs): the
	 * IOVA of each page from pg_base, else NULL (iova + offset holds). */
	rte_iova_t *iova_pg;
	uintptr_t pg_base;
	uint8_t pg_shift;
	uint32_t key;               /* lkey == rkey: index << 8 | generation byte */
	int access;
	/* application memory: the chunks (mr.c) registered and mapped for it */
	uint8_t nb_chunks;
	uint16_t chunk[SRNIC_MR_MAX_CHUNKS];
	/* not reachable by the port's DMA (no memseg list or mapping for it):
	 * zero-copy pieces are copied instead (tx_unmapped_copy) */
	uint8_t no_dma;
	/* key unpublished by a srnic_dereg_mr_wait() that answered -EBUSY:
	 * the MR is its caller's still, with one reference of its own */
	uint8_t unpublished;
	uint16_t port_id;           /* dev's port, for mr_final (may run after dev is freed) */
	/* memory windows bound to it (engines' binds and invalidations):
	 * deregistration is refused while any (-EBUSY) */
	_Atomic uint32_t mw_refs;
	srnic_mr_release_cb release;
	void *release_arg;
	/* One reference for the registration, one per mbuf attached to the
	 * memory, and the references engines bought ahead (zc_credit); the
	 * last one out frees the MR (mr_ext_free). */
	struct rte_mbuf_ext_shared_info shinfo;
	struct {
		uint16_t n;          /* prepaid references engine i still holds */
	} __rte_cache_aligned zc_credit[SRNIC_MAX_ENGINES_PER_DEV];
};

#define SRNIC_MR_KEY_INDEX(key) ((key) >> 8)

/* ---- memory windows ---- */

/*
 * A memory window (IBTA 10.6.7): an rkey onto part of an MR, bound and
 * invalidated by work requests. Its keys have indexes from
 * SRNIC_MW_KEY_BASE up (index = SRNIC_MW_KEY_BASE + its slot in
 * dev->mw_tbl), so a key tells by its index alone whether it names an MR
 * (below: the responder's plain path, unchanged) or a window.
 *
 * The binding is written by the engine that executes a bind, a local or a
 * remote invalidation (possibly two engines at once for a type 1 window
 * bound through QPs of two engines) and read by every engine's responder:
 * seq is odd while one writes (a writer takes it with a compare-and-swap
 * and fails its work request if another holds it), and a reader takes the
 * fields only if seq was even and unchanged around its copy. No lock.
 */
enum srnic_mw_state {
	SRNIC_MW_FREE,              /* type 2, not bound: no access */
	SRNIC_MW_VALID,             /* bound (type 1: also "unbound", length 0) */
};

struct srnic_mw {
	struct ibv_mw ibv;          /* verbs layer's: rkey and type kept by srnic */
	struct srnic_dev *dev;
	struct srnic_pd *pd;
	uint32_t slot;              /* in dev->mw_tbl */
	uint8_t type;               /* IBV_MW_TYPE_1 or IBV_MW_TYPE_2 */
	_Atomic uint32_t seq;
	/* under seq */
	uint32_t rkey;
	uint8_t state;              /* enum srnic_mw_state */
	int access;                 /* IBV_ACCESS_REMOTE_* the binding grants */
	uint64_t addr;
	uint64_t length;
	struct srnic_mr *mr;        /* bound to (holds mr->mw_refs) */
	/* type 2B: the QP it was bound through, by identities never reused
	 * (a QP at the same address, or with the same QPN, after that one
	 * was destroyed is another); 0 and 0 when none */
	uint32_t qpn;
	uint32_t qp_gen;
};

#define SRNIC_MW_KEY_BASE SRNIC_MAX_MR /* first key index of a window */
#define SRNIC_KEY_IS_MW(key) (SRNIC_MR_KEY_INDEX(key) >= SRNIC_MW_KEY_BASE)

/* ---- completion queues ---- */

struct srnic_cq {
	struct srnic_dev *dev;
	struct srnic_engine *eng;
	uint32_t cq_num;            /* index in dev->cq_tbl */
	uint32_t gen;               /* incarnation (async events) */
	void *user;                 /* srnic_cq_set_user(): async events carry it */
	int cqe;                    /* entries asked for (srnic_cq_cqe()) */
	uint8_t err_raised;         /* engine: IBV_EVENT_CQ_ERR raised (first overflow) */
	struct ibv_wc *ring;
	/* beside each entry: the work queue index after the WQE it completes;
	 * polling it gives the slots up to there back to the application */
	uint32_t *wq_next;
	/* beside each entry: BTH.SE of the message it completes (receives) */
	uint8_t *solicited;
	/* beside each entry: the QP it belongs to. A CQE never outlives its
	 * QP (srnic_cq_clean() on RESET and destroy), so polling needs no
	 * QPN lookup and a reused QPN never sees an old incarnation's CQEs */
	struct srnic_qp **qp;
	uint32_t size;              /* power of two */
	uint32_t mask;
	_Atomic uint32_t refs;      /* QPs using it (as send or recv CQ, each counted) */
	/* producer side: the engine */
	alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t prod;
	_Atomic uint8_t overflow;
	/* srnic_resize_cq(): a generation, odd while the control path swaps
	 * the ring. The engine's push that sees it odd acknowledges it
	 * (frozen_ack = that generation: it writes nothing until it moves
	 * on) and waits for the next, even one (srnic_cq_thaw_wait()) */
	_Atomic uint32_t frozen;
	_Atomic uint32_t frozen_ack;
	/* consumer side: the application. poll_lock is taken once per
	 * srnic_poll_cq() call and by srnic_cq_clean(), which compacts
	 * [cons, prod) from the control path; the engine (producer) never
	 * takes it */
	alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t cons;
	rte_spinlock_t poll_lock;
	/* enum srnic_cq_arm: set by srnic_cq_arm(), cleared by the
	 * srnic_cq_notify_due() that finds the completion it waited for */
	_Atomic uint8_t arm;
	_Atomic uint32_t arm_prod;  /* prod when armed: completions from here on count */
};

/* ---- address handles ---- */

/* Where a UD work request goes: what the packet needs of its AH, copied
 * into the send WQE at post time. */
struct srnic_ud_dest {
	uint32_t qpn;               /* remote_qpn */
	uint32_t qkey;              /* DETH Q_Key to send (controlled Q_Key resolved at post) */
	uint32_t flow_label;        /* IPv6 flow label (the AH's, 0: none) */
	uint8_t ttl;                /* IPv4 TTL / IPv6 hop limit */
	uint8_t tclass;
	uint8_t mac_ok;             /* mac known at post time, else looked up at send */
	uint8_t sgid_index;         /* the source: the UD QP's template of that GID */
	struct rte_ether_addr mac;
	uint8_t ip[16];             /* the dgid: IPv4 as ::ffff:a.b.c.d */
	uint64_t resolve_by;        /* engine: timer cycles to wait for mac until (0: not yet) */
};

/* An address handle: rdma-core's struct ibv_ah inside (the verbs layer
 * hands that very pointer to the application; srnic_ah_from_ibv() goes
 * back), the attributes it was made with and the destination it names. */
struct srnic_ah {
	struct ibv_ah ibv;
	struct srnic_pd *pd;
	struct ibv_ah_attr attr;
	struct srnic_ud_dest dest;  /* qpn, qkey 0: set per work request */
	uint8_t dmac_given;         /* srnic_create_ah_dmac(): never looked up */
};

/* ---- work queues ---- */

enum srnic_wqe_state {
	SRNIC_WQE_POSTED,           /* not started by the requester */
	SRNIC_WQE_SENDING,          /* some packets sent */
	SRNIC_WQE_SENT,             /* all packets sent, awaiting ACK/response */
	SRNIC_WQE_DONE,             /* completed (status in wc_status) */
};

struct srnic_swqe {
	/* from the work request */
	uint64_t wr_id;
	uint64_t remote_addr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t rkey;
	union {
		uint32_t imm_data;          /* big endian, as in ibv_send_wr */
		uint32_t invalidate_rkey;   /* LOCAL_INV, SEND_WITH_INV: host order */
		struct {
			uint8_t type;       /* FLUSH: FETH placement type */
			uint8_t level;      /* FLUSH: FETH selectivity level */
		} flush;
	};
	uint32_t length;            /* total payload bytes */
	uint8_t opcode;             /* enum ibv_wr_opcode */
	uint8_t num_sge;
	uint8_t signaled;
	uint8_t fence;
	uint8_t solicited;
	uint8_t inline_data;        /* payload in the QP's inline buffer */
	/*
	 * IBV_WR_BIND_MW: bind.mw to bind.length bytes at remote_addr of the MR
	 * whose lkey is bind.mr_lkey, with bind.access (IBV_ACCESS_REMOTE_*,
	 * IBV_ACCESS_ZERO_BASED refused), the window's key becoming rkey (the
	 * key byte of rkey is new; its index must be the window's); length 0
	 * unbinds a type 1 window. IBV_WR_LOCAL_INV and
	 * IBV_WR_SEND_WITH_INV: the key to invalidate in invalidate_rkey (host
	 * order, ibv_send_wr.invalidate_rkey). BIND_MW and LOCAL_INV send
	 * nothing: the requester executes them in order (after earlier fences)
	 * and they complete with IBV_WC_BIND_MW / IBV_WC_LOCAL_INV, or
	 * IBV_WC_MW_BIND_ERR / IBV_WC_LOC_QP_OP_ERR (QP to ERR), as rxe.
	 */
	struct {
		struct srnic_mw *mw;
		uint64_t length;
		uint32_t mr_lkey;
		int access;
	} bind;
	/* requester and completer state */
	uint8_t resent;             /* rewound (go-back-N): its payload now goes out copied */
	uint8_t state;              /* enum srnic_wqe_state */
	uint8_t wc_status;          /* enum ibv_wc_status when DONE */
	uint32_t first_psn;
	uint32_t npkts;             /* PSNs the message takes */
	uint32_t sent_pkts;         /* packets built so far */
	uint32_t resp_pkts;         /* READ responses received */
	uint32_t acked_pkts;        /* SEND/WRITE packets an ACK inside the message covered */
	struct ibv_sge sge[SRNIC_MAX_SGE];
	/* UD: the destination, copied from the AH at post time (as libmlx5
	 * copies the AV into the WQE), so the AH may go right after */
	struct srnic_ud_dest ud;
};

struct srnic_rwqe {
	uint64_t wr_id;
	uint32_t length;
	uint8_t num_sge;
	struct ibv_sge sge[SRNIC_MAX_SGE];
};

/* ---- shared receive queues ---- */

/*
 * The application produces at head (srnic_post_srq_recv()); the one
 * engine of the SRQ consumes at tail, copying the WQE out (a slot is the
 * application's again once tail passed it). lock serialises the engine's
 * takes with a resize (srnic_modify_srq() IBV_SRQ_MAX_WR), which swaps
 * wqe/size/mask; the engine takes it once per message received.
 */
struct srnic_srq {
	struct srnic_dev *dev;
	struct srnic_pd *pd;
	struct srnic_engine *eng;
	struct srnic_rwqe *wqe;
	uint32_t size;              /* power of two: what it holds (max_wr) */
	uint32_t mask;
	uint32_t max_sge;
	uint32_t srq_num;           /* index in dev->srq_tbl */
	uint32_t gen;               /* incarnation (async events) */
	void *user;                 /* srnic_srq_set_user(): async events carry it */
	_Atomic uint32_t refs;      /* QPs using it */
	/* srq_limit; 0: not armed. Set by modify, cleared by the engine's
	 * take that fires IBV_EVENT_SRQ_LIMIT_REACHED (a compare-and-swap) */
	_Atomic uint32_t limit;
	rte_spinlock_t lock;
	alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t head;
	alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t tail;
};

/* ---- responder ---- */

/* Responses the responder owes, in PSN order (IBTA 9.7: responses are sent
 * in the order of their requests): READ and atomic responses, and coalesced
 * ACKs/NAKs for the requests between them. */
enum srnic_resp_kind {
	SRNIC_RESP_ACK,
	SRNIC_RESP_NAK,
	SRNIC_RESP_READ,
	SRNIC_RESP_ATOMIC,
};

struct srnic_resp_entry {
	uint8_t kind;               /* enum srnic_resp_kind */
	uint8_t syndrome;           /* ACK/NAK */
	uint8_t dup;                /* answer to a duplicate: holds no READ/atomic slot */
	uint32_t copy_npkts;        /* READ: packets [0, this) go back over ones sent: copied */
	uint32_t res_id;            /* READ/ATOMIC: srnic_resp_res.id it answers (0: none) */
	uint32_t psn;               /* ACK/NAK psn; READ/ATOMIC: first PSN */
	uint32_t msn;
	uint32_t npkts;             /* READ: PSNs reserved */
	uint32_t sent;              /* READ: response packets built */
	uint64_t va;
	uint32_t rkey;
	uint32_t length;
	uint64_t atomic_orig;
};

#define SRNIC_RESP_FIFO (4 * SRNIC_MAX_RD_ATOMIC) /* power of two */

enum srnic_resp_msg {
	SRNIC_MSG_NONE,             /* next request starts a message */
	SRNIC_MSG_SEND,             /* inside a multi-packet SEND */
	SRNIC_MSG_WRITE,            /* inside a multi-packet WRITE */
};

/* Responder resources (IBTA 9.7.5.1.4, o9-20: max_dest_rd_atomic of
 * them; rxe's resp_res): what the responder remembers of each READ and
 * atomic it executed, the oldest replaced. A duplicate READ or atomic is
 * answered only from one of them: a duplicate READ that matches none (or
 * asks for something else than the tail of the original) is dropped, never
 * executed. PSNs are kept extended with the count of 2^24 wraps, so an
 * entry a whole PSN lap old never matches. */
struct srnic_resp_res {
	uint8_t kind;               /* SRNIC_RESP_READ or SRNIC_RESP_ATOMIC */
	uint32_t id;                /* 1 + its number in the QP's sequence (0: unused) */
	uint32_t npkts;             /* PSNs it took */
	uint32_t msn;
	uint32_t fifo_pos;          /* READ: FIFO index of its answer (live while that
				     * entry has this id and is not finished) */
	uint32_t rkey;
	uint32_t length;
	uint64_t psn_ext;           /* first PSN | wraps << 24 */
	uint64_t va;                /* READ: the original RETH */
	uint64_t orig;              /* ATOMIC: the original value returned */
};

struct srnic_resp {
	/* per packet (kept together: one line) */
	uint32_t epsn;              /* expected PSN */
	uint32_t msn;
	uint32_t head;              /* FIFO: next entry to send */
	uint32_t tail;              /* FIFO: next free entry */
	uint8_t msg;                /* enum srnic_resp_msg */
	uint8_t seq_nak_sent;       /* one NAK per gap (IBTA 9.7; resp.c) */
	uint8_t rd_atomic;          /* READ/atomic entries queued */
	uint8_t rwqe_taken;         /* a receive WQE is being filled */
	uint8_t goto_error;         /* fatal error NAKed: QP to ERR once it is sent */
	uint8_t uc_drop;            /* UC: the message in progress is dropped until a FIRST/ONLY */
	uint32_t epsn_wraps;        /* times epsn wrapped past 2^24 (extends PSNs) */
	uint32_t rwqe_next;         /* RQ index after rwqe */
	uint32_t recv_off;          /* bytes placed in it */
	uint64_t write_va;          /* WRITE in progress */
	uint32_t write_rkey;
	uint32_t write_resid;
	uint32_t write_len;         /* RETH DMA length of the WRITE */
	/* per message */
	struct srnic_rwqe rwqe;     /* copy of the receive WQE in use */
	/* the last READs and atomics executed: duplicates are answered from
	 * them (newest first), never executed again */
	uint32_t res_count;         /* resources ever made; the next one's id - 1 */
	struct srnic_resp_res res[SRNIC_MAX_RD_ATOMIC];
	struct srnic_resp_entry fifo[SRNIC_RESP_FIFO];
};

/* ---- queue pairs ---- */

/*
 * Laid out by use: what every packet of a QP touches first (a few lines:
 * with a thousand QPs, each line is a miss), what setup and rare events
 * touch last.
 */
struct srnic_qp {
	/* per packet */
	struct srnic_dev *dev;
	struct srnic_engine *eng;
	struct srnic_pd *pd;
	struct srnic_cq *scq;
	struct srnic_cq *rcq;
	struct srnic_srq *srq;      /* receive WQEs from here, not rq (NULL: rq) */
	uint32_t qpn;
	uint32_t transport;         /* SRNIC_OPM_RC, _UC or _UD: the opcodes it takes */
	uint32_t qkey;              /* UD: its Q_Key (IBV_QP_QKEY) */
	uint8_t type;               /* enum ibv_qp_type */
	_Atomic uint8_t state;      /* enum ibv_qp_state */
	uint8_t active;             /* engine: in eng->active */
	uint8_t in_wheel;           /* engine: in a timer wheel slot */
	uint64_t tw_tick;           /* engine: the tick of that slot */
	uint32_t dest_qpn;
	uint32_t pmtu;              /* bytes */
	int access;                 /* qp_access_flags */
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint8_t sq_sig_all;
	uint8_t route_ok;           /* destination MAC known */
	uint8_t route_dmac;         /* the MAC is the application's (srnic_modify_qp_dmac): kept */
	/* engine: which side has work, so that a QP's turn does not touch
	 * the other side's lines (cold, with many QPs) for nothing */
	uint8_t resp_owed;          /* the responder FIFO holds answers (set by fifo_push) */
	uint8_t req_idle;           /* every posted WQE was sent at the last run; a
				     * doorbell or a rewind clears it */
	uint16_t ip_id;
	/* SQD->SQD with IBV_QP_AV: the control path leaves the new route in
	 * route_next and sets this; the engine, sole writer of the route
	 * and header template from RTR on, applies it at the QP's next turn
	 * (srnic_qp_av_handoff()), so no packet is built from a torn one */
	_Atomic uint8_t av_pending;
	uint64_t timeout_cycles;    /* local ACK timeout in timer cycles; 0: none */

	/* requester */
	struct {
		uint32_t psn;           /* next PSN to assign */
		uint32_t rd_atomic;     /* READs/atomics in flight */
		uint8_t stalled;        /* a WQE failed locally: send nothing more */
		uint8_t retry_left;     /* sequence-error / timeout retries left */
		uint8_t rnr_left;       /* RNR retries left (rnr_retry 7: forever) */
		uint8_t read_retry;     /* READ re-asked after a response gap: once per rewind */
		uint8_t starved_run;    /* late expiries in a row since progress (SRNIC_RETRY_STARVED_MAX) */
		/* TX was full and the WQE at sq.req needs the wire: while
		 * set, a turn under a full TX buffer reads no SQ line, not
		 * even sq.req (on the line of sq.comp, which the application
		 * reads), as nothing behind that WQE may start before it
		 * (eng_req_run()). Cleared by what moves sq.req back or on:
		 * a turn with TX room, a rewind (comp_rewind()); the
		 * requester's other moves end in ERR, whose flush does not
		 * look at it, and RESET zeroes it. */
		uint8_t tx_wait;
		uint64_t wait_until;    /* timer cycles: RNR wait before resending */
		uint64_t timer_at;      /* timer cycles: local ACK timeout; 0: not armed */
	} req;

	struct srnic_hdr_tmpl tmpl; /* route + dest_qpn prebuilt: every packet starts as a copy */

	/* send queue: application produces at head; engine sends at req and
	 * retires at comp (published so the application can reuse slots).
	 * A line per writer: the application's (its posts and polls: head,
	 * app_free, the doorbell flag) and the engine's (comp, req), so
	 * that neither writes a line the other writes (an engine lcore
	 * apart from the application's thread pays a miss per handoff, not
	 * per store). */
	struct {
		struct srnic_swqe *wqe;
		uint8_t *inline_buf;
		uint32_t size;
		uint32_t mask;
		uint32_t max_sge;
		uint32_t max_inline;
		alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t head;
		/* slots before app_free are the application's again: their
		 * completions were polled (or they preceded a polled one) */
		_Atomic uint32_t app_free;
		/* in eng->doorbell: set by the poster after its head store
		 * (the same line), cleared by the engine before it reads head */
		_Atomic uint8_t db_pending;
		alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t comp;
		uint32_t req;
	} sq;

	/* receive queue: application produces at head, engine consumes at
	 * tail; a line per writer as in sq */
	struct {
		struct srnic_rwqe *wqe;
		uint32_t size;
		uint32_t mask;
		uint32_t max_sge;
		alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t head;
		_Atomic uint32_t app_free;  /* as sq.app_free */
		alignas(RTE_CACHE_LINE_SIZE) _Atomic uint32_t tail;
	} rq;

	struct srnic_resp resp;

	/* setup, timers, rare events */
	uint8_t arp_waiting;        /* engine: in eng->arp_wait */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	enum ibv_mtu pmtu_enum;
	TAILQ_ENTRY(srnic_qp) tw_link;
	uint32_t sq_psn_init;
	uint32_t rq_psn_init;
	uint64_t arp_next_tsc;
	union ibv_gid dgid;
	uint8_t sgid_index;             /* the AV's source GID */
	uint32_t av_flow_label;         /* the AV's; 0: derived from the QPNs */
	uint8_t av_hop_limit;           /* the AV's; 0: SRNIC_IP_TTL */
	struct srnic_route route;
	struct srnic_route route_next;  /* control path: the AV handed off (av_pending) */
	uint8_t route_next_ok;          /* route_next's dst_mac is known */
	/* SQD: every entry into SQD bumps sqd_gen (control path, before the
	 * state); the engine raises IBV_EVENT_SQ_DRAINED once per generation
	 * (sqd_done_gen, engine-owned) if sqd_notify asked for it */
	_Atomic uint32_t sqd_gen;
	uint32_t sqd_done_gen;
	uint8_t sqd_notify;             /* IBV_QP_EN_SQD_ASYNC_NOTIFY of the RTS->SQD */
	/* engine-owned, cleared by RESET (engines quiesced): events raised
	 * once per connection / per entry into ERR */
	uint8_t comm_est_raised;        /* IBV_EVENT_COMM_EST (first packet in RTR) */
	uint8_t last_wqe_raised;        /* IBV_EVENT_QP_LAST_WQE_REACHED (SRQ QP in ERR, flushed) */
	uint16_t nb_mcast;              /* groups attached to (dev->mcast_lock) */
	uint32_t gen;                   /* incarnation (async events) */
	void *user;                     /* srnic_qp_set_user(): async events carry it */
	struct srnic_qp_stats stats;    /* engine-written */
	/* UD: a template per source GID but SRNIC_GID_INDEX_IP's (tmpl), for
	 * work requests whose AH names another (built once, at create) */
	struct srnic_hdr_tmpl ud_tmpl[SRNIC_GID_TBL_LEN];
};

/* srnic_qp_state() for the engine's hot path: inline, no call. */
static inline enum ibv_qp_state
srnic_qp_cur_state(const struct srnic_qp *qp)
{
	return (enum ibv_qp_state)atomic_load_explicit(&qp->state, memory_order_acquire);
}

/* ---- engines ---- */

/* The timer wheel: QPs with a deadline (ACK timeout, RNR wait, ARP retry),
 * in slots of SRNIC_TW_TICK_US. A QP sits in at most one slot; a deadline
 * moved later is found when its slot comes round and the QP is put back
 * (re-arming on every packet sent costs a compare). */
#define SRNIC_TW_SLOTS 1024        /* power of two */
/* 1024 x 16 us: a 16 ms turn; later deadlines wait a turn. The tick is
 * this rounded down to a power of two of timer cycles (8 to 16 us). */
#define SRNIC_TW_TICK_US 16

TAILQ_HEAD(srnic_qp_list, srnic_qp);

struct srnic_twheel {
	uint8_t tick_shift;            /* a tick is 1 << tick_shift timer cycles */
	uint64_t cur;                  /* next tick to process */
	uint32_t nb_armed;             /* QPs in a slot (srnic_engine_waiting()) */
	struct srnic_qp_list slot[SRNIC_TW_SLOTS];
};

struct srnic_engine {
	struct srnic_dev *dev;
	uint16_t index;
	uint16_t queue;             /* RX/TX queue of the port */
	uint16_t port_id;
	/* held across each RX and TX burst when the PMD tears a connection
	 * down under them (DPDK 22.11's memif: lib/core/port.c); else NULL */
	rte_spinlock_t *burst_guard;
	_Atomic uint8_t running;    /* launched on a worker lcore */
	_Atomic uint8_t stop;
	unsigned int lcore;
	uint64_t now;               /* timer cycles, read once per poll */
	uint8_t last_poll_busy;     /* the previous poll moved a packet */
	uint64_t poll_gap;          /* timer cycles since the previous poll began */
	/* Quiescence for the control path: odd while inside srnic_engine_poll(). */
	_Atomic uint64_t poll_seq;
	struct rte_ring *redirect;  /* MP/SC: packets for our QPs from other engines' RX */
	/* MP/SC: QPs the application posted to or moved to ERR (each at most
	 * once: qp->sq.db_pending). The engine polls only QPs with work: */
	struct rte_ring *doorbell;
	/* MP/SC: destroyed QPs, unlinked and freed by the engine */
	struct rte_ring *graveyard;
	/* SP/MC of struct srnic_async_event: the engine's async events, read
	 * by srnic_get_async_event() */
	struct rte_ring *events;
	/* Engine-owned FIFO of the QPs with work, ENG_ACTIVE_SLOTS (each QP
	 * in it at most once: qp->active): a poll takes at most SRNIC_POLL_QPS
	 * from active_head, those with work left go back at active_tail. */
	struct srnic_qp **active;
	uint32_t active_head;
	uint32_t active_tail;
	uint8_t active_rotate;      /* engine-owned: last poll TX-bound, first QP runs last */
	struct srnic_twheel tw;
	/* QPs waiting for their peer's MAC, woken when the neighbour table
	 * changes (else by the wheel at their next ARP/ND retry) */
	struct srnic_qp *arp_wait[SRNIC_ARP_WAIT_MAX];
	uint32_t nb_arp_wait;
	uint64_t neigh_gen_seen;
	uint16_t tx_len;
	uint16_t tx_sealed;         /* tx_buf[0, tx_sealed) have their ICRC */
	/* a RoCEv2 frame queued since the last flush may be to our own MAC
	 * (its template's, or a UD destination's): that flush looks at each */
	uint8_t tx_loop_maybe;
	struct rte_mbuf *tx_buf[SRNIC_TX_BUF_SIZE];
	uint8_t tx_roce[SRNIC_TX_BUF_SIZE]; /* RoCEv2, to seal (not ARP/ND) */
	/* Engine-owned: RoCEv2 frames to our own MAC, taken out of tx_buf
	 * at the flush and received at the start of the next poll, which
	 * takes them all (so no flush finds it holding any). */
	uint16_t loop_len;
	struct rte_mbuf *loop_buf[SRNIC_TX_BUF_SIZE];
	/* What the port takes, set by port setup: segments per packet
	 * (more: linearised), and ol_flags for IPv4 packets (the PMD's
	 * IPv4 header checksum offload, when offered). */
	uint16_t tx_seg_max;
	uint64_t tx_ol_ipv4;
	uint64_t stats[SRNIC_STAT_COUNT];
} __rte_cache_aligned;

/* ---- neighbours ---- */

enum srnic_neigh_state {
	SRNIC_NEIGH_FREE,
	SRNIC_NEIGH_PENDING,        /* a QP asked: solicited, no MAC yet */
	SRNIC_NEIGH_LEARNED,        /* from a reply, or from a host that asked us */
	SRNIC_NEIGH_STATIC,         /* srnic_dev_add_neigh(): never evicted nor changed by the wire */
};

struct srnic_neigh {
	uint8_t ip[16];
	uint8_t ip_ver;
	uint8_t state;              /* enum srnic_neigh_state */
	uint8_t live;               /* a QP looked it up: only a QP's need evicts it */
	struct rte_ether_addr mac;
	uint64_t last_used;         /* dev->neigh_clock at the last lookup or learn (LRU) */
	/* srnic_dev_resolve_neigh(): an engine is to solicit it (ask), not
	 * before ask_next_tsc again (SRNIC_ARP_RETRY_MS apart) */
	uint8_t ask;
	uint64_t ask_next_tsc;
	uint64_t solicit_tsc;       /* the last request or solicitation sent for it (rate limit) */
};

/* ---- multicast groups ---- */

/*
 * A multicast group with QPs attached (mcast.c). Immutable once published
 * in dev->mcast: an attach or a detach builds a new one, swaps the pointer
 * and frees the old one after a quiesce, so engines read it with no lock.
 * Its QPs cannot be destroyed while attached (srnic_destroy_qp(): -EBUSY).
 */
struct srnic_mcast_grp {
	union ibv_gid mgid;
	struct rte_ether_addr mac;  /* 01:00:5e:.. / 33:33:.. from mgid */
	uint16_t nb_qp;
	struct srnic_qp *qp[SRNIC_MAX_MCAST_QP_ATTACH];
};

/* ---- the device ---- */

/* What the port's watch did (srnic_dev_stat() names: port.c). */
enum srnic_port_stat {
	SRNIC_PORT_STAT_RESTART,        /* memif client stopped and started (down) */
	SRNIC_PORT_STAT_MTU_CHANGE,     /* the port's MTU changed */
	SRNIC_PORT_STAT_MTU_QP_ERR,     /* live QPs to ERR: path MTU above the new one */
	SRNIC_PORT_STAT_RESTART_HELD,   /* memif client down, its connection under way: left */
	SRNIC_PORT_STAT_MEMIF_CC_PURGED, /* memif's stale control source removed (the process's) */
	SRNIC_PORT_STAT_HOLD_EXPIRED,   /* restarted after SRNIC_PORT_HOLD_MS under way */
	SRNIC_PORT_STAT_COUNT
};

struct srnic_pd {
	struct srnic_dev *dev;
	_Atomic uint32_t refs;
};

struct srnic_dev {
	char name[32];
	uint16_t port_id;
	uint16_t nb_engines;
	uint16_t mtu;
	uint16_t read_inline_max;   /* srnic_dev_conf.read_inline_max */
	uint8_t ip_ver;
	uint8_t ip[16];
	struct rte_ether_addr mac;
	union ibv_gid gid[SRNIC_GID_TBL_LEN];
	uint8_t nb_gid;             /* entries in use: 2, or 3 with SRNIC_DEV_CONF_IP6 */
	struct rte_mempool *pool;       /* header and RX mbufs */
	struct rte_mempool *ext_pool;   /* zero-copy attachments (no data room) */
	struct rte_mempool *rx_pool;    /* RX descriptors */
	struct rte_mempool *tx_copy_pool; /* TX copies: linearised, READ retry, zero-copy fallback, UD/UC payload */
	srnic_host_rx_cb host_rx;
	void *host_rx_arg;
	struct srnic_engine *engines[SRNIC_MAX_ENGINES_PER_DEV];

	/* live objects: srnic_dev_destroy() is -EBUSY while any */
	_Atomic uint32_t nb_pd;
	_Atomic uint32_t nb_cq;
	_Atomic uint32_t nb_mr;
	_Atomic uint32_t nb_qp;
	_Atomic uint32_t nb_ah;     /* address handles: at most SRNIC_MAX_AH */
	_Atomic uint32_t nb_srq;
	_Atomic uint32_t obj_gen;       /* incarnations of QPs, SRQs, CQs: the last given */

	rte_spinlock_t lock;            /* control path: tables below */
	struct srnic_qp **qp_tbl;       /* by QPN - SRNIC_QPN_BASE */
	/* QPNs below SRNIC_QPN_BASE: 1, the GSI QP (SRNIC_QP_INIT_ATTR_GSI,
	 * rdma_cm's CM MADs); 0 never (no SMI on Ethernet) */
	struct srnic_qp *qp_special[SRNIC_QPN_BASE];
	uint32_t qp_next;
	struct srnic_mr **mr_tbl;       /* by key index; entries read by engines */
	uint8_t *mr_gen;
	uint32_t mr_next;
	struct srnic_mw **mw_tbl;       /* by key index - SRNIC_MW_KEY_BASE; read by engines */
	uint32_t mw_next;
	_Atomic uint32_t nb_mw;
	/* live SRQs and CQs, by number: srnic_get_async_event() checks an
	 * event's object is still there (under lock) before handing it out */
	struct srnic_srq **srq_tbl;
	uint32_t srq_next;
	struct srnic_cq **cq_tbl;
	uint32_t cq_next;

	/* async events: the engines' rings (eng->events) and this MP/MC one
	 * for what the control path finds (port events); event_fd is written
	 * by an engine when it queues an event */
	struct rte_ring *events;
	int event_fd;
	uint8_t link_up;                /* last link state seen (port events) */
	_Atomic uint8_t link_ever_up;   /* up once since creation (query_port's phys_state) */
	uint64_t link_check_tsc;        /* next time to read it */
	/* the port's watch (port.c), under lock but port_paused and the stats */
	uint16_t mtu_conf;              /* the MTU srnic_dev_create() settled on */
	uint16_t port_mtu;              /* the port's, last seen (0: it has none) */
	/* the kernel interface under an af_packet or pcap port, whose MTU
	 * the kernel changes (those PMDs report the one they were set to):
	 * a socket for SIOCGIFMTU on it (-1: not such a port) */
	int port_if_fd;
	char port_ifname[16];           /* IFNAMSIZ */
	uint8_t port_restartable;       /* a memif client: down, it is started again */
	const void *memif_pmd;          /* its PMD's private head (port.c), or NULL */
	uint8_t port_restarting;        /* a watcher is stopping and starting it */
	uint64_t port_restart_tsc;      /* not before this */
	uint64_t port_hold_tsc;         /* first left with its connection under way, or 0 */
	_Atomic uint8_t port_paused;    /* engines: no RX/TX burst (read once per poll) */
	_Atomic uint64_t port_stats[SRNIC_PORT_STAT_COUNT];

	/* multicast groups (mcast.c): slots written under mcast_lock, read by
	 * engines; nb_mcast_grp 0 lets the receive path skip the table */
	rte_spinlock_t mcast_lock;
	_Atomic uint32_t nb_mcast_grp;
	uint8_t mcast_allmulti;         /* the port could not filter: all multicast on */
	struct srnic_mcast_grp *mcast[SRNIC_MAX_MCAST_GRP];

	rte_spinlock_t neigh_lock;
	struct srnic_neigh neigh[SRNIC_NEIGH_MAX];
	uint64_t neigh_clock;           /* under neigh_lock: ticks per lookup/learn, for LRU */
	_Atomic uint64_t neigh_gen;     /* bumped on every update: wakes QPs waiting for a MAC */
	_Atomic uint32_t neigh_ask;     /* set (under neigh_lock) with an entry's ask: the next engine to poll solicits */
};

/* ---- helpers shared by control path and engines ---- */

/* The index of the device's GID equal to the 16 bytes at g (an IPv6
 * address, or an IPv4 one as ::ffff:a.b.c.d), or -1: whether an address is
 * ours. Off the IPv4 fast path: IPv4 frames compare dev->ip. */
static inline int
srnic_dev_gid_find(const struct srnic_dev *dev, const uint8_t *g)
{
	int i;

	/* the entries in use: an empty one (all zero) is no address of ours */
	for (i = 0; i < dev->nb_gid; i++)
		if (memcmp(dev->gid[i].raw, g, 16) == 0)
			return i;
	return -1;
}

/* Whether index names a GID of the device (in the table and in use). */
static inline bool
srnic_dev_gid_valid(const struct srnic_dev *dev, unsigned int index)
{
	return index < dev->nb_gid;
}

static inline struct srnic_qp *
srnic_dev_qp(const struct srnic_dev *dev, uint32_t qpn)
{
	uint32_t i = qpn - SRNIC_QPN_BASE;

	if (unlikely(i >= SRNIC_MAX_QP))
		return qpn < SRNIC_QPN_BASE ?
		       __atomic_load_n(&dev->qp_special[qpn], __ATOMIC_ACQUIRE) : NULL;
	return __atomic_load_n(&dev->qp_tbl[i], __ATOMIC_ACQUIRE);
}

enum srnic_key_err {
	SRNIC_KEY_OK,
	SRNIC_KEY_BAD,              /* no such key (or stale generation) */
	SRNIC_KEY_PD,               /* another PD */
	SRNIC_KEY_ACCESS,           /* access flags do not allow it */
	SRNIC_KEY_BOUNDS,           /* outside the region */
};

/* Look up a key and check access over [va, va + len), addresses as SGEs
 * and peers name them (srnic_mr_at() gives the pointer). Engine context. */
static inline enum srnic_key_err
srnic_mr_check(const struct srnic_dev *dev, const struct srnic_pd *pd, uint32_t key,
	       int access, uint64_t va, uint64_t len, struct srnic_mr **out)
{
	uint32_t i = SRNIC_MR_KEY_INDEX(key);
	struct srnic_mr *mr;
	uint64_t start;

	if (unlikely(i >= SRNIC_MAX_MR))
		return SRNIC_KEY_BAD;
	mr = __atomic_load_n(&dev->mr_tbl[i], __ATOMIC_ACQUIRE);
	if (unlikely(mr == NULL || mr->key != key))
		return SRNIC_KEY_BAD;
	if (unlikely(mr->pd != pd))
		return SRNIC_KEY_PD;
	if (unlikely((mr->access & access) != access))
		return SRNIC_KEY_ACCESS;
	start = mr->va;
	if (unlikely(va < start || len > mr->length || va - start > mr->length - len))
		return SRNIC_KEY_BOUNDS;
	*out = mr;
	return SRNIC_KEY_OK;
}

/* The pointer to an address of mr's (its va space) that a key check passed. */
static inline void *
srnic_mr_at(const struct srnic_mr *mr, uint64_t va)
{
	return (void *)(uintptr_t)(va + mr->va_off);
}

static inline uint32_t
srnic_mtu_bytes(enum ibv_mtu m)
{
	return 128u << m;  /* IBV_MTU_256 == 1 */
}


/* Wait until no engine of dev is inside a poll that began before this call. */
void srnic_dev_quiesce(struct srnic_dev *dev);

/* port.c: the port's watch (control path; doc in port.c). */
void srnic_dev_port_init(struct srnic_dev *dev);
void srnic_dev_port_fini(struct srnic_dev *dev);
void srnic_dev_port_watch(struct srnic_dev *dev);
int64_t srnic_dev_port_stat(const struct srnic_dev *dev, const char *name);

/* Set by srnic_engine_poll() for its duration (per thread). Initial-exec:
 * in libibverbs.so.1 the default model costs a __tls_get_addr() call per
 * access, three per poll; this one is a load from the static TLS block
 * (glibc keeps room there for a dlopen()ed library's few bytes). */
#define SRNIC_TLS_IE __attribute__((tls_model("initial-exec")))
extern _Thread_local const struct srnic_dev *srnic_poll_dev SRNIC_TLS_IE;

/* Is this thread inside a poll of one of dev's engines? A quiesce would
 * wait for our own poll to end: the control path answers -EDEADLK. */
static inline bool
srnic_dev_in_poll(const struct srnic_dev *dev)
{
	return srnic_poll_dev == dev;
}
/* A new incarnation number for a QP, SRQ or CQ (never 0). */
static inline uint32_t
srnic_dev_next_gen(struct srnic_dev *dev)
{
	uint32_t g = atomic_fetch_add_explicit(&dev->obj_gen, 1, memory_order_relaxed) + 1;

	return g != 0 ? g : atomic_fetch_add_explicit(&dev->obj_gen, 1, memory_order_relaxed) + 1;
}

/* Remove every CQE of qp from cq (engines quiesced for qp: it produces no
 * more). Control path; takes cq->poll_lock. */
void srnic_cq_clean(struct srnic_cq *cq, const struct srnic_qp *qp);

/* mcast.c: whether qp is attached to a group (srnic_destroy_qp() refuses it). */
bool srnic_qp_mcast_busy(struct srnic_qp *qp);
/* The Ethernet address of a multicast group's GID. */
void srnic_mcast_mac(const union ibv_gid *mgid, struct rte_ether_addr *mac);

/* DPDK telemetry (/srnic/devs, /srnic/stats,<dev>) sees the device. */
void srnic_telemetry_add(struct srnic_dev *dev);
void srnic_telemetry_del(struct srnic_dev *dev);

#endif /* SRNIC_RNIC_H */
