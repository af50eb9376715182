/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_CM_INTERNAL_H
#define SRNIC_CM_INTERNAL_H

/*
 * The CM's counters: one X-macro list for the enum and the name table, as
 * lib/engine/stats.h.
 */
#define SRNIC_CM_STATS(X) \
	X(RX_MADS, "rx_mads")                   /* CM MADs taken (passed the checks) */ \
	X(TX_MADS, "tx_mads")                   /* MADs posted on QP1 */ \
	X(RX_REQ, "rx_req") \
	X(RX_MRA, "rx_mra") \
	X(RX_REJ, "rx_rej") \
	X(RX_REP, "rx_rep") \
	X(RX_RTU, "rx_rtu") \
	X(RX_DREQ, "rx_dreq") \
	X(RX_DREP, "rx_drep") \
	X(RX_SIDR_REQ, "rx_sidr_req") \
	X(RX_SIDR_REP, "rx_sidr_rep") \
	X(TX_REQ, "tx_req") \
	X(TX_MRA, "tx_mra") \
	X(TX_REJ, "tx_rej") \
	X(TX_REP, "tx_rep") \
	X(TX_RTU, "tx_rtu") \
	X(TX_DREQ, "tx_dreq") \
	X(TX_DREP, "tx_drep") \
	X(TX_SIDR_REQ, "tx_sidr_req") \
	X(TX_SIDR_REP, "tx_sidr_rep") \
	X(REQ_RESENT, "req_resent")             /* REQ sent again on timeout */ \
	X(REP_RESENT, "rep_resent") \
	X(DREQ_RESENT, "dreq_resent") \
	X(SIDR_REQ_RESENT, "sidr_req_resent") \
	X(REQ_TIMEOUT, "req_timeout")           /* REQ_ERROR: no answer after the retries */ \
	X(REP_TIMEOUT, "rep_timeout") \
	X(DREQ_TIMEOUT, "dreq_timeout") \
	X(SIDR_REQ_TIMEOUT, "sidr_req_timeout") \
	X(TIMEWAIT_EXIT, "timewait_exit") \
	X(DUP_REQ, "dup_req")                   /* a REQ already taken: answered (REP/MRA/REJ) or dropped */ \
	X(DUP_REP, "dup_rep")                   /* a REP already taken: RTU or MRA sent again */ \
	X(MRA_DELAYED, "mra_delayed")           /* an MRA kept to answer a repeated REQ/REP (SRNIC_CM_MRA_FLAG_DELAY) */ \
	X(DUP_DREQ, "dup_dreq")                 /* DREQ in DREQ_RCVD/TIMEWAIT, or unknown: DREP */ \
	X(DUP_SIDR_REQ, "dup_sidr_req") \
	X(STALE_CONN, "stale_conn")             /* REQ for a QP still connected: REJ STALE_CONN */ \
	X(REJ_NO_LISTENER, "rej_no_listener")   /* REQ for a service nobody listens on */ \
	X(SIDR_NO_LISTENER, "sidr_no_listener") \
	X(REJ_BAD_TRANSPORT, "rej_bad_transport") \
	X(REJ_BAD_MTU, "rej_bad_mtu")           /* REQ's path MTU above the port's: REJ INVALID_MTU */ \
	X(RX_SHORT, "rx_short")                 /* drops: fewer than GRH + 256 bytes */ \
	X(RX_BAD_BASE, "rx_bad_base_version") \
	X(RX_BAD_CLASS, "rx_bad_class") \
	X(RX_BAD_VERSION, "rx_bad_class_version") \
	X(RX_BAD_METHOD, "rx_bad_method") \
	X(RX_BAD_ATTR, "rx_bad_attr")           /* LAP, APR, ClassPortInfo, unknown */ \
	X(RX_UNKNOWN_ID, "rx_unknown_comm_id")  /* no id with that comm ID (or not its peer) */ \
	X(RX_BAD_STATE, "rx_bad_state")         /* a message the id's state does not take */ \
	X(RX_BAD_QPN, "rx_bad_qpn")             /* DREQ naming another QP than ours */ \
	X(RX_BAD_SRC, "rx_bad_src")             /* not from a QP1, or no GRH */ \
	X(RX_WC_ERR, "rx_wc_err")               /* QP1 receive completion in error */ \
	X(RX_WC_ERR_REPOSTED, "rx_wc_err_reposted") /* of them, with QP1 in RTS: buffer posted again */ \
	X(TX_WC_ERR, "tx_wc_err") \
	X(QP1_RECOVERED, "qp1_recovered")       /* QP1 found out of RTS: reset, up, receives posted */ \
	X(QP1_RECOVER_FAILED, "qp1_recover_failed") /* that failed: tried again at the next poll */ \
	X(TX_NO_BUF, "tx_no_buf")               /* every send buffer in flight: MAD not sent */ \
	X(TX_POST_ERR, "tx_post_err") \
	X(AH_ERR, "ah_err")                     /* no address handle to the peer */ \
	X(REQ_DROPPED, "req_dropped")           /* a request whose handler said -ENOMEM: no REJ, the peer retries */ \
	X(REQ_EXPIRED, "req_expired")           /* a request nobody answered before its peer gave up */ \
	X(EVENTS, "events")                     /* handler calls */ \
	X(IDS_DESTROYED_BY_HANDLER, "ids_destroyed_by_handler")

enum srnic_cm_stat_id {
#define SRNIC_CM_STAT_ENUM(id, name) SRNIC_CM_STAT_##id,
	SRNIC_CM_STATS(SRNIC_CM_STAT_ENUM)
#undef SRNIC_CM_STAT_ENUM
	SRNIC_CM_STAT_COUNT
};

#endif /* SRNIC_CM_INTERNAL_H */
