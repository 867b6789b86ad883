/* Tests of common/wire: header round trips of every type, malformed frames rejected. */
#include "common/wire.h"
#include "ordo_check.h"

#include <msgpack.h>
#include <string.h>

static void *ctx, *a, *b; /* a DEALER/ROUTER pair over inproc */

static void setup(void)
{
    ctx = zmq_ctx_new();
    b = zmq_socket(ctx, ZMQ_ROUTER);
    a = zmq_socket(ctx, ZMQ_DEALER);
    ck_assert_int_eq(zmq_bind(b, "inproc://wire"), 0);
    ck_assert_int_eq(zmq_connect(a, "inproc://wire"), 0);
}

static void teardown(void)
{
    int zero = 0;
    zmq_setsockopt(a, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(b, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(a);
    zmq_close(b);
    zmq_ctx_term(ctx);
}

START_TEST(local_types_are_refused)
{
    ordo__wire_hdr_t h = {.type = ORDO_MSG_INTRA, .role = ORDO_ROLE_SCHEDULER, .rank = 0};
    char buf[ORDO_WIRE_MAX_HDR];
    size_t len;
    ORDO_CK_OK(ordo__wire_encode_hdr(&h, buf, sizeof buf, &len));
    ordo__wire_hdr_t g;
    ORDO_CK_ERR(ordo__wire_decode_hdr(buf, len, &g), ORDO_ERR_PROTO);
}
END_TEST

START_TEST(header_round_trip_every_type)
{
    for (int type = ORDO_MSG_REGISTER; type < ORDO_MSG_PEER_DEAD; type++) {
        if (type == ORDO_MSG_INTRA) continue; /* local only: local_types_are_refused */
        ordo__wire_hdr_t h = {.type = (uint8_t)type, .role = ORDO_ROLE_WORKER, .rank = 7,
                             .req = 0xfedcba9876543210ull, .iter = 123456789012ll, .key = 4000000000u,
                             .chunk = 17, .priority = -3, .flags = ORDO_FLAG_LAST_CHUNK,
                             .dtype = ORDO_DTYPE_F32, .nframes = 2, .lens = {12, 1ull << 31}};
        char buf[ORDO_WIRE_MAX_HDR];
        size_t len;
        ORDO_CK_OK(ordo__wire_encode_hdr(&h, buf, sizeof buf, &len));
        ordo__wire_hdr_t g;
        ORDO_CK_OK(ordo__wire_decode_hdr(buf, len, &g));
        ck_assert_int_eq(g.type, type);
        ck_assert_int_eq(g.role, ORDO_ROLE_WORKER);
        ck_assert_int_eq(g.rank, 7);
        ck_assert(g.req == h.req);
        ck_assert(g.iter == h.iter);
        ck_assert(g.key == h.key);
        ck_assert_int_eq(g.chunk, 17);
        ck_assert_int_eq(g.priority, -3);
        ck_assert_int_eq(g.flags, ORDO_FLAG_LAST_CHUNK);
        ck_assert_int_eq(g.dtype, ORDO_DTYPE_F32);
        ck_assert_int_eq(g.nframes, 2);
        ck_assert(g.lens[0] == 12 && g.lens[1] == 1ull << 31);
        ck_assert_str_ne(ordo__wire_type_name(type), "?");
    }
}
END_TEST

START_TEST(messages_cross_a_socket)
{
    float payload[1000];
    for (int i = 0; i < 1000; i++) payload[i] = (float)i * 0.5f;
    ordo__msg_t m, r;
    ordo__msg_init(&m, ORDO_MSG_PUSH);
    m.hdr.key = 3;
    m.hdr.iter = 9;
    ORDO_CK_OK(ordo__msg_add_copy(&m, payload, sizeof payload));
    ORDO_CK_OK(ordo__msg_add_text(&m, "{\"x\":1}"));
    ORDO_CK_OK(ordo__wire_send(a, 0, &m, 0));
    ck_assert_int_eq(m.nframes, 0);
    ORDO_CK_OK(ordo__wire_recv(b, 1, &r, 0));
    ck_assert_int_eq(r.hdr.type, ORDO_MSG_PUSH);
    ck_assert_int_eq(r.hdr.key, 3);
    ck_assert_int_eq(r.nframes, 2);
    size_t len;
    float *got = ordo__msg_data(&r, 0, &len);
    ck_assert_uint_eq(len, sizeof payload);
    ck_assert(memcmp(got, payload, len) == 0);
    char text[64];
    ck_assert_str_eq(ordo__msg_text(&r, 1, text, sizeof text), "{\"x\":1}");
    ck_assert_uint_gt(r.rid_len, 0);
    /* answer through the router with the routing id */
    ordo__msg_t back;
    ordo__msg_init(&back, ORDO_MSG_PUSH_ACK);
    memcpy(back.rid, r.rid, r.rid_len);
    back.rid_len = r.rid_len;
    ORDO_CK_OK(ordo__wire_send(b, 1, &back, 0));
    ordo__msg_close(&r);
    ORDO_CK_OK(ordo__wire_recv(a, 0, &r, 0));
    ck_assert_int_eq(r.hdr.type, ORDO_MSG_PUSH_ACK);
    ck_assert_int_eq(r.nframes, 0);
    ordo__msg_close(&r);
}
END_TEST

/* send raw frames from the DEALER, expect the ROUTER side to reject with a message */
static void expect_reject(zmq_msg_t *frames, int n, const char *why)
{
    for (int i = 0; i < n; i++) zmq_msg_send(&frames[i], a, i + 1 < n ? ZMQ_SNDMORE : 0);
    ordo__msg_t r;
    int rc = ordo__wire_recv(b, 1, &r, 0);
    ck_assert_msg(rc == ORDO_ERR_PROTO, "expected EPROTO for '%s', got %d", why, rc);
    ck_assert_msg(strstr(ordo__error_detail(), why) != NULL, "detail '%s' lacks '%s'",
                  ordo__error_detail(), why);
    /* the socket is still usable: nothing of the bad message is left behind */
    ordo__msg_t ok;
    ordo__msg_init(&ok, ORDO_MSG_HEARTBEAT);
    ORDO_CK_OK(ordo__wire_send(a, 0, &ok, 0));
    ORDO_CK_OK(ordo__wire_recv(b, 1, &r, 0));
    ck_assert_int_eq(r.hdr.type, ORDO_MSG_HEARTBEAT);
    ordo__msg_close(&r);
}

static void frame_of(zmq_msg_t *f, const void *d, size_t n)
{
    zmq_msg_init_size(f, n);
    memcpy(zmq_msg_data(f), d, n);
}

static size_t good_header(char *buf, uint32_t nframes, uint64_t len0)
{
    ordo__wire_hdr_t h = {.type = ORDO_MSG_PUSH, .rank = 1, .nframes = nframes, .lens = {len0}};
    size_t len;
    ck_assert_int_eq(ordo__wire_encode_hdr(&h, buf, ORDO_WIRE_MAX_HDR, &len), 0);
    return len;
}

START_TEST(malformed_frames_rejected)
{
    char buf[ORDO_WIRE_MAX_HDR];
    zmq_msg_t f[3];
    size_t n = good_header(buf, 1, 8);

    frame_of(&f[0], buf, n - 3);
    expect_reject(f, 1, "truncated");

    frame_of(&f[0], "\xc1\xc1\xc1", 3);
    expect_reject(f, 1, "not an array of 12 fields");

    /* an array header announcing 2^32-1 elements: rejected without allocating for them */
    frame_of(&f[0], "\x9c\x01\xdd\xff\xff\xff\xff", 7);
    expect_reject(f, 1, "type is not an integer");

    char bad[ORDO_WIRE_MAX_HDR];
    memcpy(bad, buf, n);
    bad[1] = 9; /* version 9 */
    frame_of(&f[0], bad, n);
    expect_reject(f, 1, "protocol version 9");

    /* lengths that lie: header says 8 bytes, frame has 5 */
    frame_of(&f[0], buf, n);
    frame_of(&f[1], "12345", 5);
    expect_reject(f, 2, "frame 0 has 5 bytes, header says 8");

    /* header promises a frame that never comes */
    frame_of(&f[0], buf, n);
    expect_reject(f, 1, "0 payload frames, header says 1");

    /* more frames than announced */
    n = good_header(buf, 1, 2);
    frame_of(&f[0], buf, n);
    frame_of(&f[1], "ab", 2);
    frame_of(&f[2], "cd", 2);
    expect_reject(f, 3, "more payload frames");

    /* wrong types: a string where the type should be */
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 12);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_str(&pk, 4);
    msgpack_pack_str_body(&pk, "PUSH", 4);
    for (int i = 0; i < 9; i++) msgpack_pack_uint8(&pk, 0);
    msgpack_pack_array(&pk, 0);
    frame_of(&f[0], sb.data, sb.size);
    expect_reject(f, 1, "type is not an integer");
    msgpack_sbuffer_clear(&sb);

    /* an unknown message type */
    msgpack_pack_array(&pk, 12);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_uint8(&pk, 200);
    for (int i = 0; i < 9; i++) msgpack_pack_uint8(&pk, 0);
    msgpack_pack_array(&pk, 0);
    frame_of(&f[0], sb.data, sb.size);
    expect_reject(f, 1, "type = 200 out of range");
    msgpack_sbuffer_clear(&sb);

    /* not an array at all */
    msgpack_pack_map(&pk, 0);
    frame_of(&f[0], sb.data, sb.size);
    expect_reject(f, 1, "not an array of 12 fields");
    msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(random_bytes_never_crash)
{
    unsigned seed = 12345;
    char buf[ORDO_WIRE_MAX_HDR];
    size_t n = good_header(buf, 1, 8);
    int rejected = 0;
    for (int trial = 0; trial < 20000; trial++) {
        char m[ORDO_WIRE_MAX_HDR];
        memcpy(m, buf, n);
        size_t len = 1 + rand_r(&seed) % n;
        for (int k = 0; k < 3; k++) m[rand_r(&seed) % len] = (char)rand_r(&seed);
        ordo__wire_hdr_t h;
        int rc = ordo__wire_decode_hdr(m, len, &h);
        if (rc != 0) {
            ck_assert_int_eq(rc, ORDO_ERR_PROTO);
            rejected++;
        } else {
            ck_assert_int_le(h.nframes, ORDO_WIRE_MAX_FRAMES);
            ck_assert_int_lt(h.type, ORDO_MSG_PEER_DEAD);
        }
    }
    ck_assert_int_gt(rejected, 1000);
}
END_TEST

static Suite *wire_suite(void)
{
    Suite *s = suite_create("wire");
    TCase *tc = tcase_create("header");
    tcase_add_test(tc, header_round_trip_every_type);
    tcase_add_test(tc, local_types_are_refused);
    tcase_add_test(tc, random_bytes_never_crash);
    suite_add_tcase(s, tc);
    tc = tcase_create("socket");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, messages_cross_a_socket);
    tcase_add_test(tc, malformed_frames_rejected);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(wire_suite)
