/* api: the public C API (include/ordo/ordo.h) over the worker's push/pull library
 * (client/ps.h). It holds the conf until the program joins, checks the program's declared
 * tensors against the cluster's key map, numbers each tensor's updates so that pushes and
 * pulls need no iteration argument, and turns ordo__ps_poll's completion events into
 * handles a program waits on or tests. */
#include "ordo/ordo.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/conf.h"
#include "common/codec.h"
#include "common/error.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/trace.h"
#include "client/api_internal.h"
#include "client/bound.h"
#include "client/ps.h"
#include "client/push.h"
#include "core/plan.h"

/* ---- errors ---------------------------------------------------------------------------- */

const char *ordo_last_error(void)
{
    return ordo__error_detail();
}

const char *ordo_version(void)
{
    return ORDO_VERSION;
}

/* ordo__api_fail returns rc with a message: the detail already set, else the code's text. */
int ordo__api_fail(int rc)
{
    if (rc && !ordo__error_detail()[0]) ordo__error_set(rc, "%s", ordo_strerror(rc));
    return rc;
}

/* ordo__api_cluster_failed remembers a failure of the cluster, which every later call returns. */
int ordo__api_cluster_failed(ordo_t *o, int rc)
{
    if (!o->failed) {
        o->failed = rc;
        snprintf(o->failed_msg, sizeof o->failed_msg, "%s", ordo__error_text(rc));
    }
    return ordo__error_set(o->failed, "%s", o->failed_msg);
}

/* ordo__api_usable checks that o is joined and healthy. */
int ordo__api_usable(ordo_t *o, const char *fn)
{
    ordo__error_clear();
    if (!o) return ordo__error_set(ORDO_ERR_INVAL, "%s: NULL handle", fn);
    if (o->failed) return ordo__error_set(o->failed, "%s", o->failed_msg);
    if (o->state == NEW) return ordo__error_set(ORDO_ERR_INVAL, "%s: call ordo_join first", fn);
    if (o->state == LEFT) return ordo__error_set(ORDO_ERR_CLOSED, "%s: this worker left", fn);
    return 0;
}

int ordo__api_check_tensor(const ordo_t *o, int tensor, const char *fn)
{
    if (tensor < 0 || tensor >= o->n_tensors)
        return ordo__error_set(ORDO_ERR_NOTFOUND, "%s: no tensor %d (there are %d)", fn, tensor,
                              o->n_tensors);
    return 0;
}

/* ---- joining and leaving --------------------------------------------------------------- */

int ordo_new(const char *conf_path, ordo_t **out)
{
    ordo__error_clear();
    if (!out) return ordo__api_fail(ORDO_ERR_INVAL);
    ordo_t *o = calloc(1, sizeof *o);
    if (!o) return ordo__api_fail(ORDO_ERR_NOMEM);
    ordo__conf_defaults(&o->conf);
    o->conf.io_thread = true;
    o->rank = o->size = o->servers = -1;
    int rc;
    if (!conf_path) {
        const char *env = getenv("ORDO_CONF");
        if (env && env[0]) conf_path = env;
    }
    if (conf_path && (rc = ordo__conf_load_file(&o->conf, conf_path)) != 0) goto fail;
    if ((rc = ordo__conf_apply_env(&o->conf)) != 0) goto fail;
    *out = o;
    return 0;
fail:
    free(o);
    return ordo__api_fail(rc);
}

int ordo_set(ordo_t *o, const char *key, const char *value)
{
    ordo__error_clear();
    if (!o || !key || !value) return ordo__error_set(ORDO_ERR_INVAL, "ordo_set: NULL argument");
    if (o->state != NEW)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_set %s: the conf is fixed once joined", key);
    return ordo__api_fail(ordo__conf_set(&o->conf, key, value, "ordo_set"));
}

/* add_tensor appends a tensor (name copied). */
static int add_tensor(ordo_t *o, const char *name, int64_t numel)
{
    if (o->n_tensors == o->cap_tensors) {
        int cap = o->cap_tensors ? 2 * o->cap_tensors : 16;
        tensor_t *t = realloc(o->t, sizeof *t * (size_t)cap);
        if (!t) return ORDO_ERR_NOMEM;
        o->t = t;
        o->cap_tensors = cap;
    }
    char *copy = strdup(name);
    if (!copy) return ORDO_ERR_NOMEM;
    int idx = o->n_tensors++;
    o->t[idx] = (tensor_t){.name = copy,
                           .numel = numel,
                           .version = 0,
                           .push_op = -1,
                           .pull_op = -1,
                           .priority = idx,
                           .update = {.kind = ORDO_UPDATE_CONF}};
    return 0;
}

int ordo_declare(ordo_t *o, const char *name, int64_t numel, int *tensor)
{
    ordo__error_clear();
    if (!o || !name) return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare: NULL argument");
    if (o->state != NEW)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare \"%s\": declare before ordo_join", name);
    if (numel <= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare \"%s\": %lld elements (must be > 0)", name,
                              (long long)numel);
    int rc = add_tensor(o, name, numel);
    if (rc) return ordo__api_fail(rc);
    if (tensor) *tensor = o->n_tensors - 1;
    return 0;
}

/* match_keys checks the declared tensors against the cluster's key map, or adopts the
 * cluster's tensors when none were declared. */
static int match_keys(ordo_t *o, const ordo__keys_t *k)
{
    if (o->n_tensors == 0) {
        for (int key = 0; key < k->n_keys; key++) {
            char name[32];
            snprintf(name, sizeof name, "tensor%d", key);
            int rc = add_tensor(o, name, k->numel[key]);
            if (rc) return rc;
        }
        return 0;
    }
    if (o->n_tensors != k->n_keys)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "the program declared %d tensors, the cluster's model has %d "
                              "([model] in its conf)",
                              o->n_tensors, k->n_keys);
    for (int i = 0; i < o->n_tensors; i++)
        if (o->t[i].numel != k->numel[i])
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "tensor %d \"%s\": declared %lld elements, the cluster's "
                                  "tensor %d has %lld ([model] in its conf)",
                                  i, o->t[i].name, (long long)o->t[i].numel, i,
                                  (long long)k->numel[i]);
    return 0;
}

/* declarations_json writes the declared tensors as the REGISTER's "tensors" array: name,
 * numel and, when declared, the update rule; *out is malloc'd (NULL when none declared). */
static int declarations_json(const ordo_t *o, char **out)
{
    *out = NULL;
    if (o->n_tensors == 0) return 0;
    json_t *arr = json_array();
    for (int i = 0; arr && i < o->n_tensors; i++) {
        const tensor_t *t = &o->t[i];
        json_t *d = json_pack("{s:s, s:I}", "name", t->name, "numel", (json_int_t)t->numel);
        if (t->update.kind == ORDO_UPDATE_SGD)
            json_object_set_new(d, "update",
                                json_pack("{s:s, s:f, s:f, s:f}", "kind", "sgd", "lr", t->update.lr,
                                          "momentum", t->update.momentum, "weight_decay",
                                          t->update.weight_decay));
        else if (t->update.kind == ORDO_UPDATE_AVERAGE)
            json_object_set_new(d, "update", json_pack("{s:s}", "kind", "average"));
        if (t->occasional) json_object_set_new(d, "occasional", json_true());
        if (t->compression[0])
            json_object_set_new(d, "compression", json_string(t->compression));
        json_array_append_new(arr, d);
    }
    *out = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
    json_decref(arr);
    return *out ? 0 : ORDO_ERR_NOMEM;
}

/* ordo__api_set_priorities takes each tensor's priority from the plan's priorities, or
 * the tensor's index when the plan has none (policies none and fifo). */
void ordo__api_set_priorities(ordo_t *o, const ordo__plan_t *plan)
{
    bool have = plan->priorities && plan->n_keys == o->n_tensors;
    for (int i = 0; i < o->n_tensors; i++)
        o->t[i].priority = have ? plan->priorities[i] : i;
}

/* rejoined makes a restarted worker ([fault] worker = restart) go on where its predecessor
 * stopped: every tensor's version and the iteration ordo_step counts are the iteration the
 * scheduler's WELCOME names (nothing when this is no restart). */
static void rejoined(ordo_t *o)
{
    int64_t at = ordo__ps_rejoin_iter(o->w);
    if (at <= 0) return;
    for (int i = 0; i < o->n_tensors; i++)
        o->t[i].version = at;
    o->step_iter = at;
}

int ordo_join(ordo_t *o)
{
    ordo__error_clear();
    if (!o) return ordo__error_set(ORDO_ERR_INVAL, "ordo_join: NULL handle");
    if (o->state != NEW) return ordo__error_set(ORDO_ERR_INVAL, "ordo_join: already joined");
    ordo__conf_resolve(&o->conf);
    int rc = ordo__conf_validate(&o->conf);
    if (rc) return ordo__api_fail(rc);
    bool declared = !strcmp(o->conf.trainer, "declared");
    if (declared && o->n_tensors == 0)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_join: [model] trainer = declared, but the "
                                           "program declared no tensors (ordo_declare)");
    for (int i = 0; !declared && i < o->n_tensors; i++)
        if (o->t[i].update.kind != ORDO_UPDATE_CONF)
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "ordo_join: tensor %d \"%s\" declares its update rule, which "
                                  "needs [model] trainer = declared (the conf has %s)",
                                  i, o->t[i].name, o->conf.trainer);
    ordo__log_level_t lvl;
    if (ordo__log_parse_level(o->conf.log_level, &lvl) == 0) ordo__log_set_level(lvl);
    ordo__log_set_role("worker", -1);
    char *tensors = NULL;
    if ((rc = declarations_json(o, &tensors)) != 0) return ordo__api_fail(rc);
    rc = ordo__ps_join(&o->conf, tensors, o->op_times, o->op_times_ctx, &o->w);
    free(tensors);
    if (rc) return ordo__api_fail(ordo__error_context(rc, "ordo_join"));
    if ((rc = match_keys(o, ordo__ps_keys(o->w))) != 0) {
        char why[600];
        snprintf(why, sizeof why, "worker %d: %s", ordo__ps_rank(o->w), ordo__error_text(rc));
        ordo__ps_abort(o->w, why);
        ordo__ps_destroy(&o->w);
        return ordo__error_set(rc, "%s", why);
    }
    ordo__api_set_priorities(o, ordo__ps_plan(o->w));
    rejoined(o);
    o->rank = ordo__ps_rank(o->w);
    if (o->conf.trace) {
        char name[64];
        snprintf(name, sizeof name, "worker %d", o->rank);
        if ((rc = ordo__trace_new(name, 1000 + o->rank, &o->trace)) != 0) {
            ordo__ps_abort(o->w, "out of memory for the trace");
            ordo__ps_destroy(&o->w);
            return ordo__api_fail(rc);
        }
        ordo__ps_set_trace(o->w, o->trace); /* the push path's own spans (host groups) */
    }
    o->size = ordo__ps_n_workers(o->w);
    o->servers = ordo__ps_n_servers(o->w);
    ordo__log_set_role("worker", o->rank);
    o->state = JOINED;
    o->step_t0_ns = ordo__clock_ns();
    return 0;
}

int ordo_leave(ordo_t *o)
{
    return ordo_leave_with(o, NULL);
}

int ordo_leave_with(ordo_t *o, const char *final_json)
{
    int rc = ordo__api_usable(o, "ordo_leave");
    if (rc) return rc;
    /* a bound model ends with the run (ordo_unbind's work), its last pushes answered */
    if (o->bound) ordo__bound_drain(o->bound, ORDO__BOUND_DRAIN_MS);
    ordo__api_unbind(o);
    if ((rc = ordo_wait_all(o, -1)) != 0) return rc;
    if (o->trace) {
        char path[4200];
        snprintf(path, sizeof path, "%s/trace-worker-%d.json", ordo__ps_run_dir(o->w), o->rank);
        if ((rc = ordo__trace_write(o->trace, path)) != 0) return ordo__api_fail(rc);
    }
    if ((rc = ordo__ps_finish(o->w, final_json)) != 0) return ordo__api_cluster_failed(o, rc);
    ordo__ps_set_trace(o->w, NULL);
    ordo__ps_destroy(&o->w);
    o->state = LEFT;
    return 0;
}

void ordo_abort(ordo_t *o, const char *reason)
{
    if (!o || o->state != JOINED || o->failed) return;
    char why[600];
    snprintf(why, sizeof why, "worker %d: %s", o->rank, reason ? reason : "aborted");
    ordo__ps_abort(o->w, why);
    o->failed = ORDO_ERR_ABORT;
    snprintf(o->failed_msg, sizeof o->failed_msg, "this worker aborted the run: %s", why);
}

/* ---- the binding's part of the handle (api_bound.c: the calls) ---- */

int ordo__api_unbound(const ordo_t *o, const char *fn)
{
    if (!o->bound) return 0;
    return ordo__error_set(ORDO_ERR_INVAL,
                          "%s: the model is bound (ordo_bind); use the iteration calls or "
                          "ordo_unbind first", fn);
}

void ordo__api_unbind(ordo_t *o)
{
    ordo__bound_destroy(&o->bound);
    o->bound_in_iter = false;
    free(o->priority);
    free(o->numel);
    free(o->names);
    o->priority = NULL;
    o->numel = NULL;
    o->names = NULL;
}

void ordo_destroy(ordo_t **op)
{
    ordo_t *o = op ? *op : NULL;
    if (!o) return;
    if (o->state == JOINED && !o->failed) ordo_abort(o, "the program ended without ordo_leave");
    ordo__api_unbind(o);
    if (o->w) ordo__ps_set_trace(o->w, NULL);
    ordo__ps_destroy(&o->w);
    ordo__trace_destroy(&o->trace);
    for (int i = 0; i < o->n_tensors; i++)
        free(o->t[i].name);
    free(o->t);
    free(o->batch_spec);
    free(o->state_buf);
    free(o->ops);
    free(o);
    *op = NULL;
}

/* ---- the cluster ----------------------------------------------------------------------- */

int ordo_rank(const ordo_t *o)
{
    return o ? o->rank : -1;
}

int ordo_size(const ordo_t *o)
{
    return o ? o->size : -1;
}

int ordo_num_servers(const ordo_t *o)
{
    return o ? o->servers : -1;
}

int ordo_num_tensors(const ordo_t *o)
{
    return o ? o->n_tensors : 0;
}

int64_t ordo_tensor_numel(const ordo_t *o, int tensor)
{
    if (!o) return ORDO_ERR_INVAL;
    int rc = ordo__api_check_tensor(o, tensor, "ordo_tensor_numel");
    return rc ? rc : o->t[tensor].numel;
}

const char *ordo_tensor_name(const ordo_t *o, int tensor)
{
    return o && tensor >= 0 && tensor < o->n_tensors ? o->t[tensor].name : NULL;
}

int64_t ordo_tensor_version(const ordo_t *o, int tensor)
{
    if (!o) return ORDO_ERR_INVAL;
    int rc = ordo__api_check_tensor(o, tensor, "ordo_tensor_version");
    return rc ? rc : o->t[tensor].version;
}

/* ---- handles --------------------------------------------------------------------------- */

/* op_new takes a free slot for a transfer of tensor needing `need`. */
static int op_new(ordo_t *o, int tensor, uint8_t need, bool detached, int *slot)
{
    if (o->free_op == 0) { /* free list empty (free_op is the slot + 1) */
        int cap = o->cap_ops ? 2 * o->cap_ops : 64;
        op_t *ops = realloc(o->ops, sizeof *ops * (size_t)cap);
        if (!ops) return ORDO_ERR_NOMEM;
        for (int i = o->cap_ops; i < cap; i++)
            ops[i] = (op_t){.gen = 1, .next_free = i + 1 < cap ? i + 2 : 0};
        o->ops = ops;
        o->free_op = o->cap_ops + 1;
        o->cap_ops = cap;
    }
    int s = o->free_op - 1;
    op_t *p = &o->ops[s];
    o->free_op = p->next_free;
    p->used = true;
    p->done = false;
    p->detached = detached;
    p->need = need;
    p->tensor = tensor;
    o->in_flight++;
    *slot = s;
    return 0;
}

static void op_release(ordo_t *o, int s)
{
    op_t *p = &o->ops[s];
    p->used = false;
    p->gen++;
    if (p->gen == 0) p->gen = 1;
    p->next_free = o->free_op;
    o->free_op = s + 1;
}

static ordo_handle_t handle_of(const ordo_t *o, int s)
{
    return ((int64_t)o->ops[s].gen << 32) | (int64_t)(s + 1);
}

/* op_of finds h's slot, or -1 with an error set. */
static int op_of(const ordo_t *o, ordo_handle_t h, const char *fn)
{
    int64_t s = (h & 0xffffffff) - 1;
    if (h <= 0 || s < 0 || s >= o->cap_ops || !o->ops[s].used ||
        o->ops[s].gen != (uint32_t)(h >> 32)) {
        ordo__error_set(ORDO_ERR_NOTFOUND, "%s: no transfer with handle %lld (already released?)", fn,
                       (long long)h);
        return -1;
    }
    return (int)s;
}

/* op_progress marks part of slot s's transfer complete. */
static void op_progress(ordo_t *o, int s, uint8_t part)
{
    op_t *p = &o->ops[s];
    p->need &= (uint8_t)~part;
    if (p->need || p->done) return;
    p->done = true;
    o->in_flight--;
    if (p->detached) op_release(o, s);
}

/* pump waits up to timeout_ms for one event of the worker and applies it: 0, ETIMEDOUT,
 * EAGAIN (woken by ordo_interrupt), or the cluster's failure (remembered). */
static int pump(ordo_t *o, int timeout_ms)
{
    ordo__ps_event_t ev;
    int rc = ordo__ps_poll(o->w, timeout_ms, &ev);
    if (rc == ORDO_ERR_TIMEDOUT) return rc;
    if (rc) return ordo__api_cluster_failed(o, rc);
    if (ev.kind == ORDO__EV_WAKE) return ORDO_ERR_AGAIN;
    if (ev.kind == ORDO__EV_REPLAN) {
        o->replan_answered = true;
        return 0;
    }
    if (ev.kind == ORDO__EV_BARRIER) {
        if (ev.iter > o->barrier_done) o->barrier_done = ev.iter;
        return 0;
    }
    if (ev.kind == ORDO__EV_BCAST) {
        if (ev.iter > o->bcast_done) o->bcast_done = ev.iter;
        return 0;
    }
    if (ev.key < 0 || ev.key >= o->n_tensors) return 0;
    tensor_t *t = &o->t[ev.key];
    if (ev.kind == ORDO__EV_PUSH_DONE && t->push_op >= 0) {
        int s = t->push_op;
        t->push_op = -1;
        op_progress(o, s, NEED_PUSH);
    } else if (ev.kind == ORDO__EV_PULL_DONE && t->pull_op >= 0) {
        int s = t->pull_op;
        t->pull_op = -1;
        op_progress(o, s, NEED_PULL);
    }
    return 0;
}

/* wait_until_done pumps events until done(o, arg) holds, up to timeout_ms (-1: no limit). */
static int wait_until_done(ordo_t *o, bool (*done)(const ordo_t *, int64_t), int64_t arg,
                           int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? -1 : ordo__clock_ns() + (int64_t)timeout_ms * 1000000;
    while (!done(o, arg)) {
        int left = -1;
        if (deadline >= 0) {
            int64_t ns = deadline - ordo__clock_ns();
            left = ns > 0 ? (int)((ns + 999999) / 1000000) : 0;
        }
        int rc = pump(o, left);
        if (rc == ORDO_ERR_TIMEDOUT) {
            if (deadline >= 0 && ordo__clock_ns() >= deadline && !done(o, arg))
                return ordo__error_set(ORDO_ERR_TIMEDOUT, "not complete after %d ms", timeout_ms);
            continue;
        }
        if (rc == ORDO_ERR_AGAIN)
            return done(o, arg) ? 0 : ordo__error_set(ORDO_ERR_AGAIN, "interrupted (ordo_interrupt)");
        if (rc) return rc;
    }
    return 0;
}

/* ordo__api_wait_until is wait_until_done, its time counted as the iteration's wait (ordo_step). */
int ordo__api_wait_until(ordo_t *o, bool (*done)(const ordo_t *, int64_t), int64_t arg,
                         int timeout_ms)
{
    if (done(o, arg)) return 0;
    int64_t t0 = ordo__clock_ns();
    int rc = wait_until_done(o, done, arg, timeout_ms);
    o->step_wait_ns += ordo__clock_ns() - t0;
    return rc;
}

static bool op_done(const ordo_t *o, int64_t s)
{
    return o->ops[s].done;
}

static bool all_done(const ordo_t *o, int64_t unused)
{
    return o->in_flight == 0;
}

int ordo_wait(ordo_t *o, ordo_handle_t h, int timeout_ms)
{
    int rc = ordo__api_usable(o, "ordo_wait");
    if (!rc) rc = ordo__api_unbound(o, "ordo_wait");
    if (rc) return rc;
    int s = op_of(o, h, "ordo_wait");
    if (s < 0) return ORDO_ERR_NOTFOUND;
    if ((rc = ordo__api_wait_until(o, op_done, s, timeout_ms)) != 0) return rc;
    op_release(o, s);
    return 0;
}

int ordo_test(ordo_t *o, ordo_handle_t h)
{
    int rc = ordo__api_usable(o, "ordo_test");
    if (!rc) rc = ordo__api_unbound(o, "ordo_test");
    if (rc) return rc;
    int s = op_of(o, h, "ordo_test");
    if (s < 0) return ORDO_ERR_NOTFOUND;
    /* each round takes what has arrived without blocking; stop at the first quiet round */
    while (!o->ops[s].done && (rc = pump(o, 0)) == 0) {
    }
    if (!o->ops[s].done && rc != ORDO_ERR_TIMEDOUT && rc != ORDO_ERR_AGAIN) return rc;
    ordo__error_clear();
    if (!o->ops[s].done) return ORDO_ERR_AGAIN;
    op_release(o, s);
    return 0;
}

int ordo_wait_all(ordo_t *o, int timeout_ms)
{
    int rc = ordo__api_usable(o, "ordo_wait_all");
    if (!rc) rc = ordo__api_unbound(o, "ordo_wait_all");
    if (rc) return rc;
    if ((rc = ordo__api_wait_until(o, all_done, 0, timeout_ms)) != 0) return rc;
    for (int s = 0; s < o->cap_ops; s++)
        if (o->ops[s].used) op_release(o, s);
    return 0;
}

void ordo_interrupt(ordo_t *o)
{
    if (o && o->w) ordo__ps_wake(o->w);
}

/* ---- transfers ------------------------------------------------------------------------- */

int ordo_init(ordo_t *o, int tensor, const float *values)
{
    int rc = ordo__api_usable(o, "ordo_init");
    if (!rc) rc = ordo__api_unbound(o, "ordo_init");
    if (!rc) rc = ordo__api_check_tensor(o, tensor, "ordo_init");
    if (rc) return rc;
    if (!values) return ordo__error_set(ORDO_ERR_INVAL, "ordo_init: NULL values");
    if ((rc = ordo__ps_init(o->w, tensor, values)) != 0) return ordo__api_cluster_failed(o, rc);
    return 0;
}

/* start checks a transfer's arguments and takes its slot; the caller issues it. */
static int start(ordo_t *o, int tensor, uint8_t need, const void *buf, const char *fn,
                 ordo_handle_t *h, int *slot)
{
    int rc = ordo__api_usable(o, fn);
    if (!rc) rc = ordo__api_unbound(o, fn);
    if (!rc) rc = ordo__api_check_tensor(o, tensor, fn);
    if (rc) return rc;
    tensor_t *t = &o->t[tensor];
    if (!buf) return ordo__error_set(ORDO_ERR_INVAL, "%s \"%s\": NULL buffer", fn, t->name);
    if (ordo__ps_push_path(o->w)->ops->whole_iterations)
        return ordo__error_set(ORDO_ERR_NOTSUP,
                              "%s \"%s\": in host groups ([cluster] local_size, [intra] backend) "
                              "a group moves whole iterations: use ordo_bind and its calls", fn,
                              t->name);
    if ((need & NEED_PUSH) && t->push_op >= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "%s \"%s\": a push of this tensor is in flight", fn,
                              t->name);
    if ((need & NEED_PULL) && t->pull_op >= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "%s \"%s\": a pull of this tensor is in flight", fn,
                              t->name);
    if ((rc = op_new(o, tensor, need, h == NULL, slot)) != 0) return ordo__api_fail(rc);
    return 0;
}

/* issued records slot s as tensor's transfer in flight, or gives it back when issuing
 * failed. */
static int issued(ordo_t *o, int s, int rc, ordo_handle_t *h)
{
    op_t *p = &o->ops[s];
    if (rc) {
        o->in_flight--;
        op_release(o, s);
        return rc == ORDO_ERR_INVAL || rc == ORDO_ERR_RANGE ? ordo__api_fail(rc)
                                                      : ordo__api_cluster_failed(o, rc);
    }
    tensor_t *t = &o->t[p->tensor];
    if (p->need & NEED_PUSH) {
        t->push_op = s;
        o->step_push_ns = ordo__clock_ns();
    }
    if (p->need & NEED_PULL) t->pull_op = s;
    if (h) *h = handle_of(o, s);
    return 0;
}

int ordo_push(ordo_t *o, int tensor, const float *grad, int priority, ordo_handle_t *h)
{
    int s, rc = start(o, tensor, NEED_PUSH, grad, "ordo_push", h, &s);
    if (rc) return rc;
    tensor_t *t = &o->t[tensor];
    rc = ordo__ps_push(o->w, tensor, grad, t->version, priority);
    if (!rc) t->version++;
    return issued(o, s, rc, h);
}

int ordo_pull(ordo_t *o, int tensor, float *dst, int priority, ordo_handle_t *h)
{
    int s, rc = start(o, tensor, NEED_PULL, dst, "ordo_pull", h, &s);
    if (rc) return rc;
    return issued(o, s, ordo__ps_pull(o->w, tensor, dst, o->t[tensor].version, priority), h);
}

int ordo_pushpull(ordo_t *o, int tensor, const float *grad, float *dst, int priority,
                  ordo_handle_t *h)
{
    int s, rc = start(o, tensor, NEED_PUSH | NEED_PULL, grad, "ordo_pushpull", h, &s);
    if (rc) return rc;
    if (!dst) {
        o->in_flight--;
        op_release(o, s);
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_pushpull \"%s\": NULL dst", o->t[tensor].name);
    }
    tensor_t *t = &o->t[tensor];
    rc = ordo__ps_pushpull(o->w, tensor, grad, dst, t->version, priority);
    if (!rc) t->version++;
    return issued(o, s, rc, h);
}

/* ---- declared update rules ----------------------------------------------------------- */

int ordo_declare_update(ordo_t *o, int tensor, const ordo_update_t *u)
{
    ordo__error_clear();
    if (!o || !u) return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare_update: NULL argument");
    if (o->state != NEW)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare_update: declare before ordo_join");
    int rc = ordo__api_check_tensor(o, tensor, "ordo_declare_update");
    if (rc) return rc;
    const char *name = o->t[tensor].name;
    if (u->kind != ORDO_UPDATE_CONF && u->kind != ORDO_UPDATE_SGD && u->kind != ORDO_UPDATE_AVERAGE)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare_update \"%s\": unknown kind %d", name,
                              u->kind);
    if (u->kind == ORDO_UPDATE_SGD &&
        (!isfinite(u->lr) || u->lr < 0 || !isfinite(u->momentum) || u->momentum < 0 ||
         !isfinite(u->weight_decay) || u->weight_decay < 0))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "ordo_declare_update \"%s\": lr %g, momentum %g, weight_decay %g "
                              "(each must be finite and >= 0)",
                              name, u->lr, u->momentum, u->weight_decay);
    o->t[tensor].update = *u;
    return 0;
}

int ordo_declare_occasional(ordo_t *o, int tensor)
{
    ordo__error_clear();
    if (!o) return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare_occasional: NULL argument");
    if (o->state != NEW)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare_occasional: declare before ordo_join");
    int rc = ordo__api_check_tensor(o, tensor, "ordo_declare_occasional");
    if (rc) return rc;
    o->t[tensor].occasional = true;
    return 0;
}

int ordo_declare_compression(ordo_t *o, int tensor, const char *codec)
{
    ordo__error_clear();
    if (!o || !codec) return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare_compression: NULL argument");
    if (o->state != NEW)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_declare_compression: declare before ordo_join");
    int rc = ordo__api_check_tensor(o, tensor, "ordo_declare_compression");
    if (rc) return rc;
    ordo__codec_spec_t spec;
    if ((rc = ordo__codec_parse(codec, &spec)) != 0) {
        char what[160];
        snprintf(what, sizeof what, "ordo_declare_compression \"%s\"", o->t[tensor].name);
        return ordo__error_context(rc, what);
    }
    ordo__codec_format(&spec, o->t[tensor].compression, sizeof o->t[tensor].compression);
    return 0;
}
