/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_E2E_FIXTURE_H
#define SRNIC_E2E_FIXTURE_H

/*
 * End-to-end fixture: two srnic devices over a net_ring pair in this
 * process (created once per test binary), a fresh CQ + RC QP on each side
 * per test, every frame either side receives captured (bytes copied, with
 * the port it arrived on and its RX burst), and a loop that drives both
 * engines from this thread until a condition holds or a deadline passes.
 *
 * Side 0 is "A" (p.dev[0], usually the requester), side 1 is "B". Frames
 * A sends are received on p.port[1]; frames B sends on p.port[0].
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "srnic.h"
#include "srnic_link.h"
#include "srnic_pair.h"
#include "srnic_wire.h"
#include "test_rc.h"
#include "test_ref.h"

/* Generous: ASan debug builds are several times slower. */
#define E2E_WAIT_S 20
#define E2E_MAX_PKTS 65536
#define E2E_MAX_WC 8192
#define E2E_RNR_RETRY_0 0xFF
/* Local write and every remote access: the usual MR and QP access flags. */
#define E2E_RALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | \
		  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

struct e2e_conf {
	enum ibv_mtu mtu;           /* 0: IBV_MTU_4096 */
	uint32_t psn[2];            /* initial send PSN of A and B */
	uint8_t max_rd_atomic[2];   /* requester limit per side; 0: 16 */
	uint8_t max_dest_rd_atomic[2]; /* responder limit per side; 0: 16 */
	int access[2];              /* QP access flags; 0: local write + remote all */
	int cqe;                    /* CQ entries per side; 0: 4096 */
	uint32_t max_send_wr;       /* 0: 1024 */
	uint32_t max_recv_wr;       /* 0: 1024 */
	bool no_send_wr[2];         /* that side's QP with max_send_wr 0 (receive only) */
	bool no_recv_wr[2];         /* that side's QP with max_recv_wr 0 */
	uint32_t max_inline;
	uint32_t max_sge;           /* SGEs per WR, send and recv; 0: 4 */
	uint8_t timeout;            /* local ACK timeout code; 0: 14 (67 ms) */
	uint8_t retry_cnt;          /* 0: 7; E2E_RNR_RETRY_0 for 0 */
	uint8_t rnr_retry[2];       /* 0: 7 (forever); E2E_RNR_RETRY_0 for 0 */
	bool sq_sig_all;
	bool no_connect;            /* leave the QPs in RESET */
	enum ibv_qp_type qp_type;   /* 0: IBV_QPT_RC (UC and UD: connect them yourself) */
};

/** One captured frame. */
struct e2e_pkt {
	uint16_t port;              /* port that received it */
	int side;                   /* side that SENT it (0: A, 1: B) */
	uint32_t burst;             /* RX burst number (same burst, same number) */
	uint32_t len;               /* frame bytes */
	uint8_t *data;              /* frame copy */
	int parse_rc;               /* srnic_pkt_parse() with flags 0 (ICRC checked) */
	/* from the parse, valid when parse_rc == SRNIC_PARSE_OK */
	uint8_t opcode;
	uint8_t pad;
	uint32_t mask;
	uint32_t psn;
	uint32_t dqpn;
	uint32_t pay_len;
	uint16_t l3_off, l4_off, bth_off, pay_off;
	uint16_t udp_sport;
};

/* Loss injection: drop frames sent by side whose opcode matches (-1: any),
 * after letting skip of them through, count of them. */
struct e2e_drop {
	int side;
	int opcode;
	uint32_t skip;
	uint32_t count;
	uint32_t dropped;           /* out */
};

struct e2e {
	struct srnic_pair p;
	struct srnic_engine *eng[2];
	struct srnic_cq *cq[2];
	struct srnic_qp *qp[2];
	struct e2e_conf conf;
	uint32_t pmtu;              /* bytes */
	/* capture */
	struct srnic_capture *cap[2];
	uint32_t npkts;
	uint32_t burst;
	uint64_t last_tsc[2];
	struct e2e_pkt pkts[E2E_MAX_PKTS];
	/* completions drained by e2e_poll() (unless no_drain) */
	bool no_drain;
	uint32_t nwc[2];
	struct ibv_wc wc[2][E2E_MAX_WC];
	int cq_err[2];              /* last negative srnic_poll_cq() result */
	/* loss injection, before the capture: dropped frames are not captured */
	struct e2e_drop drop;
	/* registered buffers, released in teardown */
	uint32_t nmr;
	struct srnic_mr *mr[32];
	void *buf[32];
};

extern struct e2e *E;

/* cmocka group setup/teardown (EAL + the pair) and per-test ones. */
int e2e_group_setup(void **state);
int e2e_group_teardown(void **state);
/* e2e_group_setup() with both devices' configuration from base (engines,
 * MTU, tx_seg_max, ...): srnic_pair_create_conf(). */
int e2e_group_setup_conf(const struct srnic_dev_conf *base);
/* Fresh QPs with the default conf (PMTU 4096). */
int e2e_setup(void **state);
int e2e_teardown(void **state);

/* Create CQs and QPs with conf and connect them (unless no_connect). */
void e2e_qps_create(const struct e2e_conf *conf);
void e2e_qps_destroy(void);
/* Destroy the current QPs and create fresh ones with conf. */
void e2e_qps_renew(const struct e2e_conf *conf);
/* Connect one QP to the peer QP with explicit attributes. */
int e2e_qp_connect(int side, enum ibv_mtu mtu, uint32_t sq_psn, uint32_t rq_psn,
		   uint8_t max_rd_atomic, uint8_t max_dest_rd_atomic, int access);
/* RESET -> INIT (port 1, P_Key index 0, Q_Key qkey) -> RTR -> RTS (sq_psn)
 * for a UD QP. */
void e2e_ud_up(struct srnic_qp *qp, uint32_t qkey, uint32_t sq_psn);

/* Allocate (zeroed) and register len bytes on a side. */
void *e2e_buf(int side, size_t len, int access, struct srnic_mr **mr);
/* The same, the MR's keys naming [iova, iova + len) (srnic_reg_mr_iova());
 * E2E_IOVA_SELF: the buffer's own address, as e2e_buf(). */
#define E2E_IOVA_SELF UINT64_MAX
void *e2e_buf_iova(int side, size_t len, uint64_t iova, int access, struct srnic_mr **mr);
/* srnic_rereg_mr() of a fixture's MR that must succeed: the new object,
 * the old one deregistered (its memory free) and the teardown given the new. */
struct srnic_mr *e2e_mr_rereg(struct srnic_mr *old, int flags, struct srnic_pd *pd, void *addr,
			      size_t len, int access);

/* The usual three buffers of a test, len bytes each: l on A (the local side
 * of A's WRs), r on B (the target of RDMA and atomics, E2E_RALL) and v on B
 * (where B's RECVs land, local write). Registered with e2e_buf(), so the
 * per-test teardown releases them: there is no free. */
struct e2e_bufs {
	uint8_t *l, *r, *v;
	struct srnic_mr *lmr, *rmr, *vmr;
	size_t len;
};

/* Allocate (zeroed) and register b's buffers; l with laccess. */
void e2e_bufs_new(struct e2e_bufs *b, size_t len, int laccess);
/* Fill l and r with srnic_test_fill() patterns of the two seeds. */
void e2e_bufs_fill(struct e2e_bufs *b, uint32_t lseed, uint32_t rseed);
/* Post op of len bytes at l + off (to/from r + roff for RDMA) on qp;
 * asserts the post succeeds. */
void e2e_bufs_post(const struct e2e_bufs *b, struct srnic_qp *qp, enum ibv_wr_opcode op,
		   uint64_t wr_id, uint32_t off, uint32_t len, uint32_t roff, unsigned int flags);
/* Post an atomic on qp: 8-byte result at l + off, target r + roff. */
void e2e_bufs_atomic(const struct e2e_bufs *b, struct srnic_qp *qp, enum ibv_wr_opcode op,
		     uint64_t wr_id, uint32_t off, uint32_t roff, uint64_t cmp_add, uint64_t swap,
		     unsigned int flags);
/* Post a RECV of len bytes at v + off on qp. */
void e2e_bufs_recv(const struct e2e_bufs *b, struct srnic_qp *qp, uint64_t wr_id, uint32_t off,
		   uint32_t len);

/* One WR wr_id of a mixed run (see e2e_check_mix_wcs) on A's QP, from
 * len bytes at l + off: op 0 SEND, 1 SEND_WITH_IMM, 2 RDMA_WRITE, 3
 * RDMA_WRITE_WITH_IMM (to r + roff), 4 RDMA_READ (from r + roff), 5
 * FETCH_AND_ADD of 1 on *counter (len must be 8); immediates are wr_id.
 * The RECVs B needs are the caller's to post. */
void e2e_bufs_mix_post(const struct e2e_bufs *b, uint8_t op, uint32_t wr_id, uint32_t off,
		       uint32_t len, uint32_t roff, uint64_t *counter, unsigned int flags);

/* Drive both engines once; drain the CQs into E->wc unless no_drain. */
void e2e_poll(void);
/* Poll until nothing moves for a few rounds (and at least n rounds). */
void e2e_settle(unsigned int n);
/* Poll only one side's engine once (no CQ drain). */
void e2e_poll_side(int side);
bool e2e_deadline_passed(uint64_t deadline);
/* When this thread last called each side's srnic_engine_poll() (timer
 * cycles, read just before the call): a TX callback runs inside that poll,
 * so this is within a few instructions of the engine's own clock read at
 * the poll's start, however late a preempted poll gets to its TX burst. */
extern uint64_t e2e_poll_tsc[2];
uint64_t e2e_deadline(void);

#define E2E_RUN_UNTIL(cond) do { \
	uint64_t dl__ = e2e_deadline(); \
	while (!(cond)) { \
		if (e2e_deadline_passed(dl__)) \
			fail_msg("timeout waiting for %s (%s:%d)", #cond, __FILE__, __LINE__); \
		e2e_poll(); \
	} \
} while (0)

/* Wait until side has n WCs since the last e2e_reset(); returns the n-th. */
const struct ibv_wc *e2e_wait_wc(int side, uint32_t n);
/* A's n-th WC (since e2e_reset()) is wr_id with status st; nak >= 0: B sent
 * exactly one NAK with that AETH syndrome (the capture dumped on a wrong
 * status). */
void e2e_expect_a(uint32_t n, uint64_t wr_id, enum ibv_wc_status st, int nak);

/* After a run of mixed WRs (wr_id i of lens[i] bytes; a RECV WC of
 * ops[i] 0 has no immediate, of any other op immediate i): A has sig
 * successful WCs and B nrecv, each side's in wr_id order, B's with the
 * right lengths and immediates. */
void e2e_check_mix_wcs(uint32_t sig, uint32_t nrecv, const uint32_t *lens, const uint8_t *ops);

/* Arm loss injection (see struct e2e_drop); e2e_reset() disarms it. */
void e2e_drop_arm(int side, int opcode, uint32_t skip, uint32_t count);

/* Reset captured frames and drained WCs. */
void e2e_reset(void);

/* Captured frames: helpers. */
static inline uint8_t *
e2e_bth(const struct e2e_pkt *k)
{
	return k->data + k->bth_off;
}
static inline uint8_t *
e2e_hdr(const struct e2e_pkt *k, enum srnic_hdr_id h)
{
	return k->data + k->bth_off + srnic_opcode_table[k->opcode].offset[h];
}
static inline uint8_t *
e2e_payload(const struct e2e_pkt *k)
{
	return k->data + k->pay_off;
}
/* Frames one side sent, in capture order, into idx (returns the count). */
uint32_t e2e_pkts_from(int side, uint32_t *idx, uint32_t max);
/* Dump the capture to stderr (on failures). */
void e2e_dump(void);

/* Post helpers. wr_id given; sge list built by the caller. */
void e2e_post_send(int side, struct ibv_send_wr *wr);
void e2e_post_recv(int side, struct ibv_recv_wr *wr);



/* Post one send WR of opcode with the given SGEs (raddr/rkey for RDMA). */
void e2e_post_op(int side, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
		 int nsge, uint64_t raddr, uint32_t rkey, unsigned int flags);
/* Post one signaled atomic WR on side's QP (asserts the post succeeds). */
void e2e_post_atomic(int side, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
		     uint64_t raddr, uint32_t rkey, uint64_t cmp_add, uint64_t swap);
/* Post one RECV with the given SGEs. */
void e2e_post_rx(int side, uint64_t wr_id, struct ibv_sge *sge, int nsge);

#endif /* SRNIC_E2E_FIXTURE_H */
