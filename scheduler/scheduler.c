/* scheduler: the scheduler daemon as a library object. It plans the run before anyone
 * registers, then does the rendezvous (nodes register with role, endpoint and the cluster
 * token; once the conf's numbers of servers and workers are in, each gets a rank, the
 * cluster map, the key map and the plan; with [model] trainer = declared the model, key map
 * and plan are made then, from the workers' declarations), gathers barriers, relays
 * broadcasts, records every worker's per-iteration stats, plans merge groups from worker 0's
 * calibration, relays the sparse coordinator's messages and, when every worker is done,
 * shuts the cluster down and writes summary.json. A node silent for fault.timeout_ms aborts
 * the run: every node is told. */
#include "scheduler/scheduler.h"
#include "common/clock.h"
#include "common/daemon.h"
#include "common/error.h"
#include "common/keys.h"
#include "common/le.h"
#include "common/log.h"
#include "common/node_rejoin.h"
#include "common/transport.h"
#include "core/job.h"
#include "planner/oracle.h"
#include "scheduler/batches.h"
#include "scheduler/declared.h"
#include "scheduler/replan.h"
#include "scheduler/replicas.h"
#include "scheduler/runlog.h"
#include "scheduler/runplan.h"
#include "scheduler/runplan_intra.h"
#include "scheduler/runplan_step.h"
#include "scheduler/runplan_merge.h"
#include "scheduler/sparse_coord.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scheduler/scheduler_internal.h"

static void broadcast(sched_t *s, int type, const char *text)
{
    for (int i = 0; i < s->n_members; i++)
        if (!s->members[i].dead && !s->members[i].gone)
            ordo__sched_reply(s, s->members[i].rid, s->members[i].rid_len, type, text);
}

static member_t *find_member(sched_t *s, const ordo__msg_t *m)
{
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].rid_len == m->rid_len &&
            memcmp(s->members[i].rid, m->rid, m->rid_len) == 0)
            return &s->members[i];
    return NULL;
}

/* find_beat: the member whose heartbeat thread sent HEARTBEAT m (by the id its REGISTER
 * announced); its socket is remembered for probes */
static member_t *find_beat(sched_t *s, const ordo__msg_t *m)
{
    if (m->hdr.type != ORDO_MSG_HEARTBEAT || m->hdr.req == 0) return NULL;
    for (int i = 0; i < s->n_members; i++) {
        member_t *mb = &s->members[i];
        if (mb->beat != m->hdr.req) continue;
        memcpy(mb->hb_rid, m->rid, m->rid_len);
        mb->hb_rid_len = m->rid_len;
        return mb;
    }
    return NULL;
}



/* ---- registration ------------------------------------------------------------------- */

static void assign_ranks(sched_t *s, int role, int count)
{
    bool *taken = calloc((size_t)count, 1);
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role == role && m->want_rank >= 0 && m->want_rank < count && !taken[m->want_rank]) {
            m->rank = m->want_rank;
            taken[m->rank] = true;
        }
    }
    int next = 0;
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role != role || m->rank >= 0) continue;
        while (taken[next])
            next++;
        m->rank = next;
        taken[next] = true;
    }
    free(taken);
}

static int plan_model(sched_t *s);
static void sparse_send(void *ctx, int role, int sub, int64_t iter, const void *payload, size_t len);
static int declared_model(sched_t *s, char *why, size_t wsz);

char *ordo__sched_welcome_text(sched_t *s, const member_t *m, int64_t rejoin)
{
    json_t *servers = json_array();
    for (int r = 0; r < s->conf.servers; r++)
        for (int i = 0; i < s->n_members; i++)
            if (s->members[i].role == ORDO_ROLE_SERVER && s->members[i].rank == r)
                json_array_append_new(servers, json_string(s->members[i].endpoint));
    char *keys_text = ordo__keys_to_json(s->keys);
    json_t *keys = keys_text ? json_loads(keys_text, 0, NULL) : NULL;
    free(keys_text);
    json_t *w = json_object();
    json_object_set_new(w, "rank", json_integer(m->rank));
    json_object_set_new(w, "servers", servers);
    json_object_set_new(w, "workers", json_integer(s->conf.workers));
    json_object_set_new(w, "keys", keys);
    json_object_set_new(w, "run_dir", json_string(s->run_dir));
    if (s->plan) json_object_set(w, "plan", s->plan);
    if (rejoin >= 0) json_object_set_new(w, "rejoin", json_integer(rejoin));
    if (s->generation > 0) json_object_set_new(w, "generation", json_integer(s->generation));
    char *text = json_dumps(w, JSON_COMPACT);
    json_decref(w);
    return text;
}

static void summarize_step(sched_t *s);

/* intra_check: intra.backend = auto needs one backend per group (scheduler/runplan_intra.h);
 * a run whose groups disagree is refused before anyone starts */
static int intra_check(sched_t *s)
{
    const char **choice = calloc((size_t)s->conf.workers, sizeof *choice);
    if (!choice) return ordo__sched_abort_run(s, "out of memory");
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role == ORDO_ROLE_WORKER && m->rank >= 0 && m->rank < s->conf.workers)
            choice[m->rank] = m->intra[0] ? m->intra : NULL;
    }
    int rc = ordo__runplan_intra_check(&s->conf, s->plan, choice, s->conf.workers);
    free(choice);
    return rc ? ordo__sched_abort_run(s, ordo__error_text(rc)) : 0;
}

/* compression_check: every worker pushes with the same [push] compression (the wire types
 * of the tensors it declares are checked with the declarations), or the run is refused
 * naming two that differ */
static int compression_check(sched_t *s)
{
    const member_t *first = NULL;
    for (int i = 0; i < s->n_members; i++) {
        const member_t *m = &s->members[i];
        if (m->role != ORDO_ROLE_WORKER || !m->compression[0]) continue;
        if (!first || m->rank < first->rank) first = m;
    }
    for (int i = 0; first && i < s->n_members; i++) {
        const member_t *m = &s->members[i];
        if (m->role != ORDO_ROLE_WORKER || !m->compression[0] ||
            !strcmp(m->compression, first->compression))
            continue;
        char why[400];
        snprintf(why, sizeof why,
                 "the workers disagree on push.compression: worker %d has %s, worker %d %s",
                 m->rank, m->compression, first->rank, first->compression);
        return ordo__sched_abort_run(s, why);
    }
    return 0;
}

/* plan_digest: the digest of the key map and plan every WELCOME carries */
static uint64_t plan_digest(const sched_t *s)
{
    char *keys_text = ordo__keys_to_json(s->keys);
    json_t *w = json_object();
    json_object_set_new(w, "keys", keys_text ? json_loads(keys_text, 0, NULL) : json_null());
    free(keys_text);
    if (s->plan) json_object_set(w, "plan", s->plan);
    uint64_t d = ordo__node_plan_digest(w);
    json_decref(w);
    return d;
}

int ordo__sched_plan_declared(sched_t *s)
{
    char why[700];
    why[0] = '\0';
    int rc = declared_model(s, why, sizeof why);
    if (!rc && (rc = plan_model(s)) != 0)
        snprintf(why, sizeof why, "cannot plan the run of the declared tensors: %s",
                 ordo__error_text(rc));
    if (rc) return ordo__sched_abort_run(s, why[0] ? why : ordo__error_text(rc));
    summarize_step(s);
    ordo__runplan_merge_take_file(s->plan, s->run_dir);
    ordo__replan_set_declared(s->replan, s->model);
    if (json_object_get(s->plan, "step"))
        ordo__replan_set_slice(s->replan, ordo__runplan_step_slice(&s->conf, s->plan));
    ordo__sched_restart_plan(s);
    s->plan_digest = plan_digest(s);
    ORDO_INFO("model declared by the workers: %d tensors, %.1f MiB", s->model->n_params,
              (double)ordo__model_total_bytes(s->model) / 1048576.0);
    return 0;
}

static int send_welcome(sched_t *s)
{
    assign_ranks(s, ORDO_ROLE_SERVER, s->conf.servers);
    assign_ranks(s, ORDO_ROLE_WORKER, s->conf.workers);
    if (s->declared) {
        int rc = ordo__sched_plan_declared(s);
        if (rc) return rc;
    }
    int rc = intra_check(s);
    if (!rc) rc = compression_check(s);
    if (rc) return rc;
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        char *text = ordo__sched_welcome_text(s, m, -1);
        if (!text) return ordo__sched_abort_run(s, "out of memory for the WELCOME");
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_WELCOME, text);
        free(text);
        m->last_seen_ns = ordo__clock_ns();
        char name[320];
        ORDO_DEBUG("welcomed %s", ordo__sched_member_name(m, name, sizeof name));
    }
    s->welcomed = true;
    ORDO_INFO("cluster complete: %d servers, %d workers, %d keys in %d slices; run folder %s",
              s->conf.servers, s->conf.workers, s->keys->n_keys, s->keys->n_slices, s->run_dir);
    return 0;
}

static int handle(sched_t *s, ordo__msg_t *m);

/* on_register takes a REGISTER: 0, 1 when a restarted run's workers were all done, or
 * ORDO_ERR_ABORT */
static int on_register(sched_t *s, ordo__msg_t *m)
{
    int out = 0;
    size_t len = 0;
    const char *body = ordo__msg_data(m, 0, &len);
    json_t *o = body ? json_loadb(body, len, 0, NULL) : NULL;
    const char *role = json_string_value(json_object_get(o, "role"));
    const char *token = json_string_value(json_object_get(o, "token"));
    const char *ep = json_string_value(json_object_get(o, "endpoint"));
    json_t *rank = json_object_get(o, "rank"), *pid = json_object_get(o, "pid");
    int r = !role                     ? -1
            : !strcmp(role, "server") ? ORDO_ROLE_SERVER
            : !strcmp(role, "worker") ? ORDO_ROLE_WORKER
                                      : -1;
    if (!o || r < 0 || !token || !json_is_integer(rank) || !json_is_integer(pid) ||
        (r == ORDO_ROLE_SERVER && (!ep || strncmp(ep, "tcp://", 6) != 0 || strlen(ep) > 255))) {
        ordo__transport_drop(s->tp, m, "malformed registration", NULL);
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, "malformed registration");
        goto done;
    }
    if (strcmp(token, s->conf.token) != 0) {
        char who[96];
        snprintf(who, sizeof who, "a %s, pid %lld", role, (long long)json_integer_value(pid));
        ordo__transport_drop(s->tp, m, "wrong cluster token", who);
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, "wrong cluster token");
        goto done;
    }
    if (json_object_get(o, "rejoin") || (s->restarted && !s->welcomed)) {
        /* fault.scheduler = restart; once a restarted run is rebuilt, a new process (a
         * restarted worker, one that joins) takes the ways below */
        out = ordo__sched_restart_register(s, m, o, handle);
        goto done;
    }
    if (find_member(s, m)) {
        ordo__transport_drop(s->tp, m, "registered twice", NULL);
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, "already registered");
        goto done;
    }
    if (s->welcomed && r == ORDO_ROLE_WORKER && json_integer_value(rank) >= s->conf.workers) {
        ordo__sched_grow(s, m, o); /* fault.max_workers: a new worker joins the run */
        goto done;
    }
    if (s->welcomed && r == ORDO_ROLE_WORKER && s->conf.fault_worker == ORDO_FAULT_RESTART) {
        ordo__sched_rejoin(s, m, o); /* a restarted worker takes its dead predecessor's rank */
        member_t *back = find_member(s, m);
        if (back) ordo__sched_member_fresh(s, back, o);
        goto done;
    }
    json_t *tensors = json_object_get(o, "tensors");
    if (s->declared && r == ORDO_ROLE_WORKER && !json_is_array(tensors)) {
        ORDO_WARN("refused a worker (pid %lld): it declared no tensors ([model] trainer = "
                  "declared)", (long long)json_integer_value(pid));
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT,
              "[model] trainer = declared: the worker must declare its tensors (ordo_declare)");
        goto done;
    }
    if (s->welcomed && r == ORDO_ROLE_SERVER && json_is_true(json_object_get(o, "join"))) {
        /* a replacement for a dead server (scheduler/replicas.h) */
        ordo__replicas_join(s, m, ep, (int)json_integer_value(pid), (int)json_integer_value(rank));
        member_t *back = find_member(s, m);
        if (back) ordo__sched_member_fresh(s, back, o);
        goto done;
    }
    int *count = r == ORDO_ROLE_SERVER ? &s->n_servers : &s->n_workers;
    int limit = r == ORDO_ROLE_SERVER ? s->conf.servers : s->conf.workers;
    if (s->welcomed || *count >= limit) {
        char why[96];
        snprintf(why, sizeof why, "a %s; the cluster already has %d", role, limit);
        ordo__transport_drop(s->tp, m, "cluster full", why);
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, "cluster is full");
        goto done;
    }
    member_t *mb = &s->members[s->n_members++];
    memset(mb, 0, sizeof *mb);
    memcpy(mb->rid, m->rid, m->rid_len);
    mb->rid_len = m->rid_len;
    mb->role = r;
    mb->want_rank = (int)json_integer_value(rank);
    mb->rank = -1;
    mb->pid = (int)json_integer_value(pid);
    if (ep) snprintf(mb->endpoint, sizeof mb->endpoint, "%s", ep);
    if (s->declared && r == ORDO_ROLE_WORKER) mb->tensors = json_incref(tensors);
    const char *comp = json_string_value(json_object_get(o, "compression"));
    if (comp && r == ORDO_ROLE_WORKER)
        snprintf(mb->compression, sizeof mb->compression, "%s", comp);
    const char *intra = json_string_value(json_object_get(o, "intra"));
    if (intra && (!strcmp(intra, "shm") || !strcmp(intra, "nccl")))
        snprintf(mb->intra, sizeof mb->intra, "%s", intra);
    mb->last_seen_ns = ordo__clock_ns();
    ordo__sched_member_fresh(s, mb, o);
    (*count)++;
    ORDO_INFO("registered %s pid %d%s%s (%d/%d servers, %d/%d workers)", role, mb->pid,
              ep ? " at " : "", ep ? ep : "", s->n_servers, s->conf.servers, s->n_workers,
              s->conf.workers);
    if (s->n_servers == s->conf.servers && s->n_workers == s->conf.workers) {
        int rc = send_welcome(s);
        if (rc && !s->aborted) {
            ORDO_ERROR("cannot plan the run: %s", ordo__error_text(rc));
            ordo__sched_abort_run(s, "the scheduler cannot plan the run");
        }
    }
done:
    json_decref(o);
    return s->aborted ? ORDO_ERR_ABORT : out;
}

/* ---- the model and its plan ------------------------------------------------------------ */

/* partition makes s->keys for s->model with slices of at most segment bytes */
static int partition(sched_t *s, int64_t segment)
{
    int n = s->model->n_params;
    int64_t *numel = malloc(sizeof *numel * (size_t)n);
    if (!numel) return ORDO_ERR_NOMEM;
    for (int i = 0; i < n; i++)
        numel[i] = s->model->params[i].numel;
    ordo__keys_destroy(&s->keys);
    int rc = ordo__keys_partition(numel, n, s->model->dtype_size, s->conf.partition_bytes, segment,
                                 s->conf.servers, &s->keys);
    free(numel);
    return rc;
}

/* summarize_step puts the step model's choice and prediction into summary.json (order_step),
 * beside the measured step_ms */
static void summarize_step(sched_t *s)
{
    json_t *step = json_object_get(s->plan, "step");
    if (step && s->log) ordo__runlog_set_section(s->log, "order_step", json_deep_copy(step));
    /* compression = auto: what the step model chose and why (scheduler/runplan_compress.h) */
    json_t *comp = json_object_get(s->plan, "compression");
    if (comp && s->log) {
        json_t *c = json_deep_copy(comp);
        json_object_del(c, "keys"); /* one codec per key: the plan's, not the summary's */
        ordo__runlog_set_section(s->log, "compression", c);
    }
}

/* plan_model makes the key map, the plan and the sparse coordinator of s->model. */
static int plan_model(sched_t *s)
{
    int64_t segment = ordo__conf_segment_bytes(&s->conf);
    int rc = partition(s, segment);
    if (rc) return rc;
    /* the plan is made before anyone registers (before the welcome when the workers declare
     * the model), so a bad order or oracle file stops the start-up with its reason */
    if ((rc = ordo__runplan_make(&s->conf, s->model, s->keys, &s->plan)) != 0)
        return ordo__error_context(rc, "cannot plan the run");
    /* the step model may choose other slices; a chunk's slices stay on its server, so the
     * channels the plan was made with do not change */
    if (ordo__runplan_step_slice(&s->conf, s->plan) != segment &&
        (rc = partition(s, ordo__runplan_step_slice(&s->conf, s->plan))) != 0)
        return rc;
    if ((rc = ordo__replicas_new(s, &s->repl)) != 0) return rc;
    /* every message must pass the sockets' net.max_message_mb: a slice, in merged mode a
     * group of up to partition_bytes, in sparse mode a slice's (index, value) pairs */
    int64_t biggest = 0, total = 0;
    for (int i = 0; i < s->keys->n_slices; i++) {
        int64_t b = s->keys->slices[i].numel * s->model->dtype_size;
        total += b;
        if (b > biggest) biggest = b;
    }
    if (s->conf.push_mode == ORDO_PUSH_MERGED)
        biggest = total < s->conf.partition_bytes ? total : s->conf.partition_bytes;
    if (s->conf.push_mode == ORDO_PUSH_SPARSE) biggest *= 2; /* an index beside each value */
    if (biggest + (1 << 16) > ((int64_t)s->conf.max_message_mb << 20))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "messages of %lld bytes (order.partition_bytes / segment_bytes) "
                              "would not fit in net.max_message_mb (%d MiB): raise it",
                              (long long)biggest, s->conf.max_message_mb);
    if (s->updates) json_object_set(s->plan, "updates", s->updates);
    rc = ordo__sparse_coord_new(s->plan, s->conf.servers, s->conf.workers, sparse_send, s,
                               &s->sparse);
    if (rc) return rc;
    s->calibrating = json_object_get(s->plan, "merge_calibrate") != NULL;
    return 0;
}

/* declared_model builds s->model and s->updates from the workers' declarations
 * (scheduler/declared.h); why says what differs when they do not agree. */
static int declared_model(sched_t *s, char *why, size_t wsz)
{
    json_t **by_rank = calloc((size_t)s->conf.workers, sizeof *by_rank);
    if (!by_rank) return ORDO_ERR_NOMEM;
    json_t *any = NULL; /* a worker that died while no scheduler ran declared these too */
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == ORDO_ROLE_WORKER && s->members[i].rank < s->conf.workers &&
            s->members[i].tensors)
            any = by_rank[s->members[i].rank] = s->members[i].tensors;
    for (int w = 0; w < s->conf.workers; w++)
        if (!by_rank[w]) by_rank[w] = any;
    int rc = ordo__declared_model(by_rank, s->conf.workers, s->conf.push_mode == ORDO_PUSH_SPARSE,
                                 &s->model, &s->updates, why, wsz);
    free(by_rank);
    return rc;
}

/* ---- run ---------------------------------------------------------------------------- */

/* summary_dropped puts what the scheduler refused into the summary: "dropped": {"scheduler":
 * {reason: count, ...}} (an empty object when nothing was) */
static void summary_dropped(sched_t *s)
{
    char reasons[32][ORDO_DROP_REASON_LEN];
    uint64_t counts[32];
    int n = ordo__transport_dropped(s->tp, reasons, counts, 32);
    json_t *mine = json_object();
    for (int i = 0; i < n; i++)
        json_object_set_new(mine, reasons[i], json_integer((json_int_t)counts[i]));
    ordo__runlog_set_section(s->log, "dropped", json_pack("{s:o}", "scheduler", mine));
}

/* abort_run tells every member why the run ends and writes the summary of what was
 * recorded; the caller returns ORDO_ERR_ABORT (the transport gets a second to deliver it) */
int ordo__sched_abort_run(sched_t *s, const char *why)
{
    if (s->aborted) return ORDO_ERR_ABORT;
    ORDO_ERROR("aborting the run: %s", why);
    snprintf(s->abort_why, sizeof s->abort_why, "%s", why);
    broadcast(s, ORDO_MSG_ABORT, why);
    ordo__sched_membership_close(s);
    ordo__sched_batches_close(s);
    ordo__sched_restart_close(s, true);
    if (s->log) {
        summary_dropped(s);
        ordo__sched_cp_summary(s);
        ordo__runlog_write_summary(s->log, NULL);
        ordo__runlog_destroy(&s->log);
    }
    s->aborted = true;
    return ORDO_ERR_ABORT;
}

/* probe asks member m's heartbeat thread (or, not known yet, its process) to answer at once */
static void probe(sched_t *s, member_t *m)
{
    char name[320];
    ORDO_INFO("%s silent for %lld ms (timeout %d ms): probing",
              ordo__sched_member_name(m, name, sizeof name),
              (long long)ordo__liveness_silent_ms(&m->live, ordo__clock_ns()),
              ordo__liveness_timeout_ms(&m->live));
    ordo__msg_t p;
    if (m->hb_rid_len)
        ordo__sched_msg_to(s, m->hb_rid, m->hb_rid_len, ORDO_MSG_HEARTBEAT_ACK, &p);
    else
        ordo__sched_msg_to(s, m->rid, m->rid_len, ORDO_MSG_HEARTBEAT_ACK, &p);
    p.hdr.flags = ORDO_FLAG_PING;
    ordo__transport_send(s->tp, &p);
}

/* check_liveness aborts the run when a member fell silent, or when the cluster did not
 * fill up within the start-up time; 0 or ORDO_ERR_ABORT. A silent member is probed first
 * (common/liveness.h); it is declared dead only when idle (nothing waits in the inbound
 * queue: the scheduler itself may have been the one held back, with the member's heartbeats
 * unread), or silent for twice the timeout's ceiling. */
static int check_liveness(sched_t *s, bool idle)
{
    int64_t now = ordo__clock_ns();
    if (!s->welcomed && s->restarted) return ordo__sched_restart_wait(s, handle);
    if (!s->welcomed) {
        if ((now - s->start_ns) / 1000000 <= s->conf.startup_ms) return 0;
        char why[256];
        snprintf(why, sizeof why, "only %d/%d servers and %d/%d workers registered within %d ms",
                 s->n_servers, s->conf.servers, s->n_workers, s->conf.workers,
                 s->conf.startup_ms);
        return ordo__sched_abort_run(s, why);
    }
    int cut = ordo__sched_isolated(s, now); /* every member silent: cut off? */
    if (cut) return cut < 0 ? cut : 0;
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        int64_t silent_ms = (now - m->last_seen_ns) / 1000000;
        if (m->gone) continue; /* a server whose slices went to its backups */
        bool silent = false;
        if (!m->dead) {
            ordo__live_t v = ordo__liveness_check(&m->live, now);
            if (v == ORDO_LIVE_PROBE) probe(s, m);
            silent = v == ORDO_LIVE_DEAD &&
                     (idle || silent_ms > 2 * (int64_t)ordo__conf_timeout_max_ms(&s->conf));
        }
        if (silent && ordo__replicas_server_dead(s, i, silent_ms) == 0) continue;
        if (silent || m->dead) {
            int rc = ordo__sched_member_silent(s, m, silent_ms); /* scheduler/membership.c */
            if (rc) return rc;
        }
    }
    return 0;
}

/* the sparse coordinator's messages: one copy to every member of a role */
static void sparse_send(void *ctx, int role, int sub, int64_t iter, const void *payload, size_t len)
{
    sched_t *s = ctx;
    for (int i = 0; i < s->n_members; i++) {
        if (s->members[i].role != role) continue;
        ordo__msg_t m;
        ordo__sched_msg_to(s, s->members[i].rid, s->members[i].rid_len, ORDO_MSG_PLAN, &m);
        m.hdr.iter = iter;
        m.hdr.key = ORDO_SPARSE_KEY;
        m.hdr.chunk = (uint32_t)sub;
        m.hdr.dtype = ORDO_DTYPE_BYTES;
        if (ordo__msg_add_copy(&m, payload, len) == 0)
            ordo__transport_send(s->tp, &m);
        else
            ordo__msg_close(&m);
    }
}

/* ---- inbound messages: one handler per type, found through the table below ---------- */

/* each returns 0 to go on, 1 when every worker is done, or ORDO_ERR_ABORT; mb is the member
 * that sent m (NULL only for a row taken from anyone) */

static int on_register_msg(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    (void)mb;
    return on_register(s, m);
}

/* answered on the socket it came from: the heartbeat thread's */
static int on_heartbeat(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    (void)mb;
    ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_HEARTBEAT_ACK, NULL);
    return 0;
}

/* on_record takes one iteration's record of a STATS message (text, n bytes) */
static void on_record(sched_t *s, member_t *mb, const char *text, size_t n)
{
    char name[320], body[4096];
    ordo__iter_stats_t st;
    snprintf(body, sizeof body, "%.*s", (int)(n < sizeof body ? n : sizeof body - 1), text);
    int rc = ordo__runlog_parse_stats(body, ordo__conf_max_workers(&s->conf), &st);
    if (rc == 0 && st.worker != mb->rank)
        rc = ordo__error_set(ORDO_ERR_PROTO, "STATS names worker %d", st.worker);
    if (rc) {
        ORDO_WARN("dropped stats of %s: %s", ordo__sched_member_name(mb, name, sizeof name),
                  ordo__error_text(rc));
        return;
    }
    if (ordo__sched_restart_old_stats(s, st.worker, st.iter))
        return; /* sent again to this restarted scheduler: in the run log already */
    if (s->log && st.worker < s->conf.workers) /* not a joined one's (grow.c) */
        ordo__runlog_add(s->log, &st);
    ordo__sched_on_stats(s, mb, st.iter);
    ordo__sched_batches_stats(s, st.t_start_ns, st.t_end_ns);
    ordo__replicas_on_stats(s, st.worker, st.iter);
    ordo__sched_step_check_stats(s, &st);
}

/* on_stats: a worker's record of one iteration, or of [output] stats_every iterations one a
 * line (client/ps_stats.c), each taken in order */
static int on_stats(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    size_t len = 0;
    const char *data = ordo__msg_data(m, 0, &len);
    if (!data) len = 0;
    for (;;) {
        const char *nl = len ? memchr(data, '\n', len) : NULL;
        size_t n = nl ? (size_t)(nl - data) : len;
        on_record(s, mb, data ? data : "", n);
        if (!nl) break;
        data = nl + 1;
        len -= n + 1;
    }
    if (s->log) ordo__runlog_flush(s->log); /* one write a message, not a record */
    return s->reports_wait_ns ? ordo__sched_all_done(s) : 0; /* the end held for these */
}

static int on_done(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    if (mb->role != ORDO_ROLE_WORKER || mb->done) return 0;
    char name[320], body[4096];
    ordo__msg_text(m, 0, body, sizeof body);
    if (m->nframes && s->log && mb->rank < s->conf.workers &&
        ordo__runlog_final(s->log, mb->rank, body) != 0)
        ORDO_WARN("bad DONE body from %s", ordo__sched_member_name(mb, name, sizeof name));
    mb->done = true;
    s->n_done++;
    ORDO_INFO("%s finished (%d/%d)", ordo__sched_member_name(mb, name, sizeof name), s->n_done,
              s->n_live);
    return ordo__sched_all_done(s);
}

static int on_barrier(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    ordo__sched_on_barrier(s, mb, m->hdr.iter); /* scheduler_ctl.c */
    return 0;
}

static int on_batch_req(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    ordo__sched_on_batch_req(s, mb, m); /* batch_service.c */
    return 0;
}

static int on_state_req(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    ordo__sched_on_state_req(s, mb, m); /* peer_state.c */
    return 0;
}

static int on_state(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    ordo__sched_on_state(s, mb, m); /* peer_state.c */
    return 0;
}

/* worker 0's start-up calibration, or the sparse coordinator's histograms
 * (scheduler/sparse_coord.h) */
static int on_plan(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    char name[320];
    if (s->calibrating && mb->role == ORDO_ROLE_WORKER && mb->rank == 0)
        return ordo__sched_on_calibration(s, m); /* the start-up calibration's result */
    int rc = s->sparse ? ordo__sparse_coord_on_msg(s->sparse, mb->role, mb->rank, m)
                       : ordo__error_set(ORDO_ERR_PROTO, "no sparse pushes in this run");
    if (rc)
        ORDO_WARN("dropped a PLAN message from %s: %s",
                  ordo__sched_member_name(mb, name, sizeof name), ordo__error_text(rc));
    return 0;
}

static int on_abort(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    char why[600], body[400], name[320];
    snprintf(why, sizeof why, "%s gave up: %s", ordo__sched_member_name(mb, name, sizeof name),
             ordo__msg_text(m, 0, body, sizeof body));
    return ordo__sched_abort_run(s, why);
}

/* one row per message type the scheduler takes; a type without a row is dropped with a
 * warning. A new message is one handler and one row. */
typedef struct {
    int (*fn)(sched_t *s, member_t *mb, ordo__msg_t *m);
    bool anyone; /* taken from a peer not registered yet (mb is NULL), before any check */
} msg_row_t;

static const msg_row_t handlers[ORDO_MSG_TYPE_MAX] = {
    [ORDO_MSG_REGISTER] = {on_register_msg, .anyone = true},
    [ORDO_MSG_HEARTBEAT] = {on_heartbeat},
    [ORDO_MSG_STATS] = {on_stats},
    [ORDO_MSG_DONE] = {on_done},
    [ORDO_MSG_BARRIER] = {on_barrier},
    [ORDO_MSG_BCAST] = {ordo__sched_on_bcast}, /* scheduler_ctl.c */
    [ORDO_MSG_BATCH_REQ] = {on_batch_req},
    [ORDO_MSG_STATE_REQ] = {on_state_req},
    [ORDO_MSG_STATE] = {on_state},
    [ORDO_MSG_PLAN] = {on_plan},
    [ORDO_MSG_REPLAN] = {ordo__sched_on_replan}, /* scheduler_ctl.c */
    [ORDO_MSG_ABORT] = {on_abort},
};

/* handle: one message from a node; 0 to go on, 1 when every worker is done, ORDO_ERR_ABORT.
 * Its sender is found (a registered member, or a member's heartbeat thread) and its
 * liveness noted before its row's handler runs. */
static int handle(sched_t *s, ordo__msg_t *m)
{
    const msg_row_t *row = m->hdr.type < ORDO_MSG_TYPE_MAX ? &handlers[m->hdr.type] : NULL;
    ordo__sched_cp_count(s, m); /* control_plane.c */
    if (row && row->anyone) return row->fn(s, NULL, m);
    if (ordo__sched_fence_refuse(s, m)) return 0; /* a worker declared dead that came back */
    int kept = ordo__sched_restart_stash(s, m); /* while a restarted run is rebuilt */
    if (kept >= 0 || kept == ORDO_ERR_ABORT) return kept;
    member_t *mb = find_member(s, m);
    if (!mb) mb = find_beat(s, m);
    if (!mb) {
        /* a heartbeat thread's first beats may come before its process's REGISTER (another
         * socket): nothing to say about them */
        if (m->hdr.type != ORDO_MSG_HEARTBEAT)
            ordo__transport_drop(s->tp, m, "unregistered peer", NULL);
        else
            ordo__sched_restart_beat(s, m->hdr.req); /* alive, not registered again yet */
        return 0;
    }
    if (mb->gone) { /* a server declared dead that came back: it is no longer part of the run */
        ordo__sched_reply(s, mb->rid, mb->rid_len, ORDO_MSG_ABORT,
                          "this server was declared dead and its slices promoted elsewhere");
        return 0;
    }
    mb->last_seen_ns = ordo__clock_ns();
    if (m->hdr.type == ORDO_MSG_HEARTBEAT)
        ordo__liveness_beat(&mb->live, mb->last_seen_ns);
    else
        ordo__liveness_seen(&mb->live, mb->last_seen_ns);
    if (!row || !row->fn) {
        char name[320];
        ORDO_WARN("dropped unexpected %s from %s", ordo__wire_type_name(m->hdr.type),
                  ordo__sched_member_name(mb, name, sizeof name));
        return 0;
    }
    return row->fn(s, mb, m);
}

static void make_run_dir(sched_t *s)
{
    if (s->conf.run_name[0]) {
        snprintf(s->run_dir, sizeof s->run_dir, "%s/%s", s->conf.out_dir, s->conf.run_name);
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[64];
        strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
        snprintf(s->run_dir, sizeof s->run_dir, "%s/%s-%d", s->conf.out_dir, stamp, (int)getpid());
    }
}


/* ---- the object ------------------------------------------------------------------------ */

int ordo__scheduler_new(const ordo__conf_t *conf, ordo__scheduler_t **out)
{
    sched_t *s = calloc(1, sizeof *s);
    if (!s) return ORDO_ERR_NOMEM;
    s->conf = *conf;
    s->barrier_id = -1;
    s->n_live = conf->workers;
    s->declared = !strcmp(s->conf.trainer, "declared");
    int rc;
    if (!s->declared) {
        if ((rc = ordo__job_model(&s->conf, &s->model)) != 0) goto fail;
        if ((rc = plan_model(s)) != 0) goto fail;
    }
    /* the address first: a second scheduler at a live one's stops here, touching nothing */
    ordo__transport_opts_t opts = {
        .role = ORDO_ROLE_SCHEDULER, .rank = 0, .inline_io = !s->conf.io_thread};
    ordo__transport_opts_conf(&opts, &s->conf);
    if ((rc = ordo__transport_new(&opts, &s->tp)) != 0) goto fail;
    rc = ordo__transport_bind(s->tp, s->conf.scheduler, 0, s->endpoint, sizeof s->endpoint);
    if (rc < 0) {
        char what[ORDO_CONF_STR + 32];
        snprintf(what, sizeof what, "cannot listen on %s", s->conf.scheduler);
        rc = ordo__error_context(rc, what);
        goto fail;
    }
    s->sock = rc;
    make_run_dir(s);
    if ((rc = ordo__sched_restart_open(s)) != 0) goto fail;
    if (s->restarted)
        rc = ordo__runlog_continue(s->run_dir, &s->conf, s->conf.workers, ordo__sched_restart_seen,
                                  s, &s->log);
    else
        rc = ordo__runlog_new(s->run_dir, &s->conf, s->conf.workers, &s->log);
    if (rc) goto fail;
    summarize_step(s);
    if (s->plan) ordo__runplan_merge_take_file(s->plan, s->run_dir);
    if ((rc = ordo__replan_new(&s->conf, s->run_dir, ordo__sched_replan_send, s, &s->replan)) != 0) goto fail;
    if (s->plan && json_object_get(s->plan, "step"))
        ordo__replan_set_slice(s->replan, ordo__runplan_step_slice(&s->conf, s->plan));
    s->members = calloc((size_t)(s->conf.servers + ordo__conf_max_workers(&s->conf)),
                        sizeof *s->members);
    if (!s->members) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    s->start_ns = ordo__clock_ns();
    if (s->keys) s->plan_digest = plan_digest(s);
    if ((rc = ordo__sched_restart_listening(s)) != 0) goto fail;
    if (s->model)
        ORDO_INFO("listening on %s for %d servers and %d workers (model %s, %d tensors, %.1f MiB)",
                  s->endpoint, s->conf.servers, s->conf.workers, s->model->name,
                  s->model->n_params, (double)ordo__model_total_bytes(s->model) / 1048576.0);
    else
        ORDO_INFO("listening on %s for %d servers and %d workers (model declared by the workers)",
                  s->endpoint, s->conf.servers, s->conf.workers);
    *out = s;
    return 0;
fail:
    ordo__scheduler_destroy(&s);
    return rc;
}

const char *ordo__scheduler_endpoint(const ordo__scheduler_t *s)
{
    return s->endpoint;
}

const char *ordo__scheduler_run_dir(const ordo__scheduler_t *s)
{
    return s->run_dir;
}

const char *ordo__scheduler_summary(const ordo__scheduler_t *s)
{
    return s->summary;
}

ordo__transport_t *ordo__scheduler_transport(ordo__scheduler_t *s)
{
    return s->tp;
}

int ordo__scheduler_handle(ordo__scheduler_t *s, ordo__msg_t *m)
{
    if (s->aborted) return ORDO_ERR_ABORT;
    return handle(s, m);
}

int ordo__scheduler_check(ordo__scheduler_t *s)
{
    if (s->aborted) return ORDO_ERR_ABORT;
    return check_liveness(s, true);
}

/* messages handled in one turn of the run loop before liveness is checked again */
#define RUN_DRAIN 1000

int ordo__scheduler_run(ordo__scheduler_t *s)
{
    int rc = 0;
    while (rc == 0) {
        if (ordo__daemon_stop_signal()) return ordo__sched_abort_run(s, "the scheduler was interrupted");
        ordo__msg_t m;
        bool got = ordo__transport_recv(s->tp, &m, s->conf.heartbeat_ms / 2 + 1) == 0;
        /* then everything already here (bounded, so liveness is still checked under a
         * flood): idle means nothing waits unread, not that nothing came for a while, which
         * in a busy cluster's stream of heartbeats would rarely hold */
        bool idle = true;
        for (int n = 1; got && rc == 0; n++) {
            rc = handle(s, &m);
            ordo__msg_close(&m);
            if (n == RUN_DRAIN) {
                idle = false; /* more may wait: not idle */
                break;
            }
            got = rc == 0 && ordo__transport_recv(s->tp, &m, 0) == 0;
        }
        if (rc == 0) rc = check_liveness(s, idle);
        if (rc == 0 && s->reports_wait_ns) rc = ordo__sched_all_done(s); /* held for reports */
    }
    if (rc == ORDO_ERR_ABORT) ordo__sched_restart_linger(s);
    if (rc < 0) return rc;
    broadcast(s, ORDO_MSG_SHUTDOWN, NULL);
    ordo__sched_membership_close(s);
    summary_dropped(s);
    ordo__sched_cp_summary(s);
    ordo__sched_batches_close(s);
    ordo__sched_restart_close(s, true);
    rc = ordo__runlog_write_summary(s->log, &s->summary);
    if (rc) ORDO_ERROR("%s", ordo__error_text(rc));
    ORDO_INFO("run complete; summary in %s/summary.json", s->run_dir);
    return rc;
}

void ordo__scheduler_destroy(ordo__scheduler_t **p)
{
    sched_t *s = p ? *p : NULL;
    if (!s) return;
    ordo__sched_restart_close(s, false);
    ordo__runlog_destroy(&s->log);
    ordo__transport_destroy(&s->tp, s->aborted ? 1000 : 2000);
    ordo__keys_destroy(&s->keys);
    ordo__replicas_destroy(&s->repl);
    ordo__batches_destroy(&s->batches);
    ordo__sched_step_check_free(s);
    ordo__model_destroy(&s->model);
    json_decref(s->plan);
    ordo__sparse_coord_destroy(&s->sparse);
    for (int i = 0; s->members && i < s->n_members; i++)
        json_decref(s->members[i].tensors);
    json_decref(s->updates);
    if (s->have_bcast_data) ordo__msg_close(&s->bcast_data);
    ordo__replan_destroy(&s->replan);
    if (s->members_log) fclose(s->members_log);
    ordo__sched_fence_destroy(s);
    free(s->members);
    free(s->summary);
    free(s);
    *p = NULL;
}
