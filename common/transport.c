/* transport: the I/O thread, its queues, the emulated egress link and the sockets' limits
 * and security (their monitors: transport_monitor.c; the heartbeat thread:
 * transport_heartbeat.c). */
#include "common/transport.h"
#include "common/transport_internal.h"
#include "common/clock.h"
#include "common/curve.h"
#include "common/error.h"
#include "common/log.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>


/* ---- rings -------------------------------------------------------------------------- */

static int ring_init(ring_t *r, int cap, bool timed)
{
    r->items = calloc((size_t)cap, sizeof *r->items);
    r->when = timed ? calloc((size_t)cap, sizeof *r->when) : NULL;
    r->cap = cap;
    r->head = r->count = 0;
    return (!r->items || (timed && !r->when)) ? ORDO_ERR_NOMEM : 0;
}

static void ring_free(ring_t *r)
{
    for (int i = 0; i < r->count; i++)
        ordo__msg_close(&r->items[(r->head + i) % r->cap]);
    free(r->items);
    free(r->when);
    r->items = NULL;
    r->when = NULL;
}

static int ring_grow(ring_t *r)
{
    int cap = r->cap * 2;
    ordo__msg_t *items = calloc((size_t)cap, sizeof *items);
    int64_t *when = r->when ? calloc((size_t)cap, sizeof *when) : NULL;
    if (!items || (r->when && !when)) {
        free(items);
        free(when);
        return ORDO_ERR_NOMEM;
    }
    for (int i = 0; i < r->count; i++) {
        int j = (r->head + i) % r->cap;
        ordo__msg_move(&items[i], &r->items[j]);
        if (when) when[i] = r->when[j];
    }
    free(r->items);
    free(r->when);
    r->items = items;
    r->when = when;
    r->cap = cap;
    r->head = 0;
    return 0;
}

static void ring_push(ring_t *r, ordo__msg_t *m, int64_t when)
{
    int j = (r->head + r->count) % r->cap;
    ordo__msg_move(&r->items[j], m);
    if (r->when) r->when[j] = when;
    r->count++;
}

static void ring_pop(ring_t *r, ordo__msg_t *m)
{
    ordo__msg_move(m, &r->items[r->head]);
    r->head = (r->head + 1) % r->cap;
    r->count--;
}

static void wake(ordo__transport_t *t)
{
    uint64_t one = 1;
    ssize_t n = write(t->evfd, &one, sizeof one);
    (void)n;
}

/* ---- I/O thread --------------------------------------------------------------------- */

static size_t msg_bytes(const ordo__msg_t *m)
{
    size_t b = 64; /* header and framing, roughly */
    for (int i = 0; i < m->nframes; i++)
        b += zmq_msg_size((zmq_msg_t *)&m->frames[i]);
    return b;
}

void ordo__transport_put_inbound(ordo__transport_t *t, ordo__msg_t *m)
{
    pthread_mutex_lock(&t->mu);
    if (t->in.count == t->in.cap && ring_grow(&t->in) != 0) {
        /* Only local events can exceed the ring (reads stop when it is full). */
        pthread_mutex_unlock(&t->mu);
        ordo__msg_close(m);
        return;
    }
    ring_push(&t->in, m, 0);
    pthread_cond_signal(&t->in_cv);
    pthread_mutex_unlock(&t->mu);
}

static void send_now(ordo__transport_t *t, ordo__msg_t *m)
{
    if (m->sock < 0 || m->sock >= t->nsocks) {
        ORDO_WARN("transport: send %s on unknown socket %d dropped",
                  ordo__wire_type_name(m->hdr.type), m->sock);
        ordo__msg_close(m);
        return;
    }
    sock_t *s = &t->socks[m->sock];
    size_t bytes = msg_bytes(m);
    /* a send may process the socket's commands, and with them the signal of ZMQ_FD that a
     * message came in: the socket has to be drained before the next sleep */
    s->pending = true;
    int rc = ordo__wire_send(s->z, s->router, m, ZMQ_DONTWAIT);
    if (rc == ORDO_ERR_AGAIN && (s->refused || m->hdr.type == ORDO_MSG_HEARTBEAT)) {
        /* no connection to queue on (a refused handshake): the heartbeats notice */
        ordo__msg_close(m);
        return;
    }
    if (rc != 0) {
        ORDO_WARN("transport: send %s failed: %s", ordo__wire_type_name(m->hdr.type),
                  ordo__error_text(rc));
        ordo__msg_close(m);
        return;
    }
    atomic_fetch_add(&t->msgs_out, 1);
    atomic_fetch_add(&t->bytes_out, bytes);
}

/* hand a message to its socket, or to the emulated link when it is a paced data socket */
static void dispatch(ordo__transport_t *t, ordo__msg_t *m)
{
    bool paced =
        t->opts.bandwidth_bps > 0 && m->sock >= 0 && m->sock < t->nsocks && t->socks[m->sock].data;
    if (!paced) {
        send_now(t, m);
        return;
    }
    int64_t now = ordo__clock_ns();
    int64_t start = atomic_load(&t->link_free_ns);
    if (start < now) start = now;
    int64_t ser =
        (int64_t)((double)msg_bytes(m) * 8e9 / t->opts.bandwidth_bps + t->opts.msg_us * 1e3);
    int64_t done = start + ser;
    atomic_store(&t->link_free_ns, done);
    if (t->link.count == t->link.cap && ring_grow(&t->link) != 0) {
        ORDO_ERROR("transport: out of memory on the emulated link; message dropped");
        ordo__msg_close(m);
        return;
    }
    ring_push(&t->link, m, done + (int64_t)(t->opts.latency_us * 1e3));
    atomic_fetch_add(&t->link_pending, 1);
}

static void flush_link(ordo__transport_t *t, bool all)
{
    int64_t now = ordo__clock_ns();
    ordo__msg_t m;
    while (t->link.count > 0 && (all || t->link.when[t->link.head] <= now)) {
        ring_pop(&t->link, &m);
        atomic_fetch_sub(&t->link_pending, 1);
        send_now(t, &m);
    }
}

/* ---- commands ------------------------------------------------------------------------ */

static void run_command(ordo__transport_t *t)
{
    int rc = 0;
    if (t->nsocks >= MAX_SOCKS) {
        rc = ordo__error_set(ORDO_ERR_FULL, "transport: more than %d sockets", MAX_SOCKS);
        goto done;
    }
    bool router = t->cmd == CMD_BIND;
    void *z = zmq_socket(t->ctx, router ? ZMQ_ROUTER : ZMQ_DEALER);
    if (!z) {
        rc = ordo__error_set(ORDO_ERR_IO, "zmq_socket: %s", zmq_strerror(errno));
        goto done;
    }
    sock_t *s = &t->socks[t->nsocks];
    memset(s, 0, sizeof *s);
    s->z = z;
    s->router = router;
    s->data = t->cmd_data != 0;
    snprintf(s->endpoint, sizeof s->endpoint, "%s", t->cmd_endpoint);
    int one = 1, linger = 0, handshake_ms = 10000;
    /* what a peer may make this process hold: frames of at most max_msg_bytes (a larger
     * announced size cuts the peer off before anything is allocated), recv_hwm messages
     * per peer before ZeroMQ stops reading it, send_hwm waiting for it */
    zmq_setsockopt(z, ZMQ_SNDHWM, &t->opts.send_hwm, sizeof t->opts.send_hwm);
    zmq_setsockopt(z, ZMQ_RCVHWM, &t->opts.recv_hwm, sizeof t->opts.recv_hwm);
    zmq_setsockopt(z, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(z, ZMQ_MAXMSGSIZE, &t->opts.max_msg_bytes, sizeof t->opts.max_msg_bytes);
    zmq_setsockopt(z, ZMQ_HANDSHAKE_IVL, &handshake_ms, sizeof handshake_ms);
    if (t->cmd_data) { /* bulk tensors: larger kernel socket buffers keep the pipe full */
        int buf = 4 << 20;
        zmq_setsockopt(z, ZMQ_SNDBUF, &buf, sizeof buf);
        zmq_setsockopt(z, ZMQ_RCVBUF, &buf, sizeof buf);
    }
    /* security and the monitor before the first connection can start */
    if (t->curve && ((router && (rc = ordo__curve_listen(t->curve, t->ctx)) != 0) ||
                     (rc = ordo__curve_setup(t->curve, z, router)) != 0))
        goto fail;
    if ((rc = ordo__transport_monitor_open(t, s, t->nsocks)) != 0) goto fail;
    if (router) {
        zmq_setsockopt(z, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
        if (zmq_bind(z, t->cmd_endpoint) != 0) {
            rc = ordo__error_set(ORDO_ERR_IO, "bind %s: %s", t->cmd_endpoint, zmq_strerror(errno));
            goto fail;
        }
        size_t sz = sizeof s->endpoint;
        if (zmq_getsockopt(z, ZMQ_LAST_ENDPOINT, s->endpoint, &sz) != 0)
            snprintf(s->endpoint, sizeof s->endpoint, "%s", t->cmd_endpoint);
        if (t->cmd_actual) snprintf(t->cmd_actual, t->cmd_size, "%s", s->endpoint);
    } else {
        int ivl = 100;
        zmq_setsockopt(z, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
        if (zmq_connect(z, t->cmd_endpoint) != 0) {
            rc = ordo__error_set(ORDO_ERR_IO, "connect %s: %s", t->cmd_endpoint, zmq_strerror(errno));
            goto fail;
        }
    }
    s->last_in_ns = ordo__clock_ns();
    size_t fdsz = sizeof s->fd;
    if (zmq_getsockopt(z, ZMQ_FD, &s->fd, &fdsz) != 0) {
        rc = ordo__error_set(ORDO_ERR_IO, "zmq_getsockopt(ZMQ_FD): %s", zmq_strerror(errno));
        goto fail;
    }
    s->pending = true;
    rc = t->nsocks++;
    /* a first read arms the monitor: its pipe signals ZMQ_FD only after a reader found it empty */
    ordo__transport_monitor_drain(t, rc);
    goto done;
fail:
    ordo__transport_monitor_close(s);
    zmq_close(z);
done:
    if (rc < 0) snprintf(t->cmd_err, sizeof t->cmd_err, "%s", ordo__error_text(rc));
    t->cmd_result = rc;
    t->cmd_done = true;
    t->cmd = CMD_NONE;
    pthread_cond_broadcast(&t->cmd_cv);
}

static int64_t next_timer(ordo__transport_t *t)
{
    int64_t next = INT64_MAX;
    if (t->link.count > 0 && t->link.when[t->link.head] < next) next = t->link.when[t->link.head];
    return next;
}

static void arm_timer(ordo__transport_t *t, int64_t at)
{
    if (at == t->armed_at) return; /* unchanged: spare the system call */
    t->armed_at = at;
    struct itimerspec its = {0};
    if (at != INT64_MAX) {
        if (at <= 0) at = 1;
        its.it_value.tv_sec = at / 1000000000;
        its.it_value.tv_nsec = at % 1000000000;
    }
    timerfd_settime(t->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* receive reads socket i's messages into the inbound ring until it has none (clearing
 * pending), the ring is full, or its batch was read (one inline, else RECV_BATCH);
 * returns how many were read */
static int receive(ordo__transport_t *t, int i)
{
    sock_t *s = &t->socks[i];
    int got = 0;
    /* inline, one message per call: the caller handles it and comes back, and the read
     * that finds the socket empty (a poll(2) inside ZeroMQ) is paid once, after the
     * answers were sent, rather than once before and once after */
    int batch = t->opts.inline_io ? 1 : RECV_BATCH;
    for (int n = 0; n < batch; n++) {
        pthread_mutex_lock(&t->mu);
        bool full = t->in.count >= t->in.cap;
        if (full) t->in_full = true;
        pthread_mutex_unlock(&t->mu);
        if (full) return got;
        ordo__msg_t m;
        int rc = ordo__wire_recv(s->z, s->router, &m, ZMQ_DONTWAIT);
        if (rc == ORDO_ERR_AGAIN || rc == ORDO_ERR_CLOSED) {
            s->pending = false; /* from here on ZMQ_FD signals the next change */
            return got;
        }
        s->last_in_ns = ordo__clock_ns();
        if (rc != 0) {
            atomic_fetch_add(&t->malformed, 1);
            m.sock = i; /* m holds the routing id (on a ROUTER) and no frames */
            m.hdr.type = 0;
            ordo__transport_drop(t, &m, "malformed", ordo__error_text(rc));
            continue;
        }
        m.sock = i;
        atomic_fetch_add(&t->msgs_in, 1);
        atomic_fetch_add(&t->bytes_in, msg_bytes(&m));
        if (m.hdr.type == ORDO_MSG_HEARTBEAT_ACK) { /* the heartbeat thread's business */
            ordo__msg_close(&m);
            continue;
        }
        ordo__transport_put_inbound(t, &m);
        got++;
    }
    return got;
}

/* io_cycle: one turn of the I/O loop: commands and queued sends (threaded mode), paced
 * sends that are due, heartbeats, then a poll of every socket, the wake-up eventfd and the
 * timerfd for at most wait_ms (-1 = until something happens). Returns false when the
 * transport must stop. */
static bool io_cycle(ordo__transport_t *t, int wait_ms)
{
    pthread_mutex_lock(&t->mu);
    if (t->cmd != CMD_NONE) run_command(t);
    bool stopping = t->stopping;
    int batch = 0;
    ordo__msg_t m;
    while (t->out.count > 0 && batch < 256) {
        ring_pop(&t->out, &m);
        pthread_cond_signal(&t->out_cv);
        pthread_mutex_unlock(&t->mu);
        dispatch(t, &m);
        batch++;
        pthread_mutex_lock(&t->mu);
    }
    bool more_out = t->out.count > 0;
    bool in_room = t->in.count < t->in.cap;
    if (in_room) t->in_full = false;
    if (t->in.count > 0 && t->opts.inline_io) wait_ms = 0; /* something is ready already */
    pthread_mutex_unlock(&t->mu);
    if (stopping) return false;
    flush_link(t, false);
    int64_t now = ordo__clock_ns();
    arm_timer(t, next_timer(t));

    /* Sockets that may hold messages are drained first, without sleeping; only then does
     * one poll(2) wait on every ZMQ_FD, the eventfd and the timerfd. (zmq_poll would ask
     * each socket for ZMQ_EVENTS before and after sleeping: three to four more system calls
     * per socket and wake-up.) ZMQ_FD is edge-triggered: it fires when a drained socket's
     * state changes, and a send can swallow that edge, so send_now marks the socket. */
    int got = 0;
    bool undrained = false;
    /* round robin from rr, so that a busy socket cannot starve the others */
    for (int k = 0; in_room && k < t->nsocks; k++) {
        int i = (t->rr + k) % t->nsocks;
        if (!t->socks[i].pending) continue;
        got += receive(t, i);
        undrained |= t->socks[i].pending;
        if (got > 0 && t->opts.inline_io) { /* the caller has work */
            t->rr = (i + 1) % t->nsocks;
            /* but look at every socket's ZMQ_FD at least once a millisecond, or a socket
             * that was not pending (the scheduler's) would wait while another stays busy */
            if (now - t->polled_ns < 1000000) return true;
            break;
        }
    }
    struct pollfd fds[2 * MAX_SOCKS + 2];
    int n = 0;
    fds[n++] = (struct pollfd){.fd = t->evfd, .events = POLLIN};
    fds[n++] = (struct pollfd){.fd = t->tfd, .events = POLLIN};
    if (in_room)
        for (int i = 0; i < t->nsocks; i++)
            fds[n++] = (struct pollfd){.fd = t->socks[i].fd, .events = POLLIN};
    int mon0 = n; /* the monitors' ZMQ_FDs: handshakes and disconnections are rare */
    for (int i = 0; i < t->nsocks; i++)
        fds[n++] = (struct pollfd){.fd = t->socks[i].mon_fd, .events = POLLIN};
    int pr = poll(fds, (nfds_t)n, more_out || undrained || got > 0 ? 0 : wait_ms);
    t->polled_ns = now;
    if (pr < 0) {
        if (errno == EINTR) return true;
        ORDO_ERROR("transport: poll: %s", strerror(errno));
        return false;
    }
    uint64_t v;
    if (fds[0].revents & POLLIN) {
        ssize_t r = read(t->evfd, &v, sizeof v);
        (void)r;
    }
    if (fds[1].revents & POLLIN) {
        ssize_t r = read(t->tfd, &v, sizeof v);
        (void)r;
    }
    for (int i = 0; in_room && i < t->nsocks; i++)
        if (fds[i + 2].revents & POLLIN) {
            t->socks[i].pending = true;
            receive(t, i);
        }
    for (int i = 0; i < t->nsocks; i++)
        if (fds[mon0 + i].revents & POLLIN) ordo__transport_monitor_drain(t, i);
    return true;
}

/* close down: what the application queued and what is on the emulated link still goes */
static void io_close(ordo__transport_t *t)
{
    flush_link(t, true);
    pthread_mutex_lock(&t->mu);
    ordo__msg_t m;
    while (t->out.count > 0) {
        ring_pop(&t->out, &m);
        pthread_mutex_unlock(&t->mu);
        send_now(t, &m);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < t->nsocks; i++) {
        ordo__transport_monitor_close(&t->socks[i]);
        /* what waits on a connection the peer refused will never go */
        int linger = t->socks[i].refused ? 0 : t->linger_ms;
        zmq_setsockopt(t->socks[i].z, ZMQ_LINGER, &linger, sizeof linger);
        zmq_close(t->socks[i].z);
    }
    t->nsocks = 0;
}

static void *io_main(void *arg)
{
    ordo__transport_t *t = arg;
    while (io_cycle(t, -1)) {
    }
    io_close(t);
    return NULL;
}

/* ---- public ------------------------------------------------------------------------- */

void ordo__transport_opts_conf(ordo__transport_opts_t *opts, const ordo__conf_t *conf)
{
    opts->max_msg_bytes = (int64_t)conf->max_message_mb << 20;
    opts->recv_hwm = conf->recv_hwm;
    opts->send_hwm = conf->send_hwm;
    opts->curve_keys = conf->curve ? conf->keys_dir : NULL;
    opts->curve_client = opts->role == ORDO_ROLE_WORKER ? conf->client_key : NULL;
}

int ordo__transport_new(const ordo__transport_opts_t *opts, ordo__transport_t **out)
{
    int rc = ORDO_ERR_NOMEM;
    ordo__transport_t *t = calloc(1, sizeof *t);
    if (!t) return ORDO_ERR_NOMEM;
    if (opts) t->opts = *opts;
    if (t->opts.inbound_capacity <= 0) t->opts.inbound_capacity = 4096;
    if (t->opts.outbound_capacity <= 0) t->opts.outbound_capacity = 4096;
    if (t->opts.max_msg_bytes <= 0) t->opts.max_msg_bytes = (int64_t)256 << 20;
    if (t->opts.recv_hwm <= 0) t->opts.recv_hwm = 1000;
    if (t->opts.send_hwm <= 0) t->opts.send_hwm = 65536;
    const char *keys = t->opts.curve_keys, *client = t->opts.curve_client;
    t->opts.curve_keys = t->opts.curve_client = NULL; /* the caller's strings */
    t->evfd = t->tfd = t->hb.evfd = -1;
    t->armed_at = INT64_MAX;
    if ((rc = ordo__transport_hb_init(t)) != 0) goto fail;
    rc = ORDO_ERR_NOMEM;
    pthread_mutex_init(&t->mu, NULL);
    pthread_mutex_init(&t->drops.mu, NULL);
    pthread_cond_init(&t->in_cv, NULL);
    pthread_cond_init(&t->out_cv, NULL);
    pthread_cond_init(&t->cmd_cv, NULL);
    if (ring_init(&t->in, t->opts.inbound_capacity, false) ||
        ring_init(&t->out, t->opts.outbound_capacity, false) || ring_init(&t->link, 256, true))
        goto fail;
    t->ctx = zmq_ctx_new();
    if (!t->ctx) {
        rc = ordo__error_set(ORDO_ERR_IO, "zmq_ctx_new: %s", zmq_strerror(errno));
        goto fail;
    }
    t->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (t->evfd < 0 || t->tfd < 0) {
        rc = ordo__error_set(ORDO_ERR_IO, "eventfd/timerfd: %s", strerror(errno));
        goto fail;
    }
    if (keys && keys[0]) {
        snprintf(t->curve_dir, sizeof t->curve_dir, "%s", keys);
        if ((rc = ordo__curve_new(t->curve_dir, client, &t->curve)) != 0) goto fail;
    }
    if (!t->opts.inline_io) {
        if (pthread_create(&t->io, NULL, io_main, t) != 0) {
            rc = ordo__error_set(ORDO_ERR_IO, "pthread_create failed");
            goto fail;
        }
        t->io_started = true;
    }
    *out = t;
    return 0;
fail:
    ordo__transport_destroy(&t, 0);
    return rc;
}

/* ---- ending the context, bounded -------------------------------------------------- */

/* zmq_ctx_term returns once every socket is closed and its linger has run out; libzmq
 * 4.3 has been seen, rarely, never to return after a refused handshake (a worker without
 * CURVE at a CURVE scheduler, under load). The term runs on its own thread, and a context
 * that has not ended in time is left behind with a warning, so that no process waits
 * forever in its teardown. */
#define CTX_TERM_SLACK_MS 5000 /* beyond the sockets' linger */

typedef struct {
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int refs; /* the waiter and the thread: the last one out frees it */
} ctx_term_t;

static void ctx_term_unref(ctx_term_t *k)
{
    bool last = --k->refs == 0;
    pthread_mutex_unlock(&k->mu);
    if (!last) return;
    pthread_mutex_destroy(&k->mu);
    pthread_cond_destroy(&k->cv);
    free(k);
}

static void *ctx_term_main(void *arg)
{
    ctx_term_t *k = arg;
    zmq_ctx_term(k->ctx);
    pthread_mutex_lock(&k->mu);
    k->done = true;
    pthread_cond_signal(&k->cv);
    ctx_term_unref(k);
    return NULL;
}

/* ctx_term_bounded ends ctx within limit_ms and returns true, or returns false and leaves
 * its term running */
static bool ctx_term_bounded(void *ctx, int limit_ms)
{
    ctx_term_t *k = calloc(1, sizeof *k);
    pthread_condattr_t ca;
    pthread_t th;
    pthread_attr_t aa;
    if (!k || pthread_attr_init(&aa) != 0) {
        free(k);
        zmq_ctx_term(ctx);
        return true;
    }
    k->ctx = ctx;
    k->refs = 2;
    pthread_mutex_init(&k->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&k->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_attr_setdetachstate(&aa, PTHREAD_CREATE_DETACHED);
    bool started = pthread_create(&th, &aa, ctx_term_main, k) == 0;
    pthread_attr_destroy(&aa);
    if (!started) {
        zmq_ctx_term(ctx);
        k->done = true;
        k->refs = 1;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t ns = ts.tv_nsec + (int64_t)limit_ms * 1000000;
    ts.tv_sec += ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    pthread_mutex_lock(&k->mu);
    while (!k->done)
        if (pthread_cond_timedwait(&k->cv, &k->mu, &ts) == ETIMEDOUT) break;
    bool done = k->done;
    ctx_term_unref(k);
    return done;
}

void ordo__transport_destroy(ordo__transport_t **tp, int linger_ms)
{
    ordo__transport_t *t = *tp;
    if (!t) return;
    ordo__transport_hb_stop(t); /* its socket closes before the context ends */
    if (t->io_started) {
        pthread_mutex_lock(&t->mu);
        t->stopping = true;
        t->linger_ms = linger_ms;
        pthread_mutex_unlock(&t->mu);
        wake(t);
        pthread_join(t->io, NULL);
    } else if (t->ctx) {
        t->linger_ms = linger_ms;
        io_close(t);
    }
    /* the context's end also ends the ZAP thread, which reads t->curve: a context left
     * behind keeps it */
    if (t->ctx && !ctx_term_bounded(t->ctx, (linger_ms > 0 ? linger_ms : 0) + CTX_TERM_SLACK_MS))
        ORDO_WARN("transport: the ZeroMQ context did not end within %d ms of closing its "
                  "sockets; left behind so that this process can go on",
                  (linger_ms > 0 ? linger_ms : 0) + CTX_TERM_SLACK_MS);
    else
        ordo__curve_destroy(&t->curve);
    ring_free(&t->in);
    ring_free(&t->out);
    ring_free(&t->link);
    if (t->evfd >= 0) close(t->evfd);
    if (t->tfd >= 0) close(t->tfd);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->in_cv);
    pthread_cond_destroy(&t->out_cv);
    pthread_cond_destroy(&t->cmd_cv);
    ordo__transport_hb_fini(t);
    pthread_mutex_destroy(&t->drops.mu);
    free(t);
    *tp = NULL;
}

static int command(ordo__transport_t *t, cmd_kind_t kind, const char *endpoint, int data,
                   char *actual, size_t size, int sock, int interval, int timeout)
{
    pthread_mutex_lock(&t->mu);
    while (t->cmd != CMD_NONE)
        pthread_cond_wait(&t->cmd_cv, &t->mu);
    t->cmd = kind;
    t->cmd_endpoint = endpoint;
    t->cmd_data = data;
    t->cmd_actual = actual;
    t->cmd_size = size;
    t->cmd_sock = sock;
    t->cmd_interval = interval;
    t->cmd_timeout = timeout;
    t->cmd_done = false;
    if (t->opts.inline_io) { /* the caller is the I/O thread */
        run_command(t);
    } else {
        wake(t);
        while (!t->cmd_done)
            pthread_cond_wait(&t->cmd_cv, &t->mu);
    }
    int rc = t->cmd_result;
    /* the detail was written where the command ran; repeat it on the caller's thread */
    if (rc < 0) ordo__error_set(rc, "%s", t->cmd_err);
    pthread_mutex_unlock(&t->mu);
    return rc;
}

int ordo__transport_bind(ordo__transport_t *t, const char *endpoint, int data, char *actual,
                        size_t size)
{
    return command(t, CMD_BIND, endpoint, data, actual, size, 0, 0, 0);
}

int ordo__transport_connect(ordo__transport_t *t, const char *endpoint, int data)
{
    return command(t, CMD_CONNECT, endpoint, data, NULL, 0, 0, 0, 0);
}

int ordo__transport_heartbeat(ordo__transport_t *t, int sock, int interval_ms, int timeout_ms,
                            int timeout_max_ms)
{
    return ordo__transport_hb_start(t, sock, interval_ms, timeout_ms, timeout_max_ms);
}

int ordo__transport_send(ordo__transport_t *t, ordo__msg_t *m)
{
    if (t->opts.inline_io) { /* the caller is the I/O thread: straight to the socket */
        dispatch(t, m);
        return 0;
    }
    pthread_mutex_lock(&t->mu);
    while (t->out.count == t->out.cap && !t->stopping)
        pthread_cond_wait(&t->out_cv, &t->mu);
    if (t->stopping) {
        pthread_mutex_unlock(&t->mu);
        ordo__msg_close(m);
        return ORDO_ERR_CLOSED;
    }
    bool was_empty = t->out.count == 0;
    ring_push(&t->out, m, 0);
    pthread_mutex_unlock(&t->mu);
    if (was_empty) wake(t);
    return 0;
}

static int recv_inline(ordo__transport_t *t, ordo__msg_t *m, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : ordo__clock_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        if (t->in.count > 0) {
            ring_pop(&t->in, m);
            pthread_mutex_unlock(&t->mu);
            return 0;
        }
        pthread_mutex_unlock(&t->mu);
        int64_t now = ordo__clock_ns();
        if (now >= deadline && timeout_ms >= 0) {
            if (!io_cycle(t, 0)) return ORDO_ERR_CLOSED;
            pthread_mutex_lock(&t->mu);
            int got = t->in.count > 0;
            if (got) ring_pop(&t->in, m);
            pthread_mutex_unlock(&t->mu);
            return got ? 0 : ORDO_ERR_TIMEDOUT;
        }
        int wait_ms = deadline == INT64_MAX ? -1 : (int)((deadline - now + 999999) / 1000000);
        if (!io_cycle(t, wait_ms)) return ORDO_ERR_CLOSED;
    }
}

int ordo__transport_recv(ordo__transport_t *t, ordo__msg_t *m, int timeout_ms)
{
    if (t->opts.inline_io) return recv_inline(t, m, timeout_ms);
    struct timespec ts;
    if (timeout_ms > 0) {
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t ns = ts.tv_nsec + (int64_t)timeout_ms * 1000000;
        ts.tv_sec += ns / 1000000000;
        ts.tv_nsec = ns % 1000000000;
    }
    pthread_mutex_lock(&t->mu);
    while (t->in.count == 0) {
        if (timeout_ms == 0) goto timeout;
        if (timeout_ms < 0) {
            pthread_cond_wait(&t->in_cv, &t->mu);
        } else if (pthread_cond_timedwait(&t->in_cv, &t->mu, &ts) == ETIMEDOUT) {
            if (t->in.count == 0) goto timeout;
        }
    }
    ring_pop(&t->in, m);
    bool resume = t->in_full;
    t->in_full = false;
    pthread_mutex_unlock(&t->mu);
    if (resume) wake(t);
    return 0;
timeout:
    pthread_mutex_unlock(&t->mu);
    return ORDO_ERR_TIMEDOUT;
}

void ordo__transport_post(ordo__transport_t *t, ordo__msg_t *m)
{
    ordo__transport_put_inbound(t, m);
    if (t->opts.inline_io) wake(t); /* the owner may be blocked in zmq_poll */
}

int64_t ordo__transport_link_free_ns(ordo__transport_t *t)
{
    return atomic_load(&t->link_free_ns);
}

int ordo__transport_outbound(ordo__transport_t *t)
{
    pthread_mutex_lock(&t->mu);
    int n = t->out.count;
    pthread_mutex_unlock(&t->mu);
    return n + atomic_load(&t->link_pending);
}

void ordo__transport_get_stats(ordo__transport_t *t, ordo__transport_stats_t *out)
{
    out->msgs_in = atomic_load(&t->msgs_in);
    out->msgs_out = atomic_load(&t->msgs_out);
    out->bytes_in = atomic_load(&t->bytes_in);
    out->bytes_out = atomic_load(&t->bytes_out);
    out->malformed = atomic_load(&t->malformed);
}

void ordo__transport_keep_buffers(void)
{
    /* glibc's defaults map every buffer above a dynamic threshold on its own and trim freed
     * heap tops, so each 4 MiB chunk of a 64 MiB tensor cost about a thousand page faults
     * per message (measured: ~6,000 faults per 64 MiB round trip on the server). Fixed
     * thresholds keep the pages: a server's steady state reuses the same buffers. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

void *ordo__transport_zmq_ctx(ordo__transport_t *t)
{
    return t->ctx;
}
