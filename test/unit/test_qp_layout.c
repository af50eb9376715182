/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * struct srnic_qp's cache lines by writer. The application's thread (its
 * posts and CQ polls) and the QP's engine lcore are two cores in every
 * deployment but srnic-perf's embedded one: a line both write moves
 * between them at every store of either side. So the fields the
 * application writes (the queues' heads, the slots its polls give back,
 * the doorbell flag the poster sets) share no line with the fields the
 * engine writes per packet or per WQE (its turn's flags, the IP ID, the
 * requester and responder state, the queues' consumer indexes, counters).
 * The doorbell flag is written by both by design (set, then cleared): it
 * sits on the poster's head line, which the engine reads right after
 * clearing it anyway.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "../../lib/rnic/rnic.h"

#define LINE(f) (offsetof(struct srnic_qp, f) / RTE_CACHE_LINE_SIZE)
#define LAST_LINE(f) \
	((offsetof(struct srnic_qp, f) + sizeof(((struct srnic_qp *)0)->f) - 1) / \
	 RTE_CACHE_LINE_SIZE)

struct field {
	const char *name;
	size_t first, last; /* cache lines */
};

#define FIELD(f) { #f, LINE(f), LAST_LINE(f) }

/* written by the application's thread (srnic_post_send/recv, srnic_poll_cq) */
static const struct field app_fields[] = {
	FIELD(sq.head),
	FIELD(sq.app_free),
	FIELD(sq.db_pending),
	FIELD(rq.head),
	FIELD(rq.app_free),
};

/* written by the engine on the data path */
static const struct field eng_fields[] = {
	FIELD(active),
	FIELD(in_wheel),
	FIELD(tw_tick),
	FIELD(ip_id),
	FIELD(resp_owed),
	FIELD(req_idle),
	FIELD(req),
	FIELD(tmpl),
	FIELD(sq.comp),
	FIELD(sq.req),
	FIELD(rq.tail),
	FIELD(resp),
	FIELD(tw_link),
	FIELD(stats),
};

static void
test_no_line_written_by_both(void **state)
{
	unsigned int a, e, shared = 0;

	(void)state;
	for (a = 0; a < RTE_DIM(app_fields); a++)
		for (e = 0; e < RTE_DIM(eng_fields); e++) {
			const struct field *x = &app_fields[a], *y = &eng_fields[e];

			if (x->first <= y->last && y->first <= x->last) {
				print_error("line %zu: %s (application) and %s (engine)\n",
					    RTE_MAX(x->first, y->first), x->name, y->name);
				shared++;
			}
		}
	assert_int_equal(shared, 0);
}

/* The poster's doorbell flag is on the line of the head it has just
 * stored: the handoff moves one line, not two. */
static void
test_doorbell_beside_head(void **state)
{
	(void)state;
	assert_int_equal(LINE(sq.db_pending), LINE(sq.head));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_line_written_by_both),
		cmocka_unit_test(test_doorbell_beside_head),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
