/* push_merged: merged pushes ([push] mode = merged): a gradient is put into its group's merge
 * buffer (client/merge_buf.h), a complete group leaves as one message per server part with the
 * smallest priority of its keys, and each of its keys gets its PUSH_DONE when the whole group
 * is acknowledged. Pulls and the executor's side are the dense path's. */
#include "client/push.h"
#include "common/error.h"
#include "common/log.h"
#include "client/compress.h"
#include "client/merge_buf.h"
#include "core/plan.h"

#include <stdlib.h>

typedef struct {
    ordo__push_t base;
    ordo__merge_buf_t *mb;
    /* per group: the iteration being filled (-1 none), its priority, the iteration in
     * flight and acks still due */
    int64_t *group_iter, *group_sent_iter;
    int *group_prio, *group_left;
    /* per group and part (at part_at[group] + part): sent and not acknowledged (re-sent to a
     * new primary when its server dies, [fault] replicas) */
    uint8_t *part_out;
    int *part_at, n_msgs;
    int unit0; /* the residual slot of part 0 of group 0 (client/compress.h) */
} merged_t;

static void destroy(ordo__push_t *p)
{
    merged_t *mp = (merged_t *)p;
    ordo__merge_buf_destroy(&mp->mb);
    free(mp->group_iter);
    free(mp->group_sent_iter);
    free(mp->group_prio);
    free(mp->group_left);
    free(mp->part_out);
    free(mp->part_at);
    free(mp);
}

/* the buffers of the groups of the scheduler's plan (its merge member decides for everyone) */
static int create(ordo__ps_t *ps, ordo__push_t **out)
{
    const ordo__keys_t *k = ordo__ps_keys(ps);
    const ordo__plan_t *plan = ordo__ps_plan(ps);
    if (!plan->has_merge)
        return ordo__error_set(ORDO_ERR_PROTO, "push.mode = merged: the plan has no merge groups");
    const ordo__plan_merge_t *g = &plan->merge;
    int ng = g->n_groups, rc = 0;
    merged_t *mp = calloc(1, sizeof *mp);
    if (!mp) return ORDO_ERR_NOMEM;
    rc = ordo__merge_buf_new(k, ng, g->group_start, g->order, g->max_message_bytes, &mp->mb);
    if (rc) goto fail;
    mp->group_iter = malloc(sizeof *mp->group_iter * (size_t)ng);
    mp->group_sent_iter = malloc(sizeof *mp->group_sent_iter * (size_t)ng);
    mp->group_prio = calloc((size_t)ng, sizeof *mp->group_prio);
    mp->group_left = calloc((size_t)ng, sizeof *mp->group_left);
    mp->part_at = malloc(sizeof *mp->part_at * ((size_t)ng + 1));
    if (!mp->group_iter || !mp->group_sent_iter || !mp->group_prio || !mp->group_left ||
        !mp->part_at) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    int msgs = 0;
    for (int g = 0; g < ng; g++) {
        mp->group_iter[g] = mp->group_sent_iter[g] = -1;
        mp->part_at[g] = msgs;
        msgs += ordo__merge_buf_n_parts(mp->mb, g);
    }
    mp->n_msgs = msgs;
    if (!(mp->part_out = calloc((size_t)msgs + 1, 1))) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    if ((mp->unit0 = ordo__compress_units(ordo__ps_compress(ps), msgs)) < 0) {
        rc = mp->unit0;
        goto fail;
    }
    ORDO_INFO("merged pushes: %d keys in %d groups, %d messages per iteration, %.1f MiB of "
              "merge buffers",
              k->n_keys, ng, msgs, (double)ordo__merge_buf_bytes(mp->mb) / 1048576.0);
    *out = &mp->base;
    return 0;
fail:
    if (mp) destroy(&mp->base);
    return rc;
}

/* copy the gradient into its group; a complete group queues its parts, with the smallest
 * priority of its keys */
static int push(ordo__push_t *p, int key, const float *src, int64_t iter, int priority)
{
    merged_t *mp = (merged_t *)p;
    int g = ordo__merge_buf_group_of(mp->mb, key), n_parts = ordo__merge_buf_n_parts(mp->mb, g);
    if (mp->group_iter[g] >= 0 && mp->group_iter[g] != iter)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "key %d of iteration %lld joins merge group %d of iteration %lld",
                              key, (long long)iter, g, (long long)mp->group_iter[g]);
    int rc = ordo__ps_reserve(p->ps, n_parts);
    if (rc) return rc;
    if ((rc = ordo__merge_buf_put(mp->mb, key, src, &g)) < 0) return rc;
    ordo__ps_push_begin(p->ps, key, iter);
    if (mp->group_iter[g] < 0 || priority < mp->group_prio[g]) mp->group_prio[g] = priority;
    mp->group_iter[g] = iter;
    if (rc == 1) { /* complete: it leaves when the link frees up, in priority order */
        for (int part = 0; part < n_parts; part++)
            ordo__ps_queue_part(p->ps, g, part, iter, mp->group_prio[g]);
        mp->group_left[g] = n_parts;
        mp->group_sent_iter[g] = iter;
        mp->group_iter[g] = -1;
        ordo__merge_buf_reset(mp->mb, g);
        ordo__ps_pump(p->ps);
    }
    return 0;
}

/* a push followed by a pull: the group's message cannot carry every key's pull */
static int pushpull(ordo__push_t *p, int key, const float *src, float *dst, int64_t iter,
                    int priority)
{
    int rc = push(p, key, src, iter, priority);
    if (rc) return rc;
    return ordo__ps_pull(p->ps, key, dst, iter + 1, priority);
}

/* one part of a group: payload and index go zero-copy from the merge buffer, to the current
 * primary of its slices (all of a part's slices share their home server, so their replica
 * sets and their primary) */
static void send_part(ordo__push_t *p, int group, int part, int64_t iter, int priority)
{
    merged_t *mp = (merged_t *)p;
    const ordo__merge_part_t *pt = ordo__merge_buf_part(mp->mb, group, part);
    const ordo__keys_t *k = ordo__ps_keys(p->ps);
    int server = pt->n_slices > 0 ? k->slices[pt->slices[0]].server : pt->server;
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PUSH);
    m.hdr.iter = iter;
    m.hdr.key = (uint32_t)group;
    m.hdr.chunk = (uint32_t)part;
    m.hdr.priority = priority;
    m.hdr.dtype = ORDO_DTYPE_F32;
    m.hdr.flags = ORDO_FLAG_GROUP;
    float *payload = (float *)ordo__merge_buf_payload(mp->mb, group, part);
    /* the part goes in the wire type of its first key (client/compress.h), or zero-copy */
    void *enc = NULL, *hint = NULL;
    size_t bytes = (size_t)pt->numel * sizeof(float);
    int dtype = ORDO_DTYPE_F32, key = pt->n_slices > 0 ? (int)k->slices[pt->slices[0]].key : 0;
    int rc = ordo__compress_encode(ordo__ps_compress(p->ps), key,
                                   mp->unit0 + mp->part_at[group] + part, payload, pt->numel,
                                   (uint64_t)iter, &enc, &bytes, &dtype, &hint);
    if (rc < 0) ORDO_ERROR("merged group %d: %s; pushed as float32", group, ordo__error_text(rc));
    if (rc == 1) {
        m.hdr.dtype = (uint8_t)dtype;
        ordo__msg_add_ref(&m, enc, bytes, ordo__compress_frame_free, hint);
    } else {
        bytes = (size_t)pt->numel * sizeof(float);
        ordo__msg_add_ref(&m, payload, bytes, NULL, NULL);
    }
    ordo__msg_add_ref(&m, (void *)pt->slices, (size_t)pt->n_slices * sizeof(uint32_t), NULL, NULL);
    ordo__ps_count_push(p->ps, (int64_t)bytes);
    mp->part_out[mp->part_at[group] + part] = 1;
    ordo__ps_send(p->ps, server, &m);
}

/* the ack of one part of a group; the last one completes every key of the group */
static int group_ack(ordo__push_t *p, const ordo__msg_t *m)
{
    merged_t *mp = (merged_t *)p;
    int g = (int)m->hdr.key;
    if (m->hdr.key >= (uint32_t)ordo__merge_buf_n_groups(mp->mb) || !mp->group_left[g] ||
        mp->group_sent_iter[g] != m->hdr.iter ||
        m->hdr.chunk >= (uint32_t)ordo__merge_buf_n_parts(mp->mb, g) ||
        !mp->part_out[mp->part_at[g] + (int)m->hdr.chunk]) {
        ORDO_WARN("dropped an unexpected merged PUSH_ACK (group %u part %u iter %lld)", m->hdr.key,
                  m->hdr.chunk, (long long)m->hdr.iter);
        return 0;
    }
    mp->part_out[mp->part_at[g] + (int)m->hdr.chunk] = 0;
    if (--mp->group_left[g] > 0) return 0;
    int n;
    const int *keys = ordo__merge_buf_group_keys(mp->mb, g, &n);
    for (int i = 0; i < n; i++)
        ordo__ps_push_done(p->ps, keys[i], m->hdr.iter);
    return 0;
}

/* the parts a dead primary did not acknowledge leave again, for the slices' new primary (the
 * merge buffer still holds them: a group is refilled only once its next values were pulled,
 * and then every live replica holds its update and the new primary leaves the part out) */
static int moved(ordo__push_t *p, const int *was)
{
    merged_t *mp = (merged_t *)p;
    const ordo__keys_t *k = ordo__ps_keys(p->ps);
    int n = 0, ng = ordo__merge_buf_n_groups(mp->mb);
    int rc = ordo__ps_reserve(p->ps, mp->n_msgs);
    if (rc) return rc;
    for (int g = 0; g < ng; g++) {
        for (int part = 0; mp->group_left[g] && part < ordo__merge_buf_n_parts(mp->mb, g); part++) {
            const ordo__merge_part_t *pt = ordo__merge_buf_part(mp->mb, g, part);
            int sl = pt->n_slices > 0 ? (int)pt->slices[0] : -1;
            if (!mp->part_out[mp->part_at[g] + part] || sl < 0 || k->slices[sl].server == was[sl])
                continue;
            mp->part_out[mp->part_at[g] + part] = 0;
            ordo__ps_queue_part(p->ps, g, part, mp->group_sent_iter[g], mp->group_prio[g]);
            n++;
        }
    }
    return n;
}

static float *grad_home(const ordo__push_t *p, int key)
{
    return ordo__merge_buf_home(((const merged_t *)p)->mb, key);
}

const ordo__push_ops_t ordo__push_merged_ops = {
    .name = "merged",
    .mode = ORDO_PUSH_MERGED,
    .create = create,
    .destroy = destroy,
    .push = push,
    .pushpull = pushpull,
    .send_part = send_part,
    .group_ack = group_ack,
    .grad_home = grad_home,
    .moved = moved,
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
