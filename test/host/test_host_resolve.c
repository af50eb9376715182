/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srnic_dev_resolve_neigh(), what rdma_resolve_addr() needs:
 * two devices that know no neighbour over a net_ring pair, IPv4 (ARP) and
 * IPv6 (neighbour discovery). The first call is -EAGAIN and the next poll
 * of the asking device's engine sends one request (not one per call: at
 * most one per SRNIC_ARP_RETRY_MS); once the peer's answer is in, the call
 * gives the peer's MAC. Static entries and our own address resolve at once
 * with no request; bad GIDs are -EINVAL.
 */
#include <string.h>
#include <netinet/in.h>

#include <rte_arp.h>
#include <rte_cycles.h>

#include "host_util.h"
#include "srnic_param.h"

#define ND_NS 135

static const struct rte_ether_addr mac_a = { { 0x02, 0x00, 0x00, 0x00, 0x1a, 0x01 } };
static const struct rte_ether_addr mac_b = { { 0x02, 0x00, 0x00, 0x00, 0x1b, 0x02 } };
static const struct rte_ether_addr mac_s = { { 0x02, 0x00, 0x00, 0x00, 0x55, 0x05 } };
static const struct rte_ether_addr bcast = { { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };

/* Each family's addresses: A, B, a static entry, nobody. */
struct fam {
	uint8_t ip_ver;
	const char *name;
	uint8_t ip[4][16];
};

enum { IP_A, IP_B, IP_S, IP_N };

static const struct fam fam4 = { 4, "rs4", { { 127, 0, 0, 1 }, { 127, 0, 0, 2 },
					      { 127, 0, 0, 5 }, { 127, 0, 0, 9 } } };
static const struct fam fam6 = { 6, "rs6", {
	{ 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 },
	{ 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb, 2 },
	{ 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x5, 5 },
	{ 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x9, 9 } } };

/* One family at a time (six devices do not fit the tests' 512 MB). */
static struct host_trio T;
static const struct fam *F;

static int
group_setup(const struct fam *f)
{
	static bool eal_up;

	if (!eal_up && host_eal_init("host_resolve", 0, NULL) != 0)
		return -1;
	eal_up = true;
	F = f;
	return host_trio_setup(&T, f->name, f->ip_ver, f->ip[IP_A], f->ip[IP_B], &mac_a, &mac_b);
}

static int
group_setup4(void **state)
{
	RTE_SET_USED(state);
	return group_setup(&fam4);
}

static int
group_setup6(void **state)
{
	RTE_SET_USED(state);
	return group_setup(&fam6);
}

static int
group_teardown(void **state)
{
	RTE_SET_USED(state);
	host_trio_teardown(&T);
	return 0;
}

static union ibv_gid
gid4(const uint8_t *ip)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = 0xff;
	g.raw[11] = 0xff;
	memcpy(&g.raw[12], ip, 4);
	return g;
}

static union ibv_gid
gid6(const uint8_t *ip)
{
	union ibv_gid g;

	memcpy(g.raw, ip, 16);
	return g;
}

/* The GID of address i of the family under test. */
static union ibv_gid
gid(int i)
{
	return F->ip_ver == 4 ? gid4(F->ip[i]) : gid6(F->ip[i]);
}

static int64_t
requests(const struct srnic_engine *eng)
{
	return host_eng_stat(eng, "tx_arp") + host_eng_stat(eng, "tx_nd");
}

/* A resolves B: -EAGAIN, one request at A's next poll however often it
 * asks, B answers, then A's call gives mac_b; B learned A from the
 * request (it was asked), so B resolves A with no request of its own. */
static void
test_resolve_peer(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	union ibv_gid ga = gid(IP_A), gb = gid(IP_B);
	struct rte_ether_addr mac;
	const uint8_t *f;
	uint32_t idx[16], n;
	uint64_t t0;
	int i;

	RTE_SET_USED(state);
	host_cap_reset();
	host_poll_set(eng, 2);
	assert_int_equal(requests(eng[0]), 0);
	t0 = rte_get_timer_cycles();
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &gb, &mac), -EAGAIN);
	assert_int_equal(requests(eng[0]), 0); /* the engine sends it, at its poll */
	for (i = 0; i < 5; i++)
		assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &gb, &mac), -EAGAIN);
	srnic_engine_poll(eng[0]);
	assert_int_equal(requests(eng[0]), 1);
	/* asked again and polled: no second request within the interval */
	for (i = 0; i < 5; i++) {
		assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &gb, &mac), -EAGAIN);
		srnic_engine_poll(eng[0]);
	}
	if (rte_get_timer_cycles() - t0 < rte_get_timer_hz() / 1000 * SRNIC_ARP_RETRY_MS)
		assert_int_equal(requests(eng[0]), 1);

	/* B answers, A learns: the call gives B's MAC */
	HOST_RUN_UNTIL(srnic_dev_resolve_neigh(T.dev[0], &gb, &mac) == 0);
	assert_memory_equal(&mac, &mac_b, 6);
	assert_true(requests(eng[1]) >= 1); /* its answers */
	/* the request B got: from A, for B's address */
	n = host_cap_find(T.port[1], F->ip_ver == 4 ? RTE_ETHER_TYPE_ARP : RTE_ETHER_TYPE_IPV6,
			  idx, RTE_DIM(idx));
	assert_true(n >= 1);
	f = H_cap->f[idx[0]].data;
	assert_memory_equal(f + 6, &mac_a, 6);
	if (F->ip_ver == 4) {
		assert_memory_equal(f, &bcast, 6);
		assert_int_equal(host_be(f + 20, 2), RTE_ARP_OP_REQUEST);
		assert_memory_equal(f + 28, F->ip[IP_A], 4);
		assert_memory_equal(f + 38, F->ip[IP_B], 4);
	} else {
		/* a solicitation for B (target) to its solicited-node group */
		assert_int_equal(f[0], 0x33);
		assert_int_equal(f[14 + 40], ND_NS);
		assert_memory_equal(f + 14 + 8, F->ip[IP_A], 16);
		assert_memory_equal(f + 14 + 40 + 8, F->ip[IP_B], 16);
	}
	/* known now: at once, no request */
	n = (uint32_t)requests(eng[0]);
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &gb, &mac), 0);
	host_settle();
	assert_int_equal(requests(eng[0]), n);
	/* B was asked by A: it knows A */
	n = (uint32_t)requests(eng[1]);
	memset(&mac, 0, sizeof(mac));
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[1], &ga, &mac), 0);
	assert_memory_equal(&mac, &mac_a, 6);
	host_settle();
	assert_int_equal(requests(eng[1]), n);
}

/* Our own address and a static entry: at once, no request; an address
 * nobody has stays -EAGAIN, asked again only SRNIC_ARP_RETRY_MS later
 * however often the caller asks. */
static void
test_resolve_static_self_unanswered(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	union ibv_gid g;
	struct rte_ether_addr mac;
	uint64_t t0, t2, iv = rte_get_timer_hz() / 1000 * SRNIC_ARP_RETRY_MS;
	int64_t r0;

	RTE_SET_USED(state);
	host_poll_set(eng, 2);
	host_settle();
	r0 = requests(eng[0]);
	g = gid(IP_A);
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), 0);
	assert_memory_equal(&mac, &mac_a, 6);
	g = gid(IP_S);
	assert_int_equal(srnic_dev_add_neigh(T.dev[0], &g, &mac_s), 0);
	memset(&mac, 0, sizeof(mac));
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), 0);
	assert_memory_equal(&mac, &mac_s, 6);
	host_settle();
	assert_int_equal(requests(eng[0]), r0);

	/* nobody answers: a request, the next one an interval later */
	g = gid(IP_N);
	t0 = rte_get_timer_cycles();
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), -EAGAIN);
	HOST_RUN_UNTIL(srnic_dev_resolve_neigh(T.dev[0], &g, &mac) == -EAGAIN &&
		       requests(eng[0]) == r0 + 2);
	t2 = rte_get_timer_cycles();
	/* the first ask came after t0, the second an interval after it */
	assert_true(t2 - t0 >= iv);
	assert_true(requests(eng[0]) <= r0 + 1 + (int64_t)((t2 - t0) / iv));
	host_settle();
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), -EAGAIN);
}

/* GIDs no neighbour has: -EINVAL, no request; a group's: its MAC, no request. */
static void
test_resolve_bad(void **state)
{
	static const uint8_t zero[16], bc4[4] = { 255, 255, 255, 255 };
	static const uint8_t mc4[4] = { 224, 0, 0, 1 }, mc6[16] = { 0xff, 0x02, [15] = 1 };
	struct srnic_engine *eng = srnic_dev_engine(T.dev[0], 0);
	struct rte_ether_addr mac;
	union ibv_gid g = gid(IP_B);
	int64_t r0 = requests(eng);

	RTE_SET_USED(state);
	assert_int_equal(srnic_dev_resolve_neigh(NULL, &g, &mac), -EINVAL);
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], NULL, &mac), -EINVAL);
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, NULL), -EINVAL);
	if (F->ip_ver == 4) {
		g = gid4(zero);
		assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), -EINVAL);
		g = gid4(bc4);
		assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), -EINVAL);
		g = gid4(mc4); /* a group's: its MAC at once (01:00:5e + the low 23 bits) */
		assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), 0);
		assert_memory_equal(mac.addr_bytes, ((const uint8_t[6]){ 1, 0, 0x5e, 0, 0, 1 }), 6);
	} else {
		g = gid4(fam4.ip[IP_B]); /* IPv4 on an IPv6 device: no address to ask from */
		assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), -EINVAL);
	}
	/* IPv6 on either device (its link-local GID), but not these */
	g = gid6(zero);
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), -EINVAL);
	g = gid6(mc6); /* 33:33 + the low 32 bits */
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &g, &mac), 0);
	assert_memory_equal(mac.addr_bytes, ((const uint8_t[6]){ 0x33, 0x33, 0, 0, 0, 1 }), 6);
	srnic_engine_poll(eng);
	assert_int_equal(requests(eng), r0);
}

/* A resolves B's link-local GID 0 by neighbour discovery on IPv4 and IPv6
 * devices alike: -EAGAIN, a solicitation from A's fe80:: (the address a
 * link-local target answers) to B's solicited-node group, B's
 * advertisement, then B's MAC. */
static void
test_resolve_link_local(void **state)
{
	struct srnic_engine *eng[2] = { srnic_dev_engine(T.dev[0], 0),
					srnic_dev_engine(T.dev[1], 0) };
	union ibv_gid lla, llb;
	struct rte_ether_addr mac;
	int64_t nd0 = host_eng_stat(eng[0], "tx_nd"), ndb = host_eng_stat(eng[1], "tx_nd");
	uint32_t idx[16], n, i;
	bool seen = false;

	RTE_SET_USED(state);
	assert_int_equal(srnic_dev_gid(T.dev[0], SRNIC_GID_INDEX_LL, &lla), 0);
	assert_int_equal(srnic_dev_gid(T.dev[1], SRNIC_GID_INDEX_LL, &llb), 0);
	host_cap_reset();
	host_poll_set(eng, 2);
	assert_int_equal(srnic_dev_resolve_neigh(T.dev[0], &llb, &mac), -EAGAIN);
	HOST_RUN_UNTIL(srnic_dev_resolve_neigh(T.dev[0], &llb, &mac) == 0);
	assert_memory_equal(&mac, &mac_b, 6);
	assert_true(host_eng_stat(eng[0], "tx_nd") > nd0);
	assert_true(host_eng_stat(eng[1], "tx_nd") > ndb); /* B's advertisement */
	n = host_cap_find(T.port[1], RTE_ETHER_TYPE_IPV6, idx, RTE_DIM(idx));
	for (i = 0; i < n; i++) {
		const uint8_t *f = H_cap->f[idx[i]].data;
		const uint8_t *ip6 = f + RTE_ETHER_HDR_LEN;

		if (ip6[6] != IPPROTO_ICMPV6 || ip6[40] != 135)
			continue;
		assert_memory_equal(ip6 + 8, lla.raw, 16);       /* from A's fe80:: */
		assert_memory_equal(ip6 + 40 + 8, llb.raw, 16);  /* for B's */
		assert_int_equal(ip6[24], 0xff);                 /* solicited-node group */
		assert_memory_equal(ip6 + 24 + 13, llb.raw + 13, 3);
		seen = true;
	}
	assert_true(seen);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve_peer),
		cmocka_unit_test(test_resolve_static_self_unanswered),
		cmocka_unit_test(test_resolve_bad),
		cmocka_unit_test(test_resolve_link_local),
	};
	int rc;

	rc = cmocka_run_group_tests_name("ipv4_arp", tests, group_setup4, group_teardown);
	rc += cmocka_run_group_tests_name("ipv6_nd", tests, group_setup6, group_teardown);
	rte_eal_cleanup();
	return rc;
}
