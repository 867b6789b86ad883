/* api_bound: the calls of the public C API (include/ordo/ordo.h, "a bound model") over the
 * library's bound-model thread (client/bound.h): binding and unbinding, the buffers, and the
 * iteration-level calls a program makes while the library drives its transfers. */
#include "ordo/ordo.h"

#include <stdlib.h>

#include "common/conf.h"
#include "common/error.h"
#include "client/api_internal.h"
#include "client/bound.h"
#include "client/ps.h"



/* bound_usable returns 0 when o is joined, bound and the cluster has not failed. */
static int bound_usable(ordo_t *o, const char *fn)
{
    int rc = ordo__api_usable(o, fn);
    if (rc) return rc;
    if (!o->bound) return ordo__error_set(ORDO_ERR_INVAL, "%s: call ordo_bind first", fn);
    return 0;
}

/* failed turns an error of the binding into the call's: a timeout is the call's own, every
 * other failure is the cluster's and sticks. */
static int failed(ordo_t *o, int rc)
{
    if (!rc) return 0;
    if (rc == ORDO_ERR_TIMEDOUT || rc == ORDO_ERR_NOMEM || rc == ORDO_ERR_INVAL)
        return ordo__api_fail(rc);
    return ordo__api_cluster_failed(o, rc);
}

int ordo_bind(ordo_t *o, const ordo_bind_opts_t *opts)
{
    int rc = ordo__api_usable(o, "ordo_bind");
    if (rc) return rc;
    if (o->bound) return ordo__error_set(ORDO_ERR_INVAL, "ordo_bind: already bound");
    ordo_bind_opts_t run = {.pull_early = ordo__conf_pull_mode(&o->conf) == ORDO_PULL_EARLY,
                            .shuffle = o->conf.policy_kind == ORDO_POLICY_NONE,
                            .seed = o->conf.seed,
                            .iterations = -1};
    if (opts) run = *opts;
    int n = o->n_tensors;
    o->priority = malloc(sizeof *o->priority * (size_t)(n + 1));
    o->numel = malloc(sizeof *o->numel * (size_t)(n + 1));
    o->names = malloc(sizeof *o->names * (size_t)(n + 1));
    if (!o->priority || !o->numel || !o->names) {
        ordo__api_unbind(o);
        return ordo__error_set(ORDO_ERR_NOMEM, "ordo_bind: out of memory");
    }
    for (int i = 0; i < n; i++) {
        o->priority[i] = o->t[i].priority;
        o->numel[i] = o->t[i].numel;
        o->names[i] = o->t[i].name;
    }
    /* the key-level transfers in flight complete before the thread takes the connection */
    if ((rc = ordo_wait_all(o, -1)) != 0) {
        ordo__api_unbind(o);
        return rc;
    }
    ordo__bound_opts_t bo = {.ps = o->w,
                             .n = n,
                             .numel = o->numel,
                             .name = o->names,
                             .priority = o->priority,
                             .run = run,
                             .trace = o->trace};
    if ((rc = ordo__bound_new(&bo, &o->bound)) != 0) {
        ordo__api_unbind(o);
        return ordo__api_fail(rc);
    }
    return 0;
}

int ordo_unbind(ordo_t *o)
{
    int rc = bound_usable(o, "ordo_unbind");
    if (rc) return rc;
    /* the last iteration's pushes may still be on the wire (ordo_iter_end): answered first */
    ordo__bound_drain(o->bound, ORDO__BOUND_DRAIN_MS);
    ordo__api_unbind(o);
    return 0;
}

float *ordo_value_buffer(ordo_t *o, int tensor)
{
    if (!o || !o->bound || tensor < 0 || tensor >= o->n_tensors) return NULL;
    return ordo__bound_value(o->bound, tensor);
}

float *ordo_grad_buffer(ordo_t *o, int tensor)
{
    if (!o || !o->bound || tensor < 0 || tensor >= o->n_tensors) return NULL;
    return ordo__bound_grad(o->bound, tensor);
}

int ordo_bound_init(ordo_t *o)
{
    int rc = bound_usable(o, "ordo_bound_init");
    return rc ? rc : failed(o, ordo__bound_init(o->bound));
}

int ordo_bound_init_from(ordo_t *o, const float *const *values)
{
    int rc = bound_usable(o, "ordo_bound_init_from");
    if (rc) return rc;
    if (!values) return ordo__error_set(ORDO_ERR_INVAL, "ordo_bound_init_from: NULL values");
    return failed(o, ordo__bound_init_from(o->bound, values));
}

int ordo_iter_begin(ordo_t *o, int64_t iter)
{
    int rc = bound_usable(o, "ordo_iter_begin");
    if (rc) return rc;
    if (iter < 0) return ordo__error_set(ORDO_ERR_INVAL, "ordo_iter_begin: iteration %lld",
                                        (long long)iter);
    o->bound_in_iter = true; /* (a failed begin may have asked for values already) */
    o->bound_iter = iter;
    return failed(o, ordo__bound_iter_begin(o->bound, iter));
}

int ordo_next_arrival(ordo_t *o, ordo_arrival_t *a, int timeout_ms)
{
    int rc = bound_usable(o, "ordo_next_arrival");
    if (rc) return rc;
    if (!a) return ordo__error_set(ORDO_ERR_INVAL, "ordo_next_arrival: NULL arrival");
    return failed(o, ordo__bound_next_arrival(o->bound, a, timeout_ms));
}

int ordo_grad_ready(ordo_t *o, int tensor, int64_t iter)
{
    int rc = bound_usable(o, "ordo_grad_ready");
    if (!rc) rc = ordo__api_check_tensor(o, tensor, "ordo_grad_ready");
    if (rc) return rc;
    return failed(o, ordo__bound_grad_ready(o->bound, tensor, iter));
}

int ordo_iter_end(ordo_t *o, int64_t iter, int timeout_ms)
{
    int rc = bound_usable(o, "ordo_iter_end");
    if (!rc) rc = failed(o, ordo__bound_iter_end(o->bound, iter, timeout_ms));
    if (rc) return rc;
    o->bound_in_iter = false;
    /* every tensor's gradient of iter was pushed: the next push's iteration is iter + 1
     * (ordo_tensor_version; the batch service counts by it) */
    for (int i = 0; i < o->n_tensors && !ordo__bound_forward_only(o->bound); i++)
        if (o->t[i].version < iter + 1) o->t[i].version = iter + 1;
    return 0;
}

int ordo_iter_bytes(ordo_t *o, int64_t *pushed, int64_t *pulled, char *extra, size_t size)
{
    int rc = bound_usable(o, "ordo_iter_bytes");
    if (rc) return rc;
    int64_t p, l;
    ordo__bound_iter_bytes(o->bound, &p, &l, extra, size);
    if (pushed) *pushed = p;
    if (pulled) *pulled = l;
    return 0;
}

int ordo_pull_values(ordo_t *o, int64_t iter, int timeout_ms)
{
    int rc = bound_usable(o, "ordo_pull_values");
    return rc ? rc : failed(o, ordo__bound_pull_values(o->bound, iter, timeout_ms));
}
