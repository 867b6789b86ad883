/* ordo-server: holds a shard of the parameters, sums the W workers' pushes of each
 * iteration, applies the optimizer and answers pulls once the value for the requested
 * iteration is ready, handing ready responses to the network through the enforcement
 * module in the plan's priority order. Malformed or out-of-place messages are logged and
 * dropped (with an ERROR answer when the sender can be told); they never stop the server. */
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node.h"
#include "common/transport.h"
#include "common/trace.h"
#include "server/ckpt.h"
#include "server/enforce.h"
#include "server/groups.h"
#include "server/sparse_srv.h"
#include "server/store.h"
#include "core/paramfile.h"

#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_ABORT 3

/* the link counts as free once what it was given ends within this time, so the next
 * response is handed over before the link falls idle (the loop wakes with millisecond
 * timeouts, later on a busy machine); a later higher-priority response can still overtake
 * all but this much */
#define GREEDY_LOOKAHEAD_NS 5000000

typedef struct {
    int worker;
    int64_t iter;
    uint64_t req;
    uint8_t rid[ORDO_WIRE_MAX_RID];
    size_t rid_len;
} waiter_t;

typedef struct {
    waiter_t *w;
    int n, cap;
} waitlist_t;

typedef struct {
    ordo_conf_t conf;
    ordo_node_t node;
    int data_sock;
    ordo_store_t *store;
    ordo_groups_t *groups;     /* checks merged pushes */
    ordo_sparse_srv_t *sparse; /* [push] mode = sparse: the plan's sparse member */
    ordo_enforce_t *enforce;
    waitlist_t *waiting; /* per slice */
    int *prio;           /* plan priority per slice (for response headers) */
    uint64_t n_push, n_pull, n_dropped;
    int64_t link_end_ns; /* when the emulated link finishes what was released so far */
    uint64_t n_released;
    ordo_trace_t *trace; /* [output] trace: one event per released response */
    char **names;        /* parameter name per key, from the plan (NULL: "key K") */
    float *probe_sum;    /* calibration pushes are summed here ([push] calibrate) */
    size_t probe_cap;    /* its floats */
    uint64_t n_probe;
    ordo_srv_ckpt_t *ckpt; /* [fault] checkpoint_every: the momentum's part (server/ckpt.h) */
} server_t;

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

/* answer_init makes a message of the given type addressed back to m's sender, carrying
 * m's request id, key, chunk and iteration */
static void answer_init(server_t *s, const ordo_msg_t *m, int type, ordo_msg_t *a)
{
    ordo_msg_init(a, type);
    a->sock = s->data_sock;
    memcpy(a->rid, m->rid, m->rid_len);
    a->rid_len = m->rid_len;
    a->hdr.role = ORDO_ROLE_SERVER;
    a->hdr.rank = s->node.rank;
    a->hdr.req = m->hdr.req;
    a->hdr.key = m->hdr.key;
    a->hdr.chunk = m->hdr.chunk;
    a->hdr.iter = m->hdr.iter;
}

/* send_ack acknowledges push m to its sender (the worker frees its buffer on it) */
static void send_ack(server_t *s, const ordo_msg_t *m, uint32_t flags)
{
    ordo_msg_t ack;
    answer_init(s, m, ORDO_MSG_PUSH_ACK, &ack);
    ack.hdr.flags = flags;
    ordo_transport_send(s->node.tp, &ack);
}

static void answer_error(server_t *s, const ordo_msg_t *m, const char *why)
{
    s->n_dropped++;
    ORDO_WARN("dropped %s (key %u chunk %u iter %lld) from %s %d: %s",
              ordo_wire_type_name(m->hdr.type), m->hdr.key, m->hdr.chunk, (long long)m->hdr.iter,
              ordo_wire_role_name(m->hdr.role), m->hdr.rank, why);
    ordo_msg_t e;
    answer_init(s, m, ORDO_MSG_ERROR, &e);
    ordo_msg_add_text(&e, why);
    ordo_transport_send(s->node.tp, &e);
}

/* a pull that can be answered now becomes a response held by the enforcement module */
static void make_ready(server_t *s, int slice, const waiter_t *w)
{
    const ordo_slice_t *sl = &s->node.keys->slices[slice];
    ordo_msg_t r;
    ordo_msg_init(&r, ORDO_MSG_PULL_RESP);
    r.sock = s->data_sock;
    memcpy(r.rid, w->rid, w->rid_len);
    r.rid_len = w->rid_len;
    r.hdr.role = ORDO_ROLE_SERVER;
    r.hdr.rank = s->node.rank;
    r.hdr.req = w->req;
    r.hdr.iter = w->iter;
    r.hdr.key = sl->key;
    r.hdr.chunk = sl->chunk;
    r.hdr.priority = s->prio ? s->prio[slice] : 0;
    r.hdr.dtype = ORDO_DTYPE_F32;
    void *data, *hint;
    size_t bytes;
    ordo_store_ref(s->store, slice, &data, &bytes, &hint);
    if (ordo_msg_add_ref(&r, data, bytes, ordo_store_unref_cb, hint) != 0) {
        ordo_store_unref_cb(data, hint);
        ORDO_ERROR("out of memory answering a pull");
        return;
    }
    int rc = ordo_enforce_add(s->enforce, w->worker, w->iter, slice, &r);
    if (rc) {
        ORDO_ERROR("enforce: %s", ordo_error_text(rc));
        ordo_msg_close(&r);
    }
}

static void wake_waiters(server_t *s, int slice)
{
    waitlist_t *wl = &s->waiting[slice];
    int64_t v = ordo_store_version(s->store, slice);
    int keep = 0;
    for (int i = 0; i < wl->n; i++) {
        if (wl->w[i].iter == v)
            make_ready(s, slice, &wl->w[i]);
        else
            wl->w[keep++] = wl->w[i];
    }
    wl->n = keep;
}

static int slice_of(server_t *s, const ordo_msg_t *m, char *why, size_t size)
{
    int slice = ordo_keys_slice(s->node.keys, m->hdr.key, m->hdr.chunk);
    if (slice < 0) {
        snprintf(why, size, "no key %u chunk %u", m->hdr.key, m->hdr.chunk);
        return -1;
    }
    if (!ordo_store_owns(s->store, slice)) {
        snprintf(why, size, "key %u chunk %u lives on server %d", m->hdr.key, m->hdr.chunk,
                 s->node.keys->slices[slice].server);
        return -1;
    }
    return slice;
}

/* a merged push ([push] mode = merged, server/groups.h): several slices in one message,
 * checked as a whole, then added to the store from the received frame (no copy); one ack */
static void on_group_push(server_t *s, ordo_msg_t *m)
{
    size_t len = 0, ilen = 0;
    int n, rc, worker = m->hdr.rank;
    const void *index = ordo_msg_data(m, 1, &ilen);
    if (!ordo_msg_data(m, 0, &len) || m->nframes != 2 || m->hdr.dtype != ORDO_DTYPE_F32) {
        answer_error(s, m, "a merged PUSH needs a float32 payload frame and an index frame");
        return;
    }
    if ((rc = ordo_groups_split(s->groups, index, ilen, len, &n)) != 0) {
        answer_error(s, m, ordo_error_text(rc));
        return;
    }
    const ordo_slice_t *slices = s->node.keys->slices;
    for (int i = 0; i < n; i++) {
        int sl = ordo_groups_slice(s->groups, i);
        rc = ordo_store_check_push(s->store, sl, worker, m->hdr.iter,
                                   (size_t)slices[sl].numel * sizeof(float));
        if (rc) {
            answer_error(s, m, ordo_error_text(rc));
            return;
        }
    }
    ordo_store_frame_t *f = ordo_store_frame_wrap(&m->frames[0]);
    if (!f) {
        ORDO_ERROR("out of memory taking a merged push");
        return;
    }
    const char *base = ordo_store_frame_data(f, &len);
    for (int i = 0; i < n; i++) {
        int sl = ordo_groups_slice(s->groups, i);
        bool updated;
        rc = ordo_store_push_ref(s->store, sl, worker, m->hdr.iter,
                                 (const float *)(base + ordo_groups_offset(s->groups, i)),
                                 (size_t)slices[sl].numel * sizeof(float), f, &updated);
        if (rc) ORDO_ERROR("merged push, slice %d: %s", sl, ordo_error_text(rc));
        if (!rc && updated) ordo_srv_ckpt_updated(s->ckpt, sl);
    }
    ordo_store_frame_unref(f);
    s->n_push++;
    send_ack(s, m, ORDO_FLAG_GROUP);
    for (int i = 0; i < n; i++) { /* the slices this push completed answer their pulls */
        int sl = ordo_groups_slice(s->groups, i);
        if (ordo_store_version(s->store, sl) == m->hdr.iter + 1) wake_waiters(s, sl);
    }
}

/* a calibration push ([push] calibrate = true, ORDO_FLAG_PROBE): its floats are added to
 * scratch memory, as a push's are to its key's sum, and it is acknowledged; no value changes */
static void on_probe(server_t *s, ordo_msg_t *m)
{
    char why[160];
    size_t len = 0;
    const char *data = ordo_msg_data(m, 0, &len);
    if (!data || m->nframes != 1 || m->hdr.dtype != ORDO_DTYPE_F32 || len % sizeof(float) ||
        (m->hdr.flags & (ORDO_FLAG_GROUP | ORDO_FLAG_PULL))) {
        answer_error(s, m, "a probe PUSH needs one float32 payload frame and no group or pull "
                           "flag");
        return;
    }
    if (len > ORDO_PROBE_MAX_BYTES) {
        snprintf(why, sizeof why, "a probe of %zu bytes is larger than the %u a server takes", len,
                 ORDO_PROBE_MAX_BYTES);
        answer_error(s, m, why);
        return;
    }
    size_t n = len / sizeof(float);
    if (n > s->probe_cap) {
        float *p = realloc(s->probe_sum, n * sizeof *p);
        if (!p) {
            answer_error(s, m, "out of memory for a probe");
            return;
        }
        memset(p + s->probe_cap, 0, (n - s->probe_cap) * sizeof *p);
        s->probe_sum = p;
        s->probe_cap = n;
    }
    for (size_t i = 0; i < n; i++) { /* the frame may sit unaligned in ZeroMQ's buffer */
        float g;
        memcpy(&g, data + i * sizeof g, sizeof g);
        s->probe_sum[i] += g;
    }
    s->n_probe++;
    send_ack(s, m, ORDO_FLAG_PROBE);
}

/* ", N calibration probes" for the shutdown line when there were any, else "" */
static const char *probes_note(const server_t *s, char *buf, size_t size)
{
    if (!s->n_probe) return "";
    snprintf(buf, size, ", %llu calibration probes", (unsigned long long)s->n_probe);
    return buf;
}

/* a pull of slice's value of iteration iter for m's sender: answered now if the value is
 * there, else when the pushes of iter - 1 are in */
static void add_pull(server_t *s, const ordo_msg_t *m, int slice, int64_t iter)
{
    char why[128];
    int64_t v = ordo_store_version(s->store, slice);
    if (iter < 0 || (v >= 0 && iter < v)) {
        snprintf(why, sizeof why, "pull of iteration %lld, the value is at %lld", (long long)iter,
                 (long long)v);
        answer_error(s, m, why);
        return;
    }
    s->n_pull++;
    waiter_t w = {.worker = m->hdr.rank, .iter = iter, .req = m->hdr.req, .rid_len = m->rid_len};
    memcpy(w.rid, m->rid, m->rid_len);
    if (v == iter) {
        make_ready(s, slice, &w);
        return;
    }
    waitlist_t *wl = &s->waiting[slice];
    if (wl->n >= 4 * s->node.n_workers) {
        answer_error(s, m, "too many pulls waiting for this slice");
        return;
    }
    if (wl->n == wl->cap) {
        int cap = wl->cap ? wl->cap * 2 : 4;
        waiter_t *p = realloc(wl->w, sizeof *p * (size_t)cap);
        if (!p) {
            answer_error(s, m, "out of memory");
            return;
        }
        wl->w = p;
        wl->cap = cap;
    }
    wl->w[wl->n++] = w;
}

static void on_data(server_t *s, ordo_msg_t *m)
{
    char why[256];
    if (s->sparse && m->hdr.key == ORDO_SPARSE_KEY) { /* server/sparse_srv.h */
        ordo_sparse_srv_on_data(s->sparse, m);
        return;
    }
    if (m->hdr.role != ORDO_ROLE_WORKER || m->hdr.rank < 0 || m->hdr.rank >= s->node.n_workers) {
        answer_error(s, m, "sender is not a worker of this cluster");
        return;
    }
    if (m->hdr.type == ORDO_MSG_HELLO) return;
    if (m->hdr.type == ORDO_MSG_PUSH && (m->hdr.flags & ORDO_FLAG_PROBE)) {
        on_probe(s, m);
        return;
    }
    if (m->hdr.type == ORDO_MSG_PUSH && (m->hdr.flags & ORDO_FLAG_GROUP)) {
        if (m->hdr.flags & ORDO_FLAG_PULL) {
            answer_error(s, m, "a merged PUSH cannot carry a pull");
            return;
        }
        on_group_push(s, m);
        return;
    }
    int slice = slice_of(s, m, why, sizeof why);
    if (slice < 0) {
        answer_error(s, m, why);
        return;
    }
    size_t len = 0;
    void *data = ordo_msg_data(m, 0, &len);
    switch (m->hdr.type) {
    case ORDO_MSG_INIT: {
        bool ignored;
        if (!data || m->nframes != 1) {
            answer_error(s, m, "INIT needs one payload frame");
            return;
        }
        int rc = ordo_store_init(s->store, slice, data, len, &ignored);
        if (rc)
            answer_error(s, m, ordo_error_text(rc));
        else if (!ignored)
            wake_waiters(s, slice);
        return;
    }
    case ORDO_MSG_PUSH: {
        bool updated;
        if (!data || m->nframes != 1 || m->hdr.dtype != ORDO_DTYPE_F32) {
            answer_error(s, m, "PUSH needs one float32 payload frame");
            return;
        }
        int rc = ordo_store_push_frame(s->store, slice, m->hdr.rank, m->hdr.iter, &m->frames[0],
                                       &updated);
        if (rc) {
            answer_error(s, m, ordo_error_text(rc));
            return;
        }
        s->n_push++;
        if (updated) ordo_srv_ckpt_updated(s->ckpt, slice);
        bool fused = m->hdr.flags & ORDO_FLAG_PULL; /* the answer to its pull acknowledges it */
        if (!fused) send_ack(s, m, 0);
        if (updated) wake_waiters(s, slice);
        if (fused) add_pull(s, m, slice, m->hdr.iter + 1);
        return;
    }
    case ORDO_MSG_PULL:
        add_pull(s, m, slice, m->hdr.iter);
        return;
    default:
        answer_error(s, m, "unexpected message type on the data port");
    }
}

/* record a release: on track 0 the response's time on the (emulated) link, on track 1 how
 * long the enforcement module held it */
static void trace_release(server_t *s, const ordo_enforce_release_t *r, int64_t now, int64_t start,
                          int64_t end)
{
    const ordo_slice_t *sl = &s->node.keys->slices[r->slice];
    char name[300], args[640];
    if (s->names && s->names[sl->key])
        snprintf(name, sizeof name, "%s", s->names[sl->key]);
    else
        snprintf(name, sizeof name, "key %u", sl->key);
    if (s->node.keys->n_chunks[sl->key] > 1)
        snprintf(name + strlen(name), sizeof name - strlen(name), " [%u]", sl->chunk);
    snprintf(args, sizeof args,
             "{\"seq\":%llu,\"worker\":%d,\"iter\":%lld,\"key\":%u,\"chunk\":%u,"
             "\"priority\":%d,\"norm\":%d,\"counter\":%lld,\"held\":%d,"
             "\"bytes\":%lld,\"t_ready_ns\":%lld,\"t_release_ns\":%lld,"
             "\"link_start_ns\":%lld,\"link_end_ns\":%lld}",
             (unsigned long long)s->n_released, r->worker, (long long)r->iter, sl->key, sl->chunk,
             s->prio ? s->prio[r->slice] : 0, r->norm, (long long)r->counter, r->held,
             (long long)sl->numel * 4, (long long)r->ready_ns, (long long)now, (long long)start,
             (long long)end);
    ordo_trace_complete(s->trace, name, "release", 0, start, end - start, args);
    if (now - r->ready_ns >= 1000) {
        snprintf(args, sizeof args, "{\"worker\":%d,\"iter\":%lld,\"norm\":%d}", r->worker,
                 (long long)r->iter, r->norm);
        ordo_trace_complete(s->trace, name, "enforce_wait", 1, r->ready_ns, now - r->ready_ns,
                            args);
    }
}

static void release(server_t *s)
{
    ordo_msg_t r;
    ordo_enforce_release_t info;
    double bps = s->conf.bandwidth_bps;
    for (;;) {
        int64_t now = ordo_clock_ns();
        /* the transport's own figure, or ours when it has not seen the last send yet */
        int64_t busy = ordo_transport_link_free_ns(s->node.tp);
        if (busy < s->link_end_ns) busy = s->link_end_ns;
        bool link_free = bps <= 0 || busy - now <= GREEDY_LOOKAHEAD_NS;
        if (ordo_enforce_next(s->enforce, link_free, &r, &info) != 0) break;
        /* the link model of the transport: header and framing count 64 bytes */
        size_t bytes = 64;
        for (int i = 0; i < r.nframes; i++)
            bytes += zmq_msg_size(&r.frames[i]);
        int64_t start = busy > now ? busy : now;
        int64_t end = bps > 0 ? start + (int64_t)((double)bytes * 8e9 / bps) : start;
        if (bps > 0) s->link_end_ns = end;
        if (s->trace) trace_release(s, &info, now, start, end);
        s->n_released++;
        ordo_transport_send(s->node.tp, &r);
    }
}

/* plan priorities per slice (chunks share their key's priority), normalized for us */
static int setup_enforcement(server_t *s)
{
    const ordo_keys_t *k = s->node.keys;
    int mode = ORDO_ENFORCE_MODE_FIFO, round = 0;
    int *norm = NULL, *srv = NULL;
    json_t *plan = s->node.plan_json ? json_loads(s->node.plan_json, 0, NULL) : NULL;
    json_t *pr = plan ? json_object_get(plan, "priorities") : NULL;
    json_t *names = plan ? json_object_get(plan, "params") : NULL;
    for (int i = 0; i < k->n_slices; i++)
        round += k->slices[i].server == s->node.rank;
    if (json_is_array(names) && (int)json_array_size(names) == k->n_keys) {
        s->names = calloc((size_t)k->n_keys, sizeof *s->names);
        for (int i = 0; s->names && i < k->n_keys; i++) {
            const char *n = json_string_value(json_array_get(names, (size_t)i));
            s->names[i] = n ? strdup(n) : NULL;
        }
    }
    if (json_is_array(pr) && (int)json_array_size(pr) == k->n_keys) {
        mode = s->conf.enforce;
        s->prio = malloc(sizeof *s->prio * (size_t)k->n_slices);
        norm = malloc(sizeof *norm * (size_t)k->n_slices);
        srv = malloc(sizeof *srv * (size_t)k->n_slices);
        for (int i = 0; i < k->n_slices; i++) {
            json_t *p = json_array_get(pr, k->slices[i].key);
            s->prio[i] = json_is_integer(p) ? (int)json_integer_value(p) : 0;
            srv[i] = k->slices[i].server;
        }
        ordo_enforce_normalize(s->prio, srv, k->n_slices, s->node.rank, norm);
    }
    json_decref(plan);
    int rc = ordo_enforce_new(mode, s->node.n_workers, k->n_slices, norm, round, &s->enforce);
    if (!rc) rc = ordo_enforce_set_share(s->enforce, s->conf.share);
    free(norm);
    free(srv);
    ORDO_INFO("enforcement: %s, %s share of the link",
              mode == ORDO_ENFORCE_MODE_FIFO ? "fifo (no priority plan)"
              : mode == ORDO_ENFORCE_STRICT  ? "strict"
                                             : "greedy",
              s->conf.share == ORDO_SHARE_SERIAL ? "serial" : "fair");
    return rc;
}

/* [fault] resume: the momentum from the run folder's checkpoint (the values come from worker
 * 0); [fault] checkpoint_every: this server's part of each checkpoint, counted from there */
static int setup_checkpoints(server_t *s)
{
    int64_t base = 0;
    int rc = 0;
    if (s->conf.resume[0]) {
        char path[ORDO_CONF_PATH + 32];
        snprintf(path, sizeof path, "%s/checkpoint.bin", s->conf.resume);
        rc = ordo_paramfile_read_iteration(path, &base);
        if (!rc)
            rc = ordo_srv_ckpt_load(s->store, s->node.keys, s->node.rank, s->conf.resume, base);
        if (rc) return ordo_error_context(rc, "fault.resume");
    }
    return ordo_srv_ckpt_new(s->store, s->node.keys, s->node.rank, s->conf.checkpoint_every, base,
                             s->node.run_dir, &s->ckpt);
}

int main(int argc, char **argv)
{
    server_t s = {0};
    int rc = ordo_conf_cli(&s.conf, argc, argv, "ordo-server", "-c CONF [--section.key=VALUE ...]");
    if (rc) return rc > 0 ? 0 : 2;
    ordo_log_level_t lvl;
    ordo_log_parse_level(s.conf.log_level, &lvl);
    ordo_log_set_level(lvl);
    ordo_log_set_role("server", -1);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    ordo_transport_keep_buffers();

    ordo_transport_opts_t opts = {.bandwidth_bps = s.conf.bandwidth_bps,
                                  .latency_us = s.conf.latency_us,
                                  .msg_us = s.conf.msg_us,
                                  .role = ORDO_ROLE_SERVER,
                                  .rank = -1,
                                  .inline_io = !s.conf.io_thread};
    if ((rc = ordo_transport_new(&opts, &s.node.tp)) != 0) goto fail;
    char want[300], actual[300];
    snprintf(want, sizeof want, "tcp://%s:%d", s.conf.host, s.conf.port);
    rc = ordo_transport_bind(s.node.tp, want, 1, actual, sizeof actual);
    if (rc < 0) goto fail;
    s.data_sock = rc;
    printf("READY %s\n", actual); /* listening; the WELCOME comes once everyone registered */
    fflush(stdout);
    if ((rc = ordo_node_join(&s.node, &s.conf, ORDO_ROLE_SERVER, actual)) != 0) goto fail;
    ordo_log_set_role("server", s.node.rank);
    ordo_optim_t opt = {.lr = (float)s.conf.lr,
                        .momentum = (float)s.conf.momentum,
                        .weight_decay = (float)s.conf.weight_decay};
    float scale = s.conf.aggregate == ORDO_AGG_MEAN ? 1.0f / (float)s.node.n_workers : 1.0f;
    if ((rc = ordo_store_new(s.node.keys, s.node.rank, s.node.n_workers, &opt, scale, &s.store)))
        goto fail;
    if ((rc = ordo_groups_new(s.node.keys, s.node.rank, &s.groups)) != 0) goto fail;
    if ((rc = setup_checkpoints(&s)) != 0) goto fail;
    if ((rc = ordo_sparse_srv_new(&s.node, &s.conf, s.data_sock, &s.sparse)) != 0) goto fail;
    s.waiting = calloc((size_t)s.node.keys->n_slices, sizeof *s.waiting);
    if ((rc = setup_enforcement(&s)) != 0) goto fail;
    if (s.conf.trace) {
        char name[64];
        snprintf(name, sizeof name, "server %d", s.node.rank);
        if ((rc = ordo_trace_new(name, 100 + s.node.rank, &s.trace)) != 0) goto fail;
        ordo_trace_name_track(s.trace, 0, "released pull responses (on the link)");
        ordo_trace_name_track(s.trace, 1, "enforcement waits");
    }
    ORDO_INFO("serving %.1f MiB on %s", (double)ordo_store_bytes(s.store) / 1048576.0, actual);

    int code = 0;
    ordo_msg_t early;
    while (ordo_node_take_early(&s.node, &early) == 0) {
        on_data(&s, &early);
        ordo_msg_close(&early);
    }
    release(&s);
    for (;;) {
        if (stop_signal) {
            ORDO_WARN("interrupted");
            code = EXIT_ABORT;
            break;
        }
        int timeout = s.conf.heartbeat_ms;
        if (ordo_enforce_pending(s.enforce) && s.conf.bandwidth_bps > 0) {
            int64_t busy = ordo_transport_link_free_ns(s.node.tp);
            if (busy < s.link_end_ns) busy = s.link_end_ns;
            int64_t wait = busy - GREEDY_LOOKAHEAD_NS - ordo_clock_ns();
            timeout = wait <= 0 ? 0 : (int)(wait / 1000000) + 1;
            if (timeout > s.conf.heartbeat_ms) timeout = s.conf.heartbeat_ms;
        }
        ordo_msg_t m;
        rc = ordo_transport_recv(s.node.tp, &m, timeout);
        if (rc == 0) {
            char buf[512];
            bool stop = false;
            if (m.sock == s.data_sock) {
                on_data(&s, &m);
            } else if (m.hdr.type == ORDO_MSG_PLAN && s.sparse) {
                ordo_sparse_srv_on_ctl(s.sparse, &m);
            } else if (m.hdr.type == ORDO_MSG_SHUTDOWN) {
                ORDO_INFO("shutdown: %llu pushes, %llu pulls, %llu dropped%s",
                          (unsigned long long)s.n_push, (unsigned long long)s.n_pull,
                          (unsigned long long)s.n_dropped, probes_note(&s, buf, sizeof buf));
                stop = true;
            } else if (m.hdr.type == ORDO_MSG_ABORT) {
                ORDO_ERROR("run aborted by the scheduler: %s",
                           ordo_msg_text(&m, 0, buf, sizeof buf));
                code = EXIT_ABORT;
                stop = true;
            } else if (m.hdr.type == ORDO_MSG_PEER_DEAD) {
                ORDO_ERROR("the scheduler is silent for %lld ms: giving up", (long long)m.hdr.iter);
                code = EXIT_ABORT;
                stop = true;
            }
            ordo_msg_close(&m);
            if (stop) break;
        }
        release(&s);
    }
    if (s.trace) {
        char path[ORDO_CONF_PATH + 64];
        snprintf(path, sizeof path, "%s/trace-server-%d.json", s.node.run_dir, s.node.rank);
        if ((rc = ordo_trace_write(s.trace, path)) != 0) ORDO_ERROR("%s", ordo_error_text(rc));
    }
    ordo_trace_destroy(&s.trace);
    if (s.names)
        for (int i = 0; i < s.node.keys->n_keys; i++)
            free(s.names[i]);
    free(s.names);
    free(s.probe_sum);
    ordo_enforce_destroy(&s.enforce);
    ordo_transport_destroy(&s.node.tp, code ? 0 : 1000);
    if (s.waiting)
        for (int i = 0; i < s.node.keys->n_slices; i++)
            free(s.waiting[i].w);
    free(s.waiting);
    free(s.prio);
    ordo_groups_destroy(&s.groups);
    ordo_sparse_srv_destroy(&s.sparse);
    ordo_srv_ckpt_destroy(&s.ckpt);
    ordo_store_destroy(&s.store);
    ordo_node_fini(&s.node);
    return code;
fail:
    fprintf(stderr, "ordo-server: %s\n", ordo_error_text(rc));
    if (s.node.keys && rc != ORDO_EABORT && rc != ORDO_EPEERDEAD) {
        /* joined: the scheduler ends the run with the reason instead of waiting for a timeout */
        char why[600];
        snprintf(why, sizeof why, "server %d: %s", s.node.rank, ordo_error_text(rc));
        ordo_msg_t a;
        ordo_msg_init(&a, ORDO_MSG_ABORT);
        ordo_msg_add_text(&a, why);
        ordo_node_send_ctl(&s.node, &a);
    }
    ordo_srv_ckpt_destroy(&s.ckpt);
    ordo_store_destroy(&s.store);
    ordo_transport_destroy(&s.node.tp, s.node.keys ? 500 : 0);
    ordo_node_fini(&s.node);
    return rc == ORDO_EABORT || rc == ORDO_EPEERDEAD ? EXIT_ABORT : 1;
}
