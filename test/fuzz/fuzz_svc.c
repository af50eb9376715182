/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target: srnicd's control protocol, the daemon's own message
 * handling (app/srnicd/session.c: svc_msg_check(), then serve()) with no
 * socket in between, against two real srnic devices, srnic0 on a net_ring0
 * port and srnic1 on net_ring1, as a daemon of two ports (EAL brought up
 * once, --no-huge, its own --file-prefix): OPEN_DEVICE 1 opens the second,
 * so a session's objects of both devices meet (dev_mixed).
 *
 * The input is records `ctl (1 byte), length (1 byte), message`: each
 * message goes to the current session, a new one if the last was closed.
 * ctl bit 0: the header's len is set to the record's length (so inputs
 * get past the length check to the body), bit 1: a new session gets a
 * valid HELLO first (so inputs reach the verbs behind it), bit 2: the
 * message is zero-padded to its type's request size and len set to it (so
 * a record of at most 255 bytes reaches every message, SVC_CM_SEND's 488
 * among them). A record cut short by the input's end goes as what is left.
 * Each device has its CM (lib/cm on QP1), so the SVC_CM_* messages reach
 * it: ids made, listened, sent on and destroyed, as a session's.
 *
 * Checked, besides ASan/UBSan: every message the daemon answers gets a
 * reply that passes the client's own check (svc_msg_check() as a reply)
 * with the request's type and seq; a reply to OPEN_DEVICE with status 0
 * carries a handle the next QUERY_DEVICE accepts; a closed session is
 * never answered.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "srnic.h"
#include "srnic_cm.h"
#include "srnic_svc.h"
#include "srnicd.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_MSGS 64
/* the daemon's devices: srnic0 on net_ring0, srnic1 on net_ring1 */
#define FZ_DEVS 2

static struct srnd D;

static void
fz_die(const char *what)
{
	fprintf(stderr, "fuzz_svc: %s\n", what);
	abort();
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static char prefix[64];
	char *eal[] = { "fuzz_svc", prefix, "--no-shconf", "--no-huge", "-m256", "-l0",
			"--no-pci", "--no-telemetry", "--log-level=error", "--vdev=net_ring0",
			"--vdev=net_ring1", NULL };
	struct srnic_dev_conf dc;
	unsigned int i;
	uint16_t port;

	(void)argc;
	(void)argv;
	snprintf(prefix, sizeof(prefix), "--file-prefix=srnic-fzsvc-%d", (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])) - 1, eal) < 0)
		fz_die("EAL did not start");
	for (i = 0; i < FZ_DEVS; i++) {
		struct srnd_dev *dv = &D.dev[i];

		snprintf(dv->devargs, sizeof(dv->devargs), "net_ring%u", i);
		snprintf(dv->name, sizeof(dv->name), "srnic%u", i);
		snprintf(dv->ip, sizeof(dv->ip), "10.80.0.%u", i + 1);
		if (rte_eth_dev_get_port_by_name(dv->devargs, &port) != 0)
			fz_die("no net_ring port");
		memset(&dc, 0, sizeof(dc));
		dc.port_id = port;
		dc.nb_engines = 1;
		dc.ip_ver = 4;
		dc.ip[0] = 10, dc.ip[1] = 80, dc.ip[3] = (uint8_t)(i + 1);
		dc.name = dv->name;
		dv->sdev = srnic_dev_create(&dc);
		if (dv->sdev == NULL)
			fz_die("no device");
		dv->eng = srnic_dev_engine(dv->sdev, 0);
		dv->cm = srnic_cm_create(dv->sdev, dv->eng);
		if (dv->cm == NULL)
			fz_die("no CM");
		dv->idx = i;
		dv->port_id = port;
		dv->link_up = -1;
	}
	D.nb_devs = FZ_DEVS;
	snprintf(D.sock_path, sizeof(D.sock_path), "(fuzz)");
	D.listen_fd = -1;
	D.eng_lcore = RTE_MAX_LCORE;
	return 0;
}

static struct srnd_session *
fz_session(bool hello, uint32_t *seq)
{
	struct srnd_session *s = srnd_session_new(-1);
	struct svc_hello_req q;
	static union srnd_rep rep;

	if (s == NULL)
		fz_die("no memory for a session");
	if (!hello)
		return s;
	svc_hello_init(&q, ++*seq, "fuzz_svc");
	if (srnd_session_input(&D, s, &q, sizeof(q), &rep) != NULL || rep.h.status != 0)
		fz_die("a valid HELLO refused");
	return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static union srnd_rep rep;
	uint8_t msg[SRND_REQ_MAX + 1];
	struct srnd_session *s = NULL;
	struct svc_hdr q, r;
	const char *why, *cwhy;
	uint32_t seq = 0;
	unsigned int nmsg = 0;
	size_t off = 0, n;
	uint8_t ctl;

	while (off + 2 <= size && nmsg++ < FZ_MAX_MSGS) {
		ctl = data[off];
		n = data[off + 1];
		off += 2;
		if (n > size - off)
			n = size - off;
		memset(msg, 0, sizeof(msg));
		memcpy(msg, data + off, n);
		off += n;
		if ((ctl & 1) != 0 && n >= sizeof(q)) {
			memcpy(&q, msg, sizeof(q));
			q.len = (uint32_t)n;
			memcpy(msg, &q, sizeof(q));
		}
		if ((ctl & 4) != 0 && n >= sizeof(q)) {
			size_t full;

			memcpy(&q, msg, sizeof(q));
			full = svc_msg_size(q.type, 0);
			if (full >= n && full <= SRND_REQ_MAX) {
				n = full;
				q.len = (uint32_t)n;
				memcpy(msg, &q, sizeof(q));
			}
		}
		if (s == NULL)
			s = fz_session((ctl & 2) != 0, &seq);
		why = srnd_session_input(&D, s, msg, n, &rep);
		if (why != NULL) {
			/* closed: the next record opens another session */
			srnd_session_free(s);
			s = NULL;
			continue;
		}
		memcpy(&q, msg, sizeof(q));
		memcpy(&r, &rep, sizeof(r));
		if (svc_msg_check(&rep, r.len, 1, &cwhy) != 0) {
			fprintf(stderr, "fuzz_svc: reply to type %u fails the client's check: %s\n",
				q.type, cwhy);
			abort();
		}
		if (r.type != q.type || r.seq != q.seq)
			fz_die("a reply of another type or seq");
		if (r.type == SVC_OPEN_DEVICE && r.status == 0) {
			struct svc_handle_req hq;
			uint32_t h = rep.handle.handle;

			memset(&hq, 0, sizeof(hq));
			svc_msg_init(&hq, SVC_QUERY_DEVICE, 0, 1, 0);
			hq.handle = h;
			if (srnd_session_input(&D, s, &hq, sizeof(hq), &rep) != NULL ||
			    rep.h.status != 0)
				fz_die("a handle OPEN_DEVICE gave is refused");
		}
		if (r.type == SVC_HELLO && r.status != 0) {
			/* the daemon closes after this reply */
			srnd_session_free(s);
			s = NULL;
		}
	}
	if (s != NULL)
		srnd_session_free(s);
	return 0;
}
