/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnicd: one or more DPDK ports, an srnic device on each (srnic0, srnic1,
 * ... in --port order; their engines answering ARP/ND, QP1 and the CM,
 * all on one engine thread), and the control socket through which the
 * host's processes attach (doc/srnicd.md). In the foreground; SIGINT or
 * SIGTERM stops it cleanly. `srnicd --status` asks a running daemon what
 * it serves.
 */
/* rte_intr_instance_alloc(), rte_intr_fd_set(), rte_intr_type_set():
 * experimental in 22.11 (intr_park()) */
#define ALLOW_EXPERIMENTAL_API

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_lcore.h>
#include <rte_pci.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnicd.h"

#define SRND_EAL_ARGV_MAX (16 + SVC_DEVICES_MAX)
/* how long the stop waits for EAL's interrupt thread (intr_park()) */
#define SRND_INTR_HOLD_US 1000000

static struct srnd srnd = { .listen_fd = -1 };

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: srnicd --port DEVARGS --ip A.B.C.D [--port DEVARGS --ip A.B.C.D]...\n"
		"              [--lcores LIST] [--mtu N]\n"
		"              [--socket PATH] [--group NAME] [--mem-mb N] [--log-level L]\n"
		"       srnicd --config FILE [OPTIONS]\n"
		"       srnicd --status [--socket PATH]\n"
		"  --port     the DPDK device srnicd owns, as --vdev/-a take it\n"
		"             (net_memif0,role=server,socket=/tmp/a.sock, net_af_packet0,iface=eth1,\n"
		"             a PCI address)\n"
		"  --ip       the device's IPv4 address on it\n"
		"             (repeated: each --port starts a device, srnic0, srnic1, ..., the\n"
		"             --ip beside it is its; at most %d, each its own address)\n"
		"  --lcores   CPUs: the first is the control thread's, the next the engine's\n"
		"             (one lcore: the engine runs on a thread beside the control one;\n"
		"             none: the first CPU the daemon may run on, then its threads on all)\n"
		"  --socket   the control socket (default %s; programs: %s=PATH)\n"
		"  --group    the group that may attach (socket mode 0660; default: %s if it\n"
		"             exists, else root only, 0600)\n"
		"  --config   \"key = value\" lines, the keys these options' names (the\n"
		"             example: config/srnicd.conf); options given here win\n"
		"  --status   print what the running daemon serves, and exit\n",
		SVC_DEVICES_MAX, SVC_SOCK_DEFAULT, SVC_SOCK_ENV, SRND_GROUP_DEFAULT);
}

/* --status: HELLO, STATUS, print the text. */
static int
status_client(void)
{
	struct svc_hello_req hq;
	struct svc_hello_rep hr;
	struct svc_status_req sq;
	static struct svc_status_rep sr;
	int fd, rc;

	fd = svc_connect(srnd.sock_path);
	if (fd < 0) {
		fprintf(stderr, "srnicd: no daemon answers on %s (%s): start one with "
			"usertools/srnic daemon --port DEVARGS --ip A.B.C.D\n", srnd.sock_path,
			strerror(-fd));
		return 1;
	}
	svc_hello_init(&hq, 1, "srnicd-status");
	rc = svc_call(fd, &hq, &hr, sizeof(hr));
	if (rc == 0) {
		memset(&sq, 0, sizeof(sq));
		svc_msg_init(&sq, SVC_STATUS, 0, 2, 0);
		rc = svc_call(fd, &sq, &sr, sizeof(sr));
	}
	close(fd);
	if (rc != 0) {
		fprintf(stderr, "srnicd: the daemon on %s did not answer STATUS: %s\n",
			srnd.sock_path, strerror(-rc));
		return 1;
	}
	fputs(sr.text, stdout);
	return 0;
}

/* A list of CPUs ("3", "2,5", "8-11") as EAL's --lcores mapping: lcore i
 * on the list's i-th CPU ("0@3", "0@2,1@5", "0@8,1@9,2@10,3@11"). EAL's -l
 * names lcores by their CPU, and an lcore id is below RTE_MAX_LCORE (128
 * here): a host's CPU 200 was refused. Anything else (a mapping of the
 * user's own: '@', '(') goes to --lcores as it is. 0, or -1 when the list
 * is longer than out or than RTE_MAX_LCORE. */
static int
lcore_map(const char *list, char *out, size_t n)
{
	unsigned long lo, hi, c;
	unsigned int id = 0;
	const char *p = list;
	size_t off = 0;
	char *end;
	int rc;

	if (strpbrk(list, "@()") != NULL || list[strspn(list, "0123456789,-")] != '\0') {
		rc = snprintf(out, n, "%s", list);
		return rc < 0 || (size_t)rc >= n ? -1 : 0;
	}
	while (*p != '\0') {
		lo = strtoul(p, &end, 10);
		if (end == p)
			return -1;
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			hi = strtoul(p, &end, 10);
			if (end == p || hi < lo)
				return -1;
		}
		for (c = lo; c <= hi; c++, id++) {
			if (id >= RTE_MAX_LCORE)
				return -1;
			rc = snprintf(out + off, n - off, "%s%u@%lu", id > 0 ? "," : "", id, c);
			if (rc < 0 || (size_t)rc >= n - off)
				return -1;
			off += (size_t)rc;
		}
		p = *end == ',' ? end + 1 : end;
	}
	return id > 0 ? 0 : -1;
}

/* With no --lcores, EAL's main lcore is the first CPU the daemon may run
 * on, and once EAL is up the control thread gets the daemon's whole CPU
 * set back (rte_eal_init() pins it to that one CPU), so the engine's
 * thread it starts floats as an embedded program's progress thread does.
 * Pinned to one CPU, every srnicd of a host (and their engines) would
 * share CPU 0 with whatever else runs there. */
/* Whether a --port is a PCI address (EAL's -a), not a virtual device (--vdev) */
static bool
port_is_pci(const char *port)
{
	unsigned int a, b, c, e;

	return sscanf(port, "%x:%x:%x.%x", &a, &b, &c, &e) == 4 ||
	       sscanf(port, "%x:%x.%x", &a, &b, &c) == 3;
}

static int
eal_start(const struct srnd *d, const char *lcores, unsigned int mem_mb, const char *loglvl)
{
	static char prefix[64], mem[32], lc[16], lcarg[1024], dev[SVC_DEVICES_MAX][600], ll[96];
	char *argv[SRND_EAL_ARGV_MAX], ports[SVC_DEVICES_MAX * 64] = "";
	int argc = 0, cpu;
	unsigned int i;
	bool pci = false;
	bool float_cpus = false;
	cpu_set_t cpus;

	if (lcores == NULL && pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0) {
		for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &cpus); cpu++)
			;
		if (cpu < CPU_SETSIZE) {
			snprintf(lc, sizeof(lc), "%d", cpu);
			lcores = lc;
			float_cpus = true;
		}
	}
	if (lcores == NULL)
		lcores = "0";

	argv[argc++] = "srnicd";
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnicd-%d", (int)getpid());
	argv[argc++] = prefix;
	argv[argc++] = "--no-shconf";
	argv[argc++] = "--no-huge";
	snprintf(mem, sizeof(mem), "-m%u", mem_mb);
	argv[argc++] = mem;
	memcpy(lcarg, "--lcores=", 9);
	if (lcore_map(lcores, lcarg + 9, sizeof(lcarg) - 9) != 0) {
		srnd_log("--lcores %s: not a list of CPUs (\"3\", \"2,5\", \"8-11\", at most %d) "
			 "nor an EAL --lcores mapping", lcores, RTE_MAX_LCORE);
		return -1;
	}
	argv[argc++] = lcarg;
	argv[argc++] = "--iova-mode=va";
	snprintf(ll, sizeof(ll), "--log-level=%s", loglvl);
	argv[argc++] = ll;
	for (i = 0; i < d->nb_devs; i++) {
		const char *port = d->dev[i].devargs;

		if (port_is_pci(port)) {
			pci = true;
			snprintf(dev[i], sizeof(dev[i]), "-a%s", port);
		} else {
			snprintf(dev[i], sizeof(dev[i]), "--vdev=%s", port);
		}
		argv[argc++] = dev[i];
		snprintf(ports + strlen(ports), sizeof(ports) - strlen(ports), "%s--port %.40s",
			 i > 0 ? ", " : "", port);
	}
	if (!pci)
		argv[argc++] = "--no-pci";
	argv[argc] = NULL;
	if (srnic_eal_init(argc, argv) < 0) {
		srnd_log("DPDK did not start (%s): check %s and --lcores %s "
			 "(--log-level debug shows why)", rte_strerror(rte_errno), ports, lcores);
		return -1;
	}
	if (float_cpus)
		pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	srnic_eal_remove_at_exit();
	srnic_eal_sweep();
	return 0;
}

/* Whether devargs make a memif port in the client role (memif's default) */
static bool
devargs_memif_client(const char *devargs)
{
	const char *r = strstr(devargs, ",role=");

	if (strncmp(devargs, "net_memif", strlen("net_memif")) != 0)
		return false;
	if (r == NULL)
		return true;
	r += strlen(",role=");
	return strncmp(r, "client", strlen("client")) == 0 &&
	       (r[strlen("client")] == ',' || r[strlen("client")] == '\0');
}

static int
device_start(struct srnd_dev *dv, unsigned int mtu)
{
	struct srnic_dev_conf dc;
	struct in_addr ip;
	char name[sizeof(dv->devargs)];

	if (inet_pton(AF_INET, dv->ip, &ip) != 1) {
		srnd_log("--ip %s is not an IPv4 address (A.B.C.D)", dv->ip);
		return -1;
	}
	snprintf(name, sizeof(name), "%s", dv->devargs);
	name[strcspn(name, ",")] = '\0';
	if (svc_port_netdev(dv->devargs, dv->netdev, sizeof(dv->netdev)) != 0)
		srnd_log("--port %s: iface= is longer than a network interface's name "
			 "(%d characters): programs will not find the device's netdev",
			 dv->devargs, SVC_NETDEV_MAX - 1);
	if (rte_eth_dev_get_port_by_name(name, &dv->port_id) != 0) {
		/* a PCI address as the user wrote it ("03:00.0") is not always
		 * the port's name ("0000:03:00.0"): the one port, when there is
		 * one; with several, the name must be the port's */
		if (srnd.nb_devs > 1) {
			srnd_log("--port %s: no DPDK port is named %s (give a PCI address in "
				 "full, 0000:BB:DD.F, when srnicd has several ports)", dv->devargs,
				 name);
			return -1;
		}
		if (rte_eth_dev_count_avail() == 0) {
			srnd_log("--port %s made no DPDK port (DPDK's lines above say why)",
				 dv->devargs);
			return -1;
		}
		dv->port_id = (uint16_t)rte_eth_find_next(0);
	}
	memset(&dc, 0, sizeof(dc));
	dc.port_id = dv->port_id;
	dc.nb_engines = 1;
	dc.mtu = (uint16_t)mtu;
	dc.ip_ver = 4;
	memcpy(dc.ip, &ip, 4);
	dc.name = dv->name;
	dv->sdev = srnic_dev_create(&dc);
	if (dv->sdev == NULL) {
		/* DPDK 22.11's memif client fails its start with no server */
		if (devargs_memif_client(dv->devargs))
			srnd_log("cannot start srnic on %s: %s: is its memif server running? Start "
				 "the server (role=server, the same socket=: another srnicd, or "
				 "a program under usertools/srnic run) first", dv->devargs,
				 rte_strerror(rte_errno));
		else
			srnd_log("cannot start srnic on %s: %s", dv->devargs,
				 rte_strerror(rte_errno));
		return -1;
	}
	dv->eng = srnic_dev_engine(dv->sdev, 0);
	dv->cm = srnic_cm_create(dv->sdev, dv->eng);
	if (dv->cm == NULL)
		srnd_log("no CM on %s (%s): rdma_cm will not work", dv->name,
			 rte_strerror(rte_errno));
	dv->link_up = -1;
	return 0;
}

static void
device_stop(struct srnd_dev *dv)
{
	if (dv->cm != NULL)
		srnic_cm_destroy(dv->cm);
	dv->cm = NULL;
	if (dv->sdev != NULL && srnic_dev_destroy(dv->sdev) != 0)
		srnd_log("%s did not go cleanly", dv->name);
	dv->sdev = NULL;
}

/* EAL's interrupt thread, held by intr_park() until the process ends */
static _Atomic bool intr_parked;
/* the handle of the source that holds it: EAL keeps a copy of its own, so
 * this is what keeps the handle reachable (LeakSanitizer) */
static struct rte_intr_handle *intr_park_handle;

static void
intr_hold(void *arg)
{
	RTE_SET_USED(arg);
	atomic_store(&intr_parked, true);
	for (;;)
		pause();        /* the process's exit ends the thread */
}

/*
 * EAL's interrupt thread held, past every callback it had taken, before
 * rte_eal_cleanup() closes the ports and unmaps DPDK's memory. DPDK 22.11's
 * cleanup never stops that thread, and net_memif's callbacks run there: a
 * server's control channels (a client daemon reconnects every
 * SRNIC_PORT_RESTART_MS once its link is down, port.c) and its listener.
 * One of them ran during the unmap: SIGSEGV in librte_net_memif.so.23.0 on
 * the interrupt thread while the main thread was in rte_mem_unmap(), one
 * stop in three of a memif server with a client daemon under load (closing
 * the ports first and waiting for the thread to go round once left one in
 * ten). The thread takes events one after another: the callback of an
 * event source of srnicd's own (an eventfd, written once) runs after those
 * of the events already taken, their pending unregisters included, and it
 * never returns, so nothing else runs there again: a close's unregister
 * finds no callback active and is done at once, the peer told by the
 * close's own DISCONNECT. (An alarm would do as well but for
 * rte_eal_cleanup()'s own wait for the alarms' source.) Bounded by
 * SRND_INTR_HOLD_US: a thread stuck in a callback is said, and the stop
 * goes on.
 */
static void
intr_park(void)
{
	struct rte_intr_handle *h;
	uint64_t t0, one = 1;
	int fd;

	h = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
	intr_park_handle = h;
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (h == NULL || fd < 0 || rte_intr_fd_set(h, fd) != 0 ||
	    rte_intr_type_set(h, RTE_INTR_HANDLE_EXT) != 0 ||
	    rte_intr_callback_register(h, intr_hold, NULL) != 0 ||
	    write(fd, &one, sizeof(one)) != (ssize_t)sizeof(one)) {
		srnd_log("cannot hold DPDK's interrupt thread for the stop (%s): stopping anyway",
			 strerror(errno));
		return;         /* the handle and fd: the process ends now */
	}
	t0 = srnd_wall_us();
	while (!atomic_load(&intr_parked) && srnd_wall_us() - t0 < SRND_INTR_HOLD_US)
		usleep(100);
	if (!atomic_load(&intr_parked))
		srnd_log("DPDK's interrupt thread still busy %d ms into the stop: stopping anyway",
			 SRND_INTR_HOLD_US / 1000);
}

/* The port a --port names: its devargs' name (before the first comma, the
 * driver's options after), a PCI address in full (03:00.0 and 0000:03:00.0
 * are one port), into key */
static void
port_key(const char *devargs, char *key, size_t n)
{
	struct rte_pci_addr pa;
	size_t len = strcspn(devargs, ",");

	snprintf(key, n, "%.*s", (int)len, devargs);
	if (rte_pci_addr_parse(key, &pa) == 0)
		rte_pci_device_name(&pa, key, n);
}

/* The options' devices: each a --port and an --ip, no two on one address
 * (a program's rdma_cm finds a device by its address); named srnic0,
 * srnic1, ... in order. 0, or -1 after saying what is wrong. */
static int
devices_check(struct srnd *d)
{
	struct in_addr ip[SVC_DEVICES_MAX];
	char key[SVC_DEVICES_MAX][sizeof(d->dev[0].devargs)];
	unsigned int i, k;

	if (d->nb_devs == 0) {
		srnd_log("--port DEVARGS and --ip A.B.C.D are both needed");
		return -1;
	}
	for (i = 0; i < d->nb_devs; i++) {
		struct srnd_dev *dv = &d->dev[i];

		dv->idx = i;
		snprintf(dv->name, sizeof(dv->name), SRND_DEV_NAME, i);
		if (dv->devargs[0] == '\0' || dv->ip[0] == '\0') {
			srnd_log("device %u (%s): --port DEVARGS and --ip A.B.C.D are both needed "
				 "(each --port with its --ip)", i,
				 dv->devargs[0] != '\0' ? dv->devargs : dv->ip);
			return -1;
		}
		if (inet_pton(AF_INET, dv->ip, &ip[i]) != 1) {
			srnd_log("--ip %s is not an IPv4 address (A.B.C.D)", dv->ip);
			return -1;
		}
		port_key(dv->devargs, key[i], sizeof(key[i]));
		for (k = 0; k < i; k++) {
			if (ip[k].s_addr == ip[i].s_addr) {
				srnd_log("--ip %s: both %s (--port %s) and %s (--port %s) have it; "
					 "give each device an address of its own", dv->ip,
					 d->dev[k].name, d->dev[k].devargs, dv->name, dv->devargs);
				return -1;
			}
			/* one port whatever the options: DPDK would refuse the
			 * second probe with a message naming neither device */
			if (strcmp(key[k], key[i]) == 0) {
				srnd_log("--port %s (%s) and --port %s (%s) are one port, %s: "
					 "one device per port", d->dev[k].devargs, d->dev[k].name,
					 dv->devargs, dv->name, key[i]);
				return -1;
			}
		}
	}
	return 0;
}

/* "srnic0 on DEVARGS, ip A.B.C.D" appended to the ready line */
static void
ready_line(const struct srnd *d, unsigned int i, char *t, size_t n)
{
	size_t off = strlen(t);

	snprintf(t + off, n - off, "%s%s on %s, ip %s", i > 0 ? "; " : "", d->dev[i].name,
		 d->dev[i].devargs, d->dev[i].ip);
}

/* The port's watch: link and MTU changes (srnic_get_async_event()), and a
 * line when the link changes. */
static void
port_watch(struct srnd_dev *dv)
{
	struct srnic_async_event ev;
	struct ibv_port_attr pa;
	int up;

	while (srnic_get_async_event(dv->sdev, &ev) == 0)
		srnd_objs_async(dv, &ev);
	if (srnic_dev_query_port(dv->sdev, &pa) != 0)
		return;
	up = pa.state == IBV_PORT_ACTIVE;
	if (up != dv->link_up)
		srnd_log("%s: port %s link %s", dv->name, dv->devargs, up ? "up (PORT_ACTIVE)" :
			 "down (PORT_DOWN)");
	dv->link_up = up;
}

/* epoll's tags for the devices' async event fds: an engine queued an event */
static char tag_async[SVC_DEVICES_MAX];

/* Every port's watch, then the sessions' (srnd_objs_watch()) */
static void
ports_watch(struct srnd *d)
{
	unsigned int i;

	for (i = 0; i < d->nb_devs; i++)
		port_watch(&d->dev[i]);
	srnd_objs_watch();
}

static int
serve_loop(struct srnd *d, int sfd)
{
	struct epoll_event ev, evs[16];
	struct signalfd_siginfo si;
	int epfd, n, i, sig = 0;
	unsigned int k;
	uint64_t v;

	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0)
		return -1;
	ev.events = EPOLLIN;
	ev.data.ptr = &srnd_tag_listen;
	epoll_ctl(epfd, EPOLL_CTL_ADD, d->listen_fd, &ev);
	ev.data.ptr = &srnd_tag_signal;
	epoll_ctl(epfd, EPOLL_CTL_ADD, sfd, &ev);
	/* an engine's event (QP fatal, SRQ limit, ...) reaches its session at
	 * once, not at the next look at the port */
	for (k = 0; k < d->nb_devs; k++) {
		ev.data.ptr = &tag_async[k];
		if (srnic_dev_event_fd(d->dev[k].sdev) >= 0)
			epoll_ctl(epfd, EPOLL_CTL_ADD, srnic_dev_event_fd(d->dev[k].sdev), &ev);
	}
	while (sig == 0) {
		n = epoll_wait(epfd, evs, 16, SRND_PORT_WATCH_MS);
		/* telemetry reads what this thread serves (telemetry.c) */
		srnd_ctl_lock();
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &srnd_tag_listen) {
				while (srnd_sessions_accept(d, epfd) > 0)
					;
			} else if ((char *)evs[i].data.ptr >= tag_async &&
				   (char *)evs[i].data.ptr < tag_async + SVC_DEVICES_MAX) {
				k = (unsigned int)((char *)evs[i].data.ptr - tag_async);
				/* cleared here, the events taken by port_watch() below */
				if (read(srnic_dev_event_fd(d->dev[k].sdev), &v, sizeof(v)) < 0)
					v = 0;
			} else if (evs[i].data.ptr == &srnd_tag_signal) {
				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					sig = (int)si.ssi_signo;
			} else {
				srnd_session_event(d, epfd, evs[i].data.ptr, evs[i].events);
			}
		}
		ports_watch(d);
		srnd_ctl_unlock();
	}
	srnd_log("%s: stopping", strsignal(sig));
	close(epfd);
	return 0;
}

/* What the options set; the config file's lines and then the command
 * line go through the same table (the command line wins). */
struct srnd_opts {
	const char *lcores, *group, *loglvl;
	unsigned int mtu, mem_mb;
	bool status;
	/* this pass' device: the one its last --port or --ip set (-1: none
	 * yet), and whether this pass gave it each. A pass' i-th device is
	 * d->dev[i]: the command line's second pass sets the fields it gives
	 * over the config file's (the one-port "--ip" over a file's port) */
	int cur;
	bool cur_port, cur_ip;
};

static const struct option srnd_options[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "ip", required_argument, NULL, 'i' },
	{ "lcores", required_argument, NULL, 'l' },
	{ "mtu", required_argument, NULL, 'M' },
	{ "socket", required_argument, NULL, 's' },
	{ "group", required_argument, NULL, 'g' },
	{ "mem-mb", required_argument, NULL, 'm' },
	{ "log-level", required_argument, NULL, 'L' },
	{ "config", required_argument, NULL, 'c' },
	{ "status", no_argument, NULL, 'S' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One getopt_long pass over argv (a config file's lines come as
 * "--key=value"). *config gets --config's file. 0, 1 (--help printed) or 2
 * (a bad option, said). */
static int
parse_options(int argc, char **argv, struct srnd *d, struct srnd_opts *o, const char **config)
{
	int c;

	optind = 0;     /* glibc: start again (a second pass) */
	o->cur = -1;
	while ((c = getopt_long(argc, argv, "h", srnd_options, NULL)) != -1) {
		switch (c) {
		case 'p':
		case 'i':
			/* a --port (--ip) starts the next device unless this
			 * pass' current one has none yet: "--port A --ip X",
			 * "--ip X --port A" both make one */
			if (o->cur < 0 || (c == 'p' ? o->cur_port : o->cur_ip)) {
				if (o->cur + 1 >= SVC_DEVICES_MAX) {
					srnd_log("--%s %s: more than %d ports (SVC_DEVICES_MAX, the "
						 "devices a daemon serves); run a second srnicd with "
						 "--socket PATH for the rest", c == 'p' ? "port" : "ip",
						 optarg, SVC_DEVICES_MAX);
					return 2;
				}
				o->cur++;
				o->cur_port = o->cur_ip = false;
				if ((unsigned int)o->cur >= d->nb_devs)
					d->nb_devs = (unsigned int)o->cur + 1;
			}
			if (c == 'p') {
				snprintf(d->dev[o->cur].devargs, sizeof(d->dev[o->cur].devargs), "%s",
					 optarg);
				o->cur_port = true;
			} else {
				snprintf(d->dev[o->cur].ip, sizeof(d->dev[o->cur].ip), "%s", optarg);
				o->cur_ip = true;
			}
			break;
		case 'l': o->lcores = optarg; break;
		case 'M': o->mtu = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'm': o->mem_mb = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'g': o->group = optarg; break;
		case 'L': o->loglvl = optarg; break;
		case 'S': o->status = true; break;
		case 'c': *config = optarg; break;
		case 's':
			if (strlen(optarg) >= sizeof(d->sock_path)) {
				srnd_log("--socket %s: longer than a unix socket's path", optarg);
				return 2;
			}
			snprintf(d->sock_path, sizeof(d->sock_path), "%s", optarg);
			break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		srnd_log("unexpected argument %s", argv[optind]);
		usage(stderr);
		return 2;
	}
	return 0;
}

/* The config file (config/srnicd.conf is the example): "key = value"
 * lines, the keys srnicd's long options without their dashes, '#'
 * comments and blank lines. Each becomes "--key=value" for
 * parse_options(); the strings live as long as the daemon (optarg points
 * into them). 0, or 2 after naming the file and line. */
static int
read_config(const char *path, struct srnd *d, struct srnd_opts *o)
{
	static char *args[SRND_CONFIG_LINES_MAX + 1];
	char line[SRND_CONFIG_LINE_MAX], *k, *v, *e;
	const struct option *opt;
	const char *nested = NULL;
	unsigned int ln = 0;
	int n = 0, rc;
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		srnd_log("--config %s: %s", path, strerror(errno));
		return 2;
	}
	args[n++] = "srnicd";
	while (fgets(line, sizeof(line), f) != NULL) {
		ln++;
		if (strchr(line, '\n') == NULL && !feof(f)) {
			srnd_log("%s:%u: longer than %d characters", path, ln, SRND_CONFIG_LINE_MAX - 2);
			goto bad;
		}
		line[strcspn(line, "\r\n")] = '\0';
		for (k = line; *k == ' ' || *k == '\t'; k++)
			;
		if (*k == '#' || *k == '\0')
			continue;
		v = strchr(k, '=');
		if (v == NULL) {
			srnd_log("%s:%u: not \"key = value\": %s", path, ln, k);
			goto bad;
		}
		for (e = v; e > k && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		for (v++; *v == ' ' || *v == '\t'; v++)
			;
		for (e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t'); e--)
			;
		*e = '\0';
		for (opt = srnd_options; opt->name != NULL; opt++)
			if (strcmp(opt->name, k) == 0)
				break;
		if (opt->name == NULL || opt->has_arg != required_argument ||
		    strcmp(k, "config") == 0) {
			srnd_log("%s:%u: no key %s (the keys are srnicd's options: port, ip, lcores, "
				 "mtu, socket, group, mem-mb, log-level)", path, ln, k);
			goto bad;
		}
		if (n == SRND_CONFIG_LINES_MAX) {
			srnd_log("%s:%u: more than %d settings", path, ln, SRND_CONFIG_LINES_MAX - 1);
			goto bad;
		}
		if (asprintf(&args[n], "--%s=%s", k, v) < 0)
			goto bad;
		n++;
	}
	fclose(f);
	args[n] = NULL;
	rc = parse_options(n, args, d, o, &nested);
	if (rc != 0)
		srnd_log("in %s", path);
	return rc;
bad:
	fclose(f);
	return 2;
}

int
main(int argc, char **argv)
{
	struct srnd_opts o = {
		.lcores = NULL, .loglvl = "error",
		.mtu = SRND_DEFAULT_MTU, .mem_mb = SRND_DEFAULT_MEM_MB,
	};
	const char *config = NULL;
	struct srnd *d = &srnd;
	char ready[SVC_DEVICES_MAX * 160] = "";
	unsigned int i;
	sigset_t set;
	int sfd, rc = 0;

	if (svc_sock_path(d->sock_path, sizeof(d->sock_path)) != 0) {
		srnd_log("%s is longer than a unix socket's path", SVC_SOCK_ENV);
		return 2;
	}
	/* the command line once for --config, the file, the command line again */
	rc = parse_options(argc, argv, d, &o, &config);
	if (rc == 0 && config != NULL) {
		rc = read_config(config, d, &o);
		if (rc == 0)
			rc = parse_options(argc, argv, d, &o, &config);
	}
	if (rc != 0)
		return rc == 1 ? 0 : rc;
	if (o.status)
		return status_client();
	if (devices_check(d) != 0) {
		usage(stderr);
		return 2;
	}
	if (o.mtu < 576 || o.mtu > 9000 || o.mem_mb < 64) {
		srnd_log("--mtu %u (576..9000) or --mem-mb %u (>= 64) out of range", o.mtu, o.mem_mb);
		return 2;
	}
	/* held until exit: the kernel releases it */
	if (srnd_lock(d->sock_path) < 0)
		return 1;
	if (srnd_socket_taken(d)) {
		srnd_log("another srnicd serves %s: stop it, or give this one --socket PATH",
			 d->sock_path);
		return 1;
	}
	/* a write to a pipe whose reader closed it (a session's notification
	 * pipe, its read end the program's to close) is EPIPE, counted, not a
	 * signal that ends the daemon */
	signal(SIGPIPE, SIG_IGN);
	/* SIGINT and SIGTERM through a signalfd: blocked before EAL makes its
	 * threads, so every thread inherits the mask and only the control
	 * thread's epoll sees them */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		return 1;
	if (eal_start(d, o.lcores, o.mem_mb, o.loglvl) != 0)
		return 1;
	for (i = 0; i < d->nb_devs; i++) {
		if (device_start(&d->dev[i], o.mtu) != 0) {
			while (i-- > 0)
				device_stop(&d->dev[i]);
			intr_park();
			rte_eal_cleanup();
			return 1;
		}
	}
	if (srnd_sessions_listen(d, o.group) != 0 || srnd_engine_start(d) != 0) {
		rc = 1;
		goto out;
	}
	ports_watch(d);
	d->ready_cpu_us = srnd_cpu_us();
	d->ready_wall_us = srnd_wall_us();
	for (i = 0; i < d->nb_devs; i++)
		ready_line(d, i, ready, sizeof(ready));
	srnd_log("ready: %s, engine %s", ready,
		 d->eng_lcore < RTE_MAX_LCORE ? "on a worker lcore" : "on a thread");
	srnd_telemetry_set(d);
	serve_loop(d, sfd);
	srnd_telemetry_set(NULL);
out:
	/* doc/srnicd.md section 8's order: each session told FATAL (its rings
	 * out of the engine's sight first, so they are final), then reclaimed
	 * with the engine still running (its ids' DREQs go out, its MRs'
	 * in-flight packets come back: a stopped engine left each dereg to
	 * wait out SRND_DEREG_TIMEOUT_US ten times), then the engine stops */
	srnd_sessions_fatal(d);
	srnd_sessions_close_all(d);
	srnd_objs_retired_drain();
	srnd_engine_stop(d);
	for (i = 0; i < d->nb_devs; i++)
		device_stop(&d->dev[i]);
	intr_park();
	rte_eal_cleanup();
	close(sfd);
	if (rc == 0)
		srnd_log("stopped");
	return rc;
}
