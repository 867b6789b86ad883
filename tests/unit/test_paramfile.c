/* Tests of worker/paramfile: params.bin round-trips bit for bit, matches only its model, and
 * every kind of damaged file is refused with the file, the offset and the reason. */
#include "core/paramfile.h"
#include "ordo_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof dir, "/tmp/ordo-paramfile-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *path_of(const char *name)
{
    static char buf[128];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* a two-op model: w [3, 4] and b [3] read by op "fc", a second op "out" reading v [5] */
static ordo_model_t *small_model(const char *wname)
{
    ordo_model_t *m = ordo_model_new("small", 8, NULL);
    ck_assert_ptr_nonnull(m);
    const int64_t s34[] = {3, 4}, s3[] = {3}, s5[] = {5};
    ck_assert_int_ge(ordo_model_add_param(m, wname, 2, s34), 0);
    ck_assert_int_ge(ordo_model_add_param(m, "b", 1, s3), 0);
    ck_assert_int_ge(ordo_model_add_param(m, "v", 1, s5), 0);
    const char *fc_params[] = {wname, "b"}, *out_in[] = {"fc"}, *out_params[] = {"v"};
    ck_assert_int_ge(ordo_model_add_op(m, "fc", 0, NULL, 2, fc_params, 1, 2), 0);
    ck_assert_int_ge(ordo_model_add_op(m, "out", 1, out_in, 1, out_params, 1, 2), 0);
    ORDO_CK_OK(ordo_model_check(m));
    return m;
}

static void fill(const ordo_model_t *m, float **v)
{
    for (int p = 0; p < m->n_params; p++) {
        v[p] = malloc(sizeof(float) * (size_t)m->params[p].numel);
        for (int64_t i = 0; i < m->params[p].numel; i++)
            v[p][i] = (float)(p * 100 + i) * 0.37f - 3.0f;
    }
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char *buf = malloc(1 << 16);
    *n = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

START_TEST(round_trip_is_bit_exact)
{
    make_dir();
    ordo_model_t *m = small_model("w");
    float *v[3];
    fill(m, v);
    v[1][2] = -0.0f;
    ORDO_CK_OK(ordo_paramfile_write(path_of("params.bin"), m, v, 42));
    ck_assert_int_ne(access(path_of("params.bin.tmp"), F_OK), 0); /* replaced atomically */
    size_t n;
    unsigned char *raw = read_bytes(path_of("params.bin"), &n);
    /* 24 header + (2+1+8) + (2+1+8) + (2+1+8) names + 20 floats */
    ck_assert_uint_eq(n, 24 + 33 + 4 * 20);
    ck_assert_mem_eq(raw, "ORDOPRM1\x03\0\0\0\0\0\0\0\x2a", 17);
    free(raw);
    ordo_paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo_paramfile_read(path_of("params.bin"), &pf));
    ck_assert_int_eq(pf->n, 3);
    ck_assert_int_eq(pf->iteration, 42);
    ORDO_CK_OK(ordo_paramfile_match(pf, m));
    for (int p = 0; p < 3; p++) {
        ck_assert_str_eq(pf->names[p], m->params[p].name);
        ck_assert_int_eq(pf->numel[p], m->params[p].numel);
        ck_assert_mem_eq(pf->values[p], v[p], sizeof(float) * (size_t)m->params[p].numel);
    }
    ordo_paramfile_destroy(&pf);
    ck_assert_ptr_null(pf);
    ordo_paramfile_destroy(&pf); /* NULL-safe */
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo_model_destroy(&m);
    remove_dir();
}
END_TEST

START_TEST(match_names_the_first_difference)
{
    make_dir();
    ordo_model_t *m = small_model("w"), *other = small_model("w2");
    float *v[3];
    fill(m, v);
    ORDO_CK_OK(ordo_paramfile_write(path_of("p.bin"), m, v, 1));
    ordo_paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo_paramfile_read(path_of("p.bin"), &pf));
    ORDO_CK_ERR(ordo_paramfile_match(pf, other), ORDO_ERR_FORMAT);
    ck_assert_str_eq(ordo_error_detail(), "parameter 0 is w in the file, w2 in model small");
    ordo_paramfile_destroy(&pf);
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo_model_destroy(&m);
    ordo_model_destroy(&other);
    remove_dir();
}
END_TEST

/* writes a good file, lets edit damage its bytes, and expects the read to fail with text */
static void expect_bad(void (*edit)(unsigned char *, size_t *), const char *text)
{
    ordo_model_t *m = small_model("w");
    float *v[3];
    fill(m, v);
    ORDO_CK_OK(ordo_paramfile_write(path_of("good.bin"), m, v, 7));
    size_t n;
    unsigned char *raw = read_bytes(path_of("good.bin"), &n);
    raw = realloc(raw, n + 16);
    edit(raw, &n);
    write_bytes(path_of("bad.bin"), raw, n);
    ordo_paramfile_t *pf = NULL;
    ORDO_CK_ERR(ordo_paramfile_read(path_of("bad.bin"), &pf), ORDO_ERR_FORMAT);
    ck_assert_ptr_null(pf);
    ck_assert_msg(strstr(ordo_error_detail(), path_of("bad.bin")) &&
                      strstr(ordo_error_detail(), text),
                  "detail '%s' lacks '%s'", ordo_error_detail(), text);
    free(raw);
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo_model_destroy(&m);
}

static void bad_magic(unsigned char *d, size_t *n)
{
    (void)n;
    d[3] = 'X';
}
static void short_header(unsigned char *d, size_t *n)
{
    (void)d;
    *n = 20;
}
static void too_many(unsigned char *d, size_t *n)
{
    (void)n;
    d[11] = 0x10; /* n = 0x10000003 */
}
static void empty_name(unsigned char *d, size_t *n)
{
    (void)n;
    d[24] = 0;
    d[25] = 0;
}
static void long_name(unsigned char *d, size_t *n)
{
    (void)n;
    d[24] = 200; /* w's name would run past the end */
}
static void huge_numel(unsigned char *d, size_t *n)
{
    (void)n;
    d[24 + 2 + 1 + 7] = 0x7f; /* w's numel, top byte */
}
static void cut_values(unsigned char *d, size_t *n)
{
    (void)d;
    *n -= 4;
}
static void trailing(unsigned char *d, size_t *n)
{
    d[(*n)++] = 0;
}

START_TEST(damaged_files_are_refused)
{
    make_dir();
    expect_bad(bad_magic, "offset 0: not an ordo parameter file");
    expect_bad(short_header, "offset 0: not an ordo parameter file");
    expect_bad(too_many, "offset 8: 268435459 parameters");
    expect_bad(empty_name, "offset 24: parameter 0 has an empty name");
    expect_bad(long_name, "offset 26: truncated parameter table");
    expect_bad(huge_numel, "more than the file holds");
    expect_bad(cut_values, "76 bytes of values, the header announces 80");
    expect_bad(trailing, "81 bytes of values, the header announces 80");
    ordo_paramfile_t *pf = NULL;
    ORDO_CK_ERR(ordo_paramfile_read(path_of("missing.bin"), &pf), ORDO_ERR_NOTFOUND);
    ck_assert(strstr(ordo_error_detail(), "missing.bin") != NULL);
    remove_dir();
}
END_TEST

static Suite *paramfile_suite(void)
{
    Suite *s = suite_create("paramfile");
    TCase *t = tcase_create("format");
    tcase_add_test(t, round_trip_is_bit_exact);
    tcase_add_test(t, match_names_the_first_difference);
    tcase_add_test(t, damaged_files_are_refused);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(paramfile_suite)
