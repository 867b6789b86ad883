/* Tests of client/merge_buf (packing gradients of merged pushes into one message per group
 * and server) and server/groups (checking a merged push and taking it apart): the layout of
 * the parts, the packed bytes, a pack-then-split round trip over every server, zero-copy
 * parts of one key's consecutive slices, reuse after reset, and every
 * rejection. */
#include "common/keys.h"
#include "server/merged.h"
#include "client/merge_buf.h"
#include "ordo_check.h"

#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

/* 5 keys over 3 servers with 1 KiB chunks: key 1 (300 floats) is 2 chunks, key 3 (1000
 * floats) 4 chunks, so groups span servers and a server may hold two chunks of one key */
static const int64_t numel[] = {10, 300, 5, 1000, 7};
#define NK 5
#define NS 3
/* push order 4 3 | 2 1 | 0 */
static const int order[] = {4, 3, 2, 1, 0};
static const int group_start[] = {0, 2, 4, 5};
#define NG 3

static ordo__keys_t *make_keys(void)
{
    ordo__keys_t *k;
    ORDO_CK_OK(ordo__keys_partition(numel, NK, 4, 1024, 0, NS, &k));
    ck_assert_int_eq(k->n_chunks[1], 2);
    ck_assert_int_eq(k->n_chunks[3], 4);
    return k;
}

/* gradient values that name their key and element */
static float **make_grads(void)
{
    float **g = calloc(NK, sizeof *g);
    for (int key = 0; key < NK; key++) {
        g[key] = malloc(sizeof(float) * (size_t)numel[key]);
        for (int64_t i = 0; i < numel[key]; i++)
            g[key][i] = (float)(key * 10000 + i) + 0.25f;
    }
    return g;
}

static void free_grads(float **g)
{
    for (int key = 0; key < NK; key++)
        free(g[key]);
    free(g);
}

START_TEST(parts_cover_each_group_in_server_order)
{
    ordo__keys_t *k = make_keys();
    ordo__merge_buf_t *mb;
    ORDO_CK_OK(ordo__merge_buf_new(k, NG, group_start, order, 0, &mb));
    ck_assert_int_eq(ordo__merge_buf_n_groups(mb), NG);
    int seen[64] = {0}, total_parts = 0;
    for (int g = 0; g < NG; g++) {
        int nkeys;
        const int *keys = ordo__merge_buf_group_keys(mb, g, &nkeys);
        ck_assert_int_eq(nkeys, group_start[g + 1] - group_start[g]);
        for (int i = 0; i < nkeys; i++) {
            ck_assert_int_eq(keys[i], order[group_start[g] + i]);
            ck_assert_int_eq(ordo__merge_buf_group_of(mb, keys[i]), g);
        }
        int prev_server = -1;
        for (int p = 0; p < ordo__merge_buf_n_parts(mb, g); p++) {
            const ordo__merge_part_t *pt = ordo__merge_buf_part(mb, g, p);
            ck_assert_int_ge(pt->server, prev_server); /* in server order */
            prev_server = pt->server;
            int64_t off = 0;
            const ordo__slice_t *first = &k->slices[pt->slices[0]];
            bool chunked = k->n_chunks[first->key] > 1;
            for (int j = 0; j < pt->n_slices; j++) {
                const ordo__slice_t *sl = &k->slices[pt->slices[j]];
                ck_assert_int_eq(sl->server, pt->server);
                ck_assert_int_eq(ordo__merge_buf_group_of(mb, (int)sl->key), g);
                ck_assert_int_eq(pt->offset[j], off);
                /* a chunked key's slices go alone, as a run of consecutive slices; keys of
                 * one slice go together */
                if (chunked)
                    ck_assert(sl->key == first->key && sl->offset == first->offset + off);
                else
                    ck_assert_int_eq(k->n_chunks[sl->key], 1);
                off += sl->numel;
                seen[pt->slices[j]]++;
            }
            ck_assert_int_eq(pt->numel, off);
            total_parts++;
        }
    }
    for (int s = 0; s < k->n_slices; s++)
        ck_assert_int_eq(seen[s], 1);
    /* key 3's 4 chunks spread over the 3 servers: group 0 has parts on each */
    ck_assert_int_ge(ordo__merge_buf_n_parts(mb, 0), 3);
    int on[NS] = {0};
    for (int p = 0; p < ordo__merge_buf_n_parts(mb, 0); p++)
        on[ordo__merge_buf_part(mb, 0, p)->server]++;
    for (int s = 0; s < NS; s++)
        ck_assert_int_ge(on[s], 1);
    ck_assert_int_ge(total_parts, NG);
    ck_assert_int_eq(ordo__merge_buf_group_of(mb, NK), -1);
    ordo__merge_buf_destroy(&mb);
    ck_assert_ptr_null(mb);
    ordo__keys_destroy(&k);
}
END_TEST

/* message size limits: none, and 1200 bytes (cuts groups after one 1 KiB chunk) */
static const int64_t caps[] = {0, 1200};

START_TEST(pack_then_split_gives_back_every_gradient)
{
    ordo__keys_t *k = make_keys();
    ordo__merge_buf_t *mb;
    ORDO_CK_OK(ordo__merge_buf_new(k, NG, group_start, order, caps[_i], &mb));
    ordo__merged_t *srv[NS];
    for (int s = 0; s < NS; s++)
        ORDO_CK_OK(ordo__merged_new(k, s, &srv[s]));
    float **grad = make_grads();
    float *back[NK];
    for (int key = 0; key < NK; key++)
        back[key] = calloc((size_t)numel[key], sizeof(float));
    for (int round = 0; round < 2; round++) { /* buffers are reused after a reset */
        int completed = 0;
        for (int i = 0; i < NK; i++) {
            int key = order[i], g = -1;
            int rc = ordo__merge_buf_put(mb, key, grad[key], &g);
            ck_assert_int_ge(rc, 0);
            ck_assert_int_eq(g, ordo__merge_buf_group_of(mb, key));
            /* complete exactly at the group's last key */
            ck_assert_int_eq(rc, i + 1 == group_start[g + 1]);
            if (rc != 1) continue;
            completed++;
            for (int p = 0; p < ordo__merge_buf_n_parts(mb, g); p++) {
                const ordo__merge_part_t *pt = ordo__merge_buf_part(mb, g, p);
                const float *payload = ordo__merge_buf_payload(mb, g, p);
                int n;
                ORDO_CK_OK(ordo__merged_split(srv[pt->server], pt->slices,
                                             sizeof(uint32_t) * (size_t)pt->n_slices,
                                             sizeof(float) * (size_t)pt->numel, &n));
                ck_assert_int_eq(n, pt->n_slices);
                if (caps[_i] > 0 && pt->n_slices > 1) ck_assert_int_le(pt->numel * 4, caps[_i]);
                for (int j = 0; j < n; j++) {
                    int sl = ordo__merged_slice(srv[pt->server], j);
                    ck_assert_int_eq(sl, (int)pt->slices[j]);
                    size_t off = ordo__merged_offset(srv[pt->server], j);
                    ck_assert_int_eq(off, (size_t)pt->offset[j] * sizeof(float));
                    const ordo__slice_t *s = &k->slices[sl];
                    memcpy(back[s->key] + s->offset, (const char *)payload + off,
                           (size_t)s->numel * sizeof(float));
                }
                bool run = true; /* consecutive slices of one key */
                for (int j = 1; j < pt->n_slices; j++) {
                    const ordo__slice_t *a = &k->slices[pt->slices[j - 1]],
                                       *b = &k->slices[pt->slices[j]];
                    run = run && a->key == b->key && b->offset == a->offset + a->numel;
                }
                const ordo__slice_t *s0 = &k->slices[pt->slices[0]];
                if (run) /* sent from the gradient itself */
                    ck_assert_ptr_eq(payload, grad[s0->key] + s0->offset);
                else
                    ck_assert_ptr_ne(payload, grad[s0->key] + s0->offset);
            }
            ordo__merge_buf_reset(mb, g);
        }
        ck_assert_int_eq(completed, NG);
        int parts = 0;
        for (int g = 0; g < NG; g++)
            parts += ordo__merge_buf_n_parts(mb, g);
        if (caps[_i] > 0) ck_assert_int_gt(parts, 5); /* the cap cut some server shares */
        for (int key = 0; key < NK; key++) {
            ck_assert(memcmp(back[key], grad[key], sizeof(float) * (size_t)numel[key]) == 0);
            memset(back[key], 0, sizeof(float) * (size_t)numel[key]);
            for (int64_t i = 0; i < numel[key]; i++)
                grad[key][i] += 1.0f; /* the next round pushes other values */
        }
    }
    for (int key = 0; key < NK; key++)
        free(back[key]);
    free_grads(grad);
    for (int s = 0; s < NS; s++)
        ordo__merged_destroy(&srv[s]);
    ordo__merge_buf_destroy(&mb);
    ordo__keys_destroy(&k);
}
END_TEST

/* segments of a chunk on one server travel as one part straight from the gradient, apart
 * from other keys (key 1 on chunk 0's server goes alone, also straight from its gradient) */
START_TEST(segments_of_a_chunk_are_sent_without_a_copy)
{
    const int64_t n2[] = {2048, 10}; /* key 0: 2 chunks of 4 KiB, 4 segments of 1 KiB each */
    ordo__keys_t *k;
    ORDO_CK_OK(ordo__keys_partition(n2, 2, 4, 4096, 1024, 2, &k));
    ck_assert_int_eq(k->n_chunks[0], 8);
    int srv1 = k->slices[4].server; /* chunk 1's server; key 1 joins chunk 0's */
    ck_assert_int_ne(srv1, k->slices[0].server);
    ck_assert_int_eq(k->slices[k->first_slice[1]].server, k->slices[0].server);
    const int ord[] = {0, 1}, start[] = {0, 2};
    for (int cap = 0; cap < 2; cap++) {
        ordo__merge_buf_t *mb;
        ORDO_CK_OK(ordo__merge_buf_new(k, 1, start, ord, cap ? 2048 : 0, &mb));
        float *g0 = calloc(2048, sizeof(float)), g1[10] = {0};
        int g;
        ck_assert_int_eq(ordo__merge_buf_put(mb, 0, g0, &g), 0);
        ck_assert_int_eq(ordo__merge_buf_put(mb, 1, g1, &g), 1);
        int direct = 0, alone = 0;
        for (int p = 0; p < ordo__merge_buf_n_parts(mb, 0); p++) {
            const ordo__merge_part_t *pt = ordo__merge_buf_part(mb, 0, p);
            const float *payload = ordo__merge_buf_payload(mb, 0, p);
            if (pt->slices[0] == (uint32_t)k->first_slice[1]) {
                ck_assert_int_eq(pt->n_slices, 1);
                ck_assert_ptr_eq(payload, g1);
                alone++;
                continue;
            }
            /* each chunk (1024 floats): whole, or cut in two halves by the cap */
            ck_assert_int_eq(pt->n_slices, cap ? 2 : 4);
            ck_assert_ptr_eq(payload, g0 + k->slices[pt->slices[0]].offset);
            direct++;
        }
        ck_assert_int_eq(direct, cap ? 4 : 2);
        ck_assert_int_eq(alone, 1);
        ck_assert_int_eq(ordo__merge_buf_bytes(mb), 0); /* nothing to copy into */
        ck_assert_ptr_null(ordo__merge_buf_home(mb, 0));
        ck_assert_ptr_null(ordo__merge_buf_home(mb, 1));
        free(g0);
        ordo__merge_buf_destroy(&mb);
    }
    ordo__keys_destroy(&k);
}
END_TEST

/* keys of one slice packed together have their homes in the part's buffer: a gradient
 * computed there is sent without a copy, one from elsewhere is copied in */
START_TEST(gradients_computed_in_their_home_are_not_copied)
{
    const int64_t n3[] = {16, 8, 4}; /* one server, three small keys: one part */
    ordo__keys_t *k;
    ORDO_CK_OK(ordo__keys_partition(n3, 3, 4, 4096, 0, 1, &k));
    const int ord[] = {2, 1, 0}, start[] = {0, 3};
    ordo__merge_buf_t *mb;
    ORDO_CK_OK(ordo__merge_buf_new(k, 1, start, ord, 0, &mb));
    ck_assert_int_eq(ordo__merge_buf_n_parts(mb, 0), 1);
    const ordo__merge_part_t *pt = ordo__merge_buf_part(mb, 0, 0);
    float *h[3];
    for (int key = 0; key < 3; key++) {
        h[key] = ordo__merge_buf_home(mb, key);
        ck_assert_ptr_nonnull(h[key]);
    }
    ck_assert_ptr_null(ordo__merge_buf_home(mb, 3));
    /* homes in push order, back to back: key 2 first, then 1, then 0 */
    ck_assert_ptr_eq(h[1], h[2] + 4);
    ck_assert_ptr_eq(h[0], h[1] + 8);
    for (int round = 0; round < 2; round++) {
        float other[16];
        for (int i = 0; i < 16; i++) {
            h[0][i] = 100.0f * (float)round + (float)i;
            other[i] = -1.0f - (float)i;
        }
        for (int i = 0; i < 8; i++)
            h[1][i] = 7.0f;
        int g;
        ck_assert_int_eq(ordo__merge_buf_put(mb, 2, other, &g), 0); /* copied in */
        ck_assert_int_eq(ordo__merge_buf_put(mb, 1, h[1], &g), 0);  /* in place */
        ck_assert_int_eq(ordo__merge_buf_put(mb, 0, h[0], &g), 1);
        const float *payload = ordo__merge_buf_payload(mb, 0, 0);
        ck_assert_ptr_eq(payload, h[2]);
        ck_assert_int_eq(pt->numel, 28);
        for (int i = 0; i < 4; i++)
            ck_assert(payload[i] == other[i]);
        for (int i = 0; i < 8; i++)
            ck_assert(payload[4 + i] == 7.0f);
        for (int i = 0; i < 16; i++)
            ck_assert(payload[12 + i] == 100.0f * (float)round + (float)i);
        ordo__merge_buf_reset(mb, 0);
    }
    ordo__merge_buf_destroy(&mb);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(put_rejects_repeats_and_unknown_keys)
{
    ordo__keys_t *k = make_keys();
    ordo__merge_buf_t *mb;
    ORDO_CK_OK(ordo__merge_buf_new(k, NG, group_start, order, 0, &mb));
    float **grad = make_grads();
    int g;
    ck_assert_int_eq(ordo__merge_buf_put(mb, 4, grad[4], &g), 0);
    ORDO_CK_ERR(ordo__merge_buf_put(mb, 4, grad[4], &g), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "key 4 was put twice into group 0"));
    ORDO_CK_ERR(ordo__merge_buf_put(mb, 5, grad[4], &g), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__merge_buf_put(mb, -1, grad[4], &g), ORDO_ERR_INVAL);
    free_grads(grad);
    ordo__merge_buf_destroy(&mb);
    /* groupings that do not list every key exactly once */
    const int dup[] = {4, 3, 2, 1, 1}, gs_bad[] = {0, 2, 2, 5};
    ORDO_CK_ERR(ordo__merge_buf_new(k, NG, group_start, dup, 0, &mb), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__merge_buf_new(k, NG, gs_bad, order, 0, &mb), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "group 1 is empty"));
    const int gs_short[] = {0, 2, 4};
    ORDO_CK_ERR(ordo__merge_buf_new(k, 2, gs_short, order, 0, &mb), ORDO_ERR_INVAL);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(split_rejects_bad_indexes)
{
    ordo__keys_t *k = make_keys();
    ordo__merged_t *g;
    ORDO_CK_OK(ordo__merged_new(k, 0, &g));
    uint32_t mine[8], n_mine = 0, other = 0;
    int64_t bytes_mine = 0;
    for (int s = 0; s < k->n_slices; s++) {
        if (k->slices[s].server == 0) {
            mine[n_mine++] = (uint32_t)s;
            bytes_mine += k->slices[s].numel * 4;
        } else {
            other = (uint32_t)s;
        }
    }
    ck_assert_uint_ge(n_mine, 2);
    int n;
    ORDO_CK_OK(ordo__merged_split(g, mine, n_mine * 4, (size_t)bytes_mine, &n));
    ck_assert_int_eq(n, (int)n_mine);
    ORDO_CK_ERR(ordo__merged_split(g, mine, 0, 0, &n), ORDO_ERR_PROTO);
    ORDO_CK_ERR(ordo__merged_split(g, mine, 6, 40, &n), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "index of 6 bytes"));
    ORDO_CK_ERR(ordo__merged_split(g, mine, n_mine * 4, (size_t)bytes_mine + 4, &n), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "payload of"));
    uint32_t bad[2] = {mine[0], other};
    ORDO_CK_ERR(ordo__merged_split(g, bad, 8, 8, &n), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "entry 1: slice") &&
              strstr(ordo__error_detail(), "lives on server"));
    bad[1] = mine[0];
    ORDO_CK_ERR(ordo__merged_split(g, bad, 8, 8, &n), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "is listed twice"));
    bad[1] = (uint32_t)k->n_slices;
    ORDO_CK_ERR(ordo__merged_split(g, bad, 8, 8, &n), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "entry 1: no slice"));
    uint32_t many[64] = {0};
    ORDO_CK_ERR(ordo__merged_split(g, many, sizeof many, 0, &n), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "this server holds only"));
    /* an unaligned index is read as well as an aligned one */
    char raw[4 * 8 + 1];
    memcpy(raw + 1, mine, n_mine * 4);
    ORDO_CK_OK(ordo__merged_split(g, raw + 1, n_mine * 4, (size_t)bytes_mine, &n));
    ck_assert_int_eq(ordo__merged_slice(g, (int)n_mine - 1), (int)mine[n_mine - 1]);
    ordo__merged_destroy(&g);
    ck_assert_ptr_null(g);
    ordo__keys_destroy(&k);
}
END_TEST

static Suite *merge_buf_suite(void)
{
    Suite *s = suite_create("merge_buf");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, parts_cover_each_group_in_server_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("round_trip");
    tcase_add_loop_test(tc, pack_then_split_gives_back_every_gradient, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("rejects");
    tcase_add_test(tc, segments_of_a_chunk_are_sent_without_a_copy);
    tcase_add_test(tc, gradients_computed_in_their_home_are_not_copied);
    tcase_add_test(tc, put_rejects_repeats_and_unknown_keys);
    tcase_add_test(tc, split_rejects_bad_indexes);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(merge_buf_suite)
