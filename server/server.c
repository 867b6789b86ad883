/* server: the server object's bring-up (store, merged-push groups, checkpoints, sparse
 * side, enforcement from the plan's priorities, trace), its event loop, the dispatch of
 * the scheduler's messages and the release of ready pull answers onto the (emulated) link
 * in the enforcement module's order. The data port's handlers are in server_data.c. */
#include "common/clock.h"
#include "common/daemon.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node_rejoin.h"
#include "common/transport.h"
#include "core/paramfile.h"
#include "core/plan.h"
#include "server/replica.h"
#include "server/consistency/model.h"
#include "server/pull_codec.h"
#include "server/fence.h"
#include "server/server_internal.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the link counts as free once what it was given ends within this time, so the next
 * response is handed over before the link falls idle (the loop wakes with millisecond
 * timeouts, later on a busy machine); a later higher-priority response can still overtake
 * all but this much */
#define GREEDY_LOOKAHEAD_NS 5000000

/* ---- releasing ready answers ---------------------------------------------------------- */

/* record a release: on track 0 the response's time on the (emulated) link, on track 1 how
 * long the enforcement module held it */
static void trace_release(ordo__server_t *s, const ordo__enforce_release_t *r, int64_t now, int64_t start,
                          int64_t end)
{
    const ordo__slice_t *sl = &s->node.keys->slices[r->slice];
    char name[300], args[640];
    if (s->names && s->names[sl->key])
        snprintf(name, sizeof name, "%s", s->names[sl->key]);
    else
        snprintf(name, sizeof name, "key %u", sl->key);
    if (s->node.keys->n_chunks[sl->key] > 1)
        snprintf(name + strlen(name), sizeof name - strlen(name), " [%u]", sl->chunk);
    snprintf(args, sizeof args,
             "{\"seq\":%llu,\"worker\":%d,\"iter\":%lld,\"key\":%u,\"chunk\":%u,"
             "\"priority\":%d,\"norm\":%d,\"counter\":%lld,\"held\":%d,"
             "\"bytes\":%lld,\"t_ready_ns\":%lld,\"t_release_ns\":%lld,"
             "\"link_start_ns\":%lld,\"link_end_ns\":%lld}",
             (unsigned long long)s->n_released, r->worker, (long long)r->iter, sl->key, sl->chunk,
             s->prio ? s->prio[r->slice] : 0, r->norm, (long long)r->counter, r->held,
             (long long)sl->numel * 4, (long long)r->ready_ns, (long long)now, (long long)start,
             (long long)end);
    ordo__trace_complete(s->trace, name, "release", 0, start, end - start, args);
    if (now - r->ready_ns >= 1000) {
        snprintf(args, sizeof args, "{\"worker\":%d,\"iter\":%lld,\"norm\":%d}", r->worker,
                 (long long)r->iter, r->norm);
        ordo__trace_complete(s->trace, name, "enforce_wait", 1, r->ready_ns, now - r->ready_ns,
                            args);
    }
}

static void release(ordo__server_t *s)
{
    ordo__msg_t r;
    ordo__enforce_release_t info;
    double bps = s->conf.bandwidth_bps;
    for (;;) {
        int64_t now = ordo__clock_ns();
        /* the transport's own figure, or ours when it has not seen the last send yet */
        int64_t busy = ordo__transport_link_free_ns(s->node.tp);
        if (busy < s->link_end_ns) busy = s->link_end_ns;
        bool link_free = bps <= 0 || busy - now <= GREEDY_LOOKAHEAD_NS;
        if (ordo__enforce_next(s->enforce, link_free, &r, &info) != 0) break;
        /* the link model of the transport: header and framing count 64 bytes */
        size_t bytes = 64;
        for (int i = 0; i < r.nframes; i++)
            bytes += zmq_msg_size(&r.frames[i]);
        int64_t start = busy > now ? busy : now;
        int64_t end = bps > 0 ? start + (int64_t)((double)bytes * 8e9 / bps) : start;
        if (bps > 0) s->link_end_ns = end;
        if (s->trace) trace_release(s, &info, now, start, end);
        s->n_released++;
        ordo__transport_send(s->node.tp, &r);
    }
}

/* the update rules the workers declared ([model] trainer = declared): the plan's "updates"
 * holds per key null (the conf's [optimizer]) or {"kind": "sgd", lr, momentum, weight_decay}
 * or {"kind": "average"}; the scheduler checked them, a malformed one still fails here */
static int setup_updates(ordo__server_t *s, const ordo__plan_t *plan)
{
    const ordo__keys_t *k = s->node.keys;
    const ordo__plan_update_t *up = plan->updates;
    int rc = 0, n_sgd = 0, n_avg = 0;
    for (int key = 0; !rc && up && key < k->n_keys; key++) {
        ordo__optim_t opt = {0};
        if (up[key].kind == ORDO__PLAN_UPDATE_CONF) continue;
        if (up[key].kind == ORDO__PLAN_UPDATE_AVERAGE) {
            opt.average = 1;
            n_avg++;
        } else {
            opt.lr = up[key].lr;
            opt.momentum = up[key].momentum;
            opt.weight_decay = up[key].weight_decay;
            if (!n_sgd) {
                s->declared_sgd = opt;
                s->has_declared_sgd = true;
            }
            n_sgd++;
        }
        rc = ordo__store_set_update(s->store, key, &opt);
    }
    if (!rc && up)
        ORDO_INFO("declared update rules: %d sgd, %d average, %d the conf's", n_sgd, n_avg,
                  k->n_keys - n_sgd - n_avg);
    return rc;
}

/* plan priorities per slice (chunks share their key's priority), normalized for us (a plan
 * without priorities: fifo) */
static int setup_enforcement(ordo__server_t *s, const ordo__plan_t *plan)
{
    const ordo__keys_t *k = s->node.keys;
    int mode = ORDO_ENFORCE_MODE_FIFO, round = 0;
    int *norm = NULL, *srv = NULL;
    for (int i = 0; i < k->n_slices; i++)
        round += k->slices[i].server == s->node.rank;
    if (!s->names && plan->params) {
        s->names = calloc((size_t)k->n_keys, sizeof *s->names);
        for (int i = 0; s->names && i < k->n_keys; i++)
            s->names[i] = strdup(plan->params[i]);
    }
    if (plan->priorities) {
        mode = ordo__conf_enforce_mode(&s->conf);
        s->prio = malloc(sizeof *s->prio * (size_t)k->n_slices);
        norm = malloc(sizeof *norm * (size_t)k->n_slices);
        srv = malloc(sizeof *srv * (size_t)k->n_slices);
        for (int i = 0; i < k->n_slices; i++) {
            s->prio[i] = plan->priorities[k->slices[i].key];
            srv[i] = k->slices[i].server;
        }
        ordo__enforce_normalize(s->prio, srv, k->n_slices, s->node.rank, norm);
    }
    int rc = ordo__enforce_new(mode, s->node.n_workers, k->n_slices, norm, round, &s->enforce);
    if (!rc) rc = ordo__enforce_set_share(s->enforce, s->conf.share);
    free(norm);
    free(srv);
    ORDO_INFO("enforcement: %s, %s share of the link",
              mode == ORDO_ENFORCE_MODE_FIFO ? "fifo (no priority plan)"
              : mode == ORDO_ENFORCE_STRICT  ? "strict"
                                             : "greedy",
              s->conf.share == ORDO_SHARE_SERIAL ? "serial" : "fair");
    return rc;
}

/* [fault] resume: the momentum from the run folder's checkpoint (the values come from worker
 * 0); [fault] checkpoint_every: this server's part of each checkpoint, counted from there
 * (sparse runs: the sparse side's, server/sparse_srv.h) */
static int setup_checkpoints(ordo__server_t *s)
{
    int64_t base = 0;
    int rc = 0;
    if (s->conf.resume[0]) {
        char path[ORDO_CONF_PATH + 32]; /* the one worker 0 resumes from too */
        rc = ordo__paramfile_newest(s->conf.resume, path, sizeof path, &base);
        s->resume_base = base;
        if (!rc && !s->sparse)
            rc = ordo__srv_ckpt_load(s->store, s->node.keys, s->node.rank, s->conf.resume, base);
        if (rc) return ordo__error_context(rc, "fault.resume");
    }
    if (s->sparse) { /* the sparse side keeps its region's momentum itself */
        rc = ordo__sparse_srv_checkpoints(s->sparse, s->conf.checkpoint_every, base, s->node.run_dir,
                                         s->conf.resume[0] ? s->conf.resume : NULL);
        return rc ? ordo__error_context(rc, "fault.resume") : 0;
    }
    return ordo__srv_ckpt_new(s->store, s->node.keys, s->node.rank, s->conf.checkpoint_every, base,
                             s->node.run_dir, &s->ckpt);
}


/* ---- bring-up and tear-down --------------------------------------------------------- */

/* free_parts frees what ordo__server_new made (not the node nor its transport) */
static void free_parts(ordo__server_t *s)
{
    ordo__trace_destroy(&s->trace);
    ordo__pull_codec_destroy(&s->pull_codec);
    if (s->names)
        for (int i = 0; i < s->node.keys->n_keys; i++)
            free(s->names[i]);
    free(s->names);
    s->names = NULL;
    ordo__probe_free(&s->probe);
    ordo__enforce_destroy(&s->enforce);
    if (s->waiting)
        for (int i = 0; i < s->node.keys->n_slices; i++)
            free(s->waiting[i].w);
    free(s->waiting);
    s->waiting = NULL;
    free(s->prio);
    s->prio = NULL;
    ordo__merged_destroy(&s->merged);
    ordo__replica_destroy(&s->repl);
    ordo__sparse_srv_destroy(&s->sparse);
    ordo__srv_ckpt_destroy(&s->ckpt);
    ordo__srv_fence_destroy(&s->fence);
    ordo__store_destroy(&s->store);
}

/* the plan's "intra" member (scheduler/runplan_intra.h): a group of local_size workers sums
 * its gradients before one of them pushes, so the store counts one pusher per group */
static int intra_pushers(ordo__server_t *s, const ordo__plan_t *plan)
{
    int L = plan->has_intra ? plan->intra.local_size : 1;
    s->local_size = L > 1 && s->node.n_workers % L == 0 ? L : 1;
    if (s->local_size > 1)
        ORDO_INFO("intra groups of %d workers: %d pushers per slice", L, s->node.n_workers / L);
    return s->node.n_workers / s->local_size;
}

int ordo__server_new(const ordo__conf_t *conf, ordo__node_t *node, int data_sock,
                    ordo__server_t **out)
{
    ordo__server_t *s = calloc(1, sizeof *s);
    if (!s) return ORDO_ERR_NOMEM;
    s->conf = *conf;
    s->node = *node; /* moved back on failure; the sparse side keeps &s->node */
    s->data_sock = data_sock;
    int rc, present = s->node.n_workers;
    ordo__plan_t *plan = NULL;
    /* [fault] max_workers: room for the workers that may join (ordo-launch --add-worker) */
    if (ordo__conf_max_workers(conf) > present) s->node.n_workers = ordo__conf_max_workers(conf);
    ordo__optim_t opt = {.lr = (float)conf->lr,
                        .momentum = (float)conf->momentum,
                        .weight_decay = (float)conf->weight_decay};
    /* the mean is over the pushes an update takes: every worker (a host group pushes the sum
     * of its members'), W - backup with backup workers, and under asp each push is one
     * update scaled as one W-th of the mean */
    const ordo__sync_model_t *model = ordo__sync_model_of(conf->sync_mode, conf->backup);
    int taken = s->node.n_workers - (model && model->backup ? conf->backup : 0);
    float scale = conf->aggregate == ORDO_AGG_MEAN ? 1.0f / (float)taken : 1.0f;
    if ((rc = ordo__pull_codec_new(s->node.keys->n_slices, &s->pull_codec)) != 0) goto fail;
    /* the plan, read once (core/plan.h); its text goes once the server is made */
    const char *text = s->node.plan_json;
    rc = ordo__plan_parse(text, text ? strlen(text) : 0, s->node.keys->n_keys, s->node.n_servers,
                          &plan);
    if (rc) goto fail;
    if ((rc = ordo__store_new(s->node.keys, s->node.rank, intra_pushers(s, plan), &opt, scale,
                             &s->store)) != 0)
        goto fail;
    if ((rc = setup_updates(s, plan)) != 0) goto fail;
    if ((rc = ordo__store_set_sync(s->store, conf->sync_mode, conf->staleness, conf->backup)) != 0)
        goto fail;
    /* the places of workers that may join stay empty until they do (a run that can grow has
     * no host groups: one pusher per worker) */
    if (s->node.n_workers > present &&
        (rc = ordo__store_set_members(s->store, present, conf->aggregate == ORDO_AGG_MEAN)) != 0)
        goto fail;
    /* a restarted worker pushes again what its predecessor may have pushed */
    if (conf->fault_worker == ORDO_FAULT_RESTART &&
        (rc = ordo__store_set_resend(s->store, true)) != 0)
        goto fail;
    if ((rc = ordo__merged_new(s->node.keys, s->node.rank, &s->merged)) != 0) goto fail;
    /* sparse servers run one SGD: the workers' declared one (all the same, the scheduler
     * checked), else the conf's [optimizer] */
    ordo__conf_t sparse_conf = s->conf;
    if (s->has_declared_sgd) {
        sparse_conf.lr = s->declared_sgd.lr;
        sparse_conf.momentum = s->declared_sgd.momentum;
        sparse_conf.weight_decay = s->declared_sgd.weight_decay;
    }
    if ((rc = ordo__sparse_srv_new(&s->node, &sparse_conf, plan, s->data_sock, &s->sparse)) != 0)
        goto fail;
    if ((rc = setup_checkpoints(s)) != 0) goto fail;
    s->waiting = calloc((size_t)s->node.keys->n_slices, sizeof *s->waiting);
    if (!s->waiting) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    if ((rc = setup_enforcement(s, plan)) != 0) goto fail;
    if ((rc = ordo__replica_new(s, &s->repl)) != 0) goto fail;
    s->replication = s->repl ? &ordo__replication_primary_backup : &ordo__replication_none;
    if (conf->trace) {
        char name[64];
        snprintf(name, sizeof name, "server %d", s->node.rank);
        if ((rc = ordo__trace_new(name, 100 + s->node.rank, &s->trace)) != 0) goto fail;
        ordo__trace_name_track(s->trace, 0, "released pull responses (on the link)");
        ordo__trace_name_track(s->trace, 1, "enforcement waits");
    }
    ordo__plan_destroy(&plan);
    free(s->node.plan_json);
    s->node.plan_json = NULL;
    memset(node, 0, sizeof *node);
    *out = s;
    return 0;
fail:
    ordo__plan_destroy(&plan);
    free_parts(s);
    free(s);
    return rc;
}

void ordo__server_destroy(ordo__server_t **p)
{
    ordo__server_t *s = p ? *p : NULL;
    if (!s) return;
    ordo__enforce_destroy(&s->enforce); /* held answers first, then what the transport holds */
    ordo__transport_destroy(&s->node.tp, s->end_rc ? 0 : 1000);
    free_parts(s);
    ordo__node_fini(&s->node);
    free(s);
    *p = NULL;
}

void ordo__server_get_stats(const ordo__server_t *s, ordo__server_stats_t *out)
{
    out->pushes = s->n_push;
    out->pulls = s->n_pull;
    out->dropped = s->n_refused;
    out->late = ordo__store_dropped(s->store);
    out->probes = s->probe.n;
    out->released = s->n_released;
    out->shard_bytes = (uint64_t)ordo__store_bytes(s->store);
}

/* ---- the event loop ------------------------------------------------------------------- */

/* ", N calibration probes" for the shutdown line when there were any, else "" */
static const char *probes_note(const ordo__server_t *s, char *buf, size_t size)
{
    if (!s->probe.n) return "";
    snprintf(buf, size, ", %llu calibration probes", (unsigned long long)s->probe.n);
    return buf;
}

/* ", N states sent to backups, N re-sent pushes recognised, primary of N slices holding N
 * updates" with replicas, else "": the updates are each slice's update count (bsp: its
 * version; asp: the pushes applied), so that a test can tell none was lost or applied twice */
static const char *repl_note(const ordo__server_t *s, char *buf, size_t size)
{
    uint64_t sent, dup;
    if (!s->repl) return "";
    ordo__replica_stats(s->repl, &sent, &dup);
    const ordo__keys_t *k = s->node.keys;
    long long primary = 0, updates = 0;
    for (int i = 0; i < k->n_slices; i++)
        if (k->slices[i].server == s->node.rank && ordo__store_owns(s->store, i)) {
            primary++;
            updates += ordo__store_seq(s->store, i);
        }
    snprintf(buf, size, ", %llu states sent to backups, %llu re-sent pushes already in, primary "
             "of %lld slices holding %lld updates", (unsigned long long)sent,
             (unsigned long long)dup, primary, updates);
    return buf;
}

/* apply_replan switches the enforcement to a collective re-plan's priorities (the workers
 * wait for it with nothing in flight, so nothing is held) and acknowledges it to the
 * scheduler, with {"error"} when it could not */
static int apply_replan(ordo__server_t *s, ordo__msg_t *m)
{
    size_t len = 0;
    const char *d = ordo__msg_data(m, 0, &len);
    ordo__plan_t *plan = NULL;
    int rc = d ? ordo__plan_parse(d, len, s->node.keys->n_keys, s->node.n_servers, &plan)
               : ordo__error_set(ORDO_ERR_PROTO, "a REPLAN without a plan");
    if (!rc && ordo__enforce_pending(s->enforce))
        rc = ordo__error_set(ORDO_ERR_PROTO, "%d pull responses still held",
                            ordo__enforce_pending(s->enforce));
    if (!rc) {
        ordo__enforce_destroy(&s->enforce);
        free(s->prio);
        s->prio = NULL;
        rc = setup_enforcement(s, plan);
    }
    ordo__plan_destroy(&plan);
    ordo__msg_t ack;
    ordo__msg_init(&ack, ORDO_MSG_REPLAN);
    ack.hdr.dtype = ORDO_DTYPE_JSON;
    json_t *o = rc ? json_pack("{s:s}", "error", ordo__error_text(rc)) : json_object();
    char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
    ordo__msg_add_text(&ack, body ? body : "{}");
    free(body);
    json_decref(o);
    if (rc)
        ORDO_ERROR("replan: %s", ordo__error_text(rc));
    else
        ORDO_INFO("replan: switched to the new plan's priorities");
    return ordo__node_send_ctl(&s->node, &ack) == 0 && !rc && s->enforce ? 0 : ORDO_ERR_ABORT;
}

/* log_dropped writes what this server refused, by reason, in one line */
static void log_dropped(ordo__server_t *s)
{
    char reasons[16][ORDO_DROP_REASON_LEN], line[1024];
    uint64_t counts[16];
    int n = ordo__transport_dropped(s->node.tp, reasons, counts, 16), len = 0;
    line[0] = '\0';
    for (int i = 0; i < n && len < (int)sizeof line - 80; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, "%s%s: %llu", i ? ", " : "",
                        reasons[i], (unsigned long long)counts[i]);
    if (n) ORDO_INFO("dropped messages by reason: %s", line);
}

/* at shutdown: the updates the store applied over its slices (the fencing test counts
 * them) and the messages of fenced workers refused (server/fence.h) */
static void log_updates(ordo__server_t *s)
{
    const ordo__keys_t *k = s->node.keys;
    long long updates = 0;
    int held = 0;
    for (int i = 0; k && i < k->n_slices; i++)
        if (ordo__store_owns(s->store, i)) {
            updates += (long long)ordo__store_version(s->store, i);
            held++;
        }
    ORDO_INFO("shutdown: %lld updates applied over %d slices, %llu messages of fenced workers "
              "refused", updates, held, (unsigned long long)ordo__srv_fence_refused(s->fence));
}

/* ---- the scheduler's messages: one handler per type, found in ON_CTL; each returns 0 to go
 * on, 1 to stop, ORDO_ERR_ABORT to abort ------------------------------------------------ */

static int on_plan(ordo__server_t *s, ordo__msg_t *m)
{
    if (s->sparse) ordo__sparse_srv_on_ctl(s->sparse, m);
    return 0;
}

static int on_shutdown(ordo__server_t *s, ordo__msg_t *m)
{
    char buf[512], buf2[256];
    (void)m;
    log_dropped(s);
    ORDO_INFO("shutdown: %llu pushes, %llu pulls, %llu dropped%s, %llu late pushes left out, "
              "%llu re-sent pushes left out%s", (unsigned long long)s->n_push,
              (unsigned long long)s->n_pull, (unsigned long long)s->n_refused,
              probes_note(s, buf, sizeof buf), (unsigned long long)ordo__store_dropped(s->store),
              (unsigned long long)ordo__store_resent(s->store), repl_note(s, buf2, sizeof buf2));
    log_updates(s);
    return 1;
}

static int on_abort(ordo__server_t *s, ordo__msg_t *m)
{
    char buf[512];
    (void)s;
    ORDO_ERROR("run aborted by the scheduler: %s", ordo__msg_text(m, 0, buf, sizeof buf));
    return ORDO_ERR_ABORT;
}

/* members: the workers that left the run ("left", fault.worker = shrink) and those that
 * joined it ("joined": [rank, iteration] pairs, fault.max_workers), as this store has them,
 * and the heartbeat id of each worker's newest connection ("beats", 0: none) */
static void members(const ordo__server_t *s, json_t *o)
{
    json_t *left = json_array(), *joined = json_array(), *beats = json_array();
    for (int w = 0; w < s->node.n_workers; w++) {
        json_array_append_new(beats, json_integer((json_int_t)ordo__srv_fence_beat(s->fence, w)));
        int64_t at = 0;
        int st = ordo__store_member(s->store, w, &at);
        if (st == ORDO_STORE_MEMBER_LEFT) json_array_append_new(left, json_integer(w));
        if (st == ORDO_STORE_MEMBER_JOINED)
            json_array_append_new(joined, json_pack("[i,I]", w, (json_int_t)at));
    }
    json_object_set_new(o, "left", left);
    json_object_set_new(o, "joined", joined);
    json_object_set_new(o, "beats", beats);
}

/* rejoin_state: what this server tells a new scheduler (common/node_rejoin.h): the newest
 * and the oldest version of its slices, counted from the start of the run, under asp each
 * worker's push clock (the iteration of its next push, the newest over the slices), and
 * the workers that left or joined the run */
static json_t *rejoin_state(const ordo__server_t *s)
{
    const ordo__keys_t *k = s->node.keys;
    int64_t newest = -1, oldest = INT64_MAX;
    json_t *clocks = NULL;
    for (int i = 0; i < k->n_slices; i++) {
        if (!ordo__store_owns(s->store, i)) continue;
        if (ordo__store_version(s->store, i) > newest) newest = ordo__store_version(s->store, i);
        if (ordo__store_version(s->store, i) < oldest) oldest = ordo__store_version(s->store, i);
        const int64_t *c = ordo__store_clocks(s->store, i);
        if (!c) continue;
        if (!clocks) {
            clocks = json_array();
            for (int w = 0; w < s->node.n_workers; w++)
                json_array_append_new(clocks, json_integer(-1));
        }
        for (int w = 0; w < s->node.n_workers; w++) {
            int64_t v = s->resume_base + c[ordo__server_pusher(s, w)];
            if (v > json_integer_value(json_array_get(clocks, (size_t)w)))
                json_array_set_new(clocks, (size_t)w, json_integer(v));
        }
    }
    json_t *o = json_pack("{s:I,s:I}", "version",
                          (json_int_t)(newest < 0 ? -1 : s->resume_base + newest), "oldest",
                          (json_int_t)(newest < 0 || oldest < 0 ? -1 : s->resume_base + oldest));
    if (o && clocks) json_object_set_new(o, "clocks", clocks);
    else json_decref(clocks);
    if (o) members(s, o);
    return o;
}

/* send_version answers a new scheduler's WELCOME with this server's version now (STATS) */
static int send_version(ordo__server_t *s)
{
    json_t *o = rejoin_state(s);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) return ORDO_ERR_NOMEM;
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_STATS);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    ordo__msg_add_text(&m, text);
    free(text);
    return ordo__node_send_ctl(&s->node, &m);
}

static int on_peer_dead(ordo__server_t *s, ordo__msg_t *m)
{
    char buf[512];
    if (m->nframes > 0) { /* the transport's reason: a handshake was refused */
        ORDO_ERROR("%s: giving up", ordo__msg_text(m, 0, buf, sizeof buf));
        return ORDO_ERR_ABORT;
    }
    /* fault.scheduler = restart: go on and register with a new one (common/node_rejoin.h) */
    if (ordo__node_sched_lost(&s->node, m->hdr.iter, rejoin_state(s)) == 0) return 0;
    ORDO_ERROR("the scheduler is silent for %lld ms: giving up", (long long)m->hdr.iter);
    return ORDO_ERR_ABORT;
}

/* a new scheduler's refusal (fault.scheduler = restart) */
static int on_reject(ordo__server_t *s, ordo__msg_t *m)
{
    int rc = ordo__node_on_reject(&s->node, m);
    if (rc) ORDO_ERROR("%s", ordo__error_text(rc));
    return rc ? ORDO_ERR_ABORT : 0;
}

/* a new scheduler's WELCOME (fault.scheduler = restart): answered with the version now, which
 * the scheduler checks the workers against */
static int on_welcome(ordo__server_t *s, ordo__msg_t *m)
{
    int rc = ordo__node_on_rejoined(&s->node, m, NULL);
    if (!rc) rc = send_version(s);
    if (rc) ORDO_ERROR("%s", ordo__error_text(rc));
    return rc ? ORDO_ERR_ABORT : 0;
}

/* the scheduler's messages by type; a type without a row is ignored */
static int (*const ON_CTL[ORDO_MSG_TYPE_MAX])(ordo__server_t *s, ordo__msg_t *m) = {
    [ORDO_MSG_PLAN] = on_plan,
    [ORDO_MSG_REPLAN] = apply_replan,
    [ORDO_MSG_MEMBERS] = ordo__server_on_members,
    [ORDO_MSG_KEYMAP] = ordo__replica_on_keymap, /* a server died (server/replica.h) */
    [ORDO_MSG_SHUTDOWN] = on_shutdown,
    [ORDO_MSG_ABORT] = on_abort,
    [ORDO_MSG_PEER_DEAD] = on_peer_dead,
    [ORDO_MSG_REJECT] = on_reject,
    [ORDO_MSG_WELCOME] = on_welcome,
};

/* on_ctl takes a message from the scheduler */
static int on_ctl(ordo__server_t *s, ordo__msg_t *m)
{
    if (m->hdr.type >= ORDO_MSG_TYPE_MAX || !ON_CTL[m->hdr.type]) return 0;
    return ON_CTL[m->hdr.type](s, m);
}

int ordo__server_handle(ordo__server_t *s, ordo__msg_t *m)
{
    int rc = 0;
    if (m->sock == s->data_sock)
        ordo__server_on_data(s, m);
    else if (ordo__replica_is_peer(s->repl, m->sock))
        ordo__replica_on_server_msg(s, m);
    else
        rc = on_ctl(s, m);
    if (rc < 0) s->end_rc = rc;
    if (rc == 0) release(s);
    return rc;
}

/* loop_timeout: how long the loop may wait for a message; with answers held for a busy
 * emulated link, until the link is about to be free */
static int loop_timeout(ordo__server_t *s)
{
    int timeout = s->conf.heartbeat_ms;
    if (ordo__enforce_pending(s->enforce) && s->conf.bandwidth_bps > 0) {
        int64_t busy = ordo__transport_link_free_ns(s->node.tp);
        if (busy < s->link_end_ns) busy = s->link_end_ns;
        int64_t wait = busy - GREEDY_LOOKAHEAD_NS - ordo__clock_ns();
        timeout = wait <= 0 ? 0 : (int)(wait / 1000000) + 1;
        if (timeout > s->conf.heartbeat_ms) timeout = s->conf.heartbeat_ms;
    }
    return timeout;
}

int ordo__server_run(ordo__server_t *s)
{
    int rc = 0;
    ordo__msg_t m;
    while (ordo__node_take_early(&s->node, &m) == 0) {
        ordo__server_on_data(s, &m);
        ordo__msg_close(&m);
    }
    release(s);
    for (;;) {
        if (ordo__daemon_stop_signal()) {
            ORDO_WARN("interrupted");
            rc = ORDO_ERR_ABORT;
            break;
        }
        if ((rc = ordo__node_sched_check(&s->node)) != 0) {
            ORDO_ERROR("%s", ordo__error_text(rc));
            rc = ORDO_ERR_ABORT;
            break;
        }
        if (ordo__transport_recv(s->node.tp, &m, loop_timeout(s)) == 0) {
            rc = ordo__server_handle(s, &m);
            ordo__msg_close(&m);
            if (rc) break;
        } else {
            release(s);
        }
    }
    rc = rc < 0 ? rc : 0;
    s->end_rc = rc;
    if (s->trace) {
        char path[ORDO_CONF_PATH + 64];
        snprintf(path, sizeof path, "%s/trace-server-%d.json", s->node.run_dir, s->node.rank);
        int trc = ordo__trace_write(s->trace, path);
        if (trc) ORDO_ERROR("%s", ordo__error_text(trc));
    }
    return rc;
}
