/* Tests of worker/dataset: the installed Fashion-MNIST files load with the documented sizes;
 * bad files (truncated, bad magic, count mismatch, bad label, trailing bytes, missing) are
 * rejected naming the file; shards partition the set; the batch iterator is deterministic,
 * stays in its shard and visits distinct samples each epoch. The installed set's case is
 * tagged "fmnist": ctest's unit.dataset.fmnist runs it and skips without the data. */
#include "ordo_check.h"
#include "worker/dataset.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ordo-test-dataset-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* write_idx writes a gzip IDX file: magic, dims, then len data bytes (which may disagree
 * with the dims, to make bad files). */
static void write_idx(const char *path, uint32_t magic, const uint32_t *dims, int ndim,
                      const uint8_t *data, size_t len)
{
    gzFile f = gzopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    uint8_t head[16];
    uint32_t words[4] = {magic, 0, 0, 0};
    for (int d = 0; d < ndim; d++)
        words[1 + d] = dims[d];
    for (int w = 0; w <= ndim; w++) {
        head[4 * w] = (uint8_t)(words[w] >> 24);
        head[4 * w + 1] = (uint8_t)(words[w] >> 16);
        head[4 * w + 2] = (uint8_t)(words[w] >> 8);
        head[4 * w + 3] = (uint8_t)words[w];
    }
    ck_assert_int_eq(gzwrite(f, head, 4 * (unsigned)(ndim + 1)), 4 * (ndim + 1));
    if (len) ck_assert_int_eq(gzwrite(f, data, (unsigned)len), (int)len);
    ck_assert_int_eq(gzclose(f), Z_OK);
}

/* write_set writes n images of 2x2 pixels encoding their index (low byte, high byte, 0, 0)
 * and labels i % 10, as images.gz and labels.gz in tmpdir. */
static void write_set(int n, char *images, char *labels)
{
    sprintf(images, "%s/images.gz", tmpdir);
    sprintf(labels, "%s/labels.gz", tmpdir);
    uint8_t *px = calloc((size_t)n * 4, 1), *lb = malloc((size_t)n);
    for (int i = 0; i < n; i++) {
        px[4 * i] = (uint8_t)(i & 255);
        px[4 * i + 1] = (uint8_t)(i >> 8);
        lb[i] = (uint8_t)(i % 10);
    }
    uint32_t idims[3] = {(uint32_t)n, 2, 2}, ldims[1] = {(uint32_t)n};
    write_idx(images, 0x803, idims, 3, px, (size_t)n * 4);
    write_idx(labels, 0x801, ldims, 1, lb, (size_t)n);
    free(px);
    free(lb);
}

static int byte_of(float x)
{
    return (int)lrintf((x * ORDO_DATASET_STD + ORDO_DATASET_MEAN) * 255.0f);
}

static int index_of(const float *x)
{
    return byte_of(x[0]) | byte_of(x[1]) << 8;
}

static void expect_detail(const char *a, const char *b)
{
    ck_assert_msg(strstr(ordo__error_detail(), a) && (!b || strstr(ordo__error_detail(), b)),
                  "detail '%s' lacks '%s' / '%s'", ordo__error_detail(), a, b ? b : "");
}

/* ---- the installed data set ----------------------------------------------------------- */

static void check_split(ordo__dataset_split_t split, int64_t want_n)
{
    ordo__dataset_t *ds = NULL;
    ORDO_CK_OK(ordo__dataset_load(ordo_ck_fmnist_dir(), split, &ds));
    ck_assert_int_eq(ordo__dataset_count(ds), want_n);
    ck_assert_int_eq(ordo__dataset_rows(ds), 28);
    ck_assert_int_eq(ordo__dataset_cols(ds), 28);
    int64_t per_class[ORDO_DATASET_CLASSES] = {0};
    for (int64_t i = 0; i < want_n; i++) {
        int l = ordo__dataset_label(ds, i);
        ck_assert(l >= 0 && l < ORDO_DATASET_CLASSES);
        per_class[l]++;
    }
    for (int c = 0; c < ORDO_DATASET_CLASSES; c++) /* Fashion-MNIST is balanced */
        ck_assert_int_eq(per_class[c], want_n / 10);
    /* normalized pixels: mean near 0 and unit deviation over the first 1000 images */
    float *x = malloc(sizeof(float) * 1000 * 784);
    int y[1000];
    ordo__dataset_get(ds, 0, 1000, x, y);
    double s = 0, s2 = 0;
    const float lo = -ORDO_DATASET_MEAN / ORDO_DATASET_STD;
    const float hi = (1.0f - ORDO_DATASET_MEAN) / ORDO_DATASET_STD;
    for (int i = 0; i < 1000 * 784; i++) {
        ck_assert(x[i] >= lo - 1e-5f && x[i] <= hi + 1e-5f);
        s += x[i];
        s2 += (double)x[i] * x[i];
    }
    ck_assert_double_lt(fabs(s / 784000), 0.05);
    ck_assert_double_lt(fabs(sqrt(s2 / 784000) - 1.0), 0.05);
    ck_assert_int_eq(y[0], ordo__dataset_label(ds, 0));
    ck_assert_int_eq(y[999], ordo__dataset_label(ds, 999));
    free(x);
    ordo__dataset_destroy(&ds);
    ck_assert_ptr_null(ds);
}

START_TEST(fashion_mnist_train_and_test_load)
{
    check_split(ORDO_DATASET_TRAIN, 60000);
    check_split(ORDO_DATASET_TEST, 10000);
}
END_TEST

/* ---- bad files ------------------------------------------------------------------------- */

START_TEST(bad_files_are_rejected_naming_the_file)
{
    make_tmpdir();
    char images[300], labels[300], other[300];
    write_set(20, images, labels);
    ordo__dataset_t *ds = NULL;
    ORDO_CK_OK(ordo__dataset_load_files(images, labels, &ds));
    ck_assert_int_eq(ordo__dataset_count(ds), 20);
    ordo__dataset_destroy(&ds);

    uint8_t px[80] = {0}, lb[20] = {0};
    uint32_t idims[3] = {20, 2, 2}, ldims[1] = {20};
    sprintf(other, "%s/bad.gz", tmpdir);

    /* truncated pixel data: 20 images announced, 10 present */
    write_idx(other, 0x803, idims, 3, px, 40);
    ORDO_CK_ERR(ordo__dataset_load_files(other, labels, &ds), ORDO_ERR_FORMAT);
    expect_detail(other, "truncated");
    /* truncated header */
    write_idx(other, 0x803, idims, 0, NULL, 0);
    ORDO_CK_ERR(ordo__dataset_load_files(other, labels, &ds), ORDO_ERR_FORMAT);
    expect_detail(other, "truncated");
    /* bad magic: a label file where images belong, and a float IDX */
    ORDO_CK_ERR(ordo__dataset_load_files(labels, labels, &ds), ORDO_ERR_FORMAT);
    expect_detail(labels, "bad magic number 0x00000801");
    write_idx(other, 0xd03, idims, 3, px, 80);
    ORDO_CK_ERR(ordo__dataset_load_files(other, labels, &ds), ORDO_ERR_FORMAT);
    expect_detail(other, "bad magic number 0x00000d03");
    /* label out of range */
    lb[7] = 10;
    write_idx(other, 0x801, ldims, 1, lb, 20);
    ORDO_CK_ERR(ordo__dataset_load_files(images, other, &ds), ORDO_ERR_FORMAT);
    expect_detail(other, "label 10 of sample 7");
    /* counts disagree */
    ldims[0] = 19;
    lb[7] = 0;
    write_idx(other, 0x801, ldims, 1, lb, 19);
    ORDO_CK_ERR(ordo__dataset_load_files(images, other, &ds), ORDO_ERR_FORMAT);
    expect_detail(other, "19 labels");
    /* trailing bytes */
    ldims[0] = 20;
    write_idx(other, 0x801, ldims, 1, lb, 20);
    ORDO_CK_OK(ordo__dataset_load_files(images, other, &ds));
    ordo__dataset_destroy(&ds);
    uint8_t more[21] = {0};
    write_idx(other, 0x801, ldims, 1, more, 21);
    ORDO_CK_ERR(ordo__dataset_load_files(images, other, &ds), ORDO_ERR_FORMAT);
    expect_detail(other, "trailing bytes");
    /* zero dimension */
    idims[1] = 0;
    write_idx(other, 0x803, idims, 3, NULL, 0);
    ORDO_CK_ERR(ordo__dataset_load_files(other, labels, &ds), ORDO_ERR_FORMAT);
    expect_detail(other, "dimension 1 is 0");
    /* missing file, and a directory without the data set */
    sprintf(other, "%s/missing.gz", tmpdir);
    ORDO_CK_ERR(ordo__dataset_load_files(other, labels, &ds), ORDO_ERR_NOTFOUND);
    expect_detail(other, "no such file");
    ORDO_CK_ERR(ordo__dataset_load(tmpdir, ORDO_DATASET_TEST, &ds), ORDO_ERR_NOTFOUND);
    expect_detail("t10k-images-idx3-ubyte.gz", NULL);
    ck_assert_ptr_null(ds);
    remove_tmpdir();
}
END_TEST

/* ---- shards and the iterator ----------------------------------------------------------- */

START_TEST(shards_partition_the_set)
{
    const int64_t sizes[] = {0, 1, 7, 10, 1000, 60000, 60001};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int W = 1; W <= 9; W++) {
            int64_t expect = 0, smallest = INT64_MAX, largest = 0;
            for (int w = 0; w < W; w++) {
                int64_t b, e;
                ordo__dataset_shard(sizes[s], w, W, &b, &e);
                ck_assert_int_eq(b, expect); /* contiguous, in worker order */
                ck_assert(e >= b);
                smallest = e - b < smallest ? e - b : smallest;
                largest = e - b > largest ? e - b : largest;
                expect = e;
            }
            ck_assert_int_eq(expect, sizes[s]);
            ck_assert(largest - smallest <= 1);
        }
    }
}
END_TEST

START_TEST(iterator_is_deterministic_and_stays_in_its_shard)
{
    make_tmpdir();
    char images[300], labels[300];
    const int N = 1000, W = 3, B = 50;
    write_set(N, images, labels);
    ordo__dataset_t *ds = NULL;
    ORDO_CK_OK(ordo__dataset_load_files(images, labels, &ds));
    int *seen = calloc((size_t)N, sizeof(int));
    int first_epoch[3][300];
    for (int w = 0; w < W; w++) {
        ordo__dataset_iter_t *it = NULL, *twin = NULL, *other = NULL;
        ORDO_CK_OK(ordo__dataset_iter_new(ds, w, W, B, 42, &it));
        ORDO_CK_OK(ordo__dataset_iter_new(ds, w, W, B, 42, &twin));
        ORDO_CK_OK(ordo__dataset_iter_new(ds, w, W, B, 43, &other));
        ck_assert_int_eq(ordo__dataset_iter_batches_per_epoch(it), (N / W) / B); /* 6 */
        int64_t begin, end;
        ordo__dataset_shard(N, w, W, &begin, &end);
        int differs_from_other_seed = 0, differs_from_epoch0 = 0;
        for (int e = 0; e < 2; e++) {
            for (int b = 0; b < 6; b++) {
                const float *x, *x2, *x3;
                const int *y, *y2, *y3;
                ck_assert_int_eq(ordo__dataset_iter_next(it, &x, &y), B);
                ck_assert_int_eq(ordo__dataset_iter_epoch(it), e);
                ordo__dataset_iter_next(twin, &x2, &y2);
                ordo__dataset_iter_next(other, &x3, &y3);
                ck_assert_mem_eq(x, x2, sizeof(float) * 4 * B);
                ck_assert_mem_eq(y, y2, sizeof(int) * B);
                for (int i = 0; i < B; i++) {
                    int idx = index_of(x + 4 * i);
                    ck_assert_msg(idx >= begin && idx < end, "worker %d got sample %d", w, idx);
                    ck_assert_int_eq(y[i], idx % 10);
                    differs_from_other_seed += idx != index_of(x3 + 4 * i);
                    if (e == 0) {
                        ck_assert_int_eq(seen[idx], 0); /* distinct within an epoch */
                        seen[idx] = 1;
                        first_epoch[w][b * B + i] = idx;
                    } else {
                        differs_from_epoch0 += idx != first_epoch[w][b * B + i];
                    }
                }
            }
        }
        ck_assert_int_gt(differs_from_other_seed, 0);
        ck_assert_int_gt(differs_from_epoch0, 0);
        ordo__dataset_iter_destroy(&it);
        ordo__dataset_iter_destroy(&twin);
        ordo__dataset_iter_destroy(&other);
        ck_assert_ptr_null(it);
    }
    int total = 0;
    for (int i = 0; i < N; i++)
        total += seen[i];
    ck_assert_int_eq(total, W * 6 * B);
    /* a shard smaller than the batch is refused */
    ordo__dataset_iter_t *it = NULL;
    ORDO_CK_ERR(ordo__dataset_iter_new(ds, 0, 30, 50, 1, &it), ORDO_ERR_INVAL);
    expect_detail("smaller than the batch 50", NULL);
    ORDO_CK_ERR(ordo__dataset_iter_new(ds, 3, 3, 50, 1, &it), ORDO_ERR_INVAL);
    free(seen);
    ordo__dataset_destroy(&ds);
    remove_tmpdir();
}
END_TEST

static Suite *dataset_suite(void)
{
    Suite *s = suite_create("dataset");
    TCase *t = tcase_create("fashion_mnist");
    tcase_set_tags(t, "fmnist");
    tcase_set_timeout(t, 120); /* decompressing 60000 images takes a few seconds */
    tcase_add_test(t, fashion_mnist_train_and_test_load);
    suite_add_tcase(s, t);
    t = tcase_create("bad_files");
    tcase_add_test(t, bad_files_are_rejected_naming_the_file);
    suite_add_tcase(s, t);
    t = tcase_create("shards");
    tcase_add_test(t, shards_partition_the_set);
    tcase_add_test(t, iterator_is_deterministic_and_stays_in_its_shard);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(dataset_suite)
