/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Engines on EAL worker lcores (srnic_engine_launch): the main thread
 * posts 10000 WRITEs (every tenth with immediate data, consuming a RECV it
 * keeps posting on the other side) and polls both CQs while each engine
 * runs on its own lcore: the SQ/RQ (application produces, engine
 * consumes) and CQ (engine produces, application consumes) rings are used
 * across threads exactly as srnic.h documents. Data and every CQE are
 * checked; after srnic_engine_stop() the main thread drives the engines
 * itself again.
 */
#include <inttypes.h>
#include <sched.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "host_util.h"

#define LC_NWR 10000
#define LC_SLOT 1024
#define LC_LEN (LC_NWR * LC_SLOT)
#define LC_SQ 1024
#define LC_RQ 256
#define LC_IMM_EVERY 10
#define LC_WAIT_S 120

static const struct rte_ether_addr mac[2] = {
	{ { 0x02, 0x00, 0x00, 0x00, 0x4a, 0x01 } },
	{ { 0x02, 0x00, 0x00, 0x00, 0x4b, 0x02 } },
};

static struct {
	uint16_t port[2];
	struct srnic_dev *dev[2];
	struct srnic_engine *eng[2];
	unsigned int lcore[2];
} T;

static int
group_setup(void **state)
{
	/* Three lcores on whatever CPUs there are (two will do). */
	static const char *const args[] = { "--lcores=(0-2)@(0-1)" };
	int i;

	RTE_SET_USED(state);
	if (host_eal_init("host_lcore", 1, args) != 0)
		return -1;
	if (rte_lcore_count() < 3) {
		fprintf(stderr, "need 3 lcores, have %u\n", rte_lcore_count());
		return -1;
	}
	if (srnic_link_ring_pair("lc", 1, HOST_RING_SIZE, &T.port[0], &T.port[1]) != 0)
		return -1;
	for (i = 0; i < 2; i++) {
		const uint8_t ip[4] = { 127, 0, 0, (uint8_t)(1 + i) };

		T.dev[i] = host_dev_new(T.port[i], 4, ip, &mac[i], i == 0 ? "lcA" : "lcB");
		T.eng[i] = srnic_dev_engine(T.dev[i], 0);
	}
	if (host_neigh_pair(T.dev, &mac[0], &mac[1]) != 0)
		return -1;
	host_two_workers(T.lcore);
	host_poll_set(T.eng, 2);
	return 0;
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	srnic_engine_stop(T.eng[0]);
	srnic_engine_stop(T.eng[1]);
	srnic_dev_destroy(T.dev[0]);
	srnic_dev_destroy(T.dev[1]);
	rte_eal_cleanup();
	return 0;
}

static uint32_t
wr_len(uint32_t i)
{
	return 1 + (i * 37u) % LC_SLOT;
}

static void
test_lcore_writes(void **state)
{
	uint8_t *src = host_alloc(LC_LEN), *dst = host_alloc(LC_LEN);
	struct srnic_mr *smr, *dmr;
	struct host_ep a, b;
	uint32_t posted = 0, done = 0, recv_posted = 0, recv_done = 0, i;
	uint64_t deadline;
	struct ibv_wc wc[64];
	int n, k;

	RTE_SET_USED(state);
	host_ep_create(&a, T.dev[0], NULL, 0, LC_SQ);
	host_ep_create(&b, T.dev[1], NULL, 0, LC_RQ);
	host_connect_pair(&a, &b, IBV_MTU_1024);
	srnic_test_fill(src, LC_LEN, 7);
	smr = srnic_reg_mr(a.pd, src, LC_LEN, 0);
	dmr = srnic_reg_mr(b.pd, dst, LC_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(smr);
	assert_non_null(dmr);

	assert_int_equal(srnic_engine_launch(T.eng[0], T.lcore[0]), 0);
	assert_int_equal(srnic_engine_launch(T.eng[1], T.lcore[1]), 0);
	assert_int_equal(srnic_engine_launch(T.eng[0], T.lcore[0]), -EINVAL); /* running */

	deadline = rte_get_timer_cycles() + (uint64_t)LC_WAIT_S * rte_get_timer_hz();
	while (done < LC_NWR || recv_done < LC_NWR / LC_IMM_EVERY) {
		bool moved = false;

		if (rte_get_timer_cycles() > deadline)
			fail_msg("timeout: %u posted, %u done, %u RECVs done", posted, done,
				 recv_done);
		/* B's RQ: keep RECVs posted for the WRITEs with immediate */
		while (recv_posted < LC_NWR / LC_IMM_EVERY && recv_posted - recv_done < LC_RQ) {
			assert_int_equal(host_post_recv(&b, 0x10000 + recv_posted, NULL, 0, 0), 0);
			recv_posted++;
			moved = true;
		}
		/* A's SQ: post until full (ENOMEM: the engine has not retired
		 * enough yet). A slot returns when its WR completes, before its
		 * CQE is polled: what keeps the CQ from overflowing is bounding
		 * the completions not yet polled by the CQ's depth. */
		while (posted < LC_NWR && posted - done < LC_SQ) {
			bool imm = posted % LC_IMM_EVERY == LC_IMM_EVERY - 1;
			struct ibv_sge sge = { .addr = (uintptr_t)src + (uint64_t)posted * LC_SLOT,
					       .length = wr_len(posted),
					       .lkey = srnic_mr_lkey(smr) };
			struct ibv_send_wr wr, *bad = NULL;
			int rc;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = posted;
			wr.sg_list = &sge;
			wr.num_sge = 1;
			wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
			wr.send_flags = IBV_SEND_SIGNALED;
			wr.imm_data = rte_cpu_to_be_32(posted);
			wr.wr.rdma.remote_addr = (uintptr_t)dst + (uint64_t)posted * LC_SLOT;
			wr.wr.rdma.rkey = srnic_mr_rkey(dmr);
			rc = srnic_post_send(a.qp, &wr, &bad);
			if (rc == ENOMEM)
				break;
			assert_int_equal(rc, 0);
			posted++;
			moved = true;
		}
		/* A's CQ: one signaled CQE per WRITE, in order */
		n = srnic_poll_cq(a.cq, 64, wc);
		assert_true(n >= 0);
		for (k = 0; k < n; k++, done++) {
			if (wc[k].status != IBV_WC_SUCCESS || wc[k].wr_id != done) {
				srnic_engine_stop(T.eng[0]);
				srnic_engine_stop(T.eng[1]);
				host_stats_dump("A", T.eng[0]);
				host_stats_dump("B", T.eng[1]);
				fprintf(stderr, "QP A %d, QP B %d, posted %u\n",
					srnic_qp_state(a.qp), srnic_qp_state(b.qp), posted);
				fail_msg("CQE %u: wr_id %" PRIu64 " status %s", done, wc[k].wr_id,
					 srnic_wc_status_str(wc[k].status));
			}
			assert_int_equal(wc[k].opcode, IBV_WC_RDMA_WRITE);
			assert_int_equal(wc[k].byte_len, wr_len(done));
			assert_int_equal(wc[k].qp_num, srnic_qp_num(a.qp));
		}
		/* B's CQ: the WRITEs with immediate, in order */
		n = srnic_poll_cq(b.cq, 64, wc);
		assert_true(n >= 0);
		for (k = 0; k < n; k++, recv_done++) {
			uint32_t w = recv_done * LC_IMM_EVERY + LC_IMM_EVERY - 1;

			assert_int_equal(wc[k].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[k].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
			assert_int_equal(wc[k].wr_id, 0x10000 + recv_done);
			assert_true(wc[k].wc_flags & IBV_WC_WITH_IMM);
			assert_int_equal(rte_be_to_cpu_32(wc[k].imm_data), w);
			assert_int_equal(wc[k].byte_len, wr_len(w));
			/* the data is there when the CQE is */
			assert_memory_equal(dst + (uint64_t)w * LC_SLOT,
					    src + (uint64_t)w * LC_SLOT, wr_len(w));
		}
		if (!moved && n == 0)
			sched_yield(); /* two spinning engines on two CPUs */
	}

	assert_int_equal(srnic_engine_stop(T.eng[0]), 0);
	assert_int_equal(srnic_engine_stop(T.eng[1]), 0);
	assert_int_equal(srnic_engine_stop(T.eng[0]), 0); /* not running: no-op */
	assert_int_equal(srnic_poll_cq(a.cq, 64, wc), 0);
	assert_int_equal(srnic_poll_cq(b.cq, 64, wc), 0);
	for (i = 0; i < LC_NWR; i++) {
		const uint8_t *d = dst + (uint64_t)i * LC_SLOT;
		uint32_t j;

		if (memcmp(d, src + (uint64_t)i * LC_SLOT, wr_len(i)) != 0)
			fail_msg("WRITE %u: data differs", i);
		for (j = wr_len(i); j < LC_SLOT; j++)
			assert_int_equal(d[j], 0);
	}
	/* Messages started: one each, plus what resends started again (the
	 * two engines share vCPUs with the rest of the host: a 67 ms ACK
	 * timer may expire under load). Exact when nothing was resent: a
	 * resend spends a retry (retransmit_pkts) or, when the engine's poll
	 * came late, none (retry_starved). */
	if (host_eng_stat(T.eng[0], "retransmit_pkts") == 0 &&
	    host_eng_stat(T.eng[0], "retry_starved") == 0) {
		assert_int_equal(host_eng_stat(T.eng[0], "req_msgs"), LC_NWR);
		assert_int_equal(host_eng_stat(T.eng[1], "resp_pkts"), LC_NWR);
	} else {
		assert_true(host_eng_stat(T.eng[0], "req_msgs") >= LC_NWR);
		assert_true(host_eng_stat(T.eng[1], "resp_pkts") >= LC_NWR);
	}
	assert_int_equal(host_eng_stat(T.eng[0], "cqe"), LC_NWR);
	assert_int_equal(host_eng_stat(T.eng[0], "cqe_err"), 0);
	assert_int_equal(host_eng_stat(T.eng[1], "cqe"), LC_NWR / LC_IMM_EVERY);

	/* Stopped: the main thread owns the engines again. */
	memset(dst, 0, LC_SLOT);
	assert_int_equal(host_post(&a, IBV_WR_RDMA_WRITE, 0xabc, src + LC_SLOT, LC_SLOT,
				   srnic_mr_lkey(smr), (uintptr_t)dst, srnic_mr_rkey(dmr),
				   IBV_SEND_SIGNALED), 0);
	a.nwc = 0;
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_int_equal(a.wc[0].wr_id, 0xabc);
	assert_memory_equal(dst, src + LC_SLOT, LC_SLOT);

	assert_int_equal(srnic_dereg_mr(smr), 0);
	assert_int_equal(srnic_dereg_mr(dmr), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	rte_free(src);
	rte_free(dst);
}

static unsigned int released;

/* Runs on the lcore that frees the last mbuf over the memory (A's). */
static void
on_release(void *addr, size_t length, void *arg)
{
	RTE_SET_USED(addr);
	RTE_SET_USED(length);
	RTE_SET_USED(arg);
	__atomic_fetch_add(&released, 1, __ATOMIC_RELEASE);
}

/* Relaunched engines serve a QP created while they run; MR registration
 * and deregistration meanwhile quiesce the running engines; the release
 * callback (called on A's lcore) says when the memory may be rewritten. */
static void
test_lcore_control_path(void **state)
{
	uint8_t *local = host_alloc(65536), *remote = host_alloc(65536);
	struct srnic_mr *lmr, *rmr;
	struct host_ep a, b;
	struct ibv_wc wc;
	uint64_t deadline;
	int n, round;


	RTE_SET_USED(state);
	released = 0;
	assert_int_equal(srnic_engine_launch(T.eng[0], T.lcore[0]), 0);
	assert_int_equal(srnic_engine_launch(T.eng[1], T.lcore[1]), 0);
	host_ep_create(&a, T.dev[0], NULL, 0, 64);
	host_ep_create(&b, T.dev[1], NULL, 0, 64);
	host_connect_pair(&a, &b, IBV_MTU_4096);
	lmr = srnic_reg_mr(a.pd, local, 65536, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(lmr);
	for (round = 0; round < 20; round++) {
		srnic_test_fill(remote, 65536, 100 + round);
		rmr = srnic_reg_mr_cb(b.pd, remote, 65536, IBV_ACCESS_REMOTE_READ, on_release,
				      NULL);
		assert_non_null(rmr);
		assert_int_equal(host_post(&a, IBV_WR_RDMA_READ, round, local, 65536,
					   srnic_mr_lkey(lmr), (uintptr_t)remote,
					   srnic_mr_rkey(rmr), IBV_SEND_SIGNALED), 0);
		deadline = rte_get_timer_cycles() + (uint64_t)LC_WAIT_S * rte_get_timer_hz();
		while ((n = srnic_poll_cq(a.cq, 1, &wc)) == 0) {
			assert_true(rte_get_timer_cycles() < deadline);
			sched_yield();
		}
		assert_int_equal(n, 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, round);
		assert_memory_equal(local, remote, 65536);
		/* the responses may still be in flight: dereg waits for the
		 * engines' current polls, the release waits for the mbufs */
		assert_int_equal(srnic_dereg_mr(rmr), 0);
		while (__atomic_load_n(&released, __ATOMIC_ACQUIRE) != (unsigned int)round + 1) {
			assert_true(rte_get_timer_cycles() < deadline);
			sched_yield();
		}
	}
	assert_int_equal(srnic_engine_stop(T.eng[0]), 0);
	assert_int_equal(srnic_engine_stop(T.eng[1]), 0);
	assert_int_equal(srnic_dereg_mr(lmr), 0);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	rte_free(local);
	rte_free(remote);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lcore_writes),
		cmocka_unit_test(test_lcore_control_path),
	};

	return cmocka_run_group_tests_name("host_lcore", tests, group_setup, group_teardown);
}
