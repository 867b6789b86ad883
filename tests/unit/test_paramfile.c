/* Tests of core/paramfile: params.bin round-trips bit for bit, matches only its model, every
 * kind of damaged file is refused with the file, the offset and the reason (the checksum
 * trailer catching what the fields cannot), and a resume takes the newest whole checkpoint. */
#include "core/paramfile.h"
#include "ordo_check.h"

#include <stdbool.h>

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
static ordo__model_t *small_model(const char *wname)
{
    ordo__model_t *m = ordo__model_new("small", 8, NULL);
    ck_assert_ptr_nonnull(m);
    const int64_t s34[] = {3, 4}, s3[] = {3}, s5[] = {5};
    ck_assert_int_ge(ordo__model_add_param(m, wname, 2, s34), 0);
    ck_assert_int_ge(ordo__model_add_param(m, "b", 1, s3), 0);
    ck_assert_int_ge(ordo__model_add_param(m, "v", 1, s5), 0);
    const char *fc_params[] = {wname, "b"}, *out_in[] = {"fc"}, *out_params[] = {"v"};
    ck_assert_int_ge(ordo__model_add_op(m, "fc", 0, NULL, 2, fc_params, 1, 2), 0);
    ck_assert_int_ge(ordo__model_add_op(m, "out", 1, out_in, 1, out_params, 1, 2), 0);
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

static void fill(const ordo__model_t *m, float **v)
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
    ordo__model_t *m = small_model("w");
    float *v[3];
    fill(m, v);
    v[1][2] = -0.0f;
    ORDO_CK_OK(ordo__paramfile_write(path_of("params.bin"), m, v, 42));
    ck_assert_int_ne(access(path_of("params.bin.tmp"), F_OK), 0); /* replaced atomically */
    size_t n;
    unsigned char *raw = read_bytes(path_of("params.bin"), &n);
    /* 24 header + (2+1+8) + (2+1+8) + (2+1+8) names + 20 floats + the checksum trailer */
    ck_assert_uint_eq(n, 24 + 33 + 4 * 20 + 16);
    ck_assert_mem_eq(raw, "ORDOPRM1\x03\0\0\0\0\0\0\0\x2a", 17);
    ck_assert_mem_eq(raw + n - 16, "ORDOSUM1", 8);
    ck_assert_mem_eq(raw + n - 4, "\0\0\0\0", 4);
    free(raw);
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo__paramfile_read(path_of("params.bin"), &pf));
    ck_assert_int_eq(pf->n, 3);
    ck_assert_int_eq(pf->iteration, 42);
    ORDO_CK_OK(ordo__paramfile_match(pf, m));
    for (int p = 0; p < 3; p++) {
        ck_assert_str_eq(pf->names[p], m->params[p].name);
        ck_assert_int_eq(pf->numel[p], m->params[p].numel);
        ck_assert_mem_eq(pf->values[p], v[p], sizeof(float) * (size_t)m->params[p].numel);
    }
    ordo__paramfile_destroy(&pf);
    ck_assert_ptr_null(pf);
    ordo__paramfile_destroy(&pf); /* NULL-safe */
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo__model_destroy(&m);
    remove_dir();
}
END_TEST

START_TEST(match_names_the_first_difference)
{
    make_dir();
    ordo__model_t *m = small_model("w"), *other = small_model("w2");
    float *v[3];
    fill(m, v);
    ORDO_CK_OK(ordo__paramfile_write(path_of("p.bin"), m, v, 1));
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo__paramfile_read(path_of("p.bin"), &pf));
    ORDO_CK_ERR(ordo__paramfile_match(pf, other), ORDO_ERR_FORMAT);
    ck_assert_str_eq(ordo__error_detail(), "parameter 0 is w in the file, w2 in model small");
    ordo__paramfile_destroy(&pf);
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo__model_destroy(&m);
    ordo__model_destroy(&other);
    remove_dir();
}
END_TEST

/* writes a good file, lets edit damage its bytes, and expects the read to fail with text;
 * with `plain` the checksum trailer is taken off first (the format as documented before it,
 * which readers accept), so the fields' own checks are what refuse it */
static void expect_bad_file(void (*edit)(unsigned char *, size_t *), const char *text, bool plain)
{
    ordo__model_t *m = small_model("w");
    float *v[3];
    fill(m, v);
    ORDO_CK_OK(ordo__paramfile_write(path_of("good.bin"), m, v, 7));
    size_t n;
    unsigned char *raw = read_bytes(path_of("good.bin"), &n);
    raw = realloc(raw, n + 16);
    if (plain) n -= 16;
    edit(raw, &n);
    write_bytes(path_of("bad.bin"), raw, n);
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_ERR(ordo__paramfile_read(path_of("bad.bin"), &pf), ORDO_ERR_FORMAT);
    ck_assert_ptr_null(pf);
    ck_assert_msg(strstr(ordo__error_detail(), path_of("bad.bin")) &&
                      strstr(ordo__error_detail(), text),
                  "detail '%s' lacks '%s'", ordo__error_detail(), text);
    free(raw);
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo__model_destroy(&m);
}

static void expect_bad(void (*edit)(unsigned char *, size_t *), const char *text)
{
    expect_bad_file(edit, text, true);
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

static void flip_value(unsigned char *d, size_t *n)
{
    (void)n;
    d[24 + 33 + 4 * 7 + 1] ^= 0x10; /* a bit of w's 8th value: every field still fits */
}
static void flip_sum(unsigned char *d, size_t *n)
{
    d[*n - 6] ^= 0x01; /* the trailer's CRC itself */
}
static void cut_trailer(unsigned char *d, size_t *n)
{
    (void)d;
    *n -= 5; /* cut short mid-trailer: no trailer is found, the values are 11 bytes long */
}
START_TEST(the_checksum_catches_what_the_fields_cannot)
{
    make_dir();
    expect_bad_file(flip_value, "offset 137: checksum mismatch", false);
    expect_bad_file(flip_sum, "offset 137: checksum mismatch", false);
    expect_bad_file(cut_trailer, "91 bytes of values, the header announces 80", false);
    expect_bad_file(bad_magic, "offset 0: not an ordo parameter file", false);
    remove_dir();
}
END_TEST

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
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_ERR(ordo__paramfile_read(path_of("missing.bin"), &pf), ORDO_ERR_NOTFOUND);
    ck_assert(strstr(ordo__error_detail(), "missing.bin") != NULL);
    remove_dir();
}
END_TEST

START_TEST(a_file_without_the_trailer_is_read)
{
    make_dir();
    ordo__model_t *m = small_model("w");
    float *v[3];
    fill(m, v);
    ORDO_CK_OK(ordo__paramfile_write(path_of("good.bin"), m, v, 9));
    size_t n;
    unsigned char *raw = read_bytes(path_of("good.bin"), &n);
    write_bytes(path_of("plain.bin"), raw, n - 16);
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo__paramfile_read(path_of("plain.bin"), &pf));
    ck_assert_int_eq(pf->iteration, 9);
    ck_assert_mem_eq(pf->values[2], v[2], sizeof(float) * 5);
    ordo__paramfile_destroy(&pf);
    free(raw);
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo__model_destroy(&m);
    remove_dir();
}
END_TEST

/* the iteration ordo__paramfile_newest picks in dir, or the error's detail in *detail */
static int64_t newest(char *detail, size_t size, int want_rc)
{
    char path[256];
    int64_t it = -1;
    int rc = ordo__paramfile_newest(dir, path, sizeof path, &it);
    ck_assert_int_eq(rc, want_rc);
    snprintf(detail, size, "%s", rc ? ordo__error_detail() : path);
    return it;
}

START_TEST(a_resume_takes_the_newest_whole_checkpoint)
{
    make_dir();
    ordo__model_t *m = small_model("w");
    float *v[3];
    fill(m, v);
    char got[1024];
    newest(got, sizeof got, ORDO_ERR_NOTFOUND);
    ck_assert_ptr_nonnull(strstr(got, "checkpoint.bin: No such file or directory"));
    char ckpt[256], prev[256];
    snprintf(ckpt, sizeof ckpt, "%s", path_of("checkpoint.bin"));
    snprintf(prev, sizeof prev, "%s", path_of("checkpoint.prev.bin"));
    ORDO_CK_OK(ordo__paramfile_write_kept(ckpt, prev, m, v, 10));
    ck_assert_int_ne(access(prev, F_OK), 0); /* the first has no predecessor */
    ck_assert_int_eq(newest(got, sizeof got, 0), 10);
    ck_assert_str_eq(got, ckpt);
    ORDO_CK_OK(ordo__paramfile_write_kept(ckpt, prev, m, v, 20));
    ck_assert_int_eq(newest(got, sizeof got, 0), 20);
    /* a bit flipped in checkpoint.bin: the one before */
    size_t n;
    unsigned char *raw = read_bytes(ckpt, &n);
    raw[60] ^= 0x04;
    write_bytes(ckpt, raw, n);
    ck_assert_int_eq(newest(got, sizeof got, 0), 10);
    ck_assert_str_eq(got, prev);
    /* checkpoint.bin gone (a crash between the two renames): the one before */
    ck_assert_int_eq(remove(ckpt), 0);
    ck_assert_int_eq(newest(got, sizeof got, 0), 10);
    /* both damaged: refused, naming both files and their checks */
    write_bytes(ckpt, raw, n);
    ck_assert_int_eq(truncate(prev, 100), 0);
    newest(got, sizeof got, ORDO_ERR_FORMAT);
    ck_assert_msg(strstr(got, "no whole checkpoint in") &&
                      strstr(got, "checkpoint.bin: offset 137: checksum mismatch") &&
                      strstr(got, "checkpoint.prev.bin: offset 57: 43 bytes of values"),
                  "detail '%s'", got);
    free(raw);
    for (int p = 0; p < 3; p++)
        free(v[p]);
    ordo__model_destroy(&m);
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
    tcase_add_test(t, the_checksum_catches_what_the_fields_cannot);
    tcase_add_test(t, a_file_without_the_trailer_is_read);
    tcase_add_test(t, a_resume_takes_the_newest_whole_checkpoint);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(paramfile_suite)
