/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The drop-in's configuration: SRNIC_* from the environment, or the file
 * SRNIC_CONFIG names (doc/verbs.md), and the one way it reports (sv_log()).
 */
#include <arpa/inet.h>
#include <ctype.h>
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

void
sv_copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src);
}

/* One KEY=VALUE (SRNIC_PORT=..., as the environment takes them). */
static int
conf_set(struct sv_conf *c, const char *key, const char *val)
{
	if (strcmp(key, "SRNIC_PORT") == 0)
		sv_copy_str(c->port, sizeof(c->port), val);
	else if (strcmp(key, "SRNIC_IP") == 0)
		sv_copy_str(c->ip, sizeof(c->ip), val);
	else if (strcmp(key, "SRNIC_IP6") == 0)
		sv_copy_str(c->ip6, sizeof(c->ip6), val);
	else if (strcmp(key, "SRNIC_LCORES") == 0)
		sv_copy_str(c->lcores, sizeof(c->lcores), val);
	else if (strcmp(key, "SRNIC_EAL_ARGS") == 0)
		sv_copy_str(c->eal_args, sizeof(c->eal_args), val);
	else if (strcmp(key, "SRNIC_LOG_LEVEL") == 0)
		sv_copy_str(c->log_level, sizeof(c->log_level), val);
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
		char *end;
		unsigned long long n = strtoull(val, &end, 10);

		if (!isdigit((unsigned char)val[0]) || *end != '\0') {
			sv_log("SRNIC_STALL_AFTER=%s is not a count of request messages, e.g. 20: "
			       "no stall", val);
			n = 0;
		}
		c->stall_after = n;
	} else if (strcmp(key, "SRNIC_STALL_MS") == 0) {
		char *end;
		unsigned long ms = strtoul(val, &end, 10);

		if (!isdigit((unsigned char)val[0]) || *end != '\0' || ms > SV_STALL_MAX_MS) {
			sv_log("SRNIC_STALL_MS=%s is not a time in ms up to %u, e.g. 500: no stall",
			       val, SV_STALL_MAX_MS);
			ms = 0;
		}
		c->stall_ms = (unsigned int)ms;
	} else
		return -1;
	return 0;
}

static const char *const sv_conf_keys[] = {
	"SRNIC_PORT", "SRNIC_IP", "SRNIC_IP6", "SRNIC_LCORES", "SRNIC_EAL_ARGS", "SRNIC_LOG_LEVEL",
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

