/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ICRC cross-check with an independent implementation: build IPv4 RoCEv2
 * packets with srnic_pkt_init/finish (several opcodes, payload sizes, pad
 * counts, VLAN or not, header-only or external-buffer payload, FECN/BECN
 * and DSCP/ECN set so that the masking matters), write them to a pcap file
 * with srnic_test_pcap_write(), and have test/scripts/scapy_icrc_check.py
 * (scapy.contrib.roce, run by /usr/bin/python3) recompute every ICRC.
 * Then the same file with one ICRC byte wrong must make the script fail:
 * the check can fail. (IPv6 ICRCs are checked against hand-computed
 * vectors in test_wire_golden.c: scapy has no IPv6 ICRC.)
 *
 * Environment (set by meson): SRNIC_SYS_PYTHON, SRNIC_SCAPY_SCRIPT.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rte_mbuf.h>

#include "srnic_wire.h"
#include "test_pcap.h"
#include "wire_util.h"

#define MAX_PKTS 1024

static const char *sys_python, *script;
static struct rte_mempool *trailer_pool;
static struct rte_mbuf_ext_shared_info ext_shinfo;
static uint8_t payload[4096 + 64];
static struct rte_mbuf *pkts[MAX_PKTS];
static unsigned int n_pkts;

static const uint8_t ops[] = {
	SRNIC_OP_RC_SEND_FIRST, SRNIC_OP_RC_SEND_MIDDLE, SRNIC_OP_RC_SEND_LAST_IMM,
	SRNIC_OP_RC_SEND_ONLY, SRNIC_OP_RC_SEND_ONLY_INV, SRNIC_OP_RC_WRITE_FIRST,
	SRNIC_OP_RC_WRITE_LAST, SRNIC_OP_RC_WRITE_ONLY_IMM, SRNIC_OP_RC_READ_REQ,
	SRNIC_OP_RC_READ_RESP_FIRST, SRNIC_OP_RC_READ_RESP_MIDDLE, SRNIC_OP_RC_READ_RESP_ONLY,
	SRNIC_OP_RC_ACK, SRNIC_OP_RC_ATOMIC_ACK, SRNIC_OP_RC_CMP_SWAP, SRNIC_OP_RC_FETCH_ADD,
	SRNIC_OP_UC_SEND_ONLY, SRNIC_OP_UC_WRITE_ONLY, SRNIC_OP_UD_SEND_ONLY,
	SRNIC_OP_UD_SEND_ONLY_IMM, SRNIC_OP_CNP,
};
static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 61, 256, 1021, 4096 };

static struct rte_mbuf *
build(uint8_t op, uint32_t pay_len, bool vlan, bool ext, uint32_t seed)
{
	const struct srnic_opcode_info *info = srnic_opcode_info(op);
	struct srnic_route r;
	struct rte_mbuf *m, *x;
	uint8_t *bth, *d;
	unsigned int h;

	wt_route(&r, 4, vlan);
	r.tclass = (uint8_t)(seed * 37);
	r.ttl = (uint8_t)(1 + seed % 255);
	r.udp_sport = srnic_roce_sport(seed, 0x25);
	m = rte_pktmbuf_alloc(wt_pool());
	assert_non_null(m);
	bth = srnic_pkt_init(m, &r, op, (uint16_t)seed);
	assert_non_null(bth);
	srnic_bth_set_psn(bth, (seed * 2654435761u) & SRNIC_PSN_MASK);
	srnic_bth_set_dqpn(bth, seed * 7919u);
	srnic_bth_set_ackreq(bth, seed & 1);
	srnic_bth_set_se(bth, seed & 2);
	srnic_bth_set_fecn(bth, seed & 4);
	srnic_bth_set_becn(bth, seed & 8);
	/* fill every extension header byte with something non-zero */
	for (h = SRNIC_BTH_LEN; h < info->hdr_len; h++)
		bth[h] = (uint8_t)(seed + h * 29);
	if (ext && pay_len > 0) {
		x = srnic_test_mbuf_ext(wt_pool(), payload + seed % 64, (uint16_t)pay_len,
					&ext_shinfo);
		assert_non_null(x);
		assert_int_equal(rte_pktmbuf_chain(m, x), 0);
	} else if (pay_len > 0) {
		d = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)pay_len);
		assert_non_null(d);
		memcpy(d, payload + seed % 64, pay_len);
	}
	assert_int_equal(srnic_pkt_finish(m, trailer_pool), 0);
	return m;
}

/* Run the checker; returns its exit status, or -1 if it did not exit. */
static int
run_checker(const char *pcap, unsigned int expect)
{
	char cmd[8192];
	int rc;

	snprintf(cmd, sizeof(cmd), "'%s' '%s' --expect %u '%s'", sys_python, script, expect, pcap);
	print_message("%s\n", cmd);
	fflush(stdout);
	rc = system(cmd);
	if (rc == -1 || !WIFEXITED(rc))
		return -1;
	return WEXITSTATUS(rc);
}

struct readback {
	unsigned int idx;
};

static int
readback_cb(const uint8_t *f, uint32_t caplen, uint32_t origlen, void *arg)
{
	struct readback *rb = arg;
	uint8_t *flat;

	assert_true(rb->idx < n_pkts);
	assert_int_equal(caplen, origlen);
	assert_int_equal(caplen, rte_pktmbuf_pkt_len(pkts[rb->idx]));
	flat = malloc(caplen);
	assert_non_null(flat);
	srnic_test_mbuf_flatten(pkts[rb->idx], flat);
	assert_memory_equal(f, flat, caplen);
	free(flat);
	assert_int_equal(wt_parse_flat(f, caplen, 0, NULL), SRNIC_PARSE_OK);
	rb->idx++;
	return 0;
}

static void
test_scapy_icrc(void **state)
{
	char good[] = "/tmp/srnic_scapy_good_XXXXXX.pcap";
	char bad[] = "/tmp/srnic_scapy_bad_XXXXXX.pcap";
	struct readback rb = { 0 };
	unsigned int oi, si, v, seed = 1, i, n_ext = 0;
	int fd, rc;
	FILE *f;

	(void)state;
	for (oi = 0; oi < sizeof(ops); oi++) {
		bool has_pay = srnic_opcode_mask(ops[oi]) & SRNIC_OPM_PAYLOAD;

		for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
			if (!has_pay && sizes[si] != 0)
				continue;
			for (v = 0; v < 4; v++) {
				assert_true(n_pkts < MAX_PKTS);
				pkts[n_pkts] = build(ops[oi], sizes[si], v & 1, v & 2, seed++);
				if (pkts[n_pkts]->nb_segs > 1)
					n_ext++;
				n_pkts++;
			}
		}
	}
	assert_true(n_ext > 0);

	fd = mkstemps(good, 5);
	assert_true(fd >= 0);
	close(fd);
	f = srnic_test_pcap_create(good);
	assert_non_null(f);
	for (i = 0; i < n_pkts; i++)
		assert_int_equal(srnic_test_pcap_write(f, pkts[i]), 0);
	assert_int_equal(fclose(f), 0);

	/* what was written reads back identical (multi-segment mbufs too) */
	assert_int_equal(srnic_test_pcap_foreach(good, readback_cb, &rb), (int)n_pkts);
	assert_int_equal(rb.idx, n_pkts);

	rc = run_checker(good, n_pkts);
	if (rc != 0)
		fail_msg("scapy disagrees with srnic (exit %d); packets kept in %s", rc, good);

	/* one ICRC byte wrong: the checker must notice */
	fd = mkstemps(bad, 5);
	assert_true(fd >= 0);
	close(fd);
	f = srnic_test_pcap_create(bad);
	assert_non_null(f);
	for (i = 0; i < n_pkts; i++) {
		if (i == n_pkts / 2) {
			struct rte_mbuf *last = rte_pktmbuf_lastseg(pkts[i]);
			uint8_t *b = rte_pktmbuf_mtod_offset(last, uint8_t *, last->data_len - 2);

			*b ^= 0x10;
			assert_int_equal(srnic_test_pcap_write(f, pkts[i]), 0);
			*b ^= 0x10;
		} else {
			assert_int_equal(srnic_test_pcap_write(f, pkts[i]), 0);
		}
	}
	assert_int_equal(fclose(f), 0);
	rc = run_checker(bad, n_pkts);
	assert_int_equal(rc, 1);

	unlink(good);
	unlink(bad);
	for (i = 0; i < n_pkts; i++)
		rte_pktmbuf_free(pkts[i]);
	print_message("%u packets (%u with an external-buffer payload) agree with scapy\n",
		      n_pkts, n_ext);
}

static int
group_setup(void **state)
{
	unsigned int i;

	(void)state;
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + (i >> 7));
	srnic_test_ext_shinfo_init(&ext_shinfo);
	trailer_pool = rte_pktmbuf_pool_create("wt_trailer", 1023, 0, 0,
					       RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	return trailer_pool == NULL ? -1 : 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scapy_icrc),
	};

	sys_python = getenv("SRNIC_SYS_PYTHON");
	script = getenv("SRNIC_SCAPY_SCRIPT");
	if (sys_python == NULL || script == NULL) {
		fprintf(stderr, "SRNIC_SYS_PYTHON and SRNIC_SCAPY_SCRIPT must be set (meson does)\n");
		return 1;
	}
	wt_eal_init("wire_scapy");
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
