/* ps_join: a worker joining the cluster and leaving it: registration and the data
 * connections to every server (common/node.h), the start-up calibration of merged pushes
 * ([push] calibrate), the push credit the plan chose, the push path the plan names, and the
 * teardown of all of it. The data path and the messages are ps.c's. */
#include "client/ps.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node.h"
#include "client/calibrate.h"
#include "client/intra.h"
#include "client/push.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ps_internal.h"






/* intra_choice: what this worker takes for intra.backend = auto: the backend its own conf
 * names, else what auto means for its tensors' device (client/intra.h) */
static const char *intra_choice(const ordo__conf_t *conf)
{
    if (conf->intra_backend == ORDO_INTRA_SHM) return "shm";
    if (conf->intra_backend == ORDO_INTRA_NCCL) return "nccl";
    return ordo__intra_auto(conf->intra_device);
}

/* [push] calibrate = true: the plan holds a "merge_calibrate" member instead of "merge". Every
 * worker measures (client/calibrate.h), worker 0 sends the fit to the scheduler, and every
 * worker waits for the scheduler's PLAN with the merge groups, which joins the plan. */
static int calibrate_at_start(ordo__ps_t *w, ordo__ps_op_times_fn op_times, void *ctx)
{
    if (!w->plan->has_calibrate) return 0;
    ordo__calibrate_opts_t o = {.reps = w->plan->calibrate_reps,
                               .max_bytes = w->plan->calibrate_max_bytes,
                               .link_bps = w->conf.bandwidth_bps};
    ordo__calibration_t cal;
    w->want_plan = true;
    int rc = ordo__calibrate_measure(w, &o, &cal);
    if (!rc && w->node.rank == 0) {
        char *ops = NULL;
        if (op_times) rc = op_times(ctx, &ops);
        if (!rc) rc = ordo__calibrate_send(w, &cal, ops);
        free(ops);
    }
    int64_t deadline = ordo__clock_ns() + (int64_t)w->conf.startup_ms * 1000000;
    while (!rc && !w->merge_plan) { /* the scheduler plans and answers, or aborts the run */
        int64_t left = (deadline - ordo__clock_ns()) / 1000000;
        if (left <= 0) {
            rc = ordo__error_set(ORDO_ERR_TIMEDOUT, "no merge plan from the scheduler within %d ms "
                                "of the calibration", w->conf.startup_ms);
            break;
        }
        ordo__ps_event_t ev;
        rc = ordo__ps_poll(w, (int)left, &ev);
        if (rc == ORDO_ERR_TIMEDOUT) rc = 0;
    }
    w->want_plan = false;
    if (!rc) ordo__plan_take_merge(w->plan, w->merge_plan);
    ordo__plan_destroy(&w->merge_plan);
    return rc;
}

int ordo__ps_new(const ordo__conf_t *conf, ordo__ps_t **out)
{
    return ordo__ps_join(conf, NULL, NULL, NULL, out);
}

int ordo__ps_join(const ordo__conf_t *conf, const char *tensors, ordo__ps_op_times_fn op_times,
                  void *ctx, ordo__ps_t **out)
{
    int rc;
    ordo__ps_t *w = calloc(1, sizeof *w);
    if (!w) return ORDO_ERR_NOMEM;
    w->conf = *conf;
    w->msgs = ordo__ps_msgs; /* ps_msgs.c: the messages it takes */
    w->state_iter = -1;
    ordo__credit_init(&w->credit, ordo__conf_credit_bytes(conf), conf->bandwidth_bps);
    ordo__transport_opts_t opts = {.bandwidth_bps = conf->bandwidth_bps,
                                  .latency_us = conf->latency_us,
                                  .msg_us = conf->msg_us,
                                  .role = ORDO_ROLE_WORKER,
                                  .rank = -1,
                                  .inline_io = !conf->io_thread};
    ordo__transport_opts_conf(&opts, conf);
    if ((rc = ordo__transport_new(&opts, &w->node.tp)) != 0) goto fail;
    w->node.reg_tensors = tensors;
    w->intra = intra_choice(conf);
    w->node.reg_intra = w->intra;
    rc = ordo__node_join(&w->node, conf, ORDO_ROLE_WORKER, NULL);
    w->node.reg_tensors = NULL;
    if (rc || (rc = ordo__ps_read_plan(w)) != 0) goto fail;
    const ordo__keys_t *k = w->node.keys;
    w->server_sock = calloc((size_t)w->node.n_servers, sizeof *w->server_sock);
    w->ks = calloc((size_t)k->n_keys + 1, sizeof *w->ks);
    w->got = calloc((size_t)k->n_slices + 1, 1);
    w->sent = calloc((size_t)k->n_slices + 1, 1);
    w->repull = calloc((size_t)k->n_slices + 1, 1);
    w->last = calloc((size_t)k->n_slices + 1, sizeof *w->last);
    w->init_val = calloc((size_t)k->n_slices + 1, sizeof *w->init_val);
    if (!w->server_sock || !w->ks || !w->got || !w->sent || !w->repull || !w->last ||
        !w->init_val) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    rc = ordo__compress_new(conf, k, tensors, w->plan, w->node.n_workers, k->n_slices,
                            &w->compress);
    if (rc) goto fail;
    if (conf->fault_worker == ORDO_FAULT_RESTART && ordo__compress_any(w->compress)) {
        /* the residuals outlive the process for the one restarted with its rank */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/residuals-worker-%d", w->node.run_dir, w->node.rank);
        if ((rc = ordo__compress_keep(w->compress, dir, w->node.rejoin_iter)) != 0) goto fail;
    }
    for (int s = 0; s < w->node.n_servers; s++) {
        rc = ordo__transport_connect(w->node.tp, w->node.server_endpoints[s], 1);
        if (rc < 0) goto fail;
        w->server_sock[s] = rc;
        ordo__msg_t m;
        ordo__msg_init(&m, ORDO_MSG_HELLO);
        m.sock = rc;
        m.hdr.role = ORDO_ROLE_WORKER;
        m.hdr.rank = w->node.rank;
        m.hdr.req = ordo__transport_heartbeat_id(w->node.tp); /* this process: server/fence.h */
        if ((rc = ordo__transport_send(w->node.tp, &m)) != 0) goto fail;
    }
    /* pushes are dense until the plan is final: a calibration brings the merge groups */
    const ordo__push_ops_t *ops;
    if ((rc = ordo__push_ops_for(ORDO_PUSH_DENSE, &ops)) != 0 ||
        (rc = ordo__push_new(ops, w, &w->path)) != 0)
        goto fail;
    if ((rc = calibrate_at_start(w, op_times, ctx)) != 0) goto fail;
    ordo__ps_credit_from_plan(w);
    /* the path is the scheduler's plan's; a worker whose own conf asks for sparse pushes
     * (ordo.torch's Compression.oktopk reads it) would otherwise push dense without a word */
    if (w->conf.push_mode == ORDO_PUSH_SPARSE && !w->plan->has_sparse) {
        rc = ordo__error_set(ORDO_ERR_INVAL,
                             "this worker's conf has push.mode = sparse, but the scheduler's plan "
                             "has no sparse path (the scheduler's push.mode differs): start every "
                             "process with the same [push] mode");
        goto fail;
    }
    ordo__push_ops_of_plan(w->plan, &ops);
    ordo__push_destroy(&w->path);
    if ((rc = ordo__push_new(ops, w, &w->path)) != 0) goto fail;
    *out = w;
    return 0;
fail:
    ordo__ps_destroy(&w);
    return rc;
}

void ordo__ps_destroy(ordo__ps_t **wp)
{
    ordo__ps_t *w = *wp;
    if (!w) return;
    /* the path's own threads post to the transport: they end first */
    if (w->path && w->path->ops->stop) w->path->ops->stop(w->path);
    ordo__transport_destroy(&w->node.tp, w->aborted ? 0 : 1000);
    for (int i = 0; w->init_val && w->node.keys && i < w->node.keys->n_slices; i++)
        free(w->init_val[i]);
    free(w->init_val);
    ordo__compress_destroy(&w->compress);
    ordo__node_fini(&w->node);
    free(w->server_sock);
    free(w->ks);
    free(w->got);
    free(w->sent);
    free(w->repull);
    free(w->last);
    free(w->pq);
    free(w->ev);
    ordo__push_destroy(&w->path);
    ordo__plan_destroy(&w->merge_plan);
    ordo__plan_destroy(&w->plan);
    free(w->replan_reply);
    free(w->batch_idx);
    free(w->batch_spec);
    free(w->state);
    free(w->state_got);
    ordo__ps_rejoin_free(w);
    free(w);
    *wp = NULL;
}
