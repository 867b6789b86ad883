/* Tests of the error-feedback residuals in a checkpoint (client/compress.h,
 * ordo__compress_state): a worker's residuals after onebit pushes are saved and read back by a
 * fresh worker state, whose next push then encodes exactly the frame the first one's does; in
 * a kept unit (fault.worker = restart) the loaded residual is the one the resumed run's first
 * push (iteration 0 again) starts from. A file of other units, a truncated one, one with a
 * flipped byte and a missing one are refused, naming the file and the check, and leave the
 * residuals as they were; so are residuals of a tensor of another size or for a codec that
 * keeps none, and a load after a push. */
#include "client/compress.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/keys.h"
#include "ordo_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 1000

typedef struct {
    ordo__conf_t conf;
    ordo__keys_t *keys;
    ordo__compress_t *c;
} fixture_t;

/* make_n makes a worker's state of two tensors, of n0 and N values, one slice each */
static void make_n(fixture_t *f, const char *codec, int n_units, int64_t n0)
{
    memset(f, 0, sizeof *f);
    ordo__conf_defaults(&f->conf);
    snprintf(f->conf.compression, sizeof f->conf.compression, "%s", codec);
    int64_t numel[2] = {n0, N};
    ORDO_CK_OK(ordo__keys_partition(numel, 2, sizeof(float), 1 << 20, 0, 1, &f->keys));
    ORDO_CK_OK(ordo__compress_new(&f->conf, f->keys, NULL, NULL, 2, n_units, &f->c));
}

static void make(fixture_t *f, const char *codec, int n_units)
{
    make_n(f, codec, n_units, N);
}

static void drop(fixture_t *f)
{
    ordo__compress_destroy(&f->c);
    ordo__keys_destroy(&f->keys);
}

/* push encodes src as unit `unit` of key 0 for iteration iter and copies the frame to out
 * (its length returned) */
static size_t push(ordo__compress_t *c, int unit, const float *src, int64_t iter,
                   unsigned char *out)
{
    void *frame = NULL, *hint = NULL;
    size_t len = 0;
    int dtype = 0;
    int rc = ordo__compress_encode(c, 0, unit, src, N, (uint64_t)iter, &frame, &len, &dtype,
                                   &hint);
    ck_assert_int_eq(rc, 1);
    memcpy(out, frame, len);
    ordo__compress_frame_free(frame, hint);
    return len;
}

static void gradient(float *g, int step)
{
    for (int i = 0; i < N; i++) g[i] = (float)((i * 37 + step * 11) % 101 - 50) / 17.0f;
}

static char *temp_path(void)
{
    char *p = strdup("/tmp/ordo-efstate-XXXXXX");
    int fd = mkstemp(p);
    ck_assert_int_ge(fd, 0);
    close(fd);
    return p;
}

START_TEST(a_loaded_residual_gives_the_same_next_frame)
{
    fixture_t a, b;
    make(&a, "onebit", 2);
    ck_assert(ordo__compress_has_state(a.c));
    float g[N];
    unsigned char fa[N * 4], fb[N * 4];
    for (int s = 0; s < 3; s++) {
        gradient(g, s);
        push(a.c, 0, g, s, fa);
    }
    char *path = temp_path();
    ORDO_CK_OK(ordo__compress_state(a.c, path, true));
    make(&b, "onebit", 2);
    ORDO_CK_OK(ordo__compress_state(b.c, path, false));
    int64_t n = 0;
    float *ra = ordo__compress_residual(a.c, 0, &n), *rb = ordo__compress_residual(b.c, 0, &n);
    ck_assert_int_eq(n, N);
    ck_assert_mem_eq(ra, rb, sizeof(float) * N);
    ck_assert_ptr_null(ordo__compress_residual(b.c, 1, &n)); /* unit 1 never pushed */
    gradient(g, 3);
    size_t la = push(a.c, 0, g, 3, fa), lb = push(b.c, 0, g, 3, fb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(fa, fb, la);
    /* without the residuals the frame differs: the test can tell */
    fixture_t z;
    make(&z, "onebit", 2);
    push(z.c, 0, g, 3, fb);
    ck_assert(memcmp(fa, fb, la) != 0);
    drop(&z);
    drop(&a);
    drop(&b);
    unlink(path);
    free(path);
}
END_TEST

START_TEST(a_kept_unit_starts_its_first_push_from_the_loaded_residual)
{
    fixture_t a, b;
    make(&a, "onebit", 1);
    float g[N];
    unsigned char fa[N * 4], fb[N * 4];
    for (int s = 0; s < 2; s++) {
        gradient(g, s);
        push(a.c, 0, g, s, fa);
    }
    char *path = temp_path(), dir[] = "/tmp/ordo-efkept-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ORDO_CK_OK(ordo__compress_state(a.c, path, true));
    make(&b, "onebit", 1);
    ORDO_CK_OK(ordo__compress_keep(b.c, dir, -1));
    ORDO_CK_OK(ordo__compress_state(b.c, path, false));
    gradient(g, 2);
    /* the resumed run counts its iterations from 0 again */
    size_t la = push(a.c, 0, g, 2, fa), lb = push(b.c, 0, g, 0, fb);
    ck_assert_uint_eq(la, lb);
    ck_assert_mem_eq(fa, fb, la);
    drop(&a);
    drop(&b);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    unlink(path);
    free(path);
}
END_TEST

/* refused(f, path, what): loading path fails with ORDO_ERR_FORMAT (or code) naming the file
 * and what */
static void refused(fixture_t *f, const char *path, int code, const char *what)
{
    int rc = ordo__compress_state(f->c, path, false);
    ck_assert_int_eq(rc, code);
    const char *text = ordo__error_text(rc);
    ck_assert_msg(strstr(text, path) && strstr(text, what), "error \"%s\" lacks \"%s\"", text,
                  what);
}

/* saved_after_one_push: a worker of 2 onebit units pushes unit 0 once and saves its
 * residuals; returns the file's path (the caller unlinks and frees it) */
static char *saved_after_one_push(fixture_t *a)
{
    make(a, "onebit", 2);
    float g[N];
    unsigned char frame[N * 4];
    gradient(g, 0);
    push(a->c, 0, g, 0, frame);
    char *path = temp_path();
    ORDO_CK_OK(ordo__compress_state(a->c, path, true));
    return path;
}

START_TEST(a_bad_file_is_refused_naming_it)
{
    fixture_t a, b;
    char *path = saved_after_one_push(&a);
    FILE *f = fopen(path, "rb");
    unsigned char data[N * 8];
    size_t len = fread(data, 1, sizeof data, f);
    fclose(f);

    make(&b, "onebit", 3); /* another plan: 3 units */
    refused(&b, path, ORDO_ERR_FORMAT, "residuals of 2 units; this worker has 3");
    drop(&b);
    make(&b, "onebit", 2);
    f = fopen(path, "r+b");
    fseek(f, 100, SEEK_SET);
    fputc(data[100] ^ 0x40, f); /* one flipped bit in a residual */
    fclose(f);
    refused(&b, path, ORDO_ERR_FORMAT, "checksum");
    f = fopen(path, "wb");
    fwrite(data, 1, 40, f); /* truncated, its trailer gone */
    fclose(f);
    refused(&b, path, ORDO_ERR_FORMAT, "do not fit");
    f = fopen(path, "wb");
    fwrite(data, 1, 8 + 8 + 8 + N * 4 + 4, f); /* unit 0 whole, unit 1's size cut */
    fclose(f);
    refused(&b, path, ORDO_ERR_FORMAT, "in unit 1's size");
    int64_t n = -1; /* a refused file leaves every unit as it was: unit 0 took nothing */
    ck_assert_ptr_null(ordo__compress_residual(b.c, 0, &n));
    unlink(path);
    ck_assert_int_ne(ordo__compress_state(b.c, path, false), 0);
    ck_assert(strstr(ordo__error_text(ORDO_ERR_NOTFOUND), path) ||
              strstr(ordo__error_text(ORDO_ERR_IO), path));
    (void)len;
    drop(&a);
    drop(&b);
    free(path);
}
END_TEST

START_TEST(residuals_that_do_not_fit_the_tensors_or_come_too_late_are_refused)
{
    fixture_t a, b;
    char *path = saved_after_one_push(&a);
    float g[N];
    unsigned char fa[N * 4];
    gradient(g, 0);
    make_n(&b, "onebit", 2, N / 2); /* another model: tensor 0 is half as large */
    refused(&b, path, ORDO_ERR_FORMAT, "unit 0 holds 1000 residuals; tensor \"tensor0\" has "
                                       "500 values there");
    drop(&b);
    make(&b, "bf16", 2); /* a codec without error feedback */
    refused(&b, path, ORDO_ERR_FORMAT, "whose codec here (bf16) keeps none");
    drop(&b);
    make(&b, "onebit", 2); /* the right file, but after a push */
    push(b.c, 0, g, 0, fa);
    refused(&b, path, ORDO_ERR_INVAL, "this worker pushed already");
    drop(&b);
    drop(&a);
    unlink(path);
    free(path);
}
END_TEST

START_TEST(casts_keep_no_state)
{
    fixture_t a;
    make(&a, "bf16", 2);
    ck_assert(!ordo__compress_has_state(a.c));
    drop(&a);
    make(&a, "topk:0.1,ef=none", 2);
    ck_assert(!ordo__compress_has_state(a.c));
    drop(&a);
}
END_TEST

static Suite *compress_state_suite(void)
{
    Suite *s = suite_create("compress_state");
    TCase *tc = tcase_create("residuals");
    tcase_add_test(tc, a_loaded_residual_gives_the_same_next_frame);
    tcase_add_test(tc, a_kept_unit_starts_its_first_push_from_the_loaded_residual);
    tcase_add_test(tc, a_bad_file_is_refused_naming_it);
    tcase_add_test(tc, residuals_that_do_not_fit_the_tensors_or_come_too_late_are_refused);
    tcase_add_test(tc, casts_keep_no_state);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(compress_state_suite)
