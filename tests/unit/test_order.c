/* Tests of scheduler/order and scheduler/oracle: dependency extraction, the properties M, P
 * and M+ on the paper's examples, TAO and TIO on fig4, par32 and seq32, per-channel M,
 * channel assignment, the plan entry point, ordo-order/1 and ordo-oracle/1 files. */
#include "planner/order.h"
#include "ordering_fixtures.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect_detail(const char *want)
{
    ck_assert_msg(strstr(ordo__error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo__error_detail(), want);
}

/* graph builds the order graph of m at 1gbit, 10 us latency (a 1250-float recv = 50 us). */
static ordo__order_graph_t *graph(const ordo__model_t *m, const int *channel, int n_channels)
{
    ordo__oracle_times_t *t = NULL;
    ordo__order_graph_t *g = NULL;
    ORDO_CK_OK(ordo__oracle_times_new(m, 1e9, 10, NULL, &t));
    ORDO_CK_OK(ordo__order_graph_new(m, t, channel, n_channels, &g));
    ordo__oracle_times_destroy(&t);
    return g;
}

/* ---------------------------------------------------------------- dependencies, properties */

START_TEST(fig2a_dependencies_and_properties)
{
    ordo__model_t *m = fx_fig2a(100, 70);
    ordo__order_graph_t *g = graph(m, NULL, 1);
    /* op1.dep = {r1}, op2.dep = {r1, r2} (transitively through op1) */
    ck_assert_int_eq(ordo__order_depends(g, 0, 0), 1);
    ck_assert_int_eq(ordo__order_depends(g, 0, 1), 0);
    ck_assert_int_eq(ordo__order_depends(g, 1, 0), 1);
    ck_assert_int_eq(ordo__order_depends(g, 1, 1), 1);
    double M[2], P[2], Mp[2];
    ORDO_CK_OK(ordo__order_properties(g, NULL, M, P, Mp));
    ck_assert_double_eq(M[0], 50);   /* Time(r1) */
    ck_assert_double_eq(M[1], 100);  /* Time(r1) + Time(r2) */
    ck_assert_double_eq(P[0], 100);  /* P(recv1) = Time(op1) */
    ck_assert_double_eq(P[1], 0);    /* nothing runs with r2 alone */
    ck_assert_double_eq(Mp[0], 100); /* M+ = T(r1) + T(r2) for both */
    ck_assert_double_eq(Mp[1], 100);
    /* once r1 has arrived, op2 needs r2 alone: P(r2) = Time(op2), M+ becomes infinite */
    unsigned char out[2] = {0, 1};
    ORDO_CK_OK(ordo__order_properties(g, out, M, P, Mp));
    ck_assert_double_eq(M[0], 0);
    ck_assert_double_eq(M[1], 50);
    ck_assert_double_eq(P[1], 70);
    ck_assert(isinf(Mp[1]));
    ck_assert(isinf(Mp[0])); /* not outstanding */
    int prio[2];
    ORDO_CK_OK(ordo__order_tao(g, prio));
    ck_assert_int_eq(prio[0], 0);
    ck_assert_int_eq(prio[1], 1);
    ordo__order_graph_destroy(&g);
    ck_assert_ptr_null(g);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(fig4_joint_recvs_go_first)
{
    ordo__model_t *m = fx_fig4(); /* listed D, C, B, A */
    ordo__order_graph_t *g = graph(m, NULL, 1);
    double M[3], P[4], Mp[4];
    ORDO_CK_OK(ordo__order_properties(g, NULL, M, P, Mp));
    for (int r = 0; r < 4; r++)
        ck_assert_double_eq(P[r], 0); /* no op is unlocked by one recv alone */
    ck_assert_double_eq(Mp[3], 100);  /* A: op1 needs A and B */
    ck_assert_double_eq(Mp[2], 100);  /* B */
    ck_assert_double_eq(Mp[1], 150);  /* C: op2 needs A, B, C */
    ck_assert_double_eq(Mp[0], 200);  /* D: op3 needs all */
    ck_assert_double_eq(M[0], 100);
    ck_assert_double_eq(M[2], 200);
    int prio[4];
    ORDO_CK_OK(ordo__order_tao(g, prio));
    /* all P are 0, so M+ decides: B (listed before A) then A, whose P is then op1's time */
    ck_assert_int_eq(prio[2], 0);
    ck_assert_int_eq(prio[3], 1);
    ck_assert_int_eq(prio[1], 2);
    ck_assert_int_eq(prio[0], 3);
    ORDO_CK_OK(ordo__order_tio(g, prio));
    ck_assert_int_eq(prio[2], 0); /* M+ = 2 */
    ck_assert_int_eq(prio[3], 0);
    ck_assert_int_eq(prio[1], 1); /* M+ = 3 */
    ck_assert_int_eq(prio[0], 2); /* M+ = 4 */
    ordo__order_graph_destroy(&g);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(m_is_the_max_over_channels)
{
    ordo__model_t *m = ordo__model_new("chan", 1, NULL);
    fx_param(m, "a", FX_NUMEL_50US);     /* 50 us on channel 0 */
    fx_param(m, "b", FX_NUMEL_50US);     /* 50 us on channel 1 */
    fx_param(m, "c", FX_NUMEL_50US / 5); /* 10 + 8 = 18 us on channel 0 */
    fx_op(m, "x", NULL, FX_L("a", "b", "c"), 5, 0);
    ORDO_CK_OK(ordo__model_check(m));
    int ch[3] = {0, 1, 0};
    ordo__order_graph_t *g = graph(m, ch, 2);
    double M[1], Mp[3];
    ORDO_CK_OK(ordo__order_properties(g, NULL, M, NULL, Mp));
    ck_assert_double_eq(M[0], 68); /* max(50 + 18, 50), not 118 */
    ck_assert_double_eq(Mp[1], 68);
    ordo__order_graph_destroy(&g);
    ordo__model_destroy(&m);
}
END_TEST

/* ---------------------------------------------------------------- par32 and seq32 */

START_TEST(tio_on_par32_gives_one_priority)
{
    ordo__model_t *m = fx_par32();
    int prio[32];
    ORDO_CK_OK(ordo__order_plan(m, NULL, 1, 1e9, 50, ORDO_POLICY_TIO, prio));
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(prio[i], 0);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(seq32_tao_is_the_chain_and_tio_never_decreases)
{
    ordo__model_t *m = fx_seq32();
    int prio[32];
    ORDO_CK_OK(ordo__order_plan(m, NULL, 1, 1e9, 50, ORDO_POLICY_TAO, prio));
    for (int i = 0; i < 32; i++)
        ck_assert_int_eq(prio[i], i);
    ordo__order_graph_t *g = NULL;
    ORDO_CK_OK(ordo__order_graph_new(m, NULL, NULL, 1, &g)); /* the unit oracle */
    double Mp[32];
    ORDO_CK_OK(ordo__order_properties(g, NULL, NULL, NULL, Mp));
    ck_assert_double_eq(Mp[0], 2);
    ck_assert_double_eq(Mp[1], 2);
    ck_assert_double_eq(Mp[31], 32);
    ORDO_CK_OK(ordo__order_tio(g, prio));
    ck_assert_int_eq(prio[0], 0);
    ck_assert_int_eq(prio[1], 0); /* the first two tie */
    for (int i = 2; i < 32; i++) {
        ck_assert_int_ge(prio[i], prio[i - 1]);
        ck_assert_int_eq(prio[i], i - 1);
    }
    /* a timing-independent graph cannot run TAO */
    ORDO_CK_ERR(ordo__order_tao(g, prio), ORDO_ERR_INVAL);
    ordo__order_graph_destroy(&g);
    ordo__model_destroy(&m);
}
END_TEST

/* ---------------------------------------------------------------- channels and plan */

START_TEST(channels_largest_first_to_least_loaded)
{
    ordo__model_t *m = ordo__model_new("ch", 1, NULL);
    int64_t sizes[5] = {10, 40, 30, 20, 40};
    for (int i = 0; i < 5; i++) {
        char n[8];
        snprintf(n, sizeof n, "p%d", i);
        fx_param(m, n, sizes[i]);
    }
    fx_op(m, "x", NULL, FX_L("p0", "p1", "p2", "p3"), 1, 1);
    fx_op(m, "y", FX_L("x"), FX_L("p4"), 1, 1);
    ORDO_CK_OK(ordo__model_check(m));
    int ch[5];
    /* p1 -> 0, p4 -> 1 (tie on size: listed order), p2 -> 0 (tie on load: lowest index),
     * p3 -> 1, p0 -> 1 (loads 70 / 60 before it) */
    ORDO_CK_OK(ordo__order_assign_channels(m, 2, ch));
    int want[5] = {1, 0, 0, 1, 1};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(ch[i], want[i]);
    ORDO_CK_OK(ordo__order_assign_channels(m, 1, ch));
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(ch[i], 0);
    ORDO_CK_ERR(ordo__order_assign_channels(m, 0, ch), ORDO_ERR_INVAL);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(plan_policies)
{
    ordo__model_t *m = fx_fig4();
    int prio[4];
    ORDO_CK_OK(ordo__order_plan(m, NULL, 1, 1e9, 10, ORDO_POLICY_FIFO, prio));
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(prio[i], 0);
    ORDO_CK_ERR(ordo__order_plan(m, NULL, 1, 1e9, 10, ORDO_POLICY_FILE, prio), ORDO_ERR_INVAL);
    /* layer: ByteScheduler's rule, each parameter's listed place */
    ORDO_CK_OK(ordo__order_plan(m, NULL, 1, 1e9, 10, ORDO_POLICY_LAYER, prio));
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(prio[i], i);
    ck_assert_str_eq(ordo__order_policy_name(ORDO_POLICY_LAYER), "layer");
    ordo__order_opts_t o;
    ordo__order_opts_default(&o);
    ck_assert_int_eq(o.search_budget_ms, 2000);
    o.search_budget_ms = 0;
    o.search_evals = 200;
    ORDO_CK_OK(ordo__order_plan_ex(m, NULL, 1, 1e9, 10, ORDO_POLICY_SEARCH, &o, prio));
    /* a total order with A and B first */
    ck_assert_int_eq(prio[2] + prio[3], 1);
    ck_assert_int_eq(prio[1], 2);
    ck_assert_int_eq(prio[0], 3);
    int ch[4] = {0, 1, 2, 3};
    ck_assert_int_eq(ordo__order_plan(m, ch, 2, 1e9, 10, ORDO_POLICY_TAO, prio), ORDO_ERR_INVAL);
    expect_detail("channel 2 not in [0, 2)");
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(tao_scales_to_large_graphs)
{
    /* 400 parameters, 1200 ops: every op reads the previous op, a skip connection and a
     * parameter every third op; checks the result is a permutation (no timing) */
    ordo__model_t *m = ordo__model_new("big", 1, NULL);
    int np = 0;
    for (int i = 0; i < 1200; i++) {
        char on[16], a[16], b[16], pn[16];
        snprintf(on, sizeof on, "o%d", i);
        snprintf(a, sizeof a, "o%d", i - 1);
        snprintf(b, sizeof b, "o%d", i - 7);
        snprintf(pn, sizeof pn, "p%d", np);
        const char *in[2] = {a, b}, *pa[1] = {pn};
        int has_p = i % 3 == 0;
        if (has_p) {
            fx_param(m, pn, 1000 + (i * 7919) % 50000);
            np++;
        }
        ck_assert_int_ge(
            ordo__model_add_op(m, on, i == 0 ? 0 : (i >= 7 ? 2 : 1), in, has_p, pa, 10 + i % 97, 0),
            0);
    }
    ORDO_CK_OK(ordo__model_check(m));
    int *prio = malloc((size_t)np * sizeof *prio), *seen = calloc((size_t)np, sizeof *seen);
    int ch[400];
    ORDO_CK_OK(ordo__order_assign_channels(m, 3, ch));
    ORDO_CK_OK(ordo__order_plan(m, ch, 3, 1e9, 50, ORDO_POLICY_TAO, prio));
    for (int p = 0; p < np; p++) {
        ck_assert(prio[p] >= 0 && prio[p] < np);
        seen[prio[p]]++;
    }
    for (int p = 0; p < np; p++)
        ck_assert_int_eq(seen[p], 1);
    ORDO_CK_OK(ordo__order_plan(m, ch, 3, 1e9, 50, ORDO_POLICY_TIO, prio));
    free(prio);
    free(seen);
    ordo__model_destroy(&m);
}
END_TEST

/* ---------------------------------------------------------------- ordo-order/1 files */

static void expect_order_error(const ordo__model_t *m, const char *json, const char *want)
{
    int prio[4];
    ORDO_CK_ERR(ordo__order_read_string(json, "o.json", m, prio), ORDO_ERR_FORMAT);
    expect_detail(want);
}

START_TEST(order_file_roundtrip_and_rejections)
{
    ordo__model_t *m = fx_fig4();
    int prio[4] = {3, 2, 0, 0}, back[4];
    char path[] = "/tmp/ordo-order-test-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ORDO_CK_OK(ordo__order_write(f, m, "tio", prio));
    fclose(f);
    ORDO_CK_OK(ordo__order_read_file(path, m, back));
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(back[i], prio[i]);
    unlink(path);
    ORDO_CK_ERR(ordo__order_read_file(path, m, back), ORDO_ERR_NOTFOUND);
    expect_detail(path);

#define HEAD "{\"format\": \"ordo-order/1\", \"model\": \"fig4\", \"policy\": \"tao\", "
    const char *good_tail = "\"priorities\": [{\"param\": \"A\", \"priority\": 0}, "
                            "{\"param\": \"B\", \"priority\": 0}, {\"param\": \"C\", "
                            "\"priority\": 1}, {\"param\": \"D\", \"priority\": 7}]}";
    char buf[512];
    snprintf(buf, sizeof buf, HEAD "%s", good_tail);
    ORDO_CK_OK(ordo__order_read_string(buf, "o.json", m, back));
    ck_assert_int_eq(back[0], 7); /* D */
    ck_assert_int_eq(back[3], 0); /* A */

    expect_order_error(m, "{\"format\": \"ordo-order/2\"}", "o.json: $.format: must be");
    expect_order_error(m, "{\"format\": \"ordo-order/1\", \"model\": \"toy\"}",
                       "o.json: $.model: 'toy' does not match the model 'fig4'");
    expect_order_error(m, HEAD "\"priorities\": [{\"param\": \"A\", \"priority\": 0}]}",
                       "o.json: $.priorities: parameter 'D' is missing");
    expect_order_error(m,
                       HEAD "\"priorities\": [{\"param\": \"A\", \"priority\": 0}, "
                            "{\"param\": \"A\", \"priority\": 1}]}",
                       "o.json: $.priorities[1].param: 'A' is listed twice");
    expect_order_error(m, HEAD "\"priorities\": [{\"param\": \"Z\", \"priority\": 0}]}",
                       "o.json: $.priorities[0].param: 'Z' is not a parameter of 'fig4'");
    expect_order_error(m, HEAD "\"priorities\": [{\"param\": \"A\", \"priority\": -1}]}",
                       "o.json: $.priorities[0].priority: must be an integer");
    expect_order_error(m, HEAD "\"priorities\": [{\"param\": \"A\", \"priority\": 1.5}]}",
                       "o.json: $.priorities[0].priority: must be an integer");
    expect_order_error(m, HEAD "\"priorities\": [{\"param\": \"A\", \"prio\": 1}]}",
                       "o.json: $.priorities[0].prio: unknown key");
    expect_order_error(m, HEAD "\"extra\": 1, \"priorities\": []}", "o.json: $.extra: unknown key");
    expect_order_error(m, HEAD "\"priorities\": 3}", "o.json: $.priorities: missing or not");
    expect_order_error(m, "{\"format\": ", "o.json:1:");
#undef HEAD
    ordo__model_destroy(&m);
}
END_TEST

/* ---------------------------------------------------------------- ordo-oracle/1 */

static void expect_oracle_error(const ordo__model_t *m, const char *json, const char *want)
{
    ordo__oracle_t *o = NULL;
    ORDO_CK_ERR(ordo__oracle_load_string(json, "t.json", m, &o), ORDO_ERR_FORMAT);
    ck_assert_ptr_null(o);
    expect_detail(want);
}

START_TEST(oracle_load_apply_and_reject)
{
    ordo__model_t *m = fx_fig2a(100, 70);
    ordo__oracle_t *o = NULL;
    const char *json = "{\"format\": \"ordo-oracle/1\", \"model\": \"fig2a\", \"iterations\": 5,"
                       " \"ops\": [{\"name\": \"op2\", \"fwd_us\": 12.5}],"
                       " \"params\": [{\"name\": \"r2\", \"recv_us\": 7}]}";
    ORDO_CK_OK(ordo__oracle_load_string(json, "t.json", m, &o));
    ordo__oracle_times_t *t = NULL;
    ORDO_CK_OK(ordo__oracle_times_new(m, 1e9, 10, o, &t));
    ck_assert_double_eq(t->fwd_us[0], 100);  /* not measured: the profile's */
    ck_assert_double_eq(t->fwd_us[1], 12.5); /* measured */
    ck_assert_double_eq(t->bwd_us[1], 0);
    ck_assert_double_eq(t->recv_us[0], 50); /* the link: 10 + 5000 * 8 / 1e9 s */
    ck_assert_double_eq(t->recv_us[1], 7);
    ck_assert_double_eq(t->send_us[1], 50);
    ordo__oracle_times_destroy(&t);
    ck_assert_ptr_null(t);
    ordo__oracle_destroy(&o);
    ck_assert_ptr_null(o);
    ck_assert_double_eq(ordo__oracle_transfer_us(125000, 1e9, 0), 1000);
    ck_assert_double_eq(ordo__oracle_transfer_us(125000, 0, 3), 3); /* unlimited link */

#define HEAD "{\"format\": \"ordo-oracle/1\", \"model\": \"fig2a\", "
    expect_oracle_error(m, "{\"format\": \"x\"}", "t.json: $.format: must be \"ordo-oracle/1\"");
    expect_oracle_error(m, "{\"format\": \"ordo-oracle/1\", \"model\": \"m\", \"ops\": []}",
                        "t.json: $.model: 'm' does not match the model 'fig2a'");
    expect_oracle_error(m, HEAD "\"params\": []}", "t.json: $.ops: missing");
    expect_oracle_error(m, HEAD "\"ops\": [{\"name\": \"opX\", \"fwd_us\": 1}]}",
                        "t.json: $.ops[0].name: 'opX' is not in the model");
    expect_oracle_error(m, HEAD "\"ops\": [{\"name\": \"op1\", \"fwd_us\": -1}]}",
                        "t.json: $.ops[0].fwd_us: must be a number >= 0");
    expect_oracle_error(m, HEAD "\"ops\": [{\"name\": \"op1\", \"fwd_us\": \"1\"}]}",
                        "t.json: $.ops[0].fwd_us: must be a number >= 0");
    expect_oracle_error(m, HEAD "\"ops\": [{\"name\": \"op1\"}]}",
                        "t.json: $.ops[0]: has neither fwd_us nor bwd_us");
    expect_oracle_error(m,
                        HEAD "\"ops\": [{\"name\": \"op1\", \"fwd_us\": 1}, "
                             "{\"name\": \"op1\", \"fwd_us\": 2}]}",
                        "t.json: $.ops[1].name: 'op1' is listed twice");
    expect_oracle_error(m, HEAD "\"ops\": [], \"params\": [{\"name\": \"r1\", \"x\": 1}]}",
                        "t.json: $.params[0].x: unknown key");
    expect_oracle_error(m, HEAD "\"ops\": [], \"iterations\": -2}",
                        "t.json: $.iterations: must be an integer >= 0");
#undef HEAD
    ORDO_CK_ERR(ordo__oracle_load_file("/nonexistent/t.json", m, &o), ORDO_ERR_NOTFOUND);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(oracle_keeps_the_minimum_and_roundtrips)
{
    ordo__model_t *m = fx_fig2a(100, 70);
    ordo__oracle_t *o = NULL, *back = NULL;
    ORDO_CK_OK(ordo__oracle_new(m, &o));
    ordo__oracle_observe_op(o, 0, 90, 200);
    ordo__oracle_observe_op(o, 0, 80, 210); /* fwd 80, bwd 200 */
    ordo__oracle_observe_op(o, 0, 85, -1);  /* bwd not measured */
    ordo__oracle_observe_transfer(o, 1, 40, -1);
    ordo__oracle_observe_transfer(o, 1, 45, 60);
    char path[] = "/tmp/ordo-oracle-test-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ORDO_CK_OK(ordo__oracle_write(o, f));
    fclose(f);
    ORDO_CK_OK(ordo__oracle_load_file(path, m, &back));
    unlink(path);
    ordo__oracle_times_t *t = NULL;
    ORDO_CK_OK(ordo__oracle_times_new(m, 1e9, 10, back, &t));
    ck_assert_double_eq(t->fwd_us[0], 80);
    ck_assert_double_eq(t->bwd_us[0], 200);
    ck_assert_double_eq(t->fwd_us[1], 70); /* op2 never observed */
    ck_assert_double_eq(t->recv_us[1], 40);
    ck_assert_double_eq(t->send_us[1], 60);
    ck_assert_double_eq(t->recv_us[0], 50);
    ordo__oracle_times_destroy(&t);
    /* an oracle of another model is refused when applied */
    ordo__model_t *other = fx_fig4();
    ORDO_CK_ERR(ordo__oracle_times_new(other, 1e9, 10, back, &t), ORDO_ERR_INVAL);
    expect_detail("does not fit model 'fig4'");
    ordo__model_destroy(&other);
    ordo__oracle_destroy(&o);
    ordo__oracle_destroy(&back);
    ordo__model_destroy(&m);
}
END_TEST

/* write_file puts text into a new temporary file whose name goes to path */
static void write_file(char *path, const char *text)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
}

/* expect_trace_error: reading text as a trace fails with ORDO_ERR_FORMAT and the detail
 * (after the file's name) want */
static void expect_trace_error(const ordo__model_t *m, const char *text, const char *want)
{
    char path[] = "/tmp/ordo-trace-test-XXXXXX";
    write_file(path, text);
    ordo__oracle_t *o = NULL;
    ORDO_CK_OK(ordo__oracle_new(m, &o));
    int n = -1;
    ORDO_CK_ERR(ordo__oracle_observe_trace(o, path, &n), ORDO_ERR_FORMAT);
    ck_assert_int_eq(n, 0);
    const char *d = ordo__error_detail();
    ck_assert_msg(strncmp(d, path, strlen(path)) == 0 && strstr(d, want), "detail '%s' lacks '%s'",
                  d, want);
    unlink(path);
    ordo__oracle_destroy(&o);
}

START_TEST(oracle_from_traces_and_into_a_model)
{
    ordo__model_t *m = fx_fig2a(100, 70);
    /* two iterations of a worker's trace: forward and backward events of both ops, with
     * pulls, pushes, waits and metadata that must be skipped */
    const char *trace =
        "{\"traceEvents\": [{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,"
        "\"args\":{\"name\":\"worker 0\"}},"
        "{\"ph\":\"X\",\"name\":\"op1\",\"cat\":\"forward\",\"pid\":1,\"tid\":0,\"ts\":0,\"dur\":"
        "90},"
        "{\"ph\":\"X\",\"name\":\"op2\",\"cat\":\"forward\",\"pid\":1,\"tid\":0,\"ts\":90,\"dur\":"
        "60},"
        "{\"ph\":\"X\",\"name\":\"op2\",\"cat\":\"backward\",\"pid\":1,\"tid\":0,\"ts\":150,"
        "\"dur\":130.5},"
        "{\"ph\":\"X\",\"name\":\"op1\",\"cat\":\"backward\",\"pid\":1,\"tid\":0,\"ts\":281,"
        "\"dur\":180},"
        "{\"ph\":\"X\",\"name\":\"r1\",\"cat\":\"pull\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":1},"
        "{\"ph\":\"X\",\"name\":\"r2\",\"cat\":\"push\",\"pid\":1,\"tid\":3,\"ts\":0,\"dur\":2},"
        "{\"ph\":\"X\",\"name\":\"op1\",\"cat\":\"wait\",\"pid\":1,\"tid\":2,\"ts\":0,\"dur\":3},"
        "{\"ph\":\"X\",\"name\":\"op1\",\"cat\":\"forward\",\"pid\":1,\"tid\":0,\"ts\":500,\"dur\":"
        "85},"
        "{\"ph\":\"X\",\"name\":\"op2\",\"cat\":\"forward\",\"pid\":1,\"tid\":0,\"ts\":585,\"dur\":"
        "65},"
        "{\"ph\":\"X\",\"name\":\"op2\",\"cat\":\"backward\",\"pid\":1,\"tid\":0,\"ts\":650,"
        "\"dur\":140},"
        "{\"ph\":\"X\",\"name\":\"op1\",\"cat\":\"backward\",\"pid\":1,\"tid\":0,\"ts\":790,"
        "\"dur\":170}]}";
    char path[] = "/tmp/ordo-trace-test-XXXXXX";
    write_file(path, trace);
    ordo__oracle_t *o = NULL;
    ORDO_CK_OK(ordo__oracle_new(m, &o));
    int n = 0;
    ORDO_CK_OK(ordo__oracle_observe_trace(o, path, &n));
    unlink(path);
    ck_assert_int_eq(n, 8); /* the compute events only */
    ordo__model_t *timed = NULL;
    ORDO_CK_OK(ordo__oracle_timed_model(m, o, &timed));
    ck_assert_str_eq(timed->name, "fig2a");
    ck_assert_int_eq(timed->n_ops, 2);
    ck_assert_int_eq(timed->n_params, 2);
    ck_assert_double_eq(timed->ops[0].fwd_us, 85); /* the least of 90 and 85 */
    ck_assert_double_eq(timed->ops[0].bwd_us, 170);
    ck_assert_double_eq(timed->ops[1].fwd_us, 60);
    ck_assert_double_eq(timed->ops[1].bwd_us, 130.5);
    /* the graph is m's: inputs, parameters, bytes */
    ck_assert_int_eq(timed->ops[1].n_inputs, 1);
    ck_assert_int_eq(timed->ops[1].inputs[0], 0);
    ck_assert_int_eq(timed->ops[1].params[0], 1);
    ck_assert_int_eq(timed->params[1].bytes, m->params[1].bytes);
    ck_assert_int_eq(timed->params[1].first_op, 1);
    ordo__model_destroy(&timed);
    /* an op never traced keeps the model's times */
    ordo__oracle_t *part = NULL;
    ORDO_CK_OK(ordo__oracle_new(m, &part));
    ordo__oracle_observe_op(part, 1, 5, -1);
    ORDO_CK_OK(ordo__oracle_timed_model(m, part, &timed));
    ck_assert_double_eq(timed->ops[0].fwd_us, 100);
    ck_assert_double_eq(timed->ops[1].fwd_us, 5);
    ck_assert_double_eq(timed->ops[1].bwd_us, 0);
    ordo__model_destroy(&timed);
    ordo__oracle_destroy(&part);
    /* an oracle of another model is refused */
    ordo__model_t *other = fx_fig4();
    ORDO_CK_ERR(ordo__oracle_timed_model(other, o, &timed), ORDO_ERR_INVAL);
    ck_assert_ptr_null(timed);
    expect_detail("does not fit model 'fig4'");
    ordo__model_destroy(&other);
    ordo__oracle_destroy(&o);

    /* rejections name the file, the JSON path and the reason */
    expect_trace_error(m, "[1, 2]", "$.traceEvents: must be an array");
    expect_trace_error(m, "{\"traceEvents\": [3]}", "$.traceEvents[0]: must be an object");
    expect_trace_error(m, "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"forward\",\"dur\":1}]}",
                       "$.traceEvents[0].name: must be a string");
    expect_trace_error(m,
                       "{\"traceEvents\": [{\"ph\":\"M\",\"name\":\"x\"},{\"ph\":\"X\","
                       "\"cat\":\"backward\",\"name\":\"op1\",\"dur\":-2}]}",
                       "$.traceEvents[1].dur: must be a number >= 0");
    expect_trace_error(m,
                       "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"forward\",\"name\":\"conv1\","
                       "\"dur\":1}]}",
                       "$.traceEvents[0].name: 'conv1' is not an op of model 'fig2a'");
    expect_trace_error(m,
                       "{\"traceEvents\": [{\"ph\":\"X\",\"cat\":\"pull\",\"name\":\"r1\","
                       "\"dur\":1}]}",
                       "no forward or backward events");
    expect_trace_error(m, "{\"traceEvents\": [", "");
    ordo__oracle_new(m, &o);
    ORDO_CK_ERR(ordo__oracle_observe_trace(o, "/nonexistent/trace.json", NULL), ORDO_ERR_NOTFOUND);
    ordo__oracle_destroy(&o);
    ordo__model_destroy(&m);
}
END_TEST

static Suite *order_suite(void)
{
    Suite *s = suite_create("order");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"fig2a", fig2a_dependencies_and_properties},
        {"fig4", fig4_joint_recvs_go_first},
        {"channels_m", m_is_the_max_over_channels},
        {"par32", tio_on_par32_gives_one_priority},
        {"seq32", seq32_tao_is_the_chain_and_tio_never_decreases},
        {"assign_channels", channels_largest_first_to_least_loaded},
        {"plan", plan_policies},
        {"large", tao_scales_to_large_graphs},
        {"order_file", order_file_roundtrip_and_rejections},
        {"oracle_file", oracle_load_apply_and_reject},
        {"oracle_min", oracle_keeps_the_minimum_and_roundtrips},
        {"oracle_trace", oracle_from_traces_and_into_a_model},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

ORDO_CK_MAIN(order_suite)
