/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_CM_H
#define SRNIC_CM_H

/**
 * @file
 * srnic's communication manager: the IB CM protocol (IBTA Vol 1 ch. 12,
 * RoCE annex A17) over the GSI QP (QP1) of a srnic device. The shape is
 * Linux's ib_cm (include/rdma/ib_cm.h): ids, a listen by service ID, REQ /
 * REP / RTU / REJ / MRA / DREQ / DREP / SIDR_REQ / SIDR_REP sent by calls
 * and received as events, each id with a named state (enum srnic_cm_state)
 * and the protocol's timeouts and retries kept by the CM itself. rdma_cm's
 * semantics (addresses, port spaces, its private-data header, the QP's
 * state changes) are the caller's: srnic's librdmacm (drivers/rdmacm/).
 *
 * Threads: srnic_cm_poll() is called by one thread at a time (it takes QP1's
 * completions, answers, resends, runs the timers and calls the handlers).
 * Every other call may come from any thread, also from inside a handler
 * (the CM holds no lock of its own while a handler runs). An event is never
 * delivered for an id after srnic_cm_destroy_id() has returned: a destroy
 * from another thread waits for a handler running for that id to return.
 */
#include <stdint.h>
#include <infiniband/verbs.h>

#include "srnic.h"

struct srnic_cm;
struct srnic_cm_id;

/* ---- limits (IBTA 12.6: private data bytes per message) ---- */
#define SRNIC_CM_REQ_PDATA 92
#define SRNIC_CM_MRA_PDATA 222
#define SRNIC_CM_REJ_PDATA 148
#define SRNIC_CM_REJ_ARI 72         /**< additional rejection information bytes */
#define SRNIC_CM_REP_PDATA 196
#define SRNIC_CM_MRA_FLAG_DELAY 0x80 /**< srnic_cm_send_mra(): send only when the peer repeats */
#define SRNIC_CM_RTU_PDATA 224
#define SRNIC_CM_DREQ_PDATA 220
#define SRNIC_CM_DREP_PDATA 224
#define SRNIC_CM_SIDR_REQ_PDATA 216
#define SRNIC_CM_SIDR_REP_PDATA 136
#define SRNIC_CM_SIDR_REP_INFO 72

/** Connection states (IBTA 12.9.6; the names of ib_cm's). */
enum srnic_cm_state {
	SRNIC_CM_IDLE,
	SRNIC_CM_LISTEN,
	SRNIC_CM_REQ_SENT,
	SRNIC_CM_REQ_RCVD,
	SRNIC_CM_MRA_REQ_SENT,
	SRNIC_CM_MRA_REQ_RCVD,
	SRNIC_CM_REP_SENT,
	SRNIC_CM_REP_RCVD,
	SRNIC_CM_MRA_REP_SENT,
	SRNIC_CM_MRA_REP_RCVD,
	SRNIC_CM_ESTABLISHED,
	SRNIC_CM_DREQ_SENT,
	SRNIC_CM_DREQ_RCVD,
	SRNIC_CM_TIMEWAIT,
	SRNIC_CM_SIDR_REQ_SENT,
	SRNIC_CM_SIDR_REQ_RCVD,
};
const char *srnic_cm_state_str(enum srnic_cm_state s);

enum srnic_cm_event_type {
	SRNIC_CM_EV_REQ_ERROR,      /**< REQ resent max_cm_retries times, no answer */
	SRNIC_CM_EV_REQ_RECEIVED,   /**< on a listener's handler, for a new id */
	SRNIC_CM_EV_REP_ERROR,      /**< REP resent max_cm_retries times, no RTU */
	SRNIC_CM_EV_REP_RECEIVED,
	SRNIC_CM_EV_RTU_RECEIVED,
	SRNIC_CM_EV_USER_ESTABLISHED, /**< srnic_cm_established() (data before the RTU) */
	SRNIC_CM_EV_DREQ_ERROR,     /**< DREQ resent, no DREP: the id goes to TIMEWAIT */
	SRNIC_CM_EV_DREQ_RECEIVED,
	SRNIC_CM_EV_DREP_RECEIVED,
	SRNIC_CM_EV_TIMEWAIT_EXIT,
	SRNIC_CM_EV_MRA_RECEIVED,
	SRNIC_CM_EV_REJ_RECEIVED,
	SRNIC_CM_EV_SIDR_REQ_ERROR,
	SRNIC_CM_EV_SIDR_REQ_RECEIVED, /**< on a listener's handler, for a new id */
	SRNIC_CM_EV_SIDR_REP_RECEIVED,
	/**
	 * A REQ_RCVD / MRA_REQ_SENT / SIDR_REQ_RCVD id nobody answered for as
	 * long as its peer waits (the REQ's remote CM response time and
	 * retries, or our MRA's service timeout and them): the peer has given
	 * up; the id is IDLE. Linux keeps such ids until the consumer acts.
	 */
	SRNIC_CM_EV_REQ_EXPIRED,
};
const char *srnic_cm_event_str(enum srnic_cm_event_type t);

/** REJ reasons (IBTA Table 112; ib_cm_rej_reason). */
enum srnic_cm_rej_reason {
	SRNIC_CM_REJ_NO_QP = 1,
	SRNIC_CM_REJ_NO_EEC = 2,
	SRNIC_CM_REJ_NO_RESOURCES = 3,
	SRNIC_CM_REJ_TIMEOUT = 4,
	SRNIC_CM_REJ_UNSUPPORTED = 5,
	SRNIC_CM_REJ_INVALID_COMM_ID = 6,
	SRNIC_CM_REJ_INVALID_COMM_INSTANCE = 7,
	SRNIC_CM_REJ_INVALID_SERVICE_ID = 8,
	SRNIC_CM_REJ_INVALID_TRANSPORT_TYPE = 9,
	SRNIC_CM_REJ_STALE_CONN = 10,
	SRNIC_CM_REJ_RDC_NOT_EXIST = 11,
	SRNIC_CM_REJ_INVALID_GID = 12,
	SRNIC_CM_REJ_INVALID_LID = 13,
	SRNIC_CM_REJ_INVALID_SL = 14,
	SRNIC_CM_REJ_INVALID_TRAFFIC_CLASS = 15,
	SRNIC_CM_REJ_INVALID_HOP_LIMIT = 16,
	SRNIC_CM_REJ_INVALID_PACKET_RATE = 17,
	SRNIC_CM_REJ_INVALID_ALT_GID = 18,
	SRNIC_CM_REJ_INVALID_ALT_LID = 19,
	SRNIC_CM_REJ_INVALID_ALT_SL = 20,
	SRNIC_CM_REJ_INVALID_ALT_TRAFFIC_CLASS = 21,
	SRNIC_CM_REJ_INVALID_ALT_HOP_LIMIT = 22,
	SRNIC_CM_REJ_INVALID_ALT_PACKET_RATE = 23,
	SRNIC_CM_REJ_PORT_CM_REDIRECT = 24,
	SRNIC_CM_REJ_PORT_REDIRECT = 25,
	SRNIC_CM_REJ_INVALID_MTU = 26,
	SRNIC_CM_REJ_INSUFFICIENT_RESP_RESOURCES = 27,
	SRNIC_CM_REJ_CONSUMER_DEFINED = 28,
	SRNIC_CM_REJ_INVALID_RNR_RETRY = 29,
	SRNIC_CM_REJ_DUPLICATE_LOCAL_COMM_ID = 30,
	SRNIC_CM_REJ_INVALID_CLASS_VERSION = 31,
	SRNIC_CM_REJ_INVALID_FLOW_LABEL = 32,
	SRNIC_CM_REJ_INVALID_ALT_FLOW_LABEL = 33,
};

/** SIDR_REP status (IBTA Table 119). */
enum srnic_cm_sidr_status {
	SRNIC_CM_SIDR_SUCCESS = 0,
	SRNIC_CM_SIDR_UNSUPPORTED = 1,
	SRNIC_CM_SIDR_REJECT = 2,
	SRNIC_CM_SIDR_NO_QP = 3,
	SRNIC_CM_SIDR_REDIRECT = 4,
	SRNIC_CM_SIDR_UNSUPPORTED_VERSION = 5,
};

/** The RoCE path of a connection (what REQ's primary path fields carry). */
struct srnic_cm_path {
	union ibv_gid sgid;         /**< ours: srnic_dev_gid(dev, SRNIC_GID_INDEX_IP) */
	union ibv_gid dgid;         /**< the peer's (IPv4: ::ffff:a.b.c.d) */
	uint32_t flow_label;        /**< 20 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;          /**< 0: 64 */
	uint8_t sl;
	enum ibv_mtu mtu;           /**< path MTU */
	uint8_t packet_life_time;   /**< 4.096 us * 2^n; local ACK timeout = this + 1 */
};

/** srnic_cm_send_req() (ib_cm_req_param). */
struct srnic_cm_req_param {
	struct srnic_cm_path path;
	uint64_t service_id;        /**< host order */
	uint32_t qp_num;
	enum ibv_qp_type qp_type;   /**< IBV_QPT_RC or IBV_QPT_UC */
	uint32_t starting_psn;      /**< the PSN our QP will receive from (its RTR rq_psn) */
	const void *private_data;
	uint8_t private_data_len;   /**< at most SRNIC_CM_REQ_PDATA */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t remote_cm_response_timeout; /**< 4.096 us * 2^n, 5 bits */
	uint8_t local_cm_response_timeout;
	uint8_t flow_control;
	uint8_t retry_count;        /**< 3 bits */
	uint8_t rnr_retry_count;    /**< 3 bits */
	uint8_t max_cm_retries;     /**< 4 bits: REQ sends after the first */
	uint8_t srq;
};

/** srnic_cm_send_rep() (ib_cm_rep_param). */
struct srnic_cm_rep_param {
	uint32_t qp_num;
	uint32_t starting_psn;      /**< the PSN our QP receives from (the rq_psn it went to RTR with) */
	const void *private_data;
	uint8_t private_data_len;   /**< at most SRNIC_CM_REP_PDATA */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t failover_accepted;
	uint8_t flow_control;
	uint8_t rnr_retry_count;
	uint8_t srq;
};

/** srnic_cm_send_sidr_req(). */
struct srnic_cm_sidr_req_param {
	struct srnic_cm_path path;
	uint64_t service_id;
	const void *private_data;
	uint8_t private_data_len;   /**< at most SRNIC_CM_SIDR_REQ_PDATA */
	uint32_t timeout_ms;        /**< per try */
	uint8_t max_cm_retries;
};

/** srnic_cm_send_sidr_rep(). */
struct srnic_cm_sidr_rep_param {
	uint32_t qp_num;
	uint32_t qkey;
	enum srnic_cm_sidr_status status;
	const void *info;
	uint8_t info_length;
	const void *private_data;
	uint8_t private_data_len;   /**< at most SRNIC_CM_SIDR_REP_PDATA */
};

/** What a REQ carried (SRNIC_CM_EV_REQ_RECEIVED). */
struct srnic_cm_req_event {
	struct srnic_cm_id *listen_id;
	struct srnic_cm_path path;  /**< as seen from here: sgid ours, dgid the peer's */
	uint64_t remote_ca_guid;
	uint64_t service_id;
	uint32_t remote_qkey;
	uint32_t remote_qpn;
	enum ibv_qp_type qp_type;
	uint32_t starting_psn;      /**< the PSN the peer receives from: ours to send with */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t local_cm_response_timeout;
	uint8_t remote_cm_response_timeout;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
};

/** What a REP carried (SRNIC_CM_EV_REP_RECEIVED). */
struct srnic_cm_rep_event {
	uint64_t remote_ca_guid;
	uint32_t remote_qkey;
	uint32_t remote_qpn;
	uint32_t starting_psn;      /**< the PSN the peer receives from: ours to send with */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;
	uint8_t failover_accepted;
	uint8_t flow_control;
	uint8_t rnr_retry_count;
	uint8_t srq;
};

struct srnic_cm_rej_event {
	enum srnic_cm_rej_reason reason;
	const void *ari;
	uint8_t ari_length;
};

struct srnic_cm_mra_event {
	uint8_t service_timeout;    /**< 4.096 us * 2^n */
};

struct srnic_cm_sidr_req_event {
	struct srnic_cm_id *listen_id;
	struct srnic_cm_path path;  /**< from the MAD's GRH: dgid the sender's */
	uint64_t service_id;
};

struct srnic_cm_sidr_rep_event {
	enum srnic_cm_sidr_status status;
	uint32_t qkey;
	uint32_t qpn;
	const void *info;
	uint8_t info_len;
};

/** An event: valid during the handler call only (copy what you keep). */
struct srnic_cm_event {
	enum srnic_cm_event_type type;
	union {
		struct srnic_cm_req_event req;
		struct srnic_cm_rep_event rep;
		struct srnic_cm_rej_event rej;
		struct srnic_cm_mra_event mra;
		struct srnic_cm_sidr_req_event sidr_req;
		struct srnic_cm_sidr_rep_event sidr_rep;
	} param;
	const void *private_data;   /**< the message's whole private-data field, or NULL */
	uint8_t private_data_len;   /**< its size for the message type (IBTA's, e.g. 92 for a REQ) */
};

/**
 * Called from srnic_cm_poll(). For SRNIC_CM_EV_REQ_RECEIVED and
 * SRNIC_CM_EV_SIDR_REQ_RECEIVED, id is a new id (state REQ_RCVD /
 * SIDR_REQ_RCVD) that got the listener's handler and context; the handler
 * answers on it (REP, REJ, MRA, SIDR_REP), now or later from any thread, or
 * destroys it. A nonzero return destroys id (as ib_cm's handlers do);
 * -ENOMEM from a request's handler (a consumer out of room: rdma_cm's
 * backlog full) drops the request without a REJ, so the peer's next try
 * may find room (Linux's cm_destroy_id() for REQ_RCVD with -ENOMEM).
 */
typedef int (*srnic_cm_handler)(struct srnic_cm_id *id, const struct srnic_cm_event *ev);

/**
 * The CM of a device: creates its GSI QP (QPN 1, UD, Q_Key SRNIC_GSI_QKEY)
 * on engine eng, with receive buffers posted. One per device (EEXIST).
 * Without a listener, a REQ is answered REJ INVALID_SERVICE_ID and a
 * SIDR_REQ SIDR_REP UNSUPPORTED, as Linux's CM does. NULL with rte_errno.
 */
struct srnic_cm *srnic_cm_create(struct srnic_dev *dev, struct srnic_engine *eng);
/** Destroy the CM (-EBUSY while ids live). */
int srnic_cm_destroy(struct srnic_cm *cm);
/**
 * Take QP1's completions, answer and resend, run the timers, call the
 * handlers. The engine of the CM's QP1 must be polled too (by its lcore or
 * the caller). Returns the number of MADs handled; *next_us (if not NULL)
 * gets the microseconds until the next timer (UINT64_MAX: none), so a
 * caller may sleep that long when nothing else is due.
 */
int srnic_cm_poll(struct srnic_cm *cm, uint64_t *next_us);

struct srnic_cm_id *srnic_cm_create_id(struct srnic_cm *cm, srnic_cm_handler handler, void *context);
/**
 * Destroy an id, first doing what its state needs (as ib_destroy_cm_id):
 * REQ_SENT: REJ TIMEOUT; REQ_RCVD/MRA_*: REJ CONSUMER_DEFINED; ESTABLISHED:
 * DREQ (then the CM keeps the connection's TIMEWAIT itself); a listener stops.
 */
int srnic_cm_destroy_id(struct srnic_cm_id *id);
void *srnic_cm_id_context(const struct srnic_cm_id *id);
void srnic_cm_id_set_context(struct srnic_cm_id *id, void *context);
enum srnic_cm_state srnic_cm_id_state(const struct srnic_cm_id *id);
uint32_t srnic_cm_id_local_id(const struct srnic_cm_id *id);   /**< local communication ID */
uint32_t srnic_cm_id_remote_id(const struct srnic_cm_id *id);
uint64_t srnic_cm_id_service_id(const struct srnic_cm_id *id);

/** Listen for REQs and SIDR_REQs whose service ID & mask == service_id & mask (mask 0: exact). -EBUSY if taken. */
int srnic_cm_listen(struct srnic_cm_id *id, uint64_t service_id, uint64_t service_mask);

int srnic_cm_send_req(struct srnic_cm_id *id, const struct srnic_cm_req_param *p);
int srnic_cm_send_rep(struct srnic_cm_id *id, const struct srnic_cm_rep_param *p);
int srnic_cm_send_rtu(struct srnic_cm_id *id, const void *private_data, uint8_t len);
int srnic_cm_send_rej(struct srnic_cm_id *id, enum srnic_cm_rej_reason reason, const void *ari,
		      uint8_t ari_len, const void *private_data, uint8_t len);
/**
 * MRA for a REQ or REP received and not answered yet. service_timeout is the
 * 5-bit IBA time (4.096 us * 2^t) the peer should wait; or'ed with
 * SRNIC_CM_MRA_FLAG_DELAY, nothing is sent now: the MRA goes out only if the
 * peer sends its message again (as Linux's rdma_cm does for every connect
 * request its consumer has not answered yet).
 */
int srnic_cm_send_mra(struct srnic_cm_id *id, uint8_t service_timeout, const void *private_data,
		      uint8_t len);
int srnic_cm_send_dreq(struct srnic_cm_id *id, const void *private_data, uint8_t len);
int srnic_cm_send_drep(struct srnic_cm_id *id, const void *private_data, uint8_t len);
int srnic_cm_send_sidr_req(struct srnic_cm_id *id, const struct srnic_cm_sidr_req_param *p);
int srnic_cm_send_sidr_rep(struct srnic_cm_id *id, const struct srnic_cm_sidr_rep_param *p);
/** The passive side takes data before the RTU: the id goes ESTABLISHED (ib_cm_notify COMM_EST); -EISCONN if it is already, -EINVAL in another state. */
int srnic_cm_established(struct srnic_cm_id *id);

/**
 * The attributes for moving the id's QP to qp_attr->qp_state (INIT, RTR or
 * RTS) from what REQ/REP carried (ib_cm_init_qp_attr): RTR gets the AV
 * (dgid, flow label, hop limit, traffic class), path MTU, dest QPN, RQ PSN,
 * max_dest_rd_atomic, min_rnr_timer; RTS gets SQ PSN, timeout, retry_cnt,
 * rnr_retry, max_rd_atomic. *mask the IBV_QP_* bits set. -EINVAL in a state
 * that has no such transition.
 *
 * A Starting PSN names the PSN its sender's QP receives from (as Linux reads
 * IBTA 12.7.24): RTR's rq_psn is the one we sent (REQ or REP), RTS's sq_psn
 * the one the peer sent. The passive side goes to RTR before it sends its
 * REP: there, as with ib_cm, rq_psn is 0 until srnic_cm_send_rep() and the
 * caller sets it to the REP's starting_psn (rdma_cm: its id's sequence).
 */
int srnic_cm_init_qp_attr(struct srnic_cm_id *id, struct ibv_qp_attr *qp_attr, int *mask);

/** Counters (MADs sent/received per type, resends, drops, timeouts), enum + names. */
unsigned int srnic_cm_stats_count(void);
const char *srnic_cm_stat_name(unsigned int i);
unsigned int srnic_cm_stats_get(const struct srnic_cm *cm, uint64_t *vals, unsigned int n);

/* ---- srnic's additions (not ib_cm's) ---- */

/**
 * Use local_id as the id's local communication ID (for tests and replays:
 * the golden capture's IDs). Only on an id in IDLE that has sent nothing;
 * -EINVAL for 0 or another state, -EEXIST if another id of the CM has it.
 */
int srnic_cm_id_set_local_id(struct srnic_cm_id *id, uint32_t local_id);
/**
 * The high 32 bits of the TIDs this CM makes (random by default). A TID is
 * hi << 32 | the sending id's local ID in the byte order Linux's cm.c
 * gives it (its low 32 bits: the ID's bytes reversed), so a CM with hi 2
 * makes the golden's TIDs. For tests and replays.
 */
void srnic_cm_set_tid_high(struct srnic_cm *cm, uint32_t hi);
/** The CA GUID the CM sends: the EUI-64 of the port's MAC, host order. */
uint64_t srnic_cm_ca_guid(const struct srnic_cm *cm);
/** The value of the counter named name, or -1. */
int64_t srnic_cm_stat(const struct srnic_cm *cm, const char *name);
/**
 * The CM's GSI QP (QP1), for tests and diagnostics. Whatever takes it out
 * of RTS (ERR from the engine, a modify), the next srnic_cm_poll() resets
 * it, brings it back to RTS with every receive posted again and counts
 * qp1_recovered. NULL for a NULL cm.
 */
struct srnic_qp *srnic_cm_gsi_qp(const struct srnic_cm *cm);

#endif /* SRNIC_CM_H */
