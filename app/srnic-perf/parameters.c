/* SPDX-License-Identifier: BSD-3-Clause */
/* srnic-perf options (after the EAL's and "--"). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <rte_lcore.h>
#include <rte_version.h>

#include "perf.h"
#include "srnic_hdr.h"

#define PERF_PERFTEST_VERSION "6.06" /* the perftest exchange --perftest speaks */

void
perf_print_version(void)
{
	printf("srnic-perf %s (srnic RoCEv2 on %s; perftest's exchange as perftest %s)\n",
	       SRNIC_PERF_VERSION, rte_version(), PERF_PERFTEST_VERSION);
}

/* ib_write_lat / ib_send_lat at the other end (--perftest --lat, WRITE or
 * SEND): both ends send, each answering the other. */
bool
perf_pt_pingpong(const struct perf_conf *c)
{
	return c->perftest && c->lat && (c->op == PERF_OP_WRITE || c->op == PERF_OP_SEND);
}

static const char *const op_names[] = {
	[PERF_OP_READ] = "read", [PERF_OP_WRITE] = "write", [PERF_OP_SEND] = "send",
	[PERF_OP_ATOMIC] = "atomic",
};

const char *
perf_op_name(enum perf_op op)
{
	return op_names[op];
}

void
perf_usage(const char *prog)
{
	printf("usage: %s [EAL options] -- [options]\n"
	       "Two srnic endpoints in this process over a net_ring pair; the requester's\n"
	       "engines run on the main lcore(s), the responder's on the next ones.\n\n"
	       "  --op read|write|send|atomic  operation (default read)\n"
	       "  --atomic fadd|cas            --op atomic's: FETCH_AND_ADD (default) or\n"
	       "                               CMP_AND_SWAP (perftest's -A names work too)\n"
	       "  --size BYTES                 message size (default 65536; suffixes K, M)\n"
	       "  --sizes A,B,...              sweep of sizes (e.g. 8,64,4K,64K,1M)\n"
	       "  --qps N                      QPs (default 1, at most %d)\n"
	       "  --depth N                    outstanding WRs per QP (default 16, at most %d)\n"
	       "  --mtu 256..4096              path MTU (default 4096)\n"
	       "  --iters N                    messages per size over all QPs, the same at\n"
	       "                               every size (default: about %llu MiB per size, at\n"
	       "                               least %d and at most %d messages: %d up to\n"
	       "                               2 KiB, 4096 at 64 KiB, %d from 512 KiB; perftest\n"
	       "                               runs -n 1000, 5000 for ib_write_bw, at every size)\n"
	       "  --duration SECONDS           run each size this long instead of --iters (at\n"
	       "                               most %d)\n"
	       "  --lat                        latency mode: one outstanding WR, per-op times\n"
	       "  --req-lcores N               requester lcores (QP i on lcore i %% N; default 1;\n"
	       "                               the responder's engines take as many)\n"
	       "  --unsignaled N               signal every Nth WR (default 1: all)\n"
	       "  --json                       one JSON object per result line\n"
	       "  --verify                     check data on every completion\n"
	       "  --trace                      print every packet and CQE (the READ walk)\n"
	       "  --pcap FILE                  write every packet of both directions\n"
	       "  --mr-per-qp                  a buffer and MR per QP (perftest's --mr_per_qp);\n"
	       "                               default: one per side for all QPs, as perftest\n"
	       "  --read-inline BYTES          READ response packets with at most this much\n"
	       "                               payload carry a copy of it, not a zero-copy\n"
	       "                               segment (srnic_dev_conf.read_inline_max, at most\n"
	       "                               %d; 0: all zero-copy; default %d)\n"
	       "  --floors                     also measure the reference floors (memcpy+ICRC,\n"
	       "                               plain mbuf round trip on one lcore, the op's\n"
	       "                               mbufs carried across two) and print ratios\n"
	       "  --quiet                      no live statistics (--stats-period 0)\n"
	       "  --stats-period SECONDS       a live line every SECONDS (default 1; 0: off;\n"
	       "                               with --json, JSON lines {\"live\":...})\n"
	       "  --pcap-snaplen BYTES         bytes of each frame --pcap keeps (default %d:\n"
	       "                               every header, some payload; 0: whole frames)\n"
	       "  --pcap-max MB                --pcap stops writing at this file size, and says\n"
	       "                               so (default %d; 0: no limit)\n"
	       "  --remote-access LIST         remote rights granted beyond the op's own (read,\n"
	       "                               write, atomic, comma-separated; default none: as\n"
	       "                               perftest, READ grants remote read, WRITE remote\n"
	       "                               write, atomics remote atomic, SEND none)\n"
	       "  --drop P, --dup P, --reorder P, --corrupt P, --delay P\n"
	       "                               fault injection: probability per packet, each\n"
	       "                               direction (e.g. --drop 0.01)\n"
	       "  --loss-seed N                seed of the faults (same seed, same faults)\n"
	       "Two processes (perftest's way; the port comes from the EAL, e.g.\n"
	       "--vdev=net_memif0,role=server or --vdev=net_af_packet0,iface=veth0):\n"
	       "  --server                     responder: wait for a client on --tcp-port\n"
	       "  --client HOST                requester: connect to the server at HOST\n"
	       "  --tcp-port N                 control connection port (default %d)\n"
	       "  --port-id N                  the ethdev to use (default 0)\n"
	       "  --ip A.B.C.D                 this endpoint's address (default 127.0.1.1 for\n"
	       "                               the server, 127.0.1.2 for the client)\n"
	       "  --peer-qpn N --peer-psn N --peer-ip A.B.C.D [--peer-mac MAC]\n"
	       "                               server only: the peer from the command line, no\n"
	       "                               TCP; prints this end's qpn, psn, rkey, va, gid as\n"
	       "                               one JSON line (len: the region, depth slots of\n"
	       "                               max(--size, 8) bytes; pmtu: the path MTU the port\n"
	       "                               allows), serves until --duration or a signal\n"
	       "  --perftest                   with --server / --client: speak perftest's own\n"
	       "                               exchange (version 6.06): an unmodified ib_read_bw,\n"
	       "                               ib_write_bw, ib_atomic_bw, ib_send_bw or (--lat)\n"
	       "                               ib_read_lat, ib_atomic_lat, ib_write_lat,\n"
	       "                               ib_send_lat is the other end (same --op and --size\n"
	       "                               on a server, -q as --qps; port 18515 as\n"
	       "                               perftest's); ib_write_lat and ib_send_lat are\n"
	       "                               ping-pongs: --iters as their -n (default %d here)\n"
	       "perftest's and testpmd's habits:\n"
	       "  -o, --outs N                 READs/atomics in flight per QP (max_rd_atomic and\n"
	       "                               max_dest_rd_atomic; 1 to %d, default %d)\n"
	       "  -u, --qp-timeout N           ACK timeout 4.096 us x 2^N (1 to %d; default %d,\n"
	       "                               %d with --drop..)\n"
	       "  --retry_count N              ACK timeouts a WR rides out before it fails\n"
	       "                               (retry_cnt, 0 to 7; default %d)\n"
	       "  -I, --inline_size BYTES      SEND/WRITE of at most this many bytes are posted\n"
	       "                               inline (IBV_SEND_INLINE; at most %d, default 0)\n"
	       "  -H, --report-histogram       latency histogram (powers of two of ns) per size\n"
	       "  --cpu_util                   this process's CPU time over each run\n"
	       "  --total-num-mbufs N          each device's mbuf pool (testpmd's; at least %d)\n"
	       "  --persist                    with --server: serve client after client (as\n"
	       "                               testpmd stays up) instead of one (as perftest)\n"
	       "  -V, --version                the version, and the perftest exchange spoken\n"
	       "  --help                       this text\n"
	       "Exit status: 0; 1 if a WR failed, a byte was wrong or something could not be\n"
	       "set up; %d: a client whose server stopped the run (a signal there, or its\n"
	       "end of the TCP connection closed); 128 + N: a second signal N (the first one\n"
	       "ends the run cleanly)\n",
	       prog, PERF_MAX_QPS, PERF_MAX_DEPTH, PERF_DEFAULT_BYTES >> 20, PERF_DEFAULT_ITERS_MIN,
	       PERF_DEFAULT_ITERS, PERF_DEFAULT_ITERS, PERF_DEFAULT_ITERS_MIN, PERF_DURATION_MAX_S,
	       SRNIC_MAX_READ_INLINE, SRNIC_READ_INLINE_DEFAULT,
	       PERF_PCAP_SNAPLEN_DEFAULT, PERF_PCAP_MAX_MB_DEFAULT,
	       PERF_DEFAULT_TCP_PORT, PERF_PT_PINGPONG_ITERS, SRNIC_MAX_RD_ATOMIC,
	       SRNIC_MAX_RD_ATOMIC, PERF_QP_TIMEOUT_MAX, PERF_QP_TIMEOUT_CLEAN,
	       PERF_QP_TIMEOUT_LOSSY, PERF_RETRY_CNT, SRNIC_MAX_INLINE, PERF_MBUFS_MIN,
	       PERF_EXIT_SERVER_STOPPED);
}

#define SIZE_WHY "bytes, with K or M (e.g. 64, 4K, 1M), at most 1G"

/* The option being parsed, for one-line errors that name it. */
static const char *cur_opt;

/* "srnic-perf: --opt VALUE: why" and nothing else (no usage dump). */
static int
bad_opt(const char *value, const char *why)
{
	fprintf(stderr, "srnic-perf: --%s %s: %s (--help lists every option)\n", cur_opt,
		value != NULL ? value : "", why);
	return -1;
}

/* A whole unsigned number in [min, max] (0x.. too), else -1. */
static int
parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (s == NULL || *s == '\0' || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* A whole decimal number in [min, max] (strtod's forms: 0.5, 1e-3; not
 * "inf", "nan", or anything after the number), else -1. */
static int
parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v) || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* A whole number in [min, max], else a one-line error naming the range. */
static int
opt_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
	uint64_t v;
	char why[96];

	if (parse_u64(s, min, max, &v) != 0) {
		snprintf(why, sizeof(why), "a whole number from %u to %u", min, max);
		return bad_opt(s, why);
	}
	*out = (uint32_t)v;
	return 0;
}

static int
parse_size(const char *s, uint32_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	v = strtoull(s, &end, 0);
	if (end == s)
		return -1;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end != '\0' || v > (1ull << 30))
		return -1;
	*out = (uint32_t)v;
	return 0;
}

enum { O_OP = 256, O_SIZE, O_SIZES, O_QPS, O_DEPTH, O_MTU, O_ITERS, O_DURATION, O_LAT,
       O_LCORES, O_UNSIG, O_JSON, O_VERIFY, O_TRACE, O_PCAP, O_QUIET, O_FLOORS, O_HELP,
       O_DROP, O_DUP, O_REORDER, O_CORRUPT, O_DELAY, O_LOSS_SEED, O_SERVER, O_CLIENT,
       O_TCP_PORT, O_PORT_ID, O_IP, O_PEER_QPN, O_PEER_PSN, O_PEER_IP, O_PEER_MAC,
       O_PERFTEST, O_MR_PER_QP, O_ATOMIC, O_READ_INLINE, O_REQ_LCORES };
/* output and defaults */
enum { O_STATS_PERIOD = 512, O_PCAP_SNAPLEN, O_PCAP_MAX, O_REMOTE_ACCESS };
/* perftest's and testpmd's options (and --persist):
 * perftest's names and letters where they clash with nothing here. */
enum { O_HABIT_FIRST = 640, O_OUTS = O_HABIT_FIRST, O_QP_TIMEOUT, O_RETRY_COUNT, O_INLINE_SIZE,
       O_HISTOGRAM, O_CPU_UTIL, O_TOTAL_MBUFS, O_PERSIST, O_VERSION };
#define HABIT_SHORTOPTS "o:u:I:HV"
static const struct {
	int letter;
	int code;
} habit_letters[] = {
	{ 'o', O_OUTS }, { 'u', O_QP_TIMEOUT }, { 'I', O_INLINE_SIZE }, { 'H', O_HISTOGRAM },
	{ 'V', O_VERSION },
};

static const struct option opts[] = {
	{ "outs", required_argument, NULL, O_OUTS },
	{ "qp-timeout", required_argument, NULL, O_QP_TIMEOUT },
	{ "retry_count", required_argument, NULL, O_RETRY_COUNT },
	{ "inline_size", required_argument, NULL, O_INLINE_SIZE },
	{ "report-histogram", no_argument, NULL, O_HISTOGRAM },
	{ "cpu_util", no_argument, NULL, O_CPU_UTIL },
	{ "total-num-mbufs", required_argument, NULL, O_TOTAL_MBUFS },
	{ "persist", no_argument, NULL, O_PERSIST },
	{ "version", no_argument, NULL, O_VERSION },
	{ "op", required_argument, NULL, O_OP },
	{ "size", required_argument, NULL, O_SIZE },
	{ "sizes", required_argument, NULL, O_SIZES },
	{ "qps", required_argument, NULL, O_QPS },
	{ "depth", required_argument, NULL, O_DEPTH },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "iters", required_argument, NULL, O_ITERS },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "lat", no_argument, NULL, O_LAT },
	{ "lcores", required_argument, NULL, O_LCORES },
	{ "req-lcores", required_argument, NULL, O_REQ_LCORES },
	{ "unsignaled", required_argument, NULL, O_UNSIG },
	{ "json", no_argument, NULL, O_JSON },
	{ "verify", no_argument, NULL, O_VERIFY },
	{ "trace", no_argument, NULL, O_TRACE },
	{ "pcap", required_argument, NULL, O_PCAP },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "floors", no_argument, NULL, O_FLOORS },
	{ "help", no_argument, NULL, O_HELP },
	{ "drop", required_argument, NULL, O_DROP },
	{ "dup", required_argument, NULL, O_DUP },
	{ "reorder", required_argument, NULL, O_REORDER },
	{ "corrupt", required_argument, NULL, O_CORRUPT },
	{ "delay", required_argument, NULL, O_DELAY },
	{ "loss-seed", required_argument, NULL, O_LOSS_SEED },
	{ "server", no_argument, NULL, O_SERVER },
	{ "client", required_argument, NULL, O_CLIENT },
	{ "tcp-port", required_argument, NULL, O_TCP_PORT },
	{ "port-id", required_argument, NULL, O_PORT_ID },
	{ "ip", required_argument, NULL, O_IP },
	{ "peer-qpn", required_argument, NULL, O_PEER_QPN },
	{ "peer-psn", required_argument, NULL, O_PEER_PSN },
	{ "peer-ip", required_argument, NULL, O_PEER_IP },
	{ "peer-mac", required_argument, NULL, O_PEER_MAC },
	{ "perftest", no_argument, NULL, O_PERFTEST },
	{ "mr-per-qp", no_argument, NULL, O_MR_PER_QP },
	{ "atomic", required_argument, NULL, O_ATOMIC },
	{ "read-inline", required_argument, NULL, O_READ_INLINE },
	/* output and defaults */
	{ "stats-period", required_argument, NULL, O_STATS_PERIOD },
	{ "pcap-snaplen", required_argument, NULL, O_PCAP_SNAPLEN },
	{ "pcap-max", required_argument, NULL, O_PCAP_MAX },
	{ "remote-access", required_argument, NULL, O_REMOTE_ACCESS },
	{ NULL, 0, NULL, 0 },
};

/* ---- output and defaults ---- */

static const struct {
	const char *name;
	int flag;
} access_names[] = {
	{ "read", IBV_ACCESS_REMOTE_READ },
	{ "write", IBV_ACCESS_REMOTE_WRITE },
	{ "atomic", IBV_ACCESS_REMOTE_ATOMIC },
};

/* "read,write,..." into IBV_ACCESS_REMOTE_* bits; -1 if a word is unknown. */
static int
parse_access(const char *s, int *out)
{
	int acc = 0;

	while (*s != '\0') {
		size_t n = strcspn(s, ",");
		unsigned int i;

		for (i = 0; i < RTE_DIM(access_names); i++)
			if (strlen(access_names[i].name) == n &&
			    strncmp(access_names[i].name, s, n) == 0)
				break;
		if (i == RTE_DIM(access_names))
			return -1;
		acc |= access_names[i].flag;
		s += n;
		if (*s == ',' && *++s == '\0')
			return -1;
	}
	*out = acc;
	return acc != 0 ? 0 : -1;
}

const char *
perf_access_str(int access)
{
	static char buf[32];
	size_t n = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < RTE_DIM(access_names); i++)
		if (access & access_names[i].flag)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", n > 0 ? "," : "",
					      access_names[i].name);
	return buf;
}

int
perf_access(const struct perf_conf *c)
{
	/* perftest's: the op's own right, on the MR and the QP alike */
	static const int op_right[] = {
		[PERF_OP_READ] = IBV_ACCESS_REMOTE_READ,
		[PERF_OP_WRITE] = IBV_ACCESS_REMOTE_WRITE,
		[PERF_OP_SEND] = 0,
		[PERF_OP_ATOMIC] = IBV_ACCESS_REMOTE_ATOMIC,
	};

	return IBV_ACCESS_LOCAL_WRITE | op_right[c->op] | c->remote_access;
}

uint64_t
perf_iters(const struct perf_conf *c, uint32_t size)
{
	uint64_t n;

	if (c->iters_given)
		return c->iters;
	n = PERF_DEFAULT_BYTES / RTE_MAX(size, 1u);
	return RTE_MAX((uint64_t)PERF_DEFAULT_ITERS_MIN, RTE_MIN(n, (uint64_t)PERF_DEFAULT_ITERS));
}

bool
perf_is_own_option(const char *arg)
{
	unsigned int i;
	size_t n;

	if (strncmp(arg, "--", 2) != 0)
		return false;
	arg += 2;
	n = strcspn(arg, "=");
	for (i = 0; opts[i].name != NULL; i++)
		if (strlen(opts[i].name) == n && strncmp(opts[i].name, arg, n) == 0)
			/* the EAL has these too */
			return strcmp(opts[i].name, "lcores") != 0 && strcmp(opts[i].name, "help") != 0;
	return false;
}

int
perf_check_cq(const struct perf_conf *c)
{
	uint32_t per_lcore = (c->qps + c->nb_lcores - 1) / c->nb_lcores;

	if ((uint64_t)per_lcore * c->depth > SRNIC_MAX_CQE) {
		fprintf(stderr, "srnic-perf: %u QPs x depth %u on an lcore exceed a CQ (%u CQEs)\n",
			per_lcore, c->depth, SRNIC_MAX_CQE);
		return -1;
	}
	return 0;
}

/* The EAL's lcores (-l) against --req-lcores, before anything is set up:
 * requester k runs on the k-th lcore (0: the main one); the embedded pair's
 * responder takes the next, or shares the main lcore's loop, said so. A
 * server polls its engines from the main lcore alone. */
static int
check_lcores(const struct perf_conf *c)
{
	unsigned int n = rte_lcore_count();

	if (c->role == PERF_ROLE_SERVER)
		return 0;
	if (n < c->nb_lcores) {
		fprintf(stderr, "srnic-perf: --req-lcores %u needs at least %u lcores (-l gives %u): "
				"one per requester lcore, e.g. -l 0-%u\n", c->nb_lcores, c->nb_lcores, n,
			c->nb_lcores - 1);
		return -1;
	}
	if (c->role == PERF_ROLE_BOTH && n == c->nb_lcores)
		fprintf(stderr, "srnic-perf: note: %u lcore(s) (-l) for --req-lcores %u: the responder's "
				"engines share the main lcore with requester 0 (%u lcores give them "
				"one of their own)\n", n, c->nb_lcores, c->nb_lcores + 1);
	return 0;
}

/* A short option's code and the long name errors use. */
static int
habit_letter(int o)
{
	unsigned int i, k;

	for (i = 0; i < RTE_DIM(habit_letters); i++)
		if (habit_letters[i].letter == o) {
			for (k = 0; opts[k].name != NULL; k++)
				if (opts[k].val == habit_letters[i].code)
					cur_opt = opts[k].name;
			return habit_letters[i].code;
		}
	return o;
}

/* One of perftest's / testpmd's options: 0, or -1 (said why). */
static int
habit_opt(struct perf_conf *c, int o, const char *arg)
{
	uint32_t v;

	switch (o) {
	case O_OUTS:
		if (opt_u32(arg, 1, SRNIC_MAX_RD_ATOMIC, &v) != 0)
			return -1;
		c->max_rd_atomic = (uint8_t)v;
		return 0;
	case O_QP_TIMEOUT:
		/* 0 would be IB's "wait forever": a lost packet never resent */
		if (opt_u32(arg, 1, PERF_QP_TIMEOUT_MAX, &v) != 0)
			return -1;
		c->qp_timeout = (uint8_t)v;
		c->qp_timeout_set = true;
		return 0;
	case O_RETRY_COUNT:
		if (opt_u32(arg, 0, PERF_RETRY_CNT, &v) != 0)
			return -1;
		c->retry_cnt = (uint8_t)v;
		return 0;
	case O_INLINE_SIZE:
		if (parse_size(arg, &v) != 0 || v > SRNIC_MAX_INLINE)
			return bad_opt(arg, "bytes from 0 to " RTE_STR(SRNIC_MAX_INLINE));
		c->inline_size = v;
		return 0;
	case O_HISTOGRAM:
		c->histogram = true;
		return 0;
	case O_CPU_UTIL:
		c->cpu_util = true;
		return 0;
	case O_TOTAL_MBUFS:
		return opt_u32(arg, PERF_MBUFS_MIN, UINT32_MAX, &c->nb_mbufs);
	case O_PERSIST:
		c->persist = true;
		return 0;
	case O_VERSION:
		perf_print_version();
		exit(0);
	default:
		/* getopt said which one */
		fprintf(stderr, "srnic-perf: --help lists every option\n");
		return -1;
	}
}

/* What the options above need of the rest. */
static int
habit_check(const struct perf_conf *c)
{
	if (c->persist && (c->role != PERF_ROLE_SERVER || c->perftest || c->peer_cmdline)) {
		fprintf(stderr, "srnic-perf: --persist goes with --server (srnic-perf's own exchange;\n"
				"  a --perftest or --peer-* server serves one peer)\n");
		return -1;
	}
	if (c->inline_size > 0 && ((c->op != PERF_OP_WRITE && c->op != PERF_OP_SEND) ||
				   c->role == PERF_ROLE_SERVER)) {
		/* the requester posts the WRs: nothing else would use it */
		fprintf(stderr, "srnic-perf: --inline_size goes with --op write or send, on the side\n"
				"  that posts them (the embedded pair or --client)\n");
		return -1;
	}
	return 0;
}

int
perf_parse_args(int argc, char **argv, struct perf_conf *c)
{
	bool iters_given = false, atomic_given = false, read_inline_given = false;
	bool ip_set = false, peer_psn_set = false, peer_ip_set = false;
	bool stats_given = false;
	int o, idx;

	memset(c, 0, sizeof(*c));
	c->tcp_port = PERF_DEFAULT_TCP_PORT;
	c->op = PERF_OP_READ;
	c->sizes[0] = 65536;
	c->nb_sizes = 1;
	c->qps = 1;
	c->depth = 16;
	c->mtu = IBV_MTU_4096;
	c->iters = PERF_DEFAULT_ITERS;
	c->unsignaled = 1;
	c->read_inline = SRNIC_READ_INLINE_DEFAULT; /* the device's default, stated */
	c->nb_lcores = 1;
	c->loss.seed = 1;
	c->stats_period = PERF_STATS_PERIOD_DEFAULT;
	c->pcap_snaplen = PERF_PCAP_SNAPLEN_DEFAULT;
	c->pcap_max_bytes = (uint64_t)PERF_PCAP_MAX_MB_DEFAULT << 20;
	c->retry_cnt = PERF_RETRY_CNT;
	optind = 1;
	while ((o = getopt_long(argc, argv, HABIT_SHORTOPTS, opts, &idx)) != -1) {
		cur_opt = o >= O_OP ? opts[idx].name : "?";
		o = habit_letter(o);
		switch (o) {
		case O_OP: {
			unsigned int i;

			for (i = 0; i < RTE_DIM(op_names); i++)
				if (strcmp(optarg, op_names[i]) == 0)
					break;
			if (i == RTE_DIM(op_names))
				return bad_opt(optarg, "one of read, write, send, atomic");
			c->op = (enum perf_op)i;
			break;
		}
		case O_SIZE:
			if (parse_size(optarg, &c->sizes[0]) != 0)
				return bad_opt(optarg, SIZE_WHY);
			c->nb_sizes = 1;
			break;
		case O_SIZES: {
			/* every item a size: "64,,4K" and a trailing comma are errors */
			const char *p = optarg;

			c->nb_sizes = 0;
			for (;;) {
				const char *comma = strchr(p, ',');
				size_t n = comma != NULL ? (size_t)(comma - p) : strlen(p);
				char tok[32];

				if (c->nb_sizes == PERF_MAX_SIZES)
					return bad_opt(optarg, "at most " RTE_STR(PERF_MAX_SIZES)
							       " sizes");
				if (n == 0 || n >= sizeof(tok))
					return bad_opt(optarg, "a comma-separated list of sizes, "
							       "none empty (e.g. 64,4K,64K)");
				memcpy(tok, p, n);
				tok[n] = '\0';
				if (parse_size(tok, &c->sizes[c->nb_sizes]) != 0)
					return bad_opt(optarg, SIZE_WHY);
				c->nb_sizes++;
				if (comma == NULL)
					break;
				p = comma + 1;
			}
			break;
		}
		case O_QPS:
			if (opt_u32(optarg, 1, PERF_MAX_QPS, &c->qps) != 0)
				return -1;
			break;
		case O_DEPTH:
			if (opt_u32(optarg, 1, PERF_MAX_DEPTH, &c->depth) != 0)
				return -1;
			break;
		case O_MTU: {
			uint64_t v;

			if (parse_u64(optarg, 256, 4096, &v) != 0 || (v & (v - 1)) != 0)
				return bad_opt(optarg, "one of 256, 512, 1024, 2048, 4096 "
						       "(the IB path MTUs)");
			c->mtu = (enum ibv_mtu)(__builtin_ctzl(v) - 7);
			break;
		}
		case O_ITERS:
			if (parse_u64(optarg, 1, UINT64_MAX, &c->iters) != 0)
				return bad_opt(optarg, "a whole number, at least 1");
			iters_given = true;
			break;
		case O_DURATION:
			/* finite and capped: "inf" would run nothing (its cycles overflow) */
			if (parse_double(optarg, 0, PERF_DURATION_MAX_S, &c->duration) != 0 ||
			    !(c->duration > 0))
				return bad_opt(optarg, "seconds, more than 0 and at most "
						       RTE_STR(PERF_DURATION_MAX_S) " (e.g. 10 or 0.5)");
			break;
		case O_LAT:
			c->lat = true;
			break;
		case O_LCORES:
			fprintf(stderr, "srnic-perf: --lcores is the EAL's option; srnic-perf's is "
					"--req-lcores N (requester lcores)\n");
			return -1;
		case O_REQ_LCORES:
			if (opt_u32(optarg, 1, PERF_MAX_LCORES, &c->nb_lcores) != 0)
				return -1;
			break;
		case O_UNSIG:
			if (opt_u32(optarg, 1, PERF_MAX_DEPTH, &c->unsignaled) != 0)
				return -1;
			break;
		case O_JSON:
			c->json = true;
			break;
		case O_VERIFY:
			c->verify = true;
			break;
		case O_TRACE:
			c->trace = true;
			break;
		case O_PCAP:
			c->pcap = optarg;
			break;
		case O_QUIET:
			c->quiet = true;
			break;
		case O_FLOORS:
			c->floors = true;
			break;
		case O_HELP:
			perf_usage(argv[0]);
			exit(0);
		case O_DROP:
		case O_DUP:
		case O_REORDER:
		case O_CORRUPT:
		case O_DELAY: {
			double v;
			double *f[] = { &c->loss.drop, &c->loss.dup, &c->loss.reorder,
					&c->loss.corrupt, &c->loss.delay };

			if (parse_double(optarg, 0, 1, &v) != 0)
				return bad_opt(optarg, "a probability from 0 to 1 (e.g. 0.01)");
			*f[o - O_DROP] = v;
			c->lossy = true;
			break;
		}
		case O_LOSS_SEED:
			if (parse_u64(optarg, 0, UINT64_MAX, &c->loss.seed) != 0)
				return bad_opt(optarg, "a whole number");
			break;
		case O_SERVER:
			c->role = PERF_ROLE_SERVER;
			break;
		case O_CLIENT:
			c->role = PERF_ROLE_CLIENT;
			c->peer_host = optarg;
			break;
		case O_TCP_PORT: {
			uint32_t v;

			if (opt_u32(optarg, 1, UINT16_MAX, &v) != 0)
				return -1;
			c->tcp_port = (uint16_t)v;
			break;
		}
		case O_PORT_ID: {
			uint32_t v;

			if (opt_u32(optarg, 0, RTE_MAX_ETHPORTS - 1, &v) != 0)
				return -1;
			c->port_id = (uint16_t)v;
			break;
		}
		case O_IP:
			if (inet_pton(AF_INET, optarg, c->ip) != 1)
				return bad_opt(optarg, "an IPv4 address A.B.C.D");
			ip_set = true;
			break;
		case O_PEER_QPN:
			if (opt_u32(optarg, 1, SRNIC_QPN_MASK, &c->peer_qpn) != 0)
				return -1;
			c->peer_cmdline = true;
			break;
		case O_PEER_PSN:
			if (opt_u32(optarg, 0, SRNIC_PSN_MASK, &c->peer_psn) != 0)
				return -1;
			peer_psn_set = true;
			break;
		case O_PEER_IP:
			if (inet_pton(AF_INET, optarg, c->peer_ip) != 1)
				return bad_opt(optarg, "an IPv4 address A.B.C.D");
			peer_ip_set = true;
			break;
		case O_PERFTEST:
			c->perftest = true;
			break;
		case O_ATOMIC:
			if (strcmp(optarg, "cas") == 0 || strcmp(optarg, "CMP_AND_SWAP") == 0)
				c->cas = true;
			else if (strcmp(optarg, "fadd") == 0 || strcmp(optarg, "FETCH_AND_ADD") == 0)
				c->cas = false;
			else
				return bad_opt(optarg, "fadd (FETCH_AND_ADD) or cas (CMP_AND_SWAP)");
			atomic_given = true;
			break;
		case O_MR_PER_QP:
			c->mr_per_qp = true;
			break;
		case O_READ_INLINE: {
			uint32_t v;

			if (parse_size(optarg, &v) != 0 || v > SRNIC_MAX_READ_INLINE)
				return bad_opt(optarg, "bytes from 0 to " RTE_STR(SRNIC_MAX_READ_INLINE));
			c->read_inline = (uint16_t)v;
			read_inline_given = true;
			break;
		}
		/* output and defaults */
		case O_STATS_PERIOD:
			if (parse_double(optarg, 0, PERF_DURATION_MAX_S, &c->stats_period) != 0)
				return bad_opt(optarg, "seconds, 0 (off) to " RTE_STR(PERF_DURATION_MAX_S)
						       " (e.g. 1 or 0.5)");
			stats_given = true;
			break;
		case O_PCAP_SNAPLEN:
			if (opt_u32(optarg, 0, SRNIC_PCAP_SNAPLEN, &c->pcap_snaplen) != 0)
				return -1;
			if (c->pcap_snaplen == 0)
				c->pcap_snaplen = SRNIC_PCAP_SNAPLEN;
			break;
		case O_PCAP_MAX: {
			uint64_t v;

			if (parse_u64(optarg, 0, UINT32_MAX, &v) != 0)
				return bad_opt(optarg, "MiB, a whole number (0: no limit)");
			c->pcap_max_bytes = v << 20;
			break;
		}
		case O_REMOTE_ACCESS:
			if (parse_access(optarg, &c->remote_access) != 0)
				return bad_opt(optarg, "read, write, atomic or a comma-separated list "
						       "of them (e.g. read,write)");
			break;
		case O_PEER_MAC:
			if (rte_ether_unformat_addr(optarg, &c->peer_mac) != 0)
				return bad_opt(optarg, "a MAC address XX:XX:XX:XX:XX:XX");
			c->peer_mac_set = true;
			break;
		default:
			if (habit_opt(c, o, optarg) != 0)
				return -1;
			break;
		}
	}
	c->iters_given = iters_given;
	if (c->quiet && !stats_given)
		c->stats_period = 0;
	else if (c->json && !stats_given)
		c->stats_period = 0; /* one JSON line per result, unless asked */
	if (optind < argc) {
		fprintf(stderr, "srnic-perf: unexpected argument '%s' (--help lists every option)\n",
			argv[optind]);
		return -1;
	}
	if (c->peer_cmdline && (!peer_psn_set || !peer_ip_set)) {
		fprintf(stderr, "srnic-perf: --peer-qpn needs --peer-psn and --peer-ip too (the "
				"peer's first PSN and its address)\n");
		return -1;
	}
	if (!ip_set) {
		c->ip[0] = 127;
		c->ip[2] = 1;
		c->ip[3] = c->role == PERF_ROLE_CLIENT ? 2 : 1;
	}
	if (c->peer_cmdline && c->role != PERF_ROLE_SERVER) {
		fprintf(stderr, "srnic-perf: --peer-* go with --server\n");
		return -1;
	}
	if (atomic_given && c->op != PERF_OP_ATOMIC) {
		fprintf(stderr, "srnic-perf: --atomic goes with --op atomic\n");
		return -1;
	}
	if (read_inline_given && c->read_inline > 0 && (c->op != PERF_OP_READ || c->role == PERF_ROLE_CLIENT)) {
		/* the responder's device builds READ responses: a client's
		 * setting would change nothing and be reported as if it did */
		fprintf(stderr, "srnic-perf: --read-inline goes with --op read, on the side that\n"
				"  answers (the embedded pair or --server)\n");
		return -1;
	}
	if (c->role != PERF_ROLE_BOTH && (c->lossy || c->floors)) {
		fprintf(stderr, "srnic-perf: --drop.. and --floors need the embedded pair\n");
		return -1;
	}
	if (c->perftest && (c->role == PERF_ROLE_BOTH || c->peer_cmdline || c->nb_sizes != 1 ||
			    c->verify || (c->lat && c->qps != 1) ||
			    (perf_pt_pingpong(c) && c->duration > 0))) {
		fprintf(stderr, "srnic-perf: --perftest goes with --server or --client, one --size,\n"
				"  no --verify; --lat with one QP (the latency tools' only), and\n"
				"  --iters, not --duration, for ib_write_lat / ib_send_lat\n");
		return -1;
	}
	if (perf_pt_pingpong(c)) {
		/* both ends count the same turns: perftest's default, unless given */
		if (!iters_given)
			c->iters = PERF_PT_PINGPONG_ITERS;
		c->iters_given = true; /* the same count at every size */
		if (c->iters < 2) {
			fprintf(stderr, "srnic-perf: a ping-pong's latency takes --iters 2 or more\n");
			return -1;
		}
		c->depth = 2; /* a slot to receive into, one to send from */
	} else if (c->lat) {
		c->depth = 1;
	}
	if (c->op == PERF_OP_ATOMIC) {
		c->sizes[0] = 8;
		c->nb_sizes = 1;
	}
	if (c->unsignaled > c->depth)
		c->unsignaled = c->depth; /* else the SQ fills before a CQE comes */
	if (c->nb_lcores > c->qps && c->role != PERF_ROLE_SERVER) {
		/* a server learns the QP count from its client */
		fprintf(stderr, "srnic-perf: --req-lcores %u with --qps %u: each requester lcore "
				"needs a QP of its own (at most --req-lcores %u)\n", c->nb_lcores,
			c->qps, c->qps);
		return -1;
	}
	if (habit_check(c) != 0)
		return -1;
	if (perf_check_cq(c) != 0)
		return -1;
	return check_lcores(c);
}
