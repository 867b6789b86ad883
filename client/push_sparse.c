/* push_sparse: sparse pushes ([push] mode = sparse): once the backward pass of an iteration
 * ended, the whole gradient is sparsified and pushed, and the servers' answers patch the
 * parameters (client/sparse_push.h, which this path drives on the executor's communication
 * thread); pulls ask for the whole model at once. Key pushes through the push/pull library,
 * which the executor does not make in this mode, are dense. */
#include "client/push.h"
#include "common/error.h"
#include "client/sparse_push.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    ordo__push_t base;
    ordo__sparse_push_t *sp; /* from bind to unbind; communication thread */
    /* copies taken at completions, under the executor's lock */
    int64_t version; /* of the local parameters (-1 none) */
    int64_t bytes_push, bytes_pull;
    char stats[512];
} sparse_t;

static int create(ordo__ps_t *ps, ordo__push_t **out)
{
    (void)ps;
    sparse_t *s = calloc(1, sizeof *s);
    if (!s) return ORDO_ERR_NOMEM;
    s->version = -1;
    *out = &s->base;
    return 0;
}

static void destroy(ordo__push_t *p)
{
    sparse_t *s = (sparse_t *)p;
    ordo__sparse_push_destroy(&s->sp);
    free(s);
}

static int bind(ordo__push_t *p, float *params, const float *grads)
{
    return ordo__sparse_push_new(p->ps, params, grads, &((sparse_t *)p)->sp);
}

static void unbind(ordo__push_t *p)
{
    ordo__sparse_push_destroy(&((sparse_t *)p)->sp);
}

static int init(ordo__push_t *p, float *const *values)
{
    return ordo__sparse_push_init(((sparse_t *)p)->sp, values);
}

/* the whole model: every server sends its region */
static int pulls(ordo__push_t *p, int64_t iter, const int *keys, const int *priority, int n,
                 float *const *dst)
{
    (void)keys, (void)priority, (void)n, (void)dst;
    return ordo__sparse_push_pull(((sparse_t *)p)->sp, iter);
}

static int grad_ready(ordo__push_t *p, int key, const float *grad, int64_t iter, int priority)
{
    (void)p, (void)key, (void)grad, (void)iter, (void)priority; /* all at once, at the end */
    return 0;
}

static int grads_done(ordo__push_t *p, int64_t iter)
{
    return ordo__sparse_push_iteration(((sparse_t *)p)->sp, iter);
}

/* a request completed: the parameters of ev->iter are in (PULLED), or every server answered
 * the push of ev->iter and the parameters are now of the next iteration (PUSHED) */
static ordo__push_done_t on_event(ordo__push_t *p, const ordo__ps_event_t *ev)
{
    sparse_t *s = (sparse_t *)p;
    int64_t push, pull;
    const char *stats = ordo__sparse_push_stats(s->sp, &push, &pull);
    s->version = ordo__sparse_push_version(s->sp);
    if (ev->key == ORDO_SPARSE_PUSH_PULLED) return ORDO__PUSH_DONE_PULLED;
    s->bytes_push = push;
    s->bytes_pull = pull;
    snprintf(s->stats, sizeof s->stats, "%s", stats);
    return ORDO__PUSH_DONE_PUSHED;
}

/* the answers to the last push already made the parameters of this iteration */
static bool have(const ordo__push_t *p, int64_t iter)
{
    return ((const sparse_t *)p)->version == iter;
}

static void stats(const ordo__push_t *p, int64_t *bytes_push, int64_t *bytes_pull, char *extra,
                  size_t size)
{
    const sparse_t *s = (const sparse_t *)p;
    *bytes_push = s->bytes_push;
    *bytes_pull = s->bytes_pull;
    snprintf(extra, size, "%s", s->stats);
}

static int state(ordo__push_t *p, const char *path, bool save)
{
    return ordo__sparse_push_state(((sparse_t *)p)->sp, path, save);
}

const ordo__push_ops_t ordo__push_sparse_ops = {
    .name = "sparse",
    .mode = ORDO_PUSH_SPARSE,
    .create = create,
    .destroy = destroy,
    .push = ordo__push_dense_push,
    .pushpull = ordo__push_dense_pushpull,
    .send_part = ordo__push_dense_send_part,
    .group_ack = ordo__push_dense_group_ack,
    .grad_home = ordo__push_dense_grad_home,
    .key_pushes = false,
    .bind = bind,
    .unbind = unbind,
    .init = init,
    .pulls = pulls,
    .grad_ready = grad_ready,
    .grads_done = grads_done,
    .on_event = on_event,
    .have = have,
    .stats = stats,
    .state = state,
};
