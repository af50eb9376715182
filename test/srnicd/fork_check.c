/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork_check: fork() of a program attached to srnicd (doc/srnicd.md,
 * section 5 "fork()"), built only against the system's
 * <infiniband/verbs.h> and run over srnic's libibverbs.so.1 attached
 * (srnicd_fatal_test.py).
 *
 * The parent opens the device and runs an RC exchange between two QPs of
 * its own over the device's loopback (GID 1): a SEND of ITER_BYTES bytes
 * each way per iteration, every received byte and CQE checked (status,
 * opcode, byte_len, wr_id, qp_num). After PRE iterations it forks; while
 * the child works, the parent runs PAR more, and POST more once the child
 * has exited (its session outlives the child's copy of it).
 *
 * The child first checks what it inherited is no longer the parent's:
 * a post on the parent's QP is EIO (a dead copy: posting would write
 * into the parent's rings), and the parent's registered buffer is its
 * private copy: it holds the parent's last bytes, and the child then
 * overwrites it with 0xcc, which the parent must never see (a re-backed
 * MR is MAP_SHARED; without the library's fork handler it would be the
 * parent's very pages). Then it opens the device itself (a session of its
 * own) and runs CHILD iterations of the same exchange with objects of its
 * own.
 *
 * Exit 0 and "fork_check: ok" (child and parent), else a line per failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_rc_connect.h"

#define ITER_BYTES 1024
#define PRE 20
#define PAR 200
#define POST 20
#define CHILD 200
#define POLL_SPINS 200000000ull  /* a poll loop this long has hung */
#define MARK 0x5a                /* the registered bytes the parent never rewrites */

static int done_pipe[2];         /* the child says its 0xcc is written */

static int fails;
static const char *who = "parent";

#define EXPECT(cond, ...) do { \
	if (!(cond)) { \
		printf("FAIL %s %s:%d: ", who, __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		fflush(stdout); \
		fails++; \
	} \
} while (0)

/* Two RC QPs of one context joined over the device's loopback; each has
 * a send and a receive half of buf. */
struct pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp[2];
	uint8_t *buf;               /* [qp][send, recv][ITER_BYTES], then the marker */
	size_t len;
};

static uint8_t *
slot(struct pair *p, int q, int recv)
{
	return p->buf + (size_t)(2 * q + recv) * ITER_BYTES;
}


static int
pair_open(struct pair *p, struct ibv_device *dev)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	union ibv_gid gid;
	int i;

	memset(p, 0, sizeof(*p));
	p->len = 5 * ITER_BYTES;
	p->buf = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p->ctx = ibv_open_device(dev);
	if (p->buf == MAP_FAILED || p->ctx == NULL || ibv_query_gid(p->ctx, 1, 1, &gid) != 0)
		return -1;
	p->pd = ibv_alloc_pd(p->ctx);
	p->mr = p->pd ? ibv_reg_mr(p->pd, p->buf, p->len, IBV_ACCESS_LOCAL_WRITE) : NULL;
	p->cq = ibv_create_cq(p->ctx, 16, NULL, NULL, 0);
	if (p->mr == NULL || p->cq == NULL)
		return -1;
	ia.send_cq = ia.recv_cq = p->cq;
	for (i = 0; i < 2; i++)
		if ((p->qp[i] = ibv_create_qp(p->pd, &ia)) == NULL)
			return -1;
	for (i = 0; i < 2; i++)
		if (verbs_rc_connect(p->qp[i], p->qp[1 - i]->qp_num, &gid, 1, 0,
				     IBV_ACCESS_LOCAL_WRITE) != 0)
			return -1;
	return 0;
}

static void
pair_close(struct pair *p)
{
	EXPECT(ibv_destroy_qp(p->qp[0]) == 0 && ibv_destroy_qp(p->qp[1]) == 0 &&
	       ibv_destroy_cq(p->cq) == 0 && ibv_dereg_mr(p->mr) == 0 &&
	       ibv_dealloc_pd(p->pd) == 0 && ibv_close_device(p->ctx) == 0, "teardown");
}

static uint8_t
pattern(uint32_t tag, int q, uint32_t it, size_t i)
{
	return (uint8_t)(tag * 31 + (uint32_t)q * 17 + it * 13 + i);
}

/* One iteration: each QP receives the other's SEND; 4 CQEs checked, then
 * the bytes. 0, or -1 (said why). */
static int
iterate(struct pair *p, uint32_t tag, uint32_t it)
{
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *bad_r;
	struct ibv_send_wr swr, *bad_s;
	struct ibv_wc wc[4];
	unsigned long long spins = 0;
	int q, got = 0, n, sends = 0, recvs = 0;
	size_t i;

	for (q = 0; q < 2; q++) {
		memset(slot(p, q, 1), 0, ITER_BYTES);
		sge = (struct ibv_sge){ (uintptr_t)slot(p, q, 1), ITER_BYTES, p->mr->lkey };
		rwr = (struct ibv_recv_wr){ .wr_id = 0x100 + (uint64_t)q, .sg_list = &sge,
					    .num_sge = 1 };
		if (ibv_post_recv(p->qp[q], &rwr, &bad_r) != 0) {
			EXPECT(0, "post_recv %u", it);
			return -1;
		}
	}
	for (q = 0; q < 2; q++) {
		for (i = 0; i < ITER_BYTES; i++)
			slot(p, q, 0)[i] = pattern(tag, q, it, i);
		sge = (struct ibv_sge){ (uintptr_t)slot(p, q, 0), ITER_BYTES, p->mr->lkey };
		swr = (struct ibv_send_wr){ .wr_id = 0x200 + (uint64_t)q, .sg_list = &sge,
					    .num_sge = 1, .opcode = IBV_WR_SEND,
					    .send_flags = IBV_SEND_SIGNALED };
		if (ibv_post_send(p->qp[q], &swr, &bad_s) != 0) {
			EXPECT(0, "post_send %u", it);
			return -1;
		}
	}
	while (got < 4 && spins++ < POLL_SPINS) {
		n = ibv_poll_cq(p->cq, 4 - got, wc);
		if (n < 0)
			break;
		for (int k = 0; k < n; k++) {
			struct ibv_wc *w = &wc[k];
			int recv = w->opcode == IBV_WC_RECV;

			q = w->qp_num == p->qp[0]->qp_num ? 0 : w->qp_num == p->qp[1]->qp_num ? 1 : -1;
			EXPECT(w->status == IBV_WC_SUCCESS && q >= 0 &&
			       w->wr_id == (uint64_t)((recv ? 0x100 : 0x200) + q) &&
			       (recv ? w->byte_len == ITER_BYTES : w->opcode == IBV_WC_SEND),
			       "iteration %u CQE: status %d opcode %d wr_id %#llx byte_len %u qp %#x",
			       it, w->status, w->opcode, (unsigned long long)w->wr_id, w->byte_len,
			       w->qp_num);
			sends += !recv;
			recvs += recv;
		}
		got += n;
	}
	if (got != 4 || sends != 2 || recvs != 2) {
		EXPECT(0, "iteration %u: %d CQEs (%d sends, %d receives), 4 wanted", it, got, sends,
		       recvs);
		return -1;
	}
	for (q = 0; q < 2; q++) {
		for (i = 0; i < ITER_BYTES && slot(p, q, 1)[i] == pattern(tag, 1 - q, it, i); i++)
			;
		if (i != ITER_BYTES) {
			EXPECT(0, "iteration %u: QP %d's byte %zu is %#x, %#x sent", it, q, i,
			       slot(p, q, 1)[i], pattern(tag, 1 - q, it, i));
			return -1;
		}
	}
	return 0;
}

static int
run(struct pair *p, uint32_t tag, uint32_t from, uint32_t n)
{
	for (uint32_t it = from; it < from + n; it++)
		if (iterate(p, tag, it) != 0)
			return -1;
	return 0;
}

static int
child(struct pair *parent)
{
	struct ibv_send_wr swr = { .wr_id = 1, .opcode = IBV_WR_SEND }, *bad;
	struct ibv_device **list;
	struct pair p;
	size_t i;
	int rc, n;

	who = "child";
	/* the parent's QP, inherited: a dead copy */
	rc = ibv_post_send(parent->qp[0], &swr, &bad);
	EXPECT(rc == EIO, "post_send on the parent's QP in the child: %d (EIO wanted)", rc);
	/* the parent's registered buffer: the child's private copy */
	for (i = 0; i < ITER_BYTES && slot(parent, 0, 1)[i] == pattern(1, 1, PRE - 1, i) &&
		    parent->buf[4 * ITER_BYTES + i] == MARK; i++)
		;
	EXPECT(i == ITER_BYTES, "the child's copy of the parent's MR: byte %zu is %#x and %#x "
	       "(%#x and %#x before fork)", i, slot(parent, 0, 1)[i], parent->buf[4 * ITER_BYTES + i],
	       pattern(1, 1, PRE - 1, i), MARK);
	memset(parent->buf, 0xcc, parent->len);
	EXPECT(write(done_pipe[1], "w", 1) == 1, "pipe");
	/* the device listed again and opened: a session of its own (the
	 * embedded mode's fork guard refuses neither) */
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1 || pair_open(&p, list[0]) != 0) {
		EXPECT(0, "the child's own objects: %s", strerror(errno));
		return 1;
	}
	if (run(&p, 2, 0, CHILD) == 0) {
		printf("child: %d iterations of %d bytes each way checked\n", CHILD, ITER_BYTES);
		fflush(stdout);
	}
	pair_close(&p);
	ibv_free_device_list(list);
	return fails != 0;
}

int
main(void)
{
	struct ibv_device **list;
	struct pair p;
	pid_t pid;
	int n, st;

	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1 || pair_open(&p, list[0]) != 0) {
		printf("FAIL: the parent's objects (%s)\n", strerror(errno));
		return 1;
	}
	if (run(&p, 1, 0, PRE) != 0)
		return 1;
	memset(p.buf + 4 * ITER_BYTES, MARK, ITER_BYTES);
	fflush(stdout);
	if (pipe(done_pipe) != 0)
		return 1;
	pid = fork();
	if (pid < 0) {
		printf("FAIL: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0)
		_exit(child(&p));
	close(done_pipe[1]);
	/* the parent's exchange goes on while the child works, and after */
	run(&p, 1, PRE, PAR);
	/* the child's 0xcc over its copy never reached the parent's pages */
	{
		char c;
		size_t i;

		EXPECT(read(done_pipe[0], &c, 1) == 1, "the child's word");
		for (i = 0; i < ITER_BYTES && p.buf[4 * ITER_BYTES + i] == MARK; i++)
			;
		EXPECT(i == ITER_BYTES, "the parent's MR at byte %zu holds %#x: the child's write",
		       4 * ITER_BYTES + i, p.buf[4 * ITER_BYTES + i]);
	}
	EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the child's exit: status %#x", st);
	run(&p, 1, PRE + PAR, POST);
	pair_close(&p);
	ibv_free_device_list(list);
	if (fails == 0)
		printf("fork_check: ok (parent %d iterations, child %d)\n", PRE + PAR + POST, CHILD);
	return fails != 0;
}
