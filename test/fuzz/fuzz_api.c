/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: the verbs and rdma_cm API of srnic's drop-ins
 * (drivers/verbs' libibverbs.so.1, drivers/rdmacm's librdmacm.so.1),
 * called as a program would, through the system's <infiniband/verbs.h> and
 * <rdma/rdma_cma.h>: sequences of calls in any order with any arguments,
 * from two threads at once.
 *
 * The device: one DPDK net_ring port looped back on itself (SRNIC_PORT
 * net_ring0: what a port sends, it receives), IP FZ_IP, opened once; the
 * drop-in's progress thread runs the engine and the CM. rdma_cm
 * connects to our own address, so a connect meets our own listener.
 *
 * Input: records of FZ_REC bytes: byte 0 picks the thread (bit 7) and the
 * call (the rest, modulo FZ_OP_COUNT), the others are its arguments: an
 * object slot of that thread's table (FZ_SLOTS per kind), sizes, flags,
 * states, masks, opcodes, offsets and keys taken as they come (a length
 * may be 0 or huge, a mask any bits, a state past the last, an lkey or
 * rkey any value, an SGE outside its MR). Each thread owns its objects
 * and the calls are legal in verbs' sense: an object is only used while
 * it lives (verbs does not defend against a freed pointer; rdma-core
 * does not either); the device context is shared. Both threads start
 * together and run their records; then every object is destroyed, in
 * verbs' order, and each destroy must succeed. ASan and UBSan watch the
 * drop-ins, lib/ and the engine behind them.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define FZ_IP "10.66.0.1"
#define FZ_REC 16                 /* bytes per call record */
#define FZ_MAX_CALLS 256          /* records per input at most */
#define FZ_SLOTS 4                /* objects of each kind per thread */
#define FZ_MR_MAX (64 * 1024)     /* bytes of an MR at most */
#define FZ_CQE_MAX 4096           /* CQ depth asked at most (past it: the device's limit) */
#define FZ_WR_MAX 64              /* WRs per QP or SRQ asked at most */
#define FZ_NSGE 4
#define FZ_POLL 16
#define FZ_MIN(a, b) ((a) < (b) ? (a) : (b))

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum fz_op {
	OP_ALLOC_PD, OP_DEALLOC_PD, OP_REG_MR, OP_DEREG_MR, OP_CREATE_CQ, OP_DESTROY_CQ,
	OP_RESIZE_CQ, OP_POLL_CQ, OP_NOTIFY_CQ, OP_CREATE_QP, OP_MODIFY_QP, OP_QUERY_QP,
	OP_DESTROY_QP, OP_POST_SEND, OP_POST_RECV, OP_CREATE_SRQ, OP_MODIFY_SRQ, OP_POST_SRQ_RECV,
	OP_DESTROY_SRQ, OP_CREATE_AH, OP_DESTROY_AH, OP_QUERY, OP_CM_CREATE_ID, OP_CM_DESTROY_ID,
	OP_CM_BIND, OP_CM_LISTEN, OP_CM_RESOLVE_ADDR, OP_CM_RESOLVE_ROUTE, OP_CM_CREATE_QP,
	OP_CM_DESTROY_QP, OP_CM_CONNECT, OP_CM_ACCEPT, OP_CM_REJECT, OP_CM_DISCONNECT,
	OP_CM_EVENTS, OP_CM_QUERY,
	FZ_OP_COUNT
};

/* One thread's objects. A slot is NULL when free. */
struct fz_thread {
	pthread_t th;
	const uint8_t *rec[FZ_MAX_CALLS];
	unsigned int nrec;
	struct ibv_pd *pd[FZ_SLOTS];
	struct ibv_mr *mr[FZ_SLOTS];
	void *mem[FZ_SLOTS];              /* an MR's memory, freed after its dereg */
	struct ibv_cq *cq[FZ_SLOTS];
	struct ibv_qp *qp[FZ_SLOTS];
	struct ibv_srq *srq[FZ_SLOTS];
	struct ibv_ah *ah[FZ_SLOTS];
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id[FZ_SLOTS];
	struct ibv_pd *id_pd[FZ_SLOTS];   /* the PD of an id's rdma_create_qp QP */
	struct ibv_cq *id_cq[FZ_SLOTS];   /* its CQ (rdma_create_qp with ours) */
	uint16_t port;                    /* this thread's rdma_cm port */
};

static struct {
	struct ibv_context *ctx;
	struct fz_thread t[2];
	pthread_barrier_t start;
} F;

static void
fz_die(const char *what, int err)
{
	fprintf(stderr, "fuzz_api: %s (%d: %s)\n", what, err, strerror(err));
	abort();
}

/* ---- argument decoding ---- */

struct fz_args {
	const uint8_t *b;                 /* FZ_REC - 1 bytes */
	unsigned int off;
};

static uint8_t
a8(struct fz_args *a)
{
	return a->off < FZ_REC - 1 ? a->b[a->off++] : 0;
}

static uint16_t
a16(struct fz_args *a)
{
	uint16_t v = a8(a);

	return (uint16_t)(v << 8 | a8(a));
}

static uint32_t
a32(struct fz_args *a)
{
	uint32_t v = a16(a);

	return v << 16 | a16(a);
}

static unsigned int
slot(struct fz_args *a)
{
	return a8(a) % FZ_SLOTS;
}

/* ---- verbs ---- */

static void
do_reg_mr(struct fz_thread *t, struct fz_args *a)
{
	unsigned int s = slot(a), p = slot(a);
	size_t len = a16(a) % (FZ_MR_MAX + 1);
	int access = a8(a) & 0x1f;     /* local write, remote write/read/atomic, MW bind */
	void *mem;

	if (t->mr[s] != NULL || t->pd[p] == NULL)
		return;
	mem = calloc(1, len > 0 ? len : 1);
	if (mem == NULL)
		return;
	t->mr[s] = ibv_reg_mr(t->pd[p], mem, len, access);
	if (t->mr[s] == NULL)
		free(mem);
	else
		t->mem[s] = mem;
}

static int
dereg_mr(struct fz_thread *t, unsigned int s)
{
	int rc = ibv_dereg_mr(t->mr[s]);

	if (rc == 0) {
		free(t->mem[s]);
		t->mr[s] = NULL;
		t->mem[s] = NULL;
	}
	return rc;
}

static void
do_create_qp(struct fz_thread *t, struct fz_args *a)
{
	static const enum ibv_qp_type types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD,
						  IBV_QPT_RAW_PACKET, IBV_QPT_XRC_SEND };
	struct ibv_qp_init_attr ia;
	unsigned int s = slot(a), p = slot(a), sc = slot(a), rc = slot(a), q = slot(a);
	uint8_t f = a8(a);

	if (t->qp[s] != NULL || t->pd[p] == NULL)
		return;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = t->cq[sc];
	ia.recv_cq = t->cq[rc];
	ia.srq = (f & 1) ? t->srq[q] : NULL;
	ia.qp_type = types[(f >> 1) % (sizeof(types) / sizeof(types[0]))];
	ia.sq_sig_all = (f >> 4) & 1;
	ia.cap.max_send_wr = a8(a) % (FZ_WR_MAX + 2);
	ia.cap.max_recv_wr = a8(a) % (FZ_WR_MAX + 2);
	ia.cap.max_send_sge = a8(a) % (FZ_NSGE + 2);
	ia.cap.max_recv_sge = a8(a) % (FZ_NSGE + 2);
	ia.cap.max_inline_data = a16(a) % 1024;
	if (ia.send_cq == NULL || ia.recv_cq == NULL)
		return;            /* verbs dereferences both: a NULL CQ is not an argument */
	t->qp[s] = ibv_create_qp(t->pd[p], &ia);
}

static void
do_modify_qp(struct fz_thread *t, struct fz_args *a)
{
	struct ibv_qp_attr at;
	struct ibv_qp *qp = t->qp[slot(a)];
	int mask;

	if (qp == NULL)
		return;
	memset(&at, 0, sizeof(at));
	at.qp_state = (enum ibv_qp_state)(a8(a) % 8);
	mask = (int)(a32(a) & 0x1fffff);
	at.qkey = 0x11110000u | a8(a);
	at.path_mtu = (enum ibv_mtu)(a8(a) % 7);
	at.dest_qp_num = a8(a) | 0x10u;
	at.rq_psn = a16(a);
	at.sq_psn = at.rq_psn + 1;
	at.qp_access_flags = a8(a) & 0xf;
	at.max_rd_atomic = a8(a) % 20;
	at.max_dest_rd_atomic = at.max_rd_atomic;
	at.timeout = a8(a) % 32;
	at.retry_cnt = 1;
	at.rnr_retry = 1;
	at.min_rnr_timer = 1;
	at.port_num = (uint8_t)(1 + (a8(a) & 1));
	at.ah_attr.is_global = 1;
	at.ah_attr.port_num = 1;
	at.ah_attr.grh.sgid_index = a8(a) % 3;
	inet_pton(AF_INET6, "::ffff:" FZ_IP, &at.ah_attr.grh.dgid);
	ibv_modify_qp(qp, &at, mask);
}

/* A scatter list in the thread's MRs: addresses and keys as the input
 * says (past the MR's end, another MR's key, any key), checked by the
 * engine against the MR. But for inline data (inside: verbs copies it
 * from the address, no key checked, so the memory must be the program's). */
static int
sgl(struct fz_thread *t, struct fz_args *a, struct ibv_sge *sge, bool inside)
{
	int n = a8(a) % (FZ_NSGE + 1), i;

	for (i = 0; i < n; i++) {
		struct ibv_mr *mr = t->mr[slot(a)];
		uint16_t off = a16(a);

		sge[i].addr = (mr != NULL ? (uintptr_t)mr->addr : 0) + (off & 0x3fff);
		sge[i].length = (uint32_t)(off >> 6) * 17;
		sge[i].lkey = mr != NULL && !(off & 0x8000) ? mr->lkey : a32(a);
		if (inside && mr == NULL) {
			sge[i].length = 0;
		} else if (inside) {
			sge[i].addr = (uintptr_t)mr->addr + (off & 0x3fff) % (mr->length + 1);
			sge[i].length = (uint32_t)FZ_MIN((uint64_t)sge[i].length,
						 (uintptr_t)mr->addr + mr->length - sge[i].addr);
		}
	}
	return n;
}

static void
do_post_send(struct fz_thread *t, struct fz_args *a)
{
	struct ibv_qp *qp = t->qp[slot(a)];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge[FZ_NSGE];
	struct ibv_ah *ah;

	if (qp == NULL)
		return;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = a8(a);
	wr.opcode = (enum ibv_wr_opcode)(a8(a) % 12);
	wr.send_flags = a8(a) & 0x1f;
	wr.sg_list = sge;
	wr.num_sge = sgl(t, a, sge, (wr.send_flags & IBV_SEND_INLINE) != 0);
	wr.wr.rdma.remote_addr = a32(a);
	wr.wr.rdma.rkey = a32(a);
	if (qp->qp_type == IBV_QPT_UD) {
		ah = t->ah[slot(a)];
		if (ah == NULL)
			return;    /* a UD WR names a live AH */
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = a8(a) | 0x10u;
		wr.wr.ud.remote_qkey = 0x11110000u | a8(a);
	}
	ibv_post_send(qp, &wr, &bad);
}

static void
do_post_recv(struct fz_thread *t, struct fz_args *a, bool srq)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge[FZ_NSGE];
	struct ibv_qp *qp = t->qp[slot(a)];
	struct ibv_srq *s = t->srq[slot(a)];

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = a8(a);
	wr.sg_list = sge;
	wr.num_sge = sgl(t, a, sge, false);
	if (srq && s != NULL)
		ibv_post_srq_recv(s, &wr, &bad);
	else if (!srq && qp != NULL)
		ibv_post_recv(qp, &wr, &bad);
}

static void
do_poll_cq(struct fz_thread *t, struct fz_args *a)
{
	struct ibv_wc wc[FZ_POLL];
	struct ibv_cq *cq = t->cq[slot(a)];

	if (cq != NULL)
		ibv_poll_cq(cq, 1 + a8(a) % FZ_POLL, wc);
}

static void
do_create_srq(struct fz_thread *t, struct fz_args *a)
{
	struct ibv_srq_init_attr ia;
	unsigned int s = slot(a), p = slot(a);

	if (t->srq[s] != NULL || t->pd[p] == NULL)
		return;
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = a8(a) % (FZ_WR_MAX + 2);
	ia.attr.max_sge = a8(a) % (FZ_NSGE + 2);
	ia.attr.srq_limit = a8(a) % 8;
	t->srq[s] = ibv_create_srq(t->pd[p], &ia);
}

static void
do_modify_srq(struct fz_thread *t, struct fz_args *a)
{
	struct ibv_srq_attr at;
	struct ibv_srq *s = t->srq[slot(a)];

	if (s == NULL)
		return;
	memset(&at, 0, sizeof(at));
	at.max_wr = a8(a);
	at.srq_limit = a8(a);
	ibv_modify_srq(s, &at, a8(a) & 3);
	ibv_query_srq(s, &at);
}

static void
do_create_ah(struct fz_thread *t, struct fz_args *a)
{
	struct ibv_ah_attr at;
	unsigned int s = slot(a), p = slot(a);

	if (t->ah[s] != NULL || t->pd[p] == NULL)
		return;
	memset(&at, 0, sizeof(at));
	at.is_global = a8(a) & 1;
	at.port_num = a8(a) % 3;
	at.grh.sgid_index = a8(a) % 4;
	at.grh.hop_limit = a8(a);
	at.dlid = a16(a);
	if (a8(a) & 1) {
		inet_pton(AF_INET6, "::ffff:" FZ_IP, &at.grh.dgid);
	} else {
		uint32_t w[4] = { a32(a), a32(a), 0, a32(a) };

		memcpy(at.grh.dgid.raw, w, sizeof(w));
	}
	t->ah[s] = ibv_create_ah(t->pd[p], &at);
}

static void
do_query(struct fz_args *a)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	uint16_t pkey;

	ibv_query_device(F.ctx, &da);
	ibv_query_port(F.ctx, a8(a) % 3, &pa);
	ibv_query_gid(F.ctx, a8(a) % 3, a8(a) % 260, &gid);
	ibv_query_pkey(F.ctx, a8(a) % 3, a8(a) % 130, &pkey);
}

/* ---- rdma_cm ---- */

static void
cm_addr(struct sockaddr_in *sin, uint16_t port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	inet_pton(AF_INET, FZ_IP, &sin->sin_addr);
}

static int
cm_id_slot(struct fz_thread *t)
{
	unsigned int i;

	for (i = 0; i < FZ_SLOTS; i++)
		if (t->id[i] == NULL)
			return (int)i;
	return -1;
}

static void
cm_destroy_qp(struct fz_thread *t, unsigned int s)
{
	if (t->id[s] != NULL && t->id[s]->qp != NULL)
		rdma_destroy_qp(t->id[s]);
	t->id_pd[s] = NULL;
	t->id_cq[s] = NULL;
}

/* Take the channel's events (non-blocking), acknowledged at once: a
 * connect request's new id takes a free slot, or is rejected and goes. */
static void
cm_events(struct fz_thread *t)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(t->ch, &ev) == 0) {
		struct rdma_cm_id *nid = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;

		rdma_ack_cm_event(ev);
		if (nid != NULL) {
			int s = cm_id_slot(t);

			if (s >= 0) {
				t->id[s] = nid;
			} else {
				rdma_reject(nid, NULL, 0);
				rdma_destroy_id(nid);
			}
		}
	}
}

static void
do_cm(struct fz_thread *t, enum fz_op op, struct fz_args *a)
{
	unsigned int s = slot(a);
	struct rdma_cm_id *id = t->id[s];
	struct rdma_conn_param cp;
	struct sockaddr_in sin;
	uint8_t pdata[64];
	uint8_t f = a8(a);

	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = a8(a) % 20;
	cp.initiator_depth = a8(a) % 20;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	cp.private_data_len = a8(a) % (sizeof(pdata) + 1);
	memset(pdata, f, sizeof(pdata));
	cp.private_data = cp.private_data_len > 0 ? pdata : NULL;
	switch (op) {
	case OP_CM_CREATE_ID:
		if (id == NULL)
			rdma_create_id(t->ch, &t->id[s], NULL, (f & 1) ? RDMA_PS_UDP : RDMA_PS_TCP);
		break;
	case OP_CM_DESTROY_ID:
		if (id != NULL) {
			cm_destroy_qp(t, s);
			if (rdma_destroy_id(id) == 0)
				t->id[s] = NULL;
		}
		break;
	case OP_CM_BIND:
		cm_addr(&sin, (f & 1) ? t->port : a16(a));
		if (id != NULL)
			rdma_bind_addr(id, (struct sockaddr *)&sin);
		break;
	case OP_CM_LISTEN:
		if (id != NULL)
			rdma_listen(id, (int)(int8_t)a8(a));
		break;
	case OP_CM_RESOLVE_ADDR:
		/* our own port, the other thread's or any */
		cm_addr(&sin, (f & 3) == 0 ? F.t[0].port : (f & 3) == 1 ? F.t[1].port : a16(a));
		if (id != NULL)
			rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 1 + a16(a) % 2000);
		break;
	case OP_CM_RESOLVE_ROUTE:
		if (id != NULL)
			rdma_resolve_route(id, 1 + a16(a) % 2000);
		break;
	case OP_CM_CREATE_QP: {
		struct ibv_qp_init_attr ia;
		struct ibv_pd *pd = t->pd[slot(a)];
		struct ibv_cq *cq = t->cq[slot(a)];

		if (id == NULL || id->qp != NULL)
			break;
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = id->ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
		ia.send_cq = ia.recv_cq = (f & 1) ? cq : NULL; /* NULL: rdma_cm makes them */
		ia.cap.max_send_wr = ia.cap.max_recv_wr = 1 + a8(a) % FZ_WR_MAX;
		ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
		if ((f & 1) && cq == NULL)
			break;
		if (rdma_create_qp(id, pd, &ia) == 0) {
			t->id_pd[s] = pd;
			t->id_cq[s] = (f & 1) ? cq : NULL;
		}
		break;
	}
	case OP_CM_DESTROY_QP:
		cm_destroy_qp(t, s);
		break;
	case OP_CM_CONNECT:
		if (id != NULL)
			rdma_connect(id, (f & 1) ? NULL : &cp);
		break;
	case OP_CM_ACCEPT:
		if (id != NULL)
			rdma_accept(id, (f & 1) ? NULL : &cp);
		break;
	case OP_CM_REJECT:
		if (id != NULL)
			rdma_reject(id, cp.private_data, cp.private_data_len);
		break;
	case OP_CM_DISCONNECT:
		if (id != NULL)
			rdma_disconnect(id);
		break;
	case OP_CM_QUERY:
		if (id != NULL) {
			struct ibv_qp_attr at;
			int mask;

			memset(&at, 0, sizeof(at));
			at.qp_state = (enum ibv_qp_state)(a8(a) % 8);
			rdma_init_qp_attr(id, &at, &mask);
			rdma_get_src_port(id);
			rdma_get_dst_port(id);
			rdma_get_local_addr(id);
			rdma_get_peer_addr(id);
		}
		break;
	default:
		break;
	}
	cm_events(t);
}

/* ---- the calls ---- */

static void
call(struct fz_thread *t, const uint8_t *rec)
{
	struct fz_args a = { .b = rec + 1 };
	enum fz_op op = (enum fz_op)((rec[0] & 0x7f) % FZ_OP_COUNT);
	unsigned int s, i;

	switch (op) {
	case OP_ALLOC_PD:
		s = slot(&a);
		if (t->pd[s] == NULL)
			t->pd[s] = ibv_alloc_pd(F.ctx);
		break;
	case OP_DEALLOC_PD:   /* EBUSY while anything uses it: it stays */
		s = slot(&a);
		if (t->pd[s] != NULL && ibv_dealloc_pd(t->pd[s]) == 0)
			t->pd[s] = NULL;
		break;
	case OP_REG_MR:
		do_reg_mr(t, &a);
		break;
	case OP_DEREG_MR:
		s = slot(&a);
		if (t->mr[s] != NULL)
			dereg_mr(t, s);
		break;
	case OP_CREATE_CQ:
		s = slot(&a);
		if (t->cq[s] == NULL)
			t->cq[s] = ibv_create_cq(F.ctx, (int)(a16(&a) % (FZ_CQE_MAX + 2)) - 1,
						 NULL, NULL, 0);
		break;
	case OP_DESTROY_CQ:   /* EBUSY while a QP uses it */
		s = slot(&a);
		if (t->cq[s] != NULL && ibv_destroy_cq(t->cq[s]) == 0)
			t->cq[s] = NULL;
		break;
	case OP_RESIZE_CQ:
		s = slot(&a);
		if (t->cq[s] != NULL)
			ibv_resize_cq(t->cq[s], (int)(a16(&a) % (FZ_CQE_MAX + 2)) - 1);
		break;
	case OP_POLL_CQ:
		do_poll_cq(t, &a);
		break;
	case OP_NOTIFY_CQ:
		s = slot(&a);
		if (t->cq[s] != NULL)
			ibv_req_notify_cq(t->cq[s], a8(&a) & 1);
		break;
	case OP_CREATE_QP:
		do_create_qp(t, &a);
		break;
	case OP_MODIFY_QP:
		do_modify_qp(t, &a);
		break;
	case OP_QUERY_QP:
		s = slot(&a);
		if (t->qp[s] != NULL) {
			struct ibv_qp_attr at;
			struct ibv_qp_init_attr ia;

			ibv_query_qp(t->qp[s], &at, (int)(a32(&a) & 0x1fffff), &ia);
		}
		break;
	case OP_DESTROY_QP:
		s = slot(&a);
		if (t->qp[s] != NULL && ibv_destroy_qp(t->qp[s]) == 0)
			t->qp[s] = NULL;
		break;
	case OP_POST_SEND:
		do_post_send(t, &a);
		break;
	case OP_POST_RECV:
		do_post_recv(t, &a, false);
		break;
	case OP_CREATE_SRQ:
		do_create_srq(t, &a);
		break;
	case OP_MODIFY_SRQ:
		do_modify_srq(t, &a);
		break;
	case OP_POST_SRQ_RECV:
		do_post_recv(t, &a, true);
		break;
	case OP_DESTROY_SRQ:  /* EBUSY while a QP uses it */
		s = slot(&a);
		if (t->srq[s] != NULL && ibv_destroy_srq(t->srq[s]) == 0)
			t->srq[s] = NULL;
		break;
	case OP_CREATE_AH:
		do_create_ah(t, &a);
		break;
	case OP_DESTROY_AH:
		/* not while a QP of ours lives: a posted UD WR may name it (an
		 * AH in use must stay, IBTA 11.2.2.2) */
		s = slot(&a);
		for (i = 0; i < FZ_SLOTS && t->qp[i] == NULL; i++)
			;
		if (i == FZ_SLOTS && t->ah[s] != NULL && ibv_destroy_ah(t->ah[s]) == 0)
			t->ah[s] = NULL;
		break;
	case OP_QUERY:
		do_query(&a);
		break;
	default:
		do_cm(t, op, &a);
		break;
	}
}

static void *
run(void *arg)
{
	struct fz_thread *t = arg;
	unsigned int i;

	pthread_barrier_wait(&F.start);
	for (i = 0; i < t->nrec; i++)
		call(t, t->rec[i]);
	return NULL;
}

#define FZ_MUST(what, expr) do { \
	int rc__ = (expr); \
	if (rc__ != 0) \
		fz_die(what, rc__ < 0 ? errno : rc__); \
} while (0)

/* Everything a thread made goes, in verbs' order; every destroy must
 * succeed. */
static void
cleanup(struct fz_thread *t)
{
	unsigned int i;

	for (i = 0; i < FZ_SLOTS; i++)
		if (t->id[i] != NULL) {
			cm_destroy_qp(t, i);
			FZ_MUST("rdma_destroy_id", rdma_destroy_id(t->id[i]));
			t->id[i] = NULL;
		}
	cm_events(t);
	for (i = 0; i < FZ_SLOTS; i++) {
		if (t->qp[i] != NULL)
			FZ_MUST("ibv_destroy_qp", ibv_destroy_qp(t->qp[i]));
		t->qp[i] = NULL;
	}
	for (i = 0; i < FZ_SLOTS; i++) {
		if (t->ah[i] != NULL)
			FZ_MUST("ibv_destroy_ah", ibv_destroy_ah(t->ah[i]));
		if (t->srq[i] != NULL)
			FZ_MUST("ibv_destroy_srq", ibv_destroy_srq(t->srq[i]));
		if (t->cq[i] != NULL)
			FZ_MUST("ibv_destroy_cq", ibv_destroy_cq(t->cq[i]));
		if (t->mr[i] != NULL)
			FZ_MUST("ibv_dereg_mr", dereg_mr(t, i));
		t->ah[i] = NULL;
		t->srq[i] = NULL;
		t->cq[i] = NULL;
	}
	for (i = 0; i < FZ_SLOTS; i++) {
		if (t->pd[i] != NULL)
			FZ_MUST("ibv_dealloc_pd", ibv_dealloc_pd(t->pd[i]));
		t->pd[i] = NULL;
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ibv_device **list;
	int n, i, fl;

	(void)argc;
	(void)argv;
	setenv("SRNIC_PORT", "net_ring0", 1);
	setenv("SRNIC_IP", FZ_IP, 1);
	setenv("SRNIC_MEM_MB", "256", 0);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1)
		fz_die("no srnic device (the drop-in libibverbs.so.1?)", errno);
	F.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (F.ctx == NULL)
		fz_die("ibv_open_device", errno);
	for (i = 0; i < 2; i++) {
		F.t[i].ch = rdma_create_event_channel();
		if (F.t[i].ch == NULL)
			fz_die("rdma_create_event_channel", errno);
		fl = fcntl(F.t[i].ch->fd, F_GETFL);
		if (fl < 0 || fcntl(F.t[i].ch->fd, F_SETFL, fl | O_NONBLOCK) != 0)
			fz_die("the channel's fd non-blocking", errno);
		F.t[i].port = (uint16_t)(18515 + i);
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off;
	int i;

	F.t[0].nrec = F.t[1].nrec = 0;
	for (off = 0; off + FZ_REC <= size && F.t[0].nrec + F.t[1].nrec < FZ_MAX_CALLS;
	     off += FZ_REC) {
		struct fz_thread *t = &F.t[data[off] >> 7];

		t->rec[t->nrec++] = data + off;
	}
	pthread_barrier_init(&F.start, NULL, 2);
	for (i = 0; i < 2; i++)
		if (pthread_create(&F.t[i].th, NULL, run, &F.t[i]) != 0)
			fz_die("pthread_create", errno);
	for (i = 0; i < 2; i++)
		pthread_join(F.t[i].th, NULL);
	pthread_barrier_destroy(&F.start);
	for (i = 0; i < 2; i++)
		cleanup(&F.t[i]);
	return 0;
}
