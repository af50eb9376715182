/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_ENGINE_STATS_H
#define SRNIC_ENGINE_STATS_H

/*
 * Engine counters: one X-macro list gives the enum and the name table side
 * by side. Every drop and every protocol event has one.
 */
#define SRNIC_STATS(X) \
	X(RX_PKTS, "rx_pkts") \
	X(TX_PKTS, "tx_pkts") \
	X(RX_BYTES, "rx_bytes") \
	X(TX_BYTES, "tx_bytes") \
	X(RX_HOST, "rx_host")                       /* not RoCEv2, to host handler */ \
	X(RX_HOST_DROP, "rx_host_drop")             /* not RoCEv2, no handler */ \
	X(RX_ARP, "rx_arp") \
	X(TX_ARP, "tx_arp") \
	X(RX_ND, "rx_nd") \
	X(TX_ND, "tx_nd") \
	X(NEIGH_MAC_MOVED, "neigh_mac_moved")       /* a QP took its peer's new MAC at a retry timeout */ \
	X(NEIGH_SOLICIT_LIMITED, "neigh_solicit_limited") /* ARP/NS not sent: one per neighbour per SRNIC_ARP_RETRY_MS */ \
	X(RX_MALFORMED, "rx_malformed")             /* parse failed (any reason but ICRC) */ \
	X(RX_ICRC_ERR, "rx_icrc_err") \
	X(RX_NOT_FOR_US, "rx_not_for_us")           /* destination IP/MAC not ours */ \
	X(RX_NO_QP, "rx_no_qp")                     /* unknown destination QPN */ \
	X(RX_QP_STATE, "rx_qp_state_drop")          /* QP not in RTR/RTS */ \
	X(RX_BAD_TRANSPORT, "rx_bad_transport")     /* opcode of another transport than the QP's (or CNP) */ \
	X(RX_BAD_PKEY, "rx_bad_pkey")               /* BTH P_Key not the QP's (IBTA 10.9) */ \
	X(RX_REDIRECT, "rx_redirect")               /* handed to the QP's own engine */ \
	X(RX_REDIRECT_DROP, "rx_redirect_drop") \
	X(TX_LOOPBACK, "tx_loopback")               /* to our own MAC: handed to our RX, not the port */ \
	X(RX_LOOPBACK, "rx_loopback")               /* received from our own TX (in-device loopback) */ \
	X(RX_UD_PKTS, "rx_ud_pkts")                 /* UD datagrams delivered to a receive WQE */ \
	X(RX_UD_QKEY_ERR, "rx_ud_qkey_err")         /* DETH Q_Key not the QP's: dropped (IBTA 10.2.5) */ \
	X(RX_UD_TOO_LONG, "rx_ud_too_long")         /* payload beyond the path MTU: dropped */ \
	X(RX_UD_NO_RECV, "rx_ud_no_recv_wqe")       /* no receive WQE posted: dropped (UD has no RNR) */ \
	X(RX_UD_RECV_TOO_SMALL, "rx_ud_recv_too_small") /* GRH + payload beyond the next WQE: dropped, WQE kept */ \
	X(RX_MCAST_PKTS, "rx_mcast_pkts")           /* multicast datagrams to a group a QP here joined */ \
	X(RX_MCAST_NO_GROUP, "rx_mcast_no_group")   /* to a multicast address no QP joined, or not to QPN 0xFFFFFF: dropped */ \
	X(RX_MCAST_COPIES, "rx_mcast_copies")       /* copies handed to attached QPs of other engines */ \
	X(RX_MCAST_COPY_DROP, "rx_mcast_copy_drop") /* ... not made or not handed over (no mbuf, ring full) */ \
	X(RX_UC_PKTS, "rx_uc_pkts")                 /* UC packets taken */ \
	X(RX_UC_PSN_GAP, "rx_uc_psn_gap")           /* FIRST/ONLY after a PSN gap: resynced there */ \
	X(RX_UC_DROP, "rx_uc_drop")                 /* UC packets dropped: a gap, or inside a dropped message */ \
	X(RX_UC_MSG_DROP, "rx_uc_msg_drop")         /* UC messages abandoned part way (gap, op sequence) */ \
	X(RX_UC_OPSEQ, "rx_uc_opseq_err")           /* UC opcode out of sequence: message dropped */ \
	X(RX_UC_ERR_DROP, "rx_uc_err_drop")         /* UC length, access or R_Key error: message dropped */ \
	X(RX_UC_NO_RECV, "rx_uc_no_recv_wqe")       /* UC SEND / WRITE with IMM and no receive WQE: dropped */ \
	X(RX_UC_RECV_TOO_SMALL, "rx_uc_recv_too_small") /* UC SEND longer than its receive WQE: message dropped, WQE kept */ \
	X(REQ_UD_TOO_LONG, "req_ud_too_long")       /* UD send beyond the MTU: no packet, success (C10-93.1.1) */ \
	X(REQ_UD_NO_ROUTE, "req_ud_no_route")       /* UD send whose MAC stayed unknown: dropped */ \
	X(REQ_PKTS, "req_pkts")                     /* request packets sent */ \
	X(REQ_MSGS, "req_msgs") \
	X(REQ_LOCAL_ERR, "req_local_err")           /* bad lkey/length at the requester */ \
	X(REQ_WAIT_RD_ATOMIC, "req_wait_rd_atomic") /* stalled at max_rd_atomic */ \
	X(REQ_WAIT_FENCE, "req_wait_fence") \
	X(REQ_WAIT_WINDOW, "req_wait_window") \
	X(REQ_TX_FULL, "req_tx_full")               /* requester turns put off: no TX room */ \
	X(REQ_TX_FULL_PEEK, "req_tx_full_peek")     /* ... of those, turns that read the SQ for local WQEs */ \
	X(REQ_TX_FULL_LOCAL, "req_tx_full_local")   /* local WQEs (BIND_MW, LOCAL_INV) run with no TX room */ \
	X(REQ_REWIND_LOCAL_SKIP, "req_rewind_local_skip") /* local WQEs a resend passed over (ran once) */ \
	X(REQ_RETRY_COPY, "req_retry_copy")         /* resent SEND/WRITE payload pieces copied (not zero-copy) */ \
	X(REQ_UD_UC_COPY, "req_ud_uc_copy")         /* UD/UC payload pieces copied: their CQE is out before the TX flush */ \
	X(RESP_PKTS, "resp_pkts")                   /* request packets accepted */ \
	X(RESP_DUP, "resp_dup")                     /* duplicate request */ \
	X(RESP_OUT_OF_SEQ, "resp_out_of_seq") \
	X(RESP_OUT_OF_SEQ_DROP, "resp_out_of_seq_drop") /* after the one NAK */ \
	X(RESP_OPSEQ_ERR, "resp_opseq_err") \
	X(RESP_RNR, "resp_rnr_nak_sent") \
	X(RESP_ACK_SENT, "resp_ack_sent") \
	X(RESP_NAK_SEQ, "resp_nak_seq_sent") \
	X(RESP_NAK_INV, "resp_nak_inv_req_sent") \
	X(RESP_NAK_ACCESS, "resp_nak_rem_access_sent") \
	X(RESP_NAK_OP, "resp_nak_rem_op_sent") \
	X(RESP_READ_PKTS, "resp_read_pkts")         /* READ response packets sent */ \
	X(RESP_ATOMIC, "resp_atomic") \
	X(RESP_ATOMIC_WRITE, "resp_atomic_write")   /* ATOMIC WRITEs stored (IBTA 1.5) */ \
	X(RESP_FLUSH, "resp_flush")                 /* FLUSHes executed (IBTA 1.5) */ \
	X(RESP_ZC_SEGS, "resp_zc_segs")             /* payload segments attached zero-copy */ \
	X(RESP_ZC_COPY, "resp_zc_copy_fallback")    /* MR refcount full: copied instead */ \
	X(TX_UNMAPPED_COPY, "tx_unmapped_copy")     /* MR the port cannot DMA from (not mapped): copied */ \
	X(RESP_READ_INLINE, "resp_read_inline")     /* READ payloads copied: <= read_inline_max */ \
	X(RESP_FIFO_FULL, "resp_fifo_full")          /* NAK/answer dropped: FIFO full */ \
	X(RESP_DUP_DROP, "resp_dup_drop")           /* duplicate READ/atomic matching no remembered one: dropped */ \
	X(RESP_DUP_RESTART, "resp_dup_read_restart") /* duplicate READ still being answered: restarted in place */ \
	X(RESP_READ_RETRY_COPY, "resp_read_retry_copy") /* READ retry payloads copied (not zero-copy) */ \
	X(RESP_RKEY_ERR, "resp_rkey_err")           /* R_Key failures (per QP: rkey_errs) */ \
	X(RESP_MW_RKEY_ERR, "resp_mw_rkey_err")     /* ... of them naming a memory window */ \
	X(RESP_ERR_SENT, "resp_owed_sent_at_err")   /* ACKs/NAKs/atomic answers a QP owed when it went to ERR: sent */ \
	X(RESP_ERR_DROP, "resp_owed_dropped_at_err") /* ... not sent (a READ response, no route, no TX room) */ \
	X(MW_BIND, "mw_bind")                       /* memory windows bound (BIND_MW WQEs) */ \
	X(MW_BIND_ERR, "mw_bind_err")               /* BIND_MW WQEs refused (IBV_WC_MW_BIND_ERR) */ \
	X(MW_LOCAL_INV, "mw_local_inv")             /* windows invalidated by LOCAL_INV */ \
	X(MW_REMOTE_INV, "mw_remote_inv")           /* ... by a received SEND with Invalidate */ \
	X(MW_INV_ERR, "mw_inv_err")                 /* invalidations refused (local or remote) */ \
	X(COMP_ACK, "comp_ack_rcvd") \
	X(COMP_READ_RESP, "comp_read_resp_rcvd") \
	X(COMP_ATOMIC_ACK, "comp_atomic_ack_rcvd") \
	X(COMP_NAK, "comp_nak_rcvd") \
	X(COMP_RNR, "comp_rnr_rcvd") \
	X(COMP_UNEXPECTED, "comp_unexpected")       /* response matching no WQE */ \
	X(COMP_DUP_ACK, "comp_dup_ack") \
	X(COMP_READ_LEN_ERR, "comp_read_resp_len_err") /* READ response of the wrong length: dropped */ \
	X(COMP_READ_POS_ERR, "comp_read_resp_pos_err") /* LAST where not last, or not where last */ \
	X(CQE, "cqe") \
	X(CQE_ERR, "cqe_err") \
	X(CQ_OVERFLOW, "cq_overflow") \
	X(QP_TO_ERR, "qp_to_err") \
	X(SQD_DRAINED, "sqd_drained")               /* SQD QPs whose last outstanding WQE completed */ \
	X(REQ_WAIT_SQD, "req_wait_sqd")             /* requester turns stopped at a WQE posted in SQD */ \
	X(ASYNC_EVENT, "async_event") \
	X(ASYNC_EVENT_DROP, "async_event_drop")     /* the engine's event ring was full */ \
	X(ASYNC_EVENT_FD_ERR, "async_event_fd_err") /* the event fd's write failed (the event is queued) */ \
	X(COMM_EST, "comm_est")                     /* QPs whose first packet arrived in RTR */ \
	X(SRQ_RNR, "srq_empty_rnr")                 /* messages RNR NAKed: their QP's SRQ was empty */ \
	X(SRQ_LIMIT, "srq_limit_reached")           /* SRQ limit events fired */ \
	X(SRQ_LAST_WQE, "srq_last_wqe_reached")     /* SRQ QPs in ERR done with the SRQ */ \
	X(CQ_ERR, "cq_err")                         /* CQs that overflowed (IBV_EVENT_CQ_ERR) */ \
	X(TX_NOMBUF, "tx_nombuf") \
	X(ICRC_FOLD_SHORT, "icrc_fold_short")       /* flat packets the ICRC fold left to ISA-L: < 19 bytes before l3 (whole process, lib/wire's count: per engine 0) */ \
	X(TX_LINEARISED, "tx_linearised")           /* more segments than the port takes: copied */ \
	X(TX_PREPARE_DROP, "tx_prepare_drop")       /* refused by rte_eth_tx_prepare(): dropped */ \
	X(TX_IOVA_SPLIT, "tx_iova_split")           /* piece split at an IOVA discontinuity */ \
	X(RETRANSMIT, "retransmit_pkts") \
	X(TIMEOUT, "retry_timeout") \
	X(RETRY_STARVED, "retry_starved")           /* ACK timeouts a late poll found: resent, no retry spent */ \
	X(TX_BURSTS, "tx_bursts")                   /* TX bursts offered to the port (tx_pkts / tx_bursts: packets per burst) */ \
	X(POLL_BUSY, "poll_busy")                   /* polls that moved packets */ \
	X(POLL_BUSY_CYCLES, "poll_busy_cycles")     /* timer cycles after polls that moved packets */ \
	X(POLL_IDLE_CYCLES, "poll_idle_cycles")     /* ... after polls that found nothing */

enum srnic_stat {
#define X(id, name) SRNIC_STAT_##id,
	SRNIC_STATS(X)
#undef X
	SRNIC_STAT_COUNT
};

#endif /* SRNIC_ENGINE_STATS_H */
