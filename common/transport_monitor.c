/* transport_monitor: the transport's socket monitors (zmq_socket_monitor): handshakes that
 * failed (CURVE keys, protocol), peers cut off for breaking the limits, disconnects; logged
 * at most once per kind every few seconds, and a refused handshake reported to the owner
 * as a PEER_DEAD with the reason. Runs on the I/O thread. */
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport_internal.h"

#include <stdio.h>
#include <string.h>
#include <zmq.h>

/* monitor_open makes socket i report its handshakes and disconnections to a PAIR the I/O
 * loop polls */
int ordo__transport_monitor_open(ordo__transport_t *t, sock_t *s, int i)
{
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://ordo-monitor-%p-%d", (void *)t, i);
    int events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_DISCONNECTED;
    if (zmq_socket_monitor(s->z, ep, events) != 0)
        return ordo__error_set(ORDO_ERR_IO, "zmq_socket_monitor: %s", zmq_strerror(errno));
    s->mon = zmq_socket(t->ctx, ZMQ_PAIR);
    size_t fdsz = sizeof s->mon_fd;
    if (!s->mon || zmq_connect(s->mon, ep) != 0 ||
        zmq_getsockopt(s->mon, ZMQ_FD, &s->mon_fd, &fdsz) != 0) {
        int rc = ordo__error_set(ORDO_ERR_IO, "socket monitor: %s", zmq_strerror(errno));
        if (s->mon) zmq_close(s->mon);
        s->mon = NULL;
        zmq_socket_monitor(s->z, NULL, 0);
        return rc;
    }
    return 0;
}

void ordo__transport_monitor_close(sock_t *s)
{
    if (!s->mon) return;
    zmq_socket_monitor(s->z, NULL, 0);
    int zero = 0;
    zmq_setsockopt(s->mon, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(s->mon);
    s->mon = NULL;
}

static int event_kind(uint16_t ev, uint32_t value)
{
    if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
        return value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? 2 : 3;
    return ev == ZMQ_EVENT_DISCONNECTED ? 0 : ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? 1 : 4;
}

/* may_log: whether socket s may log a line about event ev now (one per kind and
 * LOG_EVERY_NS; the lines left out are counted into the next) */
static bool may_log(sock_t *s, uint16_t ev, uint32_t value, int64_t now, int *left_out)
{
    int k = event_kind(ev, value);
    if (s->logged_ns[k] && now - s->logged_ns[k] < LOG_EVERY_NS) {
        s->unlogged[k]++;
        return false;
    }
    *left_out = s->unlogged[k];
    s->unlogged[k] = 0;
    s->logged_ns[k] = now;
    return true;
}

static const char *protocol_why(uint32_t code)
{
    switch (code) {
    case ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
        return "one side uses CURVE and the other not (security.curve differs)";
    case ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
        return "the CURVE handshake did not decrypt: the client does not hold this cluster's "
               "server.pub";
    default:
        return "a ZMTP protocol error";
    }
}

/* on_event: one monitor event of socket i. A refusal of our handshake by the peer we
 * connected to (its ZAP handler said no, or the mechanisms differ) will not change by
 * retrying: the peer is reported lost, with the reason as the PEER_DEAD's text. */
static void on_event(ordo__transport_t *t, int i, uint16_t ev, uint32_t value)
{
    sock_t *s = &t->socks[i];
    int64_t now = ordo__clock_ns();
    int left = 0;
    char why[1400] = "";
    if (ev == ZMQ_EVENT_DISCONNECTED) {
        if (s->router && may_log(s, ev, value, now, &left))
            ORDO_INFO("transport: a peer's connection to %s closed: the peer left, or it was "
                      "cut off for breaking the protocol (e.g. a frame above "
                      "net.max_message_mb = %lld MiB)%s",
                      s->endpoint, (long long)(t->opts.max_msg_bytes >> 20),
                      left ? " (and earlier ones)" : "");
        return;
    }
    if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        snprintf(why, sizeof why,
                 "the peer refused this process's CURVE key (ZAP status %u): "
                 "its public key is not in the peer's %s/clients",
                 value, t->curve_dir[0] ? t->curve_dir : "key folder");
    else if (ev == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
        snprintf(why, sizeof why, "%s", protocol_why(value));
    else
        snprintf(why, sizeof why, "the handshake failed (%s)%s", zmq_strerror((int)value),
                 !t->curve   ? ": does the peer use CURVE ([security] curve)?"
                 : s->router ? ": the peer may not use CURVE, or not hold this cluster's "
                               "server.pub"
                             : ": the peer may not hold this cluster's keys, or this process "
                               "not its server.pub");
    if (s->router) {
        /* the ZAP handler has named the refused key already */
        if (ev != ZMQ_EVENT_HANDSHAKE_FAILED_AUTH && may_log(s, ev, value, now, &left))
            ORDO_WARN("transport: refused a connection to %s: %s%s", s->endpoint, why,
                      left ? " (and earlier ones)" : "");
        return;
    }
    bool final = ev == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH || ev == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL;
    if (s->refused || !may_log(s, ev, value, now, &left)) return;
    ORDO_ERROR("transport: connecting to %s: %s", s->endpoint, why);
    if (!final) return;
    s->refused = true;
    s->dead_reported = true; /* no second PEER_DEAD from the heartbeats */
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PEER_DEAD);
    m.sock = i;
    m.hdr.key = (uint32_t)i;
    m.hdr.iter = -1;
    char text[1800];
    snprintf(text, sizeof text, "%s refused the connection: %s", s->endpoint, why);
    ordo__msg_add_text(&m, text);
    ordo__transport_put_inbound(t, &m);
}

/* drain_monitor reads socket i's pending monitor events (two frames each) */
void ordo__transport_monitor_drain(ordo__transport_t *t, int i)
{
    void *mon = t->socks[i].mon;
    for (;;) {
        zmq_msg_t a, b;
        zmq_msg_init(&a);
        if (zmq_msg_recv(&a, mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&a);
            return;
        }
        uint16_t ev = 0;
        uint32_t value = 0;
        if (zmq_msg_size(&a) >= 6) {
            memcpy(&ev, zmq_msg_data(&a), 2);
            memcpy(&value, (char *)zmq_msg_data(&a) + 2, 4);
        }
        bool more = zmq_msg_more(&a);
        zmq_msg_close(&a);
        while (more) { /* the endpoint frame */
            zmq_msg_init(&b);
            if (zmq_msg_recv(&b, mon, ZMQ_DONTWAIT) < 0)
                more = false;
            else
                more = zmq_msg_more(&b);
            zmq_msg_close(&b);
        }
        on_event(t, i, ev, value);
    }
}
