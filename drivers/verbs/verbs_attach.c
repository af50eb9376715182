/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The attached side of libibverbs.so.1 (doc/srnicd.md, "What exists now"):
 * the daemon found through its control socket (SRNIC_DAEMON_SOCKET, else
 * /run/srnic/srnicd.sock) when the program was given no port of its own,
 * its devices listed, and each ibv_open_device() a session: HELLO,
 * OPEN_DEVICE, then the queries. No DPDK here: an attached program starts
 * no EAL. The objects and the data path are verbs_attach_dp.c's; what is
 * not attached yet fails with EOPNOTSUPP (sva_no_data_path()).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "srnic_svc.h"
#include "srnic_verbs_private.h"
#include "verbs.h"
#include "verbs_attach.h"

struct sva_device {
	struct ibv_device ibdev;
	uint32_t index;
	uint64_t guid;              /* network order */
};

static pthread_once_t sva_once = PTHREAD_ONCE_INIT;
static bool sva_mode;
static char sva_path[SVC_SOCK_PATH_MAX];
static unsigned int sva_nb;
static struct sva_device sva_devs[SVC_DEVICES_MAX];

/* HELLO on a new connection: the fd, or a negative errno (said why). */
static int
sva_session(uint16_t *minor)
{
	struct svc_hello_req q;
	struct svc_hello_rep r;
	int fd, rc;

	fd = svc_connect(sva_path);
	if (fd < 0)
		return fd;
	svc_hello_init(&q, 0, program_invocation_short_name);
	rc = svc_call(fd, &q, &r, sizeof(r));
	if (rc != 0) {
		if (rc == -EPROTONOSUPPORT)
			sv_log("srnicd on %s speaks protocol %u, this libibverbs.so.1 %u: use the "
			       "library built with that daemon", sva_path, r.major,
			       SVC_VERSION_MAJOR);
		else
			sv_log("srnicd on %s refused the session: %s", sva_path, strerror(-rc));
		close(fd);
		return rc;
	}
	if (minor != NULL)
		*minor = r.minor;
	return fd;
}

/* The device's files in SRNIC_DEVFS (verbs_devfs.c), as the daemon's device
 * is when the program first lists it: its port, GIDs and netdev, asked on
 * the listing's session (a device of its own opened and closed). The MAC
 * is GID 0's (the link-local address made from it, EUI-64). */
static void
sva_devfs(int fd, const struct svc_dev_info *info, unsigned int i)
{
	struct sv_devfs_dev d = { .name = info->name, .netdev = info->netdev };
	struct svc_open_req oq = { .index = info->index };
	struct svc_handle_rep orep;
	struct svc_handle_req cq;
	struct svc_query_port_req pq;
	struct svc_query_port_rep prep;
	struct svc_query_gid_req gq;
	struct svc_query_gid_rep grep;
	char uverbs[16];
	const uint8_t *e;
	int rc;

	svc_msg_init(&oq, SVC_OPEN_DEVICE, 0, 1, 0);
	if (svc_call(fd, &oq, &orep, sizeof(orep)) != 0)
		return;
	memset(&pq, 0, sizeof(pq));
	svc_msg_init(&pq, SVC_QUERY_PORT, 0, 2, 0);
	pq.handle = orep.handle;
	pq.port = 1;
	rc = svc_call(fd, &pq, &prep, sizeof(prep));
	if (rc == 0)
		d.port = prep.attr;
	for (; rc == 0 && d.nb_gid < RTE_MIN((int)prep.attr.gid_tbl_len, SRNIC_GID_TBL_LEN);
	     d.nb_gid++) {
		memset(&gq, 0, sizeof(gq));
		svc_msg_init(&gq, SVC_QUERY_GID, 0, 3, 0);
		gq.handle = orep.handle;
		gq.port = 1;
		gq.index = (uint32_t)d.nb_gid;
		rc = svc_call(fd, &gq, &grep, sizeof(grep));
		d.gid[d.nb_gid] = grep.gid;
		/* an empty entry is ENODATA, as the kernel's: listed as zeros */
		if (rc == -ENODATA) {
			memset(&d.gid[d.nb_gid], 0, sizeof(d.gid[0]));
			rc = 0;
		}
	}
	memset(&cq, 0, sizeof(cq));
	svc_msg_init(&cq, SVC_CLOSE_DEVICE, 0, 4, 0);
	cq.handle = orep.handle;
	svc_call(fd, &cq, &orep, sizeof(orep));
	if (rc != 0) {
		sv_log("srnicd on %s: %s's port and GIDs not known (%s): its /sys files are "
		       "not written", sva_path, info->name, strerror(-rc));
		return;
	}
	e = &d.gid[SRNIC_GID_INDEX_LL].raw[8];
	d.mac[0] = e[0] ^ 0x02;
	memcpy(&d.mac[1], &e[1], 2);
	memcpy(&d.mac[3], &e[5], 3);
	snprintf(uverbs, sizeof(uverbs), "uverbs%u", i);
	d.uverbs = uverbs;
	if (sv_devfs_write(&d) == 0 && i == 0)
		atexit(sv_devfs_remove);
}

/* Attached when the program has no port of its own and the daemon answers.
 * Its devices are listed once, at the first call, as rdma-core's
 * ibv_get_device_list() reads sysfs. */
static void
sva_decide(void)
{
	struct svc_list_req q;
	static struct svc_list_rep r;
	struct sv_conf c;
	unsigned int i;
	int fd, rc;

	if (sv_conf_load(&c) != 0 || c.port[0] != '\0' || c.ip[0] != '\0' ||
	    c.ip6[0] != '\0')
		return;
	if (svc_sock_path(sva_path, sizeof(sva_path)) != 0) {
		sv_log("%s is longer than a unix socket's path", SVC_SOCK_ENV);
		return;
	}
	fd = svc_connect(sva_path);
	if (fd < 0) {
		/* no daemon: the embedded device's message says what to set */
		if (getenv(SVC_SOCK_ENV) != NULL)
			sv_log("%s=%s: no srnicd answers there (%s): start it (usertools/srnic "
			       "daemon --socket PATH ...)", SVC_SOCK_ENV, sva_path, strerror(-fd));
		return;
	}
	close(fd);
	sva_mode = true;
	fd = sva_session(NULL);
	if (fd < 0)
		return;
	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_LIST_DEVICES, 0, 1, 0);
	rc = svc_call(fd, &q, &r, sizeof(r));
	if (rc != 0) {
		close(fd);
		sv_log("srnicd on %s did not list its devices: %s", sva_path, strerror(-rc));
		return;
	}
	for (i = 0; i < r.nb && i < SVC_DEVICES_MAX; i++) {
		struct sva_device *d = &sva_devs[i];

		d->index = r.dev[i].index;
		d->guid = r.dev[i].guid;
		d->ibdev.node_type = IBV_NODE_CA;
		d->ibdev.transport_type = IBV_TRANSPORT_IB;
		r.dev[i].name[SVC_NAME_MAX - 1] = '\0';
		sv_copy_str(d->ibdev.name, sizeof(d->ibdev.name), r.dev[i].name);
		snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%u", i);
		snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
			 "/sys/class/infiniband_verbs/uverbs%u", i);
		snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
			 "/sys/class/infiniband/%s", r.dev[i].name);
		r.dev[i].netdev[SVC_NETDEV_MAX - 1] = '\0';
		if (getenv(SV_DEVFS_ENV) != NULL)
			sva_devfs(fd, &r.dev[i], i);
	}
	close(fd);
	sva_nb = i;
}

bool
sva_attached(void)
{
	pthread_once(&sva_once, sva_decide);
	return sva_mode;
}

bool
sva_is_device(const struct ibv_device *device)
{
	const struct sva_device *d = (const struct sva_device *)device;

	return d >= sva_devs && d < sva_devs + SVC_DEVICES_MAX;
}

struct ibv_device **
sva_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(sva_nb + 1, sizeof(*list));
	unsigned int i;

	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < sva_nb; i++)
		list[i] = &sva_devs[i].ibdev;
	if (num_devices != NULL)
		*num_devices = (int)sva_nb;
	return list;
}

__be64
sva_device_guid(struct ibv_device *device)
{
	return ((struct sva_device *)device)->guid;
}

int
sva_device_index(struct ibv_device *device)
{
	return (int)((struct sva_device *)device)->index;
}

/* One request and its reply on the context's session, status as a
 * negative errno. */
int
sva_call_fds(struct sva_context *ctx, void *req, int fd_out, void *rep, size_t cap,
	     int *fds_in, unsigned int nfds)
{
	unsigned int i;
	int rc;

	for (i = 0; i < nfds; i++)
		fds_in[i] = -1;
	/* after the session's end: EIO, as uverbs after a device's removal */
	if (ctx->fd < 0 || (ctx->shm != NULL && sva_dead(ctx)))
		return -EIO;
	pthread_mutex_lock(&ctx->lock);
	((struct svc_hdr *)req)->seq = ++ctx->seq;
	rc = svc_call_fds(ctx->fd, req, fd_out, rep, cap, fds_in, nfds);
	pthread_mutex_unlock(&ctx->lock);
	if (rc == -ECONNRESET) {
		sva_ctx_fatal(ctx);
		return -EIO;
	}
	return rc;
}

int
sva_call_fd(struct sva_context *ctx, void *req, int fd_out, void *rep, size_t cap, int *fd_in)
{
	int none;

	return sva_call_fds(ctx, req, fd_out, rep, cap, fd_in != NULL ? fd_in : &none,
			    fd_in != NULL ? 1 : 0);
}

static int
sva_call(struct sva_context *ctx, void *req, void *rep, size_t cap)
{
	return sva_call_fd(ctx, req, -1, rep, cap, NULL);
}

struct ibv_context *
sva_open_device(struct ibv_device *device)
{
	struct sva_device *d = (struct sva_device *)device;
	struct svc_open_req q;
	struct svc_handle_rep r;
	struct sva_context *ctx;
	int rc;

	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->fd = sva_session(&ctx->minor);
	if (ctx->fd < 0) {
		rc = -ctx->fd;
		goto fail;
	}
	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_OPEN_DEVICE, 0, 0, 0);
	q.index = d->index;
	rc = -sva_call(ctx, &q, &r, sizeof(r));
	if (rc != 0)
		goto fail_fd;
	ctx->handle = r.handle;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.device = device;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.context.num_comp_vectors = 1;
	/* a context is an fd, as embedded (verbs_dev.c): programs dup it
	 * (pyverbs' shared-PD tests, before ibv_import_device() refuses it);
	 * not the session's socket, whose copy would outlive the context */
	ctx->vctx.context.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (ctx->vctx.context.cmd_fd < 0) {
		rc = errno;
		goto fail_fd;
	}
	/* the read end of the daemon's async pipe: MAP_SHM's (sva_dp_open()) */
	ctx->vctx.context.async_fd = -1;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	ctx->vctx.query_port = sva_query_port;
	ctx->vctx.query_device_ex = sv_query_device_ex;
	rc = -sva_dp_open(ctx);
	if (rc == 0) {
		rc = sva_watch_add(ctx);
		if (rc != 0)
			sva_dp_close(ctx);
	}
	if (rc != 0) {
		if (ctx->vctx.context.async_fd >= 0)
			close(ctx->vctx.context.async_fd);
		pthread_mutex_destroy(&ctx->vctx.context.mutex);
		goto fail_cmd;
	}
	return &ctx->vctx.context;
fail_cmd:
	close(ctx->vctx.context.cmd_fd);
fail_fd:
	close(ctx->fd);
fail:
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	errno = rc;
	return NULL;
}

int
sva_close_device(struct ibv_context *context)
{
	struct sva_context *ctx = sva_ctx(context);

	/* the session's end is the socket's: the daemon reclaims what it held
	 * (out of the watcher's sight first: the number may be reused) */
	sva_watch_del(ctx);
	if (ctx->fd >= 0)
		close(ctx->fd);
	sva_dp_close(ctx);
	close(context->async_fd);
	close(context->cmd_fd);
	pthread_mutex_destroy(&context->mutex);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
	return 0;
}

int
sva_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct sva_context *ctx = sva_ctx(context);
	struct svc_handle_req q;
	struct svc_query_device_rep r;
	int rc;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_QUERY_DEVICE, 0, 0, 0);
	q.handle = ctx->handle;
	rc = sva_call(ctx, &q, &r, sizeof(r));
	if (rc != 0)
		return -rc;
	*attr = r.attr;
	return 0;
}

int
sva_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
	       size_t len)
{
	struct sva_context *ctx = sva_ctx(context);
	struct svc_query_port_req q;
	struct svc_query_port_rep r;
	int rc;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_QUERY_PORT, 0, 0, 0);
	q.handle = ctx->handle;
	q.port = port_num;
	rc = sva_call(ctx, &q, &r, sizeof(r));
	if (rc != 0)
		return -rc;
	memcpy(attr, &r.attr, RTE_MIN(len, sizeof(r.attr)));
	return 0;
}

int
sva_query_gid(struct ibv_context *context, uint32_t port_num, uint32_t index, union ibv_gid *gid)
{
	struct sva_context *ctx = sva_ctx(context);
	struct svc_query_gid_req q;
	struct svc_query_gid_rep r;
	int rc;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_QUERY_GID, 0, 0, 0);
	q.handle = ctx->handle;
	q.port = port_num;
	q.index = index;
	rc = sva_call(ctx, &q, &r, sizeof(r));
	if (rc != 0)
		return -rc;
	*gid = r.gid;
	return 0;
}

void *
sva_no_data_path(const char *verb)
{
	static atomic_bool said;

	if (!atomic_exchange(&said, true))
		sv_log("%s on srnicd's device: not attached yet (PDs, MRs, CQs, "
		       "completion channels, RC/UC/UD QPs, AHs, SRQs, memory windows, multicast and async events so far; doc/srnicd.md, section 9); run the program with "
		       "its own port: usertools/srnic run --port DEVARGS --ip A.B.C.D -- PROGRAM", verb);
	errno = EOPNOTSUPP;
	return NULL;
}

/* srnic's librdmacm.so.1, attached, speaks rdma_cm's messages on the
 * session of the context it opened (its ids belong to that session). */
int
srnic_verbs_attached(void)
{
	return sva_attached();
}

int
srnic_verbs_attach_call(struct ibv_context *context, void *req, int fd_out, void *rep,
			size_t cap, int *fd_in)
{
	if (context == NULL || !sva_is_ctx(context))
		return -ENOTSUP;
	return sva_call_fd(sva_ctx(context), req, fd_out, rep, cap, fd_in);
}

uint16_t
srnic_verbs_attach_minor(struct ibv_context *context)
{
	return context != NULL && sva_is_ctx(context) ? sva_ctx(context)->minor : 0;
}

uint32_t
srnic_verbs_attach_dev(struct ibv_context *context)
{
	return context != NULL && sva_is_ctx(context) ? sva_ctx(context)->handle : 0;
}
