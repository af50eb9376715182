/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic's librdmacm.so.1: rdma_cm (Linux's cma.c semantics, rdma-core's
 * librdmacm calls) over srnic's CM (lib/cm, the IB CM protocol on QP1) on
 * the device of srnic's libibverbs.so.1. doc/rdmacm.md has the design; in
 * short:
 * - One lock (cma_lock) over every id, channel and event queue.
 * - The CM's handlers run on the progress thread of libibverbs (inside
 *   srnic_cm_poll()): they only queue events (and make the new id of a
 *   connection request). What the events need done (the QP to RTR/RTS and
 *   the RTU on a REP, the QP to ERR on a REJ) happens in the application's
 *   rdma_get_cm_event(), as rdma-core's librdmacm does.
 * - Address resolution asks srnic's neighbour table; the progress thread's
 *   CM hook (cma_tick) asks again until it answers or the timeout passes.
 * - cm_ops->destroy_id() waits for a running handler, which may wait for
 *   cma_lock: it is never called with cma_lock held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_ether.h>

#include "rdmacm.h"
#include "test_hooks.h"

pthread_mutex_t cma_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cma_acked = PTHREAD_COND_INITIALIZER;

/* A REQ or SIDR_REQ that came to a port bound and not yet listened on
 * (attached: rdma_bind_addr() takes the port's CM listen in the daemon),
 * kept for the port's rdma_listen(): its CM id (no context meanwhile)
 * and the event, its private data copied. */
struct cma_held {
	TAILQ_ENTRY(cma_held) link;
	struct cma_id *owner;           /* the id whose cm_id took it */
	struct srnic_cm_id *cmid;
	struct srnic_cm_event ev;
	uint8_t pdata[SRNIC_CM_SIDR_REQ_PDATA];  /* REQ's is shorter */
};

_Static_assert(SRNIC_CM_SIDR_REQ_PDATA >= SRNIC_CM_REQ_PDATA, "a held REQ's private data fits");

/* The process's one device, as rdma-core keeps a cma_device per device. */
static struct {
	bool inited;
	int err;                        /* errno of a failed start */
	struct srnic_verbs_private priv;
	bool attached;                  /* srnicd's device: its CM (cma_attach.c) */
	struct ibv_context *verbs;
	struct ibv_pd *pd;              /* for rdma_create_qp/_srq with pd NULL */
	/* 0: fe80:: from the MAC; 1: SRNIC_IP(6); 2: SRNIC_IP6 beside SRNIC_IP, else empty */
	union ibv_gid gid[SRNIC_GID_TBL_LEN];
	enum ibv_mtu mtu;
	uint8_t max_resp_res, max_init_depth;
	TAILQ_HEAD(, cma_id) ids;
	TAILQ_HEAD(, cma_held) held;    /* requests before their port's rdma_listen() */
	bool trace;                     /* SRNIC_RDMACM_TRACE=1: a line per listen */
#ifdef SRNIC_TEST_HOOKS
	bool hold_rtu;                  /* a test hook: see hold_rtu() */
	bool hold_destroy;              /* a test hook: see hold_destroy() */
#endif
	/* SRNIC_RDMACM_PORT_RANGE: the ports a port-0 bind picks from */
	uint16_t port_lo, port_hi;
} cma = { .ids = TAILQ_HEAD_INITIALIZER(cma.ids), .held = TAILQ_HEAD_INITIALIZER(cma.held) };

static uint64_t now_ms(void);

void
cma_log(const char *fmt, ...)
{
	char line[CMA_LOG_LINE_MAX];
	size_t n = 0;
	va_list ap;
	int k;

	/* one write of the whole line: two processes (a program's forked
	 * children) never interleave inside each other's lines */
	k = snprintf(line, sizeof(line), "srnic librdmacm: ");
	n = k > 0 ? (size_t)k : 0;
	if (cma.trace && n < sizeof(line)) {
		k = snprintf(line + n, sizeof(line) - n, "[%llu ms] ",
			     (unsigned long long)(now_ms() % 1000000));
		n = k > 0 ? RTE_MIN(n + (size_t)k, sizeof(line) - 1) : n;
	}
	if (n < sizeof(line)) {
		va_start(ap, fmt);
		k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		va_end(ap);
		n = k > 0 ? RTE_MIN(n + (size_t)k, sizeof(line) - 2) : n;
	}
	line[n++] = '\n';
	line[n] = '\0';
	fputs(line, stderr);
}

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t
rand24(void)
{
	return (uint32_t)random() & 0xffffff;
}

static void cma_tick(void *arg);
static unsigned int cma_resolve_step(void);

/* ---- the CM: the process's device's, or the daemon's (cma_attach.c) ---- */

static struct srnic_cm_id *
embedded_create_id(srnic_cm_handler handler, void *context)
{
	return srnic_cm_create_id(cma.priv.cm, handler, context);
}

static struct srnic_cm_id *
embedded_create_listen(srnic_cm_handler handler, void *context, uint64_t service_id,
		       uint64_t service_mask)
{
	struct srnic_cm_id *cmid = srnic_cm_create_id(cma.priv.cm, handler, context);
	int rc;

	if (cmid == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	rc = srnic_cm_listen(cmid, service_id, service_mask);
	if (rc != 0) {
		srnic_cm_destroy_id(cmid);
		errno = -rc;
		return NULL;
	}
	return cmid;
}

static int
embedded_resolve_neigh(const union ibv_gid *gid)
{
	struct rte_ether_addr mac;

	return srnic_dev_resolve_neigh(cma.priv.sdev, gid, &mac);
}

static const struct cma_cm_ops embedded_ops = {
	.create_id = embedded_create_id,
	.destroy_id = srnic_cm_destroy_id,
	.id_context = srnic_cm_id_context,
	.id_set_context = srnic_cm_id_set_context,
	.id_state = srnic_cm_id_state,
	.create_listen = embedded_create_listen,
	.send_req = srnic_cm_send_req,
	.send_rep = srnic_cm_send_rep,
	.send_rtu = srnic_cm_send_rtu,
	.send_rej = srnic_cm_send_rej,
	.send_mra = srnic_cm_send_mra,
	.send_dreq = srnic_cm_send_dreq,
	.send_drep = srnic_cm_send_drep,
	.send_sidr_req = srnic_cm_send_sidr_req,
	.send_sidr_rep = srnic_cm_send_sidr_rep,
	.established = srnic_cm_established,
	.init_qp_attr = srnic_cm_init_qp_attr,
	.resolve_neigh = embedded_resolve_neigh,
};

/* set once by cma_init(), before any id */
static const struct cma_cm_ops *cm_ops = &embedded_ops;

/* ---- id states ---- */

static const char *const cma_state_names[] = {
	[CMA_IDLE] = "IDLE",
	[CMA_ADDR_QUERY] = "ADDR_QUERY",
	[CMA_ADDR_RESOLVED] = "ADDR_RESOLVED",
	[CMA_ROUTE_QUERY] = "ROUTE_QUERY",
	[CMA_ROUTE_RESOLVED] = "ROUTE_RESOLVED",
	[CMA_CONNECT] = "CONNECT",
	[CMA_DISCONNECT] = "DISCONNECT",
	[CMA_ADDR_BOUND] = "ADDR_BOUND",
	[CMA_LISTEN] = "LISTEN",
	[CMA_DESTROYING] = "DESTROYING",
};

/* Every change of an id's state goes through here (under cma_lock), as
 * Linux's cma_exch(): the state it had. SRNIC_RDMACM_TRACE=1 shows each. */
static enum cma_state
state_exch(struct cma_id *id, enum cma_state to)
{
	enum cma_state old = id->state;

	if (cma.trace && old != to)
		cma_log("id %p: %s -> %s", (void *)id, cma_state_names[old], cma_state_names[to]);
	id->state = to;
	return old;
}

/* from -> to if the id is in from (Linux's cma_comp_exch()): false, and
 * nothing changed, if it is not. */
static bool
state_comp_exch(struct cma_id *id, enum cma_state from, enum cma_state to)
{
	if (id->state != from)
		return false;
	state_exch(id, to);
	return true;
}

/* The id is being destroyed: its CM id, once no rdma_get_cm_event() on
 * another thread works with it (id->busy: a CONNECT_RESPONSE's QP steps
 * and RTU), as Linux's ucma waits for its context's references before it
 * destroys the CM id. Under cma_lock, which the wait lets go of. */
static struct srnic_cm_id *
take_cm_id(struct cma_id *id)
{
	struct srnic_cm_id *cmid;

	id->destroyed_listening = id->state == CMA_LISTEN;
	state_exch(id, CMA_DESTROYING);
	while (id->busy > 0) {
#ifdef SRNIC_TEST_HOOKS
		id->destroy_held = true;        /* for hold_rtu() */
#endif
		pthread_cond_wait(&cma_acked, &cma_lock);
	}
	cmid = id->cm_id;
	id->cm_id = NULL;
	return cmid;
}

/* At exit, as the kernel does when a process's rdma_cm file closes: every
 * id still there is destroyed (an established connection sends its DREQ,
 * a DREQ received gets its DREP, a request its REJ), and the engine and
 * the CM run CMA_EXIT_DRAIN_MS more, so those and the MADs of the
 * program's last calls leave before the process does. An exit() from a
 * signal handler that interrupted an rdma_cm call finds cma_lock held by
 * its own thread: cma_exit_lock() gives up after CMA_EXIT_LOCK_MS. */
static bool
cma_exit_lock(void)
{
	uint64_t end = now_ms() + CMA_EXIT_LOCK_MS;
	struct timespec ts = { .tv_nsec = 100000 };

	while (pthread_mutex_trylock(&cma_lock) != 0) {
		if (now_ms() >= end) {
			cma_log("exit during an rdma_cm call (a signal's handler, or another thread's "
				"call): its ids are left to their peers' timeouts%s",
				cma.attached ? " (the daemon disconnects them at the session's end)" : "");
			return false;
		}
		nanosleep(&ts, NULL);
	}
	return true;
}

static void
cma_exit(void)
{
	struct cma_id *id;

	for (;;) {
		struct srnic_cm_id *cmid = NULL;

		/* never a wait for a lock the exiting thread may hold itself */
		if (!cma_exit_lock())
			return;
		TAILQ_FOREACH(id, &cma.ids, link)
			if (id->cm_id != NULL) {
				cmid = take_cm_id(id);
				break;
			}
		pthread_mutex_unlock(&cma_lock);
		if (cmid == NULL)
			break;
		if (cm_ops->id_state(cmid) == SRNIC_CM_DREQ_RCVD)
			cm_ops->send_drep(cmid, NULL, 0);
		cm_ops->destroy_id(cmid);
	}
	/* also what the program's own last calls sent (a DREP from its
	 * rdma_destroy_id just before exit); attached, the daemon sends them */
	if (!cma.attached) {
		uint64_t end = now_ms() + CMA_EXIT_DRAIN_MS;
		struct timespec ts = { .tv_nsec = 100000 };

		while (now_ms() < end) {
			srnic_verbs_cm_progress();
			nanosleep(&ts, NULL);
		}
	}
}

/* "LO HI" (ip_local_port_range's format: blanks between, a newline at the
 * end allowed) into *lo, *hi: whether it parses, 1 <= LO <= HI <= 65535. */
static bool
range_parse(const char *v, uint16_t *lo, uint16_t *hi)
{
	unsigned long l, h;
	char *mid, *end = NULL;

	errno = 0;
	l = strtoul(v, &mid, 10);
	h = mid != v ? strtoul(mid, &end, 10) : 0;
	if (mid == v || end == mid)
		return false;
	while (*end == ' ' || *end == '\t' || *end == '\n')
		end++;
	if (*end != '\0' || errno != 0 || l < 1 || l > h || h > UINT16_MAX)
		return false;
	*lo = (uint16_t)l;
	*hi = (uint16_t)h;
	return true;
}

/* The ephemeral ports of a port-0 bind, as the kernel's rdma_cm takes
 * them (cma_alloc_any_port(): inet_get_local_port_range()):
 * SRNIC_RDMACM_PORT_RANGE="LO HI" (that file's format), else the host's
 * CMA_PORT_RANGE_FILE (net.ipv4.ip_local_port_range of this process's
 * network namespace), else CMA_PORT_MIN..CMA_PORT_MAX (that file's
 * default) when it cannot be read. A variable that does not parse is
 * said and the host's range used. */
static void
port_range(const char *v)
{
	char line[64];
	FILE *f;

	cma.port_lo = CMA_PORT_MIN;
	cma.port_hi = CMA_PORT_MAX;
	if (v != NULL && range_parse(v, &cma.port_lo, &cma.port_hi))
		return;
	f = fopen(CMA_PORT_RANGE_FILE, "re");
	if (f != NULL) {
		if (fgets(line, sizeof(line), f) == NULL ||
		    !range_parse(line, &cma.port_lo, &cma.port_hi)) {
			cma.port_lo = CMA_PORT_MIN;
			cma.port_hi = CMA_PORT_MAX;
		}
		fclose(f);
	}
	if (v != NULL)
		cma_log("SRNIC_RDMACM_PORT_RANGE=\"%s\" is not \"LO HI\" (1 <= LO <= HI <= 65535): "
			"port-0 binds pick from %u-%u (%s)", v, cma.port_lo, cma.port_hi,
			f != NULL ? CMA_PORT_RANGE_FILE : "the kernel's default");
}

/* Start (once): the device of srnic's libibverbs, its CM, one verbs
 * context for every id (rdma-core's cma_device), our address. */
int
cma_init(void)
{
	struct ibv_device **list;
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	const char *t;

	pthread_mutex_lock(&cma_lock);
	if (cma.inited) {
		pthread_mutex_unlock(&cma_lock);
		return cma.err != 0 ? err(cma.err) : 0;
	}
	cma.inited = true;
	t = getenv("SRNIC_RDMACM_TRACE");
	cma.trace = t != NULL && strcmp(t, "1") == 0;
#ifdef SRNIC_TEST_HOOKS
	cma.hold_rtu = SRNIC_TEST_HOOK("SRNIC_RDMACM_TEST_HOLD_RTU");
	cma.hold_destroy = SRNIC_TEST_HOOK("SRNIC_RDMACM_TEST_HOLD_DESTROY");
#endif
	port_range(getenv("SRNIC_RDMACM_PORT_RANGE"));
	srandom((unsigned int)(getpid() ^ now_ms()));
	/* ibv_get_device_list() starts the device (or says what to set) */
	list = ibv_get_device_list(NULL);
	if (srnic_verbs_attached()) {
		/* the daemon's device, its CM and its ARP/ND (doc/srnicd.md 7) */
		cma.attached = true;
		cma.priv.ibdev = list != NULL ? list[0] : NULL;
		cma.priv.progress_thread = 1;   /* the daemon's engine and CM run */
	}
	if (list != NULL)
		ibv_free_device_list(list);
	if (cma.attached) {
		if (cma.priv.ibdev == NULL) {
			cma_log("srnicd lists no device: rdma_cm has none to use");
			cma.err = ENODEV;
			goto out;
		}
	} else if (srnic_verbs_private_get(&cma.priv) != 0) {
		cma.err = ENODEV;
		goto out;
	}
	if (!cma.attached && cma.priv.cm == NULL) {
		cma_log("srnic0 has no CM (its start failed: see the line above); "
			"rdma_cm needs it");
		cma.err = ENODEV;
		goto out;
	}
	cma.verbs = ibv_open_device(cma.priv.ibdev);
	if (cma.verbs == NULL ||
	    ibv_query_gid(cma.verbs, 1, SRNIC_GID_INDEX_LL, &cma.gid[SRNIC_GID_INDEX_LL]) != 0 ||
	    ibv_query_gid(cma.verbs, 1, SRNIC_GID_INDEX_IP, &cma.gid[SRNIC_GID_INDEX_IP]) != 0 ||
	    ibv_query_gid(cma.verbs, 1, SRNIC_GID_INDEX_IP6, &cma.gid[SRNIC_GID_INDEX_IP6]) != 0 ||
	    ibv_query_port(cma.verbs, 1, &pa) != 0 || ibv_query_device(cma.verbs, &da) != 0) {
		cma_log("cannot open srnic0 (%s)", strerror(errno));
		cma.err = ENODEV;
		goto out;
	}
	/* the device's PD, each id's once it names the device (id->pd), as
	 * rdma-core's ucma_get_device(): programs make their QPs and MRs on it */
	cma.pd = ibv_alloc_pd(cma.verbs);
	if (cma.pd == NULL) {
		cma_log("cannot allocate srnic0's PD for rdma_cm (%s)", strerror(errno));
		cma.err = ENODEV;
		goto out;
	}
	cma.mtu = pa.active_mtu;
	cma.max_resp_res = (uint8_t)RTE_MIN(da.max_qp_rd_atom, 255);
	cma.max_init_depth = (uint8_t)RTE_MIN(da.max_qp_init_rd_atom, 255);
	if (cma.attached) {
		int rc = cma_attach_open(cma.verbs, cma_resolve_step);

		if (rc != 0) {
			cma_log("srnicd did not open its CM to this process (%s)", strerror(-rc));
			cma.err = -rc;
			goto out;
		}
		cm_ops = &cma_attach_ops;
	} else {
		srnic_verbs_set_cm_hook(cma_tick, NULL);
	}
	/* after libibverbs' own (atexit runs it first): the CM still runs */
	atexit(cma_exit);
out:
	pthread_mutex_unlock(&cma_lock);
	return cma.err != 0 ? err(cma.err) : 0;
}

struct ibv_context *
cma_verbs(void)
{
	return cma.verbs;
}

/* ---- addresses ---- */

/* srnic's rdma_cm works with addresses as GIDs: an IPv4 address is its
 * IPv4-mapped GID (::ffff:a.b.c.d, as the device's GID 1 of an IPv4
 * address), an IPv6 address its 16 bytes. The device has two or three:
 * GID 0, the link-local fe80:: from its MAC (any device), GID 1, its address
 * (SRNIC_IP, IPv4, or SRNIC_IP6, IPv6), and with both GID 2, SRNIC_IP6. */

/* addr's GID and port (network order); false for a family srnic's
 * rdma_cm does not take (AF_IB). */
static bool
sa_gid(const struct sockaddr *a, union ibv_gid *g, uint16_t *port)
{
	if (a->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)a;

		srnic_gid_from_ipv4(g, &s->sin_addr);
		*port = s->sin_port;
		return true;
	}
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)a;

		memcpy(g->raw, &s6->sin6_addr, sizeof(g->raw));
		*port = s6->sin6_port;
		return true;
	}
	return false;
}

/* The sockaddr of family (AF_INET: g IPv4-mapped) for g and port
 * (network order); scope for a link-local IPv6 address. */
static void
sa_from_gid(struct sockaddr_storage *out, int family, const union ibv_gid *g, uint16_t port,
	    uint32_t scope)
{
	memset(out, 0, sizeof(*out));
	if (family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)out;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, &g->raw[12], 4);
		s->sin_port = port;
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)out;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, g->raw, sizeof(g->raw));
		s6->sin6_port = port;
		if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
			s6->sin6_scope_id = scope;
	}
}

static uint16_t
sa_port(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
					: ((const struct sockaddr_in *)a)->sin_port;
}

/* Linux's cma_any_addr(), with the loopback range: 0.0.0.0, ::,
 * 127.0.0.0/8 and ::1 bind to no device (listen on all, connect from the
 * one that routes); a destination among them is the first device itself
 * (cma_bind_loopback(): its own GID, and srnic's in-device loopback
 * carries the packets). */
static bool
gid_any(const union ibv_gid *g)
{
	const struct in6_addr *a = (const struct in6_addr *)g->raw;

	if (srnic_gid_is_v4mapped(g))
		return (g->raw[12] | g->raw[13] | g->raw[14] | g->raw[15]) == 0 ||
		       g->raw[12] == IN_LOOPBACKNET;
	return IN6_IS_ADDR_UNSPECIFIED(a) || IN6_IS_ADDR_LOOPBACK(a);
}

/* g's index in the device's GID table, or -1: not ours. */
static int
gid_index(const union ibv_gid *g)
{
	int i;

	for (i = 0; i < SRNIC_GID_TBL_LEN; i++)
		if (!gid_any(&cma.gid[i]) && memcmp(g->raw, cma.gid[i].raw, sizeof(g->raw)) == 0)
			return i;
	return -1;
}

/* The GID index a packet to dst leaves from (Linux's route lookup, on a
 * device whose every destination is on its link): a link-local fe80::
 * from GID 0, any other from GID 1 if it is of GID 1's family, an IPv6
 * one from GID 2 if the device has both, any or loopback (the device
 * itself) from GID 1; -1: no route. */
static int
route_src(const union ibv_gid *dst)
{
	if (gid_any(dst))
		return SRNIC_GID_INDEX_IP;
	if (IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)dst->raw))
		return SRNIC_GID_INDEX_LL;
	if (srnic_gid_is_v4mapped(dst) == srnic_gid_is_v4mapped(&cma.gid[SRNIC_GID_INDEX_IP]))
		return SRNIC_GID_INDEX_IP;
	if (!srnic_gid_is_v4mapped(dst) && !gid_any(&cma.gid[SRNIC_GID_INDEX_IP6]))
		return SRNIC_GID_INDEX_IP6;
	return -1;
}

/* The device's addresses, for messages: "10.0.0.1 (SRNIC_IP) and
 * fe80::... (link-local)". */
static const char *
dev_addrs(void)
{
	static char s[3 * INET6_ADDRSTRLEN + 64];
	char a[INET6_ADDRSTRLEN], a6[INET6_ADDRSTRLEN + 16] = "", ll[INET6_ADDRSTRLEN];
	bool v4 = srnic_gid_is_v4mapped(&cma.gid[SRNIC_GID_INDEX_IP]);

	if (v4)
		inet_ntop(AF_INET, &cma.gid[SRNIC_GID_INDEX_IP].raw[12], a, sizeof(a));
	else
		inet_ntop(AF_INET6, cma.gid[SRNIC_GID_INDEX_IP].raw, a, sizeof(a));
	if (!gid_any(&cma.gid[SRNIC_GID_INDEX_IP6])) {
		inet_ntop(AF_INET6, cma.gid[SRNIC_GID_INDEX_IP6].raw, a6, INET6_ADDRSTRLEN);
		strcat(a6, " (SRNIC_IP6)");
	}
	inet_ntop(AF_INET6, cma.gid[SRNIC_GID_INDEX_LL].raw, ll, sizeof(ll));
	snprintf(s, sizeof(s), "%s (SRNIC_IP%s)%s%s and %s (link-local)", a, v4 ? "" : "6",
		 a6[0] != '\0' ? ", " : "", a6, ll);
	return s;
}

/* An AF_INET6 bind's AFONLY when the application did not set it: the
 * host's net.ipv6.bindv6only (0 unless changed), as Linux's. */
static bool
bindv6only(void)
{
	FILE *f = fopen("/proc/sys/net/ipv6/bindv6only", "re");
	int v = 0;

	if (f != NULL) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v != 0;
}

/* route.addr's source (rdma_get_local_addr()): the source in use, in
 * family (AF_INET: IPv4-mapped), or with bound (a bind's address, port as
 * bound) that address as given. */
static void
src_show(struct cma_id *id, int family, const struct sockaddr *bound)
{
	struct sockaddr_storage *ss = &id->id.route.addr.src_storage;

	if (bound != NULL) {
		memset(ss, 0, sizeof(*ss));
		memcpy(ss, bound, bound->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							       : sizeof(struct sockaddr_in));
		if (bound->sa_family == AF_INET6)
			((struct sockaddr_in6 *)ss)->sin6_port = id->src_port;
		else
			((struct sockaddr_in *)ss)->sin_port = id->src_port;
		return;
	}
	sa_from_gid(ss, family, &id->src_gid, id->src_port, id->scope_id);
}

/* Whether port of the id's port space is free for it, with the address,
 * family and AFONLY it is binding with; as Linux's cma_check_port(): an id
 * holding the port conflicts unless both set REUSEADDR (reuse: self's, and
 * the other does not listen) or both are AFONLY of different families
 * (0.0.0.0 and :: apart); a conflict with a wildcard is EADDRNOTAVAIL,
 * with the same address EADDRINUSE. rdma_listen() of a REUSEADDR id asks
 * again with reuse false (Linux's rdma_listen(): a listener is unique on
 * its port). 0 or a positive errno. */
static int
port_check(const struct cma_id *self, uint16_t port, const union ibv_gid *g, uint16_t family,
	   bool afonly, bool reuse)
{
	struct cma_id *o;

	TAILQ_FOREACH(o, &cma.ids, link) {
		if (o == self || o->id.ps != self->id.ps || o->port != port ||
		    o->state == CMA_DESTROYING)
			continue;
		if (o->reuseaddr && reuse && o->state != CMA_LISTEN)
			continue;
		if (afonly && o->afonly && family != o->bind_family)
			continue;
		if (gid_any(g) || o->wildcard)
			return EADDRNOTAVAIL;
		if (memcmp(o->src_gid.raw, g->raw, sizeof(g->raw)) == 0)
			return EADDRINUSE;
	}
	return 0;
}

/* A port-0 bind's walk of the ephemeral range, as the kernel's
 * cma_alloc_any_port(): from a random port of it on, each port once, with
 * wrap. A bind that picks a port the daemon then refuses (attached:
 * another process listens on it) goes on from the next (bind_take()). */
struct port_walk {
	unsigned int next;      /* offset in the range of the next port to try */
	unsigned int left;      /* its ports not tried yet */
};

static void
port_walk_start(struct port_walk *w)
{
	w->left = (unsigned int)cma.port_hi - cma.port_lo + 1;
	w->next = (unsigned int)random() % w->left;
}

/* Bind (under cma_lock): AF_INET or AF_INET6; any, loopback (gid_any())
 * or one of the device's addresses (its SRNIC_IP / SRNIC_IP6, its
 * link-local fe80::, with any scope id: the port is not a kernel
 * interface, and its one link is the scope); a port of the id's port
 * space (0: an ephemeral one, the next free one of walk, or of a walk of
 * its own if walk is NULL). */
static int
bind_locked(struct cma_id *id, const struct sockaddr *addr, struct port_walk *walk)
{
	union ibv_gid g;
	uint16_t port, family;
	bool afonly;
	int rc;

	if (addr == NULL)
		return err(EINVAL);
	if (!sa_gid(addr, &g, &port)) {
		if (addr->sa_family == AF_IB)
			cma_log("rdma_bind_addr: AF_IB is not served (srnic0 is RoCEv2): bind an "
				"IPv4 or IPv6 address");
		return err(EAFNOSUPPORT);
	}
	if (id->state != CMA_IDLE)
		return err(EINVAL);
	family = addr->sa_family;
	afonly = id->afonly_set ? id->afonly : family == AF_INET || bindv6only();
	if (!gid_any(&g) && gid_index(&g) < 0) {
		char a[INET6_ADDRSTRLEN];

		if (family == AF_INET)
			inet_ntop(AF_INET, &g.raw[12], a, sizeof(a));
		else
			inet_ntop(AF_INET6, g.raw, a, sizeof(a));
		cma_log("rdma_bind_addr: %s is not srnic0's address (it has %s)", a, dev_addrs());
		return err(EADDRNOTAVAIL);
	}
	port = ntohs(port);
	if (port == 0) {
		unsigned int n = (unsigned int)cma.port_hi - cma.port_lo + 1;
		struct port_walk own;

		if (walk == NULL) {
			port_walk_start(&own);
			walk = &own;
		}
		/* the first port of the walk no id of the process holds with
		 * an address overlapping this one: an ephemeral port is never
		 * shared, REUSEADDR and AFONLY aside (the kernel's
		 * cma_alloc_any_port() takes a port only if
		 * cma_port_is_unique(): either address a wildcard, or both
		 * the same, and it moves on); else a REUSEADDR id's port-0
		 * bind would get the port another REUSEADDR id holds, and its
		 * rdma_listen() then fail */
		for (; walk->left > 0; walk->left--, walk->next++) {
			port = (uint16_t)(cma.port_lo + walk->next % n);
			if (port_check(id, port, &g, family, false, false) == 0)
				break;
		}
		if (walk->left == 0) {
			cma_log("a port-0 bind: every port of %u-%u is taken (bound by an id of this "
				"process, or attached, listened on by another process of srnicd's): "
				"free one, or widen SRNIC_RDMACM_PORT_RANGE (default: %s)",
				cma.port_lo, cma.port_hi, CMA_PORT_RANGE_FILE);
			return err(EADDRNOTAVAIL);
		}
		walk->left--;
		walk->next++;
	} else {
		rc = port_check(id, port, &g, family, afonly, id->reuseaddr);
		if (rc != 0)
			return err(rc);
	}
	id->port = port;
	id->bind_family = family;
	id->afonly = afonly;
	id->wildcard = gid_any(&g);
	id->src_gid = g;
	id->src_port = htons(port);
	id->scope_id = family == AF_INET6 ? ((const struct sockaddr_in6 *)addr)->sin6_scope_id : 0;
	src_show(id, family, addr);
	/* a wildcard bind names no device (rdma-core: verbs NULL) */
	id->id.verbs = id->wildcard ? NULL : cma.verbs;
	id->id.pd = id->wildcard ? NULL : cma.pd;
	id->id.port_num = id->wildcard ? 0 : 1;
	id->id.route.addr.addr.ibaddr.sgid = id->wildcard ? cma.gid[SRNIC_GID_INDEX_IP] : g;
	id->id.route.addr.addr.ibaddr.pkey = htons(SRNIC_PKEY_DEFAULT);
	state_exch(id, CMA_ADDR_BOUND);
	return 0;
}

/* A bind_locked() taken back (under cma_lock): the id unbound and IDLE
 * again, nothing of the bind left to show (rdma_get_local_addr(): none),
 * as a failed bind of Linux's leaves it. */
static void
bind_undo(struct cma_id *id)
{
	state_exch(id, CMA_IDLE);
	id->port = 0;
	id->bind_family = 0;
	id->wildcard = false;
	memset(&id->src_gid, 0, sizeof(id->src_gid));
	id->src_port = 0;
	id->scope_id = 0;
	if (!id->afonly_set)
		id->afonly = false;
	memset(&id->id.route.addr, 0, sizeof(id->id.route.addr));
	id->id.verbs = NULL;
	id->id.pd = NULL;
	id->id.port_num = 0;
}

/* ---- events ---- */

static struct cma_event *
event_new(struct cma_id *id, struct cma_id *owner, enum rdma_cm_event_type type, int status)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = owner;
	return e;
}

static void
event_pdata(struct cma_event *e, const void *p, unsigned int len, bool ud)
{
	if (p == NULL || len == 0)
		return;
	len = RTE_MIN(len, (unsigned int)CMA_PDATA_MAX);
	memcpy(e->pdata, p, len);
	if (ud) {
		e->ev.param.ud.private_data = e->pdata;
		e->ev.param.ud.private_data_len = (uint8_t)len;
	} else {
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	}
}

/* A channel's eventfd (EFD_SEMAPHORE) counts its queued events: one
 * count per event, added and taken only under cma_lock, as an event is
 * queued or leaves the queue. So the fd is readable exactly while an
 * event is there (Linux's ucma file polls so), and taking a count never
 * blocks. */
static void
event_queue(struct cma_channel *ch, struct cma_event *e)
{
	uint64_t one = 1;
	ssize_t rc;

	TAILQ_INSERT_TAIL(&ch->q, e, link);
	rc = write(ch->ch.fd, &one, sizeof(one));
	(void)rc;
}

static void
event_unqueue(struct cma_channel *ch, struct cma_event *e)
{
	uint64_t n;
	ssize_t rc;

	TAILQ_REMOVE(&ch->q, e, link);
	rc = read(ch->ch.fd, &n, sizeof(n));
	(void)rc;
}

/* An event that could not be allocated is lost; say so. */
static void
event_post(struct cma_id *id, struct cma_event *e)
{
	if (e == NULL) {
		cma_log("out of memory: an rdma_cm event for id %p is lost", (void *)&id->id);
		return;
	}
	event_queue(id->chan, e);
}

/* The queued events about id go with it (its destroy), as Linux's ucma
 * drops a destroyed context's events: its channel's fd no longer counts
 * them. */
static void
events_forget(struct cma_id *id)
{
	struct cma_event *e, *next;

	for (e = TAILQ_FIRST(&id->chan->q); e != NULL; e = next) {
		next = TAILQ_NEXT(e, link);
		if (e->owner == id || e->ev.id == &id->id) {
			event_unqueue(id->chan, e);
			free(e);
		}
	}
}

/* ---- the CM's handler (progress thread) ---- */

static void
path_from_cm(struct ibv_sa_path_rec *p, const struct srnic_cm_path *cp)
{
	memset(p, 0, sizeof(*p));
	p->sgid = cp->sgid;
	p->dgid = cp->dgid;
	p->flow_label = htonl(cp->flow_label);
	p->hop_limit = cp->hop_limit != 0 ? cp->hop_limit : CMA_HOP_LIMIT;
	p->traffic_class = cp->traffic_class;
	p->sl = cp->sl;
	p->mtu_selector = 2;                /* exactly */
	p->mtu = cp->mtu;
	p->rate_selector = 2;
	p->rate = IBV_RATE_MAX;
	p->packet_life_time_selector = 2;
	p->packet_life_time = cp->packet_life_time;
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htons(SRNIC_PKEY_DEFAULT);
	p->slid = p->dlid = htons(0xffff);
}

static void
path_to_cm(struct srnic_cm_path *cp, const struct ibv_sa_path_rec *p)
{
	memset(cp, 0, sizeof(*cp));
	cp->sgid = p->sgid;
	cp->dgid = p->dgid;
	cp->flow_label = ntohl(p->flow_label) & 0xfffff;
	cp->traffic_class = p->traffic_class;
	cp->hop_limit = p->hop_limit;
	cp->sl = p->sl;
	cp->mtu = (enum ibv_mtu)p->mtu;
	cp->packet_life_time = p->packet_life_time;
}

/* Whether listener l takes a request of IP version ipv (4 or 6) to
 * local, as Linux's cma_match_private_data(): a wildcard without AFONLY
 * takes both versions (:: with IPV6_V6ONLY off), else the version of its
 * bind's family (an IPv4-mapped address's: 4), to its address or
 * (wildcard) any. */
static bool
listener_takes(const struct cma_id *l, int ipv, const union ibv_gid *local)
{
	bool l4 = l->bind_family == AF_INET || (!l->wildcard && srnic_gid_is_v4mapped(&l->src_gid));

	if (l->wildcard && !l->afonly)
		return true;
	if (l4 != (ipv == 4))
		return false;
	return l->wildcard || memcmp(l->src_gid.raw, local->raw, sizeof(local->raw)) == 0;
}

/* The listener a request of version ipv to local:port goes to, among
 * those on the port (one CM listen serves them all: 0.0.0.0 and :: bound
 * apart, an address and a wildcard, as Linux's cma_find_listener() looks
 * through a port's bind list): one bound to the address before a
 * wildcard. NULL: none takes it. */
static struct cma_id *
listener_find(const struct cma_id *owner, int ipv, const union ibv_gid *local)
{
	struct cma_id *l, *any = NULL;

	TAILQ_FOREACH(l, &cma.ids, link) {
		if (l->state != CMA_LISTEN || l->id.ps != owner->id.ps || l->port != owner->port ||
		    !listener_takes(l, ipv, local))
			continue;
		if (!l->wildcard)
			return l;
		if (any == NULL)
			any = l;
	}
	return any;
}

/* A request's addresses from its cma_hdr h: IP version (4 or 6), the
 * passive side's (local) and the active side's (peer) as GIDs, the
 * peer's port; 0 if the header is rdma_cm's (version 0, IPv4 or IPv6:
 * AF_IB peers are not served). */
static int
hdr_parse(const uint8_t *h, unsigned int len, union ibv_gid *local, union ibv_gid *peer,
	  uint16_t *peer_port)
{
	if (h == NULL || len < CMA_HDR_LEN || h[0] != CMA_VERSION)
		return -1;
	memcpy(peer_port, h + CMA_HDR_PORT, 2);
	switch (h[1] & 0xf0) {
	case CMA_HDR_IPV4:
		srnic_gid_from_ipv4(local, h + CMA_HDR_DST + 12);
		srnic_gid_from_ipv4(peer, h + CMA_HDR_SRC + 12);
		return 4;
	case CMA_HDR_IPV6:
		memcpy(local->raw, h + CMA_HDR_DST, 16);
		memcpy(peer->raw, h + CMA_HDR_SRC, 16);
		return 6;
	default:
		return -1;
	}
}

static int handle_request(struct cma_id *owner, struct srnic_cm_id *cmid,
			  const struct srnic_cm_event *ev, bool hold);

/* A request to owner's port, bound and not listened on yet, kept for its
 * rdma_listen() (an MRA keeps the peer waiting meanwhile, as for a slow
 * rdma_accept()). 0, or -ENOMEM: dropped (embedded: no REJ, the peer's
 * REQ comes again; attached: the daemon's destroy of the CM id sends a
 * REJ, doc/rdmacm.md). */
static int
request_hold(struct cma_id *owner, struct srnic_cm_id *cmid, const struct srnic_cm_event *ev)
{
	struct cma_held *r;

	/* the port's budget (owner holds its one CM listen): as a full
	 * backlog, dropped (see above) */
	if (owner->nb_held >= CMA_HELD_MAX || (r = calloc(1, sizeof(*r))) == NULL)
		return -ENOMEM;
	r->owner = owner;
	r->cmid = cmid;
	r->ev = *ev;
	r->ev.private_data_len = RTE_MIN(ev->private_data_len, (uint8_t)sizeof(r->pdata));
	if (ev->private_data != NULL)
		memcpy(r->pdata, ev->private_data, r->ev.private_data_len);
	r->ev.private_data = r->pdata;
	/* its other events (the peer's REJ at its timeout) find no id */
	cm_ops->id_set_context(cmid, NULL);
	if (ev->type == SRNIC_CM_EV_REQ_RECEIVED)
		cm_ops->send_mra(cmid, SRNIC_CM_MRA_FLAG_DELAY | CMA_CM_MRA_TIMEOUT, NULL, 0);
	TAILQ_INSERT_TAIL(&cma.held, r, link);
	owner->nb_held++;
	if (cma.trace)
		cma_log("port %u: a request before rdma_listen(), held for it", owner->port);
	return 0;
}

/* Whether a held request's peer still waits for an answer: its REQ timed
 * out meanwhile (the MRA's time spent), or it sent a REJ, and the CM id
 * left REQ_RCVD; handed out then, its CONNECT_REQUEST's rdma_accept()
 * would fail */
static bool
request_still_asked(struct srnic_cm_id *cmid)
{
	enum srnic_cm_state st = cm_ops->id_state(cmid);

	return st == SRNIC_CM_REQ_RCVD || st == SRNIC_CM_MRA_REQ_SENT ||
	       st == SRNIC_CM_SIDR_REQ_RCVD;
}

/* The held requests of owner's port taken again (an rdma_listen() on
 * it), or of owner alone given up (give_up: owner leaves its port); those
 * no listener takes go into gone[] (at most n) for their REJ once
 * cma_lock is let go (requests_reject()). Under cma_lock. */
static unsigned int
requests_held_take(struct cma_id *owner, bool give_up, struct srnic_cm_id **gone, unsigned int n)
{
	struct cma_held *r, *next;
	unsigned int k = 0;

	for (r = TAILQ_FIRST(&cma.held); r != NULL && k < n; r = next) {
		next = TAILQ_NEXT(r, link);
		if (give_up ? r->owner != owner :
		    r->owner->id.ps != owner->id.ps || r->owner->port != owner->port)
			continue;
		TAILQ_REMOVE(&cma.held, r, link);
		r->owner->nb_held--;
		if (give_up || !request_still_asked(r->cmid) ||
		    handle_request(r->owner, r->cmid, &r->ev, false) != 0)
			gone[k++] = r->cmid;
		free(r);
	}
	return k;
}

/* REJs for requests_held_take()'s gone[], as Linux answers a REQ at its
 * arrival: reason INVALID_SERVICE_ID (cm_match_req(): nobody listens on
 * the port; a port given up) or CONSUMER_DEFINED (the port has a listener,
 * none of which takes the request: cma_find_listener() fails, the CM id
 * is destroyed with its REJ; a held request meets the port's first
 * listen as if it came then). */
static void
requests_reject(struct srnic_cm_id **gone, unsigned int n, enum srnic_cm_rej_reason reason)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		cm_ops->send_rej(gone[i], reason, NULL, 0, NULL, 0);
		cm_ops->destroy_id(gone[i]);
	}
}

/* Whether owner's port (its port space) has a listener (under cma_lock). */
static bool
port_listened(const struct cma_id *owner)
{
	const struct cma_id *l;

	TAILQ_FOREACH(l, &cma.ids, link)
		if (l->state == CMA_LISTEN && l->id.ps == owner->id.ps && l->port == owner->port)
			return true;
	return false;
}

/* A REQ or SIDR_REQ for the listeners of owner's port (owner holds the
 * CM listen): the new id, its addresses from the cma_hdr, its
 * CONNECT_REQUEST on its listener's channel; none listens yet on a port
 * owner took at its bind: kept (hold). Nonzero: destroy cmid (a REJ goes
 * back). */
static int
handle_request(struct cma_id *owner, struct srnic_cm_id *cmid, const struct srnic_cm_event *ev,
	       bool hold)
{
	const uint8_t *h = ev->private_data;
	bool ud = ev->type == SRNIC_CM_EV_SIDR_REQ_RECEIVED;
	const struct srnic_cm_path *cp = ud ? &ev->param.sidr_req.path : &ev->param.req.path;
	union ibv_gid local, peer;
	uint16_t peer_port;
	struct cma_id *c, *l;
	struct cma_event *e;
	int ipv;

	if (owner->state != CMA_LISTEN && !owner->early)
		return 1;
	ipv = hdr_parse(h, ev->private_data_len, &local, &peer, &peer_port);
	if (ipv < 0)
		return 1;
	l = listener_find(owner, ipv, &local);
	/* held only while nobody listens on the port (the window between
	 * rdma_bind_addr() and the port's first rdma_listen(), where
	 * Linux's REQ finds no listener of its service ID); once one does,
	 * Linux's answer at arrival: a REQ no listener of the port takes is
	 * rejected (cma_find_listener()), whatever id bound to it may still
	 * listen later */
	if (l == NULL && owner->early && hold && !port_listened(owner))
		return request_hold(owner, cmid, ev);
	if (l == NULL) {
		if (cma.trace)
			cma_log("port %u: no listener takes an IPv%d request", owner->port, ipv);
		return 1;
	}
	/* as Linux's ucma: past the backlog the request goes without a REJ
	 * (the CM drops it on -ENOMEM) and the peer's next REQ may find room */
	if (l->nb_pending >= l->backlog) {
		if (cma.trace)
			cma_log("listener %p: backlog of %d full, a request dropped", (void *)l,
				l->backlog);
		return -ENOMEM;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return 1;
	c->id.verbs = cma.verbs;
	c->id.pd = cma.pd;
	c->id.channel = &l->chan->ch;
	c->id.context = l->id.context;
	c->id.ps = l->id.ps;
	c->id.qp_type = l->id.qp_type;
	c->id.port_num = 1;
	c->chan = l->chan;
	c->chan->nb_ids++;
	c->cm_id = cmid;
	state_exch(c, CMA_CONNECT);
	c->seq = rand24();
	c->tos = l->tos;
	c->tos_set = l->tos_set;
	c->ack_timeout = l->ack_timeout;
	/* as Linux's cma_save_ip_info(): the request's IP version is the
	 * new id's family */
	c->src_gid = local;
	c->src_port = htons(l->port);
	c->scope_id = l->scope_id;
	src_show(c, ipv == 4 ? AF_INET : AF_INET6, NULL);
	sa_from_gid(&c->id.route.addr.dst_storage, ipv == 4 ? AF_INET : AF_INET6, &peer, peer_port,
		    l->scope_id);
	path_from_cm(&c->path, cp);
	c->id.route.path_rec = &c->path;
	c->id.route.num_paths = 1;
	c->id.route.addr.addr.ibaddr.sgid = cp->sgid;
	c->id.route.addr.addr.ibaddr.dgid = cp->dgid;
	c->id.route.addr.addr.ibaddr.pkey = htons(SRNIC_PKEY_DEFAULT);
	TAILQ_INSERT_TAIL(&cma.ids, c, link);
	cm_ops->id_set_context(cmid, c);

	e = event_new(c, l, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (e == NULL) {
		/* the new id goes with its cm id (nonzero return) */
		TAILQ_REMOVE(&cma.ids, c, link);
		c->chan->nb_ids--;
		free(c);
		return 1;
	}
	e->kind = CMA_EV_CONN_REQ;
	e->ev.listen_id = &l->id;
	event_pdata(e, h + CMA_HDR_LEN, ev->private_data_len - CMA_HDR_LEN, ud);
	if (!ud) {
		/* from our side: the peer's initiator depth is our responder
		 * resources (as Linux's ib_cm hands a REQ up) */
		e->ev.param.conn.responder_resources = ev->param.req.initiator_depth;
		e->ev.param.conn.initiator_depth = ev->param.req.responder_resources;
		e->ev.param.conn.flow_control = ev->param.req.flow_control;
		e->ev.param.conn.retry_count = ev->param.req.retry_count;
		e->ev.param.conn.rnr_retry_count = ev->param.req.rnr_retry_count;
		e->ev.param.conn.srq = ev->param.req.srq;
		e->ev.param.conn.qp_num = ev->param.req.remote_qpn;
		c->resp_res = ev->param.req.initiator_depth;
		c->init_depth = ev->param.req.responder_resources;
		c->remote_qpn = ev->param.req.remote_qpn;
		c->id.qp_type = ev->param.req.qp_type;
		/* Linux's cma: an MRA, sent only if the REQ comes again before
		 * the program answers (a slow rdma_accept does not lose the
		 * peer to its REQ retries) */
		cm_ops->send_mra(cmid, SRNIC_CM_MRA_FLAG_DELAY | CMA_CM_MRA_TIMEOUT, NULL, 0);
	}
	event_queue(l->chan, e);
	l->nb_pending++;
	c->req_ev = e;
	return 0;
}

/* A CONNECT_REQUEST leaves its listener's queue (taken, dropped). */
static void
request_dequeued(struct cma_event *e)
{
	e->owner->nb_pending--;
	cma_id(e->ev.id)->req_ev = NULL;
}

static void
ud_ah_attr(struct cma_id *id, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->grh.dgid = id->path.dgid;
	ah->grh.sgid_index = (uint8_t)RTE_MAX(gid_index(&id->path.sgid), 0);
	ah->grh.flow_label = ntohl(id->path.flow_label);
	ah->grh.hop_limit = id->path.hop_limit;
	ah->grh.traffic_class = id->path.traffic_class;
	ah->sl = id->path.sl;
	ah->port_num = 1;
}

/* status: 0, or -ETIMEDOUT for a DREQ nobody answered (Linux's
 * cma_ib_handler on IB_CM_DREQ_ERROR) */
static void
disconnected(struct cma_id *id, int status)
{
	if (id->disconnect_reported)
		return;
	id->disconnect_reported = true;
	state_comp_exch(id, CMA_CONNECT, CMA_DISCONNECT);
	event_post(id, event_new(id, id, RDMA_CM_EVENT_DISCONNECTED, status));
}

static int
cma_handler(struct srnic_cm_id *cmid, const struct srnic_cm_event *ev)
{
	struct cma_event *e = NULL;
	struct cma_id *id;
	int rc = 0;

	pthread_mutex_lock(&cma_lock);
	/* under the lock: a listener being destroyed hands its CM listen to
	 * another on its port (listen_hand_over()) */
	id = cm_ops->id_context(cmid);
	if (cma.trace)
		cma_log("id %p: CM %s (cm state %s)", (void *)id, srnic_cm_event_str(ev->type),
			srnic_cm_state_str(cm_ops->id_state(cmid)));
	if (id == NULL || id->state == CMA_DESTROYING) {
		bool req = ev->type == SRNIC_CM_EV_REQ_RECEIVED ||
			   ev->type == SRNIC_CM_EV_SIDR_REQ_RECEIVED;
		/* a REQ to an id that never listened (bound: attached, its
		 * port's CM listen taken early) or whose listen is gone is
		 * one nobody listens to: REJ INVALID_SERVICE_ID, Linux's
		 * cm_match_req(), as its requests held (rdma_destroy_id());
		 * the destroy marked the id before it could drop the listen */
		bool unheard = ev->type == SRNIC_CM_EV_REQ_RECEIVED &&
			       (id == NULL || !id->destroyed_listening);

		if (id != NULL && req) {
			id->destroy_req_seen = true;
			pthread_cond_broadcast(&cma_acked);
		}
		pthread_mutex_unlock(&cma_lock);
		/* (the CM's lock is not held in a handler: lib/cm's deliver()
		 * lets it go, the attached library has none) */
		if (unheard)
			cm_ops->send_rej(cmid, SRNIC_CM_REJ_INVALID_SERVICE_ID, NULL, 0, NULL, 0);
		/* a request to a listener being destroyed: its new id goes
		 * with the CM's REJ CONSUMER_DEFINED (Linux's
		 * cma_ib_req_handler() on a listener no longer in LISTEN; the
		 * CM holds the listener until we return); an unheard one's
		 * id has sent its REJ and goes without another */
		return req;
	}
	switch (ev->type) {
	case SRNIC_CM_EV_REQ_RECEIVED:
	case SRNIC_CM_EV_SIDR_REQ_RECEIVED:
		rc = handle_request(id, cmid, ev, true);
		break;
	case SRNIC_CM_EV_REP_RECEIVED:
		if (id->state != CMA_CONNECT)
			break;
		e = event_new(id, id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		if (e == NULL)
			break;
		e->kind = CMA_EV_CONN_RESP;
		event_pdata(e, ev->private_data, ev->private_data_len, false);
		e->ev.param.conn.responder_resources = ev->param.rep.initiator_depth;
		e->ev.param.conn.initiator_depth = ev->param.rep.responder_resources;
		e->ev.param.conn.flow_control = ev->param.rep.flow_control;
		e->ev.param.conn.rnr_retry_count = ev->param.rep.rnr_retry_count;
		e->ev.param.conn.srq = ev->param.rep.srq;
		e->ev.param.conn.qp_num = ev->param.rep.remote_qpn;
		id->remote_qpn = ev->param.rep.remote_qpn;
		event_post(id, e);
		break;
	case SRNIC_CM_EV_RTU_RECEIVED:
	case SRNIC_CM_EV_USER_ESTABLISHED:
		/* no private data: Linux's cma hands none up from the RTU */
		event_post(id, event_new(id, id, RDMA_CM_EVENT_ESTABLISHED, 0));
		break;
	case SRNIC_CM_EV_DREQ_RECEIVED:
	case SRNIC_CM_EV_DREP_RECEIVED:
		disconnected(id, 0);
		break;
	case SRNIC_CM_EV_DREQ_ERROR:
		disconnected(id, -ETIMEDOUT);
		break;
	case SRNIC_CM_EV_TIMEWAIT_EXIT:
		/* only after a disconnect, as Linux's cma_ib_handler: the
		 * timewait a REJ STALE_CONN (or any REJ of a connection begun)
		 * put the CM id in ends unseen, the id still in CONNECT */
		if (id->state == CMA_DISCONNECT)
			event_post(id, event_new(id, id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0));
		break;
	case SRNIC_CM_EV_REJ_RECEIVED:
		e = event_new(id, id, RDMA_CM_EVENT_REJECTED, (int)ev->param.rej.reason);
		if (e == NULL)
			break;
		e->kind = CMA_EV_REJECTED;
		event_pdata(e, ev->private_data, ev->private_data_len, false);
		/* the id stays in CONNECT, as Linux's: no new address or
		 * connect on it (its CM id is still there); a new id is needed */
		event_post(id, e);
		break;
	case SRNIC_CM_EV_REQ_EXPIRED:
		if (id->req_ev != NULL) {
			/* never taken: it goes as if it never came, and its
			 * listener's backlog has the room again */
			struct cma_event *req = id->req_ev;

			request_dequeued(req);
			event_unqueue(id->chan, req);
			free(req);
			TAILQ_REMOVE(&cma.ids, id, link);
			id->chan->nb_ids--;
			free(id);
			rc = 1; /* its CM id goes too */
			break;
		}
		/* taken, not answered, and the peer gave up: as a REP_ERROR */
		__attribute__((fallthrough));
	case SRNIC_CM_EV_REQ_ERROR:
	case SRNIC_CM_EV_REP_ERROR:
	case SRNIC_CM_EV_SIDR_REQ_ERROR:
		/* as after a REJ: the id stays in CONNECT */
		event_post(id, event_new(id, id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT));
		break;
	case SRNIC_CM_EV_SIDR_REP_RECEIVED:
		if (ev->param.sidr_rep.status != SRNIC_CM_SIDR_SUCCESS) {
			e = event_new(id, id, RDMA_CM_EVENT_UNREACHABLE, (int)ev->param.sidr_rep.status);
		} else {
			e = event_new(id, id, RDMA_CM_EVENT_ESTABLISHED, 0);
			if (e != NULL) {
				ud_ah_attr(id, &e->ev.param.ud.ah_attr);
				e->ev.param.ud.qp_num = ev->param.sidr_rep.qpn;
				e->ev.param.ud.qkey = ev->param.sidr_rep.qkey;
			}
			id->remote_qpn = ev->param.sidr_rep.qpn;
			id->remote_qkey = ev->param.sidr_rep.qkey;
		}
		if (e != NULL)
			event_pdata(e, ev->private_data, ev->private_data_len, true);
		event_post(id, e);
		break;
	case SRNIC_CM_EV_MRA_RECEIVED:
	default:
		break;
	}
	pthread_mutex_unlock(&cma_lock);
	return rc;
}

/* Address resolutions waiting for ARP: each asked again, answered or
 * timed out; how many still wait. */
static unsigned int
cma_resolve_step(void)
{
	unsigned int waiting = 0;
	struct cma_id *id;
	uint64_t now;

	pthread_mutex_lock(&cma_lock);
	now = now_ms();
	TAILQ_FOREACH(id, &cma.ids, link) {
		union ibv_gid dgid;
		int rc;

		if (id->state != CMA_ADDR_QUERY)
			continue;
		dgid = id->id.route.addr.addr.ibaddr.dgid;
		rc = cm_ops->resolve_neigh(&dgid);
		if (rc == 0) {
			state_exch(id, CMA_ADDR_RESOLVED);
			id->id.verbs = cma.verbs;
			if (id->id.pd == NULL)
				id->id.pd = cma.pd;
			id->id.port_num = 1;
			event_post(id, event_new(id, id, RDMA_CM_EVENT_ADDR_RESOLVED, 0));
		} else if (rc != -EAGAIN || now >= id->resolve_deadline_ms) {
			state_exch(id, CMA_ADDR_BOUND);
			event_post(id, event_new(id, id, RDMA_CM_EVENT_ADDR_ERROR,
						 rc == -EAGAIN ? -ETIMEDOUT : rc));
		} else {
			waiting++;
		}
	}
	pthread_mutex_unlock(&cma_lock);
	return waiting;
}

/* The progress thread's CM hook (embedded): the resolutions' step. */
static void
cma_tick(void *arg)
{
	(void)arg;
	cma_resolve_step();
}

/* ---- event channels ---- */

struct rdma_event_channel *
rdma_create_event_channel(void)
{
	struct cma_channel *ch;

	if (cma_init() != 0)
		return NULL;
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	TAILQ_INIT(&ch->q);
	ch->ch.fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	return &ch->ch;
}

/* Destroyed channels a late rdma_get_cm_event() may still read (under cma_lock). */
#define CMA_DEAD_CHANNELS_KEPT 64
static struct cma_channel *dead_channels[CMA_DEAD_CHANNELS_KEPT];
static unsigned int dead_next;

void
rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cma_channel *ch = cma_chan(channel);
	struct cma_event *e;
	int fd;

	pthread_mutex_lock(&cma_lock);
	if (ch->nb_ids != 0) {
		/* rdma-core asserts the same: ids must go first */
		pthread_mutex_unlock(&cma_lock);
		cma_log("rdma_destroy_event_channel: %u ids still use the channel; "
			"destroy them first", ch->nb_ids);
		return;
	}
	while ((e = TAILQ_FIRST(&ch->q)) != NULL) {
		TAILQ_REMOVE(&ch->q, e, link);
		free(e);
	}
	/* Not freed at once: rping's CM thread calls rdma_get_cm_event() on
	 * the channel its main thread destroyed; it reads fd -1 and sleeps
	 * (cma_sleep_forever). The oldest of CMA_DEAD_CHANNELS_KEPT goes. */
	fd = ch->ch.fd;
	__atomic_store_n(&ch->ch.fd, -1, __ATOMIC_SEQ_CST);   /* before the close */
	close(fd);
	free(dead_channels[dead_next]);
	dead_channels[dead_next] = ch;
	dead_next = (dead_next + 1) % CMA_DEAD_CHANNELS_KEPT;
	pthread_mutex_unlock(&cma_lock);
}

/* ---- QPs ---- */

static int
modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	int rc = ibv_modify_qp(qp, a, mask);

	return rc != 0 ? err(rc) : 0;
}

/* The attributes for qp_state, as rdma_init_qp_attr gives them: the CM's
 * once it has a connection, else (INIT before a REQ, UD ids) our own. */
static int
init_qp_attr(struct cma_id *id, struct ibv_qp_attr *a, int *mask)
{
	enum ibv_qp_state want = a->qp_state;
	int rc;

	if (id->id.qp_type != IBV_QPT_UD && id->cm_id != NULL) {
		rc = cm_ops->init_qp_attr(id->cm_id, a, mask);
		if (rc == 0) {
			/* as Linux's cma: our QP receives from our sequence, the
			 * Starting PSN of our REQ or REP (the passive side goes to
			 * RTR before its REP, when the CM has none yet) */
			if (want == IBV_QPS_RTR)
				a->rq_psn = id->seq;
			/* before rdma_accept() the CM's depths are the peer's
			 * offer (rdma_rxe's: 128): no more than the device has */
			if (want == IBV_QPS_RTR && (*mask & IBV_QP_MAX_DEST_RD_ATOMIC))
				a->max_dest_rd_atomic = RTE_MIN(a->max_dest_rd_atomic,
								cma.max_resp_res);
			if (want == IBV_QPS_RTS && (*mask & IBV_QP_MAX_QP_RD_ATOMIC))
				a->max_rd_atomic = RTE_MIN(a->max_rd_atomic, cma.max_init_depth);
			if (want == IBV_QPS_RTS && id->ack_timeout != 0)
				a->timeout = id->ack_timeout;
			if (want == IBV_QPS_RTR && id->tos_set)
				a->ah_attr.grh.traffic_class = id->tos;
			return 0;
		}
		if (want != IBV_QPS_INIT)
			return err(-rc);
	}
	memset(a, 0, sizeof(*a));
	a->qp_state = want;
	switch (want) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->id.qp_type == IBV_QPT_UD) {
			a->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
		} else {
			/* rdma_cm's before a connection; the CM's come at RTR */
			a->qp_access_flags = 0;
			*mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (id->id.qp_type != IBV_QPT_UD)
			return err(EINVAL);
		*mask = IBV_QP_STATE;
		return 0;
	case IBV_QPS_RTS:
		if (id->id.qp_type != IBV_QPT_UD)
			return err(EINVAL);
		a->sq_psn = id->seq;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		return 0;
	default:
		return err(EINVAL);
	}
}

static int
qp_to(struct cma_id *id, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	if (init_qp_attr(id, &a, &mask) != 0)
		return -1;
	return modify(id->id.qp, &a, mask);
}

/* RC/UC before RTR: INIT again with the CM's access flags (rdma-core's
 * ucma_modify_qp_rtr does the same), then RTR; resp_res caps
 * max_dest_rd_atomic. */
static int
qp_rtr(struct cma_id *id, uint8_t resp_res)
{
	struct ibv_qp_attr a;
	int mask;

	if (id->id.qp == NULL)
		return 0;
	if (qp_to(id, IBV_QPS_INIT) != 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (init_qp_attr(id, &a, &mask) != 0)
		return -1;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > resp_res)
		a.max_dest_rd_atomic = resp_res;
	return modify(id->id.qp, &a, mask);
}

static int
qp_rts(struct cma_id *id, uint8_t init_depth)
{
	struct ibv_qp_attr a;
	int mask;

	if (id->id.qp == NULL)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (init_qp_attr(id, &a, &mask) != 0)
		return -1;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > init_depth)
		a.max_rd_atomic = init_depth;
	return modify(id->id.qp, &a, mask);
}

static void
qp_err(struct cma_id *id)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (id->id.qp != NULL)
		ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

/* cma_init()'s: every id that names the device has it */
static struct ibv_pd *
default_pd(void)
{
	if (cma.pd == NULL)
		errno = ENODEV;
	return cma.pd;
}

static int
create_cqs(struct cma_id *id, uint32_t send_size, uint32_t recv_size)
{
	struct ibv_context *v = cma.verbs;

	if (recv_size != 0) {
		id->id.recv_cq_channel = ibv_create_comp_channel(v);
		if (id->id.recv_cq_channel == NULL)
			return -1;
		id->id.recv_cq = ibv_create_cq(v, (int)recv_size, &id->id, id->id.recv_cq_channel, 0);
		if (id->id.recv_cq == NULL)
			return -1;
	}
	if (send_size != 0) {
		id->id.send_cq_channel = ibv_create_comp_channel(v);
		if (id->id.send_cq_channel == NULL)
			return -1;
		id->id.send_cq = ibv_create_cq(v, (int)send_size, &id->id, id->id.send_cq_channel, 0);
		if (id->id.send_cq == NULL)
			return -1;
	}
	id->own_cqs = true;
	return 0;
}

static void
destroy_cqs(struct cma_id *id)
{
	if (!id->own_cqs)
		return;
	if (id->id.recv_cq != NULL)
		ibv_destroy_cq(id->id.recv_cq);
	if (id->id.recv_cq_channel != NULL)
		ibv_destroy_comp_channel(id->id.recv_cq_channel);
	if (id->id.send_cq != NULL && id->id.send_cq != id->id.recv_cq)
		ibv_destroy_cq(id->id.send_cq);
	if (id->id.send_cq_channel != NULL && id->id.send_cq_channel != id->id.recv_cq_channel)
		ibv_destroy_comp_channel(id->id.send_cq_channel);
	id->id.recv_cq = id->id.send_cq = NULL;
	id->id.recv_cq_channel = id->id.send_cq_channel = NULL;
	id->own_cqs = false;
}

int
rdma_create_qp(struct rdma_cm_id *rid, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct cma_id *id = cma_id(rid);
	struct ibv_qp_init_attr a;
	struct ibv_qp *qp;

	if (rid == NULL)
		return err(EINVAL);
	if (attr == NULL)
		return err(EINVAL);
	if (rid->verbs == NULL)
		rid->verbs = cma.verbs;
	if (pd == NULL)
		pd = default_pd();
	if (pd == NULL)
		return -1;
	if (pd->context != cma.verbs && pd->context->device != cma.priv.ibdev)
		return err(EINVAL);
	a = *attr;
	if (a.send_cq == NULL && a.recv_cq == NULL && rid->send_cq == NULL) {
		if (create_cqs(id, a.cap.max_send_wr, a.srq != NULL ? 0 : a.cap.max_recv_wr) != 0)
			goto fail;
	}
	if (a.send_cq == NULL)
		a.send_cq = rid->send_cq;
	if (a.recv_cq == NULL)
		a.recv_cq = rid->recv_cq != NULL ? rid->recv_cq : rid->send_cq;
	if (a.srq == NULL)
		a.srq = rid->srq;
	qp = ibv_create_qp(pd, &a);
	if (qp == NULL)
		goto fail;
	rid->qp = qp;
	rid->pd = pd;
	if (rid->qp_type == IBV_QPT_UD || a.qp_type == IBV_QPT_UD) {
		if (qp_to(id, IBV_QPS_INIT) != 0 || qp_to(id, IBV_QPS_RTR) != 0 ||
		    qp_to(id, IBV_QPS_RTS) != 0)
			goto fail_qp;
	} else if (qp_to(id, IBV_QPS_INIT) != 0) {
		goto fail_qp;
	}
	attr->cap = a.cap;
	attr->send_cq = a.send_cq;
	attr->recv_cq = a.recv_cq;
	return 0;
fail_qp:
	{
		int e = errno;

		ibv_destroy_qp(qp);
		rid->qp = NULL;
		errno = e;
	}
fail:
	{
		int e = errno != 0 ? errno : ENOMEM;

		destroy_cqs(id);
		errno = e;
	}
	return -1;
}

int
rdma_create_qp_ex(struct rdma_cm_id *rid, struct ibv_qp_init_attr_ex *ax)
{
	struct ibv_qp_init_attr a;
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	if (ax == NULL)
		return err(EINVAL);
	/* the PD only: the extended creation's other attributes are not served */
	if (ax->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD)
		return err(EOPNOTSUPP);
	memset(&a, 0, sizeof(a));
	a.qp_context = ax->qp_context;
	a.send_cq = ax->send_cq;
	a.recv_cq = ax->recv_cq;
	a.srq = ax->srq;
	a.cap = ax->cap;
	a.qp_type = ax->qp_type;
	a.sq_sig_all = ax->sq_sig_all;
	rc = rdma_create_qp(rid, (ax->comp_mask & IBV_QP_INIT_ATTR_PD) ? ax->pd : NULL, &a);
	if (rc == 0)
		ax->cap = a.cap;
	return rc;
}

void
rdma_destroy_qp(struct rdma_cm_id *rid)
{
	if (rid == NULL)
		return;
	if (rid->qp != NULL) {
		cma_mc_leave(cma_id(rid), rid->qp); /* attached: not destroyed */
		ibv_destroy_qp(rid->qp);
	}
	rid->qp = NULL;
	destroy_cqs(cma_id(rid));
}

int
rdma_init_qp_attr(struct rdma_cm_id *rid, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	if (qp_attr == NULL || qp_attr_mask == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	rc = init_qp_attr(cma_id(rid), qp_attr, qp_attr_mask);
	pthread_mutex_unlock(&cma_lock);
	return rc;
}

/* The listener on id's port (its port space) that holds the port's CM
 * listen, or the bound id that took it early, or NULL (under cma_lock). */
static struct cma_id *
listen_owner(const struct cma_id *id)
{
	struct cma_id *o;

	TAILQ_FOREACH(o, &cma.ids, link)
		if (o != id && (o->state == CMA_LISTEN || o->early) && o->cm_id != NULL &&
		    o->id.ps == id->id.ps && o->port == id->port)
			return o;
	return NULL;
}

/* An id going away (or connecting) that holds its port's CM listen hands
 * it to another listener on the port, else (attached) to another id bound
 * to the port, which then holds it early as if its own bind had taken it: the
 * requests held for the port stay held for that id's rdma_listen(), not
 * rejected while the port is still bound here (under cma_lock; the CM's
 * handler reads its context under it too). A listener target takes none of
 * them: a request is held only while the port has no listener (the
 * port's first rdma_listen() took or rejected every one, and one that
 * came since was answered at once, handle_request()), so id holds none
 * then. */
static void
listen_hand_over(struct cma_id *id)
{
	struct cma_id *o, *to = NULL;
	struct cma_held *r;

	if ((id->state != CMA_LISTEN && !id->early) || id->cm_id == NULL)
		return;
	TAILQ_FOREACH(o, &cma.ids, link) {
		if (o == id || o->cm_id != NULL || o->id.ps != id->id.ps || o->port != id->port)
			continue;
		if (o->state == CMA_LISTEN) {
			to = o;
			break;
		}
		/* (embedded, a bind takes no listen: nor does a hand-over) */
		if (to == NULL && o->state == CMA_ADDR_BOUND && cma.attached)
			to = o;
	}
	if (to == NULL)
		return;
	to->cm_id = id->cm_id;
	to->early = to->state != CMA_LISTEN;
	cm_ops->id_set_context(to->cm_id, to);
	if (to->early)
		TAILQ_FOREACH(r, &cma.held, link)
			if (r->owner == id) {
				r->owner = to;
				id->nb_held--;
				to->nb_held++;
			}
	id->cm_id = NULL;
	id->early = false;
}

/* An id that took its port's CM listen at rdma_bind_addr() and leaves
 * the bound state otherwise than by rdma_listen() (rdma_resolve_addr(),
 * rdma_destroy_id()): the CM listen goes to a listener on the port, or
 * is returned for srnic_cm_destroy_id() once cma_lock is let go; the
 * requests it held go into gone[] (n: room) for their REJ. Under cma_lock. */
static struct srnic_cm_id *
early_drop(struct cma_id *id, struct srnic_cm_id **gone, unsigned int *n)
{
	struct srnic_cm_id *cmid;

	if (id->early)
		listen_hand_over(id);
	*n = requests_held_take(id, true, gone, *n);
	if (!id->early)
		return NULL;
	cmid = id->cm_id;
	id->cm_id = NULL;
	id->early = false;
	return cmid;
}

/* ---- ids ---- */

static struct cma_id *
id_new(struct cma_channel *ch, void *context, enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_id *id = calloc(1, sizeof(*id));

	if (id == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qpt;
	id->id.channel = &ch->ch;
	id->chan = ch;
	id->state = CMA_IDLE;           /* a new id: no transition yet */
	id->seq = rand24();
	id->backlog = CMA_DEFAULT_BACKLOG;
	pthread_mutex_lock(&cma_lock);
	ch->nb_ids++;
	TAILQ_INSERT_TAIL(&cma.ids, id, link);
	pthread_mutex_unlock(&cma_lock);
	return id;
}

static int
create_id(struct rdma_event_channel *channel, struct rdma_cm_id **out, void *context,
	  enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_channel *ch;
	struct cma_id *id;
	bool sync = channel == NULL;

	if (out == NULL)
		return err(EINVAL);
	if (cma_init() != 0)
		return -1;
	if (sync) {
		channel = rdma_create_event_channel();
		if (channel == NULL)
			return -1;
	}
	ch = cma_chan(channel);
	ch->sync = sync;
	id = id_new(ch, context, ps, qpt);
	if (id == NULL) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return -1;
	}
	id->sync = sync;
	*out = &id->id;
	return 0;
}

static enum ibv_qp_type
ps_qp_type(enum rdma_port_space ps)
{
	return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
}

int
rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
	       enum rdma_port_space ps)
{
	if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB)
		return err(EINVAL);
	return create_id(channel, id, context, ps, ps_qp_type(ps));
}

/* rdma_create_ep's: the port space and QP type from rdma_getaddrinfo */
int
cma_create_id_qpt(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		  enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	return create_id(channel, id, context, ps, qpt);
}

#ifdef SRNIC_TEST_HOOKS
/* The test hook SRNIC_RDMACM_TEST_HOLD_DESTROY=1 (test/rdmacm/hooks'
 * build only): rdma_destroy_id() of an id that holds its port's CM
 * listen, the id marked CMA_DESTROYING, says so on stderr and waits for a
 * REQ to reach it before it destroys the CM listen, so a test sends the
 * REQ into that window every time (the CM thread may deliver one there
 * under load). */
static void
hold_destroy(struct cma_id *id)
{
	struct timespec end;
	int hold_s = srnic_test_hook_hold_s();

	fprintf(stderr, "srnic librdmacm: test hook: rdma_destroy_id held for a REQ\n");
	clock_gettime(CLOCK_REALTIME, &end);    /* cma_acked's clock */
	end.tv_sec += hold_s;
	pthread_mutex_lock(&cma_lock);
	while (!id->destroy_req_seen)
		if (pthread_cond_timedwait(&cma_acked, &cma_lock, &end) == ETIMEDOUT) {
			fprintf(stderr, "srnic librdmacm: test hook: no REQ came in %d s, the "
				"destroy goes on\n", hold_s);
			break;
		}
	pthread_mutex_unlock(&cma_lock);
}
#endif

int
rdma_destroy_id(struct rdma_cm_id *rid)
{
	struct cma_id *id = cma_id(rid);
	struct srnic_cm_id *cmid, *gone[CMA_HELD_MAX];
	unsigned int ngone;
	struct cma_channel *ch;
#ifdef SRNIC_TEST_HOOKS
	bool held_listen;
#endif

	if (rid == NULL)
		return err(EINVAL);
	cma_mc_leave(id, NULL);
	pthread_mutex_lock(&cma_lock);
	listen_hand_over(id);
	ngone = requests_held_take(id, true, gone, RTE_DIM(gone));
#ifdef SRNIC_TEST_HOOKS
	held_listen = id->state == CMA_LISTEN || id->early;
#endif
	cmid = take_cm_id(id);
	id->early = false;
	pthread_mutex_unlock(&cma_lock);
	requests_reject(gone, ngone, SRNIC_CM_REJ_INVALID_SERVICE_ID);
	if (cmid != NULL) {
		/* a DREQ received: its DREP (else the CM's destroy does what
		 * the state needs: REJ, DREQ, a listener stops) */
		if (cm_ops->id_state(cmid) == SRNIC_CM_DREQ_RCVD)
			cm_ops->send_drep(cmid, NULL, 0);
#ifdef SRNIC_TEST_HOOKS
		if (cma.hold_destroy && held_listen)
			hold_destroy(id);
#endif
		cm_ops->destroy_id(cmid);      /* no handler for it after this */
#ifdef SRNIC_TEST_HOOKS
		pthread_mutex_lock(&cma_lock);
		id->cm_id_gone = true;          /* for hold_rtu() */
		pthread_mutex_unlock(&cma_lock);
#endif
	}
	if (id->id.event != NULL) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	pthread_mutex_lock(&cma_lock);
	/* a listener's connection requests not yet taken: their new ids go */
	for (;;) {
		struct cma_event *e;
		struct cma_id *child = NULL;

		TAILQ_FOREACH(e, &id->chan->q, link)
			if (e->kind == CMA_EV_CONN_REQ && e->owner == id) {
				request_dequeued(e);
				child = cma_id(e->ev.id);
				event_unqueue(id->chan, e);
				free(e);
				break;
			}
		if (child == NULL)
			break;
		pthread_mutex_unlock(&cma_lock);
		rdma_destroy_id(&child->id);
		pthread_mutex_lock(&cma_lock);
	}
	events_forget(id);
	/* every event handed out about the id acknowledged first, as rdma-core */
	while (id->events_acked != id->events_reported)
		pthread_cond_wait(&cma_acked, &cma_lock);
	TAILQ_REMOVE(&cma.ids, id, link);
	ch = id->chan;
	ch->nb_ids--;
	pthread_mutex_unlock(&cma_lock);
	free(id->ep_qp_attr);
	if (id->sync)
		rdma_destroy_event_channel(&ch->ch);
	free(id);
#ifdef SRNIC_TEST_HOOKS
	if (cma.attached)
		cma_attach_hook_freed();
#endif
	return 0;
}

/* The bind of rdma_bind_addr(), and of rdma_listen() on an unbound id
 * (under cma_lock): bind_locked(), then, attached, the port's CM listen
 * taken in the daemon unless an id of this process holds it, so a
 * program that tells its port before it listens (qperf's server) has its
 * client's REQ wait for rdma_listen() instead of racing it (Linux's REJ
 * in that window: doc/rdmacm.md); one round trip, rdma_listen() then
 * none. A port another process listens on (EBUSY) is EADDRINUSE, as
 * Linux's bind of a port in use, and the id is left unbound; a port-0
 * bind goes on to the next port of its walk of the range, as the
 * kernel's cma_alloc_any_port() skips a port in use, and fails once
 * every port of it was tried (EADDRNOTAVAIL, bind_locked()) or the daemon
 * refused more than CMA_BIND_ANY_ASKS of them (EADDRNOTAVAIL: each refusal
 * cost a round trip with cma_lock held, and a range of 28,232 ports would
 * cost as many). */
static int
bind_take(struct cma_id *id, const struct sockaddr *addr)
{
	struct srnic_cm_id *cmid;
	struct port_walk walk;
	union ibv_gid g;
	uint16_t want = 0;
	unsigned int refused = 0;
	int rc;

	if (addr != NULL)
		sa_gid(addr, &g, &want);
	port_walk_start(&walk);
	for (;;) {
		rc = bind_locked(id, addr, &walk);
		if (rc != 0 || !cma.attached || listen_owner(id) != NULL)
			return rc;
		cmid = cm_ops->create_listen(cma_handler, id, CMA_SERVICE_ID(id->id.ps, id->port), 0);
		if (cmid != NULL) {
			id->cm_id = cmid;
			id->early = true;
			return 0;
		}
		if (errno != EBUSY)
			return 0;       /* rdma_listen() asks again */
		bind_undo(id);
		if (want != 0)
			return err(EADDRINUSE);
		if (++refused > CMA_BIND_ANY_ASKS) {
			cma_log("a port-0 bind: srnicd refused %u ports of %u-%u in a row (another "
				"process of srnicd's listens on each; CMA_BIND_ANY_ASKS): bind a port "
				"of your own, or set SRNIC_RDMACM_PORT_RANGE to a range those "
				"processes do not fill", refused, cma.port_lo, cma.port_hi);
			return err(EADDRNOTAVAIL);
		}
	}
}

int
rdma_bind_addr(struct rdma_cm_id *rid, struct sockaddr *addr)
{
	struct cma_id *id = cma_id(rid);
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	rc = bind_take(id, addr);
	pthread_mutex_unlock(&cma_lock);
	return rc;
}

/* A sync id's call waits for its event (rdma-core's ucma_complete): the
 * event stays in id->event until the next. */
static int
complete(struct cma_id *id)
{
	struct rdma_cm_event *ev;

	if (!id->sync)
		return 0;
	if (id->id.event != NULL) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(&id->chan->ch, &ev) != 0)
		return -1;
	id->id.event = ev;
	if (ev->status == 0)
		return 0;
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return err(ECONNREFUSED);
	return err(ev->status < 0 ? -ev->status : ev->status);
}

static bool
gid_unspecified(const union ibv_gid *g)
{
	static const uint8_t zero[16];

	return memcmp(g->raw, zero, 16) == 0 ||
	       (srnic_gid_is_v4mapped(g) && memcmp(&g->raw[12], zero, 4) == 0);
}

/* rdma_resolve_addr()'s bind of an unbound id (under cma_lock): to src
 * if given, else to any of dst's family (a link-local destination's
 * scope kept); an unspecified source to a destination off the device is
 * bound to the address the packets leave from (GID si), as before. */
static int
bind_for(struct cma_id *id, const struct sockaddr *src, const struct sockaddr *dst, int si)
{
	struct sockaddr_storage b;
	union ibv_gid bg, dg;
	uint16_t bport, dport;

	memset(&b, 0, sizeof(b));
	if (src != NULL && (src->sa_family == AF_INET || src->sa_family == AF_INET6))
		memcpy(&b, src, src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							   : sizeof(struct sockaddr_in));
	else
		b.ss_family = dst->sa_family;
	if (!sa_gid((struct sockaddr *)&b, &bg, &bport) || !sa_gid(dst, &dg, &dport))
		return err(EAFNOSUPPORT);
	if (gid_unspecified(&bg) && !gid_any(&dg)) {
		uint32_t scope = dst->sa_family == AF_INET6 ?
			((const struct sockaddr_in6 *)dst)->sin6_scope_id : 0;

		sa_from_gid(&b, srnic_gid_is_v4mapped(&cma.gid[si]) ? dst->sa_family : AF_INET6,
			    &cma.gid[si], bport, scope);
	}
	return bind_locked(id, (struct sockaddr *)&b, NULL);
}

/* The source of a resolve to dg (under cma_lock): a wildcard's is the
 * address the packets leave from (GID si); to any or loopback, the one
 * bound, else the destination's, else loopback (Linux's
 * cma_resolve_loopback()). The route's source GID is the device's. */
static int
resolve_source(struct cma_id *id, const union ibv_gid *dg, int si)
{
	if (id->wildcard) {
		if (!gid_any(dg)) {
			id->src_gid = cma.gid[si];
		} else if (gid_unspecified(&id->src_gid)) {
			if (!gid_unspecified(dg)) {
				id->src_gid = *dg;
			} else if (srnic_gid_is_v4mapped(dg)) {
				struct in_addr lo = { .s_addr = htonl(INADDR_LOOPBACK) };

				srnic_gid_from_ipv4(&id->src_gid, &lo);
			} else {
				memcpy(id->src_gid.raw, &in6addr_loopback, 16);
			}
		}
	} else if (!gid_any(dg) && srnic_gid_is_v4mapped(&id->src_gid) != srnic_gid_is_v4mapped(dg)) {
		cma_log("rdma_resolve_addr: the id is bound to an address of the other IP "
			"version than the destination's");
		return err(EINVAL);
	}
	id->id.route.addr.addr.ibaddr.sgid = gid_index(&id->src_gid) >= 0 ? id->src_gid
									  : cma.gid[si];
	return 0;
}

int
rdma_resolve_addr(struct rdma_cm_id *rid, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		  int timeout_ms)
{
	struct cma_id *id = cma_id(rid);
	struct srnic_cm_id *early = NULL, *gone[CMA_HELD_MAX];
	unsigned int ngone = 0;
	union ibv_gid dg;
	uint16_t dport;
	int rc = 0, si;

	if (rid == NULL)
		return err(EINVAL);
	if (dst_addr == NULL)
		return err(EINVAL);
	if (!sa_gid(dst_addr, &dg, &dport)) {
		cma_log("rdma_resolve_addr: AF_IB is not served (srnic0 is RoCEv2): give an IPv4 "
			"or IPv6 destination");
		return err(EAFNOSUPPORT);
	}
	si = route_src(&dg);
	if (si < 0) {
		cma_log("rdma_resolve_addr: srnic0 has no %s address (it has %s): start it with "
			"%s, or give a destination of its family", srnic_gid_is_v4mapped(&dg) ?
			"IPv4" : "IPv6", dev_addrs(), srnic_gid_is_v4mapped(&dg) ?
			"SRNIC_IP=A.B.C.D (usertools/srnic run --ip)" :
			"SRNIC_IP6=ADDR (usertools/srnic run --ip6)");
		return err(ENETUNREACH);
	}
	pthread_mutex_lock(&cma_lock);
	if (id->state == CMA_IDLE)
		rc = bind_for(id, src_addr, dst_addr, si);
	else if (id->state != CMA_ADDR_BOUND)
		rc = err(EINVAL);
	if (rc == 0)
		rc = resolve_source(id, &dg, si);
	if (rc == 0) {
		src_show(id, dst_addr->sa_family, NULL); /* the source now, in dst's family */
		id->wildcard = false;
		memset(&id->id.route.addr.dst_storage, 0, sizeof(id->id.route.addr.dst_storage));
		memcpy(&id->id.route.addr.dst_storage, dst_addr, dst_addr->sa_family == AF_INET6 ?
		       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
		/* to any or loopback: the device itself (its GID: in-device
		 * loopback), as cma_bind_loopback() takes the first device */
		id->id.route.addr.addr.ibaddr.dgid = gid_any(&dg) ? cma.gid[SRNIC_GID_INDEX_IP] : dg;
		id->resolve_deadline_ms = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
		state_exch(id, CMA_ADDR_QUERY);
		/* a bound id that connects: no listen of its port */
		early = early_drop(id, gone, &ngone);
	}
	pthread_mutex_unlock(&cma_lock);
	if (early != NULL)
		cm_ops->destroy_id(early);
	requests_reject(gone, ngone, SRNIC_CM_REJ_INVALID_SERVICE_ID);
	if (rc != 0)
		return rc;
	/* known neighbours answer now; else the progress thread (attached: the
	 * CM thread, woken to ask again until it is answered) */
	if (cma_resolve_step() > 0 && cma.attached)
		cma_attach_wake();
	return complete(id);
}

/* The flow label of a connection's path, from its ports (as RoCE v2's
 * UDP source port entropy wants: different connections, different
 * labels); 20 bits. */
static uint32_t
flow_label(uint16_t sport, uint16_t dport)
{
	uint64_t v = (uint64_t)sport * dport;

	v ^= v >> 20;
	v ^= v >> 40;
	return (uint32_t)(v & 0xfffff);
}

int
rdma_resolve_route(struct rdma_cm_id *rid, int timeout_ms)
{
	struct cma_id *id = cma_id(rid);
	struct ibv_sa_path_rec *p = &id->path;

	if (rid == NULL)
		return err(EINVAL);
	(void)timeout_ms;
	pthread_mutex_lock(&cma_lock);
	if (id->state == CMA_ROUTE_RESOLVED) {
		/* RDMA_OPTION_IB_PATH set it */
	} else if (id->state != CMA_ADDR_RESOLVED) {
		pthread_mutex_unlock(&cma_lock);
		return err(EINVAL);
	} else {
		memset(p, 0, sizeof(*p));
		p->sgid = rid->route.addr.addr.ibaddr.sgid;
		p->dgid = rid->route.addr.addr.ibaddr.dgid;
		p->flow_label = htonl(flow_label(ntohs(id->src_port),
						 ntohs(sa_port(&rid->route.addr.dst_addr))));
		p->hop_limit = CMA_HOP_LIMIT;
		p->traffic_class = id->tos_set ? id->tos : 0;
		p->reversible = 1;
		p->numb_path = 1;
		p->pkey = htons(SRNIC_PKEY_DEFAULT);
		p->slid = p->dlid = htons(0xffff);
		p->mtu_selector = 2;
		p->mtu = cma.mtu;
		p->rate_selector = 2;
		p->rate = IBV_RATE_MAX;
		p->packet_life_time_selector = 2;
		p->packet_life_time = CMA_PACKET_LIFETIME;
	}
	rid->route.path_rec = p;
	rid->route.num_paths = 1;
	state_exch(id, CMA_ROUTE_RESOLVED);
	event_post(id, event_new(id, id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0));
	pthread_mutex_unlock(&cma_lock);
	return complete(id);
}

int
rdma_listen(struct rdma_cm_id *rid, int backlog)
{
	struct cma_id *id = cma_id(rid);
	struct srnic_cm_id *cmid, *gone[CMA_HELD_MAX];
	unsigned int ngone;
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	if (id->state == CMA_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		if (bind_take(id, (struct sockaddr *)&any) != 0) {
			pthread_mutex_unlock(&cma_lock);
			return -1;
		}
	}
	if (id->state != CMA_ADDR_BOUND) {
		pthread_mutex_unlock(&cma_lock);
		return err(EINVAL);
	}
	/* as Linux's rdma_listen(): a REUSEADDR id shared its port at its
	 * bind, a listener may not (cma_check_port() with reuseaddr 0): an
	 * id of the port whose address overlaps, bound or listening, is
	 * EADDRNOTAVAIL (a wildcard on either side) or EADDRINUSE (the same
	 * address), and the id stays bound (it may listen once the other
	 * goes); without REUSEADDR its bind made it unique already */
	if (id->reuseaddr) {
		rc = port_check(id, id->port, &id->src_gid, id->bind_family, id->afonly, false);
		if (rc != 0) {
			pthread_mutex_unlock(&cma_lock);
			cma_log("rdma_listen on port %u: another id of this process holds the port "
				"(REUSEADDR shares a port until a listen, a listener's is its own, as "
				"Linux's): destroy that id first, or bind them to distinct addresses",
				id->port);
			return err(rc);
		}
	}
	/* as Linux's ucma_listen(): 0, negative or too many is the most */
	id->backlog = backlog > 0 && backlog < CMA_DEFAULT_BACKLOG ? backlog : CMA_DEFAULT_BACKLOG;
	/* the port's other listeners (0.0.0.0 and :: apart, an address and
	 * a wildcard) share the CM listen one of them holds; handle_request()
	 * finds whose a request is */
	if (!id->early && listen_owner(id) == NULL) {
		/* attached, one message to the daemon (rdma_bind_addr() did
		 * it already, unless the port's CM listen was another's) */
		cmid = cm_ops->create_listen(cma_handler, id, CMA_SERVICE_ID(rid->ps, id->port), 0);
		if (cmid == NULL) {
			rc = errno;
			pthread_mutex_unlock(&cma_lock);
			return err(rc == EBUSY ? EADDRINUSE : rc);
		}
		id->cm_id = cmid;
	}
	state_exch(id, CMA_LISTEN);
	id->early = false;
	/* requests that came to the port since its bind: their CONNECT_REQUESTs */
	ngone = requests_held_take(id, false, gone, RTE_DIM(gone));
	if (cma.trace) {
		char a[INET6_ADDRSTRLEN];

		if (id->bind_family == AF_INET)
			inet_ntop(AF_INET, &id->src_gid.raw[12], a, sizeof(a));
		else
			inet_ntop(AF_INET6, id->src_gid.raw, a, sizeof(a));
		cma_log("listening on %s%s%s:%u%s (port space 0x%x, service ID 0x%016llx)",
			id->bind_family == AF_INET6 ? "[" : "", a,
			id->bind_family == AF_INET6 ? "]" : "", id->port,
			id->wildcard && !id->afonly && id->bind_family == AF_INET6 ? " and IPv4" : "",
			(unsigned int)rid->ps,
			(unsigned long long)CMA_SERVICE_ID(rid->ps, id->port));
	}
	pthread_mutex_unlock(&cma_lock);
	requests_reject(gone, ngone, SRNIC_CM_REJ_CONSUMER_DEFINED);
	return 0;
}

/* Linux's cma_format_hdr(): IP version and addresses, our port. The
 * version is the addresses': IPv4-mapped ones (an AF_INET6 sockaddr
 * getaddrinfo's AI_V4MAPPED made) are IPv4, as the packets are, so a
 * peer's AF_INET listener takes the request (Linux's writes the
 * sockaddr's family, 6, that no IPv4 listener takes). */
static void
cma_hdr(uint8_t *h, struct cma_id *id)
{
	const struct sockaddr *d = &id->id.route.addr.dst_addr;
	uint16_t dport;
	union ibv_gid dg;

	memset(h, 0, CMA_HDR_LEN);
	h[0] = CMA_VERSION;
	memcpy(h + CMA_HDR_PORT, &id->src_port, 2);
	sa_gid(d, &dg, &dport);
	if (srnic_gid_is_v4mapped(&id->src_gid) && srnic_gid_is_v4mapped(&dg)) {
		h[1] = CMA_HDR_IPV4;
		memcpy(h + CMA_HDR_SRC + 12, &id->src_gid.raw[12], 4);
		memcpy(h + CMA_HDR_DST + 12, &dg.raw[12], 4);
	} else {
		h[1] = CMA_HDR_IPV6;
		memcpy(h + CMA_HDR_SRC, id->src_gid.raw, 16);
		memcpy(h + CMA_HDR_DST, dg.raw, 16);
	}
}

/* responder resources / initiator depth as rdma-core checks them:
 * RDMA_MAX_* means the device's maximum, more than it is EINVAL */
static int
valid_depth(uint8_t *v, uint8_t max)
{
	if (*v == RDMA_MAX_RESP_RES) {
		*v = max;
		return 0;
	}
	return *v > max ? err(EINVAL) : 0;
}

int
rdma_connect(struct rdma_cm_id *rid, struct rdma_conn_param *conn_param)
{
	struct cma_id *id = cma_id(rid);
	struct rdma_conn_param cp = { .retry_count = CMA_MAX_RETRY, .rnr_retry_count = CMA_MAX_RETRY };
	uint8_t pdata[SRNIC_CM_SIDR_REQ_PDATA];
	unsigned int max;
	struct srnic_cm_id *cmid;
	bool ud;
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	ud = rid->qp_type == IBV_QPT_UD;
	max = (ud ? SRNIC_CM_SIDR_REQ_PDATA : SRNIC_CM_REQ_PDATA) - CMA_HDR_LEN;
	if (conn_param != NULL) {
		cp = *conn_param;
	} else {
		/* as rdma-core: an id's depths are the device's until the
		 * program names others (a REQ offering 0 leaves the QP no
		 * RDMA READ or atomic, on either side) */
		cp.responder_resources = cma.max_resp_res;
		cp.initiator_depth = cma.max_init_depth;
	}
	if (cp.private_data_len > max) {
		cma_log("rdma_connect: %u bytes of private data, at most %u go with a %s",
			cp.private_data_len, max, ud ? "SIDR_REQ" : "REQ");
		return err(EINVAL);
	}
	if (!ud && (valid_depth(&cp.responder_resources, cma.max_resp_res) != 0 ||
		    valid_depth(&cp.initiator_depth, cma.max_init_depth) != 0))
		return -1;
	pthread_mutex_lock(&cma_lock);
	if (!state_comp_exch(id, CMA_ROUTE_RESOLVED, CMA_CONNECT)) {
		pthread_mutex_unlock(&cma_lock);
		return err(EINVAL);
	}
	cmid = cm_ops->create_id(cma_handler, id);
	if (cmid == NULL) {
		state_exch(id, CMA_ROUTE_RESOLVED);
		pthread_mutex_unlock(&cma_lock);
		return err(ENOMEM);
	}
	cma_hdr(pdata, id);
	if (cp.private_data_len != 0 && cp.private_data != NULL)
		memcpy(pdata + CMA_HDR_LEN, cp.private_data, cp.private_data_len);
	id->cm_id = cmid;
	id->disconnect_reported = false;
	/* what the REP may give us at most: Linux's passive side answers
	 * with its own depths whatever the REQ offered (rdma_rxe's perftest:
	 * 128 to our 16), and our QP cannot hold more than we offered */
	id->resp_res = cp.responder_resources;
	id->init_depth = cp.initiator_depth;
	if (ud) {
		struct srnic_cm_sidr_req_param p;

		memset(&p, 0, sizeof(p));
		path_to_cm(&p.path, &id->path);
		p.service_id = CMA_SERVICE_ID(rid->ps, ntohs(sa_port(&rid->route.addr.dst_addr)));
		p.private_data = pdata;
		p.private_data_len = (uint8_t)(CMA_HDR_LEN + cp.private_data_len);
		p.timeout_ms = CMA_SIDR_TIMEOUT_MS;
		p.max_cm_retries = CMA_MAX_CM_RETRIES;
		rc = cm_ops->send_sidr_req(cmid, &p);
	} else {
		struct srnic_cm_req_param p;

		memset(&p, 0, sizeof(p));
		path_to_cm(&p.path, &id->path);
		p.service_id = CMA_SERVICE_ID(rid->ps, ntohs(sa_port(&rid->route.addr.dst_addr)));
		p.qp_num = rid->qp != NULL ? rid->qp->qp_num : cp.qp_num;
		p.qp_type = rid->qp != NULL ? rid->qp->qp_type : rid->qp_type;
		p.starting_psn = id->seq;
		p.private_data = pdata;
		p.private_data_len = (uint8_t)(CMA_HDR_LEN + cp.private_data_len);
		p.responder_resources = cp.responder_resources;
		p.initiator_depth = cp.initiator_depth;
		p.remote_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
		p.local_cm_response_timeout = CMA_CM_RESPONSE_TIMEOUT;
		p.flow_control = cp.flow_control;
		p.retry_count = RTE_MIN(cp.retry_count, CMA_MAX_RETRY);
		p.rnr_retry_count = RTE_MIN(cp.rnr_retry_count, CMA_MAX_RETRY);
		p.max_cm_retries = CMA_MAX_CM_RETRIES;
		p.srq = rid->srq != NULL || (rid->qp != NULL && rid->qp->srq != NULL) ? 1 : cp.srq;
		rc = cm_ops->send_req(cmid, &p);
	}
	if (rc != 0) {
		id->cm_id = NULL;
		state_exch(id, CMA_ROUTE_RESOLVED);
		pthread_mutex_unlock(&cma_lock);
		cm_ops->destroy_id(cmid);
		return err(-rc);
	}
	pthread_mutex_unlock(&cma_lock);
	return complete(id);
}

int
rdma_accept(struct rdma_cm_id *rid, struct rdma_conn_param *conn_param)
{
	struct cma_id *id = cma_id(rid);
	struct rdma_conn_param cp;
	struct srnic_cm_id *cmid;
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	cmid = id->cm_id;
	pthread_mutex_unlock(&cma_lock);
	if (cmid == NULL)
		return err(EINVAL);
	memset(&cp, 0, sizeof(cp));
	if (conn_param != NULL) {
		cp = *conn_param;
		if (rid->qp_type != IBV_QPT_UD &&
		    (valid_depth(&cp.responder_resources, cma.max_resp_res) != 0 ||
		     valid_depth(&cp.initiator_depth, cma.max_init_depth) != 0))
			return -1;
		/* no more than the REQ asked for */
		cp.responder_resources = RTE_MIN(cp.responder_resources, id->resp_res);
		cp.initiator_depth = RTE_MIN(cp.initiator_depth, id->init_depth);
	} else {
		/* as rdma-core: what the REQ asked, at most the device's */
		cp.responder_resources = RTE_MIN(id->resp_res, cma.max_resp_res);
		cp.initiator_depth = RTE_MIN(id->init_depth, cma.max_init_depth);
		cp.rnr_retry_count = CMA_MAX_RETRY;
	}
	if (rid->qp_type == IBV_QPT_UD) {
		struct srnic_cm_sidr_rep_param p;

		if (cp.private_data_len > SRNIC_CM_SIDR_REP_PDATA)
			return err(EINVAL);
		memset(&p, 0, sizeof(p));
		p.qp_num = rid->qp != NULL ? rid->qp->qp_num : cp.qp_num;
		p.qkey = RDMA_UDP_QKEY;
		p.status = SRNIC_CM_SIDR_SUCCESS;
		p.private_data = cp.private_data;
		p.private_data_len = cp.private_data_len;
		rc = cm_ops->send_sidr_rep(cmid, &p);
		return rc != 0 ? err(-rc) : 0;
	}
	if (cp.private_data_len > SRNIC_CM_REP_PDATA)
		return err(EINVAL);
	if (qp_rtr(id, cp.responder_resources) != 0)
		goto reject;
	{
		struct srnic_cm_rep_param p;

		memset(&p, 0, sizeof(p));
		p.qp_num = rid->qp != NULL ? rid->qp->qp_num : cp.qp_num;
		p.starting_psn = id->seq;
		p.private_data = cp.private_data;
		p.private_data_len = cp.private_data_len;
		p.responder_resources = cp.responder_resources;
		p.initiator_depth = cp.initiator_depth;
		p.flow_control = cp.flow_control;
		p.rnr_retry_count = RTE_MIN(cp.rnr_retry_count, CMA_MAX_RETRY);
		p.srq = rid->srq != NULL || (rid->qp != NULL && rid->qp->srq != NULL) ? 1 : cp.srq;
		rc = cm_ops->send_rep(cmid, &p);
		if (rc != 0)
			return err(-rc);
	}
	/* RTS once the REP is out (the CM's state REP_SENT has the RTS
	 * attributes); the peer sends only after its RTU */
	if (qp_rts(id, cp.initiator_depth) != 0) {
		qp_err(id);
		return -1;
	}
	return complete(id);
reject:
	rc = errno;
	cm_ops->send_rej(cmid, SRNIC_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
	return err(rc);
}

int
rdma_reject(struct rdma_cm_id *rid, const void *private_data, uint8_t private_data_len)
{
	struct cma_id *id = cma_id(rid);
	struct srnic_cm_id *cmid;
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	cmid = id->cm_id;
	pthread_mutex_unlock(&cma_lock);
	if (cmid == NULL)
		return err(EINVAL);
	if (rid->qp_type == IBV_QPT_UD) {
		struct srnic_cm_sidr_rep_param p;

		memset(&p, 0, sizeof(p));
		p.status = SRNIC_CM_SIDR_REJECT;
		p.private_data = private_data;
		p.private_data_len = private_data_len;
		rc = cm_ops->send_sidr_rep(cmid, &p);
	} else {
		if (private_data_len > SRNIC_CM_REJ_PDATA)
			return err(EINVAL);
		rc = cm_ops->send_rej(cmid, SRNIC_CM_REJ_CONSUMER_DEFINED, NULL, 0, private_data,
				       private_data_len);
	}
	return rc != 0 ? err(-rc) : 0;
}

int
rdma_reject_ece(struct rdma_cm_id *rid, const void *private_data, uint8_t private_data_len)
{
	return rdma_reject(rid, private_data, private_data_len);
}

int
rdma_establish(struct rdma_cm_id *rid)
{
	struct cma_id *id = cma_id(rid);
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	if (id->cm_id == NULL)
		return err(EINVAL);
	rc = cm_ops->send_rtu(id->cm_id, NULL, 0);
	return rc != 0 ? err(-rc) : 0;
}

int
rdma_notify(struct rdma_cm_id *rid, enum ibv_event_type event)
{
	struct cma_id *id = cma_id(rid);
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	if (id->cm_id == NULL)
		return err(EINVAL);
	if (event != IBV_EVENT_COMM_EST)
		return 0;
	rc = cm_ops->established(id->cm_id);
	return rc != 0 ? err(-rc) : 0;
}

int
rdma_disconnect(struct rdma_cm_id *rid)
{
	struct cma_id *id = cma_id(rid);
	struct srnic_cm_id *cmid;
	enum srnic_cm_state s;
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	cmid = id->cm_id;
	pthread_mutex_unlock(&cma_lock);
	if (cmid == NULL)
		return err(EINVAL);
	/* the QP first (rdma-core's ucma_shutdown): its WRs flush */
	qp_err(id);
	if (rid->qp_type == IBV_QPT_UD)
		return 0;       /* as Linux's: a SIDR exchange has nothing to end */
	s = cm_ops->id_state(cmid);
	if (s != SRNIC_CM_DREQ_RCVD && s != SRNIC_CM_ESTABLISHED && s != SRNIC_CM_REP_RCVD &&
	    s != SRNIC_CM_REP_SENT)
		return 0; /* as Linux's: with a connection begun, the QP goes to
			   * ERR and the call succeeds, nothing to send (DREQ_SENT,
			   * timewait; REQ_SENT; idle after a REJ or a timeout) */
	/* as Linux's cma: initiate or respond, whichever the state is by now
	 * (the peer's DREQ may land between the look and the send: both
	 * sides disconnecting at once), and succeed if neither applies */
	rc = s == SRNIC_CM_DREQ_RCVD ? -EINVAL : cm_ops->send_dreq(cmid, NULL, 0);
	if (rc == -EINVAL)
		rc = cm_ops->send_drep(cmid, NULL, 0);
	if (rc == -EINVAL)
		return 0;
	if (rc != 0)
		return err(-rc);
	return complete(id);
}

/* ---- getting events ---- */

#ifdef SRNIC_TEST_HOOKS
/* The test hook SRNIC_RDMACM_TEST_HOLD_RTU=1 (in test/rdmacm/hooks' build
 * only, with its bookkeeping: test_hooks.h): a CONNECT_RESPONSE's QP is in
 * RTS and its RTU not sent until rdma_destroy_id() on another thread has
 * gone as far as it can, waiting for this call or past the CM id's
 * destroy, so a test races the two every time (a program's thread may be
 * scheduled out there as long). */
static void
hold_rtu(struct cma_id *id)
{
	struct timespec ts = { .tv_nsec = 100000 }, now, end;
	int hold_s = srnic_test_hook_hold_s();
	bool destroying;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += hold_s;
	do {
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&cma_lock);
		destroying = id->destroy_held || id->cm_id_gone;
		pthread_mutex_unlock(&cma_lock);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!destroying && now.tv_sec > end.tv_sec) {
			fprintf(stderr, "srnic librdmacm: test hook: no destroy came in %d s, the "
				"RTU goes on\n", hold_s);
			break;
		}
	} while (!destroying);
}
#endif

/* What a CONNECT_RESPONSE needs (rdma-core's ucma_process_conn_resp):
 * with a QP, RTR + RTS + the RTU, and the application sees ESTABLISHED;
 * without, it sees CONNECT_RESPONSE and calls rdma_establish(). Called
 * with id->busy taken: rdma_destroy_id() on another thread waits for it
 * before it destroys the CM id. An id being destroyed sends no RTU (its
 * destroy sends the REJ): CONNECT_ERROR, as Linux's, where the destroyed
 * kernel id refuses the RTU. Any failure leaves the QP in ERR (rdma-core's
 * ucma_modify_qp_err) and the id's later REJECTED unseen. */
static void
process_conn_resp(struct cma_event *e)
{
	struct cma_id *id = cma_id(e->ev.id);
	struct srnic_cm_id *cmid = id->cm_id;  /* held by id->busy */
	int status = 0;

	if (qp_rtr(id, id->resp_res) != 0 || qp_rts(id, id->init_depth) != 0) {
		status = -errno;
		cm_ops->send_rej(cmid, SRNIC_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		goto out;
	}
#ifdef SRNIC_TEST_HOOKS
	if (cma.hold_rtu)
		hold_rtu(id);
#endif
	pthread_mutex_lock(&cma_lock);
	if (id->state == CMA_DESTROYING)
		status = -ENOENT;       /* Linux's ucma on a destroyed id */
	pthread_mutex_unlock(&cma_lock);
	if (status == 0 && cm_ops->send_rtu(cmid, NULL, 0) != 0)
		status = -EIO;
out:
	if (status != 0)
		qp_err(id);
	pthread_mutex_lock(&cma_lock);
	if (status != 0) {
		e->ev.status = status;
		e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
		id->connect_error = true;
	} else {
		e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
	}
	id->busy--;
	pthread_cond_broadcast(&cma_acked);
	pthread_mutex_unlock(&cma_lock);
}

static int migrate_locked(struct cma_id *id, struct cma_channel *to);

/* rdma_get_cm_event() on a channel destroyed before or during the call.
 * rping's CM thread does it as its main thread exits: with Linux's
 * librdmacm that thread sleeps (in read() on the closed fd, or on the fd
 * number freed memory holds), and rping counts on it: so it sleeps here,
 * until the process ends (pause() is a cancellation point). */
static void __attribute__((noreturn))
cma_sleep_forever(void)
{
	if (cma.trace)
		cma_log("rdma_get_cm_event on a destroyed channel: this thread sleeps");
	for (;;)
		pause();
}

int
rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cma_channel *ch;
	struct cma_event *e;
	int fd;

	if (channel == NULL || event == NULL)
		return err(EINVAL);
	ch = cma_chan(channel);
	fd = channel->fd;
	if (fd < 0)
		cma_sleep_forever();    /* a destroyed channel: see there */
	for (;;) {
		/* wait for the fd to count an event (see event_queue); the
		 * count is taken with the event, under cma_lock */
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		bool nonblock = (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;

		if (!cma.priv.progress_thread) {
			/* nobody else polls the engine and the CM: we do, until
			 * an event is there (or once, on a non-blocking fd) */
			do {
				srnic_verbs_cm_progress();
			} while (!nonblock && poll(&pfd, 1, 0) == 0);
		} else if (!nonblock && poll(&pfd, 1, -1) < 0) {
			return -1;      /* EINTR, as rdma-core's read() */
		}
		if (pfd.revents & POLLNVAL) {
			/* The channel was destroyed under this call (rping's CM
			 * thread, as its main thread exits). Linux's reader stays
			 * asleep in read(): so does this one, until the process
			 * ends. */
			if (__atomic_load_n(&ch->ch.fd, __ATOMIC_SEQ_CST) < 0)
				cma_sleep_forever();
			return err(EBADF);
		}
		pthread_mutex_lock(&cma_lock);
		e = TAILQ_FIRST(&ch->q);
		if (e == NULL) {
			/* another reader took it, or its id went */
			pthread_mutex_unlock(&cma_lock);
			if (__atomic_load_n(&ch->ch.fd, __ATOMIC_SEQ_CST) < 0)
				cma_sleep_forever();
			if (nonblock)
				return err(EAGAIN);     /* as rdma-core's read() */
			continue;
		}
		event_unqueue(ch, e);
		if (e->kind == CMA_EV_REJECTED && cma_id(e->ev.id)->connect_error) {
			/* the REJ that follows a CONNECT_ERROR (ours, sent as
			 * the REP failed, or the peer's, which made the RTU
			 * fail): one event only, as rdma-core's librdmacm */
			pthread_mutex_unlock(&cma_lock);
			free(e);
			if (nonblock)
				return err(EAGAIN);
			continue;
		}
		e->owner->events_reported++;
		if (cma.trace)
			cma_log("id %p: %s status %d", (void *)cma_id(e->ev.id),
				rdma_event_str(e->ev.event), e->ev.status);
		if (e->kind == CMA_EV_CONN_RESP && e->ev.id->qp != NULL) {
			struct cma_id *c = cma_id(e->ev.id);

			if (c->state == CMA_DESTROYING) {
				/* its destroy has its CM id: nothing to answer with */
				e->kind = CMA_EV_PLAIN;
				e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
				e->ev.status = -ENOENT;
				c->connect_error = true;
			} else {
				c->busy++;      /* see process_conn_resp() */
			}
		}
		if (e->kind == CMA_EV_CONN_REQ) {
			struct cma_id *l = cma_id(e->ev.listen_id);
			struct cma_id *c = cma_id(e->ev.id);

			request_dequeued(e);
			/* a sync listener's new id is sync too (rdma_get_request) */
			if (l->sync)
				migrate_locked(c, NULL);
		}
		pthread_mutex_unlock(&cma_lock);
		if (e->kind == CMA_EV_CONN_RESP && e->ev.id->qp != NULL)
			process_conn_resp(e);
		else if (e->kind == CMA_EV_REJECTED)
			qp_err(cma_id(e->ev.id));
		if (e->ev.event == RDMA_CM_EVENT_ADDR_RESOLVED || e->ev.event == RDMA_CM_EVENT_ESTABLISHED) {
			e->ev.id->verbs = cma.verbs;
			if (e->ev.id->pd == NULL)
				e->ev.id->pd = cma.pd;
		}
		*event = &e->ev;
		return 0;
	}
}

int
rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e;

	if (event == NULL)
		return err(EINVAL);
	e = container_of(event, struct cma_event, ev);
	pthread_mutex_lock(&cma_lock);
	e->owner->events_acked++;
	pthread_cond_broadcast(&cma_acked);
	pthread_mutex_unlock(&cma_lock);
	free(e);
	return 0;
}

/* ---- migration ---- */

/* Move id (and its queued events) to channel to (NULL: a channel of its
 * own, the id becomes sync), under cma_lock. */
static int
migrate_locked(struct cma_id *id, struct cma_channel *to)
{
	struct cma_channel *from = id->chan;
	struct cma_event *e, *next;
	bool sync = to == NULL;

	if (to == NULL) {
		int fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);

		if (fd < 0)
			return -1;
		to = calloc(1, sizeof(*to));
		if (to == NULL) {
			close(fd);
			return err(ENOMEM);
		}
		TAILQ_INIT(&to->q);
		to->ch.fd = fd;
		to->sync = true;
	}
	if (to == from)
		return 0;
	/* its events go with it, a listener's CONNECT_REQUESTs and their
	 * new ids too (as Linux's ucma_migrate_id moves a context's events) */
	for (e = TAILQ_FIRST(&from->q); e != NULL; e = next) {
		next = TAILQ_NEXT(e, link);
		if (e->owner != id && e->ev.id != &id->id)
			continue;
		if (e->kind == CMA_EV_CONN_REQ && e->owner == id) {
			struct cma_id *c = cma_id(e->ev.id);

			from->nb_ids--;
			to->nb_ids++;
			c->chan = to;
			c->id.channel = &to->ch;
		}
		event_unqueue(from, e);
		event_queue(to, e);
	}
	from->nb_ids--;
	to->nb_ids++;
	id->chan = to;
	id->id.channel = &to->ch;
	if (id->sync && from->sync && from->nb_ids == 0 && TAILQ_EMPTY(&from->q)) {
		close(from->ch.fd);
		free(from);
	}
	id->sync = sync;
	return 0;
}

int
rdma_migrate_id(struct rdma_cm_id *rid, struct rdma_event_channel *channel)
{
	int rc;

	if (rid == NULL)
		return err(EINVAL);
	pthread_mutex_lock(&cma_lock);
	rc = migrate_locked(cma_id(rid), channel != NULL ? cma_chan(channel) : NULL);
	pthread_mutex_unlock(&cma_lock);
	return rc;
}

/* ---- the sync calls' passive side ---- */

int
rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **out)
{
	struct cma_id *l = cma_id(listen);
	struct rdma_cm_event *ev;
	struct cma_id *c;

	if (listen == NULL)
		return err(EINVAL);
	if (!l->sync || out == NULL)
		return err(EINVAL);
	if (l->id.event != NULL) {
		rdma_ack_cm_event(l->id.event);
		l->id.event = NULL;
	}
	for (;;) {
		if (rdma_get_cm_event(&l->chan->ch, &ev) != 0)
			return -1;
		if (ev->status != 0) {
			int e = ev->status < 0 ? -ev->status : ev->status;

			rdma_ack_cm_event(ev);
			return err(e);
		}
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			break;
		rdma_ack_cm_event(ev);
	}
	c = cma_id(ev->id);
	c->id.event = ev;
	if (l->ep_qp_attr != NULL) {
		struct ibv_qp_init_attr a = *l->ep_qp_attr;

		if (rdma_create_qp(&c->id, l->ep_pd, &a) != 0) {
			int e = errno;

			rdma_reject(&c->id, NULL, 0);
			rdma_destroy_id(&c->id);
			return err(e);
		}
	}
	*out = &c->id;
	return 0;
}

/* rdma_create_ep's passive side keeps the QP attributes for its requests */
int
cma_ep_passive(struct rdma_cm_id *rid, struct ibv_pd *pd, const struct ibv_qp_init_attr *a)
{
	struct cma_id *id = cma_id(rid);

	id->ep_pd = pd;
	if (a == NULL)
		return 0;
	id->ep_qp_attr = malloc(sizeof(*a));
	if (id->ep_qp_attr == NULL)
		return err(ENOMEM);
	*id->ep_qp_attr = *a;
	return 0;
}

/* ---- options, ports ---- */

/* RDMA_OPTION_IB_PATH's wire-format record into the path of the id */
static void
path_from_record(struct ibv_sa_path_rec *p, const struct ibv_path_record *r)
{
	uint32_t fh = ntohl(r->flowlabel_hoplimit);

	memset(p, 0, sizeof(*p));
	p->dgid = r->dgid;
	p->sgid = r->sgid;
	p->dlid = r->dlid;
	p->slid = r->slid;
	p->flow_label = htonl(fh >> 8);
	p->hop_limit = (uint8_t)(fh & 0xff);
	p->traffic_class = r->tclass;
	p->reversible = r->reversible_numpath >> 7;
	p->numb_path = r->reversible_numpath & 0x7f;
	p->pkey = r->pkey;
	p->sl = ntohs(r->qosclass_sl) & 0xf;
	p->mtu_selector = r->mtu >> 6;
	p->mtu = r->mtu & 0x3f;
	p->rate_selector = r->rate >> 6;
	p->rate = r->rate & 0x3f;
	p->packet_life_time_selector = r->packetlifetime >> 6;
	p->packet_life_time = r->packetlifetime & 0x3f;
	p->preference = r->preference;
}

int
rdma_set_option(struct rdma_cm_id *rid, int level, int optname, void *optval, size_t optlen)
{
	struct cma_id *id = cma_id(rid);

	if (rid == NULL)
		return err(EINVAL);
	if (optval == NULL)
		return err(EINVAL);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				return err(EINVAL);
			id->tos = *(uint8_t *)optval;
			id->tos_set = true;
			id->path.traffic_class = id->tos;
			return 0;
		case RDMA_OPTION_ID_REUSEADDR: {
			bool reuse;

			if (optlen != sizeof(int))
				return err(EINVAL);
			reuse = *(int *)optval != 0;
			/* as Linux's rdma_set_reuseaddr(): set on any but a
			 * listener (whose port is its own), cleared only before
			 * a bind */
			pthread_mutex_lock(&cma_lock);
			if (reuse ? id->state == CMA_LISTEN : id->state != CMA_IDLE) {
				pthread_mutex_unlock(&cma_lock);
				return err(EINVAL);
			}
			id->reuseaddr = reuse;
			pthread_mutex_unlock(&cma_lock);
			return 0;
		}
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				return err(EINVAL);
			id->afonly = *(int *)optval != 0;
			id->afonly_set = true;
			return 0;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t))
				return err(EINVAL);
			id->ack_timeout = *(uint8_t *)optval;
			return 0;
		default:
			return err(ENOSYS);
		}
	}
	if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		const struct ibv_path_data *pd = optval;

		if (optlen < sizeof(*pd) || optlen % sizeof(*pd) != 0)
			return err(EINVAL);
		pthread_mutex_lock(&cma_lock);
		if (id->state != CMA_ADDR_RESOLVED) {
			pthread_mutex_unlock(&cma_lock);
			return err(EINVAL);
		}
		path_from_record(&id->path, &pd[0].path);
		state_exch(id, CMA_ROUTE_RESOLVED);
		rid->route.path_rec = &id->path;
		rid->route.num_paths = 1;
		pthread_mutex_unlock(&cma_lock);
		return 0;
	}
	return err(ENOSYS);
}

__be16
rdma_get_src_port(struct rdma_cm_id *rid)
{
	if (rid == NULL)
		return 0;
	return rid->route.addr.src_addr.sa_family == AF_INET6 ? rid->route.addr.src_sin6.sin6_port
							      : rid->route.addr.src_sin.sin_port;
}

__be16
rdma_get_dst_port(struct rdma_cm_id *rid)
{
	if (rid == NULL)
		return 0;
	return rid->route.addr.dst_addr.sa_family == AF_INET6 ? rid->route.addr.dst_sin6.sin6_port
							      : rid->route.addr.dst_sin.sin_port;
}

struct ibv_context **
rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	bool ok = cma_init() == 0;

	list = calloc(2, sizeof(*list));
	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (ok)
		list[0] = cma.verbs;
	if (num_devices != NULL)
		*num_devices = ok ? 1 : 0;
	return list;
}

void
rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

/* ---- SRQs ---- */

int
rdma_create_srq(struct rdma_cm_id *rid, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq;

	if (rid == NULL)
		return err(EINVAL);
	if (attr == NULL)
		return err(EINVAL);
	if (pd == NULL)
		pd = default_pd();
	if (pd == NULL)
		return -1;
	srq = ibv_create_srq(pd, attr);
	if (srq == NULL)
		return -1;
	rid->srq = srq;
	rid->pd = pd;
	return 0;
}

int
rdma_create_srq_ex(struct rdma_cm_id *rid, struct ibv_srq_init_attr_ex *ax)
{
	struct ibv_srq_init_attr a;

	if (rid == NULL)
		return err(EINVAL);
	if (ax == NULL)
		return err(EINVAL);
	/* a basic SRQ only (XRC and tag matching are not served) */
	if ((ax->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && ax->srq_type != IBV_SRQT_BASIC)
		return err(EOPNOTSUPP);
	memset(&a, 0, sizeof(a));
	a.srq_context = ax->srq_context;
	a.attr = ax->attr;
	return rdma_create_srq(rid, (ax->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? ax->pd : NULL, &a);
}

void
rdma_destroy_srq(struct rdma_cm_id *rid)
{
	if (rid == NULL)
		return;
	if (rid->srq != NULL)
		ibv_destroy_srq(rid->srq);
	rid->srq = NULL;
}

/* ---- event names ---- */

static const char *const cma_event_names[] = {
	[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
	[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
	[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
	[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
	[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
	[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
	[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
	[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
	[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
	[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
	[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
	[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
	[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
	[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
	[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
	[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
};

const char *
rdma_event_str(enum rdma_cm_event_type event)
{
	if ((unsigned int)event < sizeof(cma_event_names) / sizeof(cma_event_names[0]) &&
	    cma_event_names[event] != NULL)
		return cma_event_names[event];
	return "UNKNOWN EVENT";
}

/* ---- for cma_mcast.c ---- */

struct cma_event *
cma_event_new(struct cma_id *id, enum rdma_cm_event_type type, int status)
{
	return event_new(id, id, type, status);
}

void
cma_event_post(struct cma_id *id, struct cma_event *e)
{
	event_post(id, e);
}

int
cma_complete(struct cma_id *id)
{
	return complete(id);
}

/* ---- not served ---- */

/* ECE (enhanced connection establishment): srnic's CM has none */
int
rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return err(EOPNOTSUPP);
}

int
rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return err(EOPNOTSUPP);
}

