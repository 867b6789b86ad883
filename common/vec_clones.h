/* vec_clones: ORDO_VECTOR_CLONES, the attribute that compiles a loop for several vector widths
 * (the float loops of core/vec.h, the wire codecs' conversions of common/codec.h). */
#ifndef ORDO_VEC_CLONES_H
#define ORDO_VEC_CLONES_H

/* ORDO_VECTOR_CLONES compiles a loop for AVX-512 and AVX2 besides the baseline (SSE2 on
 * x86-64); the dynamic loader picks the widest the CPU has. Not under AddressSanitizer. */
#if defined(__SANITIZE_ADDRESS__) /* GCC */
#define ORDO__ASAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(address_sanitizer)
#define ORDO__ASAN 1
#endif
#endif
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones) && !defined(ORDO__ASAN)
#define ORDO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef ORDO_VECTOR_CLONES
#define ORDO_VECTOR_CLONES
#endif

#endif
