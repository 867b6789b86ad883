/* Tests of server/store's aggregation order: pushes are summed in worker rank order whatever
 * order they arrive in (so dense and merged pushes, and any two runs, give the same bits),
 * with pushes held uncopied until their turn, from plain buffers, received frames, and
 * frames shared by several slices (merged pushes). */
#include "common/keys.h"
#include "server/store.h"
#include "ordo_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define N 64 /* floats per slice */
#define W 3

/* gradients for which float addition is not associative: (g0 + g1) + g2 keeps the small
 * values of g1 only roughly, (g0 + g2) + g1 exactly */
static void grads(float g[W][N])
{
    for (int i = 0; i < N; i++) {
        g[0][i] = 1e8f;
        g[1][i] = 1.0f + 0.001f * (float)i;
        g[2][i] = -1e8f;
    }
}

static ordo_store_t *make_store(ordo_keys_t **k, int n_keys)
{
    int64_t numel[4] = {N, N, N, N};
    ORDO_CK_OK(ordo_keys_partition(numel, n_keys, 4, 1 << 20, 0, 1, k));
    ordo_optim_t opt = {.lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f};
    ordo_store_t *s;
    ORDO_CK_OK(ordo_store_new(*k, 0, W, &opt, 1.0f, &s));
    float zero[N] = {0};
    bool ignored;
    for (int i = 0; i < n_keys; i++)
        ORDO_CK_OK(ordo_store_init(s, i, zero, sizeof zero, &ignored));
    return s;
}

static const int perms[6][W] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

START_TEST(every_arrival_order_gives_the_same_bits)
{
    float g[W][N], first[N], v[N];
    grads(g);
    for (int p = 0; p < 6; p++) {
        ordo_keys_t *k;
        ordo_store_t *s = make_store(&k, 1);
        for (int j = 0; j < W; j++) {
            bool updated;
            int w = perms[p][j];
            ORDO_CK_OK(ordo_store_push(s, 0, w, 0, g[w], sizeof g[w], &updated));
            ck_assert(updated == (j == W - 1)); /* the last arrival completes the iteration */
        }
        ck_assert_int_eq(ordo_store_version(s, 0), 1);
        ordo_store_copy_value(s, 0, v);
        if (p == 0) memcpy(first, v, sizeof v);
        ck_assert_msg(memcmp(first, v, sizeof v) == 0, "arrival order %d%d%d differs", perms[p][0],
                      perms[p][1], perms[p][2]);
        ordo_store_destroy(&s);
        ordo_keys_destroy(&k);
    }
    /* and it is the rank-order sum, not the one arrival order (0, 2, 1) would give */
    for (int i = 0; i < N; i++) {
        float rank_order = (g[0][i] + g[1][i]) + g[2][i];
        ck_assert_float_eq(first[i], -rank_order);
    }
    ck_assert(first[1] != -((g[0][1] + g[2][1]) + g[1][1]));
}
END_TEST

/* a received frame holding n slices of N floats each (as a merged push carries them) */
static ordo_store_frame_t *frame_of(const float *const *parts, int n)
{
    zmq_msg_t m;
    ck_assert_int_eq(zmq_msg_init_size(&m, sizeof(float) * N * (size_t)n), 0);
    for (int i = 0; i < n; i++)
        memcpy((float *)zmq_msg_data(&m) + (size_t)i * N, parts[i], sizeof(float) * N);
    ordo_store_frame_t *f = ordo_store_frame_wrap(&m);
    ck_assert_ptr_nonnull(f);
    zmq_msg_close(&m);
    return f;
}

START_TEST(shared_frames_held_until_their_turn)
{
    /* two slices travel in one frame per worker; workers arrive 2, 0, 1 */
    float g[W][N], v0[N], v1[N], ref0[N], ref1[N];
    grads(g);
    float h[W][N];
    for (int w = 0; w < W; w++)
        for (int i = 0; i < N; i++)
            h[w][i] = g[w][i] * 0.5f;
    ordo_keys_t *k;
    ordo_store_t *s = make_store(&k, 2);
    const int arrival[W] = {2, 0, 1};
    for (int j = 0; j < W; j++) {
        int w = arrival[j];
        const float *parts[2] = {g[w], h[w]};
        ordo_store_frame_t *f = frame_of(parts, 2);
        size_t len;
        const float *data = ordo_store_frame_data(f, &len);
        ck_assert_uint_eq(len, sizeof(float) * 2 * N);
        bool u0, u1;
        ORDO_CK_OK(ordo_store_check_push(s, 0, w, 0, sizeof(float) * N));
        ORDO_CK_OK(ordo_store_push_ref(s, 0, w, 0, data, sizeof(float) * N, f, &u0));
        ORDO_CK_OK(ordo_store_push_ref(s, 1, w, 0, data + N, sizeof(float) * N, f, &u1));
        ordo_store_frame_unref(f); /* the store keeps what it still needs */
        ck_assert(u0 == (j == W - 1) && u1 == (j == W - 1));
    }
    ordo_store_copy_value(s, 0, v0);
    ordo_store_copy_value(s, 1, v1);
    ordo_store_destroy(&s);
    ordo_keys_destroy(&k);
    /* the same pushes one slice at a time from plain buffers, in rank order */
    s = make_store(&k, 2);
    for (int w = 0; w < W; w++) {
        bool u;
        ORDO_CK_OK(ordo_store_push(s, 0, w, 0, g[w], sizeof g[w], &u));
        ORDO_CK_OK(ordo_store_push(s, 1, w, 0, h[w], sizeof h[w], &u));
    }
    ordo_store_copy_value(s, 0, ref0);
    ordo_store_copy_value(s, 1, ref1);
    ck_assert(memcmp(v0, ref0, sizeof v0) == 0);
    ck_assert(memcmp(v1, ref1, sizeof v1) == 0);
    ordo_store_destroy(&s);
    ordo_keys_destroy(&k);
}
END_TEST

START_TEST(held_pushes_are_freed_with_the_store)
{
    /* an iteration left incomplete: worker 0 never pushes; destroying frees what is held */
    float g[W][N];
    grads(g);
    ordo_keys_t *k;
    ordo_store_t *s = make_store(&k, 1);
    bool u;
    const float *parts[1] = {g[2]};
    ordo_store_frame_t *f = frame_of(parts, 1);
    size_t len;
    const float *data = ordo_store_frame_data(f, &len);
    ORDO_CK_OK(ordo_store_push_ref(s, 0, 2, 0, data, len, f, &u));
    ordo_store_frame_unref(f);
    ORDO_CK_OK(ordo_store_push(s, 0, 1, 0, g[1], sizeof g[1], &u));
    ck_assert(!u);
    ORDO_CK_ERR(ordo_store_push(s, 0, 1, 0, g[1], sizeof g[1], &u), ORDO_EPROTO);
    ck_assert(strstr(ordo_error_detail(), "worker 1 pushed slice 0 twice"));
    ck_assert_int_eq(ordo_store_version(s, 0), 0);
    ordo_store_destroy(&s);
    ordo_keys_destroy(&k);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    TCase *tc = tcase_create("order");
    tcase_add_test(tc, every_arrival_order_gives_the_same_bits);
    tcase_add_test(tc, shared_frames_held_until_their_turn);
    tcase_add_test(tc, held_pushes_are_freed_with_the_store);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(store_suite)
