/* Tests of common/keys: chunking, balance, determinism, JSON round trip and rejection. */
#include "common/keys.h"
#include "ordo_check.h"

#include <string.h>

START_TEST(chunks_tile_large_tensors)
{
    int64_t numel[] = {1000, 3 * 1048576 + 5, 10};
    ordo_keys_t *k;
    ORDO_CK_OK(ordo_keys_partition(numel, 3, 4, 4 << 20, 2, &k));
    ck_assert_int_eq(k->n_chunks[0], 1);
    ck_assert_int_eq(k->n_chunks[1], 4); /* 12 MiB + 20 bytes over 4 MiB chunks */
    ck_assert_int_eq(k->n_slices, 6);
    int64_t off = 0;
    for (int c = 0; c < 4; c++) {
        const ordo_slice_t *s = &k->slices[ordo_keys_slice(k, 1, (uint32_t)c)];
        ck_assert_int_eq(s->offset, off);
        ck_assert_int_le(s->numel * 4, 4 << 20);
        off += s->numel;
    }
    ck_assert_int_eq(off, numel[1]);
    ck_assert_int_eq(ordo_keys_slice(k, 1, 4), -1);
    ck_assert_int_eq(ordo_keys_slice(k, 3, 0), -1);
    ordo_keys_destroy(&k);
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
    ordo_keys_t *k, *k2;
    ORDO_CK_OK(ordo_keys_partition(numel, 40, 4, 1 << 20, 3, &k));
    ORDO_CK_OK(ordo_keys_partition(numel, 40, 4, 1 << 20, 3, &k2));
    for (int i = 0; i < k->n_slices; i++) {
        ck_assert_int_eq(k->slices[i].server, k2->slices[i].server);
        if (k->slices[i].numel > largest) largest = k->slices[i].numel;
    }
    /* greedy largest-first: max load exceeds the mean by at most one slice */
    int64_t sum = 0;
    for (int s = 0; s < 3; s++) sum += k->server_bytes[s];
    ck_assert_int_eq(sum, total * 4);
    for (int s = 0; s < 3; s++) ck_assert_int_le(k->server_bytes[s], sum / 3 + largest * 4);
    ordo_keys_destroy(&k);
    ordo_keys_destroy(&k2);
}
END_TEST

START_TEST(json_round_trip_and_rejects)
{
    int64_t numel[] = {5, 3000000, 7};
    ordo_keys_t *k, *g;
    ORDO_CK_OK(ordo_keys_partition(numel, 3, 4, 1 << 20, 2, &k));
    char *js = ordo_keys_to_json(k);
    ORDO_CK_OK(ordo_keys_from_json(js, &g));
    ck_assert_int_eq(g->n_slices, k->n_slices);
    for (int i = 0; i < k->n_slices; i++)
        ck_assert(memcmp(&g->slices[i], &k->slices[i], sizeof g->slices[i]) == 0);
    free(js);
    ordo_keys_destroy(&g);
    ORDO_CK_ERR(ordo_keys_from_json("{", &g), ORDO_EPROTO);
    ORDO_CK_ERR(ordo_keys_from_json("{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[[0,0,0,3,0]]}", &g), ORDO_EPROTO);
    ck_assert(strstr(ordo_error_detail(), "do not cover"));
    ORDO_CK_ERR(ordo_keys_from_json("{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[[0,0,0,4,1]]}", &g), ORDO_EPROTO);
    ck_assert(strstr(ordo_error_detail(), "slices[0] does not tile"));
    ORDO_CK_ERR(ordo_keys_from_json("{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[[0,0,1,3,0]]}", &g), ORDO_EPROTO);
    ORDO_CK_ERR(ordo_keys_from_json("{\"servers\":1,\"elem\":4,\"numel\":[4],\"slices\":[\"x\"]}", &g), ORDO_EPROTO);
    ordo_keys_destroy(&k);
}
END_TEST

static Suite *keys_suite(void)
{
    Suite *s = suite_create("keys");
    TCase *tc = tcase_create("partition");
    tcase_add_test(tc, chunks_tile_large_tensors);
    tcase_add_test(tc, balanced_and_deterministic);
    suite_add_tcase(s, tc);
    tc = tcase_create("json");
    tcase_add_test(tc, json_round_trip_and_rejects);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(keys_suite)
