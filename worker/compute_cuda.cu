/* compute_cuda: the CUDA backend. It runs the built-in networks' ops (worker/nn.h's layer
 * table) on the GPU: matrix products and reductions with cuBLAS (column-major, so every
 * row-major product below is written as its transpose), elementwise ops, im2col/col2im,
 * pooling and the softmax cross-entropy as small kernels. Parameters are copied from the
 * bound host buffers when their op's forward starts, gradients back to the host before the
 * op's backward returns; activations and workspaces live on the device from creation on.
 * Every CUDA and cuBLAS return code is checked and mapped to an ORDO_E* code with a detail
 * naming the call. Built only when CMake finds the CUDA toolkit (ORDO_HAVE_CUDA), and only
 * into the plugin libordo_compute_cuda.so (compute_backend.h), which the program loads when
 * it asks for cuda. */
extern "C" {
#include "common/error.h"
#include "worker/compute_backend.h"
#include "core/nn.h"
}

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- error mapping ---------------------------------------------------------------------- */

static int cuda_fail(cudaError_t e, const char *what)
{
    int rc = e == cudaErrorMemoryAllocation ? ORDO_ERR_NOMEM : ORDO_ERR_IO;
    return ordo__error_set(rc, "compute cuda: %s: %s (%s)", what, cudaGetErrorString(e),
                          cudaGetErrorName(e));
}

static int blas_fail(cublasStatus_t s, const char *what)
{
    int rc = s == CUBLAS_STATUS_ALLOC_FAILED ? ORDO_ERR_NOMEM : ORDO_ERR_IO;
    return ordo__error_set(rc, "compute cuda: %s: %s", what, cublasGetStatusString(s));
}

#define CU(call, what)                                                                             \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) return cuda_fail(e_, what);                                         \
    } while (0)

#define BL(call, what)                                                                             \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) return blas_fail(s_, what);                               \
    } while (0)

/* LAUNCHED checks a kernel launch (configuration errors are reported at once; execution
 * errors surface at the next synchronizing copy, which is checked too). */
#define LAUNCHED(what) CU(cudaGetLastError(), what)

static const int THREADS = 256;

static unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

/* ---- kernels ------------------------------------------------------------------------------ */

#define GRID_LOOP(i, n)                                                                            \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)blockDim.x * gridDim.x)

__global__ void k_fill(float *x, int64_t n, float v)
{
    GRID_LOOP(i, n) x[i] = v;
}

/* y[s, c, i] += b[c] for y of [n, channels, plane]; a dense layer is plane = 1. */
__global__ void k_bias_add(float *y, const float *b, int64_t n, int channels, int plane)
{
    GRID_LOOP(i, n * channels * plane) y[i] += b[(i / plane) % channels];
}

__global__ void k_relu_fwd(const float *x, float *y, int64_t n)
{
    GRID_LOOP(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void k_relu_bwd(const float *x, const float *dy, float *dx, int64_t n)
{
    GRID_LOOP(i, n) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

struct geom {
    int n, in_c, in_h, in_w, out_c, k, pad, out_h, out_w;
};

/* col[s][(c*k + ki)*k + kj][oh*out_w + ow] = x[s][c][oh - pad + ki][ow - pad + kj] or 0. */
__global__ void k_im2col(const float *x, float *col, geom g)
{
    const int64_t ohw = (int64_t)g.out_h * g.out_w;
    const int64_t rows = (int64_t)g.in_c * g.k * g.k;
    GRID_LOOP(i, g.n * rows * ohw)
    {
        int64_t pos = i % ohw, row = (i / ohw) % rows, s = i / (ohw * rows);
        int kj = (int)(row % g.k), ki = (int)((row / g.k) % g.k), c = (int)(row / (g.k * g.k));
        int ih = (int)(pos / g.out_w) - g.pad + ki, iw = (int)(pos % g.out_w) - g.pad + kj;
        col[i] = (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w)
                     ? x[((s * g.in_c + c) * g.in_h + ih) * g.in_w + iw]
                     : 0.0f;
    }
}

/* dx[s][c][ih][iw] = sum of the col entries that im2col copied from that position. */
__global__ void k_col2im(const float *col, float *dx, geom g)
{
    const int64_t ohw = (int64_t)g.out_h * g.out_w;
    const int64_t rows = (int64_t)g.in_c * g.k * g.k;
    GRID_LOOP(i, (int64_t)g.n * g.in_c * g.in_h * g.in_w)
    {
        int iw = (int)(i % g.in_w), ih = (int)((i / g.in_w) % g.in_h);
        int c = (int)((i / ((int64_t)g.in_w * g.in_h)) % g.in_c);
        int64_t s = i / ((int64_t)g.in_w * g.in_h * g.in_c);
        float sum = 0.0f;
        for (int ki = 0; ki < g.k; ki++) {
            int oh = ih + g.pad - ki;
            if (oh < 0 || oh >= g.out_h) continue;
            for (int kj = 0; kj < g.k; kj++) {
                int ow = iw + g.pad - kj;
                if (ow < 0 || ow >= g.out_w) continue;
                int64_t row = ((int64_t)c * g.k + ki) * g.k + kj;
                sum += col[(s * rows + row) * ohw + (int64_t)oh * g.out_w + ow];
            }
        }
        dx[i] = sum;
    }
}

/* 2x2 max-pool, stride 2, over planes of h x w; arg is the index within the plane. */
__global__ void k_pool_fwd(const float *x, float *y, int *arg, int64_t planes, int h, int w)
{
    const int oh_n = h / 2, ow_n = w / 2;
    GRID_LOOP(i, planes * oh_n * ow_n)
    {
        int ow = (int)(i % ow_n), oh = (int)((i / ow_n) % oh_n);
        int64_t p = i / ((int64_t)oh_n * ow_n);
        const float *in = x + p * h * w;
        int best = 2 * oh * w + 2 * ow;
        const int cand[3] = {best + 1, best + w, best + w + 1};
        for (int c = 0; c < 3; c++)
            if (in[cand[c]] > in[best]) best = cand[c];
        y[i] = in[best];
        arg[i] = best;
    }
}

/* Windows do not overlap, so each output writes its own input position (dx zeroed first). */
__global__ void k_pool_bwd(const float *dy, const int *arg, float *dx, int64_t planes, int h, int w)
{
    const int64_t per = (int64_t)(h / 2) * (w / 2);
    GRID_LOOP(i, planes * per) dx[(i / per) * h * w + arg[i]] = dy[i];
}

/* One thread per sample: softmax into prob, -log p[label] into loss[s], hit into right[s]. */
__global__ void k_xent_fwd(const float *z, const int *labels, float *prob, double *loss, int *right,
                           int n, int classes)
{
    GRID_LOOP(s, n)
    {
        const float *zs = z + s * classes;
        float *ps = prob + s * classes;
        int top = 0;
        for (int j = 1; j < classes; j++)
            if (zs[j] > zs[top]) top = j;
        float zmax = zs[top];
        double sum = 0.0;
        for (int j = 0; j < classes; j++) {
            ps[j] = expf(zs[j] - zmax);
            sum += ps[j];
        }
        float inv = (float)(1.0 / sum);
        for (int j = 0; j < classes; j++)
            ps[j] *= inv;
        loss[s] = log(sum) - ((double)zs[labels[s]] - (double)zmax);
        right[s] = top == labels[s];
    }
}

__global__ void k_xent_bwd(const float *prob, const int *labels, float *dz, int n, int classes)
{
    const float scale = 1.0f / (float)n;
    GRID_LOOP(i, (int64_t)n * classes)
    {
        int j = (int)(i % classes);
        int64_t s = i / classes;
        dz[i] = prob[i] * scale - (j == labels[s] ? scale : 0.0f);
    }
}

/* ---- state -------------------------------------------------------------------------------- */

typedef struct cuda {
    const ordo__model_t *m;
    ordo__nn_layer_t *layers;
    int *consumer;
    bool *fwd_done, *bwd_done;
    cublasHandle_t blas;
    bool have_blas;
    float **d_param, **d_grad; /* per model parameter */
    float **d_out, **d_dout;   /* per op; the loss op's out holds probabilities */
    int **d_arg;               /* per pool op */
    float *d_x;                /* input batch */
    int *d_labels;
    float *d_col;   /* im2col of the whole batch, the largest conv's */
    float *d_wpart; /* per-sample conv weight gradients before their sum */
    float *d_tmp;   /* per (sample, channel) sums for conv bias gradients */
    float *d_ones;  /* ones, for reductions as matrix-vector products */
    double *d_loss; /* per-sample losses */
    int *d_right;   /* per-sample hits */
    double *h_loss;
    int *h_right;
    float *const *params;
    float *const *grads;
    int n;
    double loss;
    int correct;
} cuda_t;

static void cuda_destroy(void *impl)
{
    cuda_t *c = (cuda_t *)impl;
    if (!c) return;
    /* Frees ignore errors: there is nothing better to do on the way out. */
    for (int p = 0; p < c->m->n_params; p++) {
        if (c->d_param) cudaFree(c->d_param[p]);
        if (c->d_grad) cudaFree(c->d_grad[p]);
    }
    for (int o = 0; o < c->m->n_ops; o++) {
        if (c->d_out) cudaFree(c->d_out[o]);
        if (c->d_dout) cudaFree(c->d_dout[o]);
        if (c->d_arg) cudaFree(c->d_arg[o]);
    }
    cudaFree(c->d_x);
    cudaFree(c->d_labels);
    cudaFree(c->d_col);
    cudaFree(c->d_wpart);
    cudaFree(c->d_tmp);
    cudaFree(c->d_ones);
    cudaFree(c->d_loss);
    cudaFree(c->d_right);
    if (c->have_blas) cublasDestroy(c->blas);
    free(c->d_param);
    free(c->d_grad);
    free(c->d_out);
    free(c->d_dout);
    free(c->d_arg);
    free(c->h_loss);
    free(c->h_right);
    free(c->fwd_done);
    free(c->bwd_done);
    free(c->consumer);
    free(c->layers);
    free(c);
}

static int cuda_bind(void *impl, float *const *params, float *const *grads)
{
    cuda_t *c = (cuda_t *)impl;
    c->params = params;
    c->grads = grads;
    return 0;
}

static int cuda_set_batch(void *impl, const float *x, const int *labels, int n)
{
    cuda_t *c = (cuda_t *)impl;
    size_t in_len = (size_t)ordo__nn_layer_in_len(&c->layers[0]);
    CU(cudaMemcpy(c->d_x, x, sizeof(float) * in_len * (size_t)n, cudaMemcpyHostToDevice),
       "copying the batch to the device");
    CU(cudaMemcpy(c->d_labels, labels, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice),
       "copying the labels to the device");
    c->n = n;
    memset(c->fwd_done, 0, sizeof(bool) * (size_t)c->m->n_ops);
    memset(c->bwd_done, 0, sizeof(bool) * (size_t)c->m->n_ops);
    return 0;
}

static geom geometry(const cuda_t *c, const ordo__nn_layer_t *l)
{
    geom g = {c->n, l->in_c, l->in_h, l->in_w, l->out_c, l->k, l->pad, l->out_h, l->out_w};
    return g;
}

static int upload_params(cuda_t *c, int o)
{
    const ordo__model_op_t *op = &c->m->ops[o];
    for (int k = 0; k < op->n_params; k++) {
        int p = op->params[k];
        CU(cudaMemcpy(c->d_param[p], c->params[p], sizeof(float) * (size_t)c->m->params[p].numel,
                      cudaMemcpyHostToDevice),
           "copying parameters to the device");
    }
    return 0;
}

static int download_grads(cuda_t *c, int o)
{
    const ordo__model_op_t *op = &c->m->ops[o];
    for (int k = 0; k < op->n_params; k++) {
        int p = op->params[k];
        CU(cudaMemcpy(c->grads[p], c->d_grad[p], sizeof(float) * (size_t)c->m->params[p].numel,
                      cudaMemcpyDeviceToHost),
           "copying gradients to the host");
    }
    return 0;
}

static int cuda_forward(void *impl, int o)
{
    cuda_t *c = (cuda_t *)impl;
    const ordo__nn_layer_t *l = &c->layers[o];
    if (l->input >= 0 && !c->fwd_done[l->input])
        return ordo__error_set(ORDO_ERR_INVAL, "compute cuda: forward of op '%s' before its input '%s'",
                              c->m->ops[o].name, c->m->ops[l->input].name);
    int rc = upload_params(c, o);
    if (rc < 0) return rc;
    const float *in = l->input < 0 ? c->d_x : c->d_out[l->input];
    float *y = c->d_out[o];
    const int n = c->n;
    const float one = 1.0f, zero = 0.0f;
    switch (l->kind) {
    case ORDO_NN_DENSE: {
        const float *w = c->d_param[l->weight];
        /* y^T[out, n] = W[out, in] x^T[in, n] in column-major terms. */
        BL(cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, l->out_c, n, l->in_c, &one, w, l->in_c,
                       in, l->in_c, &zero, y, l->out_c),
           "dense forward sgemm");
        k_bias_add<<<blocks_for((int64_t)n * l->out_c), THREADS>>>(y, c->d_param[l->bias], n,
                                                                   l->out_c, 1);
        LAUNCHED("dense bias kernel");
        break;
    }
    case ORDO_NN_CONV: {
        geom g = geometry(c, l);
        const int ckk = l->in_c * l->k * l->k, ohw = l->out_h * l->out_w;
        k_im2col<<<blocks_for((int64_t)n * ckk * ohw), THREADS>>>(in, c->d_col, g);
        LAUNCHED("im2col kernel");
        /* Per sample: y_s^T[ohw, out_c] = col_s^T[ohw, ckk] W^T[ckk, out_c]. */
        BL(cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, ohw, l->out_c, ckk, &one,
                                     c->d_col, ohw, (long long)ckk * ohw, c->d_param[l->weight],
                                     ckk, 0, &zero, y, ohw, (long long)l->out_c * ohw, n),
           "conv forward batched sgemm");
        k_bias_add<<<blocks_for((int64_t)n * l->out_c * ohw), THREADS>>>(y, c->d_param[l->bias], n,
                                                                         l->out_c, ohw);
        LAUNCHED("conv bias kernel");
        break;
    }
    case ORDO_NN_RELU: {
        int64_t len = n * ordo__nn_layer_in_len(l);
        k_relu_fwd<<<blocks_for(len), THREADS>>>(in, y, len);
        LAUNCHED("relu kernel");
        break;
    }
    case ORDO_NN_POOL: {
        int64_t planes = (int64_t)n * l->in_c;
        k_pool_fwd<<<blocks_for(planes * l->out_h * l->out_w), THREADS>>>(in, y, c->d_arg[o],
                                                                          planes, l->in_h, l->in_w);
        LAUNCHED("max-pool kernel");
        break;
    }
    case ORDO_NN_XENT: {
        k_xent_fwd<<<blocks_for(n), THREADS>>>(in, c->d_labels, y, c->d_loss, c->d_right, n,
                                               l->in_c);
        LAUNCHED("softmax cross-entropy kernel");
        CU(cudaMemcpy(c->h_loss, c->d_loss, sizeof(double) * (size_t)n, cudaMemcpyDeviceToHost),
           "copying losses to the host");
        CU(cudaMemcpy(c->h_right, c->d_right, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost),
           "copying hits to the host");
        double total = 0;
        int right = 0;
        for (int s = 0; s < n; s++) {
            total += c->h_loss[s];
            right += c->h_right[s];
        }
        c->loss = total / n;
        c->correct = right;
        break;
    }
    }
    c->fwd_done[o] = true;
    c->bwd_done[o] = false;
    return 0;
}

static int cuda_backward(void *impl, int o)
{
    cuda_t *c = (cuda_t *)impl;
    const ordo__nn_layer_t *l = &c->layers[o];
    int next = c->consumer[o];
    if (!c->fwd_done[o] || (next >= 0 && !c->bwd_done[next]))
        return ordo__error_set(ORDO_ERR_INVAL, "compute cuda: backward of op '%s' before %s",
                              c->m->ops[o].name,
                              !c->fwd_done[o] ? "its forward" : c->m->ops[next].name);
    const float *in = l->input < 0 ? c->d_x : c->d_out[l->input];
    float *dx = l->input < 0 ? NULL : c->d_dout[l->input];
    const float *dy = c->d_dout[o];
    const int n = c->n;
    const float one = 1.0f, zero = 0.0f;
    switch (l->kind) {
    case ORDO_NN_DENSE: {
        const float *w = c->d_param[l->weight];
        float *dw = c->d_grad[l->weight], *db = c->d_grad[l->bias];
        /* dW^T[in, out] = x^T[in, n] dy[n, out]; db = dy^T[out, n] ones[n];
         * dx^T[in, n] = W^T[in, out] dy^T[out, n] (column-major). */
        BL(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, l->in_c, l->out_c, n, &one, in, l->in_c,
                       dy, l->out_c, &zero, dw, l->in_c),
           "dense weight-gradient sgemm");
        BL(cublasSgemv(c->blas, CUBLAS_OP_N, l->out_c, n, &one, dy, l->out_c, c->d_ones, 1, &zero,
                       db, 1),
           "dense bias-gradient sgemv");
        if (dx)
            BL(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, l->in_c, n, l->out_c, &one, w,
                           l->in_c, dy, l->out_c, &zero, dx, l->in_c),
               "dense input-gradient sgemm");
        break;
    }
    case ORDO_NN_CONV: {
        geom g = geometry(c, l);
        const int ckk = l->in_c * l->k * l->k, ohw = l->out_h * l->out_w;
        const long long wlen = (long long)l->out_c * ckk;
        /* The forward's columns may have been overwritten by a later conv: rebuild them. */
        k_im2col<<<blocks_for((int64_t)n * ckk * ohw), THREADS>>>(in, c->d_col, g);
        LAUNCHED("im2col kernel");
        /* Per sample: dW_s^T[ckk, out_c] = col_s[ckk, ohw] dy_s^T[ohw, out_c]; then the sum
         * over samples as the matrix-vector product wpart[wlen, n] ones[n]. */
        BL(cublasSgemmStridedBatched(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, ckk, l->out_c, ohw, &one,
                                     c->d_col, ohw, (long long)ckk * ohw, dy, ohw,
                                     (long long)l->out_c * ohw, &zero, c->d_wpart, ckk, wlen, n),
           "conv weight-gradient batched sgemm");
        BL(cublasSgemv(c->blas, CUBLAS_OP_N, (int)wlen, n, &one, c->d_wpart, (int)wlen, c->d_ones,
                       1, &zero, c->d_grad[l->weight], 1),
           "conv weight-gradient sum");
        /* db: sums over positions ([ohw, n*out_c]^T ones), then over samples. */
        BL(cublasSgemv(c->blas, CUBLAS_OP_T, ohw, n * l->out_c, &one, dy, ohw, c->d_ones, 1, &zero,
                       c->d_tmp, 1),
           "conv bias-gradient position sum");
        BL(cublasSgemv(c->blas, CUBLAS_OP_N, l->out_c, n, &one, c->d_tmp, l->out_c, c->d_ones, 1,
                       &zero, c->d_grad[l->bias], 1),
           "conv bias-gradient sample sum");
        if (dx) {
            /* Per sample: dcol_s^T[ohw, ckk] = dy_s^T[ohw, out_c] W[out_c, ckk]. */
            BL(cublasSgemmStridedBatched(c->blas, CUBLAS_OP_N, CUBLAS_OP_T, ohw, ckk, l->out_c,
                                         &one, dy, ohw, (long long)l->out_c * ohw,
                                         c->d_param[l->weight], ckk, 0, &zero, c->d_col, ohw,
                                         (long long)ckk * ohw, n),
               "conv input-gradient batched sgemm");
            k_col2im<<<blocks_for((int64_t)n * ordo__nn_layer_in_len(l)), THREADS>>>(c->d_col, dx,
                                                                                    g);
            LAUNCHED("col2im kernel");
        }
        break;
    }
    case ORDO_NN_RELU:
        if (dx) {
            int64_t len = n * ordo__nn_layer_in_len(l);
            k_relu_bwd<<<blocks_for(len), THREADS>>>(in, dy, dx, len);
            LAUNCHED("relu backward kernel");
        }
        break;
    case ORDO_NN_POOL:
        if (dx) {
            int64_t planes = (int64_t)n * l->in_c;
            CU(cudaMemset(dx, 0, sizeof(float) * (size_t)(n * ordo__nn_layer_in_len(l))),
               "clearing the pooling gradient");
            k_pool_bwd<<<blocks_for(planes * l->out_h * l->out_w), THREADS>>>(
                dy, c->d_arg[o], dx, planes, l->in_h, l->in_w);
            LAUNCHED("max-pool backward kernel");
        }
        break;
    case ORDO_NN_XENT:
        if (dx) {
            k_xent_bwd<<<blocks_for((int64_t)n * l->in_c), THREADS>>>(c->d_out[o], c->d_labels, dx,
                                                                      n, l->in_c);
            LAUNCHED("softmax cross-entropy backward kernel");
        }
        break;
    }
    int rc = download_grads(c, o);
    if (rc < 0) return rc;
    if (c->m->ops[o].n_params == 0)
        CU(cudaDeviceSynchronize(), "backward kernels"); /* surface execution errors here */
    c->bwd_done[o] = true;
    return 0;
}

static int cuda_loss(void *impl, double *loss, int *correct)
{
    cuda_t *c = (cuda_t *)impl;
    if (!c->fwd_done[c->m->n_ops - 1])
        return ordo__error_set(ORDO_ERR_INVAL, "compute cuda: no loss before a complete forward pass");
    *loss = c->loss;
    *correct = c->correct;
    return 0;
}

static const ordo__compute_ops_t cuda_ops = {
    cuda_bind, cuda_set_batch, cuda_forward, cuda_backward, cuda_loss, cuda_destroy,
};

static int cuda_probe(const char **why)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1) {
        (void)cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
        if (why)
            *why = (e == cudaSuccess || e == cudaErrorNoDevice) ? "no CUDA device"
                   : e == cudaErrorInsufficientDriver
                       ? "no CUDA device (the driver is missing or older than the runtime)"
                       : "no CUDA device (cudaGetDeviceCount failed)";
        return 0;
    }
    return 1;
}

static int dev_alloc(void **p, size_t bytes, const char *what)
{
    CU(cudaMalloc(p, bytes < 4 ? 4 : bytes), what);
    return 0;
}

#define ALLOC(ptr, bytes, what)                                                                    \
    do {                                                                                           \
        if ((rc = dev_alloc((void **)&(ptr), (bytes), (what))) < 0) goto fail;                     \
    } while (0)

static int cuda_new(const ordo__model_t *m, void **impl, const ordo__compute_ops_t **ops)
{
    int rc;
    const size_t n_ops = (size_t)m->n_ops, n_params = (size_t)m->n_params;
    const size_t B = (size_t)m->batch;
    size_t col_len = 0, wpart_len = 0, tmp_len = 1, ones_len = B;
    cuda_t *c = (cuda_t *)calloc(1, sizeof *c);
    if (!c) return ordo__error_set(ORDO_ERR_NOMEM, "compute cuda: out of memory");
    c->m = m;
    if ((rc = ordo__nn_layers(m, &c->layers)) < 0) goto fail;
    c->consumer = (int *)malloc(n_ops * sizeof(int));
    c->fwd_done = (bool *)calloc(n_ops, sizeof(bool));
    c->bwd_done = (bool *)calloc(n_ops, sizeof(bool));
    c->d_param = (float **)calloc(n_params, sizeof(float *));
    c->d_grad = (float **)calloc(n_params, sizeof(float *));
    c->d_out = (float **)calloc(n_ops, sizeof(float *));
    c->d_dout = (float **)calloc(n_ops, sizeof(float *));
    c->d_arg = (int **)calloc(n_ops, sizeof(int *));
    c->h_loss = (double *)malloc(B * sizeof(double));
    c->h_right = (int *)malloc(B * sizeof(int));
    if (!c->consumer || !c->fwd_done || !c->bwd_done || !c->d_param || !c->d_grad || !c->d_out ||
        !c->d_dout || !c->d_arg || !c->h_loss || !c->h_right) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "compute cuda: out of memory");
        goto fail;
    }
    {
        cublasStatus_t s = cublasCreate(&c->blas);
        if (s != CUBLAS_STATUS_SUCCESS) {
            rc = blas_fail(s, "cublasCreate");
            goto fail;
        }
        c->have_blas = true;
    }
    for (size_t p = 0; p < n_params; p++) {
        size_t bytes = sizeof(float) * (size_t)m->params[p].numel;
        ALLOC(c->d_param[p], bytes, "allocating parameters");
        ALLOC(c->d_grad[p], bytes, "allocating gradients");
    }
    for (size_t o = 0; o < n_ops; o++) {
        const ordo__nn_layer_t *l = &c->layers[o];
        c->consumer[o] = -1;
        if (l->input >= 0) c->consumer[l->input] = (int)o;
        size_t len = B * (size_t)(l->kind == ORDO_NN_XENT ? ordo__nn_layer_in_len(l)
                                                          : ordo__nn_layer_out_len(l));
        ALLOC(c->d_out[o], sizeof(float) * len, "allocating activations");
        ALLOC(c->d_dout[o], sizeof(float) * len, "allocating activation gradients");
        if (l->kind == ORDO_NN_POOL)
            ALLOC(c->d_arg[o], sizeof(int) * len, "allocating pooling positions");
        if (l->kind == ORDO_NN_CONV) {
            size_t ckk = (size_t)l->in_c * l->k * l->k, ohw = (size_t)l->out_h * l->out_w;
            if (B * ckk * ohw > col_len) col_len = B * ckk * ohw;
            if (B * ckk * (size_t)l->out_c > wpart_len) wpart_len = B * ckk * (size_t)l->out_c;
            if (B * (size_t)l->out_c > tmp_len) tmp_len = B * (size_t)l->out_c;
            if (ohw > ones_len) ones_len = ohw;
        }
    }
    ALLOC(c->d_x, sizeof(float) * B * (size_t)ordo__nn_layer_in_len(&c->layers[0]),
          "allocating the input batch");
    ALLOC(c->d_labels, sizeof(int) * B, "allocating labels");
    ALLOC(c->d_col, sizeof(float) * col_len, "allocating the im2col workspace");
    ALLOC(c->d_wpart, sizeof(float) * wpart_len, "allocating the conv gradient workspace");
    ALLOC(c->d_tmp, sizeof(float) * tmp_len, "allocating the bias gradient workspace");
    ALLOC(c->d_ones, sizeof(float) * ones_len, "allocating the ones vector");
    ALLOC(c->d_loss, sizeof(double) * B, "allocating losses");
    ALLOC(c->d_right, sizeof(int) * B, "allocating hits");
    k_fill<<<blocks_for((int64_t)ones_len), THREADS>>>(c->d_ones, (int64_t)ones_len, 1.0f);
    {
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            rc = cuda_fail(e, "filling the ones vector");
            goto fail;
        }
    }
    *impl = c;
    *ops = &cuda_ops;
    return 0;
fail:
    cuda_destroy(c);
    return rc;
}

/* what the plugin's entry point (compute_cuda_host.c) hands the program */
extern "C" const ordo__compute_cuda_backend_t ordo__compute_cuda_backend = {cuda_probe, cuda_new};
