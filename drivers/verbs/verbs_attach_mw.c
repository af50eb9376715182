/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows attached (doc/srnicd.md, section 9): ibv_alloc_mw and
 * ibv_dealloc_mw are control messages (ALLOC_MW, DEALLOC_MW); a window is
 * bound and invalidated through the QP's SQ ring as any send WQE
 * (IBV_WR_BIND_MW, IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV: the daemon's
 * engine hands them to srnic, whose checks are the embedded ones).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "srnic_svc.h"
#include "verbs.h"
#include "verbs_attach.h"

static struct ibv_mw *
sva_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct svc_alloc_mw_req q;
	struct svc_alloc_mw_rep r;
	struct sva_mw *mw;
	int rc;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_ALLOC_MW, 0, 0, 0);
	q.pd = (uint32_t)ibpd->handle;     /* sva_alloc_pd's: the daemon's handle */
	q.type = (uint32_t)type;
	rc = sva_call_fd(sva_ctx(ibpd->context), &q, -1, &r, sizeof(r), NULL);
	if (rc != 0) {
		free(mw);
		errno = -rc;
		return NULL;
	}
	mw->handle = r.handle;
	mw->ibmw.context = ibpd->context;
	mw->ibmw.pd = ibpd;
	mw->ibmw.rkey = r.rkey;
	mw->ibmw.handle = r.handle;
	mw->ibmw.type = type;
	return &mw->ibmw;
}

static int
sva_dealloc_mw(struct ibv_mw *ibmw)
{
	struct sva_mw *mw = (struct sva_mw *)((char *)ibmw - offsetof(struct sva_mw, ibmw));
	struct sva_context *ctx = sva_ctx(ibmw->context);
	struct svc_handle_req q;
	struct svc_handle_rep r;
	int rc;

	memset(&q, 0, sizeof(q));
	svc_msg_init(&q, SVC_DEALLOC_MW, 0, 0, 0);
	q.handle = mw->handle;
	rc = -sva_call_fd(ctx, &q, -1, &r, sizeof(r), NULL);
	if (rc == EIO && sva_dead(ctx))
		rc = 0;     /* the session's end freed it (verbs_is_destroy_err) */
	if (rc == 0)
		free(mw);
	return rc;
}

void
sva_ctx_set_mw_ops(struct sva_context *ctx)
{
	ctx->vctx.context.ops.alloc_mw = sva_alloc_mw;
	ctx->vctx.context.ops.dealloc_mw = sva_dealloc_mw;
	ctx->vctx.context.ops.bind_mw = sv_bind_mw;  /* through sva_post_send */
}
