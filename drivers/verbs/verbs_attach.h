/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_VERBS_ATTACH_H
#define SRNIC_VERBS_ATTACH_H

/*
 * The attached side of libibverbs.so.1 (doc/srnicd.md): with neither
 * SRNIC_PORT nor SRNIC_IP set and srnicd answering on its socket, the
 * devices are the daemon's, each open context is a session with it, and
 * the queries are its answers. The verbs of verbs_dev.c and verbs_obj.c
 * hand an attached device or context here first.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <pthread.h>

struct svc_shm;

/* the objects of a context async events may name: its QPs, CQs and SRQs */
#define SVA_EVOBJ_MAX 80

/* An open context on an attached device: a session with the daemon. */
struct sva_context {
	struct verbs_context vctx;  /* ibv_context last, as rdma-core's layout needs */
	pthread_mutex_t lock;       /* one call on the socket at a time */
	int fd;
	uint32_t handle;
	uint32_t seq;
	struct svc_shm *shm;        /* the session's rings (MAP_SHM), mapped */
	/* async events: the ring's cons, and the objects an event may name
	 * (registered at create, taken out at destroy, under ev_lock) */
	pthread_mutex_t ev_lock;
	uint32_t ev_cons;
	struct sva_evobj {
		void *obj;          /* struct sva_qp, sva_cq, sva_srq */
		uint32_t handle;
	} evobj[SVA_EVOBJ_MAX];
};

static inline struct sva_context *
sva_ctx(struct ibv_context *c)
{
	return (struct sva_context *)((char *)c - offsetof(struct sva_context, vctx.context));
}

/* One request (and a descriptor, -1: none) and its reply on the
 * context's session (a descriptor that comes with it into *fd_in, may be
 * NULL): 0 or a negative errno. */
int sva_call_fd(struct sva_context *ctx, void *req, int fd_out, void *rep, size_t cap,
		int *fd_in);

/* verbs_attach_dp.c: the objects and the data path of an attached
 * context; each returns what the verb it serves returns (errno set) */
int sva_dp_open(struct sva_context *ctx);
void sva_dp_close(struct sva_context *ctx);
struct ibv_pd *sva_alloc_pd(struct ibv_context *context);
int sva_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *sva_reg_mr(struct ibv_pd *pd, void *addr, size_t length, unsigned int access);
int sva_dereg_mr(struct ibv_mr *mr);
struct ibv_cq *sva_create_cq(struct ibv_context *context, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector);
int sva_destroy_cq(struct ibv_cq *cq);
struct ibv_comp_channel *sva_create_comp_channel(struct ibv_context *context);
int sva_destroy_comp_channel(struct ibv_comp_channel *channel);
int sva_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context);
struct ibv_qp *sva_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int sva_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int sva_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		 struct ibv_qp_init_attr *init_attr);
int sva_destroy_qp(struct ibv_qp *qp);
struct ibv_ah *sva_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int sva_destroy_ah(struct ibv_ah *ah);
int sva_init_ah_from_wc(struct ibv_context *context, const struct ibv_wc *wc, const void *grh,
			struct ibv_ah_attr *attr);
int sva_get_async_event(struct ibv_context *context, struct ibv_async_event *event);
struct ibv_srq *sva_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int sva_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int sva_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int sva_destroy_srq(struct ibv_srq *srq);

/* Whether this process runs attached (decided once, at the first call). */
bool sva_attached(void);
/* Whether a device, a context is the daemon's. */
bool sva_is_device(const struct ibv_device *device);
static inline bool
sva_is_ctx(const struct ibv_context *context)
{
	return sva_is_device(context->device);
}

struct ibv_device **sva_get_device_list(int *num_devices);
__be64 sva_device_guid(struct ibv_device *device);
int sva_device_index(struct ibv_device *device);
struct ibv_context *sva_open_device(struct ibv_device *device);
int sva_close_device(struct ibv_context *context);
/* 0 or an errno, as the verbs they serve */
int sva_query_device(struct ibv_context *context, struct ibv_device_attr *attr);
int sva_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		   size_t len);
int sva_query_gid(struct ibv_context *context, uint32_t port_num, uint32_t index,
		  union ibv_gid *gid);
/* A verb that needs the data path, on an attached context: NULL (or -1)
 * with errno EOPNOTSUPP, and once a line saying why. */
void *sva_no_data_path(const char *verb);

#endif /* SRNIC_VERBS_ATTACH_H */
