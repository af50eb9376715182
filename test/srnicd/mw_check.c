/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mw_check: memory windows attached to srnicd (doc/srnicd.md, section 9),
 * built only against the system's <infiniband/verbs.h> and run over
 * srnic's libibverbs.so.1 attached (srnicd_mw_test.py). Two RC QPs of one
 * PD talk over the device's loopback: A, the requester, WRITEs into T, a
 * buffer registered with IBV_ACCESS_MW_BIND (no remote access of its
 * own), through a window bound through B, T's side.
 *
 *   mw_check type2      a type 2 window bound through B (IBV_WR_BIND_MW:
 *                       its CQE), A's WRITE of 4 KiB through it placed
 *                       (every byte of T checked: the window's range
 *                       written, the rest not); B's LOCAL_INV (its CQE),
 *                       then A's WRITE through the old rkey refused:
 *                       IBV_WC_REM_ACCESS_ERR, T unchanged
 *   mw_check send_inv   the same window invalidated by A's SEND with
 *                       Invalidate: B's receive CQE has IBV_WC_WITH_INV
 *                       and the rkey, the message's bytes; A's next WRITE
 *                       refused as above
 *   mw_check type1      a type 1 window bound by ibv_bind_mw() (its rkey
 *                       the next key byte), WRITE placed; bound again with
 *                       length 0 (unbound), the WRITE refused
 *   mw_check hostile    two contexts (two sessions): a BIND_MW naming the
 *                       other session's window through a forged ibv_mw
 *                       (the attached provider's layout: struct ibv_mw,
 *                       then the daemon's handle) moves the QP to ERR; a
 *                       forged ibv_dealloc_mw of it is EINVAL and the
 *                       window stays its owner's; a bind of the session's
 *                       own window over the other session's MR fails
 *                       IBV_WC_MW_BIND_ERR; a real window of the other
 *                       context in a post is EINVAL
 *   mw_check die        a type 2 window bound over an MR, then "bound"
 *                       printed and the process SIGKILLs itself: the
 *                       daemon must free the window to deregister the MR
 *   mw_check rereg      ibv_rereg_mr attached: an MR over U WRITten
 *                       through, then moved (IBV_REREG_MR_CHANGE_TRANSLATION)
 *                       to 5000 bytes of V across two pages: new keys, a
 *                       WRITE of 5000 bytes placed there (every byte of V
 *                       checked, U untouched) and READ back, a store of
 *                       the program's READ back (one memory); then
 *                       CHANGE_ACCESS to read only: the same
 *                       keys, READ served, WRITE refused. An MR with a
 *                       window bound: EBUSY, unchanged
 *
 * Each CQE is polled for with a guard that only stops a hang. Prints one
 * line per step; exit 0 when every step passed.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_rc_connect.h"

#define GID_INDEX 1         /* the daemon's IPv4 GID */
#define TLEN 8192           /* T */
#define WOFF 1024           /* the window: [T + WOFF, + WLEN) */
#define WLEN 4096
#define MSG_LEN 256
#define GUARD_MS 60000
#define QP_ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static int fails;

static void
step(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		fails++;
}

/* cond evaluated once (it may post or modify) */
#define CHECK(cond, ...) do { \
	int ok_ = (cond); \
	char what_[256]; \
	snprintf(what_, sizeof(what_), __VA_ARGS__); \
	step(ok_, what_); \
	if (!ok_) \
		return -1; \
} while (0)

static long
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* One side: a context (a session), its PD, T and S (A's source), two QPs
 * each on a CQ of its own, connected to each other. */
struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cqa, *cqb;
	struct ibv_qp *a, *b;
	struct ibv_mr *tmr, *smr;
	uint8_t *t, *s;
	union ibv_gid gid;
};

static int
side_open(struct ibv_device *dev, struct side *x)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8,
						.max_send_sge = 1, .max_recv_sge = 1 } };

	memset(x, 0, sizeof(*x));
	x->ctx = ibv_open_device(dev);
	CHECK(x->ctx != NULL && ibv_query_gid(x->ctx, 1, GID_INDEX, &x->gid) == 0,
	      "open the device (%s)", strerror(errno));
	x->pd = ibv_alloc_pd(x->ctx);
	x->cqa = ibv_create_cq(x->ctx, 16, NULL, NULL, 0);
	x->cqb = ibv_create_cq(x->ctx, 16, NULL, NULL, 0);
	x->t = mmap(NULL, TLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	x->s = mmap(NULL, TLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(x->pd != NULL && x->cqa != NULL && x->cqb != NULL && x->t != MAP_FAILED &&
	      x->s != MAP_FAILED, "PD, CQs, buffers (%s)", strerror(errno));
	/* T grants remote access through windows only */
	x->tmr = ibv_reg_mr(x->pd, x->t, TLEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	x->smr = ibv_reg_mr(x->pd, x->s, TLEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(x->tmr != NULL && x->smr != NULL, "MRs, T's with IBV_ACCESS_MW_BIND (%s)",
	      strerror(errno));
	ia.send_cq = ia.recv_cq = x->cqa;
	x->a = ibv_create_qp(x->pd, &ia);
	ia.send_cq = ia.recv_cq = x->cqb;
	x->b = ibv_create_qp(x->pd, &ia);
	CHECK(x->a != NULL && x->b != NULL, "QPs (%s)", strerror(errno));
	CHECK(verbs_rc_connect(x->a, x->b->qp_num, &x->gid, GID_INDEX, 100, QP_ACC) == 0 &&
	      verbs_rc_connect(x->b, x->a->qp_num, &x->gid, GID_INDEX, 100, QP_ACC) == 0,
	      "A and B connected");
	return 0;
}

/* One CQE of cq, or status -1 after GUARD_MS (a hang). */
static struct ibv_wc
cqe(struct ibv_cq *cq)
{
	long end = now_ms() + GUARD_MS;
	struct ibv_wc wc;
	int n;

	memset(&wc, 0, sizeof(wc));
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_ms() < end)
		;
	if (n != 1)
		wc.status = (enum ibv_wc_status)-1;
	return wc;
}

static const char *
st(const struct ibv_wc *wc)
{
	return (int)wc->status == -1 ? "no CQE (hung)" : ibv_wc_status_str(wc->status);
}

/* A's WRITE of len bytes of S (filled with pattern first) to addr through
 * rkey: its CQE. */
static struct ibv_wc
write_through(struct side *x, uint64_t addr, uint32_t rkey, uint32_t len, uint8_t pattern)
{
	struct ibv_sge sge = { .addr = (uintptr_t)x->s, .length = len, .lkey = x->smr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x77, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	struct ibv_wc wc;
	uint32_t i;

	for (i = 0; i < len; i++)
		x->s[i] = (uint8_t)(pattern + i * 7);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(x->a, &wr, &bad) != 0) {
		memset(&wc, 0, sizeof(wc));
		wc.status = IBV_WC_GENERAL_ERR;
		return wc;
	}
	return cqe(x->cqa);
}

/* T is pattern over the window (as write_through() wrote it) and 0 elsewhere */
static int
t_holds(const struct side *x, int written, uint8_t pattern)
{
	uint32_t i;

	for (i = 0; i < TLEN; i++) {
		uint8_t want = written && i >= WOFF && i < WOFF + WLEN ?
			       (uint8_t)(pattern + (i - WOFF) * 7) : 0;

		if (x->t[i] != want) {
			printf("  T[%u] = %#x, want %#x\n", i, x->t[i], want);
			return 0;
		}
	}
	return 1;
}

/* A type 2 window bound through B over T's window range: its rkey, or 0. */
static uint32_t
bind_type2(struct side *x, struct ibv_mw *mw)
{
	struct ibv_send_wr wr = { .wr_id = 0xb1, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = x->tmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)x->t + WOFF;
	wr.bind_mw.bind_info.length = WLEN;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	if (ibv_post_send(x->b, &wr, &bad) != 0) {
		step(0, "post IBV_WR_BIND_MW");
		return 0;
	}
	wc = cqe(x->cqb);
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_BIND_MW || wc.wr_id != 0xb1) {
		printf("FAIL: the bind's CQE: %s, opcode %d\n", st(&wc), wc.opcode);
		fails++;
		return 0;
	}
	return wr.bind_mw.rkey;
}

/* A's WRITE through rkey refused: REM_ACCESS_ERR, T as it was */
static int
refused(struct side *x, uint32_t rkey, uint8_t held, const char *after)
{
	struct ibv_wc wc = write_through(x, (uintptr_t)x->t + WOFF, rkey, WLEN, 0x90);

	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && t_holds(x, 1, held),
	      "after %s, A's WRITE through rkey %#x: %s (want remote access error), T unchanged",
	      after, rkey, st(&wc));
	return 0;
}

static int
type2(struct ibv_device *dev, int remote)
{
	struct ibv_send_wr wr = { .wr_id = 0x1d, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr = { .wr_id = 0x2e, .sg_list = &sge, .num_sge = 1 }, *rbad;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	struct side x;
	uint32_t rkey;

	if (side_open(dev, &x) != 0)
		return -1;
	mw = ibv_alloc_mw(x.pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL && mw->type == IBV_MW_TYPE_2, "ibv_alloc_mw type 2 (%s)", strerror(errno));
	rkey = bind_type2(&x, mw);
	CHECK(rkey != 0, "bound through B: IBV_WC_BIND_MW, rkey %#x", rkey);
	wc = write_through(&x, (uintptr_t)x.t + WOFF, rkey, WLEN, 0x31);
	CHECK(wc.status == IBV_WC_SUCCESS && t_holds(&x, 1, 0x31),
	      "A's WRITE of %u bytes through the window: %s, T's bytes as written", WLEN, st(&wc));
	if (!remote) {
		wr.opcode = IBV_WR_LOCAL_INV;
		wr.invalidate_rkey = rkey;
		CHECK(ibv_post_send(x.b, &wr, &bad) == 0, "post IBV_WR_LOCAL_INV on B");
		wc = cqe(x.cqb);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV &&
		      wc.wr_id == 0x1d, "B's LOCAL_INV: %s, opcode %d", st(&wc), wc.opcode);
	} else {
		/* B's receive buffer: S's second half */
		sge.addr = (uintptr_t)x.s + TLEN / 2;
		sge.length = MSG_LEN;
		sge.lkey = x.smr->lkey;
		CHECK(ibv_post_recv(x.b, &rwr, &rbad) == 0, "B's receive posted");
		memset(x.s, 0xc3, MSG_LEN);
		sge.addr = (uintptr_t)x.s;
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.invalidate_rkey = rkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		CHECK(ibv_post_send(x.a, &wr, &bad) == 0, "post IBV_WR_SEND_WITH_INV on A");
		wc = cqe(x.cqa);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND && wc.wr_id == 0x1d,
		      "A's SEND with Invalidate: %s", st(&wc));
		wc = cqe(x.cqb);
		CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
		      wc.byte_len == MSG_LEN && (wc.wc_flags & IBV_WC_WITH_INV) &&
		      wc.invalidated_rkey == rkey && x.s[TLEN / 2] == 0xc3 &&
		      x.s[TLEN / 2 + MSG_LEN - 1] == 0xc3,
		      "B's receive: %s, %u bytes, IBV_WC_WITH_INV %d, invalidated_rkey %#x",
		      st(&wc), wc.byte_len, !!(wc.wc_flags & IBV_WC_WITH_INV),
		      wc.invalidated_rkey);
	}
	if (refused(&x, rkey, 0x31, remote ? "the SEND with Invalidate" : "LOCAL_INV") != 0)
		return -1;
	CHECK(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
	return 0;
}

static int
type1(struct ibv_device *dev)
{
	struct ibv_mw_bind bind = { .wr_id = 0xb2, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw *mw;
	struct ibv_wc wc;
	struct side x;
	uint32_t old;

	if (side_open(dev, &x) != 0)
		return -1;
	mw = ibv_alloc_mw(x.pd, IBV_MW_TYPE_1);
	CHECK(mw != NULL && mw->type == IBV_MW_TYPE_1, "ibv_alloc_mw type 1 (%s)", strerror(errno));
	old = mw->rkey;
	bind.bind_info.mr = x.tmr;
	bind.bind_info.addr = (uintptr_t)x.t + WOFF;
	bind.bind_info.length = WLEN;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(ibv_bind_mw(x.b, mw, &bind) == 0 && mw->rkey == ibv_inc_rkey(old),
	      "ibv_bind_mw: rkey %#x -> %#x", old, mw->rkey);
	wc = cqe(x.cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW && wc.wr_id == 0xb2,
	      "the bind's CQE: %s", st(&wc));
	wc = write_through(&x, (uintptr_t)x.t + WOFF, mw->rkey, WLEN, 0x52);
	CHECK(wc.status == IBV_WC_SUCCESS && t_holds(&x, 1, 0x52),
	      "A's WRITE through the type 1 window: %s, T's bytes as written", st(&wc));
	bind.bind_info.length = 0;
	bind.bind_info.addr = 0;
	bind.bind_info.mw_access_flags = 0;
	old = mw->rkey;
	CHECK(ibv_bind_mw(x.b, mw, &bind) == 0, "ibv_bind_mw with length 0 (unbind)");
	wc = cqe(x.cqb);
	CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
	      "the unbind's CQE: %s", st(&wc));
	if (refused(&x, old, 0x52, "the unbind") != 0)
		return -1;
	CHECK(ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
	return 0;
}

/* what the attached provider's window is: the verbs MW, then the handle */
struct forged_mw {
	struct ibv_mw mw;
	uint32_t handle;
};

static int
hostile(struct ibv_device *dev)
{
	struct ibv_send_wr wr = { .wr_id = 0xb3, .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_mw *mx, *my, *spare;
	struct forged_mw f;
	struct side x, y;
	struct ibv_wc wc;
	uint32_t rkey;
	int rc;

	if (side_open(dev, &x) != 0 || side_open(dev, &y) != 0)
		return -1;
	/* handles are the session's own: the two sessions made the same
	 * objects in the same order, so x's first window has y's handle;
	 * x's second has none of y's */
	spare = ibv_alloc_mw(x.pd, IBV_MW_TYPE_2);
	mx = ibv_alloc_mw(x.pd, IBV_MW_TYPE_2);
	my = ibv_alloc_mw(y.pd, IBV_MW_TYPE_2);
	CHECK(spare != NULL && mx != NULL && my != NULL, "type 2 windows: two in x, one in y");
	/* y's own window over x's MR: srnic finds the lkey of another PD */
	wr.bind_mw.mw = my;
	wr.bind_mw.rkey = ibv_inc_rkey(my->rkey);
	wr.bind_mw.bind_info.mr = x.tmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)x.t + WOFF;
	wr.bind_mw.bind_info.length = WLEN;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK(ibv_post_send(y.b, &wr, &bad) == 0, "y binds its window over x's MR: posted");
	wc = cqe(y.cqb);
	CHECK(wc.status == IBV_WC_MW_BIND_ERR, "  its CQE: %s (want IBV_WC_MW_BIND_ERR)", st(&wc));
	/* x's real window in y's post: not the QP's PD */
	wr.bind_mw.mw = mx;
	wr.bind_mw.bind_info.mr = y.tmr;
	wr.bind_mw.bind_info.addr = (uintptr_t)y.t + WOFF;
	rc = ibv_post_send(y.a, &wr, &bad);
	CHECK(rc == EINVAL, "x's window posted on y's QP: %s (want EINVAL)", strerror(rc));
	/* a forged window: y's context and PD, x's handle */
	memset(&f, 0, sizeof(f));
	f.mw = *my;
	f.handle = ((struct forged_mw *)mx)->handle;
	f.mw.rkey = mx->rkey;
	wr.bind_mw.mw = &f.mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mx->rkey);
	CHECK(ibv_post_send(y.a, &wr, &bad) == 0, "a bind of x's window forged on y's QP: posted");
	CHECK(verbs_qp_state_left(y.a, IBV_QPS_RTS, GUARD_MS) == IBV_QPS_ERR, "  the daemon moved y's QP to ERR");
	errno = 0;
	rc = ibv_dealloc_mw(&f.mw);
	CHECK(rc == EINVAL, "a forged ibv_dealloc_mw of x's window: %s (want EINVAL)",
	      strerror(rc));
	/* x's window is still x's, and works */
	rkey = bind_type2(&x, mx);
	CHECK(rkey != 0, "x binds its window after all that");
	wc = write_through(&x, (uintptr_t)x.t + WOFF, rkey, WLEN, 0x64);
	CHECK(wc.status == IBV_WC_SUCCESS && t_holds(&x, 1, 0x64),
	      "x's WRITE through it: %s, T's bytes as written", st(&wc));
	CHECK(ibv_dealloc_mw(mx) == 0 && ibv_dealloc_mw(my) == 0 && ibv_dealloc_mw(spare) == 0,
	      "the windows freed");
	return 0;
}

static int
die(struct ibv_device *dev)
{
	struct ibv_mw *mw;
	struct side x;

	if (side_open(dev, &x) != 0)
		return -1;
	mw = ibv_alloc_mw(x.pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL && bind_type2(&x, mw) != 0, "a type 2 window bound over T");
	printf("bound\n");
	fflush(stdout);
	kill(getpid(), SIGKILL);
	return -1;
}

/* A's RDMA of len bytes between S and addr through rkey: its CQE */
static struct ibv_wc
rdma(struct side *x, enum ibv_wr_opcode op, uint64_t addr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)x->s, .length = len, .lkey = x->smr->lkey };
	struct ibv_send_wr wr = { .wr_id = 0x99, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(x->a, &wr, &bad) != 0) {
		memset(&wc, 0, sizeof(wc));
		wc.status = IBV_WC_GENERAL_ERR;
		return wc;
	}
	return cqe(x->cqa);
}

/* buf[off, off + len) is (pattern + i * 7) and every other byte of its n is 0 */
static int
holds(const uint8_t *buf, size_t n, size_t off, size_t len, uint8_t pattern)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint8_t want = i >= off && i < off + len ? (uint8_t)(pattern + (i - off) * 7) : 0;

		if (buf[i] != want) {
			printf("  [%zu] = %#x, want %#x\n", i, buf[i], want);
			return 0;
		}
	}
	return 1;
}

#define RR_U 4096           /* U: one page */
#define RR_VOFF 100         /* the new range: [V + 100, + 5000), over V's two pages */
#define RR_VLEN 5000
#define RR_ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static int
rereg(struct ibv_device *dev)
{
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_wc wc;
	struct side x;
	uint8_t *u, *v;
	uint32_t lkey, rkey;
	int rc;

	if (side_open(dev, &x) != 0)
		return -1;
	u = mmap(NULL, RR_U, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	v = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(u != MAP_FAILED && v != MAP_FAILED, "U and V");
	mr = ibv_reg_mr(x.pd, u, RR_U, RR_ACC);
	CHECK(mr != NULL, "an MR over U (%s)", strerror(errno));
	wc = write_through(&x, (uintptr_t)u, mr->rkey, RR_U, 0x11);
	CHECK(wc.status == IBV_WC_SUCCESS && holds(u, RR_U, 0, RR_U, 0x11),
	      "A's WRITE of %u bytes through it: %s, U's bytes as written", RR_U, st(&wc));
	/* T has a window bound: its MR cannot change under it */
	mw = ibv_alloc_mw(x.pd, IBV_MW_TYPE_2);
	CHECK(mw != NULL && bind_type2(&x, mw) != 0, "a window bound over T");
	errno = 0;
	rc = ibv_rereg_mr(x.tmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, IBV_ACCESS_LOCAL_WRITE);
	CHECK(rc == IBV_REREG_MR_ERR_CMD && errno == EBUSY,
	      "ibv_rereg_mr of T, a window bound: %d, %s (want IBV_REREG_MR_ERR_CMD, EBUSY)", rc,
	      strerror(errno));
	CHECK(ibv_dealloc_mw(mw) == 0, "the window freed");
	lkey = mr->lkey;
	rkey = mr->rkey;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, v + RR_VOFF, RR_VLEN, 0);
	CHECK(rc == 0 && mr->addr == v + RR_VOFF && mr->length == RR_VLEN && mr->rkey != rkey &&
	      mr->lkey != lkey, "ibv_rereg_mr to V + %d, %d bytes: %d (%s), keys %#x -> %#x",
	      RR_VOFF, RR_VLEN, rc, strerror(errno), rkey, mr->rkey);
	wc = write_through(&x, (uintptr_t)v + RR_VOFF, mr->rkey, RR_VLEN, 0x22);
	CHECK(wc.status == IBV_WC_SUCCESS && holds(v, 2 * 4096, RR_VOFF, RR_VLEN, 0x22) &&
	      holds(u, RR_U, 0, RR_U, 0x11),
	      "A's WRITE of %d bytes through the new rkey: %s, V's bytes as written, U's as before",
	      RR_VLEN, st(&wc));
	memset(x.s, 0, RR_VLEN);
	v[RR_VOFF + 4095] = 0xee;   /* the program's store, on V's second page */
	wc = rdma(&x, IBV_WR_RDMA_READ, (uintptr_t)v + RR_VOFF, mr->rkey, RR_VLEN);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(x.s, v + RR_VOFF, RR_VLEN) == 0 &&
	      x.s[4095] == 0xee, "A's READ of them back: %s, V's bytes (the program's store "
	      "among them)", st(&wc));
	v[RR_VOFF + 4095] = (uint8_t)(0x22 + 4095 * 7);
	lkey = mr->lkey;
	rkey = mr->rkey;
	rc = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	CHECK(rc == 0 && mr->rkey == rkey && mr->lkey == lkey,
	      "ibv_rereg_mr to read only: %d, the same keys", rc);
	wc = rdma(&x, IBV_WR_RDMA_READ, (uintptr_t)v + RR_VOFF, mr->rkey, RR_VLEN);
	CHECK(wc.status == IBV_WC_SUCCESS && memcmp(x.s, v + RR_VOFF, RR_VLEN) == 0,
	      "A's READ through it: %s", st(&wc));
	wc = write_through(&x, (uintptr_t)v + RR_VOFF, mr->rkey, RR_VLEN, 0x33);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR && holds(v, 2 * 4096, RR_VOFF, RR_VLEN, 0x22),
	      "A's WRITE through it: %s (want remote access error), V unchanged", st(&wc));
	CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr");
	return 0;
}

int
main(int argc, char **argv)
{
	struct ibv_device **list;
	int n, rc = -1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: mw_check type2|send_inv|type1|hostile|die|rereg\n");
		return 2;
	}
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1) {
		printf("FAIL: no device (is srnicd running?)\n");
		return 1;
	}
	if (strcmp(argv[1], "type2") == 0)
		rc = type2(list[0], 0);
	else if (strcmp(argv[1], "send_inv") == 0)
		rc = type2(list[0], 1);
	else if (strcmp(argv[1], "type1") == 0)
		rc = type1(list[0]);
	else if (strcmp(argv[1], "hostile") == 0)
		rc = hostile(list[0]);
	else if (strcmp(argv[1], "die") == 0)
		rc = die(list[0]);
	else if (strcmp(argv[1], "rereg") == 0)
		rc = rereg(list[0]);
	else
		fprintf(stderr, "mw_check: unknown case %s\n", argv[1]);
	printf("mw_check %s: %s\n", argv[1], rc == 0 && fails == 0 ? "ok" : "FAILED");
	return rc == 0 && fails == 0 ? 0 : 1;
}
