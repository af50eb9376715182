/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnicd: one DPDK port, the srnic device on it (its engine answering
 * ARP/ND, QP1 and the CM), and the control socket through which the
 * host's processes attach (doc/srnicd.md). In the foreground; SIGINT or
 * SIGTERM stops it cleanly. `srnicd --status` asks a running daemon what
 * it serves.
 */
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
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnicd.h"

#define SRND_EAL_ARGV_MAX 32

static struct srnd srnd = { .listen_fd = -1 };

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: srnicd --port DEVARGS --ip A.B.C.D [--lcores LIST] [--mtu N]\n"
		"              [--socket PATH] [--group NAME] [--mem-mb N] [--log-level L]\n"
		"       srnicd --config FILE [OPTIONS]\n"
		"       srnicd --status [--socket PATH]\n"
		"  --port     the DPDK device srnicd owns, as --vdev/-a take it\n"
		"             (net_memif0,role=server,socket=/tmp/a.sock, net_af_packet0,iface=eth1,\n"
		"             a PCI address)\n"
		"  --ip       the device's IPv4 address on it\n"
		"  --lcores   CPUs: the first is the control thread's, the next the engine's\n"
		"             (one lcore: the engine runs on a thread beside the control one;\n"
		"             none: the first CPU the daemon may run on, then its threads on all)\n"
		"  --socket   the control socket (default %s; programs: %s=PATH)\n"
		"  --group    the group that may attach (socket mode 0660; default: %s if it\n"
		"             exists, else root only, 0600)\n"
		"  --config   \"key = value\" lines, the keys these options' names (the\n"
		"             example: config/srnicd.conf); options given here win\n"
		"  --status   print what the running daemon serves, and exit\n",
		SVC_SOCK_DEFAULT, SVC_SOCK_ENV, SRND_GROUP_DEFAULT);
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
static int
eal_start(const char *port, const char *lcores, unsigned int mem_mb, const char *loglvl)
{
	static char prefix[64], mem[32], lc[16], lcarg[1024], dev[600], ll[96];
	char *argv[SRND_EAL_ARGV_MAX];
	int argc = 0, cpu;
	unsigned int a, b, c, e;
	bool pci = sscanf(port, "%x:%x:%x.%x", &a, &b, &c, &e) == 4 ||
		   sscanf(port, "%x:%x.%x", &a, &b, &c) == 3;
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
	if (pci) {
		snprintf(dev, sizeof(dev), "-a%s", port);
	} else {
		snprintf(dev, sizeof(dev), "--vdev=%s", port);
		argv[argc++] = "--no-pci";
	}
	argv[argc++] = dev;
	argv[argc] = NULL;
	if (srnic_eal_init(argc, argv) < 0) {
		srnd_log("DPDK did not start (%s): check --port %s and --lcores %s "
			 "(--log-level debug shows why)", rte_strerror(rte_errno), port, lcores);
		return -1;
	}
	if (float_cpus)
		pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	srnic_eal_remove_at_exit();
	srnic_eal_sweep();
	return 0;
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
		srnd_log("cannot start srnic on %s: %s", dv->devargs, rte_strerror(rte_errno));
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

/* The port's watch: link and MTU changes (srnic_get_async_event()), and a
 * line when the link changes. */
static void
port_watch(struct srnd_dev *dv)
{
	struct srnic_async_event ev;
	struct ibv_port_attr pa;
	int up;

	while (srnic_get_async_event(dv->sdev, &ev) == 0)
		srnd_objs_async(&ev);
	srnd_objs_watch();
	if (srnic_dev_query_port(dv->sdev, &pa) != 0)
		return;
	up = pa.state == IBV_PORT_ACTIVE;
	if (up != dv->link_up)
		srnd_log("%s: port %s link %s", dv->name, dv->devargs, up ? "up (PORT_ACTIVE)" :
			 "down (PORT_DOWN)");
	dv->link_up = up;
}

/* epoll's tag for the device's async event fd: an engine queued an event */
static char tag_async;

static int
serve_loop(struct srnd *d, int sfd)
{
	struct epoll_event ev, evs[16];
	struct signalfd_siginfo si;
	int epfd, n, i, sig = 0;
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
	ev.data.ptr = &tag_async;
	if (srnic_dev_event_fd(d->dev.sdev) >= 0)
		epoll_ctl(epfd, EPOLL_CTL_ADD, srnic_dev_event_fd(d->dev.sdev), &ev);
	while (sig == 0) {
		n = epoll_wait(epfd, evs, 16, SRND_PORT_WATCH_MS);
		/* telemetry reads what this thread serves (telemetry.c) */
		srnd_ctl_lock();
		for (i = 0; i < n; i++) {
			if (evs[i].data.ptr == &srnd_tag_listen) {
				while (srnd_sessions_accept(d, epfd) > 0)
					;
			} else if (evs[i].data.ptr == &tag_async) {
				/* cleared here, the events taken by port_watch() below */
				if (read(srnic_dev_event_fd(d->dev.sdev), &v, sizeof(v)) < 0)
					v = 0;
			} else if (evs[i].data.ptr == &srnd_tag_signal) {
				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					sig = (int)si.ssi_signo;
			} else {
				srnd_session_event(d, epfd, evs[i].data.ptr, evs[i].events);
			}
		}
		port_watch(&d->dev);
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
	while ((c = getopt_long(argc, argv, "h", srnd_options, NULL)) != -1) {
		switch (c) {
		case 'p': snprintf(d->dev.devargs, sizeof(d->dev.devargs), "%s", optarg); break;
		case 'i': snprintf(d->dev.ip, sizeof(d->dev.ip), "%s", optarg); break;
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
	sigset_t set;
	int sfd, rc = 0;

	if (svc_sock_path(d->sock_path, sizeof(d->sock_path)) != 0) {
		srnd_log("%s is longer than a unix socket's path", SVC_SOCK_ENV);
		return 2;
	}
	snprintf(d->dev.name, sizeof(d->dev.name), "%s", SRND_DEV_NAME);
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
	if (d->dev.devargs[0] == '\0' || d->dev.ip[0] == '\0') {
		srnd_log("--port DEVARGS and --ip A.B.C.D are both needed");
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
	if (eal_start(d->dev.devargs, o.lcores, o.mem_mb, o.loglvl) != 0)
		return 1;
	if (device_start(&d->dev, o.mtu) != 0) {
		rte_eal_cleanup();
		return 1;
	}
	if (srnd_sessions_listen(d, o.group) != 0 || srnd_engine_start(d) != 0) {
		rc = 1;
		goto out;
	}
	port_watch(&d->dev);
	d->ready_cpu_us = srnd_cpu_us();
	d->ready_wall_us = srnd_wall_us();
	srnd_log("ready: %s on %s, ip %s, engine %s", d->dev.name, d->dev.devargs, d->dev.ip,
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
	if (d->dev.cm != NULL)
		srnic_cm_destroy(d->dev.cm);
	if (srnic_dev_destroy(d->dev.sdev) != 0)
		srnd_log("the device did not go cleanly");
	rte_eal_cleanup();
	close(sfd);
	if (rc == 0)
		srnd_log("stopped");
	return rc;
}
