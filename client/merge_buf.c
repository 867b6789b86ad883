/* merge_buf: per-group, per-server packing of gradients for merged pushes. */
#include "client/merge_buf.h"
#include "common/error.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    ordo__merge_part_t pub;
    float *buf;          /* packed payload; NULL for a part of one key's consecutive slices */
    const float *single; /* such a part: the put gradient at its first slice's offset */
} part_t;

typedef struct {
    int first_key; /* offset into order */
    int n_keys;
    int first_part;
    int n_parts;
    int put; /* keys put since the last reset */
} group_t;

struct ordo__merge_buf {
    const ordo__keys_t *keys;
    int n_groups;
    group_t *groups;
    int *order;    /* [n_keys] keys in push order */
    int *group_of; /* [n_keys] */
    uint8_t *put;  /* [n_keys] */
    part_t *parts; /* all parts, group-major */
    int n_parts;
    uint32_t *slice_ids; /* [n_slices] the parts' index arrays, back to back */
    int64_t *offsets;    /* [n_slices] payload offset of each entry of slice_ids */
    int *slice_part;     /* [n_slices] part of each slice */
    int64_t *slice_off;  /* [n_slices] payload offset of each slice */
    float **home;        /* [n_keys] where the key's gradient may live (NULL: anywhere) */
    int64_t bytes;
};

/* ---- building ------------------------------------------------------------------------- */

static int check_grouping(int n_keys, int n_groups, const int *group_start, const int *order)
{
    if (n_groups < 1 || group_start[0] != 0 || group_start[n_groups] != n_keys)
        return ordo__error_set(ORDO_ERR_INVAL, "merge groups: %d groups do not cover %d keys", n_groups,
                              n_keys);
    for (int g = 0; g < n_groups; g++)
        if (group_start[g + 1] <= group_start[g])
            return ordo__error_set(ORDO_ERR_INVAL, "merge groups: group %d is empty", g);
    uint8_t *seen = calloc((size_t)n_keys + 1, 1);
    if (!seen) return ORDO_ERR_NOMEM;
    int rc = 0;
    for (int i = 0; i < n_keys && !rc; i++) {
        if (order[i] < 0 || order[i] >= n_keys || seen[order[i]])
            rc = ordo__error_set(ORDO_ERR_INVAL, "merge groups: key %d is out of range or repeated",
                                order[i]);
        else
            seen[order[i]] = 1;
    }
    free(seen);
    return rc;
}

/* lay out group g's parts: per server holding some of its slices (in server order), its
 * slices in push order, cut into messages of at most max_bytes (a slice is never split). The
 * slices of a key that has several (a chunked tensor) travel in parts of their own, runs of
 * that key's consecutive slices sent from the gradient as they are; the keys of one slice
 * are packed together, and their gradients can live in the part's buffer (their home), so
 * that nothing is copied. */

/* true when part p's slices are consecutive slices of one key, in order: its payload is then
 * a run of that key's gradient, sent as it is (no copy) */
static bool one_run(const ordo__keys_t *k, const ordo__merge_part_t *p)
{
    for (int j = 1; j < p->n_slices; j++) {
        const ordo__slice_t *a = &k->slices[p->slices[j - 1]], *b = &k->slices[p->slices[j]];
        if (b->key != a->key || b->offset != a->offset + a->numel) return false;
    }
    return true;
}
static int build_group(ordo__merge_buf_t *mb, int g, int64_t max_bytes, int *next_entry)
{
    const ordo__keys_t *k = mb->keys;
    group_t *gr = &mb->groups[g];
    gr->first_part = mb->n_parts;
    for (int s = 0; s < k->n_servers; s++) {
        part_t *p = NULL;
        int run_key = -1; /* the open part's key when it is a run of a chunked key */
        int64_t run_end = 0;
        for (int i = 0; i < gr->n_keys; i++) {
            int key = mb->order[gr->first_key + i];
            bool chunked = k->n_chunks[key] > 1;
            for (int c = 0; c < k->n_chunks[key]; c++) {
                int sl = k->first_slice[key] + c;
                if (k->slices[sl].server != s) continue;
                int64_t bytes = k->slices[sl].numel * (int64_t)sizeof(float);
                bool fits = p && !(max_bytes > 0 &&
                                   (p->pub.numel * (int64_t)sizeof(float)) + bytes > max_bytes);
                /* a chunked key's slice continues a run of its key's consecutive slices; a
                 * key of one slice joins a part of such keys */
                bool same =
                    chunked ? run_key == key && k->slices[sl].offset == run_end : run_key < 0;
                if (chunked) run_end = k->slices[sl].offset + k->slices[sl].numel;
                if (!fits || !same) {
                    run_key = chunked ? key : -1;
                    p = &mb->parts[mb->n_parts++];
                    p->pub.server = s;
                    p->pub.slices = mb->slice_ids + *next_entry;
                    p->pub.offset = mb->offsets + *next_entry;
                }
                int j = p->pub.n_slices++;
                ((uint32_t *)p->pub.slices)[j] = (uint32_t)sl;
                ((int64_t *)p->pub.offset)[j] = p->pub.numel;
                mb->slice_part[sl] = (int)(p - mb->parts);
                mb->slice_off[sl] = p->pub.numel;
                p->pub.numel += k->slices[sl].numel;
                (*next_entry)++;
            }
        }
    }
    gr->n_parts = mb->n_parts - gr->first_part;
    for (int i = 0; i < gr->n_parts; i++) {
        part_t *p = &mb->parts[gr->first_part + i];
        if (one_run(mb->keys, &p->pub)) continue;
        size_t bytes = ((size_t)p->pub.numel * sizeof(float) + 63) & ~(size_t)63;
        p->buf = aligned_alloc(64, bytes ? bytes : 64);
        if (!p->buf) return ORDO_ERR_NOMEM;
        mb->bytes += (int64_t)bytes;
        /* a packed part holds whole keys of one slice each: their homes */
        for (int j = 0; j < p->pub.n_slices; j++) {
            const ordo__slice_t *sl = &k->slices[p->pub.slices[j]];
            ORDO_ASSERT(k->n_chunks[sl->key] == 1);
            mb->home[sl->key] = p->buf + p->pub.offset[j];
        }
    }
    return 0;
}

int ordo__merge_buf_new(const ordo__keys_t *keys, int n_groups, const int *group_start,
                       const int *order, int64_t max_part_bytes, ordo__merge_buf_t **out)
{
    int rc = check_grouping(keys->n_keys, n_groups, group_start, order);
    if (rc) return rc;
    ordo__merge_buf_t *mb = calloc(1, sizeof *mb);
    if (!mb) return ORDO_ERR_NOMEM;
    size_t nk = (size_t)keys->n_keys + 1, ns = (size_t)keys->n_slices + 1;
    mb->keys = keys;
    mb->n_groups = n_groups;
    mb->groups = calloc((size_t)n_groups, sizeof *mb->groups);
    mb->order = malloc(sizeof *mb->order * nk);
    mb->group_of = malloc(sizeof *mb->group_of * nk);
    mb->put = calloc(nk, 1);
    mb->parts = calloc(ns, sizeof *mb->parts); /* every part holds at least one slice */
    mb->slice_ids = malloc(sizeof *mb->slice_ids * ns);
    mb->offsets = malloc(sizeof *mb->offsets * ns);
    mb->slice_part = malloc(sizeof *mb->slice_part * ns);
    mb->slice_off = malloc(sizeof *mb->slice_off * ns);
    mb->home = calloc(nk, sizeof *mb->home);
    if (!mb->groups || !mb->order || !mb->group_of || !mb->put || !mb->parts || !mb->slice_ids ||
        !mb->offsets || !mb->slice_part || !mb->slice_off || !mb->home) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    memcpy(mb->order, order, sizeof *order * (size_t)keys->n_keys);
    int next_entry = 0;
    for (int g = 0; g < n_groups; g++) {
        mb->groups[g].first_key = group_start[g];
        mb->groups[g].n_keys = group_start[g + 1] - group_start[g];
        for (int i = group_start[g]; i < group_start[g + 1]; i++)
            mb->group_of[order[i]] = g;
        if ((rc = build_group(mb, g, max_part_bytes, &next_entry)) != 0) goto fail;
    }
    ORDO_ASSERT(next_entry == keys->n_slices);
    *out = mb;
    return 0;
fail:
    ordo__merge_buf_destroy(&mb);
    return rc;
}

void ordo__merge_buf_destroy(ordo__merge_buf_t **mbp)
{
    ordo__merge_buf_t *mb = *mbp;
    if (!mb) return;
    if (mb->parts)
        for (int i = 0; i < mb->n_parts; i++)
            free(mb->parts[i].buf);
    free(mb->parts);
    free(mb->groups);
    free(mb->order);
    free(mb->group_of);
    free(mb->put);
    free(mb->slice_ids);
    free(mb->offsets);
    free(mb->slice_part);
    free(mb->slice_off);
    free(mb->home);
    free(mb);
    *mbp = NULL;
}

/* ---- use ------------------------------------------------------------------------------ */

int ordo__merge_buf_n_groups(const ordo__merge_buf_t *mb)
{
    return mb->n_groups;
}

int ordo__merge_buf_group_of(const ordo__merge_buf_t *mb, int key)
{
    return key >= 0 && key < mb->keys->n_keys ? mb->group_of[key] : -1;
}

const int *ordo__merge_buf_group_keys(const ordo__merge_buf_t *mb, int g, int *n)
{
    *n = mb->groups[g].n_keys;
    return mb->order + mb->groups[g].first_key;
}

int ordo__merge_buf_n_parts(const ordo__merge_buf_t *mb, int g)
{
    return mb->groups[g].n_parts;
}

const ordo__merge_part_t *ordo__merge_buf_part(const ordo__merge_buf_t *mb, int g, int p)
{
    return &mb->parts[mb->groups[g].first_part + p].pub;
}

int ordo__merge_buf_put(ordo__merge_buf_t *mb, int key, const float *src, int *group)
{
    const ordo__keys_t *k = mb->keys;
    if (key < 0 || key >= k->n_keys)
        return ordo__error_set(ORDO_ERR_INVAL, "merge: no key %d (the model has %d)", key, k->n_keys);
    if (mb->put[key])
        return ordo__error_set(ORDO_ERR_INVAL, "merge: key %d was put twice into group %d", key,
                              mb->group_of[key]);
    for (int c = 0; c < k->n_chunks[key]; c++) {
        int sl = k->first_slice[key] + c;
        part_t *p = &mb->parts[mb->slice_part[sl]];
        const float *from = src + k->slices[sl].offset;
        float *to = p->buf ? p->buf + mb->slice_off[sl] : NULL;
        if (to && to != from) /* a gradient computed in its home is there already */
            memcpy(to, from, (size_t)k->slices[sl].numel * sizeof(float));
        else if (!to && mb->slice_off[sl] == 0)
            p->single = from;
    }
    mb->put[key] = 1;
    group_t *gr = &mb->groups[mb->group_of[key]];
    *group = mb->group_of[key];
    return ++gr->put == gr->n_keys ? 1 : 0;
}

const float *ordo__merge_buf_payload(const ordo__merge_buf_t *mb, int g, int p)
{
    const part_t *pt = &mb->parts[mb->groups[g].first_part + p];
    return pt->buf ? pt->buf : pt->single;
}

void ordo__merge_buf_reset(ordo__merge_buf_t *mb, int g)
{
    group_t *gr = &mb->groups[g];
    for (int i = 0; i < gr->n_keys; i++)
        mb->put[mb->order[gr->first_key + i]] = 0;
    gr->put = 0;
}

int64_t ordo__merge_buf_bytes(const ordo__merge_buf_t *mb)
{
    return mb->bytes;
}

float *ordo__merge_buf_home(const ordo__merge_buf_t *mb, int key)
{
    return key >= 0 && key < mb->keys->n_keys ? mb->home[key] : NULL;
}
