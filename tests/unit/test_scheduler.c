/* Tests of scheduler/scheduler: the scheduler object driven with messages, without
 * processes. The test's own transport plays the nodes (one DEALER each, so each has its own
 * routing id) and every message the scheduler's transport receives is fed to
 * ordo__scheduler_handle. Checks the rendezvous (rank assignment, the WELCOME's cluster and
 * key maps), refused registrations, a barrier, the end of the run when every worker is done,
 * an abort relayed to every node, a model declared by the workers ([model] trainer =
 * declared: equal declarations make the key map and the plan's update rules, different ones
 * abort naming the worker and tensor), broadcasts relayed from the root, and a restarted
 * worker taking a dead one's rank (fault.worker = restart). */
#include "common/le.h"
#include "common/keys.h"
#include "common/transport.h"
#include "scheduler/declared.h"
#include "scheduler/runplan_intra.h"
#include "scheduler/scheduler.h"
#include "ordo_check.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SRV_EP "tcp://127.0.0.1:45999"

enum { SRV, WA, WB, STRANGER, N_NODES }; /* the test's nodes: a server, two workers, a stray */

typedef struct {
    ordo__scheduler_t *sch;
    ordo__transport_t *tp; /* the nodes' */
    int sock[N_NODES];
    char dir[64];
    /* messages received while waiting for another node's: ZeroMQ keeps the order of one
     * connection, not across the nodes' connections */
    ordo__msg_t held[16];
    int n_held;
} rig_t;

static void rig_new_trainer(rig_t *r, const char *trainer);
static int rig_fault_worker = ORDO_FAULT_ABORT; /* [fault] worker of the next rig */
static int rig_batches = ORDO_BATCHES_AUTO;       /* [sync] batches of the next rig */

static void rig_new(rig_t *r)
{
    rig_new_trainer(r, "synthetic");
}

static void rig_new_trainer(rig_t *r, const char *trainer)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    r->n_held = 0;
    snprintf(r->dir, sizeof r->dir, "/tmp/ordo-test-sched-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(r->dir));
    snprintf(conf.scheduler, sizeof conf.scheduler, "tcp://127.0.0.1:0");
    snprintf(conf.out_dir, sizeof conf.out_dir, "%s", r->dir);
    snprintf(conf.run_name, sizeof conf.run_name, "run");
    snprintf(conf.trainer, sizeof conf.trainer, "%s", trainer);
    snprintf(conf.tensors, sizeof conf.tensors, "4KiB,8KiB");
    snprintf(conf.token, sizeof conf.token, "secret");
    conf.servers = 1;
    conf.workers = 2;
    conf.fault_worker = rig_fault_worker;
    conf.batches = rig_batches;
    conf.restarts = 1;
    ORDO_CK_OK(ordo__scheduler_new(&conf, &r->sch));
    ORDO_CK_OK(ordo__transport_new(NULL, &r->tp));
    for (int i = 0; i < N_NODES; i++) {
        r->sock[i] = ordo__transport_connect(r->tp, ordo__scheduler_endpoint(r->sch), 0);
        ck_assert_int_ge(r->sock[i], 0);
    }
}

static void rig_destroy(rig_t *r)
{
    for (int k = 0; k < r->n_held; k++)
        ordo__msg_close(&r->held[k]);
    r->n_held = 0;
    ordo__transport_destroy(&r->tp, 0);
    ordo__scheduler_destroy(&r->sch);
    ck_assert_ptr_null(r->sch);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* send: node i sends a message of type with an optional text body */
static void send_msg(rig_t *r, int i, int type, int role, int64_t iter, const char *text)
{
    ordo__msg_t m;
    ordo__msg_init(&m, type);
    m.sock = r->sock[i];
    m.hdr.role = (uint8_t)role;
    m.hdr.rank = -1;
    m.hdr.iter = iter;
    if (text) {
        m.hdr.dtype = ORDO_DTYPE_JSON;
        ORDO_CK_OK(ordo__msg_add_text(&m, text));
    }
    ORDO_CK_OK(ordo__transport_send(r->tp, &m));
}

/* feed hands the next message the scheduler receives to ordo__scheduler_handle and returns
 * what it returned */
static int feed(rig_t *r)
{
    ordo__msg_t m;
    ORDO_CK_OK(ordo__transport_recv(ordo__scheduler_transport(r->sch), &m, 5000));
    int rc = ordo__scheduler_handle(r->sch, &m);
    ordo__msg_close(&m);
    return rc;
}

/* reg_declaring: node i registers with role, rank and token; a worker's "tensors" (JSON
 * array text, or NULL for none); returns what ordo__scheduler_handle returned */
static int reg_declaring(rig_t *r, int i, const char *role, int rank, const char *token,
                         const char *tensors)
{
    char body[1024];
    snprintf(body, sizeof body, "{\"role\":\"%s\",\"token\":\"%s\",\"rank\":%d,\"pid\":%d%s%s%s}",
             role, token, rank, 1000 + i,
             !strcmp(role, "server") ? ",\"endpoint\":\"" SRV_EP "\"" : "",
             tensors ? ",\"tensors\":" : "", tensors ? tensors : "");
    send_msg(r, i, ORDO_MSG_REGISTER, 0, 0, body);
    return feed(r);
}

static void reg(rig_t *r, int i, const char *role, int rank, const char *token)
{
    ck_assert_int_eq(reg_declaring(r, i, role, rank, token, NULL), 0);
}

/* take_held moves held message k into m, the later ones up */
static void take_held(rig_t *r, int k, ordo__msg_t *m)
{
    ordo__msg_move(m, &r->held[k]);
    for (k++; k < r->n_held; k++)
        ordo__msg_move(&r->held[k - 1], &r->held[k]);
    r->n_held--;
}

/* next_msg: the next message for the nodes, held ones first */
static int next_msg(rig_t *r, ordo__msg_t *m, int timeout_ms)
{
    if (r->n_held == 0) return ordo__transport_recv(r->tp, m, timeout_ms);
    take_held(r, 0, m);
    return 0;
}

/* expect receives the next message for node i (others' are held for later): its type */
static void expect(rig_t *r, int i, int type, ordo__msg_t *m)
{
    int k = 0;
    while (k < r->n_held && r->held[k].sock != r->sock[i])
        k++;
    if (k < r->n_held) {
        take_held(r, k, m);
    } else {
        for (;;) {
            ORDO_CK_OK(ordo__transport_recv(r->tp, m, 5000));
            if (m->sock == r->sock[i]) break;
            ck_assert_int_lt(r->n_held, 16);
            ordo__msg_move(&r->held[r->n_held++], m);
        }
    }
    ck_assert_msg(m->hdr.type == type, "got %s, expected %s", ordo__wire_type_name(m->hdr.type),
                  ordo__wire_type_name(type));
    ck_assert_int_eq(m->sock, r->sock[i]);
}

static void expect_text(rig_t *r, int i, int type, const char *what)
{
    ordo__msg_t m;
    char body[256];
    expect(r, i, type, &m);
    ordo__msg_text(&m, 0, body, sizeof body);
    ck_assert_msg(strstr(body, what), "body '%s', expected '%s'", body, what);
    ordo__msg_close(&m);
}

static void nothing_more(rig_t *r)
{
    ordo__msg_t m;
    ck_assert_msg(r->n_held == 0, "%d messages not taken", r->n_held);
    ck_assert_int_eq(ordo__transport_recv(r->tp, &m, 100), ORDO_ERR_TIMEDOUT);
}

static json_t *last_plan; /* the plan of the last WELCOME take_welcomes saw */

/* take_welcomes receives the three WELCOMEs (in any order), checks the maps in each and
 * writes the rank each node got to rank[] */
static void take_welcomes(rig_t *r, int rank[N_NODES])
{
    json_decref(last_plan);
    last_plan = NULL;
    for (int i = 0; i < N_NODES; i++)
        rank[i] = -1;
    for (int n = 0; n < 3; n++) {
        ordo__msg_t m;
        ORDO_CK_OK(next_msg(r, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_WELCOME);
        int i = 0;
        while (i < N_NODES && r->sock[i] != m.sock)
            i++;
        ck_assert_int_lt(i, STRANGER);
        ck_assert_int_eq(rank[i], -1); /* one each */
        size_t len = 0;
        const char *body = ordo__msg_data(&m, 0, &len);
        json_t *o = json_loadb(body, len, 0, NULL);
        ck_assert_ptr_nonnull(o);
        rank[i] = (int)json_integer_value(json_object_get(o, "rank"));
        ck_assert_int_eq(json_integer_value(json_object_get(o, "workers")), 2);
        json_t *servers = json_object_get(o, "servers");
        ck_assert_int_eq(json_array_size(servers), 1);
        ck_assert_str_eq(json_string_value(json_array_get(servers, 0)), SRV_EP);
        ck_assert_str_eq(json_string_value(json_object_get(o, "run_dir")),
                         ordo__scheduler_run_dir(r->sch));
        char *kt = json_dumps(json_object_get(o, "keys"), JSON_COMPACT);
        ordo__keys_t *k = NULL;
        ORDO_CK_OK(ordo__keys_from_json(kt, &k));
        ck_assert_int_eq(k->n_keys, 2);
        ck_assert_int_eq(k->numel[0], 1024);
        ck_assert_int_eq(k->numel[1], 2048);
        ordo__keys_destroy(&k);
        free(kt);
        json_decref(last_plan);
        last_plan = json_incref(json_object_get(o, "plan"));
        json_decref(o);
        ordo__msg_close(&m);
    }
}

/* join registers the server and both workers (worker A asks for rank 1): nobody is welcomed
 * before the cluster is complete, then B gets the rank A left free */
static void join(rig_t *r)
{
    int rank[N_NODES];
    reg(r, SRV, "server", -1, "secret");
    reg(r, WA, "worker", 1, "secret");
    nothing_more(r);
    reg(r, WB, "worker", -1, "secret");
    take_welcomes(r, rank);
    ck_assert_int_eq(rank[SRV], 0);
    ck_assert_int_eq(rank[WA], 1);
    ck_assert_int_eq(rank[WB], 0);
}

START_TEST(registration_assigns_ranks)
{
    rig_t r;
    rig_new(&r);
    send_msg(&r, STRANGER, ORDO_MSG_REGISTER, 0, 0, "{not json");
    ck_assert_int_eq(feed(&r), 0);
    expect_text(&r, STRANGER, ORDO_MSG_REJECT, "malformed registration");
    send_msg(&r, STRANGER, ORDO_MSG_REGISTER, 0, 0, "{\"role\":\"worker\",\"token\":\"x\"}");
    ck_assert_int_eq(feed(&r), 0);
    expect_text(&r, STRANGER, ORDO_MSG_REJECT, "malformed registration");
    reg(&r, STRANGER, "worker", -1, "wrong");
    expect_text(&r, STRANGER, ORDO_MSG_REJECT, "wrong cluster token");
    reg(&r, SRV, "server", -1, "secret");
    reg(&r, SRV, "server", -1, "secret");
    expect_text(&r, SRV, ORDO_MSG_REJECT, "already registered");
    int rank[N_NODES];
    reg(&r, WA, "worker", 1, "secret");
    nothing_more(&r);
    reg(&r, WB, "worker", -1, "secret");
    take_welcomes(&r, rank);
    ck_assert_int_eq(rank[SRV], 0);
    ck_assert_int_eq(rank[WA], 1);
    ck_assert_int_eq(rank[WB], 0);
    reg(&r, STRANGER, "worker", -1, "secret"); /* a third worker */
    expect_text(&r, STRANGER, ORDO_MSG_REJECT, "cluster is full");
    send_msg(&r, STRANGER, ORDO_MSG_BARRIER, ORDO_ROLE_WORKER, 0, NULL); /* never registered */
    ck_assert_int_eq(feed(&r), 0);
    nothing_more(&r);
    rig_destroy(&r);
}
END_TEST

START_TEST(barrier_waits_for_every_worker)
{
    rig_t r;
    rig_new(&r);
    join(&r);
    send_msg(&r, WA, ORDO_MSG_BARRIER, ORDO_ROLE_WORKER, 3, NULL);
    ck_assert_int_eq(feed(&r), 0);
    nothing_more(&r); /* one worker is not all */
    send_msg(&r, WB, ORDO_MSG_BARRIER, ORDO_ROLE_WORKER, 4, NULL); /* another barrier: dropped */
    ck_assert_int_eq(feed(&r), 0);
    send_msg(&r, SRV, ORDO_MSG_BARRIER, ORDO_ROLE_SERVER, 3, NULL); /* servers do not gather */
    ck_assert_int_eq(feed(&r), 0);
    nothing_more(&r);
    send_msg(&r, WB, ORDO_MSG_BARRIER, ORDO_ROLE_WORKER, 3, NULL);
    ck_assert_int_eq(feed(&r), 0);
    bool done[N_NODES] = {false};
    for (int n = 0; n < 2; n++) {
        ordo__msg_t m;
        ORDO_CK_OK(next_msg(&r, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_BARRIER_DONE);
        ck_assert_int_eq(m.hdr.iter, 3);
        done[m.sock == r.sock[WA] ? WA : m.sock == r.sock[WB] ? WB : SRV] = true;
        ordo__msg_close(&m);
    }
    ck_assert(done[WA] && done[WB] && !done[SRV]);
    nothing_more(&r);
    /* the run ends when both workers are done (the ACKs of heartbeats are the transports'
     * business: the nodes' I/O thread consumes them) */
    send_msg(&r, WA, ORDO_MSG_DONE, ORDO_ROLE_WORKER, 0, NULL);
    ck_assert_int_eq(feed(&r), 0);
    send_msg(&r, WA, ORDO_MSG_DONE, ORDO_ROLE_WORKER, 0, NULL); /* twice counts once */
    ck_assert_int_eq(feed(&r), 0);
    send_msg(&r, WB, ORDO_MSG_DONE, ORDO_ROLE_WORKER, 0, NULL);
    ck_assert_int_eq(feed(&r), 1);
    ORDO_CK_OK(ordo__scheduler_check(r.sch));
    rig_destroy(&r);
}
END_TEST

START_TEST(an_abort_reaches_every_node)
{
    rig_t r;
    rig_new(&r);
    join(&r);
    send_msg(&r, WB, ORDO_MSG_ABORT, ORDO_ROLE_WORKER, 0, "out of disk");
    ck_assert_int_eq(feed(&r), ORDO_ERR_ABORT);
    for (int n = 0; n < 3; n++) {
        ordo__msg_t m;
        char body[256];
        ORDO_CK_OK(next_msg(&r, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_ABORT);
        ordo__msg_text(&m, 0, body, sizeof body);
        ck_assert_msg(strstr(body, "worker 0") && strstr(body, "out of disk"), "%s", body);
        ordo__msg_close(&m);
    }
    ck_assert_int_eq(ordo__scheduler_check(r.sch), ORDO_ERR_ABORT);
    char path[128];
    snprintf(path, sizeof path, "%s/summary.json", ordo__scheduler_run_dir(r.sch));
    ck_assert_int_eq(access(path, R_OK), 0); /* what was recorded is kept */
    /* and what the scheduler took, by type: three registrations, one abort of 11 bytes */
    json_t *sum = json_load_file(path, 0, NULL);
    json_t *cp = json_object_get(sum, "control_plane");
    json_t *msgs = json_object_get(cp, "messages");
    ck_assert_int_eq(json_integer_value(json_object_get(msgs, "REGISTER")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(msgs, "ABORT")), 1);
    ck_assert_int_eq(json_object_size(msgs), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(cp, "messages_total")), 4);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(cp, "bytes"), "ABORT")),
                     (json_int_t)strlen("out of disk"));
    ck_assert_int_eq(json_integer_value(json_object_get(cp, "members")), 3);
    ck_assert(json_real_value(json_object_get(cp, "cpu_user_s")) >= 0);
    json_decref(sum);
    rig_destroy(&r);
}
END_TEST

#define DECLARED_A "[{\"name\":\"a\",\"numel\":1024,\"update\":{\"kind\":\"average\"}},"
#define DECLARED_B "{\"name\":\"b\",\"numel\":2048}]"

START_TEST(declared_tensors_make_the_key_map)
{
    rig_t r;
    rig_new_trainer(&r, "declared");
    int rank[N_NODES];
    reg(&r, SRV, "server", -1, "secret");
    ck_assert_int_eq(reg_declaring(&r, STRANGER, "worker", -1, "secret", NULL), 0);
    expect_text(&r, STRANGER, ORDO_MSG_REJECT, "must declare its tensors");
    ck_assert_int_eq(reg_declaring(&r, WA, "worker", 1, "secret", DECLARED_A DECLARED_B), 0);
    nothing_more(&r);
    ck_assert_int_eq(reg_declaring(&r, WB, "worker", -1, "secret", DECLARED_A DECLARED_B), 0);
    take_welcomes(&r, rank); /* checks the key map: 1024 and 2048 elements */
    ck_assert_int_eq(rank[WB], 0);
    char *params = json_dumps(json_object_get(last_plan, "params"), JSON_COMPACT);
    char *updates = json_dumps(json_object_get(last_plan, "updates"), JSON_COMPACT);
    ck_assert_str_eq(params, "[\"a\",\"b\"]");
    ck_assert_str_eq(updates, "[{\"kind\":\"average\"},null]");
    free(params);
    free(updates);
    json_decref(last_plan);
    last_plan = NULL;
    rig_destroy(&r);
}
END_TEST

/* differ: worker B (rank 0) declares `b_tensors`, worker A (rank 1) the reference; the run
 * aborts with `why` to every node */
static void differ(const char *a_tensors, const char *b_tensors, const char *why)
{
    rig_t r;
    rig_new_trainer(&r, "declared");
    reg(&r, SRV, "server", -1, "secret");
    ck_assert_int_eq(reg_declaring(&r, WA, "worker", 1, "secret", a_tensors), 0);
    ck_assert_int_eq(reg_declaring(&r, WB, "worker", -1, "secret", b_tensors), ORDO_ERR_ABORT);
    for (int n = 0; n < 3; n++) {
        ordo__msg_t m;
        char body[512];
        ORDO_CK_OK(next_msg(&r, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_ABORT);
        ordo__msg_text(&m, 0, body, sizeof body);
        ck_assert_msg(strstr(body, why), "ABORT says '%s', expected '%s'", body, why);
        ordo__msg_close(&m);
    }
    rig_destroy(&r);
}

START_TEST(declarations_that_differ_abort_naming_worker_and_tensor)
{
    differ(DECLARED_A DECLARED_B, DECLARED_A "{\"name\":\"b\",\"numel\":1000}]",
           "worker 1 declared tensor 1 \"b\" of 2048 elements, worker 0 \"b\" of 1000");
    differ(DECLARED_A DECLARED_B, "[{\"name\":\"a\",\"numel\":1024}]",
           "worker 1 declared 2 tensors, worker 0 1");
    differ(DECLARED_A DECLARED_B, "[{\"name\":\"a\",\"numel\":1024}," DECLARED_B,
           "worker 1 declared tensor 0 \"a\" with update rule {\"kind\":\"average\"}, "
           "worker 0 the conf's");
    differ(DECLARED_A DECLARED_B, "[{\"name\":\"a\",\"numel\":0}]",
           "worker 0 declared tensor 0 with no element count >= 1");
    const char *twice = "[{\"name\":\"a\",\"numel\":4},{\"name\":\"a\",\"numel\":4}]";
    differ(twice, twice, "the declared tensors: ");
}
END_TEST

/* sparse: the declarations text (the same for both workers) under push.mode = sparse; returns
 * the code and leaves the reason in why */
static int sparse(const char *text, char *why, size_t wsz)
{
    json_t *d = json_loads(text, 0, NULL);
    ck_assert_ptr_nonnull(d);
    json_t *by_rank[2] = {d, d};
    ordo__model_t *m = NULL;
    json_t *updates = NULL;
    int rc = ordo__declared_model(by_rank, 2, true, &m, &updates, why, wsz);
    ck_assert_int_eq(rc == 0, m != NULL);
    ordo__model_destroy(&m);
    json_decref(updates);
    json_decref(d);
    return rc;
}

START_TEST(sparse_runs_take_one_declared_sgd_for_every_tensor)
{
    char why[512];
#define SGD(lr) "\"update\":{\"kind\":\"sgd\",\"lr\":" lr ",\"momentum\":0.9,\"weight_decay\":0}"
    ck_assert_int_eq(sparse("[{\"name\":\"w\",\"numel\":8," SGD("0.1") "},"
                            "{\"name\":\"b\",\"numel\":2," SGD("0.1") "}]", why, sizeof why), 0);
    ck_assert_int_eq(sparse("[{\"name\":\"w\",\"numel\":8}]", why, sizeof why), 0);
    ck_assert_int_eq(sparse("[{\"name\":\"w\",\"numel\":8," SGD("0.1") "},"
                            "{\"name\":\"b\",\"numel\":2," SGD("0.2") "}]", why, sizeof why),
                     ORDO_ERR_INVAL);
    ck_assert_msg(strstr(why, "tensor 1 \"b\" declares other hyperparameters"), "%s", why);
    ck_assert_int_eq(sparse("[{\"name\":\"w\",\"numel\":8," SGD("0.1") "},"
                            "{\"name\":\"n\",\"numel\":2,\"update\":{\"kind\":\"average\"}}]",
                            why, sizeof why),
                     ORDO_ERR_INVAL);
    ck_assert_msg(strstr(why, "tensor 1 \"n\" asks for an average"), "%s", why);
#undef SGD
}
END_TEST

/* bcast: node i joins broadcast id of `bytes` from root; data (root only) or NULL */
static void bcast(rig_t *r, int i, int64_t id, int root, uint64_t bytes, const char *data)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_BCAST);
    m.sock = r->sock[i];
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.iter = id;
    m.hdr.key = (uint32_t)root;
    m.hdr.dtype = ORDO_DTYPE_BYTES;
    unsigned char size[8];
    ordo_put_le(size, bytes, 8);
    ORDO_CK_OK(ordo__msg_add_copy(&m, size, 8));
    if (data) ORDO_CK_OK(ordo__msg_add_copy(&m, data, strlen(data)));
    ORDO_CK_OK(ordo__transport_send(r->tp, &m));
}

START_TEST(a_broadcast_relays_the_roots_bytes)
{
    rig_t r;
    rig_new(&r);
    join(&r); /* WA is worker 1, WB worker 0 */
    bcast(&r, WB, 1, 1, 5, NULL);
    ck_assert_int_eq(feed(&r), 0);
    nothing_more(&r);
    bcast(&r, WA, 1, 1, 5, "hello");
    ck_assert_int_eq(feed(&r), 0);
    for (int n = 0; n < 2; n++) {
        ordo__msg_t m;
        ORDO_CK_OK(next_msg(&r, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_BCAST);
        ck_assert_int_eq(m.hdr.iter, 1);
        size_t len = 0;
        const char *data = ordo__msg_data(&m, 0, &len);
        if (m.sock == r.sock[WB]) {
            ck_assert_uint_eq(len, 5);
            ck_assert_int_eq(memcmp(data, "hello", 5), 0);
        } else {
            ck_assert_int_eq(m.sock, r.sock[WA]);
            ck_assert_ptr_null(data); /* the root has its bytes */
        }
        ordo__msg_close(&m);
    }
    nothing_more(&r);
    /* a size that differs aborts the run naming both */
    bcast(&r, WB, 2, 0, 3, "abc");
    ck_assert_int_eq(feed(&r), 0);
    bcast(&r, WA, 2, 0, 4, NULL);
    ck_assert_int_eq(feed(&r), ORDO_ERR_ABORT);
    expect_text(&r, SRV, ORDO_MSG_ABORT,
                "broadcast 2: worker 1 passed 4 bytes from root 0, worker 0 3 bytes from root 0");
    rig_destroy(&r);
}
END_TEST


/* fault.worker = restart: a worker that registers after the start with a rank takes that
 * rank (the old one counted dead) and gets the WELCOME with the first iteration the rank did
 * not report, and the old process is fenced (the servers told, its messages answered with
 * ABORT); a rank restarted more than fault.restarts times aborts the run; summary.json counts
 * the changes */
START_TEST(a_restarted_worker_takes_the_dead_ones_rank)
{
    rig_t r;
    rig_fault_worker = ORDO_FAULT_RESTART;
    rig_new(&r);
    rig_fault_worker = ORDO_FAULT_ABORT;
    join(&r); /* WA is worker 1 */
    send_msg(&r, WA, ORDO_MSG_STATS, ORDO_ROLE_WORKER, 0,
             "{\"worker\":1,\"iter\":6,\"step_ms\":1,\"wait_ms\":0,\"compute_ms\":0,"
             "\"bytes_push\":0,\"bytes_pull\":0,\"samples\":0,\"t_start_ns\":1,"
             "\"t_push_done_ns\":2,\"t_end_ns\":2}");
    ck_assert_int_eq(feed(&r), 0);
    reg(&r, STRANGER, "worker", 1, "secret"); /* WA's replacement */
    ordo__msg_t m;
    expect(&r, STRANGER, ORDO_MSG_WELCOME, &m);
    size_t len = 0;
    const char *body = ordo__msg_data(&m, 0, &len);
    json_t *o = json_loadb(body, len, 0, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "rank")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "rejoin")), 7);
    json_decref(o);
    ordo__msg_close(&m);
    /* the old worker 1's process is fenced: the server is told to refuse it */
    expect_text(&r, SRV, ORDO_MSG_MEMBERS, "{\"fenced\":1,");
    nothing_more(&r);
    /* the old worker 1's messages are refused: its DONE does not count, it is told why */
    send_msg(&r, WA, ORDO_MSG_DONE, ORDO_ROLE_WORKER, 0, NULL);
    ck_assert_int_eq(feed(&r), 0);
    expect_text(&r, WA, ORDO_MSG_ABORT, "fenced: worker 1 (pid 1001) was declared dead");
    send_msg(&r, WB, ORDO_MSG_DONE, ORDO_ROLE_WORKER, 0, NULL);
    ck_assert_int_eq(feed(&r), 0); /* worker 1 is not done yet */
    /* a second restart of rank 1 is one too many (fault.restarts = 1) */
    ck_assert_int_eq(reg_declaring(&r, WA, "worker", 1, "secret", NULL), ORDO_ERR_ABORT);
    char path[128];
    snprintf(path, sizeof path, "%s/summary.json", ordo__scheduler_run_dir(r.sch));
    json_t *sum = json_load_file(path, 0, NULL);
    json_t *mem = json_object_get(sum, "membership");
    ck_assert_int_eq(json_integer_value(json_object_get(mem, "restarts")), 1);
    /* the first worker 1 and its replacement died; one restart was allowed */
    ck_assert_int_eq(json_integer_value(json_object_get(mem, "worker_deaths")), 2);
    json_decref(sum);
    rig_destroy(&r);
}
END_TEST

/* ---- the batch service ([sync] batches) ---- */

/* batch_req: worker node i asks for a batch at iteration iter with request id req */
static void batch_req(rig_t *r, int i, int64_t iter, uint64_t req, const char *spec)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_BATCH_REQ);
    m.sock = r->sock[i];
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.iter = iter;
    m.hdr.req = req;
    m.hdr.key = ORDO_BATCH_ANY_EPOCH;
    m.hdr.dtype = ORDO_DTYPE_JSON;
    ORDO_CK_OK(ordo__msg_add_text(&m, spec));
    ORDO_CK_OK(ordo__transport_send(r->tp, &m));
    ck_assert_int_eq(feed(r), 0);
}

/* expect_batch: node i's answer to request req: the indices first .. first + n - 1 (n > 0),
 * or the flags of an end (n 0) */
static void expect_batch(rig_t *r, int i, uint64_t req, int64_t first, int n, uint32_t flags)
{
    ordo__msg_t m;
    expect(r, i, ORDO_MSG_BATCH, &m);
    ck_assert_uint_eq(m.hdr.req, req);
    ck_assert_uint_eq(m.hdr.flags, flags);
    size_t len = 0;
    const unsigned char *d = ordo__msg_data(&m, 0, &len);
    ck_assert_uint_eq(len, (size_t)n * 8);
    for (int k = 0; k < n; k++)
        ck_assert_int_eq(d[8 * k], first + k); /* little-endian, small values */
    ordo__msg_close(&m);
}

static void expect_refusal(rig_t *r, int i, uint64_t req, const char *what)
{
    ordo__msg_t m;
    char body[512];
    expect(r, i, ORDO_MSG_BATCH, &m);
    ck_assert_uint_eq(m.hdr.req, req);
    ck_assert_int_eq(m.hdr.dtype, ORDO_DTYPE_JSON);
    ordo__msg_text(&m, 0, body, sizeof body);
    ck_assert_msg(strstr(body, what) && strstr(body, "\"error\""), "body '%s', expected '%s'",
                  body, what);
    ordo__msg_close(&m);
}

#define SPEC "{\"n\":10,\"batch\":4,\"samples\":8,\"seed\":1,\"shuffle\":false}"

START_TEST(the_batch_service_answers_and_refuses)
{
    rig_t r;
    rig_batches = ORDO_BATCHES_ON;
    rig_new(&r);
    rig_batches = ORDO_BATCHES_AUTO;
    join(&r);
    batch_req(&r, WB, 0, 7, SPEC);
    expect_batch(&r, WB, 7, 0, 4, 0);
    /* bad requests are refused, naming what was wrong; the service goes on */
    batch_req(&r, WA, 0, 8, "{\"n\":10,\"batch\":5,\"samples\":8,\"seed\":1,\"shuffle\":false}");
    expect_refusal(&r, WA, 8, "batch 5");
    batch_req(&r, WA, 0, 9, "{not json");
    expect_refusal(&r, WA, 9, "BATCH_REQ");
    batch_req(&r, WA, 0, 10, "{\"n\":10,\"batch\":4,\"samples\":8,\"seed\":1}");
    expect_refusal(&r, WA, 10, "BATCH_REQ");
    batch_req(&r, WA, 0, 11, "{\"n\":10,\"batch\":4,\"samples\":8,\"seed\":-1,\"shuffle\":false}");
    expect_refusal(&r, WA, 11, "negative seed");
    batch_req(&r, WA, 0, 12, SPEC);
    expect_batch(&r, WA, 12, 4, 4, 0);
    /* the 8 samples are out: the last iteration handed out is 0, so a request for 0 still
     * gets a batch (bsp counts iterations), one for 1 is the end */
    batch_req(&r, WB, 1, 13, SPEC);
    expect_batch(&r, WB, 13, 0, 0, ORDO_BATCH_END_RUN);
    batch_req(&r, WA, 0, 14, SPEC);
    expect_batch(&r, WA, 14, 8, 2, 0); /* the epoch's last 2 samples, beyond the 8 */
    batch_req(&r, WA, 1, 15, SPEC);
    expect_batch(&r, WA, 15, 0, 0, ORDO_BATCH_END_RUN);
    nothing_more(&r);
    rig_destroy(&r);
}
END_TEST

START_TEST(the_batch_service_off_says_so)
{
    rig_t r;
    rig_new(&r); /* bsp, sync.batches = auto: off */
    join(&r);
    batch_req(&r, WB, 0, 3, SPEC);
    expect_refusal(&r, WB, 3, "batch service is off");
    nothing_more(&r);
    rig_destroy(&r);
}
END_TEST

/* intra.backend = auto: one backend per group, any per group; the detail names the members */
START_TEST(auto_groups_must_agree_inside_each_group)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    json_t *plan = json_pack("{s:{s:s,s:i}}", "intra", "backend", "auto", "local_size", 2);
    const char *same[] = {"nccl", "nccl", "shm", NULL}; /* NULL: said nothing, shm */
    ORDO_CK_OK(ordo__runplan_intra_check(&conf, plan, same, 4));
    const char *split[] = {"shm", "shm", "shm", "nccl"};
    ORDO_CK_ERR(ordo__runplan_intra_check(&conf, plan, split, 4), ORDO_ERR_INVAL);
    ck_assert_str_eq(ordo__error_detail(),
                     "intra.backend = auto: the members of group 1 resolved different backends "
                     "(worker 2 shm, worker 3 nccl); a group needs one: put every member's "
                     "tensors on the same kind of device (intra.device), or set intra.backend");
    conf.replicas = 2;
    ORDO_CK_ERR(ordo__runplan_intra_check(&conf, plan, same, 4), ORDO_ERR_INVAL);
    ck_assert_msg(strstr(ordo__error_detail(), "fault.replicas = 2 with intra.backend = auto, "
                                              "resolved to nccl by 2 workers"),
                  "%s", ordo__error_detail());
    const char *cpu[] = {"shm", "shm", "shm", "shm"};
    ORDO_CK_OK(ordo__runplan_intra_check(&conf, plan, cpu, 4));
    /* a plan that names its backend is not checked */
    json_object_set_new(json_object_get(plan, "intra"), "backend", json_string("shm"));
    ORDO_CK_OK(ordo__runplan_intra_check(&conf, plan, split, 4));
    json_decref(plan);
}
END_TEST
/* a STATS message of several records, one a line ([output] stats_every): each is taken in
 * order, a bad line is dropped alone, and the run log holds the good ones once the message
 * is in */
START_TEST(stats_lines_are_taken_one_by_one)
{
    rig_t r;
    rig_new(&r);
    join(&r); /* WA is worker 1 */
#define REC(i)                                                                                     \
    "{\"worker\":1,\"iter\":" #i ",\"step_ms\":1,\"wait_ms\":0,\"compute_ms\":0,"                  \
    "\"bytes_push\":0,\"bytes_pull\":0,\"samples\":0,\"t_start_ns\":1,\"t_push_done_ns\":2,"         \
    "\"t_end_ns\":2}"
    send_msg(&r, WA, ORDO_MSG_STATS, ORDO_ROLE_WORKER, 0,
             REC(0) "\n{\"worker\":0,\"iter\":1}\n" REC(2) "\n" REC(3));
#undef REC
    ck_assert_int_eq(feed(&r), 0);
    char path[128];
    snprintf(path, sizeof path, "%s/metrics.jsonl", ordo__scheduler_run_dir(r.sch));
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    int iters[8], n = 0;
    while (n < 8 && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        ck_assert_int_eq(json_integer_value(json_object_get(o, "worker")), 1);
        iters[n++] = (int)json_integer_value(json_object_get(o, "iter"));
        json_decref(o);
    }
    fclose(f);
    ck_assert_int_eq(n, 3); /* the second line names worker 0 and misses figures: dropped */
    ck_assert_int_eq(iters[0], 0);
    ck_assert_int_eq(iters[1], 2);
    ck_assert_int_eq(iters[2], 3);
    rig_destroy(&r);
}
END_TEST

static Suite *scheduler_suite(void)
{
    Suite *s = suite_create("scheduler");
    TCase *tc = tcase_create("rendezvous");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, registration_assigns_ranks);
    suite_add_tcase(s, tc);
    tc = tcase_create("run");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, barrier_waits_for_every_worker);
    tcase_add_test(tc, an_abort_reaches_every_node);
    tcase_add_test(tc, a_broadcast_relays_the_roots_bytes);
    tcase_add_test(tc, stats_lines_are_taken_one_by_one);
    suite_add_tcase(s, tc);
    tc = tcase_create("declared");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, declared_tensors_make_the_key_map);
    tcase_add_test(tc, declarations_that_differ_abort_naming_worker_and_tensor);
    tcase_add_test(tc, sparse_runs_take_one_declared_sgd_for_every_tensor);
    tcase_add_test(tc, auto_groups_must_agree_inside_each_group);
    suite_add_tcase(s, tc);
    tc = tcase_create("membership");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, a_restarted_worker_takes_the_dead_ones_rank);
    suite_add_tcase(s, tc);
    tc = tcase_create("batches");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, the_batch_service_answers_and_refuses);
    tcase_add_test(tc, the_batch_service_off_says_so);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(scheduler_suite)
