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
    "PUSH_ACK", "PULL", "PULL_RESP", "PLAN", "ERROR", "BCAST", "REPLAN", "KEYMAP", "REPL",
    "REPL_ACK", "MEMBERS", "BATCH_REQ", "BATCH", "STATE_REQ", "STATE", "INTRA", "PEER_DEAD",
    "WAKE"};

const char *ordo__wire_type_name(int type)
{
    if (type <= 0 || type >= ORDO_MSG_TYPE_MAX) return "?";
    return type_names[type];
}

const char *ordo__wire_role_name(int role)
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

int ordo__wire_encode_hdr(const ordo__wire_hdr_t *h, void *buf, size_t cap, size_t *len)
{
    if (h->nframes > ORDO_WIRE_MAX_FRAMES)
        return ordo__error_set(ORDO_ERR_INVAL, "header: %u payload frames (max %d)", h->nframes,
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
    if (fb.overflow) return ordo__error_set(ORDO_ERR_INVAL, "header: larger than %zu bytes", cap);
    *len = fb.len;
    return 0;
}

/* The header is decoded by hand rather than with msgpack_unpack_next: a hostile header can
 * announce an array or string of billions of elements, and msgpack-c allocates for the
 * announced size before it looks at the input. Here every size is checked against the
 * bytes actually present, and only the types a header may hold are accepted. */
typedef struct {
    const uint8_t *p, *end;
} rd_t;

/* rd_int reads one msgpack integer of any width; 0, or -1 when the bytes are not one */
static int rd_int(rd_t *r, int64_t *v, uint64_t *u, int *is_unsigned)
{
    if (r->p >= r->end) return -2;
    uint8_t c = *r->p++;
    size_t n = 0;
    int sign = 0;
    if (c <= 0x7f) {
        *u = c;
        *is_unsigned = 1;
        return 0;
    }
    if (c >= 0xe0) {
        *v = (int8_t)c;
        *is_unsigned = 0;
        return 0;
    }
    switch (c) {
    case 0xcc: n = 1; break;
    case 0xcd: n = 2; break;
    case 0xce: n = 4; break;
    case 0xcf: n = 8; break;
    case 0xd0: n = 1; sign = 1; break;
    case 0xd1: n = 2; sign = 1; break;
    case 0xd2: n = 4; sign = 1; break;
    case 0xd3: n = 8; sign = 1; break;
    default: r->p--; return -1;
    }
    if ((size_t)(r->end - r->p) < n) return -2; /* truncated */
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) x = (x << 8) | r->p[i];
    r->p += n;
    if (!sign) {
        *u = x;
        *is_unsigned = 1;
    } else {
        int64_t sx = n == 1 ? (int8_t)x : n == 2 ? (int16_t)x : n == 4 ? (int32_t)x : (int64_t)x;
        if (sx >= 0) {
            *u = (uint64_t)sx;
            *is_unsigned = 1;
        } else {
            *v = sx;
            *is_unsigned = 0;
        }
    }
    return 0;
}

/* get_int reads the next field as an integer within [lo, hi] */
static int get_int(rd_t *r, const char *what, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t v = 0;
    uint64_t u = 0;
    int uns = 0;
    int rc = rd_int(r, &v, &u, &uns);
    if (rc == -2) return ordo__error_set(ORDO_ERR_PROTO, "header: not valid msgpack (truncated)");
    if (rc) return ordo__error_set(ORDO_ERR_PROTO, "header: %s is not an integer", what);
    if (uns) {
        if (u > (uint64_t)INT64_MAX) return ordo__error_set(ORDO_ERR_PROTO, "header: %s out of range", what);
        v = (int64_t)u;
    }
    if (v < lo || v > hi)
        return ordo__error_set(ORDO_ERR_PROTO, "header: %s = %lld out of range [%lld, %lld]", what,
                              (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return 0;
}

int ordo__wire_decode_hdr(const void *buf, size_t len, ordo__wire_hdr_t *out)
{
    ordo__wire_hdr_t h;
    memset(&h, 0, sizeof h);
    if (len == 0 || len > ORDO_WIRE_MAX_HDR)
        return ordo__error_set(ORDO_ERR_PROTO, "header: %zu bytes (expected 1..%d)", len,
                              ORDO_WIRE_MAX_HDR);
    rd_t r = {.p = buf, .end = (const uint8_t *)buf + len};
    if (r.p[0] != (0x90 | HDR_FIELDS))
        return ordo__error_set(ORDO_ERR_PROTO, "header: not an array of %d fields", HDR_FIELDS);
    r.p++;
    int64_t v;
    int rc;
    if ((rc = get_int(&r, "version", 0, 255, &v))) return rc;
    if (v != ORDO_WIRE_VERSION)
        return ordo__error_set(ORDO_ERR_PROTO, "header: protocol version %lld (this build speaks %d)",
                              (long long)v, ORDO_WIRE_VERSION);
    if ((rc = get_int(&r, "type", 1, ORDO_MSG_PEER_DEAD - 1, &v))) return rc;
    if (v == ORDO_MSG_INTRA) /* local only, like PEER_DEAD */
        return ordo__error_set(ORDO_ERR_PROTO, "header: type INTRA is local only");
    h.type = (uint8_t)v;
    if ((rc = get_int(&r, "role", 0, ORDO_ROLE_WORKER, &v))) return rc;
    h.role = (uint8_t)v;
    if ((rc = get_int(&r, "rank", -1, INT32_MAX, &v))) return rc;
    h.rank = (int32_t)v;
    {
        uint64_t u = 0;
        int uns = 0;
        int rr = rd_int(&r, &v, &u, &uns);
        if (rr == -2) return ordo__error_set(ORDO_ERR_PROTO, "header: not valid msgpack (truncated)");
        if (rr || !uns)
            return ordo__error_set(ORDO_ERR_PROTO, "header: request id is not an unsigned integer");
        h.req = u;
    }
    if ((rc = get_int(&r, "iter", -1, INT64_MAX, &v))) return rc;
    h.iter = v;
    if ((rc = get_int(&r, "key", 0, UINT32_MAX, &v))) return rc;
    h.key = (uint32_t)v;
    if ((rc = get_int(&r, "chunk", 0, UINT32_MAX, &v))) return rc;
    h.chunk = (uint32_t)v;
    if ((rc = get_int(&r, "priority", INT32_MIN, INT32_MAX, &v))) return rc;
    h.priority = (int32_t)v;
    if ((rc = get_int(&r, "flags", 0, UINT32_MAX, &v))) return rc;
    h.flags = (uint32_t)v;
    if ((rc = get_int(&r, "dtype", 0, ORDO_DTYPE_MAX - 1, &v))) return rc;
    h.dtype = (uint8_t)v;
    if (r.p >= r.end) return ordo__error_set(ORDO_ERR_PROTO, "header: not valid msgpack (truncated)");
    if ((*r.p & 0xf0) != 0x90 || (*r.p & 0x0f) > ORDO_WIRE_MAX_FRAMES)
        return ordo__error_set(ORDO_ERR_PROTO,
                              "header: lengths is not an array of at most %d sizes",
                              ORDO_WIRE_MAX_FRAMES);
    h.nframes = *r.p++ & 0x0f;
    for (uint32_t i = 0; i < h.nframes; i++) {
        if ((rc = get_int(&r, "length", 0, (int64_t)ORDO_WIRE_MAX_PAYLOAD, &v))) return rc;
        h.lens[i] = (uint64_t)v;
    }
    if (r.p != r.end)
        return ordo__error_set(ORDO_ERR_PROTO, "header: %zu trailing bytes", (size_t)(r.end - r.p));
    *out = h;
    return 0;
}

/* ---- messages ----------------------------------------------------------------------- */

void ordo__msg_init(ordo__msg_t *m, int type)
{
    m->sock = 0;
    m->rid_len = 0;
    memset(&m->hdr, 0, sizeof m->hdr);
    m->hdr.type = (uint8_t)type;
    m->hdr.rank = -1;
    m->nframes = 0;
}

int ordo__msg_add_copy(ordo__msg_t *m, const void *data, size_t len)
{
    if (m->nframes >= ORDO_WIRE_MAX_FRAMES) return ordo__error_set(ORDO_ERR_INVAL, "too many frames");
    zmq_msg_t *f = &m->frames[m->nframes];
    if (zmq_msg_init_size(f, len) != 0) return ORDO_ERR_NOMEM;
    if (len) memcpy(zmq_msg_data(f), data, len);
    m->hdr.lens[m->nframes] = len;
    m->nframes++;
    m->hdr.nframes = (uint32_t)m->nframes;
    return 0;
}

int ordo__msg_add_ref(ordo__msg_t *m, void *data, size_t len, zmq_free_fn *free_fn, void *hint)
{
    if (m->nframes >= ORDO_WIRE_MAX_FRAMES) return ordo__error_set(ORDO_ERR_INVAL, "too many frames");
    zmq_msg_t *f = &m->frames[m->nframes];
    if (zmq_msg_init_data(f, data, len, free_fn, hint) != 0) return ORDO_ERR_NOMEM;
    m->hdr.lens[m->nframes] = len;
    m->nframes++;
    m->hdr.nframes = (uint32_t)m->nframes;
    return 0;
}

int ordo__msg_add_text(ordo__msg_t *m, const char *text)
{
    return ordo__msg_add_copy(m, text, strlen(text));
}

void *ordo__msg_data(ordo__msg_t *m, int i, size_t *len)
{
    if (i < 0 || i >= m->nframes) return NULL;
    *len = zmq_msg_size(&m->frames[i]);
    return zmq_msg_data(&m->frames[i]);
}

const char *ordo__msg_text(ordo__msg_t *m, int i, char *buf, size_t size)
{
    size_t len = 0;
    const char *d = ordo__msg_data(m, i, &len);
    if (!d) len = 0;
    if (len >= size) len = size - 1;
    if (len) memcpy(buf, d, len);
    buf[len] = '\0';
    return buf;
}

void ordo__msg_close(ordo__msg_t *m)
{
    for (int i = 0; i < m->nframes; i++) zmq_msg_close(&m->frames[i]);
    m->nframes = 0;
    m->hdr.nframes = 0;
}

void ordo__msg_move(ordo__msg_t *dst, ordo__msg_t *src)
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

int ordo__wire_send(void *sock, int router, ordo__msg_t *m, int flags)
{
    char hbuf[ORDO_WIRE_MAX_HDR];
    size_t hlen;
    m->hdr.nframes = (uint32_t)m->nframes;
    for (int i = 0; i < m->nframes; i++) m->hdr.lens[i] = zmq_msg_size(&m->frames[i]);
    int rc = ordo__wire_encode_hdr(&m->hdr, hbuf, sizeof hbuf, &hlen);
    if (rc) return rc;
    if (router) {
        if (zmq_send(sock, m->rid, m->rid_len, flags | ZMQ_SNDMORE) < 0) {
            if (errno == EAGAIN) return ORDO_ERR_AGAIN;
            if (errno == EHOSTUNREACH) return ordo__error_set(ORDO_ERR_PEERDEAD, "peer unreachable");
            return ordo__error_set(ORDO_ERR_IO, "zmq_send: %s", zmq_strerror(errno));
        }
    }
    if (zmq_send(sock, hbuf, hlen, flags | (m->nframes ? ZMQ_SNDMORE : 0)) < 0) {
        if (errno == EAGAIN && !router) return ORDO_ERR_AGAIN;
        return ordo__error_set(ORDO_ERR_IO, "zmq_send: %s", zmq_strerror(errno));
    }
    /* Once the first part is queued ZeroMQ takes the rest atomically. */
    for (int i = 0; i < m->nframes; i++) {
        int more = i + 1 < m->nframes ? ZMQ_SNDMORE : 0;
        if (zmq_msg_send(&m->frames[i], sock, more) < 0) {
            int e = errno;
            for (int j = i; j < m->nframes; j++) zmq_msg_close(&m->frames[j]);
            m->nframes = 0;
            return ordo__error_set(ORDO_ERR_IO, "zmq_msg_send: %s", zmq_strerror(e));
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

int ordo__wire_recv(void *sock, int router, ordo__msg_t *m, int flags)
{
    zmq_msg_t part;
    int rc;
    ordo__msg_init(m, 0);
    if (router) {
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, flags) < 0) {
            int e = errno;
            zmq_msg_close(&part);
            if (e == EAGAIN) return ORDO_ERR_AGAIN;
            if (e == ETERM) return ORDO_ERR_CLOSED;
            return ordo__error_set(ORDO_ERR_IO, "zmq_msg_recv: %s", zmq_strerror(e));
        }
        size_t n = zmq_msg_size(&part);
        if (n > ORDO_WIRE_MAX_RID) n = ORDO_WIRE_MAX_RID;
        memcpy(m->rid, zmq_msg_data(&part), n);
        m->rid_len = n;
        zmq_msg_close(&part);
        if (!has_more(sock)) return ordo__error_set(ORDO_ERR_PROTO, "message has no header frame");
        flags = 0;
    }
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, sock, flags) < 0) {
        int e = errno;
        zmq_msg_close(&part);
        if (e == EAGAIN) return ORDO_ERR_AGAIN;
        if (e == ETERM) return ORDO_ERR_CLOSED;
        return ordo__error_set(ORDO_ERR_IO, "zmq_msg_recv: %s", zmq_strerror(e));
    }
    rc = ordo__wire_decode_hdr(zmq_msg_data(&part), zmq_msg_size(&part), &m->hdr);
    zmq_msg_close(&part);
    if (rc) {
        drain(sock);
        return rc;
    }
    while (has_more(sock)) {
        if (m->nframes >= (int)m->hdr.nframes) {
            uint32_t want = m->hdr.nframes;
            drain(sock);
            ordo__msg_close(m);
            return ordo__error_set(ORDO_ERR_PROTO, "%s: more payload frames than the header's %u",
                                  ordo__wire_type_name(m->hdr.type), want);
        }
        zmq_msg_t *f = &m->frames[m->nframes];
        zmq_msg_init(f);
        if (zmq_msg_recv(f, sock, 0) < 0) {
            zmq_msg_close(f);
            ordo__msg_close(m);
            return ordo__error_set(ORDO_ERR_IO, "zmq_msg_recv: %s", zmq_strerror(errno));
        }
        m->nframes++;
        size_t got = zmq_msg_size(f);
        if (got != m->hdr.lens[m->nframes - 1]) {
            uint64_t want = m->hdr.lens[m->nframes - 1];
            int idx = m->nframes - 1;
            drain(sock);
            ordo__msg_close(m);
            return ordo__error_set(ORDO_ERR_PROTO, "%s: frame %d has %zu bytes, header says %llu",
                                  ordo__wire_type_name(m->hdr.type), idx, got,
                                  (unsigned long long)want);
        }
    }
    if (m->nframes != (int)m->hdr.nframes) {
        int got = m->nframes;
        uint32_t want = m->hdr.nframes;
        ordo__msg_close(m);
        return ordo__error_set(ORDO_ERR_PROTO, "%s: %d payload frames, header says %u",
                              ordo__wire_type_name(m->hdr.type), got, want);
    }
    return 0;
}
