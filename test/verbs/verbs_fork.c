/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fork() after the device is open, in embedded mode (the engine inside this
 * process). Built against the system's <infiniband/verbs.h> and libibverbs
 * only, run over srnic's drop-in by usertools/srnic run on a memif server
 * port no peer joins: two RC QPs of this process talk through the device's
 * in-device loopback (GID 1, the port's IPv4 address).
 *
 * The child touches every kind of verb on the parent's objects (post, poll,
 * arm, create, modify, query, destroy, a new device list and open) and must
 * get the errno the drop-in documents (EIO; ENODEV for the device list),
 * one line on stderr, never a crash; its exit() must leave the parent's
 * files. The parent then checks that nothing the child posted reached its
 * QPs and runs a WRITE and a SEND whose bytes and CQEs it checks.
 *
 *   verbs_fork MEMIF_SOCKET_FILE
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_rc_connect.h"

#define GID_INDEX 1
#define BUF_SIZE 8192
#define CHILD_WR_ID 0xc41dULL
#define POLL_GUARD 100000000ULL     /* polls before a lost completion is a failure */

static int failures;

static void
check(int cond, const char *what)
{
	if (cond) {
		printf("ok %s\n", what);
	} else {
		printf("FAIL %s (errno %d: %s)\n", what, errno, strerror(errno));
		failures++;
	}
	fflush(stdout);
}

struct ends {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp[2];
	uint8_t *buf;
	union ibv_gid gid;
};

static int
qp_connect(struct ends *e, struct ibv_qp *qp, uint32_t dqpn)
{
	return verbs_rc_connect(qp, dqpn, &e->gid, GID_INDEX, 2000,
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
}

static void
rc_init_attr(struct ends *e, struct ibv_qp_init_attr *qa, uint32_t depth)
{
	memset(qa, 0, sizeof(*qa));
	qa->send_cq = e->cq;
	qa->recv_cq = e->cq;
	qa->qp_type = IBV_QPT_RC;
	qa->cap.max_send_wr = depth;
	qa->cap.max_recv_wr = depth;
	qa->cap.max_send_sge = 1;
	qa->cap.max_recv_sge = 1;
}

static int
setup(struct ends *e)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qa;
	int i;

	if (list == NULL || list[0] == NULL)
		return -1;
	e->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (e->ctx == NULL || ibv_query_gid(e->ctx, 1, GID_INDEX, &e->gid) != 0)
		return -1;
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 64, NULL, NULL, 0);
	e->buf = calloc(1, 2 * BUF_SIZE);
	if (e->pd == NULL || e->cq == NULL || e->buf == NULL)
		return -1;
	e->mr = ibv_reg_mr(e->pd, e->buf, 2 * BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (e->mr == NULL)
		return -1;
	rc_init_attr(e, &qa, 16);
	for (i = 0; i < 2; i++)
		if ((e->qp[i] = ibv_create_qp(e->pd, &qa)) == NULL)
			return -1;
	if (qp_connect(e, e->qp[0], e->qp[1]->qp_num) != 0 ||
	    qp_connect(e, e->qp[1], e->qp[0]->qp_num) != 0)
		return -1;
	return 0;
}

/* what the child must get: ERR with errno E (or rc E for errno-returning verbs) */
static void
child_checks(struct ends *e)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = 64, .lkey = e->mr->lkey };
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_recv_wr rwr, *rbad = NULL;
	struct ibv_qp_init_attr qa, got;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	struct ibv_qp_attr a;
	struct ibv_wc wc;
	union ibv_gid gid;
	int num = -1, rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = CHILD_WR_ID;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)e->buf + BUF_SIZE;
	wr.wr.rdma.rkey = e->mr->rkey;
	rc = ibv_post_send(e->qp[0], &wr, &bad);
	check(rc == EIO && bad == &wr, "child: ibv_post_send EIO, bad_wr the first");
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = CHILD_WR_ID;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	rc = ibv_post_recv(e->qp[1], &rwr, &rbad);
	check(rc == EIO && rbad == &rwr, "child: ibv_post_recv EIO");
	errno = 0;
	check(ibv_poll_cq(e->cq, 1, &wc) < 0 && errno == EIO, "child: ibv_poll_cq < 0, EIO");
	check(ibv_req_notify_cq(e->cq, 0) == EIO, "child: ibv_req_notify_cq EIO");
	errno = 0;
	check(ibv_create_cq(e->ctx, 16, NULL, NULL, 0) == NULL && errno == EIO,
	      "child: ibv_create_cq NULL, EIO");
	errno = 0;
	check(ibv_alloc_pd(e->ctx) == NULL && errno == EIO, "child: ibv_alloc_pd NULL, EIO");
	errno = 0;
	check(ibv_reg_mr(e->pd, e->buf, 64, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EIO,
	      "child: ibv_reg_mr NULL, EIO");
	rc_init_attr(e, &qa, 1);
	errno = 0;
	check(ibv_create_qp(e->pd, &qa) == NULL && errno == EIO, "child: ibv_create_qp NULL, EIO");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	check(ibv_modify_qp(e->qp[0], &a, IBV_QP_STATE) == EIO, "child: ibv_modify_qp EIO");
	check(ibv_query_qp(e->qp[0], &a, IBV_QP_STATE, &got) == EIO, "child: ibv_query_qp EIO");
	check(ibv_query_device(e->ctx, &da) == EIO, "child: ibv_query_device EIO");
	check(ibv_query_port(e->ctx, 1, &pa) == EIO, "child: ibv_query_port EIO");
	errno = 0;
	check(ibv_query_gid(e->ctx, 1, GID_INDEX, &gid) == -1 && errno == EIO,
	      "child: ibv_query_gid -1, EIO");
	check(ibv_destroy_qp(e->qp[1]) == EIO, "child: ibv_destroy_qp EIO");
	check(ibv_dereg_mr(e->mr) == EIO, "child: ibv_dereg_mr EIO");
	check(ibv_destroy_cq(e->cq) == EIO, "child: ibv_destroy_cq EIO");
	check(ibv_dealloc_pd(e->pd) == EIO, "child: ibv_dealloc_pd EIO");
	errno = 0;
	check(ibv_open_device(e->ctx->device) == NULL && errno == EIO,
	      "child: ibv_open_device of the parent's device NULL, EIO");
	errno = 0;
	check(ibv_get_device_list(&num) == NULL && errno == ENODEV,
	      "child: ibv_get_device_list NULL, ENODEV");
	check(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED,
	      "child: ibv_is_fork_initialized UNNEEDED");
	check(ibv_close_device(e->ctx) == EIO, "child: ibv_close_device EIO");
}

static int
poll_one(struct ends *e, struct ibv_wc *wc)
{
	unsigned long long i;
	int n;

	for (i = 0; i < POLL_GUARD; i++) {
		n = ibv_poll_cq(e->cq, 1, wc);
		if (n != 0)
			return n;
	}
	return 0;
}

static void
parent_traffic(struct ends *e)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->buf, .length = BUF_SIZE, .lkey = e->mr->lkey };
	struct ibv_sge rsge = { .addr = (uintptr_t)e->buf + BUF_SIZE, .length = BUF_SIZE,
				.lkey = e->mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_wc wc;
	int i, n, bytes_ok = 1;

	/* nothing of the child's reached the QPs: the CQ is empty */
	n = ibv_poll_cq(e->cq, 1, &wc);
	check(n == 0, "parent: no completion from the child's posts");
	for (i = 0; i < BUF_SIZE; i++)
		e->buf[i] = (uint8_t)(i * 7 + 3);
	memset(e->buf + BUF_SIZE, 0, BUF_SIZE);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)e->buf + BUF_SIZE;
	wr.wr.rdma.rkey = e->mr->rkey;
	check(ibv_post_send(e->qp[0], &wr, &bad) == 0, "parent: 8 KiB WRITE posted");
	n = poll_one(e, &wc);
	check(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 1 &&
	      wc.opcode == IBV_WC_RDMA_WRITE, "parent: WRITE completes with success");
	for (i = 0; i < BUF_SIZE; i++)
		bytes_ok &= e->buf[BUF_SIZE + i] == (uint8_t)(i * 7 + 3);
	check(bytes_ok, "parent: the WRITE's 8192 bytes landed");

	memset(e->buf + BUF_SIZE, 0, BUF_SIZE);
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 2;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	check(ibv_post_recv(e->qp[1], &rwr, &rbad) == 0, "parent: receive posted");
	sge.length = 3000;
	wr.wr_id = 3;
	wr.opcode = IBV_WR_SEND;
	check(ibv_post_send(e->qp[0], &wr, &bad) == 0, "parent: 3000 B SEND posted");
	for (i = 0; i < 2; i++) {
		n = poll_one(e, &wc);
		if (n != 1 || wc.status != IBV_WC_SUCCESS) {
			check(0, "parent: SEND's two completions");
			return;
		}
		if (wc.wr_id == 2)
			check(wc.opcode == IBV_WC_RECV && wc.byte_len == 3000,
			      "parent: receive completion, 3000 bytes");
		else
			check(wc.wr_id == 3 && wc.opcode == IBV_WC_SEND, "parent: SEND completion");
	}
	bytes_ok = 1;
	for (i = 0; i < 3000; i++)
		bytes_ok &= e->buf[BUF_SIZE + i] == (uint8_t)(i * 7 + 3);
	check(bytes_ok && e->buf[BUF_SIZE + 3000] == 0, "parent: the SEND's 3000 bytes landed");
}

int
main(int argc, char **argv)
{
	struct ends e;
	char err[4096];
	int pfd[2], status, lines = 0;
	ssize_t n, got = 0;
	pid_t pid;
	char *l;

	if (argc < 2) {
		fprintf(stderr, "usage: %s MEMIF_SOCKET_FILE\n", argv[0]);
		return 2;
	}
	memset(&e, 0, sizeof(e));
	if (setup(&e) != 0) {
		perror("setup: device, PD, CQ, MR or the loopback QPs");
		return 1;
	}
	check(ibv_fork_init() == 0, "ibv_fork_init 0");
	check(ibv_is_fork_initialized() == IBV_FORK_UNNEEDED, "ibv_is_fork_initialized UNNEEDED");
	if (pipe(pfd) != 0)
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], STDERR_FILENO);
		child_checks(&e);
		/* exit(), not _exit(): the library's exit handlers run in the child */
		exit(failures == 0 ? 0 : 1);
	}
	close(pfd[1]);
	while (got < (ssize_t)sizeof(err) - 1 &&
	       (n = read(pfd[0], err + got, sizeof(err) - 1 - got)) > 0)
		got += n;
	err[got] = '\0';
	close(pfd[0]);
	check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "child exited 0 (every verb refused, no crash)");
	if (!WIFEXITED(status))
		printf("child: signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	for (l = strtok(err, "\n"); l != NULL; l = strtok(NULL, "\n")) {
		printf("child's stderr: %s\n", l);
		lines++;
	}
	check(lines == 1 && strstr(err, "fork()ed child") != NULL,
	      "child: one line on stderr naming the fork");
	check(access(argv[1], F_OK) == 0, "the parent's memif socket file is still there");
	parent_traffic(&e);
	printf(failures == 0 ? "all ok\n" : "%d failure(s)\n", failures);
	return failures == 0 ? 0 : 1;
}
