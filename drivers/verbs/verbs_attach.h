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
#include <stdatomic.h>

#include "srnic_svc.h"

struct sva_qp;
struct sva_mr;
struct sva_channel;

/* the objects of a context async events may name: its QPs, CQs and SRQs */
#define SVA_EVOBJ_MAX (SVC_SESSION_QPS_MAX + SVC_SESSION_CQS_MAX + SVC_SESSION_SRQS_MAX)

/* An open context on an attached device: a session with the daemon. */
struct sva_context {
	struct verbs_context vctx;  /* ibv_context last, as rdma-core's layout needs */
	pthread_mutex_t lock;       /* one call on the socket at a time */
	int fd;
	uint32_t handle;
	uint32_t seq;
	uint16_t minor;             /* the daemon's protocol minor (HELLO's reply) */
	struct svc_shm *shm;        /* the session's rings (MAP_SHM), mapped */
	/* the session's end (verbs_attach_fatal.c): shm->state FATAL, and
	 * IBV_EVENT_DEVICE_FATAL handed out once (under sva_objs_lock) */
	bool fatal_told;
	bool fatal_woken;           /* under sva_objs_lock: its waiters woken */
	struct sva_context *watch_next;  /* the watcher's list (sva_watch) */
	/* what the session's end must reach, under sva_objs_lock: QPs by
	 * ring (their outstanding WQEs flushed), channels (woken), MRs
	 * (copied private in a fork()ed child) */
	struct sva_qp *qp[SVC_SESSION_QPS_MAX];
	struct sva_channel *ch[SVC_SESSION_CHANNELS_MAX];
	struct sva_mr *mrs;
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
/* sva_call_fd() taking the reply's descriptors, up to nfds, in order */
int sva_call_fds(struct sva_context *ctx, void *req, int fd_out, void *rep, size_t cap,
		 int *fds_in, unsigned int nfds);

/* verbs_attach_dp.c: the objects and the data path of an attached
 * context; each returns what the verb it serves returns (errno set) */
int sva_dp_open(struct sva_context *ctx);
void sva_dp_close(struct sva_context *ctx);
struct ibv_pd *sva_alloc_pd(struct ibv_context *context);
int sva_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *sva_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			  unsigned int access);
int sva_dereg_mr(struct ibv_mr *mr);
/* ibv_rereg_mr()'s, rdma-core's input checks passed: 0 or an
 * IBV_REREG_MR_ERR_* with errno */
int sva_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access);
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
int sva_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid, bool attach);
int sva_init_ah_from_wc(struct ibv_context *context, const struct ibv_wc *wc, const void *grh,
			struct ibv_ah_attr *attr);
int sva_get_async_event(struct ibv_context *context, struct ibv_async_event *event);
struct ibv_srq *sva_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
int sva_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int sva_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int sva_destroy_srq(struct ibv_srq *srq);


/* verbs_attach_fatal.c: the session's end, however it comes (the
 * daemon's clean stop writes shm->state FATAL; its death, or the session
 * closed, is the watcher thread's POLLHUP or a call's ECONNRESET). Then
 * every verb on the context fails with EIO (as rdma-core's after a
 * device's removal), a destroy succeeds (rdma-core's verbs_is_destroy_err:
 * EIO is success), polls return what the CQ holds then each outstanding
 * WQE flushed, and ibv_get_async_event gives IBV_EVENT_DEVICE_FATAL once. */
extern pthread_mutex_t sva_objs_lock;
static inline bool
sva_dead(const struct sva_context *ctx)
{
	return __atomic_load_n(&ctx->shm->state.v, __ATOMIC_ACQUIRE) != SVC_SHM_LIVE;
}
/* Latch the session's end (FATAL in this mapping's state line); its
 * waiters wake as the daemon's ends of the session's pipes close. */
void sva_ctx_fatal(struct sva_context *ctx);
/* The watcher thread (one per process, started at the first open) */
int sva_watch_add(struct sva_context *ctx);
/* out of the watcher's sight before the socket is closed */
void sva_watch_del(struct sva_context *ctx);
/* IBV_EVENT_DEVICE_FATAL once the session ended and it was not handed
 * out yet: true and *event filled (an async event ring asks this first) */
bool sva_async_fatal(struct sva_context *ctx, struct ibv_async_event *event);
/* verbs_attach_dp.c: in a fork()ed child, a context's objects made the
 * child's copies (sva_objs_lock held) */
void sva_dp_fork_child(struct sva_context *ctx);

/* verbs_attach_mem.c: the process's re-backed pages (doc/srnicd.md
 * section 5), [base, end) page-aligned. acquire: its pages re-backed, or
 * counted once more where they are already; 0 or errno (nothing counted),
 * *fd the memfd holding each page at its own address as offset. release:
 * one MR fewer over them, a page no MR covers any more back to private
 * memory with its contents. The fork handlers: the child's copy of every
 * re-backed page private (copy-on-fork), its table empty. */
int sva_mem_acquire(uintptr_t base, uintptr_t end, int *fd);
void sva_mem_release(uintptr_t base, uintptr_t end);
void sva_mem_fork_prepare(void);
void sva_mem_fork_parent(void);
void sva_mem_fork_child(void);

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
