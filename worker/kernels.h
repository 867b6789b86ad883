/* kernels: the CPU compute kernels of the built-in networks, as plain functions over
 * caller-owned float arrays: a row-major sgemm wrapper over OpenBLAS, dense layers, ReLU,
 * 2-D convolution (im2col + sgemm), 2x2 max-pooling and softmax cross-entropy, each with
 * its backward. Layouts: activations are row-major [n, features] or NCHW; dense weights
 * are [out, in] and conv weights [out_c, in_c, k, k] (PyTorch's). Backward functions
 * overwrite their gradient outputs (they never accumulate into them). Kernels trust their
 * arguments: callers validate shapes and labels. */
#ifndef ORDO_KERNELS_H
#define ORDO_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

/* ordo__kernels_set_threads sets the number of OpenBLAS threads of this process (ordo runs
 * several processes per host, so 1 is the default it applies at backend creation). */
void ordo__kernels_set_threads(int n);

/* ordo__kernels_sgemm computes the row-major C[m,n] = alpha * op(A) * op(B) + beta * C,
 * op(X) = X^T when the matching trans flag is set; lda/ldb/ldc are row strides. */
void ordo__kernels_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                        const float *a, int lda, const float *b, int ldb, float beta, float *c,
                        int ldc);

/* ordo__kernels_dense_fwd computes y[n,out] = x[n,in] * w[out,in]^T + b[out]. */
void ordo__kernels_dense_fwd(int n, int in, int out, const float *restrict x,
                            const float *restrict w, const float *restrict b, float *restrict y);

/* ordo__kernels_dense_bwd computes dw = dy^T x, db = column sums of dy and, unless dx is
 * NULL, dx = dy w. */
void ordo__kernels_dense_bwd(int n, int in, int out, const float *restrict x,
                            const float *restrict w, const float *restrict dy, float *restrict dx,
                            float *restrict dw, float *restrict db);

/* ordo__kernels_relu_fwd computes y = max(x, 0) over len elements. */
void ordo__kernels_relu_fwd(int64_t len, const float *restrict x, float *restrict y);

/* ordo__kernels_relu_bwd computes dx = dy where x > 0, else 0. */
void ordo__kernels_relu_bwd(int64_t len, const float *restrict x, const float *restrict dy,
                           float *restrict dx);

/* ordo__conv_t is the geometry of a square-kernel 2-D convolution over an NCHW batch. */
typedef struct ordo__conv {
    int n;                /* batch */
    int in_c, in_h, in_w; /* input channels and size */
    int out_c, k;         /* output channels, kernel size (k x k) */
    int pad, stride;      /* zero padding on each side, stride */
    int out_h, out_w;     /* derived by ordo__kernels_conv_init */
} ordo__conv_t;

/* ordo__kernels_conv_init fills g and derives out_h/out_w; returns false when the geometry
 * is impossible (non-positive sizes or an output smaller than 1x1). */
bool ordo__kernels_conv_init(ordo__conv_t *g, int n, int in_c, int in_h, int in_w, int out_c, int k,
                            int pad, int stride);

/* ordo__kernels_conv_col_len returns the floats of the im2col workspace the conv kernels
 * need: one sample's columns, in_c*k*k x out_h*out_w. */
int64_t ordo__kernels_conv_col_len(const ordo__conv_t *g);

/* ordo__kernels_conv2d_fwd computes y[n,out_c,out_h,out_w] = w * x + b; col is a workspace
 * of ordo__kernels_conv_col_len floats. */
void ordo__kernels_conv2d_fwd(const ordo__conv_t *g, const float *restrict x, const float *restrict w,
                             const float *restrict b, float *restrict y, float *restrict col);

/* ordo__kernels_conv2d_bwd computes dw, db and, unless dx is NULL, dx from dy and the
 * forward input x; col is the same workspace as the forward's. */
void ordo__kernels_conv2d_bwd(const ordo__conv_t *g, const float *restrict x, const float *restrict w,
                             const float *restrict dy, float *restrict dx, float *restrict dw,
                             float *restrict db, float *restrict col);

/* ordo__kernels_maxpool_fwd pools 2x2 windows with stride 2 over planes planes of h x w
 * (h and w even), writing y[planes, h/2, w/2] and, per output, the index within its plane
 * of the maximum (first one on ties) to arg for the backward. */
void ordo__kernels_maxpool_fwd(int64_t planes, int h, int w, const float *restrict x,
                              float *restrict y, int32_t *restrict arg);

/* ordo__kernels_maxpool_bwd routes dy to the forward's maxima: dx[planes, h, w] is zero
 * except at the recorded positions. */
void ordo__kernels_maxpool_bwd(int64_t planes, int h, int w, const float *restrict dy,
                              const int32_t *restrict arg, float *restrict dx);

/* ordo__kernels_xent_fwd computes the softmax of logits[n, classes] into prob, and returns
 * the mean cross-entropy over the n samples in *loss and the number of samples whose
 * arg-max equals the label in *correct. labels must lie in [0, classes). */
void ordo__kernels_xent_fwd(int n, int classes, const float *restrict logits,
                           const int *restrict labels, float *restrict prob, double *loss,
                           int *correct);

/* ordo__kernels_xent_bwd computes the gradient of the mean loss w.r.t. the logits:
 * dlogits = (prob - onehot(labels)) / n. */
void ordo__kernels_xent_bwd(int n, int classes, const float *restrict prob,
                           const int *restrict labels, float *restrict dlogits);

#endif
