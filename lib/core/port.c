/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port under srnic: what the control path notices when it changes.
 * srnic_get_async_event() looks, at most every SRNIC_LINK_CHECK_MS (the
 * drop-in's progress thread calls it all the time); never the engines,
 * nothing per packet.
 *
 * - The link (rte_eth_link_get_nowait()): IBV_EVENT_PORT_ERR and
 *   IBV_EVENT_PORT_ACTIVE on each change, as rxe on the netdev's carrier.
 * - The MTU (rte_eth_dev_get_mtu(); on af_packet and pcap ports the
 *   kernel interface's, SIOCGIFMTU: `ip link set mtu` changes it under
 *   the PMD, which reports the value it was configured with), as rxe on
 *   NETDEV_CHANGEMTU: the port's active_mtu follows, so new QPs get the
 *   clamped path MTU at INIT -> RTR. A live RC or UC QP whose path MTU the
 *   port no longer carries goes to ERR (IBV_EVENT_QP_FATAL, its WQEs
 *   completed in error): it cannot segment smaller on its own (the peer's
 *   responder takes every packet but the last of a message at the path
 *   MTU agreed at the connection), and what the port does not carry would
 *   be dropped and resent for ever. rxe leaves such QPs to time out,
 *   unlimited with retry_cnt 7. A UD QP's path MTU is the port's active
 *   MTU, down and up, as rxe's UD sends read the port's: a datagram
 *   longer than it is not sent and completes successfully (C10-93.1.1,
 *   req_ud_too_long), instead of going to a port that drops it. QP1 keeps
 *   its 1024 (its MADs, 256 bytes, fit any MTU).
 * - A memif client whose link went down (its server left, or refused it:
 *   a server whose own port is not started yet answers "ID not found").
 *   DPDK 22.11's memif connects only in rte_eth_dev_start() and never
 *   again by itself, so the port is stopped and started again every
 *   SRNIC_PORT_RESTART_MS until it is up; the engines leave the port
 *   alone meanwhile (dev->port_paused, read once per poll).
 */
/* rte_intr_fd_get() and rte_intr_instance_free() are experimental in 22.11 */
#define ALLOW_EXPERIMENTAL_API

#include <dlfcn.h>
#include <inttypes.h>
#include <net/if.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_kvargs.h>
#include <rte_log.h>
#include <rte_spinlock.h>
#include <rte_version.h>

#include "rnic.h"
#include "engine.h"

static const char *const port_stat_names[SRNIC_PORT_STAT_COUNT] = {
	[SRNIC_PORT_STAT_RESTART] = "port_restart",
	[SRNIC_PORT_STAT_MTU_CHANGE] = "port_mtu_change",
	[SRNIC_PORT_STAT_MTU_QP_ERR] = "port_mtu_qp_err",
	[SRNIC_PORT_STAT_RESTART_HELD] = "port_restart_held",
	[SRNIC_PORT_STAT_MEMIF_CC_PURGED] = "port_memif_cc_purged",
	[SRNIC_PORT_STAT_HOLD_EXPIRED] = "port_hold_expired",
};

/* memif's stale control sources removed in this process (below): EAL's
 * interrupt thread is the process's, so every device reports this one */
static _Atomic uint64_t memif_cc_purged;

int64_t
srnic_dev_port_stat(const struct srnic_dev *dev, const char *name)
{
	unsigned int i;

	for (i = 0; i < SRNIC_PORT_STAT_COUNT; i++)
		if (strcmp(port_stat_names[i], name) == 0)
			return (int64_t)atomic_load_explicit(i == SRNIC_PORT_STAT_MEMIF_CC_PURGED ?
							     &memif_cc_purged : &dev->port_stats[i],
							     memory_order_relaxed);
	return -1;
}

static bool
port_is_memif(uint16_t port_id)
{
	struct rte_eth_dev_info info;

	return rte_eth_dev_info_get(port_id, &info) == 0 && info.driver_name != NULL &&
	       strcmp(info.driver_name, "net_memif") == 0;
}

/* A memif port in the client role (memif's default role): the one kind of
 * port whose link comes back only by starting it again. */
static bool
port_is_memif_client(uint16_t port_id)
{
	struct rte_eth_dev_info info;
	const struct rte_devargs *da;
	struct rte_kvargs *kv;
	const char *role;
	bool client;

	if (rte_eth_dev_info_get(port_id, &info) != 0 || info.driver_name == NULL ||
	    strcmp(info.driver_name, "net_memif") != 0 || info.device == NULL)
		return false;
	da = rte_dev_devargs(info.device);
	if (da == NULL || da->args == NULL || da->args[0] == '\0')
		return true;
	kv = rte_kvargs_parse(da->args, NULL);
	if (kv == NULL)
		return false;
	role = rte_kvargs_get(kv, "role");
	client = role == NULL || strcmp(role, "client") == 0;
	rte_kvargs_free(kv);
	return client;
}

/*
 * A memif peer that goes away must not take the rings from under a burst.
 *
 * DPDK 22.11's net_memif takes a connection down on EAL's interrupt thread
 * (memif_disconnect(), when the peer's control socket hangs up or says
 * DISCONNECT): it clears ETH_MEMIF_FLAG_CONNECTED, takes and drops the
 * device's cc_lock, and then munmap()s the regions the peer shared (rings
 * and buffers). eth_memif_rx() and eth_memif_tx() test the flag once, on
 * entry, and then read the rings: a burst under way when the peer dies
 * reads unmapped memory (SIGSEGV at librte_net_memif.so.23.0+0x8b03, the
 * load of the C2S ring's head in eth_memif_rx). The PMD offers no callback
 * before the unmap (it raises no RTE_ETH_EVENT_INTR_LSC at all) and no way
 * to keep the regions; cc_lock is the one thing its disconnect takes
 * between the flag and the unmap. An engine that holds cc_lock across each
 * burst (eng_rx_burst(), eng_tx_burst()) either finishes its burst before
 * the disconnect gets past the lock, or starts it after, when the flag is
 * clear and the burst returns at once. The upstream fix (the PMD waiting
 * for its bursts itself) is described in doc/reliability.md.
 *
 * cc_lock is private to the PMD: struct pmd_internals (the device's
 * dev_private), reached through ethdev's rte_eth_devices[]. The offsets
 * below are 22.11's (v22.11 to v22.11.11 share these structs; the
 * disassembly of Debian's librte_net_memif.so.23.0 shows them: `andl
 * $~3,0x8(pmd)` then `xchg 0x38(pmd)` in memif_disconnect) and are checked
 * on the device before use; another DPDK gets no guard and a warning.
 */
#if RTE_VER_YEAR == 22 && RTE_VER_MONTH == 11
#define MEMIF_GUARD 1
extern char rte_eth_devices[];     /* ethdev's internal table */
#define ETHDEV_DEV_SIZE 16512      /* sizeof(struct rte_eth_dev) */
#define ETHDEV_DEV_DATA 48         /* offsetof(struct rte_eth_dev, data) */
#define ETHDEV_DATA_PRIVATE 96     /* offsetof(struct rte_eth_dev_data, dev_private) */
#define ETHDEV_DATA_PORT_ID 3440   /* offsetof(struct rte_eth_dev_data, port_id) */
#endif

/* the head of memif's struct pmd_internals, 22.11 */
struct memif_pmd_head {
	uint32_t id;
	uint32_t role;             /* 0 server, 1 client */
	uint32_t flags;            /* ETH_MEMIF_FLAG_*: bits 0-4 */
	char *socket_filename;
	char secret[24];
	void *cc;
	rte_spinlock_t cc_lock;
};
_Static_assert(offsetof(struct memif_pmd_head, cc_lock) == 0x38, "memif's cc_lock, 22.11");

/* A memif port's PMD head (see above), or NULL: not memif, or its layout
 * is not the one known. */
static struct memif_pmd_head *
port_memif_pmd(uint16_t port_id, bool client)
{
#ifdef MEMIF_GUARD
	char name[RTE_ETH_NAME_MAX_LEN];
	struct memif_pmd_head *pmd;
	const char *data;

	if (rte_eth_dev_get_name_by_port(port_id, name) != 0 || port_id >= RTE_MAX_ETHPORTS ||
	    strncmp(rte_version(), "DPDK 22.11", strlen("DPDK 22.11")) != 0)
		goto unknown;
	data = *(const char *const *)(rte_eth_devices + (size_t)port_id * ETHDEV_DEV_SIZE +
				      ETHDEV_DEV_DATA);
	if (data == NULL || strcmp(data, name) != 0 ||
	    *(const uint16_t *)(data + ETHDEV_DATA_PORT_ID) != port_id)
		goto unknown;
	pmd = *(struct memif_pmd_head *const *)(data + ETHDEV_DATA_PRIVATE);
	if (pmd == NULL || pmd->role != (client ? 1u : 0u) || (pmd->flags & ~0x1fu) != 0 ||
	    pmd->socket_filename == NULL || (pmd->cc_lock.locked & ~1) != 0)
		goto unknown;
	return pmd;
unknown:
#endif
	RTE_SET_USED(client);
	SRNIC_LOG(WARNING, "port %u: net_memif of %s, not DPDK 22.11's: its bursts are not guarded "
		  "against a peer that goes away, nor its server against a client that goes "
		  "before HELLO (doc/reliability.md)", port_id, rte_version());
	return NULL;
}

#ifdef MEMIF_GUARD
/*
 * A memif server must survive a client that connects and goes at once.
 *
 * DPDK 22.11's memif_listener_handler() (memif_socket.c, on EAL's interrupt
 * thread) accepts a connection, registers its control channel's callback
 * (rte_intr_callback_register(cc->intr_handle, memif_intr_handler, cc)) and
 * sends HELLO; when the send fails (the client already gone: "sendmsg fail:
 * Broken pipe") its error path closes the socket and frees the handle and
 * the channel without unregistering. EAL keeps a source on a closed fd:
 * the registration asked its thread to rebuild its epoll set, and that
 * rebuild's EPOLL_CTL_ADD fails with EBADF and rte_panic()s (the process
 * aborts: "Error adding fd N epoll_ctl, Bad file descriptor"); had the fd
 * number been reused first, the stale callback would run on freed memory.
 *
 * srnic watches the channels memif registers (the callback's code lies in
 * memif's object, dladdr) and the ones memif unregisters; when memif frees
 * the handle of a channel still registered (rte_intr_instance_free(), which
 * that error path calls right after the close, on the same thread, before
 * the thread rebuilds anything), srnic unregisters it first: the rebuild
 * then never meets the fd. These four calls are DPDK's, defined here so the
 * dynamic linker binds memif's calls to them: a program that links the
 * floors exports them (its definitions come first in the global scope),
 * and libsrnic.so and the drop-in libibverbs.so.1 export them under
 * librte_eal.so.23's own version nodes (lib/srnic.map,
 * drivers/verbs/libibverbs.map), ahead of librte_eal.so.23, which they
 * depend on (a static DPDK is refused at configure: meson.build). Each
 * calls EAL's own. rte_intr_instance_free() also runs under EAL's intr_lock
 * (its own frees, and memif's unregister callback): only a handle recorded
 * here and not unregistered calls back into EAL, and memif's unregister
 * callback frees a handle that rte_intr_callback_unregister_pending()
 * already marked. No libc call is interposed. The fix upstream is one
 * call, in doc/reliability.md.
 */
struct memif_cc_src {
	const struct rte_intr_handle *handle; /* memif's; NULL: a free slot */
	int fd;
	rte_intr_callback_fn cb_fn;
	void *cb_arg;
	bool live;                            /* registered, not unregistered yet */
};

static struct memif_cc_src memif_cc[SRNIC_MEMIF_CC_MAX];
static pthread_mutex_t memif_cc_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned int memif_cc_used; /* slots with a handle */
static _Atomic bool memif_cc_seen;         /* a memif registration came through here */
static pthread_once_t memif_cc_once = PTHREAD_ONCE_INIT;

static int (*eal_cb_register)(const struct rte_intr_handle *, rte_intr_callback_fn, void *);
static int (*eal_cb_unregister)(const struct rte_intr_handle *, rte_intr_callback_fn, void *);
static int (*eal_cb_unregister_pending)(const struct rte_intr_handle *, rte_intr_callback_fn,
					void *, rte_intr_unregister_callback_fn);
static void (*eal_instance_free)(struct rte_intr_handle *);

/* EAL's definition of name: the next one after this object's, else the
 * version librte_eal.so.23 exports */
static void *
memif_cc_eal(const char *name, const char *version)
{
	void *f = dlsym(RTLD_NEXT, name);
	void *eal;

	if (f != NULL)
		return f;
	eal = dlopen("librte_eal.so.23", RTLD_NOW | RTLD_NOLOAD);
	if (eal != NULL) {
		f = dlvsym(eal, name, version);
		dlclose(eal);
	}
	if (f == NULL) {
		fprintf(stderr, "srnic: %s: EAL's definition not found (%s): cannot go on\n",
			name, dlerror());
		abort();
	}
	return f;
}

static void
memif_cc_init(void)
{
	*(void **)&eal_cb_register = memif_cc_eal("rte_intr_callback_register", "DPDK_23");
	*(void **)&eal_cb_unregister = memif_cc_eal("rte_intr_callback_unregister", "DPDK_23");
	*(void **)&eal_cb_unregister_pending =
		memif_cc_eal("rte_intr_callback_unregister_pending", "DPDK_23");
	*(void **)&eal_instance_free = memif_cc_eal("rte_intr_instance_free", "EXPERIMENTAL");
}

/* whether fn is memif's code (the net_memif PMD's object) */
static bool
memif_cc_is_memif(rte_intr_callback_fn fn)
{
	const char *base;
	Dl_info info;

	if (dladdr(*(void **)&fn, &info) == 0 || info.dli_fname == NULL)
		return false;
	base = strrchr(info.dli_fname, '/');
	base = base != NULL ? base + 1 : info.dli_fname;
	return strncmp(base, "librte_net_memif.so", strlen("librte_net_memif.so")) == 0;
}

static void
memif_cc_note(const struct rte_intr_handle *h, rte_intr_callback_fn cb_fn, void *cb_arg)
{
	struct memif_cc_src *free_slot = NULL, *e = NULL;
	static bool warned;
	unsigned int i;

	pthread_mutex_lock(&memif_cc_lock);
	for (i = 0; i < SRNIC_MEMIF_CC_MAX && e == NULL; i++) {
		if (memif_cc[i].handle == h)
			e = &memif_cc[i];
		else if (memif_cc[i].handle == NULL && free_slot == NULL)
			free_slot = &memif_cc[i];
	}
	if (e == NULL && free_slot != NULL) {
		e = free_slot;
		atomic_fetch_add_explicit(&memif_cc_used, 1, memory_order_relaxed);
	}
	if (e != NULL)
		*e = (struct memif_cc_src){ .handle = h, .fd = rte_intr_fd_get(h), .cb_fn = cb_fn,
					    .cb_arg = cb_arg, .live = true };
	pthread_mutex_unlock(&memif_cc_lock);
	if (e == NULL && !warned) {
		warned = true;
		SRNIC_LOG(WARNING, "memif: more than %u control channels at once: the others are "
			  "not watched for a client that goes before HELLO (doc/reliability.md)",
			  SRNIC_MEMIF_CC_MAX);
	}
}

/* memif unregistered n callbacks (cb_arg (void *)-1: any argument) */
static void
memif_cc_gone(const struct rte_intr_handle *h, rte_intr_callback_fn cb_fn, void *cb_arg, int n)
{
	unsigned int i;
	int fd;

	if (n <= 0 || atomic_load_explicit(&memif_cc_used, memory_order_relaxed) == 0)
		return;
	fd = rte_intr_fd_get(h);
	pthread_mutex_lock(&memif_cc_lock);
	for (i = 0; i < SRNIC_MEMIF_CC_MAX; i++)
		if (memif_cc[i].handle != NULL && memif_cc[i].fd == fd &&
		    memif_cc[i].cb_fn == cb_fn &&
		    (cb_arg == (void *)-1 || memif_cc[i].cb_arg == cb_arg))
			memif_cc[i].live = false;
	pthread_mutex_unlock(&memif_cc_lock);
}

int
rte_intr_callback_register(const struct rte_intr_handle *h, rte_intr_callback_fn cb_fn,
			   void *cb_arg)
{
	int ret;

	bool memif;

	pthread_once(&memif_cc_once, memif_cc_init);
	/* noted before EAL has it: once registered, EAL's interrupt thread
	 * may run memif's callback, and memif may unregister it (pending) and
	 * free the handle from EAL's unregister callback, under EAL's lock,
	 * before this thread would have noted it; a live note then would
	 * make that free take EAL's lock again */
	memif = memif_cc_is_memif(cb_fn);
	if (memif) {
		atomic_store_explicit(&memif_cc_seen, true, memory_order_relaxed);
		memif_cc_note(h, cb_fn, cb_arg);
	}
	ret = eal_cb_register(h, cb_fn, cb_arg);
	if (ret != 0 && memif)
		memif_cc_gone(h, cb_fn, cb_arg, 1);
	return ret;
}

int
rte_intr_callback_unregister(const struct rte_intr_handle *h, rte_intr_callback_fn cb_fn,
			     void *cb_arg)
{
	int ret;

	pthread_once(&memif_cc_once, memif_cc_init);
	ret = eal_cb_unregister(h, cb_fn, cb_arg);
	memif_cc_gone(h, cb_fn, cb_arg, ret);
	return ret;
}

int
rte_intr_callback_unregister_pending(const struct rte_intr_handle *h, rte_intr_callback_fn cb_fn,
				     void *cb_arg, rte_intr_unregister_callback_fn ucb_fn)
{
	int ret;

	pthread_once(&memif_cc_once, memif_cc_init);
	ret = eal_cb_unregister_pending(h, cb_fn, cb_arg, ucb_fn);
	memif_cc_gone(h, cb_fn, cb_arg, ret);
	return ret;
}

void
rte_intr_instance_free(struct rte_intr_handle *h)
{
	struct memif_cc_src stale = { .handle = NULL };
	unsigned int i;
	int n;

	pthread_once(&memif_cc_once, memif_cc_init);
	if (h != NULL && atomic_load_explicit(&memif_cc_used, memory_order_relaxed) != 0) {
		pthread_mutex_lock(&memif_cc_lock);
		for (i = 0; i < SRNIC_MEMIF_CC_MAX; i++)
			if (memif_cc[i].handle == h) {
				if (memif_cc[i].live)
					stale = memif_cc[i];
				memif_cc[i].handle = NULL;
				atomic_fetch_sub_explicit(&memif_cc_used, 1, memory_order_relaxed);
				break;
			}
		pthread_mutex_unlock(&memif_cc_lock);
	}
	/* still registered: memif's error path after a failed HELLO (its
	 * fd closed already); EAL's lock is not held there */
	if (stale.handle != NULL) {
		int acc = 0;
		socklen_t alen = sizeof(acc);
		/* memif_socket_remove_device() frees its listener's handle
		 * registered too, its socket open: removed the same, not a
		 * client that went */
		bool listener = getsockopt(stale.fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &alen) == 0 &&
				acc != 0;

		n = eal_cb_unregister(h, stale.cb_fn, stale.cb_arg);
		if (n > 0 && listener) {
			SRNIC_LOG(INFO, "memif: a server socket's listener (fd %d) freed while "
				  "registered with EAL's interrupt thread: removed", stale.fd);
		} else if (n > 0) {
			uint64_t c = atomic_fetch_add_explicit(&memif_cc_purged, 1,
							       memory_order_relaxed) + 1;

			SRNIC_LOG(NOTICE, "memif: a client went before its HELLO; its control "
				  "channel (fd %d, closed) left registered with EAL's interrupt "
				  "thread is removed (DPDK 22.11 memif_listener_handler; "
				  "port_memif_cc_purged %" PRIu64 ")", stale.fd, c);
		} else {
			SRNIC_LOG(WARNING, "memif: control channel fd %d freed while registered; "
				  "removing it from EAL failed (%d): EAL's interrupt thread may "
				  "abort", stale.fd, n);
		}
	}
	eal_instance_free(h);
}
#endif /* MEMIF_GUARD */

#ifdef MEMIF_GUARD
/* Whether the process's global scope, where memif's lookups start, binds
 * its calls to EAL's interrupt functions to another copy of them than this
 * one: two copies of srnic's library in one process (libsrnic.so and the
 * drop-in libibverbs.so.1; a program that links the floors and loads the
 * drop-in), the first in the scope takes memif's calls and guards the
 * process; this copy sees none of them. */
static bool
port_memif_other_copy(void)
{
	void *g = dlvsym(RTLD_DEFAULT, "rte_intr_callback_register", "DPDK_23");
	Dl_info gi, self;
	const char *base;

	if (g == NULL || dladdr(g, &gi) == 0 || gi.dli_fname == NULL ||
	    dladdr((void *)port_memif_other_copy, &self) == 0 || gi.dli_fbase == self.dli_fbase)
		return false;
	base = strrchr(gi.dli_fname, '/');
	base = base != NULL ? base + 1 : gi.dli_fname;
	if (strncmp(base, "librte_eal.so", strlen("librte_eal.so")) == 0)
		return false;
	SRNIC_LOG(NOTICE, "memif: its calls to EAL's interrupt functions reach another copy of "
		  "srnic's in this process (%s): that copy guards the server, and its "
		  "port_memif_cc_purged, not this device's, counts what it removes",
		  gi.dli_fname[0] != '\0' ? gi.dli_fname : "the program");
	return true;
}
#endif

/* Whether memif's calls to EAL's interrupt functions reach the ones above,
 * or another copy's: a memif server registered its listener (at EAL's
 * probe) through them. */
static bool
port_memif_guarded(void)
{
#ifdef MEMIF_GUARD
	return atomic_load_explicit(&memif_cc_seen, memory_order_relaxed) ||
	       port_memif_other_copy();
#else
	return false;
#endif
}

/* Whether a memif client's control connection is under way: connected to
 * its server, the handshake not finished (or the link up). memif sets
 * pmd->cc at connect and clears it in memif_disconnect(), on its interrupt
 * thread, when the server refuses or hangs up. A restart then would close
 * a connection the server has not accepted yet, and a 22.11 server that
 * accepts a closed connection leaves EAL's interrupt thread a closed fd and
 * panics ("Error adding fd N epoll_ctl", doc/reliability.md): on a loaded
 * host the handshake can take longer than SRNIC_PORT_RESTART_MS. */
static bool
port_memif_connecting(const struct srnic_dev *dev)
{
#ifdef MEMIF_GUARD
	const struct memif_pmd_head *pmd = dev->memif_pmd;

	return pmd != NULL &&
	       __atomic_load_n((void *const *)&pmd->cc, __ATOMIC_RELAXED) != NULL;
#else
	RTE_SET_USED(dev);
	return false;
#endif
}

_Static_assert(sizeof(((struct srnic_dev *)0)->port_ifname) == IFNAMSIZ, "an interface name");

/* The kernel interface an af_packet or pcap port sends through (its iface=
 * devargs, pcap's tx_iface= else), into dev->port_ifname, with a socket to
 * read its MTU: such a port's MTU is the kernel's to change. */
static void
port_kernel_iface(struct srnic_dev *dev)
{
	static const char *const keys[] = { "iface", "tx_iface" };
	struct rte_eth_dev_info info;
	const struct rte_devargs *da;
	struct rte_kvargs *kv;
	const char *name = NULL;
	unsigned int i;

	dev->port_if_fd = -1;
	dev->port_ifname[0] = '\0';
	if (rte_eth_dev_info_get(dev->port_id, &info) != 0 || info.driver_name == NULL ||
	    (strcmp(info.driver_name, "net_af_packet") != 0 &&
	     strcmp(info.driver_name, "net_pcap") != 0) || info.device == NULL)
		return;
	da = rte_dev_devargs(info.device);
	if (da == NULL || da->args == NULL)
		return;
	kv = rte_kvargs_parse(da->args, NULL);
	if (kv == NULL)
		return;
	for (i = 0; i < RTE_DIM(keys) && name == NULL; i++)
		name = rte_kvargs_get(kv, keys[i]);
	if (name != NULL && strlen(name) < sizeof(dev->port_ifname)) {
		snprintf(dev->port_ifname, sizeof(dev->port_ifname), "%s", name);
		/* made now: in the namespace of the thread that opened the port */
		dev->port_if_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	}
	rte_kvargs_free(kv);
}

/* The port's MTU: the kernel interface's under an af_packet or pcap port,
 * else the PMD's. 0 or a negative errno. */
static int
port_get_mtu(const struct srnic_dev *dev, uint16_t *mtu)
{
	struct ifreq ifr;

	if (dev->port_if_fd >= 0) {
		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, dev->port_ifname, sizeof(ifr.ifr_name));
		/* the interface gone or renamed: the PMD's, as for any port */
		if (ioctl(dev->port_if_fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0 &&
		    ifr.ifr_mtu <= UINT16_MAX) {
			*mtu = (uint16_t)ifr.ifr_mtu;
			return 0;
		}
	}
	return rte_eth_dev_get_mtu(dev->port_id, mtu);
}

void
srnic_dev_port_init(struct srnic_dev *dev)
{
	struct rte_eth_link link;
	uint16_t mtu;

	dev->link_up = rte_eth_link_get_nowait(dev->port_id, &link) == 0 &&
		       link.link_status == RTE_ETH_LINK_UP;
	dev->link_ever_up = dev->link_up;
	port_kernel_iface(dev);
	dev->port_mtu = port_get_mtu(dev, &mtu) == 0 ? mtu : 0;
	dev->mtu_conf = dev->mtu;
	dev->port_restartable = port_is_memif_client(dev->port_id);
	/* before any engine polls: srnic_dev_create() returns after this */
	if (port_is_memif(dev->port_id)) {
		struct memif_pmd_head *pmd = port_memif_pmd(dev->port_id, dev->port_restartable);
		uint16_t i;

		dev->memif_pmd = pmd;
		for (i = 0; i < dev->nb_engines; i++)
			dev->engines[i]->burst_guard = pmd != NULL ? &pmd->cc_lock : NULL;
		/* memif bound its calls to librte_eal.so.23's: a library of
		 * srnic loaded with dlopen(RTLD_LOCAL) is not in the global
		 * scope memif looks in first (the drop-in promotes itself) */
		if (pmd != NULL && !dev->port_restartable && !port_memif_guarded())
			SRNIC_LOG(ERR, "port %u: memif server: memif's calls to EAL's interrupt "
				  "functions do not reach srnic's (srnic's library loaded with "
				  "dlopen(RTLD_LOCAL)?): a local process that connects to its socket "
				  "and closes at once can abort this process (doc/reliability.md)",
				  dev->port_id);
	}
	/* its connection is under way on memif's interrupt thread */
	dev->port_restart_tsc = rte_get_timer_cycles() +
				rte_get_timer_hz() / 1000 * SRNIC_PORT_RESTART_MS;
}

void
srnic_dev_port_fini(struct srnic_dev *dev)
{
	if (dev->port_if_fd >= 0)
		close(dev->port_if_fd);
	dev->port_if_fd = -1;
}

static void
port_event(struct srnic_dev *dev, struct srnic_async_event *ev)
{
	if (rte_ring_mp_enqueue_elem(dev->events, ev, sizeof(*ev)) != 0)
		SRNIC_LOG(WARNING, "%s: event %d lost: the device's ring is full", dev->name,
			  (int)ev->event_type);
}

/* The port's MTU is now mtu (under dev->lock). */
static void
port_mtu_changed(struct srnic_dev *dev, uint16_t mtu)
{
	uint16_t now = RTE_MIN(dev->mtu_conf, mtu);
	struct ibv_port_attr pa;
	uint32_t i, failed = 0;

	__atomic_store_n(&dev->mtu, now, __ATOMIC_RELAXED);
	srnic_dev_query_port(dev, &pa);
	for (i = 0; i < SRNIC_MAX_QP; i++) {
		struct srnic_qp *qp = dev->qp_tbl[i];
		uint8_t s;

		if (qp == NULL)
			continue;
		if (qp->type == IBV_QPT_UD) {
			/* one word each, read by the engine per WR (C10-93.1.1) */
			__atomic_store_n(&qp->pmtu_enum, pa.active_mtu, __ATOMIC_RELAXED);
			__atomic_store_n(&qp->pmtu, srnic_mtu_bytes(pa.active_mtu), __ATOMIC_RELAXED);
			continue;
		}
		if ((qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC) ||
		    qp->pmtu_enum <= pa.active_mtu)
			continue;
		/* a CAS, as the engine's own move to ERR: the application may
		 * be moving the QP too (RESET wins, as there) */
		s = atomic_load_explicit(&qp->state, memory_order_relaxed);
		while (s >= IBV_QPS_RTR && s <= IBV_QPS_SQD &&
		       !atomic_compare_exchange_weak_explicit(&qp->state, &s, IBV_QPS_ERR,
							      memory_order_acq_rel,
							      memory_order_relaxed))
			;
		if (s < IBV_QPS_RTR || s > IBV_QPS_SQD)
			continue;
		port_event(dev, &(struct srnic_async_event){ .event_type = IBV_EVENT_QP_FATAL,
							     .qp_num = qp->qpn, .qp = qp,
							     .gen = qp->gen });
		srnic_qp_doorbell(qp); /* its engine flushes it */
		failed++;
	}
	atomic_fetch_add_explicit(&dev->port_stats[SRNIC_PORT_STAT_MTU_CHANGE], 1,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&dev->port_stats[SRNIC_PORT_STAT_MTU_QP_ERR], failed,
				  memory_order_relaxed);
	SRNIC_LOG(NOTICE, "%s: port %u MTU %u -> %u: active_mtu %u, %u QPs with a larger path MTU to ERR",
		  dev->name, dev->port_id, dev->port_mtu, mtu, 128u << pa.active_mtu, failed);
	dev->port_mtu = mtu;
}

/* Stop and start a memif client's port (not under dev->lock: the quiesce
 * waits for the engines, whose host_rx callbacks may take it). The
 * engines keep off the port while it is not started. */
static void
port_restart(struct srnic_dev *dev)
{
	int rc, lt, lvl;

	atomic_store_explicit(&dev->port_paused, 1, memory_order_relaxed);
	srnic_dev_quiesce(dev);
	rte_eth_dev_stop(dev->port_id);
	/* memif logs each refused connect as an error: one line per try
	 * while the server is away (a program's stderr that others read);
	 * srnic's own DEBUG line below says it */
	lt = rte_log_register("pmd.net.memif");
	lvl = lt >= 0 ? rte_log_get_level(lt) : -1;
	if (lvl >= 0)
		rte_log_set_level(lt, RTE_LOG_CRIT);
	rc = rte_eth_dev_start(dev->port_id);
	if (lvl >= 0)
		rte_log_set_level(lt, (uint32_t)lvl);
	atomic_fetch_add_explicit(&dev->port_stats[SRNIC_PORT_STAT_RESTART], 1,
				  memory_order_relaxed);
	if (rc == 0)
		atomic_store_explicit(&dev->port_paused, 0, memory_order_release);
	if (rc == 0)
		SRNIC_LOG(INFO, "%s: port %u (memif client) was down: started again", dev->name,
			  dev->port_id);
	else
		SRNIC_LOG(DEBUG, "%s: port %u (memif client) down, no server yet: again in %u ms",
			  dev->name, dev->port_id, SRNIC_PORT_RESTART_MS);
}

/* Whether a memif client that is down is restarted now (under dev->lock,
 * SRNIC_PORT_RESTART_MS after the last look): not while its connection is
 * under way (port_memif_connecting()), for SRNIC_PORT_HOLD_MS at most. A
 * server that accepts and never answers (hung, stopped, not memif) would
 * hold it for ever; one that answers late is a few hundred ms (CI, load
 * 17), and a restart after the bound closes a connection that srnic's
 * servers survive (the memif server guard). */
static bool
port_hold(struct srnic_dev *dev, uint64_t now, uint64_t hz)
{
	if (!port_memif_connecting(dev)) {
		dev->port_hold_tsc = 0;
		return true;
	}
	if (dev->port_hold_tsc == 0)
		dev->port_hold_tsc = now;
	if (now - dev->port_hold_tsc < hz / 1000 * SRNIC_PORT_HOLD_MS) {
		atomic_fetch_add_explicit(&dev->port_stats[SRNIC_PORT_STAT_RESTART_HELD], 1,
					  memory_order_relaxed);
		return false;
	}
	dev->port_hold_tsc = 0;
	atomic_fetch_add_explicit(&dev->port_stats[SRNIC_PORT_STAT_HOLD_EXPIRED], 1,
				  memory_order_relaxed);
	SRNIC_LOG(NOTICE, "%s: port %u (memif client): its server accepted the connection and has "
		  "not answered in %u ms: started again", dev->name, dev->port_id,
		  SRNIC_PORT_HOLD_MS);
	return true;
}

void
srnic_dev_port_watch(struct srnic_dev *dev)
{
	struct rte_eth_link link;
	uint64_t now = rte_get_timer_cycles(), hz = rte_get_timer_hz();
	bool restart = false;
	uint16_t mtu;
	uint8_t up;

	if (!rte_spinlock_trylock(&dev->lock))
		return; /* another thread is looking */
	if (dev->port_restarting || now < dev->link_check_tsc) {
		rte_spinlock_unlock(&dev->lock);
		return;
	}
	dev->link_check_tsc = now + hz / 1000 * SRNIC_LINK_CHECK_MS;
	if (port_get_mtu(dev, &mtu) == 0 && mtu != dev->port_mtu)
		port_mtu_changed(dev, mtu);
	if (rte_eth_link_get_nowait(dev->port_id, &link) == 0) {
		up = link.link_status == RTE_ETH_LINK_UP;
		if (up != dev->link_up) {
			dev->link_up = up;
			dev->port_hold_tsc = 0;
			if (up)
				atomic_store_explicit(&dev->link_ever_up, 1, memory_order_relaxed);
			else /* memif handles its disconnect on its interrupt
			      * thread: a stop now would race it */
				dev->port_restart_tsc = now + hz / 1000 * SRNIC_PORT_RESTART_MS;
			port_event(dev, &(struct srnic_async_event){
				.event_type = up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR,
				.port_num = 1 });
		}
		if (!up && dev->port_restartable && now >= dev->port_restart_tsc &&
		    !srnic_dev_in_poll(dev)) {
			dev->port_restart_tsc = now + hz / 1000 * SRNIC_PORT_RESTART_MS;
			restart = port_hold(dev, now, hz);
		}
	}
	if (!restart) {
		rte_spinlock_unlock(&dev->lock);
		return;
	}
	/* port_restarting keeps a second watcher out once the lock is gone */
	dev->port_restarting = 1;
	rte_spinlock_unlock(&dev->lock);
	port_restart(dev);
	rte_spinlock_lock(&dev->lock);
	dev->port_restarting = 0;
	rte_spinlock_unlock(&dev->lock);
}
