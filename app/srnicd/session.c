/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The control socket and its sessions (doc/srnicd.md, "Control protocol").
 * One thread (the control thread) serves every session: no lock. Each
 * message is checked (svc_msg_check(): length, type, flags) before its
 * body is read, HELLO comes first and once, and each handle is looked up
 * in the session's own table. A malformed message closes its session and
 * nothing else; a handle that is not the session's is answered -EBADF.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_lcore.h>

#include "srnic.h"
#include "srnicd.h"

char srnd_tag_listen, srnd_tag_signal;

struct srnd_session {
	int fd;
	uint32_t id;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char prog[SVC_PROG_MAX];
	bool hello;
	uint64_t msgs;
	uint16_t gen;               /* the next handle's generation */
	struct {
		bool open;
		uint16_t gen;
		uint8_t idx;        /* the daemon's device it opened (srnd.dev[idx]) */
	} dev[SVC_SESSION_DEVICES_MAX];
	struct srnd_objs *objs;     /* its verbs objects and rings, from its first MAP_SHM */
	struct srnd_cm *cm;         /* its rdma_cm ids, from its CM_OPEN */
	int rx_fd;                  /* the descriptor that came with the message served */
	int tx_fd[SVC_MSG_FDS_MAX]; /* to go with the reply: [0] the daemon keeps, [1] handed over */
};

static struct srnd_session *sessions[SRND_SESSIONS_MAX];
static struct srnd *srnd_self;  /* the daemon whose sessions these are (reclaim) */
static unsigned int nb_sessions;
static uint32_t next_id = 1;
static uint64_t closed_bad;     /* sessions closed for a malformed message */

unsigned int
srnd_sessions_count(void)
{
	return nb_sessions;
}

uint64_t
srnd_sessions_closed_bad(void)
{
	return closed_bad;
}

/* ---- the socket ---- */

bool
srnd_socket_taken(const struct srnd *d)
{
	int fd = svc_connect(d->sock_path);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The socket, refusing a path another daemon still answers on (its
 * directory was made by srnd_lock(), which runs first). */
int
srnd_sessions_listen(struct srnd *d, const char *group)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct group *gr = NULL;
	mode_t mode = 0600;
	int fd;

	if (strlen(d->sock_path) >= sizeof(sa.sun_path)) {
		srnd_log("--socket %s: longer than a unix socket's path (%zu)", d->sock_path,
			 sizeof(sa.sun_path) - 1);
		return -1;
	}
	unlink(d->sock_path);   /* a dead daemon's: srnd_socket_taken() said no one answers */
	if (group != NULL) {
		gr = getgrnam(group);
		if (gr == NULL) {
			srnd_log("--group %s: no such group (getent group lists them)", group);
			return -1;
		}
	} else {
		gr = getgrnam(SRND_GROUP_DEFAULT);
	}
	strcpy(sa.sun_path, d->sock_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		srnd_log("cannot bind %s: %s", d->sock_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (gr != NULL) {
		mode = 0660;
		if (chown(d->sock_path, (uid_t)-1, gr->gr_gid) != 0)
			srnd_log("cannot give %s to group %s: %s", d->sock_path, gr->gr_name,
				 strerror(errno));
	}
	if (chmod(d->sock_path, mode) != 0 || listen(fd, 64) != 0) {
		srnd_log("cannot listen on %s: %s", d->sock_path, strerror(errno));
		close(fd);
		unlink(d->sock_path);
		return -1;
	}
	srnd_log("control socket %s (mode %03o%s%s)", d->sock_path, (unsigned int)mode,
		 gr != NULL ? ", group " : ": root only", gr != NULL ? gr->gr_name : "");
	d->listen_fd = fd;
	return 0;
}

static void
session_close(int epfd, struct srnd_session *s, const char *why)
{
	unsigned int i;

	if (why != NULL) {
		srnd_log("session %" PRIu32 " (pid %d, %s) closed: %s", s->id, (int)s->pid, s->prog,
			 why);
		closed_bad++;
	}
	epoll_ctl(epfd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	for (i = 0; i < SRND_SESSIONS_MAX; i++) {
		if (sessions[i] == s) {
			sessions[i] = NULL;
			nb_sessions--;
			break;
		}
	}
	srnd_session_free(s);
}

int
srnd_sessions_accept(struct srnd *d, int epfd)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP };
	struct srnd_session *s;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char path[64];
	unsigned int i;
	ssize_t n;
	int fd, cfd;

	fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (nb_sessions >= SRND_SESSIONS_MAX) {
		srnd_log("a session refused: %u at once already (SRND_SESSIONS_MAX)", nb_sessions);
		close(fd);
		return 0;
	}
	s = srnd_session_new(fd);
	if (s == NULL) {
		close(fd);
		return -ENOMEM;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
		s->pid = cred.pid;
		s->uid = cred.uid;
		s->gid = cred.gid;
	}
	/* the program's name as the kernel has it, not as it claims */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)s->pid);
	cfd = open(path, O_RDONLY | O_CLOEXEC);
	if (cfd >= 0) {
		n = read(cfd, s->prog, sizeof(s->prog) - 1);
		if (n > 0) {
			s->prog[n] = '\0';
			s->prog[strcspn(s->prog, "\n")] = '\0';
		}
		close(cfd);
	}
	ev.data.ptr = s;
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		close(fd);
		free(s);
		return -errno;
	}
	for (i = 0; i < SRND_SESSIONS_MAX; i++) {
		if (sessions[i] == NULL) {
			sessions[i] = s;
			nb_sessions++;
			break;
		}
	}
	return 1;
}

void
srnd_sessions_close_all(struct srnd *d)
{
	unsigned int i;

	for (i = 0; i < SRND_SESSIONS_MAX; i++) {
		if (sessions[i] != NULL) {
			close(sessions[i]->fd);
			srnd_session_free(sessions[i]);
			sessions[i] = NULL;
		}
	}
	nb_sessions = 0;
	if (d->listen_fd >= 0) {
		close(d->listen_fd);
		unlink(d->sock_path);
		d->listen_fd = -1;
	}
}

void
srnd_sessions_fatal(struct srnd *d)
{
	unsigned int i;

	for (i = 0; i < SRND_SESSIONS_MAX; i++)
		if (sessions[i] != NULL)
			srnd_objs_hide(sessions[i]->objs);
	srnd_engine_quiesce(d);
	for (i = 0; i < SRND_SESSIONS_MAX; i++)
		if (sessions[i] != NULL)
			srnd_objs_fatal(sessions[i]->objs);
}

/* ---- handles ---- */

static uint32_t
handle_make(unsigned int slot, uint16_t gen)
{
	return ((uint32_t)gen << 16) | (slot + 1);
}

/* The session's open device a handle names: its index in d->dev[], or -EBADF. */
static int
handle_check(const struct srnd_session *s, uint32_t handle)
{
	unsigned int slot = (handle & 0xffff) - 1;

	if ((handle & 0xffff) == 0 || slot >= SVC_SESSION_DEVICES_MAX || !s->dev[slot].open ||
	    s->dev[slot].gen != handle >> 16)
		return -EBADF;
	return s->dev[slot].idx;
}

/* The devices s holds open, bit i for d->dev[i] */
static uint32_t
devices_open(const struct srnd_session *s)
{
	uint32_t mask = 0;
	unsigned int k;

	for (k = 0; k < SVC_SESSION_DEVICES_MAX; k++)
		if (s->dev[k].open)
			mask |= 1u << s->dev[k].idx;
	return mask;
}

int
srnd_session_qp_by_num(const struct srnd_session *s, const struct srnd_dev *dv, uint32_t qpn,
		       enum ibv_qp_type *type, enum ibv_qp_state *state)
{
	unsigned int i;

	if (srnd_objs_qp_by_num(s->objs, dv, qpn, type, state) == 0)
		return 0;
	/* a program's rdma_cm has a context (a session) of its own beside
	 * the program's (UCX's, an application's ibv_open_device()): their
	 * QPs are the same process's, which SO_PEERCRED vouches for: its pid
	 * and its uid, so that a session outliving its process (its socket
	 * passed on or inherited) is not another user's whose process got
	 * the pid again */
	for (i = 0; s->pid > 0 && i < SRND_SESSIONS_MAX; i++)
		if (sessions[i] != NULL && sessions[i] != s && sessions[i]->pid == s->pid &&
		    sessions[i]->uid == s->uid &&
		    srnd_objs_qp_by_num(sessions[i]->objs, dv, qpn, type, state) == 0)
			return 0;
	return -EINVAL;
}

/* ---- status ---- */

static const char *
basename_of(const char *path)
{
	const char *b = strrchr(path, '/');

	return b != NULL ? b + 1 : path;
}

const char *
srnd_port_state_name(const struct ibv_port_attr *pa)
{
	if (pa->state == IBV_PORT_ACTIVE)
		return "ACTIVE";
	if (pa->phys_state == SRNIC_PORT_PHYS_POLLING)
		return "DOWN (polling: no peer yet)";
	return "DOWN";
}

bool
srnd_session_info(unsigned int slot, struct srnd_session_info *si)
{
	const struct srnd_session *s = slot < SRND_SESSIONS_MAX ? sessions[slot] : NULL;
	unsigned int k;

	if (s == NULL)
		return false;
	si->id = s->id;
	si->pid = s->pid;
	si->uid = s->uid;
	snprintf(si->prog, sizeof(si->prog), "%s", s->prog);
	for (si->devices_open = 0, k = 0; k < SVC_SESSION_DEVICES_MAX; k++)
		si->devices_open += s->dev[k].open;
	si->devices = devices_open(s);
	srnd_objs_held(s->objs, &si->qps, &si->mrs, &si->wqes);
	si->cm_ids = s->cm != NULL ? srnd_cm_ids(s->cm) : 0;
	si->msgs = s->msgs;
	return true;
}

/* status' names of the devices in mask: "srnic0,srnic1", "-" for none */
static void
devices_names(const struct srnd *d, uint32_t mask, char *t, size_t n)
{
	unsigned int i;
	size_t off = 0;

	t[0] = '\0';
	for (i = 0; i < d->nb_devs && off + 1 < n; i++)
		if ((mask & (1u << i)) != 0)
			off += (size_t)snprintf(t + off, n - off, "%s%s", off > 0 ? "," : "",
						d->dev[i].name);
	if (off == 0)
		snprintf(t, n, "-");
}

static void
status_text(struct srnd *d, char *t, size_t n)
{
	struct ibv_port_attr pa;
	union ibv_gid gid;
	char g[2][64], where[64], names[SVC_DEVICES_MAX * SVC_NAME_MAX];
	uint64_t cpu = srnd_cpu_us() - d->ready_cpu_us, wall = srnd_wall_us() - d->ready_wall_us;
	size_t off = 0;
	struct srnd_session_info si;
	unsigned int i, k, lc, v;
	int rc;

#define ADD(...) do { \
		rc = snprintf(t + off, n - off, __VA_ARGS__); \
		if (rc > 0) \
			off = (size_t)rc >= n - off ? n - 1 : off + (size_t)rc; \
	} while (0)
	ADD("srnicd pid %d socket %s\n", (int)getpid(), d->sock_path);
	ADD("telemetry %s/dpdk_telemetry.v2 (dpdk-telemetry.py -f %s: /srnicd/info, "
	    "/srnicd/devices, /srnicd/sessions, /srnicd/session,ID, /srnic/stats,%s)\n",
	    rte_eal_get_runtime_dir(), basename_of(rte_eal_get_runtime_dir()), d->dev[0].name);
	/* every device, in LIST_DEVICES' order; the engine's line after them
	 * (one thread serves them all) */
	for (v = 0; v < d->nb_devs; v++) {
		const struct srnd_dev *dv = &d->dev[v];

		memset(&pa, 0, sizeof(pa));
		srnic_dev_query_port(dv->sdev, &pa);
		for (i = 0; i < 2; i++) {
			srnic_dev_gid(dv->sdev, (int)i, &gid);
			for (k = 0; k < 8; k++)
				snprintf(g[i] + k * 5, 6, "%02x%02x%s", gid.raw[2 * k],
					 gid.raw[2 * k + 1], k < 7 ? ":" : "");
		}
		ADD("device %s port %s ip %s\n", dv->name, dv->devargs, dv->ip);
		ADD("  link %s mtu %u\n", srnd_port_state_name(&pa),
		    pa.active_mtu == IBV_MTU_4096 ? 4096 : 128u << pa.active_mtu);
		ADD("  gid[0] %s\n  gid[1] %s\n", g[0], g[1]);
	}
	lc = atomic_load(&d->eng_thread_lcore);
	if (d->eng_lcore < RTE_MAX_LCORE)
		snprintf(where, sizeof(where), "on a worker lcore");
	else if (lc < RTE_MAX_LCORE)
		snprintf(where, sizeof(where), "on a thread (lcore %u)", lc);
	else if (lc == SRND_LCORE_STARTING)
		snprintf(where, sizeof(where), "on a thread (starting)");
	else
		snprintf(where, sizeof(where), "on a thread (no lcore id: no mbuf cache)");
	ADD("  engine %s polls %" PRIu64 " naps %" PRIu64 " waiting_naps %" PRIu64
	    " yields %" PRIu64 " woken %" PRIu64 " pollers_woken %" PRIu64 " handoffs %" PRIu64
	    " wakes_deferred %" PRIu64
	    " pollers_none %" PRIu64 " wakes_bounded %" PRIu64 " wakes_mixed %" PRIu64
	    " sq_posts %" PRIu64 " sq_full %" PRIu64 " ring_flushed %" PRIu64 "\n",
	    where, atomic_load(&d->eng_polls), atomic_load(&d->eng_naps),
	    atomic_load(&d->eng_waiting_naps), atomic_load(&d->eng_yields),
	    atomic_load(&d->eng_woken), atomic_load(&d->eng_poll_wakes),
	    atomic_load(&d->eng_handoffs), atomic_load(&d->eng_wakes_deferred),
	    atomic_load(&d->eng_poll_none), atomic_load(&d->eng_wakes_bounded),
	    atomic_load(&d->eng_wakes_mixed), atomic_load(&d->eng_sq_posts),
	    atomic_load(&d->eng_sq_full), atomic_load(&d->eng_ring_flushed));
	ADD("cpu_us %" PRIu64 " wall_us %" PRIu64 " (since ready)\n", cpu, wall);
	ADD("sessions %u closed_bad %" PRIu64 " (closed for a bad message)\n", nb_sessions,
	    closed_bad);
	ADD("objects pds %" PRIu64 " cqs %" PRIu64 " qps %" PRIu64 " mrs %" PRIu64
	    " mr_bytes %" PRIu64 " shm_bytes %" PRIu64 " bad_ring %" PRIu64 " ahs %" PRIu64
	    " srqs %" PRIu64 " mws %" PRIu64 "\n",
	    srnd_counts()->pds, srnd_counts()->cqs, atomic_load(&srnd_counts()->qps),
	    srnd_counts()->mrs, srnd_counts()->mr_bytes, srnd_counts()->shm_bytes,
	    atomic_load(&srnd_counts()->bad_ring), srnd_counts()->ahs, srnd_counts()->srqs,
	    srnd_counts()->mws);
	ADD("async_events %" PRIu64 " async_drop %" PRIu64 " wake_full %" PRIu64
	    " (a wake a session's pipe did not take: full, its reader has one pending)"
	    " wake_closed %" PRIu64 " (its read end closed by the program)\n",
	    srnd_counts()->async_events, srnd_counts()->async_drop,
	    atomic_load(&srnd_counts()->wake_full), atomic_load(&srnd_counts()->wake_closed));
	off += srnd_cm_status(d, t + off, n - off);
	ADD("mrs_elsewhere %" PRIu64 " (MRs mapped elsewhere than the program's addresses, "
	    "registered at them)\n", srnd_counts()->mrs_elsewhere);
	ADD("mrs_retired %" PRIu64 " (old MR objects still under packets in flight: their "
	    "ranges mapped, in mr_bytes once, until they are back)\n",
	    srnd_counts()->mrs_retired);
	ADD("mrs_dereg_failed %" PRIu64 " (MRs a session's end could not deregister: a bug, "
	    "left mapped; see the log)\n", srnd_counts()->mrs_dereg_failed);
	ADD("dev_mixed %" PRIu64 " (requests refused for naming objects of two devices: "
	    "EINVAL)\n", srnd_counts()->dev_mixed);
	for (i = 0; i < SRND_SESSIONS_MAX; i++) {
		if (!srnd_session_info(i, &si))
			continue;
		devices_names(d, si.devices, names, sizeof(names));
		ADD("  session %" PRIu32 " pid %d uid %u program %s devices_open %u qps %u "
		    "mrs %u wqes %" PRIu64 " cm_ids %u devices %s\n", si.id, (int)si.pid,
		    (unsigned int)si.uid, si.prog, si.devices_open, si.qps, si.mrs, si.wqes,
		    si.cm_ids, names);
	}
#undef ADD
}

/* ---- messages ---- */

/* What one session may hold, not what the device holds: ibv_query_device
 * of an attached program reports its session's limits (lib/svc). */
static void
session_limits(struct ibv_device_attr *a)
{
#define CLAMP(f, v) (a->f = RTE_MIN(a->f, (int)(v)))
	CLAMP(max_qp, SVC_SESSION_QPS_MAX);
	CLAMP(max_cq, SVC_SESSION_CQS_MAX);
	CLAMP(max_mr, SVC_SESSION_MRS_MAX);
	CLAMP(max_pd, SVC_SESSION_PDS_MAX);
	CLAMP(max_qp_wr, SVC_RING_WR_MAX);
	CLAMP(max_cqe, SVC_RING_CQE_MAX - 1);
	CLAMP(max_sge, SVC_WQE_SGE_MAX);
	CLAMP(max_ah, SVC_SESSION_AHS_MAX);
	CLAMP(max_srq, SVC_SESSION_SRQS_MAX);
	CLAMP(max_srq_wr, SVC_RING_SRQ_WR_MAX);
	CLAMP(max_srq_sge, SVC_WQE_SGE_MAX);
	CLAMP(max_mcast_grp, SRND_SESSION_MCAST_MAX);
	CLAMP(max_total_mcast_qp_attach, SRND_SESSION_MCAST_MAX);
#undef CLAMP
	a->max_mr_size = RTE_MIN(a->max_mr_size, SVC_SESSION_MR_BYTES_MAX);
}

/* Serve one checked request into rep; NULL, or why the session must go. */
static const char *
serve(struct srnd *d, struct srnd_session *s, const void *msg, union srnd_rep *rep)
{
	struct srnd_dev *dv = NULL;
	struct svc_hdr h;
	int32_t st = 0;
	unsigned int i;

	memcpy(&h, msg, sizeof(h));
	if (!s->hello && h.type != SVC_HELLO)
		return "a message before HELLO";
	if (s->hello && h.type == SVC_HELLO)
		return "a second HELLO";
	svc_msg_init(rep, h.type, 1, h.seq, 0);
	switch (h.type) {
	case SVC_HELLO: {
		const struct svc_hello_req *q = msg;

		if (q->magic != SVC_MAGIC)
			return "HELLO without srnicd's magic";
		if (q->major != SVC_VERSION_MAJOR) {
			/* answered, then closed: the library can say why */
			rep->h.status = -EPROTONOSUPPORT;
			rep->hello.major = SVC_VERSION_MAJOR;
			rep->hello.minor = SVC_VERSION_MINOR;
			return NULL;
		}
		s->hello = true;
		rep->hello.major = SVC_VERSION_MAJOR;
		rep->hello.minor = SVC_VERSION_MINOR;
		rep->hello.session = s->id;
		rep->hello.nb_devices = d->nb_devs;
		return NULL;
	}
	case SVC_LIST_DEVICES: {
		struct ibv_device_attr a;

		rep->list.nb = d->nb_devs;
		for (i = 0; i < d->nb_devs; i++) {
			snprintf(rep->list.dev[i].name, sizeof(rep->list.dev[i].name), "%s",
				 d->dev[i].name);
			if (srnic_dev_query(d->dev[i].sdev, &a) == 0)
				rep->list.dev[i].guid = a.node_guid;
			rep->list.dev[i].index = i;
			snprintf(rep->list.dev[i].netdev, sizeof(rep->list.dev[i].netdev), "%s",
				 d->dev[i].netdev);
		}
		return NULL;
	}
	case SVC_OPEN_DEVICE: {
		const struct svc_open_req *q = msg;

		if (q->index >= d->nb_devs) {
			rep->h.status = -ENODEV;
			return NULL;
		}
		for (i = 0; i < SVC_SESSION_DEVICES_MAX && s->dev[i].open; i++)
			;
		if (i == SVC_SESSION_DEVICES_MAX) {
			rep->h.status = -EMFILE;
			return NULL;
		}
		s->dev[i].open = true;
		s->dev[i].idx = (uint8_t)q->index;
		s->dev[i].gen = s->gen++;
		if (s->gen == 0)
			s->gen = 1;
		rep->handle.handle = handle_make(i, s->dev[i].gen);
		if (s->objs != NULL)
			srnd_objs_set_devices(s->objs, devices_open(s));
		return NULL;
	}
	case SVC_CLOSE_DEVICE: {
		const struct svc_handle_req *q = msg;

		st = handle_check(s, q->handle);
		if (st >= 0) {
			s->dev[(q->handle & 0xffff) - 1].open = false;
			if (s->objs != NULL)
				srnd_objs_set_devices(s->objs, devices_open(s));
			st = 0;
		}
		break;
	}
	case SVC_QUERY_DEVICE: {
		const struct svc_handle_req *q = msg;

		st = handle_check(s, q->handle);
		if (st >= 0)
			st = srnic_dev_query(d->dev[st].sdev, &rep->qdev.attr);
		if (st == 0)
			session_limits(&rep->qdev.attr);
		break;
	}
	case SVC_QUERY_PORT: {
		const struct svc_query_port_req *q = msg;

		st = handle_check(s, q->handle);
		if (st >= 0 && q->port != 1)
			st = -EINVAL;
		if (st >= 0)
			st = srnic_dev_query_port(d->dev[st].sdev, &rep->qport.attr);
		break;
	}
	case SVC_QUERY_GID: {
		const struct svc_query_gid_req *q = msg;

		st = handle_check(s, q->handle);
		if (st >= 0 && (q->port != 1 || q->index >= SRNIC_GID_TBL_LEN))
			st = -EINVAL;
		if (st >= 0)
			st = srnic_dev_gid(d->dev[st].sdev, (int)q->index, &rep->qgid.gid);
		rep->qgid.type = IBV_GID_TYPE_ROCE_V2;
		break;
	}
	case SVC_STATUS:
		status_text(d, rep->status.text, sizeof(rep->status.text));
		rep->h.len = (uint32_t)(sizeof(rep->h) + strlen(rep->status.text) + 1);
		return NULL;
	case SVC_INIT_AH_FROM_WC: {
		const struct svc_init_ah_req *q = msg;
		struct ibv_wc wc = q->wc;

		/* srnic reads the GRH area and the CQE's flags, nothing else */
		_Static_assert(SVC_GRH_LEN == SRNIC_GRH_LEN, "the GRH area is srnic's");
		st = handle_check(s, q->dev);
		if (st >= 0)
			st = srnic_init_ah_from_wc(d->dev[st].sdev, &wc, q->grh,
						   &rep->init_ah.attr);
		break;
	}
	case SVC_MAP_SHM:
	case SVC_ALLOC_PD:
	case SVC_CREATE_CQ:
	case SVC_CREATE_CHANNEL:
		/* these name the open device (the others name an object of it) */
		st = handle_check(s, h.type == SVC_CREATE_CQ ?
				  ((const struct svc_create_cq_req *)msg)->dev :
				  h.type == SVC_CREATE_CHANNEL ?
				  ((const struct svc_create_channel_req *)msg)->dev :
				  ((const struct svc_handle_req *)msg)->handle);
		if (st < 0)
			break;
		dv = &d->dev[st];
		/* fall through */
	case SVC_DEALLOC_PD:
	case SVC_REG_MR:
	case SVC_REG_MR_AT:
	case SVC_DEREG_MR:
	case SVC_DESTROY_CQ:
	case SVC_CREATE_QP:
	case SVC_MODIFY_QP:
	case SVC_QUERY_QP:
	case SVC_DESTROY_QP:
	case SVC_ATTACH_MCAST:
	case SVC_DETACH_MCAST:
	case SVC_DESTROY_CHANNEL:
	case SVC_CREATE_AH:
	case SVC_DESTROY_AH:
	case SVC_CREATE_SRQ:
	case SVC_MODIFY_SRQ:
	case SVC_QUERY_SRQ:
	case SVC_DESTROY_SRQ:
	case SVC_ALLOC_MW:
	case SVC_DEALLOC_MW:
	case SVC_REREG_MR:
		srnd_self = d;
		if (s->objs == NULL) {
			if ((s->objs = srnd_objs_new()) == NULL) {
				st = -ENOMEM;
				break;
			}
			srnd_objs_set_devices(s->objs, devices_open(s));
		}
		st = srnd_objs_serve(d, dv, s->objs, msg, rep, &s->rx_fd, s->tx_fd);
		break;
	case SVC_CM_OPEN:
	case SVC_CM_CREATE_ID:
	case SVC_CM_CREATE_LISTEN:
	case SVC_CM_RESOLVE:
		/* these name the open device (the others an id of the session's) */
		st = handle_check(s, h.type == SVC_CM_RESOLVE ?
				  ((const struct svc_cm_resolve_req *)msg)->dev :
				  ((const struct svc_handle_req *)msg)->handle);
		if (st < 0)
			break;
		dv = &d->dev[st];
		/* fall through */
	case SVC_CM_DESTROY_ID:
	case SVC_CM_LISTEN:
	case SVC_CM_SEND:
	case SVC_CM_STATE:
	case SVC_CM_INIT_QP_ATTR:
		st = srnd_cm_serve(d, dv, s, &s->cm, msg, rep, s->tx_fd);
		break;
	case SVC_CM_EVENT:
		return "a CM event, which only the daemon sends";
	default:
		return "unknown message type";   /* svc_msg_check() let none through */
	}
	rep->h.status = st;
	return NULL;
}

const char *
srnd_session_input(struct srnd *d, struct srnd_session *s, const void *buf, size_t n,
		   union srnd_rep *rep)
{
	const char *why;

	if (svc_msg_check(buf, n, 0, &why) != 0)
		return why;
	s->msgs++;
	memset(rep, 0, sizeof(*rep));
	return serve(d, s, buf, rep);
}

struct srnd_session *
srnd_session_new(int fd)
{
	struct srnd_session *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->fd = fd;
	s->rx_fd = s->tx_fd[0] = s->tx_fd[1] = -1;
	s->id = next_id++;
	s->gen = 1;
	strcpy(s->prog, "?");
	return s;
}

void
srnd_session_free(struct srnd_session *s)
{
	/* section 8's order: the rdma_cm ids (DREQs to the peers) before the QPs */
	srnd_cm_reclaim(s->cm);
	if (s->objs != NULL)
		srnd_objs_reclaim(srnd_self, s->objs);
	if (s->rx_fd >= 0)
		close(s->rx_fd);
	free(s);
}

void
srnd_session_event(struct srnd *d, int epfd, void *session, uint32_t events)
{
	struct srnd_session *s = session;
	static union srnd_rep rep;
	uint8_t buf[SRND_REQ_MAX];
	const char *why;
	ssize_t n;

	for (;;) {
		n = svc_recv_fd(s->fd, buf, sizeof(buf), MSG_DONTWAIT, &s->rx_fd);
		if (n == -EAGAIN)
			break;
		if (n == 0 || (n < 0 && n != -EBADMSG)) {
			/* closed (exit, kill, crash): what it held is reclaimed */
			session_close(epfd, s, NULL);
			return;
		}
		if (n < 0 || (size_t)n > sizeof(buf)) {
			session_close(epfd, s, "a message longer than any request, or with more "
				      "than one file descriptor");
			return;
		}
		s->tx_fd[0] = s->tx_fd[1] = -1;
		why = srnd_session_input(d, s, buf, (size_t)n, &rep);
		if (why == NULL && s->rx_fd >= 0)
			why = "a file descriptor with a message that takes none";
		if (why != NULL) {
			if (s->tx_fd[1] >= 0)
				close(s->tx_fd[1]);
			session_close(epfd, s, why);
			return;
		}
		n = svc_send_fds(s->fd, &rep, rep.h.len, s->tx_fd, SVC_MSG_FDS_MAX);
		/* a pipe's read end is the program's alone: never a reader here */
		if (s->tx_fd[1] >= 0)
			close(s->tx_fd[1]);
		if (n != (ssize_t)rep.h.len) {
			/* a peer gone in the middle of its call (killed after its
			 * request) is a session's end, not a bad message */
			session_close(epfd, s, errno == EPIPE || errno == ECONNRESET ? NULL :
					       "its replies are not read");
			return;
		}
		if (rep.h.type == SVC_HELLO && rep.h.status != 0) {
			session_close(epfd, s, "protocol version not spoken here");
			return;
		}
	}
	if ((events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) != 0)
		session_close(epfd, s, NULL);
}
