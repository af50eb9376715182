/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The end of an attached session (doc/srnicd.md, section 8), and fork().
 *
 * A session ends three ways: the daemon stops cleanly (it writes FATAL
 * into the session's state line and a byte into the channels' and async
 * pipes before it closes the socket), the daemon dies (the kernel closes its end of
 * the socket), or the daemon closes this one session. The library sees
 * the first in the state line, the other two as a hang-up on the control
 * socket: a call gets ECONNRESET, and the watcher thread, one per
 * process, blocked in poll() on every context's socket (asking for no
 * event: only POLLHUP and POLLERR wake it, never a reply), notices it
 * with no call in progress. Either way the context is latched dead (the
 * state line of its own mapping set FATAL); every waiter wakes as the
 * daemon's ends of the completion channels' and async pipes close (an
 * end of file, which latches the end too), the async one to
 * IBV_EVENT_DEVICE_FATAL. What each verb answers then is
 * verbs_attach_dp.c's (EIO, flushed WQEs, destroys that succeed), as
 * rdma-core's after the kernel disassociated a removed device.
 *
 * fork(): the child gets a copy of every context but none of the threads,
 * and shares with its parent the session's socket, its ring memory and
 * the re-backed registered memory (all MAP_SHARED or descriptors). The
 * child handler makes each inherited context the child's dead copy: the
 * socket closed in the child (the parent's session ends when the parent
 * does), the rings replaced by private memory with FATAL in its state
 * line, and each MR's pages replaced by a private copy the prepare
 * handler took just before fork() (what the kernel's copy-on-fork gives a
 * child: the pages as they were at fork); the child opens its own
 * session. The cost: a copy of every registered byte per fork().
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "srnic_svc.h"
#include "verbs.h"
#include "verbs_attach.h"

/* open contexts one watcher looks at; more are not watched (said once),
 * their end then seen by their next call */
#define SVA_WATCH_MAX 64

pthread_mutex_t sva_objs_lock = PTHREAD_MUTEX_INITIALIZER;

/* the watcher, under sva_objs_lock */
static struct {
	pthread_cond_t cond;
	struct sva_context *list;
	int wake_fd;
	bool started, atfork;
	uint64_t gen_req;           /* +1 by each change of the list */
	uint64_t gen_done;          /* the gen_req its poll() set was built at */
} w = { .cond = PTHREAD_COND_INITIALIZER, .wake_fd = -1 };

static void
wake(int fd)
{
	uint64_t one = 1;

	if (fd >= 0 && write(fd, &one, sizeof(one)) != sizeof(one))
		return;             /* a counter at its limit is readable already */
}

static void
ctx_fatal_locked(struct sva_context *ctx)
{
	if (ctx->fatal_woken)
		return;
	ctx->fatal_woken = true;
	sv_log("%s: srnicd ended the session (the daemon stopped or died): every verb on the "
	       "device fails now (IBV_EVENT_DEVICE_FATAL); start the daemon again and reopen it",
	       ctx->vctx.context.device->name);
	/* its waiters need no write of ours (the pipes' write ends are the
	 * daemon's): the daemon ended the session, and its ends of the
	 * channels' and the async pipes close with it, an end of file that
	 * wakes every reader */
	__atomic_store_n(&ctx->shm->state.v, SVC_SHM_FATAL, __ATOMIC_RELEASE);
}

void
sva_ctx_fatal(struct sva_context *ctx)
{
	pthread_mutex_lock(&sva_objs_lock);
	ctx_fatal_locked(ctx);
	pthread_mutex_unlock(&sva_objs_lock);
}

static void *
watch_main(void *arg)
{
	struct pollfd pfd[1 + SVA_WATCH_MAX];
	struct sva_context *c[SVA_WATCH_MAX], *ctx;
	unsigned int n, i;
	uint64_t v;

	(void)arg;
	pthread_mutex_lock(&sva_objs_lock);
	for (;;) {
		n = 0;
		for (ctx = w.list; ctx != NULL; ctx = ctx->watch_next) {
			if (ctx->fatal_woken)
				continue;
			if (n == SVA_WATCH_MAX) {
				static bool said;

				if (!said)
					sv_log("more than %u devices open: the daemon's end is seen by "
					       "the next call on the others", SVA_WATCH_MAX);
				said = true;
				break;
			}
			c[n] = ctx;
			pfd[1 + n].fd = ctx->fd;
			pfd[1 + n].events = 0;  /* POLLHUP and POLLERR come unasked */
			n++;
		}
		/* a context taken out before this is out of the set: its
		 * sva_watch_del() may go on and close its socket */
		w.gen_done = w.gen_req;
		pthread_cond_broadcast(&w.cond);
		pfd[0].fd = w.wake_fd;
		pfd[0].events = POLLIN;
		pthread_mutex_unlock(&sva_objs_lock);
		if (poll(pfd, n + 1, -1) < 0)
			pfd[0].revents = 0;
		pthread_mutex_lock(&sva_objs_lock);
		if (pfd[0].revents & POLLIN)
			while (read(w.wake_fd, &v, sizeof(v)) == sizeof(v))
				;
		/* every c[] is alive: a removal waits for the next gen_done */
		for (i = 0; i < n; i++)
			if (pfd[1 + i].revents & (POLLHUP | POLLERR | POLLNVAL))
				ctx_fatal_locked(c[i]);
	}
	return NULL;
}

static void
fork_prepare(void)
{
	pthread_mutex_lock(&sva_objs_lock);
	sva_mem_fork_prepare();
}

static void
fork_parent(void)
{
	sva_mem_fork_parent();
	pthread_mutex_unlock(&sva_objs_lock);
}

/* The child: no watcher thread; each inherited context its dead copy. */
static void
fork_child(void)
{
	struct sva_context *ctx;

	sva_mem_fork_child();
	for (ctx = w.list; ctx != NULL; ctx = ctx->watch_next) {
		sva_dp_fork_child(ctx);
		ctx->fatal_woken = true;    /* latched: its pipes are the parent's session's */
		if (ctx->fd >= 0)
			close(ctx->fd);
		ctx->fd = -1;
	}
	w.list = NULL;
	if (w.wake_fd >= 0)
		close(w.wake_fd);
	w.wake_fd = -1;
	w.started = false;
	w.gen_req = w.gen_done = 0;
	pthread_cond_init(&w.cond, NULL);
	pthread_mutex_unlock(&sva_objs_lock);
}

int
sva_watch_add(struct sva_context *ctx)
{
	sigset_t all, old;
	pthread_t t;
	int rc = 0;

	pthread_mutex_lock(&sva_objs_lock);
	if (!w.atfork) {
		rc = pthread_atfork(fork_prepare, fork_parent, fork_child);
		w.atfork = rc == 0;
	}
	if (rc == 0 && !w.started) {
		w.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w.wake_fd < 0) {
			rc = errno;
		} else {
			/* the program's signals are never the watcher's */
			sigfillset(&all);
			pthread_sigmask(SIG_SETMASK, &all, &old);
			rc = pthread_create(&t, NULL, watch_main, NULL);
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			if (rc == 0) {
				pthread_setname_np(t, "srnic-watch");
				pthread_detach(t);
				w.started = true;
			} else {
				close(w.wake_fd);
				w.wake_fd = -1;
			}
		}
	}
	if (rc == 0) {
		ctx->watch_next = w.list;
		w.list = ctx;
		w.gen_req++;
		wake(w.wake_fd);
	}
	pthread_mutex_unlock(&sva_objs_lock);
	return rc;
}

void
sva_watch_del(struct sva_context *ctx)
{
	struct sva_context **pp;
	uint64_t gen;

	pthread_mutex_lock(&sva_objs_lock);
	for (pp = &w.list; *pp != NULL; pp = &(*pp)->watch_next) {
		if (*pp == ctx) {
			*pp = ctx->watch_next;
			gen = ++w.gen_req;
			wake(w.wake_fd);
			while (w.started && w.gen_done < gen)
				pthread_cond_wait(&w.cond, &sva_objs_lock);
			break;
		}
	}
	pthread_mutex_unlock(&sva_objs_lock);
}

bool
sva_async_fatal(struct sva_context *ctx, struct ibv_async_event *event)
{
	bool tell;

	/* not ctx->lock: a fork()ed child may inherit that held by a call */
	pthread_mutex_lock(&sva_objs_lock);
	tell = sva_dead(ctx) && !ctx->fatal_told;
	ctx->fatal_told = ctx->fatal_told || tell;
	pthread_mutex_unlock(&sva_objs_lock);
	if (tell) {
		memset(event, 0, sizeof(*event));
		event->event_type = IBV_EVENT_DEVICE_FATAL;
		event->element.port_num = 1;
	}
	return tell;
}
