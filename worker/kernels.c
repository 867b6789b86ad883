/* kernels: CPU implementations of the built-in networks' ops. Matrix products go through
 * OpenBLAS's cblas_sgemm; everything else is a contiguous loop the compiler vectorizes.
 * Convolution lowers one sample at a time to a matrix product (im2col), so the workspace
 * stays one sample's columns whatever the batch. */
#include "worker/kernels.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

void ordo__kernels_set_threads(int n)
{
    openblas_set_num_threads(n < 1 ? 1 : n);
}

void ordo__kernels_sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                        const float *a, int lda, const float *b, int ldb, float beta, float *c,
                        int ldc)
{
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

/* ---- dense ---------------------------------------------------------------------------- */

void ordo__kernels_dense_fwd(int n, int in, int out, const float *restrict x,
                            const float *restrict w, const float *restrict b, float *restrict y)
{
    ordo__kernels_sgemm(false, true, n, out, in, 1.0f, x, in, w, in, 0.0f, y, out);
    for (int i = 0; i < n; i++) {
        float *restrict row = y + (int64_t)i * out;
        for (int j = 0; j < out; j++)
            row[j] += b[j];
    }
}

void ordo__kernels_dense_bwd(int n, int in, int out, const float *restrict x,
                            const float *restrict w, const float *restrict dy, float *restrict dx,
                            float *restrict dw, float *restrict db)
{
    ordo__kernels_sgemm(true, false, out, in, n, 1.0f, dy, out, x, in, 0.0f, dw, in);
    memset(db, 0, sizeof(float) * (size_t)out);
    for (int i = 0; i < n; i++) {
        const float *restrict row = dy + (int64_t)i * out;
        for (int j = 0; j < out; j++)
            db[j] += row[j];
    }
    if (dx) ordo__kernels_sgemm(false, false, n, in, out, 1.0f, dy, out, w, in, 0.0f, dx, in);
}

/* ---- relu ----------------------------------------------------------------------------- */

void ordo__kernels_relu_fwd(int64_t len, const float *restrict x, float *restrict y)
{
    /* Selects written so the compiler emits masks and max instructions, not branches: on
     * random signs a branch mispredicts half the time. */
    for (int64_t i = 0; i < len; i++) {
        float v = x[i];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

void ordo__kernels_relu_bwd(int64_t len, const float *restrict x, const float *restrict dy,
                           float *restrict dx)
{
    for (int64_t i = 0; i < len; i++) {
        float g = dy[i];
        dx[i] = x[i] > 0.0f ? g : 0.0f;
    }
}

/* ---- conv2d --------------------------------------------------------------------------- */

bool ordo__kernels_conv_init(ordo__conv_t *g, int n, int in_c, int in_h, int in_w, int out_c, int k,
                            int pad, int stride)
{
    if (n < 1 || in_c < 1 || in_h < 1 || in_w < 1 || out_c < 1 || k < 1 || pad < 0 || stride < 1)
        return false;
    int out_h = (in_h + 2 * pad - k) / stride + 1;
    int out_w = (in_w + 2 * pad - k) / stride + 1;
    if (in_h + 2 * pad < k || in_w + 2 * pad < k || out_h < 1 || out_w < 1) return false;
    *g = (ordo__conv_t){.n = n,
                       .in_c = in_c,
                       .in_h = in_h,
                       .in_w = in_w,
                       .out_c = out_c,
                       .k = k,
                       .pad = pad,
                       .stride = stride,
                       .out_h = out_h,
                       .out_w = out_w};
    return true;
}

int64_t ordo__kernels_conv_col_len(const ordo__conv_t *g)
{
    return (int64_t)g->in_c * g->k * g->k * g->out_h * g->out_w;
}

/* valid_range gives the output columns [*lo, *hi) whose input column ow*stride - pad + kj
 * lies inside [0, in_w); the others read zero padding. */
static void valid_range(const ordo__conv_t *g, int kj, int *lo, int *hi)
{
    int first = g->pad - kj; /* smallest ow*stride that lands on column 0 */
    int l = first <= 0 ? 0 : (first + g->stride - 1) / g->stride;
    int last = g->in_w - 1 + g->pad - kj; /* largest ow*stride that lands inside */
    int h = last < 0 ? 0 : last / g->stride + 1;
    if (h > g->out_w) h = g->out_w;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* im2col writes one sample's receptive fields as rows (c, ki, kj) x columns (oh, ow). The
 * padding bounds are worked out per row, so the inner loops are plain copies. */
static void im2col(const ordo__conv_t *g, const float *restrict x, float *restrict col)
{
    const int k = g->k, oh_n = g->out_h, ow_n = g->out_w, st = g->stride;
    for (int c = 0; c < g->in_c; c++) {
        const float *restrict plane = x + (int64_t)c * g->in_h * g->in_w;
        for (int ki = 0; ki < k; ki++) {
            for (int kj = 0; kj < k; kj++) {
                float *restrict row = col + ((int64_t)(c * k + ki) * k + kj) * oh_n * ow_n;
                int lo, hi;
                valid_range(g, kj, &lo, &hi);
                for (int oh = 0; oh < oh_n; oh++) {
                    int ih = oh * st - g->pad + ki;
                    float *restrict out = row + (int64_t)oh * ow_n;
                    if (ih < 0 || ih >= g->in_h) {
                        memset(out, 0, sizeof(float) * (size_t)ow_n);
                        continue;
                    }
                    const float *restrict in = plane + (int64_t)ih * g->in_w - g->pad + kj;
                    for (int ow = 0; ow < lo; ow++)
                        out[ow] = 0.0f;
                    if (st == 1)
                        memcpy(out + lo, in + lo, sizeof(float) * (size_t)(hi - lo));
                    else
                        for (int ow = lo; ow < hi; ow++)
                            out[ow] = in[ow * st];
                    for (int ow = hi; ow < ow_n; ow++)
                        out[ow] = 0.0f;
                }
            }
        }
    }
}

/* col2im adds columns back onto one sample's input gradient (which it zeroes first). */
static void col2im(const ordo__conv_t *g, const float *restrict col, float *restrict dx)
{
    const int k = g->k, oh_n = g->out_h, ow_n = g->out_w, st = g->stride;
    memset(dx, 0, sizeof(float) * (size_t)g->in_c * g->in_h * g->in_w);
    for (int c = 0; c < g->in_c; c++) {
        float *restrict plane = dx + (int64_t)c * g->in_h * g->in_w;
        for (int ki = 0; ki < k; ki++) {
            for (int kj = 0; kj < k; kj++) {
                const float *restrict row = col + ((int64_t)(c * k + ki) * k + kj) * oh_n * ow_n;
                int lo, hi;
                valid_range(g, kj, &lo, &hi);
                for (int oh = 0; oh < oh_n; oh++) {
                    int ih = oh * st - g->pad + ki;
                    if (ih < 0 || ih >= g->in_h) continue;
                    const float *restrict in = row + (int64_t)oh * ow_n;
                    float *restrict out = plane + (int64_t)ih * g->in_w - g->pad + kj;
                    if (st == 1)
                        for (int ow = lo; ow < hi; ow++)
                            out[ow] += in[ow];
                    else
                        for (int ow = lo; ow < hi; ow++)
                            out[ow * st] += in[ow];
                }
            }
        }
    }
}

void ordo__kernels_conv2d_fwd(const ordo__conv_t *g, const float *restrict x, const float *restrict w,
                             const float *restrict b, float *restrict y, float *restrict col)
{
    const int ckk = g->in_c * g->k * g->k;
    const int ohw = g->out_h * g->out_w;
    const int64_t in_len = (int64_t)g->in_c * g->in_h * g->in_w;
    const int64_t out_len = (int64_t)g->out_c * ohw;
    for (int s = 0; s < g->n; s++) {
        float *restrict ys = y + s * out_len;
        im2col(g, x + s * in_len, col);
        ordo__kernels_sgemm(false, false, g->out_c, ohw, ckk, 1.0f, w, ckk, col, ohw, 0.0f, ys, ohw);
        for (int c = 0; c < g->out_c; c++) {
            float *restrict plane = ys + (int64_t)c * ohw;
            for (int i = 0; i < ohw; i++)
                plane[i] += b[c];
        }
    }
}

void ordo__kernels_conv2d_bwd(const ordo__conv_t *g, const float *restrict x, const float *restrict w,
                             const float *restrict dy, float *restrict dx, float *restrict dw,
                             float *restrict db, float *restrict col)
{
    const int ckk = g->in_c * g->k * g->k;
    const int ohw = g->out_h * g->out_w;
    const int64_t in_len = (int64_t)g->in_c * g->in_h * g->in_w;
    const int64_t out_len = (int64_t)g->out_c * ohw;
    memset(db, 0, sizeof(float) * (size_t)g->out_c);
    for (int s = 0; s < g->n; s++) {
        const float *restrict dys = dy + s * out_len;
        im2col(g, x + s * in_len, col);
        /* dw = sum over samples of dy_s * col_s^T: the first sample overwrites. */
        ordo__kernels_sgemm(false, true, g->out_c, ckk, ohw, 1.0f, dys, ohw, col, ohw,
                           s == 0 ? 0.0f : 1.0f, dw, ckk);
        for (int c = 0; c < g->out_c; c++) {
            const float *restrict plane = dys + (int64_t)c * ohw;
            float sum = 0.0f;
            for (int i = 0; i < ohw; i++)
                sum += plane[i];
            db[c] += sum;
        }
        if (dx) {
            ordo__kernels_sgemm(true, false, ckk, ohw, g->out_c, 1.0f, w, ckk, dys, ohw, 0.0f, col,
                               ohw);
            col2im(g, col, dx + s * in_len);
        }
    }
}

/* ---- max-pool 2x2 ----------------------------------------------------------------------- */

void ordo__kernels_maxpool_fwd(int64_t planes, int h, int w, const float *restrict x,
                              float *restrict y, int32_t *restrict arg)
{
    const int oh_n = h / 2, ow_n = w / 2;
    for (int64_t p = 0; p < planes; p++) {
        const float *restrict in = x + p * h * w;
        float *restrict out = y + p * oh_n * ow_n;
        int32_t *restrict at = arg + p * oh_n * ow_n;
        for (int oh = 0; oh < oh_n; oh++) {
            for (int ow = 0; ow < ow_n; ow++) {
                /* Branch-free selects; on ties the earliest position wins. */
                int i0 = (2 * oh) * w + 2 * ow;
                float a = in[i0], b = in[i0 + 1], c = in[i0 + w], d = in[i0 + w + 1];
                int ia = b > a ? i0 + 1 : i0;
                float va = b > a ? b : a;
                int ic = d > c ? i0 + w + 1 : i0 + w;
                float vc = d > c ? d : c;
                out[oh * ow_n + ow] = vc > va ? vc : va;
                at[oh * ow_n + ow] = vc > va ? ic : ia;
            }
        }
    }
}

void ordo__kernels_maxpool_bwd(int64_t planes, int h, int w, const float *restrict dy,
                              const int32_t *restrict arg, float *restrict dx)
{
    const int64_t out_len = (int64_t)(h / 2) * (w / 2);
    memset(dx, 0, sizeof(float) * (size_t)(planes * h * w));
    for (int64_t p = 0; p < planes; p++) {
        float *restrict plane = dx + p * h * w;
        for (int64_t i = 0; i < out_len; i++)
            plane[arg[p * out_len + i]] += dy[p * out_len + i];
    }
}

/* ---- softmax cross-entropy -------------------------------------------------------------- */

void ordo__kernels_xent_fwd(int n, int classes, const float *restrict logits,
                           const int *restrict labels, float *restrict prob, double *loss,
                           int *correct)
{
    double total = 0.0;
    int right = 0;
    for (int i = 0; i < n; i++) {
        const float *restrict z = logits + (int64_t)i * classes;
        float *restrict p = prob + (int64_t)i * classes;
        int top = 0;
        for (int j = 1; j < classes; j++)
            if (z[j] > z[top]) top = j;
        float zmax = z[top];
        double sum = 0.0;
        for (int j = 0; j < classes; j++) {
            p[j] = expf(z[j] - zmax);
            sum += p[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < classes; j++)
            p[j] *= inv;
        /* -log softmax computed from the logits, not from p, so it never sees log(0). */
        total += log(sum) - ((double)z[labels[i]] - (double)zmax);
        right += top == labels[i];
    }
    *loss = n > 0 ? total / n : 0.0;
    *correct = right;
}

void ordo__kernels_xent_bwd(int n, int classes, const float *restrict prob,
                           const int *restrict labels, float *restrict dlogits)
{
    const float scale = 1.0f / (float)n;
    for (int i = 0; i < n; i++) {
        const float *restrict p = prob + (int64_t)i * classes;
        float *restrict d = dlogits + (int64_t)i * classes;
        for (int j = 0; j < classes; j++)
            d[j] = p[j] * scale;
        d[labels[i]] -= scale;
    }
}
