/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_ENGINE_H
#define SRNIC_ENGINE_H

/*
 * The engine as the control path (lib/core, the floor above) sees it:
 * create and destroy an engine, ring a QP's doorbell, bury a QP, the ACK
 * timeout's encoding. The neighbour table's calls are in neigh.h. What the
 * engine's own files share is eng_internal.h. Not installed.
 */

#include "rnic.h"

/* Local ACK timeout (IBTA 9.7.6.1.3): 4.096 us * 2^code in timer cycles;
 * code 0 is infinite (returns 0). */
uint64_t srnic_ack_timeout_cycles(uint8_t code);
/* Tell the QP's engine it has work (post, state change). Any thread. */
void srnic_qp_doorbell(struct srnic_qp *qp);
/* Hand a destroyed QP (no longer reachable by lookup, engines quiesced)
 * to its engine, which unlinks and frees it. */
void srnic_engine_bury_qp(struct srnic_engine *eng, struct srnic_qp *qp);
struct srnic_engine *srnic_engine_create(struct srnic_dev *dev, uint16_t index);
void srnic_engine_destroy(struct srnic_engine *eng);

#endif /* SRNIC_ENGINE_H */
