/* Tests of scheduler/replan_model and scheduler/replan: a profile's parameters are matched
 * to the cluster's tensors by name (any order) and rebuilt in tensor order; an unknown name,
 * a size that differs, a missing tensor or bad JSON is refused naming it. The coordinator
 * plans only once every worker is in, answers every worker with the refusal of a bad
 * profile, and releases the workers only after every server acknowledged the new plan. */
#include "scheduler/replan.h"
#include "scheduler/replan_model.h"
#include "scheduler/runplan.h"
#include "common/conf.h"
#include "common/keys.h"
#include "ordo_check.h"

#include <jansson.h>
#include <string.h>

static const char *names[] = {"a", "b", "c"};
static const int64_t numel[] = {65536, 256, 2560};

#define PROFILE(PA, PB)                                                                            \
    "{\"format\":\"ordo-model/1\",\"name\":\"rev\",\"batch\":8,\"params\":["                       \
    "{\"name\":\"c\",\"shape\":[2560]},{\"name\":\"" PA "\",\"shape\":[256,256]},"                 \
    "{\"name\":\"b\",\"shape\":[" PB "]}],\"ops\":["                                               \
    "{\"name\":\"op_c\",\"inputs\":[],\"params\":[\"c\"],\"fwd_us\":3,\"bwd_us\":6},"              \
    "{\"name\":\"op_b\",\"inputs\":[\"op_c\"],\"params\":[\"b\"],\"fwd_us\":2,\"bwd_us\":4},"      \
    "{\"name\":\"op_a\",\"inputs\":[\"op_b\"],\"params\":[\"" PA "\"],\"fwd_us\":1,"               \
    "\"bwd_us\":2}]}"

static int match(const char *text, ordo__model_t **m)
{
    return ordo__replan_model_match(text, strlen(text), names, numel, 3, "float32", m);
}

START_TEST(profile_is_rebuilt_in_tensor_order)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(match(PROFILE("a", "256"), &m));
    ck_assert_int_eq(m->n_params, 3);
    for (int i = 0; i < 3; i++) {
        ck_assert_str_eq(m->params[i].name, names[i]);
        ck_assert_int_eq(m->params[i].numel, numel[i]);
    }
    ck_assert_int_eq(m->n_ops, 3);
    ck_assert_str_eq(m->ops[0].name, "op_c");
    ck_assert_int_eq(m->ops[0].params[0], 2); /* c is tensor 2 */
    ck_assert_int_eq(m->ops[2].params[0], 0);
    ck_assert_int_eq(m->ops[1].inputs[0], 0);
    ck_assert_double_eq(m->ops[1].bwd_us, 4);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(bad_profiles_are_refused_naming_the_problem)
{
    ordo__model_t *m = NULL;
    ORDO_CK_ERR(match(PROFILE("z", "256"), &m), ORDO_ERR_FORMAT);
    ck_assert_str_eq(ordo__error_detail(), "worker 0's profile: $.params[1]: 'z' is not one of "
                                          "the cluster's 3 tensors");
    ORDO_CK_ERR(match(PROFILE("a", "255"), &m), ORDO_ERR_FORMAT);
    ck_assert_str_eq(ordo__error_detail(), "worker 0's profile: $.params[2]: 'b' has 255 "
                                          "elements, the cluster's tensor 1 has 256");
    ORDO_CK_ERR(match("{nope", &m), ORDO_ERR_FORMAT);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "worker 0's profile:1:"));
    const char *two[] = {"a", "b", "c", "d"};
    const int64_t four[] = {65536, 256, 2560, 7};
    const char *text = PROFILE("a", "256");
    ORDO_CK_ERR(ordo__replan_model_match(text, strlen(text), two, four, 4, "float32", &m),
                ORDO_ERR_FORMAT);
    ck_assert_str_eq(ordo__error_detail(),
                     "worker 0's profile: $.params: the cluster's tensor 3 'd' is missing");
    ck_assert_ptr_null(m);
}
END_TEST

/* ---- the coordinator ---- */

typedef struct {
    int role;
    char text[4096];
} sent_t;
static sent_t sent[8];
static int n_sent;

static void capture(void *ctx, int role, const char *text)
{
    (void)ctx;
    ck_assert_int_lt(n_sent, 8);
    sent[n_sent].role = role;
    snprintf(sent[n_sent].text, sizeof sent[0].text, "%s", text);
    n_sent++;
}

static ordo__replan_t *make(ordo__conf_t *conf, ordo__keys_t **keys)
{
    ordo__conf_defaults(conf);
    conf->servers = 2;
    conf->workers = 2;
    ORDO_CK_OK(ordo__conf_set(conf, "order.policy", "tao", "test"));
    ORDO_CK_OK(ordo__conf_validate(conf));
    ORDO_CK_OK(
        ordo__keys_partition(numel, 3, 4, conf->partition_bytes, ordo__conf_segment_bytes(conf), 2, keys));
    ordo__replan_t *r = NULL;
    n_sent = 0;
    ORDO_CK_OK(ordo__replan_new(conf, "/nonexistent-dir", capture, NULL, &r));
    return r;
}

static void request(ordo__replan_t *r, const ordo__keys_t *k, int rank, const char *profile)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_REPLAN);
    if (profile) {
        ck_assert_int_eq(ordo__msg_add_text(&m, "[\"a\",\"b\",\"c\"]"), 0);
        ck_assert_int_eq(ordo__msg_add_text(&m, profile), 0);
    }
    ORDO_CK_OK(ordo__replan_on_msg(r, k, ORDO_ROLE_WORKER, rank, &m));
    ordo__msg_close(&m);
}

static int ack(ordo__replan_t *r, int rank, const char *body)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_REPLAN);
    ck_assert_int_eq(ordo__msg_add_text(&m, body), 0);
    int rc = ordo__replan_on_msg(r, NULL, ORDO_ROLE_SERVER, rank, &m);
    ordo__msg_close(&m);
    return rc;
}

START_TEST(workers_are_released_after_every_server_switched)
{
    ordo__conf_t conf;
    ordo__keys_t *k = NULL;
    ordo__replan_t *r = make(&conf, &k);
    request(r, k, 1, NULL);
    ck_assert_int_eq(n_sent, 0); /* worker 0 is not in yet */
    request(r, k, 0, PROFILE("a", "256"));
    ck_assert_int_eq(n_sent, 1);
    ck_assert_int_eq(sent[0].role, ORDO_ROLE_SERVER);
    json_t *plan = json_loads(sent[0].text, 0, NULL);
    json_t *pr = json_object_get(plan, "priorities");
    ck_assert_int_eq(json_array_size(pr), 3);
    /* c (tensor 2) is the profile's first op: it goes first */
    ck_assert_int_eq(json_integer_value(json_array_get(pr, 2)), 0);
    json_decref(plan);
    ORDO_CK_OK(ack(r, 0, "{}"));
    ck_assert_int_eq(n_sent, 1); /* server 1 has not switched yet */
    ORDO_CK_OK(ack(r, 1, "{}"));
    ck_assert_int_eq(n_sent, 2);
    ck_assert_int_eq(sent[1].role, ORDO_ROLE_WORKER);
    ck_assert_str_eq(sent[1].text, sent[0].text);
    /* a server that cannot switch is an error of the run */
    request(r, k, 0, PROFILE("a", "256"));
    request(r, k, 1, NULL);
    ORDO_CK_ERR(ack(r, 1, "{\"error\":\"out of memory\"}"), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "replan: server 1 could not switch: out of memory");
    ordo__replan_destroy(&r);
    ordo__keys_destroy(&k);
}
END_TEST

START_TEST(a_bad_profile_is_answered_to_every_worker)
{
    ordo__conf_t conf;
    ordo__keys_t *k = NULL;
    ordo__replan_t *r = make(&conf, &k);
    request(r, k, 0, PROFILE("a", "255"));
    request(r, k, 1, NULL);
    ck_assert_int_eq(n_sent, 1);
    ck_assert_int_eq(sent[0].role, ORDO_ROLE_WORKER);
    ck_assert_ptr_nonnull(strstr(sent[0].text, "'b' has 255 elements"));
    ck_assert_ptr_nonnull(strstr(sent[0].text, "\"code\":-11"));
    /* the next round starts afresh: worker 0 passing nothing is refused too */
    request(r, k, 1, NULL);
    request(r, k, 0, NULL);
    ck_assert_int_eq(n_sent, 2);
    ck_assert_ptr_nonnull(strstr(sent[1].text, "worker 0 passed no profile"));
    ordo__replan_destroy(&r);
    ordo__keys_destroy(&k);
}
END_TEST

/* plan_step: the step model's "step" member of the plan of profile PROFILE("a", "256") for a
 * run of `workers` workers in groups of local_size (shm), 1 server, tao at 1 Gbit/s */
static json_t *plan_step(int workers, int local_size)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(match(PROFILE("a", "256"), &m));
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    char w[16], l[16];
    snprintf(w, sizeof w, "%d", workers);
    snprintf(l, sizeof l, "%d", local_size);
    ORDO_CK_OK(ordo__conf_set(&conf, "cluster.workers", w, "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "cluster.servers", "1", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "cluster.local_size", l, "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "intra.backend", local_size > 1 ? "shm" : "none", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "model.trainer", "declared", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "order.policy", "tao", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "order.pull", "start", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "order.plan_bandwidth", "1gbit", "test"));
    ordo__conf_resolve(&conf);
    ordo__keys_t *keys = NULL;
    ORDO_CK_OK(ordo__keys_partition(numel, 3, 4, conf.partition_bytes, 65536, 1, &keys));
    json_t *plan = NULL;
    ORDO_CK_OK(ordo__runplan_make(&conf, m, keys, &plan));
    json_t *step = json_incref(json_object_get(plan, "step"));
    ck_assert_ptr_nonnull(step);
    json_decref(plan);
    ordo__keys_destroy(&keys);
    ordo__model_destroy(&m);
    return step;
}

/* in host groups the step model sees one pusher per group: 4 workers in groups of 2 are
 * modelled as 2 flat workers (the server answers 2 owners), not as 4 */
START_TEST(step_model_counts_one_pusher_per_group)
{
    json_t *groups = plan_step(4, 2), *two = plan_step(2, 1), *four = plan_step(4, 1);
    double g = json_real_value(json_object_get(groups, "answer_ms"));
    double t = json_real_value(json_object_get(two, "answer_ms"));
    double f = json_real_value(json_object_get(four, "answer_ms"));
    ck_assert_double_gt(t, 0);
    ck_assert_double_eq_tol(g, t, 1e-9);
    ck_assert_double_gt(f, 1.5 * t);
    json_decref(groups);
    json_decref(two);
    json_decref(four);
}
END_TEST

static Suite *replan_suite(void)
{
    Suite *s = suite_create("replan");
    TCase *t = tcase_create("model");
    tcase_add_test(t, profile_is_rebuilt_in_tensor_order);
    tcase_add_test(t, bad_profiles_are_refused_naming_the_problem);
    suite_add_tcase(s, t);
    t = tcase_create("collective");
    tcase_add_test(t, workers_are_released_after_every_server_switched);
    tcase_add_test(t, a_bad_profile_is_answered_to_every_worker);
    suite_add_tcase(s, t);
    t = tcase_create("step");
    tcase_add_test(t, step_model_counts_one_pusher_per_group);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(replan_suite)
