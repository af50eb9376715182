/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic's librdmacm.so.1: addresses as rdma_cm programs ask for them
 * (rdma_getaddrinfo, rdma_freeaddrinfo; rdma-core's addrinfo.c) and the
 * endpoints made from them (rdma_create_ep, rdma_destroy_ep).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "rdmacm.h"

/* ---- rdma_getaddrinfo ---- */

static struct sockaddr *
dup_addr(const struct sockaddr *a, socklen_t len)
{
	struct sockaddr *c = malloc(len);

	if (c != NULL)
		memcpy(c, a, len);
	return c;
}

void
rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res != NULL) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

/* rdma-core's answer for no node and no service: the hints' own addresses
 * (libfabric's verbs provider asks so with the source or destination it
 * already holds) */
static int
rai_from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo *r)
{
	r->ai_flags = hints->ai_flags;
	r->ai_family = hints->ai_family;
	r->ai_qp_type = hints->ai_qp_type;
	r->ai_port_space = hints->ai_port_space;
	if (hints->ai_dst_addr != NULL && hints->ai_dst_len != 0) {
		r->ai_dst_addr = dup_addr(hints->ai_dst_addr, hints->ai_dst_len);
		if (r->ai_dst_addr == NULL)
			return -ENOMEM;
		r->ai_dst_len = hints->ai_dst_len;
	}
	return 0;
}

/* node and service through the system's getaddrinfo, its first answer:
 * RAI_PASSIVE gives the source address (node NULL: any, 0.0.0.0 unless
 * hints ask for AF_INET6), else the destination; 0 or an EAI_ code */
static int
rai_resolve(const char *node, const char *service, const struct rdma_addrinfo *hints,
	    struct rdma_addrinfo *r)
{
	int flags = hints != NULL ? hints->ai_flags : 0;
	struct addrinfo h, *ai = NULL;
	int rc;

	memset(&h, 0, sizeof(h));
	h.ai_family = hints != NULL && hints->ai_family != 0 ? hints->ai_family
		: node != NULL ? AF_UNSPEC : AF_INET;
	h.ai_socktype = SOCK_STREAM;
	if (flags & RAI_NUMERICHOST)
		h.ai_flags |= AI_NUMERICHOST;
	if (flags & RAI_PASSIVE)
		h.ai_flags |= AI_PASSIVE;
	rc = getaddrinfo(node, service, &h, &ai);
	if (rc != 0)
		return rc;
	r->ai_flags = flags;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = hints != NULL && hints->ai_qp_type != 0 ? hints->ai_qp_type : IBV_QPT_RC;
	r->ai_port_space = hints != NULL && hints->ai_port_space != 0 ? hints->ai_port_space
		: (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP : RDMA_PS_TCP);
	if (flags & RAI_PASSIVE) {
		r->ai_src_addr = dup_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = dup_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_dst_len = ai->ai_addrlen;
	}
	freeaddrinfo(ai);
	if (r->ai_src_addr == NULL && r->ai_dst_addr == NULL)
		return EAI_MEMORY;
	return 0;
}

/* IPv4 or IPv6, as rdma-core's: node and/or service resolved
 * (rai_resolve()), or with neither the hints' addresses (rai_from_hints());
 * a source the answer lacks is the hints' (a destination's source). */
int
rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		 struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r;
	int rc;

	if (res == NULL || (node == NULL && service == NULL && hints == NULL))
		return err(EINVAL);
	if (hints != NULL && hints->ai_family != 0 && hints->ai_family != AF_INET &&
	    hints->ai_family != AF_INET6) {
		cma_log("rdma_getaddrinfo: srnic0 is RoCEv2: ask for AF_INET or AF_INET6");
		return err(EAFNOSUPPORT);
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return err(ENOMEM);
	if (node != NULL || service != NULL) {
		rc = rai_resolve(node, service, hints, r);
		if (rc != 0) {
			cma_log("rdma_getaddrinfo %s:%s: %s", node != NULL ? node : "*",
				service != NULL ? service : "0", gai_strerror(rc));
			rdma_freeaddrinfo(r);
			return err(rc);         /* the EAI_ code as errno, as rdma-core's */
		}
	} else if (rai_from_hints(hints, r) != 0) {
		rdma_freeaddrinfo(r);
		return err(ENOMEM);
	}
	if (r->ai_src_addr == NULL && hints != NULL && hints->ai_src_addr != NULL &&
	    hints->ai_src_len != 0) {
		r->ai_src_addr = dup_addr(hints->ai_src_addr, hints->ai_src_len);
		if (r->ai_src_addr == NULL) {
			rdma_freeaddrinfo(r);
			return err(ENOMEM);
		}
		r->ai_src_len = hints->ai_src_len;
	}
	*res = r;
	return 0;
}

/* ---- endpoints ---- */

int
rdma_create_ep(struct rdma_cm_id **out, struct rdma_addrinfo *res, struct ibv_pd *pd,
	       struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *id;
	int e;

	if (out == NULL || res == NULL)
		return err(EINVAL);
	/* the QP type is the address's, as rdma-core's (rdma_client leaves it 0) */
	if (qp_init_attr != NULL)
		qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (cma_create_id_qpt(NULL, &id, NULL, (enum rdma_port_space)res->ai_port_space,
			      (enum ibv_qp_type)res->ai_qp_type) != 0)
		return -1;
	if (res->ai_flags & RAI_PASSIVE) {
		if (rdma_bind_addr(id, res->ai_src_addr) != 0 ||
		    cma_ep_passive(id, pd, qp_init_attr) != 0)
			goto fail;
		*out = id;
		return 0;
	}
	if (rdma_resolve_addr(id, res->ai_src_addr, res->ai_dst_addr, CMA_SYNC_TIMEOUT_MS) != 0 ||
	    rdma_resolve_route(id, CMA_SYNC_TIMEOUT_MS) != 0)
		goto fail;
	if (qp_init_attr != NULL && rdma_create_qp(id, pd, qp_init_attr) != 0)
		goto fail;
	*out = id;
	return 0;
fail:
	e = errno;
	rdma_destroy_ep(id);
	return err(e);
}

void
rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (id == NULL)
		return;
	if (id->qp != NULL)
		rdma_destroy_qp(id);
	if (id->srq != NULL)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}
