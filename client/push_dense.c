/* push_dense: dense pushes ([push] mode = dense): every gradient leaves as the chunks of its
 * key as soon as it is complete, and every parameter is pulled key by key. Its iteration-level
 * ops are the merged path's too, its key-level ops the sparse path's. */
#include "client/push.h"
#include "common/error.h"
#include "common/log.h"

#include <stdlib.h>

static int create(ordo__ps_t *ps, ordo__push_t **out)
{
    (void)ps;
    ordo__push_t *p = calloc(1, sizeof *p);
    if (!p) return ORDO_ERR_NOMEM;
    *out = p;
    return 0;
}

static void destroy(ordo__push_t *p)
{
    free(p);
}

/* ---- key level ---------------------------------------------------------------------- */

int ordo__push_dense_push(ordo__push_t *p, int key, const float *src, int64_t iter, int priority)
{
    return ordo__ps_queue_key(p->ps, key, src, NULL, iter, priority, false);
}

/* the pull rides on the push: one message per chunk each way */
int ordo__push_dense_pushpull(ordo__push_t *p, int key, const float *src, float *dst, int64_t iter,
                              int priority)
{
    return ordo__ps_queue_key(p->ps, key, src, dst, iter, priority, true);
}

void ordo__push_dense_send_part(ordo__push_t *p, int group, int part, int64_t iter, int priority)
{
    /* a dense push queues no parts */
    (void)p, (void)group, (void)part, (void)iter, (void)priority;
    ORDO_ASSERT(!"a dense push path has no parts to send");
}

int ordo__push_dense_group_ack(ordo__push_t *p, const ordo__msg_t *m)
{
    (void)p;
    ORDO_WARN("dropped an unexpected merged PUSH_ACK (group %u part %u iter %lld)", m->hdr.key,
              m->hdr.chunk, (long long)m->hdr.iter);
    return 0;
}

float *ordo__push_dense_grad_home(const ordo__push_t *p, int key)
{
    (void)p, (void)key;
    return NULL; /* pushed from wherever it is */
}

/* ---- iteration level ---------------------------------------------------------------- */

int ordo__push_dense_bind(ordo__push_t *p, float *params, const float *grads)
{
    (void)p, (void)params, (void)grads;
    return 0;
}

void ordo__push_dense_unbind(ordo__push_t *p)
{
    (void)p;
}

int ordo__push_dense_init(ordo__push_t *p, float *const *values)
{
    int n = ordo__ps_keys(p->ps)->n_keys, rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = ordo__ps_init(p->ps, i, values[i]);
    return rc;
}

int ordo__push_dense_pulls(ordo__push_t *p, int64_t iter, const int *keys, const int *priority,
                           int n, float *const *dst)
{
    for (int i = 0; i < n; i++) {
        int rc = ordo__ps_pull(p->ps, keys[i], dst[keys[i]], iter, priority[i]);
        if (rc) return rc;
    }
    return 0;
}

int ordo__push_dense_grad_ready(ordo__push_t *p, int key, const float *grad, int64_t iter,
                                int priority)
{
    return ordo__ps_push(p->ps, key, grad, iter, priority);
}

int ordo__push_dense_grads_done(ordo__push_t *p, int64_t iter)
{
    (void)p, (void)iter; /* every gradient already left on its own */
    return 0;
}

ordo__push_done_t ordo__push_dense_on_event(ordo__push_t *p, const ordo__ps_event_t *ev)
{
    (void)p, (void)ev; /* installs no hook: nothing to finish */
    return ORDO__PUSH_DONE_NONE;
}

bool ordo__push_dense_have(const ordo__push_t *p, int64_t iter)
{
    (void)p, (void)iter;
    return false;
}

void ordo__push_dense_stats(const ordo__push_t *p, int64_t *bytes_push, int64_t *bytes_pull,
                            char *extra, size_t size)
{
    /* the whole model each way, as the executor counted it */
    (void)p, (void)bytes_push, (void)bytes_pull, (void)extra, (void)size;
}

const ordo__push_ops_t ordo__push_dense_ops = {
    .name = "dense",
    .mode = ORDO_PUSH_DENSE,
    .create = create,
    .destroy = destroy,
    .push = ordo__push_dense_push,
    .pushpull = ordo__push_dense_pushpull,
    .send_part = ordo__push_dense_send_part,
    .group_ack = ordo__push_dense_group_ack,
    .grad_home = ordo__push_dense_grad_home,
    .key_pushes = true,
    .bind = ordo__push_dense_bind,
    .unbind = ordo__push_dense_unbind,
    .init = ordo__push_dense_init,
    .pulls = ordo__push_dense_pulls,
    .grad_ready = ordo__push_dense_grad_ready,
    .grads_done = ordo__push_dense_grads_done,
    .on_event = ordo__push_dense_on_event,
    .have = ordo__push_dense_have,
    .stats = ordo__push_dense_stats,
};
