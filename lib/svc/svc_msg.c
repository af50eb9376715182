/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnicd's control messages: their sizes, the checks every received
 * message passes before its body is read, and a blocking client call.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "srnic_svc.h"

/* [type][reply]: each message's one size */
static const size_t svc_sizes[SVC_TYPE_END][2] = {
	[SVC_HELLO] = { sizeof(struct svc_hello_req), sizeof(struct svc_hello_rep) },
	[SVC_LIST_DEVICES] = { sizeof(struct svc_list_req), sizeof(struct svc_list_rep) },
	[SVC_OPEN_DEVICE] = { sizeof(struct svc_open_req), sizeof(struct svc_handle_rep) },
	[SVC_CLOSE_DEVICE] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_QUERY_DEVICE] = { sizeof(struct svc_handle_req), sizeof(struct svc_query_device_rep) },
	[SVC_QUERY_PORT] = { sizeof(struct svc_query_port_req), sizeof(struct svc_query_port_rep) },
	[SVC_QUERY_GID] = { sizeof(struct svc_query_gid_req), sizeof(struct svc_query_gid_rep) },
	[SVC_STATUS] = { sizeof(struct svc_status_req), sizeof(struct svc_status_rep) },
	[SVC_MAP_SHM] = { sizeof(struct svc_handle_req), sizeof(struct svc_shm_rep) },
	[SVC_ALLOC_PD] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_DEALLOC_PD] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_REG_MR] = { sizeof(struct svc_reg_mr_req), sizeof(struct svc_reg_mr_rep) },
	[SVC_DEREG_MR] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CREATE_CQ] = { sizeof(struct svc_create_cq_req), sizeof(struct svc_create_cq_rep) },
	[SVC_DESTROY_CQ] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CREATE_QP] = { sizeof(struct svc_create_qp_req), sizeof(struct svc_create_qp_rep) },
	[SVC_MODIFY_QP] = { sizeof(struct svc_modify_qp_req), sizeof(struct svc_handle_rep) },
	[SVC_QUERY_QP] = { sizeof(struct svc_query_qp_req), sizeof(struct svc_query_qp_rep) },
	[SVC_DESTROY_QP] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CREATE_CHANNEL] = { sizeof(struct svc_create_channel_req),
				 sizeof(struct svc_handle_rep) },
	[SVC_DESTROY_CHANNEL] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_OPEN] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_CREATE_ID] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_DESTROY_ID] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_LISTEN] = { sizeof(struct svc_cm_listen_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_SEND] = { sizeof(struct svc_cm_send_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_STATE] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_INIT_QP_ATTR] = { sizeof(struct svc_cm_qp_attr_req),
				  sizeof(struct svc_cm_qp_attr_rep) },
	[SVC_CM_RESOLVE] = { sizeof(struct svc_cm_resolve_req), sizeof(struct svc_handle_rep) },
	/* the daemon sends it (a "request" of no reply) on the event socket */
	[SVC_CM_EVENT] = { sizeof(struct svc_cm_event), 0 },
	[SVC_CREATE_AH] = { sizeof(struct svc_create_ah_req), sizeof(struct svc_handle_rep) },
	[SVC_DESTROY_AH] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_CREATE_SRQ] = { sizeof(struct svc_create_srq_req), sizeof(struct svc_create_srq_rep) },
	[SVC_MODIFY_SRQ] = { sizeof(struct svc_modify_srq_req), sizeof(struct svc_handle_rep) },
	[SVC_QUERY_SRQ] = { sizeof(struct svc_handle_req), sizeof(struct svc_query_srq_rep) },
	[SVC_DESTROY_SRQ] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_INIT_AH_FROM_WC] = { sizeof(struct svc_init_ah_req), sizeof(struct svc_init_ah_rep) },
	[SVC_REG_MR_AT] = { sizeof(struct svc_reg_mr_at_req), sizeof(struct svc_reg_mr_rep) },
	[SVC_ATTACH_MCAST] = { sizeof(struct svc_mcast_req), sizeof(struct svc_handle_rep) },
	[SVC_DETACH_MCAST] = { sizeof(struct svc_mcast_req), sizeof(struct svc_handle_rep) },
	[SVC_CM_CREATE_LISTEN] = { sizeof(struct svc_cm_listen_req),
				   sizeof(struct svc_handle_rep) },
	[SVC_ALLOC_MW] = { sizeof(struct svc_alloc_mw_req), sizeof(struct svc_alloc_mw_rep) },
	[SVC_DEALLOC_MW] = { sizeof(struct svc_handle_req), sizeof(struct svc_handle_rep) },
	[SVC_REREG_MR] = { sizeof(struct svc_rereg_mr_req), sizeof(struct svc_reg_mr_rep) },
};

size_t
svc_msg_size(uint16_t type, int reply)
{
	if (type == 0 || type >= SVC_TYPE_END)
		return 0;
	return svc_sizes[type][reply != 0];
}

int
svc_msg_check(const void *msg, size_t n, int want_reply, const char **why)
{
	struct svc_hdr h;
	size_t size;
	const char *text;

	if (n < sizeof(h)) {
		*why = "shorter than a header";
		return -EBADMSG;
	}
	memcpy(&h, msg, sizeof(h));
	size = svc_msg_size(h.type, want_reply);
	if (size == 0) {
		*why = "unknown message type";
		return -EBADMSG;
	}
	if (((h.flags & SVC_F_REPLY) != 0) != (want_reply != 0) || (h.flags & ~SVC_F_REPLY) != 0) {
		*why = "wrong flags";
		return -EBADMSG;
	}
	if (h.len != n) {
		*why = "len is not the size received";
		return -EBADMSG;
	}
	if (!want_reply && h.status != 0) {
		*why = "a request with a status";
		return -EBADMSG;
	}
	if (h.type == SVC_STATUS && want_reply) {
		/* the text's own length: at least its NUL, NUL-terminated */
		if (n <= sizeof(h) || n > size) {
			*why = "status text of a wrong length";
			return -EBADMSG;
		}
		text = (const char *)msg + sizeof(h);
		if (memchr(text, '\0', n - sizeof(h)) == NULL) {
			*why = "status text not terminated";
			return -EBADMSG;
		}
		return 0;
	}
	if (n != size) {
		*why = "wrong length for its type";
		return -EBADMSG;
	}
	return 0;
}

void
svc_msg_init(void *msg, uint16_t type, int reply, uint32_t seq, int32_t status)
{
	struct svc_hdr *h = msg;

	h->type = type;
	h->flags = reply ? SVC_F_REPLY : 0;
	h->len = (uint32_t)svc_msg_size(type, reply);
	h->seq = seq;
	h->status = status;
}

void
svc_hello_init(struct svc_hello_req *q, uint32_t seq, const char *prog)
{
	memset(q, 0, sizeof(*q));
	svc_msg_init(q, SVC_HELLO, 0, seq, 0);
	q->magic = SVC_MAGIC;
	q->major = SVC_VERSION_MAJOR;
	q->minor = SVC_VERSION_MINOR;
	q->pid = (uint32_t)getpid();
	strncpy(q->prog, prog, sizeof(q->prog) - 1);
}

int
svc_sock_path(char *buf, size_t n)
{
	const char *p = getenv(SVC_SOCK_ENV);
	size_t len;

	if (p == NULL || p[0] == '\0')
		p = SVC_SOCK_DEFAULT;
	len = strlen(p);
	if (len >= n || len >= SVC_SOCK_PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf, p, len + 1);
	return 0;
}

int
svc_port_netdev(const char *devargs, char *buf, size_t n)
{
	static const char *const pmds[] = { "net_af_packet", "net_pcap" };
	const char *p;
	size_t i, len;

	buf[0] = '\0';
	for (i = 0; i < sizeof(pmds) / sizeof(pmds[0]); i++)
		if (strncmp(devargs, pmds[i], strlen(pmds[i])) == 0)
			break;
	if (i == sizeof(pmds) / sizeof(pmds[0]))
		return 0;
	for (p = strchr(devargs, ','); p != NULL; p = strchr(p + 1, ',')) {
		if (strncmp(p + 1, "iface=", 6) != 0)
			continue;
		p += 7;
		len = strcspn(p, ",");
		if (len >= n || len >= SVC_NETDEV_MAX)
			return -ENAMETOOLONG;
		memcpy(buf, p, len);
		buf[len] = '\0';
		return 0;
	}
	return 0;
}

int
svc_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

ssize_t
svc_send_fds(int fd, const void *msg, size_t len, const int *fds, unsigned int nfds)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)msg, .iov_len = len };
	union {
		char buf[CMSG_SPACE(SVC_MSG_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int out[SVC_MSG_FDS_MAX];
	unsigned int i, n_out = 0;
	struct cmsghdr *c;
	ssize_t n;

	for (i = 0; i < nfds && i < SVC_MSG_FDS_MAX; i++)
		if (fds[i] >= 0)
			out[n_out++] = fds[i];
	if (n_out > 0) {
		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(n_out * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(n_out * sizeof(int));
		memcpy(CMSG_DATA(c), out, n_out * sizeof(int));
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n;
}

ssize_t
svc_send_fd(int fd, const void *msg, size_t len, int fd_out)
{
	return svc_send_fds(fd, msg, len, &fd_out, 1);
}

static void
fds_close(int *fds, unsigned int nfds)
{
	unsigned int i;

	for (i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/* svc_recv_fds(), and with lost non-NULL: a message whose descriptors the
 * kernel could not give this process (MSG_CTRUNC with room left for them:
 * its RLIMIT_NOFILE reached, scm_detach_fds() dropped them) is returned
 * whole, *lost set, the descriptors that came closed. */
static ssize_t
recv_fds(int fd, void *buf, size_t cap, int flags, int *fds, unsigned int nfds, bool *lost)
{
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	union {
		char buf[CMSG_SPACE(SVC_MSG_FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf };
	struct cmsghdr *c;
	unsigned int i, got = 0, k;
	ssize_t n;

	if (nfds > SVC_MSG_FDS_MAX)
		nfds = SVC_MSG_FDS_MAX;
	for (i = 0; i < nfds; i++)
		fds[i] = -1;
	/* room for nfds only: more is MSG_CTRUNC, which the kernel closes */
	mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
	do
		n = recvmsg(fd, &mh, flags | MSG_TRUNC | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (unsigned int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (i = 0; i < k; i++) {
			int in;

			memcpy(&in, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < nfds)
				fds[got++] = in;
			else
				close(in);
		}
	}
	if ((mh.msg_flags & MSG_CTRUNC) != 0) {
		fds_close(fds, nfds);
		if (lost == NULL || got == nfds)
			/* more descriptors than nfds: what came is closed, the message bad */
			return (ssize_t)-EBADMSG;
		*lost = true;
	}
	if ((size_t)n > cap)
		fds_close(fds, nfds);
	return n;
}

ssize_t
svc_recv_fds(int fd, void *buf, size_t cap, int flags, int *fds, unsigned int nfds)
{
	return recv_fds(fd, buf, cap, flags, fds, nfds, NULL);
}

ssize_t
svc_recv_fd(int fd, void *buf, size_t cap, int flags, int *fd_in)
{
	return svc_recv_fds(fd, buf, cap, flags, fd_in, 1);
}

int
svc_call_fds(int fd, const void *req, int fd_out, void *rep, size_t cap, int *fds_in,
	     unsigned int nfds)
{
	const struct svc_hdr *q = req;
	int got[SVC_MSG_FDS_MAX];
	bool lost = false;
	struct svc_hdr r;
	const char *why;
	unsigned int i;
	ssize_t n;
	int rc;

	if (nfds > SVC_MSG_FDS_MAX)
		nfds = SVC_MSG_FDS_MAX;
	for (i = 0; i < nfds; i++)
		fds_in[i] = -1;
	n = svc_send_fd(fd, req, q->len, fd_out);
	if (n < 0)
		return errno == EPIPE ? -ECONNRESET : -errno;
	/* a reply may carry more than the caller takes: those are closed */
	n = recv_fds(fd, rep, cap, 0, got, SVC_MSG_FDS_MAX, &lost);
	if (n < 0)
		return (int)n;
	rc = 0;
	if (n == 0)
		rc = -ECONNRESET;
	else if ((size_t)n > cap)
		rc = -EMSGSIZE;
	if (rc == 0)
		rc = svc_msg_check(rep, (size_t)n, 1, &why);
	if (rc == 0) {
		memcpy(&r, rep, sizeof(r));
		if (r.type != q->type || r.seq != q->seq)
			rc = -EBADMSG;
		else
			rc = r.status;
	}
	if (rc == 0 && lost)
		rc = -EMFILE;   /* rep is the reply: what it made, the caller gives back */
	for (i = 0; i < SVC_MSG_FDS_MAX; i++) {
		if (rc == 0 && i < nfds)
			fds_in[i] = got[i];
		else if (got[i] >= 0)
			close(got[i]);
	}
	return rc;
}

int
svc_call_fd(int fd, const void *req, int fd_out, void *rep, size_t cap, int *fd_in)
{
	int dummy;

	return svc_call_fds(fd, req, fd_out, rep, cap, fd_in != NULL ? fd_in : &dummy,
			    fd_in != NULL ? 1 : 0);
}

int
svc_call(int fd, const void *req, void *rep, size_t cap)
{
	return svc_call_fd(fd, req, -1, rep, cap, NULL);
}
