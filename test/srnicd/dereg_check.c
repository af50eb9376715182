/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dereg_check: one end of an RC connection between two daemons, driven
 * line by line on stdin by srnicd_dereg_test.py (built against the
 * system's <infiniband/verbs.h> only, run attached):
 *
 *   prints   "me QPN RKEY ADDR GID"     (GID: 32 hex digits)
 *   reads    "peer QPN RKEY ADDR GID"   then connects: "connected"
 *   "write N"   an RDMA WRITE of N bytes to the peer's buffer, its CQE
 *               waited for: "written STATUS"
 *   "post N"    the same, not waited for: "posted"
 *   "dereg"     ibv_dereg_mr of the buffer, again while it says EBUSY
 *               (the daemon still waits for the MR's packets in flight):
 *               "dereg RC ERRNO BUSY_TRIES"
 *   "post2 N"   "post N" from a second buffer of BUF_LEN, its own MR
 *   "rereg"     ibv_rereg_mr of that MR to a third buffer of SMALL_LEN
 *               (IBV_REREG_MR_CHANGE_TRANSLATION): "rereg RC ERRNO OLD"
 *               (OLD: the second buffer's address)
 *   "access"    ibv_rereg_mr of that MR keeping its translation
 *               (IBV_REREG_MR_CHANGE_ACCESS, remote read added; "access
 *               mw": window binds too): "access RC ERRNO ADDR" (ADDR: the
 *               second buffer's address)
 *   "dereg2"    ibv_dereg_mr of that MR, again while it says EBUSY:
 *               "dereg2 RC ERRNO BUSY_TRIES" ("FAIL" when it is gone)
 *   "chan"      a completion channel and a CQ on it (ibv_req_notify_cq
 *               armed), kept to the end: "chan FD" (the channel's fd)
 *
 * The buffer is BUF_LEN bytes; every wait is the test's, with its guard.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <infiniband/verbs.h>

#include "verbs_rc_connect.h"

#define GID_INDEX 1                 /* the daemon's IPv4 GID */
#define BUF_LEN (16u << 20)         /* more packets than a memif ring and a TX buffer hold */
#define DEREG_TRIES 600             /* EBUSYs (a second each) before it gives up */
#define SMALL_LEN (64u << 10)       /* the rereg's new range */
/* No ACK timeout (IBA 0: none): the test stops the peer's daemon for as
 * long as its steps take, and its packets must stay out meanwhile; with
 * 14 (67 ms, 8 tries) a loaded host's slow step let the retries run out
 * first (retry_timeout 8, qp_to_err 1), and the QP in ERR had none out
 * when the dereg or rereg came. memif loses nothing to retry. */
#define DEREG_ACK_TIMEOUT 0

static void
gid_hex(const union ibv_gid *g, char *out)
{
	int i;

	for (i = 0; i < 16; i++)
		sprintf(out + 2 * i, "%02x", g->raw[i]);
}

static int
gid_parse(const char *s, union ibv_gid *g)
{
	unsigned int b;
	int i;

	if (strlen(s) != 32)
		return -1;
	for (i = 0; i < 16; i++) {
		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		g->raw[i] = (uint8_t)b;
	}
	return 0;
}

int
main(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *chcq = NULL;
	struct ibv_comp_channel *ch = NULL;
	struct ibv_qp *qp;
	struct ibv_mr *mr, *mr2;
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	union ibv_gid gid, pgid;
	unsigned long long paddr;
	unsigned int pqpn, prkey, lkey;
	char line[256], hex[33], phex[65];
	uint8_t *buf, *buf2, *buf3;
	int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1 || (ctx = ibv_open_device(list[0])) == NULL) {
		printf("FAIL: no device\n");
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	buf2 = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	buf3 = mmap(NULL, SMALL_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pd == NULL || cq == NULL || buf == MAP_FAILED || buf2 == MAP_FAILED ||
	    buf3 == MAP_FAILED) {
		printf("FAIL: PD, CQ, buffer\n");
		return 1;
	}
	memset(buf, 0x5a, BUF_LEN);
	memset(buf2, 0xa5, BUF_LEN);
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	mr2 = ibv_reg_mr(pd, buf2, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	if (mr == NULL || mr2 == NULL || qp == NULL || ibv_query_gid(ctx, 1, GID_INDEX, &gid) != 0) {
		printf("FAIL: MR, QP, GID\n");
		return 1;
	}
	gid_hex(&gid, hex);
	printf("me %u %u %llu %s\n", qp->qp_num, mr->rkey, (unsigned long long)(uintptr_t)buf, hex);
	if (fgets(line, sizeof(line), stdin) == NULL ||
	    sscanf(line, "peer %u %u %llu %64s", &pqpn, &prkey, &paddr, phex) != 4 ||
	    gid_parse(phex, &pgid) != 0 ||
	    verbs_rc_connect_to(qp, pqpn, &pgid, GID_INDEX, 0, IBV_ACCESS_REMOTE_WRITE,
				DEREG_ACK_TIMEOUT) != 0) {
		printf("FAIL: the peer's line, or the connect: %s", line);
		return 1;
	}
	printf("connected\n");
	lkey = mr->lkey;            /* mr is freed by "dereg" */
	while (fgets(line, sizeof(line), stdin) != NULL) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .lkey = lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.wr.rdma = { .remote_addr = paddr, .rkey = prkey },
		}, *bad;
		struct ibv_wc wc;
		unsigned int len;
		int busy = 0, rc;

		if (sscanf(line, "post2 %u", &len) == 1) {
			sge.addr = (uintptr_t)buf2;
			sge.lkey = mr2->lkey;
		}
		if (sscanf(line, "post2 %u", &len) == 1 || sscanf(line, "write %u", &len) == 1 ||
		    (strncmp(line, "post ", 5) == 0 && sscanf(line, "post %u", &len) == 1)) {
			sge.length = len < BUF_LEN ? len : BUF_LEN;
			if (ibv_post_send(qp, &wr, &bad) != 0) {
				printf("FAIL: post_send: %s\n", strerror(errno));
				return 1;
			}
			if (line[0] == 'p') {
				printf("posted\n");
				continue;
			}
			while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
				;
			printf("written %d\n", n == 1 ? (int)wc.status : -1);
		} else if (strcmp(line, "dereg\n") == 0) {
			errno = 0;
			while ((rc = ibv_dereg_mr(mr)) == EBUSY && ++busy < DEREG_TRIES)
				;
			printf("dereg %d %d %d\n", rc, errno, busy);
		} else if (strncmp(line, "rereg", 5) == 0) {
			errno = 0;
			rc = ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, buf3, SMALL_LEN,
					  0);
			printf("rereg %d %d %llu\n", rc, errno, (unsigned long long)(uintptr_t)buf2);
		} else if (strncmp(line, "access", 6) == 0) {
			errno = 0;
			rc = ibv_rereg_mr(mr2, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
					  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
					  (strncmp(line, "access mw", 9) == 0 ?
					   IBV_ACCESS_MW_BIND : 0));
			printf("access %d %d %llu\n", rc, errno, (unsigned long long)(uintptr_t)buf2);
		} else if (strcmp(line, "chan\n") == 0 && ch == NULL) {
			ch = ibv_create_comp_channel(ctx);
			chcq = ch != NULL ? ibv_create_cq(ctx, 16, NULL, ch, 0) : NULL;
			if (chcq == NULL || ibv_req_notify_cq(chcq, 0) != 0)
				printf("FAIL: chan: %s\n", strerror(errno));
			else
				printf("chan %d\n", ch->fd);
		} else if (strncmp(line, "dereg2", 6) == 0 && mr2 == NULL) {
			printf("FAIL: dereg2: the second MR is deregistered already\n");
		} else if (strncmp(line, "dereg2", 6) == 0) {
			errno = 0;
			while ((rc = ibv_dereg_mr(mr2)) == EBUSY && ++busy < DEREG_TRIES)
				;
			printf("dereg2 %d %d %d\n", rc, errno, busy);
			if (rc == 0)
				mr2 = NULL;
		}
	}
	if (mr2 != NULL)
		ibv_dereg_mr(mr2);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	if (chcq != NULL)
		ibv_destroy_cq(chcq);
	if (ch != NULL)
		ibv_destroy_comp_channel(ch);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
