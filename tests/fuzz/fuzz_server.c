/* fuzz_server: arbitrary frames reach a live server's handlers. One server object (the
 * daemon as a library, server/server.h) holds two keys for two workers, as in
 * tests/unit/test_server.c, behind its own transport's ROUTER; each input becomes one
 * multipart ZeroMQ message sent from a DEALER over inproc, received by the server's transport
 * (which validates it, as for a TCP peer) and handed to ordo__server_handle. The server must
 * neither crash nor stop serving, whatever comes.
 *
 * Input: byte 0 picks the form. Even: a header built from the next 16 bytes (type, role,
 * rank, key, chunk, iter, flags, dtype, frame count, and whether the header tells the frames'
 * true lengths), encoded as a valid header, the rest cut into that many payload frames; this
 * reaches deep into the handlers. Odd: raw frames, each a 2-byte little-endian length and its
 * bytes (the first is the header), as a hostile peer could send them. */
#include "common/error.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/node.h"
#include "common/transport.h"
#include "server/server.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define W 2

static ordo__server_t *srv;
static ordo__transport_t *tp; /* the server's (owned by srv) */
static void *dealer;         /* the fuzzing peer */

static void setup(void)
{
    ordo__log_set_level(getenv("ORDO_FUZZ_LOG")
                           ? ORDO_LOG_DEBUG
                           : ORDO_LOG_ERROR); /* every refused message is a WARN line */
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    conf.lr = 0.5;
    ordo__node_t node = {0};
    int64_t numel[2] = {8, 4};
    if (ordo__keys_partition(numel, 2, sizeof(float), 1 << 20, 0, 1, &node.keys) != 0)
        __builtin_trap();
    node.role = ORDO_ROLE_SERVER;
    node.rank = 0;
    node.n_servers = 1;
    node.n_workers = W;
    node.sched_sock = -1;
    snprintf(node.run_dir, sizeof node.run_dir, "/tmp");
    ordo__transport_opts_t opts = {.role = ORDO_ROLE_SERVER, .inline_io = true};
    if (ordo__transport_new(&opts, &node.tp) != 0) __builtin_trap();
    char ep[256];
    int sock = ordo__transport_bind(node.tp, "inproc://fuzz-server", 1, ep, sizeof ep);
    if (sock < 0) __builtin_trap();
    tp = node.tp;
    if (ordo__server_new(&conf, &node, sock, &srv) != 0) __builtin_trap();
    dealer = zmq_socket(ordo__transport_zmq_ctx(tp), ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
    if (!dealer || zmq_connect(dealer, ep) != 0) __builtin_trap();
}

static uint32_t le(const uint8_t *p, int n)
{
    uint32_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* send_structured: a valid header from the input's fields, then payload frames */
static bool send_structured(const uint8_t *d, size_t n)
{
    if (n < 17) return false;
    ordo__wire_hdr_t h = {0};
    h.type = (uint8_t)(1 + d[0] % (ORDO_MSG_TYPE_MAX - 1));
    h.role = d[1] % 3;
    h.rank = (int8_t)d[2];
    h.key = d[3] < 250 ? d[3] % 4 : le(d + 3, 2);
    h.chunk = d[5] % 4;
    h.iter = (int16_t)le(d + 6, 2);
    h.flags = le(d + 8, 4);
    h.dtype = d[12] % ORDO_DTYPE_MAX;
    h.req = d[13];
    int frames = d[14] % 4;
    bool lie = d[15] & 1;
    d += 16;
    n -= 16;
    h.nframes = (uint32_t)frames;
    size_t each = frames ? n / (size_t)frames : 0;
    for (int i = 0; i < frames; i++)
        h.lens[i] = i == frames - 1 ? n - each * (size_t)i : each;
    if (lie && frames) h.lens[0] += 4;
    uint8_t hb[ORDO_WIRE_MAX_HDR];
    size_t hl;
    if (ordo__wire_encode_hdr(&h, hb, sizeof hb, &hl) != 0) return false;
    zmq_send(dealer, hb, hl, frames ? ZMQ_SNDMORE : 0);
    for (int i = 0; i < frames; i++) {
        size_t len = i == frames - 1 ? n - each * (size_t)i : each;
        zmq_send(dealer, d + each * (size_t)i, len, i < frames - 1 ? ZMQ_SNDMORE : 0);
    }
    return true;
}

/* send_raw: length-prefixed frames as they come */
static bool send_raw(const uint8_t *d, size_t n)
{
    const uint8_t *f[8];
    size_t len[8];
    int k = 0;
    while (k < 8 && n >= 2) {
        size_t l = le(d, 2);
        if (l > n - 2) l = n - 2;
        f[k] = d + 2;
        len[k++] = l;
        d += 2 + l;
        n -= 2 + l;
    }
    if (k == 0) return false;
    for (int i = 0; i < k; i++)
        zmq_send(dealer, f[i], len[i], i < k - 1 ? ZMQ_SNDMORE : 0);
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!srv) setup();
    if (size < 1) return 0;
    ordo__transport_stats_t before, now;
    ordo__transport_get_stats(tp, &before);
    bool sent = data[0] & 1 ? send_raw(data + 1, size - 1) : send_structured(data + 1, size - 1);
    if (!sent) return 0;
    /* until the server's transport took the message in (accepted or refused as malformed) */
    for (int spins = 0; spins < 2000; spins++) {
        ordo__transport_get_stats(tp, &now);
        bool in = now.msgs_in + now.malformed > before.msgs_in + before.malformed;
        ordo__msg_t m;
        if (ordo__transport_recv(tp, &m, in ? 0 : 1) == 0) {
            int rc = ordo__server_handle(srv, &m);
            ordo__msg_close(&m);
            if (rc != 0) __builtin_trap(); /* data never ends the server */
        } else if (in) {
            break;
        }
    }
    /* the answers to the fuzzing peer are read and dropped */
    char buf[256];
    while (zmq_recv(dealer, buf, sizeof buf, ZMQ_DONTWAIT) >= 0) {
    }
    return 0;
}
