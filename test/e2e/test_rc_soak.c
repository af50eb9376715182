/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A pipelined mix of every opcode over a lossy link (lib/link
 * srnic_lossy: seeded drop, duplicate, reorder, corrupt, delay in both
 * directions): every WR must still complete successfully, in order, every
 * byte must land, every RECV complete once, every atomic execute once.
 * Several seeds; a failure prints its seed and replays with it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_byteorder.h>

#include "e2e_fixture.h"
#include "srnic_lossy.h"
#include "test_eal.h"

#define BUF_LEN (1u << 20)
#define SLOTS 64
#define SLOT_LEN 8192

static struct e2e_bufs bufs;

static void
soak(uint64_t seed, uint32_t nwr, double rate)
{
	struct e2e_conf c = { .mtu = IBV_MTU_1024, .psn = { (uint32_t)seed * 7919u, 77 },
			      .max_send_wr = 1024, .max_rd_atomic = { 8, 8 }, .timeout = 8 };
	struct srnic_lossy_conf lc = { .seed = seed, .drop = rate, .dup = rate,
				       .reorder = rate, .corrupt = rate / 2, .delay = rate / 2,
				       .pool = srnic_test_pool() };
	struct srnic_lossy *lossy[2];
	uint32_t *lens = calloc(nwr, sizeof(*lens));
	uint8_t *ops = calloc(nwr, 1);
	uint32_t i, nrecv = 0, sig = 0, fadds = 0, x = (uint32_t)seed;
	uint64_t *counter;
	int s;

	assert_non_null(lens);
	assert_non_null(ops);
	print_message("soak seed %" PRIu64 ", %u WRs, rate %.3f\n", seed, nwr, rate);
	e2e_qps_renew(&c);
	e2e_bufs_new(&bufs, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	e2e_bufs_fill(&bufs, 1, 2);
	counter = (uint64_t *)(bufs.r + BUF_LEN - 64);
	*counter = 0;
	for (s = 0; s < 2; s++) {
		lc.seed = seed * 2 + (uint64_t)s;
		lossy[s] = srnic_lossy_attach(E->p.port[s], &lc);
		assert_non_null(lossy[s]);
	}

	for (i = 0; i < nwr; i++) {
		uint32_t off = (i % SLOTS) * SLOT_LEN, aoff = BUF_LEN - 4096 + (i % SLOTS) * 8;
		unsigned int flags;

		x = x * 1103515245u + 12345;
		ops[i] = (uint8_t)((x >> 16) % 6);
		lens[i] = (x >> 4) % (SLOT_LEN - 64 + 1);
		/* the last of a batch is signaled: its CQE says the batch is done */
		flags = (i % 4 == 0 || ops[i] == 5 || i % SLOTS == SLOTS - 1 || i == nwr - 1) ?
			IBV_SEND_SIGNALED : 0;
		sig += flags != 0;
		if (ops[i] <= 1)
			e2e_bufs_recv(&bufs, E->qp[1], i, off, SLOT_LEN);
		if (ops[i] == 3)
			e2e_post_rx(1, i, NULL, 0); /* no SGE at all (misc: one of 0 bytes) */
		nrecv += ops[i] <= 1 || ops[i] == 3;
		fadds += ops[i] == 5;
		e2e_bufs_mix_post(&bufs, ops[i], i, ops[i] == 5 ? aoff : off,
				  ops[i] == 5 ? 8 : lens[i], ops[i] == 4 ? BUF_LEN / 2 + off : off,
				  counter, flags);
		if (i % SLOTS == SLOTS - 1 || i == nwr - 1) {
			uint32_t j;

			e2e_wait_wc(0, sig);
			e2e_wait_wc(1, nrecv);
			for (j = 0; j < E->nwc[0]; j++)
				if (E->wc[0][j].status != IBV_WC_SUCCESS)
					fail_msg("seed %" PRIu64 ": wr %" PRIu64 " status %s", seed,
						 E->wc[0][j].wr_id,
						 srnic_wc_status_str(E->wc[0][j].status));
			for (j = i - (i % SLOTS); j <= i; j++) {
				uint32_t o = (j % SLOTS) * SLOT_LEN;
				const uint8_t *got = ops[j] <= 1 ? bufs.v + o :
						     ops[j] <= 3 ? bufs.r + o : bufs.l + o;
				const uint8_t *want = ops[j] == 4 ? bufs.r + BUF_LEN / 2 + o :
						      bufs.l + o;

				if (ops[j] < 5 && memcmp(got, want, lens[j]) != 0)
					fail_msg("seed %" PRIu64 ": data of wr %u (op %u, %u bytes) wrong",
						 seed, j, ops[j], lens[j]);
			}
			srnic_test_fill(bufs.l, BUF_LEN / 2, i + (uint32_t)seed);
		}
	}
	e2e_settle(8);
	e2e_check_mix_wcs(sig, nrecv, lens, ops);
	if (*counter != fadds)
		fail_msg("seed %" PRIu64 ": %u FETCH_ADDs, counter %" PRIu64
			 " (an atomic executed twice or never)", seed, fadds, *counter);
	for (s = 0; s < 2; s++) {
		struct srnic_lossy_stats st;

		srnic_lossy_get_stats(lossy[s], &st);
		print_message("  port %d: seen %" PRIu64 " drop %" PRIu64 " dup %" PRIu64
			      " reorder %" PRIu64 " corrupt %" PRIu64 " delay %" PRIu64 "\n", s,
			      st.n[SRNIC_LOSSY_PASS], st.n[SRNIC_LOSSY_DROP], st.n[SRNIC_LOSSY_DUP],
			      st.n[SRNIC_LOSSY_REORDER], st.n[SRNIC_LOSSY_CORRUPT],
			      st.n[SRNIC_LOSSY_DELAY]);
	}
	/* leave no held packet behind, then detach (nobody polls meanwhile) */
	e2e_settle(64);
	for (s = 0; s < 2; s++)
		assert_int_equal(srnic_lossy_detach(lossy[s]), 0);
	free(lens);
	free(ops);
}

static void
test_soak_light(void **state)
{
	uint64_t seed;

	RTE_SET_USED(state);
	for (seed = 1; seed <= 4; seed++)
		soak(seed, 400, 0.01);
}

static void
test_soak_heavy(void **state)
{
	uint64_t seed;

	RTE_SET_USED(state);
	/* 3% of each fault (drop, dup, reorder; corrupt and delay half that):
	 * about 6% of packets lost or late each way. At 5% a 7-packet WRITE
	 * failed 8 rounds in a row now and then (p ~ 0.5^8 per message),
	 * which is the RETRY_EXC_ERR the spec asks for, not a bug, so the
	 * soak would fail by design. */
	for (seed = 100; seed <= 103; seed++)
		soak(seed, 300, 0.03);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_soak_light, e2e_setup, e2e_teardown),
		cmocka_unit_test_setup_teardown(test_soak_heavy, e2e_setup, e2e_teardown),
	};

	return cmocka_run_group_tests_name("e2e_rc_soak", tests, e2e_group_setup,
					   e2e_group_teardown);
}
