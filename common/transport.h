/* transport: ordo's ZeroMQ layer. One I/O thread per process owns every socket (ROUTER
 * where a process serves, DEALER towards each peer), sends what the application queues,
 * receives whole validated messages into a bounded inbound queue; a heartbeat thread of its
 * own keeps heartbeats to the scheduler and reports a silent peer as a local PEER_DEAD
 * message. With link
 * emulation on, data sockets share one paced egress link of the configured rate and
 * latency. Application threads only touch the queues. Every socket bounds what a peer may
 * send (frame size, queued messages) and, with CURVE on, encrypts and authenticates
 * (common/curve.h); a handshake a peer refused ends that peer as a PEER_DEAD whose text
 * frame says why, and the failures and cut-off peers are logged. */
#ifndef ORDO_TRANSPORT_H
#define ORDO_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/conf.h"
#include "common/wire.h"

typedef struct ordo__transport ordo__transport_t;

typedef struct ordo__transport_opts {
    int inbound_capacity;  /* messages; default 4096 */
    int outbound_capacity; /* messages; default 4096 */
    double bandwidth_bps;  /* emulated egress rate of data sockets; 0 = none */
    double latency_us;     /* emulated one-way latency of data sockets */
    double msg_us;         /* emulated link occupancy per data message, on top of its bytes */
    int role, rank;        /* stamped on heartbeats */
    bool inline_io;        /* no I/O thread: the one thread that calls send/recv does the I/O
                            * inside recv (other threads may only call ordo__transport_post) */
    int64_t max_msg_bytes; /* the largest frame a socket accepts (0: 256 MiB) */
    int recv_hwm, send_hwm; /* messages queued per peer and socket (0: 1000, 65536) */
    const char *curve_keys; /* CURVE with this key folder (NULL or "": plain TCP); read in
                             * ordo__transport_new */
    const char *curve_client; /* this process's client pair there (NULL: the server pair) */
} ordo__transport_opts_t;

typedef struct ordo__transport_stats {
    uint64_t msgs_in, msgs_out, bytes_in, bytes_out, malformed;
} ordo__transport_stats_t;

/* ordo__transport_opts_conf sets the limits ([net] max_message_mb, recv_hwm, send_hwm) and
 * the security ([security]) of opts from conf; opts->role says which key pair a process
 * presents (workers: security.client). opts points into conf until ordo__transport_new. */
void ordo__transport_opts_conf(ordo__transport_opts_t *opts, const ordo__conf_t *conf);

/* ordo__transport_new creates a transport and starts its I/O thread; opts may be NULL. */
int ordo__transport_new(const ordo__transport_opts_t *opts, ordo__transport_t **out);

/* ordo__transport_destroy stops the I/O thread (unsent messages get up to linger_ms to
 * leave) and frees everything; NULL-safe, sets *t = NULL. */
void ordo__transport_destroy(ordo__transport_t **t, int linger_ms);

/* ordo__transport_bind opens a ROUTER socket on endpoint ("tcp://127.0.0.1:0" picks a free
 * port); writes the bound endpoint to actual; data marks it as paced by link emulation.
 * Returns the socket index (>= 0) or a negative error. */
int ordo__transport_bind(ordo__transport_t *t, const char *endpoint, int data, char *actual,
                        size_t size);

/* ordo__transport_connect opens a DEALER socket to endpoint; returns its socket index. */
int ordo__transport_connect(ordo__transport_t *t, const char *endpoint, int data);

/* ordo__transport_heartbeat starts the heartbeat thread towards sock's peer (a DEALER of its
 * own to the same endpoint, which compute and the I/O loop cannot hold back): a HEARTBEAT
 * (req = ordo__transport_heartbeat_id) every interval_ms, and a PEER_DEAD message (hdr.key =
 * sock, hdr.iter = the silence in ms) once the peer was silent past an adaptive timeout
 * between timeout_ms and timeout_max_ms (common/liveness.h) and did not answer a probe
 * within 2 x interval_ms. Called again, it changes the settings. */
int ordo__transport_heartbeat(ordo__transport_t *t, int sock, int interval_ms, int timeout_ms,
                             int timeout_max_ms);

/* ordo__transport_heartbeat_rearm starts the verdict on the heartbeated peer afresh after a
 * PEER_DEAD, for a new peer at the same endpoint (a restarted scheduler): its silence counts
 * from now, and a second death is reported again. */
void ordo__transport_heartbeat_rearm(ordo__transport_t *t);

/* ordo__transport_heartbeat_id returns the id the heartbeats carry (a node sends it in its
 * REGISTER, so the scheduler knows the heartbeat socket's messages as that node's). */
uint64_t ordo__transport_heartbeat_id(const ordo__transport_t *t);

/* ordo__transport_send queues m for sending on m->sock (to m->rid on a ROUTER). The frames
 * move into the queue and m is left empty. Blocks while the outbound queue is full. */
int ordo__transport_send(ordo__transport_t *t, ordo__msg_t *m);

/* ordo__transport_recv takes the next inbound message into m (which the caller closes);
 * waits up to timeout_ms (-1 = forever, 0 = poll). ORDO_ERR_TIMEDOUT when none came. */
int ordo__transport_recv(ordo__transport_t *t, ordo__msg_t *m, int timeout_ms);

/* ordo__transport_post puts a local message (e.g. WAKE) into the inbound queue, so a thread
 * blocked in ordo__transport_recv wakes up; thread-safe. m is left empty. */
void ordo__transport_post(ordo__transport_t *t, ordo__msg_t *m);

/* ordo__transport_link_free_ns returns the monotonic time at which the emulated egress
 * link finishes what it was given (0 when emulation is off). */
int64_t ordo__transport_link_free_ns(ordo__transport_t *t);

/* ordo__transport_outbound returns how many messages wait in the outbound queue or on the
 * emulated link (not yet handed to ZeroMQ). */
int ordo__transport_outbound(ordo__transport_t *t);

#define ORDO_DROP_REASON_LEN 48

/* ordo__transport_drop records that message m (received on this transport) was refused for
 * reason, a short fixed phrase ("malformed", "unregistered peer") that counts go by; detail
 * (may be NULL) is only logged. Log lines are summaries: at most one per second per peer
 * and a few per second in all, each with the count of what it stands for. Thread-safe. */
void ordo__transport_drop(ordo__transport_t *t, const ordo__msg_t *m, const char *reason,
                         const char *detail);

/* ordo__transport_dropped copies at most max (reason, count) pairs of what was refused so far
 * (by the transport and through ordo__transport_drop) and returns how many. */
int ordo__transport_dropped(ordo__transport_t *t, char (*reasons)[ORDO_DROP_REASON_LEN],
                           uint64_t *counts, int max);

/* ordo__transport_stats copies the counters. */
void ordo__transport_get_stats(ordo__transport_t *t, ordo__transport_stats_t *out);

/* ordo__transport_keep_buffers tells malloc to keep the memory of freed message buffers
 * (tensor chunks of up to 32 MiB) instead of returning it to the kernel and faulting it back
 * in on the next message: for processes that move tensors (servers, workers). */
void ordo__transport_keep_buffers(void);

/* ordo__transport_zmq_ctx returns the ZeroMQ context (for tests that open raw sockets). */
void *ordo__transport_zmq_ctx(ordo__transport_t *t);

#endif
