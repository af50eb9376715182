/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program built out of the tree against an installed srnic, with nothing
 * but "cc pair_write.c $(pkg-config --cflags --libs srnic)" (test_install.sh):
 * two devices over a net_ring pair, A writes 16 KiB into B's memory, the
 * bytes and the completion are checked, everything is destroyed again.
 * Prints one line; exit 0 only when all of it worked.
 *
 *   pair_write [EAL args]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include <srnic.h>
#include <srnic_pair.h>

#define PW_SIZE 16384
#define PW_TIMEOUT_S 5

static int
fail(const char *what, int err)
{
	fprintf(stderr, "pair_write: %s failed: %s\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

int
main(int argc, char **argv)
{
	struct srnic_pair p;
	struct srnic_pair_qp_conf qc = { .path_mtu = IBV_MTU_4096, .psn = { 100, 200 },
					 .max_rd_atomic = 1, .timeout = 14, .retry_cnt = 7,
					 .rnr_retry = 7, .min_rnr_timer = 12 };
	struct srnic_cq *cq[2];
	struct srnic_qp *qp[2];
	struct srnic_mr *mr[2];
	uint8_t *buf[2];
	struct ibv_wc wc;
	uint64_t deadline;
	int i, n = 0, bad = 0, rc;

	if (rte_eal_init(argc, argv) < 0)
		return fail("rte_eal_init", rte_errno);
	rc = srnic_pair_create(&p, "pw", 1, 9000);
	if (rc != 0)
		return fail("srnic_pair_create", rc);
	for (i = 0; i < 2; i++) {
		struct srnic_qp_init_attr qa = { .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .qp_type = IBV_QPT_RC };

		cq[i] = srnic_create_cq(p.dev[i], 16, srnic_dev_engine(p.dev[i], 0));
		if (cq[i] == NULL)
			return fail("srnic_create_cq", rte_errno);
		qa.send_cq = qa.recv_cq = cq[i];
		qp[i] = srnic_create_qp(p.pd[i], &qa);
		if (qp[i] == NULL)
			return fail("srnic_create_qp", rte_errno);
		buf[i] = rte_zmalloc("pw", PW_SIZE, 64);
		if (buf[i] == NULL)
			return fail("rte_zmalloc", ENOMEM);
		mr[i] = srnic_reg_mr(p.pd[i], buf[i], PW_SIZE,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		if (mr[i] == NULL)
			return fail("srnic_reg_mr", rte_errno);
	}
	rc = srnic_pair_connect(&p, qp[0], qp[1], &qc);
	if (rc != 0)
		return fail("srnic_pair_connect", rc);
	for (i = 0; i < PW_SIZE; i++)
		buf[0][i] = (uint8_t)(i * 13 + 5);
	{
		struct ibv_sge sge = { .addr = (uintptr_t)buf[0], .length = PW_SIZE,
				       .lkey = srnic_mr_lkey(mr[0]) };
		struct ibv_send_wr wr = { .wr_id = 42, .sg_list = &sge, .num_sge = 1,
					  .opcode = IBV_WR_RDMA_WRITE,
					  .send_flags = IBV_SEND_SIGNALED }, *bad_wr;

		wr.wr.rdma.remote_addr = (uintptr_t)buf[1];
		wr.wr.rdma.rkey = srnic_mr_rkey(mr[1]);
		rc = srnic_post_send(qp[0], &wr, &bad_wr);
		if (rc != 0)
			return fail("srnic_post_send", rc);
	}
	deadline = rte_rdtsc() + PW_TIMEOUT_S * rte_get_tsc_hz();
	while (n == 0 && rte_rdtsc() < deadline) {
		srnic_engine_poll(srnic_dev_engine(p.dev[0], 0));
		srnic_engine_poll(srnic_dev_engine(p.dev[1], 0));
		n = srnic_poll_cq(cq[0], 1, &wc);
	}
	if (n != 1) {
		fprintf(stderr, "pair_write: no completion within %d s\n", PW_TIMEOUT_S);
		return 1;
	}
	for (i = 0; i < PW_SIZE; i++)
		bad += buf[0][i] != buf[1][i];
	printf("pair_write: RDMA_WRITE of %d bytes: wr_id %" PRIu64 " status %s, %d bytes differ;"
	       " B received %" PRId64 " packets; %u engine counters\n",
	       PW_SIZE, wc.wr_id, srnic_wc_status_str(wc.status), bad,
	       srnic_dev_stat(p.dev[1], "rx_pkts"), srnic_engine_stats_count());
	for (i = 0; i < 2; i++) {
		if ((rc = srnic_destroy_qp(qp[i])) != 0)
			return fail("srnic_destroy_qp", rc);
		if ((rc = srnic_destroy_cq(cq[i])) != 0)
			return fail("srnic_destroy_cq", rc);
		if ((rc = srnic_dereg_mr(mr[i])) != 0)
			return fail("srnic_dereg_mr", rc);
		if ((rc = srnic_dealloc_pd(p.pd[i])) != 0)
			return fail("srnic_dealloc_pd", rc);
		if ((rc = srnic_dev_destroy(p.dev[i])) != 0)
			return fail("srnic_dev_destroy", rc);
		rte_free(buf[i]);
	}
	rte_eal_cleanup();
	return wc.status == IBV_WC_SUCCESS && wc.wr_id == 42 && bad == 0 ? 0 : 1;
}
