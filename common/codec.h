/* codec: the wire types of pushed gradients and pulled values, behind one ops table with one
 * file per codec: codec_f32.c (float32, no compression), codec_bf16.c and codec_fp16.c (16-bit
 * casts), codec_onebit.c (sign and scale) and codec_sparse.c (topk and randomk: indices and
 * values). Every codec turns n floats into one payload frame of its wire dtype (common/wire.h)
 * and back; the receiver needs only the frame's dtype and n to decode it. Error feedback
 * (ef = vanilla: what a lossy encoding left out is added to the next gradient) is a decorator
 * around any codec (ordo__codec_encode_ef), as BytePS's vanilla_ef is. Sums and updates stay
 * float32 whatever the wire carries. */
#ifndef ORDO_CODEC_H
#define ORDO_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    ORDO__CODEC_NONE = 0, /* float32 */
    ORDO__CODEC_BF16,
    ORDO__CODEC_FP16,
    ORDO__CODEC_ONEBIT,
    ORDO__CODEC_TOPK,
    ORDO__CODEC_RANDOMK,
    ORDO__CODEC_MAX
} ordo__codec_id_t;

/* A tensor's compression: which codec, its k, and error feedback. */
typedef struct ordo__codec_spec {
    int id;      /* ordo__codec_id_t */
    double k;    /* topk, randomk: a count (>= 1) or a fraction of the tensor (0 < k < 1) */
    bool ef;     /* error feedback (ef = vanilla): the residual is added to the next push */
    float scale; /* fp16: values are multiplied by this before the cast and divided after
                    (1 / workers, as DDP's hook divides before it casts); 0 means 1 */
    bool pull_delta; /* onebit, topk, randomk: pulls carry the encoded change from the copy
                        every worker holds (pull=delta) instead of float32 values */
} ordo__codec_spec_t;

/* Per-message knobs and results of an encoding. */
typedef struct ordo__codec_io {
    uint64_t seed;    /* randomk: the selection's seed (the same on every worker for a step) */
    int64_t overflow; /* out: fp16, the values that would not fit (the frame is not written) */
} ordo__codec_io_t;

typedef struct ordo__codec_ops {
    const char *name; /* "none", "bf16", "fp16", "onebit", "topk", "randomk" */
    int id;           /* ordo__codec_id_t */
    uint8_t dtype;    /* the wire dtype of its frames (ORDO_DTYPE_*) */
    bool lossy;       /* more than a rounding is lost: error feedback is on by default */
    bool needs_k;     /* takes k (topk, randomk) */
    /* max_bytes is the largest frame encode writes for n values. */
    size_t (*max_bytes)(const ordo__codec_spec_t *c, int64_t n);
    /* encode writes src[0..n) as one frame into dst (max_bytes room) and returns its length,
     * or a negative ORDO_ERR_* (ORDO_ERR_RANGE: fp16 values that would overflow, counted in
     * io->overflow; the caller sends that message in float32). */
    int64_t (*encode)(const ordo__codec_spec_t *c, const float *src, int64_t n, void *dst,
                      ordo__codec_io_t *io);
    /* decode writes the n floats a frame of len bytes stands for into dst; ORDO_ERR_PROTO with
     * a detail when the frame is malformed (see ordo__codec_decode). */
    int (*decode)(const void *frame, size_t len, int64_t n, float *dst);
    /* decode_add adds the n floats a frame stands for into acc, in one pass (see
     * ordo__codec_decode_add); acc is untouched when the frame is malformed. */
    int (*decode_add)(const void *frame, size_t len, int64_t n, float *acc);
    /* decode_range writes values [off, off + count) of a frame of n values into dst, checking
     * the frame as decode does; NULL for a codec whose values have no fixed place in its
     * frame (see ordo__codec_decode_range). */
    int (*decode_range)(const void *frame, size_t len, int64_t n, int64_t off, int64_t count,
                        float *dst);
} ordo__codec_ops_t;

/* ordo__codec_ops returns the codec of id, or NULL when there is none. */
const ordo__codec_ops_t *ordo__codec_ops(int id);

/* ordo__codec_of_dtype returns the codec whose frames have wire dtype (F32 included: the
 * "none" codec), or NULL when no codec writes that dtype. */
const ordo__codec_ops_t *ordo__codec_of_dtype(int dtype);

/* ordo__codec_parse reads a compression spec: "none", "bf16", "fp16", "onebit", "topk:K",
 * "randomk:K" (K a count >= 1 or a fraction in (0, 1)), each optionally followed by ",ef=vanilla"
 * or ",ef=none" (default: vanilla for onebit, topk and randomk, none for the casts, which
 * round and lose no more) and, for onebit, topk and randomk, ",pull=delta" (pulls carry the
 * encoded change; default ",pull=float32"). ORDO_ERR_INVAL with a detail naming what is
 * wrong. */
int ordo__codec_parse(const char *text, ordo__codec_spec_t *out);

/* ordo__codec_format writes spec as text ordo__codec_parse reads back (buf of size bytes). */
const char *ordo__codec_format(const ordo__codec_spec_t *c, char *buf, size_t size);

/* ordo__codec_k returns how many values topk or randomk keep of n (1 <= k <= n). */
int64_t ordo__codec_k(const ordo__codec_spec_t *c, int64_t n);

/* ordo__codec_bytes_per_value is the wire's size of one value of a tensor of n (4 for float32,
 * 2 for the casts, about 1/8 for onebit, 8 k / n for the sparse codecs): what planners and
 * benchmarks count. */
double ordo__codec_bytes_per_value(const ordo__codec_spec_t *c, int64_t n);

/* ordo__codec_decode writes the n floats frame (len bytes of wire dtype) stands for into dst.
 * A frame whose length disagrees with its dtype and n, or whose indices are out of range or
 * not increasing, is refused with ORDO_ERR_PROTO and a detail; dst is then undefined. */
int ordo__codec_decode(int dtype, const void *frame, size_t len, int64_t n, float *dst);

/* ordo__codec_decode_add adds the n floats frame stands for into acc (acc += decoded) in one
 * pass, the server's sum of a push: for the 16-bit casts it reads 2 bytes a value where
 * decoding then adding a float32 copy reads 8 (vectorised, chosen at run time). The sums are
 * the same bits as ordo__codec_decode into a buffer then ordo__vec_add, except that an entry
 * a sparse frame does not carry is left as it is (a -0 stays -0). A malformed frame is
 * refused as by ordo__codec_decode, and acc is then untouched. */
int ordo__codec_decode_add(int dtype, const void *frame, size_t len, int64_t n, float *acc);

/* ordo__codec_ranged says whether dtype's frames keep each value at a fixed place (float32
 * and the 16-bit casts), so that ordo__codec_decode_range can read a part of one. */
bool ordo__codec_ranged(int dtype);

/* ordo__codec_decode_range writes values [off, off + count) of a frame of n values (len bytes
 * of a ranged dtype) into dst: the server sums and applies a 16-bit push straight from its
 * frame, a cache-sized part at a time, instead of decoding it whole into float32 first. The
 * frame is checked as ordo__codec_decode checks it (count 0: the check alone), and a range
 * outside [0, n) or a dtype that is not ranged is refused with ORDO_ERR_PROTO. */
int ordo__codec_decode_range(int dtype, const void *frame, size_t len, int64_t n, int64_t off,
                             int64_t count, float *dst);

/* ordo__codec_encode_ef is encode under error feedback: residual (n floats, zero at first) is
 * added to src, that is encoded, and what the frame does not carry becomes the new residual.
 * scratch holds n floats. Without ef in c it is plain encode and residual is untouched. */
int64_t ordo__codec_encode_ef(const ordo__codec_spec_t *c, const float *src, int64_t n,
                              float *residual, float *scratch, void *dst, ordo__codec_io_t *io);

/* The conversions the codecs share, vectorised where the CPU allows (chosen at run time) and
 * exact on every path: round to nearest even, NaN kept a NaN. */
void ordo__codec_to_bf16(const float *src, int64_t n, uint16_t *dst);
void ordo__codec_from_bf16(const uint16_t *src, int64_t n, float *dst);
/* ordo__codec_to_fp16 writes the halves of src * scale and returns how many values do not fit
 * in fp16 (|x| > 65504 after rounding, inf or NaN; their halves are undefined). */
int64_t ordo__codec_to_fp16(const float *src, int64_t n, float scale, uint16_t *dst);
/* ordo__codec_from_fp16 writes src's values times mult into dst. */
void ordo__codec_from_fp16(const uint16_t *src, int64_t n, float mult, float *dst);

/* ordo__codec_set_simd turns the hand-written vector paths (F16C) off, or back on where the
 * CPU has them, and returns the previous setting: for tests and benchmarks that compare them
 * with the scalar paths (which give the same bits). Not thread-safe; set it before converting.
 * The compiler's clones (ORDO_VECTOR_CLONES) are picked at load time and stay. */
bool ordo__codec_set_simd(bool on);

#endif
