/* transport_heartbeat: the heartbeat thread. It owns a DEALER of its own to the peer that
 * the transport heartbeats (the scheduler), sends a HEARTBEAT every interval, answers the
 * peer's probes at once and decides the peer's death (common/liveness.h: an adaptive timeout
 * and an unanswered probe). It does nothing else, so neither compute on the application's
 * threads nor a busy I/O loop can delay it; a verdict of death reaches the application as a
 * PEER_DEAD message in the inbound queue. */
#include "common/clock.h"
#include "common/curve.h"
#include "common/error.h"
#include "common/liveness.h"
#include "common/log.h"
#include "common/transport.h"
#include "common/transport_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>
#include <zmq.h>

/* the settings the thread works with, copied under hb.mu */
typedef struct {
    int sock, interval_ms, floor_ms, ceil_ms;
    bool stop;
} hb_conf_t;

static hb_conf_t settings(hb_t *h)
{
    pthread_mutex_lock(&h->mu);
    hb_conf_t c = {h->sock, h->interval_ms, h->floor_ms, h->ceil_ms, h->stop};
    pthread_mutex_unlock(&h->mu);
    return c;
}

static void send_beat(ordo__transport_t *t, void *z, uint32_t flags)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_HEARTBEAT);
    m.hdr.role = (uint8_t)t->opts.role;
    m.hdr.rank = t->opts.rank;
    m.hdr.req = t->hb.id;
    m.hdr.flags = flags;
    if (ordo__wire_send(z, 0, &m, ZMQ_DONTWAIT) != 0) ordo__msg_close(&m); /* not connected yet */
}

/* open_socket: the thread's DEALER, with the transport's limits and security */
static void *open_socket(ordo__transport_t *t, const char *endpoint)
{
    void *z = zmq_socket(t->ctx, ZMQ_DEALER);
    if (!z) return NULL;
    int linger = 0, ivl = 100, hwm = 16;
    zmq_setsockopt(z, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(z, ZMQ_RECONNECT_IVL, &ivl, sizeof ivl);
    zmq_setsockopt(z, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(z, ZMQ_MAXMSGSIZE, &t->opts.max_msg_bytes, sizeof t->opts.max_msg_bytes);
    if ((t->curve && ordo__curve_setup(t->curve, z, false) != 0) || zmq_connect(z, endpoint) != 0) {
        zmq_close(z);
        return NULL;
    }
    return z;
}

/* drain reads the peer's answers: every HEARTBEAT_ACK is a beat; a probe is answered */
static void drain(ordo__transport_t *t, void *z, ordo__liveness_t *lv)
{
    ordo__msg_t m;
    for (;;) {
        int rc = ordo__wire_recv(z, 0, &m, ZMQ_DONTWAIT);
        if (rc == ORDO_ERR_AGAIN || rc == ORDO_ERR_CLOSED) return;
        if (rc != 0) continue;
        if (m.hdr.type == ORDO_MSG_HEARTBEAT_ACK) {
            ordo__liveness_beat(lv, ordo__clock_ns());
            if (m.hdr.flags & ORDO_FLAG_PING) send_beat(t, z, 0);
        }
        ordo__msg_close(&m);
    }
}

static void report_dead(ordo__transport_t *t, int sock, int64_t silent_ms)
{
    bool no = false;
    if (!atomic_compare_exchange_strong(&t->socks[sock].dead_reported, &no, true)) return;
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PEER_DEAD);
    m.sock = sock;
    m.hdr.key = (uint32_t)sock;
    m.hdr.iter = silent_ms;
    ordo__transport_post(t, &m);
}

static void *hb_main(void *arg)
{
    ordo__transport_t *t = arg;
    hb_t *h = &t->hb;
    hb_conf_t c = settings(h);
    void *z = open_socket(t, t->socks[c.sock].endpoint);
    if (!z) {
        ORDO_ERROR("heartbeats: cannot open a socket to %s: %s", t->socks[c.sock].endpoint,
                   zmq_strerror(errno));
        return NULL;
    }
    ordo__liveness_t lv;
    int64_t now = ordo__clock_ns(), next_beat = now;
    ordo__liveness_init(&lv, now, c.floor_ms, c.ceil_ms, 2 * c.interval_ms);
    hb_conf_t used = c;
    int fd = -1;
    size_t fdsz = sizeof fd;
    zmq_getsockopt(z, ZMQ_FD, &fd, &fdsz);
    while (!(c = settings(h)).stop) {
        if (atomic_exchange(&h->rearm, false)) { /* a new peer: its silence counts from now */
            now = ordo__clock_ns();
            ordo__liveness_init(&lv, now, used.floor_ms, used.ceil_ms, 2 * used.interval_ms);
            atomic_store(&t->socks[c.sock].last_in_ns, now);
            atomic_store(&t->socks[c.sock].dead_reported, false);
        }
        if (c.floor_ms != used.floor_ms || c.ceil_ms != used.ceil_ms) { /* new timeouts */
            lv.floor_ms = c.floor_ms;
            lv.ceil_ms = c.ceil_ms < c.floor_ms ? c.floor_ms : c.ceil_ms;
            lv.probe_ms = 2 * c.interval_ms;
            used = c;
        }
        drain(t, z, &lv);
        now = ordo__clock_ns();
        /* whatever the peer sent on the application's socket counts as life too */
        int64_t in = atomic_load(&t->socks[c.sock].last_in_ns);
        if (in > lv.last_ns) ordo__liveness_seen(&lv, in);
        if (now >= next_beat) {
            send_beat(t, z, 0);
            next_beat = now + (int64_t)c.interval_ms * 1000000;
        }
        if (!atomic_load(&t->socks[c.sock].dead_reported)) {
            ordo__live_t v = ordo__liveness_check(&lv, now);
            if (v == ORDO_LIVE_PROBE) {
                ORDO_DEBUG("heartbeats: %s silent for %lld ms; probing",
                           t->socks[c.sock].endpoint, (long long)ordo__liveness_silent_ms(&lv, now));
                send_beat(t, z, ORDO_FLAG_PING);
            } else if (v == ORDO_LIVE_DEAD) {
                report_dead(t, c.sock, ordo__liveness_silent_ms(&lv, now));
            }
        }
        int64_t until = ordo__liveness_next_ns(&lv);
        if (next_beat < until) until = next_beat;
        int64_t wait = (until - ordo__clock_ns()) / 1000000 + 1;
        struct pollfd fds[2] = {{.fd = h->evfd, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
        /* ZMQ_FD is edge-triggered: drain() above emptied the socket, so an edge comes */
        if (poll(fds, 2, wait < 0 ? 0 : (int)wait) > 0 && (fds[0].revents & POLLIN)) {
            uint64_t v;
            ssize_t r = read(h->evfd, &v, sizeof v);
            (void)r;
        }
    }
    zmq_close(z);
    return NULL;
}

int ordo__transport_hb_start(ordo__transport_t *t, int sock, int interval_ms, int floor_ms,
                             int ceil_ms)
{
    hb_t *h = &t->hb;
    if (sock < 0 || sock >= t->nsocks)
        return ordo__error_set(ORDO_ERR_INVAL, "heartbeat: no socket %d", sock);
    pthread_mutex_lock(&h->mu);
    bool running = h->started;
    if (running && sock != h->sock) {
        pthread_mutex_unlock(&h->mu);
        return ordo__error_set(ORDO_ERR_INVAL, "heartbeat: already on socket %d", h->sock);
    }
    h->sock = sock;
    h->interval_ms = interval_ms;
    h->floor_ms = floor_ms;
    h->ceil_ms = ceil_ms;
    pthread_mutex_unlock(&h->mu);
    if (running) {
        uint64_t one = 1;
        ssize_t r = write(h->evfd, &one, sizeof one);
        (void)r;
        return 0;
    }
    atomic_store(&t->socks[sock].last_in_ns, ordo__clock_ns());
    if (pthread_create(&h->th, NULL, hb_main, t) != 0)
        return ordo__error_set(ORDO_ERR_IO, "heartbeat: pthread_create failed");
    h->started = true;
    return 0;
}

void ordo__transport_hb_stop(ordo__transport_t *t)
{
    hb_t *h = &t->hb;
    if (!h->started) return;
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_mutex_unlock(&h->mu);
    uint64_t one = 1;
    ssize_t r = write(h->evfd, &one, sizeof one);
    (void)r;
    pthread_join(h->th, NULL);
    h->started = false;
}

void ordo__transport_heartbeat_rearm(ordo__transport_t *t)
{
    hb_t *h = &t->hb;
    if (!h->started) return;
    atomic_store(&h->rearm, true);
    uint64_t one = 1;
    ssize_t r = write(h->evfd, &one, sizeof one);
    (void)r;
}

uint64_t ordo__transport_heartbeat_id(const ordo__transport_t *t)
{
    return t->hb.id;
}

/* ordo__transport_hb_init: the id and the wake-up fd, at ordo__transport_new */
int ordo__transport_hb_init(ordo__transport_t *t)
{
    hb_t *h = &t->hb;
    pthread_mutex_init(&h->mu, NULL);
    h->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (h->evfd < 0) return ordo__error_set(ORDO_ERR_IO, "eventfd: %s", strerror(errno));
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id)
        id = (uint64_t)ordo__clock_ns() * 6364136223846793005ull ^ (uint64_t)getpid();
    h->id = (id >> 2) | 1; /* positive in a JSON integer, never 0 */
    return 0;
}

/* ordo__transport_hb_fini frees what ordo__transport_hb_init made (the thread stopped) */
void ordo__transport_hb_fini(ordo__transport_t *t)
{
    if (t->hb.evfd >= 0) close(t->hb.evfd);
    t->hb.evfd = -1;
    pthread_mutex_destroy(&t->hb.mu);
}
