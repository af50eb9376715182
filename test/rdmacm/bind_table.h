/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The port rules of Linux's rdma_cm (drivers/infiniband/core/cma.c), as a
 * table each program of ours runs against srnic's librdmacm: rdmacm_api
 * (embedded) and listen_late_check (attached to srnicd). Built against the
 * system's <rdma/rdma_cma.h> only; included by both, one copy of the table.
 *
 * Linux's rules, read from cma.c:
 *  - rdma_bind_addr(): cma_check_port(bind_list, id, id->reuseaddr): for
 *    every other id on the port, skip it if both set REUSEADDR and it does
 *    not listen (newer kernels: a listener's REUSEADDR was cleared at its
 *    listen, the same thing), or if both are AFONLY of different families;
 *    else a wildcard on either side is EADDRNOTAVAIL, the same address
 *    EADDRINUSE, different addresses fine;
 *  - rdma_listen() of a REUSEADDR id: cma_check_port(..., 0) (older:
 *    cma_bind_listen()): the same, REUSEADDR no longer skips: every other
 *    id bound to the port with an overlapping address, listening or not,
 *    refuses the listen (the id stays bound: "err: cma_comp_exch(LISTEN,
 *    ADDR_BOUND)"); an id without REUSEADDR was unique from its bind;
 *  - rdma_set_reuseaddr(): REUSEADDR set on any id but a listener, cleared
 *    only on an id not bound yet (IDLE); else EINVAL.
 *
 * So every pair of the table below (two ids on one port, IPv4: W the
 * wildcard 0.0.0.0, S the device's address; the first id's REUSEADDR and
 * whether it listens, the second's REUSEADDR; W and S in both orders):
 * the second's bind is refused (E: EADDRNOTAVAIL with a W, EADDRINUSE for
 * S twice) if the first listens or either lacks REUSEADDR; else it binds,
 * and then neither may listen (E each) while the other is bound; once the
 * first is destroyed the second listens. Allowed beside: 0.0.0.0 and ::
 * both AFONLY (different families), S and :: AFONLY, each listening.
 */
#ifndef BIND_TABLE_H
#define BIND_TABLE_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rdma/rdma_cma.h>

#define BT_PORTS 40     /* ports the table uses from its base on */

static int bt_fails;

#define BT_CHECK(cond, ...) do { \
	if (cond) { printf("ok "); } else { printf("FAIL "); bt_fails++; } \
	printf(__VA_ARGS__); printf("\n"); fflush(stdout); \
} while (0)

static const char *
bt_errno(int e)
{
	return e == 0 ? "0" : e == EADDRINUSE ? "EADDRINUSE" : e == EADDRNOTAVAIL ?
	       "EADDRNOTAVAIL" : e == EINVAL ? "EINVAL" : strerror(e);
}

/* rc (0 or -1 with errno) as an errno, 0 for success */
static int
bt_rc(int rc)
{
	return rc == 0 ? 0 : errno;
}

/* An id on ch with REUSEADDR reuse and (afonly >= 0) AFONLY afonly, bound
 * to family's addr:port: rdma_bind_addr()'s errno (0: bound); *id NULL if
 * it could not be made. */
static int
bt_bind(struct rdma_event_channel *ch, struct rdma_cm_id **id, int reuse, int afonly,
	int family, const char *addr, int port)
{
	struct sockaddr_storage ss;

	*id = NULL;
	if (rdma_create_id(ch, id, NULL, RDMA_PS_TCP) != 0) {
		*id = NULL;
		return errno;
	}
	if (rdma_set_option(*id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &reuse,
			    sizeof(reuse)) != 0 ||
	    (afonly >= 0 && rdma_set_option(*id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &afonly,
					    sizeof(afonly)) != 0))
		return errno;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, addr, &s4->sin_addr);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, addr, &s6->sin6_addr);
	}
	return bt_rc(rdma_bind_addr(*id, (struct sockaddr *)&ss));
}

static void
bt_destroy(struct rdma_cm_id **id)
{
	if (*id != NULL)
		rdma_destroy_id(*id);
	*id = NULL;
}

/* The table on ports base..base+BT_PORTS-1 of ip (the device's IPv4
 * address); the number of its checks that failed. */
static int
bind_table(const char *ip, int base)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *a, *b;
	int port = base, first, second, r1, r2, l1, e, want, one = 1, zero = 0;

	bt_fails = 0;
	if (ch == NULL) {
		BT_CHECK(0, "table: rdma_create_event_channel (errno %d)", errno);
		return bt_fails;
	}
	for (first = 0; first < 2; first++)
	for (second = 0; second < 2; second++)
	for (r1 = 0; r1 < 2; r1++)
	for (l1 = 0; l1 < 2; l1++)
	for (r2 = 0; r2 < 2; r2++) {
		const char *fa = first ? ip : "0.0.0.0", *sa = second ? ip : "0.0.0.0";
		char what[160];

		want = first && second ? EADDRINUSE : EADDRNOTAVAIL;
		snprintf(what, sizeof(what), "table port %d: %s (REUSEADDR %d%s), then %s "
			 "(REUSEADDR %d)", port, first ? "S" : "W", r1, l1 ? ", listening" : "",
			 second ? "S" : "W", r2);
		e = bt_bind(ch, &a, r1, -1, AF_INET, fa, port);
		if (e == 0 && l1)
			e = bt_rc(rdma_listen(a, 1));
		BT_CHECK(e == 0, "%s: the first bound%s (%s)", what, l1 ? " and listening" : "",
			 bt_errno(e));
		e = bt_bind(ch, &b, r2, -1, AF_INET, sa, port);
		if (l1 || !(r1 && r2)) {
			BT_CHECK(e == want, "%s: the second's bind %s (want %s: cma_check_port())",
				 what, bt_errno(e), bt_errno(want));
		} else {
			BT_CHECK(e == 0, "%s: the second binds (both REUSEADDR, neither listens) (%s)",
				 what, bt_errno(e));
			e = bt_rc(rdma_listen(b, 1));
			BT_CHECK(e == want, "%s: the second's listen %s while the first is bound "
				 "(want %s: a listener is unique on its port)", what, bt_errno(e),
				 bt_errno(want));
			e = bt_rc(rdma_listen(a, 1));
			BT_CHECK(e == want, "%s: the first's listen %s while the second is bound "
				 "(want %s)", what, bt_errno(e), bt_errno(want));
			bt_destroy(&a);
			e = bt_rc(rdma_listen(b, 1));
			BT_CHECK(e == 0, "%s: the first destroyed, the second listens (%s)", what,
				 bt_errno(e));
		}
		bt_destroy(&a);
		bt_destroy(&b);
		port++;
	}
	/* allowed: different families, both AFONLY (cma_check_port()'s skip) */
	e = bt_bind(ch, &a, 1, -1, AF_INET, "0.0.0.0", port);
	if (e == 0)
		e = bt_bind(ch, &b, 1, 1, AF_INET6, "::", port);
	if (e == 0)
		e = bt_rc(rdma_listen(a, 1));
	if (e == 0)
		e = bt_rc(rdma_listen(b, 1));
	BT_CHECK(e == 0, "table port %d: 0.0.0.0 and :: AFONLY, both REUSEADDR: both listen (%s)",
		 port, bt_errno(e));
	bt_destroy(&a);
	bt_destroy(&b);
	port++;
	e = bt_bind(ch, &a, 1, 1, AF_INET6, "::", port);
	if (e == 0)
		e = bt_bind(ch, &b, 1, -1, AF_INET, ip, port);
	if (e == 0)
		e = bt_rc(rdma_listen(b, 1));
	if (e == 0)
		e = bt_rc(rdma_listen(a, 1));
	BT_CHECK(e == 0, "table port %d: :: AFONLY and %s, both REUSEADDR: both listen (%s)", port,
		 ip, bt_errno(e));
	bt_destroy(&a);
	bt_destroy(&b);
	port++;
	/* refused: :: without AFONLY holds IPv4 too */
	e = bt_bind(ch, &a, 1, 0, AF_INET6, "::", port);
	if (e == 0)
		e = bt_bind(ch, &b, 1, -1, AF_INET, ip, port);
	BT_CHECK(e == 0, "table port %d: :: (AFONLY 0) and %s, both REUSEADDR: bound (%s)", port,
		 ip, bt_errno(e));
	e = bt_rc(rdma_listen(b, 1));
	BT_CHECK(e == EADDRNOTAVAIL, "table port %d: %s's listen beside :: (AFONLY 0) bound: %s "
		 "(want EADDRNOTAVAIL)", port, ip, bt_errno(e));
	bt_destroy(&a);
	bt_destroy(&b);
	port++;
	/* rdma_set_reuseaddr()'s states */
	e = bt_bind(ch, &a, 0, -1, AF_INET, ip, port);
	BT_CHECK(e == 0 && bt_rc(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
						 &one, sizeof(one))) == 0,
		 "table port %d: REUSEADDR set on a bound id: 0", port);
	e = bt_rc(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &zero,
				  sizeof(zero)));
	BT_CHECK(e == EINVAL, "table port %d: REUSEADDR cleared on a bound id: %s (want EINVAL)",
		 port, bt_errno(e));
	e = bt_rc(rdma_listen(a, 1));
	if (e == 0)
		e = bt_rc(rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
					  sizeof(one)));
	BT_CHECK(e == EINVAL, "table port %d: REUSEADDR set on a listener: %s (want EINVAL)",
		 port, bt_errno(e));
	bt_destroy(&a);
	port++;
	_Static_assert(32 + 4 <= BT_PORTS, "the table's ports");
	rdma_destroy_event_channel(ch);
	errno = 0;
	return bt_fails;
}

#endif /* BIND_TABLE_H */
