/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * srnicd's control protocol (doc/srnicd.md, "Control protocol"): what the
 * daemon (app/srnicd) and the attached side of srnic's libibverbs.so.1
 * (drivers/verbs/verbs_attach.c) say to each other over a unix
 * SOCK_SEQPACKET socket, one message per packet.
 *
 * Every message is a struct svc_hdr and the type's fixed body; its len is
 * the whole message and must be exactly the type's size
 * (svc_msg_size()). A reply repeats the request's type and seq and carries
 * status 0 or a negative errno. The receiver checks a message with
 * svc_msg_check() before it reads any field of the body.
 *
 * libc and rdma-core's <infiniband/verbs.h> types only: the floor below
 * every other (no DPDK, no srnic object), so both sides may include it.
 */
#ifndef SRNIC_SVC_H
#define SRNIC_SVC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#define SVC_MAGIC 0x534e5244u          /* "SNRD" */
#define SVC_VERSION_MAJOR 1            /* a HELLO of another major is refused */
#define SVC_VERSION_MINOR 0
#define SVC_SOCK_DEFAULT "/run/srnic/srnicd.sock"
#define SVC_SOCK_ENV "SRNIC_DAEMON_SOCKET"  /* the application's override */
#define SVC_SOCK_PATH_MAX 108          /* sockaddr_un.sun_path */
#define SVC_DEVICES_MAX 8              /* devices a daemon serves */
#define SVC_SESSION_DEVICES_MAX 16     /* OPEN_DEVICE handles per session */
#define SVC_NAME_MAX 64                /* a device's name, with its NUL */
#define SVC_PROG_MAX 16                /* a program's name (comm), with its NUL */
#define SVC_STATUS_TEXT_MAX 16384      /* the STATUS reply's text */
#define SVC_MSG_MAX (sizeof(struct svc_hdr) + SVC_STATUS_TEXT_MAX)

enum svc_type {
	SVC_HELLO = 1,
	SVC_LIST_DEVICES,
	SVC_OPEN_DEVICE,
	SVC_CLOSE_DEVICE,
	SVC_QUERY_DEVICE,
	SVC_QUERY_PORT,
	SVC_QUERY_GID,
	SVC_STATUS,
	SVC_TYPE_END,
};

struct svc_hdr {
	uint16_t type;              /* enum svc_type */
	uint16_t flags;             /* SVC_F_REPLY in a reply */
	uint32_t len;               /* the whole message, header included */
	uint32_t seq;               /* chosen by the requester, repeated in the reply */
	int32_t status;             /* reply: 0 or a negative errno; request: 0 */
};

#define SVC_F_REPLY 0x1

struct svc_hello_req {
	struct svc_hdr h;
	uint32_t magic;             /* SVC_MAGIC */
	uint16_t major, minor;
	uint32_t pid;               /* informational: the daemon trusts SO_PEERCRED */
	char prog[SVC_PROG_MAX];
};

struct svc_hello_rep {
	struct svc_hdr h;
	uint16_t major, minor;
	uint32_t session;           /* the daemon's id of this session */
	uint32_t nb_devices;
};

struct svc_list_req {
	struct svc_hdr h;
};

struct svc_dev_info {
	char name[SVC_NAME_MAX];
	uint64_t guid;              /* node GUID, network order as ibv_get_device_guid() */
	uint32_t index;
	uint32_t pad;
};

struct svc_list_rep {
	struct svc_hdr h;
	uint32_t nb;
	uint32_t pad;
	struct svc_dev_info dev[SVC_DEVICES_MAX];
};

struct svc_open_req {
	struct svc_hdr h;
	uint32_t index;             /* svc_dev_info.index */
};

/* A reply that carries a handle (OPEN_DEVICE) or nothing (CLOSE_DEVICE). */
struct svc_handle_rep {
	struct svc_hdr h;
	uint32_t handle;
};

/* CLOSE_DEVICE, QUERY_DEVICE */
struct svc_handle_req {
	struct svc_hdr h;
	uint32_t handle;
};

struct svc_query_device_rep {
	struct svc_hdr h;
	struct ibv_device_attr attr;
};

struct svc_query_port_req {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t port;
};

struct svc_query_port_rep {
	struct svc_hdr h;
	struct ibv_port_attr attr;
};

struct svc_query_gid_req {
	struct svc_hdr h;
	uint32_t handle;
	uint32_t port;
	uint32_t index;
};

struct svc_query_gid_rep {
	struct svc_hdr h;
	union ibv_gid gid;
	uint32_t type;              /* enum ibv_gid_type */
};

struct svc_status_req {
	struct svc_hdr h;
};

/* The reply's len is the header plus the text, NUL included, at most
 * SVC_STATUS_TEXT_MAX: the one type whose size varies. */
struct svc_status_rep {
	struct svc_hdr h;
	char text[SVC_STATUS_TEXT_MAX];
};

/** The size of a message of type, request or reply (0: no such type). */
size_t svc_msg_size(uint16_t type, int reply);

/**
 * Check a received message of n bytes before any field of its body is
 * read: a whole header, a known type, the reply flag as expected, len ==
 * n and the type's size (a STATUS reply: NUL-terminated text within
 * it). 0, or a negative errno and, in *why, what was wrong.
 */
int svc_msg_check(const void *msg, size_t n, int want_reply, const char **why);

/** Fill a message's header: type, len (the type's size), seq, status. */
void svc_msg_init(void *msg, uint16_t type, int reply, uint32_t seq, int32_t status);

/** A HELLO of this protocol version from this process, named prog. */
void svc_hello_init(struct svc_hello_req *q, uint32_t seq, const char *prog);

/**
 * The socket's path: env SVC_SOCK_ENV if set and not empty, else
 * SVC_SOCK_DEFAULT, into buf (n bytes). -ENAMETOOLONG if it does not fit
 * a sockaddr_un.
 */
int svc_sock_path(char *buf, size_t n);

/**
 * A blocking client's call on socket fd: send req (its len), receive the
 * reply of the same type and seq into rep (cap bytes) and check it. The
 * reply's status (0 or a negative errno), or a negative errno of the
 * socket (-ECONNRESET: the daemon closed it).
 */
int svc_call(int fd, const void *req, void *rep, size_t cap);

/** Connect to the daemon at path: a socket, or a negative errno. */
int svc_connect(const char *path);

#endif /* SRNIC_SVC_H */
