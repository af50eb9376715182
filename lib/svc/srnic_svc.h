/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * srnicd's control protocol (doc/srnicd.md, "Control protocol"): what the
 * daemon (app/srnicd) and the attached side of srnic's libibverbs.so.1
 * (drivers/verbs/verbs_attach.c) say to each other over a unix
 * SOCK_SEQPACKET socket, one message per packet.
 *
 * Every message is a struct svc_hdr and the type's fixed body; its len is
 * the whole message and must be exactly the type's size
 * (svc_msg_size()). A reply repeats the request's type and seq and carries
 * status 0 or a negative errno. The receiver checks a message with
 * svc_msg_check() before it reads any field of the body.
 *
 * libc and rdma-core's <infiniband/verbs.h> types only: the floor below
 * every other (no DPDK, no srnic object), so both sides may include it.
 */
#ifndef SRNIC_SVC_H
#define SRNIC_SVC_H

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#define SVC_MAGIC 0x534e5244u          /* "SNRD" */
#define SVC_VERSION_MAJOR 4            /* a HELLO of another major is refused */
#define SVC_VERSION_MINOR 5            /* 1: CM_CREATE_LISTEN; 2: ALLOC_MW, DEALLOC_MW, the bind WQE, REREG_MR;
					  3: CREATE_CHANNEL and MAP_SHM reply with the daemon's pipes;
					  the state line's eng_cpu and poll_cpu;
					  4: poll_cpu's SVC_POLL_CPU_MIXED, the daemon's 0;
					  5: the state line's sleep SVC_SLEEP_WAITING */
#define SVC_SOCK_DEFAULT "/run/srnic/srnicd.sock"
#define SVC_SOCK_ENV "SRNIC_DAEMON_SOCKET"  /* the application's override */
#define SVC_SOCK_PATH_MAX 108          /* sockaddr_un.sun_path */
#define SVC_DEVICES_MAX 8              /* devices a daemon serves */
#define SVC_SESSION_DEVICES_MAX 16     /* OPEN_DEVICE handles per session */
#define SVC_NAME_MAX 64                /* a device's name, with its NUL */
#define SVC_PROG_MAX 16                /* a program's name (comm), with its NUL */
#define SVC_NETDEV_MAX 16              /* a kernel interface's name (IF_NAMESIZE), with its NUL */
#define SVC_STATUS_TEXT_MAX 16384      /* the STATUS reply's text */
#define SVC_MSG_MAX (sizeof(struct svc_hdr) + SVC_STATUS_TEXT_MAX)
#define SVC_MSG_FDS_MAX 2              /* descriptors one reply carries (MAP_SHM's); a request: 1 */

enum svc_type {
	SVC_HELLO = 1,
	SVC_LIST_DEVICES,
	SVC_OPEN_DEVICE,
	SVC_CLOSE_DEVICE,
	SVC_QUERY_DEVICE,
	SVC_QUERY_PORT,
	SVC_QUERY_GID,
	SVC_STATUS,
	/* the data path: objects, the session's ring memory, registered memory */
	SVC_MAP_SHM,
	SVC_ALLOC_PD,
	SVC_DEALLOC_PD,
	SVC_REG_MR,
	SVC_DEREG_MR,
	SVC_CREATE_CQ,
	SVC_DESTROY_CQ,
	SVC_CREATE_QP,
	SVC_MODIFY_QP,
	SVC_QUERY_QP,
	SVC_DESTROY_QP,
	SVC_CREATE_CHANNEL,
	SVC_DESTROY_CHANNEL,
	/* rdma_cm in the daemon (doc/srnicd.md section 7): the ids of a
	 * session, their CM calls, the events on the socket CM_OPEN gives */
	SVC_CM_OPEN,
	SVC_CM_CREATE_ID,
	SVC_CM_DESTROY_ID,
	SVC_CM_LISTEN,
	SVC_CM_SEND,
	SVC_CM_STATE,
	SVC_CM_INIT_QP_ATTR,
	SVC_CM_RESOLVE,
	SVC_CM_EVENT,               /* the daemon's, on the event socket only */
	/* UD address handles, SRQs; async events come through MAP_SHM's ring */
	SVC_CREATE_AH,
	SVC_DESTROY_AH,
	SVC_CREATE_SRQ,
	SVC_MODIFY_SRQ,
	SVC_QUERY_SRQ,
	SVC_DESTROY_SRQ,
	SVC_INIT_AH_FROM_WC,
	/* registrations that share pages: REG_MR at an offset of the memfd */
	SVC_REG_MR_AT,
	/* a UD QP in a multicast group (ibv_attach_mcast/ibv_detach_mcast) */
	SVC_ATTACH_MCAST,
	SVC_DETACH_MCAST,
	/* rdma_listen() in one round trip (minor 1): CM_CREATE_ID and
	 * CM_LISTEN at once, so a REQ that follows the listener's own
	 * announcement of its port finds it (doc/rdmacm.md) */
	SVC_CM_CREATE_LISTEN,
	/* memory windows (ibv_alloc_mw/ibv_dealloc_mw); bound, invalidated
	 * through the SQ (svc_wqe.bind, invalidate_rkey) */
	SVC_ALLOC_MW,
	SVC_DEALLOC_MW,
	/* ibv_rereg_mr: a registration's new range, PD or access */
	SVC_REREG_MR,
	SVC_TYPE_END,
};

struct svc_hdr {
	uint16_t type;              /* enum svc_type */
	uint16_t flags;             /* SVC_F_REPLY in a reply */
	uint32_t len;               /* the whole message, header included */
	uint32_t seq;               /* chosen by the requester, repeated in the reply */
	int32_t status;             /* reply: 0 or a negative errno; request: 0 */
};

#define SVC_F_REPLY 0x1

struct svc_hello_req {
	struct svc_hdr h;
	uint32_t magic;             /* SVC_MAGIC */
	uint16_t major, minor;
	uint32_t pid;               /* informational: the daemon trusts SO_PEERCRED */
	char prog[SVC_PROG_MAX];
};

struct svc_hello_rep {
	struct svc_hdr h;
	uint16_t major, minor;
	uint32_t session;           /* the daemon's id of this session */
	uint32_t nb_devices;
};

struct svc_list_req {
	struct svc_hdr h;
};

struct svc_dev_info {
	char name[SVC_NAME_MAX];
	uint64_t guid;              /* node GUID, network order as ibv_get_device_guid() */
	uint32_t index;
	uint32_t pad;
	/* the kernel network interface the device's port sends on (af_packet's
	 * or pcap's iface=), "" when it has none (memif, a PCI device, ring):
	 * what /sys/class/infiniband/<name>/device/net/ lists */
	char netdev[SVC_NETDEV_MAX];
};

struct svc_list_rep {
	struct svc_hdr h;
	uint32_t nb;
	uint32_t pad;
	struct svc_dev_info dev[SVC_DEVICES_MAX];
};

struct svc_open_req {
	struct svc_hdr h;
	uint32_t index;             /* svc_dev_info.index */
};

/* A reply that carries a handle (OPEN_DEVICE) or nothing (CLOSE_DEVICE). */
struct svc_handle_rep {
	struct svc_hdr h;
	uint32_t handle;
};

/* CLOSE_DEVICE, QUERY_DEVICE */
struct svc_handle_req {
	struct svc_hdr h;
	uint32_t handle;
};

struct svc_query_device_rep {
	struct svc_hdr h;
	struct ibv_device_attr attr;
};

struct svc_query_port_req {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t port;
};

struct svc_query_port_rep {
	struct svc_hdr h;
	struct ibv_port_attr attr;
};

struct svc_query_gid_req {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t port;
	uint32_t index;
};

struct svc_query_gid_rep {
	struct svc_hdr h;
	union ibv_gid gid;
	uint32_t type;              /* enum ibv_gid_type */
};

struct svc_status_req {
	struct svc_hdr h;
};

/* The reply's len is the header plus the text, NUL included, at most
 * SVC_STATUS_TEXT_MAX: the one type whose size varies. */
struct svc_status_rep {
	struct svc_hdr h;
	char text[SVC_STATUS_TEXT_MAX];
};

/* ---- the data path (doc/srnicd.md, sections 4 and 5) ---- */

/* Per-session limits: objects a session may hold at once. */
#define SVC_SESSION_PDS_MAX 16
#define SVC_SESSION_CQS_MAX 32
#define SVC_SESSION_QPS_MAX 64
#define SVC_SESSION_MRS_MAX 256
#define SVC_SESSION_CHANNELS_MAX 16
#define SVC_SESSION_AHS_MAX 256
#define SVC_SESSION_SRQS_MAX 16
#define SVC_SESSION_MWS_MAX 256
#define SVC_SESSION_MR_BYTES_MAX (4ull << 30)
/* a ring's slots: max_send_wr, max_recv_wr up to SVC_RING_WR_MAX, an
 * SRQ's max_wr up to SVC_RING_SRQ_WR_MAX (one SRQ feeds many QPs:
 * rdma-core's tests share one of 2 x 1000 WQEs), a CQ's cqe up to
 * SVC_RING_CQE_MAX (all powers of two) */
#define SVC_RING_WR_MAX 1024u
#define SVC_RING_SRQ_WR_MAX 4096u
#define SVC_RING_CQE_MAX 4096u
#define SVC_WQE_SGE_MAX 4u             /* max_send_sge, max_recv_sge */
#define SVC_WQE_INLINE_MAX 64u         /* max_inline_data: copied into the WQE */

/* An index on a cache line of its own, written by one side only. */
struct svc_idx {
	alignas(64) uint32_t v;
};

/* A CQ's arm (ibv_req_notify_cq), the application's line: the CQ ring's
 * cons when it armed, then seq (seq << 1 | solicited_only; a new seq is a
 * new arm). The daemon fires at the first CQE it writes past cons. */
struct svc_arm {
	alignas(64) uint32_t cons;
	uint32_t seq;
};

struct svc_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* IBV_WR_BIND_MW's binding (ibv_mw_bind_info), in a WQE of no SGE: the
 * window is an ALLOC_MW handle of the session (the daemon checks it is
 * one, live), the MR is named by its lkey (srnic checks it is of the QP's
 * PD: another session's MR is not) */
struct svc_bind {
	uint32_t mw;                /* an ALLOC_MW handle of the session */
	uint32_t mr_lkey;           /* 0 with length 0: a type 1 window unbound */
	uint64_t addr;
	uint64_t length;
	uint32_t access;            /* IBV_ACCESS_REMOTE_* the window grants */
	uint32_t pad;
};

/* A send or receive WQE as the application writes it into a ring slot. */
struct svc_wqe {
	uint64_t wr_id;
	uint32_t opcode;            /* enum ibv_wr_opcode (send) */
	uint32_t send_flags;        /* enum ibv_send_flags */
	uint32_t num_sge;           /* sg[] entries, or with IBV_SEND_INLINE the bytes of inl[] */
	/* network order, as ibv_send_wr's; IBV_WR_LOCAL_INV and
	 * IBV_WR_SEND_WITH_INV: the rkey to invalidate (invalidate_rkey, the
	 * same union in ibv_send_wr) */
	uint32_t imm_data;
	uint64_t remote_addr;
	uint32_t rkey;              /* IBV_WR_BIND_MW: the window's new rkey */
	uint32_t ah;                /* UD: a CREATE_AH handle of the session */
	uint64_t compare_add;
	uint64_t swap;
	uint32_t remote_qpn;        /* UD */
	uint32_t remote_qkey;       /* UD */
	union {
		struct svc_sge sg[SVC_WQE_SGE_MAX];
		uint8_t inl[SVC_WQE_INLINE_MAX];
		struct svc_bind bind;   /* IBV_WR_BIND_MW (num_sge 0) */
	};
};

/* One QP's rings: SQ head and RQ head are the application's, SQ comp and
 * RQ tail the daemon's (the slots behind them are the application's
 * again). Indexes count up for ever; a slot is index & (size - 1). */
struct svc_qp_ring {
	struct svc_idx sq_head;
	struct svc_idx sq_comp;
	struct svc_idx rq_head;
	struct svc_idx rq_tail;
	struct svc_wqe sq[SVC_RING_WR_MAX];
	struct svc_wqe rq[SVC_RING_WR_MAX];
};

/* One SRQ's ring, as an RQ's: head the application's, tail the daemon's
 * (the slots behind it are the application's again). */
struct svc_srq_ring {
	struct svc_idx head;
	struct svc_idx tail;
	struct svc_wqe rq[SVC_RING_SRQ_WR_MAX];
};

/* One CQ's ring: the daemon writes CQEs and prod, the application reads
 * them and writes cons. */
struct svc_cq_ring {
	struct svc_idx prod;
	struct svc_idx cons;
	struct svc_arm arm;         /* the application's */
	struct svc_idx ev;          /* the daemon's: completion events signalled */
	struct ibv_wc cqe[SVC_RING_CQE_MAX];
};

#define SVC_SHM_LIVE 0
#define SVC_SHM_FATAL 1

/* A context's async events (ibv_get_async_event()): the daemon writes an
 * entry and prod (release), then one byte to the context's async_fd (the
 * read end of the pipe MAP_SHM's reply carries: one byte per event); the
 * application reads entries up to prod and stores cons. An event finding the ring
 * full (SVC_ASYNC_RING not taken) is dropped and counted (async_drop). */
#define SVC_ASYNC_RING 64u
struct svc_async_ev {
	uint32_t type;              /* enum ibv_event_type */
	uint32_t handle;            /* the QP's, CQ's or SRQ's handle; port events: the port */
};

struct svc_ev_ring {
	struct svc_idx prod;        /* the daemon's */
	struct svc_idx cons;        /* the application's */
	struct svc_async_ev ev[SVC_ASYNC_RING];
};

/* The session's state line. v: SVC_SHM_LIVE or SVC_SHM_FATAL, the
 * daemon's. sleep: 1 while the daemon's engine sleeps (it stores 1 before
 * its last look at db, then waits on this word, futex_waitv()); an
 * application that finds 1 after its db store stores 0 and wakes it
 * (FUTEX_WAKE, a shared futex): one system call per sleep, never per
 * post. poll_sleep: the other way round, 1 while a thread of the
 * application sleeps in ibv_poll_cq() on an empty CQ (it stores 1 before
 * its last look at the CQ's prod, then waits on this word, FUTEX_WAIT
 * with a timeout); the engine, after a pass that wrote CQEs into the
 * session's rings, finds 1, stores 0 and wakes them all. eng_cpu: the
 * CPU the daemon's engine last ran on, + 1 (0: not known, a daemon of
 * minor 2 or less), the daemon's; a poller sleeps only if it runs there
 * (doc/srnicd.md, "A sleeping poller"). poll_cpu: the CPU of the
 * threads asleep on poll_sleep, + 1, the application's (0: not known;
 * SVC_POLL_CPU_MIXED: they sleep on several); the engine wakes a poller
 * on its own CPU once its pass finds nothing to do (the poller could not
 * run before) or after a few passes without the session's CQEs, any other
 * at once, and stores 0 there when it wakes them all (minor 4; a library
 * merges its CPU in with a compare-and-swap, mixed, only with such a
 * daemon: an older one would leave mixed in place). The application
 * writes sleep (to 0), poll_sleep (to 1) and poll_cpu, nothing else of
 * the line. From minor 5 the engine stores SVC_SLEEP_WAITING in sleep, not
 * 1, for a short nap while QPs of its device wait for the network (an
 * ACK, a response): a poller on the engine's CPU then sleeps too (a CQE
 * may come at the nap's end); under a plain 1 (nothing expected) it
 * spins, as with an older daemon. Any value but 0 is a sleeping engine. */
#define SVC_POLL_CPU_MIXED UINT32_MAX
#define SVC_SLEEP_IDLE 1u
#define SVC_SLEEP_WAITING 2u
struct svc_state_line {
	alignas(64) uint32_t v;
	uint32_t sleep;
	uint32_t poll_sleep;
	uint32_t eng_cpu;
	uint32_t poll_cpu;
};

/* A session's ring memory (a sealed memfd the daemon makes, MAP_SHM):
 * db is the application's doorbell (a counter stored after the heads),
 * state the daemon's. QP and CQ handles name their ring by index. */
struct svc_shm {
	struct svc_idx db;
	struct svc_state_line state;
	struct svc_ev_ring async;
	struct svc_qp_ring qp[SVC_SESSION_QPS_MAX];
	struct svc_cq_ring cq[SVC_SESSION_CQS_MAX];
	struct svc_srq_ring srq[SVC_SESSION_SRQS_MAX];
};

/* MAP_SHM: the request (svc_handle_req, the open device) carries no
 * descriptor (since minor 3: one is refused, EINVAL); the reply carries
 * the memfd, then the read end of the session's async pipe (SCM_RIGHTS),
 * whose write end, O_NONBLOCK, never leaves the daemon */
struct svc_shm_rep {
	struct svc_hdr h;
	uint64_t size;              /* sizeof(struct svc_shm) */
};

/* REG_MR: the request carries the memfd that backs [addr, addr + length)
 * from its offset 0, page-aligned, sealed against shrinking; the MR's keys
 * name [iova, iova + length) (ibv_reg_mr_iova(); addr for ibv_reg_mr()) */
struct svc_reg_mr_req {
	struct svc_hdr h;
	uint32_t pd;
	uint32_t access;
	uint64_t addr;
	uint64_t length;
	uint64_t iova;
};

/* REG_MR_AT: REG_MR whose memfd backs [addr, addr + length) from offset
 * (page-aligned) rather than from 0: the library's one memfd per process
 * holds each page at its own address (doc/srnicd.md section 5,
 * "Registrations that share pages"); the reply is REG_MR's */
struct svc_reg_mr_at_req {
	struct svc_reg_mr_req mr;
	uint64_t offset;
};

struct svc_reg_mr_rep {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

struct svc_create_cq_req {
	struct svc_hdr h;
	uint32_t dev;
	uint32_t cqe;
	uint32_t channel;           /* a CREATE_CHANNEL handle, or 0: none */
};

/* CREATE_CHANNEL: the request carries no descriptor (since minor 3: one
 * is refused, EINVAL); the reply carries the read end of the channel's
 * pipe, to which the daemon writes one byte per completion event (a full
 * pipe: the byte is not written, the reader has a wake pending) */
struct svc_create_channel_req {
	struct svc_hdr h;
	uint32_t dev;
};

struct svc_create_cq_rep {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t ring;              /* svc_shm.cq[ring] */
	uint32_t size;              /* the ring's slots (cqe reported: size - 1) */
};

struct svc_qp_cap {
	uint32_t max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data;
};

struct svc_create_qp_req {
	struct svc_hdr h;
	uint32_t pd, send_cq, recv_cq;
	uint32_t qp_type;
	uint32_t sq_sig_all;
	struct svc_qp_cap cap;
	uint32_t srq;               /* a CREATE_SRQ handle, or 0: its own RQ */
};

struct svc_create_qp_rep {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t ring;              /* svc_shm.qp[ring] */
	uint32_t qp_num;
	uint32_t sq_size, rq_size;  /* the rings' slots */
	struct svc_qp_cap cap;
};

struct svc_modify_qp_req {
	struct svc_hdr h;
	uint32_t handle;
	int32_t mask;
	struct ibv_qp_attr attr;
};

struct svc_query_qp_req {
	struct svc_hdr h;
	uint32_t handle;
	int32_t mask;
};

struct svc_query_qp_rep {
	struct svc_hdr h;
	struct ibv_qp_attr attr;
	struct svc_qp_cap cap;
	uint32_t sq_sig_all;
};

/*
 * rdma_cm in the daemon. The CM's parameters and events travel as the
 * bytes of lib/cm's own structs (struct srnic_cm_*_param, the param union
 * of struct srnic_cm_event), which both sides build from the same tree;
 * their pointers are never read as sent: each side points them at the
 * message's own ari/pdata before use, and the daemon clamps every length.
 */
#define SVC_SESSION_CM_IDS_MAX 1024    /* rdma_cm ids (listeners, connections) per session */
#define SVC_CM_PARAM_MAX 160           /* lib/cm's largest parameter or event struct */
#define SVC_CM_ARI_MAX 72              /* a REJ's ARI, a SIDR_REP's info */
#define SVC_CM_PDATA_MAX 224           /* a CM message's private data (RTU's, DREP's) */

/* what an SVC_CM_SEND sends (srnic_cm_send_*()) */
enum svc_cm_send {
	SVC_CM_S_REQ = 1,
	SVC_CM_S_REP,
	SVC_CM_S_RTU,
	SVC_CM_S_REJ,
	SVC_CM_S_MRA,
	SVC_CM_S_DREQ,
	SVC_CM_S_DREP,
	SVC_CM_S_SIDR_REQ,
	SVC_CM_S_SIDR_REP,
	SVC_CM_S_ESTABLISHED,
	SVC_CM_S_END,
};

/* SVC_CM_OPEN: request svc_handle_req (the open device), reply
 * svc_handle_rep with the event socket (SCM_RIGHTS); once per session.
 * SVC_CM_CREATE_ID: svc_handle_req (the device) -> svc_handle_rep (the id).
 * SVC_CM_DESTROY_ID, SVC_CM_STATE: svc_handle_req (the id) ->
 * svc_handle_rep (STATE: its enum srnic_cm_state in handle).
 * SVC_CM_LISTEN: svc_cm_listen_req (id: the id) -> svc_handle_rep.
 * SVC_CM_CREATE_LISTEN: svc_cm_listen_req (id: the device) ->
 * svc_handle_rep (the new id, listening); a listen refused (-EBUSY: the
 * service ID is taken) leaves no id. */
struct svc_cm_listen_req {
	struct svc_hdr h;
	uint32_t id;
	uint32_t pad;
	uint64_t service_id, service_mask;
};

struct svc_cm_send_req {
	struct svc_hdr h;
	uint32_t id;
	uint32_t what;              /* enum svc_cm_send */
	uint32_t arg;               /* REJ: the reason; MRA: the service timeout */
	uint8_t ari_len, pdata_len;
	uint8_t pad[2];
	alignas(8) uint8_t param[SVC_CM_PARAM_MAX]; /* REQ, REP, SIDR_REQ, SIDR_REP: lib/cm's param struct */
	uint8_t ari[SVC_CM_ARI_MAX];
	uint8_t pdata[SVC_CM_PDATA_MAX];
};

struct svc_cm_qp_attr_req {
	struct svc_hdr h;
	uint32_t id;
	uint32_t pad;
	struct ibv_qp_attr attr;    /* qp_state: the state asked for */
};

struct svc_cm_qp_attr_rep {
	struct svc_hdr h;
	int32_t mask;
	uint32_t pad;
	struct ibv_qp_attr attr;
};

struct svc_cm_resolve_req {
	struct svc_hdr h;
	uint32_t dev;
	uint8_t gid[16];            /* the destination: 0, or -EAGAIN while ARP/ND asks */
};

/* On the event socket, daemon to library: one CM event of an id of the
 * session (the daemon's type, not a reply; never a request to it). */
struct svc_cm_event {
	struct svc_hdr h;
	uint32_t id;                /* whose event: for a REQ, the listener's */
	uint32_t new_id;            /* REQ, SIDR_REQ: the new id; else 0 */
	uint32_t type;              /* enum srnic_cm_event_type */
	uint8_t has_pdata, pdata_len, ari_len;
	uint8_t pad;
	alignas(8) uint8_t param[SVC_CM_PARAM_MAX]; /* struct srnic_cm_event's param */
	uint8_t ari[SVC_CM_ARI_MAX];  /* a REJ's ARI, a SIDR_REP's info */
	uint8_t pdata[SVC_CM_PDATA_MAX];
};

/* CREATE_AH: a UD address (ibv_create_ah()); the reply is a handle the
 * session's UD send WQEs name (svc_wqe.ah). DESTROY_AH: svc_handle_req. */
struct svc_create_ah_req {
	struct svc_hdr h;
	uint32_t pd;
	uint32_t pad;
	struct ibv_ah_attr attr;
};

/* CREATE_SRQ: ibv_create_srq()'s attributes; the reply names the SRQ's
 * ring (svc_shm.srq[ring], at offset in the memfd) and its slots.
 * MODIFY_SRQ: IBV_SRQ_LIMIT (IBV_SRQ_MAX_WR is -EINVAL: the ring is made
 * once, as mlx5's SRQs). QUERY_SRQ, DESTROY_SRQ: svc_handle_req. */
struct svc_create_srq_req {
	struct svc_hdr h;
	uint32_t pd;
	uint32_t max_wr, max_sge, srq_limit;
};

struct svc_create_srq_rep {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t ring;
	uint32_t size;              /* the ring's slots: max_wr reported */
	uint32_t max_sge;
	uint32_t srq_num;
	uint32_t pad;
	uint64_t offset;            /* of svc_shm.srq[ring] in the session's memfd */
};

struct svc_modify_srq_req {
	struct svc_hdr h;
	uint32_t handle;
	int32_t mask;
	struct ibv_srq_attr attr;
};

struct svc_query_srq_rep {
	struct svc_hdr h;
	struct ibv_srq_attr attr;
};

/* INIT_AH_FROM_WC: a UD receive's CQE and its buffer's GRH area, on the
 * open device dev; the reply is the address of a reply to its sender
 * (ibv_init_ah_from_wc()) */
#define SVC_GRH_LEN 40
struct svc_init_ah_req {
	struct svc_hdr h;
	uint32_t dev;
	uint32_t pad;
	struct ibv_wc wc;
	uint8_t grh[SVC_GRH_LEN];
};

struct svc_init_ah_rep {
	struct svc_hdr h;
	struct ibv_ah_attr attr;
};

/* ATTACH_MCAST, DETACH_MCAST: the session's QP and the group's GID */
struct svc_mcast_req {
	struct svc_hdr h;
	uint32_t qp;
	uint16_t lid;
	uint16_t pad;
	union ibv_gid gid;
};

/* ALLOC_MW: a window of type (enum ibv_mw_type) on the session's PD;
 * the reply its handle and first rkey. DEALLOC_MW: svc_handle_req (a
 * handle not of the session: -EINVAL, as rxe's bind of such a window). */
struct svc_alloc_mw_req {
	struct svc_hdr h;
	uint32_t pd;
	uint32_t type;
};

struct svc_alloc_mw_rep {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t rkey;
};

/* REREG_MR: ibv_rereg_mr(3) of the session's MR handle: flags
 * IBV_REREG_MR_CHANGE_*; pd (CHANGE_PD) a PD of the session; access
 * (CHANGE_ACCESS); with CHANGE_TRANSLATION the request carries the memfd
 * whose pages from offset back [addr, addr + length), as REG_MR_AT's, and
 * the new range's keys name it at addr (rdma-core's). The reply is
 * REG_MR's: the same handle, the keys (new with a new translation). */
struct svc_rereg_mr_req {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t flags;
	uint32_t pd;
	uint32_t access;
	uint64_t addr;
	uint64_t length;
	uint64_t offset;
};

/** The size of a message of type, request or reply (0: no such type). */
size_t svc_msg_size(uint16_t type, int reply);

/**
 * Check a received message of n bytes before any field of its body is
 * read: a whole header, a known type, the reply flag as expected, len ==
 * n and the type's size (a STATUS reply: NUL-terminated text within
 * it). 0, or a negative errno and, in *why, what was wrong.
 */
int svc_msg_check(const void *msg, size_t n, int want_reply, const char **why);

/** Fill a message's header: type, len (the type's size), seq, status. */
void svc_msg_init(void *msg, uint16_t type, int reply, uint32_t seq, int32_t status);

/** A HELLO of this protocol version from this process, named prog. */
void svc_hello_init(struct svc_hello_req *q, uint32_t seq, const char *prog);

/**
 * The socket's path: env SVC_SOCK_ENV if set and not empty, else
 * SVC_SOCK_DEFAULT, into buf (n bytes). -ENAMETOOLONG if it does not fit
 * a sockaddr_un.
 */
int svc_sock_path(char *buf, size_t n);

/**
 * A blocking client's call on socket fd: send req (its len), receive the
 * reply of the same type and seq into rep (cap bytes) and check it. The
 * reply's status (0 or a negative errno), or a negative errno of the
 * socket (-ECONNRESET: the daemon closed it).
 */
int svc_call(int fd, const void *req, void *rep, size_t cap);

/**
 * svc_call() with a file descriptor: fd_out (-1: none) goes with the
 * request (SCM_RIGHTS), and one that comes with a successful reply is
 * stored in *fd_in (else -1; fd_in may be NULL: one that comes is closed).
 * -EMFILE with rep's status 0: the reply came, its descriptors did not
 * (this process at its RLIMIT_NOFILE): the caller gives back what it made.
 */
int svc_call_fd(int fd, const void *req, int fd_out, void *rep, size_t cap, int *fd_in);

/** svc_call_fd() taking up to nfds (<= SVC_MSG_FDS_MAX) descriptors of the reply, in order. */
int svc_call_fds(int fd, const void *req, int fd_out, void *rep, size_t cap, int *fds_in,
		 unsigned int nfds);

/** Send one message with descriptor fd_out (-1: none): bytes sent or -1 (errno). */
ssize_t svc_send_fd(int fd, const void *msg, size_t len, int fd_out);

/** svc_send_fd() with the descriptors of fds[nfds] that are not -1 (at most SVC_MSG_FDS_MAX). */
ssize_t svc_send_fds(int fd, const void *msg, size_t len, const int *fds, unsigned int nfds);

/**
 * Receive one message of at most cap bytes (recvmsg flags, MSG_TRUNC
 * added) and the one descriptor it may carry into *fd_in (else -1). The
 * message's length (> cap: truncated, its descriptor closed), or a
 * negative errno (-EBADMSG: more descriptors than one came, all closed).
 */
ssize_t svc_recv_fd(int fd, void *buf, size_t cap, int flags, int *fd_in);

/** svc_recv_fd() taking up to nfds (<= SVC_MSG_FDS_MAX) descriptors into fds (-1 for none). */
ssize_t svc_recv_fds(int fd, void *buf, size_t cap, int flags, int *fds, unsigned int nfds);

/**
 * The kernel network interface a DPDK port's devargs send on: iface= of
 * net_af_packet and net_pcap, into buf (n bytes, at most SVC_NETDEV_MAX);
 * "" for any other port. 0, or -ENAMETOOLONG (buf "") when the name is
 * longer than an interface's.
 */
int svc_port_netdev(const char *devargs, char *buf, size_t n);

/** Connect to the daemon at path: a socket, or a negative errno. */
int svc_connect(const char *path);

#endif /* SRNIC_SVC_H */
