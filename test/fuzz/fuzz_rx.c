/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the live RX path. Two srnic devices over a net_ring pair
 * (EAL brought up once, --no-huge, its own --file-prefix), one RC QP each in
 * RTS at path MTU 1024, each with a READ of 8 KiB, a READ of 100 bytes, a
 * COMPARE_SWAP, a FETCH_ADD, a WRITE and a SEND outstanding and four RECVs
 * posted; beside it a UD QP (QPN 0x12, Q_Key FZ_QKEY) and a UC QP (0x13,
 * connected to the peer's) in RTS with four RECVs each; MRs with remote rights over mmap'd memory with PROT_NONE guard
 * pages before and after. What the real peer sends is dropped on arrival,
 * so each side's RX sees only the input's frames (fuzz_frame.h: records of
 * side + frame), injected into its net_ring RX ring, and its QP keeps its
 * READs and atomics outstanding for the input's responses to hit.
 *
 * After the frames: the engines polled until quiet (bounded: abort if they
 * never settle), every CQE checked (a WR we posted, completed at most
 * once, a RECV no longer than its buffer), then both QPs to ERR and
 * drained: every WR completed exactly once, local memory written only where
 * a WR said, and the mbuf pools back to their baseline; then RESET, reconnected and reposted, so every input starts
 * from the same state (the QPNs, keys and buffer addresses are the same in
 * every run: a saved input replays).
 *
 * The custom mutator mutates one record (or duplicates, drops, reorders
 * records) and most of the time aims it at the live QP of its side and
 * makes lengths, checksum and ICRC right again (fuzz_frame_fixup()).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_random.h>
#include <rte_ring.h>

#include "fuzz_frame.h"
#include "srnic.h"
#include "srnic_pair.h"
#include "srnic_wire.h"

#define FZ_NAME "fz"
#define FZ_PSN_A 2000
#define FZ_PSN_B 7000
#define FZ_MR_LEN (64u * 1024)
#define FZ_MTU IBV_MTU_1024
#define FZ_PMTU 1024
/* Fixed addresses for the MRs, so that VAs in saved inputs stay valid
 * (ASan's high application memory, away from its allocator). */
#define FZ_MR_BASE 0x520000000000ull
#define FZ_NB_MR 3                    /* per side: r (remote), l (local), v (recv) */
#define FZ_READ_LEN 8192
#define FZ_READ2_OFF 24576
#define FZ_READ2_LEN 100
#define FZ_ATOMIC_OFF 8192
#define FZ_WRITE_OFF 16384
#define FZ_WRITE_LEN 2048
#define FZ_SEND_OFF 20480
#define FZ_SEND_LEN 100
#define FZ_NB_SEND_WR 6               /* wr_id 1 .. 6 */
#define FZ_NB_RECV 4                  /* wr_id FZ_RECV_ID0 .. + 3 */
#define FZ_RECV_ID0 100
#define FZ_UD_RECV_ID0 200           /* the UD QP's RECVs: v after the RC ones */
#define FZ_UC_RECV_ID0 300           /* the UC QP's: after those */
#define FZ_QKEY 0x11111111u
#define FZ_RECV_LEN 4096
#define FZ_CQE 64
#define FZ_INJ_MBUFS 255
#define FZ_SETTLE_QUIET 16
#define FZ_SETTLE_MAX 200000          /* polls: far beyond any input's work */
#define FZ_EAL_MEM "512"
#define FZ_RAND_SEED 0x5eed

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fz_side {
	struct srnic_dev *dev;
	struct srnic_engine *eng;
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	struct srnic_qp *ud_qp;
	struct srnic_qp *uc_qp;
	uint8_t *buf[FZ_NB_MR];
	struct srnic_mr *mr[FZ_NB_MR];
	struct rte_ring *rx_ring;     /* what the side's port receives */
	struct fuzz_target tgt;
	uint32_t wc_seen[FZ_UC_RECV_ID0 + FZ_NB_RECV]; /* CQEs per wr_id this incarnation */
};

enum { MR_R, MR_L, MR_V };

static struct {
	struct srnic_pair p;
	struct fz_side s[2];
	struct rte_mempool *inj;
	int64_t mbuf_base;            /* mbufs in use with both QPs drained; -1: not yet */
	uint64_t inputs, frames, peer_drops;
	bool verbose;                 /* FUZZ_RX_VERBOSE set: each frame described */
} F = { .mbuf_base = -1 };

static void __attribute__((noreturn))
fz_die(const char *what)
{
	fprintf(stderr, "fuzz_rx: %s\n", what);
	abort();
}

/* len bytes at a fixed address between two PROT_NONE pages. */
static uint8_t *
guarded_map(unsigned int idx, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t span = len + 2 * pg;
	void *hint = (void *)(uintptr_t)(FZ_MR_BASE + (uint64_t)idx * 2 * span);
	uint8_t *p;

	p = mmap(hint, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == MAP_FAILED)
		p = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || mprotect(p + pg, len, PROT_READ | PROT_WRITE) != 0)
		fz_die("guarded mmap failed");
	return p + pg;
}

/* Only the input's frames reach the engines: the real peer's are dropped. */
static uint16_t
drop_peer(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[], uint16_t n, uint16_t max,
	  void *arg)
{
	uint16_t i, k = 0;

	RTE_SET_USED(port);
	RTE_SET_USED(queue);
	RTE_SET_USED(max);
	RTE_SET_USED(arg);
	for (i = 0; i < n; i++) {
		if (pkts[i]->pool == F.inj) {
			pkts[k++] = pkts[i];
			continue;
		}
		F.peer_drops++;
		rte_pktmbuf_free(pkts[i]);
	}
	return k;
}

static void
count_in_use(struct rte_mempool *mp, void *arg)
{
	int64_t *n = arg;

	*n += (int64_t)rte_mempool_in_use_count(mp);
}

static int64_t
mbufs_in_use(void)
{
	int64_t n = 0;

	rte_mempool_walk(count_in_use, &n);
	return n;
}

static void
check_wc(struct fz_side *s, const struct ibv_wc *wc)
{
	uint64_t id = wc->wr_id;

	if (id == 0 || id >= RTE_DIM(s->wc_seen) || (id > FZ_NB_SEND_WR && id < FZ_RECV_ID0) ||
	    (id >= FZ_RECV_ID0 + FZ_NB_RECV && id < FZ_UD_RECV_ID0) ||
	    (id >= FZ_UD_RECV_ID0 + FZ_NB_RECV && id < FZ_UC_RECV_ID0))
		fz_die("CQE for a WR never posted");
	if (++s->wc_seen[id] > 1)
		fz_die("a WR completed twice");
	if (wc->status > IBV_WC_TM_RNDV_INCOMPLETE)
		fz_die("CQE with an unknown status");
	if (id >= FZ_RECV_ID0 && wc->status == IBV_WC_SUCCESS && wc->byte_len > FZ_RECV_LEN)
		fz_die("RECV CQE longer than its buffer");
}

static unsigned int
drain_cqs(void)
{
	struct ibv_wc wc[FZ_CQE];
	unsigned int total = 0, i;
	int n, k;

	for (i = 0; i < 2; i++) {
		do {
			n = srnic_poll_cq(F.s[i].cq, FZ_CQE, wc);
			if (n < 0)
				fz_die("srnic_poll_cq failed");
			for (k = 0; k < n; k++)
				check_wc(&F.s[i], &wc[k]);
			total += (unsigned int)n;
		} while (n == FZ_CQE);
	}
	return total;
}

/* Poll both engines (and the CQs) until nothing moves for a while. */
static void
settle(void)
{
	unsigned int quiet = 0, i;

	for (i = 0; quiet < FZ_SETTLE_QUIET; i++) {
		unsigned int moved;

		if (i > FZ_SETTLE_MAX)
			fz_die("engines never settle");
		moved = srnic_engine_poll(F.s[0].eng);
		moved += srnic_engine_poll(F.s[1].eng);
		moved += drain_cqs();
		quiet = moved == 0 ? quiet + 1 : 0;
	}
}

static void
post_all(int side)
{
	struct fz_side *s = &F.s[side], *peer = &F.s[1 - side];
	uint8_t *l = s->buf[MR_L], *r = peer->buf[MR_R];
	uint32_t lkey = srnic_mr_lkey(s->mr[MR_L]), rkey = srnic_mr_rkey(peer->mr[MR_R]);
	struct {
		enum ibv_wr_opcode op;
		uint32_t off, len;
	} w[FZ_NB_SEND_WR] = {
		{ IBV_WR_RDMA_READ, 0, FZ_READ_LEN },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, FZ_ATOMIC_OFF, 8 },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, FZ_ATOMIC_OFF + 8, 8 },
		{ IBV_WR_RDMA_WRITE, FZ_WRITE_OFF, FZ_WRITE_LEN },
		{ IBV_WR_SEND, FZ_SEND_OFF, FZ_SEND_LEN },
		{ IBV_WR_RDMA_READ, FZ_READ2_OFF, FZ_READ2_LEN },
	};
	unsigned int i;

	memset(s->wc_seen, 0, sizeof(s->wc_seen));
	/* v: the RC QP's RECVs, then the UD QP's, then the UC QP's */
	for (i = 0; i < 3 * FZ_NB_RECV; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(s->buf[MR_V] + i * FZ_RECV_LEN),
				       .length = FZ_RECV_LEN, .lkey = srnic_mr_lkey(s->mr[MR_V]) };
		unsigned int k = i / FZ_NB_RECV, j = i % FZ_NB_RECV;
		struct ibv_recv_wr wr = { .wr_id = (k == 0 ? FZ_RECV_ID0 : k == 1 ? FZ_UD_RECV_ID0
								       : FZ_UC_RECV_ID0) + j,
					  .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad = NULL;

		if (srnic_post_recv(k == 0 ? s->qp : k == 1 ? s->ud_qp : s->uc_qp, &wr, &bad) != 0)
			fz_die("post_recv failed");
	}
	for (i = 0; i < FZ_NB_SEND_WR; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)(l + w[i].off), .length = w[i].len,
				       .lkey = lkey };
		struct ibv_send_wr wr = { .wr_id = i + 1, .sg_list = &sge, .num_sge = 1,
					  .opcode = w[i].op, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad = NULL;

		if (w[i].op == IBV_WR_ATOMIC_CMP_AND_SWP || w[i].op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr.wr.atomic.remote_addr = (uintptr_t)(r + w[i].off);
			wr.wr.atomic.rkey = rkey;
			wr.wr.atomic.compare_add = 1;
			wr.wr.atomic.swap = 0x5151;
		} else {
			wr.wr.rdma.remote_addr = (uintptr_t)(r + w[i].off);
			wr.wr.rdma.rkey = rkey;
		}
		if (srnic_post_send(s->qp, &wr, &bad) != 0)
			fz_die("post_send failed");
	}
}

/* The side's UD QP (Q_Key FZ_QKEY) and UC QP (to the peer's) into RTS. */
static void
connect_ud_uc(int side)
{
	struct fz_side *s = &F.s[side];
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = FZ_QKEY;
	if (srnic_modify_qp(s->ud_qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_QKEY) != 0)
		fz_die("UD to INIT failed");
	a.qp_state = IBV_QPS_RTR;
	if (srnic_modify_qp(s->ud_qp, &a, IBV_QP_STATE) != 0)
		fz_die("UD to RTR failed");
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = side == 0 ? FZ_PSN_A : FZ_PSN_B;
	if (srnic_modify_qp(s->ud_qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0)
		fz_die("UD to RTS failed");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (srnic_modify_qp(s->uc_qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS) != 0)
		fz_die("UC to INIT failed");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = FZ_MTU;
	a.dest_qp_num = srnic_qp_num(F.s[1 - side].uc_qp);
	a.rq_psn = side == 0 ? FZ_PSN_B : FZ_PSN_A;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	srnic_dev_gid(F.p.dev[1 - side], 1, &a.ah_attr.grh.dgid);
	if (srnic_modify_qp(s->uc_qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN) != 0)
		fz_die("UC to RTR failed");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = side == 0 ? FZ_PSN_A : FZ_PSN_B;
	if (srnic_modify_qp(s->uc_qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) != 0)
		fz_die("UC to RTS failed");
}

static void
connect_and_post(void)
{
	struct srnic_pair_qp_conf c = {
		.path_mtu = FZ_MTU, .psn = { FZ_PSN_A, FZ_PSN_B },
		.max_rd_atomic = SRNIC_MAX_RD_ATOMIC,
		.timeout = 0,      /* no ACK timer: an input's run does not depend on time */
		.retry_cnt = 7, .rnr_retry = 7, .min_rnr_timer = 1,
	};

	if (srnic_pair_connect(&F.p, F.s[0].qp, F.s[1].qp, &c) != 0)
		fz_die("connect failed");
	connect_ud_uc(0);
	connect_ud_uc(1);
	post_all(0);
	post_all(1);
	/* The requests go out (and are dropped at the peer): outstanding. */
	settle();
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

/* The engines write a side's local buffers only where its WRs said: READ
 * and atomic results into l, RECVs into the first FZ_NB_RECV slots of v
 * (nothing else ever writes there: the rest stays zero). */
static void
check_local_writes(const struct fz_side *s)
{
	const uint8_t *l = s->buf[MR_L], *v = s->buf[MR_V];

	if (!all_zero(l + FZ_ATOMIC_OFF + 16, FZ_READ2_OFF - FZ_ATOMIC_OFF - 16) ||
	    !all_zero(l + FZ_READ2_OFF + FZ_READ2_LEN, FZ_MR_LEN - FZ_READ2_OFF - FZ_READ2_LEN))
		fz_die("a write into local memory no WR named");
	if (!all_zero(v + 3 * FZ_NB_RECV * FZ_RECV_LEN, FZ_MR_LEN - 3 * FZ_NB_RECV * FZ_RECV_LEN))
		fz_die("a RECV wrote past the posted buffers");
}

/* Both QPs to ERR and drained: every WR completed once, no mbuf kept. */
static void
drain_and_check(void)
{
	unsigned int i, id;
	int64_t used;

	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		if (srnic_modify_qp(F.s[i].qp, &a, IBV_QP_STATE) != 0 ||
		    srnic_modify_qp(F.s[i].ud_qp, &a, IBV_QP_STATE) != 0 ||
		    srnic_modify_qp(F.s[i].uc_qp, &a, IBV_QP_STATE) != 0)
			fz_die("modify to ERR failed");
	}
	settle();
	for (i = 0; i < 2; i++) {
		for (id = 1; id <= FZ_NB_SEND_WR; id++)
			if (F.s[i].wc_seen[id] != 1)
				fz_die("a send WR did not complete after ERR");
		for (id = 0; id < FZ_NB_RECV; id++)
			if (F.s[i].wc_seen[FZ_RECV_ID0 + id] != 1 ||
			    F.s[i].wc_seen[FZ_UD_RECV_ID0 + id] != 1 ||
			    F.s[i].wc_seen[FZ_UC_RECV_ID0 + id] != 1)
				fz_die("a RECV did not complete after ERR");
	}
	check_local_writes(&F.s[0]);
	check_local_writes(&F.s[1]);
	used = mbufs_in_use();
	if (F.mbuf_base < 0)
		F.mbuf_base = used;
	if (used != F.mbuf_base) {
		fprintf(stderr, "fuzz_rx: %" PRId64 " mbufs in use after draining, baseline %"
			PRId64 "\n", used, F.mbuf_base);
		abort();
	}
}

static void
renew(void)
{
	unsigned int i;

	drain_and_check();
	for (i = 0; i < 2; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

		if (srnic_modify_qp(F.s[i].qp, &a, IBV_QP_STATE) != 0 ||
		    srnic_modify_qp(F.s[i].ud_qp, &a, IBV_QP_STATE) != 0 ||
		    srnic_modify_qp(F.s[i].uc_qp, &a, IBV_QP_STATE) != 0)
			fz_die("modify to RESET failed");
	}
	connect_and_post();
}

static void
print_stats(void)
{
	unsigned int n = srnic_engine_stats_count(), i, k;
	uint64_t *v = calloc(n, sizeof(*v));

	if (v == NULL)
		return;
	fprintf(stderr, "fuzz_rx: %" PRIu64 " inputs, %" PRIu64 " frames, %" PRIu64
		" peer frames dropped\n", F.inputs, F.frames, F.peer_drops);
	for (i = 0; i < 2; i++) {
		srnic_engine_stats_get(F.s[i].eng, v, n);
		fprintf(stderr, "fuzz_rx: side %c:", 'A' + i);
		for (k = 0; k < n; k++)
			if (v[k] != 0)
				fprintf(stderr, " %s=%" PRIu64, srnic_engine_stat_name(k), v[k]);
		fprintf(stderr, "\n");
	}
	free(v);
}

static void
fill_target(int side)
{
	struct fz_side *s = &F.s[side];
	struct fuzz_target *t = &s->tgt;
	struct rte_ether_addr mac;
	union ibv_gid gid;

	rte_eth_macaddr_get(F.p.port[side], &mac);
	memcpy(t->dst_mac, mac.addr_bytes, 6);
	rte_eth_macaddr_get(F.p.port[1 - side], &mac);
	memcpy(t->src_mac, mac.addr_bytes, 6);
	srnic_dev_gid(F.p.dev[side], 1, &gid);
	memcpy(t->dst_ip, gid.raw + 12, 4);
	srnic_dev_gid(F.p.dev[1 - side], 1, &gid);
	memcpy(t->src_ip, gid.raw + 12, 4);
	t->qpn = srnic_qp_num(s->qp);
	t->ud_qpn = srnic_qp_num(s->ud_qp);
	t->uc_qpn = srnic_qp_num(s->uc_qp);
	t->qkey = FZ_QKEY;
	t->req_psn = side == 0 ? FZ_PSN_B : FZ_PSN_A;
	t->resp_psn = side == 0 ? FZ_PSN_A : FZ_PSN_B;
	t->rkey = srnic_mr_rkey(s->mr[MR_R]);
	t->va = (uintptr_t)s->buf[MR_R];
	t->mr_len = FZ_MR_LEN;
	t->pmtu = FZ_PMTU;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char prefix[64];
	char *eal[] = { (char *)(uintptr_t)"fuzz_rx", (char *)(uintptr_t)"--no-huge",
			(char *)(uintptr_t)"--no-pci", (char *)(uintptr_t)"-m",
			(char *)(uintptr_t)FZ_EAL_MEM, prefix, (char *)(uintptr_t)"--no-telemetry",
			/* the MRs are mmap'd application memory: IOVA = VA */
			(char *)(uintptr_t)"--iova-mode=va",
			(char *)(uintptr_t)"--log-level=*:error" }; /* the QP error logs: counted anyway */
	const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	struct rte_ring *rings[2];
	unsigned int i, k;

	RTE_SET_USED(argc);
	RTE_SET_USED(argv);
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic_fuzz_%d", (int)getpid());
	F.verbose = getenv("FUZZ_RX_VERBOSE") != NULL;
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0)
		fz_die("EAL init failed");
	srnic_eal_remove_at_exit();
	/* Whatever the library draws from rte_rand() (e.g. random key bytes
	 * of MRs) is the same in every run: saved inputs keep their keys. */
	rte_srand(FZ_RAND_SEED);
	if (srnic_pair_create(&F.p, FZ_NAME, 1, 9000) != 0)
		fz_die("srnic_pair_create failed");
	F.inj = rte_pktmbuf_pool_create("fz_inj", FZ_INJ_MBUFS, 0, 0,
					RTE_PKTMBUF_HEADROOM + FUZZ_FRAME_MAX, rte_socket_id());
	rings[0] = rte_ring_lookup(FZ_NAME "_ba0");  /* B to A: A's RX */
	rings[1] = rte_ring_lookup(FZ_NAME "_ab0");
	if (F.inj == NULL || rings[0] == NULL || rings[1] == NULL)
		fz_die("injection pool or rings missing");
	for (i = 0; i < 2; i++) {
		struct fz_side *s = &F.s[i];
		struct srnic_qp_init_attr qa = { .max_send_wr = 64, .max_recv_wr = 64,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .qp_type = IBV_QPT_RC };

		s->dev = F.p.dev[i];
		s->eng = srnic_dev_engine(s->dev, 0);
		s->rx_ring = rings[i];
		s->cq = srnic_create_cq(s->dev, FZ_CQE, s->eng);
		if (s->eng == NULL || s->cq == NULL)
			fz_die("engine or CQ missing");
		qa.send_cq = qa.recv_cq = s->cq;
		s->qp = srnic_create_qp(F.p.pd[i], &qa);
		qa.qp_type = IBV_QPT_UD;
		s->ud_qp = srnic_create_qp(F.p.pd[i], &qa);
		qa.qp_type = IBV_QPT_UC;
		s->uc_qp = srnic_create_qp(F.p.pd[i], &qa);
		if (s->qp == NULL || s->ud_qp == NULL || s->uc_qp == NULL)
			fz_die("create_qp failed");
		for (k = 0; k < FZ_NB_MR; k++) {
			s->buf[k] = guarded_map(i * FZ_NB_MR + k, FZ_MR_LEN);
			s->mr[k] = srnic_reg_mr(F.p.pd[i], s->buf[k], FZ_MR_LEN,
						k == MR_R ? access : IBV_ACCESS_LOCAL_WRITE);
			if (s->mr[k] == NULL)
				fz_die("reg_mr failed");
		}
		if (rte_eth_add_rx_callback(F.p.port[i], 0, drop_peer, NULL) == NULL)
			fz_die("RX callback failed");
	}
	for (i = 0; i < 2; i++) {
		fill_target((int)i);
		/* what a hand-made input needs to aim at */
		fprintf(stderr, "fuzz_rx: side %c: qpn %#x rkey %#x va %#" PRIx64 " epsn %u psn %u"
			" (UD qpn %#x qkey %#x, UC qpn %#x)\n",
			'A' + i, F.s[i].tgt.qpn, F.s[i].tgt.rkey, F.s[i].tgt.va,
			F.s[i].tgt.req_psn, F.s[i].tgt.resp_psn, srnic_qp_num(F.s[i].ud_qp), FZ_QKEY,
			srnic_qp_num(F.s[i].uc_qp));
	}
	connect_and_post();
	renew();
	atexit(print_stats);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_rec rec[FUZZ_MAX_RECORDS];
	unsigned int n, i;

	n = fuzz_recs_parse(data, size, rec, FUZZ_MAX_RECORDS);
	F.inputs++;
	for (i = 0; i < n; i++) {
		struct rte_mbuf *m;
		char *d;

		/* bit 1: let the engines run before this frame (else the
		 * frames arrive in one burst) */
		if (rec[i].side & 2) {
			srnic_engine_poll(F.s[0].eng);
			srnic_engine_poll(F.s[1].eng);
			drain_cqs();
		}
		if (rec[i].len == 0)
			continue;
		m = rte_pktmbuf_alloc(F.inj);
		if (m == NULL)
			fz_die("injection pool empty");
		d = rte_pktmbuf_append(m, rec[i].len);
		if (d == NULL) {
			rte_pktmbuf_free(m);
			continue;
		}
		memcpy(d, rec[i].data, rec[i].len);
		if (F.verbose) {
			char line[256];

			srnic_pkt_describe(m, line, sizeof(line));
			fprintf(stderr, "fuzz_rx: -> %c %s\n", 'A' + (rec[i].side & 1), line);
		}
		if (rte_ring_enqueue(F.s[rec[i].side & 1].rx_ring, m) != 0)
			rte_pktmbuf_free(m);
		F.frames++;
	}
	settle();
	renew();
	return 0;
}

#ifdef SRNIC_FUZZ_LIBFUZZER
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* The BTH of an untagged IPv4 frame (Ethernet 14 + IPv4 20 + UDP 8). */
#define FZ_BTH_OFF 42
#define FZ_BTH_END (FZ_BTH_OFF + SRNIC_BTH_LEN)

/* Room for the records while the mutator works on them. */
static uint8_t mut_frames[FUZZ_MAX_RECORDS][FUZZ_FRAME_MAX];

enum mut_op { MUT_BYTES, MUT_DUP, MUT_DROP, MUT_SWAP, MUT_SIDE, MUT_OPCODE, MUT_NEXT_PSN, MUT_OPS };

size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	struct fuzz_rec rec[FUZZ_MAX_RECORDS];
	uint16_t len[FUZZ_MAX_RECORDS];
	uint8_t side[FUZZ_MAX_RECORDS];
	uint32_t rnd = seed;
	unsigned int n, i, j, op;
	size_t out = 0;

	n = fuzz_recs_parse(data, size, rec, FUZZ_MAX_RECORDS);
	for (i = 0; i < n; i++) {
		memcpy(mut_frames[i], rec[i].data, rec[i].len);
		len[i] = rec[i].len;
		side[i] = rec[i].side;
	}
	if (n == 0) {
		/* something to start from: an empty frame for side B */
		n = 1;
		len[0] = 0;
		side[0] = 1;
	}
	i = fuzz_rand(&rnd) % n;
	op = fuzz_rand(&rnd) % (MUT_OPS + 4);   /* bytes most of the time */
	switch (op) {
	case MUT_DUP:
		if (n < FUZZ_MAX_RECORDS) {
			memmove(mut_frames[i + 1], mut_frames[i], (n - i) * sizeof(mut_frames[0]));
			memmove(len + i + 1, len + i, (n - i) * sizeof(len[0]));
			memmove(side + i + 1, side + i, (n - i) * sizeof(side[0]));
			n++;
		}
		break;
	case MUT_DROP:
		if (n > 1) {
			memmove(mut_frames[i], mut_frames[i + 1], (n - i - 1) * sizeof(mut_frames[0]));
			memmove(len + i, len + i + 1, (n - i - 1) * sizeof(len[0]));
			memmove(side + i, side + i + 1, (n - i - 1) * sizeof(side[0]));
			n--;
		}
		break;
	case MUT_SWAP:
		j = fuzz_rand(&rnd) % n;
		if (j != i) {
			static uint8_t tmp[FUZZ_FRAME_MAX];
			uint16_t tl = len[i];
			uint8_t ts = side[i];

			memcpy(tmp, mut_frames[i], FUZZ_FRAME_MAX);
			memcpy(mut_frames[i], mut_frames[j], FUZZ_FRAME_MAX);
			memcpy(mut_frames[j], tmp, FUZZ_FRAME_MAX);
			len[i] = len[j];
			side[i] = side[j];
			len[j] = tl;
			side[j] = ts;
		}
		break;
	case MUT_SIDE:
		side[i] ^= (uint8_t)(1 + (fuzz_rand(&rnd) & 2));
		break;
	case MUT_OPCODE:
		/* an RC opcode: the table's interesting half */
		if (len[i] > FZ_BTH_OFF)
			mut_frames[i][FZ_BTH_OFF] = (uint8_t)(fuzz_rand(&rnd) % 0x18);
		break;
	case MUT_NEXT_PSN:
		/* the PSN after the previous frame's of the same side: a
		 * message sequence (unless the fix-up moves it again) */
		for (j = i; j-- > 0;)
			if ((side[j] & 1) == (side[i] & 1) && len[j] >= FZ_BTH_END && len[i] >= FZ_BTH_END) {
				srnic_bth_set_psn(mut_frames[i] + FZ_BTH_OFF,
						  srnic_bth_psn(mut_frames[j] + FZ_BTH_OFF) + 1);
				break;
			}
		break;
	default:
		len[i] = (uint16_t)LLVMFuzzerMutate(mut_frames[i], len[i], FUZZ_FRAME_MAX);
		break;
	}
	if (op == MUT_NEXT_PSN) /* lengths and ICRC only: keep that PSN */
		len[i] = (uint16_t)fuzz_frame_fixup(mut_frames[i], len[i], FUZZ_FRAME_MAX, NULL,
						    &rnd);
	else if (fuzz_rand(&rnd) % 8 != 0)
		len[i] = (uint16_t)fuzz_frame_fixup(mut_frames[i], len[i], FUZZ_FRAME_MAX,
						    &F.s[side[i] & 1].tgt, &rnd);
	for (i = 0; i < n && out + FUZZ_REC_HDR + len[i] <= max_size; i++) {
		data[out] = side[i];
		srnic_st16(data + out + 1, len[i]);
		memcpy(data + out + FUZZ_REC_HDR, mut_frames[i], len[i]);
		out += FUZZ_REC_HDR + len[i];
	}
	return out;
}
#endif
