/* wire: msgpack header encoding/decoding and multipart send/receive with validation. */
#include "common/wire.h"
#include "common/error.h"

#include <errno.h>
#include <msgpack.h>
#include <string.h>

#define HDR_FIELDS 12

static const char *type_names[] = {
    "?", "REGISTER", "WELCOME", "REJECT", "BARRIER", "BARRIER_DONE", "HEARTBEAT",
    "HEARTBEAT_ACK", "SHUTDOWN", "ABORT", "DONE", "STATS", "HELLO", "INIT", "PUSH",
    "PUSH_ACK", "PULL", "PULL_RESP", "PLAN", "ERROR", "PEER_DEAD", "WAKE"};

const char *ordo_wire_type_name(int type)
{
    if (type <= 0 || type >= ORDO_MSG_TYPE_MAX) return "?";
    return type_names[type];
}

const char *ordo_wire_role_name(int role)
{
    switch (role) {
    case ORDO_ROLE_SCHEDULER: return "scheduler";
    case ORDO_ROLE_SERVER: return "server";
    case ORDO_ROLE_WORKER: return "worker";
    default: return "?";
    }
}

/* ---- header ------------------------------------------------------------------------- */

typedef struct {
    char *buf;
    size_t cap, len;
    int overflow;
} fixbuf_t;

static int fixbuf_write(void *data, const char *src, size_t n)
{
    fixbuf_t *fb = data;
    if (fb->len + n > fb->cap) {
        fb->overflow = 1;
        return -1;
    }
    memcpy(fb->buf + fb->len, src, n);
    fb->len += n;
    return 0;
}

int ordo_wire_encode_hdr(const ordo_wire_hdr_t *h, void *buf, size_t cap, size_t *len)
{
    if (h->nframes > ORDO_WIRE_MAX_FRAMES)
        return ordo_error_set(ORDO_EINVAL, "header: %u payload frames (max %d)", h->nframes,
                              ORDO_WIRE_MAX_FRAMES);
    fixbuf_t fb = {.buf = buf, .cap = cap};
    msgpack_packer pk;
    msgpack_packer_init(&pk, &fb, fixbuf_write);
    msgpack_pack_array(&pk, HDR_FIELDS);
    msgpack_pack_uint8(&pk, ORDO_WIRE_VERSION);
    msgpack_pack_uint8(&pk, h->type);
    msgpack_pack_uint8(&pk, h->role);
    msgpack_pack_int32(&pk, h->rank);
    msgpack_pack_uint64(&pk, h->req);
    msgpack_pack_int64(&pk, h->iter);
    msgpack_pack_uint32(&pk, h->key);
    msgpack_pack_uint32(&pk, h->chunk);
    msgpack_pack_int32(&pk, h->priority);
    msgpack_pack_uint32(&pk, h->flags);
    msgpack_pack_uint8(&pk, h->dtype);
    msgpack_pack_array(&pk, h->nframes);
    for (uint32_t i = 0; i < h->nframes; i++) msgpack_pack_uint64(&pk, h->lens[i]);
    if (fb.overflow) return ordo_error_set(ORDO_EINVAL, "header: larger than %zu bytes", cap);
    *len = fb.len;
    return 0;
}

/* get_int reads field i as an integer within [lo, hi]. */
static int get_int(const msgpack_object *o, const char *what, int64_t lo, int64_t hi,
                   int64_t *out)
{
    int64_t v;
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > (uint64_t)INT64_MAX)
            return ordo_error_set(ORDO_EPROTO, "header: %s out of range", what);
        v = (int64_t)o->via.u64;
    } else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        v = o->via.i64;
    } else {
        return ordo_error_set(ORDO_EPROTO, "header: %s is not an integer", what);
    }
    if (v < lo || v > hi)
        return ordo_error_set(ORDO_EPROTO, "header: %s = %lld out of range [%lld, %lld]", what,
                              (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int ordo_wire_decode_hdr(const void *buf, size_t len, ordo_wire_hdr_t *out)
{
    msgpack_unpacked up;
    size_t off = 0;
    int rc = 0;
    ordo_wire_hdr_t h;
    memset(&h, 0, sizeof h);
    if (len == 0 || len > ORDO_WIRE_MAX_HDR)
        return ordo_error_set(ORDO_EPROTO, "header: %zu bytes (expected 1..%d)", len,
                              ORDO_WIRE_MAX_HDR);
    msgpack_unpacked_init(&up);
    msgpack_unpack_return ur = msgpack_unpack_next(&up, buf, len, &off);
    if (ur != MSGPACK_UNPACK_SUCCESS) {
        rc = ordo_error_set(ORDO_EPROTO, "header: not valid msgpack (%s)",
                            ur == MSGPACK_UNPACK_CONTINUE ? "truncated" : "parse error");
        goto done;
    }
    if (off != len) {
        rc = ordo_error_set(ORDO_EPROTO, "header: %zu trailing bytes", len - off);
        goto done;
    }
    const msgpack_object *o = &up.data;
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != HDR_FIELDS) {
        rc = ordo_error_set(ORDO_EPROTO, "header: not an array of %d fields", HDR_FIELDS);
        goto done;
    }
    const msgpack_object *f = o->via.array.ptr;
    int64_t v;
    if ((rc = get_int(&f[0], "version", 0, 255, &v))) goto done;
    if (v != ORDO_WIRE_VERSION) {
        rc = ordo_error_set(ORDO_EPROTO, "header: protocol version %lld (this build speaks %d)",
                            (long long)v, ORDO_WIRE_VERSION);
        goto done;
    }
    if ((rc = get_int(&f[1], "type", 1, ORDO_MSG_PEER_DEAD - 1, &v))) goto done;
    h.type = (uint8_t)v;
    if ((rc = get_int(&f[2], "role", 0, ORDO_ROLE_WORKER, &v))) goto done;
    h.role = (uint8_t)v;
    if ((rc = get_int(&f[3], "rank", -1, INT32_MAX, &v))) goto done;
    h.rank = (int32_t)v;
    if (f[4].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        rc = ordo_error_set(ORDO_EPROTO, "header: request id is not an unsigned integer");
        goto done;
    }
    h.req = f[4].via.u64;
    if ((rc = get_int(&f[5], "iter", -1, INT64_MAX, &v))) goto done;
    h.iter = v;
    if ((rc = get_int(&f[6], "key", 0, UINT32_MAX, &v))) goto done;
    h.key = (uint32_t)v;
    if ((rc = get_int(&f[7], "chunk", 0, UINT32_MAX, &v))) goto done;
    h.chunk = (uint32_t)v;
    if ((rc = get_int(&f[8], "priority", INT32_MIN, INT32_MAX, &v))) goto done;
    h.priority = (int32_t)v;
    if ((rc = get_int(&f[9], "flags", 0, UINT32_MAX, &v))) goto done;
    h.flags = (uint32_t)v;
    if ((rc = get_int(&f[10], "dtype", 0, ORDO_DTYPE_MAX - 1, &v))) goto done;
    h.dtype = (uint8_t)v;
    if (f[11].type != MSGPACK_OBJECT_ARRAY || f[11].via.array.size > ORDO_WIRE_MAX_FRAMES) {
        rc = ordo_error_set(ORDO_EPROTO, "header: lengths is not an array of at most %d sizes",
                            ORDO_WIRE_MAX_FRAMES);
        goto done;
    }
    h.nframes = f[11].via.array.size;
    for (uint32_t i = 0; i < h.nframes; i++) {
        if ((rc = get_int(&f[11].via.array.ptr[i], "length", 0, (int64_t)ORDO_WIRE_MAX_PAYLOAD,
                          &v)))
            goto done;
        h.lens[i] = (uint64_t)v;
    }
    *out = h;
done:
    msgpack_unpacked_destroy(&up);
    return rc;
}

/* ---- messages ----------------------------------------------------------------------- */

void ordo_msg_init(ordo_msg_t *m, int type)
{
    m->sock = 0;
    m->rid_len = 0;
    memset(&m->hdr, 0, sizeof m->hdr);
    m->hdr.type = (uint8_t)type;
    m->hdr.rank = -1;
    m->nframes = 0;
}

int ordo_msg_add_copy(ordo_msg_t *m, const void *data, size_t len)
{
    if (m->nframes >= ORDO_WIRE_MAX_FRAMES) return ordo_error_set(ORDO_EINVAL, "too many frames");
    zmq_msg_t *f = &m->frames[m->nframes];
    if (zmq_msg_init_size(f, len) != 0) return ORDO_ENOMEM;
    if (len) memcpy(zmq_msg_data(f), data, len);
    m->hdr.lens[m->nframes] = len;
    m->nframes++;
    m->hdr.nframes = (uint32_t)m->nframes;
    return 0;
}

int ordo_msg_add_ref(ordo_msg_t *m, void *data, size_t len, zmq_free_fn *free_fn, void *hint)
{
    if (m->nframes >= ORDO_WIRE_MAX_FRAMES) return ordo_error_set(ORDO_EINVAL, "too many frames");
    zmq_msg_t *f = &m->frames[m->nframes];
    if (zmq_msg_init_data(f, data, len, free_fn, hint) != 0) return ORDO_ENOMEM;
    m->hdr.lens[m->nframes] = len;
    m->nframes++;
    m->hdr.nframes = (uint32_t)m->nframes;
    return 0;
}

int ordo_msg_add_text(ordo_msg_t *m, const char *text)
{
    return ordo_msg_add_copy(m, text, strlen(text));
}

void *ordo_msg_data(ordo_msg_t *m, int i, size_t *len)
{
    if (i < 0 || i >= m->nframes) return NULL;
    *len = zmq_msg_size(&m->frames[i]);
    return zmq_msg_data(&m->frames[i]);
}

const char *ordo_msg_text(ordo_msg_t *m, int i, char *buf, size_t size)
{
    size_t len = 0;
    const char *d = ordo_msg_data(m, i, &len);
    if (!d) len = 0;
    if (len >= size) len = size - 1;
    if (len) memcpy(buf, d, len);
    buf[len] = '\0';
    return buf;
}

void ordo_msg_close(ordo_msg_t *m)
{
    for (int i = 0; i < m->nframes; i++) zmq_msg_close(&m->frames[i]);
    m->nframes = 0;
    m->hdr.nframes = 0;
}

void ordo_msg_move(ordo_msg_t *dst, ordo_msg_t *src)
{
    dst->sock = src->sock;
    dst->rid_len = src->rid_len;
    memcpy(dst->rid, src->rid, src->rid_len);
    dst->hdr = src->hdr;
    dst->nframes = src->nframes;
    for (int i = 0; i < src->nframes; i++) {
        zmq_msg_init(&dst->frames[i]);
        zmq_msg_move(&dst->frames[i], &src->frames[i]);
        zmq_msg_close(&src->frames[i]);
    }
    src->nframes = 0;
}

/* ---- send / receive ----------------------------------------------------------------- */

int ordo_wire_send(void *sock, int router, ordo_msg_t *m, int flags)
{
    char hbuf[ORDO_WIRE_MAX_HDR];
    size_t hlen;
    m->hdr.nframes = (uint32_t)m->nframes;
    for (int i = 0; i < m->nframes; i++) m->hdr.lens[i] = zmq_msg_size(&m->frames[i]);
    int rc = ordo_wire_encode_hdr(&m->hdr, hbuf, sizeof hbuf, &hlen);
    if (rc) return rc;
    if (router) {
        if (zmq_send(sock, m->rid, m->rid_len, flags | ZMQ_SNDMORE) < 0) {
            if (errno == EAGAIN) return ORDO_EAGAIN;
            if (errno == EHOSTUNREACH) return ordo_error_set(ORDO_EPEERDEAD, "peer unreachable");
            return ordo_error_set(ORDO_EIO, "zmq_send: %s", zmq_strerror(errno));
        }
    }
    if (zmq_send(sock, hbuf, hlen, flags | (m->nframes ? ZMQ_SNDMORE : 0)) < 0) {
        if (errno == EAGAIN && !router) return ORDO_EAGAIN;
        return ordo_error_set(ORDO_EIO, "zmq_send: %s", zmq_strerror(errno));
    }
    /* Once the first part is queued ZeroMQ takes the rest atomically. */
    for (int i = 0; i < m->nframes; i++) {
        int more = i + 1 < m->nframes ? ZMQ_SNDMORE : 0;
        if (zmq_msg_send(&m->frames[i], sock, more) < 0) {
            int e = errno;
            for (int j = i; j < m->nframes; j++) zmq_msg_close(&m->frames[j]);
            m->nframes = 0;
            return ordo_error_set(ORDO_EIO, "zmq_msg_send: %s", zmq_strerror(e));
        }
    }
    m->nframes = 0;
    return 0;
}

static void drain(void *sock)
{
    int more = 1;
    size_t sz = sizeof more;
    while (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz) == 0 && more) {
        zmq_msg_t x;
        zmq_msg_init(&x);
        zmq_msg_recv(&x, sock, 0);
        zmq_msg_close(&x);
    }
}

static int has_more(void *sock)
{
    int more = 0;
    size_t sz = sizeof more;
    zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &sz);
    return more;
}

int ordo_wire_recv(void *sock, int router, ordo_msg_t *m, int flags)
{
    zmq_msg_t part;
    int rc;
    ordo_msg_init(m, 0);
    if (router) {
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, flags) < 0) {
            int e = errno;
            zmq_msg_close(&part);
            if (e == EAGAIN) return ORDO_EAGAIN;
            if (e == ETERM) return ORDO_ECLOSED;
            return ordo_error_set(ORDO_EIO, "zmq_msg_recv: %s", zmq_strerror(e));
        }
        size_t n = zmq_msg_size(&part);
        if (n > ORDO_WIRE_MAX_RID) n = ORDO_WIRE_MAX_RID;
        memcpy(m->rid, zmq_msg_data(&part), n);
        m->rid_len = n;
        zmq_msg_close(&part);
        if (!has_more(sock)) return ordo_error_set(ORDO_EPROTO, "message has no header frame");
        flags = 0;
    }
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, sock, flags) < 0) {
        int e = errno;
        zmq_msg_close(&part);
        if (e == EAGAIN) return ORDO_EAGAIN;
        if (e == ETERM) return ORDO_ECLOSED;
        return ordo_error_set(ORDO_EIO, "zmq_msg_recv: %s", zmq_strerror(e));
    }
    rc = ordo_wire_decode_hdr(zmq_msg_data(&part), zmq_msg_size(&part), &m->hdr);
    zmq_msg_close(&part);
    if (rc) {
        drain(sock);
        return rc;
    }
    while (has_more(sock)) {
        if (m->nframes >= (int)m->hdr.nframes) {
            uint32_t want = m->hdr.nframes;
            drain(sock);
            ordo_msg_close(m);
            return ordo_error_set(ORDO_EPROTO, "%s: more payload frames than the header's %u",
                                  ordo_wire_type_name(m->hdr.type), want);
        }
        zmq_msg_t *f = &m->frames[m->nframes];
        zmq_msg_init(f);
        if (zmq_msg_recv(f, sock, 0) < 0) {
            zmq_msg_close(f);
            ordo_msg_close(m);
            return ordo_error_set(ORDO_EIO, "zmq_msg_recv: %s", zmq_strerror(errno));
        }
        m->nframes++;
        size_t got = zmq_msg_size(f);
        if (got != m->hdr.lens[m->nframes - 1]) {
            uint64_t want = m->hdr.lens[m->nframes - 1];
            int idx = m->nframes - 1;
            drain(sock);
            ordo_msg_close(m);
            return ordo_error_set(ORDO_EPROTO, "%s: frame %d has %zu bytes, header says %llu",
                                  ordo_wire_type_name(m->hdr.type), idx, got,
                                  (unsigned long long)want);
        }
    }
    if (m->nframes != (int)m->hdr.nframes) {
        int got = m->nframes;
        uint32_t want = m->hdr.nframes;
        ordo_msg_close(m);
        return ordo_error_set(ORDO_EPROTO, "%s: %d payload frames, header says %u",
                              ordo_wire_type_name(m->hdr.type), got, want);
    }
    return 0;
}
