/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device brought up inside the process on the first
 * ibv_get_device_list(): EAL started from the configuration, the port
 * made and checked (each failure named with what to do), the srnic device,
 * its CM and the progress thread; torn down at exit (also on SIGINT/SIGTERM).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
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
#include "srnic_svc.h"
#include "verbs.h"
#include "verbs_attach.h"

#define SV_EAL_ARGV_MAX 64
#define SV_SOCK_PATH_MAX 256
#define SV_MEMIF_DEFAULT_SOCK "/run/memif.sock"

static pthread_mutex_t sv_init_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_device *sv_dev;
static bool sv_init_done;       /* tried once: a failed start is not retried */
static char sv_sock_path[SV_SOCK_PATH_MAX];  /* a memif server's socket, unlinked at exit */
static char sv_run_dir[SV_SOCK_PATH_MAX];    /* EAL's runtime dir (empty with --no-shconf), removed at exit */
static struct sigaction sv_old_int, sv_old_term;
/* the program's handler had SA_RESETHAND and ran once: the default's now */
static volatile sig_atomic_t sv_reset_int, sv_reset_term;
static bool sv_stats_at_exit;   /* SRNIC_STATS=1 */

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
static void
print_stats(struct sv_device *dev)
{
	/* the port's watch's (doc/reliability.md), srnic_dev_stat()'s too */
	static const char *const port_stats[] = {
		"port_restart", "port_restart_held", "port_hold_expired", "port_memif_cc_purged",
		"port_mtu_change", "port_mtu_qp_err",
	};
	unsigned int i, n = srnic_engine_stats_count();
	struct ibv_port_attr pa;
	uint16_t mtu;

	fprintf(stderr, "srnic: engine counters (nonzero), pid %d\n", (int)getpid());
	for (i = 0; i < n; i++) {
		const char *name = srnic_engine_stat_name(i);
		int64_t v = srnic_dev_stat(dev->sdev, name);

		if (v != 0)
			fprintf(stderr, "srnic:   %-28s %16" PRId64 "\n", name, v);
	}
	for (i = 0; i < RTE_DIM(port_stats); i++) {
		int64_t v = srnic_dev_stat(dev->sdev, port_stats[i]);

		if (v > 0)
			fprintf(stderr, "srnic:   %-28s %16" PRId64 "\n", port_stats[i], v);
	}
	/* the drop-in's own: who ran the engine's polls (sv_progress()) */
	for (i = 0; i < SV_RUN_NB; i++) {
		static const char *const who[SV_RUN_NB] = {
			[SV_RUN_POLL] = "poll", [SV_RUN_POST] = "post",
			[SV_RUN_DRIVE] = "drive", [SV_RUN_WAIT] = "wait",
		};
		char name[64];

		snprintf(name, sizeof(name), "verbs_runs_%s", who[i]);
		if (dev->runs[i] != 0)
			fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", name, dev->runs[i]);
		snprintf(name, sizeof(name), "verbs_runs_%s_moved", who[i]);
		if (dev->runs_moved[i] != 0)
			fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", name, dev->runs_moved[i]);
	}
	if (dev->posts_deferred != 0)
		fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", "verbs_posts_deferred",
			dev->posts_deferred);
	/* the program's threads that drove it: lcore ids taken and given
	 * back, threads that had none (verbs_progress.c, thread_lcore()) */
	{
		static const char *const lc_name[] = {
			"verbs_thread_lcores", "verbs_thread_lcores_released",
			"verbs_thread_lcore_none",
		};
		const uint64_t lc[RTE_DIM(lc_name)] = {
			atomic_load(&dev->thread_lcores), atomic_load(&dev->thread_lcores_released),
			atomic_load(&dev->thread_lcore_none),
		};

		for (i = 0; i < RTE_DIM(lc_name); i++)
			if (lc[i] != 0)
				fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", lc_name[i], lc[i]);
	}
	if (dev->lossy != NULL) {
		struct srnic_lossy_stats st;

		sv_lossy.get_stats(dev->lossy, &st);
		fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", "lossy_seen", st.n[SRNIC_LOSSY_PASS]);
		fprintf(stderr, "srnic:   %-28s %16" PRIu64 "\n", "lossy_drop", st.n[SRNIC_LOSSY_DROP]);
	}
	/* what a UD datagram may carry: the active MTU is every UD QP's
	 * path MTU (a peer's larger datagram is dropped: rx_ud_too_long) */
	if (rte_eth_dev_get_mtu(dev->port_id, &mtu) == 0 &&
	    srnic_dev_query_port(dev->sdev, &pa) == 0)
		fprintf(stderr, "srnic: port %u MTU %u, active_mtu %u\n", dev->port_id, mtu,
			128u << pa.active_mtu);
}

/* ---- SRNIC_STATS=1 at SIGINT/SIGTERM ----
 * A program killed while it waits (a test's peer that failed and left it
 * blocked) never reaches exit(): its counters are written from the signal
 * handler, as print_stats() writes them, with write(2) only (relaxed loads
 * of the engines' words, no stdio, no lock, no allocation). The lossy
 * link's and the port's MTU are left out (not loads of plain words). */

/* s, then spaces up to width; returns the end */
static char *
sig_pad(char *p, const char *s, size_t width)
{
	size_t n = strlen(s);

	memcpy(p, s, n);
	for (p += n; n < width; n++)
		*p++ = ' ';
	return p;
}

/* v in decimal, right-aligned in width; returns the end */
static char *
sig_num(char *p, int64_t v, size_t width)
{
	char d[24];
	size_t n = 0;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		d[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		d[n++] = '-';
	for (; width > n; width--)
		*p++ = ' ';
	while (n > 0)
		*p++ = d[--n];
	return p;
}

static void
sig_write(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDERR_FILENO, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void
print_stats_signal(const struct sv_device *dev, int sig)
{
	static const char *const port_stats[] = {
		"port_restart", "port_restart_held", "port_hold_expired", "port_memif_cc_purged",
		"port_mtu_change", "port_mtu_qp_err",
	};
	unsigned int i, n = srnic_engine_stats_count();
	char line[128], *p;

	p = sig_pad(line, "srnic: engine counters (nonzero) at signal ", 0);
	p = sig_num(p, sig, 0);
	p = sig_pad(p, ", pid ", 0);
	p = sig_num(p, getpid(), 0);
	*p++ = '\n';
	sig_write(line, (size_t)(p - line));
	for (i = 0; i < n + RTE_DIM(port_stats); i++) {
		const char *name = i < n ? srnic_engine_stat_name(i) : port_stats[i - n];
		int64_t v = srnic_dev_stat(dev->sdev, name);

		if (i < n ? v == 0 : v <= 0)
			continue;
		p = sig_pad(line, "srnic:   ", 0);
		p = sig_pad(p, name, 28);
		*p++ = ' ';
		p = sig_num(p, v, 16);
		*p++ = '\n';
		sig_write(line, (size_t)(p - line));
	}
}

static void
sv_teardown(void)
{
	struct sv_device *dev = sv_dev;

	/* a fork()ed child's exit: the device, its socket file and its
	 * /sys files are the parent's; the child has no progress thread */
	if (dev == NULL || sv_forked)
		return;
	sv_progress_linger(dev);
	sv_progress_stop(dev);
	if (sv_stats_at_exit)
		print_stats(dev);
	if (sv_sock_path[0] != '\0')
		unlink(sv_sock_path);
	sv_devfs_remove();
}

/* Async-signal-safe part only: what would otherwise stay on disk, and
 * SRNIC_STATS's counters when the signal ends the process. The program's
 * own handler (installed before srnic started) then runs as the kernel
 * would have run it: with the real siginfo and context, its SA_RESETHAND
 * honoured (the next delivery takes the default action) and errno as the
 * interrupted code left it. */
static void
sv_signal(int sig, siginfo_t *info, void *uctx)
{
	struct sigaction *old = sig == SIGINT ? &sv_old_int : &sv_old_term;
	volatile sig_atomic_t *reset = sig == SIGINT ? &sv_reset_int : &sv_reset_term;
	/* sa_handler and sa_sigaction share storage: SIG_DFL/SIG_IGN read
	 * the same through either */
	bool had_default = old->sa_handler == SIG_DFL;
	int saved_errno = errno;
	struct sigaction dfl;

	/* a fork()ed child leaves the parent's files (a Ctrl-C reaches both) */
	if (sv_sock_path[0] != '\0' && !sv_forked)
		unlink(sv_sock_path);
	if (sv_run_dir[0] != '\0' && !sv_forked)
		rmdir(sv_run_dir);
	/* the process ends here without exit(): SRNIC_STATS's counters now */
	if (sv_stats_at_exit && sv_dev != NULL && !sv_forked && had_default)
		print_stats_signal(sv_dev, sig);
	errno = saved_errno;
	if (!had_default && *reset == 0) {
		/* SA_RESETHAND: the disposition is the default's before the
		 * handler runs (a nested delivery under SA_NODEFER included) */
		if ((old->sa_flags & SA_RESETHAND) != 0)
			*reset = 1;
		if ((old->sa_flags & SA_SIGINFO) != 0)
			old->sa_sigaction(sig, info, uctx);
		else
			old->sa_handler(sig);
		return;
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, had_default ? old : &dfl, NULL);
	raise(sig);
}

/* srnic's handler in front of the program's, with the program's flags and
 * mask: SA_RESTART only if the program asked for it (a program that stops
 * on the EINTR of a blocking call after its handler set a flag still
 * stops), SA_NODEFER and SA_ONSTACK as it asked; its sa_mask plus the
 * other of SIGINT/SIGTERM (a SIGTERM does not cut srnic's cleanup of a
 * SIGINT short) and the signal itself unless SA_NODEFER. */
static void
install_signal(int sig, struct sigaction *old)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, old) != 0)
		return;
	/* ignored (a background job of a non-interactive shell has SIGINT
	 * ignored): it stays so; a handler in front would remove the memif
	 * socket and the run directory under a program that goes on */
	if (old->sa_handler == SIG_IGN)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sv_signal;
	sa.sa_mask = old->sa_mask;
	sigaddset(&sa.sa_mask, sig == SIGINT ? SIGTERM : SIGINT);
	if ((old->sa_flags & SA_NODEFER) == 0)
		sigaddset(&sa.sa_mask, sig);
	sa.sa_flags = SA_SIGINFO | (old->sa_flags & (SA_RESTART | SA_NODEFER | SA_ONSTACK));
	sigaction(sig, &sa, NULL);
}

static void
install_signals(void)
{
	install_signal(SIGINT, &sv_old_int);
	install_signal(SIGTERM, &sv_old_term);
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
		sv_copy_str(sv_sock_path, sizeof(sv_sock_path), SV_MEMIF_DEFAULT_SOCK);
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

/*
 * memif's calls to EAL's interrupt functions must reach this library's
 * definitions (lib/core/port.c's memif server guard, exported under
 * librte_eal.so.23's version nodes): EAL dlopen()s the PMD, whose lookups
 * search the process's global scope first and then the PMD's own
 * dependencies. A program that loaded this library with dlopen()'s
 * RTLD_LOCAL (a Python extension: pyverbs, ctypes) left it out of that
 * scope, and memif bound to librte_eal.so.23's (LD_DEBUG=bindings), the
 * server unguarded. Promoted to the global scope, with the libraries it
 * depends on after it, before EAL loads the PMD; for a memif port only.
 */
static void
memif_guard_global(const char *port)
{
	Dl_info self;

	if (strncmp(port, "net_memif", strlen("net_memif")) != 0 ||
	    dladdr((void *)memif_guard_global, &self) == 0 || self.dli_fname == NULL)
		return;
	/* a reference never dropped: the library is -z nodelete */
	if (dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == NULL)
		sv_log("%s not made global (%s): a memif server loaded with RTLD_LOCAL is not "
		       "guarded against a client that goes before HELLO (doc/reliability.md)",
		       self.dli_fname, dlerror());
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
			sv_copy_str(path, sizeof(path), SV_MEMIF_DEFAULT_SOCK);
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
	sv_copy_str(extra, sizeof(extra), c->eal_args);
	for (tok = strtok_r(extra, " \t", &sp); tok != NULL && argc < SV_EAL_ARGV_MAX - 1;
	     tok = strtok_r(NULL, " \t", &sp))
		argv[argc++] = tok;
	argv[argc] = NULL;

	/* rte_eal_init() pins the calling thread to the main lcore's CPU and
	 * reuses getopt's globals: neither is the application's business. */
	have_cpus = pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus) == 0;
	memif_guard_global(c->port);
	/* the threads srnic starts (EAL's here, the progress thread:
	 * srnic_thread_create()) have SIGINT and SIGTERM blocked: the
	 * program's own threads take them, so its blocking call ends with
	 * EINTR as without srnic */
	rc = srnic_eal_init(argc, argv);
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
	sv_copy_str(sv_run_dir, sizeof(sv_run_dir), rte_eal_get_runtime_dir());
	/* gone at any exit, a failed start included (sv_signal() for a
	 * SIGINT or SIGTERM); those of srnic programs killed before us go now */
	srnic_eal_remove_at_exit();
	srnic_eal_sweep();
	/* the device name is the devargs' first field */
	sv_copy_str(devname, devname_len, c->port);
	devname[strcspn(devname, ",")] = '\0';
	return 0;
}

/* The device's address into dc (zeroed first): SRNIC_IP, IPv4, or
 * SRNIC_IP6, IPv6 ADDR[/PREFIX] (GID index 1 either way, GID 0 the
 * link-local fe80:: from the MAC). One of them: a device has one address
 * (srnic_dev_conf). Every destination is on the port's link (no router):
 * the prefix is checked, not used. 0, or -1 said why. */
static int
conf_address(const struct sv_conf *c, struct srnic_dev_conf *dc)
{
	uint8_t *ip6 = dc->ip;
	char a6[sizeof(c->ip6)];
	char *slash, *end;

	memset(dc, 0, sizeof(*dc));
	if (c->ip[0] == '\0' && c->ip6[0] == '\0') {
		sv_log("no device: SRNIC_PORT=%s has no address: set SRNIC_IP=A.B.C.D or "
		       "SRNIC_IP6=ADDR or both (srnic's addresses on it; usertools/srnic run: "
		       "--ip A.B.C.D, --ip6 ADDR)", c->port);
		return -1;
	}
	if (c->ip[0] != '\0') {
		if (inet_pton(AF_INET, c->ip, dc->ip) != 1) {
			sv_log("SRNIC_IP=%s is not an IPv4 address (A.B.C.D; IPv6: SRNIC_IP6)", c->ip);
			return -1;
		}
		dc->ip_ver = 4;
		if (c->ip6[0] == '\0')
			return 0;
		/* both: GID 1 the IPv4 address, GID 2 the IPv6 one */
		dc->comp_mask |= SRNIC_DEV_CONF_IP6;
		ip6 = dc->ip6;
	} else {
		dc->ip_ver = 6;
	}
	sv_copy_str(a6, sizeof(a6), c->ip6);
	slash = strchr(a6, '/');
	if (slash != NULL) {
		unsigned long plen;

		*slash = '\0';
		errno = 0;
		plen = strtoul(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || errno != 0 || plen == 0 || plen > 128) {
			sv_log("SRNIC_IP6=%s: the prefix length after / is 1 to 128", c->ip6);
			return -1;
		}
	}
	if (inet_pton(AF_INET6, a6, ip6) != 1 || IN6_IS_ADDR_V4MAPPED((struct in6_addr *)ip6) ||
	    IN6_IS_ADDR_UNSPECIFIED((struct in6_addr *)ip6) ||
	    IN6_IS_ADDR_LOOPBACK((struct in6_addr *)ip6) ||
	    IN6_IS_ADDR_MULTICAST((struct in6_addr *)ip6) ||
	    IN6_IS_ADDR_LINKLOCAL((struct in6_addr *)ip6)) {
		sv_log("SRNIC_IP6=%s is not a unicast IPv6 address (ADDR[/PREFIX], e.g. "
		       "fd00::1/64; IPv4: SRNIC_IP; link-local fe80:: is the device's own, from "
		       "its MAC)", c->ip6);
		return -1;
	}
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
	char netdev[IF_NAMESIZE] = "";
	uint16_t port;
	int i;

	if (sv_conf_load(&c) != 0)
		return NULL;
	if (c.port[0] == '\0' && c.ip[0] == '\0' && c.ip6[0] == '\0') {
		sv_log("no device: no srnicd answers on its socket (start one: usertools/srnic "
		       "daemon --port DEV --ip A.B.C.D; SRNIC_DAEMON_SOCKET=PATH if not at "
		       "/run/srnic/srnicd.sock), and no port of the program's own: set SRNIC_PORT "
		       "(a DPDK device, e.g. net_memif0,role=server,socket=/tmp/srnic.sock) and "
		       "SRNIC_IP=A.B.C.D (or SRNIC_IP6=ADDR), or run the program as: "
		       "usertools/srnic run --port DEV --ip A.B.C.D -- PROGRAM");
		return NULL;
	}
	if (c.port[0] == '\0') {
		sv_log("no device: SRNIC_IP%s=%s has no port: set SRNIC_PORT to a DPDK device, e.g. "
		       "net_memif0,role=server,socket=/tmp/srnic.sock (usertools/srnic run: --port "
		       "DEV)", c.ip[0] != '\0' ? "" : "6", c.ip[0] != '\0' ? c.ip : c.ip6);
		return NULL;
	}
	if (conf_address(&c, &dc) != 0)
		return NULL;
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
	/* on a line's start, as its alignas() members are (verbs.h) */
	dev = aligned_alloc(alignof(struct sv_device), sizeof(*dev));
	if (dev == NULL)
		return NULL;
	memset(dev, 0, sizeof(*dev));
	dc.port_id = port;
	dc.nb_engines = 1;
	dc.mtu = (uint16_t)c.mtu;
	dc.name = SV_DEV_NAME;
	/* the opener's, the progress thread's and the program's threads' ids */
	dc.comp_mask |= SRNIC_DEV_CONF_CACHING_LCORES;
	dc.nb_caching_lcores = SV_CACHING_LCORES;
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
		 * whose last ACK is lost after its peer has exited resends
		 * until retry_cnt is spent, then fails the WR) */
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
		       " request messages are sent (a peer slow to read)", c.stall_after, c.stall_ms,
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
	TAILQ_INIT(&dev->ctxs);
	pthread_mutex_init(&dev->ctx_lock, NULL);
	dev->ibdev.node_type = IBV_NODE_CA;
	dev->ibdev.transport_type = IBV_TRANSPORT_IB;
	sv_copy_str(dev->ibdev.name, sizeof(dev->ibdev.name), SV_DEV_NAME);
	sv_copy_str(dev->ibdev.dev_name, sizeof(dev->ibdev.dev_name), "uverbs0");
	sv_copy_str(dev->ibdev.dev_path, sizeof(dev->ibdev.dev_path), "/sys/class/infiniband_verbs/uverbs0");
	sv_copy_str(dev->ibdev.ibdev_path, sizeof(dev->ibdev.ibdev_path), "/sys/class/infiniband/" SV_DEV_NAME);
	svc_port_netdev(c.port, netdev, sizeof(netdev));
	sv_devfs_publish(dev, netdev);
	sv_dev = dev;
	sv_stats_at_exit = c.stats;
	if (!c.no_progress_thread && sv_progress_start(dev) != 0)
		sv_log("no progress thread (%s): only the program's own verbs calls drive srnic",
		       strerror(errno));
	atexit(sv_teardown);
	install_signals();
	if (sv_fork_guard_install() != 0)
		sv_log("pthread_atfork failed: a fork()ed child would not be stopped from using "
		       "%s", SV_DEV_NAME);
	return dev;
}

struct sv_device *
sv_device_get(void)
{
	/* a program attached to srnicd has no device of its own */
	if (sva_attached())
		return NULL;
	pthread_mutex_lock(&sv_init_lock);
	if (!sv_init_done) {
		sigset_t stop, old;

		/* SIGINT and SIGTERM wait for the whole start (EAL, the port,
		 * the exit hook, srnic's handlers: install_signals()): taken
		 * before, one would leave the EAL runtime directory and the
		 * memif socket behind. srnic_eal_init() within blocks them
		 * again for EAL's threads and sets back this mask. */
		sigemptyset(&stop);
		sigaddset(&stop, SIGINT);
		sigaddset(&stop, SIGTERM);
		pthread_sigmask(SIG_BLOCK, &stop, &old);
		sv_init_done = true;
		device_start();
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	pthread_mutex_unlock(&sv_init_lock);
	return sv_dev;
}

/* The device if it was brought up, without bringing it up. */
struct sv_device *
sv_device_started(void)
{
	struct sv_device *dev;

	pthread_mutex_lock(&sv_init_lock);
	dev = sv_dev;
	pthread_mutex_unlock(&sv_init_lock);
	return dev;
}

