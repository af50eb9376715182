/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNICD_H
#define SRNICD_H

/*
 * srnicd: the service that owns one or more DPDK ports, an srnic device on each and
 * the lcores of its engine, and serves the host's processes through a
 * control socket (doc/srnicd.md). main.c: options, EAL, the device, the
 * control thread's loop; engine.c: the engine's thread; session.c: the
 * control socket and its sessions.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "srnic_svc.h"

#define SRND_SESSIONS_MAX 64        /* sessions at once; one more is closed at accept */
/* (QP, group) multicast attachments one session holds at once: the
 * device's groups (SRNIC_MAX_MCAST_GRP) are the host's, so no program
 * takes them all; ibv_query_device attached reports it as max_mcast_grp
 * and max_total_mcast_qp_attach, one past it is ENOMEM (as rxe past its
 * max_mcast_grp) */
#define SRND_SESSION_MCAST_MAX 16
#define SRND_PORT_WATCH_MS 100      /* the control thread's look at the link */
#define SRND_CM_POLL_US 200         /* the engine thread polls the CM at least this often */
/* The engine's thread spins while packets move and for SRND_SPIN_US after
 * the last, then sleeps in steps from SRND_SLEEP_MIN_US doubling to
 * SRND_SLEEP_MAX_US, never past the CM's next timer. The device serves
 * only QP1 (UD: no ACK timer) until sessions hold QPs of their own (the
 * data path), so a packet that arrives meanwhile (an ARP request, a CM
 * REQ, whose peers wait seconds) waits at most that long. An idle poll
 * costs ~150 us of CPU in the ASan build (most of it the engine's timer
 * wheel stepping over every slot the nap skipped): 1 ms steps took 2.6%
 * of a core, 10 ms 1.3%, 20 ms below 1% (test srnicd measures it). */
#define SRND_SPIN_US 2000
/* ... of which the first SRND_SPIN_HOT_US spin in place; after it each
 * empty pass gives the CPU away (sched_yield()): the thread that will
 * post the next WQE or poll the next CQE may be waiting for this very CPU
 * (the program's, or the peer daemon's engine on a host of few cores) */
#define SRND_SPIN_HOT_US 50
#define SRND_SLEEP_MIN_US 20
#define SRND_SLEEP_MAX_US 20000
/* While sessions hold QPs the engine naps at most this long: the ACK and
 * RNR timers' resolution while nothing moves (a doorbell wakes it at once,
 * srnd_dpath_sleep()) */
#define SRND_SLEEP_DP_MAX_US 10000
/* The spin ends only after SRND_SPIN_US AND this many of its yields found
 * nothing to do: time alone counted the spells this thread spent
 * preempted (a loaded host: the program or the peer's engine on the
 * CPU for a slice of ms) as idle, and it napped in the middle of a stream
 * with nothing to end the nap but its timeout (a packet from the network
 * does not). */
#define SRND_SPIN_YIELDS 64
/* ... but never past SRND_SPIN_MAX_US: on a CPU another busy thread
 * shares, 64 yields took 170-500 ms (a slice each), longer than an ACK
 * timeout, and the engine never napped while its QPs waited */
#define SRND_SPIN_MAX_US 8000
/* While QPs wait for the network (srnic_engine_waiting(): an ACK, a READ's
 * response, an RNR wait) the engine's naps stay at SRND_SLEEP_WAIT_US, for
 * SRND_WAIT_WATCH_US after the last packet moved: the answer ends no nap,
 * so a nap's length is what it adds to that QP's round trip. Past the
 * watch (a dead or stopped peer: the retransmit timers run in ms to s)
 * the naps grow as when idle. */
#define SRND_SLEEP_WAIT_US 50
#define SRND_WAIT_WATCH_US 100000
/* The engine thread's timer slack (prctl PR_SET_TIMERSLACK, in ns): a
 * nap of SRND_SLEEP_WAIT_US with Linux's default slack (50 us) lasted up
 * to twice as long */
#define SRND_TIMER_SLACK_NS 1000
/* A wake owed to a poller asleep on the engine's CPU (svc_state_line.poll_cpu)
 * waits for the engine's first pass with nothing to do, or for this many
 * passes in a row that wrote none of its session's CQEs: an engine kept
 * busy by another session's traffic never has an idle pass, and the
 * sleeper would wait out its own timeout (the library's SVA_POLL_SLEEP_US,
 * 100 us) for every CQE. Passes, not time: a busy host preempts the engine
 * for whole time slices, after which a time bound has always expired; and
 * a session whose own CQEs keep coming (its READ stream) is left to take
 * them all at its timeout, the deferral's point (doc/srnicd.md, "A
 * sleeping poller") */
#define SRND_WAKE_DEFER_PASSES 2
#define SRND_DEREG_TIMEOUT_US 1000000  /* DEREG_MR: in-flight mbufs over the range */
#define SRND_RECLAIM_DEREG_TRIES 10    /* a session's end: waits for an MR's packets */
#define SRND_DEFAULT_MEM_MB 256
#define SRND_DEFAULT_MTU 1500
#define SRND_DEV_NAME "srnic%u"   /* device i of the daemon's: its --port's order */
#define SRND_GROUP_DEFAULT "srnic"  /* may attach, if the group exists */

struct srnic_dev;
struct srnic_engine;
struct srnic_cm;

/* What the daemon serves: a device on each port (SVC_DEVICES_MAX at
 * most), every one served by the one engine thread (engine.c). */
struct srnd_dev {
	unsigned int idx;           /* its index in srnd.dev[]: LIST_DEVICES' index */
	struct srnic_dev *sdev;
	struct srnic_engine *eng;
	struct srnic_cm *cm;
	uint16_t port_id;
	char devargs[512];
	char netdev[SVC_NETDEV_MAX];  /* the port's kernel interface, "" when none */
	char name[SVC_NAME_MAX];
	char ip[64];
	int link_up;                /* as last seen by the port's watch; -1 unknown */
};

struct srnd {
	struct srnd_dev dev[SVC_DEVICES_MAX];
	unsigned int nb_devs;
	char sock_path[SVC_SOCK_PATH_MAX];
	int listen_fd;
	atomic_bool stop;
	/* the engine's thread */
	unsigned int eng_lcore;     /* a worker lcore, or RTE_MAX_LCORE: a pthread */
	pthread_t eng_thread;
	_Atomic unsigned int eng_thread_lcore; /* its lcore id on a thread (rte_thread_register()) */
#define SRND_LCORE_STARTING (RTE_MAX_LCORE + 1) /* eng_thread_lcore before it registers */
	bool eng_started;
	_Atomic uint64_t eng_polls, eng_naps, eng_yields, eng_woken;
	_Atomic uint64_t eng_waiting_naps; /* naps kept short: QPs wait (SRND_SLEEP_WAIT_US) */
	_Atomic uint64_t eng_poll_wakes;  /* programs' pollers woken (svc_state_line.poll_sleep) */
	_Atomic uint64_t eng_handoffs;    /* the CPU given to them (sched_yield()) right after */
	_Atomic uint64_t eng_wakes_deferred; /* CQEs for a poller asleep on the engine's CPU */
	bool eng_wake_owed;         /* a session's wake_owed: srnd_dpath_wake_owed() when idle */
	_Atomic uint64_t eng_wakes_bounded; /* owed wakes paid by the passes bound, found one */
	_Atomic uint64_t eng_wakes_mixed;   /* poll_cpu mixed: woken at once, found one */
	_Atomic uint64_t eng_poll_none;   /* poll_sleep found 1 with no poller asleep: no handoff */
	_Atomic uint64_t eng_gen;   /* +1 at the end of every pass of the engine's loop */
	_Atomic uint64_t eng_sq_posts; /* srnic_post_send() calls of the data path that took a WQE (a burst each) */
	_Atomic uint64_t eng_sq_full;  /* times an SQ's WQEs waited: srnic's SQ full (no room, ENOMEM) */
	_Atomic uint64_t eng_ring_flushed; /* a failed QP's ring WQEs the daemon completed */
	/* idle CPU: the process's CPU time and the clock when it was ready */
	uint64_t ready_cpu_us, ready_wall_us;
};

/* engine.c */
int srnd_engine_start(struct srnd *d);
void srnd_engine_stop(struct srnd *d);
/* Return once the engine's pass that was running (if any) is over: what
 * was unpublished before the call is out of its sight. */
void srnd_engine_quiesce(struct srnd *d);

/* objects.c: a session's verbs objects and rings */
struct srnd_objs;
/* the daemon's totals (status): what every session holds */
struct srnd_counts {
	uint64_t pds, cqs, mrs, mr_bytes, shm_bytes, ahs, srqs, mws;
	uint64_t mrs_elsewhere;     /* MRs ever mapped elsewhere than the program's addresses */
	/* events given to sessions, and dropped: a full ring, a session ending */
	uint64_t async_events, async_drop;
	_Atomic uint64_t qps;
	_Atomic uint64_t bad_ring;  /* a bad index or WQE in a session's ring (its QP to ERR) */
	_Atomic uint64_t mrs_dereg_waiting; /* waits for MR packets in flight now: dereg, rereg, sweep */
	/* wakes a session's notification pipe (a channel's, the async one)
	 * did not take, never waited for: full (its reader has a wake
	 * pending), or its read end closed by the program (no reader) */
	_Atomic uint64_t wake_full, wake_closed;
	/* old MR objects whose packets outlived the wait (a rereg's old
	 * object, an MR at a session's end): their ranges still mapped, in
	 * mr_bytes (a range shared with a live MR or another retired object
	 * counted once), until the control thread's sweep finds srnic done
	 * with them */
	uint64_t mrs_retired;
	/* MRs whose dereg failed at a session's end other than for packets
	 * in flight (a bug): left registered and mapped for good */
	uint64_t mrs_dereg_failed;
	/* requests refused for naming objects of two devices (a QP's PD and
	 * CQs, an MR's PD and the one a rereg gives it): -EINVAL */
	uint64_t dev_mixed;
};
const struct srnd_counts *srnd_counts(void);
struct srnd_objs *srnd_objs_new(void);
/* Serve a checked data-path request (SVC_MAP_SHM and after): its status.
 * *rx_fd is the descriptor that came with it (consumed: -1 after);
 * tx_fd[0] one to send with the reply that the daemon keeps, tx_fd[1] one
 * it hands over (closed once sent), each -1 for none. */
union srnd_rep;
/* dv: the device the request's open handle names (MAP_SHM, ALLOC_PD,
 * CREATE_CQ, CREATE_CHANNEL), NULL for those that name objects: those
 * are their PD's or CQ's device, and a QP whose PD and CQs (and SRQ) are
 * of different devices is -EINVAL. */
int srnd_objs_serve(struct srnd *d, struct srnd_dev *dv, struct srnd_objs *o, const void *msg,
		    union srnd_rep *rep, int *rx_fd, int *tx_fd);
/* The devices the session holds open (bit i: d->dev[i]): a port's event
 * goes to the sessions that hold its device */
void srnd_objs_set_devices(struct srnd_objs *o, uint32_t mask);
void srnd_objs_reclaim(struct srnd *d, struct srnd_objs *o);
/* The daemon's clean stop, first: the session's rings out of the engine's
 * sight (an srnd_engine_quiesce() after makes them final; the engine runs
 * on to serve the reclaim: DREQs, the MRs' in-flight packets) */
void srnd_objs_hide(struct srnd_objs *o);
/* Then, its rings final: FATAL in the session's state line, and a byte
 * into each of its completion channels' pipes and its async pipe (a
 * waiter in ibv_get_cq_event wakes to its end) */
void srnd_objs_fatal(struct srnd_objs *o);
/* The control thread: one of srnic's async events to the session of its
 * object (its QP, CQ or SRQ), a port's to every session holding its device open
 * or objects of it. */
struct srnic_async_event;
void srnd_objs_async(const struct srnd_dev *dv, const struct srnic_async_event *ev);
/* The control thread's look at its sessions (with the port's): an SRQ
 * the engine put in error is told to its session (IBV_EVENT_SRQ_ERR); old
 * MR mappings srnic is done with unmapped. */
void srnd_objs_watch(void);
/* The daemon's stop, the sessions gone and the engine still running: the
 * old mappings left waited for (SRND_DEREG_TIMEOUT_US each), unmapped */
void srnd_objs_retired_drain(void);
/* objects held (all kinds), of which QPs and MRs; the WQEs taken from its rings */
unsigned int srnd_objs_held(const struct srnd_objs *o, unsigned int *qps, unsigned int *mrs,
			    uint64_t *wqes);
/* The session's QP of device dv whose number a CM message names (REQ,
 * REP, SIDR_REP), its type and state; -EINVAL if no live QP of the session
 * on dv has that number (QPNs are each device's: another device's QP of
 * the same number is not it). The control thread's, as every handle's check. */
int srnd_objs_qp_by_num(struct srnd_objs *o, const struct srnd_dev *dv, uint32_t qpn,
			enum ibv_qp_type *type, enum ibv_qp_state *state);
/* the engine's thread: every live session's rings; the work done */
unsigned int srnd_dpath_poll(struct srnd *d);
int srnd_dpath_sleep(struct srnd *d, unsigned int us, bool waiting);
/* the wakes of pollers asleep on the engine's CPU, owed since a pass that
 * wrote their CQEs: at the engine's first pass with nothing to do (or
 * SRND_WAKE_DEFER_PASSES passes after their session's last CQE,
 * srnd_dpath_poll()) */
void srnd_dpath_wake_owed(struct srnd *d);

/* session.c */
/* Whether a daemon answers on d's socket already (asked before EAL takes
 * the port). */
bool srnd_socket_taken(const struct srnd *d);
int srnd_sessions_listen(struct srnd *d, const char *group);
/* epoll: the listening socket and every session are added to epfd */
int srnd_sessions_accept(struct srnd *d, int epfd);
/* a session's fd is readable or hung up: serve it (or close it) */
void srnd_session_event(struct srnd *d, int epfd, void *session, uint32_t events);
void srnd_sessions_close_all(struct srnd *d);
/* before the clean stop closes them (its engine still running): every
 * session's rings hidden from the engine, a quiesce, then srnd_objs_fatal()
 * of each */
void srnd_sessions_fatal(struct srnd *d);
unsigned int srnd_sessions_count(void);
/* The largest request: a longer one is malformed (MSG_TRUNC tells). */
#define SRND_REQ_MAX 512

/* Every reply the daemon gives. */
union srnd_rep {
	struct svc_hdr h;
	struct svc_hello_rep hello;
	struct svc_list_rep list;
	struct svc_handle_rep handle;
	struct svc_query_device_rep qdev;
	struct svc_query_port_rep qport;
	struct svc_query_gid_rep qgid;
	struct svc_status_rep status;
	struct svc_shm_rep shm;
	struct svc_reg_mr_rep reg_mr;
	struct svc_create_cq_rep create_cq;
	struct svc_create_qp_rep create_qp;
	struct svc_query_qp_rep query_qp;
	struct svc_cm_qp_attr_rep cm_qp_attr;
	struct svc_create_srq_rep create_srq;
	struct svc_query_srq_rep query_srq;
	struct svc_init_ah_rep init_ah;
	struct svc_alloc_mw_rep alloc_mw;
};

/* cm.c: rdma_cm in the daemon, a session's CM ids (doc/srnicd.md section 7) */
struct srnd_cm;
/* Serve a checked SVC_CM_* request of session s (the device handle of
 * CM_OPEN, CM_CREATE_ID, CM_CREATE_LISTEN and CM_RESOLVE checked by the caller): its status.
 * *cm is the session's (made by CM_OPEN); every QP a message names must be
 * its process's (srnd_session_qp_by_num()); *tx_fd gets the event socket's
 * end to send with CM_OPEN's reply. */
struct srnd_session;
/* dv: the device CM_CREATE_ID, CM_CREATE_LISTEN or CM_RESOLVE's handle names
 * (an id is that device's for good: its CM, its GIDs); NULL for the rest */
int srnd_cm_serve(struct srnd *d, struct srnd_dev *dv, const struct srnd_session *s,
		  struct srnd_cm **cm, const void *msg, union srnd_rep *rep, int *tx_fd);
/* A session's end (section 8, step 2): its ids destroyed, as the kernel's
 * ucma_close() (DREQ, DREP, REJ, listeners gone), then cm freed. */
void srnd_cm_reclaim(struct srnd_cm *cm);
/* ids a session holds; NULL: every session's */
unsigned int srnd_cm_ids(const struct srnd_cm *cm);
/* status' "cm" line: ids, then the CM's counters (lib/cm's names) summed
 * over the devices */
size_t srnd_cm_status(const struct srnd *d, char *t, size_t n);

struct srnd_session;
/* What status and telemetry say of one session */
struct srnd_session_info {
	uint32_t id;
	pid_t pid;
	uid_t uid;
	char prog[SVC_PROG_MAX];
	unsigned int devices_open, qps, mrs, cm_ids;
	uint32_t devices;           /* the daemon's devices it holds open, bit i: dev[i] */
	uint64_t wqes, msgs;
};
/* The session in slot (0..SRND_SESSIONS_MAX-1), if any, into *si */
bool srnd_session_info(unsigned int slot, struct srnd_session_info *si);
/* sessions closed for a malformed message */
uint64_t srnd_sessions_closed_bad(void);
struct ibv_port_attr;
const char *srnd_port_state_name(const struct ibv_port_attr *pa);
/* A session on socket fd (its credentials are the accept's to fill). */
struct srnd_session *srnd_session_new(int fd);
void srnd_session_free(struct srnd_session *s);
/* The QP of device dv numbered qpn of s's process (s's own objects, then
 * those of every session of the same peer pid), its type and state;
 * -EINVAL if none: a CM message may name no other's (the control thread's). */
int srnd_session_qp_by_num(const struct srnd_session *s, const struct srnd_dev *dv,
			   uint32_t qpn, enum ibv_qp_type *type, enum ibv_qp_state *state);
/* One received message of n bytes: checked, then served into rep (its
 * h.len is the reply's length). NULL, or why the session must be closed
 * (rep is then not to be sent). No socket: the control fuzz target
 * drives it too. */
const char *srnd_session_input(struct srnd *d, struct srnd_session *s, const void *buf, size_t n,
			       union srnd_rep *rep);
/* the tag epoll carries for the listening socket and the signalfd */
extern char srnd_tag_listen, srnd_tag_signal;

/* telemetry.c: what status says, through DPDK telemetry (/srnicd/...).
 * Its callbacks run on DPDK's telemetry thread and read the control
 * thread's state under the control lock, which the control thread holds
 * while it serves and releases while it waits. */
void srnd_ctl_lock(void);
void srnd_ctl_unlock(void);
/* A wait of the control thread that changes nothing telemetry reads (a
 * DEREG_MR's for the MR's packets in flight): the control lock let go
 * around it, if this thread held it (true: taken again at the end) */
bool srnd_ctl_wait_begin(void);
void srnd_ctl_wait_end(bool held);
/* the callbacks answer for d from now on; NULL: no more (-ENODEV) */
void srnd_telemetry_set(struct srnd *d);

/* main.c */
uint64_t srnd_cpu_us(void);
uint64_t srnd_wall_us(void);
void srnd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define SRND_CONFIG_LINES_MAX 32  /* settings in a --config file */
#define SRND_CONFIG_LINE_MAX 640  /* its longest line (a --port's devargs fit) */
#define SRND_LOCK_SUFFIX ".lock"   /* beside the socket: held by its daemon */
int srnd_lock(const char *sock_path);

#endif /* SRNICD_H */
