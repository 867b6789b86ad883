/* Tests of scheduler/scheduler: the scheduler object driven with messages, without
 * processes. The test's own transport plays the nodes (one DEALER each, so each has its own
 * routing id) and every message the scheduler's transport receives is fed to
 * ordo_scheduler_handle. Checks the rendezvous (rank assignment, the WELCOME's cluster and
 * key maps), refused registrations, a barrier, the end of the run when every worker is done,
 * and an abort relayed to every node. */
#include "common/keys.h"
#include "common/transport.h"
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
    ordo_scheduler_t *sch;
    ordo_transport_t *tp; /* the nodes' */
    int sock[N_NODES];
    char dir[64];
} rig_t;

static void rig_new(rig_t *r)
{
    ordo_conf_t conf;
    ordo_conf_defaults(&conf);
    snprintf(r->dir, sizeof r->dir, "/tmp/ordo-test-sched-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(r->dir));
    snprintf(conf.scheduler, sizeof conf.scheduler, "tcp://127.0.0.1:0");
    snprintf(conf.out_dir, sizeof conf.out_dir, "%s", r->dir);
    snprintf(conf.run_name, sizeof conf.run_name, "run");
    snprintf(conf.trainer, sizeof conf.trainer, "synthetic");
    snprintf(conf.tensors, sizeof conf.tensors, "4KiB,8KiB");
    snprintf(conf.token, sizeof conf.token, "secret");
    conf.servers = 1;
    conf.workers = 2;
    ORDO_CK_OK(ordo_scheduler_new(&conf, &r->sch));
    ORDO_CK_OK(ordo_transport_new(NULL, &r->tp));
    for (int i = 0; i < N_NODES; i++) {
        r->sock[i] = ordo_transport_connect(r->tp, ordo_scheduler_endpoint(r->sch), 0);
        ck_assert_int_ge(r->sock[i], 0);
    }
}

static void rig_destroy(rig_t *r)
{
    ordo_transport_destroy(&r->tp, 0);
    ordo_scheduler_destroy(&r->sch);
    ck_assert_ptr_null(r->sch);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* send: node i sends a message of type with an optional text body */
static void send_msg(rig_t *r, int i, int type, int role, int64_t iter, const char *text)
{
    ordo_msg_t m;
    ordo_msg_init(&m, type);
    m.sock = r->sock[i];
    m.hdr.role = (uint8_t)role;
    m.hdr.rank = -1;
    m.hdr.iter = iter;
    if (text) {
        m.hdr.dtype = ORDO_DTYPE_JSON;
        ORDO_CK_OK(ordo_msg_add_text(&m, text));
    }
    ORDO_CK_OK(ordo_transport_send(r->tp, &m));
}

/* feed hands the next message the scheduler receives to ordo_scheduler_handle and returns
 * what it returned */
static int feed(rig_t *r)
{
    ordo_msg_t m;
    ORDO_CK_OK(ordo_transport_recv(ordo_scheduler_transport(r->sch), &m, 5000));
    int rc = ordo_scheduler_handle(r->sch, &m);
    ordo_msg_close(&m);
    return rc;
}

static void reg(rig_t *r, int i, const char *role, int rank, const char *token)
{
    char body[256];
    snprintf(body, sizeof body, "{\"role\":\"%s\",\"token\":\"%s\",\"rank\":%d,\"pid\":%d%s}",
             role, token, rank, 1000 + i,
             !strcmp(role, "server") ? ",\"endpoint\":\"" SRV_EP "\"" : "");
    send_msg(r, i, ORDO_MSG_REGISTER, 0, 0, body);
    ck_assert_int_eq(feed(r), 0);
}

/* expect receives the next message for the nodes: its type, on node i's socket */
static void expect(rig_t *r, int i, int type, ordo_msg_t *m)
{
    ORDO_CK_OK(ordo_transport_recv(r->tp, m, 5000));
    ck_assert_msg(m->hdr.type == type, "got %s, expected %s", ordo_wire_type_name(m->hdr.type),
                  ordo_wire_type_name(type));
    ck_assert_int_eq(m->sock, r->sock[i]);
}

static void expect_text(rig_t *r, int i, int type, const char *what)
{
    ordo_msg_t m;
    char body[256];
    expect(r, i, type, &m);
    ordo_msg_text(&m, 0, body, sizeof body);
    ck_assert_msg(strstr(body, what), "body '%s', expected '%s'", body, what);
    ordo_msg_close(&m);
}

static void nothing_more(rig_t *r)
{
    ordo_msg_t m;
    ck_assert_int_eq(ordo_transport_recv(r->tp, &m, 100), ORDO_ETIMEDOUT);
}

/* take_welcomes receives the three WELCOMEs (in any order), checks the maps in each and
 * writes the rank each node got to rank[] */
static void take_welcomes(rig_t *r, int rank[N_NODES])
{
    for (int i = 0; i < N_NODES; i++)
        rank[i] = -1;
    for (int n = 0; n < 3; n++) {
        ordo_msg_t m;
        ORDO_CK_OK(ordo_transport_recv(r->tp, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_WELCOME);
        int i = 0;
        while (i < N_NODES && r->sock[i] != m.sock)
            i++;
        ck_assert_int_lt(i, STRANGER);
        ck_assert_int_eq(rank[i], -1); /* one each */
        size_t len = 0;
        const char *body = ordo_msg_data(&m, 0, &len);
        json_t *o = json_loadb(body, len, 0, NULL);
        ck_assert_ptr_nonnull(o);
        rank[i] = (int)json_integer_value(json_object_get(o, "rank"));
        ck_assert_int_eq(json_integer_value(json_object_get(o, "workers")), 2);
        json_t *servers = json_object_get(o, "servers");
        ck_assert_int_eq(json_array_size(servers), 1);
        ck_assert_str_eq(json_string_value(json_array_get(servers, 0)), SRV_EP);
        ck_assert_str_eq(json_string_value(json_object_get(o, "run_dir")),
                         ordo_scheduler_run_dir(r->sch));
        char *kt = json_dumps(json_object_get(o, "keys"), JSON_COMPACT);
        ordo_keys_t *k = NULL;
        ORDO_CK_OK(ordo_keys_from_json(kt, &k));
        ck_assert_int_eq(k->n_keys, 2);
        ck_assert_int_eq(k->numel[0], 1024);
        ck_assert_int_eq(k->numel[1], 2048);
        ordo_keys_destroy(&k);
        free(kt);
        json_decref(o);
        ordo_msg_close(&m);
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
        ordo_msg_t m;
        ORDO_CK_OK(ordo_transport_recv(r.tp, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_BARRIER_DONE);
        ck_assert_int_eq(m.hdr.iter, 3);
        done[m.sock == r.sock[WA] ? WA : m.sock == r.sock[WB] ? WB : SRV] = true;
        ordo_msg_close(&m);
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
    ORDO_CK_OK(ordo_scheduler_check(r.sch));
    rig_destroy(&r);
}
END_TEST

START_TEST(an_abort_reaches_every_node)
{
    rig_t r;
    rig_new(&r);
    join(&r);
    send_msg(&r, WB, ORDO_MSG_ABORT, ORDO_ROLE_WORKER, 0, "out of disk");
    ck_assert_int_eq(feed(&r), ORDO_EABORT);
    for (int n = 0; n < 3; n++) {
        ordo_msg_t m;
        char body[256];
        ORDO_CK_OK(ordo_transport_recv(r.tp, &m, 5000));
        ck_assert_int_eq(m.hdr.type, ORDO_MSG_ABORT);
        ordo_msg_text(&m, 0, body, sizeof body);
        ck_assert_msg(strstr(body, "worker 0") && strstr(body, "out of disk"), "%s", body);
        ordo_msg_close(&m);
    }
    ck_assert_int_eq(ordo_scheduler_check(r.sch), ORDO_EABORT);
    char path[128];
    snprintf(path, sizeof path, "%s/summary.json", ordo_scheduler_run_dir(r.sch));
    ck_assert_int_eq(access(path, R_OK), 0); /* what was recorded is kept */
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
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(scheduler_suite)
