/* replan: the collective re-plan of a running cluster, gathered like a barrier. */
#include "scheduler/replan.h"
#include "common/error.h"
#include "common/log.h"
#include "scheduler/replan_model.h"
#include "scheduler/runplan.h"
#include "scheduler/runplan_merge.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ordo__replan {
    ordo__conf_t conf;
    char run_dir[ORDO_CONF_PATH + ORDO_CONF_STR + 64];
    ordo_replan_send_fn send;
    void *ctx;
    bool *arrived; /* per worker: its REPLAN of this round is in */
    int n_arrived;
    char *profile; /* worker 0's profile text, when it sent one */
    size_t profile_len;
    json_t *names;   /* worker 0's tensor names */
    char *plan_text; /* the new plan, while the servers acknowledge it */
    int n_acks;
    int n_done; /* re-plans completed */
    const ordo__model_t *declared; /* the declared tensors (occasional marks), or NULL */
    int64_t slice_bytes;          /* the start-up's slices (the key map is cut with them) */
    json_t *next_plan;            /* the plan being switched to, with its model */
    ordo__model_t *next_model;
    json_t *last_plan; /* the plan of the last completed re-plan (NULL: none yet) */
    ordo__model_t *last_model;
};

void ordo__replan_set_slice(ordo__replan_t *r, int64_t slice_bytes)
{
    r->slice_bytes = slice_bytes;
}

int ordo__replan_count(const ordo__replan_t *r)
{
    return r->n_done;
}

json_t *ordo__replan_last_plan(const ordo__replan_t *r)
{
    return r->last_plan;
}

const ordo__model_t *ordo__replan_last_model(const ordo__replan_t *r)
{
    return r->last_model;
}

void ordo__replan_set_declared(ordo__replan_t *r, const ordo__model_t *declared)
{
    r->declared = declared;
}

int ordo__replan_new(const ordo__conf_t *conf, const char *run_dir, ordo_replan_send_fn send,
                    void *ctx, ordo__replan_t **out)
{
    ordo__replan_t *r = calloc(1, sizeof *r);
    if (!r || !(r->arrived = calloc((size_t)conf->workers, sizeof *r->arrived))) {
        free(r);
        return ORDO_ERR_NOMEM;
    }
    r->conf = *conf;
    snprintf(r->run_dir, sizeof r->run_dir, "%s", run_dir);
    r->send = send;
    r->ctx = ctx;
    *out = r;
    return 0;
}

/* reset ends the round: the next REPLAN starts a new one */
static void reset(ordo__replan_t *r)
{
    memset(r->arrived, 0, sizeof *r->arrived * (size_t)r->conf.workers);
    r->n_arrived = 0;
    free(r->profile);
    r->profile = NULL;
    r->profile_len = 0;
    json_decref(r->names);
    r->names = NULL;
    free(r->plan_text);
    r->plan_text = NULL;
    r->n_acks = 0;
    json_decref(r->next_plan);
    r->next_plan = NULL;
    ordo__model_destroy(&r->next_model);
}

void ordo__replan_destroy(ordo__replan_t **p)
{
    ordo__replan_t *r = p ? *p : NULL;
    if (!r) return;
    reset(r);
    json_decref(r->last_plan);
    ordo__model_destroy(&r->last_model);
    free(r->arrived);
    free(r);
    *p = NULL;
}

/* refuse answers every worker with the reason the round failed; the run goes on */
static void refuse(ordo__replan_t *r, int rc)
{
    const char *why = ordo__error_text(rc);
    ORDO_WARN("replan refused: %s", why);
    json_t *o = json_pack("{s:s,s:i}", "error", why, "code", rc);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (text) r->send(r->ctx, ORDO_ROLE_WORKER, text);
    free(text);
    json_decref(o);
    reset(r);
}

/* plan computes the new plan from worker 0's profile into *out (JSON text) */
static int plan(ordo__replan_t *r, const ordo__keys_t *keys, char **out)
{
    if (r->conf.push_mode == ORDO_PUSH_SPARSE)
        return ordo__error_set(ORDO_ERR_NOTSUP,
                              "[push] mode = sparse: the sparse regions are fixed at "
                              "start-up; re-planning needs [push] mode = dense or merged");
    if (r->conf.push_mode == ORDO_PUSH_MERGED && r->conf.calibrate)
        return ordo__error_set(ORDO_ERR_NOTSUP,
                              "[push] calibrate = true: the merge groups come from the "
                              "start-up calibration; re-planning needs calibrate = false");
    if (!r->profile) return ordo__error_set(ORDO_ERR_INVAL, "worker 0 passed no profile");
    int n = keys->n_keys, rc = 0;
    if (!json_is_array(r->names) || (int)json_array_size(r->names) != n)
        return ordo__error_set(ORDO_ERR_PROTO, "worker 0 named %d tensors, the cluster has %d",
                              (int)json_array_size(r->names), n);
    const char **names = calloc((size_t)n, sizeof *names);
    ordo__model_t *m = NULL;
    json_t *p = NULL;
    if (!names) return ORDO_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        names[i] = json_string_value(json_array_get(r->names, (size_t)i));
    rc = ordo__replan_model_match(r->profile, r->profile_len, names, keys->numel, n, "float32", &m);
    for (int t = 0; !rc && r->declared && t < n && t < r->declared->n_params; t++)
        m->params[t].occasional = r->declared->params[t].occasional;
    /* the profile's measured times are the truth: no oracle file, no compute scaling */
    ordo__conf_t c = r->conf;
    c.oracle[0] = '\0';
    c.compute_scale = 1.0;
    /* the key map's slices stay those of the start-up; the push credit is tuned again on the
     * profile's measured compute (with the start-up's slices), when it is auto */
    if (ordo__conf_step_tuned(&c)) {
        c.segment_bytes = r->slice_bytes > 0 ? r->slice_bytes : 0;
        if (r->slice_bytes <= 0) c.credit_bytes = 0;
    }
    if (!rc) rc = ordo__runplan_make(&c, m, keys, &p);
    /* the merge plan's ordo-merge/1 text is for the start-up's run folder only */
    if (!rc) json_object_del(json_object_get(p, "merge"), ORDO_RUNPLAN_MERGE_FILE_MEMBER);
    if (!rc && !(*out = json_dumps(p, JSON_COMPACT))) rc = ORDO_ERR_NOMEM;
    if (!rc) {
        char path[sizeof r->run_dir + 32];
        snprintf(path, sizeof path, "%s/replan-%d.json", r->run_dir, r->n_done + 1);
        if (json_dump_file(p, path, JSON_INDENT(1)) != 0) ORDO_WARN("cannot write %s", path);
        /* the profile it was planned from, for ordo-plan simulate offline */
        snprintf(path, sizeof path, "%s/replan-%d-profile.json", r->run_dir, r->n_done + 1);
        FILE *f = fopen(path, "w");
        if (!f || fwrite(r->profile, 1, r->profile_len, f) != r->profile_len)
            ORDO_WARN("cannot write %s", path);
        if (f) fclose(f);
        ORDO_INFO("replan %d: planned from worker 0's profile '%s' (%d ops), policy %s",
                  r->n_done + 1, m->name, m->n_ops, r->conf.policy);
        json_decref(r->next_plan);
        ordo__model_destroy(&r->next_model);
        r->next_plan = json_incref(p);
        r->next_model = m;
        m = NULL;
    }
    json_decref(p);
    ordo__model_destroy(&m);
    free(names);
    return rc;
}

/* on_worker gathers the workers; when all are in, plans and sends the plan to the servers */
static void on_worker(ordo__replan_t *r, const ordo__keys_t *keys, int rank, ordo__msg_t *m)
{
    if (rank < 0 || rank >= r->conf.workers || r->arrived[rank] || r->plan_text) {
        ORDO_WARN("dropped REPLAN from worker %d (%s)", rank,
                  r->plan_text ? "the servers are switching to the last plan"
                               : "it is already waiting for this one");
        return;
    }
    if (rank == 0) {
        size_t len = 0;
        const char *d = ordo__msg_data(m, 0, &len);
        json_error_t err;
        r->names = d ? json_loadb(d, len, 0, &err) : NULL;
        d = ordo__msg_data(m, 1, &len);
        if (d && (r->profile = malloc(len + 1)) != NULL) {
            memcpy(r->profile, d, len);
            r->profile[len] = '\0';
            r->profile_len = len;
        }
    }
    r->arrived[rank] = true;
    if (++r->n_arrived < r->conf.workers) return;
    char *text = NULL;
    int rc = plan(r, keys, &text);
    if (rc) {
        refuse(r, rc);
        return;
    }
    r->plan_text = text;
    r->n_acks = 0;
    r->send(r->ctx, ORDO_ROLE_SERVER, text);
}

/* on_server counts the acknowledgements; the last one releases the workers */
static int on_server(ordo__replan_t *r, int rank, ordo__msg_t *m)
{
    char body[600];
    ordo__msg_text(m, 0, body, sizeof body);
    if (!r->plan_text) {
        ORDO_WARN("dropped an unexpected REPLAN acknowledgement from server %d", rank);
        return 0;
    }
    json_t *o = json_loads(body, 0, NULL);
    const char *err = json_string_value(json_object_get(o, "error"));
    int rc =
        err ? ordo__error_set(ORDO_ERR_PROTO, "replan: server %d could not switch: %s", rank, err) : 0;
    json_decref(o);
    if (rc) {
        reset(r);
        return rc;
    }
    if (++r->n_acks < r->conf.servers) return 0;
    r->send(r->ctx, ORDO_ROLE_WORKER, r->plan_text);
    r->n_done++;
    json_decref(r->last_plan);
    ordo__model_destroy(&r->last_model);
    r->last_plan = r->next_plan;
    r->last_model = r->next_model;
    r->next_plan = NULL;
    r->next_model = NULL;
    ORDO_INFO("replan %d: every server switched; workers released", r->n_done);
    reset(r);
    return 0;
}

int ordo__replan_on_msg(ordo__replan_t *r, const ordo__keys_t *keys, int role, int rank, ordo__msg_t *m)
{
    if (role == ORDO_ROLE_SERVER) return on_server(r, rank, m);
    if (role == ORDO_ROLE_WORKER && keys) on_worker(r, keys, rank, m);
    return 0;
}
