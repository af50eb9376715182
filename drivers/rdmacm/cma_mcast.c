/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma_cm multicast over RoCE: rdma_join_multicast(_ex) and
 * rdma_leave_multicast. As the kernel's rdma_cm joins a RoCE group
 * (cma_iboe_join_multicast()), there is no SA to ask: the group's GID is
 * its IP address (IPv4 as ::ffff:a.b.c.d, RoCEv2), the join completes at
 * once with RDMA_CM_EVENT_MULTICAST_JOIN, whose ud parameters are what a
 * sender needs (an AH to the group, QPN 0xFFFFFF, the port space's Q_Key
 * RDMA_UDP_QKEY), and the id's QP is attached to the group
 * (ibv_attach_mcast()) unless the join is send-only, as rdma-core's
 * librdmacm does on that event. A failed attach is
 * RDMA_CM_EVENT_MULTICAST_ERROR. Leaving detaches the QP.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm.h"

/* RoCEv2 multicast's hop limit (the kernel's IPV6_DEFAULT_HOPLIMIT) */
#define CMA_MC_HOP_LIMIT 64

static void cma_mc_leave_all(struct cma_id *id, struct ibv_qp *qp);

struct cma_mc {
	LIST_ENTRY(cma_mc) link;        /* cma_id.mc, under cma_lock */
	struct sockaddr_storage addr;
	union ibv_gid mgid;
	uint32_t join_flags;
	struct ibv_qp *attached;        /* the QP attached to the group, or NULL */
};

/* The group's GID from its address: 0, or EINVAL (not a multicast address). */
static int
mc_gid(const struct sockaddr *a, union ibv_gid *g)
{
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)a;

		if (!IN_MULTICAST(ntohl(s->sin_addr.s_addr)))
			return EINVAL;
		memset(g, 0, sizeof(*g));
		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12], &s->sin_addr, 4);
		return 0;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;

		if (!IN6_IS_ADDR_MULTICAST(&s->sin6_addr))
			return EINVAL;
		memcpy(g->raw, &s->sin6_addr, 16);
		return 0;
	}
	return EAFNOSUPPORT;
}

static socklen_t
mc_addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static bool
mc_same(const struct cma_mc *mc, const struct sockaddr *a)
{
	union ibv_gid g;

	return mc_gid(a, &g) == 0 && memcmp(g.raw, mc->mgid.raw, 16) == 0;
}

/* The source GID of a group's AH: the device's address if of the group's
 * family, else (an IPv6 group on an IPv4 device) the link-local GID 0. */
static uint8_t
mc_sgid_index(struct ibv_context *verbs, const union ibv_gid *mgid)
{
	static const uint8_t v4pfx[12] = { [10] = 0xff, [11] = 0xff };
	bool v4 = memcmp(mgid->raw, v4pfx, sizeof(v4pfx)) == 0;
	union ibv_gid ip;

	if (ibv_query_gid(verbs, 1, SRNIC_GID_INDEX_IP, &ip) != 0)
		return SRNIC_GID_INDEX_LL;
	return (memcmp(ip.raw, v4pfx, sizeof(v4pfx)) == 0) == v4 ? SRNIC_GID_INDEX_IP
								   : SRNIC_GID_INDEX_LL;
}

int
rdma_join_multicast_ex(struct rdma_cm_id *rid, struct rdma_cm_join_mc_attr_ex *attr,
		       void *context)
{
	struct cma_id *id;
	struct cma_event *e;
	struct cma_mc *mc;
	union ibv_gid mgid;
	int rc, status = 0;

	if (rid == NULL || attr == NULL)
		return err(EINVAL);
	if (attr->comp_mask & ~(uint32_t)(RDMA_CM_JOIN_MC_ATTR_RESERVED - 1))
		return err(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) || attr->addr == NULL ||
	    (attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	     attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER))
		return err(EINVAL);
	rc = mc_gid(attr->addr, &mgid);
	if (rc != 0) {
		cma_log("rdma_join_multicast: not a multicast address (give 224.0.0.0/4 or ff00::/8)");
		return err(rc);
	}
	id = cma_id(rid);
	/* a UD id with a device: bound to its address or resolved (Linux: EINVAL) */
	if (rid->verbs == NULL || rid->qp_type != IBV_QPT_UD) {
		cma_log("rdma_join_multicast: the id needs an address on the device "
			"(rdma_bind_addr / rdma_resolve_addr) and a UD port space");
		return err(EINVAL);
	}
	mc = calloc(1, sizeof(*mc));
	if (mc == NULL)
		return err(ENOMEM);
	memcpy(&mc->addr, attr->addr, mc_addr_len(attr->addr));
	mc->mgid = mgid;
	mc->join_flags = attr->join_flags;
	if (rid->qp != NULL && attr->join_flags == RDMA_MC_JOIN_FLAG_FULLMEMBER) {
		rc = ibv_attach_mcast(rid->qp, &mgid, 0);
		if (rc == 0)
			mc->attached = rid->qp;
		else
			status = -rc;
	}
	pthread_mutex_lock(&cma_lock);
	e = cma_event_new(id, status == 0 ? RDMA_CM_EVENT_MULTICAST_JOIN :
				 RDMA_CM_EVENT_MULTICAST_ERROR, status);
	if (e != NULL) {
		struct ibv_ah_attr *ah = &e->ev.param.ud.ah_attr;

		ah->is_global = 1;
		ah->grh.dgid = mgid;
		ah->grh.sgid_index = mc_sgid_index(rid->verbs, &mgid);
		ah->grh.hop_limit = CMA_MC_HOP_LIMIT;
		ah->grh.traffic_class = id->tos_set ? id->tos : 0;
		ah->port_num = 1;
		e->ev.param.ud.qp_num = SRNIC_MCAST_QPN;
		e->ev.param.ud.qkey = RDMA_UDP_QKEY;
	}
	if (status == 0) {
		LIST_INSERT_HEAD(&id->mc, mc, link);
		__atomic_store_n(&id->mc_leave_all, cma_mc_leave_all, __ATOMIC_RELEASE);
	}
	cma_event_post(id, e);
	pthread_mutex_unlock(&cma_lock);
	(void)context; /* rdma-core hands it back in no event field of 44's ABI */
	if (status != 0) {
		free(mc);
		cma_log("rdma_join_multicast: attaching the QP failed (%s)", strerror(-status));
	} else {
		char buf[INET6_ADDRSTRLEN];

		inet_ntop(AF_INET6, mgid.raw, buf, sizeof(buf));
		cma_log("joined %s%s", buf, mc->attached != NULL ? ", QP attached" : "");
	}
	return cma_complete(id);
}

int
rdma_join_multicast(struct rdma_cm_id *rid, struct sockaddr *addr, void *context)
{
	struct rdma_cm_join_mc_attr_ex a = {
		.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS,
		.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER,
		.addr = addr,
	};

	return rdma_join_multicast_ex(rid, &a, context);
}

/* Take the join of addr off id's list (cma_lock held); NULL if none. */
static struct cma_mc *
mc_take(struct cma_id *id, const struct sockaddr *addr)
{
	struct cma_mc *mc;

	LIST_FOREACH(mc, &id->mc, link)
		if (addr == NULL || mc_same(mc, addr)) {
			LIST_REMOVE(mc, link);
			return mc;
		}
	return NULL;
}

static void
mc_leave(struct cma_mc *mc)
{
	if (mc->attached != NULL)
		ibv_detach_mcast(mc->attached, &mc->mgid, 0);
	free(mc);
}

int
rdma_leave_multicast(struct rdma_cm_id *rid, struct sockaddr *addr)
{
	struct cma_mc *mc;

	if (rid == NULL || addr == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	mc = mc_take(cma_id(rid), addr);
	pthread_mutex_unlock(&cma_lock);
	if (mc == NULL)
		return err(EADDRNOTAVAIL); /* not joined: as Linux's ucma */
	mc_leave(mc);
	return 0;
}

static void
cma_mc_leave_all(struct cma_id *id, struct ibv_qp *qp)
{
	for (;;) {
		struct cma_mc *mc, *found = NULL;
		struct ibv_qp *detach = NULL;

		pthread_mutex_lock(&cma_lock);
		LIST_FOREACH(mc, &id->mc, link)
			if (qp == NULL || mc->attached == qp) {
				found = mc;
				break;
			}
		if (found != NULL && qp != NULL) {
			/* the QP goes, the join stays (a send-only member now) */
			detach = found->attached;
			found->attached = NULL;
		} else if (found != NULL) {
			LIST_REMOVE(found, link);
		}
		pthread_mutex_unlock(&cma_lock);
		/* detaching waits for the engines: not under cma_lock */
		if (detach != NULL)
			ibv_detach_mcast(detach, &found->mgid, 0);
		else if (found != NULL)
			mc_leave(found);
		else
			return;
	}
}
