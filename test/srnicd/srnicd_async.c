/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnicd_async: async events of an attached context (doc/srnicd.md,
 * section 4), as a program sees them through rdma-core's API only (built
 * against the system's <infiniband/verbs.h>, run over srnic's
 * libibverbs.so.1 by usertools/srnic run with no --port).
 *
 *   srnicd_async qp_fatal   two contexts (two sessions) of the daemon's
 *                           device, RC QPs a and b over its own GID: b left
 *                           in RTR gets IBV_EVENT_COMM_EST at a's first SEND
 *                           (its bytes checked); b destroyed, a's next SEND
 *                           ends IBV_WC_RETRY_EXC_ERR and a's context gets
 *                           IBV_EVENT_QP_FATAL naming a, as rxe gives them
 *   srnicd_async srq_limit  b's QP on an SRQ of SRQ_WR WQEs, SRQ_POSTED
 *                           posted, the limit armed at SRQ_LIMIT: a's
 *                           SENDs land in the SRQ's WQEs in order, and
 *                           the take that leaves fewer than the limit
 *                           raises IBV_EVENT_SRQ_LIMIT_REACHED on b's
 *                           context, the limit then reads 0 (disarmed)
 *   srnicd_async ud_reply   UD QPs a and b of one context: b's receive of
 *                           a's datagram has src_qp a, IBV_WC_GRH, the 40-byte
 *                           GRH area first (20 zero bytes, then the IPv4
 *                           header from the device's address), the bytes;
 *                           b answers through ibv_create_ah_from_wc()
 *   srnicd_async ah_forged  a hostile program: UD sends naming an AH handle
 *                           of another session, then a destroyed one, each
 *                           through an ibv_ah it forged (the attached
 *                           provider's layout: struct ibv_ah, then the
 *                           daemon's handle): the daemon moves the QP to
 *                           ERR (bad_ring, which the test reads) and tells
 *                           it IBV_EVENT_QP_FATAL on that QP; a forged
 *                           ibv_destroy_ah of the other session's AH is
 *                           EBADF and that AH stays its owner's; the
 *                           destroyed one behind AH_ORDER_GOOD good sends
 *                           of one list: their CQEs (sent or flushed)
 *   srnicd_async ring_flush a failed QP's WQEs srnic never took: a UD QP's
 *                           RF_BEFORE good sends, one naming a destroyed
 *                           AH, RF_BEHIND behind it (one list), RF_AFTER
 *                           more once the QP is in ERR; RF_RECV receives
 *                           before, RF_AFTER after: every wr_id completes
 *                           in order, the bad one IBV_WC_LOC_QP_OP_ERR, the
 *                           rest IBV_WC_WR_FLUSH_ERR (the ones before it
 *                           sent or flushed), as a drain waits for them
 *   srnicd_async ring_hold  ring_flush with a CQ of RF_CQ_HOLD entries that
 *                           the program does not poll till a line on its
 *                           stdin (it prints "waiting" first): the WQEs
 *                           left wait for room, the engine asleep
 *                           (srnicd_verbs measures it), then every CQE
 *   srnicd_async ring_reset the same CQ, full; the QP to RESET (its WRs
 *                           dropped, the ring's too), then to ERR; a send
 *                           of another QP on the CQ: its CQE comes, none
 *                           of the dropped WRs' before or with it
 *   srnicd_async eintr      a blocking ibv_get_cq_event() ended by a SIGALRM
 *                           handled without SA_RESTART: -1, EINTR (as
 *                           rdma-core's read() of the kernel's channel)
 *   srnicd_async reg_past_eof  a MAP_PRIVATE file mapping whose second page
 *                           is past the file's end: ibv_reg_mr over it
 *                           EFAULT, no SIGBUS; its first page registers
 *   srnicd_async reg_fsize  under a file size limit (ulimit -f) below the
 *                           buffer's address: ibv_reg_mr EFBIG, no SIGXFSZ
 *   srnicd_async mcast_cap  the session's multicast attachments: as many as
 *                           ibv_query_device says, one more ENOMEM
 *   srnicd_async chan_full  the daemon's notification pipes, read ends
 *                           only: h never reads its channel while its CQ
 *                           fires (a CQE left unpolled, re-armed) until
 *                           the pipe is full (FIONREAD = F_GETPIPE_SZ),
 *                           then FULL_EVENTS_MORE armed SENDs complete into
 *                           it; g closes its channel's and async read ends
 *                           and gets a completion event and COMM_EST; two
 *                           other contexts still open, connect and exchange
 *                           a SEND; h's channel is readable, its event there
 *   srnicd_async poll_word  a hostile context a: it stores 1 in its
 *                           session's poll_sleep word (svc_state_line: "a
 *                           poller sleeps") and SVC_POLL_CPU_MIXED in its
 *                           poll_cpu before each of POLL_WORD_CQES
 *                           WRITEs and never sleeps on it, each completion
 *                           waited for on a completion channel (no poll
 *                           of the library sleeps): the
 *                           daemon's status before and after tells what
 *                           the word cost it (srnicd_verbs reads it)
 *   srnicd_async poll_owed  poll_word with poll_cpu forged to the engine's
 *                           CPU: each wake owed, paid to nobody
 *                           (srnicd_poll runs it beside a stream)
 *   srnicd_async chan_nofd  at its descriptor limit (RLIMIT_NOFILE, every
 *                           descriptor below it open), NOFD_TRIES
 *                           ibv_create_comp_channel calls: the kernel drops
 *                           each reply's pipe (MSG_CTRUNC), each call fails
 *                           EMFILE and gives the daemon's channel back, so
 *                           below the limit again CHANNELS_MAX channels are
 *                           made and one more is ENOSPC
 *   srnicd_async poll_busy  run on the daemon's engine's CPU while another
 *                           session keeps that engine busy (srnicd_poll):
 *                           POLL_BUSY_ROUNDS round trips, a's WRITE to b
 *                           then a's CQ polled until its CQE: each empty
 *                           poll sleeps (the engine's CPU); the test counts
 *                           under strace how many of those sleeps ended in
 *                           their timeout rather than the engine's wake
 *   srnicd_async poll_mixed POLL_MIXED_ROUNDS rounds: a thread pinned to
 *                           CPU 1 polls a's CQ until its CQE, each empty
 *                           poll asleep (the state line's eng_cpu forged
 *                           to say the engine runs there, as when the
 *                           scheduler moves it); one pinned to CPU 0 sleeps
 *                           once on a second CQ (eng_cpu back): poll_cpu
 *                           reads SVC_POLL_CPU_MIXED, not the last one's
 *                           CPU; a's WRITE then: the engine wakes the CPU 1
 *                           thread at once and replaces mixed (the test
 *                           reads the daemon's wakes_mixed, counted when
 *                           a wake found a sleeper, and wakes_deferred)
 *   srnicd_async poll_nap   on the engine's CPU, the state line's sleep
 *                           forged to 1 (the engine naps, nothing
 *                           expected): an empty poll returns without
 *                           sleeping (poll_sleep stays 0); forged to 2
 *                           (SVC_SLEEP_WAITING: a short nap while QPs wait
 *                           for the network): with a SEND of its own out
 *                           the (POLL_HOT + 1)th empty poll in a row
 *                           sleeps (poll_sleep 1), with nothing out none
 *   srnicd_async wait_nap   an RC SEND to a QPN nobody has (the daemon's
 *                           loopback drops it unanswered), ACK timeout
 *                           WAIT_NAP_TIMEOUT, 7 retries: the requester
 *                           waits ~0.5 s for its RETRY_EXC_ERR CQE, the
 *                           engine's naps meanwhile short (the test reads
 *                           the daemon's waiting_naps) and said in the
 *                           state line (sleep 2 seen while polling)
 *
 * Each event is waited for with poll() on the context's async_fd, as a
 * program does with the kernel's; GUARD_MS only stops a hang. Prints one
 * line per step; exit 0 when every step passed.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_rc_connect.h"

#define GID_INDEX 1         /* the daemon's IPv4 GID */
#define MSG_LEN 64
#define POLL_WORD_CQES 200
/* svc_shm's state line is its second cache line, poll_sleep its third word
 * (lib/svc/srnic_svc.h; this program sees only the system's headers) */
#define SHM_POLL_SLEEP (64 + 8)
#define SHM_SLEEP (64 + 4)      /* the engine naps */
#define SHM_ENG_CPU (64 + 12)
#define SHM_POLL_CPU (64 + 16)
#define POLL_CPU_MIXED 0xffffffffu  /* SVC_POLL_CPU_MIXED */
#define POLL_BUSY_ROUNDS 300
#define POLL_NAP_TRIES 50
#define SLEEP_WAITING 2     /* SVC_SLEEP_WAITING */
#define POLL_HOT 64         /* the library's SVA_POLL_HOT: empty polls before a sleep */
#define WAIT_NAP_TIMEOUT 14 /* 4.096 us << 14: 67 ms, 8 tries */
#define WAIT_NAP_QPN_OFF 0x1000 /* the bogus destination: the QP's own number + this */
#define POLL_NAP_TIMEOUT 18 /* 4.096 us << 18: ~1 s: the SEND stays out through the polls */
#define POLL_MIXED_ROUNDS 20
#define POLL_MIXED_TRIES 100 /* polls on CPU 0 a round, for one the engine was awake for */
#define BUF_LEN 4096
#define GUARD_MS 60000
#define SRQ_WR 8
#define SRQ_POSTED 6
#define SRQ_LIMIT 4         /* the third take leaves 3: the event */
#define SLOT 512
#define GRH_LEN 40
#define QKEY 0x11111111u
/* a session's channels (lib/svc/srnic_svc.h's SVC_SESSION_CHANNELS_MAX) */
#define CHANNELS_MAX 16
#define NOFD_TRIES (2 * CHANNELS_MAX)
#define NOFD_LIMIT 256      /* the lowered RLIMIT_NOFILE: every descriptor below it open */

static int fails;

static void
step(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	fails += !ok;
}

/* cond once, then the message (its arguments may be what cond filled) */
#define CHECK(cond, ...) do { \
	int c_ = (cond); \
	char m_[256]; \
	snprintf(m_, sizeof(m_), __VA_ARGS__); \
	step(c_, m_); \
	if (!c_) \
		return 1; \
} while (0)

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_srq *srq;
	struct ibv_comp_channel *ch;    /* with want_ch: the CQ's channel */
	int want_ch;
	uint8_t *buf;
};

static int
side_open(struct ibv_device *dev, struct side *s, int with_srq)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SRQ_WR, .max_sge = 1 } };
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};

	s->ctx = ibv_open_device(dev);
	if (s->ctx == NULL)
		return -1;
	s->pd = ibv_alloc_pd(s->ctx);
	if (s->want_ch && (s->ch = ibv_create_comp_channel(s->ctx)) == NULL)
		return -1;
	s->cq = ibv_create_cq(s->ctx, 8, NULL, s->ch, 0);
	s->buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->pd == NULL || s->cq == NULL || s->buf == MAP_FAILED)
		return -1;
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	qa.send_cq = qa.recv_cq = s->cq;
	if (with_srq) {
		s->srq = ibv_create_srq(s->pd, &sa);
		if (s->srq == NULL)
			return -1;
		qa.srq = s->srq;
	}
	s->qp = ibv_create_qp(s->pd, &qa);
	return s->mr != NULL && s->qp != NULL ? 0 : -1;
}

/* INIT, then RTR to the peer's QPN over our own GID (the daemon's loopback),
 * then RTS if asked: a short ACK timeout and one retry, so a peer that is
 * gone shows in milliseconds */
static int
side_connect(struct side *s, uint32_t dest_qpn, const union ibv_gid *gid, int rts)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = GID_INDEX;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER) != 0)
		return -1;
	if (!rts)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 8;          /* 4.096 us << 8: ~1 ms */
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One CQE of s's CQ (a guard stops a hang): 1, or 0 */
static int
cqe(struct side *s, struct ibv_wc *wc)
{
	long end = now_ms() + GUARD_MS;
	int n;

	while ((n = ibv_poll_cq(s->cq, 1, wc)) == 0 && now_ms() < end)
		;
	return n == 1;
}

/* The context's next async event, waited for with poll() on its async_fd */
static int
async_event(struct ibv_context *ctx, struct ibv_async_event *ev)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };

	if (poll(&p, 1, GUARD_MS) != 1 || !(p.revents & POLLIN))
		return 0;
	return ibv_get_async_event(ctx, ev) == 0;
}

static int
post_send(struct side *s, uint64_t id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf, .length = MSG_LEN, .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;

	return ibv_post_send(s->qp, &wr, &bad);
}

static int
qp_fatal(struct ibv_device *dev)
{
	struct ibv_async_event ev;
	struct ibv_recv_wr rwr, *rbad;
	struct side a, b;
	union ibv_gid gid;
	struct ibv_sge sg;
	struct ibv_wc wc = { .qp_num = 0 };
	int i;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK(side_open(dev, &a, 0) == 0 && side_open(dev, &b, 0) == 0,
	      "two contexts, a PD, CQ, MR and RC QP each (errno %d)", errno);
	CHECK(ibv_query_gid(a.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	sg = (struct ibv_sge){ .addr = (uintptr_t)b.buf, .length = BUF_LEN, .lkey = b.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 7, .sg_list = &sg, .num_sge = 1 };
	CHECK(side_connect(&a, b.qp->qp_num, &gid, 1) == 0 &&
	      side_connect(&b, a.qp->qp_num, &gid, 0) == 0,
	      "a in RTS, b in RTR (QPNs %#x, %#x)", a.qp->qp_num, b.qp->qp_num);
	CHECK(ibv_post_recv(b.qp, &rwr, &rbad) == 0, "b posts a receive");
	for (i = 0; i < MSG_LEN; i++)
		a.buf[i] = (uint8_t)(0xa5 ^ i);
	CHECK(post_send(&a, 1) == 0, "a SENDs %d bytes", MSG_LEN);
	CHECK(cqe(&a, &wc) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 1,
	      "a's SEND completes: status %d", wc.status);
	CHECK(cqe(&b, &wc) && wc.status == IBV_WC_SUCCESS && wc.byte_len == MSG_LEN &&
	      memcmp(a.buf, b.buf, MSG_LEN) == 0, "b receives the bytes: status %d len %u",
	      wc.status, wc.byte_len);
	/* the first packet b received in RTR: COMM_EST, b's context, b's QP */
	CHECK(async_event(b.ctx, &ev) && ev.event_type == IBV_EVENT_COMM_EST &&
	      ev.element.qp == b.qp, "b's context: IBV_EVENT_COMM_EST on b's QP (event %d)",
	      ev.event_type);
	ibv_ack_async_event(&ev);

	/* the peer gone: a's SEND is never answered */
	CHECK(ibv_destroy_qp(b.qp) == 0, "b's QP destroyed");
	CHECK(post_send(&a, 2) == 0, "a SENDs again");
	CHECK(cqe(&a, &wc) && wc.status == IBV_WC_RETRY_EXC_ERR && wc.wr_id == 2,
	      "a's SEND ends IBV_WC_RETRY_EXC_ERR (status %d)", wc.status);
	CHECK(async_event(a.ctx, &ev) && ev.event_type == IBV_EVENT_QP_FATAL &&
	      ev.element.qp == a.qp, "a's context: IBV_EVENT_QP_FATAL on a's QP (event %d)",
	      ev.event_type);
	ibv_ack_async_event(&ev);
	/* destroy returns: every event handed out was acknowledged */
	CHECK(ibv_destroy_qp(a.qp) == 0, "a's QP destroyed after the ack");
	ibv_dereg_mr(a.mr);
	ibv_dereg_mr(b.mr);
	ibv_destroy_cq(a.cq);
	ibv_destroy_cq(b.cq);
	ibv_dealloc_pd(a.pd);
	ibv_dealloc_pd(b.pd);
	ibv_close_device(a.ctx);
	ibv_close_device(b.ctx);
	return 0;
}

static void
side_close(struct side *s)
{
	if (s->qp != NULL)
		ibv_destroy_qp(s->qp);
	if (s->srq != NULL)
		ibv_destroy_srq(s->srq);
	ibv_dereg_mr(s->mr);
	ibv_destroy_cq(s->cq);
	if (s->ch != NULL)
		step(ibv_destroy_comp_channel(s->ch) == 0, "the CQ's channel destroyed");
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
}

static int
srq_limit(struct ibv_device *dev)
{
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_async_event ev;
	struct ibv_srq_attr sa;
	struct side a, b;
	union ibv_gid gid;
	struct ibv_sge sg;
	struct ibv_wc wc;
	int i, k;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	CHECK(side_open(dev, &a, 0) == 0 && side_open(dev, &b, 1) == 0,
	      "two contexts; b's RC QP on an SRQ of %d WQEs (errno %d)", SRQ_WR, errno);
	CHECK(ibv_query_gid(a.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	for (i = 0; i < SRQ_POSTED; i++) {
		sg = (struct ibv_sge){ .addr = (uintptr_t)b.buf + i * SLOT, .length = SLOT,
				       .lkey = b.mr->lkey };
		rwr = (struct ibv_recv_wr){ .wr_id = 100 + i, .sg_list = &sg, .num_sge = 1 };
		CHECK(ibv_post_srq_recv(b.srq, &rwr, &rbad) == 0, "WQE %d posted to the SRQ", i);
	}
	memset(&sa, 0, sizeof(sa));
	sa.max_wr = 2 * SRQ_WR;
	CHECK(ibv_modify_srq(b.srq, &sa, IBV_SRQ_MAX_WR) == EINVAL,
	      "a resize is EINVAL (the ring is made once)");
	sa.srq_limit = SRQ_LIMIT;
	CHECK(ibv_modify_srq(b.srq, &sa, IBV_SRQ_LIMIT) == 0, "the limit armed at %d", SRQ_LIMIT);
	memset(&sa, 0, sizeof(sa));
	CHECK(ibv_query_srq(b.srq, &sa) == 0 && sa.srq_limit == SRQ_LIMIT && sa.max_wr >= SRQ_WR,
	      "ibv_query_srq: max_wr %u, srq_limit %u", sa.max_wr, sa.srq_limit);
	CHECK(side_connect(&a, b.qp->qp_num, &gid, 1) == 0 &&
	      side_connect(&b, a.qp->qp_num, &gid, 1) == 0, "a and b in RTS");
	CHECK(ibv_post_recv(b.qp, &rwr, &rbad) == EINVAL, "a receive on b's QP itself is EINVAL");
	for (k = 0; k < SRQ_POSTED - SRQ_LIMIT + 1; k++) {
		for (i = 0; i < MSG_LEN; i++)
			a.buf[i] = (uint8_t)(k * 31 + i);
		CHECK(post_send(&a, k) == 0 && cqe(&a, &wc) && wc.status == IBV_WC_SUCCESS,
		      "a's SEND %d completes (status %d)", k, wc.status);
		CHECK(cqe(&b, &wc) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 100u + k &&
		      wc.qp_num == b.qp->qp_num && wc.byte_len == MSG_LEN &&
		      memcmp(a.buf, b.buf + k * SLOT, MSG_LEN) == 0,
		      "b: SRQ WQE %d took SEND %d (status %d, wr_id %lu, qp %#x)", k, k, wc.status,
		      (unsigned long)wc.wr_id, wc.qp_num);
	}
	CHECK(async_event(b.ctx, &ev) && ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
	      ev.element.srq == b.srq, "b's context: IBV_EVENT_SRQ_LIMIT_REACHED on its SRQ "
	      "(event %d)", ev.event_type);
	ibv_ack_async_event(&ev);
	memset(&sa, 0, sizeof(sa));
	CHECK(ibv_query_srq(b.srq, &sa) == 0 && sa.srq_limit == 0,
	      "the limit disarmed once it fired (srq_limit %u)", sa.srq_limit);
	CHECK(ibv_destroy_srq(b.srq) == EBUSY, "ibv_destroy_srq while a QP uses it: EBUSY");
	side_close(&a);
	side_close(&b);
	return 0;
}

static struct ibv_qp *
ud_qp(struct side *s)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = s->cq, .recv_cq = s->cq, .qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_qp *qp = ibv_create_qp(s->pd, &qa);

	if (qp == NULL ||
	    ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return NULL;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return NULL;
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0 ? qp : NULL;
}

/* qp receives one datagram into buf + off (GRH area first); 0 or -1 */
static int
ud_recv(struct side *s, struct ibv_qp *qp, size_t off)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf + off, .length = GRH_LEN + MSG_LEN,
			      .lkey = s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = off, .sg_list = &sg, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

static int
ud_send(struct side *s, struct ibv_qp *qp, struct ibv_ah *ah, uint32_t qpn, size_t off)
{
	struct ibv_sge sg = { .addr = (uintptr_t)s->buf + off, .length = MSG_LEN,
			      .lkey = s->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = off, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(qp, &wr, &bad);
}

static int
ud_reply(struct ibv_device *dev)
{
	static const uint8_t zero[GRH_LEN - 20];
	struct ibv_ah_attr aa;
	struct ibv_qp *qa, *qb;
	struct ibv_ah *ah, *back;
	union ibv_gid gid;
	struct side s;
	struct ibv_wc wc[2];
	const uint8_t *g;
	int i, n, got;

	memset(&s, 0, sizeof(s));
	s.ctx = ibv_open_device(dev);
	CHECK(s.ctx != NULL && (s.pd = ibv_alloc_pd(s.ctx)) != NULL &&
	      (s.cq = ibv_create_cq(s.ctx, 8, NULL, NULL, 0)) != NULL, "a context, PD, CQ");
	s.buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(s.buf != MAP_FAILED &&
	      (s.mr = ibv_reg_mr(s.pd, s.buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE)) != NULL, "an MR");
	CHECK((qa = ud_qp(&s)) != NULL && (qb = ud_qp(&s)) != NULL,
	      "UD QPs a and b in RTS, Q_Key %#x (errno %d)", QKEY, errno);
	CHECK(ibv_query_gid(s.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = GID_INDEX;
	aa.grh.hop_limit = 1;
	aa.port_num = 1;
	CHECK((ah = ibv_create_ah(s.pd, &aa)) != NULL, "an AH to the device's own GID");
	for (i = 0; i < MSG_LEN; i++)
		s.buf[i] = (uint8_t)(0x3c ^ i);
	CHECK(ud_recv(&s, qb, SLOT) == 0 && ud_send(&s, qa, ah, qb->qp_num, 0) == 0,
	      "b posts a receive, a sends %d bytes to b's QPN %#x", MSG_LEN, qb->qp_num);
	/* a's send CQE and b's receive CQE, in either order */
	for (got = 0; got < 2 && cqe(&s, &wc[got]); got++)
		;
	n = wc[0].opcode == IBV_WC_RECV ? 0 : 1;
	CHECK(got == 2 && wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS &&
	      wc[n].opcode == IBV_WC_RECV, "both complete (status %d, %d)", wc[0].status,
	      wc[1].status);
	g = s.buf + SLOT;
	CHECK(wc[n].qp_num == qb->qp_num && wc[n].src_qp == qa->qp_num &&
	      (wc[n].wc_flags & IBV_WC_GRH) && wc[n].byte_len == GRH_LEN + MSG_LEN,
	      "b's CQE: qp %#x, src_qp %#x (a %#x), IBV_WC_GRH %d, byte_len %u", wc[n].qp_num,
	      wc[n].src_qp, qa->qp_num, !!(wc[n].wc_flags & IBV_WC_GRH), wc[n].byte_len);
	CHECK(memcmp(g, zero, sizeof(zero)) == 0 && (g[20] >> 4) == 4 &&
	      memcmp(g + 20 + 12, gid.raw + 12, 4) == 0 && memcmp(g + 20 + 16, gid.raw + 12, 4) == 0,
	      "the GRH area: 20 zero bytes, an IPv4 header from and to %u.%u.%u.%u",
	      gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]);
	CHECK(memcmp(g + GRH_LEN, s.buf, MSG_LEN) == 0, "the datagram's bytes after it");
	/* the answer through the CQE, as a UD server answers any client */
	back = ibv_create_ah_from_wc(s.pd, &wc[n], (struct ibv_grh *)g, 1);
	CHECK(back != NULL, "ibv_create_ah_from_wc (errno %d)", errno);
	CHECK(ud_recv(&s, qa, 2 * SLOT) == 0 && ud_send(&s, qb, back, wc[n].src_qp, 0) == 0,
	      "b answers a through it");
	for (got = 0; got < 2 && cqe(&s, &wc[got]); got++)
		;
	n = wc[0].opcode == IBV_WC_RECV ? 0 : 1;
	CHECK(got == 2 && wc[n].status == IBV_WC_SUCCESS && wc[n].qp_num == qa->qp_num &&
	      wc[n].src_qp == qb->qp_num && memcmp(s.buf + 2 * SLOT + GRH_LEN, s.buf, MSG_LEN) == 0,
	      "a receives b's answer (status %d, src_qp %#x)", wc[n].status, wc[n].src_qp);
	CHECK(ibv_destroy_ah(back) == 0 && ibv_destroy_ah(ah) == 0 && ibv_destroy_qp(qa) == 0 &&
	      ibv_destroy_qp(qb) == 0, "AHs and QPs destroyed");
	s.qp = NULL;
	side_close(&s);
	return 0;
}

/* ah_forged: the good sends before the bad one (ud_qp's SQ holds 4) */
#define AH_ORDER_GOOD 3

/* what the attached provider's AH is: the verbs AH, then the handle */
struct forged_ah {
	struct ibv_ah ah;
	uint32_t handle;
};

static int
ah_forged(struct ibv_device *dev)
{
	struct ibv_send_wr wr[AH_ORDER_GOOD + 1], *bad;
	struct forged_ah f;
	struct ibv_ah_attr aa;
	struct ibv_ah *bah0, *bah, *own, *good;
	struct ibv_sge sg;
	struct ibv_wc wc = { .qp_num = 0 };
	int i;
	struct ibv_async_event ev;
	struct ibv_qp *q1, *q2;
	struct side a, b;
	union ibv_gid gid;
	uint32_t stale;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&ev, 0, sizeof(ev));
	CHECK(side_open(dev, &a, 0) == 0 && side_open(dev, &b, 0) == 0, "two contexts");
	CHECK(ibv_query_gid(a.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = GID_INDEX;
	aa.port_num = 1;
	/* handles are per session: b's second AH's slot is one a never had */
	CHECK((bah0 = ibv_create_ah(b.pd, &aa)) != NULL && (bah = ibv_create_ah(b.pd, &aa)) != NULL,
	      "b's AHs, the second's handle %#x", bah->handle);
	CHECK((own = ibv_create_ah(a.pd, &aa)) != NULL, "a's AH, handle %#x", own->handle);
	stale = own->handle;
	CHECK(ibv_destroy_ah(own) == 0, "a's AH destroyed");
	CHECK((q1 = ud_qp(&a)) != NULL && (q2 = ud_qp(&a)) != NULL, "a's UD QPs in RTS");

	memset(&f, 0, sizeof(f));
	f.ah.context = a.ctx;
	f.ah.pd = a.pd;
	f.ah.handle = f.handle = bah->handle;
	CHECK(ud_send(&a, q1, &f.ah, q2->qp_num, 0) == 0, "a posts a UD send naming b's AH");
	CHECK(verbs_qp_state_left(q1, IBV_QPS_RTS, GUARD_MS) == IBV_QPS_ERR, "the daemon moves a's QP to ERR");
	/* as a kernel provider reports a QP its device failed (a bad WQE) */
	CHECK(async_event(a.ctx, &ev) && ev.event_type == IBV_EVENT_QP_FATAL &&
	      ev.element.qp == q1, "a's context: IBV_EVENT_QP_FATAL on that QP (event %d)",
	      ev.event_type);
	ibv_ack_async_event(&ev);
	CHECK(ibv_destroy_ah(&f.ah) == EBADF, "a's ibv_destroy_ah of b's handle: EBADF");
	f.ah.handle = f.handle = stale;
	/* AH_ORDER_GOOD good sends in front of it, one list: each its CQE
	 * (sent, or flushed), the bad one failing the QP only after them */
	CHECK((good = ibv_create_ah(a.pd, &aa)) != NULL, "a's live AH");
	memset(wr, 0, sizeof(wr));
	for (i = 0; i <= AH_ORDER_GOOD; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = &sg;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].wr.ud.ah = i < AH_ORDER_GOOD ? good : &f.ah;
		wr[i].wr.ud.remote_qpn = q1->qp_num;
		wr[i].wr.ud.remote_qkey = QKEY;
		wr[i].next = i < AH_ORDER_GOOD ? &wr[i + 1] : NULL;
	}
	sg = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = MSG_LEN, .lkey = a.mr->lkey };
	CHECK(ibv_post_send(q2, &wr[0], &bad) == 0, "a posts %d UD sends, then one naming its "
	      "destroyed AH", AH_ORDER_GOOD);
	CHECK(verbs_qp_state_left(q2, IBV_QPS_RTS, GUARD_MS) == IBV_QPS_ERR, "the daemon moves that QP to ERR too");
	CHECK(async_event(a.ctx, &ev) && ev.event_type == IBV_EVENT_QP_FATAL &&
	      ev.element.qp == q2, "IBV_EVENT_QP_FATAL on it too (event %d)", ev.event_type);
	ibv_ack_async_event(&ev);
	for (i = 0; i < AH_ORDER_GOOD; i++) {
		/* q1's (a flush of its bad WQE, if the daemon gives one) aside */
		while (cqe(&a, &wc) && wc.qp_num != q2->qp_num)
			;
		CHECK(wc.qp_num == q2->qp_num && wc.wr_id == (uint64_t)i &&
		      (wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_WR_FLUSH_ERR),
		      "good send %d before it: its CQE (wr_id %llu, status %d)", i,
		      (unsigned long long)wc.wr_id, wc.status);
	}
	CHECK(ibv_destroy_ah(good) == 0, "a's live AH destroyed");
	CHECK(ibv_destroy_ah(bah) == 0 && ibv_destroy_ah(bah0) == 0,
	      "b's AHs are still b's: destroyed by b");
	CHECK(ibv_destroy_qp(q1) == 0 && ibv_destroy_qp(q2) == 0, "a's QPs destroyed");
	side_close(&a);
	side_close(&b);
	return 0;
}

/* ring_flush: a's UD QP, its SQ RF_SQ deep: RF_BEFORE good sends, one
 * naming a destroyed AH, RF_BEHIND good ones behind it (one list); then,
 * the QP in ERR, RF_AFTER sends more; receives RF_RECV before and
 * RF_AFTER after */
#define RF_SQ 16
#define RF_BEFORE 2
#define RF_BEHIND 5
#define RF_AFTER 2
#define RF_RECV 3
#define RF_SENDS (RF_BEFORE + 1 + RF_BEHIND + RF_AFTER)
#define RF_RECVS (RF_RECV + RF_AFTER)
#define RF_RECV_ID 100      /* the receives' wr_ids from here */
#define RF_CQ 64
#define RF_CQ_HOLD 4        /* ring_hold's CQ: less than its WRs' CQEs */
#define RF_MARK 999         /* ring_reset's send of the other QP */

enum rf_mode { RF_ALL, RF_HOLD, RF_RESET };

/* ring_flush's RF_RESET: q in ERR, its WRs' CQEs unpolled (the CQ full,
 * WQEs left in the ring): RESET drops them all, as verbs' RESET; then to
 * ERR, and sink's send (its doorbell a pass of the engine's): its CQE
 * comes, none of q's */
static int
ring_reset(struct side *a, struct ibv_qp *q, struct ibv_qp *sink, struct ibv_ah *good,
	   struct ibv_wc *wc)
{
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_RESET };
	struct ibv_sge sg = { .addr = (uintptr_t)a->buf, .length = MSG_LEN, .lkey = a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = RF_MARK, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;
	int of_q = 0, mark = 0;
	long end;

	CHECK(ibv_modify_qp(q, &at, IBV_QP_STATE) == 0, "the QP in ERR to RESET (its WRs dropped)");
	at.qp_state = IBV_QPS_ERR;
	CHECK(ibv_modify_qp(q, &at, IBV_QP_STATE) == 0, "then to ERR");
	wr.wr.ud.ah = good;
	wr.wr.ud.remote_qpn = sink->qp_num;
	wr.wr.ud.remote_qkey = QKEY;
	CHECK(ibv_post_send(sink, &wr, &bad) == 0, "the other QP's send (wr_id %d)", RF_MARK);
	end = now_ms() + GUARD_MS;
	while (!mark && now_ms() < end) {
		if (ibv_poll_cq(a->cq, 1, wc) != 1)
			continue;
		if (wc->qp_num == q->qp_num) {
			printf("a dropped WR's CQE: wr_id %llu, status %s\n",
			       (unsigned long long)wc->wr_id, ibv_wc_status_str(wc->status));
			of_q++;
		} else if (wc->wr_id == RF_MARK) {
			mark = 1;
		}
	}
	while (ibv_poll_cq(a->cq, 1, wc) == 1)
		if (wc->qp_num == q->qp_num)
			of_q++;
	CHECK(mark && of_q == 0, "the other QP's CQE came (%d), none of the WRs RESET dropped: %d",
	      mark, of_q);
	CHECK(ibv_destroy_ah(good) == 0 && ibv_destroy_qp(q) == 0 && ibv_destroy_qp(sink) == 0,
	      "AH and QPs destroyed");
	a->qp = NULL;
	side_close(a);
	return 0;
}

/* RF_HOLD: the CQ RF_CQ_HOLD deep, not polled till a line on stdin;
 * RF_RESET: that CQ, the QP to RESET and ERR before any poll */
static int
ring_flush(struct ibv_device *dev, enum rf_mode mode)
{
	bool hold = mode != RF_ALL;
	char line[16];

	struct ibv_send_wr wr[RF_SENDS], *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD, .sq_sig_all = 1,
		.cap = { .max_send_wr = RF_SQ, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };
	struct ibv_ah_attr aa;
	struct ibv_ah *good, *gone;
	struct ibv_sge sg, rsg;
	struct ibv_wc wc;
	struct forged_ah f;
	struct ibv_qp *q, *sink;
	struct side a;
	union ibv_gid gid;
	uint64_t sent[RF_SENDS], recvd[RF_RECVS];
	int status[RF_SENDS], rstatus[RF_RECVS];
	int i, ns = 0, nr = 0, other = 0;
	long end;

	memset(&a, 0, sizeof(a));
	a.ctx = ibv_open_device(dev);
	CHECK(a.ctx != NULL && (a.pd = ibv_alloc_pd(a.ctx)) != NULL &&
	      (a.cq = ibv_create_cq(a.ctx, hold ? RF_CQ_HOLD : RF_CQ, NULL, NULL, 0)) != NULL,
	      "a context, PD, CQ");
	a.buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(a.buf != MAP_FAILED &&
	      (a.mr = ibv_reg_mr(a.pd, a.buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE)) != NULL, "an MR");
	qa.send_cq = qa.recv_cq = a.cq;
	q = ibv_create_qp(a.pd, &qa);
	CHECK(q != NULL && ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_QKEY) == 0, "a UD QP, SQ %d deep, in INIT", RF_SQ);
	at.qp_state = IBV_QPS_RTR;
	CHECK(ibv_modify_qp(q, &at, IBV_QP_STATE) == 0, "RTR");
	at.qp_state = IBV_QPS_RTS;
	CHECK(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0, "RTS");
	/* the sends' target: a QP with no receive (its datagrams dropped) */
	CHECK((sink = ud_qp(&a)) != NULL, "a second UD QP, the sends' target");
	CHECK(ibv_query_gid(a.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = GID_INDEX;
	aa.port_num = 1;
	CHECK((good = ibv_create_ah(a.pd, &aa)) != NULL &&
	      (gone = ibv_create_ah(a.pd, &aa)) != NULL, "two AHs");
	memset(&f, 0, sizeof(f));
	f.ah.context = a.ctx;
	f.ah.pd = a.pd;
	f.ah.handle = f.handle = gone->handle;
	CHECK(ibv_destroy_ah(gone) == 0, "the second destroyed (a WQE naming it is bad)");
	rsg = (struct ibv_sge){ .addr = (uintptr_t)a.buf + SLOT, .length = GRH_LEN + MSG_LEN,
				.lkey = a.mr->lkey };
	for (i = 0; i < RF_RECV; i++) {
		rwr = (struct ibv_recv_wr){ .wr_id = RF_RECV_ID + (uint64_t)i, .sg_list = &rsg,
					    .num_sge = 1 };
		CHECK(ibv_post_recv(q, &rwr, &rbad) == 0, "receive %d posted", i);
	}
	sg = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = MSG_LEN, .lkey = a.mr->lkey };
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < RF_SENDS; i++) {
		wr[i].wr_id = (uint64_t)i;
		wr[i].sg_list = &sg;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].wr.ud.ah = i == RF_BEFORE ? &f.ah : good;
		wr[i].wr.ud.remote_qpn = sink->qp_num;
		wr[i].wr.ud.remote_qkey = QKEY;
		wr[i].next = i + 1 < RF_BEFORE + 1 + RF_BEHIND ? &wr[i + 1] : NULL;
	}
	CHECK(ibv_post_send(q, &wr[0], &bad) == 0, "%d good sends, one naming the destroyed AH, "
	      "%d good ones behind it: one list", RF_BEFORE, RF_BEHIND);
	CHECK(verbs_qp_state_left(q, IBV_QPS_RTS, GUARD_MS) == IBV_QPS_ERR,
	      "the daemon moves the QP to ERR");
	/* the program keeps posting to its QP in ERR, as verbs lets it */
	for (i = RF_BEFORE + 1 + RF_BEHIND; i < RF_SENDS; i++)
		CHECK(ibv_post_send(q, &wr[i], &bad) == 0, "send %d posted to the QP in ERR", i);
	for (i = RF_RECV; i < RF_RECVS; i++) {
		rwr = (struct ibv_recv_wr){ .wr_id = RF_RECV_ID + (uint64_t)i, .sg_list = &rsg,
					    .num_sge = 1 };
		CHECK(ibv_post_recv(q, &rwr, &rbad) == 0, "receive %d posted to the QP in ERR", i);
	}
	if (mode == RF_RESET)
		return ring_reset(&a, q, sink, good, &wc);
	if (hold) {
		/* the CQ full, the rest waiting for room: till told */
		printf("waiting\n");
		fflush(stdout);
		CHECK(fgets(line, sizeof(line), stdin) != NULL, "a line on stdin: poll now");
	}
	/* every WR's CQE (as a drain before ibv_destroy_qp waits for them) */
	end = now_ms() + GUARD_MS;
	while ((ns < RF_SENDS || nr < RF_RECVS) && now_ms() < end) {
		if (ibv_poll_cq(a.cq, 1, &wc) != 1)
			continue;
		if (wc.qp_num != q->qp_num) {
			printf("other: qp %#x (ours %#x) wr_id %llu status %d opcode %d\n",
			       wc.qp_num, q->qp_num, (unsigned long long)wc.wr_id, wc.status,
			       wc.opcode);
			other++;
		} else if (wc.opcode & IBV_WC_RECV || wc.wr_id >= RF_RECV_ID) {
			if (nr < RF_RECVS) {
				recvd[nr] = wc.wr_id;
				rstatus[nr++] = wc.status;
			}
		} else if (ns < RF_SENDS) {
			sent[ns] = wc.wr_id;
			status[ns++] = wc.status;
		}
	}
	CHECK(ns == RF_SENDS && nr == RF_RECVS && other == 0,
	      "every WR's CQE: %d of %d sends, %d of %d receives (%d of another QP)", ns, RF_SENDS,
	      nr, RF_RECVS, other);
	for (i = 0; i < RF_SENDS; i++)
		CHECK(sent[i] == (uint64_t)i &&
		      (i < RF_BEFORE ? status[i] == IBV_WC_SUCCESS ||
				       status[i] == IBV_WC_WR_FLUSH_ERR :
		       i == RF_BEFORE ? status[i] == IBV_WC_LOC_QP_OP_ERR :
					status[i] == IBV_WC_WR_FLUSH_ERR),
		      "send CQE %d: wr_id %llu, status %s", i, (unsigned long long)sent[i],
		      ibv_wc_status_str((enum ibv_wc_status)status[i]));
	for (i = 0; i < RF_RECVS; i++)
		CHECK(recvd[i] == RF_RECV_ID + (uint64_t)i && rstatus[i] == IBV_WC_WR_FLUSH_ERR,
		      "receive CQE %d: wr_id %llu, status %s", i, (unsigned long long)recvd[i],
		      ibv_wc_status_str((enum ibv_wc_status)rstatus[i]));
	CHECK(ibv_poll_cq(a.cq, 1, &wc) == 0, "then the CQ is empty");
	CHECK(ibv_destroy_ah(good) == 0 && ibv_destroy_qp(q) == 0 && ibv_destroy_qp(sink) == 0,
	      "AH and QPs destroyed");
	a.qp = NULL;
	side_close(&a);
	return 0;
}

/* A signal whose handler has no SA_RESTART ends a blocking
 * ibv_get_cq_event() with EINTR, as rdma-core's read() of the kernel's
 * channel does (qperf stops its timed tests so). */
static volatile sig_atomic_t alarms;

static void
on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static int
eintr(struct ibv_device *dev)
{
	struct sigaction sa = { .sa_handler = on_alarm };   /* sa_flags 0: no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 100000 } };
	struct ibv_comp_channel *ch;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *ev_cq;
	void *ev_ctx;
	int rc;

	ctx = ibv_open_device(dev);
	CHECK(ctx != NULL, "open the device");
	ch = ibv_create_comp_channel(ctx);
	CHECK(ch != NULL, "a completion channel");
	cq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	CHECK(cq != NULL && ibv_req_notify_cq(cq, 0) == 0, "a CQ on it, armed");
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0 && setitimer(ITIMER_REAL, &it, NULL) == 0,
	      "SIGALRM in 100 ms, handled without SA_RESTART");
	errno = 0;
	rc = ibv_get_cq_event(ch, &ev_cq, &ev_ctx);
	CHECK(rc == -1 && errno == EINTR && alarms == 1,
	      "ibv_get_cq_event blocked until the signal, then -1 EINTR (rc %d errno %d alarms %d)",
	      rc, errno, (int)alarms);
	CHECK(ibv_destroy_cq(cq) == 0 && ibv_destroy_comp_channel(ch) == 0 &&
	      ibv_close_device(ctx) == 0, "destroyed");
	return 0;
}

/* A private file mapping of two pages whose file is then cut to one: the
 * second page is past the file's end (a load of it is SIGBUS). Attached,
 * ibv_reg_mr copies the range's pages into its memfd: over both pages it
 * fails EFAULT (the kernel's ib_umem_get() pinning such a page: EFAULT),
 * the process alive; over the first alone it works and keeps the page's
 * contents (the program's store before the cut). */
static int
reg_past_eof(struct ibv_device *dev)
{
	char path[] = "/tmp/srnicd-async-eof-XXXXXX";
	long pg = sysconf(_SC_PAGESIZE);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *p;
	int fd;

	fd = mkstemp(path);
	CHECK(fd >= 0 && ftruncate(fd, 2 * pg) == 0, "a file of two pages");
	unlink(path);
	p = mmap(NULL, (size_t)(2 * pg), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED, "mapped MAP_PRIVATE");
	p[0] = 0xa5;
	CHECK(ftruncate(fd, pg) == 0, "the file cut to one page: the second is past its end");
	ctx = ibv_open_device(dev);
	CHECK(ctx != NULL, "open the device");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "a PD");
	errno = 0;
	mr = ibv_reg_mr(pd, p, (size_t)(2 * pg), IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr == NULL && errno == EFAULT,
	      "ibv_reg_mr over the page past the file's end: NULL, EFAULT (errno %d), no signal",
	      errno);
	mr = ibv_reg_mr(pd, p, (size_t)pg, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr != NULL && p[0] == 0xa5, "the first page alone registers, its byte kept (%#x)",
	      p[0]);
	CHECK(ibv_dereg_mr(mr) == 0 && p[0] == 0xa5, "deregistered, its byte kept");
	CHECK(ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0, "closed");
	munmap(p, (size_t)(2 * pg));
	close(fd);
	return 0;
}

/* Run under a file size limit (ulimit -f) below the buffer's address:
 * attached, ibv_reg_mr would grow its memfd to that address (pages live at
 * their addresses as offsets), which past the limit raises SIGXFSZ. It
 * fails EFBIG instead, the process alive (and says why on stderr). */
static int
reg_fsize(struct ibv_device *dev)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct rlimit rl;
	void *buf;

	CHECK(getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY,
	      "a file size limit (%llu bytes)", (unsigned long long)rl.rlim_cur);
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(buf != MAP_FAILED && (uintptr_t)buf > rl.rlim_cur, "a buffer at %p, past the limit",
	      buf);
	ctx = ibv_open_device(dev);
	CHECK(ctx != NULL, "open the device");
	pd = ibv_alloc_pd(ctx);
	CHECK(pd != NULL, "a PD");
	errno = 0;
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr == NULL && errno == EFBIG, "ibv_reg_mr: NULL, EFBIG (errno %d), no SIGXFSZ",
	      errno);
	CHECK(ibv_dealloc_pd(pd) == 0 && ibv_close_device(ctx) == 0, "closed");
	munmap(buf, BUF_LEN);
	return 0;
}

/* A group's GID: ff0e::ffff:239.86.0.n, an IPv4 multicast group as a
 * RoCEv2 GID (an IPv4-mapped address with the multicast prefix) */
static union ibv_gid
mc_gid(unsigned int n)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[0] = 0xff;
	g.raw[1] = 0x0e;
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = 239;
	g.raw[13] = 86;
	g.raw[14] = (uint8_t)(n >> 8);
	g.raw[15] = (uint8_t)n;
	return g;
}

/* The session's multicast attachments are capped: ibv_query_device says
 * how many (max_mcast_grp, max_total_mcast_qp_attach), that many attach
 * across two UD QPs, one more is ENOMEM, an attachment held already is
 * attached again (0, uncounted), a detach makes room. */
static int
mcast_cap(struct ibv_device *dev)
{
	struct ibv_device_attr da;
	struct ibv_qp *qp[2];
	struct side s;
	union ibv_gid g;
	int i, max, rc;

	memset(&s, 0, sizeof(s));
	CHECK(side_open(dev, &s, 0) == 0, "a context, PD and CQ");
	CHECK(ibv_query_device(s.ctx, &da) == 0 && da.max_mcast_grp > 0 &&
	      da.max_mcast_grp < 1024 && da.max_total_mcast_qp_attach == da.max_mcast_grp,
	      "ibv_query_device: max_mcast_grp %d, max_total_mcast_qp_attach %d (the session's)",
	      da.max_mcast_grp, da.max_total_mcast_qp_attach);
	max = da.max_mcast_grp;
	qp[0] = ud_qp(&s);
	qp[1] = ud_qp(&s);
	CHECK(qp[0] != NULL && qp[1] != NULL, "two UD QPs");
	for (i = 0, rc = 0; i < max && rc == 0; i++) {
		g = mc_gid((unsigned int)(i / 2));
		rc = ibv_attach_mcast(qp[i % 2], &g, 0);
	}
	CHECK(rc == 0, "%d attachments (two QPs in each of %d groups): attached (rc %d at %d)", max,
	      (max + 1) / 2, rc, i);
	g = mc_gid(0);
	CHECK(ibv_attach_mcast(qp[0], &g, 0) == 0, "one held already, attached again: 0");
	g = mc_gid((unsigned int)max);
	rc = ibv_attach_mcast(qp[0], &g, 0);
	CHECK(rc == ENOMEM, "one more: ENOMEM (rc %d)", rc);
	g = mc_gid(0);
	CHECK(ibv_detach_mcast(qp[0], &g, 0) == 0, "one detached");
	g = mc_gid((unsigned int)max);
	CHECK(ibv_attach_mcast(qp[0], &g, 0) == 0, "then the new group attaches");
	/* the session's end detaches the rest (a QP still attached is EBUSY
	 * to destroy, as uverbs): left to it */
	return 0;
}

/* b posts a receive, a arms its CQ and SENDs MSG_LEN bytes to b, both
 * CQEs polled: one completion event for the daemon to write (a's CQ was
 * armed before its SEND, whose CQE the engine writes after it saw the arm) */
static int
armed_send(struct side *a, struct side *b, uint64_t id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)b->buf, .length = BUF_LEN, .lkey = b->mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *rbad;
	struct ibv_wc wc;

	if (ibv_post_recv(b->qp, &rwr, &rbad) != 0 || ibv_req_notify_cq(a->cq, 0) != 0 ||
	    post_send(a, id) != 0)
		return 0;
	return cqe(a, &wc) && wc.status == IBV_WC_SUCCESS && wc.wr_id == id &&
	       cqe(b, &wc) && wc.status == IBV_WC_SUCCESS && wc.wr_id == id;
}

/* Bytes unread in a pipe (FIONREAD: nothing read) */
static int
pipe_unread(int fd)
{
	int n = -1;

	return ioctl(fd, FIONREAD, &n) == 0 ? n : -1;
}

/* A program can neither write nor block the daemon's notification pipes
 * (doc/srnicd.md, section 10): it gets their read ends only, and the
 * daemon's writes never wait. Two hostile contexts: h never reads its
 * channel while its CQ fires event after event (its pipe fills:
 * FULL_EVENTS_MORE writes then find it full), g closes the read ends of
 * its channel and async pipes and gets a completion event and COMM_EST
 * (the writes find no reader: EPIPE, SIGPIPE ignored). Meanwhile two
 * other contexts open, connect and exchange a SEND; h's wake is still
 * there. The test reads the daemon's counters (wake_full, wake_closed). */
#define FULL_EVENTS_MORE 16
static int
chan_full(struct ibv_device *dev)
{
	struct ibv_recv_wr rwr, *rbad;
	struct side h, b, g, e, c, d;
	struct pollfd pfd;
	struct ibv_cq *ev_cq;
	union ibv_gid gid;
	struct ibv_sge sg;
	struct ibv_wc wc;
	long arms = 0, end;
	int i, cap, devnull;
	void *ev_ctx;

	memset(&h, 0, sizeof(h));
	memset(&b, 0, sizeof(b));
	memset(&g, 0, sizeof(g));
	memset(&e, 0, sizeof(e));
	memset(&c, 0, sizeof(c));
	memset(&d, 0, sizeof(d));
	h.want_ch = g.want_ch = 1;
	CHECK(side_open(dev, &h, 0) == 0 && side_open(dev, &b, 0) == 0 &&
	      side_open(dev, &g, 0) == 0 && side_open(dev, &e, 0) == 0,
	      "h and g (a CQ on a channel each), b and e: a context, PD, CQ, MR and RC QP each "
	      "(errno %d)", errno);
	cap = fcntl(h.ch->fd, F_GETPIPE_SZ);
	CHECK(cap > 0 && write(h.ch->fd, "x", 1) < 0 && errno == EBADF &&
	      write(h.ctx->async_fd, "x", 1) < 0 && errno == EBADF,
	      "h's channel and async fds are the read ends of pipes (%d bytes): not writable "
	      "(errno %d)", cap, errno);
	CHECK(ibv_query_gid(h.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	CHECK(side_connect(&h, b.qp->qp_num, &gid, 1) == 0 &&
	      side_connect(&b, h.qp->qp_num, &gid, 1) == 0,
	      "h and b connected (QPNs %#x, %#x)", h.qp->qp_num, b.qp->qp_num);

	/* a CQE h never polls: each arm fires at the engine's next look, a
	 * byte into the pipe, until it is full */
	sg = (struct ibv_sge){ .addr = (uintptr_t)b.buf, .length = BUF_LEN, .lkey = b.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &sg, .num_sge = 1 };
	CHECK(ibv_post_recv(b.qp, &rwr, &rbad) == 0 && post_send(&h, 1) == 0 &&
	      cqe(&b, &wc) && wc.status == IBV_WC_SUCCESS,
	      "h SENDs to b: a CQE h does not poll yet (b's: status %d)", wc.status);
	end = now_ms() + GUARD_MS;
	while (pipe_unread(h.ch->fd) < cap && now_ms() < end) {
		ibv_req_notify_cq(h.cq, 0);
		arms++;
	}
	CHECK(pipe_unread(h.ch->fd) == cap, "h's pipe full, nothing read: %d bytes (%ld arms)",
	      pipe_unread(h.ch->fd), arms);
	CHECK(cqe(&h, &wc) && wc.wr_id == 1 && wc.status == IBV_WC_SUCCESS,
	      "h polls its CQE (the pipe untouched)");
	for (i = 0; i < FULL_EVENTS_MORE; i++)
		CHECK(armed_send(&h, &b, 10 + (uint64_t)i),
		      "h armed, its SEND %d completes into a full pipe", i);

	/* g: no reader on its pipes */
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(devnull >= 0 && dup2(devnull, g.ch->fd) == g.ch->fd &&
	      dup2(devnull, g.ctx->async_fd) == g.ctx->async_fd,
	      "g closes the read ends of its channel and async pipes (the numbers kept)");
	close(devnull);
	CHECK(side_connect(&g, e.qp->qp_num, &gid, 0) == 0 &&
	      side_connect(&e, g.qp->qp_num, &gid, 1) == 0,
	      "g in RTR, e in RTS (QPNs %#x, %#x)", g.qp->qp_num, e.qp->qp_num);
	sg = (struct ibv_sge){ .addr = (uintptr_t)g.buf, .length = BUF_LEN, .lkey = g.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 7, .sg_list = &sg, .num_sge = 1 };
	CHECK(ibv_post_recv(g.qp, &rwr, &rbad) == 0 && ibv_req_notify_cq(g.cq, 0) == 0,
	      "g posts a receive and arms its CQ");
	CHECK(post_send(&e, 3) == 0 && cqe(&e, &wc) && wc.status == IBV_WC_SUCCESS &&
	      cqe(&g, &wc) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7,
	      "e's SEND lands in g (a completion event and COMM_EST for g, no reader): "
	      "status %d", wc.status);

	/* the other sessions: control calls and traffic */
	CHECK(side_open(dev, &c, 0) == 0 && side_open(dev, &d, 0) == 0,
	      "c and d open and make their objects (errno %d)", errno);
	CHECK(side_connect(&c, d.qp->qp_num, &gid, 1) == 0 &&
	      side_connect(&d, c.qp->qp_num, &gid, 1) == 0, "c and d connected");
	sg = (struct ibv_sge){ .addr = (uintptr_t)d.buf, .length = BUF_LEN, .lkey = d.mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 5, .sg_list = &sg, .num_sge = 1 };
	CHECK(ibv_post_recv(d.qp, &rwr, &rbad) == 0, "d posts a receive");
	for (i = 0; i < MSG_LEN; i++)
		c.buf[i] = (uint8_t)(0x96 ^ i);
	CHECK(post_send(&c, 2) == 0, "c SENDs %d bytes to d", MSG_LEN);
	CHECK(cqe(&c, &wc) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 2,
	      "c's SEND completes: status %d", wc.status);
	CHECK(cqe(&d, &wc) && wc.status == IBV_WC_SUCCESS && wc.byte_len == MSG_LEN &&
	      memcmp(c.buf, d.buf, MSG_LEN) == 0, "d receives the bytes: status %d len %u",
	      wc.status, wc.byte_len);

	/* h's wake is there: readable, its event names its CQ */
	pfd = (struct pollfd){ .fd = h.ch->fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, GUARD_MS) == 1 && (pfd.revents & POLLIN) &&
	      ibv_get_cq_event(h.ch, &ev_cq, &ev_ctx) == 0 && ev_cq == h.cq,
	      "h's channel readable, its event names h's CQ");
	ibv_ack_cq_events(h.cq, 1);
	printf("wake_full_min %d\n", FULL_EVENTS_MORE);
	side_close(&c);
	side_close(&d);
	side_close(&e);
	side_close(&g);
	side_close(&b);
	side_close(&h);
	return 0;
}

/* The start of the one session memory this process maps now, or NULL */
static uint8_t *
session_shm(void)
{
	char line[512];
	uint8_t *base = NULL;
	unsigned long lo;
	int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, "/memfd:srnicd-session") != NULL && sscanf(line, "%lx-", &lo) == 1) {
			base = (uint8_t *)lo;
			n++;
		}
	}
	fclose(f);
	return n == 1 ? base : NULL;
}

static uint32_t
word_at(uint8_t *shm, size_t off)
{
	return __atomic_load_n((uint32_t *)(shm + off), __ATOMIC_SEQ_CST);
}

/* owed 0: poll_cpu forged mixed before each post (the engine wakes at
 * once); 1: forged to the engine's CPU (the wake owed, paid later) */
static int
poll_word(struct ibv_device *dev, int owed)
{
	struct ibv_sge sg;
	struct ibv_send_wr wr, *bad;
	struct ibv_mr *bmr;
	struct ibv_cq *ev_cq;
	struct side a, b;
	union ibv_gid gid;
	struct ibv_wc wc;
	uint32_t *word, *pcw;
	uint8_t *shm;
	void *ev_ctx;
	int i, got = 0;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.want_ch = 1;
	CHECK(side_open(dev, &a, 0) == 0, "a: a context, PD, CQ on a channel, MR, RC QP");
	shm = session_shm();
	CHECK(shm != NULL, "a's session memory found in /proc/self/maps");
	CHECK(side_open(dev, &b, 0) == 0, "b: another context and its objects");
	bmr = ibv_reg_mr(b.pd, b.buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(bmr != NULL, "b's buffer open to remote writes");
	CHECK(ibv_query_gid(a.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	CHECK(side_connect(&a, b.qp->qp_num, &gid, 1) == 0 &&
	      side_connect(&b, a.qp->qp_num, &gid, 1) == 0, "a and b in RTS");
	word = (uint32_t *)(shm + SHM_POLL_SLEEP);
	pcw = (uint32_t *)(shm + SHM_POLL_CPU);
	for (i = 0; i < POLL_WORD_CQES; i++) {
		/* "a poller sleeps" (where: mixed, or the engine's CPU),
		 * before each post: the pass that writes its CQE finds the 1 */
		__atomic_store_n(pcw, owed ? word_at(shm, SHM_ENG_CPU) : POLL_CPU_MIXED,
				 __ATOMIC_SEQ_CST);
		__atomic_store_n(word, 1, __ATOMIC_SEQ_CST);
		sg = (struct ibv_sge){ .addr = (uintptr_t)a.buf, .length = MSG_LEN, .lkey = a.mr->lkey };
		wr = (struct ibv_send_wr){ .wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1,
					   .opcode = IBV_WR_RDMA_WRITE,
					   .send_flags = IBV_SEND_SIGNALED,
					   .wr.rdma = { .remote_addr = (uintptr_t)b.buf,
							.rkey = bmr->rkey } };
		if (ibv_req_notify_cq(a.cq, 0) != 0 || ibv_post_send(a.qp, &wr, &bad) != 0 ||
		    ibv_get_cq_event(a.ch, &ev_cq, &ev_ctx) != 0)
			break;
		ibv_ack_cq_events(a.cq, 1);
		/* the CQE is in the ring before its event */
		if (ibv_poll_cq(a.cq, 1, &wc) != 1 || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != (uint64_t)i)
			break;
		got++;
	}
	CHECK(got == POLL_WORD_CQES, "a's %d WRITEs completed, each after its event: %d",
	      POLL_WORD_CQES, got);
	printf("%s: %d cqes\n", owed ? "poll_owed" : "poll_word", got);
	ibv_dereg_mr(bmr);
	side_close(&b);
	side_close(&a);
	return 0;
}

/* A CREATE_CHANNEL reply whose descriptor does not arrive: the daemon made
 * the channel, the library gives it back (DESTROY_CHANNEL) before it fails.
 * Not given back, each one held a slot of the session's until its end,
 * and the (CHANNELS_MAX + 1)-th call was ENOSPC. */
static int
chan_nofd(struct ibv_device *dev)
{
	struct ibv_comp_channel *ch[CHANNELS_MAX + 1];
	static int fill[NOFD_LIMIT];
	struct ibv_context *ctx;
	struct rlimit rl, low;
	unsigned int i, nfill = 0;
	int fd;

	ctx = ibv_open_device(dev);
	CHECK(ctx != NULL, "open the device");
	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0, "RLIMIT_NOFILE");
	low = rl;
	low.rlim_cur = NOFD_LIMIT;
	CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "RLIMIT_NOFILE lowered to %d", NOFD_LIMIT);
	while (nfill < NOFD_LIMIT && (fd = dup(ctx->async_fd)) >= 0) /* a descriptor we hold */
		fill[nfill++] = fd;
	CHECK(nfill < NOFD_LIMIT && errno == EMFILE, "every descriptor below the limit open "
	      "(%u more)", nfill);
	for (i = 0; i < NOFD_TRIES; i++) {
		struct ibv_comp_channel *c;

		errno = 0;
		c = ibv_create_comp_channel(ctx);
		CHECK(c == NULL && errno == EMFILE, "ibv_create_comp_channel %u at the limit: "
		      "NULL, EMFILE (errno %d, %s)", i + 1, errno, strerror(errno));
	}
	for (i = 0; i < nfill; i++)
		close(fill[i]);
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0, "RLIMIT_NOFILE back");
	for (i = 0; i < CHANNELS_MAX; i++) {
		ch[i] = ibv_create_comp_channel(ctx);
		CHECK(ch[i] != NULL, "below the limit: channel %u of %u (errno %d, %s)", i + 1,
		      CHANNELS_MAX, ch[i] == NULL ? errno : 0, ch[i] == NULL ? strerror(errno) : "");
	}
	errno = 0;
	ch[i] = ibv_create_comp_channel(ctx);
	CHECK(ch[i] == NULL && errno == ENOSPC, "one more: NULL, ENOSPC (errno %d): the "
	      "session's limit still holds", errno);
	for (i = 0; i < CHANNELS_MAX; i++)
		CHECK(ibv_destroy_comp_channel(ch[i]) == 0, "channel %u destroyed", i + 1);
	CHECK(ibv_close_device(ctx) == 0, "closed");
	return 0;
}

/* a and b, two contexts, a's buffer WRITEs into b's (b's MR open to them) */
static int
write_pair(struct ibv_device *dev, struct side *a, struct side *b, struct ibv_mr **bmr,
	   uint8_t **shm)
{
	union ibv_gid gid;

	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	CHECK(side_open(dev, a, 0) == 0, "a: a context, PD, CQ, MR, RC QP");
	if (shm != NULL) {
		*shm = session_shm();
		CHECK(*shm != NULL, "a's session memory found in /proc/self/maps");
	}
	CHECK(side_open(dev, b, 0) == 0, "b: another context and its objects");
	*bmr = ibv_reg_mr(b->pd, b->buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK(*bmr != NULL, "b's buffer open to remote writes");
	CHECK(ibv_query_gid(a->ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	CHECK(side_connect(a, b->qp->qp_num, &gid, 1) == 0 &&
	      side_connect(b, a->qp->qp_num, &gid, 1) == 0, "a and b in RTS");
	return 0;
}

static int
post_write(struct side *a, struct ibv_mr *bmr, uint64_t id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)a->buf, .length = MSG_LEN, .lkey = a->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = (uintptr_t)bmr->addr,
					       .rkey = bmr->rkey } }, *bad;

	return ibv_post_send(a->qp, &wr, &bad);
}

static int
pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int
poll_busy(struct ibv_device *dev)
{
	struct side a, b;
	struct ibv_mr *bmr;
	struct ibv_wc wc;
	int i, got = 0;

	if (write_pair(dev, &a, &b, &bmr, NULL) != 0)
		return 1;
	for (i = 0; i < POLL_BUSY_ROUNDS; i++) {
		if (post_write(&a, bmr, (uint64_t)i) != 0 || !cqe(&a, &wc) ||
		    wc.status != IBV_WC_SUCCESS || wc.wr_id != (uint64_t)i)
			break;
		got++;
	}
	CHECK(got == POLL_BUSY_ROUNDS, "a's %d WRITEs completed one at a time: %d",
	      POLL_BUSY_ROUNDS, got);
	printf("poll_busy: %d round trips\n", got);
	ibv_dereg_mr(bmr);
	side_close(&b);
	side_close(&a);
	return 0;
}

struct poller {
	struct ibv_cq *cq;
	int cpu;
	int n;                      /* what its one poll returned */
};

/* one empty poll of p->cq on CPU p->cpu: it sleeps there (and times out) */
static void *
poller_run(void *arg)
{
	struct poller *p = arg;
	struct ibv_wc wc;

	p->n = pin(p->cpu) != 0 ? -1 : ibv_poll_cq(p->cq, 1, &wc);
	return NULL;
}

static int
poller_once(struct ibv_cq *cq, int cpu)
{
	struct poller p = { .cq = cq, .cpu = cpu, .n = -1 };
	pthread_t t;

	if (pthread_create(&t, NULL, poller_run, &p) != 0 || pthread_join(t, NULL) != 0)
		return -1;
	return p.n;
}

/* a's CQ polled on CPU 1 until its CQE: each empty poll sleeps there
 * while eng_cpu says 2 */
struct looper {
	struct ibv_cq *cq;
	int n;                      /* CQEs taken */
	int stop;                   /* the test failed: back now */
};

/* A CHECK while the looper polls: a failure stops and joins it before the
 * return (it polled on into a context torn down under it: SIGSEGV) */
#define CHECK_LOOPING(l, t, cond, ...) do { \
	int lc_ = (cond); \
	if (!lc_) { \
		__atomic_store_n(&(l)->stop, 1, __ATOMIC_RELAXED); \
		pthread_join((t), NULL); \
	} \
	CHECK(lc_, __VA_ARGS__); \
} while (0)

static void *
looper_run(void *arg)
{
	struct looper *l = arg;
	struct ibv_wc wc;
	long end = now_ms() + GUARD_MS;

	if (pin(1) != 0)
		return NULL;
	while (l->n == 0 && !__atomic_load_n(&l->stop, __ATOMIC_RELAXED) && now_ms() < end)
		l->n = ibv_poll_cq(l->cq, 1, &wc);
	return NULL;
}

static int
poll_mixed(struct ibv_device *dev)
{
	struct ibv_cq *cq2;
	struct side a, b;
	struct ibv_mr *bmr;
	struct looper l;
	pthread_t t;
	uint8_t *shm;
	uint32_t eng, pc, *engw;
	long end;
	int r, k, mixed = 0;

	if (write_pair(dev, &a, &b, &bmr, &shm) != 0)
		return 1;
	/* a second CQ of a's context (session), never written */
	cq2 = ibv_create_cq(a.ctx, 8, NULL, NULL, 0);
	CHECK(cq2 != NULL, "a second CQ in a's context");
	/* the engine's next pass tells the new session where it runs */
	end = now_ms() + GUARD_MS;
	while (word_at(shm, SHM_ENG_CPU) == 0 && now_ms() < end)
		;
	eng = word_at(shm, SHM_ENG_CPU);
	CHECK(eng == 1, "the engine runs on CPU 0: eng_cpu %u", eng);
	CHECK(word_at(shm, SHM_SLEEP) == 0, "the engine is awake (another session's traffic)");
	/* eng_cpu forged: the engine rewrites it only when its own CPU
	 * changes (pinned to CPU 0: never), so a forged value stays */
	engw = (uint32_t *)(shm + SHM_ENG_CPU);
	for (r = 0; r < POLL_MIXED_ROUNDS; r++) {
		/* as if the engine had moved to CPU 1: a thread there sleeps
		 * on a's CQ, poll after poll, until the round's CQE */
		__atomic_store_n(engw, 2, __ATOMIC_SEQ_CST);
		l = (struct looper){ .cq = a.cq };
		CHECK(pthread_create(&t, NULL, looper_run, &l) == 0, "a thread polling on CPU 1");
		end = now_ms() + GUARD_MS;
		while ((word_at(shm, SHM_POLL_CPU) != 2 || word_at(shm, SHM_POLL_SLEEP) != 1) &&
		       now_ms() < end)
			;
		/* the engine back on CPU 0: a thread there sleeps once too,
		 * unless the engine naps as it polls (between the stream's
		 * packets: a poll then rightly does not sleep): tried again,
		 * POLL_MIXED_TRIES at most */
		for (k = 0; k < POLL_MIXED_TRIES; k++) {
			__atomic_store_n(engw, eng, __ATOMIC_SEQ_CST);
			CHECK_LOOPING(&l, t, poller_once(cq2, 0) == 0,
				      "a thread on CPU 0 polls the empty second CQ");
			__atomic_store_n(engw, 2, __ATOMIC_SEQ_CST);
			if (word_at(shm, SHM_POLL_CPU) == POLL_CPU_MIXED)
				break;
		}
		pc = word_at(shm, SHM_POLL_CPU);
		mixed += pc == POLL_CPU_MIXED;
		CHECK_LOOPING(&l, t, pc == POLL_CPU_MIXED, "round %d: pollers of one session "
			      "asleep on two CPUs: poll_cpu %#x (want %#x, mixed; CPU 0's 1 alone "
			      "would put off the other's wake)", r, pc, POLL_CPU_MIXED);
		/* a CQE of the session: the engine wakes the looper at once
		 * (wakes_mixed, counted when it found a sleeper) and stores 0
		 * in poll_cpu; only the engine replaces mixed */
		CHECK_LOOPING(&l, t, post_write(&a, bmr, (uint64_t)r) == 0,
			      "round %d: a's WRITE posted", r);
		CHECK(pthread_join(t, NULL) == 0 && l.n == 1, "round %d: the thread on CPU 1 "
		      "took its CQE: %d", r, l.n);
		end = now_ms() + GUARD_MS;
		while (word_at(shm, SHM_POLL_CPU) == POLL_CPU_MIXED && now_ms() < end)
			;
		CHECK(word_at(shm, SHM_POLL_CPU) != POLL_CPU_MIXED, "round %d: the engine "
		      "started poll_cpu afresh", r);
	}
	__atomic_store_n(engw, eng, __ATOMIC_SEQ_CST);
	printf("poll_mixed: poll_cpu mixed in %d of %d rounds\n", mixed, POLL_MIXED_ROUNDS);
	ibv_destroy_cq(cq2);
	ibv_dereg_mr(bmr);
	side_close(&b);
	side_close(&a);
	return 0;
}

/* The session's eng_cpu once the engine's next pass has told it where it
 * runs (a guard stops a hang) */
static uint32_t
eng_cpu_told(uint8_t *shm)
{
	long end = now_ms() + GUARD_MS;

	while (word_at(shm, SHM_ENG_CPU) == 0 && now_ms() < end)
		;
	return word_at(shm, SHM_ENG_CPU);
}

static int
poll_nap(struct ibv_device *dev)
{
	struct side a;
	struct ibv_wc wc;
	union ibv_gid gid;
	uint8_t *shm;
	int i, n = -1, decided = 0;

	CHECK(pin(0) == 0, "pinned to CPU 0");
	for (i = 0; i < POLL_NAP_TRIES && !decided; i++) {
		memset(&a, 0, sizeof(a));
		CHECK(side_open(dev, &a, 0) == 0, "a context, PD, CQ, MR, RC QP");
		shm = session_shm();
		CHECK(shm != NULL, "its session memory found in /proc/self/maps");
		CHECK(eng_cpu_told(shm) == 1, "the engine runs on CPU 0: eng_cpu %u",
		      word_at(shm, SHM_ENG_CPU));
		/* the nap's word forged (awake or napping, the engine): it
		 * stores sleep only as its own nap begins (1) and ends (0),
		 * so the poll reads this 1 unless a nap ends between the store
		 * and its look, a few instructions against naps of up to
		 * 10 ms; such a poll reads 0 and sleeps (poll_sleep 1): a
		 * failure, never a false pass. The word reading 0 after the
		 * poll: another try. No post here would find the 1 (it would
		 * cost a FUTEX_WAKE of the engine, nothing else). Waiting for
		 * a real nap instead proved nothing: 1 before and after the
		 * poll can be two naps with a pass between. */
		__atomic_store_n((uint32_t *)(shm + SHM_SLEEP), 1, __ATOMIC_SEQ_CST);
		n = ibv_poll_cq(a.cq, 1, &wc);
		/* the word still 1: the poll read it (bar the window above) */
		decided = word_at(shm, SHM_SLEEP) == 1;
		if (decided) {
			printf("poll_nap: poll_sleep %u after an empty poll on CPU 0, try %d\n",
			       word_at(shm, SHM_POLL_SLEEP), i + 1);
			CHECK(n == 0 && word_at(shm, SHM_POLL_SLEEP) == 0,
			      "an empty poll on the napping engine's CPU: %d, no sleep (poll_sleep "
			      "%u, want 0)", n, word_at(shm, SHM_POLL_SLEEP));
		}
		side_close(&a);
	}
	CHECK(decided, "a forged nap word that held over a poll in %d tries", POLL_NAP_TRIES);

	/* a waiting nap: the CQE comes at its end, on this CPU. A thread
	 * that posted no send WQE (nothing out) keeps spinning (another
	 * session's waiting QPs owe it nothing); one with a SEND out (to a QPN nobody has: it
	 * waits for ACKs for seconds) sleeps after POLL_HOT empty polls in a
	 * row: poll_sleep 0 after POLL_HOT (first try: the thread's count of
	 * empty polls starts there at 0), 1 after one more. Decided as above:
	 * the forged 2 still there after the polls (the engine's own nap
	 * stores 1 or 2 as it begins, 0 as it ends) */
	decided = 0;
	for (i = 0; i < POLL_NAP_TRIES && !decided; i++) {
		int k, idle_slept, at_hot;

		memset(&a, 0, sizeof(a));
		CHECK(side_open(dev, &a, 0) == 0, "a context, PD, CQ, MR, RC QP");
		CHECK(ibv_query_gid(a.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
		CHECK(verbs_rc_connect_to(a.qp, (a.qp->qp_num + WAIT_NAP_QPN_OFF) & 0xffffff, &gid,
					  GID_INDEX, 0, 0, POLL_NAP_TIMEOUT) == 0,
		      "RTS to a QPN nobody has");
		shm = session_shm();
		CHECK(shm != NULL, "its session memory found in /proc/self/maps");
		CHECK(eng_cpu_told(shm) == 1, "the engine runs on CPU 0: eng_cpu %u",
		      word_at(shm, SHM_ENG_CPU));
		__atomic_store_n((uint32_t *)(shm + SHM_SLEEP), SLEEP_WAITING, __ATOMIC_SEQ_CST);
		for (k = 0, n = 0; k <= POLL_HOT && n == 0; k++)
			n = ibv_poll_cq(a.cq, 1, &wc);
		idle_slept = word_at(shm, SHM_POLL_SLEEP);
		CHECK(post_send(&a, 1) == 0, "a SEND posted");
		__atomic_store_n((uint32_t *)(shm + SHM_SLEEP), SLEEP_WAITING, __ATOMIC_SEQ_CST);
		for (k = 0, n = 0; k < POLL_HOT && n == 0; k++)
			n = ibv_poll_cq(a.cq, 1, &wc);
		at_hot = word_at(shm, SHM_POLL_SLEEP);
		if (n == 0)
			n = ibv_poll_cq(a.cq, 1, &wc);
		decided = word_at(shm, SHM_SLEEP) == SLEEP_WAITING && n == 0;
		if (decided) {
			printf("poll_nap: beside a waiting nap, nothing out: poll_sleep %d after "
			       "%d polls; a SEND out: %d after %d, %u after one more (try %d)\n",
			       idle_slept, POLL_HOT + 1, at_hot, POLL_HOT,
			       word_at(shm, SHM_POLL_SLEEP), i + 1);
			CHECK(i > 0 || idle_slept == 0, "a thread with nothing out spins beside a waiting "
			      "nap: poll_sleep %d after %d empty polls, want 0", idle_slept,
			      POLL_HOT + 1);
			CHECK(i > 0 || at_hot == 0, "no sleep in the first %d empty polls: poll_sleep "
			      "%d, want 0", POLL_HOT, at_hot);
			CHECK(word_at(shm, SHM_POLL_SLEEP) == 1,
			      "with a SEND out, the empty poll after %d slept beside a waiting nap "
			      "(poll_sleep %u, want 1)", POLL_HOT, word_at(shm, SHM_POLL_SLEEP));
		}
		side_close(&a);
	}
	CHECK(decided, "a forged waiting nap word that held over the polls in %d tries",
	      POLL_NAP_TRIES);
	return 0;
}

static int
wait_nap(struct ibv_device *dev)
{
	struct side a;
	struct ibv_wc wc;
	union ibv_gid gid;
	uint8_t *shm;
	long t0;
	int n, seen = 0;

	memset(&a, 0, sizeof(a));
	CHECK(side_open(dev, &a, 0) == 0, "a context, PD, CQ, MR, RC QP");
	CHECK(ibv_query_gid(a.ctx, 1, GID_INDEX, &gid) == 0, "GID %d", GID_INDEX);
	CHECK(verbs_rc_connect_to(a.qp, (a.qp->qp_num + WAIT_NAP_QPN_OFF) & 0xffffff, &gid,
				  GID_INDEX, 0, 0, WAIT_NAP_TIMEOUT) == 0,
	      "RTS to QPN %#x, which nobody has", (a.qp->qp_num + WAIT_NAP_QPN_OFF) & 0xffffff);
	shm = session_shm();
	CHECK(shm != NULL, "its session memory found in /proc/self/maps");
	t0 = now_ms();
	CHECK(post_send(&a, 1) == 0, "a SEND posted");
	/* the engine's naps meanwhile say they wait (sleep 2) */
	while ((n = ibv_poll_cq(a.cq, 1, &wc)) == 0 && now_ms() < t0 + GUARD_MS)
		seen |= word_at(shm, SHM_SLEEP) == SLEEP_WAITING;
	CHECK(n == 1 && wc.wr_id == 1 && wc.status == IBV_WC_RETRY_EXC_ERR,
	      "the SEND ends in RETRY_EXC_ERR: status %d (%s)", wc.status,
	      ibv_wc_status_str(wc.status));
	printf("wait_nap: the requester waited %ld ms for its CQE\n", now_ms() - t0);
	CHECK(seen, "the engine's naps while the SEND waited said so in the state line "
	      "(sleep %u seen, never %u)", word_at(shm, SHM_SLEEP), SLEEP_WAITING);
	side_close(&a);
	return 0;
}

int
main(int argc, char **argv)
{
	struct ibv_device **list;
	int n, rc = 2;

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1) {
		printf("FAIL: no device\n");
		return 1;
	}
	if (argc == 2 && strcmp(argv[1], "qp_fatal") == 0)
		rc = qp_fatal(list[0]);
	else if (argc == 2 && strcmp(argv[1], "srq_limit") == 0)
		rc = srq_limit(list[0]);
	else if (argc == 2 && strcmp(argv[1], "ud_reply") == 0)
		rc = ud_reply(list[0]);
	else if (argc == 2 && strcmp(argv[1], "ah_forged") == 0)
		rc = ah_forged(list[0]);
	else if (argc == 2 && strcmp(argv[1], "ring_flush") == 0)
		rc = ring_flush(list[0], RF_ALL);
	else if (argc == 2 && strcmp(argv[1], "ring_hold") == 0)
		rc = ring_flush(list[0], RF_HOLD);
	else if (argc == 2 && strcmp(argv[1], "ring_reset") == 0)
		rc = ring_flush(list[0], RF_RESET);
	else if (argc == 2 && strcmp(argv[1], "eintr") == 0)
		rc = eintr(list[0]);
	else if (argc == 2 && strcmp(argv[1], "reg_past_eof") == 0)
		rc = reg_past_eof(list[0]);
	else if (argc == 2 && strcmp(argv[1], "reg_fsize") == 0)
		rc = reg_fsize(list[0]);
	else if (argc == 2 && strcmp(argv[1], "mcast_cap") == 0)
		rc = mcast_cap(list[0]);
	else if (argc == 2 && strcmp(argv[1], "chan_full") == 0)
		rc = chan_full(list[0]);
	else if (argc == 2 && strcmp(argv[1], "poll_word") == 0)
		rc = poll_word(list[0], 0);
	else if (argc == 2 && strcmp(argv[1], "poll_owed") == 0)
		rc = poll_word(list[0], 1);
	else if (argc == 2 && strcmp(argv[1], "chan_nofd") == 0)
		rc = chan_nofd(list[0]);
	else if (argc == 2 && strcmp(argv[1], "poll_busy") == 0)
		rc = poll_busy(list[0]);
	else if (argc == 2 && strcmp(argv[1], "poll_mixed") == 0)
		rc = poll_mixed(list[0]);
	else if (argc == 2 && strcmp(argv[1], "poll_nap") == 0)
		rc = poll_nap(list[0]);
	else if (argc == 2 && strcmp(argv[1], "wait_nap") == 0)
		rc = wait_nap(list[0]);
	else
		fprintf(stderr, "usage: %s qp_fatal|srq_limit|ud_reply|ah_forged|ring_flush|"
			"ring_hold|ring_reset|eintr|reg_past_eof|reg_fsize|mcast_cap|chan_full|"
			"poll_word|poll_owed|chan_nofd|poll_busy|poll_mixed|poll_nap|wait_nap\n",
			argv[0]);
	ibv_free_device_list(list);
	return rc != 0 || fails != 0 ? 1 : 0;
}
