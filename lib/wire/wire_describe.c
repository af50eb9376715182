/* SPDX-License-Identifier: BSD-3-Clause */
/* One line per packet, as the READ walk reads: opcode, PSN, QP, AETH, ... */
#include <inttypes.h>
#include <stdio.h>

#include "srnic_pkt.h"

static const char *const aeth_type_names[] = { "ACK", "RNR_NAK", "RSVD", "NAK" };

int
srnic_pkt_describe(struct rte_mbuf *m, char *buf, size_t len)
{
	struct srnic_pkt p;
	enum srnic_parse_err e = srnic_pkt_parse(m, &p, 0);
	int n;

	if (e != SRNIC_PARSE_OK)
		return snprintf(buf, len, "%s (%u bytes)", srnic_parse_err_name(e),
				rte_pktmbuf_pkt_len(m));
	n = snprintf(buf, len, "%-30s psn=%-8u qp=%#08x%s pay=%u", srnic_opcode_name(p.opcode),
		     p.psn, p.dqpn, srnic_bth_ackreq(p.bth) ? " ackreq" : "", p.pay_len);
	if (p.mask & SRNIC_OPM_AETH) {
		const uint8_t *a = srnic_pkt_hdr(&p, SRNIC_HDR_AETH);

		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " AETH[%s syn=%#04x msn=%u]",
			      aeth_type_names[srnic_aeth_type(a)], srnic_aeth_syndrome(a),
			      srnic_aeth_msn(a));
	}
	if (p.mask & SRNIC_OPM_RETH) {
		const uint8_t *r = srnic_pkt_hdr(&p, SRNIC_HDR_RETH);

		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " RETH[va=%#" PRIx64 " rkey=%#x len=%u]", srnic_reth_va(r),
			      srnic_reth_rkey(r), srnic_reth_len(r));
	}
	if (p.mask & SRNIC_OPM_ATMETH) {
		const uint8_t *a = srnic_pkt_hdr(&p, SRNIC_HDR_ATMETH);

		n += snprintf(buf + n, len > (size_t)n ? len - n : 0,
			      " AtomicETH[va=%#" PRIx64 " swap_add=%" PRIu64 " cmp=%" PRIu64 "]",
			      srnic_atmeth_va(a), srnic_atmeth_swap_add(a), srnic_atmeth_compare(a));
	}
	if (p.mask & SRNIC_OPM_ATMACK)
		n += snprintf(buf + n, len > (size_t)n ? len - n : 0, " orig=%" PRIu64,
			      srnic_atmack_orig(srnic_pkt_hdr(&p, SRNIC_HDR_ATMACK)));
	return n;
}
