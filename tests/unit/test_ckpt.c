/* Tests of server/ckpt: a server's momentum written at every N-th update (once all its slices
 * got there, two checkpoints gathered at once when slices run apart), read back into another
 * store exactly, the generation before kept as .prev, and every fault of a file refused with
 * the file, the offset and the reason. */
#include "common/error.h"
#include "common/keys.h"
#include "server/ckpt.h"
#include "server/store.h"
#include "ordo_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 40 /* floats per key */

static char dir[] = "/tmp/ordo-ckpt-XXXXXX";

static ordo__store_t *make_store(ordo__keys_t *k, int rank, float momentum)
{
    ordo__optim_t opt = {.lr = 0.5f, .momentum = momentum, .weight_decay = 0.0f};
    ordo__store_t *s;
    ORDO_CK_OK(ordo__store_new(k, rank, 1, &opt, 1.0f, &s));
    float init[N] = {0};
    bool ignored;
    for (int i = 0; i < k->n_slices; i++)
        if (ordo__store_owns(s, i))
            ORDO_CK_OK(ordo__store_init(s, i, init, sizeof(float) * (size_t)k->slices[i].numel,
                                       &ignored));
    return s;
}

/* one update of slice i with gradient g * (1 + i) */
static void update(ordo__store_t *s, ordo__srv_ckpt_t *c, const ordo__keys_t *k, int i, float g)
{
    float grad[N];
    for (int j = 0; j < N; j++)
        grad[j] = g * (float)(1 + i) + 0.01f * (float)j;
    bool updated;
    ORDO_CK_OK(ordo__store_push(s, i, 0, ordo__store_version(s, i), grad,
                               sizeof(float) * (size_t)k->slices[i].numel, &updated));
    ck_assert(updated);
    ordo__srv_ckpt_updated(c, i);
}

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    strcpy(dir, "/tmp/ordo-ckpt-XXXXXX");
}

START_TEST(momentum_round_trips_through_the_file)
{
    int64_t numel[4] = {N, N, N, N};
    ordo__keys_t *k;
    ORDO_CK_OK(ordo__keys_partition(numel, 4, 4, 1 << 20, 0, 2, &k));
    ordo__store_t *s = make_store(k, 1, 0.9f);
    ordo__srv_ckpt_t *c = NULL;
    ORDO_CK_OK(ordo__srv_ckpt_new(s, k, 1, 2, 0, dir, &c));
    ck_assert_ptr_nonnull(c);
    int held[4], n = 0;
    for (int i = 0; i < k->n_slices; i++)
        if (ordo__store_owns(s, i)) held[n++] = i;
    ck_assert_int_eq(n, 2);
    /* slice held[0] runs ahead to 4 updates before the others reach 2: both checkpoints are
     * gathered at once */
    float want2[4][N];
    for (int u = 1; u <= 4; u++) update(s, c, k, held[0], (float)u);
    char path[256];
    snprintf(path, sizeof path, "%s/checkpoint-server-1.bin", dir);
    ck_assert_int_ne(access(path, F_OK), 0); /* not every slice is at 2 yet */
    for (int j = 1; j < n; j++)
        for (int u = 1; u <= 2; u++) update(s, c, k, held[j], (float)u);
    for (int j = 1; j < n; j++)
        memcpy(want2[j], ordo__store_momentum(s, held[j]), sizeof(float) * (size_t)k->slices[held[j]].numel);
    ck_assert_int_eq(access(path, F_OK), 0); /* checkpoint after 2 updates */
    for (int j = 1; j < n; j++)
        for (int u = 3; u <= 4; u++) update(s, c, k, held[j], (float)u);
    /* now after 4; the one after 2 is the .prev */
    ordo__store_t *t = make_store(k, 1, 0.9f);
    ORDO_CK_OK(ordo__srv_ckpt_load(t, k, 1, dir, 4));
    for (int j = 0; j < n; j++)
        ck_assert(!memcmp(ordo__store_momentum(t, held[j]), ordo__store_momentum(s, held[j]),
                          sizeof(float) * (size_t)k->slices[held[j]].numel));
    ordo__store_t *u2 = make_store(k, 1, 0.9f);
    ORDO_CK_OK(ordo__srv_ckpt_load(u2, k, 1, dir, 2));
    for (int j = 1; j < n; j++)
        ck_assert(!memcmp(ordo__store_momentum(u2, held[j]), want2[j],
                          sizeof(float) * (size_t)k->slices[held[j]].numel));
    /* no file holds the state after 6 updates */
    ORDO_CK_ERR(ordo__srv_ckpt_load(u2, k, 1, dir, 6), ORDO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "holds the momentum after 4 updates"));
    /* server 0's state is not in server 1's file */
    ordo__store_t *other = make_store(k, 0, 0.9f);
    ORDO_CK_ERR(ordo__srv_ckpt_load(other, k, 0, dir, 4), ORDO_ERR_NOTFOUND);
    char src[300], dst[300];
    snprintf(src, sizeof src, "%s/checkpoint-server-1.bin", dir);
    snprintf(dst, sizeof dst, "%s/checkpoint-server-0.bin", dir);
    ck_assert_int_eq(link(src, dst), 0);
    ORDO_CK_ERR(ordo__srv_ckpt_load(other, k, 0, dir, 4), ORDO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "offset 8: server 1's checkpoint, this is server 0"));
    /* a flipped bit in the momentum: the checksum refuses the file, naming it; the state after
     * 2 updates still loads from .prev */
    {
        FILE *g = fopen(src, "r+b");
        ck_assert_ptr_nonnull(g);
        ck_assert_int_eq(fseek(g, 24 + 2 * 16 + 9, SEEK_SET), 0);
        int byte = fgetc(g);
        ck_assert_int_eq(fseek(g, 24 + 2 * 16 + 9, SEEK_SET), 0);
        fputc(byte ^ 0x08, g);
        fclose(g);
        ORDO_CK_ERR(ordo__srv_ckpt_load(t, k, 1, dir, 4), ORDO_ERR_FORMAT);
        ck_assert_msg(strstr(ordo__error_detail(), "checkpoint-server-1.bin: offset 376: checksum mismatch"),
                      "detail '%s'", ordo__error_detail());
        ordo__store_t *u3 = make_store(k, 1, 0.9f);
        ORDO_CK_OK(ordo__srv_ckpt_load(u3, k, 1, dir, 2));
        for (int j = 1; j < n; j++)
            ck_assert(!memcmp(ordo__store_momentum(u3, held[j]), want2[j],
                              sizeof(float) * (size_t)k->slices[held[j]].numel));
        ordo__store_destroy(&u3);
    }
    /* bytes after the last float, or cut short */
    FILE *f = fopen(src, "ab");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs("junk", f) >= 0, 1);
    fclose(f);
    ORDO_CK_ERR(ordo__srv_ckpt_load(t, k, 1, dir, 4), ORDO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "(trailing bytes)"));
    ck_assert_int_eq(truncate(src, 30), 0);
    ORDO_CK_ERR(ordo__srv_ckpt_load(t, k, 1, dir, 4), ORDO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "truncated slice table"));
    ordo__store_destroy(&other);
    ordo__store_destroy(&u2);
    ordo__store_destroy(&t);
    ordo__srv_ckpt_destroy(&c);
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(without_momentum_there_is_nothing_to_save)
{
    int64_t numel[1] = {N};
    ordo__keys_t *k;
    ORDO_CK_OK(ordo__keys_partition(numel, 1, 4, 1 << 20, 0, 1, &k));
    ordo__store_t *s = make_store(k, 0, 0.0f);
    ordo__srv_ckpt_t *c = (ordo__srv_ckpt_t *)1;
    ORDO_CK_OK(ordo__srv_ckpt_new(s, k, 0, 5, 0, dir, &c));
    ck_assert_ptr_null(c);
    ordo__srv_ckpt_updated(NULL, 0); /* a run without checkpoints calls it too */
    ORDO_CK_OK(ordo__srv_ckpt_load(s, k, 0, dir, 5)); /* no file needed */
    ordo__store_destroy(&s);
    ordo__keys_destroy(&k);
}
END_TEST

static Suite *ckpt_suite(void)
{
    Suite *s = suite_create("ckpt");
    TCase *tc = tcase_create("ckpt");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, momentum_round_trips_through_the_file);
    tcase_add_test(tc, without_momentum_there_is_nothing_to_save);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(ckpt_suite)
