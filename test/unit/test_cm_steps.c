/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CM's state machine stepped one message at a time, as SPDK's rdma_ut.c
 * steps its requests: lib/cm/cm.c is compiled into this test (its static
 * functions and struct srnic_cm_id in reach), over a stand-in for the core
 * API it calls (srnic_post_send(), srnic_poll_cq(), ...): no port, no
 * engine. Two devices, A (10.0.0.1) and B (10.0.0.2), whose QP1s hand
 * MADs to one in-memory wire; the test moves one MAD from the wire to its
 * receiver's QP1 and runs that CM's poll once, then checks both ids' states,
 * the events delivered and that nothing else was sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../lib/cm/cm.c"

#include "step_eal.h"

/* ---- the stand-in core ---- */

#define FAKE_RQ 128                 /* QP1's receive ring (the CM posts CM_NRECV) */
#define FAKE_CQE 512
#define FAKE_WIRE 16                /* MADs in flight between the two devices */
#define FAKE_EVENTS 32

struct srnic_engine {
	int unused;
};

struct srnic_cq {
	struct ibv_wc wc[FAKE_CQE];
	unsigned int head, tail;
};

struct fake_recv {
	uint64_t wr_id;
	uint8_t *addr;
	uint32_t len;
};

struct srnic_qp {
	struct srnic_dev *dev;
	struct srnic_cq *cq;
	enum ibv_qp_state state;
	struct fake_recv rq[FAKE_RQ];
	unsigned int rq_head, rq_tail;
};

struct srnic_dev {
	const char *name;
	union ibv_gid gid;
	uint64_t guid;              /* network order, as ibv_device_attr has it */
	struct srnic_qp qp1;
	struct srnic_cq cq;
	struct srnic_engine eng;
	struct srnic_cm *cm;
};

struct srnic_pd {
	struct srnic_dev *dev;
};

struct srnic_mr {
	void *addr;
	size_t len;
	srnic_mr_release_cb release;
	void *arg;
};

struct srnic_ah {
	struct ibv_ah ibah;
	union ibv_gid dgid;
};

static struct srnic_dev dev_a = { .name = "fakeA" }, dev_b = { .name = "fakeB" };

struct fake_frame {
	struct srnic_dev *from, *to;
	uint8_t mad[SRNIC_MAD_LEN];
};

static struct {
	struct fake_frame f[FAKE_WIRE];
	unsigned int head, tail;
} wire;

static void
gid_ipv4(union ibv_gid *g, uint8_t last)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	g->raw[12] = 10;
	g->raw[15] = last;
}

static struct srnic_dev *
dev_of_gid(const union ibv_gid *g)
{
	if (memcmp(g, &dev_a.gid, sizeof(*g)) == 0)
		return &dev_a;
	if (memcmp(g, &dev_b.gid, sizeof(*g)) == 0)
		return &dev_b;
	return NULL;
}

static void
cq_add(struct srnic_cq *cq, const struct ibv_wc *wc)
{
	assert_true(cq->tail - cq->head < FAKE_CQE);
	cq->wc[cq->tail++ % FAKE_CQE] = *wc;
}

const char *
srnic_dev_name(const struct srnic_dev *dev)
{
	return dev->name;
}

int
srnic_dev_gid(const struct srnic_dev *dev, int index, union ibv_gid *gid)
{
	if (index != SRNIC_GID_INDEX_IP)
		return -EINVAL;
	*gid = dev->gid;
	return 0;
}

int
srnic_dev_query(const struct srnic_dev *dev, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->node_guid = dev->guid;
	return 0;
}

int
srnic_dev_query_port(const struct srnic_dev *dev, struct ibv_port_attr *attr)
{
	RTE_SET_USED(dev);
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = attr->active_mtu = IBV_MTU_1024;
	return 0;
}

struct srnic_pd *
srnic_alloc_pd(struct srnic_dev *dev)
{
	struct srnic_pd *pd = calloc(1, sizeof(*pd));

	if (pd != NULL)
		pd->dev = dev;
	return pd;
}

int
srnic_dealloc_pd(struct srnic_pd *pd)
{
	free(pd);
	return 0;
}

struct srnic_mr *
srnic_reg_mr_cb(struct srnic_pd *pd, void *addr, size_t length, int access,
		srnic_mr_release_cb release, void *arg)
{
	struct srnic_mr *mr = calloc(1, sizeof(*mr));

	RTE_SET_USED(pd);
	RTE_SET_USED(access);
	if (mr == NULL)
		return NULL;
	mr->addr = addr;
	mr->len = length;
	mr->release = release;
	mr->arg = arg;
	return mr;
}

int
srnic_dereg_mr(struct srnic_mr *mr)
{
	if (mr->release != NULL)
		mr->release(mr->addr, mr->len, mr->arg);
	free(mr);
	return 0;
}

uint32_t
srnic_mr_lkey(const struct srnic_mr *mr)
{
	RTE_SET_USED(mr);
	return 0x100;
}

struct srnic_cq *
srnic_create_cq(struct srnic_dev *dev, int cqe, struct srnic_engine *eng)
{
	RTE_SET_USED(cqe);
	RTE_SET_USED(eng);
	memset(&dev->cq, 0, sizeof(dev->cq));
	return &dev->cq;
}

int
srnic_destroy_cq(struct srnic_cq *cq)
{
	RTE_SET_USED(cq);
	return 0;
}

int
srnic_poll_cq(struct srnic_cq *cq, int n, struct ibv_wc *wc)
{
	int i = 0;

	while (i < n && cq->head != cq->tail)
		wc[i++] = cq->wc[cq->head++ % FAKE_CQE];
	return i;
}

struct srnic_qp *
srnic_create_qp(struct srnic_pd *pd, struct srnic_qp_init_attr *attr)
{
	struct srnic_qp *qp = &pd->dev->qp1;

	assert_int_equal(attr->comp_mask, SRNIC_QP_INIT_ATTR_GSI);
	memset(qp, 0, sizeof(*qp));
	qp->dev = pd->dev;
	qp->cq = attr->recv_cq;
	qp->state = IBV_QPS_RESET;
	return qp;
}

int
srnic_destroy_qp(struct srnic_qp *qp)
{
	RTE_SET_USED(qp);
	return 0;
}

uint32_t
srnic_qp_num(const struct srnic_qp *qp)
{
	RTE_SET_USED(qp);
	return SRNIC_GSI_QPN;
}

enum ibv_qp_state
srnic_qp_state(const struct srnic_qp *qp)
{
	return qp->state;
}

int
srnic_modify_qp(struct srnic_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
	if (attr_mask & IBV_QP_STATE) {
		qp->state = attr->qp_state;
		if (qp->state == IBV_QPS_RESET)
			qp->rq_head = qp->rq_tail = 0;
	}
	return 0;
}

int
srnic_post_recv(struct srnic_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	for (; wr != NULL; wr = wr->next) {
		struct fake_recv *r;

		if (qp->rq_tail - qp->rq_head >= FAKE_RQ) {
			*bad_wr = wr;
			return ENOMEM;
		}
		r = &qp->rq[qp->rq_tail++ % FAKE_RQ];
		r->wr_id = wr->wr_id;
		r->addr = (uint8_t *)(uintptr_t)wr->sg_list[0].addr;
		r->len = wr->sg_list[0].length;
	}
	return 0;
}

/* A MAD sent: on the wire for its destination, and its send completed at once. */
int
srnic_post_send(struct srnic_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	for (; wr != NULL; wr = wr->next) {
		struct srnic_ah *ah = container_of(wr->wr.ud.ah, struct srnic_ah, ibah);
		struct fake_frame *f;
		struct ibv_wc wc;

		if (wire.tail - wire.head >= FAKE_WIRE || wr->sg_list[0].length != SRNIC_MAD_LEN) {
			*bad_wr = wr;
			return ENOMEM;
		}
		f = &wire.f[wire.tail++ % FAKE_WIRE];
		f->from = qp->dev;
		f->to = dev_of_gid(&ah->dgid);
		memcpy(f->mad, (const void *)(uintptr_t)wr->sg_list[0].addr, SRNIC_MAD_LEN);
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = wr->wr_id;
		wc.opcode = IBV_WC_SEND;
		cq_add(qp->cq, &wc);
	}
	return 0;
}

static struct srnic_ah *
ah_new(const union ibv_gid *dgid)
{
	struct srnic_ah *ah = calloc(1, sizeof(*ah));

	if (ah == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	ah->dgid = *dgid;
	return ah;
}

struct srnic_ah *
srnic_create_ah(struct srnic_pd *pd, const struct ibv_ah_attr *attr)
{
	RTE_SET_USED(pd);
	return ah_new(&attr->grh.dgid);
}

/* The GRH's source GID: bytes 8-23 of the 40 in front of the MAD. */
struct srnic_ah *
srnic_create_ah_from_wc(struct srnic_pd *pd, const struct ibv_wc *wc, const void *grh)
{
	RTE_SET_USED(pd);
	RTE_SET_USED(wc);
	return ah_new((const union ibv_gid *)((const uint8_t *)grh + 8));
}

int
srnic_init_ah_from_wc(struct srnic_dev *dev, const struct ibv_wc *wc, const void *grh,
		      struct ibv_ah_attr *attr)
{
	RTE_SET_USED(dev);
	RTE_SET_USED(wc);
	memset(attr, 0, sizeof(*attr));
	attr->is_global = 1;
	memcpy(&attr->grh.dgid, (const uint8_t *)grh + 8, sizeof(attr->grh.dgid));
	return 0;
}

int
srnic_destroy_ah(struct srnic_ah *ah)
{
	free(ah);
	return 0;
}

struct ibv_ah *
srnic_ah_ibv(struct srnic_ah *ah)
{
	return &ah->ibah;
}

/* ---- stepping ---- */

struct step_event {
	struct srnic_cm_id *id;
	enum srnic_cm_event_type type;
};

static struct {
	struct step_event ev[FAKE_EVENTS];
	unsigned int n;
	struct srnic_cm_id *new_id; /* REQ_RECEIVED's id */
} events;

static int
handler(struct srnic_cm_id *id, const struct srnic_cm_event *ev)
{
	assert_true(events.n < FAKE_EVENTS);
	events.ev[events.n].id = id;
	events.ev[events.n].type = ev->type;
	events.n++;
	if (ev->type == SRNIC_CM_EV_REQ_RECEIVED)
		events.new_id = id;
	return 0;
}

/* The one event delivered since the last check: on id, of type t. */
static void
expect_event(struct srnic_cm_id *id, enum srnic_cm_event_type t)
{
	assert_int_equal(events.n, 1);
	assert_ptr_equal(events.ev[0].id, id);
	assert_string_equal(srnic_cm_event_str(events.ev[0].type), srnic_cm_event_str(t));
	events.n = 0;
}

static void
expect_no_event(void)
{
	assert_int_equal(events.n, 0);
}

static unsigned int
wire_count(void)
{
	return wire.tail - wire.head;
}

/* The MAD next on the wire: its attribute (SRNIC_CM_ATTR_*) and destination. */
static unsigned int
wire_next_attr(struct srnic_dev **to)
{
	struct fake_frame *f;

	assert_true(wire_count() > 0);
	f = &wire.f[wire.head % FAKE_WIRE];
	if (to != NULL)
		*to = f->to;
	return srnic_mad_attr_id(f->mad);
}

/* Put the next MAD of the wire in a receive buffer of its destination's
 * QP1 (a GRH from the sender first) and run that CM's poll once. Returns
 * the MAD's attribute. dup: leave a copy on the wire (a resend). */
static unsigned int
step(bool dup)
{
	struct fake_frame f = wire.f[wire.head % FAKE_WIRE];
	struct srnic_qp *qp = &f.to->qp1;
	struct fake_recv *r;
	struct ibv_wc wc;

	assert_non_null(f.to);
	if (!dup)
		wire.head++;
	assert_int_equal(qp->state, IBV_QPS_RTS);
	assert_true(qp->rq_tail != qp->rq_head);
	r = &qp->rq[qp->rq_head++ % FAKE_RQ];
	assert_true(r->len >= SRNIC_GRH_LEN + SRNIC_MAD_LEN);
	memset(r->addr, 0, SRNIC_GRH_LEN);
	r->addr[0] = 0x60;
	memcpy(r->addr + 8, &f.from->gid, sizeof(f.from->gid));
	memcpy(r->addr + 24, &f.to->gid, sizeof(f.to->gid));
	memcpy(r->addr + SRNIC_GRH_LEN, f.mad, SRNIC_MAD_LEN);
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wr_id;
	wc.opcode = IBV_WC_RECV;
	wc.byte_len = SRNIC_GRH_LEN + SRNIC_MAD_LEN;
	wc.wc_flags = IBV_WC_GRH;
	wc.src_qp = SRNIC_GSI_QPN;
	wc.qp_num = SRNIC_GSI_QPN;
	cq_add(qp->cq, &wc);
	assert_int_equal(srnic_cm_poll(f.to->cm, NULL), 1);
	return srnic_mad_attr_id(f.mad);
}

#define SID 0x0000000001060000ull  /* rdma_cm's TCP port space, port 0 */

static void
req_param(struct srnic_cm_req_param *p)
{
	memset(p, 0, sizeof(*p));
	p->path.sgid = dev_a.gid;
	p->path.dgid = dev_b.gid;
	p->path.mtu = IBV_MTU_1024;
	p->path.packet_life_time = 18;
	p->service_id = SID;
	p->qp_num = 0x11;
	p->qp_type = IBV_QPT_RC;
	p->starting_psn = 1000;
	p->responder_resources = 4;
	p->initiator_depth = 4;
	/* the longest 5-bit times: no resend while the test steps */
	p->remote_cm_response_timeout = CM_MAX_TIMEOUT;
	p->local_cm_response_timeout = CM_MAX_TIMEOUT;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->max_cm_retries = 15;
}

static void
rep_param(struct srnic_cm_rep_param *p)
{
	memset(p, 0, sizeof(*p));
	p->qp_num = 0x22;
	p->starting_psn = 2000;
	p->responder_resources = 4;
	p->initiator_depth = 4;
	p->rnr_retry_count = 7;
}

static int
setup(void **state)
{
	RTE_SET_USED(state);
	memset(&wire, 0, sizeof(wire));
	memset(&events, 0, sizeof(events));
	dev_a.cm = srnic_cm_create(&dev_a, &dev_a.eng);
	dev_b.cm = srnic_cm_create(&dev_b, &dev_b.eng);
	assert_non_null(dev_a.cm);
	assert_non_null(dev_b.cm);
	assert_int_equal(dev_a.qp1.state, IBV_QPS_RTS);
	assert_int_equal(wire_count(), 0);
	return 0;
}

static int
teardown(void **state)
{
	struct srnic_cm_id *id, *tmp;

	RTE_SET_USED(state);
	/* ids the test made go without a message on the wire mattering */
	for (int d = 0; d < 2; d++) {
		struct srnic_cm *cm = d == 0 ? dev_a.cm : dev_b.cm;

		pthread_mutex_lock(&cm->lock);
		for (id = TAILQ_FIRST(&cm->all); id != NULL; id = tmp) {
			tmp = TAILQ_NEXT(id, all_link);
			timer_stop(cm, id);
			id->state = SRNIC_CM_IDLE;
			id->user_gone = true;
			id_maybe_free(cm, id);
		}
		pthread_mutex_unlock(&cm->lock);
	}
	assert_int_equal(srnic_cm_destroy(dev_a.cm), 0);
	assert_int_equal(srnic_cm_destroy(dev_b.cm), 0);
	return 0;
}

/* A listens on B, A connects: REQ, REP, RTU; then A disconnects: DREQ,
 * DREP. After each message both ids' states, the one event and the wire. */
static struct srnic_cm_id *
connect_to_rep_sent(struct srnic_cm_id **a_out)
{
	struct srnic_cm_req_param rq;
	struct srnic_cm_rep_param rp;
	struct srnic_cm_id *l, *a, *b;
	struct srnic_dev *to;

	l = srnic_cm_create_id(dev_b.cm, handler, NULL);
	assert_non_null(l);
	assert_int_equal(srnic_cm_listen(l, SID, 0), 0);
	assert_int_equal(srnic_cm_id_state(l), SRNIC_CM_LISTEN);
	assert_int_equal(wire_count(), 0);

	a = srnic_cm_create_id(dev_a.cm, handler, NULL);
	assert_non_null(a);
	req_param(&rq);
	assert_int_equal(srnic_cm_send_req(a, &rq), 0);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_REQ_SENT);
	assert_int_equal(wire_count(), 1);
	assert_int_equal(wire_next_attr(&to), SRNIC_CM_ATTR_REQ);
	assert_ptr_equal(to, &dev_b);

	assert_int_equal(step(false), SRNIC_CM_ATTR_REQ);
	b = events.new_id;
	assert_non_null(b);
	expect_event(b, SRNIC_CM_EV_REQ_RECEIVED);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_REQ_RCVD);
	assert_int_equal(srnic_cm_id_remote_id(b), srnic_cm_id_local_id(a));
	assert_int_equal(srnic_cm_id_state(l), SRNIC_CM_LISTEN);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_REQ_SENT);
	assert_int_equal(wire_count(), 0); /* no MRA, no REJ: the consumer answers */

	rep_param(&rp);
	assert_int_equal(srnic_cm_send_rep(b, &rp), 0);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_REP_SENT);
	assert_int_equal(wire_count(), 1);
	assert_int_equal(wire_next_attr(&to), SRNIC_CM_ATTR_REP);
	assert_ptr_equal(to, &dev_a);
	*a_out = a;
	return b;
}

static void
test_connect_disconnect(void **state)
{
	struct srnic_cm_id *a, *b;
	struct ibv_qp_attr qa;
	int mask;

	RTE_SET_USED(state);
	b = connect_to_rep_sent(&a);

	assert_int_equal(step(false), SRNIC_CM_ATTR_REP);
	expect_event(a, SRNIC_CM_EV_REP_RECEIVED);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_REP_RCVD);
	assert_int_equal(srnic_cm_id_remote_id(a), srnic_cm_id_local_id(b));
	assert_int_equal(wire_count(), 0);
	/* the active side's QP to RTR: the REP's QPN, and the PSN the REQ
	 * said it receives from (the REP's goes to its RTS sq_psn) */
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTR;
	assert_int_equal(srnic_cm_init_qp_attr(a, &qa, &mask), 0);
	assert_int_equal(qa.dest_qp_num, 0x22);
	assert_int_equal(qa.rq_psn, 1000);
	qa.qp_state = IBV_QPS_RTS;
	assert_int_equal(srnic_cm_init_qp_attr(a, &qa, &mask), 0);
	assert_int_equal(qa.sq_psn, 2000);

	assert_int_equal(srnic_cm_send_rtu(a, NULL, 0), 0);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_ESTABLISHED);
	assert_int_equal(wire_next_attr(NULL), SRNIC_CM_ATTR_RTU);
	assert_int_equal(step(false), SRNIC_CM_ATTR_RTU);
	expect_event(b, SRNIC_CM_EV_RTU_RECEIVED);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_ESTABLISHED);
	assert_int_equal(wire_count(), 0);

	assert_int_equal(srnic_cm_send_dreq(a, NULL, 0), 0);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_DREQ_SENT);
	assert_int_equal(wire_next_attr(NULL), SRNIC_CM_ATTR_DREQ);
	assert_int_equal(step(false), SRNIC_CM_ATTR_DREQ);
	expect_event(b, SRNIC_CM_EV_DREQ_RECEIVED);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_DREQ_RCVD);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_DREQ_SENT);
	assert_int_equal(wire_count(), 0);

	assert_int_equal(srnic_cm_send_drep(b, NULL, 0), 0);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_TIMEWAIT);
	assert_int_equal(wire_next_attr(NULL), SRNIC_CM_ATTR_DREP);
	assert_int_equal(step(false), SRNIC_CM_ATTR_DREP);
	expect_event(a, SRNIC_CM_EV_DREP_RECEIVED);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_TIMEWAIT);
	assert_int_equal(wire_count(), 0);
	assert_int_equal(srnic_cm_stat(dev_a.cm, "tx_req"), 1);
	assert_int_equal(srnic_cm_stat(dev_b.cm, "tx_rep"), 1);
}

/* The REQ arrives twice (A resent it, our REP lost): B, in REP_SENT,
 * sends its REP again and makes no second connection. */
static void
test_dup_req_in_rep_sent(void **state)
{
	struct srnic_cm_id *a, *b;

	RTE_SET_USED(state);
	b = connect_to_rep_sent(&a);
	/* the REP goes; the REQ comes again */
	wire.head++;
	assert_int_equal(wire_count(), 0);
	wire.f[wire.tail % FAKE_WIRE] = wire.f[(wire.tail - 2) % FAKE_WIRE];
	wire.tail++;
	assert_int_equal(wire_next_attr(NULL), SRNIC_CM_ATTR_REQ);
	assert_int_equal(step(false), SRNIC_CM_ATTR_REQ);
	expect_no_event();
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_REP_SENT);
	assert_int_equal(srnic_cm_stat(dev_b.cm, "dup_req"), 1);
	assert_int_equal(wire_count(), 1);
	assert_int_equal(wire_next_attr(NULL), SRNIC_CM_ATTR_REP);
	/* and the resent REP completes A's side as the first would have */
	assert_int_equal(step(false), SRNIC_CM_ATTR_REP);
	expect_event(a, SRNIC_CM_EV_REP_RECEIVED);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_REP_RCVD);
}

/* The REP arrives twice once A is ESTABLISHED (its RTU lost): A sends the
 * RTU again, no second REP event; B's state is unchanged until it. */
static void
test_dup_rep_in_established(void **state)
{
	struct srnic_cm_id *a, *b;

	RTE_SET_USED(state);
	b = connect_to_rep_sent(&a);
	assert_int_equal(step(true), SRNIC_CM_ATTR_REP);
	expect_event(a, SRNIC_CM_EV_REP_RECEIVED);
	assert_int_equal(srnic_cm_send_rtu(a, NULL, 0), 0);
	assert_int_equal(wire_count(), 2); /* the REP's copy, the RTU */
	/* the RTU is lost: the wire's last MAD goes */
	wire.tail--;
	assert_int_equal(step(false), SRNIC_CM_ATTR_REP);
	expect_no_event();
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_ESTABLISHED);
	assert_int_equal(wire_count(), 1);
	assert_int_equal(wire_next_attr(NULL), SRNIC_CM_ATTR_RTU);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_REP_SENT);
	assert_int_equal(step(false), SRNIC_CM_ATTR_RTU);
	expect_event(b, SRNIC_CM_EV_RTU_RECEIVED);
	assert_int_equal(srnic_cm_id_state(b), SRNIC_CM_ESTABLISHED);
}

/* A REQ for a service nobody listens to: B answers REJ (invalid service
 * ID) with no id of its own; A goes back to IDLE with the REJ's event. */
static void
test_req_no_listener_rej(void **state)
{
	struct srnic_cm_req_param rq;
	struct srnic_cm_id *a;

	RTE_SET_USED(state);
	a = srnic_cm_create_id(dev_a.cm, handler, NULL);
	assert_non_null(a);
	req_param(&rq);
	assert_int_equal(srnic_cm_send_req(a, &rq), 0);
	assert_int_equal(step(false), SRNIC_CM_ATTR_REQ);
	expect_no_event();
	assert_true(TAILQ_EMPTY(&dev_b.cm->all));
	assert_int_equal(wire_count(), 1);
	assert_int_equal(wire_next_attr(NULL), SRNIC_CM_ATTR_REJ);
	assert_int_equal(step(false), SRNIC_CM_ATTR_REJ);
	expect_event(a, SRNIC_CM_EV_REJ_RECEIVED);
	assert_int_equal(srnic_cm_id_state(a), SRNIC_CM_IDLE);
	assert_int_equal(wire_count(), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_connect_disconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dup_req_in_rep_sent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dup_rep_in_established, setup, teardown),
		cmocka_unit_test_setup_teardown(test_req_no_listener_rej, setup, teardown),
	};

	gid_ipv4(&dev_a.gid, 1);
	gid_ipv4(&dev_b.gid, 2);
	dev_a.guid = rte_cpu_to_be_64(0x0200aafffe000001ull);
	dev_b.guid = rte_cpu_to_be_64(0x0200bbfffe000002ull);
	if (step_eal_init("cm_steps") != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
