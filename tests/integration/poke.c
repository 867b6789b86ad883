/* it_poke: sends bad input to an ordo daemon over a real ZeroMQ connection, to check it is
 * rejected without harm: random bytes as a header, lying lengths, wrong message types,
 * requests for keys that do not exist, a push of the wrong size, a stale pull, a merged push
 * that asks for a pull, calibration probes with a pull flag or a broken length. Prints one
 * line per ERROR answer it gets back. usage: it_poke tcp://HOST:PORT; with --oversize MB it
 * sends one PUSH whose payload frame is MB MiB instead, then, on a new connection, a pull for
 * a worker that does not exist, and prints the ERROR it gets (the daemon still serves). */
#include "common/wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static void send_raw(void *s, const void *a, size_t an, const void *b, size_t bn)
{
    zmq_send(s, a, an, b ? ZMQ_SNDMORE : 0);
    if (b) zmq_send(s, b, bn, 0);
}

static void send_flagged(void *s, int type, uint32_t flags, int role, int rank, uint32_t key,
                         int64_t iter, const void *payload, size_t len)
{
    ordo__msg_t m;
    ordo__msg_init(&m, type);
    m.hdr.flags = flags;
    m.hdr.role = (uint8_t)role;
    m.hdr.rank = rank;
    m.hdr.key = key;
    m.hdr.iter = iter;
    m.hdr.dtype = ORDO_DTYPE_F32;
    if (payload) ordo__msg_add_copy(&m, payload, len);
    ordo__wire_send(s, 0, &m, 0);
}

static void send_msg(void *s, int type, int role, int rank, uint32_t key, int64_t iter,
                     const void *payload, size_t len)
{
    send_flagged(s, type, 0, role, rank, key, iter, payload, len);
}

/* oversize: a frame of mb MiB, then a request on a fresh connection that must be answered */
static int oversize(const char *endpoint, int mb)
{
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 3000, rcvto = 5000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(s, endpoint) != 0) return 1;
    size_t len = (size_t)mb << 20;
    float *big = calloc(1, len);
    send_msg(s, ORDO_MSG_PUSH, ORDO_ROLE_WORKER, 0, 0, 0, big, len);
    free(big);
    zmq_close(s); /* lingers until the frame left (or the daemon cut us off) */
    s = zmq_socket(ctx, ZMQ_DEALER);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &rcvto, sizeof rcvto);
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(s, endpoint);
    send_msg(s, ORDO_MSG_PULL, ORDO_ROLE_WORKER, 77, 0, 0, NULL, 0); /* no such worker */
    ordo__msg_t r;
    int rc = 1;
    if (ordo__wire_recv(s, 0, &r, 0) == 0) {
        char text[512];
        printf("sent %d MiB; then %s %s\n", mb, ordo__wire_type_name(r.hdr.type),
               ordo__msg_text(&r, 0, text, sizeof text));
        ordo__msg_close(&r);
        rc = 0;
    } else {
        printf("sent %d MiB; then no answer\n", mb);
    }
    zmq_close(s);
    zmq_ctx_term(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "--oversize")) return oversize(argv[3], atoi(argv[2]));
    if (argc != 2) {
        fprintf(stderr, "usage: it_poke [--oversize MB] tcp://HOST:PORT\n");
        return 2;
    }
    void *ctx = zmq_ctx_new(), *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 500, rcvto = 300;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &rcvto, sizeof rcvto);
    if (zmq_connect(s, argv[1]) != 0) return 1;
    unsigned seed = 42;
    char junk[300];
    for (int i = 0; i < 50; i++) {
        for (size_t j = 0; j < sizeof junk; j++)
            junk[j] = (char)rand_r(&seed);
        send_raw(s, junk, 1 + rand_r(&seed) % sizeof junk, i % 2 ? junk : NULL, 17);
    }
    /* a good header that lies about its payload */
    ordo__wire_hdr_t h = {
        .type = ORDO_MSG_PUSH, .role = ORDO_ROLE_WORKER, .rank = 0, .nframes = 1, .lens = {1000}};
    char hb[ORDO_WIRE_MAX_HDR];
    size_t hl;
    ordo__wire_encode_hdr(&h, hb, sizeof hb, &hl);
    send_raw(s, hb, hl, "short", 5);
    float f[16] = {0};
    send_msg(s, ORDO_MSG_PUSH, ORDO_ROLE_WORKER, 0, 999999, 0, f, sizeof f); /* no such key */
    send_msg(s, ORDO_MSG_PUSH, ORDO_ROLE_WORKER, 0, 0, 0, f, 3);             /* wrong size */
    send_msg(s, ORDO_MSG_PULL, ORDO_ROLE_WORKER, 77, 0, 0, NULL, 0);         /* no such worker */
    send_msg(s, ORDO_MSG_PULL, ORDO_ROLE_SERVER, 0, 0, 0, NULL, 0);          /* not a worker */
    send_msg(s, ORDO_MSG_PUSH_ACK, ORDO_ROLE_WORKER, 0, 0, 0, NULL, 0);      /* wrong type */
    send_msg(s, ORDO_MSG_STATS, ORDO_ROLE_WORKER, 0, 0, 0, "{", 1);          /* not registered */
    /* a merged push that asks to pull too (only single-slice pushes can) */
    send_flagged(s, ORDO_MSG_PUSH, ORDO_FLAG_GROUP | ORDO_FLAG_PULL, ORDO_ROLE_WORKER, 0, 0, 0, f,
                 sizeof f);
    /* calibration probes ([push] calibrate) with a pull flag, and of 3 bytes */
    send_flagged(s, ORDO_MSG_PUSH, ORDO_FLAG_PROBE | ORDO_FLAG_PULL, ORDO_ROLE_WORKER, 0, 0, 0, f,
                 sizeof f);
    send_flagged(s, ORDO_MSG_PUSH, ORDO_FLAG_PROBE, ORDO_ROLE_WORKER, 0, 0, 0, f, 3);
    int errors = 0;
    for (;;) {
        ordo__msg_t r;
        if (ordo__wire_recv(s, 0, &r, 0) != 0) break;
        char text[512];
        if (r.hdr.type == ORDO_MSG_ERROR) {
            printf("ERROR %s\n", ordo__msg_text(&r, 0, text, sizeof text));
            errors++;
        }
        ordo__msg_close(&r);
    }
    printf("poked %s: %d error answers\n", argv[1], errors);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}
