/* Tests of common/keys: chunking, segments, determinism, JSON round trip and rejection. */
#include "common/keys.h"
#include "ordo_check.h"

#include <string.h>

START_TEST(chunks_tile_large_tensors)
{
    int64_t numel[] = {1000, 3 * 1048576 + 5, 10};
    ordo__keys_t *k;
    ORDO_CK_OK(ordo__keys_partition(numel, 3, 4, 4 << 20, 0, 2, &k));
    ck_assert_int_eq(k->n_chunks[0], 1);
    ck_assert_int_eq(k->n_chunks[1], 4); /* 12 MiB + 20 bytes over 4 MiB chunks */
    ck_assert_int_eq(k->n_slices, 6);
    int64_t off = 0;
    for (int c = 0; c < 4; c++) {
        const ordo__slice_t *s = &k->slices[ordo__keys_slice(k, 1, (uint32_t)c)];
        ck_assert_int_eq(s->offset, off);
        ck_assert_int_le(s->numel * 4, 4 << 20);
        off += s->numel;
    }
    ck_assert_int_eq(off, numel[1]);
    ck_assert_int_eq(ordo__keys_slice(k, 1, 4), -1);
    ck_assert_int_eq(ordo__keys_slice(k, 3, 0), -1);
    ordo__keys_destroy(&k);
    ck_assert_ptr_null(k);
}
END_TEST

START_TEST(balanced_and_deterministic)
{
    int64_t numel[40];
    unsigned seed = 7;
    int64_t total = 0, largest = 0;
    for (int i = 0; i < 40; i++) {
        numel[i] = 1 + rand_r(&seed) % 2000000;
        total += numel[i];
    }
    ordo__keys_t *k, *k2;
    ORDO_CK_OK(ordo__keys_partition(numel, 40, 4, 1 << 20, 0, 3, &k));
    ORDO_CK_OK(ordo__keys_partition(numel, 40, 4, 1 << 20, 0, 3, &k2));
    for (int i = 0; i < k->n_slices; i++) {
        ck_assert_int_eq(k->slices[i].server, k2->slices[i].server);
        if (k->slices[i].numel > largest) largest = k->slices[i].numel;
    }
    /* greedy largest-first: max load exceeds the mean by at most one slice */
    int64_t sum = 0;
    for (int s = 0; s < 3; s++)
        sum += k->server_bytes[s];
    ck_assert_int_eq(sum, total * 4);
    for (int s = 0; s < 3; s++)
        ck_assert_int_le(k->server_bytes[s], sum / 3 + largest * 4);
    ordo__keys_destroy(&k);
    ordo__keys_destroy(&k2);
}
END_TEST

START_TEST(segments_stay_on_their_chunks_server)
{
    int64_t numel[] = {4 << 20, 1000, 600000}; /* 16 MiB, 4000 B, 2.4 MB */
    ordo__keys_t *k, *whole, *same;
    ORDO_CK_OK(ordo__keys_partition(numel, 3, 4, 4 << 20, 1 << 20, 2, &k));
    ORDO_CK_OK(ordo__keys_partition(numel, 3, 4, 4 << 20, 0, 2, &whole));
    ORDO_CK_OK(ordo__keys_partition(numel, 3, 4, 4 << 20, 8 << 20, 2, &same));
    ck_assert_int_eq(k->n_chunks[0], 16); /* 4 chunks of 4 MiB, 4 segments of 1 MiB each */
    ck_assert_int_eq(k->n_chunks[1], 1);
    ck_assert_int_eq(k->n_chunks[2], 3); /* one chunk of 2.4 MB in 3 segments of 800 kB */
    ck_assert_int_eq(k->n_slices, 20);
    ck_assert_int_eq(whole->n_slices, 6);
    ck_assert_int_eq(same->n_slices, 6); /* segments at least a chunk: whole chunks */
    for (int key = 0; key < 3; key++) {
        int64_t off = 0;
        for (int c = 0; c < k->n_chunks[key]; c++) {
            const ordo__slice_t *sl = &k->slices[ordo__keys_slice(k, (uint32_t)key, (uint32_t)c)];
            ck_assert_int_eq(sl->key, key);
            ck_assert_int_eq(sl->chunk, c);
            ck_assert_int_eq(sl->offset, off);
            ck_assert_int_le(sl->numel * 4, 1 << 20);
            off += sl->numel;
        }
        ck_assert_int_eq(off, numel[key]);
    }
    ck_assert_int_eq(k->slices[ordo__keys_slice(k, 2, 0)].numel, 200000);
    /* placement is by chunk: the segments of chunk c sit where the whole chunk c would */
    for (int c = 0; c < 4; c++)
        for (int g = 0; g < 4; g++)
            ck_assert_int_eq(k->slices[ordo__keys_slice(k, 0, (uint32_t)(4 * c + g))].server,
                             whole->slices[ordo__keys_slice(whole, 0, (uint32_t)c)].server);
    for (int g = 0; g < 3; g++)
        ck_assert_int_eq(k->slices[ordo__keys_slice(k, 2, (uint32_t)g)].server,
                         whole->slices[ordo__keys_slice(whole, 2, 0)].server);
    for (int s = 0; s < 2; s++)
        ck_assert_int_eq(k->server_bytes[s], whole->server_bytes[s]);
    ordo__keys_destroy(&k);
    ordo__keys_destroy(&whole);
    ordo__keys_destroy(&same);
}
END_TEST

START_TEST(json_round_trip_and_rejects)
{
    int64_t numel[] = {5, 3000000, 7};
    ordo__keys_t *k, *g;
    ORDO_CK_OK(ordo__keys_partition(numel, 3, 4, 1 << 20, 256 << 10, 2, &k));
    ck_assert_int_eq(k->n_chunks[1], 48); /* 12 chunks of 1 MB, 4 segments each */
    char *js = ordo__keys_to_json(k);
    ORDO_CK_OK(ordo__keys_from_json(js, &g));
    ck_assert_int_eq(g->n_slices, k->n_slices);
    for (int i = 0; i < k->n_slices; i++)
        ck_assert(memcmp(&g->slices[i], &k->slices[i], sizeof g->slices[i]) == 0);
    free(js);
    ordo__keys_destroy(&g);
    ORDO_CK_ERR(ordo__keys_from_json("{", &g), ORDO_ERR_PROTO);
    ORDO_CK_ERR(ordo__keys_from_json(
                    "{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[[0,0,0,3,0]]}", &g),
                ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "do not cover"));
    ORDO_CK_ERR(ordo__keys_from_json(
                    "{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[[0,0,0,4,1]]}", &g),
                ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "slices[0] does not tile"));
    ORDO_CK_ERR(ordo__keys_from_json(
                    "{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[[0,0,1,3,0]]}", &g),
                ORDO_ERR_PROTO);
    ORDO_CK_ERR(
        ordo__keys_from_json("{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[\"x\"]}", &g),
        ORDO_ERR_PROTO);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(replicas_and_failed_servers)
{
    int64_t numel[] = {1000, 2000, 3000, 4000};
    ordo__keys_t *k, *g;
    ORDO_CK_OK(ordo__keys_partition(numel, 4, 4, 1 << 20, 0, 3, &k));
    ORDO_CK_ERR(ordo__keys_set_replicas(k, 4), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__keys_set_replicas(k, 0), ORDO_ERR_INVAL);
    ORDO_CK_OK(ordo__keys_set_replicas(k, 2));
    for (int i = 0; i < k->n_slices; i++) { /* home, then the next server */
        ck_assert_int_eq(ordo__keys_replica(k, i, 0), k->slices[i].server);
        ck_assert_int_eq(ordo__keys_replica(k, i, 1), (k->slices[i].server + 1) % 3);
        ck_assert_int_eq(ordo__keys_replica(k, i, 2), -1);
        ck_assert(ordo__keys_holds(k, i, k->slices[i].server));
        ck_assert(!ordo__keys_holds(k, i, (k->slices[i].server + 2) % 3));
    }
    int moved, on1 = 0;
    for (int i = 0; i < k->n_slices; i++)
        on1 += k->slices[i].server == 1;
    ORDO_CK_OK(ordo__keys_server_failed(k, 1, &moved));
    ck_assert_int_eq(moved, on1);
    for (int i = 0; i < k->n_slices; i++) {
        ck_assert_int_ne(k->slices[i].server, 1);
        ck_assert(!ordo__keys_holds(k, i, 1));
        if (k->home[i] == 1) ck_assert_int_eq(k->slices[i].server, 2); /* its backup */
    }
    ck_assert_int_eq(k->server_bytes[1], 0);
    ORDO_CK_OK(ordo__keys_server_failed(k, 1, &moved)); /* again: nothing changes */
    ck_assert_int_eq(moved, 0);
    /* server 2 backs up server 1's slices, whose only other copy is gone */
    int before[16];
    for (int i = 0; i < k->n_slices; i++)
        before[i] = k->slices[i].server;
    ORDO_CK_ERR(ordo__keys_server_failed(k, 2, &moved), ORDO_ERR_PEERDEAD);
    for (int i = 0; i < k->n_slices; i++)
        ck_assert_int_eq(k->slices[i].server, before[i]);
    /* the map travels with its replicas and dead servers */
    char *js = ordo__keys_to_json(k);
    ORDO_CK_OK(ordo__keys_from_json(js, &g));
    ck_assert_int_eq(g->replicas, 2);
    ck_assert(g->dead[1] && !g->dead[0] && !g->dead[2]);
    for (int i = 0; i < k->n_slices; i++) {
        ck_assert_int_eq(g->slices[i].server, k->slices[i].server);
        ck_assert_int_eq(g->home[i], k->home[i]);
    }
    free(js);
    ordo__keys_destroy(&g);
    ORDO_CK_ERR(ordo__keys_from_json("{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":"
                                    "[[0,0,0,4,0]],\"replicas\":2}", &g), ORDO_ERR_PROTO);
    ORDO_CK_ERR(ordo__keys_from_json("{\"servers\":2,\"elem\":4,\"numel\":[4],\"slices\":"
                                    "[[0,0,0,4,0]],\"replicas\":2,\"dead\":[0,1]}", &g),
                ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "dead[1]"));
    /* a replacement joins in server 1's place: a backup again, the primaries stay */
    ORDO_CK_OK(ordo__keys_server_joined(k, 1));
    for (int i = 0; i < k->n_slices; i++) {
        ck_assert_int_eq(k->slices[i].server, before[i]);
        ck_assert(ordo__keys_holds(k, i, 1) == (k->home[i] == 1 || (k->home[i] + 1) % 3 == 1));
    }
    js = ordo__keys_to_json(k);
    ORDO_CK_OK(ordo__keys_from_json(js, &g));
    for (int i = 0; i < k->n_slices; i++) /* the sticky primaries travel in "primary" */
        ck_assert_int_eq(g->slices[i].server, k->slices[i].server);
    free(js);
    ordo__keys_destroy(&g);
    ordo__keys_destroy(&k);
}
END_TEST

static Suite *keys_suite(void)
{
    Suite *s = suite_create("keys");
    TCase *tc = tcase_create("partition");
    tcase_add_test(tc, chunks_tile_large_tensors);
    tcase_add_test(tc, balanced_and_deterministic);
    tcase_add_test(tc, segments_stay_on_their_chunks_server);
    suite_add_tcase(s, tc);
    tc = tcase_create("json");
    tcase_add_test(tc, json_round_trip_and_rejects);
    suite_add_tcase(s, tc);
    tc = tcase_create("replicas");
    tcase_add_test(tc, replicas_and_failed_servers);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(keys_suite)
