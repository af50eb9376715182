/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_PERF_H
#define SRNIC_PERF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <rte_atomic.h>
#include <rte_common.h>

#include "srnic.h"
#include "srnic_link.h"
#include "srnic_lossy.h"
#include "srnic_pair.h"

#define PERF_MAX_SIZES 32
#define PERF_MAX_QPS 16384
#define PERF_MAX_LCORES 16
#define PERF_MAX_DEPTH 1024
#define PERF_LAT_SAMPLES_MAX (1u << 22)  /* latency samples kept per run */
#define PERF_DEFAULT_ITERS 100000        /* small sizes; see perf_iters() */
#define PERF_PEAK_WINDOW_MS 10          /* BW peak: the best rate over windows of this length */
#define PERF_DURATION_MAX_S 86400        /* --duration (and --stats-period) at most: a day */
#define PERF_RUN_TIMEOUT_S 120            /* a run that stalls this long fails */
#define PERF_DEV_MEM_MB 128               /* DPDK memory a device takes (default pools; measured) */
/* Each side's wait for each line of the other's handshake (the client's
 * greeting and QP parameters, the server's QP parameters and READY): a
 * peer that connects or accepts and then says nothing is given up on. */
#define PERF_HANDSHAKE_WAIT_S 20
/* How often a server waiting for its next client looks at the stop flag
 * (a signal that ended no system call: it came between two waits) */
#define PERF_ACCEPT_POLL_MS 100
/* A server's wait for a greeted client's HELLO: the client brings its
 * device and QPs up in between (seconds under ASan on a loaded host). */
#define PERF_CLIENT_SETUP_WAIT_S 120
/* A client's first line, sent as soon as its TCP connection is up (the
 * number is the exchange's version). */
#define PERF_GREETING "SRNIC-PERF 1"
/* A client's wait for its port's link before the first run (a memif
 * client's comes up when its server has answered the whole handshake),
 * and how often it looks. */
#define PERF_LINK_WAIT_S 60
#define PERF_LINK_POLL_MS 10
/* A port whose link went down (IBV_EVENT_PORT_ERR) ends the run only once
 * it has stayed down this long: a link back up meanwhile (its
 * PORT_ACTIVE in the same batch of events, or up again when looked at) is
 * a flap, not a peer gone. */
#define PERF_PORT_DOWN_GRACE_S 10
/* a client looks at its control socket and the device's events this often
 * mid-run (a --peer-* server at the events) */
#define PERF_CTL_POLL_MS 10
/* Exit status of a client whose server stopped the run (a signal there, its
 * STOP line, or its control connection closed) before it was done. */
#define PERF_EXIT_SERVER_STOPPED 3

enum perf_op { PERF_OP_READ, PERF_OP_WRITE, PERF_OP_SEND, PERF_OP_ATOMIC };

/* Which sides run in this process. */
enum perf_role {
	PERF_ROLE_BOTH,     /* embedded: both endpoints over a net_ring pair */
	PERF_ROLE_CLIENT,   /* requester; the server's parameters come over TCP */
	PERF_ROLE_SERVER,   /* responder; the client's over TCP, or the command line */
};

#define PERF_DEFAULT_TCP_PORT 18515     /* perftest's */
#define PERF_PT_PINGPONG_ITERS 1000     /* ib_write_lat / ib_send_lat's default -n */
#define PERF_PSN_REQ 2000    /* requester's first PSN, as in the READ walk */
#define PERF_PSN_RESP 7000

struct perf_env;
struct perf_result;

/*
 * A way of running, chosen from main.c's table by the options (as
 * testpmd's struct fwd_engine): what each step does with a peer. NULL: the
 * step has nothing of the mode's to do (the pair in this process has no
 * peer to tell). The modes' files (remote.c, perftest.c) are reached only
 * through it, so the common ones (setup.c, worker.c) never call them.
 */
struct perf_mode {
	const char *name;
	/* the devices, QPs and the exchange with the peer; NULL: the pair here */
	int (*setup)(struct perf_env *env);
	/* --server: serve until done */
	int (*serve)(struct perf_env *env);
	/* one size, run the mode's own way instead of perf_run()'s loop */
	int (*run)(struct perf_env *env, uint32_t size, struct perf_result *r);
	/* before a size's traffic; while it runs (nonzero: the peer stopped
	 * it); after it, with the peer's count of verify errors */
	int (*run_begin)(struct perf_env *env, uint32_t size);
	int (*poll_stop)(struct perf_env *env);
	int (*run_end)(struct perf_env *env, const struct perf_result *r, uint64_t *verify_errors);
	/* the end: the peer told, the control connection closed */
	void (*bye)(struct perf_env *env);
};

struct perf_conf {
	const struct perf_mode *mode; /* main.c's choice after the options */
	enum perf_op op;
	uint32_t sizes[PERF_MAX_SIZES];
	unsigned int nb_sizes;
	uint32_t qps;
	uint32_t depth;
	enum ibv_mtu mtu;
	uint64_t iters;           /* per size, over all QPs; 0 with duration */
	double duration;          /* seconds per size; 0: iterations */
	bool lat;
	unsigned int unsignaled;  /* signal every Nth WR (1: all) */
	bool json;
	bool verify;
	bool trace;
	const char *pcap;
	unsigned int nb_lcores;   /* requester lcores (engines per device) */
	bool quiet;               /* no live stats */
	bool floors;              /* measure reference floors */
	bool mr_per_qp;           /* an MR per QP and side (perftest's --mr_per_qp); else one */
	uint16_t read_inline;     /* srnic_dev_conf.read_inline_max of our device(s) */
	struct srnic_lossy_conf loss; /* fault injection, both directions */
	bool lossy;
	/* two processes (--server / --client HOST), any DPDK port */
	enum perf_role role;
	const char *peer_host;
	uint16_t tcp_port;
	uint16_t port_id;         /* ethdev of this endpoint (from the EAL's --vdev or a NIC) */
	uint8_t ip[4];            /* this endpoint's IPv4 address */
	/* --peer-*: a server whose peer is given on the command line */
	bool peer_cmdline;
	uint32_t peer_qpn;
	uint32_t peer_psn;
	uint8_t peer_ip[4];
	struct rte_ether_addr peer_mac;
	bool peer_mac_set;
	bool perftest;            /* --perftest: perftest's exchange, its tools as the peer */
	bool cas;                 /* --atomic cas: CMP_AND_SWAP, else FETCH_AND_ADD */
	/* ---- output and defaults ---- */
	bool iters_given;         /* --iters: that many at every size */
	uint32_t pcap_snaplen;    /* --pcap-snaplen: bytes of a frame kept */
	uint64_t pcap_max_bytes;  /* --pcap-max: file size cap (0: none) */
	double stats_period;      /* --stats-period: live lines every this many s (0: off) */
	int remote_access;        /* IBV_ACCESS_REMOTE_* granted: the op's, plus --remote-access */
	enum ibv_mtu pmtu_eff;    /* the path MTU the QPs took (the port may clamp --mtu) */
	uint16_t port_mtu;        /* the Ethernet MTU the port took (two-process) */
	/* ---- perftest's and testpmd's habits ---- */
	bool persist;             /* --persist: a server that serves client after client */
	uint8_t max_rd_atomic;    /* -o/--outs: READs/atomics in flight per QP */
	uint8_t qp_timeout;       /* -u/--qp-timeout: ACK timeout, 4.096 us x 2^N */
	bool qp_timeout_set;      /* else perf_qp_conf()'s default */
	uint8_t retry_cnt;        /* --retry_count: ACK timeouts before the WR fails */
	uint32_t inline_size;     /* -I/--inline_size: SEND/WRITE of at most this go inline */
	bool histogram;           /* -H/--report-histogram: latency histogram */
	bool cpu_util;            /* --cpu_util: CPU time of the run */
	uint32_t nb_mbufs;        /* --total-num-mbufs: each device's mbuf pool (0: its default) */
};

/* perftest's figures for the options above */
#define PERF_QP_TIMEOUT_CLEAN 14  /* 67 ms: perftest's -u default */
#define PERF_QP_TIMEOUT_LOSSY 12  /* 16.8 ms: with injected loss (perf_qp_conf()) */
#define PERF_QP_TIMEOUT_MAX 31    /* the IB 5-bit field */
#define PERF_RETRY_CNT 7          /* the IB 3-bit field's largest, perftest's */
#define PERF_HIST_BUCKETS 48      /* latency histogram: powers of two of ns */
#define PERF_MBUFS_MIN 1024       /* --total-num-mbufs at least */

/* A two-process role's side of the pair (0: the client, requester; 1: the
 * server) and the first PSN that side sends with. */
static inline int
perf_side(const struct perf_conf *c)
{
	return c->role == PERF_ROLE_SERVER ? 1 : 0;
}

static inline uint32_t
perf_first_psn(int side)
{
	return side == 0 ? PERF_PSN_REQ : PERF_PSN_RESP;
}

struct perf_result {
	enum perf_op op;
	uint32_t size;
	uint32_t qps;
	uint32_t depth;
	uint32_t mtu;
	uint64_t msgs;
	uint64_t bytes;
	double seconds;
	double gbps;
	double mops;
	double gbps_peak;         /* the best PERF_PEAK_WINDOW_MS window (perftest's BW peak) */
	double mops_peak;
	double lat_us[5];         /* min, p50, p99, p999, max */
	double lat_avg_us;
	uint64_t errors;
	uint64_t verify_errors;
	double floor_gbps;        /* ICRC + memcpy per byte, same size, same run */
	double floor_mpps;        /* plain mbuf round trip on a net_ring pair */
	double floor_xc_mpps;     /* the op's mbufs carried across the two lcores */
	size_t qp_mem_bytes;      /* memory per QP (both sides' objects and buffers) */
	double busy_pct[2];       /* engine busy share during the run, side A / B; < 0: remote */
	double lat_stdev_us;      /* latency standard deviation */
	uint64_t lat_hist[PERF_HIST_BUCKETS]; /* samples in [2^k, 2^(k+1)) ns (bucket 0: < 2 ns) */
	size_t lat_n;             /* latency samples */
	double cpu_user_s;        /* --cpu_util: this process's CPU time over the run */
	double cpu_sys_s;
};

/* ---- output and defaults ---- */

/* Default iterations per size, when --iters is not given: a default run
 * moves about PERF_DEFAULT_BYTES per size, at least PERF_DEFAULT_ITERS_MIN
 * messages (perftest's DEF_ITERS) and at most PERF_DEFAULT_ITERS. perftest
 * runs the same -n (1000; 5000 for ib_write_bw) at every size. */
#define PERF_DEFAULT_BYTES (256ull << 20)
#define PERF_DEFAULT_ITERS_MIN 1000
#define PERF_STATS_PERIOD_DEFAULT 1.0     /* seconds between live lines */
#define PERF_PCAP_SNAPLEN_DEFAULT 128     /* every RoCEv2 header and some payload */
#define PERF_PCAP_MAX_MB_DEFAULT 256      /* --pcap stops writing at this file size */

/* signals.c: the first SIGINT/SIGTERM stops the run cleanly, a second exits */
void perf_signals_install(void);
bool perf_quitting(void);
/* The signal that asked to stop, 0 if none. */
int perf_quit_signal(void);

/* parameters.c */
int perf_parse_args(int argc, char **argv, struct perf_conf *c);
void perf_usage(const char *prog);
/* Is arg one of srnic-perf's own --options (not also an EAL option)? */
bool perf_is_own_option(const char *arg);
/** 0 if a CQ holds the completions of the QPs on one lcore, else -1 (printed). */
int perf_check_cq(const struct perf_conf *c);
const char *perf_op_name(enum perf_op op);
/* srnic-perf's version and what it speaks (-V). */
void perf_print_version(void);
/* --perftest against ib_write_lat / ib_send_lat: both ends send, each
 * answering the other (half a round trip, depth 1) */
bool perf_pt_pingpong(const struct perf_conf *c);

/* setup.c: the endpoints and QPs of a run */
struct perf_qp {
	struct srnic_qp *qp[2];       /* requester side 0, responder side 1 */
	uint8_t *buf[2];              /* depth slots of max size each */
	bool buf_heap[2];             /* from malloc (no hugepages left), not rte_malloc */
	struct srnic_mr *mr[2];
	uint32_t peer_rkey;           /* responder buffer key seen by the requester */
	uint64_t peer_va;
	uint32_t peer_stride;         /* bytes between WR slots on the peer (0: one address) */
	uint32_t lcore_idx;           /* requester worker */
	uint64_t posted;
	uint64_t completed;
	uint32_t outstanding;
	uint32_t unsig_run;           /* WRs since the last signaled one */
	uint8_t in_ready;             /* in its requester's ready list */
	uint64_t prev_retx;           /* live stats: retransmits at the last line */
	uint64_t prev_timeouts;
	uint64_t *t_post;             /* [depth]: TSC when WR n was posted, at n % depth */
	uint32_t post_slot;           /* posted % depth, kept without a division */
	uint32_t comp_slot;           /* completed % depth */
	uint64_t recv_posted;         /* SEND: RECVs posted on the responder, ever */
	uint32_t recv_slot;           /* recv_posted % depth */
	uint64_t recv_done;           /* SEND: RECVs completed, ever */
	uint64_t recv_run;            /* SEND: RECVs completed in this run */
	uint32_t first_psn;           /* two processes: this end's first PSN, new each session */
};

struct perf_env {
	struct perf_conf *conf;
	struct srnic_pair pair;       /* embedded only */
	struct srnic_dev *dev[2];     /* requester side 0, responder side 1; NULL if remote */
	struct srnic_pd *pd[2];
	int sock;                     /* TCP control connection, -1 if none */
	uint64_t remote_verify_errors; /* server: data errors seen in this run */
	uint64_t port_down_at[2];     /* timer cycles a device's port went down; 0: up */
	uint32_t run_size;            /* server: message size of the current run */
	struct srnic_cq *cq[2][PERF_MAX_LCORES];
	struct perf_qp *qps;
	uint32_t max_size;
	size_t qp_mem;
	struct srnic_lossy *loss[2]; /* on port A (B->A) and port B (A->B) */
	/* without --mr-per-qp: one buffer and MR per side, every QP's slots in it */
	uint8_t *buf_all[2];
	bool buf_all_heap[2];
	struct srnic_mr *mr_all[2];
	/* --server: the listening socket (-1 once closed) and the run in progress */
	int lsock;
	bool in_run;
	uint64_t run_t0;              /* timer cycles at RUN */
	int64_t run_base[4];          /* rx_pkts, rx_bytes, tx_pkts, tx_bytes at RUN */
};

/* Bytes between two WR slots of a QP's buffer: the largest message, and at
 * least an atomic's 8-byte result. */
#define PERF_SLOT_MIN 8u

static inline uint32_t
perf_slot_bytes(const struct perf_env *env)
{
	return RTE_MAX(env->max_size, PERF_SLOT_MIN);
}

int perf_setup(struct perf_env *env, struct perf_conf *c);
/* The local device of a two-process role (side 0: client, 1: server). */
int perf_setup_dev(struct perf_env *env, int side);
/* CQs, QPs and buffers of the local side(s); conf fields must be final. */
int perf_setup_qps(struct perf_env *env);
/* Connection attributes of every QP (path MTU, timers, rd_atomic). */
void perf_qp_conf(const struct perf_conf *c, struct srnic_pair_qp_conf *qc);
void perf_capture_start(struct perf_env *env);
/* A client's wait for its port's link, at most PERF_LINK_WAIT_S: 0,
 * -EINTR (a signal) or -ENETDOWN (said why); peer_said (remote mode:
 * perf_remote_poll_stop) reads what the server says meanwhile, its
 * non-zero ends the wait (-ESHUTDOWN: STOP, -ECONNRESET: closed); NULL: the
 * control connection's end ends it (-ECONNRESET, said). */
int perf_wait_link(struct perf_env *env, int (*peer_said)(struct perf_env *env));
/* The devices' asynchronous events, taken at each look of a wait or of
 * the run's control loop (srnic_get_async_event() also runs the port's
 * watch: a memif client whose server left is started again only then).
 * A port gone down (IBV_EVENT_PORT_ERR) is said at once; if it is still
 * down (the device's port queried after the events are drained) once
 * PERF_PORT_DOWN_GRACE_S have passed, a line naming the port and what to
 * do says so and -ENETDOWN returns: nothing can be sent or received any
 * more. Up again before (a PORT_ACTIVE, or the port found up): it goes on. A QP or CQ event that breaks the run
 * (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, PATH_MIG_ERR, CQ_ERR,
 * DEVICE_FATAL) is said in one line and returns -EIO (the failed
 * completion, if any, says the rest). say_up: a port's link coming up
 * is said too (a server with its peer on the command line has no other
 * news of it). 0 otherwise. */
int perf_async_check(struct perf_env *env, bool say_up);
void perf_capture_close(struct perf_env *env);
/* Deregister, destroy and free what perf_setup made (engines stopped). */
void perf_teardown(struct perf_env *env);

/* remote.c: the two-process control channel (perftest's habit) */
int perf_remote_setup(struct perf_env *env);
int perf_remote_run_begin(struct perf_env *env, uint32_t size);
/* A client mid-run: has the server said STOP (-ESHUTDOWN) or closed the
 * control connection (-ECONNRESET)? 0 if neither. Never blocks for long. */
int perf_remote_poll_stop(struct perf_env *env);
int perf_remote_run_end(struct perf_env *env, const struct perf_result *r,
			uint64_t *verify_errors);
void perf_remote_bye(struct perf_env *env);
/* TCP for the control connection: a socket, or -1 */
int perf_tcp_client(const char *host, uint16_t port);
int perf_tcp_server(uint16_t port);

/* perftest.c: perftest's own exchange (--perftest), its tools as the peer */
int perf_pt_setup(struct perf_env *env, int side);
int perf_pt_mode_setup(struct perf_env *env);
int perf_pt_run_end(struct perf_env *env, const struct perf_result *r, uint64_t *verify_errors);
int perf_pt_serve(struct perf_env *env);
void perf_pt_bye(struct perf_env *env);
/* ib_write_lat / ib_send_lat: both ends send, each answering the other */
int perf_pt_pingpong_run(struct perf_env *env, uint32_t size, struct perf_result *r);
int perf_serve(struct perf_env *env);
/* --server: one client's QPs, CQs and buffers gone (--persist, between clients) */
void perf_session_teardown(struct perf_env *env);

/* worker.c */
int perf_run(struct perf_env *env, uint32_t size, struct perf_result *r);
/* Responder-side preparation for one size (READ source, atomic counters). */
void perf_prepare_size(struct perf_env *env, uint32_t size);
/* Responder-side check after a run of WRITEs (each slot holds its last WR)
 * or atomics (each QP's counter ends at its WR count). */
uint64_t perf_check_writes(struct perf_env *env, uint32_t size, const uint64_t *posted);
/* Poll the responder side once (engines; SEND: RECVs reposted and checked). */
void perf_resp_poll_once(struct perf_env *env, uint32_t size, uint64_t *verify_errors);

/* stats.c */
void perf_print_header(const struct perf_conf *c);
void perf_print_result(const struct perf_conf *c, const struct perf_result *r);
void perf_print_counters(const struct perf_env *env);
/* The PMD's extended statistics of the port(s) in use, nonzero ones. */
void perf_print_xstats(const struct perf_env *env);
double perf_percentile(uint64_t *sorted, size_t n, double p);
/* Sort n latency samples (TSC cycles) and fill r's min, percentiles, max, avg. */
void perf_lat_fill(struct perf_result *r, uint64_t *samples, size_t n, double hz);

/* floor.c */
double perf_floor_gbps(uint32_t size);
double perf_floor_mpps(void);
double perf_floor_xcore_mpps(enum perf_op op);

/* ---- output and defaults ---- */
/* Messages a run of size bytes takes (the duration aside). */
uint64_t perf_iters(const struct perf_conf *c, uint32_t size);
/* IBV_ACCESS_* of the buffers and QPs: local write and the op's remote right. */
int perf_access(const struct perf_conf *c);
/* "read,write" for the rights in access (static buffer). */
const char *perf_access_str(int access);
/* The QPs' path MTU in bytes, and the port's clamp explained (stderr). */
void perf_note_pmtu(struct perf_env *env);
/* --json: one line with every nonzero engine counter of the local device(s). */
void perf_print_counters_json(const struct perf_env *env);
/* The name of a work completion's opcode (IBV_WC_*). */
const char *perf_wc_opcode_name(enum ibv_wc_opcode op);

#endif
