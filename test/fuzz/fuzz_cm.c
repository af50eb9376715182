/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the CM's receive side (lib/cm). Two srnic devices over a
 * net_ring pair (EAL brought up once, --no-huge, its own --file-prefix).
 * Device A has a raw GSI QP (QP1, no CM): it sends the input's MADs to
 * device B's QP1, where B's CM takes them. The input is records of
 * `length (2 bytes, big endian), datagram`: any length, 0 to FZ_MAX_LEN
 * (short MADs, whole ones, and datagrams larger than QP1's receive
 * buffers, up to past the path MTU; a record cut short by the input's end
 * goes as what is left); after each, both engines and B's CM are polled
 * until quiet (bounded: abort if they never settle).
 *
 * Per input B gets a fresh CM (rte_srand() first, TID high 2: IDs and TIDs
 * the same in every run) with a listener on the golden's service ID
 * (0x0000000001064853) whose handler answers everything: REQ -> REP (the
 * new id's local ID forced to 0xb1893422 + n, the golden's REP sender's
 * for the first), DREQ -> DREP, SIDR_REQ -> SIDR_REP, REP -> RTU; and an
 * active id (local ID 0x11223344) whose REQ to A waits in REQ_SENT for the
 * input's REP / MRA / REJ. After the input B's QP1 must be in RTS, never
 * having left it (qp1_recovered 0, no receive completion in error: no
 * datagram may take the CM's QP down), every id is
 * destroyed and the CM must destroy cleanly (0: no id, timer or buffer
 * left behind); ASan and UBSan watch the rest. Seeds (test/fuzz/corpus/cm): the golden REQ,
 * then its RTU, DREQ; a REP / MRA / REJ for the active id; a SIDR_REQ.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_malloc.h>
#include <rte_random.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnic_mad.h"
#include "srnic_pair.h"

#define FZ_SEED 0x5eedc0deull
#define FZ_SID 0x0000000001064853ull
#define FZ_ACTIVE_ID 0x11223344u
#define FZ_PASSIVE_ID 0xb1893422u
#define FZ_MAX_IDS 64
#define FZ_NRECV 16
#define FZ_MAX_MADS 16            /* datagrams per input at most */
#define FZ_MAX_LEN 2048           /* a datagram's bytes at most: past the path MTU (1024) */
#define FZ_QUIET 32               /* idle rounds that end a settle */
#define FZ_MAX_ROUNDS 100000

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct {
	struct srnic_pair p;
	struct srnic_engine *eng[2];
	struct srnic_cq *cq;          /* A's raw QP1 */
	struct srnic_qp *qp1;
	struct srnic_mr *mr;
	uint8_t *mem;                 /* FZ_NRECV receive buffers, then the send buffer (FZ_MAX_LEN) */
	struct srnic_ah *ah;
	struct srnic_cm *cm;          /* B's, per input */
	struct srnic_cm_id *ids[FZ_MAX_IDS];
	unsigned int nids;
	unsigned int next_passive;
	uint64_t events;
} F;

static void
fz_die(const char *what)
{
	fprintf(stderr, "fuzz_cm: %s\n", what);
	abort();
}

#define RECV_LEN (SRNIC_GRH_LEN + SRNIC_MAD_LEN)

static void
a_post_recv(unsigned int i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(F.mem + i * RECV_LEN), .length = RECV_LEN,
			       .lkey = srnic_mr_lkey(F.mr) };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (srnic_post_recv(F.qp1, &wr, &bad) != 0)
		fz_die("A's receive post failed");
}

/* A's completions: receives posted again, sends counted. Returns how many. */
static int
a_drain(unsigned int *sends_done)
{
	struct ibv_wc wc[16];
	int n, i, all = 0;

	do {
		n = srnic_poll_cq(F.cq, 16, wc);
		for (i = 0; i < n; i++) {
			if (wc[i].opcode & IBV_WC_RECV) {
				if (wc[i].status == IBV_WC_SUCCESS)
					a_post_recv((unsigned int)wc[i].wr_id);
			} else if (sends_done != NULL) {
				(*sends_done)++;
			}
		}
		all += n > 0 ? n : 0;
	} while (n == 16);
	return all;
}

static void
settle(void)
{
	unsigned int quiet = 0, rounds = 0;

	while (quiet < FZ_QUIET) {
		unsigned int moved = 0;

		moved += srnic_engine_poll(F.eng[0]);
		moved += srnic_engine_poll(F.eng[1]);
		moved += (unsigned int)a_drain(NULL);
		moved += (unsigned int)srnic_cm_poll(F.cm, NULL);
		quiet = moved == 0 ? quiet + 1 : 0;
		if (++rounds > FZ_MAX_ROUNDS)
			fz_die("engines never settle");
	}
}

static void
track(struct srnic_cm_id *id)
{
	unsigned int i;

	for (i = 0; i < F.nids; i++)
		if (F.ids[i] == id)
			return;
	if (F.nids == FZ_MAX_IDS)
		fz_die("too many ids");
	F.ids[F.nids++] = id;
}

static int
handler(struct srnic_cm_id *id, const struct srnic_cm_event *e)
{
	F.events++;
	switch (e->type) {
	case SRNIC_CM_EV_REQ_RECEIVED: {
		struct srnic_cm_rep_param rp = { .qp_num = 0x40, .starting_psn = 1,
						 .rnr_retry_count = 7 };

		track(id);
		srnic_cm_id_set_local_id(id, FZ_PASSIVE_ID + F.next_passive++);
		srnic_cm_send_rep(id, &rp);
		break;
	}
	case SRNIC_CM_EV_SIDR_REQ_RECEIVED: {
		struct srnic_cm_sidr_rep_param sp = { .qp_num = 0x41, .qkey = 0x1234 };

		track(id);
		srnic_cm_send_sidr_rep(id, &sp);
		break;
	}
	case SRNIC_CM_EV_DREQ_RECEIVED:
		srnic_cm_send_drep(id, "fz", 2);
		break;
	case SRNIC_CM_EV_REP_RECEIVED:
		srnic_cm_send_rtu(id, NULL, 0);
		break;
	default:
		break;
	}
	/* the private data is the message's whole field: read it all */
	if (e->private_data != NULL) {
		volatile uint8_t sum = 0;

		for (unsigned int i = 0; i < e->private_data_len; i++)
			sum = (uint8_t)(sum + ((const uint8_t *)e->private_data)[i]);
		(void)sum;
	}
	return 0;
}

static void
send_mad(const uint8_t *mad, uint32_t len)
{
	uint8_t *buf = F.mem + FZ_NRECV * RECV_LEN;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = srnic_mr_lkey(F.mr) };
	struct ibv_send_wr wr, *bad;
	unsigned int done = 0, rounds = 0;

	memcpy(buf, mad, len);
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = srnic_ah_ibv(F.ah);
	wr.wr.ud.remote_qpn = SRNIC_GSI_QPN;
	wr.wr.ud.remote_qkey = SRNIC_GSI_QKEY;
	if (srnic_post_send(F.qp1, &wr, &bad) != 0)
		fz_die("A's send post failed");
	while (done == 0) {
		srnic_engine_poll(F.eng[0]);
		a_drain(&done);
		if (++rounds > FZ_MAX_ROUNDS)
			fz_die("A's send never completes");
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char prefix[64];
	char *eal[] = { (char *)(uintptr_t)"fuzz_cm", (char *)(uintptr_t)"--no-huge",
			(char *)(uintptr_t)"--no-pci", (char *)(uintptr_t)"-m",
			(char *)(uintptr_t)"512", prefix, (char *)(uintptr_t)"--no-telemetry",
			(char *)(uintptr_t)"--log-level=*:error" };
	struct srnic_qp_init_attr qa;
	struct ibv_qp_attr a;
	struct ibv_ah_attr aa;
	union ibv_gid gid;
	size_t len = FZ_NRECV * RECV_LEN + FZ_MAX_LEN;
	unsigned int i;

	(void)argc;
	(void)argv;
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic_fuzzcm_%d", (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0)
		fz_die("EAL init failed");
	srnic_eal_remove_at_exit();
	if (srnic_pair_create(&F.p, "fzcm", 1, 1500) != 0)
		fz_die("srnic_pair_create failed");
	F.eng[0] = srnic_dev_engine(F.p.dev[0], 0);
	F.eng[1] = srnic_dev_engine(F.p.dev[1], 0);
	F.mem = rte_zmalloc("fuzz_cm", len, 64);
	F.mr = F.mem != NULL ? srnic_reg_mr(F.p.pd[0], F.mem, len, IBV_ACCESS_LOCAL_WRITE) : NULL;
	F.cq = srnic_create_cq(F.p.dev[0], 64, F.eng[0]);
	if (F.mr == NULL || F.cq == NULL)
		fz_die("A's buffers");
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = F.cq;
	qa.max_send_wr = qa.max_recv_wr = FZ_NRECV;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_UD;
	qa.comp_mask = SRNIC_QP_INIT_ATTR_GSI;
	F.qp1 = srnic_create_qp(F.p.pd[0], &qa);
	if (F.qp1 == NULL)
		fz_die("A's GSI QP");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = SRNIC_GSI_QKEY;
	if (srnic_modify_qp(F.qp1, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					       IBV_QP_QKEY) != 0)
		fz_die("A's QP1 INIT");
	for (i = 0; i < FZ_NRECV; i++)
		a_post_recv(i);
	a.qp_state = IBV_QPS_RTR;
	if (srnic_modify_qp(F.qp1, &a, IBV_QP_STATE) != 0)
		fz_die("A's QP1 RTR");
	a.qp_state = IBV_QPS_RTS;
	if (srnic_modify_qp(F.qp1, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0)
		fz_die("A's QP1 RTS");
	if (srnic_dev_gid(F.p.dev[1], SRNIC_GID_INDEX_IP, &gid) != 0)
		fz_die("B's GID");
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = gid;
	aa.grh.sgid_index = SRNIC_GID_INDEX_IP;
	aa.port_num = 1;
	F.ah = srnic_create_ah(F.p.pd[0], &aa);
	if (F.ah == NULL)
		fz_die("A's AH");
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct srnic_cm_req_param p;
	struct srnic_cm_id *l, *act;
	union ibv_gid ga;
	unsigned int i, n;
	size_t off;

	rte_srand(FZ_SEED);
	F.cm = srnic_cm_create(F.p.dev[1], F.eng[1]);
	if (F.cm == NULL)
		fz_die("srnic_cm_create");
	srnic_cm_set_tid_high(F.cm, 2);
	F.nids = 0;
	F.next_passive = 0;
	l = srnic_cm_create_id(F.cm, handler, NULL);
	if (l == NULL || srnic_cm_listen(l, FZ_SID, 0) != 0)
		fz_die("listener");
	act = srnic_cm_create_id(F.cm, handler, NULL);
	if (act == NULL || srnic_cm_id_set_local_id(act, FZ_ACTIVE_ID) != 0)
		fz_die("active id");
	srnic_dev_gid(F.p.dev[0], SRNIC_GID_INDEX_IP, &ga);
	memset(&p, 0, sizeof(p));
	p.path.dgid = ga;
	p.path.mtu = IBV_MTU_1024;
	p.path.packet_life_time = 18;
	p.service_id = FZ_SID + 1;
	p.qp_num = 0x42;
	p.qp_type = IBV_QPT_RC;
	p.remote_cm_response_timeout = 20; /* no resend while the input runs */
	p.local_cm_response_timeout = 20;
	p.max_cm_retries = 3;
	if (srnic_cm_send_req(act, &p) != 0)
		fz_die("active REQ");
	settle();
	n = 0;
	for (off = 0; off + 2 <= size && n < FZ_MAX_MADS; n++) {
		size_t len = (size_t)data[off] << 8 | data[off + 1];

		off += 2;
		len = RTE_MIN(len, RTE_MIN(size - off, (size_t)FZ_MAX_LEN));
		send_mad(data + off, (uint32_t)len);
		off += len;
		settle();
	}
	if (srnic_qp_state(srnic_cm_gsi_qp(F.cm)) != IBV_QPS_RTS ||
	    srnic_cm_stat(F.cm, "qp1_recovered") != 0 || srnic_cm_stat(F.cm, "rx_wc_err") != 0)
		fz_die("B's QP1 left RTS (a datagram must never take it down)");
	/* every id goes; then the CM must go too, with nothing left behind */
	for (i = 0; i < F.nids; i++)
		if (srnic_cm_destroy_id(F.ids[i]) != 0)
			fz_die("destroy of a passive id");
	if (srnic_cm_destroy_id(act) != 0 || srnic_cm_destroy_id(l) != 0)
		fz_die("destroy of the active id or the listener");
	settle();
	if (getenv("FUZZ_CM_VERBOSE") != NULL)
		fprintf(stderr, "fuzz_cm: %u MADs, %" PRIu64 " events, rx_mads %" PRId64
			" tx_mads %" PRId64 " tx_rep %" PRId64 " tx_rtu %" PRId64 " tx_drep %" PRId64
			" tx_sidr_rep %" PRId64 "\n", n, F.events, srnic_cm_stat(F.cm, "rx_mads"),
			srnic_cm_stat(F.cm, "tx_mads"), srnic_cm_stat(F.cm, "tx_rep"),
			srnic_cm_stat(F.cm, "tx_rtu"), srnic_cm_stat(F.cm, "tx_drep"),
			srnic_cm_stat(F.cm, "tx_sidr_rep"));
	F.events = 0;
	if (srnic_cm_destroy(F.cm) != 0)
		fz_die("srnic_cm_destroy: ids left");
	F.cm = NULL;
	return 0;
}
