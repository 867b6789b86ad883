/* transport_internal: what the transport's files share (common/transport.c, the I/O thread;
 * transport_monitor.c, the sockets' monitors): the transport's state. Not for other modules. */
#ifndef ORDO_TRANSPORT_INTERNAL_H
#define ORDO_TRANSPORT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/curve.h"
#include "common/transport.h"

#define MAX_SOCKS    256
#define RECV_BATCH   64
#define LOG_EVERY_NS 5000000000LL /* a socket's repeated event lines: one per 5 s */

typedef enum { CMD_NONE, CMD_BIND, CMD_CONNECT } cmd_kind_t;

typedef struct {
    void *z;
    bool router, data;
    _Atomic int64_t last_in_ns; /* read by the heartbeat thread too */
    _Atomic bool dead_reported; /* PEER_DEAD was queued (by the monitor or the heartbeats) */
    int fd;       /* ZMQ_FD: readable when the socket's state may have changed */
    bool pending; /* may hold messages: drain before sleeping (see io_cycle) */
    char endpoint[256];
    void *mon;            /* PAIR receiving the socket's monitor events */
    int mon_fd;           /* its ZMQ_FD */
    bool refused;         /* a peer refused our handshake: reported once as PEER_DEAD */
    int64_t logged_ns[5]; /* the last line of each kind of event (see event_kind) */
    int unlogged[5];      /* events of that kind left out since */
} sock_t;

/* the heartbeat thread (transport_heartbeat.c): its own DEALER to one peer, so that neither
 * compute nor a busy I/O loop can hold back the heartbeats or the verdict on the peer */
typedef struct {
    pthread_t th;
    bool started;
    pthread_mutex_t mu; /* the settings below, changed by ordo__transport_heartbeat */
    int sock;           /* the transport's socket it stands for (PEER_DEAD's key) */
    int interval_ms, floor_ms, ceil_ms;
    bool stop;
    int evfd;          /* wakes the thread: new settings or stop */
    uint64_t id;       /* stamped in every HEARTBEAT's req: the peer tells us apart by it */
    _Atomic bool rearm; /* a new peer answers at the endpoint: start its verdict afresh */
} hb_t;

/* rejected traffic (transport_drop.c) */
#define DROP_PEERS       64 /* peers followed one by one; more share one count */
#define DROP_REASONS     16
#define DROP_LINES_PER_S 10 /* log lines about dropped messages per second, all peers */

typedef struct {
    bool used;
    int sock;
    uint8_t rid[ORDO_WIRE_MAX_RID];
    size_t rid_len;
    int64_t seen_ns, logged_ns; /* the last drop, the last line */
    int64_t pending;            /* drops since that line */
    char last_reason[ORDO_DROP_REASON_LEN];
} drop_peer_t;

typedef struct {
    pthread_mutex_t mu;
    drop_peer_t peers[DROP_PEERS];
    char reasons[DROP_REASONS][ORDO_DROP_REASON_LEN];
    uint64_t counts[DROP_REASONS];
    int n_reasons;
    int64_t suppressed;          /* drops of peers no longer followed, not logged yet */
    int64_t window_ns; int lines; /* lines in the current second */
} drop_table_t;

/* a ring of messages */
typedef struct {
    ordo__msg_t *items;
    int64_t *when; /* link FIFO only: hand-over time */
    int cap, head, count;
} ring_t;

struct ordo__transport {
    ordo__transport_opts_t opts;
    void *ctx;
    pthread_t io;
    bool io_started;
    int evfd, tfd;
    pthread_mutex_t mu;
    pthread_cond_t in_cv, out_cv, cmd_cv;
    ring_t in, out;
    /* one synchronous command at a time, under mu */
    cmd_kind_t cmd;
    const char *cmd_endpoint;
    int cmd_data, cmd_sock, cmd_interval, cmd_timeout, cmd_result;
    char *cmd_actual;
    size_t cmd_size;
    char cmd_err[512];
    bool cmd_done;
    bool stopping;
    int linger_ms;
    bool in_full; /* the I/O thread stopped reading because the inbound ring was full */
    /* I/O thread only */
    sock_t socks[MAX_SOCKS];
    int nsocks;
    int rr;            /* the socket drained first next time */
    int64_t polled_ns; /* when the loop last polled the sockets' ZMQ_FDs */
    ring_t link;
    _Atomic int64_t link_free_ns;
    _Atomic int link_pending;
    int64_t armed_at;    /* what the timerfd is set to (INT64_MAX: disarmed) */
    ordo__curve_t *curve; /* NULL: plain TCP */
    char curve_dir[ORDO_CONF_PATH];
    _Atomic uint64_t msgs_in, msgs_out, bytes_in, bytes_out, malformed;
    hb_t hb;
    drop_table_t drops;
};

/* ordo__transport_put_inbound queues m (moved) for the owner's ordo__transport_recv. */
void ordo__transport_put_inbound(ordo__transport_t *t, ordo__msg_t *m);

/* ordo__transport_monitor_open starts monitoring socket s (slot i): handshakes, refusals
 * and disconnects come to its PAIR. */
int ordo__transport_monitor_open(ordo__transport_t *t, sock_t *s, int i);

/* ordo__transport_monitor_close closes s's monitor; NULL-safe on a socket without one. */
void ordo__transport_monitor_close(sock_t *s);

/* ordo__transport_monitor_drain handles the events waiting on socket i's monitor: log lines
 * (rate-limited) and, for a refused handshake, a PEER_DEAD with the reason. */
void ordo__transport_monitor_drain(ordo__transport_t *t, int i);

/* ordo__transport_hb_start starts (or, running, re-sets) the heartbeat thread for socket
 * sock: a HEARTBEAT every interval_ms, the peer declared dead (a PEER_DEAD) after a silence
 * longer than the adaptive timeout (floor_ms to ceil_ms) and an unanswered probe. */
int ordo__transport_hb_start(ordo__transport_t *t, int sock, int interval_ms, int floor_ms,
                             int ceil_ms);

/* ordo__transport_hb_init makes the heartbeat id and wake-up fd (ordo__transport_new);
 * ordo__transport_hb_fini frees them once the thread stopped. */
int ordo__transport_hb_init(ordo__transport_t *t);
void ordo__transport_hb_fini(ordo__transport_t *t);

/* ordo__transport_hb_stop ends the heartbeat thread; safe when none runs. */
void ordo__transport_hb_stop(ordo__transport_t *t);

#endif
