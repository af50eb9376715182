/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One of many processes on one srnicd (test srnicd_many): opens the first
 * device, registers one buffer with ibv_reg_mr_iova() at an IOVA apart
 * from its address, makes NQP RC QPs connected in pairs (QP 2i and 2i + 1,
 * through the device's own GID: its loopback) and runs ROUNDS rounds in
 * which every QP SENDs its slot's pattern to its peer's RECV and READs the
 * peer's slot, every address an IOVA. Each round checks every CQE (one of
 * each wr_id, success, the RECV's byte_len) and every byte landed, then
 * everything is destroyed. Prints "ok ..." and exits 0, else "FAIL ..."
 * and exits 1. Built only against the system's <infiniband/verbs.h>.
 *
 *   srnicd_many NQP ROUNDS
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_rc_connect.h"

#define MSG_LEN 1024
#define SLOT 4096           /* per QP: [src | recv | read] at 0, MSG_LEN, 2 * MSG_LEN */
#define IOVA_BASE 0x4d0000000000ull
#define GID_INDEX 1
#define GUARD_MS 120000     /* a round longer than this has hung */

static void __attribute__((format(printf, 1, 2), noreturn))
fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL pid %d: ", (int)getpid());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (errno %d)\n", errno);
	exit(1);
}

static char
pat(uint32_t q, uint32_t round, uint32_t k)
{
	return (char)(q * 131 + round * 17 + k * 7 + (uint32_t)getpid());
}

static void
connect_qp(struct ibv_qp *qp, uint32_t dqpn, const union ibv_gid *gid)
{
	if (verbs_rc_connect(qp, dqpn, gid, GID_INDEX, 100,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ) != 0)
		fail("QP %u to RTS", qp->qp_num);
}

static long
elapsed_ms(const struct timeval *t0)
{
	struct timeval t;

	gettimeofday(&t, NULL);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_usec - t0->tv_usec) / 1000;
}

/* wr_id: QP index << 8 | kind (0 SEND, 1 READ, 2 RECV) */
static void
round_run(struct ibv_qp **qp, uint32_t nqp, struct ibv_cq *cq, struct ibv_mr *mr, char *buf,
	  uint32_t round)
{
	uint8_t *seen = calloc((size_t)nqp * 3, 1);
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	struct ibv_wc wc[32];
	struct timeval t0;
	uint32_t q, k, got = 0;

	if (seen == NULL)
		fail("calloc");
	for (q = 0; q < nqp; q++) {
		char *s = buf + (size_t)q * SLOT;
		struct ibv_sge sge = { IOVA_BASE + (uint64_t)q * SLOT + MSG_LEN, MSG_LEN, mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = q << 8 | 2, .sg_list = &sge, .num_sge = 1 };

		for (k = 0; k < MSG_LEN; k++)
			s[k] = pat(q, round, k);
		memset(s + MSG_LEN, 0, 2 * MSG_LEN);
		if (ibv_post_recv(qp[q], &rwr, &rbad) != 0)
			fail("post_recv QP %u", q);
	}
	for (q = 0; q < nqp; q++) {
		uint64_t mine = IOVA_BASE + (uint64_t)q * SLOT, peer = IOVA_BASE + (uint64_t)(q ^ 1) * SLOT;
		struct ibv_sge sge[2] = { { mine, MSG_LEN, mr->lkey },
					  { mine + 2 * MSG_LEN, MSG_LEN, mr->lkey } };
		struct ibv_send_wr wr[2] = {
			{ .wr_id = q << 8 | 0, .sg_list = &sge[0], .num_sge = 1, .opcode = IBV_WR_SEND,
			  .send_flags = IBV_SEND_SIGNALED, .next = &wr[1] },
			{ .wr_id = q << 8 | 1, .sg_list = &sge[1], .num_sge = 1,
			  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
			  .wr.rdma = { peer, mr->rkey } },
		};

		if (ibv_post_send(qp[q], wr, &bad) != 0)
			fail("post_send QP %u", q);
	}
	gettimeofday(&t0, NULL);
	while (got < nqp * 3) {
		int n = ibv_poll_cq(cq, 32, wc), i;

		if (n < 0)
			fail("poll_cq %d", n);
		for (i = 0; i < n; i++) {
			uint32_t wq = (uint32_t)(wc[i].wr_id >> 8), kind = wc[i].wr_id & 3;

			if (wc[i].status != IBV_WC_SUCCESS || wq >= nqp || kind > 2 ||
			    seen[wq * 3 + kind]++ != 0 || wc[i].qp_num != qp[wq]->qp_num ||
			    (kind == 2 && wc[i].byte_len != MSG_LEN))
				fail("round %u: CQE wr_id %#lx status %d qp %u byte_len %u", round,
				     (unsigned long)wc[i].wr_id, wc[i].status, wc[i].qp_num,
				     wc[i].byte_len);
		}
		got += (uint32_t)n;
		if (n == 0 && elapsed_ms(&t0) > GUARD_MS)
			fail("round %u: %u of %u CQEs", round, got, nqp * 3);
	}
	for (q = 0; q < nqp; q++) {
		const char *d = buf + (size_t)q * SLOT;

		for (k = 0; k < MSG_LEN; k++)
			if (d[MSG_LEN + k] != pat(q ^ 1, round, k) ||
			    d[2 * MSG_LEN + k] != pat(q ^ 1, round, k))
				fail("round %u: QP %u byte %u: received %d, read %d, want %d", round, q,
				     k, d[MSG_LEN + k], d[2 * MSG_LEN + k], pat(q ^ 1, round, k));
	}
	free(seen);
}

int
main(int argc, char **argv)
{
	struct ibv_device **devs;
	struct ibv_context *ctx;
	struct ibv_qp **qp;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	union ibv_gid gid;
	uint32_t nqp, rounds, q, r;
	size_t len;
	char *buf;

	if (argc != 3 || (nqp = (uint32_t)atoi(argv[1])) < 2 || nqp % 2 != 0 ||
	    (rounds = (uint32_t)atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: %s NQP(even) ROUNDS\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	devs = ibv_get_device_list(NULL);
	if (devs == NULL || devs[0] == NULL)
		fail("no device");
	ctx = ibv_open_device(devs[0]);
	if (ctx == NULL)
		fail("open_device");
	if (ibv_query_gid(ctx, 1, GID_INDEX, &gid) != 0)
		fail("query_gid");
	pd = ibv_alloc_pd(ctx);
	cq = pd != NULL ? ibv_create_cq(ctx, (int)(nqp * 3), NULL, NULL, 0) : NULL;
	if (cq == NULL)
		fail("alloc_pd/create_cq");
	len = (size_t)nqp * SLOT;
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		fail("mmap");
	mr = ibv_reg_mr_iova(pd, buf, len, IOVA_BASE, IBV_ACCESS_LOCAL_WRITE |
			     IBV_ACCESS_REMOTE_READ);
	if (mr == NULL)
		fail("reg_mr_iova");
	qp = calloc(nqp, sizeof(*qp));
	if (qp == NULL)
		fail("calloc");
	for (q = 0; q < nqp; q++) {
		struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
					       .cap = { .max_send_wr = 4, .max_recv_wr = 2,
							.max_send_sge = 1, .max_recv_sge = 1 } };

		qp[q] = ibv_create_qp(pd, &ia);
		if (qp[q] == NULL)
			fail("create_qp %u of %u", q, nqp);
	}
	for (q = 0; q < nqp; q++)
		connect_qp(qp[q], qp[q ^ 1]->qp_num, &gid);
	for (r = 0; r < rounds; r++)
		round_run(qp, nqp, cq, mr, buf, r);
	for (q = 0; q < nqp; q++)
		if (ibv_destroy_qp(qp[q]) != 0)
			fail("destroy_qp %u", q);
	if (ibv_dereg_mr(mr) != 0 || ibv_destroy_cq(cq) != 0 || ibv_dealloc_pd(pd) != 0 ||
	    ibv_close_device(ctx) != 0)
		fail("teardown");
	ibv_free_device_list(devs);
	printf("ok pid %d: %u QPs, %u rounds of a SEND and a READ each, every CQE and byte\n",
	       (int)getpid(), nqp, rounds);
	return 0;
}
