/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lcore ids of the program's threads that drive srnic's engine, in
 * embedded mode (drivers/verbs/verbs_progress.c, thread_lcore()). Run by
 * usertools/srnic run with SRNIC_PROGRESS=app (no progress thread: each
 * ibv_poll_cq() of the one thread polling runs the engine) on a memif
 * server port no peer joins: two RC QPs of this process talk through the
 * device's in-device loopback.
 *
 * - the opener has an lcore id (EAL's main lcore);
 * - a second thread that polls a CQ and runs a WRITE has one of its own
 *   while it drives (rte_lcore_id() in that thread: the same librte_eal
 *   as the drop-in's);
 * - THREADS threads started and joined one after another each get one (the
 *   ids are given back at their exit);
 * - with CAP threads holding one (parked), the next has none and its WRITE
 *   still completes; the same with DPDK's ids used up (this program's own
 *   threads take them with rte_thread_register());
 * - a thread that went without takes one once another gave its back;
 * - once they are given back, a new thread has one again;
 * - every thread that had one left its mempool caches empty at its exit
 *   (the drop-in flushes them before the id is free again).
 *
 *   verbs_lcore CAP      (CAP: the drop-in's SV_THREAD_LCORE_MAX)
 *
 * And a workload to count instructions on (doc/verbs.md, "Progress"): a second
 * thread runs N 64-byte WRITEs, posting up to BENCH_DEPTH and polling,
 * in bench_main() (callgrind --toggle-collect=bench_main); with "none"
 * DPDK's free lcore ids are taken first, so that thread drives without
 * one, as every thread but the opener did before.
 *
 *   verbs_lcore bench N [none]
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rte_lcore.h>
#include <rte_mempool.h>

#include "verbs_rc_connect.h"

#define GID_INDEX 1
#define BUF_SIZE 8192
#define THREADS 200
#define POLL_GUARD 100000000ULL     /* polls before a lost completion is a failure */
#define BENCH_DEPTH 16              /* WRITEs in flight in bench mode (the QPs' depth) */

static int failures;

static void
check(int cond, const char *what)
{
	if (cond) {
		printf("ok %s\n", what);
	} else {
		printf("FAIL %s\n", what);
		failures++;
	}
	fflush(stdout);
}

static struct {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp[2];
	uint8_t *buf;
	union ibv_gid gid;
} e;

static int
setup(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_qp_init_attr qa;
	int i;

	if (list == NULL || list[0] == NULL)
		return -1;
	e.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (e.ctx == NULL || ibv_query_gid(e.ctx, 1, GID_INDEX, &e.gid) != 0)
		return -1;
	e.pd = ibv_alloc_pd(e.ctx);
	e.cq = ibv_create_cq(e.ctx, 64, NULL, NULL, 0);
	e.buf = calloc(1, 2 * BUF_SIZE);
	if (e.pd == NULL || e.cq == NULL || e.buf == NULL)
		return -1;
	e.mr = ibv_reg_mr(e.pd, e.buf, 2 * BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (e.mr == NULL)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = e.cq;
	qa.recv_cq = e.cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 16;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	for (i = 0; i < 2; i++)
		if ((e.qp[i] = ibv_create_qp(e.pd, &qa)) == NULL)
			return -1;
	for (i = 0; i < 2; i++)
		if (verbs_rc_connect(e.qp[i], e.qp[1 - i]->qp_num, &e.gid, GID_INDEX, 2000,
				     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) != 0)
			return -1;
	return 0;
}

/* An 8 KiB WRITE from qp[0] into the buffer's second half, polled to its
 * completion by the calling thread, its bytes checked: 1 when all went */
static int
write_one(uint8_t seed)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e.buf, .length = BUF_SIZE, .lkey = e.mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	unsigned long long i;
	int n = 0, k;

	for (k = 0; k < BUF_SIZE; k++)
		e.buf[k] = (uint8_t)(k * 7 + seed);
	memset(e.buf + BUF_SIZE, 0, BUF_SIZE);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = seed;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)e.buf + BUF_SIZE;
	wr.wr.rdma.rkey = e.mr->rkey;
	if (ibv_post_send(e.qp[0], &wr, &bad) != 0)
		return 0;
	for (i = 0; i < POLL_GUARD && n == 0; i++)
		n = ibv_poll_cq(e.cq, 1, &wc);
	if (n != 1 || wc.status != IBV_WC_SUCCESS || wc.wr_id != seed)
		return 0;
	for (k = 0; k < BUF_SIZE; k++)
		if (e.buf[BUF_SIZE + k] != (uint8_t)(k * 7 + seed))
			return 0;
	return 1;
}

/* A thread's view: its lcore id after its first ibv_poll_cq(), after a
 * WRITE it drove (traffic), and whether that WRITE went */
struct seen {
	unsigned int lcore_poll, lcore_write;
	int wrote;
	int traffic;                /* in: run a WRITE */
	int park;                   /* in: wait for release() before exiting */
	int eal_take;               /* in: only rte_thread_register(), no verbs */
	int eal_took;
	int repoll;                 /* in: after park(), wait for repoll_go, poll again */
	unsigned int lcore_repoll;  /* its lcore id after that poll */
};

static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int parked, released, repoll_go;
/* the threads joined that had an lcore id, and the mbufs their ids'
 * caches still held after the join (0: flushed at their exit) */
static unsigned int cache_checked, cache_left;

static void
cache_len(struct rte_mempool *mp, void *arg)
{
	unsigned int *id = arg;
	struct rte_mempool_cache *c = rte_mempool_default_cache(mp, *id);

	if (c != NULL)
		cache_left += c->len;
}

/* after the join of a thread that had lcore id id (if any) */
static void
joined(unsigned int id)
{
	if (id == LCORE_ID_ANY)
		return;
	cache_checked++;
	rte_mempool_walk(cache_len, &id);
}

static void
park(void)
{
	pthread_mutex_lock(&park_lock);
	parked++;
	pthread_cond_broadcast(&park_cond);
	while (!released)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

static void *
thread_main(void *arg)
{
	struct seen *s = arg;
	struct ibv_wc wc;

	if (s->eal_take) {
		s->eal_took = rte_thread_register() == 0;
		park();
		if (s->eal_took)
			rte_thread_unregister();
		return NULL;
	}
	ibv_poll_cq(e.cq, 1, &wc);
	s->lcore_poll = rte_lcore_id();
	if (s->traffic) {
		s->wrote = write_one((uint8_t)(s->lcore_poll + 11));
		s->lcore_write = rte_lcore_id();
	}
	if (s->park)
		park();
	if (s->repoll) {
		pthread_mutex_lock(&park_lock);
		while (!repoll_go)
			pthread_cond_wait(&park_cond, &park_lock);
		pthread_mutex_unlock(&park_lock);
		ibv_poll_cq(e.cq, 1, &wc);
		s->lcore_repoll = rte_lcore_id();
	}
	return NULL;
}

static int
run(struct seen *s, pthread_t *t)
{
	return pthread_create(t, NULL, thread_main, s);
}

static void
wait_parked(int n)
{
	pthread_mutex_lock(&park_lock);
	while (parked < n)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
}

/* The n parked threads go and are joined; those with repoll then poll
 * again (after the others gave their ids back) and are joined */
static void
release_all(pthread_t *t, struct seen *s, int n)
{
	int i;

	pthread_mutex_lock(&park_lock);
	released = 1;
	pthread_cond_broadcast(&park_cond);
	pthread_mutex_unlock(&park_lock);
	for (i = 0; i < n; i++) {
		if (s[i].repoll)
			continue;
		pthread_join(t[i], NULL);
		if (!s[i].eal_take)
			joined(s[i].lcore_poll);
	}
	pthread_mutex_lock(&park_lock);
	repoll_go = 1;
	pthread_cond_broadcast(&park_cond);
	pthread_mutex_unlock(&park_lock);
	for (i = 0; i < n; i++) {
		if (!s[i].repoll)
			continue;
		pthread_join(t[i], NULL);
		joined(s[i].lcore_repoll);
	}
	pthread_mutex_lock(&park_lock);
	released = 0;
	parked = 0;
	repoll_go = 0;
	pthread_mutex_unlock(&park_lock);
}

/* N 64-byte WRITEs, up to BENCH_DEPTH in flight; the completions seen */
static void *
bench_main(void *arg)
{
	unsigned long *n = arg;
	struct ibv_sge sge = { .addr = (uintptr_t)e.buf, .length = 64, .lkey = e.mr->lkey };
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc[BENCH_DEPTH];
	unsigned long posted = 0, done = 0;
	unsigned long long polls = 0;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)e.buf + BUF_SIZE;
	wr.wr.rdma.rkey = e.mr->rkey;
	while (done < *n && polls < POLL_GUARD) {
		int k, got;

		while (posted < *n && posted - done < BENCH_DEPTH &&
		       ibv_post_send(e.qp[0], &wr, &bad) == 0)
			posted++;
		got = ibv_poll_cq(e.cq, BENCH_DEPTH, wc);
		polls++;
		for (k = 0; k < got; k++)
			if (wc[k].status != IBV_WC_SUCCESS)
				polls = POLL_GUARD;
		if (got > 0)
			done += (unsigned long)got;
	}
	printf("bench: %lu WRITEs of 64 B completed on lcore %u\n", done, rte_lcore_id());
	*n = done;
	return NULL;
}

static int
bench(unsigned long n, int none)
{
	static pthread_t held[RTE_MAX_LCORE + 1];
	static struct seen hs[RTE_MAX_LCORE + 1];
	unsigned long want = n;
	int i, nheld = 0;
	pthread_t t;

	if (setup() != 0) {
		printf("FAIL setup (errno %d: %s)\n", errno, strerror(errno));
		return 1;
	}
	for (i = 0; none && i <= RTE_MAX_LCORE; i++) {
		hs[i] = (struct seen){ .eal_take = 1 };
		if (run(&hs[i], &held[i]) != 0)
			break;
		nheld++;
		wait_parked(nheld);
		if (!hs[i].eal_took)
			break;
	}
	if (pthread_create(&t, NULL, bench_main, &n) != 0)
		return 1;
	pthread_join(t, NULL);
	release_all(held, hs, nheld);
	return n == want ? 0 : 1;
}

/* one thread that polls and runs a WRITE, joined */
static struct seen
one_driver(void)
{
	struct seen s = { .traffic = 1 };
	pthread_t t;

	if (run(&s, &t) != 0) {
		check(0, "pthread_create");
		return s;
	}
	pthread_join(t, NULL);
	joined(s.lcore_write);
	return s;
}

int
main(int argc, char **argv)
{
	static pthread_t held[RTE_MAX_LCORE + 1];
	static struct seen hs[RTE_MAX_LCORE + 1];
	char what[256];
	unsigned int opener;
	struct seen s;
	int cap, i, got, nheld;

	if (argc >= 3 && strcmp(argv[1], "bench") == 0)
		return bench(strtoul(argv[2], NULL, 0), argc > 3 && strcmp(argv[3], "none") == 0);
	if (argc != 2 || (cap = atoi(argv[1])) <= 0 || cap >= RTE_MAX_LCORE) {
		fprintf(stderr, "usage: verbs_lcore CAP (the drop-in's SV_THREAD_LCORE_MAX)\n");
		return 2;
	}
	if (setup() != 0) {
		printf("FAIL setup (errno %d: %s)\n", errno, strerror(errno));
		return 1;
	}
	opener = rte_lcore_id();
	snprintf(what, sizeof(what), "the opener has an lcore id (%u)", opener);
	check(opener != LCORE_ID_ANY, what);

	/* a thread of the program's, not the opener, drives traffic */
	s = one_driver();
	snprintf(what, sizeof(what), "a second thread drives with an lcore id of its own: %u "
		 "after its first poll, %u after its WRITE (opener %u)", s.lcore_poll,
		 s.lcore_write, opener);
	check(s.lcore_poll != LCORE_ID_ANY && s.lcore_poll == s.lcore_write &&
	      s.lcore_poll != opener, what);
	check(s.wrote, "its 8 KiB WRITE completed, bytes checked");

	/* one after another: the ids come back at each thread's exit */
	got = 0;
	for (i = 0; i < THREADS; i++) {
		struct seen t1 = { 0 };
		pthread_t t;

		if (run(&t1, &t) != 0)
			break;
		pthread_join(t, NULL);
		joined(t1.lcore_poll);
		got += t1.lcore_poll != LCORE_ID_ANY;
	}
	snprintf(what, sizeof(what), "%d threads started and joined one after another: %d had "
		 "an lcore id", THREADS, got);
	check(got == THREADS, what);

	/* CAP threads hold one (parked after their poll): the next has none */
	nheld = 0;
	for (i = 0; i <= cap; i++) {
		/* the one past the cap polls again once the others are gone */
		hs[i] = (struct seen){ .park = 1, .repoll = i == cap };
		if (run(&hs[i], &held[i]) != 0)
			break;
		nheld++;
		wait_parked(nheld);
	}
	got = 0;
	for (i = 0; i < nheld; i++)
		got += hs[i].lcore_poll != LCORE_ID_ANY;
	snprintf(what, sizeof(what), "%d parked threads that polled: %d have an lcore id (the "
		 "drop-in's cap %d)", nheld, got, cap);
	check(nheld == cap + 1 && got == cap && hs[cap].lcore_poll == LCORE_ID_ANY, what);
	s = one_driver();
	snprintf(what, sizeof(what), "past the cap a thread drives without an lcore id (%u) and "
		 "its WRITE completes", s.lcore_write);
	check(s.lcore_write == LCORE_ID_ANY && s.wrote, what);
	release_all(held, hs, nheld);
	snprintf(what, sizeof(what), "the thread that went without has one once the others "
		 "gave theirs back (%u)", hs[cap].lcore_repoll);
	check(nheld == cap + 1 && hs[cap].lcore_repoll != LCORE_ID_ANY, what);

	/* DPDK's ids used up by this program's own threads */
	nheld = 0;
	for (i = 0; i <= RTE_MAX_LCORE; i++) {
		hs[i] = (struct seen){ .eal_take = 1 };
		if (run(&hs[i], &held[i]) != 0)
			break;
		nheld++;
		wait_parked(nheld);
		if (!hs[i].eal_took)
			break;
	}
	snprintf(what, sizeof(what), "this program's threads took DPDK's free lcore ids (%d)",
		 nheld - 1);
	check(nheld > 0 && !hs[nheld - 1].eal_took, what);
	s = one_driver();
	snprintf(what, sizeof(what), "with none left a thread drives without one (%u) and its "
		 "WRITE completes", s.lcore_write);
	check(s.lcore_write == LCORE_ID_ANY && s.wrote, what);
	release_all(held, hs, nheld);

	s = one_driver();
	snprintf(what, sizeof(what), "given back, a new thread has one again (%u)", s.lcore_write);
	check(s.lcore_write != LCORE_ID_ANY && s.wrote, what);
	snprintf(what, sizeof(what), "%u threads with an lcore id joined: their ids' mempool "
		 "caches held %u mbufs after (want 0)", cache_checked, cache_left);
	check(cache_checked >= THREADS && cache_left == 0, what);

	if (failures != 0) {
		printf("%d failed\n", failures);
		return 1;
	}
	printf("all ok\n");
	return 0;
}
