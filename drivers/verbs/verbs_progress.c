/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Progress: who runs srnic_engine_poll(), which one thread at a time may.
 * doc/verbs.md has the contract; in short:
 * - The engine has one try-lock (dev->busy). ibv_poll_cq(), ibv_post_send()
 *   and ibv_post_recv() take it when it is free and run one engine poll:
 *   a busy-polling program drives srnic from its own thread, no other
 *   thread spins beside it. A post right after a poll (or after such a
 *   post) leaves it to the next poll, up to SV_POST_BATCH posts.
 * - A progress thread per device runs the engine whenever no application
 *   call has for SV_HANDOVER_US (the program blocks in ibv_get_cq_event(),
 *   waits on its TCP socket as ib_read_bw's server does, or computes). It
 *   spins while there is traffic and SV_SPIN_US after the last packet, then
 *   sleeps in growing steps up to SV_SLEEP_MAX_US, so an idle program costs
 *   next to nothing and the retransmission timers still fire.
 * - Whoever polled the engine then delivers completion events: each armed
 *   CQ that gained the completion it waits for gets an event queued on its
 *   channel (srnic_cq_notify_due() decides, once per arm).
 * - The progress thread also moves the engine's asynchronous events to the
 *   open contexts' queues and async_fds.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mempool.h>
#include <rte_pause.h>

#include "srnic_cm.h"
#include "srnic_thread.h"
#include "verbs.h"

/* A write whose failure (an eventfd's count at its maximum) loses nothing
 * the reader could have had. */
static void
write_quiet(int fd, const void *buf, size_t len)
{
	ssize_t rc = write(fd, buf, len);

	(void)rc;
}

static void
notify_armed(struct sv_device *dev)
{
	uint32_t i = 0;

	rte_spinlock_lock(&dev->arm_lock);
	while (i < dev->nb_armed) {
		struct sv_cq *cq = dev->armed[i];

		if (srnic_cq_notify_due(cq->scq)) {
			if (cq->ibcq.channel != NULL)
				sv_channel_push(cq);
			cq->in_armed = false;
			dev->armed[i] = dev->armed[--dev->nb_armed];
			continue;
		}
		i++;
	}
	rte_spinlock_unlock(&dev->arm_lock);
}

/* SRNIC_STALL_AFTER's stall (a peer slow to read), under busy: true while the engine must
 * not be polled. */
static __rte_noinline bool
stall_now(struct sv_device *dev)
{
	uint64_t now = rte_rdtsc();

	if (dev->stall_until == 0) {
		if (srnic_dev_stat(dev->sdev, "req_msgs") < (int64_t)dev->stall_after)
			return false;
		dev->stall_until = now + dev->tsc_hz / 1000 * dev->stall_ms;
		sv_log("SRNIC_STALL_AFTER: stalled for %u ms", dev->stall_ms);
	}
	if (now < dev->stall_until)
		return true;
	dev->stall_after = 0; /* once */
	return false;
}

/* ---- lcore ids for the program's threads that drive the engine ----
 * A thread that is not EAL's has no lcore id (rte_lcore_id() is
 * LCORE_ID_ANY): every mbuf the engine allocates or frees on it goes to the
 * pool's ring with a locked compare-and-swap instead of the id's cache
 * (21.5% of ib_write_bw -s 64's CPU in srnicd's engine before it had one).
 * The opener has EAL's main lcore and the progress thread registers itself;
 * any other thread gets an id the first time it runs an engine poll, and
 * gives it back at its exit (a key's destructor), so a program that starts
 * and ends threads does not use the ids up. rte_thread_register() takes
 * only ids EAL left off (not SRNIC_LCORES' nor a service core's). */
enum sv_lcore_state {
	SV_LCORE_UNTRIED,   /* the thread has not driven the engine yet */
	SV_LCORE_NONE,      /* none left: it drives without one, tries again when one is given back */
	SV_LCORE_EAL,       /* an id not ours: the opener's, the progress thread's, EAL's */
	SV_LCORE_OWN,       /* one it took here, given back at its exit */
};
/* initial-exec (as rnic.h's engine TLS): the default model in a PIC
 * library costs a __tls_get_addr() call per engine poll */
static __thread uint8_t sv_lcore_state __attribute__((tls_model("initial-exec")));
/* thread_lcores_released when this thread went without: it tries again
 * once another thread has given one back */
static __thread uint64_t sv_lcore_released_seen __attribute__((tls_model("initial-exec")));
static pthread_key_t sv_lcore_key;
static pthread_once_t sv_lcore_once = PTHREAD_ONCE_INIT;
static int sv_lcore_key_rc;
static atomic_bool sv_lcore_none_said;

/* What this lcore id's caches hold goes back to the pools: no other
 * thread may use them until the id is taken again */
static void
lcore_cache_flush(struct rte_mempool *mp, void *arg)
{
	struct rte_mempool_cache *cache = rte_mempool_default_cache(mp, *(unsigned int *)arg);

	if (cache != NULL)
		rte_mempool_cache_flush(cache, mp);
}

/* at the exit of a thread that took an id */
static void
lcore_release(void *arg)
{
	struct sv_device *dev = arg;
	unsigned int lcore = rte_lcore_id();

	/* a fork()ed child's thread: the pools and the ids are the parent's */
	if (sv_forked || lcore == LCORE_ID_ANY)
		return;
	rte_mempool_walk(lcore_cache_flush, &lcore);
	rte_thread_unregister();
	atomic_fetch_sub(&dev->thread_lcores_held, 1);
	atomic_fetch_add(&dev->thread_lcores_released, 1);
}

static void
lcore_key_create(void)
{
	sv_lcore_key_rc = pthread_key_create(&sv_lcore_key, lcore_release);
}

static __rte_noinline void
lcore_none(struct sv_device *dev, const char *why)
{
	/* a thread trying again is counted once */
	if (sv_lcore_state != SV_LCORE_NONE)
		atomic_fetch_add(&dev->thread_lcore_none, 1);
	sv_lcore_state = SV_LCORE_NONE;
	if (!atomic_exchange(&sv_lcore_none_said, true))
		sv_log("a thread of this program (tid %d) drives %s's engine without an lcore id "
		       "until another thread gives one back at its exit: %s. Its mbufs go to the "
		       "pools' rings (a locked compare-and-swap each) instead of a per-lcore "
		       "cache: slower, nothing lost. Fewer threads polling CQs at once leave it "
		       "one (SRNIC_STATS=1: verbs_thread_lcore_none counts such threads; said once)",
		       (int)rte_gettid(), SV_DEV_NAME, why);
}

/* An engine poll of a thread without an id of its own yet (its first, or
 * one after another thread gave one back): one. Before busy is taken: no
 * engine waits on what it logs or locks. */
static __rte_noinline void
thread_lcore(struct sv_device *dev)
{
	char why[200];
	uint32_t held;
	int err;

	if (sv_lcore_state == SV_LCORE_UNTRIED && rte_lcore_id() != LCORE_ID_ANY) {
		sv_lcore_state = SV_LCORE_EAL;
		return;
	}
	sv_lcore_released_seen = atomic_load(&dev->thread_lcores_released);
	pthread_once(&sv_lcore_once, lcore_key_create);
	if (sv_lcore_key_rc != 0) {
		snprintf(why, sizeof(why), "pthread_key_create: %s", strerror(sv_lcore_key_rc));
		lcore_none(dev, why);
		return;
	}
	held = atomic_load(&dev->thread_lcores_held);
	do {
		if (held >= SV_THREAD_LCORE_MAX) {
			snprintf(why, sizeof(why), "%d other threads hold one "
				 "(SV_THREAD_LCORE_MAX)", SV_THREAD_LCORE_MAX);
			lcore_none(dev, why);
			return;
		}
	} while (!atomic_compare_exchange_weak(&dev->thread_lcores_held, &held, held + 1));
	if (rte_thread_register() != 0) {
		err = rte_errno;
		atomic_fetch_sub(&dev->thread_lcores_held, 1);
		if (err == ENOMEM)
			snprintf(why, sizeof(why), "DPDK has none left (RTE_MAX_LCORE %d; "
				 "SRNIC_LCORES and SRNIC_EAL_ARGS take some: give EAL fewer)",
				 RTE_MAX_LCORE);
		else
			snprintf(why, sizeof(why), "DPDK refuses non-EAL threads (%s): "
				 "multi-process is in use (a secondary process attached, or "
				 "SRNIC_EAL_ARGS made it one): run it alone", rte_strerror(err));
		lcore_none(dev, why);
		return;
	}
	if (pthread_setspecific(sv_lcore_key, dev) != 0) {
		/* no destructor would give it back: not taken */
		rte_thread_unregister();
		atomic_fetch_sub(&dev->thread_lcores_held, 1);
		lcore_none(dev, "pthread_setspecific failed");
		return;
	}
	sv_lcore_state = SV_LCORE_OWN;
	atomic_fetch_add(&dev->thread_lcores, 1);
}

/* One engine poll when busy is free; *ran says whether this call had it
 * (a stalled engine, SRNIC_STALL_AFTER, counts as run: nothing waits on it) */
static unsigned int
progress_once(struct sv_device *dev, enum sv_runner who, bool *ran)
{
	uint32_t pending;
	unsigned int n;

	*ran = false;
	if (unlikely(sv_lcore_state <= SV_LCORE_NONE) &&
	    (sv_lcore_state == SV_LCORE_UNTRIED ||
	     atomic_load_explicit(&dev->thread_lcores_released, memory_order_relaxed) !=
	     sv_lcore_released_seen))
		thread_lcore(dev);
	if (atomic_load_explicit(&dev->busy, memory_order_relaxed) ||
	    atomic_exchange_explicit(&dev->busy, true, memory_order_acquire)) {
		n = 0;
		goto out;
	}
	*ran = true;
	if (unlikely(dev->stall_after != 0) && stall_now(dev)) {
		atomic_store_explicit(&dev->busy, false, memory_order_release);
		n = 0;
		goto out;
	}
	/* this poll sends them (the doorbell's Dekker pair: a WQE posted
	 * before the engine's fence is seen by it) */
	pending = atomic_load_explicit(&dev->posts_pending, memory_order_relaxed);
	if (pending != 0) { /* the posters' line written only when they held posts */
		pending = atomic_exchange_explicit(&dev->posts_pending, 0, memory_order_relaxed);
		dev->posts_deferred += pending;
	}
	n = srnic_engine_poll(dev->eng);
	dev->runs[who]++;
	if (n > 0) {
		dev->runs_moved[who]++;
		atomic_store_explicit(&dev->last_moved_tsc, rte_rdtsc(), memory_order_relaxed);
	}
	if (atomic_load_explicit(&dev->nb_armed, memory_order_relaxed) != 0)
		notify_armed(dev);
	atomic_store_explicit(&dev->busy, false, memory_order_release);
out:
	/* A poll's stamp is taken when it is done: the engine poll itself
	 * may take longer than SV_POST_DEFER_US (a burst to send, ACKs to
	 * retire), and the posts behind it are still the program's next
	 * ones (sv_post_progress()). */
	if (who == SV_RUN_POLL)
		atomic_store_explicit(&dev->app_poll_tsc, rte_rdtsc(), memory_order_relaxed);
	return n;
}

unsigned int
sv_progress(struct sv_device *dev, enum sv_runner who)
{
	bool ran;

	return progress_once(dev, who, &ran);
}

/* One engine poll by this thread, waiting out another's: what the caller
 * posted before has been through the engine when this returns (the
 * try-lock of sv_progress() may leave it to a poll already past its
 * doorbell fence) */
unsigned int
sv_progress_sync(struct sv_device *dev, enum sv_runner who)
{
	unsigned int n;
	bool ran;

	while (n = progress_once(dev, who, &ran), !ran)
		rte_pause();
	return n;
}

/* After a post: the engine runs now unless the program polled its CQ
 * within SV_POST_DEFER_US and the posts left since are fewer than
 * SV_POST_BATCH and younger than SV_POST_DEFER_US. A program in a
 * post-then-poll loop (perftest's bandwidth tests post up to their TX
 * depth, then poll: ib_write_bw -s 64 posts 100 WRs between two CQEs) so
 * has what it posts between two polls sent together, by the engine poll
 * of every SV_POST_BATCH-th post and by its next poll, in bursts of up to
 * SV_POST_BATCH packets, instead of one engine poll (and one packet burst
 * of one) per WR. The post that fills a batch stamps app_poll_tsc as a
 * poll does: the posts behind it make the next batch. A held post stamps
 * nothing: the first post held waits at most SV_POST_DEFER_US, however
 * closely the next follow (a program that polled once, then posts every
 * 40 us, has them sent every second or third post, not at the 32nd), and
 * the progress thread takes over SV_HANDOVER_US after the poll, not after
 * the last post held. A program that posts without polling (ib_write_lat
 * spins on its buffer) has every post run the engine. */
void
sv_post_progress(struct sv_device *dev)
{
	uint64_t now = rte_rdtsc();
	uint64_t polled = atomic_load_explicit(&dev->app_poll_tsc, memory_order_relaxed);
	uint32_t pending = atomic_load_explicit(&dev->posts_pending, memory_order_relaxed);

	if (now - polled >= dev->post_defer_tsc ||
	    (pending != 0 &&
	     now - atomic_load_explicit(&dev->batch_tsc, memory_order_relaxed) >= dev->post_defer_tsc)) {
		sv_progress(dev, SV_RUN_POST);
		return;
	}
	if (pending + 1 < SV_POST_BATCH) {
		if (atomic_fetch_add_explicit(&dev->posts_pending, 1, memory_order_relaxed) == 0)
			atomic_store_explicit(&dev->batch_tsc, now, memory_order_relaxed);
		return;
	}
	/* the batch is full: it goes now, and the posts behind it make the
	 * next one (stamped when the engine poll is done, as a poll is) */
	sv_progress(dev, SV_RUN_POST);
	atomic_store_explicit(&dev->app_poll_tsc, rte_rdtsc(), memory_order_relaxed);
}

void
sv_cq_armed_add(struct sv_device *dev, struct sv_cq *cq)
{
	rte_spinlock_lock(&dev->arm_lock);
	if (!cq->in_armed && dev->nb_armed < SV_MAX_ARMED_CQ) {
		cq->in_armed = true;
		dev->armed[dev->nb_armed] = cq;
		atomic_store_explicit(&dev->nb_armed, dev->nb_armed + 1, memory_order_release);
	}
	rte_spinlock_unlock(&dev->arm_lock);
	/* completions already there are due now, not at the next packet */
	notify_armed(dev);
}

bool
sv_cq_armed_del(struct sv_device *dev, struct sv_cq *cq)
{
	bool was;
	uint32_t i;

	rte_spinlock_lock(&dev->arm_lock);
	was = cq->in_armed;
	for (i = 0; i < dev->nb_armed; i++)
		if (dev->armed[i] == cq) {
			dev->armed[i] = dev->armed[--dev->nb_armed];
			break;
		}
	cq->in_armed = false;
	rte_spinlock_unlock(&dev->arm_lock);
	return was;
}

/* ---- asynchronous events ---- */

void
sv_ctx_register(struct sv_device *dev, struct sv_context *ctx)
{
	pthread_mutex_lock(&dev->ctx_lock);
	TAILQ_INSERT_TAIL(&dev->ctxs, ctx, next);
	pthread_mutex_unlock(&dev->ctx_lock);
}

void
sv_ctx_unregister(struct sv_device *dev, struct sv_context *ctx)
{
	pthread_mutex_lock(&dev->ctx_lock);
	TAILQ_REMOVE(&dev->ctxs, ctx, next);
	pthread_mutex_unlock(&dev->ctx_lock);
}

/* The context that created the QP gets its events, as the uverbs file
 * the QP was made on does. An event about a QP destroyed since is
 * dropped: its ibv_qp is gone. The verbs object is srnic's user pointer
 * (NULL once srnic's object is destroyed); taken under ctx_lock, which
 * the destroy takes before it frees the object (sv_async_forget()). */
void
sv_async_pump(struct sv_device *dev)
{
	struct srnic_async_event ev;
	struct sv_context *ctx;

	pthread_mutex_lock(&dev->ctx_lock);
	while (srnic_get_async_event(dev->sdev, &ev) == 0) {
		struct ibv_context *owner = NULL;
		struct ibv_async_event out;

		memset(&out, 0, sizeof(out));
		out.event_type = ev.event_type;
		switch (ev.event_type) {
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
			out.element.port_num = (int)ev.port_num;
			break;
		case IBV_EVENT_SRQ_LIMIT_REACHED:
		case IBV_EVENT_SRQ_ERR: {
			struct sv_srq *srq = ev.user;

			if (srq != NULL) {
				out.element.srq = &srq->ibsrq;
				owner = srq->ibsrq.context;
			}
			break;
		}
		case IBV_EVENT_CQ_ERR: {
			struct sv_cq *cq = ev.user;

			if (cq != NULL) {
				out.element.cq = &cq->ibcq;
				owner = cq->ibcq.context;
			}
			break;
		}
		default: {
			struct sv_qp *qp = ev.user;

			if (qp != NULL) {
				out.element.qp = &qp->ibqp;
				owner = qp->ibqp.context;
			}
			break;
		}
		}
		TAILQ_FOREACH(ctx, &dev->ctxs, next) {
			uint64_t one = 1;

			/* object events go to the context that made the
			 * object, port events to every context */
			if (owner != NULL && owner != &ctx->vctx.context)
				continue;
			if (owner == NULL && ev.port_num == 0)
				continue;
			pthread_mutex_lock(&ctx->async_lock);
			if (ctx->async_head - ctx->async_tail < SV_ASYNC_RING) {
				ctx->async[ctx->async_head++ % SV_ASYNC_RING] = out;
				write_quiet(ctx->vctx.context.async_fd, &one, sizeof(one));
			}
			pthread_mutex_unlock(&ctx->async_lock);
		}
	}
	pthread_mutex_unlock(&dev->ctx_lock);
}

/* ---- the CM (doc/rdmacm.md) ---- */

/* One CM poll (QP1's completions, answers, resends, the handlers, which
 * queue srnic's librdmacm's events) and the librdmacm hook (its address
 * resolutions' retries and timeouts), on one thread at a time. */
void
sv_cm_progress(struct sv_device *dev)
{
	void (*hook)(void *);

	if (atomic_load_explicit(&dev->cm_busy, memory_order_relaxed) ||
	    atomic_exchange_explicit(&dev->cm_busy, true, memory_order_acquire))
		return;
	if (dev->cm != NULL)
		srnic_cm_poll(dev->cm, NULL);
	hook = atomic_load_explicit(&dev->cm_hook, memory_order_acquire);
	if (hook != NULL)
		hook(atomic_load_explicit(&dev->cm_hook_arg, memory_order_relaxed));
	atomic_store_explicit(&dev->cm_busy, false, memory_order_release);
}

/* ---- the progress thread ---- */

static void
sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)us * 1000 };

	nanosleep(&ts, NULL);
}

void
sv_drive_init(struct sv_device *dev, struct sv_drive *st)
{
	st->last_work = rte_rdtsc();
	st->last_cm = 0;
	st->nap = SV_SLEEP_MIN_US;
	st->hot = dev->tsc_hz / 1000000 * SV_SPIN_HOT_US;
	st->spin = dev->tsc_hz / 1000000 * SV_SPIN_US;
}

/* One turn of a thread that drives the device and has nothing else to do
 * (the progress thread; with SRNIC_PROGRESS=app a blocking wait of the
 * program's): async events to their contexts, the CM every SV_CM_POLL_US,
 * an engine poll; spinning while there is traffic, then yielding, then
 * sleeping in growing steps (the timers still fire). */
void
sv_drive(struct sv_device *dev, struct sv_drive *st)
{
	uint64_t now = rte_rdtsc();

	sv_async_pump(dev);
	if (now - st->last_cm >= dev->cm_poll_tsc) {
		st->last_cm = now;
		sv_cm_progress(dev);
	}
	if (sv_progress(dev, SV_RUN_DRIVE) > 0) {
		st->last_work = now;
		st->nap = SV_SLEEP_MIN_US;
		return;
	}
	if (now - st->last_work < st->hot) {
		rte_pause();
		return;
	}
	if (now - st->last_work < st->spin) {
		/* spinning, but a core shared with the program's own
		 * spinning thread (or the peer's) goes to them first */
		sched_yield();
		return;
	}
	sleep_us(st->nap);
	st->nap = RTE_MIN(st->nap * 2, (unsigned int)SV_SLEEP_MAX_US);
}

static void *
progress_main(void *arg)
{
	struct sv_device *dev = arg;
	uint64_t handover = dev->tsc_hz / 1000000 * SV_HANDOVER_US;
	struct sv_drive st;

	/* an lcore id of its own: mempool caches, and DPDK calls that want one */
	rte_thread_register();
	sv_drive_init(dev, &st);
	while (!atomic_load_explicit(&dev->stop, memory_order_relaxed)) {
		uint64_t now = rte_rdtsc();

		if (now - atomic_load_explicit(&dev->app_poll_tsc, memory_order_relaxed) < handover) {
			/* the program drives the engine: look again after a
			 * handover; async events and the CM meanwhile */
			sv_async_pump(dev);
			if (now - st.last_cm >= dev->cm_poll_tsc) {
				st.last_cm = now;
				sv_cm_progress(dev);
			}
			sleep_us(SV_HANDOVER_US);
			st.last_work = rte_rdtsc();
			continue;
		}
		sv_drive(dev, &st);
	}
	rte_thread_unregister();
	return NULL;
}

int
sv_progress_start(struct sv_device *dev)
{
	int rc;

	atomic_store(&dev->stop, false);
	rc = srnic_thread_create(&dev->progress, progress_main, dev);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_setname_np(dev->progress, "srnic-progress");
	dev->progress_started = true;
	return 0;
}

/* At exit: until SRNIC_EXIT_LINGER_MS after the engine last moved a packet
 * (at most that long from now; nothing if it has been quiet as long).
 * A frame handed to the port is not yet the peer's: memif's peer, handling
 * our disconnect, drops what its engine had not read from the ring, and an
 * ACK lost so (the last of ibv_rc_pingpong's: no closing exchange) has the
 * peer resend until its retry_cnt is spent and fail, while hardware or rxe would have it on the wire.
 * The engine is polled meanwhile: by the progress thread, else here. */
void
sv_progress_linger(struct sv_device *dev)
{
	uint64_t last, until;

	/* a last post left to a poll that never came goes now, and the
	 * linger counts from it */
	if (atomic_load_explicit(&dev->posts_pending, memory_order_relaxed) != 0) {
		sv_progress_sync(dev, SV_RUN_WAIT);
		atomic_store_explicit(&dev->last_moved_tsc, rte_rdtsc(), memory_order_relaxed);
	}
	last = atomic_load_explicit(&dev->last_moved_tsc, memory_order_relaxed);
	until = last + dev->linger_tsc;
	if (last == 0)
		return;
	while (rte_rdtsc() < until) {
		if (dev->progress_started) {
			sleep_us(SV_SLEEP_MAX_US);
		} else {
			sv_progress(dev, SV_RUN_WAIT);
			sched_yield();
		}
	}
}

void
sv_progress_stop(struct sv_device *dev)
{
	if (!dev->progress_started)
		return;
	atomic_store(&dev->stop, true);
	pthread_join(dev->progress, NULL);
	dev->progress_started = false;
}
