/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device lifetimes on one net_ring pair the
 * tests create devices on again and again: destroy is -EBUSY while objects
 * live; create, destroy, create again under the same name works 1,000
 * times with DPDK memory back to where it was; a pool whose mbufs sit in
 * the peer's ring outlives its device until they come back; a failed
 * create leaks nothing; the control path called from inside the poll (a
 * host_rx callback) is -EDEADLK, not a hang; srnic_dereg_mr_wait() returns
 * once the last mbuf over the memory is gone, or times out.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_memzone.h>
#include <rte_pause.h>

#include <cmocka.h>

#include "srnic.h"
#include "rnic.h" /* sizeof(struct srnic_dev): the MR-outlives-device test poisons a freed one */

#if defined(__SANITIZE_ADDRESS__)
#define DL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DL_ASAN 1
#endif
#endif
#ifdef DL_ASAN
#include <sanitizer/asan_interface.h>
#define DL_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define DL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define DL_POISON(p, n) RTE_SET_USED(p)
#define DL_UNPOISON(p, n) RTE_SET_USED(p)
#endif
#include "srnic_link.h"
#include "srnic_pair.h"
#include "test_eal.h"
#include "test_ref.h"

#define DL_LOOPS 1000
#define DL_MBUFS 1024           /* small pools: 1,000 creates stay fast */
#define DL_WAIT_S 20
#define DL_MSG 8192             /* zero-copy WRITE: mbufs over the MR */
#define DL_ETHERTYPE 0x88b5     /* IEEE local experimental: a host frame */
#define SQD_AV_TCLASS 0x68      /* the traffic class an SQD -> SQD AV would set */

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0xd1, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0xd1, 0x02 } },
};

static struct {
	uint16_t port[2];
	struct srnic_pair p;        /* devices of the current test */
	struct srnic_cq *cq[2];
	struct srnic_qp *qp[2];
	struct srnic_mr *mr[2];
	uint8_t *buf[2];
	/* host_rx callback: what the control path answered from inside */
	uint32_t ncb;
	int rc_dereg, rc_dereg_wait, rc_reset, rc_destroy_qp, rc_dev_destroy;
	int rc_sqd_av;              /* SQD -> SQD with an AV, from the callback */
	/* release callback */
	_Atomic int released;
} T;

static void
count_mz(const struct rte_memzone *mz, void *arg)
{
	RTE_SET_USED(mz);
	(*(unsigned int *)arg)++;
}

static unsigned int
mz_count(void)
{
	unsigned int n = 0;

	rte_memzone_walk(count_mz, &n);
	return n;
}

static void
count_pool(struct rte_mempool *mp, void *arg)
{
	RTE_SET_USED(mp);
	(*(unsigned int *)arg)++;
}

static unsigned int
pool_count(void)
{
	unsigned int n = 0;

	rte_mempool_walk(count_pool, &n);
	return n;
}

static size_t
heap_alloc_bytes(void)
{
	struct rte_malloc_socket_stats st;

	assert_int_equal(rte_malloc_get_socket_stats((int)rte_socket_id(), &st), 0);
	return st.heap_allocsz_bytes;
}

static void
on_host_rx(struct srnic_dev *dev, struct rte_mbuf *m, void *arg)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	RTE_SET_USED(arg);
	T.ncb++;
	/* the SQD AV handoff quiesces too */
	T.rc_sqd_av = -1;
	if (srnic_qp_state(T.qp[0]) == IBV_QPS_SQD) {
		struct ibv_qp_attr q;

		if (srnic_query_qp(T.qp[0], &q, 0, NULL) == 0) {
			q.qp_state = IBV_QPS_SQD;
			q.ah_attr.grh.traffic_class = SQD_AV_TCLASS;
			T.rc_sqd_av = srnic_modify_qp(T.qp[0], &q, IBV_QP_STATE | IBV_QP_AV);
		}
	}
	T.rc_dereg = srnic_dereg_mr(T.mr[0]);
	T.rc_dereg_wait = srnic_dereg_mr_wait(T.mr[0], 1000);
	T.rc_reset = srnic_modify_qp(T.qp[0], &a, IBV_QP_STATE);
	T.rc_destroy_qp = srnic_destroy_qp(T.qp[0]);
	T.rc_dev_destroy = srnic_dev_destroy(dev);
	rte_pktmbuf_free(m);
}

static void
on_release(void *addr, size_t length, void *arg)
{
	RTE_SET_USED(addr);
	RTE_SET_USED(length);
	RTE_SET_USED(arg);
	atomic_fetch_add(&T.released, 1);
}

/* A's tx_seg_max knob for the next dev_new (0: the port's) */
static uint16_t dl_tx_seg_max;
/* the next dev_new's nb_caching_lcores (-1: the bit clear) */
static int dl_caching = -1;

static struct srnic_dev *
dev_new(int side, uint16_t nb_engines, uint32_t nb_mbufs, srnic_host_rx_cb host_rx)
{
	struct srnic_dev_conf c;

	memset(&c, 0, sizeof(c));
	c.port_id = T.port[side];
	c.nb_engines = nb_engines;
	c.mtu = 9000;
	c.ip_ver = 4;
	c.ip[0] = 127;
	c.ip[3] = (uint8_t)(1 + side);
	c.mac = &mac[side];
	c.nb_mbufs = nb_mbufs;
	c.host_rx = host_rx;
	c.name = side == 0 ? "dlA" : "dlB";
	if (side == 0 && dl_tx_seg_max != 0) { /* A's TX copies every packet */
		c.comp_mask |= SRNIC_DEV_CONF_TX_SEG_MAX;
		c.tx_seg_max = dl_tx_seg_max;
	}
	if (dl_caching >= 0) {
		c.comp_mask |= SRNIC_DEV_CONF_CACHING_LCORES;
		c.nb_caching_lcores = (uint16_t)dl_caching;
	}
	return srnic_dev_create(&c);
}

/* Both devices, a PD each, neighbours known. */
static void
pair_new(srnic_host_rx_cb host_rx_a)
{
	union ibv_gid gid;
	int i;

	memset(&T.p, 0, sizeof(T.p));
	atomic_store(&T.released, 0);
	for (i = 0; i < 2; i++) {
		T.p.port[i] = T.port[i];
		T.p.dev[i] = dev_new(i, 1, DL_MBUFS, i == 0 ? host_rx_a : NULL);
		assert_non_null(T.p.dev[i]);
		T.p.pd[i] = srnic_alloc_pd(T.p.dev[i]);
		assert_non_null(T.p.pd[i]);
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(srnic_dev_gid(T.p.dev[1 - i], 1, &gid), 0);
		assert_int_equal(srnic_dev_add_neigh(T.p.dev[i], &gid, &mac[1 - i]), 0);
	}
}

/* A CQ, an RC QP and a DL_MSG buffer on each side; the QPs connected. */
static void
qps_new(void)
{
	struct srnic_pair_qp_conf qc = { .path_mtu = IBV_MTU_4096, .psn = { 2000, 7000 },
					 .max_rd_atomic = 16, .timeout = 14, .retry_cnt = 7,
					 .rnr_retry = 7, .min_rnr_timer = 1 };
	int i;

	for (i = 0; i < 2; i++) {
		struct srnic_qp_init_attr qa = { .max_send_wr = 16, .max_recv_wr = 16,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .qp_type = IBV_QPT_RC };

		T.cq[i] = srnic_create_cq(T.p.dev[i], 64, NULL);
		assert_non_null(T.cq[i]);
		qa.send_cq = qa.recv_cq = T.cq[i];
		T.qp[i] = srnic_create_qp(T.p.pd[i], &qa);
		assert_non_null(T.qp[i]);
		T.buf[i] = rte_zmalloc("dl_buf", DL_MSG, 4096);
		assert_non_null(T.buf[i]);
		T.mr[i] = srnic_reg_mr_cb(T.p.pd[i], T.buf[i], DL_MSG,
					  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
					  i == 0 ? on_release : NULL, NULL);
		assert_non_null(T.mr[i]);
	}
	assert_int_equal(srnic_pair_connect(&T.p, T.qp[0], T.qp[1], &qc), 0);
}

/* A zero-copy WRITE of A's buffer into B's, signaled. */
static void
post_write(void)
{
	struct ibv_sge s = { .addr = (uintptr_t)T.buf[0], .length = DL_MSG,
			     .lkey = srnic_mr_lkey(T.mr[0]) };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad = NULL;

	wr.wr.rdma.remote_addr = (uintptr_t)T.buf[1];
	wr.wr.rdma.rkey = srnic_mr_rkey(T.mr[1]);
	srnic_test_fill(T.buf[0], DL_MSG, 42);
	assert_int_equal(srnic_post_send(T.qp[0], &wr, &bad), 0);
}

static void
poll_until_memequal(void)
{
	uint64_t dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();

	while (memcmp(T.buf[0], T.buf[1], DL_MSG) != 0) {
		assert_true(rte_get_timer_cycles() < dl);
		srnic_engine_poll(srnic_dev_engine(T.p.dev[0], 0));
		srnic_engine_poll(srnic_dev_engine(T.p.dev[1], 0));
	}
}

/* Every object of side i goes, in verbs order (QP, CQ, MR, PD, device). */
static void
side_destroy(int i)
{
	if (T.qp[i] != NULL)
		assert_int_equal(srnic_destroy_qp(T.qp[i]), 0);
	if (T.cq[i] != NULL)
		assert_int_equal(srnic_destroy_cq(T.cq[i]), 0);
	if (T.mr[i] != NULL)
		assert_int_equal(srnic_dereg_mr(T.mr[i]), 0);
	assert_int_equal(srnic_dealloc_pd(T.p.pd[i]), 0);
	assert_int_equal(srnic_dev_destroy(T.p.dev[i]), 0);
	T.qp[i] = NULL;
	T.cq[i] = NULL;
	T.mr[i] = NULL;
	T.p.pd[i] = NULL;
	T.p.dev[i] = NULL;
}

/* The device is EBUSY while a PD, CQ, MR or QP lives. */
static void
test_dev_destroy_busy(void **state)
{
	RTE_SET_USED(state);
	pair_new(NULL);
	qps_new();
	assert_int_equal(srnic_dev_destroy(T.p.dev[0]), -EBUSY);
	assert_int_equal(srnic_destroy_cq(T.cq[0]), -EBUSY);
	assert_int_equal(srnic_destroy_qp(T.qp[0]), 0);
	T.qp[0] = NULL;
	assert_int_equal(srnic_dev_destroy(T.p.dev[0]), -EBUSY); /* CQ, MR, PD */
	assert_int_equal(srnic_destroy_cq(T.cq[0]), 0);
	T.cq[0] = NULL;
	assert_int_equal(srnic_dev_destroy(T.p.dev[0]), -EBUSY); /* MR, PD */
	assert_int_equal(srnic_dereg_mr(T.mr[0]), 0);
	T.mr[0] = NULL;
	assert_int_equal(srnic_dev_destroy(T.p.dev[0]), -EBUSY); /* PD */
	/* the device still works: B's side is untouched, A's engine polls */
	srnic_engine_poll(srnic_dev_engine(T.p.dev[0], 0));
	side_destroy(0);
	side_destroy(1);
	rte_free(T.buf[0]);
	rte_free(T.buf[1]);
}

/* Create, destroy, create again on the same ports and names,
 * 1,000 times; DPDK's memzones and heap are where the first round left
 * them (LeakSanitizer checks the rest at exit). */
static void
test_recreate_loop(void **state)
{
	unsigned int mz = 0, i;
	size_t heap = 0;

	RTE_SET_USED(state);
	for (i = 0; i < DL_LOOPS; i++) {
		pair_new(NULL);
		side_destroy(0);
		side_destroy(1);
		if (i == 0) {
			mz = mz_count();
			heap = heap_alloc_bytes();
		}
	}
	assert_int_equal(mz_count(), mz);
	assert_int_equal(heap_alloc_bytes(), heap);
}

/* A failed create leaks no pool (rx_pool did when the header
 * pool failed) and leaves the name free. */
static void
test_create_fail_no_leak(void **state)
{
	unsigned int mz;
	size_t heap;

	RTE_SET_USED(state);
	pair_new(NULL);
	side_destroy(0);
	side_destroy(1);
	mz = mz_count();
	heap = heap_alloc_bytes();
	/* no room for the header and attach pools; the RX pool fits */
	assert_null(dev_new(0, 1, 1u << 30, NULL));
	assert_int_equal(mz_count(), mz);
	assert_int_equal(heap_alloc_bytes(), heap);
	/* a port with one queue pair cannot give two engines */
	assert_null(dev_new(0, 2, DL_MBUFS, NULL));
	assert_int_equal(mz_count(), mz);
	assert_int_equal(heap_alloc_bytes(), heap);
	pair_new(NULL);
	side_destroy(0);
	side_destroy(1);
	assert_int_equal(mz_count(), mz);
}

/* A's WRITE sits in B's RX ring (A's mbufs over A's MR) when A is
 * destroyed: its pools wait, B still receives the right bytes, and the
 * pools go once the mbufs are back. */
static void
test_pool_outlives_device(void **state)
{
	struct srnic_engine *ea, *eb;
	unsigned int mz, pools;
	uint64_t dl;

	RTE_SET_USED(state);
	pair_new(NULL);
	side_destroy(0);
	side_destroy(1);
	mz = mz_count();

	pair_new(NULL);
	qps_new();
	ea = srnic_dev_engine(T.p.dev[0], 0);
	eb = srnic_dev_engine(T.p.dev[1], 0);
	post_write();
	dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
	while (srnic_dev_stat(T.p.dev[0], "tx_pkts") < 2) {
		assert_true(rte_get_timer_cycles() < dl);
		srnic_engine_poll(ea);
	}
	pools = pool_count();
	side_destroy(0);
	assert_int_equal(atomic_load(&T.released), 0); /* B's ring holds the memory */
	/* A's header and attach pools wait for their mbufs; its RX and TX
	 * copy pools (nothing out on a ring port) are gone */
	assert_int_equal(pool_count(), pools - 2);
	dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
	while (memcmp(T.buf[0], T.buf[1], DL_MSG) != 0) {
		assert_true(rte_get_timer_cycles() < dl);
		srnic_engine_poll(eb);
	}
	assert_int_equal(atomic_load(&T.released), 1);
	atomic_store(&T.released, 0);
	/* B's ACK sits in A's port: a new A frees it when it polls */
	T.p.dev[0] = dev_new(0, 1, DL_MBUFS, NULL);
	assert_non_null(T.p.dev[0]);
	T.p.pd[0] = srnic_alloc_pd(T.p.dev[0]);
	assert_non_null(T.p.pd[0]);
	srnic_engine_poll(srnic_dev_engine(T.p.dev[0], 0));
	side_destroy(0);
	side_destroy(1);
	assert_int_equal(mz_count(), mz);
	rte_free(T.buf[0]);
	rte_free(T.buf[1]);
}

/* Item F: the freed device of test_extmem_mr_outlives_device, poisoned
 * (rte_free'd memory is not, to ASan) until the release callback runs. */
static void *dl_dead_dev;

static void
on_release_unpoison(void *addr, size_t length, void *arg)
{
	RTE_SET_USED(addr);
	RTE_SET_USED(length);
	RTE_SET_USED(arg);
	if (dl_dead_dev != NULL)
		DL_UNPOISON(dl_dead_dev, sizeof(struct srnic_dev));
	atomic_fetch_add(&T.released, 1);
}

/* An MR outliving its device: A's WRITE over an MR of application memory (mmap'd,
 * page-aligned: registered as extmem) sits in B's RX ring when A (QP, CQ,
 * MR, PD, device) is destroyed. The last mbuf, freed when B receives it,
 * frees the MR: that must not read the freed device. The device's memory
 * is poisoned for ASan meanwhile (unpoisoned by the release callback, so
 * what mr_final does after it is not flagged). B gets the bytes, the
 * callback runs once. Before, mr_final read mr->dev->port_id: ASan
 * use-after-poison. */
static void
test_extmem_mr_outlives_device(void **state)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = RTE_ALIGN_CEIL(DL_MSG, pg);
	struct srnic_engine *ea, *eb;
	uint8_t *ext;
	uint64_t dl;

	RTE_SET_USED(state);
	pair_new(NULL);
	qps_new();
	/* A's MR again, over application memory */
	assert_int_equal(srnic_dereg_mr(T.mr[0]), 0);
	assert_int_equal(atomic_load(&T.released), 1);
	atomic_store(&T.released, 0);
	rte_free(T.buf[0]);
	ext = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(ext != MAP_FAILED);
	T.buf[0] = ext;
	T.mr[0] = srnic_reg_mr_cb(T.p.pd[0], ext, len, IBV_ACCESS_LOCAL_WRITE,
				  on_release_unpoison, NULL);
	assert_non_null(T.mr[0]);
	ea = srnic_dev_engine(T.p.dev[0], 0);
	eb = srnic_dev_engine(T.p.dev[1], 0);
	post_write();
	dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
	while (srnic_dev_stat(T.p.dev[0], "tx_pkts") < 2) {
		assert_true(rte_get_timer_cycles() < dl);
		srnic_engine_poll(ea);
	}
	dl_dead_dev = T.p.dev[0];
	side_destroy(0);
	assert_int_equal(atomic_load(&T.released), 0); /* B's ring holds the memory */
	DL_POISON(dl_dead_dev, sizeof(struct srnic_dev));
	dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
	while (memcmp(T.buf[0], T.buf[1], DL_MSG) != 0 || atomic_load(&T.released) == 0) {
		assert_true(rte_get_timer_cycles() < dl);
		srnic_engine_poll(eb);
	}
	assert_int_equal(atomic_load(&T.released), 1);
	dl_dead_dev = NULL;
	atomic_store(&T.released, 0);
	/* B's ACK sits in A's port: a new A frees it when it polls */
	T.p.dev[0] = dev_new(0, 1, DL_MBUFS, NULL);
	assert_non_null(T.p.dev[0]);
	T.p.pd[0] = srnic_alloc_pd(T.p.dev[0]);
	assert_non_null(T.p.pd[0]);
	srnic_engine_poll(srnic_dev_engine(T.p.dev[0], 0));
	side_destroy(0);
	side_destroy(1);
	assert_int_equal(munmap(ext, len), 0);
	rte_free(T.buf[1]);
}

/* TX copies come from their own pool, not the RX pool
 * the port refills its RX ring from. A takes one segment per packet (every
 * packet is linearised); its WRITE's packets sit in B's RX ring (B does not
 * poll): none of A's RX mbufs is out, the copies are. B then gets the
 * bytes. Before, each copy was an RX mbuf: a TX ring of them left the RX
 * ring nothing to refill from. */
static void
test_tx_copies_spare_rx_pool(void **state)
{
	struct srnic_engine *ea;
	int64_t lin;
	uint64_t dl;

	RTE_SET_USED(state);
	dl_tx_seg_max = 1;
	pair_new(NULL);
	dl_tx_seg_max = 0;
	qps_new();
	ea = srnic_dev_engine(T.p.dev[0], 0);
	lin = srnic_dev_stat(T.p.dev[0], "tx_linearised");
	post_write();
	dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
	while (srnic_dev_stat(T.p.dev[0], "tx_pkts") < 2) {
		assert_true(rte_get_timer_cycles() < dl);
		srnic_engine_poll(ea);
	}
	assert_true(srnic_dev_stat(T.p.dev[0], "tx_linearised") - lin >= 2);
	assert_int_equal(rte_mempool_in_use_count(T.p.dev[0]->rx_pool), 0);
	assert_true(rte_mempool_in_use_count(T.p.dev[0]->tx_copy_pool) >= 2);
	poll_until_memequal();
	side_destroy(0);
	side_destroy(1);
	rte_free(T.buf[0]);
	rte_free(T.buf[1]);
}

/* The RX and TX-copy pools have room for every caching lcore id's cache
 * (nb_caching_lcores x SRNIC_MBUF_CACHE_HELD) besides the rings' and the
 * margins; the bit clear counts none; past the limit EINVAL. */
static void
test_pools_follow_caching_lcores(void **state)
{
	static const int counts[] = {-1, 0, 6, 16};
	unsigned int rx[RTE_DIM(counts)], tx[RTE_DIM(counts)], i;
	struct srnic_dev *d;

	RTE_SET_USED(state);
	for (i = 0; i < RTE_DIM(counts); i++) {
		dl_caching = counts[i];
		d = dev_new(0, 1, DL_MBUFS, NULL);
		assert_non_null(d);
		rx[i] = d->rx_pool->size;
		tx[i] = d->tx_copy_pool->size;
		assert_int_equal(srnic_dev_destroy(d), 0);
	}
	for (i = 1; i < RTE_DIM(counts); i++) {
		unsigned int ids = counts[i] < 0 ? 0 : (unsigned int)counts[i];

		assert_int_equal(rx[i], rx[1] + ids * SRNIC_MBUF_CACHE_HELD);
		assert_int_equal(tx[i], tx[1] + ids * SRNIC_MBUF_CACHE_HELD);
	}
	assert_int_equal(rx[0], rx[1]); /* the bit clear: none */
	assert_int_equal(rx[1], 1024 + 2 * SRNIC_RX_BURST + SRNIC_RX_POOL_MARGIN);
	assert_int_equal(tx[1], 1024 + SRNIC_TX_COPY_MARGIN);
	dl_caching = SRNIC_MAX_CACHING_LCORES + 1;
	assert_null(dev_new(0, 1, DL_MBUFS, NULL));
	assert_int_equal(rte_errno, EINVAL);
	dl_caching = -1;
}

/* From a host_rx callback (inside srnic_engine_poll()), dereg,
 * RESET, destroy of a QP and of the device are -EDEADLK, not a hang; the
 * same calls work once the poll has returned. So is an
 * SQD -> SQD modify with an AV (its handoff quiesces), which changes
 * nothing. */
static void
test_control_from_host_rx(void **state)
{
	struct rte_mempool *mp = srnic_test_pool();
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	struct rte_ether_hdr *eh;
	struct rte_mbuf *m;
	uint64_t dl;

	RTE_SET_USED(state);
	assert_non_null(mp);
	pair_new(on_host_rx);
	qps_new();
	T.ncb = 0;
	/* A in SQD (idle, so drained): the callback tries an SQD -> SQD AV */
	a.qp_state = IBV_QPS_SQD;
	assert_int_equal(srnic_modify_qp(T.qp[0], &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RESET;
	m = rte_pktmbuf_alloc(mp);
	assert_non_null(m);
	eh = (struct rte_ether_hdr *)rte_pktmbuf_append(m, 60);
	assert_non_null(eh);
	memset(eh, 0, 60);
	eh->dst_addr = mac[0];
	eh->src_addr = mac[1];
	eh->ether_type = rte_cpu_to_be_16(DL_ETHERTYPE);
	assert_int_equal(rte_eth_tx_burst(T.port[1], 0, &m, 1), 1); /* to A's RX */
	dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
	while (T.ncb == 0) {
		assert_true(rte_get_timer_cycles() < dl);
		srnic_engine_poll(srnic_dev_engine(T.p.dev[0], 0));
	}
	assert_int_equal(T.rc_dereg, -EDEADLK);
	assert_int_equal(T.rc_dereg_wait, -EDEADLK);
	assert_int_equal(T.rc_reset, -EDEADLK);
	assert_int_equal(T.rc_destroy_qp, -EDEADLK);
	assert_int_equal(T.rc_dev_destroy, -EDEADLK);
	assert_int_equal(T.rc_sqd_av, -EDEADLK);
	/* nothing changed: the AV is the old one, the QP still works */
	assert_int_equal(srnic_qp_state(T.qp[0]), IBV_QPS_SQD);
	{
		struct ibv_qp_attr q;

		assert_int_equal(srnic_query_qp(T.qp[0], &q, 0, NULL), 0);
		assert_int_not_equal(q.ah_attr.grh.traffic_class, SQD_AV_TCLASS);
		q.qp_state = IBV_QPS_RTS;
		assert_int_equal(srnic_modify_qp(T.qp[0], &q, IBV_QP_STATE), 0);
	}
	assert_int_equal(srnic_qp_state(T.qp[0]), IBV_QPS_RTS);
	post_write();
	poll_until_memequal();
	assert_int_equal(srnic_modify_qp(T.qp[0], &a, IBV_QP_STATE), 0);
	side_destroy(0);
	side_destroy(1);
	rte_free(T.buf[0]);
	rte_free(T.buf[1]);
	atomic_store(&T.released, 0);
}

struct driver {
	struct srnic_engine *eng[2];
	_Atomic int go;
	_Atomic int stop;
};

static void *
drive_thread(void *arg)
{
	struct driver *d = arg;

	while (!atomic_load(&d->go))
		rte_pause();
	while (!atomic_load(&d->stop)) {
		srnic_engine_poll(d->eng[0]);
		srnic_engine_poll(d->eng[1]);
	}
	return NULL;
}

/* With A's zero-copy WRITE still in B's ring, srnic_dereg_mr_wait()
 * is -EBUSY if nobody drains it (the memory stays referenced, the MR the
 * caller's, the release callback still to come), again and again until B
 * has taken the WRITE, then 0; with another thread driving the engines it
 * returns 0 after the release callback, the bytes on B. */
static void
test_dereg_wait(void **state)
{
	struct driver d = { .go = 0 };
	struct srnic_engine *ea;
	pthread_t th;
	uint64_t dl;
	int pass;

	RTE_SET_USED(state);
	pair_new(NULL);
	qps_new();
	ea = srnic_dev_engine(T.p.dev[0], 0);
	d.eng[0] = ea;
	d.eng[1] = srnic_dev_engine(T.p.dev[1], 0);
	for (pass = 0; pass < 2; pass++) {
		int64_t tx0 = srnic_dev_stat(T.p.dev[0], "tx_pkts");

		if (pass == 1) {
			/* a second region and WRITE, waited for by a driven dereg */
			memset(T.buf[1], 0, DL_MSG);
			T.mr[0] = srnic_reg_mr_cb(T.p.pd[0], T.buf[0], DL_MSG,
						  IBV_ACCESS_LOCAL_WRITE, on_release, NULL);
			assert_non_null(T.mr[0]);
		}
		post_write();
		dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
		while (srnic_dev_stat(T.p.dev[0], "tx_pkts") < tx0 + 2) {
			assert_true(rte_get_timer_cycles() < dl);
			srnic_engine_poll(ea);
		}
		if (pass == 0) {
			/* in use: -EBUSY, the MR still ours (before,
			 * it was deregistered all the same, -ETIMEDOUT, which
			 * ibv_dereg_mr() reported as success) */
			assert_int_equal(srnic_dereg_mr_wait(T.mr[0], 20000), -EBUSY);
			assert_int_equal(atomic_load(&T.released), 0);
			assert_int_equal(srnic_dereg_mr_wait(T.mr[0], 0), -EBUSY);
			poll_until_memequal();
			assert_int_equal(atomic_load(&T.released), 0);
			assert_int_equal(srnic_dereg_mr_wait(T.mr[0], 0), 0);
			assert_int_equal(atomic_load(&T.released), 1);
		} else {
			assert_int_equal(pthread_create(&th, NULL, drive_thread, &d), 0);
			atomic_store(&d.go, 1);
			assert_int_equal(srnic_dereg_mr_wait(T.mr[0], DL_WAIT_S * 1000000ull), 0);
			assert_int_equal(atomic_load(&T.released), 2);
			atomic_store(&d.stop, 1);
			pthread_join(th, NULL);
			assert_memory_equal(T.buf[0], T.buf[1], DL_MSG);
		}
		T.mr[0] = NULL;
		/* let the ACK land: the WRITE completes */
		dl = rte_get_timer_cycles() + DL_WAIT_S * rte_get_timer_hz();
		for (;;) {
			struct ibv_wc wc;
			int n = srnic_poll_cq(T.cq[0], 1, &wc);

			if (n == 1) {
				assert_int_equal(wc.status, IBV_WC_SUCCESS);
				break;
			}
			assert_true(rte_get_timer_cycles() < dl);
			srnic_engine_poll(d.eng[0]);
			srnic_engine_poll(d.eng[1]);
		}
	}
	side_destroy(0);
	side_destroy(1);
	rte_free(T.buf[0]);
	rte_free(T.buf[1]);
	atomic_store(&T.released, 0);
}

static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	if (srnic_test_eal_init("dev_lifetimes", 0, NULL) != 0)
		return -1;
	return srnic_link_ring_pair("dl", 1, 4096, &T.port[0], &T.port[1]);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	rte_eal_cleanup();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dev_destroy_busy),
		cmocka_unit_test(test_create_fail_no_leak),
		cmocka_unit_test(test_recreate_loop),
		cmocka_unit_test(test_pool_outlives_device),
		cmocka_unit_test(test_extmem_mr_outlives_device),
		cmocka_unit_test(test_tx_copies_spare_rx_pool),
		cmocka_unit_test(test_pools_follow_caching_lcores),
		cmocka_unit_test(test_control_from_host_rx),
		cmocka_unit_test(test_dereg_wait),
	};

	/* DL_TEST=<name pattern>: run one (before a fix, a hang in one test
	 * would hide the others) */
	if (getenv("DL_TEST") != NULL)
		cmocka_set_test_filter(getenv("DL_TEST"));
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
