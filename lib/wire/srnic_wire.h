/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SRNIC_WIRE_H
#define SRNIC_WIRE_H

/**
 * @file
 * The RoCEv2 wire layer: header accessors, the opcode table, PSN arithmetic,
 * ICRC, parse and build. No engine state: usable by tools and tests alone.
 */

#include "srnic_hdr.h"
#include "srnic_opcode.h"
#include "srnic_psn.h"
#include "srnic_pkt.h"

#endif /* SRNIC_WIRE_H */
