/* Tests of scheduler/model: the builder API, the ordo-model/1 loader's rejections (file,
 * JSON path, reason), the committed profiles in conf/models and their published counts. */
#include "core/model.h"
#include "ordo_check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect_detail(const char *want)
{
    ck_assert_msg(strstr(ordo__error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo__error_detail(), want);
}

/* ---------------------------------------------------------------- builder */

START_TEST(builder_builds_a_small_graph)
{
    ordo__model_t *m = ordo__model_new("toy", 32, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->dtype, "float32");
    ck_assert_int_eq(m->dtype_size, 4);
    int64_t w[2] = {256, 784}, b[1] = {256};
    ck_assert_int_eq(ordo__model_add_param(m, "fc1.w", 2, w), 0);
    ck_assert_int_eq(ordo__model_add_param(m, "fc1.b", 1, b), 1);
    const char *ps[2] = {"fc1.w", "fc1.b"};
    const char *in[1] = {"fc1"};
    ck_assert_int_eq(ordo__model_add_op(m, "fc1", 0, NULL, 2, ps, 120, 240), 0);
    ck_assert_int_eq(ordo__model_add_op(m, "relu", 1, in, 0, NULL, 5, 5), 1);
    ORDO_CK_OK(ordo__model_check(m));
    ck_assert_int_eq(m->n_params, 2);
    ck_assert_int_eq(m->n_ops, 2);
    ck_assert_int_eq(m->params[0].numel, 256 * 784);
    ck_assert_int_eq(m->params[0].bytes, 256 * 784 * 4);
    ck_assert_int_eq(m->params[1].first_op, 0);
    ck_assert_int_eq(m->ops[1].n_inputs, 1);
    ck_assert_int_eq(m->ops[1].inputs[0], 0);
    ck_assert_int_eq(ordo__model_total_numel(m), 256 * 784 + 256);
    ck_assert_int_eq(ordo__model_total_bytes(m), (256 * 784 + 256) * 4);
    ck_assert_double_eq(ordo__model_total_us(m, 0), 125);
    ck_assert_double_eq(ordo__model_total_us(m, 1), 370);
    ck_assert_int_eq(ordo__model_param_index(m, "fc1.b"), 1);
    ck_assert_int_eq(ordo__model_op_index(m, "relu"), 1);
    ck_assert_int_eq(ordo__model_op_index(m, "nope"), -1);
    ordo__model_destroy(&m);
    ck_assert_ptr_null(m);
    ordo__model_destroy(&m); /* NULL-safe */
}
END_TEST

START_TEST(builder_many_entries_grow)
{
    ordo__model_t *m = ordo__model_new("big", 1, "float16");
    ck_assert_ptr_nonnull(m);
    for (int i = 0; i < 1000; i++) {
        char pn[16], on[16], prev[16];
        snprintf(pn, sizeof pn, "w%d", i);
        snprintf(on, sizeof on, "o%d", i);
        snprintf(prev, sizeof prev, "o%d", i - 1);
        int64_t s[1] = {i + 1};
        ck_assert_int_eq(ordo__model_add_param(m, pn, 1, s), i);
        const char *ps[1] = {pn}, *in[1] = {prev};
        ck_assert_int_eq(ordo__model_add_op(m, on, i > 0, in, 1, ps, 1, 2), i);
    }
    ORDO_CK_OK(ordo__model_check(m));
    ck_assert_int_eq(ordo__model_total_numel(m), 1000 * 1001 / 2);
    ck_assert_int_eq(ordo__model_total_bytes(m), 1000 * 1001);
    ck_assert_int_eq(m->params[999].first_op, 999);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(builder_rejects_bad_calls)
{
    ck_assert_ptr_null(ordo__model_new("x", 0, NULL));
    ck_assert_ptr_null(ordo__model_new("x", 1, "int8"));
    ck_assert_ptr_null(ordo__model_new(NULL, 1, NULL));
    ordo__model_t *m = ordo__model_new("x", 1, NULL);
    int64_t s[2] = {3, 4}, zero[1] = {0}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(ordo__model_add_param(m, "a", 2, s), 0);
    ORDO_CK_ERR(ordo__model_add_param(m, "a", 2, s), ORDO_ERR_INVAL);
    expect_detail("duplicate parameter name 'a'");
    ORDO_CK_ERR(ordo__model_add_param(m, "z", 1, zero), ORDO_ERR_INVAL);
    expect_detail("parameter 'z': dim 0 is 0, must be > 0");
    ORDO_CK_ERR(ordo__model_add_param(m, "n", 9, nine), ORDO_ERR_INVAL);
    expect_detail("parameter 'n': 9 dims, must be 1 to 8");
    ORDO_CK_ERR(ordo__model_add_param(m, "", 1, s), ORDO_ERR_INVAL);
    int64_t huge[2] = {INT64_MAX / 2, 3};
    ORDO_CK_ERR(ordo__model_add_param(m, "h", 2, huge), ORDO_ERR_RANGE);
    expect_detail("parameter 'h': shape too large");

    /* check before any op: no ops */
    ORDO_CK_ERR(ordo__model_check(m), ORDO_ERR_INVAL);
    expect_detail("model 'x': has no ops");

    const char *pa[1] = {"a"}, *pq[1] = {"q"}, *in_self[1] = {"o1"}, *in0[1] = {"o0"};
    const char *twice[2] = {"a", "a"};
    ORDO_CK_ERR(ordo__model_add_op(m, "o0", 0, NULL, 1, pq, 1, 1), ORDO_ERR_NOTFOUND);
    expect_detail("op 'o0': unknown parameter 'q'");
    ORDO_CK_ERR(ordo__model_add_op(m, "o0", 0, NULL, 1, pa, -1, 1), ORDO_ERR_INVAL);
    expect_detail("op 'o0': times must be >= 0");
    ORDO_CK_ERR(ordo__model_add_op(m, "o0", 0, NULL, 2, twice, 1, 1), ORDO_ERR_INVAL);
    expect_detail("listed twice");
    ck_assert_int_eq(ordo__model_add_op(m, "o0", 0, NULL, 0, NULL, 1, 1), 0);
    ORDO_CK_ERR(ordo__model_add_op(m, "o0", 0, NULL, 0, NULL, 1, 1), ORDO_ERR_INVAL);
    expect_detail("duplicate op name 'o0'");
    ORDO_CK_ERR(ordo__model_add_op(m, "o1", 1, in_self, 0, NULL, 1, 1), ORDO_ERR_NOTFOUND);
    expect_detail("op 'o1': input 'o1' is not an earlier op");

    /* a parameter nobody reads */
    ORDO_CK_ERR(ordo__model_check(m), ORDO_ERR_INVAL);
    expect_detail("model 'x': parameter 'a' is read by no op");
    ck_assert_int_eq(ordo__model_add_op(m, "o1", 1, in0, 1, pa, 1, 1), 1);
    ORDO_CK_OK(ordo__model_check(m));
    ck_assert_int_eq(m->params[0].first_op, 1);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(from_sizes_builds_a_chain)
{
    int64_t sizes[3] = {4, 10, 1 << 20};
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__model_from_sizes(sizes, 3, &m));
    ck_assert_int_eq(m->n_params, 3);
    ck_assert_int_eq(m->n_ops, 3);
    ck_assert_int_eq(m->params[0].numel, 1);
    ck_assert_int_eq(m->params[1].numel, 3); /* 10 bytes round up to 3 floats */
    ck_assert_int_eq(m->params[1].bytes, 12);
    ck_assert_int_eq(m->params[2].numel, 1 << 18);
    ck_assert_str_eq(m->params[2].name, "p2");
    ck_assert_str_eq(m->ops[2].name, "op2");
    ck_assert_int_eq(m->ops[0].n_inputs, 0);
    ck_assert_int_eq(m->ops[2].n_inputs, 1);
    ck_assert_int_eq(m->ops[2].inputs[0], 1);
    ck_assert_int_eq(m->ops[2].n_params, 1);
    ck_assert_int_eq(m->ops[2].params[0], 2);
    ck_assert_int_eq(m->params[2].first_op, 2);
    ck_assert_double_eq(ordo__model_total_us(m, 1), 0);
    ck_assert_int_eq(ordo__model_total_bytes(m), 4 + 12 + (1 << 20));
    ordo__model_destroy(&m);

    int64_t bad[2] = {8, 0};
    m = NULL;
    ORDO_CK_ERR(ordo__model_from_sizes(bad, 2, &m), ORDO_ERR_INVAL);
    ck_assert_ptr_null(m);
    ORDO_CK_ERR(ordo__model_from_sizes(bad, 0, &m), ORDO_ERR_INVAL);
}
END_TEST

/* ---------------------------------------------------------------- loader */

static const char toy[] =
    "{\"format\": \"ordo-model/1\", \"name\": \"toy\", \"batch\": 32, \"dtype\": \"float32\",\n"
    " \"params\": [{\"name\": \"fc1.w\", \"shape\": [256, 784]}, {\"name\": \"fc1.b\", "
    "\"shape\": [256]},\n"
    "             {\"name\": \"fc2.w\", \"shape\": [10, 256]}],\n"
    " \"ops\": [\n"
    "  {\"name\": \"fc1\", \"inputs\": [], \"params\": [\"fc1.w\", \"fc1.b\"], \"fwd_us\": 120.0, "
    "\"bwd_us\": 240.0},\n"
    "  {\"name\": \"relu\", \"inputs\": [\"fc1\"], \"params\": [], \"fwd_us\": 5, \"bwd_us\": 5},\n"
    "  {\"name\": \"fc2\", \"inputs\": [\"relu\"], \"params\": [\"fc2.w\"], \"fwd_us\": 10, "
    "\"bwd_us\": 20}]}\n";

#define HEAD_JSON "{\"format\": \"ordo-model/1\", \"name\": \"t\", \"batch\": 1, "

START_TEST(loader_reads_a_valid_file)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__model_load_string(toy, "toy.json", &m));
    ck_assert_str_eq(m->name, "toy");
    ck_assert_int_eq(m->batch, 32);
    ck_assert_str_eq(m->dtype, "float32");
    ck_assert_int_eq(m->n_params, 3);
    ck_assert_int_eq(m->n_ops, 3);
    ck_assert_int_eq(m->params[0].ndim, 2);
    ck_assert_int_eq(m->params[0].shape[1], 784);
    ck_assert_int_eq(m->params[2].first_op, 2);
    ck_assert_int_eq(m->ops[2].inputs[0], 1);
    ck_assert_int_eq(m->ops[0].n_params, 2);
    ck_assert_int_eq(m->ops[0].params[1], 1);
    ck_assert_double_eq(m->ops[0].bwd_us, 240);
    ck_assert_int_eq(ordo__model_total_numel(m), 256 * 784 + 256 + 2560);
    ck_assert_double_eq(ordo__model_total_us(m, 1), 400);
    ordo__model_destroy(&m);
}
END_TEST

/* replace returns toy with the first occurrence of from replaced by to (caller frees). */
static char *replace(const char *from, const char *to)
{
    const char *at = strstr(toy, from);
    ck_assert_msg(at != NULL, "'%s' not in toy", from);
    size_t n = strlen(toy) - strlen(from) + strlen(to) + 1;
    char *out = malloc(n);
    ck_assert_ptr_nonnull(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - toy), toy, to, at + strlen(from));
    return out;
}

static void expect_bad(const char *from, const char *to, const char *want)
{
    char *text = replace(from, to);
    ordo__model_t *m = NULL;
    ORDO_CK_ERR(ordo__model_load_string(text, "bad.json", &m), ORDO_ERR_FORMAT);
    ck_assert_ptr_null(m);
    expect_detail(want);
    free(text);
}

START_TEST(loader_rejects_invalid_json)
{
    expect_bad("\"batch\": 32,", "\"batch\": 32,,", "bad.json:1:");
    expect_bad("\"batch\": 32,", "\"batch\": 32,,", "invalid JSON");
    expect_bad("\"fwd_us\": 5,", "\"fwd_us\": 5 \"x\": 1,", "bad.json:6:");
    expect_bad("\"batch\": 32,", "\"batch\": 32, \"batch\": 2,", "duplicate object key");
    ordo__model_t *m = NULL;
    ORDO_CK_ERR(ordo__model_load_string("", "empty.json", &m), ORDO_ERR_FORMAT);
    expect_detail("empty.json:");
    ORDO_CK_ERR(ordo__model_load_string("[1, 2]", "arr.json", &m), ORDO_ERR_FORMAT);
    expect_detail("arr.json: $: must be an object");
}
END_TEST

START_TEST(loader_rejects_unknown_format)
{
    expect_bad("\"ordo-model/1\"", "\"ordo-model/2\"",
               "bad.json: $.format: unknown format 'ordo-model/2'");
    expect_bad("\"ordo-model/1\"", "1", "bad.json: $.format: unknown format (not a string)");
    expect_bad("\"format\": \"ordo-model/1\",", "", "bad.json: $: missing 'format'");
}
END_TEST

START_TEST(loader_rejects_missing_and_mistyped_fields)
{
    expect_bad("\"name\": \"toy\",", "", "bad.json: $: missing 'name'");
    expect_bad("\"name\": \"toy\"", "\"name\": 7", "bad.json: $.name: must be a string");
    expect_bad("\"name\": \"toy\"", "\"name\": \"\"", "bad.json: $.name: must not be empty");
    expect_bad("\"batch\": 32,", "", "bad.json: $: missing 'batch'");
    expect_bad("\"batch\": 32", "\"batch\": \"32\"",
               "bad.json: $.batch: must be a positive integer");
    expect_bad("\"batch\": 32", "\"batch\": 0", "bad.json: $.batch: must be a positive integer");
    expect_bad("\"batch\": 32", "\"batch\": -4", "bad.json: $.batch: must be a positive integer");
    expect_bad("\"batch\": 32", "\"batch\": 32.5", "bad.json: $.batch: must be a positive integer");
    expect_bad("\"dtype\": \"float32\"", "\"dtype\": \"int8\"",
               "bad.json: $.dtype: unknown dtype 'int8'");
    expect_bad("\"dtype\": \"float32\"", "\"dtype\": 4", "bad.json: $.dtype: must be a string");
    expect_bad("\"batch\": 32,", "\"batch\": 32, \"bogus\": 1,", "bad.json: $.bogus: unknown key");
    expect_bad("{\"name\": \"fc1.w\", \"shape\": [256, 784]}", "[]",
               "bad.json: $.params[0]: must be an object");
    expect_bad("{\"name\": \"fc1.w\", ", "{", "bad.json: $.params[0]: missing 'name'");
    ordo__model_t *m = NULL;
    ORDO_CK_ERR(ordo__model_load_string(HEAD_JSON "\"params\": {}, \"ops\": []}", "bad.json", &m),
                ORDO_ERR_FORMAT);
    expect_detail("bad.json: $.params: must be an array");
    ORDO_CK_ERR(ordo__model_load_string(HEAD_JSON "\"params\": []}", "bad.json", &m), ORDO_ERR_FORMAT);
    expect_detail("bad.json: $: missing 'ops'");
    ck_assert_ptr_null(m);
    expect_bad("\"shape\": [256]", "\"shape\": 256",
               "bad.json: $.params[1].shape: must be an array");
    expect_bad("\"shape\": [256]", "\"shape\": [256], \"dims\": 1",
               "bad.json: $.params[1].dims: unknown key");
    expect_bad("\"inputs\": [\"fc1\"]", "\"inputs\": \"fc1\"",
               "bad.json: $.ops[1].inputs: must be an array");
    expect_bad("\"inputs\": [\"fc1\"], ", "", "bad.json: $.ops[1]: missing 'inputs'");
    expect_bad("\"params\": [], ", "", "bad.json: $.ops[1]: missing 'params'");
    expect_bad("\"inputs\": [\"fc1\"]", "\"inputs\": [3]",
               "bad.json: $.ops[1].inputs[0]: must be a string");
    expect_bad("\"params\": [\"fc2.w\"]", "\"params\": [null]",
               "bad.json: $.ops[2].params[0]: must be a string");
    expect_bad("\"fwd_us\": 5,", "\"fwd_ms\": 5,", "bad.json: $.ops[1].fwd_ms: unknown key");
    expect_bad("{\"name\": \"relu\", ", "{\"name\": \"relu\", \"kind\": \"relu\", ",
               "bad.json: $.ops[1].kind: unknown key");
    expect_bad("\"ops\": [\n", "\"ops\": [ 1,\n", "bad.json: $.ops[0]: must be an object");
}
END_TEST

START_TEST(loader_rejects_unknown_and_duplicate_names)
{
    expect_bad("{\"name\": \"fc2.w\"", "{\"name\": \"fc1.w\"",
               "bad.json: $.params[2].name: duplicate parameter name 'fc1.w' (first at "
               "$.params[0])");
    expect_bad("{\"name\": \"fc2\"", "{\"name\": \"fc1\"",
               "bad.json: $.ops[2].name: duplicate op name 'fc1' (first at $.ops[0])");
    expect_bad("\"params\": [\"fc2.w\"]", "\"params\": [\"fc3.w\"]",
               "bad.json: $.ops[2].params[0]: unknown parameter 'fc3.w'");
    expect_bad("\"params\": [\"fc1.w\", \"fc1.b\"]", "\"params\": [\"fc1.w\", \"fc1.w\"]",
               "bad.json: $.ops[0].params[1]: 'fc1.w' is listed twice");
    expect_bad("\"inputs\": [\"relu\"]", "\"inputs\": [\"relu\", \"fc1\", \"relu\"]",
               "bad.json: $.ops[2].inputs[2]: 'relu' is listed twice");
}
END_TEST

START_TEST(loader_rejects_inputs_not_earlier)
{
    expect_bad("\"inputs\": [\"relu\"]", "\"inputs\": [\"fc9\"]",
               "bad.json: $.ops[2].inputs[0]: 'fc9' is not an earlier op");
    expect_bad("\"inputs\": [\"fc1\"]", "\"inputs\": [\"fc2\"]",
               "bad.json: $.ops[1].inputs[0]: 'fc2' is not an earlier op (it is $.ops[2])");
    expect_bad("\"inputs\": [\"fc1\"]", "\"inputs\": [\"relu\"]",
               "bad.json: $.ops[1].inputs[0]: 'relu' is not an earlier op (it is $.ops[1])");
}
END_TEST

START_TEST(loader_rejects_unused_parameters)
{
    expect_bad("\"params\": [\"fc2.w\"]", "\"params\": []",
               "bad.json: $.params[2]: parameter 'fc2.w' is read by no op");
    ordo__model_t *m = NULL;
    ORDO_CK_ERR(ordo__model_load_string(HEAD_JSON "\"params\": [], \"ops\": []}", "bad.json", &m),
                ORDO_ERR_FORMAT);
    expect_detail("bad.json: $.ops: no ops");
}
END_TEST

START_TEST(loader_rejects_bad_times)
{
    expect_bad("\"fwd_us\": 5,", "\"fwd_us\": -1,", "bad.json: $.ops[1].fwd_us: -1 is negative");
    expect_bad("\"bwd_us\": 20", "\"bwd_us\": -0.5", "bad.json: $.ops[2].bwd_us: -0.5 is negative");
    expect_bad("\"fwd_us\": 5,", "", "bad.json: $.ops[1]: missing 'fwd_us'");
    expect_bad(", \"bwd_us\": 20", "", "bad.json: $.ops[2]: missing 'bwd_us'");
    expect_bad("\"fwd_us\": 5,", "\"fwd_us\": \"5\",",
               "bad.json: $.ops[1].fwd_us: must be a number");
}
END_TEST

START_TEST(loader_rejects_bad_shapes)
{
    expect_bad("\"shape\": [256]", "\"shape\": []", "bad.json: $.params[1].shape: empty shape");
    expect_bad("\"shape\": [256]", "\"shape\": [0]",
               "bad.json: $.params[1].shape[0]: must be a positive integer");
    expect_bad("\"shape\": [256, 784]", "\"shape\": [256, -784]",
               "bad.json: $.params[0].shape[1]: must be a positive integer");
    expect_bad("\"shape\": [256]", "\"shape\": [2.5]",
               "bad.json: $.params[1].shape[0]: must be a positive integer");
    expect_bad("\"shape\": [256]", "\"shape\": [1,1,1,1,1,1,1,1,1]",
               "bad.json: $.params[1].shape: 9 dims, at most 8");
    expect_bad("\"shape\": [256]", "\"shape\": [4294967296, 4294967296]",
               "bad.json: $.params[1].shape: too many elements");
}
END_TEST

START_TEST(loader_reads_files)
{
    ordo__model_t *m = NULL;
    ORDO_CK_ERR(ordo__model_load_file("/nonexistent/dir/m.json", &m), ORDO_ERR_NOTFOUND);
    expect_detail("/nonexistent/dir/m.json");
    ck_assert_ptr_null(m);
    char path[] = "/tmp/ordo_test_model_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(toy, f);
    fclose(f);
    ORDO_CK_OK(ordo__model_load_file(path, &m));
    ck_assert_int_eq(m->n_ops, 3);
    ordo__model_destroy(&m);
    f = fopen(path, "w");
    fputs("{\"format\": \"ordo-model/1\",\n \"name\": 3}", f);
    fclose(f);
    ORDO_CK_ERR(ordo__model_load_file(path, &m), ORDO_ERR_FORMAT);
    char want[128];
    snprintf(want, sizeof want, "%s: $.name: must be a string", path);
    expect_detail(want);
    unlink(path);
}
END_TEST

/* Every truncation and many single-byte mangles of a valid file either load or fail with
 * ORDO_ERR_FORMAT; none crashes (the suite also runs under ASan/UBSan). */
START_TEST(loader_survives_mangled_input)
{
    size_t n = strlen(toy);
    char *buf = malloc(n + 1);
    ck_assert_ptr_nonnull(buf);
    static const char mangles[] = {'\0', '"', '[', '}', '-', '9', ',', 'x', ':', '\\', '\xff'};
    int loaded = 0, rejected = 0;
    for (size_t cut = 0; cut < n - 1; cut++) /* the last byte is a newline */ {
        ordo__model_t *m = NULL;
        int rc = ordo__model_load_buffer(toy, cut, "cut.json", &m);
        ck_assert_int_eq(rc, ORDO_ERR_FORMAT);
        ck_assert_ptr_null(m);
        rejected++;
    }
    for (size_t at = 0; at < n; at++)
        for (size_t k = 0; k < sizeof mangles; k++) {
            memcpy(buf, toy, n + 1);
            buf[at] = mangles[k];
            ordo__model_t *m = NULL;
            int rc = ordo__model_load_buffer(buf, n, "mangled.json", &m);
            ck_assert_msg(rc == 0 || rc == ORDO_ERR_FORMAT, "rc %d at %zu", rc, at);
            ck_assert_msg((rc == 0) == (m != NULL), "out set on failure");
            if (rc == 0) {
                ORDO_CK_OK(ordo__model_check(m));
                loaded++;
            } else {
                ck_assert_msg(strstr(ordo__error_detail(), "mangled.json") != NULL, "%s",
                              ordo__error_detail());
                rejected++;
            }
            ordo__model_destroy(&m);
        }
    ck_assert_int_gt(loaded, 0);   /* e.g. a digit inside a shape */
    ck_assert_int_gt(rejected, n); /* every truncation and most mangles */
    free(buf);
}
END_TEST

/* ---------------------------------------------------------------- profiles */

/* load_profile loads conf/models/NAME.json from the source tree. */
static ordo__model_t *load_profile(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/conf/models/%s.json", ordo_ck_source_dir(), name);
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__model_load_file(path, &m));
    ck_assert_str_eq(m->name, name);
    return m;
}

START_TEST(every_profile_loads)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/conf/models", ordo_ck_source_dir());
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "cannot open %s", dir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ordo__model_t *m = NULL;
        ORDO_CK_OK(ordo__model_load_file(path, &m));
        ck_assert_int_gt(m->n_params, 0);
        ck_assert_int_gt(ordo__model_total_us(m, 1), 0);
        for (int o = 0; o < m->n_ops; o++) /* the format says bwd = 2 x fwd for profiles */
            ck_assert_msg(m->ops[o].bwd_us >= m->ops[o].fwd_us, "%s: op %s", path, m->ops[o].name);
        ordo__model_destroy(&m);
        n++;
    }
    closedir(d);
    ck_assert_int_ge(n, 9);
}
END_TEST

/* Published parameter counts of the reference definitions (see docs/models.md). */
static const struct {
    const char *name;
    int tensors;
    int64_t numel;
    int ops;
    int batch;
} published[] = {
    {"alexnet", 16, 61100840, 21, 32},    {"vgg16", 32, 138357544, 39, 32},
    {"googlenet", 173, 6624904, 196, 32}, {"inception_v2", 278, 11295240, 231, 32},
    {"resnet50", 161, 25557032, 174, 32}, {"densenet121", 364, 7978856, 426, 32},
    {"par32", 32, 32 * 524288, 33, 1},    {"seq32", 32, 32 * 524288, 32, 1},
    {"smallmany", 160, 4835456, 160, 32}, {"transformer", 103, 23537152, 75, 32},
    {"bert_large", 391, 335141888, 291, 32},
};

START_TEST(profile_counts_match_published)
{
    ordo__model_t *m = load_profile(published[_i].name);
    ck_assert_int_eq(m->n_params, published[_i].tensors);
    ck_assert_int_eq(ordo__model_total_numel(m), published[_i].numel);
    ck_assert_int_eq(ordo__model_total_bytes(m), published[_i].numel * 4);
    ck_assert_int_eq(m->n_ops, published[_i].ops);
    ck_assert_int_eq(m->batch, published[_i].batch);
    ck_assert_str_eq(m->dtype, "float32");
    ordo__model_destroy(&m);
}
END_TEST

/* op_input asserts that op `op` of m reads exactly the listed earlier ops. */
static void expect_inputs(const ordo__model_t *m, const char *op, int n, const char *const *in)
{
    int o = ordo__model_op_index(m, op);
    ck_assert_msg(o >= 0, "no op %s", op);
    ck_assert_int_eq(m->ops[o].n_inputs, n);
    for (int i = 0; i < n; i++)
        ck_assert_str_eq(m->ops[m->ops[o].inputs[i]].name, in[i]);
}

START_TEST(profiles_are_real_dags)
{
    ordo__model_t *m = load_profile("resnet50");
    const char *add[2] = {"layer1.0.bn3", "layer1.0.downsample.1"};
    const char *add2[2] = {"layer1.1.bn3", "layer1.0.relu3"};
    expect_inputs(m, "layer1.0.add", 2, add);
    expect_inputs(m, "layer1.1.add", 2, add2);
    ck_assert_int_eq(m->ops[0].n_inputs, 0);
    ck_assert_int_eq(m->params[ordo__model_param_index(m, "fc.weight")].shape[1], 2048);
    ordo__model_destroy(&m);

    m = load_profile("googlenet");
    const char *cat[4] = {"inception3a.branch1.relu", "inception3a.branch2.1.relu",
                          "inception3a.branch3.1.relu", "inception3a.branch4.1.relu"};
    expect_inputs(m, "inception3a.concat", 4, cat);
    ordo__model_destroy(&m);

    m = load_profile("inception_v2");
    const char *cat3c[3] = {"inception_3c_3x3_relu", "inception_3c_double_3x3_2_relu",
                            "inception_3c_pool"};
    expect_inputs(m, "inception_3c_output", 3, cat3c);
    ordo__model_destroy(&m);

    m = load_profile("densenet121");
    int o = ordo__model_op_index(m, "features.denseblock4.concat");
    ck_assert_int_eq(m->ops[o].n_inputs, 17); /* the transition output and 16 layers */
    const char *l3[3] = {"features.pool0", "features.denseblock1.denselayer1.conv2",
                         "features.denseblock1.denselayer2.conv2"};
    expect_inputs(m, "features.denseblock1.denselayer3.concat", 3, l3);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(par32_and_seq32_structure)
{
    ordo__model_t *par = load_profile("par32"), *seq = load_profile("seq32");
    for (int i = 0; i < 32; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        ck_assert_str_eq(par->params[i].name, name);
        ck_assert_int_eq(par->params[i].ndim, 1);
        ck_assert_int_eq(par->params[i].shape[0], 524288);
        ck_assert_int_eq(par->params[i].bytes, 2 << 20);
        ck_assert_int_eq(par->params[i].first_op, i);
        ck_assert_int_eq(par->ops[i].n_inputs, 0);
        ck_assert_int_eq(par->ops[i].n_params, 1);
        ck_assert_int_eq(par->ops[i].params[0], i);
        ck_assert_double_eq(par->ops[i].fwd_us, 1000);
        ck_assert_double_eq(par->ops[i].bwd_us, 2000);

        ck_assert_str_eq(seq->params[i].name, name);
        ck_assert_int_eq(seq->params[i].bytes, 2 << 20);
        ck_assert_int_eq(seq->ops[i].n_params, 1);
        ck_assert_int_eq(seq->ops[i].params[0], i);
        ck_assert_int_eq(seq->ops[i].n_inputs, i > 0);
        if (i > 0) ck_assert_int_eq(seq->ops[i].inputs[0], i - 1);
        ck_assert_double_eq(seq->ops[i].bwd_us, 2000);
    }
    ordo__model_op_t *sum = &par->ops[32];
    ck_assert_str_eq(sum->name, "sum");
    ck_assert_int_eq(sum->n_params, 0);
    ck_assert_int_eq(sum->n_inputs, 32);
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(sum->inputs[i], i);
    ck_assert_double_eq(ordo__model_total_us(seq, 0), 32000);
    ordo__model_destroy(&par);
    ordo__model_destroy(&seq);
}
END_TEST

START_TEST(smallmany_has_small_tensors)
{
    ordo__model_t *m = load_profile("smallmany");
    for (int i = 0; i < m->n_params; i++) {
        ck_assert_int_ge(m->params[i].numel, 10000);
        ck_assert_int_le(m->params[i].numel, 50000);
        ck_assert_int_eq(m->ops[i].n_inputs, i > 0);
    }
    ck_assert_double_eq(ordo__model_total_us(m, 1), 160 * 150);
    ordo__model_destroy(&m);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"builder", builder_builds_a_small_graph},
        {"builder_grow", builder_many_entries_grow},
        {"builder_errors", builder_rejects_bad_calls},
        {"from_sizes", from_sizes_builds_a_chain},
        {"load_valid", loader_reads_a_valid_file},
        {"load_invalid_json", loader_rejects_invalid_json},
        {"load_unknown_format", loader_rejects_unknown_format},
        {"load_fields", loader_rejects_missing_and_mistyped_fields},
        {"load_names", loader_rejects_unknown_and_duplicate_names},
        {"load_inputs_earlier", loader_rejects_inputs_not_earlier},
        {"load_unused_params", loader_rejects_unused_parameters},
        {"load_times", loader_rejects_bad_times},
        {"load_shapes", loader_rejects_bad_shapes},
        {"load_files", loader_reads_files},
        {"load_mangled", loader_survives_mangled_input},
        {"profiles_load", every_profile_loads},
        {"profiles_dag", profiles_are_real_dags},
        {"profiles_par_seq", par32_and_seq32_structure},
        {"profiles_smallmany", smallmany_has_small_tensors},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    TCase *tc = tcase_create("profile_counts");
    tcase_add_loop_test(tc, profile_counts_match_published, 0,
                        (int)(sizeof published / sizeof published[0]));
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(model_suite)
