/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device: configuration, DPDK and the srnic engine brought up inside the
 * process on the first ibv_get_device_list(), torn down at exit (also on
 * SIGINT/SIGTERM); device list, open/close, query_device/port/gid/pkey.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <getopt.h>
#include <inttypes.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_dev.h>

#include "srnic_cm.h"
#include "srnic_lossy.h"
#include "verbs.h"

#undef ibv_get_device_list
#undef ibv_query_port

#define SV_EAL_ARGV_MAX 64
#define SV_SOCK_PATH_MAX 256
#define SV_MEMIF_DEFAULT_SOCK "/run/memif.sock"

static pthread_mutex_t sv_init_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_device *sv_dev;
static bool sv_init_done;       /* tried once: a failed start is not retried */
static char sv_sock_path[SV_SOCK_PATH_MAX];  /* a memif server's socket, unlinked at exit */
static char sv_run_dir[SV_SOCK_PATH_MAX];    /* EAL's runtime dir (empty with --no-shconf), removed at exit */
static struct sigaction sv_old_int, sv_old_term;
static bool sv_stats_at_exit;   /* SRNIC_STATS=1 */

void
sv_log(const char *fmt, ...)
{
	va_list ap;

	fputs("srnic: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- configuration ---- */

static void
copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src);
}

/* One KEY=VALUE (SRNIC_PORT=..., as the environment takes them). */
static int
conf_set(struct sv_conf *c, const char *key, const char *val)
{
	if (strcmp(key, "SRNIC_PORT") == 0)
		copy_str(c->port, sizeof(c->port), val);
	else if (strcmp(key, "SRNIC_IP") == 0)
		copy_str(c->ip, sizeof(c->ip), val);
	else if (strcmp(key, "SRNIC_LCORES") == 0)
		copy_str(c->lcores, sizeof(c->lcores), val);
	else if (strcmp(key, "SRNIC_EAL_ARGS") == 0)
		copy_str(c->eal_args, sizeof(c->eal_args), val);
	else if (strcmp(key, "SRNIC_LOG_LEVEL") == 0)
		copy_str(c->log_level, sizeof(c->log_level), val);
	else if (strcmp(key, "SRNIC_MEM_MB") == 0)
		c->mem_mb = (unsigned int)strtoul(val, NULL, 0);
	else if (strcmp(key, "SRNIC_MTU") == 0)
		c->mtu = (unsigned int)strtoul(val, NULL, 0);
	else if (strcmp(key, "SRNIC_HUGE") == 0)
		c->huge = strcmp(val, "1") == 0 || strcmp(val, "yes") == 0;
	else if (strcmp(key, "SRNIC_PROGRESS") == 0)
		c->no_progress_thread = strcmp(val, "app") == 0;
	else if (strcmp(key, "SRNIC_STATS") == 0)
		c->stats = strcmp(val, "1") == 0 || strcmp(val, "yes") == 0;
	else if (strcmp(key, "SRNIC_DROP") == 0) {
		char *end;
		double p = strtod(val, &end);

		if (end == val || *end != '\0' || !(p >= 0.0 && p < 1.0)) {
			sv_log("SRNIC_DROP=%s is not a share of packets in [0, 1), e.g. 0.01: "
			       "no packet dropped", val);
			p = 0.0;
		}
		c->drop = p;
	} else if (strcmp(key, "SRNIC_DROP_FIRST") == 0) {
		char *end;
		unsigned long long n = strtoull(val, &end, 10);

		if (!isdigit((unsigned char)val[0]) || *end != '\0') {
			sv_log("SRNIC_DROP_FIRST=%s is not a count of packets, e.g. 300: the loss "
			       "goes on for every packet", val);
			n = 0;
		}
		c->drop_first = n;
	} else if (strcmp(key, "SRNIC_EXIT_LINGER_MS") == 0) {
		char *end;
		unsigned long ms = strtoul(val, &end, 10);

		if (!isdigit((unsigned char)val[0]) || *end != '\0' || ms > SV_EXIT_LINGER_MAX_MS) {
			sv_log("SRNIC_EXIT_LINGER_MS=%s is not a time in ms up to %u, e.g. 200: "
			       "%u taken", val, SV_EXIT_LINGER_MAX_MS, SV_EXIT_LINGER_MS);
			ms = SV_EXIT_LINGER_MS;
		}
		c->linger_ms = (unsigned int)ms;
	} else if (strcmp(key, "SRNIC_STALL_AFTER") == 0) {
		c->stall_after = strtoull(val, NULL, 10);
	} else if (strcmp(key, "SRNIC_STALL_MS") == 0) {
		c->stall_ms = (unsigned int)strtoul(val, NULL, 10);
	} else
		return -1;
	return 0;
}

static const char *const sv_conf_keys[] = {
	"SRNIC_PORT", "SRNIC_IP", "SRNIC_LCORES", "SRNIC_EAL_ARGS", "SRNIC_LOG_LEVEL",
	"SRNIC_MEM_MB", "SRNIC_MTU", "SRNIC_HUGE", "SRNIC_PROGRESS", "SRNIC_STATS",
	"SRNIC_DROP", "SRNIC_DROP_FIRST", "SRNIC_EXIT_LINGER_MS", "SRNIC_STALL_AFTER",
	"SRNIC_STALL_MS",
};

static int
conf_file(struct sv_conf *c, const char *path)
{
	char line[1024];
	unsigned int lineno = 0;
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		sv_log("cannot read SRNIC_CONFIG=%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *eq, *end;

		lineno++;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '#' || *p == '\0')
			continue;
		end = p + strlen(p);
		while (end > p && isspace((unsigned char)end[-1]))
			*--end = '\0';
		eq = strchr(p, '=');
		if (eq == NULL) {
			sv_log("%s:%u: expected KEY=VALUE", path, lineno);
			continue;
		}
		*eq = '\0';
		if (conf_set(c, p, eq + 1) != 0)
			sv_log("%s:%u: unknown key %s (known: SRNIC_PORT, SRNIC_IP, ...; doc/verbs.md)",
			       path, lineno, p);
	}
	fclose(f);
	return 0;
}

/* Defaults, then the SRNIC_CONFIG file, then the environment. */
int
sv_conf_load(struct sv_conf *c)
{
	const char *file = getenv("SRNIC_CONFIG");
	unsigned int i;

	memset(c, 0, sizeof(*c));
	c->mem_mb = SV_DEFAULT_MEM_MB;
	c->mtu = SV_DEFAULT_MTU;
	c->linger_ms = SV_EXIT_LINGER_MS;
	if (file != NULL && *file != '\0' && conf_file(c, file) != 0)
		return -1;
	for (i = 0; i < RTE_DIM(sv_conf_keys); i++) {
		const char *v = getenv(sv_conf_keys[i]);

		if (v != NULL)
			conf_set(c, sv_conf_keys[i], v);
	}
	return 0;
}

/* ---- exit and signals ---- */

/* At exit: the progress thread stops (no engine poll under the exit
 * handlers), and what would outlive the process goes: a memif socket file
 * and EAL's runtime dir. The port is not stopped nor closed and EAL not
 * cleaned up: memif handles its peer's disconnect on EAL's interrupt
 * thread, and a stop or close from this thread at the same moment (both
 * peers exiting together) freed its regions twice ("EAL: Error: Invalid
 * memory"), run on that thread instead it crashed it. Everything else
 * (anonymous or memfd memory with --no-huge/--in-memory, the memif and
 * packet sockets, a VFIO device) is the kernel's to release at exit.
 * First the frames the engine sent last get SRNIC_EXIT_LINGER_MS to reach
 * the peer (sv_progress_linger()). */
/* SRNIC_STATS=1: every nonzero engine counter, one per line, as
 * srnic-perf prints them (a benchmark's retransmissions, drops, ...). */
/*
 * SRNIC_DROP's lossy link (lib/link) is a plug-in, srnic_lossy.so beside
 * this library, loaded only when a program asks for loss: the drop-in
 * carries none of its code, and a run without SRNIC_DROP never maps it.
 */
#define SV_LOSSY_PLUGIN "srnic_lossy.so"

static struct {
	struct srnic_lossy *(*attach)(uint16_t port_id, const struct srnic_lossy_conf *conf);
	void (*get_stats)(const struct srnic_lossy *l, struct srnic_lossy_stats *st);
} sv_lossy;

/* NULL once sv_lossy is filled, else what went wrong. */
static const char *
sv_lossy_load(void)
{
	static char err[PATH_MAX + 128];
	char path[PATH_MAX];
	const char *slash;
	Dl_info self;
	void *h;

	if (dladdr((void *)sv_lossy_load, &self) == 0 || self.dli_fname == NULL ||
	    (slash = strrchr(self.dli_fname, '/')) == NULL)
		return "cannot find the directory of libibverbs.so.1";
	snprintf(path, sizeof(path), "%.*s/" SV_LOSSY_PLUGIN, (int)(slash - self.dli_fname),
		 self.dli_fname);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		snprintf(err, sizeof(err), "%s; build or install it with libibverbs.so.1", dlerror());
		return err;
	}
	sv_lossy.attach = (struct srnic_lossy *(*)(uint16_t, const struct srnic_lossy_conf *))
		dlsym(h, "srnic_lossy_attach");
	sv_lossy.get_stats = (void (*)(const struct srnic_lossy *, struct srnic_lossy_stats *))
		dlsym(h, "srnic_lossy_get_stats");
	if (sv_lossy.attach == NULL || sv_lossy.get_stats == NULL) {
		snprintf(err, sizeof(err), "%s has no srnic_lossy_attach/get_stats", path);
		return err;
	}
	return NULL;
}

static void
print_stats(struct sv_device *dev)
{
	unsigned int i, n = srnic_engine_stats_count();

	fprintf(stderr, "srnic: engine counters (nonzero), pid %d\n", (int)getpid());
	for (i = 0; i < n; i++) {
		const char *name = srnic_engine_stat_name(i);
		int64_t v = srnic_dev_stat(dev->sdev, name);

		if (v != 0)
			fprintf(stderr, "srnic:   %-28s %16" PRId64 "\n", name, v);
	}
	if (dev->lossy != NULL) {
		struct srnic_lossy_stats st;

		sv_lossy.get_stats(dev->lossy, &st);
		fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", "lossy_seen", st.n[SRNIC_LOSSY_PASS]);
		fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", "lossy_drop", st.n[SRNIC_LOSSY_DROP]);
	}
}

static void
sv_teardown(void)
{
	struct sv_device *dev = sv_dev;

	if (dev == NULL)
		return;
	sv_progress_linger(dev);
	sv_progress_stop(dev);
	if (sv_stats_at_exit)
		print_stats(dev);
	if (sv_sock_path[0] != '\0')
		unlink(sv_sock_path);
}

/* Async-signal-safe part only: what would otherwise stay on disk. */
static void
sv_signal(int sig)
{
	struct sigaction *old = sig == SIGINT ? &sv_old_int : &sv_old_term;

	if (sv_sock_path[0] != '\0')
		unlink(sv_sock_path);
	if (sv_run_dir[0] != '\0')
		rmdir(sv_run_dir);
	if (old->sa_handler == SIG_IGN)
		return;
	if ((old->sa_flags & SA_SIGINFO) == 0 && old->sa_handler != SIG_DFL) {
		old->sa_handler(sig);
		return;
	}
	if ((old->sa_flags & SA_SIGINFO) != 0 && old->sa_sigaction != NULL) {
		old->sa_sigaction(sig, NULL, NULL);
		return;
	}
	sigaction(sig, old, NULL);
	raise(sig);
}

static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sv_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, &sv_old_int);
	sigaction(SIGTERM, &sa, &sv_old_term);
}

/* ---- bring-up ---- */

static bool
is_pci_addr(const char *s)
{
	unsigned int a, b, c, d;

	return sscanf(s, "%x:%x:%x.%x", &a, &b, &c, &d) == 4 ||
	       sscanf(s, "%x:%x.%x", &a, &b, &c) == 3;
}

/* A memif server's socket file, or "": DPDK 22.11's memif listens on an
 * abstract socket (nothing on disk) unless socket-abstract=no. */
static void
memif_sock(const char *port)
{
	const char *p;
	size_t n;

	sv_sock_path[0] = '\0';
	if (strncmp(port, "net_memif", 9) != 0 || strstr(port, "role=client") != NULL ||
	    strstr(port, "socket-abstract=no") == NULL)
		return;
	p = strstr(port, "socket=");
	if (p == NULL) {
		copy_str(sv_sock_path, sizeof(sv_sock_path), SV_MEMIF_DEFAULT_SOCK);
		return;
	}
	p += strlen("socket=");
	n = strcspn(p, ",");
	if (n >= sizeof(sv_sock_path))
		return;
	memcpy(sv_sock_path, p, n);
	sv_sock_path[n] = '\0';
}

/* The value of KEY= in devargs PORT ("" when absent), at most N - 1 bytes. */
static void
port_arg(const char *port, const char *key, char *val, size_t n)
{
	size_t klen = strlen(key), len;
	const char *p;

	val[0] = '\0';
	for (p = strchr(port, ','); p != NULL; p = strchr(p + 1, ',')) {
		if (strncmp(p + 1, key, klen) != 0 || p[1 + klen] != '=')
			continue;
		p += klen + 2;
		len = strcspn(p, ",");
		if (len >= n)
			len = n - 1;
		memcpy(val, p, len);
		val[len] = '\0';
		return;
	}
}

/* Whether a server listens on memif's socket PATH (abstract unless
 * socket-abstract=no, as memif's own default). */
static bool
memif_sock_served(const char *port, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char abstract[8];
	socklen_t len;
	bool served;
	int fd;

	port_arg(port, "socket-abstract", abstract, sizeof(abstract));
	if (strlen(path) + 1 >= sizeof(sa.sun_path))
		return false;
	if (strcmp(abstract, "no") == 0) {
		memcpy(sa.sun_path, path, strlen(path) + 1);
		len = sizeof(sa);
	} else {
		memcpy(sa.sun_path + 1, path, strlen(path));
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(path));
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0)
		return false;
	served = connect(fd, (struct sockaddr *)&sa, len) == 0;
	close(fd);
	return served;
}

/* Why the PMD of PORT made no port, in WHY: what to do about it where srnic
 * can tell (the PMD's own line says what failed, not what to change). */
static void
port_fail_why(const char *port, char *why, size_t n)
{
	char role[16], path[SV_SOCK_PATH_MAX], iface[IF_NAMESIZE + 8];

	if (strncmp(port, "net_memif", strlen("net_memif")) == 0) {
		port_arg(port, "role", role, sizeof(role));
		port_arg(port, "socket", path, sizeof(path));
		if (path[0] == '\0')
			copy_str(path, sizeof(path), SV_MEMIF_DEFAULT_SOCK);
		if (role[0] != '\0' && strcmp(role, "server") != 0 && strcmp(role, "client") != 0)
			snprintf(why, n, "role=%s: a memif port's role is server or client", role);
		else if (strcmp(role, "client") != 0 && memif_sock_served(port, path))
			snprintf(why, n, "its socket %s is in use by another memif server: stop that "
				 "one, or give this one another socket= (and its client the same)", path);
		else
			snprintf(why, n, "memif refused its arguments (DPDK's lines above say why)");
		return;
	}
	if (strncmp(port, "net_af_packet", strlen("net_af_packet")) == 0) {
		port_arg(port, "iface", iface, sizeof(iface));
		if (iface[0] == '\0')
			snprintf(why, n, "net_af_packet needs iface=NAME, a network interface");
		else if (if_nametoindex(iface) == 0)
			snprintf(why, n, "no network interface %s here ('ip link' lists them; in a "
				 "network namespace, run the program in it)", iface);
		else
			snprintf(why, n, "af_packet cannot use %s (DPDK's lines above say why; "
				 "it needs root)", iface);
		return;
	}
	snprintf(why, n, "its PMD refused the arguments (DPDK's lines above say why)");
}

static int
eal_start(const struct sv_conf *c, char *devname, size_t devname_len)
{
	static char prefix[64], mem[32], lcores[80], dev[sizeof(c->port) + 8], loglvl[96];
	static char extra[sizeof(c->eal_args)];
	char *argv[SV_EAL_ARGV_MAX];
	int argc = 0, rc, save_optind = optind, save_opterr = opterr;
	char *save_optarg = optarg;
	cpu_set_t cpus;
	bool have_cpus;
	char *tok, *sp;

	argv[argc++] = "srnic";
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic-%d", (int)getpid());
	argv[argc++] = prefix;
	if (c->huge) {
		/* hugepages without files (memfd) nor shared config */
		argv[argc++] = "--in-memory";
	} else {
		/* --in-memory refuses --no-huge (legacy memory): no shared
		 * config files either way */
		argv[argc++] = "--no-shconf";
		argv[argc++] = "--no-huge";
		snprintf(mem, sizeof(mem), "-m%u", c->mem_mb);
		argv[argc++] = mem;
	}
	snprintf(lcores, sizeof(lcores), "-l%s", c->lcores[0] ? c->lcores : "0");
	argv[argc++] = lcores;
	argv[argc++] = "--no-telemetry";
	argv[argc++] = "--iova-mode=va";
	snprintf(loglvl, sizeof(loglvl), "--log-level=%s", c->log_level[0] ? c->log_level : "error");
	argv[argc++] = loglvl;
	if (is_pci_addr(c->port)) {
		snprintf(dev, sizeof(dev), "-a%s", c->port);
	} else {
		snprintf(dev, sizeof(dev), "--vdev=%s", c->port);
		argv[argc++] = "--no-pci";
	}
	argv[argc++] = dev;
	copy_str(extra, sizeof(extra), c->eal_args);
	for (tok = strtok_r(extra, " \t", &sp); tok != NULL && argc < SV_EAL_ARGV_MAX - 1;
	     tok = strtok_r(NULL, " \t", &sp))
		argv[argc++] = tok;
	argv[argc] = NULL;

	/* rte_eal_init() pins the calling thread to the main lcore's CPU and
	 * reuses getopt's globals: neither is the application's business. */
	have_cpus = pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0;
	rc = rte_eal_init(argc, argv);
	if (have_cpus)
		pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	optind = save_optind;
	opterr = save_opterr;
	optarg = save_optarg;
	if (rc < 0 && rte_errno == ENODEV && !is_pci_addr(c->port)) {
		/* EAL: "Unable to parse device": no driver of that name */
		sv_log("DPDK did not start: no DPDK driver for SRNIC_PORT=%s: check its name "
		       "(net_memif0, net_af_packet0, ...: a driver's name and a number) and that "
		       "the driver is installed (Debian: librte-net-*)", c->port);
		rmdir(rte_eal_get_runtime_dir());
		return -1;
	}
	if (rc < 0) {
		sv_log("DPDK did not start (%s): check SRNIC_PORT=%s, SRNIC_LCORES, SRNIC_EAL_ARGS "
		       "(SRNIC_LOG_LEVEL=debug shows why)", rte_strerror(rte_errno), c->port);
		/* made before EAL failed, empty (no shared config) */
		rmdir(rte_eal_get_runtime_dir());
		return -1;
	}
	copy_str(sv_run_dir, sizeof(sv_run_dir), rte_eal_get_runtime_dir());
	/* gone at any exit, a failed start included (sv_signal() for a
	 * SIGINT or SIGTERM); those of srnic programs killed before us go now */
	srnic_eal_remove_at_exit();
	srnic_eal_sweep();
	/* the device name is the devargs' first field */
	copy_str(devname, devname_len, c->port);
	devname[strcspn(devname, ",")] = '\0';
	return 0;
}

static struct sv_device *
device_start(void)
{
	struct sv_conf c;
	struct srnic_dev_conf dc;
	struct sv_device *dev;
	char devname[sizeof(((struct sv_conf *)0)->port)];
	char why[SV_SOCK_PATH_MAX + 128];
	struct in_addr ip;
	uint16_t port;
	int i;

	if (sv_conf_load(&c) != 0)
		return NULL;
	if (c.port[0] == '\0' && c.ip[0] == '\0') {
		sv_log("no device: set SRNIC_PORT (a DPDK device, e.g. "
		       "net_memif0,role=server,socket=/tmp/srnic.sock) and SRNIC_IP=A.B.C.D, "
		       "or run the program as: usertools/srnic run --port DEV --ip A.B.C.D -- PROGRAM");
		return NULL;
	}
	if (c.ip[0] == '\0') {
		sv_log("no device: SRNIC_PORT=%s has no address: set SRNIC_IP=A.B.C.D (srnic's "
		       "IPv4 address on it; usertools/srnic run: --ip A.B.C.D)", c.port);
		return NULL;
	}
	if (c.port[0] == '\0') {
		sv_log("no device: SRNIC_IP=%s has no port: set SRNIC_PORT to a DPDK device, e.g. "
		       "net_memif0,role=server,socket=/tmp/srnic.sock (usertools/srnic run: --port "
		       "DEV)", c.ip);
		return NULL;
	}
	if (inet_pton(AF_INET, c.ip, &ip) != 1) {
		sv_log("SRNIC_IP=%s is not an IPv4 address (A.B.C.D)", c.ip);
		return NULL;
	}
	memif_sock(c.port);
	if (eal_start(&c, devname, sizeof(devname)) != 0)
		return NULL;
	if (rte_eth_dev_get_port_by_name(devname, &port) != 0) {
		if (is_pci_addr(c.port) && rte_eth_dev_count_avail() > 0) {
			port = (uint16_t)rte_eth_find_next(0);
		} else {
			port_fail_why(c.port, why, sizeof(why));
			sv_log("SRNIC_PORT=%s made no DPDK port: %s", c.port, why);
			rte_eal_cleanup();
			return NULL;
		}
	}
	dev = calloc(1, sizeof(*dev));
	if (dev == NULL)
		return NULL;
	memset(&dc, 0, sizeof(dc));
	dc.port_id = port;
	dc.nb_engines = 1;
	dc.mtu = (uint16_t)c.mtu;
	dc.ip_ver = 4;
	memcpy(dc.ip, &ip, 4);
	dc.name = SV_DEV_NAME;
	dev->sdev = srnic_dev_create(&dc);
	if (dev->sdev == NULL) {
		port_arg(c.port, "role", why, sizeof(why));
		/* DPDK 22.11's memif client fails its start with no server */
		if (strncmp(c.port, "net_memif", strlen("net_memif")) == 0 &&
		    strcmp(why, "client") == 0)
			sv_log("cannot start srnic on %s: %s: is its memif server running? Start the "
			       "server (role=server, the same socket=) first", c.port,
			       rte_strerror(rte_errno));
		else
			sv_log("cannot start srnic on %s: %s", c.port, rte_strerror(rte_errno));
		rte_eth_dev_close(port);
		rte_eal_cleanup();
		free(dev);
		return NULL;
	}
	dev->port_id = port;
	if (c.drop > 0.0) {
		/* fault injection for unmodified programs: retransmission,
		 * timers and the progress thread under loss */
		/* SRNIC_DROP_FIRST: a run's last exchange goes clean (a program
		 * whose last ACK is lost after its peer has exited would resend
		 * for good: retry_cnt 7 never runs out, as with rxe) */
		struct srnic_lossy_conf lc = { .seed = (uint64_t)getpid(), .drop = c.drop,
					       .rates_first = c.drop_first };

		const char *err = sv_lossy_load();

		dev->lossy = err == NULL ? sv_lossy.attach(port, &lc) : NULL;
		if (err != NULL)
			sv_log("SRNIC_DROP=%g: cannot load the lossy link (%s): no packet dropped",
			       c.drop, err);
		else if (dev->lossy == NULL)
			sv_log("SRNIC_DROP=%g: cannot make %s lossy (%s): no packet dropped",
			       c.drop, c.port, rte_strerror(rte_errno));
		else if (c.drop_first > 0)
			sv_log("SRNIC_DROP=%g: dropping that share of the first %" PRIu64 " packets "
			       "%s receives (SRNIC_DROP_FIRST)", c.drop, c.drop_first, c.port);
		else
			sv_log("SRNIC_DROP=%g: dropping that share of the packets %s receives",
			       c.drop, c.port);
	}
	dev->eng = srnic_dev_engine(dev->sdev, 0);
	dev->tsc_hz = rte_get_tsc_hz();
	dev->linger_tsc = dev->tsc_hz / 1000 * c.linger_ms;
	if (c.stall_after > 0 && c.stall_ms > 0) {
		dev->stall_after = c.stall_after;
		dev->stall_ms = c.stall_ms;
		sv_log("SRNIC_STALL_AFTER=%" PRIu64 ": no engine poll for %u ms once %" PRIu64
		       " request messages are sent (a test hook)", c.stall_after, c.stall_ms,
		       c.stall_after);
	}
	dev->post_defer_tsc = dev->tsc_hz / 1000000 * SV_POST_DEFER_US;
	dev->cm_poll_tsc = dev->tsc_hz / 1000000 * SV_CM_POLL_US;
	/* the CM and its GSI QP (QP1) on the engine: rdma_cm's MADs */
	dev->cm = srnic_cm_create(dev->sdev, dev->eng);
	if (dev->cm == NULL)
		sv_log("no CM on %s (%s): verbs work, rdma_cm (librdmacm) does not",
		       SV_DEV_NAME, rte_strerror(rte_errno));
	for (i = 0; i < SRNIC_GID_TBL_LEN; i++)
		srnic_dev_gid(dev->sdev, i, &dev->gid[i]);
	rte_spinlock_init(&dev->arm_lock);
	pthread_mutex_init(&dev->ctx_lock, NULL);
	dev->ibdev.node_type = IBV_NODE_CA;
	dev->ibdev.transport_type = IBV_TRANSPORT_IB;
	copy_str(dev->ibdev.name, sizeof(dev->ibdev.name), SV_DEV_NAME);
	copy_str(dev->ibdev.dev_name, sizeof(dev->ibdev.dev_name), "uverbs0");
	copy_str(dev->ibdev.dev_path, sizeof(dev->ibdev.dev_path), "/sys/class/infiniband_verbs/uverbs0");
	copy_str(dev->ibdev.ibdev_path, sizeof(dev->ibdev.ibdev_path), "/sys/class/infiniband/" SV_DEV_NAME);
	sv_dev = dev;
	sv_stats_at_exit = c.stats;
	if (!c.no_progress_thread && sv_progress_start(dev) != 0)
		sv_log("no progress thread (%s): only the program's own verbs calls drive srnic",
		       strerror(errno));
	atexit(sv_teardown);
	install_signals();
	return dev;
}

struct sv_device *
sv_device_get(void)
{
	pthread_mutex_lock(&sv_init_lock);
	if (!sv_init_done) {
		sv_init_done = true;
		device_start();
	}
	pthread_mutex_unlock(&sv_init_lock);
	return sv_dev;
}

/* ---- device list ---- */

struct ibv_device **
ibv_get_device_list(int *num_devices)
{
	struct sv_device *dev = sv_device_get();
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (list == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (dev != NULL)
		list[0] = &dev->ibdev;
	if (num_devices != NULL)
		*num_devices = dev != NULL ? 1 : 0;
	return list;
}

void
ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *
ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

int
ibv_get_device_index(struct ibv_device *device)
{
	return 0;
}

__be64
ibv_get_device_guid(struct ibv_device *device)
{
	struct sv_device *dev = container_of(device, struct sv_device, ibdev);
	__be64 guid;

	memcpy(&guid, &dev->gid[SRNIC_GID_INDEX_LL].raw[8], sizeof(guid));
	return guid;
}

/* ---- open, close ---- */

struct ibv_context *
ibv_open_device(struct ibv_device *device)
{
	struct sv_device *dev = sv_dev;
	struct sv_context *ctx;

	if (dev == NULL || device != &dev->ibdev) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dev = dev;
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.device = device;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.context.num_comp_vectors = 1;
	ctx->vctx.context.cmd_fd = -1;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	pthread_mutex_init(&ctx->async_lock, NULL);
	/* one count per queued event: poll() on it says one is there */
	ctx->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ctx->vctx.context.async_fd < 0)
		goto fail;
	sv_ctx_set_ops(ctx);
	if (sv_ctx_register(dev, ctx) != 0) {
		close(ctx->vctx.context.async_fd);
		errno = EMFILE;
		goto fail;
	}
	return &ctx->vctx.context;
fail:
	pthread_mutex_destroy(&ctx->async_lock);
	free(ctx);
	return NULL;
}

struct ibv_context *
verbs_open_device(struct ibv_device *device, void *private_data)
{
	return ibv_open_device(device);
}

int
ibv_close_device(struct ibv_context *context)
{
	struct sv_context *ctx = sv_ctx(context);

	sv_ctx_unregister(ctx->dev, ctx);
	close(context->async_fd);
	pthread_mutex_destroy(&ctx->async_lock);
	pthread_mutex_destroy(&context->mutex);
	free(ctx);
	return 0;
}

/* ---- queries ---- */

int
ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
	struct sv_context *ctx = sv_ctx(context);
	int rc = srnic_dev_query(ctx->dev->sdev, attr);

	return rc < 0 ? -rc : 0;
}

/* verbs_context->query_port: the ibv_query_port() macro's target. */
int
sv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
	      size_t len)
{
	struct sv_context *ctx = sv_ctx(context);
	struct ibv_port_attr a;
	int rc;

	if (port_num != 1)
		return EINVAL;
	rc = srnic_dev_query_port(ctx->dev->sdev, &a);
	if (rc < 0)
		return -rc;
	memcpy(attr, &a, RTE_MIN(len, sizeof(a)));
	return 0;
}

/* The exported symbol: old binaries' 48-byte struct (up to link_layer). */
int
ibv_query_port(struct ibv_context *context, uint8_t port_num, struct _compat_ibv_port_attr *attr)
{
	return sv_query_port(context, port_num, (struct ibv_port_attr *)attr,
			     offsetof(struct ibv_port_attr, flags));
}

int
ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	struct sv_context *ctx = sv_ctx(context);

	if (port_num != 1 || index < 0 || index >= SRNIC_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	*gid = ctx->dev->gid[index];
	return 0;
}

int
_ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		  struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct sv_context *ctx = sv_ctx(context);

	if (flags != 0 || entry_size < sizeof(*entry))
		return EINVAL;
	/* as the kernel's rdma_get_gid_attr(): EINVAL for a port or an index
	 * beyond the table (ENODATA is for an empty entry inside it; srnic's
	 * two are never empty) */
	if (port_num != 1 || gid_index >= SRNIC_GID_TBL_LEN)
		return EINVAL;
	memset(entry, 0, sizeof(*entry));
	entry->gid = ctx->dev->gid[gid_index];
	entry->gid_index = gid_index;
	entry->port_num = port_num;
	entry->gid_type = IBV_GID_TYPE_ROCE_V2;
	return 0;
}

ssize_t
_ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
		     size_t max_entries, uint32_t flags, size_t entry_size)
{
	size_t i;

	if (flags != 0 || entry_size < sizeof(*entries))
		return -EINVAL;
	if (max_entries < SRNIC_GID_TBL_LEN)
		return -EINVAL;
	for (i = 0; i < SRNIC_GID_TBL_LEN; i++)
		_ibv_query_gid_ex(context, 1, (uint32_t)i, &entries[i], 0, sizeof(entries[i]));
	return SRNIC_GID_TBL_LEN;
}

/* rdma-core's enum ibv_gid_type_sysfs (driver.h, not installed) */
#define SV_GID_TYPE_SYSFS_ROCE_V2 1

int
ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		   int *type)
{
	if (port_num != 1 || index >= SRNIC_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	*type = SV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

int
ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htons(0xffff);   /* the default full-member P_Key, the one RoCE uses */
	return 0;
}

int
ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	return (ntohs(pkey) & 0x7fff) == 0x7fff ? 0 : -1;
}
