/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * share_check: registrations that share pages, attached to srnicd
 * (doc/srnicd.md, section 5 "Registrations that share pages"), built only
 * against the system's <infiniband/verbs.h> and run over srnic's
 * libibverbs.so.1 attached (srnicd_share_test.py).
 *
 * Three pages of private anonymous memory R, and five registrations over
 * them as a program's buffers fall: M0 [64, +512) and M1 [1024, +512) in
 * page 0, M2 [32, 4096 + 256) over both and into page 1, M3 [4608, +4096)
 * over pages 1 and 2, M4 M1's very range again in a second PD. A QP of
 * the program RDMA WRITEs a fresh pattern through each MR's rkey and
 * READs each back, over the device's loopback to a second QP; after every
 * operation all of R must equal the model of what was written, where the
 * program's own loads see it. The MRs are then deregistered in ORDERS
 * orders; after each dereg every MR still registered is written and read
 * again (its bytes still reachable by the daemon), a store of the
 * program's is read back through each (one memory, two views), and once
 * all are gone R still holds its bytes as private memory again (no
 * srnic-mr mapping over it in /proc/self/maps).
 * Then two heap buffers of 300 bytes, malloc'ed one after the other as
 * rping's are (one page), each registered and written through; and
 * registrations refused part-way (a hole: EFAULT; a shared mapping:
 * EOPNOTSUPP) over a page another MR holds leave its count as it was.
 *
 * Exit 0 and "share_check: ok", else a line per failure.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_rc_connect.h"

#define PG 4096
#define RLEN (3 * PG)
#define NMR 5
#define POLL_SPINS 2000000000ull /* a poll loop this long has hung */
#define ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static int fails;

#define EXPECT(cond, ...) do { \
	if (!(cond)) { \
		printf("FAIL %s:%d: ", __FILE__, __LINE__); \
		printf(__VA_ARGS__); \
		printf("\n"); \
		fflush(stdout); \
		fails++; \
	} \
} while (0)

static const struct { size_t off, len; int pd; } span[NMR] = {
	{ 64, 512, 0 }, { 1024, 512, 0 }, { 32, PG + 256, 0 }, { PG + 512, PG, 0 },
	{ 1024, 512, 1 },
};

/* dereg orders: forward, reverse, and interleavings that leave each MR last */
static const int orders[][NMR] = {
	{ 0, 1, 2, 3, 4 }, { 4, 3, 2, 1, 0 }, { 2, 0, 4, 1, 3 }, { 1, 4, 3, 0, 2 },
	{ 3, 2, 1, 0, 4 }, { 0, 2, 4, 3, 1 }, { 4, 1, 0, 2, 3 }, { 2, 3, 0, 4, 1 },
};
#define ORDERS (sizeof(orders) / sizeof(orders[0]))

static struct ibv_context *ctx;
static struct ibv_pd *pd[2];
static struct ibv_cq *cq;
static struct ibv_qp *qp[2];
static uint8_t *R, *model, *local;
static struct ibv_mr *lmr[2], *mr[NMR];  /* lmr: local, one per PD */
static uint32_t stamp;

/* One RDMA (WRITE from local, or READ into it) at [addr, +len) through
 * rkey, an MR of PD p: from the QP of the other PD, so that its peer, the
 * responder, is p's; its CQE waited for and checked. 0 or -1. */
static int
rdma(enum ibv_wr_opcode op, int p, uint64_t addr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)local, .length = len, .lkey = lmr[1 - p]->lkey };
	struct ibv_send_wr wr = { .wr_id = ++stamp, .sg_list = &sge, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	unsigned long long spins = 0;
	struct ibv_wc wc;
	int n;

	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(qp[1 - p], &wr, &bad) != 0) {
		EXPECT(0, "post_send %s", op == IBV_WR_RDMA_WRITE ? "WRITE" : "READ");
		return -1;
	}
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && ++spins < POLL_SPINS)
		;
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != stamp) {
		EXPECT(0, "%s at %#" PRIx64 " rkey %#x: n %d status %s", op == IBV_WR_RDMA_WRITE ?
		       "WRITE" : "READ", addr, rkey, n, n == 1 ? ibv_wc_status_str(wc.status) : "-");
		return -1;
	}
	return 0;
}

/* R as the program loads it against the model. */
static void
check_all(const char *when)
{
	size_t i;

	for (i = 0; i < RLEN; i++) {
		if (R[i] != model[i]) {
			EXPECT(0, "%s: R[%zu] %#x, written %#x", when, i, R[i], model[i]);
			return;
		}
	}
}

/* A fresh pattern WRITten through MR k, then READ back through it. */
static void
write_read(int k, const char *when)
{
	uint32_t len = (uint32_t)span[k].len;
	size_t i;

	for (i = 0; i < len; i++)
		local[i] = (uint8_t)(stamp * 7 + (uint32_t)k * 29 + i);
	if (rdma(IBV_WR_RDMA_WRITE, span[k].pd, (uintptr_t)R + span[k].off, mr[k]->rkey, len) != 0)
		return;
	memcpy(model + span[k].off, local, len);
	check_all(when);
	/* the program's own store, then a READ sees it through the daemon */
	R[span[k].off + len / 2] ^= 0xa5;
	model[span[k].off + len / 2] ^= 0xa5;
	memset(local, 0, len);
	if (rdma(IBV_WR_RDMA_READ, span[k].pd, (uintptr_t)R + span[k].off, mr[k]->rkey, len) != 0)
		return;
	EXPECT(memcmp(local, model + span[k].off, len) == 0, "%s: READ through M%d differs",
	       when, k);
}

/* Whether /proc/self/maps shows a srnic-mr mapping over [lo, hi). */
static int
rebacked(uintptr_t lo, uintptr_t hi)
{
	char line[512];
	unsigned long a, b;
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "re");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%lx-%lx", &a, &b) == 2 && a < hi && b > lo &&
		    strstr(line, "srnic-mr") != NULL)
			found = 1;
	fclose(f);
	return found;
}

static void
round_trip(unsigned int o)
{
	char when[96];
	int i, k;

	for (k = 0; k < NMR; k++) {
		mr[k] = ibv_reg_mr(pd[span[k].pd], R + span[k].off, span[k].len, ACC);
		EXPECT(mr[k] != NULL, "order %u: ibv_reg_mr M%d [%zu, +%zu): %m", o, k,
		       span[k].off, span[k].len);
		if (mr[k] == NULL)
			return;
		snprintf(when, sizeof(when), "order %u, M%d registered", o, k);
		check_all(when);
	}
	for (k = 0; k < NMR; k++) {
		snprintf(when, sizeof(when), "order %u, all registered, M%d", o, k);
		write_read(k, when);
	}
	for (i = 0; i < NMR; i++) {
		EXPECT(ibv_dereg_mr(mr[orders[o][i]]) == 0, "order %u: dereg M%d", o,
		       orders[o][i]);
		mr[orders[o][i]] = NULL;
		snprintf(when, sizeof(when), "order %u, M%d deregistered", o, orders[o][i]);
		check_all(when);
		for (k = 0; k < NMR; k++) {
			if (mr[k] == NULL)
				continue;
			snprintf(when, sizeof(when), "order %u, M%d deregistered, M%d", o,
				 orders[o][i], k);
			write_read(k, when);
		}
	}
	EXPECT(rebacked((uintptr_t)R, (uintptr_t)R + RLEN) == 0,
	       "order %u: R still mapped from srnic-mr after every dereg", o);
	/* private again: a store and the model agree */
	for (k = 0; k < RLEN; k += 97) {
		R[k] = (uint8_t)(k + o);
		model[k] = (uint8_t)(k + o);
	}
	snprintf(when, sizeof(when), "order %u, all deregistered", o);
	check_all(when);
}

/* A registration refused part-way counts nothing: page 0 registered, then
 * [page 0, page 3) over a hole (page 1 unmapped: EFAULT, as the kernel's
 * ib_umem_get) and over a shared mapping (EOPNOTSUPP: not private
 * memory); page 0's one MR then still reaches it, and its dereg leaves no
 * srnic-mr mapping (a count left behind would keep it). */
static void
refused(void)
{
	uint8_t *h = mmap(NULL, RLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *m0, *bad;
	size_t i;

	if (h == MAP_FAILED)
		return;
	memset(h, 0x33, RLEN);
	m0 = ibv_reg_mr(pd[0], h, PG, ACC);
	EXPECT(m0 != NULL, "refused: page 0: %m");
	if (m0 == NULL)
		return;
	munmap(h + PG, PG);
	errno = 0;
	bad = ibv_reg_mr(pd[0], h, RLEN, ACC);
	EXPECT(bad == NULL && errno == EFAULT, "over a hole: %p, errno %d (EFAULT expected)",
	       (void *)bad, errno);
	if (mmap(h + PG, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1,
		 0) != MAP_FAILED) {
		errno = 0;
		bad = ibv_reg_mr(pd[0], h, RLEN, ACC);
		EXPECT(bad == NULL && errno == EOPNOTSUPP,
		       "over a shared mapping: %p, errno %d (EOPNOTSUPP expected)", (void *)bad,
		       errno);
	}
	for (i = 0; i < PG; i++)
		local[i] = (uint8_t)(0x90 + i);
	if (rdma(IBV_WR_RDMA_WRITE, 0, (uintptr_t)h, m0->rkey, PG) == 0)
		EXPECT(memcmp(h, local, PG) == 0, "refused: page 0's MR after the refusals");
	EXPECT(ibv_dereg_mr(m0) == 0, "refused: dereg page 0");
	EXPECT(rebacked((uintptr_t)h, (uintptr_t)h + PG) == 0,
	       "refused: page 0 still mapped from srnic-mr: a refusal left a count behind");
	EXPECT(memcmp(h, local, PG) == 0 && h[2 * PG] == 0x33, "refused: bytes kept");
	munmap(h, RLEN);
}

/* rping's buffers: heap neighbours, one page. */
static void
heap_pair(void)
{
	uint8_t *a = malloc(300), *b = malloc(300);
	struct ibv_mr *ma, *mb;
	size_t i;

	if (a == NULL || b == NULL)
		return;
	memset(a, 0x11, 300);
	memset(b, 0x22, 300);
	ma = ibv_reg_mr(pd[0], a, 300, ACC);
	mb = ibv_reg_mr(pd[0], b, 300, ACC);
	EXPECT(ma != NULL && mb != NULL, "heap neighbours %p %p: ibv_reg_mr: %m", a, b);
	if (ma != NULL && mb != NULL) {
		for (i = 0; i < 300; i++)
			local[i] = (uint8_t)(0x40 + i);
		if (rdma(IBV_WR_RDMA_WRITE, 0, (uintptr_t)b, mb->rkey, 300) == 0)
			EXPECT(memcmp(b, local, 300) == 0 && a[0] == 0x11 && a[299] == 0x11,
			       "heap neighbour WRITE");
		EXPECT(ibv_dereg_mr(mb) == 0, "dereg b");
		for (i = 0; i < 300; i++)
			local[i] = (uint8_t)(0x80 + i);
		if (rdma(IBV_WR_RDMA_WRITE, 0, (uintptr_t)a, ma->rkey, 300) == 0)
			EXPECT(memcmp(a, local, 300) == 0 && b[0] == 0x40 && b[299] == (uint8_t)(0x40 + 299),
			       "heap neighbour WRITE after the other's dereg");
	}
	if (ma != NULL)
		EXPECT(ibv_dereg_mr(ma) == 0, "dereg a");
	free(b);
	free(a);
}

int
main(void)
{
	struct ibv_qp_init_attr ia = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_device **list;
	union ibv_gid gid;
	unsigned int o;
	size_t i;
	int n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1) {
		printf("FAIL: no device (is srnicd running?)\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	R = mmap(NULL, RLEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	local = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	model = malloc(RLEN);
	if (ctx == NULL || R == MAP_FAILED || local == MAP_FAILED || model == NULL ||
	    ibv_query_gid(ctx, 1, 1, &gid) != 0) {
		printf("FAIL: setup: %m\n");
		return 1;
	}
	pd[0] = ibv_alloc_pd(ctx);
	pd[1] = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	/* the local buffer twice, once per PD: the same pages registered again */
	for (n = 0; n < 2; n++)
		lmr[n] = pd[n] != NULL ? ibv_reg_mr(pd[n], local, 2 * PG,
						    IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (cq == NULL || lmr[0] == NULL || lmr[1] == NULL) {
		printf("FAIL: setup: %m\n");
		return 1;
	}
	ia.send_cq = ia.recv_cq = cq;
	for (n = 0; n < 2; n++) {
		qp[n] = ibv_create_qp(pd[n], &ia);
		if (qp[n] == NULL) {
			printf("FAIL: create_qp: %m\n");
			return 1;
		}
	}
	/* qp[n] in pd[n]: an RDMA through an MR of pd[p] goes from qp[1 - p]
	 * to qp[p], whose PD must be the MR's */
	for (n = 0; n < 2; n++)
		if (verbs_rc_connect(qp[n], qp[1 - n]->qp_num, &gid, 1, 0, ACC) != 0) {
			printf("FAIL: connect: %m\n");
			return 1;
		}
	for (i = 0; i < RLEN; i++)
		R[i] = model[i] = (uint8_t)(i ^ 0x5a);
	for (o = 0; o < ORDERS && fails == 0; o++)
		round_trip(o);
	heap_pair();
	refused();
	if (fails == 0)
		printf("share_check: ok (%zu dereg orders, %d MRs over 3 pages; heap neighbours; "
		       "refusals)\n",
		       ORDERS, NMR);
	return fails == 0 ? 0 : 1;
}
