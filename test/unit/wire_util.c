/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reference code for the wire tests, written from ROCEV2.md and IBTA
 * Annex A17.3.3 without using lib/wire's CRC, masking or layout code.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include "test_eal.h"
#include "test_pcap.h"
#include "test_ref.h"
#include "wire_util.h"

uint32_t
wt_ref_icrc(const uint8_t *l3, uint32_t len, int ip_ver)
{
	assert_true(len >= srnic_ref_icrc_hdr_len(ip_ver));
	return srnic_ref_icrc(l3, len, ip_ver);
}

void
wt_route(struct srnic_route *r, int ip_ver, bool vlan)
{
	static const uint8_t smac[6] = { 0x02, 0x00, 0x00, 0x77, 0x00, 0x10 };
	static const uint8_t dmac[6] = { 0x52, 0x54, 0x0a, 0x4d, 0x00, 0x02 };
	static const uint8_t sip6[16] = { 0xfd, 0x00, 0x00, 0x77, 0, 0, 0, 0,
					  0, 0, 0, 0, 0, 0, 0, 0x10 };
	static const uint8_t dip6[16] = { 0xfd, 0x00, 0x00, 0x77, 0, 0, 0, 0,
					  0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0x02 };

	memset(r, 0, sizeof(*r));
	memcpy(&r->src_mac, smac, 6);
	memcpy(&r->dst_mac, dmac, 6);
	r->has_vlan = vlan;
	r->vlan_tci = vlan ? 0x6123 : 0;   /* PCP 3, VID 0x123 */
	r->ip_ver = (uint8_t)ip_ver;
	r->ttl = 64;
	r->tclass = 0x6a;                  /* DSCP 26, ECN 10 (ECT(0)) */
	r->flow_label = 0xabcde;
	r->udp_sport = 0xc123;
	if (ip_ver == 4) {
		static const uint8_t s4[4] = { 10, 77, 0, 10 }, d4[4] = { 10, 77, 0, 2 };

		memcpy(r->src_ip, s4, 4);
		memcpy(r->dst_ip, d4, 4);
	} else {
		memcpy(r->src_ip, sip6, 16);
		memcpy(r->dst_ip, dip6, 16);
	}
}

bool
wt_layout_of(const uint8_t *f, uint32_t len, struct wt_layout *lo)
{
	uint32_t off = 14;
	uint16_t et;

	if (len < 14)
		return false;
	et = (uint16_t)wt_be(f + 12, 2);
	if (et == 0x8100) {
		if (len < 18)
			return false;
		et = (uint16_t)wt_be(f + 16, 2);
		off = 18;
	}
	lo->l3 = off;
	if (et == 0x0800) {
		lo->ip_ver = 4;
		lo->l4 = off + 20;
	} else if (et == 0x86dd) {
		lo->ip_ver = 6;
		lo->l4 = off + 40;
	} else {
		return false;
	}
	lo->bth = lo->l4 + 8;
	return true;
}

void
wt_fix_ipcsum(uint8_t *f)
{
	struct wt_layout lo = { 0 };
	uint32_t sum = 0;
	uint8_t *ip;
	int i;

	if (!wt_layout_of(f, 64, &lo) || lo.ip_ver != 4)
		return;
	ip = f + lo.l3;
	ip[10] = ip[11] = 0;
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = (uint8_t)(sum >> 8);
	ip[11] = (uint8_t)sum;
}

void
wt_refresh(uint8_t *f, uint32_t len)
{
	struct wt_layout lo = { 0 };
	uint32_t icrc;

	assert_true(wt_layout_of(f, len, &lo));
	wt_fix_ipcsum(f);
	assert_true(len >= lo.bth + 12 + 4);
	icrc = wt_ref_icrc(f + lo.l3, len - 4 - lo.l3, lo.ip_ver);
	f[len - 4] = (uint8_t)icrc;
	f[len - 3] = (uint8_t)(icrc >> 8);
	f[len - 2] = (uint8_t)(icrc >> 16);
	f[len - 1] = (uint8_t)(icrc >> 24);
}

struct rte_mempool *
wt_pool(void)
{
	struct rte_mempool *mp = srnic_test_pool();

	assert_non_null(mp);
	return mp;
}

#define WT_MAX_SEGS 16

enum srnic_parse_err
wt_parse_segs(const uint8_t *f, uint32_t len, const uint32_t *seg_lens, unsigned int n,
	      unsigned int flags, struct srnic_pkt *out)
{
	static struct rte_mbuf_ext_shared_info shinfo;
	static bool shinfo_ready;
	uint8_t *bufs[WT_MAX_SEGS + 1];
	struct rte_mbuf *m = NULL, *s;
	struct srnic_pkt p;
	enum srnic_parse_err e;
	uint32_t off = 0, sl, ip_end;
	unsigned int i, nb = 0;

	assert_true(n <= WT_MAX_SEGS);
	if (!shinfo_ready) {
		srnic_test_ext_shinfo_init(&shinfo);
		shinfo_ready = true;
	}
	for (i = 0; i <= n; i++) {
		if (i < n) {
			sl = seg_lens[i];
			assert_true(sl <= len - off);
		} else {
			sl = len - off;
			if (sl == 0 && m != NULL)
				break;
		}
		bufs[nb] = malloc(sl > 0 ? sl : 1);
		assert_non_null(bufs[nb]);
		memcpy(bufs[nb], f + off, sl);
		s = srnic_test_mbuf_ext(wt_pool(), bufs[nb], (uint16_t)sl, &shinfo);
		assert_non_null(s);
		nb++;
		if (m == NULL)
			m = s;
		else
			assert_int_equal(rte_pktmbuf_chain(m, s), 0);
		off += sl;
	}
	assert_int_equal(rte_pktmbuf_pkt_len(m), len);

	memset(&p, 0, sizeof(p));
	e = srnic_pkt_parse(m, &p, flags);
	assert_true((unsigned int)e < SRNIC_PARSE_ERR_COUNT);
	assert_non_null(srnic_parse_err_name(e));
	if (e == SRNIC_PARSE_OK) {
		/* the parse result must describe bytes that exist */
		assert_ptr_equal(p.mbuf, m);
		assert_true(p.ip_ver == 4 || p.ip_ver == 6);
		assert_true(p.l3_off < p.l4_off && p.l4_off < p.bth_off && p.bth_off < p.pay_off);
		assert_ptr_equal(p.bth, rte_pktmbuf_mtod_offset(m, uint8_t *, p.bth_off));
		assert_true(p.mask != 0 && p.mask == srnic_opcode_mask(p.opcode));
		assert_true(p.pad <= 3);
		ip_end = (uint32_t)p.pay_off + p.pay_len + p.pad + 4;
		assert_true(ip_end <= len);
		if (p.pay_len > 0) {
			uint8_t *d = malloc(p.pay_len);

			assert_non_null(d);
			srnic_pkt_copy_payload(&p, 0, d, p.pay_len);
			assert_memory_equal(d, f + p.pay_off, p.pay_len);
			free(d);
		}
		if (!(flags & SRNIC_PARSE_F_NO_ICRC))
			assert_int_equal(srnic_icrc_compute(m, p.l3_off, ip_end - 4 - p.l3_off,
							    p.ip_ver),
					 wt_le32(f + ip_end - 4));
	}
	rte_pktmbuf_free(m);
	for (i = 0; i < nb; i++)
		free(bufs[i]);
	if (out != NULL) {
		*out = p;
		out->mbuf = NULL; /* freed: only the decoded fields stay valid */
		out->bth = NULL;
	}
	return e;
}

enum srnic_parse_err
wt_parse_flat(const uint8_t *f, uint32_t len, unsigned int flags, struct srnic_pkt *out)
{
	return wt_parse_segs(f, len, NULL, 0, flags, out);
}

void
wt_eal_init(const char *name)
{
	int rc = srnic_test_eal_init(name, 0, NULL);

	if (rc != 0) {
		fprintf(stderr, "%s: EAL init failed: %d\n", name, rc);
		exit(1);
	}
	if (srnic_test_pool() == NULL) {
		fprintf(stderr, "%s: no mbuf pool\n", name);
		exit(1);
	}
}
