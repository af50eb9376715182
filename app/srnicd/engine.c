/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's thread, one for every device the daemon serves (as DPDK's
 * l3fwd polls all its ports on one lcore: on a host of few CPUs a thread
 * per port would take turns at the CPU, where one runs every port's work
 * to completion in turn): each pass runs every device's
 * srnic_engine_poll(), then the sessions' rings (the data path) and, every
 * SRND_CM_POLL_US, every device's CM; it naps only when no device had work.
 * Per pass: srnic_engine_poll() and the CM (QP1's MADs, its
 * timers) while packets move, yields its CPU after SRND_SPIN_HOT_US without
 * work, naps when nothing has moved for SRND_SPIN_US (and SRND_SPIN_YIELDS
 * of its yields), briefly while QPs wait for the network (SRND_SLEEP_WAIT_US)
 * (doc/srnicd.md, "The daemon's threads and lcores"). On a worker lcore of
 * --lcores when there is one, else a thread beside the control thread.
 */
#include <errno.h>
#include <sys/prctl.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnicd.h"

static int
engine_loop(void *arg)
{
	struct srnd *d = arg;
	uint64_t hz = rte_get_tsc_hz();
	uint64_t spin = hz / 1000000 * SRND_SPIN_US, cm_every = hz / 1000000 * SRND_CM_POLL_US;
	uint64_t hot = hz / 1000000 * SRND_SPIN_HOT_US, watch = hz / 1000000 * SRND_WAIT_WATCH_US;
	uint64_t spin_max = hz / 1000000 * SRND_SPIN_MAX_US;
	uint64_t now, last_work = rte_rdtsc(), last_cm = 0, cm_next_us = UINT64_MAX;
	unsigned int nap = SRND_SLEEP_MIN_US, n, yields = 0, i, qps_waiting;
	bool waiting;

	/* this thread's; a failure leaves Linux's default (longer naps) */
	(void)prctl(PR_SET_TIMERSLACK, SRND_TIMER_SLACK_NS, 0, 0, 0);

	while (!atomic_load_explicit(&d->stop, memory_order_relaxed)) {
		n = 0;
		for (i = 0; i < d->nb_devs; i++)
			n += srnic_engine_poll(d->dev[i].eng);
		n += srnd_dpath_poll(d);
		atomic_fetch_add_explicit(&d->eng_polls, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&d->eng_gen, 1, memory_order_seq_cst);
		now = rte_rdtsc();
		if (now - last_cm >= cm_every) {
			/* the soonest of the CMs' next timers */
			cm_next_us = UINT64_MAX;
			for (i = 0; i < d->nb_devs; i++) {
				uint64_t next = UINT64_MAX;
				int m;

				if (d->dev[i].cm == NULL)
					continue;
				m = srnic_cm_poll(d->dev[i].cm, &next);
				if (m > 0)
					n += (unsigned int)m;
				cm_next_us = RTE_MIN(cm_next_us, next);
			}
			last_cm = now;
		}
		if (n > 0) {
			last_work = now;
			nap = SRND_SLEEP_MIN_US;
			yields = 0;
			continue;
		}
		if (d->eng_wake_owed) {
			srnd_dpath_wake_owed(d);
			continue;
		}
		if (now - last_work < hot) {
			rte_pause();
			continue;
		}
		if (now - last_work < spin ||
		    (yields < SRND_SPIN_YIELDS && now - last_work < spin_max)) {
			sched_yield();
			yields++;
			atomic_fetch_add_explicit(&d->eng_yields, 1, memory_order_relaxed);
			continue;
		}
		if (nap > SRND_SLEEP_DP_MAX_US && atomic_load_explicit(&srnd_counts()->qps,
								      memory_order_relaxed) > 0)
			nap = SRND_SLEEP_DP_MAX_US;
		for (qps_waiting = 0, i = 0; i < d->nb_devs && now - last_work < watch; i++)
			qps_waiting += srnic_engine_waiting(d->dev[i].eng);
		waiting = qps_waiting > 0;
		if (waiting)
			nap = RTE_MIN(nap, (unsigned int)SRND_SLEEP_WAIT_US);
		if (nap > cm_next_us)
			nap = cm_next_us < SRND_SLEEP_MIN_US ? SRND_SLEEP_MIN_US : (unsigned int)cm_next_us;
		srnd_dpath_sleep(d, nap, waiting);   /* counts naps, waiting_naps and woken */
		if (nap < SRND_SLEEP_MAX_US)
			nap = nap * 2 > SRND_SLEEP_MAX_US ? SRND_SLEEP_MAX_US : nap * 2;
	}
	return 0;
}

/* The engine on a thread of its own (no worker lcore in --lcores: the
 * default, and --lcores with one CPU): registered with EAL for an lcore id
 * of its own, so srnic's mbuf pools serve it from a per-lcore cache.
 * Unregistered, every mbuf it allocated or freed went through the pool's
 * ring (a locked compare-and-swap each): ~21% of the client side's CPU in
 * an attached 64 B ib_write_bw (perf, doc/performance.md "Session 23"). */
static void *
engine_thread(void *arg)
{
	struct srnd *d = arg;

	if (rte_thread_register() != 0)
		srnd_log("the engine's thread got no lcore id (%s): its mbufs bypass the pools' "
			 "caches (slower); give srnicd a second CPU in --lcores to run it on a "
			 "worker lcore", rte_strerror(rte_errno));
	atomic_store(&d->eng_thread_lcore, rte_lcore_id());
	engine_loop(arg);
	rte_thread_unregister();
	return NULL;
}

int
srnd_engine_start(struct srnd *d)
{
	unsigned int lc = rte_get_next_lcore(-1, 1, 0);
	int rc;

	d->eng_lcore = lc;
	if (lc < RTE_MAX_LCORE) {
		rc = rte_eal_remote_launch(engine_loop, d, lc);
		if (rc != 0)
			return rc;
	} else {
		atomic_store(&d->eng_thread_lcore, SRND_LCORE_STARTING);
		rc = pthread_create(&d->eng_thread, NULL, engine_thread, d);
		if (rc != 0)
			return -rc;
		pthread_setname_np(d->eng_thread, "srnicd-engine");
	}
	d->eng_started = true;
	return 0;
}

void
srnd_engine_stop(struct srnd *d)
{
	if (!d->eng_started)
		return;
	atomic_store(&d->stop, true);
	if (d->eng_lcore < RTE_MAX_LCORE)
		rte_eal_wait_lcore(d->eng_lcore);
	else
		pthread_join(d->eng_thread, NULL);
	d->eng_started = false;
}
