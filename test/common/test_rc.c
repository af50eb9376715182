/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdlib.h>
#include <string.h>

#include "srnic_pair.h"
#include "test_rc.h"

int
srnic_test_qp_connect(struct srnic_qp *qp, const struct srnic_test_path *p)
{
	struct srnic_pair_qp_conf c = {
		.path_mtu = p->mtu, .max_rd_atomic = p->max_rd_atomic,
		.max_dest_rd_atomic = p->max_dest_rd_atomic, .timeout = p->timeout,
		.retry_cnt = p->retry_cnt, .rnr_retry = p->rnr_retry, .min_rnr_timer = 1,
		.access = p->access,
	};
	struct srnic_qp_peer peer = {
		.gid = p->dgid, .qpn = p->dest_qpn, .psn = p->rq_psn, .my_psn = p->sq_psn,
		.traffic_class = p->tclass, .flow_label = p->flow_label,
	};

	if (p->dmac != NULL) {
		peer.mac = *p->dmac;
		peer.mac_set = true;
	}
	return srnic_qp_connect(qp, &peer, &c);
}

/* The fields every send WR of these helpers has; the rest zero. */
static void
wr_init(struct ibv_send_wr *wr, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
	int nsge, unsigned int flags)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = nsge;
	wr->opcode = op;
	wr->send_flags = flags;
}

int
srnic_test_post_send_imm(struct srnic_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
			 struct ibv_sge *sge, int nsge, uint64_t raddr, uint32_t rkey,
			 uint32_t imm_be, unsigned int flags)
{
	struct ibv_send_wr wr, *bad = NULL;

	wr_init(&wr, op, wr_id, sge, nsge, flags);
	wr.imm_data = imm_be;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return srnic_post_send(qp, &wr, &bad);
}

int
srnic_test_post_send(struct srnic_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		     struct ibv_sge *sge, int nsge, uint64_t raddr, uint32_t rkey,
		     unsigned int flags)
{
	return srnic_test_post_send_imm(qp, op, wr_id, sge, nsge, raddr, rkey, 0, flags);
}

int
srnic_test_post_recv(struct srnic_qp *qp, uint64_t wr_id, struct ibv_sge *sge, int nsge)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	return srnic_post_recv(qp, &wr, &bad);
}

uint8_t *
srnic_test_frame_copy(const struct rte_mbuf *m, uint32_t *len)
{
	uint8_t *data;
	const void *d;

	*len = rte_pktmbuf_pkt_len(m);
	data = malloc(*len);
	if (data == NULL) {
		*len = 0;
		return NULL;
	}
	d = rte_pktmbuf_read(m, 0, *len, data);
	if (d != data)
		memcpy(data, d, *len);
	return data;
}

int
srnic_test_post_atomic(struct srnic_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		       struct ibv_sge *sge, uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
		       uint64_t swap, unsigned int flags)
{
	struct ibv_send_wr wr, *bad = NULL;

	wr_init(&wr, op, wr_id, sge, 1, flags);
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return srnic_post_send(qp, &wr, &bad);
}
