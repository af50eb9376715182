/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fatal_check: what each verb answers on an attached context once srnicd
 * is gone (doc/srnicd.md, section 8), built only against the system's
 * <infiniband/verbs.h> and run over srnic's libibverbs.so.1 attached
 * (srnicd_fatal_test.py). It makes a PD, an MR over a known pattern, a
 * completion channel and a CQ armed on it, an RC QP in INIT with
 * RECVS receives posted, an SRQ with SRQ_RECVS receives posted and an RC
 * QP on it in INIT whose receive CQ is a second one, and a thread waiting
 * in ibv_get_cq_event, prints
 * "ready", and at the test's "go" (the daemon stopped) calls
 * ibv_query_port, in whose wait for the reply the test kills the daemon.
 * Expected, as rdma-core's after a device's
 * removal (uverbs answers EIO, destroys take EIO as success): the call
 * in flight EIO, IBV_EVENT_DEVICE_FATAL once, ibv_get_cq_event returns, posts EIO, the
 * RECVS receives flushed in order (IBV_WC_WR_FLUSH_ERR, their wr_ids) and
 * then an empty poll, the SRQ's receives flushed the same way on the SRQ
 * QP's CQ, a create and a query EIO, every destroy and the
 * close 0, the MR's memory still the program's with its pattern.
 * Exit 0 and "fatal_check: ok", else a line per failure.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#define RECVS 8
#define WRID0 100
#define SRQ_RECVS 6
#define SRQ_WRID0 200
#define BUF_LEN 8192

static int fails;

#define EXPECT(cond, ...) do { \
	if (!(cond)) { \
		printf("FAIL %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		fails++; \
	} \
} while (0)

struct waiter {
	struct ibv_comp_channel *ch;
	int rc, err;
	struct ibv_cq *cq;
};

static void *
cq_event_wait(void *arg)
{
	struct waiter *w = arg;
	void *cq_ctx;

	w->rc = ibv_get_cq_event(w->ch, &w->cq, &cq_ctx);
	w->err = errno;
	return NULL;
}

int
main(void)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				  .qp_access_flags = IBV_ACCESS_LOCAL_WRITE };
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 16,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp, *sqp;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_srq *srq;
	struct ibv_cq *scq;
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	struct ibv_sge sge;
	struct ibv_recv_wr rwr, *bad_r;
	struct ibv_send_wr swr, *bad_s;
	struct ibv_wc wc[2 * RECVS];
	struct waiter w = { 0 };
	pthread_t t;
	char line[16];
	uint8_t *buf;
	int i, n;

	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1) {
		printf("FAIL: no device (%s)\n", strerror(errno));
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ctx == NULL || buf == MAP_FAILED) {
		printf("FAIL: open %s (%s)\n", ibv_get_device_name(list[0]), strerror(errno));
		return 1;
	}
	for (i = 0; i < BUF_LEN; i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	pd = ibv_alloc_pd(ctx);
	mr = pd != NULL ? ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE) : NULL;
	w.ch = ibv_create_comp_channel(ctx);
	cq = w.ch != NULL ? ibv_create_cq(ctx, 2 * RECVS, NULL, w.ch, 0) : NULL;
	ia.send_cq = ia.recv_cq = cq;
	qp = cq != NULL && mr != NULL ? ibv_create_qp(pd, &ia) : NULL;
	srq = qp != NULL ? ibv_create_srq(pd, &sa) : NULL;
	scq = srq != NULL ? ibv_create_cq(ctx, 2 * SRQ_RECVS, NULL, NULL, 0) : NULL;
	ia.recv_cq = scq;
	ia.srq = srq;
	sqp = scq != NULL ? ibv_create_qp(pd, &ia) : NULL;
	if (sqp == NULL || ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					 IBV_QP_ACCESS_FLAGS) != 0 ||
	    ibv_modify_qp(sqp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) != 0) {
		printf("FAIL: objects (%s)\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < RECVS; i++) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)buf + 512 * i, .length = 512,
					.lkey = mr->lkey };
		rwr = (struct ibv_recv_wr){ .wr_id = WRID0 + i, .sg_list = &sge, .num_sge = 1 };
		if (ibv_post_recv(qp, &rwr, &bad_r) != 0) {
			printf("FAIL: post_recv %d\n", i);
			return 1;
		}
	}
	for (i = 0; i < SRQ_RECVS; i++) {
		sge = (struct ibv_sge){ .addr = (uintptr_t)buf + 4096 + 512 * i, .length = 512,
					.lkey = mr->lkey };
		rwr = (struct ibv_recv_wr){ .wr_id = SRQ_WRID0 + i, .sg_list = &sge, .num_sge = 1 };
		if (ibv_post_srq_recv(srq, &rwr, &bad_r) != 0) {
			printf("FAIL: post_srq_recv %d\n", i);
			return 1;
		}
	}
	if (ibv_req_notify_cq(cq, 0) != 0 || pthread_create(&t, NULL, cq_event_wait, &w) != 0) {
		printf("FAIL: arm, thread\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);

	/* the test stops the daemon (SIGSTOP) and says go: this call waits
	 * for a reply while the daemon is killed, and gets EIO, no hang */
	if (fgets(line, sizeof(line), stdin) == NULL) {
		printf("FAIL: no go\n");
		return 1;
	}
	n = ibv_query_port(ctx, 1, &pa);
	EXPECT(n == EIO, "query_port while the daemon died: %d (EIO wanted)", n);
	n = ibv_get_async_event(ctx, &ev);
	EXPECT(n == 0 && ev.event_type == IBV_EVENT_DEVICE_FATAL,
	       "ibv_get_async_event %d (%s), event %d: IBV_EVENT_DEVICE_FATAL wanted", n,
	       strerror(errno), n == 0 ? (int)ev.event_type : -1);
	if (n == 0)
		ibv_ack_async_event(&ev);
	pthread_join(t, NULL);
	EXPECT((w.rc == 0 && w.cq == cq) || (w.rc == -1 && w.err == EIO),
	       "ibv_get_cq_event returned %d (%s): the CQ or EIO wanted", w.rc, strerror(w.err));
	if (w.rc == 0)
		ibv_ack_cq_events(cq, 1);

	rwr.next = NULL;
	n = ibv_post_recv(qp, &rwr, &bad_r);
	EXPECT(n == EIO && bad_r == &rwr, "post_recv after the daemon's death: %d (EIO wanted)", n);
	swr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				    .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	n = ibv_post_send(qp, &swr, &bad_s);
	EXPECT(n == EIO && bad_s == &swr, "post_send after the daemon's death: %d (EIO wanted)", n);

	n = ibv_poll_cq(cq, 2 * RECVS, wc);
	EXPECT(n == RECVS, "poll_cq: %d completions, the %d outstanding receives wanted", n, RECVS);
	for (i = 0; i < n && i < RECVS; i++)
		EXPECT(wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].wr_id == (uint64_t)(WRID0 + i) &&
		       wc[i].opcode == IBV_WC_RECV && wc[i].qp_num == qp->qp_num,
		       "CQE %d: status %d wr_id %llu opcode %d qp %#x", i, wc[i].status,
		       (unsigned long long)wc[i].wr_id, wc[i].opcode, wc[i].qp_num);
	n = ibv_poll_cq(cq, 2 * RECVS, wc);
	EXPECT(n == 0, "poll_cq after the flush: %d (0 wanted)", n);
	/* an SRQ's receives too, on the CQ of a QP that takes from it */
	rwr.next = NULL;
	n = ibv_post_srq_recv(srq, &rwr, &bad_r);
	EXPECT(n == EIO && bad_r == &rwr, "post_srq_recv after the daemon's death: %d (EIO wanted)",
	       n);
	n = ibv_poll_cq(scq, 2 * RECVS, wc);
	EXPECT(n == SRQ_RECVS, "poll_cq of the SRQ QP's CQ: %d completions, the SRQ's %d "
	       "outstanding receives wanted", n, SRQ_RECVS);
	for (i = 0; i < n && i < SRQ_RECVS; i++)
		EXPECT(wc[i].status == IBV_WC_WR_FLUSH_ERR &&
		       wc[i].wr_id == (uint64_t)(SRQ_WRID0 + i) && wc[i].opcode == IBV_WC_RECV &&
		       wc[i].qp_num == sqp->qp_num,
		       "SRQ CQE %d: status %d wr_id %llu opcode %d qp %#x", i, wc[i].status,
		       (unsigned long long)wc[i].wr_id, wc[i].opcode, wc[i].qp_num);
	n = ibv_poll_cq(scq, 2 * RECVS, wc);
	EXPECT(n == 0, "poll_cq of the SRQ QP's CQ after the flush: %d (0 wanted)", n);

	errno = 0;
	EXPECT(ibv_alloc_pd(ctx) == NULL && errno == EIO, "alloc_pd: errno %d (EIO wanted)", errno);
	n = ibv_query_port(ctx, 1, &pa);
	EXPECT(n == EIO, "query_port: %d (EIO wanted)", n);
	n = ibv_get_async_event(ctx, &ev);
	EXPECT(n == -1 && errno == EIO, "a second ibv_get_async_event: %d (-1, EIO wanted)", n);

	EXPECT(ibv_destroy_qp(qp) == 0, "destroy_qp: %s", strerror(errno));
	EXPECT(ibv_destroy_qp(sqp) == 0, "destroy_qp of the SRQ's: %s", strerror(errno));
	EXPECT(ibv_destroy_srq(srq) == 0, "destroy_srq");
	EXPECT(ibv_destroy_cq(scq) == 0, "destroy_cq of the SRQ QP's");
	EXPECT(ibv_destroy_cq(cq) == 0, "destroy_cq");
	EXPECT(ibv_destroy_comp_channel(w.ch) == 0, "destroy_comp_channel");
	EXPECT(ibv_dereg_mr(mr) == 0, "dereg_mr");
	for (i = 0; i < BUF_LEN && buf[i] == (uint8_t)(i * 7 + 3); i++)
		;
	EXPECT(i == BUF_LEN, "the MR's memory after dereg: byte %d changed", i);
	buf[0] = 1;     /* the program's own, writable */
	EXPECT(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
	EXPECT(ibv_close_device(ctx) == 0, "close_device");
	ibv_free_device_list(list);
	if (fails == 0)
		printf("fatal_check: ok\n");
	return fails != 0;
}
