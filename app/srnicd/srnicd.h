/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNICD_H
#define SRNICD_H

/*
 * srnicd: the service that owns a DPDK port, the srnic device on it and
 * the lcores of its engine, and serves the host's processes through a
 * control socket (doc/srnicd.md). main.c: options, EAL, the device, the
 * control thread's loop; engine.c: the engine's thread; session.c: the
 * control socket and its sessions.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "srnic_svc.h"

#define SRND_SESSIONS_MAX 64        /* sessions at once; one more is closed at accept */
#define SRND_PORT_WATCH_MS 100      /* the control thread's look at the link */
#define SRND_CM_POLL_US 200         /* the engine thread polls the CM at least this often */
/* The engine's thread spins while packets move and for SRND_SPIN_US after
 * the last, then sleeps in steps from SRND_SLEEP_MIN_US doubling to
 * SRND_SLEEP_MAX_US, never past the CM's next timer. The device serves
 * only QP1 (UD: no ACK timer) until sessions hold QPs of their own (the
 * data path), so a packet that arrives meanwhile (an ARP request, a CM
 * REQ, whose peers wait seconds) waits at most that long. An idle poll
 * costs ~150 us of CPU in the ASan build (most of it the engine's timer
 * wheel stepping over every slot the nap skipped): 1 ms steps took 2.6%
 * of a core, 10 ms 1.3%, 20 ms below 1% (test srnicd measures it). */
#define SRND_SPIN_US 2000
#define SRND_SLEEP_MIN_US 20
#define SRND_SLEEP_MAX_US 20000
#define SRND_DEFAULT_MEM_MB 256
#define SRND_DEFAULT_MTU 1500
#define SRND_DEV_NAME "srnic0"
#define SRND_GROUP_DEFAULT "srnic"  /* may attach, if the group exists */

struct srnic_dev;
struct srnic_engine;
struct srnic_cm;

/* What the daemon serves: one device on one port (more later: an array). */
struct srnd_dev {
	struct srnic_dev *sdev;
	struct srnic_engine *eng;
	struct srnic_cm *cm;
	uint16_t port_id;
	char devargs[512];
	char name[SVC_NAME_MAX];
	char ip[64];
	int link_up;                /* as last seen by the port's watch; -1 unknown */
};

struct srnd {
	struct srnd_dev dev;
	char sock_path[SVC_SOCK_PATH_MAX];
	int listen_fd;
	atomic_bool stop;
	/* the engine's thread */
	unsigned int eng_lcore;     /* a worker lcore, or RTE_MAX_LCORE: a pthread */
	pthread_t eng_thread;
	bool eng_started;
	_Atomic uint64_t eng_polls, eng_naps;
	/* idle CPU: the process's CPU time and the clock when it was ready */
	uint64_t ready_cpu_us, ready_wall_us;
};

/* engine.c */
int srnd_engine_start(struct srnd *d);
void srnd_engine_stop(struct srnd *d);

/* session.c */
/* Whether a daemon answers on d's socket already (asked before EAL takes
 * the port). */
bool srnd_socket_taken(const struct srnd *d);
int srnd_sessions_listen(struct srnd *d, const char *group);
/* epoll: the listening socket and every session are added to epfd */
int srnd_sessions_accept(struct srnd *d, int epfd);
/* a session's fd is readable or hung up: serve it (or close it) */
void srnd_session_event(struct srnd *d, int epfd, void *session, uint32_t events);
void srnd_sessions_close_all(struct srnd *d);
unsigned int srnd_sessions_count(void);
/* The largest request: a longer one is malformed (MSG_TRUNC tells). */
#define SRND_REQ_MAX 256

/* Every reply the daemon gives. */
union srnd_rep {
	struct svc_hdr h;
	struct svc_hello_rep hello;
	struct svc_list_rep list;
	struct svc_handle_rep handle;
	struct svc_query_device_rep qdev;
	struct svc_query_port_rep qport;
	struct svc_query_gid_rep qgid;
	struct svc_status_rep status;
};

struct srnd_session;
/* A session on socket fd (its credentials are the accept's to fill). */
struct srnd_session *srnd_session_new(int fd);
void srnd_session_free(struct srnd_session *s);
/* One received message of n bytes: checked, then served into rep (its
 * h.len is the reply's length). NULL, or why the session must be closed
 * (rep is then not to be sent). No socket: the control fuzz target
 * drives it too. */
const char *srnd_session_input(struct srnd *d, struct srnd_session *s, const void *buf, size_t n,
			       union srnd_rep *rep);
/* the tag epoll carries for the listening socket and the signalfd */
extern char srnd_tag_listen, srnd_tag_signal;

/* main.c */
uint64_t srnd_cpu_us(void);
uint64_t srnd_wall_us(void);
void srnd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define SRND_CONFIG_LINES_MAX 32  /* settings in a --config file */
#define SRND_CONFIG_LINE_MAX 640  /* its longest line (a --port's devargs fit) */
#define SRND_LOCK_SUFFIX ".lock"   /* beside the socket: held by its daemon */
int srnd_lock(const char *sock_path);

#endif /* SRNICD_H */
