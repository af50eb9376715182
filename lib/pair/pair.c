/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include <rte_errno.h>

#include "srnic_link.h"
#include "srnic_pair.h"

#define PAIR_RING_SIZE 4096

int
srnic_pair_create(struct srnic_pair *p, const char *name, uint16_t nb_engines, uint16_t mtu)
{
	struct srnic_dev_conf base;

	memset(&base, 0, sizeof(base));
	base.nb_engines = nb_engines;
	base.mtu = mtu;
	return srnic_pair_create_conf(p, name, &base);
}

int
srnic_pair_create_conf(struct srnic_pair *p, const char *name, const struct srnic_dev_conf *base)
{
	static const struct rte_ether_addr mac[2] = {
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 } },
		{ { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 } },
	};
	char dname[32];
	union ibv_gid gid;
	int rc, i;

	memset(p, 0, sizeof(*p));
	if (base == NULL)
		return -EINVAL;
	rc = srnic_link_ring_pair(name, base->nb_engines, PAIR_RING_SIZE, &p->port[0], &p->port[1]);
	if (rc != 0)
		return rc;
	for (i = 0; i < 2; i++) {
		struct srnic_dev_conf c;

		c = *base;
		c.port_id = p->port[i];
		c.ip_ver = 4;
		memset(c.ip, 0, sizeof(c.ip));
		c.ip[0] = 127;
		c.ip[3] = (uint8_t)(1 + i);
		c.mac = &mac[i];
		snprintf(dname, sizeof(dname), "%.12s%c", name, 'a' + i);
		c.name = dname;
		p->dev[i] = srnic_dev_create(&c);
		if (p->dev[i] == NULL) {
			rc = -rte_errno;
			goto fail;
		}
		p->pd[i] = srnic_alloc_pd(p->dev[i]);
		if (p->pd[i] == NULL) {
			rc = -rte_errno;
			goto fail;
		}
	}
	for (i = 0; i < 2; i++) {
		rc = srnic_dev_gid(p->dev[1 - i], 1, &gid);
		if (rc == 0)
			rc = srnic_dev_add_neigh(p->dev[i], &gid, &mac[1 - i]);
		if (rc != 0)
			goto fail;
	}
	return 0;
fail:
	/* what was made goes (the ring ports stay: the EAL owns them) */
	for (i = 0; i < 2; i++) {
		if (p->pd[i] != NULL)
			srnic_dealloc_pd(p->pd[i]);
		if (p->dev[i] != NULL)
			srnic_dev_destroy(p->dev[i]);
		p->pd[i] = NULL;
		p->dev[i] = NULL;
	}
	return rc;
}

int
srnic_qp_connect(struct srnic_qp *qp, const struct srnic_qp_peer *peer,
		 const struct srnic_pair_qp_conf *c)
{
	struct ibv_qp_attr a;
	int rc;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = c->access != 0 ? c->access :
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
	rc = srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				     IBV_QP_ACCESS_FLAGS);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = c->path_mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = c->max_dest_rd_atomic != 0 ? c->max_dest_rd_atomic
							  : c->max_rd_atomic;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.traffic_class = peer->traffic_class;
	a.ah_attr.grh.flow_label = peer->flow_label;
	rc = srnic_modify_qp_dmac(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
				  peer->mac_set ? &peer->mac : NULL);
	if (rc != 0)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = peer->my_psn;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->max_rd_atomic;
	return srnic_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_MAX_QP_RD_ATOMIC);
}

int
srnic_pair_connect(struct srnic_pair *p, struct srnic_qp *qa, struct srnic_qp *qb,
		   const struct srnic_pair_qp_conf *c)
{
	struct srnic_qp_peer pa = { .qpn = srnic_qp_num(qb), .psn = c->psn[1], .my_psn = c->psn[0] };
	struct srnic_qp_peer pb = { .qpn = srnic_qp_num(qa), .psn = c->psn[0], .my_psn = c->psn[1] };
	int rc;

	srnic_dev_gid(p->dev[1], 1, &pa.gid);
	srnic_dev_gid(p->dev[0], 1, &pb.gid);
	rc = srnic_qp_connect(qa, &pa, c);
	if (rc == 0)
		rc = srnic_qp_connect(qb, &pb, c);
	return rc;
}
