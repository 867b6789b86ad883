/* Tests of server/store's aggregation order: pushes are summed in worker rank order whatever
 * order they arrive in (so dense and merged pushes, and any two runs, give the same bits),
 * with pushes held uncopied until their turn, from plain buffers, received frames, and
 * frames shared by several slices (merged pushes); and the consistency models: ssp's
 * iterations summed ahead and applied in order (the bits of bsp), asp's push-by-push
 * updates, backup workers' first pushes taken and late ones dropped; a restarted worker's
 * re-sent pushes left out, a worker that left (shrink) no longer waited for, and one that
 * joins (fault.max_workers) waited for from its join iteration on. */
#include "common/codec.h"
#include "common/error.h"
#include "common/keys.h"
#include "server/consistency/model.h"
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

static ordo__store_t *make_store(ordo__keys_t **k, int n_keys)
{
    int64_t numel[4] = {N, N, N, N};
    ORDO_CK_OK(ordo__keys_partition(numel, n_keys, 4, 1 << 20, 0, 1, k));
    ordo__optim_t opt = {.lr = 1.0f, .momentum = 0.0f, .weight_decay = 0.0f};
    ordo__store_t *s;
    ORDO_CK_OK(ordo__store_new(*k, 0, W, &opt, 1.0f, &s));
    float zero[N] = {0};
    bool ignored;
    for (int i = 0; i < n_keys; i++)
        ORDO_CK_OK(ordo__store_init(s, i, zero, sizeof zero, &ignored));
    return s;
}

static const int perms[6][W] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};

START_TEST(every_arrival_order_gives_the_same_bits)
{
    float g[W][N], first[N], v[N];
    grads(g);
    for (int p = 0; p < 6; p++) {
        ordo__keys_t *k;
        ordo__store_t *s = make_store(&k, 1);
        for (int j = 0; j < W; j++) {
            bool updated;
            int w = perms[p][j];
            ORDO_CK_OK(ordo__store_push(s, 0, w, 0, g[w], sizeof g[w], &updated));
            ck_assert(updated == (j == W - 1)); /* the last arrival completes the iteration */
        }
        ck_assert_int_eq(ordo__store_version(s, 0), 1);
        ordo__store_copy_value(s, 0, v);
        if (p == 0) memcpy(first, v, sizeof v);
        ck_assert_msg(memcmp(first, v, sizeof v) == 0, "arrival order %d%d%d differs", perms[p][0],
                      perms[p][1], perms[p][2]);
        ordo__store_destroy(&s);
        ordo__keys_destroy(&k);
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
static ordo__store_frame_t *frame_of(const float *const *parts, int n)
{
    zmq_msg_t m;
    ck_assert_int_eq(zmq_msg_init_size(&m, sizeof(float) * N * (size_t)n), 0);
    for (int i = 0; i < n; i++)
        memcpy((float *)zmq_msg_data(&m) + (size_t)i * N, parts[i], sizeof(float) * N);
    ordo__store_frame_t *f = ordo__store_frame_wrap(&m);
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
    ordo__keys_t *k;
    ordo__store_t *s = make_store(&k, 2);
    const int arrival[W] = {2, 0, 1};
    for (int j = 0; j < W; j++) {
        int w = arrival[j];
        const float *parts[2] = {g[w], h[w]};
        ordo__store_frame_t *f = frame_of(parts, 2);
        size_t len;
        const float *data = ordo__store_frame_data(f, &len);
        ck_assert_uint_eq(len, sizeof(float) * 2 * N);
        bool u0, u1;
        ordo__grad_t g0 = {data, sizeof(float) * N, ORDO_DTYPE_F32};
        ORDO_CK_OK(ordo__store_check_push(s, 0, w, 0, &g0));
        ORDO_CK_OK(ordo__store_push_ref(s, 0, w, 0, data, sizeof(float) * N, f, &u0));
        ORDO_CK_OK(ordo__store_push_ref(s, 1, w, 0, data + N, sizeof(float) * N, f, &u1));
        ordo__store_frame_unref(f); /* the store keeps what it still needs */
        ck_assert(u0 == (j == W - 1) && u1 == (j == W - 1));
    }
    ordo__store_copy_value(s, 0, v0);
    ordo__store_copy_value(s, 1, v1);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
    /* the same pushes one slice at a time from plain buffers, in rank order */
    s = make_store(&k, 2);
    for (int w = 0; w < W; w++) {
        bool u;
        ORDO_CK_OK(ordo__store_push(s, 0, w, 0, g[w], sizeof g[w], &u));
        ORDO_CK_OK(ordo__store_push(s, 1, w, 0, h[w], sizeof h[w], &u));
    }
    ordo__store_copy_value(s, 0, ref0);
    ordo__store_copy_value(s, 1, ref1);
    ck_assert(memcmp(v0, ref0, sizeof v0) == 0);
    ck_assert(memcmp(v1, ref1, sizeof v1) == 0);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(held_pushes_are_freed_with_the_store)
{
    /* an iteration left incomplete: worker 0 never pushes; destroying frees what is held */
    float g[W][N];
    grads(g);
    ordo__keys_t *k;
    ordo__store_t *s = make_store(&k, 1);
    bool u;
    const float *parts[1] = {g[2]};
    ordo__store_frame_t *f = frame_of(parts, 1);
    size_t len;
    const float *data = ordo__store_frame_data(f, &len);
    ORDO_CK_OK(ordo__store_push_ref(s, 0, 2, 0, data, len, f, &u));
    ordo__store_frame_unref(f);
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u));
    ck_assert(!u);
    ORDO_CK_ERR(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "worker 1 pushed slice 0 twice"));
    ck_assert_int_eq(ordo__store_version(s, 0), 0);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST


/* ---- consistency models ([sync]) ------------------------------------------------------ */

/* a store of one slice of N floats (value 0) for nw workers, plain SGD lr 1 and momentum mu */
static ordo__store_t *sync_store(ordo__keys_t **k, int nw, float mu, float scale, int mode,
                                int staleness, int backup)
{
    int64_t numel[1] = {N};
    ORDO_CK_OK(ordo__keys_partition(numel, 1, 1, 1 << 20, 0, 1, k));
    ordo__optim_t opt = {.lr = 1.0f, .momentum = mu, .weight_decay = 0.0f};
    ordo__store_t *s;
    ORDO_CK_OK(ordo__store_new(*k, 0, nw, &opt, scale, &s));
    ORDO_CK_OK(ordo__store_set_sync(s, mode, staleness, backup));
    float zero[N] = {0};
    bool ignored;
    ORDO_CK_OK(ordo__store_init(s, 0, zero, sizeof zero, &ignored));
    return s;
}

/* worker w's gradient of iteration t: different in every element, worker and iteration */
static void grad_of(int w, int64_t t, float *g)
{
    for (int i = 0; i < N; i++) g[i] = (float)(w + 1) * 0.37f + (float)t * 1.3f + 0.01f * (float)i;
}

START_TEST(ssp_sums_iterations_ahead_and_applies_them_in_order)
{
    ordo__keys_t *k, *kb;
    ordo__store_t *s = sync_store(&k, W, 0.9f, 1.0f / W, ORDO_SYNC_SSP, 2, 0);
    ordo__store_t *b = sync_store(&kb, W, 0.9f, 1.0f / W, ORDO_SYNC_BSP, 0, 0);
    float g[N], v[N], vb[N];
    bool u;
    /* workers 1 and 2 run two iterations ahead of worker 0 */
    for (int64_t t = 0; t < 3; t++)
        for (int w = 2; w >= 1; w--) {
            grad_of(w, t, g);
            ORDO_CK_OK(ordo__store_push(s, 0, w, t, g, sizeof g, &u));
            ck_assert(!u);
        }
    ck_assert_int_eq(ordo__store_version(s, 0), 0);
    ck_assert(ordo__store_ready(s, 0, 2));  /* 2 - staleness <= version */
    ck_assert(!ordo__store_ready(s, 0, 3)); /* would need iteration 0 */
    grad_of(1, 3, g);                      /* beyond the window */
    ORDO_CK_ERR(ordo__store_push(s, 0, 1, 3, g, sizeof g, &u), ORDO_ERR_PROTO);
    grad_of(0, 0, g);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g, sizeof g, &u));
    ck_assert(u);
    ck_assert_int_eq(ordo__store_version(s, 0), 1);
    grad_of(0, 1, g);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 1, g, sizeof g, &u));
    ck_assert_int_eq(ordo__store_version(s, 0), 2);
    /* the same bits as bsp fed iteration by iteration */
    for (int64_t t = 0; t < 2; t++)
        for (int w = 0; w < W; w++) {
            grad_of(w, t, g);
            ORDO_CK_OK(ordo__store_push(b, 0, w, t, g, sizeof g, &u));
        }
    ordo__store_copy_value(s, 0, v);
    ordo__store_copy_value(b, 0, vb);
    ck_assert(memcmp(v, vb, sizeof v) == 0);
    ordo__store_destroy(&s);
    ordo__store_destroy(&b);
    ordo__keys_destroy(&k);
    ordo__keys_destroy(&kb);
}
END_TEST

START_TEST(ssp_pull_ahead_reads_the_pushes_received)
{
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, W, 0.0f, 1.0f / W, ORDO_SYNC_SSP, 1, 0);
    float g1[N], g2[N], v[N];
    bool u;
    grad_of(1, 0, g1);
    grad_of(2, 0, g2);
    ORDO_CK_OK(ordo__store_push(s, 0, 2, 0, g2, sizeof g2, &u)); /* held: worker 0 first */
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 0, g1, sizeof g1, &u));
    void *data, *hint;
    size_t bytes;
    ORDO_CK_OK(ordo__store_ref_pull(s, 0, 0, &data, &bytes, &hint)); /* at the value: itself */
    ordo__store_copy_value(s, 0, v);
    ck_assert(memcmp(data, v, sizeof v) == 0);
    ordo__store_unref_cb(data, hint);
    ORDO_CK_OK(ordo__store_ref_pull(s, 0, 1, &data, &bytes, &hint)); /* ahead: with 1 and 2's */
    ck_assert_int_eq((int)bytes, (int)sizeof v);
    const float *a = data;
    for (int i = 0; i < N; i++)
        ck_assert_float_eq_tol(a[i], -(1.0f / W) * (g1[i] + g2[i]), 1e-5f);
    ordo__store_unref_cb(data, hint);
    ordo__store_copy_value(s, 0, v); /* the stored value is untouched */
    for (int i = 0; i < N; i++) ck_assert_float_eq(v[i], 0.0f);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(ssp_zero_staleness_is_bsp)
{
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, W, 0.0f, 1.0f, ORDO_SYNC_SSP, 0, 0);
    float g[N];
    bool u;
    grad_of(0, 0, g);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g, sizeof g, &u));
    ORDO_CK_ERR(ordo__store_push(s, 0, 0, 1, g, sizeof g, &u), ORDO_ERR_PROTO);
    ck_assert(ordo__store_ready(s, 0, 0));
    ck_assert(!ordo__store_ready(s, 0, 1));
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

/* [fault] replicas: the update count a backup acknowledges (the version under bsp, the pushes
 * applied under asp, the pushes taken under ssp); an asp backup that installs a primary's
 * value and push clocks knows the version and which re-sent pushes it already has */
START_TEST(replica_update_count_and_asp_clocks)
{
    ordo__keys_t *k, *kb, *ks;
    ordo__store_t *s = sync_store(&k, W, 0.0f, 1.0f, ORDO_SYNC_ASP, 0, 0);
    ordo__store_t *b = sync_store(&kb, W, 0.0f, 1.0f, ORDO_SYNC_ASP, 0, 0);
    float g[N], v[N];
    bool u;
    ck_assert_int_eq(ordo__store_seq(s, 0), 0);
    grad_of(0, 0, g);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g, sizeof g, &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 1, g, sizeof g, &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 2, 0, g, sizeof g, &u));
    ck_assert_int_eq(ordo__store_seq(s, 0), 3); /* three pushes applied */
    ck_assert_int_eq(ordo__store_version(s, 0), 0); /* worker 1 has pushed nothing */
    const int64_t *clocks = ordo__store_clocks(s, 0);
    ck_assert_ptr_nonnull(clocks);
    ordo__store_copy_value(s, 0, v);
    ORDO_CK_OK(ordo__store_install(b, 0, 0, v, sizeof v, NULL, 0));
    ORDO_CK_OK(ordo__store_install_clocks(b, 0, clocks, sizeof(int64_t) * W));
    ck_assert_int_eq(ordo__store_seq(b, 0), 3);
    ck_assert(ordo__store_pushed(b, 0, 0, 1));  /* worker 0's push of 1: applied */
    ck_assert(!ordo__store_pushed(b, 0, 0, 2)); /* its next */
    ck_assert(!ordo__store_pushed(b, 0, 1, 0));
    ORDO_CK_ERR(ordo__store_install_clocks(b, 0, clocks, sizeof(int64_t)), ORDO_ERR_PROTO);
    grad_of(1, 0, g);
    ORDO_CK_OK(ordo__store_push(b, 0, 1, 0, g, sizeof g, &u)); /* the backup goes on from there */
    ck_assert_int_eq(ordo__store_version(b, 0), 1);
    ck_assert_int_eq(ordo__store_seq(b, 0), 4);
    ordo__store_destroy(&s);
    ordo__store_destroy(&b);
    /* ssp counts the pushes taken, completed or not; no clocks */
    s = sync_store(&ks, W, 0.0f, 1.0f, ORDO_SYNC_SSP, 2, 0);
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 1, g, sizeof g, &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g, sizeof g, &u));
    ck_assert_int_eq(ordo__store_seq(s, 0), 2);
    ck_assert_int_eq(ordo__store_version(s, 0), 0);
    ck_assert_ptr_null(ordo__store_clocks(s, 0));
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
    ordo__keys_destroy(&kb);
    ordo__keys_destroy(&ks);
}
END_TEST

START_TEST(asp_applies_every_push_at_once)
{
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, W, 0.0f, 1.0f / W, ORDO_SYNC_ASP, 0, 0);
    float g[N], v[N];
    bool u;
    ck_assert(ordo__store_ready(s, 0, 5)); /* answered at once */
    grad_of(1, 0, g);
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 0, g, sizeof g, &u));
    ck_assert(u);
    ordo__store_copy_value(s, 0, v);
    for (int i = 0; i < N; i++) ck_assert_float_eq(v[i], 0.0f - (1.0f / W) * g[i]);
    ck_assert_int_eq(ordo__store_version(s, 0), 0); /* workers 0 and 2 miss iteration 0 */
    grad_of(1, 1, g);
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 1, g, sizeof g, &u)); /* worker 1 runs on */
    ORDO_CK_ERR(ordo__store_push(s, 0, 0, 1, g, sizeof g, &u), ORDO_ERR_PROTO);
    for (int w = 0; w < W; w += 2) {
        grad_of(w, 0, g);
        ORDO_CK_OK(ordo__store_push(s, 0, w, 0, g, sizeof g, &u));
    }
    ck_assert_int_eq(ordo__store_version(s, 0), 1);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(backup_takes_the_first_pushes_and_drops_the_rest)
{
    /* 4 workers, 1 backup: the mean of the first 3 pushes, worker 1's late push dropped */
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, 4, 0.0f, 1.0f / 3, ORDO_SYNC_BSP, 0, 1);
    float g[4][N], v[N];
    bool u;
    for (int w = 0; w < 4; w++) grad_of(w, 0, g[w]);
    ORDO_CK_OK(ordo__store_push(s, 0, 2, 0, g[2], sizeof g[2], &u));
    ck_assert(!u);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g[0], sizeof g[0], &u));
    ck_assert(!u);
    ck_assert(!ordo__store_ready(s, 0, 1));
    ORDO_CK_OK(ordo__store_push(s, 0, 3, 0, g[3], sizeof g[3], &u));
    ck_assert(u);
    ck_assert_int_eq(ordo__store_version(s, 0), 1);
    ordo__store_copy_value(s, 0, v);
    for (int i = 0; i < N; i++) /* by hand: in rank order, scaled by 1/(W - b) */
        ck_assert_float_eq(v[i], 0.0f - 1.0f * ((1.0f / 3) * ((g[0][i] + g[2][i]) + g[3][i])));
    ck_assert_int_eq(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u), ORDO_STORE_DROPPED);
    ck_assert(!u);
    ck_assert_int_eq((int)ordo__store_dropped(s), 1);
    float v2[N];
    ordo__store_copy_value(s, 0, v2);
    ck_assert(memcmp(v, v2, sizeof v) == 0);
    ck_assert(ordo__store_ready(s, 0, 0)); /* the late worker reads the newer value */
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(set_sync_refuses_what_the_conf_refuses)
{
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, W, 0.0f, 1.0f, ORDO_SYNC_BSP, 0, 0);
    ORDO_CK_ERR(ordo__store_set_sync(s, ORDO_SYNC_BSP, 0, W), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__store_set_sync(s, ORDO_SYNC_SSP, -1, 0), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__store_set_sync(s, ORDO_SYNC_ASP, 0, 1), ORDO_ERR_INVAL);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST


/* the conf's mode and backup count pick one row of the models' table (server/consistency/),
 * and the store answers with that row's model; a pair with no row is refused */
START_TEST(the_conf_picks_one_model_row)
{
    const struct {
        int mode, backup;
        const char *name;
        bool clocks, elastic, forwards, newer;
    } rows[] = {
        {ORDO_SYNC_BSP, 0, "bsp", false, true, false, false},
        {ORDO_SYNC_BSP, 1, "bsp+backup", false, false, false, true},
        {ORDO_SYNC_SSP, 0, "ssp", false, false, true, false},
        {ORDO_SYNC_ASP, 0, "asp", true, false, false, true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        ordo__keys_t *k;
        ordo__store_t *s = sync_store(&k, W, 0.0f, 1.0f, rows[i].mode, 2, rows[i].backup);
        const ordo__sync_model_t *m = ordo__store_model(s);
        ck_assert_ptr_eq(m, ordo__sync_model_of(rows[i].mode, rows[i].backup));
        ck_assert_str_eq(m->name, rows[i].name);
        ck_assert_int_eq(m->clocks, rows[i].clocks);
        ck_assert_int_eq(m->elastic, rows[i].elastic);
        ck_assert_int_eq(m->forwards_pushes, rows[i].forwards);
        ck_assert_int_eq(m->newer_pulls, rows[i].newer);
        ck_assert_int_eq(ordo__store_clocks(s, 0) != NULL, rows[i].clocks);
        ordo__store_destroy(&s);
        ordo__keys_destroy(&k);
    }
    ck_assert_ptr_null(ordo__sync_model_of(ORDO_SYNC_SSP, 1));
    ck_assert_ptr_null(ordo__sync_model_of(ORDO_SYNC_ASP + 1, 0));
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, W, 0.0f, 1.0f, ORDO_SYNC_BSP, 0, 0);
    ORDO_CK_ERR(ordo__store_set_sync(s, ORDO_SYNC_ASP + 1, 0, 0), ORDO_ERR_INVAL);
    ck_assert_str_eq(ordo__store_model(s)->name, "bsp"); /* a refused pair changes nothing */
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

/* fault.worker = restart: a worker's push again, of the round under way (held) or of an
 * applied iteration, is acknowledged as ORDO_STORE_DUPLICATE and changes nothing; without
 * re-sends on it is an error; ssp cannot turn them on */
START_TEST(resent_pushes_are_left_out)
{
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, 3, 0.0f, 1.0f / 3, ORDO_SYNC_BSP, 0, 0);
    float g[3][N], v[N], v2[N];
    bool u;
    for (int w = 0; w < 3; w++) grad_of(w, 0, g[w]);
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u));
    ck_assert(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u) < 0); /* off: an error */
    ORDO_CK_OK(ordo__store_set_resend(s, true));
    ck_assert_int_eq(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u), ORDO_STORE_DUPLICATE);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g[0], sizeof g[0], &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 2, 0, g[2], sizeof g[2], &u));
    ck_assert(u);
    ordo__store_copy_value(s, 0, v);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(v[i], 0.0f - (1.0f / 3) * ((g[0][i] + g[1][i]) + g[2][i]));
    /* iteration 0 is applied: worker 0's push of it again is left out too */
    ck_assert_int_eq(ordo__store_push(s, 0, 0, 0, g[0], sizeof g[0], &u), ORDO_STORE_DUPLICATE);
    ck_assert(!u);
    ordo__store_copy_value(s, 0, v2);
    ck_assert(memcmp(v, v2, sizeof v) == 0);
    ck_assert_int_eq((int)ordo__store_resent(s), 2);
    /* a pull of iteration 0 (a restarted worker whose predecessor did not finish it) gets the
     * value before the update, the slice at version 1 (0, the initial value of sync_store);
     * a pull of 1 the current one */
    void *data, *hint;
    size_t bytes;
    ck_assert_int_eq((int)ordo__store_pull_version(s, 0, 0), 0);
    ck_assert_int_eq((int)ordo__store_pull_version(s, 0, 1), 1);
    ORDO_CK_OK(ordo__store_ref_pull(s, 0, 0, &data, &bytes, &hint));
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(((float *)data)[i], 0.0f);
    ordo__store_unref_cb(data, hint);
    ORDO_CK_OK(ordo__store_ref_pull(s, 0, 1, &data, &bytes, &hint));
    ck_assert(memcmp(data, v, sizeof v) == 0);
    /* held by a send in flight, the current value is not written over by the next update */
    for (int w = 0; w < 3; w++)
        ORDO_CK_OK(ordo__store_push(s, 0, w, 1, g[w], sizeof g[w], &u));
    ck_assert(memcmp(data, v, sizeof v) == 0);
    ordo__store_unref_cb(data, hint);
    ORDO_CK_OK(ordo__store_ref_pull(s, 0, 1, &data, &bytes, &hint)); /* kept from before */
    ck_assert(memcmp(data, v, sizeof v) == 0);
    ordo__store_unref_cb(data, hint);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
    s = sync_store(&k, 3, 0.0f, 1.0f, ORDO_SYNC_SSP, 1, 0);
    ORDO_CK_ERR(ordo__store_set_resend(s, true), ORDO_ERR_INVAL);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

/* fault.worker = shrink: a worker that left does not hold up the round; a push of it already
 * held is summed, and the update is the mean over the pushes the round had; later pushes of
 * it are refused and later rounds are the others' mean */
START_TEST(a_worker_that_left_no_longer_holds_up_updates)
{
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, 3, 0.0f, 1.0f / 3, ORDO_SYNC_BSP, 0, 0);
    float g[3][N], v[N];
    bool u;
    int upd[2], n;
    for (int w = 0; w < 3; w++) grad_of(w, 0, g[w]);
    /* round 0: worker 2 pushed (held, waiting for 1), worker 0 too; worker 1 leaves */
    ORDO_CK_OK(ordo__store_push(s, 0, 2, 0, g[2], sizeof g[2], &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g[0], sizeof g[0], &u));
    ck_assert(!u);
    int64_t at = -1;
    ck_assert_int_eq(ordo__store_member(s, 1, &at), ORDO_STORE_MEMBER_IN);
    ORDO_CK_OK(ordo__store_leave(s, 1, true, upd, &n));
    ck_assert_int_eq(n, 1);
    /* what a new scheduler is told (fault.scheduler = restart) */
    ck_assert_int_eq(ordo__store_member(s, 1, &at), ORDO_STORE_MEMBER_LEFT);
    ck_assert_int_eq(ordo__store_member(s, 0, &at), ORDO_STORE_MEMBER_IN);
    ck_assert_int_eq(upd[0], 0);
    ck_assert_int_eq(ordo__store_version(s, 0), 1);
    ordo__store_copy_value(s, 0, v);
    for (int i = 0; i < N; i++) /* the mean of the 2 pushes: scale 1/3 * 3/2 */
        ck_assert_float_eq(v[i], 0.0f - (1.0f / 3 * 3.0f / 2.0f) * (g[0][i] + g[2][i]));
    ck_assert(ordo__store_push(s, 0, 1, 1, g[1], sizeof g[1], &u) < 0);
    /* round 1: the two left complete it */
    float before[N];
    memcpy(before, v, sizeof v);
    for (int w = 0; w < 3; w++) grad_of(w, 1, g[w]);
    ORDO_CK_OK(ordo__store_push(s, 0, 2, 1, g[2], sizeof g[2], &u));
    ck_assert(!u);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 1, g[0], sizeof g[0], &u));
    ck_assert(u);
    ordo__store_copy_value(s, 0, v);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(v[i], before[i] - (1.0f / 3 * 3.0f / 2.0f) * (g[0][i] + g[2][i]));
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

/* fault.max_workers: a store for 3 workers of which 2 start; the third's pushes before it
 * joined are refused, rounds before its join iteration are the two's mean, rounds from it on
 * wait for it and are the three's mean; a join behind a slice's version is refused */
START_TEST(a_worker_joins_at_an_iteration)
{
    ordo__keys_t *k;
    ordo__store_t *s = sync_store(&k, 3, 0.0f, 1.0f / 3, ORDO_SYNC_BSP, 0, 0);
    ORDO_CK_OK(ordo__store_set_members(s, 2, true));
    float g[3][N], v[N], before[N];
    bool u;
    for (int w = 0; w < 3; w++) grad_of(w, 0, g[w]);
    ck_assert(ordo__store_push(s, 0, 2, 0, g[2], sizeof g[2], &u) < 0); /* not in the run */
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g[0], sizeof g[0], &u));
    ck_assert(!u);
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u));
    ck_assert(u); /* round 0: the two's */
    ordo__store_copy_value(s, 0, v);
    for (int i = 0; i < N; i++)
        ck_assert_float_eq(v[i], 0.0f - (1.0f / 3 * 3.0f / 2.0f) * (g[0][i] + g[1][i]));
    int64_t at = -1;
    ck_assert_int_eq(ordo__store_member(s, 2, &at), ORDO_STORE_MEMBER_FREE);
    ORDO_CK_OK(ordo__store_join(s, 2, 2));
    ck_assert(ordo__store_join(s, 2, 2) < 0); /* its place is taken */
    /* what a new scheduler is told (fault.scheduler = restart) */
    ck_assert_int_eq(ordo__store_member(s, 2, &at), ORDO_STORE_MEMBER_JOINED);
    ck_assert_int_eq(at, 2);
    ck_assert_int_eq(ordo__store_member(s, 1, &at), ORDO_STORE_MEMBER_IN);
    /* round 1: still the two's; worker 2's push of 1 comes before its join iteration */
    for (int w = 0; w < 3; w++) grad_of(w, 1, g[w]);
    ck_assert(ordo__store_push(s, 0, 2, 1, g[2], sizeof g[2], &u) < 0);
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 1, g[1], sizeof g[1], &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 1, g[0], sizeof g[0], &u));
    ck_assert(u);
    ck_assert_int_eq(ordo__store_version(s, 0), 2);
    /* round 2: waits for worker 2 */
    ordo__store_copy_value(s, 0, before);
    for (int w = 0; w < 3; w++) grad_of(w, 2, g[w]);
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 2, g[0], sizeof g[0], &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 2, g[1], sizeof g[1], &u));
    ck_assert(!u);
    ORDO_CK_OK(ordo__store_push(s, 0, 2, 2, g[2], sizeof g[2], &u));
    ck_assert(u);
    ordo__store_copy_value(s, 0, v);
    for (int i = 0; i < N; i++) /* the mean of the 3 pushes */
        ck_assert_float_eq(v[i], before[i] - (1.0f / 3 * 3.0f / 3.0f) *
                                                 (g[0][i] + g[1][i] + g[2][i]));
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
    /* a join at an iteration a slice has passed */
    s = sync_store(&k, 3, 0.0f, 1.0f / 3, ORDO_SYNC_BSP, 0, 0);
    ORDO_CK_OK(ordo__store_set_members(s, 2, true));
    ORDO_CK_OK(ordo__store_push(s, 0, 0, 0, g[0], sizeof g[0], &u));
    ORDO_CK_OK(ordo__store_push(s, 0, 1, 0, g[1], sizeof g[1], &u));
    ORDO_CK_ERR(ordo__store_join(s, 2, 0), ORDO_ERR_INVAL);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(install_replaces_the_state_and_pushed_spots_resends)
{
    ordo__keys_t *k;
    int64_t numel[1] = {N};
    ORDO_CK_OK(ordo__keys_partition(numel, 1, 4, 1 << 20, 0, 2, &k));
    ORDO_CK_OK(ordo__keys_set_replicas(k, 2));
    ordo__optim_t opt = {.lr = 1.0f, .momentum = 0.5f, .weight_decay = 0.0f};
    ordo__store_t *s[2];
    for (int r = 0; r < 2; r++) /* the primary and its backup both hold the slice */
        ORDO_CK_OK(ordo__store_new(k, r, W, &opt, 1.0f, &s[r]));
    ck_assert(ordo__store_owns(s[0], 0) && ordo__store_owns(s[1], 0));
    int p = k->slices[0].server, b = 1 - p;
    float g[W][N], v[N], w[N], zero[N] = {0};
    grads(g);
    bool ignored, updated;
    ORDO_CK_OK(ordo__store_init(s[p], 0, zero, sizeof zero, &ignored));
    ck_assert(!ordo__store_pushed(s[p], 0, 1, 0));
    ORDO_CK_OK(ordo__store_push(s[p], 0, 1, 0, g[1], sizeof g[1], &updated));
    ck_assert(ordo__store_pushed(s[p], 0, 1, 0) && !ordo__store_pushed(s[p], 0, 0, 0));
    ORDO_CK_OK(ordo__store_push(s[p], 0, 0, 0, g[0], sizeof g[0], &updated));
    ORDO_CK_OK(ordo__store_push(s[p], 0, 2, 0, g[2], sizeof g[2], &updated));
    ck_assert(updated && ordo__store_pushed(s[p], 0, 0, 0)); /* applied: below the version */
    /* the backup takes the primary's state and goes on from it with the same bits */
    ordo__store_copy_value(s[p], 0, v);
    ORDO_CK_OK(ordo__store_install(s[b], 0, ordo__store_version(s[p], 0), v, sizeof v,
                                  ordo__store_momentum(s[p], 0), sizeof v));
    ck_assert_int_eq(ordo__store_version(s[b], 0), 1);
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < W; j++)
            ORDO_CK_OK(ordo__store_push(s[r], 0, j, 1, g[j], sizeof g[j], &updated));
    ordo__store_copy_value(s[p], 0, v);
    ordo__store_copy_value(s[b], 0, w);
    ck_assert(memcmp(v, w, sizeof v) == 0);
    /* a wrong size or momentum is refused */
    ORDO_CK_ERR(ordo__store_install(s[b], 0, 2, v, sizeof v - 4, NULL, 0), ORDO_ERR_PROTO);
    ORDO_CK_ERR(ordo__store_install(s[b], 0, 2, v, sizeof v, v, 8), ORDO_ERR_PROTO);
    for (int r = 0; r < 2; r++)
        ordo__store_destroy(&s[r]);
    ordo__keys_destroy(&k);
}
END_TEST

/* ---- 16-bit pushes summed from their frames (ordo__grad_t) ---- */

#define NC 9000 /* values of the slice: more than one part of the update's decoding */

/* a store of one slice of NC values (momentum and weight decay on) under a model */
static ordo__store_t *cast_store(ordo__keys_t **k, int mode, int staleness, int backup)
{
    int64_t numel[1] = {NC};
    ORDO_CK_OK(ordo__keys_partition(numel, 1, 1, 1 << 20, 0, 1, k));
    ordo__optim_t opt = {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f};
    ordo__store_t *s;
    ORDO_CK_OK(ordo__store_new(*k, 0, W, &opt, 1.0f / W, &s));
    ORDO_CK_OK(ordo__store_set_sync(s, mode, staleness, backup));
    static float init[NC];
    for (int i = 0; i < NC; i++)
        init[i] = 0.01f * (float)(i % 97);
    bool ignored;
    ORDO_CK_OK(ordo__store_init(s, 0, init, sizeof init, &ignored));
    return s;
}

/* a received frame of len bytes at data */
static int push_bytes(ordo__store_t *s, int w, int64_t iter, int dtype, const void *data,
                      size_t len)
{
    zmq_msg_t m;
    ck_assert_int_eq(zmq_msg_init_size(&m, len), 0);
    memcpy(zmq_msg_data(&m), data, len);
    bool updated;
    int rc = ordo__store_push_frame(s, 0, w, iter, dtype, &m, &updated);
    zmq_msg_close(&m);
    return rc;
}

START_TEST(casts_are_summed_from_their_frames_as_if_decoded_first)
{
    /* each model's order of pushes (worker, iteration): held pushes, ssp's rounds ahead,
     * backup's late push */
    static const struct {
        int mode, staleness, backup, n;
        int ev[9][2];
    } runs[] = {
        {ORDO_SYNC_BSP, 0, 0, 9, {{2, 0}, {0, 0}, {1, 0}, {1, 1}, {0, 1}, {2, 1}, {0, 2}, {2, 2}, {1, 2}}},
        {ORDO_SYNC_SSP, 1, 0, 9, {{2, 0}, {2, 1}, {0, 0}, {1, 0}, {0, 1}, {1, 1}, {2, 2}, {0, 2}, {1, 2}}},
        {ORDO_SYNC_ASP, 0, 0, 9, {{2, 0}, {0, 0}, {2, 1}, {1, 0}, {0, 1}, {1, 1}, {0, 2}, {2, 2}, {1, 2}}},
        {ORDO_SYNC_BSP, 0, 1, 9, {{2, 0}, {0, 0}, {1, 0}, {1, 1}, {0, 1}, {2, 1}, {0, 2}, {2, 2}, {1, 2}}},
    };
    static const char *codecs[] = {"bf16", "fp16"};
    static float g[NC], dec[NC], a[NC], b[NC], init[NC];
    static uint16_t frame[NC + 2];
    for (int c = 0; c < 2; c++) {
        ordo__codec_spec_t spec;
        ORDO_CK_OK(ordo__codec_parse(codecs[c], &spec));
        spec.scale = 1.0f / W;
        const ordo__codec_ops_t *ops = ordo__codec_ops(spec.id);
        for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
            ordo__keys_t *k, *k2;
            ordo__store_t *f32 = cast_store(&k, runs[r].mode, runs[r].staleness, runs[r].backup);
            ordo__store_t *cast = cast_store(&k2, runs[r].mode, runs[r].staleness, runs[r].backup);
            ordo__store_copy_value(f32, 0, init);
            for (int e = 0; e < runs[r].n; e++) {
                int w = runs[r].ev[e][0], it = runs[r].ev[e][1];
                for (int i = 0; i < NC; i++) /* values that round differently in each cast */
                    g[i] = (float)((i * 7919 + w * 31 + it * 17) % 2001 - 1000) * 1.37e-3f;
                int64_t len = ops->encode(&spec, g, NC, frame, NULL);
                ck_assert_int_gt(len, 0);
                ORDO_CK_OK(ordo__codec_decode(ops->dtype, frame, (size_t)len, NC, dec));
                int ra = push_bytes(f32, w, it, ORDO_DTYPE_F32, dec, sizeof dec);
                int rb = push_bytes(cast, w, it, ops->dtype, frame, (size_t)len);
                ck_assert_msg(ra >= 0 && ra == rb, "%s, run %zu, push %d: %d and %d", codecs[c],
                              r, e, ra, rb);
            }
            ordo__store_copy_value(f32, 0, a);
            ordo__store_copy_value(cast, 0, b);
            ck_assert_int_eq(ordo__store_version(f32, 0), ordo__store_version(cast, 0));
            ck_assert_msg(memcmp(a, b, sizeof a) == 0, "%s, run %zu: the values differ", codecs[c],
                          r);
            ck_assert_msg(memcmp(a, init, sizeof a) != 0, "%s, run %zu: nothing applied",
                          codecs[c], r);
            ck_assert(!memcmp(ordo__store_momentum(f32, 0), ordo__store_momentum(cast, 0),
                              sizeof(float) * NC));
            ordo__store_destroy(&f32);
            ordo__store_destroy(&cast);
            ordo__keys_destroy(&k);
            ordo__keys_destroy(&k2);
        }
    }
}
END_TEST

START_TEST(malformed_cast_frames_are_refused_naming_the_slice)
{
    ordo__keys_t *k;
    ordo__store_t *s = cast_store(&k, ORDO_SYNC_BSP, 0, 0);
    static uint16_t frame[NC + 2];
    memset(frame, 0, sizeof frame);
    /* a bf16 frame a value short */
    ck_assert_int_eq(push_bytes(s, 0, 0, ORDO_DTYPE_BF16, frame, 2 * (NC - 1)), ORDO_ERR_PROTO);
    ck_assert_msg(strstr(ordo__error_text(ORDO_ERR_PROTO), "slice 0: a bf16 frame of 17998 bytes"),
                  "%s", ordo__error_text(ORDO_ERR_PROTO));
    /* an fp16 frame whose multiplier is 0 */
    ck_assert_int_eq(push_bytes(s, 0, 0, ORDO_DTYPE_F16, frame, 4 + 2 * NC), ORDO_ERR_PROTO);
    ck_assert_msg(strstr(ordo__error_text(ORDO_ERR_PROTO), "multiplier is 0"), "%s",
                  ordo__error_text(ORDO_ERR_PROTO));
    /* a codec whose values have no fixed place is decoded by the server first, not here */
    ck_assert_int_eq(push_bytes(s, 0, 0, ORDO_DTYPE_ONEBIT, frame, 64), ORDO_ERR_PROTO);
    /* nothing was taken: worker 0 can still push iteration 0 */
    float g[NC] = {0};
    ORDO_CK_OK(push_bytes(s, 0, 0, ORDO_DTYPE_F32, g, sizeof g));
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
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
    tc = tcase_create("sync");
    tcase_add_test(tc, ssp_sums_iterations_ahead_and_applies_them_in_order);
    tcase_add_test(tc, ssp_pull_ahead_reads_the_pushes_received);
    tcase_add_test(tc, ssp_zero_staleness_is_bsp);
    tcase_add_test(tc, asp_applies_every_push_at_once);
    tcase_add_test(tc, replica_update_count_and_asp_clocks);
    tcase_add_test(tc, backup_takes_the_first_pushes_and_drops_the_rest);
    tcase_add_test(tc, set_sync_refuses_what_the_conf_refuses);
    tcase_add_test(tc, the_conf_picks_one_model_row);
    tcase_add_test(tc, install_replaces_the_state_and_pushed_spots_resends);
    suite_add_tcase(s, tc);
    tc = tcase_create("casts");
    tcase_add_test(tc, casts_are_summed_from_their_frames_as_if_decoded_first);
    tcase_add_test(tc, malformed_cast_frames_are_refused_naming_the_slice);
    suite_add_tcase(s, tc);
    tc = tcase_create("membership");
    tcase_add_test(tc, resent_pushes_are_left_out);
    tcase_add_test(tc, a_worker_that_left_no_longer_holds_up_updates);
    tcase_add_test(tc, a_worker_joins_at_an_iteration);
    tcase_add_test(tc, install_replaces_the_state_and_pushed_spots_resends);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(store_suite)
