/* wire: ordo's message format. A message is a ZeroMQ multipart message: one header frame
 * encoded with msgpack (protocol version, type, sender role and rank, request id,
 * iteration, key, chunk, priority, flags, dtype, payload lengths) followed by raw payload
 * frames that are never re-encoded. Decoding checks every type and length and rejects
 * anything malformed with ORDO_ERR_PROTO and a detail; it never trusts the sender. */
#ifndef ORDO_WIRE_H
#define ORDO_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <zmq.h>

#define ORDO_WIRE_VERSION 1
#define ORDO_WIRE_MAX_FRAMES 4
#define ORDO_WIRE_MAX_HDR 256
#define ORDO_WIRE_MAX_RID 64
/* a payload frame larger than this is refused (a single tensor chunk is far smaller) */
#define ORDO_WIRE_MAX_PAYLOAD ((uint64_t)1 << 32)

typedef enum {
    ORDO_MSG_REGISTER = 1,   /* node -> scheduler: JSON {role, endpoint, token, rank} */
    ORDO_MSG_WELCOME,        /* scheduler -> node: JSON cluster map, key map, plan */
    ORDO_MSG_REJECT,         /* scheduler -> node: text reason */
    ORDO_MSG_BARRIER,        /* node -> scheduler: iter = barrier id */
    ORDO_MSG_BARRIER_DONE,   /* scheduler -> node */
    ORDO_MSG_HEARTBEAT,      /* node -> scheduler */
    ORDO_MSG_HEARTBEAT_ACK,  /* scheduler -> node */
    ORDO_MSG_SHUTDOWN,       /* scheduler -> node: orderly end */
    ORDO_MSG_ABORT,          /* scheduler -> node: text reason; exit non-zero */
    ORDO_MSG_DONE,           /* node -> scheduler: finished; JSON final stats */
    ORDO_MSG_STATS,          /* worker -> scheduler: JSON metrics of one iteration */
    ORDO_MSG_HELLO,          /* worker -> server: introduces rank on a data connection */
    ORDO_MSG_INIT,           /* worker -> server: initial value of (key, chunk) */
    ORDO_MSG_PUSH,           /* worker -> server: gradient of (key, chunk) for iter */
    ORDO_MSG_PUSH_ACK,       /* server -> worker */
    ORDO_MSG_PULL,           /* worker -> server: value of (key, chunk) for iter */
    ORDO_MSG_PULL_RESP,      /* server -> worker: payload = value */
    ORDO_MSG_PLAN,           /* scheduler -> node: JSON plan (order, merge, regions) */
    ORDO_MSG_ERROR,          /* any -> peer: text reason of a refused request */
    ORDO_MSG_BCAST,          /* worker -> scheduler: iter = broadcast id, key = root, frame 0 the
                              * size (8 bytes, little-endian), frame 1 the root's bytes;
                              * scheduler -> worker: frame 0 the root's bytes (none to the root) */
    ORDO_MSG_REPLAN,         /* worker -> scheduler: JSON {"profile", "names"} (rank 0) or {};
                              * scheduler -> server: the new plan; server -> scheduler: ack;
                              * scheduler -> worker: the new plan or {"error": reason} */
    ORDO_MSG_KEYMAP,         /* scheduler -> node ([fault] replicas): JSON {"dead": [server
                              * ranks], "promoted": n}: those servers failed, their slices'
                              * first live backups are now the primaries */
    ORDO_MSG_REPL,           /* primary -> backup server: the state of slice (key, chunk) at
                              * version iter: frame 0 the value, frame 1 the momentum (if any) */
    ORDO_MSG_REPL_ACK,       /* backup -> primary: it holds (key, chunk) at version iter */
    ORDO_MSG_MEMBERS,        /* scheduler -> server, worker: JSON {"live": [ranks], "left": rank,
                              * "iter": t}: fault.worker = shrink, worker `left` is gone; the
                              * iterations from t on are the live workers' alone */
    ORDO_MSG_BATCH_REQ,      /* worker -> scheduler ([sync] batches, scheduler/batches.h): iter
                              * = the worker's next iteration (-1: none), key = the epoch it
                              * reads (ORDO_BATCH_ANY_EPOCH: any); frame 0 JSON {"n", "batch",
                              * "samples", "seed", "shuffle"}: the data set and the run */
    ORDO_MSG_BATCH,          /* scheduler -> worker: the answer. iter = the batch's epoch; flags
                              * ORDO_BATCH_END_EPOCH or ORDO_BATCH_END_RUN (no frame), else
                              * dtype BYTES: frame 0 the sample indices (int64, little-endian);
                              * dtype JSON: a refusal {"error", "code"} */
    ORDO_MSG_STATE_REQ,      /* worker -> scheduler: a restarted or joining worker asks for a
                              * live peer's committed state (ordo_peer_state), iter = the
                              * oldest iteration it may be of; scheduler -> worker (the peer):
                              * the same, key = the asking worker's rank */
    ORDO_MSG_STATE,          /* worker -> scheduler -> worker: the answer, key = the asking
                              * worker's rank, iter = the state's iteration; dtype BYTES: frame
                              * 0 the state (ordo_commit_state's bytes); dtype JSON: {"error"} */
    ORDO_MSG_INTRA,          /* local only: a worker's intra-host group finished a step */
    ORDO_MSG_PEER_DEAD,      /* local only: the transport lost a peer (never on the wire) */
    ORDO_MSG_WAKE,           /* local only: another thread of the process wants attention */
    ORDO_MSG_TYPE_MAX
} ordo__msg_type_t;

/* BATCH_REQ and BATCH header values (the batch service) */
#define ORDO_BATCH_ANY_EPOCH 0xffffffffu /* BATCH_REQ key: whichever epoch is being handed out */
#define ORDO_BATCH_END_EPOCH 0x1u       /* BATCH flags: the epoch asked for has no batch left */
#define ORDO_BATCH_END_RUN 0x2u         /* BATCH flags: the run's samples are all handed out */
#define ORDO_BATCH_AHEAD 0x4u           /* BATCH_REQ flags: asked for ahead, while the worker
                                           still works on its last batch (it stays leased) */
#define ORDO_BATCH_MAX 65536            /* the largest batch the service hands out */

typedef enum { ORDO_ROLE_SCHEDULER = 0, ORDO_ROLE_SERVER = 1, ORDO_ROLE_WORKER = 2 } ordo__role_t;

/* BF16, F16, ONEBIT and KV are compressed tensor payloads (common/codec.h owns their layout):
 * a PUSH or a PULL_RESP may carry its values in one of them instead of F32, and a PULL asks
 * for its answer in the dtype it carries (NONE or F32: float32). */
typedef enum { ORDO_DTYPE_NONE = 0, ORDO_DTYPE_F32 = 1, ORDO_DTYPE_BYTES = 2, ORDO_DTYPE_COO = 3,
               ORDO_DTYPE_JSON = 4, ORDO_DTYPE_BF16 = 5, ORDO_DTYPE_F16 = 6,
               ORDO_DTYPE_ONEBIT = 7, ORDO_DTYPE_KV = 8, ORDO_DTYPE_MAX } ordo__dtype_t;

/* flags */
#define ORDO_FLAG_LAST_CHUNK 0x1u /* the last chunk of a tensor */
#define ORDO_FLAG_GROUP 0x2u      /* a merged group: payload holds several keys */
#define ORDO_FLAG_PULL 0x4u       /* PUSH of iter that also pulls iter + 1: no PUSH_ACK, the
                                   * PULL_RESP answers both */
#define ORDO_FLAG_PROBE 0x8u      /* a calibration PUSH ([push] calibrate): the server sums its
                                   * floats into scratch memory and acknowledges it (PUSH_ACK
                                   * with this flag, same key); no key's value changes */
#define ORDO_PROBE_MAX_BYTES (64u << 20) /* the largest probe a server takes */
#define ORDO_FLAG_DROPPED 0x10u   /* PUSH_ACK (or the PULL_RESP of a fused push): the push came
                                   * after its iteration was applied without it ([sync] backup)
                                   * and was dropped */
/* PULL_RESP: bits 16 to 31 of the flags hold, as an int16_t, the staleness of the value sent:
 * the requested iteration minus the oldest iteration whose pushes the value is missing
 * ([sync]; 0 under bsp, negative when the value is newer than asked) */
/* HEARTBEAT_ACK with this flag is a liveness probe: the node's heartbeat thread answers
 * with a HEARTBEAT at once; a HEARTBEAT with it asks the same of the scheduler. Bit 0x20
 * means nothing else on heartbeats. */
#define ORDO_FLAG_PING 0x20u
/* REPL with this flag carries a worker's push to a backup (sync.mode = ssp with [fault]
 * replicas, server/replica.h): key, chunk and iter are the push's, priority the worker's rank,
 * req the primary's update count after it; the backup takes it as the primary did and
 * answers REPL_ACK with that count as its iter */
#define ORDO_FLAG_FORWARD 0x40u
/* Lossy pulls (common/codec.h: onebit, index-value) carry the change from the copy every
 * worker holds: a PULL (or a push carrying one, with ORDO_FLAG_PULL_CODED) with HAVE_PREV says
 * its sender holds its answer of iter - 1; an answer with DELTA carries the encoded change
 * from that answer (the receiver adds it), one without carries the servers' copy in float32
 * (server/pull_codec.h) */
#define ORDO_FLAG_HAVE_PREV 0x80u
#define ORDO_FLAG_DELTA 0x100u
#define ORDO_FLAG_PULL_CODED 0x200u /* a fused PUSH: answer in the push's own lossy dtype */
#define ORDO_FLAG_STALE_SHIFT 16
#define ORDO_FLAG_STALE(st) ((uint32_t)(uint16_t)(int16_t)((st) > 32767 ? 32767 : (st) < -32768 ? -32768 : (st)) << ORDO_FLAG_STALE_SHIFT)
#define ORDO_FLAG_STALENESS(flags) ((int)(int16_t)(uint16_t)((flags) >> ORDO_FLAG_STALE_SHIFT))

typedef struct ordo__wire_hdr {
    uint8_t type;  /* ordo__msg_type_t */
    uint8_t role;  /* sender's ordo__role_t */
    int32_t rank;  /* sender's rank, -1 before assignment */
    uint64_t req;  /* request id, echoed in the answer */
    int64_t iter;
    uint32_t key;
    uint32_t chunk;
    int32_t priority;
    uint32_t flags;
    uint8_t dtype; /* ordo__dtype_t of the payload */
    uint32_t nframes;
    uint64_t lens[ORDO_WIRE_MAX_FRAMES];
} ordo__wire_hdr_t;

/* A received or outgoing message: header, payload frames and, on a ROUTER socket, the
 * routing id of the peer. */
typedef struct ordo__msg {
    int sock;                        /* transport socket index it came on / goes to */
    uint8_t rid[ORDO_WIRE_MAX_RID];  /* ROUTER routing id of the peer */
    size_t rid_len;
    ordo__wire_hdr_t hdr;
    int nframes;
    zmq_msg_t frames[ORDO_WIRE_MAX_FRAMES];
} ordo__msg_t;

/* ordo__wire_type_name returns a message type's name ("PUSH") or "?" */
const char *ordo__wire_type_name(int type);

/* ordo__wire_role_name returns "scheduler", "server", "worker" or "?" */
const char *ordo__wire_role_name(int role);

/* ordo__wire_encode_hdr writes hdr as msgpack into buf (cap bytes) and sets *len. */
int ordo__wire_encode_hdr(const ordo__wire_hdr_t *hdr, void *buf, size_t cap, size_t *len);

/* ordo__wire_decode_hdr parses a header frame; rejects wrong version, unknown type, wrong
 * field types, out-of-range values and trailing bytes with ORDO_ERR_PROTO and a detail. */
int ordo__wire_decode_hdr(const void *buf, size_t len, ordo__wire_hdr_t *hdr);

/* ordo__msg_init makes an empty message of the given type (no frames). */
void ordo__msg_init(ordo__msg_t *m, int type);

/* ordo__msg_add_copy appends a payload frame holding a copy of data. */
int ordo__msg_add_copy(ordo__msg_t *m, const void *data, size_t len);

/* ordo__msg_add_ref appends a zero-copy payload frame over data; free_fn(data, hint) runs
 * once ZeroMQ no longer needs the memory (the caller keeps data alive until then). */
int ordo__msg_add_ref(ordo__msg_t *m, void *data, size_t len, zmq_free_fn *free_fn, void *hint);

/* ordo__msg_add_text appends a copy of a NUL-terminated string (JSON bodies, reasons). */
int ordo__msg_add_text(ordo__msg_t *m, const char *text);

/* ordo__msg_data returns frame i's bytes and sets *len; NULL when i is out of range. */
void *ordo__msg_data(ordo__msg_t *m, int i, size_t *len);

/* ordo__msg_text copies frame i as a NUL-terminated string into buf (truncating). */
const char *ordo__msg_text(ordo__msg_t *m, int i, char *buf, size_t size);

/* ordo__msg_close releases the frames; the message may be reused after ordo__msg_init. */
void ordo__msg_close(ordo__msg_t *m);

/* ordo__msg_move moves src into dst (dst must be closed or fresh); src is left empty. */
void ordo__msg_move(ordo__msg_t *dst, ordo__msg_t *src);

/* ordo__wire_send sends m on a socket (with rid first when router is set); on success the
 * frames are consumed and m is left empty; flags are ZMQ send flags (ZMQ_DONTWAIT). On
 * ORDO_ERR_AGAIN nothing was sent and m is intact. */
int ordo__wire_send(void *sock, int router, ordo__msg_t *m, int flags);

/* ordo__wire_recv receives one whole multipart message; a malformed one is drained and
 * rejected with ORDO_ERR_PROTO (detail says why), leaving no frames behind. */
int ordo__wire_recv(void *sock, int router, ordo__msg_t *m, int flags);

#endif
