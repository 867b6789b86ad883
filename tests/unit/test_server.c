/* Tests of server/server: the server object driven with messages, without processes. A
 * hand-made node (two keys on one server, two workers) stands in for the rendezvous; the
 * test's own transport plays the workers, one DEALER each, and every message the server's
 * transport receives is fed to ordo__server_handle. Checks the values answered to pulls
 * (initial, then summed and updated), pulls parked until the pushes are in, and that bad
 * messages are answered with ERROR, counted and dropped while the server goes on. */
#include "common/keys.h"
#include "common/node.h"
#include "common/transport.h"
#include "server/server.h"
#include "ordo_check.h"

#include <math.h>
#include <string.h>

#define W 2
#define N0 8 /* floats of key 0 */
#define N1 4 /* floats of key 1 */
#define LR 0.5f

typedef struct {
    ordo__server_t *srv;
    ordo__transport_t *stp; /* the server's (owned by srv) */
    ordo__transport_t *ctp; /* the workers' */
    int wsock[W];          /* worker w's DEALER on ctp */
} rig_t;

/* rig_make builds the rig with the scheduler's plan (JSON text or NULL) and aggregate;
 * returns ordo__server_new's code (the rig is usable only when it is 0) */
static int rig_make(rig_t *r, const char *plan, int aggregate)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    conf.lr = LR;
    conf.momentum = 0;
    conf.weight_decay = 0;
    conf.aggregate = aggregate;
    ordo__node_t node = {0};
    if (plan) node.plan_json = strdup(plan);
    int64_t numel[2] = {N0, N1};
    ORDO_CK_OK(ordo__keys_partition(numel, 2, sizeof(float), 1 << 20, 0, 1, &node.keys));
    node.role = ORDO_ROLE_SERVER;
    node.rank = 0;
    node.n_servers = 1;
    node.n_workers = W;
    node.sched_sock = -1;
    snprintf(node.run_dir, sizeof node.run_dir, "/tmp");
    ORDO_CK_OK(ordo__transport_new(NULL, &node.tp));
    char ep[256];
    int sock = ordo__transport_bind(node.tp, "tcp://127.0.0.1:0", 1, ep, sizeof ep);
    ck_assert_int_ge(sock, 0);
    r->stp = node.tp;
    int rc = ordo__server_new(&conf, &node, sock, &r->srv);
    if (rc) {
        ordo__transport_destroy(&node.tp, 0);
        ordo__node_fini(&node);
        return rc;
    }
    ck_assert_ptr_null(node.tp); /* the server took the node */
    ORDO_CK_OK(ordo__transport_new(NULL, &r->ctp));
    for (int w = 0; w < W; w++) {
        r->wsock[w] = ordo__transport_connect(r->ctp, ep, 1);
        ck_assert_int_ge(r->wsock[w], 0);
    }
    return 0;
}

static void rig_new(rig_t *r)
{
    ORDO_CK_OK(rig_make(r, NULL, ORDO_AGG_SUM));
}

static void rig_destroy(rig_t *r)
{
    ordo__transport_destroy(&r->ctp, 0);
    ordo__server_destroy(&r->srv);
    ck_assert_ptr_null(r->srv);
}

/* send: worker w sends a message of type for (key, iter) with n floats (data may be NULL) */
static void send_msg(rig_t *r, int w, int type, uint32_t key, int64_t iter, const float *data,
                     size_t n, uint32_t flags)
{
    ordo__msg_t m;
    ordo__msg_init(&m, type);
    m.sock = r->wsock[w];
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.rank = w;
    m.hdr.req = (uint64_t)(100 * w + key);
    m.hdr.key = key;
    m.hdr.iter = iter;
    m.hdr.flags = flags;
    if (data) {
        m.hdr.dtype = ORDO_DTYPE_F32;
        ORDO_CK_OK(ordo__msg_add_copy(&m, data, n * sizeof(float)));
    }
    ORDO_CK_OK(ordo__transport_send(r->ctp, &m));
}

/* feed hands the next n messages the server receives to ordo__server_handle */
static void feed(rig_t *r, int n)
{
    for (int i = 0; i < n; i++) {
        ordo__msg_t m;
        ORDO_CK_OK(ordo__transport_recv(r->stp, &m, 5000));
        ck_assert_int_eq(ordo__server_handle(r->srv, &m), 0);
        ordo__msg_close(&m);
    }
}

/* expect receives the next answer for the workers; it must have the given type and come on
 * worker w's socket */
static void expect(rig_t *r, int w, int type, ordo__msg_t *m)
{
    ORDO_CK_OK(ordo__transport_recv(r->ctp, m, 5000));
    ck_assert_msg(m->hdr.type == type, "got %s, expected %s", ordo__wire_type_name(m->hdr.type),
                  ordo__wire_type_name(type));
    ck_assert_int_eq(m->sock, r->wsock[w]);
    ck_assert_int_eq(m->hdr.role, ORDO_ROLE_SERVER);
}

static void nothing_more(rig_t *r)
{
    ordo__msg_t m;
    ck_assert_int_eq(ordo__transport_recv(r->ctp, &m, 100), ORDO_ERR_TIMEDOUT);
}

/* expect_value receives worker w's PULL_RESP for key at iter and compares it with want */
static void expect_value(rig_t *r, int w, uint32_t key, int64_t iter, const float *want, size_t n)
{
    ordo__msg_t m;
    expect(r, w, ORDO_MSG_PULL_RESP, &m);
    ck_assert_uint_eq(m.hdr.key, key);
    ck_assert_int_eq(m.hdr.iter, iter);
    ck_assert_uint_eq(m.hdr.req, 100 * w + key);
    size_t len = 0;
    const float *v = ordo__msg_data(&m, 0, &len);
    ck_assert_uint_eq(len, n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        float got;
        memcpy(&got, v + i, sizeof got); /* the frame may sit unaligned */
        ck_assert_msg(fabsf(got - want[i]) <= 1e-6f, "key %u [%zu]: %g, expected %g", key, i,
                      (double)got, (double)want[i]);
    }
    ordo__msg_close(&m);
}

/* init_keys: worker 0 gives both keys their first values v0[i] = i, v1[i] = 10 + i */
static void init_keys(rig_t *r, float *v0, float *v1)
{
    for (int i = 0; i < N0; i++)
        v0[i] = (float)i;
    for (int i = 0; i < N1; i++)
        v1[i] = 10.0f + (float)i;
    send_msg(r, 0, ORDO_MSG_INIT, 0, 0, v0, N0, 0);
    send_msg(r, 0, ORDO_MSG_INIT, 1, 0, v1, N1, 0);
    feed(r, 2);
}

START_TEST(pulls_answer_the_summed_update)
{
    rig_t r;
    rig_new(&r);
    float v0[N0], v1[N1], g[W][N0], want[N0];
    /* a pull that comes before the value waits for the INIT */
    send_msg(&r, 1, ORDO_MSG_PULL, 0, 0, NULL, 0, 0);
    feed(&r, 1);
    nothing_more(&r);
    init_keys(&r, v0, v1);
    expect_value(&r, 1, 0, 0, v0, N0);
    send_msg(&r, 0, ORDO_MSG_PULL, 1, 0, NULL, 0, 0);
    feed(&r, 1);
    expect_value(&r, 0, 1, 0, v1, N1);
    /* iteration 1's value waits until both workers pushed iteration 0's gradients */
    send_msg(&r, 1, ORDO_MSG_PULL, 0, 1, NULL, 0, 0);
    feed(&r, 1);
    for (int w = 0; w < W; w++) {
        for (int i = 0; i < N0; i++)
            g[w][i] = (float)(w + 1) * (0.25f + (float)i);
        send_msg(&r, w, ORDO_MSG_PUSH, 0, 0, g[w], N0, 0);
        feed(&r, 1);
        ordo__msg_t ack;
        expect(&r, w, ORDO_MSG_PUSH_ACK, &ack);
        ck_assert_uint_eq(ack.hdr.key, 0);
        ordo__msg_close(&ack);
        if (w == 0) nothing_more(&r); /* one push is not the sum */
    }
    for (int i = 0; i < N0; i++)
        want[i] = v0[i] - LR * (g[0][i] + g[1][i]);
    expect_value(&r, 1, 0, 1, want, N0);
    /* a push that also pulls the next value is answered by that value alone */
    float g1[N1] = {1, 2, 3, 4}, want1[N1];
    send_msg(&r, 0, ORDO_MSG_PUSH, 1, 0, g1, N1, 0);
    send_msg(&r, 1, ORDO_MSG_PUSH, 1, 0, g1, N1, ORDO_FLAG_PULL);
    feed(&r, 2);
    ordo__msg_t ack;
    expect(&r, 0, ORDO_MSG_PUSH_ACK, &ack);
    ordo__msg_close(&ack);
    for (int i = 0; i < N1; i++)
        want1[i] = v1[i] - LR * 2 * g1[i];
    expect_value(&r, 1, 1, 1, want1, N1);
    nothing_more(&r);
    ordo__server_stats_t st;
    ordo__server_get_stats(r.srv, &st);
    ck_assert_uint_eq(st.pushes, 4);
    ck_assert_uint_eq(st.pulls, 4);
    ck_assert_uint_eq(st.dropped, 0);
    ck_assert_uint_eq(st.released, 4);
    ck_assert_uint_eq(st.shard_bytes, (N0 + N1) * sizeof(float));
    rig_destroy(&r);
}
END_TEST

/* expect_error receives worker w's ERROR answer and checks that its reason contains what */
static void expect_error(rig_t *r, int w, const char *what)
{
    ordo__msg_t m;
    char why[256];
    expect(r, w, ORDO_MSG_ERROR, &m);
    ordo__msg_text(&m, 0, why, sizeof why);
    ck_assert_msg(strstr(why, what), "ERROR says '%s', expected '%s'", why, what);
    ordo__msg_close(&m);
}

START_TEST(bad_messages_are_answered_counted_and_dropped)
{
    rig_t r;
    rig_new(&r);
    float v0[N0], v1[N1], g[N0] = {0};
    init_keys(&r, v0, v1);
    send_msg(&r, 0, ORDO_MSG_PUSH, 0, 0, g, N0 - 3, 0); /* wrong length */
    feed(&r, 1);
    expect_error(&r, 0, "");
    send_msg(&r, 1, ORDO_MSG_PUSH, 7, 0, g, N0, 0); /* no such key */
    feed(&r, 1);
    expect_error(&r, 1, "no key 7");
    send_msg(&r, 0, ORDO_MSG_PUSH, 0, 5, g, N0, 0); /* wrong iteration */
    feed(&r, 1);
    expect_error(&r, 0, "");
    send_msg(&r, 0, ORDO_MSG_PUSH, 0, 0, NULL, 0, 0); /* no payload */
    feed(&r, 1);
    expect_error(&r, 0, "PUSH needs one payload frame of float32 or a 16-bit cast");
    send_msg(&r, 1, ORDO_MSG_PULL, 0, -1, NULL, 0, 0); /* a negative iteration */
    feed(&r, 1);
    expect_error(&r, 1, "pull of iteration -1");
    send_msg(&r, 0, ORDO_MSG_STATS, 0, 0, NULL, 0, 0); /* not a data message */
    feed(&r, 1);
    expect_error(&r, 0, "unexpected message type");
    ordo__msg_t m; /* a sender that is no worker of the cluster */
    ordo__msg_init(&m, ORDO_MSG_PULL);
    m.sock = r.wsock[1];
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.rank = W;
    ORDO_CK_OK(ordo__transport_send(r.ctp, &m));
    feed(&r, 1);
    expect_error(&r, 1, "not a worker of this cluster");
    ordo__server_stats_t st;
    ordo__server_get_stats(r.srv, &st);
    ck_assert_uint_eq(st.dropped, 7);
    ck_assert_uint_eq(st.pushes, 0);
    /* and the server goes on: the value is untouched and a good pull is answered */
    send_msg(&r, 1, ORDO_MSG_PULL, 0, 0, NULL, 0, 0);
    feed(&r, 1);
    expect_value(&r, 1, 0, 0, v0, N0);
    nothing_more(&r);
    rig_destroy(&r);
}
END_TEST

/* push_all: every worker pushes key's gradient of iter, g[w] (n floats); feeds the server and
 * takes the acknowledgements */
static void push_all(rig_t *r, uint32_t key, int64_t iter, float g[W][N0], size_t n)
{
    for (int w = 0; w < W; w++) {
        send_msg(r, w, ORDO_MSG_PUSH, key, iter, g[w], n, 0);
        feed(r, 1);
        ordo__msg_t ack;
        expect(r, w, ORDO_MSG_PUSH_ACK, &ack);
        ordo__msg_close(&ack);
    }
}

START_TEST(declared_update_rules_apply_per_key)
{
    /* key 0 averages (no initial value needed), key 1 runs torch.optim.SGD's step with its
     * own lr, momentum and weight decay; the conf's lr (LR) is used by neither */
    const float lr = 0.25f, mu = 0.9f, wd = 0.125f;
    rig_t r;
    ORDO_CK_OK(rig_make(&r,
                        "{\"updates\": [{\"kind\": \"average\"}, {\"kind\": \"sgd\", "
                        "\"lr\": 0.25, \"momentum\": 0.9, \"weight_decay\": 0.125}]}",
                        ORDO_AGG_MEAN));
    float v1[N1], g[W][N0], want[N0], p[N1], buf[N1];
    for (int i = 0; i < N1; i++)
        p[i] = v1[i] = 1.0f + (float)i;
    send_msg(&r, 0, ORDO_MSG_INIT, 1, 0, v1, N1, 0);
    feed(&r, 1);
    for (int t = 0; t < 3; t++) {
        for (int w = 0; w < W; w++)
            for (int i = 0; i < N0; i++)
                g[w][i] = (float)((w + 1) * (t + 1)) + 0.5f * (float)i;
        push_all(&r, 0, t, g, N0);
        push_all(&r, 1, t, g, N1);
        for (int i = 0; i < N0; i++)
            want[i] = 0.5f * (g[0][i] + g[1][i]);
        send_msg(&r, 1, ORDO_MSG_PULL, 0, t + 1, NULL, 0, 0);
        feed(&r, 1);
        expect_value(&r, 1, 0, t + 1, want, N0);
        /* torch.optim.SGD: d = g + wd p; buf = d on the first step, else mu buf + d;
         * p -= lr buf (g the mean of the workers' gradients) */
        for (int i = 0; i < N1; i++) {
            float d = 0.5f * (g[0][i] + g[1][i]) + wd * p[i];
            buf[i] = t == 0 ? d : mu * buf[i] + d;
            p[i] -= lr * buf[i];
        }
        send_msg(&r, 0, ORDO_MSG_PULL, 1, t + 1, NULL, 0, 0);
        feed(&r, 1);
        expect_value(&r, 0, 1, t + 1, p, N1);
    }
    nothing_more(&r);
    rig_destroy(&r);
}
END_TEST

START_TEST(a_malformed_update_rule_fails_the_start)
{
    rig_t r;
    ck_assert_int_eq(rig_make(&r, "{\"updates\": [null, {\"kind\": \"adam\"}]}", ORDO_AGG_SUM),
                     ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "plan: $.updates[1].kind: not \"sgd\" or \"average\"");
    ck_assert_int_eq(rig_make(&r, "{\"updates\": [null]}", ORDO_AGG_SUM), ORDO_ERR_PROTO);
}
END_TEST

/* ctl: a message from the scheduler's socket (any socket but the data port) */
static int ctl(rig_t *r, int type)
{
    ordo__msg_t m;
    ordo__msg_init(&m, type);
    m.sock = 99;
    m.hdr.role = ORDO_ROLE_SCHEDULER;
    if (type == ORDO_MSG_ABORT) ORDO_CK_OK(ordo__msg_add_text(&m, "a test"));
    int rc = ordo__server_handle(r->srv, &m);
    ordo__msg_close(&m);
    return rc;
}

START_TEST(scheduler_messages_end_the_run)
{
    rig_t r;
    rig_new(&r);
    ck_assert_int_eq(ctl(&r, ORDO_MSG_HEARTBEAT_ACK), 0); /* ignored */
    ck_assert_int_eq(ctl(&r, ORDO_MSG_PLAN), 0);          /* no sparse side: ignored */
    ck_assert_int_eq(ctl(&r, ORDO_MSG_SHUTDOWN), 1);
    ck_assert_int_eq(ctl(&r, ORDO_MSG_ABORT), ORDO_ERR_ABORT);
    ck_assert_int_eq(ctl(&r, ORDO_MSG_PEER_DEAD), ORDO_ERR_ABORT);
    rig_destroy(&r);
}
END_TEST


/* ---- [fault] replicas: two servers in this process, one key on both ------------------- */

typedef struct {
    ordo__server_t *srv[2];
    ordo__transport_t *stp[2];
    ordo__transport_t *ctp;
    int wsock[2][W]; /* worker w's DEALER to server s */
} rrig_t;

static void rrig_new(rrig_t *r)
{
    char ep[2][256];
    ordo__node_t node[2];
    int sock[2];
    int64_t numel[1] = {N0};
    for (int s = 0; s < 2; s++) {
        memset(&node[s], 0, sizeof node[s]);
        ORDO_CK_OK(ordo__transport_new(NULL, &node[s].tp));
        sock[s] = ordo__transport_bind(node[s].tp, "tcp://127.0.0.1:0", 1, ep[s], sizeof ep[s]);
        ck_assert_int_ge(sock[s], 0);
    }
    for (int s = 0; s < 2; s++) {
        ORDO_CK_OK(ordo__keys_partition(numel, 1, sizeof(float), 1 << 20, 0, 2, &node[s].keys));
        ORDO_CK_OK(ordo__keys_set_replicas(node[s].keys, 2));
        ck_assert_int_eq(node[s].keys->slices[0].server, 0); /* primary 0, backup 1 */
        node[s].role = ORDO_ROLE_SERVER;
        node[s].rank = s;
        node[s].n_servers = 2;
        node[s].n_workers = W;
        node[s].sched_sock = -1;
        node[s].server_endpoints = calloc(2, sizeof(char *));
        for (int i = 0; i < 2; i++)
            node[s].server_endpoints[i] = strdup(ep[i]);
        snprintf(node[s].run_dir, sizeof node[s].run_dir, "/tmp");
        r->stp[s] = node[s].tp;
        ordo__conf_t conf;
        ordo__conf_defaults(&conf);
        conf.lr = LR;
        conf.momentum = 0;
        conf.aggregate = ORDO_AGG_SUM;
        ORDO_CK_OK(ordo__server_new(&conf, &node[s], sock[s], &r->srv[s]));
    }
    ORDO_CK_OK(ordo__transport_new(NULL, &r->ctp));
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < W; w++)
            ck_assert_int_ge(r->wsock[s][w] = ordo__transport_connect(r->ctp, ep[s], 1), 0);
}

static void rrig_destroy(rrig_t *r)
{
    ordo__transport_destroy(&r->ctp, 0);
    for (int s = 0; s < 2; s++)
        ordo__server_destroy(&r->srv[s]);
}

/* rsend: worker w sends server s a message (as send_msg) */
static void rsend(rrig_t *r, int s, int w, int type, int64_t iter, const float *data,
                  uint32_t flags)
{
    ordo__msg_t m;
    ordo__msg_init(&m, type);
    m.sock = r->wsock[s][w];
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.rank = w;
    m.hdr.req = (uint64_t)(100 * w);
    m.hdr.iter = iter;
    m.hdr.flags = flags;
    if (data) {
        m.hdr.dtype = ORDO_DTYPE_F32;
        ORDO_CK_OK(ordo__msg_add_copy(&m, data, N0 * sizeof(float)));
    }
    ORDO_CK_OK(ordo__transport_send(r->ctp, &m));
}

/* rfeed: server s handles the next message it receives, which must be of type */
static void rfeed(rrig_t *r, int s, int type)
{
    ordo__msg_t m;
    ORDO_CK_OK(ordo__transport_recv(r->stp[s], &m, 5000));
    ck_assert_msg(m.hdr.type == type, "server %d got %s, expected %s", s,
                  ordo__wire_type_name(m.hdr.type), ordo__wire_type_name(type));
    ck_assert_int_eq(ordo__server_handle(r->srv[s], &m), 0);
    ordo__msg_close(&m);
}

/* rexpect: the workers' next message is of type, from server s, for iteration iter */
static void rexpect(rrig_t *r, int s, int type, int64_t iter, const float *want)
{
    ordo__msg_t m;
    ORDO_CK_OK(ordo__transport_recv(r->ctp, &m, 5000));
    ck_assert_msg(m.hdr.type == type, "got %s, expected %s", ordo__wire_type_name(m.hdr.type),
                  ordo__wire_type_name(type));
    ck_assert_int_eq(m.hdr.rank, s);
    ck_assert_int_eq(m.hdr.iter, iter);
    size_t len = 0;
    const float *d = want ? ordo__msg_data(&m, 0, &len) : NULL;
    if (want) ck_assert_uint_eq(len, N0 * sizeof(float));
    for (int i = 0; want && i < N0; i++) {
        float got;
        memcpy(&got, d + i, sizeof got);
        ck_assert_msg(got == want[i], "[%d]: %g, expected %g", i, (double)got, (double)want[i]);
    }
    ordo__msg_close(&m);
}

static void rnothing(rrig_t *r)
{
    ordo__msg_t m;
    ck_assert_int_eq(ordo__transport_recv(r->ctp, &m, 100), ORDO_ERR_TIMEDOUT);
}

START_TEST(replicas_answer_after_the_backup_and_survive_the_primary)
{
    rrig_t r;
    rrig_new(&r);
    float v[N0], g[W][N0], want[N0];
    for (int i = 0; i < N0; i++) {
        v[i] = (float)i;
        for (int w = 0; w < W; w++)
            g[w][i] = (float)(w + 1) * (0.5f + (float)i);
        want[i] = v[i] - LR * (g[0][i] + g[1][i]);
    }
    /* the initial value is visible once the backup holds it */
    rsend(&r, 0, 0, ORDO_MSG_INIT, 0, v, 0);
    rfeed(&r, 0, ORDO_MSG_INIT);
    rsend(&r, 0, 1, ORDO_MSG_PULL, 0, NULL, 0);
    rfeed(&r, 0, ORDO_MSG_PULL);
    rnothing(&r);
    rfeed(&r, 1, ORDO_MSG_REPL);
    rfeed(&r, 0, ORDO_MSG_REPL_ACK);
    rexpect(&r, 0, ORDO_MSG_PULL_RESP, 0, v);
    /* both pushes of iteration 0: the acks wait for the backup's copy of the update */
    for (int w = 0; w < W; w++) {
        rsend(&r, 0, w, ORDO_MSG_PUSH, 0, g[w], 0);
        rfeed(&r, 0, ORDO_MSG_PUSH);
    }
    rnothing(&r);
    rfeed(&r, 1, ORDO_MSG_REPL);
    /* the primary dies before the REPL_ACK arrives: the scheduler's KEYMAP makes server 1
     * the primary; the workers re-send the pushes and the pull of iteration 1 there */
    ordo__msg_t km;
    ordo__msg_init(&km, ORDO_MSG_KEYMAP);
    km.sock = 99; /* neither the data port nor a peer: the scheduler's */
    km.hdr.dtype = ORDO_DTYPE_JSON;
    ORDO_CK_OK(ordo__msg_add_text(&km, "{\"dead\":[0],\"promoted\":1}"));
    ck_assert_int_eq(ordo__server_handle(r.srv[1], &km), 0);
    ordo__msg_close(&km);
    for (int w = 0; w < W; w++) {
        rsend(&r, 1, w, ORDO_MSG_PUSH, 0, g[w], 0);
        rfeed(&r, 1, ORDO_MSG_PUSH); /* already in: acknowledged, not applied again */
        rexpect(&r, 1, ORDO_MSG_PUSH_ACK, 0, NULL);
    }
    rsend(&r, 1, 0, ORDO_MSG_PULL, 1, NULL, 0);
    rfeed(&r, 1, ORDO_MSG_PULL);
    rexpect(&r, 1, ORDO_MSG_PULL_RESP, 1, want);
    /* a fused push of iteration 1 re-sent twice counts once */
    rsend(&r, 1, 0, ORDO_MSG_PUSH, 1, g[0], ORDO_FLAG_PULL);
    rsend(&r, 1, 0, ORDO_MSG_PUSH, 1, g[0], ORDO_FLAG_PULL);
    rsend(&r, 1, 1, ORDO_MSG_PUSH, 1, g[1], ORDO_FLAG_PULL);
    rfeed(&r, 1, ORDO_MSG_PUSH);
    rfeed(&r, 1, ORDO_MSG_PUSH);
    rfeed(&r, 1, ORDO_MSG_PUSH);
    for (int i = 0; i < N0; i++)
        want[i] -= LR * (g[0][i] + g[1][i]);
    for (int k = 0; k < 3; k++)
        rexpect(&r, 1, ORDO_MSG_PULL_RESP, 2, want);
    rnothing(&r);
    rrig_destroy(&r);
}
END_TEST

static Suite *server_suite(void)
{
    Suite *s = suite_create("server");
    TCase *tc = tcase_create("values");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, pulls_answer_the_summed_update);
    tcase_add_test(tc, replicas_answer_after_the_backup_and_survive_the_primary);
    tcase_add_test(tc, declared_update_rules_apply_per_key);
    tcase_add_test(tc, a_malformed_update_rule_fails_the_start);
    suite_add_tcase(s, tc);
    tc = tcase_create("bad input");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, bad_messages_are_answered_counted_and_dropped);
    suite_add_tcase(s, tc);
    tc = tcase_create("control");
    tcase_add_test(tc, scheduler_messages_end_the_run);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(server_suite)
