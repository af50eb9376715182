/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comp_mask in the public structs, as rdma-core's _ex
 * structs: a field after the base is read only with its bit, so a zeroed
 * struct keeps the base behaviour (read_inline_max set without
 * SRNIC_DEV_CONF_READ_INLINE_MAX is not read: READ responses are copied up
 * to SRNIC_READ_INLINE_DEFAULT and zero-copy above it, on the wire and in
 * the counters); an unknown bit fails with EINVAL, for
 * srnic_dev_create() and srnic_create_qp() alike.
 */
#include <rte_errno.h>

#include "host_util.h"
#include "srnic_pair.h"


static int
group_setup(void **state)
{
	RTE_SET_USED(state);
	return host_eal_init("host_comp_mask", 0, NULL);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	rte_eal_cleanup();
	return 0;
}

static void
pair_destroy(struct srnic_pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		assert_int_equal(srnic_dealloc_pd(p->pd[i]), 0);
		assert_int_equal(srnic_dev_destroy(p->dev[i]), 0);
	}
}

/* A READ of len bytes from a pair whose responder B has base conf
 * (comp_mask and read_inline_max as given): its one response frame, the
 * data, and B's counters. Returns whether B copied the payload. */
static bool
read_copied(const char *name, uint32_t comp_mask, uint16_t read_inline_max, uint32_t len)
{
	struct srnic_dev_conf base;
	struct srnic_pair p;
	struct srnic_engine *eng[2];
	struct host_ep a, b;
	struct host_xfer x;
	struct srnic_capture *cap;
	int64_t in0, zc0, in, zc;
	uint32_t idx[8], n;

	memset(&base, 0, sizeof(base));
	base.nb_engines = 1;
	base.mtu = 9000;
	base.comp_mask = comp_mask;
	base.read_inline_max = read_inline_max;
	assert_int_equal(srnic_pair_create_conf(&p, name, &base), 0);
	eng[0] = srnic_dev_engine(p.dev[0], 0);
	eng[1] = srnic_dev_engine(p.dev[1], 0);
	host_poll_set(eng, 2);
	cap = host_cap_start(p.port[0]); /* B's frames */
	host_cap_reset();
	host_ep_create(&a, p.dev[0], p.pd[0], 0, 16);
	host_ep_create(&b, p.dev[1], p.pd[1], 0, 16);
	host_connect_pair(&a, &b, IBV_MTU_1024);
	host_xfer_setup(&x, &a, &b, len, IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_READ,
			21);
	in0 = host_eng_stat(eng[1], "resp_read_inline");
	zc0 = host_eng_stat(eng[1], "resp_zc_segs");
	assert_int_equal(host_xfer_read(&x, &a, 1), 0);
	assert_int_equal(host_wait_wc(&a, 1)->status, IBV_WC_SUCCESS);
	assert_memory_equal(x.local, x.remote, len);
	host_settle();
	n = host_cap_roce(p.port[0], SRNIC_OP_RC_READ_RESP_ONLY, idx, RTE_DIM(idx));
	assert_int_equal(n, 1);
	assert_int_equal(H_cap->f[idx[0]].pkt.pay_len, len);
	assert_true(H_cap->f[idx[0]].icrc_ok);
	in = host_eng_stat(eng[1], "resp_read_inline") - in0;
	zc = host_eng_stat(eng[1], "resp_zc_segs") - zc0;
	assert_int_equal(in + zc, 1);
	host_xfer_dereg(&x);
	host_ep_destroy(&a);
	host_ep_destroy(&b);
	host_xfer_free(&x);
	srnic_capture_stop(cap);
	host_cap_reset();
	pair_destroy(&p);
	return in == 1;
}

/* read_inline_max without its bit is not read: the default applies
 * (small responses copied, as small SEND/WRITE pieces, larger ones
 * zero-copy); with the bit, the field: up to it copied, 0 none. */
static void
test_dev_conf_default(void **state)
{
	const uint32_t above = SRNIC_READ_INLINE_DEFAULT + 72;

	RTE_SET_USED(state);
	assert_true(above <= SRNIC_MAX_READ_INLINE);
	assert_true(read_copied("cm0", 0, SRNIC_MAX_READ_INLINE, 64));
	assert_true(read_copied("cm1", 0, 0, SRNIC_READ_INLINE_DEFAULT));
	assert_false(read_copied("cm2", 0, SRNIC_MAX_READ_INLINE, above));
	assert_true(read_copied("cm3", SRNIC_DEV_CONF_READ_INLINE_MAX, SRNIC_MAX_READ_INLINE, above));
	assert_false(read_copied("cm4", SRNIC_DEV_CONF_READ_INLINE_MAX, 0, 64));
}

static void
dev_conf_on(struct srnic_dev_conf *dc, uint16_t port, const char *name)
{
	memset(dc, 0, sizeof(*dc));
	dc->port_id = port;
	dc->nb_engines = 1;
	dc->ip_ver = 4;
	dc->ip[0] = 127;
	dc->ip[3] = 7;
	dc->nb_mbufs = HOST_NB_MBUFS;
	dc->name = name;
}

/* Unknown bits: EINVAL, whatever else the conf says; an out-of-range
 * read_inline_max is refused only when its bit says it is there. */
static void
test_dev_conf_unknown_bits(void **state)
{
	static const uint32_t bad[] = {
		SRNIC_DEV_CONF_RESERVED,
		SRNIC_DEV_CONF_RESERVED | SRNIC_DEV_CONF_READ_INLINE_MAX,
		1u << 31,
	};
	struct srnic_dev_conf dc;
	struct srnic_dev *dev;
	uint16_t port[2];
	unsigned int i;

	RTE_SET_USED(state);
	assert_int_equal(srnic_link_ring_pair("cmbits", 1, HOST_RING_SIZE, &port[0], &port[1]), 0);
	for (i = 0; i < RTE_DIM(bad); i++) {
		dev_conf_on(&dc, port[0], "cmbits");
		dc.comp_mask = bad[i];
		rte_errno = 0;
		assert_null(srnic_dev_create(&dc));
		assert_int_equal(rte_errno, EINVAL);
	}
	dev_conf_on(&dc, port[0], "cmbits");
	dc.read_inline_max = SRNIC_MAX_READ_INLINE + 1;
	dc.comp_mask = SRNIC_DEV_CONF_READ_INLINE_MAX;
	assert_null(srnic_dev_create(&dc));
	assert_int_equal(rte_errno, EINVAL);
	dc.comp_mask = 0; /* not read: the base device */
	dev = srnic_dev_create(&dc);
	assert_non_null(dev);
	assert_int_equal(srnic_dev_destroy(dev), 0);
}

/* srnic_qp_init_attr: every bit from SRNIC_QP_INIT_ATTR_RESERVED up is
 * refused (the known ones, SRQ and GSI, have their own tests: srq_events,
 * gsi), and 0 creates the QP. */
static void
test_qp_init_attr_unknown_bits(void **state)
{
	static const uint32_t bad[] = { SRNIC_QP_INIT_ATTR_RESERVED, 1u << 7, 1u << 31 };
	struct srnic_dev_conf dc;
	struct srnic_qp_init_attr qa, got;
	struct ibv_qp_attr attr;
	struct srnic_dev *dev;
	struct srnic_pd *pd;
	struct srnic_cq *cq;
	struct srnic_qp *qp;
	uint16_t port[2];
	unsigned int i;

	RTE_SET_USED(state);
	assert_int_equal(srnic_link_ring_pair("cmqp", 1, HOST_RING_SIZE, &port[0], &port[1]), 0);
	dev_conf_on(&dc, port[0], "cmqp");
	dev = srnic_dev_create(&dc);
	assert_non_null(dev);
	pd = srnic_alloc_pd(dev);
	assert_non_null(pd);
	cq = srnic_create_cq(dev, 64, NULL);
	assert_non_null(cq);
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = qa.recv_cq = cq;
	qa.max_send_wr = qa.max_recv_wr = 16;
	qa.max_send_sge = qa.max_recv_sge = 1;
	qa.qp_type = IBV_QPT_RC;
	for (i = 0; i < RTE_DIM(bad); i++) {
		qa.comp_mask = bad[i];
		rte_errno = 0;
		assert_null(srnic_create_qp(pd, &qa));
		assert_int_equal(rte_errno, EINVAL);
	}
	qa.comp_mask = 0;
	qp = srnic_create_qp(pd, &qa);
	assert_non_null(qp);
	got.comp_mask = 0xdead;
	assert_int_equal(srnic_query_qp(qp, &attr, 0, &got), 0);
	assert_int_equal(got.comp_mask, 0);
	assert_int_equal(srnic_destroy_qp(qp), 0);
	assert_int_equal(srnic_destroy_cq(cq), 0);
	assert_int_equal(srnic_dealloc_pd(pd), 0);
	assert_int_equal(srnic_dev_destroy(dev), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dev_conf_unknown_bits),
		cmocka_unit_test(test_qp_init_attr_unknown_bits),
		cmocka_unit_test(test_dev_conf_default),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
